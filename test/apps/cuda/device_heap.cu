//===- device_heap.cu - malloc, free, new and delete in kernels ----------===//
//
// CUDA's device heap: blocks that one kernel allocates and another uses and
// frees (16-byte aligned, none overlapping), `new`/`delete` of objects with
// constructors, a block allocated by one thread and shared with its block
// through shared memory across barriers, 2048 threads allocating and freeing
// at once, and a full heap: malloc returns null (the default heap is 8 MiB),
// and memory freed is allocated again.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "device_heap"
#include "CudaApp.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

constexpr int kThreads = 256;

__device__ size_t blockBytes(int i) { return size_t(i % 7 + 1) * 24; }

// Each thread allocates a block of its own size and fills it.
__global__ void allocate(int **ptrs) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int *p = static_cast<int *>(malloc(blockBytes(i)));
  if (p)
    for (size_t k = 0; k < blockBytes(i) / sizeof(int); ++k)
      p[k] = i * 1000 + int(k);
  ptrs[i] = p;
}

// A later kernel reads the blocks back, then frees them.
__global__ void sumAndFree(int **ptrs, int *sums) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int *p = ptrs[i];
  int s = -1;
  if (p) {
    s = 0;
    for (size_t k = 0; k < blockBytes(i) / sizeof(int); ++k)
      s += p[k];
  }
  sums[i] = s;
  free(p);
}

struct Counter {
  int base, count;
  __device__ Counter(int b) : base(b), count(0) {}
  __device__ ~Counter() {}
  __device__ int next() { return base + count++; }
};

__global__ void objects(int *out) {
  Counter *c = new Counter(threadIdx.x * 10);
  int *arr = new int[3];
  for (int k = 0; k < 3; ++k)
    arr[k] = c->next();
  out[threadIdx.x] = arr[0] + arr[1] + arr[2];
  delete[] arr;
  delete c;
}

// Thread 0 allocates one block for its whole block, which the others fill
// after a barrier; thread 0 frees it after another.
__global__ void sharedBlock(int *out) {
  __shared__ int *buf;
  if (threadIdx.x == 0)
    buf = static_cast<int *>(malloc(blockDim.x * sizeof(int)));
  __syncthreads();
  if (buf)
    buf[threadIdx.x] = threadIdx.x * 3;
  __syncthreads();
  if (threadIdx.x == 0) {
    int s = -1;
    if (buf) {
      s = 0;
      for (unsigned k = 0; k < blockDim.x; ++k)
        s += buf[k];
    }
    out[blockIdx.x] = s;
    free(buf);
  }
}

// One thread: a block larger than the heap, then 1 MiB blocks until null
// (kept in `ptrs`), which it frees; then 1 MiB again.
__global__ void exhaust(void **ptrs, int *counts) {
  counts[0] = malloc(size_t(64) << 20) == nullptr;
  int n = 0;
  while (n < 64) {
    void *p = malloc(size_t(1) << 20);
    if (!p)
      break;
    ptrs[n++] = p;
  }
  counts[1] = n;
  for (int k = 0; k < n; ++k)
    free(ptrs[k]);
  void *again = malloc(size_t(1) << 20);
  counts[2] = again != nullptr;
  free(again);
}

// Every thread allocates, fills, checks and frees blocks of varying sizes,
// 16 rounds, all threads at once: no block shared, none corrupted.
__global__ void churn(int *bad) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int round = 0; round < 16; ++round) {
    int words = (i * 7 + round * 13) % 61 + 1;
    int *p = static_cast<int *>(malloc(words * sizeof(int)));
    if (!p) {
      atomicAdd(bad, 1);
      continue;
    }
    for (int k = 0; k < words; ++k)
      p[k] = i ^ (k << 20) ^ (round << 12);
    for (int k = 0; k < words; ++k)
      if (p[k] != (i ^ (k << 20) ^ (round << 12)))
        atomicAdd(bad, 1);
    free(p);
  }
}

