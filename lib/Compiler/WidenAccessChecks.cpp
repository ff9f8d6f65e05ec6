//===- WidenAccessChecks.cpp - Bounds checks hoisted out of loops -*- C++
//-*-===//
//
// Host code checks every global, const and generic access against its
// site's entry in the worker's access-site cache (ABI.h: `addr - lo <=
// last`), calling `__wooly_rt_check` when that fails. In a loop whose
// iterations give a site an affine address - the threads of a row in the
// block loop (`__wooly_block_<k>`), a kernel's own loops - one check of the
// first and the last address against the entry, made before the loop,
// stands for all of them:
//
//   - the addresses are start + k * step, k = 0 .. max trip count, exactly
//     (an LLVM affine recurrence; where it holds only if 32-bit index
//     arithmetic does not wrap, that is checked too). With |step| < 2^30
//     and at most 2^32 iterations, the progression moves less than 2^62,
//     so when both ends lie in [lo, lo + last] (last < 2^62 in any entry
//     the runtime writes), every address between them does, and is
//     aligned when the first is and the step is a multiple of the size;
//   - the entry does not change in the loop but through the site's own slow
//     path (no other site of the loop shares it: that is checked), and a
//     range the runtime once put in a worker's cache stays valid for the
//     launch - so the accesses the loop makes would all have passed.
//
// The loop is versioned: the copy that runs when every widened site passes
// has those sites' checks made to pass (their branches go straight on, the
// slow paths are `unreachable`), and their `inttoptr` pointers rewritten as
// the first address plus an offset, so that the vectoriser can follow
// them; otherwise the original loop runs, check by check. An out-of-bounds
// access is thus caught exactly as before: it makes the wide check fail,
// and the per-access checks find it, in the same thread, with the same
// error. Loops may have other exits (the slow paths of shared-memory
// checks, which do not return): both copies leave to them. A short loop of
// a constant trip count - a warp function's loop over a warp's 32 lanes
// (WoolyToLLVM.cpp) - also prefetches the next warps' part of each
// progression, which the hardware does not see coming.
//
//===----------------------------------------------------------------------===//

#include "WidenAccessChecks.h"

#include "Wooly/Runtime/CPU/ABI.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/LoopSimplify.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"

using namespace llvm;
using wooly::detail::WidenAccessChecksPass;

