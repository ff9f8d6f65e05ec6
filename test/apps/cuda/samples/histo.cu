//===- histo.cu - A CUDA-samples-style program ----------------------------===//
//
// A 256-bin histogram of 1 MiB of bytes: shared-memory atomics per block,
// merged with global atomicAdd, a grid-stride loop.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <cstdlib>
#define APP_NAME "sample_histo"
#include "../CudaApp.h"
#define BINS 256
__global__ void histo_kernel(const unsigned char *data, size_t n,
                             unsigned int *hist) {
  __shared__ unsigned int sh[BINS];
  for (int i = threadIdx.x; i < BINS; i += blockDim.x)
    sh[i] = 0;
  __syncthreads();
  size_t stride = (size_t)blockDim.x * gridDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += stride)
    atomicAdd(&sh[data[i]], 1u);
  __syncthreads();
  for (int i = threadIdx.x; i < BINS; i += blockDim.x)
    if (sh[i])
      atomicAdd(&hist[i], sh[i]);
}
int main() {
  const size_t n = 1 << 20;
  unsigned char *h = (unsigned char *)malloc(n);
  unsigned int seed = 12345, ref[BINS] = {0}, out[BINS];
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    h[i] = (unsigned char)((seed >> 16) & 0xff);
    if (i % 5 == 0)
      h[i] = 42;
    ref[h[i]]++;
  }
  unsigned char *d;
  unsigned int *dh;
  CHECK(cudaMalloc(&d, n));
  CHECK(cudaMalloc(&dh, BINS * sizeof(unsigned)));
  CHECK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dh, 0, BINS * sizeof(unsigned)));
  histo_kernel<<<32, 256>>>(d, n, dh);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(out, dh, sizeof(out), cudaMemcpyDeviceToHost));
  int bad = 0;
  unsigned long total = 0;
  for (int i = 0; i < BINS; i++) {
    total += out[i];
    if (out[i] != ref[i]) {
      if (bad < 5)
        printf("bin %d: %u vs %u\n", i, out[i], ref[i]);
      bad++;
    }
  }
  printf("total=%lu bin42=%u\n", total, out[42]);
  CHECK(cudaFree(d));
  CHECK(cudaFree(dh));
  printf("%s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
