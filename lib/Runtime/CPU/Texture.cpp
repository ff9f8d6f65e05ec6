//===- Texture.cpp - Textures and surfaces on the CPU backend ---*- C++ -*-===//
//
// Texture and surface objects (TextureTable) and the `__wooly_rt_texture`
// and `__wooly_rt_texquery` entry points: sampling as NVIDIA's texture
// units do it, after the CUDA programming guide's "Texture Fetching"
// appendix:
//
//   - a coordinate is scaled by the extent when normalized, then addressed
//     per texel index: wrap and mirror (normalized coordinates only; clamp
//     otherwise), clamp to the edge, or the border colour outside;
//   - point sampling takes texel floor(x);
//   - linear filtering takes texels i = floor(x - 0.5) and i + 1 with the
//     weight a = frac(x - 0.5) in 9-bit fixed point with 8 fractional
//     bits: tex(x) = (1 - a) T[i] + a T[i+1], in 2D and 3D with the
//     products of the weights; the weights' rounding to 1/256 and the
//     exact sum rounded to f32 are what an H100 computes (measured; see
//     filterSum in include/Wooly/Runtime/Texture.h);
//   - normalized-float reads map 8- and 16-bit integers to [0, 1] (unsigned)
//     or [-1, 1] (signed: x / (2^(n-1) - 1), at least -1); sRGB textures
//     then turn the r, g and b of 8-bit unsigned channels from sRGB to
//     linear (computed in double, rounded to f32);
//   - tld4 returns one component of the four texels of the 2x2 footprint,
//     in the order (i, j+1), (i+1, j+1), (i+1, j), (i, j), of the layer
//     (.a2d, .acube: clamped to the layers as an unsigned index, so that
//     a negative layer is the last) or of the cube face the
//     direction selects (.cube, .acube), whose edges clamp: a footprint at
//     a face's edge repeats the edge texels, it never reaches the adjacent
//     face (as without seamless cubemap filtering);
//   - cube maps pick the face of the major axis (the guide's table) and
//     address the face with clamping;
//   - mipmapped textures (normalized coordinates only) sample the level of
//     detail of `tex.level`, of `tex.grad` (log2 of the longer scaled
//     gradient, the OpenGL/Vulkan isotropic formula), or 0 for plain `tex`,
//     plus the bias, clamped: the nearest level (point mipmap filtering) or
//     the two levels around it filtered together, the level a dimension of
//     the filter with frac(lod) truncated to 1/256 (measured); see fetch.
//     The hardware's level of detail from gradients differs from the
//     isotropic formula by up to about 0.08 levels, depending on the
//     gradients' direction (measured, not modelled).
//
// A texel's missing channels read as 0 (a float alpha as 1). Surfaces are
// addressed in bytes in x; out-of-range accesses trap, clamp or read zeros
// as the instruction says. Every access first checks that the object is
// the launch's tenant's and that its texels are still memory the block may
// reach, so a handle never reaches another tenant's memory or freed memory.
//
//===----------------------------------------------------------------------===//

#include "Texture.h"

#include "Executor.h"

#include "Wooly/Runtime/CPU/DeviceMemory.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

namespace {
llvm::Error invalid(const llvm::Twine &why) {
  return llvm::createStringError(why);
}

/// Checks a channel format (channelFormatError).
llvm::Error checkFormat(const ChannelFormat &f) {
  if (const char *why = channelFormatError(f))
    return invalid(why);
  return llvm::Error::success();
}
} // namespace

