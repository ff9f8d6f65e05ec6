//===- sgemm.cu - A CUDA-samples-style program ----------------------------===//
//
// SGEMM C = alpha*A*B + beta*C (row-major) in the style of tuned training
// code: 64x64 block tiles, 8-deep K tiles in shared memory loaded with float4
// and __ldg, a 4x4 register tile per thread with #pragma unroll, a transposed
// A tile; plus a naive kernel on a ragged size with bounds checks. Host
// reference in double.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <cstdio>
#include <vector>
#define APP_NAME "sample_sgemm"
#include "../CudaApp.h"

constexpr int BM = 64, BN = 64, BK = 8, TM = 4, TN = 4;

__global__ void __launch_bounds__(256)
    sgemmTiled(int M, int N, int K, float alpha, const float *__restrict__ A,
               const float *__restrict__ B, float beta, float *__restrict__ C) {
  __shared__ float As[BK][BM]; // transposed
  __shared__ __align__(16) float Bs[BK][BN];
  int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
  int rowBase = blockIdx.y * BM, colBase = blockIdx.x * BN;
  float acc[TM][TN] = {};
  // A tile: 64 rows x 8 cols = 128 float4 (2 per row); B tile: 8 x 64 = 128
  // float4.
  for (int k0 = 0; k0 < K; k0 += BK) {
    if (threadIdx.x < 128) {
      int r = threadIdx.x / 2, c = (threadIdx.x % 2) * 4;
      float4 a = __ldg(
          reinterpret_cast<const float4 *>(&A[(rowBase + r) * K + k0 + c]));
      As[c + 0][r] = a.x;
      As[c + 1][r] = a.y;
      As[c + 2][r] = a.z;
      As[c + 3][r] = a.w;
    } else {
      int t = threadIdx.x - 128;
      int r = t / 16, c = (t % 16) * 4;
      *reinterpret_cast<float4 *>(&Bs[r][c]) = __ldg(
          reinterpret_cast<const float4 *>(&B[(k0 + r) * N + colBase + c]));
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i)
        a[i] = As[k][ty * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j)
        b[j] = Bs[k][tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
          acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    float4 *cp = reinterpret_cast<float4 *>(
        &C[(rowBase + ty * TM + i) * N + colBase + tx * TN]);
    float4 c = *cp;
    c.x = alpha * acc[i][0] + beta * c.x;
    c.y = alpha * acc[i][1] + beta * c.y;
    c.z = alpha * acc[i][2] + beta * c.z;
    c.w = alpha * acc[i][3] + beta * c.w;
    *cp = c;
  }
}

__global__ void sgemmNaive(int M, int N, int K, float alpha, const float *A,
                           const float *B, float beta, float *C) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {
    float s = 0;
    for (int k = 0; k < K; ++k)
      s += __ldg(&A[row * K + k]) * __ldg(&B[k * N + col]);
    C[row * N + col] = alpha * s + beta * C[row * N + col];
  }
}

static double run(int M, int N, int K, bool tiled) {
  std::vector<float> A(M * K), B(K * N), C(M * N), out(M * N);
  for (int i = 0; i < M * K; ++i)
    A[i] = float((i * 7) % 13 - 6) / 8.0f;
  for (int i = 0; i < K * N; ++i)
    B[i] = float((i * 5) % 11 - 5) / 4.0f;
  for (int i = 0; i < M * N; ++i)
    C[i] = float(i % 3);
  float *dA, *dB, *dC;
  CHECK(cudaMalloc(&dA, A.size() * 4));
  CHECK(cudaMalloc(&dB, B.size() * 4));
  CHECK(cudaMalloc(&dC, C.size() * 4));
  CHECK(cudaMemcpy(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, B.data(), B.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dC, C.data(), C.size() * 4, cudaMemcpyHostToDevice));
  const float alpha = 1.5f, beta = -0.5f;
  if (tiled)
    sgemmTiled<<<dim3(N / BN, M / BM), 256>>>(M, N, K, alpha, dA, dB, beta, dC);
  else
    sgemmNaive<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(
        M, N, K, alpha, dA, dB, beta, dC);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), dC, C.size() * 4, cudaMemcpyDeviceToHost));
  double maxErr = 0;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      double s = 0;
      for (int k = 0; k < K; ++k)
        s += double(A[r * K + k]) * B[k * N + c];
      double want = alpha * s + beta * C[r * N + c];
      maxErr = std::fmax(maxErr, std::fabs(out[r * N + c] - want));
    }
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  return maxErr;
}

int main() {
  double e1 = run(128, 192, 64, true);
  double e2 = run(67, 45, 33, false);
  std::printf("sgemm: tiled 128x192x64 max error %.3g, naive 67x45x33 %.3g\n",
              e1, e2);
  // Inputs are multiples of 1/32 with small products: sums are exact.
  EXPECT(e1 == 0 && e2 == 0, "errors %g %g", e1, e2);
  app::pass();
  return 0;
}
