//===- texture_filter.cu - Texture and surface objects, as image code uses them
//
// An image filter over CUDA arrays: cudaMallocArray, cudaMemcpy2DToArray,
// texture objects with linear filtering in each address mode (wrap, clamp,
// mirror, border; normalized and texel coordinates), a surface object
// written by a filter kernel, cudaMemcpy2DFromArray; a pitch-linear texture
// over cudaMallocPitch memory; a linear-memory texture (tex1Dfetch); a 3D
// array through cudaMalloc3DArray and cudaMemcpy3D; layered and cubemap
// arrays; the array copies; a mipmapped array (cudaMallocMipmappedArray,
// cudaGetMipmappedArrayLevel) sampled with tex2DLod/tex2DGrad/tex2D; the
// descriptor getters.
// Every sample is compared bit for bit with the C++ reference of the
// hardware's filtering that Wooly's CorpusDiff tests use
// (unittests/Runtime/TextureReference.h).
//
// Then what must fail cleanly: features Wooly does not support yet
// (cudaErrorNotSupported), and a kernel given a forged texture handle
// (cudaErrorIllegalAddress at the next synchronisation, never a crash).
//
// `texture_filter native` runs only the sampling checks: with NVIDIA's
// libcudart on a GPU it checks the reference against the hardware.
//
// `texture_filter publish FILE` and `texture_filter steal FILE`, run at the
// same time as two tenants, check that a tenant cannot use or destroy
// another tenant's texture object: publish writes its handle to FILE and
// waits for FILE.done; steal launches with that handle and tries to destroy
// it.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "texture_filter"
#include "CudaApp.h"

#include "TextureReference.h"

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using wooly::AddressMode;
using wooly::texref::RefTex;

__global__ void sample2D(cudaTextureObject_t tex, float4 *out,
                         const float2 *coords, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = tex2D<float4>(tex, coords[i].x, coords[i].y);
}

__global__ void sample2D1(cudaTextureObject_t tex, float *out,
                          const float2 *coords, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = tex2D<float>(tex, coords[i].x, coords[i].y);
}

__global__ void sample3D(cudaTextureObject_t tex, float4 *out,
                         const float4 *coords, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = tex3D<float4>(tex, coords[i].x, coords[i].y, coords[i].z);
}

/// coords[i] = (x, y, layer, unused).
__global__ void sampleLayered(cudaTextureObject_t tex, float4 *out,
                              const float4 *coords, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] =
        tex2DLayered<float4>(tex, coords[i].x, coords[i].y, int(coords[i].z));
}

/// coords[i] = a direction (x, y, z, unused).
__global__ void sampleCube(cudaTextureObject_t tex, float4 *out,
                           const float4 *coords, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = texCubemap<float4>(tex, coords[i].x, coords[i].y, coords[i].z);
}

/// a[i] = (x, y, lod, g): out[3i] = tex2DLod, out[3i+1] = tex2DGrad with
/// gradients (g, 0) and (0.5g, g), out[3i+2] = tex2D.
__global__ void sampleMip(cudaTextureObject_t tex, float4 *out, const float4 *a,
                          int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[3 * i] = tex2DLod<float4>(tex, a[i].x, a[i].y, a[i].z);
    out[3 * i + 1] =
        tex2DGrad<float4>(tex, a[i].x, a[i].y, make_float2(a[i].w, 0.f),
                          make_float2(0.5f * a[i].w, a[i].w));
    out[3 * i + 2] = tex2D<float4>(tex, a[i].x, a[i].y);
  }
}

__global__ void fetch1D(cudaTextureObject_t tex, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = tex1Dfetch<float>(tex, i * 3 - 5); // outside reads 0
}

/// The 2x2 box filter: linear filtering at the texel corner (x+1, y+1)
/// weighs texels (x..x+1, y..y+1) by 1/4 each; written through a surface.
__global__ void boxToSurface(cudaTextureObject_t tex, cudaSurfaceObject_t surf,
                             int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) {
    float4 v = tex2D<float4>(tex, x + 1.0f, y + 1.0f);
    surf2Dwrite(v, surf, x * int(sizeof(float4)), y);
  }
}

namespace {

const char *modeName(AddressMode m) {
  switch (m) {
  case AddressMode::Wrap:
    return "wrap";
  case AddressMode::Clamp:
    return "clamp";
  case AddressMode::Mirror:
    return "mirror";
  case AddressMode::Border:
    return "border";
  }
  return "?";
}

std::vector<float> randomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<float> v(n);
  for (float &f : v)
    f = u(rng);
  return v;
}

/// `texture_filter native`: only what a GPU must agree with.
bool native = false;

RefTex image(int w, int h, int d, int chans, uint32_t seed) {
  RefTex t;
  t.w = w;
  t.h = h;
  t.d = d;
  t.chans = chans;
  t.texels = randomFloats(size_t(w) * h * d * chans, seed);
  return t;
}

