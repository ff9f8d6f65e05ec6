//===- LowerIterationBarrier.cpp - Iteration barriers as ops -*- C++ -*-===//
//
// wooly-lower-iteration-barrier (see Passes.td): rewrites
// `wooly.iteration_barrier` into ordinary Wooly ops that every target
// runs, so that a constrained or sliced kernel runs on a GPU exactly as the
// CPU backend runs the same rewritten IR.
//
// The meaning to keep: a thread that finished its virtual block counts as
// EXITED for the barriers and warp collectives the other threads of its
// block still execute in that virtual block, and no thread starts the next
// virtual block before all have finished. The rewrite:
//
//  - Every block barrier `wooly.barrier 0` (all threads; sync) becomes a
//    non-aligned `wooly.bar_red popc 0, false`: a thread may arrive from
//    any instruction.
//  - `wooly.iteration_barrier` becomes a loop in which the finished thread
//    keeps arriving at barrier 0, reporting itself finished:
//
//      wait: %n = wooly.bar_red popc 0, true      (non-aligned)
//            %n == ntid.x * ntid.y * ntid.z ? continue : wait
//
//    Every instance of barrier 0 then has every thread of the block exactly
//    once - the unfinished at their own barriers, the finished in the loop
//    - so a finished thread releases the others' barriers as an exited one
//    would, and the phases cannot drift. The popc of the instance where all
//    are finished is the block's size, seen by all: they leave together.
//
// What cannot be expressed so, refused with a located error:
//  - barriers other than `barrier 0` for all threads (named barriers, thread
//    counts, arrive-only), and `bar.red` in the kernel (a finished thread
//    cannot contribute to a reduction whose operator it does not know);
//  - device functions (not inlined) that use barriers;
//  - a warp collective (shfl, vote, match, redux, bar.warp.sync,
//    ldmatrix, mma, wmma, or a call of a device function using one) that
//    some lanes of a warp may skip while others finish their virtual block
//    before it completes: the collective would wait for the finished lane,
//    which waits at barrier 0, where an exited lane would have been left
//    out. Found by a divergence analysis: a collective control-dependent on
//    a branch that may diverge within a warp, from which a lane can reach
//    the end of the virtual block without passing a block barrier, is
//    refused.
//
// The divergence analysis: kernel parameters, constants, block ids and
// sizes are uniform, `%tid.x` is divergent, and values computed from them
// follow (loads other than `.param`/`.const` of uniform addresses are
// divergent; vote and redux results are uniform). `%tid.x / 32k`,
// `%tid.x >> 5+`, `%tid.x & ~31`-style masks and comparisons of `%tid.x`
// with multiples of 32 are uniform within a warp - and so are `%tid.y`,
// `%tid.z` - when the block's rows are whole warps (`ntid.x % 32 == 0`, or
// a 1-D block). A kernel accepted under that assumption checks it at
// entry and traps otherwise (a launch failure, never a hang or a wrong
// result). Branches on divergent values make the blocks up to their
// immediate post-dominator divergently executed; block arguments there, and
// values leaving such a region, are divergent.
//
//===----------------------------------------------------------------------===//

#include "VirtualBlocks.h"

#include "Wooly/Dialect/Wooly/Analysis/Compare.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Dialect/Wooly/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::wooly {
#define GEN_PASS_DEF_WOOLYLOWERITERATIONBARRIER
#include "Wooly/Dialect/Wooly/Transforms/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;

namespace {

constexpr StringLiteral kUniformAttr = "wooly.uniform";

/// The divergence lattice of one value.
enum class Shape {
  Uniform,    // the same in every lane of a warp
  RowUniform, // the same in every lane if the block's rows are whole warps
  TidX,       // %tid.x itself (possibly widened)
  Divergent   // may differ between lanes
};

class Divergence {
public:
  explicit Divergence(FuncOp kernel) : kernel(kernel), postDom(kernel) {}

  /// Runs the analysis to a fixed point.
  void run() {
    bool changed = true;
    while (changed) {
      changed = false;
      for (Block &b : kernel.getBody())
        for (Operation &op : b)
          changed |= visit(&op);
      changed |= propagateControl();
    }
  }

  bool divergentlyExecuted(Block *b) const { return regions.contains(b); }
  bool usedRowAssumption() const { return rowAssumption; }
  /// The divergent branch whose region holds `b` (for messages).
  Operation *regionCause(Block *b) const { return causes.lookup(b); }

