// Optimizer kernels for mixed-precision training (llm.c style), written for Wooly's
// compile-time benchmarks: global gradient norm (two-pass block reduction, or atomics
// on float/double), gradient clipping, AdamW with optional float master weights and
// stochastic rounding to bf16/half, and master-weight copies.
// Params/grads of type T (float, __half, __nv_bfloat16); optimizer state m, v in float.
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

// Counter-based 32-bit hash (squares-style mixing): uniform bits from (seed, index).
__device__ __forceinline__ uint32_t hash_u32(uint64_t seed, uint64_t idx) {
  uint64_t x = idx * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return (uint32_t)(x >> 32);
}

// Stochastic rounding of float to T: add random bits below T's mantissa before truncation.
template <typename T> __device__ __forceinline__ T round_sr(float x, uint32_t rnd);
template <> __device__ __forceinline__ float round_sr<float>(float x, uint32_t) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 round_sr<__nv_bfloat16>(float x, uint32_t rnd) {
  uint32_t bits = __float_as_uint(x);
  if ((bits & 0x7f800000u) == 0x7f800000u) return __float2bfloat16_rn(x);  // inf/nan
  bits += rnd & 0xffffu;
  bits &= 0xffff0000u;
  return __float2bfloat16_rz(__uint_as_float(bits));
}
template <> __device__ __forceinline__ __half round_sr<__half>(float x, uint32_t rnd) {
  // Round to half with a random threshold: pick the neighbour below/above |x| by distance.
  __half lo = __float2half_rz(x);
  float flo = __half2float(lo);
  if (flo == x || !isfinite(x)) return __float2half_rn(x);
  __half hi = __ushort_as_half((unsigned short)(__half_as_ushort(lo) + 1));
  float fhi = __half2float(hi);
  float frac = (x - flo) / (fhi - flo);  // in (0,1), same sign handling for negative x
  float u = (rnd >> 8) * (1.0f / 16777216.0f);
  return u < frac ? hi : lo;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
template <int BLOCK> __device__ __forceinline__ float block_sum(float v) {
  __shared__ float buf[32];
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) buf[threadIdx.x >> 5] = v;
  __syncthreads();
  v = (threadIdx.x < BLOCK / 32) ? buf[threadIdx.x] : 0.0f;
  if (threadIdx.x < 32) v = warp_sum(v);
  return v;  // valid in thread 0
}

// Pass 1 of the gradient norm: partial[blockIdx.x] = sum of g^2 over a grid-strided slice.
// The grid size must be fixed between calls for a deterministic result.
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) grad_norm_partial(float* partial, const T* g, int64_t n) {
  float s = 0.0f;
  for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK) {
    float v = to_f(g[i]);
    s += v * v;
  }
  s = block_sum<BLOCK>(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// Same with atomics: *acc += block sum (float or double accumulator, caller zeroes it).
template <typename T, typename ACC, int BLOCK>
__global__ void __launch_bounds__(BLOCK) grad_norm_atomic(ACC* acc, const T* g, int64_t n) {
  float s = 0.0f;
  for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK) {
    float v = to_f(g[i]);
    s += v * v;
  }
  s = block_sum<BLOCK>(s);
  if (threadIdx.x == 0) atomicAdd(acc, (ACC)s);
}

// Norm over several tensors at once: blockIdx.y picks the tensor; the partial for
// (tensor y, block x) goes to partial[y * gridDim.x + x].
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    grad_norm_multi(float* partial, const T* const* tensors, const int64_t* sizes) {
  const T* g = tensors[blockIdx.y];
  int64_t n = sizes[blockIdx.y];
  float s = 0.0f;
  for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK) {
    float v = to_f(g[i]);
    s += v * v;
  }
  s = block_sum<BLOCK>(s);
  if (threadIdx.x == 0) partial[blockIdx.y * gridDim.x + blockIdx.x] = s;
}

