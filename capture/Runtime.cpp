//===- Runtime.cpp - Wooly's libcudart.so.13 -----------------------------===//
//
// The CUDA runtime API for unmodified programs built with nvcc
// (-cudart shared), on top of Wooly's driver (Driver.cpp), as NVIDIA's
// runtime sits on its driver:
//
//  - Registration: nvcc's constructors register each translation unit's
//    fatbin, kernels and variables before main. Nothing is sent then: a
//    fatbin's PTX is read (Fatbin.cpp) and loaded as a module on the server
//    when one of its kernels or variables is first used.
//  - Launches: `<<<>>>` pushes the configuration, the stub pops it and calls
//    __cudaLaunchKernel with the handle __cudaGetKernel gave it; every
//    `const void *func` argument accepts that handle or the host stub.
//  - Errors: each thread's last error (cudaGetLastError), sticky faults from
//    the driver.
//  - Graphs (Graph.cpp) capture and replay on the client; a replay's calls
//    are batched into one message.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include "Driver.h"
#include "Fatbin.h"
#include "Log.h"
#include "PtxLink.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

using namespace wooly::cuabi;
using namespace wooly::capture;

// The driver entry points the runtime calls (Driver.cpp, libcuda.so.1).
extern "C" {
CUresult cuInit(unsigned);
CUresult cuDeviceGetCount(int *);
CUresult cuDeviceGetName(char *, int, CUdevice);
CUresult cuDeviceTotalMem_v2(size_t *, CUdevice);
CUresult cuDeviceGetAttribute(int *, int, CUdevice);
CUresult cuDeviceGetUuid_v2(cudaUUID_t *, CUdevice);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuDevicePrimaryCtxReset_v2(CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuCtxSynchronize();
CUresult cuCtxSetLimit(CUlimit, size_t);
CUresult cuCtxGetLimit(size_t *, CUlimit);
CUresult cuCtxGetStreamPriorityRange(int *, int *);
CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *);
CUresult cuModuleGetGlobal_v2(CUdeviceptr *, size_t *, CUmodule, const char *);
CUresult cuFuncGetAttribute(int *, int, CUfunction);
CUresult cuFuncSetAttribute(CUfunction, int, int);
CUresult cuFuncGetParamInfo(CUfunction, size_t, size_t *, size_t *);
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *, CUfunction,
                                                              int, size_t,
                                                              unsigned);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, CUstream, void **,
                        void **);
CUresult cuLaunchCooperativeKernel(CUfunction, unsigned, unsigned, unsigned,
                                   unsigned, unsigned, unsigned, unsigned,
                                   CUstream, void **);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemAllocManaged(CUdeviceptr *, size_t, unsigned);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *, void *, unsigned);
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
CUresult cuDeviceGetPCIBusId(char *, int, CUdevice);
CUresult cuDeviceGetByPCIBusId(CUdevice *, const char *);
CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t *, CUarray_format, unsigned,
                                            CUdevice);
CUresult cuCtxResetPersistingL2Cache();
CUresult cuMemHostUnregister(void *);
CUresult cuMemPrefetchAsync_v2(CUdeviceptr, size_t, CUmemLocation, unsigned,
                               CUstream);
CUresult cuMemAdvise_v2(CUdeviceptr, size_t, int, CUmemLocation);
CUresult cuMemRangeGetAttributes(void **, size_t *, int *, size_t, CUdeviceptr,
                                 size_t);
CUresult cuStreamAttachMemAsync(CUstream, CUdeviceptr, size_t, unsigned);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemGetInfo_v2(size_t *, size_t *);
CUresult cuMemHostAlloc(void **, size_t, unsigned);
CUresult cuMemHostGetFlags(unsigned *, void *);
CUresult cuMemFreeHost(void *);
CUresult cuPointerGetAttribute(void *, int, CUdeviceptr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyDtoD_v2(CUdeviceptr, CUdeviceptr, size_t);
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *, CUstream);
CUresult cuMemsetD8_v2(CUdeviceptr, unsigned char, size_t);
CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuStreamCreateWithPriority(CUstream *, unsigned, int);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamQuery(CUstream);
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned);
CUresult cuStreamGetPriority(CUstream, int *);
CUresult cuStreamGetFlags(CUstream, unsigned *);
CUresult cuLaunchHostFunc(CUstream, CUhostFn, void *);
CUresult cuEventCreate(CUevent *, unsigned);
CUresult cuEventDestroy_v2(CUevent);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuEventQuery(CUevent);
CUresult cuEventSynchronize(CUevent);
CUresult cuEventElapsedTime_v2(float *, CUevent, CUevent);
CUresult cuGetProcAddress_v2(const char *, void **, int, unsigned long long,
                             CUdriverProcAddressQueryResult *);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

namespace {
thread_local cudaError_t lastError = cudaSuccess;
} // namespace

namespace wooly::capture {

cudaError_t setError(cudaError_t e) {
  if (e != cudaSuccess)
    lastError = e;
  return e;
}

cudaError_t fromDriver(CUresult r) {
  // The runtime's codes share the driver's numbers for every code the
  // driver returns here.
  return setError(static_cast<cudaError_t>(r));
}

} // namespace wooly::capture

//===----------------------------------------------------------------------===//
// Implicit initialisation: the runtime opens the session on first use
//===----------------------------------------------------------------------===//

namespace wooly::capture {

cudaError_t ensureInit() {
  static cudaError_t result = [] {
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS) {
      CUcontext ctx;
      r = cuDevicePrimaryCtxRetain(&ctx, 0);
      if (r == CUDA_SUCCESS)
        r = cuCtxSetCurrent(ctx);
    }
    if (r == CUDA_ERROR_NO_DEVICE)
      return cudaErrorNoDevice;
    return static_cast<cudaError_t>(r);
  }();
  return result;
}

} // namespace wooly::capture

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

namespace {

struct KernelRecord;
struct VarRecord;

/// One registered fatbin (one translation unit, or one -rdc program).
struct ManagedVarRecord {
  /// Where the program's host code reads the variable's address.
  void **hostVarPtrAddress = nullptr;
  std::string name;
};

struct FatbinRecord {
  const void *wrapper = nullptr;
  std::vector<KernelRecord *> kernels;
  std::vector<VarRecord *> vars;
  /// Its __managed__ variables, mapped when the module loads.
  std::vector<ManagedVarRecord> managed;
  // Loaded on first use (under Registry::mu, exclusive).
  bool loaded = false;
  cudaError_t loadError = cudaSuccess;
  CUmodule module = nullptr;
};

struct KernelRecord {
  const void *hostFun = nullptr;
  std::string name;
  FatbinRecord *fatbin = nullptr;
  CUfunction fn = nullptr; // resolved on first launch
};

struct VarRecord {
  const void *hostVar = nullptr;
  std::string name;
  size_t size = 0;
  bool constant = false;
  FatbinRecord *fatbin = nullptr;
  CUdeviceptr address = 0; // resolved on first use
};

struct Registry {
  std::shared_mutex mu;
  std::vector<std::unique_ptr<FatbinRecord>> fatbins;
  std::vector<std::unique_ptr<KernelRecord>> kernels;
  std::vector<std::unique_ptr<VarRecord>> vars;
  std::unordered_map<const void *, KernelRecord *> byHostFun;
  std::unordered_set<const KernelRecord *> handles;
  std::unordered_map<const void *, VarRecord *> byHostVar;
};

Registry &registry() {
  static Registry *r = new Registry; // used by atexit-time unregistration
  return *r;
}

/// Loads the fatbin's PTX as a module (once). Called with `r.mu` held
/// exclusively.
cudaError_t loadFatbin(FatbinRecord &f) {
  if (f.loaded)
    return f.loadError;
  f.loaded = true;
  std::vector<std::string> ptx;
  std::string error;
  if (!ptxFromWrapper(f.wrapper, ptx, error)) {
    log(1, "cannot read the program's fatbin: %s", error.c_str());
    return f.loadError = cudaErrorInvalidKernelImage;
  }
  if (ptx.empty()) {
    std::string names;
    for (KernelRecord *k : f.kernels)
      names += (names.empty() ? "" : ", ") + k->name;
    log(1,
        "the program carries no PTX for kernel(s) %s (only SASS, which "
        "Wooly cannot run); rebuild with a PTX target, e.g. nvcc "
        "-gencode arch=compute_75,code=compute_75",
        names.c_str());
    return f.loadError = cudaErrorNoKernelImageForDevice;
  }
  std::string linked;
  if (!linkPtx(ptx, linked, error)) {
    log(1, "cannot link the PTX of this -rdc program's %zu objects: %s",
        ptx.size(), error.c_str());
    return f.loadError = cudaErrorInvalidPtx;
  }
  if (ptx.size() > 1)
    log(2, "linked the PTX of %zu objects (-rdc)", ptx.size());
  std::string name = f.kernels.empty() ? std::string("fatbin")
                                       : "fatbin of " + f.kernels[0]->name;
  CUresult r = driverLoadPtx(linked, name, &f.module);
  if (r != CUDA_SUCCESS)
    return f.loadError = static_cast<cudaError_t>(r);
  // __managed__ variables: the host code reads them through the pointers
  // registered for them, from now on at their device addresses.
  for (ManagedVarRecord &v : f.managed) {
    void *host = nullptr;
    r = driverMapManagedVariable(f.module, v.name.c_str(), &host);
    if (r != CUDA_SUCCESS) {
      log(1, "__managed__ variable '%s' cannot be mapped: its kernels fail",
          v.name.c_str());
      return f.loadError = static_cast<cudaError_t>(r);
    }
    std::free(*v.hostVarPtrAddress);
    *v.hostVarPtrAddress = host;
  }
  return cudaSuccess;
}

/// Resolves a kernel handle or host stub to its record (null if neither);
/// `r.mu` is held.
KernelRecord *findKernelLocked(Registry &r, const void *func) {
  auto it = r.byHostFun.find(func);
  if (it != r.byHostFun.end())
    return it->second;
  auto *k = static_cast<const KernelRecord *>(func);
  if (r.handles.count(k))
    return const_cast<KernelRecord *>(k);
  return nullptr;
}

KernelRecord *findKernel(const void *func) {
  Registry &r = registry();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  return findKernelLocked(r, func);
}

} // namespace

