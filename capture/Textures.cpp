//===- Textures.cpp - CUDA arrays, texture and surface objects -----------===//
//
// The runtime API of CUDA arrays and of texture and surface objects, in
// Wooly's libcudart.so.13:
//
//  - A CUDA array is an allocation of the session (counted in the tenant's
//    quota) whose texels lie row after row, tightly packed, as the backends
//    read them (Wooly/Runtime/Texture.h); its handle (Driver.h, CUarray_st)
//    keeps its format and extents. Copies to and from arrays are copies of
//    rows into and out of that allocation (cudaMemcpy2DAsync).
//  - A texture or surface object is created on the server, in the session's
//    memory domain; its handle is the backend's, which kernels take as
//    their cudaTextureObject_t. The backend checks it at every use: a
//    forged handle, or another session's, faults the kernel
//    (cudaErrorIllegalAddress), it never reads anything.
//  - A mipmapped array is one allocation holding its levels one after the
//    other (Wooly/Runtime/Texture.h); each level is an array of the session
//    over its part of the allocation (cudaGetMipmappedArrayLevel), freed
//    with the mipmapped array, so copies into a level are array copies.
//  - Not supported yet (cudaErrorNotSupported and a line on stderr):
//    resource views, anisotropic filtering, the
//    normalized-integer and block-compressed channel kinds, sparse and
//    deferred-mapping arrays.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "Log.h"
#include "Runtime.h"

#include <cstring>

using namespace wooly::cuabi;
using namespace wooly::capture;

extern "C" {
CUresult cuStreamSynchronize(CUstream);
// Runtime.cpp's.
cudaError_t cudaMemcpy2DAsync(void *, size_t, const void *, size_t, size_t,
                              size_t, cudaMemcpyKind, cudaStream_t);
cudaError_t cudaMallocPitch(void **, size_t *, size_t, size_t);
}

namespace {

using Records = TextureRecords<cudaResourceDesc, cudaTextureDesc>;
using Recorded = Records::Record;

Records &records() {
  static Records *r = new Records; // never destroyed: atexit handlers use it
  return *r;
}

/// Creates a texture (or surface) object and records its descriptors.
cudaError_t createObject(unsigned long long *object,
                         const wooly::ResourceDesc &r,
                         const wooly::TextureDesc &d, const Recorded &rec,
                         const wooly::client::TextureExtras &extras = {}) {
  uint64_t handle = 0;
  RETURN_IF(driverTextureCreate(r, d, rec.surface, &handle, extras));
  records().add(handle, rec);
  *object = handle;
  return cudaSuccess;
}

cudaError_t destroyObject(unsigned long long object, bool surface) {
  if (!object)
    return cudaSuccess;
  INIT();
  RETURN_IF(driverTextureDestroy(object, surface));
  records().erase(object);
  return cudaSuccess;
}

cudaError_t notSupported(const char *call, const char *what) {
  log(1, "%s: %s is not supported yet", call, what);
  return setError(cudaErrorNotSupported);
}

/// Wooly's channel format of a runtime channel descriptor (or the error).
/// CUDA's other channel kinds (normalized integer, NV12, block compressed)
/// are not supported yet: an array refuses them here; a texture over
/// memory sends them, for the server to refuse.
cudaError_t channelFormat(const cudaChannelFormatDesc &d, const char *call,
                          bool forArray, wooly::ChannelFormat &f) {
  bool other = d.f > cudaChannelFormatKindFloat && d.f != 3 /* None */;
  if (other && forArray)
    return notSupported(call, "a channel kind other than signed, unsigned "
                              "or float (normalized integer, NV12, block "
                              "compressed)");
  f.bits[0] = d.x;
  f.bits[1] = d.y;
  f.bits[2] = d.z;
  f.bits[3] = d.w;
  f.kind = wooly::ChannelKind(d.f < 0 || d.f > 255 ? 255 : d.f);
  if (other)
    return cudaSuccess;
  if (const char *why = wooly::channelFormatError(f)) {
    log(1, "%s: %s", call, why);
    return setError(cudaErrorInvalidChannelDescriptor);
  }
  return cudaSuccess;
}

cudaChannelFormatDesc channelDesc(const wooly::ChannelFormat &f) {
  return cudaChannelFormatDesc{f.bits[0], f.bits[1], f.bits[2], f.bits[3],
                               int(f.kind)};
}

/// The array `a`, or null (with the error set) when it is not one.
CUarray_st *arrayOf(cudaArray_const_t a) {
  if (!a || !driverIsArray(a)) {
    setError(cudaErrorInvalidResourceHandle);
    return nullptr;
  }
  return const_cast<CUarray_st *>(a);
}

/// CUarray_st::at as a pointer (null when outside the array).
char *arrayAt(const CUarray_st &a, uint64_t xBytes, uint64_t y, uint64_t z,
              uint64_t widthBytes, uint64_t height, uint64_t depth) {
  uint64_t address = 0;
  if (!a.at(xBytes, y, z, widthBytes, height, depth, address))
    return nullptr;
  return reinterpret_cast<char *>(address);
}

/// A 2D copy followed, for the synchronous calls, by the stream's end.
cudaError_t copy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                   size_t width, size_t height, cudaMemcpyKind kind,
                   cudaStream_t stream, bool async) {
  cudaError_t e =
      cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, stream);
  if (e != cudaSuccess || async)
    return e;
  RETURN_IF(cuStreamSynchronize(nullptr));
  return cudaSuccess;
}

} // namespace

