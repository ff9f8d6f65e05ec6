//===- legacy.cu - A CUDA-samples-style program ---------------------------===//
//
// Mixed bag: the classic warp-synchronous reduction (volatile shared memory,
// no syncs in the last warp), __syncthreads_count/and/or, 64-bit shared
// atomics, float2/float4 atomicAdd (sm_90), bf16x2 atomicAdd, a 2 KiB
// __grid_constant__ struct parameter, a wmma 16x16x16 half GEMM, a texture
// object on linear memory read with tex1Dfetch, five kernels with 48 KiB
// of static shared memory each, and a graph whose kernel node's parameters
// are updated in the executable graph.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <vector>
#define APP_NAME "sample_legacy"
#include "../CudaApp.h"

using namespace nvcuda;

template <unsigned blockSize>
__device__ void warpReduce(volatile int *s, unsigned tid) {
  if (blockSize >= 64)
    s[tid] += s[tid + 32];
  if (blockSize >= 32)
    s[tid] += s[tid + 16];
  if (blockSize >= 16)
    s[tid] += s[tid + 8];
  if (blockSize >= 8)
    s[tid] += s[tid + 4];
  if (blockSize >= 4)
    s[tid] += s[tid + 2];
  if (blockSize >= 2)
    s[tid] += s[tid + 1];
}

template <unsigned blockSize>
__global__ void reduce6(const int *in, int *out, unsigned n) {
  __shared__ int s[blockSize];
  unsigned tid = threadIdx.x, i = blockIdx.x * blockSize * 2 + tid;
  unsigned gridSize = blockSize * 2 * gridDim.x;
  s[tid] = 0;
  while (i < n) {
    s[tid] += in[i] + (i + blockSize < n ? in[i + blockSize] : 0);
    i += gridSize;
  }
  __syncthreads();
  if (blockSize >= 256) {
    if (tid < 128)
      s[tid] += s[tid + 128];
    __syncthreads();
  }
  if (blockSize >= 128) {
    if (tid < 64)
      s[tid] += s[tid + 64];
    __syncthreads();
  }
  if (tid < 32)
    warpReduce<blockSize>(s, tid);
  if (tid == 0)
    out[blockIdx.x] = s[0];
}

__global__ void votes(const int *in, int *out) {
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  int c = __syncthreads_count(v > 50);
  int a = __syncthreads_and(v >= 0);
  int o = __syncthreads_or(v == 77);
  __shared__ unsigned long long s64[2];
  if (threadIdx.x < 2)
    s64[threadIdx.x] = threadIdx.x ? 0 : ~0ull;
  __syncthreads();
  atomicAdd(&s64[1], (unsigned long long)v << 33);
  atomicMin(&s64[0], (unsigned long long)(v + 1) << 40);
  __syncthreads();
  if (threadIdx.x == 0) {
    out[blockIdx.x * 7 + 0] = c;
    out[blockIdx.x * 7 + 1] = a;
    out[blockIdx.x * 7 + 2] = o;
    out[blockIdx.x * 7 + 3] = int(s64[1] >> 33);
    out[blockIdx.x * 7 + 4] = int(s64[1] & 0xffffffffu);
    out[blockIdx.x * 7 + 5] = int(s64[0] >> 40);
    out[blockIdx.x * 7 + 6] = int(s64[0] & 0xffffffffu);
  }
}

__global__ void vecAtomics(float2 *f2, float4 *f4, __nv_bfloat162 *b2) {
  int t = threadIdx.x;
  atomicAdd(f2, make_float2(1.0f, float(t)));
  atomicAdd(f4, make_float4(0.5f, 1.0f, 2.0f, float(t & 3)));
  atomicAdd(b2, __floats2bfloat162_rn(1.0f, 0.5f));
}

struct Big {
  float coeff[500];
  int n;
  int pad[11];
};

__global__ void bigParam(const __grid_constant__ Big p, float *out) {
  int i = threadIdx.x;
  float s = 0;
  for (int k = 0; k < p.n; ++k)
    s += p.coeff[(i + k) % 500];
  out[i] = s;
}

