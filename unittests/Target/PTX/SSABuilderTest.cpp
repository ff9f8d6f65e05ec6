//===- SSABuilderTest.cpp - On-the-fly SSA construction tests -*- C++ -*-===//
//
// Builds small wooly.func bodies by hand with cf branches and checks the
// block arguments (phis) and branch operands SSABuilder produces.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Target/PTX/SSABuilder.h"

#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Config/llvm-config.h"
#include "gtest/gtest.h"

#include <cstdlib>
#include <functional>

#ifdef LLVM_ON_UNIX
#include <sys/resource.h>
#endif

using namespace mlir;
using namespace mlir::wooly;

namespace {

/// A module with one `wooly.func @f(%cond: i1)` to fill, and an SSABuilder
/// whose undef values are `arith.constant` ops at the top of the entry block.
class SSABuilderTest : public ::testing::Test {
protected:
  SSABuilderTest() : b(&ctx) {
    ctx.loadDialect<WoolyDialect, arith::ArithDialect,
                    cf::ControlFlowDialect>();
    loc = UnknownLoc::get(&ctx);
    i1 = b.getI1Type();
    i32 = b.getI32Type();
    module = ModuleOp::create(loc);
    b.setInsertionPointToEnd(module->getBody());
    func = FuncOp::create(b, loc, llvm::StringRef("f"),
                          b.getFunctionType({i1}, {}));
    entry = func.addEntryBlock();
    cond = entry->getArgument(0);
  }

  /// Appends a new empty block to the function.
  Block *newBlock() {
    Block *blk = new Block();
    func.getBody().push_back(blk);
    return blk;
  }

  /// Returns `arith.constant v : i32`, created at the end of `blk`.
  Value constant(Block *blk, int64_t v) {
    b.setInsertionPointToEnd(blk);
    return arith::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(v));
  }

  /// Returns `lhs + rhs`, created at the end of `blk`.
  Value add(Block *blk, Value lhs, Value rhs) {
    b.setInsertionPointToEnd(blk);
    return arith::AddIOp::create(b, loc, lhs, rhs);
  }

  /// Ends `from` with `cf.br` to `to`, without operands: the SSABuilder
  /// writes successor operands in finalize().
  cf::BranchOp br(Block *from, Block *to) {
    b.setInsertionPointToEnd(from);
    return cf::BranchOp::create(b, loc, to, ValueRange());
  }

  /// Ends `from` with `cf.cond_br %cond, t, f`.
  cf::CondBranchOp condBr(Block *from, Block *t, Block *f) {
    b.setInsertionPointToEnd(from);
    return cf::CondBranchOp::create(b, loc, cond, t, ValueRange(), f,
                                    ValueRange());
  }

  /// Ends `blk` with `wooly.ret`.
  void ret(Block *blk) {
    b.setInsertionPointToEnd(blk);
    RetOp::create(b, loc, ValueRange());
  }

  /// Returns the operands `term` (a cf.br) passes to its successor.
  static SmallVector<Value> operandsOf(cf::BranchOp term) {
    return llvm::to_vector(term.getDestOperands());
  }

  /// Returns the block arguments of `blk` as values.
  static SmallVector<Value> argsOf(Block *blk) {
    return llvm::to_vector<4>(llvm::map_range(
        blk->getArguments(), [](BlockArgument a) -> Value { return a; }));
  }

  /// Verifies the module.
  bool verifies() { return succeeded(verify(*module)); }

  /// The undef callback: one constant per type, counted.
  Value makeUndef(Type t) {
    ++undefCalls;
    Value &v = undefs[t];
    if (!v) {
      OpBuilder ub(&ctx);
      ub.setInsertionPointToStart(entry);
      v = arith::ConstantOp::create(ub, loc, t, ub.getIntegerAttr(t, -1));
    }
    return v;
  }

