//===- Slice.cpp - Run virtual blocks [begin, end), preemptibly -*- C++ -*-===//
//
// wooly-slice (see Passes.td). Like wooly-constrain (the same loop, see
// Constrain.cpp and VirtualBlocks.h), but the virtual block ids are taken
// one at a time from a counter in device memory:
//
//   entry:  total = vx * vy * vz; leader = (%tid == (0, 0, 0)); br header
//   header: iteration_barrier          (the previous block's threads are done)
//           leader ? take : join
//   take:   if preempt_flag != 0 and *preempt_flag != 0: slot = STOP
//           else idx = atom.global.add(slice_counter, 1)
//                slot = (begin + idx < min(end, total)) ? begin + idx : STOP
//   join:   barrier 0; v = slot; v == STOP ? done : body(v)
//   body(v): the original body, block ids remapped; ret/exit -> latch
//   latch:  br header
//
// `slot` is a module-scope `.shared` u32 added by the pass; STOP is
// 0xffffffff (never a block id: ids are below `slice_end` <= 2^32 - 1).
//
// What the runtime reads after a launch: a physical block that sees the
// preemption flag set stops *without* taking an index, and an index, once
// taken, is either executed in full or lies at or beyond the slice's end.
// So the indices taken below `slice_end - slice_begin` are exactly the
// virtual blocks executed, they are contiguous from 0, and
//
//   first virtual block not executed = slice_begin + min(*counter,
//                                                  slice_end - slice_begin)
//
// (the counter overshoots by at most one per physical block that found the
// range exhausted). Resuming is a new launch over [that, slice_end) with the
// counter zeroed again.
//
// Refusals and limitations are those of wooly-constrain.
//
//===----------------------------------------------------------------------===//

#include "VirtualBlocks.h"

#include "Wooly/Dialect/Wooly/Analysis/WaitLoops.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Dialect/Wooly/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::wooly {
#define GEN_PASS_DEF_WOOLYSLICE
#include "Wooly/Dialect/Wooly/Transforms/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;

namespace {

/// Rewrites one kernel (checked by the caller); `slot` is the shared u32
/// through which the leader publishes the virtual block id.
void sliceKernel(FuncOp kernel, GlobalOp slot) {
  MLIRContext *ctx = kernel.getContext();
  OpBuilder b(ctx);
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value gx = vblocks::appendLaunchParam(kernel, "virtual_grid_x", i32, "u32");
  Value gy = vblocks::appendLaunchParam(kernel, "virtual_grid_y", i32, "u32");
  Value gz = vblocks::appendLaunchParam(kernel, "virtual_grid_z", i32, "u32");
  Value begin = vblocks::appendLaunchParam(kernel, "slice_begin", i32, "u32");
  Value end = vblocks::appendLaunchParam(kernel, "slice_end", i32, "u32");
  Value counter =
      vblocks::appendLaunchParam(kernel, "slice_counter", i64, "u64");
  Value flag = vblocks::appendLaunchParam(kernel, "preempt_flag", i64, "u64");
  vblocks::VirtualLoop loop = vblocks::buildVirtualLoop(kernel, gx, gy, gz);
  Location loc = kernel.getLoc();
  Region &region = kernel.getBody();
  auto global = StateSpaceAttr::get(ctx, StateSpace::global);
  auto shared = StateSpaceAttr::get(ctx, StateSpace::shared);

  // entry: the leader thread, the limit min(end, total), STOP.
  b.setInsertionPointToEnd(loop.entry);
  Value c0 = arith::ConstantIntOp::create(b, loc, 0, 32);
  Value leader;
  for (Dim d : {Dim::x, Dim::y, Dim::z}) {
    Value t =
        SRegOp::create(b, loc, i32, SpecialRegAttr::get(ctx, SpecialReg::tid),
                       DimAttr::get(ctx, d));
    Value is0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, t, c0);
    leader = leader ? arith::AndIOp::create(b, loc, leader, is0) : is0;
  }
  Value end64 = arith::ExtUIOp::create(b, loc, i64, end);
  Value limit = arith::MinUIOp::create(b, loc, end64, loop.total);
  Value begin64 = arith::ExtUIOp::create(b, loc, i64, begin);
  Value stop = arith::ConstantIntOp::create(b, loc, -1, 32);
  Value one = arith::ConstantIntOp::create(b, loc, 1, 32);
  Value zero64 = arith::ConstantIntOp::create(b, loc, 0, 64);

  auto addBlock = [&](Block *after) {
    Block *blk = new Block();
    region.getBlocks().insertAfter(Region::iterator(after), blk);
    return blk;
  };
  Block *header = addBlock(loop.entry);
  Block *take = addBlock(header);
  Block *readFlag = addBlock(take);
  Block *grab = addBlock(readFlag);
  Block *publish = addBlock(grab);
  Value published = publish->addArgument(i32, loc);
  Block *join = addBlock(publish);
  cf::BranchOp::create(b, loc, header);