  Shape shape(Value v) const {
    auto it = shapes.find(v);
    return it == shapes.end() ? Shape::Uniform : it->second;
  }

private:
  bool set(Value v, Shape s) {
    Shape old = shape(v);
    if (s <= old)
      return false;
    // Uniform < RowUniform < TidX < Divergent.
    shapes[v] = s;
    return true;
  }

  static std::optional<uint64_t> constant(Value v) {
    APInt c;
    if (matchPattern(v, m_ConstantInt(&c)))
      return c.getZExtValue();
    return std::nullopt;
  }

  /// The shape of `op`'s results from its operands.
  bool visit(Operation *op) {
    if (op->getNumResults() == 0)
      return false;
    Shape s = transfer(op);
    bool changed = false;
    for (Value r : op->getResults())
      changed |= set(r, s);
    return changed;
  }

  Shape transfer(Operation *op) {
    if (auto sr = dyn_cast<SRegOp>(op)) {
      switch (sr.getReg()) {
      case SpecialReg::tid: {
        Dim d = sr.getDim() ? *sr.getDim() : Dim::x;
        return d == Dim::x ? Shape::TidX : Shape::RowUniform;
      }
      case SpecialReg::laneid:
      case SpecialReg::lanemask_eq:
      case SpecialReg::lanemask_le:
      case SpecialReg::lanemask_lt:
      case SpecialReg::lanemask_ge:
      case SpecialReg::lanemask_gt:
      case SpecialReg::clock:
      case SpecialReg::clock64:
      case SpecialReg::globaltimer:
      case SpecialReg::globaltimer_lo:
      case SpecialReg::globaltimer_hi:
        return Shape::Divergent;
      default:
        return Shape::Uniform; // block ids and sizes, warp ids, sizes
      }
    }
    // Results every lane of the block shares, by their meaning or by the
    // construction of the pass that made them (wooly-slice's virtual block
    // id, read by all threads after a barrier).
    if (isa<VoteOp, ReduxOp, BarRedOp>(op) || op->hasAttr(kUniformAttr))
      return Shape::Uniform;
    if (isa<ShflOp, MatchOp, ActiveMaskOp, AtomOp, CallOp, CallIndirectOp,
            LdMatrixOp, MmaOp, WmmaLoadOp, WmmaMmaOp>(op))
      return Shape::Divergent;
    if (auto ld = dyn_cast<LoadOp>(op)) {
      bool readOnly = ld.getSpace() == StateSpace::param ||
                      ld.getSpace() == StateSpace::constant;
      return readOnly && shape(ld.getAddr()) == Shape::Uniform
                 ? Shape::Uniform
                 : Shape::Divergent;
    }
    // The linear thread index tid.x + ntid.x * (tid.y + ntid.y * tid.z)
    // has the warp structure of tid.x under the row assumption: the offset
    // is a multiple of 32, or 0 in a 1-D block.
    if (auto add = dyn_cast<arith::AddIOp>(op))
      for (auto [a, b] : {std::pair(add.getLhs(), add.getRhs()),
                          std::pair(add.getRhs(), add.getLhs())})
        if (shape(a) == Shape::TidX && isRowOffset(b))
          return Shape::TidX;
    // Warp-aligned uses of %tid.x.
    if (op->getNumOperands() == 2) {
      Value a = op->getOperand(0), b = op->getOperand(1);
      if (shape(a) == Shape::TidX && shape(b) == Shape::Uniform) {
        std::optional<uint64_t> c = constant(b);
        if (c && warpAligned(op, *c))
          return Shape::RowUniform;
      }
      if (auto cmp = dyn_cast<arith::CmpIOp>(op);
          cmp && shape(b) == Shape::TidX && shape(a) == Shape::Uniform) {
        // c < tid.x etc.: the mirrored comparison, tid.x > c.
        std::optional<uint64_t> c = constant(a);
        if (c && alignedCompare(swappedPredicate(cmp.getPredicate()), *c))
          return Shape::RowUniform;
      }
    }
    if (isa<arith::ExtUIOp, arith::ExtSIOp, arith::TruncIOp, arith::IndexCastOp,
            CvtOp>(op) &&
        op->getNumOperands() == 1 && shape(op->getOperand(0)) == Shape::TidX &&
        op->getResult(0).getType().isInteger() &&
        op->getResult(0).getType().getIntOrFloatBitWidth() >= 10)
      return Shape::TidX; // %tid.x < 1024 survives the cast
    Shape s = Shape::Uniform;
    for (Value v : op->getOperands()) {
      Shape o = shape(v);
      if (o == Shape::TidX || o == Shape::Divergent)
        return Shape::Divergent;
      if (o == Shape::RowUniform)
        s = Shape::RowUniform;
    }
    return s;
  }