  MLIRContext ctx;
  OpBuilder b;
  Location loc = UnknownLoc::get(&ctx);
  Type i1, i32;
  OwningOpRef<ModuleOp> module;
  FuncOp func;
  Block *entry = nullptr;
  Value cond;
  unsigned undefCalls = 0;
  llvm::DenseMap<Type, Value> undefs;
  std::function<Value(Type)> undefFn = [this](Type t) { return makeUndef(t); };
  SSABuilder ssa{undefFn};
};

// Straight-line code: reads see the latest write, in the block and through
// single-predecessor blocks; no block arguments appear.
TEST_F(SSABuilderTest, StraightLine) {
  SSABuilder::Var x = ssa.addVariable(i32);
  EXPECT_EQ(ssa.getType(x), i32);
  ssa.sealBlock(entry);
  Value c1 = constant(entry, 1), c2 = constant(entry, 2);
  ssa.writeVariable(x, entry, c1);
  EXPECT_EQ(ssa.readVariable(x, entry), c1);
  ssa.writeVariable(x, entry, c2);
  EXPECT_EQ(ssa.readVariable(x, entry), c2);

  Block *next = newBlock();
  br(entry, next);
  ssa.sealBlock(next);
  EXPECT_TRUE(ssa.isSealed(next));
  EXPECT_EQ(ssa.readVariable(x, next), c2);
  Value sum = add(next, ssa.readVariable(x, next), c1);
  ssa.writeVariable(x, next, sum);

  Block *last = newBlock();
  br(next, last);
  ssa.sealBlock(last);
  EXPECT_EQ(ssa.readVariable(x, last), sum);
  ret(last);
  ssa.finalize(func.getBody());

  EXPECT_EQ(entry->getNumArguments(), 1u);
  EXPECT_EQ(next->getNumArguments(), 0u);
  EXPECT_EQ(last->getNumArguments(), 0u);
  EXPECT_EQ(undefCalls, 0u);
  EXPECT_TRUE(verifies());
}

// if/else where one side writes: the join gets one block argument whose
// incoming values are the two definitions.
TEST_F(SSABuilderTest, DiamondCreatesPhi) {
  SSABuilder::Var x = ssa.addVariable(i32);
  ssa.sealBlock(entry);
  Value c0 = constant(entry, 0);
  ssa.writeVariable(x, entry, c0);
  Block *thenB = newBlock(), *elseB = newBlock(), *join = newBlock();
  condBr(entry, thenB, elseB);
  ssa.sealBlock(thenB);
  ssa.sealBlock(elseB);

  Value c1 = constant(thenB, 1);
  ssa.writeVariable(x, thenB, c1);
  cf::BranchOp thenBr = br(thenB, join);
  cf::BranchOp elseBr = br(elseB, join);
  ssa.sealBlock(join);

  Value phi = ssa.readVariable(x, join);
  auto arg = dyn_cast<BlockArgument>(phi);
  ASSERT_TRUE(arg);
  EXPECT_EQ(arg.getOwner(), join);
  EXPECT_EQ(arg.getType(), i32);
  ASSERT_EQ(join->getNumArguments(), 1u);
  // A second read reuses the phi.
  EXPECT_EQ(ssa.readVariable(x, join), phi);
  Value use = add(join, phi, c0);
  ret(join);
  ssa.finalize(func.getBody());

  ASSERT_EQ(join->getNumArguments(), 1u);
  EXPECT_EQ(use.getDefiningOp()->getOperand(0), join->getArgument(0));
  EXPECT_EQ(operandsOf(thenBr), SmallVector<Value>{c1});
  EXPECT_EQ(operandsOf(elseBr), SmallVector<Value>{c0});
  EXPECT_EQ(undefCalls, 0u);
  EXPECT_TRUE(verifies());
}

