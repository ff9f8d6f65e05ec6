//===- FakeCuda.cpp - A CUDA driver without a GPU, for tests
//---------------===//
//
// libcuda.so.1 as far as wooly-serve's cuda backend (lib/Runtime/CUDA) uses
// it, with host memory as the device's and kernels that do nothing, so that
// machines without a GPU (CI) can run the server's cuda backend through its
// error paths: put this library's folder first in LD_LIBRARY_PATH of
// `wooly-serve --backend cuda`.
//
// WOOLY_FAKE_CUDA_FAULT=NAME makes a launch of a kernel whose name contains
// NAME fault as a GPU does on an illegal address: the launch returns
// CUDA_SUCCESS, the next synchronisation CUDA_ERROR_ILLEGAL_ADDRESS, and
// every later call of the context the same error (CUDA's sticky errors).
//
// Not a simulator: kernels do not run, so no result of one is right.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;

constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kNotFound = 500;
constexpr CUresult kIllegalAddress = 700;

struct Module {
  std::set<std::string> kernels;
};
struct Function {
  std::string name;
};

std::mutex mu;
/// The context's sticky error (kSuccess while it works).
CUresult sticky = kSuccess;
/// Set by a faulting launch, returned by the next synchronisation.
bool faultPending = false;
int context = 1;

/// The sticky error, if the context has one (callers hold `mu`).
CUresult stickyLocked() { return sticky; }

/// A synchronisation: a pending fault becomes the context's sticky error.
CUresult synchronise() {
  std::lock_guard<std::mutex> lock(mu);
  if (faultPending) {
    faultPending = false;
    sticky = kIllegalAddress;
  }
  return sticky;
}

CUresult current() {
  std::lock_guard<std::mutex> lock(mu);
  return stickyLocked();
}

/// The `.entry` names of a PTX module.
std::set<std::string> entries(const char *ptx) {
  std::set<std::string> names;
  for (const char *p = ptx; (p = std::strstr(p, ".entry")); p += 6) {
    const char *q = p + 6;
    while (*q == ' ' || *q == '\t')
      ++q;
    const char *end = q;
    while (*end && *end != '(' && *end != ' ' && *end != '\n' && *end != '\t')
      ++end;
    names.insert(std::string(q, end));
  }
  return names;
}

int attribute(int attr) {
  switch (attr) {
  case 1: // max threads per block
  case 2: // max block dim x
  case 3: // y
    return 1024;
  case 4: // z
    return 64;
  case 5: // max grid dim x
    return 0x7fffffff;
  case 6:
  case 7:
    return 65535;
  case 8: // shared memory per block
    return 48 * 1024;
  case 9: // constant memory
    return 64 * 1024;
  case 10: // warp size
    return 32;
  case 12: // registers per block
    return 65536;
  case 13: // clock rate (kHz)
    return 1000000;
  case 16: // multiprocessors
    return 4;
  case 39: // threads per multiprocessor
    return 2048;
  case 75: // compute capability
    return 9;
  case 76:
    return 0;
  case 97: // shared memory per block, opt-in
    return 227 * 1024;
  default:
    return 0;
  }
}

} // namespace

