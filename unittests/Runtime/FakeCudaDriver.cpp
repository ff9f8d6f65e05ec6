//===- FakeCudaDriver.cpp - A libcuda.so.1 for tests ------------*- C++ -*-===//
//
// Just enough of the CUDA driver API for CudaDeviceTest, without a GPU:
// memory is host memory, a "module" is the PTX text, cuLaunchKernel
// records its arguments (fakeCudaLastLaunch) instead of running anything,
// and events measure every kernel as 0.25 ms.
// Built three times (unittests/Runtime/CMakeLists.txt), as libcuda.so.1 in
// three folders:
//   FAKE_CUDA_NO_DEVICE   cuInit fails with CUDA_ERROR_NO_DEVICE;
//   FAKE_CUDA_INCOMPLETE  cuLaunchKernel is missing;
//   (neither)             the whole API used by CudaDevice.
// The full one also stands in for a GPU under wooly-serve --backend cuda
// (test/Capture/cuda-device-lost.test: LD_LIBRARY_PATH names its folder):
// a kernel whose name contains $WOOLY_FAKE_CUDA_FAULT faults as an illegal
// address does on a GPU, the next synchronisation returns
// CUDA_ERROR_ILLEGAL_ADDRESS, and so does every later call that reaches
// the context (CUDA's sticky errors). The kernel "faulty" faults once, not
// stickily (CudaDeviceTest).
//
//===----------------------------------------------------------------------===//

#include "FakeCudaDriver.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

#define API extern "C" __attribute__((visibility("default")))

namespace {
const char *errorName(int r) {
  switch (r) {
  case 0:
    return "CUDA_SUCCESS";
  case 1:
    return "CUDA_ERROR_INVALID_VALUE";
  case 100:
    return "CUDA_ERROR_NO_DEVICE";
  case 218:
    return "CUDA_ERROR_INVALID_PTX";
  case 500:
    return "CUDA_ERROR_NOT_FOUND";
  case 700:
    return "CUDA_ERROR_ILLEGAL_ADDRESS";
  }
  return nullptr;
}
const char *errorString(int r) {
  switch (r) {
  case 0:
    return "no error";
  case 1:
    return "invalid argument";
  case 100:
    return "no CUDA-capable device is detected";
  case 218:
    return "a PTX JIT compilation failed";
  case 500:
    return "named symbol not found";
  case 700:
    return "an illegal memory access was encountered";
  }
  return nullptr;
}
struct Module {
  std::string ptx;
};
struct Function {
  std::string name;
};
std::string pendingError;  // The kernel whose launch "faults" at sync.
bool pendingLoses = false; // That fault loses the context (sticky).
bool lost = false;         // The context is lost: every call fails.
} // namespace

/// The sticky error of a lost context, returned by every call that reaches
/// the context.
#define RETURN_IF_LOST()                                                       \
  if (lost)                                                                    \
  return 700

using wooly::test::FakeLaunch;
static FakeLaunch lastLaunch;
API const FakeLaunch *fakeCudaLastLaunch() { return &lastLaunch; }

API int cuGetErrorName(int r, const char **s) {
  *s = errorName(r);
  return *s ? 0 : 1;
}
API int cuGetErrorString(int r, const char **s) {
  *s = errorString(r);
  return *s ? 0 : 1;
}