llvm::Expected<uint64_t> TextureTable::create(const DeviceMemory &memory,
                                              bool surface,
                                              const ResourceDesc &r,
                                              const TextureDesc &t,
                                              uint64_t domain) {
  if (llvm::Error e = checkFormat(r.format))
    return std::move(e);
  TextureObject o;
  o.surface = surface;
  o.resource = r;
  o.texture = t;
  o.domain = domain;
  uint64_t elem = r.format.elementBytes();
  auto atLeast1 = [](uint64_t v) { return v ? v : 1; };
  constexpr uint64_t kMaxExtent = uint64_t(1) << 30;
  // The descriptor may come from outside: an out-of-range kind is refused.
  if (uint8_t(r.kind) > uint8_t(ResourceDesc::Kind::Pitch2D))
    return invalid("unknown resource kind");
  switch (r.kind) {
  case ResourceDesc::Kind::Linear:
    if (r.width == 0 || r.width > kMaxExtent)
      return invalid("linear texture memory needs 1 to 2^30 texels");
    o.extent[0] = r.width;
    o.rowBytes = o.sliceBytes = o.span = r.width * elem;
    break;
  case ResourceDesc::Kind::Pitch2D:
    if (r.width == 0 || r.height == 0 || r.width > kMaxExtent ||
        r.height > kMaxExtent)
      return invalid("pitch-linear texture memory needs 1 to 2^30 texels "
                     "in x and y");
    if (r.pitch < r.width * elem || r.pitch > (uint64_t(1) << 40))
      return invalid("the pitch is smaller than a row of texels");
    o.extent[0] = r.width;
    o.extent[1] = r.height;
    o.rowBytes = r.pitch;
    o.sliceBytes = r.pitch * r.height;
    o.span = (r.height - 1) * r.pitch + r.width * elem;
    break;
  case ResourceDesc::Kind::Array:
  case ResourceDesc::Kind::MipmappedArray: {
    if (r.width == 0 || r.width > kMaxExtent || r.height > kMaxExtent ||
        r.depth > kMaxExtent)
      return invalid("a CUDA array has 1 to 2^30 texels in each dimension");
    if (r.cubemap &&
        (r.width != atLeast1(r.height) || (r.depth == 0 || r.depth % 6 != 0)))
      return invalid("a cubemap array has square faces and 6 faces per "
                     "layer");
    o.extent[0] = r.width;
    o.extent[1] = atLeast1(r.height);
    o.extent[2] = atLeast1(r.depth);
    o.rowBytes = r.width * elem;
    o.sliceBytes = o.rowBytes * o.extent[1];
    o.span = o.sliceBytes * o.extent[2];
    if (r.kind == ResourceDesc::Kind::MipmappedArray) {
      if (r.levels == 0 || r.levels > mipLevelLimit(r))
        return invalid("a mipmapped array has 1 to 1 + log2(its largest "
                       "extent) levels");
      // Level 0 is the largest: the levels' bytes fit in 8/7 of it (the
      // overflow check below bounds it).
      o.span = mipLevelOffset(r, r.levels);
    }
    break;
  }
  }
  // The descriptor may come from outside (a wooly-serve client): extents
  // whose bytes overflow 64 bits would wrap the span checked below and at
  // every use, so they are refused (no allocation is that large).
  constexpr unsigned __int128 kMaxSpan = uint64_t(1) << 48;
  unsigned __int128 rows = (unsigned __int128)o.extent[1] * o.extent[2];
  if ((unsigned __int128)o.rowBytes * rows > kMaxSpan ||
      (unsigned __int128)r.width * elem > kMaxSpan)
    return invalid("the texels would span more than 2^48 bytes");
  if (surface && r.kind != ResourceDesc::Kind::Array)
    return invalid("a surface object needs a CUDA array (of a mipmapped "
                   "array: one of its levels)");
  if (!surface && r.kind == ResourceDesc::Kind::MipmappedArray) {
    if (!t.normalizedCoords)
      return invalid("a mipmapped texture with unnormalized coordinates is "
                     "not supported yet");
    if (unsigned(t.mipmapFilterMode) > 1)
      return invalid("unknown mipmap filter mode");
    if (t.mipmapFilterMode == FilterMode::Linear &&
        !(r.format.kind == ChannelKind::Float ||
          t.readMode == ReadMode::NormalizedFloat))
      return invalid("linear mipmap filtering needs a texture that returns "
                     "floats");
    if (std::isnan(t.mipmapLevelBias) || std::isnan(t.minMipmapLevelClamp) ||
        std::isnan(t.maxMipmapLevelClamp))
      return invalid("a mipmap level bias or clamp is NaN");
  }
  if (!surface) {
    bool floats = r.format.kind == ChannelKind::Float ||
                  t.readMode == ReadMode::NormalizedFloat;
    if (t.readMode == ReadMode::NormalizedFloat &&
        r.format.kind != ChannelKind::Float && r.format.bits[0] == 32)
      return invalid("32-bit integer texels cannot be read as normalized "
                     "floats");
    if (t.filterMode == FilterMode::Linear && !floats)
      return invalid("linear filtering needs a texture that returns floats");
    for (AddressMode m : t.addressMode)
      if (unsigned(m) > unsigned(AddressMode::Border))
        return invalid("unknown address mode");
    if (unsigned(t.filterMode) > 1 || unsigned(t.readMode) > 1)
      return invalid("unknown filter or read mode");
  }
  // Texels that are swapped out (their tenant idle) are fine: a kernel that
  // samples them runs once they are back, and each use checks them.
  std::optional<Allocation> a = memory.find(r.address, o.span, true);
  if (!a || (domain && a->domain != domain))
    return invalid("the texels (" + llvm::Twine(o.span) + " bytes at 0x" +
                   llvm::Twine::utohexstr(r.address) +
                   ") are not in one allocation of the caller");
  std::unique_lock<std::shared_mutex> lock(mutex);
  uint32_t slot;
  if (!freeSlots.empty()) {
    slot = freeSlots.back();
    freeSlots.pop_back();
  } else {
    if (slots.size() >= 0xffffffffu)
      return invalid("too many texture and surface objects");
    slot = uint32_t(slots.size());
    slots.emplace_back();
    generations.push_back(1);
  }
  slots[slot] = o;
  return uint64_t(generations[slot]) << 32 | (uint64_t(slot) + 1);
}

llvm::Error TextureTable::destroy(uint64_t handle, bool surface) {
  std::unique_lock<std::shared_mutex> lock(mutex);
  uint64_t slot = (handle & 0xffffffffu) - 1;
  if ((handle & 0xffffffffu) == 0 || slot >= slots.size() ||
      generations[slot] != handle >> 32 || !slots[slot] ||
      slots[slot]->surface != surface)
    return invalid(llvm::Twine("unknown ") + (surface ? "surface" : "texture") +
                   " object 0x" + llvm::Twine::utohexstr(handle));
  slots[slot].reset();
  if (++generations[slot] == 0)
    generations[slot] = 1;
  freeSlots.push_back(uint32_t(slot));
  return llvm::Error::success();
}

