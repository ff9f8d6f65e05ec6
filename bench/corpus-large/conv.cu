// Convolution kernels (1D/2D direct with shared-memory halos, im2col/col2im, depthwise),
// as used by conv front-ends and short causal convolutions in sequence models; written
// for Wooly's compile-time benchmarks. Filter sizes are template parameters.
// Layouts: 1D NCL input (B, Cin, L), weight (Cout, Cin, K); 2D NCHW input (N, C, H, W),
// weight (Cout, C, K, K). Stride 1 and "same" zero padding (K/2, K odd) unless stated.
// Accumulation in float for all element types.
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

// 1D conv: grid (ceil(L/BLOCK), Cout/COUT_PER_BLOCK rounded up, B); block BLOCK threads,
// each thread computes COUT_PER_BLOCK output channels at one position. The input tile with
// its K-1 halo and the filters for the block's channels are staged in shared memory.
template <typename T, int K, int BLOCK, int COUT_PER_BLOCK, bool BIAS>
__global__ void __launch_bounds__(BLOCK)
    conv1d_forward(T* out, const T* inp, const T* w, const T* bias, int Cin, int Cout, int L) {
  constexpr int R = K / 2;
  __shared__ float tile[BLOCK + K - 1];
  __shared__ float wsh[COUT_PER_BLOCK][K];
  const int b = blockIdx.z, l0 = blockIdx.x * BLOCK, co0 = blockIdx.y * COUT_PER_BLOCK;
  const int l = l0 + threadIdx.x;
  float acc[COUT_PER_BLOCK];
#pragma unroll
  for (int j = 0; j < COUT_PER_BLOCK; ++j) acc[j] = BIAS && co0 + j < Cout ? to_f(bias[co0 + j]) : 0.0f;
  for (int ci = 0; ci < Cin; ++ci) {
    const T* x = inp + ((int64_t)b * Cin + ci) * L;
    for (int i = threadIdx.x; i < BLOCK + K - 1; i += BLOCK) {
      int g = l0 + i - R;
      tile[i] = (g >= 0 && g < L) ? to_f(x[g]) : 0.0f;
    }
    for (int i = threadIdx.x; i < COUT_PER_BLOCK * K; i += BLOCK) {
      int j = i / K, k = i % K;
      wsh[j][k] = co0 + j < Cout ? to_f(w[((int64_t)(co0 + j) * Cin + ci) * K + k]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float xv = tile[threadIdx.x + k];
#pragma unroll
      for (int j = 0; j < COUT_PER_BLOCK; ++j) acc[j] = fmaf(wsh[j][k], xv, acc[j]);
    }
    __syncthreads();
  }
  if (l < L) {
#pragma unroll
    for (int j = 0; j < COUT_PER_BLOCK; ++j)
      if (co0 + j < Cout) out[((int64_t)b * Cout + co0 + j) * L + l] = from_f<T>(acc[j]);
  }
}

// Causal depthwise conv over time, channels-last (B, L, C): out[b,t,c] = bias[c] +
// sum_k w[c][k] * x[b, t-K+1+k, c] (zero before t=0), optional SiLU. One thread per (t, c).
template <typename T, int K, bool SILU>
__global__ void causal_dwconv1d(T* out, const T* inp, const T* w, const T* bias, int B, int L, int C) {
  int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (idx >= (int64_t)B * L * C) return;
  int c = idx % C;
  int64_t bt = idx / C;
  int t = bt % L;
  float wr[K];
#pragma unroll
  for (int k = 0; k < K; ++k) wr[k] = to_f(w[c * K + k]);
  float acc = to_f(bias[c]);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    int tt = t - (K - 1) + k;
    if (tt >= 0) acc = fmaf(wr[k], to_f(inp[idx + (int64_t)(tt - t) * C]), acc);
  }
  if (SILU) acc = acc / (1.0f + __expf(-acc));
  out[idx] = from_f<T>(acc);
}

// Backward of causal_dwconv1d (without SiLU): dinp[b,t,c] = sum_k w[c][k] * dout[b,t+K-1-k,c];
// dw[c][k] (float scratch) += sum_{b,t} dout[b,t,c] * x[b,t-K+1+k,c] via one atomic per
// thread and tap.
template <typename T, int K>
__global__ void causal_dwconv1d_backward(T* dinp, float* dw, const T* dout, const T* inp,
                                         const T* w, int B, int L, int C) {
  int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (idx >= (int64_t)B * L * C) return;
  int c = idx % C;
  int t = (idx / C) % L;
  float acc = 0.0f;
  float g = to_f(dout[idx]);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    int tt = t + (K - 1) - k;
    if (tt < L) acc = fmaf(to_f(w[c * K + k]), to_f(dout[idx + (int64_t)(tt - t) * C]), acc);
    int ts = t - (K - 1) + k;
    if (ts >= 0) atomicAdd(dw + c * K + k, g * to_f(inp[idx + (int64_t)(ts - t) * C]));
  }
  dinp[idx] = from_f<T>(acc);
}