__global__ void wmmaGemm(const half *a, const half *b, float *c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 1.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

__global__ void texFetch(cudaTextureObject_t tex, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = tex1Dfetch<float>(tex, n - 1 - i) * 2.0f;
}

// One of several kernels with 48 KiB of static shared memory each (more
// than a block may have, all together): each block reads its own.
template <int K> __global__ void bigShared(float *out) {
  __shared__ float buf[12288];
  for (int i = threadIdx.x; i < 12288; i += blockDim.x)
    buf[i] = float(i * K);
  __syncthreads();
  out[threadIdx.x] = buf[(threadIdx.x * 97 + K) % 12288];
}

__global__ void scaleAdd(float *p, float s, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = p[i] * s + a;
}

int main() {
  int bad = 0;
  // reduce6
  const unsigned n = 10000;
  std::vector<int> in(n);
  long long want = 0;
  for (unsigned i = 0; i < n; ++i) {
    in[i] = int((i * 13) % 101);
    want += in[i];
  }
  int *dIn, *dOut;
  CHECK(cudaMalloc(&dIn, n * 4));
  CHECK(cudaMalloc(&dOut, 64 * 4));
  CHECK(cudaMemcpy(dIn, in.data(), n * 4, cudaMemcpyHostToDevice));
  reduce6<256><<<8, 256>>>(dIn, dOut, n);
  CHECK(cudaGetLastError());
  std::vector<int> part(8);
  CHECK(cudaMemcpy(part.data(), dOut, 8 * 4, cudaMemcpyDeviceToHost));
  long long got = 0;
  for (int v : part)
    got += v;
  if (got != want) {
    std::printf("reduce6: %lld, want %lld\n", got, want);
    ++bad;
  }
  // votes
  const int blocks = 4, threads = 128;
  CHECK(
      cudaMemcpy(dIn, in.data(), blocks * threads * 4, cudaMemcpyHostToDevice));
  int *dV;
  CHECK(cudaMalloc(&dV, blocks * 7 * 4));
  votes<<<blocks, threads>>>(dIn, dV);
  CHECK(cudaGetLastError());
  std::vector<int> v(blocks * 7);
  CHECK(cudaMemcpy(v.data(), dV, blocks * 7 * 4, cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b) {
    int c = 0, o = 0;
    unsigned long long sum = 0, mn = ~0ull;
    for (int t = 0; t < threads; ++t) {
      int x = in[b * threads + t];
      c += x > 50;
      o |= x == 77;
      sum += (unsigned long long)x << 33;
      unsigned long long m = (unsigned long long)(x + 1) << 40;
      mn = m < mn ? m : mn;
    }
    int w[7] = {c,
                1,
                o,
                int(sum >> 33),
                int(sum & 0xffffffffu),
                int(mn >> 40),
                int(mn & 0xffffffffu)};
    for (int k = 0; k < 7; ++k)
      if (v[b * 7 + k] != w[k] && bad++ < 10)
        std::printf("votes[%d].%d = %d, want %d\n", b, k, v[b * 7 + k], w[k]);
  }
  // vector atomics
  float2 *dF2;
  float4 *dF4;
  __nv_bfloat162 *dB2;
  CHECK(cudaMalloc(&dF2, sizeof(float2)));
  CHECK(cudaMalloc(&dF4, sizeof(float4)));
  CHECK(cudaMalloc(&dB2, sizeof(__nv_bfloat162)));
  CHECK(cudaMemset(dF2, 0, sizeof(float2)));
  CHECK(cudaMemset(dF4, 0, sizeof(float4)));
  CHECK(cudaMemset(dB2, 0, sizeof(__nv_bfloat162)));
  vecAtomics<<<1, 64>>>(dF2, dF4, dB2);
  CHECK(cudaGetLastError());
  float2 f2;
  float4 f4;
  __nv_bfloat162 b2;
  CHECK(cudaMemcpy(&f2, dF2, sizeof f2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&f4, dF4, sizeof f4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&b2, dB2, sizeof b2, cudaMemcpyDeviceToHost));
  if (f2.x != 64 || f2.y != 2016 || f4.x != 32 || f4.y != 64 || f4.z != 128 ||
      f4.w != 96 || __low2float(b2) != 64 || __high2float(b2) != 32) {
    std::printf("vector atomics: (%g %g) (%g %g %g %g) (%g %g)\n", f2.x, f2.y,
                f4.x, f4.y, f4.z, f4.w, __low2float(b2), __high2float(b2));
    ++bad;
  }
  // big parameter
  Big big;
  for (int k = 0; k < 500; ++k)
    big.coeff[k] = float(k % 7);
  big.n = 37;
  float *dBig;
  CHECK(cudaMalloc(&dBig, 64 * 4));
  bigParam<<<1, 64>>>(big, dBig);
  CHECK(cudaGetLastError());
  std::vector<float> bo(64);
  CHECK(cudaMemcpy(bo.data(), dBig, 64 * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 64; ++i) {
    float s = 0;
    for (int k = 0; k < big.n; ++k)
      s += big.coeff[(i + k) % 500];
    if (bo[i] != s && bad++ < 10)
      std::printf("bigParam[%d] = %g, want %g\n", i, bo[i], s);
  }
  // wmma
  std::vector<half> ha(256), hb(256);
  for (int i = 0; i < 256; ++i) {
    ha[i] = __float2half(float(i % 5) - 2.0f);
    hb[i] = __float2half(float(i % 3) * 0.5f);
  }
  half *dA, *dB;
  float *dC;
  CHECK(cudaMalloc(&dA, 512));
  CHECK(cudaMalloc(&dB, 512));
  CHECK(cudaMalloc(&dC, 1024));
  CHECK(cudaMemcpy(dA, ha.data(), 512, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, hb.data(), 512, cudaMemcpyHostToDevice));
  wmmaGemm<<<1, 32>>>(dA, dB, dC);
  CHECK(cudaGetLastError());
  std::vector<float> hc(256);
  CHECK(cudaMemcpy(hc.data(), dC, 1024, cudaMemcpyDeviceToHost));
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) {
      float s = 1.0f;
      for (int k = 0; k < 16; ++k)
        s += __half2float(ha[r * 16 + k]) *
             __half2float(hb[c * 16 + k]); // col-major b
      if (hc[r * 16 + c] != s && bad++ < 10)
        std::printf("wmma[%d][%d] = %g, want %g\n", r, c, hc[r * 16 + c], s);
    }
  // texture on linear memory
  const int tn = 300;
  std::vector<float> tin(tn);
  for (int i = 0; i < tn; ++i)
    tin[i] = float(i) * 0.25f;
  float *dT, *dTo;
  CHECK(cudaMalloc(&dT, tn * 4));
  CHECK(cudaMalloc(&dTo, tn * 4));
  CHECK(cudaMemcpy(dT, tin.data(), tn * 4, cudaMemcpyHostToDevice));
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeLinear;
  res.res.linear.devPtr = dT;
  res.res.linear.desc = cudaCreateChannelDesc<float>();
  res.res.linear.sizeInBytes = tn * 4;
  cudaTextureDesc td{};
  td.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex;
  CHECK(cudaCreateTextureObject(&tex, &res, &td, nullptr));
  texFetch<<<(tn + 127) / 128, 128>>>(tex, dTo, tn);
  CHECK(cudaGetLastError());
  std::vector<float> to(tn);
  CHECK(cudaMemcpy(to.data(), dTo, tn * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < tn; ++i)
    if (to[i] != tin[tn - 1 - i] * 2.0f && bad++ < 10)
      std::printf("tex1Dfetch[%d] = %g\n", i, to[i]);
  CHECK(cudaDestroyTextureObject(tex));
  // five kernels of 48 KiB static shared memory each
  float *dS;
  CHECK(cudaMalloc(&dS, 5 * 128 * 4));
  bigShared<1><<<2, 128>>>(dS);
  bigShared<2><<<2, 128>>>(dS + 128);
  bigShared<3><<<2, 128>>>(dS + 256);
  bigShared<4><<<2, 128>>>(dS + 384);
  bigShared<5><<<2, 128>>>(dS + 512);
  CHECK(cudaGetLastError());
  std::vector<float> so(5 * 128);
  CHECK(cudaMemcpy(so.data(), dS, 5 * 128 * 4, cudaMemcpyDeviceToHost));
  for (int k = 1; k <= 5; ++k)
    for (int t = 0; t < 128; ++t)
      if (so[(k - 1) * 128 + t] != float(((t * 97 + k) % 12288) * k) &&
          bad++ < 10)
        std::printf("bigShared<%d>[%d] = %g\n", k, t, so[(k - 1) * 128 + t]);
  // graph with an updated kernel node
  const int gn = 256;
  float *dG;
  CHECK(cudaMalloc(&dG, gn * 4));
  CHECK(cudaMemset(dG, 0, gn * 4));
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  float s1 = 2.0f, a1 = 1.0f;
  int nArg = gn;
  void *args[] = {&dG, &s1, &a1, &nArg};
  cudaKernelNodeParams kp{};
  kp.func = (void *)scaleAdd;
  kp.gridDim = dim3(gn / 64);
  kp.blockDim = dim3(64);
  kp.kernelParams = args;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddKernelNode(&node, graph, nullptr, 0, &kp));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, 0)); // 0*2+1 = 1
  float s2 = 3.0f, a2 = -0.5f;
  void *args2[] = {&dG, &s2, &a2, &nArg};
  kp.kernelParams = args2;
  CHECK(cudaGraphExecKernelNodeSetParams(exec, node, &kp));
  CHECK(cudaGraphLaunch(exec, 0)); // 1*3-0.5 = 2.5
  CHECK(cudaGraphLaunch(exec, 0)); // 2.5*3-0.5 = 7
  std::vector<float> go(gn);
  CHECK(cudaMemcpy(go.data(), dG, gn * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < gn; ++i)
    if (go[i] != 7.0f && bad++ < 10)
      std::printf("graph[%d] = %g\n", i, go[i]);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  std::printf("legacy: %d mismatches\n", bad);
  EXPECT(bad == 0, "%d mismatches", bad);
  app::pass();
  return 0;
}
