// Matrix multiplication for a GPT-style training step (llm.c style), written for
// Wooly's compile-time benchmarks: shared-memory tiled SGEMM with register blocking
// (several tile configurations and transposition layouts), a WMMA tensor-core GEMM
// for bf16/half with float accumulation, bias add and bias backward.
// Generic form: C[m][n] = alpha * sum_k A(m,k) * B(k,n) + beta * C[m][n] (+ bias[n]) where
//   A(m,k) = TA ? A[k*lda + m] : A[m*lda + k],   B(k,n) = TB ? B[n*ldb + k] : B[k*ldb + n].
// Forward of a linear layer (out = inp @ W^T + b) is TA=false, TB=true.
// All kernels handle arbitrary M, N, K (edges are zero-padded in shared memory).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <stdint.h>
using namespace nvcuda;

template <typename T> __device__ __forceinline__ float to_f(T x);
template <> __device__ __forceinline__ float to_f<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_f<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Register-blocked tiled GEMM. Block computes a BM x BN tile with (BM/TM)*(BN/TN) threads;
// each thread computes TM x TN outputs. Shared tiles are stored k-major: As[BK][BM+PAD].
template <typename T, int BM, int BN, int BK, int TM, int TN, bool TA, bool TB, bool BIAS>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    gemm_tiled(T* C, const T* A, const T* Bm, const T* bias, int M, int N, int K, int lda, int ldb,
               int ldc, float alpha, float beta) {
  constexpr int NT = (BM / TM) * (BN / TN);
  constexpr int PAD = 4;
  __shared__ float As[BK][BM + PAD];
  __shared__ float Bs[BK][BN + PAD];
  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN), ty = tid / (BN / TN);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll 4
    for (int e = tid; e < BM * BK; e += NT) {
      int mm, kk;
      if (TA) { mm = e % BM; kk = e / BM; } else { kk = e % BK; mm = e / BK; }
      int gm = m0 + mm, gk = k0 + kk;
      float v = 0.0f;
      if (gm < M && gk < K) v = to_f(TA ? A[(int64_t)gk * lda + gm] : A[(int64_t)gm * lda + gk]);
      As[kk][mm] = v;
    }
#pragma unroll 4
    for (int e = tid; e < BN * BK; e += NT) {
      int nn, kk;
      if (TB) { kk = e % BK; nn = e / BK; } else { nn = e % BN; kk = e / BN; }
      int gn = n0 + nn, gk = k0 + kk;
      float v = 0.0f;
      if (gn < N && gk < K) v = to_f(TB ? Bm[(int64_t)gn * ldb + gk] : Bm[(int64_t)gk * ldb + gn]);
      Bs[kk][nn] = v;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[kk][ty * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    int gm = m0 + ty * TM + i;
    if (gm >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      int gn = n0 + tx * TN + j;
      if (gn >= N) continue;
      float v = alpha * acc[i][j];
      if (BIAS) v += to_f(bias[gn]);
      T* c = C + (int64_t)gm * ldc + gn;
      if (beta != 0.0f) v += beta * to_f(*c);
      *c = from_f<T>(v);
    }
  }
}

// Tensor-core GEMM with WMMA 16x16x16 fragments (T = __half or __nv_bfloat16, float accum).
// Block = WARPS_M x WARPS_N warps, each warp computes FM x FN fragments; block tile is
// (16*FM*WARPS_M) x (16*FN*WARPS_N), k-step 32. Tiles are staged through shared memory
// (zero padded), so any M, N, K work. Epilogue goes through shared memory for bias/bounds.
template <typename T, int WARPS_M, int WARPS_N, int FM, int FN, bool TB, bool BIAS, bool ACCUM>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N)
    gemm_wmma(T* C, const T* A, const T* Bm, const T* bias, int M, int N, int K, int lda, int ldb,
              int ldc) {
  constexpr int BM = 16 * FM * WARPS_M, BN = 16 * FN * WARPS_N, BK = 32;
  constexpr int NT = 32 * WARPS_M * WARPS_N;
  constexpr int LDA = BK + 8, LDB = BN + 8, LDC = 16 + 4;
  __shared__ __align__(32) T As[BM * LDA];
  __shared__ __align__(32) T Bs[BK * LDB];
  __shared__ __align__(32) float Cs[WARPS_M * WARPS_N][16 * LDC];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  const T zero = from_f<T>(0.0f);
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = threadIdx.x; e < BM * BK; e += NT) {
      int mm = e / BK, kk = e % BK;
      int gm = m0 + mm, gk = k0 + kk;
      As[mm * LDA + kk] = (gm < M && gk < K) ? A[(int64_t)gm * lda + gk] : zero;
    }
    for (int e = threadIdx.x; e < BN * BK; e += NT) {
      int kk, nn;
      if (TB) { kk = e % BK; nn = e / BK; } else { nn = e % BN; kk = e / BN; }
      int gn = n0 + nn, gk = k0 + kk;
      T v = zero;
      if (gn < N && gk < K) v = TB ? Bm[(int64_t)gn * ldb + gk] : Bm[(int64_t)gk * ldb + gn];
      Bs[kk * LDB + nn] = v;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i)
        wmma::load_matrix_sync(fa[i], As + (wm * FM * 16 + i * 16) * LDA + kk, LDA);
