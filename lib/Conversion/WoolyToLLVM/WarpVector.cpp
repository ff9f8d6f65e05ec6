//===- WarpVector.cpp - A region's 32 lanes as vector code ----------------===//
//
// Part of the Wooly project.
//
//===----------------------------------------------------------------------===//
//
// See WarpVector.h. The lane function's blocks (an acyclic graph) are
// visited in reverse post-order and emitted as one run of vector code: each
// block under a mask of the lanes that reach it (branched around where no
// lane does), a branch as the masks of its two edges, a block argument as a
// select over its incoming edges. Each value is, for the 32 lanes, one of:
// the same for all (emitted once, as the scalar op), `base + lane * step`
// for a constant step (integers and addresses: kept as the scalar base, so
// that an access whose step is its size is one `<32 x T>` load or store at
// the base), or anything else (a `<32 x T>`).
//
// Why the result is the same as running the lanes one after another:
//
// - Arithmetic has no effect but its value; it is computed for every lane,
//   the mask only chooses which lanes' values count. Divisions take 1 as the
//   divisor of the lanes outside the mask (they may divide by zero there).
// - Frame accesses touch each lane's own slot only; masked stores leave the
//   other lanes' copies as they were.
// - The warp's context, the parameters and the access-site cache are not
//   written by kernel code (the cache only by the checks' reports, calls).
// - Other memory: a region stores there once on any way through it (a
//   store under a uniform condition and one under its negation never both
//   run), loads nothing after that store, and stores only after a run-time
//   check that no lane stores where a lane loaded before (else the loop):
//   so no lane can see another lane's store in an order the loop would not
//   have made. A store is a scatter, whose lanes take effect from the lowest
//   to the highest, or, to one address, the last lane's value.
// - A block that calls anything (the checks' reports) is not emitted: where
//   a lane would reach it, or where a run-time check fails, the code goes to
//   `fallback` instead, the loop over the lanes, which runs the region from
//   its start. So that running the region again changes nothing, nothing was
//   stored to memory before that point on the way there, and the frame slots
//   the region read and then overwrote are put back first (a slot read
//   after its store is read again after the loop's own store: each lane
//   takes the same way up to there).
// - A value kept across a cut that steers addresses or branches is used as
//   one value only after a check that all 32 lanes' copies are equal.
//
//===----------------------------------------------------------------------===//

#include "WarpVector.h"

#include "Wooly/Runtime/CPU/ABI.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <map>

using namespace mlir;
using mlir::wooly::warp_vector::UniformSlots;

namespace {

constexpr int64_t kLanes = 32;

/// Where a pointer points.
enum class Root {
  None,    // Not a pointer (or not known).
  Frame,   // The warp's frame: each lane's own slots.
  Context, // The warp's context or the parameters: never written by kernels.
  Memory,  // Anything else (shared memory through the context's base, ...).
  Global,  // An address made from an integer (global memory).
};

/// What a value of the lane function is across the lanes.
struct Lanes {
  enum Kind { Uniform, Affine, Varying } kind = Uniform;
  /// Uniform: the value; Affine: the base (lane 0's); Varying: `<32 x T>`.
  Value value;
  /// Affine: lane l's value is base + l * step (bytes for a pointer).
  int64_t step = 0;
  Root root = Root::None;
  /// Integers: how many low bits of the value (Uniform) or of the base
  /// (Affine) are known to be zero.
  unsigned zeros = 0;
  /// Varying integers, where known: the value is `high` (Uniform, its low
  /// `lowBits` bits zero) or-ed with a part below bit `lowBits` that
  /// differs between lanes (`(tid >> 3)` where `%tid.x`'s base is a
  /// multiple of 32).
  Value high;
  unsigned lowBits = 0;
};

/// Whether `t` is a scalar an LLVM vector can hold.
bool isScalar(Type t) {
  return isa<IntegerType, FloatType, LLVM::LLVMPointerType>(t);
}

/// The byte size of integer or float `t`, or 0.
int64_t byteSize(Type t) {
  if (!isa<IntegerType, FloatType>(t))
    return 0;
  unsigned bits = t.getIntOrFloatBitWidth();
  return bits % 8 ? 0 : int64_t(bits / 8);
}

/// Element-wise operations whose vector form computes, in each element, what
/// the scalar form computes, and that have no effect but their value.
bool isElementwise(Operation *op) {
  return isa<
      // Integer and floating-point arithmetic.
      LLVM::AddOp, LLVM::SubOp, LLVM::MulOp, LLVM::UDivOp, LLVM::SDivOp,
      LLVM::URemOp, LLVM::SRemOp, LLVM::AndOp, LLVM::OrOp, LLVM::XOrOp,
      LLVM::ShlOp, LLVM::LShrOp, LLVM::AShrOp, LLVM::FAddOp, LLVM::FSubOp,
      LLVM::FMulOp, LLVM::FDivOp, LLVM::FRemOp, LLVM::FNegOp,
      // Comparisons, selection and conversions.
      LLVM::ICmpOp, LLVM::FCmpOp, LLVM::SelectOp, LLVM::ZExtOp, LLVM::SExtOp,
      LLVM::TruncOp, LLVM::FPExtOp, LLVM::FPTruncOp, LLVM::SIToFPOp,
      LLVM::UIToFPOp, LLVM::FPToSIOp, LLVM::FPToUIOp, LLVM::BitcastOp,
      LLVM::IntToPtrOp, LLVM::PtrToIntOp,
      // Intrinsics computed exactly (no library call).
      LLVM::FMAOp, LLVM::FMulAddOp, LLVM::FAbsOp, LLVM::SMaxOp, LLVM::SMinOp,
      LLVM::UMaxOp, LLVM::UMinOp, LLVM::AbsOp, LLVM::CountLeadingZerosOp,
      LLVM::CountTrailingZerosOp, LLVM::CtPopOp, LLVM::BitReverseOp,
      LLVM::ByteSwapOp, LLVM::FshlOp, LLVM::FshrOp, LLVM::MinNumOp,
      LLVM::MaxNumOp, LLVM::MinimumOp, LLVM::MaximumOp, LLVM::SqrtOp,
      LLVM::CopySignOp, LLVM::FFloorOp, LLVM::FCeilOp, LLVM::FTruncOp,
      LLVM::RintOp, LLVM::NearbyintOp, LLVM::RoundEvenOp, LLVM::RoundOp>(op);
}

bool isDivision(Operation *op) {
  return isa<LLVM::UDivOp, LLVM::SDivOp, LLVM::URemOp, LLVM::SRemOp>(op);
}

class Emitter {
public:
  Emitter(OpBuilder &b, Location loc, Region &into, Block *fallback,
          Value params, Value frame, Value warpCtx, uint32_t region,
          const UniformSlots &uniform)
      : b(b), loc(loc), into(into), fallback(fallback), params(params),
        frame(frame), warpCtx(warpCtx), region(region), uniform(uniform) {}

  DenseMap<Value, Lanes> lanes;
  /// The blocks made, the first the entry.
  SmallVector<Block *> made;
  /// Where the lanes leave the region: the lanes (null: all) and the region
  /// that follows.
  SmallVector<std::pair<Value, uint32_t>> exits;