bool sameBits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

/// Compares `n` samples of `chans` channels with the reference's.
void compare(const char *what, const std::vector<float> &got,
             const std::vector<std::array<float, 4>> &want, int chans) {
  for (size_t i = 0; i < want.size(); ++i)
    for (int c = 0; c < chans; ++c)
      EXPECT(sameBits(got[i * chans + c], want[i][c]),
             "%s: sample %zu channel %d is %.9g, the reference %.9g", what, i,
             c, got[i * chans + c], want[i][c]);
}

cudaTextureDesc textureDesc(const RefTex &ref) {
  cudaTextureDesc d;
  std::memset(&d, 0, sizeof d);
  for (int k = 0; k < 3; ++k)
    d.addressMode[k] = cudaTextureAddressMode(ref.mode[k]);
  d.filterMode = ref.linear ? cudaFilterModeLinear : cudaFilterModePoint;
  d.readMode = cudaReadModeElementType;
  d.normalizedCoords = ref.normalized;
  for (int c = 0; c < 4; ++c)
    d.borderColor[c] = ref.border[c];
  return d;
}

cudaResourceDesc arrayResource(cudaArray_t array) {
  cudaResourceDesc r;
  std::memset(&r, 0, sizeof r);
  r.resType = cudaResourceTypeArray;
  r.res.array.array = array;
  return r;
}

/// A w x h float4 array holding `ref`'s texels, checked by reading it back.
cudaArray_t uploadArray(const RefTex &ref) {
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float4>();
  cudaArray_t array;
  CHECK(cudaMallocArray(&array, &f, ref.w, ref.h));
  size_t row = ref.w * sizeof(float4);
  CHECK(cudaMemcpy2DToArray(array, 0, 0, ref.texels.data(), row, row, ref.h,
                            cudaMemcpyHostToDevice));
  std::vector<float> back(ref.texels.size(), -1.0f);
  CHECK(cudaMemcpy2DFromArray(back.data(), row, array, 0, 0, row, ref.h,
                              cudaMemcpyDeviceToHost));
  EXPECT(std::memcmp(back.data(), ref.texels.data(), back.size() * 4) == 0,
         "the array does not read back what was copied in");
  return array;
}

/// Runs `kernel(tex, out, coords, n)` over the `n` coordinates of type C
/// packed in `coords`; returns the `n` results of type R, as floats.
template <typename C, typename R>
std::vector<float>
runSamples(void (*kernel)(cudaTextureObject_t, R *, const C *, int),
           cudaTextureObject_t tex, const std::vector<float> &coords, int n) {
  C *dc;
  R *dout;
  CHECK(cudaMalloc(&dc, n * sizeof(C)));
  CHECK(cudaMalloc(&dout, n * sizeof(R)));
  CHECK(cudaMemcpy(dc, coords.data(), n * sizeof(C), cudaMemcpyHostToDevice));
  kernel<<<(n + 63) / 64, 64>>>(tex, dout, dc, n);
  CHECK(cudaGetLastError());
  std::vector<float> got(n * sizeof(R) / sizeof(float));
  CHECK(cudaMemcpy(got.data(), dout, n * sizeof(R), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dc));
  CHECK(cudaFree(dout));
  return got;
}

/// Samples `tex` at `n` coordinates for `ref` and compares with it.
void check2D(const char *what, cudaTextureObject_t tex, const RefTex &ref,
             uint32_t seed) {
  const int n = 400;
  std::vector<float> c =
      wooly::texref::texCoords(ref.w, ref.h, ref.normalized, seed, n);
  std::vector<float> got = runSamples(sample2D, tex, c, n);
  std::vector<std::array<float, 4>> want;
  for (int i = 0; i < n; ++i)
    want.push_back(ref.sample(c[2 * i], c[2 * i + 1], 0, 2));
  compare(what, got, want, 4);
}

/// Linear filtering in each address mode over a float4 array.
void addressModes() {
  RefTex ref = image(37, 23, 1, 4, 11);
  cudaArray_t array = uploadArray(ref);
  ref.linear = true;
  ref.border[0] = 0.25f;
  ref.border[1] = -1.5f;
  ref.border[2] = 3.0f;
  ref.border[3] = 0.5f;
  uint32_t seed = 100;
  for (bool normalized : {true, false})
    for (AddressMode m : {AddressMode::Wrap, AddressMode::Clamp,
                          AddressMode::Mirror, AddressMode::Border}) {
      // CUDA wraps and mirrors normalized coordinates only.
      if (!normalized && (m == AddressMode::Wrap || m == AddressMode::Mirror))
        continue;
      ref.normalized = normalized;
      ref.mode[0] = ref.mode[1] = ref.mode[2] = m;
      cudaResourceDesc r = arrayResource(array);
      cudaTextureDesc d = textureDesc(ref);
      cudaTextureObject_t tex;
      CHECK(cudaCreateTextureObject(&tex, &r, &d, nullptr));
      std::string what = std::string("linear ") + modeName(m) +
                         (normalized ? " normalized" : " texels");
      check2D(what.c_str(), tex, ref, seed++);
      std::printf("%s: 400 samples match\n", what.c_str());
      CHECK(cudaDestroyTextureObject(tex));
    }
  CHECK(cudaFreeArray(array));
}

