// Elementwise kernels: saxpy, vector add, unary float math, integer ops.
// All results are deterministic per element (no cross-thread interaction).

// y[i] = a * x[i] + y[i]
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x,
                                 float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// c[i] = a[i] + b[i]
extern "C" __global__ void vec_add(int n, const float* a, const float* b, float* c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// out[8*i + k] = k-th unary math function of x[i] (sin, cos, exp, log|x|, sqrt|x|, fabs, fmin, fmax)
extern "C" __global__ void unary_math(int n, const float* x, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float* o = out + 8 * i;
  o[0] = sinf(v);
  o[1] = cosf(v);
  o[2] = expf(v);
  o[3] = logf(fabsf(v) + 1.0f);
  o[4] = sqrtf(fabsf(v));
  o[5] = fabsf(v);
  o[6] = fminf(v, 0.5f);
  o[7] = fmaxf(v, -0.5f);
}

// Integer ops on int and unsigned: shifts (arith/logical), mul, div, rem, bitwise.
// out[8*i + k] holds the k-th result; divisors are forced non-zero.
extern "C" __global__ void int_ops(int n, const int* a, const int* b, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i];
  int y = b[i];
  int d = (y == 0) ? 1 : y;
  unsigned ux = (unsigned)x;
  unsigned ud = (unsigned)d;
  int s = y & 31;
  int* o = out + 8 * i;
  o[0] = x << s;                 // shl
  o[1] = x >> s;                 // arithmetic shift right
  o[2] = (int)(ux >> s);         // logical shift right
  o[3] = x * y;                  // mul.lo
  o[4] = x / d;                  // signed div
  o[5] = x % d;                  // signed rem
  o[6] = (int)(ux / ud);         // unsigned div
  o[7] = (int)((ux % ud) ^ (ux & ~ud) ^ (ux | 7u));  // unsigned rem + bitwise
}
