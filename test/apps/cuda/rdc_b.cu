//===- rdc_b.cu - Device code called from rdc_a.cu ------------------------===//

#include "rdc.h"

__device__ unsigned int polynomialCalls;

__device__ float polynomial(float x) {
  atomicAdd(&polynomialCalls, 1u);
  return (2.0f * x + 3.0f) * x + 1.0f;
}

__global__ void resetCalls(unsigned int value) { polynomialCalls = value; }
