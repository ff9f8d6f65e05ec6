//===- graph_explicit.cu - A CUDA graph built node by node ----------------===//
//
// A diamond built with the graph API:
//
//   memset A := 1 --+--> A += scale * i --+--> C := A + B --> memcpy C to
//                   |                     |                   pinned host
//                   +--> B := i + offset -+                       |
//                                              host node: sum the copy
//
// instantiated, launched three times, then updated in place with
// cudaGraphExecKernelNodeSetParams (a new `scale`) and launched again. The
// queries (root nodes, dependencies, dependents, edges) tell its shape; a
// clone with another scale and without the host node runs, and the
// original still runs as before; cudaGraphExecUpdate refuses the clone and
// takes a graph of the same shape. Then child graph nodes, nested twice,
// and a clone of their graph.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "graph_explicit"
#include "CudaApp.h"

__global__ void addScaledIndex(int *a, int scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    a[i] += scale * i;
}

__global__ void indexPlus(int *b, int offset, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    b[i] = i + offset;
}

__global__ void add(const int *a, const int *b, int *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}

constexpr int kN = 4096;
constexpr int kMaxRuns = 8;

/// What the host node saw, one entry per graph launch.
struct HostRecord {
  const int *hostC;
  int runs = 0;
  long long sums[kMaxRuns] = {};
};

static void CUDART_CB sumHostCopy(void *userData) {
  auto *record = static_cast<HostRecord *>(userData);
  long long sum = 0;
  for (int i = 0; i < kN; ++i)
    sum += record->hostC[i];
  if (record->runs < kMaxRuns)
    record->sums[record->runs] = sum;
  ++record->runs;
}

static long long expectedSum(long long scale, long long offset) {
  long long n = kN;
  return n * (1 + offset) + (scale + 1) * n * (n - 1) / 2;
}

