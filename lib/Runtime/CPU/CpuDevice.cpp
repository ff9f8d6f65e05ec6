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
