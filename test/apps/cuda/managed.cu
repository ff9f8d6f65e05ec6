//===- managed.cu - Managed and mapped memory
//-------------------------------===//
//
// cudaMallocManaged as tutorials use it (initialise on the host, launch,
// synchronise, read), several launches and host updates between
// synchronisations, cudaMemcpy/cudaMemset on managed memory, a linked
// structure of managed pointers walked by a kernel, prefetch/advise hints,
// pointer attributes, streams and events as synchronisation points, the
// host's writes reaching kernels in other non-blocking streams,
// allocate-and-free churn, mapped pinned memory (cudaHostAllocMapped +
// cudaHostGetDevicePointer), registered host memory (cudaHostRegister),
// and __managed__ variables: read and written by
// the host before any launch, by kernels, and only read by a kernel after
// the host changed them. Valid on a GPU too.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "managed"
#include "CudaApp.h"

#include <cmath>
#include <cstring>
#include <vector>

__global__ void add(int n, const float *x, float *y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x)
    y[i] = x[i] + y[i];
}

__global__ void scale(int n, float *y, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] *= a;
}

__managed__ int launches = 100;
__managed__ float table[4] = {1, 2, 3, 4};

// Counts its threads in `launches` and reads `table`, which only the host
// writes.
__global__ void useTable(float *out) {
  atomicAdd(&launches, 1);
  out[threadIdx.x] = table[threadIdx.x % 4] * 2.0f;
}

__global__ void touchFirst(int *p) { p[0] += 1; }
__global__ void readLast(const int *p, size_t n, int *out) { *out = p[n - 1]; }

struct Node {
  int value;
  Node *next;
};

// One thread walks the list and writes its values, in order.
__global__ void walk(const Node *head, int *out) {
  int k = 0;
  for (const Node *p = head; p; p = p->next)
    out[k++] = p->value;
}

__global__ void fill(int *p, int n, int base) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = base + i;
}