/// A box filter reads the image through a texture and writes a second
/// array through a surface object.
void surfaceFilter() {
  RefTex ref = image(29, 17, 1, 4, 12);
  cudaArray_t in = uploadArray(ref);
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float4>();
  cudaArray_t out;
  CHECK(cudaMallocArray(&out, &f, ref.w, ref.h, cudaArraySurfaceLoadStore));
  ref.linear = true;
  cudaResourceDesc rin = arrayResource(in), rout = arrayResource(out);
  cudaTextureDesc d = textureDesc(ref); // clamp, texel coordinates
  cudaTextureObject_t tex;
  cudaSurfaceObject_t surf;
  CHECK(cudaCreateTextureObject(&tex, &rin, &d, nullptr));
  CHECK(cudaCreateSurfaceObject(&surf, &rout));
  boxToSurface<<<dim3((ref.w + 7) / 8, (ref.h + 7) / 8), dim3(8, 8)>>>(
      tex, surf, ref.w, ref.h);
  CHECK(cudaGetLastError());
  std::vector<float> got(ref.texels.size());
  size_t row = ref.w * sizeof(float4);
  CHECK(cudaMemcpy2DFromArray(got.data(), row, out, 0, 0, row, ref.h,
                              cudaMemcpyDeviceToHost));
  std::vector<std::array<float, 4>> want;
  for (int y = 0; y < ref.h; ++y)
    for (int x = 0; x < ref.w; ++x)
      want.push_back(ref.sample(x + 1.0f, y + 1.0f, 0, 2));
  compare("box filter through a surface", got, want, 4);
  std::printf("box filter through a surface: %d texels match, out[16][28].x "
              "= %.6f\n",
              ref.w * ref.h, got[(16 * ref.w + 28) * 4]);

  cudaResourceDesc rback;
  CHECK(cudaGetSurfaceObjectResourceDesc(&rback, surf));
  EXPECT(rback.resType == cudaResourceTypeArray && rback.res.array.array == out,
         "cudaGetSurfaceObjectResourceDesc does not give the array back");
  CHECK(cudaDestroySurfaceObject(surf));
  CHECK(cudaDestroyTextureObject(tex));
  CHECK(cudaFreeArray(in));
  CHECK(cudaFreeArray(out));
}

/// What image code does most: an 8-bit RGBA image (uchar4 array) read as
/// normalized floats with linear filtering, in linear colour and as sRGB.
void rgba8() {
  const int w = 21, h = 13;
  std::mt19937 rng(23);
  std::vector<uint8_t> bytes(size_t(w) * h * 4);
  for (uint8_t &b : bytes)
    b = uint8_t(rng());
  cudaChannelFormatDesc f = cudaCreateChannelDesc<uchar4>();
  cudaArray_t array;
  CHECK(cudaMallocArray(&array, &f, w, h));
  CHECK(cudaMemcpy2DToArray(array, 0, 0, bytes.data(), w * 4, w * 4, h,
                            cudaMemcpyHostToDevice));
  for (bool srgb : {false, true}) {
    RefTex ref = wooly::texref::unorm8Tex(w, h, bytes, srgb);
    ref.linear = true;
    ref.normalized = true;
    ref.mode[0] = ref.mode[1] = AddressMode::Wrap;
    cudaResourceDesc r = arrayResource(array);
    cudaTextureDesc td = textureDesc(ref);
    td.readMode = cudaReadModeNormalizedFloat;
    td.sRGB = srgb;
    cudaTextureObject_t tex;
    CHECK(cudaCreateTextureObject(&tex, &r, &td, nullptr));
    const char *what = srgb ? "rgba8 sRGB linear wrap" : "rgba8 linear wrap";
    check2D(what, tex, ref, srgb ? 24 : 25);
    std::printf("%s: 400 samples match\n", what);
    CHECK(cudaDestroyTextureObject(tex));
  }
  CHECK(cudaFreeArray(array));
}