// if/else where neither side writes: the phi is trivial and disappears.
TEST_F(SSABuilderTest, DiamondWithoutWritesHasNoPhi) {
  SSABuilder::Var x = ssa.addVariable(i32);
  ssa.sealBlock(entry);
  Value c0 = constant(entry, 0);
  ssa.writeVariable(x, entry, c0);
  Block *thenB = newBlock(), *elseB = newBlock(), *join = newBlock();
  condBr(entry, thenB, elseB);
  ssa.sealBlock(thenB);
  ssa.sealBlock(elseB);
  cf::BranchOp thenBr = br(thenB, join);
  cf::BranchOp elseBr = br(elseB, join);
  ssa.sealBlock(join);

  EXPECT_EQ(ssa.readVariable(x, join), c0);
  ret(join);
  ssa.finalize(func.getBody());
  EXPECT_EQ(join->getNumArguments(), 0u);
  EXPECT_TRUE(operandsOf(thenBr).empty());
  EXPECT_TRUE(operandsOf(elseBr).empty());
  EXPECT_TRUE(verifies());
}

// Both sides write the same value: also a trivial phi.
TEST_F(SSABuilderTest, DiamondWritingSameValueHasNoPhi) {
  SSABuilder::Var x = ssa.addVariable(i32);
  ssa.sealBlock(entry);
  Value c0 = constant(entry, 0), c7 = constant(entry, 7);
  ssa.writeVariable(x, entry, c0);
  Block *thenB = newBlock(), *elseB = newBlock(), *join = newBlock();
  condBr(entry, thenB, elseB);
  ssa.sealBlock(thenB);
  ssa.sealBlock(elseB);
  ssa.writeVariable(x, thenB, c7);
  ssa.writeVariable(x, elseB, c7);
  br(thenB, join);
  br(elseB, join);
  ssa.sealBlock(join);

  EXPECT_EQ(ssa.readVariable(x, join), c7);
  ret(join);
  ssa.finalize(func.getBody());
  EXPECT_EQ(join->getNumArguments(), 0u);
  EXPECT_TRUE(verifies());
}

// A loop whose body increments x: the header is read while unsealed (an
// incomplete phi), and sealing it records the entry and back-edge values,
// which finalize() writes as successor operands.
TEST_F(SSABuilderTest, LoopWithBackEdge) {
  SSABuilder::Var x = ssa.addVariable(i32);
  ssa.sealBlock(entry);
  Value c0 = constant(entry, 0), c1 = constant(entry, 1);
  ssa.writeVariable(x, entry, c0);
  Block *header = newBlock(), *body = newBlock(), *exit = newBlock();
  cf::BranchOp entryBr = br(entry, header);
  // header has two predecessors (entry, body); body does not exist yet.

  Value phi = ssa.readVariable(x, header);
  EXPECT_FALSE(ssa.isSealed(header));
  auto arg = dyn_cast<BlockArgument>(phi);
  ASSERT_TRUE(arg);
  EXPECT_EQ(arg.getOwner(), header);
  ASSERT_EQ(header->getNumArguments(), 1u);
  // Terminators get their operands only in finalize().
  EXPECT_TRUE(operandsOf(entryBr).empty());

  condBr(header, body, exit);
  ssa.sealBlock(body);
  ssa.sealBlock(exit);
  EXPECT_EQ(ssa.readVariable(x, body), phi);
  Value inc = add(body, ssa.readVariable(x, body), c1);
  ssa.writeVariable(x, body, inc);
  cf::BranchOp backBr = br(body, header);
  ssa.sealBlock(header);

  EXPECT_TRUE(operandsOf(backBr).empty());
  EXPECT_EQ(ssa.readVariable(x, exit), phi);
  ret(exit);
  ssa.finalize(func.getBody());

  ASSERT_EQ(header->getNumArguments(), 1u);
  EXPECT_EQ(header->getArgument(0), phi);
  EXPECT_EQ(inc.getDefiningOp()->getOperand(0), phi);
  EXPECT_EQ(operandsOf(entryBr), SmallVector<Value>{c0});
  EXPECT_EQ(operandsOf(backBr), SmallVector<Value>{inc});
  EXPECT_EQ(body->getNumArguments(), 0u);
  EXPECT_EQ(exit->getNumArguments(), 0u);
  EXPECT_EQ(undefCalls, 0u);
  EXPECT_TRUE(verifies());
}

