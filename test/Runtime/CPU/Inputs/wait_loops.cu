// Loops that wait for another thread's write, and loops that do not
// (test/Runtime/CPU/wait-loops.test). Made into wait_loops.ptx with
//   nvcc -arch=sm_80 -ptx wait_loops.cu -o wait_loops.ptx

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Thread 0 polls with an atomic that changes nothing until thread 32, a
// later warp, sets the flag.
extern "C" __global__ void flag_atomic(int *flag, int *out) {
  if (threadIdx.x == 0) {
    while (atomicAdd(flag, 0) == 0) {
    }
    out[0] = 1;
  } else if (threadIdx.x == 32) {
    atomicExch(flag, 1);
  }
}

// A shared-memory handoff through a volatile flag: the last thread writes
// the data, then the flag; thread 0 waits for the flag and reads the data.
extern "C" __global__ void flag_shared(int *out) {
  __shared__ int data;
  __shared__ volatile int ready;
  if (threadIdx.x == 0)
    ready = 0;
  __syncthreads();
  if (threadIdx.x == blockDim.x - 1) {
    data = 42;
    __threadfence_block();
    ready = 1;
  }
  if (threadIdx.x == 0) {
    while (ready == 0) {
    }
    __threadfence_block();
    out[0] = data;
  }
}

// Each thread waits for its turn, which the thread above it hands on: the
// threads finish in reverse order.
extern "C" __global__ void chain(volatile int *turn, int *out, int *next) {
  int t = threadIdx.x;
  while (*turn != t) {
  }
  out[atomicAdd(next, 1)] = t;
  __threadfence();
  *turn = t - 1;
}

// An ld.acquire poll paired with a st.release.
extern "C" __global__ void acquire(int *flag, int *data, int *out) {
  if (threadIdx.x == 0) {
    int seen = 0;
    while (seen == 0)
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                   : "=r"(seen)
                   : "l"(flag)
                   : "memory");
    out[0] = data[0];
  } else if (threadIdx.x == 96) {
    data[0] = 7;
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(1)
                 : "memory");
  }
}

// Loops whose atomics change memory end when run alone: they stay direct.
// A float maximum by compare-and-swap:
extern "C" __global__ void cas_max(float *m, const float *in) {
  float v = in[threadIdx.x];
  int *p = reinterpret_cast<int *>(m);
  int old = *p, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= v)
      break;
    old = atomicCAS(p, assumed, __float_as_int(v));
  } while (old != assumed);
}

// Work claimed with atomicAdd:
extern "C" __global__ void claim(int *next, int *out, int n) {
  int i;
  while ((i = atomicAdd(next, 1)) < n)
    out[i] = 2 * i;
}

// A spin lock around a plain read-modify-write:
extern "C" __global__ void lock(int *mutex, int *count) {
  while (atomicCAS(mutex, 0, 1) != 0) {
  }
  __threadfence();
  *count = *count + 1;
  __threadfence();
  atomicExch(mutex, 0);
}

// Cooperative groups' tiles of more than one warp synchronise through the
// block's reserved shared memory: each thread arrives, then spins until the
// tile's last arrival.
extern "C" __global__ void tile64(int *out) {
  __shared__ int s[256];
  cg::thread_block block = cg::this_thread_block();
  auto tile = cg::tiled_partition<64>(block);
  s[threadIdx.x] = threadIdx.x;
  tile.sync();
  int r = tile.thread_rank();
  out[threadIdx.x] =
      s[threadIdx.x - r + 63 - r] + 1000 * tile.meta_group_rank();
}
