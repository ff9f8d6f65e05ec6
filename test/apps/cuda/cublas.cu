// A program that uses cuBLAS as NVIDIA's samples and training code do,
// linked with -lcublas: on Wooly it loads the drop-in libcublas.so.13. Every
// result is compared with a C++ reference on the host. The inputs are small
// integers, so that every sum is exact in the compute type and the
// comparison is exact too (a wrong transpose, leading dimension or stride
// changes the result).
//
// Covered: the handle (stream, pointer modes, math mode, versions, status
// names), Set/GetMatrix and Set/GetVector with leading dimensions and
// increments, Sgemm in all four transpose combinations with padded leading
// dimensions, beta == 0 over NaNs, Dgemm, Hgemm, GemmEx (half -> float,
// bfloat16 -> bfloat16, int8 -> int32), strided and pointer-array batches,
// scalars and results in device memory, level 1 (axpy with a negative
// increment, scal, copy, swap, dot, nrm2, asum, amax/amin) and gemv. And the
// errors: bad arguments, a function Wooly does not implement.
#define APP_NAME "cublas"
#include "CudaApp.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <vector>

#define CHECK_BLAS(call)                                                       \
  do {                                                                         \
    cublasStatus_t s_ = (call);                                                \
    EXPECT(s_ == CUBLAS_STATUS_SUCCESS, "%s:%d: %s returned %s (%s)",          \
           app::baseName(__FILE__), __LINE__, #call, cublasGetStatusName(s_),  \
           cublasGetStatusString(s_));                                         \
  } while (0)

namespace {

using app::toDevice;
using app::toHost;

unsigned seed = 12345;
/// A small integer in [-4, 4] (so that sums of products are exact).
int small() {
  seed = seed * 1103515245u + 12345u;
  return int((seed >> 16) % 9) - 4;
}

template <typename T> std::vector<T> randomVector(size_t n) {
  std::vector<T> v(n);
  for (T &x : v)
    x = T(small());
  return v;
}

/// Column-major reference: C = alpha * op(A) * op(B) + beta * C, in double
/// (exact for these inputs).
template <typename TIn, typename TOut>
void referenceGemm(bool ta, bool tb, int m, int n, int k, double alpha,
                   const TIn *A, int lda, const TIn *B, int ldb, double beta,
                   TOut *C, int ldc) {
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double s = 0;
      for (int l = 0; l < k; ++l)
        s += double(ta ? A[l + i * lda] : A[i + l * lda]) *
             double(tb ? B[j + l * ldb] : B[l + j * ldb]);
      double c = alpha * s;
      if (beta != 0)
        c += beta * double(C[i + j * ldc]);
      C[i + j * ldc] = TOut(c);
    }
}

template <typename T>
void expectEqual(const std::vector<T> &got, const std::vector<T> &want,
                 const char *what) {
  EXPECT(got.size() == want.size(), "%s: size", what);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT(double(got[i]) == double(want[i]),
           "%s: element %zu is %g, expected %g", what, i, double(got[i]),
           double(want[i]));
}

const char *opName(cublasOperation_t op) {
  return op == CUBLAS_OP_N ? "N" : "T";
}

void sgemmTransposes(cublasHandle_t h) {
  const int m = 37, n = 23, k = 19;
  for (cublasOperation_t ta : {CUBLAS_OP_N, CUBLAS_OP_T})
    for (cublasOperation_t tb : {CUBLAS_OP_N, CUBLAS_OP_T}) {
      // Padded leading dimensions: the rows of the stored matrices plus 3.
      int lda = (ta == CUBLAS_OP_N ? m : k) + 3;
      int ldb = (tb == CUBLAS_OP_N ? k : n) + 3;
      int ldc = m + 5;
      auto A = randomVector<float>(size_t(lda) * (ta == CUBLAS_OP_N ? k : m));
      auto B = randomVector<float>(size_t(ldb) * (tb == CUBLAS_OP_N ? n : k));
      auto C = randomVector<float>(size_t(ldc) * n);
      float *dA = toDevice(A), *dB = toDevice(B), *dC = toDevice(C);
      float alpha = 2, beta = -3;
      CHECK_BLAS(cublasSgemm(h, ta, tb, m, n, k, &alpha, dA, lda, dB, ldb,
                             &beta, dC, ldc));
      referenceGemm(ta != CUBLAS_OP_N, tb != CUBLAS_OP_N, m, n, k, alpha,
                    A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
      char what[64];
      std::snprintf(what, sizeof what, "Sgemm %s%s", opName(ta), opName(tb));
      expectEqual(toHost(dC, C.size()), C, what);
      CHECK(cudaFree(dA));
      CHECK(cudaFree(dB));
      CHECK(cudaFree(dC));
    }
  std::printf("cublas: Sgemm NN NT TN TT (37x23x19, padded) exact\n");
}

void betaZeroIgnoresC(cublasHandle_t h) {
  const int m = 8, n = 8, k = 8;
  auto A = randomVector<double>(m * k), B = randomVector<double>(k * n);
  std::vector<double> C(m * n, std::nan(""));
  double *dA = toDevice(A), *dB = toDevice(B), *dC = toDevice(C);
  double alpha = 1, beta = 0;
  CHECK_BLAS(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, dA, m,
                         dB, k, &beta, dC, m));
  referenceGemm(false, false, m, n, k, alpha, A.data(), m, B.data(), k, 0.0,
                C.data(), m);
  expectEqual(toHost(dC, C.size()), C, "Dgemm with beta 0 over NaNs");
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  std::printf("cublas: Dgemm, beta 0 does not read C\n");
}

