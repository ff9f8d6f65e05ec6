//===- misbehave.cu - A tenant that faults, hangs or grabs, on purpose ----===//
//
// `misbehave MODE` does one bad thing and checks that CUDA reports it the way
// a GPU of its own would; it passes (exit 0, `PASS misbehave-MODE`) when the
// error is the expected one. Run next to healthy tenants on one wooly-serve
// (test/apps/containment.py), it shows that a tenant's fault stays its own.
//
//   trap        a kernel executes __trap()          -> a launch failure
//   assert      a device assert fails               -> cudaErrorAssert
//   wild        a store 1 TiB past its buffer       -> a launch failure
//   misaligned  a 4-byte store at an odd address    -> a misaligned address
//   spin        a kernel that never ends            -> a launch failure (the
//               server's watchdog; run it with a short --kernel-timeout-ms)
//   recurse     a device function recursing without end -> a launch failure
//   quota       allocates until refused (then frees, allocates again and
//               works: nothing leaked)  -> cudaErrorMemoryAllocation
//   disconnect  starts a 64 MiB copy and exits at once, mid-copy (passes
//               if it gets that far; the server must clean up)
//
//===----------------------------------------------------------------------===//

#define APP_NAME "misbehave"
#include "CudaApp.h"

#include <cassert>
#include <string>
#include <unistd.h>
#include <vector>

__global__ void trapKernel(int *out) {
  out[threadIdx.x] = 1;
  if (threadIdx.x == 5)
    __trap();
}

__global__ void assertKernel(const int *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(in[i] < n);
}

__global__ void wildKernel(int *data, unsigned long long offsetBytes) {
  int *target =
      reinterpret_cast<int *>(reinterpret_cast<char *>(data) + offsetBytes);
  target[threadIdx.x] = 42;
}

__global__ void misalignedKernel(char *data, int offset) {
  *reinterpret_cast<int *>(data + offset) = 7;
}

__global__ void spinKernel(volatile int *flag, int *out) {
  int n = 0;
  while (*flag == 0)
    ++n;
  out[threadIdx.x] = n;
}

__device__ __noinline__ int deeper(volatile int *p, int depth) {
  int local[16];
  for (int i = 0; i < 16; ++i)
    local[i] = p[i] + depth;
  // Never 0: the recursion does not end; the array keeps the frames real.
  return deeper(p, depth + 1) + local[depth & 15];
}

__global__ void recurseKernel(volatile int *p, int *out) {
  out[0] = deeper(p, 0);
}

static bool isLaunchFault(cudaError_t e) {
  return e == cudaErrorLaunchFailure || e == cudaErrorIllegalAddress ||
         e == cudaErrorIllegalInstruction || e == cudaErrorLaunchTimeout;
}

/// Syncs and checks that the error is `ok(e)`; prints it.
template <typename Ok> static void expectFault(const char *what, Ok ok) {
  cudaError_t e = cudaDeviceSynchronize();
  std::printf("%s: cudaDeviceSynchronize returned %s\n", what,
              cudaGetErrorName(e));
  EXPECT(ok(e), "%s: unexpected %s (%s)", what, cudaGetErrorName(e),
         cudaGetErrorString(e));
  // Sticky, as on a GPU of its own.
  cudaError_t again = cudaDeviceSynchronize();
  EXPECT(again == e, "%s: the error is not sticky (then %s)", what,
         cudaGetErrorName(again));
}

int main(int argc, char **argv) {
  if (argc != 2)
    app::fail("usage: misbehave "
              "trap|assert|wild|misaligned|spin|recurse|quota|disconnect");
  std::string mode = argv[1];
  int *buf = nullptr;
  CHECK(cudaMalloc(&buf, 4096));
  CHECK(cudaMemset(buf, 0, 4096));

  if (mode == "trap") {
    trapKernel<<<1, 32>>>(buf);
    expectFault("trap", isLaunchFault);
  } else if (mode == "assert") {
    std::vector<int> host(64, 0);
    host[17] = 100;
    CHECK(
        cudaMemcpy(buf, host.data(), 64 * sizeof(int), cudaMemcpyHostToDevice));
    assertKernel<<<2, 32>>>(buf, 64);
    expectFault("assert", [](cudaError_t e) { return e == cudaErrorAssert; });
  } else if (mode == "wild") {
    wildKernel<<<1, 32>>>(buf, 1ull << 40);
    expectFault("wild", isLaunchFault);
  } else if (mode == "misaligned") {
    misalignedKernel<<<1, 1>>>(reinterpret_cast<char *>(buf), 1);
    expectFault("misaligned",
                [](cudaError_t e) { return e == cudaErrorMisalignedAddress; });
  } else if (mode == "spin") {
    spinKernel<<<2, 64>>>(buf, buf + 256);
    expectFault("spin", isLaunchFault);
  } else if (mode == "recurse") {
    recurseKernel<<<1, 1>>>(buf, buf + 256);
    expectFault("recurse", isLaunchFault);
  } else if (mode == "quota") {
    std::vector<void *> held;
    cudaError_t e = cudaSuccess;
    size_t total = 0;
    for (int i = 0; i < 4096; ++i) {
      void *p = nullptr;
      e = cudaMalloc(&p, 16 << 20);
      if (e != cudaSuccess)
        break;
      held.push_back(p);
      total += 16 << 20;
    }
    std::printf("quota: refused after %zu MiB with %s\n", total >> 20,
                cudaGetErrorName(e));
    EXPECT(e == cudaErrorMemoryAllocation,
           "quota: expected "
           "cudaErrorMemoryAllocation, got %s",
           cudaGetErrorName(e));
    cudaGetLastError(); // Not sticky: clears it.
    for (void *p : held)
      CHECK(cudaFree(p));
    // Everything came back: the same amount fits again.
    for (size_t i = 0; i < held.size(); ++i)
      CHECK(cudaMalloc(&held[i], 16 << 20));
    for (void *p : held)
      CHECK(cudaFree(p));
    trapKernel<<<1, 4>>>(buf); // threadIdx.x < 5: no trap
    CHECK(cudaDeviceSynchronize());
  } else if (mode == "disconnect") {
    size_t bytes = 64 << 20;
    void *dev = nullptr;
    CHECK(cudaMalloc(&dev, bytes));
    std::vector<char> host(bytes, 3);
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMemcpyAsync(dev, host.data(), bytes, cudaMemcpyHostToDevice, s));
    std::printf("PASS %s-%s\n", APP_NAME, mode.c_str());
    std::fflush(stdout);
    _exit(0); // Mid-copy, without freeing or closing anything.
  } else {
    app::fail("unknown mode '%s'", mode.c_str());
  }
  std::printf("PASS %s-%s\n", APP_NAME, mode.c_str());
  return 0;
}
