// Warp-level matrix multiply-accumulate with nvcuda::wmma (tensor cores, sm_70+).
// Deterministic for a given GPU, but tensor-core accumulation order/rounding may differ
// from a sequential fp32 C++ reference (compare with a tolerance).
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

// One warp computes a single 16x16 tile: D = A(16x16, half, row-major) *
// B(16x16, half, col-major) + C(16x16, float, row-major). Launch 1 block of 32 threads.
extern "C" __global__ void wmma_16x16x16(const __half* A, const __half* B, const float* C,
                                         float* D) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::load_matrix_sync(a, A, 16);
  wmma::load_matrix_sync(b, B, 16);
  wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
}

// C[M x N] = A[M x K] * B[K x N], all row-major, A/B half, C float; M, N, K multiples of 16.
// One warp per 16x16 output tile: blockDim = 32, grid = (N/16, M/16).
extern "C" __global__ void wmma_gemm(int M, int N, int K, const __half* A, const __half* B,
                                     float* C) {
  int tm = blockIdx.y, tn = blockIdx.x;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(a, A + (size_t)tm * 16 * K + k, K);
    wmma::load_matrix_sync(b, B + (size_t)k * N + tn * 16, N);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(C + (size_t)tm * 16 * N + tn * 16, acc, N, wmma::mem_row_major);
}
