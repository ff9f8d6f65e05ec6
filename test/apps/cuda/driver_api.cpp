//===- driver_api.cpp - A program that uses only the driver API -----------===//
//
// What JIT-style programs do: initialize the driver, make the primary
// context current, load a PTX module from text (argv[1], driver_kernels.ptx;
// argv[2], optional: the same kernels as a fatbin, cuModuleLoadFatBinary),
// look up kernels and a global, and launch with cuLaunchKernel, once with
// kernelParams and once with a parameter buffer packed by hand
// (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE). Links against libcuda.so.1 only.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "driver_api"
#define CUDA_APP_DRIVER_API
#include "CudaApp.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

/// Matches struct Pair in driver_kernels.cu.
struct Pair {
  int first;
  double second;
};

/// A kernel parameter buffer in the layout the kernel expects: each value at
/// the next offset aligned for its type.
class ParamBuffer {
public:
  template <typename T> ParamBuffer &add(const T &value) {
    size_t offset = (bytes.size() + alignof(T) - 1) / alignof(T) * alignof(T);
    bytes.resize(offset + sizeof(T));
    std::memcpy(bytes.data() + offset, &value, sizeof(T));
    return *this;
  }
  void *data() { return bytes.data(); }
  size_t size() const { return bytes.size(); }

private:
  std::vector<unsigned char> bytes;
};

