//===- TextureReference.h - CUDA texture sampling in plain C++ --*- C++ -*-===//
//
// The reference that Wooly's texture tests compare against bit for bit:
// the CorpusDiff suite (TextureDiff, CorpusDiffTest.cpp) and the CUDA test
// program test/apps/cuda/texture_filter.cu, which runs through Wooly's
// libcudart against wooly-serve. It samples as the CUDA programming guide's
// "Texture Fetching" appendix says: point sampling takes texel floor(x);
// linear filtering takes texels i = floor(x - 0.5) and i + 1 with weight
// a = frac(x - 0.5) in 1/256 (9-bit fixed point, 8 fractional bits),
// (1-a)(1-b) T[i,j] + a(1-b) T[i+1,j] + (1-a) b T[i,j+1] + a b T[i+1,j+1];
// wrap/mirror/clamp/border per texel index (wrap and mirror with
// normalized coordinates only). The weights' rounding and the sum's are
// the arithmetic an H100 was measured to do (filterWeight, texelWeight,
// levelWeight, filterSum in Wooly/Runtime/Texture.h, shared with the CPU
// backend and pinned to recorded GPU samples by TextureHardwareTest.cpp).
//
// Header-only and plain C++17 (nvcc's host compiler includes it too).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_UNITTESTS_RUNTIME_TEXTUREREFERENCE_H
#define WOOLY_UNITTESTS_RUNTIME_TEXTUREREFERENCE_H

#include "Wooly/Runtime/Texture.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace wooly::texref {

/// A float texture of up to 4 channels (the missing ones read 0, alpha 1)
/// with its sampling state, and the reference sampler.
struct RefTex {
  int w = 1, h = 1, d = 1, chans = 4;
  std::vector<float> texels; // w*h*d texels of `chans` floats
  AddressMode mode[3] = {AddressMode::Clamp, AddressMode::Clamp,
                         AddressMode::Clamp};
  bool linear = false, normalized = false;
  float border[4] = {0, 0, 0, 0};
  /// 8 or 16: the texels are that many bits of unsigned normalized codes
  /// (stored as code / max) and filter as such (filterUnorm); 0: floats.
  int unormBits = 0;
  /// f16 texels (stored as floats): they filter to f16 (filterSumHalf).
  bool half = false;

  /// Addresses index `i` of a dimension of `n` texels; false: the border.
  bool addr(int64_t &i, int n, AddressMode m) const {
    if (!normalized && (m == AddressMode::Wrap || m == AddressMode::Mirror))
      m = AddressMode::Clamp;
    if (m == AddressMode::Wrap) {
      i = ((i % n) + n) % n;
    } else if (m == AddressMode::Mirror) {
      int64_t p = ((i % (2 * n)) + 2 * n) % (2 * n);
      i = p < n ? p : 2 * n - 1 - p;
    } else if (m == AddressMode::Border) {
      return i >= 0 && i < n;
    } else {
      i = std::min<int64_t>(std::max<int64_t>(i, 0), n - 1);
    }
    return true;
  }
  std::array<float, 4> texel(int64_t i, int64_t j, int64_t k) const {
    if (!addr(i, w, mode[0]) || !addr(j, h, mode[1]) || !addr(k, d, mode[2]))
      return {border[0], border[1], border[2], border[3]};
    std::array<float, 4> t{0, 0, 0, 1};
    for (int c = 0; c < chans; ++c)
      t[c] = texels[((k * h + j) * w + i) * chans + c];
    return t;
  }
  /// (index, weight of the next texel in 1/256) of coordinate `x` over `n`
  /// texels.
  std::pair<int64_t, uint32_t> lin(float x, int n) const {
    double xb = (normalized ? normalizedTexelCoord(x, n) : double(x)) - 0.5;
    double fl = std::floor(xb);
    return {int64_t(fl), filterWeight(xb - fl)};
  }
  int64_t pt(float x, int n) const {
    return int64_t(
        std::floor(normalized ? normalizedTexelCoord(x, n) : double(x)));
  }
  /// Adds the texels of the linear footprint at (x, y, z) (`dims`
  /// coordinates) and their weights to `w` and `t`, times the level weight
  /// `levelW` of a linear mipmap filter where `hasLevel` (2D only).
  void footprint(float x, float y, float z, int dims, uint32_t levelW,
                 bool hasLevel, std::vector<uint32_t> &w,
                 std::vector<std::array<float, 4>> &t) const {
    auto [i, a] = lin(x, this->w);
    auto [j, b] = dims > 1 ? lin(y, h) : std::pair<int64_t, uint32_t>{0, 0};
    auto [k, g] = dims > 2 ? lin(z, d) : std::pair<int64_t, uint32_t>{0, 0};
    uint32_t wx[2] = {256 - a, a}, wy[2] = {256 - b, b}, wz[2] = {256 - g, g};
    for (int dz = 0; dz < (dims > 2 ? 2 : 1); ++dz)
      for (int dy = 0; dy < (dims > 1 ? 2 : 1); ++dy)
        for (int dx = 0; dx < 2; ++dx) {
          w.push_back(
              dims > 2 ? texelWeight(wx[dx], dx, wy[dy], dy, true, wz[dz], true)
                       : texelWeight(wx[dx], dx, wy[dy], dy, dims > 1, levelW,
                                     hasLevel));
          t.push_back(texel(i + dx, j + dy, k + dz));
        }
  }
  /// tex1D/tex2D/tex3D at (x, y, z) with `dims` coordinates.
  std::array<float, 4> sample(float x, float y, float z, int dims) const {
    if (!linear)
      return texel(pt(x, w), dims > 1 ? pt(y, h) : 0, dims > 2 ? pt(z, d) : 0);
    std::vector<uint32_t> wgt;
    std::vector<std::array<float, 4>> t;
    footprint(x, y, z, dims, 256, false, wgt, t);
    return sum(wgt, t);
  }
  /// Per channel, the filtered sum of texels `t` of this texture's format
  /// with weights `w`.
  std::array<float, 4> sum(const std::vector<uint32_t> &w,
                           const std::vector<std::array<float, 4>> &t) const {
    std::array<float, 4> r{};
    unsigned n = unsigned(t.size());
    for (int c = 0; c < 4; ++c) {
      if (unormBits && c < chans) {
        // The codes back from code / max (exact for 8 and 16 bits).
        double max = double((1u << unormBits) - 1);
        std::vector<uint32_t> codes;
        for (const auto &x : t)
          codes.push_back(uint32_t(
              std::lround(std::min(std::max(double(x[c]), 0.0), 1.0) * max)));
        r[c] = filterUnorm(w.data(), codes.data(), n, unsigned(unormBits));
        continue;
      }
      std::vector<float> v;
      for (const auto &x : t)
        v.push_back(x[c]);
      r[c] = half ? filterSumHalf(w.data(), v.data(), n)
                  : filterSum(w.data(), v.data(), n);
    }
    return r;
  }
  /// tex2Dgather's component `comp` of the 2x2 footprint at (x, y).
  std::array<float, 4> gather(float x, float y, int comp) const {
    int64_t i = lin(x, w).first, j = lin(y, h).first;
    return {texel(i, j + 1, 0)[comp], texel(i + 1, j + 1, 0)[comp],
            texel(i + 1, j, 0)[comp], texel(i, j, 0)[comp]};
  }
};