  /// Emits `lanesFn`'s body from `entry`; false where it cannot.
  bool emit(Block *entry) {
    SmallVector<Block *> order;
    if (!reversePostOrder(entry, order))
      return false;
    for (auto [i, block] : llvm::enumerate(order))
      position[block] = unsigned(i);
    dominance = std::make_unique<DominanceInfo>(entry->getParentOp());
    newBlock();
    startUniformBits();
    // The lane function's arguments but the lane's context: the
    // parameters, the region, the lane, the frame and the warp's context.
    Value r = LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                       b.getI32IntegerAttr(int32_t(region)));
    Value lane0 = LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                           b.getI64IntegerAttr(0));
    set(entry->getArgument(1), {Lanes::Uniform, params, 0, Root::Context});
    set(entry->getArgument(2), {Lanes::Uniform, r, 0, Root::None});
    set(entry->getArgument(3), {Lanes::Affine, lane0, 1, Root::None, 64});
    set(entry->getArgument(4), {Lanes::Uniform, frame, 0, Root::Frame});
    set(entry->getArgument(5), {Lanes::Uniform, warpCtx, 0, Root::Context});
    for (Block *block : order) {
      auto in = incoming.find(block);
      if (block != entry && in == incoming.end())
        continue; // No lane gets here.
      if (!enter(block, block == entry ? nullptr : &in->second))
        return false;
      // A block that calls something (a check's report): the loop runs
      // the region instead where a lane would get here.
      if (calls(block)) {
        if (!mask || !canRestart())
          return false;
        Block *next = newBlockDetached();
        LLVM::CondBrOp::create(b, loc, any(mask), restart(), next);
        attach(next);
        continue;
      }
      // A block that only one side of uniform branches leads to (a loop's
      // test of a uniform counter, `if (blockDim.x < 2)`): its code runs
      // under those branches, on the lanes before them (often all), so its
      // accesses need no masks and its checks know their lanes.
      Value guard, codeMask = mask;
      for (;;) {
        auto o = codeMask ? origins.find(codeMask) : origins.end();
        if (o == origins.end())
          break;
        const Lanes *c = get(o->second.cond);
        if (!c || c->kind != Lanes::Uniform)
          break;
        Value holds = c->value;
        if (!o->second.side)
          holds = LLVM::XOrOp::create(
              b, loc, holds,
              LLVM::ConstantOp::create(b, loc, b.getI1Type(),
                                       b.getBoolAttr(true)));
        guard =
            guard ? Value(LLVM::AndOp::create(b, loc, guard, holds)) : holds;
        codeMask = o->second.parent;
      }
      if (!guard && (!mask || !worthSkipping(block))) {
        if (!body(block))
          return false;
        continue;
      }
      // Skipped where no lane gets here: what the rest uses of the block
      // (its values, its edges' masks) passes through the join, poison
      // (no lanes) on the way around.
      Block *pre = b.getInsertionBlock();
      Value some = guard ? guard : any(mask);
      Block *code = newBlockDetached();
      attach(code);
      size_t rangesBefore = loadRanges.size();
      size_t oldBefore = frameOldOrder.size();
      size_t exitsBefore = exits.size();
      DenseMap<Value, Value> vectorsBefore = vectors;
      DenseMap<Value, FrameStore> storesBefore = frameStores;
      unsigned clearedBefore = frameStoresCleared;
      Value trueMask = mask;
      mask = codeMask;
      if (!body(block))
        return false;
      Block *codeEnd = b.getInsertionBlock();
      // Where the code ran on the lanes before the uniform branches, its
      // edges and exits on all of them have a mask to pass (all lanes).
      Value all;
      auto concrete = [&](Value &m) {
        if (!m)
          m = all ? all : (all = allTrue());
      };
      for (Block *succ : block->getSuccessors())
        for (Edge &e : incoming[succ])
          if (e.from == block)
            concrete(e.mask);
      for (size_t i = exitsBefore; i < exits.size(); ++i)
        concrete(exits[i].first);
      // The values used after the block (by other blocks, or passed to
      // them).
      SmallVector<Value> escaping;
      for (Operation &op : block->without_terminator())
        for (Value v : op.getResults())
          if (llvm::any_of(v.getUsers(), [&](Operation *user) {
                return user->getBlock() != block ||
                       user == block->getTerminator();
              }))
            escaping.push_back(v);
      SmallVector<Value *> masks;
      for (size_t i = rangesBefore; i < loadRanges.size(); ++i) {
        masks.push_back(&loadRanges[i].first);
        masks.push_back(&loadRanges[i].second);
      }
      for (Block *succ : block->getSuccessors())
        for (Edge &e : incoming[succ])
          if (e.from == block && e.mask)
            masks.push_back(&e.mask);
      for (size_t i = exitsBefore; i < exits.size(); ++i)
        masks.push_back(&exits[i].first);
      // What the rest reads of them: each one's value, and the uniform
      // part above the bits where its lanes differ (Lanes::high), which
      // the rest may use alone (`(tid >> 3) & ~3`).
      SmallVector<Value *> passed;
      for (Value v : escaping) {
        Lanes &l = lanes[v];
        passed.push_back(&l.value);
        if (l.high)
          passed.push_back(&l.high);
      }
      Block *join = newBlockDetached();
      SmallVector<Value> through, around;
      b.setInsertionPointToEnd(pre);
      for (Value *v : passed) {
        through.push_back(*v);
        around.push_back(LLVM::PoisonOp::create(b, loc, v->getType()));
      }
      for (auto [i, m] : llvm::enumerate(masks)) {
        through.push_back(*m);
        // No lanes; an empty range (from the highest address to 0).
        if (i < 2 * (loadRanges.size() - rangesBefore))
          around.push_back(LLVM::ConstantOp::create(
              b, loc, b.getI64Type(), b.getI64IntegerAttr(i % 2 ? 0 : -1)));
        else
          around.push_back(constantVector(
              b.getI1Type(), SmallVector<Attribute>(1, b.getBoolAttr(false))));
      }
      LLVM::CondBrOp::create(b, loc, some, code, ValueRange{}, join, around);
      b.setInsertionPointToEnd(codeEnd);
      LLVM::BrOp::create(b, loc, through, join);
      attach(join);
      for (Value v : through)
        join->addArgument(v.getType(), loc);
      for (auto [i, v] : llvm::enumerate(passed))
        *v = join->getArgument(i);
      for (auto [i, m] : llvm::enumerate(masks)) {
        Value through = join->getArgument(passed.size() + i);
        // The code's own lanes (its mask as it ran) are the block's lanes
        // after the join; another mask keeps what it is.
        if (guard && (*m == codeMask || *m == all)) {
          *m = trueMask;
          continue;
        }
        if (auto o = origins.find(*m); o != origins.end())
          origins[through] = o->second;
        *m = through;
      }
      // What was made in the skipped code is not there around it; what
      // was made before is, where the code did not store over it.
      vectors = std::move(vectorsBefore);
      llvm::DenseMap<Value, FrameStore> kept;
      if (frameStoresCleared == clearedBefore)
        for (auto &[at, before] : storesBefore) {
          auto now = frameStores.find(at);
          if (now != frameStores.end() && now->second.vector == before.vector)
            kept.try_emplace(at, before);
        }
      frameStores = std::move(kept);
      for (size_t i = oldBefore; i < frameOldOrder.size(); ++i)
        frameOld[frameOldOrder[i]].valid = false;
    }
    return !exits.empty();
  }

  /// Emits the operations and the terminator of lane-function block
  /// `block`, under `mask`.
  bool body(Block *block) {
    for (Operation &op : block->without_terminator())
      if (!visit(&op))
        return false;
    return leave(block->getTerminator());
  }

  static bool calls(Block *block) {
    return llvm::any_of(*block, [](Operation &op) {
      return isa<LLVM::CallOp, LLVM::InvokeOp>(op);
    });
  }

  /// Whether `block` has enough to do that a branch around it pays where
  /// no lane gets there: an access to memory, or a few operations.
  static bool worthSkipping(Block *block) {
    unsigned ops = 0;
    for (Operation &op : block->without_terminator()) {
      if (isa<LLVM::LoadOp, LLVM::StoreOp>(op))
        return true;
      if (!isa<LLVM::ConstantOp, LLVM::GEPOp>(op))
        ++ops;
    }
    return ops >= 4;
  }

  /// `m` (a mask) has a lane / all lanes.
  Value any(Value m) { return compareBits(m, LLVM::ICmpPredicate::ne, 0); }
  Value all(Value m) { return compareBits(m, LLVM::ICmpPredicate::eq, -1); }

  Value constantVector(Type element, ArrayRef<Attribute> values) {
    auto vt = VectorType::get({kLanes}, element);
    return LLVM::ConstantOp::create(b, loc, vt,
                                    DenseElementsAttr::get(vt, values));
  }

  /// Selects, lane by lane, `value` where `m` and `rest` elsewhere (both
  /// `<32 x T>`; m null: all lanes).
  Value select(Value m, Value value, Value rest) {
    if (!m)
      return value;
    return LLVM::SelectOp::create(b, loc, m, value, rest);
  }

private:
  OpBuilder &b;
  Location loc;
  Region &into;
  Block *fallback;
  Value params, frame, warpCtx;
  uint32_t region;

  /// The frame's word of uniform slots (UniformSlots): what it says as the
  /// code goes, in a variable of the warp function (LLVM keeps it in a
  /// register), and its address. Null where the kernel has none.
  const UniformSlots &uniform;
  Value bitsVar, bitsAddr;
  void startUniformBits() {
    if (!uniform.bitsAt || uniform.slots.empty())
      return;
    Type i64 = b.getI64Type();
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&into.front());
      bitsVar = LLVM::AllocaOp::create(
          b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64,
          LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1)), 8);
    }
    bitsAddr = LLVM::GEPOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), b.getI8Type(),
        frame, ArrayRef<LLVM::GEPArg>{int64_t(*uniform.bitsAt)});
    // The first region has no slots to read, and the word may be another
    // kernel's (the frames are the worker's): it starts empty.
    Value bits = region == 0
                     ? Value(intConstant(i64, 0))
                     : Value(LLVM::LoadOp::create(b, loc, i64, bitsAddr));
    LLVM::StoreOp::create(b, loc, bits, bitsVar);
  }
  /// The bit of the uniform slot at `base` (an address in the frame), if
  /// it is one.
  std::optional<unsigned> uniformBit(Value base) {
    if (!bitsVar)
      return std::nullopt;
    std::optional<int64_t> at = frameOffset(base);
    if (!at)
      return std::nullopt;
    auto it = llvm::find(uniform.slots, *at);
    if (it == uniform.slots.end())
      return std::nullopt;
    return unsigned(it - uniform.slots.begin());
  }
  /// After a store to the frame at `base`: its bit says whether all 32
  /// copies are now the same (`same`); a store the code cannot place may
  /// have written any slot.
  void storedFrame(Value base, bool same) {
    if (!bitsVar)
      return;
    Type i64 = b.getI64Type();
    std::optional<int64_t> at = frameOffset(base);
    Value bits;
    if (!at) {
      bits = intConstant(i64, 0);
    } else if (std::optional<unsigned> bit = uniformBit(base)) {
      Value old = LLVM::LoadOp::create(b, loc, i64, bitsVar);
      uint64_t one = uint64_t(1) << *bit;
      bits = same ? Value(LLVM::OrOp::create(b, loc, old,
                                             intConstant(i64, int64_t(one))))
                  : Value(LLVM::AndOp::create(b, loc, old,
                                              intConstant(i64, int64_t(~one))));
    } else {
      return;
    }
    LLVM::StoreOp::create(b, loc, bits, bitsVar);
  }

public:
  /// Where the code leaves the region (to the next region or to the
  /// lanes' own): the word goes back to the frame.
  void saveUniformBits() {
    if (bitsVar)
      LLVM::StoreOp::create(
          b, loc, LLVM::LoadOp::create(b, loc, b.getI64Type(), bitsVar),
          bitsAddr);
  }

