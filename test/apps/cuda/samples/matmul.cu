//===- matmul.cu - A CUDA-samples-style program ---------------------------===//
//
// Tiled matrix multiply in the style of NVIDIA's matrixMul sample: templated
// shared-memory tiles (16 and 32), a non-blocking stream, asynchronous
// copies, event timing.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <cstdio>
#include <cstdlib>
#define APP_NAME "sample_matmul"
#include "../CudaApp.h"

template <int BLOCK_SIZE>
__global__ void MatrixMulCUDA(float *C, const float *A, const float *B, int wA,
                              int wB) {
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int aBegin = wA * BLOCK_SIZE * by, aEnd = aBegin + wA - 1, aStep = BLOCK_SIZE;
  int bBegin = BLOCK_SIZE * bx, bStep = BLOCK_SIZE * wB;
  float Csub = 0;
  for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
    __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
    As[ty][tx] = A[a + wA * ty + tx];
    Bs[ty][tx] = B[b + wB * ty + tx];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BLOCK_SIZE; ++k)
      Csub += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  int c = wB * BLOCK_SIZE * by + BLOCK_SIZE * bx;
  C[c + wB * ty + tx] = Csub;
}

template <int BS> bool run(int N) {
  size_t bytes = N * N * sizeof(float);
  float *hA = (float *)malloc(bytes), *hB = (float *)malloc(bytes),
        *hC = (float *)malloc(bytes), *ref = (float *)malloc(bytes);
  for (int i = 0; i < N * N; i++) {
    hA[i] = (float)((i * 7) % 13) / 13.f;
    hB[i] = (float)((i * 3) % 11) / 11.f - 0.5f;
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < N; k++)
        s += (double)hA[i * N + k] * hB[k * N + j];
      ref[i * N + j] = (float)s;
    }
  float *dA, *dB, *dC;
  CHECK(cudaMalloc(&dA, bytes));
  CHECK(cudaMalloc(&dB, bytes));
  CHECK(cudaMalloc(&dC, bytes));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK(cudaMemcpyAsync(dA, hA, bytes, cudaMemcpyHostToDevice, stream));
  CHECK(cudaMemcpyAsync(dB, hB, bytes, cudaMemcpyHostToDevice, stream));
  dim3 threads(BS, BS), grid(N / BS, N / BS);
  MatrixMulCUDA<BS><<<grid, threads, 0, stream>>>(dC, dA, dB, N, N); // warmup
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(stream));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  int nIter = 3;
  CHECK(cudaEventRecord(start, stream));
  for (int j = 0; j < nIter; j++)
    MatrixMulCUDA<BS><<<grid, threads, 0, stream>>>(dC, dA, dB, N, N);
  CHECK(cudaEventRecord(stop, stream));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  float msPer = ms / nIter;
  double flops = 2.0 * N * N * N;
  printf("BLOCK_SIZE=%d N=%d: %.3f ms/iter, %.4f GFLOP/s\n", BS, N, msPer,
         flops * 1e-9 / (msPer / 1000.0));
  CHECK(cudaMemcpyAsync(hC, dC, bytes, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  int bad = 0;
  for (int i = 0; i < N * N; i++)
    if (fabs(hC[i] - ref[i]) > 1e-3 * (1 + fabs(ref[i]))) {
      if (bad < 5)
        printf("mismatch %d: %f vs %f\n", i, hC[i], ref[i]);
      bad++;
    }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  free(hA);
  free(hB);
  free(hC);
  free(ref);
  return bad == 0;
}

int main() {
  int dev = 0;
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, dev));
  printf("Device: %s, CC %d.%d\n", p.name, p.major, p.minor);
  bool ok = run<16>(128) && run<32>(128);
  printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
