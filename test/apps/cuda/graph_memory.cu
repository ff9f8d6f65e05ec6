//===- graph_memory.cu - Memory nodes of CUDA graphs ----------------------===//
//
// A graph that allocates its own scratch memory: cudaMallocAsync and
// cudaFreeAsync captured from a stream become allocation and free nodes
// (4 nodes with the two kernels), replayed three times; the same graph
// built by hand with cudaGraphAddMemAllocNode / cudaGraphAddMemFreeNode and
// read back with their GetParams; the graph memory in use
// (cudaDeviceGetGraphMemAttribute) while the graphs live and after they go;
// and a captured free of memory the graph did not allocate, which is
// refused.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "graph_memory"
#include "CudaApp.h"

#include <vector>

__global__ void fill(int *p, int n, int v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = v + i;
}

__global__ void twice(const int *a, int *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    b[i] += 2 * a[i];
}

static unsigned long long graphMemoryInUse() {
  unsigned long long used = 0;
  CHECK(
      cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
  return used;
}

int main() {
  const int n = 1000, block = 256, grid = (n + block - 1) / block;
  const size_t bytes = n * sizeof(int);
  int *out;
  CHECK(cudaMalloc(&out, bytes));
  CHECK(cudaMemset(out, 0, bytes));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // Captured: the scratch buffer is the graph's.
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  int *tmp = nullptr;
  CHECK(cudaMallocAsync(&tmp, bytes, s));
  fill<<<grid, block, 0, s>>>(tmp, n, 7);
  twice<<<grid, block, 0, s>>>(tmp, out, n);
  CHECK(cudaFreeAsync(tmp, s));
  CHECK(cudaStreamEndCapture(s, &graph));
  size_t count = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  cudaGraphNodeType first, last;
  CHECK(cudaGraphNodeGetType(nodes.front(), &first));
  CHECK(cudaGraphNodeGetType(nodes.back(), &last));
  std::printf("captured %zu nodes, the first an allocation: %d, the last a "
              "free: %d\n",
              count, first == cudaGraphNodeTypeMemAlloc,
              last == cudaGraphNodeTypeMemFree);
  EXPECT(count == 4 && first == cudaGraphNodeTypeMemAlloc &&
             last == cudaGraphNodeTypeMemFree,
         "the capture made %zu nodes", count);
  cudaMemAllocNodeParams alloc;
  CHECK(cudaGraphMemAllocNodeGetParams(nodes.front(), &alloc));
  EXPECT(alloc.dptr == tmp && alloc.bytesize == bytes,
         "the allocation node says %p, %zu bytes", alloc.dptr, alloc.bytesize);
  EXPECT(graphMemoryInUse() >= bytes, "no graph memory in use");
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  // The exec keeps the memory when the graph goes.
  CHECK(cudaGraphDestroy(graph));
  for (int r = 0; r < 3; ++r)
    CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  std::vector<int> h(n);
  CHECK(cudaMemcpy(h.data(), out, bytes, cudaMemcpyDeviceToHost));
  std::printf("after 3 launches: out[0] = %d, out[%d] = %d\n", h[0], n - 1,
              h[n - 1]);
  for (int i = 0; i < n; ++i)
    EXPECT(h[i] == 3 * 2 * (7 + i), "out[%d] = %d", i, h[i]);
  CHECK(cudaGraphExecDestroy(exec));
  EXPECT(graphMemoryInUse() == 0,
         "graph memory left after the graph went: %llu", graphMemoryInUse());

  // By hand: allocation -> fill -> twice -> free.
  CHECK(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams params = {};
  params.poolProps.allocType = cudaMemAllocationTypePinned;
  params.poolProps.location = {cudaMemLocationTypeDevice, 0};
  params.bytesize = bytes;
  cudaGraphNode_t allocNode, fillNode, twiceNode, freeNode;
  CHECK(cudaGraphAddMemAllocNode(&allocNode, graph, nullptr, 0, &params));
  int *p = static_cast<int *>(params.dptr);
  EXPECT(p != nullptr, "cudaGraphAddMemAllocNode gave no address");
  int size = n, value = 100;
  void *fillArgs[] = {&p, &size, &value};
  cudaKernelNodeParams k = {};
  k.func = (void *)fill;
  k.gridDim = dim3(grid);
  k.blockDim = dim3(block);
  k.kernelParams = fillArgs;
  CHECK(cudaGraphAddKernelNode(&fillNode, graph, &allocNode, 1, &k));
  void *twiceArgs[] = {&p, &out, &size};
  k.func = (void *)twice;
  k.kernelParams = twiceArgs;
  CHECK(cudaGraphAddKernelNode(&twiceNode, graph, &fillNode, 1, &k));
  CHECK(cudaGraphAddMemFreeNode(&freeNode, graph, &twiceNode, 1, p));
  void *freed = nullptr;
  CHECK(cudaGraphMemFreeNodeGetParams(freeNode, &freed));
  EXPECT(freed == p, "the free node frees %p, not %p", freed, (void *)p);
  CHECK(cudaMemset(out, 0, bytes));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(h.data(), out, bytes, cudaMemcpyDeviceToHost));
  std::printf("by hand: out[0] = %d, out[%d] = %d\n", h[0], n - 1, h[n - 1]);
  for (int i = 0; i < n; ++i)
    EXPECT(h[i] == 2 * (100 + i), "out[%d] = %d", i, h[i]);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  EXPECT(graphMemoryInUse() == 0, "graph memory left: %llu",
         graphMemoryInUse());

  // A captured free of memory the graph did not allocate: not supported
  // (its kernels would run after the memory went).
  graph = nullptr;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  cudaError_t err = cudaFreeAsync(out, s);
  EXPECT(err == cudaErrorStreamCaptureUnsupported,
         "cudaFreeAsync of other memory in a capture returned %s",
         cudaGetErrorName(err));
  cudaGetLastError();
  cudaStreamEndCapture(s, &graph);
  cudaGetLastError();
  if (graph)
    cudaGraphDestroy(graph);
  std::printf("a captured free of other memory: %s\n", cudaGetErrorName(err));

  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(out));
  app::pass();
  return 0;
}
