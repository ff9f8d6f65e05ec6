//===- CpuDevice.cpp - The CPU backend: JIT and SIMT executor ---*- C++ -*-===//
//
// How a launch runs (see also CpuDevice.h):
//
//  - Blocks are taken from an atomic counter by the workers of a pool, so a
//    grid of any size runs with bounded memory.
//  - Launches may come from several threads at once (a server's streams).
//    Each registers in a list of active launches that the pool's workers
//    pick from, the one with the fewest workers first; while more than one
//    launch is active, a pool worker picks again after every block, so the
//    pool spreads over them. The calling thread always runs blocks of its
//    own launch, so every launch makes progress even when the whole pool is
//    busy with a long one. A launch returns once its blocks are taken and
//    every worker that joined it has left it.
//  - A kernel that never synchronises (no barrier, warp collective,
//    nanosleep or indirect call on any path, as the lowering computes) runs
//    its threads one after another on the worker's own stack: one call per
//    thread, no context switches.
//  - Otherwise every GPU thread of the block is a fiber. The scheduler
//    resumes each runnable fiber in thread order until it blocks (barrier,
//    collective, nanosleep) or ends; when none is runnable it completes every
//    barrier whose expected count has arrived and every warp collective
//    whose participants (the lanes of its mask that have not exited) are all
//    waiting, then repeats. Nothing is left to chance: the same launch gives
//    the same interleaving, and a block where no thread can move is reported
//    as a deadlock.
//  - Out-of-bounds accesses, `trap` and deadlocks end the launch with an
//    error that names the kernel, block and thread. In fiber mode the failing
//    fiber is simply abandoned; in the direct mode the worker `longjmp`s out
//    of the generated code (which holds no resources) back to the block loop.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Runtime/CPU/CpuDevice.h"
#include "Wooly/Runtime/CPU/ABI.h"
#include "Wooly/Runtime/CPU/FloatHelpers.h"

#include "Executor.h"

#include "llvm/ExecutionEngine/Orc/AbsoluteSymbols.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <link.h>
#include <mutex>
#include <pthread.h>
#include <shared_mutex>
#include <sys/mman.h>
#include <thread>
#include <ucontext.h>
#include <unistd.h>

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

namespace {
/// A loaded module: its JITDylib, entry points and globals. A module may be
/// loaded in parts (`CpuDevice::extendModule`: kernels compiled one by one
/// into the same JITDylib); the parts' module variables are weak
/// definitions, so the JIT keeps the first part's and binds the later
/// parts' references to it: every kernel sees one instance.
struct LoadedModuleImpl {
  /// One launchable kernel.
  struct Kernel {
    const KernelInfo *info = nullptr;
    /// The compiled part that holds it (its shared memory layout and
    /// access sites).
    const CompiledModule *part = nullptr;
    WoolyKernelFn fn = nullptr;
    /// Block loop (`KernelInfo::blockSymbol`), where the kernel has one.
    WoolyBlockFn blockFn = nullptr;
  };
  std::vector<std::shared_ptr<const CompiledModule>> parts;
  llvm::orc::JITDylib *dylib = nullptr;
  llvm::StringMap<Kernel> kernels;
  llvm::StringMap<std::pair<uint64_t, uint64_t>> globals;
  /// The memory domain of its variables (CpuDevice::setModuleDomain).
  uint64_t domain = 0;
  /// Guards `parts`, `kernels`, `globals` and `domain`: a part may be added
  /// while other threads launch the module's kernels.
  mutable std::shared_mutex mutex;
};

//===----------------------------------------------------------------------===//
// Stack overflow
//===----------------------------------------------------------------------===//
//
// Deep recursion in a kernel runs into the guard page below its stack (a
// fiber's, or the worker thread's in direct mode); generated code probes
// its frames page by page, so it cannot step over the guard. A SIGSEGV
// handler, on an alternate stack of each thread that runs blocks, turns a
// fault in that guard zone into a launch error: it leaves the thread's
// frames as a fault does (longjmp, or a switch to the block's scheduler)
// and the launch reports "stack overflow". Any other SIGSEGV goes to the
// handler installed before (or the default action), as it would without
// this one. The handler allocates nothing and takes no lock.

/// The worker whose blocks this OS thread runs (null: none).
thread_local Worker *tlsWorker = nullptr;

/// How far below a stack's lowest address a fault still counts as its
/// overflow (a fiber stack's guard zone; what one probe step may skip).
constexpr uint64_t kGuardZone = FiberStack::kGuardBytes;

struct sigaction previousSegv;

/// The executable segments of the objects loaded when the handler was
/// installed (the runtime, the C and C++ libraries, ...). A fault whose
/// instruction lies in one of them is not in generated code (that lives in
/// the JIT's anonymous memory): the runtime's frames may hold locks, so it
/// is not turned into a launch error.
constexpr size_t kMaxCodeRanges = 512;
std::pair<uint64_t, uint64_t> codeRanges[kMaxCodeRanges];
size_t numCodeRanges = 0;

int recordCodeRanges(dl_phdr_info *info, size_t, void *) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
        numCodeRanges == kMaxCodeRanges)
      continue;
    uint64_t lo = info->dlpi_addr + ph.p_vaddr;
    codeRanges[numCodeRanges++] = {lo, lo + ph.p_memsz};
  }
  return 0;
}

