// Causal multi-head attention pieces in the style of llm.c training kernels:
// QKV permute/unpermute, causal softmax forward/backward (online softmax), and a
// warp-per-query fused attention forward/backward with online softmax.
// Written for Wooly's compile-time benchmarks.
// Shapes: B batch, T sequence, NH heads, HS head size, C = NH*HS.
// qkv: (B, T, 3, NH, HS); q/k/v: (B, NH, T, HS); att: (B, NH, T, T); out: (B, T, NH, HS).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <float.h>
#include <stdint.h>

template <typename T> __device__ __forceinline__ float to_f(T x);
template <> __device__ __forceinline__ float to_f<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_f<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// qkv (B,T,3,NH,HS) -> q,k,v (B,NH,T,HS); one thread per element of q.
template <typename T>
__global__ void permute_qkv(T* q, T* k, T* v, const T* qkv, int B, int Tn, int NH, int HS) {
  int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t N = (int64_t)B * NH * Tn * HS;
  if (idx >= N) return;
  int d = idx % HS;
  int t = (idx / HS) % Tn;
  int h = (idx / ((int64_t)HS * Tn)) % NH;
  int b = (int)(idx / ((int64_t)HS * Tn * NH));
  int64_t src = (((int64_t)b * Tn + t) * 3 * NH + h) * HS + d;
  int64_t step = (int64_t)NH * HS;
  q[idx] = __ldcs(qkv + src);
  k[idx] = __ldcs(qkv + src + step);
  v[idx] = __ldcs(qkv + src + 2 * step);
}

// Backward of permute_qkv: dqkv (B,T,3,NH,HS) = scatter of dq,dk,dv.
template <typename T>
__global__ void permute_qkv_backward(T* dqkv, const T* dq, const T* dk, const T* dv, int B, int Tn,
                                     int NH, int HS) {
  int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t N = (int64_t)B * NH * Tn * HS;
  if (idx >= N) return;
  int d = idx % HS;
  int t = (idx / HS) % Tn;
  int h = (idx / ((int64_t)HS * Tn)) % NH;
  int b = (int)(idx / ((int64_t)HS * Tn * NH));
  int64_t dst = (((int64_t)b * Tn + t) * 3 * NH + h) * HS + d;
  int64_t step = (int64_t)NH * HS;
  dqkv[dst] = dq[idx];
  dqkv[dst + step] = dk[idx];
  dqkv[dst + 2 * step] = dv[idx];
}

// (B,NH,T,HS) -> (B,T,NH,HS). BACKWARD swaps direction (gradient of unpermute).
template <typename T, bool BACKWARD>
__global__ void unpermute(T* dst, const T* src, int B, int Tn, int NH, int HS) {
  int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t N = (int64_t)B * NH * Tn * HS;
  if (idx >= N) return;
  int d = idx % HS;
  int t = (idx / HS) % Tn;
  int h = (idx / ((int64_t)HS * Tn)) % NH;
  int b = (int)(idx / ((int64_t)HS * Tn * NH));
  int64_t o = (((int64_t)b * Tn + t) * NH + h) * HS + d;
  if (BACKWARD)
    dst[idx] = src[o];
  else
    dst[o] = __ldcs(src + idx);
}

// Causal softmax over rows of preatt (B*NH*T rows of length T), scaled by inv_temp.
// Row r has query t = r % T; only keys 0..t are used, the rest of the row is set to 0.
// One warp per row, online (single pass) max/sum, then a normalize pass. blockDim = 32*WARPS.
template <typename T, int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
    softmax_forward_causal(T* att, const T* preatt, float inv_temp, int rows, int Tn) {
  int lane = threadIdx.x & 31;
  int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
  if (row >= rows) return;
  int t = row % Tn;
  const T* x = preatt + (int64_t)row * Tn;
  float m = -FLT_MAX, s = 0.0f;
  for (int j = lane; j <= t; j += 32) {
    float v = to_f(x[j]) * inv_temp;
    float nm = fmaxf(m, v);
    s = s * __expf(m - nm) + __expf(v - nm);
    m = nm;
  }
  float gm = warp_max(m);
  s *= __expf(m - gm);
  float inv = 1.0f / warp_sum(s);
  T* y = att + (int64_t)row * Tn;
  for (int j = lane; j < Tn; j += 32)
    y[j] = from_f<T>(j <= t ? __expf(to_f(x[j]) * inv_temp - gm) * inv : 0.0f);
}

