//===- FloatHelpers.cpp - Floating-point helpers of the CPU backend -------===//
//
// Directed-rounding arithmetic runs the host's IEEE operation under
// fesetround (this file is compiled with -frounding-math). Conversions round
// exactly with integer arithmetic (roundExact), so they need no floating-
// point environment. f16/bf16 fused multiply-add computes in double with
// round-to-odd, which makes the final rounding to 11 or 8 bits correct.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Runtime/CPU/FloatHelpers.h"

#include "llvm/ADT/bit.h"

#include <cfenv>
#include <cmath>

#pragma STDC FENV_ACCESS ON

namespace {

enum class Mode { rn, rz, rm, rp };

/// A binary floating-point format: `mantBits` stored fraction bits,
/// `expBits` exponent bits, whether it has infinities, its canonical NaN and
/// its largest finite encoding (all without the sign bit).
struct Format {
  int mantBits;
  int expBits;
  bool hasInf;
  uint64_t nanBits;
  uint64_t maxBits;
};

constexpr Format kF16{10, 5, true, 0x7fff, 0x7bff};
constexpr Format kBF16{7, 8, true, 0x7fff, 0x7f7f};
constexpr Format kF32{23, 8, true, 0x7fffffff, 0x7f7fffff};
constexpr Format kF64{52, 11, true, 0x7fffffffffffffffull,
                      0x7fefffffffffffffull};
constexpr Format kE4M3{3, 4, false, 0x7f, 0x7e};
constexpr Format kE5M2{2, 5, true, 0x7f, 0x7b};

uint64_t infBits(const Format &f) {
  return ((uint64_t(1) << f.expBits) - 1) << f.mantBits;
}

uint64_t signBit(const Format &f) {
  return uint64_t(1) << (f.expBits + f.mantBits);
}

/// The encoding of an overflowed result of sign `neg`.
uint64_t overflow(bool neg, const Format &f, Mode mode, bool satfinite) {
  uint64_t mag;
  if (satfinite)
    mag = f.maxBits;
  else if (!f.hasInf)
    return f.nanBits;
  else if (mode == Mode::rn)
    mag = infBits(f);
  else if (mode == Mode::rz)
    mag = f.maxBits;
  else if (mode == Mode::rm)
    mag = neg ? infBits(f) : f.maxBits;
  else
    mag = neg ? f.maxBits : infBits(f);
  return mag | (neg ? signBit(f) : 0);
}

/// Rounds the exact value (-1)^neg * m * 2^e (m > 0) to format `f`.
uint64_t roundExact(bool neg, uint64_t m, int e, const Format &f, Mode mode,
                    bool satfinite = false) {
  const int bias = (1 << (f.expBits - 1)) - 1;
  const int emin = 1 - bias;
  const int msb = 63 - __builtin_clzll(m);
  const int exp = msb + e;
  const int q = (exp < emin ? emin : exp) - f.mantBits; // quantum exponent
  const int shift = q - e;
  uint64_t mant;
  enum { Zero, Below, Half, Above } rest = Zero;
  if (shift <= 0) {
    mant = m << -shift;
  } else if (shift < 64) {
    mant = m >> shift;
    uint64_t rem = m & ((uint64_t(1) << shift) - 1);
    uint64_t half = uint64_t(1) << (shift - 1);
    rest = rem == 0 ? Zero : rem < half ? Below : rem == half ? Half : Above;
  } else {
    mant = 0;
    uint64_t half = uint64_t(1) << 63;
    rest = shift > 64 || m < half ? Below : m == half ? Half : Above;
  }
  bool up = false;
  switch (mode) {
  case Mode::rn:
    up = rest == Above || (rest == Half && (mant & 1));
    break;
  case Mode::rz:
    break;
  case Mode::rm:
    up = neg && rest != Zero;
    break;
  case Mode::rp:
    up = !neg && rest != Zero;
    break;
  }
  int qq = q;
  mant += up;
  const uint64_t implicit = uint64_t(1) << f.mantBits;
  if (mant == implicit << 1) {
    mant >>= 1;
    ++qq;
  }
  uint64_t bits;
  if (mant >= implicit) {
    int64_t field = int64_t(qq) + f.mantBits + bias;
    if (field >= (int64_t(1) << f.expBits))
      return overflow(neg, f, mode, satfinite);
    bits = (uint64_t(field) << f.mantBits) | (mant - implicit);
    if (bits > f.maxBits)
      return overflow(neg, f, mode, satfinite);
  } else {
    bits = mant; // subnormal or zero
  }
  return bits | (neg ? signBit(f) : 0);
}

uint64_t bitsOf(double x) { return llvm::bit_cast<uint64_t>(x); }

double doubleOf(uint64_t u) { return llvm::bit_cast<double>(u); }

float floatOf(uint32_t u) { return llvm::bit_cast<float>(u); }

/// Rounds a double to format `f`.
uint64_t roundDouble(double x, const Format &f, Mode mode,
                     bool satfinite = false) {
  uint64_t u = bitsOf(x);
  bool neg = u >> 63;
  int field = int((u >> 52) & 0x7ff);
  uint64_t frac = u & ((uint64_t(1) << 52) - 1);
  if (field == 0x7ff) {
    if (frac)
      return f.nanBits;
    if (satfinite)
      return f.maxBits | (neg ? signBit(f) : 0);
    if (!f.hasInf)
      return f.nanBits;
    return infBits(f) | (neg ? signBit(f) : 0);
  }
  if (field == 0) {
    if (!frac)
      return neg ? signBit(f) : 0;
    return roundExact(neg, frac, -1074, f, mode, satfinite);
  }
  return roundExact(neg, frac | (uint64_t(1) << 52), field - 1075, f, mode,
                    satfinite);
}

uint64_t roundSigned(int64_t x, const Format &f, Mode mode) {
  if (x == 0)
    return 0;
  uint64_t mag = x < 0 ? 0 - uint64_t(x) : uint64_t(x);
  return roundExact(x < 0, mag, 0, f, mode);
}

uint64_t roundUnsigned(uint64_t x, const Format &f, Mode mode) {
  if (x == 0)
    return 0;
  return roundExact(false, x, 0, f, mode);
}

/// The exact value of a narrow (<= 32-bit) float encoding in format `f`.
double decode(uint64_t bits, const Format &f) {
  bool neg = (bits >> (f.expBits + f.mantBits)) & 1;
  uint64_t field = (bits >> f.mantBits) & ((uint64_t(1) << f.expBits) - 1);
  uint64_t frac = bits & ((uint64_t(1) << f.mantBits) - 1);
  uint64_t allOnes = (uint64_t(1) << f.expBits) - 1;
  double r;
  if (f.hasInf && field == allOnes)
    r = frac ? NAN : INFINITY;
  else if (!f.hasInf && field == allOnes &&
           frac == (uint64_t(1) << f.mantBits) - 1)
    r = NAN;
  else {
    int bias = (1 << (f.expBits - 1)) - 1;
    if (field == 0)
      r = std::ldexp(double(frac), 1 - bias - f.mantBits);
    else
      r = std::ldexp(double(frac | (uint64_t(1) << f.mantBits)),
                     int(field) - bias - f.mantBits);
  }
  return neg ? -r : r;
}

int fenvMode(Mode m) {
  switch (m) {
  case Mode::rn:
    return FE_TONEAREST;
  case Mode::rz:
    return FE_TOWARDZERO;
  case Mode::rm:
    return FE_DOWNWARD;
  case Mode::rp:
    return FE_UPWARD;
  }
  return FE_TONEAREST;
}

/// Runs `op` with the rounding mode `m`, restoring the caller's mode.
template <typename T, typename Op> T withMode(Mode m, Op op) {
  int old = std::fegetround();
  std::fesetround(fenvMode(m));
  volatile T r = op();
  std::fesetround(old);
  return r;
}

/// `p + z` (doubles, each exactly a float or a product of two floats),
/// rounded to f32 by the directed mode `m` without fesetround (which costs
/// more than the arithmetic; nvcc's expf has an fma.rm.f32): TwoSum gives
/// the sum's rounding error exactly, the exact sum rounded to odd in
/// double (53 bits) rounds correctly to 24 bits (roundDouble, with integer
/// arithmetic). An exact zero (whose sign the mode decides) or a result
/// that is not finite is left to `slow`, the host operation under the mode.
/// Assumes the caller's rounding mode is to nearest, as it always is in the
/// runtime (withMode restores it).
template <typename Slow>
float directedSumF32(double p, double z, Mode m, Slow slow) {
  double s = p + z;
  if (s == 0 || !std::isfinite(s))
    return slow();
  double bb = s - p;
  double e = (p - (s - bb)) + (z - bb);
  if (e != 0) {
    // Inexact: truncate toward zero, then set the last bit (round to odd).
    if ((e < 0) != (s < 0))
      s = std::nextafter(s, 0.0);
    s = doubleOf(bitsOf(s) | 1);
  }
  return floatOf(uint32_t(roundDouble(s, kF32, m)));
}

/// f16/bf16 fma: a*b+c in double rounded to odd, then rounded to `f`.
uint32_t fmaNarrow(uint32_t a, uint32_t b, uint32_t c, const Format &f,
                   Mode m) {
  volatile double x = decode(a & 0xffff, f), y = decode(b & 0xffff, f),
                  z = decode(c & 0xffff, f);
  int old = std::fegetround();
  std::fesetround(FE_TOWARDZERO);
  std::feclearexcept(FE_INEXACT);
  volatile double r = std::fma(x, y, z);
  bool inexact = std::fetestexcept(FE_INEXACT);
  if (!inexact && r == 0) {
    // An exact zero takes its sign from the rounding mode.
    std::fesetround(fenvMode(m));
    r = std::fma(x, y, z);
  }
  std::fesetround(old);
  double rr = r;
  if (inexact && std::isfinite(rr))
    rr = doubleOf(bitsOf(rr) | 1); // round to odd
  return uint32_t(roundDouble(rr, f, m));
}

} // namespace