bool inLoadedCode(uint64_t pc) {
  for (size_t i = 0; i < numCodeRanges; ++i)
    if (pc >= codeRanges[i].first && pc < codeRanges[i].second)
      return true;
  return false;
}

/// The faulting instruction's address (0 where unknown).
uint64_t faultPc(void *context) {
  auto *uc = static_cast<ucontext_t *>(context);
#if defined(__x86_64__)
  return uint64_t(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return uint64_t(uc->uc_mcontext.pc);
#else
  (void)uc;
  return 0;
#endif
}

/// An alternate signal stack for the calling thread, for its life.
void ensureAltStack() {
  struct AltStack {
    void *mem = nullptr;
    size_t size = 0;
    AltStack() {
      size = 64 * 1024;
      mem = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (mem == MAP_FAILED) {
        mem = nullptr;
        return;
      }
      stack_t ss{};
      ss.ss_sp = mem;
      ss.ss_size = size;
      if (sigaltstack(&ss, nullptr) != 0) {
        munmap(mem, size);
        mem = nullptr;
      }
    }
    ~AltStack() {
      if (!mem)
        return;
      stack_t ss{};
      ss.ss_flags = SS_DISABLE;
      sigaltstack(&ss, nullptr);
      munmap(mem, size);
    }
  };
  thread_local AltStack stack;
  (void)stack;
}

void onSegv(int sig, siginfo_t *info, void *context) {
  Worker *w = tlsWorker;
  uint64_t addr = reinterpret_cast<uint64_t>(info->si_addr);
  uint64_t pc = faultPc(context);
  if (w && w->launch && pc && !inLoadedCode(pc)) {
    if (w->fiberMode) {
      GpuThread *t = w->running;
      if (t && t->index < w->stacks.size()) {
        uint64_t base = reinterpret_cast<uint64_t>(w->stacks[t->index].base());
        if (addr < base && base - addr <= kGuardZone) {
          // Back to the block's scheduler, which reports it.
          t->status = ThreadStatus::Faulted;
          t->overflowed = true;
          fiberSwitch(t->fiber, w->scheduler);
        }
      }
    } else if (w->stackLo && addr < w->stackLo &&
               w->stackLo - addr <= kGuardZone) {
      std::longjmp(w->jmp, kJmpOverflow);
    }
  }
  // Not a kernel's stack overflow: what was there before.
  if (previousSegv.sa_flags & SA_SIGINFO) {
    if (previousSegv.sa_sigaction) {
      previousSegv.sa_sigaction(sig, info, context);
      return;
    }
  } else if (previousSegv.sa_handler != SIG_DFL &&
             previousSegv.sa_handler != SIG_IGN) {
    previousSegv.sa_handler(sig);
    return;
  }
  // The default action: restore it; the faulting instruction runs again.
  sigaction(SIGSEGV, &previousSegv, nullptr);
}

/// Installs onSegv once per process.
void installOverflowHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = &onSegv;
    sigemptyset(&sa.sa_mask);
    // SA_NODEFER: leaving the handler by longjmp or a switch must not leave
    // SIGSEGV blocked in the thread.
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    dl_iterate_phdr(&recordCodeRanges, nullptr);
    sigaction(SIGSEGV, &sa, &previousSegv);
  });
}
} // namespace

//===----------------------------------------------------------------------===//
// The block executor
//===----------------------------------------------------------------------===//