// A loop that only reads x: the header phi's operands are the entry value
// and the phi itself, so it is trivial and finalize removes it together with
// its branch operands; its uses now see the entry value.
TEST_F(SSABuilderTest, LoopInvariantPhiIsRemoved) {
  SSABuilder::Var x = ssa.addVariable(i32);
  SSABuilder::Var y = ssa.addVariable(i32);
  ssa.sealBlock(entry);
  Value c0 = constant(entry, 0), c1 = constant(entry, 1);
  ssa.writeVariable(x, entry, c0);
  ssa.writeVariable(y, entry, c1);
  Block *header = newBlock(), *body = newBlock(), *exit = newBlock();
  cf::BranchOp entryBr = br(entry, header);
  condBr(header, body, exit);
  ssa.sealBlock(body);
  ssa.sealBlock(exit);

  // The body reads x (creating the incomplete phi) and updates y from it.
  Value xIn = ssa.readVariable(x, body);
  EXPECT_EQ(header->getNumArguments(), 1u);
  Value yIn = ssa.readVariable(y, body);
  EXPECT_EQ(header->getNumArguments(), 2u);
  Value sum = add(body, xIn, yIn);
  ssa.writeVariable(y, body, sum);
  cf::BranchOp backBr = br(body, header);
  ssa.sealBlock(header);

  EXPECT_EQ(ssa.readVariable(x, exit), c0);
  Value yOut = ssa.readVariable(y, exit);
  EXPECT_EQ(yOut, yIn);
  ret(exit);
  ssa.finalize(func.getBody());

  ASSERT_EQ(header->getNumArguments(), 1u);
  EXPECT_EQ(header->getArgument(0), yIn);
  EXPECT_EQ(operandsOf(entryBr), SmallVector<Value>{c1});
  EXPECT_EQ(operandsOf(backBr), SmallVector<Value>{sum});
  // The add that read x now reads c0 directly.
  EXPECT_EQ(sum.getDefiningOp()->getOperand(0), c0);
  EXPECT_EQ(sum.getDefiningOp()->getOperand(1), yIn);
  EXPECT_TRUE(verifies());
}

// A loop that neither reads nor writes x before the exit: no phi at all
// remains after finalize.
TEST_F(SSABuilderTest, UnmodifiedVariableInLoopLeavesNoArgument) {
  SSABuilder::Var x = ssa.addVariable(i32);
  ssa.sealBlock(entry);
  Value c5 = constant(entry, 5);
  ssa.writeVariable(x, entry, c5);
  Block *header = newBlock(), *body = newBlock(), *exit = newBlock();
  cf::BranchOp entryBr = br(entry, header);
  condBr(header, body, exit);
  ssa.sealBlock(body);
  ssa.sealBlock(exit);
  // Read x in the exit before the back edge exists.
  Value out = ssa.readVariable(x, exit);
  EXPECT_EQ(header->getNumArguments(), 1u);
  Value use = add(exit, out, out);
  cf::BranchOp backBr = br(body, header);
  ssa.sealBlock(header);
  EXPECT_EQ(ssa.readVariable(x, exit), c5);
  ret(exit);
  ssa.finalize(func.getBody());

  EXPECT_EQ(header->getNumArguments(), 0u);
  EXPECT_TRUE(operandsOf(entryBr).empty());
  EXPECT_TRUE(operandsOf(backBr).empty());
  // The value read before sealing was redirected to the entry value.
  EXPECT_EQ(use.getDefiningOp()->getOperand(0), c5);
  EXPECT_EQ(use.getDefiningOp()->getOperand(1), c5);
  EXPECT_TRUE(verifies());
}

