// Kernels for test/Runtime/CPU/warp-functions.test: each takes one of the
// paths of the CPU backend's warp functions (WoolyToLLVM.cpp,
// RegionExecutor.cpp) and its way back to thread-by-thread execution. The
// test runs every launch of launches.txt with warp functions, thread by
// thread, and as fibers, and compares every buffer.

// A shuffle whose source lane is data (not a compile-time constant): the
// warp function's general shuffle loop.
extern "C" __global__ void shfl_data_lane(const int *in, const int *src,
                                          int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  int s = src[i] & 31;
  v += __shfl_sync(0xffffffffu, v, s);
  v += __shfl_up_sync(0xffffffffu, v, (src[i] >> 5) & 7);
  out[i] = v;
}

// Half a warp shuffles (a partial mask): the runtime completes it; the
// full-warp shuffle after it goes back to the warp function, whose lanes
// then read the runtime's results.
extern "C" __global__ void shfl_half_warp(const int *in, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = in[i];
  if (lane < 16)
    v += __shfl_down_sync(0x0000ffffu, v, 1, 16);
  v += __shfl_xor_sync(0xffffffffu, v, 8);
  out[i] = v;
}

// Warps that run a loop of shuffles a different number of times, then meet
// at a barrier: lockstep ends in the middle of the block.
extern "C" __global__ void uneven_warps(const int *in, int *out) {
  __shared__ int part[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  int v = in[i];
  for (int k = 0; k <= (warp + blockIdx.x) % 3; ++k)
    v += __shfl_xor_sync(0xffffffffu, v, 1 << k);
  if (lane == 0)
    part[warp] = v;
  __syncthreads();
  int sum = 0;
  for (int w = 0; w < (int)(blockDim.x >> 5); ++w)
    sum += part[w];
  out[i] = v ^ sum;
}

// Some warps return before the barrier the others wait at (a barrier
// completes once every thread that has not exited is there).
extern "C" __global__ void early_return(const int *in, int *out, int n) {
  __shared__ int first[1024];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  v += __shfl_down_sync(0xffffffffu, v, 2);
  if (((threadIdx.x >> 5) & 1) && blockIdx.x % 2)
    return;
  first[threadIdx.x] = v;
  __syncthreads();
  if (i < n)
    out[i] = v + first[(threadIdx.x + 32) % blockDim.x];
}

// Votes and a ballot in a loop (collectives the runtime completes), a
// shuffle between them, blocks whose last warp is partial.
extern "C" __global__ void votes(const int *in, unsigned *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  unsigned acc = 0;
  for (int k = 0; k < 5; ++k) {
    unsigned b = __ballot_sync(__activemask(), (v >> k) & 1);
    acc = acc * 31 + b + __popc(b);
    v += __shfl_xor_sync(__activemask(), v, 1 << k);
    acc ^= __any_sync(__activemask(), v < 0) ? 7u : 3u;
  }
  if (i < n)
    out[i] = acc ^ (unsigned)v;
}

// Shared-memory float atomics between shuffles: the order in which threads
// add is visible in the bits of the sum, so warps must not run ahead.
extern "C" __global__ void atomic_order(const float *in, float *out) {
  __shared__ float sum;
  if (threadIdx.x == 0)
    sum = 0.f;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = in[i];
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  atomicAdd(&sum, v * 1.0001f);
  v += __shfl_xor_sync(0xffffffffu, v, 2);
  atomicAdd(&sum, v);
  __syncthreads();
  out[i] = v + sum;
}

// A 2-D block whose rows are shorter than a warp (a warp spans rows).
extern "C" __global__ void narrow_rows(const int *in, int *out, int w) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int v = in[y * w + x];
  v += __shfl_xor_sync(0xffffffffu, v, 4) * (threadIdx.y + 1);
  __syncthreads();
  v += __shfl_down_sync(0xffffffffu, v, 3);
  out[y * w + x] = v;
}

// Shuffles whose mode, lane and width are constants, in every mode and in
// segments narrower than the warp: each is completed by the warp function
// as a fixed permutation of the lanes' values.
extern "C" __global__ void shfl_constant_modes(const int *in, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  v += __shfl_up_sync(0xffffffffu, v, 3, 16);
  v ^= __shfl_down_sync(0xffffffffu, v, 5, 8);
  v += __shfl_sync(0xffffffffu, v, 7, 32);
  v -= __shfl_sync(0xffffffffu, v, 21, 4);
  v += __shfl_xor_sync(0xffffffffu, v, 16);
  v ^= __shfl_down_sync(0xffffffffu, v, 31);
  out[i] = v;
}

// Warps (and, in the second phase, halves of warps) that wait at different
// barriers: in lockstep, a warp function returns another barrier than the
// warps before it, or 0 where its lanes stop at different ones; the
// runtime must give every lane its warp's region before going on thread
// by thread. bar.sync counts arrivals, whichever barrier they are at.
extern "C" __global__ void split_barriers(const int *in, int *out) {
  __shared__ int s[256];
  int t = threadIdx.x, warp = t >> 5;
  int i = blockIdx.x * blockDim.x + t;
  int v = in[i];
  s[t] = v;
  if ((warp + blockIdx.x) & 1) {
    __syncthreads();
    v += s[(t + 37) % blockDim.x];
  } else {
    __syncthreads();
    v ^= s[(t + 5) % blockDim.x];
  }
  __syncthreads();
  s[t] = v;
  if (t & 16) {
    __syncthreads();
    v -= s[(t + 64) % blockDim.x];
  } else {
    __syncthreads();
    v += 3 * s[(t + 1) % blockDim.x];
  }
  out[i] = v;
}
