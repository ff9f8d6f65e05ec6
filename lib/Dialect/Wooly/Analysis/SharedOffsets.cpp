//===- SharedOffsets.cpp - Bounds of shared-memory offsets ----------------===//
//
// Two steps (SharedOffsets.h). First MLIR's IntegerRangeAnalysis, changed
// in three ways: the special registers and the shared variables' addresses
// have ranges, and a value that grows along a loop is widened to the full
// range only after it has grown kGrowthsBeforeWidening times, not at its
// first growth, so that a loop's toggles (`cur ^= 1`) keep theirs. Then, at
// each access, its address is evaluated again from those ranges, sharper
// where the branches that lead to it say more (AddressBounds), and its
// known low zero bits are counted (LowZeros). Every range
// is a superset of the values the thread can have there, so a bound below
// the static shared memory's size holds in every launch.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Dialect/Wooly/Analysis/SharedOffsets.h"
#include "Wooly/Dialect/Wooly/Analysis/Compare.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"

#include "mlir/Analysis/DataFlow/ConstantPropagationAnalysis.h"
#include "mlir/Analysis/DataFlow/DeadCodeAnalysis.h"
#include "mlir/Analysis/DataFlow/IntegerRangeAnalysis.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::wooly;
using dataflow::IntegerValueRangeLattice;

namespace {

/// A value may grow this many times before it is widened to its type's full
/// range (which bounds the analysis: every lattice changes finitely often).
constexpr unsigned kGrowthsBeforeWidening = 8;

/// The range of special register `reg` (dimension `dim`) in every launch
/// (CpuDevice's DeviceLimits, those of CUDA), if it has a useful one.
std::optional<std::pair<uint64_t, uint64_t>> specialRegisterRange(SRegOp op) {
  bool z = op.getDim() && *op.getDim() == Dim::z;
  switch (op.getReg()) {
  case SpecialReg::tid:
    return std::make_pair(0, z ? 63 : 1023);
  case SpecialReg::ntid:
    return std::make_pair(1, z ? 64 : 1024);
  case SpecialReg::laneid:
    return std::make_pair(0, 31);
  case SpecialReg::warpsize:
    return std::make_pair(32, 32);
  default:
    return std::nullopt;
  }
}

class OffsetRangeAnalysis : public dataflow::IntegerRangeAnalysis {
public:
  OffsetRangeAnalysis(DataFlowSolver &solver,
                      const llvm::StringMap<uint64_t> &offsets)
      : IntegerRangeAnalysis(solver), offsets(offsets) {}

  LogicalResult
  visitOperation(Operation *op,
                 ArrayRef<const IntegerValueRangeLattice *> operands,
                 ArrayRef<IntegerValueRangeLattice *> results) override {
    std::optional<std::pair<uint64_t, uint64_t>> fixed;
    if (auto sreg = dyn_cast<SRegOp>(op)) {
      fixed = specialRegisterRange(sreg);
    } else if (auto a = dyn_cast<AddressOfOp>(op)) {
      auto it = offsets.find(a.getGlobal());
      if (it != offsets.end())
        fixed = std::make_pair(it->second, it->second);
    }
    if (fixed) {
      unsigned width = op->getResult(0).getType().getIntOrFloatBitWidth();
      if (width < 64 && fixed->second >> width) {
        setAllToEntryStates(results);
        return success();
      }
      IntegerValueRangeLattice *lattice = results[0];
      propagateIfChanged(
          lattice,
          lattice->join(IntegerValueRange(ConstantIntRanges::fromUnsigned(
              APInt(width, fixed->first), APInt(width, fixed->second)))));
      return success();
    }
    auto inferrable = dyn_cast<InferIntRangeInterface>(op);
    if (!inferrable) {
      setAllToEntryStates(results);
      return success();
    }
    SmallVector<IntegerValueRange> args;
    for (const IntegerValueRangeLattice *l : operands)
      args.push_back(l->getValue());
    inferrable.inferResultRangesFromOptional(
        args, [&](Value v, const IntegerValueRange &range) {
          auto result = dyn_cast<OpResult>(v);
          if (!result || result.getOwner() != op)
            return;
          IntegerValueRangeLattice *lattice = results[result.getResultNumber()];
          bool wasSet = !lattice->getValue().isUninitialized();
          ChangeResult changed = lattice->join(range);
          // A value that keeps growing (a loop counter, a pointer bumped
          // each iteration) gets the full range.
          if (changed == ChangeResult::Change && wasSet &&
              ++growths[v] > kGrowthsBeforeWidening)
            changed |= lattice->join(IntegerValueRange::getMaxRange(v));
          propagateIfChanged(lattice, changed);
        });
    return success();
  }

private:
  const llvm::StringMap<uint64_t> &offsets;
  llvm::DenseMap<Value, unsigned> growths;
};

/// A comparison known to hold: `pred(lhs, rhs)`.
struct Fact {
  arith::CmpIPredicate pred;
  Value lhs, rhs;
};

/// The comparison that holds where control goes from `from`'s conditional
/// branch to `to` (only if `to` is one of its successors, not both).
std::optional<Fact> edgeFact(Block *from, Block *to) {
  auto br = dyn_cast_or_null<cf::CondBranchOp>(from->getTerminator());
  if (!br || br.getTrueDest() == br.getFalseDest())
    return std::nullopt;
  auto cmp = br.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!cmp)
    return std::nullopt;
  if (to == br.getTrueDest())
    return Fact{cmp.getPredicate(), cmp.getLhs(), cmp.getRhs()};
  if (to == br.getFalseDest())
    return Fact{arith::invertPredicate(cmp.getPredicate()), cmp.getLhs(),
                cmp.getRhs()};
  return std::nullopt;
}

