//===- CpuDevice.h - The CPU backend: JIT and SIMT executor -----*- C++ -*-===//
//
// Runs kernels compiled for the `host` target with GPU semantics. Blocks are
// spread over a pool of worker threads. Within a block, a kernel that never
// synchronises runs its threads one after another on the worker's stack; a
// kernel that reaches a barrier, a warp collective or `nanosleep` runs each
// GPU thread as a fiber, and a deterministic scheduler on the worker resumes
// fibers until all are blocked, then completes the barriers and warp
// collectives whose participants have all arrived (32-lane warps,
// `%laneid = tid % 32` over the linearised thread index).
//
// Errors (bad launch configuration, out-of-bounds access, `trap`, deadlock)
// are returned from `launch`; the device stays usable.
//
// The device is thread-safe. Launches from several threads run concurrently
// and share the pool: each calling thread runs blocks of its own launch, and
// the pool's workers spread over the launches in progress, so a long kernel
// does not hold up a short one. Modules may be loaded and unloaded meanwhile
// (not one whose kernel is running).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_RUNTIME_CPU_CPUDEVICE_H
#define WOOLY_RUNTIME_CPU_CPUDEVICE_H

#include "Wooly/Compiler/CompiledModule.h"
#include "Wooly/Runtime/Backend.h"
#include "Wooly/Runtime/CPU/DeviceHeap.h"
#include "Wooly/Runtime/CPU/DeviceMemory.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>

namespace wooly::cpu {

/// Grid, block and dynamic shared memory of a launch (wooly::LaunchConfig,
/// shared by all backends; see Wooly/Runtime/Backend.h).
using wooly::LaunchConfig;

/// A module loaded into a device (opaque).
class LoadedModule;

/// The device limits the CPU backend enforces (those of an sm_90 GPU).
struct DeviceLimits {
  uint32_t maxThreadsPerBlock = 1024;
  std::array<uint32_t, 3> maxBlockDim{1024, 1024, 64};
  std::array<uint32_t, 3> maxGridDim{0x7fffffffu, 65535, 65535};
  uint32_t maxSharedBytesPerBlock = 227 * 1024;
  /// Blocks of a cooperative launch, which all run at once (one thread
  /// each).
  uint32_t maxCooperativeBlocks = 64;
};

/// The CPU backend device: memory, loaded modules, launches.
class CpuDevice {
public:
  struct Options {
    /// Worker threads a launch may use, the calling thread included (0: one
    /// per hardware thread); the pool has one fewer.
    unsigned workers = 0;
    /// Receives device-side printf output (default: stdout).
    std::function<void(llvm::StringRef)> printfSink;
    /// Stack size of each GPU thread when it runs as a fiber.
    size_t fiberStackBytes = 128 * 1024;
    /// Run a kernel that synchronises region by region where the compiler
    /// split it (KernelInfo::regionSymbol), else as fibers; false: always
    /// as fibers (e.g. to compare the two).
    bool regions = true;
    /// In region mode, run whole warps at once where the compiler built a
    /// warp function (KernelInfo::warpSymbol); false: thread by thread.
    bool warps = true;
    /// Bytes of each memory domain's device heap (device-side malloc;
    /// CUDA's default cudaLimitMallocHeapSize).
    uint64_t deviceHeapBytes = 8u << 20;
  };

  CpuDevice();
  explicit CpuDevice(Options options);
  ~CpuDevice();
  CpuDevice(const CpuDevice &) = delete;
  CpuDevice &operator=(const CpuDevice &) = delete;

  DeviceMemory &memory();
  const DeviceLimits &limits() const;

  /// Links a compiled `host` module into the JIT and registers its globals.
  llvm::Expected<LoadedModule *>
  loadModule(std::shared_ptr<const CompiledModule> module);
  /// Adds the kernels of `part` to a loaded module: `part` is the same
  /// source compiled for other kernels (CompileOptions::kernels). Its
  /// module variables are the loaded module's own (one instance for all
  /// parts). Safe while other threads launch the module's kernels. Errors:
  /// a kernel already loaded, a module of another target.
  llvm::Error extendModule(LoadedModule *module,
                           std::shared_ptr<const CompiledModule> part);
  /// Removes a module; its globals stop being valid memory.
  llvm::Error unloadModule(LoadedModule *module);
  /// Puts the module variables of `module`, present and future (parts
  /// added later), in memory domain `domain` (LaunchConfig::memoryDomains).
  void setModuleDomain(LoadedModule *module, uint64_t domain);
  /// Frees what the device keeps for memory domain `domain` (its device
  /// heap) once no launch of it runs any more: its session ended. Returns
  /// the bytes freed.
  uint64_t releaseDomain(uint64_t domain);
  /// The device heaps (device-side malloc and free).
  DeviceHeaps &heaps();
  /// The compiled module behind a loaded one (its first part).
  const CompiledModule &compiled(const LoadedModule *module) const;

  /// Creates a texture object (cudaCreateTextureObject) over `resource`,
  /// whose texels must lie in one allocation of memory domain `domain` (any
  /// for 0); kernels of another domain cannot use it. Returns its handle.
  llvm::Expected<uint64_t> createTextureObject(const ResourceDesc &resource,
                                               const TextureDesc &texture,
                                               uint64_t domain = 0);
  /// Creates a surface object (cudaCreateSurfaceObject) over a CUDA array,
  /// as `createTextureObject`.
  llvm::Expected<uint64_t> createSurfaceObject(const ResourceDesc &resource,
                                               uint64_t domain = 0);
  /// Destroys a texture object; a kernel that uses it afterwards faults.
  llvm::Error destroyTextureObject(uint64_t handle);
  /// Destroys a surface object.
  llvm::Error destroySurfaceObject(uint64_t handle);

  /// Device address and size of a module's `.global`/`.const` variable.
  llvm::Expected<std::pair<uint64_t, uint64_t>>
  globalAddress(LoadedModule *module, llvm::StringRef name);

  /// Runs `kernel` to completion. `params` is the CUDA parameter buffer
  /// (see `KernelInfo::paramOffsets`); its size must match the kernel's.
  /// May be called from several threads at once; a kernel's fault is
  /// returned by its own launch only.
  llvm::Error launch(LoadedModule *module, llvm::StringRef kernel,
                     const LaunchConfig &config,
                     llvm::ArrayRef<uint8_t> params);

  class Impl;

private:
  std::unique_ptr<Impl> impl;
};

} // namespace wooly::cpu

#endif // WOOLY_RUNTIME_CPU_CPUDEVICE_H
