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

namespace mlir::wooly::warp_vector {

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
                     Block *fallback, Block *mixed,
                     llvm::function_ref<void(OpBuilder &, uint32_t)> onExit);

} // namespace mlir::wooly::warp_vector

#endif // WOOLY_LIB_CONVERSION_WOOLYTOLLVM_WARPVECTOR_H
