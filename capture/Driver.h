//===- Driver.h - What libcudart asks of Wooly's libcuda --------*- C++ -*-===//
//
// The few entry points of Wooly's libcuda.so.1 that are not CUDA's own,
// for Wooly's libcudart.so.13 (exported in a private namespace; see
// capture/libcuda.map).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_CAPTURE_DRIVER_H
#define WOOLY_CAPTURE_DRIVER_H

#include "CudaAbi.h"

#include "Wooly/Client/Client.h"
#include "Wooly/Runtime/Texture.h"

#include <cstdint>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#define WOOLY_DRIVER_PRIVATE __attribute__((visibility("default")))

/// A CUDA array (CUarray, cudaArray_t): an allocation of the session whose
/// texels lie row after row, tightly packed (Wooly/Runtime/Texture.h), and
/// its format and extents (CUDA's: 0 for an absent height or depth).
struct CUarray_st {
  uint64_t address = 0;
  wooly::ChannelFormat format;
  uint64_t width = 0, height = 0, depth = 0;
  unsigned flags = 0;
  /// A level of a mipmapped array: a view into its allocation, freed with
  /// it (cudaFreeArray refuses it).
  const CUmipmappedArray_st *owner = nullptr;
  uint64_t rowBytes() const { return width * format.elementBytes(); }
  uint64_t rows() const { return height ? height : 1; }
  uint64_t slices() const { return depth ? depth : 1; }
  uint64_t bytes() const { return rowBytes() * rows() * slices(); }
  /// The device address of byte `xBytes` of row `y` of slice `z`; false
  /// when [xBytes, xBytes + widthBytes) x [y, y + height) x [z, z + depth)
  /// is not inside the array.
  bool at(uint64_t xBytes, uint64_t y, uint64_t z, uint64_t widthBytes,
          uint64_t height, uint64_t depth, uint64_t &out) const {
    if (xBytes > rowBytes() || widthBytes > rowBytes() - xBytes || y > rows() ||
        height > rows() - y || z > slices() || depth > slices() - z)
      return false;
    out = address + (z * rows() + y) * rowBytes() + xBytes;
    return true;
  }
};

/// A mipmapped array (CUmipmappedArray, cudaMipmappedArray_t): one
/// allocation of the session holding its levels one after the other
/// (wooly::mipLevelOffset), each an array of the session (`levels`: views
/// into the allocation, what cudaGetMipmappedArrayLevel returns), so that
/// the copies to and from arrays work on them unchanged.
struct CUmipmappedArray_st {
  wooly::ResourceDesc resource; // kind MipmappedArray, address, extents
  unsigned flags = 0;
  std::vector<CUarray_st *> levels;
};

