//===- callbacks.cu - Host functions enqueued on streams ------------------===//
//
// cudaLaunchHostFunc and cudaStreamAddCallback, each enqueued right after an
// async device-to-host copy into pinned memory. Each host function sums the
// buffer that the copy before it filled and records its position in a shared
// log: the sums prove they ran after the preceding work, the positions that
// they ran in stream order. The last one runs on the legacy default stream.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "callbacks"
#include "CudaApp.h"

#include <atomic>

__global__ void affine(int *data, int n, int mul, int add) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] = data[i] * mul + add;
}

constexpr int kN = 4096;
constexpr int kCallbacks = 4;

/// What the host functions saw, in the order they ran.
struct Log {
  std::atomic<int> next{0};
  int ids[kCallbacks] = {};
  long long sums[kCallbacks] = {};
  cudaError_t callbackStatus = cudaErrorUnknown;
};

/// The argument of one host function: its id, the buffer it sums, the log.
struct Probe {
  int id;
  const int *buffer;
  Log *log;
};

static void record(Probe *probe) {
  long long sum = 0;
  for (int i = 0; i < kN; ++i)
    sum += probe->buffer[i];
  int slot = probe->log->next.fetch_add(1);
  if (slot < kCallbacks) {
    probe->log->ids[slot] = probe->id;
    probe->log->sums[slot] = sum;
  }
}

static void CUDART_CB hostFunction(void *userData) {
  record(static_cast<Probe *>(userData));
}

static void CUDART_CB streamCallback(cudaStream_t, cudaError_t status,
                                     void *userData) {
  auto *probe = static_cast<Probe *>(userData);
  probe->log->callbackStatus = status;
  record(probe);
}

int main() {
  int *hostIn, *hostA, *hostB, *hostC, *hostD, *dData;
  CHECK(cudaMallocHost(&hostIn, kN * sizeof(int)));
  CHECK(cudaMallocHost(&hostA, kN * sizeof(int)));
  CHECK(cudaMallocHost(&hostB, kN * sizeof(int)));
  CHECK(cudaMallocHost(&hostC, kN * sizeof(int)));
  CHECK(cudaMallocHost(&hostD, kN * sizeof(int)));
  CHECK(cudaMalloc(&dData, kN * sizeof(int)));
  for (int i = 0; i < kN; ++i)
    hostIn[i] = i;

  Log log;
  Probe probes[kCallbacks] = {
      {1, hostA, &log}, {2, hostB, &log}, {3, hostC, &log}, {4, hostD, &log}};
  const size_t bytes = kN * sizeof(int);
  const int grid = kN / 256;

  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK(cudaMemcpyAsync(dData, hostIn, bytes, cudaMemcpyHostToDevice, stream));
  affine<<<grid, 256, 0, stream>>>(dData, kN, 2, 1); // 2i + 1
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(hostA, dData, bytes, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaLaunchHostFunc(stream, hostFunction, &probes[0]));

  affine<<<grid, 256, 0, stream>>>(dData, kN, 1, 10); // 2i + 11
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(hostB, dData, bytes, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamAddCallback(stream, streamCallback, &probes[1], 0));

  affine<<<grid, 256, 0, stream>>>(dData, kN, 3, 0); // 6i + 33
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(hostC, dData, bytes, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaLaunchHostFunc(stream, hostFunction, &probes[2]));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(log.next.load() == 3,
         "%d host functions ran before the stream synchronized, expected 3",
         log.next.load());

  // The legacy default stream.
  affine<<<grid, 256>>>(dData, kN, -1, 0); // -6i - 33
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(hostD, dData, bytes, cudaMemcpyDeviceToHost, 0));
  CHECK(cudaLaunchHostFunc(0, hostFunction, &probes[3]));
  CHECK(cudaDeviceSynchronize());

  long long n = kN, triangle = n * (n - 1) / 2;
  const long long expectedSums[kCallbacks] = {
      2 * triangle + n, 2 * triangle + 11 * n, 6 * triangle + 33 * n,
      -6 * triangle - 33 * n};
  EXPECT(log.next.load() == kCallbacks, "%d host functions ran, expected %d",
         log.next.load(), kCallbacks);
  for (int k = 0; k < kCallbacks; ++k) {
    std::printf("host function %d: id %d, sum %lld\n", k, log.ids[k],
                log.sums[k]);
    EXPECT(log.ids[k] == k + 1, "position %d ran host function %d, expected %d",
           k, log.ids[k], k + 1);
    EXPECT(log.sums[k] == expectedSums[k],
           "host function %d saw sum %lld, expected %lld (did it run before "
           "the copy?)",
           k + 1, log.sums[k], expectedSums[k]);
  }
  EXPECT(log.callbackStatus == cudaSuccess,
         "cudaStreamAddCallback's callback got status %s",
         cudaGetErrorName(log.callbackStatus));

  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(dData));
  for (int *buffer : {hostIn, hostA, hostB, hostC, hostD})
    CHECK(cudaFreeHost(buffer));
  app::pass();
  return 0;
}