std::optional<TextureObject> TextureTable::find(uint64_t handle) const {
  std::shared_lock<std::shared_mutex> lock(mutex);
  uint64_t slot = (handle & 0xffffffffu) - 1;
  if ((handle & 0xffffffffu) == 0 || slot >= slots.size() ||
      generations[slot] != handle >> 32)
    return std::nullopt;
  return slots[slot];
}

//===----------------------------------------------------------------------===//
// Texels
//===----------------------------------------------------------------------===//

namespace {
/// One texel as the texture returns it: four floats or four 32-bit
/// integers.
struct Texel {
  float f[4] = {0, 0, 0, 0};
  uint32_t u[4] = {0, 0, 0, 0};
};

/// What one fetch works with: the object and whether it returns floats.
struct Sampler {
  const TextureObject &o;
  const char *base;
  bool floats;

  /// The channels of the texel at in-range indices (x, y, z).
  Texel texel(uint64_t x, uint64_t y, uint64_t z) const {
    const ResourceDesc &r = o.resource;
    const char *p =
        base + z * o.sliceBytes + y * o.rowBytes + x * r.format.elementBytes();
    Texel t;
    unsigned n = r.format.channels(), bytes = unsigned(r.format.bits[0]) / 8;
    for (unsigned c = 0; c < n; ++c, p += bytes) {
      uint32_t raw = 0;
      std::memcpy(&raw, p, bytes);
      switch (r.format.kind) {
      case ChannelKind::Float:
        if (bytes == 2) {
          _Float16 h;
          std::memcpy(&h, &raw, 2);
          t.f[c] = float(h);
        } else {
          std::memcpy(&t.f[c], &raw, 4);
        }
        break;
      case ChannelKind::Unsigned:
        t.u[c] = raw;
        if (floats)
          t.f[c] = float(raw) / float((uint64_t(1) << (8 * bytes)) - 1);
        break;
      case ChannelKind::Signed: {
        int32_t s = bytes == 1   ? int32_t(int8_t(raw))
                    : bytes == 2 ? int32_t(int16_t(raw))
                                 : int32_t(raw);
        t.u[c] = uint32_t(s);
        if (floats)
          t.f[c] = std::max(
              float(s) / float((uint64_t(1) << (8 * bytes - 1)) - 1), -1.0f);
        break;
      }
      }
      if (floats && o.texture.sRGB && c < 3 && bytes == 1 &&
          r.format.kind == ChannelKind::Unsigned) {
        // From the 8-bit code itself (a table of 256 entries on the GPU).
        double v = double(raw) / 255.0;
        t.f[c] = float(v <= 0.04045 ? v / 12.92
                                    : std::pow((v + 0.055) / 1.055, 2.4));
      }
    }
    if (floats && n < 4)
      t.f[3] = 1.0f;
    return t;
  }

  /// The border colour as a texel (for unsigned normalized reads, its
  /// code is the nearest one: what the unorm filter sums; not measured).
  Texel border() const {
    Texel t;
    const ChannelFormat &f = o.resource.format;
    bool unorm = floats && f.kind == ChannelKind::Unsigned;
    for (unsigned c = 0; c < 4; ++c) {
      float b = o.texture.borderColor[c];
      t.f[c] = b;
      t.u[c] = uint32_t(int32_t(b));
      if (unorm && f.bits[c] && f.bits[c] <= 16)
        t.u[c] = uint32_t(std::lround(std::clamp(b, 0.0f, 1.0f) *
                                      float((1u << f.bits[c]) - 1)));
    }
    return t;
  }

  /// Texel index `i` of dimension `dim` after addressing; false for the
  /// border.
  bool address(int64_t &i, unsigned dim) const {
    int64_t n = int64_t(o.extent[dim]);
    AddressMode m = o.texture.addressMode[dim];
    // Wrap and mirror take normalized coordinates only; clamp otherwise.
    if (!o.texture.normalizedCoords &&
        (m == AddressMode::Wrap || m == AddressMode::Mirror))
      m = AddressMode::Clamp;
    switch (m) {
    case AddressMode::Wrap:
      i = ((i % n) + n) % n;
      return true;
    case AddressMode::Mirror: {
      int64_t p = ((i % (2 * n)) + 2 * n) % (2 * n);
      i = p < n ? p : 2 * n - 1 - p;
      return true;
    }
    case AddressMode::Border:
      return i >= 0 && i < n;
    case AddressMode::Clamp:
      break;
    }
    // Clamp, and any other value (descriptors are checked at creation).
    i = std::clamp<int64_t>(i, 0, n - 1);
    return true;
  }

