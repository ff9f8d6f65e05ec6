// cuBLASLt as llm.c uses it (linked with -lcublasLt; on Wooly the drop-in
// libcublasLt.so.13): bfloat16 matrices computed in float, descriptors and
// layouts set attribute by attribute, the heuristic asked for an algorithm,
// then cublasLtMatmul with fused epilogues - bias + GELU keeping GELU's
// input (the forward pass of a transformer's MLP), the GELU gradient and
// the bias gradient (the backward pass), accumulation into D - plus
// row-major strided batches in float (attention's products). Inputs are
// small integers, so every product and the pre-GELU values are exact and
// are compared exactly with a C++ reference; GELU's outputs, which go
// through tanh, within 1%. Then the errors: attribute sizes, an epilogue
// and an fp8 scale Wooly does not implement.
#define APP_NAME "cublaslt"
#include "CudaApp.h"

#include <cublasLt.h>
#include <cuda_bf16.h>

#include <cmath>
#include <vector>

#define CHECK_LT(call)                                                         \
  do {                                                                         \
    cublasStatus_t s_ = (call);                                                \
    EXPECT(s_ == CUBLAS_STATUS_SUCCESS, "%s:%d: %s returned %s",               \
           app::baseName(__FILE__), __LINE__, #call,                           \
           cublasLtGetStatusName(s_));                                         \
  } while (0)

namespace {

using app::toDevice;
using app::toHost;

using bf16 = __nv_bfloat16;

unsigned seed = 99;
int small() {
  seed = seed * 1103515245u + 12345u;
  return int((seed >> 16) % 7) - 3;
}

template <typename T> std::vector<T> randomInts(size_t n) {
  std::vector<T> v(n);
  for (T &x : v)
    x = T(float(small()));
  return v;
}

float geluRef(float x) {
  const float c = 0.7978845608028654f;
  return 0.5f * x * (1.0f + std::tanh(c * (x + 0.044715f * x * x * x)));
}
float geluGradRef(float x) {
  const float c = 0.7978845608028654f;
  float t = std::tanh(c * (x + 0.044715f * x * x * x));
  return 0.5f * (1 + t) +
         0.5f * x * (1 - t * t) * c * (1 + 3 * 0.044715f * x * x);
}

bool close(float got, float want) {
  return std::fabs(got - want) <= 0.01f * std::fabs(want) + 0.02f;
}

struct Lt {
  cublasLtHandle_t handle;
  void *workspace;
  size_t workspaceBytes = 1 << 20;
};

/// llm.c's matmul_cublaslt, written anew: out (m x n, column-major) =
/// op(a) op(b) [+ bias] [GELU], with the GELU input kept in `aux`, or the
/// backward epilogues.
void matmul(Lt &lt, bf16 *out, const bf16 *a, const bf16 *b, void *bias, int m,
            int n, int k, bool transA, bool transB, bool accumulate, bf16 *aux,
            bool backward) {
  cublasLtMatmulDesc_t desc;
  CHECK_LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t opN = CUBLAS_OP_N, opT = CUBLAS_OP_T;
  CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                          transA ? &opT : &opN, sizeof opN));
  CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                          transB ? &opT : &opN, sizeof opN));
  cublasLtMatrixLayout_t la, lb, lc, ld;
  CHECK_LT(transA ? cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, m, k)
                  : cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, m, k, m));
  CHECK_LT(transB ? cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, n, k, n)
                  : cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, n, k));
  CHECK_LT(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, m, n, m));
  CHECK_LT(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, m, n, m));
  cublasLtMatmulPreference_t pref;
  CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
  CHECK_LT(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &lt.workspaceBytes,
      sizeof lt.workspaceBytes));
  cublasLtEpilogue_t epilogue;
  if (aux) {
    int64_t auxLd = m;
    CHECK_LT(cublasLtMatmulDescSetAttribute(
        desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd, sizeof auxLd));
    CHECK_LT(cublasLtMatmulDescSetAttribute(
        desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux));
    epilogue = backward ? CUBLASLT_EPILOGUE_DGELU
               : bias   ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                        : CUBLASLT_EPILOGUE_GELU_AUX;
  } else if (bias) {
    epilogue = backward ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_BIAS;
  } else {
    epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  }
  CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                          &epilogue, sizeof epilogue));
  if (bias) {
    cudaDataType_t t = CUDA_R_16BF;
    CHECK_LT(cublasLtMatmulDescSetAttribute(
        desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &t, sizeof t));
    CHECK_LT(cublasLtMatmulDescSetAttribute(
        desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  }
  cudaDataType_t scaleType = CUDA_R_32F;
  CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE,
                                          &scaleType, sizeof scaleType));
  cublasLtMatmulHeuristicResult_t heuristic;
  int found = 0;
  CHECK_LT(cublasLtMatmulAlgoGetHeuristic(lt.handle, desc, la, lb, lc, ld, pref,
                                          1, &heuristic, &found));
  EXPECT(found == 1, "the heuristic found %d algorithms", found);
  float alpha = 1, beta = accumulate ? 1 : 0;
  CHECK_LT(cublasLtMatmul(lt.handle, desc, &alpha, a, la, b, lb, &beta, out, lc,
                          out, ld, &heuristic.algo, lt.workspace,
                          lt.workspaceBytes, nullptr));
  CHECK_LT(cublasLtMatmulPreferenceDestroy(pref));
  for (cublasLtMatrixLayout_t l : {la, lb, lc, ld})
    CHECK_LT(cublasLtMatrixLayoutDestroy(l));
  CHECK_LT(cublasLtMatmulDescDestroy(desc));
}