namespace {

/// Sets the fields of `t.ctx` that are the same for every thread of the
/// block.
void initBlockCtx(Worker &w, GpuThread &t) {
  LaunchState &l = *w.launch;
  WoolyThreadCtx &c = t.ctx;
  for (int i = 0; i < 3; ++i) {
    c.ntid[i] = l.config.block[i];
    c.ctaid[i] = uint32_t(w.block[i]);
    c.nctaid[i] = l.config.grid[i];
  }
  c.nwarpid = (l.threadsPerBlock + 31) / 32;
  c.dynSmemSize = l.config.dynamicSharedBytes;
  c.totalSmemSize = l.totalShared;
  c.gridid = 1;
  c.shared = w.shared.data();
  c.params = l.params;
  c.paramBytes = l.kernel->paramBufferSize;
  c.siteCache = w.cache.data();
  c.runtime = &t;
  t.worker = &w;
  t.status = ThreadStatus::Runnable;
}

/// Sets the thread-specific fields for linear thread index `linear`.
void setThreadIndex(Worker &w, GpuThread &t, uint32_t linear) {
  const auto &blk = w.launch->config.block;
  WoolyThreadCtx &c = t.ctx;
  c.tid[0] = linear % blk[0];
  c.tid[1] = (linear / blk[0]) % blk[1];
  c.tid[2] = linear / (blk[0] * blk[1]);
  c.laneid = linear % 32;
  c.warpid = linear / 32;
  t.index = linear;
}

/// Direct mode: threads in order on the worker's stack. The block-wide
/// context is set once; the thread index advances incrementally.
void runBlockDirect(Worker &w) {
  LaunchState &l = *w.launch;
  GpuThread &t = w.direct;
  WoolyThreadCtx &c = t.ctx;
  const auto &blk = l.config.block;
  initBlockCtx(w, t);
  // `.local` memory lives on the worker's stack, under this frame (the
  // kernel's frames begin right below it; unchecked when the system does
  // not tell where the stack is). Generated code takes the stack pointer
  // as the lower bound, the runtime its own frame.
  c.localLo = w.stackLo;
  c.localHi = w.stackHi > w.stackLo ? stackTopHere() : ~uint64_t(0);
  // `w.next` is memory, not a local, so its value survives longjmp.
  w.next = 0;
  int why = setjmp(w.jmp);
  if (why == kJmpFault)
    return;
  if (why == kJmpOverflow) {
    l.fail(llvm::formatv("kernel '{0}': stack overflow: the thread's frames "
                         "outgrew the worker's stack of {1} bytes (deep or "
                         "unbounded recursion?) ({2})",
                         l.kernel->name, w.stackHi - w.stackLo,
                         describeThread(&t))
               .str(),
           w.linearBlock);
    return;
  }
  if (why == kJmpExit) {
    // The thread in the context exited; continue with the next one.
    w.next = c.tid[0] + blk[0] * (c.tid[1] + blk[1] * c.tid[2]) + 1;
  }
  if (w.next >= l.threadsPerBlock)
    return;
  setThreadIndex(w, t, w.next);
  if (l.blockFn) {
    // The generated loop runs the rest of the block; after an `exit` in a
    // device function it is resumed after the exiting thread.
    l.blockFn(&c, l.params, w.next);
    return;
  }
  WoolyKernelFn fn = l.fn;
  const char *params = l.params;
  for (;;) {
    fn(&c, params);
    uint32_t next = ++w.next;
    if (next >= l.threadsPerBlock)
      return;
    c.laneid = next & 31;
    c.warpid = next >> 5;
    if (++c.tid[0] == blk[0]) {
      c.tid[0] = 0;
      if (++c.tid[1] == blk[1]) {
        c.tid[1] = 0;
        ++c.tid[2];
      }
    }
  }
}

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

/// Completes warp collectives whose participants have all arrived.
bool resolveWarps(Worker &w) {
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
      else if (lead.warpKind >= WOOLY_WARP_LDMATRIX) {
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

/// Fiber mode: the deterministic block scheduler.
void runBlockFibers(Worker &w) {
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
  const auto &blk = l.config.block;
  uint32_t tx = 0, ty = 0, tz = 0;
  for (uint32_t i = 0; i < n; ++i) {
    GpuThread &t = w.threads[i];
    initBlockCtx(w, t);
    // The thread index advances without divisions.
    t.ctx.tid[0] = tx;
    t.ctx.tid[1] = ty;
    t.ctx.tid[2] = tz;
    t.ctx.laneid = i & 31;
    t.ctx.warpid = i >> 5;
    t.index = i;
    // Its `.local` memory: its own fiber stack.
    t.ctx.localLo = reinterpret_cast<uint64_t>(w.stacks[i].base());
    t.ctx.localHi = t.ctx.localLo + w.stacks[i].size();
    if (++tx == blk[0]) {
      tx = 0;
      if (++ty == blk[1]) {
        ty = 0;
        ++tz;
      }
    }
    fiberInit(t.fiber, w.stacks[i].base(), w.stacks[i].size(), &fiberMain, &t);
  }
  for (Barrier &b : w.barriers)
    b = Barrier();
  w.atWarp = w.atBarrier = w.atIteration = w.exited = 0;
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
    std::string who;
    for (uint32_t i = 0; i < n && who.size() < 300; ++i) {
      GpuThread &t = w.threads[i];
      if (t.status == ThreadStatus::AtBarrier)
        who += " thread " + std::to_string(i) + " at a barrier;";
      else if (t.status == ThreadStatus::AtIteration)
        who += " thread " + std::to_string(i) + " at the end of its block;";
      else if (t.status == ThreadStatus::AtWarp)
        who += " thread " + std::to_string(i) +
               " at a warp collective (mask 0x" + hex(t.warpMask) + ");";
    }
    l.fail("kernel '" + l.kernel->name + "': deadlock in block (" +
               std::to_string(w.block[0]) + "," + std::to_string(w.block[1]) +
               "," + std::to_string(w.block[2]) + "):" + who,
           w.linearBlock);
    return;
  }
}

/// Sets `w` up for `w.launch` (site cache, shared memory window, mode) unless
/// it already is: a pool worker may leave a launch and join it again.
/// Empties the worker's access-site cache for the launch it joined.
void clearSiteCache(Worker &w) {
  // Empty entries: `lo` is a scratch buffer no kernel can name, and only
  // an access at exactly that address (harmless) would match.
  static char scratch[64];
  w.cache.assign(w.launch->numSites,
                 WoolyAccessRange{reinterpret_cast<uint64_t>(scratch), 0});
}

void joinLaunch(Worker &w) {
  LaunchState &l = *w.launch;
  if (w.setUpFor == l.id)
    return;
  w.setUpFor = l.id;
  clearSiteCache(w);
  w.cacheDomain = l.memoryDomainOf(0);
  w.shared.assign(std::max<uint32_t>(l.totalShared, 1), 0);
  w.fiberMode = l.kernel->needsFibers;
}

/// Runs blocks of `w.launch` until none is left or the launch has failed.
/// With `activeLaunches`, also returns after a block while more than one
/// launch is active, so that the worker can pick again.
/// The memory domain of the last block run on this OS thread's own stack
/// (direct mode runs kernels there; a Worker may move between threads).
thread_local uint64_t tlsStackDomain = 0;

/// Zeroes the dead part of the calling thread's stack, so that a kernel of
/// one tenant never reads another's dead frames through its own
/// uninitialised `.local` memory or frame slots: far from here with
/// madvise (pages come back zero-filled; some 3-7 us measured), and the
/// last 64 KiB under this frame, where the next kernel's frames will be,
/// with stores that stop just short of the stack pointer (no call: a
/// callee's frame would lie in the range).
__attribute__((noinline)) void scrubThreadStack(Worker &w) {
  if (w.stackHi <= w.stackLo)
    return; // Where the stack is is not known.
  static const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  constexpr uint64_t kNear = 64 * 1024;
  uint64_t sp = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  uint64_t lo = llvm::alignTo(w.stackLo, page);
  uint64_t far = sp > kNear ? llvm::alignDown(sp - kNear, page) : 0;
  // Parts of the range may be unmapped (the main thread's stack grows on
  // demand): madvise then says ENOMEM, and the mapped parts are dropped.
  if (far > lo)
    ::madvise(reinterpret_cast<void *>(lo), far - lo, MADV_DONTNEED);
#if defined(__x86_64__)
  uint64_t rsp;
  asm volatile("mov %%rsp, %0" : "=r"(rsp));
  // Below the red zone (128 bytes), which this function may use.
  uint64_t hi = (rsp - 256) & ~uint64_t(15);
  uint64_t from = std::max(far, lo);
  if (hi > from) {
    void *dst = reinterpret_cast<void *>(from);
    uint64_t n = hi - from;
    asm volatile("rep stosb" : "+D"(dst), "+c"(n) : "a"(0) : "memory");
  }
#else
#error                                                                         \
    "scrubThreadStack: zeroing below the stack pointer needs this target's code"
#endif
}

/// Turns the worker's fiber stacks over to memory domain `domain`: they
/// are never shared between domains. The current domain's are parked, and
/// `domain`'s own taken back (or new, zero-filled ones mapped as blocks
/// need them). The last kParkedDomains domains keep theirs, so that
/// tenants taking turns pay nothing; older ones are unmapped. (Scrubbing
/// fiber stacks instead cost 1-11 us per stack.)
void switchStacks(Worker &w, uint64_t domain) {
  constexpr size_t kParkedDomains = 4;
  if (!w.stacks.empty())
    w.parkedStacks.emplace_front(w.stackDomain, std::move(w.stacks));
  w.stacks.clear();
  for (auto it = w.parkedStacks.begin(); it != w.parkedStacks.end(); ++it)
    if (it->first == domain) {
      w.stacks = std::move(it->second);
      w.parkedStacks.erase(it);
      break;
    }
  while (w.parkedStacks.size() > kParkedDomains)
    w.parkedStacks.pop_back();
  w.stackDomain = domain;
}

void runBlocks(Worker &w, const std::atomic<unsigned> *activeLaunches) {
  LaunchState &l = *w.launch;
  ensureAltStack();
  tlsWorker = &w;
  struct Clear {
    ~Clear() { tlsWorker = nullptr; }
  } clear;
  const auto &g = l.config.grid;
  for (;;) {
    if (l.failed.load(std::memory_order_relaxed))
      return;
    uint64_t b = l.nextBlock.fetch_add(1);
    if (b >= l.numBlocks)
      return;
    if (l.stopped(b))
      continue; // its fault domain failed
    w.linearBlock = b;
    w.block[0] = b % g[0];
    w.block[1] = (b / g[0]) % g[1];
    w.block[2] = b / (uint64_t(g[0]) * g[1]);
    std::memset(w.shared.data(), 0, w.shared.size());
    uint64_t domain = l.memoryDomainOf(b);
    if (domain != w.cacheDomain) {
      clearSiteCache(w);
      w.cacheDomain = domain;
    }
    if (domain != tlsStackDomain) {
      scrubThreadStack(w);
      tlsStackDomain = domain;
    }
    if (domain != w.stackDomain)
      switchStacks(w, domain);
    if (w.fiberMode)
      runBlockFibers(w);
    else
      runBlockDirect(w);
    if (activeLaunches && activeLaunches->load(std::memory_order_relaxed) > 1)
      return;
  }
}
} // namespace

//===----------------------------------------------------------------------===//
// CpuDevice
//===----------------------------------------------------------------------===//

class CpuDevice::Impl {
public:
  explicit Impl(Options options) : options(std::move(options)) {
    installOverflowHandler();
    maxWorkers = this->options.workers;
    if (maxWorkers == 0)
      maxWorkers = std::max(1u, std::thread::hardware_concurrency());
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(poolMutex);
      stopping = true;
    }
    poolCv.notify_all();
    for (std::thread &t : threads)
      t.join();
    for (auto &m : modules)
      unregisterGlobals(*m);
  }

