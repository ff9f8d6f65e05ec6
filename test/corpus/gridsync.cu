// Grid-wide synchronisation with cooperative groups (cg::this_grid().sync()),
// as a cooperative launch runs it (cudaLaunchCooperativeKernel: every block
// resident at once). Launched without cooperation, grid.sync() traps.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// *out = sum of in[0..n): each block sums a grid-stride slice (a fixed tree
// in shared memory) into partial[blockIdx.x]; after grid.sync() thread 0 of
// block 0 adds the partials in block order. blockDim.x == 256.
extern "C" __global__ void grid_sum(const float* in, float* partial,
                                    float* out, int n) {
  cg::grid_group grid = cg::this_grid();
  __shared__ float s[256];
  float v = 0.0f;
  for (int i = grid.thread_rank(); i < n; i += grid.size()) v += in[i];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
  grid.sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    float t = 0.0f;
    for (unsigned b = 0; b < gridDim.x; ++b) t += partial[b];
    *out = t;
  }
}

// `steps` rounds of v[i] <- (v[i-1] + v[i]) + v[i+1] (0 outside [0, n)),
// from x into y, then y into x, ..., with grid.sync() after each round: the
// result is in x for an even `steps`, in y for an odd one.
extern "C" __global__ void grid_smooth(float* x, float* y, int n, int steps) {
  cg::grid_group grid = cg::this_grid();
  for (int s = 0; s < steps; ++s) {
    const float* src = (s & 1) ? y : x;
    float* dst = (s & 1) ? x : y;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) {
      float l = i > 0 ? src[i - 1] : 0.0f;
      float r = i + 1 < n ? src[i + 1] : 0.0f;
      dst[i] = (l + src[i]) + r;
    }
    grid.sync();
  }
}
