//===- WarpMatrix.cpp - ldmatrix, mma.sync and wmma on the CPU ------------===//
//
// The matrix warp collectives (`WOOLY_WARP_LDMATRIX`, `WOOLY_WARP_MMA`,
// `WOOLY_WARP_WMMA_*`): the scheduler has gathered the input words of all 32
// lanes; these functions redistribute matrix elements between lanes with the
// fragment layouts of NVIDIA GPUs and compute the products.
//
// Fragment layouts
// ----------------
// `ldmatrix` and `mma.sync` follow the tables of the PTX ISA ("Matrix
// Fragments for mma.mMnNkK", "ldmatrix"); with groupID g = lane >> 2 and
// threadID_in_group t = lane % 4 (see the `map*` functions below). These
// are checked against results recorded on real GPUs (ZLUDA's conformance
// tests, unittests/Runtime/WarpMatrixTest.cpp).
//
// `wmma` fragments are opaque in PTX; a program can only observe them
// through wmma.load/mma/store (and element-wise uniform operations such as
// fill or scaling, which do not depend on the layout). We use, for
// m16n16k16, m16n16k8 and m8n8k4, the layout of sm_80 compilers, where a
// wmma op is two `mma.m16n8kK` ops side by side:
//   - A (16xK) is the A fragment of mma.m16n8kK;
//   - B (Kx16) is the B fragment of mma.m16n8kK for columns 0-7 followed by
//     the one for columns 8-15;
//   - C/D (16x16) is the accumulator of mma.m16n8kK for columns 0-7 followed
//     by the one for columns 8-15.
// The f16 A/B fragments of wmma have 8 registers (16 halves) although a lane
// owns only 8 distinct elements of a 16x16 matrix: wmma.load fills elements
// 8-15 with a copy of 0-7 and wmma.mma reads elements 0-7.
// m8n8k32 (s4/u4) and m8n8k128 (b1) use the layouts of mma.m8n8k32 and
// mma.m8n8k128; in memory, sub-byte elements are packed from the low bits
// of each byte (element 0 of a row in bit 0, or bits 0-3).
// For m32n8k16 and m8n32k16 (whose real layouts we do not know) element i
// of lane l is element p = 32 * i + l of the matrix in row-major order
// (again repeated to fill f16 A/B fragments). Any consistent layout is a
// correct implementation of wmma.
// `mma.m8n8k4` with f16 inputs (sm_70's quad pairs) is four independent
// 8x8x4 products, each by the lanes 4q..4q+3 and 16+4q..16+4q+3, with the
// fragment layouts of the PTX ISA for each of A's and B's layouts
// (`resolveQuadPairMma`).
//
// Arithmetic
// ----------
// - f16/bf16/tf32 inputs: each product a*b is computed in f32, where it is
//   exact (11 or 8 significant bits per input; tf32 inputs are truncated to
//   their 10 explicit mantissa bits, as the tensor cores ignore the low 13);
//   the accumulator starts at C (converted exactly to f32) and adds the
//   products in increasing k order, rounding to nearest-even in f32 after
//   each addition: d = (((c + p0) + p1) + ...). An f16 D is rounded once
//   from that f32 sum. NaN results are the canonical GPU NaN (0x7fffffff,
//   0x7fff).
// - f64: d = fma(a_k, b_k, d) in increasing k order, starting from C.
// - e4m3/e5m2 inputs (mma.sync m16n8k16/m16n8k32, sm_89): as f16 inputs
//   (each product is exact in f32; e4m3's only NaN is S.1111.111, e5m2 has
//   infinities), accumulated in f32 from C in k order.
// - s8/u8 and s4/u4 -> s32: exact sum in 64 bits; wrapped to 32 bits, or
//   clamped to [INT32_MIN, INT32_MAX] with .satfinite.
// - b1 -> s32 (.xor.popc / .and.popc): C plus the number of k where
//   a(i, k) xor (and) b(k, j) is 1, wrapped to 32 bits.
// - .satfinite on floating-point wmma: +-inf results become +-MAX_NORM of
//   the destination type; NaN stays NaN.
//
//===----------------------------------------------------------------------===//

#include "WarpOps.h"

#include "Wooly/Runtime/CPU/ABI.h"

#include "llvm/ADT/bit.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace wooly::cpu {

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  if (exp == 0x1f) // inf / NaN (payload kept, quieted)
    return llvm::bit_cast<float>(sign | 0x7f800000 | man << 13 |
                                 (man ? 0x400000 : 0));
  if (exp == 0) {
    // Zero or subnormal: man * 2^-24, exact in f32.
    float v = std::ldexp(float(man), -24);
    return sign ? -v : v;
  }
  return llvm::bit_cast<float>(sign | (exp + 112) << 23 | man << 13);
}

/// f32 -> f16, round to nearest even; NaN -> canonical 0x7fff.
uint16_t floatToHalf(float f) {
  uint32_t x = llvm::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffff;
  if (ax > 0x7f800000)
    return 0x7fff;
  if (ax >= 0x477ff000) // >= 65520 rounds to infinity
    return sign | 0x7c00;
  if (ax >= 0x38800000) { // normal f16 (>= 2^-14)
    uint32_t r = ax + 0xfff + ((ax >> 13) & 1);
    return uint16_t(sign | ((r - 0x38000000) >> 13));
  }
  if (ax < 0x33000000) // < 2^-25 (2^-25 itself ties to 0)
    return sign;
  // Subnormal f16: units of 2^-24.
  uint32_t e = ax >> 23;
  uint32_t m = (ax & 0x7fffff) | 0x800000;
  uint32_t sh = 126 - e; // 14..24
  uint32_t q = m >> sh;
  uint32_t rem = m & ((1u << sh) - 1);
  uint32_t half = 1u << (sh - 1);
  if (rem > half || (rem == half && (q & 1)))
    ++q;
  return uint16_t(sign | q);
}

