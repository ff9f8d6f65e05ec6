//===- heap_limit.cu - cudaLimitMallocHeapSize ----------------------------===//
//
// The device heap's size as programs set it: CUDA's default is 8 MiB; a
// 64 MiB heap set before the first kernel that calls malloc holds 48 blocks
// of 1 MiB (more than the default holds), and malloc past it returns null;
// setting the size again once a kernel has allocated returns
// cudaErrorInvalidValue and changes nothing (CUDA's rule). The stack size
// reads back as set; an unknown limit is an error. With the argument
// "quota" the tenant's memory quota (32 MiB on the test's server) is smaller
// than the heap asked for: cudaErrorMemoryAllocation, and the heap stays
// 8 MiB.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "heap_limit"
#include "CudaApp.h"

#include <cstring>

// Thread i allocates `bytes` and writes its index at both ends.
__global__ void grab(int **ptrs, size_t bytes) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int *p = static_cast<int *>(malloc(bytes));
  ptrs[i] = p;
  if (p) {
    p[0] = i;
    p[bytes / sizeof(int) - 1] = i;
  }
}

__global__ void check(int **ptrs, size_t bytes, int *bad) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int *p = ptrs[i];
  if (p && (p[0] != i || p[bytes / sizeof(int) - 1] != i))
    atomicAdd(bad, 1);
  free(p);
}

int main(int argc, char **argv) {
  bool quota = argc > 1 && std::strcmp(argv[1], "quota") == 0;
  size_t heap = 0;
  CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  EXPECT(heap == 8u << 20, "default heap %zu", heap);

  if (quota) {
    cudaError_t e = cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64u << 20);
    EXPECT(e == cudaErrorMemoryAllocation,
           "a heap past the quota: %s, expected cudaErrorMemoryAllocation",
           cudaGetErrorName(e));
    cudaGetLastError();
    CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
    EXPECT(heap == 8u << 20, "the heap after the refusal: %zu", heap);
    std::printf("heap_limit: 64 MiB past a 32 MiB quota refused (%s), "
                "the heap stays 8 MiB\n",
                cudaGetErrorName(e));
    app::pass();
    return 0;
  }

  // The other limits: set, then read back; an unknown one is an error.
  size_t stack = 0;
  CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
  CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  EXPECT(stack == 4096, "stack size read back: %zu", stack);
  EXPECT(cudaDeviceGetLimit(&stack, cudaLimit(-1)) != cudaSuccess &&
             cudaDeviceGetLimit(&stack, cudaLimit(1000)) != cudaSuccess,
         "unknown limits were accepted");
  cudaGetLastError();

  CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64u << 20));
  CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  EXPECT(heap == 64u << 20, "heap after setting 64 MiB: %zu", heap);

  const int n = 80;
  const size_t bytes = 1u << 20;
  int **ptrs, *bad;
  CHECK(cudaMalloc(&ptrs, n * sizeof(int *)));
  CHECK(cudaMalloc(&bad, sizeof(int)));
  CHECK(cudaMemset(bad, 0, sizeof(int)));
  grab<<<2, n / 2>>>(ptrs, bytes);
  CHECK(cudaGetLastError());
  int *host[n];
  CHECK(cudaMemcpy(host, ptrs, sizeof host, cudaMemcpyDeviceToHost));
  int got = 0;
  for (int i = 0; i < n; ++i)
    got += host[i] != nullptr;
  // 1 MiB blocks with the heap's own bookkeeping: at most 64, at least 48
  // (CUDA's allocator keeps more for itself than Wooly's).
  EXPECT(got >= 48 && got < n, "%d of %d blocks of 1 MiB from a 64 MiB heap",
         got, n);
  check<<<2, n / 2>>>(ptrs, bytes, bad);
  int wrong = -1;
  CHECK(cudaMemcpy(&wrong, bad, sizeof wrong, cudaMemcpyDeviceToHost));
  EXPECT(wrong == 0, "%d blocks lost their contents", wrong);
  std::printf("heap_limit: a 64 MiB heap held %s48 blocks of 1 MiB, the "
              "rest were null\n",
              got > 48 ? "at least " : "");

  // In use now: the size stays.
  cudaError_t e = cudaDeviceSetLimit(cudaLimitMallocHeapSize, 16u << 20);
  EXPECT(e == cudaErrorInvalidValue,
         "setting the heap once in use: %s, expected cudaErrorInvalidValue",
         cudaGetErrorName(e));
  cudaGetLastError();
  CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  EXPECT(heap == 64u << 20, "the heap after the refusal: %zu", heap);
  std::printf("heap_limit: once in use, a new size is refused (%s)\n",
              cudaGetErrorName(e));
  CHECK(cudaFree(ptrs));
  CHECK(cudaFree(bad));
  app::pass();
  return 0;
}
