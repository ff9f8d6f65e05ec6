// Block reductions: shared-memory tree + warp-shuffle final stage, and warp vote ops.
// Integer sums are deterministic. The float sum is deterministic for a fixed
// blockDim (fixed reduction tree), but differs from a sequential C++ sum by rounding.

#define BLOCK 256

__device__ __forceinline__ float warp_sum_down(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

__device__ __forceinline__ int warp_sum_xor(int v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// out[blockIdx.x] = sum of in[] over this block's BLOCK elements (launch with blockDim.x == 256)
extern "C" __global__ void block_sum_f32(int n, const float* in, float* out) {
  __shared__ float s[BLOCK];
  int tid = threadIdx.x;
  int i = blockIdx.x * BLOCK + tid;
  s[tid] = (i < n) ? in[i] : 0.0f;
  __syncthreads();
  for (int stride = BLOCK / 2; stride >= 32; stride >>= 1) {
    if (tid < stride) s[tid] += s[tid + stride];
    __syncthreads();
  }
  if (tid < 32) {
    float v = warp_sum_down(s[tid]);
    if (tid == 0) out[blockIdx.x] = v;
  }
}

// out[blockIdx.x] = sum of in[] over the block (int, deterministic); warp stage uses xor shuffles
// (blockDim.x must be a multiple of 32, at most 256)
extern "C" __global__ void block_sum_i32(int n, const int* in, int* out) {
  __shared__ int warp_part[BLOCK / 32];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int v = (i < n) ? in[i] : 0;
  v = warp_sum_xor(v);
  if ((tid & 31) == 0) warp_part[tid >> 5] = v;
  __syncthreads();
  if (tid < 32) {
    int w = (tid < (int)(blockDim.x >> 5)) ? warp_part[tid] : 0;
    w = warp_sum_xor(w);
    if (tid == 0) out[blockIdx.x] = w;
  }
}

// Per warp (n must be a multiple of 32 so every warp is full): out[4*warp + k] =
// k=0: __ballot_sync mask of (in>0), k=1: __any_sync(in<0), k=2: __all_sync(in!=0),
// k=3: __activemask() (0xffffffff for a full, converged warp; not guaranteed by the
// CUDA model under independent thread scheduling, so treat as informative only).
extern "C" __global__ void warp_vote(int n, const int* in, unsigned* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned active = __activemask();
  int v = in[i];
  unsigned full = 0xffffffffu;
  unsigned ballot = __ballot_sync(full, v > 0);
  int any = __any_sync(full, v < 0);
  int all = __all_sync(full, v != 0);
  if ((threadIdx.x & 31) == 0) {
    unsigned w = i >> 5;
    out[4 * w + 0] = ballot;
    out[4 * w + 1] = (unsigned)any;
    out[4 * w + 2] = (unsigned)all;
    out[4 * w + 3] = active;
  }
}
