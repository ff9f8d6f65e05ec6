//===- host_threads.cu - Several host threads sharing the device ----------===//
//
// Four host threads, each with its own stream, memory and kernels, launch
// and copy at the same time (the runtime is thread-safe); each checks its
// own results.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "host_threads"
#include "CudaApp.h"

#include <atomic>
#include <thread>
#include <vector>

__global__ void addRound(int *data, int n, int value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] += value + i % 7;
}

int main() {
  const int threads = 4, n = 8192, rounds = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      cudaStream_t s;
      CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      int *d;
      CHECK(cudaMalloc(&d, n * sizeof(int)));
      CHECK(cudaMemsetAsync(d, 0, n * sizeof(int), s));
      for (int r = 0; r < rounds; ++r)
        addRound<<<n / 256, 256, 0, s>>>(d, n, t + 1);
      CHECK(cudaGetLastError());
      std::vector<int> h(n);
      CHECK(cudaMemcpyAsync(h.data(), d, n * sizeof(int),
                            cudaMemcpyDeviceToHost, s));
      CHECK(cudaStreamSynchronize(s));
      for (int i = 0; i < n; ++i)
        if (h[i] != rounds * (t + 1 + i % 7)) {
          std::printf("thread %d: h[%d] = %d, expected %d\n", t, i, h[i],
                      rounds * (t + 1 + i % 7));
          ++failures;
          break;
        }
      CHECK(cudaFree(d));
      CHECK(cudaStreamDestroy(s));
    });
  for (std::thread &th : pool)
    th.join();
  EXPECT(failures == 0, "%d threads saw wrong results", failures.load());
  std::printf("%d threads x %d launches\n", threads, rounds);
  app::pass();
  return 0;
}
