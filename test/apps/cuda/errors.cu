//===- errors.cu - Recoverable CUDA errors --------------------------------===//
//
// Error paths that leave the context usable: an impossible cudaMalloc, the
// last-error state (cudaPeekAtLastError keeps it, cudaGetLastError returns
// and clears it), bad cudaMemcpy arguments, launches with an invalid
// configuration, cudaLaunchKernel on a host function, and
// cudaGetErrorName/cudaGetErrorString. Afterwards a kernel still runs and
// gives the right answer. (Sticky errors are fault.cu's.)
//
//===----------------------------------------------------------------------===//

#define APP_NAME "errors"
#include "CudaApp.h"

#include <cstring>
#include <vector>

__global__ void fill(int *data, int value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] = value;
}

/// A host function: not registered with the runtime as a kernel.
static void notAKernel(int *data, int value, int n) {
  for (int i = 0; i < n; ++i)
    data[i] = value;
}

/// Fails unless `got` is `expected`.
static void expectError(cudaError_t got, cudaError_t expected,
                        const char *what) {
  EXPECT(got == expected, "%s: got %s (%s), expected %s", what,
         cudaGetErrorName(got), cudaGetErrorString(got),
         cudaGetErrorName(expected));
  std::printf("%s: %s\n", what, cudaGetErrorName(got));
}

/// Fails unless cudaGetLastError returns `expected` once, then cudaSuccess.
static void expectLastErrorCleared(cudaError_t expected, const char *what) {
  cudaError_t first = cudaGetLastError();
  EXPECT(first == expected, "%s: cudaGetLastError gave %s, expected %s", what,
         cudaGetErrorName(first), cudaGetErrorName(expected));
  cudaError_t second = cudaGetLastError();
  EXPECT(second == cudaSuccess,
         "%s: cudaGetLastError gave %s a second time, expected cudaSuccess",
         what, cudaGetErrorName(second));
}

static void expectStrings(cudaError_t err, const char *name,
                          const char *description) {
  const char *gotName = cudaGetErrorName(err);
  const char *gotString = cudaGetErrorString(err);
  EXPECT(gotName && std::strcmp(gotName, name) == 0,
         "cudaGetErrorName(%d) = \"%s\", expected \"%s\"", int(err),
         gotName ? gotName : "(null)", name);
  EXPECT(gotString && std::strcmp(gotString, description) == 0,
         "cudaGetErrorString(%d) = \"%s\", expected \"%s\"", int(err),
         gotString ? gotString : "(null)", description);
}

int main() {
  const int n = 1024;
  // Start clean, and make sure the context exists before the failures.
  expectError(cudaGetLastError(), cudaSuccess, "initial cudaGetLastError");
  int *dData;
  CHECK(cudaMalloc(&dData, n * sizeof(int)));

  // 1. cudaMalloc of 1 PiB fails; the error is the last error until read.
  void *huge = nullptr;
  expectError(cudaMalloc(&huge, size_t(1) << 50), cudaErrorMemoryAllocation,
              "cudaMalloc(1 PiB)");
  expectError(cudaPeekAtLastError(), cudaErrorMemoryAllocation,
              "cudaPeekAtLastError");
  expectError(cudaPeekAtLastError(), cudaErrorMemoryAllocation,
              "cudaPeekAtLastError again");
  expectError(cudaGetLastError(), cudaErrorMemoryAllocation,
              "cudaGetLastError");
  expectError(cudaGetLastError(), cudaSuccess, "cudaGetLastError again");
  expectError(cudaPeekAtLastError(), cudaSuccess,
              "cudaPeekAtLastError after cudaGetLastError");

  // 2. cudaMemcpy with a bad direction, and to NULL.
  std::vector<int> host(n, 7);
  cudaError_t badKind = cudaMemcpy(dData, host.data(), n * sizeof(int),
                                   static_cast<cudaMemcpyKind>(42));
  EXPECT(badKind != cudaSuccess, "cudaMemcpy with kind 42 succeeded");
  std::printf("cudaMemcpy(kind 42): %s\n", cudaGetErrorName(badKind));
  expectLastErrorCleared(badKind, "cudaMemcpy(kind 42)");
  cudaError_t toNull =
      cudaMemcpy(nullptr, host.data(), n * sizeof(int), cudaMemcpyHostToDevice);
  EXPECT(toNull != cudaSuccess, "cudaMemcpy to NULL succeeded");
  std::printf("cudaMemcpy(NULL destination): %s\n", cudaGetErrorName(toNull));
  expectLastErrorCleared(toNull, "cudaMemcpy(NULL destination)");

  // 3. Launches that cannot start: 2048 threads per block, an empty grid.
  fill<<<1, 2048>>>(dData, 1, n);
  expectError(cudaPeekAtLastError(), cudaErrorInvalidConfiguration,
              "fill<<<1, 2048>>>");
  expectLastErrorCleared(cudaErrorInvalidConfiguration, "fill<<<1, 2048>>>");
  fill<<<0, 32>>>(dData, 1, n);
  expectError(cudaPeekAtLastError(), cudaErrorInvalidConfiguration,
              "fill<<<0, 32>>>");
  expectLastErrorCleared(cudaErrorInvalidConfiguration, "fill<<<0, 32>>>");

  // 4. cudaLaunchKernel on something that is not a kernel.
  int value = 5, count = n;
  void *args[] = {&dData, &value, &count};
  expectError(cudaLaunchKernel(reinterpret_cast<const void *>(&notAKernel),
                               dim3(n / 128), dim3(128), args, 0, nullptr),
              cudaErrorInvalidDeviceFunction,
              "cudaLaunchKernel(host function)");
  expectLastErrorCleared(cudaErrorInvalidDeviceFunction,
                         "cudaLaunchKernel(host function)");

  // 5. None of that was sticky: the same launch with the real kernel works.
  CHECK(cudaLaunchKernel(reinterpret_cast<const void *>(&fill), dim3(n / 128),
                         dim3(128), args, 0, nullptr));
  CHECK(cudaDeviceSynchronize());
  CHECK(
      cudaMemcpy(host.data(), dData, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    EXPECT(host[i] == value, "data[%d] = %d, expected %d", i, host[i], value);
  CHECK(cudaFree(dData));
  expectError(cudaGetLastError(), cudaSuccess, "final cudaGetLastError");

  // 6. Names and descriptions.
  expectStrings(cudaSuccess, "cudaSuccess", "no error");
  expectStrings(cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation",
                "out of memory");
  expectStrings(cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
                "invalid configuration argument");
  expectStrings(cudaErrorIllegalAddress, "cudaErrorIllegalAddress",
                "an illegal memory access was encountered");
  cudaError_t bogus = static_cast<cudaError_t>(12345);
  const char *bogusName = cudaGetErrorName(bogus);
  const char *bogusString = cudaGetErrorString(bogus);
  EXPECT(bogusName && bogusString, "no name or description for code 12345");
  std::printf("code 12345: %s (%s)\n", bogusName, bogusString);
  app::pass();
  return 0;
}
