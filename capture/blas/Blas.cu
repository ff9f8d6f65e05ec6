//===- Blas.cu - The drop-in libcublas.so.13 ------------------------------===//
//
// NVIDIA's cuBLAS links its own copy of the CUDA runtime and reaches the
// driver through private export tables, so it cannot run on Wooly's
// libcudart/libcuda. This library takes its place (same soname, same
// symbol version): it implements the cuBLAS v2 API that training code and
// NVIDIA's samples use with ordinary CUDA kernels, which this library's own
// fatbin registers with Wooly's libcudart like any program's, so they reach
// wooly-serve as PTX and share the device with every other tenant's.
//
// Implemented (float and double unless said otherwise):
// - the handle: create/destroy, stream, pointer mode (host or device
//   scalars and results), math mode, atomics mode, workspace, versions,
//   status names;
// - host <-> device copies: cublasSet/GetVector, Set/GetMatrix (+Async);
// - level 1: axpy, scal, copy, swap, dot, nrm2, asum, iamax, iamin;
// - level 2: gemv;
// - level 3: gemm (S, D, H), gemm batched and strided batched (S, D),
//   cublasGemmEx / GemmBatchedEx / GemmStridedBatchedEx and cublasSgemmEx
//   for the real types training code uses (half, bfloat16, float, double,
//   int8 -> int32; see Gemm.cuh).
// Every other export of the real library is a stub (Stubs.cpp) that says
// so on stderr once and returns CUBLAS_STATUS_NOT_SUPPORTED.
//
// Semantics are BLAS's, column-major. Results are not bit-identical to
// NVIDIA's (its kernels pick their own summation order per GPU); ours sum
// in index order, in the compute type, so they are deterministic. The
// kernels are plain (a thread per output element, no shared-memory
// tiling): what runs well on the CPU backend and correctly everywhere.
//
//===----------------------------------------------------------------------===//

#include "Gemm.cuh"
#include "Log.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>

using wooly::blas::GemmShape;
using wooly::blas::launch;
using wooly::blas::Scalar;
using wooly::capture::logUnsupportedOnce;

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasPointerMode_t pointerMode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t mathMode = CUBLAS_DEFAULT_MATH;
  cublasAtomicsMode_t atomicsMode = CUBLAS_ATOMICS_NOT_ALLOWED;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  /// 16 bytes of device memory for reduction results the caller wants in
  /// host memory (pointer mode host).
  void *scratch = nullptr;
};

namespace {

constexpr int kVersion = CUBLAS_VERSION;

/// A launch's status as cuBLAS's.
cublasStatus_t launched(cudaError_t e) {
  if (e == cudaSuccess)
    return CUBLAS_STATUS_SUCCESS;
  wooly::capture::log(1, "cuBLAS kernel launch failed: %s",
                      cudaGetErrorString(e));
  return CUBLAS_STATUS_EXECUTION_FAILED;
}

template <typename T> Scalar<T> scalarOf(cublasHandle_t h, const T *p) {
  return wooly::blas::scalarOf(h->pointerMode == CUBLAS_POINTER_MODE_DEVICE, p);
}

/// Index of element `i` of a BLAS vector of `n` elements with increment
/// `inc` (a negative increment walks it from the end).
__device__ __host__ inline long long at(long long i, int n, int inc) {
  return inc >= 0 ? i * inc : (i - (n - 1)) * inc;
}

int64_t gridFor(int64_t n, int64_t per) { return (n + per - 1) / per; }

constexpr int kThreads = 256;

unsigned blocksFor(int64_t n) {
  return unsigned(std::min<int64_t>(gridFor(n, kThreads), 65535));
}

//===----------------------------------------------------------------------===//
// Level 1
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void axpyKernel(int n, Scalar<T> alpha, const T *x, int incx, T *y,
                           int incy) {
  T a = alpha.get();
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    y[at(i, n, incy)] += a * x[at(i, n, incx)];
}

template <typename T>
__global__ void scalKernel(int n, Scalar<T> alpha, T *x, int incx) {
  T a = alpha.get();
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    x[i * incx] *= a;
}

template <typename T>
__global__ void copyKernel(int n, const T *x, int incx, T *y, int incy,
                           bool swap) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    T *dst = y + at(i, n, incy);
    T v = x[at(i, n, incx)];
    if (swap)
      const_cast<T *>(x)[at(i, n, incx)] = *dst;
    *dst = v;
  }
}