private:
  /// The lanes the current block's code runs on (null: all); and the
  /// block's lanes, which differ where the code runs under uniform
  /// branches (emit).
  Value mask, blockMask;
  /// Whether a store was emitted (then the loop cannot start over), and
  /// whether one to memory outside the frame was, or a load from there.
  bool stored = false, storedMemory = false, loadedMemory = false;
  /// Uniform branch conditions (of the lane function) that hold, with the
  /// side taken, for every lane that gets to the current block; and those
  /// of each store to memory so far. A store under `c` and code under `!c`
  /// never both run: what one side stored does not keep the other from
  /// going back to the loop.
  using Guards = SmallVector<std::pair<Value, bool>>;
  Guards guards;
  SmallVector<Guards> memoryStores;
  static bool exclusive(const Guards &a, const Guards &b) {
    return llvm::any_of(a, [&](const std::pair<Value, bool> &g) {
      return llvm::is_contained(b, std::make_pair(g.first, !g.second));
    });
  }
  /// Whether a store to memory may have run before the current block.
  bool storedMemoryHere() {
    return llvm::any_of(memoryStores,
                        [&](const Guards &g) { return !exclusive(g, guards); });
  }
  /// The bytes each load from memory (outside the frame and the context)
  /// read, over the lanes: [first, end) as i64 addresses (an empty range
  /// where the load's block was skipped).
  SmallVector<std::pair<Value, Value>> loadRanges;
  SmallVector<Guards> loadGuards;
  /// The frame slots (byte offsets in the frame) loaded from and stored to
  /// so far; and whether an access to an unknown one was.
  llvm::DenseSet<int64_t> frameLoaded, frameStored;
  bool frameLoadedUnknown = false, frameStoredUnknown = false;

  /// The offset from `from` (the frame, the warp's context) of `base` (an
  /// address the vector code computed), if it is a constant.
  std::optional<int64_t> frameOffset(Value base) { return offset(base, frame); }
  std::optional<int64_t> offset(Value base, Value from) {
    int64_t offset = 0;
    while (base != from) {
      auto gep = base.getDefiningOp<LLVM::GEPOp>();
      if (!gep || !gep.getElemType().isInteger(8) ||
          gep.getRawConstantIndices().size() != 1)
        return std::nullopt;
      if (gep.getDynamicIndices().empty()) {
        offset += gep.getRawConstantIndices()[0];
      } else {
        std::optional<int64_t> index = fold(gep.getDynamicIndices()[0]);
        if (!index)
          return std::nullopt;
        offset += *index;
      }
      base = gep.getBase();
    }
    return offset;
  }
  /// The value of integer `v` (made of constants, adds, multiplies and
  /// shifts), if the code knows it.
  static std::optional<int64_t> fold(Value v) {
    if (std::optional<int64_t> c = constantInt(v))
      return c;
    Operation *op = v.getDefiningOp();
    if (!op || op->getNumOperands() != 2 ||
        !isa<LLVM::AddOp, LLVM::MulOp, LLVM::ShlOp>(op))
      return std::nullopt;
    std::optional<int64_t> x = fold(op->getOperand(0)),
                           y = fold(op->getOperand(1));
    if (!x || !y)
      return std::nullopt;
    if (isa<LLVM::AddOp>(op))
      return *x + *y;
    if (isa<LLVM::MulOp>(op))
      return *x * *y;
    if (*y < 0 || *y > 62)
      return std::nullopt;
    return int64_t(uint64_t(*x) << *y);
  }
  void frameAccess(Value base, bool store) {
    // Loads count where they come before any store to the slot: after it
    // they read what the vector code stored for the lanes that stored,
    // which the loop stores again first (each lane taking the same way up
    // to there, since what it read before is the same).
    std::optional<int64_t> at = frameOffset(base);
    if (!at)
      (store ? frameStoredUnknown : frameLoadedUnknown) = true;
    else if (store)
      frameStored.insert(*at);
    else if (!frameStored.contains(*at))
      frameLoaded.insert(*at);
  }

  /// Whether the loop over the lanes can run the region from its start
  /// after what the vector code did so far: nothing stored outside the
  /// frame, and no frame slot stored that the region read before (the
  /// loop would read the new value; one read after the store is read again
  /// after the loop's own store).
  bool canRestart() {
    if (storedMemoryHere())
      return false;
    if ((frameStoredUnknown && (frameLoadedUnknown || !frameLoaded.empty())) ||
        (frameLoadedUnknown && !frameStored.empty()))
      return false;
    // A slot read and then stored: the loop finds its old value where the
    // vector code kept it (and puts it back first).
    return llvm::all_of(frameStored, [&](int64_t at) {
      auto old = frameOld.find(at);
      return !frameLoaded.contains(at) ||
             (old != frameOld.end() && old->second.valid);
    });
  }
  /// Each frame slot's 32 values as the region found them (its first load,
  /// before any store to it), while that load's value is available.
  struct Old {
    Value base, value;
    bool valid = true;
  };
  DenseMap<int64_t, Old> frameOld;
  SmallVector<int64_t> frameOldOrder;
  void rememberOld(Value base, Value loaded) {
    std::optional<int64_t> at = frameOffset(base);
    if (!at || frameStored.contains(*at) || frameOld.count(*at))
      return;
    frameOld[*at] = {base, loaded, true};
    frameOldOrder.push_back(*at);
  }
  /// A block that puts back the slots the vector code stored over and goes
  /// to the loop over the lanes (canRestart).
  Block *restart() {
    OpBuilder::InsertionGuard guard(b);
    Block *block = newBlockDetached();
    attach(block);
    for (int64_t at : frameOldOrder)
      if (frameStored.contains(at) && frameLoaded.contains(at))
        LLVM::StoreOp::create(b, loc, frameOld[at].value, frameOld[at].base,
                              /*alignment=*/4);
    LLVM::BrOp::create(b, loc, ValueRange{}, fallback);
    return block;
  }
  /// Varying forms made of Uniform and Affine values.
  DenseMap<Value, Value> vectors;
  /// The last store to each frame address (of the lane function): the
  /// value (`<32 x T>`), the block of the lane function it is in, and the
  /// stored value's form where it is the same for all lanes.
  struct FrameStore {
    Value vector;
    Block *block;
    std::optional<Lanes> uniform;
  };
  DenseMap<Value, FrameStore> frameStores;
  /// How often frameStores was emptied (a store to memory the frame may
  /// be part of).
  unsigned frameStoresCleared = 0;
  std::unique_ptr<DominanceInfo> dominance;
  /// Per block of the lane function, its incoming edges: the lanes that
  /// take them and the values they pass.
  struct Edge {
    Value mask;
    SmallVector<Value> operands;
    Block *from = nullptr;
    Guards guards;
  };
  DenseMap<Block *, SmallVector<Edge>> incoming;
  /// How masks of lanes were made by branches: lanes `parent` (null: all)
  /// where the lane function's condition `cond` is `side`.
  struct Origin {
    Value parent, cond;
    bool side;
  };
  DenseMap<Value, Origin> origins;
  /// Each block's place in the order the code is emitted in.
  DenseMap<Block *, unsigned> position;

  /// The lanes in any of `masks` (null: all). Where two are the two sides
  /// of one branch, their union is the lanes at that branch (a join after
  /// an if-else), known without computing it: the code after the join
  /// then runs on the masks before it (on all lanes, where it did), which
  /// LLVM can see (a store of all lanes can be forwarded to a load, a
  /// masked one cannot).
  Value joinMasks(SmallVector<Value> masks) {
    for (bool merged = true; merged;) {
      merged = false;
      for (size_t i = 0; i < masks.size() && !merged; ++i) {
        auto oi = masks[i] ? origins.find(masks[i]) : origins.end();
        if (oi == origins.end())
          continue;
        for (size_t j = i + 1; j < masks.size(); ++j) {
          auto oj = masks[j] ? origins.find(masks[j]) : origins.end();
          if (oj == origins.end() || oj->second.parent != oi->second.parent ||
              oj->second.cond != oi->second.cond ||
              oj->second.side == oi->second.side)
            continue;
          masks[i] = oi->second.parent;
          masks.erase(masks.begin() + j);
          merged = true;
          break;
        }
      }
    }
    Value m = masks[0];
    for (Value n : llvm::drop_begin(masks))
      m = either(m, n);
    return m;
  }

  bool reversePostOrder(Block *entry, SmallVectorImpl<Block *> &order) {
    // Iterative depth-first search; a successor on the stack is a cycle.
    llvm::SmallPtrSet<Block *, 16> done, onStack;
    SmallVector<std::pair<Block *, unsigned>> stack{{entry, 0}};
    onStack.insert(entry);
    while (!stack.empty()) {
      auto &[block, next] = stack.back();
      if (next < block->getNumSuccessors()) {
        Block *succ = block->getSuccessor(next++);
        if (onStack.contains(succ))
          return false;
        if (!done.contains(succ)) {
          onStack.insert(succ);
          stack.push_back({succ, 0});
        }
        continue;
      }
      done.insert(block);
      onStack.erase(block);
      order.push_back(block);
      stack.pop_back();
    }
    std::reverse(order.begin(), order.end());
    return true;
  }

  Block *newBlockDetached() {
    Block *block = new Block();
    made.push_back(block);
    return block;
  }
  void attach(Block *block) {
    into.push_back(block);
    b.setInsertionPointToEnd(block);
  }
  void newBlock() { attach(newBlockDetached()); }

  Value compareBits(Value m, LLVM::ICmpPredicate p, int64_t bits) {
    Type i32 = b.getI32Type();
    Value word = LLVM::BitcastOp::create(b, loc, i32, m);
    return LLVM::ICmpOp::create(
        b, loc, p, word,
        LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(bits)));
  }

  /// Scalar `v` in all 32 lanes.
  Value broadcast(Value v) {
    auto vt = VectorType::get({kLanes}, v.getType());
    Value poison = LLVM::PoisonOp::create(b, loc, vt);
    Value zero = LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                          b.getI32IntegerAttr(0));
    Value one = LLVM::InsertElementOp::create(b, loc, poison, v, zero);
    return LLVM::ShuffleVectorOp::create(b, loc, one, poison,
                                         SmallVector<int32_t>(kLanes, 0));
  }

  Value allTrue() {
    return constantVector(b.getI1Type(),
                          SmallVector<Attribute>(1, b.getBoolAttr(true)));
  }

  /// The element of `v` (`<32 x T>`) of the highest lane in `m` (which
  /// has one), without a trip through memory: halved (the upper half where
  /// it has a lane in `m`) down to one machine vector (512 bits), whose
  /// lanes are then reversed and compressed, so that it comes first.
  Value lastActive(Value v, Value m) {
    Type i32 = b.getI32Type();
    Type t = cast<VectorType>(v.getType()).getElementType();
    unsigned width =
        isa<LLVM::LLVMPointerType>(t) ? 64 : t.getIntOrFloatBitWidth();
    auto c32 = [&](int64_t x) {
      return Value(LLVM::ConstantOp::create(b, loc, i32,
                                            b.getI32IntegerAttr(int32_t(x))));
    };
    auto lanesOf = [&](int64_t from, int64_t n, bool reversed) {
      SmallVector<int32_t> order;
      for (int64_t i = 0; i < n; ++i)
        order.push_back(int32_t(reversed ? from + n - 1 - i : from + i));
      return order;
    };
    Value bits = LLVM::BitcastOp::create(b, loc, i32, m);
    int64_t lanes = kLanes;
    while (lanes > 1 && lanes * width > 512) {
      int64_t half = lanes / 2;
      Value hi = LLVM::ShuffleVectorOp::create(b, loc, v, v,
                                               lanesOf(half, half, false));
      Value lo =
          LLVM::ShuffleVectorOp::create(b, loc, v, v, lanesOf(0, half, false));
      Value hiBits = LLVM::LShrOp::create(b, loc, bits, c32(half));
      Value loBits =
          LLVM::AndOp::create(b, loc, bits, c32((int64_t(1) << half) - 1));
      Value upper =
          LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, hiBits, c32(0));
      v = LLVM::SelectOp::create(b, loc, upper, hi, lo);
      bits = LLVM::SelectOp::create(b, loc, upper, hiBits, loBits);
      lanes = half;
    }
    auto vt = VectorType::get({lanes}, t);
    Value reversed =
        LLVM::ShuffleVectorOp::create(b, loc, v, v, lanesOf(0, lanes, true));
    Value flipped = LLVM::LShrOp::create(
        b, loc, LLVM::BitReverseOp::create(b, loc, i32, bits), c32(32 - lanes));
    Value order = LLVM::BitcastOp::create(
        b, loc, VectorType::get({lanes}, b.getI1Type()),
        LLVM::TruncOp::create(b, loc, b.getIntegerType(unsigned(lanes)),
                              flipped));
    Value packed =
        LLVM::CallIntrinsicOp::create(
            b, loc, vt, b.getStringAttr("llvm.experimental.vector.compress"),
            ValueRange{reversed, order, LLVM::PoisonOp::create(b, loc, vt)})
            .getResult(0);
    return LLVM::ExtractElementOp::create(b, loc, packed, c32(0));
  }

  /// The lanes in both masks (null: all lanes).
  Value both(Value m, Value n) {
    if (!m)
      return n;
    if (!n)
      return m;
    return LLVM::AndOp::create(b, loc, m, n);
  }
  Value either(Value m, Value n) {
    if (!m || !n)
      return {};
    return LLVM::OrOp::create(b, loc, m, n);
  }

  const Lanes *get(Value v) {
    auto at = lanes.find(v);
    return at == lanes.end() ? nullptr : &at->second;
  }

  void set(Value v, Lanes l) { lanes[v] = l; }

  static std::optional<int64_t> constantInt(Value v) {
    auto c = v.getDefiningOp<LLVM::ConstantOp>();
    auto attr = c ? dyn_cast<IntegerAttr>(c.getValue()) : nullptr;
    if (!attr)
      return std::nullopt;
    return attr.getValue().getSExtValue();
  }

  /// `v` (a value of the lane function) as `<32 x T>`, or null.
  Value vector(Value v) {
    const Lanes *l = get(v);
    Type t = v.getType();
    if (!l || !isScalar(t))
      return {};
    if (l->kind == Lanes::Varying)
      return l->value;
    if (Value done = vectors.lookup(v))
      return done;
    auto vt = VectorType::get({kLanes}, t);
    Value splat;
    auto c = l->value.getDefiningOp<LLVM::ConstantOp>();
    if (c && isa<IntegerAttr, FloatAttr>(c.getValue())) {
      splat = LLVM::ConstantOp::create(
          b, loc, vt, DenseElementsAttr::get(vt, c.getValue()));
    } else {
      splat = broadcast(l->value);
    }
    Value result = splat;
    if (l->kind == Lanes::Affine) {
      unsigned width = isa<IntegerType>(t) ? t.getIntOrFloatBitWidth() : 64;
      SmallVector<APInt> steps;
      for (int64_t i = 0; i < kLanes; ++i)
        steps.push_back(APInt(width, uint64_t(i * l->step), /*isSigned=*/false,
                              /*implicitTrunc=*/true));
      auto it = VectorType::get({kLanes}, b.getIntegerType(width));
      Value offsets = LLVM::ConstantOp::create(
          b, loc, it, DenseElementsAttr::get(it, ArrayRef<APInt>(steps)));
      if (isa<IntegerType>(t))
        result = LLVM::AddOp::create(b, loc, splat, offsets);
      else
        result = LLVM::GEPOp::create(b, loc, vt, b.getI8Type(), splat,
                                     ValueRange{offsets});
    }
    vectors[v] = result;
    return result;
  }

  Value scalar(Operation *op, ValueRange operands) {
    IRMapping map;
    for (auto [from, to] : llvm::zip(op->getOperands(), operands))
      map.map(from, to);
    return b.clone(*op, map)->getResult(0);
  }

  /// Clones `op` with its operands mapped to their scalar (Uniform) forms.
  Value cloneScalar(Operation *op) {
    SmallVector<Value> operands;
    for (Value operand : op->getOperands())
      operands.push_back(get(operand)->value);
    return scalar(op, operands);
  }

  bool affine(Value result, Value base, int64_t step, Root root) {
    set(result, {Lanes::Affine, base, step, root});
    return true;
  }

  /// Starts lane-function block `block`: its mask and arguments.
  bool enter(Block *block, SmallVectorImpl<Edge> *edges) {
    if (!edges) {
      mask = blockMask = {};
      guards.clear();
      return true;
    }
    guards = (*edges)[0].guards;
    for (Edge &e : llvm::drop_begin(*edges))
      llvm::erase_if(guards, [&](const std::pair<Value, bool> &g) {
        return !llvm::is_contained(e.guards, g);
      });
    mask = blockMask =
        joinMasks(llvm::map_to_vector(*edges, [](Edge &e) { return e.mask; }));
    for (auto [i, arg] : llvm::enumerate(block->getArguments())) {
      Value first = (*edges)[0].operands[i];
      bool same = llvm::all_of(
          *edges, [&](const Edge &e) { return e.operands[i] == first; });
      if (same) {
        const Lanes *l = get(first);
        if (!l)
          return false;
        set(arg, Lanes(*l));
        continue;
      }
      // The value of the edge each lane came by (the edges' lanes are
      // disjoint).
      Value value;
      for (Edge &e : *edges) {
        Value v = vector(e.operands[i]);
        if (!v)
          return false;
        if (!e.mask) {
          value = v;
          break;
        }
        value = value ? select(e.mask, v, value) : v;
      }
      set(arg, {Lanes::Varying, value, 0, Root::None});
    }
    return true;
  }

  void edge(Block *from, Block *to, Value m, OperandRange operands,
            std::optional<std::pair<Value, bool>> taken = std::nullopt) {
    Guards g = guards;
    if (taken)
      g.push_back(*taken);
    incoming[to].push_back({m, llvm::to_vector(operands), from, g});
  }

  bool leave(Operation *term) {
    if (auto br = dyn_cast<LLVM::BrOp>(term)) {
      edge(term->getBlock(), br.getDest(), mask, br.getDestOperands());
      return true;
    }
    if (auto br = dyn_cast<LLVM::CondBrOp>(term)) {
      const Lanes *c = get(br.getCondition());
      if (!c)
        return false;
      Value cond = vector(br.getCondition());
      if (!cond)
        return false;
      Value no = LLVM::XOrOp::create(b, loc, cond, allTrue());
      bool uniform = c->kind == Lanes::Uniform;
      Value at = br.getCondition();
      Value yes = both(mask, cond), notYes = both(mask, no);
      origins[yes] = {blockMask, at, true};
      origins[notYes] = {blockMask, at, false};
      // A side that goes to a block that calls (a check's report), before
      // the other side in the order of the code: where a lane goes there,
      // the code goes back to the loop (emit) before the other side's
      // code, so where that runs, every lane took the other side.
      Block *t = br.getTrueDest(), *f = br.getFalseDest();
      if (calls(t) && !calls(f) && position.lookup(t) < position.lookup(f))
        notYes = mask;
      else if (calls(f) && !calls(t) && position.lookup(f) < position.lookup(t))
        yes = mask;
      edge(term->getBlock(), br.getTrueDest(), yes, br.getTrueDestOperands(),
           uniform ? std::optional(std::make_pair(at, true)) : std::nullopt);
      edge(term->getBlock(), br.getFalseDest(), notYes,
           br.getFalseDestOperands(),
           uniform ? std::optional(std::make_pair(at, false)) : std::nullopt);
      return true;
    }
    auto ret = dyn_cast<LLVM::ReturnOp>(term);
    if (!ret || ret.getNumOperands() != 1)
      return false;
    std::optional<int64_t> next = constantInt(ret.getOperand(0));
    if (!next)
      return false;
    exits.push_back({mask, uint32_t(*next)});
    return true;
  }

  /// The low bits known to be zero in the result of integer op `op` (its
  /// value, or the base of an Affine result), from its operands'.
  unsigned knownZeros(Operation *op) {
    if (op->getNumResults() != 1 ||
        !isa<IntegerType>(op->getResult(0).getType()))
      return 0;
    unsigned width = op->getResult(0).getType().getIntOrFloatBitWidth();
    auto zeros = [&](unsigned i) -> unsigned {
      Value v = op->getOperand(i);
      if (std::optional<int64_t> c = constantInt(v))
        return *c ? unsigned(llvm::countr_zero(uint64_t(*c))) : 64;
      const Lanes *l = get(v);
      return l ? l->zeros : 0;
    };
    unsigned n = 0;
    if (auto c = dyn_cast<LLVM::ConstantOp>(op)) {
      if (std::optional<int64_t> v = constantInt(c))
        n = *v ? unsigned(llvm::countr_zero(uint64_t(*v))) : 64;
    } else if (isa<LLVM::AndOp>(op)) {
      n = std::max(zeros(0), zeros(1));
    } else if (isa<LLVM::AddOp, LLVM::SubOp, LLVM::OrOp, LLVM::XOrOp>(op)) {
      n = std::min(zeros(0), zeros(1));
    } else if (isa<LLVM::MulOp>(op)) {
      n = zeros(0) + zeros(1);
    } else if (isa<LLVM::ShlOp>(op)) {
      if (std::optional<int64_t> c = constantInt(op->getOperand(1)))
        n = zeros(0) + unsigned(std::clamp<int64_t>(*c, 0, 64));
    } else if (isa<LLVM::TruncOp, LLVM::ZExtOp, LLVM::SExtOp>(op)) {
      n = zeros(0);
    }
    return std::min(n, width);
  }

  /// Whether integer `v` (of the lane function) goes, through a few
  /// integer operations, into an address or a branch's condition.
  static bool steersAccesses(Value v, unsigned depth = 6) {
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<LLVM::GEPOp, LLVM::IntToPtrOp, LLVM::CondBrOp, LLVM::SwitchOp>(
              user))
        return true;
      // Through a branch, the block argument it becomes (a loop's phi).
      if (auto br = dyn_cast<LLVM::BrOp>(user)) {
        if (depth &&
            steersAccesses(br.getDest()->getArgument(use.getOperandNumber()),
                           depth - 1))
          return true;
        continue;
      }
      if (depth && user->getNumResults() == 1 &&
          isa<IntegerType>(user->getResult(0).getType()) &&
          isa<LLVM::AddOp, LLVM::SubOp, LLVM::MulOp, LLVM::ShlOp, LLVM::LShrOp,
              LLVM::AShrOp, LLVM::AndOp, LLVM::OrOp, LLVM::XOrOp, LLVM::ZExtOp,
              LLVM::SExtOp, LLVM::TruncOp, LLVM::ICmpOp>(user) &&
          steersAccesses(user->getResult(0), depth - 1))
        return true;
    }
    return false;
  }

  /// The bytes an access of `size` bytes at address `addr` (a value of the
  /// lane function) touches over the lanes in `mask`: [first, end) as i64
  /// (the whole warp's for a base + lane * step address).
  std::pair<Value, Value> range(Value addr, int64_t size) {
    const Lanes *l = get(addr);
    Type i64 = b.getI64Type();
    auto c64 = [&](int64_t v) {
      return Value(
          LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v)));
    };
    if (l->kind != Lanes::Varying) {
      Value first = LLVM::PtrToIntOp::create(b, loc, i64, l->value);
      int64_t low = std::min<int64_t>(0, l->step * (kLanes - 1));
      int64_t high = std::max<int64_t>(0, l->step * (kLanes - 1)) + size;
      return {LLVM::AddOp::create(b, loc, first, c64(low)),
              LLVM::AddOp::create(b, loc, first, c64(high))};
    }
    auto vt = VectorType::get({kLanes}, i64);
    Value at = LLVM::PtrToIntOp::create(b, loc, vt, l->value);
    auto splat = [&](int64_t v) {
      return constantVector(i64,
                            SmallVector<Attribute>(1, b.getI64IntegerAttr(v)));
    };
    Value lo = select(mask, at, splat(-1)), hi = select(mask, at, splat(0));
    Value first = LLVM::vector_reduce_umin::create(b, loc, i64, lo);
    Value last = LLVM::vector_reduce_umax::create(b, loc, i64, hi);
    return {first, LLVM::AddOp::create(b, loc, last, c64(size))};
  }

  /// Goes on only where `ok` (an i1) holds; elsewhere to the loop, which
  /// is possible only before anything was stored.
  bool require(Value ok) {
    if (!canRestart())
      return false;
    Block *next = newBlockDetached();
    LLVM::CondBrOp::create(b, loc, ok, next, restart());
    attach(next);
    return true;
  }

  /// Whether `base + lane * step` for lanes 0-31 stays below bit `bits` of
  /// the base (no carry out of the low bits): the base's low bits are zero
  /// and 31 steps fit in them.
  static bool fitsLowBits(const Lanes &x, unsigned bits) {
    return x.step >= 0 && bits < 63 && x.zeros >= bits &&
           x.step * (kLanes - 1) < (int64_t(1) << bits);
  }

  /// Affine forms of integer arithmetic and addresses: true if `op` was
  /// one.
  bool visitAffine(Operation *op) {
    if (op->getNumResults() != 1 || op->getNumOperands() == 0)
      return false;
    Value r = op->getResult(0);
    auto operand = [&](unsigned i) { return get(op->getOperand(i)); };
    if (auto gep = dyn_cast<LLVM::GEPOp>(op)) {
      // Byte offsets: one index, into an i8 element.
      if (!gep.getElemType().isInteger(8) ||
          gep.getRawConstantIndices().size() != 1)
        return false;
      const Lanes *base = operand(0);
      if (base->kind == Lanes::Varying)
        return false;
      Root root = base->root;
      if (gep.getDynamicIndices().empty()) {
        if (base->kind != Lanes::Affine)
          return false;
        return affine(r, scalar(op, {base->value}), base->step, root);
      }
      Value index = gep.getDynamicIndices()[0];
      const Lanes *i = get(index);
      if (i->kind == Lanes::Varying || !index.getType().isInteger(64))
        return false;
      int64_t step = (base->kind == Lanes::Affine ? base->step : 0) +
                     (i->kind == Lanes::Affine ? i->step : 0);
      return affine(r, scalar(op, {base->value, i->value}), step, root);
    }
    if (auto cast = dyn_cast<LLVM::IntToPtrOp>(op)) {
      const Lanes *x = operand(0);
      return x->kind == Lanes::Affine && x->value.getType().isInteger(64) &&
             affine(r, scalar(op, {x->value}), x->step, Root::Global);
    }
    if (!isa<IntegerType>(r.getType()))
      return false;
    if (isa<LLVM::TruncOp>(op)) {
      const Lanes *x = operand(0);
      return x->kind == Lanes::Affine &&
             affine(r, scalar(op, {x->value}), x->step, Root::None);
    }
    if (isa<LLVM::ZExtOp, LLVM::SExtOp>(op)) {
      // Linear where the lanes' values do not wrap around: the base's low
      // bits are free for the steps, or checked at run time.
      Lanes x = *operand(0);
      if (x.kind != Lanes::Affine || x.step < 0)
        return false;
      unsigned width = x.value.getType().getIntOrFloatBitWidth();
      if (width > 32)
        return false;
      unsigned bits = 0;
      while (bits < width && x.step * (kLanes - 1) >= (int64_t(1) << bits))
        ++bits;
      // A `zext nneg` (the lowering's, of a shared offset it bounded below
      // 2^31: SharedOffsets.h) has every active lane's value below 2^31,
      // and 31 steps below 2^31 more cannot reach 2^32: no wrap to check.
      auto zext = dyn_cast<LLVM::ZExtOp>(op);
      bool nonNegative = zext && zext.getNonNeg() && width == 32 &&
                         x.step * (kLanes - 1) < (int64_t(1) << 31);
      if (!fitsLowBits(x, bits)) {
        // The last lane's value, base + 31 * step, must not wrap.
        bool isSigned = isa<LLVM::SExtOp>(op);
        uint64_t max = isSigned ? (uint64_t(1) << (width - 1)) - 1
                                : (uint64_t(1) << width) - 1;
        uint64_t limit = max - uint64_t(x.step) * (kLanes - 1);
        if (uint64_t(x.step) * (kLanes - 1) > max)
          return false;
        if (mask) {
          // Only the lanes in the mask count (those outside may wrap: the
          // lanes below `off` in `buf[tid - off]`): no wrap from the first
          // one's value to the last one's, and the wide form is based at
          // the first one's.
          ActiveLanes ends = activeLanes();
          Value first = laneValue(x, ends.first);
          if (!nonNegative) {
            Value ok = LLVM::OrOp::create(
                b, loc,
                LLVM::ICmpOp::create(b, loc,
                                     isSigned ? LLVM::ICmpPredicate::sge
                                              : LLVM::ICmpPredicate::uge,
                                     laneValue(x, ends.last), first),
                ends.none);
            if (!require(ok))
              return false;
          }
          // The first lane's value, extended without the flag: with no lane
          // in the mask, `first` is any lane's.
          Type wide = r.getType();
          Value firstWide = scalar(op, {first});
          if (nonNegative)
            firstWide.getDefiningOp<LLVM::ZExtOp>().setNonNeg(false);
          Value base = LLVM::SubOp::create(
              b, loc, firstWide,
              LLVM::MulOp::create(b, loc, laneAs(ends.first, wide),
                                  intConstant(wide, x.step)));
          return affine(r, base, x.step, Root::None);
        }
        if (nonNegative) // Lane 0 is active: its value is below 2^31.
          return affine(r, scalar(op, {x.value}), x.step, Root::None);
        Type t = x.value.getType();
        Value ok = LLVM::ICmpOp::create(
            b, loc,
            isSigned ? LLVM::ICmpPredicate::sle : LLVM::ICmpPredicate::ule,
            x.value, intConstant(t, int64_t(limit)));
        if (isSigned) // And the base itself not so low that lanes cross 0.
          ok = LLVM::AndOp::create(
              b, loc, ok,
              LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::sge, x.value,
                                   intConstant(t, 0)));
        if (!require(ok))
          return false;
      }
      return affine(r, scalar(op, {x.value}), x.step, Root::None);
    }
    if ((isa<LLVM::LShrOp, LLVM::AShrOp, LLVM::AndOp>(op)) &&
        op->getNumOperands() == 2) {
      // Shifts and masks that split a base whose low bits are zero from the
      // lanes' steps there.
      const Lanes *x = operand(0);
      Value other = op->getOperand(1);
      if (isa<LLVM::AndOp>(op) && x->kind == Lanes::Uniform) {
        x = operand(1);
        other = op->getOperand(0);
      }
      std::optional<int64_t> c = constantInt(other);
      if (!c)
        return false;
      // A mask that keeps none of the bits where the lanes differ.
      if (isa<LLVM::AndOp>(op) && x->kind == Lanes::Varying && x->high &&
          x->lowBits < 63 &&
          (uint64_t(*c) & ((uint64_t(1) << x->lowBits) - 1)) == 0) {
        Value v = x == operand(0) ? scalar(op, {x->high, get(other)->value})
                                  : scalar(op, {get(other)->value, x->high});
        set(r, {Lanes::Uniform, v, 0, Root::None, knownZeros(op)});
        return true;
      }
      if (x->kind != Lanes::Affine)
        return false;
      // The fewest low bits the 32 lanes' steps take.
      unsigned bits = 0;
      while (bits < 62 && x->step * (kLanes - 1) >= (int64_t(1) << bits))
        ++bits;
      if (!isa<LLVM::AndOp>(op)) {
        if (*c < 0 || *c >= 63)
          return false;
        Value high = scalar(op, {x->value, get(other)->value});
        if (fitsLowBits(*x, unsigned(*c))) {
          set(r, {Lanes::Uniform, high, 0, Root::None, 0});
          return true;
        }
        // The lanes differ below bit `bits - c` only.
        if (unsigned(*c) >= bits || !fitsLowBits(*x, bits))
          return false;
        IRMapping map;
        map.map(op->getOperand(0), vector(op->getOperand(0)));
        map.map(other, vector(other));
        Operation *v = b.clone(*op, map);
        v->getResult(0).setType(VectorType::get({kLanes}, r.getType()));
        Lanes l{Lanes::Varying, v->getResult(0), 0, Root::None, 0};
        l.high = high;
        l.lowBits = bits - unsigned(*c);
        set(r, l);
        return true;
      }
      // A mask of low bits that the steps do not change (an alignment
      // check of a contiguous access): the base's bits, for every lane.
      if (uint64_t(*c) + 1 != 0 && llvm::isPowerOf2_64(uint64_t(*c) + 1) &&
          x->step % int64_t(uint64_t(*c) + 1) == 0) {
        Value masked = x == operand(0)
                           ? scalar(op, {x->value, get(other)->value})
                           : scalar(op, {get(other)->value, x->value});
        set(r, {Lanes::Uniform, masked, 0, Root::None, knownZeros(op)});
        return true;
      }
      if (!fitsLowBits(*x, bits))
        return false;
      uint64_t low = (uint64_t(1) << bits) - 1;
      Value masked = x == operand(0)
                         ? scalar(op, {x->value, get(other)->value})
                         : scalar(op, {get(other)->value, x->value});
      if ((uint64_t(*c) & low) == low) {
        set(r, {Lanes::Affine, masked, x->step, Root::None, knownZeros(op)});
        return true;
      }
      if ((uint64_t(*c) & low) == 0) {
        set(r, {Lanes::Uniform, masked, 0, Root::None, knownZeros(op)});
        return true;
      }
      return false;
    }
    if (op->getNumOperands() != 2)
      return false;
    const Lanes *x = operand(0), *y = operand(1);
    if (x->kind == Lanes::Varying || y->kind == Lanes::Varying)
      return false;
    int64_t sx = x->kind == Lanes::Affine ? x->step : 0;
    int64_t sy = y->kind == Lanes::Affine ? y->step : 0;
    auto both = [&] { return scalar(op, {x->value, y->value}); };
    // An `or` of operands with no bit in common is their sum.
    auto disjoint = dyn_cast<LLVM::OrOp>(op);
    if (isa<LLVM::AddOp>(op) || (disjoint && disjoint.getIsDisjoint())) {
      Value sum = LLVM::AddOp::create(b, loc, x->value, y->value);
      return affine(r, sum, sx + sy, Root::None);
    }
    if (isa<LLVM::SubOp>(op))
      return affine(r, both(), sx - sy, Root::None);
    if (isa<LLVM::MulOp>(op)) {
      if (std::optional<int64_t> c = constantInt(y->value); c && !sy)
        return affine(r, both(), sx * *c, Root::None);
      if (std::optional<int64_t> c = constantInt(x->value); c && !sx)
        return affine(r, both(), sy * *c, Root::None);
      return false;
    }
    if (isa<LLVM::ShlOp>(op)) {
      std::optional<int64_t> c = constantInt(y->value);
      if (!c || sy || *c < 0 || *c > 32)
        return false;
      return affine(r, both(), int64_t(uint64_t(sx) << *c), Root::None);
    }
    return false;
  }

  IntegerAttr alignment(std::optional<uint64_t> a, Type t) {
    uint64_t bytes = a && *a ? *a : uint64_t(std::max<int64_t>(byteSize(t), 1));
    return b.getI32IntegerAttr(int32_t(bytes));
  }

  /// Prefetches the lines of the range `span` bytes from `first` that the
  /// next warps read, kPrefetchAhead warps on (the same progression
  /// further on): between a warp's contiguous load and the next warp's are
  /// long stretches of other work, too little for the hardware to see the
  /// stream (as WidenAccessChecks.cpp does for the loop over the lanes).
  void prefetchAhead(Value first, int64_t span) {
    constexpr int64_t kPrefetchAhead = 2, kPrefetchSpan = 512;
    if (span > kPrefetchSpan)
      return;
    for (int64_t at = 0; at < span; at += 64)
      LLVM::Prefetch::create(
          b, loc,
          LLVM::GEPOp::create(
              b, loc, first.getType(), b.getI8Type(), first,
              ArrayRef<LLVM::GEPArg>{int32_t(kPrefetchAhead * span + at)}),
          /*rw=*/0, /*hint=*/3, /*cache=*/1);
  }

  bool visitLoad(LLVM::LoadOp load) {
    if (load.getVolatile_() ||
        load.getOrdering() != LLVM::AtomicOrdering::not_atomic)
      return false;
    const Lanes *addr = get(load.getAddr());
    Type t = load.getType();
    auto vt = VectorType::get({kLanes}, t);
    if (!isScalar(t))
      return false;
    // Global memory: one load where the lanes' addresses are contiguous
    // (or the same), whose checks are then made once (visitCheckCompare);
    // other patterns the loop's widened checks and prefetches serve better
    // (WidenAccessChecks.cpp).
    if (addr->root == Root::Global && addr->kind != Lanes::Uniform &&
        !(addr->kind == Lanes::Affine && addr->step == byteSize(t)))
      return false;
    bool memory = addr->root != Root::Frame && addr->root != Root::Context;
    if (memory) {
      if (storedMemoryHere())
        return false;
      loadedMemory = true;
      if (byteSize(t) || isa<LLVM::LLVMPointerType>(t)) {
        loadRanges.push_back(
            range(load.getAddr(), std::max<int64_t>(byteSize(t), 8)));
        loadGuards.push_back(guards);
      } else {
        return false;
      }
    }
    IntegerAttr align = alignment(load.getAlignment(), t);
    // The same address for every lane: loaded once (if a lane loads,
    // where the address may not be valid for the others).
    if (addr->kind == Lanes::Uniform) {
      Root root = isa<LLVM::LLVMPointerType>(t) ? Root::Memory : Root::None;
      // The access-site cache of the bounds checks: written only by the
      // checks' reports (calls, which the vector code leaves to the loop).
      if (root == Root::Memory && addr->root == Root::Context &&
          offset(addr->value, warpCtx) ==
              int64_t(offsetof(WoolyThreadCtx, siteCache)))
        root = Root::Context;
      if (!memory || !mask) {
        set(load, {Lanes::Uniform, cloneScalar(load), 0, root});
        return true;
      }
      Block *one = newBlockDetached();
      Block *join = newBlockDetached();
      join->addArgument(t, loc);
      LLVM::CondBrOp::create(b, loc, any(mask), one, ValueRange{}, join,
                             ValueRange{LLVM::PoisonOp::create(b, loc, t)});
      attach(one);
      LLVM::BrOp::create(b, loc, ValueRange{cloneScalar(load)}, join);
      attach(join);
      set(load, {Lanes::Uniform, join->getArgument(0), 0, root});
      return true;
    }
    if (isa<LLVM::LLVMPointerType>(t))
      return false; // Pointers that differ between lanes: not followed.
    // The lanes' own copies of a frame slot, side by side (always there).
    int64_t size = byteSize(t);
    if (addr->kind == Lanes::Affine && size && addr->step == size) {
      // Just stored, by every lane that gets here: that value (LLVM would
      // load it again after a masked store).
      auto last = frameStores.find(load.getAddr());
      if (addr->root == Root::Frame && last != frameStores.end() &&
          last->second.vector.getType() == vt &&
          dominance->dominates(last->second.block, load->getBlock())) {
        if (last->second.uniform)
          set(load, *last->second.uniform);
        else
          set(load, {Lanes::Varying, last->second.vector, 0, Root::None});
        return true;
      }
      Value v;
      if (addr->root == Root::Frame)
        frameAccess(addr->value, /*store=*/false);
      // A value the lanes computed alike and kept across the cut (a loop
      // counter, an offset), which the region uses for addresses or
      // branches: checked to be the same in every lane, then used once.
      if (addr->root == Root::Frame && isa<IntegerType>(t) &&
          steersAccesses(load.getResult()) && canRestart()) {
        // Where the frame's word says that the 32 copies are the same, the
        // first lane's is the value (and no check is needed).
        Block *join = nullptr;
        if (std::optional<unsigned> bit = uniformBit(addr->value)) {
          Type i64 = b.getI64Type();
          Value bits = LLVM::LoadOp::create(b, loc, i64, bitsVar);
          Value isSet = LLVM::ICmpOp::create(
              b, loc, LLVM::ICmpPredicate::ne,
              LLVM::AndOp::create(b, loc, bits,
                                  intConstant(i64, int64_t(1) << *bit)),
              intConstant(i64, 0));
          Block *same = newBlockDetached(), *check = newBlockDetached();
          join = newBlockDetached();
          join->addArgument(t, loc);
          join->addArgument(vt, loc);
          LLVM::CondBrOp::create(b, loc, isSet, same, check);
          attach(same);
          auto one = cast<LLVM::LoadOp>(b.clone(*load));
          one.getAddrMutable().assign(addr->value);
          LLVM::BrOp::create(b, loc, ValueRange{one, broadcast(one)}, join);
          attach(check);
        }
        auto op = cast<LLVM::LoadOp>(b.clone(*load));
        op.getAddrMutable().assign(addr->value);
        op.getResult().setType(vt);
        if (!join)
          rememberOld(addr->value, op);
        // All 32 copies (those of lanes outside the mask too: cheaper,
        // and where the lanes computed it alike, they are alike).
        Value first = LLVM::ExtractElementOp::create(
            b, loc, op,
            LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                     b.getI32IntegerAttr(0)));
        Value same = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, op,
                                          broadcast(first));
        if (!require(all(same)))
          return false;
        if (join) {
          LLVM::BrOp::create(b, loc, ValueRange{first, op}, join);
          attach(join);
          first = join->getArgument(0);
          rememberOld(addr->value, join->getArgument(1));
        }
        set(load, {Lanes::Uniform, first, 0, Root::None});
        return true;
      }
      if (addr->root == Root::Global)
        prefetchAhead(addr->value, kLanes * size);
      if (!mask || addr->root == Root::Frame) {
        auto op = cast<LLVM::LoadOp>(b.clone(*load));
        op.getAddrMutable().assign(addr->value);
        op.getResult().setType(vt);
        v = op;
        if (addr->root == Root::Frame)
          rememberOld(addr->value, v);
      } else {
        v = LLVM::MaskedLoadOp::create(
            b, loc, vt, addr->value, mask,
            LLVM::PoisonOp::create(b, loc, vt).getResult(), align);
      }
      set(load, {Lanes::Varying, v, 0, Root::None});
      return true;
    }
    // Lanes that load where they like: a gather (not from global memory,
    // where the loop's widened checks serve better).
    if (addr->root == Root::Global || addr->root == Root::Frame)
      return false;
    Value ptrs = vector(load.getAddr());
    if (!ptrs)
      return false;
    Value v = LLVM::masked_gather::create(
        b, loc, vt, ptrs, mask ? mask : allTrue(),
        ValueRange{LLVM::PoisonOp::create(b, loc, vt)}, align);
    set(load, {Lanes::Varying, v, 0, Root::None});
    return true;
  }

  bool visitStore(LLVM::StoreOp store) {
    if (store.getVolatile_() ||
        store.getOrdering() != LLVM::AtomicOrdering::not_atomic)
      return false;
    const Lanes *addr = get(store.getAddr());
    Value value = store.getValue();
    Type t = value.getType();
    int64_t size = byteSize(t);
    if (!size)
      return false;
    IntegerAttr align = alignment(store.getAlignment(), t);
    stored = true;
    if (addr->root != Root::Frame) {
      if (addr->root == Root::Context || storedMemoryHere())
        return false;
      if (loadedMemory) {
        // The lanes loaded from memory before: the vector code (all loads,
        // then all stores) does what the lanes one after another do where
        // no lane stores where one loaded; else the loop runs the region.
        auto [first, end] = range(store.getAddr(), size);
        Value ok;
        for (auto [i, range] : llvm::enumerate(loadRanges)) {
          if (exclusive(loadGuards[i], guards))
            continue;
          auto [lo, hi] = range;
          Value apart = LLVM::OrOp::create(
              b, loc,
              LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ule, end, lo),
              LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ule, hi,
                                   first));
          ok = ok ? Value(LLVM::AndOp::create(b, loc, ok, apart)) : apart;
        }
        if (ok && !require(ok))
          return false;
      }
      storedMemory = true;
      memoryStores.push_back(guards);
    }
    Value v = vector(value);
    if (!v)
      return false;
    if (addr->kind == Lanes::Affine && addr->step == size) {
      if (addr->root == Root::Frame) {
        std::optional<Lanes> uniform;
        if (get(value)->kind == Lanes::Uniform)
          uniform = *get(value);
        frameStores[store.getAddr()] = {v, store->getBlock(), uniform};
        frameAccess(addr->value, /*store=*/true);
        storedFrame(addr->value, uniform && !mask);
      } else {
        frameStores.clear(); // Memory might be a frame slot's alias.
        ++frameStoresCleared;
      }
      if (!mask) {
        auto op = cast<LLVM::StoreOp>(b.clone(*store));
        op.getValueMutable().assign(v);
        op.getAddrMutable().assign(addr->value);
      } else {
        LLVM::MaskedStoreOp::create(b, loc, v, addr->value, mask, align);
      }
      return true;
    }
    if (addr->root == Root::Frame)
      return false;
    if (addr->kind == Lanes::Uniform) {
      // One address: what the last lane to store leaves there, stored if a
      // lane stores.
      Block *join = nullptr;
      Value lastValue;
      if (!mask) {
        lastValue = LLVM::ExtractElementOp::create(
            b, loc, v,
            LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                     b.getI32IntegerAttr(kLanes - 1)));
      } else {
        Block *one = newBlockDetached();
        join = newBlockDetached();
        LLVM::CondBrOp::create(b, loc, any(mask), one, join);
        attach(one);
        lastValue = lastActive(v, mask);
      }
      auto op = cast<LLVM::StoreOp>(b.clone(*store));
      op.getValueMutable().assign(lastValue);
      op.getAddrMutable().assign(addr->value);
      if (join) {
        LLVM::BrOp::create(b, loc, ValueRange{}, join);
        attach(join);
      }
      return true;
    }
    // One store of each active lane, from the lowest lane to the highest
    // (LLVM's scatter orders the lanes that way).
    Value ptrs = vector(store.getAddr());
    if (!ptrs)
      return false;
    LLVM::masked_scatter::create(b, loc, v, ptrs, mask ? mask : allTrue(),
                                 align);
    return true;
  }

  /// Whether i1 `v` (through `and`, `or` and `xor` of i1 values) is the
  /// condition of a branch to a block that calls something: a bounds
  /// check's report, which the lanes are expected not to take.
  static bool steersCheck(Value v, unsigned depth = 4) {
    for (Operation *user : v.getUsers()) {
      if (auto br = dyn_cast<LLVM::CondBrOp>(user)) {
        if (br.getCondition() != v)
          continue;
        for (Block *succ : br->getSuccessors())
          if (llvm::any_of(*succ,
                           [](Operation &op) { return isa<LLVM::CallOp>(op); }))
            return true;
        continue;
      }
      if (depth && isa<LLVM::AndOp, LLVM::OrOp, LLVM::XOrOp>(user) &&
          user->getResult(0).getType().isInteger(1) &&
          steersCheck(user->getResult(0), depth - 1))
        return true;
    }
    return false;
  }

  /// The value of i1 `v` that passes a bounds check, where every use of
  /// `v` is on the way to one branch to a block that calls something (the
  /// check's report) and the other value of `v` alone sends it there:
  /// through `and` (its false decides) up to a branch whose false side
  /// reports, or through `or` (its true decides) up to one whose true side
  /// does. Then `v` need not be each lane's value where the lanes disagree:
  /// where any lane fails, all taking the report is the same as that lane
  /// taking it, since the report goes to the loop over the lanes, which
  /// runs the region again. None where this is not so.
  static std::optional<bool> passingValue(Value v) {
    std::optional<bool> pass;
    auto agree = [&](bool p) {
      if (pass && *pass != p)
        return false;
      pass = p;
      return true;
    };
    SmallVector<Value> work{v};
    for (unsigned steps = 0; !work.empty(); ++steps) {
      Value x = work.pop_back_val();
      if (steps > 16 || x.use_empty())
        return std::nullopt;
      for (Operation *user : x.getUsers()) {
        if (auto br = dyn_cast<LLVM::CondBrOp>(user)) {
          bool onTrue = calls(br.getTrueDest()),
               onFalse = calls(br.getFalseDest());
          if (br.getCondition() != x || onTrue == onFalse ||
              !agree(/*pass=*/onFalse))
            return std::nullopt;
          continue;
        }
        bool isAnd = isa<LLVM::AndOp>(user), isOr = isa<LLVM::OrOp>(user);
        if ((!isAnd && !isOr) || !user->getResult(0).getType().isInteger(1) ||
            !agree(/*pass=*/isAnd))
          return std::nullopt;
        work.push_back(user->getResult(0));
      }
    }
    return pass;
  }

  Value intConstant(Type t, int64_t v) {
    return LLVM::ConstantOp::create(
        b, loc, t,
        b.getIntegerAttr(t, APInt(t.getIntOrFloatBitWidth(), uint64_t(v),
                                  /*isSigned=*/false, /*implicitTrunc=*/true)));
  }

  /// The first and the last lane in `mask` (i32; 32 and -1 where it is
  /// empty), and whether it is empty.
  struct ActiveLanes {
    Value first, last, none;
  };
  ActiveLanes activeLanes() {
    Type i32 = b.getI32Type();
    Value bits = LLVM::BitcastOp::create(b, loc, i32, mask);
    Value first = LLVM::CountTrailingZerosOp::create(b, loc, i32, bits, false);
    Value last = LLVM::SubOp::create(
        b, loc, intConstant(i32, kLanes - 1),
        LLVM::CountLeadingZerosOp::create(b, loc, i32, bits, false));
    Value none = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, bits,
                                      intConstant(i32, 0));
    return {first, last, none};
  }

  /// `lane` (an i32 in [0, 32)) as integer type `t`.
  Value laneAs(Value lane, Type t) {
    unsigned width = t.getIntOrFloatBitWidth();
    if (width > 32)
      return LLVM::ZExtOp::create(b, loc, t, lane);
    if (width < 32)
      return LLVM::TruncOp::create(b, loc, t, lane);
    return lane;
  }

  /// The value of Affine integer `x` in lane `lane` (an i32).
  Value laneValue(const Lanes &x, Value lane) {
    Type t = x.value.getType();
    return LLVM::AddOp::create(
        b, loc, x.value,
        LLVM::MulOp::create(b, loc, laneAs(lane, t), intConstant(t, x.step)));
  }

  /// An order comparison (not `eq` or `ne`) of integer `base + lane *
  /// step` with a value the same for all lanes, where it steers a bounds
  /// check (steersCheck). Where the 32 values do not wrap around in the
  /// comparison's order, they lie between the first lane's and the last
  /// lane's, so the lanes' results change at most once along the lanes:
  /// where the first and the last lane agree, all do. A run-time check
  /// requires both (else the loop runs the region, which reports a failing
  /// lane's access itself); the comparison is then made once. A check of a
  /// contiguous access costs a few scalar operations instead of a compare
  /// of 32 (often 64-bit) values. Null where this does not apply.
  std::optional<bool> visitCheckCompare(LLVM::ICmpOp cmp) {
    using P = LLVM::ICmpPredicate;
    P p = cmp.getPredicate();
    if (p == P::eq || p == P::ne || !isa<IntegerType>(cmp.getLhs().getType()))
      return std::nullopt;
    const Lanes *x = get(cmp.getLhs()), *y = get(cmp.getRhs());
    bool swapped = x->kind == Lanes::Uniform && y->kind == Lanes::Affine;
    if (swapped)
      std::swap(x, y);
    if (x->kind != Lanes::Affine || y->kind != Lanes::Uniform || !x->step ||
        !steersCheck(cmp.getResult()) || !canRestart())
      return std::nullopt;
    bool isSigned = p == P::slt || p == P::sle || p == P::sgt || p == P::sge;
    unsigned width = cmp.getLhs().getType().getIntOrFloatBitWidth();
    // The lanes' span must fit in the order's range for "no wrap" to be
    // the last lane's value lying beyond the first's.
    uint64_t magnitude = uint64_t(x->step < 0 ? -x->step : x->step);
    if (x->step == INT64_MIN || magnitude > (uint64_t(1) << 57) ||
        magnitude * (kLanes - 1) >=
            (uint64_t(1) << std::min(63u, width - unsigned(isSigned))))
      return std::nullopt;
    Type t = x->value.getType();
    // The first and the last lane in the mask (lanes outside it may be
    // anywhere: the lanes below `off` in `v += buf[tid - off]`).
    Value first = x->value, last, none;
    if (!mask) {
      last = LLVM::AddOp::create(b, loc, first,
                                 intConstant(t, x->step * (kLanes - 1)));
    } else {
      ActiveLanes ends = activeLanes();
      first = laneValue(*x, ends.first);
      last = laneValue(*x, ends.last);
      none = ends.none;
    }
    P beyond = x->step > 0 ? (isSigned ? P::sge : P::uge)
                           : (isSigned ? P::sle : P::ule);
    Value noWrap = LLVM::ICmpOp::create(b, loc, beyond, last, first);
    auto at = [&](Value lane) {
      return Value(swapped ? LLVM::ICmpOp::create(b, loc, p, y->value, lane)
                           : LLVM::ICmpOp::create(b, loc, p, lane, y->value));
    };
    if (std::optional<bool> pass = passingValue(cmp.getResult())) {
      // All lanes pass where the first and the last do and nothing wraps;
      // elsewhere the one value that reports (passingValue) stands for
      // the lanes: one branch, the check's own.
      auto passes = [&](Value holds) {
        return *pass ? holds
                     : Value(LLVM::XOrOp::create(
                           b, loc, holds, intConstant(b.getI1Type(), 1)));
      };
      Value all = LLVM::AndOp::create(
          b, loc, noWrap,
          LLVM::AndOp::create(b, loc, passes(at(first)), passes(at(last))));
      if (none)
        all = LLVM::OrOp::create(b, loc, all, none);
      set(cmp.getResult(), {Lanes::Uniform, passes(all), 0, Root::None});
      return true;
    }
    Value atFirst = at(first);
    Value agree =
        LLVM::ICmpOp::create(b, loc, P::eq, atFirst, at(last)).getResult();
    Value ok = LLVM::AndOp::create(b, loc, noWrap, agree);
    if (none) // No lane: nothing to check.
      ok = LLVM::OrOp::create(b, loc, ok, none);
    if (!require(ok))
      return std::nullopt;
    set(cmp.getResult(), {Lanes::Uniform, atFirst, 0, Root::None});
    return true;
  }

  bool visit(Operation *op) {
    if (op->getNumRegions() || op->getNumSuccessors())
      return false;
    bool uniform = true;
    Root root = Root::None;
    for (Value operand : op->getOperands()) {
      const Lanes *l = get(operand);
      if (!l)
        return false; // The lane's context, or a value of a block not seen.
      uniform &= l->kind == Lanes::Uniform;
      if (l->root != Root::None)
        root = l->root;
    }
    if (auto load = dyn_cast<LLVM::LoadOp>(op))
      return visitLoad(load);
    if (auto store = dyn_cast<LLVM::StoreOp>(op))
      return visitStore(store);
    if (!isMemoryEffectFree(op) || op->getNumResults() != 1)
      return false;
    Value r = op->getResult(0);
    if (isa<LLVM::IntToPtrOp>(op))
      root = Root::Global;
    if (!isa<LLVM::GEPOp, LLVM::IntToPtrOp>(op))
      root = Root::None;
    // A division outside the mask could divide by zero: as a vector, with 1
    // as those lanes' divisor.
    bool guarded = isDivision(op) && mask;
    if (uniform && !guarded) {
      set(r, {Lanes::Uniform, cloneScalar(op), 0, root, knownZeros(op)});
      return true;
    }
    if (auto cmp = dyn_cast<LLVM::ICmpOp>(op))
      if (std::optional<bool> done = visitCheckCompare(cmp))
        return *done;
    if (!guarded && visitAffine(op)) {
      Lanes &l = lanes[r];
      if (l.kind == Lanes::Affine && !l.zeros)
        l.zeros = knownZeros(op);
      return true;
    }
    if (auto gep = dyn_cast<LLVM::GEPOp>(op)) {
      // Pointers that differ between lanes: one GEP of vectors.
      if (!gep.getElemType().isInteger(8) ||
          gep.getRawConstantIndices().size() != 1)
        return false;
      Value base = get(gep.getBase())->kind == Lanes::Uniform
                       ? get(gep.getBase())->value
                       : vector(gep.getBase());
      Value index =
          gep.getDynamicIndices().empty()
              ? constantVector(
                    b.getI64Type(),
                    SmallVector<Attribute>(
                        1, b.getI64IntegerAttr(gep.getRawConstantIndices()[0])))
              : vector(gep.getDynamicIndices()[0]);
      if (!base || !index ||
          !index.getType().isInteger(64) &&
              !cast<VectorType>(index.getType()).getElementType().isInteger(64))
        return false;
      auto vt = VectorType::get({kLanes}, r.getType());
      Value v = LLVM::GEPOp::create(b, loc, vt, b.getI8Type(), base,
                                    ValueRange{index});
      set(r, {Lanes::Varying, v, 0, root});
      return true;
    }
    if (!isElementwise(op) || !isScalar(r.getType()))
      return false;
    IRMapping map;
    for (Value operand : op->getOperands()) {
      Value v = vector(operand);
      if (!v)
        return false;
      map.map(operand, v);
    }
    if (guarded) {
      Value divisor = map.lookup(op->getOperand(1));
      auto one = constantVector(
          op->getOperand(1).getType(),
          SmallVector<Attribute>(
              1, b.getIntegerAttr(op->getOperand(1).getType(), 1)));
      map.map(op->getOperand(1), select(mask, divisor, one));
    }
    Operation *v = b.clone(*op, map);
    v->getResult(0).setType(VectorType::get({kLanes}, r.getType()));
    set(r, {Lanes::Varying, v->getResult(0), 0, root});
    return true;
  }
};

} // namespace

