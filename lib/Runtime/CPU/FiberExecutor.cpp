//===- FiberExecutor.cpp - Blocks of fibers, scheduled ----------*- C++ -*-===//
//
// A kernel that reaches a barrier, a warp collective, an mbarrier wait or
// `nanosleep` runs every GPU thread of the block as a fiber. The scheduler
// resumes each runnable fiber in thread order until it blocks or ends; when
// none is runnable it completes every barrier whose expected count has arrived
// and every warp collective whose participants are all waiting, then repeats.
// The same launch gives the same interleaving, and a block where no thread
// can move is reported as a deadlock.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "llvm/Support/FormatVariadic.h"

#include <new>

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;

namespace {
/// The entry of a GPU thread's fiber: runs the kernel, then exits.
void fiberMain(void *arg) {
  auto *t = static_cast<GpuThread *>(arg);
  // The kernel's frames begin right below this one (see liveStack).
  t->ctx.localHi = stackTopHere();
  t->worker->launch->fn(&t->ctx, t->worker->launch->params);
  t->status = ThreadStatus::Exited;
  yieldToScheduler(t);
  __builtin_unreachable();
}

/// Completes barriers that have their expected number of arrivals.
bool resolveBarriers(Worker &w, uint32_t live) {
  bool progress = false;
  for (uint32_t id = 0; id < 16; ++id) {
    Barrier &b = w.barriers[id];
    if (!b.arrived)
      continue;
    uint32_t expected = b.expected ? b.expected : live;
    if (b.arrived < expected)
      continue;
    // bar.red results, packed: popc in bits 0-29, and in bit 30, or in 31.
    uint32_t andAll = b.andAll, orAny = b.orAny, popc = b.popc;
    w.atBarrier -= uint32_t(b.waiting.size());
    for (uint32_t i : b.waiting) {
      w.threads[i].status = ThreadStatus::Runnable;
      w.threads[i].barrierResult = popc | (andAll << 30) | (orAny << 31);
    }
    b = Barrier();
    progress = true;
  }
  return progress;
}

/// Resumes the threads at an mbarrier wait whose phase has completed.
bool resolveMbarrierWaits(Worker &w) {
  bool progress = false;
  for (uint32_t i = 0; i < w.launch->threadsPerBlock; ++i) {
    GpuThread &t = w.threads[i];
    if (t.status != ThreadStatus::AtMbarrier ||
        !mbarrierPhaseDone(w, t.mbarOffset, t.mbarParity))
      continue;
    t.status = ThreadStatus::Runnable;
    --w.atMbarrier;
    progress = true;
  }
  return progress;
}

/// Completes warp collectives whose participants have all arrived.
} // namespace

