//===- Texture.h - Texture and surface descriptors --------------*- C++ -*-===//
//
// The backend-neutral form of CUDA's texture and surface objects: what
// `cudaCreateTextureObject` and `cudaCreateSurfaceObject` are given (the
// resource: linear memory, pitch-linear 2D memory or a CUDA array, with its
// channel format; the texture's addressing, filtering and read mode), as
// `Backend::createTextureObject` takes it. The enumerators have CUDA's
// values (cudaTextureAddressMode, cudaTextureFilterMode, ...).
//
// A CUDA array on the CPU backend is an ordinary device allocation whose
// texels lie row after row, tightly packed (`arrayBytes`): x fastest, then
// y, then z (or the layer), the element size that of the channel format.
// A mipmapped array is one allocation holding its levels one after the
// other, each laid out as such an array (`mipLevelExtent`,
// `mipLevelOffset`), so that a level is an ordinary array at an offset.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_RUNTIME_TEXTURE_H
#define WOOLY_RUNTIME_TEXTURE_H

#include <cstdint>

namespace wooly {

/// cudaChannelFormatKind.
enum class ChannelKind : uint8_t { Signed = 0, Unsigned = 1, Float = 2 };

/// cudaChannelFormatDesc: the bits of each channel x, y, z, w (0: absent;
/// the present ones first), all of one kind.
struct ChannelFormat {
  int bits[4] = {0, 0, 0, 0};
  ChannelKind kind = ChannelKind::Unsigned;

  /// Bytes of one texel (0 for an invalid format).
  unsigned elementBytes() const {
    unsigned total = 0;
    for (int b : bits)
      total += unsigned(b);
    return total % 8 ? 0 : total / 8;
  }
  /// The number of channels.
  unsigned channels() const {
    unsigned n = 0;
    while (n < 4 && bits[n])
      ++n;
    return n;
  }
};

/// Why `f` is not a texel format (null when it is one): 1, 2 or 4 channels
/// of equal width (8, 16 or 32 bits; floats 16 or 32), signed, unsigned or
/// float. Checked by the backends and, before they send anything, by
/// Wooly's CUDA libraries.
inline const char *channelFormatError(const ChannelFormat &f) {
  unsigned n = f.channels();
  if (n == 0 || n == 3)
    return "a texel format has 1, 2 or 4 channels";
  for (unsigned c = 0; c < 4; ++c) {
    int b = f.bits[c];
    if (c >= n) {
      if (b != 0)
        return "a texel format's channels come first";
      continue;
    }
    if (b != f.bits[0] || (b != 8 && b != 16 && b != 32))
      return "a texel format's channels have 8, 16 or 32 bits, all the same";
    if (f.kind == ChannelKind::Float && b == 8)
      return "float channels have 16 or 32 bits";
  }
  if (f.kind != ChannelKind::Signed && f.kind != ChannelKind::Unsigned &&
      f.kind != ChannelKind::Float)
    return "unknown channel kind";
  return nullptr;
}

/// cudaResourceDesc, for the kinds Wooly takes.
struct ResourceDesc {
  enum class Kind : uint8_t {
    Array = 0,          ///< a CUDA array (`arrayBytes` at `address`)
    MipmappedArray = 1, ///< `levels` arrays one after the other
    Linear = 2,         ///< linear memory: `width` texels
    Pitch2D = 3,        ///< pitch-linear 2D memory: rows `pitch` bytes apart
  };
  Kind kind = Kind::Linear;
  /// The device address of the first texel.
  uint64_t address = 0;
  ChannelFormat format;
  /// Texels in x, y and z (an array's 0 extents count as 1; `depth` of a
  /// layered array is its number of layers).
  uint64_t width = 0, height = 0, depth = 0;
  /// Bytes from one row to the next (Pitch2D).
  uint64_t pitch = 0;
  /// A layered array (cudaArrayLayered): `depth` layers of 1D (height 0)
  /// or 2D texels.
  bool layered = false;
  /// A cubemap array (cudaArrayCubemap): 6 faces (`depth` 6, or 6 per
  /// layer with `layered`).
  bool cubemap = false;
  /// MipmappedArray: the number of levels (level 0 has the extents above).
  uint32_t levels = 1;
};

/// The extents of level `level` of a mipmapped array of level-0 extents
/// `w`, `h`, `d` (0 extents as CUDA gives them: absent dimensions): each
/// present dimension max(1, n >> level), except the layers of a layered
/// array and the faces of a cubemap, which stay.
inline void mipLevelExtent(const ResourceDesc &r, uint32_t level,
                           uint64_t out[3]) {
  auto shrink = [&](uint64_t n) -> uint64_t {
    if (n == 0)
      return 0;
    n = level >= 64 ? 0 : n >> level;
    return n ? n : 1;
  };
  out[0] = shrink(r.width);
  out[1] = shrink(r.height);
  out[2] = r.layered || r.cubemap ? r.depth : shrink(r.depth);
}

/// The number of levels a mipmapped array of these extents can have:
/// 1 + floor(log2) of the largest extent that shrinks.
inline uint32_t mipLevelLimit(const ResourceDesc &r) {
  uint64_t m = r.width > r.height ? r.width : r.height;
  if (!r.layered && !r.cubemap && r.depth > m)
    m = r.depth;
  uint32_t n = 0;
  for (; m; m >>= 1)
    ++n;
  return n ? n : 1;
}

/// The bytes a CUDA array of `format` and these extents takes.
inline uint64_t arrayBytes(const ChannelFormat &format, uint64_t width,
                           uint64_t height, uint64_t depth) {
  return uint64_t(format.elementBytes()) * (width ? width : 1) *
         (height ? height : 1) * (depth ? depth : 1);
}

/// The byte offset of level `level` of the mipmapped array `r` from its
/// first texel (`level` = r.levels: the bytes of all levels).
inline uint64_t mipLevelOffset(const ResourceDesc &r, uint32_t level) {
  uint64_t offset = 0;
  for (uint32_t l = 0; l < level; ++l) {
    uint64_t e[3];
    mipLevelExtent(r, l, e);
    offset += arrayBytes(r.format, e[0], e[1], e[2]);
  }
  return offset;
}

/// cudaTextureAddressMode.
enum class AddressMode : uint8_t {
  Wrap = 0,
  Clamp = 1,
  Mirror = 2,
  Border = 3
};
/// cudaTextureFilterMode.
enum class FilterMode : uint8_t { Point = 0, Linear = 1 };
/// cudaTextureReadMode.
enum class ReadMode : uint8_t { ElementType = 0, NormalizedFloat = 1 };

/// cudaTextureDesc, for the fields Wooly takes (anisotropy is not
/// supported yet). The mipmap fields apply to mipmapped arrays only.
struct TextureDesc {
  AddressMode addressMode[3] = {AddressMode::Wrap, AddressMode::Wrap,
                                AddressMode::Wrap};
  FilterMode filterMode = FilterMode::Point;
  ReadMode readMode = ReadMode::ElementType;
  bool sRGB = false;
  float borderColor[4] = {0, 0, 0, 0};
  bool normalizedCoords = false;
  /// Between mipmap levels: the nearest level or a blend of the two around
  /// the level of detail.
  FilterMode mipmapFilterMode = FilterMode::Point;
  /// Added to every level of detail, which is then clamped to
  /// [minMipmapLevelClamp, maxMipmapLevelClamp] (and to the levels there
  /// are).
  float mipmapLevelBias = 0;
  float minMipmapLevelClamp = 0, maxMipmapLevelClamp = 0;
};

} // namespace wooly

#endif // WOOLY_RUNTIME_TEXTURE_H
