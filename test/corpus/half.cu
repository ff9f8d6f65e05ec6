// fp16 / bf16 kernels using packed half2 / bfloat162 arithmetic and conversions.
// Deterministic per element (results are rounded to 16-bit formats).
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// Packed fp16: for each pair j, out[j] = a[j] * b[j] + c[j]  (via __hmul2 then __hadd2),
// and fma_out[j] = __hfma2(a[j], b[j], c[j]) (single rounding).  n2 = number of half2 pairs.
extern "C" __global__ void half2_arith(int n2, const __half2* a, const __half2* b,
                                       const __half2* c, __half2* out, __half2* fma_out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n2) return;
  __half2 x = a[i], y = b[i], z = c[i];
  out[i] = __hadd2(__hmul2(x, y), z);
  fma_out[i] = __hfma2(x, y, z);
}

// fp32 <-> fp16 conversions: h[i] = __float2half_rn(x[i]); back[i] = __half2float(h[i]) * 2
extern "C" __global__ void half_convert(int n, const float* x, __half* h, float* back) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half hv = __float2half_rn(x[i]);
  h[i] = hv;
  back[i] = __half2float(hv) * 2.0f;
}

// Packed bf16: pairs (x[2i], x[2i+1]) -> __float22bfloat162_rn; out[i] = p*q + p (bf16 ops),
// f[2i], f[2i+1] = result converted back to float.  n2 = number of pairs.
extern "C" __global__ void bf16x2_arith(int n2, const float* x, const __nv_bfloat162* q,
                                        __nv_bfloat162* out, float* f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n2) return;
  float2 v = make_float2(x[2 * i], x[2 * i + 1]);
  __nv_bfloat162 p = __float22bfloat162_rn(v);
  __nv_bfloat162 r = __hfma2(p, q[i], p);
  r = __hadd2(r, __hmul2(p, __float2bfloat162_rn(0.0f)));   // exercise bf16 add/mul
  out[i] = r;
  float2 back = __bfloat1622float2(r);
  f[2 * i] = back.x;
  f[2 * i + 1] = back.y;
}

// Mixed: y[i] = (float)h[i] + (float)bf[i], per-element 16-bit -> f32 conversions
extern "C" __global__ void mixed16_to_f32(int n, const __half* h, const __nv_bfloat16* bf,
                                          float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __half2float(h[i]) + __bfloat162float(bf[i]);
}
