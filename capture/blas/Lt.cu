//===- Lt.cu - The drop-in libcublasLt.so.13 ------------------------------===//
//
// cuBLASLt's matmul API, which llm.c and other training code use for their
// matrix products with fused bias and GELU, on the GEMM kernel the drop-in
// libcublas uses (Gemm.cuh), registered with Wooly's libcudart like any
// program's kernels. Like NVIDIA's, NVIDIA's own library cannot run on
// Wooly's runtime (it reaches the driver through private tables).
//
// Implemented: handles; matrix layouts (column- or row-major, leading
// dimension, strided batches); matmul descriptors (compute and scale
// types, host or device scalars, transposes, the epilogues DEFAULT, RELU,
// BIAS, RELU_BIAS, GELU, GELU_AUX, GELU_BIAS, GELU_AUX_BIAS, DGELU, BGRADA
// and BGRADB, a bias of D's type or float); preferences; the heuristic
// (one algorithm, no workspace) and cublasLtMatmul for the types of
// cublasGemmEx (Gemm.cuh's gemmKernelFor). The descriptors fit NVIDIA's
// semi-opaque structures, so the Init forms work too. Attributes that
// change what is computed and are not implemented (fp8 scales, ReLU bit
// masks, vector alpha) fail with CUBLAS_STATUS_NOT_SUPPORTED when set; the
// rest of the library's exports are stubs (Stubs.cpp) that say so once.
//
//===----------------------------------------------------------------------===//

#include "Gemm.cuh"
#include "Log.h"

#include <cublasLt.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <string>

using wooly::blas::Epilogue;
using wooly::blas::GemmShape;
using wooly::capture::logUnsupportedOnce;

struct cublasLtContext {
  int unused = 0;
};

