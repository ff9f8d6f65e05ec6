//===- BlockLoop.cpp - A worker thread running blocks -----------*- C++ -*-===//
//
// What a thread that runs blocks of a launch (a pool worker, or the thread
// that called `launch`) does around each block: it takes the next block
// from its span of the grid (or steals from another worker's), keeps the
// site cache, its stack and its fiber
// stacks to one memory domain (tenant) at a time, and runs the block in
// direct or fiber mode. A kernel's stack overflow, and any other memory
// fault of generated code, comes back here as a launch error through a
// SIGSEGV handler.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "llvm/Support/MathExtras.h"

#include <csignal>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <cstring>
#include <link.h>
#include <mutex>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;

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

namespace {
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
    // Any other fault of generated code: a write into memory mapped
    // read-only (a deduplicated buffer shared with other tenants, whose
    // write the server was not told of) or an access no check covered.
    // The thread faults, as when a check fails; the process lives on.
    // (Generated code holds no lock: the fault is synchronous, outside
    // the runtime's code.)
    GpuThread *t =
        w->fiberMode ? w->running
        : w->regionMode
            ? (w->next < w->threads.size() ? &w->threads[w->next] : nullptr)
            : &w->direct;
    if (t) {
      recordFault(t, "invalid memory access at address 0x" + hex(addr) +
                         ": memory the kernel may not write (a buffer "
                         "shared read-only with other tenants) or that "
                         "is not mapped");
      leaveFaulted(t);
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
} // namespace

void detail::installOverflowHandler() {
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
//===----------------------------------------------------------------------===//
// The block loop
//===----------------------------------------------------------------------===//

namespace {
/// Empties the worker's access-site cache for the launch it joined.
void clearSiteCache(Worker &w) {
  // Empty entries: `lo` is a scratch buffer no kernel can name, and only
  // an access at exactly that address (harmless) would match.
  static char scratch[64];
  w.cache.assign(w.launch->numSites,
                 WoolyAccessRange{reinterpret_cast<uint64_t>(scratch), 0});
}

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

} // namespace

namespace {
#if defined(__x86_64__)
__attribute__((target("avx512f"))) void zeroLines512(char *p, size_t bytes) {
  __m512i z = _mm512_setzero_si512();
  for (size_t i = 0; i < bytes; i += 64)
    _mm512_store_si512(reinterpret_cast<__m512i *>(p + i), z);
}
__attribute__((target("avx2"))) void zeroLines256(char *p, size_t bytes) {
  __m256i z = _mm256_setzero_si256();
  for (size_t i = 0; i < bytes; i += 64) {
    _mm256_store_si256(reinterpret_cast<__m256i *>(p + i), z);
    _mm256_store_si256(reinterpret_cast<__m256i *>(p + i + 32), z);
  }
}
#endif
} // namespace

void detail::zeroLines(char *p, size_t bytes) {
#if defined(__x86_64__)
  static const int level = __builtin_cpu_supports("avx512f") ? 2
                           : __builtin_cpu_supports("avx2")  ? 1
                                                             : 0;
  if (level == 2)
    return zeroLines512(p, bytes);
  if (level == 1)
    return zeroLines256(p, bytes);
#endif
  std::memset(p, 0, bytes);
}

void detail::joinLaunch(Worker &w) {
  LaunchState &l = *w.launch;
  if (w.setUpFor == l.id)
    return;
  w.setUpFor = l.id;
  clearSiteCache(w);
  w.cacheDomain = l.memoryDomainOf(0);
  w.shared.assign(l.totalShared);
  w.regionMode = l.kernel->needsFibers && l.regionFn;
  w.fiberMode = l.kernel->needsFibers && !l.regionFn;
}

bool detail::claimBlock(Worker &w, uint64_t &block) {
  LaunchState &l = *w.launch;
  BlockSpan &own = l.spans[w.index];
  {
    std::lock_guard<std::mutex> lock(own.mutex);
    uint64_t next = own.next.load(std::memory_order_relaxed);
    if (next < own.end.load(std::memory_order_relaxed)) {
      own.next.store(next + 1, std::memory_order_relaxed);
      block = next;
      return true;
    }
  }
  // Only this worker adds to its span (here, below), so it stays empty
  // until then: steal the back half of the fullest other span.
  for (;;) {
    unsigned victim = w.index;
    uint64_t most = 0;
    for (unsigned i = 0; i < l.numWorkers; ++i) {
      uint64_t next = l.spans[i].next.load(std::memory_order_relaxed);
      uint64_t end = l.spans[i].end.load(std::memory_order_relaxed);
      if (i != w.index && end > next && end - next > most) {
        most = end - next;
        victim = i;
      }
    }
    if (victim == w.index)
      return false;
    uint64_t lo, hi;
    {
      BlockSpan &v = l.spans[victim];
      std::lock_guard<std::mutex> lock(v.mutex);
      uint64_t next = v.next.load(std::memory_order_relaxed);
      uint64_t end = v.end.load(std::memory_order_relaxed);
      if (next >= end)
        continue; // Emptied meanwhile: look again.
      lo = next + (end - next) / 2;
      hi = end;
      v.end.store(lo, std::memory_order_relaxed);
    }
    if (hi - lo > 1) {
      std::lock_guard<std::mutex> lock(own.mutex);
      own.next.store(lo + 1, std::memory_order_relaxed);
      own.end.store(hi, std::memory_order_relaxed);
    }
    block = lo;
    return true;
  }
}

void detail::runBlocks(Worker &w, const std::atomic<unsigned> *activeLaunches) {
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
    uint64_t b;
    if (!claimBlock(w, b))
      return;
    if (l.stopped(b))
      continue; // its fault domain failed
    w.linearBlock = b;
    w.block[0] = b % g[0];
    w.block[1] = (b / g[0]) % g[1];
    w.block[2] = b / (uint64_t(g[0]) * g[1]);
    w.shared.clear();
    uint64_t domain = l.memoryDomainOf(b);
    if (domain != w.cacheDomain) {
      clearSiteCache(w);
      w.cacheDomain = domain;
    }
    if (domain != tlsStackDomain) {
      scrubThreadStack(w);
      tlsStackDomain = domain;
    }
    if (domain != w.stackDomain) {
      switchStacks(w, domain);
      // Region frames are the worker's, not the domain's: what another
      // tenant's threads left there is gone before this one's run.
      std::fill(w.regionFrames.begin(), w.regionFrames.end(), 0);
    }
    if (w.fiberMode)
      runBlockFibers(w);
    else if (w.regionMode)
      runBlockRegions(w);
    else
      runBlockDirect(w);
    if (activeLaunches && activeLaunches->load(std::memory_order_relaxed) > 1)
      return;
  }
}