namespace {

enum : uint32_t { LayoutRow = 0, LayoutCol = 1 };
enum : uint32_t { RoleA = 0, RoleB = 1, RoleC = 2, RoleD = 3 };

const char *typeName(uint32_t t) {
  switch (t) {
  case 1:
    return "b8";
  case 2:
    return "b16";
  case 3:
    return "b32";
  case 4:
    return "b64";
  case WOOLY_ST_u8:
    return "u8";
  case 7:
    return "u16";
  case 8:
    return "u32";
  case WOOLY_ST_s8:
    return "s8";
  case 11:
    return "s16";
  case WOOLY_ST_s32:
    return "s32";
  case WOOLY_ST_f16:
    return "f16";
  case WOOLY_ST_bf16:
    return "bf16";
  case WOOLY_ST_tf32:
    return "tf32";
  case WOOLY_ST_f32:
    return "f32";
  case WOOLY_ST_f64:
    return "f64";
  case 21:
    return "e4m3";
  case 22:
    return "e5m2";
  case 25:
    return "s4";
  case 26:
    return "u4";
  case WOOLY_ST_b1:
    return "b1";
  default:
    return "?";
  }
}

std::string shapeName(uint32_t code) {
  return "m" + std::to_string(code & 0xff) + "n" +
         std::to_string((code >> 8) & 0xff) + "k" +
         std::to_string((code >> 16));
}

constexpr uint32_t shape(unsigned m, unsigned n, unsigned k) {
  return m | n << 8 | k << 16;
}

//===----------------------------------------------------------------------===//
// Exact bit-level conversions
//===----------------------------------------------------------------------===//

uint32_t bitsOf(float f) { return llvm::bit_cast<uint32_t>(f); }
float floatOf(uint32_t u) { return llvm::bit_cast<float>(u); }
uint64_t bitsOf(double d) { return llvm::bit_cast<uint64_t>(d); }
double doubleOf(uint64_t u) { return llvm::bit_cast<double>(u); }

float bf16ToFloat(uint16_t h) { return floatOf(uint32_t(h) << 16); }

//===----------------------------------------------------------------------===//
// Fragment descriptions
//===----------------------------------------------------------------------===//

struct RC {
  unsigned r, c;
};
/// Row and column of distinct element `i` of lane `lane`'s fragment.
using MapFn = RC (*)(unsigned lane, unsigned i, unsigned cols);

inline unsigned G(unsigned lane) { return lane >> 2; }
inline unsigned T(unsigned lane) { return lane & 3; }

// Accumulators C/D.
RC mapC16x8(unsigned l, unsigned i, unsigned) { // m16n8, 4 elements
  return {G(l) + 8 * (i >> 1), 2 * T(l) + (i & 1)};
}
RC mapC8x8(unsigned l, unsigned i, unsigned) { // m8n8, 2 elements
  return {G(l), 2 * T(l) + i};
}
RC mapC16x16(unsigned l, unsigned i, unsigned) { // two m16n8 side by side
  return {G(l) + 8 * ((i >> 1) & 1), 2 * T(l) + (i & 1) + 8 * (i >> 2)};
}
// A (MxK).
RC mapAh16x8(unsigned l, unsigned i, unsigned) { // f16/bf16 m16n8k8
  return {G(l) + 8 * (i >> 1), 2 * T(l) + (i & 1)};
}
RC mapAh16x16(unsigned l, unsigned i, unsigned) { // f16/bf16 m16n8k16
  return {G(l) + 8 * ((i >> 1) & 1), 2 * T(l) + (i & 1) + 8 * (i >> 2)};
}
RC mapAtf16x4(unsigned l, unsigned i, unsigned) { // tf32 m16n8k4
  return {G(l) + 8 * i, T(l)};
}
RC mapAtf16x8(unsigned l, unsigned i, unsigned) { // tf32 m16n8k8
  return {G(l) + 8 * (i & 1), T(l) + 4 * (i >> 1)};
}
RC mapAi16x16(unsigned l, unsigned i, unsigned) { // s8/u8 m16n8k16
  return {G(l) + 8 * (i >> 2), 4 * T(l) + (i & 3)};
}
RC mapAi16x32(unsigned l, unsigned i, unsigned) { // s8/u8 m16n8k32
  return {G(l) + 8 * ((i >> 2) & 1), 4 * T(l) + (i & 3) + 16 * (i >> 3)};
}
RC mapAi8x16(unsigned l, unsigned i, unsigned) { // s8/u8 m8n8k16
  return {G(l), 4 * T(l) + i};
}
// s4/u4: the s8 layouts with eight elements per register instead of four.
RC mapAq8x32(unsigned l, unsigned i, unsigned) { // s4/u4 m8n8k32
  return {G(l), 8 * T(l) + i};
}
RC mapAq16x32(unsigned l, unsigned i, unsigned) { // s4/u4 m16n8k32
  return {G(l) + 8 * (i >> 3), 8 * T(l) + (i & 7)};
}
RC mapAq16x64(unsigned l, unsigned i, unsigned) { // s4/u4 m16n8k64
  return {G(l) + 8 * ((i >> 3) & 1), 8 * T(l) + (i & 7) + 32 * (i >> 4)};
}
RC mapBq32x8(unsigned l, unsigned i, unsigned) { // s4/u4 m8n8k32, m16n8k32
  return {8 * T(l) + i, G(l)};
}
RC mapBq64x8(unsigned l, unsigned i, unsigned) { // s4/u4 m16n8k64
  return {8 * T(l) + (i & 7) + 32 * (i >> 3), G(l)};
}
// b1: 32 elements per register.
RC mapAb8x128(unsigned l, unsigned i, unsigned) { // b1 m8n8k128
  return {G(l), 32 * T(l) + i};
}
RC mapAb16x128(unsigned l, unsigned i, unsigned) { // b1 m16n8k128
  return {G(l) + 8 * (i >> 5), 32 * T(l) + (i & 31)};
}
RC mapAb16x256(unsigned l, unsigned i, unsigned) { // b1 m16n8k256
  return {G(l) + 8 * ((i >> 5) & 1), 32 * T(l) + (i & 31) + 128 * (i >> 6)};
}
RC mapBb128x8(unsigned l, unsigned i, unsigned) { // b1 m8n8k128, m16n8k128
  return {32 * T(l) + i, G(l)};
}
RC mapBb256x8(unsigned l, unsigned i, unsigned) { // b1 m16n8k256
  return {32 * T(l) + (i & 31) + 128 * (i >> 5), G(l)};
}
RC mapAd8x4(unsigned l, unsigned, unsigned) { // f64 m8n8k4
  return {G(l), T(l)};
}
// B (KxN).
RC mapBh8x8(unsigned l, unsigned i, unsigned) { // f16/bf16 m16n8k8
  return {2 * T(l) + i, G(l)};
}
RC mapBh16x8(unsigned l, unsigned i, unsigned) { // f16/bf16 m16n8k16
  return {2 * T(l) + (i & 1) + 8 * (i >> 1), G(l)};
}
RC mapBh16x16(unsigned l, unsigned i, unsigned) { // two m16n8k16 B
  return {2 * T(l) + (i & 1) + 8 * ((i >> 1) & 1), G(l) + 8 * (i >> 2)};
}
RC mapBtf4x8(unsigned l, unsigned, unsigned) { // tf32 m16n8k4
  return {T(l), G(l)};
}
RC mapBtf8x8(unsigned l, unsigned i, unsigned) { // tf32 m16n8k8
  return {T(l) + 4 * i, G(l)};
}
RC mapBtf8x16(unsigned l, unsigned i, unsigned) { // two tf32 m16n8k8 B
  return {T(l) + 4 * (i & 1), G(l) + 8 * (i >> 1)};
}
RC mapBi16x8(unsigned l, unsigned i, unsigned) { // s8/u8 m16n8k16 / m8n8k16
  return {4 * T(l) + i, G(l)};
}
RC mapBi16x16(unsigned l, unsigned i, unsigned) { // two s8/u8 m16n8k16 B
  return {4 * T(l) + (i & 3), G(l) + 8 * (i >> 2)};
}
RC mapBi32x8(unsigned l, unsigned i, unsigned) { // s8/u8 m16n8k32
  return {4 * T(l) + (i & 3) + 16 * (i >> 2), G(l)};
}
RC mapBd4x8(unsigned l, unsigned, unsigned) { // f64 m8n8k4
  return {T(l), G(l)};
}
// Generic wmma layout for shapes whose real layout we do not use.
RC mapLinear(unsigned l, unsigned i, unsigned cols) {
  unsigned p = 32 * i + l;
  return {p / cols, p % cols};
}

unsigned typeBits(uint32_t t) {
  switch (t) {
  case WOOLY_ST_b1:
    return 1;
  case WOOLY_ST_s4:
  case WOOLY_ST_u4:
    return 4;
  case WOOLY_ST_u8:
  case WOOLY_ST_s8:
  case WOOLY_ST_e4m3:
  case WOOLY_ST_e5m2:
    return 8;
  case WOOLY_ST_f16:
  case WOOLY_ST_bf16:
  case WOOLY_ST_b16:
    return 16;
  case WOOLY_ST_tf32:
  case WOOLY_ST_f32:
  case WOOLY_ST_s32:
    return 32;
  case WOOLY_ST_f64:
    return 64;
  default:
    return 0;
  }
}

/// One operand's fragment: a rows x cols matrix of `type` elements; each lane
/// owns `unique` distinct elements, stored in `words` 32-bit words (which may
/// hold more elements than `unique`: the extra ones repeat the first).
struct Frag {
  unsigned rows = 0, cols = 0;
  uint32_t type = 0;
  unsigned bits = 0;
  unsigned unique = 0;
  unsigned words = 0;
  MapFn map = nullptr;

