// Training code in the usual shape: a two-layer perceptron (ReLU hidden
// layer, mean squared error) fitted by SGD to a synthetic regression task,
// with cuBLAS for every matrix product (forward and both backward products,
// row-major arrays through the column-major API, transposes on either side)
// and for the update (saxpy) and the loss (nrm2), and kernels of its own
// for the bias, the ReLU and the gradients' column sums. A C++ version of
// the same steps runs beside it; each step's loss must agree to 1e-4
// (relative) and the loss must fall by two thirds.
#define APP_NAME "sample_mlp"
#include "../CudaApp.h"

#include <cublas_v2.h>

#include <cmath>
#include <vector>

#define CHECK_BLAS(call)                                                       \
  do {                                                                         \
    cublasStatus_t s_ = (call);                                                \
    EXPECT(s_ == CUBLAS_STATUS_SUCCESS, "%s:%d: %s returned %s",               \
           app::baseName(__FILE__), __LINE__, #call, cublasGetStatusName(s_)); \
  } while (0)

namespace {

constexpr int kN = 256, kIn = 24, kHidden = 48, kOut = 8, kSteps = 40;
constexpr float kRate = 0.05f;

// Column-major views of row-major arrays: a row-major R x C matrix is a
// column-major C x R one, so every product below is the transposed one.

/// h[n][j] = max(0, h[n][j] + b[j]); keeps the mask of active units.
__global__ void biasRelu(float *h, const float *b, float *mask, int rows,
                         int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * cols)
    return;
  float v = h[i] + b[i % cols];
  mask[i] = v > 0 ? 1.0f : 0.0f;
  h[i] = v > 0 ? v : 0.0f;
}

/// y += b (per column); d = y - t (the residual); the gradient of the mean
/// squared error is 2 d / N.
__global__ void biasResidual(float *y, const float *b, const float *t, float *d,
                             int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * cols)
    return;
  y[i] += b[i % cols];
  d[i] = y[i] - t[i];
}

__global__ void scaleMask(float *g, const float *mask, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    g[i] *= mask ? s * mask[i] : s;
}

/// sums[j] = sum over rows of g[row][j], in row order.
__global__ void columnSums(const float *g, float *sums, int rows, int cols) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= cols)
    return;
  float s = 0;
  for (int r = 0; r < rows; ++r)
    s += g[r * cols + j];
  sums[j] = s;
}

struct Params {
  std::vector<float> w1, b1, w2, b2;
};

/// The same training step in C++ (row-major): returns the loss before the
/// update.
float cpuStep(Params &p, const std::vector<float> &x,
              const std::vector<float> &t) {
  std::vector<float> h(kN * kHidden), y(kN * kOut), dy(kN * kOut),
      dh(kN * kHidden);
  for (int n = 0; n < kN; ++n)
    for (int j = 0; j < kHidden; ++j) {
      float s = 0;
      for (int i = 0; i < kIn; ++i)
        s += x[n * kIn + i] * p.w1[i * kHidden + j];
      s += p.b1[j];
      h[n * kHidden + j] = s > 0 ? s : 0;
    }
  double loss = 0;
  for (int n = 0; n < kN; ++n)
    for (int o = 0; o < kOut; ++o) {
      float s = 0;
      for (int j = 0; j < kHidden; ++j)
        s += h[n * kHidden + j] * p.w2[j * kOut + o];
      s += p.b2[o];
      float d = s - t[n * kOut + o];
      loss += double(d) * d;
      dy[n * kOut + o] = d * (2.0f / kN);
    }
  for (int n = 0; n < kN; ++n)
    for (int j = 0; j < kHidden; ++j) {
      float s = 0;
      for (int o = 0; o < kOut; ++o)
        s += dy[n * kOut + o] * p.w2[j * kOut + o];
      dh[n * kHidden + j] = h[n * kHidden + j] > 0 ? s : 0;
    }
  for (int j = 0; j < kHidden; ++j)
    for (int o = 0; o < kOut; ++o) {
      float s = 0;
      for (int n = 0; n < kN; ++n)
        s += h[n * kHidden + j] * dy[n * kOut + o];
      p.w2[j * kOut + o] -= kRate * s;
    }
  for (int i = 0; i < kIn; ++i)
    for (int j = 0; j < kHidden; ++j) {
      float s = 0;
      for (int n = 0; n < kN; ++n)
        s += x[n * kIn + i] * dh[n * kHidden + j];
      p.w1[i * kHidden + j] -= kRate * s;
    }
  for (int o = 0; o < kOut; ++o) {
    float s = 0;
    for (int n = 0; n < kN; ++n)
      s += dy[n * kOut + o];
    p.b2[o] -= kRate * s;
  }
  for (int j = 0; j < kHidden; ++j) {
    float s = 0;
    for (int n = 0; n < kN; ++n)
      s += dh[n * kHidden + j];
    p.b1[j] -= kRate * s;
  }
  return float(loss / kN);
}

unsigned seed = 7;
float uniform() {
  seed = seed * 1664525u + 1013904223u;
  return float(seed >> 8) / float(1u << 24) * 2.0f - 1.0f;
}

float *upload(const std::vector<float> &v) {
  float *d = nullptr;
  CHECK(cudaMalloc(&d, v.size() * sizeof(float)));
  CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(float),
                   cudaMemcpyHostToDevice));
  return d;
}

float *zeros(size_t n) {
  float *d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaMemset(d, 0, n * sizeof(float)));
  return d;
}

unsigned blocks(int n) { return unsigned((n + 255) / 256); }

} // namespace

