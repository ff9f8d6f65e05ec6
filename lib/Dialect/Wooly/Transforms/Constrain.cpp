//===- Constrain.cpp - Run kernels on N physical blocks ---------*- C++ -*-===//
//
// wooly-constrain (see Passes.td). A kernel
//
//   kernel(params...) { body }
//
// becomes, with three appended launch parameters vx, vy, vz (roles
// `virtual_grid_x/y/z`, the original grid) and a launch on a 1-D physical
// grid of N blocks:
//
//   entry:  total = vx * vy * vz (64-bit); br header(%ctaid.x)
//   header(v): v < total ? body(v) : done
//   body(v):   the original body; %ctaid/%clusterid read
//              (v % vx, v / vx % vy, v / (vx * vy)), %nctaid/%nclusterid
//              read (vx, vy, vz); ret/exit branch to the latch
//   latch:  [iteration_barrier when the kernel uses shared memory, barriers
//            or warp collectives]; br header(v + %nctaid.x)
//   done:   ret
//
// Refused with a located error: indirect calls, %gridid, calls to device
// functions that read block ids or may exit (they are not inlined yet), and
// grid-wide synchronisation: calls into the CUDA device runtime's
// cooperative groups, or reads of %envreg* (the grid workspace through
// which CUDA 12+ cooperative groups synchronise the grid inline).
//
// A thread that leaves its virtual block early (ret/exit) while others still
// use barriers or warp collectives waits at `wooly.iteration_barrier`,
// where it counts as exited for them, as it did in the original kernel
// (ZLUDA's vote_all_sub: lane 0 returns before a full-mask vote).
//
//===----------------------------------------------------------------------===//

#include "VirtualBlocks.h"

#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Dialect/Wooly/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"

namespace mlir::wooly {
#define GEN_PASS_DEF_WOOLYCONSTRAIN
#include "Wooly/Dialect/Wooly/Transforms/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;

namespace {

/// Rewrites one kernel (checked by the caller).
void constrainKernel(FuncOp kernel) {
  bool barrier = vblocks::needsIterationBarrier(kernel);
  OpBuilder b(kernel.getContext());
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value gx = vblocks::appendLaunchParam(kernel, "virtual_grid_x", i32, "u32");
  Value gy = vblocks::appendLaunchParam(kernel, "virtual_grid_y", i32, "u32");
  Value gz = vblocks::appendLaunchParam(kernel, "virtual_grid_z", i32, "u32");
  vblocks::VirtualLoop loop = vblocks::buildVirtualLoop(kernel, gx, gy, gz);
  Location loc = kernel.getLoc();
  auto dimX = DimAttr::get(b.getContext(), Dim::x);

  // Physical block id and count (the physical grid is 1-D).
  b.setInsertionPointToEnd(loop.entry);
  Value pid = SRegOp::create(
      b, loc, i32, SpecialRegAttr::get(b.getContext(), SpecialReg::ctaid),
      dimX);
  Value pn = SRegOp::create(
      b, loc, i32, SpecialRegAttr::get(b.getContext(), SpecialReg::nctaid),
      dimX);
  Value first = arith::ExtUIOp::create(b, loc, i64, pid);
  Value step = arith::ExtUIOp::create(b, loc, i64, pn);

  Block *header = new Block();
  kernel.getBody().getBlocks().insertAfter(Region::iterator(loop.entry),
                                           header);
  Value v = header->addArgument(i64, loc);
  cf::BranchOp::create(b, loc, header, ValueRange{first});

  b.setInsertionPointToEnd(header);
  Value more =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, v, loop.total);
  cf::CondBranchOp::create(b, loc, more, loop.body, ValueRange{v}, loop.done,
                           ValueRange{});

  b.setInsertionPointToEnd(loop.latch);
  if (barrier)
    vblocks::createIterationBarrier(b, loc);
  Value next = arith::AddIOp::create(b, loc, v, step);
  cf::BranchOp::create(b, loc, header, ValueRange{next});
}

struct WoolyConstrainPass
    : wooly::impl::WoolyConstrainBase<WoolyConstrainPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<FuncOp> kernels;
    for (auto f : getOperation().getOps<FuncOp>())
      if (f.getKernel() && !f.isDeclaration())
        kernels.push_back(f);
    bool ok = true;
    for (FuncOp k : kernels)
      ok &= succeeded(vblocks::checkKernel(k, "wooly-constrain"));
    if (!ok)
      return signalPassFailure();
    for (FuncOp k : kernels)
      constrainKernel(k);
  }
};

} // namespace
