//===- WarpVector.h - A region's 32 lanes as vector code --------*- C++ -*-===//
//
// Part of the Wooly project.
//
//===----------------------------------------------------------------------===//
//
// Whole-warp vectorised regions for the CPU backend's warp functions
// (WoolyToLLVM.cpp, "Region functions"): a region's lane function emitted
// once for the 32 lanes as `<32 x T>` operations under masks of lanes,
// instead of a loop over the lanes. Consecutive such regions and the
// constant permutations between them then form one chain of vector code
// whose frame stores LLVM forwards to the loads that follow.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_CONVERSION_WOOLYTOLLVM_WARPVECTOR_H
#define WOOLY_LIB_CONVERSION_WOOLYTOLLVM_WARPVECTOR_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <optional>

namespace mlir::wooly::warp_vector {

/// The frame slots of values kept across cuts whose 32 copies the code
/// tracks, and where it keeps what it knows of them: bit `i` of the warp's
/// word at `bitsAt` (a byte offset in the warp's frame) set means that the
/// 32 copies of the slot at `slots[i]` (a byte offset, lane 0's copy) are
/// the same. The vector code sets a slot's bit where it stored one value
/// for all 32 lanes, and clears it where it stored anything else; then a
/// later region reads that value once, without comparing the 32 copies.
/// Whatever else writes a warp's frame slots (the loop over the lanes, the
/// thread's own region function, the copies of a collective's results)
/// clears the word first.
struct UniformSlots {
  std::optional<int64_t> bitsAt;
  SmallVector<int64_t> slots;
};

/// Emits, in new blocks of `into` (the warp function's body), lane
/// function `lanes` (`(laneCtx, params, region, lane, frame, warpCtx) ->
/// next`, region `region`'s copy) run for lanes 0-31 at once: values that
/// differ between lanes as `<32 x T>`, values that do not (parameters, the
/// warp context's fields, constants) once, its branches as masks of lanes.
/// Where a lane would reach a call (a failed check's report), the code
/// goes to `fallback` (the loop over the lanes, which runs the region from
/// its start) before it has stored anything. At the end, where all lanes
/// are at one region, `onExit(b, next)` continues at the end of a block of
/// its own; where they are not, the code leaves each lane's next region in
/// `nexts` (32 x i32) and goes to `mixed`.
///
/// The code does what the lanes run one after another would do (see
/// WarpVector.cpp); where that cannot be shown (loops in the region, a
/// load from global memory whose lanes' addresses are not contiguous, more
/// than one store to memory on a way through the region or a load after
/// it, a value this code cannot vectorise, a read of the lane's own
/// context) nothing is emitted and the result is null. Otherwise the
/// result is the block to branch to.
Block *
emitWarpVectorRegion(OpBuilder &b, Location loc, Region &into,
                     LLVM::LLVMFuncOp lanes, Value params, Value frame,
                     Value warpCtx, Value nexts, uint32_t region,
                     Block *fallback, Block *mixed, const UniformSlots &uniform,
                     llvm::function_ref<void(OpBuilder &, uint32_t)> onExit);

} // namespace mlir::wooly::warp_vector

#endif // WOOLY_LIB_CONVERSION_WOOLYTOLLVM_WARPVECTOR_H
