// Kernels of bench/wooly-cpu-bench that the own corpus (test/corpus) lacks:
// an inclusive block scan whose barriers lie in a loop with a block-uniform
// bound, and a softmax with one block per row (row max and sum by warp
// shuffles, the warps' parts combined through shared memory). Regenerate the
// PTX with ./regen.sh.

// out[i] = in[b*blockDim.x] + ... + in[i] within each block b (int,
// Hillis-Steele, double-buffered shared memory; the loop runs log2(blockDim.x)
// times, so it is not unrolled; blockDim.x <= 1024)
extern "C" __global__ void block_scan_loop_i32(int n, const int *in, int *out) {
  __shared__ int buf[2][1024];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int cur = 0;
  buf[cur][tid] = (i < n) ? in[i] : 0;
  __syncthreads();
  for (int off = 1; off < blockDim.x; off <<= 1) {
    int v = buf[cur][tid];
    if (tid >= off)
      v += buf[cur][tid - off];
    buf[cur ^ 1][tid] = v;
    cur ^= 1;
    __syncthreads();
  }
  if (i < n)
    out[i] = buf[cur][tid];
}

// The same scan as CUB's BlockScan (its WARP_SCANS algorithm) makes it: each
// warp scans its 32 values by shuffles, warp 0 scans the warps' totals from
// shared memory, and each warp adds the totals of the warps before it
// (blockDim.x a multiple of 32, at most 1024).
extern "C" __global__ void block_scan_warps_i32(int n, const int *in,
                                                int *out) {
  __shared__ int totals[32];
  int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  int i = blockIdx.x * blockDim.x + tid;
  int v = (i < n) ? in[i] : 0;
  for (int d = 1; d < 32; d <<= 1) {
    int u = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d)
      v += u;
  }
  if (lane == 31)
    totals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int warps = blockDim.x >> 5;
    int t = lane < warps ? totals[lane] : 0;
    for (int d = 1; d < 32; d <<= 1) {
      int u = __shfl_up_sync(0xffffffffu, t, d);
      if (lane >= d)
        t += u;
    }
    if (lane < warps)
      totals[lane] = t;
  }
  __syncthreads();
  if (warp > 0)
    v += totals[warp - 1];
  if (i < n)
    out[i] = v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// out[r][c] = exp(in[r][c] - max_c in[r][.]) / sum_c exp(in[r][c] - max), one
// block per row (blockDim.x a multiple of 32, at most 1024): each thread
// takes the columns c = threadIdx.x + k * blockDim.x; the warps reduce their
// threads' parts with shuffles, warp 0 the warps' parts from shared memory.
extern "C" __global__ void softmax_block_rows(int rows, int cols,
                                              const float *in, float *out) {
  __shared__ float part[32];
  __shared__ float result;
  int row = blockIdx.x;
  if (row >= rows)
    return; // the whole block leaves together
  int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  int nwarps = blockDim.x >> 5;
  const float *x = in + (size_t)row * cols;
  float *y = out + (size_t)row * cols;

  float m = -INFINITY;
  for (int c = tid; c < cols; c += blockDim.x)
    m = fmaxf(m, x[c]);
  m = warp_max(m);
  if (lane == 0)
    part[warp] = m;
  __syncthreads();
  if (warp == 0) {
    float v = lane < nwarps ? part[lane] : -INFINITY;
    v = warp_max(v);
    if (lane == 0)
      result = v;
  }
  __syncthreads();
  m = result;
  __syncthreads();

  float s = 0.0f;
  for (int c = tid; c < cols; c += blockDim.x)
    s += expf(x[c] - m);
  s = warp_sum(s);
  if (lane == 0)
    part[warp] = s;
  __syncthreads();
  if (warp == 0) {
    float v = lane < nwarps ? part[lane] : 0.0f;
    v = warp_sum(v);
    if (lane == 0)
      result = v;
  }
  __syncthreads();
  float inv = 1.0f / result;
  for (int c = tid; c < cols; c += blockDim.x)
    y[c] = expf(x[c] - m) * inv;
}
