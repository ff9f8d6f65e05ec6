//===- Backend.h - One interface over the execution backends ---*- C++ -*-===//
//
// A `Backend` is a device that runs kernels: memory, loaded modules and
// launches, behind one interface, so that tools (wooly-run,
// wooly-conformance) and the server pick a backend by name instead of
// special-casing each one. `createBackend` builds one:
//
//   - `cpu`: the embedded CPU backend (wooly::cpu::CpuDevice); it runs the
//     module compiled for the `host` target.
//   - `cuda`: an NVIDIA GPU through the CUDA driver (wooly::cuda::CudaDevice).
//     It runs the PTX that Wooly generated when the module was compiled for
//     an `sm_XX` target (the recompiled kernels, with any Wooly passes), and
//     the ORIGINAL PTX otherwise (a `host` compilation then only supplies
//     the kernels' parameter layouts, KernelInfo).
//   - `remote`: a session of a running wooly-serve (lib/Runtime/Remote.cpp):
//     the original PTX is sent to the server, which compiles it; launches
//     are synchronous (a launch, then a stream synchronisation). After a
//     kernel fault (sticky for a session) the backend opens a new session.
//
// Every backend takes the CUDA parameter buffer of a kernel (the layout of
// `KernelInfo::paramOffsets/paramSizes`), and every launch is synchronous:
// an error of the kernel is reported by the launch that caused it.
//
// This header is light (no Compiler or backend headers), so the backends'
// own headers include it for `LaunchConfig`.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_RUNTIME_BACKEND_H
#define WOOLY_RUNTIME_BACKEND_H

#include "Wooly/Runtime/Texture.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wooly {

struct CompiledModule;

/// Grid, block and dynamic shared memory of a launch (shared by all
/// backends).
struct LaunchConfig {
  /// Blocks of the grid in x, y, z.
  std::array<uint32_t, 3> grid{1, 1, 1};
  /// Threads of a block in x, y, z.
  std::array<uint32_t, 3> block{1, 1, 1};
  /// Bytes of dynamic shared memory per block.
  uint32_t dynamicSharedBytes = 0;
  /// cpu: receives this launch's device printf output (empty: the
  /// backend's `BackendOptions::printfSink`). Called from worker threads.
  std::function<void(llvm::StringRef)> printfSink;
  /// Independent parts of the launch (a coalesced launch's parts), each
  /// given by the linear index of its first block: ascending, the first 0.
  /// A fault ends only its part, whose other blocks are skipped, while the
  /// other parts run to their end; the launch then fails with a
  /// FaultDomainsError naming each part that faulted. Any other error of
  /// such a launch means that no block ran (callers may then run the parts
  /// alone). Empty: the launch is one part. Only where
  /// `Backend::supportsFaultDomains` (cpu).
  std::vector<uint64_t> faultDomains;
  /// Memory domains: what the kernel may reach. One entry for the launch,
  /// or one per fault domain; an entry 0 (or none at all) is unrestricted.
  /// A restricted part reaches only allocations and module variables of
  /// its domain, and `allowedRanges`; any other address is out of bounds
  /// for it, as on a device of its own (cpu: the bounds checks, printf
  /// and matrix accesses; elsewhere ignored).
  std::vector<uint64_t> memoryDomains;
  /// Ranges (address, bytes) outside its domain that every part of the
  /// launch may reach: the launch's own status record, slice counter and
  /// preemption flag, a fused launch's table.
  std::vector<std::pair<uint64_t, uint64_t>> allowedRanges;
  /// The same, for reading only (a fused launch's table: its dispatch code
  /// reads it; no part may rewrite it).
  std::vector<std::pair<uint64_t, uint64_t>> readOnlyRanges;
  /// A cooperative launch (cudaLaunchCooperativeKernel): all its blocks are
  /// resident at once, and the kernel gets a grid workspace (`%envreg1:2`)
  /// through which cooperative groups synchronise the whole grid. cpu: up
  /// to `DeviceLimits::maxCooperativeBlocks` blocks; elsewhere refused.
  bool cooperative = false;
};