#define WOOLY_DEFINE_DIRECTED(m)                                               \
  extern "C" float __wooly_fadd_##m##_f32(float a, float b) {                  \
    return directedSumF32(a, b, Mode::m, [&] {                                 \
      return withMode<float>(Mode::m, [&] { return a + b; });                  \
    });                                                                        \
  }                                                                            \
  extern "C" float __wooly_fsub_##m##_f32(float a, float b) {                  \
    return directedSumF32(a, -double(b), Mode::m, [&] {                        \
      return withMode<float>(Mode::m, [&] { return a - b; });                  \
    });                                                                        \
  }                                                                            \
  extern "C" float __wooly_fmul_##m##_f32(float a, float b) {                  \
    /* The product of two floats is exact in double. */                        \
    return directedSumF32(double(a) * double(b), 0.0, Mode::m, [&] {           \
      return withMode<float>(Mode::m, [&] { return a * b; });                  \
    });                                                                        \
  }                                                                            \
  extern "C" float __wooly_fdiv_##m##_f32(float a, float b) {                  \
    return withMode<float>(Mode::m, [&] { return a / b; });                    \
  }                                                                            \
  extern "C" float __wooly_fma_##m##_f32(float a, float b, float c) {          \
    return directedSumF32(double(a) * double(b), c, Mode::m, [&] {             \
      return withMode<float>(Mode::m, [&] { return std::fma(a, b, c); });      \
    });                                                                        \
  }                                                                            \
  extern "C" float __wooly_fsqrt_##m##_f32(float a) {                          \
    return withMode<float>(Mode::m, [&] { return std::sqrt(a); });             \
  }                                                                            \
  extern "C" float __wooly_frcp_##m##_f32(float a) {                           \
    return withMode<float>(Mode::m, [&] { return 1.0f / a; });                 \
  }                                                                            \
  extern "C" double __wooly_fadd_##m##_f64(double a, double b) {               \
    return withMode<double>(Mode::m, [&] { return a + b; });                   \
  }                                                                            \
  extern "C" double __wooly_fsub_##m##_f64(double a, double b) {               \
    return withMode<double>(Mode::m, [&] { return a - b; });                   \
  }                                                                            \
  extern "C" double __wooly_fmul_##m##_f64(double a, double b) {               \
    return withMode<double>(Mode::m, [&] { return a * b; });                   \
  }                                                                            \
  extern "C" double __wooly_fdiv_##m##_f64(double a, double b) {               \
    return withMode<double>(Mode::m, [&] { return a / b; });                   \
  }                                                                            \
  extern "C" double __wooly_fma_##m##_f64(double a, double b, double c) {      \
    return withMode<double>(Mode::m, [&] { return std::fma(a, b, c); });       \
  }                                                                            \
  extern "C" double __wooly_fsqrt_##m##_f64(double a) {                        \
    return withMode<double>(Mode::m, [&] { return std::sqrt(a); });            \
  }                                                                            \
  extern "C" double __wooly_frcp_##m##_f64(double a) {                         \
    return withMode<double>(Mode::m, [&] { return 1.0 / a; });                 \
  }