/// Bounds of addresses at their accesses, sharper than the lattice's: the
/// comparisons of the branches that lead to the access (a dominating
/// block entered from one side of a conditional branch) bound the values
/// they compare, and `a - b` where `a >= b` holds; a block argument is
/// bounded by its incoming values on their edges, each refined by its
/// edge's comparison (`off` of `for (off = 1; off < n; off <<= 1)` stays
/// below `n` where the lattice widened it); and a value of at most
/// kSplitValues values may be fixed to each in turn (`cur ^ 1` with `cur`
/// in {0, 1} is in {1, 0}, where ranges alone give [0, 1] ^ 1 = [0, 1]
/// but `(cur << 12) ^ 4096` [0, 8191]).
class AddressBounds {
public:
  static constexpr unsigned kDepth = 8, kSplitValues = 4, kSplitCandidates = 3;

  AddressBounds(DataFlowSolver &solver, Operation *root)
      : solver(solver), dom(root) {}

  /// The largest value of `v` at `at` (in the block of `at`).
  std::optional<uint64_t> maxAt(Value v, Block *at) {
    if (!v.getType().isSignlessInteger())
      return std::nullopt;
    split = nullptr;
    memo.clear();
    candidates.clear();
    ConstantIntRanges r = eval(v, at, kDepth, false);
    SmallVector<std::pair<Value, ConstantIntRanges>> found(candidates.begin(),
                                                           candidates.end());
    for (auto &[c, cr] : found) {
      std::optional<ConstantIntRanges> joined;
      for (APInt k = cr.umin(); k.ule(cr.umax()); ++k) {
        split = c;
        splitValue = ConstantIntRanges::constant(k);
        memo.clear();
        ConstantIntRanges one = eval(v, at, kDepth, false);
        joined = joined ? joined->rangeUnion(one) : one;
        if (k.isMaxValue())
          break;
      }
      split = nullptr;
      memo.clear();
      r = r.intersection(*joined);
    }
    if (r.umax().getActiveBits() > 62)
      return std::nullopt;
    return r.umax().getZExtValue();
  }

private:
  ConstantIntRanges lattice(Value v) {
    unsigned width = v.getType().getIntOrFloatBitWidth();
    auto *l = solver.lookupState<IntegerValueRangeLattice>(v);
    if (!l || l->getValue().isUninitialized())
      return ConstantIntRanges::maxRange(width);
    return l->getValue().getValue();
  }

