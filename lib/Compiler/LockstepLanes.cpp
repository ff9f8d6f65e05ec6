//===- LockstepLanes.cpp - A region loop run by lanes in lock step ------===//
//
// A warp function (lib/Conversion/WoolyToLLVM/WoolyToLLVM.cpp) runs each
// region as a loop over the warp's 32 lanes, each lane from the region's
// start to its next cut. A region that holds a loop thus runs lane 0's
// whole loop, then lane 1's: for a grid-stride loop (`for (i = gid; i < n;
// i += blockDim.x * gridDim.x)`) consecutive accesses lie a whole grid
// apart (64 KiB in wooly-cpu-bench's histogram), so every access misses the
// caches. Threads between two cuts may interleave in any order on a GPU,
// and where the kernel cannot tell the order apart (the warp function's
// `wooly-lockstep` attribute: orderFreeKernel in WoolyToLLVM.cpp), this
// pass runs such a loop iteration-major: iteration k of every lane, then
// iteration k + 1. A lane loop
//
//   for (lane = 0; lane < 32; ++lane) {
//     pre(lane)                  // no side effects; enters the loop or not
//     for (i = i0; i < n; i += s) body(i)     // n, s the same for the warp
//     post(lane)
//   }
//
// becomes
//
//   for (lane ...) start[lane] = pre(lane) enters ? i0 : n, min = ...;
//   if (s > 0 && n + s <= 2^31 && every lane entering has i0 < n &&
//       every check of body passes for every i in [min, n)) {
//     for (k = 0; min + k*s < n; ++k)
//       for (lane ...) if (start[lane] + k*s < n) body(start[lane] + k*s);
//     for (lane ...) { pre(lane); post(lane) }  // the original, loop cut out
//   } else {
//     the original lane loop
//   }
//
// Exactness: with s > 0 and n + s <= 2^31 the 32-bit `i += s` never wraps
// while i < n, so a lane's iterations are exactly i0 + k*s for
// i0 + k*s < n, in the same order, with the same values (where every lane
// that enters the loop has i0 < n: a loop without that guard, a do-while,
// runs its first iteration anyway, and runs as the original); `pre` has no side
// effects and reads nothing the loop or `post` writes (alias analysis), so
// running it again gives the same values; each lane's `post` runs after its
// loop and in lane order. The loop may not hold calls but the slow paths of
// bounds checks (`__wooly_rt_check`) whose address is `d + c * sext(i)`
// (d the same for the warp): the precondition checks the first and the
// last address over [min, n) against the site's cache entry, as
// WidenAccessChecks.cpp does for one loop, and the loop copy runs them as
// passed; when it fails the original runs, check by check, so an
// out-of-bounds access is reported in the same thread with the same
// address as before. A shared-memory access whose check LLVM could not
// drop leaves the loop through a slow path that does not return: such a
// loop is left alone. Each sweep prefetches the lines the lanes touch
// kPrefetchSweeps sweeps later.
//
//===----------------------------------------------------------------------===//

#include "LockstepLanes.h"
#include "WidenAccessChecks.h"

#include "Wooly/Runtime/CPU/ABI.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/MemoryLocation.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/LCSSA.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/LoopSimplify.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

using namespace llvm;
using wooly::detail::LockstepLanesPass;