/// What a kernel fault was, where a backend can tell (as CUDA's error codes
/// do).
enum class FaultKind {
  /// Any other fault: a wild access, a trap, ...
  Launch,
  /// A device-side assert failed (CUDA's `__assertfail`).
  Assert,
  /// A load, store or atomic at an address not a multiple of its size.
  MisalignedAddress,
  /// An access to memory the kernel may not reach (out of bounds, another
  /// tenant's).
  IllegalAddress,
};

/// A launch that ended with a kernel fault of a known kind (other faults
/// are plain string errors).
class KernelFaultError : public llvm::ErrorInfo<KernelFaultError> {
public:
  static inline char ID = 0;
  KernelFaultError(FaultKind kind, std::string message)
      : faultKind(kind), text(std::move(message)) {}
  FaultKind kind() const { return faultKind; }
  void log(llvm::raw_ostream &os) const override { os << text; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

private:
  FaultKind faultKind;
  std::string text;
};

/// The error of a launch with fault domains (LaunchConfig::faultDomains)
/// in which some domains faulted and the others ran to their end.
class FaultDomainsError : public llvm::ErrorInfo<FaultDomainsError> {
public:
  static inline char ID = 0;
  /// Each faulted domain's index and first error, in domain order, and
  /// the kind of each (none: FaultKind::Launch).
  explicit FaultDomainsError(std::vector<std::pair<size_t, std::string>> faults,
                             std::vector<FaultKind> kinds = {})
      : faultList(std::move(faults)), kindList(std::move(kinds)) {}
  const std::vector<std::pair<size_t, std::string>> &faults() const {
    return faultList;
  }
  /// The kind of `faults()[i]`.
  FaultKind kind(size_t i) const {
    return i < kindList.size() ? kindList[i] : FaultKind::Launch;
  }
  void log(llvm::raw_ostream &os) const override {
    for (size_t i = 0; i < faultList.size(); ++i)
      os << (i ? "; " : "") << "part " << faultList[i].first << ": "
         << faultList[i].second;
  }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

private:
  std::vector<std::pair<size_t, std::string>> faultList;
  std::vector<FaultKind> kindList;
};

/// A module loaded into a Backend (opaque; owned by the backend that
/// loaded it, valid until `Backend::unloadModule` or the backend's end).
class BackendModule;

/// How `createBackend` sets a backend up. Each backend reads the fields
/// that concern it and ignores the others.
struct BackendOptions {
  /// cpu: worker threads for blocks (0: one per hardware thread).
  unsigned cpuWorkers = 0;
  /// cpu: run kernels the compiler split into regions region by region
  /// (false: as fibers; CpuDevice::Options::regions).
  bool cpuRegions = true;
  /// CpuDevice::Options::warps.
  bool cpuWarps = true;
  /// cpu: receives device-side printf output (empty: stdout). The cuda
  /// backend's printf output is written by the driver, to stdout.
  std::function<void(llvm::StringRef)> printfSink;
  /// cuda: the ordinal of the GPU to open.
  int cudaOrdinal = 0;
  /// cuda: the driver library to load, a path or a soname (empty: the
  /// default, libcuda.so.1; another one is for tests).
  std::string cudaDriverLibrary;
  /// cuda: allocate with the virtual memory management API, so that
  /// memory can move out and back at the same address (supportsSwap);
  /// allocations and frees then synchronise with the device.
  bool cudaVirtualMemory = false;
  /// remote: the wooly-serve endpoint (empty: WOOLY_SERVER, else the
  /// clients' default); the tenant and token come from WOOLY_TENANT and
  /// WOOLY_TOKEN.
  std::string server;
};

/// A device that runs kernels. Thread safety depends on the backend:
///   - cpu: every call may come from any thread, concurrently with the
///     others; launches from different threads run at the same time,
///     sharing the backend's workers, and launches from one thread run one
///     after another. Unloading a module while one of its kernels runs, or
///     freeing memory a running kernel uses, is the caller's error.
///   - cuda: every call may come from any thread, concurrently with the
///     others; each calling thread has its own stream, so launches from
///     different threads run on the GPU at the same time (one context), and
///     each call returns when its own work is done.
class Backend {
public:
  virtual ~Backend();

