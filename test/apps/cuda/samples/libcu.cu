//===- libcu.cu - A CUDA-samples-style program ----------------------------===//
//
// libcu++ and newer device features: cuda::atomic_ref with memory orders and
// thread scopes, cuda::barrier in shared memory with cuda::memcpy_async
// (mbarrier + cp.async), cuda::pipeline double buffering, __int128
// arithmetic, __nv_bfloat162 math, fp8 (e4m3/e5m2) conversions, recursion,
// clock64/__nanosleep, printf with several conversions, and assert.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cassert>
#include <cooperative_groups.h>
#include <cstdio>
#include <cuda/atomic>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <vector>
#define APP_NAME "sample_libcu"
#include "../CudaApp.h"

namespace cg = cooperative_groups;

__global__ void atomics(const int *in, int n, int *sum, int *mx,
                        unsigned long long *bits) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  cuda::atomic_ref<int, cuda::thread_scope_device> s(*sum);
  s.fetch_add(in[i], cuda::memory_order_relaxed);
  cuda::atomic_ref<int, cuda::thread_scope_device> m(*mx);
  m.fetch_max(in[i], cuda::memory_order_acq_rel);
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> b(*bits);
  b.fetch_or(1ull << (in[i] & 63), cuda::memory_order_seq_cst);
}

constexpr int TILE = 64;

// Each block copies its tile with cuda::memcpy_async under a block barrier.
__global__ void barrierCopy(const float *in, float *out) {
  __shared__ float tile[TILE];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0)
    init(&bar, block.size());
  block.sync();
  cuda::memcpy_async(block, tile, in + blockIdx.x * TILE, sizeof(float) * TILE,
                     bar);
  bar.arrive_and_wait();
  out[blockIdx.x * TILE + threadIdx.x] = tile[TILE - 1 - threadIdx.x] + 1.0f;
}

// Two-stage pipeline over `chunks` tiles: sum of each column of tiles.
__global__ void pipelineSum(const float *in, float *out, int chunks) {
  __shared__ float buf[2][TILE];
  auto block = cg::this_thread_block();
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 2> state;
  auto pipe = cuda::make_pipeline(block, &state);
  float acc = 0;
  for (int fetch = 0, use = 0; use < chunks; ++use) {
    for (; fetch < chunks && fetch < use + 2; ++fetch) {
      pipe.producer_acquire();
      cuda::memcpy_async(block, buf[fetch % 2], in + fetch * TILE,
                         sizeof(float) * TILE, pipe);
      pipe.producer_commit();
    }
    pipe.consumer_wait();
    acc += buf[use % 2][threadIdx.x];
    block.sync();
    pipe.consumer_release();
  }
  out[threadIdx.x] = acc;
}

__device__ unsigned long long fib(int k) {
  return k < 2 ? k : fib(k - 1) + fib(k - 2);
}

__global__ void misc(unsigned long long *out, __nv_bfloat162 *bf, float *f8) {
  int t = threadIdx.x;
  // __int128: (2^64 + t) * (2^63 + 3) >> 60, low and high words.
  unsigned __int128 a = ((unsigned __int128)1 << 64) + t;
  unsigned __int128 b = ((unsigned __int128)1 << 63) + 3;
  unsigned __int128 p = (a * b) >> 60;
  __int128 q = -(__int128)p / 7;
  out[t * 4 + 0] = (unsigned long long)p;
  out[t * 4 + 1] = (unsigned long long)(p >> 64);
  out[t * 4 + 2] = (unsigned long long)q;
  out[t * 4 + 3] = fib(t % 12);
  __nv_bfloat162 x = __floats2bfloat162_rn(1.5f + t, -0.25f * t);
  __nv_bfloat162 y = __floats2bfloat162_rn(0.5f, 2.0f);
  bf[t] = __hfma2(x, y, __hmul2(x, x));
  __nv_fp8_e4m3 e4(0.3f * t - 5.0f);
  __nv_fp8_e5m2 e5(1.7f * t);
  f8[2 * t] = float(e4);
  f8[2 * t + 1] = float(e5);
  long long c0 = clock64();
  __nanosleep(100);
  assert(clock64() >= c0);
  if (t == 3)
    printf("libcu: t=%d %lld %u %.3f %s %c %x %5.1e\n", t, -1234567890123ll,
           42u, 3.14159, "str", 'z', 0xbeef, 12345.678);
}