  Error ensureJIT() {
    if (jit)
      return Error::success();
    static std::once_flag once;
    std::call_once(once, [] {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
    });
    auto j = llvm::orc::LLJITBuilder().create();
    if (!j)
      return j.takeError();
    jit = std::move(*j);
    return Error::success();
  }

  /// Runtime entry points and float helpers, bound by name.
  llvm::orc::SymbolMap runtimeSymbols() {
    llvm::orc::SymbolMap map;
    auto add = [&](StringRef name, void *addr) {
      map[jit->mangleAndIntern(name)] = llvm::orc::ExecutorSymbolDef(
          llvm::orc::ExecutorAddr::fromPtr(addr),
          llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
    };
#define WOOLY_RT(name) add(#name, reinterpret_cast<void *>(&name))
    WOOLY_RT(__wooly_rt_check);
    WOOLY_RT(__wooly_rt_shared_oob);
    WOOLY_RT(__wooly_rt_barrier);
    WOOLY_RT(__wooly_rt_iteration_barrier);
    WOOLY_RT(__wooly_rt_bar_red);
    WOOLY_RT(__wooly_rt_warp);
    WOOLY_RT(__wooly_rt_exit);
    WOOLY_RT(__wooly_rt_trap);
    WOOLY_RT(__wooly_rt_bad_call);
    WOOLY_RT(__wooly_rt_space_oob);
    WOOLY_RT(__wooly_rt_sreg);
    WOOLY_RT(__wooly_rt_isspacep);
    WOOLY_RT(__wooly_rt_nanosleep);
    WOOLY_RT(__wooly_rt_vprintf);
    WOOLY_RT(__wooly_rt_assertfail);
#undef WOOLY_RT
    forEachFloatHelper([&](const char *name, void *addr) { add(name, addr); });
    return map;
  }

  Expected<LoadedModule *> load(std::shared_ptr<const CompiledModule> m) {
    if (m->target.kind != Target::Kind::Host)
      return llvm::createStringError("module compiled for '" + m->target.str() +
                                     "' cannot run on the CPU backend");
    std::lock_guard<std::mutex> lock(deviceMutex);
    if (Error e = ensureJIT())
      return std::move(e);
    auto impl = std::make_unique<LoadedModuleImpl>();
    auto jd =
        jit->createJITDylib("wooly-module-" + std::to_string(nextModuleId++));
    if (!jd)
      return jd.takeError();
    impl->dylib = &*jd;
    auto fail = [&](Error e) -> Error {
      // Nothing of the half-loaded module stays behind.
      unregisterGlobals(*impl);
      return llvm::joinErrors(
          std::move(e),
          jit->getExecutionSession().removeJITDylib(*impl->dylib));
    };
    if (Error e =
            impl->dylib->define(llvm::orc::absoluteSymbols(runtimeSymbols())))
      return fail(std::move(e));
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        jit->getDataLayout().getGlobalPrefix());
    if (!gen)
      return fail(gen.takeError());
    impl->dylib->addGenerator(std::move(*gen));
    if (Error e = addPart(*impl, std::move(m)))
      return fail(std::move(e));
    modules.push_back(std::move(impl));
    return reinterpret_cast<LoadedModule *>(modules.back().get());
  }

