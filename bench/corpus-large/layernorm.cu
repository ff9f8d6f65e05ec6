// LayerNorm / RMSNorm forward and backward, in the style of llm.c training kernels.
// Written for Wooly's compile-time benchmarks. Rows of length C, N = B*T rows.
// Element types float, __half, __nv_bfloat16; statistics and accumulation in float.
// Per-row mean and rstd are saved (float) for the backward pass.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
namespace cg = cooperative_groups;

template <typename T> __device__ __forceinline__ float to_f(T x);
template <> __device__ __forceinline__ float to_f<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_f<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

template <typename T> struct alignas(16) Packed128 {
  static constexpr int size = 16 / sizeof(T);
  T v[size];
  __device__ __forceinline__ T& operator[](int i) { return v[i]; }
  __device__ __forceinline__ const T& operator[](int i) const { return v[i]; }
};
template <typename T> __device__ __forceinline__ Packed128<T> load128(const T* p) {
  Packed128<T> r;
  *reinterpret_cast<int4*>(&r) = *reinterpret_cast<const int4*>(p);
  return r;
}
template <typename T> __device__ __forceinline__ Packed128<T> load128cs(const T* p) {
  Packed128<T> r;
  *reinterpret_cast<int4*>(&r) = __ldcs(reinterpret_cast<const int4*>(p));
  return r;
}
template <typename T> __device__ __forceinline__ void store128(T* p, const Packed128<T>& v) {
  *reinterpret_cast<int4*>(p) = *reinterpret_cast<const int4*>(&v);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
// Block-wide sum of one float per thread; BLOCK is a multiple of 32 and <= 1024.
// Every thread gets the result. Uses `buf` (>= 32 floats of shared memory).
template <int BLOCK> __device__ __forceinline__ float block_sum(float v, float* buf) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // buf may still be read by a previous call
  if (lane == 0) buf[warp] = v;
  __syncthreads();
  v = lane < BLOCK / 32 ? buf[lane] : 0.0f;
  return warp_sum(v);
}

// Warp per row, vectorized (C % (32 * pack) == 0 not required; C % pack == 0 required).
// out = (x - mean) * rstd * w + b. blockDim.x == 32 * WARPS.
template <typename T, int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
    layernorm_forward_warp(T* out, float* mean, float* rstd, const T* inp, const T* weight,
                           const T* bias, int N, int C, float eps) {
  using P = Packed128<T>;
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  int row = blockIdx.x * WARPS + warp.meta_group_rank();
  if (row >= N) return;
  const T* x = inp + (int64_t)row * C;
  float s = 0.0f;
  for (int c = warp.thread_rank() * P::size; c < C; c += 32 * P::size) {
    P v = load128(x + c);
#pragma unroll
    for (int i = 0; i < P::size; ++i) s += to_f(v[i]);
  }
  float m = cg::reduce(warp, s, cg::plus<float>()) / C;
  float q = 0.0f;
  for (int c = warp.thread_rank() * P::size; c < C; c += 32 * P::size) {
    P v = load128(x + c);
#pragma unroll
    for (int i = 0; i < P::size; ++i) {
      float d = to_f(v[i]) - m;
      q += d * d;
    }
  }
  float r = rsqrtf(cg::reduce(warp, q, cg::plus<float>()) / C + eps);
  if (warp.thread_rank() == 0) {
    if (mean) __stcs(mean + row, m);
    if (rstd) __stcs(rstd + row, r);
  }
  T* o = out + (int64_t)row * C;
  for (int c = warp.thread_rank() * P::size; c < C; c += 32 * P::size) {
    P v = load128cs(x + c), w = load128(weight + c), b = load128(bias + c), y;
#pragma unroll
    for (int i = 0; i < P::size; ++i) y[i] = from_f<T>((to_f(v[i]) - m) * r * to_f(w[i]) + to_f(b[i]));
    store128(o + c, y);
  }
}