bool detail::resolveWarps(Worker &w) {
  LaunchState &l = *w.launch;
  uint32_t n = l.threadsPerBlock;
  bool progress = false;
  for (uint32_t base = 0; base < n; base += 32) {
    uint32_t lanes = std::min<uint32_t>(32, n - base);
    uint32_t live = 0, waiting = 0, activeMaskLanes = 0;
    for (uint32_t i = 0; i < lanes; ++i) {
      GpuThread &t = w.threads[base + i];
      if (t.status != ThreadStatus::Exited &&
          t.status != ThreadStatus::AtIteration)
        live |= 1u << i;
      if (t.status == ThreadStatus::AtWarp) {
        waiting |= 1u << i;
        if (t.warpKind == WOOLY_WARP_ACTIVEMASK)
          activeMaskLanes |= 1u << i;
      }
    }
    if (!waiting)
      continue;
    // activemask: the lanes that reached it together.
    if (activeMaskLanes) {
      for (uint32_t i = 0; i < lanes; ++i)
        if (activeMaskLanes & (1u << i)) {
          GpuThread &t = w.threads[base + i];
          if (t.warpLane.nout)
            t.warpLane.out[0] = activeMaskLanes;
          t.status = ThreadStatus::Runnable;
          --w.atWarp;
        }
      waiting &= ~activeMaskLanes;
      progress = true;
    }
    for (uint32_t i = 0; i < lanes; ++i) {
      if (!(waiting & (1u << i)))
        continue;
      GpuThread &lead = w.threads[base + i];
      uint32_t group = (lead.warpMask & live) | (1u << i);
      if ((group & waiting) != group)
        continue; // Someone of the group has not arrived yet.
      WarpLane laneData[32];
      for (uint32_t j = 0; j < 32; ++j) {
        if (!(group & (1u << j)))
          continue;
        GpuThread &t = w.threads[base + j];
        if (t.warpKind != lead.warpKind) {
          // Here the scheduler runs, not the lane's fiber: the launch
          // fails, and runBlockFibers ends the block.
          l.fail("kernel '" + l.kernel->name + "': " +
                     llvm::formatv("warp collective mismatch: lane {0} "
                                   "waits at collective kind {1}, lane {2} "
                                   "at kind {3}",
                                   i, lead.warpKind, j, t.warpKind)
                         .str() +
                     " (" + describeThread(&t) + ")",
                 w.linearBlock);
          return false;
        }
        laneData[j] = t.warpLane;
      }
      std::string error;
      bool ok;
      if (lead.warpKind == WOOLY_WARP_SYNC)
        ok = true;
      else if (lead.warpKind >= WOOLY_WARP_LDMATRIX &&
               lead.warpKind != WOOLY_WARP_ELECT) {
        WarpMemory mem;
        mem.shared = w.shared.data();
        mem.sharedSize = l.totalShared;
        mem.checkGeneric = [&](uint64_t addr, uint64_t size, bool write,
                               std::string &err) {
          if (l.reachable(w.linearBlock, addr, size, write))
            return true;
          uint64_t sh = reinterpret_cast<uint64_t>(w.shared.data());
          if (addr >= sh && addr - sh < l.totalShared &&
              size <= l.totalShared - (addr - sh))
            return true;
          err = "out-of-bounds matrix " +
                std::string(write ? "store" : "load") + " of " +
                std::to_string(size) + " bytes at address 0x" + hex(addr);
          return false;
        };
        if (group != 0xffffffffu)
          ok = false, error = "matrix collectives need all 32 lanes of the "
                              "warp";
        else
          ok = resolveMatrixOp(lead.warpKind, laneData, group, mem, error);
      } else
        ok = resolveWarpOp(lead.warpKind, laneData, group, error);
      if (!ok) {
        l.fail("kernel '" + l.kernel->name + "': " + error + " (" +
                   describeThread(&lead) + ")",
               w.linearBlock);
        return false;
      }
      for (uint32_t j = 0; j < 32; ++j)
        if (group & (1u << j)) {
          w.threads[base + j].status = ThreadStatus::Runnable;
          --w.atWarp;
        }
      waiting &= ~group;
      progress = true;
    }
  }
  return progress;
}

void detail::failDeadlock(Worker &w) {
  LaunchState &l = *w.launch;
  uint32_t n = l.threadsPerBlock;
  std::string who;
  for (uint32_t i = 0; i < n && who.size() < 300; ++i) {
    GpuThread &t = w.threads[i];
    if (t.status == ThreadStatus::AtBarrier)
      who += " thread " + std::to_string(i) + " at a barrier;";
    else if (t.status == ThreadStatus::AtIteration)
      who += " thread " + std::to_string(i) + " at the end of its block;";
    else if (t.status == ThreadStatus::AtMbarrier)
      who += " thread " + std::to_string(i) +
             " at an mbarrier wait (shared offset " +
             std::to_string(t.mbarOffset) + ", phase parity " +
             std::to_string(t.mbarParity) + ");";
    else if (t.status == ThreadStatus::AtWarp)
      who += " thread " + std::to_string(i) + " at a warp collective (mask 0x" +
             hex(t.warpMask) + ");";
  }
  l.fail("kernel '" + l.kernel->name + "': deadlock in block (" +
             std::to_string(w.block[0]) + "," + std::to_string(w.block[1]) +
             "," + std::to_string(w.block[2]) + "):" + who,
         w.linearBlock);
}