enum class Reduce { Dot, SumSquares, AbsSum };

/// `part[0] = op(part[0], ..., part[kThreads - 1])` by a tree (the same order
/// on every run and every device); every thread then reads part[0].
template <typename T, typename Op>
__device__ T blockReduce(T *part, T mine, Op op) {
  part[threadIdx.x] = mine;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w)
      part[threadIdx.x] = op(part[threadIdx.x], part[threadIdx.x + w]);
    __syncthreads();
  }
  T all = part[0];
  __syncthreads();
  return all;
}

/// One block reduces the whole vector: each thread sums a strided part in
/// index order, then a tree in shared memory. nrm2 sums the squares of the
/// elements divided by the largest magnitude (found first), so that they
/// neither overflow nor underflow, as the reference BLAS's does.
template <typename T, Reduce kind>
__global__ void reduceKernel(int n, const T *x, int incx, const T *y, int incy,
                             T *result) {
  __shared__ T part[kThreads];
  auto sum = [](T a, T b) { return a + b; };
  T scale = T(1);
  if (kind == Reduce::SumSquares) {
    T m = T(0);
    for (int i = threadIdx.x; i < n; i += kThreads)
      m = fmax(m, fabs(x[at(i, n, incx)]));
    scale = blockReduce(part, m, [](T a, T b) { return fmax(a, b); });
    if (scale == T(0) || isinf(scale)) {
      // All zeros (or an infinity: the norm is infinite, or NaN if a NaN is
      // there too, which the sum below would say).
      bool nan = false;
      for (int i = threadIdx.x; i < n; i += kThreads)
        nan |= isnan(x[at(i, n, incx)]);
      T any = blockReduce(part, nan ? T(1) : T(0), sum);
      if (threadIdx.x == 0)
        *result = any != T(0) ? T(NAN) : scale;
      return;
    }
  }
  T s = T(0);
  for (int i = threadIdx.x; i < n; i += kThreads) {
    T v = x[at(i, n, incx)];
    if (kind == Reduce::Dot)
      s += v * y[at(i, n, incy)];
    else if (kind == Reduce::SumSquares)
      s += (v / scale) * (v / scale);
    else
      s += fabs(v);
  }
  T all = blockReduce(part, s, sum);
  if (threadIdx.x == 0)
    *result = kind == Reduce::SumSquares ? scale * sqrt(all) : all;
}

/// The 1-based index of the first element of largest (or smallest)
/// absolute value; 0 for an empty vector.
template <typename T, bool max>
__global__ void iamaxKernel(int n, const T *x, int incx, int *result) {
  __shared__ T best[kThreads];
  __shared__ int where[kThreads];
  T b = T(0);
  int k = 0;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    T v = x[(long long)i * incx];
    v = v < T(0) ? -v : v;
    if (k == 0 || (max ? v > b : v < b)) {
      b = v;
      k = i + 1;
    }
  }
  best[threadIdx.x] = b;
  where[threadIdx.x] = k;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      T ob = best[threadIdx.x + w];
      int ok = where[threadIdx.x + w];
      int mk = where[threadIdx.x];
      T mb = best[threadIdx.x];
      bool take = ok != 0 && (mk == 0 || (max ? ob > mb : ob < mb) ||
                              (ob == mb && ok < mk));
      if (take) {
        best[threadIdx.x] = ob;
        where[threadIdx.x] = ok;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0)
    *result = where[0];
}

/// Runs a one-block reduction that writes a `R` to `result`, in host or
/// device memory as the pointer mode says.
template <typename R, typename Launch>
cublasStatus_t reduceTo(cublasHandle_t h, R *result, Launch launch) {
  if (h->pointerMode == CUBLAS_POINTER_MODE_DEVICE)
    return launched(launch(result));
  if (cublasStatus_t s = launched(launch(static_cast<R *>(h->scratch))))
    return s;
  if (cudaMemcpyAsync(result, h->scratch, sizeof(R), cudaMemcpyDeviceToHost,
                      h->stream) != cudaSuccess ||
      cudaStreamSynchronize(h->stream) != cudaSuccess)
    return CUBLAS_STATUS_EXECUTION_FAILED;
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T>
cublasStatus_t axpy(cublasHandle_t h, int n, const T *alpha, const T *x,
                    int incx, T *y, int incy) {
  if (!h)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!alpha)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (n <= 0)
    return CUBLAS_STATUS_SUCCESS;
  return launched(launch(axpyKernel<T>, blocksFor(n), kThreads, h->stream, n,
                         scalarOf(h, alpha), x, incx, y, incy));
}