  Error extend(LoadedModule *handle, std::shared_ptr<const CompiledModule> m) {
    if (m->target.kind != Target::Kind::Host)
      return llvm::createStringError("module compiled for '" + m->target.str() +
                                     "' cannot run on the CPU backend");
    std::lock_guard<std::mutex> lock(deviceMutex);
    auto *impl = reinterpret_cast<LoadedModuleImpl *>(handle);
    if (!llvm::any_of(modules, [&](auto &p) { return p.get() == impl; }))
      return llvm::createStringError("unknown module");
    return addPart(*impl, std::move(m));
  }

  /// Links `m` into `impl`'s JITDylib and makes its kernels and variables
  /// known. Called with `deviceMutex` held.
  Error addPart(LoadedModuleImpl &impl,
                std::shared_ptr<const CompiledModule> m) {
    {
      std::shared_lock<std::shared_mutex> read(impl.mutex);
      for (const KernelInfo &k : m->kernels)
        if (impl.kernels.count(k.name))
          return llvm::createStringError("kernel '" + k.name +
                                         "' is already loaded");
    }
    // The part's own tracker: a part that fails half-way is removed again,
    // so that a retry does not meet its definitions.
    llvm::orc::ResourceTrackerSP tracker = impl.dylib->createResourceTracker();
    auto undo = [&](Error e) -> Error {
      return llvm::joinErrors(std::move(e), tracker->remove());
    };
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(m->binary, "wooly");
    if (Error e = jit->addObjectFile(tracker, std::move(buffer)))
      return undo(std::move(e));
    llvm::StringMap<LoadedModuleImpl::Kernel> kernels;
    for (const KernelInfo &k : m->kernels) {
      LoadedModuleImpl::Kernel &entry = kernels[k.name];
      entry.info = &k;
      entry.part = m.get();
      auto sym = jit->lookup(*impl.dylib, k.symbol);
      if (!sym)
        return undo(sym.takeError());
      entry.fn = sym->toPtr<WoolyKernelFn>();
      if (!k.blockSymbol.empty()) {
        auto block = jit->lookup(*impl.dylib, k.blockSymbol);
        if (!block)
          return undo(block.takeError());
        entry.blockFn = block->toPtr<WoolyBlockFn>();
      }
    }
    std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> globals;
    for (const GlobalInfo &g : m->globals) {
      auto sym = jit->lookup(*impl.dylib, g.symbol);
      if (!sym)
        return undo(sym.takeError());
      globals.push_back({g.name, {sym->getValue(), g.size}});
    }
    std::unique_lock<std::shared_mutex> write(impl.mutex);
    for (auto &[name, k] : kernels)
      impl.kernels[name] = k;
    // A later part's variables are the first part's (weak definitions).
    for (auto &[name, range] : globals)
      if (impl.globals.try_emplace(name, range).second)
        memory.registerGlobal(range.first, range.second, name, impl.domain);
    impl.parts.push_back(std::move(m));
    return Error::success();
  }

