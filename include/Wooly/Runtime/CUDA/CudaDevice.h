//===- CudaDevice.h - Run original PTX on an NVIDIA GPU ---------*- C++ -*-===//
//
// The `cuda` backend: runs the ORIGINAL PTX natively on an NVIDIA GPU through
// the CUDA driver API. The driver (libcuda.so.1) is loaded at run time with
// dlopen, so building Wooly needs neither the driver nor the CUDA headers;
// the few types and entry points used are declared in CudaDevice.cpp.
//
// The device works in the primary context of its GPU. It may be used from
// any thread, several at once: each calling thread gets its own
// non-blocking stream (made at its first call), on which its launches,
// copies and memsets are issued and then waited for. So every call is
// synchronous for its caller (an error of a kernel is reported by the
// launch that caused it, naming the kernel), and launches of different
// threads run on the GPU at the same time (one context, as MPS would, with
// none of the threads waiting for another's work).
//
// The kernel's parameter buffer has CUDA's layout, the one that
// `KernelInfo::paramOffsets/paramSizes` describe (compile the PTX for the
// host to get them); it is passed with CU_LAUNCH_PARAM_BUFFER_POINTER.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_RUNTIME_CUDA_CUDADEVICE_H
#define WOOLY_RUNTIME_CUDA_CUDADEVICE_H

#include "Wooly/Runtime/Backend.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace wooly::cuda {

/// A PTX module loaded into a CudaDevice (opaque; owned by the device).
class CudaModule;

/// Grid, block and dynamic shared memory of a launch (wooly::LaunchConfig,
/// shared by all backends; see Wooly/Runtime/Backend.h).
using CudaLaunchConfig = wooly::LaunchConfig;

/// One NVIDIA GPU, driven through the CUDA driver API.
class CudaDevice {
public:
  /// The driver library that `open(int)` loads.
  static constexpr const char *defaultDriverLibrary = "libcuda.so.1";

  /// Loads the driver, initialises it and opens GPU `ordinal` (its primary
  /// context, made current on this thread). Errors: "CUDA driver
  /// libcuda.so.1 not found (...)", "no CUDA device (...)", a missing entry
  /// point, or the driver's error name and text.
  static llvm::Expected<std::unique_ptr<CudaDevice>> open(int ordinal = 0);
  /// The same with another driver library (a path or a soname; for tests).
  static llvm::Expected<std::unique_ptr<CudaDevice>>
  open(int ordinal, llvm::StringRef driverLibrary);

  ~CudaDevice();
  CudaDevice(const CudaDevice &) = delete;
  CudaDevice &operator=(const CudaDevice &) = delete;

  /// The GPU's name (cuDeviceGetName), e.g. "NVIDIA H100 80GB HBM3".
  const std::string &name() const;
  /// The GPU's ordinal.
  int ordinal() const;
  /// The GPU's streaming multiprocessors (CU_DEVICE_ATTRIBUTE_
  /// MULTIPROCESSOR_COUNT).
  unsigned multiprocessorCount() const;
  /// The GPU's compute capability, e.g. {9, 0} for an H100.
  std::pair<int, int> computeCapability() const;
  /// The device memory free and in all (cuMemGetInfo); none where the
  /// driver does not say.
  std::optional<std::pair<uint64_t, uint64_t>> memoryInfo();
  /// Makes the device's context current on the calling thread (the device
  /// is used from a thread other than the one that opened it; cheap to
  /// repeat).
  llvm::Error makeCurrent();

