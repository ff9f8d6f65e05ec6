//===- reduce.cu - Integer sum reductions ---------------------------------===//
//
// Sums 2^18 integers three ways and compares each with the host's exact sum:
//  - a shared-memory tree (__syncthreads between levels), templated on the
//    block size, run twice: blocks to partials, then partials to one value;
//  - warp shuffles (__shfl_down_sync) inside each warp, then across the
//    block's warps, with one atomicAdd per block into the total;
//  - the shuffle kernel again on 0..1023 (sum 523776).
//
//===----------------------------------------------------------------------===//

#define APP_NAME "reduce"
#include "CudaApp.h"

#include <vector>

template <unsigned BlockSize>
__global__ void reduceShared(const int *in, int *out, int n) {
  __shared__ int partial[BlockSize];
  int sum = 0;
  for (int i = blockIdx.x * BlockSize + threadIdx.x; i < n;
       i += BlockSize * gridDim.x)
    sum += in[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned stride = BlockSize / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = partial[0];
}

__device__ __forceinline__ int warpSum(int value) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    value += __shfl_down_sync(0xffffffffu, value, offset);
  return value;
}

__global__ void reduceShuffle(const int *in, int *total, int n) {
  __shared__ int warpSums[32];
  int sum = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x)
    sum += in[i];
  sum = warpSum(sum);
  int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  if (lane == 0)
    warpSums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    int numWarps = (blockDim.x + warpSize - 1) / warpSize;
    sum = warpSum(lane < numWarps ? warpSums[lane] : 0);
    if (lane == 0)
      atomicAdd(total, sum);
  }
}

/// Sums `values` with the shuffle kernel and returns the total.
static int sumWithShuffles(const std::vector<int> &values, int grid,
                           int block) {
  int n = static_cast<int>(values.size());
  int *dIn, *dTotal;
  CHECK(cudaMalloc(&dIn, n * sizeof(int)));
  CHECK(cudaMalloc(&dTotal, sizeof(int)));
  CHECK(
      cudaMemcpy(dIn, values.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dTotal, 0, sizeof(int)));
  reduceShuffle<<<grid, block>>>(dIn, dTotal, n);
  CHECK(cudaGetLastError());
  int total = 0;
  CHECK(cudaMemcpy(&total, dTotal, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dTotal));
  return total;
}

int main() {
  const int n = 1 << 18;
  const unsigned block = 256;
  const int grid = 64;
  std::vector<int> values(n);
  long long expected = 0;
  for (int i = 0; i < n; ++i) {
    values[i] = static_cast<int>((i * 7919LL) % 2001) - 1000;
    expected += values[i];
  }
  // What each block of the first pass must produce (grid-stride order).
  std::vector<int> expectedPartials(grid, 0);
  for (int i = 0; i < n; ++i)
    expectedPartials[(i / block) % grid] += values[i];

  int *dIn, *dPartials, *dSum;
  CHECK(cudaMalloc(&dIn, n * sizeof(int)));
  CHECK(cudaMalloc(&dPartials, grid * sizeof(int)));
  CHECK(cudaMalloc(&dSum, sizeof(int)));
  CHECK(
      cudaMemcpy(dIn, values.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  reduceShared<block><<<grid, block>>>(dIn, dPartials, n);
  CHECK(cudaGetLastError());
  reduceShared<block><<<1, block>>>(dPartials, dSum, grid);
  CHECK(cudaGetLastError());

  std::vector<int> partials(grid);
  int sharedSum = 0;
  CHECK(cudaMemcpy(partials.data(), dPartials, grid * sizeof(int),
                   cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&sharedSum, dSum, sizeof(int), cudaMemcpyDeviceToHost));
  for (int b = 0; b < grid; ++b)
    EXPECT(partials[b] == expectedPartials[b],
           "block %d partial sum = %d, expected %d", b, partials[b],
           expectedPartials[b]);
  std::printf("shared: sum = %d\n", sharedSum);
  EXPECT(sharedSum == expected, "shared-memory sum = %d, expected %lld",
         sharedSum, expected);
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dPartials));
  CHECK(cudaFree(dSum));

  int shuffleSum = sumWithShuffles(values, grid, block);
  std::printf("shuffle: sum = %d\n", shuffleSum);
  EXPECT(shuffleSum == expected, "shuffle sum = %d, expected %lld", shuffleSum,
         expected);

  // 0 + 1 + ... + 1023 with blocks of 96 threads (the last warp-sum pass
  // sees 3 warps, the rest of the lanes contribute 0).
  std::vector<int> iota(1024);
  for (int i = 0; i < 1024; ++i)
    iota[i] = i;
  int iotaSum = sumWithShuffles(iota, 4, 96);
  std::printf("iota: sum = %d\n", iotaSum);
  EXPECT(iotaSum == 523776, "sum of 0..1023 = %d, expected 523776", iotaSum);

  app::pass();
  return 0;
}