std::string readFile(const char *path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    app::fail("cannot read PTX file '%s'", path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3)
    app::fail("usage: %s driver_kernels.ptx [driver_kernels.fatbin]",
              argc > 0 ? argv[0] : "driver_api");
  std::string ptx = readFile(argv[1]);

  CHECK(cuInit(0));
  int version = 0, count = 0;
  CHECK(cuDriverGetVersion(&version));
  CHECK(cuDeviceGetCount(&count));
  EXPECT(count >= 1, "cuDeviceGetCount gave %d", count);
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  char name[256] = {};
  CHECK(cuDeviceGetName(name, sizeof(name), device));
  int smCount = 0;
  CHECK(cuDeviceGetAttribute(&smCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                             device));
  std::printf("driver version %d, device 0: %s, %d SMs\n", version, name,
              smCount);

  CUcontext context, current = nullptr;
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  CHECK(cuCtxGetCurrent(&current));
  EXPECT(current == context, "cuCtxGetCurrent is not the primary context");

  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx.c_str()));
  CUfunction scaleAdd, mixedParams, missing;
  CHECK(cuModuleGetFunction(&scaleAdd, module, "scaleAdd"));
  CHECK(cuModuleGetFunction(&mixedParams, module, "mixedParams"));
  CUresult notFound = cuModuleGetFunction(&missing, module, "noSuchKernel");
  const char *notFoundName = nullptr;
  CHECK(cuGetErrorName(notFound, &notFoundName));
  std::printf("cuModuleGetFunction(noSuchKernel): %s\n", notFoundName);
  EXPECT(notFound == CUDA_ERROR_NOT_FOUND,
         "cuModuleGetFunction(noSuchKernel) returned %s, expected "
         "CUDA_ERROR_NOT_FOUND",
         notFoundName);

  CUdeviceptr launchCount;
  size_t launchCountSize = 0;
  CHECK(
      cuModuleGetGlobal(&launchCount, &launchCountSize, module, "launchCount"));
  EXPECT(launchCountSize == sizeof(unsigned int),
         "launchCount is %zu bytes, expected %zu", launchCountSize,
         sizeof(unsigned int));
  const unsigned int zero = 0;
  CHECK(cuMemcpyHtoD(launchCount, &zero, sizeof(zero)));

  // scaleAdd, through kernelParams then through a packed buffer.
  const int n = 10000, block = 128, grid = (n + block - 1) / block;
  std::vector<float> in(n), out(n);
  for (int i = 0; i < n; ++i)
    in[i] = float(i % 100);
  CUdeviceptr dIn, dOut;
  CHECK(cuMemAlloc(&dIn, n * sizeof(float)));
  CHECK(cuMemAlloc(&dOut, n * sizeof(float)));
  CHECK(cuMemcpyHtoD(dIn, in.data(), n * sizeof(float)));

  float a = 3.0f;
  int nArg = n;
  void *params[] = {&dIn, &dOut, &nArg, &a};
  CHECK(cuLaunchKernel(scaleAdd, grid, 1, 1, block, 1, 1, 0, nullptr, params,
                       nullptr));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(out.data(), dOut, n * sizeof(float)));
  for (int i = 0; i < n; ++i)
    EXPECT(out[i] == 3.0f * in[i] + i,
           "kernelParams: out[%d] = %g, expected %g", i, out[i],
           3.0f * in[i] + i);

  ParamBuffer packed;
  packed.add(dIn).add(dOut).add(n).add(-2.0f);
  EXPECT(packed.size() == 24, "scaleAdd's packed parameters are %zu bytes",
         packed.size());
  size_t packedSize = packed.size();
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed.data(),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &packedSize,
                   CU_LAUNCH_PARAM_END};
  CHECK(cuLaunchKernel(scaleAdd, grid, 1, 1, block, 1, 1, 0, nullptr, nullptr,
                       extra));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(out.data(), dOut, n * sizeof(float)));
  for (int i = 0; i < n; ++i)
    EXPECT(out[i] == -2.0f * in[i] + i, "extra: out[%d] = %g, expected %g", i,
           out[i], -2.0f * in[i] + i);

  unsigned int blocksRun = 0;
  CHECK(cuMemcpyDtoH(&blocksRun, launchCount, sizeof(blocksRun)));
  std::printf("launchCount = %u\n", blocksRun);
  EXPECT(blocksRun == 2u * grid, "launchCount = %u, expected %u", blocksRun,
         2u * grid);

  // mixedParams: alignment of char, double, short, int, a struct, a pointer.
  CUdeviceptr dScalars;
  CHECK(cuMemAlloc(&dScalars, 6 * sizeof(long long)));
  char c = 'A';
  double d = 12345.5;
  short s = -7;
  int i32 = 123456;
  Pair pair = {-3, 0.25};
  void *mixed[] = {&c, &d, &s, &i32, &pair, &dScalars};
  CHECK(cuLaunchKernel(mixedParams, 1, 1, 1, 32, 1, 1, 0, nullptr, mixed,
                       nullptr));
  long long scalars[6];
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(scalars, dScalars, sizeof(scalars)));
  const long long expectedParams[6] = {65, 24691, -7, 123456, -3, 1};
  for (int k = 0; k < 6; ++k)
    EXPECT(scalars[k] == expectedParams[k],
           "kernelParams: mixedParams wrote %lld at %d, expected %lld",
           scalars[k], k, expectedParams[k]);

  ParamBuffer packedMixed;
  packedMixed.add('z')
      .add(-0.5)
      .add(short(300))
      .add(-42)
      .add(Pair{99, -2.0})
      .add(dScalars);
  EXPECT(packedMixed.size() == 48,
         "mixedParams' packed parameters are %zu bytes, expected 48",
         packedMixed.size());
  size_t packedMixedSize = packedMixed.size();
  void *extraMixed[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packedMixed.data(),
                        CU_LAUNCH_PARAM_BUFFER_SIZE, &packedMixedSize,
                        CU_LAUNCH_PARAM_END};
  CHECK(cuLaunchKernel(mixedParams, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr,
                       extraMixed));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(scalars, dScalars, sizeof(scalars)));
  const long long expectedPacked[6] = {'z', -1, 300, -42, 99, -8};
  for (int k = 0; k < 6; ++k)
    EXPECT(scalars[k] == expectedPacked[k],
           "extra: mixedParams wrote %lld at %d, expected %lld", scalars[k], k,
           expectedPacked[k]);
  std::printf("mixedParams: %lld %lld %lld %lld %lld %lld\n", scalars[0],
              scalars[1], scalars[2], scalars[3], scalars[4], scalars[5]);

  // The same kernels from a fatbin (argv[2]: nvcc -fatbin, SASS and ZSTD
  // compressed PTX), with streams, events and a byte-pattern memset.
  if (argc > 2) {
    std::string fatbin = readFile(argv[2]);
    CUmodule fromFatbin;
    CHECK(cuModuleLoadFatBinary(&fromFatbin, fatbin.data()));
    CUfunction scaleAdd2;
    CHECK(cuModuleGetFunction(&scaleAdd2, fromFatbin, "scaleAdd"));
    CUstream stream;
    CUevent start, stop;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    CHECK(cuMemsetD32Async(dOut, 0x3f800000u, n, stream)); // 1.0f
    CHECK(cuEventRecord(start, stream));
    float half = 0.5f;
    void *halfParams[] = {&dOut, &dOut, &nArg, &half};
    CHECK(cuLaunchKernel(scaleAdd2, grid, 1, 1, block, 1, 1, 0, stream,
                         halfParams, nullptr));
    CHECK(cuEventRecord(stop, stream));
    CHECK(cuEventSynchronize(stop));
    float ms = -1;
    CHECK(cuEventElapsedTime(&ms, start, stop));
    EXPECT(ms >= 0, "cuEventElapsedTime gave %g", ms);
    CHECK(cuMemcpyDtoHAsync(out.data(), dOut, n * sizeof(float), stream));
    CHECK(cuStreamSynchronize(stream));
    for (int i = 0; i < n; ++i)
      EXPECT(out[i] == 0.5f + i, "fatbin: out[%d] = %g, expected %g", i, out[i],
             0.5f + i);
    std::printf("fatbin module: out[%d] = %g\n", n - 1, out[n - 1]);
    CHECK(cuEventDestroy(start));
    CHECK(cuEventDestroy(stop));
    CHECK(cuStreamDestroy(stream));
    CHECK(cuModuleUnload(fromFatbin));
  }

  // JIT linking as NVRTC users and Python JITs do it: a kernel that calls an
  // `.extern` device function, linked with the module that defines it; the
  // linked image loads and runs. Linking driver_kernels.ptx twice is a
  // multiple definition, reported in the error log buffer; a cubin input is
  // refused.
  {
    static const char kCaller[] = R"(.version 7.0
.target sm_50
.address_size 64
.extern .func (.param .b32 func_retval0) twice
(
	.param .b32 twice_param_0
)
;
.visible .entry callTwice(
	.param .u64 callTwice_param_0
)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [callTwice_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, 21;
	{
	.param .b32 param0;
	st.param.b32 [param0+0], %r1;
	.param .b32 retval0;
	call.uni (retval0), twice, (param0);
	ld.param.b32 %r2, [retval0+0];
	}
	st.global.u32 [%rd2], %r2;
	ret;
}
)";
    static const char kCallee[] = R"(.version 7.0
