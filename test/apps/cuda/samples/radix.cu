//===- radix.cu - A CUDA-samples-style program ----------------------------===//
//
// LSD radix sort of 32-bit keys with values, 4 bits per pass, as CUB's
// onesweep does it by hand: per-block digit histograms with shared atomics,
// a hand-written block-wide exclusive scan (warp scans with __shfl_up_sync,
// then a scan of warp totals), a global scan of the histograms, a stable
// scatter. Also a float atomicMax built from atomicCAS and a grid-stride min.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <vector>
#define APP_NAME "sample_radix"
#include "../CudaApp.h"

constexpr int BLOCK = 256, ITEMS = 4, TILE = BLOCK * ITEMS;
constexpr int RADIX = 16, BITS = 4;
constexpr int N = 8 * TILE; // 8192 keys, 8 blocks

template <typename T> __device__ T blockExclusiveScan(T v, T *total) {
  __shared__ T warpSums[BLOCK / 32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  T x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    T y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o)
      x += y;
  }
  if (lane == 31)
    warpSums[warp] = x;
  __syncthreads();
  if (warp == 0) {
    T w = lane < BLOCK / 32 ? warpSums[lane] : T(0);
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      T y = __shfl_up_sync(0xffffffffu, w, o);
      if (lane >= o)
        w += y;
    }
    if (lane < BLOCK / 32)
      warpSums[lane] = w;
  }
  __syncthreads();
  T warpBase = warp ? warpSums[warp - 1] : T(0);
  *total = warpSums[BLOCK / 32 - 1];
  __syncthreads();
  return warpBase + x - v;
}

// histograms[digit * numBlocks + block]
__global__ void histogram(const unsigned *keys, unsigned *histograms,
                          int shift) {
  __shared__ unsigned counts[RADIX];
  if (threadIdx.x < RADIX)
    counts[threadIdx.x] = 0;
  __syncthreads();
  for (int k = 0; k < ITEMS; ++k) {
    unsigned key = keys[blockIdx.x * TILE + k * BLOCK + threadIdx.x];
    atomicAdd(&counts[(key >> shift) & (RADIX - 1)], 1u);
  }
  __syncthreads();
  if (threadIdx.x < RADIX)
    histograms[threadIdx.x * gridDim.x + blockIdx.x] = counts[threadIdx.x];
}

// One block scans all RADIX * numBlocks counters (<= BLOCK).
__global__ void scanHistograms(unsigned *histograms, int count) {
  unsigned v = threadIdx.x < count ? histograms[threadIdx.x] : 0u, total;
  unsigned ex = blockExclusiveScan(v, &total);
  if (threadIdx.x < count)
    histograms[threadIdx.x] = ex;
}

// Stable scatter: each block ranks its tile digit by digit with the block scan.
__global__ void scatter(const unsigned *keys, const int *values,
                        unsigned *keysOut, int *valuesOut,
                        const unsigned *offsets, int shift) {
  __shared__ unsigned base[RADIX];
  if (threadIdx.x < RADIX)
    base[threadIdx.x] = offsets[threadIdx.x * gridDim.x + blockIdx.x];
  __syncthreads();
  unsigned myKeys[ITEMS];
  int myValues[ITEMS];
  // Thread t owns the consecutive items t*ITEMS .. t*ITEMS+ITEMS-1.
  for (int k = 0; k < ITEMS; ++k) {
    myKeys[k] = keys[blockIdx.x * TILE + threadIdx.x * ITEMS + k];
    myValues[k] = values[blockIdx.x * TILE + threadIdx.x * ITEMS + k];
  }
  for (int d = 0; d < RADIX; ++d) {
    unsigned mine = 0;
    for (int k = 0; k < ITEMS; ++k)
      mine += ((myKeys[k] >> shift) & (RADIX - 1)) == unsigned(d);
    unsigned total;
    unsigned rank = blockExclusiveScan(mine, &total);
    for (int k = 0; k < ITEMS; ++k)
      if (((myKeys[k] >> shift) & (RADIX - 1)) == unsigned(d)) {
        unsigned pos = base[d] + rank++;
        keysOut[pos] = myKeys[k];
        valuesOut[pos] = myValues[k];
      }
  }
}