//===----------------------------------------------------------------------===//
// Arrays
//===----------------------------------------------------------------------===//

RT_API cudaError_t cudaMalloc3DArray(cudaArray_t *array,
                                     const cudaChannelFormatDesc *desc,
                                     cudaExtent extent, unsigned flags) {
  if (!array || !desc)
    return setError(cudaErrorInvalidValue);
  INIT();
  wooly::ChannelFormat f;
  if (cudaError_t e = channelFormat(*desc, "cudaMalloc3DArray", true, f))
    return e;
  CUresult r = driverArrayCreate(f, extent.width, extent.height, extent.depth,
                                 flags, CUDA_ERROR_INVALID_VALUE, array);
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    return setError(cudaErrorMemoryAllocation);
  RETURN_IF(r);
  return cudaSuccess;
}

RT_API cudaError_t cudaMallocArray(cudaArray_t *array,
                                   const cudaChannelFormatDesc *desc,
                                   size_t width, size_t height,
                                   unsigned flags) {
  if (flags & (cudaArrayLayered | cudaArrayCubemap))
    return setError(cudaErrorInvalidValue); // cudaMalloc3DArray's
  return cudaMalloc3DArray(array, desc, cudaExtent{width, height, 0}, flags);
}

RT_API cudaError_t cudaFreeArray(cudaArray_t array) {
  if (!array)
    return cudaSuccess;
  INIT();
  RETURN_IF(driverArrayDestroy(array));
  return cudaSuccess;
}

RT_API cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t *array,
                                            const cudaChannelFormatDesc *desc,
                                            cudaExtent extent,
                                            unsigned numLevels,
                                            unsigned flags) {
  if (!array || !desc)
    return setError(cudaErrorInvalidValue);
  INIT();
  wooly::ChannelFormat f;
  if (cudaError_t e = channelFormat(*desc, "cudaMallocMipmappedArray", true, f))
    return e;
  CUresult r = driverMipmappedArrayCreate(f, extent.width, extent.height,
                                          extent.depth, flags, numLevels,
                                          CUDA_ERROR_INVALID_VALUE, array);
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    return setError(cudaErrorMemoryAllocation);
  RETURN_IF(r);
  return cudaSuccess;
}

