//===- stream_extras.cu - Stream ids and attributes, peer copies ---------===//
//
// cudaStreamGetId (distinct for live streams, stable), stream attributes
// (an access policy window and a synchronisation policy set, read back and
// copied to another stream; the priority read as cudaStreamGetPriority
// gives it; an attribute no stream has is an error), and cudaMemcpyPeer /
// cudaMemcpyPeerAsync between the device and itself (device 1 is an error
// on a machine with one GPU).
//
//===----------------------------------------------------------------------===//

#define APP_NAME "stream_extras"
#include "CudaApp.h"

#include <vector>

__global__ void twice(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = 2 * in[i];
}

int main() {
  cudaStream_t a, b;
  CHECK(cudaStreamCreateWithPriority(&a, cudaStreamNonBlocking, -1));
  CHECK(cudaStreamCreate(&b));
  unsigned long long idA, idB, idA2, idLegacy;
  CHECK(cudaStreamGetId(a, &idA));
  CHECK(cudaStreamGetId(b, &idB));
  CHECK(cudaStreamGetId(a, &idA2));
  CHECK(cudaStreamGetId(0, &idLegacy));
  EXPECT(idA != idB && idA != idLegacy && idB != idLegacy,
         "stream ids not distinct");
  EXPECT(idA == idA2, "a stream's id changed");
  std::printf("stream_extras: 3 distinct stream ids\n");

  int n = 4096;
  int *d;
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  cudaStreamAttrValue window = {};
  window.accessPolicyWindow.base_ptr = d;
  window.accessPolicyWindow.num_bytes = n * sizeof(int);
  window.accessPolicyWindow.hitRatio = 0.5f;
  window.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  window.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  CHECK(cudaStreamSetAttribute(a, cudaStreamAttributeAccessPolicyWindow,
                               &window));
  cudaStreamAttrValue policy = {};
  policy.syncPolicy = cudaSyncPolicyYield;
  CHECK(cudaStreamSetAttribute(a, cudaStreamAttributeSynchronizationPolicy,
                               &policy));
  CHECK(cudaStreamCopyAttributes(b, a));
  for (cudaStream_t s : {a, b}) {
    cudaStreamAttrValue got = {};
    CHECK(
        cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &got));
    EXPECT(got.accessPolicyWindow.base_ptr == d &&
               got.accessPolicyWindow.num_bytes == n * sizeof(int) &&
               got.accessPolicyWindow.hitRatio == 0.5f,
           "the access policy window did not come back");
    CHECK(cudaStreamGetAttribute(s, cudaStreamAttributeSynchronizationPolicy,
                                 &got));
    EXPECT(got.syncPolicy == cudaSyncPolicyYield, "sync policy %d",
           int(got.syncPolicy));
  }
  int priority = 0;
  CHECK(cudaStreamGetPriority(a, &priority));
  cudaStreamAttrValue got = {};
  CHECK(cudaStreamGetAttribute(a, cudaStreamAttributePriority, &got));
  EXPECT(got.priority == priority, "priority attribute %d, stream's %d",
         got.priority, priority);
  std::printf("stream_extras: attributes set, read back, copied\n");

  // Peer copies within the device.
  std::vector<int> host(n);
  for (int i = 0; i < n; ++i)
    host[i] = i * 7;
  int *e, *f;
  CHECK(cudaMalloc(&e, n * sizeof(int)));
  CHECK(cudaMalloc(&f, n * sizeof(int)));
  CHECK(cudaMemcpy(d, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpyPeer(e, 0, d, 0, n * sizeof(int)));
  twice<<<n / 256, 256, 0, a>>>(e, f, n);
  CHECK(cudaMemcpyPeerAsync(d, 0, f, 0, n * sizeof(int), a));
  CHECK(cudaMemcpyAsync(host.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost,
                        a));
  CHECK(cudaStreamSynchronize(a));
  for (int i = 0; i < n; ++i)
    EXPECT(host[i] == 14 * i, "host[%d] = %d", i, host[i]);
  int devices = 0;
  CHECK(cudaGetDeviceCount(&devices));
  if (devices == 1)
    EXPECT(cudaMemcpyPeer(e, 1, d, 0, 4) == cudaErrorInvalidDevice,
           "a copy to device 1");
  cudaGetLastError();
  std::printf("stream_extras: peer copies within the device\n");
  CHECK(cudaStreamDestroy(a));
  CHECK(cudaStreamDestroy(b));
  app::pass();
  return 0;
}