int main() {
  // Targets from a fixed random two-layer network of tanh units.
  std::vector<float> x(kN * kIn), t(kN * kOut), teacher(kIn * kOut);
  for (float &v : x)
    v = uniform();
  for (float &v : teacher)
    v = uniform();
  for (int n = 0; n < kN; ++n)
    for (int o = 0; o < kOut; ++o) {
      float s = 0;
      for (int i = 0; i < kIn; ++i)
        s += x[n * kIn + i] * teacher[i * kOut + o];
      t[n * kOut + o] = std::tanh(s);
    }
  Params cpu;
  cpu.w1.resize(kIn * kHidden);
  cpu.w2.resize(kHidden * kOut);
  for (float &v : cpu.w1)
    v = uniform() * 0.4f;
  for (float &v : cpu.w2)
    v = uniform() * 0.4f;
  cpu.b1.assign(kHidden, 0.01f);
  cpu.b2.assign(kOut, 0.0f);

  float *dx = upload(x), *dt = upload(t);
  float *w1 = upload(cpu.w1), *b1 = upload(cpu.b1), *w2 = upload(cpu.w2),
        *b2 = upload(cpu.b2);
  float *h = zeros(kN * kHidden), *mask = zeros(kN * kHidden),
        *y = zeros(kN * kOut), *dy = zeros(kN * kOut),
        *dh = zeros(kN * kHidden), *gw1 = zeros(kIn * kHidden),
        *gw2 = zeros(kHidden * kOut), *gb1 = zeros(kHidden), *gb2 = zeros(kOut);

  cublasHandle_t blas;
  CHECK_BLAS(cublasCreate(&blas));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK_BLAS(cublasSetStream(blas, stream));
  const float one = 1, zero = 0, step = -kRate;
  float first = 0, last = 0;
  for (int s = 0; s < kSteps; ++s) {
    // Forward. Row-major h = x w1 is column-major h^T = w1^T x^T.
    CHECK_BLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kHidden, kN, kIn,
                           &one, w1, kHidden, dx, kIn, &zero, h, kHidden));
    biasRelu<<<blocks(kN * kHidden), 256, 0, stream>>>(h, b1, mask, kN,
                                                       kHidden);
    CHECK_BLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kOut, kN, kHidden,
                           &one, w2, kOut, h, kHidden, &zero, y, kOut));
    biasResidual<<<blocks(kN * kOut), 256, 0, stream>>>(y, b2, dt, dy, kN,
                                                        kOut);
    float norm = 0;
    CHECK_BLAS(cublasSnrm2(blas, kN * kOut, dy, 1, &norm));
    float loss = norm * norm / kN;
    scaleMask<<<blocks(kN * kOut), 256, 0, stream>>>(dy, nullptr, 2.0f / kN,
                                                     kN * kOut);
    // Backward: dh = dy w2^T (masked), dw2 = h^T dy, dw1 = x^T dh.
    CHECK_BLAS(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, kHidden, kN, kOut,
                           &one, w2, kOut, dy, kOut, &zero, dh, kHidden));
    scaleMask<<<blocks(kN * kHidden), 256, 0, stream>>>(dh, mask, 1.0f,
                                                        kN * kHidden);
    CHECK_BLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, kOut, kHidden, kN,
                           &one, dy, kOut, h, kHidden, &zero, gw2, kOut));
    CHECK_BLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, kHidden, kIn, kN,
                           &one, dh, kHidden, dx, kIn, &zero, gw1, kHidden));
    columnSums<<<1, 256, 0, stream>>>(dy, gb2, kN, kOut);
    columnSums<<<1, 256, 0, stream>>>(dh, gb1, kN, kHidden);
    // SGD.
    CHECK_BLAS(cublasSaxpy(blas, kIn * kHidden, &step, gw1, 1, w1, 1));
    CHECK_BLAS(cublasSaxpy(blas, kHidden * kOut, &step, gw2, 1, w2, 1));
    CHECK_BLAS(cublasSaxpy(blas, kHidden, &step, gb1, 1, b1, 1));
    CHECK_BLAS(cublasSaxpy(blas, kOut, &step, gb2, 1, b2, 1));
    CHECK(cudaGetLastError());

    float want = cpuStep(cpu, x, t);
    EXPECT(std::fabs(loss - want) <= 1e-4f * want,
           "step %d: loss %.7g, the C++ version's %.7g", s, loss, want);
    if (s == 0)
      first = loss;
    last = loss;
  }
  CHECK(cudaStreamSynchronize(stream));
  std::vector<float> w2now(kHidden * kOut);
  CHECK(cudaMemcpy(w2now.data(), w2, w2now.size() * sizeof(float),
                   cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < w2now.size(); ++i)
    EXPECT(std::fabs(w2now[i] - cpu.w2[i]) <= 1e-4f,
           "w2[%zu] after training: %g, the C++ version's %g", i, w2now[i],
           cpu.w2[i]);
  EXPECT(last < first / 3, "the loss fell from %g to %g only", first, last);
  std::printf("sample_mlp: %d SGD steps with cuBLAS, loss %.4f -> %.4f, each "
              "step within 1e-4 of C++\n",
              kSteps, first, last);
  CHECK_BLAS(cublasDestroy(blas));
  CHECK(cudaStreamDestroy(stream));
  for (float *p :
       {dx, dt, w1, b1, w2, b2, h, mask, y, dy, dh, gw1, gw2, gb1, gb2})
    CHECK(cudaFree(p));
  app::pass();
  return 0;
}
