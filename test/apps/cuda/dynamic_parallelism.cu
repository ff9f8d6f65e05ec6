//===- dynamic_parallelism.cu - A kernel launching a kernel ---------------===//
//
// Dynamic parallelism (built with -rdc=true -lcudadevrt) is not supported by
// Wooly yet: the launch must fail with an error (cudaErrorNotSupported from
// cudaGetLastError) and the program must go on; it passes when it does.
// On a real GPU the launch succeeds and the child's result is checked.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "dynamic_parallelism"
#include "CudaApp.h"

__global__ void child(int *p) { p[threadIdx.x] = threadIdx.x + 1; }

__global__ void parent(int *p) {
  if (threadIdx.x == 0)
    child<<<1, 32>>>(p);
}

int main() {
  int *d;
  CHECK(cudaMalloc(&d, 32 * sizeof(int)));
  CHECK(cudaMemset(d, 0, 32 * sizeof(int)));
  parent<<<1, 1>>>(d);
  cudaError_t launch = cudaGetLastError();
  std::printf("launch: %s\n", cudaGetErrorName(launch));
  if (launch == cudaSuccess) {
    CHECK(cudaDeviceSynchronize());
    int h[32];
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 32; ++i)
      EXPECT(h[i] == i + 1, "h[%d] = %d", i, h[i]);
  } else {
    EXPECT(launch == cudaErrorNotSupported, "unexpected launch error %s",
           cudaGetErrorName(launch));
    // The error is not sticky: the program goes on.
    CHECK(cudaMemset(d, 1, sizeof(int)));
    CHECK(cudaDeviceSynchronize());
  }
  CHECK(cudaFree(d));
  app::pass();
  return 0;
}