#ifdef FAKE_CUDA_NO_DEVICE
API int cuInit(unsigned) { return 100; }
#else
API int cuInit(unsigned) { return 0; }
API int cuDeviceGetCount(int *n) {
  *n = 1;
  return 0;
}
API int cuDeviceGet(int *d, int ordinal) {
  *d = ordinal;
  return ordinal == 0 ? 0 : 1;
}
API int cuDeviceGetName(char *name, int len, int) {
  std::strncpy(name, "Fake GPU", size_t(len));
  return 0;
}
API int cuDevicePrimaryCtxRetain(void **ctx, int) {
  static int context;
  *ctx = &context;
  return 0;
}
API int cuDevicePrimaryCtxRelease_v2(int) { return 0; }
API int cuCtxSetCurrent(void *) { return 0; }
API int cuCtxSynchronize() {
  RETURN_IF_LOST();
  if (pendingError.empty())
    return 0;
  pendingError.clear();
  lost = std::exchange(pendingLoses, false);
  return 700;
}
API int cuMemAlloc_v2(unsigned long long *p, size_t n) {
  RETURN_IF_LOST();
  if (n == 0)
    return 1;
  *p = reinterpret_cast<uintptr_t>(std::malloc(n));
  return 0;
}
API int cuMemFree_v2(unsigned long long p) {
  RETURN_IF_LOST();
  std::free(reinterpret_cast<void *>(uintptr_t(p)));
  return 0;
}
API int cuMemAllocAsync(unsigned long long *p, size_t n, void *) {
  return cuMemAlloc_v2(p, n);
}
API int cuMemFreeAsync(unsigned long long p, void *) { return cuMemFree_v2(p); }
/// Virtual memory management: a reservation is a PROT_NONE host mapping,
/// a physical allocation (cuMemCreate) a memfd of its size that keeps its
/// bytes while its handle lives or a mapping holds it, and cuMemMap maps
/// it (MAP_SHARED, so every address that maps one handle sees the same
/// bytes) with no access, as CUDA does, until cuMemSetAccess grants read
/// (CU_MEM_ACCESS_FLAGS_PROT_READ) or read and write. Copies and memsets
/// check the access of the mappings they touch: one into memory that is
/// not writable, or out of memory that is not readable, fails with
/// CUDA_ERROR_ILLEGAL_ADDRESS instead of touching it. Unmapping makes the
/// range inaccessible again. Counters let tests see what was reserved,
/// created (handles, and their bytes) and mapped.
static unsigned long long fakeVmmLive[4]; // reserved, created, mapped, bytes
API const unsigned long long *fakeCudaVmmLive() { return fakeVmmLive; }
namespace {
struct Physical {
  int fd;
  size_t bytes;
};
struct Mapping {
  size_t bytes;
  int prot;
};
std::mutex vmmMutex;
std::map<unsigned long long, Physical> physicals; // by handle
std::map<unsigned long long, Mapping> mappings;   // by address
unsigned long long nextHandle = 1;

/// Whether `[p, p + n)` may be accessed with `prot` (PROT_READ or
/// PROT_WRITE): memory outside every mapping is the stand-in's other
/// memory (cuMemAlloc, module variables), always accessible.
bool accessible(unsigned long long p, size_t n, int prot) {
  std::lock_guard<std::mutex> lock(vmmMutex);
  auto it = mappings.upper_bound(p);
  if (it != mappings.begin())
    --it;
  for (; it != mappings.end() && it->first < p + n; ++it)
    if (it->first + it->second.bytes > p && !(it->second.prot & prot))
      return false;
  return true;
}
} // namespace
API int cuMemGetAllocationGranularity(size_t *g, const void *, int) {
  *g = 2 << 20;
  return 0;
}
API int cuMemAddressReserve(unsigned long long *p, size_t n, size_t,
                            unsigned long long, unsigned long long) {
  void *m = mmap(nullptr, n, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED)
    return 2; // CUDA_ERROR_OUT_OF_MEMORY
  *p = reinterpret_cast<uintptr_t>(m);
  ++fakeVmmLive[0];
  return 0;
}
API int cuMemAddressFree(unsigned long long p, size_t n) {
  munmap(reinterpret_cast<void *>(uintptr_t(p)), n);
  --fakeVmmLive[0];
  return 0;
}
API int cuMemCreate(unsigned long long *h, size_t n, const void *,
                    unsigned long long) {
  int fd = memfd_create("fake-cuda-physical", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, off_t(n)) != 0) {
    if (fd >= 0)
      close(fd);
    return 2;
  }
  std::lock_guard<std::mutex> lock(vmmMutex);
  *h = nextHandle++;
  physicals[*h] = Physical{fd, n};
  ++fakeVmmLive[1];
  fakeVmmLive[3] += n;
  return 0;
}
/// The memory itself lives on while a mapping holds it (the memfd's pages
/// stay with its mappings), as CUDA's does.
API int cuMemRelease(unsigned long long h) {
  std::lock_guard<std::mutex> lock(vmmMutex);
  auto it = physicals.find(h);
  if (it == physicals.end())
    return 1;
  close(it->second.fd);
  fakeVmmLive[3] -= it->second.bytes;
  physicals.erase(it);
  --fakeVmmLive[1];
  return 0;
}
API int cuMemMap(unsigned long long p, size_t n, size_t offset,
                 unsigned long long h, unsigned long long) {
  std::lock_guard<std::mutex> lock(vmmMutex);
  auto it = physicals.find(h);
  if (it == physicals.end() || offset + n > it->second.bytes ||
      mappings.count(p))
    return 1;
  void *m = mmap(reinterpret_cast<void *>(uintptr_t(p)), n, PROT_NONE,
                 MAP_SHARED | MAP_FIXED, it->second.fd, off_t(offset));
  if (m == MAP_FAILED)
    return 2;
  mappings[p] = Mapping{n, PROT_NONE};
  ++fakeVmmLive[2];
  return 0;
}
API int cuMemSetAccess(unsigned long long p, size_t n, const int *desc,
                       size_t count) {
  // CUmemAccessDesc: {location type, location id, flags}.
  if (count != 1)
    return 1;
  int flags = desc[2];
  int prot = flags == 3   ? PROT_READ | PROT_WRITE
             : flags == 1 ? PROT_READ
                          : PROT_NONE;
  std::lock_guard<std::mutex> lock(vmmMutex);
  auto it = mappings.find(p);
  if (it == mappings.end() || it->second.bytes != n ||
      mprotect(reinterpret_cast<void *>(uintptr_t(p)), n, prot) != 0)
    return 1;
  it->second.prot = prot;
  return 0;
}
API int cuMemUnmap(unsigned long long p, size_t n) {
  std::lock_guard<std::mutex> lock(vmmMutex);
  auto it = mappings.find(p);
  if (it == mappings.end() || it->second.bytes != n)
    return 1;
  mmap(reinterpret_cast<void *>(uintptr_t(p)), n, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  mappings.erase(it);
  --fakeVmmLive[2];
  return 0;
}

/// A device with 3 GiB of 4 free (wooly-serve's capacity is at most that).
API int cuMemGetInfo_v2(size_t *freeBytes, size_t *totalBytes) {
  *freeBytes = size_t(3) << 30;
  *totalBytes = size_t(4) << 30;
  return 0;
}
API int cuMemcpyHtoD_v2(unsigned long long d, const void *s, size_t n) {
  RETURN_IF_LOST();
  if (!accessible(d, n, PROT_WRITE))
    return 700;
  std::memcpy(reinterpret_cast<void *>(uintptr_t(d)), s, n);
  return 0;
}
/// Tests: copies to the host of 1 MiB or more take this long (a slow link).
static std::atomic<unsigned> slowCopyMs{0};
API void fakeCudaSlowCopies(unsigned ms) { slowCopyMs = ms; }
API int cuMemcpyDtoH_v2(void *d, unsigned long long s, size_t n) {
  RETURN_IF_LOST();
  if (!accessible(s, n, PROT_READ))
    return 700;
  if (n >= (1 << 20) && slowCopyMs)
    std::this_thread::sleep_for(std::chrono::milliseconds(slowCopyMs));
  std::memcpy(d, reinterpret_cast<const void *>(uintptr_t(s)), n);
  return 0;
}
API int cuMemsetD8_v2(unsigned long long d, unsigned char v, size_t n) {
  RETURN_IF_LOST();
  if (!accessible(d, n, PROT_WRITE))
    return 700;
  std::memset(reinterpret_cast<void *>(uintptr_t(d)), v, n);
  return 0;
}
// Streams run their work at once (like the copies above); a stream is an
// int that counts the streams made.
static int streamsMade = 0;
API int cuStreamCreate(void **stream, unsigned) {
  *stream = new int(++streamsMade);
  return 0;
}
API int cuStreamDestroy_v2(void *stream) {
  delete static_cast<int *>(stream);
  return 0;
}
API int cuStreamSynchronize(void *) { return cuCtxSynchronize(); }
API int cuMemcpyHtoDAsync_v2(unsigned long long d, const void *s, size_t n,
                             void *) {
  return cuMemcpyHtoD_v2(d, s, n);
}
API int cuMemcpyDtoHAsync_v2(void *d, unsigned long long s, size_t n, void *) {
  return cuMemcpyDtoH_v2(d, s, n);
}
API int cuMemcpyDtoDAsync_v2(unsigned long long d, unsigned long long s,
                             size_t n, void *) {
  RETURN_IF_LOST();
  if (!accessible(s, n, PROT_READ) || !accessible(d, n, PROT_WRITE))
    return 700;
  std::memmove(reinterpret_cast<void *>(uintptr_t(d)),
               reinterpret_cast<const void *>(uintptr_t(s)), n);
  return 0;
}
API int cuMemsetD8Async(unsigned long long d, unsigned char v, size_t n,
                        void *) {
  return cuMemsetD8_v2(d, v, n);
}
// An H100's: 132 SMs, compute capability 9.0.
API int cuDeviceGetAttribute(int *value, int attribute, int) {
  switch (attribute) {
  case 16:
    *value = 132;
    return 0;
  case 75:
    *value = 9;
    return 0;
  case 76:
    *value = 0;
    return 0;
  case 115: // memory pools (the stream-ordered allocator)
    *value = 1;
    return 0;
  case 102: // virtual memory management
    *value = 1;
    return 0;
  }
  return 1;
}
API int cuModuleLoadDataEx(void **module, const void *image, unsigned n,
                           int *options, void **values) {
  RETURN_IF_LOST();
  const char *ptx = static_cast<const char *>(image);
  if (std::strstr(ptx, ".entry") == nullptr) {
    // Writes into the error log (option 5) of the size given (option 6).
    char *log = nullptr;
    size_t size = 0;
    for (unsigned i = 0; i < n; ++i) {
      if (options[i] == 5)
        log = static_cast<char *>(values[i]);
      if (options[i] == 6)
        size = reinterpret_cast<uintptr_t>(values[i]);
    }
    if (log && size)
      std::snprintf(log, size, "ptxas fatal   : no .entry in the input");
    return 218;
  }
  *module = new Module{ptx};
  return 0;
}
// A module variable `.global .u32 NAME` of the module is 4 bytes of host
// memory (leaked: tests only).
API int cuModuleGetGlobal_v2(unsigned long long *p, size_t *size, void *module,
                             const char *name) {
  std::string decl = std::string(".global .u32 ") + name;
  if (static_cast<Module *>(module)->ptx.find(decl) == std::string::npos)
    return 500;
  *p = reinterpret_cast<uintptr_t>(std::calloc(1, 4));
  *size = 4;
  return 0;
}
API int cuModuleUnload(void *module) {
  delete static_cast<Module *>(module);
  return 0;
}
API int cuModuleGetFunction(void **fn, void *module, const char *name) {
  std::string entry = std::string(".entry ") + name;
  if (static_cast<Module *>(module)->ptx.find(entry) == std::string::npos)
    return 500;
  *fn = new Function{name}; // Leaked: tests only.
  return 0;
}
API int cuFuncSetAttribute(void *, int, int) { return 0; }
#ifndef FAKE_CUDA_INCOMPLETE
API int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz,
                       unsigned bx, unsigned by, unsigned bz, unsigned shared,
                       void *stream, void **kernelParams, void **extra) {
  if (!stream || kernelParams || !extra)
    return 1;
  // {BUFFER_POINTER, buf, BUFFER_SIZE, &size, END}
  if (extra[0] != reinterpret_cast<void *>(1) ||
      extra[2] != reinterpret_cast<void *>(2) || extra[4] != nullptr)
    return 1;
  const auto *buf = static_cast<const uint8_t *>(extra[1]);
  size_t size = *static_cast<size_t *>(extra[3]);
  const std::string &name = static_cast<Function *>(fn)->name;
  std::snprintf(lastLaunch.kernel, sizeof lastLaunch.kernel, "%s",
                name.c_str());
  lastLaunch.grid[0] = gx, lastLaunch.grid[1] = gy, lastLaunch.grid[2] = gz;
  lastLaunch.block[0] = bx, lastLaunch.block[1] = by, lastLaunch.block[2] = bz;
  lastLaunch.shared = shared;
  lastLaunch.stream = *static_cast<int *>(stream);
  lastLaunch.params.assign(buf, buf + size);
  RETURN_IF_LOST();
  if (name == "faulty")
    pendingError = name;
  const char *fault = std::getenv("WOOLY_FAKE_CUDA_FAULT");
  if (fault && *fault && name.find(fault) != std::string::npos) {
    pendingError = name;
    pendingLoses = true;
  }
  return 0;
}
// Events: every kernel "takes" 0.25 ms.
API int cuEventCreate(void **event, unsigned) {
  *event = new int(0);
  return 0;
}
API int cuEventDestroy_v2(void *event) {
  delete static_cast<int *>(event);
  return 0;
}
API int cuEventRecord(void *, void *stream) { return stream ? 0 : 1; }
API int cuEventElapsedTime(float *ms, void *, void *) {
  *ms = 0.25f;
  return 0;
}
#endif
#endif
