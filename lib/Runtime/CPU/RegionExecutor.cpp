//===- RegionExecutor.cpp - Blocks run region by region ---------*- C++ -*-===//
//
// A kernel whose barriers and warp collectives the compiler could cut it
// at (KernelInfo::regionSymbol) runs without fibers: its region function
// takes one thread from one cut to the next and returns, and the thread's
// next call resumes it there (`ctx.resume`). The block runs under the fiber
// scheduler's own rules: a pass runs every runnable thread, in thread
// order, on the worker's own stack, up to its next cut (or its end); then
// the warp collectives whose lanes are all there complete, and the barrier
// once every thread that has not exited waits at it; then the next pass.
// The threads need not meet the same cuts: a cut in a loop or in divergent
// code is run exactly as the fibers would run it, so the results are the
// same bit for bit, and a block where no thread can move is a deadlock, as
// there. Values that live across a cut are in the frame of the thread's
// warp (`ctx.regionFrame`). Faults (and `exit` in a device function)
// `longjmp` back here, as in direct mode.
//
// Where the compiler also built a warp function (KernelInfo::warpSymbol),
// a warp whose 32 lanes are all runnable at the same region runs in one
// call, lane by lane in the same order; it completes a uniform shuffle
// itself where the kernel cannot tell (WoolyToLLVM.cpp). A block of whole
// warps starts in lockstep: each round calls every warp's function, and
// while all stop at the same barrier the next round follows at once, with
// no thread's state touched but each warp's first lane's `resume`; the
// first round where they differ gives the other lanes theirs, settles each
// thread that ran and goes on thread by thread.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "llvm/ADT/bit.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <csetjmp>

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;

namespace {
/// Completes the warp collectives of each warp whose live lanes (those
/// not exited) all wait at one of the same kind and all name, in their
/// masks, every live lane of the warp: the group is then the same for every
/// lane, those lanes, and the collective is resolved once for the warp, as
/// resolveWarps would resolve it. shfl runs as a tight loop over the lanes'
/// recorded operands. Warps this does not cover (a lane elsewhere, a
/// partial mask, a collective other than shfl, vote and redux) are left
/// for resolveWarps. False when the launch failed.
bool resolveFullWarps(Worker &w) {
  LaunchState &l = *w.launch;
  uint32_t n = l.threadsPerBlock;
  GpuThread *threads = w.threads.data();
  for (uint32_t base = 0, warp = 0; base < n; base += 32, ++warp) {
    uint32_t live = w.regionLive[warp];
    if (!live)
      continue;
    GpuThread *lanes = threads + base;
    uint32_t kind = lanes[llvm::countr_zero(live)].warpKind;
    if (kind != WOOLY_WARP_SHFL && kind != WOOLY_WARP_VOTE &&
        kind != WOOLY_WARP_REDUX)
      continue;
    // One pass over the lanes' records: whether the warp qualifies, and
    // their operands.
    bool covered = true, plain = kind == WOOLY_WARP_SHFL;
    WarpLane laneData[32];
    for (uint32_t m = live; m; m &= m - 1) {
      const GpuThread &t = lanes[llvm::countr_zero(m)];
      covered &= (t.warpMask & live) == live && t.warpKind == kind &&
                 t.status == ThreadStatus::AtWarp;
      laneData[llvm::countr_zero(m)] = t.warpLane;
      // Every shfl the compiler emits has 4 input words and 2 output
      // words; anything else goes the generic way.
      plain &= t.warpLane.nin == 4 && t.warpLane.nout == 2;
    }
    if (!covered || (kind == WOOLY_WARP_SHFL && !plain))
      continue;
    if (kind == WOOLY_WARP_SHFL) {
      uint32_t value[32];
      for (uint32_t m = live; m; m &= m - 1)
        value[llvm::countr_zero(m)] = laneData[llvm::countr_zero(m)].in[1];
      for (uint32_t m = live; m; m &= m - 1) {
        uint32_t lane = llvm::countr_zero(m);
        const WarpLane &x = laneData[lane];
        bool pval;
        uint32_t src = shflSource(lane, x.in[0], x.in[2], x.in[3], live, pval);
        x.out[0] = value[src];
        x.out[1] = pval ? 1 : 0;
        lanes[lane].status = ThreadStatus::Runnable;
      }
    } else {
      std::string error;
      if (!resolveWarpOp(kind, laneData, live, error)) {
        l.fail("kernel '" + l.kernel->name + "': " + error + " (" +
                   describeThread(&lanes[llvm::countr_zero(live)]) + ")",
               w.linearBlock);
        return false;
      }
      for (uint32_t m = live; m; m &= m - 1)
        lanes[llvm::countr_zero(m)].status = ThreadStatus::Runnable;
    }
    w.atWarp -= llvm::popcount(live);
  }
  return true;
}
} // namespace

