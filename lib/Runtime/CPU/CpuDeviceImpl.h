//===- CpuDeviceImpl.h - The state of a CpuDevice ---------------*- C++ -*-===//
//
// Internal to the CPU runtime: `CpuDevice::Impl` and its loaded modules.
// Its members are defined by responsibility: the device and launches in
// CpuDevice.cpp, loading modules into the JIT in Jit.cpp, the worker pool in
// ThreadPool.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_RUNTIME_CPU_CPUDEVICEIMPL_H
#define WOOLY_LIB_RUNTIME_CPU_CPUDEVICEIMPL_H

#include "Executor.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"

#include <shared_mutex>
#include <thread>

namespace wooly::cpu::detail {

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
    /// Region function (`KernelInfo::regionSymbol`), where it has one.
    WoolyKernelFn regionFn = nullptr;
    /// Warp function (`KernelInfo::warpSymbol`), where it has one.
    WoolyWarpFn warpFn = nullptr;
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

} // namespace wooly::cpu::detail

namespace wooly::cpu {

/// The state of a CpuDevice: memory, the JIT and its modules, the pool.
class CpuDevice::Impl {
public:
  /// Installs the stack-overflow handler; sizes the pool.
  explicit Impl(Options options);
  /// Stops and joins the pool; forgets the modules' variables.
  ~Impl();

  /// Creates the JIT on first use.
  llvm::Error ensureJIT();

  /// Runtime entry points and float helpers, bound by name.
  llvm::orc::SymbolMap runtimeSymbols();

  /// CpuDevice::loadModule.
  llvm::Expected<LoadedModule *> load(std::shared_ptr<const CompiledModule> m);

  /// CpuDevice::extendModule.
  llvm::Error extend(LoadedModule *handle,
                     std::shared_ptr<const CompiledModule> m);

  /// Links `m` into `impl`'s JITDylib and makes its kernels and variables
  /// known. Called with `deviceMutex` held.
  llvm::Error addPart(detail::LoadedModuleImpl &impl,
                      std::shared_ptr<const CompiledModule> m);

  /// Forgets the module variables of `m` in device memory.
  void unregisterGlobals(detail::LoadedModuleImpl &m);
  void writePerfMap(llvm::orc::JITDylib &dylib, llvm::StringRef binary);

  /// CpuDevice::unloadModule.
  llvm::Error unload(LoadedModule *handle);

  /// CpuDevice::launch: checks the configuration, then runs the blocks
  /// on the calling thread and the pool.
  llvm::Error launch(LoadedModule *handle, llvm::StringRef kernelName,
                     const LaunchConfig &config,
                     llvm::ArrayRef<uint8_t> params);

  /// A worker for a thread in `launch`: an idle one from an earlier launch
  /// (its buffers already grown), else a new one. Called under `poolMutex`.
  std::unique_ptr<detail::Worker> takeCallerWorker();

  /// Starts the pool threads (all but one of `maxWorkers`: the calling
  /// thread is the other) if not yet done. Called under `poolMutex`.
  void startPool();

  /// The active launch a pool worker should join: one with blocks left and
  /// room for another worker, the fewest pool workers on it first (the
  /// earliest of equals). Called under `poolMutex`.
  detail::LaunchState *pickLaunch();

  /// A pool thread: joins active launches and runs their blocks until the
  /// device is destroyed.
  void poolLoop(detail::Worker &w);

  Options options;
  DeviceLimits limits;
  DeviceMemory memory;
  /// CUDA's device heap, one per memory domain (destroyed before `memory`).
  DeviceHeaps heaps{memory, options.deviceHeapBytes};
  /// Texture and surface objects (Texture.cpp).
  detail::TextureTable textures;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<std::unique_ptr<detail::LoadedModuleImpl>> modules;
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
  std::vector<std::unique_ptr<detail::Worker>> poolWorkers;
  std::vector<std::thread> threads;
  /// Launches that pool workers may join, in the order they started.
  std::vector<detail::LaunchState *> active;
  /// `active.size()`, read by pool workers between blocks without the lock.
  std::atomic<unsigned> numActive{0};
  /// Workers of the threads in `launch`, kept for the next launches.
  std::vector<std::unique_ptr<detail::Worker>> idleCallers;
  uint64_t launchCount = 0;
  bool stopping = false;
};

} // namespace wooly::cpu

#endif // WOOLY_LIB_RUNTIME_CPU_CPUDEVICEIMPL_H