/// The layer that layer index `l` of a layered texture of `layers` layers
/// samples: clamped as an unsigned number, so a negative index is the last
/// layer (measured on an H200).
inline int layerIndex(int l, int layers) {
  return int(std::min(uint32_t(l), uint32_t(layers - 1)));
}

/// The face of a cube map (0..5: +x, -x, +y, -y, +z, -z) that direction
/// (x, y, z) selects, and the normalized (s, t) on it, after the CUDA
/// programming guide's cubemap table (the major axis; ties to x, then y).
inline int cubeFace(float x, float y, float z, float &s, float &t) {
  float ax = std::fabs(x), ay = std::fabs(y), az = std::fabs(z), m, sc, tc;
  int face;
  if (ax >= ay && ax >= az) {
    face = x >= 0 ? 0 : 1;
    m = ax;
    sc = x >= 0 ? -z : z;
    tc = -y;
  } else if (ay >= az) {
    face = y >= 0 ? 2 : 3;
    m = ay;
    sc = x;
    tc = y >= 0 ? z : -z;
  } else {
    face = z >= 0 ? 4 : 5;
    m = az;
    sc = z >= 0 ? x : -x;
    tc = -y;
  }
  s = (sc / m + 1.0f) / 2.0f;
  t = (tc / m + 1.0f) / 2.0f;
  return face;
}

/// Slice `k` (a layer or a cube face) of the 3D texels of `t`, as a 2D
/// texture of its own, with clamping (how cube faces are addressed).
inline RefTex sliceOf(const RefTex &t, int k) {
  RefTex one = t;
  one.d = 1;
  size_t n = size_t(t.w) * t.h * t.chans;
  one.texels.assign(t.texels.begin() + k * n, t.texels.begin() + (k + 1) * n);
  return one;
}

/// A mipmapped 2D texture (normalized coordinates): one RefTex per level,
/// and the level of detail as Wooly computes it (lib/Runtime/CPU/
/// Texture.cpp): the instruction's level (or log2 of the longer gradient
/// scaled by level 0's extents, in double; 0 for tex2D) plus the bias,
/// clamped to [minClamp, maxClamp] and to the levels (NaN as 0); point
/// mipmap filtering takes level ceil(lod + 0.5) - 1; linear filters levels
/// floor(lod) and floor(lod) + 1 together, the level a third dimension
/// with weight frac(lod) truncated to 1/256 (measured on an H100). The
/// level of detail of gradients is the isotropic formula, which the H100
/// does not follow exactly (up to about 0.08 levels apart).
struct RefMip {
  std::vector<RefTex> levels;
  bool mipLinear = false;
  float bias = 0, minClamp = 0, maxClamp = 0;