namespace wooly::capture {

/// Loads PTX text as a module; `name` is for logs.
WOOLY_DRIVER_PRIVATE cuabi::CUresult driverLoadPtx(std::string_view ptx,
                                                   std::string_view name,
                                                   cuabi::CUmodule *module);
/// Makes module variable `name` of `module` managed memory (a `__managed__`
/// variable, Driver.cpp "Managed memory"): its pages are mapped in this
/// process at its device address, which `*hostAddress` receives, and its
/// device value is copied there.
WOOLY_DRIVER_PRIVATE cuabi::CUresult
driverMapManagedVariable(cuabi::CUmodule module, const char *name,
                         void **hostAddress);
/// Whether [ptr, ptr + bytes) is device memory of the session (an allocation
/// or a module variable).
WOOLY_DRIVER_PRIVATE bool driverIsDevicePointer(const void *ptr, size_t bytes);
/// The last call's sequence number (for logs).
WOOLY_DRIVER_PRIVATE uint64_t driverLastSeq();
/// The size of a kernel's parameter buffer (0 for an unknown function).
WOOLY_DRIVER_PRIVATE size_t driverParamBufferSize(cuabi::CUfunction fn);
/// One call of a graph kept on the server (see driverGraphCreate).
struct GraphCall {
  enum class Kind {
    Launch,
    Memset,
    CopyDeviceToDevice,
    EventRecord,
    EventWait
  };
  Kind kind = Kind::Launch;
  cuabi::CUfunction fn = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned shared = 0;
  const void *params = nullptr; // the packed parameter buffer
  size_t paramBytes = 0;
  cuabi::CUdeviceptr dst = 0, src = 0;
  size_t bytes = 0;
  unsigned char value = 0;
  cuabi::CUevent event = nullptr;
};
/// Stores `calls` on the server as one graph (checked there at each
/// launch); CUDA_ERROR_NOT_SUPPORTED when the server cannot.
WOOLY_DRIVER_PRIVATE cuabi::CUresult
driverGraphCreate(const GraphCall *calls, size_t count, uint64_t *graph);
/// Replays a stored graph on `stream` (asynchronous: one small call).
WOOLY_DRIVER_PRIVATE cuabi::CUresult driverGraphLaunch(uint64_t graph,
                                                       cuabi::CUstream stream);
WOOLY_DRIVER_PRIVATE cuabi::CUresult driverGraphDestroy(uint64_t graph);
/// Allocates a CUDA array of `format` (checked) and these extents;
/// `flags` are cudaArrayLayered, cudaArrayCubemap, cudaArraySurfaceLoadStore
/// and cudaArrayTextureGather (others: CUDA_ERROR_NOT_SUPPORTED).
WOOLY_DRIVER_PRIVATE cuabi::CUresult
driverArrayCreate(const wooly::ChannelFormat &format, uint64_t width,
                  uint64_t height, uint64_t depth, unsigned flags,
                  cuabi::CUresult badFormat, CUarray_st **array);
WOOLY_DRIVER_PRIVATE cuabi::CUresult driverArrayDestroy(CUarray_st *array);
/// Allocates a mipmapped array as driverArrayCreate an array, with `levels`
/// levels (clamped to 1 .. 1 + log2 of the largest extent, as CUDA does).
WOOLY_DRIVER_PRIVATE cuabi::CUresult
driverMipmappedArrayCreate(const wooly::ChannelFormat &format, uint64_t width,
                           uint64_t height, uint64_t depth, unsigned flags,
                           unsigned levels, cuabi::CUresult badFormat,
                           CUmipmappedArray_st **array);
WOOLY_DRIVER_PRIVATE cuabi::CUresult
driverMipmappedArrayDestroy(CUmipmappedArray_st *array);
/// Level `level` of `array` (an array of the session while `array` lives).
WOOLY_DRIVER_PRIVATE cuabi::CUresult
driverMipmappedArrayLevel(CUmipmappedArray_st *array, unsigned level,
                          CUarray_st **out);
/// Whether `array` is a live mipmapped array of the session; its resource
/// descriptor in `out`.
WOOLY_DRIVER_PRIVATE bool
driverMipmappedResource(const CUmipmappedArray_st *array,
                        wooly::ResourceDesc &out);
/// Whether `array` is a live array of the session.
WOOLY_DRIVER_PRIVATE bool driverIsArray(const CUarray_st *array);
/// Creates a texture object (a surface object with `surface`) on the
/// server; `handle` is what kernels take.
WOOLY_DRIVER_PRIVATE cuabi::CUresult
driverTextureCreate(const wooly::ResourceDesc &resource,
                    const wooly::TextureDesc &texture, bool surface,
                    uint64_t *handle,
                    const wooly::client::TextureExtras &extras = {});
WOOLY_DRIVER_PRIVATE cuabi::CUresult driverTextureDestroy(uint64_t handle,
                                                          bool surface);
/// The descriptors texture and surface objects were created with, as the
/// API that created them took them (`Res`, `Tex`: cudaResourceDesc and
/// cudaTextureDesc, or CUDA_RESOURCE_DESC and CUDA_TEXTURE_DESC), for the
/// calls that give them back (cudaGetTextureObjectResourceDesc, ...).
template <typename Res, typename Tex> class TextureRecords {
public:
  struct Record {
    bool surface = false;
    Res resource;
    Tex texture;
  };
  void add(uint64_t handle, const Record &r) {
    std::lock_guard<std::mutex> lock(mu);
    records[handle] = r;
  }
  void erase(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mu);
    records.erase(handle);
  }
  /// The record of `handle` if it is a live object of that kind.
  bool find(uint64_t handle, bool surface, Record &out) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = records.find(handle);
    if (it == records.end() || it->second.surface != surface)
      return false;
    out = it->second;
    return true;
  }

private:
  std::mutex mu;
  std::unordered_map<uint64_t, Record> records;
};

/// What a launch's attributes (cudaLaunchKernelEx, cuLaunchKernelEx) ask.
struct LaunchAttributes {
  bool cooperative = false;
};

/// Takes launch attribute `id` (cudaLaunchAttributeID and
/// CUlaunchAttributeID have the same values) whose value's bytes are at
/// `value` into `out`. Hints that change no result on Wooly's devices are
/// taken and ignored (an access policy window, synchronisation and cluster
/// scheduling policies, programmatic stream serialisation - a launch that
/// waits for the one before it entirely waits at least as long as asked -,
/// memory synchronisation domains, a preferred cluster size or shared
/// memory carveout), as is a cluster of one block. Returns null where the
/// launch may go on, else why it may not.
WOOLY_DRIVER_PRIVATE const char *
driverLaunchAttribute(int id, const char *value, LaunchAttributes &out);

/// A sentence describing `code` (cuGetErrorString, cudaGetErrorString), or
/// null for an unknown code.
WOOLY_DRIVER_PRIVATE const char *resultDescription(int code);

} // namespace wooly::capture

#endif // WOOLY_CAPTURE_DRIVER_H