  static bool isSReg(Value v, SpecialReg reg, Dim dim) {
    auto s = v.getDefiningOp<SRegOp>();
    return s && s.getReg() == reg && (s.getDim() ? *s.getDim() : Dim::x) == dim;
  }

  /// A polynomial in %tid.y, %tid.z and block sizes whose every term has
  /// %tid.y or %tid.z: 0 in a 1-D block.
  static bool vanishesIn1D(Value v, unsigned depth = 0) {
    if (depth > 8)
      return false;
    if (isSReg(v, SpecialReg::tid, Dim::y) ||
        isSReg(v, SpecialReg::tid, Dim::z))
      return true;
    Operation *d = v.getDefiningOp();
    if (!d)
      return false;
    if (isa<arith::MulIOp>(d))
      return vanishesIn1D(d->getOperand(0), depth + 1) ||
             vanishesIn1D(d->getOperand(1), depth + 1);
    if (isa<arith::AddIOp>(d))
      return vanishesIn1D(d->getOperand(0), depth + 1) &&
             vanishesIn1D(d->getOperand(1), depth + 1);
    if (isa<arith::ExtUIOp, arith::ExtSIOp, arith::TruncIOp>(d))
      return vanishesIn1D(d->getOperand(0), depth + 1);
    return false;
  }

  /// `ntid.x * w` with `w` vanishing in a 1-D block: a multiple of 32 when
  /// ntid.x is, else 0.
  static bool isRowOffset(Value v) {
    auto mul = v.getDefiningOp<arith::MulIOp>();
    if (!mul)
      return false;
    Value a = mul.getLhs(), b = mul.getRhs();
    return (isSReg(a, SpecialReg::ntid, Dim::x) && vanishesIn1D(b)) ||
           (isSReg(b, SpecialReg::ntid, Dim::x) && vanishesIn1D(a));
  }

  /// `%tid.x <op> c` is the same in every lane of a whole-warp row.
  bool warpAligned(Operation *op, uint64_t c) {
    if (isa<arith::DivUIOp, arith::DivSIOp, DivOp>(op))
      return c && c % 32 == 0;
    if (isa<arith::ShRUIOp, arith::ShRSIOp, ShrOp>(op))
      return c >= 5;
    if (isa<arith::AndIOp>(op))
      return (c & 31) == 0;
    if (auto cmp = dyn_cast<arith::CmpIOp>(op))
      return alignedCompare(cmp.getPredicate(), c);
    return false;
  }

  /// `%tid.x pred c` splits lanes only at multiples of 32.
  static bool alignedCompare(arith::CmpIPredicate p, uint64_t c) {
    using P = arith::CmpIPredicate;
    switch (p) {
    case P::ult:
    case P::slt:
    case P::uge:
    case P::sge:
      return c % 32 == 0;
    case P::ule:
    case P::sle:
    case P::ugt:
    case P::sgt:
      return (c + 1) % 32 == 0;
    default:
      return false;
    }
  }

  /// Block arguments from branch operands, and the regions of divergent
  /// branches.
  bool propagateControl() {
    bool changed = false;
    for (Block &b : kernel.getBody()) {
      Operation *term = b.getTerminator();
      auto br = dyn_cast<BranchOpInterface>(term);
      if (!br)
        continue;
      for (unsigned i = 0; i < term->getNumSuccessors(); ++i) {
        Block *succ = term->getSuccessor(i);
        OperandRange ops = br.getSuccessorOperands(i).getForwardedOperands();
        for (auto [arg, v] : llvm::zip(succ->getArguments(), ops)) {
          Shape s = shape(v);
          if (s == Shape::RowUniform)
            changed |= set(arg, Shape::RowUniform);
          else if (s != Shape::Uniform)
            changed |= set(arg, Shape::Divergent);
        }
      }
      auto cond = dyn_cast<cf::CondBranchOp>(term);
      if (!cond || branchesDone.contains(term))
        continue;
      Shape c = shape(cond.getCondition());
      if (c == Shape::Uniform)
        continue;
      if (c == Shape::RowUniform) {
        // Uniform within a warp under the whole-warp-rows assumption,
        // which the rewritten kernel then checks.
        rowAssumption = true;
        continue;
      }
      branchesDone.insert(term);
      changed = true;
      markRegion(&b, term);
    }
    return changed;
  }