namespace wooly::capture {

cudaError_t resolveFunction(const void *func, CUfunction &fn) {
  Registry &r = registry();
  KernelRecord *k;
  {
    // The launch path: one shared lock.
    std::shared_lock<std::shared_mutex> lock(r.mu);
    k = findKernelLocked(r, func);
    if (!k)
      return cudaErrorInvalidDeviceFunction;
    if (k->fn) {
      fn = k->fn;
      return cudaSuccess;
    }
  }
  INIT();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  if (k->fn) {
    fn = k->fn;
    return cudaSuccess;
  }
  cudaError_t e = loadFatbin(*k->fatbin);
  if (e != cudaSuccess)
    return e;
  CUresult res =
      cuModuleGetFunction(&k->fn, k->fatbin->module, k->name.c_str());
  if (res == CUDA_ERROR_NOT_FOUND) {
    log(1, "kernel %s is not in the program's PTX", k->name.c_str());
    return cudaErrorInvalidDeviceFunction;
  }
  if (res != CUDA_SUCCESS)
    return static_cast<cudaError_t>(res);
  fn = k->fn;
  return cudaSuccess;
}

/// The device address of a registered variable.
static cudaError_t resolveSymbol(const void *symbol, CUdeviceptr &address,
                                 size_t &size) {
  INIT();
  Registry &r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  auto it = r.byHostVar.find(symbol);
  if (it == r.byHostVar.end())
    return cudaErrorInvalidSymbol;
  VarRecord &v = *it->second;
  if (!v.address) {
    cudaError_t e = loadFatbin(*v.fatbin);
    if (e != cudaSuccess)
      return e;
    size_t bytes = 0;
    CUresult res = cuModuleGetGlobal_v2(&v.address, &bytes, v.fatbin->module,
                                        v.name.c_str());
    if (res == CUDA_ERROR_NOT_FOUND)
      return cudaErrorInvalidSymbol;
    if (res != CUDA_SUCCESS)
      return static_cast<cudaError_t>(res);
  }
  address = v.address;
  size = v.size;
  return cudaSuccess;
}

/// Forgets every module and resolved address (cudaDeviceReset).
static void forgetModules() {
  Registry &r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  for (auto &f : r.fatbins) {
    f->loaded = false;
    f->loadError = cudaSuccess;
    f->module = nullptr;
  }
  for (auto &k : r.kernels)
    k->fn = nullptr;
  for (auto &v : r.vars)
    v->address = 0;
}

} // namespace wooly::capture

RT_API void **__cudaRegisterFatBinary(void *wrapper) {
  Registry &r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  auto f = std::make_unique<FatbinRecord>();
  f->wrapper = wrapper;
  void **handle = reinterpret_cast<void **>(f.get());
  r.fatbins.push_back(std::move(f));
  return handle;
}

RT_API void __cudaRegisterFatBinaryEnd(void **handle) { (void)handle; }

RT_API void __cudaUnregisterFatBinary(void **handle) {
  // The fatbin's host stubs and variables may be unmapped now (a library
  // closed with dlclose) and their addresses reused: forget them. The
  // records and the module stay (a handle an earlier launch kept remains
  // valid until the process ends, when the server frees the session).
  if (!handle)
    return;
  Registry &r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  auto *f = reinterpret_cast<FatbinRecord *>(handle);
  for (KernelRecord *k : f->kernels) {
    auto it = r.byHostFun.find(k->hostFun);
    if (it != r.byHostFun.end() && it->second == k)
      r.byHostFun.erase(it);
  }
  for (VarRecord *v : f->vars) {
    auto it = r.byHostVar.find(v->hostVar);
    if (it != r.byHostVar.end() && it->second == v)
      r.byHostVar.erase(it);
  }
}

/// Called by the host code before it first touches a __managed__ variable
/// of the translation unit: loads its module, which maps the variables.
RT_API char __cudaInitModule(void **handle) {
  if (!handle)
    return 0;
  auto *f = reinterpret_cast<FatbinRecord *>(handle);
  {
    Registry &r = registry();
    std::shared_lock<std::shared_mutex> lock(r.mu);
    if (f->managed.empty())
      return 1;
  }
  if (ensureInit() != cudaSuccess)
    return 0;
  Registry &r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  return loadFatbin(*f) == cudaSuccess;
}

RT_API void __cudaRegisterFunction(void **handle, const char *hostFun,
                                   char *deviceFun, const char *deviceName,
                                   int threadLimit, void *tid, void *bid,
                                   dim3 *bDim, dim3 *gDim, int *wSize) {
  (void)deviceName, (void)threadLimit, (void)tid, (void)bid, (void)bDim,
      (void)gDim, (void)wSize;
  if (!handle || !hostFun || !deviceFun)
    return;
  Registry &r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  auto *f = reinterpret_cast<FatbinRecord *>(handle);
  auto k = std::make_unique<KernelRecord>();
  k->hostFun = hostFun;
  k->name = deviceFun;
  k->fatbin = f;
  f->kernels.push_back(k.get());
  r.byHostFun[hostFun] = k.get();
  r.handles.insert(k.get());
  r.kernels.push_back(std::move(k));
}

RT_API void __cudaRegisterVar(void **handle, char *hostVar, char *deviceAddress,
                              const char *deviceName, int ext, size_t size,
                              int constant, int global) {
  (void)deviceName, (void)ext, (void)global;
  if (!handle || !hostVar || !deviceAddress)
    return;
  Registry &r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  auto *f = reinterpret_cast<FatbinRecord *>(handle);
  auto v = std::make_unique<VarRecord>();
  v->hostVar = hostVar;
  v->name = deviceAddress;
  v->size = size;
  v->constant = constant != 0;
  v->fatbin = f;
  f->vars.push_back(v.get());
  r.byHostVar[hostVar] = v.get();
  r.vars.push_back(std::move(v));
}

RT_API void __cudaRegisterManagedVar(void **handle, void **hostVarPtrAddress,
                                     char *deviceAddress,
                                     const char *deviceName, int ext,
                                     size_t size, int constant, int global) {
  (void)deviceAddress, (void)ext, (void)constant, (void)global;
  if (!handle || !hostVarPtrAddress || !deviceName)
    return;
  // Until the module loads (__cudaInitModule, or a launch) the host code
  // reads zeroed memory of the process; then the variable's own address,
  // mapped in the process too (Driver.cpp, "Managed memory").
  *hostVarPtrAddress = calloc(1, size ? size : 1);
  Registry &r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  reinterpret_cast<FatbinRecord *>(handle)->managed.push_back(
      {hostVarPtrAddress, deviceName});
}

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

namespace {
struct CallConfiguration {
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;
};
thread_local std::vector<CallConfiguration> callStack;
} // namespace

RT_API unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block,
                                            size_t shared,
                                            cudaStream_t stream) {
  callStack.push_back({grid, block, shared, stream});
  return 0;
}

RT_API cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block,
                                              size_t *shared, void *stream) {
  if (callStack.empty())
    return setError(cudaErrorMissingConfiguration);
  CallConfiguration c = callStack.back();
  callStack.pop_back();
  *grid = c.grid;
  *block = c.block;
  *shared = c.shared;
  *static_cast<cudaStream_t *>(stream) = c.stream;
  return cudaSuccess;
}

RT_API cudaError_t __cudaGetKernel(void **kernel, const void *hostFun) {
  KernelRecord *k = findKernel(hostFun);
  if (!k)
    return setError(cudaErrorInvalidDeviceFunction);
  *kernel = k;
  return cudaSuccess;
}

namespace wooly::capture {

cudaError_t launch(const void *func, dim3 grid, dim3 block, void **args,
                   size_t shared, cudaStream_t stream, bool cooperative) {
  CUfunction fn;
  cudaError_t e = resolveFunction(func, fn);
  if (e != cudaSuccess)
    return setError(e);
  if (shared > UINT32_MAX)
    return setError(cudaErrorInvalidValue);
  if (isCapturing(stream)) {
    if (cooperative) {
      log(1, "a cooperative launch in stream capture is not supported yet");
      return setError(cudaErrorStreamCaptureUnsupported);
    }
    return setError(captureKernel(stream, func, fn, grid, block, args, shared));
  }
  CUresult r =
      cooperative
          ? cuLaunchCooperativeKernel(fn, grid.x, grid.y, grid.z, block.x,
                                      block.y, block.z, (unsigned)shared,
                                      stream, args)
          : cuLaunchKernel(fn, grid.x, grid.y, grid.z, block.x, block.y,
                           block.z, (unsigned)shared, stream, args, nullptr);
  if (r == CUDA_ERROR_INVALID_VALUE)
    return setError(cudaErrorInvalidConfiguration);
  return r == CUDA_SUCCESS ? cudaSuccess : fromDriver(r);
}

} // namespace wooly::capture

RT_API cudaError_t __cudaLaunchKernel(const void *kernel, dim3 grid, dim3 block,
                                      void **args, size_t shared,
                                      cudaStream_t stream) {
  return launch(kernel, grid, block, args, shared, stream);
}

RT_API cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block,
                                    void **args, size_t shared,
                                    cudaStream_t stream) {
  return launch(func, grid, block, args, shared, stream);
}

RT_API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config,
                                       const void *func, void **args) {
  if (!config)
    return setError(cudaErrorInvalidValue);
  LaunchAttributes attributes;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const cudaLaunchAttribute &a = config->attrs[i];
    if (const char *why =
            driverLaunchAttribute(a.id, a.val.bytes, attributes)) {
      log(1, "cudaLaunchKernelExC: launch attribute %d: %s", (int)a.id, why);
      return setError(cudaErrorNotSupported);
    }
  }
  return launch(func, config->gridDim, config->blockDim, args,
                config->dynamicSmemBytes, config->stream,
                attributes.cooperative);
}

