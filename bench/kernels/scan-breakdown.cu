// Variants of wooly-cpu-bench's block_scan_loop_i32 (cpu-bench.cu) that
// bench/scan-breakdown.sh times next to it on the CPU backend, to tell where
// its time goes: the same barrier loop with less work in it each time.

// Without the masked second read: one read and one write per round.
extern "C" __global__ void scan_copy(int n, const int *in, int *out) {
  __shared__ int buf[2][1024];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int cur = 0;
  buf[cur][tid] = (i < n) ? in[i] : 0;
  __syncthreads();
  for (int off = 1; off < blockDim.x; off <<= 1) {
    int v = buf[cur][tid];
    buf[cur ^ 1][tid] = v + off;
    cur ^= 1;
    __syncthreads();
  }
  if (i < n)
    out[i] = buf[cur][tid];
}

// Only the barriers: the cost of a round itself.
extern "C" __global__ void scan_barriers(int n, const int *in, int *out) {
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int cur = 0;
  for (int off = 1; off < blockDim.x; off <<= 1) {
    cur ^= 1;
    __syncthreads();
  }
  if (i < n)
    out[i] = cur;
}
