//===- conv.cu - A CUDA-samples-style program for capture tests -----------===//
//
// A 5x5 image convolution with the filter in __constant__ memory
// (cudaMemcpyToSymbol and back), shared-memory tiles with clamped borders,
// five iterations swapping buffers.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <cstdio>
#include <cstdlib>
#define APP_NAME "sample_conv"
#include "../CudaApp.h"
#define R 2
#define FW (2 * R + 1)
#define TILE 16
__constant__ float c_filter[FW * FW];
__constant__ int c_dims[2];
__global__ void conv2d(const float *__restrict__ in, float *__restrict__ out) {
  int W = c_dims[0], H = c_dims[1];
  __shared__ float tile[TILE + 2 * R][TILE + 2 * R];
  int x0 = blockIdx.x * TILE, y0 = blockIdx.y * TILE;
  for (int j = threadIdx.y; j < TILE + 2 * R; j += TILE)
    for (int i = threadIdx.x; i < TILE + 2 * R; i += TILE) {
      int gx = min(max(x0 + i - R, 0), W - 1),
          gy = min(max(y0 + j - R, 0), H - 1);
      tile[j][i] = in[gy * W + gx];
    }
  __syncthreads();
  int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
  if (x < W && y < H) {
    float s = 0.f;
#pragma unroll
    for (int fy = 0; fy < FW; fy++)
#pragma unroll
      for (int fx = 0; fx < FW; fx++)
        s += c_filter[fy * FW + fx] * tile[threadIdx.y + fy][threadIdx.x + fx];
    out[y * W + x] = s;
  }
}
int main() {
  const int W = 100, H = 72, iters = 5;
  float hf[FW * FW];
  float tot = 0;
  for (int i = 0; i < FW * FW; i++) {
    hf[i] = 1.f + (i % 3);
    tot += hf[i];
  }
  for (int i = 0; i < FW * FW; i++)
    hf[i] /= tot;
  int dims[2] = {W, H};
  CHECK(cudaMemcpyToSymbol(c_filter, hf, sizeof(hf)));
  CHECK(cudaMemcpyToSymbol(c_dims, dims, sizeof(dims)));
  float back[FW * FW];
  CHECK(cudaMemcpyFromSymbol(back, c_filter, sizeof(back)));
  for (int i = 0; i < FW * FW; i++)
    if (back[i] != hf[i]) {
      printf("symbol readback mismatch\n");
      return 1;
    }
  size_t bytes = W * H * sizeof(float);
  float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes),
        *res = (float *)malloc(bytes);
  for (int i = 0; i < W * H; i++)
    a[i] = (float)((i * 31) % 97) / 97.f;
  float *da, *db;
  CHECK(cudaMalloc(&da, bytes));
  CHECK(cudaMalloc(&db, bytes));
  CHECK(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
  dim3 blk(TILE, TILE), grd((W + TILE - 1) / TILE, (H + TILE - 1) / TILE);
  for (int it = 0; it < iters; it++) {
    conv2d<<<grd, blk>>>(da, db);
    CHECK(cudaGetLastError());
    float *t = da;
    da = db;
    db = t;
    // host reference
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++) {
        float s = 0;
        for (int fy = 0; fy < FW; fy++)
          for (int fx = 0; fx < FW; fx++) {
            int gx = std::min(std::max(x + fx - R, 0), W - 1),
                gy = std::min(std::max(y + fy - R, 0), H - 1);
            s += hf[fy * FW + fx] * a[gy * W + gx];
          }
        b[y * W + x] = s;
      }
    float *t2 = a;
    a = b;
    b = t2;
  }
  CHECK(cudaMemcpy(res, da, bytes, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < W * H; i++)
    if (fabsf(res[i] - a[i]) > 1e-4f) {
      if (bad < 5)
        printf("px %d: %f vs %f\n", i, res[i], a[i]);
      bad++;
    }
  printf("res[123]=%f\n", res[123]);
  cudaFree(da);
  cudaFree(db);
  printf("%s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