__device__ float atomicMaxFloat(float *address, float val) {
  int *addr = reinterpret_cast<int *>(address);
  int old = *addr, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= val)
      break;
    old = atomicCAS(addr, assumed, __float_as_int(val));
  } while (assumed != old);
  return __int_as_float(old);
}

__global__ void minMax(const unsigned *keys, int n, float *maxOut,
                       unsigned *minOut) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x) {
    atomicMaxFloat(maxOut, float(keys[i] >> 8) * 0.5f);
    atomicMin(minOut, keys[i]);
  }
}

int main() {
  std::vector<unsigned> keys(N);
  std::vector<int> values(N);
  unsigned s = 2463534242u;
  for (int i = 0; i < N; ++i) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    keys[i] = s % 100000u; // duplicates: checks stability
    values[i] = i;
  }
  unsigned *dKeys[2], *dHist, *dMin;
  int *dValues[2];
  float *dMax;
  const int blocks = N / TILE;
  for (int b = 0; b < 2; ++b) {
    CHECK(cudaMalloc(&dKeys[b], N * sizeof(unsigned)));
    CHECK(cudaMalloc(&dValues[b], N * sizeof(int)));
  }
  CHECK(cudaMalloc(&dHist, RADIX * blocks * sizeof(unsigned)));
  CHECK(cudaMalloc(&dMax, sizeof(float)));
  CHECK(cudaMalloc(&dMin, sizeof(unsigned)));
  float negInf = -FLT_MAX;
  unsigned big = 0xffffffffu;
  CHECK(cudaMemcpy(dMax, &negInf, sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dMin, &big, sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dKeys[0], keys.data(), N * sizeof(unsigned),
                   cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dValues[0], values.data(), N * sizeof(int),
                   cudaMemcpyHostToDevice));
  minMax<<<4, 128>>>(dKeys[0], N, dMax, dMin);
  CHECK(cudaGetLastError());
  int cur = 0;
  for (int shift = 0; shift < 20; shift += BITS) { // keys < 2^17: 5 passes
    histogram<<<blocks, BLOCK>>>(dKeys[cur], dHist, shift);
    scanHistograms<<<1, BLOCK>>>(dHist, RADIX * blocks);
    scatter<<<blocks, BLOCK>>>(dKeys[cur], dValues[cur], dKeys[1 - cur],
                               dValues[1 - cur], dHist, shift);
    CHECK(cudaGetLastError());
    cur = 1 - cur;
  }
  std::vector<unsigned> gotKeys(N);
  std::vector<int> gotValues(N);
  float gotMax;
  unsigned gotMin;
  CHECK(cudaMemcpy(gotKeys.data(), dKeys[cur], N * sizeof(unsigned),
                   cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(gotValues.data(), dValues[cur], N * sizeof(int),
                   cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&gotMax, dMax, sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&gotMin, dMin, sizeof(unsigned), cudaMemcpyDeviceToHost));
  std::vector<int> order(N);
  for (int i = 0; i < N; ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return keys[a] < keys[b]; });
  int bad = 0;
  for (int i = 0; i < N; ++i)
    if ((gotKeys[i] != keys[order[i]] || gotValues[i] != order[i]) && bad++ < 5)
      std::printf("[%d]: (%u, %d), want (%u, %d)\n", i, gotKeys[i],
                  gotValues[i], keys[order[i]], order[i]);
  unsigned maxKey = *std::max_element(keys.begin(), keys.end());
  unsigned minKey = *std::min_element(keys.begin(), keys.end());
  std::printf("radix: %d keys sorted, %d mismatches; max %g min %u\n", N, bad,
              gotMax, gotMin);
  EXPECT(bad == 0, "%d mismatches", bad);
  EXPECT(gotMax == float(maxKey >> 8) * 0.5f, "max %g, want %g", gotMax,
         float(maxKey >> 8) * 0.5f);
  EXPECT(gotMin == minKey, "min %u, want %u", gotMin, minKey);
  app::pass();
  return 0;
}