/// GemmEx with inputs of type `TIn` and output `TOut`.
template <typename TIn, typename TOut, typename TScale>
void gemmEx(cublasHandle_t h, cudaDataType in, cudaDataType out,
            cublasComputeType_t compute, const char *what) {
  const int m = 16, n = 12, k = 10;
  std::vector<TIn> A(m * k), B(n * k);
  for (TIn &x : A)
    x = TIn(small());
  for (TIn &x : B)
    x = TIn(small());
  std::vector<TOut> C(m * n);
  for (TOut &x : C)
    x = TOut(small());
  TIn *dA = toDevice(A), *dB = toDevice(B);
  TOut *dC = toDevice(C);
  TScale alpha = TScale(3), beta = TScale(1);
  // B is stored transposed (n x k).
  CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, dA, in,
                          m, dB, in, n, &beta, dC, out, m, compute,
                          CUBLAS_GEMM_DEFAULT));
  std::vector<float> Af(A.begin(), A.end()), Bf(B.begin(), B.end());
  referenceGemm(false, true, m, n, k, 3.0, Af.data(), m, Bf.data(), n, 1.0,
                C.data(), m);
  expectEqual(toHost(dC, C.size()), C, what);
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  std::printf("cublas: %s exact\n", what);
}

void hgemm(cublasHandle_t h) {
  const int m = 9, n = 7, k = 5;
  std::vector<__half> A(m * k), B(k * n), C(m * n);
  for (__half &x : A)
    x = __half(float(small()));
  for (__half &x : B)
    x = __half(float(small()));
  for (__half &x : C)
    x = __half(float(small()));
  __half *dA = toDevice(A), *dB = toDevice(B), *dC = toDevice(C);
  __half alpha = __half(1.0f), beta = __half(2.0f);
  CHECK_BLAS(cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, dA, m,
                         dB, k, &beta, dC, m));
  std::vector<float> Af(A.begin(), A.end()), Bf(B.begin(), B.end()),
      Cf(C.begin(), C.end());
  referenceGemm(false, false, m, n, k, 1.0, Af.data(), m, Bf.data(), k, 2.0,
                Cf.data(), m);
  auto got = toHost(dC, C.size());
  std::vector<float> gotf(got.begin(), got.end());
  expectEqual(gotf, Cf, "Hgemm");
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  std::printf("cublas: Hgemm exact\n");
}

