//===- Watchdog.cpp - Loops poll a per-launch abort flag -------*- C++ -*-===//
//
// wooly-watchdog: every kernel takes one more launch parameter, role
// `abort_flag` (u64: the device address of a u32, or 0 for none), and every
// device function takes it as a trailing argument, passed on by each call. At
// the head of every loop (the target of a CFG back edge: a successor that
// dominates its predecessor) the function reads the flag (a volatile
// global load, when its address is not 0) and, when it is not 0, the
// thread exits. So a server that raises the flag stops a kernel that runs
// past its time budget within one loop iteration of each thread, without
// losing the device context; the launch then reports the watchdog. Straight
// code needs no poll: it ends by itself.
//
// Refused with a located error: indirect calls (the callee would not get
// the flag). Recursion without loops is not polled (the CPU backend ends
// it as a stack overflow).
//
//===----------------------------------------------------------------------===//

#include "VirtualBlocks.h"

#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Dialect/Wooly/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Dominance.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::wooly {
#define GEN_PASS_DEF_WOOLYWATCHDOG
#include "Wooly/Dialect/Wooly/Transforms/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;

namespace {

/// Inserts the poll at the top of loop header `header`: its operations
/// move to a new block, entered unless the flag says stop.
void insertPoll(Block *header, Value flag, Location loc) {
  MLIRContext *ctx = header->getParentOp()->getContext();
  Block *rest = header->splitBlock(header->begin());
  Region *region = header->getParent();
  Block *check = new Block();
  Block *stop = new Block();
  region->getBlocks().insertAfter(Region::iterator(header), check);
  region->getBlocks().insertAfter(Region::iterator(check), stop);

  OpBuilder b(ctx);
  b.setInsertionPointToEnd(header);
  Value zero64 = arith::ConstantIntOp::create(b, loc, 0, 64);
  Value hasFlag =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, flag, zero64);
  cf::CondBranchOp::create(b, loc, hasFlag, check, ValueRange{}, rest,
                           ValueRange{});

  b.setInsertionPointToEnd(check);
  Type i32 = b.getI32Type();
  auto global = StateSpaceAttr::get(ctx, StateSpace::global);
  Value v = LoadOp::create(b, loc, TypeRange{i32}, global, flag, CacheOpAttr(),
                           b.getUnitAttr(), MemOrderAttr(), MemScopeAttr())
                .getResult(0);
  Value zero32 = arith::ConstantIntOp::create(b, loc, 0, 32);
  Value raised =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero32);
  cf::CondBranchOp::create(b, loc, raised, stop, ValueRange{}, rest,
                           ValueRange{});

  b.setInsertionPointToEnd(stop);
  ExitOp::create(b, loc);
}

struct WoolyWatchdogPass : wooly::impl::WoolyWatchdogBase<WoolyWatchdogPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();

    if (failed(vblocks::refuseIndirectCalls(
            module, "wooly-watchdog",
            "device functions receive the abort flag as an extra argument")))
      return signalPassFailure();

    // The flag: a launch parameter of kernels, a trailing argument of
    // device functions.
    Builder b(ctx);
    llvm::DenseMap<Operation *, SmallVector<Value>> flagOf;
    SmallVector<FuncOp> funcs;
    for (auto func : module.getOps<FuncOp>()) {
      if (func.isDeclaration())
        continue;
      funcs.push_back(func);
      if (func.getKernel()) {
        flagOf[func] = {vblocks::appendLaunchParam(func, "abort_flag",
                                                   b.getI64Type(), "u64")};
        continue;
      }
      unsigned n = func.getNumArguments();
      if (failed(func.insertArguments(
              {n}, {b.getI64Type()},
              {b.getDictionaryAttr(
                  {b.getNamedAttr("wooly.type", b.getStringAttr("u64"))})},
              {func.getLoc()}))) {
        func.emitOpError("wooly-watchdog: cannot append the flag argument");
        return signalPassFailure();
      }
      flagOf[func] = {func.getArgument(n)};
    }

    if (failed(vblocks::passOnTrailingArgs(module, flagOf, "wooly-watchdog")))
      return signalPassFailure();

    for (FuncOp func : funcs) {
      Region &body = func.getBody();
      if (body.hasOneBlock())
        continue;
      DominanceInfo dom(func);
      llvm::SetVector<Block *> headers;
      for (Block &block : body)
        for (Block *succ : block.getSuccessors())
          if (dom.dominates(succ, &block))
            headers.insert(succ);
      for (Block *header : headers)
        insertPoll(header, flagOf.lookup(func).front(), func.getLoc());
    }
  }
};

} // namespace