RT_API cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 grid,
                                               dim3 block, void **args,
                                               size_t shared,
                                               cudaStream_t stream) {
  return launch(func, grid, block, args, shared, stream,
                /*cooperative=*/true);
}

RT_API cudaError_t cudaGetFuncBySymbol(void **fn, const void *symbol) {
  if (!fn)
    return setError(cudaErrorInvalidValue);
  CUfunction f;
  cudaError_t e = resolveFunction(symbol, f);
  if (e != cudaSuccess)
    return setError(e);
  *fn = f;
  return cudaSuccess;
}

RT_API cudaError_t cudaGetKernel(void **kernel, const void *entry) {
  return __cudaGetKernel(kernel, entry);
}

RT_API cudaError_t cudaFuncGetName(const char **name, const void *func) {
  if (!name)
    return setError(cudaErrorInvalidValue);
  KernelRecord *k = findKernel(func);
  if (!k)
    return setError(cudaErrorInvalidDeviceFunction);
  *name = k->name.c_str();
  return cudaSuccess;
}

RT_API cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr,
                                         const void *func) {
  if (!attr)
    return setError(cudaErrorInvalidValue);
  CUfunction fn;
  cudaError_t e = resolveFunction(func, fn);
  if (e != cudaSuccess)
    return setError(e);
  std::memset(attr, 0, sizeof *attr);
  int v = 0;
  auto get = [&](int a) -> CUresult { return cuFuncGetAttribute(&v, a, fn); };
  RETURN_IF(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
  attr->sharedSizeBytes = (size_t)v;
  RETURN_IF(get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES));
  attr->localSizeBytes = (size_t)v;
  RETURN_IF(get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  attr->maxThreadsPerBlock = v;
  RETURN_IF(get(CU_FUNC_ATTRIBUTE_NUM_REGS));
  attr->numRegs = v;
  RETURN_IF(get(CU_FUNC_ATTRIBUTE_PTX_VERSION));
  attr->ptxVersion = v;
  RETURN_IF(get(CU_FUNC_ATTRIBUTE_BINARY_VERSION));
  attr->binaryVersion = v;
  RETURN_IF(get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES));
  attr->maxDynamicSharedSizeBytes = v;
  attr->preferredShmemCarveout = -1;
  return cudaSuccess;
}

RT_API cudaError_t cudaFuncSetAttribute(const void *func, int attr, int value) {
  CUfunction fn;
  cudaError_t e = resolveFunction(func, fn);
  if (e != cudaSuccess)
    return setError(e);
  CUresult r = cuFuncSetAttribute(fn, attr, value);
  return r == CUDA_SUCCESS ? cudaSuccess : fromDriver(r);
}

RT_API cudaError_t cudaFuncSetCacheConfig(const void *func, int config) {
  (void)config;
  return findKernel(func) ? cudaSuccess
                          : setError(cudaErrorInvalidDeviceFunction);
}

RT_API cudaError_t cudaFuncSetSharedMemConfig(const void *func, int config) {
  return cudaFuncSetCacheConfig(func, config);
}

RT_API cudaError_t cudaFuncGetParamInfo(const void *func, size_t index,
                                        size_t *offset, size_t *size) {
  CUfunction fn;
  cudaError_t e = resolveFunction(func, fn);
  if (e != cudaSuccess)
    return setError(e);
  CUresult r = cuFuncGetParamInfo(fn, index, offset, size);
  return r == CUDA_SUCCESS ? cudaSuccess : fromDriver(r);
}

RT_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int *blocks, const void *func, int blockSize, size_t dynamicShared,
    unsigned flags) {
  CUfunction fn;
  cudaError_t e = resolveFunction(func, fn);
  if (e != cudaSuccess)
    return setError(e);
  CUresult r = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
      blocks, fn, blockSize, dynamicShared, flags);
  return r == CUDA_SUCCESS ? cudaSuccess : fromDriver(r);
}

RT_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(
    int *blocks, const void *func, int blockSize, size_t dynamicShared) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
      blocks, func, blockSize, dynamicShared, 0);
}

RT_API cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *bytes,
                                                             const void *func,
                                                             int numBlocks,
                                                             int blockSize) {
  (void)numBlocks, (void)blockSize;
  if (!bytes)
    return setError(cudaErrorInvalidValue);
  CUfunction fn;
  cudaError_t e = resolveFunction(func, fn);
  if (e != cudaSuccess)
    return setError(e);
  int maxDyn = 0, staticShared = 0;
  RETURN_IF(cuFuncGetAttribute(
      &maxDyn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn));
  RETURN_IF(cuFuncGetAttribute(&staticShared,
                               CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn));
  *bytes = (size_t)std::max(0, maxDyn - staticShared);
  return cudaSuccess;
}

//===----------------------------------------------------------------------===//
// Devices, versions, errors
//===----------------------------------------------------------------------===//

RT_API cudaError_t cudaGetDeviceCount(int *count) {
  if (!count)
    return setError(cudaErrorInvalidValue);
  cudaError_t e = ensureInit();
  if (e == cudaErrorNoDevice) {
    *count = 0;
    return setError(e);
  }
  if (e != cudaSuccess)
    return setError(e);
  RETURN_IF(cuDeviceGetCount(count));
  return cudaSuccess;
}

RT_API cudaError_t cudaGetDevice(int *device) {
  if (!device)
    return setError(cudaErrorInvalidValue);
  INIT();
  *device = 0;
  return cudaSuccess;
}

RT_API cudaError_t cudaSetDevice(int device) {
  INIT();
  if (device != 0) {
    log(1, "cudaSetDevice(%d): a Wooly session sees one device (0)", device);
    return setError(cudaErrorInvalidDevice);
  }
  return cudaSuccess;
}

RT_API cudaError_t cudaInitDevice(int device, unsigned deviceFlags,
                                  unsigned flags) {
  (void)deviceFlags, (void)flags;
  return cudaSetDevice(device);
}

RT_API cudaError_t cudaChooseDevice(int *device, const void *prop) {
  (void)prop;
  if (!device)
    return setError(cudaErrorInvalidValue);
  INIT();
  *device = 0;
  return cudaSuccess;
}

/// The flags the program set (scheduling, cudaDeviceMapHost, ...): kept
/// for cudaGetDeviceFlags; the session behaves the same whatever they are
/// (synchronisation waits for the server's reply; mapped memory works
/// without cudaDeviceMapHost).
std::atomic<unsigned> deviceFlags{0};

RT_API cudaError_t cudaSetDeviceFlags(unsigned flags) {
  // cudaDeviceScheduleMask (7) with values 0-2 and 4, cudaDeviceMapHost
  // (8), cudaDeviceLmemResizeToMax (16), cudaDeviceSyncMemops (128).
  if ((flags & ~(0x07u | 0x08u | 0x10u | 0x80u)) || (flags & 7) == 3 ||
      (flags & 7) > 4)
    return setError(cudaErrorInvalidValue);
  INIT();
  deviceFlags = flags;
  return cudaSuccess;
}