template <typename T>
cublasStatus_t scal(cublasHandle_t h, int n, const T *alpha, T *x, int incx) {
  if (!h)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!alpha)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (n <= 0 || incx <= 0)
    return CUBLAS_STATUS_SUCCESS;
  return launched(launch(scalKernel<T>, blocksFor(n), kThreads, h->stream, n,
                         scalarOf(h, alpha), x, incx));
}

template <typename T>
cublasStatus_t copy(cublasHandle_t h, int n, const T *x, int incx, T *y,
                    int incy, bool swap) {
  if (!h)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (n <= 0)
    return CUBLAS_STATUS_SUCCESS;
  return launched(launch(copyKernel<T>, blocksFor(n), kThreads, h->stream, n, x,
                         incx, y, incy, swap));
}

template <typename T, Reduce kind>
cublasStatus_t reduce(cublasHandle_t h, int n, const T *x, int incx, const T *y,
                      int incy, T *result) {
  if (!h)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!result)
    return CUBLAS_STATUS_INVALID_VALUE;
  // nrm2 and asum of a vector with a non-positive increment are 0, as in
  // the reference BLAS.
  if (kind != Reduce::Dot && incx <= 0)
    n = 0;
  return reduceTo<T>(h, result, [&](T *out) {
    return launch(reduceKernel<T, kind>, 1, kThreads, h->stream, std::max(n, 0),
                  x, incx, y, incy, out);
  });
}

template <typename T, bool max>
cublasStatus_t iamax(cublasHandle_t h, int n, const T *x, int incx,
                     int *result) {
  if (!h)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!result)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (incx <= 0)
    n = 0;
  return reduceTo<int>(h, result, [&](int *out) {
    return launch(iamaxKernel<T, max>, 1, kThreads, h->stream, std::max(n, 0),
                  x, incx, out);
  });
}

//===----------------------------------------------------------------------===//
// Level 2 and 3
//===----------------------------------------------------------------------===//

bool transposed(cublasOperation_t op) { return op != CUBLAS_OP_N; }

bool validOp(cublasOperation_t op) {
  return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

template <typename T>
__global__ void gemvKernel(bool trans, int m, int n, Scalar<T> alpha,
                           const T *A, int lda, const T *x, int incx,
                           Scalar<T> beta, T *y, int incy) {
  // y has m elements (n when transposed); element r is row r of op(A)
  // times x.
  int rows = trans ? n : m, cols = trans ? m : n;
  T a = alpha.get(), b = beta.get();
  for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < rows;
       r += (long long)gridDim.x * blockDim.x) {
    // BLAS: with alpha == 0, A and x are not read; with beta == 0, y is not.
    T s = T(0);
    if (a != T(0))
      for (int c = 0; c < cols; ++c) {
        T e = trans ? A[c + r * (long long)lda] : A[r + c * (long long)lda];
        s += e * x[at(c, cols, incx)];
      }
    T &out = y[at(r, rows, incy)];
    out = b == T(0) ? a * s : a * s + b * out;
  }
}

template <typename T>
cublasStatus_t gemv(cublasHandle_t h, cublasOperation_t trans, int m, int n,
                    const T *alpha, const T *A, int lda, const T *x, int incx,
                    const T *beta, T *y, int incy) {
  if (!h)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!validOp(trans) || m < 0 || n < 0 || lda < std::max(1, m) || incx == 0 ||
      incy == 0 || !alpha || !beta)
    return CUBLAS_STATUS_INVALID_VALUE;
  int rows = transposed(trans) ? n : m;
  if (m == 0 || n == 0)
    return CUBLAS_STATUS_SUCCESS;
  return launched(launch(gemvKernel<T>, blocksFor(rows), kThreads, h->stream,
                         transposed(trans), m, n, scalarOf(h, alpha), A, lda, x,
                         incx, scalarOf(h, beta), y, incy));
}

