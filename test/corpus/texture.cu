// Textures and surfaces through texture and surface objects
// (cudaTextureObject_t, cudaSurfaceObject_t), the way image-processing code
// uses them. The host creates the objects; each kernel's comment says what
// it computes. Sampling follows the CUDA programming guide's "Texture
// Fetching" appendix: linear filtering weights in 1.8 fixed point.

#include <cuda_runtime.h>

// out[i] = tex2D<float4>(tex, coords[i]): one sample per coordinate, with
// the texture's own filtering, addressing and read mode (linear filtering
// with each address mode; normalized-float reads of 8-bit texels, sRGB).
extern "C" __global__ void tex2d_sample(cudaTextureObject_t tex, float4 *out,
                                        const float2 *coords, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float2 c = coords[i];
    out[i] = tex2D<float4>(tex, c.x, c.y);
  }
}

// A 2x2 box filter of linearly filtered samples: out[y*w+x] is the mean of
// the samples at (x + 0.25|0.75, y + 0.25|0.75), summed in that order
// ((a + b) + c) + d and scaled by 0.25 (unnormalized coordinates).
// Launch blockDim = (16, 16), grid covering w x h.
extern "C" __global__ void tex2d_box(cudaTextureObject_t tex, float4 *out,
                                     int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h)
    return;
  float fx = x, fy = y;
  float4 a = tex2D<float4>(tex, fx + 0.25f, fy + 0.25f);
  float4 b = tex2D<float4>(tex, fx + 0.75f, fy + 0.25f);
  float4 c = tex2D<float4>(tex, fx + 0.25f, fy + 0.75f);
  float4 d = tex2D<float4>(tex, fx + 0.75f, fy + 0.75f);
  out[y * w + x] = make_float4(
      (a.x + b.x + c.x + d.x) * 0.25f, (a.y + b.y + c.y + d.y) * 0.25f,
      (a.z + b.z + c.z + d.z) * 0.25f, (a.w + b.w + c.w + d.w) * 0.25f);
}

// out[i] = tex1Dfetch<int4>(tex, idx[i]): integer texels of linear memory by
// index (point sampling, element reads; out of range reads zeros).
extern "C" __global__ void tex1d_fetch_int(cudaTextureObject_t tex, int4 *out,
                                           const int *idx, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = tex1Dfetch<int4>(tex, idx[i]);
}

// out[i] = tex2D<uchar4>(tex, coords[i]): point sampling with element reads
// of 8-bit texels.
extern "C" __global__ void tex2d_uchar(cudaTextureObject_t tex, uchar4 *out,
                                       const float2 *coords, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float2 c = coords[i];
    out[i] = tex2D<uchar4>(tex, c.x, c.y);
  }
}

// out[4i + k] = tex2Dgather<float4>(tex, coords[i], k) for components
// k = 0..3 (tld4.r/g/b/a): the component of the four texels bilinear
// filtering would use, in the order (i, j+1), (i+1, j+1), (i+1, j), (i, j).
extern "C" __global__ void tex2d_gather(cudaTextureObject_t tex, float4 *out,
                                        const float2 *coords, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float2 c = coords[i];
    out[4 * i] = tex2Dgather<float4>(tex, c.x, c.y, 0);
    out[4 * i + 1] = tex2Dgather<float4>(tex, c.x, c.y, 1);
    out[4 * i + 2] = tex2Dgather<float4>(tex, c.x, c.y, 2);
    out[4 * i + 3] = tex2Dgather<float4>(tex, c.x, c.y, 3);
  }
}

// out[2i] = tex2DLod<float4>(tex, coords[i], 0), out[2i+1] =
// tex2DGrad<float4>(tex, coords[i], 0, 0): the explicit-level and gradient
// forms (tex.level, tex.grad); a texture without mipmaps samples level 0.
extern "C" __global__ void tex2d_lod_grad(cudaTextureObject_t tex, float4 *out,
                                          const float2 *coords, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float2 c = coords[i];
    out[2 * i] = tex2DLod<float4>(tex, c.x, c.y, 0.0f);
    out[2 * i + 1] = tex2DGrad<float4>(tex, c.x, c.y, make_float2(0.f, 0.f),
                                       make_float2(0.f, 0.f));
  }
}

// out[2i] = tex2DLayered<float>(lay, c.x, c.y, (int)c.w) and out[2i+1] =
// tex3D<float>(vol, c.x, c.y, c.z) for c = coords[i] (tex.a2d, tex.3d).
extern "C" __global__ void tex_layered_3d(cudaTextureObject_t lay,
                                          cudaTextureObject_t vol, float *out,
                                          const float4 *coords, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float4 c = coords[i];
    out[2 * i] = tex2DLayered<float>(lay, c.x, c.y, (int)c.w);
    out[2 * i + 1] = tex3D<float>(vol, c.x, c.y, c.z);
  }
}

// Inverts r, g, b of a w x h uchar4 surface into another (suld.b/sust.b with
// byte x coordinates, trap mode; alpha is copied).
// Launch blockDim = (16, 16), grid covering w x h.
extern "C" __global__ void surf_invert(cudaSurfaceObject_t in,
                                       cudaSurfaceObject_t out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) {
    uchar4 v = surf2Dread<uchar4>(in, x * 4, y);
    v.x = 255 - v.x;
    v.y = 255 - v.y;
    v.z = 255 - v.z;
    surf2Dwrite(v, out, x * 4, y);
  }
}

