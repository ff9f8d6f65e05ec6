//===- TextureHardwareTest.cpp - Texture filtering against an H100 --------===//
//
// The texture reference (TextureReference.h), and through the helpers it
// shares with the CPU backend (filterWeight, texelWeight, levelWeight,
// filterSum in Wooly/Runtime/Texture.h), against results recorded on an
// NVIDIA H100 by the probes in TextureProbes/ (TextureHardwareSamples.inc):
// linear filtering of random 1D and 2D float textures, weights at halfway
// points and of normalized coordinates (ramp textures), the eight texel
// weights of trilinear 3D filtering (textures with one texel set), the level
// weight of linear mipmap filtering, and trilinear mipmap filtering of
// random levels. Bit for bit, except the few samples listed with the margin
// the GPU was seen to differ by (see each test).
//
//===----------------------------------------------------------------------===//

#include "TextureReference.h"

#include "llvm/ADT/bit.h"
#include "gtest/gtest.h"

#include <cmath>

using namespace wooly;
using namespace wooly::texref;

namespace {
struct Sample1 {
  float x, out;
};
struct Sample2 {
  float x, y, out;
};
struct SampleLod {
  float x, y, lod, out;
};
struct Sample3 {
  int corner;
  float x, y, z, out;
};
struct SampleLevel {
  float lod, out;
};
struct SampleDelta {
  int level;
  float x, y, lod, out;
};
struct SampleHalf {
  int normalized;
  float x, out;
};
struct SampleRamp {
  int width;
  float x, out;
};
struct SampleFormat {
  int kind; // 0: unorm8, 1: unorm16, 2: f16
  float x, y, out;
};
#include "TextureHardwareSamples.inc"

template <typename T, size_t N> constexpr size_t count(const T (&)[N]) {
  return N;
}

/// A single-channel float texture of w x h x d texels, linear filtering,
/// clamped texel coordinates.
RefTex texture(int w, int h, int d, const float *texels) {
  RefTex t;
  t.w = w;
  t.h = h;
  t.d = d;
  t.chans = 1;
  t.texels.assign(texels, texels + size_t(w) * h * d);
  t.linear = true;
  return t;
}

/// The f16 with bits `b`, as a float.
float halfToFloat(uint16_t b) { return float(llvm::bit_cast<_Float16>(b)); }

/// Distance in ulps of `b` from `a`.
int64_t ulps(float a, float b) {
  return int64_t(llvm::bit_cast<int32_t>(b)) -
         int64_t(llvm::bit_cast<int32_t>(a));
}
} // namespace

TEST(TextureHardware, Linear1D) {
  RefTex t = texture(16, 1, 1, kT1);
  for (const Sample1 &s : kS1)
    EXPECT_EQ(t.sample(s.x, 0, 0, 1)[0], s.out)
        << "tex1D at " << std::hexfloat << s.x;
}

TEST(TextureHardware, HalfwayWeights) {
  // Texel 2 set to 1: the result is its weight. Halfway points round up;
  // normalized coordinates are truncated to 21 fractional bits before the
  // product with the width, which moves some off their halfway point.
  for (const SampleHalf &s : kH) {
    float texels[23] = {};
    texels[2] = 1.0f;
    RefTex t = texture(s.normalized ? 23 : 4, 1, 1, texels);
    t.normalized = s.normalized;
    EXPECT_EQ(t.sample(s.x, 0, 0, 1)[0], s.out)
        << (s.normalized ? "normalized " : "") << std::hexfloat << s.x;
  }
}

TEST(TextureHardware, NormalizedCoordinates) {
  // Texel i holds i: the result is i + a/256, every sample's weight.
  for (const SampleRamp &s : kR) {
    std::vector<float> v(size_t(s.width));
    for (int i = 0; i < s.width; ++i)
      v[size_t(i)] = float(i);
    RefTex t = texture(s.width, 1, 1, v.data());
    t.normalized = true;
    EXPECT_EQ(t.sample(s.x, 0, 0, 1)[0], s.out)
        << "width " << s.width << " at " << std::hexfloat << s.x;
  }
}

TEST(TextureHardware, Linear2D) {
  // The GPU rounded a few of its 2D samples one ulp below the exact sum
  // (6 of 4096 in the probe, 2 among these); the model does not reproduce
  // that, and nothing else.
  RefTex t = texture(16, 16, 1, kT2);
  unsigned exact = 0, oneBelow = 0;
  for (const Sample2 &s : kS2) {
    float got = t.sample(s.x, s.y, 0, 2)[0];
    int64_t d = ulps(s.out, got);
    if (d == 0)
      ++exact;
    else if (d == 1)
      ++oneBelow;
    else
      ADD_FAILURE() << "tex2D at " << std::hexfloat << s.x << ", " << s.y
                    << ": " << got << ", the GPU " << s.out;
  }
  EXPECT_EQ(exact + oneBelow, count(kS2));
  EXPECT_LE(oneBelow, 2u);
}

