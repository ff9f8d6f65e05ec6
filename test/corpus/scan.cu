// Inclusive prefix sums. Integer scans are deterministic; the float block scan uses a
// fixed (Hillis-Steele) addition order that differs from a sequential sum by rounding.

#define SCAN_BLOCK 256

// out[i] = in[b*256] + ... + in[i] within each block b (Hillis-Steele, double-buffered
// shared memory; launch blockDim.x == 256)
extern "C" __global__ void block_scan_f32(int n, const float* in, float* out) {
  __shared__ float buf[2][SCAN_BLOCK];
  int tid = threadIdx.x;
  int i = blockIdx.x * SCAN_BLOCK + tid;
  int cur = 0;
  buf[cur][tid] = (i < n) ? in[i] : 0.0f;
  __syncthreads();
  for (int off = 1; off < SCAN_BLOCK; off <<= 1) {
    float v = buf[cur][tid];
    if (tid >= off) v += buf[cur][tid - off];
    buf[cur ^ 1][tid] = v;
    cur ^= 1;
    __syncthreads();
  }
  if (i < n) out[i] = buf[cur][tid];
}

// out[i] = inclusive prefix sum of in[] within each 32-lane warp (int, __shfl_up_sync;
// blockDim.x must be a multiple of 32)
extern "C" __global__ void warp_scan_i32(int n, const int* in, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = (i < n) ? in[i] : 0;
  for (int off = 1; off < 32; off <<= 1) {
    int u = __shfl_up_sync(0xffffffffu, v, off);
    if (lane >= off) v += u;
  }
  if (i < n) out[i] = v;
}

// out[i] = inclusive prefix sum within the block (int): warp scans + scan of warp totals
// (blockDim.x must be a multiple of 32, at most 1024)
extern "C" __global__ void block_scan_i32(int n, const int* in, int* out) {
  __shared__ int warp_tot[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int v = (i < n) ? in[i] : 0;
  for (int off = 1; off < 32; off <<= 1) {
    int u = __shfl_up_sync(0xffffffffu, v, off);
    if (lane >= off) v += u;
  }
  if (lane == 31) warp_tot[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int nw = (blockDim.x + 31) >> 5;
    int t = (lane < nw) ? warp_tot[lane] : 0;
    for (int off = 1; off < 32; off <<= 1) {
      int u = __shfl_up_sync(0xffffffffu, t, off);
      if (lane >= off) t += u;
    }
    warp_tot[lane] = t;
  }
  __syncthreads();
  if (warp > 0) v += warp_tot[warp - 1];
  if (i < n) out[i] = v;
}
