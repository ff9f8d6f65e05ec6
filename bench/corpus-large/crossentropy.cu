// Classifier head of a GPT training step (llm.c style), written for Wooly's compile-time
// benchmarks: fused softmax + cross-entropy + backward (dlogits written in place), label
// smoothing, ignore index, log-softmax forward/backward, and a separate loss reduction.
// logits: (BT, Vp) rows, V <= Vp valid columns (padded vocabulary); targets[BT] in [0,V)
// or -1 (ignored). Vectorized kernels require Vp % (16/sizeof(T)) == 0.
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
template <typename T> __device__ __forceinline__ void store128(T* p, const Packed128<T>& v) {
  *reinterpret_cast<int4*>(p) = *reinterpret_cast<const int4*>(&v);
}

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
// Block-wide max and sum of an online-softmax pair (m, s); every thread gets the result.
template <int BLOCK> __device__ __forceinline__ void block_online(float& m, float& s) {
  __shared__ float sm[32], ss[32];
  float wm = warp_max(m);
  s = warp_sum(s * __expf(m - wm));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) {
    sm[threadIdx.x >> 5] = wm;
    ss[threadIdx.x >> 5] = s;
  }
  __syncthreads();
  float bm = -FLT_MAX;
#pragma unroll
  for (int i = 0; i < BLOCK / 32; ++i) bm = fmaxf(bm, sm[i]);
  float bs = 0.0f;
#pragma unroll
  for (int i = 0; i < BLOCK / 32; ++i) bs += ss[i] * __expf(sm[i] - bm);
  m = bm;
  s = bs;
}
template <int BLOCK> __device__ __forceinline__ float block_sum(float v) {
  __shared__ float buf[32];
  v = warp_sum(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) buf[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = 0.0f;
#pragma unroll
  for (int i = 0; i < BLOCK / 32; ++i) t += buf[i];
  return t;
}

// One block per row (grid-strided). Computes p = softmax(logits[:V]); loss[row] =
// -(1-eps)*log p[y] - eps/V * sum_j log p[j]; if BACKWARD, logits[:V] is overwritten with
// dloss * (p - ((1-eps)*onehot(y) + eps/V)) and padding columns with 0. Ignored rows
// (y < 0) get loss 0 and zero gradient. SMOOTH=false means eps = 0.
template <typename T, int BLOCK, bool SMOOTH, bool BACKWARD>
__global__ void __launch_bounds__(BLOCK)
    fused_classifier(T* logits, float* losses, const int* targets, int BT, int V, int Vp,
                     float dloss, float eps) {
  using P = Packed128<T>;
  for (int row = blockIdx.x; row < BT; row += gridDim.x) {
    T* x = logits + (int64_t)row * Vp;
    const int y = targets[row];
    float m = -FLT_MAX, s = 0.0f, sumx = 0.0f;
    for (int c = threadIdx.x * P::size; c < Vp; c += BLOCK * P::size) {
      P v = load128(x + c);
#pragma unroll
      for (int i = 0; i < P::size; ++i) {
        if (c + i >= V) break;
        float f = to_f(v[i]);
        float nm = fmaxf(m, f);
        s = s * __expf(m - nm) + __expf(f - nm);
        m = nm;
        if (SMOOTH) sumx += f;
      }
    }
    block_online<BLOCK>(m, s);
    if (SMOOTH) sumx = block_sum<BLOCK>(sumx);
    const float lse = m + __logf(s);
    const float e = SMOOTH ? eps : 0.0f;
    if (threadIdx.x == 0) {
      float loss = 0.0f;
      if (y >= 0) {
        loss = (1.0f - e) * (lse - to_f(x[y]));
        if (SMOOTH) loss += e * (lse - sumx / V);
      }
      losses[row] = loss;
    }
    if (BACKWARD) {
      __syncthreads();  // x[y] was read above by thread 0
      const float inv_s = 1.0f / s;
      for (int c = threadIdx.x * P::size; c < Vp; c += BLOCK * P::size) {
        P v = load128(x + c), g;
#pragma unroll
        for (int i = 0; i < P::size; ++i) {
          int j = c + i;
          float d = 0.0f;
          if (j < V && y >= 0) {
            float p = __expf(to_f(v[i]) - m) * inv_s;
            float tgt = (j == y ? 1.0f - e : 0.0f) + e / V;
            d = dloss * (p - tgt);
          }
          g[i] = from_f<T>(d);
        }
        store128(x + c, g);
      }
    }
    __syncthreads();
  }
}

// Warp-per-row variant for small vocabularies (classification heads), scalar loads.
template <typename T, int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
    fused_classifier_warp(T* dlogits, float* losses, const T* logits, const int* targets, int BT,
                          int V, float dloss) {
  int lane = threadIdx.x & 31;
  int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
  if (row >= BT) return;
  const T* x = logits + (int64_t)row * V;
  float m = -FLT_MAX, s = 0.0f;
  for (int j = lane; j < V; j += 32) {
    float f = to_f(x[j]);
    float nm = fmaxf(m, f);
    s = s * __expf(m - nm) + __expf(f - nm);
    m = nm;
  }
  float gm = warp_max(m);
  s = warp_sum(s * __expf(m - gm));
  int y = targets[row];
  if (lane == 0) losses[row] = y >= 0 ? gm + __logf(s) - to_f(x[y]) : 0.0f;
  T* d = dlogits + (int64_t)row * V;
  for (int j = lane; j < V; j += 32) {
    float p = __expf(to_f(x[j]) - gm) / s;
    d[j] = from_f<T>(y >= 0 ? dloss * (p - (j == y ? 1.0f : 0.0f)) : 0.0f);
  }
}

// out[row][j] = x[j] - logsumexp(x) (block per row, grid-strided). Optional temperature.
template <typename T, int BLOCK, bool TEMP>
__global__ void __launch_bounds__(BLOCK)
    log_softmax_forward(T* out, const T* inp, int rows, int V, float inv_temp) {
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = inp + (int64_t)row * V;
    float m = -FLT_MAX, s = 0.0f;
    for (int j = threadIdx.x; j < V; j += BLOCK) {
      float f = to_f(x[j]) * (TEMP ? inv_temp : 1.0f);
      float nm = fmaxf(m, f);
      s = s * __expf(m - nm) + __expf(f - nm);
      m = nm;
    }
    block_online<BLOCK>(m, s);
    float lse = m + __logf(s);
    for (int j = threadIdx.x; j < V; j += BLOCK)
      out[(int64_t)row * V + j] = from_f<T>(to_f(x[j]) * (TEMP ? inv_temp : 1.0f) - lse);
    __syncthreads();
  }
}