// Direct 2D conv: block TILE x TILE threads computes a TILE x TILE output patch of one
// (n, cout) plane; blockIdx.z = n * Cout + cout. Input patch with halo in shared memory.
template <typename T, int K, int TILE, bool RELU>
__global__ void __launch_bounds__(TILE * TILE)
    conv2d_forward(T* out, const T* inp, const T* w, const T* bias, int C, int Cout, int H, int W) {
  constexpr int R = K / 2, S = TILE + K - 1;
  __shared__ float patch[S][S + 1];
  __shared__ float wk[K * K];
  const int n = blockIdx.z / Cout, co = blockIdx.z % Cout;
  const int oy = blockIdx.y * TILE + threadIdx.y, ox = blockIdx.x * TILE + threadIdx.x;
  const int tid = threadIdx.y * TILE + threadIdx.x;
  float acc = bias ? to_f(bias[co]) : 0.0f;
  for (int c = 0; c < C; ++c) {
    const T* x = inp + ((int64_t)n * C + c) * H * W;
    for (int i = tid; i < S * S; i += TILE * TILE) {
      int py = i / S, px = i % S;
      int gy = blockIdx.y * TILE + py - R, gx = blockIdx.x * TILE + px - R;
      patch[py][px] = (gy >= 0 && gy < H && gx >= 0 && gx < W) ? to_f(x[(int64_t)gy * W + gx]) : 0.0f;
    }
    for (int i = tid; i < K * K; i += TILE * TILE) wk[i] = to_f(w[((int64_t)co * C + c) * K * K + i]);
    __syncthreads();
#pragma unroll
    for (int ky = 0; ky < K; ++ky)
#pragma unroll
      for (int kx = 0; kx < K; ++kx) acc = fmaf(wk[ky * K + kx], patch[threadIdx.y + ky][threadIdx.x + kx], acc);
    __syncthreads();
  }
  if (oy < H && ox < W) {
    if (RELU) acc = fmaxf(acc, 0.0f);
    out[(((int64_t)n * Cout + co) * H + oy) * W + ox] = from_f<T>(acc);
  }
}

// Depthwise 2D conv (one filter per channel), same tiling; blockIdx.z = n * C + c.
template <typename T, int K, int TILE>
__global__ void __launch_bounds__(TILE * TILE)
    dwconv2d_forward(T* out, const T* inp, const T* w, int C, int H, int W) {
  constexpr int R = K / 2, S = TILE + K - 1;
  __shared__ float patch[S][S + 1];
  __shared__ float wk[K * K];
  const int c = blockIdx.z % C;
  const T* x = inp + (int64_t)blockIdx.z * H * W;
  const int tid = threadIdx.y * TILE + threadIdx.x;
  for (int i = tid; i < S * S; i += TILE * TILE) {
    int py = i / S, px = i % S;
    int gy = blockIdx.y * TILE + py - R, gx = blockIdx.x * TILE + px - R;
    patch[py][px] = (gy >= 0 && gy < H && gx >= 0 && gx < W) ? to_f(x[(int64_t)gy * W + gx]) : 0.0f;
  }
  for (int i = tid; i < K * K; i += TILE * TILE) wk[i] = to_f(w[c * K * K + i]);
  __syncthreads();
  const int oy = blockIdx.y * TILE + threadIdx.y, ox = blockIdx.x * TILE + threadIdx.x;
  if (oy >= H || ox >= W) return;
  float acc = 0.0f;
#pragma unroll
  for (int ky = 0; ky < K; ++ky)
#pragma unroll
    for (int kx = 0; kx < K; ++kx) acc = fmaf(wk[ky * K + kx], patch[threadIdx.y + ky][threadIdx.x + kx], acc);
  out[(int64_t)blockIdx.z * H * W + (int64_t)oy * W + ox] = from_f<T>(acc);
}

// im2col for one image (C, H, W) with stride S and padding P:
// col[(c*K + ky)*K + kx][oy*OW + ox] = x[c][oy*S - P + ky][ox*S - P + kx] (0 outside).
template <typename T, int K, int S>
__global__ void im2col(T* col, const T* x, int C, int H, int W, int P, int OH, int OW) {
  int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t total = (int64_t)C * OH * OW;
  if (idx >= total) return;
  int ox = idx % OW, oy = (idx / OW) % OH, c = (int)(idx / ((int64_t)OW * OH));
  const T zero = from_f<T>(0.0f);
#pragma unroll
  for (int ky = 0; ky < K; ++ky)
#pragma unroll
    for (int kx = 0; kx < K; ++kx) {
      int iy = oy * S - P + ky, ix = ox * S - P + kx;
      T v = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? x[((int64_t)c * H + iy) * W + ix] : zero;
      col[((int64_t)(c * K + ky) * K + kx) * OH * OW + (int64_t)oy * OW + ox] = v;
    }
}