// Block-per-row variant with shared-memory max/sum reduction.
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    softmax_forward_causal_block(T* att, const T* preatt, float inv_temp, int rows, int Tn) {
  __shared__ float sm[32], ss[32];
  int row = blockIdx.x;
  if (row >= rows) return;
  int t = row % Tn, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const T* x = preatt + (int64_t)row * Tn;
  float m = -FLT_MAX, s = 0.0f;
  for (int j = threadIdx.x; j <= t; j += BLOCK) {
    float v = to_f(x[j]) * inv_temp;
    float nm = fmaxf(m, v);
    s = s * __expf(m - nm) + __expf(v - nm);
    m = nm;
  }
  float wm = warp_max(m);
  s = warp_sum(s * __expf(m - wm));
  if (lane == 0) {
    sm[w] = wm;
    ss[w] = s;
  }
  __syncthreads();
  float bm = -FLT_MAX;
  for (int i = 0; i < BLOCK / 32; ++i) bm = fmaxf(bm, sm[i]);
  float bs = 0.0f;
  for (int i = 0; i < BLOCK / 32; ++i) bs += ss[i] * __expf(sm[i] - bm);
  float inv = 1.0f / bs;
  T* y = att + (int64_t)row * Tn;
  for (int j = threadIdx.x; j < Tn; j += BLOCK)
    y[j] = from_f<T>(j <= t ? __expf(to_f(x[j]) * inv_temp - bm) * inv : 0.0f);
}

// dpreatt[j] = inv_temp * att[j] * (datt[j] - sum_k att[k]*datt[k]) for j <= t, else 0.
template <typename T, int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
    softmax_backward_causal(T* dpreatt, const T* datt, const T* att, float inv_temp, int rows,
                            int Tn) {
  int lane = threadIdx.x & 31;
  int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
  if (row >= rows) return;
  int t = row % Tn;
  const T* a = att + (int64_t)row * Tn;
  const T* g = datt + (int64_t)row * Tn;
  float dot = 0.0f;
  for (int j = lane; j <= t; j += 32) dot += to_f(a[j]) * to_f(g[j]);
  dot = warp_sum(dot);
  T* d = dpreatt + (int64_t)row * Tn;
  for (int j = lane; j < Tn; j += 32)
    d[j] = from_f<T>(j <= t ? inv_temp * to_f(a[j]) * (to_f(g[j]) - dot) : 0.0f);
}

// Fused causal attention forward. One warp per (b, h, t) query; each lane owns HS/32
// dimensions of q and of the output accumulator. Online softmax over keys 0..t.
// q,k,v: (B,NH,T,HS); out: (B,NH,T,HS); lse: (B,NH,T) log-sum-exp of scaled scores.
template <typename T, int HS, int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
    attention_forward_fused(T* out, float* lse, const T* q, const T* k, const T* v, int BNH,
                            int Tn, float scale) {
  constexpr int D = HS / 32;
  int lane = threadIdx.x & 31;
  int64_t qi = blockIdx.x * (int64_t)WARPS + (threadIdx.x >> 5);
  if (qi >= (int64_t)BNH * Tn) return;
  int t = (int)(qi % Tn);
  int64_t head = qi / Tn;
  const T* kh = k + head * Tn * HS;
  const T* vh = v + head * Tn * HS;
  float qr[D], acc[D];
#pragma unroll
  for (int i = 0; i < D; ++i) {
    qr[i] = to_f(q[qi * HS + lane + 32 * i]) * scale;
    acc[i] = 0.0f;
  }
  float m = -FLT_MAX, l = 0.0f;
  for (int j = 0; j <= t; ++j) {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < D; ++i) s += qr[i] * to_f(kh[(int64_t)j * HS + lane + 32 * i]);
    s = warp_sum(s);
    float nm = fmaxf(m, s);
    float corr = __expf(m - nm), p = __expf(s - nm);
    l = l * corr + p;
#pragma unroll
    for (int i = 0; i < D; ++i) acc[i] = acc[i] * corr + p * to_f(vh[(int64_t)j * HS + lane + 32 * i]);
    m = nm;
  }
  float inv = 1.0f / l;
#pragma unroll
  for (int i = 0; i < D; ++i) out[qi * HS + lane + 32 * i] = from_f<T>(acc[i] * inv);
  if (lane == 0) lse[qi] = m + __logf(l);
}