// dinp[j] = dout[j] - exp(out[j]) * sum_k dout[k]   (out = log-softmax output)
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    log_softmax_backward(T* dinp, const T* dout, const T* out, int rows, int V) {
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* g = dout + (int64_t)row * V;
    const T* o = out + (int64_t)row * V;
    float s = 0.0f;
    for (int j = threadIdx.x; j < V; j += BLOCK) s += to_f(g[j]);
    s = block_sum<BLOCK>(s);
    for (int j = threadIdx.x; j < V; j += BLOCK)
      dinp[(int64_t)row * V + j] = from_f<T>(to_f(g[j]) - __expf(to_f(o[j])) * s);
    __syncthreads();
  }
}

// NLL from log-probs: loss[row] = -logp[row][y] (0 when y < 0), plus counting valid rows.
template <typename T>
__global__ void nll_loss(float* losses, int* nvalid, const T* logp, const int* targets, int BT,
                         int V) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  bool valid = false;
  if (row < BT) {
    int y = targets[row];
    valid = y >= 0 && y < V;
    losses[row] = valid ? -to_f(logp[(int64_t)row * V + y]) : 0.0f;
  }
  unsigned ballot = __ballot_sync(0xffffffffu, valid);
  if ((threadIdx.x & 31) == 0 && ballot) atomicAdd(nvalid, __popc(ballot));
}

// mean_loss[0] += sum(losses) / count (block reduction + atomicAdd; caller zeroes it).
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) loss_mean(float* mean_loss, const float* losses, int n,
                                                   float inv_count) {
  float s = 0.0f;
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) s += losses[i];
  s = block_sum<BLOCK>(s);
  if (threadIdx.x == 0) atomicAdd(mean_loss, s * inv_count);
}

// Top-1 accuracy: correct[0] += number of rows whose argmax (first max) equals the target.
template <typename T, int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
    top1_correct(int* correct, const T* logits, const int* targets, int BT, int V) {
  int lane = threadIdx.x & 31;
  int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
  if (row >= BT) return;
  const T* x = logits + (int64_t)row * V;
  float best = -FLT_MAX;
  int bi = 0x7fffffff;
  for (int j = lane; j < V; j += 32) {
    float f = to_f(x[j]);
    if (f > best) { best = f; bi = j; }
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    float ob = __shfl_xor_sync(0xffffffffu, best, off);
    int oi = __shfl_xor_sync(0xffffffffu, bi, off);
    if (ob > best || (ob == best && oi < bi)) { best = ob; bi = oi; }
  }
  if (lane == 0 && bi == targets[row]) atomicAdd(correct, 1);
}

#define FC(T, B, S, BW)                                                                           \
  template __global__ void fused_classifier<T, B, S, BW>(T*, float*, const int*, int, int, int,   \
                                                         float, float);
#define FCW(T, W)                                                                                 \
  template __global__ void fused_classifier_warp<T, W>(T*, float*, const T*, const int*, int,     \
                                                       int, float);
#define LSF(T, B, TP) template __global__ void log_softmax_forward<T, B, TP>(T*, const T*, int, int, float);
#define LSB(T, B) template __global__ void log_softmax_backward<T, B>(T*, const T*, const T*, int, int);
#define SMALL(T)                                                                                  \
  template __global__ void nll_loss<T>(float*, int*, const T*, const int*, int, int);             \
  template __global__ void top1_correct<T, 4>(int*, const T*, const int*, int, int);

FC(float, 1024, false, true) FC(float, 512, true, true)
FC(__nv_bfloat16, 1024, false, true) FC(__nv_bfloat16, 256, true, false)
FCW(float, 4) FCW(__nv_bfloat16, 8)
LSF(float, 256, false) LSF(float, 512, true) LSF(__nv_bfloat16, 1024, false)
LSB(float, 256) LSB(__nv_bfloat16, 1024)
SMALL(float) SMALL(__half) SMALL(__nv_bfloat16)
template __global__ void loss_mean<256>(float*, const float*, int, float);
template __global__ void loss_mean<1024>(float*, const float*, int, float);