  /// The blocks between divergent branch `term` (in `from`) and its
  /// immediate post-dominator, up to the end of the virtual block.
  void markRegion(Block *from, Operation *term) {
    Block *join = nullptr;
    if (auto *node = postDom.getNode(from))
      if (auto *idom = node->getIDom())
        join = idom->getBlock();
    SmallVector<Block *> work(term->getSuccessors().begin(),
                              term->getSuccessors().end());
    DenseSet<Block *> region;
    while (!work.empty()) {
      Block *b = work.pop_back_val();
      if (b == join || !region.insert(b).second)
        continue;
      if (llvm::any_of(
              *b, [](Operation &op) { return isa<IterationBarrierOp>(op); }))
        continue; // the next virtual block starts: everyone is together
      for (Block *s : b->getSuccessors())
        work.push_back(s);
    }
    for (Block *b : region) {
      regions.insert(b);
      if (!causes.count(b))
        causes[b] = term;
      for (BlockArgument a : b->getArguments())
        set(a, Shape::Divergent);
    }
    if (join)
      for (BlockArgument a : join->getArguments())
        set(a, Shape::Divergent);
    // Values leaving the region: lanes leave a loop (the branch's block is
    // in its own region then) in different trips.
    for (Block *b : region)
      for (Operation &op : *b)
        for (Value r : op.getResults())
          for (Operation *user : r.getUsers())
            if (!region.contains(user->getBlock()))
              set(r, Shape::Divergent);
  }