namespace {
/// Marks a slow-path call that has been considered (in a loop versioned or
/// found unfit), so that no loop is looked at twice.
constexpr const char *kDone = "wooly.check.considered";

/// The step of a widened address may not exceed this in magnitude, and the
/// loop may not run more than 2^32 iterations (see the file comment).
constexpr int64_t kMaxStep = int64_t(1) << 30;

/// Prefetches of a short loop's widened sites: at most this many bytes of
/// a range, this many ranges ahead.
constexpr int64_t kPrefetchSpan = 512, kPrefetchAhead = 2;

/// A loop of at most this many iterations, known at compile time, is short
/// (a warp function's loop over the lanes): its widened sites' addresses
/// are made visible to the vectoriser, and the next ranges prefetched.
constexpr uint64_t kShortTrips = 64;

using wooly::detail::accessCheckCall;
CallInst *checkCall(Instruction &i) { return accessCheckCall(i); }

/// One site to widen: the first and the last address of its progression,
/// and its step (null: none; a constant: checked at compile time).
struct Site {
  CallInst *call;
  Value *entry;
  const SCEV *first, *last, *step;
  uint64_t size;
  bool aligned;
};

/// Versions `loop` when some of its sites can be widened; marks its slow
/// paths as considered either way. Returns whether it changed the IR.
bool widenLoop(Loop &loop, LoopInfo &li, DominatorTree &dt,
               ScalarEvolution &se) {
  SmallVector<CallInst *> calls;
  for (BasicBlock *bb : loop.blocks())
    for (Instruction &i : *bb)
      if (CallInst *c = checkCall(i))
        calls.push_back(c);
  LLVMContext &ctx = loop.getHeader()->getContext();
  auto markAll = [&](ArrayRef<CallInst *> cs) {
    for (CallInst *c : cs)
      c->setMetadata(kDone, MDNode::get(ctx, {}));
  };
  markAll(calls);

  BasicBlock *preheader = loop.getLoopPreheader();
  if (!preheader || !loop.isLoopSimplifyForm())
    return false;
  PredicatedScalarEvolution pse(se, loop);
  const SCEV *maxBtc = pse.getSymbolicMaxBackedgeTakenCount();
  if (isa<SCEVCouldNotCompute>(maxBtc) ||
      se.getTypeSizeInBits(maxBtc->getType()) > 64)
    return false;
  Type *i64 = Type::getInt64Ty(ctx);
  const SCEV *count = se.getZeroExtendExpr(maxBtc, i64);
  SCEVExpander expander(se, "wooly.widen");
  Instruction *at = preheader->getTerminator();

  SmallVector<Site> sites;
  for (CallInst *c : calls) {
    Value *entry = c->getArgOperand(1), *addr = c->getArgOperand(2);
    auto *size = dyn_cast<ConstantInt>(c->getArgOperand(3));
    auto *flags = dyn_cast<ConstantInt>(c->getArgOperand(4));
    if (!size || !flags || isa<ConstantPointerNull>(entry) ||
        !loop.isLoopInvariant(entry) || !addr->getType()->isIntegerTy(64) ||
        size->getZExtValue() == 0)
      continue;
    bool aligned = (flags->getZExtValue() & WOOLY_ACCESS_ALIGNED) &&
                   size->getZExtValue() > 1 &&
                   isPowerOf2_64(size->getZExtValue());
    const SCEV *first, *last, *step = nullptr;
    const SCEV *s = se.getSCEV(addr);
    if (se.isLoopInvariant(s, &loop)) {
      first = last = s;
    } else {
      const SCEVAddRecExpr *ar = pse.getAsAddRec(addr);
      if (!ar || ar->getLoop() != &loop || !ar->isAffine())
        continue;
      step = ar->getStepRecurrence(se);
      if (auto *k = dyn_cast<SCEVConstant>(step)) {
        // Known here: no check in the preheader.
        if (k->getAPInt().getSignificantBits() > 63)
          continue;
        int64_t v = k->getAPInt().getSExtValue();
        if (v > kMaxStep || v < -kMaxStep ||
            (aligned && v % int64_t(size->getZExtValue()) != 0))
          continue;
      } else if (!se.isLoopInvariant(step, &loop) ||
                 !expander.isSafeToExpandAt(step, at)) {
        continue;
      }
      first = ar->getStart();
      last = se.getAddExpr(first, se.getMulExpr(count, step));
    }
    if (!expander.isSafeToExpandAt(first, at) ||
        !expander.isSafeToExpandAt(last, at))
      continue;
    sites.push_back(
        {c, entry, first, last, step, size->getZExtValue(), aligned});
  }
  // A widened site's entry must not be written in the loop by another
  // site's slow path: drop sites whose entry may be another's.
  auto disjoint = [&](Value *a, Value *b) {
    auto *d =
        dyn_cast<SCEVConstant>(se.getMinusSCEV(se.getSCEV(a), se.getSCEV(b)));
    return d && d->getAPInt().abs().uge(sizeof(WoolyAccessRange));
  };
  bool dropped = true;
  while (dropped) {
    dropped = false;
    for (size_t i = 0; i < sites.size(); ++i) {
      bool clash = false;
      for (CallInst *c : calls) {
        bool widened =
            llvm::any_of(sites, [&](const Site &s) { return s.call == c; });
        if (!widened && !isa<ConstantPointerNull>(c->getArgOperand(1)) &&
            !disjoint(sites[i].entry, c->getArgOperand(1)))
          clash = true;
      }
      if (clash) {
        sites.erase(sites.begin() + i);
        dropped = true;
        break;
      }
    }
  }
  if (sites.empty())
    return false;
  if (!expander.isSafeToExpandAt(count, at))
    return false;

  // The wide checks, in the preheader, which becomes the versioning block.
  BasicBlock *checkBlock = preheader;
  BasicBlock *fastPreheader =
      SplitBlock(checkBlock, checkBlock->getTerminator(), &dt, &li, nullptr,
                 "wooly.widened.ph");
  at = checkBlock->getTerminator();
  IRBuilder<> b(at);
  Value *ok = b.getTrue();
  auto inRange = [&](Value *addr, Value *lo, Value *lastOffset) {
    return b.CreateICmpULE(b.CreateSub(addr, lo), lastOffset);
  };
  SmallVector<Value *> firsts;
  for (const Site &s : sites) {
    Value *lo = b.CreateLoad(i64, s.entry, "wooly.lo");
    Value *lastOffset = b.CreateLoad(
        i64, b.CreateConstGEP1_64(b.getInt8Ty(), s.entry, 8), "wooly.last");
    Value *first = expander.expandCodeFor(s.first, i64, at);
    Value *last = expander.expandCodeFor(s.last, i64, at);
    firsts.push_back(first);
    ok = b.CreateAnd(ok, inRange(first, lo, lastOffset));
    ok = b.CreateAnd(ok, inRange(last, lo, lastOffset));
    if (s.aligned)
      ok = b.CreateAnd(
          ok, b.CreateICmpEQ(b.CreateAnd(first, s.size - 1), b.getInt64(0)));
    if (s.step && !isa<SCEVConstant>(s.step)) {
      // A step known only at run time: |step| <= kMaxStep, and a multiple
      // of an aligned access's size.
      Value *step = expander.expandCodeFor(s.step, i64, at);
      ok = b.CreateAnd(ok,
                       b.CreateICmpULE(b.CreateAdd(step, b.getInt64(kMaxStep)),
                                       b.getInt64(2 * kMaxStep)));
      if (s.aligned)
        ok = b.CreateAnd(
            ok, b.CreateICmpEQ(b.CreateAnd(step, s.size - 1), b.getInt64(0)));
    }
  }
  // At most 2^32 iterations.
  Value *n = expander.expandCodeFor(count, i64, at);
  ok = b.CreateAnd(ok, b.CreateICmpULE(n, b.getInt64(uint64_t(1) << 32)));
  // The predicates the affine forms rest on (no wrap of 32-bit indices).
  Value *predicatesFail =
      expander.expandCodeForPredicate(&pse.getPredicate(), at);
  if (predicatesFail)
    ok = b.CreateAnd(ok, b.CreateNot(predicatesFail));

  // The checked copy of the loop, for when a wide check fails. It leaves
  // to the same blocks (the loop's exit, and the slow paths of checks that
  // do not return, which lie outside it: a shared-memory access's).
  SmallVector<BasicBlock *> exits;
  loop.getUniqueExitBlocks(exits);
  ValueToValueMapTy vmap;
  SmallVector<BasicBlock *> cloned;
  Loop *checkedLoop = cloneLoopWithPreheader(
      fastPreheader, checkBlock, &loop, vmap, ".checked", &li, &dt, cloned);
  remapInstructionsInBlocks(cloned, vmap);
  BranchInst *br = BranchInst::Create(
      fastPreheader, checkedLoop->getLoopPreheader(), ok, at->getIterator());
  br->setMetadata(LLVMContext::MD_prof,
                  MDBuilder(ctx).createLikelyBranchWeights());
  at->eraseFromParent();
  // Values leaving the loop: both copies feed the exits' phis.
  wooly::detail::addClonedExitIncomings(loop, vmap, exits);
  // In the copy that runs when the wide checks pass, the widened sites'
  // checks are known to pass: their branches go straight on (so that the
  // cache-entry loads and compares that fed them die, and nothing of the
  // check is left to keep the loop from vectorising), and their slow paths
  // are unreachable.
  // A short loop of a constant trip count (a warp function's loop over a
  // warp's 32 lanes) moves through memory in small steps between long
  // stretches of other work, too little for the hardware to prefetch: the
  // lines of the next warps' range (the same progression further on) are
  // prefetched before it.
  auto *trips = dyn_cast<SCEVConstant>(count);
  bool shortLoop = trips && trips->getAPInt().getZExtValue() <= kShortTrips;
  if (shortLoop) {
    for (auto [s, first] : llvm::zip(sites, firsts)) {
      auto *k = dyn_cast_or_null<SCEVConstant>(s.step);
      if (!k || k->getAPInt().getSExtValue() <= 0)
        continue;
      int64_t span = int64_t(trips->getAPInt().getZExtValue() + 1) *
                     k->getAPInt().getSExtValue();
      if (span > kPrefetchSpan)
        continue;
      IRBuilder<> pb(fastPreheader->getTerminator());
      for (int64_t at = 0; at < span; at += 64)
        pb.CreateIntrinsic(
            Intrinsic::prefetch, {pb.getPtrTy()},
            {pb.CreateIntToPtr(
                 pb.CreateAdd(first, pb.getInt64(kPrefetchAhead * span + at)),
                 pb.getPtrTy()),
             pb.getInt32(0), pb.getInt32(3), pb.getInt32(1)});
    }
  }
  // In such a loop, the widened sites' pointers, `inttoptr addr` in the
  // lowering, become `first` as a pointer (made before the loop) plus
  // `addr - first`: an address LLVM can follow from iteration to iteration
  // (an inttoptr is opaque to the vectoriser's dependence analysis). Not in
  // the long loops (a block's rows): vectorised with masked loads and
  // stores, vec_add took twice the time (wooly-cpu-bench).
  for (auto [s, first] : llvm::zip(sites, firsts)) {
    if (!s.step || !shortLoop)
      continue;
    Value *addr = s.call->getArgOperand(2);
    Value *base = nullptr;
    for (User *u : llvm::to_vector(addr->users())) {
      auto *cast = dyn_cast<IntToPtrInst>(u);
      if (!cast || !loop.contains(cast))
        continue;
      if (!base) {
        IRBuilder<> pb(fastPreheader->getTerminator());
        base = pb.CreateIntToPtr(first, cast->getType(), "wooly.base");
      }
      IRBuilder<> lb(cast);
      Value *p = lb.CreateGEP(lb.getInt8Ty(), base, lb.CreateSub(addr, first),
                              "wooly.at");
      cast->replaceAllUsesWith(p);
      cast->eraseFromParent();
    }
  }
  for (const Site &s : sites)
    wooly::detail::makeCheckPass(s.call);
  dt.recalculate(*checkBlock->getParent());
  return true;
}

/// Whether `loop` has a slow-path call not yet considered.
bool hasFreshCheck(Loop &loop) {
  for (BasicBlock *bb : loop.blocks())
    for (Instruction &i : *bb)
      if (CallInst *c = checkCall(i); c && !c->getMetadata(kDone))
        return true;
  return false;
}
} // namespace