namespace {
/// Marks a lane loop's latch branch once looked at.
constexpr const char *kDone = "wooly.lockstep.considered";

constexpr uint64_t kLanes = 32;

/// Each sweep prefetches the lanes' lines this many sweeps ahead, at most
/// kPrefetchSpan bytes of each site.
constexpr int64_t kPrefetchSweeps = 4, kPrefetchSpan = 512;

/// A bounds check in the loop: its address is `diff + scale * sext(i)`.
struct Site {
  CallInst *call;
  Value *entry;
  const SCEV *diff;
  uint64_t scale, size;
  bool aligned;
};

/// Intrinsics that neither write memory a thread can see nor order
/// anything: they may stay in code that runs again or in another order.
bool harmless(const Instruction &i) {
  auto *ii = dyn_cast<IntrinsicInst>(&i);
  if (!ii)
    return false;
  switch (ii->getIntrinsicID()) {
  case Intrinsic::experimental_noalias_scope_decl:
  case Intrinsic::assume:
  case Intrinsic::prefetch:
  case Intrinsic::lifetime_start:
  case Intrinsic::lifetime_end:
    return true;
  default:
    return !ii->mayHaveSideEffects() && !ii->mayReadOrWriteMemory();
  }
}

using wooly::detail::accessCheckCall;
CallInst *checkCall(Instruction &i) { return accessCheckCall(i); }

/// An atomic whose memory ends the same whatever order the lanes run in.
bool commutativeUnused(const AtomicRMWInst &rmw) {
  if (!rmw.use_empty())
    return false;
  switch (rmw.getOperation()) {
  case AtomicRMWInst::Add:
  case AtomicRMWInst::Sub:
  case AtomicRMWInst::And:
  case AtomicRMWInst::Or:
  case AtomicRMWInst::Xor:
  case AtomicRMWInst::Max:
  case AtomicRMWInst::Min:
  case AtomicRMWInst::UMax:
  case AtomicRMWInst::UMin:
    return true;
  default:
    return false;
  }
}

/// Whether `w`, which writes memory, writes only kernel memory (or the
/// access-site cache): the slow path of a bounds check, or a store or
/// atomic the lowering marked as not touching runtime memory (`!noalias`
/// of its scopes, and no scope of its own; alias analysis may have lost
/// the scope of the load it is asked about), or a store to an alloca.
/// None of these writes a thread context or the parameters.
bool kernelAccess(Instruction &w) {
  if (checkCall(w))
    return true;
  Value *p = nullptr;
  if (auto *store = dyn_cast<StoreInst>(&w))
    p = store->getPointerOperand();
  else if (auto *rmw = dyn_cast<AtomicRMWInst>(&w))
    p = rmw->getPointerOperand();
  if (!p)
    return false;
  if (isa<AllocaInst>(getUnderlyingObject(p)))
    return true;
  return w.getMetadata(LLVMContext::MD_noalias) &&
         !w.getMetadata(LLVMContext::MD_alias_scope);
}

/// Rewrites lane loop `l` as the file comment says, if it fits. Returns
/// whether it did.
bool lockstep(Loop &l, LoopInfo &li, DominatorTree &dt, ScalarEvolution &se,
              AAResults &aa) {
  BasicBlock *latch = l.getLoopLatch();
  if (!latch)
    return false;
  Function &f = *latch->getParent();
  LLVMContext &ctx = f.getContext();
  latch->getTerminator()->setMetadata(kDone, MDNode::get(ctx, {}));

  // The lane loop: 32 iterations of a canonical lane index, one exit.
  if (l.getSubLoops().size() != 1 || !l.isLoopSimplifyForm())
    return false;
  Loop &c = *l.getSubLoops().front();
  if (!c.isInnermost() || !c.isLoopSimplifyForm())
    return false;
  BasicBlock *header = l.getHeader(), *p0 = l.getLoopPreheader();
  PHINode *lane = l.getCanonicalInductionVariable();
  if (!lane || !lane->getType()->isIntegerTy(64) ||
      range_size(header->phis()) != 1 ||
      se.getSmallConstantTripCount(&l) != kLanes ||
      l.getExitingBlock() != latch || !l.getUniqueExitBlock())
    return false;
  BasicBlock *exitL = l.getUniqueExitBlock();

  // The inner loop: `i` from i0 by s while i < n, one exit.
  BasicBlock *ch = c.getHeader(), *cp = c.getLoopPreheader(),
             *cl = c.getLoopLatch();
  BasicBlock *ce = c.getUniqueExitBlock();
  if (!cp || !cl || c.getExitingBlock() != cl || !ce || !l.contains(ce) ||
      range_size(ch->phis()) != 1)
    return false;
  PHINode *iv = &*ch->phis().begin();
  if (!iv->getType()->isIntegerTy(32))
    return false;
  Value *i0 = iv->getIncomingValueForBlock(cp);
  auto *next = dyn_cast<BinaryOperator>(iv->getIncomingValueForBlock(cl));
  if (!next || next->getOpcode() != Instruction::Add)
    return false;
  Value *step = next->getOperand(0) == iv   ? next->getOperand(1)
                : next->getOperand(1) == iv ? next->getOperand(0)
                                            : nullptr;
  auto *br = dyn_cast<BranchInst>(cl->getTerminator());
  if (!step || !l.isLoopInvariant(step) || !br || !br->isConditional())
    return false;
  auto *cmp = dyn_cast<ICmpInst>(br->getCondition());
  if (!cmp)
    return false;
  ICmpInst::Predicate pred = cmp->getPredicate();
  Value *bound = nullptr;
  if (cmp->getOperand(0) == next) {
    bound = cmp->getOperand(1);
  } else if (cmp->getOperand(1) == next) {
    bound = cmp->getOperand(0);
    pred = ICmpInst::getSwappedPredicate(pred);
  }
  if (br->getSuccessor(0) == ce && br->getSuccessor(1) == ch)
    pred = ICmpInst::getInversePredicate(pred);
  else if (br->getSuccessor(0) != ch || br->getSuccessor(1) != ce)
    return false;
  if (!bound || pred != ICmpInst::ICMP_SLT || !l.isLoopInvariant(bound))
    return false;
  // Nothing of the loop is used after it (the post part would need it).
  for (BasicBlock *bb : c.blocks())
    for (Instruction &i : *bb)
      for (User *u : i.users())
        if (!c.contains(cast<Instruction>(u)))
          return false;

  // `pre`: the blocks of the lane loop from which the inner loop's
  // preheader is reached without passing through the inner loop.
  SmallPtrSet<BasicBlock *, 16> pre;
  SmallVector<BasicBlock *> work{cp};
  while (!work.empty()) {
    BasicBlock *bb = work.pop_back_val();
    if (!pre.insert(bb).second || bb == header)
      continue;
    for (BasicBlock *p : predecessors(bb)) {
      if (c.contains(p) || !l.contains(p))
        return false;
      work.push_back(p);
    }
  }
  if (!pre.contains(header) || pre.contains(latch) || pre.contains(ce))
    return false;
  // It leaves to the inner loop (from its preheader) or to the rest.
  for (BasicBlock *bb : pre)
    for (BasicBlock *s : successors(bb)) {
      if (pre.contains(s))
        continue;
      if (s == ch ? bb != cp : c.contains(s) || !l.contains(s))
        return false;
    }
  // `pre` runs once more for each lane: no side effects, and it reads
  // nothing the inner loop or the rest of the lane loop writes.
  SmallVector<Instruction *> writers;
  for (BasicBlock *bb : l.blocks())
    if (!pre.contains(bb))
      for (Instruction &i : *bb)
        if (i.mayWriteToMemory())
          writers.push_back(&i);
  for (BasicBlock *bb : pre)
    for (Instruction &i : *bb) {
      if (isa<CallBase>(i)) {
        if (!harmless(i))
          return false;
        continue;
      }
      if (i.mayWriteToMemory())
        return false;
      if (auto *load = dyn_cast<LoadInst>(&i)) {
        if (!load->isSimple())
          return false;
        MemoryLocation at = MemoryLocation::get(load);
        const Value *object = getUnderlyingObject(load->getPointerOperand());
        bool runtime = object == f.getArg(0) || object == f.getArg(1);
        for (Instruction *w : writers)
          if (isModSet(aa.getModRefInfo(w, at)) &&
              !(runtime && kernelAccess(*w)))
            return false;
      } else if (i.mayReadFromMemory()) {
        return false;
      }
    }

  // The inner loop's instructions, and its checks' addresses.
  Type *i64 = Type::getInt64Ty(ctx);
  SCEVExpander expander(se, "wooly.lockstep");
  Instruction *at = p0->getTerminator();
  const SCEV *ivWide = se.getSignExtendExpr(se.getSCEV(iv), i64);
  SmallVector<Site> sites;
  // `addr` as `d + scale * sext(i)`, d the same for the warp.
  auto decompose =
      [&](Value *addr,
          uint64_t align) -> std::optional<std::pair<const SCEV *, uint64_t>> {
    const SCEV *a = se.getSCEV(addr);
    for (uint64_t scale : {1, 2, 4, 8, 16}) {
      const SCEV *d =
          se.getMinusSCEV(a, se.getMulExpr(ivWide, se.getConstant(i64, scale)));
      if (se.isLoopInvariant(d, &l) && expander.isSafeToExpandAt(d, at) &&
          scale % align == 0)
        return std::make_pair(d, scale);
    }
    return std::nullopt;
  };
  // The progressions the loop reads and writes through global addresses,
  // to prefetch.
  SmallVector<std::pair<const SCEV *, uint64_t>> streams;
  for (BasicBlock *bb : c.blocks())
    for (Instruction &i : *bb)
      if (Value *p = getLoadStorePointerOperand(&i))
        if (auto *cast = dyn_cast<IntToPtrInst>(p))
          if (auto ds = decompose(cast->getOperand(0), 1);
              ds && !llvm::is_contained(streams, *ds))
            streams.push_back(*ds);
  for (BasicBlock *bb : c.blocks())
    for (Instruction &i : *bb) {
      if (CallInst *call = checkCall(i)) {
        Value *entry = call->getArgOperand(1), *addr = call->getArgOperand(2);
        auto *size = dyn_cast<ConstantInt>(call->getArgOperand(3));
        auto *flags = dyn_cast<ConstantInt>(call->getArgOperand(4));
        if (!size || !flags || size->isZero() ||
            isa<ConstantPointerNull>(entry) || !l.isLoopInvariant(entry) ||
            !addr->getType()->isIntegerTy(64))
          return false;
        uint64_t bytes = size->getZExtValue();
        bool aligned = (flags->getZExtValue() & WOOLY_ACCESS_ALIGNED) &&
                       bytes > 1 && isPowerOf2_64(bytes);
        auto ds = decompose(addr, aligned ? bytes : 1);
        if (!ds)
          return false;
        sites.push_back({call, entry, ds->first, ds->second, bytes, aligned});
        continue;
      }
      if (isa<CallBase>(i)) {
        if (!harmless(i))
          return false;
        continue;
      }
      if (auto *rmw = dyn_cast<AtomicRMWInst>(&i)) {
        if (!commutativeUnused(*rmw))
          return false;
      } else if (isa<AtomicCmpXchgInst, FenceInst>(i)) {
        return false;
      } else if (auto *load = dyn_cast<LoadInst>(&i)) {
        if (load->isVolatile() || load->isAtomic())
          return false;
      } else if (auto *store = dyn_cast<StoreInst>(&i)) {
        if (store->isVolatile() || store->isAtomic())
          return false;
      }
    }
  // What the loop uses of `pre` is made again before each iteration: the
  // lane index, and side-effect-free instructions of dominating blocks.
  SmallVector<Instruction *> slice;
  SmallPtrSet<Instruction *, 16> inSlice;
  std::function<bool(Value *)> collect = [&](Value *v) {
    auto *i = dyn_cast<Instruction>(v);
    if (!i || !pre.contains(i->getParent()) || i == lane || inSlice.contains(i))
      return true;
    if (isa<PHINode>(i) || isa<CallBase>(i) || i->mayHaveSideEffects())
      return false;
    for (Value *op : i->operands())
      if (!collect(op))
        return false;
    inSlice.insert(i);
    slice.push_back(i);
    return true;
  };
  for (BasicBlock *bb : c.blocks())
    for (Instruction &i : *bb)
      if (&i != iv)
        for (Value *op : i.operands())
          if (!collect(op))
            return false;

  // Rewrite. Values the precondition needs, before the lane loop.
  IRBuilder<> b(at);
  SmallVector<Value *> diffs, streamBases;
  for (const Site &s : sites)
    diffs.push_back(expander.expandCodeFor(s.diff, i64, at));
  for (auto [d, scale] : streams)
    streamBases.push_back(expander.expandCodeFor(d, i64, at));
  b.SetInsertPoint(at);
  Value *n64 = b.CreateSExt(bound, i64, "wooly.n");
  Value *s64 = b.CreateSExt(step, i64, "wooly.step");
  IRBuilder<> eb(&f.getEntryBlock(), f.getEntryBlock().getFirstInsertionPt());
  AllocaInst *starts = eb.CreateAlloca(ArrayType::get(i64, kLanes), nullptr,
                                       "wooly.lockstep.starts");
  starts->setAlignment(Align(16));
  BasicBlock *pfast = SplitBlock(p0, p0->getTerminator(), &dt, &li, nullptr,
                                 "wooly.lockstep.post.ph");

  // The original lane loop, for when the precondition fails.
  ValueToValueMapTy vmapF;
  SmallVector<BasicBlock *> blocksF;
  Loop *fallback = cloneLoopWithPreheader(pfast, p0, &l, vmapF, ".fallback",
                                          &li, &dt, blocksF);
  remapInstructionsInBlocks(blocksF, vmapF);
  SmallVector<BasicBlock *> exits{exitL};
  wooly::detail::addClonedExitIncomings(l, vmapF, exits);
  BasicBlock *fallbackPh = fallback->getLoopPreheader();

  // The probe: `pre` for each lane, its start (or n) and the least start.
  auto block = [&](const char *name) {
    return BasicBlock::Create(ctx, name, &f);
  };
  BasicBlock *probePh = block("wooly.lockstep.probe.ph");
  BasicBlock *enter = block("wooly.lockstep.enter");
  BasicBlock *bypass = block("wooly.lockstep.bypass");
  BasicBlock *probeLatch = block("wooly.lockstep.probe.latch");
  BasicBlock *check = block("wooly.lockstep.check");
  ValueToValueMapTy vmapP;
  SmallVector<BasicBlock *> probeBlocks;
  for (BasicBlock *bb : l.blocks())
    if (pre.contains(bb)) {
      BasicBlock *nb = CloneBasicBlock(bb, vmapP, ".probe", &f);
      vmapP[bb] = nb;
      probeBlocks.push_back(nb);
    }
  auto *probeHeader = cast<BasicBlock>(vmapP[header]);
  auto *clonedLane = cast<PHINode>(vmapP[lane]);
  PHINode *laneP =
      PHINode::Create(i64, 2, "wooly.lane", clonedLane->getIterator());
  PHINode *least =
      PHINode::Create(i64, 2, "wooly.least", clonedLane->getIterator());
  PHINode *above = PHINode::Create(b.getInt1Ty(), 2, "wooly.above",
                                   clonedLane->getIterator());
  clonedLane->eraseFromParent();
  vmapP[lane] = laneP;
  for (BasicBlock *nb : probeBlocks) {
    Instruction *t = nb->getTerminator();
    for (unsigned k = 0; k < t->getNumSuccessors(); ++k) {
      BasicBlock *s = t->getSuccessor(k);
      if (!pre.contains(s))
        t->setSuccessor(k, s == ch ? enter : bypass);
    }
  }
  remapInstructionsInBlocks(probeBlocks, vmapP);
  b.SetInsertPoint(probePh);
  b.CreateBr(probeHeader);
  p0->getTerminator()->setSuccessor(0, probePh);
  b.SetInsertPoint(enter);
  Value *i0p = vmapP.lookup(i0);
  Value *start = b.CreateSExt(i0p ? i0p : i0, i64);
  b.CreateStore(start, b.CreateInBoundsGEP(i64, starts, laneP));
  Value *leastE = b.CreateBinaryIntrinsic(Intrinsic::smin, least, start);
  // A loop not guarded by i0 < n (a do-while) runs its first iteration
  // whatever i0 is: not in lock step.
  Value *aboveE = b.CreateOr(above, b.CreateICmpSGE(start, n64));
  b.CreateBr(probeLatch);
  b.SetInsertPoint(bypass);
  b.CreateStore(n64, b.CreateInBoundsGEP(i64, starts, laneP));
  b.CreateBr(probeLatch);
  b.SetInsertPoint(probeLatch);
  PHINode *leastN = b.CreatePHI(i64, 2, "wooly.least.next");
  leastN->addIncoming(leastE, enter);
  leastN->addIncoming(least, bypass);
  PHINode *aboveN = b.CreatePHI(b.getInt1Ty(), 2, "wooly.above.next");
  aboveN->addIncoming(aboveE, enter);
  aboveN->addIncoming(above, bypass);
  Value *laneN = b.CreateAdd(laneP, b.getInt64(1));
  b.CreateCondBr(b.CreateICmpEQ(laneN, b.getInt64(kLanes)), check, probeHeader);
  laneP->addIncoming(b.getInt64(0), probePh);
  laneP->addIncoming(laneN, probeLatch);
  least->addIncoming(n64, probePh);
  least->addIncoming(leastN, probeLatch);
  above->addIncoming(b.getFalse(), probePh);
  above->addIncoming(aboveN, probeLatch);

  // The precondition.
  BasicBlock *midPh = block("wooly.lockstep.ph");
  b.SetInsertPoint(check);
  Value *ok = b.CreateAnd(
      b.CreateICmpSGT(step, ConstantInt::get(step->getType(), 0)),
      b.CreateICmpSLE(b.CreateAdd(n64, s64), b.getInt64(int64_t(1) << 31)));
  Value *sitesOk = b.getTrue();
  for (auto [s, d] : llvm::zip(sites, diffs)) {
    Value *lo = b.CreateLoad(i64, s.entry, "wooly.lo");
    Value *last = b.CreateLoad(
        i64, b.CreateConstGEP1_64(b.getInt8Ty(), s.entry, 8), "wooly.last");
    auto inRange = [&](Value *addr) {
      return b.CreateICmpULE(b.CreateSub(addr, lo), last);
    };
    Value *scale = b.getInt64(s.scale);
    Value *first = b.CreateAdd(d, b.CreateMul(leastN, scale));
    Value *end =
        b.CreateAdd(d, b.CreateMul(b.CreateSub(n64, b.getInt64(1)), scale));
    sitesOk = b.CreateAnd(sitesOk, b.CreateAnd(inRange(first), inRange(end)));
    if (s.aligned)
      sitesOk = b.CreateAnd(
          sitesOk, b.CreateICmpEQ(b.CreateAnd(d, s.size - 1), b.getInt64(0)));
  }
  ok = b.CreateAnd(ok, b.CreateOr(b.CreateICmpSGE(leastN, n64), sitesOk));
  ok = b.CreateAnd(ok, b.CreateNot(aboveN));
  b.CreateCondBr(ok, midPh, fallbackPh)
      ->setMetadata(LLVMContext::MD_prof,
                    MDBuilder(ctx).createLikelyBranchWeights());

  // The loop in lock step: sweeps k over the lanes' iteration k.
  BasicBlock *midK = block("wooly.lockstep.sweep");
  BasicBlock *midLane = block("wooly.lockstep.lane");
  BasicBlock *midSlice = block("wooly.lockstep.body");
  BasicBlock *midLaneLatch = block("wooly.lockstep.lane.latch");
  BasicBlock *midKLatch = block("wooly.lockstep.sweep.latch");
  BasicBlock *midExit = block("wooly.lockstep.exit");
  b.SetInsertPoint(midPh);
  b.CreateCondBr(b.CreateICmpSLT(leastN, n64), midK, midExit);
  b.SetInsertPoint(midK);
  PHINode *ks = b.CreatePHI(i64, 2, "wooly.ks");
  for (auto [stream, d] : llvm::zip(streams, streamBases)) {
    uint64_t scale = stream.second;
    Value *ahead = b.CreateAdd(
        leastN, b.CreateAdd(ks, b.CreateMul(s64, b.getInt64(kPrefetchSweeps))));
    Value *base = b.CreateAdd(d, b.CreateMul(ahead, b.getInt64(scale)));
    int64_t span = std::min<int64_t>(int64_t(kLanes * scale), kPrefetchSpan);
    SmallVector<int64_t> offsets;
    for (int64_t o = 0; o < span; o += 64)
      offsets.push_back(o);
    offsets.push_back(span - 1);
    for (int64_t o : offsets)
      b.CreateIntrinsic(
          Intrinsic::prefetch, {b.getPtrTy()},
          {b.CreateIntToPtr(b.CreateAdd(base, b.getInt64(o)), b.getPtrTy()),
           b.getInt32(0), b.getInt32(3), b.getInt32(1)});
  }
  b.CreateBr(midLane);
  b.SetInsertPoint(midLane);
  PHINode *laneM = b.CreatePHI(i64, 2, "wooly.lane");
  Value *j = b.CreateAdd(
      b.CreateLoad(i64, b.CreateInBoundsGEP(i64, starts, laneM)), ks);
  b.CreateCondBr(b.CreateICmpSLT(j, n64), midSlice, midLaneLatch);
  b.SetInsertPoint(midSlice);
  ValueToValueMapTy vmapM;
  vmapM[lane] = laneM;
  // The inlined lane function's scopes, declared again for each lane.
  for (BasicBlock *bb : pre)
    for (Instruction &i : *bb)
      if (auto *ii = dyn_cast<IntrinsicInst>(&i);
          ii &&
          ii->getIntrinsicID() == Intrinsic::experimental_noalias_scope_decl)
        b.Insert(ii->clone());
  for (Instruction *i : slice) {
    Instruction *copy = i->clone();
    b.Insert(copy);
    vmapM[i] = copy;
  }
  Value *ivValue = b.CreateTrunc(j, iv->getType(), "wooly.i");
  SmallVector<BasicBlock *> midBlocks{midSlice};
  for (BasicBlock *bb : c.blocks()) {
    BasicBlock *nb = CloneBasicBlock(bb, vmapM, ".lockstep", &f);
    vmapM[bb] = nb;
    midBlocks.push_back(nb);
  }
  cast<Instruction>(vmapM[iv])->eraseFromParent();
  vmapM[iv] = ivValue;
  b.CreateBr(cast<BasicBlock>(vmapM[ch]));
  auto *clonedLatch = cast<BasicBlock>(vmapM[cl]);
  clonedLatch->getTerminator()->eraseFromParent();
  BranchInst::Create(midLaneLatch, clonedLatch);
  remapInstructionsInBlocks(midBlocks, vmapM);
  // The checks pass there (the precondition): straight on.
  for (const Site &s : sites)
    wooly::detail::makeCheckPass(cast<CallInst>(vmapM[s.call]));
  b.SetInsertPoint(midLaneLatch);
  Value *laneMN = b.CreateAdd(laneM, b.getInt64(1));
  b.CreateCondBr(b.CreateICmpEQ(laneMN, b.getInt64(kLanes)), midKLatch,
                 midLane);
  laneM->addIncoming(b.getInt64(0), midK);
  laneM->addIncoming(laneMN, midLaneLatch);
  b.SetInsertPoint(midKLatch);
  Value *ksN = b.CreateAdd(ks, s64);
  b.CreateCondBr(b.CreateICmpSLT(b.CreateAdd(leastN, ksN), n64), midK, midExit);
  ks->addIncoming(b.getInt64(0), midPh);
  ks->addIncoming(ksN, midKLatch);
  b.SetInsertPoint(midExit);
  b.CreateBr(pfast);

  // The original lane loop, with the inner loop cut out, runs `pre` and
  // `post` of each lane.
  for (PHINode &phi : ce->phis())
    phi.addIncoming(phi.getIncomingValueForBlock(cl), cp);
  cp->getTerminator()->replaceSuccessorWith(ch, ce);
  ch->removePredecessor(cp);
  dt.recalculate(f);
  return true;
}
} // namespace