  void unregisterGlobals(LoadedModuleImpl &m) {
    for (auto &g : m.globals)
      memory.unregisterGlobal(g.second.first);
  }

  Error unload(LoadedModule *handle) {
    std::lock_guard<std::mutex> lock(deviceMutex);
    auto *m = reinterpret_cast<LoadedModuleImpl *>(handle);
    auto it = llvm::find_if(modules, [&](auto &p) { return p.get() == m; });
    if (it == modules.end())
      return llvm::createStringError("unknown module");
    unregisterGlobals(*m);
    if (Error e = jit->getExecutionSession().removeJITDylib(*m->dylib))
      return e;
    modules.erase(it);
    return Error::success();
  }

  Error launch(LoadedModule *handle, StringRef kernelName,
               const LaunchConfig &config, llvm::ArrayRef<uint8_t> params) {
    auto *m = reinterpret_cast<LoadedModuleImpl *>(handle);
    LoadedModuleImpl::Kernel entry;
    {
      std::shared_lock<std::shared_mutex> read(m->mutex);
      auto it = m->kernels.find(kernelName);
      if (it == m->kernels.end())
        return llvm::createStringError("no kernel named '" + kernelName +
                                       "' in the module");
      entry = it->second;
    }
    const KernelInfo *k = entry.info;
    auto fail = [&](const llvm::Twine &msg) {
      return llvm::createStringError("launch of kernel '" + kernelName +
                                     "': " + msg);
    };
    uint64_t threads = 1, blocks = 1;
    for (int i = 0; i < 3; ++i) {
      if (config.block[i] == 0 || config.grid[i] == 0)
        return fail("grid and block dimensions must be at least 1");
      if (config.block[i] > limits.maxBlockDim[i])
        return fail(llvm::formatv("block dimension {0} is {1}, the limit is "
                                  "{2}",
                                  "xyz"[i], config.block[i],
                                  limits.maxBlockDim[i]));
      if (config.grid[i] > limits.maxGridDim[i])
        return fail(llvm::formatv("grid dimension {0} is {1}, the limit is {2}",
                                  "xyz"[i], config.grid[i],
                                  limits.maxGridDim[i]));
      threads *= config.block[i];
      blocks *= config.grid[i];
    }
    if (threads > limits.maxThreadsPerBlock)
      return fail(llvm::formatv("{0} threads per block, the limit is {1}",
                                threads, limits.maxThreadsPerBlock));
    if (k->reqntid[0] &&
        (k->reqntid[0] != config.block[0] || k->reqntid[1] != config.block[1] ||
         k->reqntid[2] != config.block[2]))
      return fail(llvm::formatv("the kernel requires a block of {0}x{1}x{2} "
                                "threads (.reqntid)",
                                k->reqntid[0], k->reqntid[1], k->reqntid[2]));
    if (k->maxntid[0] &&
        threads > uint64_t(k->maxntid[0]) * k->maxntid[1] * k->maxntid[2])
      return fail(llvm::formatv("{0} threads exceed the kernel's .maxntid "
                                "{1}x{2}x{3}",
                                threads, k->maxntid[0], k->maxntid[1],
                                k->maxntid[2]));
    uint64_t shared = entry.part->staticSharedSize + config.dynamicSharedBytes;
    if (shared > limits.maxSharedBytesPerBlock)
      return fail(llvm::formatv("{0} bytes of shared memory, the limit is {1}",
                                shared, limits.maxSharedBytesPerBlock));
    if (params.size() != k->paramBufferSize)
      return fail(llvm::formatv("the parameter buffer has {0} bytes, the "
                                "kernel takes {1} ({2} parameters)",
                                params.size(), k->paramBufferSize,
                                k->paramOffsets.size()));

    // The parameter buffer is copied: the kernel may take its address.
    std::vector<char> paramCopy(params.begin(), params.end());
    paramCopy.resize(std::max<size_t>(paramCopy.size(), 1));
    LaunchState l;
    l.kernel = k;
    l.fn = entry.fn;
    l.blockFn = entry.blockFn;
    l.config = config;
    l.totalShared = uint32_t(shared);
    l.threadsPerBlock = uint32_t(threads);
    l.numBlocks = blocks;
    l.numSites = entry.part->numAccessSites;
    l.params = paramCopy.data();
    l.memory = &memory;
    l.printfSink = config.printfSink ? &config.printfSink : &options.printfSink;
    l.numWorkers = unsigned(std::min<uint64_t>(blocks, maxWorkers));
    if (!config.faultDomains.empty()) {
      const std::vector<uint64_t> &d = config.faultDomains;
      if (d.front() != 0 || !std::is_sorted(d.begin(), d.end()) ||
          std::adjacent_find(d.begin(), d.end()) != d.end() ||
          d.back() >= blocks)
        return fail("fault domains must start at block 0 and at ascending "
                    "blocks of the grid");
      l.domainStarts = d;
      l.domainFailed.reset(new std::atomic<bool>[d.size()]);
      for (size_t i = 0; i < d.size(); ++i)
        l.domainFailed[i] = false;
      l.domainErrors.resize(d.size());
      l.domainKinds.assign(d.size(), FaultKind::Launch);
    }
    if (!config.memoryDomains.empty() && config.memoryDomains.size() != 1 &&
        config.memoryDomains.size() !=
            std::max<size_t>(config.faultDomains.size(), 1))
      return fail("memory domains: one for the launch, or one per fault "
                  "domain");
    l.memoryDomains = config.memoryDomains;
    l.allowedRanges = config.allowedRanges;
    l.readOnlyRanges = config.readOnlyRanges;
    bool usePool = l.numWorkers > 1;

    std::unique_ptr<Worker> self;
    {
      std::lock_guard<std::mutex> lock(poolMutex);
      l.id = ++launchCount;
      l.joins = 1; // The calling thread is `%smid` 0.
      self = takeCallerWorker();
      if (usePool) {
        startPool();
        active.push_back(&l);
        numActive.store(unsigned(active.size()), std::memory_order_relaxed);
      }
    }
    if (usePool)
      poolCv.notify_all();

    // The calling thread works on its own launch until no block is left.
    self->launch = &l;
    self->index = 0;
    computeWorkerStack(*self);
    joinLaunch(*self);
    runBlocks(*self, /*activeLaunches=*/nullptr);
    self->launch = nullptr;

    {
      std::unique_lock<std::mutex> lock(poolMutex);
      if (usePool) {
        // No worker joins from now on; wait for those in it to leave.
        llvm::erase(active, &l);
        numActive.store(unsigned(active.size()), std::memory_order_relaxed);
        l.allLeft.wait(lock, [&] { return l.poolParticipants == 0; });
      }
      idleCallers.push_back(std::move(self));
    }
    if (l.failed.load())
      return l.errorKind == FaultKind::Launch
                 ? llvm::createStringError(l.error)
                 : llvm::make_error<KernelFaultError>(l.errorKind, l.error);
    if (!l.domainStarts.empty()) {
      std::vector<std::pair<size_t, std::string>> faults;
      std::vector<FaultKind> kinds;
      for (size_t d = 0; d < l.domainStarts.size(); ++d)
        if (l.domainFailed[d].load()) {
          faults.push_back({d, l.domainErrors[d]});
          kinds.push_back(l.domainKinds[d]);
        }
      if (!faults.empty())
        return llvm::make_error<FaultDomainsError>(std::move(faults),
                                                   std::move(kinds));
    }
    return Error::success();
  }