.target sm_50
.address_size 64
.visible .func (.param .b32 func_retval0) twice(
	.param .b32 twice_param_0
)
{
	.reg .b32 %r<3>;
	ld.param.u32 %r1, [twice_param_0];
	shl.b32 %r2, %r1, 1;
	st.param.b32 [func_retval0+0], %r2;
	ret;
}
)";
    char errorLog[1024] = "untouched";
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {errorLog, reinterpret_cast<void *>(sizeof errorLog)};
    CUlinkState link;
    CHECK(cuLinkCreate(2, options, values, &link));
    CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char *>(kCaller),
                        sizeof kCaller, "caller", 0, nullptr, nullptr));
    CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char *>(kCallee),
                        sizeof kCallee, "callee", 0, nullptr, nullptr));
    void *image = nullptr;
    size_t imageBytes = 0;
    CHECK(cuLinkComplete(link, &image, &imageBytes));
    CUmodule linked;
    CHECK(cuModuleLoadData(&linked, image));
    CHECK(cuLinkDestroy(link));
    CUfunction callTwice;
    CHECK(cuModuleGetFunction(&callTwice, linked, "callTwice"));
    CUdeviceptr dWord;
    CHECK(cuMemAlloc(&dWord, sizeof(int)));
    void *args[] = {&dWord};
    CHECK(
        cuLaunchKernel(callTwice, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
    int word = 0;
    CHECK(cuMemcpyDtoH(&word, dWord, sizeof word));
    EXPECT(word == 42, "the linked kernel wrote %d, expected 42", word);
    CHECK(cuMemFree(dWord));
    CHECK(cuModuleUnload(linked));

    CHECK(cuLinkCreate(2, options, values, &link));
    CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char *>(ptx.data()),
                        ptx.size(), "first", 0, nullptr, nullptr));
    CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char *>(ptx.data()),
                        ptx.size(), "second", 0, nullptr, nullptr));
    CUresult twice = cuLinkComplete(link, &image, &imageBytes);
    EXPECT(twice == CUDA_ERROR_INVALID_PTX &&
               std::strstr(errorLog, "multiple definition"),
           "linking a module with itself: %d, log '%s'", int(twice), errorLog);
    char elf[] = "\x7f"
                 "ELF";
    EXPECT(cuLinkAddData(link, CU_JIT_INPUT_CUBIN, elf, sizeof elf, "cubin", 0,
                         nullptr, nullptr) == CUDA_ERROR_NOT_SUPPORTED,
           "a cubin was linked");
    CHECK(cuLinkDestroy(link));
    std::printf("cuLink: a kernel linked with its callee wrote %d; a "
                "multiple definition and a cubin refused\n",
                word);
  }

  // 2D memsets of pitched memory: 8-bit rows shorter than the pitch, 16-bit
  // on a stream, 32-bit over whole rows (one memset).
  {
    const size_t w = 37, h = 9;
    CUdeviceptr pitched;
    size_t pitch = 0;
    CHECK(cuMemAllocPitch(&pitched, &pitch, w * 4, h, 4));
    CHECK(cuMemsetD2D32(pitched, pitch, 0xdeadbeef, pitch / 4, h));
    CHECK(cuMemsetD2D8(pitched, pitch, 0x11, w, h));
    CUstream s2;
    CHECK(cuStreamCreate(&s2, 0));
    CHECK(cuMemsetD2D16Async(pitched + 2 * pitch, pitch, 0x2233, 3, 2, s2));
    CHECK(cuStreamSynchronize(s2));
    CHECK(cuStreamDestroy(s2));
    std::vector<uint8_t> back(pitch * h);
    CHECK(cuMemcpyDtoH(back.data(), pitched, back.size()));
    int wrong = 0;
    for (size_t y = 0; y < h; ++y)
      for (size_t x = 0; x < pitch; ++x) {
        uint8_t want = x < w ? 0x11 : uint8_t(0xdeadbeefu >> (8 * (x % 4)));
        if ((y == 2 || y == 3) && x < 6)
          want = x % 2 ? 0x22 : 0x33;
        wrong += back[y * pitch + x] != want;
      }
    EXPECT(wrong == 0, "2D memsets: %d bytes wrong", wrong);
    CHECK(cuMemFree(pitched));
    std::printf("cuMemsetD2D8/16/32: %zu rows of pitch %zu\n", h, pitch);
  }

  CHECK(cuMemFree(dIn));
  CHECK(cuMemFree(dOut));
  CHECK(cuMemFree(dScalars));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease(device));
  app::pass();
  return 0;
}