/// Checks a GEMM's arguments as cuBLAS does and fills `s` (column-major
/// matrices).
cublasStatus_t gemmShape(cublasHandle_t h, cublasOperation_t ta,
                         cublasOperation_t tb, int m, int n, int k,
                         const void *A, int lda, long long strideA,
                         const void *B, int ldb, long long strideB,
                         const void *C, int ldc, long long strideC, int batch,
                         bool arrays, GemmShape &s) {
  if (!h)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  bool transA = transposed(ta), transB = transposed(tb);
  if (!validOp(ta) || !validOp(tb) || m < 0 || n < 0 || k < 0 || batch < 0 ||
      lda < std::max(1, transA ? k : m) || ldb < std::max(1, transB ? n : k) ||
      ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  s = GemmShape{};
  s.transA = transA;
  s.transB = transB;
  s.m = m;
  s.n = n;
  s.k = k;
  s.batch = batch;
  s.arrays = arrays;
  s.A = wooly::blas::columnMajor(A, lda, strideA);
  s.B = wooly::blas::columnMajor(B, ldb, strideB);
  s.C = s.D = wooly::blas::columnMajor(C, ldc, strideC);
  s.scalarsOnDevice = h->pointerMode == CUBLAS_POINTER_MODE_DEVICE;
  return CUBLAS_STATUS_SUCCESS;
}

/// GemmEx and its batched forms: scalars of the compute type's scale type.
cublasStatus_t gemmEx(const char *name, cublasHandle_t h, const GemmShape &s,
                      const void *alpha, const void *beta, cudaDataType a,
                      cudaDataType b, cudaDataType c,
                      cublasComputeType_t compute) {
  if (!alpha || !beta)
    return CUBLAS_STATUS_INVALID_VALUE;
  return wooly::blas::runGemm(name, s, alpha, beta, a, b, c, c, compute,
                              wooly::blas::scaleTypeOf(compute), h->stream);
}

template <typename T> cudaDataType dataTypeOf();
template <> cudaDataType dataTypeOf<float>() { return CUDA_R_32F; }
template <> cudaDataType dataTypeOf<double>() { return CUDA_R_64F; }
template <> cudaDataType dataTypeOf<__half>() { return CUDA_R_16F; }

template <typename T> cublasComputeType_t computeTypeOf();
template <> cublasComputeType_t computeTypeOf<float>() {
  return CUBLAS_COMPUTE_32F;
}
template <> cublasComputeType_t computeTypeOf<double>() {
  return CUBLAS_COMPUTE_64F;
}
template <> cublasComputeType_t computeTypeOf<__half>() {
  return CUBLAS_COMPUTE_16F;
}

/// Sgemm, Dgemm, Hgemm and their batched forms.
template <typename T>
cublasStatus_t gemm(const char *name, cublasHandle_t h, cublasOperation_t ta,
                    cublasOperation_t tb, int m, int n, int k, const T *alpha,
                    const void *A, int lda, long long strideA, const void *B,
                    int ldb, long long strideB, const T *beta, const void *C,
                    int ldc, long long strideC, int batch, bool arrays) {
  GemmShape s;
  if (cublasStatus_t st = gemmShape(h, ta, tb, m, n, k, A, lda, strideA, B, ldb,
                                    strideB, C, ldc, strideC, batch, arrays, s))
    return st;
  cudaDataType t = dataTypeOf<T>();
  return gemmEx(name, h, s, alpha, beta, t, t, t, computeTypeOf<T>());
}

//===----------------------------------------------------------------------===//
// Host <-> device copies
//===----------------------------------------------------------------------===//

cublasStatus_t copyMatrix(int rows, int cols, int elemSize, const void *src,
                          int lds, void *dst, int ldd, cudaStream_t stream,
                          bool async) {
  if (rows < 0 || cols < 0 || elemSize <= 0 || lds < std::max(1, rows) ||
      ldd < std::max(1, rows))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (rows == 0 || cols == 0)
    return CUBLAS_STATUS_SUCCESS;
  size_t w = size_t(rows) * elemSize;
  cudaError_t e =
      async ? cudaMemcpy2DAsync(dst, size_t(ldd) * elemSize, src,
                                size_t(lds) * elemSize, w, cols,
                                cudaMemcpyDefault, stream)
            : cudaMemcpy2D(dst, size_t(ldd) * elemSize, src,
                           size_t(lds) * elemSize, w, cols, cudaMemcpyDefault);
  return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_MAPPING_ERROR;
}

cublasStatus_t copyVector(int n, int elemSize, const void *src, int incs,
                          void *dst, int incd, cudaStream_t stream,
                          bool async) {
  if (n < 0 || elemSize <= 0 || incs <= 0 || incd <= 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (n == 0)
    return CUBLAS_STATUS_SUCCESS;
  // A vector is a matrix of one-element columns.
  size_t w = size_t(elemSize);
  cudaError_t e =
      async ? cudaMemcpy2DAsync(dst, size_t(incd) * w, src, size_t(incs) * w, w,
                                n, cudaMemcpyDefault, stream)
            : cudaMemcpy2D(dst, size_t(incd) * w, src, size_t(incs) * w, w, n,
                           cudaMemcpyDefault);
  return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_MAPPING_ERROR;
}

/// A handle's setting, read into `*out`.
template <typename T>
cublasStatus_t getField(cublasHandle_t h, T cublasContext::*field, T *out) {
  if (!h)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!out)
    return CUBLAS_STATUS_INVALID_VALUE;
  *out = h->*field;
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T>
cublasStatus_t setField(cublasHandle_t h, T cublasContext::*field, T value) {
  if (!h)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  h->*field = value;
  return CUBLAS_STATUS_SUCCESS;
}

} // namespace

//===----------------------------------------------------------------------===//
// The API
//===----------------------------------------------------------------------===//

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
  if (!handle)
    return CUBLAS_STATUS_INVALID_VALUE;
  auto *h = new (std::nothrow) cublasContext;
  if (!h)
    return CUBLAS_STATUS_ALLOC_FAILED;
  if (cudaError_t e = cudaMalloc(&h->scratch, 16)) {
    delete h;
    // Out of memory, or no device (the runtime did not initialise).
    return e == cudaErrorMemoryAllocation ? CUBLAS_STATUS_ALLOC_FAILED
                                          : CUBLAS_STATUS_NOT_INITIALIZED;
  }
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  // No queued work uses the scratch: the reductions that write it wait for
  // their result. (The handle's stream may be destroyed already.)
  cudaFree(handle->scratch);
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

// The handle is not needed (NVIDIA's accepts none too).
cublasStatus_t cublasGetVersion_v2(cublasHandle_t, int *version) {
  if (!version)
    return CUBLAS_STATUS_INVALID_VALUE;
  *version = kVersion;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value) {
  return wooly::blas::getProperty(type, value);
}

size_t cublasGetCudartVersion(void) { return CUDART_VERSION; }

const char *cublasGetStatusName(cublasStatus_t status) {
  return wooly::blas::statusName(status);
}

const char *cublasGetStatusString(cublasStatus_t status) {
  return wooly::blas::statusString(status);
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle,
                                  cudaStream_t streamId) {
  return setField(handle, &cublasContext::stream, streamId);
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle,
                                  cudaStream_t *streamId) {
  return getField(handle, &cublasContext::stream, streamId);
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle,
                                       cublasPointerMode_t *mode) {
  return getField(handle, &cublasContext::pointerMode, mode);
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle,
                                       cublasPointerMode_t mode) {
  if (handle && mode != CUBLAS_POINTER_MODE_HOST &&
      mode != CUBLAS_POINTER_MODE_DEVICE)
    return CUBLAS_STATUS_INVALID_VALUE;
  return setField(handle, &cublasContext::pointerMode, mode);
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode) {
  return getField(handle, &cublasContext::mathMode, mode);
}

// Every math mode computes in full precision here (tensor-op and TF32 modes
// allow less, and do not require it), so the mode is only kept.
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  return setField(handle, &cublasContext::mathMode, mode);
}

cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle,
                                    cublasAtomicsMode_t *mode) {
  return getField(handle, &cublasContext::atomicsMode, mode);
}

cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle,
                                    cublasAtomicsMode_t mode) {
  return setField(handle, &cublasContext::atomicsMode, mode);
}

// No kernel here needs a workspace; the buffer is kept, not used.
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                                     size_t workspaceSizeInBytes) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->workspace = workspace;
  handle->workspaceBytes = workspaceSizeInBytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetVector(int n, int elemSize, const void *x, int incx,
                               void *devicePtr, int incy) {
  return copyVector(n, elemSize, x, incx, devicePtr, incy, nullptr, false);
}
cublasStatus_t cublasGetVector(int n, int elemSize, const void *x, int incx,
                               void *y, int incy) {
  return copyVector(n, elemSize, x, incx, y, incy, nullptr, false);
}
cublasStatus_t cublasSetVectorAsync(int n, int elemSize, const void *hostPtr,
                                    int incx, void *devicePtr, int incy,
                                    cudaStream_t stream) {
  return copyVector(n, elemSize, hostPtr, incx, devicePtr, incy, stream, true);
}
cublasStatus_t cublasGetVectorAsync(int n, int elemSize, const void *devicePtr,
                                    int incx, void *hostPtr, int incy,
                                    cudaStream_t stream) {
  return copyVector(n, elemSize, devicePtr, incx, hostPtr, incy, stream, true);
}
cublasStatus_t cublasSetMatrix(int rows, int cols, int elemSize, const void *A,
                               int lda, void *B, int ldb) {
  return copyMatrix(rows, cols, elemSize, A, lda, B, ldb, nullptr, false);
}
cublasStatus_t cublasGetMatrix(int rows, int cols, int elemSize, const void *A,
                               int lda, void *B, int ldb) {
  return copyMatrix(rows, cols, elemSize, A, lda, B, ldb, nullptr, false);
}
cublasStatus_t cublasSetMatrixAsync(int rows, int cols, int elemSize,
                                    const void *A, int lda, void *B, int ldb,
                                    cudaStream_t stream) {
  return copyMatrix(rows, cols, elemSize, A, lda, B, ldb, stream, true);
}
cublasStatus_t cublasGetMatrixAsync(int rows, int cols, int elemSize,
                                    const void *A, int lda, void *B, int ldb,
                                    cudaStream_t stream) {
  return copyMatrix(rows, cols, elemSize, A, lda, B, ldb, stream, true);
}