TEST(TextureHardware, TrilinearWeights3D) {
  // Corner k's texel set to 1 in a 4x4x4 texture: the result is that
  // texel's weight, sampled in the cell of texels 1..2.
  const int corners[8][3] = {{1, 1, 1}, {2, 1, 1}, {2, 2, 1}, {2, 2, 2},
                             {1, 2, 1}, {1, 1, 2}, {2, 1, 2}, {1, 2, 2}};
  for (const Sample3 &s : kD3) {
    float texels[64] = {};
    const int *c = corners[s.corner];
    texels[(c[2] * 4 + c[1]) * 4 + c[0]] = 1.0f;
    RefTex t = texture(4, 4, 4, texels);
    EXPECT_EQ(t.sample(s.x, s.y, s.z, 3)[0], s.out)
        << "corner " << s.corner << " at " << std::hexfloat << s.x << ", "
        << s.y << ", " << s.z;
  }
}

TEST(TextureHardware, LevelWeight) {
  // Level l of a 16x16 mipmap holds l everywhere: linear mipmap filtering
  // returns floor(lod) + the level weight, frac(lod) truncated to 1/256.
  RefMip m;
  for (int l = 0; l < 5; ++l) {
    std::vector<float> v(size_t(16 >> l) * (16 >> l), float(l));
    RefTex t = texture(16 >> l, 16 >> l, 1, v.data());
    t.normalized = true;
    m.levels.push_back(t);
  }
  m.mipLinear = true;
  m.maxClamp = 4;
  for (const SampleLevel &s : kML)
    EXPECT_EQ(m.sampleLod(0.5f, 0.5f, s.lod)[0], s.out)
        << "lod " << std::hexfloat << s.lod;
}

TEST(TextureHardware, TrilinearMipmapWeights) {
  // Texel (1,1) of level 0 (or of level 1) set to 1, every other texel 0.
  for (const SampleDelta &s : kMD) {
    RefMip m;
    for (int l = 0; l < 3; ++l) {
      int w = 16 >> l;
      std::vector<float> v(size_t(w) * w, 0.0f);
      if (l == s.level)
        v[size_t(w) + 1] = 1.0f;
      RefTex t = texture(w, w, 1, v.data());
      t.normalized = true;
      m.levels.push_back(t);
    }
    m.mipLinear = true;
    m.maxClamp = 2;
    EXPECT_EQ(m.sampleLod(s.x, s.y, s.lod)[0], s.out)
        << "level " << s.level << " at " << std::hexfloat << s.x << ", " << s.y
        << ", lod " << s.lod;
  }
}

TEST(TextureHardware, TrilinearMipmapRandom) {
  // Random levels 16, 8 and 4 texels wide. About 1.7% of the GPU's samples
  // differ from the model by one or more whole weight steps (all at levels
  // above 0 or at a level blend, not understood); they are counted, not
  // failed, with a bound.
  RefMip m;
  const float *p = kTM;
  for (int l = 0; l < 3; ++l) {
    int w = 16 >> l;
    RefTex t = texture(w, w, 1, p);
    t.normalized = true;
    m.levels.push_back(t);
    p += w * w;
  }
  m.mipLinear = true;
  m.maxClamp = 2;
  unsigned exact = 0;
  for (const SampleLod &s : kSL1)
    exact += m.sampleLod(s.x, s.y, s.lod)[0] == s.out;
  EXPECT_GE(exact * 100, count(kSL1) * 97) << exact << " of " << count(kSL1);
}

TEST(TextureHardware, UnormAndHalfTexels) {
  // 8- and 16-bit unorm codes read as normalized floats filter into a
  // 16-bit unorm result; f16 texels into an f16 result (a few of the GPU's
  // f16 samples differ, see filterSumHalf: counted, with a bound).
  unsigned halfExact = 0, halves = 0;
  for (int kind = 0; kind < 3; ++kind) {
    std::vector<float> v;
    for (int i = 0; i < 256; ++i) {
      uint16_t code = kCodes[kind * 256 + i];
      v.push_back(kind == 0   ? float(code) / 255.0f
                  : kind == 1 ? float(code) / 65535.0f
                              : halfToFloat(code));
    }
    RefTex t = texture(16, 16, 1, v.data());
    t.unormBits = kind == 0 ? 8 : kind == 1 ? 16 : 0;
    t.half = kind == 2;
    for (const SampleFormat &s : kSF) {
      if (s.kind != kind)
        continue;
      float got = t.sample(s.x, s.y, 0, 2)[0];
      if (kind == 2) {
        ++halves;
        halfExact += got == s.out;
        continue;
      }
      EXPECT_EQ(got, s.out) << (kind ? "unorm16" : "unorm8") << " at "
                            << std::hexfloat << s.x << ", " << s.y;
    }
  }
  EXPECT_GE(halfExact * 100, halves * 99) << halfExact << " of " << halves;
}