  /// The backend's kind, as `createBackend` takes it ("cpu", "cuda").
  virtual llvm::StringRef kind() const = 0;
  /// A description of the device for people: "cpu (2 workers)", or the
  /// GPU's name (e.g. "NVIDIA H100 80GB HBM3").
  virtual std::string name() const = 0;
  /// The units that run blocks: worker threads (cpu), streaming
  /// multiprocessors (cuda).
  virtual unsigned computeUnits() const = 0;
  /// The most blocks a cooperative launch (LaunchConfig::cooperative) may
  /// have; 0 where the backend has none.
  virtual unsigned maxCooperativeBlocks() const { return 0; }
  /// The compile target whose modules the backend runs as Wooly compiled
  /// them: "host" (cpu), "sm_90" for a GPU of compute capability 9.0
  /// (cuda).
  virtual std::string nativeTarget() const { return "host"; }
  /// Whether launches from different threads run at the same time.
  virtual bool concurrentLaunches() const { return false; }
  /// The device memory free now, where the device has a fixed memory of
  /// its own (cuda: cuMemGetInfo); none for the cpu backend, whose device
  /// memory is the host's, sized by the caller.
  virtual std::optional<uint64_t> freeDeviceMemory() { return std::nullopt; }
  /// Whether launches take fault domains (LaunchConfig::faultDomains).
  virtual bool supportsFaultDomains() const { return false; }