// Level 1.
#define WOOLY_LEVEL1(P, p, T)                                                  \
  cublasStatus_t cublas##P##axpy_v2(cublasHandle_t h, int n, const T *alpha,   \
                                    const T *x, int incx, T *y, int incy) {    \
    return axpy(h, n, alpha, x, incx, y, incy);                                \
  }                                                                            \
  cublasStatus_t cublas##P##scal_v2(cublasHandle_t h, int n, const T *alpha,   \
                                    T *x, int incx) {                          \
    return scal(h, n, alpha, x, incx);                                         \
  }                                                                            \
  cublasStatus_t cublas##P##copy_v2(cublasHandle_t h, int n, const T *x,       \
                                    int incx, T *y, int incy) {                \
    return copy(h, n, x, incx, y, incy, false);                                \
  }                                                                            \
  cublasStatus_t cublas##P##swap_v2(cublasHandle_t h, int n, T *x, int incx,   \
                                    T *y, int incy) {                          \
    return copy(h, n, x, incx, y, incy, true);                                 \
  }                                                                            \
  cublasStatus_t cublas##P##dot_v2(cublasHandle_t h, int n, const T *x,        \
                                   int incx, const T *y, int incy,             \
                                   T *result) {                                \
    return reduce<T, Reduce::Dot>(h, n, x, incx, y, incy, result);             \
  }                                                                            \
  cublasStatus_t cublas##P##nrm2_v2(cublasHandle_t h, int n, const T *x,       \
                                    int incx, T *result) {                     \
    return reduce<T, Reduce::SumSquares>(h, n, x, incx, nullptr, 0, result);   \
  }                                                                            \
  cublasStatus_t cublas##P##asum_v2(cublasHandle_t h, int n, const T *x,       \
                                    int incx, T *result) {                     \
    return reduce<T, Reduce::AbsSum>(h, n, x, incx, nullptr, 0, result);       \
  }                                                                            \
  cublasStatus_t cublasI##p##amax_v2(cublasHandle_t h, int n, const T *x,      \
                                     int incx, int *result) {                  \
    return iamax<T, true>(h, n, x, incx, result);                              \
  }                                                                            \
  cublasStatus_t cublasI##p##amin_v2(cublasHandle_t h, int n, const T *x,      \
                                     int incx, int *result) {                  \
    return iamax<T, false>(h, n, x, incx, result);                             \
  }                                                                            \
  cublasStatus_t cublas##P##gemv_v2(cublasHandle_t h, cublasOperation_t trans, \
                                    int m, int n, const T *alpha, const T *A,  \
                                    int lda, const T *x, int incx,             \
                                    const T *beta, T *y, int incy) {           \
    return gemv(h, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);        \
  }
WOOLY_LEVEL1(S, s, float)
WOOLY_LEVEL1(D, d, double)
#undef WOOLY_LEVEL1