// Block per row with the row cached in dynamic shared memory (C * sizeof(float) bytes).
// Optionally fused with a residual add: res_out = inp + residual, then normalized.
template <typename T, int BLOCK, bool RESIDUAL>
__global__ void __launch_bounds__(BLOCK)
    layernorm_forward_block(T* out, T* res_out, float* mean, float* rstd, const T* inp,
                            const T* residual, const T* weight, const T* bias, int N, int C,
                            float eps) {
  extern __shared__ float row_buf[];
  __shared__ float red[32];
  int row = blockIdx.x;
  if (row >= N) return;
  const T* x = inp + (int64_t)row * C;
  const T* rsd = RESIDUAL ? residual + (int64_t)row * C : nullptr;
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += BLOCK) {
    float v = to_f(x[c]);
    if (RESIDUAL) {
      v += to_f(rsd[c]);
      res_out[(int64_t)row * C + c] = from_f<T>(v);
    }
    row_buf[c] = v;
    s += v;
  }
  float m = block_sum<BLOCK>(s, red) / C;
  float q = 0.0f;
  for (int c = threadIdx.x; c < C; c += BLOCK) {
    float d = row_buf[c] - m;
    q += d * d;
  }
  float r = rsqrtf(block_sum<BLOCK>(q, red) / C + eps);
  if (threadIdx.x == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
  for (int c = threadIdx.x; c < C; c += BLOCK)
    out[(int64_t)row * C + c] = from_f<T>((row_buf[c] - m) * r * to_f(weight[c]) + to_f(bias[c]));
}

// Backward, block per row (grid-strided over rows). dinp += ...; dweight/dbias partial sums
// are accumulated per block in shared memory (C floats each, dynamic: 2*C*4 bytes) and then
// added to float scratch dweight_f/dbias_f with atomicAdd.
//   dnorm = dout * w; dinp += rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm))
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    layernorm_backward(T* dinp, float* dweight_f, float* dbias_f, const T* dout, const T* inp,
                       const T* weight, const float* mean, const float* rstd, int N, int C) {
  extern __shared__ float sh[];
  __shared__ float red[32];
  float* dw = sh;
  float* db = sh + C;
  for (int c = threadIdx.x; c < C; c += BLOCK) {
    dw[c] = 0.0f;
    db[c] = 0.0f;
  }
  __syncthreads();
  for (int row = blockIdx.x; row < N; row += gridDim.x) {
    const T* g = dout + (int64_t)row * C;
    const T* x = inp + (int64_t)row * C;
    float m = mean[row], r = rstd[row];
    float a = 0.0f, b = 0.0f;
    for (int c = threadIdx.x; c < C; c += BLOCK) {
      float n = (to_f(x[c]) - m) * r;
      float dn = to_f(weight[c]) * to_f(g[c]);
      a += dn;
      b += dn * n;
    }
    a = block_sum<BLOCK>(a, red) / C;
    b = block_sum<BLOCK>(b, red) / C;
    T* di = dinp + (int64_t)row * C;
    for (int c = threadIdx.x; c < C; c += BLOCK) {
      float go = to_f(g[c]);
      float n = (to_f(x[c]) - m) * r;
      float dn = to_f(weight[c]) * go;
      db[c] += go;  // each c owned by one thread: no race
      dw[c] += n * go;
      di[c] = from_f<T>(to_f(di[c]) + (dn - a - n * b) * r);
    }
  }
  __syncthreads();
  for (int c = threadIdx.x; c < C; c += BLOCK) {
    atomicAdd(dweight_f + c, dw[c]);
    atomicAdd(dbias_f + c, db[c]);
  }
}

// Warp per row backward without weight gradients, vectorized (C % pack == 0).
template <typename T, int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
    layernorm_backward_dinp_warp(T* dinp, const T* dout, const T* inp, const T* weight,
                                 const float* mean, const float* rstd, int N, int C) {
  using P = Packed128<T>;
  int lane = threadIdx.x & 31;
  int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
  if (row >= N) return;
  const T* g = dout + (int64_t)row * C;
  const T* x = inp + (int64_t)row * C;
  float m = mean[row], r = rstd[row];
  float a = 0.0f, b = 0.0f;
  for (int c = lane * P::size; c < C; c += 32 * P::size) {
    P gv = load128(g + c), xv = load128(x + c), wv = load128(weight + c);
#pragma unroll
    for (int i = 0; i < P::size; ++i) {
      float dn = to_f(wv[i]) * to_f(gv[i]);
      a += dn;
      b += dn * (to_f(xv[i]) - m) * r;
    }
  }
  a = warp_sum(a) / C;
  b = warp_sum(b) / C;
  T* di = dinp + (int64_t)row * C;
  for (int c = lane * P::size; c < C; c += 32 * P::size) {
    P gv = load128cs(g + c), xv = load128cs(x + c), wv = load128(weight + c), dv = load128(di + c);
#pragma unroll
    for (int i = 0; i < P::size; ++i) {
      float n = (to_f(xv[i]) - m) * r;
      float dn = to_f(wv[i]) * to_f(gv[i]);
      dv[i] = from_f<T>(to_f(dv[i]) + (dn - a - n * b) * r);
    }
    store128(di + c, dv);
  }
}

