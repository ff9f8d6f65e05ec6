//===- launch_loop.cu - CPU cost of <<<>>> launches through capture -------===//
//
// An ordinary CUDA program (nvcc's default architecture, -cudart shared) for
// bench/capture-bench.py: N launches of a tiny kernel in a loop without
// synchronising, timed on the calling thread (CPU time and wall time), then
// one cudaDeviceSynchronize, timed on its own. Run with Wooly's
// libcudart.so.13 first on LD_LIBRARY_PATH, every launch goes through the
// capture layer to the client library; wooly-capture-launch-direct
// (launch-direct.cpp) makes the same launches of the same PTX through the
// client library directly.
//
//   launch_loop [N]     (default 200000)
//
// Prints one line (the fields are the same as launch-direct's):
//
//   launches=N cpu_ns_per_launch=C wall_ns_per_launch=W sync_ms=S
//   total_ns_per_launch=T proc_cpu_ns_per_launch=P
//
// C and W cover the launch loop alone; S is the synchronisation after it;
// T = (loop wall + sync) / N, the end-to-end rate; P is the process's CPU
// time (all threads, ZeroMQ's I/O thread too) from the loop's start to the
// end of the synchronisation, per launch. Exit status 1 (and a message on
// stderr) when a CUDA call fails or the kernel's result is wrong.
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <cstdlib>
#include <ctime>

__global__ void tick(int *p, int v) {
  if (threadIdx.x == 0 && blockIdx.x == 0)
    p[0] = v;
}

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "launch_loop: %s: %s (%s)\n", #call,                \
                   cudaGetErrorName(e_), cudaGetErrorString(e_));              \
      return 1;                                                                \
    }                                                                          \
  } while (0)

static double now(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

int main(int argc, char **argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 200000;
  if (n < 1 || n > (1L << 30)) {
    std::fprintf(stderr, "usage: launch_loop [N >= 1]\n");
    return 1;
  }
  int *p;
  CHECK(cudaMalloc(&p, sizeof(int)));
  // Warm-up: the first launch loads the module (and the server compiles
  // the kernel).
  tick<<<1, 32>>>(p, -1);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  double c0 = now(CLOCK_THREAD_CPUTIME_ID);
  double p0 = now(CLOCK_PROCESS_CPUTIME_ID);
  double w0 = now(CLOCK_MONOTONIC);
  for (long i = 0; i < n; ++i)
    tick<<<1, 32>>>(p, int(i));
  double c1 = now(CLOCK_THREAD_CPUTIME_ID);
  double w1 = now(CLOCK_MONOTONIC);
  // A launch error would be sticky in the thread's last error.
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  double w2 = now(CLOCK_MONOTONIC);
  double p1 = now(CLOCK_PROCESS_CPUTIME_ID);

  int v = 0;
  CHECK(cudaMemcpy(&v, p, sizeof v, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(p));
  if (v != int(n - 1)) {
    std::fprintf(stderr, "launch_loop: p[0] = %d after the loop, expected %ld\n",
                 v, n - 1);
    return 1;
  }
  std::printf("launches=%ld cpu_ns_per_launch=%.1f wall_ns_per_launch=%.1f "
              "sync_ms=%.3f total_ns_per_launch=%.1f "
              "proc_cpu_ns_per_launch=%.1f\n",
              n, (c1 - c0) / double(n), (w1 - w0) / double(n),
              (w2 - w1) / 1e6, (w2 - w0) / double(n), (p1 - p0) / double(n));
  return 0;
}
