//===- thrust.cu - A CUDA-samples-style program ---------------------------===//
//
// Thrust and CUB as training and data-processing code use them:
// device_vector, sort (CUB's onesweep radix sort), sort_by_key, reduce,
// inclusive/exclusive scan (CUB's decoupled look-back), transform_reduce,
// copy_if, unique, reduce_by_key, and cub::DeviceRadixSort /
// cub::DeviceScan directly with their temporary storage.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdio>
#include <cub/cub.cuh>
#include <numeric>
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/transform_reduce.h>
#include <thrust/unique.h>
#include <vector>
#define APP_NAME "sample_thrust"
#include "../CudaApp.h"

struct IsOdd {
  __host__ __device__ bool operator()(int x) const { return x & 1; }
};
struct Square {
  __host__ __device__ long long operator()(int x) const {
    return (long long)x * x;
  }
};

int main() {
  const int n = 200000;
  std::vector<int> h(n);
  unsigned s = 12345;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    h[i] = int(s >> 12) % 100000 - 50000;
  }
  int bad = 0;
  thrust::device_vector<int> d(h.begin(), h.end());
  // reduce, transform_reduce
  long long sum = thrust::reduce(d.begin(), d.end(), 0LL);
  long long sq = thrust::transform_reduce(d.begin(), d.end(), Square(), 0LL,
                                          thrust::plus<long long>());
  long long rsum = 0, rsq = 0;
  for (int v : h) {
    rsum += v;
    rsq += (long long)v * v;
  }
  if (sum != rsum || sq != rsq) {
    std::printf("reduce %lld %lld\n", sum, sq);
    ++bad;
  }
  // scans
  thrust::device_vector<int> inc(n), exc(n);
  thrust::inclusive_scan(d.begin(), d.end(), inc.begin());
  thrust::exclusive_scan(d.begin(), d.end(), exc.begin(), 7);
  thrust::host_vector<int> hi = inc, he = exc;
  int run = 0;
  for (int i = 0; i < n; ++i) {
    if (he[i] != run + 7 && bad++ < 5)
      std::printf("exclusive[%d] = %d\n", i, he[i]);
    run += h[i];
    if (hi[i] != run && bad++ < 5)
      std::printf("inclusive[%d] = %d\n", i, hi[i]);
  }
  // copy_if
  thrust::device_vector<int> odd(n);
  auto end = thrust::copy_if(d.begin(), d.end(), odd.begin(), IsOdd());
  std::vector<int> rodd;
  for (int v : h)
    if (v & 1)
      rodd.push_back(v);
  if (end - odd.begin() != (long)rodd.size()) {
    std::printf("copy_if size\n");
    ++bad;
  } else {
    thrust::host_vector<int> ho(odd.begin(), end);
    for (size_t i = 0; i < rodd.size(); ++i)
      if (ho[i] != rodd[i] && bad++ < 5)
        std::printf("copy_if[%zu]\n", i);
  }
  // sort_by_key, sort
  thrust::device_vector<int> keys = d;
  thrust::device_vector<int> vals(n);
  thrust::sequence(vals.begin(), vals.end());
  thrust::sort_by_key(keys.begin(), keys.end(), vals.begin());
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return h[a] < h[b]; });
  thrust::host_vector<int> hk = keys, hv = vals;
  for (int i = 0; i < n; ++i)
    if ((hk[i] != h[order[i]] || hv[i] != order[i]) && bad++ < 5)
      std::printf("sort_by_key[%d] = (%d, %d), want (%d, %d)\n", i, hk[i],
                  hv[i], h[order[i]], order[i]);
  thrust::device_vector<float> f(n);
  thrust::host_vector<float> hf(n);
  for (int i = 0; i < n; ++i)
    hf[i] = float(h[i]) * 0.25f;
  f = hf;
  thrust::sort(f.begin(), f.end(), thrust::greater<float>());
  thrust::host_vector<float> hf2 = f;
  std::sort(hf.begin(), hf.end(), std::greater<float>());
  for (int i = 0; i < n; ++i)
    if (hf2[i] != hf[i] && bad++ < 5)
      std::printf("sort float[%d]\n", i);
  // unique, reduce_by_key on the sorted keys
  thrust::device_vector<int> ukeys(n), counts(n);
  auto ends = thrust::reduce_by_key(keys.begin(), keys.end(),
                                    thrust::make_constant_iterator(1),
                                    ukeys.begin(), counts.begin());
  long distinct = ends.first - ukeys.begin();
  std::vector<int> sorted(h);
  std::sort(sorted.begin(), sorted.end());
  long rdistinct = std::unique(sorted.begin(), sorted.end()) - sorted.begin();
  if (distinct != rdistinct) {
    std::printf("reduce_by_key %ld vs %ld\n", distinct, rdistinct);
    ++bad;
  }
  thrust::device_vector<int> u = keys;
  long ucount = thrust::unique(u.begin(), u.end()) - u.begin();
  if (ucount != rdistinct) {
    std::printf("unique %ld\n", ucount);
    ++bad;
  }
  // CUB directly: DeviceRadixSort::SortPairs on unsigned keys, DeviceScan.
  const int m = 100000;
  thrust::device_vector<unsigned> ck(m), ck2(m);
  thrust::device_vector<int> cv(m), cv2(m);
  thrust::host_vector<unsigned> hck(m);
  for (int i = 0; i < m; ++i)
    hck[i] = unsigned(h[i]) * 2654435761u;
  ck = hck;
  thrust::sequence(cv.begin(), cv.end());
  size_t temp = 0;
  CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp, ck.data().get(),
                                        ck2.data().get(), cv.data().get(),
                                        cv2.data().get(), m));
  void *dTemp;
  CHECK(cudaMalloc(&dTemp, temp));
  CHECK(cub::DeviceRadixSort::SortPairs(dTemp, temp, ck.data().get(),
                                        ck2.data().get(), cv.data().get(),
                                        cv2.data().get(), m));
  thrust::host_vector<unsigned> sk = ck2;
  thrust::host_vector<int> sv = cv2;
  for (int i = 0; i < m; ++i)
    if ((i && sk[i - 1] > sk[i]) || hck[sv[i]] != sk[i]) {
      if (bad++ < 5)
        std::printf("cub sort[%d]\n", i);
    }
  CHECK(cudaFree(dTemp));
  temp = 0;
  CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp, cv.data().get(),
                                      cv2.data().get(), m));
  CHECK(cudaMalloc(&dTemp, temp));
  CHECK(cub::DeviceScan::InclusiveSum(dTemp, temp, cv.data().get(),
                                      cv2.data().get(), m));
  thrust::host_vector<int> cs = cv2;
  for (int i = 0; i < m; ++i)
    if (cs[i] != int((long long)i * (i + 1) / 2) && bad++ < 5)
      std::printf("cub scan[%d] = %d\n", i, cs[i]);
  CHECK(cudaFree(dTemp));
  std::printf("thrust: n = %d, %ld distinct keys, %d mismatches\n", n, distinct,
              bad);
  EXPECT(bad == 0, "%d mismatches", bad);
  app::pass();
  return 0;
}
