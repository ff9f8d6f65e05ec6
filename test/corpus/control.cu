// Control flow: loops, nested branches, switch, early return, grid-stride loop. Deterministic.

// Grid-stride loop: out[i] = collatz step count of (in[i] & 0xFFFF) + 1, capped at 1000
extern "C" __global__ void collatz_steps(int n, const unsigned* in, int* out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    unsigned v = (in[i] & 0xFFFFu) + 1u;
    int steps = 0;
    while (v != 1u && steps < 1000) {
      v = (v & 1u) ? 3u * v + 1u : v >> 1;
      ++steps;
    }
    out[i] = steps;
  }
}

// Switch on op[i]: 0..5 -> out[i] = a+b, a-b, a*b, a/b (b!=0 else 0), min, max; 7 -> a&b;
// anything else -> -1
extern "C" __global__ void switch_ops(int n, const int* op, const int* a, const int* b, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;                                   // early return
  int x = a[i], y = b[i], r;
  switch (op[i]) {
    case 0: r = x + y; break;
    case 1: r = x - y; break;
    case 2: r = x * y; break;
    case 3: r = (y != 0) ? x / y : 0; break;
    case 4: r = min(x, y); break;
    case 5: r = max(x, y); break;
    case 7: r = x & y; break;
    default: r = -1; break;
  }
  out[i] = r;
}

// Nested branches: classify (x, y) into quadrant 1..4, axis 5/6, origin 0; out[i] = class
extern "C" __global__ void classify_point(int n, const float* x, const float* y, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float px = x[i], py = y[i];
  int c;
  if (px == 0.0f) {
    c = (py == 0.0f) ? 0 : 6;
  } else if (py == 0.0f) {
    c = 5;
  } else if (px > 0.0f) {
    if (py > 0.0f) c = 1; else c = 4;
  } else {
    if (py > 0.0f) c = 2; else c = 3;
  }
  out[i] = c;
}

// Nested loops with break/continue: out[i] = sum over j<in[i]%64, k<=j, skipping k%3==0,
// stopping the inner loop when k*j > 500
extern "C" __global__ void nested_loops(int n, const int* in, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int m = ((in[i] % 64) + 64) % 64, acc = 0;
  for (int j = 0; j < m; ++j) {
    for (int k = 0; k <= j; ++k) {
      if (k % 3 == 0) continue;
      if (k * j > 500) break;
      acc += k ^ j;
    }
  }
  out[i] = acc;
}
