//===- warp.cu - A CUDA-samples-style program for capture tests -----------===//
//
// Warp-level code: a bitonic sort of 4096 ints in shared memory, a stream
// compaction with __ballot_sync/__popc/__shfl_*_sync/__any_sync, a shuffle
// reduction with a 64-bit atomicAdd.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <cstdlib>
#define APP_NAME "sample_warp"
#include "../CudaApp.h"
#define N 4096
// Bitonic sort of 4096 ints in shared memory by one block of 1024 threads (4
// elems/thread).
__global__ void bitonic(int *d) {
  __shared__ int s[N];
  for (int i = threadIdx.x; i < N; i += blockDim.x)
    s[i] = d[i];
  __syncthreads();
  for (int k = 2; k <= N; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < N; i += blockDim.x) {
        int ixj = i ^ j;
        if (ixj > i) {
          bool up = (i & k) == 0;
          int a = s[i], b = s[ixj];
          if ((a > b) == up) {
            s[i] = b;
            s[ixj] = a;
          }
        }
      }
      __syncthreads();
    }
  for (int i = threadIdx.x; i < N; i += blockDim.x)
    d[i] = s[i];
}
// Warp-vote stream compaction: keep positive values, order-preserving.
__global__ void compact(const int *in, int *out, int *count, int n) {
  __shared__ int warpTotals[32];
  __shared__ int blockBase;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int v = i < n ? in[i] : 0;
  bool keep = i < n && v > 0;
  unsigned mask = __ballot_sync(0xffffffffu, keep);
  int prefix = __popc(mask & ((1u << lane) - 1));
  if (lane == 0)
    warpTotals[warp] = __popc(mask);
  __syncthreads();
  if (warp == 0) {
    int t = lane < (blockDim.x >> 5) ? warpTotals[lane] : 0;
    // warp inclusive scan via shuffles
    for (int o = 1; o < 32; o <<= 1) {
      int y = __shfl_up_sync(0xffffffffu, t, o);
      if (lane >= o)
        t += y;
    }
    int total = __shfl_sync(0xffffffffu, t, 31);
    if (lane == 0)
      blockBase = atomicAdd(count, total);
    warpTotals[lane] = t; // inclusive
  }
  __syncthreads();
  int warpBase = warp ? warpTotals[warp - 1] : 0;
  int allAny = __any_sync(0xffffffffu, keep);
  if (allAny && keep)
    out[blockBase + warpBase + prefix] = v;
}
// reduce per block with __shfl_down_sync, used to check sum of compacted list
__global__ void sumreduce(const int *in, int n, unsigned long long *sum) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  long long v = i < n ? in[i] : 0;
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0)
    atomicAdd(sum, (unsigned long long)v);
}
int cmp(const void *a, const void *b) {
  int x = *(int *)a, y = *(int *)b;
  return (x > y) - (x < y);
}
int main() {
  int *h = (int *)malloc(N * sizeof(int)),
      *ref = (int *)malloc(N * sizeof(int)),
      *o = (int *)malloc(N * sizeof(int));
  unsigned seed = 7;
  for (int i = 0; i < N; i++) {
    seed = seed * 1664525u + 1013904223u;
    h[i] = (int)(seed >> 8) % 2001 - 1000;
    ref[i] = h[i];
  }
  int *d;
  CHECK(cudaMalloc(&d, N * sizeof(int)));
  CHECK(cudaMemcpy(d, h, N * sizeof(int), cudaMemcpyHostToDevice));
  bitonic<<<1, 1024>>>(d);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(o, d, N * sizeof(int), cudaMemcpyDeviceToHost));
  qsort(ref, N, sizeof(int), cmp);
  int bad = 0;
  for (int i = 0; i < N; i++)
    if (o[i] != ref[i]) {
      if (bad < 5)
        printf("sort %d: %d vs %d\n", i, o[i], ref[i]);
      bad++;
    }
  printf("sort: %s\n", bad ? "bad" : "ok");
  // compaction (order within blocks preserved, block order arbitrary -> compare
  // multiset/sums)
  int *din, *dout, *dcnt;
  unsigned long long *dsum;
  CHECK(cudaMalloc(&din, N * sizeof(int)));
  CHECK(cudaMalloc(&dout, N * sizeof(int)));
  CHECK(cudaMalloc(&dcnt, sizeof(int)));
  CHECK(cudaMalloc(&dsum, 8));
  CHECK(cudaMemcpy(din, h, N * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dcnt, 0, sizeof(int)));
  CHECK(cudaMemset(dsum, 0, 8));
  compact<<<N / 256, 256>>>(din, dout, dcnt, N);
  CHECK(cudaGetLastError());
  int cnt;
  CHECK(cudaMemcpy(&cnt, dcnt, sizeof(int), cudaMemcpyDeviceToHost));
  sumreduce<<<(cnt + 255) / 256, 256>>>(dout, cnt, dsum);
  CHECK(cudaGetLastError());
  unsigned long long gs;
  CHECK(cudaMemcpy(&gs, dsum, 8, cudaMemcpyDeviceToHost));
  int rc = 0;
  unsigned long long rs = 0;
  for (int i = 0; i < N; i++)
    if (h[i] > 0) {
      rc++;
      rs += h[i];
    }
  CHECK(cudaMemcpy(o, dout, cnt * sizeof(int), cudaMemcpyDeviceToHost));
  int bad2 = (cnt != rc) || (gs != rs);
  for (int i = 0; i < cnt; i++)
    if (o[i] <= 0)
      bad2++;
  printf("compact: count %d vs %d, sum %llu vs %llu\n", cnt, rc, gs, rs);
  bool ok = !bad && !bad2;
  printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