// Fused causal attention backward, one warp per query (same layout as forward).
// dq is written; dk and dv (float, zero-initialized by the caller) are accumulated with atomics.
template <typename T, int HS, int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
    attention_backward_fused(T* dq, float* dk, float* dv, const T* dout, const T* out,
                             const float* lse, const T* q, const T* k, const T* v, int BNH, int Tn,
                             float scale) {
  constexpr int D = HS / 32;
  int lane = threadIdx.x & 31;
  int64_t qi = blockIdx.x * (int64_t)WARPS + (threadIdx.x >> 5);
  if (qi >= (int64_t)BNH * Tn) return;
  int t = (int)(qi % Tn);
  int64_t head = qi / Tn;
  const T* kh = k + head * Tn * HS;
  const T* vh = v + head * Tn * HS;
  float* dkh = dk + head * Tn * HS;
  float* dvh = dv + head * Tn * HS;
  float qr[D], go[D], dqa[D];
  float Dd = 0.0f;
#pragma unroll
  for (int i = 0; i < D; ++i) {
    int c = lane + 32 * i;
    qr[i] = to_f(q[qi * HS + c]);
    go[i] = to_f(dout[qi * HS + c]);
    Dd += go[i] * to_f(out[qi * HS + c]);
    dqa[i] = 0.0f;
  }
  Dd = warp_sum(Dd);
  float L = lse[qi];
  for (int j = 0; j <= t; ++j) {
    float s = 0.0f, dp = 0.0f;
#pragma unroll
    for (int i = 0; i < D; ++i) {
      int64_t o = (int64_t)j * HS + lane + 32 * i;
      s += qr[i] * to_f(kh[o]);
      dp += go[i] * to_f(vh[o]);
    }
    s = warp_sum(s) * scale;
    dp = warp_sum(dp);
    float p = __expf(s - L);
    float ds = p * (dp - Dd) * scale;
#pragma unroll
    for (int i = 0; i < D; ++i) {
      int64_t o = (int64_t)j * HS + lane + 32 * i;
      dqa[i] += ds * to_f(kh[o]);
      atomicAdd(dkh + o, ds * qr[i]);
      atomicAdd(dvh + o, p * go[i]);
    }
  }
#pragma unroll
  for (int i = 0; i < D; ++i) dq[qi * HS + lane + 32 * i] = from_f<T>(dqa[i]);
}

#define PERM(T)                                                                                   \
  template __global__ void permute_qkv<T>(T*, T*, T*, const T*, int, int, int, int);              \
  template __global__ void permute_qkv_backward<T>(T*, const T*, const T*, const T*, int, int,    \
                                                   int, int);                                     \
  template __global__ void unpermute<T, false>(T*, const T*, int, int, int, int);                 \
  template __global__ void unpermute<T, true>(T*, const T*, int, int, int, int);
#define SMF(T, W) template __global__ void softmax_forward_causal<T, W>(T*, const T*, float, int, int);
#define SMFB(T, B)                                                                                \
  template __global__ void softmax_forward_causal_block<T, B>(T*, const T*, float, int, int);
#define SMB(T, W)                                                                                 \
  template __global__ void softmax_backward_causal<T, W>(T*, const T*, const T*, float, int, int);
#define AF(T, HS, W)                                                                              \
  template __global__ void attention_forward_fused<T, HS, W>(T*, float*, const T*, const T*,      \
                                                             const T*, int, int, float);
#define AB(T, HS, W)                                                                              \
  template __global__ void attention_backward_fused<T, HS, W>(T*, float*, float*, const T*,       \
                                                              const T*, const float*, const T*,   \
                                                              const T*, const T*, int, int,       \
                                                              float);

PERM(float) PERM(__half) PERM(__nv_bfloat16)
SMF(float, 4) SMF(__nv_bfloat16, 4) SMF(__half, 8)
SMFB(float, 256) SMFB(__nv_bfloat16, 512)
SMB(float, 4) SMB(__nv_bfloat16, 4)
AF(float, 64, 4) AF(float, 128, 4) AF(__nv_bfloat16, 64, 4) AF(__nv_bfloat16, 128, 8) AF(__half, 32, 4)
AB(float, 64, 4) AB(__nv_bfloat16, 64, 4) AB(__nv_bfloat16, 128, 4)
