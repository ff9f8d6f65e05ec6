//===- coop.cu - A CUDA-samples-style program -----------------------------===//
//
// Cooperative groups beyond warps: a cooperative launch with grid.sync()
// (a two-phase normalisation; where cudaDevAttrCooperativeLaunch is 0, as
// on a wooly-serve whose device has none, the launch must fail with
// cudaErrorNotSupported), thread_block_tile<8> and <16> with shfl,
// any/all/ballot, cg::inclusive_scan/exclusive_scan, coalesced_threads() in
// a divergent branch, labeled_partition, cg::memcpy_async + cg::wait into
// shared memory (cp.async on sm_80), and block.sync()/group sizes.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
#include <cstdio>
#include <vector>
#define APP_NAME "sample_coop"
#include "../CudaApp.h"

namespace cg = cooperative_groups;

constexpr int BLOCK = 128;

// Phase 1: per-block sums into partial[]; grid.sync(); phase 2: every thread
// divides by the grand total computed from the partials.
__global__ void normalise(const float *in, float *out, float *partial, int n) {
  cg::grid_group grid = cg::this_grid();
  cg::thread_block block = cg::this_thread_block();
  auto warp = cg::tiled_partition<32>(block);
  __shared__ float warpSums[BLOCK / 32];
  float s = 0;
  for (int i = grid.thread_rank(); i < n; i += grid.size())
    s += in[i];
  s = cg::reduce(warp, s, cg::plus<float>());
  if (warp.thread_rank() == 0)
    warpSums[warp.meta_group_rank()] = s;
  block.sync();
  if (block.thread_rank() == 0) {
    float t = 0;
    for (int w = 0; w < BLOCK / 32; ++w)
      t += warpSums[w];
    partial[blockIdx.x] = t;
  }
  grid.sync();
  float total = 0;
  for (int b = 0; b < gridDim.x; ++b)
    total += partial[b];
  for (int i = grid.thread_rank(); i < n; i += grid.size())
    out[i] = in[i] / total;
}

__global__ void tiles(const int *in, int *out) {
  cg::thread_block block = cg::this_thread_block();
  int i = block.group_index().x * block.size() + block.thread_rank();
  int v = in[i];
  int *o = out + i * 10;
  auto t16 = cg::tiled_partition<16>(block);
  auto t8 = cg::tiled_partition<8>(block);
  o[0] = t16.shfl(v, 15);
  o[1] = t8.shfl_xor(v, 3);
  o[2] = cg::inclusive_scan(t16, v);
  o[3] = cg::exclusive_scan(t8, v, cg::plus<int>());
  o[4] = t16.any(v > 90);
  o[5] = t8.all(v >= 0);
  o[6] = int(t16.ballot(v & 1));
  o[7] = cg::reduce(t8, v, cg::greater<int>());
  if (v % 3 == 0) {
    cg::coalesced_group active = cg::coalesced_threads();
    o[8] = active.size() * 100 + active.thread_rank();
  } else {
    o[8] = -1;
  }
  auto part = cg::labeled_partition(cg::tiled_partition<32>(block), v % 4);
  o[9] = cg::reduce(part, 1, cg::plus<int>()) * 100 + part.thread_rank();
}

__global__ void stage(const float *in, float *out, int n) {
  extern __shared__ float buf[];
  cg::thread_block block = cg::this_thread_block();
  cg::memcpy_async(block, buf, in + blockIdx.x * n, sizeof(float) * n);
  cg::wait(block);
  int t = block.thread_rank();
  out[blockIdx.x * n + t] = buf[n - 1 - t] * 2.0f;
}

