//===- graphs.cu - A CUDA graph built by hand, as simpleCudaGraphs does
//----===//
//
// NVIDIA's simpleCudaGraphs in miniature: a graph of a host-to-device copy
// given as cudaMemcpy3DParms (one run of bytes), a memset node, two
// reduction kernels, a device-to-host copy (3D parameters again) and a host
// node that checks the sum; instantiated and launched three times, cloned,
// and launched again. Then what the graph API offers around those nodes:
// cudaGraphMemcpyNodeGetParams/SetParams, cudaGraphMemsetNodeGetParams,
// cudaGraphHostNodeGetParams/SetParams, their cudaGraphExec*SetParams
// counterparts on an instantiated graph (a new input, a new memset value, a
// new host callback), and a pitched 2D copy node (rows apart on both sides)
// into cudaMallocPitch memory; nodes turned off and on
// (cudaGraphNodeSetEnabled), an edge removed, the graph as DOT
// (cudaGraphDebugDotPrint); cudaHostGetFlags, the shared memory bank size
// and a 3D copy between "peers" (device 0 and device 0);
// cudaGraphInstantiateWithParams and cudaGraphExecGetFlags.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "sample_graphs"
#include "../CudaApp.h"

#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

constexpr int kN = 1 << 16, kBlocks = 64, kThreads = 256;

// Each block sums its grid-stride share of `in` into partial[blockIdx.x].
__global__ void reducePartial(const float *in, double *partial, int n) {
  __shared__ double s[kThreads];
  double v = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x)
    v += in[i];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k /= 2) {
    if (threadIdx.x < k)
      s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    partial[blockIdx.x] = s[0];
}

__global__ void reduceFinal(const double *partial, double *out, int n) {
  if (threadIdx.x == 0) {
    double sum = 0;
    for (int i = 0; i < n; ++i)
      sum += partial[i];
    *out = sum;
  }
}

struct Check {
  const double *result;
  double expected;
  int calls = 0, good = 0;
};

void CUDART_CB checkSum(void *data) {
  auto *c = static_cast<Check *>(data);
  c->calls++;
  c->good += *c->result == c->expected;
}

void CUDART_CB countOnly(void *data) { ++*static_cast<int *>(data); }

cudaMemcpy3DParms linearCopy(void *dst, const void *src, size_t bytes,
                             cudaMemcpyKind kind) {
  cudaMemcpy3DParms p = {};
  p.srcPtr = make_cudaPitchedPtr(const_cast<void *>(src), bytes, bytes, 1);
  p.dstPtr = make_cudaPitchedPtr(dst, bytes, bytes, 1);
  p.extent = make_cudaExtent(bytes, 1, 1);
  p.kind = kind;
  return p;
}