RT_API cudaError_t cudaGetDeviceFlags(unsigned *flags) {
  if (!flags)
    return setError(cudaErrorInvalidValue);
  INIT();
  *flags = deviceFlags;
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int device) {
  INIT();
  RETURN_IF(cuDeviceGetPCIBusId(id, len, device));
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceGetTexture1DLinearMaxWidth(
    size_t *maxWidthInElements, const cudaChannelFormatDesc *desc, int device) {
  if (!desc)
    return setError(cudaErrorInvalidValue);
  INIT();
  unsigned channels =
      (desc->x > 0) + (desc->y > 0) + (desc->z > 0) + (desc->w > 0);
  RETURN_IF(
      cuDeviceGetTexture1DLinearMaxWidth(maxWidthInElements, CUarray_format(0),
                                         channels == 3 ? 4 : channels, device));
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *id) {
  INIT();
  RETURN_IF(cuDeviceGetByPCIBusId(device, id));
  return cudaSuccess;
}

RT_API cudaError_t cudaCtxResetPersistingL2Cache() {
  INIT();
  RETURN_IF(cuCtxResetPersistingL2Cache());
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceGetAttribute(int *value, int attr, int device) {
  if (!value)
    return setError(cudaErrorInvalidValue);
  INIT();
  if (device != 0)
    return setError(cudaErrorInvalidDevice);
  // Stream-ordered allocation and memory pools are this library's ("Memory
  // pools" below), not the driver's (whose cuMemPool* are not there yet):
  // the runtime says it has them.
  if (attr == CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) {
    *value = 1;
    return cudaSuccess;
  }
  RETURN_IF(cuDeviceGetAttribute(value, attr, device));
  return cudaSuccess;
}

RT_API cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device) {
  if (!prop)
    return setError(cudaErrorInvalidValue);
  INIT();
  if (device != 0)
    return setError(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof *prop);
  RETURN_IF(cuDeviceGetName(prop->name, sizeof prop->name, 0));
  RETURN_IF(cuDeviceGetUuid_v2(&prop->uuid, 0));
  RETURN_IF(cuDeviceTotalMem_v2(&prop->totalGlobalMem, 0));
  auto attr = [](int a) {
    int v = 0;
    cuDeviceGetAttribute(&v, a, 0);
    return v;
  };
  prop->sharedMemPerBlock =
      (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  prop->regsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  prop->warpSize = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  prop->memPitch = (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_PITCH);
  prop->maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  for (int i = 0; i < 3; ++i) {
    prop->maxThreadsDim[i] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + i);
    prop->maxGridSize[i] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + i);
  }
  prop->totalConstMem = (size_t)attr(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY);
  prop->major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  prop->minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  prop->textureAlignment = (size_t)attr(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT);
  prop->texturePitchAlignment =
      (size_t)attr(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT);
  prop->surfaceAlignment = (size_t)attr(CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT);
  // Texture and surface limits: each field's values are consecutive
  // attributes from the first.
  struct Limit {
    int *field;
    int count;
    int first;
  } limits[] = {
      {&prop->maxTexture1D, 1, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH},
      {&prop->maxTexture1DMipmap, 1,
       CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH},
      {prop->maxTexture2D, 2, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH},
      {prop->maxTexture2DMipmap, 2,
       CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH},
      {prop->maxTexture2DLinear, 3,
       CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH},
      {prop->maxTexture2DGather, 2,
       CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH},
      {prop->maxTexture3D, 3, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH},
      {prop->maxTexture3DAlt, 3,
       CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE},
      {&prop->maxTextureCubemap, 1,
       CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH},
      {prop->maxTexture1DLayered, 2,
       CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH},
      {prop->maxTexture2DLayered, 3,
       CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH},
      {prop->maxTextureCubemapLayered, 2,
       CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH},
      {&prop->maxSurface1D, 1, CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH},
      {prop->maxSurface2D, 2, CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH},
      {prop->maxSurface3D, 3, CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH},
      {prop->maxSurface1DLayered, 2,
       CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH},
      {prop->maxSurface2DLayered, 3,
       CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH},
      {&prop->maxSurfaceCubemap, 1,
       CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH},
      {prop->maxSurfaceCubemapLayered, 2,
       CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH},
  };
  for (const Limit &l : limits)
    for (int i = 0; i < l.count; ++i)
      l.field[i] = attr(l.first + i);
  prop->multiProcessorCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  prop->canMapHostMemory = attr(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
  prop->hostRegisterSupported =
      attr(CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED);
  prop->canUseHostPointerForRegisteredMem =
      attr(CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM);
  prop->concurrentKernels = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS);
  prop->asyncEngineCount = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
  prop->unifiedAddressing = attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
  prop->managedMemory = attr(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  prop->concurrentManagedAccess =
      attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
  prop->memoryBusWidth = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  prop->l2CacheSize = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  prop->maxThreadsPerMultiProcessor =
      attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  prop->streamPrioritiesSupported =
      attr(CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED);
  prop->globalL1CacheSupported =
      attr(CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED);
  prop->localL1CacheSupported =
      attr(CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED);
  prop->sharedMemPerMultiprocessor =
      (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  prop->regsPerMultiprocessor =
      attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  prop->sharedMemPerBlockOptin =
      (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  prop->maxBlocksPerMultiProcessor =
      attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  prop->memoryPoolsSupported = 1; // cudaDeviceGetAttribute
  prop->cooperativeLaunch = attr(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
  prop->hostNumaId = -1;
  prop->deviceNumaId = -1;
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
  INIT();
  RETURN_IF(cuCtxGetStreamPriorityRange(least, greatest));
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceSynchronize() {
  INIT();
  RETURN_IF(cuCtxSynchronize());
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceReset() {
  INIT();
  forgetGraphs();
  forgetModules();
  lastError = cudaSuccess;
  RETURN_IF(cuDevicePrimaryCtxReset_v2(0));
  return cudaSuccess;
}

// cudaLimit and CUlimit share their numbers (stack, printf FIFO, heap, ...).
RT_API cudaError_t cudaDeviceSetLimit(int limit, size_t value) {
  INIT();
  RETURN_IF(cuCtxSetLimit(CUlimit(limit), value));
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceGetLimit(size_t *value, int limit) {
  if (!value)
    return setError(cudaErrorInvalidValue);
  INIT();
  RETURN_IF(cuCtxGetLimit(value, CUlimit(limit)));
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceSetCacheConfig(int config) {
  (void)config;
  INIT();
  return cudaSuccess;
}

/// Shared memory bank size (deprecated; fixed on every GPU since Maxwell):
/// four bytes, and any of the three settings is accepted.
RT_API cudaError_t cudaDeviceSetSharedMemConfig(int config) {
  INIT();
  return config >= 0 && config <= 2 ? cudaSuccess
                                    : setError(cudaErrorInvalidValue);
}

RT_API cudaError_t cudaDeviceGetSharedMemConfig(int *config) {
  if (!config)
    return setError(cudaErrorInvalidValue);
  INIT();
  *config = 1; // cudaSharedMemBankSizeFourByte
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceGetCacheConfig(int *config) {
  if (!config)
    return setError(cudaErrorInvalidValue);
  *config = 0;
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer) {
  (void)device, (void)peer;
  if (!can)
    return setError(cudaErrorInvalidValue);
  *can = 0;
  return cudaSuccess;
}

RT_API cudaError_t cudaGetLastError() {
  cudaError_t e = lastError;
  lastError = cudaSuccess;
  return e;
}

RT_API cudaError_t cudaPeekAtLastError() { return lastError; }

namespace {
struct ErrorName {
  cudaError_t code;
  const char *name;
};
const ErrorName kErrorNames[] = {
#define WOOLY_CUDA_ERROR(name, value) {name, #name},
#include "CudaErrors.def"
#undef WOOLY_CUDA_ERROR
};
} // namespace

RT_API const char *cudaGetErrorName(cudaError_t error) {
  for (const ErrorName &e : kErrorNames)
    if (e.code == error)
      return e.name;
  return "cudaErrorUnknown";
}

RT_API const char *cudaGetErrorString(cudaError_t error) {
  if (const char *d = resultDescription(error))
    return d;
  for (const ErrorName &e : kErrorNames)
    if (e.code == error)
      return e.name;
  return "unrecognized error code";
}

RT_API cudaError_t cudaRuntimeGetVersion(int *version) {
  if (!version)
    return setError(cudaErrorInvalidValue);
  *version = kCudaVersion;
  return cudaSuccess;
}

RT_API cudaError_t cudaDriverGetVersion(int *version) {
  if (!version)
    return setError(cudaErrorInvalidValue);
  *version = kCudaVersion;
  return cudaSuccess;
}

RT_API cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol,
                                                    void **fn,
                                                    unsigned cudaVersion,
                                                    unsigned long long flags,
                                                    int *status) {
  CUdriverProcAddressQueryResult res = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = cuGetProcAddress_v2(symbol, fn, (int)cudaVersion, flags, &res);
  if (status)
    *status = res;
  if (r == CUDA_ERROR_INVALID_VALUE)
    return setError(cudaErrorInvalidValue);
  return cudaSuccess; // a missing symbol is reported through `status`
}

RT_API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **fn,
                                           unsigned long long flags,
                                           int *status) {
  return cudaGetDriverEntryPointByVersion(symbol, fn, kCudaVersion, flags,
                                          status);
}

RT_API cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w,
                                                   int f) {
  return cudaChannelFormatDesc{x, y, z, w, f};
}

RT_API cudaError_t cudaProfilerStart() { return cudaSuccess; }
RT_API cudaError_t cudaProfilerStop() { return cudaSuccess; }

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

namespace {
/// cudaMalloc's and cudaMallocManaged's checks; `alloc(&d)` makes the
/// allocation and returns the runtime's error.
template <typename Alloc>
cudaError_t allocate(void **ptr, size_t bytes, Alloc &&alloc) {
  if (!ptr)
    return setError(cudaErrorInvalidValue);
  INIT();
  if (bytes == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr d = 0;
  if (cudaError_t e = alloc(&d))
    return setError(e);
  *ptr = reinterpret_cast<void *>(d);
  return cudaSuccess;
}
} // namespace

RT_API cudaError_t cudaMalloc(void **ptr, size_t bytes) {
  return allocate(ptr, bytes, [&](CUdeviceptr *d) {
    CUresult r = cuMemAlloc_v2(d, bytes);
    return r == CUDA_ERROR_OUT_OF_MEMORY || r == CUDA_ERROR_INVALID_VALUE
               ? cudaErrorMemoryAllocation
               : static_cast<cudaError_t>(r);
  });
}

//===----------------------------------------------------------------------===//
// Memory pools (stream-ordered allocation)
//===----------------------------------------------------------------------===//
//
// The allocations of cudaMallocAsync and cudaMallocFromPoolAsync come from
// the server as cudaMalloc's do, usable at once (so also in stream order),
// and a freed one goes back to it at once. A pool is thus what it tells:
// its attributes, and the bytes of its live allocations (UsedMemCurrent and
// UsedMemHigh; the reserved bytes are the same, as no pool keeps memory
// back, whatever its release threshold). The one device has a default pool,
// the current one until cudaDeviceSetMemPool.

namespace {
struct MemPool {
  int reuse[3] = {1, 1, 1}; // cudaMemPoolReuse* (attributes 1 to 3)
  uint64_t releaseThreshold = 0;
  uint64_t used = 0, usedHigh = 0, reservedHigh = 0;
};

struct MemPools {
  std::mutex mu;
  MemPool defaultPool;
  MemPool *current = &defaultPool;
  std::set<MemPool *> created;
  /// The live allocations of each pool: address -> (pool, bytes).
  std::unordered_map<uintptr_t, std::pair<MemPool *, size_t>> allocations;

  /// `pool` if it is the default pool or one cudaMemPoolCreate made and
  /// not destroyed, else null. Called under `mu`.
  MemPool *find(cudaMemPool_t pool) {
    auto *p = reinterpret_cast<MemPool *>(pool);
    return p == &defaultPool || created.count(p) ? p : nullptr;
  }
};

MemPools &memPools() {
  static MemPools *pools = new MemPools; // outlives static destructors
  return *pools;
}

/// Allocates `bytes` for `pool` (the current one where null).
cudaError_t mallocFromPool(void **ptr, size_t bytes, cudaMemPool_t pool) {
  MemPools &pools = memPools();
  {
    std::lock_guard<std::mutex> lock(pools.mu);
    if (pool && !pools.find(pool))
      return setError(cudaErrorInvalidValue);
  }
  if (cudaError_t e = cudaMalloc(ptr, bytes))
    return e;
  std::lock_guard<std::mutex> lock(pools.mu);
  MemPool *p = pool ? pools.find(pool) : pools.current;
  if (!p) // destroyed meanwhile: an allocation of no pool
    return cudaSuccess;
  pools.allocations[reinterpret_cast<uintptr_t>(*ptr)] = {p, bytes};
  p->used += bytes;
  p->usedHigh = std::max(p->usedHigh, p->used);
  p->reservedHigh = std::max(p->reservedHigh, p->used);
  return cudaSuccess;
}

/// Forgets `ptr` as an allocation of its pool, if it is one.
void forgetPoolAllocation(void *ptr) {
  MemPools &pools = memPools();
  std::lock_guard<std::mutex> lock(pools.mu);
  auto it = pools.allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == pools.allocations.end())
    return;
  it->second.first->used -= it->second.second;
  pools.allocations.erase(it);
}
} // namespace

namespace wooly::capture {
cudaError_t allocateForGraph(void **ptr, size_t bytes) {
  return mallocFromPool(ptr, bytes, nullptr);
}

void freeGraphMemory(void *ptr) {
  forgetPoolAllocation(ptr);
  (void)cuMemFree_v2(reinterpret_cast<CUdeviceptr>(ptr));
}
} // namespace wooly::capture

namespace {
/// cudaMallocAsync's and cudaMallocFromPoolAsync's: in a capture, the
/// allocation is the graph's (an allocation node), made now.
cudaError_t mallocAsync(void **ptr, size_t bytes, cudaMemPool_t pool,
                        cudaStream_t stream) {
  if (cudaError_t e = mallocFromPool(ptr, bytes, pool))
    return e;
  if (isCapturing(stream)) {
    if (cudaError_t e = captureMemAlloc(stream, *ptr, bytes)) {
      freeGraphMemory(*ptr);
      *ptr = nullptr;
      return setError(e);
    }
  }
  return cudaSuccess;
}
} // namespace

RT_API cudaError_t cudaMallocAsync(void **ptr, size_t bytes,
                                   cudaStream_t stream) {
  // The allocation is usable at once, so also in stream order.
  return mallocAsync(ptr, bytes, nullptr, stream);
}

RT_API cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t bytes,
                                           cudaMemPool_t pool,
                                           cudaStream_t stream) {
  if (!pool)
    return setError(cudaErrorInvalidValue);
  return mallocAsync(ptr, bytes, pool, stream);
}

RT_API cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool,
                                               int device) {
  if (!pool)
    return setError(cudaErrorInvalidValue);
  if (device != 0)
    return setError(cudaErrorInvalidDevice);
  *pool = reinterpret_cast<cudaMemPool_t>(&memPools().defaultPool);
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *pool, int device) {
  if (!pool)
    return setError(cudaErrorInvalidValue);
  if (device != 0)
    return setError(cudaErrorInvalidDevice);
  MemPools &pools = memPools();
  std::lock_guard<std::mutex> lock(pools.mu);
  *pool = reinterpret_cast<cudaMemPool_t>(pools.current);
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t pool) {
  if (device != 0)
    return setError(cudaErrorInvalidDevice);
  MemPools &pools = memPools();
  std::lock_guard<std::mutex> lock(pools.mu);
  MemPool *p = pools.find(pool);
  if (!p)
    return setError(cudaErrorInvalidValue);
  pools.current = p;
  return cudaSuccess;
}

RT_API cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool,
                                     const cudaMemPoolProps *props) {
  if (!pool || !props || props->allocType != cudaMemAllocationTypePinned ||
      props->location.type != cudaMemLocationTypeDevice)
    return setError(cudaErrorInvalidValue);
  if (props->location.id != 0)
    return setError(cudaErrorInvalidDevice);
  if (props->handleTypes != 0) {
    log(1,
        "cudaMemPoolCreate: pools whose allocations can be exported (handle "
        "types 0x%x) are not supported yet",
        unsigned(props->handleTypes));
    return setError(cudaErrorNotSupported);
  }
  MemPools &pools = memPools();
  std::lock_guard<std::mutex> lock(pools.mu);
  auto *p = new MemPool;
  pools.created.insert(p);
  *pool = reinterpret_cast<cudaMemPool_t>(p);
  return cudaSuccess;
}

RT_API cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  MemPools &pools = memPools();
  std::lock_guard<std::mutex> lock(pools.mu);
  MemPool *p = pools.find(pool);
  if (!p || p == &pools.defaultPool)
    return setError(cudaErrorInvalidValue);
  // Its live allocations stay valid, allocations of no pool now.
  for (auto it = pools.allocations.begin(); it != pools.allocations.end();)
    it = it->second.first == p ? pools.allocations.erase(it) : std::next(it);
  if (pools.current == p)
    pools.current = &pools.defaultPool;
  pools.created.erase(p);
  delete p;
  return cudaSuccess;
}

RT_API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t minBytes) {
  (void)minBytes; // nothing is kept back to trim
  MemPools &pools = memPools();
  std::lock_guard<std::mutex> lock(pools.mu);
  return pools.find(pool) ? cudaSuccess : setError(cudaErrorInvalidValue);
}

namespace {
cudaError_t setPoolAttribute(MemPool &p, int attr, const void *value) {
  uint64_t v64;
  switch (attr) {
  case cudaMemPoolReuseFollowEventDependencies:
  case cudaMemPoolReuseAllowOpportunistic:
  case cudaMemPoolReuseAllowInternalDependencies:
    std::memcpy(&p.reuse[attr - 1], value, sizeof(int));
    return cudaSuccess;
  case cudaMemPoolAttrReleaseThreshold:
    std::memcpy(&p.releaseThreshold, value, sizeof(uint64_t));
    return cudaSuccess;
  case cudaMemPoolAttrReservedMemHigh: // only reset, to the current value
  case cudaMemPoolAttrUsedMemHigh:
    std::memcpy(&v64, value, sizeof v64);
    if (v64 != 0)
      return cudaErrorInvalidValue;
    (attr == cudaMemPoolAttrUsedMemHigh ? p.usedHigh : p.reservedHigh) = p.used;
    return cudaSuccess;
  default: // the current values are read-only
    return cudaErrorInvalidValue;
  }
}

cudaError_t getPoolAttribute(MemPool &p, int attr, void *value) {
  uint64_t v64;
  switch (attr) {
  case cudaMemPoolReuseFollowEventDependencies:
  case cudaMemPoolReuseAllowOpportunistic:
  case cudaMemPoolReuseAllowInternalDependencies:
    std::memcpy(value, &p.reuse[attr - 1], sizeof(int));
    return cudaSuccess;
  case cudaMemPoolAttrReleaseThreshold:
    v64 = p.releaseThreshold;
    break;
  case cudaMemPoolAttrReservedMemCurrent:
  case cudaMemPoolAttrUsedMemCurrent:
    v64 = p.used;
    break;
  case cudaMemPoolAttrReservedMemHigh:
    v64 = p.reservedHigh;
    break;
  case cudaMemPoolAttrUsedMemHigh:
    v64 = p.usedHigh;
    break;
  default:
    return cudaErrorInvalidValue;
  }
  std::memcpy(value, &v64, sizeof v64);
  return cudaSuccess;
}

/// `attribute(pool)` under the pools' lock, where `pool` is a pool and
/// `value` is not null; else cudaErrorInvalidValue.
template <typename F>
cudaError_t withPool(cudaMemPool_t pool, const void *value, F attribute) {
  MemPools &pools = memPools();
  std::lock_guard<std::mutex> lock(pools.mu);
  MemPool *p = pools.find(pool);
  cudaError_t e = p && value ? attribute(*p) : cudaErrorInvalidValue;
  return e == cudaSuccess ? e : setError(e);
}
} // namespace

RT_API cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, int attr,
                                           void *value) {
  return withPool(pool, value,
                  [&](MemPool &p) { return setPoolAttribute(p, attr, value); });
}