/// A one-channel texture over cudaMallocPitch memory.
void pitch2D() {
  RefTex ref = image(50, 19, 1, 1, 13);
  float *d;
  size_t pitch = 0;
  CHECK(cudaMallocPitch(reinterpret_cast<void **>(&d), &pitch,
                        ref.w * sizeof(float), ref.h));
  CHECK(cudaMemcpy2D(d, pitch, ref.texels.data(), ref.w * sizeof(float),
                     ref.w * sizeof(float), ref.h, cudaMemcpyHostToDevice));
  ref.linear = true;
  ref.mode[0] = AddressMode::Clamp;
  ref.mode[1] = AddressMode::Border;
  cudaResourceDesc r;
  std::memset(&r, 0, sizeof r);
  r.resType = cudaResourceTypePitch2D;
  r.res.pitch2D.devPtr = d;
  r.res.pitch2D.desc = cudaCreateChannelDesc<float>();
  r.res.pitch2D.width = ref.w;
  r.res.pitch2D.height = ref.h;
  r.res.pitch2D.pitchInBytes = pitch;
  cudaTextureDesc td = textureDesc(ref);
  cudaTextureObject_t tex;
  CHECK(cudaCreateTextureObject(&tex, &r, &td, nullptr));

  const int n = 400;
  std::vector<float> c = wooly::texref::texCoords(ref.w, ref.h, false, 14, n);
  std::vector<float> got = runSamples(sample2D1, tex, c, n);
  std::vector<std::array<float, 4>> want;
  for (int i = 0; i < n; ++i)
    want.push_back(ref.sample(c[2 * i], c[2 * i + 1], 0, 2));
  compare("pitch2D linear", got, want, 1);
  std::printf("pitch2D (pitch %zu) linear clamp/border: %d samples match\n",
              pitch, n);

  // The descriptors come back as they were given.
  cudaResourceDesc rback;
  cudaTextureDesc tback;
  CHECK(cudaGetTextureObjectResourceDesc(&rback, tex));
  CHECK(cudaGetTextureObjectTextureDesc(&tback, tex));
  EXPECT(rback.resType == cudaResourceTypePitch2D &&
             rback.res.pitch2D.devPtr == d &&
             rback.res.pitch2D.pitchInBytes == pitch &&
             tback.filterMode == cudaFilterModeLinear &&
             tback.addressMode[1] == cudaAddressModeBorder,
         "the texture object's descriptors do not come back");
  CHECK(cudaDestroyTextureObject(tex));
  CHECK(cudaFree(d));
}

/// tex1Dfetch over linear memory: texel indices, 0 outside.
void linearFetch() {
  const int texels = 300, n = 128;
  std::vector<float> v = randomFloats(texels, 15);
  float *d, *dout;
  CHECK(cudaMalloc(&d, texels * sizeof(float)));
  CHECK(cudaMalloc(&dout, n * sizeof(float)));
  CHECK(
      cudaMemcpy(d, v.data(), texels * sizeof(float), cudaMemcpyHostToDevice));
  cudaResourceDesc r;
  std::memset(&r, 0, sizeof r);
  r.resType = cudaResourceTypeLinear;
  r.res.linear.devPtr = d;
  r.res.linear.desc = cudaCreateChannelDesc<float>();
  r.res.linear.sizeInBytes = texels * sizeof(float);
  cudaTextureDesc td;
  std::memset(&td, 0, sizeof td);
  cudaTextureObject_t tex;
  CHECK(cudaCreateTextureObject(&tex, &r, &td, nullptr));
  fetch1D<<<2, 64>>>(tex, dout, n);
  CHECK(cudaGetLastError());
  std::vector<float> got(n);
  CHECK(
      cudaMemcpy(got.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    int at = i * 3 - 5;
    float want = at >= 0 && at < texels ? v[at] : 0.0f;
    EXPECT(sameBits(got[i], want), "tex1Dfetch(%d) = %g, expected %g", at,
           got[i], want);
  }
  std::printf("tex1Dfetch over linear memory: %d fetches match\n", n);
  CHECK(cudaDestroyTextureObject(tex));
  CHECK(cudaFree(d));
  CHECK(cudaFree(dout));
}

/// A 3D float4 array through cudaMalloc3DArray and cudaMemcpy3D, sampled
/// with trilinear filtering and wrapped normalized coordinates.
void volume() {
  RefTex ref = image(6, 5, 4, 4, 16);
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float4>();
  cudaArray_t array;
  CHECK(cudaMalloc3DArray(&array, &f, make_cudaExtent(ref.w, ref.h, ref.d)));
  cudaMemcpy3DParms p;
  std::memset(&p, 0, sizeof p);
  p.srcPtr = make_cudaPitchedPtr(ref.texels.data(), ref.w * sizeof(float4),
                                 ref.w, ref.h);
  p.dstArray = array;
  p.extent = make_cudaExtent(ref.w, ref.h, ref.d);
  p.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&p));
  // One slice back (z = 2), through cudaMemcpy3D from the array.
  std::vector<float> slice(ref.w * ref.h * 4, -1.0f);
  std::memset(&p, 0, sizeof p);
  p.srcArray = array;
  p.srcPos = make_cudaPos(0, 0, 2);
  p.dstPtr =
      make_cudaPitchedPtr(slice.data(), ref.w * sizeof(float4), ref.w, ref.h);
  p.extent = make_cudaExtent(ref.w, ref.h, 1);
  p.kind = cudaMemcpyDeviceToHost;
  CHECK(cudaMemcpy3D(&p));
  EXPECT(std::memcmp(slice.data(), &ref.texels[2 * ref.w * ref.h * 4],
                     slice.size() * 4) == 0,
         "slice 2 of the 3D array does not read back");

  ref.linear = true;
  ref.normalized = true;
  ref.mode[0] = ref.mode[1] = ref.mode[2] = AddressMode::Wrap;
  cudaResourceDesc r = arrayResource(array);
  cudaTextureDesc td = textureDesc(ref);
  cudaTextureObject_t tex;
  CHECK(cudaCreateTextureObject(&tex, &r, &td, nullptr));
  const int n = 256;
  std::vector<float> c = randomFloats(n * 4, 17);
  for (float &x : c)
    x = x / 4.0f + 0.5f; // [-0.5, 1.5): wraps on both sides
  std::vector<float> got = runSamples(sample3D, tex, c, n);
  std::vector<std::array<float, 4>> want;
  for (int i = 0; i < n; ++i)
    want.push_back(ref.sample(c[4 * i], c[4 * i + 1], c[4 * i + 2], 3));
  compare("3D trilinear wrap", got, want, 4);
  std::printf("3D array (cudaMemcpy3D) trilinear wrap: %d samples match\n", n);

  cudaChannelFormatDesc fback;
  cudaExtent eback;
  unsigned flags = 1;
  CHECK(cudaArrayGetInfo(&fback, &eback, &flags, array));
  EXPECT(fback.x == 32 && fback.w == 32 &&
             fback.f == cudaChannelFormatKindFloat && eback.width == 6 &&
             eback.height == 5 && eback.depth == 4 && flags == 0,
         "cudaArrayGetInfo does not describe the array");
  CHECK(cudaDestroyTextureObject(tex));
  CHECK(cudaFreeArray(array));
}