namespace {

/// What a cublasLtMatrixLayout_t holds.
struct Layout {
  int32_t type = CUDA_R_32F;
  int32_t order = CUBLASLT_ORDER_COL;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batchCount = 1;
  int64_t batchStride = 0;
  int64_t planeOffset = 0;
  uint32_t batchMode = 0;
};
static_assert(sizeof(Layout) <= sizeof(cublasLtMatrixLayoutOpaque_t),
              "a layout fits NVIDIA's semi-opaque structure");

/// What a cublasLtMatmulDesc_t holds. Attributes marked unsupported below
/// are kept only at their defaults.
struct MatmulDesc {
  int32_t computeType = CUBLAS_COMPUTE_32F;
  int32_t scaleType = CUDA_R_32F;
  int32_t pointerMode = CUBLASLT_POINTER_MODE_HOST;
  int32_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N, transC = CUBLAS_OP_N;
  int32_t fillMode = CUBLAS_FILL_MODE_FULL;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  int32_t smCountTarget = 0;
  int32_t auxType = -1, biasType = -1;
  int32_t scaleModes[5] = {}, dOutScaleMode = 0;
  int8_t fastAccum = 0;
  const void *bias = nullptr;
  int64_t biasBatchStride = 0;
  void *aux = nullptr;
  int64_t auxLd = 0, auxBatchStride = 0, alphaVectorBatchStride = 0;
  const void *scalePointers[4] = {}, *amaxD = nullptr, *auxScale = nullptr,
             *auxAmax = nullptr, *dOutScale = nullptr, *emulation = nullptr;
};
static_assert(sizeof(MatmulDesc) <= sizeof(cublasLtMatmulDescOpaque_t),
              "a matmul descriptor fits NVIDIA's semi-opaque structure");

struct Preference {
  uint32_t searchMode = 0;
  uint64_t maxWorkspaceBytes = 0;
  uint32_t reductionSchemeMask = 0xffffffffu;
  uint32_t minAlignment[4] = {256, 256, 256, 256};
  float maxWavesCount = 0;
  uint64_t implMask = ~uint64_t(0);
};
static_assert(sizeof(Preference) <= sizeof(cublasLtMatmulPreferenceOpaque_t),
              "a preference fits NVIDIA's semi-opaque structure");

/// One attribute: where it lives in its descriptor, its size, and whether
/// values other than its default change nothing Wooly computes (true) or
/// are not implemented (false: setting one fails).
struct Field {
  int attr;
  size_t offset, size;
  bool implemented;
};

#define FIELD(attr, Struct, member, ok)                                        \
  Field { attr, offsetof(Struct, member), sizeof(Struct::member), ok }

const Field layoutFields[] = {
    FIELD(CUBLASLT_MATRIX_LAYOUT_TYPE, Layout, type, true),
    FIELD(CUBLASLT_MATRIX_LAYOUT_ORDER, Layout, order, true),
    FIELD(CUBLASLT_MATRIX_LAYOUT_ROWS, Layout, rows, true),
    FIELD(CUBLASLT_MATRIX_LAYOUT_COLS, Layout, cols, true),
    FIELD(CUBLASLT_MATRIX_LAYOUT_LD, Layout, ld, true),
    FIELD(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, Layout, batchCount, true),
    FIELD(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, Layout, batchStride,
          true),
    FIELD(CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, Layout, planeOffset, false),
    FIELD(CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, Layout, batchMode, false),
};

const Field descFields[] = {
    FIELD(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, MatmulDesc, computeType, true),
    FIELD(CUBLASLT_MATMUL_DESC_SCALE_TYPE, MatmulDesc, scaleType, true),
    FIELD(CUBLASLT_MATMUL_DESC_POINTER_MODE, MatmulDesc, pointerMode, true),
    FIELD(CUBLASLT_MATMUL_DESC_TRANSA, MatmulDesc, transA, true),
    FIELD(CUBLASLT_MATMUL_DESC_TRANSB, MatmulDesc, transB, true),
    FIELD(CUBLASLT_MATMUL_DESC_TRANSC, MatmulDesc, transC, false),
    FIELD(CUBLASLT_MATMUL_DESC_FILL_MODE, MatmulDesc, fillMode, true),
    FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE, MatmulDesc, epilogue, true),
    FIELD(CUBLASLT_MATMUL_DESC_BIAS_POINTER, MatmulDesc, bias, true),
    FIELD(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, MatmulDesc, biasBatchStride,
          true),
    FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, MatmulDesc, aux, true),
    FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, MatmulDesc, auxLd, true),
    FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, MatmulDesc,
          auxBatchStride, true),
    FIELD(CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, MatmulDesc,
          alphaVectorBatchStride, false),
    FIELD(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, MatmulDesc, smCountTarget,
          true),
    FIELD(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, MatmulDesc, scalePointers[0],
          false),
    FIELD(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, MatmulDesc, scalePointers[1],
          false),
    FIELD(CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, MatmulDesc, scalePointers[2],
          false),
    FIELD(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, MatmulDesc, scalePointers[3],
          false),
    FIELD(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, MatmulDesc, amaxD, false),
    FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, MatmulDesc, auxType,
          true),
    FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, MatmulDesc, auxScale,
          false),
    FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, MatmulDesc, auxAmax,
          false),
    FIELD(CUBLASLT_MATMUL_DESC_FAST_ACCUM, MatmulDesc, fastAccum, true),
    FIELD(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, MatmulDesc, biasType, true),
    FIELD(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, MatmulDesc, scaleModes[0], false),
    FIELD(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, MatmulDesc, scaleModes[1], false),
    FIELD(CUBLASLT_MATMUL_DESC_C_SCALE_MODE, MatmulDesc, scaleModes[2], false),
    FIELD(CUBLASLT_MATMUL_DESC_D_SCALE_MODE, MatmulDesc, scaleModes[3], false),
    FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, MatmulDesc,
          scaleModes[4], false),
    FIELD(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, MatmulDesc, dOutScale,
          false),
    FIELD(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, MatmulDesc, dOutScaleMode,
          false),
    FIELD(CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, MatmulDesc, emulation,
          false),
};

// The preferences only steer NVIDIA's choice of algorithm: all are kept.
const Field preferenceFields[] = {
    FIELD(CUBLASLT_MATMUL_PREF_SEARCH_MODE, Preference, searchMode, true),
    FIELD(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, Preference,
          maxWorkspaceBytes, true),
    FIELD(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, Preference,
          reductionSchemeMask, true),
    FIELD(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, Preference,
          minAlignment[0], true),
    FIELD(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, Preference,
          minAlignment[1], true),
    FIELD(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, Preference,
          minAlignment[2], true),
    FIELD(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, Preference,
          minAlignment[3], true),
    FIELD(CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, Preference, maxWavesCount,
          true),
    FIELD(CUBLASLT_MATMUL_PREF_IMPL_MASK, Preference, implMask, true),
};
#undef FIELD

