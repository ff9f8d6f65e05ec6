//===- DriverTextures.h - Helpers of the driver-API texture apps -*- C++
//-*-===//
//
// What texture_driver.cpp (texture objects) and texref_driver.cpp (texture
// references) both do through the driver API: a random image for the
// reference of unittests/Runtime/TextureReference.h, copies between host
// memory and CUDA arrays, and pitch-linear device memory filled with an
// image. Include after CudaApp.h (with CUDA_APP_DRIVER_API).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_TEST_APPS_DRIVER_TEXTURES_H
#define WOOLY_TEST_APPS_DRIVER_TEXTURES_H

#include "TextureReference.h"

#include <cstdint>
#include <cstring>
#include <random>

namespace app {

/// A w x h x d image of `chans` floats a texel, uniform in [-4, 4).
inline wooly::texref::RefTex image(int w, int h, int d, int chans,
                                   uint32_t seed) {
  wooly::texref::RefTex t;
  t.w = w;
  t.h = h;
  t.d = d;
  t.chans = chans;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  t.texels.resize(size_t(w) * h * d * chans);
  for (float &f : t.texels)
    f = u(rng);
  return t;
}

/// A host <-> array copy of a whole array of `h` rows of `rowBytes`.
inline CUDA_MEMCPY2D arrayCopy(CUarray array, void *host, size_t rowBytes,
                               int h, bool toArray) {
  CUDA_MEMCPY2D p;
  std::memset(&p, 0, sizeof p);
  if (toArray) {
    p.srcMemoryType = CU_MEMORYTYPE_HOST;
    p.srcHost = host;
    p.srcPitch = rowBytes;
    p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    p.dstArray = array;
  } else {
    p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    p.srcArray = array;
    p.dstMemoryType = CU_MEMORYTYPE_HOST;
    p.dstHost = host;
    p.dstPitch = rowBytes;
  }
  p.WidthInBytes = rowBytes;
  p.Height = h;
  return p;
}

/// Pitch-linear device memory (cuMemAllocPitch) holding the one-channel
/// float image `plane`; its pitch in `pitch`.
inline CUdeviceptr pitchedPlane(const wooly::texref::RefTex &plane,
                                size_t &pitch) {
  CUdeviceptr d;
  CHECK(cuMemAllocPitch(&d, &pitch, plane.w * 4, plane.h, 4));
  CUDA_MEMCPY2D up;
  std::memset(&up, 0, sizeof up);
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = plane.texels.data();
  up.srcPitch = plane.w * 4;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = d;
  up.dstPitch = pitch;
  up.WidthInBytes = plane.w * 4;
  up.Height = plane.h;
  CHECK(cuMemcpy2D(&up));
  return d;
}

} // namespace app

#endif // WOOLY_TEST_APPS_DRIVER_TEXTURES_H