CallInst *wooly::detail::accessCheckCall(Instruction &i) {
  auto *call = dyn_cast<CallInst>(&i);
  if (!call || call->arg_size() != 5)
    return nullptr;
  Function *callee = call->getCalledFunction();
  if (!callee || callee->getName() != "__wooly_rt_check")
    return nullptr;
  return call;
}

void wooly::detail::addClonedExitIncomings(const Loop &loop,
                                           ValueToValueMapTy &vmap,
                                           ArrayRef<BasicBlock *> exits) {
  for (BasicBlock *exit : exits)
    for (PHINode &phi : exit->phis()) {
      SmallVector<std::pair<Value *, BasicBlock *>> incoming;
      for (unsigned i = 0; i < phi.getNumIncomingValues(); ++i) {
        BasicBlock *from = phi.getIncomingBlock(i);
        if (!loop.contains(from))
          continue;
        Value *v = phi.getIncomingValue(i);
        Value *mapped = vmap.lookup(v);
        incoming.push_back(
            {mapped ? mapped : v, cast<BasicBlock>(vmap.lookup(from))});
      }
      for (auto [v, from] : incoming)
        phi.addIncoming(v, from);
    }
}

void wooly::detail::makeCheckPass(CallInst *call) {
  BasicBlock *slow = call->getParent();
  for (BasicBlock *pred : predecessors(slow))
    if (auto *br = dyn_cast<BranchInst>(pred->getTerminator());
        br && br->isConditional() && br->getSuccessor(0) != br->getSuccessor(1))
      br->setCondition(ConstantInt::getBool(call->getContext(),
                                            br->getSuccessor(0) != slow));
  changeToUnreachable(call);
}

