//===- streams_events.cu - Streams, pinned memory and events --------------===//
//
// Three non-blocking streams each copy a chunk in (cudaMemcpyAsync from
// pinned memory), process it and copy it out, then record an event. A fourth
// stream, created with the greatest priority, waits on those three events
// (cudaStreamWaitEvent) and combines the three results on the device, which
// is only right if it really waited. Also: cudaStreamQuery/cudaEventQuery
// while work may be pending, cudaEventSynchronize, cudaEventElapsedTime.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "streams_events"
#include "CudaApp.h"

__global__ void process(const int *in, int *out, int n, int factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i] * factor + 1;
}

__global__ void combine(const int *chunks, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = chunks[i] + chunks[n + i] + chunks[2 * n + i];
}

/// Fails unless `err` is cudaSuccess or cudaErrorNotReady; returns which.
static const char *doneOrPending(cudaError_t err, const char *what) {
  EXPECT(err == cudaSuccess || err == cudaErrorNotReady, "%s returned %s (%s)",
         what, cudaGetErrorName(err), cudaGetErrorString(err));
  return err == cudaSuccess ? "done" : "not ready";
}

int main() {
  const int workers = 3, chunk = 16384, n = (workers + 1) * chunk;
  const size_t chunkBytes = chunk * sizeof(int);

  int leastPriority = 0, greatestPriority = 0;
  CHECK(cudaDeviceGetStreamPriorityRange(&leastPriority, &greatestPriority));
  std::printf("stream priorities: least %d, greatest %d\n", leastPriority,
              greatestPriority);
  EXPECT(greatestPriority <= leastPriority,
         "greatest priority %d is numerically above the least %d",
         greatestPriority, leastPriority);

  cudaStream_t streams[workers], combiner;
  for (cudaStream_t &stream : streams)
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithPriority(&combiner, cudaStreamNonBlocking,
                                     greatestPriority));
  int priority = 0;
  unsigned int flags = 0;
  CHECK(cudaStreamGetPriority(combiner, &priority));
  CHECK(cudaStreamGetFlags(combiner, &flags));
  EXPECT(priority == greatestPriority, "combiner priority %d, expected %d",
         priority, greatestPriority);
  EXPECT(flags == cudaStreamNonBlocking, "combiner flags %u, expected %u",
         flags, cudaStreamNonBlocking);

  int *hostIn, *hostOut, *dIn, *dOut;
  CHECK(cudaMallocHost(&hostIn, n * sizeof(int)));
  CHECK(cudaMallocHost(&hostOut, n * sizeof(int)));
  CHECK(cudaMalloc(&dIn, n * sizeof(int)));
  CHECK(cudaMalloc(&dOut, n * sizeof(int)));
  for (int i = 0; i < n; ++i) {
    hostIn[i] = i % 1000;
    hostOut[i] = -1;
  }

  cudaEvent_t start, stop, done[workers];
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (cudaEvent_t &event : done)
    CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));

  CHECK(cudaEventRecord(start, streams[0]));
  for (int s = 0; s < workers; ++s) {
    size_t offset = size_t(s) * chunk;
    CHECK(cudaMemcpyAsync(dIn + offset, hostIn + offset, chunkBytes,
                          cudaMemcpyHostToDevice, streams[s]));
    process<<<chunk / 256, 256, 0, streams[s]>>>(dIn + offset, dOut + offset,
                                                 chunk, s + 2);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(hostOut + offset, dOut + offset, chunkBytes,
                          cudaMemcpyDeviceToHost, streams[s]));
    CHECK(cudaEventRecord(done[s], streams[s]));
  }
  for (cudaEvent_t event : done)
    CHECK(cudaStreamWaitEvent(combiner, event, 0));
  int *combined = dOut + size_t(workers) * chunk;
  combine<<<chunk / 256, 256, 0, combiner>>>(dOut, combined, chunk);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(hostOut + size_t(workers) * chunk, combined, chunkBytes,
                        cudaMemcpyDeviceToHost, combiner));
  CHECK(cudaEventRecord(stop, combiner));

  // Either answer is right while the work may still be running.
  std::printf("combiner stream: %s\n",
              doneOrPending(cudaStreamQuery(combiner), "cudaStreamQuery"));
  std::printf("stop event: %s\n",
              doneOrPending(cudaEventQuery(stop), "cudaEventQuery"));

  CHECK(cudaEventSynchronize(stop));
  CHECK(cudaEventQuery(stop));
  float ms = -1.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  EXPECT(ms >= 0.0f, "cudaEventElapsedTime gave %g ms", ms);
  for (cudaStream_t stream : streams) {
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaStreamQuery(stream));
  }
  CHECK(cudaStreamSynchronize(combiner));

  long long sum = 0;
  for (int i = 0; i < chunk; ++i) {
    int expectedSum = 0;
    for (int s = 0; s < workers; ++s) {
      int index = s * chunk + i;
      int expected = hostIn[index] * (s + 2) + 1;
      EXPECT(hostOut[index] == expected, "stream %d: out[%d] = %d, expected %d",
             s, index, hostOut[index], expected);
      expectedSum += expected;
    }
    int got = hostOut[workers * chunk + i];
    EXPECT(got == expectedSum, "combined[%d] = %d, expected %d", i, got,
           expectedSum);
    sum += got;
  }
  std::printf("combined sum = %lld\n", sum);

  for (cudaEvent_t event : done)
    CHECK(cudaEventDestroy(event));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  for (cudaStream_t stream : streams)
    CHECK(cudaStreamDestroy(stream));
  CHECK(cudaStreamDestroy(combiner));
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dOut));
  CHECK(cudaFreeHost(hostIn));
  CHECK(cudaFreeHost(hostOut));
  app::pass();
  return 0;
}