template <size_t N> const Field *findField(const Field (&table)[N], int attr) {
  for (const Field &f : table)
    if (f.attr == attr)
      return &f;
  return nullptr;
}

bool allZero(const void *buf, size_t size) {
  auto *p = static_cast<const unsigned char *>(buf);
  for (size_t i = 0; i < size; ++i)
    if (p[i])
      return false;
  return true;
}

/// cublasLt*SetAttribute: checks the size as NVIDIA's library does.
template <size_t N>
cublasStatus_t setAttribute(const char *function, const Field (&table)[N],
                            void *object, int attr, const void *buf,
                            size_t size) {
  const Field *f = findField(table, attr);
  if (!object || !buf || !f || size != f->size)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!f->implemented && !allZero(buf, size)) {
    char what[160];
    std::snprintf(what, sizeof what, "%s of attribute %d", function, attr);
    logUnsupportedOnce(what, "it changes what the product computes, in a way "
                             "Wooly does not implement yet");
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  std::memcpy(static_cast<char *>(object) + f->offset, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

/// cublasLt*GetAttribute: with `size` 0, only the size needed.
template <size_t N>
cublasStatus_t getAttribute(const Field (&table)[N], const void *object,
                            int attr, void *buf, size_t size, size_t *written) {
  const Field *f = findField(table, attr);
  if (!object || !f)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (size == 0) {
    if (!written)
      return CUBLAS_STATUS_INVALID_VALUE;
    *written = f->size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!buf || size != f->size)
    return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(buf, static_cast<const char *>(object) + f->offset, size);
  if (written)
    *written = size;
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T, typename Opaque> cublasStatus_t create(Opaque **out) {
  static_assert(sizeof(T) <= sizeof(Opaque), "fits");
  if (!out)
    return CUBLAS_STATUS_INVALID_VALUE;
  auto *o = new (std::nothrow) Opaque;
  if (!o)
    return CUBLAS_STATUS_ALLOC_FAILED;
  new (o) T();
  *out = o;
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T, typename Opaque>
cublasStatus_t init(Opaque *o, size_t size) {
  if (!o)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (size < sizeof(Opaque))
    return CUBLAS_STATUS_ALLOC_FAILED;
  new (o) T();
  return CUBLAS_STATUS_SUCCESS;
}

Layout &layoutOf(cublasLtMatrixLayout_t l) {
  return *reinterpret_cast<Layout *>(l);
}
MatmulDesc &descOf(cublasLtMatmulDesc_t d) {
  return *reinterpret_cast<MatmulDesc *>(d);
}

/// A stored matrix of `l` at `p`.
wooly::blas::MatrixRef matrixOf(const Layout &l, const void *p) {
  wooly::blas::MatrixRef r;
  r.base = p;
  if (l.order == CUBLASLT_ORDER_ROW) {
    r.rs = l.ld;
    r.cs = 1;
  } else {
    r.rs = 1;
    r.cs = l.ld;
  }
  r.batchStride = l.batchCount > 1 ? l.batchStride : 0;
  return r;
}

/// The product a descriptor describes on four layouts, and the types it
/// runs with.
struct Plan {
  GemmShape shape;
  cudaDataType ab, cd, scale;
  cublasComputeType_t compute;
};

/// Checks the product `d` describes on these layouts as cuBLASLt does and
/// fills `p`. Otherwise `why` says what is wrong (CUBLAS_STATUS_INVALID_VALUE:
/// a sentence) or what is not implemented (CUBLAS_STATUS_NOT_SUPPORTED: "a
/// product with" what).
cublasStatus_t plan(const MatmulDesc &d, const Layout &a, const Layout &b,
                    const Layout &c, const Layout &dl, Plan &p,
                    std::string &why) {
  auto bad = [&](std::string w, cublasStatus_t s) {
    why = std::move(w);
    return s;
  };
  for (const Layout *l : {&a, &b, &c, &dl}) {
    if (l->order != CUBLASLT_ORDER_COL && l->order != CUBLASLT_ORDER_ROW)
      return bad("a layout order other than column- or row-major",
                 CUBLAS_STATUS_NOT_SUPPORTED);
    uint64_t inner = l->order == CUBLASLT_ORDER_ROW ? l->cols : l->rows;
    if (l->ld < 1 || uint64_t(l->ld) < inner || l->batchCount < 1)
      return bad("a layout's leading dimension is less than its rows (its "
                 "columns, row-major), or its batch count is below 1",
                 CUBLAS_STATUS_INVALID_VALUE);
  }
  auto validOp = [](int32_t op) {
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
  };
  if (!validOp(d.transA) || !validOp(d.transB))
    return bad("TRANSA and TRANSB must be CUBLAS_OP_N, _T or _C",
               CUBLAS_STATUS_INVALID_VALUE);
  if (d.transC != CUBLAS_OP_N)
    return bad("a transposed C", CUBLAS_STATUS_NOT_SUPPORTED);
  bool ta = d.transA != CUBLAS_OP_N, tb = d.transB != CUBLAS_OP_N;
  uint64_t m = dl.rows, n = dl.cols;
  uint64_t k = ta ? a.rows : a.cols;
  if ((ta ? a.cols : a.rows) != m || (tb ? b.rows : b.cols) != n ||
      (tb ? b.cols : b.rows) != k || c.rows != m || c.cols != n)
    return bad("the layouts' shapes do not make op(A) m x k, op(B) k x n, "
               "C and D m x n",
               CUBLAS_STATUS_INVALID_VALUE);
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
    return bad("matrices of 2^31 or more rows or columns",
               CUBLAS_STATUS_NOT_SUPPORTED);
  int batch = dl.batchCount;
  for (const Layout *l : {&a, &b, &c})
    if (l->batchCount != batch)
      return bad("every layout must have D's batch count",
                 CUBLAS_STATUS_INVALID_VALUE);
  if (d.pointerMode != CUBLASLT_POINTER_MODE_HOST &&
      d.pointerMode != CUBLASLT_POINTER_MODE_DEVICE)
    return bad("a vector alpha pointer mode", CUBLAS_STATUS_NOT_SUPPORTED);

  GemmShape &s = p.shape;
  s = GemmShape{};
  s.transA = ta;
  s.transB = tb;
  s.m = int(m);
  s.n = int(n);
  s.k = int(k);
  s.batch = batch;
  s.scalarsOnDevice = d.pointerMode == CUBLASLT_POINTER_MODE_DEVICE;
  p.ab = cudaDataType(a.type);
  p.cd = cudaDataType(dl.type);
  p.compute = cublasComputeType_t(d.computeType);
  p.scale = cudaDataType(d.scaleType);
  if (a.type != b.type || c.type != dl.type)
    return bad("A and B of different types, or C and D of different types",
               CUBLAS_STATUS_NOT_SUPPORTED);

  Epilogue &e = s.epilogue;
  uint32_t ep = d.epilogue;
  bool bias = false, aux = false;
  switch (ep) {
  case CUBLASLT_EPILOGUE_DEFAULT:
    break;
  case CUBLASLT_EPILOGUE_RELU:
  case CUBLASLT_EPILOGUE_RELU_BIAS:
    e.act = Epilogue::Relu;
    bias = ep == CUBLASLT_EPILOGUE_RELU_BIAS;
    break;
  case CUBLASLT_EPILOGUE_BIAS:
    bias = true;
    break;
  case CUBLASLT_EPILOGUE_GELU:
  case CUBLASLT_EPILOGUE_GELU_AUX:
  case CUBLASLT_EPILOGUE_GELU_BIAS:
  case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
    e.act = Epilogue::Gelu;
    bias = ep & CUBLASLT_EPILOGUE_BIAS;
    aux = ep & 128;
    break;
  case CUBLASLT_EPILOGUE_DGELU:
    e.act = Epilogue::GeluGradient;
    aux = true;
    break;
  case CUBLASLT_EPILOGUE_BGRADA:
  case CUBLASLT_EPILOGUE_BGRADB:
    if (!d.bias)
      return bad("a bias gradient epilogue needs the bias pointer",
                 CUBLAS_STATUS_INVALID_VALUE);
    if (d.biasType != -1 && d.biasType != dl.type)
      return bad("a bias gradient of a type other than C's",
                 CUBLAS_STATUS_NOT_SUPPORTED);
    (ep == CUBLASLT_EPILOGUE_BGRADA ? e.gradA : e.gradB) =
        const_cast<void *>(d.bias);
    e.biasBatchStride = d.biasBatchStride;
    break;
  default:
    return bad("the epilogue " + std::to_string(ep) +
                   " (the ReLU bit-mask ones, DRELU, DRELU_BGRAD and "
                   "DGELU_BGRAD are not implemented)",
               CUBLAS_STATUS_NOT_SUPPORTED);
  }
  if (bias) {
    if (!d.bias)
      return bad("a bias epilogue needs the bias pointer",
                 CUBLAS_STATUS_INVALID_VALUE);
    if (d.biasType != -1 && d.biasType != dl.type && d.biasType != CUDA_R_32F)
      return bad("a bias of a type other than D's or float",
                 CUBLAS_STATUS_NOT_SUPPORTED);
    e.bias = d.bias;
    e.biasFloat = d.biasType == CUDA_R_32F && dl.type != CUDA_R_32F;
    e.biasBatchStride = d.biasBatchStride;
  }
  if (aux) {
    if (!d.aux || d.auxLd < int64_t(m))
      return bad("a GELU epilogue with an auxiliary matrix needs its pointer "
                 "and a leading dimension of at least D's rows",
                 CUBLAS_STATUS_INVALID_VALUE);
    if (d.auxType != -1 && d.auxType != dl.type)
      return bad("an auxiliary matrix of a type other than D's",
                 CUBLAS_STATUS_NOT_SUPPORTED);
    if (dl.order != CUBLASLT_ORDER_COL)
      return bad("an auxiliary matrix beside a row-major D",
                 CUBLAS_STATUS_NOT_SUPPORTED);
    e.aux = d.aux;
    e.auxLd = d.auxLd;
    e.auxBatchStride = d.auxBatchStride;
  }
  if (!wooly::blas::gemmKernelFor(p.ab, p.cd, p.compute, p.scale))
    return bad(std::string("A and B of type ") + wooly::blas::typeName(p.ab) +
                   ", C and D of type " + wooly::blas::typeName(p.cd) +
                   ", compute type " + std::to_string(p.compute) +
                   " and scale type " + wooly::blas::typeName(p.scale) +
                   " (implemented: the real types half, bfloat16, float, "
                   "double, int8 -> int32)",
               CUBLAS_STATUS_NOT_SUPPORTED);
  return CUBLAS_STATUS_SUCCESS;
}

/// Says what `plan` found: once per kind of product not implemented, every
/// time for an invalid one (a bug of the caller's).
void sayWhy(const char *function, cublasStatus_t status,
            const std::string &why) {
  if (status == CUBLAS_STATUS_NOT_SUPPORTED)
    logUnsupportedOnce(
        (std::string(function) + " of a product with " + why).c_str());
  else
    wooly::capture::log(1, "%s: %s", function, why.c_str());
}

} // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  if (!handle)
    return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new (std::nothrow) cublasLtContext;
  return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasLtGetStatusName(cublasStatus_t status) {
  return wooly::blas::statusName(status);
}

const char *cublasLtGetStatusString(cublasStatus_t status) {
  return wooly::blas::statusString(status);
}

size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

size_t cublasLtGetCudartVersion(void) { return CUDART_VERSION; }

cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int *value) {
  return wooly::blas::getProperty(type, value);
}

// Matrix layouts.

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout,
                                          cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (cublasStatus_t s = create<Layout>(matLayout))
    return s;
  Layout &l = layoutOf(*matLayout);
  l.type = type;
  l.rows = rows;
  l.cols = cols;
  l.ld = ld;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout, size_t size,
                                  cudaDataType type, uint64_t rows,
                                  uint64_t cols, int64_t ld) {
  if (cublasStatus_t s = init<Layout>(matLayout, size))
    return s;
  Layout &l = layoutOf(matLayout);
  l.type = type;
  l.rows = rows;
  l.cols = cols;
  l.ld = ld;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  delete matLayout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                 cublasLtMatrixLayoutAttribute_t attr,
                                 const void *buf, size_t sizeInBytes) {
  return setAttribute("cublasLtMatrixLayoutSetAttribute", layoutFields,
                      matLayout, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(
    cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
    void *buf, size_t sizeInBytes, size_t *sizeWritten) {
  return getAttribute(layoutFields, matLayout, attr, buf, sizeInBytes,
                      sizeWritten);
}

// Matmul descriptors.

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                        cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
  if (cublasStatus_t s = create<MatmulDesc>(matmulDesc))
    return s;
  descOf(*matmulDesc).computeType = computeType;
  descOf(*matmulDesc).scaleType = scaleType;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc,
                                               size_t size,
                                               cublasComputeType_t computeType,
                                               cudaDataType_t scaleType) {
  if (cublasStatus_t s = init<MatmulDesc>(matmulDesc, size))
    return s;
  descOf(matmulDesc).computeType = computeType;
  descOf(matmulDesc).scaleType = scaleType;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  delete matmulDesc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                               cublasLtMatmulDescAttributes_t attr,
                               const void *buf, size_t sizeInBytes) {
  return setAttribute("cublasLtMatmulDescSetAttribute", descFields, matmulDesc,
                      attr, buf, sizeInBytes);
}

cublasStatus_t
cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
                               cublasLtMatmulDescAttributes_t attr, void *buf,
                               size_t sizeInBytes, size_t *sizeWritten) {
  return getAttribute(descFields, matmulDesc, attr, buf, sizeInBytes,
                      sizeWritten);
}

// Preferences.

cublasStatus_t
cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  return create<Preference>(pref);
}