int main() {
  int dev = 0, coop = 0, numSms = 0, perSm = 0;
  CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  // What NVIDIA's samples check before a cooperative launch.
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  EXPECT(prop.cooperativeLaunch == coop,
         "cudaDeviceProp::cooperativeLaunch %d, the attribute %d",
         prop.cooperativeLaunch, coop);
  CHECK(cudaDeviceGetAttribute(&numSms, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, normalise, BLOCK,
                                                      0));
  EXPECT(perSm > 0, "blocks/SM %d", perSm);
  int blocks = numSms * perSm < 8 ? numSms * perSm : 8;
  const int n = 5000;
  std::vector<float> in(n), out(n);
  double total = 0;
  for (int i = 0; i < n; ++i) {
    in[i] = float(i % 17);
    total += in[i];
  }
  float *dIn, *dOut, *dPartial;
  CHECK(cudaMalloc(&dIn, n * 4));
  CHECK(cudaMalloc(&dOut, n * 4));
  CHECK(cudaMalloc(&dPartial, blocks * 4));
  CHECK(cudaMemcpy(dIn, in.data(), n * 4, cudaMemcpyHostToDevice));
  int nArg = n;
  void *args[] = {&dIn, &dOut, &dPartial, &nArg};
  int bad = 0;
  // A device without cooperative launches (Wooly's capture says so) must
  // refuse the launch rather than run grid.sync() without a grid.
  cudaError_t err =
      cudaLaunchCooperativeKernel((void *)normalise, blocks, BLOCK, args, 0, 0);
  if (!coop) {
    EXPECT(err == cudaErrorNotSupported, "cooperative launch returned %s",
           cudaGetErrorName(err));
    EXPECT(cudaGetLastError() == cudaErrorNotSupported, "sticky error");
    std::printf("coop: cooperative launches not supported\n");
  } else {
    CHECK(err);
    CHECK(cudaMemcpy(out.data(), dOut, n * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i)
      if (out[i] != in[i] / float(total) && bad++ < 5)
        std::printf("normalise[%d] = %g, want %g\n", i, out[i],
                    in[i] / float(total));
    std::printf("coop: grid.sync() over %d blocks\n", blocks);
    // More blocks than any device runs at once.
    int tooMany = 1 << 20;
    err = cudaLaunchCooperativeKernel((void *)normalise, tooMany, BLOCK, args,
                                      0, 0);
    EXPECT(err == cudaErrorCooperativeLaunchTooLarge,
           "a cooperative launch of %d blocks returned %s", tooMany,
           cudaGetErrorName(err));
    (void)cudaGetLastError();
  }

  const int m = 256;
  std::vector<int> v(m), o(m * 10);
  for (int i = 0; i < m; ++i)
    v[i] = (i * 37 + 11) % 101;
  int *dV, *dO;
  CHECK(cudaMalloc(&dV, m * 4));
  CHECK(cudaMalloc(&dO, m * 40));
  CHECK(cudaMemcpy(dV, v.data(), m * 4, cudaMemcpyHostToDevice));
  tiles<<<m / 64, 64>>>(dV, dO);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(o.data(), dO, m * 40, cudaMemcpyDeviceToHost));
  auto check = [&](const char *what, int i, int g, int w) {
    if (g != w && bad++ < 12)
      std::printf("%s[%d] = %d, want %d\n", what, i, g, w);
  };
  for (int i = 0; i < m; ++i) {
    int b16 = i & ~15, b8 = i & ~7, b32 = i & ~31;
    int inc = 0, exc = 0, any = 0, all = 1, ballot = 0, mx = 0;
    for (int k = b16; k <= i; ++k)
      inc += v[k];
    for (int k = b8; k < i; ++k)
      exc += v[k];
    for (int k = 0; k < 16; ++k) {
      any |= v[b16 + k] > 90;
      ballot |= (v[b16 + k] & 1) << k;
    }
    for (int k = 0; k < 8; ++k) {
      all &= v[b8 + k] >= 0;
      mx = v[b8 + k] > mx ? v[b8 + k] : mx;
    }
    const int *r = &o[i * 10];
    check("t16.shfl", i, r[0], v[b16 + 15]);
    check("t8.shfl_xor", i, r[1], v[b8 + ((i & 7) ^ 3)]);
    check("inclusive_scan", i, r[2], inc);
    check("exclusive_scan", i, r[3], exc);
    check("any", i, r[4], any);
    check("all", i, r[5], all);
    check("ballot", i, r[6], ballot);
    check("reduce.max", i, r[7], mx);
    int size = 0, rank = 0, lsize = 0, lrank = 0;
    for (int k = b32; k < b32 + 32; ++k) {
      if (v[k] % 3 == 0) {
        ++size;
        if (k < i)
          ++rank;
      }
      if (v[k] % 4 == v[i] % 4) {
        ++lsize;
        if (k < i)
          ++lrank;
      }
    }
    check("coalesced", i, r[8], v[i] % 3 == 0 ? size * 100 + rank : -1);
    check("labeled", i, r[9], lsize * 100 + lrank);
  }

  const int sn = 96, sb = 3;
  std::vector<float> sIn(sn * sb), sOut(sn * sb);
  for (int i = 0; i < sn * sb; ++i)
    sIn[i] = float(i) * 0.5f;
  float *dSIn, *dSOut;
  CHECK(cudaMalloc(&dSIn, sn * sb * 4));
  CHECK(cudaMalloc(&dSOut, sn * sb * 4));
  CHECK(cudaMemcpy(dSIn, sIn.data(), sn * sb * 4, cudaMemcpyHostToDevice));
  stage<<<sb, sn, sn * sizeof(float)>>>(dSIn, dSOut, sn);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(sOut.data(), dSOut, sn * sb * 4, cudaMemcpyDeviceToHost));
  for (int b = 0; b < sb; ++b)
    for (int t = 0; t < sn; ++t)
      if (sOut[b * sn + t] != sIn[b * sn + sn - 1 - t] * 2.0f && bad++ < 12)
        std::printf("stage[%d][%d] = %g\n", b, t, sOut[b * sn + t]);
  std::printf("coop: %d blocks x %d, %d mismatches\n", blocks, BLOCK, bad);
  EXPECT(bad == 0, "%d mismatches", bad);
  app::pass();
  return 0;
}