  /// Allocates `bytes` of zero-filled device memory; returns its device
  /// address.
  virtual llvm::Expected<uint64_t> allocate(uint64_t bytes) = 0;
  /// The same in memory domain `domain` (a tenant session's: see
  /// LaunchConfig::memoryDomains); where the backend has no domains, a
  /// plain allocation.
  virtual llvm::Expected<uint64_t> allocateIn(uint64_t bytes, uint64_t domain) {
    return allocate(bytes);
  }
  /// Puts the module variables of `module` (those loaded so far and those
  /// its later parts add) in memory domain `domain`. No-op without domains.
  virtual void setModuleDomain(BackendModule *module, uint64_t domain) {}
  /// Frees what the backend keeps for memory domain `domain` itself (cpu:
  /// its device heap), once its session ended and none of its launches
  /// runs; returns the bytes freed. No-op without domains.
  virtual uint64_t releaseMemoryDomain(uint64_t domain) { return 0; }
  /// Makes memory domain `domain`'s device heap (device-side malloc)
  /// `bytes` long: cudaLimitMallocHeapSize. Errors: a kernel of the domain
  /// has allocated from the heap already (CUDA's rule), or the backend has
  /// no heap per domain (the default: cuda's heap is the context's, shared
  /// by every tenant).
  virtual llvm::Error setHeapSize(uint64_t domain, uint64_t bytes);
  /// Whether each memory domain has a device heap of its own, whose size
  /// setHeapSize sets (cpu); else the heap is the device's, every tenant's.
  virtual bool hasDomainHeaps() const { return false; }
  /// Frees an allocation; `addr` must be an address `allocate` returned.
  /// A swapped-out allocation may be freed too.
  virtual llvm::Error free(uint64_t addr) = 0;
  /// Whether allocations can move out of device memory and back at the
  /// same address (`swapOut`, `swapIn`): cpu (reserved address ranges
  /// whose pages are mapped in and out), cuda with
  /// BackendOptions::cudaVirtualMemory (reserved ranges, physical memory
  /// mapped in and out; its bytes copied to host memory and back).
  virtual bool supportsSwap() const { return false; }
  /// Moves the allocation at `addr` (a base `allocate` returned) out of
  /// device memory into host memory; its address range stays reserved.
  /// Until `swapIn`, copies and memsets that touch it fail, and a kernel
  /// must not touch it. On error nothing changed.
  virtual llvm::Error swapOut(uint64_t addr);
  /// Brings a swapped-out allocation back, at its address, with its bytes.
  /// On error it stays swapped out.
  virtual llvm::Error swapIn(uint64_t addr);
  /// Deduplication: whether two allocations of equal bytes can share one
  /// physical copy, each at its own address (`share`, `unshare`): cpu
  /// (memfd pages mapped read-only at both addresses), cuda with
  /// BackendOptions::cudaVirtualMemory (one cuMemCreate allocation mapped
  /// read-only at both addresses); not cuda without it.
  virtual bool supportsSharing() const { return false; }
  /// Whether `share(addr, ...)` and `unshare(addr)` leave `addr` unmapped
  /// for a moment, so that no kernel may use that allocation meanwhile
  /// (cuda: cuMemUnmap, then cuMemMap). false: the mapping is replaced in
  /// one step, safe while kernels read it (cpu). `with` of `share` is never
  /// remapped, only made read-only.
  virtual bool sharingRemaps() const { return false; }
  /// Makes the allocation at `addr` map the memory of `with` (same size,
  /// bytes the caller found equal) instead of its own, read-only for
  /// both: copies and memsets into either fail until `unshare`. Neither
  /// may be swapped out while shared. On error nothing changed.
  virtual llvm::Error share(uint64_t addr, uint64_t with);
  /// Gives a shared allocation a private, writable copy of its bytes at
  /// its address (copy on write). On error it stays shared.
  virtual llvm::Error unshare(uint64_t addr);
  /// A 64-bit content hash of `bytes` of device memory at `addr`: XXH3 of
  /// each 1 MiB chunk, then of those hashes (the same bytes give the same
  /// hash on every backend). The default reads the memory back in chunks.
  virtual llvm::Expected<uint64_t> contentHash(uint64_t addr, uint64_t bytes);
  /// Whether `bytes` of device memory at `a` and at `b` are equal. The
  /// default reads both back in chunks.
  virtual llvm::Expected<bool> sameBytes(uint64_t a, uint64_t b,
                                         uint64_t bytes);
  /// Copies `bytes` from host memory at `src` to device address `dst`.
  virtual llvm::Error copyToDevice(uint64_t dst, const void *src,
                                   uint64_t bytes) = 0;
  /// Copies `bytes` from device address `src` to host memory at `dst`.
  virtual llvm::Error copyFromDevice(void *dst, uint64_t src,
                                     uint64_t bytes) = 0;
  /// Copies `bytes` of device memory from `src` to `dst` (the ranges may
  /// overlap). The default goes through host memory in chunks.
  virtual llvm::Error copyDeviceToDevice(uint64_t dst, uint64_t src,
                                         uint64_t bytes);
  /// Sets `bytes` of device memory at `dst` to `value`.
  virtual llvm::Error memset(uint64_t dst, uint8_t value, uint64_t bytes) = 0;

  /// Creates a texture object (the runtime side of cudaCreateTextureObject)
  /// whose texels (`resource`; a CUDA array is an allocation laid out as
  /// Texture.h says) lie in one allocation of memory domain `domain` (any
  /// for 0): only kernels of that domain may use it. Returns its handle, a
  /// kernel's `cudaTextureObject_t`. Where unsupported, an error.
  virtual llvm::Expected<uint64_t>
  createTextureObject(const ResourceDesc &resource, const TextureDesc &texture,
                      uint64_t domain = 0);
  /// The same for a surface object over a CUDA array
  /// (cudaCreateSurfaceObject).
  virtual llvm::Expected<uint64_t>
  createSurfaceObject(const ResourceDesc &resource, uint64_t domain = 0);
  /// Destroys a texture object.
  virtual llvm::Error destroyTextureObject(uint64_t handle);
  /// Destroys a surface object.
  virtual llvm::Error destroySurfaceObject(uint64_t handle);

