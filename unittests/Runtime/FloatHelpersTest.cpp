//===- FloatHelpersTest.cpp - Tests of the CPU float helpers --------------===//
//
// Checks the bit patterns of directed-rounding arithmetic and of the exact
// conversions in lib/Runtime/CPU/FloatHelpers.cpp.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Runtime/CPU/FloatHelpers.h"

#include "llvm/ADT/bit.h"
#include "gtest/gtest.h"

#include <cfenv>
#include <cmath>
#include <string>

namespace {

/// The bits of `x` (the overload picks the width).
uint32_t bits(float x) { return llvm::bit_cast<uint32_t>(x); }
uint64_t bits(double x) { return llvm::bit_cast<uint64_t>(x); }

TEST(FloatHelpersTest, AddDirected) {
  float tiny = std::ldexp(1.0f, -30);
  EXPECT_EQ(bits(__wooly_fadd_rz_f32(1.0f, tiny)), 0x3f800000u);
  EXPECT_EQ(bits(__wooly_fadd_rm_f32(1.0f, tiny)), 0x3f800000u);
  EXPECT_EQ(bits(__wooly_fadd_rp_f32(1.0f, tiny)), 0x3f800001u);
  EXPECT_EQ(bits(__wooly_fadd_rm_f32(-1.0f, -tiny)), 0xbf800001u);
  EXPECT_EQ(bits(__wooly_fadd_rz_f32(-1.0f, -tiny)), 0xbf800000u);
  // An exact zero sum is -0 only when rounding down.
  EXPECT_EQ(bits(__wooly_fadd_rm_f32(1.0f, -1.0f)), 0x80000000u);
  EXPECT_EQ(bits(__wooly_fadd_rp_f32(1.0f, -1.0f)), 0x00000000u);
  EXPECT_EQ(bits(__wooly_fsub_rp_f64(1.0, -std::ldexp(1.0, -60))),
            0x3ff0000000000001ull);
}

TEST(FloatHelpersTest, MulDivDirected) {
  EXPECT_EQ(bits(__wooly_fdiv_rz_f32(1.0f, 3.0f)), 0x3eaaaaaau);
  EXPECT_EQ(bits(__wooly_fdiv_rm_f32(1.0f, 3.0f)), 0x3eaaaaaau);
  EXPECT_EQ(bits(__wooly_fdiv_rp_f32(1.0f, 3.0f)), 0x3eaaaaabu);
  EXPECT_EQ(bits(__wooly_fdiv_rm_f32(-1.0f, 3.0f)), 0xbeaaaaabu);
  EXPECT_EQ(bits(__wooly_frcp_rz_f64(3.0)), 0x3fd5555555555555ull);
  EXPECT_EQ(bits(__wooly_frcp_rp_f64(3.0)), 0x3fd5555555555556ull);
  // Overflow: rz stays at the largest finite value, rp goes to infinity.
  EXPECT_EQ(bits(__wooly_fmul_rz_f32(llvm::bit_cast<float>(0x7f7fffffu), 2.0f)),
            0x7f7fffffu);
  EXPECT_EQ(bits(__wooly_fmul_rp_f32(llvm::bit_cast<float>(0x7f7fffffu), 2.0f)),
            0x7f800000u);
  EXPECT_EQ(
      bits(__wooly_fmul_rp_f32(-llvm::bit_cast<float>(0x7f7fffffu), 2.0f)),
      0xff7fffffu);
}

TEST(FloatHelpersTest, SqrtFmaDirected) {
  EXPECT_EQ(bits(__wooly_fsqrt_rz_f32(2.0f)), 0x3fb504f3u);
  EXPECT_EQ(bits(__wooly_fsqrt_rp_f32(2.0f)), 0x3fb504f4u);
  float e = std::ldexp(1.0f, -23);
  // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46: the last term decides rp.
  EXPECT_EQ(bits(__wooly_fma_rz_f32(1.0f + e, 1.0f + e, 0.0f)), 0x3f800002u);
  EXPECT_EQ(bits(__wooly_fma_rp_f32(1.0f + e, 1.0f + e, 0.0f)), 0x3f800003u);
}

TEST(FloatHelpersTest, ModeIsRestored) {
  (void)__wooly_fadd_rp_f32(1.0f, 2.0f);
  (void)__wooly_fma_rm_f16(0x3c00, 0x3c00, 0x3c00);
  EXPECT_EQ(std::fegetround(), FE_TONEAREST);
}

TEST(FloatHelpersTest, NarrowingConversions) {
  double one = 1.0;
  EXPECT_EQ(bits(__wooly_cvt_f64_f32_rz(one + std::ldexp(1.0, -40))),
            0x3f800000u);
  EXPECT_EQ(bits(__wooly_cvt_f64_f32_rp(one + std::ldexp(1.0, -40))),
            0x3f800001u);
  EXPECT_EQ(bits(__wooly_cvt_f64_f32_rn(std::nan(""))), 0x7fffffffu);
  // f16: ties to even, overflow per mode, subnormals.
  EXPECT_EQ(__wooly_cvt_f64_f16_rn(one + std::ldexp(1.0, -11)), 0x3c00u);
  EXPECT_EQ(__wooly_cvt_f64_f16_rn(one + 3 * std::ldexp(1.0, -11)), 0x3c02u);
  EXPECT_EQ(__wooly_cvt_f64_f16_rn(65520.0), 0x7c00u);
  EXPECT_EQ(__wooly_cvt_f64_f16_rz(65520.0), 0x7bffu);
  EXPECT_EQ(__wooly_cvt_f64_f16_rm(-1e9), 0xfc00u);
  EXPECT_EQ(__wooly_cvt_f64_f16_rp(-1e9), 0xfbffu);
  EXPECT_EQ(__wooly_cvt_f64_f16_rn(std::ldexp(1.0, -25)), 0x0000u);
  EXPECT_EQ(__wooly_cvt_f64_f16_rn(3 * std::ldexp(1.0, -26)), 0x0001u);
  EXPECT_EQ(__wooly_cvt_f64_f16_rp(std::ldexp(1.0, -30)), 0x0001u);
  EXPECT_EQ(__wooly_cvt_f64_f16_rm(-std::ldexp(1.0, -30)), 0x8001u);
  EXPECT_EQ(__wooly_cvt_f64_f16_rz(-std::ldexp(1.0, -30)), 0x8000u);
  // Rounding a subnormal up to the smallest normal.
  EXPECT_EQ(__wooly_cvt_f64_f16_rp(std::ldexp(1.0, -14) - std::ldexp(1.0, -40)),
            0x0400u);
  EXPECT_EQ(__wooly_cvt_f64_f16_rn(std::nan("")), 0x7fffu);
  // bf16.
  EXPECT_EQ(__wooly_cvt_f64_bf16_rn(one + std::ldexp(1.0, -8)), 0x3f80u);
  EXPECT_EQ(__wooly_cvt_f64_bf16_rn(one + 3 * std::ldexp(1.0, -8)), 0x3f82u);
  EXPECT_EQ(__wooly_cvt_f64_bf16_rp(one + std::ldexp(1.0, -20)), 0x3f81u);
}

TEST(FloatHelpersTest, IntegerConversions) {
  EXPECT_EQ(bits(__wooly_cvt_s64_f32_rz(16777217)), 0x4b800000u);
  EXPECT_EQ(bits(__wooly_cvt_s64_f32_rp(16777217)), 0x4b800001u);
  EXPECT_EQ(bits(__wooly_cvt_s64_f32_rm(-16777217)), 0xcb800001u);
  EXPECT_EQ(bits(__wooly_cvt_u64_f32_rn(~uint64_t(0))), 0x5f800000u);
  EXPECT_EQ(bits(__wooly_cvt_u64_f32_rz(~uint64_t(0))), 0x5f7fffffu);
  EXPECT_EQ(bits(__wooly_cvt_s64_f64_rn(INT64_MIN)), 0xc3e0000000000000ull);
  EXPECT_EQ(bits(__wooly_cvt_u64_f64_rz(~uint64_t(0))), 0x43efffffffffffffull);
  EXPECT_EQ(__wooly_cvt_s64_f16_rn(2049), 0x6800u);
  EXPECT_EQ(__wooly_cvt_s64_f16_rp(2049), 0x6801u);
  EXPECT_EQ(__wooly_cvt_s64_f16_rn(1000000), 0x7c00u);
  EXPECT_EQ(__wooly_cvt_u64_f16_rz(1000000), 0x7bffu);
  EXPECT_EQ(__wooly_cvt_s64_bf16_rn(-257), 0xc380u);
  EXPECT_EQ(__wooly_cvt_s64_f16_rn(0), 0x0000u);
}

TEST(FloatHelpersTest, HalfFma) {
  // 1 * 1 + 2^-11 is a tie: rn keeps 1.0, rp rounds up.
  EXPECT_EQ(__wooly_fma_rn_f16(0x3c00, 0x3c00, 0x1000), 0x3c00u);
  EXPECT_EQ(__wooly_fma_rp_f16(0x3c00, 0x3c00, 0x1000), 0x3c01u);
  // Just above the tie: only a single rounding gets this right.
  EXPECT_EQ(__wooly_fma_rn_f16(0x3c00, 0x3c00, 0x1001), 0x3c01u);
  // Exact zero: -0 only when rounding down.
  EXPECT_EQ(__wooly_fma_rn_f16(0x3c00, 0x3c00, 0xbc00), 0x0000u);
  EXPECT_EQ(__wooly_fma_rm_f16(0x3c00, 0x3c00, 0xbc00), 0x8000u);
  EXPECT_EQ(__wooly_fma_rn_bf16(0x3f80, 0x3f80, 0x3f80), 0x4000u);
  EXPECT_EQ(__wooly_fma_rn_f16(0x7e00, 0x3c00, 0x3c00), 0x7fffu);
}

TEST(FloatHelpersTest, Fp8) {
  EXPECT_EQ(__wooly_cvt_f64_e4m3_rn_satfinite(1.0), 0x38u);
  EXPECT_EQ(__wooly_cvt_f64_e4m3_rn_satfinite(448.0), 0x7eu);
  EXPECT_EQ(__wooly_cvt_f64_e4m3_rn_satfinite(1000.0), 0x7eu);
  EXPECT_EQ(__wooly_cvt_f64_e4m3_rn_satfinite(-INFINITY), 0xfeu);
  EXPECT_EQ(__wooly_cvt_f64_e4m3_rn_satfinite(std::nan("")), 0x7fu);
  EXPECT_EQ(__wooly_cvt_f64_e4m3_rn_satfinite(std::ldexp(1.0, -9)), 0x01u);
  EXPECT_EQ(__wooly_cvt_f64_e5m2_rn_satfinite(1.0), 0x3cu);
  EXPECT_EQ(__wooly_cvt_f64_e5m2_rn_satfinite(1e6), 0x7bu);
  EXPECT_EQ(__wooly_cvt_e4m3_f16(0x38), 0x3c00u);
  EXPECT_EQ(__wooly_cvt_e4m3_f16(0xfe), 0xdf00u);
  EXPECT_EQ(__wooly_cvt_e4m3_f16(0x01), 0x1800u);
  EXPECT_EQ(__wooly_cvt_e4m3_f16(0x7f), 0x7fffu);
  EXPECT_EQ(__wooly_cvt_e5m2_f16(0x7c), 0x7c00u);
  EXPECT_EQ(__wooly_cvt_e5m2_f16(0x3d), 0x3d00u);
}

TEST(FloatHelpersTest, Table) {
  bool found = false;
  size_t n = 0;
  wooly::cpu::forEachFloatHelper([&](const char *name, void *address) {
    ++n;
    if (std::string(name) == "__wooly_fadd_rz_f32") {
      found = true;
      EXPECT_EQ(address, reinterpret_cast<void *>(&__wooly_fadd_rz_f32));
    }
  });
  EXPECT_TRUE(found);
  EXPECT_EQ(n, 3u * 14u + 4u * 13u + 4u);
}

/// `x` rounded to float by rounding mode `mode` (0 rz, 1 rm, 2 rp) where
/// `x` is exact in __float128: the to-nearest float, moved one step where
/// it lies on the wrong side of `x`.
float roundQuad(__float128 x, int mode) {
  float r = float(x);
  __float128 q = r;
  bool up = mode == 2 || (mode == 0 && x < 0);
  if (up && q < x)
    r = std::nextafter(r, INFINITY);
  if (!up && q > x)
    r = std::nextafter(r, -INFINITY);
  return r;
}

// The f32 helpers compute in double, without fesetround: against sums and
// products exact in __float128 (operands within 2^-20..2^20, so that
// a*b+c needs fewer than 113 bits), with cancellations and near-ties.
TEST(FloatHelpersTest, DirectedF32MatchesExact) {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  auto operand = [&] {
    float m = float(next() & 0xffffff) / float(1 << 24) + 0.5f;
    float v = std::ldexp(m, int(next() % 41) - 20);
    return (next() & 1) ? -v : v;
  };
  using Fn2 = float (*)(float, float);
  using Fn3 = float (*)(float, float, float);
  Fn2 add[] = {__wooly_fadd_rz_f32, __wooly_fadd_rm_f32, __wooly_fadd_rp_f32};
  Fn2 sub[] = {__wooly_fsub_rz_f32, __wooly_fsub_rm_f32, __wooly_fsub_rp_f32};
  Fn2 mul[] = {__wooly_fmul_rz_f32, __wooly_fmul_rm_f32, __wooly_fmul_rp_f32};
  Fn3 fma[] = {__wooly_fma_rz_f32, __wooly_fma_rm_f32, __wooly_fma_rp_f32};
  for (int i = 0; i < 200000; ++i) {
    float a = operand(), b = operand(), c = operand();
    if (i % 4 == 1)
      c = -float(__float128(a) * b); // Cancellation: a tiny remainder.
    if (i % 4 == 2)
      b = std::nextafter(-a, 0.0f); // a + b is one ulp of a.
    __float128 qa = a, qb = b, qc = c;
    for (int m = 0; m < 3; ++m) {
      if (qa * qb + qc != 0)
        ASSERT_EQ(bits(fma[m](a, b, c)), bits(roundQuad(qa * qb + qc, m)))
            << "fma mode " << m << " " << a << " " << b << " " << c;
      if (qa + qb != 0) {
        ASSERT_EQ(bits(add[m](a, b)), bits(roundQuad(qa + qb, m)))
            << "add mode " << m << " " << a << " " << b;
        ASSERT_EQ(bits(sub[m](a, -b)), bits(roundQuad(qa + qb, m)))
            << "sub mode " << m << " " << a << " " << b;
      }
      ASSERT_EQ(bits(mul[m](a, b)), bits(roundQuad(qa * qb, m)))
          << "mul mode " << m << " " << a << " " << b;
    }
  }
  // Exact zeros take their sign from the mode; overflow and subnormals.
  EXPECT_EQ(bits(__wooly_fma_rm_f32(1.0f, 1.0f, -1.0f)), 0x80000000u);
  EXPECT_EQ(bits(__wooly_fma_rp_f32(1.0f, 1.0f, -1.0f)), 0x00000000u);
  float big = llvm::bit_cast<float>(0x7f7fffffu);
  EXPECT_EQ(bits(__wooly_fma_rz_f32(big, 2.0f, 0.0f)), 0x7f7fffffu);
  EXPECT_EQ(bits(__wooly_fma_rp_f32(big, 2.0f, 0.0f)), 0x7f800000u);
  float tiny = llvm::bit_cast<float>(0x00000001u);
  EXPECT_EQ(bits(__wooly_fmul_rp_f32(tiny, 0.5f)), 0x00000001u);
  EXPECT_EQ(bits(__wooly_fmul_rz_f32(tiny, 0.5f)), 0x00000000u);
  EXPECT_EQ(bits(__wooly_fmul_rm_f32(-tiny, 0.5f)), 0x80000001u);
}
} // namespace
