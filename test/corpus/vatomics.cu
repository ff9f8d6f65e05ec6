// Packed and vector atomics: per-bin sums with atomicAdd on __half2,
// __nv_bfloat162 (atom.add.noftz.f16x2/.bf16x2), float2 and float4
// (atom.global.add.v2/.v4.f32 on sm_90; two or four float atomics before,
// where CUDA has no vector atomicAdd). Each element of a vector or packed
// atomic is its own atomic addition. Launch: any shape; bin[i] in [0, bins).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// acc[bin[i]] += v[i] (two f16 sums per bin)
extern "C" __global__ void bins_half2(const __half2* v, const int* bin,
                                      __half2* acc, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&acc[bin[i]], v[i]);
}

// acc[bin[i]] += v[i] (two bf16 sums per bin)
extern "C" __global__ void bins_bf162(const __nv_bfloat162* v, const int* bin,
                                      __nv_bfloat162* acc, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&acc[bin[i]], v[i]);
}

// acc[bin[i]] += v[i] (float2)
extern "C" __global__ void bins_float2(const float2* v, const int* bin,
                                       float2* acc, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#if __CUDA_ARCH__ >= 900
  atomicAdd(&acc[bin[i]], v[i]);
#else
  atomicAdd(&acc[bin[i]].x, v[i].x);
  atomicAdd(&acc[bin[i]].y, v[i].y);
#endif
}

// acc[bin[i]] += v[i] (float4)
extern "C" __global__ void bins_float4(const float4* v, const int* bin,
                                       float4* acc, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#if __CUDA_ARCH__ >= 900
  atomicAdd(&acc[bin[i]], v[i]);
#else
  atomicAdd(&acc[bin[i]].x, v[i].x);
  atomicAdd(&acc[bin[i]].y, v[i].y);
  atomicAdd(&acc[bin[i]].z, v[i].z);
  atomicAdd(&acc[bin[i]].w, v[i].w);
#endif
}