// A loop header declared with setLoopEntry(): reads of a variable the loop
// does not write (x) take the entry's value and add no block argument, before
// and after the header is sealed; a variable the loop writes (y) gets its phi
// as before. The join inside the loop needs no phi for x either.
TEST_F(SSABuilderTest, LoopEntryReadsSkipHeaderPhi) {
  unsigned mayWriteCalls = 0;
  SSABuilder::Var x = 0, y = 0;
  auto mayWrite = [&](Block *, unsigned var) {
    ++mayWriteCalls;
    return var != x;
  };
  SSABuilder loopSsa(undefFn, mayWrite);
  x = loopSsa.addVariable(i32);
  y = loopSsa.addVariable(i32);
  loopSsa.sealBlock(entry);
  Value c0 = constant(entry, 0), c1 = constant(entry, 1);
  loopSsa.writeVariable(x, entry, c0);
  loopSsa.writeVariable(y, entry, c1);
  // header -> (thenB | join), thenB -> join, join -> (header | exit).
  Block *header = newBlock(), *thenB = newBlock(), *join = newBlock(),
        *exit = newBlock();
  cf::BranchOp entryBr = br(entry, header);
  loopSsa.setLoopEntry(header, entry);
  condBr(header, thenB, join);
  loopSsa.sealBlock(thenB);
  br(thenB, join);
  loopSsa.sealBlock(join);

  EXPECT_EQ(loopSsa.readVariable(x, join), c0);
  EXPECT_EQ(header->getNumArguments(), 0u);
  EXPECT_EQ(join->getNumArguments(), 0u);
  EXPECT_GT(mayWriteCalls, 0u);
  Value yIn = loopSsa.readVariable(y, join);
  ASSERT_EQ(header->getNumArguments(), 1u);
  EXPECT_EQ(yIn, header->getArgument(0));
  EXPECT_EQ(join->getNumArguments(), 0u);
  Value sum = add(join, yIn, c1);
  loopSsa.writeVariable(y, join, sum);
  condBr(join, header, exit);
  loopSsa.sealBlock(header);
  loopSsa.sealBlock(exit);

  EXPECT_EQ(loopSsa.readVariable(x, exit), c0);
  EXPECT_EQ(loopSsa.readVariable(x, header), c0);
  EXPECT_EQ(loopSsa.readVariable(y, exit), sum);
  ret(exit);
  loopSsa.finalize(func.getBody());

  ASSERT_EQ(header->getNumArguments(), 1u);
  EXPECT_EQ(operandsOf(entryBr), SmallVector<Value>{c1});
  EXPECT_EQ(undefCalls, 0u);
  EXPECT_TRUE(verifies());
}

// A run of guarded instructions, each branched around (cond_br to a block
// and the join after it), none writing x: a read of x below them finds the
// value written before, without adding a block argument to any join (not
// even one removed later as trivial).
TEST_F(SSABuilderTest, ChainOfJoinsNeedsNoPhi) {
  SSABuilder::Var x = ssa.addVariable(i32);
  ssa.sealBlock(entry);
  Value c7 = constant(entry, 7);
  ssa.writeVariable(x, entry, c7);
  Block *prev = entry;
  SmallVector<Block *> joins;
  for (int i = 0; i < 40; ++i) {
    Block *thenB = newBlock(), *join = newBlock();
    condBr(prev, thenB, join);
    ssa.sealBlock(thenB);
    br(thenB, join);
    ssa.sealBlock(join);
    joins.push_back(join);
    prev = join;
  }
  EXPECT_EQ(ssa.readVariable(x, prev), c7);
  for (Block *join : joins)
    EXPECT_EQ(join->getNumArguments(), 0u);
  ret(prev);
  ssa.finalize(func.getBody());
  EXPECT_EQ(undefCalls, 0u);
  EXPECT_TRUE(verifies());
}

