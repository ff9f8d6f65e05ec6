// Device-side printf (vprintf call with a packed argument buffer in .local memory).
#include <cstdio>

// Prints one line per thread for i < n: "i=<i> v=<x[i]*2>"; also out[i] = i (printf output
// order across threads is not deterministic).
extern "C" __global__ void print_values(int n, const float* x, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  printf("i=%d v=%f\n", i, x[i] * 2.0f);
  out[i] = i;
}

// Prints only from thread 0 of each block: block index and a float constant
extern "C" __global__ void print_block(float f) {
  if (threadIdx.x == 0) printf("block %d f=%f\n", (int)blockIdx.x, f);
}
