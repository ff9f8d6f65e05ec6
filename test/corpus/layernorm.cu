// Row-wise layer normalization. One warp per row; mean/variance via warp shuffles.
// Float sums use a fixed butterfly order (deterministic, but not a sequential sum).
// Also compiled with --use_fast_math (layernorm_fastmath.*.ptx).

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// y[r][c] = (x[r][c] - mean_r) * rsqrt(var_r + eps) * gamma[c] + beta[c]
// (two-pass: mean, then biased variance). Launch blockDim.x == 32 * k; one warp per row.
extern "C" __global__ void layernorm_rows(int rows, int cols, float eps, const float* x,
                                          const float* gamma, const float* beta, float* y) {
  int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float* xr = x + (size_t)row * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += xr[c];
  float mean = warp_sum(s) / cols;
  float v = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    float d = xr[c] - mean;
    v += d * d;
  }
  float var = warp_sum(v) / cols;
  float rstd = rsqrtf(var + eps);
  for (int c = lane; c < cols; c += 32)
    y[(size_t)row * cols + c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}

// RMS norm: y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) * gamma[c], same launch shape
extern "C" __global__ void rmsnorm_rows(int rows, int cols, float eps, const float* x,
                                        const float* gamma, float* y) {
  int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float* xr = x + (size_t)row * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += xr[c] * xr[c];
  float r = 1.0f / sqrtf(warp_sum(s) / cols + eps);
  for (int c = lane; c < cols; c += 32) y[(size_t)row * cols + c] = xr[c] * r * gamma[c];
}
