//===- CpuDevice.cpp - The CPU backend: devices and launches ----*- C++ -*-===//
//
// How a launch runs (see also CpuDevice.h):
//
//  - Blocks are taken by the workers of a pool, so a grid of any size runs
//    with bounded memory. The grid is cut into one contiguous span per
//    worker slot; a worker runs its span's blocks in order and then steals
//    the back half of the fullest other span, so workers share no counter
//    and run neighbouring blocks (BlockLoop.cpp: claimBlock).
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
//  - A kernel the compiler could cut at its barriers and warp collectives
//    (KernelInfo::regionSymbol) runs region by region: every runnable
//    thread of the block up to its next cut, in thread order, on the
//    worker's stack, then the warp collectives and the barrier that can
//    complete, then the next pass - the fiber scheduler's own order and
//    rules, without a fiber (RegionExecutor.cpp).
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
// The files of the backend: CpuDevice.cpp (the device, launch checks),
// Jit.cpp (loading modules), ThreadPool.cpp (the pool), BlockLoop.cpp (a
// worker running blocks; stack overflows), DirectExecutor.cpp,
// RegionExecutor.cpp and FiberExecutor.cpp (the three ways of running a
// block), AbiEntryPoints.cpp
// and Printf.cpp (what generated code calls), WarpOps.cpp and
// WarpMatrix.cpp (warp collectives), Executor.cpp (faults and stacks of GPU
// threads), DeviceMemory.cpp, Fiber.cpp, FloatHelpers.cpp.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Runtime/CPU/CpuDevice.h"

#include "CpuDeviceImpl.h"

#include "llvm/Support/FormatVariadic.h"

#include <mutex>
#include <thread>

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

CpuDevice::Impl::Impl(Options options) : options(std::move(options)) {
  installOverflowHandler();
  maxWorkers = this->options.workers;
  if (maxWorkers == 0)
    maxWorkers = std::max(1u, std::thread::hardware_concurrency());
}