/// A layered array (cudaArrayLayered): linear filtering within the layer a
/// sample names, layers clamped; and a cubemap (cudaArrayCubemap) sampled
/// along the six axes, each the centre of its face (point sampling: texel
/// (2, 2) of the 4 x 4 face).
void layeredAndCube() {
  const int w = 6, h = 5, layers = 3, n = 200;
  RefTex ref = image(w, h, layers, 4, 18);
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float4>();
  cudaArray_t array;
  CHECK(cudaMalloc3DArray(&array, &f, make_cudaExtent(w, h, layers),
                          cudaArrayLayered));
  cudaMemcpy3DParms p;
  std::memset(&p, 0, sizeof p);
  p.srcPtr = make_cudaPitchedPtr(ref.texels.data(), w * sizeof(float4), w, h);
  p.dstArray = array;
  p.extent = make_cudaExtent(w, h, layers);
  p.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&p));
  ref.linear = true;
  cudaResourceDesc r = arrayResource(array);
  cudaTextureDesc td = textureDesc(ref); // clamp, texel coordinates
  cudaTextureObject_t tex;
  CHECK(cudaCreateTextureObject(&tex, &r, &td, nullptr));
  std::mt19937 rng(19);
  std::uniform_real_distribution<float> u(-1.5f, 7.5f);
  std::vector<float> c(n * 4);
  for (int i = 0; i < n; ++i) {
    c[4 * i] = u(rng);
    c[4 * i + 1] = u(rng);
    c[4 * i + 2] = float(int(rng() % 5) - 1); // layers -1..3: clamped (-1: 2)
    c[4 * i + 3] = 0.0f;
  }
  std::vector<float> got = runSamples(sampleLayered, tex, c, n);
  std::vector<std::array<float, 4>> want;
  for (int i = 0; i < n; ++i) {
    int layer = wooly::texref::layerIndex(int(c[4 * i + 2]), layers);
    RefTex one = ref;
    one.d = 1;
    one.texels.assign(ref.texels.begin() + size_t(layer) * w * h * 4,
                      ref.texels.begin() + size_t(layer + 1) * w * h * 4);
    want.push_back(one.sample(c[4 * i], c[4 * i + 1], 0, 2));
  }
  compare("layered linear", got, want, 4);
  std::printf("layered array (cudaArrayLayered) linear: %d samples match\n", n);
  CHECK(cudaDestroyTextureObject(tex));
  CHECK(cudaFreeArray(array));

  const int face = 4;
  RefTex cube = image(face, face, 6, 4, 20);
  CHECK(cudaMalloc3DArray(&array, &f, make_cudaExtent(face, face, 6),
                          cudaArrayCubemap));
  std::memset(&p, 0, sizeof p);
  p.srcPtr = make_cudaPitchedPtr(cube.texels.data(), face * sizeof(float4),
                                 face, face);
  p.dstArray = array;
  p.extent = make_cudaExtent(face, face, 6);
  p.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&p));
  r = arrayResource(array);
  std::memset(&td, 0, sizeof td);
  td.normalizedCoords = 1; // cubemaps take directions
  CHECK(cudaCreateTextureObject(&tex, &r, &td, nullptr));
  // +x, -x, +y, -y, +z, -z: faces 0 to 5.
  std::vector<float> dirs = {1, 0,  0, 0, -1, 0, 0, 0, 0, 1, 0,  0,
                             0, -1, 0, 0, 0,  0, 1, 0, 0, 0, -1, 0};
  got = runSamples(sampleCube, tex, dirs, 6);
  want.clear();
  for (int k = 0; k < 6; ++k) {
    std::array<float, 4> t;
    for (int ch = 0; ch < 4; ++ch)
      t[ch] = cube.texels[((k * face + 2) * face + 2) * 4 + ch];
    want.push_back(t);
  }
  compare("cubemap face centres", got, want, 4);
  std::printf("cubemap (cudaArrayCubemap): the 6 face centres match\n");
  CHECK(cudaDestroyTextureObject(tex));
  CHECK(cudaFreeArray(array));
}

