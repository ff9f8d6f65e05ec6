// wmma GEMM tiles beyond f16: double (dmma, m8n8k4, sm_80), tf32 (m16n16k8),
// bf16 (m16n16k16) and 8-bit integers (m16n16k16), one warp per output tile.
// The CPU backend's arithmetic (lib/Runtime/CPU/WarpMatrix.cpp) is exact for
// the integer and double tiles; tf32/bf16 products are exact in f32 and
// accumulated in k order.
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;

// C[M x N] = A[M x K] * B[K x N] + C, doubles, all row-major; M, N, K
// multiples of 8. blockDim = 32, grid = (N/8, M/8).
extern "C" __global__ void dmma_gemm(int M, int N, int K, const double* A, const double* B, double* C) {
  int tm = blockIdx.y, tn = blockIdx.x;
  wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc;
  wmma::load_matrix_sync(acc, C + (size_t)tm * 8 * N + tn * 8, N, wmma::mem_row_major);
  for (int k = 0; k < K; k += 4) {
    wmma::load_matrix_sync(a, A + (size_t)tm * 8 * K + k, K);
    wmma::load_matrix_sync(b, B + (size_t)k * N + tn * 8, N);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(C + (size_t)tm * 8 * N + tn * 8, acc, N, wmma::mem_row_major);
}

// C[M x N] = A[M x K] * B[K x N] with tf32 inputs (the floats' low 13
// mantissa bits ignored) and f32 accumulation; A row-major, B column-major;
// M, N multiples of 16, K of 8. blockDim = 32, grid = (N/16, M/16).
extern "C" __global__ void tf32_gemm(int M, int N, int K, const float* A, const float* B, float* C) {
  int tm = blockIdx.y, tn = blockIdx.x;
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k = 0; k < K; k += 8) {
    wmma::load_matrix_sync(a, A + (size_t)tm * 16 * K + k, K);
    wmma::load_matrix_sync(b, B + (size_t)tn * 16 * K + k, K);
    for (int i = 0; i < a.num_elements; i++) a.x[i] = wmma::__float_to_tf32(a.x[i]);
    for (int i = 0; i < b.num_elements; i++) b.x[i] = wmma::__float_to_tf32(b.x[i]);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(C + (size_t)tm * 16 * N + tn * 16, acc, N, wmma::mem_col_major);
}

// C[M x N] = A[M x K] * B[K x N], bf16 inputs, f32 accumulation, all
// row-major; multiples of 16. blockDim = 32, grid = (N/16, M/16).
extern "C" __global__ void bf16_gemm(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B, float* C) {
  int tm = blockIdx.y, tn = blockIdx.x;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(a, A + (size_t)tm * 16 * K + k, K);
    wmma::load_matrix_sync(b, B + (size_t)k * N + tn * 16, N);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(C + (size_t)tm * 16 * N + tn * 16, acc, N, wmma::mem_row_major);
}

// C[M x N] = A[M x K] (s8, row-major) * B[K x N] (s8, col-major) + C, s32
// accumulation (exact); multiples of 16. blockDim = 32, grid = (N/16, M/16).
extern "C" __global__ void int8_gemm(int M, int N, int K, const signed char* A, const signed char* B, int* C) {
  int tm = blockIdx.y, tn = blockIdx.x;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc;
  wmma::load_matrix_sync(acc, C + (size_t)tm * 16 * N + tn * 16, N, wmma::mem_row_major);
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(a, A + (size_t)tm * 16 * K + k, K);
    wmma::load_matrix_sync(b, B + (size_t)tn * 16 * K + k, K);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(C + (size_t)tm * 16 * N + tn * 16, acc, N, wmma::mem_row_major);
}
