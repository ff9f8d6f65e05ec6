// Fused transformer MLP block pieces (llm.c / nanoGPT style), written for Wooly's
// compile-time benchmarks:
//   h = gelu(x @ W1^T + b1);  y = residual + dropout(h @ W2^T + b2)
// as tiled GEMMs with fused epilogues (bias + GELU, bias + dropout + residual), a fully
// fused small-width MLP (one block per row tile, hidden layer kept in shared memory),
// and dropout forward/backward driven by a counter-based RNG (Philox-style rounds, written
// here). Dropout keeps an element with probability 1-p and scales it by 1/(1-p); the mask
// is regenerated from (seed, element index) in the backward pass, never stored.
// Layouts: x (M, K) row-major, W (N, K) row-major (PyTorch Linear), out (M, N).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

template <typename T> __device__ __forceinline__ float to_f(T x);
template <> __device__ __forceinline__ float to_f<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_f<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Counter-based RNG: ROUNDS Philox-style rounds on a 4x32-bit counter with a 2x32-bit key.
struct U4 {
  uint32_t x, y, z, w;
};
template <int ROUNDS> __device__ __forceinline__ U4 ctr_rng(uint64_t seed, uint64_t counter) {
  U4 c = {(uint32_t)counter, (uint32_t)(counter >> 32), 0x243F6A88u, 0x85A308D3u};
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
#pragma unroll
  for (int r = 0; r < ROUNDS; ++r) {
    uint32_t hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
    uint32_t hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
    c = {hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}
__device__ __forceinline__ float u01(uint32_t r) { return (r >> 8) * (1.0f / 16777216.0f); }

// Keep-flag for element `idx` (4 consecutive indices share one RNG call).
template <int ROUNDS> __device__ __forceinline__ bool dropout_keep(uint64_t seed, uint64_t idx, float p) {
  U4 r = ctr_rng<ROUNDS>(seed, idx >> 2);
  uint32_t v;
  switch (idx & 3) {
    case 0: v = r.x; break;
    case 1: v = r.y; break;
    case 2: v = r.z; break;
    default: v = r.w; break;
  }
  return u01(v) >= p;
}

__device__ __forceinline__ float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float gelu_tanh_grad(float x) {
  float a = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  float th = tanhf(a);
  return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * 0.7978845608028654f * (1.0f + 0.134145f * x * x);
}

enum Epilogue { EPI_BIAS_GELU = 0, EPI_BIAS_DROPOUT_RESIDUAL = 1, EPI_BIAS = 2 };

// Tiled GEMM out = x @ W^T (+ epilogue). BM x BN block tile, TM x TN per thread, BK k-step.
// EPI_BIAS_GELU: pre = acc + b (stored if pre != nullptr), out = gelu(pre).
// EPI_BIAS_DROPOUT_RESIDUAL: out = residual + dropout(acc + b) with (seed, m*N+n).
template <typename T, int BM, int BN, int BK, int TM, int TN, int EPI, int ROUNDS>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    linear_fused(T* out, T* pre, const T* x, const T* W, const T* b, const T* residual, int M,
                 int N, int K, float p, uint64_t seed) {
  constexpr int NT = (BM / TM) * (BN / TN);
  __shared__ float xs[BK][BM + 1];
  __shared__ float ws[BK][BN + 1];
  const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = threadIdx.x; e < BM * BK; e += NT) {
      int kk = e % BK, mm = e / BK;
      xs[kk][mm] = (m0 + mm < M && k0 + kk < K) ? to_f(x[(int64_t)(m0 + mm) * K + k0 + kk]) : 0.0f;
    }
    for (int e = threadIdx.x; e < BN * BK; e += NT) {
      int kk = e % BK, nn = e / BK;
      ws[kk][nn] = (n0 + nn < N && k0 + kk < K) ? to_f(W[(int64_t)(n0 + nn) * K + k0 + kk]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], bb[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = xs[kk][ty * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j) bb[j] = ws[kk][tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], bb[j], acc[i][j]);
    }
    __syncthreads();
  }
  const float scale = 1.0f / (1.0f - p);
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    int m = m0 + ty * TM + i;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      int n = n0 + tx * TN + j;
      if (n >= N) continue;
      int64_t o = (int64_t)m * N + n;
      float v = acc[i][j] + to_f(b[n]);
      if (EPI == EPI_BIAS_GELU) {
        if (pre) pre[o] = from_f<T>(v);
        v = gelu_tanh(v);
      } else if (EPI == EPI_BIAS_DROPOUT_RESIDUAL) {
        v = dropout_keep<ROUNDS>(seed, (uint64_t)o, p) ? v * scale : 0.0f;
        v += to_f(residual[o]);
      }
      out[o] = from_f<T>(v);
    }
  }
}