// RMSNorm forward, warp per row: out = x * rsqrt(mean(x^2) + eps) * w; saves rstd.
template <typename T, int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
    rmsnorm_forward(T* out, float* rstd, const T* inp, const T* weight, int N, int C, float eps) {
  using P = Packed128<T>;
  int lane = threadIdx.x & 31;
  int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
  if (row >= N) return;
  const T* x = inp + (int64_t)row * C;
  float q = 0.0f;
  for (int c = lane * P::size; c < C; c += 32 * P::size) {
    P v = load128(x + c);
#pragma unroll
    for (int i = 0; i < P::size; ++i) q += to_f(v[i]) * to_f(v[i]);
  }
  float r = rsqrtf(warp_sum(q) / C + eps);
  if (lane == 0) rstd[row] = r;
  for (int c = lane * P::size; c < C; c += 32 * P::size) {
    P v = load128(x + c), w = load128(weight + c), y;
#pragma unroll
    for (int i = 0; i < P::size; ++i) y[i] = from_f<T>(to_f(v[i]) * r * to_f(w[i]));
    store128(out + (int64_t)row * C + c, y);
  }
}

// RMSNorm backward, block per row: dinp += r*(dn - n*mean(dn*n)); dweight_f += sum dout*n (atomic).
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    rmsnorm_backward(T* dinp, float* dweight_f, const T* dout, const T* inp, const T* weight,
                     const float* rstd, int N, int C) {
  __shared__ float red[32];
  int row = blockIdx.x;
  if (row >= N) return;
  const T* g = dout + (int64_t)row * C;
  const T* x = inp + (int64_t)row * C;
  float r = rstd[row];
  float b = 0.0f;
  for (int c = threadIdx.x; c < C; c += BLOCK) b += to_f(weight[c]) * to_f(g[c]) * to_f(x[c]) * r;
  b = block_sum<BLOCK>(b, red) / C;
  T* di = dinp + (int64_t)row * C;
  for (int c = threadIdx.x; c < C; c += BLOCK) {
    float n = to_f(x[c]) * r;
    float go = to_f(g[c]);
    atomicAdd(dweight_f + c, go * n);
    di[c] = from_f<T>(to_f(di[c]) + (to_f(weight[c]) * go - n * b) * r);
  }
}

// Reduces dweight/dbias float scratch into the T parameter gradients: dparam += scratch.
template <typename T>
__global__ void accumulate_param_grad(T* dparam, const float* scratch, int C) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < C) dparam[c] = from_f<T>(to_f(dparam[c]) + scratch[c]);
}

#define FWDW(T, W)                                                                                \
  template __global__ void layernorm_forward_warp<T, W>(T*, float*, float*, const T*, const T*,   \
                                                        const T*, int, int, float);
#define FWDB(T, B, R)                                                                             \
  template __global__ void layernorm_forward_block<T, B, R>(T*, T*, float*, float*, const T*,     \
                                                            const T*, const T*, const T*, int,    \
                                                            int, float);
#define BWD(T, B)                                                                                 \
  template __global__ void layernorm_backward<T, B>(T*, float*, float*, const T*, const T*,       \
                                                    const T*, const float*, const float*, int,    \
                                                    int);
#define BWDW(T, W)                                                                                \
  template __global__ void layernorm_backward_dinp_warp<T, W>(T*, const T*, const T*, const T*,   \
                                                              const float*, const float*, int,    \
                                                              int);
#define RMSF(T, W)                                                                                \
  template __global__ void rmsnorm_forward<T, W>(T*, float*, const T*, const T*, int, int, float);
#define RMSB(T, B)                                                                                \
  template __global__ void rmsnorm_backward<T, B>(T*, float*, const T*, const T*, const T*,       \
                                                  const float*, int, int);
#define ACC(T) template __global__ void accumulate_param_grad<T>(T*, const float*, int);

FWDW(float, 4) FWDW(__nv_bfloat16, 4)
FWDB(float, 256, false) FWDB(float, 512, true) FWDB(__nv_bfloat16, 256, true)
BWD(float, 256) BWD(__nv_bfloat16, 512) BWD(__half, 1024)
BWDW(float, 8) BWDW(__nv_bfloat16, 8)
RMSF(float, 4) RMSF(float, 8)
RMSB(float, 256) RMSB(__nv_bfloat16, 512)
ACC(float) ACC(__half) ACC(__nv_bfloat16)