PreservedAnalyses LockstepLanesPass::run(Function &f,
                                         FunctionAnalysisManager &fam) {
  if (!f.hasFnAttribute("wooly-lockstep"))
    return PreservedAnalyses::all();
  bool changed = false;
  for (;;) {
    LoopInfo &li = fam.getResult<LoopAnalysis>(f);
    Loop *target = nullptr;
    for (Loop *l : li.getLoopsInPreorder())
      if (l->getSubLoops().size() == 1 && l->getLoopLatch() &&
          !l->getLoopLatch()->getTerminator()->getMetadata(kDone)) {
        target = l;
        break;
      }
    if (!target)
      break;
    DominatorTree &dt = fam.getResult<DominatorTreeAnalysis>(f);
    ScalarEvolution &se = fam.getResult<ScalarEvolutionAnalysis>(f);
    AAResults &aa = fam.getResult<AAManager>(f);
    bool simplified = simplifyLoop(target, &dt, &li, &se, /*AC=*/nullptr,
                                   /*MSSAU=*/nullptr, /*PreserveLCSSA=*/false);
    bool lcssa = formLCSSARecursively(*target, dt, &li, &se);
    bool did = lockstep(*target, li, dt, se, aa);
    if (!did && !simplified && !lcssa) {
      // Only the mark changed.
      continue;
    }
    changed = true;
    fam.invalidate(f, PreservedAnalyses::none());
  }
  for (BasicBlock &bb : f)
    if (Instruction *t = bb.getTerminator())
      t->setMetadata(kDone, nullptr);
  if (!changed)
    return PreservedAnalyses::all();
  removeUnreachableBlocks(f);
  return PreservedAnalyses::none();
}
