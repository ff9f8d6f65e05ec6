//===- multi_kernel.cu - A chain of kernels, templates included -----------===//
//
// Eight launches of eight distinct kernels (seven template instances) on the
// default stream, each consuming earlier output with no synchronization in
// between: iota, scale<int>, convert<int, float>, scale<float>, fill<float>,
// axpy<float>, convert<float, double>, scale<double>. Every intermediate is
// exactly representable, so the host compares the results with ==.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "multi_kernel"
#include "CudaApp.h"

#include <vector>

__global__ void iota(int *out, int start, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = start + i;
}

template <typename T> __global__ void fill(T *out, T value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = value;
}

template <typename T> __global__ void scale(T *data, T factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] *= factor;
}

template <typename From, typename To>
__global__ void convert(const From *in, To *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = static_cast<To>(in[i]);
}

template <typename T>
__global__ void axpy(T a, const T *__restrict__ x, T *__restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + y[i];
}

int main() {
  const int n = 50000, block = 256, grid = (n + block - 1) / block;
  int *dInts;
  float *dX, *dY;
  double *dD;
  CHECK(cudaMalloc(&dInts, n * sizeof(int)));
  CHECK(cudaMalloc(&dX, n * sizeof(float)));
  CHECK(cudaMalloc(&dY, n * sizeof(float)));
  CHECK(cudaMalloc(&dD, n * sizeof(double)));

  iota<<<grid, block>>>(dInts, 1, n); // i + 1
  CHECK(cudaGetLastError());
  scale<int><<<grid, block>>>(dInts, 3, n); // 3 (i + 1)
  CHECK(cudaGetLastError());
  convert<int, float><<<grid, block>>>(dInts, dX, n);
  CHECK(cudaGetLastError());
  scale<float><<<grid, block>>>(dX, 0.25f, n); // 0.75 (i + 1)
  CHECK(cudaGetLastError());
  fill<float><<<grid, block>>>(dY, 2.0f, n);
  CHECK(cudaGetLastError());
  axpy<float><<<grid, block>>>(0.5f, dX, dY, n); // 0.375 (i + 1) + 2
  CHECK(cudaGetLastError());
  convert<float, double><<<grid, block>>>(dY, dD, n);
  CHECK(cudaGetLastError());
  scale<double><<<grid, block>>>(dD, 1.5, n); // 0.5625 (i + 1) + 3
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  std::vector<int> ints(n);
  std::vector<float> x(n), y(n);
  std::vector<double> d(n);
  CHECK(
      cudaMemcpy(ints.data(), dInts, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(x.data(), dX, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(y.data(), dY, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(d.data(), dD, n * sizeof(double), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    EXPECT(ints[i] == 3 * (i + 1), "ints[%d] = %d, expected %d", i, ints[i],
           3 * (i + 1));
    EXPECT(x[i] == 0.75f * (i + 1), "x[%d] = %.9g, expected %.9g", i, x[i],
           0.75f * (i + 1));
    EXPECT(y[i] == 0.375f * (i + 1) + 2.0f, "y[%d] = %.9g, expected %.9g", i,
           y[i], 0.375f * (i + 1) + 2.0f);
    EXPECT(d[i] == 0.5625 * (i + 1) + 3.0, "d[%d] = %.17g, expected %.17g", i,
           d[i], 0.5625 * (i + 1) + 3.0);
  }
  CHECK(cudaFree(dInts));
  CHECK(cudaFree(dX));
  CHECK(cudaFree(dY));
  CHECK(cudaFree(dD));
  std::printf("ints[%d] = %d, d[%d] = %.4f\n", n - 1, ints[n - 1], n - 1,
              d[n - 1]);
  app::pass();
  return 0;
}