RT_API cudaError_t cudaGetMipmappedArrayLevel(cudaArray_t *levelArray,
                                              cudaMipmappedArray_const_t array,
                                              unsigned level) {
  if (!levelArray)
    return setError(cudaErrorInvalidValue);
  INIT();
  CUresult r = driverMipmappedArrayLevel(
      const_cast<CUmipmappedArray_st *>(array), level, levelArray);
  if (r == CUDA_ERROR_INVALID_HANDLE)
    return setError(cudaErrorInvalidResourceHandle);
  RETURN_IF(r);
  return cudaSuccess;
}

RT_API cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t array) {
  if (!array)
    return cudaSuccess;
  INIT();
  RETURN_IF(driverMipmappedArrayDestroy(array));
  return cudaSuccess;
}

RT_API cudaError_t cudaArrayGetInfo(cudaChannelFormatDesc *desc,
                                    cudaExtent *extent, unsigned *flags,
                                    cudaArray_t array) {
  CUarray_st *a = arrayOf(array);
  if (!a)
    return cudaErrorInvalidResourceHandle;
  if (desc)
    *desc = channelDesc(a->format);
  if (extent)
    *extent = cudaExtent{a->width, a->height, a->depth};
  if (flags)
    *flags = a->flags;
  return cudaSuccess;
}

RT_API cudaError_t cudaGetChannelDesc(cudaChannelFormatDesc *desc,
                                      cudaArray_const_t array) {
  if (!desc)
    return setError(cudaErrorInvalidValue);
  CUarray_st *a = arrayOf(array);
  if (!a)
    return cudaErrorInvalidResourceHandle;
  *desc = channelDesc(a->format);
  return cudaSuccess;
}

RT_API cudaError_t cudaMalloc3D(cudaPitchedPtr *ptr, cudaExtent extent) {
  if (!ptr)
    return setError(cudaErrorInvalidValue);
  size_t pitch = 0;
  size_t rows = extent.height * (extent.depth ? extent.depth : 1);
  void *p = nullptr;
  if (cudaError_t e = cudaMallocPitch(&p, &pitch, extent.width, rows))
    return e;
  *ptr = cudaPitchedPtr{p, pitch, extent.width, extent.height};
  return cudaSuccess;
}

//===----------------------------------------------------------------------===//
// Copies to and from arrays
//===----------------------------------------------------------------------===//

namespace {

cudaError_t copy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset,
                          const void *src, size_t spitch, size_t width,
                          size_t height, cudaMemcpyKind kind,
                          cudaStream_t stream, bool async) {
  CUarray_st *a = arrayOf(dst);
  if (!a)
    return cudaErrorInvalidResourceHandle;
  char *to = arrayAt(*a, wOffset, hOffset, 0, width, height, 1);
  if (!to)
    return setError(cudaErrorInvalidValue);
  return copy2D(to, a->rowBytes(), src, spitch, width, height, kind, stream,
                async);
}

cudaError_t copy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src,
                            size_t wOffset, size_t hOffset, size_t width,
                            size_t height, cudaMemcpyKind kind,
                            cudaStream_t stream, bool async) {
  CUarray_st *a = arrayOf(src);
  if (!a)
    return cudaErrorInvalidResourceHandle;
  char *from = arrayAt(*a, wOffset, hOffset, 0, width, height, 1);
  if (!from)
    return setError(cudaErrorInvalidValue);
  return copy2D(dst, dpitch, from, a->rowBytes(), width, height, kind, stream,
                async);
}

/// cudaMemcpyToArray/FromArray: where `count` bytes from (wOffset, hOffset)
/// on lie, row after row (the array's rows are contiguous).
cudaError_t linearAt(cudaArray_const_t array, size_t wOffset, size_t hOffset,
                     size_t count, char *&at) {
  CUarray_st *a = arrayOf(array);
  if (!a)
    return cudaErrorInvalidResourceHandle;
  at = arrayAt(*a, wOffset, hOffset, 0, 0, 0, 0);
  if (!at || count > a->bytes() - (uint64_t(at) - a->address))
    return setError(cudaErrorInvalidValue);
  return cudaSuccess;
}

} // namespace

