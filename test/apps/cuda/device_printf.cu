//===- device_printf.cu - printf in kernels ------------------------------===//
//
// Device printf: the output of every kernel reaches the program's stdout
// before the synchronising call after it returns (as CUDA's driver prints
// it), with integer, float, string and pointer-sized arguments.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "device_printf"
#include "CudaApp.h"

__global__ void greet(int round, float scale, long long big) {
  if (threadIdx.x == 0)
    printf("round %d block %d: scale %.2f big %lld %s\n", round, blockIdx.x,
           scale, big, "done");
}

int main() {
  for (int round = 0; round < 2; ++round) {
    greet<<<1, 32>>>(round, 1.5f * (round + 1), 1LL << (40 + round));
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::printf("host after round %d\n", round);
  }
  app::pass();
  return 0;
}
