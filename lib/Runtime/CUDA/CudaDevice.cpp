//===- CudaDevice.cpp - Run original PTX on an NVIDIA GPU -------*- C++ -*-===//
//
// The CUDA driver API, loaded with dlopen. Only the types, enum values and
// entry points used here are declared (from the driver API's documented
// ABI); cuda.h is not needed.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Runtime/CUDA/CudaDevice.h"
#include "Wooly/Runtime/Backend.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"

#include <dlfcn.h>

#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

using namespace wooly::cuda;
using llvm::StringRef;

namespace {
// The driver API's ABI, as far as it is used.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long; // The _v2 entry points' pointer type.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUstream = CUstream_st *;
struct CUevent_st;
using CUevent = CUevent_st *;
using CUjit_option = int;
using CUfunction_attribute = int;

// The virtual memory management API (cuMemAddressReserve, cuMemCreate,
// cuMemMap, ...).
using CUmemGenericAllocationHandle = unsigned long long;
struct CUmemLocation {
  int type; // CU_MEM_LOCATION_TYPE_DEVICE
  int id;   // the device ordinal
};
struct CUmemAllocationProp {
  int type;                 // CU_MEM_ALLOCATION_TYPE_PINNED
  int requestedHandleTypes; // none
  CUmemLocation location;
  void *win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};
struct CUmemAccessDesc {
  CUmemLocation location;
  int flags; // CU_MEM_ACCESS_FLAGS_PROT_*
};
constexpr int CU_MEM_LOCATION_TYPE_DEVICE = 1;
constexpr int CU_MEM_ALLOCATION_TYPE_PINNED = 1;
constexpr int CU_MEM_ACCESS_FLAGS_PROT_READ = 1;
constexpr int CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3;
constexpr int CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
// The errors that CUDA makes sticky for the whole context.
constexpr CUresult CUDA_ERROR_ECC_UNCORRECTABLE = 214;
constexpr CUresult CUDA_ERROR_ILLEGAL_ADDRESS = 700;
constexpr CUresult CUDA_ERROR_LAUNCH_TIMEOUT = 702;
constexpr CUresult CUDA_ERROR_ASSERT = 710;
constexpr CUresult CUDA_ERROR_HARDWARE_STACK_ERROR = 714;
constexpr CUresult CUDA_ERROR_ILLEGAL_INSTRUCTION = 715;
constexpr CUresult CUDA_ERROR_MISALIGNED_ADDRESS = 716;
constexpr CUresult CUDA_ERROR_INVALID_ADDRESS_SPACE = 717;
constexpr CUresult CUDA_ERROR_INVALID_PC = 718;
constexpr CUresult CUDA_ERROR_LAUNCH_FAILED = 719;

// CUjit_option values.
constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER = 3;
constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

// CUdevice_attribute values.
using CUdevice_attribute = int;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115;
constexpr CUdevice_attribute
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102;

// cuStreamCreate flags: a stream that does not synchronise with the legacy
// default stream (so launches of different threads never wait for each
// other implicitly).
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;

// CUfunction_attribute values.
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES =
    8;

// The `extra` argument of cuLaunchKernel.
void *const CU_LAUNCH_PARAM_END = reinterpret_cast<void *>(0x00);
void *const CU_LAUNCH_PARAM_BUFFER_POINTER = reinterpret_cast<void *>(0x01);
void *const CU_LAUNCH_PARAM_BUFFER_SIZE = reinterpret_cast<void *>(0x02);

// Size of the JIT's info and error logs.
constexpr size_t kJitLogBytes = 16 * 1024;

struct DriverApi {
  CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char **) = nullptr;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGetCount)(int *) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDeviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  // The stream-ordered allocator (CUDA 11.2+; optional): unlike cuMemAlloc
  // and cuMemFree it does not wait for the work of other streams.
  CUresult (*cuMemAllocAsync)(CUdeviceptr *, size_t, CUstream) = nullptr;
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream) = nullptr;
  // Optional: the memory the device has free (the server's capacity).
  CUresult (*cuMemGetInfo)(size_t *, size_t *) = nullptr;
  // Optional: virtual memory management (enableVirtualMemory).
  CUresult (*cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
                                  unsigned long long) = nullptr;
  CUresult (*cuMemAddressFree)(CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemCreate)(CUmemGenericAllocationHandle *, size_t,
                          const CUmemAllocationProp *,
                          unsigned long long) = nullptr;
  CUresult (*cuMemRelease)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t,
                       CUmemGenericAllocationHandle,
                       unsigned long long) = nullptr;
  CUresult (*cuMemUnmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *,
                             size_t) = nullptr;
  CUresult (*cuMemGetAllocationGranularity)(size_t *,
                                            const CUmemAllocationProp *,
                                            int) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute,
                                   CUdevice) = nullptr;
  CUresult (*cuStreamCreate)(CUstream *, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t,
                                CUstream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t,
                                CUstream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t,
                                CUstream) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t,
                              CUstream) = nullptr;
  CUresult (*cuModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule,
                                const char *) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned,
                                 CUjit_option *, void **) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule,
                                  const char *) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute,
                                 int) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **) = nullptr;
  // Optional: kernel times (a driver without them gives none).
  CUresult (*cuEventCreate)(CUevent *, unsigned) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent) = nullptr;
};

/// Resolves `fn` from the first of `names` that the library exports.
template <typename Fn>
llvm::Error resolve(void *lib, StringRef library, Fn &fn,
                    std::initializer_list<const char *> names) {
  for (const char *name : names)
    if (void *sym = dlsym(lib, name)) {
      fn = reinterpret_cast<Fn>(sym);
      return llvm::Error::success();
    }
  return llvm::createStringError("CUDA driver " + library +
                                 " lacks the entry point " + *names.begin() +
                                 " (driver too old?)");
}
} // namespace

namespace wooly::cuda {
class CudaModule {
public:
  CUmodule handle = nullptr;
  struct Function {
    CUfunction handle = nullptr;
    /// The dynamic shared memory it may take: 48 KiB without an opt-in
    /// (cuFuncSetAttribute); raised, never lowered (two threads may launch
    /// it at once).
    uint32_t maxDynamicShared = 48 * 1024;
  };
  llvm::StringMap<Function> functions;
};
} // namespace wooly::cuda