  /// Loads a module. `compiled` is the compiled module, `ptxText` the PTX
  /// it was compiled from (empty if there is none, e.g. for a Wooly file).
  /// The cpu backend runs `compiled`, which must target `host`. The cuda
  /// backend JIT-compiles PTX with the driver: `compiled->binary` when
  /// `compiled` targets `sm_XX`, else `ptxText` (then `compiled`, which may
  /// be null, only gives the kernels' parameter layouts). The module stays
  /// owned by the backend.
  virtual llvm::Expected<BackendModule *>
  loadModule(std::shared_ptr<const CompiledModule> compiled,
             llvm::StringRef ptxText) = 0;
  /// Whether `extendModule` works (cpu: yes; cuda: no, a module is loaded
  /// whole).
  virtual bool canExtendModules() const { return false; }
  /// Adds the kernels of `part` (the same source compiled for other
  /// kernels, CompileOptions::kernels) to a loaded module; its module
  /// variables stay the module's own. Errors where unsupported.
  virtual llvm::Error extendModule(BackendModule *module,
                                   std::shared_ptr<const CompiledModule> part);
  /// Unloads a module returned by `loadModule`; the handle becomes invalid.
  virtual llvm::Error unloadModule(BackendModule *module) = 0;

  /// The device address and size of the `.global`/`.const` variable `name`
  /// of `module` (a module variable, `__device__`/`__constant__`).
  virtual llvm::Expected<std::pair<uint64_t, uint64_t>>
  globalAddress(BackendModule *module, llvm::StringRef name) = 0;

  /// Binds the texture or surface reference `name` of `module` (a PTX
  /// `.texref`/`.surfref`, which the importer makes a 64-bit module
  /// variable) to the texture or surface object `handle`: writes the handle
  /// into the variable, so that the launches after this one use it.
  llvm::Error bindReference(BackendModule *module, llvm::StringRef name,
                            uint64_t handle);

  /// Runs kernel `kernelName` of `module` to completion. `params` is the
  /// CUDA parameter buffer (see `KernelInfo::paramOffsets`).
  virtual llvm::Error launch(BackendModule *module, llvm::StringRef kernelName,
                             const LaunchConfig &config,
                             llvm::ArrayRef<uint8_t> params) = 0;
  /// The device's own measure of the last successful launch in
  /// milliseconds (the cuda backend: CUDA events around the kernel, without
  /// the launch overhead); none where the backend has no such measure (the
  /// cpu backend: a launch's wall time is its time).
  virtual std::optional<double> lastKernelMs() const { return std::nullopt; }

  /// Why the device is lost for good, when it is: on a GPU, the first error
  /// that the driver makes sticky for the whole context (a kernel's illegal
  /// address, trap, misaligned access, ...), after which every operation of
  /// every user fails until the process starts a new context. nullopt while
  /// the device works (always, on the cpu backend: it contains faults).
  virtual std::optional<std::string> lostReason() const { return std::nullopt; }
};

/// The content hash `Backend::contentHash` defines, of `bytes` bytes that
/// `chunk(offset, n)` returns a chunk at a time (valid until the next call).
uint64_t contentHashOf(
    uint64_t bytes,
    llvm::function_ref<llvm::ArrayRef<uint8_t>(uint64_t offset, uint64_t n)>
        chunk);

/// The names `createBackend` knows, in the order of its error message
/// ("cpu", "cuda").
llvm::ArrayRef<llvm::StringRef> backendNames();

/// Whether the backend `name` runs the original PTX text when it is given a
/// `host` compilation (so it cannot run a Wooly .mlir file unless that is
/// compiled for `sm_XX`); false for an unknown name.
bool backendRunsOriginalPTX(llvm::StringRef name);

/// Creates the backend `name` ("cpu" or "cuda"). Errors: "unknown backend
/// 'x' (cpu or cuda)", or the backend's own failure to start, unchanged
/// (e.g. "CUDA driver libcuda.so.1 not found (...)", "no CUDA device
/// (...)").
llvm::Expected<std::unique_ptr<Backend>>
createBackend(llvm::StringRef name, const BackendOptions &options = {});

} // namespace wooly

#endif // WOOLY_RUNTIME_BACKEND_H
