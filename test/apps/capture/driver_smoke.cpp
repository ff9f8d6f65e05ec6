//===- driver_smoke.cpp - Wooly's libcuda.so.1 without a CUDA toolkit -----===//
//
// A driver-API program built by the project's own compiler (no nvcc, no
// CUDA headers: the declarations come from capture/CudaAbi.h), so that
// machines without a CUDA toolkit test the driver drop-in too. It loads
// nvcc's PTX from test/corpus (argument 1: elementwise.sm_90.ptx) and
// checks:
//  - device queries, the primary context, cuCtxCreate;
//  - module load, functions, parameter info, attributes, occupancy;
//  - launches with kernelParams and with a packed `extra` buffer;
//  - streams, events, a pattern memset, unified cuMemcpy, pointer
//    attributes;
//  - cuGetProcAddress (both versions) and cuGetErrorName/String;
//  - errors: unknown kernels, foreign handles, bad configurations, and a
//    module with no PTX.
// Prints `PASS driver_smoke` or `FAIL driver_smoke: ...` (exit 1).
//
//===----------------------------------------------------------------------===//

#include "CudaAbi.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace wooly::cuabi;

extern "C" {
CUresult cuInit(unsigned);
CUresult cuDriverGetVersion(int *);
CUresult cuDeviceGetCount(int *);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuDeviceGetName(char *, int, CUdevice);
CUresult cuDeviceGetAttribute(int *, int, CUdevice);
CUresult cuDeviceTotalMem_v2(size_t *, CUdevice);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuCtxCreate_v2(CUcontext *, unsigned, CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuCtxGetCurrent(CUcontext *);
CUresult cuCtxSynchronize();
CUresult cuModuleLoadData(CUmodule *, const void *);
CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *);
CUresult cuModuleUnload(CUmodule);
CUresult cuFuncGetParamInfo(CUfunction, size_t, size_t *, size_t *);
CUresult cuFuncGetAttribute(int *, int, CUfunction);
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *, CUfunction, int,
                                                     size_t);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, CUstream, void **,
                        void **);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemcpy(CUdeviceptr, CUdeviceptr, size_t);
CUresult cuMemsetD32Async(CUdeviceptr, unsigned, size_t, CUstream);
CUresult cuPointerGetAttribute(void *, int, CUdeviceptr);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuStreamSynchronize(CUstream);
CUresult cuEventCreate(CUevent *, unsigned);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuEventSynchronize(CUevent);
CUresult cuEventElapsedTime_v2(float *, CUevent, CUevent);
CUresult cuEventDestroy_v2(CUevent);
CUresult cuGetErrorName(CUresult, const char **);
CUresult cuGetErrorString(CUresult, const char **);
CUresult cuGetProcAddress(const char *, void **, int, unsigned long long);
CUresult cuGetProcAddress_v2(const char *, void **, int, unsigned long long,
                             CUdriverProcAddressQueryResult *);
CUresult cuTexRefCreate(void *);
}

namespace {

[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char *fmt,
                                                             ...) {
  va_list ap;
  va_start(ap, fmt);
  std::printf("FAIL driver_smoke: ");
  std::vprintf(fmt, ap);
  std::printf("\n");
  va_end(ap);
  std::exit(1);
}

void check(CUresult r, const char *what, int line) {
  if (r == CUDA_SUCCESS)
    return;
  const char *name = "?";
  cuGetErrorName(r, &name);
  fail("line %d: %s returned %s", line, what, name);
}
#define CHECK(call) check((call), #call, __LINE__)
#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond))                                                               \
      fail(__VA_ARGS__);                                                       \
  } while (0)

