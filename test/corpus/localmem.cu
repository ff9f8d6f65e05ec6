// Per-thread local arrays indexed dynamically (forces .local memory). Deterministic.

#define KMAX 16

// Each thread bubble-sorts its own segment in a local array. len = min(max(k, 0), 16) is a
// runtime value and the loops are kept rolled (#pragma unroll 1), so a[] lives in .local memory:
// out[k*i .. k*i+len-1] = sorted ascending(in[k*i .. k*i+len-1])
extern "C" __global__ void bubble_sort_per_thread(int nthreads, int k, const int* in, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nthreads) return;
  int len = min(max(k, 0), KMAX);
  int a[KMAX];
#pragma unroll 1
  for (int j = 0; j < len; ++j) a[j] = in[k * i + j];
#pragma unroll 1
  for (int p = 0; p < len - 1; ++p)
#pragma unroll 1
    for (int q = 0; q < len - 1 - p; ++q)
      if (a[q] > a[q + 1]) {
        int t = a[q];
        a[q] = a[q + 1];
        a[q + 1] = t;
      }
#pragma unroll 1
  for (int j = 0; j < len; ++j) out[k * i + j] = a[j];
}

// Local lookup table indexed by data: out[i] = table[idx[i] & 15] where table[j] = j*j + i
extern "C" __global__ void local_lut(int n, const int* idx, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int table[16];
  for (int j = 0; j < 16; ++j) table[j] = j * j + i;
  out[i] = table[idx[i] & 15];
}
