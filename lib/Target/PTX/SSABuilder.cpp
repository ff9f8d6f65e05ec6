//===- SSABuilder.cpp - On-the-fly SSA construction ---------*- C++ -*-===//
//
// Braun et al.'s algorithm with MLIR block arguments as phis. Incoming values
// are kept in a side table until finalize(), which writes each edge's
// successor operands once.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Target/PTX/SSABuilder.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Region.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::wooly;

/// Returns the edges into `block`, in a stable order.
static llvm::SmallVector<std::pair<Operation *, unsigned>, 4>
incomingEdges(Block *block) {
  llvm::SmallVector<std::pair<Operation *, unsigned>, 4> edges;
  for (BlockOperand &use : block->getUses())
    edges.emplace_back(use.getOwner(), use.getOperandNumber());
  return edges;
}

Value SSABuilder::resolve(Value v) {
  Value root = v;
  while (true) {
    auto it = replaced.find(root);
    if (it == replaced.end())
      break;
    root = it->second;
  }
  // Path compression: chains of removed phis are followed once.
  while (v != root) {
    Value &next = replaced[v];
    v = next;
    next = root;
  }
  return root;
}

void SSABuilder::writeVariable(Var var, Block *block, Value value) {
  LastDef &last = lastDef[var];
  if (last.block != block) {
    if (last.block)
      currentDef[{last.block, var}] = last.value;
    last.block = block;
  }
  last.value = value;
}

Value *SSABuilder::findDef(Var var, Block *block) {
  LastDef &last = lastDef[var];
  if (last.block == block)
    return &last.value;
  auto it = currentDef.find({block, var});
  return it == currentDef.end() ? nullptr : &it->second;
}

Value SSABuilder::readVariable(Var var, Block *block) {
  if (Value *def = findDef(var, block)) {
    Value v = resolve(*def);
    if (v != *def)
      *def = v;
    return v;
  }
  Value v = readVariableRecursive(var, block);
  drainPendingPhis();
  return resolve(v);
}

void SSABuilder::drainPendingPhis() {
  // Phis get their operands here, one at a time, rather than by recursion:
  // a read may walk back through any number of join blocks.
  if (draining)
    return;
  draining = true;
  while (!pendingPhis.empty()) {
    auto [var, phi] = pendingPhis.pop_back_val();
    addPhiOperands(var, phi);
  }
  draining = false;
}

