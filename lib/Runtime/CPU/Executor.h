//===- Executor.h - State shared by the CPU executor ------------*- C++ -*-===//
//
// Internal to the CPU runtime (CpuDevice.cpp describes how a launch runs).
// The state of a launch in progress, of the workers that run its blocks and
// of each GPU thread, and what the executor's files share: reporting a
// fault of a GPU thread, the live part of its stack, and the block loop and
// the three ways of running a block (DirectExecutor.cpp, RegionExecutor.cpp,
// FiberExecutor.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_RUNTIME_CPU_EXECUTOR_H
#define WOOLY_LIB_RUNTIME_CPU_EXECUTOR_H

#include "Wooly/Runtime/CPU/ABI.h"
#include "Wooly/Runtime/CPU/CpuDevice.h"
#include "Wooly/Runtime/CPU/DeviceHeap.h"

#include "Fiber.h"
#include "Texture.h"
#include "WarpOps.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wooly::cpu::detail {

/// Where a GPU thread stands in its block's schedule.
enum class ThreadStatus : uint8_t {
  Runnable,
  AtBarrier,
  AtWarp,
  /// At `wooly.iteration_barrier`: counts as exited for other barriers and
  /// warp collectives until the whole block is there.
  AtIteration,
  /// At `mbarrier.try_wait` until the phase completes.
  AtMbarrier,
  Yielded,
  Exited,
  Faulted,
};

struct Worker;
struct LaunchState;

/// Zero-fills `bytes` (a multiple of 64) at `p` (64-byte aligned) with
/// plain vector stores: glibc's memset of a few KiB starts with
/// `rep stosb`, which costs more than the window it clears before every
/// block.
void zeroLines(char *p, size_t bytes);

