//===- Gemm.cuh - The GEMM kernel of the drop-in cuBLAS libraries --------===//
//
// One kernel for every matrix product of libcublas.so.13 and
// libcublasLt.so.13: D = epilogue(alpha * op(A) * op(B) + beta * C), for
// batches (strided, or arrays of pointers), any row and column strides
// (column-major, row-major, padded), and cuBLASLt's epilogues (bias, ReLU,
// GELU with its input kept, the GELU gradient, bias gradients). A thread per
// element of D sums its products in index order, in the compute type: the
// same result on every run and every device.
//
//===----------------------------------------------------------------------===//
#ifndef WOOLY_CAPTURE_BLAS_GEMM_CUH
#define WOOLY_CAPTURE_BLAS_GEMM_CUH

#include "Log.h"

#include <cublas_api.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <tuple>
#include <type_traits>
#include <utility>

namespace wooly::blas {

/// A scalar argument: its value (read on the host at the call) or its
/// device address (read by the kernel).
template <typename T> struct Scalar {
  T value;
  const T *device;
  __device__ T get() const { return device ? *device : value; }
};

template <typename T> Scalar<T> scalarOf(bool onDevice, const T *p) {
  Scalar<T> s{};
  if (onDevice)
    s.device = p;
  else
    s.value = *p;
  return s;
}

/// Launches `kernel` with `args` through cudaLaunchKernel and returns its
/// status. The libraries share the application's runtime: unlike `<<<>>>`
/// followed by cudaGetLastError, this leaves an error the application has
/// not read yet where it is (NVIDIA's libraries, with their own runtime,
/// never touch it).
template <typename... Params, typename... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block,
                   cudaStream_t stream, Args &&...args) {
  std::tuple<std::decay_t<Params>...> values(std::forward<Args>(args)...);
  void *pointers[sizeof...(Params) > 0 ? sizeof...(Params) : 1];
  std::apply(
      [&](auto &...v) {
        size_t i = 0;
        ((pointers[i++] = static_cast<void *>(&v)), ...);
      },
      values);
  return cudaLaunchKernel(reinterpret_cast<const void *>(kernel), grid, block,
                          pointers, 0, stream);
}

/// A stored matrix: element (r, c) at `base + r * rs + c * cs`, the matrix
/// of batch entry b at `base + b * batchStride` (or, for arrays, at
/// `((T **)base)[b]`).
struct MatrixRef {
  const void *base = nullptr;
  long long rs = 1, cs = 1, batchStride = 0;
};

/// What cuBLASLt does after the product (cublasLtEpilogue_t's parts).
struct Epilogue {
  enum Activation : int { None, Relu, Gelu, GeluGradient };
  Activation act = None;
  /// A bias added to every column (its length the rows of D), before the
  /// activation; of D's type, or float where `biasFloat`.
  const void *bias = nullptr;
  bool biasFloat = false;
  long long biasBatchStride = 0;
  /// GELU's input, written (Gelu) or read (GeluGradient): a matrix of D's
  /// type, column-major with leading dimension `auxLd`.
  void *aux = nullptr;
  long long auxLd = 0, auxBatchStride = 0;
  /// Bias gradients, of C's type: the row sums of op(A) (m of them) or the
  /// column sums of op(B) (n), over k.
  void *gradA = nullptr, *gradB = nullptr;
};

/// One product, or a batch of them. A is m x k after op, B k x n after op,
/// C and D m x n.
struct GemmShape {
  bool transA = false, transB = false;
  int m = 0, n = 0, k = 0;
  int batch = 1;
  /// Each matrix's base is a device array of per-batch pointers.
  bool arrays = false;
  MatrixRef A, B, C, D;
  Epilogue epilogue;
  /// alpha and beta live in device memory.
  bool scalarsOnDevice = false;
};

/// Column-major `ld`, as BLAS stores matrices.
inline MatrixRef columnMajor(const void *p, long long ld,
                             long long batchStride = 0) {
  MatrixRef r;
  r.base = p;
  r.rs = 1;
  r.cs = ld;
  r.batchStride = batchStride;
  return r;
}

template <typename T>
__device__ T *matrixOf(const MatrixRef &m, bool arrays, int b) {
  if (arrays)
    return static_cast<T *const *>(m.base)[b];
  return const_cast<T *>(static_cast<const T *>(m.base)) + b * m.batchStride;
}