/// cudaMemcpyToArray / FromArray (row after row from an offset, the
/// asynchronous ones too) and cudaMemcpy2DArrayToArray. (CUDA deprecates
/// the first ones; programs still call them.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void arrayCopies() {
  const int w = 8, h = 4, n = w * h;
  std::vector<float> v(n), patch(12), back(n, -1.0f);
  for (int i = 0; i < n; ++i)
    v[i] = float(i);
  for (int i = 0; i < 12; ++i)
    patch[i] = 100.0f + float(i);
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
  cudaArray_t a, b;
  CHECK(cudaMallocArray(&a, &f, w, h));
  CHECK(cudaMallocArray(&b, &f, w, h));
  CHECK(cudaMemcpyToArray(a, 0, 0, v.data(), n * 4, cudaMemcpyHostToDevice));
  // 12 floats from row 1, float 5 on: the rest of row 1 and on into row 2.
  CHECK(cudaMemcpyToArrayAsync(a, 5 * 4, 1, patch.data(), 12 * 4,
                               cudaMemcpyHostToDevice, 0));
  for (int i = 0; i < 12; ++i)
    v[w + 5 + i] = patch[i];
  // Rows 1-2, floats 2-6, into b at (1, 0); the rest of b stays 0.
  CHECK(cudaMemcpy2DArrayToArray(b, 1 * 4, 0, a, 2 * 4, 1, 5 * 4, 2,
                                 cudaMemcpyDeviceToDevice));
  CHECK(
      cudaMemcpyFromArray(back.data(), a, 0, 0, n * 4, cudaMemcpyDeviceToHost));
  EXPECT(back == v, "cudaMemcpyToArray(Async) / FromArray lost texels");
  std::vector<float> want(n, 0.0f), got(n, -1.0f);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 5; ++x)
      want[y * w + 1 + x] = v[(1 + y) * w + 2 + x];
  CHECK(cudaMemcpyFromArrayAsync(got.data(), b, 0, 0, n * 4,
                                 cudaMemcpyDeviceToHost, 0));
  CHECK(cudaStreamSynchronize(0));
  EXPECT(got == want, "cudaMemcpy2DArrayToArray copied the wrong texels");
  // Past the array's end: refused.
  cudaError_t e =
      cudaMemcpyToArray(a, 4, h - 1, v.data(), w * 4, cudaMemcpyHostToDevice);
  EXPECT(e == cudaErrorInvalidValue, "a copy past the array was accepted");
  cudaGetLastError();
  std::printf("array copies: a[2][4] = %g, b[1][5] = %g\n", back[2 * w + 4],
              got[w + 5]);
  CHECK(cudaFreeArray(a));
  CHECK(cudaFreeArray(b));
}
#pragma GCC diagnostic pop

