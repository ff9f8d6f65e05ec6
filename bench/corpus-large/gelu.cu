// Element-wise activation kernels of a GPT training step (llm.c style), written for
// Wooly's compile-time benchmarks: GELU (tanh approximation and exact erf form) forward and
// backward, residual add, fused bias + GELU, SwiGLU, for float, __half and __nv_bfloat16.
// Vectorized kernels use 16-byte packs and require N % (16/sizeof(T)) == 0 (rows: C % pack == 0).
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

#define GELU_SCALE 0.7978845608028654f  // sqrt(2/pi)
enum { GELU_TANH = 0, GELU_ERF = 1 };

template <int KIND> __device__ __forceinline__ float gelu_f(float x) {
  if (KIND == GELU_TANH) {
    float cube = 0.044715f * x * x * x;
    return 0.5f * x * (1.0f + tanhf(GELU_SCALE * (x + cube)));
  } else {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  }
}
template <int KIND> __device__ __forceinline__ float gelu_grad_f(float x) {
  if (KIND == GELU_TANH) {
    float cube = 0.044715f * x * x * x;
    float arg = GELU_SCALE * (x + cube);
    float th = tanhf(arg);
    float ch = coshf(arg);
    float sech2 = 1.0f / (ch * ch);
    return 0.5f * (1.0f + th) + x * 0.5f * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
  } else {
    float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    float pdf = 0.3989422804014327f * __expf(-0.5f * x * x);
    return cdf + x * pdf;
  }
}

// out[i] = gelu(inp[i]); grid-stride, UNROLL packs per thread per iteration.
template <typename T, int KIND, int UNROLL>
__global__ void gelu_forward(T* out, const T* inp, int64_t N) {
  using P = Packed128<T>;
  const int64_t np = N / P::size, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < np; k += stride * UNROLL) {
    P x[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (k + u * stride < np) x[u] = load128cs(inp + (k + u * stride) * P::size);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      if (k + u * stride >= np) break;
      P y;
#pragma unroll
      for (int i = 0; i < P::size; ++i) y[i] = from_f<T>(gelu_f<KIND>(to_f(x[u][i])));
      store128(out + (k + u * stride) * P::size, y);
    }
  }
}

// dinp[i] = gelu'(inp[i]) * dout[i]; one pack per thread. In-place allowed (dinp == dout).
template <typename T, int KIND>
__global__ void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t N) {
  using P = Packed128<T>;
  int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (k >= N / P::size) return;
  P x = load128cs(inp + k * P::size), g = load128(dout + k * P::size), d;
#pragma unroll
  for (int i = 0; i < P::size; ++i) d[i] = from_f<T>(gelu_grad_f<KIND>(to_f(x[i])) * to_f(g[i]));
  store128(dinp + k * P::size, d);
}

// out = a + b (residual), vectorized, one pack per thread.
template <typename T>
__global__ void residual_forward(T* out, const T* a, const T* b, int64_t N) {
  using P = Packed128<T>;
  int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (k >= N / P::size) return;
  P x = load128cs(a + k * P::size), y = load128cs(b + k * P::size), o;
#pragma unroll
  for (int i = 0; i < P::size; ++i) o[i] = from_f<T>(to_f(x[i]) + to_f(y[i]));
  store128(out + k * P::size, o);
}

// Fused bias + GELU on rows of length C: pre[r][c] = x[r][c] + bias[c] (saved for backward
// if SAVE), out = gelu(pre). One pack per thread.
template <typename T, int KIND, bool SAVE>
__global__ void bias_gelu_forward(T* out, T* pre, const T* x, const T* bias, int64_t rows, int C) {
  using P = Packed128<T>;
  int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (k >= rows * C / P::size) return;
  int64_t e = k * P::size;
  int c = (int)(e % C);
  P v = load128cs(x + e), b = load128(bias + c), y, p;
#pragma unroll
  for (int i = 0; i < P::size; ++i) {
    float z = to_f(v[i]) + to_f(b[i]);
    p[i] = from_f<T>(z);
    y[i] = from_f<T>(gelu_f<KIND>(z));
  }
  if (SAVE) store128(pre + e, p);
  store128(out + e, y);
}

