//===- host_api.cu - A CUDA-samples-style program -------------------------===//
//
// Host-side runtime API the way tutorials use it (managed memory is not
// supported by Wooly's capture): cudaGetDeviceProperties,
// cudaOccupancyMaxPotentialBlockSize sizing a grid-stride launch, __device__
// counters read back with cudaMemcpyFromSymbol, pinned
// memory with cudaMemcpyAsync on two streams, events timing, cudaMemset2D,
// cudaMemcpy2D.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <vector>
#define APP_NAME "sample_host_api"
#include "../CudaApp.h"

__device__ int launches;
__device__ int devCounter;

__global__ void saxpy(int n, float a, const float *x, float *y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    atomicAdd(&launches, 1);
    atomicAdd(&devCounter, 1);
  }
}

__global__ void scale2D(float *p, size_t pitch, int w, int h, float s) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) {
    float *row = (float *)((char *)p + y * pitch);
    row[x] = row[x] * s + float(x + y);
  }
}

int main() {
  cudaDeviceProp prop;
  int dev;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device %d: %s, cc %d.%d, %d SMs, warp %d, managed %d, "
              "concurrentManaged %d\n",
              dev, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
              prop.warpSize, prop.managedMemory, prop.concurrentManagedAccess);
  EXPECT(prop.warpSize == 32, "warpSize %d", prop.warpSize);
  // The PTX's architecture (built for sm_80: the driver runs compute_80 PTX
  // on newer GPUs; CUB picks its tuning policies by it) and the device's.
  cudaFuncAttributes fa;
  CHECK(cudaFuncGetAttributes(&fa, saxpy));
  std::printf("saxpy: ptxVersion %d\n", fa.ptxVersion);
  EXPECT(fa.ptxVersion == 80 || fa.ptxVersion == prop.major * 10 + prop.minor,
         "ptxVersion %d", fa.ptxVersion);
  EXPECT(fa.binaryVersion == prop.major * 10 + prop.minor, "binaryVersion %d",
         fa.binaryVersion);
  int minGrid = 0, blockSize = 0;
  CHECK(cudaOccupancyMaxPotentialBlockSize(&minGrid, &blockSize, saxpy, 0, 0));
  EXPECT(blockSize > 0 && blockSize <= prop.maxThreadsPerBlock && minGrid > 0,
         "occupancy %d %d", minGrid, blockSize);
  const int n = 1 << 16;
  std::vector<float> x(n), y(n);
  float *dx, *dy;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  for (int i = 0; i < n; ++i) {
    x[i] = float(i % 1000);
    y[i] = 1.0f;
  }
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  int grid = (n + blockSize - 1) / blockSize;
  if (grid > 4 * prop.multiProcessorCount)
    grid = 4 * prop.multiProcessorCount;
  saxpy<<<grid, blockSize>>>(n, 2.0f, dx, dy);
  saxpy<<<grid, blockSize>>>(n, 0.5f, dx, dy);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    float want = 0.5f * x[i] + (2.0f * x[i] + 1.0f);
    if (y[i] != want && bad++ < 5)
      std::printf("y[%d] = %g, want %g\n", i, y[i], want);
  }
  int counter, launches;
  CHECK(cudaMemcpyFromSymbol(&counter, devCounter, sizeof(int)));
  CHECK(cudaMemcpyFromSymbol(&launches, ::launches, sizeof(int)));
  EXPECT(launches == 2 && counter == 2, "launches %d, counter %d", launches,
         counter);

  // Pinned memory, two streams, events.
  const int half = n / 2;
  float *h, *d;
  CHECK(cudaMallocHost(&h, n * sizeof(float)));
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  for (int i = 0; i < n; ++i)
    h[i] = float(i);
  cudaStream_t streams[2];
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (auto &s : streams)
    CHECK(cudaStreamCreate(&s));
  CHECK(cudaEventRecord(start, 0));
  for (int k = 0; k < 2; ++k) {
    float *hp = h + k * half, *dp = d + k * half;
    CHECK(cudaMemcpyAsync(dp, hp, half * sizeof(float), cudaMemcpyHostToDevice,
                          streams[k]));
    saxpy<<<8, 256, 0, streams[k]>>>(half, 3.0f, dp, dp);
    CHECK(cudaMemcpyAsync(hp, dp, half * sizeof(float), cudaMemcpyDeviceToHost,
                          streams[k]));
  }
  CHECK(cudaEventRecord(stop, 0));
  CHECK(cudaEventSynchronize(stop));
  float ms = -1;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  EXPECT(ms >= 0, "elapsed %g", ms);
  for (int i = 0; i < n; ++i)
    if (h[i] != 4.0f * float(i) && bad++ < 5)
      std::printf("h[%d] = %g, want %g\n", i, h[i], 4.0f * i);

  // Pitched 2D.
  const int w = 37, rows = 19;
  float *p;
  size_t pitch;
  CHECK(cudaMallocPitch(&p, &pitch, w * sizeof(float), rows));
  CHECK(cudaMemset2D(p, pitch, 0, w * sizeof(float), rows));
  std::vector<float> host2(w * rows);
  for (int i = 0; i < w * rows; ++i)
    host2[i] = float(i);
  CHECK(cudaMemcpy2D(p, pitch, host2.data(), w * sizeof(float),
                     w * sizeof(float), rows, cudaMemcpyHostToDevice));
  scale2D<<<dim3(3, 2), dim3(16, 16)>>>(p, pitch, w, rows, 2.0f);
  std::vector<float> back(w * rows);
  CHECK(cudaMemcpy2D(back.data(), w * sizeof(float), p, pitch,
                     w * sizeof(float), rows, cudaMemcpyDeviceToHost));
  for (int yy = 0; yy < rows; ++yy)
    for (int xx = 0; xx < w; ++xx) {
      float want = 2.0f * float(yy * w + xx) + float(xx + yy);
      if (back[yy * w + xx] != want && bad++ < 5)
        std::printf("2d[%d][%d] = %g, want %g\n", yy, xx, back[yy * w + xx],
                    want);
    }
  EXPECT(bad == 0, "%d mismatches", bad);
  std::printf("managed: block %d, grid %d, %d launches\n", blockSize, grid,
              launches);
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  CHECK(cudaFreeHost(h));
  CHECK(cudaFree(d));
  CHECK(cudaFree(p));
  for (auto &s : streams)
    CHECK(cudaStreamDestroy(s));
  app::pass();
  return 0;
}
