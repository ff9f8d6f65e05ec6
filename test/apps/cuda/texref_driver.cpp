//===- texref_driver.cpp - Texture and surface references (driver API) ---===//
//
// The deprecated texture and surface reference API on a hand-written PTX
// module (nvcc stopped emitting `.texref` with CUDA 12; older PTX and
// hand-written PTX still carry them), loaded with cuModuleLoadData:
// cuModuleGetTexRef/cuModuleGetSurfRef, cuTexRefSetArray, cuTexRefSetAddress,
// cuTexRefSetAddress2D, cuTexRefSetFormat, the address and filter modes,
// flags and border colour and their getters, cuSurfRefSetArray; a rebind
// between two launches queued on one stream (each must see its own
// binding). Every sample is compared bit for bit with the reference of
// unittests/Runtime/TextureReference.h. Links against libcuda.so.1 only.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "texref_driver"
#define CUDA_APP_DRIVER_API
#include "CudaApp.h"

#include "DriverTextures.h"

#include <cstdint>
#include <random>
#include <vector>

using app::arrayCopy;
using app::image;
using wooly::AddressMode;
using wooly::texref::RefTex;

namespace {

/// `tex` (2D, float4 results), `lin` (1D fetches over linear memory) and
/// the surface `surf`, in unified mode.
const char *kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.global .texref tex;
.global .texref lin;
.global .surfref surf;

// out[i] = tex2D(tex, coords[i]) (float4), i < n.
.visible .entry sampleRef(.param .u64 out, .param .u64 coords, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<8>;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r1, %r1, %r2, %r3;
  ld.param.u32 %r4, [n];
  setp.ge.s32 %p1, %r1, %r4;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [coords];
  cvta.to.global.u64 %rd1, %rd1;
  mul.wide.s32 %rd2, %r1, 8;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.v2.f32 {%f1, %f2}, [%rd3];
  tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [tex, {%f1, %f2}];
  ld.param.u64 %rd4, [out];
  cvta.to.global.u64 %rd4, %rd4;
  mul.wide.s32 %rd5, %r1, 16;
  add.s64 %rd6, %rd4, %rd5;
  st.global.v4.f32 [%rd6], {%f3, %f4, %f5, %f6};
DONE:
  ret;
}

// out[i] = tex1Dfetch(lin, 3i - 5).x, i < n (outside the memory: 0).
.visible .entry fetchRef(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<8>;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r1, %r1, %r2, %r3;
  ld.param.u32 %r4, [n];
  setp.ge.s32 %p1, %r1, %r4;
  @%p1 bra DONE;
  mad.lo.s32 %r5, %r1, 3, -5;
  tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [lin, {%r5}];
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mul.wide.s32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f1;
DONE:
  ret;
}

// The 2x2 box filter: tex2D(tex, x + 1, y + 1), written through surf.
.visible .entry boxToSurfRef(.param .u32 w, .param .u32 h)
{
  .reg .pred %p<3>;
  .reg .b32 %r<16>;
  .reg .f32 %f<8>;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r1, %r1, %r2, %r3;
  mov.u32 %r4, %ctaid.y;
  mov.u32 %r5, %ntid.y;
  mov.u32 %r6, %tid.y;
  mad.lo.s32 %r4, %r4, %r5, %r6;
  ld.param.u32 %r7, [w];
  ld.param.u32 %r8, [h];
  setp.ge.s32 %p1, %r1, %r7;
  setp.ge.s32 %p2, %r4, %r8;
  or.pred %p1, %p1, %p2;
  @%p1 bra DONE;
  cvt.rn.f32.s32 %f1, %r1;
  add.f32 %f1, %f1, 0f3F800000;
  cvt.rn.f32.s32 %f2, %r4;
  add.f32 %f2, %f2, 0f3F800000;
  tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [tex, {%f1, %f2}];
  mov.b32 %r9, %f3;
  mov.b32 %r10, %f4;
  mov.b32 %r11, %f5;
  mov.b32 %r12, %f6;
  shl.b32 %r13, %r1, 4;
  sust.b.2d.v4.b32.trap [surf, {%r13, %r4}], {%r9, %r10, %r11, %r12};
DONE:
  ret;
}
)";

