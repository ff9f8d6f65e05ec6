//===- half2.cu - A CUDA-samples-style program ----------------------------===//
//
// Half precision: __half2 arithmetic (__hfma2, __hmul2, __hadd2, __hmax2),
// conversions (__floats2half2_rn, __low2float, __half2float), h2exp/hsqrt,
// atomicAdd on __half2 and __half, a half-precision dot product with a float
// accumulator and a warp shuffle of __half2. Host reference with the host
// half conversions of cuda_fp16.h.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <cstdio>
#include <cuda_fp16.h>
#include <vector>
#define APP_NAME "sample_half2"
#include "../CudaApp.h"

constexpr int N = 4096; // halves; N/2 half2

__global__ void axpby(const __half2 *x, const __half2 *y, __half2 *out,
                      __half2 alpha, __half2 beta, int n2) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n2;
       i += blockDim.x * gridDim.x) {
    __half2 t = __hmul2(beta, y[i]);
    out[i] = __hfma2(alpha, x[i], t);
  }
}

__global__ void misc(const __half2 *x, __half2 *maxOut, float2 *f, int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n2)
    return;
  __half2 v = x[i];
  maxOut[i] = __hmax2(v, __hneg2(v)); // |v|
  f[i] = __half22float2(__hadd2(v, __float2half2_rn(1.0f)));
}

__global__ void dot(const __half2 *x, const __half2 *y, float *result,
                    __half2 *sum2, __half *sum1, int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  __half2 p = i < n2 ? __hmul2(x[i], y[i]) : __float2half2_rn(0.0f);
  float acc = __low2float(p) + __high2float(p);
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0)
    atomicAdd(result, acc);
  // Exactly representable atomics: every thread adds (1/4, 1/2) and 1/8.
  if (i < n2) {
    atomicAdd(sum2, __floats2half2_rn(0.25f, 0.5f));
    atomicAdd(sum1, __float2half(0.125f));
  }
  // A shuffle of a __half2.
  __half2 n = __shfl_down_sync(0xffffffffu, p, 1);
  (void)n;
}

static float toHalf(float v) { return __half2float(__float2half(v)); }

int main() {
  int n2 = N / 2;
  std::vector<__half2> x(n2), y(n2), out(n2), mx(n2);
  std::vector<float2> f(n2);
  std::vector<float> xf(N), yf(N);
  for (int i = 0; i < N; ++i) {
    xf[i] = toHalf(((i * 37) % 101 - 50) / 16.0f);
    yf[i] = toHalf(((i * 53) % 89 - 44) / 8.0f);
  }
  for (int i = 0; i < n2; ++i) {
    x[i] = __floats2half2_rn(xf[2 * i], xf[2 * i + 1]);
    y[i] = __floats2half2_rn(yf[2 * i], yf[2 * i + 1]);
  }
  __half2 *dx, *dy, *dout, *dmax, *dsum2;
  __half *dsum1;
  float2 *df;
  float *dres;
  CHECK(cudaMalloc(&dx, n2 * sizeof(__half2)));
  CHECK(cudaMalloc(&dy, n2 * sizeof(__half2)));
  CHECK(cudaMalloc(&dout, n2 * sizeof(__half2)));
  CHECK(cudaMalloc(&dmax, n2 * sizeof(__half2)));
  CHECK(cudaMalloc(&df, n2 * sizeof(float2)));
  CHECK(cudaMalloc(&dres, sizeof(float)));
  CHECK(cudaMalloc(&dsum2, sizeof(__half2)));
  CHECK(cudaMalloc(&dsum1, sizeof(__half)));
  CHECK(cudaMemset(dres, 0, sizeof(float)));
  CHECK(cudaMemset(dsum2, 0, sizeof(__half2)));
  CHECK(cudaMemset(dsum1, 0, sizeof(__half)));
  CHECK(cudaMemcpy(dx, x.data(), n2 * sizeof(__half2), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y.data(), n2 * sizeof(__half2), cudaMemcpyHostToDevice));
  axpby<<<8, 64>>>(dx, dy, dout, __floats2half2_rn(0.5f, 2.0f),
                   __floats2half2_rn(-1.0f, 0.25f), n2);
  CHECK(cudaGetLastError());
  misc<<<(n2 + 127) / 128, 128>>>(dx, dmax, df, n2);
  CHECK(cudaGetLastError());
  // Every sum stays exactly representable in half (see the check below).
  dot<<<(n2 + 255) / 256, 256>>>(dx, dy, dres, dsum2, dsum1, n2);
  CHECK(cudaGetLastError());
  float res;
  __half2 sum2;
  __half sum1;
  CHECK(cudaMemcpy(out.data(), dout, n2 * sizeof(__half2),
                   cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(mx.data(), dmax, n2 * sizeof(__half2),
                   cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(f.data(), df, n2 * sizeof(float2), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&res, dres, sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&sum2, dsum2, sizeof(__half2), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&sum1, dsum1, sizeof(__half), cudaMemcpyDeviceToHost));
  int bad = 0;
  double dotRef = 0;
  for (int i = 0; i < n2; ++i) {
    for (int k = 0; k < 2; ++k) {
      float a = k ? 2.0f : 0.5f, b = k ? 0.25f : -1.0f;
      float xv = xf[2 * i + k], yv = yf[2 * i + k];
      // fma(a, x, round_half(b*y)) rounded once to half.
      float t = toHalf(b * yv);
      float want = toHalf(std::fma(a, xv, t));
      float got = k ? __high2float(out[i]) : __low2float(out[i]);
      if (got != want && bad++ < 5)
        std::printf("axpby[%d.%d]: %g, want %g\n", i, k, got, want);
      float gm = k ? __high2float(mx[i]) : __low2float(mx[i]);
      if (gm != std::fabs(xv) && bad++ < 5)
        std::printf("abs[%d.%d]: %g, want %g\n", i, k, gm, std::fabs(xv));
      float gf = k ? f[i].y : f[i].x;
      if (gf != toHalf(xv + 1.0f) && bad++ < 5)
        std::printf("add1[%d.%d]: %g, want %g\n", i, k, gf, toHalf(xv + 1.0f));
      dotRef += toHalf(xv * yv);
    }
  }
  std::printf("half2: dot %g (host %g), atomics (%g, %g) %g\n", res, dotRef,
              __low2float(sum2), __high2float(sum2), __half2float(sum1));
  EXPECT(bad == 0, "%d element mismatches", bad);
  EXPECT(std::fabs(res - dotRef) < 1e-2 * std::fabs(dotRef) + 1e-2,
         "dot %g vs %g", res, dotRef);
  // n2 = 2048 threads: 2048*0.25 = 512, 2048*0.5 = 1024, 2048*0.125 = 256.
  EXPECT(__low2float(sum2) == 512.0f && __high2float(sum2) == 1024.0f &&
             __half2float(sum1) == 256.0f,
         "half atomics");
  app::pass();
  return 0;
}
