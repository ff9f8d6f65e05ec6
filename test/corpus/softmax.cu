// Row-wise softmax. One warp per row; max and sum via warp shuffle reductions.
// Float sums use a fixed butterfly order (deterministic, but not a sequential sum).
// Also compiled with --use_fast_math (softmax_fastmath.*.ptx): expf -> ex2.approx.

__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// out[r][c] = exp(in[r][c] - max_c in[r][.]) / sum_c exp(in[r][c] - max)
// Launch blockDim.x == 32 * k; warp w of block b handles row b*k + w.
extern "C" __global__ void softmax_rows(int rows, int cols, const float* in, float* out) {
  int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (row >= rows) return;   // whole warp exits together
  const float* x = in + (size_t)row * cols;
  float* y = out + (size_t)row * cols;
  float m = -INFINITY;
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, x[c]);
  m = warp_max(m);
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += expf(x[c] - m);
  s = warp_sum(s);
  float inv = 1.0f / s;
  for (int c = lane; c < cols; c += 32) y[c] = expf(x[c] - m) * inv;
}

// Log-softmax: out[r][c] = in[r][c] - max - log(sum exp(in[r][.] - max)), same launch shape
extern "C" __global__ void log_softmax_rows(int rows, int cols, const float* in, float* out) {
  int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float* x = in + (size_t)row * cols;
  float m = -INFINITY;
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, x[c]);
  m = warp_max(m);
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += __expf(x[c] - m);   // intrinsic: always approx
  float lse = m + logf(warp_sum(s));
  for (int c = lane; c < cols; c += 32) out[(size_t)row * cols + c] = x[c] - lse;
}