// A variable read before any write gets the undef value, in the entry block
// and through single-predecessor blocks.
TEST_F(SSABuilderTest, ReadBeforeWriteIsUndef) {
  SSABuilder::Var x = ssa.addVariable(i32);
  SSABuilder::Var p = ssa.addVariable(i1);
  ssa.sealBlock(entry);
  Value u = ssa.readVariable(x, entry);
  EXPECT_EQ(undefCalls, 1u);
  ASSERT_TRUE(u);
  EXPECT_EQ(u.getType(), i32);
  EXPECT_EQ(u, undefs.lookup(i32));
  EXPECT_TRUE(isa<arith::ConstantOp>(u.getDefiningOp()));
  // The value is remembered: no second call for the same block.
  EXPECT_EQ(ssa.readVariable(x, entry), u);
  EXPECT_EQ(undefCalls, 1u);

  Block *next = newBlock();
  br(entry, next);
  ssa.sealBlock(next);
  EXPECT_EQ(ssa.readVariable(x, next), u);
  Value up = ssa.readVariable(p, next);
  EXPECT_EQ(up.getType(), i1);
  EXPECT_EQ(up, undefs.lookup(i1));
  ret(next);
  ssa.finalize(func.getBody());
  EXPECT_EQ(next->getNumArguments(), 0u);
  EXPECT_TRUE(verifies());
}

// A variable never written but read in a loop header: the phi's operands
// are undef and itself, so it folds to undef.
TEST_F(SSABuilderTest, ReadBeforeWriteInLoopIsUndef) {
  SSABuilder::Var x = ssa.addVariable(i32);
  ssa.sealBlock(entry);
  Block *header = newBlock(), *body = newBlock(), *exit = newBlock();
  cf::BranchOp entryBr = br(entry, header);
  Value phi = ssa.readVariable(x, header);
  EXPECT_TRUE(isa<BlockArgument>(phi));
  EXPECT_EQ(undefCalls, 0u);
  condBr(header, body, exit);
  ssa.sealBlock(body);
  ssa.sealBlock(exit);
  cf::BranchOp backBr = br(body, header);
  ssa.sealBlock(header);
  Value out = ssa.readVariable(x, exit);
  EXPECT_EQ(out, undefs.lookup(i32));
  EXPECT_GE(undefCalls, 1u);
  ret(exit);
  ssa.finalize(func.getBody());
  EXPECT_EQ(header->getNumArguments(), 0u);
  EXPECT_TRUE(operandsOf(entryBr).empty());
  EXPECT_TRUE(operandsOf(backBr).empty());
  EXPECT_TRUE(verifies());
}