/// A worker's shared-memory window: cache-line aligned and padded to whole
/// lines, so that no two workers' windows share one.
class SharedWindow {
public:
  /// Makes the window `bytes` long (at least 1), zero-filled.
  void assign(size_t bytes) {
    size_t padded = (std::max<size_t>(bytes, 1) + 63) & ~size_t(63);
    if (padded > capacity) {
      mem.reset(static_cast<char *>(std::aligned_alloc(64, padded)));
      if (!mem)
        throw std::bad_alloc();
      capacity = padded;
    }
    length = std::max<size_t>(bytes, 1);
    std::memset(mem.get(), 0, length);
  }
  char *data() { return mem.get(); }
  size_t size() const { return length; }
  /// Zero-fills the window again (before each block).
  void clear() { zeroLines(mem.get(), (length + 63) & ~size_t(63)); }

private:
  struct Free {
    void operator()(char *p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> mem;
  size_t capacity = 0, length = 0;
};

/// One GPU thread. `ctx` comes first: the generated code receives
/// `&ctx`, and `ctx.runtime` points back here.
struct GpuThread {
  WoolyThreadCtx ctx;
  Worker *worker = nullptr;
  uint32_t index = 0;
  ThreadStatus status = ThreadStatus::Runnable;
  FiberContext fiber;
  // A pending warp collective.
  uint32_t warpKind = 0, warpMask = 0;
  WarpLane warpLane;
  // A pending barrier and its bar.red result.
  uint32_t barrierResult = 0;
  // A pending mbarrier.try_wait: the object's shared offset and the parity
  // of the phase it waits for.
  uint64_t mbarOffset = 0;
  uint32_t mbarParity = 0;
  /// Its fiber ran into the guard page below its stack (see onSegv).
  bool overflowed = false;
};

/// One of the block's 16 barriers (`bar.sync`, `bar.arrive`, `bar.red`)
/// while threads arrive at it.
struct Barrier {
  uint32_t arrived = 0;
  uint32_t expected = 0; // 0: all live threads.
  uint32_t popc = 0, andAll = 1, orAny = 0;
  std::vector<uint32_t> waiting;
};

/// A contiguous run of a launch's linear block indices, [next, end), that
/// one worker slot takes in order (BlockLoop.cpp: claimBlock). Its owner
/// claims one block at a time; a worker whose own span is empty steals the
/// back half of another's. Alone on its cache lines: the owner writes it
/// for every block, and nobody else touches it until the end of the launch.
/// `next` and `end` change only under `mutex`; they are atomics so that a
/// worker looking for a span to steal from may read them without it.
struct alignas(64) BlockSpan {
  std::mutex mutex;
  std::atomic<uint64_t> next{0}, end{0};
};

/// Everything about one launch in progress; it lives in `launch`'s frame.
struct LaunchState {
  /// Unique within the device: a worker tells by it whether it is set up for
  /// this launch (a later launch may reuse the address).
  uint64_t id = 0;
  const KernelInfo *kernel = nullptr;
  WoolyKernelFn fn = nullptr;
  WoolyBlockFn blockFn = nullptr;
  /// The kernel's region function, when it runs region by region.
  WoolyKernelFn regionFn = nullptr;
  /// Its warp function, when whole warps run at once.
  WoolyWarpFn warpFn = nullptr;
  LaunchConfig config;
  uint32_t totalShared = 0;
  uint32_t threadsPerBlock = 0;
  uint64_t numBlocks = 0;
  uint64_t numSites = 0;
  const char *params = nullptr;
  /// The blocks not yet taken: one span per worker slot, the grid cut into
  /// `numWorkers` contiguous parts to begin with (setUpSpans). A worker
  /// thus runs neighbouring blocks, whose data usually are neighbours too:
  /// dealing single blocks from one shared counter made two workers
  /// interleave at block granularity (vec_add: 1 KiB of each array per
  /// block), and every claim and the cache lines at every block's edges
  /// bounced between their cores - two workers then spent 2-3x the CPU
  /// time of one on the same launch.
  std::unique_ptr<BlockSpan[]> spans;
  /// A cooperative launch's grid workspace (`%envreg1:2`), 0 otherwise.
  uint64_t gridWorkspace = 0;
  std::atomic<bool> failed{false};
  std::mutex errorMutex;
  std::string error;
  FaultKind errorKind = FaultKind::Launch;
  DeviceMemory *memory = nullptr;
  /// The device heaps (device-side malloc and free).
  DeviceHeaps *heaps = nullptr;
  /// The device's texture and surface objects.
  const TextureTable *textures = nullptr;
  const std::function<void(llvm::StringRef)> *printfSink = nullptr;
  /// Workers that may run the launch at once (the calling thread included):
  /// `%nsmid`.
  unsigned numWorkers = 1;
  /// Guarded by the pool mutex: pool workers in the launch now, and which
  /// worker slots (`Worker::index`, `%smid`; 0 is the calling thread's)
  /// are taken by a worker in the launch.
  unsigned poolParticipants = 0;
  std::vector<bool> slotTaken;
  /// Notified, under the pool mutex, when `poolParticipants` drops to 0.
  std::condition_variable allLeft;

  /// Fault domains (LaunchConfig::faultDomains): the first block of each,
  /// whether each failed, and its first error. Empty: the launch is one.
  std::vector<uint64_t> domainStarts;
  std::unique_ptr<std::atomic<bool>[]> domainFailed;
  std::vector<std::string> domainErrors;
  std::vector<FaultKind> domainKinds;

  size_t domainOf(uint64_t block) const {
    return size_t(std::upper_bound(domainStarts.begin(), domainStarts.end(),
                                   block) -
                  domainStarts.begin()) -
           1;
  }

  /// Memory domains (LaunchConfig::memoryDomains: one for the launch, or
  /// one per fault domain; empty: unrestricted) and the ranges every part
  /// may reach besides.
  std::vector<uint64_t> memoryDomains;
  std::vector<std::pair<uint64_t, uint64_t>> allowedRanges;
  std::vector<std::pair<uint64_t, uint64_t>> readOnlyRanges;

  /// The memory domain of `block`'s part (0: unrestricted).
  uint64_t memoryDomainOf(uint64_t block) const {
    if (memoryDomains.empty())
      return 0;
    return memoryDomains.size() == 1 ? memoryDomains[0]
                                     : memoryDomains[domainOf(block)];
  }