// Fully fused MLP for small widths C (model) and H (hidden): block handles ROWS rows.
// x rows and the hidden activations stay in shared memory (ROWS*(C+H) floats).
// y = x + dropout(W2 @ gelu(W1 @ x + b1) + b2). W1: (H, C), W2: (C, H).
template <typename T, int C, int H, int ROWS, int THREADS, int ROUNDS>
__global__ void __launch_bounds__(THREADS)
    mlp_fused_small(T* y, const T* x, const T* W1, const T* b1, const T* W2, const T* b2, int M,
                    float p, uint64_t seed) {
  __shared__ float xs[ROWS][C];
  __shared__ float hs[ROWS][H];
  const int r0 = blockIdx.x * ROWS;
  for (int e = threadIdx.x; e < ROWS * C; e += THREADS) {
    int r = e / C, c = e % C;
    xs[r][c] = r0 + r < M ? to_f(x[(int64_t)(r0 + r) * C + c]) : 0.0f;
  }
  __syncthreads();
  // hidden: each thread owns hidden units h = threadIdx.x + k*THREADS for all ROWS rows
  for (int h = threadIdx.x; h < H; h += THREADS) {
    float acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) acc[r] = to_f(b1[h]);
    const T* wr = W1 + (int64_t)h * C;
#pragma unroll 8
    for (int c = 0; c < C; ++c) {
      float wv = to_f(wr[c]);
#pragma unroll
      for (int r = 0; r < ROWS; ++r) acc[r] = fmaf(wv, xs[r][c], acc[r]);
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) hs[r][h] = gelu_tanh(acc[r]);
  }
  __syncthreads();
  const float scale = 1.0f / (1.0f - p);
  for (int c = threadIdx.x; c < C; c += THREADS) {
    float acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) acc[r] = to_f(b2[c]);
    const T* wr = W2 + (int64_t)c * H;
#pragma unroll 8
    for (int h = 0; h < H; ++h) {
      float wv = to_f(wr[h]);
#pragma unroll
      for (int r = 0; r < ROWS; ++r) acc[r] = fmaf(wv, hs[r][h], acc[r]);
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      if (r0 + r >= M) break;
      int64_t o = (int64_t)(r0 + r) * C + c;
      float v = dropout_keep<ROUNDS>(seed, (uint64_t)o, p) ? acc[r] * scale : 0.0f;
      y[o] = from_f<T>(xs[r][c] + v);
    }
  }
}

// Standalone dropout forward (in != out allowed to alias): out = keep ? in/(1-p) : 0.
// 4 elements per thread share one RNG call.
template <typename T, int ROUNDS>
__global__ void dropout_forward(T* out, const T* in, int64_t n, float p, uint64_t seed) {
  int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t i0 = q * 4;
  if (i0 >= n) return;
  U4 r = ctr_rng<ROUNDS>(seed, (uint64_t)q);
  uint32_t rv[4] = {r.x, r.y, r.z, r.w};
  const float scale = 1.0f / (1.0f - p);
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (i0 + j < n) out[i0 + j] = from_f<T>(u01(rv[j]) >= p ? to_f(in[i0 + j]) * scale : 0.0f);
}

// Dropout backward: din = keep ? dout/(1-p) : 0, mask regenerated (same indexing as forward).
template <typename T, int ROUNDS>
__global__ void dropout_backward(T* din, const T* dout, int64_t n, float p, uint64_t seed) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  din[i] = from_f<T>(dropout_keep<ROUNDS>(seed, (uint64_t)i, p) ? to_f(dout[i]) / (1.0f - p) : 0.0f);
}

// Backward through GELU with the saved pre-activation and the dropout mask of the
// second linear layer's output: dh = gelu'(pre) * dh_in.
template <typename T>
__global__ void gelu_backward_inplace(T* dh, const T* pre, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) dh[i] = from_f<T>(gelu_tanh_grad(to_f(pre[i])) * to_f(dh[i]));
}

#define LF(T, BM, BN, BK, TM, TN, E, R)                                                           \
  template __global__ void linear_fused<T, BM, BN, BK, TM, TN, E, R>(                             \
      T*, T*, const T*, const T*, const T*, const T*, int, int, int, float, uint64_t);
#define MS(T, C, H, R, TH, RO)                                                                    \
  template __global__ void mlp_fused_small<T, C, H, R, TH, RO>(T*, const T*, const T*, const T*,  \
                                                               const T*, const T*, int, float,    \
                                                               uint64_t);
#define DR(T, R)                                                                                  \
  template __global__ void dropout_forward<T, R>(T*, const T*, int64_t, float, uint64_t);         \
  template __global__ void dropout_backward<T, R>(T*, const T*, int64_t, float, uint64_t);

LF(float, 32, 32, 16, 2, 2, EPI_BIAS_GELU, 7)
LF(float, 32, 32, 16, 2, 2, EPI_BIAS_DROPOUT_RESIDUAL, 7)
LF(__nv_bfloat16, 32, 32, 16, 2, 2, EPI_BIAS_GELU, 7)
LF(__nv_bfloat16, 32, 32, 16, 2, 2, EPI_BIAS_DROPOUT_RESIDUAL, 10)
LF(__half, 32, 32, 16, 2, 2, EPI_BIAS, 7)
MS(float, 64, 256, 4, 128, 7)
MS(__nv_bfloat16, 128, 512, 2, 256, 7)
DR(float, 7) DR(__nv_bfloat16, 7)
template __global__ void gelu_backward_inplace<float>(float*, const float*, int64_t);
template __global__ void gelu_backward_inplace<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, int64_t);
