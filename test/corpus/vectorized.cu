// Vectorized memory access: float4 / int2 loads and stores, and read-only __ldg loads.
// Deterministic per element.

// out4[i] = a4[i] * s + b4[i] component-wise, with a4/b4/out4 = reinterpret_cast<float4*>;
// n4 = number of float4 elements (pointers must be 16-byte aligned)
extern "C" __global__ void scale_add_f4(int n4, const float* a, const float* b, float s,
                                        float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float4 x = reinterpret_cast<const float4*>(a)[i];
  float4 y = reinterpret_cast<const float4*>(b)[i];
  float4 r = make_float4(x.x * s + y.x, x.y * s + y.y, x.z * s + y.z, x.w * s + y.w);
  reinterpret_cast<float4*>(out)[i] = r;
}

// int2 swap: out[i] = (in[i].y, in[i].x + in[i].y); n2 = number of int2 elements
extern "C" __global__ void swap_int2(int n2, const int2* in, int2* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n2) return;
  int2 v = in[i];
  out[i] = make_int2(v.y, v.x + v.y);
}

// Read-only loads through the texture path: out[i] = __ldg(&x[i]) + __ldg(&x4[i/4]).w
// where x4 = reinterpret_cast<const float4*>(x); scalar and vector __ldg
// (n must be a multiple of 4 and x 16-byte aligned)
extern "C" __global__ void ldg_gather(int n, const float* __restrict__ x, float* __restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = __ldg(&x[i]);
  float4 w = __ldg(reinterpret_cast<const float4*>(x) + (i >> 2));
  out[i] = v + w.w;
}