  /// `r` narrowed by `pred(r's value, other)`.
  ConstantIntRanges narrow(ConstantIntRanges r, arith::CmpIPredicate pred,
                           const ConstantIntRanges &other) {
    unsigned w = r.umin().getBitWidth();
    using P = arith::CmpIPredicate;
    APInt zero = APInt::getZero(w), umax = APInt::getMaxValue(w);
    APInt smin = APInt::getSignedMinValue(w),
          smax = APInt::getSignedMaxValue(w);
    switch (pred) {
    case P::eq:
      return r.intersection(other);
    case P::ult:
      if (other.umax().isZero())
        return r;
      return r.intersection(
          ConstantIntRanges::fromUnsigned(zero, other.umax() - 1));
    case P::ule:
      return r.intersection(
          ConstantIntRanges::fromUnsigned(zero, other.umax()));
    case P::ugt:
      if (other.umin().isMaxValue())
        return r;
      return r.intersection(
          ConstantIntRanges::fromUnsigned(other.umin() + 1, umax));
    case P::uge:
      return r.intersection(
          ConstantIntRanges::fromUnsigned(other.umin(), umax));
    case P::slt:
      if (other.smax().isMinSignedValue())
        return r;
      return r.intersection(
          ConstantIntRanges::fromSigned(smin, other.smax() - 1));
    case P::sle:
      return r.intersection(ConstantIntRanges::fromSigned(smin, other.smax()));
    case P::sgt:
      if (other.smin().isMaxSignedValue())
        return r;
      return r.intersection(
          ConstantIntRanges::fromSigned(other.smin() + 1, smax));
    case P::sge:
      return r.intersection(ConstantIntRanges::fromSigned(other.smin(), smax));
    case P::ne:
      return r;
    }
    return r;
  }

  /// `r` (of `v`) narrowed by `fact`, where it compares `v`.
  ConstantIntRanges narrowBy(ConstantIntRanges r, Value v, const Fact &f) {
    if (f.lhs == v && f.rhs != v)
      return narrow(r, f.pred, lattice(f.rhs));
    if (f.rhs == v && f.lhs != v)
      return narrow(r, swappedPredicate(f.pred), lattice(f.lhs));
    return r;
  }

  /// The facts that hold in `at`: of each block on its dominator tree path
  /// entered from one side of a conditional branch.
  ArrayRef<Fact> factsAt(Block *at) {
    auto [it, inserted] = factsOf.try_emplace(at);
    if (inserted)
      it->second = collectFacts(at);
    return it->second;
  }

  SmallVector<Fact> collectFacts(Block *at) {
    SmallVector<Fact> facts;
    Region *region = at->getParent();
    if (region->hasOneBlock())
      return facts; // No branches (and no dominator tree).
    for (DominanceInfoNode *n = dom.getNode(at); n; n = n->getIDom()) {
      Block *b = n->getBlock();
      if (!b || b->getParent() != region)
        break;
      if (Block *pred = b->getSinglePredecessor())
        if (std::optional<Fact> f = edgeFact(pred, b))
          facts.push_back(*f);
    }
    return facts;
  }

  /// The range of `v` at `at`, looking `depth` definitions back; `crossed`
  /// once that went back along a block argument's incoming edge (to an
  /// earlier instance of the values, which a split does not fix).
  ConstantIntRanges eval(Value v, Block *at, unsigned depth, bool crossed) {
    if (!crossed && v == split)
      return splitValue;
    auto key = std::make_tuple(v, at, depth, unsigned(crossed));
    if (auto it = memo.find(key); it != memo.end())
      return it->second;
    ConstantIntRanges r = evalUncached(v, at, depth, crossed);
    memo.try_emplace(key, r);
    return r;
  }

  ConstantIntRanges evalUncached(Value v, Block *at, unsigned depth,
                                 bool crossed) {
    ConstantIntRanges r = lattice(v);
    if (depth == 0 || !v.getType().isSignlessInteger())
      return r;
    ArrayRef<Fact> facts = factsAt(at);
    if (Operation *def = v.getDefiningOp()) {
      if (auto inferrable = dyn_cast<InferIntRangeInterface>(def);
          inferrable && def->getNumResults() == 1 &&
          llvm::all_of(def->getOperandTypes(),
                       [](Type t) { return t.isSignlessInteger(); })) {
        SmallVector<IntegerValueRange> args;
        for (Value o : def->getOperands())
          args.push_back(IntegerValueRange(eval(o, at, depth - 1, crossed)));
        std::optional<ConstantIntRanges> result;
        inferrable.inferResultRangesFromOptional(
            args, [&](Value, const IntegerValueRange &range) {
              if (!range.isUninitialized())
                result = range.getValue();
            });
        if (result)
          r = r.intersection(*result);
        // `a - b` where `a >= b`: in [0, max a - min b] if that fits.
        if (auto sub = dyn_cast<arith::SubIOp>(def))
          r = r.intersection(difference(sub, facts, at, depth, crossed));
      }
      consider(v, r, crossed);
    } else if (auto arg = dyn_cast<BlockArgument>(v)) {
      Block *b = arg.getOwner();
      if (!b->isEntryBlock()) {
        consider(v, r, crossed);
        std::optional<ConstantIntRanges> joined;
        for (auto it = b->pred_begin(); it != b->pred_end(); ++it) {
          Block *p = *it;
          auto br = dyn_cast<BranchOpInterface>(p->getTerminator());
          if (!br) {
            joined = std::nullopt;
            break;
          }
          SuccessorOperands ops =
              br.getSuccessorOperands(it.getSuccessorIndex());
          Value in = ops[arg.getArgNumber()];
          if (!in) {
            joined = std::nullopt;
            break;
          }
          ConstantIntRanges ri = eval(in, p, depth - 1, true);
          if (std::optional<Fact> f = edgeFact(p, b))
            ri = narrowBy(ri, in, *f);
          joined = joined ? joined->rangeUnion(ri) : ri;
        }
        if (joined)
          r = r.intersection(*joined);
      }
    }
    for (const Fact &f : facts)
      r = narrowBy(r, v, f);
    return r;
  }