RT_API cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, int attr,
                                           void *value) {
  return withPool(pool, value,
                  [&](MemPool &p) { return getPoolAttribute(p, attr, value); });
}

RT_API cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool,
                                        const cudaMemAccessDesc *descs,
                                        size_t count) {
  MemPools &pools = memPools();
  std::lock_guard<std::mutex> lock(pools.mu);
  if (!pools.find(pool) || (count && !descs))
    return setError(cudaErrorInvalidValue);
  // The one device always reads and writes its pools' memory.
  for (size_t i = 0; i < count; ++i)
    if (descs[i].location.type != cudaMemLocationTypeDevice ||
        descs[i].location.id != 0)
      return setError(cudaErrorInvalidDevice);
  return cudaSuccess;
}

RT_API cudaError_t cudaMemPoolGetAccess(int *flags, cudaMemPool_t pool,
                                        CUmemLocation *location) {
  MemPools &pools = memPools();
  std::lock_guard<std::mutex> lock(pools.mu);
  if (!flags || !location || !pools.find(pool))
    return setError(cudaErrorInvalidValue);
  if (location->type != cudaMemLocationTypeDevice || location->id != 0)
    return setError(cudaErrorInvalidDevice);
  *flags = cudaMemAccessFlagsProtReadWrite;
  return cudaSuccess;
}

RT_API cudaError_t cudaFree(void *ptr) {
  if (!ptr)
    return cudaSuccess;
  INIT();
  forgetGraphMemory(ptr);
  forgetPoolAllocation(ptr);
  RETURN_IF(cuMemFree_v2(reinterpret_cast<CUdeviceptr>(ptr)));
  return cudaSuccess;
}

RT_API cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream) {
  // In a capture: the graph's free node (the memory goes with the graph).
  if (ptr && isCapturing(stream))
    return setError(captureMemFree(stream, ptr));
  // The server frees once the session's earlier work is done.
  return cudaFree(ptr);
}

