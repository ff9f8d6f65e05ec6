// Kernels of test/Runtime/CPU/lockstep.test: grid-stride loops between
// barriers, which the CPU backend's warp functions run with the warp's
// lanes in lock step (lib/Compiler/LockstepLanes.cpp) where the kernel
// cannot tell the order of its threads, and lane by lane where it can.
// Regenerate the PTX with ./regen.sh.

// hist[b] += the number of i < n with data[i] == b: per-block bins in shared
// memory (shared atomics whose old value is unused), one global atomic per
// bin. With n not a multiple of the grid's size the lanes run different
// numbers of iterations.
extern "C" __global__ void hist_tail(int n, const unsigned char *data,
                                     unsigned *hist) {
  __shared__ unsigned bins[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    bins[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x)
    atomicAdd(&bins[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (bins[b])
      atomicAdd(&hist[b], bins[b]);
}

// Each thread's loop writes scratch[i] = 3 * in[i] + 1 and counts in[i] % 64
// in shared bins; after its loop (no barrier between) it reads back what it
// wrote first, scratch[gid], into out[gid]: the lanes leave the loop at
// different iterations, and each must write after its own loop. Then the
// bins go to counts.
extern "C" __global__ void write_after_loop(int n, const int *in,
                                            int *scratch, int *out,
                                            unsigned *counts) {
  __shared__ unsigned bins[64];
  if (threadIdx.x < 64)
    bins[threadIdx.x] = 0;
  __syncthreads();
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = gid; i < n; i += blockDim.x * gridDim.x) {
    scratch[i] = 3 * in[i] + 1;
    atomicAdd(&bins[in[i] & 63], 1u);
  }
  if (gid < n)
    out[gid] = scratch[gid] + 7;
  __syncthreads();
  if (threadIdx.x < 64)
    atomicAdd(&counts[threadIdx.x], bins[threadIdx.x]);
}

// The same loop reading in[i] for i < n (i < n0 in block 0), where `in` may
// be shorter than n: the first thread in thread order to read past its end
// must be the one reported, though another lane of its warp gets there in
// an earlier iteration.
extern "C" __global__ void oob_late(int n0, int n, const int *in,
                                    unsigned *counts) {
  __shared__ unsigned bins[64];
  if (threadIdx.x < 64)
    bins[threadIdx.x] = 0;
  __syncthreads();
  int end = blockIdx.x == 0 ? n0 : n;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < end;
       i += blockDim.x * gridDim.x)
    atomicAdd(&bins[in[i] & 63], 1u);
  __syncthreads();
  if (threadIdx.x < 64)
    atomicAdd(&counts[threadIdx.x], bins[threadIdx.x]);
}

// Atomics whose old value is used: the slots each thread gets depend on the
// order the threads run in, so these loops must run lane by lane (as the
// fibers run them), for the outputs to be the same bit for bit.
extern "C" __global__ void atomic_slots(int n, const int *in, int *out,
                                        unsigned *next, int *firsts) {
  __shared__ unsigned seen[64];
  if (threadIdx.x < 64)
    seen[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x) {
    unsigned slot = atomicAdd(next, 1u);
    out[slot] = in[i];
    if (atomicAdd(&seen[in[i] & 63], 1u) == 0)
      firsts[blockIdx.x * 64 + (in[i] & 63)] = i;
  }
}

// The same with shared atomics only (a plain load and store on the host,
// which nothing in the LLVM IR tells from other accesses): the first 64
// values in the order the threads ran, per block.
extern "C" __global__ void shared_slots(int n, const int *in, int *out) {
  __shared__ unsigned next;
  __shared__ int order[64];
  if (threadIdx.x == 0)
    next = 0;
  if (threadIdx.x < 64)
    order[threadIdx.x] = -1;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x) {
    unsigned slot = atomicAdd(&next, 1u);
    if (slot < 64)
      order[slot] = in[i];
  }
  __syncthreads();
  if (threadIdx.x < 64)
    out[blockIdx.x * 64 + threadIdx.x] = order[threadIdx.x];
}

// A do-while over the grid: each thread's first iteration runs even where
// its index is already n or more (`in` has an element for every thread).
extern "C" __global__ void do_while(int n, const int *in, unsigned *counts) {
  __shared__ unsigned bins[64];
  if (threadIdx.x < 64)
    bins[threadIdx.x] = 0;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  do {
    atomicAdd(&bins[in[i] & 63], 1u);
    i += blockDim.x * gridDim.x;
  } while (i < n);
  __syncthreads();
  if (threadIdx.x < 64)
    atomicAdd(&counts[threadIdx.x], bins[threadIdx.x]);
}