// Two nested loops: x changes in the inner body, y only in the outer latch.
//
//   entry -> outer; outer -> inner | exit; inner -> ibody | latch;
//   ibody -> inner; latch -> outer.
//
// The outer header needs phis for x and y, the inner header only for x (its
// y phi is trivial and removed).
TEST_F(SSABuilderTest, NestedLoops) {
  SSABuilder::Var x = ssa.addVariable(i32);
  SSABuilder::Var y = ssa.addVariable(i32);
  ssa.sealBlock(entry);
  Value c0 = constant(entry, 0), c1 = constant(entry, 1),
        c10 = constant(entry, 10);
  ssa.writeVariable(x, entry, c0);
  ssa.writeVariable(y, entry, c10);
  Block *outer = newBlock(), *inner = newBlock(), *ibody = newBlock(),
        *latch = newBlock(), *exit = newBlock();
  cf::BranchOp entryBr = br(entry, outer);
  cf::CondBranchOp outerBr = condBr(outer, inner, exit);
  ssa.sealBlock(exit);
  cf::CondBranchOp innerBr = condBr(inner, ibody, latch);
  ssa.sealBlock(ibody);
  ssa.sealBlock(latch);

  // Inner body: x = x + y.
  Value xIn = ssa.readVariable(x, ibody);
  Value yIn = ssa.readVariable(y, ibody);
  EXPECT_EQ(inner->getNumArguments(), 2u);
  Value t = add(ibody, xIn, yIn);
  ssa.writeVariable(x, ibody, t);
  cf::BranchOp ibodyBr = br(ibody, inner);
  EXPECT_FALSE(ssa.isSealed(inner));
  EXPECT_FALSE(ssa.isSealed(outer));
  ssa.sealBlock(inner);

  // Latch: y = y + 1.
  Value yLatch = ssa.readVariable(y, latch);
  Value y2 = add(latch, yLatch, c1);
  ssa.writeVariable(y, latch, y2);
  cf::BranchOp latchBr = br(latch, outer);
  ssa.sealBlock(outer);

  Value xOut = ssa.readVariable(x, exit);
  Value yOut = ssa.readVariable(y, exit);
  Value use = add(exit, xOut, yOut);
  ret(exit);
  ssa.finalize(func.getBody());
  EXPECT_EQ(undefCalls, 0u);

  // Outer header: phis for x and y.
  ASSERT_EQ(outer->getNumArguments(), 2u);
  auto xOuter = dyn_cast<BlockArgument>(xOut);
  auto yOuter = dyn_cast<BlockArgument>(yOut);
  ASSERT_TRUE(xOuter && yOuter);
  EXPECT_EQ(xOuter.getOwner(), outer);
  EXPECT_EQ(yOuter.getOwner(), outer);
  unsigned xi = xOuter.getArgNumber(), yi = yOuter.getArgNumber();
  EXPECT_NE(xi, yi);

  // Inner header: one phi, for x.
  ASSERT_EQ(inner->getNumArguments(), 1u);
  BlockArgument xInner = inner->getArgument(0);
  EXPECT_EQ(xIn, xInner);
  EXPECT_EQ(yLatch, yOuter);

  // Incoming values.
  SmallVector<Value> entryOps = operandsOf(entryBr);
  ASSERT_EQ(entryOps.size(), 2u);
  EXPECT_EQ(entryOps[xi], c0);
  EXPECT_EQ(entryOps[yi], c10);
  SmallVector<Value> latchOps = operandsOf(latchBr);
  ASSERT_EQ(latchOps.size(), 2u);
  EXPECT_EQ(latchOps[xi], xInner);
  EXPECT_EQ(latchOps[yi], y2);
  EXPECT_EQ(llvm::to_vector(outerBr.getTrueDestOperands()),
            SmallVector<Value>{xOuter});
  EXPECT_TRUE(outerBr.getFalseDestOperands().empty());
  EXPECT_TRUE(innerBr.getTrueDestOperands().empty());
  EXPECT_TRUE(innerBr.getFalseDestOperands().empty());
  EXPECT_EQ(operandsOf(ibodyBr), SmallVector<Value>{t});

  // Uses: the inner add reads the inner x and the outer y.
  EXPECT_EQ(t.getDefiningOp()->getOperand(0), xInner);
  EXPECT_EQ(t.getDefiningOp()->getOperand(1), yOuter);
  EXPECT_EQ(use.getDefiningOp()->getOperand(0), xOuter);
  EXPECT_EQ(use.getDefiningOp()->getOperand(1), yOuter);
  for (Block *blk : {ibody, latch, exit})
    EXPECT_EQ(blk->getNumArguments(), 0u);
  EXPECT_TRUE(verifies());
}

// finalize() seals the blocks left unsealed and completes their phis.
TEST_F(SSABuilderTest, FinalizeSealsRemainingBlocks) {
  SSABuilder::Var x = ssa.addVariable(i32);
  ssa.sealBlock(entry);
  Value c0 = constant(entry, 0), c1 = constant(entry, 1);
  ssa.writeVariable(x, entry, c0);
  Block *header = newBlock(), *exit = newBlock();
  cf::BranchOp entryBr = br(entry, header);
  Value phi = ssa.readVariable(x, header);
  Value inc = add(header, phi, c1);
  ssa.writeVariable(x, header, inc);
  cf::CondBranchOp loopBr = condBr(header, header, exit);
  ssa.sealBlock(exit);
  EXPECT_EQ(ssa.readVariable(x, exit), inc);
  ret(exit);
  EXPECT_FALSE(ssa.isSealed(header));
  ssa.finalize(func.getBody());

  ASSERT_EQ(header->getNumArguments(), 1u);
  EXPECT_EQ(header->getArgument(0), phi);
  EXPECT_EQ(operandsOf(entryBr), SmallVector<Value>{c0});
  EXPECT_EQ(llvm::to_vector(loopBr.getTrueDestOperands()),
            SmallVector<Value>{inc});
  EXPECT_TRUE(loopBr.getFalseDestOperands().empty());
  EXPECT_TRUE(verifies());
}