/// op(a) op(b) on the host, column-major, in float.
std::vector<float> product(const std::vector<bf16> &a,
                           const std::vector<bf16> &b, int m, int n, int k,
                           bool transA, bool transB) {
  std::vector<float> c(size_t(m) * n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      float s = 0;
      for (int l = 0; l < k; ++l)
        s += float(transA ? a[l + i * k] : a[i + l * m]) *
             float(transB ? b[j + l * n] : b[l + j * k]);
      c[i + j * m] = s;
    }
  return c;
}

void forwardAndBackward(Lt &lt) {
  // A layer of 24 outputs over 16 inputs, 10 tokens: out = W^T x + bias,
  // as llm.c's matmul_forward (transA).
  const int oc = 24, c = 16, tokens = 10;
  auto w = randomInts<bf16>(c * oc), x = randomInts<bf16>(c * tokens),
       bias = randomInts<bf16>(oc);
  bf16 *dw = toDevice(w), *dx = toDevice(x), *dbias = toDevice(bias);
  bf16 *out = toDevice(std::vector<bf16>(oc * tokens, bf16(0.0f)));
  bf16 *preGelu = toDevice(std::vector<bf16>(oc * tokens, bf16(0.0f)));
  matmul(lt, out, dw, dx, dbias, oc, tokens, c, true, false, false, preGelu,
         false);
  auto want = product(w, x, oc, tokens, c, true, false);
  auto gotOut = toHost(out, oc * tokens), gotPre = toHost(preGelu, oc * tokens);
  for (int j = 0; j < tokens; ++j)
    for (int i = 0; i < oc; ++i) {
      float pre = want[i + j * oc] + float(bias[i]);
      EXPECT(float(gotPre[i + j * oc]) == pre,
             "GELU_AUX_BIAS: pre-GELU (%d, %d) is %g, expected %g", i, j,
             float(gotPre[i + j * oc]), pre);
      EXPECT(close(float(gotOut[i + j * oc]), geluRef(pre)),
             "GELU_AUX_BIAS: (%d, %d) is %g, expected %g", i, j,
             float(gotOut[i + j * oc]), geluRef(pre));
    }
  std::printf("cublaslt: forward, bias + GELU with its input kept\n");

  // Backward through the GELU: dinp = W dout (masked by GELU's gradient at
  // the kept input), as llm.c with gelu_fusion.
  auto dout = randomInts<bf16>(oc * tokens);
  bf16 *ddout = toDevice(dout);
  bf16 *dinp = toDevice(std::vector<bf16>(oc * tokens, bf16(0.0f)));
  // W is c x oc stored; W^T... here a square use: dinp (oc x tokens) =
  // op(E) dout with E an oc x oc matrix.
  auto e = randomInts<bf16>(oc * oc);
  bf16 *de = toDevice(e);
  matmul(lt, dinp, de, ddout, nullptr, oc, tokens, oc, false, false, false,
         preGelu, true);
  auto prod = product(e, dout, oc, tokens, oc, false, false);
  auto gotD = toHost(dinp, oc * tokens);
  for (int i = 0; i < oc * tokens; ++i) {
    float want = prod[i] * geluGradRef(float(gotPre[i]));
    EXPECT(close(float(gotD[i]), want), "DGELU: element %d is %g, expected %g",
           i, float(gotD[i]), want);
  }
  std::printf("cublaslt: backward through GELU (DGELU)\n");

  // The weight gradient, accumulated (beta 1), with the bias gradient
  // (BGRADB): dW (c x oc) += x dout^T, dbias = the row sums of dout.
  auto dW0 = randomInts<bf16>(c * oc);
  bf16 *ddW = toDevice(dW0);
  bf16 *ddbias = toDevice(std::vector<bf16>(oc, bf16(0.0f)));
  matmul(lt, ddW, dx, ddout, ddbias, c, oc, tokens, false, true, true, nullptr,
         true);
  auto gradW = product(x, dout, c, oc, tokens, false, true);
  auto gotW = toHost(ddW, c * oc);
  for (int i = 0; i < c * oc; ++i)
    EXPECT(float(gotW[i]) == gradW[i] + float(dW0[i]),
           "accumulated dW: element %d is %g, expected %g", i, float(gotW[i]),
           gradW[i] + float(dW0[i]));
  auto gotB = toHost(ddbias, oc);
  for (int o = 0; o < oc; ++o) {
    float s = 0;
    for (int t = 0; t < tokens; ++t)
      s += float(dout[o + t * oc]);
    EXPECT(float(gotB[o]) == s, "BGRADB: dbias[%d] is %g, expected %g", o,
           float(gotB[o]), s);
  }
  std::printf(
      "cublaslt: weight gradient accumulated, bias gradient (BGRADB)\n");
  for (void *p :
       {(void *)dw, (void *)dx, (void *)dbias, (void *)out, (void *)preGelu,
        (void *)ddout, (void *)dinp, (void *)de, (void *)ddW, (void *)ddbias})
    CHECK(cudaFree(p));
}