WOOLY_DEFINE_DIRECTED(rz)
WOOLY_DEFINE_DIRECTED(rm)
WOOLY_DEFINE_DIRECTED(rp)

#define WOOLY_DEFINE_ANY(m)                                                    \
  extern "C" uint32_t __wooly_fma_##m##_f16(uint32_t a, uint32_t b,            \
                                            uint32_t c) {                      \
    return fmaNarrow(a, b, c, kF16, Mode::m);                                  \
  }                                                                            \
  extern "C" uint32_t __wooly_fma_##m##_bf16(uint32_t a, uint32_t b,           \
                                             uint32_t c) {                     \
    return fmaNarrow(a, b, c, kBF16, Mode::m);                                 \
  }                                                                            \
  extern "C" float __wooly_cvt_f64_f32_##m(double x) {                         \
    uint32_t bits = uint32_t(roundDouble(x, kF32, Mode::m));                   \
    return floatOf(bits);                                                      \
  }                                                                            \
  extern "C" uint32_t __wooly_cvt_f64_f16_##m(double x) {                      \
    return uint32_t(roundDouble(x, kF16, Mode::m));                            \
  }                                                                            \
  extern "C" uint32_t __wooly_cvt_f64_bf16_##m(double x) {                     \
    return uint32_t(roundDouble(x, kBF16, Mode::m));                           \
  }                                                                            \
  extern "C" uint32_t __wooly_cvt_s64_f16_##m(int64_t x) {                     \
    return uint32_t(roundSigned(x, kF16, Mode::m));                            \
  }                                                                            \
  extern "C" uint32_t __wooly_cvt_u64_f16_##m(uint64_t x) {                    \
    return uint32_t(roundUnsigned(x, kF16, Mode::m));                          \
  }                                                                            \
  extern "C" uint32_t __wooly_cvt_s64_bf16_##m(int64_t x) {                    \
    return uint32_t(roundSigned(x, kBF16, Mode::m));                           \
  }                                                                            \
  extern "C" uint32_t __wooly_cvt_u64_bf16_##m(uint64_t x) {                   \
    return uint32_t(roundUnsigned(x, kBF16, Mode::m));                         \
  }                                                                            \
  extern "C" float __wooly_cvt_s64_f32_##m(int64_t x) {                        \
    return floatOf(uint32_t(roundSigned(x, kF32, Mode::m)));                   \
  }                                                                            \
  extern "C" float __wooly_cvt_u64_f32_##m(uint64_t x) {                       \
    return floatOf(uint32_t(roundUnsigned(x, kF32, Mode::m)));                 \
  }                                                                            \
  extern "C" double __wooly_cvt_s64_f64_##m(int64_t x) {                       \
    return doubleOf(roundSigned(x, kF64, Mode::m));                            \
  }                                                                            \
  extern "C" double __wooly_cvt_u64_f64_##m(uint64_t x) {                      \
    return doubleOf(roundUnsigned(x, kF64, Mode::m));                          \
  }

