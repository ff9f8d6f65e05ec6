// Asynchronous global->shared copies (cp.async on sm_80+). Deterministic.
#include <cuda_pipeline.h>

#define CHUNK 256

// out[i] = 2 * in[i]; each block copies its 256 floats into shared memory with
// __pipeline_memcpy_async (4-byte cp.async), commits, waits, then computes.
// Launch blockDim.x == 256; n must be a multiple of 256.
extern "C" __global__ void cp_async_scale(int n, const float* in, float* out) {
  __shared__ float s[CHUNK];
  int t = threadIdx.x;
  int i = blockIdx.x * CHUNK + t;
  if (i < n) __pipeline_memcpy_async(&s[t], &in[i], sizeof(float));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  if (i < n) out[i] = 2.0f * s[CHUNK - 1 - t];   // read another thread's element
}

// Double-buffered 16-byte cp.async (float sums in fixed k order, deterministic).
// Each block (blockDim.x == 64) sums `tiles` consecutive 256-float tiles of its row:
// out[b*256 + j] = sum_{k<tiles} in[(b*tiles + k)*256 + j].
extern "C" __global__ void cp_async_pipelined_sum(int tiles, const float* in, float* out) {
  __shared__ __align__(16) float s[2][CHUNK];
  int t = threadIdx.x;                      // 64 threads, each moves one float4
  const float* base = in + (size_t)blockIdx.x * tiles * CHUNK;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  __pipeline_memcpy_async(&s[0][4 * t], base + 4 * t, 16);
  __pipeline_commit();
  for (int k = 0; k < tiles; ++k) {
    if (k + 1 < tiles)
      __pipeline_memcpy_async(&s[(k + 1) & 1][4 * t], base + (k + 1) * CHUNK + 4 * t, 16);
    __pipeline_commit();
    __pipeline_wait_prior(1);               // tile k has landed
    __syncthreads();
    float4 v = *reinterpret_cast<float4*>(&s[k & 1][4 * t]);
    acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
    __syncthreads();                        // buffer may be overwritten next iteration
  }
  reinterpret_cast<float4*>(out + (size_t)blockIdx.x * CHUNK)[t] = acc;
}