  FuncOp kernel;
  PostDominanceInfo postDom;
  DenseMap<Value, Shape> shapes;
  DenseSet<Block *> regions;
  DenseMap<Block *, Operation *> causes;
  DenseSet<Operation *> branchesDone;
  bool rowAssumption = false;
};

/// Blocks from which a thread can reach the end of its virtual block (an
/// iteration barrier) without passing a block barrier.
DenseSet<Block *> canFinishUnguarded(FuncOp kernel) {
  DenseSet<Block *> out;
  bool changed = true;
  while (changed) {
    changed = false;
    for (Block &b : kernel.getBody()) {
      if (out.contains(&b))
        continue;
      bool reaches = false;
      for (Operation &op : b) {
        if (auto bar = dyn_cast<BarrierOp>(op); bar && !bar.getArrive())
          break; // guarded from here on
        if (isa<IterationBarrierOp>(op)) {
          reaches = true;
          break;
        }
        if (&op == b.getTerminator())
          reaches = llvm::any_of(b.getSuccessors(),
                                 [&](Block *s) { return out.contains(s); });
      }
      if (reaches) {
        out.insert(&b);
        changed = true;
      }
    }
  }
  return out;
}

LogicalResult checkAndLower(FuncOp kernel, vblocks::Summarizer &summaries) {
  SmallVector<IterationBarrierOp> iters;
  kernel.walk([&](IterationBarrierOp op) { iters.push_back(op); });
  if (iters.empty())
    return success();
  StringRef name = kernel.getSymName();
  const char *why = "cannot be lowered for a GPU (wooly-lower-iteration-"
                    "barrier): ";

  // Barriers: only barrier 0 for all threads; no bar.red.
  SmallVector<BarrierOp> barriers;
  SmallVector<Operation *> collectives;
  bool failed = false;
  kernel.walk([&](Operation *op) {
    if (auto b = dyn_cast<BarrierOp>(op)) {
      std::optional<int64_t> id;
      APInt idValue;
      if (matchPattern(b.getId(), m_ConstantInt(&idValue)))
        id = idValue.getSExtValue();
      if (b.getArrive() || b.getCount() || !id || *id != 0) {
        op->emitError() << "kernel '" << name << "' " << why
                        << "a named, counted or arrive-only barrier";
        failed = true;
      }
      barriers.push_back(b);
    } else if (isa<BarRedOp>(op)) {
      op->emitError() << "kernel '" << name << "' " << why
                      << "bar.red (a finished thread cannot take part in the "
                         "reduction)";
      failed = true;
    } else if (vblocks::isWarpCollective(op)) {
      collectives.push_back(op);
    } else if (auto c = dyn_cast<CallOp>(op)) {
      auto callee =
          SymbolTable::lookupNearestSymbolFrom<FuncOp>(op, c.getCalleeAttr());
      // An unknown callee may do anything.
      vblocks::Summary u;
      if (callee)
        u = summaries.get(callee);
      else
        u.barrier = true;
      if (u.barrier) {
        op->emitError() << "kernel '" << name << "' " << why
                        << "it calls a device function that uses barriers";
        failed = true;
      } else if (u.warpCollective) {
        collectives.push_back(op);
      }
    }
  });
  if (failed)
    return failure();

  // Warp collectives that a finished lane could hold up.
  bool rowAssumption = false;
  if (!collectives.empty()) {
    Divergence d(kernel);
    d.run();
    DenseSet<Block *> unguarded = canFinishUnguarded(kernel);
    for (Operation *op : collectives) {
      Block *b = op->getBlock();
      if (!d.divergentlyExecuted(b))
        continue;
      // Lanes that skipped it wait at a block barrier before they can
      // finish: it completes first.
      Operation *cause = d.regionCause(b);
      bool escapes = llvm::any_of(cause->getSuccessors(), [&](Block *s) {
        return unguarded.contains(s);
      });
      if (!escapes)
        continue;
      InFlightDiagnostic diag = op->emitError();
      diag << "kernel '" << name << "' " << why
           << "this warp collective depends on a branch that may diverge "
              "within a warp, and lanes that skip it may finish their "
              "virtual block first (an exited lane would be left out; a "
              "finished one is waited for)";
      diag.attachNote(cause->getLoc()) << "the diverging branch";
      failed = true;
    }
    rowAssumption = d.usedRowAssumption();
  }
  if (failed)
    return failure();

  // The rewrite.
  OpBuilder b(kernel.getContext());
  Location loc = kernel.getLoc();
  Type i32 = b.getI32Type();
  Block &entry = kernel.getBody().front();
  b.setInsertionPointToStart(&entry);
  auto ntid = [&](Dim d) {
    return SRegOp::create(b, loc, i32,
                          SpecialRegAttr::get(b.getContext(), SpecialReg::ntid),
                          DimAttr::get(b.getContext(), d))
        .getResult();
  };
  Value nx = ntid(Dim::x), ny = ntid(Dim::y), nz = ntid(Dim::z);
  Value yz = arith::MulIOp::create(b, loc, ny, nz);
  Value total = arith::MulIOp::create(b, loc, nx, yz);
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
  Value falseV = arith::ConstantIntOp::create(b, loc, 0, 1);
  Value trueV = arith::ConstantIntOp::create(b, loc, 1, 1);
  if (rowAssumption) {
    // The analysis took the block's rows to be whole warps.
    Value c31 = arith::ConstantIntOp::create(b, loc, 31, 32);
    Value one = arith::ConstantIntOp::create(b, loc, 1, 32);
    Value low = arith::AndIOp::create(b, loc, nx, c31);
    Value ragged =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, low, zero);
    Value multiRow =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, yz, one);
    Value bad = arith::AndIOp::create(b, loc, ragged, multiRow);
    Block *rest = entry.splitBlock(b.getInsertionPoint());
    Block *trap = new Block();
    kernel.getBody().getBlocks().insertAfter(Region::iterator(&entry), trap);
    b.setInsertionPointToEnd(&entry);
    cf::CondBranchOp::create(b, loc, bad, trap, ValueRange{}, rest,
                             ValueRange{});
    b.setInsertionPointToEnd(trap);
    TrapOp::create(b, loc);
  }

  for (BarrierOp bar : barriers) {
    b.setInsertionPoint(bar);
    BarRedOp::create(b, bar.getLoc(), i32, ReduxKind::popc, zero, Value(),
                     falseV, /*aligned=*/false);
    bar.erase();
  }
  for (IterationBarrierOp it : iters) {
    Block *before = it->getBlock();
    Block *after = before->splitBlock(it->getNextNode());
    Block *wait = new Block();
    kernel.getBody().getBlocks().insertAfter(Region::iterator(before), wait);
    b.setInsertionPoint(it);
    cf::BranchOp::create(b, it.getLoc(), wait);
    it.erase();
    b.setInsertionPointToEnd(wait);
    Value n = BarRedOp::create(b, loc, i32, ReduxKind::popc, zero, Value(),
                               trueV, /*aligned=*/false);
    Value all =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n, total);
    cf::CondBranchOp::create(b, loc, all, after, ValueRange{}, wait,
                             ValueRange{});
  }
  return success();
}

struct WoolyLowerIterationBarrierPass
    : wooly::impl::WoolyLowerIterationBarrierBase<
          WoolyLowerIterationBarrierPass> {
  using Base::Base;
  void runOnOperation() override {
    vblocks::Summarizer summaries;
    bool ok = true;
    SmallVector<FuncOp> kernels;
    for (auto f : getOperation().getOps<FuncOp>())
      if (f.getKernel() && !f.isDeclaration())
        kernels.push_back(f);
    for (FuncOp k : kernels)
      ok &= succeeded(checkAndLower(k, summaries));
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