// Backward of bias_gelu_forward: dx = gelu'(pre) * dout, dbias (float scratch) += column sums.
// Block = (32 columns-packs) x ROWS threads, grid.x over column packs, grid.y over row chunks.
template <typename T, int KIND, int ROWS>
__global__ void __launch_bounds__(32 * ROWS)
    bias_gelu_backward(T* dx, float* dbias, const T* pre, const T* dout, int64_t rows, int C) {
  using P = Packed128<T>;
  __shared__ float part[ROWS][32 * P::size + 1];
  int cp = blockIdx.x * 32 + threadIdx.x;  // column pack index
  int c = cp * P::size;
  float acc[P::size];
#pragma unroll
  for (int i = 0; i < P::size; ++i) acc[i] = 0.0f;
  if (c < C) {
    for (int64_t r = blockIdx.y * ROWS + threadIdx.y; r < rows; r += (int64_t)gridDim.y * ROWS) {
      int64_t e = r * C + c;
      P z = load128(pre + e), g = load128(dout + e), d;
#pragma unroll
      for (int i = 0; i < P::size; ++i) {
        float gi = gelu_grad_f<KIND>(to_f(z[i])) * to_f(g[i]);
        d[i] = from_f<T>(gi);
        acc[i] += gi;
      }
      store128(dx + e, d);
    }
  }
#pragma unroll
  for (int i = 0; i < P::size; ++i) part[threadIdx.y][threadIdx.x * P::size + i] = acc[i];
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
#pragma unroll
    for (int i = 0; i < P::size; ++i) {
      float s = 0.0f;
      for (int r = 0; r < ROWS; ++r) s += part[r][threadIdx.x * P::size + i];
      atomicAdd(dbias + c + i, s);
    }
  }
}

// SwiGLU: gu is (rows, 2C) = [gate | up]; out[r][c] = silu(gate) * up.
template <typename T>
__global__ void swiglu_forward(T* out, const T* gu, int64_t rows, int C) {
  using P = Packed128<T>;
  int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (k >= rows * C / P::size) return;
  int64_t e = k * P::size;
  int64_t r = e / C;
  int c = (int)(e - r * C);
  P g = load128(gu + r * 2 * C + c), u = load128(gu + r * 2 * C + C + c), o;
#pragma unroll
  for (int i = 0; i < P::size; ++i) {
    float x = to_f(g[i]);
    o[i] = from_f<T>(x / (1.0f + __expf(-x)) * to_f(u[i]));
  }
  store128(out + e, o);
}

// SwiGLU backward: dgu[gate] = dout*up*silu'(gate), dgu[up] = dout*silu(gate).
template <typename T>
__global__ void swiglu_backward(T* dgu, const T* gu, const T* dout, int64_t rows, int C) {
  using P = Packed128<T>;
  int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (k >= rows * C / P::size) return;
  int64_t e = k * P::size;
  int64_t r = e / C;
  int c = (int)(e - r * C);
  P g = load128(gu + r * 2 * C + c), u = load128(gu + r * 2 * C + C + c), d = load128(dout + e);
  P dg, du;
#pragma unroll
  for (int i = 0; i < P::size; ++i) {
    float x = to_f(g[i]), s = 1.0f / (1.0f + __expf(-x)), go = to_f(d[i]);
    du[i] = from_f<T>(go * x * s);
    dg[i] = from_f<T>(go * to_f(u[i]) * s * (1.0f + x * (1.0f - s)));
  }
  store128(dgu + r * 2 * C + c, dg);
  store128(dgu + r * 2 * C + C + c, du);
}

// Scalar (unvectorized) GELU for sizes that are not a multiple of the pack, grid-stride.
template <typename T, int KIND>
__global__ void gelu_forward_scalar(T* out, const T* inp, int64_t N) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < N;
       i += (int64_t)gridDim.x * blockDim.x)
    out[i] = from_f<T>(gelu_f<KIND>(to_f(inp[i])));
}

#define GF(T, K, U) template __global__ void gelu_forward<T, K, U>(T*, const T*, int64_t);
#define GB(T, K) template __global__ void gelu_backward<T, K>(T*, const T*, const T*, int64_t);
#define BGF(T, K, S) template __global__ void bias_gelu_forward<T, K, S>(T*, T*, const T*, const T*, int64_t, int);
#define BGB(T, K, R) template __global__ void bias_gelu_backward<T, K, R>(T*, float*, const T*, const T*, int64_t, int);
#define PER_TYPE(T)                                                                               \
  template __global__ void residual_forward<T>(T*, const T*, const T*, int64_t);                  \
  template __global__ void swiglu_forward<T>(T*, const T*, int64_t, int);                         \
  template __global__ void swiglu_backward<T>(T*, const T*, const T*, int64_t, int);              \
  template __global__ void gelu_forward_scalar<T, GELU_TANH>(T*, const T*, int64_t);              \
  GF(T, GELU_TANH, 1) BGF(T, GELU_TANH, true)

PER_TYPE(float)
PER_TYPE(__half)
PER_TYPE(__nv_bfloat16)
template __global__ void gelu_forward_scalar<float, GELU_ERF>(float*, const float*, int64_t);
GF(float, GELU_TANH, 2) GF(float, GELU_ERF, 1) GB(float, GELU_ERF) BGF(float, GELU_TANH, false)
BGF(float, GELU_ERF, true) BGB(float, GELU_ERF, 8) BGB(float, GELU_TANH, 8) GB(float, GELU_TANH)
GB(__nv_bfloat16, GELU_TANH) BGB(__nv_bfloat16, GELU_TANH, 8)