std::string readFile(const char *path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("cannot read %s", path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    fail("usage: %s elementwise.sm_90.ptx", argv[0]);
  std::string ptx = readFile(argv[1]);

  CHECK(cuInit(0));
  int version = 0, count = 0, sms = 0, warp = 0;
  CHECK(cuDriverGetVersion(&version));
  CHECK(cuDeviceGetCount(&count));
  EXPECT(count == 1, "%d devices", count);
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  EXPECT(cuDeviceGet(&dev, 1) == CUDA_ERROR_INVALID_DEVICE, "device 1 exists");
  char name[128];
  CHECK(cuDeviceGetName(name, sizeof name, dev));
  CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                             dev));
  CHECK(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
  size_t total = 0;
  CHECK(cuDeviceTotalMem_v2(&total, dev));
  EXPECT(version == 13000 && sms > 0 && warp == 32 && total > 0,
         "version %d, %d SMs, warp %d, %zu bytes", version, sms, warp, total);
  std::printf("device: %s, %d SMs\n", name, sms);

  CUcontext primary, created, current;
  CHECK(cuDevicePrimaryCtxRetain(&primary, dev));
  CHECK(cuCtxCreate_v2(&created, 0, dev));
  CHECK(cuCtxSetCurrent(primary));
  CHECK(cuCtxGetCurrent(&current));
  EXPECT(current == primary, "the current context is not the primary one");

  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx.c_str()));
  CUfunction vecAdd, missing;
  CHECK(cuModuleGetFunction(&vecAdd, module, "vec_add"));
  EXPECT(cuModuleGetFunction(&missing, module, "no_such_kernel") ==
             CUDA_ERROR_NOT_FOUND,
         "an unknown kernel was found");
  size_t offsets[4], sizes[4];
  for (size_t i = 0; i < 4; ++i)
    CHECK(cuFuncGetParamInfo(vecAdd, i, &offsets[i], &sizes[i]));
  EXPECT(cuFuncGetParamInfo(vecAdd, 4, &offsets[0], &sizes[0]) ==
             CUDA_ERROR_INVALID_VALUE,
         "a fifth parameter");
  EXPECT(offsets[0] == 0 && sizes[0] == 4 && offsets[1] == 8 && sizes[3] == 8 &&
             offsets[3] == 24,
         "parameter layout %zu/%zu %zu/%zu", offsets[0], sizes[0], offsets[1],
         sizes[1]);
  int maxThreads = 0, blocks = 0;
  CHECK(cuFuncGetAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                           vecAdd));
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, vecAdd, 256, 0));
  EXPECT(maxThreads > 0 && blocks > 0, "max threads %d, blocks %d", maxThreads,
         blocks);

  // c = a + b with kernelParams, then c = a + c with a packed buffer.
  const int n = 5000;
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i)
    a[i] = float(i), b[i] = 0.5f * i;
  CUdeviceptr da, db, dc;
  CHECK(cuMemAlloc_v2(&da, n * 4));
  CHECK(cuMemAlloc_v2(&db, n * 4));
  CHECK(cuMemAlloc_v2(&dc, n * 4));
  CHECK(cuMemcpyHtoD_v2(da, a.data(), n * 4));
  // Unified copy: the direction follows from the pointers.
  CHECK(cuMemcpy(db, reinterpret_cast<CUdeviceptr>(b.data()), n * 4));
  int nArg = n;
  void *params[] = {&nArg, &da, &db, &dc};
  CHECK(cuLaunchKernel(vecAdd, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr,
                       params, nullptr));
  CHECK(cuMemcpyDtoH_v2(c.data(), dc, n * 4));
  for (int i = 0; i < n; ++i)
    EXPECT(c[i] == 1.5f * i, "kernelParams: c[%d] = %g", i, c[i]);
  alignas(8) char packed[32] = {};
  std::memcpy(packed + offsets[0], &nArg, 4);
  std::memcpy(packed + offsets[1], &da, 8);
  std::memcpy(packed + offsets[2], &dc, 8);
  std::memcpy(packed + offsets[3], &dc, 8);
  size_t packedSize = sizeof packed;
  void *extra[] = {kLaunchParamBufferPointer, packed, kLaunchParamBufferSize,
                   &packedSize, kLaunchParamEnd};
  CHECK(cuLaunchKernel(vecAdd, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr,
                       nullptr, extra));
  CHECK(cuMemcpy(reinterpret_cast<CUdeviceptr>(c.data()), dc, n * 4));
  for (int i = 0; i < n; ++i)
    EXPECT(c[i] == 2.5f * i, "extra: c[%d] = %g", i, c[i]);

  // A stream with events and a pattern memset (2.0f is not one byte
  // repeated).
  CUstream stream;
  CUevent start, stop;
  CHECK(cuStreamCreate(&stream, 0));
  CHECK(cuEventCreate(&start, 0));
  CHECK(cuEventCreate(&stop, 0));
  CHECK(cuEventRecord(start, stream));
  CHECK(cuMemsetD32Async(db, 0x40000000u, n, stream));
  void *params2[] = {&nArg, &da, &db, &dc};
  CHECK(cuLaunchKernel(vecAdd, (n + 127) / 128, 1, 1, 128, 1, 1, 0, stream,
                       params2, nullptr));
  CHECK(cuEventRecord(stop, stream));
  CHECK(cuEventSynchronize(stop));
  float ms = -1;
  CHECK(cuEventElapsedTime_v2(&ms, start, stop));
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH_v2(c.data(), dc, n * 4));
  for (int i = 0; i < n; ++i)
    EXPECT(c[i] == float(i) + 2.0f, "stream: c[%d] = %g", i, c[i]);
  EXPECT(ms >= 0, "elapsed %g ms", ms);
  unsigned type = 0;
  CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dc + 8));
  EXPECT(type == CU_MEMORYTYPE_DEVICE, "device memory has type %u", type);

  // Errors: a configuration over the limits, a stream and a function that
  // are not handles of this library, a module with no PTX, a stub.
  EXPECT(cuLaunchKernel(vecAdd, 1, 1, 1, 4096, 1, 1, 0, nullptr, params,
                        nullptr) == CUDA_ERROR_INVALID_VALUE,
         "a 4096-thread block was accepted");
  int notAStream = 0;
  EXPECT(cuStreamSynchronize(reinterpret_cast<CUstream>(&notAStream)) ==
             CUDA_ERROR_INVALID_HANDLE,
         "a foreign stream was accepted");
  EXPECT(cuLaunchKernel(reinterpret_cast<CUfunction>(&notAStream), 1, 1, 1, 1,
                        1, 1, 0, nullptr, params,
                        nullptr) == CUDA_ERROR_INVALID_HANDLE,
         "a foreign function was accepted");
  const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  CUmodule cubin;
  EXPECT(cuModuleLoadData(&cubin, elf) == CUDA_ERROR_NO_BINARY_FOR_GPU,
         "a cubin was accepted");
  EXPECT(cuTexRefCreate(nullptr) == CUDA_ERROR_NOT_SUPPORTED,
         "an unimplemented function did not say so");
  const char *errName = nullptr, *errText = nullptr;
  CHECK(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &errName));
  CHECK(cuGetErrorString(CUDA_ERROR_ILLEGAL_ADDRESS, &errText));
  std::printf("%s: %s\n", errName, errText);

  // Entry points by name: both versions of cuGetProcAddress.
  void *fn = nullptr;
  CUdriverProcAddressQueryResult found;
  CHECK(cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, 0, &found));
  EXPECT(fn == reinterpret_cast<void *>(&cuMemAlloc_v2) &&
             found == CU_GET_PROC_ADDRESS_SUCCESS,
         "cuMemAlloc did not resolve to cuMemAlloc_v2");
  CHECK(cuGetProcAddress("cuCtxCreate", &fn, 11000, 0));
  EXPECT(fn == reinterpret_cast<void *>(&cuCtxCreate_v2),
         "cuCtxCreate for CUDA 11 is not cuCtxCreate_v2");
  EXPECT(cuGetProcAddress_v2("cuNoSuchThing", &fn, 12000, 0, &found) ==
                 CUDA_ERROR_NOT_FOUND &&
             found == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
         "an unknown function was found");

  CHECK(cuEventDestroy_v2(start));
  CHECK(cuEventDestroy_v2(stop));
  CHECK(cuStreamDestroy_v2(stream));
  CHECK(cuMemFree_v2(da));
  CHECK(cuMemFree_v2(db));
  CHECK(cuMemFree_v2(dc));
  CHECK(cuModuleUnload(module));
  CHECK(cuCtxSynchronize());
  std::printf("PASS driver_smoke\n");
  return 0;
}