  /// A worker for a thread in `launch`: an idle one from an earlier launch
  /// (its buffers already grown), else a new one. Called under `poolMutex`.
  std::unique_ptr<Worker> takeCallerWorker() {
    if (idleCallers.empty()) {
      auto w = std::make_unique<Worker>();
      w->stackBytes = options.fiberStackBytes;
      return w;
    }
    std::unique_ptr<Worker> w = std::move(idleCallers.back());
    idleCallers.pop_back();
    return w;
  }

  /// Starts the pool threads (all but one of `maxWorkers`: the calling
  /// thread is the other) if not yet done. Called under `poolMutex`.
  void startPool() {
    if (!poolWorkers.empty())
      return;
    for (unsigned i = 1; i < maxWorkers; ++i) {
      poolWorkers.push_back(std::make_unique<Worker>());
      Worker *w = poolWorkers.back().get();
      w->stackBytes = options.fiberStackBytes;
      threads.emplace_back([this, w] { poolLoop(*w); });
    }
  }

  /// The active launch a pool worker should join: one with blocks left and
  /// room for another worker, the fewest pool workers on it first (the
  /// earliest of equals). Called under `poolMutex`.
  LaunchState *pickLaunch() {
    LaunchState *best = nullptr;
    for (LaunchState *l : active) {
      if (l->failed.load(std::memory_order_relaxed) ||
          l->nextBlock.load(std::memory_order_relaxed) >= l->numBlocks ||
          l->poolParticipants + 1 >= l->numWorkers)
        continue;
      if (!best || l->poolParticipants < best->poolParticipants)
        best = l;
    }
    return best;
  }