Value SSABuilder::readVariableRecursive(Var var, Block *block) {
  // Walk single-predecessor chains iteratively: long chains of predicated
  // instructions must not exhaust the stack.
  llvm::SmallVector<Block *, 8> chain;
  Value val;
  Location loc = UnknownLoc::get(types[var].getContext());
  while (true) {
    if (Value *def = findDef(var, block)) {
      val = resolve(*def);
      break;
    }
    chain.push_back(block);
    if (Block *entry = loopEntryFor(var, block);
        entry && !llvm::is_contained(chain, entry)) {
      // A loop header, and the loop does not write `var`: the value that
      // enters the loop is its value in all of the loop.
      block = entry;
      continue;
    }
    if (!sealed.contains(block)) {
      val = addIncompletePhi(var, block);
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
    if (Value same = sameFromEveryPredecessor(var, block)) {
      // A join that merges one value (the common case: the join after a
      // guarded instruction that does not write `var`) needs no phi; the
      // algorithm would add one and remove it as trivial.
      val = same;
      break;
    }
    // Several predecessors, or a single-predecessor cycle (unreachable
    // code): an operandless phi breaks cycles; its operands are added by
    // drainPendingPhis().
    BlockArgument phi = block->addArgument(types[var], loc);
    writeVariable(var, block, phi);
    pendingPhis.emplace_back(var, phi);
    val = phi;
    break;
  }
  for (Block *b : chain)
    writeVariable(var, b, val);
  return val;
}

BlockArgument SSABuilder::addIncompletePhi(Var var, Block *block) {
  // Its operands are added when the block is sealed.
  BlockArgument phi =
      block->addArgument(types[var], UnknownLoc::get(types[var].getContext()));
  incompletePhis[block].emplace_back(var, phi);
  return phi;
}

Value SSABuilder::sameFromEveryPredecessor(Var var, Block *block) {
  // Only definitions found without adding a phi: a depth-first walk up from
  // `block` through chains of single-predecessor blocks and through sealed
  // joins whose own predecessors all agree (the joins of chains of guarded
  // instructions, e.g. a run of `@p st` each branched around, would
  // otherwise get one phi per join for each register read below them, all
  // trivial). A loop header whose loop does not write `var` counts as a
  // block whose only predecessor is the loop's entry (setLoopEntry()); any
  // other unsealed block (a loop header) gets the incomplete phi that the
  // caller would add there. The walk gives up, and the caller adds a phi,
  // at a join whose predecessors disagree, at a cycle (a join reached
  // again), at a block without predecessors and after kMaxSteps blocks.
  constexpr unsigned kMaxSteps = 256;
  struct Frame {
    Block *join;
    Block::pred_iterator next, end;
    Value same;
    /// Where the loop headers passed on the way from the parent's
    /// predecessor up to `join` start in `headers`: they get its value too.
    unsigned firstHeader;
  };
  llvm::SmallVector<Frame, 8> stack;
  llvm::SmallPtrSet<Block *, 8> onStack;
  // Loop headers passed by the walk, waiting for their value: a read there
  // once the header is sealed must find it, as readVariableRecursive()
  // gives it to the blocks it passes, not add a phi (that the header's back
  // edges would make non-trivial).
  llvm::SmallVector<Block *, 4> headers;
  auto resolveHeaders = [&](unsigned first, Value v) {
    for (Block *header : llvm::drop_begin(headers, first))
      writeVariable(var, header, v);
    headers.truncate(first);
  };
  stack.push_back({block, block->pred_begin(), block->pred_end(), Value(), 0});
  onStack.insert(block);
  unsigned steps = 0;
  while (true) {
    Frame &top = stack.back();
    Value v;
    if (top.next == top.end) {
      // Every predecessor of this join has the same value: so has the join.
      v = top.same;
      if (stack.size() == 1)
        return v;
      // Exact (no cycle was met above it), so worth keeping.
      writeVariable(var, top.join, v);
      resolveHeaders(top.firstHeader, v);
      onStack.erase(top.join);
      stack.pop_back();
    } else {
      Block *b = *top.next;
      unsigned firstHeader = headers.size();
      while (true) {
        if (++steps > kMaxSteps)
          return {};
        if (Value *def = findDef(var, b)) {
          v = resolve(*def);
          break;
        }
        bool isSealed = sealed.contains(b);
        Block *pred;
        if (isSealed && b->hasOneUse()) {
          // Not a loop header: a sealed one has its back edges too.
          pred = b->getSinglePredecessor();
        } else if (Block *entry = loopEntryFor(var, b)) {
          pred = entry;
          headers.push_back(b);
        } else if (!isSealed) {
          v = addIncompletePhi(var, b);
          writeVariable(var, b, v);
          break;
        } else if (b->hasNoPredecessors() || onStack.contains(b)) {
          return {};
        } else {
          break; // A sealed join: its predecessors first.
        }
        if (!pred)
          return {};
        b = pred;
      }
      if (!v) {
        stack.push_back(
            {b, b->pred_begin(), b->pred_end(), Value(), firstHeader});
        onStack.insert(b);
        continue;
      }
      resolveHeaders(firstHeader, v);
    }
    Frame &parent = stack.back();
    if (parent.same && v != parent.same)
      return {};
    parent.same = v;
    ++parent.next;
  }
}

Value SSABuilder::addPhiOperands(Var var, BlockArgument phi) {
  Incoming values;
  for (Edge edge : incomingEdges(phi.getOwner()))
    values.emplace_back(edge, readVariable(var, edge.first->getBlock()));
  for (auto &[edge, v] : values) {
    auto &users = phiUsers[v];
    if (users.empty() || users.back() != phi)
      users.push_back(phi);
  }
  incoming[phi] = std::move(values);
  return tryRemoveTrivialPhi(phi);
}

Value SSABuilder::tryRemoveTrivialPhi(BlockArgument start) {
  // A worklist rather than recursion: removing one phi can make a long
  // chain of its users trivial.
  llvm::SmallVector<BlockArgument, 4> work{start};
  while (!work.empty()) {
    BlockArgument phi = work.pop_back_val();
    auto inc = incoming.find(phi);
    if (replaced.contains(phi) || inc == incoming.end())
      continue;
    Value same;
    bool trivial = true;
    for (auto &[edge, v] : inc->second) {
      Value op = resolve(v);
      if (op == same || op == phi)
        continue;
      if (same) {
        trivial = false; // Merges at least two values.
        break;
      }
      same = op;
    }
    if (!trivial)
      continue;
    if (!same)
      same = undef(phi.getType()); // Unreachable, or only self-references.
    replaced[phi] = same;
    phi.replaceAllUsesWith(same);
    // Phis that used this one may have become trivial; the live ones now
    // use `same` (removed phis are not carried along: that would grow the
    // user lists quadratically along chains of joins).
    llvm::SmallVector<BlockArgument, 2> users;
    if (auto it = phiUsers.find(phi); it != phiUsers.end()) {
      users = std::move(it->second);
      phiUsers.erase(it);
    }
    for (BlockArgument user : users) {
      if (user == phi || replaced.contains(user))
        continue;
      auto &sameUsers = phiUsers[same];
      if (sameUsers.empty() || sameUsers.back() != user)
        sameUsers.push_back(user);
      work.push_back(user);
    }
  }
  return resolve(start);
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
  drainPendingPhis();
}

void SSABuilder::finalize(Region &region) {
  for (Block &block : region)
    sealBlock(&block);
  for (Block &block : region) {
    if (block.getNumArguments() == 0 || block.isEntryBlock())
      continue;
    // Values captured before a phi was found trivial may have created new
    // uses of it since: redirect them, then drop the argument.
    for (int i = block.getNumArguments() - 1; i >= 0; --i) {
      BlockArgument arg = block.getArgument(i);
      if (!replaced.contains(arg))
        continue;
      arg.replaceAllUsesWith(resolve(arg));
      block.eraseArgument(i);
    }
    if (block.getNumArguments() == 0)
      continue;
    // One write of successor operands per edge.
    for (Edge edge : incomingEdges(&block)) {
      llvm::SmallVector<Value, 4> operands;
      for (BlockArgument arg : block.getArguments()) {
        Value v;
        for (auto &[e, value] : incoming[arg])
          if (e == edge)
            v = resolve(value);
        operands.push_back(v ? v : undef(arg.getType()));
      }
      cast<BranchOpInterface>(edge.first)
          .getSuccessorOperands(edge.second)
          .append(operands);
    }
  }
  replaced.clear();
  currentDef.clear();
  for (LastDef &last : lastDef)
    last = LastDef();
  incompletePhis.clear();
  incoming.clear();
  phiUsers.clear();
  sealed.clear();
  loopEntries.clear();
}
