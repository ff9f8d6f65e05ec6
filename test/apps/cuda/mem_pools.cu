//===- mem_pools.cu - Stream-ordered allocation with memory pools --------===//
//
// The idioms of code that allocates in stream order (RAPIDS, PyTorch's
// cudaMallocAsync backend, llm.c): the device's default pool with a release
// threshold, its used and reserved bytes as allocations come and go (and
// the high-water mark reset), a pool of one's own made current and
// allocated from explicitly, access descriptors, and the errors of bad
// arguments. Kernels use the memory in between.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "mem_pools"
#include "CudaApp.h"

#include <cstdint>
#include <vector>

__global__ void fill(int *p, int n, int v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = v + i;
}

__global__ void add(const int *a, const int *b, int *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}

uint64_t attribute(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  uint64_t v = 0;
  CHECK(cudaMemPoolGetAttribute(pool, attr, &v));
  return v;
}

int main() {
  const int n = 1 << 16;
  const size_t bytes = n * sizeof(int);
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  cudaMemPool_t pool;
  CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  cudaMemPool_t current;
  CHECK(cudaDeviceGetMemPool(&current, 0));
  EXPECT(current == pool, "the current pool is not the default one");
  uint64_t threshold = UINT64_MAX;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold,
                                &threshold));
  EXPECT(attribute(pool, cudaMemPoolAttrReleaseThreshold) == UINT64_MAX,
         "release threshold not kept");
  int reuse = 0;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic,
                                &reuse));
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolReuseAllowOpportunistic,
                                &reuse));
  EXPECT(reuse == 0, "reuse attribute not kept");

  uint64_t before = attribute(pool, cudaMemPoolAttrUsedMemCurrent);
  // What RMM and PyTorch's cudaMallocAsync backend check first.
  int pools = 0;
  CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  EXPECT(pools == 1 && prop.memoryPoolsSupported == 1,
         "memory pools supported: attribute %d, property %d", pools,
         prop.memoryPoolsSupported);
  int *a, *b, *c;
  CHECK(cudaMallocAsync(&a, bytes, stream));
  CHECK(cudaMallocAsync(&b, bytes, stream));
  CHECK(cudaMallocAsync(&c, bytes, stream));
  fill<<<n / 256, 256, 0, stream>>>(a, n, 1);
  fill<<<n / 256, 256, 0, stream>>>(b, n, 1000);
  add<<<n / 256, 256, 0, stream>>>(a, b, c, n);
  std::vector<int> host(n);
  CHECK(cudaMemcpyAsync(host.data(), c, bytes, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  for (int i = 0; i < n; ++i)
    EXPECT(host[i] == 1001 + 2 * i, "c[%d] = %d", i, host[i]);
  uint64_t used = attribute(pool, cudaMemPoolAttrUsedMemCurrent) - before;
  EXPECT(used >= 3 * bytes, "used %llu after 3 allocations",
         (unsigned long long)used);
  EXPECT(attribute(pool, cudaMemPoolAttrReservedMemCurrent) >= used + before,
         "fewer bytes reserved than used");
  std::printf("mem_pools: default pool, 3 allocations in use: %llu bytes\n",
              (unsigned long long)used);
  CHECK(cudaFreeAsync(a, stream));
  CHECK(cudaFreeAsync(b, stream));
  CHECK(cudaStreamSynchronize(stream));
  uint64_t after = attribute(pool, cudaMemPoolAttrUsedMemCurrent) - before;
  uint64_t high = attribute(pool, cudaMemPoolAttrUsedMemHigh) - before;
  EXPECT(after < used && high >= used, "used %llu, high %llu after freeing 2",
         (unsigned long long)after, (unsigned long long)high);
  uint64_t zero = 0;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
  EXPECT(attribute(pool, cudaMemPoolAttrUsedMemHigh) ==
             attribute(pool, cudaMemPoolAttrUsedMemCurrent),
         "the high-water mark was not reset to the current use");
  std::printf("mem_pools: 2 freed: %llu bytes in use, high-water mark %llu, "
              "reset\n",
              (unsigned long long)after, (unsigned long long)high);
  uint64_t one = 1;
  EXPECT(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &one) ==
             cudaErrorInvalidValue,
         "a high-water mark set to 1");
  EXPECT(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &one) ==
             cudaErrorInvalidValue,
         "the current use set");
  cudaGetLastError();

  // A pool of one's own.
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t mine;
  CHECK(cudaMemPoolCreate(&mine, &props));
  cudaMemAccessDesc access = {};
  access.location = props.location;
  access.flags = cudaMemAccessFlagsProtReadWrite;
  CHECK(cudaMemPoolSetAccess(mine, &access, 1));
  cudaMemAccessFlags flags;
  cudaMemLocation where = props.location;
  CHECK(cudaMemPoolGetAccess(&flags, mine, &where));
  EXPECT(flags == cudaMemAccessFlagsProtReadWrite, "access flags %d",
         int(flags));
  int *d;
  CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void **>(&d), bytes, mine,
                                stream));
  EXPECT(attribute(mine, cudaMemPoolAttrUsedMemCurrent) >= bytes,
         "the own pool does not count its allocation");
  CHECK(cudaDeviceSetMemPool(0, mine));
  CHECK(cudaDeviceGetMemPool(&current, 0));
  EXPECT(current == mine, "cudaDeviceSetMemPool did not make it current");
  int *e;
  CHECK(cudaMallocAsync(&e, bytes, stream));
  EXPECT(attribute(mine, cudaMemPoolAttrUsedMemCurrent) >= 2 * bytes,
         "cudaMallocAsync did not allocate from the current pool");
  fill<<<n / 256, 256, 0, stream>>>(d, n, 5);
  add<<<n / 256, 256, 0, stream>>>(d, c, e, n);
  CHECK(cudaMemcpyAsync(host.data(), e, bytes, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  for (int i = 0; i < n; ++i)
    EXPECT(host[i] == 1006 + 3 * i, "e[%d] = %d", i, host[i]);
  CHECK(cudaFreeAsync(d, stream));
  CHECK(cudaFreeAsync(e, stream));
  CHECK(cudaFree(c));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemPoolTrimTo(mine, 0));
  CHECK(cudaDeviceSetMemPool(0, pool));
  CHECK(cudaMemPoolDestroy(mine));
  std::printf("mem_pools: own pool made current, allocated from, destroyed\n");

  // Bad arguments.
  cudaMemPool_t other;
  EXPECT(cudaDeviceGetDefaultMemPool(&other, 1) == cudaErrorInvalidDevice,
         "a default pool of device 1");
  props.location.id = 1;
  EXPECT(cudaMemPoolCreate(&other, &props) == cudaErrorInvalidDevice,
         "a pool on device 1");
  EXPECT(cudaMemPoolDestroy(pool) != cudaSuccess, "the default pool destroyed");
  cudaGetLastError();
  CHECK(cudaStreamDestroy(stream));
  app::pass();
  return 0;
}
