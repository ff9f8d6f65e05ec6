//===- layernorm.cu - A CUDA-samples-style program ------------------------===//
//
// LayerNorm forward and backward in the style of llm.c: one warp per row
// (cooperative_groups::thread_block_tile<32> with cg::reduce), mean/rstd
// saved, the backward pass accumulates dweight/dbias in shared memory and
// then globally with atomicAdd. Checked against a host reference.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cstdio>
#include <vector>
#define APP_NAME "sample_layernorm"
#include "../CudaApp.h"

namespace cg = cooperative_groups;

constexpr int B = 4, T = 16, C = 96, N = B * T;

__global__ void layernormForward(float *__restrict__ out,
                                 float *__restrict__ mean,
                                 float *__restrict__ rstd,
                                 const float *__restrict__ inp,
                                 const float *__restrict__ weight,
                                 const float *__restrict__ bias, int n, int c) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
  if (idx >= n)
    return;
  const float *x = inp + idx * c;
  float sum = 0.0f;
  for (int i = warp.thread_rank(); i < c; i += warp.size())
    sum += x[i];
  sum = cg::reduce(warp, sum, cg::plus<float>{});
  float m = sum / c;
  if (warp.thread_rank() == 0)
    mean[idx] = m;
  sum = 0.0f;
  for (int i = warp.thread_rank(); i < c; i += warp.size()) {
    float diff = x[i] - m;
    sum += diff * diff;
  }
  sum = cg::reduce(warp, sum, cg::plus<float>{});
  float s = rsqrtf(sum / c + 1e-5f);
  if (warp.thread_rank() == 0)
    rstd[idx] = s;
  float *o = out + idx * c;
  for (int i = warp.thread_rank(); i < c; i += warp.size())
    o[i] = s * (__ldcs(x + i) - m) * weight[i] + bias[i];
}

