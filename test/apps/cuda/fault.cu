//===- fault.cu - An illegal address is reported, and sticks --------------===//
//
// A kernel writes 1 TiB past the end of its buffer. The launch itself may
// succeed; cudaDeviceSynchronize must then return cudaErrorIllegalAddress or
// cudaErrorLaunchFailure, and the context stays broken: later calls keep
// failing. The program passes (exit 0) when all of that is reported and
// fails when the fault goes unnoticed.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "fault"
#include "CudaApp.h"

__global__ void writeFar(int *data, unsigned long long offsetBytes) {
  int *target =
      reinterpret_cast<int *>(reinterpret_cast<char *>(data) + offsetBytes);
  target[threadIdx.x] = 42;
}

static bool isFault(cudaError_t err) {
  return err == cudaErrorIllegalAddress || err == cudaErrorLaunchFailure;
}

int main() {
  int *dData;
  CHECK(cudaMalloc(&dData, 1024));
  CHECK(cudaMemset(dData, 0, 1024));
  CHECK(cudaDeviceSynchronize());

  writeFar<<<1, 32>>>(dData, 1ull << 40);
  // The fault is asynchronous: the launch may or may not have seen it yet.
  cudaError_t launch = cudaGetLastError();
  EXPECT(launch == cudaSuccess || isFault(launch),
         "launching writeFar returned %s (%s)", cudaGetErrorName(launch),
         cudaGetErrorString(launch));

  cudaError_t sync = cudaDeviceSynchronize();
  EXPECT(sync != cudaSuccess, "cudaDeviceSynchronize succeeded after an "
                              "out-of-bounds write: the fault went unnoticed");
  EXPECT(isFault(sync),
         "cudaDeviceSynchronize returned %s (%s), expected "
         "cudaErrorIllegalAddress or cudaErrorLaunchFailure",
         cudaGetErrorName(sync), cudaGetErrorString(sync));
  std::printf("fault reported: %s (%s)\n", cudaGetErrorName(sync),
              cudaGetErrorString(sync));

  // Sticky: the context is unusable from now on.
  cudaError_t again = cudaDeviceSynchronize();
  EXPECT(again == sync, "second cudaDeviceSynchronize returned %s, expected %s",
         cudaGetErrorName(again), cudaGetErrorName(sync));
  void *more = nullptr;
  cudaError_t alloc = cudaMalloc(&more, 1024);
  EXPECT(alloc != cudaSuccess, "cudaMalloc succeeded after the fault");
  int host = 0;
  cudaError_t copy =
      cudaMemcpy(&host, dData, sizeof(int), cudaMemcpyDeviceToHost);
  EXPECT(copy != cudaSuccess, "cudaMemcpy succeeded after the fault");
  std::printf("after the fault: cudaDeviceSynchronize %s, cudaMalloc %s, "
              "cudaMemcpy %s\n",
              cudaGetErrorName(again), cudaGetErrorName(alloc),
              cudaGetErrorName(copy));

  // cudaDeviceReset clears the fault: a fresh context works again.
  CHECK(cudaDeviceReset());
  int *dFresh;
  CHECK(cudaMalloc(&dFresh, 32 * sizeof(int)));
  writeFar<<<1, 32>>>(dFresh, 0);
  CHECK(cudaGetLastError());
  int fresh[32];
  CHECK(cudaMemcpy(fresh, dFresh, sizeof fresh, cudaMemcpyDeviceToHost));
  EXPECT(fresh[0] == 42 && fresh[31] == 42, "after the reset: fresh[0] = %d",
         fresh[0]);
  std::printf("after cudaDeviceReset: fresh[0] = %d\n", fresh[0]);
  CHECK(cudaFree(dFresh));
  app::pass();
  return 0;
}
