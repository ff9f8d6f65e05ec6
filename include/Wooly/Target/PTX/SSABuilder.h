//===- SSABuilder.h - On-the-fly SSA construction -----------*- C++ -*-===//
//
// Turns reads and writes of mutable variables (PTX virtual registers) into SSA
// values while the IR is being built, after Braun et al., "Simple and
// Efficient Construction of Static Single Assignment Form" (CC 2013). Phis
// are MLIR block arguments; their incoming values become successor operands of
// the predecessors' terminators (which must implement BranchOpInterface) when
// the function is finished.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_TARGET_PTX_SSABUILDER_H
#define WOOLY_TARGET_PTX_SSABUILDER_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::wooly {

/// Builds SSA form for numbered variables of fixed types.
///
/// Usage: `addVariable` for each variable; `writeVariable`/`readVariable` as
/// instructions are emitted block by block; `sealBlock` once all of a block's
/// predecessor edges exist; `finalize` when the function is done.
///
/// Branches are created without successor operands. Until `finalize`, the
/// incoming values of each phi live in a side table, so that adding and
/// removing phis never rewrites terminators; `finalize` seals the remaining
/// blocks, erases the block arguments that turned out to be trivial, and
/// gives every edge its successor operands in one step.
///
/// Loop headers: a block is sealed only when its last back edge exists, so a
/// read in a loop body reaches the unsealed header and gets a phi there,
/// which sealing finds trivial unless the loop writes the variable. With
/// `setLoopEntry` and a `loopMayWrite` callback, reads of the variables a
/// loop does not write go through its header to the block that enters it.
class SSABuilder {
public:
  /// Variable id.
  using Var = unsigned;

  /// `undef` creates the value of a variable read before any write (called
  /// with the variable's type; it must dominate every block, e.g. a constant
  /// in the entry block). It must outlive the builder.
  ///
  /// `loopMayWrite(header, var)` (optional) answers, for a header declared
  /// with `setLoopEntry`, whether some path from `header` back to it may
  /// write `var`; it must answer true when unsure.
  explicit SSABuilder(
      llvm::function_ref<Value(Type)> undef,
      llvm::function_ref<bool(Block *, unsigned)> loopMayWrite = {})
      : undef(undef), loopMayWrite(loopMayWrite) {}

  /// Adds a variable of `type` and returns its id.
  Var addVariable(Type type) {
    types.push_back(type);
    lastDef.emplace_back();
    return types.size() - 1;
  }
  /// Makes room for `n` more variables.
  void reserveVariables(size_t n) {
    types.reserve(types.size() + n);
    lastDef.reserve(lastDef.size() + n);
  }
  /// Returns the type of `var`.
  Type getType(Var var) const { return types[var]; }

  /// Records that `var` holds `value` at the end of `block` so far.
  void writeVariable(Var var, Block *block, Value value);
  /// Returns the value `var` holds at the current end of `block`.
  Value readVariable(Var var, Block *block);
  /// Declares that all predecessor edges of `block` now exist.
  void sealBlock(Block *block);
  /// Declares the unsealed `header` a loop header whose one edge from
  /// outside the loop comes from `entry` (that edge exists now; all the
  /// others, existing or not, are back edges from blocks that only `header`
  /// reaches from outside). A read of a variable that `loopMayWrite(header,
  /// var)` says the loop does not write then takes its value from `entry`,
  /// before and after `header` is sealed, without a phi: that phi would
  /// only merge the entry's value with itself. Needs the `loopMayWrite`
  /// callback.
  void setLoopEntry(Block *header, Block *entry) {
    if (loopMayWrite)
      loopEntries[header] = entry;
  }
  /// Returns true if `block` was sealed.
  bool isSealed(Block *block) const { return sealed.contains(block); }
  /// Seals all blocks of the region that are not sealed yet, removes the
  /// trivial phis and writes the successor operands of every branch into the
  /// region. Call once, after the last instruction.
  void finalize(Region &region);

private:
  /// One incoming edge: a terminator and the index of the successor.
  using Edge = std::pair<Operation *, unsigned>;
  /// A phi's incoming values, one per edge.
  using Incoming = llvm::SmallVector<std::pair<Edge, Value>, 2>;

  Value readVariableRecursive(Var var, Block *block);
  /// Adds a phi of `var` to the unsealed `block`, completed by sealBlock().
  BlockArgument addIncompletePhi(Var var, Block *block);
  /// The value `var` has at the end of every predecessor of the sealed
  /// `block`, where one value is found for all of them without adding a
  /// phi other than the incomplete phis of unsealed loop headers; null
  /// otherwise.
  Value sameFromEveryPredecessor(Var var, Block *block);
  /// Adds the operands of the phis created by reads, until none is left.
  void drainPendingPhis();
  Value addPhiOperands(Var var, BlockArgument phi);
  Value tryRemoveTrivialPhi(BlockArgument phi);
  /// Follows the replacements of removed phis.
  Value resolve(Value v);
  /// The value `var` holds at the end of `block` so far, or null when it
  /// has none there yet. Valid until the next write.
  Value *findDef(Var var, Block *block);
  /// For an unsealed loop header declared by setLoopEntry() whose loop does
  /// not write `var`: the block that enters the loop; null otherwise.
  Block *loopEntryFor(Var var, Block *block) {
    if (loopEntries.empty())
      return nullptr;
    auto it = loopEntries.find(block);
    if (it == loopEntries.end() || loopMayWrite(block, var))
      return nullptr;
    return it->second;
  }

  llvm::function_ref<Value(Type)> undef;
  llvm::function_ref<bool(Block *, unsigned)> loopMayWrite;
  /// The unsealed loop headers declared by setLoopEntry() and their entries.
  llvm::DenseMap<Block *, Block *> loopEntries;
  llvm::SmallVector<Type> types;
  /// The last write of each variable: its block and value. Most reads are
  /// of the block written last, and most variables are written in one
  /// block, so they need no map entry; a write in another block moves the
  /// previous one to `currentDef`.
  struct LastDef {
    Block *block = nullptr;
    Value value;
  };
  llvm::SmallVector<LastDef> lastDef;
  /// The other blocks' values of each variable.
  llvm::DenseMap<std::pair<Block *, Var>, Value> currentDef;
  llvm::DenseSet<Block *> sealed;
  llvm::DenseMap<Block *, llvm::SmallVector<std::pair<Var, BlockArgument>>>
      incompletePhis;
  /// Incoming values of each phi that has them.
  llvm::DenseMap<Value, Incoming> incoming;
  /// Phis that list a value among their incoming values.
  llvm::DenseMap<Value, llvm::SmallVector<BlockArgument, 2>> phiUsers;
  /// Phis of sealed blocks still waiting for their operands.
  llvm::SmallVector<std::pair<Var, BlockArgument>> pendingPhis;
  bool draining = false;
  /// Phis found trivial: replaced value, erased in finalize().
  llvm::DenseMap<Value, Value> replaced;
};

} // namespace mlir::wooly

#endif // WOOLY_TARGET_PTX_SSABUILDER_H