namespace {
/// What one calling thread uses: its own stream (non-blocking), on which
/// all of its work is issued and then waited for, and the events that time
/// its kernels.
struct Lane {
  CUstream stream = nullptr;
  CUevent start = nullptr, end = nullptr;
  std::optional<double> lastKernelMs;
};
} // namespace

class CudaDevice::Impl {
public:
  void *library = nullptr;
  std::string libraryName;
  DriverApi api;
  CUdevice device = 0;
  int ordinal = 0;
  CUcontext context = nullptr;
  bool contextRetained = false;
  std::string name;
  int multiprocessors = 0, ccMajor = 0, ccMinor = 0;
  /// Guards `modules`, their function tables and `lanes`.
  mutable std::mutex mutex;
  std::vector<std::unique_ptr<CudaModule>> modules;
  /// One lane per thread that used the device (a thread id that is reused
  /// gets the lane of the thread that ended, which is idle by then).
  std::map<std::thread::id, std::unique_ptr<Lane>> lanes;

  /// Virtual memory management (enableVirtualMemory): each allocation is
  /// a reserved address range of whole granules with physical memory
  /// mapped in (`handle`), or moved out to host memory (`host`).
  /// Deduplication: an allocation in a shared copy (`shared`, an id of
  /// `copies`) maps that copy's physical memory, read-only, instead of
  /// its own (`handle` is then the copy's, which the copy owns).
  bool vmm = false;
  uint64_t granularity = 0;
  struct VirtualBlock {
    uint64_t bytes = 0, rounded = 0;
    CUmemGenericAllocationHandle handle = 0;
    std::unique_ptr<uint8_t[]> host; // set while swapped out
    uint64_t shared = 0;
    /// A swap copies its bytes (without `vmmMutex`).
    bool moving = false;
  };
  /// One physical allocation that several allocations map read-only.
  struct SharedCopy {
    CUmemGenericAllocationHandle handle = 0;
    std::vector<uint64_t> members;
  };
  std::mutex vmmMutex;
  std::map<uint64_t, VirtualBlock> blocks;
  std::map<uint64_t, SharedCopy> copies;
  uint64_t nextCopy = 1;