WOOLY_DEFINE_ANY(rn)
WOOLY_DEFINE_ANY(rz)
WOOLY_DEFINE_ANY(rm)
WOOLY_DEFINE_ANY(rp)

extern "C" uint32_t __wooly_cvt_f64_e4m3_rn_satfinite(double x) {
  return uint32_t(roundDouble(x, kE4M3, Mode::rn, /*satfinite=*/true));
}

extern "C" uint32_t __wooly_cvt_f64_e5m2_rn_satfinite(double x) {
  return uint32_t(roundDouble(x, kE5M2, Mode::rn, /*satfinite=*/true));
}

extern "C" uint32_t __wooly_cvt_e4m3_f16(uint32_t x) {
  return uint32_t(roundDouble(decode(x & 0xff, kE4M3), kF16, Mode::rn));
}

extern "C" uint32_t __wooly_cvt_e5m2_f16(uint32_t x) {
  return uint32_t(roundDouble(decode(x & 0xff, kE5M2), kF16, Mode::rn));
}

const wooly::cpu::FloatHelper *wooly::cpu::getFloatHelpers(size_t &count) {
#define WOOLY_FLOAT_HELPER_ENTRY(name, ret, params)                            \
  {#name, reinterpret_cast<void *>(&name)},
  static const FloatHelper helpers[] = {
      WOOLY_FLOAT_HELPERS(WOOLY_FLOAT_HELPER_ENTRY)};
#undef WOOLY_FLOAT_HELPER_ENTRY
  count = sizeof(helpers) / sizeof(helpers[0]);
  return helpers;
}
