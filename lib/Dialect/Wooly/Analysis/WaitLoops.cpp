//===- WaitLoops.cpp - Loops that wait for other threads ------------------===//
//
// Each natural loop is searched for polls (WaitLoops.h); the values derived
// from them are followed forward through the loop's ops and the block
// arguments its branches pass, to a fixed point; a loop whose exit branch
// tests such a value waits.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Dialect/Wooly/Analysis/WaitLoops.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"

#include "mlir/Analysis/CFGLoopInfo.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::wooly;

namespace {

/// Whether other threads can write memory in `space` that this thread reads.
bool sharedWithOtherThreads(StateSpace space) {
  return space != StateSpace::local && space != StateSpace::param &&
         space != StateSpace::constant;
}

/// Whether `op` reads memory other threads write, without writing it.
bool isPoll(Operation *op) {
  if (auto ld = dyn_cast<LoadOp>(op)) {
    if (!sharedWithOtherThreads(ld.getSpace()) || ld->hasAttr(kNoWaitAttr))
      return false;
    std::optional<MemOrder> sem = ld.getSem();
    return ld.getIsVolatile() || (sem && *sem != MemOrder::weak) ||
           ld.getCache() == CacheOp::cv;
  }
  auto atom = dyn_cast<AtomOp>(op);
  if (!atom || !sharedWithOtherThreads(atom.getSpace()))
    return false;
  ValueRange values = atom.getValues();
  switch (atom.getOp()) {
  case AtomicOp::add:
  case AtomicOp::or_:
  case AtomicOp::xor_:
    return values.size() == 1 && matchPattern(values[0], m_Zero());
  case AtomicOp::and_: {
    APInt bits;
    return values.size() == 1 &&
           matchPattern(values[0], m_ConstantInt(&bits)) && bits.isAllOnes();
  }
  case AtomicOp::cas:
    return values.size() == 2 && values[0] == values[1];
  default:
    return false;
  }
}

/// The operands of terminator `term` that choose its successor (not the
/// values it passes to them).
SmallVector<Value> branchConditions(Operation *term) {
  if (auto condBr = dyn_cast<cf::CondBranchOp>(term))
    return {condBr.getCondition()};
  if (auto sw = dyn_cast<cf::SwitchOp>(term))
    return {sw.getFlag()};
  SmallVector<Value> conditions(term->getOperands());
  if (auto branch = dyn_cast<BranchOpInterface>(term))
    for (unsigned s = 0, e = term->getNumSuccessors(); s != e; ++s)
      for (Value v : branch.getSuccessorOperands(s).getForwardedOperands())
        llvm::erase(conditions, v);
  return conditions;
}

} // namespace

SmallVector<WaitLoop> mlir::wooly::findWaitLoops(FuncOp fn) {
  SmallVector<WaitLoop> result;
  Region &body = fn.getBody();
  if (body.empty() || body.hasOneBlock())
    return result;
  DominanceInfo dom(fn);
  CFGLoopInfo loops(dom.getDomTree(&body));
  for (CFGLoop *loop : loops.getLoopsInPreorder()) {
    // The polls, and the values derived from them inside the loop.
    llvm::DenseSet<Value> tainted;
    SmallVector<Value> worklist;
    Operation *firstPoll = nullptr;
    for (Block *b : loop->getBlocks())
      for (Operation &op : *b)
        if (isPoll(&op)) {
          firstPoll = firstPoll ? firstPoll : &op;
          for (Value r : op.getResults())
            if (tainted.insert(r).second)
              worklist.push_back(r);
        }
    if (!firstPoll)
      continue;
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        if (!loop->contains(user->getBlock()))
          continue;
        for (Value r : user->getResults())
          if (tainted.insert(r).second)
            worklist.push_back(r);
        // A value passed to a block of the loop taints its argument.
        auto branch = dyn_cast<BranchOpInterface>(user);
        if (!branch)
          continue;
        for (unsigned s = 0, e = user->getNumSuccessors(); s != e; ++s) {
          Block *succ = user->getSuccessor(s);
          if (!loop->contains(succ))
            continue;
          SuccessorOperands operands = branch.getSuccessorOperands(s);
          for (unsigned i = 0, n = operands.size(); i != n; ++i)
            if (operands[i] == v) {
              BlockArgument arg =
                  succ->getArgument(i + operands.getProducedOperandCount());
              if (tainted.insert(arg).second)
                worklist.push_back(arg);
            }
        }
      }
    }
    // An exit decided by a tainted value.
    bool waits = false;
    for (Block *b : loop->getBlocks()) {
      Operation *term = b->getTerminator();
      bool exits = llvm::any_of(term->getSuccessors(), [&](Block *succ) {
        return !loop->contains(succ);
      });
      if (exits && llvm::any_of(branchConditions(term),
                                [&](Value v) { return tainted.contains(v); }))
        waits = true;
    }
    if (!waits)
      continue;
    WaitLoop w;
    w.header = loop->getHeader();
    w.poll = firstPoll;
    for (Block *pred : w.header->getPredecessors())
      if (loop->contains(pred) && !llvm::is_contained(w.latches, pred))
        w.latches.push_back(pred);
    result.push_back(std::move(w));
  }
  return result;
}
