// What the drop-in cuBLAS costs: SGEMM (cublasSgemm, NT) and a bfloat16
// cublasLtMatmul with the bias + GELU epilogue (llm.c's forward matmul) at
// three sizes, through whatever libcublas/libcublasLt and device the
// process finds (on Wooly: build/capture's drop-ins and wooly-serve), next
// to the same SGEMM as a plain C++ loop on one host thread (-O2, the k loop
// innermost over contiguous rows). Each figure is the median of R timed
// calls after a warm-up call (which includes the kernel's first compile),
// each call synchronised; the table prints ms per call, GFLOP/s and
// device/C++. Every result is checked against the C++ loop (max relative
// error), so that a wrong product is not timed.
//
//   WOOLY_SERVER=... LD_LIBRARY_PATH=build/capture build/bench/blas_bench [R]
//   (bench/README.md runs it through test/apps/with-server.py)
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                            \
  do {                                                                         \
    if (cudaError_t e_ = (call)) {                                             \
      std::fprintf(stderr, "blas_bench: %s: %s\n", #call,                      \
                   cudaGetErrorString(e_));                                    \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)
#define CHECK_BLAS(call)                                                       \
  do {                                                                         \
    if (cublasStatus_t s_ = (call)) {                                          \
      std::fprintf(stderr, "blas_bench: %s: %s\n", #call,                      \
                   cublasGetStatusName(s_));                                   \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

namespace {

using Clock = std::chrono::steady_clock;

template <typename F> double medianMs(int reps, F f) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    f();
    t.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// C (n x n, column-major) = A B^T, A and B column-major: C[i][j] = sum over
/// l of A[i + l n] B[j + l n]. Transposed copies make the k loop contiguous.
__attribute__((noinline)) void cppSgemmNT(int n, const float *a, const float *b,
                                          float *c) {
  std::vector<float> at(size_t(n) * n), bt(size_t(n) * n);
  for (int l = 0; l < n; ++l)
    for (int i = 0; i < n; ++i) {
      at[size_t(i) * n + l] = a[i + size_t(l) * n];
      bt[size_t(i) * n + l] = b[i + size_t(l) * n];
    }
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      float s = 0;
      for (int l = 0; l < n; ++l)
        s += at[size_t(i) * n + l] * bt[size_t(j) * n + l];
      c[i + size_t(j) * n] = s;
    }
}

double maxRelError(const std::vector<float> &got,
                   const std::vector<float> &want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(double(got[i]) - want[i]) /
                                std::max(1.0, std::fabs(double(want[i]))));
  return worst;
}

} // namespace

int main(int argc, char **argv) {
  int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  cublasHandle_t blas;
  CHECK_BLAS(cublasCreate(&blas));
  cublasLtHandle_t lt;
  CHECK_BLAS(cublasLtCreate(&lt));
  std::printf("drop-in cuBLAS against a plain C++ SGEMM (one thread); median "
              "of %d synchronised calls after a warm-up\n",
              reps);
  std::printf("%-26s %6s %10s %9s %10s %8s %10s\n", "product", "n", "device ms",
              "GFLOP/s", "C++ ms", "dev/C++", "max rel err");
  for (int n : {128, 256, 512}) {
    size_t elems = size_t(n) * n;
    std::vector<float> a(elems), b(elems), c(elems), want(elems);
    unsigned seed = 1;
    for (float *v : {a.data(), b.data()})
      for (size_t i = 0; i < elems; ++i) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = float(seed >> 8) / float(1u << 24) - 0.5f;
      }
    double cppMs =
        medianMs(reps, [&] { cppSgemmNT(n, a.data(), b.data(), want.data()); });
    double flops = 2.0 * n * n * n;

    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, elems * 4));
    CHECK(cudaMalloc(&db, elems * 4));
    CHECK(cudaMalloc(&dc, elems * 4));
    CHECK(cudaMemcpy(da, a.data(), elems * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), elems * 4, cudaMemcpyHostToDevice));
    float one = 1, zero = 0;
    auto sgemm = [&] {
      CHECK_BLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n, &one, da,
                             n, db, n, &zero, dc, n));
      CHECK(cudaDeviceSynchronize());
    };
    sgemm();
    double ms = medianMs(reps, sgemm);
    CHECK(cudaMemcpy(c.data(), dc, elems * 4, cudaMemcpyDeviceToHost));
    std::printf("%-26s %6d %10.2f %9.2f %10.2f %8.2f %10.1e\n",
                "cublasSgemm NT (float)", n, ms, flops / ms / 1e6, cppMs,
                ms / cppMs, maxRelError(c, want));

    // bfloat16 with bias + GELU, in float: D = GELU(A B^T + bias).
    std::vector<__nv_bfloat16> ab(elems), bb(elems), bias(n);
    for (size_t i = 0; i < elems; ++i) {
      ab[i] = __nv_bfloat16(a[i]);
      bb[i] = __nv_bfloat16(b[i]);
    }
    for (int i = 0; i < n; ++i)
      bias[i] = __nv_bfloat16(0.01f * float(i % 7));
    __nv_bfloat16 *dab, *dbb, *dd, *dbias;
    CHECK(cudaMalloc(&dab, elems * 2));
    CHECK(cudaMalloc(&dbb, elems * 2));
    CHECK(cudaMalloc(&dd, elems * 2));
    CHECK(cudaMalloc(&dbias, n * 2));
    CHECK(cudaMemcpy(dab, ab.data(), elems * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dbb, bb.data(), elems * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dbias, bias.data(), n * 2, cudaMemcpyHostToDevice));
    cublasLtMatmulDesc_t desc;
    CHECK_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t opT = CUBLAS_OP_T;
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                              &opT, sizeof opT));
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(
        desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(
        desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias));
    cublasLtMatrixLayout_t layout;
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16BF, n, n, n));
    auto ltGemm = [&] {
      CHECK_BLAS(cublasLtMatmul(lt, desc, &one, dab, layout, dbb, layout, &zero,
                                dd, layout, dd, layout, nullptr, nullptr, 0,
                                nullptr));
      CHECK(cudaDeviceSynchronize());
    };
    ltGemm();
    double ltMs = medianMs(reps, ltGemm);
    std::vector<__nv_bfloat16> d(elems);
    CHECK(cudaMemcpy(d.data(), dd, elems * 2, cudaMemcpyDeviceToHost));
    // The reference: the float product of the rounded inputs, + bias, GELU
    // (tanh form); bfloat16 keeps 8 bits, so the error is about 2^-8.
    std::vector<float> af(ab.begin(), ab.end()), bf(bb.begin(), bb.end()),
        ref(elems), got(d.begin(), d.end());
    cppSgemmNT(n, af.data(), bf.data(), ref.data());
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        float x = ref[i + size_t(j) * n] + float(bias[i]);
        ref[i + size_t(j) * n] =
            0.5f * x *
            (1 + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
      }
    std::printf("%-26s %6d %10.2f %9.2f %10.2f %8.2f %10.1e\n",
                "cublasLtMatmul bf16 GELU", n, ltMs, flops / ltMs / 1e6, cppMs,
                ltMs / cppMs, maxRelError(got, ref));
    CHECK_BLAS(cublasLtMatrixLayoutDestroy(layout));
    CHECK_BLAS(cublasLtMatmulDescDestroy(desc));
    for (void *p : {(void *)da, (void *)db, (void *)dc, (void *)dab,
                    (void *)dbb, (void *)dd, (void *)dbias})
      CHECK(cudaFree(p));
  }
  CHECK_BLAS(cublasLtDestroy(lt));
  CHECK_BLAS(cublasDestroy(blas));
  return 0;
}
