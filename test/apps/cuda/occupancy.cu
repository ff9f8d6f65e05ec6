//===- occupancy.cu - Occupancy queries pick the launch shape -------------===//
//
// Asks the runtime for a kernel's attributes (cudaFuncGetAttributes), the
// block size that maximizes occupancy (cudaOccupancyMaxPotentialBlockSize)
// and how many such blocks fit on one multiprocessor
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor), then launches with the
// suggested block size and checks the results. The printed numbers depend on
// the GPU; only their sanity is checked.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "occupancy"
#include "CudaApp.h"

#include <algorithm>
#include <vector>

constexpr int kCacheFloats = 1024;

/// y = a * x + y, staging x through 4 KiB of static shared memory.
__global__ void stagedSaxpy(float a, const float *x, float *y, int n) {
  __shared__ float cache[kCacheFloats];
  for (int base = blockIdx.x * blockDim.x; base < n;
       base += blockDim.x * gridDim.x) {
    int i = base + threadIdx.x;
    cache[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n)
      y[i] = a * cache[threadIdx.x] + y[i];
    __syncthreads();
  }
}

int main() {
  cudaFuncAttributes attributes;
  CHECK(cudaFuncGetAttributes(&attributes, stagedSaxpy));
  std::printf("stagedSaxpy: numRegs = %d, maxThreadsPerBlock = %d, "
              "sharedSizeBytes = %zu\n",
              attributes.numRegs, attributes.maxThreadsPerBlock,
              attributes.sharedSizeBytes);
  EXPECT(attributes.maxThreadsPerBlock > 0 &&
             attributes.maxThreadsPerBlock <= 1024,
         "maxThreadsPerBlock = %d", attributes.maxThreadsPerBlock);
  EXPECT(attributes.numRegs > 0 && attributes.numRegs <= 255, "numRegs = %d",
         attributes.numRegs);
  EXPECT(attributes.sharedSizeBytes == kCacheFloats * sizeof(float),
         "sharedSizeBytes = %zu, expected %zu", attributes.sharedSizeBytes,
         kCacheFloats * sizeof(float));

  int minGridSize = 0, blockSize = 0;
  CHECK(cudaOccupancyMaxPotentialBlockSize(&minGridSize, &blockSize,
                                           stagedSaxpy, 0, 0));
  int blocksPerSM = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocksPerSM, stagedSaxpy,
                                                      blockSize, 0));
  std::printf("suggested block size = %d, min grid size = %d, active blocks "
              "per SM = %d\n",
              blockSize, minGridSize, blocksPerSM);
  EXPECT(blockSize > 0 && blockSize <= attributes.maxThreadsPerBlock &&
             blockSize % 32 == 0,
         "suggested block size %d (maxThreadsPerBlock %d)", blockSize,
         attributes.maxThreadsPerBlock);
  EXPECT(minGridSize > 0, "min grid size = %d", minGridSize);
  EXPECT(blocksPerSM > 0, "active blocks per SM = %d", blocksPerSM);

  // Launch with the suggested block size; at most 64K threads, grid-stride.
  const int n = 1 << 18;
  int grid = std::max(1, std::min(minGridSize, 65536 / blockSize));
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float(i % 4096);
    y[i] = float(i % 3);
  }
  float *dX, *dY;
  CHECK(cudaMalloc(&dX, n * sizeof(float)));
  CHECK(cudaMalloc(&dY, n * sizeof(float)));
  CHECK(cudaMemcpy(dX, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dY, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  stagedSaxpy<<<grid, blockSize>>>(2.0f, dX, dY, n);
  CHECK(cudaGetLastError());
  std::vector<float> result(n);
  CHECK(
      cudaMemcpy(result.data(), dY, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    float expected = 2.0f * x[i] + y[i];
    EXPECT(result[i] == expected, "y[%d] = %g, expected %g", i, result[i],
           expected);
  }
  CHECK(cudaFree(dX));
  CHECK(cudaFree(dY));
  std::printf("launched %d blocks of %d threads over %d elements\n", grid,
              blockSize, n);
  app::pass();
  return 0;
}
