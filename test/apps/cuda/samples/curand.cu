// cuRAND's device API as simulation and dropout code uses it: XORWOW states
// (curand_init's skip-ahead reads cuRAND's 100 KiB precalculated matrices,
// a __device__ table), uniform and normal draws, and Philox4x32-10 (curand4
// after an offset); stream-ordered allocation (cudaMallocAsync,
// cudaMemsetAsync, cudaFreeAsync); a cooperative_groups::reduce over warp
// tiles with a float atomicAdd; __hfma on __half. cuRAND's header also
// compiles for the host (QUALIFIERS below), which gives the exact reference:
// uniform and Philox draws bit for bit, normal draws (Box-Muller through
// logf/sincospif, whose device versions differ from the host's in the last
// bits) within 1e-5.
#define QUALIFIERS static __forceinline__ __host__ __device__
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_fp16.h>
#include <curand_kernel.h>

#include <cmath>
#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

#define CHECK(x)                                                               \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::printf("FAIL sample_curand: %s: %s\n", #x, cudaGetErrorString(e_)); \
      return 1;                                                                \
    }                                                                          \
  } while (0)

constexpr unsigned long long kSeed = 1234;

__global__ void draw(float *u, float *g, uint4 *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  curandState s;
  curand_init(kSeed, i, 0, &s);
  u[i] = curand_uniform(&s);
  g[i] = curand_normal(&s);
  curandStatePhilox4_32_10_t ph;
  curand_init(kSeed, i, 5, &ph);
  p[i] = curand4(&ph);
}

__global__ void sumTiles(const float *x, float *out, int n) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.f;
  float s = cg::reduce(tile, v, cg::plus<float>());
  if (tile.thread_rank() == 0)
    atomicAdd(out, s);
}

__global__ void halfAxpy(const __half *x, __half *y, __half a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = __hfma(a, x[i], y[i]);
}

int main() {
  const int n = 1 << 14;
  int bad = 0;
  cudaStream_t st;
  CHECK(cudaStreamCreate(&st));
  float *u, *g, *sum;
  uint4 *p;
  CHECK(cudaMallocAsync(&u, n * sizeof(float), st));
  CHECK(cudaMallocAsync(&g, n * sizeof(float), st));
  CHECK(cudaMallocAsync(&p, n * sizeof(uint4), st));
  CHECK(cudaMallocAsync(&sum, sizeof(float), st));
  CHECK(cudaMemsetAsync(sum, 0, sizeof(float), st));
  draw<<<n / 256, 256, 0, st>>>(u, g, p, n);
  sumTiles<<<n / 256, 256, 0, st>>>(u, sum, n);
  CHECK(cudaGetLastError());
  std::vector<float> hu(n), hg(n);
  std::vector<uint4> hp(n);
  float hs = 0;
  CHECK(cudaMemcpyAsync(hu.data(), u, n * sizeof(float), cudaMemcpyDeviceToHost,
                        st));
  CHECK(cudaMemcpyAsync(hg.data(), g, n * sizeof(float), cudaMemcpyDeviceToHost,
                        st));
  CHECK(cudaMemcpyAsync(hp.data(), p, n * sizeof(uint4), cudaMemcpyDeviceToHost,
                        st));
  CHECK(cudaMemcpyAsync(&hs, sum, sizeof(float), cudaMemcpyDeviceToHost, st));
  CHECK(cudaFreeAsync(u, st));
  CHECK(cudaFreeAsync(g, st));
  CHECK(cudaFreeAsync(p, st));
  CHECK(cudaFreeAsync(sum, st));
  CHECK(cudaStreamSynchronize(st));

  // The host's draws, from the same header.
  double total = 0;
  for (int i = 0; i < n; ++i) {
    curandState s;
    curand_init(kSeed, i, 0, &s);
    float wu = curand_uniform(&s), wg = curand_normal(&s);
    curandStatePhilox4_32_10_t ph;
    curand_init(kSeed, i, 5, &ph);
    uint4 wp = curand4(&ph);
    total += wu;
    bool ok = hu[i] == wu &&
              std::fabs(hg[i] - wg) <= 1e-5f * (1 + std::fabs(wg)) &&
              hp[i].x == wp.x && hp[i].y == wp.y && hp[i].z == wp.z &&
              hp[i].w == wp.w;
    if (!ok && bad++ < 3)
      std::printf("draw %d: uniform %.9g (host %.9g), normal %.9g (%.9g), "
                  "philox %08x %08x %08x %08x (%08x %08x %08x %08x)\n",
                  i, hu[i], wu, hg[i], wg, hp[i].x, hp[i].y, hp[i].z, hp[i].w,
                  wp.x, wp.y, wp.z, wp.w);
  }
  // The tiles' float sums arrive in any order: a relative bound.
  if (std::fabs(hs - total) > 1e-4 * total) {
    std::printf("tile sum %.3f, host %.3f\n", hs, total);
    ++bad;
  }

  std::vector<__half> hx(n), hy(n);
  for (int i = 0; i < n; ++i) {
    hx[i] = __float2half(float(i % 100) / 8);
    hy[i] = __float2half(1.0f);
  }
  __half *dx, *dy;
  CHECK(cudaMalloc(&dx, n * sizeof(__half)));
  CHECK(cudaMalloc(&dy, n * sizeof(__half)));
  CHECK(cudaMemcpy(dx, hx.data(), n * sizeof(__half), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, hy.data(), n * sizeof(__half), cudaMemcpyHostToDevice));
  halfAxpy<<<n / 256, 256>>>(dx, dy, __float2half(0.5f), n);
  CHECK(cudaMemcpy(hy.data(), dy, n * sizeof(__half), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    // A fused multiply-add of values exact in float, rounded once to half.
    float want = __half2float(__float2half(0.5f * __half2float(hx[i]) + 1.0f));
    if (__half2float(hy[i]) != want && bad++ < 6)
      std::printf("half %d: %g, want %g\n", i, __half2float(hy[i]), want);
  }
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  CHECK(cudaStreamDestroy(st));
  std::printf("curand: %d draws, uniform mean %.4f, %d mismatches\n", n,
              total / n, bad);
  std::printf(bad ? "FAIL sample_curand\n" : "PASS sample_curand\n");
  return bad ? 1 : 0;
}
