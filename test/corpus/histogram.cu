// 256-bin histogram: per-block privatized histogram in shared memory (shared atomics),
// then merged into the global histogram (global atomics). Deterministic (integer counts).

#define NBINS 256

// hist[b] += number of i with data[i] == b  (hist must be zeroed by the host;
// any blockDim; grid-stride loop over the input)
extern "C" __global__ void histogram256(int n, const unsigned char* data, unsigned* hist) {
  __shared__ unsigned local[NBINS];
  for (int b = threadIdx.x; b < NBINS; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < NBINS; b += blockDim.x) {
    unsigned c = local[b];
    if (c) atomicAdd(&hist[b], c);
  }
}

// hist[min(nbins-1, max(0, (int)((x - lo) * nbins / (hi - lo))))] += 1 for float input, global atomics only
extern "C" __global__ void histogram_float(int n, const float* x, float lo, float hi, int nbins,
                                           int* hist) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int b = (int)((x[i] - lo) * nbins / (hi - lo));
  b = min(nbins - 1, max(0, b));
  atomicAdd(&hist[b], 1);
}