// Level 3.
// cublas_v2.h maps the legacy names (cublasSgemm) to these (_v2); Hgemm
// has no legacy form, so no suffix.
#define WOOLY_GEMM(NAME, T)                                                    \
  cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta,                  \
                      cublasOperation_t tb, int m, int n, int k,               \
                      const T *alpha, const T *A, int lda, const T *B,         \
                      int ldb, const T *beta, T *C, int ldc) {                 \
    return gemm(#NAME, h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta,  \
                C, ldc, 0, 1, false);                                          \
  }
WOOLY_GEMM(cublasSgemm_v2, float)
WOOLY_GEMM(cublasDgemm_v2, double)
WOOLY_GEMM(cublasHgemm, __half)
#undef WOOLY_GEMM

#define WOOLY_GEMM_BATCHED(P, T)                                               \
  cublasStatus_t cublas##P##gemmStridedBatched(                                \
      cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,     \
      int n, int k, const T *alpha, const T *A, int lda, long long strideA,    \
      const T *B, int ldb, long long strideB, const T *beta, T *C, int ldc,    \
      long long strideC, int batchCount) {                                     \
    return gemm("cublas" #P "gemmStridedBatched", h, ta, tb, m, n, k, alpha,   \
                A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,       \
                batchCount, false);                                            \
  }                                                                            \
  cublasStatus_t cublas##P##gemmBatched(                                       \
      cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,     \
      int n, int k, const T *alpha, const T *const Aarray[], int lda,          \
      const T *const Barray[], int ldb, const T *beta, T *const Carray[],      \
      int ldc, int batchCount) {                                               \
    return gemm("cublas" #P "gemmBatched", h, ta, tb, m, n, k, alpha, Aarray,  \
                lda, 0, Barray, ldb, 0, beta, Carray, ldc, 0, batchCount,      \
                true);                                                         \
  }
WOOLY_GEMM_BATCHED(S, float)
WOOLY_GEMM_BATCHED(D, double)
WOOLY_GEMM_BATCHED(H, __half)
#undef WOOLY_GEMM_BATCHED

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta,
                            cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A,
                            cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta,
                            void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t) {
  GemmShape s;
  if (cublasStatus_t st = gemmShape(h, ta, tb, m, n, k, A, lda, 0, B, ldb, 0, C,
                                    ldc, 0, 1, false, s))
    return st;
  return gemmEx("cublasGemmEx", h, s, alpha, beta, Atype, Btype, Ctype,
                computeType);
}

cublasStatus_t cublasSgemmEx(cublasHandle_t h, cublasOperation_t ta,
                             cublasOperation_t tb, int m, int n, int k,
                             const float *alpha, const void *A,
                             cudaDataType Atype, int lda, const void *B,
                             cudaDataType Btype, int ldb, const float *beta,
                             void *C, cudaDataType Ctype, int ldc) {
  GemmShape s;
  if (cublasStatus_t st = gemmShape(h, ta, tb, m, n, k, A, lda, 0, B, ldb, 0, C,
                                    ldc, 0, 1, false, s))
    return st;
  return gemmEx("cublasSgemmEx", h, s, alpha, beta, Atype, Btype, Ctype,
                CUBLAS_COMPUTE_32F);
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
    int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
    long long strideA, const void *B, cudaDataType Btype, int ldb,
    long long strideB, const void *beta, void *C, cudaDataType Ctype, int ldc,
    long long strideC, int batchCount, cublasComputeType_t computeType,
    cublasGemmAlgo_t) {
  GemmShape s;
  if (cublasStatus_t st =
          gemmShape(h, ta, tb, m, n, k, A, lda, strideA, B, ldb, strideB, C,
                    ldc, strideC, batchCount, false, s))
    return st;
  return gemmEx("cublasGemmStridedBatchedEx", h, s, alpha, beta, Atype, Btype,
                Ctype, computeType);
}

cublasStatus_t cublasGemmBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
    int k, const void *alpha, const void *const Aarray[], cudaDataType Atype,
    int lda, const void *const Barray[], cudaDataType Btype, int ldb,
    const void *beta, void *const Carray[], cudaDataType Ctype, int ldc,
    int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t) {
  GemmShape s;
  if (cublasStatus_t st =
          gemmShape(h, ta, tb, m, n, k, Aarray, lda, 0, Barray, ldb, 0, Carray,
                    ldc, 0, batchCount, true, s))
    return st;
  return gemmEx("cublasGemmBatchedEx", h, s, alpha, beta, Atype, Btype, Ctype,
                computeType);
}

} // extern "C"