cublasStatus_t
cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref,
                                      size_t size) {
  return init<Preference>(pref, size);
}

cublasStatus_t
cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                     cublasLtMatmulPreferenceAttributes_t attr,
                                     const void *buf, size_t sizeInBytes) {
  return setAttribute("cublasLtMatmulPreferenceSetAttribute", preferenceFields,
                      pref, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
    void *buf, size_t sizeInBytes, size_t *sizeWritten) {
  return getAttribute(preferenceFields, pref, attr, buf, sizeInBytes,
                      sizeWritten);
}

// The heuristic offers the one algorithm there is (no workspace), where
// cublasLtMatmul can run the product.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t operationDesc,
    cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
    cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
    int *returnAlgoCount) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!operationDesc || !Adesc || !Bdesc || !Cdesc || !Ddesc ||
      requestedAlgoCount <= 0 || !heuristicResultsArray || !returnAlgoCount)
    return CUBLAS_STATUS_INVALID_VALUE;
  *returnAlgoCount = 0;
  Plan p;
  std::string why;
  if (cublasStatus_t s =
          plan(descOf(operationDesc), layoutOf(Adesc), layoutOf(Bdesc),
               layoutOf(Cdesc), layoutOf(Ddesc), p, why)) {
    sayWhy("cublasLtMatmulAlgoGetHeuristic", s, why);
    return s;
  }
  cublasLtMatmulHeuristicResult_t &r = heuristicResultsArray[0];
  std::memset(&r, 0, sizeof r);
  r.workspaceSize = 0;
  r.state = CUBLAS_STATUS_SUCCESS;
  r.wavesCount = 1.0f;
  *returnAlgoCount = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t computeDesc,
               const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
               const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
               const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
               cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *,
               void *, size_t, cudaStream_t stream) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!computeDesc || !Adesc || !Bdesc || !Cdesc || !Ddesc || !alpha || !beta)
    return CUBLAS_STATUS_INVALID_VALUE;
  Plan p;
  std::string why;
  const Layout &a = layoutOf(Adesc), &b = layoutOf(Bdesc), &c = layoutOf(Cdesc),
               &d = layoutOf(Ddesc);
  if (cublasStatus_t s = plan(descOf(computeDesc), a, b, c, d, p, why)) {
    sayWhy("cublasLtMatmul", s, why);
    return s;
  }
  p.shape.A = matrixOf(a, A);
  p.shape.B = matrixOf(b, B);
  p.shape.C = matrixOf(c, C);
  p.shape.D = matrixOf(d, D);
  return wooly::blas::runGemm("cublasLtMatmul", p.shape, alpha, beta, p.ab,
                              p.ab, p.cd, p.cd, p.compute, p.scale, stream);
}

} // extern "C"