Block *mlir::wooly::warp_vector::emitWarpVectorRegion(
    OpBuilder &b, Location loc, Region &into, LLVM::LLVMFuncOp lanesFn,
    Value params, Value frame, Value warpCtx, Value nexts, uint32_t region,
    Block *fallback, Block *mixed, const UniformSlots &uniform,
    llvm::function_ref<void(OpBuilder &, uint32_t)> onExit) {
  if (!lanesFn || lanesFn.getBody().empty())
    return nullptr;
  Block *entry = &lanesFn.getBody().front();
  if (entry->getNumArguments() != 6)
    return nullptr;
  OpBuilder::InsertionGuard guard(b);
  Emitter e(b, loc, into, fallback, params, frame, warpCtx, region, uniform);
  bool ok = e.emit(entry);
  if (!ok) {
    for (Block *block : e.made)
      for (Operation &op : *block)
        op.dropAllReferences();
    for (Block *block : e.made) {
      if (block->getParent())
        block->erase();
      else
        delete block;
    }
    return nullptr;
  }
  // Where the lanes go next: each lane's region in `nexts`; where all are
  // at one region, on from there (onExit); otherwise to `mixed`.
  std::map<uint32_t, Value> to;
  for (auto [m, next] : e.exits) {
    auto [at, fresh] = to.try_emplace(next, m);
    if (!fresh)
      at->second = at->second && m
                       ? Value(LLVM::OrOp::create(b, loc, at->second, m))
                       : Value();
  }
  Type i32 = b.getI32Type();
  Value lanesNext;
  for (auto [next, m] : to) {
    Value v = e.constantVector(
        i32, SmallVector<Attribute>(1, b.getI32IntegerAttr(int32_t(next))));
    lanesNext = lanesNext ? e.select(m, v, lanesNext) : v;
  }
  SmallVector<std::pair<Block *, uint32_t>> exits;
  for (auto [next, m] : to) {
    Block *exit = new Block();
    into.push_back(exit);
    exits.push_back({exit, next});
    if (!m) {
      LLVM::BrOp::create(b, loc, ValueRange{}, exit);
      break;
    }
    Block *other = new Block();
    into.push_back(other);
    LLVM::CondBrOp::create(b, loc, e.all(m), exit, other);
    b.setInsertionPointToEnd(other);
    if (next == to.rbegin()->first) {
      LLVM::StoreOp::create(b, loc, lanesNext, nexts, /*alignment=*/16);
      e.saveUniformBits();
      LLVM::BrOp::create(b, loc, ValueRange{}, mixed);
    }
  }
  for (auto [exit, next] : exits) {
    b.setInsertionPointToEnd(exit);
    e.saveUniformBits();
    onExit(b, next);
  }
  return e.made.front();
}
