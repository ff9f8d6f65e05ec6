//===- VirtualBlocks.cpp - Loops over virtual blocks (internal) --*- C++
//-*-===//
//
// See VirtualBlocks.h.
//
//===----------------------------------------------------------------------===//

#include "VirtualBlocks.h"

#include "Wooly/Dialect/Wooly/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::wooly;

namespace {

/// Whether `reg` is one of the registers the loop remaps.
bool isBlockIdReg(SpecialReg reg) {
  return reg == SpecialReg::ctaid || reg == SpecialReg::nctaid ||
         reg == SpecialReg::clusterid || reg == SpecialReg::nclusterid;
}

/// Whether `name` is a CUDA device-runtime entry point of cooperative
/// groups (grid-wide synchronisation goes through them).
bool isGridSyncRuntime(StringRef name) {
  return name.starts_with("cudaCG") || name.contains("grid_sync") ||
         name.contains("sync_grids");
}

/// Whether `op` itself uses state shared by the threads of a block.
bool usesBlockShared(Operation *op) {
  if (isa<BarrierOp, BarRedOp, ActiveMaskOp, CpAsyncOp, CpAsyncCommitOp,
          CpAsyncWaitOp, MbarrierInitOp, MbarrierInvalOp, MbarrierUpdateOp,
          MbarrierWaitOp, BulkCopyOp, BulkCommitOp, BulkWaitOp>(op) ||
      vblocks::isWarpCollective(op))
    return true;
  if (auto space = op->getAttrOfType<StateSpaceAttr>("space"))
    return space.getValue() == StateSpace::shared ||
           space.getValue() == StateSpace::shared_cluster;
  return false;
}

/// `v` (an integer) as `type` (an integer), zero-extended or truncated.
Value castInt(OpBuilder &b, Location loc, Value v, Type type) {
  unsigned from = v.getType().getIntOrFloatBitWidth();
  unsigned to = type.getIntOrFloatBitWidth();
  if (from == to)
    return v;
  if (from < to)
    return arith::ExtUIOp::create(b, loc, type, v);
  return arith::TruncIOp::create(b, loc, type, v);
}

} // namespace

LogicalResult vblocks::checkKernel(FuncOp kernel, StringRef pass) {
  vblocks::Summarizer summaries;
  StringRef name = kernel.getSymName();
  WalkResult r = kernel.walk([&](Operation *op) -> WalkResult {
    if (isa<CallIndirectOp>(op)) {
      op->emitError() << pass << ": kernel '" << name
                      << "' makes an indirect call (not supported)";
      return WalkResult::interrupt();
    }
    if (auto env = dyn_cast<EnvRegOp>(op)) {
      // Cooperative groups read %envreg1:%envreg2, a cooperative launch's
      // grid workspace, to synchronise the whole grid: every block must
      // run at once, and each virtual block would wait for the others.
      op->emitError() << pass << ": kernel '" << name
                      << "' synchronises its whole grid (it reads %envreg"
                      << env.getIndex()
                      << ", a cooperative launch's grid workspace): "
                         "grid.sync() needs all its blocks running at once "
                         "(not supported)";
      return WalkResult::interrupt();
    }
    if (auto s = dyn_cast<SRegOp>(op); s && s.getReg() == SpecialReg::gridid) {
      op->emitError() << pass << ": kernel '" << name
                      << "' reads %gridid (not supported)";
      return WalkResult::interrupt();
    }
    auto call = dyn_cast<CallOp>(op);
    if (!call)
      return WalkResult::advance();
    StringRef calleeName = call.getCallee();
    auto callee =
        SymbolTable::lookupNearestSymbolFrom<FuncOp>(op, call.getCalleeAttr());
    if (!callee) {
      op->emitError() << pass << ": kernel '" << name << "' calls '"
                      << calleeName << "', which is not a function";
      return WalkResult::interrupt();
    }
    const Summary &s = summaries.get(callee);
    const char *why = nullptr;
    if (s.readsBlockIds)
      why = "reads %ctaid/%nctaid (not supported yet)";
    else if (s.exits)
      why = "may exit the thread (not supported yet)";
    else if (s.indirectCall)
      why = "makes an indirect call (not supported)";
    else if (s.gridId)
      why = "reads %gridid (not supported)";
    else if (s.gridSync)
      why = "synchronises the grid (grid.sync() needs all blocks running at "
            "once; not supported)";
    if (!why)
      return WalkResult::advance();
    op->emitError() << pass << ": kernel '" << name << "' calls '" << calleeName
                    << "', which " << why;
    return WalkResult::interrupt();
  });
  return failure(r.wasInterrupted());
}