RT_API cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset,
                                       size_t hOffset, const void *src,
                                       size_t spitch, size_t width,
                                       size_t height, cudaMemcpyKind kind) {
  return copy2DToArray(dst, wOffset, hOffset, src, spitch, width, height, kind,
                       nullptr, false);
}

RT_API cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset,
                                            size_t hOffset, const void *src,
                                            size_t spitch, size_t width,
                                            size_t height, cudaMemcpyKind kind,
                                            cudaStream_t stream) {
  return copy2DToArray(dst, wOffset, hOffset, src, spitch, width, height, kind,
                       stream, true);
}

RT_API cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch,
                                         cudaArray_const_t src, size_t wOffset,
                                         size_t hOffset, size_t width,
                                         size_t height, cudaMemcpyKind kind) {
  return copy2DFromArray(dst, dpitch, src, wOffset, hOffset, width, height,
                         kind, nullptr, false);
}

RT_API cudaError_t cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch,
                                              cudaArray_const_t src,
                                              size_t wOffset, size_t hOffset,
                                              size_t width, size_t height,
                                              cudaMemcpyKind kind,
                                              cudaStream_t stream) {
  return copy2DFromArray(dst, dpitch, src, wOffset, hOffset, width, height,
                         kind, stream, true);
}

namespace {
/// cudaMemcpyToArray and cudaMemcpyFromArray (deprecated, still used):
/// `count` bytes from (wOffset, hOffset) of `array` on, row after row.
cudaError_t copyLinear(cudaArray_const_t array, size_t wOffset, size_t hOffset,
                       void *host, size_t count, cudaMemcpyKind kind,
                       bool toArray, cudaStream_t stream, bool async) {
  char *at = nullptr;
  if (cudaError_t e = linearAt(array, wOffset, hOffset, count, at))
    return e;
  return toArray
             ? copy2D(at, count, host, count, count, 1, kind, stream, async)
             : copy2D(host, count, at, count, count, 1, kind, stream, async);
}
} // namespace

RT_API cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset,
                                     size_t hOffset, const void *src,
                                     size_t count, cudaMemcpyKind kind) {
  return copyLinear(dst, wOffset, hOffset, const_cast<void *>(src), count, kind,
                    true, nullptr, false);
}

RT_API cudaError_t cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset,
                                          size_t hOffset, const void *src,
                                          size_t count, cudaMemcpyKind kind,
                                          cudaStream_t stream) {
  return copyLinear(dst, wOffset, hOffset, const_cast<void *>(src), count, kind,
                    true, stream, true);
}

RT_API cudaError_t cudaMemcpyFromArray(void *dst, cudaArray_const_t src,
                                       size_t wOffset, size_t hOffset,
                                       size_t count, cudaMemcpyKind kind) {
  return copyLinear(src, wOffset, hOffset, dst, count, kind, false, nullptr,
                    false);
}

RT_API cudaError_t cudaMemcpyFromArrayAsync(void *dst, cudaArray_const_t src,
                                            size_t wOffset, size_t hOffset,
                                            size_t count, cudaMemcpyKind kind,
                                            cudaStream_t stream) {
  return copyLinear(src, wOffset, hOffset, dst, count, kind, false, stream,
                    true);
}