void batches(cublasHandle_t h) {
  const int m = 6, n = 5, k = 4, batch = 7;
  const long long sA = m * k + 2, sB = k * n + 1, sC = m * n + 3;
  auto A = randomVector<float>(sA * batch), B = randomVector<float>(sB * batch),
       C = randomVector<float>(sC * batch);
  float *dA = toDevice(A), *dB = toDevice(B), *dC = toDevice(C);
  float alpha = -1, beta = 1;
  CHECK_BLAS(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k,
                                       &alpha, dA, m, sA, dB, k, sB, &beta, dC,
                                       m, sC, batch));
  auto want = C;
  for (int b = 0; b < batch; ++b)
    referenceGemm(false, false, m, n, k, -1.0, A.data() + b * sA, m,
                  B.data() + b * sB, k, 1.0, want.data() + b * sC, m);
  expectEqual(toHost(dC, C.size()), want, "SgemmStridedBatched");

  // The same products through arrays of pointers, in reverse order, in
  // fresh outputs (beta 0).
  std::vector<const void *> as(batch), bs(batch);
  std::vector<void *> cs(batch);
  float *dOut = toDevice(std::vector<float>(sC * batch, 0.0f));
  for (int b = 0; b < batch; ++b) {
    as[b] = dA + (batch - 1 - b) * sA;
    bs[b] = dB + (batch - 1 - b) * sB;
    cs[b] = dOut + b * sC;
  }
  const void **dAs = toDevice(as);
  const void **dBs = toDevice(bs);
  void **dCs = toDevice(cs);
  float one = 1, zero = 0;
  CHECK_BLAS(cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one,
                                 dAs, CUDA_R_32F, m, dBs, CUDA_R_32F, k, &zero,
                                 dCs, CUDA_R_32F, m, batch, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT));
  std::vector<float> want2(sC * batch, 0.0f);
  for (int b = 0; b < batch; ++b)
    referenceGemm(false, false, m, n, k, 1.0, A.data() + (batch - 1 - b) * sA,
                  m, B.data() + (batch - 1 - b) * sB, k, 0.0,
                  want2.data() + b * sC, m);
  expectEqual(toHost(dOut, want2.size()), want2, "GemmBatchedEx");
  for (void *p : {(void *)dA, (void *)dB, (void *)dC, (void *)dOut, (void *)dAs,
                  (void *)dBs, (void *)dCs})
    CHECK(cudaFree(p));
  std::printf("cublas: strided and pointer-array batches of 7 exact\n");
}

void deviceScalars(cublasHandle_t h) {
  const int m = 5, n = 4, k = 3;
  auto A = randomVector<float>(m * k), B = randomVector<float>(k * n),
       C = randomVector<float>(m * n);
  float *dA = toDevice(A), *dB = toDevice(B), *dC = toDevice(C);
  float *dScalars = toDevice(std::vector<float>{4.0f, -1.0f, 0.0f});
  CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
  CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, dScalars, dA, m,
                         dB, k, dScalars + 1, dC, m));
  // The dot product lands in device memory.
  CHECK_BLAS(cublasSdot(h, m * k, dA, 1, dA, 1, dScalars + 2));
  CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
  referenceGemm(false, false, m, n, k, 4.0, A.data(), m, B.data(), k, -1.0,
                C.data(), m);
  expectEqual(toHost(dC, C.size()), C, "Sgemm with device scalars");
  float dot = 0;
  for (float x : A)
    dot += x * x;
  expectEqual(toHost(dScalars + 2, 1), std::vector<float>{dot},
              "Sdot into device memory");
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  CHECK(cudaFree(dScalars));
  std::printf("cublas: scalars and results in device memory\n");
}

void level1(cublasHandle_t h) {
  const int n = 1000;
  auto x = randomVector<float>(2 * n), y = randomVector<float>(3 * n);
  float *dx = toDevice(x), *dy = toDevice(y);
  // y (increment -3) += 2 x (increment 2): element i of y is y[(n-1-i)*3].
  float alpha = 2;
  CHECK_BLAS(cublasSaxpy(h, n, &alpha, dx, 2, dy, -3));
  for (int i = 0; i < n; ++i)
    y[(n - 1 - i) * 3] += 2 * x[i * 2];
  expectEqual(toHost(dy, y.size()), y, "Saxpy with increments 2, -3");
  float scale = -3;
  CHECK_BLAS(cublasSscal(h, n, &scale, dx, 2));
  for (int i = 0; i < n; ++i)
    x[i * 2] *= -3;
  expectEqual(toHost(dx, x.size()), x, "Sscal");

  float dot = 0, asum = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    dot += x[i * 2] * y[i * 3];
    asum += std::fabs(x[i * 2]);
    sq += x[i * 2] * x[i * 2];
  }
  float got = 0;
  CHECK_BLAS(cublasSdot(h, n, dx, 2, dy, 3, &got));
  EXPECT(got == dot, "Sdot: %g, expected %g", got, dot);
  CHECK_BLAS(cublasSasum(h, n, dx, 2, &got));
  EXPECT(got == asum, "Sasum: %g, expected %g", got, asum);
  CHECK_BLAS(cublasSnrm2(h, n, dx, 2, &got));
  EXPECT(std::fabs(got - std::sqrt(sq)) <= 1e-5f * std::sqrt(sq),
         "Snrm2: %g, expected %g", got, std::sqrt(sq));

  // amax/amin: 1-based, the first of equal magnitudes.
  std::vector<double> v = {1, -7, 3, 7, -0.5, 2, 0.5};
  double *dv = toDevice(v);
  int where = 0;
  CHECK_BLAS(cublasIdamax(h, int(v.size()), dv, 1, &where));
  EXPECT(where == 2, "Idamax: %d, expected 2", where);
  CHECK_BLAS(cublasIdamin(h, int(v.size()), dv, 1, &where));
  EXPECT(where == 5, "Idamin: %d, expected 5", where);

  // swap, then copy back.
  std::vector<double> w = {10, 20, 30, 40, 50, 60, 70};
  double *dw = toDevice(w);
  CHECK_BLAS(cublasDswap(h, 7, dv, 1, dw, 1));
  expectEqual(toHost(dv, 7), w, "Dswap x");
  expectEqual(toHost(dw, 7), v, "Dswap y");
  CHECK_BLAS(cublasDcopy(h, 7, dw, 1, dv, 1));
  expectEqual(toHost(dv, 7), v, "Dcopy");
  for (void *p : {(void *)dx, (void *)dy, (void *)dv, (void *)dw})
    CHECK(cudaFree(p));
  std::printf(
      "cublas: level 1 (axpy scal dot asum nrm2 amax amin swap copy)\n");
}