  unsigned capacity() const {
    return bits == 64 ? words / 2 : words * 32 / bits;
  }
  RC at(unsigned lane, unsigned i) const { return map(lane, i % unique, cols); }
};

Frag makeFrag(unsigned rows, unsigned cols, uint32_t type, MapFn map,
              unsigned words = 0) {
  Frag f;
  f.rows = rows;
  f.cols = cols;
  f.type = type;
  f.bits = typeBits(type);
  f.unique = rows * cols / 32;
  f.words = words ? words : (f.unique * f.bits + 31) / 32;
  f.map = map;
  return f;
}

/// Raw element `i` of a lane's fragment words.
uint64_t getElem(const uint32_t *w, unsigned bits, unsigned i) {
  if (bits == 64)
    return uint64_t(w[2 * i]) | uint64_t(w[2 * i + 1]) << 32;
  if (bits == 32)
    return w[i];
  unsigned per = 32 / bits;
  return (w[i / per] >> ((i % per) * bits)) & ((1u << bits) - 1);
}
void setElem(uint32_t *w, unsigned bits, unsigned i, uint64_t v) {
  if (bits == 64) {
    w[2 * i] = uint32_t(v);
    w[2 * i + 1] = uint32_t(v >> 32);
    return;
  }
  if (bits == 32) {
    w[i] = uint32_t(v);
    return;
  }
  unsigned per = 32 / bits;
  unsigned sh = (i % per) * bits;
  uint32_t mask = ((1u << bits) - 1) << sh;
  w[i / per] = (w[i / per] & ~mask) | ((uint32_t(v) << sh) & mask);
}

/// A matrix of raw element bits, row-major.
struct Matrix {
  unsigned rows, cols;
  std::vector<uint64_t> v;
  Matrix(unsigned r, unsigned c) : rows(r), cols(c), v(size_t(r) * c, 0) {}
  uint64_t &operator()(unsigned r, unsigned c) {
    return v[size_t(r) * cols + c];
  }
};

/// Gathers a matrix from the lanes' fragments (word `first` onwards).
Matrix gather(const Frag &f, WarpLane lanes[32], unsigned first) {
  Matrix m(f.rows, f.cols);
  for (unsigned l = 0; l < 32; ++l)
    for (unsigned i = 0; i < f.unique; ++i) {
      RC rc = f.at(l, i);
      m(rc.r, rc.c) = getElem(lanes[l].in + first, f.bits, i);
    }
  return m;
}

/// Scatters a matrix into the lanes' fragments (`out` words from `first`).
void scatter(const Frag &f, Matrix &m, uint32_t *const outs[32]) {
  for (unsigned l = 0; l < 32; ++l) {
    std::memset(outs[l], 0, f.words * 4);
    for (unsigned i = 0; i < f.capacity(); ++i) {
      RC rc = f.at(l, i);
      setElem(outs[l], f.bits, i, m(rc.r, rc.c));
    }
  }
}

//===----------------------------------------------------------------------===//
// Multiply-accumulate
//===----------------------------------------------------------------------===//

struct MmaSpec {
  unsigned m = 0, n = 0, k = 0;
  Frag a, b, c, d;
};

/// e4m3 (bias 7, no infinities, NaN = S.1111.111) and e5m2 (bias 15,
/// IEEE-style infinities and NaNs) to f32, exactly.
float fp8ToFloat(uint32_t type, uint8_t b) {
  bool e4 = type == WOOLY_ST_e4m3;
  unsigned manBits = e4 ? 3 : 2, bias = e4 ? 7 : 15;
  unsigned e = (b & 0x7f) >> manBits, m = b & ((1u << manBits) - 1);
  float v;
  if (e4 && e == 15 && m == 7)
    v = std::numeric_limits<float>::quiet_NaN();
  else if (!e4 && e == 31)
    v = m ? std::numeric_limits<float>::quiet_NaN()
          : std::numeric_limits<float>::infinity();
  else if (e == 0)
    v = std::ldexp(float(m), 1 - int(bias) - int(manBits));
  else
    v = std::ldexp(float(m | 1u << manBits), int(e) - int(bias) - int(manBits));
  return (b & 0x80) ? -v : v;
}

float toFloat(uint32_t type, uint64_t raw) {
  switch (type) {
  case WOOLY_ST_e4m3:
  case WOOLY_ST_e5m2:
    return fp8ToFloat(type, uint8_t(raw));
  case WOOLY_ST_f16:
    return halfToFloat(uint16_t(raw));
  case WOOLY_ST_bf16:
    return bf16ToFloat(uint16_t(raw));
  case WOOLY_ST_tf32:
    return floatOf(uint32_t(raw) & 0xffffe000u);
  default:
    return floatOf(uint32_t(raw));
  }
}

int64_t toInt(uint32_t type, uint64_t raw) {
  switch (type) {
  case WOOLY_ST_s8:
    return int8_t(uint8_t(raw));
  case WOOLY_ST_u8:
    return uint8_t(raw);
  case WOOLY_ST_s4:
    return int64_t(uint64_t(raw) << 60) >> 60;
  case WOOLY_ST_u4:
    return raw & 0xf;
  default:
    return int32_t(uint32_t(raw));
  }
}

bool isInt(uint32_t t);

/// Single-bit products (the flags' bits 3-4).
enum : uint32_t { BitOpNone = 0, BitOpXor = 1, BitOpAnd = 2 };

/// D = A * B + C on whole matrices (see the file comment for the order).
Matrix multiply(const MmaSpec &s, Matrix &A, Matrix &B, Matrix &C,
                bool satfinite, uint32_t bitOp = BitOpNone) {
  Matrix D(s.m, s.n);
  uint32_t at = s.a.type, dt = s.d.type;
  for (unsigned i = 0; i < s.m; ++i)
    for (unsigned j = 0; j < s.n; ++j) {
      if (at == WOOLY_ST_b1) {
        uint32_t acc = uint32_t(C(i, j));
        for (unsigned k = 0; k < s.k; ++k)
          acc += uint32_t(bitOp == BitOpAnd ? A(i, k) & B(k, j)
                                            : A(i, k) ^ B(k, j));
        D(i, j) = acc;
        continue;
      }
      if (isInt(at)) {
        int64_t acc = toInt(s.c.type, C(i, j));
        for (unsigned k = 0; k < s.k; ++k)
          acc += toInt(at, A(i, k)) * toInt(s.b.type, B(k, j));
        if (satfinite) {
          if (acc > std::numeric_limits<int32_t>::max())
            acc = std::numeric_limits<int32_t>::max();
          if (acc < std::numeric_limits<int32_t>::min())
            acc = std::numeric_limits<int32_t>::min();
        }
        D(i, j) = uint32_t(uint64_t(acc));
        continue;
      }
      if (at == WOOLY_ST_f64) {
        double acc = doubleOf(C(i, j));
        for (unsigned k = 0; k < s.k; ++k)
          acc = std::fma(doubleOf(A(i, k)), doubleOf(B(k, j)), acc);
        if (satfinite && std::isinf(acc))
          acc = std::copysign(std::numeric_limits<double>::max(), acc);
        D(i, j) = std::isnan(acc) ? 0x7fffffffffffffffull : bitsOf(acc);
        continue;
      }
      float acc = toFloat(s.c.type, C(i, j));
      for (unsigned k = 0; k < s.k; ++k) {
        // Separate statements: no contraction into an fma.
        float p = toFloat(at, A(i, k)) * toFloat(s.b.type, B(k, j));
        acc = acc + p;
      }
      if (dt == WOOLY_ST_f16) {
        uint16_t h = floatToHalf(acc);
        if (satfinite && (h & 0x7fff) == 0x7c00)
          h = (h & 0x8000) | 0x7bff;
        D(i, j) = h;
      } else {
        if (satfinite && std::isinf(acc))
          acc = std::copysign(std::numeric_limits<float>::max(), acc);
        D(i, j) = std::isnan(acc) ? 0x7fffffffu : bitsOf(acc);
      }
    }
  return D;
}

std::string mmaName(const char *what, uint32_t shapeCode, uint32_t types) {
  return std::string(what) + " " + shapeName(shapeCode) + " ." +
         typeName(types >> 24 & 0xff) + "." + typeName(types & 0xff) + "." +
         typeName(types >> 8 & 0xff) + "." + typeName(types >> 16 & 0xff);
}

bool isHalfLike(uint32_t t) { return t == WOOLY_ST_f16 || t == WOOLY_ST_bf16; }
bool isInt8(uint32_t t) { return t == WOOLY_ST_s8 || t == WOOLY_ST_u8; }
bool isInt4(uint32_t t) { return t == WOOLY_ST_s4 || t == WOOLY_ST_u4; }
bool isFp8(uint32_t t) { return t == WOOLY_ST_e4m3 || t == WOOLY_ST_e5m2; }
/// The integer input types (s32 accumulators).
bool isInt(uint32_t t) { return isInt8(t) || isInt4(t); }

/// Accumulator type check for A/B type `ab` and C or D type `cd`.
bool accumOk(uint32_t ab, uint32_t cd) {
  if (ab == WOOLY_ST_f16 || isFp8(ab))
    return cd == WOOLY_ST_f16 || cd == WOOLY_ST_f32;
  if (ab == WOOLY_ST_bf16 || ab == WOOLY_ST_tf32)
    return cd == WOOLY_ST_f32;
  if (isInt(ab) || ab == WOOLY_ST_b1)
    return cd == WOOLY_ST_s32;
  if (ab == WOOLY_ST_f64)
    return cd == WOOLY_ST_f64;
  return false;
}

/// Fragments of `mma.sync` for the given shape and types; false if this
/// combination is not supported.
bool mmaSpec(uint32_t code, uint32_t types, MmaSpec &s) {
  uint32_t at = types & 0xff, bt = types >> 8 & 0xff, ct = types >> 16 & 0xff,
           dt = types >> 24 & 0xff;
  s.m = code & 0xff;
  s.n = code >> 8 & 0xff;
  s.k = code >> 16;
  bool ints = isInt8(at) && isInt8(bt);
  bool nibbles = isInt4(at) && isInt4(bt);
  bool fp8 = isFp8(at) && isFp8(bt);
  bool bits = at == WOOLY_ST_b1;
  if (!(at == bt || ints || nibbles || fp8) || !accumOk(at, ct) ||
      !accumOk(at, dt))
    return false;
  MapFn ma = nullptr, mb = nullptr, mc = nullptr;
  if (code == shape(16, 8, 8) && isHalfLike(at)) {
    ma = mapAh16x8, mb = mapBh8x8, mc = mapC16x8;
  } else if (code == shape(16, 8, 16) && isHalfLike(at)) {
    ma = mapAh16x16, mb = mapBh16x8, mc = mapC16x8;
  } else if (code == shape(16, 8, 4) && at == WOOLY_ST_tf32) {
    ma = mapAtf16x4, mb = mapBtf4x8, mc = mapC16x8;
  } else if (code == shape(16, 8, 8) && at == WOOLY_ST_tf32) {
    ma = mapAtf16x8, mb = mapBtf8x8, mc = mapC16x8;
  } else if (code == shape(16, 8, 16) && ints) {
    ma = mapAi16x16, mb = mapBi16x8, mc = mapC16x8;
  } else if (code == shape(16, 8, 32) && ints) {
    ma = mapAi16x32, mb = mapBi32x8, mc = mapC16x8;
  } else if (code == shape(8, 8, 16) && ints) {
    ma = mapAi8x16, mb = mapBi16x8, mc = mapC8x8;
  } else if (code == shape(8, 8, 4) && at == WOOLY_ST_f64) {
    ma = mapAd8x4, mb = mapBd4x8, mc = mapC8x8;
  } else if (code == shape(16, 8, 4) && at == WOOLY_ST_f64) {
    // sm_90's f64 shapes have the tf32 layouts (one double a register).
    ma = mapAtf16x4, mb = mapBtf4x8, mc = mapC16x8;
  } else if ((code == shape(16, 8, 8) || code == shape(16, 8, 16)) &&
             at == WOOLY_ST_f64) {
    ma = mapAtf16x8, mb = mapBtf8x8, mc = mapC16x8;
  } else if (code == shape(8, 8, 32) && nibbles) {
    ma = mapAq8x32, mb = mapBq32x8, mc = mapC8x8;
  } else if (code == shape(16, 8, 32) && nibbles) {
    ma = mapAq16x32, mb = mapBq32x8, mc = mapC16x8;
  } else if (code == shape(16, 8, 64) && nibbles) {
    ma = mapAq16x64, mb = mapBq64x8, mc = mapC16x8;
  } else if (code == shape(16, 8, 16) && fp8) {
    // fp8 fragments have the s8 layouts (PTX ISA, m16n8k16/m16n8k32).
    ma = mapAi16x16, mb = mapBi16x8, mc = mapC16x8;
  } else if (code == shape(16, 8, 32) && fp8) {
    ma = mapAi16x32, mb = mapBi32x8, mc = mapC16x8;
  } else if (code == shape(8, 8, 128) && bits) {
    ma = mapAb8x128, mb = mapBb128x8, mc = mapC8x8;
  } else if (code == shape(16, 8, 128) && bits) {
    ma = mapAb16x128, mb = mapBb128x8, mc = mapC16x8;
  } else if (code == shape(16, 8, 256) && bits) {
    ma = mapAb16x256, mb = mapBb256x8, mc = mapC16x8;
  } else {
    return false;
  }
  s.a = makeFrag(s.m, s.k, at, ma);
  s.b = makeFrag(s.k, s.n, bt, mb);
  s.c = makeFrag(s.m, s.n, ct, mc);
  s.d = makeFrag(s.m, s.n, dt, mc);
  return true;
}

/// Fragments of `wmma` for the given shape and types (`role` fragments
/// only depend on their own type, so unknown types may be 0 when only one
/// fragment is needed).
bool wmmaFrag(uint32_t code, uint32_t role, uint32_t type, Frag &f) {
  unsigned m = code & 0xff, n = code >> 8 & 0xff, k = code >> 16;
  bool big = code == shape(16, 16, 16) || code == shape(32, 8, 16) ||
             code == shape(8, 32, 16);
  bool sq = code == shape(16, 16, 16);
  if (role == RoleA || role == RoleB) {
    unsigned rows = role == RoleA ? m : k, cols = role == RoleA ? k : n;
    if (big && type == WOOLY_ST_f16) {
      MapFn map = !sq ? mapLinear : role == RoleA ? mapAh16x16 : mapBh16x16;
      f = makeFrag(rows, cols, type, map, /*words=*/8);
      return true;
    }
    if (big && (type == WOOLY_ST_bf16 || isInt8(type))) {
      MapFn map = mapLinear;
      if (sq && type == WOOLY_ST_bf16)
        map = role == RoleA ? mapAh16x16 : mapBh16x16;
      else if (sq)
        map = role == RoleA ? mapAi16x16 : mapBi16x16;
      f = makeFrag(rows, cols, type, map);
      return true;
    }
    if (code == shape(16, 16, 8) && type == WOOLY_ST_tf32) {
      f = makeFrag(rows, cols, type, role == RoleA ? mapAtf16x8 : mapBtf8x16);
      return true;
    }
    if (code == shape(8, 8, 4) && type == WOOLY_ST_f64) {
      f = makeFrag(rows, cols, type, role == RoleA ? mapAd8x4 : mapBd4x8);
      return true;
    }
    if (code == shape(8, 8, 32) && isInt4(type)) {
      f = makeFrag(rows, cols, type, role == RoleA ? mapAq8x32 : mapBq32x8);
      return true;
    }
    if (code == shape(8, 8, 128) && type == WOOLY_ST_b1) {
      f = makeFrag(rows, cols, type, role == RoleA ? mapAb8x128 : mapBb128x8);
      return true;
    }
    return false;
  }
  bool small = code == shape(8, 8, 32) || code == shape(8, 8, 128);
  // C / D.
  bool ok = (big && (type == WOOLY_ST_f16 || type == WOOLY_ST_f32 ||
                     type == WOOLY_ST_s32)) ||
            (code == shape(16, 16, 8) && type == WOOLY_ST_f32) ||
            (code == shape(8, 8, 4) && type == WOOLY_ST_f64) ||
            (small && type == WOOLY_ST_s32);
  if (!ok)
    return false;
  MapFn map = sq || code == shape(16, 16, 8)    ? mapC16x16
              : code == shape(8, 8, 4) || small ? mapC8x8
                                                : mapLinear;
  f = makeFrag(m, n, type, map);
  return true;
}

bool wmmaSpec(uint32_t code, uint32_t types, MmaSpec &s) {
  uint32_t at = types & 0xff, bt = types >> 8 & 0xff, ct = types >> 16 & 0xff,
           dt = types >> 24 & 0xff;
  s.m = code & 0xff;
  s.n = code >> 8 & 0xff;
  s.k = code >> 16;
  bool ints = isInt8(at) && isInt8(bt);
  bool nibbles = isInt4(at) && isInt4(bt);
  if (!(at == bt || ints || nibbles) || !accumOk(at, ct) || !accumOk(at, dt))
    return false;
  if (code == shape(16, 16, 8) && at != WOOLY_ST_tf32)
    return false;
  if (code == shape(8, 8, 4) && at != WOOLY_ST_f64)
    return false;
  return wmmaFrag(code, RoleA, at, s.a) && wmmaFrag(code, RoleB, bt, s.b) &&
         wmmaFrag(code, RoleC, ct, s.c) && wmmaFrag(code, RoleD, dt, s.d);
}

bool checkCounts(WarpLane lanes[32], unsigned nin, unsigned nout,
                 const char *what, std::string &error) {
  for (unsigned l = 0; l < 32; ++l)
    if (lanes[l].nin != nin || lanes[l].nout != nout || (nin && !lanes[l].in) ||
        (nout && !lanes[l].out)) {
      error = std::string(what) + ": lane " + std::to_string(l) + " passes " +
              std::to_string(lanes[l].nin) + " input and " +
              std::to_string(lanes[l].nout) + " output words, expected " +
              std::to_string(nin) + " and " + std::to_string(nout);
      return false;
    }
  return true;
}

/// Checks that word `w` of every lane's input equals lane 0's.
bool uniform(WarpLane lanes[32], unsigned w, const char *what,
             std::string &error) {
  for (unsigned l = 1; l < 32; ++l)
    if (lanes[l].in[w] != lanes[0].in[w]) {
      error = std::string(what) + ": lanes 0 and " + std::to_string(l) +
              " disagree on a warp-uniform operand";
      return false;
    }
  return true;
}

/// mma.m8n8k4 with f16 inputs: see the file comment. Lane l holds, with
/// t = l % 4 and h = 4 for l >= 16 (else 0), in computation (l / 4) % 4:
/// A row-major (t + h, i), column-major (i + h, t); B row-major (t, i + h),
/// column-major (i, t + h); f16 C/D (t + h, i); f32 C/D ((l & 1) + (i & 2)
/// + h, (i & 4) + (l & 2) + (i & 1)).
RC quadA(unsigned l, unsigned i, bool col) {
  unsigned t = l & 3, h = l >= 16 ? 4 : 0;
  return col ? RC{i + h, t} : RC{t + h, i};
}
RC quadB(unsigned l, unsigned i, bool col) {
  unsigned t = l & 3, h = l >= 16 ? 4 : 0;
  return col ? RC{i, t + h} : RC{t, i + h};
}
RC quadC(unsigned l, unsigned i, bool f32) {
  unsigned h = l >= 16 ? 4 : 0;
  return f32 ? RC{(l & 1) + (i & 2) + h, (i & 4) + (l & 2) + (i & 1)}
             : RC{(l & 3) + h, i};
}

bool resolveQuadPairMma(WarpLane lanes[32], uint32_t types, uint32_t flags,
                        unsigned na, unsigned nb, unsigned nc,
                        std::string &error) {
  uint32_t ct = types >> 16 & 0xff, dt = types >> 24 & 0xff;
  const char *what = "mma.sync";
  MmaSpec s;
  s.m = s.n = 8;
  s.k = 4;
  s.a.type = s.b.type = WOOLY_ST_f16;
  s.c.type = ct;
  s.d.type = dt;
  unsigned cw = ct == WOOLY_ST_f32 ? 8 : 4, dw = dt == WOOLY_ST_f32 ? 8 : 4;
  if (na != 2 || nb != 2 || nc != cw) {
    error = mmaName(what, shape(8, 8, 4), types) + ": fragments of " +
            std::to_string(na) + ", " + std::to_string(nb) + " and " +
            std::to_string(nc) + " words, expected 2, 2 and " +
            std::to_string(cw);
    return false;
  }
  if (!checkCounts(lanes, 6 + 4 + cw, dw, what, error))
    return false;
  bool colA = flags & 1, colB = flags >> 1 & 1;
  unsigned cbits = typeBits(ct), dbits = typeBits(dt);
  for (unsigned q = 0; q < 4; ++q) {
    Matrix A(8, 4), B(4, 8), C(8, 8);
    unsigned ls[8];
    for (unsigned j = 0; j < 8; ++j)
      ls[j] = 4 * q + (j & 3) + (j >= 4 ? 16 : 0);
    for (unsigned l : ls) {
      const uint32_t *in = lanes[l].in + 6;
      for (unsigned i = 0; i < 4; ++i) {
        RC a = quadA(l, i, colA), b = quadB(l, i, colB);
        A(a.r, a.c) = getElem(in, 16, i);
        B(b.r, b.c) = getElem(in + 2, 16, i);
      }
      for (unsigned i = 0; i < 8; ++i) {
        RC c = quadC(l, i, ct == WOOLY_ST_f32);
        C(c.r, c.c) = getElem(in + 4, cbits, i);
      }
    }
    Matrix D = multiply(s, A, B, C, /*satfinite=*/false);
    for (unsigned l : ls) {
      std::memset(lanes[l].out, 0, dw * 4);
      for (unsigned i = 0; i < 8; ++i) {
        RC d = quadC(l, i, dt == WOOLY_ST_f32);
        setElem(lanes[l].out, dbits, i, D(d.r, d.c));
      }
    }
  }
  return true;
}

bool resolveMma(uint32_t kind, WarpLane lanes[32], std::string &error) {
  const char *what = kind == WOOLY_WARP_MMA ? "mma.sync" : "wmma.mma";
  for (unsigned l = 0; l < 32; ++l)
    if (lanes[l].nin < 6 || !lanes[l].in) {
      error = std::string(what) + ": malformed request";
      return false;
    }
  for (unsigned w = 0; w < 6; ++w)
    if (!uniform(lanes, w, what, error))
      return false;
  const uint32_t *in = lanes[0].in;
  uint32_t code = in[0], types = in[1], flags = in[2];
  unsigned na = in[3], nb = in[4], nc = in[5];
  uint32_t at = types & 0xff, bt = types >> 8 & 0xff, ct = types >> 16 & 0xff,
           dt = types >> 24 & 0xff;
  auto half = [](uint32_t t) { return t == WOOLY_ST_f16 || t == WOOLY_ST_f32; };
  // f16 m8n8k4 (f32 C needs an f32 D): sm_70's quad pairs, any layouts.
  if (kind == WOOLY_WARP_MMA && code == shape(8, 8, 4) && at == WOOLY_ST_f16 &&
      bt == WOOLY_ST_f16 && half(ct) && half(dt) &&
      !(ct == WOOLY_ST_f32 && dt == WOOLY_ST_f16) && !(flags >> 2))
    return resolveQuadPairMma(lanes, types, flags, na, nb, nc, error);
  uint32_t bitOp = flags >> 3 & 3;
  if ((at == WOOLY_ST_b1) != (bitOp != BitOpNone)) {
    error = mmaName(what, code, types) +
            (bitOp ? ": .popc needs .b1 inputs"
                   : ": .b1 inputs need .xor.popc or .and.popc");
    return false;
  }
  MmaSpec s;
  bool ok = kind == WOOLY_WARP_MMA ? mmaSpec(code, types, s)
                                   : wmmaSpec(code, types, s);
  if (!ok) {
    error =
        mmaName(what, code, types) + " is not supported on the CPU backend yet";
    return false;
  }
  uint32_t la = flags & 1, lb = flags >> 1 & 1;
  bool satfinite = flags & 4;
  if (kind == WOOLY_WARP_MMA && (la != LayoutRow || lb != LayoutCol)) {
    error = mmaName(what, code, types) + " with layouts ." +
            (la ? "col" : "row") + "." + (lb ? "col" : "row") +
            " is not supported on the CPU backend yet";
    return false;
  }
  if (na != s.a.words || nb != s.b.words || nc != s.c.words) {
    error = mmaName(what, code, types) + ": fragments of " +
            std::to_string(na) + ", " + std::to_string(nb) + " and " +
            std::to_string(nc) + " words, expected " +
            std::to_string(s.a.words) + ", " + std::to_string(s.b.words) +
            " and " + std::to_string(s.c.words);
    return false;
  }
  if (!checkCounts(lanes, 6 + na + nb + nc, s.d.words, what, error))
    return false;
  // wmma's .row/.col name the layouts of the matrices in memory, which
  // wmma.load has already resolved: the fragments do not depend on them.
  Matrix A = gather(s.a, lanes, 6);
  Matrix B = gather(s.b, lanes, 6 + na);
  Matrix C = gather(s.c, lanes, 6 + na + nb);
  Matrix D = multiply(s, A, B, C, satfinite, bitOp);
  uint32_t *outs[32];
  for (unsigned l = 0; l < 32; ++l)
    outs[l] = lanes[l].out;
  scatter(s.d, D, outs);
  return true;
}

//===----------------------------------------------------------------------===//
// ldmatrix
//===----------------------------------------------------------------------===//

bool resolveLdMatrix(WarpLane lanes[32], const WarpMemory &memory,
                     std::string &error) {
  for (unsigned l = 0; l < 32; ++l)
    if (lanes[l].nin != 4 || !lanes[l].in) {
      error = "ldmatrix: malformed request";
      return false;
    }
  if (!uniform(lanes, 2, "ldmatrix", error) ||
      !uniform(lanes, 3, "ldmatrix", error))
    return false;
  uint32_t count = lanes[0].in[2];
  bool trans = lanes[0].in[3] != 0;
  if (count != 1 && count != 2 && count != 4) {
    error = "ldmatrix: ." + std::to_string(count) +
            " matrices is not supported (expected .x1, .x2 or .x4)";
    return false;
  }
  if (!checkCounts(lanes, 4, count, "ldmatrix", error))
    return false;
  // Rows of the `count` 8x8 matrices: lane i supplies row i % 8 of matrix
  // i / 8 (16 contiguous bytes in shared memory).
  uint16_t rows[4][8][8];
  for (unsigned l = 0; l < 8 * count; ++l) {
    uint64_t off = uint64_t(lanes[l].in[0]) | uint64_t(lanes[l].in[1]) << 32;
    if (off > memory.sharedSize || memory.sharedSize - off < 16 ||
        !memory.shared) {
      error = "ldmatrix: lane " + std::to_string(l) +
              " reads 16 bytes at shared offset " + std::to_string(off) +
              ", outside the block's " + std::to_string(memory.sharedSize) +
              "-byte shared window";
      return false;
    }
    if (off % 16) {
      error = "ldmatrix: lane " + std::to_string(l) + " row address " +
              std::to_string(off) + " is not 16-byte aligned";
      return false;
    }
    std::memcpy(rows[l / 8][l % 8], memory.shared + off, 16);
  }
  // Lane l receives, per matrix, row l/4 and columns 2*(l%4), 2*(l%4)+1
  // (the low half is the lower column); with .trans, of the transpose.
  for (unsigned l = 0; l < 32; ++l) {
    unsigned r = l / 4, c = 2 * (l % 4);
    for (unsigned j = 0; j < count; ++j) {
      uint16_t lo = trans ? rows[j][c][r] : rows[j][r][c];
      uint16_t hi = trans ? rows[j][c + 1][r] : rows[j][r][c + 1];
      lanes[l].out[j] = uint32_t(lo) | uint32_t(hi) << 16;
    }
  }
  return true;
}

/// stmatrix: the inverse of ldmatrix (lane l's word j holds row l/4,
/// columns 2*(l%4) and 2*(l%4)+1 of matrix j; lanes 8j..8j+7 give the row
/// addresses of matrix j).
bool resolveStMatrix(WarpLane lanes[32], const WarpMemory &memory,
                     std::string &error) {
  for (unsigned l = 0; l < 32; ++l)
    if (lanes[l].nin < 4 || !lanes[l].in) {
      error = "stmatrix: malformed request";
      return false;
    }
  if (!uniform(lanes, 2, "stmatrix", error) ||
      !uniform(lanes, 3, "stmatrix", error))
    return false;
  uint32_t count = lanes[0].in[2];
  bool trans = lanes[0].in[3] != 0;
  if (count != 1 && count != 2 && count != 4) {
    error = "stmatrix: ." + std::to_string(count) +
            " matrices is not supported (expected .x1, .x2 or .x4)";
    return false;
  }
  if (!checkCounts(lanes, 4 + count, 0, "stmatrix", error))
    return false;
  uint16_t rows[4][8][8];
  for (unsigned l = 0; l < 32; ++l) {
    unsigned r = l / 4, c = 2 * (l % 4);
    for (unsigned j = 0; j < count; ++j) {
      uint32_t v = lanes[l].in[4 + j];
      uint16_t lo = uint16_t(v), hi = uint16_t(v >> 16);
      if (trans) {
        rows[j][c][r] = lo;
        rows[j][c + 1][r] = hi;
      } else {
        rows[j][r][c] = lo;
        rows[j][r][c + 1] = hi;
      }
    }
  }
  for (unsigned l = 0; l < 8 * count; ++l) {
    uint64_t off = uint64_t(lanes[l].in[0]) | uint64_t(lanes[l].in[1]) << 32;
    if (off > memory.sharedSize || memory.sharedSize - off < 16 ||
        !memory.shared) {
      error = "stmatrix: lane " + std::to_string(l) +
              " writes 16 bytes at shared offset " + std::to_string(off) +
              ", outside the block's " + std::to_string(memory.sharedSize) +
              "-byte shared window";
      return false;
    }
    if (off % 16) {
      error = "stmatrix: lane " + std::to_string(l) + " row address " +
              std::to_string(off) + " is not 16-byte aligned";
      return false;
    }
    std::memcpy(memory.shared + off, rows[l / 8][l % 8], 16);
  }
  return true;
}

//===----------------------------------------------------------------------===//
// wmma.load / wmma.store
//===----------------------------------------------------------------------===//

/// The memory layout of a wmma matrix: element (r, c) lies at element
/// offset r * stride + c (row) or c * stride + r (col) from `addr`;
/// sub-byte elements (s4/u4, b1) are packed from the low bits of a byte.
struct WmmaMemory {
  uint64_t addr;
  uint64_t stride;
  bool col;
  unsigned bits;
  /// Offset in bits of element (r, c) from `addr`.
  uint64_t bitOffset(unsigned r, unsigned c) const {
    return (col ? uint64_t(c) * stride + r : uint64_t(r) * stride + c) * bits;
  }
  uint64_t offset(unsigned r, unsigned c) const {
    return addr + bitOffset(r, c) / 8;
  }
  uint64_t read(unsigned r, unsigned c) const {
    uint64_t v = 0;
    if (bits >= 8) {
      std::memcpy(&v, reinterpret_cast<const void *>(offset(r, c)), bits / 8);
      return v;
    }
    uint8_t byte;
    std::memcpy(&byte, reinterpret_cast<const void *>(offset(r, c)), 1);
    return (byte >> (bitOffset(r, c) % 8)) & ((1u << bits) - 1);
  }
};

/// Validates every row (or column) of `f` in memory.
bool checkWmmaAccess(const WmmaMemory &mem, const Frag &f, bool write,
                     const WarpMemory &memory, const char *what,
                     std::string &error) {
  unsigned lines = mem.col ? f.cols : f.rows;
  unsigned len = mem.col ? f.rows : f.cols;
  for (unsigned i = 0; i < lines; ++i) {
    uint64_t start = mem.col ? mem.offset(0, i) : mem.offset(i, 0);
    uint64_t first = mem.col ? mem.bitOffset(0, i) : mem.bitOffset(i, 0);
    uint64_t bytes = (first % 8 + uint64_t(len) * mem.bits + 7) / 8;
    if (memory.checkGeneric &&
        !memory.checkGeneric(start, bytes, write, error)) {
      if (error.empty())
        error = std::string(what) + ": invalid address";
      return false;
    }
    if (!memory.checkGeneric && start == 0) {
      error = std::string(what) + ": null address";
      return false;
    }
  }
  return true;
}

bool wmmaHeader(WarpLane lanes[32], unsigned first, unsigned n,
                const char *what, std::string &error) {
  for (unsigned l = 0; l < 32; ++l)
    if (lanes[l].nin < first + n || !lanes[l].in) {
      error = std::string(what) + ": malformed request";
      return false;
    }
  for (unsigned w = first; w < first + n; ++w)
    if (!uniform(lanes, w, what, error))
      return false;
  return true;
}

const char *roleName(uint32_t role) {
  static const char *names[] = {"a", "b", "c", "d"};
  return role < 4 ? names[role] : "?";
}

bool resolveWmmaLoad(WarpLane lanes[32], const WarpMemory &memory,
                     std::string &error) {
  if (!wmmaHeader(lanes, 0, 8, "wmma.load", error))
    return false;
  const uint32_t *in = lanes[0].in;
  uint32_t role = in[0], layout = in[1], code = in[2], type = in[3];
  uint64_t addr = uint64_t(in[5]) | uint64_t(in[6]) << 32;
  uint32_t stride = in[7];
  Frag f;
  if (role > RoleC || !wmmaFrag(code, role, type, f)) {
    error = std::string("wmma.load.") + roleName(role) + " " + shapeName(code) +
            " ." + typeName(type) + " is not supported on the CPU backend yet";
    return false;
  }
  if (!checkCounts(lanes, 8, f.words, "wmma.load", error))
    return false;
  bool col = layout == LayoutCol;
  WmmaMemory mem{addr, stride ? stride : (col ? f.rows : f.cols), col, f.bits};
  if (!checkWmmaAccess(mem, f, false, memory, "wmma.load", error))
    return false;
  Matrix m(f.rows, f.cols);
  for (unsigned r = 0; r < f.rows; ++r)
    for (unsigned c = 0; c < f.cols; ++c)
      m(r, c) = mem.read(r, c);
  uint32_t *outs[32];
  for (unsigned l = 0; l < 32; ++l)
    outs[l] = lanes[l].out;
  scatter(f, m, outs);
  return true;
}

bool resolveWmmaStore(WarpLane lanes[32], const WarpMemory &memory,
                      std::string &error) {
  if (!wmmaHeader(lanes, 0, 7, "wmma.store", error))
    return false;
  const uint32_t *in = lanes[0].in;
  uint32_t layout = in[0], code = in[1], type = in[2];
  uint64_t addr = uint64_t(in[4]) | uint64_t(in[5]) << 32;
  uint32_t stride = in[6];
  Frag f;
  if (!wmmaFrag(code, RoleD, type, f)) {
    error = std::string("wmma.store.d ") + shapeName(code) + " ." +
            typeName(type) + " is not supported on the CPU backend yet";
    return false;
  }
  if (!checkCounts(lanes, 7 + f.words, 0, "wmma.store", error))
    return false;
  bool col = layout == LayoutCol;
  WmmaMemory mem{addr, stride ? stride : (col ? f.rows : f.cols), col, f.bits};
  if (!checkWmmaAccess(mem, f, true, memory, "wmma.store", error))
    return false;
  Matrix m = gather(f, lanes, 7);
  for (unsigned r = 0; r < f.rows; ++r)
    for (unsigned c = 0; c < f.cols; ++c) {
      uint64_t v = m(r, c);
      std::memcpy(reinterpret_cast<void *>(mem.offset(r, c)), &v, mem.bits / 8);
    }
  return true;
}

} // namespace

bool resolveMatrixOp(uint32_t kind, WarpLane lanes[32], uint32_t group,
                     const WarpMemory &memory, std::string &error) {
  if (group != 0xffffffffu) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", group);
    error = std::string("warp matrix operation executed by lanes ") + buf +
            ": ldmatrix, mma and wmma need all 32 lanes of the warp";
    return false;
  }
  switch (kind) {
  case WOOLY_WARP_LDMATRIX:
    return resolveLdMatrix(lanes, memory, error);
  case WOOLY_WARP_MMA:
  case WOOLY_WARP_WMMA_MMA:
    return resolveMma(kind, lanes, error);
  case WOOLY_WARP_WMMA_LOAD:
    return resolveWmmaLoad(lanes, memory, error);
  case WOOLY_WARP_WMMA_STORE:
    return resolveWmmaStore(lanes, memory, error);
  case WOOLY_WARP_STMATRIX:
    return resolveStMatrix(lanes, memory, error);
  default:
    error = "unknown warp matrix operation " + std::to_string(kind);
    return false;
  }
}

} // namespace wooly::cpu