  /// Device memory (cuMemAlloc); addresses are CUdeviceptr values. Like the
  /// CPU backend's, a new allocation is zero-filled (a size of 0 gets 1 byte).
  llvm::Expected<uint64_t> allocate(uint64_t bytes);
  /// From now on, allocations are made with the virtual memory management
  /// API: each a reserved address range of whole granules with physical
  /// memory mapped in (cuMemAddressReserve, cuMemCreate, cuMemMap,
  /// cuMemSetAccess), so that `swapOut` can move it to host memory and
  /// `swapIn` bring it back at the same address. Call it before the first
  /// allocation. Errors: the driver lacks the entry points, the GPU does
  /// not support it. Allocations and frees then synchronise with the
  /// device (cuMemUnmap does).
  llvm::Error enableVirtualMemory();
  bool virtualMemory() const;
  /// Copies an allocation's bytes to host memory and releases its physical
  /// memory (the address range stays reserved); on error nothing changed.
  /// The copies of `swapOut` and `swapIn` do not hold the device's lock:
  /// other threads' calls on other memory go on meanwhile (a free, swap or
  /// share of this allocation is refused until it ends).
  llvm::Error swapOut(uint64_t addr);
  /// Maps new physical memory at a swapped-out allocation's address and
  /// copies its bytes back; on error it stays swapped out.
  llvm::Error swapIn(uint64_t addr);
  /// Deduplication (virtual memory management only): the allocation at
  /// `addr` maps the physical memory of `with` (same size, bytes the
  /// caller found equal) at its own address instead of its own memory,
  /// which is released; both become read-only (CU_MEM_ACCESS_FLAGS_PROT_
  /// READ): copies and memsets into either fail, and neither can be
  /// swapped out, until `unshare`. `with` is not remapped (only its access
  /// changes); `addr` is unmapped for a moment, so no kernel may use it
  /// meanwhile. On error nothing changed.
  llvm::Error share(uint64_t addr, uint64_t with);
  /// Gives a shared allocation new physical memory with a copy of its
  /// bytes, mapped at its address (unmapped for a moment: no kernel may
  /// use it meanwhile), writable. The last member left of a copy gets the
  /// copy's memory as its own, made writable in place. On error it stays
  /// shared.
  llvm::Error unshare(uint64_t addr);
  /// Frees an allocation (the physical memory of a shared one stays with
  /// the others that map it).
  llvm::Error free(uint64_t addr);
  /// Copies and memsets into a shared allocation (`share`) fail.
  llvm::Error copyToDevice(uint64_t dst, const void *src, uint64_t bytes);
  llvm::Error copyFromDevice(void *dst, uint64_t src, uint64_t bytes);
  /// Copies device memory; overlapping ranges give memmove's result.
  llvm::Error copyDeviceToDevice(uint64_t dst, uint64_t src, uint64_t bytes);
  llvm::Error memset(uint64_t dst, uint8_t value, uint64_t bytes);

  /// JIT-compiles PTX text with the driver (cuModuleLoadDataEx). A PTX the
  /// driver rejects gives an error with ptxas's log.
  llvm::Expected<CudaModule *> loadPTX(llvm::StringRef ptx);
  /// Unloads a module returned by loadPTX.
  llvm::Error unloadModule(CudaModule *module);
  /// The device address and size of module variable `name`
  /// (cuModuleGetGlobal).
  llvm::Expected<std::pair<uint64_t, uint64_t>>
  globalAddress(CudaModule *module, llvm::StringRef name);

  /// Runs `kernel` of `module` to completion, on the calling thread's
  /// stream. `params` is the CUDA
  /// parameter buffer; `paramOffsets`/`paramSizes` (optional, e.g. from
  /// KernelInfo) are checked to lie inside it.
  llvm::Error launch(CudaModule *module, llvm::StringRef kernel,
                     const CudaLaunchConfig &config,
                     llvm::ArrayRef<uint8_t> params,
                     llvm::ArrayRef<uint64_t> paramOffsets = {},
                     llvm::ArrayRef<uint64_t> paramSizes = {});
  /// The GPU time of the calling thread's last successful launch in
  /// milliseconds, from CUDA events recorded around it on its stream (about
  /// 0.5 us resolution); none when the driver lacks events or the launch
  /// failed.
  std::optional<double> lastKernelMs() const;
  /// The first error that CUDA made sticky for the whole context (a
  /// kernel's illegal address, trap, ...): every later call fails. nullopt
  /// while the context works.
  std::optional<std::string> lostReason() const;

  class Impl;

private:
  explicit CudaDevice(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace wooly::cuda

#endif // WOOLY_RUNTIME_CUDA_CUDADEVICE_H
