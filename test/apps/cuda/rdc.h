//===- rdc.h - What rdc_b.cu defines for rdc_a.cu ---------------*- C++ -*-===//
//
// Device code shared across translation units, which needs -rdc=true: a
// device function and a device variable defined in rdc_b.cu and used by a
// kernel in rdc_a.cu, and a kernel in rdc_b.cu launched from rdc_a.cu.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_TEST_APPS_CUDA_RDC_H
#define WOOLY_TEST_APPS_CUDA_RDC_H

/// (2x + 3) x + 1.
__device__ float polynomial(float x);

/// How many times polynomial() ran.
extern __device__ unsigned int polynomialCalls;

/// Sets polynomialCalls to `value`.
__global__ void resetCalls(unsigned int value);

#endif // WOOLY_TEST_APPS_CUDA_RDC_H