RT_API cudaError_t cudaMemcpy2DArrayToArray(
    cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
    cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc, size_t width,
    size_t height, cudaMemcpyKind kind) {
  CUarray_st *s = arrayOf(src), *d = arrayOf(dst);
  if (!s || !d)
    return cudaErrorInvalidResourceHandle;
  if (kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return setError(cudaErrorInvalidMemcpyDirection);
  char *from = arrayAt(*s, wOffsetSrc, hOffsetSrc, 0, width, height, 1);
  char *to = arrayAt(*d, wOffsetDst, hOffsetDst, 0, width, height, 1);
  if (!from || !to)
    return setError(cudaErrorInvalidValue);
  return copy2D(to, d->rowBytes(), from, s->rowBytes(), width, height,
                cudaMemcpyDeviceToDevice, nullptr, false);
}

namespace {

/// One side of a 3D copy: where its first byte is, and its row and slice
/// pitches.
struct Side {
  char *at = nullptr;
  size_t pitch = 0, slicePitch = 0;
};

cudaError_t memcpy3D(const cudaMemcpy3DParms *p, cudaStream_t stream,
                     bool async) {
  if (!p)
    return setError(cudaErrorInvalidValue);
  INIT();
  // With an array on either side, x extents and positions count elements.
  const CUarray_st *arrays[2] = {p->srcArray, p->dstArray};
  size_t elem = 1;
  for (const CUarray_st *a : arrays)
    if (a) {
      if (!arrayOf(a))
        return cudaErrorInvalidResourceHandle;
      elem = a->format.elementBytes();
    }
  if (p->srcArray && p->dstArray &&
      p->srcArray->format.elementBytes() != p->dstArray->format.elementBytes())
    return setError(cudaErrorInvalidValue);
  size_t width = p->extent.width * elem;
  size_t height = p->extent.height ? p->extent.height : 1;
  size_t depth = p->extent.depth ? p->extent.depth : 1;
  auto side = [&](const CUarray_st *a, const cudaPos &pos,
                  const cudaPitchedPtr &ptr, Side &out) {
    if (a) {
      out.at = arrayAt(*a, pos.x * elem, pos.y, pos.z, width, height, depth);
      out.pitch = a->rowBytes();
      out.slicePitch = a->rowBytes() * a->rows();
      return out.at != nullptr;
    }
    if (!ptr.ptr || (height > 1 && ptr.pitch < width))
      return false;
    out.pitch = ptr.pitch;
    out.slicePitch = ptr.pitch * ptr.ysize;
    out.at = static_cast<char *>(ptr.ptr) + pos.z * out.slicePitch +
             pos.y * ptr.pitch + pos.x;
    return true;
  };
  Side src, dst;
  if (!side(p->srcArray, p->srcPos, p->srcPtr, src) ||
      !side(p->dstArray, p->dstPos, p->dstPtr, dst))
    return setError(cudaErrorInvalidValue);
  if (p->srcArray && p->dstArray && p->kind != cudaMemcpyDeviceToDevice &&
      p->kind != cudaMemcpyDefault)
    return setError(cudaErrorInvalidMemcpyDirection);
  for (size_t z = 0; z < depth; ++z) {
    cudaError_t e = cudaMemcpy2DAsync(dst.at + z * dst.slicePitch, dst.pitch,
                                      src.at + z * src.slicePitch, src.pitch,
                                      width, height, p->kind, stream);
    if (e != cudaSuccess)
      return e;
  }
  if (!async)
    RETURN_IF(cuStreamSynchronize(nullptr));
  return cudaSuccess;
}

} // namespace

RT_API cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms *p) {
  return memcpy3D(p, nullptr, false);
}

RT_API cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms *p,
                                     cudaStream_t stream) {
  return memcpy3D(p, stream, true);
}

namespace {
/// A copy between devices, on the one device there is: device 0 to
/// device 0, as cudaMemcpy3D with the devices' memory on both sides.
cudaError_t memcpy3DPeer(const cudaMemcpy3DPeerParms *p, cudaStream_t stream,
                         bool async) {
  if (!p)
    return setError(cudaErrorInvalidValue);
  if (p->srcDevice != 0 || p->dstDevice != 0)
    return setError(cudaErrorInvalidDevice);
  cudaMemcpy3DParms q = {};
  q.srcArray = p->srcArray;
  q.srcPos = p->srcPos;
  q.srcPtr = p->srcPtr;
  q.dstArray = p->dstArray;
  q.dstPos = p->dstPos;
  q.dstPtr = p->dstPtr;
  q.extent = p->extent;
  q.kind = cudaMemcpyDeviceToDevice;
  return memcpy3D(&q, stream, async);
}
} // namespace

RT_API cudaError_t cudaMemcpy3DPeer(const cudaMemcpy3DPeerParms *p) {
  return memcpy3DPeer(p, nullptr, false);
}

