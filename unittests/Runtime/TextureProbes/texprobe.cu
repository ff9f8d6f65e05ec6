//===- texprobe.cu - Probes of the GPU's texture filtering arithmetic -----===//
//
// `texprobe N` (N = 1..6) prints every texel, coordinate and result of one
// probe as hex floats; make-samples.py turns the outputs into
// ../TextureHardwareSamples.inc. Built with `nvcc -O2 -arch=sm_90
// texprobe.cu -o texprobe`; run on the GPU whose filtering is to be
// modelled (the recorded samples come from an H100).
//
//   1. random texels and coordinates: 1D and 2D linear filtering, a random
//      3-level mipmap with point and linear mipmap filtering (tex2DLod,
//      tex2DGrad);
//   2. one-texel 2D and 3D textures (the texel's weight comes back), and a
//      mipmap whose level l holds l (the effective level of detail);
//   3. the other four corners of trilinear 3D weights, and trilinear
//      mipmap weights from one texel of level 0 or level 1;
//   4. weights at halfway points, unnormalized and normalized;
//   5. ramp textures (texel i holds i) at random normalized coordinates of
//      widths 23 to 4093: every sample's weight;
//   6. 8- and 16-bit unorm (read as normalized floats) and f16 texels.
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <cstdio>
#include <cstring>
#include <cuda_fp16.h>
#include <random>
#include <string>
#include <vector>
#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e = (x);                                                       \
    if (e) {                                                                   \
      printf("ERR %s line %d: %s\n", #x, __LINE__, cudaGetErrorString(e));     \
      return 1;                                                                \
    }                                                                          \
  } while (0)

__global__ void k1(cudaTextureObject_t t, const float *x, float *o, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    o[i] = tex1D<float>(t, x[i]);
}

__global__ void k2(cudaTextureObject_t t, const float2 *x, float *o, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    o[i] = tex2D<float>(t, x[i].x, x[i].y);
}

__global__ void k2q(cudaTextureObject_t t, const float4 *x, float *o, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    o[i] = tex2D<float>(t, x[i].x, x[i].y);
}

__global__ void k3(cudaTextureObject_t t, const float4 *x, float *o, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    o[i] = tex3D<float>(t, x[i].x, x[i].y, x[i].z);
}

__global__ void kl(cudaTextureObject_t t, const float4 *x, float *o, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    o[i] = tex2DLod<float>(t, x[i].x, x[i].y, x[i].z);
}

__global__ void kg(cudaTextureObject_t t, const float4 *x, const float4 *g,
                   float *o, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    o[i] = tex2DGrad<float>(t, x[i].x, x[i].y, make_float2(g[i].x, g[i].y),
                            make_float2(g[i].z, g[i].w));
}

/// Linear filtering, element reads, clamping, texel coordinates.
cudaTextureDesc linearClamp() {
  cudaTextureDesc td;
  memset(&td, 0, sizeof td);
  td.filterMode = cudaFilterModeLinear;
  td.readMode = cudaReadModeElementType;
  td.addressMode[0] = td.addressMode[1] = td.addressMode[2] =
      cudaAddressModeClamp;
  return td;
}

/// 4x4x4 textures with one texel (pos[d]) set to 1, sampled with
/// trilinear filtering at N random points of the cell of texels 1..2:
/// prints TAG d x y z result.
int deltas3D(const char *tag, const int pos[4][3], const cudaTextureDesc &td,
             std::mt19937 &rng, float *dx, float *dout) {
  const int N = 4096;
  std::uniform_int_distribution<int> q256(0, 255);
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
  std::vector<float> out(N);
  std::vector<float4> xs(N);
  for (int d = 0; d < 4; ++d) {
    std::vector<float> t(64, 0.0f);
    t[(pos[d][2] * 4 + pos[d][1]) * 4 + pos[d][0]] = 1.0f;
    cudaArray_t a;
    CK(cudaMalloc3DArray(&a, &f, make_cudaExtent(4, 4, 4)));
    cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.srcPtr = make_cudaPitchedPtr(t.data(), 16, 4, 4);
    p.dstArray = a;
    p.extent = make_cudaExtent(4, 4, 4);
    p.kind = cudaMemcpyHostToDevice;
    CK(cudaMemcpy3D(&p));
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaTextureObject_t o;
    CK(cudaCreateTextureObject(&o, &r, &td, nullptr));
    for (int i = 0; i < N; ++i)
      xs[i] = make_float4(1.5f + q256(rng) / 256.0f + u01(rng) / 1024.0f,
                          1.5f + q256(rng) / 256.0f + u01(rng) / 1024.0f,
                          1.5f + q256(rng) / 256.0f + u01(rng) / 1024.0f, 0);
    CK(cudaMemcpy(dx, xs.data(), N * 16, cudaMemcpyHostToDevice));
    k3<<<N / 256, 256>>>(o, (float4 *)dx, dout, N);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out.data(), dout, N * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; ++i)
      printf("%s%d %a %a %a %a\n", tag, d, xs[i].x, xs[i].y, xs[i].z, out[i]);
  }
  return 0;
}