/// GELU as cuBLASLt computes it (the tanh approximation), and its
/// derivative.
__device__ inline float gelu(float x) {
  const float c = 0.7978845608028654f; // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}
__device__ inline float geluGradient(float x) {
  const float c = 0.7978845608028654f;
  float u = c * (x + 0.044715f * x * x * x);
  float t = tanhf(u);
  float du = c * (1.0f + 3.0f * 0.044715f * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

/// `TIn` the type of A and B, `TOut` of C and D, `TScale` of alpha and
/// beta, `TAcc` the type the products are summed in. A thread per element
/// of D; grid-stride loops over D's rows (x), columns (y) and the batch (z).
template <typename TIn, typename TOut, typename TScale, typename TAcc>
__global__ void gemmKernel(GemmShape s, Scalar<TScale> alphaArg,
                           Scalar<TScale> betaArg) {
  TScale alpha = alphaArg.get(), beta = betaArg.get();
  const Epilogue &e = s.epilogue;
  for (int b = blockIdx.z; b < s.batch; b += gridDim.z) {
    const TIn *A = matrixOf<TIn>(s.A, s.arrays, b);
    const TIn *B = matrixOf<TIn>(s.B, s.arrays, b);
    const TOut *C = matrixOf<TOut>(s.C, s.arrays, b);
    TOut *D = matrixOf<TOut>(s.D, s.arrays, b);
    // op(A)(i, l) and op(B)(l, j) as offsets.
    long long aI = s.transA ? s.A.cs : s.A.rs, aL = s.transA ? s.A.rs : s.A.cs;
    long long bL = s.transB ? s.B.cs : s.B.rs, bJ = s.transB ? s.B.rs : s.B.cs;
    for (long long j = blockIdx.y * (long long)blockDim.y + threadIdx.y;
         j < s.n; j += (long long)gridDim.y * blockDim.y)
      for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
           i < s.m; i += (long long)gridDim.x * blockDim.x) {
        // BLAS: with alpha == 0, A and B are not read (D = beta C).
        TScale v = TScale(0);
        if (!(alpha == TScale(0))) {
          TAcc acc = TAcc(0);
          for (int l = 0; l < s.k; ++l)
            acc += TAcc(A[i * aI + l * aL]) * TAcc(B[l * bL + j * bJ]);
          v = alpha * TScale(acc);
        }
        // BLAS: with beta == 0, C is not read (it may hold NaNs).
        if (!(beta == TScale(0)))
          v = v + beta * TScale(C[i * s.C.rs + j * s.C.cs]);
        if (e.bias) {
          long long at = b * e.biasBatchStride + i;
          v = v + (e.biasFloat ? TScale(static_cast<const float *>(e.bias)[at])
                               : TScale(static_cast<const TOut *>(e.bias)[at]));
        }
        TOut *aux =
            static_cast<TOut *>(e.aux) + b * e.auxBatchStride + i + j * e.auxLd;
        switch (e.act) {
        case Epilogue::None:
          break;
        case Epilogue::Relu:
          if (v < TScale(0))
            v = TScale(0);
          break;
        case Epilogue::Gelu:
          if (e.aux)
            *aux = TOut(v);
          v = TScale(gelu(float(v)));
          break;
        case Epilogue::GeluGradient:
          v = TScale(float(v) * geluGradient(float(*aux)));
          break;
        }
        D[i * s.D.rs + j * s.D.cs] = TOut(v);
        // Bias gradients: the first row (column) of threads sums op(B)'s
        // column (op(A)'s row) over k.
        if (e.gradB && i == 0) {
          TAcc g = TAcc(0);
          for (int l = 0; l < s.k; ++l)
            g += TAcc(B[l * bL + j * bJ]);
          static_cast<TOut *>(e.gradB)[b * e.biasBatchStride + j] = TOut(g);
        }
        if (e.gradA && j == 0) {
          TAcc g = TAcc(0);
          for (int l = 0; l < s.k; ++l)
            g += TAcc(A[i * aI + l * aL]);
          static_cast<TOut *>(e.gradA)[b * e.biasBatchStride + i] = TOut(g);
        }
      }
  }
}

/// Launches `s` on `stream`; alpha and beta point at `TScale`s.
template <typename TIn, typename TOut, typename TScale, typename TAcc>
cudaError_t launchGemm(const GemmShape &s, const void *alpha, const void *beta,
                       cudaStream_t stream) {
  auto blocks = [](long long n) {
    return unsigned(std::min<long long>((n + 15) / 16, 65535));
  };
  dim3 grid(blocks(s.m), blocks(s.n), unsigned(std::min(s.batch, 65535)));
  return launch(gemmKernel<TIn, TOut, TScale, TAcc>, grid, dim3(16, 16), stream,
                s,
                scalarOf(s.scalarsOnDevice, static_cast<const TScale *>(alpha)),
                scalarOf(s.scalarsOnDevice, static_cast<const TScale *>(beta)));
}

using GemmLauncher = cudaError_t (*)(const GemmShape &, const void *,
                                     const void *, cudaStream_t);

/// The kernel for A and B of type `ab`, C and D of type `cd`, computed in
/// `compute` with scalars of type `scale`: null where that is not
/// implemented.
inline GemmLauncher gemmKernelFor(cudaDataType ab, cudaDataType cd,
                                  cublasComputeType_t compute,
                                  cudaDataType scale) {
  switch (compute) {
  case CUBLAS_COMPUTE_16F:
  case CUBLAS_COMPUTE_16F_PEDANTIC:
    if (ab == CUDA_R_16F && cd == CUDA_R_16F && scale == CUDA_R_16F)
      return launchGemm<__half, __half, __half, __half>;
    return nullptr;
  case CUBLAS_COMPUTE_32F:
  case CUBLAS_COMPUTE_32F_PEDANTIC:
  case CUBLAS_COMPUTE_32F_FAST_16F:
  case CUBLAS_COMPUTE_32F_FAST_16BF:
  case CUBLAS_COMPUTE_32F_FAST_TF32:
    // The fast modes allow, and do not require, inputs rounded to fewer
    // bits: full float is what they compute here.
    if (scale != CUDA_R_32F)
      return nullptr;
    if (ab == CUDA_R_32F && cd == CUDA_R_32F)
      return launchGemm<float, float, float, float>;
    if (ab == CUDA_R_16F && cd == CUDA_R_16F)
      return launchGemm<__half, __half, float, float>;
    if (ab == CUDA_R_16F && cd == CUDA_R_32F)
      return launchGemm<__half, float, float, float>;
    if (ab == CUDA_R_16BF && cd == CUDA_R_16BF)
      return launchGemm<__nv_bfloat16, __nv_bfloat16, float, float>;
    if (ab == CUDA_R_16BF && cd == CUDA_R_32F)
      return launchGemm<__nv_bfloat16, float, float, float>;
    return nullptr;
  case CUBLAS_COMPUTE_64F:
  case CUBLAS_COMPUTE_64F_PEDANTIC:
    if (ab == CUDA_R_64F && cd == CUDA_R_64F && scale == CUDA_R_64F)
      return launchGemm<double, double, double, double>;
    return nullptr;
  case CUBLAS_COMPUTE_32I:
  case CUBLAS_COMPUTE_32I_PEDANTIC:
    if (ab == CUDA_R_8I && cd == CUDA_R_32I && scale == CUDA_R_32I)
      return launchGemm<int8_t, int32_t, int32_t, int32_t>;
    return nullptr;
  default:
    return nullptr;
  }
}

/// The scalar type cuBLAS's GemmEx uses with `compute`.
inline cudaDataType scaleTypeOf(cublasComputeType_t compute) {
  switch (compute) {
  case CUBLAS_COMPUTE_16F:
  case CUBLAS_COMPUTE_16F_PEDANTIC:
    return CUDA_R_16F;
  case CUBLAS_COMPUTE_64F:
  case CUBLAS_COMPUTE_64F_PEDANTIC:
    return CUDA_R_64F;
  case CUBLAS_COMPUTE_32I:
  case CUBLAS_COMPUTE_32I_PEDANTIC:
    return CUDA_R_32I;
  default:
    return CUDA_R_32F;
  }
}

inline const char *typeName(cudaDataType t) {
  switch (t) {
  case CUDA_R_16F:
    return "CUDA_R_16F";
  case CUDA_R_16BF:
    return "CUDA_R_16BF";
  case CUDA_R_32F:
    return "CUDA_R_32F";
  case CUDA_R_64F:
    return "CUDA_R_64F";
  case CUDA_R_8I:
    return "CUDA_R_8I";
  case CUDA_R_32I:
    return "CUDA_R_32I";
  case CUDA_C_32F:
    return "CUDA_C_32F";
  case CUDA_C_64F:
    return "CUDA_C_64F";
  case CUDA_R_8F_E4M3:
    return "CUDA_R_8F_E4M3";
  case CUDA_R_8F_E5M2:
    return "CUDA_R_8F_E5M2";
  default:
    return "another cudaDataType";
  }
}

/// Runs `s` with the kernel for these types, or says once on stderr that
/// the combination is not implemented.
inline cublasStatus_t runGemm(const char *name, const GemmShape &s,
                              const void *alpha, const void *beta,
                              cudaDataType a, cudaDataType b, cudaDataType c,
                              cudaDataType d, cublasComputeType_t compute,
                              cudaDataType scale, cudaStream_t stream) {
  GemmLauncher launch =
      a == b && c == d ? gemmKernelFor(a, c, compute, scale) : nullptr;
  if (!launch) {
    char what[240];
    if (c == d)
      std::snprintf(what, sizeof what,
                    "%s with A, B, C of types %s, %s, %s and compute type %d",
                    name, typeName(a), typeName(b), typeName(c), int(compute));
    else
      std::snprintf(what, sizeof what,
                    "%s with A, B, C, D of types %s, %s, %s, %s and compute "
                    "type %d",
                    name, typeName(a), typeName(b), typeName(c), typeName(d),
                    int(compute));
    wooly::capture::logUnsupportedOnce(
        what, "implemented are the real types half, bfloat16, float, double "
              "and int8 -> int32");
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (s.m == 0 || s.n == 0 || s.batch == 0)
    return CUBLAS_STATUS_SUCCESS;
  cudaError_t err = launch(s, alpha, beta, stream);
  if (err == cudaSuccess)
    return CUBLAS_STATUS_SUCCESS;
  wooly::capture::log(1, "%s: its kernel's launch failed: %s", name,
                      cudaGetErrorString(err));
  return CUBLAS_STATUS_EXECUTION_FAILED;
}

/// cublasGetProperty and cublasLtGetProperty (both libraries have cuBLAS's
/// version).
inline cublasStatus_t getProperty(libraryPropertyType type, int *value) {
  if (!value)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
  case MAJOR_VERSION:
    *value = CUBLAS_VER_MAJOR;
    return CUBLAS_STATUS_SUCCESS;
  case MINOR_VERSION:
    *value = CUBLAS_VER_MINOR;
    return CUBLAS_STATUS_SUCCESS;
  case PATCH_LEVEL:
    *value = CUBLAS_VER_PATCH;
    return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

/// cublasGetStatusName and cublasLtGetStatusName.
inline const char *statusName(cublasStatus_t status) {
  switch (status) {
#define NAME(s)                                                                \
  case s:                                                                      \
    return #s;
    NAME(CUBLAS_STATUS_SUCCESS)
    NAME(CUBLAS_STATUS_NOT_INITIALIZED)
    NAME(CUBLAS_STATUS_ALLOC_FAILED)
    NAME(CUBLAS_STATUS_INVALID_VALUE)
    NAME(CUBLAS_STATUS_ARCH_MISMATCH)
    NAME(CUBLAS_STATUS_MAPPING_ERROR)
    NAME(CUBLAS_STATUS_EXECUTION_FAILED)
    NAME(CUBLAS_STATUS_INTERNAL_ERROR)
    NAME(CUBLAS_STATUS_NOT_SUPPORTED)
    NAME(CUBLAS_STATUS_LICENSE_ERROR)
#undef NAME
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

/// cublasGetStatusString and cublasLtGetStatusString.
inline const char *statusString(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "success";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "the library was not initialized";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "the resource allocation failed";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "an invalid numeric value was used as an argument";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "an absent device architectural feature is required";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "an access to GPU memory space failed";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "the GPU program failed to execute";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "an internal operation failed";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "the functionality requested is not supported";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "an error was detected when checking the current licensing";
  }
  return "unknown error";
}

} // namespace wooly::blas

#endif // WOOLY_CAPTURE_BLAS_GEMM_CUH
