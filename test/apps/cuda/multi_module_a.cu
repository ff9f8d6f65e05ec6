//===- multi_module_a.cu - First device module of multi_module ------------===//
//
// Its kernel `transform` lives in an anonymous namespace, as does a kernel
// of the same name in multi_module_b.cu: two modules, one source-level name.
//
//===----------------------------------------------------------------------===//

#include "multi_module.h"

__global__ void square(int *data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] *= data[i];
}

namespace {
__global__ void transform(int *data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] *= 2;
}
} // namespace

cudaError_t squareOnDevice(int *data, int n) {
  square<<<(n + 127) / 128, 128>>>(data, n);
  return cudaGetLastError();
}

cudaError_t doubleOnDevice(int *data, int n) {
  transform<<<(n + 127) / 128, 128>>>(data, n);
  return cudaGetLastError();
}
