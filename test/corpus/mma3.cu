// Tensor-core forms beyond wmma2.cu, the way low-level GEMM code writes
// them: 4-bit and single-bit wmma tiles (nvcuda::wmma::experimental),
// single-bit mma.sync m16n8k256 (.xor.popc / .and.popc), sm_70's
// mma.m8n8k4 with f16 inputs (four "quad pair" products per warp) and fp8
// mma.sync (e4m3 x e5m2, sm_89 and later) through inline PTX, each lane
// loading its fragment registers from memory with the PTX ISA's fragment
// tables. The CPU backend's arithmetic (lib/Runtime/CPU/WarpMatrix.cpp) is
// exact for the integer and single-bit tiles; f16/fp8 products are exact in
// f32 and accumulated in k order.
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;
namespace wx = nvcuda::wmma::experimental;

// C[M x N] += A[M x K] * B[K x N], s4 elements (two per byte, the low
// nibble first); A row-major, B column-major (N rows of K); C s32
// row-major; M, N multiples of 8, K of 32. blockDim = 32, grid = (N/8, M/8).
extern "C" __global__ void wmma_s4_gemm(int M, int N, int K,
                                        const unsigned char *A,
                                        const unsigned char *B, int *C) {
  int tm = blockIdx.y, tn = blockIdx.x;
  wmma::fragment<wmma::matrix_a, 8, 8, 32, wx::precision::s4, wmma::row_major>
      a;
  wmma::fragment<wmma::matrix_b, 8, 8, 32, wx::precision::s4, wmma::col_major>
      b;
  wmma::fragment<wmma::accumulator, 8, 8, 32, int> acc;
  wmma::load_matrix_sync(acc, C + (size_t)tm * 8 * N + tn * 8, N,
                         wmma::mem_row_major);
  for (int k = 0; k < K; k += 32) {
    wmma::load_matrix_sync(a, A + ((size_t)tm * 8 * K + k) / 2, K);
    wmma::load_matrix_sync(b, B + ((size_t)tn * 8 * K + k) / 2, K);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(C + (size_t)tm * 8 * N + tn * 8, acc, N,
                          wmma::mem_row_major);
}

// C[M x N] += popc(A[i,:] op B[:,j]) with op = xor (useAnd == 0) or and,
// single-bit elements (bit 0 of each byte first); A row-major, B
// column-major; C s32 row-major; M, N multiples of 8, K of 128.
// blockDim = 32, grid = (N/8, M/8).
extern "C" __global__ void wmma_b1_gemm(int M, int N, int K, const unsigned *A,
                                        const unsigned *B, int *C, int useAnd) {
  int tm = blockIdx.y, tn = blockIdx.x;
  wmma::fragment<wmma::matrix_a, 8, 8, 128, wx::precision::b1, wmma::row_major>
      a;
  wmma::fragment<wmma::matrix_b, 8, 8, 128, wx::precision::b1, wmma::col_major>
      b;
  wmma::fragment<wmma::accumulator, 8, 8, 128, int> acc;
  wmma::load_matrix_sync(acc, C + (size_t)tm * 8 * N + tn * 8, N,
                         wmma::mem_row_major);
  for (int k = 0; k < K; k += 128) {
    wmma::load_matrix_sync(a, A + ((size_t)tm * 8 * K + k) / 32, K);
    wmma::load_matrix_sync(b, B + ((size_t)tn * 8 * K + k) / 32, K);
    if (useAnd)
      wmma::bmma_sync(acc, a, b, acc, wx::bmmaBitOpAND);
    else
      wmma::bmma_sync(acc, a, b, acc, wx::bmmaBitOpXOR);
  }
  wmma::store_matrix_sync(C + (size_t)tm * 8 * N + tn * 8, acc, N,
                          wmma::mem_row_major);
}

// One m16n8k256 single-bit product per warp: C[16 x 8] += popc(A op B),
// A 16 x 256 bits row-major (8 words a row), B 256 x 8 bits column-major
// (8 words a column), C s32 row-major; op = xor (useAnd == 0) or and.
// blockDim = 32, one block.
extern "C" __global__ void mma_b1_k256(const unsigned *A, const unsigned *B,
                                       int *C, int useAnd) {
  int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  unsigned a[4], b[2];
  int c[4], d[4];
  for (int j = 0; j < 4; j++)
    a[j] = A[(g + 8 * (j & 1)) * 8 + t + 4 * (j >> 1)];
  for (int j = 0; j < 2; j++)
    b[j] = B[g * 8 + t + 4 * j];
  for (int i = 0; i < 4; i++)
    c[i] = C[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
  if (useAnd)
    asm volatile("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                   "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
  else
    asm volatile("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                   "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
  for (int i = 0; i < 4; i++)
    C[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = d[i];
}

// Four independent 8x8x4 products per warp (mma.m8n8k4, f16 inputs, f32
// accumulators): product q takes A + 32q (8 x 4, row-major), B + 32q
// (4 x 8, stored column-major) and C + 64q (8 x 8 f32, row-major, updated
// in place). blockDim = 32, one block.
extern "C" __global__ void mma_quadpair(const __half *A, const __half *B,
                                        float *C) {
  int lane = threadIdx.x, q = (lane >> 2) & 3, t = lane & 3,
      h = lane >= 16 ? 4 : 0;
  const unsigned short *a =
      reinterpret_cast<const unsigned short *>(A) + 32 * q;
  const unsigned short *b =
      reinterpret_cast<const unsigned short *>(B) + 32 * q;
  float *c = C + 64 * q;
  unsigned ra[2], rb[2];
  float rc[8], rd[8];
  for (int j = 0; j < 2; j++) {
    // A row t + h, columns 2j, 2j + 1; B column t + h, rows 2j, 2j + 1.
    ra[j] = a[(t + h) * 4 + 2 * j] | (unsigned)a[(t + h) * 4 + 2 * j + 1] << 16;
    rb[j] = b[(t + h) * 4 + 2 * j] | (unsigned)b[(t + h) * 4 + 2 * j + 1] << 16;
  }
  for (int i = 0; i < 8; i++)
    rc[i] = c[((lane & 1) + (i & 2) + h) * 8 + (i & 4) + (lane & 2) + (i & 1)];
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 "
               "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9}, {%10,%11}, "
               "{%12,%13,%14,%15,%16,%17,%18,%19};"
               : "=f"(rd[0]), "=f"(rd[1]), "=f"(rd[2]), "=f"(rd[3]),
                 "=f"(rd[4]), "=f"(rd[5]), "=f"(rd[6]), "=f"(rd[7])
               : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]), "r"(rb[1]), "f"(rc[0]),
                 "f"(rc[1]), "f"(rc[2]), "f"(rc[3]), "f"(rc[4]), "f"(rc[5]),
                 "f"(rc[6]), "f"(rc[7]));
  for (int i = 0; i < 8; i++)
    c[((lane & 1) + (i & 2) + h) * 8 + (i & 4) + (lane & 2) + (i & 1)] = rd[i];
}

// One m16n8k32 fp8 product per warp: C[16 x 8] += A * B with A e4m3
// (16 x 32, row-major), B e5m2 (32 x 8, stored column-major), C f32
// row-major. sm_89 and later (elsewhere the kernel traps). blockDim = 32,
// one block.
extern "C" __global__ void mma_fp8(const unsigned *A, const unsigned *B,
                                   float *C) {
#if __CUDA_ARCH__ >= 890
  int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  unsigned a[4], b[2];
  float c[4], d[4];
  // A: 8 words a row; register j holds row g + 8 (j & 1), columns
  // 4t + 16 (j >> 1) .. + 3. B: 8 words a column; register j holds column
  // g, rows 4t + 16j .. + 3.
  for (int j = 0; j < 4; j++)
    a[j] = A[(g + 8 * (j & 1)) * 8 + t + 4 * (j >> 1)];
  for (int j = 0; j < 2; j++)
    b[j] = B[g * 8 + t + 4 * j];
  for (int i = 0; i < 4; i++)
    c[i] = C[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                 "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  for (int i = 0; i < 4; i++)
    C[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = d[i];
#else
  __trap();
#endif
}