bool vblocks::isWarpCollective(Operation *op) {
  return isa<ShflOp, VoteOp, MatchOp, ReduxOp, WarpSyncOp, LdMatrixOp, MmaOp,
             WmmaLoadOp, WmmaStoreOp, WmmaMmaOp, ElectOp, StMatrixOp>(op);
}

const vblocks::Summary &vblocks::Summarizer::get(FuncOp f) {
  auto it = memo.find(f);
  if (it != memo.end())
    return it->second;
  memo[f] = Summary(); // Recursion sees what is known so far.
  Summary s;
  if (f.isDeclaration()) {
    s.gridSync = isGridSyncRuntime(f.getSymName());
    return memo[f] = s;
  }
  f.walk([&](Operation *op) {
    s.blockShared |= usesBlockShared(op);
    s.barrier |= isa<BarrierOp, BarRedOp, IterationBarrierOp>(op);
    s.warpCollective |= isWarpCollective(op);
    if (isa<ExitOp>(op))
      s.exits = true;
    else if (isa<CallIndirectOp>(op))
      s.indirectCall = true;
    else if (isa<EnvRegOp>(op))
      s.gridSync = true;
    else if (auto r = dyn_cast<SRegOp>(op)) {
      s.readsBlockIds |= isBlockIdReg(r.getReg());
      s.gridId |= r.getReg() == SpecialReg::gridid;
    } else if (auto c = dyn_cast<CallOp>(op)) {
      auto callee =
          SymbolTable::lookupNearestSymbolFrom<FuncOp>(op, c.getCalleeAttr());
      if (!callee) {
        s.indirectCall = true;
        return;
      }
      Summary cs = get(callee);
      s.readsBlockIds |= cs.readsBlockIds;
      s.exits |= cs.exits;
      s.indirectCall |= cs.indirectCall;
      s.gridId |= cs.gridId;
      s.gridSync |= cs.gridSync;
      s.blockShared |= cs.blockShared;
      s.barrier |= cs.barrier;
      s.warpCollective |= cs.warpCollective;
    }
  });
  return memo[f] = s;
}

