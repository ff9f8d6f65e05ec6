//===- graph_capture.cu - A CUDA graph captured from a stream -------------===//
//
// Captures a memset, two kernels and two copies (device-to-device and
// device-to-pinned-host) from a stream into a graph, checks the capture
// status, checks that nothing ran during capture, then replays the graph 100
// times: the accumulator gains 1 per replay, so it ends at 100. Then a
// capture across two streams (a fork and a join through events), replayed,
// and one whose fork is never joined, which fails at its end.
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

  // Capture across streams, as frameworks overlap work: `side` joins the
  // capture by waiting for an event recorded in it (a fork), runs while the
  // capture's stream does, and is joined back by an event of its own. The
  // last kernel depends on both branches.
  {
    cudaStream_t side;
    CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    cudaEvent_t fork, join;
    CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    CHECK(cudaMemset(dAcc, 0, bytes));
    CHECK(cudaMemset(dScratch, 0, bytes));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    addOne<<<grid, block, 0, stream>>>(dAcc, n); // acc = 1
    CHECK(cudaEventRecord(fork, stream));
    CHECK(cudaStreamWaitEvent(side, fork, 0));
    CHECK(cudaStreamIsCapturing(side, &status));
    EXPECT(status == cudaStreamCaptureStatusActive,
           "the forked stream's capture status is %d", int(status));
    addTwiceAccPlusIndex<<<grid, block, 0, side>>>(dAcc, dScratch, n);
    CHECK(cudaEventRecord(join, side));
    addOne<<<grid, block, 0, stream>>>(dOut, n); // beside the side branch
    CHECK(cudaStreamWaitEvent(stream, join, 0));
    const cudaGraphNode_t *deps = nullptr;
    size_t numDeps = 0;
    CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &deps,
                                   nullptr, &numDeps));
    EXPECT(numDeps == 2, "after the join the stream depends on %zu nodes",
           numDeps);
    // The same dependencies again (cudaStreamAddCaptureDependencies): no
    // change.
    std::vector<cudaGraphNode_t> joinedDeps(deps, deps + numDeps);
    CHECK(cudaStreamUpdateCaptureDependencies(
        stream, joinedDeps.data(), nullptr, joinedDeps.size(),
        cudaStreamAddCaptureDependencies));
    addOne<<<grid, block, 0, stream>>>(dAcc, n); // acc = 2, after both
    cudaGraph_t forked;
    CHECK(cudaStreamEndCapture(stream, &forked));
    CHECK(cudaStreamIsCapturing(side, &status));
    EXPECT(status == cudaStreamCaptureStatusNone,
           "the forked stream still captures after the end");
    CHECK(cudaGraphGetNodes(forked, nullptr, &numNodes));
    std::vector<cudaGraphNode_t> nodes(numNodes);
    CHECK(cudaGraphGetNodes(forked, nodes.data(), &numNodes));
    size_t lastDeps = 0;
    CHECK(cudaGraphNodeGetDependencies(nodes.back(), nullptr, nullptr,
                                       &lastDeps));
    std::printf("forked capture: %zu nodes, the last after %zu\n", numNodes,
                lastDeps);
    EXPECT(lastDeps == 2, "the last node depends on %zu nodes", lastDeps);
    CHECK(cudaMemset(dOut, 0, bytes));
    CHECK(cudaGraphInstantiate(&exec, forked, 0));
    for (int r = 0; r < 3; ++r)
      CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(acc.data(), dAcc, bytes, cudaMemcpyDeviceToHost));
    std::vector<int> scratch(n);
    CHECK(cudaMemcpy(scratch.data(), dScratch, bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(out.data(), dOut, bytes, cudaMemcpyDeviceToHost));
    // Replay r adds 2 * (2r + 1) + i to scratch (acc is 2r + 1 there).
    for (int i = 0; i < n; ++i)
      EXPECT(acc[i] == 6 && out[i] == 3 && scratch[i] == 2 * 9 + 3 * i,
             "forked replays: acc %d, out %d, scratch %d at %d", acc[i], out[i],
             scratch[i], i);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(forked));

    // An instantiated graph launched into a capture: a child graph node.
    cudaGraph_t small, outer;
    cudaGraphExec_t smallExec, outerExec;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    addOne<<<grid, block, 0, stream>>>(dOut, n);
    CHECK(cudaStreamEndCapture(stream, &small));
    CHECK(cudaGraphInstantiate(&smallExec, small, 0));
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    addOne<<<grid, block, 0, stream>>>(dAcc, n);
    CHECK(cudaGraphLaunch(smallExec, stream));
    addOne<<<grid, block, 0, stream>>>(dAcc, n);
    CHECK(cudaStreamEndCapture(stream, &outer));
    CHECK(cudaGraphGetNodes(outer, nullptr, &numNodes));
    std::vector<cudaGraphNode_t> outerNodes(numNodes);
    CHECK(cudaGraphGetNodes(outer, outerNodes.data(), &numNodes));
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(outerNodes[1], &type));
    EXPECT(numNodes == 3 && type == cudaGraphNodeTypeGraph,
           "a graph launched into a capture: %zu nodes, the second of type %d",
           numNodes, int(type));
    CHECK(cudaGraphInstantiate(&outerExec, outer, 0));
    for (int r = 0; r < 2; ++r)
      CHECK(cudaGraphLaunch(outerExec, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(acc.data(), dAcc, bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(out.data(), dOut, bytes, cudaMemcpyDeviceToHost));
    EXPECT(acc[0] == 10 && out[n - 1] == 5,
           "graph launched into a capture: acc %d, out %d", acc[0], out[n - 1]);
    std::printf("graph launched into a capture: a child graph node\n");
    CHECK(cudaGraphExecDestroy(outerExec));
    CHECK(cudaGraphExecDestroy(smallExec));
    CHECK(cudaGraphDestroy(outer));
    CHECK(cudaGraphDestroy(small));

    // A fork never joined back: the capture fails at its end, and both
    // streams are free again.
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    addOne<<<grid, block, 0, stream>>>(dAcc, n);
    CHECK(cudaEventRecord(fork, stream));
    CHECK(cudaStreamWaitEvent(side, fork, 0));
    addOne<<<grid, block, 0, side>>>(dOut, n);
    EXPECT(cudaStreamEndCapture(side, &forked) ==
               cudaErrorStreamCaptureUnmatched,
           "ending the capture on the stream that joined it");
    EXPECT(cudaStreamEndCapture(stream, &forked) ==
               cudaErrorStreamCaptureUnjoined,
           "ending a capture whose fork was not joined");
    cudaGetLastError();
    CHECK(cudaStreamIsCapturing(side, &status));
    EXPECT(status == cudaStreamCaptureStatusNone,
           "the unjoined stream still captures");
    addOne<<<grid, block, 0, side>>>(dOut, n); // runs now
    CHECK(cudaStreamSynchronize(side));
    CHECK(cudaMemcpy(out.data(), dOut, bytes, cudaMemcpyDeviceToHost));
    EXPECT(out[0] == 6, "after the failed capture out[0] = %d", out[0]);
    CHECK(cudaEventDestroy(fork));
    CHECK(cudaEventDestroy(join));
    CHECK(cudaStreamDestroy(side));
  }
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(dAcc));
  CHECK(cudaFree(dScratch));
  CHECK(cudaFree(dOut));
  CHECK(cudaFreeHost(hostSnapshot));
  app::pass();
  return 0;
}
