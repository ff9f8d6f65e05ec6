//===- static_cudart.cu - Vector add linked with the static runtime -------===//
//
// Built with nvcc's default `-cudart static`: the runtime is inside the
// binary and talks to libcuda.so.1 directly, so Wooly's libcudart.so.13
// never sees it. Under Wooly, the libcuda.so.1 drop-in is expected to make a
// call fail and tell the user to rebuild with `-cudart shared`; the program
// just reports the failing call.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "static_cudart"
#include "CudaApp.h"

#include <vector>

__global__ void vectorAdd(const int *a, const int *b, int *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}

int main() {
  const int n = 4096;
  const size_t bytes = n * sizeof(int);
  std::vector<int> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = i;
    b[i] = 3 * i + 1;
  }

  int *dA, *dB, *dC;
  CHECK(cudaMalloc(&dA, bytes));
  CHECK(cudaMalloc(&dB, bytes));
  CHECK(cudaMalloc(&dC, bytes));
  CHECK(cudaMemcpy(dA, a.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, b.data(), bytes, cudaMemcpyHostToDevice));
  vectorAdd<<<(n + 255) / 256, 256>>>(dA, dB, dC, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(c.data(), dC, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    EXPECT(c[i] == 4 * i + 1, "c[%d] = %d, expected %d", i, c[i], 4 * i + 1);
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  std::printf("n = %d, c[%d] = %d\n", n, n - 1, c[n - 1]);
  app::pass();
  return 0;
}
