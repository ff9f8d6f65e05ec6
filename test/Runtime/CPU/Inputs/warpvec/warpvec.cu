// Kernels for test/Runtime/CPU/warp-vectors.test: regions that the CPU
// backend's warp functions run as whole-warp vector code
// (lib/Conversion/WoolyToLLVM/WarpVector.cpp), each taking one of its
// paths: branches as masks of lanes, a store of several lanes to one
// address (the last lane's value stays), shared memory read and written at
// addresses that differ between lanes (gathers and scatters), divisions in
// lanes a branch leaves out, lanes that leave a region for different cuts,
// an index whose 32 lanes wrap around (the run-time check that sends the
// warp to the loop over its lanes), and shuffle chains. The test runs
// every launch of launches.txt with warp functions, thread by thread and
// as fibers, and compares every buffer.

// A warp reduction and scan by constant shuffles, with lane conditions in
// between (masked adds), then several lanes storing to one shared word: the
// highest of them wins, as when the lanes run one after another.
extern "C" __global__ void scan_and_last(const int *in, int *out) {
  __shared__ int last[8];
  __shared__ int total[8];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  int v = in[i];
  for (int off = 1; off < 32; off <<= 1) {
    int t = __shfl_up_sync(0xffffffffu, v, off);
    if (lane >= off)
      v += t;
  }
  // Lanes whose scan is odd, a data-dependent set: the last one's value.
  if (v & 1)
    last[warp] = v * 3 + lane;
  int s = v;
  for (int off = 16; off > 0; off >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, off);
  if (lane == 31)
    total[warp] = s;
  __syncthreads();
  out[i] = v ^ last[warp] ^ (total[warp] << 1);
}

// Divisions in the lanes a branch takes, by values that are zero in the
// lanes it leaves out; a select-like join of the two sides.
extern "C" __global__ void masked_div(const int *in, const int *d, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = in[i];
  int e = d[i];
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  int q = (e ^ v) % 4; // Zero in about one lane in seven.
  int r;
  if (q != 0)
    r = v / q + v % q;
  else
    r = v * 7;
  r += __shfl_xor_sync(0xffffffffu, r, 2);
  unsigned u = (unsigned)r;
  if (lane & 1)
    u = u / (unsigned)(q | 1) + u % 13u;
  out[i] = (int)u;
}

// Shared memory at addresses that differ between lanes in no fixed
// pattern: a scatter (one store a region) and, after the barrier, gathers.
extern "C" __global__ void shared_perm(const int *in, int *out) {
  __shared__ int s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int tid = threadIdx.x;
  int v = in[i];
  v += __shfl_down_sync(0xffffffffu, v, 3);
  s[(tid * 37 + 11) & 255] = v;
  __syncthreads();
  int a = s[(v & 0x7fffffff) % blockDim.x];
  a += __shfl_xor_sync(0xffffffffu, a, 4);
  int b = s[(tid + 1) % blockDim.x];
  out[i] = a + b * 5;
}

// Lanes that leave a region for different shuffles (each half of the warp
// its own mask): the warp function hands each lane's next region and
// request to the runtime.
extern "C" __global__ void split_shuffles(const int *in, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = in[i];
  v += __shfl_xor_sync(0xffffffffu, v, 16);
  if (lane & 1)
    v += __shfl_xor_sync(0xaaaaaaaau, v, 2);
  else
    v -= __shfl_xor_sync(0x55555555u, v, 4);
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  out[i] = v;
}

// An index that is `base + lane` where the base is a parameter: its 64-bit
// form is linear only where the 32 lanes do not wrap around, which the
// vector code checks at run time (else the loop over the lanes runs it).
extern "C" __global__ void wrap_index(const int *in, long long *out,
                                      unsigned base) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = in[i];
  v += __shfl_xor_sync(0xffffffffu, v, 8);
  unsigned x = base + (unsigned)lane * 3u;
  long long y = (long long)x * 5 + v;
  int z = (int)(base >> 3) + lane;
  y += (long long)z;
  y += __shfl_xor_sync(0xffffffffu, (int)y, 1);
  out[i] = y;
}

// Out of bounds in a vector region (warp-vectors.test runs these alone):
// a shared read whose index grows 40 words a lane (lane 8 of the first
// warp is the first thread past the block's shared memory), and a global
// store past the end of `out` in the last block's last warp. Either way
// the vector code leaves the region to the loop over the lanes, which
// reports the first thread, as thread-by-thread execution does.
extern "C" __global__ void shared_oob(const int *in, int *out) {
  __shared__ int s[64];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  s[threadIdx.x & 63] = in[i];
  __syncthreads();
  int v = in[i];
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  int t = s[lane * 40];
  t += __shfl_xor_sync(0xffffffffu, t, 2);
  out[i] = v + t;
}

extern "C" __global__ void store_oob(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  out[i + n] = v;
}

// A block scan whose barriers lie in a loop bounded by blockDim.x
// (bench/kernels/cpu-bench.cu's block_scan_loop_i32): the loop's region
// reads `cur` and `off` from the frame (checked to be the same in every
// lane, then used once), loads and stores shared memory (after a check that
// no lane stores where one loaded), and holds the path that skips the loop
// (blockDim.x < 2) under a uniform branch.
extern "C" __global__ void scan_loop(int n, const int *in, int *out) {
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

// The scan with its masked read moved `shift` words up (0: the scan): with
// 289, the first round's read of warp 7 (threads 224-255) lies past the
// 2 KiB window in every lane, while warps 0-6 read inside it; with 300,
// warp 6's lanes from thread 213 on read past it and its lanes below do
// not. The window check of a contiguous access is made on the first and
// the last lane: either way the loop over the lanes reports the first
// thread in thread order.
extern "C" __global__ void scan_shifted(int shift, const int *in, int *out) {
  __shared__ int buf[2][256];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int cur = 0;
  buf[cur][tid] = in[i];
  __syncthreads();
  for (int off = 1; off < blockDim.x; off <<= 1) {
    int v = buf[cur][tid];
    if (tid >= off)
      v += buf[cur][tid - off + shift];
    buf[cur ^ 1][tid] = v;
    cur ^= 1;
    __syncthreads();
  }
  out[i] = buf[cur][tid];
}

// The scan's second read without its guard: in the first round thread 0
// reads the word before the array. The compiler bounds the guarded read's
// offset (SharedOffsets.h) and drops its check; this one it cannot bound,
// so its check stays and reports thread 0 in every mode.
extern "C" __global__ void scan_unguarded(const int *in, int *out) {
  __shared__ int buf[2][256];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int cur = 0;
  buf[cur][tid] = in[i];
  __syncthreads();
  for (int off = 1; off < blockDim.x; off <<= 1) {
    int v = buf[cur][tid] + buf[cur][tid - off];
    buf[cur ^ 1][tid] = v;
    cur ^= 1;
    __syncthreads();
  }
  out[i] = buf[cur][tid];
}

// A region that loads a neighbour's shared word and then stores its own:
// lane by lane, lane 1 reads what lane 0 just stored, so the vector code
// (all loads, then all stores) must see the overlap at run time and leave
// the region to the loop over the lanes.
extern "C" __global__ void alias_swap(const int *in, int *out) {
  __shared__ int s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int tid = threadIdx.x;
  s[tid] = in[i];
  __syncthreads();
  int v = in[i];
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  int t = s[tid ^ 1];
  s[tid] = t + v;
  v += __shfl_xor_sync(0xffffffffu, t, 2);
  __syncthreads();
  out[i] = s[tid] ^ v;
}