int main() {
  std::vector<float> input(kN), other(kN);
  double expected = 0, otherExpected = 0;
  for (int i = 0; i < kN; ++i) {
    input[i] = float(i % 97) * 0.5f;
    other[i] = float(i % 13);
    expected += input[i];
    otherExpected += other[i];
  }
  float *in;
  double *partial, *out;
  CHECK(cudaMalloc(&in, kN * sizeof(float)));
  CHECK(cudaMalloc(&partial, kBlocks * sizeof(double)));
  CHECK(cudaMalloc(&out, sizeof(double)));
  double *result;
  CHECK(cudaMallocHost(&result, sizeof(double)));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t copyIn, clear, partialNode, finalNode, copyOut, hostNode;
  cudaMemcpy3DParms inParams =
      linearCopy(in, input.data(), kN * sizeof(float), cudaMemcpyHostToDevice);
  CHECK(cudaGraphAddMemcpyNode(&copyIn, graph, nullptr, 0, &inParams));
  cudaMemsetParams memset = {};
  memset.dst = partial;
  memset.value = 0;
  memset.elementSize = sizeof(float);
  memset.width = kBlocks * 2;
  memset.height = 1;
  CHECK(cudaGraphAddMemsetNode(&clear, graph, nullptr, 0, &memset));

  int n = kN, blocks = kBlocks;
  void *partialArgs[] = {&in, &partial, &n};
  cudaKernelNodeParams k = {};
  k.func = reinterpret_cast<void *>(reducePartial);
  k.gridDim = dim3(kBlocks);
  k.blockDim = dim3(kThreads);
  k.kernelParams = partialArgs;
  cudaGraphNode_t partialDeps[] = {copyIn, clear};
  CHECK(cudaGraphAddKernelNode(&partialNode, graph, partialDeps, 2, &k));
  void *finalArgs[] = {&partial, &out, &blocks};
  k.func = reinterpret_cast<void *>(reduceFinal);
  k.gridDim = dim3(1);
  k.blockDim = dim3(32);
  k.kernelParams = finalArgs;
  CHECK(cudaGraphAddKernelNode(&finalNode, graph, &partialNode, 1, &k));
  cudaMemcpy3DParms outParams =
      linearCopy(result, out, sizeof(double), cudaMemcpyDeviceToHost);
  CHECK(cudaGraphAddMemcpyNode(&copyOut, graph, &finalNode, 1, &outParams));
  Check check{result, expected};
  cudaHostNodeParams host = {checkSum, &check};
  CHECK(cudaGraphAddHostNode(&hostNode, graph, &copyOut, 1, &host));

  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EXPECT(nodes == 6, "the graph has %zu nodes", nodes);

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i)
    CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(check.calls == 3 && check.good == 3,
         "%d of %d launches summed %g (got %g)", check.good, check.calls,
         expected, *result);
  cudaGraph_t clone;
  cudaGraphExec_t cloneExec;
  CHECK(cudaGraphClone(&clone, graph));
  CHECK(cudaGraphInstantiate(&cloneExec, clone, 0));
  CHECK(cudaGraphLaunch(cloneExec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(check.calls == 4 && check.good == 4, "the clone: %d of %d good",
         check.good, check.calls);
  std::printf("sample_graphs: 3 launches and a clone's summed %g\n", expected);

  // The nodes' parameters, read back.
  cudaMemcpy3DParms got = {};
  CHECK(cudaGraphMemcpyNodeGetParams(copyIn, &got));
  EXPECT(got.dstPtr.ptr == in && got.srcPtr.ptr == input.data() &&
             got.extent.width * got.extent.height * got.extent.depth ==
                 kN * sizeof(float) &&
             got.kind == cudaMemcpyHostToDevice,
         "memcpy node parameters read back wrong");
  cudaMemsetParams gotMemset = {};
  CHECK(cudaGraphMemsetNodeGetParams(clear, &gotMemset));
  EXPECT(gotMemset.dst == partial && gotMemset.width == kBlocks * 2 &&
             gotMemset.elementSize == 4,
         "memset node parameters read back wrong");
  cudaHostNodeParams gotHost = {};
  CHECK(cudaGraphHostNodeGetParams(hostNode, &gotHost));
  EXPECT(gotHost.fn == checkSum && gotHost.userData == &check,
         "host node parameters read back wrong");

  // The instantiated graph, updated in place: another input, the host node
  // now counting only; then the graph's own nodes changed and instantiated
  // again.
  cudaMemcpy3DParms otherParams =
      linearCopy(in, other.data(), kN * sizeof(float), cudaMemcpyHostToDevice);
  CHECK(cudaGraphExecMemcpyNodeSetParams(exec, copyIn, &otherParams));
  check.expected = otherExpected;
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(check.calls == 5 && check.good == 5 && *result == otherExpected,
         "after cudaGraphExecMemcpyNodeSetParams: %g, expected %g", *result,
         otherExpected);
  int counted = 0;
  cudaHostNodeParams counter = {countOnly, &counted};
  CHECK(cudaGraphExecHostNodeSetParams(exec, hostNode, &counter));
  CHECK(cudaGraphExecMemsetNodeSetParams(exec, clear, &memset));
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(counted == 1 && check.calls == 5,
         "after cudaGraphExecHostNodeSetParams: counted %d, checked %d",
         counted, check.calls);
  // A copy from host memory cannot replace a device-to-device one in place
  // (it would run in this process, not on the server): refused.
  cudaMemcpy3DParms toDevice =
      linearCopy(partial, out, sizeof(double), cudaMemcpyDeviceToDevice);
  cudaGraphNode_t d2d;
  CHECK(cudaGraphAddMemcpyNode(&d2d, graph, &hostNode, 1, &toDevice));
  CHECK(cudaGraphMemcpyNodeSetParams(copyIn, &otherParams));
  // Instantiated with parameters, as newer code does.
  cudaGraphExec_t exec2;
  cudaGraphInstantiateParams how = {};
  how.flags = cudaGraphInstantiateFlagAutoFreeOnLaunch;
  how.result_out = cudaGraphInstantiateError;
  CHECK(cudaGraphInstantiateWithParams(&exec2, graph, &how));
  unsigned long long execFlags = 0;
  CHECK(cudaGraphExecGetFlags(exec2, &execFlags));
  EXPECT(how.result_out == cudaGraphInstantiateSuccess &&
             how.errNode_out == nullptr &&
             execFlags == cudaGraphInstantiateFlagAutoFreeOnLaunch,
         "cudaGraphInstantiateWithParams: result %d, flags %llu",
         int(how.result_out), execFlags);
  EXPECT(cudaGraphExecMemcpyNodeSetParams(exec2, d2d, &inParams) ==
             cudaErrorInvalidValue,
         "a device-to-device copy node became a host-to-device one in place");
  cudaGetLastError();
  CHECK(cudaGraphLaunch(exec2, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(*result == otherExpected, "the changed graph summed %g", *result);
  std::printf("sample_graphs: node parameters read back and updated in "
              "place\n");

  // A 2D copy node: a host array of 33 rows of 100 floats, 128 apart, into
  // pitched memory; a copy back of the whole pitched block.
  const int w = 100, h = 33, hostPitch = 128;
  std::vector<float> host2d(hostPitch * h, -1.0f), back(hostPitch * h, -2.0f);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      host2d[y * hostPitch + x] = float(y * 1000 + x);
  float *pitched;
  size_t pitch;
  CHECK(cudaMallocPitch(reinterpret_cast<void **>(&pitched), &pitch,
                        w * sizeof(float), h));
  cudaGraph_t g2;
  CHECK(cudaGraphCreate(&g2, 0));
  cudaMemcpy3DParms in2d = {};
  in2d.srcPtr =
      make_cudaPitchedPtr(host2d.data(), hostPitch * sizeof(float), w, h);
  in2d.dstPtr = make_cudaPitchedPtr(pitched, pitch, w, h);
  in2d.extent = make_cudaExtent(w * sizeof(float), h, 1);
  in2d.kind = cudaMemcpyHostToDevice;
  cudaMemcpy3DParms out2d = in2d;
  std::swap(out2d.srcPtr, out2d.dstPtr);
  out2d.dstPtr.ptr = back.data();
  out2d.kind = cudaMemcpyDeviceToHost;
  cudaGraphNode_t n1, n2;
  CHECK(cudaGraphAddMemcpyNode(&n1, g2, nullptr, 0, &in2d));
  CHECK(cudaGraphAddMemcpyNode(&n2, g2, &n1, 1, &out2d));
  cudaGraphExec_t e2;
  CHECK(cudaGraphInstantiate(&e2, g2, 0));
  CHECK(cudaGraphLaunch(e2, stream));
  CHECK(cudaStreamSynchronize(stream));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < hostPitch; ++x)
      EXPECT(back[y * hostPitch + x] == (x < w ? float(y * 1000 + x) : -2.0f),
             "2D copy node: (%d, %d) = %g", x, y, back[y * hostPitch + x]);
  cudaMemcpy3DParms got2d = {};
  CHECK(cudaGraphMemcpyNodeGetParams(n1, &got2d));
  EXPECT(got2d.srcPtr.pitch == hostPitch * sizeof(float) &&
             got2d.dstPtr.pitch == pitch && got2d.extent.height == h,
         "2D copy node parameters read back wrong");
  std::printf("sample_graphs: a pitched 2D copy node both ways\n");

  // Nodes turned off and on in an instantiated graph: without the final
  // kernel the copy brings back what `out` held.
  unsigned enabled = 2;
  CHECK(cudaGraphNodeSetEnabled(exec2, finalNode, 0));
  CHECK(cudaGraphNodeGetEnabled(exec2, finalNode, &enabled));
  EXPECT(enabled == 0, "the final kernel is still enabled");
  CHECK(cudaMemset(out, 0, sizeof(double)));
  CHECK(cudaGraphLaunch(exec2, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(*result == 0.0, "with the final kernel off: %g", *result);
  CHECK(cudaGraphNodeSetEnabled(exec2, finalNode, 1));
  CHECK(cudaGraphLaunch(exec2, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(*result == otherExpected, "with it on again: %g", *result);
  EXPECT(cudaGraphNodeSetEnabled(exec2, hostNode, 0) == cudaErrorInvalidValue,
         "a host node was turned off");
  cudaGetLastError();
  // An edge removed: the 2D graph's copies no longer depend on each other.
  CHECK(cudaGraphRemoveDependencies(g2, &n1, &n2, nullptr, 1));
  size_t edges = 1;
  CHECK(cudaGraphGetEdges(g2, nullptr, nullptr, nullptr, &edges));
  EXPECT(edges == 0, "%zu edges left", edges);
  EXPECT(cudaGraphRemoveDependencies(g2, &n1, &n2, nullptr, 1) ==
             cudaErrorInvalidValue,
         "an edge that is not there was removed");
  cudaGetLastError();
  // The graph as Graphviz's DOT.
  char dot[64];
  std::snprintf(dot, sizeof dot, "/tmp/sample_graphs.%d.dot", int(getpid()));
  CHECK(cudaGraphDebugDotPrint(graph, dot, 0));
  std::string text;
  if (std::FILE *f = std::fopen(dot, "r")) {
    char buf[4096];
    for (size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;)
      text.append(buf, got);
    std::fclose(f);
  }
  std::remove(dot);
  EXPECT(text.rfind("digraph", 0) == 0 &&
             text.find("reducePartial") != std::string::npos &&
             text.find("memset") != std::string::npos &&
             text.find("host") != std::string::npos &&
             text.find(" -> ") != std::string::npos,
         "cudaGraphDebugDotPrint wrote:\n%s", text.c_str());
  std::printf("sample_graphs: nodes turned off and on, an edge removed, the "
              "graph as DOT\n");

  // Around the graphs: pinned memory's flags, the (fixed) shared memory bank
  // size, a 3D copy between "peers" (the one device).
  unsigned flags = 99;
  CHECK(cudaHostGetFlags(&flags, result));
  EXPECT(flags == cudaHostAllocDefault, "cudaMallocHost flags %u", flags);
  float *mapped;
  CHECK(cudaHostAlloc(&mapped, 4096,
                      cudaHostAllocMapped | cudaHostAllocPortable));
  CHECK(cudaHostGetFlags(&flags, mapped + 100));
  EXPECT(flags == (cudaHostAllocMapped | cudaHostAllocPortable),
         "cudaHostAlloc flags %u", flags);
  EXPECT(cudaHostGetFlags(&flags, input.data()) == cudaErrorInvalidValue,
         "flags of memory cudaHostAlloc did not allocate");
  cudaGetLastError();
  CHECK(cudaFreeHost(mapped));
  cudaSharedMemConfig bank;
  CHECK(cudaDeviceGetSharedMemConfig(&bank));
  EXPECT(bank == cudaSharedMemBankSizeFourByte, "bank size %d", int(bank));
  CHECK(cudaDeviceSetSharedMemConfig(cudaSharedMemBankSizeEightByte));
  float *pitched2;
  size_t pitch2;
  CHECK(cudaMallocPitch(reinterpret_cast<void **>(&pitched2), &pitch2,
                        w * sizeof(float), h));
  cudaMemcpy3DPeerParms peer = {};
  peer.srcPtr = make_cudaPitchedPtr(pitched, pitch, w, h);
  peer.dstPtr = make_cudaPitchedPtr(pitched2, pitch2, w, h);
  peer.extent = make_cudaExtent(w * sizeof(float), h, 1);
  CHECK(cudaMemcpy3DPeerAsync(&peer, stream));
  CHECK(cudaStreamSynchronize(stream));
  std::vector<float> peerBack(w * h);
  CHECK(cudaMemcpy2D(peerBack.data(), w * sizeof(float), pitched2, pitch2,
                     w * sizeof(float), h, cudaMemcpyDeviceToHost));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      EXPECT(peerBack[y * w + x] == float(y * 1000 + x),
             "3D peer copy: (%d, %d) = %g", x, y, peerBack[y * w + x]);
  peer.dstDevice = 1;
  EXPECT(cudaMemcpy3DPeer(&peer) == cudaErrorInvalidDevice,
         "a copy to device 1 of 1");
  cudaGetLastError();
  CHECK(cudaFree(pitched2));
  std::printf("sample_graphs: host flags, bank size, a 3D peer copy\n");

  CHECK(cudaGraphExecDestroy(e2));
  CHECK(cudaGraphDestroy(g2));
  CHECK(cudaGraphExecDestroy(exec2));
  CHECK(cudaGraphExecDestroy(cloneExec));
  CHECK(cudaGraphDestroy(clone));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFree(pitched));
  CHECK(cudaFree(in));
  CHECK(cudaFree(partial));
  CHECK(cudaFree(out));
  CHECK(cudaFreeHost(result));
  CHECK(cudaStreamDestroy(stream));
  app::pass();
  return 0;
}
