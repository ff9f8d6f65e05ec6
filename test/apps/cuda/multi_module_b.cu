//===- multi_module_b.cu - Second device module of multi_module -----------===//

#include "multi_module.h"

__global__ void addOffset(int *data, int n, int offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] += offset;
}

namespace {
__global__ void transform(int *data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] -= 1;
}
} // namespace

cudaError_t offsetOnDevice(int *data, int n, int offset) {
  addOffset<<<(n + 255) / 256, 256>>>(data, n, offset);
  return cudaGetLastError();
}

cudaError_t decrementOnDevice(int *data, int n) {
  transform<<<(n + 255) / 256, 256>>>(data, n);
  return cudaGetLastError();
}