  /// The allocation nearest to `addr` for an error message of `block`'s
  /// part: only one it may reach (the message never tells of memory of
  /// another domain).
  std::optional<Allocation> nearestReachable(uint64_t block,
                                             uint64_t addr) const {
    std::optional<Allocation> n = memory->nearest(addr);
    uint64_t own = memoryDomainOf(block);
    if (n && own && n->domain != own)
      return std::nullopt;
    return n;
  }

  /// The allocation (or allowed range) holding [addr, addr + size) that
  /// blocks of `block`'s part may reach (`write`: may write); none when
  /// there is none, or when it belongs to another memory domain.
  std::optional<Allocation> reachable(uint64_t block, uint64_t addr,
                                      uint64_t size, bool write) const {
    std::optional<Allocation> a = memory->find(addr, size);
    if (!a || memoryDomains.empty())
      return a;
    uint64_t own = memoryDomainOf(block);
    if (!own || a->domain == own)
      return a;
    auto within = [&](uint64_t lo, uint64_t n) {
      return addr >= lo && size <= n && addr - lo <= n - size;
    };
    for (auto [lo, n] : allowedRanges)
      if (within(lo, n))
        return Allocation{lo, n, false, "", own};
    // A read-only range is never cached for a site that writes: such a
    // site never gets it from here.
    if (!write)
      for (auto [lo, n] : readOnlyRanges)
        if (within(lo, n))
          return Allocation{lo, n, false, "", own};
    return std::nullopt;
  }

  /// Ends the launch with `message` - or, with fault domains, the domain
  /// of `block` (its other blocks are skipped; the other domains go on).
  void fail(std::string message, uint64_t block,
            FaultKind kind = FaultKind::Launch) {
    std::lock_guard<std::mutex> lock(errorMutex);
    if (domainStarts.empty()) {
      if (!failed.exchange(true)) {
        error = std::move(message);
        errorKind = kind;
      }
      return;
    }
    size_t d = domainOf(block);
    if (!domainFailed[d].exchange(true)) {
      domainErrors[d] = std::move(message);
      domainKinds[d] = kind;
    }
  }

  /// Cuts the grid into one span per worker slot.
  void setUpSpans() {
    spans.reset(new BlockSpan[numWorkers]);
    for (unsigned i = 0; i < numWorkers; ++i) {
      spans[i].next.store(numBlocks * i / numWorkers,
                          std::memory_order_relaxed);
      spans[i].end.store(numBlocks * (i + 1) / numWorkers,
                         std::memory_order_relaxed);
    }
    slotTaken.assign(numWorkers, false);
  }

  /// Whether some span still has blocks (a hint without the spans' locks:
  /// a block being moved by a steal is in none).
  bool blocksLeft() const {
    for (unsigned i = 0; i < numWorkers; ++i)
      if (spans[i].next.load(std::memory_order_relaxed) <
          spans[i].end.load(std::memory_order_relaxed))
        return true;
    return false;
  }

