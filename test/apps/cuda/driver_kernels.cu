//===- driver_kernels.cu - Kernels that driver_api loads as PTX -----------===//
//
// Compiled with `nvcc -ptx` into driver_kernels.ptx at build time; the
// driver_api program loads that text with cuModuleLoadData. extern "C" keeps
// the names unmangled for cuModuleGetFunction / cuModuleGetGlobal.
//
//===----------------------------------------------------------------------===//

/// A by-value struct parameter: 16 bytes, 8-byte aligned.
struct Pair {
  int first;
  double second;
};

extern "C" {

/// Counts the blocks that ran scaleAdd.
__device__ unsigned int launchCount;

/// out[i] = a * in[i] + i. Parameter layout: 0, 8, 16, 20 (24 bytes).
__global__ void scaleAdd(const float *in, float *out, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0)
    atomicAdd(&launchCount, 1u);
  if (i < n)
    out[i] = a * in[i] + i;
}

/// Writes its scalar parameters out as integers. Parameter layout: c at 0,
/// d at 8, s at 16, i at 20, p at 24, out at 40 (48 bytes).
__global__ void mixedParams(char c, double d, short s, int i, Pair p,
                            long long *out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    out[0] = c;
    out[1] = static_cast<long long>(d * 2);
    out[2] = s;
    out[3] = i;
    out[4] = p.first;
    out[5] = static_cast<long long>(p.second * 4);
  }
}

} // extern "C"
