// Kernels whose parameters exceed 4 KiB: structs passed by value (a lookup
// table, polynomial coefficients), as CUDA 12.1+ allows on sm_70 and later
// (up to 32,764 bytes of parameters). Both also index their struct with
// run-time indices (the PTX takes the parameter's address).

// A lookup table of 2048 floats and its used length: 8196 bytes.
struct Lut {
  float v[2048];
  int n;
};

// out[i] = 2 * lut.v[idx[i] & 2047] + lut.v[i % lut.n]   (lut.n in [1, 2048])
extern "C" __global__ void lut_apply(Lut lut, const int* idx, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * lut.v[idx[i] & 2047] + lut.v[i % lut.n];
}

// 4090 double coefficients: 32,720 bytes, with the other parameters 32,748
// bytes, near the limit of 32,764.
struct Coeffs {
  double c[4090];
};

// y[i] = c[0] + c[1] x + ... + c[deg] x^deg by Horner's rule (one fma per
// step: acc = fma(acc, x, c[k]) from k = deg - 1 down to 0, acc = c[deg]);
// deg in [0, 4089].
extern "C" __global__ void poly_eval(Coeffs p, int deg, const double* x,
                                     double* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = x[i];
  double acc = p.c[deg];
  for (int k = deg - 1; k >= 0; --k) acc = fma(acc, v, p.c[k]);
  y[i] = acc;
}