RT_API cudaError_t cudaMemcpy3DPeerAsync(const cudaMemcpy3DPeerParms *p,
                                         cudaStream_t stream) {
  return memcpy3DPeer(p, stream, true);
}

//===----------------------------------------------------------------------===//
// Texture and surface objects
//===----------------------------------------------------------------------===//

namespace {

/// Wooly's resource descriptor of `r` (or the error).
cudaError_t resourceOf(const cudaResourceDesc &r, const char *call,
                       wooly::ResourceDesc &out) {
  if (r.flags)
    return setError(cudaErrorInvalidValue);
  switch (r.resType) {
  case cudaResourceTypeArray: {
    CUarray_st *a = arrayOf(r.res.array.array);
    if (!a)
      return cudaErrorInvalidResourceHandle;
    out.kind = wooly::ResourceDesc::Kind::Array;
    out.address = a->address;
    out.format = a->format;
    out.width = a->width;
    out.height = a->height;
    out.depth = a->depth;
    out.layered = a->flags & cudaArrayLayered;
    out.cubemap = a->flags & cudaArrayCubemap;
    return cudaSuccess;
  }
  case cudaResourceTypeMipmappedArray:
    if (!driverMipmappedResource(r.res.mipmap.mipmap, out))
      return setError(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
  case cudaResourceTypeLinear: {
    out.kind = wooly::ResourceDesc::Kind::Linear;
    out.address = reinterpret_cast<uint64_t>(r.res.linear.devPtr);
    if (cudaError_t e =
            channelFormat(r.res.linear.desc, call, false, out.format))
      return e;
    unsigned elem = out.format.elementBytes();
    out.width = elem ? r.res.linear.sizeInBytes / elem : 0;
    return cudaSuccess;
  }
  case cudaResourceTypePitch2D:
    out.kind = wooly::ResourceDesc::Kind::Pitch2D;
    out.address = reinterpret_cast<uint64_t>(r.res.pitch2D.devPtr);
    if (cudaError_t e =
            channelFormat(r.res.pitch2D.desc, call, false, out.format))
      return e;
    out.width = r.res.pitch2D.width;
    out.height = r.res.pitch2D.height;
    out.pitch = r.res.pitch2D.pitchInBytes;
    return cudaSuccess;
  }
  return setError(cudaErrorInvalidValue);
}

} // namespace

RT_API cudaError_t cudaCreateTextureObject(cudaTextureObject_t *object,
                                           const cudaResourceDesc *resource,
                                           const cudaTextureDesc *texture,
                                           const void *view) {
  const char *call = "cudaCreateTextureObject";
  if (!object || !resource || !texture)
    return setError(cudaErrorInvalidValue);
  INIT();
  wooly::ResourceDesc r;
  if (cudaError_t e = resourceOf(*resource, call, r))
    return e;
  const cudaTextureDesc &t = *texture;
  // What is not supported yet goes to the server, which refuses it (and
  // logs it).
  wooly::client::TextureExtras extras;
  extras.maxAnisotropy = t.maxAnisotropy;
  extras.seamlessCubemap = t.seamlessCubemap != 0;
  extras.resourceView = view != nullptr;
  wooly::TextureDesc d;
  for (int i = 0; i < 3; ++i) {
    if (t.addressMode[i] < 0 || t.addressMode[i] > 3)
      return setError(cudaErrorInvalidValue);
    d.addressMode[i] = wooly::AddressMode(t.addressMode[i]);
  }
  if (t.filterMode < 0 || t.filterMode > 1 || t.readMode < 0 || t.readMode > 1)
    return setError(cudaErrorInvalidValue);
  d.filterMode = wooly::FilterMode(t.filterMode);
  d.readMode = wooly::ReadMode(t.readMode);
  d.sRGB = t.sRGB != 0;
  std::memcpy(d.borderColor, t.borderColor, sizeof d.borderColor);
  d.normalizedCoords = t.normalizedCoords != 0;
  if (t.mipmapFilterMode < 0 || t.mipmapFilterMode > 1)
    return setError(cudaErrorInvalidValue);
  d.mipmapFilterMode = wooly::FilterMode(t.mipmapFilterMode);
  d.mipmapLevelBias = t.mipmapLevelBias;
  d.minMipmapLevelClamp = t.minMipmapLevelClamp;
  d.maxMipmapLevelClamp = t.maxMipmapLevelClamp;
  Recorded rec;
  rec.resource = *resource;
  rec.texture = *texture;
  return createObject(object, r, d, rec, extras);
}

RT_API cudaError_t cudaDestroyTextureObject(cudaTextureObject_t object) {
  return destroyObject(object, false);
}

RT_API cudaError_t cudaGetTextureObjectResourceDesc(
    cudaResourceDesc *desc, cudaTextureObject_t object) {
  Recorded rec;
  if (!desc || !records().find(object, false, rec))
    return setError(cudaErrorInvalidValue);
  *desc = rec.resource;
  return cudaSuccess;
}

RT_API cudaError_t cudaGetTextureObjectTextureDesc(cudaTextureDesc *desc,
                                                   cudaTextureObject_t object) {
  Recorded rec;
  if (!desc || !records().find(object, false, rec))
    return setError(cudaErrorInvalidValue);
  *desc = rec.texture;
  return cudaSuccess;
}

RT_API cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t *object,
                                           const cudaResourceDesc *resource) {
  if (!object || !resource)
    return setError(cudaErrorInvalidValue);
  INIT();
  if (resource->resType != cudaResourceTypeArray)
    return setError(cudaErrorInvalidValue); // CUDA takes arrays only
  wooly::ResourceDesc r;
  if (cudaError_t e = resourceOf(*resource, "cudaCreateSurfaceObject", r))
    return e;
  Recorded rec;
  rec.surface = true;
  rec.resource = *resource;
  std::memset(&rec.texture, 0, sizeof rec.texture);
  return createObject(object, r, wooly::TextureDesc(), rec);
}

