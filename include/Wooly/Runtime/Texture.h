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

#include <algorithm>
#include <cmath>
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

//===----------------------------------------------------------------------===//
// Filtering arithmetic, as measured on an NVIDIA H100 (sm_90)
//===----------------------------------------------------------------------===//
//
// The CUDA programming guide says only that filtering weights are 9-bit
// fixed point with 8 fractional bits. What the texture unit computes was
// fitted to 4096-sample runs of random texels and coordinates, and of
// textures with one texel set (which read a single weight back); the
// probes are unittests/Runtime/TextureProbes/, the recorded samples
// unittests/Runtime/TextureHardwareTest.cpp. Everything below reproduces
// those runs bit for bit, except 6 of 4096 random 2D samples, which the
// GPU rounds one ulp lower than the exact sum (not modelled).
//
//  - A dimension's weight of the second texel is a = frac(x - 0.5) in
//    1/256, rounded to the nearest, halves up (`filterWeight`), where x is
//    the texel coordinate: a normalized coordinate truncated to 21
//    fractional bits, times the extent (`normalizedTexelCoord`).
//  - A texel's weight is the product of its dimensions' weights (256 - a
//    or a), each product rounded to 1/256 (`texelWeight`): in 2D halves up
//    where the texel's x and y sides agree ((0,0), (1,1)) and down
//    otherwise, so that the four weights add up to 256; in 3D x times z
//    first (halves up on the x = 1 side), then times y (as in 2D).
//    Linear mipmap filtering of a 2D texture is this 3D filter with the
//    level as z: 8 texels of two levels, the level weight f =
//    frac(lod) truncated to 1/256 (`levelWeight`).
//  - The result is the exact sum of weight x texel over 256, rounded to
//    the nearest f32 with halves away from zero (`filterSum`); for f16
//    texels to the nearest f16 (`filterSumHalf`); 8- and 16-bit unorm
//    texels read as floats are filtered on their codes into a 16-bit
//    unorm result (`filterUnorm`). Signed normalized and sRGB texels take
//    the f32 path (not measured).

/// The texel coordinate of normalized coordinate `c` in a dimension of `n`
/// texels: `c` truncated to a multiple of 2^-21 (toward -inf), times `n`,
/// exactly. Measured on widths 23 to 4093 (the weights of 4096 random
/// coordinates each, which neither the f32 product nor the exact one
/// gives).
inline double normalizedTexelCoord(float c, uint64_t n) {
  return std::floor(double(c) * 2097152.0) / 2097152.0 * double(n);
}

/// The weight of a footprint's second texel, in 1/256, for the fraction
/// `frac` (in [0, 1)) of a texel coordinate minus 0.5: 0..256.
inline uint32_t filterWeight(double frac) {
  return uint32_t(std::floor(frac * 256.0 + 0.5));
}

/// The weight of the second of two mipmap levels for the level of detail
/// `lod` (>= 0), in 1/256: frac(lod), truncated.
inline uint32_t levelWeight(float lod) {
  return uint32_t(std::floor((double(lod) - std::floor(double(lod))) * 256.0));
}

/// `n` / 256 rounded to the nearest integer, halves up or down.
inline uint32_t div256(uint32_t n, bool halvesUp) {
  return (n + (halvesUp ? 128 : 127)) >> 8;
}

/// The weight (in 1/256) of one texel of a linear-filtering footprint:
/// `wx`, `wy`, `wz` are its side's weight in each dimension (256 - a for
/// the first texel, a for the second), `dx`, `dy` its side in x and y (0
/// or 1); `hasY`, `hasZ` say whether the dimension is filtered (z: the
/// depth of a 3D texture, or the level of a linearly mipmapped one).
inline uint32_t texelWeight(uint32_t wx, unsigned dx, uint32_t wy, unsigned dy,
                            bool hasY, uint32_t wz, bool hasZ) {
  uint32_t w = wx;
  if (hasZ)
    w = div256(w * wz, dx == 1);
  if (hasY)
    w = div256(w * wy, dx == dy);
  return w;
}

/// hi + lo (|lo| at most half an ulp of hi in double) rounded to `bits`
/// fraction bits at exponents of at least `minExp` (f32: 23, -126; f16:
/// 10, -14): the nearest such value, halves away from zero.
inline double roundTiesAway(double hi, double lo, int bits, int minExp) {
  if (hi == 0 || !std::isfinite(hi))
    return hi;
  double a = std::fabs(hi), l = hi < 0 ? -lo : lo;
  double ulp = std::ldexp(1.0, std::max(std::ilogb(a), minExp) - bits);
  double m = a / ulp, fl = std::floor(m), r = m - fl; // exact
  bool up = r > 0.5 || (r == 0.5 && l >= 0);
  return std::copysign((fl + (up ? 1 : 0)) * ulp, hi);
}

/// sum(w[k] * v[k]) / 256 exactly, as hi + lo with hi the nearest double:
/// each product is exact in double, and the sum's rounding errors are
/// carried along (TwoSum).
inline void exactFilterSum(const uint32_t *w, const float *v, unsigned n,
                           double &hi, double &lo) {
  double s = 0, e = 0;
  for (unsigned k = 0; k < n; ++k) {
    if (!w[k])
      continue;
    double p = double(w[k]) * double(v[k]) / 256.0;
    double t = s + p, bp = t - s;
    e += (s - (t - bp)) + (p - bp);
    s = t;
  }
  hi = s + e;
  double bp = hi - s;
  lo = std::isfinite(hi) ? (s - (hi - bp)) + (e - bp) : 0.0;
}

/// The filtered value of f32 texels `v` with weights `w` (in 1/256): the
/// exact sum rounded to the nearest f32, halves away from zero.
inline float filterSum(const uint32_t *w, const float *v, unsigned n) {
  double hi, lo;
  exactFilterSum(w, v, n, hi, lo);
  return float(roundTiesAway(hi, lo, 23, -126));
}

/// The same for f16 texels (as floats): the result is rounded to f16
/// (measured: 4084 of 4096 random samples; the rest not understood).
inline float filterSumHalf(const uint32_t *w, const float *v, unsigned n) {
  double hi, lo;
  exactFilterSum(w, v, n, hi, lo);
  double r = roundTiesAway(hi, lo, 10, -14);
  return float(std::fabs(r) > 65504.0 ? std::copysign(INFINITY, r) : r);
}

/// The same for 8- or 16-bit unsigned normalized texels read as floats,
/// from their codes `c`: the filter's result is a 16-bit unorm value,
/// sum(w c) scaled to 16 bits (an 8-bit code is c * 257) and rounded
/// halves up, then converted to f32 (measured on 4096 random samples
/// each).
inline float filterUnorm(const uint32_t *w, const uint32_t *c, unsigned n,
                         unsigned bits) {
  uint64_t sum = 0;
  for (unsigned k = 0; k < n; ++k)
    sum += uint64_t(w[k]) * c[k];
  uint64_t code16 = ((bits == 8 ? sum * 257 : sum) + 128) >> 8;
  return float(code16) / 65535.0f;
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