__global__ void layernormBackward(float *dinp, float *dweight, float *dbias,
                                  const float *dout, const float *inp,
                                  const float *weight, const float *mean,
                                  const float *rstd, int n, int c) {
  extern __shared__ float shared[]; // dbias[c], dweight[c]
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  int base = blockIdx.x * warp.meta_group_size();
  int idx = base + warp.meta_group_rank();
  float *dbiasShared = shared, *dweightShared = shared + c;
  for (int i = threadIdx.x; i < c; i += blockDim.x) {
    dbiasShared[i] = 0.0f;
    dweightShared[i] = 0.0f;
  }
  __syncthreads();
  if (idx < n) {
    const float *doutRow = dout + idx * c, *inpRow = inp + idx * c;
    float *dinpRow = dinp + idx * c;
    float m = mean[idx], s = rstd[idx];
    float dnormMean = 0.0f, dnormNormMean = 0.0f;
    for (int i = warp.thread_rank(); i < c; i += warp.size()) {
      float normI = (inpRow[i] - m) * s;
      float dnormI = weight[i] * doutRow[i];
      dnormMean += dnormI;
      dnormNormMean += dnormI * normI;
    }
    dnormMean = cg::reduce(warp, dnormMean, cg::plus<float>{}) / c;
    dnormNormMean = cg::reduce(warp, dnormNormMean, cg::plus<float>{}) / c;
    for (int i = warp.thread_rank(); i < c; i += warp.size()) {
      float normI = (inpRow[i] - m) * s;
      float dnormI = weight[i] * doutRow[i];
      atomicAdd(&dbiasShared[i], doutRow[i]);
      atomicAdd(&dweightShared[i], normI * doutRow[i]);
      float dval = dnormI - dnormMean - normI * dnormNormMean;
      dinpRow[i] += dval * s;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < c; i += blockDim.x) {
    atomicAdd(&dbias[i], dbiasShared[i]);
    atomicAdd(&dweight[i], dweightShared[i]);
  }
}

int main() {
  std::vector<float> inp(N * C), w(C), b(C), dout(N * C);
  unsigned seed = 7;
  auto rnd = [&] {
    seed = seed * 1103515245u + 12345u;
    return ((seed >> 9) & 0xffff) / 65536.0f * 2.0f - 1.0f;
  };
  for (auto &v : inp)
    v = rnd() * 3.0f;
  for (auto &v : w)
    v = 1.0f + 0.2f * rnd();
  for (auto &v : b)
    v = 0.1f * rnd();
  for (auto &v : dout)
    v = rnd();
  float *dInp, *dW, *dB, *dOut, *dMean, *dRstd, *dDout, *dDinp, *dDw, *dDb;
  size_t bytes = N * C * sizeof(float);
  CHECK(cudaMalloc(&dInp, bytes));
  CHECK(cudaMalloc(&dOut, bytes));
  CHECK(cudaMalloc(&dDout, bytes));
  CHECK(cudaMalloc(&dDinp, bytes));
  CHECK(cudaMalloc(&dW, C * sizeof(float)));
  CHECK(cudaMalloc(&dB, C * sizeof(float)));
  CHECK(cudaMalloc(&dDw, C * sizeof(float)));
  CHECK(cudaMalloc(&dDb, C * sizeof(float)));
  CHECK(cudaMalloc(&dMean, N * sizeof(float)));
  CHECK(cudaMalloc(&dRstd, N * sizeof(float)));
  CHECK(cudaMemcpy(dInp, inp.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dDout, dout.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dW, w.data(), C * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, b.data(), C * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dDinp, 0, bytes));
  CHECK(cudaMemset(dDw, 0, C * sizeof(float)));
  CHECK(cudaMemset(dDb, 0, C * sizeof(float)));
  const int blockSize = 128, warpsPerBlock = blockSize / 32;
  int grid = (N + warpsPerBlock - 1) / warpsPerBlock;
  layernormForward<<<grid, blockSize>>>(dOut, dMean, dRstd, dInp, dW, dB, N, C);
  CHECK(cudaGetLastError());
  layernormBackward<<<grid, blockSize, 2 * C * sizeof(float)>>>(
      dDinp, dDw, dDb, dDout, dInp, dW, dMean, dRstd, N, C);
  CHECK(cudaGetLastError());
  std::vector<float> out(N * C), dinp(N * C), dw(C), db(C), mean(N), rstd(N);
  CHECK(cudaMemcpy(out.data(), dOut, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(dinp.data(), dDinp, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(dw.data(), dDw, C * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(db.data(), dDb, C * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(mean.data(), dMean, N * sizeof(float),
                   cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(rstd.data(), dRstd, N * sizeof(float),
                   cudaMemcpyDeviceToHost));
  // Host reference in double.
  std::vector<double> rdw(C, 0), rdb(C, 0);
  double errFwd = 0, errBwd = 0, errStats = 0;
  for (int r = 0; r < N; ++r) {
    const float *x = &inp[r * C];
    double m = 0;
    for (int i = 0; i < C; ++i)
      m += x[i];
    m /= C;
    double v = 0;
    for (int i = 0; i < C; ++i)
      v += (x[i] - m) * (x[i] - m);
    v /= C;
    double s = 1.0 / std::sqrt(v + 1e-5);
    errStats = std::fmax(errStats,
                         std::fabs(mean[r] - m) + std::fabs(rstd[r] - s) / s);
    double dm = 0, dnm = 0;
    for (int i = 0; i < C; ++i) {
      double norm = (x[i] - m) * s;
      errFwd =
          std::fmax(errFwd, std::fabs(out[r * C + i] - (norm * w[i] + b[i])));
      double dn = w[i] * dout[r * C + i];
      dm += dn;
      dnm += dn * norm;
      rdb[i] += dout[r * C + i];
      rdw[i] += norm * dout[r * C + i];
    }
    dm /= C;
    dnm /= C;
    for (int i = 0; i < C; ++i) {
      double norm = (x[i] - m) * s;
      double dn = w[i] * dout[r * C + i];
      double d = (dn - dm - norm * dnm) * s;
      errBwd = std::fmax(errBwd, std::fabs(dinp[r * C + i] - d));
    }
  }
  double errParam = 0;
  for (int i = 0; i < C; ++i)
    errParam = std::fmax(errParam,
                         std::fabs(dw[i] - rdw[i]) + std::fabs(db[i] - rdb[i]));
  std::printf(
      "layernorm: fwd %.2g, stats %.2g, dinp %.2g, dweight+dbias %.2g\n",
      errFwd, errStats, errBwd, errParam);
  EXPECT(errFwd < 1e-4 && errStats < 1e-4 && errBwd < 1e-4 && errParam < 1e-3,
         "errors too large");
  app::pass();
  return 0;
}