RT_API cudaError_t cudaMallocPitch(void **ptr, size_t *pitch, size_t width,
                                   size_t height) {
  if (!pitch)
    return setError(cudaErrorInvalidValue);
  if (width > SIZE_MAX - 255)
    return setError(cudaErrorMemoryAllocation);
  *pitch = (width + 255) & ~size_t(255);
  if (height && *pitch > SIZE_MAX / height)
    return setError(cudaErrorMemoryAllocation);
  return cudaMalloc(ptr, *pitch * height);
}

/// Managed memory: device memory whose address is mapped in this process
/// too, made coherent at launches and synchronisations (Driver.cpp,
/// "Managed memory").
RT_API cudaError_t cudaMallocManaged(void **ptr, size_t bytes, unsigned flags) {
  return allocate(ptr, bytes, [&](CUdeviceptr *d) {
    CUresult r = cuMemAllocManaged(d, bytes, flags);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation
                                         : static_cast<cudaError_t>(r);
  });
}

RT_API cudaError_t cudaMemPrefetchAsync(const void *ptr, size_t bytes,
                                        CUmemLocation location, unsigned flags,
                                        cudaStream_t stream) {
  INIT();
  RETURN_IF(cuMemPrefetchAsync_v2(reinterpret_cast<CUdeviceptr>(ptr), bytes,
                                  location, flags, stream));
  return cudaSuccess;
}

RT_API cudaError_t cudaMemAdvise(const void *ptr, size_t bytes, int advice,
                                 CUmemLocation location) {
  INIT();
  RETURN_IF(cuMemAdvise_v2(reinterpret_cast<CUdeviceptr>(ptr), bytes, advice,
                           location));
  return cudaSuccess;
}

RT_API cudaError_t cudaMemRangeGetAttributes(void **data, size_t *dataSizes,
                                             int *attributes,
                                             size_t numAttributes,
                                             const void *ptr, size_t bytes) {
  INIT();
  RETURN_IF(cuMemRangeGetAttributes(data, dataSizes, attributes, numAttributes,
                                    reinterpret_cast<CUdeviceptr>(ptr), bytes));
  return cudaSuccess;
}

RT_API cudaError_t cudaMemRangeGetAttribute(void *data, size_t dataSize,
                                            int attribute, const void *ptr,
                                            size_t bytes) {
  return cudaMemRangeGetAttributes(&data, &dataSize, &attribute, 1, ptr, bytes);
}

RT_API cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void *ptr,
                                            size_t bytes, unsigned flags) {
  INIT();
  RETURN_IF(cuStreamAttachMemAsync(stream, reinterpret_cast<CUdeviceptr>(ptr),
                                   bytes, flags));
  return cudaSuccess;
}

RT_API cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
  INIT();
  RETURN_IF(cuMemGetInfo_v2(free, total));
  return cudaSuccess;
}

RT_API cudaError_t cudaHostAlloc(void **ptr, size_t bytes, unsigned flags) {
  if (!ptr)
    return setError(cudaErrorInvalidValue);
  // Mapped memory is the device's too: it needs the session (which may be
  // this program's first CUDA call).
  if (flags & 0x02) // cudaHostAllocMapped
    INIT();
  RETURN_IF(cuMemHostAlloc(ptr, bytes, flags));
  return cudaSuccess;
}

RT_API cudaError_t cudaMallocHost(void **ptr, size_t bytes) {
  return cudaHostAlloc(ptr, bytes, 0);
}

RT_API cudaError_t cudaHostGetFlags(unsigned *flags, void *ptr) {
  RETURN_IF(cuMemHostGetFlags(flags, ptr));
  return cudaSuccess;
}

RT_API cudaError_t cudaFreeHost(void *ptr) {
  RETURN_IF(cuMemFreeHost(ptr));
  return cudaSuccess;
}

/// Registered host memory: see cuMemHostRegister_v2 and
/// cuMemHostGetDevicePointer_v2 (the flags have the same values).
RT_API cudaError_t cudaHostRegister(void *ptr, size_t bytes, unsigned flags) {
  INIT();
  RETURN_IF(cuMemHostRegister_v2(ptr, bytes, flags));
  return cudaSuccess;
}

RT_API cudaError_t cudaHostUnregister(void *ptr) {
  INIT();
  RETURN_IF(cuMemHostUnregister(ptr));
  return cudaSuccess;
}

/// Mapped host memory: cudaHostAllocMapped's has one address for the host
/// and the device; registered memory's device address is another.
RT_API cudaError_t cudaHostGetDevicePointer(void **dptr, void *ptr,
                                            unsigned flags) {
  if (!dptr)
    return setError(cudaErrorInvalidValue);
  INIT();
  CUdeviceptr d = 0;
  RETURN_IF(cuMemHostGetDevicePointer_v2(&d, ptr, flags));
  *dptr = reinterpret_cast<void *>(d);
  return cudaSuccess;
}

RT_API cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *attr,
                                            const void *ptr) {
  if (!attr)
    return setError(cudaErrorInvalidValue);
  INIT();
  std::memset(attr, 0, sizeof *attr);
  unsigned type = 0;
  CUdeviceptr p = reinterpret_cast<CUdeviceptr>(ptr);
  if (cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) !=
      CUDA_SUCCESS) {
    attr->type = cudaMemoryTypeUnregistered;
    attr->device = -2;
    return cudaSuccess;
  }
  attr->device = 0;
  int managed = 0;
  if (type == CU_MEMORYTYPE_DEVICE &&
      cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p) ==
          CUDA_SUCCESS &&
      managed) {
    attr->type = cudaMemoryTypeManaged;
    attr->devicePointer = const_cast<void *>(ptr);
    attr->hostPointer = const_cast<void *>(ptr);
  } else if (type == CU_MEMORYTYPE_DEVICE) {
    attr->type = cudaMemoryTypeDevice;
    attr->devicePointer = const_cast<void *>(ptr);
  } else {
    attr->type = cudaMemoryTypeHost;
    attr->hostPointer = const_cast<void *>(ptr);
  }
  return cudaSuccess;
}

namespace wooly::capture {

/// One copy, in stream order when `async`; kind Default is resolved from the
/// pointers.
cudaError_t memcpy(void *dst, const void *src, size_t bytes,
                   cudaMemcpyKind kind, cudaStream_t stream, bool async) {
  INIT();
  if (!bytes)
    return cudaSuccess;
  if (!dst || !src)
    return setError(cudaErrorInvalidValue);
  if (kind == cudaMemcpyDefault) {
    // By where each range starts: one that runs past its allocation is then
    // the server's to refuse, never copied here.
    bool d = driverIsDevicePointer(dst, 1);
    bool s = driverIsDevicePointer(src, 1);
    kind = d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
             : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  }
  if (async && isCapturing(stream))
    return setError(captureMemcpy(stream, dst, src, bytes, kind));
  auto d = reinterpret_cast<CUdeviceptr>(dst);
  auto s = reinterpret_cast<CUdeviceptr>(src);
  CUresult r;
  switch (kind) {
  case cudaMemcpyHostToDevice:
    r = async ? cuMemcpyHtoDAsync_v2(d, src, bytes, stream)
              : cuMemcpyHtoD_v2(d, src, bytes);
    break;
  case cudaMemcpyDeviceToHost:
    r = async ? cuMemcpyDtoHAsync_v2(dst, s, bytes, stream)
              : cuMemcpyDtoH_v2(dst, s, bytes);
    break;
  case cudaMemcpyDeviceToDevice:
    r = async ? cuMemcpyDtoDAsync_v2(d, s, bytes, stream)
              : cuMemcpyDtoD_v2(d, s, bytes);
    break;
  case cudaMemcpyHostToHost:
    // In stream order: what the stream did before must be done.
    r = async ? cuStreamSynchronize(stream) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
      std::memmove(dst, src, bytes);
    break;
  default:
    return setError(cudaErrorInvalidMemcpyDirection);
  }
  return r == CUDA_SUCCESS ? cudaSuccess : fromDriver(r);
}

cudaError_t memset(void *dst, int value, size_t bytes, cudaStream_t stream,
                   bool async) {
  INIT();
  if (!bytes)
    return cudaSuccess;
  if (async && isCapturing(stream))
    return setError(
        captureMemset(stream, dst, (unsigned char)value, 1, bytes, 1, bytes));
  auto d = reinterpret_cast<CUdeviceptr>(dst);
  CUresult r = async ? cuMemsetD8Async(d, (unsigned char)value, bytes, stream)
                     : cuMemsetD8_v2(d, (unsigned char)value, bytes);
  return r == CUDA_SUCCESS ? cudaSuccess : fromDriver(r);
}

} // namespace wooly::capture

RT_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                              cudaMemcpyKind kind) {
  return wooly::capture::memcpy(dst, src, bytes, kind, nullptr, false);
}

RT_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                                   cudaMemcpyKind kind, cudaStream_t stream) {
  return wooly::capture::memcpy(dst, src, bytes, kind, stream, true);
}

/// Copies between devices: the one device with itself.
RT_API cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src,
                                  int srcDevice, size_t bytes) {
  if (dstDevice != 0 || srcDevice != 0)
    return setError(cudaErrorInvalidDevice);
  return wooly::capture::memcpy(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                nullptr, false);
}

RT_API cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice,
                                       const void *src, int srcDevice,
                                       size_t bytes, cudaStream_t stream) {
  if (dstDevice != 0 || srcDevice != 0)
    return setError(cudaErrorInvalidDevice);
  return wooly::capture::memcpy(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                stream, true);
}