void rowMajorBatches(Lt &lt) {
  // Attention's scores: for each of 6 heads, S (T x T) = Q K^T, row-major
  // float, Q and K (T x 8) with a head stride.
  const int heads = 6, t = 9, hs = 8;
  auto q = randomInts<float>(heads * t * hs),
       k = randomInts<float>(heads * t * hs);
  float *dq = toDevice(q), *dk = toDevice(k);
  float *ds = toDevice(std::vector<float>(heads * t * t, 0.0f));
  cublasLtMatmulDesc_t desc;
  CHECK_LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F_FAST_TF32,
                                    CUDA_R_32F));
  cublasOperation_t opT = CUBLAS_OP_T;
  CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                          &opT, sizeof opT));
  cublasLtOrder_t row = CUBLASLT_ORDER_ROW;
  int32_t batch = heads;
  int64_t qkStride = t * hs, sStride = t * t;
  cublasLtMatrixLayout_t lq, lk, ls;
  CHECK_LT(cublasLtMatrixLayoutCreate(&lq, CUDA_R_32F, t, hs, hs));
  CHECK_LT(cublasLtMatrixLayoutCreate(&lk, CUDA_R_32F, t, hs, hs));
  CHECK_LT(cublasLtMatrixLayoutCreate(&ls, CUDA_R_32F, t, t, t));
  for (auto [l, stride] : {std::pair{lq, qkStride}, std::pair{lk, qkStride},
                           std::pair{ls, sStride}}) {
    CHECK_LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER,
                                              &row, sizeof row));
    CHECK_LT(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
    CHECK_LT(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof stride));
  }
  float alpha = 0.5f, beta = 0;
  CHECK_LT(cublasLtMatmul(lt.handle, desc, &alpha, dq, lq, dk, lk, &beta, ds,
                          ls, ds, ls, nullptr, nullptr, 0, nullptr));
  auto got = toHost(ds, heads * t * t);
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < t; ++i)
      for (int j = 0; j < t; ++j) {
        float s = 0;
        for (int l = 0; l < hs; ++l)
          s += q[h * t * hs + i * hs + l] * k[h * t * hs + j * hs + l];
        float g = got[h * t * t + i * t + j];
        EXPECT(g == 0.5f * s, "row-major batch %d: (%d, %d) is %g, expected %g",
               h, i, j, g, 0.5f * s);
      }
  for (cublasLtMatrixLayout_t l : {lq, lk, ls})
    CHECK_LT(cublasLtMatrixLayoutDestroy(l));
  CHECK_LT(cublasLtMatmulDescDestroy(desc));
  for (float *p : {dq, dk, ds})
    CHECK(cudaFree(p));
  std::printf("cublaslt: row-major strided batches (Q K^T per head)\n");
}