int probe1() {
  const int W = 16, N = 4096;
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
  cudaTextureDesc td;
  memset(&td, 0, sizeof td);
  td.filterMode = cudaFilterModeLinear;
  td.readMode = cudaReadModeElementType;
  td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
  float *dout;
  CK(cudaMalloc(&dout, N * sizeof(float)));
  std::vector<float> out(N);
  // 1D
  std::vector<float> t1(W);
  for (auto &v : t1)
    v = u01(rng);
  cudaArray_t a1;
  CK(cudaMallocArray(&a1, &f, W, 0));
  CK(cudaMemcpy2DToArray(a1, 0, 0, t1.data(), W * 4, W * 4, 1,
                         cudaMemcpyHostToDevice));
  cudaResourceDesc r;
  memset(&r, 0, sizeof r);
  r.resType = cudaResourceTypeArray;
  r.res.array.array = a1;
  cudaTextureObject_t o1;
  CK(cudaCreateTextureObject(&o1, &r, &td, nullptr));
  std::vector<float> x1(N);
  for (auto &v : x1)
    v = 0.5f + u01(rng) * (W - 1);
  float *dx;
  CK(cudaMalloc(&dx, N * 16));
  CK(cudaMemcpy(dx, x1.data(), N * 4, cudaMemcpyHostToDevice));
  k1<<<N / 256, 256>>>(o1, dx, dout, N);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(out.data(), dout, N * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < W; ++i)
    printf("T1 %d %a\n", i, t1[i]);
  for (int i = 0; i < N; ++i)
    printf("S1 %a %a\n", x1[i], out[i]);
  // 2D
  std::vector<float> t2(W * W);
  for (auto &v : t2)
    v = u01(rng);
  cudaArray_t a2;
  CK(cudaMallocArray(&a2, &f, W, W));
  CK(cudaMemcpy2DToArray(a2, 0, 0, t2.data(), W * 4, W * 4, W,
                         cudaMemcpyHostToDevice));
  r.res.array.array = a2;
  cudaTextureObject_t o2;
  CK(cudaCreateTextureObject(&o2, &r, &td, nullptr));
  std::vector<float2> x2(N);
  for (auto &v : x2)
    v = make_float2(0.5f + u01(rng) * (W - 1), 0.5f + u01(rng) * (W - 1));
  CK(cudaMemcpy(dx, x2.data(), N * 8, cudaMemcpyHostToDevice));
  k2<<<N / 256, 256>>>(o2, (float2 *)dx, dout, N);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(out.data(), dout, N * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < W * W; ++i)
    printf("T2 %d %a\n", i, t2[i]);
  for (int i = 0; i < N; ++i)
    printf("S2 %a %a %a\n", x2[i].x, x2[i].y, out[i]);
  // mipmapped 2D, 3 levels 16, 8, 4; normalized; linear mip filter
  const int L = 3;
  cudaMipmappedArray_t mip;
  CK(cudaMallocMipmappedArray(&mip, &f, make_cudaExtent(W, W, 0), L));
  for (int l = 0; l < L; ++l) {
    int w = W >> l;
    std::vector<float> t(w * w);
    for (auto &v : t)
      v = u01(rng);
    cudaArray_t lv;
    CK(cudaGetMipmappedArrayLevel(&lv, mip, l));
    CK(cudaMemcpy2DToArray(lv, 0, 0, t.data(), w * 4, w * 4, w,
                           cudaMemcpyHostToDevice));
    for (int i = 0; i < w * w; ++i)
      printf("TM %d %d %a\n", l, i, t[i]);
  }
  memset(&r, 0, sizeof r);
  r.resType = cudaResourceTypeMipmappedArray;
  r.res.mipmap.mipmap = mip;
  for (int mf = 0; mf < 2; ++mf) {
    cudaTextureDesc tm = td;
    tm.normalizedCoords = 1;
    tm.mipmapFilterMode = mf ? cudaFilterModeLinear : cudaFilterModePoint;
    tm.maxMipmapLevelClamp = L - 1;
    tm.minMipmapLevelClamp = 0;
    cudaTextureObject_t om;
    CK(cudaCreateTextureObject(&om, &r, &tm, nullptr));
    std::vector<float4> xl(N);
    for (auto &v : xl)
      v = make_float4(0.05f + 0.9f * u01(rng), 0.05f + 0.9f * u01(rng),
                      -0.25f + u01(rng) * 2.5f, 0);
    CK(cudaMemcpy(dx, xl.data(), N * 16, cudaMemcpyHostToDevice));
    kl<<<N / 256, 256>>>(om, (float4 *)dx, dout, N);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out.data(), dout, N * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; ++i)
      printf("SL%d %a %a %a %a\n", mf, xl[i].x, xl[i].y, xl[i].z, out[i]);
    // gradients: random directions, lengths 2^[-2, 3.5) texels of level 0
    std::vector<float4> xg(N), g(N);
    for (int i = 0; i < N; ++i) {
      xg[i] =
          make_float4(0.05f + 0.9f * u01(rng), 0.05f + 0.9f * u01(rng), 0, 0);
      float s1 = exp2f(-2.0f + 5.5f * u01(rng)) / W,
            s2 = exp2f(-2.0f + 5.5f * u01(rng)) / W;
      float a1 = 6.2831853f * u01(rng), a2 = 6.2831853f * u01(rng);
      g[i] = make_float4(s1 * cosf(a1), s1 * sinf(a1), s2 * cosf(a2),
                         s2 * sinf(a2));
    }
    float4 *dg;
    CK(cudaMalloc(&dg, N * 16));
    CK(cudaMemcpy(dx, xg.data(), N * 16, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dg, g.data(), N * 16, cudaMemcpyHostToDevice));
    kg<<<N / 256, 256>>>(om, (float4 *)dx, dg, dout, N);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out.data(), dout, N * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; ++i)
      printf("SG%d %a %a %a %a %a %a %a\n", mf, xg[i].x, xg[i].y, g[i].x,
             g[i].y, g[i].z, g[i].w, out[i]);
  }
  return 0;
}

