//===- multi_module_main.cu - A program of three device modules -----------===//
//
// multi_module is built from three translation units without -rdc, so it
// registers three fatbins. This one launches its own kernel, then the other
// two modules' kernels in turn, including the two distinct kernels named
// `transform`: data[i] = 2 (i^2 + 7) - 1.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "multi_module"
#include "CudaApp.h"
#include "multi_module.h"

#include <vector>

__global__ void iota(int *data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] = i;
}

int main() {
  const int n = 4096;
  int *dData;
  CHECK(cudaMalloc(&dData, n * sizeof(int)));
  iota<<<n / 64, 64>>>(dData, n);
  CHECK(cudaGetLastError());
  CHECK(squareOnDevice(dData, n));
  CHECK(offsetOnDevice(dData, n, 7));
  CHECK(doubleOnDevice(dData, n));
  CHECK(decrementOnDevice(dData, n));

  std::vector<int> data(n);
  CHECK(
      cudaMemcpy(data.data(), dData, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    int expected = 2 * (i * i + 7) - 1;
    EXPECT(data[i] == expected, "data[%d] = %d, expected %d", i, data[i],
           expected);
  }
  CHECK(cudaFree(dData));
  std::printf("data[%d] = %d\n", n - 1, data[n - 1]);
  app::pass();
  return 0;
}
