//===- CudaApp.h - Checks shared by the CUDA test programs ------*- C++ -*-===//
//
// The programs in test/apps/cuda are ordinary CUDA programs built with nvcc.
// Each one defines APP_NAME before including this header, checks every CUDA
// call with CHECK, checks its results on the host, and ends with a line
// `PASS <name>` (exit 0) or `FAIL <name>: <what>` (exit 1). All output goes to
// stdout, line-buffered, so that it interleaves sensibly with anything a CUDA
// library prints to stderr. CHECK takes runtime API calls, or driver API calls
// where CUDA_APP_DRIVER_API is defined (then only libcuda is used).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_TEST_APPS_CUDA_CUDAAPP_H
#define WOOLY_TEST_APPS_CUDA_CUDAAPP_H

#ifdef CUDA_APP_DRIVER_API
#include <cuda.h>
#else
#include <cuda_runtime.h>
#endif

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifndef APP_NAME
#error "define APP_NAME (the name printed in PASS/FAIL lines) first"
#endif

namespace app {

/// The last component of a path (__FILE__ may be absolute).
inline const char *baseName(const char *path) {
  const char *slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/// Prints `FAIL <name>: <message>` and exits with status 1.
[[noreturn]] __attribute__((format(printf, 1, 2))) inline void
fail(const char *format, ...) {
  std::printf("FAIL %s: ", APP_NAME);
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::printf("\n");
  std::fflush(stdout);
  std::exit(1);
}

#ifdef CUDA_APP_DRIVER_API
/// Fails with the location, the call's text and the error's name and string
/// when `err` is not CUDA_SUCCESS.
inline void checkCuda(CUresult err, const char *call, const char *file,
                      int line) {
  if (err == CUDA_SUCCESS)
    return;
  const char *name = nullptr, *description = nullptr;
  if (cuGetErrorName(err, &name) != CUDA_SUCCESS)
    name = "unknown CUresult";
  if (cuGetErrorString(err, &description) != CUDA_SUCCESS)
    description = "no description";
  fail("%s:%d: %s returned %s (%d: %s)", baseName(file), line, call, name,
       int(err), description);
}
#else
/// Fails with the location, the call's text and the error's name and string
/// when `err` is not cudaSuccess.
inline void checkCuda(cudaError_t err, const char *call, const char *file,
                      int line) {
  if (err == cudaSuccess)
    return;
  fail("%s:%d: %s returned %s (%s)", baseName(file), line, call,
       cudaGetErrorName(err), cudaGetErrorString(err));
}
#endif

#ifndef CUDA_APP_DRIVER_API
/// A device copy of `v` (cudaMalloc + cudaMemcpy; fails the program on an
/// error).
template <typename T> T *toDevice(const std::vector<T> &v) {
  T *d = nullptr;
  checkCuda(cudaMalloc(&d, v.size() * sizeof(T)), "cudaMalloc", __FILE__,
            __LINE__);
  checkCuda(
      cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice),
      "cudaMemcpy", __FILE__, __LINE__);
  return d;
}

/// The `n` elements at device address `d`.
template <typename T> std::vector<T> toHost(const T *d, size_t n) {
  std::vector<T> v(n);
  checkCuda(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost),
            "cudaMemcpy", __FILE__, __LINE__);
  return v;
}
#endif

/// Prints `PASS <name>`; the program then returns 0 from main.
inline void pass() {
  std::printf("PASS %s\n", APP_NAME);
  std::fflush(stdout);
}

/// Makes stdout line-buffered before main runs.
struct LineBufferedStdout {
  LineBufferedStdout() { std::setvbuf(stdout, nullptr, _IOLBF, 0); }
};
static LineBufferedStdout lineBufferedStdout;

} // namespace app

/// Checks a CUDA call: `CHECK(cudaMalloc(&p, n));`, `CHECK(cuInit(0));`.
#define CHECK(call) ::app::checkCuda((call), #call, __FILE__, __LINE__)

/// Fails with a printf-style message unless `cond` holds.
#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond))                                                               \
      ::app::fail(__VA_ARGS__);                                                \
  } while (0)

#endif // WOOLY_TEST_APPS_CUDA_CUDAAPP_H