// out[0..5] = txq.{width, height, depth, normalized_coords, filter_mode,
// num_mipmap_levels} of `tex`, out[6..7] = suq.{width, height} of `surf`.
extern "C" __global__ void tex_query(cudaTextureObject_t tex,
                                     cudaSurfaceObject_t surf, int *out) {
  int r[8];
  asm("txq.width.b32 %0, [%1];" : "=r"(r[0]) : "l"(tex));
  asm("txq.height.b32 %0, [%1];" : "=r"(r[1]) : "l"(tex));
  asm("txq.depth.b32 %0, [%1];" : "=r"(r[2]) : "l"(tex));
  asm("txq.normalized_coords.b32 %0, [%1];" : "=r"(r[3]) : "l"(tex));
  asm("txq.filter_mode.b32 %0, [%1];" : "=r"(r[4]) : "l"(tex));
  asm("txq.num_mipmap_levels.b32 %0, [%1];" : "=r"(r[5]) : "l"(tex));
  asm("suq.width.b32 %0, [%1];" : "=r"(r[6]) : "l"(surf));
  asm("suq.height.b32 %0, [%1];" : "=r"(r[7]) : "l"(surf));
  for (int k = 0; k < 8; ++k)
    out[k] = r[k];
}

// A mipmapped texture: for a = args[i] = (x, y, lod, g), out[3i] =
// tex2DLod<float4>(tex, x, y, lod) (tex.level), out[3i+1] =
// tex2DGrad<float4>(tex, x, y, (g, 0), (0.5g, g)) (tex.grad) and out[3i+2]
// = tex2D<float4>(tex, x, y) (level 0 plus the bias).
extern "C" __global__ void tex2d_mip(cudaTextureObject_t tex, float4 *out,
                                     const float4 *args, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float4 a = args[i];
    out[3 * i] = tex2DLod<float4>(tex, a.x, a.y, a.z);
    out[3 * i + 1] = tex2DGrad<float4>(tex, a.x, a.y, make_float2(a.w, 0.f),
                                       make_float2(0.5f * a.w, a.w));
    out[3 * i + 2] = tex2D<float4>(tex, a.x, a.y);
  }
}

// out[0] = txq.num_mipmap_levels, out[1..3] = txq.level.width of levels 0,
// 1, 2 and out[4] = txq.level.height of level `level`.
extern "C" __global__ void tex_mip_query(cudaTextureObject_t tex, int *out,
                                         int level) {
  int r[5];
  asm("txq.num_mipmap_levels.b32 %0, [%1];" : "=r"(r[0]) : "l"(tex));
  asm("txq.level.width.b32 %0, [%1], 0;" : "=r"(r[1]) : "l"(tex));
  asm("txq.level.width.b32 %0, [%1], 1;" : "=r"(r[2]) : "l"(tex));
  asm("txq.level.width.b32 %0, [%1], 2;" : "=r"(r[3]) : "l"(tex));
  asm("txq.level.height.b32 %0, [%1], %2;" : "=r"(r[4]) : "l"(tex), "r"(level));
  for (int k = 0; k < 5; ++k)
    out[k] = r[k];
}

// tld4 beyond 2D, for c = coords[i]: out[3i] = tld4.r of the layered
// texture `lay` at texel coordinates (c.x, c.y) in layer (int)c.w,
// out[3i+1] = tld4.g of the cube map `cube` in direction (c.x, c.y, c.z) and
// out[3i+2] = tld4.b of the cubemap array `acube` in that direction in
// layer (int)c.w (CUDA has no gather intrinsics for these: inline PTX).
extern "C" __global__ void tld4_layered_cube(cudaTextureObject_t lay,
                                             cudaTextureObject_t cube,
                                             cudaTextureObject_t acube,
                                             float4 *out, const float4 *coords,
                                             int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float4 c = coords[i];
  int l = (int)c.w;
  float4 a, b, d;
  asm("tld4.r.a2d.v4.f32.f32 {%0, %1, %2, %3}, [%4, {%5, %6, %7, %7}];"
      : "=f"(a.x), "=f"(a.y), "=f"(a.z), "=f"(a.w)
      : "l"(lay), "r"(l), "f"(c.x), "f"(c.y));
  asm("tld4.g.cube.v4.f32.f32 {%0, %1, %2, %3}, [%4, {%5, %6, %7, %7}];"
      : "=f"(b.x), "=f"(b.y), "=f"(b.z), "=f"(b.w)
      : "l"(cube), "f"(c.x), "f"(c.y), "f"(c.z));
  asm("tld4.b.acube.v4.f32.f32 {%0, %1, %2, %3}, [%4, {%5, %6, %7, %8}];"
      : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)
      : "l"(acube), "r"(l), "f"(c.x), "f"(c.y), "f"(c.z));
  out[3 * i] = a;
  out[3 * i + 1] = b;
  out[3 * i + 2] = d;
}
