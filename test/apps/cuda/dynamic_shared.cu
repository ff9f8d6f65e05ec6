//===- dynamic_shared.cu - extern __shared__ sized at launch --------------===//
//
// Dynamic shared memory in three shapes: one array sized by the block
// (launched with two block sizes), two arrays carved out of one allocation
// next to a static __shared__ variable, and a 48 KiB tile after
// cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize).
//
//===----------------------------------------------------------------------===//

#define APP_NAME "dynamic_shared"
#include "CudaApp.h"

#include <vector>

/// Reverses each block-sized chunk of `in` through shared memory.
__global__ void reverseBlocks(const int *in, int *out) {
  extern __shared__ int tile[];
  int base = blockIdx.x * blockDim.x, t = threadIdx.x;
  tile[t] = in[base + t];
  __syncthreads();
  out[base + t] = tile[blockDim.x - 1 - t];
}

/// Per block: out[i] = in[i] + (number of odd values in the block), using a
/// float array and an int array in one dynamic allocation.
__global__ void addOddCount(const float *in, float *out) {
  extern __shared__ unsigned char smem[];
  __shared__ int oddCount;
  float *values = reinterpret_cast<float *>(smem);
  int *isOdd = reinterpret_cast<int *>(smem + blockDim.x * sizeof(float));
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  if (t == 0)
    oddCount = 0;
  values[t] = in[i];
  isOdd[t] = static_cast<int>(in[i]) % 2 != 0;
  __syncthreads();
  if (isOdd[t])
    atomicAdd(&oddCount, 1);
  __syncthreads();
  out[i] = values[t] + oddCount;
}

constexpr int kBigTileBytes = 48 * 1024;
constexpr int kBigTileFloats = kBigTileBytes / sizeof(float);

/// Reverses chunks of kBigTileFloats floats (48 KiB of dynamic shared memory).
__global__ void reverseBigTiles(const float *in, float *out) {
  extern __shared__ float bigTile[];
  const float *src = in + blockIdx.x * kBigTileFloats;
  float *dst = out + blockIdx.x * kBigTileFloats;
  for (int j = threadIdx.x; j < kBigTileFloats; j += blockDim.x)
    bigTile[j] = src[j];
  __syncthreads();
  for (int j = threadIdx.x; j < kBigTileFloats; j += blockDim.x)
    dst[j] = bigTile[kBigTileFloats - 1 - j];
}

int main() {
  // 1. One array, its size following the block size.
  const int n = 8192;
  std::vector<int> ints(n), reversed(n);
  for (int i = 0; i < n; ++i)
    ints[i] = i * 3 + 1;
  int *dInts, *dReversed;
  CHECK(cudaMalloc(&dInts, n * sizeof(int)));
  CHECK(cudaMalloc(&dReversed, n * sizeof(int)));
  CHECK(
      cudaMemcpy(dInts, ints.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  for (int block : {256, 128}) {
    reverseBlocks<<<n / block, block, block * sizeof(int)>>>(dInts, dReversed);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(reversed.data(), dReversed, n * sizeof(int),
                     cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
      int base = i / block * block;
      int expected = ints[base + block - 1 - (i - base)];
      EXPECT(reversed[i] == expected, "block %d: out[%d] = %d, expected %d",
             block, i, reversed[i], expected);
    }
  }
  std::printf("reverse: out[0] = %d with blocks of 128\n", reversed[0]);
  CHECK(cudaFree(dInts));
  CHECK(cudaFree(dReversed));

  // 2. Two arrays in one allocation, beside a static __shared__ int.
  const int block = 64, m = 64 * 32;
  std::vector<float> values(m), sums(m);
  for (int i = 0; i < m; ++i)
    values[i] = float((i * 7) % 10);
  float *dValues, *dSums;
  CHECK(cudaMalloc(&dValues, m * sizeof(float)));
  CHECK(cudaMalloc(&dSums, m * sizeof(float)));
  CHECK(cudaMemcpy(dValues, values.data(), m * sizeof(float),
                   cudaMemcpyHostToDevice));
  const size_t sharedBytes = block * (sizeof(float) + sizeof(int));
  addOddCount<<<m / block, block, sharedBytes>>>(dValues, dSums);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(sums.data(), dSums, m * sizeof(float),
                   cudaMemcpyDeviceToHost));
  for (int b = 0; b < m / block; ++b) {
    int odd = 0;
    for (int t = 0; t < block; ++t)
      odd += static_cast<int>(values[b * block + t]) % 2 != 0;
    for (int t = 0; t < block; ++t) {
      int i = b * block + t;
      EXPECT(sums[i] == values[i] + odd, "sums[%d] = %g, expected %g", i,
             sums[i], values[i] + odd);
    }
  }
  CHECK(cudaFree(dValues));
  CHECK(cudaFree(dSums));

  // 3. 48 KiB of dynamic shared memory: valid on every GPU CUDA 13 supports.
  CHECK(cudaFuncSetAttribute(reverseBigTiles,
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kBigTileBytes));
  cudaFuncAttributes attributes;
  CHECK(cudaFuncGetAttributes(&attributes, reverseBigTiles));
  std::printf("reverseBigTiles: maxDynamicSharedSizeBytes = %d\n",
              attributes.maxDynamicSharedSizeBytes);
  EXPECT(attributes.maxDynamicSharedSizeBytes == kBigTileBytes,
         "maxDynamicSharedSizeBytes = %d after setting it to %d",
         attributes.maxDynamicSharedSizeBytes, kBigTileBytes);
  const int tiles = 8, total = tiles * kBigTileFloats;
  std::vector<float> big(total), bigOut(total);
  for (int i = 0; i < total; ++i)
    big[i] = float(i);
  float *dBig, *dBigOut;
  CHECK(cudaMalloc(&dBig, total * sizeof(float)));
  CHECK(cudaMalloc(&dBigOut, total * sizeof(float)));
  CHECK(cudaMemcpy(dBig, big.data(), total * sizeof(float),
                   cudaMemcpyHostToDevice));
  reverseBigTiles<<<tiles, 512, kBigTileBytes>>>(dBig, dBigOut);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(bigOut.data(), dBigOut, total * sizeof(float),
                   cudaMemcpyDeviceToHost));
  for (int i = 0; i < total; ++i) {
    int base = i / kBigTileFloats * kBigTileFloats;
    float expected = big[base + kBigTileFloats - 1 - (i - base)];
    EXPECT(bigOut[i] == expected, "big tile: out[%d] = %g, expected %g", i,
           bigOut[i], expected);
  }
  CHECK(cudaFree(dBig));
  CHECK(cudaFree(dBigOut));
  std::printf("big tile: %d bytes of dynamic shared memory per block\n",
              kBigTileBytes);
  app::pass();
  return 0;
}