int probe2() {
  const int N = 4096;
  std::mt19937 rng(777);
  std::uniform_int_distribution<int> q256(0, 255);
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
  cudaTextureDesc td = linearClamp();
  float *dout, *dx, *dg;
  CK(cudaMalloc(&dout, N * 4));
  CK(cudaMalloc(&dx, N * 16));
  CK(cudaMalloc(&dg, N * 16));
  std::vector<float> out(N);
  std::vector<float4> xs(N), gs(N);
  // 2D deltas on 4x4: the 1 at (1,1) or (2,1); samples in cell (1,1): x = 1.5 +
  // A/256 + small.
  for (int d = 0; d < 2; ++d) {
    std::vector<float> t(16, 0.0f);
    t[1 * 4 + 1 + d] = 1.0f;
    cudaArray_t a;
    CK(cudaMallocArray(&a, &f, 4, 4));
    CK(cudaMemcpy2DToArray(a, 0, 0, t.data(), 16, 16, 4,
                           cudaMemcpyHostToDevice));
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaTextureObject_t o;
    CK(cudaCreateTextureObject(&o, &r, &td, nullptr));
    for (int i = 0; i < N; ++i)
      xs[i] = make_float4(1.5f + q256(rng) / 256.0f + u01(rng) / 1024.0f,
                          1.5f + q256(rng) / 256.0f + u01(rng) / 1024.0f, 0, 0);
    CK(cudaMemcpy(dx, xs.data(), N * 16, cudaMemcpyHostToDevice));
    k2q<<<N / 256, 256>>>(o, (float4 *)dx, dout, N);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out.data(), dout, N * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; ++i)
      printf("D2%d %a %a %a\n", d, xs[i].x, xs[i].y, out[i]);
  }
  // 3D deltas on 4x4x4: the 1 at (1,1,1), (2,1,1), (2,2,1), (2,2,2).
  int pos[4][3] = {{1, 1, 1}, {2, 1, 1}, {2, 2, 1}, {2, 2, 2}};
  if (int rc = deltas3D("D3", pos, td, rng, dx, dout))
    return rc;
  // Mipmap 16x16, 5 levels, level l = constant l; linear mip filter: the result
  // is the effective LOD.
  const int L = 5;
  cudaMipmappedArray_t mip;
  CK(cudaMallocMipmappedArray(&mip, &f, make_cudaExtent(16, 16, 0), L));
  for (int l = 0; l < L; ++l) {
    int w = 16 >> l;
    std::vector<float> t(w * w, float(l));
    cudaArray_t lv;
    CK(cudaGetMipmappedArrayLevel(&lv, mip, l));
    CK(cudaMemcpy2DToArray(lv, 0, 0, t.data(), w * 4, w * 4, w,
                           cudaMemcpyHostToDevice));
  }
  cudaResourceDesc r;
  memset(&r, 0, sizeof r);
  r.resType = cudaResourceTypeMipmappedArray;
  r.res.mipmap.mipmap = mip;
  cudaTextureDesc tm = td;
  tm.normalizedCoords = 1;
  tm.mipmapFilterMode = cudaFilterModeLinear;
  tm.maxMipmapLevelClamp = L - 1;
  cudaTextureObject_t om;
  CK(cudaCreateTextureObject(&om, &r, &tm, nullptr));
  for (int i = 0; i < N; ++i)
    xs[i] = make_float4(u01(rng), u01(rng),
                        i < 2048 ? i / 1024.0f : -0.5f + 5.0f * u01(rng), 0);
  CK(cudaMemcpy(dx, xs.data(), N * 16, cudaMemcpyHostToDevice));
  kl<<<N / 256, 256>>>(om, (float4 *)dx, dout, N);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(out.data(), dout, N * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < N; ++i)
    printf("ML %a %a\n", xs[i].z, out[i]);
  // Gradients: random, lengths 2^[-1, 5) texels of level 0; anisotropic and
  // isotropic.
  for (int i = 0; i < N; ++i) {
    float s1 = exp2f(-1.0f + 6.0f * u01(rng)) / 16,
          s2 = i % 2 ? s1 : exp2f(-1.0f + 6.0f * u01(rng)) / 16;
    float a1 = 6.2831853f * u01(rng),
          a2 = i % 4 < 2 ? a1 + 1.5707963f : 6.2831853f * u01(rng);
    gs[i] =
        make_float4(s1 * cosf(a1), s1 * sinf(a1), s2 * cosf(a2), s2 * sinf(a2));
    xs[i] = make_float4(u01(rng), u01(rng), 0, 0);
  }
  CK(cudaMemcpy(dx, xs.data(), N * 16, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dg, gs.data(), N * 16, cudaMemcpyHostToDevice));
  kg<<<N / 256, 256>>>(om, (float4 *)dx, (float4 *)dg, dout, N);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(out.data(), dout, N * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < N; ++i)
    printf("MG %a %a %a %a %a\n", gs[i].x, gs[i].y, gs[i].z, gs[i].w, out[i]);
  return 0;
}