PreservedAnalyses WidenAccessChecksPass::run(Function &f,
                                             FunctionAnalysisManager &fam) {
  bool changed = false;
  for (;;) {
    LoopInfo &li = fam.getResult<LoopAnalysis>(f);
    Loop *target = nullptr;
    for (Loop *l : li.getLoopsInPreorder())
      if (l->isInnermost() && hasFreshCheck(*l)) {
        target = l;
        break;
      }
    if (!target)
      break;
    DominatorTree &dt = fam.getResult<DominatorTreeAnalysis>(f);
    ScalarEvolution &se = fam.getResult<ScalarEvolutionAnalysis>(f);
    // Dedicated exits and a preheader (a warp function's lane loops share
    // their exit with the code that skips them), then LCSSA.
    bool simplified = simplifyLoop(target, &dt, &li, &se, /*AC=*/nullptr,
                                   /*MSSAU=*/nullptr, /*PreserveLCSSA=*/false);
    bool lcssa = formLCSSA(*target, dt, &li, &se);
    if (!widenLoop(*target, li, dt, se) && !lcssa && !simplified)
      continue; // Nothing changed but the marks.
    changed = true;
    fam.invalidate(f, PreservedAnalyses::none());
  }
  for (BasicBlock &bb : f)
    for (Instruction &i : bb)
      if (CallInst *c = checkCall(i))
        c->setMetadata(kDone, nullptr);
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