void gemv(cublasHandle_t h) {
  const int m = 33, n = 17, lda = 40;
  auto A = randomVector<float>(lda * n);
  for (cublasOperation_t op : {CUBLAS_OP_N, CUBLAS_OP_T}) {
    int xn = op == CUBLAS_OP_N ? n : m, yn = op == CUBLAS_OP_N ? m : n;
    auto x = randomVector<float>(xn), y = randomVector<float>(yn);
    float *dA = toDevice(A), *dx = toDevice(x), *dy = toDevice(y);
    float alpha = 3, beta = 2;
    CHECK_BLAS(cublasSgemv(h, op, m, n, &alpha, dA, lda, dx, 1, &beta, dy, 1));
    // op(A) x as a GEMM with one column.
    referenceGemm(op != CUBLAS_OP_N, false, yn, 1, xn, 3.0, A.data(), lda,
                  x.data(), xn, 2.0, y.data(), yn);
    expectEqual(toHost(dy, yn), y, op == CUBLAS_OP_N ? "Sgemv N" : "Sgemv T");
    CHECK(cudaFree(dA));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
  }
  std::printf("cublas: Sgemv N and T\n");
}

void copies() {
  // A 5x3 block of a host matrix with leading dimension 8, into a device
  // matrix with leading dimension 6, and back out into one of 7.
  std::vector<float> src(8 * 3);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = float(i);
  // 6x3 for the matrix, 19 elements for the vector below.
  float *d = nullptr;
  CHECK(cudaMalloc(&d, 20 * sizeof(float)));
  CHECK_BLAS(cublasSetMatrix(5, 3, sizeof(float), src.data(), 8, d, 6));
  std::vector<float> back(7 * 3, -1.0f);
  CHECK_BLAS(cublasGetMatrix(5, 3, sizeof(float), d, 6, back.data(), 7));
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 7; ++i)
      EXPECT(back[i + j * 7] == (i < 5 ? src[i + j * 8] : -1.0f),
             "Set/GetMatrix: element (%d, %d) is %g", i, j, back[i + j * 7]);
  // Every third element of a host vector into every second of the device.
  std::vector<float> v(30);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = float(100 + i);
  CHECK_BLAS(cublasSetVector(10, sizeof(float), v.data(), 3, d, 2));
  std::vector<float> out(10);
  CHECK_BLAS(cublasGetVector(10, sizeof(float), d, 2, out.data(), 1));
  for (int i = 0; i < 10; ++i)
    EXPECT(out[i] == v[i * 3], "Set/GetVector: element %d is %g", i, out[i]);
  CHECK(cudaFree(d));
  std::printf("cublas: Set/GetMatrix and Set/GetVector with strides\n");
}

__global__ void noop() {}

