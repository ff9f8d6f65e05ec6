//===- rdc_a.cu - Separate compilation: a kernel calling rdc_b.cu ---------===//
//
// Built with -rdc=true together with rdc_b.cu: the kernel here calls a
// __device__ function defined there, which counts its calls in a __device__
// variable defined there too; the host here launches rdc_b.cu's resetCalls
// and reads the counter with cudaMemcpyFromSymbol.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "rdc"
#include "CudaApp.h"
#include "rdc.h"

#include <vector>

__global__ void evaluate(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = polynomial(x[i]);
}

int main() {
  const int n = 5000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i)
    x[i] = float(i % 200 - 100);
  float *dX, *dY;
  CHECK(cudaMalloc(&dX, n * sizeof(float)));
  CHECK(cudaMalloc(&dY, n * sizeof(float)));
  CHECK(cudaMemcpy(dX, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  resetCalls<<<1, 1>>>(7);
  CHECK(cudaGetLastError());
  evaluate<<<(n + 255) / 256, 256>>>(dX, dY, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(y.data(), dY, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    float expected = (2.0f * x[i] + 3.0f) * x[i] + 1.0f;
    EXPECT(y[i] == expected, "y[%d] = %g, expected %g", i, y[i], expected);
  }

  unsigned int calls = 0;
  CHECK(cudaMemcpyFromSymbol(&calls, polynomialCalls, sizeof(calls)));
  std::printf("polynomialCalls = %u\n", calls);
  EXPECT(calls == 7u + n, "polynomialCalls = %u, expected %u", calls, 7u + n);
  CHECK(cudaFree(dX));
  CHECK(cudaFree(dY));
  app::pass();
  return 0;
}