RT_API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                                     size_t spitch, size_t width, size_t height,
                                     cudaMemcpyKind kind, cudaStream_t stream) {
  if (width > dpitch || width > spitch)
    return setError(cudaErrorInvalidPitchValue);
  INIT();
  if (isCapturing(stream)) {
    // One captured copy per row.
    for (size_t row = 0; row < height; ++row) {
      cudaError_t e =
          wooly::capture::memcpy(static_cast<char *>(dst) + row * dpitch,
                                 static_cast<const char *>(src) + row * spitch,
                                 width, kind, stream, true);
      if (e != cudaSuccess)
        return e;
    }
    return cudaSuccess;
  }
  // The driver's 2D copy (contiguous rows are one copy; from the device,
  // one round trip).
  if (unsigned(kind) > unsigned(cudaMemcpyDefault))
    return setError(cudaErrorInvalidMemcpyDirection);
  CUmemorytype from = CU_MEMORYTYPE_UNIFIED, to = CU_MEMORYTYPE_UNIFIED;
  switch (kind) {
  case cudaMemcpyHostToHost:
    from = to = CU_MEMORYTYPE_HOST;
    break;
  case cudaMemcpyHostToDevice:
    from = CU_MEMORYTYPE_HOST;
    to = CU_MEMORYTYPE_DEVICE;
    break;
  case cudaMemcpyDeviceToHost:
    from = CU_MEMORYTYPE_DEVICE;
    to = CU_MEMORYTYPE_HOST;
    break;
  case cudaMemcpyDeviceToDevice:
    from = to = CU_MEMORYTYPE_DEVICE;
    break;
  case cudaMemcpyDefault:
    break;
  }
  CUDA_MEMCPY2D p;
  std::memset(&p, 0, sizeof p);
  p.srcMemoryType = from;
  p.srcHost = src;
  p.srcDevice = reinterpret_cast<CUdeviceptr>(src);
  p.srcPitch = spitch;
  p.dstMemoryType = to;
  p.dstHost = dst;
  p.dstDevice = reinterpret_cast<CUdeviceptr>(dst);
  p.dstPitch = dpitch;
  p.WidthInBytes = width;
  p.Height = height;
  RETURN_IF(cuMemcpy2DAsync_v2(&p, stream));
  return cudaSuccess;
}

RT_API cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src,
                                size_t spitch, size_t width, size_t height,
                                cudaMemcpyKind kind) {
  cudaError_t e =
      cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, nullptr);
  if (e != cudaSuccess)
    return e;
  RETURN_IF(cuStreamSynchronize(nullptr));
  return cudaSuccess;
}

RT_API cudaError_t cudaMemset(void *dst, int value, size_t bytes) {
  return wooly::capture::memset(dst, value, bytes, nullptr, false);
}

RT_API cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes,
                                   cudaStream_t stream) {
  return wooly::capture::memset(dst, value, bytes, stream, true);
}

RT_API cudaError_t cudaMemset2DAsync(void *dst, size_t pitch, int value,
                                     size_t width, size_t height,
                                     cudaStream_t stream) {
  if (width > pitch)
    return setError(cudaErrorInvalidPitchValue);
  for (size_t row = 0; row < height; ++row) {
    cudaError_t e = wooly::capture::memset(
        static_cast<char *>(dst) + row * pitch, value, width, stream, true);
    if (e != cudaSuccess)
      return e;
  }
  return cudaSuccess;
}

RT_API cudaError_t cudaMemset2D(void *dst, size_t pitch, int value,
                                size_t width, size_t height) {
  cudaError_t e = cudaMemset2DAsync(dst, pitch, value, width, height, nullptr);
  if (e != cudaSuccess)
    return e;
  RETURN_IF(cuStreamSynchronize(nullptr));
  return cudaSuccess;
}

/// The `extent.width` bytes of `extent.height` rows in each of
/// `extent.depth` slices of `p` (rows `p.pitch` apart, slices
/// `p.pitch * p.ysize`): one memset per run of contiguous bytes (a slice
/// whose rows fill their pitch, all slices where they fill theirs too).
RT_API cudaError_t cudaMemset3DAsync(cudaPitchedPtr p, int value,
                                     cudaExtent extent, cudaStream_t stream) {
  if (extent.width > p.pitch || (extent.depth > 1 && extent.height > p.ysize))
    return setError(cudaErrorInvalidValue);
  if (extent.width == 0 || extent.height == 0 || extent.depth == 0)
    return cudaSuccess;
  char *base = static_cast<char *>(p.ptr);
  size_t slicePitch = p.pitch * p.ysize;
  bool rowsContiguous = extent.width == p.pitch;
  bool slicesContiguous = rowsContiguous && extent.height == p.ysize;
  if (slicesContiguous)
    return wooly::capture::memset(
        base, value, slicePitch * (extent.depth - 1) + p.pitch * extent.height,
        stream, true);
  for (size_t z = 0; z < extent.depth; ++z) {
    char *slice = base + z * slicePitch;
    cudaError_t e =
        rowsContiguous
            ? wooly::capture::memset(slice, value, p.pitch * extent.height,
                                     stream, true)
            : cudaMemset2DAsync(slice, p.pitch, value, extent.width,
                                extent.height, stream);
    if (e != cudaSuccess)
      return e;
  }
  return cudaSuccess;
}

RT_API cudaError_t cudaMemset3D(cudaPitchedPtr p, int value,
                                cudaExtent extent) {
  cudaError_t e = cudaMemset3DAsync(p, value, extent, nullptr);
  if (e != cudaSuccess)
    return e;
  RETURN_IF(cuStreamSynchronize(nullptr));
  return cudaSuccess;
}

RT_API cudaError_t cudaGetSymbolAddress(void **ptr, const void *symbol) {
  if (!ptr)
    return setError(cudaErrorInvalidValue);
  CUdeviceptr address;
  size_t size;
  cudaError_t e = resolveSymbol(symbol, address, size);
  if (e != cudaSuccess)
    return setError(e);
  *ptr = reinterpret_cast<void *>(address);
  return cudaSuccess;
}

RT_API cudaError_t cudaGetSymbolSize(size_t *bytes, const void *symbol) {
  if (!bytes)
    return setError(cudaErrorInvalidValue);
  CUdeviceptr address;
  cudaError_t e = resolveSymbol(symbol, address, *bytes);
  return e == cudaSuccess ? e : setError(e);
}

namespace {
/// A copy to (`toSymbol`) or from a registered variable, `offset` bytes in.
cudaError_t symbolCopy(const void *symbol, void *host, size_t bytes,
                       size_t offset, cudaMemcpyKind kind, cudaStream_t stream,
                       bool async, bool toSymbol) {
  CUdeviceptr address;
  size_t size;
  cudaError_t e = resolveSymbol(symbol, address, size);
  if (e != cudaSuccess)
    return setError(e);
  if (offset > size || bytes > size - offset)
    return setError(cudaErrorInvalidValue);
  cudaMemcpyKind other =
      toSymbol ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  if (kind != other && kind != cudaMemcpyDeviceToDevice &&
      kind != cudaMemcpyDefault)
    return setError(cudaErrorInvalidMemcpyDirection);
  void *device = reinterpret_cast<void *>(address + offset);
  return toSymbol
             ? wooly::capture::memcpy(device, host, bytes, kind, stream, async)
             : wooly::capture::memcpy(host, device, bytes, kind, stream, async);
}
} // namespace

RT_API cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src,
                                           size_t bytes, size_t offset,
                                           cudaMemcpyKind kind,
                                           cudaStream_t stream) {
  return symbolCopy(symbol, const_cast<void *>(src), bytes, offset, kind,
                    stream, true, true);
}

RT_API cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src,
                                      size_t bytes, size_t offset,
                                      cudaMemcpyKind kind) {
  return symbolCopy(symbol, const_cast<void *>(src), bytes, offset, kind,
                    nullptr, false, true);
}

RT_API cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol,
                                             size_t bytes, size_t offset,
                                             cudaMemcpyKind kind,
                                             cudaStream_t stream) {
  return symbolCopy(symbol, dst, bytes, offset, kind, stream, true, false);
}

RT_API cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol,
                                        size_t bytes, size_t offset,
                                        cudaMemcpyKind kind) {
  return symbolCopy(symbol, dst, bytes, offset, kind, nullptr, false, false);
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

RT_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *stream,
                                                unsigned flags, int priority) {
  if (!stream)
    return setError(cudaErrorInvalidValue);
  INIT();
  RETURN_IF(cuStreamCreateWithPriority(stream, flags, priority));
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream,
                                             unsigned flags) {
  return cudaStreamCreateWithPriority(stream, flags, 0);
}

RT_API cudaError_t cudaStreamCreate(cudaStream_t *stream) {
  return cudaStreamCreateWithPriority(stream, 0, 0);
}

//===----------------------------------------------------------------------===//
// Stream attributes: the hints a stream may carry for its launches (access
// policy window, synchronisation policy, memory synchronisation domains)
// are kept and read back but change nothing here; the priority is read
// from the stream.
//===----------------------------------------------------------------------===//

namespace {
struct StreamAttributes {
  std::mutex mu;
  /// stream -> attribute id -> its value's 64 bytes.
  std::map<cudaStream_t, std::map<int, std::array<char, 64>>> values;
};

StreamAttributes &streamAttributes() {
  static auto *attributes = new StreamAttributes; // outlives static dtors
  return *attributes;
}

bool isStreamHint(int attr) {
  return attr == cudaLaunchAttributeAccessPolicyWindow ||
         attr == cudaLaunchAttributeSynchronizationPolicy ||
         attr == cudaLaunchAttributeMemSyncDomainMap ||
         attr == cudaLaunchAttributeMemSyncDomain;
}
} // namespace

