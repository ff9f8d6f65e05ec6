//===- SSABuilder.cpp - On-the-fly SSA construction ---------*- C++ -*-===//
//
// Braun et al.'s algorithm with MLIR block arguments as phis.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Target/PTX/SSABuilder.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Region.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::wooly;

/// Calls `fn(terminator, successorIndex)` for each edge into `block`.
template <typename Fn>
static void forEachIncomingEdge(Block *block, Fn fn) {
  llvm::SmallVector<std::pair<Operation *, unsigned>, 4> edges;
  for (BlockOperand &use : block->getUses())
    edges.emplace_back(use.getOwner(), use.getOperandNumber());
  for (auto [term, index] : edges)
    fn(term, index);
}

Value SSABuilder::resolve(Value v) const {
  while (true) {
    auto it = replaced.find(v);
    if (it == replaced.end())
      return v;
    v = it->second;
  }
}

void SSABuilder::writeVariable(Var var, Block *block, Value value) {
  currentDef[{block, var}] = value;
}

Value SSABuilder::readVariable(Var var, Block *block) {
  auto it = currentDef.find({block, var});
  if (it != currentDef.end()) {
    Value v = resolve(it->second);
    if (v != it->second)
      it->second = v;
    return v;
  }
  return readVariableRecursive(var, block);
}

Value SSABuilder::readVariableRecursive(Var var, Block *block) {
  // Walk single-predecessor chains iteratively: long chains of predicated
  // instructions must not exhaust the stack.
  llvm::SmallVector<Block *, 8> chain;
  Value val;
  while (true) {
    auto it = currentDef.find({block, var});
    if (it != currentDef.end()) {
      val = resolve(it->second);
      break;
    }
    chain.push_back(block);
    if (!sealed.contains(block)) {
      BlockArgument phi = block->addArgument(types[var], block->empty()
                                                             ? UnknownLoc::get(
                                                                   types[var].getContext())
                                                             : block->front().getLoc());
      // Edges that already exist get a placeholder operand now so the
      // successor operand lists stay aligned with the block arguments.
      forEachIncomingEdge(block, [&](Operation *term, unsigned index) {
        cast<BranchOpInterface>(term).getSuccessorOperands(index).append(
            phi);
      });
      incompletePhis[block].emplace_back(var, phi);
      val = phi;
      break;
    }
    Block *pred = block->hasOneUse() ? block->getSinglePredecessor() : nullptr;
    if (pred && !llvm::is_contained(chain, pred)) {
      block = pred;
      continue;
    }
    if (block->hasNoPredecessors()) {
      val = undef(types[var]);
      break;
    }
    // Several predecessors, or a single-predecessor cycle (unreachable
    // code): break the cycle with an operandless phi first.
    BlockArgument phi = block->addArgument(
        types[var], UnknownLoc::get(types[var].getContext()));
    forEachIncomingEdge(block, [&](Operation *term, unsigned index) {
      cast<BranchOpInterface>(term).getSuccessorOperands(index).append(phi);
    });
    writeVariable(var, block, phi);
    val = addPhiOperands(var, phi);
    break;
  }
  for (Block *b : chain)
    writeVariable(var, b, val);
  return val;
}

Value SSABuilder::addPhiOperands(Var var, BlockArgument phi) {
  Block *block = phi.getOwner();
  unsigned argIndex = phi.getArgNumber();
  forEachIncomingEdge(block, [&](Operation *term, unsigned index) {
    Value incoming = readVariable(var, term->getBlock());
    SuccessorOperands ops =
        cast<BranchOpInterface>(term).getSuccessorOperands(index);
    ops.getMutableForwardedOperands()[argIndex].set(incoming);
  });
  return tryRemoveTrivialPhi(phi);
}

Value SSABuilder::tryRemoveTrivialPhi(BlockArgument phi) {
  Block *block = phi.getOwner();
  unsigned argIndex = phi.getArgNumber();
  Value same;
  bool trivial = true;
  forEachIncomingEdge(block, [&](Operation *term, unsigned index) {
    if (!trivial)
      return;
    Value op = resolve(cast<BranchOpInterface>(term)
                           .getSuccessorOperands(index)
                           .getForwardedOperands()[argIndex]);
    if (op == same || op == phi)
      return;
    if (same) {
      trivial = false;
      return;
    }
    same = op;
  });
  if (!trivial)
    return phi;
  if (!same)
    same = undef(phi.getType());
  // Phis that use this one may become trivial too.
  llvm::SmallVector<BlockArgument> users;
  for (OpOperand &use : phi.getUses()) {
    auto branch = dyn_cast<BranchOpInterface>(use.getOwner());
    if (!branch)
      continue;
    for (unsigned s = 0, e = branch->getNumSuccessors(); s < e; ++s) {
      SuccessorOperands so = branch.getSuccessorOperands(s);
      auto range = so.getForwardedOperands();
      if (range.empty())
        continue;
      unsigned begin = range.getBeginOperandIndex();
      unsigned n = use.getOperandNumber();
      if (n >= begin && n < begin + range.size()) {
        BlockArgument user =
            branch->getSuccessor(s)->getArgument(n - begin);
        if (user != phi)
          users.push_back(user);
      }
    }
  }
  phi.replaceAllUsesWith(same);
  replaced[phi] = same;
  for (BlockArgument user : users)
    if (!replaced.contains(user))
      tryRemoveTrivialPhi(user);
  return same;
}

void SSABuilder::sealBlock(Block *block) {
  if (!sealed.insert(block).second)
    return;
  auto it = incompletePhis.find(block);
  if (it == incompletePhis.end())
    return;
  auto phis = std::move(it->second);
  incompletePhis.erase(it);
  for (auto [var, phi] : phis)
    addPhiOperands(var, phi);
}

void SSABuilder::finalize(Region &region) {
  for (Block &block : region)
    sealBlock(&block);
  // Values captured before a phi was found trivial may have created new uses
  // of it since: redirect every remaining use to its final replacement.
  for (Block &block : region)
    for (BlockArgument arg : block.getArguments())
      if (replaced.contains(arg))
        arg.replaceAllUsesWith(resolve(arg));
  // Erase the arguments of removed phis, with their incoming operands.
  for (Block &block : region) {
    for (int i = block.getNumArguments() - 1; i >= 0; --i) {
      BlockArgument arg = block.getArgument(i);
      if (!replaced.contains(arg))
        continue;
      forEachIncomingEdge(&block, [&](Operation *term, unsigned index) {
        cast<BranchOpInterface>(term).getSuccessorOperands(index).erase(i);
      });
      block.eraseArgument(i);
    }
  }
  replaced.clear();
  currentDef.clear();
  incompletePhis.clear();
  sealed.clear();
}