extern "C" {

CUresult cuGetErrorName(CUresult r, const char **name) {
  switch (r) {
  case kSuccess:
    *name = "CUDA_SUCCESS";
    return kSuccess;
  case kInvalidValue:
    *name = "CUDA_ERROR_INVALID_VALUE";
    return kSuccess;
  case kOutOfMemory:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return kSuccess;
  case kNotFound:
    *name = "CUDA_ERROR_NOT_FOUND";
    return kSuccess;
  case kIllegalAddress:
    *name = "CUDA_ERROR_ILLEGAL_ADDRESS";
    return kSuccess;
  }
  *name = nullptr;
  return kInvalidValue;
}

CUresult cuGetErrorString(CUresult r, const char **text) {
  *text = r == kIllegalAddress ? "an illegal memory access was encountered"
          : r == kSuccess      ? "no error"
                               : "error (fake CUDA driver)";
  return kSuccess;
}

CUresult cuInit(unsigned) { return kSuccess; }
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return kSuccess;
}
CUresult cuDeviceGet(int *device, int ordinal) {
  if (ordinal != 0)
    return kInvalidValue;
  *device = 0;
  return kSuccess;
}
CUresult cuDeviceGetName(char *name, int len, int) {
  std::snprintf(name, size_t(len), "%s", "Wooly fake GPU (no kernels run)");
  return kSuccess;
}
CUresult cuDeviceGetAttribute(int *value, int attr, int) {
  *value = attribute(attr);
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int) {
  *ctx = &context;
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
CUresult cuCtxSetCurrent(void *) { return kSuccess; }
CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
  *free = *total = size_t(1) << 30;
  return current();
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  if (CUresult r = current())
    return r;
  void *m = std::calloc(1, bytes ? bytes : 1);
  if (!m)
    return kOutOfMemory;
  *p = reinterpret_cast<CUdeviceptr>(m);
  return kSuccess;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  if (CUresult r = current())
    return r;
  std::free(reinterpret_cast<void *>(p));
  return kSuccess;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n,
                              void *) {
  if (CUresult r = current())
    return r;
  std::memcpy(reinterpret_cast<void *>(dst), src, n);
  return kSuccess;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *) {
  if (CUresult r = current())
    return r;
  std::memcpy(dst, reinterpret_cast<const void *>(src), n);
  return kSuccess;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n,
                              void *) {
  if (CUresult r = current())
    return r;
  std::memmove(reinterpret_cast<void *>(dst),
               reinterpret_cast<const void *>(src), n);
  return kSuccess;
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, void *) {
  if (CUresult r = current())
    return r;
  std::memset(reinterpret_cast<void *>(dst), v, n);
  return kSuccess;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  if (CUresult r = synchronise())
    return r;
  return cuMemcpyHtoDAsync_v2(dst, src, n, nullptr);
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  if (CUresult r = synchronise())
    return r;
  return cuMemcpyDtoHAsync_v2(dst, src, n, nullptr);
}
CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) {
  if (CUresult r = synchronise())
    return r;
  return cuMemsetD8Async(dst, v, n, nullptr);
}

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned, void *,
                            void *) {
  if (CUresult r = current())
    return r;
  auto *m = new Module;
  m->kernels = entries(static_cast<const char *>(image));
  *module = m;
  return kSuccess;
}
CUresult cuModuleUnload(void *module) {
  delete static_cast<Module *>(module);
  return current();
}
CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  if (CUresult r = current())
    return r;
  if (!static_cast<Module *>(module)->kernels.count(name))
    return kNotFound;
  *function = new Function{name}; // lives as long as the process
  return kSuccess;
}
CUresult cuModuleGetGlobal_v2(CUdeviceptr *, size_t *, void *, const char *) {
  if (CUresult r = current())
    return r;
  return kNotFound; // module variables: not modelled
}
CUresult cuFuncSetAttribute(void *, int, int) { return current(); }

CUresult cuLaunchKernel(void *function, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, void *, void **,
                        void **) {
  std::lock_guard<std::mutex> lock(mu);
  if (sticky)
    return sticky;
  const char *fault = std::getenv("WOOLY_FAKE_CUDA_FAULT");
  if (fault && *fault &&
      static_cast<Function *>(function)->name.find(fault) != std::string::npos)
    faultPending = true;
  return kSuccess;
}

CUresult cuStreamCreate(void **stream, unsigned) {
  if (CUresult r = current())
    return r;
  *stream = new int(0);
  return kSuccess;
}
CUresult cuStreamDestroy_v2(void *stream) {
  delete static_cast<int *>(stream);
  return current();
}
CUresult cuStreamSynchronize(void *) { return synchronise(); }

} // extern "C"