/// Sets the sampling state of `ref` on the texture reference `tr`.
void setState(CUtexref tr, const RefTex &ref) {
  for (int k = 0; k < 2; ++k)
    CHECK(cuTexRefSetAddressMode(tr, k, CUaddress_mode(ref.mode[k])));
  CHECK(cuTexRefSetFilterMode(tr, ref.linear ? CU_TR_FILTER_MODE_LINEAR
                                             : CU_TR_FILTER_MODE_POINT));
  CHECK(cuTexRefSetFlags(tr,
                         ref.normalized ? CU_TRSF_NORMALIZED_COORDINATES : 0));
  float border[4];
  std::memcpy(border, ref.border, sizeof border);
  CHECK(cuTexRefSetBorderColor(tr, border));
}

/// A launch of sampleRef over n coordinates on `stream` (not waited for).
struct Sampling {
  static constexpr int n = 400;
  std::vector<float> coords;
  CUdeviceptr dc = 0, dout = 0;

  Sampling(CUfunction fn, const RefTex &ref, uint32_t seed, CUstream stream) {
    coords = wooly::texref::texCoords(ref.w, ref.h, ref.normalized, seed, n);
    CHECK(cuMemAlloc(&dc, n * 8));
    CHECK(cuMemAlloc(&dout, n * 16));
    CHECK(cuMemcpyHtoD(dc, coords.data(), n * 8));
    int count = n;
    void *params[] = {&dout, &dc, &count};
    CHECK(cuLaunchKernel(fn, (n + 63) / 64, 1, 1, 64, 1, 1, 0, stream, params,
                         nullptr));
  }
  /// Compares the results with `ref`'s samples (all four channels).
  void check(const char *what, const RefTex &ref) {
    std::vector<float> got(n * 4);
    CHECK(cuMemcpyDtoH(got.data(), dout, got.size() * 4));
    for (int i = 0; i < n; ++i) {
      std::array<float, 4> want =
          ref.sample(coords[2 * i], coords[2 * i + 1], 0, 2);
      for (int c = 0; c < 4; ++c)
        EXPECT(std::memcmp(&got[i * 4 + c], &want[c], 4) == 0,
               "%s: sample %d channel %d is %.9g, the reference %.9g", what, i,
               c, got[i * 4 + c], want[c]);
    }
    std::printf("%s: %d samples match\n", what, n);
    CHECK(cuMemFree(dc));
    CHECK(cuMemFree(dout));
  }
};

} // namespace