RT_API cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t object) {
  return destroyObject(object, true);
}

RT_API cudaError_t cudaGetSurfaceObjectResourceDesc(
    cudaResourceDesc *desc, cudaSurfaceObject_t object) {
  Recorded rec;
  if (!desc || !records().find(object, true, rec))
    return setError(cudaErrorInvalidValue);
  *desc = rec.resource;
  return cudaSuccess;
}

WOOLY_ALIAS(cudaMemcpy2DToArray_ptds, cudaMemcpy2DToArray)
WOOLY_ALIAS(cudaMemcpy2DToArrayAsync_ptsz, cudaMemcpy2DToArrayAsync)
WOOLY_ALIAS(cudaMemcpy2DFromArray_ptds, cudaMemcpy2DFromArray)
WOOLY_ALIAS(cudaMemcpy2DFromArrayAsync_ptsz, cudaMemcpy2DFromArrayAsync)
WOOLY_ALIAS(cudaMemcpyToArray_ptds, cudaMemcpyToArray)
WOOLY_ALIAS(cudaMemcpy3DPeer_ptds, cudaMemcpy3DPeer)
WOOLY_ALIAS(cudaMemcpy3DPeerAsync_ptsz, cudaMemcpy3DPeerAsync)
WOOLY_ALIAS(cudaMemcpyFromArray_ptds, cudaMemcpyFromArray)
WOOLY_ALIAS(cudaMemcpyToArrayAsync_ptsz, cudaMemcpyToArrayAsync)
WOOLY_ALIAS(cudaMemcpyFromArrayAsync_ptsz, cudaMemcpyFromArrayAsync)
WOOLY_ALIAS(cudaMemcpy2DArrayToArray_ptds, cudaMemcpy2DArrayToArray)
WOOLY_ALIAS(cudaMemcpy3D_ptds, cudaMemcpy3D)
WOOLY_ALIAS(cudaMemcpy3DAsync_ptsz, cudaMemcpy3DAsync)
