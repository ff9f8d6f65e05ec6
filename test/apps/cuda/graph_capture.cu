//===- graph_capture.cu - A CUDA graph captured from a stream -------------===//
//
// Captures a memset, two kernels and two copies (device-to-device and
// device-to-pinned-host) from a stream into a graph, checks the capture
// status, checks that nothing ran during capture, then replays the graph 100
// times: the accumulator gains 1 per replay, so it ends at 100.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "graph_capture"
#include "CudaApp.h"

#include <vector>

__global__ void addOne(int *acc, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    acc[i] += 1;
}

/// scratch[i] += 2 * acc[i] + i (scratch is zeroed first in the graph).
__global__ void addTwiceAccPlusIndex(const int *acc, int *scratch, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    scratch[i] += 2 * acc[i] + i;
}

int main() {
  const int n = 4096, replays = 100, block = 256, grid = n / block;
  const size_t bytes = n * sizeof(int);
  int *dAcc, *dScratch, *dOut, *hostSnapshot;
  CHECK(cudaMalloc(&dAcc, bytes));
  CHECK(cudaMalloc(&dScratch, bytes));
  CHECK(cudaMalloc(&dOut, bytes));
  CHECK(cudaMallocHost(&hostSnapshot, bytes));
  CHECK(cudaMemset(dAcc, 0, bytes));
  CHECK(cudaMemset(dScratch, 0x7f, bytes));
  for (int i = 0; i < n; ++i)
    hostSnapshot[i] = -1;
  CHECK(cudaDeviceSynchronize());

  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaStreamCaptureStatus status;
  CHECK(cudaStreamIsCapturing(stream, &status));
  EXPECT(status == cudaStreamCaptureStatusNone,
         "capture status %d before capture", int(status));

  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CHECK(cudaStreamIsCapturing(stream, &status));
  EXPECT(status == cudaStreamCaptureStatusActive,
         "capture status %d during capture", int(status));
  CHECK(cudaMemsetAsync(dScratch, 0, bytes, stream));
  addOne<<<grid, block, 0, stream>>>(dAcc, n);
  CHECK(cudaGetLastError());
  addTwiceAccPlusIndex<<<grid, block, 0, stream>>>(dAcc, dScratch, n);
  CHECK(cudaGetLastError());
  CHECK(
      cudaMemcpyAsync(dOut, dScratch, bytes, cudaMemcpyDeviceToDevice, stream));
  CHECK(cudaMemcpyAsync(hostSnapshot, dAcc, bytes, cudaMemcpyDeviceToHost,
                        stream));
  cudaGraph_t graph;
  CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(cudaStreamIsCapturing(stream, &status));
  EXPECT(status == cudaStreamCaptureStatusNone,
         "capture status %d after capture", int(status));

  size_t numNodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &numNodes));
  std::printf("captured %zu nodes\n", numNodes);
  EXPECT(numNodes == 5, "the graph has %zu nodes, expected 5", numNodes);

  // Capturing records work; it does not run it.
  std::vector<int> acc(n), out(n);
  CHECK(cudaMemcpy(acc.data(), dAcc, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    EXPECT(acc[i] == 0, "acc[%d] = %d after capture: captured work ran", i,
           acc[i]);

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < replays; ++r)
    CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));

  CHECK(cudaMemcpy(acc.data(), dAcc, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(out.data(), dOut, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    EXPECT(acc[i] == replays, "acc[%d] = %d, expected %d", i, acc[i], replays);
    EXPECT(hostSnapshot[i] == replays, "snapshot[%d] = %d, expected %d", i,
           hostSnapshot[i], replays);
    EXPECT(out[i] == 2 * replays + i, "out[%d] = %d, expected %d", i, out[i],
           2 * replays + i);
  }
  std::printf("after %d replays: acc[0] = %d, out[%d] = %d\n", replays, acc[0],
              n - 1, out[n - 1]);

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(dAcc));
  CHECK(cudaFree(dScratch));
  CHECK(cudaFree(dOut));
  CHECK(cudaFreeHost(hostSnapshot));
  app::pass();
  return 0;
}
