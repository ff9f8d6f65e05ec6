//===- Texture.h - Texture and surface objects of the CPU backend -*- C++
//-*-===//
//
// Internal to the CPU runtime: the table of texture and surface objects
// (CpuDevice::createTextureObject, createSurfaceObject) and the sampling
// that `__wooly_rt_texture` does with them (Texture.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_RUNTIME_CPU_TEXTURE_H
#define WOOLY_LIB_RUNTIME_CPU_TEXTURE_H

#include "Wooly/Runtime/Texture.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <vector>

namespace wooly::cpu {

class DeviceMemory;

namespace detail {

/// A texture or surface object: its descriptors, the memory domain of the
/// session that made it, and the bytes its texels span from
/// `resource.address`. Trivially destructible (copies of it live in frames
/// that a fault leaves).
struct TextureObject {
  bool surface = false;
  ResourceDesc resource;
  TextureDesc texture;
  uint64_t domain = 0;
  uint64_t span = 0;
  /// Texels in x, y, z (z: slices, layers or faces; at least 1 each) and
  /// bytes from one row, and one slice, to the next.
  uint64_t extent[3] = {1, 1, 1};
  uint64_t rowBytes = 0, sliceBytes = 0;
};

/// The objects of one device, by handle: `(generation << 32) | (slot + 1)`,
/// so that a destroyed object's handle stays invalid when its slot is
/// reused (for 2^32 reuses).
class TextureTable {
public:
  /// Checks `resource` (and, for a texture, `texture`) and that its texels
  /// lie in one allocation of `domain` (any, for 0) of `memory`; returns
  /// the new object's handle.
  llvm::Expected<uint64_t> create(const DeviceMemory &memory, bool surface,
                                  const ResourceDesc &resource,
                                  const TextureDesc &texture, uint64_t domain);
  /// Destroys the object `handle` (a surface's when `surface`).
  llvm::Error destroy(uint64_t handle, bool surface);
  /// The object `handle`, if it exists.
  std::optional<TextureObject> find(uint64_t handle) const;

private:
  mutable std::shared_mutex mutex;
  std::vector<std::optional<TextureObject>> slots;
  std::vector<uint32_t> generations;
  std::vector<uint32_t> freeSlots;
};

} // namespace detail
} // namespace wooly::cpu

#endif // WOOLY_LIB_RUNTIME_CPU_TEXTURE_H
