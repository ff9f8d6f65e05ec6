// Double-precision kernels. Elementwise ones are deterministic; dot_f64 uses
// atomicAdd on double and is ORDER-DEPENDENT in rounding.

// y[i] = a * x[i] + y[i]
extern "C" __global__ void daxpy(int n, double a, const double* x, double* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// *result += sum_i x[i]*y[i]; per-thread products, warp shuffle sum, one atomicAdd per warp
// (blockDim.x must be a multiple of 32)
extern "C" __global__ void dot_f64(int n, const double* x, const double* y, double* result) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double v = (i < n) ? x[i] * y[i] : 0.0;
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(result, v);
}

// out[4*i + k]: k=0 sqrt(|x|), k=1 fma(x, y, 1.0), k=2 x / y (y != 0 expected), k=3 1/sqrt(|x|+1)
extern "C" __global__ void f64_math(int n, const double* x, const double* y, double* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = x[i], b = y[i];
  out[4 * i + 0] = sqrt(fabs(a));
  out[4 * i + 1] = fma(a, b, 1.0);
  out[4 * i + 2] = a / b;
  out[4 * i + 3] = rsqrt(fabs(a) + 1.0);
}

// Conversions: d[i] = (double)f[i] * 3; f_out[i] = (float)d[i]; l[i] = (long long)d[i]
extern "C" __global__ void f64_convert(int n, const float* f, double* d, float* f_out,
                                       long long* l) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = (double)f[i] * 3.0;
  d[i] = v;
  f_out[i] = (float)v;
  l[i] = (long long)v;
}