// col2im (gradient of im2col), gather form: one thread per input pixel sums every column
// entry that reads it (deterministic, no atomics). dx[c][y][x] = sum.
template <typename T, int K, int S>
__global__ void col2im(T* dx, const T* col, int C, int H, int W, int P, int OH, int OW) {
  int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (idx >= (int64_t)C * H * W) return;
  int x = idx % W, y = (idx / W) % H, c = (int)(idx / ((int64_t)W * H));
  float acc = 0.0f;
#pragma unroll
  for (int ky = 0; ky < K; ++ky) {
    int ty = y + P - ky;
    if (ty < 0 || ty % S != 0) continue;
    int oy = ty / S;
    if (oy >= OH) continue;
#pragma unroll
    for (int kx = 0; kx < K; ++kx) {
      int tx = x + P - kx;
      if (tx < 0 || tx % S != 0) continue;
      int ox = tx / S;
      if (ox >= OW) continue;
      acc += to_f(col[((int64_t)(c * K + ky) * K + kx) * OH * OW + (int64_t)oy * OW + ox]);
    }
  }
  dx[idx] = from_f<T>(acc);
}

// POOL x POOL max pooling with stride POOL (output H/POOL x W/POOL, remainder dropped), plus argmax indices for the backward pass.
template <typename T, int POOL>
__global__ void maxpool2d(T* out, int* argidx, const T* x, int NC, int H, int W) {
  int OH = H / POOL, OW = W / POOL;
  int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (idx >= (int64_t)NC * OH * OW) return;
  int ox = idx % OW, oy = (idx / OW) % OH;
  int64_t p = idx / ((int64_t)OW * OH);
  const T* xp = x + p * H * W;
  float best = to_f(xp[(int64_t)(oy * POOL) * W + ox * POOL]);
  int bi = (oy * POOL) * W + ox * POOL;
#pragma unroll
  for (int dy = 0; dy < POOL; ++dy)
#pragma unroll
    for (int dx = 0; dx < POOL; ++dx) {
      int o = (oy * POOL + dy) * W + ox * POOL + dx;
      float v = to_f(xp[o]);
      if (v > best) { best = v; bi = o; }
    }
  out[idx] = from_f<T>(best);
  argidx[idx] = bi;
}

#define C1(T, K, B, CO, BI)                                                                       \
  template __global__ void conv1d_forward<T, K, B, CO, BI>(T*, const T*, const T*, const T*, int, \
                                                           int, int);
#define DW1(T, K, S)                                                                              \
  template __global__ void causal_dwconv1d<T, K, S>(T*, const T*, const T*, const T*, int, int, int);
#define DW1B(T, K)                                                                                \
  template __global__ void causal_dwconv1d_backward<T, K>(T*, float*, const T*, const T*,         \
                                                          const T*, int, int, int);
#define C2(T, K, TL, RL)                                                                          \
  template __global__ void conv2d_forward<T, K, TL, RL>(T*, const T*, const T*, const T*, int,    \
                                                        int, int, int);
#define DW2(T, K, TL) template __global__ void dwconv2d_forward<T, K, TL>(T*, const T*, const T*, int, int, int);
#define I2C(T, K, S)                                                                              \
  template __global__ void im2col<T, K, S>(T*, const T*, int, int, int, int, int, int);           \
  template __global__ void col2im<T, K, S>(T*, const T*, int, int, int, int, int, int);

C1(float, 3, 128, 4, true) C1(float, 5, 256, 8, true) C1(__nv_bfloat16, 3, 256, 8, true)
DW1(float, 4, false) DW1(float, 4, true) DW1(__nv_bfloat16, 4, true) DW1(__half, 3, false)
DW1B(float, 4) DW1B(__nv_bfloat16, 4)
C2(float, 3, 16, true) C2(float, 5, 16, false) C2(__nv_bfloat16, 3, 16, true)
DW2(float, 3, 16) DW2(float, 5, 16) DW2(__nv_bfloat16, 3, 16)
I2C(float, 3, 1) I2C(float, 3, 2) I2C(__nv_bfloat16, 3, 1)
template __global__ void maxpool2d<float, 2>(float*, int*, const float*, int, int, int);
template __global__ void maxpool2d<float, 3>(float*, int*, const float*, int, int, int);
template __global__ void maxpool2d<__nv_bfloat16, 2>(__nv_bfloat16*, int*, const __nv_bfloat16*, int, int, int);
