//===- multi_module.h - Entry points of the multi_module parts --*- C++ -*-===//
//
// Each translation unit of the multi_module program has its own kernels (and
// so its own fatbin, registered separately at start-up) and exports plain
// host functions that launch them on the default stream.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_TEST_APPS_CUDA_MULTI_MODULE_H
#define WOOLY_TEST_APPS_CUDA_MULTI_MODULE_H

#include <cuda_runtime.h>

/// multi_module_a.cu: data[i] = data[i] * data[i].
cudaError_t squareOnDevice(int *data, int n);
/// multi_module_a.cu: data[i] = 2 * data[i], by a kernel named `transform`.
cudaError_t doubleOnDevice(int *data, int n);
/// multi_module_b.cu: data[i] += offset.
cudaError_t offsetOnDevice(int *data, int n, int offset);
/// multi_module_b.cu: data[i] -= 1, by another kernel named `transform`.
cudaError_t decrementOnDevice(int *data, int n);

#endif // WOOLY_TEST_APPS_CUDA_MULTI_MODULE_H
