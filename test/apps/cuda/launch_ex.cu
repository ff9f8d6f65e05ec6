//===- launch_ex.cu - cudaLaunchKernelEx and its launch attributes -------===//
//
// Launches through cudaLaunchKernelEx with the attributes real code sets
// (CUTLASS, PyTorch, llm.c): programmatic dependent launch (the second
// kernel waits in cudaGridDependencySynchronize for the first, which calls
// cudaTriggerProgrammaticLaunchCompletion), a cluster of one block, an
// access policy window, a shared memory carveout and a priority; each
// result is checked. A cluster of two blocks runs on a GPU of its own
// (cluster ranks checked) or, where clusters are not supported (Wooly),
// must fail with cudaErrorNotSupported and leave the process usable.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "launch_ex"
#include "CudaApp.h"

#include <cooperative_groups.h>
#include <vector>

namespace cg = cooperative_groups;

__global__ void produce(int *data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] = i * 3;
  cudaTriggerProgrammaticLaunchCompletion();
}

__global__ void consume(const int *data, int *out, int n) {
  cudaGridDependencySynchronize();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = data[n - 1 - i] + 1;
}

__global__ void clusterRanks(int *out) {
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0)
    out[blockIdx.x] =
        int(cluster.block_rank()) * 100 + int(cluster.num_blocks());
}

int main() {
  const int n = 1000;
  int *data, *out;
  CHECK(cudaMalloc(&data, n * sizeof(int)));
  CHECK(cudaMalloc(&out, n * sizeof(int)));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  cudaLaunchConfig_t config = {};
  config.gridDim = dim3((n + 255) / 256);
  config.blockDim = dim3(256);
  config.stream = stream;
  CHECK(cudaLaunchKernelEx(&config, produce, data, n));

  cudaLaunchAttribute attrs[6] = {};
  attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[0].val.programmaticStreamSerializationAllowed = 1;
  attrs[1].id = cudaLaunchAttributeClusterDimension;
  attrs[1].val.clusterDim.x = 1;
  attrs[1].val.clusterDim.y = 1;
  attrs[1].val.clusterDim.z = 1;
  attrs[2].id = cudaLaunchAttributeAccessPolicyWindow;
  attrs[2].val.accessPolicyWindow.base_ptr = data;
  attrs[2].val.accessPolicyWindow.num_bytes = n * sizeof(int);
  attrs[2].val.accessPolicyWindow.hitRatio = 1.0f;
  attrs[2].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  attrs[2].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  attrs[3].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
  attrs[3].val.sharedMemCarveout = 50;
  attrs[4].id = cudaLaunchAttributePriority;
  attrs[4].val.priority = 0;
  attrs[5].id = cudaLaunchAttributeIgnore;
  config.attrs = attrs;
  config.numAttrs = 6;
  CHECK(cudaLaunchKernelEx(&config, consume, (const int *)data, out, n));
  CHECK(cudaStreamSynchronize(stream));
  std::vector<int> host(n);
  CHECK(cudaMemcpy(host.data(), out, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    EXPECT(host[i] == (n - 1 - i) * 3 + 1, "out[%d] = %d", i, host[i]);
  std::printf("launch_ex: programmatic dependent launch with hints, %d "
              "elements\n",
              n);

  cudaLaunchAttribute cluster = {};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = 2;
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  config.gridDim = dim3(4);
  config.blockDim = dim3(32);
  config.attrs = &cluster;
  config.numAttrs = 1;
  cudaError_t err = cudaLaunchKernelEx(&config, clusterRanks, out);
  if (err == cudaSuccess) {
    CHECK(cudaStreamSynchronize(stream));
    CHECK(
        cudaMemcpy(host.data(), out, 4 * sizeof(int), cudaMemcpyDeviceToHost));
    for (int b = 0; b < 4; ++b)
      EXPECT(host[b] == (b % 2) * 100 + 2, "cluster rank of block %d: %d", b,
             host[b]);
    std::printf("launch_ex: clusters of 2 blocks ran\n");
  } else {
    EXPECT(err == cudaErrorNotSupported, "a cluster of 2: %s",
           cudaGetErrorName(err));
    EXPECT(cudaGetLastError() == cudaErrorNotSupported,
           "the error was not kept for cudaGetLastError");
    std::printf("launch_ex: clusters of 2 blocks: cudaErrorNotSupported\n");
  }
  // The process goes on working.
  config.gridDim = dim3((n + 255) / 256);
  config.blockDim = dim3(256);
  config.numAttrs = 0;
  CHECK(cudaLaunchKernelEx(&config, produce, data, n));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaStreamDestroy(stream));
  app::pass();
  return 0;
}
