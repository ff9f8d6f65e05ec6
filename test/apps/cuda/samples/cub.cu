//===- cub.cu - CUB's block and device primitives
//---------------------------===//
//
// What CUDA programs get from CUB (the toolkit's headers): in one kernel,
// cub::BlockReduce, cub::BlockScan and cub::BlockRadixSort sharing their
// temporary storage through a union; cub::WarpReduce; and the device-wide
// algorithms with their two-call temporary-storage protocol:
// cub::DeviceReduce::Sum, cub::DeviceScan::InclusiveSum and
// cub::DeviceRadixSort::SortPairs (stable, checked against std::stable_sort).
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cub/cub.cuh>
#include <cuda/functional>

#include <algorithm>
#include <numeric>
#include <vector>
#define APP_NAME "sample_cub"
#include "../CudaApp.h"

constexpr int kBlock = 128, kItems = 4;

__global__ void blockPrimitives(const int *in, int n, int *sums, int *scan,
                                int *sorted, int *warpSums) {
  using Reduce = cub::BlockReduce<int, kBlock>;
  using Scan = cub::BlockScan<int, kBlock>;
  using Sort = cub::BlockRadixSort<int, kBlock, kItems>;
  using Warp = cub::WarpReduce<int>;
  __shared__ union {
    Reduce::TempStorage reduce;
    Scan::TempStorage scan;
    Sort::TempStorage sort;
  } temp;
  __shared__ Warp::TempStorage warpTemp[kBlock / 32];
  int i = blockIdx.x * kBlock + threadIdx.x;
  int v = in[i];
  int sum = Reduce(temp.reduce).Sum(v);
  if (threadIdx.x == 0)
    sums[blockIdx.x] = sum;
  __syncthreads();
  int prefix;
  Scan(temp.scan).ExclusiveSum(v, prefix);
  scan[i] = prefix;
  __syncthreads();
  int keys[kItems];
  int base = blockIdx.x * kBlock * kItems + threadIdx.x * kItems;
  for (int k = 0; k < kItems; ++k)
    keys[k] = in[(base + k) % n];
  Sort(temp.sort).Sort(keys);
  for (int k = 0; k < kItems; ++k)
    sorted[base + k] = keys[k];
  int w = Warp(warpTemp[threadIdx.x / 32]).Reduce(v, cuda::maximum<int>());
  if (threadIdx.x % 32 == 0)
    warpSums[i / 32] = w;
}

int main() {
  const int blocks = 8, n = kBlock * blocks;
  std::vector<int> h(n);
  for (int i = 0; i < n; ++i)
    h[i] = (i * 7919) % 1000 - 300;
  int *in = app::toDevice(h);
  int *sums, *scan, *sorted, *warpMax;
  CHECK(cudaMalloc(&sums, blocks * sizeof(int)));
  CHECK(cudaMalloc(&scan, n * sizeof(int)));
  CHECK(cudaMalloc(&sorted, n * kItems * sizeof(int)));
  CHECK(cudaMalloc(&warpMax, n / 32 * sizeof(int)));
  blockPrimitives<<<blocks, kBlock>>>(in, n, sums, scan, sorted, warpMax);
  CHECK(cudaGetLastError());
  std::vector<int> hs = app::toHost(sums, blocks), hscan = app::toHost(scan, n),
                   hsorted = app::toHost(sorted, n * kItems),
                   hmax = app::toHost(warpMax, n / 32);
  for (int b = 0; b < blocks; ++b) {
    int s = 0;
    for (int t = 0; t < kBlock; ++t) {
      EXPECT(hscan[b * kBlock + t] == s, "BlockScan: element %d is %d, not %d",
             b * kBlock + t, hscan[b * kBlock + t], s);
      s += h[b * kBlock + t];
    }
    EXPECT(hs[b] == s, "BlockReduce: block %d sums to %d, not %d", b, hs[b], s);
    std::vector<int> keys(kBlock * kItems);
    for (int k = 0; k < kBlock * kItems; ++k)
      keys[k] = h[(b * kBlock * kItems + k) % n];
    std::sort(keys.begin(), keys.end());
    EXPECT(std::equal(keys.begin(), keys.end(),
                      hsorted.begin() + b * kBlock * kItems),
           "BlockRadixSort: block %d is not sorted", b);
  }
  for (int w = 0; w < n / 32; ++w)
    EXPECT(hmax[w] ==
               *std::max_element(h.begin() + w * 32, h.begin() + w * 32 + 32),
           "WarpReduce: warp %d", w);
  std::printf("cub block: %d blocks of %d, reduce/scan/sort/warp max agree\n",
              blocks, kBlock);

  // Device-wide, each with the size query first.
  int *out;
  CHECK(cudaMalloc(&out, sizeof(int)));
  void *temp = nullptr;
  size_t bytes = 0;
  CHECK(cub::DeviceReduce::Sum(temp, bytes, in, out, n));
  CHECK(cudaMalloc(&temp, bytes));
  CHECK(cub::DeviceReduce::Sum(temp, bytes, in, out, n));
  int total = app::toHost(out, 1)[0];
  EXPECT(total == std::accumulate(h.begin(), h.end(), 0),
         "DeviceReduce::Sum: %d", total);
  CHECK(cudaFree(temp));
  temp = nullptr;
  CHECK(cub::DeviceScan::InclusiveSum(temp, bytes, in, scan, n));
  CHECK(cudaMalloc(&temp, bytes));
  CHECK(cub::DeviceScan::InclusiveSum(temp, bytes, in, scan, n));
  hscan = app::toHost(scan, n);
  for (int i = 0, s = 0; i < n; ++i) {
    s += h[i];
    EXPECT(hscan[i] == s, "DeviceScan::InclusiveSum: element %d", i);
  }
  CHECK(cudaFree(temp));
  std::vector<int> iota(n);
  std::iota(iota.begin(), iota.end(), 0);
  int *values = app::toDevice(iota), *keysOut, *valuesOut;
  CHECK(cudaMalloc(&keysOut, n * sizeof(int)));
  CHECK(cudaMalloc(&valuesOut, n * sizeof(int)));
  temp = nullptr;
  CHECK(cub::DeviceRadixSort::SortPairs(temp, bytes, in, keysOut, values,
                                        valuesOut, n));
  CHECK(cudaMalloc(&temp, bytes));
  CHECK(cub::DeviceRadixSort::SortPairs(temp, bytes, in, keysOut, values,
                                        valuesOut, n));
  std::vector<int> ko = app::toHost(keysOut, n), vo = app::toHost(valuesOut, n);
  std::vector<int> order = iota;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return h[a] < h[b]; });
  for (int i = 0; i < n; ++i)
    EXPECT(ko[i] == h[order[i]] && vo[i] == order[i],
           "DeviceRadixSort::SortPairs: position %d has (%d, %d), not (%d, "
           "%d)",
           i, ko[i], vo[i], h[order[i]], order[i]);
  std::printf("cub device: sum %d, scan and stable pair sort of %d agree\n",
              total, n);
  for (void *p :
       {(void *)in, (void *)sums, (void *)scan, (void *)sorted, (void *)warpMax,
        (void *)out, temp, (void *)values, (void *)keysOut, (void *)valuesOut})
    CHECK(cudaFree(p));
  app::pass();
  return 0;
}