// A long chain of single-predecessor blocks (as predicated code produces)
// is walked without deep recursion.
TEST_F(SSABuilderTest, LongSinglePredecessorChain) {
  SSABuilder::Var x = ssa.addVariable(i32);
  ssa.sealBlock(entry);
  Value c3 = constant(entry, 3);
  ssa.writeVariable(x, entry, c3);
  Block *prev = entry;
  for (int i = 0; i < 50000; ++i) {
    Block *blk = newBlock();
    br(prev, blk);
    ssa.sealBlock(blk);
    prev = blk;
  }
  EXPECT_EQ(ssa.readVariable(x, prev), c3);
  ret(prev);
  ssa.finalize(func.getBody());
  EXPECT_EQ(prev->getNumArguments(), 0u);
  EXPECT_TRUE(verifies());
}

// Several variables of different types in one diamond: one argument per
// variable that differs, typed like the variable.
TEST_F(SSABuilderTest, PhisHaveVariableTypes) {
  SSABuilder::Var x = ssa.addVariable(i32);
  SSABuilder::Var p = ssa.addVariable(i1);
  SSABuilder::Var z = ssa.addVariable(i32);
  ssa.sealBlock(entry);
  Value c0 = constant(entry, 0), c1 = constant(entry, 1);
  b.setInsertionPointToEnd(entry);
  Value t = arith::ConstantOp::create(b, loc, i1, b.getBoolAttr(true));
  ssa.writeVariable(x, entry, c0);
  ssa.writeVariable(p, entry, cond);
  ssa.writeVariable(z, entry, c0);
  Block *thenB = newBlock(), *join = newBlock();
  condBr(entry, thenB, join);
  ssa.sealBlock(thenB);
  ssa.writeVariable(x, thenB, c1);
  ssa.writeVariable(p, thenB, t);
  br(thenB, join);
  ssa.sealBlock(join);
  Value xj = ssa.readVariable(x, join);
  Value pj = ssa.readVariable(p, join);
  Value zj = ssa.readVariable(z, join);
  ret(join);
  ssa.finalize(func.getBody());

  ASSERT_EQ(join->getNumArguments(), 2u);
  EXPECT_EQ(argsOf(join), (SmallVector<Value>{xj, pj}));
  EXPECT_EQ(xj.getType(), i32);
  EXPECT_EQ(pj.getType(), i1);
  EXPECT_EQ(zj, c0);
  auto entryBr = cast<cf::CondBranchOp>(entry->getTerminator());
  EXPECT_EQ(llvm::to_vector(entryBr.getFalseDestOperands()),
            (SmallVector<Value>{c0, cond}));
  EXPECT_EQ(operandsOf(cast<cf::BranchOp>(thenB->getTerminator())),
            (SmallVector<Value>{c1, t}));
  EXPECT_TRUE(verifies());
}

#ifdef LLVM_ON_UNIX
// An unreachable block that is its own single predecessor (code after `ret`
// such as `$L: @%p bra $L;`), followed by a block that reads a variable:
// the read must terminate (with undef or a phi) and the function verify.
// It runs in a child process with a 4 GiB address-space limit, because an
// endless walk around the cycle exhausts memory.
TEST_F(SSABuilderTest, UnreachableSelfLoopTerminates) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto buildAndExit = [&] {
    struct rlimit limit = {4ull << 30, 4ull << 30};
    setrlimit(RLIMIT_AS, &limit);
    SSABuilder::Var x = ssa.addVariable(i32);
    ssa.sealBlock(entry);
    ret(entry);
    Block *loop = newBlock(), *next = newBlock();
    condBr(loop, loop, next);
    ssa.sealBlock(loop);
    ssa.sealBlock(next);
    Value v = ssa.readVariable(x, next);
    add(next, v, v);
    ret(next);
    ssa.finalize(func.getBody());
    std::_Exit(v && verifies() ? 0 : 1);
  };
  EXPECT_EXIT(buildAndExit(), ::testing::ExitedWithCode(0), "");
}
#endif

} // namespace