/// Fiber mode: the deterministic block scheduler.
void detail::runBlockFibers(Worker &w) {
  LaunchState &l = *w.launch;
  uint32_t n = l.threadsPerBlock;
  // Stacks are mapped as needed; a worker thread must not throw, so a
  // mapping the system refuses ends the launch (the device stays usable).
  try {
    if (w.threads.size() < n)
      w.threads.resize(n);
    while (w.stacks.size() < n)
      w.stacks.emplace_back(w.stackBytes);
  } catch (const std::bad_alloc &) {
    l.fail(llvm::formatv("kernel '{0}': cannot allocate the fiber stacks of "
                         "a block of {1} threads ({2} bytes each; {3} "
                         "mapped)",
                         l.kernel->name, n, w.stackBytes, w.stacks.size())
               .str(),
           w.linearBlock);
    return;
  }
  initBlockThreads(w);
  for (uint32_t i = 0; i < n; ++i) {
    GpuThread &t = w.threads[i];
    // Its `.local` memory: its own fiber stack.
    t.ctx.localLo = reinterpret_cast<uint64_t>(w.stacks[i].base());
    t.ctx.localHi = t.ctx.localLo + w.stacks[i].size();
    fiberInit(t.fiber, w.stacks[i].base(), w.stacks[i].size(), &fiberMain, &t);
  }
  for (Barrier &b : w.barriers)
    b = Barrier();
  w.atWarp = w.atBarrier = w.atIteration = w.exited = w.atMbarrier = 0;
  for (;;) {
    bool ran = false, yielded = false;
    for (uint32_t i = 0; i < n; ++i) {
      GpuThread &t = w.threads[i];
      if (t.status == ThreadStatus::Yielded) {
        t.status = ThreadStatus::Runnable;
        yielded = true;
        continue; // It runs in the next round, after the others.
      }
      if (t.status != ThreadStatus::Runnable)
        continue;
      w.running = &t;
      fiberSwitch(w.scheduler, t.fiber);
      w.running = nullptr;
      ran = true;
      if (t.overflowed) {
        t.overflowed = false;
        l.fail(llvm::formatv("kernel '{0}': stack overflow: the thread's "
                             "frames outgrew its fiber stack of {1} bytes "
                             "(deep or unbounded recursion?) ({2})",
                             l.kernel->name, w.stacks[i].size(),
                             describeThread(&t))
                   .str(),
               w.linearBlock);
        return;
      }
      if (t.status == ThreadStatus::Exited)
        ++w.exited;
      else if (t.status == ThreadStatus::Faulted || l.stopped(w.linearBlock))
        return;
    }
    if (n == w.exited)
      return;
    // Threads at an iteration barrier count as exited for the others.
    uint32_t live = n - w.exited - w.atIteration;
    bool progress = false;
    if (w.atWarp) {
      progress |= resolveWarps(w);
      if (l.stopped(w.linearBlock))
        return;
    }
    if (w.atBarrier)
      progress |= resolveBarriers(w, live);
    if (w.atMbarrier)
      progress |= resolveMbarrierWaits(w);
    if (!progress && w.atIteration && live == 0) {
      // Everyone not exited reached the end of the iteration.
      for (uint32_t i = 0; i < n; ++i)
        if (w.threads[i].status == ThreadStatus::AtIteration)
          w.threads[i].status = ThreadStatus::Runnable;
      w.atIteration = 0;
      progress = true;
    }
    if (progress || yielded || ran)
      continue;
    // Nobody can move: report who waits where.
    failDeadlock(w);
    return;
  }
}