  /// Keeps `v` (of range `r`) to be split on, if it has a few values.
  void consider(Value v, const ConstantIntRanges &r, bool crossed) {
    if (crossed || split || r.umin() == r.umax() ||
        (r.umax() - r.umin()).uge(kSplitValues) ||
        candidates.size() >= kSplitCandidates)
      return;
    candidates.insert({v, r});
  }

  ConstantIntRanges difference(arith::SubIOp sub, ArrayRef<Fact> facts,
                               Block *at, unsigned depth, bool crossed) {
    unsigned w = sub.getType().getIntOrFloatBitWidth();
    ConstantIntRanges any = ConstantIntRanges::maxRange(w);
    Value a = sub.getLhs(), b = sub.getRhs();
    using P = arith::CmpIPredicate;
    bool sge = false, uge = false;
    for (const Fact &f : facts) {
      P p = f.lhs == a && f.rhs == b   ? f.pred
            : f.lhs == b && f.rhs == a ? swappedPredicate(f.pred)
                                       : P::ne;
      sge |= p == P::sge || p == P::sgt;
      uge |= p == P::uge || p == P::ugt;
    }
    if (!sge && !uge)
      return any;
    ConstantIntRanges ra = eval(a, at, depth - 1, crossed),
                      rb = eval(b, at, depth - 1, crossed);
    ConstantIntRanges r = any;
    if (sge) {
      // No wrap where the largest difference fits.
      APInt hi = ra.smax().sext(w + 1) - rb.smin().sext(w + 1);
      if (hi.sle(APInt::getSignedMaxValue(w).sext(w + 1)))
        r = ConstantIntRanges::fromSigned(APInt::getZero(w), hi.trunc(w));
    }
    if (uge) // Never wraps: max a >= a >= b >= min b.
      r = r.intersection(ConstantIntRanges::fromUnsigned(
          APInt::getZero(w), ra.umax() - rb.umin()));
    return r;
  }

  DataFlowSolver &solver;
  DominanceInfo dom;
  /// A value fixed to each of its few values in turn (maxAt), and the
  /// first such values an evaluation met, with their ranges.
  Value split;
  llvm::MapVector<Value, ConstantIntRanges> candidates;
  /// Evaluations under the current split, and the facts of each block.
  llvm::DenseMap<std::tuple<Value, Block *, unsigned, unsigned>,
                 ConstantIntRanges>
      memo;
  llvm::DenseMap<Block *, SmallVector<Fact>> factsOf;
  ConstantIntRanges splitValue = ConstantIntRanges::maxRange(1);
};

/// How many low bits of integers are known to be zero: those of constants
/// and the variables' offsets, carried through shifts, multiplications,
/// additions, bitwise operations and extensions, and a block argument's
/// incoming values (none where the definitions form a cycle).
class LowZeros {
public:
  explicit LowZeros(const llvm::StringMap<uint64_t> &offsets)
      : offsets(offsets) {}