/// A 3-level mipmap (cudaMallocMipmappedArray, each level filled through
/// cudaGetMipmappedArrayLevel and cudaMemcpy2DToArray) sampled with
/// tex2DLod, tex2DGrad and tex2D, linear in and between levels, with a
/// bias and clamps; then what must fail cleanly.
void mipmapped() {
  wooly::texref::RefMip m;
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float4>();
  cudaMipmappedArray_t mip;
  CHECK(cudaMallocMipmappedArray(&mip, &f, make_cudaExtent(16, 8, 0), 3));
  for (unsigned l = 0; l < 3; ++l) {
    RefTex t = image(16 >> l, 8 >> l, 1, 4, 700 + l);
    t.linear = t.normalized = true;
    t.mode[0] = t.mode[1] = AddressMode::Wrap;
    cudaArray_t level;
    CHECK(cudaGetMipmappedArrayLevel(&level, mip, l));
    cudaExtent e;
    CHECK(cudaArrayGetInfo(nullptr, &e, nullptr, level));
    EXPECT(e.width == size_t(t.w) && e.height == size_t(t.h),
           "level %u is %zux%zu", l, e.width, e.height);
    size_t row = t.w * sizeof(float4);
    CHECK(cudaMemcpy2DToArray(level, 0, 0, t.texels.data(), row, row, t.h,
                              cudaMemcpyHostToDevice));
    m.levels.push_back(t);
  }
  m.mipLinear = true;
  m.bias = 0.25f;
  m.minClamp = 0.125f;
  m.maxClamp = 1.75f;
  cudaResourceDesc r;
  std::memset(&r, 0, sizeof r);
  r.resType = cudaResourceTypeMipmappedArray;
  r.res.mipmap.mipmap = mip;
  cudaTextureDesc d = textureDesc(m.levels[0]);
  d.mipmapFilterMode = cudaFilterModeLinear;
  d.mipmapLevelBias = m.bias;
  d.minMipmapLevelClamp = m.minClamp;
  d.maxMipmapLevelClamp = m.maxClamp;
  cudaTextureObject_t tex;
  CHECK(cudaCreateTextureObject(&tex, &r, &d, nullptr));
  const int n = 256;
  std::vector<float> a(4 * n);
  uint32_t s = 12345;
  auto next = [&] {
    s = s * 1664525u + 1013904223u;
    return float(s >> 8) / float(1 << 24);
  };
  for (int i = 0; i < n; ++i) {
    a[4 * i] = next() * 1.4f - 0.2f;
    a[4 * i + 1] = next() * 1.4f - 0.2f;
    a[4 * i + 2] = next() * 3.5f - 0.5f;
    a[4 * i + 3] = next() * 0.3f;
  }
  float4 *da, *dout;
  CHECK(cudaMalloc(&da, n * sizeof(float4)));
  CHECK(cudaMalloc(&dout, 3 * n * sizeof(float4)));
  CHECK(cudaMemcpy(da, a.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
  sampleMip<<<(n + 63) / 64, 64>>>(tex, dout, da, n);
  CHECK(cudaGetLastError());
  std::vector<float> got(12 * n);
  CHECK(cudaMemcpy(got.data(), dout, 3 * n * sizeof(float4),
                   cudaMemcpyDeviceToHost));
  CHECK(cudaFree(da));
  CHECK(cudaFree(dout));
  std::vector<std::array<float, 4>> want;
  for (int i = 0; i < n; ++i)
    for (const auto &v :
         m.lodGradPlain(a[4 * i], a[4 * i + 1], a[4 * i + 2], a[4 * i + 3]))
      want.push_back(v);
  compare("mipmapped", got, want, 4);
  std::printf("mipmapped (3 levels) tex2DLod/tex2DGrad/tex2D: %d samples "
              "match\n",
              3 * n);
  CHECK(cudaDestroyTextureObject(tex));
  if (native) {
    // The handles' lifetime checks below are Wooly's (an H100 frees a
    // level on its own without an error).
    CHECK(cudaFreeMipmappedArray(mip));
    return;
  }
  cudaArray_t level0;
  CHECK(cudaGetMipmappedArrayLevel(&level0, mip, 0));
  cudaError_t e = cudaFreeArray(level0);
  std::printf("cudaFreeArray of a level: %s\n", cudaGetErrorName(e));
  EXPECT(e != cudaSuccess, "a level was freed on its own");
  cudaGetLastError();
  cudaArray_t none;
  e = cudaGetMipmappedArrayLevel(&none, mip, 3);
  std::printf("level 3 of 3: %s\n", cudaGetErrorName(e));
  EXPECT(e != cudaSuccess, "a level past the last was given");
  cudaGetLastError();
  CHECK(cudaFreeMipmappedArray(mip));
  e = cudaGetMipmappedArrayLevel(&none, mip, 0);
  std::printf("freed mipmapped array: %s\n", cudaGetErrorName(e));
  EXPECT(e == cudaErrorInvalidResourceHandle,
         "a freed mipmapped array gave a level");
  cudaGetLastError();
}

/// What Wooly does not support yet fails with cudaErrorNotSupported.
void unsupported() {
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float4>();
  cudaArray_t array;
  CHECK(cudaMallocArray(&array, &f, 8, 8));
  cudaResourceDesc r = arrayResource(array);
  cudaTextureDesc td;
  std::memset(&td, 0, sizeof td);
  td.filterMode = cudaFilterModeLinear;
  td.maxAnisotropy = 4;
  cudaTextureObject_t tex = 0;
  cudaError_t e = cudaCreateTextureObject(&tex, &r, &td, nullptr);
  std::printf("anisotropic filtering: %s\n", cudaGetErrorName(e));
  EXPECT(e == cudaErrorNotSupported, "anisotropic filtering was accepted");
  cudaGetLastError();

  cudaMipmappedArray_t mip;
  CHECK(cudaMallocMipmappedArray(&mip, &f, make_cudaExtent(8, 8, 0), 3));
  std::memset(&r, 0, sizeof r);
  r.resType = cudaResourceTypeMipmappedArray;
  r.res.mipmap.mipmap = mip;
  td.maxAnisotropy = 0;
  td.normalizedCoords = 0;
  e = cudaCreateTextureObject(&tex, &r, &td, nullptr);
  std::printf("mipmapped texture in texel coordinates: %s\n",
              cudaGetErrorName(e));
  EXPECT(e == cudaErrorNotSupported,
         "a mipmapped texture in texel coordinates was accepted");
  cudaGetLastError();
  CHECK(cudaFreeMipmappedArray(mip));

  // Not an error of Wooly's: integer texels cannot be filtered.
  cudaChannelFormatDesc fi = cudaCreateChannelDesc<int>();
  cudaArray_t ints;
  CHECK(cudaMallocArray(&ints, &fi, 8, 8));
  r = arrayResource(ints);
  e = cudaCreateTextureObject(&tex, &r, &td, nullptr);
  std::printf("linear filtering of int texels: %s\n", cudaGetErrorName(e));
  EXPECT(e == cudaErrorInvalidValue, "filtering int texels was accepted");
  cudaGetLastError();
  CHECK(cudaFreeArray(ints));
  CHECK(cudaFreeArray(array));
}

/// A forged handle: the launch fails cleanly (sticky, like any fault);
/// cudaDeviceReset opens a new session that works.
void forged() {
  float2 *dc;
  float4 *dout;
  CHECK(cudaMalloc(&dc, 64 * sizeof(float2)));
  CHECK(cudaMalloc(&dout, 64 * sizeof(float4)));
  sample2D<<<1, 64>>>(0x5eed0000dead0042ull, dout, dc, 64);
  cudaError_t e = cudaDeviceSynchronize();
  std::printf("forged texture handle: %s\n", cudaGetErrorName(e));
  EXPECT(e == cudaErrorIllegalAddress, "a forged handle was not refused");
  CHECK(cudaDeviceReset());
  std::vector<float> ok(4, 0.0f);
  CHECK(cudaMalloc(&dc, 64));
  CHECK(cudaMemcpy(ok.data(), dc, 16, cudaMemcpyDeviceToHost));
  std::printf("after cudaDeviceReset: the device works\n");
}

/// Two tenants: one publishes a texture object's handle, the other may not
/// use it.
bool waitFor(const std::string &path) {
  for (int i = 0; i < 600; ++i) {
    if (std::ifstream(path).good())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

void publish(const std::string &file) {
  RefTex ref = image(16, 16, 1, 4, 21);
  cudaArray_t array = uploadArray(ref);
  ref.linear = true;
  cudaResourceDesc r = arrayResource(array);
  cudaTextureDesc td = textureDesc(ref);
  cudaTextureObject_t tex;
  CHECK(cudaCreateTextureObject(&tex, &r, &td, nullptr));
  {
    std::ofstream out(file + ".tmp");
    out << tex << "\n";
  }
  std::rename((file + ".tmp").c_str(), file.c_str());
  EXPECT(waitFor(file + ".done"), "the other tenant never finished");
  // Still ours and intact.
  check2D("publisher's texture", tex, ref, 22);
  std::printf("publisher: its texture still samples right\n");
  CHECK(cudaDestroyTextureObject(tex));
  CHECK(cudaFreeArray(array));
}

void steal(const std::string &file) {
  EXPECT(waitFor(file), "no handle was published");
  unsigned long long tex = 0;
  std::ifstream(file) >> tex;
  cudaError_t e = cudaDestroyTextureObject(tex);
  std::printf("destroying another tenant's texture: %s\n", cudaGetErrorName(e));
  EXPECT(e != cudaSuccess, "another tenant's texture was destroyed");
  cudaGetLastError();
  float2 *dc;
  float4 *dout;
  CHECK(cudaMalloc(&dc, 64 * sizeof(float2)));
  CHECK(cudaMalloc(&dout, 64 * sizeof(float4)));
  sample2D<<<1, 64>>>(tex, dout, dc, 64);
  e = cudaDeviceSynchronize();
  std::printf("sampling another tenant's texture: %s\n", cudaGetErrorName(e));
  EXPECT(e == cudaErrorIllegalAddress,
         "another tenant's texture object was usable");
  std::ofstream(file + ".done") << "done\n";
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "publish" && argc > 2) {
    publish(argv[2]);
  } else if (mode == "steal" && argc > 2) {
    steal(argv[2]);
  } else {
    // `texture_filter native`, run with NVIDIA's own libcudart on a GPU,
    // checks the reference itself against the hardware: every sampling
    // check, without the parts that test Wooly's refusals and fault
    // containment (which a GPU answers differently).
    native = mode == "native";
    addressModes();
    surfaceFilter();
    rgba8();
    pitch2D();
    linearFetch();
    volume();
    layeredAndCube();
    arrayCopies();
    mipmapped();
    if (!native) {
      unsupported();
      forged();
    }
  }
  app::pass();
  return 0;
}