  // header: wait for the previous block's threads (an iteration barrier:
  // those that finished early count as exited meanwhile), then the leader
  // takes.
  b.setInsertionPointToEnd(header);
  vblocks::createIterationBarrier(b, loc);
  cf::CondBranchOp::create(b, loc, leader, take, ValueRange{}, join,
                           ValueRange{});

  // take: read the preemption flag when there is one.
  b.setInsertionPointToEnd(take);
  Value hasFlag =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, flag, zero64);
  cf::CondBranchOp::create(b, loc, hasFlag, readFlag, ValueRange{}, grab,
                           ValueRange{});
  b.setInsertionPointToEnd(readFlag);
  auto flagLoad =
      LoadOp::create(b, loc, TypeRange{i32}, global, flag, CacheOpAttr(),
                     b.getUnitAttr(), MemOrderAttr(), MemScopeAttr());
  // The loop does not wait for the flag (findWaitLoops).
  flagLoad->setAttr(kNoWaitAttr, b.getUnitAttr());
  Value flagValue = flagLoad.getResult(0);
  Value preempted =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, flagValue, c0);
  cf::CondBranchOp::create(b, loc, preempted, publish, ValueRange{stop}, grab,
                           ValueRange{});

  // grab: the next index; STOP past the slice's end.
  b.setInsertionPointToEnd(grab);
  Value idx =
      AtomOp::create(b, loc, i32, global, AtomicOpAttr::get(ctx, AtomicOp::add),
                     counter, ValueRange{one}, MemOrderAttr(), MemScopeAttr());
  Value idx64 = arith::ExtUIOp::create(b, loc, i64, idx);
  Value v64 = arith::AddIOp::create(b, loc, begin64, idx64);
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, v64, limit);
  Value v32 = arith::TruncIOp::create(b, loc, i32, v64);
  Value chosen = arith::SelectOp::create(b, loc, inRange, v32, stop);
  cf::BranchOp::create(b, loc, publish, ValueRange{chosen});

  // publish: the leader writes the slot.
  b.setInsertionPointToEnd(publish);
  Value slotAddr = AddressOfOp::create(
      b, loc, i32, FlatSymbolRefAttr::get(slot.getSymNameAttr()));
  StoreOp::create(b, loc, shared, slotAddr, ValueRange{published},
                  CacheOpAttr(), UnitAttr(), MemOrderAttr(), MemScopeAttr());
  cf::BranchOp::create(b, loc, join);

  // join: everyone reads the slot.
  b.setInsertionPointToEnd(join);
  vblocks::createBlockBarrier(b, loc);
  Value slotAddr2 = AddressOfOp::create(
      b, loc, i32, FlatSymbolRefAttr::get(slot.getSymNameAttr()));
  auto slotLoad =
      LoadOp::create(b, loc, TypeRange{i32}, shared, slotAddr2, CacheOpAttr(),
                     UnitAttr(), MemOrderAttr(), MemScopeAttr());
  // The same in every thread (written once, read after the barrier): what
  // wooly-lower-iteration-barrier's divergence analysis may rely on.
  slotLoad->setAttr("wooly.uniform", b.getUnitAttr());
  Value v = slotLoad.getResult(0);
  Value isStop =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, v, stop);
  Value vBody = arith::ExtUIOp::create(b, loc, i64, v);
  cf::CondBranchOp::create(b, loc, isStop, loop.done, ValueRange{}, loop.body,
                           ValueRange{vBody});

  // latch: the header's barrier separates the iterations.
  b.setInsertionPointToEnd(loop.latch);
  cf::BranchOp::create(b, loc, header);
}

struct WoolySlicePass : wooly::impl::WoolySliceBase<WoolySlicePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<FuncOp> kernels;
    // The `kernels` option names the kernels to slice (default: all); the
    // others stay as written.
    llvm::StringSet<> only(llvm::from_range, this->kernels);
    bool all = only.empty();
    for (auto f : module.getOps<FuncOp>())
      if (f.getKernel() && !f.isDeclaration() &&
          (all || only.erase(f.getSymName())))
        kernels.push_back(f);
    bool ok = true;
    for (const std::string &name : this->kernels)
      if (only.contains(name)) {
        module.emitError() << "wooly-slice: no kernel named '" << name << "'";
        ok = false;
      }
    for (FuncOp k : kernels)
      ok &= succeeded(vblocks::checkKernel(k, "wooly-slice"));
    if (!ok)
      return signalPassFailure();
    if (kernels.empty())
      return;
    // One slot for the module: shared memory is laid out per module.
    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx); // Created detached, inserted by the symbol table.
    auto slot = GlobalOp::create(
        b, module.getLoc(), b.getStringAttr("__wooly_slice_block"),
        StateSpaceAttr::get(ctx, StateSpace::shared),
        TypeAttr::get(b.getI32Type()), b.getI64IntegerAttr(1),
        b.getI64IntegerAttr(4), LinkageAttr(), Attribute());
    // Renames it if the name is taken. Last, so that the kernels' own shared
    // variables keep the offsets they had (the alignment of their accesses
    // may rely on more than their declared alignment, as on the GPU).
    SymbolTable(module).insert(slot);
    for (FuncOp k : kernels)
      sliceKernel(k, slot);
  }
};

} // namespace