  /// The texel at (possibly out-of-range) indices, z already a slice.
  Texel at(int64_t x, int64_t y, uint64_t z, unsigned dims) const {
    if (!address(x, 0) || (dims > 1 && !address(y, 1)))
      return border();
    return texel(uint64_t(x), dims > 1 ? uint64_t(y) : 0, z);
  }
  Texel at3(int64_t x, int64_t y, int64_t z) const {
    if (!address(x, 0) || !address(y, 1) || !address(z, 2))
      return border();
    return texel(uint64_t(x), uint64_t(y), uint64_t(z));
  }
};

/// The index of texel coordinate `x` (floor, saturated to +-2^40; NaN 0).
int64_t floorIndex(double x) {
  if (!(x == x))
    return 0;
  constexpr double kLimit = 1099511627776.0; // 2^40
  return int64_t(std::floor(std::clamp(x, -kLimit, kLimit)));
}

/// Texel coordinate of `c` in a dimension of `n` texels.
double texelCoord(const TextureObject &o, float c, uint64_t n) {
  return o.texture.normalizedCoords ? normalizedTexelCoord(c, n) : double(c);
}

/// The linear-filtering footprint of texel coordinate `x`: the first
/// index and the weight of the second, in 1/256 (`filterWeight`).
struct Footprint {
  int64_t i;
  uint32_t a;
};
Footprint footprint(double x) {
  double xb = x - 0.5;
  if (!(xb == xb))
    return {0, 0};
  int64_t i = floorIndex(xb);
  return {i, filterWeight(xb - std::floor(xb))};
}

/// How filtered texels of a channel are summed (see filterSum and its
/// siblings in Wooly/Runtime/Texture.h).
enum class FilterArith : uint8_t { F32, F16, Unorm8, Unorm16 };

/// The texels of a linear-filtering footprint (of one or two mipmap
/// levels) with their weights in 1/256, and each channel's arithmetic.
struct Terms {
  unsigned n = 0;
  uint32_t w[16];
  Texel t[16];
  FilterArith arith[4] = {FilterArith::F32, FilterArith::F32, FilterArith::F32,
                          FilterArith::F32};

  /// Terms for filtering texels of `o`: f16 channels, and 8- and 16-bit
  /// unsigned ones read as normalized floats without sRGB, have the
  /// hardware's own arithmetic; the rest f32's.
  explicit Terms(const TextureObject &o) {
    const ChannelFormat &f = o.resource.format;
    bool unorm = f.kind == ChannelKind::Unsigned &&
                 o.texture.readMode == ReadMode::NormalizedFloat &&
                 !o.texture.sRGB;
    for (unsigned c = 0; c < 4; ++c) {
      if (f.kind == ChannelKind::Float && f.bits[c] == 16)
        arith[c] = FilterArith::F16;
      else if (unorm && (f.bits[c] == 8 || f.bits[c] == 16))
        arith[c] = f.bits[c] == 8 ? FilterArith::Unorm8 : FilterArith::Unorm16;
    }
  }