int main() {
  const int n = 1000;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i)
    in[i] = (i * 7919) % 1009;
  int *dIn, *dSum, *dMax;
  unsigned long long *dBits;
  CHECK(cudaMalloc(&dIn, n * 4));
  CHECK(cudaMalloc(&dSum, 4));
  CHECK(cudaMalloc(&dMax, 4));
  CHECK(cudaMalloc(&dBits, 8));
  CHECK(cudaMemset(dSum, 0, 4));
  CHECK(cudaMemset(dMax, 0, 4));
  CHECK(cudaMemset(dBits, 0, 8));
  CHECK(cudaMemcpy(dIn, in.data(), n * 4, cudaMemcpyHostToDevice));
  atomics<<<(n + 127) / 128, 128>>>(dIn, n, dSum, dMax, dBits);
  CHECK(cudaGetLastError());
  int sum, mx;
  unsigned long long bits;
  CHECK(cudaMemcpy(&sum, dSum, 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&mx, dMax, 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&bits, dBits, 8, cudaMemcpyDeviceToHost));
  int rs = 0, rm = 0;
  unsigned long long rb = 0;
  for (int v : in) {
    rs += v;
    rm = v > rm ? v : rm;
    rb |= 1ull << (v & 63);
  }
  int bad = 0;
  if (sum != rs || mx != rm || bits != rb) {
    std::printf("atomics: %d %d %llx, want %d %d %llx\n", sum, mx, bits, rs, rm,
                rb);
    ++bad;
  }
  const int blocks = 4, chunks = 6;
  std::vector<float> fin(blocks * TILE > chunks * TILE ? blocks * TILE
                                                       : chunks * TILE);
  for (size_t i = 0; i < fin.size(); ++i)
    fin[i] = float(i % 97) * 0.5f;
  float *dF, *dOut;
  CHECK(cudaMalloc(&dF, fin.size() * 4));
  CHECK(cudaMalloc(&dOut, fin.size() * 4));
  CHECK(cudaMemcpy(dF, fin.data(), fin.size() * 4, cudaMemcpyHostToDevice));
  barrierCopy<<<blocks, TILE>>>(dF, dOut);
  CHECK(cudaGetLastError());
  std::vector<float> out(fin.size());
  CHECK(
      cudaMemcpy(out.data(), dOut, blocks * TILE * 4, cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < TILE; ++t)
      if (out[b * TILE + t] != fin[b * TILE + TILE - 1 - t] + 1.0f &&
          bad++ < 10)
        std::printf("barrierCopy[%d][%d] = %g\n", b, t, out[b * TILE + t]);
  pipelineSum<<<1, TILE>>>(dF, dOut, chunks);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), dOut, TILE * 4, cudaMemcpyDeviceToHost));
  for (int t = 0; t < TILE; ++t) {
    float want = 0;
    for (int c = 0; c < chunks; ++c)
      want += fin[c * TILE + t];
    if (out[t] != want && bad++ < 10)
      std::printf("pipelineSum[%d] = %g, want %g\n", t, out[t], want);
  }
  const int threads = 32;
  unsigned long long *dU;
  __nv_bfloat162 *dBf;
  float *dF8;
  CHECK(cudaMalloc(&dU, threads * 32));
  CHECK(cudaMalloc(&dBf, threads * sizeof(__nv_bfloat162)));
  CHECK(cudaMalloc(&dF8, threads * 8));
  misc<<<1, threads>>>(dU, dBf, dF8);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned long long> u(threads * 4);
  std::vector<__nv_bfloat162> bf(threads);
  std::vector<float> f8(threads * 2);
  CHECK(cudaMemcpy(u.data(), dU, threads * 32, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(bf.data(), dBf, threads * sizeof(__nv_bfloat162),
                   cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(f8.data(), dF8, threads * 8, cudaMemcpyDeviceToHost));
  auto fibH = [](int k) {
    unsigned long long a = 0, b = 1;
    for (int i = 0; i < k; ++i) {
      unsigned long long t = a + b;
      a = b;
      b = t;
    }
    return a;
  };
  auto bfr = [](float v) { return __bfloat162float(__float2bfloat16_rn(v)); };
  for (int t = 0; t < threads; ++t) {
    unsigned __int128 a = ((unsigned __int128)1 << 64) + t;
    unsigned __int128 b = ((unsigned __int128)1 << 63) + 3;
    unsigned __int128 p = (a * b) >> 60;
    __int128 q = -(__int128)p / 7;
    unsigned long long w[4] = {(unsigned long long)p,
                               (unsigned long long)(p >> 64),
                               (unsigned long long)q, fibH(t % 12)};
    for (int k = 0; k < 4; ++k)
      if (u[t * 4 + k] != w[k] && bad++ < 10)
        std::printf("misc[%d].%d = %llx, want %llx\n", t, k, u[t * 4 + k],
                    w[k]);
    float x0 = bfr(1.5f + t), x1 = bfr(-0.25f * t);
    float w0 = bfr(std::fma(x0, 0.5f, bfr(x0 * x0)));
    float w1 = bfr(std::fma(x1, 2.0f, bfr(x1 * x1)));
    float g0 = __low2float(bf[t]), g1 = __high2float(bf[t]);
    if ((g0 != w0 || g1 != w1) && bad++ < 10)
      std::printf("bf16[%d] = (%g, %g), want (%g, %g)\n", t, g0, g1, w0, w1);
    float e4 = float(__nv_fp8_e4m3(0.3f * t - 5.0f)),
          e5 = float(__nv_fp8_e5m2(1.7f * t));
    if ((f8[2 * t] != e4 || f8[2 * t + 1] != e5) && bad++ < 10)
      std::printf("fp8[%d] = (%g, %g), want (%g, %g)\n", t, f8[2 * t],
                  f8[2 * t + 1], e4, e5);
  }
  std::printf("libcu: %d mismatches\n", bad);
  EXPECT(bad == 0, "%d mismatches", bad);
  app::pass();
  return 0;
}