namespace {
/// After threads [from, to) of the block returned from the generated code:
/// each where it stopped - exited, at a warp collective (whose request
/// `__wooly_rt_warp` has counted) or at the barrier. The counts are kept
/// here and added once.
void settleThreads(Worker &w, uint32_t from, uint32_t to) {
  uint32_t *live = w.regionLive.data();
  uint32_t exited = 0, atBarrier = 0, gone = 0;
  for (uint32_t i = from; i < to; ++i) {
    GpuThread &t = w.threads[i];
    if (t.ctx.resume == WOOLY_REGION_EXITED) {
      t.status = ThreadStatus::Exited;
      gone |= 1u << (i & 31);
      ++exited;
    } else if (t.status != ThreadStatus::AtWarp) {
      t.status = ThreadStatus::AtBarrier;
      ++atBarrier;
    }
    if ((i & 31) == 31 || i + 1 == to) {
      live[i >> 5] &= ~gone;
      gone = 0;
    }
  }
  w.exited += exited;
  w.atBarrier += atBarrier;
}
} // namespace

void detail::runBlockRegions(Worker &w) {
  LaunchState &l = *w.launch;
  uint32_t n = l.threadsPerBlock;
  uint64_t frame =
      llvm::alignTo(std::max<uint64_t>(l.kernel->regionFrameBytes, 16), 64);
  if (w.threads.size() < n)
    w.threads.resize(n);
  // Each warp's frame holds its 32 lanes' (ABI.h).
  uint32_t warps = (n + 31) / 32;
  if (w.regionFrames.size() < warps * 32 * frame + 64)
    w.regionFrames.resize(warps * 32 * frame + 64);
  char *frames = reinterpret_cast<char *>(
      llvm::alignTo(reinterpret_cast<uintptr_t>(w.regionFrames.data()), 64));
  uint64_t localHi = w.stackHi > w.stackLo ? stackTopHere() : ~uint64_t(0);
  // The worker's memory the contexts point to: the same from block to
  // block of a launch, written again only where it moved.
  std::array<const void *, 4> where = {w.shared.data(), w.cache.data(), frames,
                                       reinterpret_cast<const void *>(localHi)};
  WoolyWarpFn warpFn = l.warpFn;
  // Whole warps in lockstep (see the file's header): while every warp
  // stops at the same barrier, the block needs nothing of the runtime
  // between rounds, and no thread's state changes. The warp functions read
  // the block's fields from each warp's first lane's context: the other
  // lanes' are brought up to date only if the block leaves lockstep.
  bool lockstep = warpFn && n % 32 == 0;
  if (w.regionThreadsFor != l.id || w.regionContextsAt != where) {
    // The first block of the launch on this worker: the whole context.
    initBlockThreads(w);
    w.regionThreadsFor = l.id;
    w.regionContextsAt = where;
    for (uint32_t i = 0; i < n; ++i) {
      GpuThread &t = w.threads[i];
      t.ctx.shared = w.shared.data();
      t.ctx.siteCache = w.cache.data();
      t.ctx.regionFrame = frames + uint64_t(i / 32) * 32 * frame;
      // `.local` memory is on the worker's stack, under this frame, as in
      // direct mode.
      t.ctx.localLo = w.stackLo;
      t.ctx.localHi = localHi;
    }
    w.regionThreadsClean = false;
  }
  // The fields that change from block to block: of every thread, or, for a
  // block in lockstep after one that stayed in it (every thread is then
  // runnable still), of each warp's first lane.
  auto setUp = [&](uint32_t from, uint32_t step) {
    for (uint32_t i = from; i < n; i += step) {
      GpuThread &t = w.threads[i];
      for (int d = 0; d < 3; ++d)
        t.ctx.ctaid[d] = uint32_t(w.block[d]);
      t.status = ThreadStatus::Runnable;
      t.ctx.resume = 0;
    }
  };
  bool clean = lockstep && w.regionThreadsClean;
  setUp(0, clean ? 32 : 1);
  w.regionThreadsClean = false;
  w.regionLive.assign(warps, ~0u);
  if (n % 32)
    w.regionLive[warps - 1] = (1u << (n % 32)) - 1;
  w.atWarp = w.atBarrier = w.atIteration = w.exited = 0;
  WoolyKernelFn fn = l.regionFn;
  const char *params = l.params;
  uint32_t *live = w.regionLive.data();
  for (;;) {
    // One setjmp a pass: `exit`, a fault or an overflow comes back here
    // with the thread in `w.next`.
    w.next = 0;
    int why = setjmp(w.jmp);
    if (why == kJmpFault)
      return;
    if (lockstep && why == 0) {
      // Round after round with the one `setjmp` above: a `longjmp` comes
      // back there with none of this loop's values needed.
      uint32_t warp, region, r;
      for (;;) {
        warp = region = r = 0;
        for (; warp < warps; ++warp) {
          r = warpFn(&w.threads[warp * 32].ctx, params, sizeof(GpuThread));
          if (r == 0 || (warp && r != region))
            break;
          region = r;
        }
        if (warp != warps)
          break;
        if (region == WOOLY_REGION_EXITED) {
          w.regionThreadsClean = true; // No thread's status changed.
          return;
        }
        if (l.stopped(w.linearBlock))
          return;
        // The barrier completes: the next round.
      }
      // The warps diverged: each thread of the warps that ran is where it
      // stopped, the others where they were; the thread by thread pass
      // goes on from the next warp.
      lockstep = false;
      // Each warp's lanes are where its first lane is (a warp function
      // that returns a region sets only that lane's `resume`, and the warps
      // after `warp` did not run this round), except those of a warp that
      // returned 0, which set their own. In a clean block, the other lanes'
      // block fields too.
      for (uint32_t i = 0; i < n; ++i) {
        GpuThread &t = w.threads[i];
        if (clean)
          for (int d = 0; d < 3; ++d)
            t.ctx.ctaid[d] = uint32_t(w.block[d]);
        if ((i & 31) && (r != 0 || i / 32 != warp))
          t.ctx.resume = w.threads[i & ~31u].ctx.resume;
      }
      settleThreads(w, 0, (warp + 1) * 32);
      w.next = (warp + 1) * 32;
    }
    if (why == kJmpOverflow) {
      l.fail(llvm::formatv("kernel '{0}': stack overflow: the thread's "
                           "frames outgrew the worker's stack of {1} bytes "
                           "(deep or unbounded recursion?) ({2})",
                           l.kernel->name, w.stackHi - w.stackLo,
                           describeThread(&w.threads[w.next]))
                 .str(),
             w.linearBlock);
      return;
    }
    bool ran = w.next != 0; // Warps ran in lockstep.
    if (why == kJmpExit) {
      w.threads[w.next].status = ThreadStatus::Exited;
      live[w.next >> 5] &= ~(1u << (w.next & 31));
      ++w.exited;
      ++w.next;
      ran = true;
    }
    // The runnable threads from `w.next` on, in thread order, each up to
    // its next cut: a warp collective (`__wooly_rt_warp` has recorded it),
    // a barrier, or the end.
    for (uint32_t warp = w.next >> 5; warp < warps; ++warp) {
      uint32_t from = warp == (w.next >> 5) ? (w.next & 31) : 0;
      GpuThread *lanes = &w.threads[warp * 32];
      if (warpFn && from == 0 && live[warp] == ~0u) {
        // A whole warp at one region: it runs in one call.
        uint32_t region = lanes[0].ctx.resume, j = 0;
        while (j < 32 && lanes[j].status == ThreadStatus::Runnable &&
               lanes[j].ctx.resume == region)
          ++j;
        if (j == 32) {
          w.next = warp * 32;
          ran = true;
          if (uint32_t r = warpFn(&lanes[0].ctx, params, sizeof(GpuThread)))
            for (uint32_t k = 1; k < 32; ++k)
              lanes[k].ctx.resume = r;
          settleThreads(w, warp * 32, warp * 32 + 32);
          continue;
        }
      }
      for (uint32_t m = live[warp] & (~0u << from); m; m &= m - 1) {
        uint32_t i = warp * 32 + llvm::countr_zero(m);
        GpuThread &t = w.threads[i];
        if (t.status != ThreadStatus::Runnable)
          continue;
        w.next = i;
        ran = true;
        fn(&t.ctx, params);
        settleThreads(w, i, i + 1);
      }
    }
    if (w.exited == n || l.stopped(w.linearBlock))
      return;
    bool progress = false;
    if (w.atWarp) {
      uint32_t before = w.atWarp;
      if (!resolveFullWarps(w))
        return;
      if (w.atWarp)
        resolveWarps(w);
      if (l.stopped(w.linearBlock))
        return;
      progress |= w.atWarp != before;
    }
    // `bar.sync 0` of the whole block: complete once every thread that has
    // not exited waits at it (from whichever cut).
    if (w.atBarrier && w.atBarrier == n - w.exited) {
      for (uint32_t warp = 0; warp < warps; ++warp)
        for (uint32_t m = live[warp]; m; m &= m - 1)
          w.threads[warp * 32 + llvm::countr_zero(m)].status =
              ThreadStatus::Runnable;
      w.atBarrier = 0;
      progress = true;
    }
    if (progress || ran)
      continue;
    // Nobody can move: report who waits where, as the fiber scheduler does.
    failDeadlock(w);
    return;
  }
}