int main() {
  const int block = 256, grid = kN / block, offset = 10;
  const size_t bytes = kN * sizeof(int);
  int *dA, *dB, *dC, *hostC;
  CHECK(cudaMalloc(&dA, bytes));
  CHECK(cudaMalloc(&dB, bytes));
  CHECK(cudaMalloc(&dC, bytes));
  CHECK(cudaMallocHost(&hostC, bytes));
  HostRecord record;
  record.hostC = hostC;

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));

  cudaGraphNode_t memsetNode, scaleNode, indexNode, addNode, copyNode, hostNode;
  cudaMemsetParams memsetParams = {};
  memsetParams.dst = dA;
  memsetParams.value = 1;
  memsetParams.elementSize = sizeof(int);
  memsetParams.width = kN;
  memsetParams.height = 1;
  CHECK(cudaGraphAddMemsetNode(&memsetNode, graph, nullptr, 0, &memsetParams));

  int scale = 3, n = kN, bOffset = offset;
  void *scaleArgs[] = {&dA, &scale, &n};
  cudaKernelNodeParams scaleParams = {};
  scaleParams.func = reinterpret_cast<void *>(addScaledIndex);
  scaleParams.gridDim = dim3(grid);
  scaleParams.blockDim = dim3(block);
  scaleParams.kernelParams = scaleArgs;
  CHECK(
      cudaGraphAddKernelNode(&scaleNode, graph, &memsetNode, 1, &scaleParams));

  void *indexArgs[] = {&dB, &bOffset, &n};
  cudaKernelNodeParams indexParams = scaleParams;
  indexParams.func = reinterpret_cast<void *>(indexPlus);
  indexParams.kernelParams = indexArgs;
  CHECK(
      cudaGraphAddKernelNode(&indexNode, graph, &memsetNode, 1, &indexParams));

  void *addArgs[] = {&dA, &dB, &dC, &n};
  cudaKernelNodeParams addParams = scaleParams;
  addParams.func = reinterpret_cast<void *>(add);
  addParams.kernelParams = addArgs;
  cudaGraphNode_t both[] = {scaleNode, indexNode};
  CHECK(cudaGraphAddKernelNode(&addNode, graph, both, 2, &addParams));

  CHECK(cudaGraphAddMemcpyNode1D(&copyNode, graph, &addNode, 1, hostC, dC,
                                 bytes, cudaMemcpyDeviceToHost));
  cudaHostNodeParams hostParams = {sumHostCopy, &record};
  CHECK(cudaGraphAddHostNode(&hostNode, graph, &copyNode, 1, &hostParams));

  size_t numNodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &numNodes));
  EXPECT(numNodes == 6, "the graph has %zu nodes, expected 6", numNodes);
  cudaGraphNodeType type;
  CHECK(cudaGraphNodeGetType(scaleNode, &type));
  EXPECT(type == cudaGraphNodeTypeKernel, "scale node has type %d", int(type));

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  const int firstRuns = 3;
  for (int r = 0; r < firstRuns; ++r)
    CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(record.runs == firstRuns, "the host node ran %d times, expected %d",
         record.runs, firstRuns);
  for (int r = 0; r < firstRuns; ++r)
    EXPECT(record.sums[r] == expectedSum(3, offset),
           "launch %d: sum = %lld, expected %lld", r, record.sums[r],
           expectedSum(3, offset));
  for (int i = 0; i < kN; ++i)
    EXPECT(hostC[i] == 1 + 3 * i + i + offset, "C[%d] = %d, expected %d", i,
           hostC[i], 1 + 3 * i + i + offset);
  std::printf("scale 3: sum = %lld\n", record.sums[0]);

  // Change the scale argument of the instantiated graph only.
  int newScale = -2;
  void *newScaleArgs[] = {&dA, &newScale, &n};
  cudaKernelNodeParams newParams = scaleParams;
  newParams.kernelParams = newScaleArgs;
  CHECK(cudaGraphExecKernelNodeSetParams(exec, scaleNode, &newParams));
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(record.runs == firstRuns + 1,
         "the host node ran %d times, expected %d", record.runs, firstRuns + 1);
  EXPECT(record.sums[firstRuns] == expectedSum(-2, offset),
         "after the update: sum = %lld, expected %lld", record.sums[firstRuns],
         expectedSum(-2, offset));
  for (int i = 0; i < kN; ++i)
    EXPECT(hostC[i] == 1 - 2 * i + i + offset, "C[%d] = %d, expected %d", i,
           hostC[i], 1 - 2 * i + i + offset);
  std::printf("scale -2: sum = %lld\n", record.sums[firstRuns]);

  // The graph's shape as the queries tell it.
  cudaGraphNode_t found[8];
  size_t count = 8;
  CHECK(cudaGraphGetRootNodes(graph, found, &count));
  EXPECT(count == 1 && found[0] == memsetNode && found[1] == nullptr,
         "%zu root nodes", count);
  count = 8;
  CHECK(cudaGraphNodeGetDependencies(addNode, found, nullptr, &count));
  EXPECT(count == 2 && found[0] == scaleNode && found[1] == indexNode,
         "the add node has %zu dependencies", count);
  count = 8;
  CHECK(cudaGraphNodeGetDependentNodes(memsetNode, found, nullptr, &count));
  EXPECT(count == 2 && found[0] == scaleNode && found[1] == indexNode,
         "the memset node has %zu dependents", count);
  cudaGraphNode_t from[8], to[8];
  count = 8;
  CHECK(cudaGraphGetEdges(graph, from, to, nullptr, &count));
  EXPECT(count == 6 && from[5] == copyNode && to[5] == hostNode,
         "the graph has %zu edges", count);
  count = 0;
  CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &count));
  EXPECT(count == 6, "%zu edges counted", count);

  // A clone with its own scale, and without its host node; the instantiated
  // original keeps its own.
  cudaGraph_t clone;
  CHECK(cudaGraphClone(&clone, graph));
  cudaGraphNode_t cloneScale, cloneHost;
  CHECK(cudaGraphNodeFindInClone(&cloneScale, scaleNode, clone));
  CHECK(cudaGraphNodeFindInClone(&cloneHost, hostNode, clone));
  EXPECT(cloneScale != scaleNode, "the clone shares a node");
  int cloneScaleValue = 5;
  void *cloneArgs[] = {&dA, &cloneScaleValue, &n};
  cudaKernelNodeParams cloneParams = scaleParams;
  cloneParams.kernelParams = cloneArgs;
  CHECK(cudaGraphKernelNodeSetParams(cloneScale, &cloneParams));
  CHECK(cudaGraphDestroyNode(cloneHost));
  CHECK(cudaGraphGetNodes(clone, nullptr, &numNodes));
  EXPECT(numNodes == 5, "the clone has %zu nodes after one destroyed",
         numNodes);
  cudaGraphExec_t cloneExec;
  CHECK(cudaGraphInstantiate(&cloneExec, clone, 0));
  CHECK(cudaGraphLaunch(cloneExec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(record.runs == firstRuns + 1, "the destroyed host node ran");
  for (int i = 0; i < kN; ++i)
    EXPECT(hostC[i] == 1 + 5 * i + i + offset, "clone: C[%d] = %d", i,
           hostC[i]);
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(record.sums[firstRuns + 1] == expectedSum(-2, offset),
         "the original after cloning: sum = %lld", record.sums[firstRuns + 1]);
  std::printf("clone: scale 5 without the host node; the original still "
              "scale -2\n");
  CHECK(cudaGraphExecDestroy(cloneExec));

  // cudaGraphExecUpdate: the clone lost its host node (another shape), so
  // it is refused; a fresh clone of the same shape with scale 7 is taken.
  cudaGraphExecUpdateResultInfo info = {};
  EXPECT(cudaGraphExecUpdate(exec, clone, &info) ==
                 cudaErrorGraphExecUpdateFailure &&
             info.result == cudaGraphExecUpdateErrorTopologyChanged,
         "updating from a graph of another shape: result %d", int(info.result));
  cudaGetLastError();
  CHECK(cudaGraphDestroy(clone));
  cudaGraph_t same;
  CHECK(cudaGraphClone(&same, graph));
  cudaGraphNode_t sameScale;
  CHECK(cudaGraphNodeFindInClone(&sameScale, scaleNode, same));
  int seven = 7;
  void *sevenArgs[] = {&dA, &seven, &n};
  cudaKernelNodeParams sevenParams = scaleParams;
  sevenParams.kernelParams = sevenArgs;
  CHECK(cudaGraphKernelNodeSetParams(sameScale, &sevenParams));
  CHECK(cudaGraphExecUpdate(exec, same, &info));
  EXPECT(info.result == cudaGraphExecUpdateSuccess, "update result %d",
         int(info.result));
  int before = record.runs;
  EXPECT(before < kMaxRuns, "host node record full");
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(record.runs == before + 1 &&
             record.sums[before] == expectedSum(7, offset),
         "after cudaGraphExecUpdate: sum = %lld", record.sums[before]);
  std::printf("exec update: scale 7 from a graph of the same shape\n");
  CHECK(cudaGraphDestroy(same));

  // Child graphs, nested: inner (B := i + 10, then B += i) is a node of
  // middle (then A += 3i), which is a node of outer (A := i first, C := A +
  // B last): C = 6i + 10. Each node owns a copy of the graph it was given.
  {
    auto kernelNode = [&](cudaGraph_t g, cudaGraphNode_t *dep, void *func,
                          void **args) {
      cudaKernelNodeParams p = scaleParams;
      p.func = func;
      p.kernelParams = args;
      cudaGraphNode_t node;
      CHECK(cudaGraphAddKernelNode(&node, g, dep, dep ? 1 : 0, &p));
      return node;
    };
    int zero = 0, one = 1, three = 3;
    void *bIndex[] = {&dB, &bOffset, &n}, *bPlus[] = {&dB, &one, &n},
         *aPlus[] = {&dA, &three, &n}, *aIndex[] = {&dA, &zero, &n};
    cudaGraph_t inner, middle, outer;
    CHECK(cudaGraphCreate(&inner, 0));
    cudaGraphNode_t first =
        kernelNode(inner, nullptr, (void *)indexPlus, bIndex);
    kernelNode(inner, &first, (void *)addScaledIndex, bPlus);
    CHECK(cudaGraphCreate(&middle, 0));
    cudaGraphNode_t innerNode;
    CHECK(cudaGraphAddChildGraphNode(&innerNode, middle, nullptr, 0, inner));
    kernelNode(middle, &innerNode, (void *)addScaledIndex, aPlus);
    CHECK(cudaGraphCreate(&outer, 0));
    cudaGraphNode_t start =
        kernelNode(outer, nullptr, (void *)indexPlus, aIndex);
    cudaGraphNode_t middleNode;
    CHECK(cudaGraphAddChildGraphNode(&middleNode, outer, &start, 1, middle));
    kernelNode(outer, &middleNode, (void *)add, addArgs);
    // The nodes own copies: the graphs given can go.
    CHECK(cudaGraphDestroy(inner));
    CHECK(cudaGraphDestroy(middle));
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(middleNode, &type));
    EXPECT(type == cudaGraphNodeTypeGraph, "child node type %d", int(type));
    cudaGraph_t own;
    CHECK(cudaGraphChildGraphNodeGetGraph(middleNode, &own));
    size_t ownNodes = 0;
    CHECK(cudaGraphGetNodes(own, nullptr, &ownNodes));
    EXPECT(ownNodes == 2, "the child graph has %zu nodes", ownNodes);
    EXPECT(cudaGraphDestroy(own) == cudaErrorInvalidValue,
           "a child node's own graph was destroyed");
    cudaGetLastError();
    cudaGraph_t outerClone;
    CHECK(cudaGraphClone(&outerClone, outer));
    CHECK(cudaMemset(dC, 0, bytes));
    for (cudaGraph_t g : {outer, outerClone}) {
      cudaGraphExec_t e;
      CHECK(cudaGraphInstantiate(&e, g, 0));
      CHECK(cudaGraphLaunch(e, stream));
      CHECK(cudaStreamSynchronize(stream));
      std::vector<int> c(kN);
      CHECK(cudaMemcpy(c.data(), dC, bytes, cudaMemcpyDeviceToHost));
      for (int i = 0; i < kN; ++i)
        EXPECT(c[i] == 6 * i + 10, "child graphs: C[%d] = %d", i, c[i]);
      CHECK(cudaGraphExecDestroy(e));
      CHECK(cudaMemset(dC, 0, bytes));
    }
    std::printf("child graphs: nested twice, C[%d] = %d, and a clone\n", kN - 1,
                6 * (kN - 1) + 10);
    CHECK(cudaGraphDestroy(outerClone));
    CHECK(cudaGraphDestroy(outer));
  }

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  CHECK(cudaFreeHost(hostC));
  app::pass();
  return 0;
}