// Pass 2 (one block): norm = sqrt(sum partial); out[0] = norm, out[1] = clip scale
// = min(1, max_norm / (norm + 1e-6)).
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    grad_norm_finalize(float* out, const float* partial, int nparts, float max_norm) {
  float s = 0.0f;
  for (int i = threadIdx.x; i < nparts; i += BLOCK) s += partial[i];
  s = block_sum<BLOCK>(s);
  if (threadIdx.x == 0) {
    float norm = sqrtf(s);
    out[0] = norm;
    out[1] = fminf(1.0f, max_norm / (norm + 1e-6f));
  }
}

// g *= scale_ptr[1] (clip scale computed on device), grid-stride.
template <typename T>
__global__ void grad_clip(T* g, const float* scale_ptr, int64_t n) {
  float sc = scale_ptr[1];
  if (sc >= 1.0f) return;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    g[i] = from_f<T>(to_f(g[i]) * sc);
}

// AdamW step for one tensor. If MASTER, `master` holds the float copy of the params that is
// updated and then rounded into `params` (stochastically if SR). If CLIP, gradients are
// scaled by clip[1]. lr already includes the schedule; bias corrections b1c = 1 - beta1^t,
// b2c = 1 - beta2^t. Weight decay is decoupled: p -= lr * wd * p.
template <typename T, bool MASTER, bool SR, bool CLIP>
__global__ void adamw_update(T* params, float* master, const T* grads, float* m, float* v,
                             int64_t n, float lr, float beta1, float beta2, float b1c, float b2c,
                             float eps, float wd, float grad_scale, const float* clip,
                             uint64_t seed) {
  float cs = grad_scale;
  if (CLIP) cs *= clip[1];
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float g = to_f(grads[i]) * cs;
    float mi = m[i], vi = v[i];
    mi = beta1 * mi + (1.0f - beta1) * g;
    vi = beta2 * vi + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float mh = mi / b1c, vh = vi / b2c;
    float p = MASTER ? master[i] : to_f(params[i]);
    p -= lr * (mh / (sqrtf(vh) + eps) + wd * p);
    if (MASTER) master[i] = p;
    params[i] = SR ? round_sr<T>(p, hash_u32(seed, (uint64_t)i)) : from_f<T>(p);
  }
}

// Vectorized AdamW (4 elements per thread, float4 state), n % 4 == 0.
template <typename T, bool MASTER, bool SR>
__global__ void adamw_update_vec4(T* params, float* master, const T* grads, float* m, float* v,
                                  int64_t n, float lr, float beta1, float beta2, float b1c,
                                  float b2c, float eps, float wd, uint64_t seed) {
  int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (4 * k >= n) return;
  float4 mm = reinterpret_cast<float4*>(m)[k];
  float4 vv = reinterpret_cast<float4*>(v)[k];
  float4 pm = MASTER ? reinterpret_cast<float4*>(master)[k] : make_float4(0, 0, 0, 0);
  float* mp = &mm.x;
  float* vp = &vv.x;
  float* pp = &pm.x;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    int64_t i = 4 * k + j;
    float g = to_f(grads[i]);
    mp[j] = beta1 * mp[j] + (1.0f - beta1) * g;
    vp[j] = beta2 * vp[j] + (1.0f - beta2) * g * g;
    float p = MASTER ? pp[j] : to_f(params[i]);
    p -= lr * ((mp[j] / b1c) / (sqrtf(vp[j] / b2c) + eps) + wd * p);
    pp[j] = p;
    params[i] = SR ? round_sr<T>(p, hash_u32(seed, (uint64_t)i)) : from_f<T>(p);
  }
  reinterpret_cast<float4*>(m)[k] = mm;
  reinterpret_cast<float4*>(v)[k] = vv;
  if (MASTER) reinterpret_cast<float4*>(master)[k] = pm;
}