CpuDevice::Impl::~Impl() {
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

Error CpuDevice::Impl::launch(LoadedModule *handle, StringRef kernelName,
                              const LaunchConfig &config,
                              llvm::ArrayRef<uint8_t> params) {
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
  if (config.cooperative && blocks > limits.maxCooperativeBlocks)
    return fail(llvm::formatv("{0} blocks in a cooperative launch, the limit "
                              "is {1} (they all run at once)",
                              blocks, limits.maxCooperativeBlocks));
  if (config.cooperative && !config.faultDomains.empty())
    return fail("a cooperative launch has one fault domain");
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
  l.regionFn = options.regions ? entry.regionFn : nullptr;
  l.warpFn = options.regions && options.warps ? entry.warpFn : nullptr;
  l.config = config;
  l.totalShared = uint32_t(shared);
  l.threadsPerBlock = uint32_t(threads);
  l.numBlocks = blocks;
  l.numSites = entry.part->numAccessSites;
  l.params = paramCopy.data();
  l.memory = &memory;
  l.heaps = &heaps;
  l.textures = &textures;
  l.printfSink = config.printfSink ? &config.printfSink : &options.printfSink;
  l.numWorkers = unsigned(std::min<uint64_t>(blocks, maxWorkers));
  // A cooperative launch: its grid workspace (zeroed: an unsigned size, then
  // the grid barrier's counter), in the launch's memory domain, and one
  // thread per block, so that every block is resident at once.
  struct Workspace {
    DeviceMemory &memory;
    uint64_t addr = 0;
    ~Workspace() {
      if (addr)
        llvm::consumeError(memory.free(addr));
    }
  } workspace{memory};
  if (config.cooperative) {
    uint64_t domain =
        config.memoryDomains.size() == 1 ? config.memoryDomains[0] : 0;
    auto addr = memory.allocate(8, domain);
    if (!addr)
      return fail("cannot allocate the grid workspace: " +
                  llvm::toString(addr.takeError()));
    workspace.addr = *addr;
    if (Error e = memory.memset(*addr, 0, 8))
      return e;
    uint32_t size = 8;
    if (Error e = memory.copyToDevice(*addr, &size, 4))
      return e;
    l.gridWorkspace = *addr;
    l.numWorkers = unsigned(blocks);
  }
  // The spans after the number of workers is final (a cooperative launch:
  // one block each).
  l.setUpSpans();
  if (!config.faultDomains.empty()) {
    const std::vector<uint64_t> &d = config.faultDomains;
    if (d.front() != 0 || !std::is_sorted(d.begin(), d.end()) ||
        std::adjacent_find(d.begin(), d.end()) != d.end() || d.back() >= blocks)
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
  bool usePool = l.numWorkers > 1 && !config.cooperative;

  std::unique_ptr<Worker> self;
  {
    std::lock_guard<std::mutex> lock(poolMutex);
    l.id = ++launchCount;
    l.slotTaken[0] = true; // The calling thread's.
    self = takeCallerWorker();
    if (usePool) {
      startPool();
      active.push_back(&l);
      numActive.store(unsigned(active.size()), std::memory_order_relaxed);
    }
  }
  if (usePool)
    poolCv.notify_all();

  // The calling thread works on its own launch until no block is left (as
  // do, in a cooperative launch, one more thread per other block).
  auto work = [&](Worker &w, unsigned index) {
    w.launch = &l;
    w.index = index;
    computeWorkerStack(w);
    joinLaunch(w);
    runBlocks(w, /*activeLaunches=*/nullptr);
  };
  std::vector<std::thread> residents;
  if (config.cooperative)
    for (unsigned i = 1; i < blocks; ++i)
      residents.emplace_back([&, i] {
        std::unique_ptr<Worker> w;
        {
          std::lock_guard<std::mutex> lock(poolMutex);
          w = takeCallerWorker();
        }
        work(*w, i);
        w->launch = nullptr;
        std::lock_guard<std::mutex> lock(poolMutex);
        idleCallers.push_back(std::move(w));
      });
  work(*self, 0);
  for (std::thread &t : residents)
    t.join();

  {
    std::unique_lock<std::mutex> lock(poolMutex);
    if (usePool) {
      // No worker joins from now on; wait for those in it to leave.
      llvm::erase(active, &l);
      numActive.store(unsigned(active.size()), std::memory_order_relaxed);
      l.allLeft.wait(lock, [&] { return l.poolParticipants == 0; });
    }
  }
  // A pool worker that left to pick again among several launches may have
  // left blocks in its span, or been moving stolen ones into it when this
  // thread last looked: alone in the launch now, it runs what is left.
  if (usePool)
    runBlocks(*self, /*activeLaunches=*/nullptr);
  self->launch = nullptr;
  {
    std::lock_guard<std::mutex> lock(poolMutex);
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

CpuDevice::CpuDevice() : CpuDevice(Options()) {}
CpuDevice::CpuDevice(Options options)
    : impl(std::make_unique<Impl>(std::move(options))) {}
CpuDevice::~CpuDevice() = default;

DeviceMemory &CpuDevice::memory() { return impl->memory; }
const DeviceLimits &CpuDevice::limits() const { return impl->limits; }

Expected<uint64_t> CpuDevice::createTextureObject(const ResourceDesc &resource,
                                                  const TextureDesc &texture,
                                                  uint64_t domain) {
  return impl->textures.create(impl->memory, false, resource, texture, domain);
}
Expected<uint64_t> CpuDevice::createSurfaceObject(const ResourceDesc &resource,
                                                  uint64_t domain) {
  return impl->textures.create(impl->memory, true, resource, TextureDesc(),
                               domain);
}
Error CpuDevice::destroyTextureObject(uint64_t handle) {
  return impl->textures.destroy(handle, false);
}
Error CpuDevice::destroySurfaceObject(uint64_t handle) {
  return impl->textures.destroy(handle, true);
}

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

uint64_t CpuDevice::releaseDomain(uint64_t domain) {
  return impl->heaps.release(domain);
}

DeviceHeaps &CpuDevice::heaps() { return impl->heaps; }

Error CpuDevice::launch(LoadedModule *module, StringRef kernel,
                        const LaunchConfig &config,
                        llvm::ArrayRef<uint8_t> params) {
  return impl->launch(module, kernel, config, params);
}