  CUmemAllocationProp allocationProp() const {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, ordinal};
    return prop;
  }
  /// Sets the device's access to the mapping at `addr`: read and write, or
  /// read only.
  llvm::Error setAccess(uint64_t addr, uint64_t rounded, bool writable) {
    CUmemAccessDesc access{{CU_MEM_LOCATION_TYPE_DEVICE, ordinal},
                           writable ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                    : CU_MEM_ACCESS_FLAGS_PROT_READ};
    return check(api.cuMemSetAccess(CUdeviceptr(addr), rounded, &access, 1),
                 llvm::formatv("cuMemSetAccess at 0x{0:x-}", addr));
  }
  /// Maps physical memory `handle` at `addr` with that access.
  llvm::Error map(uint64_t addr, uint64_t rounded,
                  CUmemGenericAllocationHandle handle, bool writable) {
    if (auto e = check(api.cuMemMap(CUdeviceptr(addr), rounded, 0, handle, 0),
                       llvm::formatv("cuMemMap at 0x{0:x-}", addr)))
      return e;
    llvm::Error e = setAccess(addr, rounded, writable);
    if (e)
      api.cuMemUnmap(CUdeviceptr(addr), rounded);
    return e;
  }
  /// Physical memory for `b` at `addr`, readable and writable.
  llvm::Error mapIn(uint64_t addr, VirtualBlock &b) {
    CUmemAllocationProp prop = allocationProp();
    if (auto e = check(api.cuMemCreate(&b.handle, b.rounded, &prop, 0),
                       llvm::formatv("cuMemCreate of {0} bytes", b.rounded)))
      return e;
    llvm::Error e = map(addr, b.rounded, b.handle, /*writable=*/true);
    if (e) {
      api.cuMemRelease(b.handle);
      b.handle = 0;
    }
    return e;
  }
  /// Unmaps and releases `b`'s physical memory; the range stays reserved.
  llvm::Error mapOut(uint64_t addr, VirtualBlock &b) {
    if (auto e = check(api.cuMemUnmap(CUdeviceptr(addr), b.rounded),
                       llvm::formatv("cuMemUnmap at 0x{0:x-}", addr)))
      return e;
    llvm::Error e = check(api.cuMemRelease(b.handle), "cuMemRelease");
    b.handle = 0;
    return e;
  }
  /// Takes `addr` (unmapped from its shared copy already) out of its copy.
  /// The last member left keeps the copy's memory as its own, made
  /// writable again in place (no remapping: its kernels may be reading
  /// it); where that fails it stays read-only, alone, its bytes intact.
  void leaveCopy(uint64_t addr, VirtualBlock &b) {
    auto it = copies.find(b.shared);
    b.shared = 0;
    b.handle = 0;
    if (it == copies.end())
      return;
    SharedCopy &c = it->second;
    llvm::erase(c.members, addr);
    if (c.members.empty()) {
      api.cuMemRelease(c.handle);
      copies.erase(it);
      return;
    }
    if (c.members.size() > 1)
      return;
    VirtualBlock &last = blocks[c.members.front()];
    if (llvm::Error e = setAccess(c.members.front(), last.rounded, true)) {
      llvm::consumeError(std::move(e));
      return;
    }
    last.shared = 0;
    copies.erase(it);
  }
  /// An error if `[addr, addr + bytes)` touches an allocation whose bytes
  /// are a shared copy (read-only until `unshare`).
  llvm::Error checkWritable(uint64_t addr, uint64_t bytes, const char *what) {
    if (!vmm || bytes == 0)
      return llvm::Error::success();
    std::lock_guard<std::mutex> lock(vmmMutex);
    auto it = blocks.upper_bound(addr);
    if (it != blocks.begin())
      --it;
    for (; it != blocks.end() && it->first < addr + bytes; ++it)
      if (it->second.shared && it->first + it->second.rounded > addr)
        return llvm::createStringError(llvm::formatv(
            "{0} of {1} bytes at device address 0x{2:x-}: the allocation's "
            "bytes are shared read-only with other tenants (deduplicated); "
            "it must be given its own copy first",
            what, bytes, addr));
    return llvm::Error::success();
  }

  ~Impl() {
    if (context)
      api.cuCtxSetCurrent(context);
    for (auto &[id, lane] : lanes) {
      for (CUevent e : {lane->start, lane->end})
        if (e)
          api.cuEventDestroy(e);
      if (lane->stream)
        api.cuStreamDestroy(lane->stream);
    }
    for (auto &m : modules)
      if (m->handle)
        api.cuModuleUnload(m->handle);
    for (auto &[addr, b] : blocks) {
      if (b.handle) {
        api.cuMemUnmap(CUdeviceptr(addr), b.rounded);
        if (!b.shared)
          api.cuMemRelease(b.handle);
      }
      api.cuMemAddressFree(CUdeviceptr(addr), b.rounded);
    }
    for (auto &[id, c] : copies)
      api.cuMemRelease(c.handle);
    if (contextRetained)
      api.cuDevicePrimaryCtxRelease(device);
    // The driver library stays loaded: unloading libcuda is not supported
    // while the process may still hold driver state.
  }

  /// The calling thread's lane, made on its first use (with the context
  /// made current on the thread). Errors: the driver's, creating the
  /// stream.
  llvm::Expected<Lane *> lane() {
    std::lock_guard<std::mutex> lock(mutex);
    auto [it, inserted] = lanes.try_emplace(std::this_thread::get_id());
    if (!inserted)
      return it->second.get();
    auto l = std::make_unique<Lane>();
    if (CUresult r = api.cuCtxSetCurrent(context); r != CUDA_SUCCESS) {
      lanes.erase(it);
      return check(r, "cuCtxSetCurrent");
    }
    if (CUresult r = api.cuStreamCreate(&l->stream, CU_STREAM_NON_BLOCKING);
        r != CUDA_SUCCESS) {
      lanes.erase(it);
      return check(r, "cuStreamCreate");
    }
    // Default-flag events (timing enabled); without them, no kernel times.
    if (api.cuEventCreate && (api.cuEventCreate(&l->start, 0) != CUDA_SUCCESS ||
                              api.cuEventCreate(&l->end, 0) != CUDA_SUCCESS)) {
      for (CUevent *e : {&l->start, &l->end})
        if (*e)
          api.cuEventDestroy(std::exchange(*e, nullptr));
    }
    it->second = std::move(l);
    return it->second.get();
  }

  /// Waits for the work issued on `lane`; `what` names it in an error.
  llvm::Error wait(Lane *lane, const llvm::Twine &what) const {
    return check(api.cuStreamSynchronize(lane->stream), what);
  }

  /// "NAME: description" of a driver error code.
  std::string describe(CUresult r) const {
    const char *errName = nullptr, *errText = nullptr;
    if (api.cuGetErrorName)
      api.cuGetErrorName(r, &errName);
    if (api.cuGetErrorString)
      api.cuGetErrorString(r, &errText);
    std::string s = errName ? errName : ("CUDA error " + std::to_string(r));
    if (errText)
      s += std::string(": ") + errText;
    return s;
  }

  llvm::Error check(CUresult r, const llvm::Twine &what) const {
    if (r == CUDA_SUCCESS)
      return llvm::Error::success();
    std::string message = (what + ": " + describe(r)).str();
    std::lock_guard<std::mutex> lock(lostMutex);
    if (lost.empty() && losesContext(r))
      lost = message;
    if (!lost.empty())
      message += "; the device's context is lost for every tenant since " +
                 (lost == message ? std::string("this error") : lost) +
                 " (a fault that CUDA makes sticky for the whole context): "
                 "restart wooly-serve";
    return llvm::createStringError(message);
  }

  /// Whether the driver returns `r` for every later call in the context:
  /// CUDA's sticky errors, which leave the context unusable ("the process
  /// must be terminated and relaunched"). A kernel's trap or stack overflow
  /// comes back as CUDA_ERROR_LAUNCH_FAILED.
  static bool losesContext(CUresult r) {
    switch (r) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
      return true;
    default:
      return false;
    }
  }

  /// The first error that lost the context ("" while it works).
  mutable std::mutex lostMutex;
  mutable std::string lost;
};

llvm::Expected<std::unique_ptr<CudaDevice>> CudaDevice::open(int ordinal) {
  return open(ordinal, defaultDriverLibrary);
}

llvm::Expected<std::unique_ptr<CudaDevice>>
CudaDevice::open(int ordinal, StringRef driverLibrary) {
  auto impl = std::make_unique<Impl>();
  impl->libraryName = driverLibrary.str();
  impl->ordinal = ordinal;
  dlerror();
  impl->library = dlopen(impl->libraryName.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!impl->library) {
    const char *why = dlerror();
    return llvm::createStringError("CUDA driver " + impl->libraryName +
                                   " not found (" +
                                   (why ? why : "dlopen failed") + ")");
  }
  void *lib = impl->library;
  StringRef libName = impl->libraryName;
  DriverApi &api = impl->api;

  // The error functions and cuInit first: a driver without a GPU still
  // answers these, and "no CUDA device" is the error to report then.
  if (auto e = resolve(lib, libName, api.cuGetErrorName, {"cuGetErrorName"}))
    return std::move(e);
  if (auto e =
          resolve(lib, libName, api.cuGetErrorString, {"cuGetErrorString"}))
    return std::move(e);
  if (auto e = resolve(lib, libName, api.cuInit, {"cuInit"}))
    return std::move(e);
  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) {
    if (r == CUDA_ERROR_NO_DEVICE)
      return llvm::createStringError("no CUDA device (" + impl->describe(r) +
                                     ")");
    return impl->check(r, "cannot initialise the CUDA driver (cuInit)");
  }

