// Kernels using dynamically sized shared memory (extern __shared__). Deterministic.

extern __shared__ float buf[];

// Reverse each block's chunk: out[b*B + t] = in[b*B + (B-1-t)], B = blockDim.x,
// for full blocks only (n multiple of blockDim.x). Dynamic smem = blockDim.x * sizeof(float).
extern "C" __global__ void reverse_block(int n, const float* in, float* out) {
  int t = threadIdx.x;
  int base = blockIdx.x * blockDim.x;
  if (base + t < n) buf[t] = in[base + t];
  __syncthreads();
  int src = blockDim.x - 1 - t;
  if (base + t < n) out[base + t] = buf[src];
}

// 3-point stencil with halo: out[i] = in[i-1] + 2*in[i] + in[i+1] (0 outside [0,n)).
// Dynamic smem = (blockDim.x + 2) * sizeof(float).
extern "C" __global__ void stencil3(int n, const float* in, float* out) {
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  buf[t + 1] = (i < n) ? in[i] : 0.0f;
  if (t == 0) buf[0] = (i > 0 && i - 1 < n) ? in[i - 1] : 0.0f;
  if (t == blockDim.x - 1) buf[t + 2] = (i + 1 < n) ? in[i + 1] : 0.0f;
  __syncthreads();
  if (i < n) out[i] = buf[t] + 2.0f * buf[t + 1] + buf[t + 2];
}