  /// Whether the block `block` must stop: the launch, or its domain, failed.
  bool stopped(uint64_t block) const {
    if (failed.load(std::memory_order_relaxed))
      return true;
    return !domainStarts.empty() &&
           domainFailed[domainOf(block)].load(std::memory_order_relaxed);
  }
};

/// A thread that runs blocks (a pool thread, or a thread in `launch`) and
/// its state for the launch it has joined. The buffers (site cache, shared
/// memory window, fiber stacks) are kept from one launch to the next.
/// Cache-line aligned, as its shared-memory window is: generated code
/// writes the thread context in `direct` for every GPU thread, and no
/// other worker's data may share those lines.
struct alignas(64) Worker {
  /// The worker's slot in the launch joined, below `launch->numWorkers`:
  /// its block span and `%smid`, unique among the launch's workers.
  unsigned index = 0;
  LaunchState *launch = nullptr;
  /// The launch (`LaunchState::id`) the state below is set up for.
  uint64_t setUpFor = 0;
  std::vector<WoolyAccessRange> cache;
  /// The block's shared memory: this worker's own window, reused from
  /// block to block (zeroed before each).
  SharedWindow shared;
  uint64_t block[3] = {0, 0, 0};
  /// The same block as one linear index.
  uint64_t linearBlock = 0;
  // Direct mode.
  GpuThread direct;
  std::jmp_buf jmp;
  uint32_t next = 0;
  uint64_t stackLo = 0, stackHi = 0;
  /// The memory domain whose fiber stacks `stacks` are, and the fiber
  /// stacks of the domains it ran before, most recent first (switchStacks).
  uint64_t stackDomain = 0;
  std::deque<std::pair<uint64_t, std::vector<FiberStack>>> parkedStacks;
  /// The memory domain the access-site cache was filled for: two parts of
  /// a fused launch may run the same kernel, so the same sites, for two
  /// tenants.
  uint64_t cacheDomain = 0;
  // Region mode (RegionExecutor.cpp): the threads' contexts in `threads`,
  // their frames here (zeroed when the memory domain changes, as the fiber
  // stacks are switched).
  bool regionMode = false;
  std::vector<char> regionFrames;
  /// The lanes of each warp of the block that have not exited.
  std::vector<uint32_t> regionLive;
  /// The launch whose block-invariant context fields `threads` hold.
  uint64_t regionThreadsFor = 0;
  /// The shared window, site cache, frames and `.local` top the contexts
  /// in `threads` were last given (RegionExecutor.cpp).
  std::array<const void *, 4> regionContextsAt{};
  /// Whether every thread in `threads` is runnable (the last block ran to
  /// its end in lockstep; RegionExecutor.cpp).
  bool regionThreadsClean = false;
  // Fiber mode.
  bool fiberMode = false;
  std::vector<GpuThread> threads;
  std::vector<FiberStack> stacks;
  size_t stackBytes = 0;
  FiberContext scheduler;
  GpuThread *running = nullptr;
  Barrier barriers[16];
  /// Threads of the block waiting at a warp collective / a barrier, and
  /// threads that have exited: the scheduler skips work when they are 0.
  uint32_t atWarp = 0, atBarrier = 0, atIteration = 0, exited = 0;
  /// Threads of the block waiting at an mbarrier.
  uint32_t atMbarrier = 0;
};

/// How a direct-mode thread leaves the generated code (`longjmp` values).
enum : int { kJmpExit = 1, kJmpFault = 2, kJmpOverflow = 3 };

/// The GPU thread whose context `ctx` is.
inline GpuThread *threadOf(WoolyThreadCtx *ctx) {
  return static_cast<GpuThread *>(ctx->runtime);
}

/// "block (x,y,z) thread (x,y,z)" of `t`, for error messages.
std::string describeThread(const GpuThread *t);

/// Returns control to the scheduler (fiber mode) with `t` in its status.
inline void yieldToScheduler(GpuThread *t) {
  fiberSwitch(t->fiber, t->worker->scheduler);
}

/// Ends the launch (or its fault domain) with `message`, naming the kernel
/// and the thread.
void recordFault(GpuThread *t, const std::string &message,
                 FaultKind kind = FaultKind::Launch);

/// Leaves the generated code of a thread whose fault is recorded, for good
/// (longjmp in direct mode; in fiber mode a switch to the scheduler that
/// never comes back). No object with a destructor may be alive in the
/// frames left behind: its destructor would never run.
[[noreturn]] void leaveFaulted(GpuThread *t);

/// Ends the launch with `message` and leaves the generated code for good.
[[noreturn]] void faultThread(GpuThread *t, const char *message);

/// The same with the message `make()` builds: it is built and handed over
/// before the thread's frames are left, so none of its strings leaks.
/// `make` must capture by reference or trivially destructible values.
template <typename Make>
[[noreturn]] void faultThread(GpuThread *t, Make make) {
  recordFault(t, make());
  leaveFaulted(t);
}

/// The same for a fault of a known kind.
template <typename Make>
[[noreturn]] void faultThread(GpuThread *t, FaultKind kind, Make make) {
  recordFault(t, make(), kind);
  leaveFaulted(t);
}

/// `v` in hexadecimal, without a prefix.
std::string hex(uint64_t v);

/// The frame address of the function calling it, give or take its own
/// return address: what lies above belongs to the caller and its callers.
__attribute__((noinline)) uint64_t stackTopHere();

/// The live part of the current GPU thread's stack, where its `.local`
/// memory is: from `below` (the frame of the runtime entry point asking,
/// which lies under the kernel's frames) up to where the kernel's first
/// frame begins (`ctx.localHi`, set before the kernel is called). Under it
/// lie dead frames (earlier calls, earlier kernels, other tenants'); above
/// it, the runtime's own frames: neither is the kernel's to read or write.
inline std::pair<uint64_t, uint64_t> liveStack(GpuThread *t, uint64_t below) {
  return {below, t->ctx.localHi};
}

/// In an entry point called by generated code: the caller's stack pointer
/// before the call (x86-64: the frame address holds the saved frame
/// pointer, then the return address), so that the live stack a kernel may
/// reach stops short of the runtime's own frame.
#define WOOLY_CALLER_SP                                                        \
  (reinterpret_cast<uint64_t>(__builtin_frame_address(0)) + 16)

/// Sets `w`'s stack range to the current thread's stack (the range of
/// direct-mode locals). Looked up once per thread: on the main thread
/// `pthread_getattr_np` reads /proc/self/maps.
void computeWorkerStack(Worker &w);

/// Sets the fields of `t.ctx` that are the same for every thread of the
/// block.
void initBlockCtx(Worker &w, GpuThread &t);

/// Sets the contexts of the block's threads in `w.threads` (the first
/// `threadsPerBlock`): the block-wide fields, `%tid`, `%laneid`, `%warpid`
/// and the index (fiber and region mode).
void initBlockThreads(Worker &w);

/// Direct mode: runs the threads of the worker's current block one after
/// another on the worker's stack (DirectExecutor.cpp).
void runBlockDirect(Worker &w);

/// Fiber mode: runs the worker's current block with every GPU thread a
/// fiber, under the deterministic block scheduler (FiberExecutor.cpp).
void runBlockFibers(Worker &w);

/// Region mode: runs the worker's current block region by region, under
/// the fiber scheduler's rules: every runnable thread up to its next cut in
/// thread order, then the warp collectives and the barrier that can
/// complete (RegionExecutor.cpp).
void runBlockRegions(Worker &w);

/// Completes the warp collectives whose participants (the lanes of the
/// mask that have not exited) are all waiting; false when none could be,
/// or the launch failed (FiberExecutor.cpp).
bool resolveWarps(Worker &w);

/// Whether the phase of parity `parity` of the mbarrier at shared offset
/// `offset` of `w`'s block has completed (AsyncCopy.cpp).
bool mbarrierPhaseDone(Worker &w, uint64_t offset, uint32_t parity);

/// Ends the launch (or the block's fault domain) with a deadlock error that
/// tells which threads of the block wait where (FiberExecutor.cpp).
void failDeadlock(Worker &w);

/// Sets `w` up for `w.launch` (site cache, shared memory window, mode) unless
/// it already is: a pool worker may leave a launch and join it again.
void joinLaunch(Worker &w);

/// Takes the next block for `w` into `block`: the first of its own span,
/// else (stealing the back half of the span with the most blocks left
/// into its own) the first stolen one. False when no block is left.
bool claimBlock(Worker &w, uint64_t &block);

/// Runs blocks of `w.launch` until none is left or the launch has failed.
/// With `activeLaunches`, also returns after a block while more than one
/// launch is active, so that the worker can pick again.
void runBlocks(Worker &w, const std::atomic<unsigned> *activeLaunches);

/// Installs the handler that turns a kernel's stack overflow into a launch
/// error, once per process (BlockLoop.cpp).
void installOverflowHandler();

} // namespace wooly::cpu::detail

extern "C" {
/// CUDA's `__assertfail` (a failed `assert` in a kernel): ends the launch
/// with CUDA's message (Printf.cpp; not in ABI.h, which is plain C).
[[noreturn]] void __wooly_rt_assertfail(WoolyThreadCtx *ctx, uint64_t message,
                                        uint64_t file, uint32_t line,
                                        uint64_t function);
} // extern "C"

#endif // WOOLY_LIB_RUNTIME_CPU_EXECUTOR_H