int main() {
  // Mapped pinned memory as the program's first CUDA call (it needs the
  // session); used at the end.
  int *mapped, *mappedDevice;
  CHECK(cudaHostAlloc(&mapped, 256 * sizeof(int), cudaHostAllocMapped));

  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  EXPECT(prop.managedMemory == 1, "managedMemory = %d", prop.managedMemory);

  // The tutorial: 1M floats, x = 1, y = 2, y = x + y.
  const int n = 1 << 20;
  float *x, *y;
  CHECK(cudaMallocManaged(&x, n * sizeof(float)));
  CHECK(cudaMallocManaged(&y, n * sizeof(float)));
  for (int i = 0; i < n; ++i) {
    x[i] = 1.0f;
    y[i] = 2.0f;
  }
  add<<<(n + 255) / 256, 256>>>(n, x, y);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  float maxError = 0;
  for (int i = 0; i < n; ++i)
    maxError = std::fmax(maxError, std::fabs(y[i] - 3.0f));
  std::printf("add: max error %g\n", maxError);
  EXPECT(maxError == 0, "y = x + y: max error %g", maxError);

  // Two launches, then a host update, then two more.
  scale<<<(n + 255) / 256, 256>>>(n, y, 2.0f); // 6
  add<<<64, 256>>>(n, x, y);                   // 7
  CHECK(cudaDeviceSynchronize());
  EXPECT(y[0] == 7.0f && y[n - 1] == 7.0f, "y = %g .. %g", y[0], y[n - 1]);
  for (int i = 0; i < n; i += 2)
    y[i] = -1.0f;
  add<<<64, 256>>>(n, x, y);                   // 0 / 8
  scale<<<(n + 255) / 256, 256>>>(n, y, 0.5f); // 0 / 4
  CHECK(cudaStreamSynchronize(0));
  for (int i = 0; i < n; ++i)
    EXPECT(y[i] == (i % 2 ? 4.0f : 0.0f), "y[%d] = %g", i, y[i]);

  // Host writes, then kernels in two non-blocking streams at once: each
  // finds the host's values.
  for (int i = 0; i < n; ++i)
    y[i] = float(i % 7);
  cudaStream_t a, b;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  scale<<<(n / 2 + 255) / 256, 256, 0, a>>>(n / 2, y, 3.0f);
  scale<<<(n / 2 + 255) / 256, 256, 0, b>>>(n / 2, y + n / 2, 5.0f);
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < n; ++i)
    EXPECT(y[i] == float(i % 7) * (i < n / 2 ? 3.0f : 5.0f), "y[%d] = %g", i,
           y[i]);

  // The host's writes reach a kernel in another non-blocking stream as well
  // as the launch that sent them: a buffer large enough that its copy takes
  // a while, a launch in a, then one in b that reads the buffer's end and
  // writes a managed result (which the copy must not overwrite later).
  {
    const size_t m = size_t(16) << 20; // 64 MiB of ints
    int *big, *seen;
    CHECK(cudaMallocManaged(&big, m * sizeof(int)));
    CHECK(cudaMallocManaged(&seen, sizeof(int)));
    for (int round = 1; round <= 3; ++round) {
      big[m - 1] = round * 10;
      *seen = -1;
      touchFirst<<<1, 1, 0, a>>>(big);
      readLast<<<1, 1, 0, b>>>(big, m, seen);
      CHECK(cudaDeviceSynchronize());
      EXPECT(*seen == round * 10,
             "round %d: the kernel in the other stream read %d, not %d", round,
             *seen, round * 10);
    }
    std::printf("streams: the host's writes reach both streams' kernels\n");
    CHECK(cudaFree(big));
    CHECK(cudaFree(seen));
  }
  CHECK(cudaStreamDestroy(a));
  CHECK(cudaStreamDestroy(b));

  // Copies and memsets into and out of managed memory.
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i)
    host[i] = float(i % 1000);
  CHECK(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  EXPECT(x[999] == 999.0f, "x[999] = %g after cudaMemcpy", x[999]);
  CHECK(cudaMemset(y, 0, n * sizeof(float)));
  EXPECT(y[12345] == 0.0f, "y[12345] = %g after cudaMemset", y[12345]);
  add<<<64, 256>>>(n, x, y);
  std::vector<float> back(n);
  CHECK(cudaMemcpy(back.data(), y, n * sizeof(float), cudaMemcpyDefault));
  EXPECT(back[1999] == 999.0f && y[1999] == 999.0f, "back %g, y %g", back[1999],
         y[1999]);

  // Hints and attributes.
  cudaMemLocation device = {cudaMemLocationTypeDevice, 0};
  CHECK(cudaMemPrefetchAsync(x, n * sizeof(float), device, 0, 0));
  CHECK(
      cudaMemAdvise(x, n * sizeof(float), cudaMemAdviseSetReadMostly, device));
  cudaPointerAttributes attr;
  CHECK(cudaPointerGetAttributes(&attr, y + 10));
  EXPECT(attr.type == cudaMemoryTypeManaged, "type %d", int(attr.type));
  // The hints read back, per part of the range: x is read-mostly and was
  // prefetched to the device; its first half prefers the host, and the
  // device accesses its second half.
  size_t half = n / 2 * sizeof(float);
  cudaMemLocation onHost = {cudaMemLocationTypeHost, 0};
  CHECK(cudaMemAdvise(x, half, cudaMemAdviseSetPreferredLocation, onHost));
  CHECK(cudaMemAdvise(x + n / 2, half, cudaMemAdviseSetAccessedBy, device));
  auto rangeInt = [&](cudaMemRangeAttribute a, const void *p, size_t bytes) {
    int v = -100;
    CHECK(cudaMemRangeGetAttribute(&v, sizeof v, a, p, bytes));
    return v;
  };
  const size_t all = n * sizeof(float);
  int readMostly = rangeInt(cudaMemRangeAttributeReadMostly, x, all);
  int prefetched = rangeInt(cudaMemRangeAttributeLastPrefetchLocation, x, all);
  int preferredFirst =
      rangeInt(cudaMemRangeAttributePreferredLocation, x, half);
  int preferredAll = rangeInt(cudaMemRangeAttributePreferredLocation, x, all);
  int preferredType =
      rangeInt(cudaMemRangeAttributePreferredLocationType, x + 10, 64);
  int accessed[2] = {-100, -100};
  CHECK(cudaMemRangeGetAttribute(accessed, sizeof accessed,
                                 cudaMemRangeAttributeAccessedBy, x + n / 2,
                                 half));
  int accessedAll = -100;
  CHECK(cudaMemRangeGetAttribute(&accessedAll, sizeof accessedAll,
                                 cudaMemRangeAttributeAccessedBy, x, all));
  std::printf("advice: read-mostly %d, prefetched to %d, preferred %d "
              "(type %d) then %d, accessed by %d %d then %d\n",
              readMostly, prefetched, preferredFirst, preferredType,
              preferredAll, accessed[0], accessed[1], accessedAll);
  EXPECT(readMostly == 1 && prefetched == 0 &&
             preferredFirst == cudaCpuDeviceId &&
             preferredType == cudaMemLocationTypeHost &&
             preferredAll == cudaInvalidDeviceId && accessed[0] == 0 &&
             accessed[1] == cudaInvalidDeviceId &&
             accessedAll == cudaInvalidDeviceId,
         "cudaMemRangeGetAttribute does not give back the hints");
  CHECK(cudaMemAdvise(x, all, cudaMemAdviseUnsetReadMostly, device));
  EXPECT(rangeInt(cudaMemRangeAttributeReadMostly, x + 5, 4) == 0,
         "read-mostly stayed after cudaMemAdviseUnsetReadMostly");
  // Not managed memory, and a range past the allocation: refused.
  int bad = 0;
  EXPECT(cudaMemRangeGetAttribute(&bad, sizeof bad,
                                  cudaMemRangeAttributeReadMostly, host.data(),
                                  64) == cudaErrorInvalidValue &&
             cudaMemRangeGetAttribute(&bad, sizeof bad,
                                      cudaMemRangeAttributeReadMostly, x,
                                      all + 4096) == cudaErrorInvalidValue,
         "cudaMemRangeGetAttribute took memory that is not managed");
  cudaGetLastError();

  // A linked list in managed memory.
  const int count = 10;
  Node *nodes;
  int *values;
  CHECK(cudaMallocManaged(&nodes, count * sizeof(Node)));
  CHECK(cudaMallocManaged(&values, count * sizeof(int)));
  // Linked in the order 0 3 6 9 2 5 8 1 4 7.
  int order[count] = {0, 3, 6, 9, 2, 5, 8, 1, 4, 7};
  for (int i = 0; i < count; ++i)
    nodes[i].value = i * i;
  for (int i = 0; i < count; ++i)
    nodes[order[i]].next = i + 1 < count ? &nodes[order[i + 1]] : nullptr;
  walk<<<1, 1>>>(&nodes[order[0]], values);
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  CHECK(cudaEventRecord(done));
  CHECK(cudaEventSynchronize(done));
  for (int i = 0; i < count; ++i)
    EXPECT(values[i] == order[i] * order[i], "list[%d] = %d", i, values[i]);
  std::printf("list: %d %d %d ... %d\n", values[0], values[1], values[2],
              values[count - 1]);
  CHECK(cudaEventDestroy(done));

  // Allocate, use and free, many times.
  for (int round = 0; round < 50; ++round) {
    int *p;
    const int m = 1000 + round * 37;
    CHECK(cudaMallocManaged(&p, m * sizeof(int)));
    fill<<<(m + 127) / 128, 128>>>(p, m, round * 100);
    CHECK(cudaDeviceSynchronize());
    EXPECT(p[0] == round * 100 && p[m - 1] == round * 100 + m - 1,
           "round %d: %d .. %d", round, p[0], p[m - 1]);
    CHECK(cudaFree(p));
  }

  // Mapped pinned memory: the kernel writes the host's buffer.
  std::memset(mapped, 0xff, 256 * sizeof(int));
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void **>(&mappedDevice),
                                 mapped, 0));
  fill<<<2, 128>>>(mappedDevice, 200, 7);
  CHECK(cudaDeviceSynchronize());
  EXPECT(mapped[0] == 7 && mapped[199] == 206 && mapped[200] == -1,
         "mapped: %d %d %d", mapped[0], mapped[199], mapped[200]);
  std::printf("mapped: %d %d %d\n", mapped[0], mapped[199], mapped[200]);
  CHECK(cudaFreeHost(mapped));

  // Registered host memory (cudaHostRegister): the program's own buffer,
  // mapped. Its device pointer is cudaHostGetDevicePointer's (the host's
  // where canUseHostPointerForRegisteredMem is 1); a pointer into the
  // middle maps to the middle; the host's writes between launches reach
  // the kernel, the kernel's reach the host after a synchronisation.
  EXPECT(prop.canMapHostMemory == 1 && prop.hostRegisterSupported == 1,
         "canMapHostMemory %d, hostRegisterSupported %d", prop.canMapHostMemory,
         prop.hostRegisterSupported);
  {
    std::vector<int> own(1000, -1);
    CHECK(cudaHostRegister(own.data(), own.size() * sizeof(int),
                           cudaHostRegisterMapped));
    EXPECT(cudaHostRegister(own.data() + 10, 4, 0) ==
               cudaErrorHostMemoryAlreadyRegistered,
           "registering part of a registered range again");
    cudaGetLastError();
    int *ownDevice, *middle;
    CHECK(cudaHostGetDevicePointer(reinterpret_cast<void **>(&ownDevice),
                                   own.data(), 0));
    CHECK(cudaHostGetDevicePointer(reinterpret_cast<void **>(&middle),
                                   own.data() + 500, 0));
    EXPECT(middle == ownDevice + 500, "device pointer of the middle");
    cudaPointerAttributes where;
    CHECK(cudaPointerGetAttributes(&where, own.data() + 3));
    EXPECT(where.type == cudaMemoryTypeHost, "registered memory's type %d",
           int(where.type));
    CHECK(cudaPointerGetAttributes(&where, middle));
    EXPECT(where.type != cudaMemoryTypeManaged,
           "the device copy of registered memory counts as managed");
    EXPECT(prop.canUseHostPointerForRegisteredMem || ownDevice != own.data(),
           "registered memory's device pointer is the host's");
    fill<<<2, 128>>>(ownDevice, 200, 3);
    CHECK(cudaDeviceSynchronize());
    own[999] = 42; // the host writes; the next launch reads it
    fill<<<1, 32>>>(middle, 10, own[999]);
    CHECK(cudaDeviceSynchronize());
    std::printf("registered: %d %d %d %d %d\n", own[0], own[199], own[200],
                own[500], own[509]);
    EXPECT(own[0] == 3 && own[199] == 202 && own[200] == -1 && own[500] == 42 &&
               own[509] == 51 && own[999] == 42,
           "registered: %d %d %d %d %d %d", own[0], own[199], own[200],
           own[500], own[509], own[999]);
    CHECK(cudaHostUnregister(own.data()));
    EXPECT(cudaHostUnregister(own.data()) == cudaErrorHostMemoryNotRegistered,
           "unregistering twice");
    cudaGetLastError();
    // Registered without cudaHostRegisterMapped: mapped all the same (as
    // with unified addressing), and plain copies need no device pointer.
    std::vector<int> staging(64, 5);
    CHECK(cudaHostRegister(staging.data(), 64 * sizeof(int),
                           cudaHostRegisterDefault));
    int *dev;
    CHECK(cudaMalloc(&dev, 64 * sizeof(int)));
    CHECK(cudaMemcpy(dev, staging.data(), 64 * sizeof(int),
                     cudaMemcpyHostToDevice));
    fill<<<1, 32>>>(dev, 16, 100);
    CHECK(cudaMemcpy(staging.data(), dev, 64 * sizeof(int),
                     cudaMemcpyDeviceToHost));
    EXPECT(staging[0] == 100 && staging[15] == 115 && staging[16] == 5,
           "registered staging: %d %d %d", staging[0], staging[15],
           staging[16]);
    CHECK(cudaHostUnregister(staging.data()));
    CHECK(cudaFree(dev));
  }

  // __managed__ variables.
  EXPECT(launches == 100 && table[3] == 4.0f, "initial %d %g", launches,
         table[3]);
  table[2] = 30.0f;
  float *twice;
  CHECK(cudaMallocManaged(&twice, 8 * sizeof(float)));
  useTable<<<1, 8>>>(twice);
  CHECK(cudaDeviceSynchronize());
  EXPECT(launches == 108, "launches = %d", launches);
  EXPECT(twice[2] == 60.0f && twice[6] == 60.0f && twice[1] == 4.0f,
         "twice: %g %g %g", twice[2], twice[6], twice[1]);
  launches += 1000;
  table[2] = -1.0f;
  useTable<<<1, 8>>>(twice);
  CHECK(cudaDeviceSynchronize());
  std::printf("__managed__: launches %d, twice[2] %g\n", launches, twice[2]);
  EXPECT(launches == 1116 && twice[2] == -2.0f, "launches %d, twice[2] %g",
         launches, twice[2]);
  CHECK(cudaFree(twice));

  CHECK(cudaFree(nodes));
  CHECK(cudaFree(values));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  app::pass();
  return 0;
}