void errors(Lt &lt) {
  cublasLtMatmulDesc_t desc;
  CHECK_LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // Attributes read back; sizes checked.
  cublasOperation_t opT = CUBLAS_OP_T, got = CUBLAS_OP_N;
  CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                          &opT, sizeof opT));
  size_t written = 0;
  CHECK_LT(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                          &got, sizeof got, &written));
  EXPECT(got == CUBLAS_OP_T && written == sizeof got, "TRANSA read back");
  int64_t wide = 1;
  cublasStatus_t s = cublasLtMatmulDescSetAttribute(
      desc, CUBLASLT_MATMUL_DESC_TRANSA, &wide, sizeof wide);
  EXPECT(s == CUBLAS_STATUS_INVALID_VALUE, "TRANSA of 8 bytes: %s",
         cublasLtGetStatusName(s));
  // An fp8 scale changes the product: not implemented.
  float *scale = nullptr;
  CHECK(cudaMalloc(&scale, sizeof(float)));
  s = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                     &scale, sizeof scale);
  EXPECT(s == CUBLAS_STATUS_NOT_SUPPORTED, "A scale pointer: %s",
         cublasLtGetStatusName(s));
  // The ReLU bit-mask epilogue: no algorithm.
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_RELU_AUX;
  CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                          &epilogue, sizeof epilogue));
  cublasLtMatrixLayout_t l;
  CHECK_LT(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, 4, 4, 4));
  cublasLtMatmulPreference_t pref;
  CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
  cublasLtMatmulHeuristicResult_t result;
  int found = -1;
  s = cublasLtMatmulAlgoGetHeuristic(lt.handle, desc, l, l, l, l, pref, 1,
                                     &result, &found);
  EXPECT(s == CUBLAS_STATUS_NOT_SUPPORTED && found == 0,
         "RELU_AUX heuristic: %s, %d found", cublasLtGetStatusName(s), found);
  // A transpose that is none of N, T, C: invalid.
  int32_t seven = 7;
  epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                          &epilogue, sizeof epilogue));
  CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                          &seven, sizeof seven));
  s = cublasLtMatmulAlgoGetHeuristic(lt.handle, desc, l, l, l, l, pref, 1,
                                     &result, &found);
  EXPECT(s == CUBLAS_STATUS_INVALID_VALUE && found == 0,
         "TRANSB 7 heuristic: %s, %d found", cublasLtGetStatusName(s), found);
  // A descriptor initialised in too little space.
  cublasLtMatmulDescOpaque_t opaque;
  s = cublasLtMatmulDescInit_internal(&opaque, 16, CUBLAS_COMPUTE_32F,
                                      CUDA_R_32F);
  EXPECT(s == CUBLAS_STATUS_ALLOC_FAILED, "Init in 16 bytes: %s",
         cublasLtGetStatusName(s));
  CHECK_LT(cublasLtMatmulDescInit(&opaque, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CHECK_LT(cublasLtMatmulPreferenceDestroy(pref));
  CHECK_LT(cublasLtMatrixLayoutDestroy(l));
  CHECK_LT(cublasLtMatmulDescDestroy(desc));
  CHECK(cudaFree(scale));
  std::printf("cublaslt: errors: attribute size, fp8 scale, RELU_AUX, "
              "transpose 7, Init in too little space\n");
}

} // namespace

int main() {
  Lt lt;
  CHECK_LT(cublasLtCreate(&lt.handle));
  EXPECT(cublasLtGetVersion() >= 130000, "cublasLtGetVersion: %zu",
         cublasLtGetVersion());
  CHECK(cudaMalloc(&lt.workspace, lt.workspaceBytes));
  forwardAndBackward(lt);
  rowMajorBatches(lt);
  errors(lt);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(lt.workspace));
  CHECK_LT(cublasLtDestroy(lt.handle));
  app::pass();
  return 0;
}
