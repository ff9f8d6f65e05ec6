//===- texture_driver.cpp - Textures and surfaces through the driver API
//---===//
//
// The driver API's side of texture_filter.cu, whose kernels it loads as PTX
// (argv[1], texture_filter.ptx, made by nvcc -ptx at build time):
// cuArrayCreate, cuArray3DCreate (surface load/store), cuMemcpy2D and
// cuMemcpy3D to and from arrays, cuMemAllocPitch, cuTexObjectCreate over an
// array and over pitch-linear memory (flags: normalized coordinates, read as
// integer), cuSurfObjectCreate, the descriptor getters, and a format that is
// not supported yet. Every sample is compared bit for bit with the reference
// of unittests/Runtime/TextureReference.h. Links against libcuda.so.1 only.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "texture_driver"
#define CUDA_APP_DRIVER_API
#include "CudaApp.h"

#include "DriverTextures.h"

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using app::arrayCopy;
using app::image;
using wooly::AddressMode;
using wooly::texref::RefTex;

namespace {

std::string readFile(const char *path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    app::fail("cannot read PTX file '%s'", path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

CUDA_TEXTURE_DESC textureDesc(const RefTex &ref) {
  CUDA_TEXTURE_DESC d;
  std::memset(&d, 0, sizeof d);
  for (int k = 0; k < 3; ++k)
    d.addressMode[k] = CUaddress_mode(ref.mode[k]);
  d.filterMode =
      ref.linear ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT;
  d.flags = ref.normalized ? CU_TRSF_NORMALIZED_COORDINATES : 0;
  for (int c = 0; c < 4; ++c)
    d.borderColor[c] = ref.border[c];
  return d;
}

CUDA_RESOURCE_DESC arrayResource(CUarray array) {
  CUDA_RESOURCE_DESC r;
  std::memset(&r, 0, sizeof r);
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = array;
  return r;
}

void compare(const char *what, const std::vector<float> &got,
             const std::vector<std::array<float, 4>> &want, int chans) {
  for (size_t i = 0; i < want.size(); ++i)
    for (int c = 0; c < chans; ++c)
      EXPECT(std::memcmp(&got[i * chans + c], &want[i][c], 4) == 0,
             "%s: sample %zu channel %d is %.9g, the reference %.9g", what, i,
             c, got[i * chans + c], want[i][c]);
}

/// Launches `fn(tex, out, coords, n)` over `ref`'s coordinates and compares
/// with the reference (`chans` floats a result).
void sample(const char *what, CUfunction fn, CUtexObject tex, const RefTex &ref,
            int chans, uint32_t seed) {
  const int n = 400;
  std::vector<float> c =
      wooly::texref::texCoords(ref.w, ref.h, ref.normalized, seed, n);
  CUdeviceptr dc, dout;
  CHECK(cuMemAlloc(&dc, n * 8));
  CHECK(cuMemAlloc(&dout, n * chans * 4));
  CHECK(cuMemcpyHtoD(dc, c.data(), n * 8));
  int count = n;
  void *params[] = {&tex, &dout, &dc, &count};
  CHECK(cuLaunchKernel(fn, (n + 63) / 64, 1, 1, 64, 1, 1, 0, nullptr, params,
                       nullptr));
  std::vector<float> got(n * chans);
  CHECK(cuMemcpyDtoH(got.data(), dout, got.size() * 4));
  std::vector<std::array<float, 4>> want;
  for (int i = 0; i < n; ++i)
    want.push_back(ref.sample(c[2 * i], c[2 * i + 1], 0, 2));
  compare(what, got, want, chans);
  std::printf("%s: %d samples match\n", what, n);
  CHECK(cuMemFree(dc));
  CHECK(cuMemFree(dout));
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    app::fail("usage: %s texture_filter.ptx", argc > 0 ? argv[0] : "");
  std::string ptx = readFile(argv[1]);
  CHECK(cuInit(0));
  CUdevice device;
  CUcontext context;
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx.c_str()));
  CUfunction sample2D, sample2D1, boxToSurface;
  CHECK(
      cuModuleGetFunction(&sample2D, module, "_Z8sample2DyP6float4PK6float2i"));
  CHECK(cuModuleGetFunction(&sample2D1, module, "_Z9sample2D1yPfPK6float2i"));
  CHECK(cuModuleGetFunction(&boxToSurface, module, "_Z12boxToSurfaceyyii"));

  // A float4 array, in and back out.
  RefTex ref = image(37, 23, 1, 4, 31);
  CUDA_ARRAY_DESCRIPTOR ad = {size_t(ref.w), size_t(ref.h), CU_AD_FORMAT_FLOAT,
                              4};
  CUarray array;
  CHECK(cuArrayCreate(&array, &ad));
  size_t row = ref.w * 16;
  CUDA_MEMCPY2D in = arrayCopy(array, ref.texels.data(), row, ref.h, true);
  CHECK(cuMemcpy2D(&in));
  std::vector<float> back(ref.texels.size());
  CUDA_MEMCPY2D out = arrayCopy(array, back.data(), row, ref.h, false);
  CHECK(cuMemcpy2D(&out));
  EXPECT(back == ref.texels, "the array does not read back");
  CUDA_ARRAY_DESCRIPTOR adBack;
  CHECK(cuArrayGetDescriptor(&adBack, array));
  EXPECT(adBack.Width == 37 && adBack.Height == 23 &&
             adBack.Format == CU_AD_FORMAT_FLOAT && adBack.NumChannels == 4,
         "cuArrayGetDescriptor does not describe the array");

  // Linear filtering, mirrored normalized coordinates, then border texels.
  ref.linear = true;
  ref.border[1] = 2.5f;
  uint32_t seed = 40;
  for (bool normalized : {true, false}) {
    ref.normalized = normalized;
    AddressMode m = normalized ? AddressMode::Mirror : AddressMode::Border;
    ref.mode[0] = ref.mode[1] = ref.mode[2] = m;
    CUDA_RESOURCE_DESC r = arrayResource(array);
    CUDA_TEXTURE_DESC td = textureDesc(ref);
    CUtexObject tex;
    CHECK(cuTexObjectCreate(&tex, &r, &td, nullptr));
    sample(normalized ? "cuTexObjectCreate linear mirror normalized"
                      : "cuTexObjectCreate linear border texels",
           sample2D, tex, ref, 4, seed++);
    CUDA_TEXTURE_DESC tdBack;
    CHECK(cuTexObjectGetTextureDesc(&tdBack, tex));
    EXPECT(std::memcmp(&tdBack, &td, sizeof td) == 0,
           "cuTexObjectGetTextureDesc does not give the descriptor back");
    CHECK(cuTexObjectDestroy(tex));
  }

  // A box filter written through a surface object into a 3D-created 2D
  // array.
  ref.normalized = false;
  ref.mode[0] = ref.mode[1] = ref.mode[2] = AddressMode::Clamp;
  CUDA_ARRAY3D_DESCRIPTOR sd = {size_t(ref.w),
                                size_t(ref.h),
                                0,
                                CU_AD_FORMAT_FLOAT,
                                4,
                                CUDA_ARRAY3D_SURFACE_LDST};
  CUarray target;
  CHECK(cuArray3DCreate(&target, &sd));
  CUDA_RESOURCE_DESC rin = arrayResource(array), rout = arrayResource(target);
  CUDA_TEXTURE_DESC td = textureDesc(ref);
  CUtexObject tex;
  CUsurfObject surf;
  CHECK(cuTexObjectCreate(&tex, &rin, &td, nullptr));
  CHECK(cuSurfObjectCreate(&surf, &rout));
  int w = ref.w, h = ref.h;
  void *params[] = {&tex, &surf, &w, &h};
  CHECK(cuLaunchKernel(boxToSurface, (w + 7) / 8, (h + 7) / 8, 1, 8, 8, 1, 0,
                       nullptr, params, nullptr));
  std::vector<float> got(ref.texels.size());
  // Back through cuMemcpy3D from the array.
  CUDA_MEMCPY3D p3;
  std::memset(&p3, 0, sizeof p3);
  p3.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  p3.srcArray = target;
  p3.dstMemoryType = CU_MEMORYTYPE_HOST;
  p3.dstHost = got.data();
  p3.dstPitch = row;
  p3.dstHeight = h;
  p3.WidthInBytes = row;
  p3.Height = h;
  p3.Depth = 1;
  CHECK(cuMemcpy3D(&p3));
  std::vector<std::array<float, 4>> want;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      want.push_back(ref.sample(x + 1.0f, y + 1.0f, 0, 2));
  compare("box filter through cuSurfObjectCreate", got, want, 4);
  std::printf("box filter through cuSurfObjectCreate: %d texels match\n",
              w * h);
  CUDA_RESOURCE_DESC rBack;
  CHECK(cuSurfObjectGetResourceDesc(&rBack, surf));
  EXPECT(rBack.res.array.hArray == target,
         "cuSurfObjectGetResourceDesc does not give the array back");
  CHECK(cuSurfObjectDestroy(surf));
  CHECK(cuTexObjectDestroy(tex));

  // Pitch-linear memory, one float channel.
  RefTex plane = image(50, 19, 1, 1, 32);
  size_t pitch = 0;
  CUdeviceptr d = app::pitchedPlane(plane, pitch);
  plane.linear = true;
  CUDA_RESOURCE_DESC rp;
  std::memset(&rp, 0, sizeof rp);
  rp.resType = CU_RESOURCE_TYPE_PITCH2D;
  rp.res.pitch2D.devPtr = d;
  rp.res.pitch2D.format = CU_AD_FORMAT_FLOAT;
  rp.res.pitch2D.numChannels = 1;
  rp.res.pitch2D.width = plane.w;
  rp.res.pitch2D.height = plane.h;
  rp.res.pitch2D.pitchInBytes = pitch;
  CUDA_TEXTURE_DESC tp = textureDesc(plane);
  CHECK(cuTexObjectCreate(&tex, &rp, &tp, nullptr));
  sample("cuTexObjectCreate pitch2D linear clamp", sample2D1, tex, plane, 1,
         33);
  CHECK(cuTexObjectDestroy(tex));

  // A mipmapped array of 2 levels (8x4, 4x2): cuMipmappedArrayCreate, each
  // level filled through cuMipmappedArrayGetLevel and cuMemcpy2D, a texture
  // over it (linear in and between the levels, the level of detail clamped
  // to [0, 1]) sampled by texture_filter's sampleMip (tex2DLod, tex2DGrad,
  // tex2D) against the reference.
  {
    CUfunction sampleMip;
    CHECK(
        cuModuleGetFunction(&sampleMip, module, "_Z9sampleMipyP6float4PKS_i"));
    CUDA_ARRAY3D_DESCRIPTOR md = {};
    md.Width = 8;
    md.Height = 4;
    md.Format = CU_AD_FORMAT_FLOAT;
    md.NumChannels = 4;
    CUmipmappedArray mip;
    CHECK(cuMipmappedArrayCreate(&mip, &md, 2));
    wooly::texref::RefMip m;
    for (unsigned l = 0; l < 2; ++l) {
      RefTex t = image(8 >> l, 4 >> l, 1, 4, 60 + l);
      t.linear = t.normalized = true;
      t.mode[0] = t.mode[1] = AddressMode::Clamp;
      CUarray level;
      CHECK(cuMipmappedArrayGetLevel(&level, mip, l));
      CUDA_MEMCPY2D c = arrayCopy(level, t.texels.data(), t.w * 16, t.h, true);
      CHECK(cuMemcpy2D(&c));
      m.levels.push_back(t);
    }
    m.mipLinear = true;
    m.maxClamp = 1.0f;
    CUDA_RESOURCE_DESC r = {};
    r.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    r.res.mipmap.hMipmappedArray = mip;
    CUDA_TEXTURE_DESC td = textureDesc(m.levels[0]);
    td.mipmapFilterMode = CU_TR_FILTER_MODE_LINEAR;
    td.maxMipmapLevelClamp = 1.0f;
    CUtexObject tex;
    CHECK(cuTexObjectCreate(&tex, &r, &td, nullptr));
    const int n = 64;
    std::vector<float> a(4 * n);
    for (int i = 0; i < n; ++i) {
      a[4 * i] = float(i % 8) / 7.0f - 0.1f;
      a[4 * i + 1] = float(i / 8) / 7.0f;
      a[4 * i + 2] = float(i % 5) * 0.3f - 0.2f;
      a[4 * i + 3] = float(i % 6) * 0.05f;
    }
    CUdeviceptr da, dout;
    CHECK(cuMemAlloc(&da, n * 16));
    CHECK(cuMemAlloc(&dout, 3 * n * 16));
    CHECK(cuMemcpyHtoD(da, a.data(), n * 16));
    int count = n;
    void *params[] = {&tex, &dout, &da, &count};
    CHECK(cuLaunchKernel(sampleMip, 1, 1, 1, 64, 1, 1, 0, nullptr, params,
                         nullptr));
    std::vector<float> got(12 * n);
    CHECK(cuMemcpyDtoH(got.data(), dout, got.size() * 4));
    std::vector<std::array<float, 4>> want;
    for (int i = 0; i < n; ++i)
      for (const auto &v :
           m.lodGradPlain(a[4 * i], a[4 * i + 1], a[4 * i + 2], a[4 * i + 3]))
        want.push_back(v);
    compare("cuMipmappedArrayCreate", got, want, 4);
    std::printf("cuMipmappedArrayCreate (2 levels): %d samples match\n", 3 * n);
    CHECK(cuTexObjectDestroy(tex));
    CHECK(cuMemFree(da));
    CHECK(cuMemFree(dout));
    CUarray level;
    CHECK(cuMipmappedArrayGetLevel(&level, mip, 1));
    EXPECT(cuArrayDestroy(level) == CUDA_ERROR_INVALID_VALUE,
           "a level was destroyed on its own");
    EXPECT(cuMipmappedArrayGetLevel(&level, mip, 2) == CUDA_ERROR_INVALID_VALUE,
           "a level past the last was given");
    CHECK(cuMipmappedArrayDestroy(mip));
    EXPECT(cuMipmappedArrayGetLevel(&level, mip, 0) ==
               CUDA_ERROR_INVALID_HANDLE,
           "a destroyed mipmapped array gave a level");
    std::printf("cuMipmappedArrayDestroy: its levels are gone\n");
  }

  // Not supported yet: normalized-integer formats (CU_AD_FORMAT_UNORM_INT8X1).
  CUDA_ARRAY_DESCRIPTOR unorm = {8, 8, CUarray_format(0xc0), 1};
  CUarray none;
  CUresult e = cuArrayCreate(&none, &unorm);
  const char *name = nullptr;
  cuGetErrorName(e, &name);
  std::printf("CU_AD_FORMAT_UNORM_INT8X1 array: %s\n", name);
  EXPECT(e == CUDA_ERROR_NOT_SUPPORTED, "a UNORM array was accepted");

  CHECK(cuMemFree(d));
  CHECK(cuArrayDestroy(target));
  CHECK(cuArrayDestroy(array));
  app::pass();
  return 0;
}