int main() {
  CHECK(cuInit(0));
  CUdevice device;
  CUcontext context;
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  CUmodule module;
  CHECK(cuModuleLoadData(&module, kPtx));
  CUfunction sampleRef, fetchRef, boxToSurfRef;
  CHECK(cuModuleGetFunction(&sampleRef, module, "sampleRef"));
  CHECK(cuModuleGetFunction(&fetchRef, module, "fetchRef"));
  CHECK(cuModuleGetFunction(&boxToSurfRef, module, "boxToSurfRef"));
  CUtexref tr, lr;
  CUsurfref sr;
  CHECK(cuModuleGetTexRef(&tr, module, "tex"));
  CHECK(cuModuleGetTexRef(&lr, module, "lin"));
  CHECK(cuModuleGetSurfRef(&sr, module, "surf"));
  CUtexref none;
  CUresult e = cuModuleGetTexRef(&none, module, "nothere");
  const char *name = nullptr;
  cuGetErrorName(e, &name);
  std::printf("cuModuleGetTexRef of an unknown name: %s\n", name);
  EXPECT(e == CUDA_ERROR_NOT_FOUND, "an unknown reference was found");

  // A float4 array bound with cuTexRefSetArray.
  RefTex ref = image(37, 23, 1, 4, 31);
  CUDA_ARRAY_DESCRIPTOR ad = {size_t(ref.w), size_t(ref.h), CU_AD_FORMAT_FLOAT,
                              4};
  CUarray array;
  CHECK(cuArrayCreate(&array, &ad));
  size_t row = ref.w * 16;
  CUDA_MEMCPY2D in = arrayCopy(array, ref.texels.data(), row, ref.h, true);
  CHECK(cuMemcpy2D(&in));
  CHECK(cuTexRefSetArray(tr, array, CU_TRSA_OVERRIDE_FORMAT));

  // Two bindings, each launched on one stream before the next binding,
  // without waiting: linear mirror with normalized coordinates, then linear
  // with border texels (colour (0, 2.5, 0, -1)).
  CUstream stream;
  CHECK(cuStreamCreate(&stream, 0));
  RefTex a = ref, b = ref;
  a.linear = b.linear = true;
  a.normalized = true;
  a.mode[0] = a.mode[1] = a.mode[2] = AddressMode::Mirror;
  b.mode[0] = b.mode[1] = b.mode[2] = AddressMode::Border;
  b.border[1] = 2.5f;
  b.border[3] = -1.0f;
  setState(tr, a);
  Sampling sa(sampleRef, a, 40, stream);
  setState(tr, b);
  Sampling sb(sampleRef, b, 41, stream);
  CHECK(cuStreamSynchronize(stream));
  sa.check("cuTexRefSetArray linear mirror normalized", a);
  sb.check("rebound, linear border texels", b);

  // The getters give the state back.
  CUarray arrayBack = nullptr;
  CHECK(cuTexRefGetArray(&arrayBack, tr));
  int mode = -1, filter = -1, channels = 0;
  unsigned flags = 99;
  float border[4];
  CUarray_format format;
  CHECK(cuTexRefGetAddressMode((CUaddress_mode *)&mode, tr, 1));
  CHECK(cuTexRefGetFilterMode((CUfilter_mode *)&filter, tr));
  CHECK(cuTexRefGetFlags(&flags, tr));
  CHECK(cuTexRefGetBorderColor(border, tr));
  CHECK(cuTexRefGetFormat(&format, &channels, tr));
  EXPECT(arrayBack == array && mode == CU_TR_ADDRESS_MODE_BORDER &&
             filter == CU_TR_FILTER_MODE_LINEAR && flags == 0 &&
             border[1] == 2.5f && border[3] == -1.0f &&
             format == CU_AD_FORMAT_FLOAT && channels == 4,
         "the cuTexRefGet* calls do not give the state back");
  std::printf("cuTexRefGet*: the state comes back\n");

  // A box filter written through cuSurfRefSetArray's surface.
  RefTex box = ref;
  box.linear = true;
  CUDA_ARRAY3D_DESCRIPTOR sd = {size_t(ref.w),
                                size_t(ref.h),
                                0,
                                CU_AD_FORMAT_FLOAT,
                                4,
                                CUDA_ARRAY3D_SURFACE_LDST};
  CUarray target;
  CHECK(cuArray3DCreate(&target, &sd));
  CHECK(cuSurfRefSetArray(sr, target, 0));
  CUarray targetBack = nullptr;
  CHECK(cuSurfRefGetArray(&targetBack, sr));
  EXPECT(targetBack == target, "cuSurfRefGetArray does not give it back");
  setState(tr, box);
  int w = ref.w, h = ref.h;
  void *boxParams[] = {&w, &h};
  CHECK(cuLaunchKernel(boxToSurfRef, (w + 7) / 8, (h + 7) / 8, 1, 8, 8, 1, 0,
                       nullptr, boxParams, nullptr));
  std::vector<float> got(ref.texels.size());
  CUDA_MEMCPY2D outCopy = arrayCopy(target, got.data(), row, h, false);
  CHECK(cuMemcpy2D(&outCopy));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      std::array<float, 4> want = box.sample(x + 1.0f, y + 1.0f, 0, 2);
      EXPECT(std::memcmp(&got[(size_t(y) * w + x) * 4], want.data(), 16) == 0,
             "box filter through cuSurfRefSetArray: texel (%d, %d) differs", x,
             y);
    }
  std::printf("box filter through cuSurfRefSetArray: %d texels match\n", w * h);

  // Pitch-linear memory, one float channel (cuTexRefSetAddress2D): the
  // other channels read (0, 0, 1).
  RefTex plane = image(50, 19, 1, 1, 32);
  size_t pitch = 0;
  CUdeviceptr d = app::pitchedPlane(plane, pitch);
  plane.linear = true;
  CUDA_ARRAY_DESCRIPTOR pd = {size_t(plane.w), size_t(plane.h),
                              CU_AD_FORMAT_FLOAT, 1};
  CHECK(cuTexRefSetAddress2D(tr, &pd, d, pitch));
  setState(tr, plane);
  CUdeviceptr dBack = 0;
  CHECK(cuTexRefGetAddress(&dBack, tr));
  EXPECT(dBack == d, "cuTexRefGetAddress does not give the address back");
  Sampling sp(sampleRef, plane, 33, nullptr);
  sp.check("cuTexRefSetAddress2D pitch2D linear clamp", plane);

  // Linear memory (cuTexRefSetFormat, cuTexRefSetAddress): tex1Dfetch.
  const int count = 64, fetches = 40;
  std::vector<float> values(count);
  for (int i = 0; i < count; ++i)
    values[i] = float(i) * 0.5f - 7.0f;
  CUdeviceptr dv, dout;
  CHECK(cuMemAlloc(&dv, count * 4));
  CHECK(cuMemAlloc(&dout, fetches * 4));
  CHECK(cuMemcpyHtoD(dv, values.data(), count * 4));
  CHECK(cuTexRefSetFormat(lr, CU_AD_FORMAT_FLOAT, 1));
  size_t offset = 1;
  CHECK(cuTexRefSetAddress(&offset, lr, dv, count * 4));
  EXPECT(offset == 0, "cuTexRefSetAddress needs an offset");
  int n = fetches;
  void *fetchParams[] = {&dout, &n};
  CHECK(cuLaunchKernel(fetchRef, 1, 1, 1, 64, 1, 1, 0, nullptr, fetchParams,
                       nullptr));
  std::vector<float> fetched(fetches);
  CHECK(cuMemcpyDtoH(fetched.data(), dout, fetches * 4));
  for (int i = 0; i < fetches; ++i) {
    int at = 3 * i - 5;
    float want = at >= 0 && at < count ? values[at] : 0.0f;
    EXPECT(std::memcmp(&fetched[i], &want, 4) == 0,
           "tex1Dfetch %d is %.9g, not %.9g", i, fetched[i], want);
  }
  std::printf("cuTexRefSetAddress tex1Dfetch: %d fetches match\n", fetches);

  // Not supported yet: anisotropic filtering, refused when the next launch
  // binds the reference.
  CHECK(cuTexRefSetMaxAnisotropy(lr, 4));
  e = cuLaunchKernel(fetchRef, 1, 1, 1, 64, 1, 1, 0, nullptr, fetchParams,
                     nullptr);
  cuGetErrorName(e, &name);
  std::printf("anisotropic texture reference: %s\n", name);
  EXPECT(e == CUDA_ERROR_NOT_SUPPORTED, "anisotropy was accepted");

  CHECK(cuMemFree(dv));
  CHECK(cuMemFree(dout));
  CHECK(cuMemFree(d));
  CHECK(cuStreamDestroy(stream));
  CHECK(cuModuleUnload(module));
  CHECK(cuArrayDestroy(target));
  CHECK(cuArrayDestroy(array));
  app::pass();
  return 0;
}
