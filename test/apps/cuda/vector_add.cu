//===- vector_add.cu - c = a + b over 100k floats -------------------------===//
//
// The classic first CUDA program: copy two vectors to the device, add them
// with a grid-stride kernel, copy the sum back and compare it bit for bit
// with the host's. The compress_* programs are this file built with other
// fatbin compression options (APP_NAME set on the command line).
//
//===----------------------------------------------------------------------===//

#ifndef APP_NAME
#define APP_NAME "vector_add"
#endif
#include "CudaApp.h"

#include <vector>

__global__ void vectorAdd(const float *a, const float *b, float *c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x)
    c[i] = a[i] + b[i];
}

int main() {
  const int n = 100000;
  const size_t bytes = n * sizeof(float);
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = 0.5f * i;
    b[i] = 1.0f / (1 + i % 97);
  }

  float *dA, *dB, *dC;
  CHECK(cudaMalloc(&dA, bytes));
  CHECK(cudaMalloc(&dB, bytes));
  CHECK(cudaMalloc(&dC, bytes));
  CHECK(cudaMemcpy(dA, a.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, b.data(), bytes, cudaMemcpyHostToDevice));

  // 128 blocks of 256 threads; each thread strides over about 3 elements.
  const int block = 256, grid = 128;
  vectorAdd<<<grid, block>>>(dA, dB, dC, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(c.data(), dC, bytes, cudaMemcpyDeviceToHost));

  int mismatches = 0;
  for (int i = 0; i < n; ++i) {
    float expected = a[i] + b[i];
    if (c[i] != expected && mismatches++ < 5)
      std::printf("c[%d] = %.9g, expected %.9g\n", i, c[i], expected);
  }
  EXPECT(mismatches == 0, "%d of %d elements differ", mismatches, n);

  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  std::printf("n = %d, c[0] = %g, c[%d] = %g\n", n, c[0], n - 1, c[n - 1]);
  app::pass();
  return 0;
}
