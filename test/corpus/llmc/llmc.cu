// GPT-2 training kernels in the style of llm.c's CUDA code (written for
// Wooly's tests, not copied): warp-per-row reductions with warp-uniform early
// exits, block reductions through shared memory, tiled matmuls with
// barriers, and elementwise kernels with per-thread bounds. Used to measure
// how many real-world training kernels wooly-constrain / wooly-slice with
// wooly-lower-iteration-barrier accept (test/Runtime/CPU/llmc-*.test,
// test/Target/NVPTX/ptxas-constrained.test). Regenerate the PTX with
// ./regen.sh.

#include <cuda_runtime.h>

#define WARP 32

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// out[b,t,:] = wte[inp[b,t],:] + wpe[t,:]   (one thread per element)
extern "C" __global__ void encoder_forward(float* out, const int* inp, const float* wte,
                                           const float* wpe, int B, int T, int C) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= B * T * C) return;
  int bt = idx / C, c = idx % C, t = bt % T;
  out[idx] = wte[inp[bt] * C + c] + wpe[t * C + c];
}

// One warp per row: mean and rstd by warp reductions; the early exit is the
// same for a whole warp (row index from the warp index).
extern "C" __global__ void layernorm_forward(float* out, float* mean, float* rstd,
                                             const float* inp, const float* weight,
                                             const float* bias, int N, int C) {
  int lane = threadIdx.x % WARP;
  int row = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
  if (row >= N) return;
  const float* x = inp + row * C;
  float s = 0.0f;
  for (int i = lane; i < C; i += WARP) s += x[i];
  float m = warp_sum(s) / C;
  float v = 0.0f;
  for (int i = lane; i < C; i += WARP) { float d = x[i] - m; v += d * d; }
  float r = rsqrtf(warp_sum(v) / C + 1e-5f);
  if (lane == 0) { mean[row] = m; rstd[row] = r; }
  float* o = out + row * C;
  for (int i = lane; i < C; i += WARP) o[i] = (x[i] - m) * r * weight[i] + bias[i];
}

// out = inp @ weight^T + bias, 16x16 tiles in shared memory.
extern "C" __global__ void matmul_forward(float* out, const float* inp, const float* weight,
                                          const float* bias, int BT, int C, int OC) {
  __shared__ float a[16][17];
  __shared__ float w[16][17];
  int row = blockIdx.y * 16 + threadIdx.y;   // of BT
  int col = blockIdx.x * 16 + threadIdx.x;   // of OC
  float acc = 0.0f;
  for (int k0 = 0; k0 < C; k0 += 16) {
    a[threadIdx.y][threadIdx.x] = (row < BT && k0 + threadIdx.x < C) ? inp[row * C + k0 + threadIdx.x] : 0.0f;
    int wr = blockIdx.x * 16 + threadIdx.y;
    w[threadIdx.y][threadIdx.x] = (wr < OC && k0 + threadIdx.x < C) ? weight[wr * C + k0 + threadIdx.x] : 0.0f;
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc = fmaf(a[threadIdx.y][k], w[threadIdx.x][k], acc);
    __syncthreads();
  }
  if (row < BT && col < OC) out[row * OC + col] = acc + (bias ? bias[col] : 0.0f);
}

// Causal softmax of attention scores, one block per row: block max and sum
// through shared memory and warp reductions.
extern "C" __global__ void softmax_forward(float* out, const float* inp, int N, int T) {
  __shared__ float part[WARP];
  int row = blockIdx.x;
  int t = row % T;
  const float* x = inp + row * T;
  int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP, nwarps = blockDim.x / WARP;
  float m = -INFINITY;
  for (int i = threadIdx.x; i <= t; i += blockDim.x) m = fmaxf(m, x[i]);
  m = warp_max(m);
  if (lane == 0) part[warp] = m;
  __syncthreads();
  if (warp == 0) {
    float v = lane < nwarps ? part[lane] : -INFINITY;
    v = warp_max(v);
    if (lane == 0) part[0] = v;
  }
  __syncthreads();
  m = part[0];
  __syncthreads();
  float s = 0.0f;
  for (int i = threadIdx.x; i <= t; i += blockDim.x) s += expf(x[i] - m);
  s = warp_sum(s);
  if (lane == 0) part[warp] = s;
  __syncthreads();
  if (warp == 0) {
    float v = lane < nwarps ? part[lane] : 0.0f;
    v = warp_sum(v);
    if (lane == 0) part[0] = v;
  }
  __syncthreads();
  s = part[0];
  for (int i = threadIdx.x; i < T; i += blockDim.x)
    out[row * T + i] = i <= t ? expf(x[i] - m) / s : 0.0f;
}

// GELU (tanh approximation), elementwise.
extern "C" __global__ void gelu_forward(float* out, const float* inp, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    float x = inp[i];
    float c = 0.7978845608f * (x + 0.044715f * x * x * x);
    out[i] = 0.5f * x * (1.0f + tanhf(c));
  }
}

// out = a + b, elementwise.
extern "C" __global__ void residual_forward(float* out, const float* a, const float* b, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) out[i] = a[i] + b[i];
}

// Cross-entropy loss per position from probabilities.
extern "C" __global__ void crossentropy_forward(float* losses, const float* probs,
                                                const int* targets, int BT, int V) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < BT) losses[i] = -logf(probs[i * V + targets[i]]);
}

// One warp per row: the row's sum of squares (a gradient-norm pass); lanes
// beyond the row count leave before the warp reduction - per thread, not per
// warp, so a constrained kernel cannot emulate it (refused).
extern "C" __global__ void row_norm_per_thread_exit(float* out, const float* inp, int N, int C) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  float v = 0.0f;
  for (int c = 0; c < C; ++c) v += inp[i * C + c] * inp[i * C + c];
  v = warp_sum(v);
  if (threadIdx.x % WARP == 0) out[i / WARP] = v;
}

// AdamW update, elementwise with an early exit.
extern "C" __global__ void adamw_kernel(float* params, const float* grads, float* m, float* v,
                                        long n, float lr, float b1, float b2, float b1c,
                                        float b2c, float eps, float wd) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float g = grads[i];
  float mi = b1 * m[i] + (1.0f - b1) * g;
  float vi = b2 * v[i] + (1.0f - b2) * g * g;
  m[i] = mi;
  v[i] = vi;
  params[i] -= lr * ((mi / b1c) / (sqrtf(vi / b2c) + eps) + wd * params[i]);
}
