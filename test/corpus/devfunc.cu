// Calls to non-inlined device functions: several scalar args, struct return, and a
// non-recursive call chain (kernel -> stats -> clampf / mix3). Deterministic.

struct Stats {
  float lo;
  float hi;
  int count;
};

// min(max(v, lo), hi)
__device__ __noinline__ float clampf(float v, float lo, float hi) {
  return fminf(fmaxf(v, lo), hi);
}

// a*wa + b*wb + c*(1 - wa - wb), mixing float, int and double args
__device__ __noinline__ float mix3(float a, float b, int c, double wa, float wb) {
  return (float)(a * wa) + b * wb + (float)c * (1.0f - (float)wa - wb);
}

// Struct-returning helper: min/max of 3 values clamped to [-10, 10], count of positives
__device__ __noinline__ Stats stats3(float a, float b, float c) {
  Stats s;
  s.lo = clampf(fminf(a, fminf(b, c)), -10.0f, 10.0f);
  s.hi = clampf(fmaxf(a, fmaxf(b, c)), -10.0f, 10.0f);
  s.count = (a > 0.0f) + (b > 0.0f) + (c > 0.0f);
  return s;
}

// unsigned 64-bit hash of (i, seed): one multiply/xorshift round
__device__ __noinline__ unsigned long long hash64(unsigned long long i, unsigned seed) {
  unsigned long long h = (i ^ seed) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

// out[3*i..3*i+2] = (stats.lo, stats.hi, mix3(...)) of x[i], x[i+1], x[i+2] (clamped index);
// cnt[i] = stats.count; h[i] = hash64(i, 42)
extern "C" __global__ void devfunc_chain(int n, const float* x, float* out, int* cnt,
                                         unsigned long long* h) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = x[i], b = x[min(i + 1, n - 1)], c = x[min(i + 2, n - 1)];
  Stats s = stats3(a, b, c);
  out[3 * i + 0] = s.lo;
  out[3 * i + 1] = s.hi;
  out[3 * i + 2] = mix3(a, b, s.count, 0.25, 0.5f);
  cnt[i] = s.count;
  h[i] = hash64((unsigned long long)i, 42u);
}