  float clampLod(float lod) const {
    if (std::isnan(lod))
      lod = 0.0f;
    lod =
        std::min(std::max(lod + bias, minClamp), std::max(minClamp, maxClamp));
    return std::min(std::max(lod, 0.0f), float(levels.size() - 1));
  }
  /// tex2DLod.
  std::array<float, 4> sampleLod(float x, float y, float lod) const {
    lod = clampLod(lod);
    if (!mipLinear) {
      int l = int(std::max(std::ceil(lod + 0.5f) - 1.0f, 0.0f));
      return levels[l].sample(x, y, 0, 2);
    }
    int l0 = int(std::floor(lod));
    uint32_t f = levelWeight(lod);
    if (f == 0 || l0 + 1 >= int(levels.size()))
      return levels[l0].sample(x, y, 0, 2);
    std::vector<uint32_t> w;
    std::vector<std::array<float, 4>> t;
    for (unsigned dl = 0; dl < 2; ++dl) {
      const RefTex &lt = levels[l0 + dl];
      uint32_t lw = dl ? f : 256 - f;
      if (lt.linear) {
        lt.footprint(x, y, 0, 2, lw, true, w, t);
      } else {
        w.push_back(lw);
        t.push_back(lt.sample(x, y, 0, 2));
      }
    }
    return levels[l0].sum(w, t);
  }
  /// The level of detail of tex2DGrad with gradients (dxx, dxy), (dyx, dyy).
  float gradLod(float dxx, float dxy, float dyx, float dyy) const {
    double w = levels[0].w, h = levels[0].h;
    double a = double(dxx) * w, b = double(dxy) * h, c = double(dyx) * w,
           d = double(dyy) * h;
    return float(std::log2(std::sqrt(std::max(a * a + b * b, c * c + d * d))));
  }
  /// What the test kernels tex2d_mip (test/corpus/texture.cu) and sampleMip
  /// (test/apps/cuda/texture_filter.cu) return for (x, y, lod, g):
  /// tex2DLod at lod, tex2DGrad with gradients (g, 0) and (0.5g, g), and
  /// tex2D.
  std::array<std::array<float, 4>, 3> lodGradPlain(float x, float y, float lod,
                                                   float g) const {
    return {sampleLod(x, y, lod),
            sampleLod(x, y, gradLod(g, 0.0f, 0.5f * g, g)),
            sampleLod(x, y, 0.0f)};
  }
};

/// A w x h texture of 8-bit RGBA texels (`bytes`, 4 a texel) read as
/// normalized floats, as the hardware converts them: v / 255, and with
/// `srgb` the colour channels (not alpha) through the sRGB curve, from the
/// 8-bit code (an exact quotient, not the rounded float). Filtering sums
/// the codes (filterUnorm), except with `srgb` (f32, not measured).
inline RefTex unorm8Tex(int w, int h, const std::vector<uint8_t> &bytes,
                        bool srgb) {
  RefTex t;
  t.w = w;
  t.h = h;
  t.unormBits = srgb ? 0 : 8;
  for (size_t k = 0; k < bytes.size(); ++k) {
    double v = double(bytes[k]) / 255.0;
    if (srgb && k % 4 != 3)
      v = v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
    t.texels.push_back(srgb && k % 4 != 3 ? float(v)
                                          : float(bytes[k]) / 255.0f);
  }
  return t;
}

/// The float4 array format (4 x 32-bit float channels).
inline ChannelFormat float4Format() {
  ChannelFormat f;
  f.bits[0] = f.bits[1] = f.bits[2] = f.bits[3] = 32;
  f.kind = ChannelKind::Float;
  return f;
}

/// Coordinates for a texture of `w` x `h` texels: texel centres, edges,
/// points just around them and random ones, in texels or normalized.
inline std::vector<float> texCoords(int w, int h, bool normalized,
                                    uint32_t seed, int n) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> ux(-2.5f, float(w) + 2.5f),
      uy(-2.5f, float(h) + 2.5f);
  std::vector<float> c;
  const float special[] = {0.0f,
                           0.5f,
                           1.0f,
                           0.25f,
                           0.75f,
                           1.5f,
                           -0.5f,
                           2.001f,
                           1.999f,
                           0.5f + 1.0f / 512.0f,
                           0.5f + 3.0f / 512.0f,
                           -1.0f,
                           3.0f};
  for (float sx : special)
    for (float sy : special) {
      c.push_back(sx);
      c.push_back(sy);
    }
  while (int(c.size()) < 2 * n) {
    c.push_back(ux(rng));
    c.push_back(uy(rng));
  }
  c.resize(2 * n);
  if (normalized)
    for (size_t k = 0; k < c.size(); k += 2) {
      c[k] /= float(w);
      c[k + 1] /= float(h);
    }
  return c;
}

} // namespace wooly::texref

#endif // WOOLY_UNITTESTS_RUNTIME_TEXTUREREFERENCE_H