#define WOOLY_RESOLVE(field, ...)                                              \
  if (auto e = resolve(lib, libName, api.field, {__VA_ARGS__}))                \
    return std::move(e);
  WOOLY_RESOLVE(cuDeviceGetCount, "cuDeviceGetCount")
  WOOLY_RESOLVE(cuDeviceGet, "cuDeviceGet")
  WOOLY_RESOLVE(cuDeviceGetName, "cuDeviceGetName")
  WOOLY_RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
  WOOLY_RESOLVE(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2",
                "cuDevicePrimaryCtxRelease")
  WOOLY_RESOLVE(cuCtxSetCurrent, "cuCtxSetCurrent")
  WOOLY_RESOLVE(cuMemAlloc, "cuMemAlloc_v2")
  WOOLY_RESOLVE(cuMemFree, "cuMemFree_v2")
  WOOLY_RESOLVE(cuMemcpyHtoD, "cuMemcpyHtoD_v2")
  WOOLY_RESOLVE(cuMemcpyDtoH, "cuMemcpyDtoH_v2")
  WOOLY_RESOLVE(cuMemsetD8, "cuMemsetD8_v2")
  WOOLY_RESOLVE(cuModuleLoadDataEx, "cuModuleLoadDataEx")
  WOOLY_RESOLVE(cuModuleUnload, "cuModuleUnload")
  WOOLY_RESOLVE(cuModuleGetFunction, "cuModuleGetFunction")
  WOOLY_RESOLVE(cuFuncSetAttribute, "cuFuncSetAttribute")
  WOOLY_RESOLVE(cuLaunchKernel, "cuLaunchKernel")
  WOOLY_RESOLVE(cuDeviceGetAttribute, "cuDeviceGetAttribute")
  WOOLY_RESOLVE(cuStreamCreate, "cuStreamCreate")
  WOOLY_RESOLVE(cuStreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy")
  WOOLY_RESOLVE(cuStreamSynchronize, "cuStreamSynchronize")
  WOOLY_RESOLVE(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")
  WOOLY_RESOLVE(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")
  WOOLY_RESOLVE(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")
  WOOLY_RESOLVE(cuMemsetD8Async, "cuMemsetD8Async")
  WOOLY_RESOLVE(cuModuleGetGlobal, "cuModuleGetGlobal_v2")
#undef WOOLY_RESOLVE
  // Events are optional: without them launches are not timed.
  bool haveEvents =
      !llvm::errorToBool(
          resolve(lib, libName, api.cuEventCreate, {"cuEventCreate"})) &&
      !llvm::errorToBool(resolve(lib, libName, api.cuEventDestroy,
                                 {"cuEventDestroy_v2", "cuEventDestroy"})) &&
      !llvm::errorToBool(
          resolve(lib, libName, api.cuEventRecord, {"cuEventRecord"})) &&
      !llvm::errorToBool(
          resolve(lib, libName, api.cuEventElapsedTime,
                  {"cuEventElapsedTime_v2", "cuEventElapsedTime"}));
  if (!haveEvents)
    api.cuEventCreate = nullptr;
  // The stream-ordered allocator is optional too: without it allocations
  // and frees wait for the whole device (cuMemAlloc, cuMemFree), which a
  // shared device cannot afford while a long kernel runs.
  if (llvm::errorToBool(
          resolve(lib, libName, api.cuMemAllocAsync, {"cuMemAllocAsync"})) ||
      llvm::errorToBool(
          resolve(lib, libName, api.cuMemFreeAsync, {"cuMemFreeAsync"}))) {
    api.cuMemAllocAsync = nullptr;
    api.cuMemFreeAsync = nullptr;
  }

  if (llvm::errorToBool(resolve(lib, libName, api.cuMemGetInfo,
                                {"cuMemGetInfo_v2", "cuMemGetInfo"})))
    api.cuMemGetInfo = nullptr;

  int count = 0;
  if (auto e = impl->check(api.cuDeviceGetCount(&count), "cuDeviceGetCount"))
    return std::move(e);
  if (count == 0)
    return llvm::createStringError("no CUDA device (the driver reports none)");
  if (ordinal < 0 || ordinal >= count)
    return llvm::createStringError(llvm::formatv(
        "no CUDA device {0} (the driver reports {1})", ordinal, count));
  if (auto e = impl->check(api.cuDeviceGet(&impl->device, ordinal),
                           llvm::formatv("cuDeviceGet({0})", ordinal)))
    return std::move(e);
  char name[256] = {};
  if (auto e = impl->check(
          api.cuDeviceGetName(name, int(sizeof name) - 1, impl->device),
          "cuDeviceGetName"))
    return std::move(e);
  impl->name = name;
  for (auto [attr, field] :
       {std::pair{CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                  &impl->multiprocessors},
        std::pair{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &impl->ccMajor},
        std::pair{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                  &impl->ccMinor}})
    if (auto e =
            impl->check(api.cuDeviceGetAttribute(field, attr, impl->device),
                        llvm::formatv("cuDeviceGetAttribute({0})", attr)))
      return std::move(e);
  // The stream-ordered allocator needs memory pools (some virtual GPUs have
  // none): without them, cuMemAlloc and cuMemFree.
  int pools = 0;
  if (api.cuMemAllocAsync &&
      (api.cuDeviceGetAttribute(&pools,
                                CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                impl->device) != CUDA_SUCCESS ||
       !pools)) {
    api.cuMemAllocAsync = nullptr;
    api.cuMemFreeAsync = nullptr;
  }
  if (auto e = impl->check(
          api.cuDevicePrimaryCtxRetain(&impl->context, impl->device),
          "cannot create a context on CUDA device " + impl->name))
    return std::move(e);
  impl->contextRetained = true;
  if (auto e =
          impl->check(api.cuCtxSetCurrent(impl->context), "cuCtxSetCurrent"))
    return std::move(e);
  return std::unique_ptr<CudaDevice>(new CudaDevice(std::move(impl)));
}

CudaDevice::CudaDevice(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
CudaDevice::~CudaDevice() = default;

const std::string &CudaDevice::name() const { return impl->name; }
int CudaDevice::ordinal() const { return impl->ordinal; }
unsigned CudaDevice::multiprocessorCount() const {
  return unsigned(impl->multiprocessors);
}
std::pair<int, int> CudaDevice::computeCapability() const {
  return {impl->ccMajor, impl->ccMinor};
}
std::optional<std::pair<uint64_t, uint64_t>> CudaDevice::memoryInfo() {
  size_t freeBytes = 0, totalBytes = 0;
  if (!impl->api.cuMemGetInfo || llvm::errorToBool(makeCurrent()) ||
      impl->api.cuMemGetInfo(&freeBytes, &totalBytes) != CUDA_SUCCESS)
    return std::nullopt;
  return std::make_pair(uint64_t(freeBytes), uint64_t(totalBytes));
}

llvm::Error CudaDevice::makeCurrent() {
  return impl->check(impl->api.cuCtxSetCurrent(impl->context),
                     "cuCtxSetCurrent");
}

/// Issues `issue(stream)` on the calling thread's stream and waits for it;
/// `what` names the operation in an error.
template <typename Issue>
static llvm::Error onLane(CudaDevice::Impl &impl, const llvm::Twine &what,
                          Issue issue) {
  auto lane = impl.lane();
  if (!lane)
    return lane.takeError();
  if (auto e = impl.check(issue((*lane)->stream), what))
    return e;
  return impl.wait(*lane, what);
}

/// Copies host memory to the device (no check that it may be written).
static llvm::Error copyIn(CudaDevice::Impl &impl, uint64_t dst, const void *src,
                          uint64_t bytes) {
  if (bytes == 0)
    return llvm::Error::success();
  return onLane(
      impl, llvm::formatv("cuMemcpyHtoD of {0} bytes to 0x{1:x-}", bytes, dst),
      [&](CUstream s) {
        return impl.api.cuMemcpyHtoDAsync(CUdeviceptr(dst), src, bytes, s);
      });
}

llvm::Error CudaDevice::enableVirtualMemory() {
  DriverApi &api = impl->api;
  StringRef libName = impl->libraryName;
  void *lib = impl->library;
#define WOOLY_RESOLVE(field, ...)                                              \
  if (auto e = resolve(lib, libName, api.field, {__VA_ARGS__}))                \
    return e;
  WOOLY_RESOLVE(cuMemAddressReserve, "cuMemAddressReserve")
  WOOLY_RESOLVE(cuMemAddressFree, "cuMemAddressFree")
  WOOLY_RESOLVE(cuMemCreate, "cuMemCreate")
  WOOLY_RESOLVE(cuMemRelease, "cuMemRelease")
  WOOLY_RESOLVE(cuMemMap, "cuMemMap")
  WOOLY_RESOLVE(cuMemUnmap, "cuMemUnmap")
  WOOLY_RESOLVE(cuMemSetAccess, "cuMemSetAccess")
  WOOLY_RESOLVE(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity")
#undef WOOLY_RESOLVE
  int supported = 0;
  if (auto e = impl->check(
          api.cuDeviceGetAttribute(
              &supported,
              CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
              impl->device),
          "cuDeviceGetAttribute"))
    return e;
  if (!supported)
    return llvm::createStringError(
        "the GPU does not support virtual memory management "
        "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is 0)");
  if (auto e = makeCurrent())
    return e;
  CUmemAllocationProp prop = impl->allocationProp();
  size_t granularity = 0;
  if (auto e = impl->check(
          api.cuMemGetAllocationGranularity(&granularity, &prop,
                                            CU_MEM_ALLOC_GRANULARITY_MINIMUM),
          "cuMemGetAllocationGranularity"))
    return e;
  if (granularity == 0 || (granularity & (granularity - 1)))
    return llvm::createStringError(
        llvm::formatv("cuMemGetAllocationGranularity: {0} bytes is not a "
                      "power of two",
                      granularity));
  std::lock_guard<std::mutex> lock(impl->vmmMutex);
  impl->granularity = granularity;
  impl->vmm = true;
  return llvm::Error::success();
}

bool CudaDevice::virtualMemory() const { return impl->vmm; }

/// The virtual block at `addr` for a swap (`out`: it must be resident,
/// else swapped out), with the context current; the caller holds
/// `vmmMutex`.
static llvm::Expected<CudaDevice::Impl::VirtualBlock *>
swapBlock(CudaDevice &d, CudaDevice::Impl &impl, uint64_t addr, bool out) {
  if (!impl.vmm)
    return llvm::createStringError("swapping needs virtual memory "
                                   "management (enableVirtualMemory)");
  if (auto e = d.makeCurrent())
    return std::move(e);
  auto it = impl.blocks.find(addr);
  if (it == impl.blocks.end() || bool(it->second.host) == out)
    return llvm::createStringError(llvm::formatv(
        out ? "swap-out of 0x{0:x-}, which is not a resident allocation"
            : "swap-in of 0x{0:x-}, which is not swapped out",
        addr));
  if (it->second.moving)
    return llvm::createStringError(
        llvm::formatv("swap of 0x{0:x-}, which is being swapped", addr));
  // Moving one member of a shared copy out would free nothing.
  if (it->second.shared)
    return llvm::createStringError(
        llvm::formatv("swap-out of 0x{0:x-}, whose bytes are shared with "
                      "other allocations (deduplicated)",
                      addr));
  return &it->second;
}

// The copies of a swap run without `vmmMutex` (other threads' copies,
// allocations and frees go on meanwhile); the block is marked `moving`,
// which keeps other swaps, frees and sharing off it.
llvm::Error CudaDevice::swapOut(uint64_t addr) {
  std::unique_lock<std::mutex> lock(impl->vmmMutex);
  auto block = swapBlock(*this, *impl, addr, /*out=*/true);
  if (!block)
    return block.takeError();
  Impl::VirtualBlock &b = **block;
  std::unique_ptr<uint8_t[]> host(new (std::nothrow) uint8_t[b.bytes]);
  if (!host)
    return llvm::createStringError(
        llvm::formatv("out of host memory swapping out {0} bytes", b.bytes));
  b.moving = true;
  lock.unlock();
  llvm::Error e = copyFromDevice(host.get(), addr, b.bytes);
  lock.lock();
  b.moving = false;
  if (e)
    return e;
  if (auto e = impl->mapOut(addr, b))
    return e;
  b.host = std::move(host);
  return llvm::Error::success();
}

llvm::Error CudaDevice::swapIn(uint64_t addr) {
  std::unique_lock<std::mutex> lock(impl->vmmMutex);
  auto block = swapBlock(*this, *impl, addr, /*out=*/false);
  if (!block)
    return block.takeError();
  Impl::VirtualBlock &b = **block;
  if (auto e = impl->mapIn(addr, b))
    return e;
  b.moving = true;
  lock.unlock();
  llvm::Error e = copyIn(*impl, addr, b.host.get(), b.bytes);
  lock.lock();
  b.moving = false;
  if (e) {
    // Back out: it stays swapped out, with its bytes on the host.
    llvm::consumeError(impl->mapOut(addr, b));
    return e;
  }
  b.host.reset();
  return llvm::Error::success();
}

llvm::Error CudaDevice::share(uint64_t addr, uint64_t with) {
  std::lock_guard<std::mutex> lock(impl->vmmMutex);
  if (!impl->vmm)
    return llvm::createStringError(
        "deduplication on the cuda backend needs virtual memory management "
        "(enableVirtualMemory; wooly-serve --cuda-swap)");
  if (auto e = makeCurrent())
    return e;
  auto it = impl->blocks.find(addr), wit = impl->blocks.find(with);
  if (it == impl->blocks.end() || wit == impl->blocks.end() || addr == with)
    return llvm::createStringError(
        llvm::formatv("sharing 0x{0:x-} with 0x{1:x-}: not two distinct "
                      "allocations",
                      addr, with));
  Impl::VirtualBlock &a = it->second, &w = wit->second;
  if (a.bytes != w.bytes || a.host || w.host || a.shared || a.moving ||
      w.moving)
    return llvm::createStringError(llvm::formatv(
        "sharing 0x{0:x-} with 0x{1:x-}: sizes differ, one is swapped out "
        "(or moving), or it is shared already",
        addr, with));
  // `with` becomes read-only in place (its kernels may be reading it); its
  // memory becomes the shared copy.
  bool newCopy = !w.shared;
  if (newCopy)
    if (auto e = impl->setAccess(with, w.rounded, /*writable=*/false))
      return e;
  auto undo = [&] {
    if (newCopy)
      llvm::consumeError(impl->setAccess(with, w.rounded, true));
  };
  // `addr` maps the copy instead of its own memory, which keeps its bytes
  // until released: on a failure it goes back.
  if (auto e = impl->check(impl->api.cuMemUnmap(CUdeviceptr(addr), a.rounded),
                           llvm::formatv("cuMemUnmap at 0x{0:x-}", addr))) {
    undo();
    return e;
  }
  if (auto e = impl->map(addr, a.rounded, w.handle, /*writable=*/false)) {
    llvm::consumeError(impl->map(addr, a.rounded, a.handle, true));
    undo();
    return e;
  }
  llvm::consumeError(
      impl->check(impl->api.cuMemRelease(a.handle), "cuMemRelease"));
  if (newCopy) {
    w.shared = impl->nextCopy++;
    impl->copies[w.shared] = Impl::SharedCopy{w.handle, {with}};
  }
  impl->copies[w.shared].members.push_back(addr);
  a.shared = w.shared;
  a.handle = w.handle;
  return llvm::Error::success();
}

llvm::Error CudaDevice::unshare(uint64_t addr) {
  std::lock_guard<std::mutex> lock(impl->vmmMutex);
  auto it = impl->blocks.find(addr);
  if (it == impl->blocks.end() || !it->second.shared)
    return llvm::createStringError(llvm::formatv(
        "unsharing 0x{0:x-}, which is not a shared allocation", addr));
  if (auto e = makeCurrent())
    return e;
  Impl::VirtualBlock &b = it->second;
  auto cit = impl->copies.find(b.shared);
  if (cit->second.members.size() == 1) {
    // Alone in its copy (making it writable failed when the others
    // left): the copy's memory becomes its own.
    if (auto e = impl->setAccess(addr, b.rounded, /*writable=*/true))
      return e;
    b.shared = 0;
    impl->copies.erase(cit);
    return llvm::Error::success();
  }
  // Another member, from which the bytes are copied.
  uint64_t from = cit->second.members.front() != addr
                      ? cit->second.members.front()
                      : cit->second.members.back();
  CUmemGenericAllocationHandle shared = b.handle;
  Impl::VirtualBlock own;
  own.rounded = b.rounded;
  if (auto e = impl->check(impl->api.cuMemUnmap(CUdeviceptr(addr), b.rounded),
                           llvm::formatv("cuMemUnmap at 0x{0:x-}", addr)))
    return e;
  llvm::Error e = impl->mapIn(addr, own);
  if (!e)
    e = onLane(*impl,
               llvm::formatv("cuMemcpyDtoD of {0} bytes from 0x{1:x-} to "
                             "0x{2:x-}",
                             b.bytes, from, addr),
               [&](CUstream s) {
                 return impl->api.cuMemcpyDtoDAsync(
                     CUdeviceptr(addr), CUdeviceptr(from), b.bytes, s);
               });
  if (e) {
    // Back to the shared copy: it stays shared.
    if (own.handle)
      llvm::consumeError(impl->mapOut(addr, own));
    llvm::consumeError(impl->map(addr, b.rounded, shared, false));
    return e;
  }
  impl->leaveCopy(addr, b);
  b.handle = own.handle;
  return llvm::Error::success();
}

llvm::Expected<uint64_t> CudaDevice::allocate(uint64_t bytes) {
  CUdeviceptr p = 0;
  // The driver refuses empty allocations; give them one byte.
  uint64_t size = std::max<uint64_t>(bytes, 1);
  if (impl->vmm) {
    if (auto e = makeCurrent())
      return std::move(e);
    Impl::VirtualBlock b;
    b.bytes = size;
    b.rounded = (size + impl->granularity - 1) & ~(impl->granularity - 1);
    if (auto e = impl->check(
            impl->api.cuMemAddressReserve(&p, b.rounded, 0, 0, 0),
            llvm::formatv("cuMemAddressReserve of {0} bytes", b.rounded)))
      return std::move(e);
    if (auto e = impl->mapIn(p, b)) {
      impl->api.cuMemAddressFree(p, b.rounded);
      return std::move(e);
    }
    std::lock_guard<std::mutex> lock(impl->vmmMutex);
    impl->blocks.emplace(uint64_t(p), std::move(b));
  } else if (impl->api.cuMemAllocAsync) {
    // On the calling thread's stream; the zero-fill below waits for that
    // stream, after which every stream may use the memory.
    if (auto e = onLane(
            *impl, llvm::formatv("cuMemAllocAsync of {0} bytes", bytes),
            [&](CUstream s) { return impl->api.cuMemAllocAsync(&p, size, s); }))
      return std::move(e);
  } else if (auto e =
                 impl->check(impl->api.cuMemAlloc(&p, size),
                             llvm::formatv("cuMemAlloc of {0} bytes", bytes))) {
    return std::move(e);
  }
  // Zero-filled, as the CPU backend's memory is.
  if (llvm::Error e = memset(p, 0, size)) {
    llvm::consumeError(free(p));
    return std::move(e);
  }
  return uint64_t(p);
}

llvm::Error CudaDevice::free(uint64_t addr) {
  // The caller has finished every use of it (the server frees after the
  // session's earlier work).
  if (impl->vmm) {
    if (auto e = makeCurrent())
      return e;
    std::lock_guard<std::mutex> lock(impl->vmmMutex);
    auto it = impl->blocks.find(addr);
    if (it == impl->blocks.end())
      return llvm::createStringError(
          llvm::formatv("free of 0x{0:x-}, which is not an allocation", addr));
    Impl::VirtualBlock &b = it->second;
    if (b.moving)
      return llvm::createStringError(
          llvm::formatv("free of 0x{0:x-}, which is being swapped", addr));
    if (b.shared) {
      // The copy stays with its other members.
      if (auto e =
              impl->check(impl->api.cuMemUnmap(CUdeviceptr(addr), b.rounded),
                          llvm::formatv("cuMemUnmap at 0x{0:x-}", addr)))
        return e;
      impl->leaveCopy(addr, b);
    } else if (b.handle) {
      if (auto e = impl->mapOut(addr, b))
        return e;
    }
    llvm::Error e =
        impl->check(impl->api.cuMemAddressFree(CUdeviceptr(addr), b.rounded),
                    llvm::formatv("cuMemAddressFree(0x{0:x-})", addr));
    impl->blocks.erase(it);
    return e;
  }
  if (impl->api.cuMemFreeAsync)
    return onLane(*impl, llvm::formatv("cuMemFreeAsync(0x{0:x-})", addr),
                  [&](CUstream s) {
                    return impl->api.cuMemFreeAsync(CUdeviceptr(addr), s);
                  });
  return impl->check(impl->api.cuMemFree(CUdeviceptr(addr)),
                     llvm::formatv("cuMemFree(0x{0:x-})", addr));
}

llvm::Error CudaDevice::copyToDevice(uint64_t dst, const void *src,
                                     uint64_t bytes) {
  if (auto e = impl->checkWritable(dst, bytes, "copy to device"))
    return e;
  return copyIn(*impl, dst, src, bytes);
}

llvm::Error CudaDevice::copyFromDevice(void *dst, uint64_t src,
                                       uint64_t bytes) {
  if (bytes == 0)
    return llvm::Error::success();
  return onLane(
      *impl,
      llvm::formatv("cuMemcpyDtoH of {0} bytes from 0x{1:x-}", bytes, src),
      [&](CUstream s) {
        return impl->api.cuMemcpyDtoHAsync(dst, CUdeviceptr(src), bytes, s);
      });
}

llvm::Error CudaDevice::copyDeviceToDevice(uint64_t dst, uint64_t src,
                                           uint64_t bytes) {
  if (auto e =
          impl->checkWritable(dst, bytes, "device-to-device copy destination"))
    return e;
  if (bytes == 0)
    return llvm::Error::success();
  // cuMemcpyDtoD does not promise memmove's result for overlapping ranges.
  uint64_t gap = dst > src ? dst - src : src - dst;
  if (gap >= bytes)
    return onLane(*impl,
                  llvm::formatv("cuMemcpyDtoD of {0} bytes from 0x{1:x-} to "
                                "0x{2:x-}",
                                bytes, src, dst),
                  [&](CUstream s) {
                    return impl->api.cuMemcpyDtoDAsync(
                        CUdeviceptr(dst), CUdeviceptr(src), bytes, s);
                  });
  if (gap == 0)
    return llvm::Error::success();
  // Overlapping: through a temporary buffer (chunks of `gap` bytes would be
  // slow when the ranges are close).
  auto tmp = allocate(bytes);
  if (!tmp)
    return tmp.takeError();
  llvm::Error e = copyDeviceToDevice(*tmp, src, bytes);
  if (!e)
    e = copyDeviceToDevice(dst, *tmp, bytes);
  if (llvm::Error fe = free(*tmp))
    e = llvm::joinErrors(std::move(e), std::move(fe));
  return e;
}

llvm::Error CudaDevice::memset(uint64_t dst, uint8_t value, uint64_t bytes) {
  if (auto e = impl->checkWritable(dst, bytes, "memset"))
    return e;
  if (bytes == 0)
    return llvm::Error::success();
  return onLane(
      *impl, llvm::formatv("cuMemsetD8 of {0} bytes at 0x{1:x-}", bytes, dst),
      [&](CUstream s) {
        return impl->api.cuMemsetD8Async(CUdeviceptr(dst), value, bytes, s);
      });
}

llvm::Expected<CudaModule *> CudaDevice::loadPTX(StringRef ptx) {
  std::string text = ptx.str(); // The driver wants a NUL-terminated image.
  std::vector<char> infoLog(kJitLogBytes, 0), errorLog(kJitLogBytes, 0);
  CUjit_option options[] = {
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {
      infoLog.data(), reinterpret_cast<void *>(uintptr_t(kJitLogBytes - 1)),
      errorLog.data(), reinterpret_cast<void *>(uintptr_t(kJitLogBytes - 1))};
  auto module = std::make_unique<CudaModule>();
  CUresult r = impl->api.cuModuleLoadDataEx(&module->handle, text.c_str(),
                                            unsigned(std::size(options)),
                                            options, values);
  if (r != CUDA_SUCCESS) {
    std::string msg =
        "cannot load the PTX on " + impl->name + ": " + impl->describe(r);
    StringRef log = StringRef(errorLog.data()).trim();
    if (!log.empty())
      msg += "\n" + log.str();
    return llvm::createStringError(msg);
  }
  CudaModule *raw = module.get();
  std::lock_guard<std::mutex> lock(impl->mutex);
  impl->modules.push_back(std::move(module));
  return raw;
}

llvm::Error CudaDevice::unloadModule(CudaModule *module) {
  CUmodule handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl->mutex);
    auto it = llvm::find_if(impl->modules,
                            [&](const auto &m) { return m.get() == module; });
    if (it == impl->modules.end())
      return llvm::createStringError("unloadModule: unknown module");
    handle = (*it)->handle;
    impl->modules.erase(it);
  }
  return impl->check(impl->api.cuModuleUnload(handle), "cuModuleUnload");
}

llvm::Expected<std::pair<uint64_t, uint64_t>>
CudaDevice::globalAddress(CudaModule *module, StringRef name) {
  if (!module)
    return llvm::createStringError("module variable '" + name + "': no module");
  CUdeviceptr p = 0;
  size_t size = 0;
  std::string n = name.str();
  if (CUresult r =
          impl->api.cuModuleGetGlobal(&p, &size, module->handle, n.c_str());
      r != CUDA_SUCCESS)
    return llvm::createStringError(
        "no module variable '" + name +
        "' (cuModuleGetGlobal: " + impl->describe(r) + ")");
  return std::pair<uint64_t, uint64_t>{uint64_t(p), uint64_t(size)};
}

llvm::Error CudaDevice::launch(CudaModule *module, StringRef kernel,
                               const CudaLaunchConfig &config,
                               llvm::ArrayRef<uint8_t> params,
                               llvm::ArrayRef<uint64_t> paramOffsets,
                               llvm::ArrayRef<uint64_t> paramSizes) {
  auto laneOr = impl->lane();
  if (!laneOr)
    return laneOr.takeError();
  Lane *lane = *laneOr;
  lane->lastKernelMs.reset();
  if (!module)
    return llvm::createStringError("launch of kernel '" + kernel +
                                   "': no module");
  if (paramOffsets.size() != paramSizes.size())
    return llvm::createStringError(llvm::formatv(
        "launch of kernel '{0}': {1} parameter offsets but {2} sizes", kernel,
        paramOffsets.size(), paramSizes.size()));
  for (size_t i = 0; i < paramOffsets.size(); ++i)
    if (paramOffsets[i] + paramSizes[i] > params.size())
      return llvm::createStringError(llvm::formatv(
          "launch of kernel '{0}': parameter {1} (offset {2}, {3} bytes) lies "
          "outside the {4}-byte parameter buffer",
          kernel, i, paramOffsets[i], paramSizes[i], params.size()));

  const DriverApi &api = impl->api;
  CUfunction fn = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl->mutex);
    auto [it, inserted] = module->functions.try_emplace(kernel);
    CudaModule::Function &f = it->second;
    if (inserted) {
      std::string name = kernel.str();
      if (CUresult r =
              api.cuModuleGetFunction(&f.handle, module->handle, name.c_str());
          r != CUDA_SUCCESS) {
        module->functions.erase(it);
        return llvm::createStringError(
            "no kernel '" + kernel +
            "' in the module (cuModuleGetFunction: " + impl->describe(r) + ")");
      }
    }
    fn = f.handle;
    // More dynamic shared memory than the default needs an opt-in; it is
    // only ever raised, so that a launch of another thread that needs more
    // keeps what it asked for.
    if (config.dynamicSharedBytes > f.maxDynamicShared) {
      if (auto e = impl->check(
              api.cuFuncSetAttribute(
                  fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                  int(config.dynamicSharedBytes)),
              llvm::formatv("launch of kernel '{0}': {1} bytes of dynamic "
                            "shared memory",
                            kernel, config.dynamicSharedBytes)))
        return e;
      f.maxDynamicShared = config.dynamicSharedBytes;
    }
  }

  // The driver reads the buffer during cuLaunchKernel; a copy keeps the
  // caller's bytes const and gives an empty buffer a valid address.
  std::vector<uint8_t> buffer(params.begin(), params.end());
  size_t size = buffer.size();
  uint8_t dummy = 0;
  bool timed = lane->start &&
               api.cuEventRecord(lane->start, lane->stream) == CUDA_SUCCESS;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER,
                   buffer.empty() ? static_cast<void *>(&dummy)
                                  : static_cast<void *>(buffer.data()),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  if (auto e = impl->check(
          api.cuLaunchKernel(fn, config.grid[0], config.grid[1], config.grid[2],
                             config.block[0], config.block[1], config.block[2],
                             config.dynamicSharedBytes, lane->stream, nullptr,
                             extra),
          llvm::formatv("launch of kernel '{0}' (grid ({1},{2},{3}), block "
                        "({4},{5},{6}), {7} bytes of dynamic shared memory)",
                        kernel, config.grid[0], config.grid[1], config.grid[2],
                        config.block[0], config.block[1], config.block[2],
                        config.dynamicSharedBytes)))
    return e;
  timed = timed && api.cuEventRecord(lane->end, lane->stream) == CUDA_SUCCESS;
  if (CUresult r = api.cuStreamSynchronize(lane->stream); r != CUDA_SUCCESS) {
    llvm::Error e = impl->check(r, "kernel '" + kernel + "'");
    // The faults with a code of their own, as the CUDA runtime reports them.
    std::optional<FaultKind> kind;
    if (r == CUDA_ERROR_ILLEGAL_ADDRESS)
      kind = FaultKind::IllegalAddress;
    else if (r == CUDA_ERROR_MISALIGNED_ADDRESS)
      kind = FaultKind::MisalignedAddress;
    else if (r == CUDA_ERROR_ASSERT)
      kind = FaultKind::Assert;
    if (!kind)
      return e;
    return llvm::make_error<KernelFaultError>(*kind,
                                              llvm::toString(std::move(e)));
  }
  float ms = 0;
  if (timed &&
      api.cuEventElapsedTime(&ms, lane->start, lane->end) == CUDA_SUCCESS)
    lane->lastKernelMs = ms;
  return llvm::Error::success();
}

std::optional<std::string> CudaDevice::lostReason() const {
  std::lock_guard<std::mutex> lock(impl->lostMutex);
  if (impl->lost.empty())
    return std::nullopt;
  return impl->lost;
}

std::optional<double> CudaDevice::lastKernelMs() const {
  std::lock_guard<std::mutex> lock(impl->mutex);
  auto it = impl->lanes.find(std::this_thread::get_id());
  if (it == impl->lanes.end() || !it->second)
    return std::nullopt;
  return it->second->lastKernelMs;
}
