// Token + position embedding (GPT-2 encoder) forward and backward, in the style
// of llm.c training kernels. Written for Wooly's compile-time benchmarks.
// Layout: inp[B*T] token ids, wte[V*C], wpe[maxT*C], out[B*T*C] (row-major).
// Element types: float, __half, __nv_bfloat16; arithmetic is done in float.
// Vectorized kernels move 16 bytes per access and require C % (16/sizeof(T)) == 0
// and 16-byte aligned pointers.
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

// 16 bytes of T, moved with one 128-bit load/store.
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
template <typename T> __device__ __forceinline__ void store128cs(T* p, const Packed128<T>& v) {
  __stcs(reinterpret_cast<int4*>(p), *reinterpret_cast<const int4*>(&v));
}

__device__ __forceinline__ void atomic_add_t(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add_t(__half* p, float v) { atomicAdd(p, __float2half_rn(v)); }
__device__ __forceinline__ void atomic_add_t(__nv_bfloat16* p, float v) { atomicAdd(p, __float2bfloat16_rn(v)); }

// out[b,t,c] = wte[inp[b,t],c] + wpe[t,c]; one thread per element (any C).
template <typename T>
__global__ void encoder_forward_scalar(T* out, const int* inp, const T* wte, const T* wpe, int B,
                                       int Tn, int C) {
  int64_t N = (int64_t)B * Tn * C;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < N;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t bt = i / C;
    int c = (int)(i - bt * C);
    int t = (int)(bt % Tn);
    int ix = inp[bt];
    out[i] = from_f<T>(to_f(wte[(int64_t)ix * C + c]) + to_f(wpe[(int64_t)t * C + c]));
  }
}