  unsigned of(Value v, unsigned depth = 12) {
    auto type = dyn_cast<IntegerType>(v.getType());
    if (!type || depth == 0)
      return 0;
    unsigned width = type.getWidth();
    auto [it, inserted] = known.try_emplace(v, 0);
    if (!inserted)
      return it->second; // Known, or in a cycle: 0 until known.
    unsigned z = std::min(compute(v, depth), width);
    known[v] = z;
    return z;
  }

private:
  unsigned compute(Value v, unsigned depth) {
    auto zerosOf = [](const APInt &c) { return c.countr_zero(); };
    APInt c;
    if (matchPattern(v, m_ConstantInt(&c)))
      return zerosOf(c);
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      Block *b = arg.getOwner();
      if (b->isEntryBlock())
        return 0;
      unsigned z = ~0u;
      for (auto it = b->pred_begin(); it != b->pred_end(); ++it) {
        auto br = dyn_cast<BranchOpInterface>((*it)->getTerminator());
        if (!br)
          return 0;
        Value in =
            br.getSuccessorOperands(it.getSuccessorIndex())[arg.getArgNumber()];
        if (!in)
          return 0;
        z = std::min(z, of(in, depth - 1));
      }
      return z == ~0u ? 0 : z;
    }
    Operation *def = v.getDefiningOp();
    if (auto a = dyn_cast_or_null<AddressOfOp>(def)) {
      auto it = offsets.find(a.getGlobal());
      return it == offsets.end() ? 0
                                 : llvm::countr_zero(it->second | (1ull << 63));
    }
    auto operand = [&](unsigned i) {
      return of(def->getOperand(i), depth - 1);
    };
    if (isa_and_nonnull<arith::AddIOp, arith::SubIOp, arith::OrIOp,
                        arith::XOrIOp>(def))
      return std::min(operand(0), operand(1));
    if (isa_and_nonnull<arith::AndIOp>(def))
      return std::max(operand(0), operand(1));
    if (isa_and_nonnull<arith::MulIOp>(def))
      return operand(0) + operand(1);
    if (isa_and_nonnull<arith::ExtUIOp, arith::ExtSIOp, arith::TruncIOp>(def))
      return operand(0);
    if (isa_and_nonnull<arith::ShLIOp>(def) &&
        matchPattern(def->getOperand(1), m_ConstantInt(&c)) &&
        c.ult(v.getType().getIntOrFloatBitWidth()))
      return operand(0) + unsigned(c.getZExtValue());
    if (auto select = dyn_cast_or_null<arith::SelectOp>(def))
      return std::min(of(select.getTrueValue(), depth - 1),
                      of(select.getFalseValue(), depth - 1));
    return 0;
  }

  const llvm::StringMap<uint64_t> &offsets;
  llvm::DenseMap<Value, unsigned> known;
};

/// The address operand of a shared-memory access, else null.
Value sharedAddress(Operation *op) {
  auto shared = [](StateSpace s) {
    return s == StateSpace::shared || s == StateSpace::shared_cluster;
  };
  if (auto ld = dyn_cast<LoadOp>(op))
    return shared(ld.getSpace()) ? ld.getAddr() : Value();
  if (auto st = dyn_cast<StoreOp>(op))
    return shared(st.getSpace()) ? st.getAddr() : Value();
  if (auto atom = dyn_cast<AtomOp>(op))
    return shared(atom.getSpace()) ? atom.getAddr() : Value();
  if (auto red = dyn_cast<RedOp>(op))
    return shared(red.getSpace()) ? red.getAddr() : Value();
  return Value();
}

} // namespace

void mlir::wooly::annotateSharedOffsetBounds(
    ModuleOp module, const llvm::StringMap<uint64_t> &offsets) {
  // Kernels' accesses only: a module compiled kernel by kernel links its
  // parts into one program, where a device function's first definition
  // serves the kernels of every part, whose static shared memory may be
  // smaller than that of the part it was compiled in.
  SmallVector<std::pair<Operation *, Value>> accesses;
  for (auto f : module.getOps<FuncOp>())
    if (f.getKernel())
      f.walk([&](Operation *op) {
        if (Value addr = sharedAddress(op))
          accesses.emplace_back(op, addr);
      });
  if (accesses.empty())
    return;
  // Each function on its own: a device function's arguments are unbounded.
  DataFlowSolver solver(DataFlowConfig().setInterprocedural(false));
  solver.load<dataflow::DeadCodeAnalysis>();
  solver.load<dataflow::SparseConstantPropagation>();
  solver.load<OffsetRangeAnalysis>(offsets);
  if (failed(solver.initializeAndRun(module)))
    return;
  Builder b(module.getContext());
  AddressBounds bounds(solver, module);
  LowZeros zeros(offsets);
  for (auto [op, addr] : accesses) {
    auto *lattice = solver.lookupState<IntegerValueRangeLattice>(addr);
    if (!lattice || lattice->getValue().isUninitialized())
      continue; // Unreachable.
    if (std::optional<uint64_t> max = bounds.maxAt(addr, op->getBlock()))
      op->setAttr(kMaxSharedOffsetAttr, b.getI64IntegerAttr(int64_t(*max)));
    if (unsigned z = zeros.of(addr))
      op->setAttr(kSharedOffsetZerosAttr, b.getI64IntegerAttr(z));
  }
}