#pragma unroll
      for (int j = 0; j < FN; ++j)
        wmma::load_matrix_sync(fb[j], Bs + kk * LDB + wn * FN * 16 + j * 16, LDB);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }
  float* cs = Cs[warp];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      wmma::store_matrix_sync(cs, acc[i][j], LDC, wmma::mem_row_major);
      __syncwarp();
      int rm = m0 + wm * FM * 16 + i * 16, rn = n0 + wn * FN * 16 + j * 16;
      for (int e = lane; e < 256; e += 32) {
        int r = e / 16, c = e % 16;
        int gm = rm + r, gn = rn + c;
        if (gm < M && gn < N) {
          float v = cs[r * LDC + c];
          if (BIAS) v += to_f(bias[gn]);
          T* p = C + (int64_t)gm * ldc + gn;
          if (ACCUM) v += to_f(*p);
          *p = from_f<T>(v);
        }
      }
      __syncwarp();
    }
}

// dbias[n] += sum_m dout[m][n]. Block of 32 x ROWS threads covers 32 columns; partial sums
// over rows are reduced in shared memory in a fixed order (deterministic).
template <typename T, int ROWS>
__global__ void __launch_bounds__(32 * ROWS)
    bias_backward(T* dbias, const T* dout, int M, int N) {
  __shared__ float part[ROWS][33];
  int n = blockIdx.x * 32 + threadIdx.x;
  float s = 0.0f;
  if (n < N)
    for (int m = threadIdx.y; m < M; m += ROWS) s += to_f(dout[(int64_t)m * N + n]);
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && n < N) {
    float t = 0.0f;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) t += part[r][threadIdx.x];
    dbias[n] = from_f<T>(to_f(dbias[n]) + t);
  }
}

// out[m][n] += bias[n] (vectorizable broadcast add), grid-stride.
template <typename T>
__global__ void add_bias(T* out, const T* bias, int64_t M, int N) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < M * N;
       i += (int64_t)gridDim.x * blockDim.x)
    out[i] = from_f<T>(to_f(out[i]) + to_f(bias[i % N]));
}

#define GT(T, BM, BN, BK, TM, TN, TA, TB, BI)                                                     \
  template __global__ void gemm_tiled<T, BM, BN, BK, TM, TN, TA, TB, BI>(                         \
      T*, const T*, const T*, const T*, int, int, int, int, int, int, float, float);
#define GW(T, WM, WN, FM, FN, TB, BI, AC)                                                         \
  template __global__ void gemm_wmma<T, WM, WN, FM, FN, TB, BI, AC>(                              \
      T*, const T*, const T*, const T*, int, int, int, int, int, int);

// forward (inp @ W^T + b), backward data (dout @ W), backward weight (dout^T @ inp)
GT(float, 64, 64, 8, 4, 4, false, true, true)
GT(float, 64, 32, 8, 4, 2, false, false, false)
GT(float, 32, 32, 16, 2, 2, true, false, false)
GT(__nv_bfloat16, 32, 32, 16, 2, 2, true, false, false)
GW(__nv_bfloat16, 2, 2, 2, 2, true, true, false)
GW(__nv_bfloat16, 2, 2, 1, 2, false, false, true)
GW(__half, 2, 4, 1, 1, false, false, false)
template __global__ void bias_backward<float, 8>(float*, const float*, int, int);
template __global__ void bias_backward<float, 32>(float*, const float*, int, int);
template __global__ void bias_backward<__nv_bfloat16, 16>(__nv_bfloat16*, const __nv_bfloat16*, int, int);
template __global__ void add_bias<float>(float*, const float*, int64_t, int);
template __global__ void add_bias<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, int64_t, int);