  /// A pool thread: joins active launches and runs their blocks until the
  /// device is destroyed.
  void poolLoop(Worker &w) {
    computeWorkerStack(w);
    std::unique_lock<std::mutex> lock(poolMutex);
    for (;;) {
      LaunchState *l = nullptr;
      poolCv.wait(lock, [&] { return stopping || (l = pickLaunch()); });
      if (stopping)
        return;
      ++l->poolParticipants;
      w.index = l->joins++ % l->numWorkers;
      w.launch = l;
      lock.unlock();
      joinLaunch(w);
      runBlocks(w, &numActive);
      lock.lock();
      w.launch = nullptr;
      // Notified under the lock: `l` dies as soon as its caller sees 0.
      if (--l->poolParticipants == 0)
        l->allLeft.notify_all();
    }
  }

  Options options;
  DeviceLimits limits;
  DeviceMemory memory;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<std::unique_ptr<LoadedModuleImpl>> modules;
  uint64_t nextModuleId = 0;
  /// Guards the JIT and `modules` (loading and unloading).
  std::mutex deviceMutex;
  /// Workers a launch may use at once, the calling thread included.
  unsigned maxWorkers = 1;

  /// Guards the pool state below and the `poolParticipants`/`joins` of
  /// active launches.
  std::mutex poolMutex;
  /// Pool workers wait on it for an active launch to join.
  std::condition_variable poolCv;
  /// The pool: `maxWorkers - 1` threads, started by the first launch that
  /// can use them.
  std::vector<std::unique_ptr<Worker>> poolWorkers;
  std::vector<std::thread> threads;
  /// Launches that pool workers may join, in the order they started.
  std::vector<LaunchState *> active;
  /// `active.size()`, read by pool workers between blocks without the lock.
  std::atomic<unsigned> numActive{0};
  /// Workers of the threads in `launch`, kept for the next launches.
  std::vector<std::unique_ptr<Worker>> idleCallers;
  uint64_t launchCount = 0;
  bool stopping = false;
};

CpuDevice::CpuDevice() : CpuDevice(Options()) {}
CpuDevice::CpuDevice(Options options)
    : impl(std::make_unique<Impl>(std::move(options))) {}
CpuDevice::~CpuDevice() = default;

DeviceMemory &CpuDevice::memory() { return impl->memory; }
const DeviceLimits &CpuDevice::limits() const { return impl->limits; }

Expected<LoadedModule *>
CpuDevice::loadModule(std::shared_ptr<const CompiledModule> module) {
  return impl->load(std::move(module));
}

Error CpuDevice::extendModule(LoadedModule *module,
                              std::shared_ptr<const CompiledModule> part) {
  return impl->extend(module, std::move(part));
}

Error CpuDevice::unloadModule(LoadedModule *module) {
  return impl->unload(module);
}

const CompiledModule &CpuDevice::compiled(const LoadedModule *module) const {
  auto *m = reinterpret_cast<const LoadedModuleImpl *>(module);
  std::shared_lock<std::shared_mutex> read(m->mutex);
  return *m->parts.front();
}

Expected<std::pair<uint64_t, uint64_t>>
CpuDevice::globalAddress(LoadedModule *module, StringRef name) {
  auto *m = reinterpret_cast<LoadedModuleImpl *>(module);
  std::shared_lock<std::shared_mutex> read(m->mutex);
  auto it = m->globals.find(name);
  if (it == m->globals.end())
    return llvm::createStringError("no global variable named '" + name +
                                   "' in the module");
  return it->second;
}

void CpuDevice::setModuleDomain(LoadedModule *module, uint64_t domain) {
  auto *m = reinterpret_cast<LoadedModuleImpl *>(module);
  std::unique_lock<std::shared_mutex> write(m->mutex);
  m->domain = domain;
  for (auto &g : m->globals)
    memory().setGlobalDomain(g.second.first, domain);
}

Error CpuDevice::launch(LoadedModule *module, StringRef kernel,
                        const LaunchConfig &config,
                        llvm::ArrayRef<uint8_t> params) {
  return impl->launch(module, kernel, config, params);
}