/// BLAS's edge cases: alpha == 0 does not read A or B (NaNs there do not
/// reach C), nrm2 neither overflows nor underflows, and a cuBLAS call
/// leaves an error the program has not read yet for the program.
void edges(cublasHandle_t h) {
  const int m = 4, n = 3, k = 5;
  std::vector<float> A(m * k, std::nan("")), B(k * n, std::nan(""));
  auto C = randomVector<float>(m * n);
  float *dA = toDevice(A), *dB = toDevice(B), *dC = toDevice(C);
  float zero = 0, two = 2;
  CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &zero, dA, m, dB,
                         k, &two, dC, m));
  for (float &c : C)
    c *= 2;
  expectEqual(toHost(dC, C.size()), C, "Sgemm with alpha 0 over NaNs");

  std::vector<float> big = {3e20f, -4e20f}, tiny = {3e-25f, 4e-25f};
  float *dBig = toDevice(big), *dTiny = toDevice(tiny);
  float norm = 0;
  CHECK_BLAS(cublasSnrm2(h, 2, dBig, 1, &norm));
  EXPECT(std::fabs(norm - 5e20f) <= 1e-6f * 5e20f, "Snrm2 of 3e20, -4e20: %g",
         norm);
  CHECK_BLAS(cublasSnrm2(h, 2, dTiny, 1, &norm));
  EXPECT(std::fabs(norm - 5e-25f) <= 1e-6f * 5e-25f,
         "Snrm2 of 3e-25, 4e-25: %g", norm);

  // An invalid launch of the program's own, not read yet, then a good
  // cuBLAS call: the call succeeds and the program still finds its error.
  noop<<<1, 4096>>>();
  CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &zero, dA, m, dB,
                         k, &two, dC, m));
  cudaError_t pending = cudaGetLastError();
  EXPECT(pending == cudaErrorInvalidConfiguration,
         "the program's pending error after a cuBLAS call: %s",
         cudaGetErrorName(pending));
  for (void *p :
       {(void *)dA, (void *)dB, (void *)dC, (void *)dBig, (void *)dTiny})
    CHECK(cudaFree(p));
  std::printf("cublas: alpha 0 over NaNs, nrm2 of 1e20s and 1e-25s, the "
              "program's pending error kept\n");
}

void errors(cublasHandle_t h) {
  float one = 1;
  float *d = nullptr;
  CHECK(cudaMalloc(&d, 64 * sizeof(float)));
  // lda smaller than the rows of A.
  cublasStatus_t s = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, d,
                                 4, d, 8, &one, d, 8);
  EXPECT(s == CUBLAS_STATUS_INVALID_VALUE, "Sgemm with lda < m: %s",
         cublasGetStatusName(s));
  // No alpha.
  s = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, nullptr, d, 8, d, 8,
                  &one, d, 8);
  EXPECT(s == CUBLAS_STATUS_INVALID_VALUE, "Sgemm without alpha: %s",
         cublasGetStatusName(s));
  // A GemmEx type combination that is not implemented: fp8 inputs.
  s = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d,
                   CUDA_R_8F_E4M3, 2, d, CUDA_R_8F_E4M3, 2, &one, d, CUDA_R_32F,
                   2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  EXPECT(s == CUBLAS_STATUS_NOT_SUPPORTED, "GemmEx with fp8: %s",
         cublasGetStatusName(s));
  // Complex GEMM is not implemented.
  cuComplex c1 = {1, 0};
  s = cublasCgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &c1,
                  reinterpret_cast<cuComplex *>(d), 2,
                  reinterpret_cast<cuComplex *>(d), 2, &c1,
                  reinterpret_cast<cuComplex *>(d), 2);
  EXPECT(s == CUBLAS_STATUS_NOT_SUPPORTED, "Cgemm: %s", cublasGetStatusName(s));
  CHECK(cudaFree(d));
  std::printf("cublas: errors: %s, %s\n",
              cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE),
              cublasGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED));
}

} // namespace

int main() {
  cublasHandle_t h;
  CHECK_BLAS(cublasCreate(&h));
  int version = 0;
  CHECK_BLAS(cublasGetVersion(h, &version));
  EXPECT(version >= 130000, "cublasGetVersion: %d", version);
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK_BLAS(cublasSetStream(h, stream));
  cudaStream_t got = nullptr;
  CHECK_BLAS(cublasGetStream(h, &got));
  EXPECT(got == stream, "cublasGetStream");
  CHECK_BLAS(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));

  sgemmTransposes(h);
  betaZeroIgnoresC(h);
  hgemm(h);
  gemmEx<__half, float, float>(h, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F,
                               "GemmEx half -> float");
  gemmEx<__nv_bfloat16, __nv_bfloat16, float>(h, CUDA_R_16BF, CUDA_R_16BF,
                                              CUBLAS_COMPUTE_32F_FAST_TF32,
                                              "GemmEx bfloat16 -> bfloat16");
  gemmEx<int8_t, int32_t, int32_t>(h, CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I,
                                   "GemmEx int8 -> int32");
  batches(h);
  deviceScalars(h);
  level1(h);
  gemv(h);
  copies();
  edges(h);
  errors(h);

  CHECK(cudaStreamSynchronize(stream));
  CHECK_BLAS(cublasDestroy(h));
  CHECK(cudaStreamDestroy(stream));
  app::pass();
  return 0;
}