int probe3() {
  const int N = 4096;
  std::mt19937 rng(4242);
  std::uniform_int_distribution<int> q256(0, 255);
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
  cudaTextureDesc td = linearClamp();
  float *dout, *dx;
  CK(cudaMalloc(&dout, N * 4));
  CK(cudaMalloc(&dx, N * 16));
  std::vector<float> out(N);
  std::vector<float4> xs(N);
  int pos[4][3] = {{1, 2, 1}, {1, 1, 2}, {2, 1, 2}, {1, 2, 2}};
  if (int rc = deltas3D("E3", pos, td, rng, dx, dout))
    return rc;
  // Mipmaps 16x16 (3 levels): a 1 at level 0's texel (1,1), or at level 1's
  // texel (1,1).
  for (int d = 0; d < 2; ++d) {
    cudaMipmappedArray_t mip;
    CK(cudaMallocMipmappedArray(&mip, &f, make_cudaExtent(16, 16, 0), 3));
    for (int l = 0; l < 3; ++l) {
      int w = 16 >> l;
      std::vector<float> t(w * w, 0.0f);
      if (l == d)
        t[1 * w + 1] = 1.0f;
      cudaArray_t lv;
      CK(cudaGetMipmappedArrayLevel(&lv, mip, l));
      CK(cudaMemcpy2DToArray(lv, 0, 0, t.data(), w * 4, w * 4, w,
                             cudaMemcpyHostToDevice));
    }
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeMipmappedArray;
    r.res.mipmap.mipmap = mip;
    cudaTextureDesc tm = td;
    tm.normalizedCoords = 1;
    tm.mipmapFilterMode = cudaFilterModeLinear;
    tm.maxMipmapLevelClamp = 2;
    cudaTextureObject_t om;
    CK(cudaCreateTextureObject(&om, &r, &tm, nullptr));
    float w = d == 0 ? 16.0f : 8.0f;
    for (int i = 0; i < N; ++i)
      xs[i] = make_float4((1.5f + q256(rng) / 256.0f + u01(rng) / 1024.0f) / w,
                          (1.5f + q256(rng) / 256.0f + u01(rng) / 1024.0f) / w,
                          u01(rng), 0);
    CK(cudaMemcpy(dx, xs.data(), N * 16, cudaMemcpyHostToDevice));
    kl<<<N / 256, 256>>>(om, (float4 *)dx, dout, N);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out.data(), dout, N * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; ++i)
      printf("MD%d %a %a %a %a\n", d, xs[i].x, xs[i].y, xs[i].z, out[i]);
  }
  return 0;
}