// Multi-tensor AdamW: blockIdx.y selects the tensor (pointer tables), grid-stride over it.
// Per-tensor weight decay (0 for biases and norms).
template <typename T, bool SR>
__global__ void adamw_multi(T* const* params, float* const* master, const T* const* grads,
                            float* const* m, float* const* v, const int64_t* sizes,
                            const float* wds, float lr, float beta1, float beta2, float b1c,
                            float b2c, float eps, const float* clip, uint64_t seed) {
  const int t = blockIdx.y;
  const int64_t n = sizes[t];
  const float wd = wds[t], cs = clip[1];
  T* P = params[t];
  float* MS = master[t];
  const T* G = grads[t];
  float* M = m[t];
  float* V = v[t];
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float g = to_f(G[i]) * cs;
    float mi = beta1 * M[i] + (1.0f - beta1) * g;
    float vi = beta2 * V[i] + (1.0f - beta2) * g * g;
    M[i] = mi;
    V[i] = vi;
    float p = MS[i];
    p -= lr * ((mi / b1c) / (sqrtf(vi / b2c) + eps) + wd * p);
    MS[i] = p;
    P[i] = SR ? round_sr<T>(p, hash_u32(seed + t, (uint64_t)i)) : from_f<T>(p);
  }
}

// master[i] = float(params[i]) (initialization of master weights).
template <typename T>
__global__ void init_master(float* master, const T* params, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    master[i] = to_f(params[i]);
}

// Loss-scale check for fp16 training: flag[0] = 1 if any gradient is inf/nan.
// blockDim.x must be a multiple of 32 (full warps for __any_sync).
template <typename T>
__global__ void check_finite(int* flag, const T* g, int64_t n) {
  bool bad = false;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    bad |= !isfinite(to_f(g[i]));
  if (__any_sync(0xffffffffu, bad) && (threadIdx.x & 31) == 0) atomicExch(flag, 1);
}

#define NORM(T, B)                                                                                \
  template __global__ void grad_norm_partial<T, B>(float*, const T*, int64_t);                    \
  template __global__ void grad_norm_multi<T, B>(float*, const T* const*, const int64_t*);
#define NORMA(T, A, B) template __global__ void grad_norm_atomic<T, A, B>(A*, const T*, int64_t);
#define ADAM(T, M, S, C)                                                                          \
  template __global__ void adamw_update<T, M, S, C>(T*, float*, const T*, float*, float*,         \
                                                    int64_t, float, float, float, float, float,   \
                                                    float, float, float, const float*, uint64_t);
#define ADAM4(T, M, S)                                                                            \
  template __global__ void adamw_update_vec4<T, M, S>(T*, float*, const T*, float*, float*,       \
                                                      int64_t, float, float, float, float, float, \
                                                      float, float, uint64_t);
#define MULTI(T, S)                                                                               \
  template __global__ void adamw_multi<T, S>(T* const*, float* const*, const T* const*,           \
                                             float* const*, float* const*, const int64_t*,        \
                                             const float*, float, float, float, float, float,     \
                                             float, const float*, uint64_t);
#define SMALL(T)                                                                                  \
  template __global__ void grad_clip<T>(T*, const float*, int64_t);                               \
  template __global__ void init_master<T>(float*, const T*, int64_t);                             \
  template __global__ void check_finite<T>(int*, const T*, int64_t);

SMALL(float) SMALL(__half) SMALL(__nv_bfloat16)
NORM(float, 256) NORM(float, 1024) NORM(__nv_bfloat16, 512) NORM(__half, 512)
NORMA(float, float, 256) NORMA(float, double, 512) NORMA(__nv_bfloat16, double, 256)
template __global__ void grad_norm_finalize<256>(float*, const float*, int, float);
template __global__ void grad_norm_finalize<1024>(float*, const float*, int, float);
ADAM(float, false, false, false) ADAM(float, false, false, true)
ADAM(__nv_bfloat16, true, true, true) ADAM(__nv_bfloat16, true, false, true)
ADAM(__nv_bfloat16, false, false, false) ADAM(__half, true, true, true)
ADAM4(float, false, false) ADAM4(__nv_bfloat16, true, true) ADAM4(__half, true, true)
MULTI(__nv_bfloat16, true) MULTI(__nv_bfloat16, false) MULTI(__half, true) MULTI(float, false)