  /// The filtered texel: per channel the weighted sum as the hardware
  /// computes it.
  Texel sum() const {
    Texel r;
    for (unsigned c = 0; c < 4; ++c) {
      if (arith[c] == FilterArith::Unorm8 || arith[c] == FilterArith::Unorm16) {
        uint32_t codes[16];
        for (unsigned k = 0; k < n; ++k)
          codes[k] = t[k].u[c];
        r.f[c] =
            filterUnorm(w, codes, n, arith[c] == FilterArith::Unorm8 ? 8 : 16);
        continue;
      }
      float v[16];
      for (unsigned k = 0; k < n; ++k)
        v[k] = t[k].f[c];
      r.f[c] = arith[c] == FilterArith::F16 ? filterSumHalf(w, v, n)
                                            : filterSum(w, v, n);
    }
    return r;
  }
};

/// `(x, y, z)` picks the face of a cube map and (s, t) normalized on it.
void cubeFace(float x, float y, float z, unsigned &face, float &s, float &t) {
  float ax = std::fabs(x), ay = std::fabs(y), az = std::fabs(z);
  float sc, tc, m;
  if (ax >= ay && ax >= az) {
    face = x >= 0 ? 0 : 1;
    sc = x >= 0 ? -z : z;
    tc = -y;
    m = ax;
  } else if (ay >= az) {
    face = y >= 0 ? 2 : 3;
    sc = x;
    tc = y >= 0 ? z : -z;
    m = ay;
  } else {
    face = z >= 0 ? 4 : 5;
    sc = z >= 0 ? x : -x;
    tc = -y;
    m = az;
  }
  s = (sc / m + 1.0f) / 2.0f;
  t = (tc / m + 1.0f) / 2.0f;
}

/// Writes `t` to the four output words (floats or integers).
void put(uint32_t *out, const Texel &t, bool floats) {
  for (unsigned c = 0; c < 4; ++c) {
    if (floats)
      std::memcpy(&out[c], &t.f[c], 4);
    else
      out[c] = t.u[c];
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// The entry points
//===----------------------------------------------------------------------===//

namespace {
/// The object `handle` for thread `t`, after the checks that keep tenants
/// apart: it exists, is of the right kind, is the launch's tenant's, and its
/// texels are memory the block may still reach (`write`: and write).
TextureObject objectFor(GpuThread *t, uint64_t handle, bool surface,
                        bool write) {
  Worker *w = t->worker;
  LaunchState *l = w->launch;
  std::optional<TextureObject> o =
      l->textures ? l->textures->find(handle) : std::nullopt;
  uint64_t own = l->memoryDomainOf(w->linearBlock);
  if (!o || o->surface != surface || (own && o->domain != own))
    faultThread(t, FaultKind::IllegalAddress, [&] {
      return std::string(surface ? "surface" : "texture") + " object 0x" +
             hex(handle) + " does not exist";
    });
  if (!l->reachable(w->linearBlock, o->resource.address, o->span, write))
    faultThread(t, FaultKind::IllegalAddress, [&] {
      return std::string(surface ? "surface" : "texture") + " object 0x" +
             hex(handle) + " refers to memory that was freed";
    });
  return *o;
}

float asFloat(uint32_t w) {
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

/// Level `level` of the mipmapped texture `o` as a texture of its own.
TextureObject levelOf(const TextureObject &o, uint32_t level) {
  TextureObject l = o;
  ResourceDesc &r = l.resource;
  uint64_t e[3];
  mipLevelExtent(o.resource, level, e);
  r.address += mipLevelOffset(o.resource, level);
  r.width = e[0];
  r.height = e[1];
  r.depth = e[2];
  for (unsigned d = 0; d < 3; ++d)
    l.extent[d] = e[d] ? e[d] : 1;
  l.rowBytes = e[0] * r.format.elementBytes();
  l.sliceBytes = l.rowBytes * l.extent[1];
  l.span = l.sliceBytes * l.extent[2];
  return l;
}

/// Adds the linear-filtering footprint of texel coordinates (x, y, z) in
/// `dims` dimensions (slice `slice` where dims < 3) to `terms`, each
/// weight also times `levelW` (in 1/256) where `hasLevel`: the footprint
/// is then level side `dl` (0 or 1) of a linear mipmap filter, the level
/// a dimension of its own (`texelWeight`; after z for 3D textures, which
/// was not measured).
void addFootprint(const Sampler &s, double x, double y, double z, unsigned dims,
                  uint64_t slice, uint32_t levelW, unsigned dl, bool hasLevel,
                  Terms &terms) {
  Footprint fx = footprint(x), fy = footprint(y), fz = footprint(z);
  uint32_t wx[2] = {256 - fx.a, fx.a}, wy[2] = {256 - fy.a, fy.a},
           wz[2] = {256 - fz.a, fz.a};
  unsigned nz = dims == 3 ? 2 : 1, ny = dims >= 2 ? 2 : 1;
  for (unsigned dz = 0; dz < nz; ++dz)
    for (unsigned dy = 0; dy < ny; ++dy)
      for (unsigned dx = 0; dx < 2; ++dx) {
        uint32_t w;
        if (dims == 3) {
          w = texelWeight(wx[dx], dx, wy[dy], dy, true, wz[dz], true);
          if (hasLevel)
            w = div256(w * levelW, dz == dl);
        } else {
          w = texelWeight(wx[dx], dx, wy[dy], dy, dims >= 2, levelW, hasLevel);
        }
        terms.w[terms.n] = w;
        terms.t[terms.n++] = dims == 3
                                 ? s.at3(fx.i + dx, fy.i + dy, fz.i + dz)
                                 : s.at(fx.i + dx, fy.i + dy, slice, dims);
      }
}

/// One tex or tld4 sample of the (single-level) texture `o` at the
/// coordinates `in` (f32 bits or s32), in slice `slice` of a layered or
/// cube geometry. With `mip`, a filtered sample is not summed: its texels
/// are added to `mip` as level side `dl` of a linear mipmap filter whose
/// level weight is `levelW` (see fetch).
Texel sampleLevel(uint32_t op, const TextureObject &o, const uint32_t *in,
                  uint64_t slice, bool floats, Terms *mip = nullptr,
                  uint32_t levelW = 256, unsigned dl = 0) {
  unsigned kind = (op >> WOOLY_TEX_KIND_SHIFT) & 7;
  unsigned geometry = (op >> WOOLY_TEX_GEOMETRY_SHIFT) & 7;
  bool intCoords = (op >> WOOLY_TEX_INT_COORDS_SHIFT) & 1;
  const ResourceDesc &r = o.resource;
  Sampler s{o, reinterpret_cast<const char *>(r.address), floats};
  unsigned dims = geometry == 0 || geometry == 3   ? 1
                  : geometry == 1 || geometry == 4 ? 2
                                                   : 3;
  if (intCoords) {
    // tex1Dfetch and integer coordinates: texel indices, no filtering.
    int64_t c[3] = {0, 0, 0};
    for (unsigned d = 0; d < dims; ++d)
      c[d] = int32_t(in[d]);
    if (r.kind == ResourceDesc::Kind::Linear) {
      Texel z;
      if (c[0] >= 0 && uint64_t(c[0]) < o.extent[0])
        z = s.texel(uint64_t(c[0]), 0, 0);
      return z;
    }
    return dims == 3 ? s.at3(c[0], c[1], c[2]) : s.at(c[0], c[1], slice, dims);
  }
  float cx = asFloat(in[0]), cy = dims > 1 ? asFloat(in[1]) : 0.0f,
        cz = dims > 2 ? asFloat(in[2]) : 0.0f;
  double x, y, z = 0;
  bool cube = geometry == 5 || geometry == 6;
  if (cube) {
    unsigned face;
    float fs, ft;
    cubeFace(cx, cy, cz, face, fs, ft);
    slice += face;
    // As other normalized coordinates (not measured for cube maps).
    x = normalizedTexelCoord(fs, o.extent[0]);
    y = normalizedTexelCoord(ft, o.extent[1]);
    dims = 2;
  } else {
    x = texelCoord(o, cx, o.extent[0]);
    y = texelCoord(o, cy, o.extent[1]);
    z = texelCoord(o, cz, o.extent[2]);
  }
  // Cube faces are clamped at their edges.
  TextureObject clamped;
  const Sampler *sp = &s;
  Sampler cs{clamped, s.base, floats};
  if (cube) {
    clamped = o;
    clamped.texture.addressMode[0] = clamped.texture.addressMode[1] =
        AddressMode::Clamp;
    clamped.texture.normalizedCoords = false;
    sp = &cs;
  }
  if (kind == 1) { // tld4
    unsigned comp = (op >> WOOLY_TEX_COMPONENT_SHIFT) & 3;
    Footprint fx = footprint(x), fy = footprint(y);
    Texel q[4] = {
        sp->at(fx.i, fy.i + 1, slice, 2), sp->at(fx.i + 1, fy.i + 1, slice, 2),
        sp->at(fx.i + 1, fy.i, slice, 2), sp->at(fx.i, fy.i, slice, 2)};
    Texel g;
    for (unsigned k = 0; k < 4; ++k) {
      g.f[k] = q[k].f[comp];
      g.u[k] = q[k].u[comp];
    }
    return g;
  }
  if (o.texture.filterMode == FilterMode::Point) {
    int64_t i = floorIndex(x), j = floorIndex(y), k = floorIndex(z);
    Texel v = dims == 3 ? sp->at3(i, j, k) : sp->at(i, j, slice, dims);
    if (mip) {
      mip->w[mip->n] = levelW;
      mip->t[mip->n++] = v;
    }
    return v;
  }
  if (mip) {
    addFootprint(*sp, x, y, z, dims, slice, levelW, dl, true, *mip);
    return Texel();
  }
  Terms terms(o);
  addFootprint(*sp, x, y, z, dims, slice, 256, 0, false, terms);
  return terms.sum();
}

/// The level of detail of a fetch from the mipmapped texture `o`
/// (`mode`: 0 none, 1 `.level`, 2 `.grad`; `in`: the level or the
/// gradients, `n` per direction), before bias and clamping. The gradients'
/// level is log2 of the longer of the two scaled by level 0's extents
/// (the isotropic formula of the OpenGL and Vulkan specifications, which
/// CUDA's documentation follows), in double, rounded to f32.
float levelOfDetail(GpuThread *t, const TextureObject &o, unsigned mode,
                    unsigned geometry, const uint32_t *in, unsigned n) {
  if (mode == 1)
    return asFloat(in[0]);
  if (mode != 2)
    return 0.0f;
  if (geometry == 5 || geometry == 6)
    faultThread(t, [&] {
      return std::string("tex.grad on a mipmapped cube map is not supported "
                         "yet on the CPU backend");
    });
  double len[2] = {0, 0};
  for (unsigned k = 0; k < 2; ++k)
    for (unsigned d = 0; d < n; ++d) {
      double v = double(asFloat(in[k * n + d])) * double(o.extent[d]);
      len[k] += v * v;
    }
  return float(std::log2(std::sqrt(std::max(len[0], len[1]))));
}

/// A tex or tld4 fetch. A mipmapped texture's level of detail is the
/// instruction's (0 without `.level`/`.grad`) plus the bias, clamped to the
/// descriptor's clamps and to the levels there are (NaN as 0). With point
/// mipmap filtering (and always for tld4 and integer coordinates) it
/// samples level ceil(lod + 0.5) - 1, the nearest one, halves going down;
/// with linear mipmap filtering the footprints of levels floor(lod) and
/// floor(lod) + 1 are one filter with the level as a dimension of weight
/// f = frac(lod) truncated to 1/256 (`levelWeight`, `texelWeight`: both
/// measured on an H100 for 2D textures).
void fetch(GpuThread *t, uint32_t op, const TextureObject &o,
           const uint32_t *in, uint32_t *out) {
  unsigned kind = (op >> WOOLY_TEX_KIND_SHIFT) & 7;
  unsigned geometry = (op >> WOOLY_TEX_GEOMETRY_SHIFT) & 7;
  unsigned mode = (op >> WOOLY_TEX_MODE_SHIFT) & 3;
  bool intCoords = (op >> WOOLY_TEX_INT_COORDS_SHIFT) & 1;
  const ResourceDesc &r = o.resource;
  bool floats = r.format.kind == ChannelKind::Float ||
                o.texture.readMode == ReadMode::NormalizedFloat;
  // geometry: dim1 0, dim2 1, dim3 2, a1d 3, a2d 4, cube 5, acube 6.
  bool layeredGeometry = geometry == 3 || geometry == 4 || geometry == 6;
  uint64_t slice = 0;
  if (layeredGeometry) {
    // The layer is clamped as an unsigned number: a negative one is the
    // last layer (measured on an H200).
    uint64_t layer = uint32_t(*in++);
    uint64_t layers = o.extent[2] / (geometry == 6 ? 6 : 1);
    slice = std::min(layer, layers - 1) * (geometry == 6 ? 6 : 1);
  }
  unsigned ncoords = geometry == 0 || geometry == 3   ? 1
                     : geometry == 1 || geometry == 4 ? 2
                                                      : 3;
  if (r.kind != ResourceDesc::Kind::MipmappedArray) {
    // Without mipmaps, levels and gradients sample level 0.
    put(out, sampleLevel(op, o, in, slice, floats), floats);
    return;
  }
  const TextureDesc &td = o.texture;
  float lod = levelOfDetail(t, o, mode, geometry, in + ncoords, ncoords);
  if (std::isnan(lod))
    lod = 0.0f;
  lod = std::clamp(lod + td.mipmapLevelBias, td.minMipmapLevelClamp,
                   std::max(td.minMipmapLevelClamp, td.maxMipmapLevelClamp));
  lod = std::clamp(lod, 0.0f, float(r.levels - 1));
  if (td.mipmapFilterMode == FilterMode::Point || kind == 1 || intCoords) {
    uint32_t level = uint32_t(std::max(std::ceil(lod + 0.5f) - 1.0f, 0.0f));
    put(out, sampleLevel(op, levelOf(o, level), in, slice, floats), floats);
    return;
  }
  uint32_t l0 = uint32_t(std::floor(lod)), f = levelWeight(lod);
  if (f == 0 || l0 + 1 >= r.levels) {
    put(out, sampleLevel(op, levelOf(o, l0), in, slice, floats), floats);
    return;
  }
  Terms terms(o);
  sampleLevel(op, levelOf(o, l0), in, slice, floats, &terms, 256 - f, 0);
  sampleLevel(op, levelOf(o, l0 + 1), in, slice, floats, &terms, f, 1);
  put(out, terms.sum(), true);
}

/// A surface access: suld, sust.b, sust.p or sured.
void surfaceAccess(GpuThread *t, uint32_t op, const TextureObject &o,
                   const uint32_t *in, uint32_t *out) {
  unsigned kind = (op >> WOOLY_TEX_KIND_SHIFT) & 7;
  unsigned geometry = (op >> WOOLY_TEX_GEOMETRY_SHIFT) & 7;
  unsigned bytes = 1u << ((op >> WOOLY_TEX_ELEMENT_SHIFT) & 3);
  unsigned vec = (op >> WOOLY_TEX_VECTOR_SHIFT) & 7;
  unsigned clamp = (op >> WOOLY_TEX_CLAMP_SHIFT) & 3;
  const ResourceDesc &r = o.resource;
  unsigned elem = r.format.elementBytes();
  // sust.p writes one texel of the surface's format.
  unsigned access = kind == 4 ? elem : bytes * vec;
  bool layeredGeometry = geometry == 3 || geometry == 4;
  int64_t c[3] = {0, 0, 0};
  if (layeredGeometry)
    c[2] = int32_t(*in++);
  unsigned dims = geometry == 0 || geometry == 3 ? 1 : geometry == 2 ? 3 : 2;
  for (unsigned d = 0; d < dims; ++d)
    c[d] = int32_t(*in++);
  int64_t limit[3] = {int64_t(o.rowBytes) - int64_t(access),
                      int64_t(o.extent[1]) - 1, int64_t(o.extent[2]) - 1};
  bool outside = false;
  for (unsigned d = 0; d < 3; ++d)
    if (c[d] < 0 || c[d] > limit[d])
      outside = true;
  if (outside) {
    if (clamp == 0) // trap
      faultThread(t, FaultKind::IllegalAddress, [&] {
        return "out-of-range surface access at (" + std::to_string(c[0]) +
               ", " + std::to_string(c[1]) + ", " + std::to_string(c[2]) +
               ") of a " + std::to_string(o.extent[0]) + "x" +
               std::to_string(o.extent[1]) + "x" + std::to_string(o.extent[2]) +
               " surface (x in bytes)";
      });
    if (clamp == 2) { // zero
      if (kind == 2)
        std::memset(out, 0, (bytes == 8 ? 2 : 1) * vec * 4);
      return;
    }
    for (unsigned d = 0; d < 3; ++d)
      c[d] = std::clamp<int64_t>(c[d], 0, std::max<int64_t>(limit[d], 0));
  }
  // Elements are aligned to their size, as the hardware addresses them.
  c[0] &= ~int64_t(std::min(access, bytes) - 1);
  char *p = reinterpret_cast<char *>(r.address) +
            uint64_t(c[2]) * o.sliceBytes + uint64_t(c[1]) * o.rowBytes +
            uint64_t(c[0]);
  switch (kind) {
  case 2: // suld.b
    for (unsigned e = 0; e < vec; ++e) {
      uint64_t v = 0;
      std::memcpy(&v, p + e * bytes, bytes);
      out[(bytes == 8 ? 2 : 1) * e] = uint32_t(v);
      if (bytes == 8)
        out[2 * e + 1] = uint32_t(v >> 32);
    }
    return;
  case 3: // sust.b
    for (unsigned e = 0; e < vec; ++e) {
      uint64_t v = in[(bytes == 8 ? 2 : 1) * e];
      if (bytes == 8)
        v |= uint64_t(in[2 * e + 1]) << 32;
      std::memcpy(p + e * bytes, &v, bytes);
    }
    return;
  case 4: { // sust.p: the values converted to the surface's format
    unsigned n = r.format.channels(), cb = unsigned(r.format.bits[0]) / 8;
    for (unsigned ch = 0; ch < n && ch < vec; ++ch) {
      uint32_t w = in[ch];
      uint32_t raw = w;
      if (r.format.kind == ChannelKind::Float && cb == 2) {
        _Float16 h = _Float16(asFloat(w));
        uint16_t hb;
        std::memcpy(&hb, &h, 2);
        raw = hb;
      }
      std::memcpy(p + ch * cb, &raw, cb);
    }
    return;
  }
  case 5: { // sured.b
    unsigned red = (op >> WOOLY_TEX_RED_SHIFT) & 15;
    uint64_t v = in[0];
    if (bytes == 8)
      v |= uint64_t(in[1]) << 32;
    auto apply = [&](auto *q, auto value) {
      using T = std::remove_pointer_t<decltype(q)>;
      using S = std::make_signed_t<T>;
      T old = __atomic_load_n(q, __ATOMIC_RELAXED), next;
      do {
        switch (red) {
        case 0: // add
          next = T(old + value);
          break;
        case 2: // umin
          next = std::min<T>(old, value);
          break;
        case 3: // smin
          next = T(std::min<S>(S(old), S(value)));
          break;
        case 5: // umax
          next = std::max<T>(old, value);
          break;
        case 6: // smax
          next = T(std::max<S>(S(old), S(value)));
          break;
        case 10: // and
          next = old & value;
          break;
        case 11: // or
          next = old | value;
          break;
        default:
          next = old;
          break;
        }
      } while (!__atomic_compare_exchange_n(
          q, &old, next, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    };
    if (bytes == 8)
      apply(reinterpret_cast<uint64_t *>(p), v);
    else
      apply(reinterpret_cast<uint32_t *>(p), uint32_t(v));
    return;
  }
  default:
    faultThread(t, "internal error: unknown surface operation");
  }
}

/// OpenCL's channel data type of a format read as `floats` (PTX's txq and
/// suq answer with OpenCL's values).
uint32_t channelDataType(const ChannelFormat &f, bool normalized) {
  unsigned b = unsigned(f.bits[0]);
  switch (f.kind) {
  case ChannelKind::Float:
    return b == 16 ? 0x10DD : 0x10DE;
  case ChannelKind::Signed:
    if (normalized)
      return b == 8 ? 0x10D0 : 0x10D1;
    return b == 8 ? 0x10D7 : b == 16 ? 0x10D8 : 0x10D9;
  case ChannelKind::Unsigned:
    break;
  }
  if (normalized)
    return b == 8 ? 0x10D2 : 0x10D3;
  return b == 8 ? 0x10DA : b == 16 ? 0x10DB : 0x10DC;
}
} // namespace

extern "C" {

void __wooly_rt_texture(WoolyThreadCtx *ctx, uint32_t op, uint64_t handle,
                        const uint32_t *in, uint32_t *out) {
  GpuThread *t = threadOf(ctx);
  unsigned kind = (op >> WOOLY_TEX_KIND_SHIFT) & 7;
  bool surface = kind >= 2;
  TextureObject o = objectFor(t, handle, surface, kind >= 3);
  if (surface)
    surfaceAccess(t, op, o, in, out);
  else
    fetch(t, op, o, in, out);
}

uint32_t __wooly_rt_texquery(WoolyThreadCtx *ctx, uint32_t query,
                             uint32_t surface, uint64_t handle, int32_t level) {
  GpuThread *t = threadOf(ctx);
  TextureObject o = objectFor(t, handle, surface != 0, false);
  // txq.level's extents are those of the level (0 beyond the last one).
  bool mipmapped = o.resource.kind == ResourceDesc::Kind::MipmappedArray;
  if (mipmapped && level != 0) {
    if (level < 0 || uint32_t(level) >= o.resource.levels)
      return 0;
    o = levelOf(o, uint32_t(level));
  }
  const ResourceDesc &r = o.resource;
  switch (query) {
  case 0: // width
    return uint32_t(r.width);
  case 1: // height
    return uint32_t(r.height);
  case 2: // depth
    return uint32_t(r.layered || r.cubemap ? 0 : r.depth);
  case 3: // channel_data_type
    return channelDataType(r.format,
                           !surface && r.format.kind != ChannelKind::Float &&
                               o.texture.readMode == ReadMode::NormalizedFloat);
  case 4: { // channel_order: CL_R, CL_RG, CL_RGBA
    unsigned n = r.format.channels();
    return n == 1 ? 0x10B0 : n == 2 ? 0x10B2 : 0x10B5;
  }
  case 5: // normalized_coords
    return o.texture.normalizedCoords ? 1 : 0;
  case 6: // filter_mode
    return o.texture.filterMode == FilterMode::Linear ? 1 : 0;
  case 10: // array_size
    return uint32_t(r.layered ? r.depth / (r.cubemap ? 6 : 1) : 0);
  case 11: // num_mipmap_levels
    return mipmapped ? r.levels : 1;
  case 12: // num_samples
    return 0;
  default:
    faultThread(t, [&] {
      return "txq of the address modes is not supported yet on the CPU "
             "backend";
    });
  }
}

} // extern "C"