bool vblocks::needsIterationBarrier(FuncOp kernel) {
  auto module = kernel->getParentOfType<ModuleOp>();
  if (module)
    for (auto g : module.getOps<GlobalOp>())
      if (g.getSpace() == StateSpace::shared ||
          g.getSpace() == StateSpace::shared_cluster)
        return true;
  vblocks::Summarizer summaries;
  WalkResult r = kernel.walk([&](Operation *op) -> WalkResult {
    if (usesBlockShared(op))
      return WalkResult::interrupt();
    if (auto c = dyn_cast<CallOp>(op))
      if (auto callee = SymbolTable::lookupNearestSymbolFrom<FuncOp>(
              op, c.getCalleeAttr()))
        if (summaries.get(callee).blockShared)
          return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return r.wasInterrupted();
}

BlockArgument vblocks::appendLaunchParam(FuncOp kernel, StringRef role,
                                         Type type, StringRef ptxType) {
  MLIRContext *ctx = kernel.getContext();
  unsigned index = kernel.getNumArguments();
  Builder b(ctx);
  NamedAttribute attrs[] = {
      b.getNamedAttr(kLaunchParamAttr, b.getStringAttr(role)),
      b.getNamedAttr("wooly.name",
                     b.getStringAttr((kernel.getSymName() + "_" + role).str())),
      b.getNamedAttr("wooly.type", b.getStringAttr(ptxType))};
  // Cannot fail for a function with a body.
  (void)kernel.insertArgument(index, type, b.getDictionaryAttr(attrs),
                              kernel.getLoc());
  return kernel.getArgument(index);
}

vblocks::VirtualLoop vblocks::buildVirtualLoop(FuncOp kernel, Value gridX,
                                               Value gridY, Value gridZ) {
  Location loc = kernel.getLoc();
  Region &region = kernel.getBody();
  OpBuilder b(kernel.getContext());
  Type i64 = b.getI64Type();

  // What to rewrite, collected before new ops exist.
  SmallVector<SRegOp> sregs;
  SmallVector<Operation *> exits;
  kernel.walk([&](Operation *op) {
    if (auto s = dyn_cast<SRegOp>(op); s && isBlockIdReg(s.getReg()))
      sregs.push_back(s);
    else if (isa<RetOp, ExitOp>(op))
      exits.push_back(op);
  });

  VirtualLoop loop;
  loop.gridX = gridX;
  loop.gridY = gridY;
  loop.gridZ = gridZ;
  loop.entry = &region.front();
  loop.body = loop.entry->splitBlock(loop.entry->begin());
  Value v = loop.body->addArgument(i64, loc);
  loop.latch = new Block();
  region.push_back(loop.latch);
  loop.done = new Block();
  region.push_back(loop.done);
  b.setInsertionPointToEnd(loop.done);
  RetOp::create(b, loc, ValueRange{});

  // The virtual grid's size, in 64 bits (below 2^63 for CUDA's limits).
  b.setInsertionPointToEnd(loop.entry);
  Value x64 = arith::ExtUIOp::create(b, loc, i64, gridX);
  Value y64 = arith::ExtUIOp::create(b, loc, i64, gridY);
  Value z64 = arith::ExtUIOp::create(b, loc, i64, gridZ);
  Value xy = arith::MulIOp::create(b, loc, x64, y64);
  loop.total = arith::MulIOp::create(b, loc, xy, z64);

  // The virtual block's coordinates, at the top of the body.
  b.setInsertionPointToStart(loop.body);
  Value cx = arith::RemUIOp::create(b, loc, v, x64);
  Value rest = arith::DivUIOp::create(b, loc, v, x64);
  Value cy = arith::RemUIOp::create(b, loc, rest, y64);
  Value cz = arith::DivUIOp::create(b, loc, rest, y64);
  Value ids[3] = {cx, cy, cz};
  Value dims[3] = {gridX, gridY, gridZ};
  for (SRegOp s : sregs) {
    unsigned d = s.getDim() ? unsigned(*s.getDim()) : 0;
    bool isId =
        s.getReg() == SpecialReg::ctaid || s.getReg() == SpecialReg::clusterid;
    b.setInsertionPoint(s);
    Value repl = castInt(b, s.getLoc(), isId ? ids[d] : dims[d], s.getType());
    s.replaceAllUsesWith(repl);
    s.erase();
  }

  for (Operation *op : exits) {
    b.setInsertionPoint(op);
    cf::BranchOp::create(b, op->getLoc(), loop.latch);
    op->erase();
  }
  return loop;
}

void vblocks::createIterationBarrier(OpBuilder &b, Location loc) {
  IterationBarrierOp::create(b, loc);
}

void vblocks::createBlockBarrier(OpBuilder &b, Location loc) {
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
  BarrierOp::create(b, loc, zero, Value(), UnitAttr(), UnitAttr());
}

uint64_t vblocks::typeBytes(Type t) {
  if (auto v = dyn_cast<VectorType>(t))
    return v.getNumElements() * typeBytes(v.getElementType());
  if (t.isIntOrFloat())
    return (t.getIntOrFloatBitWidth() + 7) / 8;
  return 0;
}

LogicalResult vblocks::refuseIndirectCalls(ModuleOp module, StringRef pass,
                                           StringRef why) {
  bool any = false;
  module.walk([&](CallIndirectOp call) {
    call.emitOpError() << pass << ": indirect calls are not supported (" << why
                       << ")";
    any = true;
  });
  return failure(any);
}

LogicalResult vblocks::passOnTrailingArgs(
    ModuleOp module,
    const llvm::DenseMap<Operation *, SmallVector<Value>> &extra,
    StringRef pass) {
  SymbolTable symbols(module);
  Builder b(module.getContext());
  WalkResult walked = module.walk([&](CallOp call) -> WalkResult {
    auto callee = symbols.lookup<FuncOp>(call.getCallee());
    if (!callee || callee.isDeclaration())
      return WalkResult::advance();
    if (callee.getKernel()) {
      call.emitOpError() << pass << ": call of a kernel";
      return WalkResult::interrupt();
    }
    SmallVector<Value> values = extra.lookup(call->getParentOfType<FuncOp>());
    call.getOperandsMutable().append(values);
    if (auto argAttrs = call.getArgAttrsAttr()) {
      SmallVector<Attribute> all(argAttrs.begin(), argAttrs.end());
      all.append(values.size(), b.getDictionaryAttr({}));
      call.setArgAttrsAttr(b.getArrayAttr(all));
    }
    return WalkResult::advance();
  });
  return failure(walked.wasInterrupted());
}
