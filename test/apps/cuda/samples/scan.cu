//===- scan.cu - A CUDA-samples-style program for capture tests -----------===//
//
// An inclusive prefix scan of 100000 ints: a Blelloch scan per block in
// dynamic shared memory, a second pass over the block sums, then the offsets
// added.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <cstdlib>
#define APP_NAME "sample_scan"
#include "../CudaApp.h"
#define BLOCK 256
#define ELEMS (2 * BLOCK)
// Blelloch work-efficient scan of 2*BLOCK elements per block; converts to
// inclusive.
__global__ void scan_block(const int *in, int *out, int *blockSums, int n) {
  extern __shared__ int temp[];
  int tid = threadIdx.x, base = blockIdx.x * ELEMS;
  int ai = tid, bi = tid + BLOCK;
  int va = base + ai < n ? in[base + ai] : 0;
  int vb = base + bi < n ? in[base + bi] : 0;
  temp[ai] = va;
  temp[bi] = vb;
  int offset = 1;
  for (int d = ELEMS >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (tid < d) {
      int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
      temp[b] += temp[a];
    }
    offset <<= 1;
  }
  if (tid == 0) {
    if (blockSums)
      blockSums[blockIdx.x] = temp[ELEMS - 1];
    temp[ELEMS - 1] = 0;
  }
  for (int d = 1; d < ELEMS; d <<= 1) {
    offset >>= 1;
    __syncthreads();
    if (tid < d) {
      int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
      int t = temp[a];
      temp[a] = temp[b];
      temp[b] += t;
    }
  }
  __syncthreads();
  if (base + ai < n)
    out[base + ai] = temp[ai] + va;
  if (base + bi < n)
    out[base + bi] = temp[bi] + vb;
}
__global__ void add_offsets(int *out, const int *scannedSums, int n) {
  int b = blockIdx.x;
  if (b == 0)
    return;
  int add = scannedSums[b - 1];
  int i = b * ELEMS + threadIdx.x;
  if (i < n)
    out[i] += add;
  if (i + BLOCK < n)
    out[i + BLOCK] += add;
}
int main() {
  const int n = 100000;
  int nb = (n + ELEMS - 1) / ELEMS; // 196 <= ELEMS so second level is one block
  int *h = (int *)malloc(n * sizeof(int)), *o = (int *)malloc(n * sizeof(int));
  for (int i = 0; i < n; i++)
    h[i] = (i * 37 + 11) % 17 - 5;
  int *din, *dout, *dsums, *dsumsScan;
  CHECK(cudaMalloc(&din, n * sizeof(int)));
  CHECK(cudaMalloc(&dout, n * sizeof(int)));
  CHECK(cudaMalloc(&dsums, nb * sizeof(int)));
  CHECK(cudaMalloc(&dsumsScan, nb * sizeof(int)));
  CHECK(cudaMemcpy(din, h, n * sizeof(int), cudaMemcpyHostToDevice));
  size_t sh = ELEMS * sizeof(int);
  scan_block<<<nb, BLOCK, sh>>>(din, dout, dsums, n);
  CHECK(cudaGetLastError());
  scan_block<<<1, BLOCK, sh>>>(dsums, dsumsScan, nullptr, nb);
  CHECK(cudaGetLastError());
  add_offsets<<<nb, BLOCK>>>(dout, dsumsScan, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(o, dout, n * sizeof(int), cudaMemcpyDeviceToHost));
  long s = 0;
  int bad = 0;
  for (int i = 0; i < n; i++) {
    s += h[i];
    if (o[i] != s) {
      if (bad < 5)
        printf("idx %d: %d vs %ld\n", i, o[i], s);
      bad++;
    }
  }
  printf("blocks=%d last=%d\n", nb, o[n - 1]);
  cudaFree(din);
  cudaFree(dout);
  cudaFree(dsums);
  cudaFree(dsumsScan);
  printf("%s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