int main() {
  const int n = 2 * kThreads;
  int **dPtrs, *dSums;
  CHECK(cudaMalloc(&dPtrs, n * sizeof(int *)));
  CHECK(cudaMalloc(&dSums, n * sizeof(int)));
  allocate<<<n / kThreads, kThreads>>>(dPtrs);
  CHECK(cudaGetLastError());
  std::vector<uintptr_t> ptrs(n);
  CHECK(cudaMemcpy(ptrs.data(), dPtrs, n * sizeof(int *),
                   cudaMemcpyDeviceToHost));
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (int i = 0; i < n; ++i) {
    EXPECT(ptrs[i] != 0, "thread %d: malloc returned null", i);
    EXPECT(ptrs[i] % 16 == 0, "thread %d: block at 0x%llx", i,
           (unsigned long long)ptrs[i]);
    ranges.push_back({ptrs[i], ptrs[i] + (i % 7 + 1) * 24});
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t k = 1; k < ranges.size(); ++k)
    EXPECT(ranges[k].first >= ranges[k - 1].second, "blocks overlap");
  sumAndFree<<<n / kThreads, kThreads>>>(dPtrs, dSums);
  CHECK(cudaGetLastError());
  std::vector<int> sums(n);
  CHECK(
      cudaMemcpy(sums.data(), dSums, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    int words = (i % 7 + 1) * 6, want = 0;
    for (int k = 0; k < words; ++k)
      want += i * 1000 + k;
    EXPECT(sums[i] == want, "sum %d = %d, want %d", i, sums[i], want);
  }
  std::printf("device_heap: %d blocks allocated, used by the next kernel "
              "and freed\n",
              n);

  int *dOut;
  CHECK(cudaMalloc(&dOut, kThreads * sizeof(int)));
  objects<<<1, 64>>>(dOut);
  CHECK(cudaGetLastError());
  std::vector<int> out(kThreads);
  CHECK(cudaMemcpy(out.data(), dOut, 64 * sizeof(int), cudaMemcpyDeviceToHost));
  for (int t = 0; t < 64; ++t)
    EXPECT(out[t] == 30 * t + 3, "objects[%d] = %d", t, out[t]);
  std::printf("device_heap: new/delete of objects and arrays\n");

  sharedBlock<<<4, 128>>>(dOut);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), dOut, 4 * sizeof(int), cudaMemcpyDeviceToHost));
  for (int b = 0; b < 4; ++b)
    EXPECT(out[b] == 3 * 127 * 128 / 2, "sharedBlock[%d] = %d", b, out[b]);
  std::printf("device_heap: one block per thread block, across barriers\n");

  int *dBad, badBlocks = 0;
  CHECK(cudaMalloc(&dBad, sizeof(int)));
  CHECK(cudaMemset(dBad, 0, sizeof(int)));
  churn<<<8, 256>>>(dBad);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&badBlocks, dBad, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(badBlocks == 0, "churn: %d null or corrupted blocks", badBlocks);
  std::printf("device_heap: 2048 threads x 16 rounds of malloc, fill, check, "
              "free\n");

  void **dBig;
  int *dCounts, counts[3];
  CHECK(cudaMalloc(&dBig, 64 * sizeof(void *)));
  CHECK(cudaMalloc(&dCounts, sizeof(counts)));
  exhaust<<<1, 1>>>(dBig, dCounts);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(counts, dCounts, sizeof(counts), cudaMemcpyDeviceToHost));
  EXPECT(counts[0] == 1, "malloc(64 MiB) did not return null");
  // The default heap is 8 MiB; a GPU's keeps some of it for itself.
  EXPECT(counts[1] >= 1 && counts[1] <= 8, "%d blocks of 1 MiB", counts[1]);
  EXPECT(counts[2] == 1, "no 1 MiB block after freeing them all");
  std::printf("device_heap: a full heap returns null (%d blocks of 1 MiB "
              "fit), and freed memory is allocated again\n",
              counts[1]);
  CHECK(cudaDeviceSynchronize());
  app::pass();
  return 0;
}