RT_API cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  INIT();
  RETURN_IF(cuStreamDestroy_v2(stream));
  StreamAttributes &a = streamAttributes();
  std::lock_guard<std::mutex> lock(a.mu);
  a.values.erase(stream);
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  INIT();
  if (isCapturing(stream))
    return setError(cudaErrorStreamCaptureUnsupported);
  RETURN_IF(cuStreamSynchronize(stream));
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamQuery(cudaStream_t stream) {
  INIT();
  CUresult r = cuStreamQuery(stream);
  if (r == CUDA_ERROR_NOT_READY)
    return cudaErrorNotReady; // not an error for cudaGetLastError
  RETURN_IF(r);
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamGetPriority(cudaStream_t stream, int *priority) {
  INIT();
  RETURN_IF(cuStreamGetPriority(stream, priority));
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned *flags) {
  INIT();
  RETURN_IF(cuStreamGetFlags(stream, flags));
  return cudaSuccess;
}

/// A stream's id, unique among the streams alive: its handle (the legacy
/// default stream's, 0, is CUDA's cudaStreamLegacy, 0x1).
RT_API cudaError_t cudaStreamGetId(cudaStream_t stream,
                                   unsigned long long *id) {
  if (!id)
    return setError(cudaErrorInvalidValue);
  INIT();
  unsigned flags;
  RETURN_IF(cuStreamGetFlags(stream, &flags)); // a stream of the process
  uintptr_t handle = reinterpret_cast<uintptr_t>(stream);
  *id = handle ? handle : 0x1;
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamSetAttribute(cudaStream_t stream, int attr,
                                          const void *value) {
  if (!value)
    return setError(cudaErrorInvalidValue);
  INIT();
  unsigned flags;
  RETURN_IF(cuStreamGetFlags(stream, &flags));
  if (attr == cudaLaunchAttributePriority) {
    log(1, "cudaStreamSetAttribute: a stream's priority is set when it is "
           "created (cudaStreamCreateWithPriority); changing it is not "
           "supported yet");
    return setError(cudaErrorNotSupported);
  }
  if (!isStreamHint(attr))
    return setError(cudaErrorInvalidValue);
  StreamAttributes &a = streamAttributes();
  std::lock_guard<std::mutex> lock(a.mu);
  std::memcpy(a.values[stream][attr].data(), value, 64);
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamGetAttribute(cudaStream_t stream, int attr,
                                          void *value) {
  if (!value)
    return setError(cudaErrorInvalidValue);
  INIT();
  if (attr == cudaLaunchAttributePriority) {
    int priority = 0;
    RETURN_IF(cuStreamGetPriority(stream, &priority));
    std::memset(value, 0, 64);
    std::memcpy(value, &priority, sizeof priority);
    return cudaSuccess;
  }
  unsigned flags;
  RETURN_IF(cuStreamGetFlags(stream, &flags));
  if (!isStreamHint(attr))
    return setError(cudaErrorInvalidValue);
  StreamAttributes &a = streamAttributes();
  std::lock_guard<std::mutex> lock(a.mu);
  std::memset(value, 0, 64); // what a stream has where nothing was set
  if (auto s = a.values.find(stream); s != a.values.end())
    if (auto v = s->second.find(attr); v != s->second.end())
      std::memcpy(value, v->second.data(), 64);
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamCopyAttributes(cudaStream_t dst,
                                            cudaStream_t src) {
  INIT();
  unsigned flags;
  RETURN_IF(cuStreamGetFlags(dst, &flags));
  RETURN_IF(cuStreamGetFlags(src, &flags));
  StreamAttributes &a = streamAttributes();
  std::lock_guard<std::mutex> lock(a.mu);
  auto s = a.values.find(src);
  if (s == a.values.end())
    a.values.erase(dst);
  else
    a.values[dst] = s->second;
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamGetDevice(cudaStream_t stream, int *device) {
  (void)stream;
  if (!device)
    return setError(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                       unsigned flags) {
  INIT();
  // Waiting for an event recorded in a capture joins the capture.
  if (isCapturing(stream) || recordedByCapture(event))
    return setError(captureEventWait(stream, event));
  RETURN_IF(cuStreamWaitEvent(stream, event, flags));
  return cudaSuccess;
}

RT_API cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn,
                                      void *data) {
  INIT();
  if (!fn)
    return setError(cudaErrorInvalidValue);
  if (isCapturing(stream))
    return setError(captureHost(stream, fn, data));
  RETURN_IF(cuLaunchHostFunc(stream, fn, data));
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamAddCallback(cudaStream_t stream,
                                         cudaStreamCallback_t callback,
                                         void *data, unsigned flags) {
  INIT();
  if (!callback || flags != 0)
    return setError(cudaErrorInvalidValue);
  // The callback runs on this thread once the stream's work is done, and is
  // told that work's status.
  CUresult r = cuStreamSynchronize(stream);
  callback(stream, static_cast<cudaError_t>(r), data);
  return cudaSuccess;
}

RT_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event,
                                            unsigned flags) {
  if (!event)
    return setError(cudaErrorInvalidValue);
  INIT();
  RETURN_IF(cuEventCreate(event, flags));
  return cudaSuccess;
}

RT_API cudaError_t cudaEventCreate(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, 0);
}

RT_API cudaError_t cudaEventDestroy(cudaEvent_t event) {
  INIT();
  RETURN_IF(cuEventDestroy_v2(event));
  return cudaSuccess;
}

RT_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  INIT();
  if (isCapturing(stream))
    return setError(captureEventRecord(stream, event));
  RETURN_IF(cuEventRecord(event, stream));
  return cudaSuccess;
}

RT_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t event,
                                            cudaStream_t stream,
                                            unsigned flags) {
  (void)flags;
  return cudaEventRecord(event, stream);
}

RT_API cudaError_t cudaEventQuery(cudaEvent_t event) {
  INIT();
  CUresult r = cuEventQuery(event);
  if (r == CUDA_ERROR_NOT_READY)
    return cudaErrorNotReady;
  RETURN_IF(r);
  return cudaSuccess;
}

RT_API cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  INIT();
  RETURN_IF(cuEventSynchronize(event));
  return cudaSuccess;
}

RT_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
                                        cudaEvent_t end) {
  INIT();
  RETURN_IF(cuEventElapsedTime_v2(ms, start, end));
  return cudaSuccess;
}

//===----------------------------------------------------------------------===//
// Per-thread default stream variants (the per-thread default stream is the
// session's legacy default stream; see capture/README.md).
//===----------------------------------------------------------------------===//

WOOLY_ALIAS(__cudaLaunchKernel_ptsz, __cudaLaunchKernel)
WOOLY_ALIAS(cudaLaunchKernel_ptsz, cudaLaunchKernel)
WOOLY_ALIAS(cudaLaunchKernelExC_ptsz, cudaLaunchKernelExC)
WOOLY_ALIAS(cudaLaunchCooperativeKernel_ptsz, cudaLaunchCooperativeKernel)
WOOLY_ALIAS(cudaLaunchHostFunc_ptsz, cudaLaunchHostFunc)
WOOLY_ALIAS(cudaMemcpy_ptds, cudaMemcpy)
WOOLY_ALIAS(cudaMemcpyAsync_ptsz, cudaMemcpyAsync)
WOOLY_ALIAS(cudaMemcpy2D_ptds, cudaMemcpy2D)
WOOLY_ALIAS(cudaMemcpy2DAsync_ptsz, cudaMemcpy2DAsync)
WOOLY_ALIAS(cudaMemset_ptds, cudaMemset)
WOOLY_ALIAS(cudaMemsetAsync_ptsz, cudaMemsetAsync)
WOOLY_ALIAS(cudaMemset2D_ptds, cudaMemset2D)
WOOLY_ALIAS(cudaMemset2DAsync_ptsz, cudaMemset2DAsync)
WOOLY_ALIAS(cudaMemset3D_ptds, cudaMemset3D)
WOOLY_ALIAS(cudaMemset3DAsync_ptsz, cudaMemset3DAsync)
WOOLY_ALIAS(cudaMemcpyToSymbol_ptds, cudaMemcpyToSymbol)
WOOLY_ALIAS(cudaMemcpyFromSymbol_ptds, cudaMemcpyFromSymbol)
WOOLY_ALIAS(cudaMemcpyToSymbolAsync_ptsz, cudaMemcpyToSymbolAsync)
WOOLY_ALIAS(cudaMemcpyFromSymbolAsync_ptsz, cudaMemcpyFromSymbolAsync)
WOOLY_ALIAS(cudaMallocAsync_ptsz, cudaMallocAsync)
WOOLY_ALIAS(cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync)
WOOLY_ALIAS(cudaFreeAsync_ptsz, cudaFreeAsync)
WOOLY_ALIAS(cudaStreamSynchronize_ptsz, cudaStreamSynchronize)
WOOLY_ALIAS(cudaStreamQuery_ptsz, cudaStreamQuery)
WOOLY_ALIAS(cudaStreamWaitEvent_ptsz, cudaStreamWaitEvent)
WOOLY_ALIAS(cudaStreamAddCallback_ptsz, cudaStreamAddCallback)
WOOLY_ALIAS(cudaStreamGetPriority_ptsz, cudaStreamGetPriority)
WOOLY_ALIAS(cudaStreamGetFlags_ptsz, cudaStreamGetFlags)
WOOLY_ALIAS(cudaStreamGetId_ptsz, cudaStreamGetId)
WOOLY_ALIAS(cudaStreamSetAttribute_ptsz, cudaStreamSetAttribute)
WOOLY_ALIAS(cudaStreamGetAttribute_ptsz, cudaStreamGetAttribute)
WOOLY_ALIAS(cudaStreamCopyAttributes_ptsz, cudaStreamCopyAttributes)
WOOLY_ALIAS(cudaStreamGetDevice_ptsz, cudaStreamGetDevice)
WOOLY_ALIAS(cudaEventRecord_ptsz, cudaEventRecord)
WOOLY_ALIAS(cudaEventRecordWithFlags_ptsz, cudaEventRecordWithFlags)
WOOLY_ALIAS(cudaGetDriverEntryPoint_ptsz, cudaGetDriverEntryPoint)
WOOLY_ALIAS(cudaGetDriverEntryPointByVersion_ptsz,
            cudaGetDriverEntryPointByVersion)