// Same result, vectorized: each thread handles UNROLL packs of 16 bytes with a grid stride.
// Optional extras: SCALE multiplies the token embedding by `scale` (e.g. sqrt(C));
// SEGMENT adds a token-type embedding wse[seg[b,t],c] (BERT style).
template <typename T, int UNROLL, bool SCALE, bool SEGMENT>
__global__ void encoder_forward_vec(T* out, const int* inp, const int* seg, const T* wte,
                                    const T* wpe, const T* wse, int B, int Tn, int C, float scale) {
  using P = Packed128<T>;
  const int64_t npacks = (int64_t)B * Tn * C / P::size;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t base = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  for (; base < npacks; base += stride * UNROLL) {
    P a[UNROLL], p[UNROLL], s[UNROLL];
    int64_t idx[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      int64_t k = base + u * stride;
      idx[u] = k;
      if (k < npacks) {
        int64_t e = k * P::size;
        int64_t bt = e / C;
        int c = (int)(e - bt * C);
        int t = (int)(bt % Tn);
        a[u] = load128cs(wte + (int64_t)inp[bt] * C + c);
        p[u] = load128(wpe + (int64_t)t * C + c);
        if (SEGMENT) s[u] = load128(wse + (int64_t)seg[bt] * C + c);
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      if (idx[u] < npacks) {
        P o;
#pragma unroll
        for (int i = 0; i < P::size; ++i) {
          float v = to_f(a[u][i]);
          if (SCALE) v *= scale;
          v += to_f(p[u][i]);
          if (SEGMENT) v += to_f(s[u][i]);
          o[i] = from_f<T>(v);
        }
        store128cs(out + idx[u] * P::size, o);
      }
    }
  }
}

// dwte[inp[b,t],c] += dout[b,t,c] (scaled if SCALE) with atomics; one thread per 16-byte pack.
// Non-deterministic order for float; for half/bf16 each pack element is added separately.
template <typename T, bool SCALE>
__global__ void encoder_backward_wte_atomic(T* dwte, const T* dout, const int* inp, int B, int Tn,
                                            int C, float scale) {
  using P = Packed128<T>;
  int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t npacks = (int64_t)B * Tn * C / P::size;
  if (k >= npacks) return;
  int64_t e = k * P::size;
  int64_t bt = e / C;
  int c = (int)(e - bt * C);
  P d = load128cs(dout + e);
  T* dst = dwte + (int64_t)inp[bt] * C + c;
#pragma unroll
  for (int i = 0; i < P::size; ++i) {
    float g = to_f(d[i]);
    if (SCALE) g *= scale;
    atomic_add_t(dst + i, g);
  }
}

// dwpe[t,c] += sum_b dout[b,t,c]; deterministic (fixed b order), one thread per pack of (t,c).
template <typename T, int BUNROLL>
__global__ void encoder_backward_wpe(T* dwpe, const T* dout, int B, int Tn, int C) {
  using P = Packed128<T>;
  int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t npacks = (int64_t)Tn * C / P::size;
  if (k >= npacks) return;
  int64_t e = k * P::size;
  float acc[P::size];
  P cur = load128(dwpe + e);
#pragma unroll
  for (int i = 0; i < P::size; ++i) acc[i] = to_f(cur[i]);
  int b = 0;
  for (; b + BUNROLL <= B; b += BUNROLL) {
    P d[BUNROLL];
#pragma unroll
    for (int u = 0; u < BUNROLL; ++u) d[u] = load128cs(dout + (int64_t)(b + u) * Tn * C + e);
#pragma unroll
    for (int u = 0; u < BUNROLL; ++u)
#pragma unroll
      for (int i = 0; i < P::size; ++i) acc[i] += to_f(d[u][i]);
  }
  for (; b < B; ++b) {
    P d = load128cs(dout + (int64_t)b * Tn * C + e);
#pragma unroll
    for (int i = 0; i < P::size; ++i) acc[i] += to_f(d[i]);
  }
  P o;
#pragma unroll
  for (int i = 0; i < P::size; ++i) o[i] = from_f<T>(acc[i]);
  store128(dwpe + e, o);
}

// Deterministic dwte: block (blockIdx.x = vocab row v, blockIdx.y = channel chunk of
// blockDim.x*PACKS packs) scans all B*T token ids TILE at a time through shared memory
// and sums the dout rows whose token is v, in token order. dwte[v,:] += that sum.
template <typename T, int TILE, int PACKS>
__global__ void encoder_backward_wte_det(T* dwte, const T* dout, const int* inp, int BT, int C) {
  using P = Packed128<T>;
  __shared__ int toks[TILE];
  __shared__ int hits[TILE];
  __shared__ int nhits;
  const int v = blockIdx.x;
  const int c0 = (blockIdx.y * blockDim.x * PACKS + threadIdx.x) * P::size;
  float acc[PACKS][P::size];
#pragma unroll
  for (int q = 0; q < PACKS; ++q)
#pragma unroll
    for (int i = 0; i < P::size; ++i) acc[q][i] = 0.0f;
  bool any = false;
  for (int t0 = 0; t0 < BT; t0 += TILE) {
    for (int i = threadIdx.x; i < TILE; i += blockDim.x) toks[i] = (t0 + i < BT) ? inp[t0 + i] : -1;
    if (threadIdx.x == 0) nhits = 0;
    __syncthreads();
    if (threadIdx.x == 0) {
      int n = 0;
      for (int i = 0; i < TILE; ++i)
        if (toks[i] == v) hits[n++] = t0 + i;
      nhits = n;
    }
    __syncthreads();
    int n = nhits;
    any |= n > 0;
    for (int h = 0; h < n; ++h) {
      const T* row = dout + (int64_t)hits[h] * C;
#pragma unroll
      for (int q = 0; q < PACKS; ++q) {
        int c = c0 + q * blockDim.x * P::size;
        if (c < C) {
          P d = load128(row + c);
#pragma unroll
          for (int i = 0; i < P::size; ++i) acc[q][i] += to_f(d[i]);
        }
      }
    }
    __syncthreads();
  }
  if (!any) return;
#pragma unroll
  for (int q = 0; q < PACKS; ++q) {
    int c = c0 + q * blockDim.x * P::size;
    if (c < C) {
      T* dst = dwte + (int64_t)v * C + c;
      P cur = load128(dst), o;
#pragma unroll
      for (int i = 0; i < P::size; ++i) o[i] = from_f<T>(to_f(cur[i]) + acc[q][i]);
      store128(dst, o);
    }
  }
}

// Weight-tied output: converts float master gradients to T with an optional scale
// (mixed-precision gradient copy), n % pack == 0.
template <typename T>
__global__ void grad_cast_scale(T* dst, const float* src, int64_t n, float scale) {
  using P = Packed128<T>;
  int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (k * P::size >= n) return;
  P o;
#pragma unroll
  for (int i = 0; i < P::size; i += 4) {
    float4 f = *reinterpret_cast<const float4*>(src + k * P::size + i);
    o[i] = from_f<T>(f.x * scale);
    if (i + 1 < P::size) o[i + 1] = from_f<T>(f.y * scale);
    if (i + 2 < P::size) o[i + 2] = from_f<T>(f.z * scale);
    if (i + 3 < P::size) o[i + 3] = from_f<T>(f.w * scale);
  }
  store128(dst + k * P::size, o);
}

#define INST_FWD1(T, U, S, G)                                                                     \
  template __global__ void encoder_forward_vec<T, U, S, G>(T*, const int*, const int*, const T*,  \
                                                           const T*, const T*, int, int, int,     \
                                                           float);
#define INST_COMMON(T)                                                                            \
  template __global__ void encoder_forward_scalar<T>(T*, const int*, const T*, const T*, int, int, \
                                                     int);                                        \
  template __global__ void encoder_backward_wte_atomic<T, false>(T*, const T*, const int*, int,   \
                                                                 int, int, float);                \
  template __global__ void encoder_backward_wte_atomic<T, true>(T*, const T*, const int*, int,    \
                                                                int, int, float);                 \
  template __global__ void grad_cast_scale<T>(T*, const float*, int64_t, float);                  \
  INST_FWD1(T, 1, false, false) INST_FWD1(T, 2, true, true)
#define INST_WPE(T, U) template __global__ void encoder_backward_wpe<T, U>(T*, const T*, int, int, int);
#define INST_DET(T, TILE, P)                                                                      \
  template __global__ void encoder_backward_wte_det<T, TILE, P>(T*, const T*, const int*, int, int);

INST_COMMON(float)
INST_COMMON(__half)
INST_COMMON(__nv_bfloat16)
INST_FWD1(float, 2, false, false)
INST_FWD1(__nv_bfloat16, 2, false, false)
INST_FWD1(__nv_bfloat16, 1, true, false)
INST_WPE(float, 4)
INST_WPE(__nv_bfloat16, 4)
INST_WPE(__nv_bfloat16, 1)
INST_DET(float, 256, 1)
INST_DET(__nv_bfloat16, 256, 2)