int probe4() {
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
  for (int norm = 0; norm < 2; ++norm) {
    int W = norm ? 23 : 4;
    std::vector<float> t(W, 0.0f);
    t[2] = 1.0f;
    cudaArray_t a;
    CK(cudaMallocArray(&a, &f, W, 0));
    CK(cudaMemcpy2DToArray(a, 0, 0, t.data(), W * 4, W * 4, 1,
                           cudaMemcpyHostToDevice));
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaTextureDesc td;
    memset(&td, 0, sizeof td);
    td.filterMode = cudaFilterModeLinear;
    td.addressMode[0] = cudaAddressModeClamp;
    td.normalizedCoords = norm;
    cudaTextureObject_t o;
    CK(cudaCreateTextureObject(&o, &r, &td, nullptr));
    std::vector<float> xs;
    for (int k = 0; k < 256; ++k) {
      float x = 1.5f + (k + 0.5f) / 256.0f;
      if (norm)
        x = x / float(W);
      xs.push_back(x);
      xs.push_back(nextafterf(x, 0.0f));
      xs.push_back(nextafterf(x, 10.0f));
      float y = 1.5f + (k + 0.25f) / 256.0f, z = 1.5f + (k + 0.75f) / 256.0f;
      if (norm) {
        y /= float(W);
        z /= float(W);
      }
      xs.push_back(y);
      xs.push_back(z);
    }
    int n = xs.size();
    float *dx, *dout;
    CK(cudaMalloc(&dx, n * 4));
    CK(cudaMalloc(&dout, n * 4));
    CK(cudaMemcpy(dx, xs.data(), n * 4, cudaMemcpyHostToDevice));
    k1<<<(n + 255) / 256, 256>>>(o, dx, dout, n);
    CK(cudaDeviceSynchronize());
    std::vector<float> out(n);
    CK(cudaMemcpy(out.data(), dout, n * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i)
      printf("H%d %a %a\n", norm, xs[i], out[i]);
  }
  return 0;
}

int probe5() {
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> u(0.02f, 0.98f);
  const int N = 4096;
  for (int W : {23, 37, 100, 1000, 4093}) {
    std::vector<float> t(W);
    for (int i = 0; i < W; ++i)
      t[i] = float(i);
    cudaArray_t a;
    CK(cudaMallocArray(&a, &f, W, 0));
    CK(cudaMemcpy2DToArray(a, 0, 0, t.data(), W * 4, W * 4, 1,
                           cudaMemcpyHostToDevice));
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaTextureDesc td;
    memset(&td, 0, sizeof td);
    td.filterMode = cudaFilterModeLinear;
    td.addressMode[0] = cudaAddressModeClamp;
    td.normalizedCoords = 1;
    cudaTextureObject_t o;
    CK(cudaCreateTextureObject(&o, &r, &td, nullptr));
    std::vector<float> xs(N);
    for (auto &x : xs)
      x = u(rng);
    float *dx, *dout;
    CK(cudaMalloc(&dx, N * 4));
    CK(cudaMalloc(&dout, N * 4));
    CK(cudaMemcpy(dx, xs.data(), N * 4, cudaMemcpyHostToDevice));
    k1<<<N / 256, 256>>>(o, dx, dout, N);
    CK(cudaDeviceSynchronize());
    std::vector<float> out(N);
    CK(cudaMemcpy(out.data(), dout, N * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; ++i)
      printf("R%d %a %a\n", W, xs[i], out[i]);
  }
  return 0;
}

int probe6() {
  const int W = 16, N = 4096;
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  std::uniform_int_distribution<int> code(0, 65535);
  float *dout;
  float2 *dx;
  CK(cudaMalloc(&dout, N * 4));
  CK(cudaMalloc(&dx, N * 8));
  std::vector<float> out(N);
  std::vector<float2> xs(N);
  for (int kind = 0; kind < 3; ++kind) {
    cudaChannelFormatDesc f = kind == 0 ? cudaCreateChannelDesc<unsigned char>()
                              : kind == 1
                                  ? cudaCreateChannelDesc<unsigned short>()
                                  : cudaCreateChannelDescHalf();
    int bytes = kind == 0 ? 1 : 2;
    std::vector<unsigned short> raw(W * W);
    for (auto &v : raw) {
      int c = code(rng);
      v = kind == 0   ? (c & 255)
          : kind == 1 ? c
                      : __half_as_ushort(__float2half(u01(rng) * 8.0f - 4.0f));
    }
    std::vector<unsigned char> bytesv(W * W * bytes);
    for (int i = 0; i < W * W; ++i) {
      if (bytes == 1)
        bytesv[i] = (unsigned char)raw[i];
      else
        memcpy(&bytesv[2 * i], &raw[i], 2);
    }
    cudaArray_t a;
    CK(cudaMallocArray(&a, &f, W, W));
    CK(cudaMemcpy2DToArray(a, 0, 0, bytesv.data(), W * bytes, W * bytes, W,
                           cudaMemcpyHostToDevice));
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaTextureDesc td;
    memset(&td, 0, sizeof td);
    td.filterMode = cudaFilterModeLinear;
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
    td.readMode =
        kind == 2 ? cudaReadModeElementType : cudaReadModeNormalizedFloat;
    cudaTextureObject_t o;
    CK(cudaCreateTextureObject(&o, &r, &td, nullptr));
    for (auto &v : xs)
      v = make_float2(0.5f + u01(rng) * (W - 1), 0.5f + u01(rng) * (W - 1));
    CK(cudaMemcpy(dx, xs.data(), N * 8, cudaMemcpyHostToDevice));
    k2<<<N / 256, 256>>>(o, dx, dout, N);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out.data(), dout, N * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < W * W; ++i)
      printf("C%d %d %d\n", kind, i, raw[i]);
    for (int i = 0; i < N; ++i)
      printf("L%d %a %a %a\n", kind, xs[i].x, xs[i].y, out[i]);
  }
  return 0;
}

int main(int argc, char **argv) {
  int (*probes[])() = {probe1, probe2, probe3, probe4, probe5, probe6};
  int n = argc > 1 ? std::atoi(argv[1]) : 0;
  if (n < 1 || n > 6) {
    std::fprintf(stderr, "usage: %s N (the probe, 1..6)\n", argv[0]);
    return 2;
  }
  int rc = probes[n - 1]();
  if (rc == 0)
    printf("DONE\n");
  return rc;
}
