//===- WarpMatrixTest.cpp - Tests of ldmatrix / mma / wmma on the CPU -----===//
//
// Builds per-lane fragments with the PTX ISA's fragment tables (written here
// independently of lib/Runtime/CPU/WarpMatrix.cpp), calls resolveMatrixOp
// and compares with reference products; then replays ZLUDA's warp tests,
// whose outputs were recorded on NVIDIA GPUs, so the layouts are checked
// against hardware.
//
//===----------------------------------------------------------------------===//

#include "WarpOps.h"
#include "Wooly/Runtime/CPU/ABI.h"

#include "llvm/ADT/bit.h"
#include "gtest/gtest.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace wooly::cpu;

namespace {

// ScalarType values.
constexpr uint32_t U8 = 6, S8 = 10, S32 = 12, F16 = 14, BF16 = 16, TF32 = 18,
                   F32 = 19, F64 = 20, E4M3 = 21, E5M2 = 22, S4 = 25, U4 = 26,
                   B1 = 29;

constexpr uint32_t shapeCode(unsigned m, unsigned n, unsigned k) {
  return m | n << 8 | k << 16;
}
constexpr uint32_t typeCode(uint32_t d, uint32_t a, uint32_t b, uint32_t c) {
  return a | b << 8 | c << 16 | d << 24;
}

/// The bits of `f` (the overload picks the width).
uint32_t bitsOf(float f) { return llvm::bit_cast<uint32_t>(f); }
uint64_t bitsOf(double d) { return llvm::bit_cast<uint64_t>(d); }

// Reference conversions: the compiler's _Float16 (IEEE binary16, RNE).
uint16_t toHalf(float f) {
  return llvm::bit_cast<uint16_t>(static_cast<_Float16>(f));
}
float fromHalf(uint16_t u) {
  return static_cast<float>(llvm::bit_cast<_Float16>(u));
}
/// f32 -> bf16 round to nearest even (finite inputs).
uint16_t toBf16(float f) {
  uint32_t u = bitsOf(f);
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}
float fromBf16(uint16_t u) { return llvm::bit_cast<float>(uint32_t(u) << 16); }

/// The 32 lanes of one collective.
struct Warp {
  std::vector<uint32_t> in[32], out[32];
  WarpLane lanes[32];
  bool run(uint32_t kind, unsigned nout, const WarpMemory &mem,
           std::string &error) {
    for (unsigned l = 0; l < 32; ++l) {
      out[l].assign(nout, 0xdeadbeefu);
      lanes[l].in = in[l].data();
      lanes[l].nin = uint32_t(in[l].size());
      lanes[l].out = out[l].data();
      lanes[l].nout = nout;
    }
    return resolveMatrixOp(kind, lanes, 0xffffffffu, mem, error);
  }
};

//===----------------------------------------------------------------------===//
// Fragment tables of the PTX ISA ("Matrix Fragments for mma.mMnNkK"),
// groupID = laneid >> 2, threadID_in_group = laneid % 4.
//===----------------------------------------------------------------------===//

using RowCol = std::pair<unsigned, unsigned>;
using Table = std::function<RowCol(unsigned lane, unsigned i)>;

struct FragTable {
  unsigned elems; // elements per lane
  unsigned bits;  // element width
  Table rc;
};

// Accumulators of m16n8kK: c0,c1 on row groupID, c2,c3 on groupID + 8;
// col = threadID_in_group * 2 + (i & 1).
RowCol accum16x8(unsigned lane, unsigned i) {
  unsigned g = lane >> 2, t = lane % 4;
  unsigned row = (i == 0 || i == 1) ? g : g + 8;
  return {row, t * 2 + (i & 1)};
}
// .f16/.bf16 m16n8k16 A: row groupID for a0,a1,a4,a5, else groupID + 8;
// col = threadID_in_group * 2 + (i & 1), + 8 for i >= 4.
RowCol aHalfK16(unsigned lane, unsigned i) {
  unsigned g = lane >> 2, t = lane % 4;
  bool low = i == 0 || i == 1 || i == 4 || i == 5;
  return {low ? g : g + 8, t * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
}
// .f16/.bf16 m16n8k16 B: row threadID_in_group * 2 + (i & 1), + 8 for
// i >= 2; col groupID.
RowCol bHalfK16(unsigned lane, unsigned i) {
  unsigned g = lane >> 2, t = lane % 4;
  return {t * 2 + (i & 1) + (i >= 2 ? 8 : 0), g};
}
// .f16/.bf16 m16n8k8 A: row groupID for a0,a1, groupID + 8 for a2,a3;
// col threadID_in_group * 2 + (i & 1).
RowCol aHalfK8(unsigned lane, unsigned i) {
  unsigned g = lane >> 2, t = lane % 4;
  return {i < 2 ? g : g + 8, t * 2 + (i & 1)};
}
// .f16/.bf16 m16n8k8 B: row threadID_in_group * 2 + i; col groupID.
RowCol bHalfK8(unsigned lane, unsigned i) {
  unsigned g = lane >> 2, t = lane % 4;
  return {t * 2 + i, g};
}
// .tf32 m16n8k8 A: row groupID for a0,a2, groupID + 8 for a1,a3;
// col threadID_in_group for a0,a1, + 4 for a2,a3.
RowCol aTf32K8(unsigned lane, unsigned i) {
  unsigned g = lane >> 2, t = lane % 4;
  return {(i == 0 || i == 2) ? g : g + 8, (i < 2) ? t : t + 4};
}
// .tf32 m16n8k8 B: row threadID_in_group for b0, + 4 for b1; col groupID.
RowCol bTf32K8(unsigned lane, unsigned i) {
  unsigned g = lane >> 2, t = lane % 4;
  return {i == 0 ? t : t + 4, g};
}
// .tf32 m16n8k4 A: row groupID for a0, groupID + 8 for a1; col
// threadID_in_group. B: row threadID_in_group; col groupID.
RowCol aTf32K4(unsigned lane, unsigned i) {
  return {i == 0 ? lane >> 2 : (lane >> 2) + 8, lane % 4};
}
RowCol bTf32K4(unsigned lane, unsigned) { return {lane % 4, lane >> 2}; }
// .s8/.u8 m16n8k32 A: row groupID for 0<=i<4 || 8<=i<12, else groupID + 8;
// col threadID_in_group * 4 + (i & 3), + 16 for i >= 8.
RowCol aInt8K32(unsigned lane, unsigned i) {
  unsigned g = lane >> 2, t = lane % 4;
  bool low = i < 4 || (i >= 8 && i < 12);
  return {low ? g : g + 8, t * 4 + (i & 3) + (i >= 8 ? 16 : 0)};
}
// .s8/.u8 m16n8k32 B: row threadID_in_group * 4 + (i & 3), + 16 for i >= 4;
// col groupID.
RowCol bInt8K32(unsigned lane, unsigned i) {
  unsigned g = lane >> 2, t = lane % 4;
  return {t * 4 + (i & 3) + (i >= 4 ? 16 : 0), g};
}
// .s8/.u8 m16n8k16 A: row groupID for i < 4, else groupID + 8; col
// threadID_in_group * 4 + (i & 3). B: row threadID_in_group * 4 + i; col
// groupID.
RowCol aInt8K16(unsigned lane, unsigned i) {
  unsigned g = lane >> 2, t = lane % 4;
  return {i < 4 ? g : g + 8, t * 4 + (i & 3)};
}
RowCol bInt8K16(unsigned lane, unsigned i) {
  return {(lane % 4) * 4 + i, lane >> 2};
}
// .s8/.u8 m8n8k16: A row groupID, col threadID_in_group * 4 + i; B row
// threadID_in_group * 4 + i, col groupID; C row groupID, col
// threadID_in_group * 2 + i.
RowCol aInt8M8(unsigned lane, unsigned i) {
  return {lane >> 2, (lane % 4) * 4 + i};
}
// .s4/.u4 (PTX ISA, "Matrix Fragments for mma.m8n8k32 / m16n8k32 /
// m16n8k64"): eight elements per register. m8n8k32 A: row groupID, col
// threadID_in_group * 8 + i. m16n8k32 A: row groupID for i < 8, else
// groupID + 8; col threadID_in_group * 8 + (i & 7). m16n8k64 A: rows as
// m16n8k32's for each half of 16 elements, the second half 32 columns
// further. B (k32): row threadID_in_group * 8 + i, col groupID; (k64): row
// threadID_in_group * 8 + (i & 7) (+32 for i >= 8), col groupID.
RowCol aInt4M8(unsigned lane, unsigned i) {
  return {lane >> 2, (lane % 4) * 8 + i};
}
RowCol aInt4K32(unsigned lane, unsigned i) {
  return {i < 8 ? lane >> 2 : (lane >> 2) + 8, (lane % 4) * 8 + (i & 7)};
}
RowCol aInt4K64(unsigned lane, unsigned i) {
  return {(i & 8) ? (lane >> 2) + 8 : lane >> 2,
          (lane % 4) * 8 + (i & 7) + (i >= 16 ? 32 : 0)};
}
RowCol bInt4K32(unsigned lane, unsigned i) {
  return {(lane % 4) * 8 + i, lane >> 2};
}
RowCol bInt4K64(unsigned lane, unsigned i) {
  return {(lane % 4) * 8 + (i & 7) + (i >= 8 ? 32 : 0), lane >> 2};
}
RowCol accum8x8(unsigned lane, unsigned i) {
  return {lane >> 2, (lane % 4) * 2 + i};
}
// .f64 m8n8k4: A row groupID, col threadID_in_group; B row
// threadID_in_group, col groupID.
RowCol aF64(unsigned lane, unsigned) { return {lane >> 2, lane % 4}; }
// .f64 m16n8k4/k8/k16 (sm_90): A row groupID (+8 for odd i), col
// threadID_in_group + 4 * (i / 2); B row threadID_in_group + 4 * i, col
// groupID.
RowCol aF64M16(unsigned lane, unsigned i) {
  return {(lane >> 2) + 8 * (i & 1), lane % 4 + 4 * (i >> 1)};
}
RowCol bF64M16(unsigned lane, unsigned i) {
  return {lane % 4 + 4 * i, lane >> 2};
}
RowCol bF64(unsigned lane, unsigned) { return {lane % 4, lane >> 2}; }

/// Packs a lane's fragment of `m` (rows x cols raw elements, row-major).
void packFrag(const FragTable &f, unsigned lane, const std::vector<uint64_t> &m,
              unsigned cols, std::vector<uint32_t> &words) {
  if (f.bits == 64) {
    for (unsigned i = 0; i < f.elems; ++i) {
      RowCol rc = f.rc(lane, i);
      uint64_t v = m[rc.first * cols + rc.second];
      words.push_back(uint32_t(v));
      words.push_back(uint32_t(v >> 32));
    }
    return;
  }
  unsigned per = 32 / f.bits;
  for (unsigned w = 0; w < (f.elems + per - 1) / per; ++w) {
    uint32_t word = 0;
    for (unsigned j = 0; j < per && w * per + j < f.elems; ++j) {
      RowCol rc = f.rc(lane, w * per + j);
      uint64_t v = m[rc.first * cols + rc.second];
      word |=
          uint32_t(v & ((f.bits == 32) ? 0xffffffffu : ((1u << f.bits) - 1)))
          << (j * f.bits);
    }
    words.push_back(word);
  }
}
/// Reads element i of a lane's packed fragment.
uint64_t unpackElem(const FragTable &f, const std::vector<uint32_t> &w,
                    unsigned i) {
  if (f.bits == 64)
    return uint64_t(w[2 * i]) | uint64_t(w[2 * i + 1]) << 32;
  unsigned per = 32 / f.bits;
  uint32_t word = w[i / per];
  if (f.bits == 32)
    return word;
  return (word >> ((i % per) * f.bits)) & ((1u << f.bits) - 1);
}

unsigned wordsOf(const FragTable &f) { return (f.elems * f.bits + 31) / 32; }

//===----------------------------------------------------------------------===//
// Reference products
//===----------------------------------------------------------------------===//

/// e4m3 / e5m2 to float from the formats' definitions: (-1)^s * 2^(e -
/// bias) * 1.m, or 2^(1 - bias) * 0.m for e = 0 (finite encodings only).
float fromFp8(uint32_t type, uint8_t b) {
  int manBits = type == E4M3 ? 3 : 2, bias = type == E4M3 ? 7 : 15;
  int e = (b & 0x7f) >> manBits;
  double frac = double(b & ((1 << manBits) - 1)) / double(1 << manBits);
  double v = e ? std::pow(2.0, e - bias) * (1.0 + frac)
               : std::pow(2.0, 1 - bias) * frac;
  return float((b & 0x80) ? -v : v);
}

float elemToFloat(uint32_t type, uint64_t raw) {
  switch (type) {
  case E4M3:
  case E5M2:
    return fromFp8(type, uint8_t(raw));
  case F16:
    return fromHalf(uint16_t(raw));
  case BF16:
    return fromBf16(uint16_t(raw));
  case TF32:
    return llvm::bit_cast<float>(uint32_t(raw) & ~0x1fffu);
  default:
    return llvm::bit_cast<float>(uint32_t(raw));
  }
}

/// D = A*B + C with f32 accumulation in k order, starting from C.
std::vector<uint64_t>
refMatmul(unsigned M, unsigned N, unsigned K, uint32_t types, bool satfinite,
          const std::vector<uint64_t> &A, const std::vector<uint64_t> &B,
          const std::vector<uint64_t> &C, unsigned bitOp = 0) {
  uint32_t at = types & 0xff, bt = types >> 8 & 0xff, ct = types >> 16 & 0xff,
           dt = types >> 24;
  std::vector<uint64_t> D(M * N);
  for (unsigned i = 0; i < M; ++i)
    for (unsigned j = 0; j < N; ++j) {
      if (at == B1) {
        // .xor.popc (bitOp 1) / .and.popc (2): C + popc(row op column).
        uint32_t acc = uint32_t(C[i * N + j]);
        for (unsigned k = 0; k < K; ++k) {
          bool x = A[i * K + k] & 1, y = B[k * N + j] & 1;
          acc += bitOp == 2 ? (x && y) : (x != y);
        }
        D[i * N + j] = acc;
      } else if (at == S8 || at == U8 || at == S4 || at == U4) {
        auto val = [](uint32_t t, uint64_t r) -> int64_t {
          if (t == S4)
            return int64_t(uint64_t(r) << 60) >> 60;
          if (t == U4)
            return int64_t(r & 0xf);
          return t == S8 ? int64_t(int8_t(r)) : int64_t(uint8_t(r));
        };
        int64_t acc = int32_t(uint32_t(C[i * N + j]));
        for (unsigned k = 0; k < K; ++k)
          acc += val(at, A[i * K + k]) * val(bt, B[k * N + j]);
        if (satfinite)
          acc = std::min<int64_t>(std::max<int64_t>(acc, INT32_MIN), INT32_MAX);
        D[i * N + j] = uint32_t(acc);
      } else if (at == F64) {
        double acc = llvm::bit_cast<double>(C[i * N + j]);
        for (unsigned k = 0; k < K; ++k)
          acc = std::fma(llvm::bit_cast<double>(A[i * K + k]),
                         llvm::bit_cast<double>(B[k * N + j]), acc);
        D[i * N + j] = bitsOf(acc);
      } else {
        float acc = elemToFloat(ct, C[i * N + j]);
        for (unsigned k = 0; k < K; ++k) {
          // The product of two f16/bf16/tf32 values is exact in f64 and,
          // for the ranges used here, in f32.
          double p = double(elemToFloat(at, A[i * K + k])) *
                     double(elemToFloat(bt, B[k * N + j]));
          acc = float(double(acc) + p); // exact sum of two floats, rounded
        }
        D[i * N + j] = dt == F16 ? toHalf(acc) : bitsOf(acc);
      }
    }
  return D;
}

/// A random element of `type` (raw bits); small ranges keep sums exact-ish
/// and products exact in f32.
uint64_t randomElem(uint32_t type, std::mt19937 &rng) {
  std::uniform_real_distribution<float> fd(-8.0f, 8.0f);
  switch (type) {
  case F16:
    return toHalf(fd(rng));
  case BF16:
    return toBf16(fd(rng));
  case TF32:
  case F32:
    return bitsOf(fd(rng)) ^ (rng() & 0x1fff); // junk in tf32's low bits
  case F64:
    return bitsOf(double(fd(rng)) + std::ldexp(double(rng() % 1024), -40));
  case S8:
  case U8:
    return rng() & 0xff;
  case S4:
  case U4:
    return rng() & 0xf;
  case B1:
    return rng() & 1;
  case E4M3: { // finite: not S.1111.111
    uint32_t b = rng() & 0xff;
    return (b & 0x7f) == 0x7f ? b & 0xfe : b;
  }
  case E5M2: { // finite: exponent below 31
    uint32_t b = rng() & 0xff;
    return (b & 0x7c) == 0x7c ? b & 0xbf : b;
  }
  case S32:
    return uint32_t(int32_t(rng() % 20001) - 10000);
  }
  return 0;
}

struct MmaCase {
  unsigned M, N, K;
  uint32_t types;
  FragTable a, b, c;
};

/// Runs one mma.sync through resolveMatrixOp and compares D bit for bit.
void checkMma(const MmaCase &mc, bool satfinite, uint32_t seed,
              std::vector<uint64_t> *Cover = nullptr, unsigned bitOp = 0) {
  SCOPED_TRACE("mma m" + std::to_string(mc.M) + "n" + std::to_string(mc.N) +
               "k" + std::to_string(mc.K) + " types " +
               std::to_string(mc.types));
  std::mt19937 rng(seed);
  uint32_t at = mc.types & 0xff, bt = mc.types >> 8 & 0xff,
           ct = mc.types >> 16 & 0xff, dt = mc.types >> 24;
  std::vector<uint64_t> A(mc.M * mc.K), B(mc.K * mc.N), C(mc.M * mc.N);
  for (auto &x : A)
    x = randomElem(at, rng);
  for (auto &x : B)
    x = randomElem(bt, rng);
  for (auto &x : C)
    x = randomElem(ct, rng);
  if (Cover)
    C = *Cover;
  FragTable d = mc.c;
  d.bits = dt == F16 ? 16 : dt == F64 ? 64 : 32;
  FragTable c = mc.c;
  c.bits = ct == F16 ? 16 : ct == F64 ? 64 : 32;
  Warp w;
  for (unsigned l = 0; l < 32; ++l) {
    std::vector<uint32_t> fa, fb, fc;
    packFrag(mc.a, l, A, mc.K, fa);
    packFrag(mc.b, l, B, mc.N, fb);
    packFrag(c, l, C, mc.N, fc);
    w.in[l] = {shapeCode(mc.M, mc.N, mc.K),
               mc.types,
               0u | 1u << 1 | (satfinite ? 4u : 0u) | bitOp << 3,
               uint32_t(fa.size()),
               uint32_t(fb.size()),
               uint32_t(fc.size())};
    w.in[l].insert(w.in[l].end(), fa.begin(), fa.end());
    w.in[l].insert(w.in[l].end(), fb.begin(), fb.end());
    w.in[l].insert(w.in[l].end(), fc.begin(), fc.end());
  }
  std::string error;
  ASSERT_TRUE(w.run(WOOLY_WARP_MMA, wordsOf(d), WarpMemory(), error)) << error;
  std::vector<uint64_t> ref =
      refMatmul(mc.M, mc.N, mc.K, mc.types, satfinite, A, B, C, bitOp);
  std::vector<bool> seen(mc.M * mc.N, false);
  for (unsigned l = 0; l < 32; ++l)
    for (unsigned i = 0; i < d.elems; ++i) {
      RowCol rc = d.rc(l, i);
      unsigned idx = rc.first * mc.N + rc.second;
      seen[idx] = true;
      EXPECT_EQ(unpackElem(d, w.out[l], i), ref[idx])
          << "lane " << l << " d" << i << " (row " << rc.first << ", col "
          << rc.second << ")";
    }
  for (unsigned i = 0; i < seen.size(); ++i)
    EXPECT_TRUE(seen[i]) << "element " << i << " of D in no fragment";
}

TEST(WarpMatrixTest, MmaM16N8K16Half) {
  FragTable a{8, 16, aHalfK16}, b{4, 16, bHalfK16}, c{4, 32, accum16x8};
  checkMma({16, 8, 16, typeCode(F32, F16, F16, F32), a, b, c}, false, 1);
  checkMma({16, 8, 16, typeCode(F32, BF16, BF16, F32), a, b, c}, false, 2);
  checkMma({16, 8, 16, typeCode(F16, F16, F16, F16), a, b, c}, false, 3);
  checkMma({16, 8, 16, typeCode(F32, F16, F16, F16), a, b, c}, false, 4);
  checkMma({16, 8, 16, typeCode(F16, F16, F16, F32), a, b, c}, false, 5);
}

TEST(WarpMatrixTest, MmaM16N8K8) {
  FragTable a{4, 16, aHalfK8}, b{2, 16, bHalfK8}, c{4, 32, accum16x8};
  checkMma({16, 8, 8, typeCode(F32, F16, F16, F32), a, b, c}, false, 11);
  checkMma({16, 8, 8, typeCode(F32, BF16, BF16, F32), a, b, c}, false, 12);
  checkMma({16, 8, 8, typeCode(F16, F16, F16, F16), a, b, c}, false, 13);
  FragTable ta{4, 32, aTf32K8}, tb{2, 32, bTf32K8};
  checkMma({16, 8, 8, typeCode(F32, TF32, TF32, F32), ta, tb, c}, false, 14);
  FragTable ta4{2, 32, aTf32K4}, tb4{1, 32, bTf32K4};
  checkMma({16, 8, 4, typeCode(F32, TF32, TF32, F32), ta4, tb4, c}, false, 15);
}

TEST(WarpMatrixTest, MmaInt8) {
  FragTable c{4, 32, accum16x8};
  FragTable a32{16, 8, aInt8K32}, b32{8, 8, bInt8K32};
  FragTable a16{8, 8, aInt8K16}, b16{4, 8, bInt8K16};
  for (uint32_t at : {S8, U8})
    for (uint32_t bt : {S8, U8})
      for (bool sat : {false, true}) {
        checkMma({16, 8, 32, typeCode(S32, at, bt, S32), a32, b32, c}, sat,
                 20 + at + bt);
        checkMma({16, 8, 16, typeCode(S32, at, bt, S32), a16, b16, c}, sat,
                 30 + at + bt);
      }
  FragTable a8{4, 8, aInt8M8}, b8{4, 8, bInt8K16}, c8{2, 32, accum8x8};
  checkMma({8, 8, 16, typeCode(S32, S8, U8, S32), a8, b8, c8}, false, 41);
}

TEST(WarpMatrixTest, MmaInt4) {
  FragTable c16{4, 32, accum16x8}, c8{2, 32, accum8x8};
  FragTable a8{8, 4, aInt4M8}, b32{8, 4, bInt4K32};
  FragTable a32{16, 4, aInt4K32}, a64{32, 4, aInt4K64}, b64{16, 4, bInt4K64};
  for (uint32_t at : {S4, U4})
    for (uint32_t bt : {S4, U4})
      for (bool sat : {false, true}) {
        checkMma({8, 8, 32, typeCode(S32, at, bt, S32), a8, b32, c8}, sat,
                 70 + at + bt);
        checkMma({16, 8, 32, typeCode(S32, at, bt, S32), a32, b32, c16}, sat,
                 80 + at + bt);
        checkMma({16, 8, 64, typeCode(S32, at, bt, S32), a64, b64, c16}, sat,
                 90 + at + bt);
      }
}

// .b1 (PTX ISA, "Matrix Fragments for mma.m8n8k128 / m16n8k128 /
// m16n8k256"): 32 elements per register. m8n8k128 A: row groupID, col
// threadID_in_group * 32 + i; m16n8k128 A: row groupID (+8 for i >= 32),
// col threadID_in_group * 32 + i % 32; m16n8k256 A: rows as m16n8k128 for
// i % 64, cols + 128 for i >= 64. B: row threadID_in_group * 32 + i % 32
// (+128 for i >= 32 in k256), col groupID.
RowCol aBitM8(unsigned lane, unsigned i) {
  return {lane >> 2, (lane % 4) * 32 + i};
}
RowCol aBitK128(unsigned lane, unsigned i) {
  return {i < 32 ? lane >> 2 : (lane >> 2) + 8, (lane % 4) * 32 + i % 32};
}
RowCol aBitK256(unsigned lane, unsigned i) {
  return {(i % 64) < 32 ? lane >> 2 : (lane >> 2) + 8,
          (lane % 4) * 32 + i % 32 + (i >= 64 ? 128 : 0)};
}
RowCol bBitK128(unsigned lane, unsigned i) {
  return {(lane % 4) * 32 + i, lane >> 2};
}
RowCol bBitK256(unsigned lane, unsigned i) {
  return {(lane % 4) * 32 + i % 32 + (i >= 32 ? 128 : 0), lane >> 2};
}

TEST(WarpMatrixTest, MmaSingleBit) {
  FragTable c16{4, 32, accum16x8}, c8{2, 32, accum8x8};
  for (unsigned op : {1u, 2u}) {
    checkMma({8, 8, 128, typeCode(S32, B1, B1, S32), FragTable{32, 1, aBitM8},
              FragTable{32, 1, bBitK128}, c8},
             false, 110 + op, nullptr, op);
    checkMma({16, 8, 128, typeCode(S32, B1, B1, S32),
              FragTable{64, 1, aBitK128}, FragTable{32, 1, bBitK128}, c16},
             false, 120 + op, nullptr, op);
    checkMma({16, 8, 256, typeCode(S32, B1, B1, S32),
              FragTable{128, 1, aBitK256}, FragTable{64, 1, bBitK256}, c16},
             false, 130 + op, nullptr, op);
  }
  // C near INT32_MAX wraps.
  std::vector<uint64_t> C(16 * 8, uint32_t(INT32_MAX - 3));
  checkMma({16, 8, 256, typeCode(S32, B1, B1, S32), FragTable{128, 1, aBitK256},
            FragTable{64, 1, bBitK256}, c16},
           false, 140, &C, 1);
}

TEST(WarpMatrixTest, MmaFp8) {
  // The s8 fragment layouts (PTX ISA m16n8k16 / m16n8k32 tables list
  // .e4m3/.e5m2 with .s8/.u8).
  FragTable c{4, 32, accum16x8};
  FragTable a32{16, 8, aInt8K32}, b32{8, 8, bInt8K32};
  FragTable a16{8, 8, aInt8K16}, b16{4, 8, bInt8K16};
  unsigned seed = 150;
  for (uint32_t at : {E4M3, E5M2})
    for (uint32_t bt : {E4M3, E5M2})
      for (uint32_t acc : {F32, F16}) {
        checkMma({16, 8, 32, typeCode(acc, at, bt, acc), a32, b32, c}, false,
                 ++seed);
        checkMma({16, 8, 16, typeCode(acc, at, bt, acc), a16, b16, c}, false,
                 ++seed);
      }
}

// mma.m8n8k4 with .f16 inputs (PTX ISA, "Matrix Fragments for mma.m8n8k4
// with .f16 floating point type"): computation q by lanes 4q..4q+3 (low
// group) and 16+4q..16+4q+3 (high group). A row-major: row laneid % 4 (+4
// high), col i; column-major: row i (+4 high), col laneid % 4. B row-major:
// row laneid % 4, col i (+4 high); column-major: row i, col laneid % 4 (+4
// high). C/D .f16: row laneid % 4 (+4 high), col i; .f32: row X (+4 high)
// with X = (laneid & 0b1) + (i & 0b10), col (i & 0b100) + (laneid & 0b10) +
// (i & 0b1).
void checkQuadPair(bool colA, bool colB, uint32_t ct, uint32_t dt,
                   uint32_t seed) {
  SCOPED_TRACE("m8n8k4 layouts " + std::to_string(colA) + std::to_string(colB) +
               " c " + std::to_string(ct) + " d " + std::to_string(dt));
  std::mt19937 rng(seed);
  auto high = [](unsigned l) { return l >= 16 ? 4u : 0u; };
  auto aRC = [&](unsigned l, unsigned i) -> RowCol {
    return colA ? RowCol{i % 4 + high(l), l % 4} : RowCol{l % 4 + high(l), i};
  };
  auto bRC = [&](unsigned l, unsigned i) -> RowCol {
    return colB ? RowCol{i, l % 4 + high(l)} : RowCol{l % 4, i + high(l)};
  };
  auto cRC = [&](unsigned l, unsigned i, uint32_t t) -> RowCol {
    if (t == F16)
      return {l % 4 + high(l), i};
    return {(l & 1) + (i & 2) + high(l), (i & 4) + (l & 2) + (i & 1)};
  };
  std::vector<uint64_t> A[4], B[4], C[4];
  for (unsigned q = 0; q < 4; ++q) {
    A[q].resize(32);
    B[q].resize(32);
    C[q].resize(64);
    for (auto &x : A[q])
      x = randomElem(F16, rng);
    for (auto &x : B[q])
      x = randomElem(F16, rng);
    for (auto &x : C[q])
      x = randomElem(ct, rng);
  }
  unsigned cWords = ct == F16 ? 4 : 8, dWords = dt == F16 ? 4 : 8;
  Warp w;
  for (unsigned l = 0; l < 32; ++l) {
    unsigned q = (l / 4) % 4;
    uint32_t fa[2] = {0, 0}, fb[2] = {0, 0};
    std::vector<uint32_t> fc(cWords, 0);
    for (unsigned i = 0; i < 4; ++i) {
      RowCol a = aRC(l, i), b = bRC(l, i);
      fa[i / 2] |= uint32_t(A[q][a.first * 4 + a.second]) << (16 * (i % 2));
      fb[i / 2] |= uint32_t(B[q][b.first * 8 + b.second]) << (16 * (i % 2));
    }
    for (unsigned i = 0; i < 8; ++i) {
      RowCol c = cRC(l, i, ct);
      uint64_t v = C[q][c.first * 8 + c.second];
      if (ct == F16)
        fc[i / 2] |= uint32_t(v) << (16 * (i % 2));
      else
        fc[i] = uint32_t(v);
    }
    w.in[l] = {shapeCode(8, 8, 4),
               typeCode(dt, F16, F16, ct),
               (colA ? 1u : 0u) | (colB ? 2u : 0u),
               2,
               2,
               cWords};
    w.in[l].insert(w.in[l].end(), fa, fa + 2);
    w.in[l].insert(w.in[l].end(), fb, fb + 2);
    w.in[l].insert(w.in[l].end(), fc.begin(), fc.end());
  }
  std::string error;
  ASSERT_TRUE(w.run(WOOLY_WARP_MMA, dWords, WarpMemory(), error)) << error;
  for (unsigned q = 0; q < 4; ++q) {
    std::vector<uint64_t> ref =
        refMatmul(8, 8, 4, typeCode(dt, F16, F16, ct), false, A[q], B[q], C[q]);
    for (unsigned l = 0; l < 32; ++l) {
      if ((l / 4) % 4 != q)
        continue;
      for (unsigned i = 0; i < 8; ++i) {
        RowCol d = cRC(l, i, dt);
        uint64_t got = dt == F16 ? (w.out[l][i / 2] >> (16 * (i % 2))) & 0xffff
                                 : w.out[l][i];
        EXPECT_EQ(got, ref[d.first * 8 + d.second])
            << "computation " << q << " lane " << l << " d" << i;
      }
    }
  }
}

TEST(WarpMatrixTest, MmaQuadPairs) {
  unsigned seed = 170;
  for (unsigned layouts = 0; layouts < 4; ++layouts) {
    checkQuadPair(layouts & 1, layouts & 2, F16, F16, ++seed);
    checkQuadPair(layouts & 1, layouts & 2, F16, F32, ++seed);
    checkQuadPair(layouts & 1, layouts & 2, F32, F32, ++seed);
  }
}

TEST(WarpMatrixTest, MmaInt8Saturation) {
  // C near INT32_MAX / INT32_MIN: wraps without .satfinite, clamps with it.
  FragTable a{16, 8, aInt8K32}, b{8, 8, bInt8K32}, c{4, 32, accum16x8};
  std::vector<uint64_t> C(16 * 8);
  for (unsigned i = 0; i < C.size(); ++i)
    C[i] = i % 2 ? uint32_t(INT32_MAX - 5) : uint32_t(INT32_MIN + 5);
  for (bool sat : {false, true})
    checkMma({16, 8, 32, typeCode(S32, S8, S8, S32), a, b, c}, sat, 50, &C);
}

TEST(WarpMatrixTest, MmaF64) {
  FragTable a{1, 64, aF64}, b{1, 64, bF64}, c{2, 64, accum8x8};
  checkMma({8, 8, 4, typeCode(F64, F64, F64, F64), a, b, c}, false, 60);
}

TEST(WarpMatrixTest, MmaF64M16N8) {
  FragTable c{4, 64, accum16x8};
  for (unsigned k : {4u, 8u, 16u})
    checkMma({16, 8, k, typeCode(F64, F64, F64, F64),
              FragTable{k / 2, 64, aF64M16}, FragTable{k / 4, 64, bF64M16}, c},
             false, 61 + k);
}

TEST(WarpMatrixTest, MmaF32AccumulationOrder) {
  // 1 + 2^-24 (twice) + ...: with the products added one by one to C in k
  // order, each 2^-24 is lost to rounding; the documented order keeps C
  // first. A row of ones times B = 2^-24 ... gives exactly 1.
  FragTable a{8, 16, aHalfK16}, b{4, 16, bHalfK16}, c{4, 32, accum16x8};
  std::vector<uint64_t> A(16 * 16, toHalf(1.0f)), B(16 * 8, toHalf(0x1p-24f)),
      C(16 * 8, bitsOf(1.0f));
  Warp w;
  for (unsigned l = 0; l < 32; ++l) {
    std::vector<uint32_t> fa, fb, fc;
    packFrag(a, l, A, 16, fa);
    packFrag(b, l, B, 8, fb);
    packFrag(c, l, C, 8, fc);
    w.in[l] = {shapeCode(16, 8, 16), typeCode(F32, F16, F16, F32), 2, 4, 2, 4};
    w.in[l].insert(w.in[l].end(), fa.begin(), fa.end());
    w.in[l].insert(w.in[l].end(), fb.begin(), fb.end());
    w.in[l].insert(w.in[l].end(), fc.begin(), fc.end());
  }
  std::string error;
  ASSERT_TRUE(w.run(WOOLY_WARP_MMA, 4, WarpMemory(), error)) << error;
  for (unsigned l = 0; l < 32; ++l)
    for (unsigned i = 0; i < 4; ++i)
      EXPECT_EQ(w.out[l][i], bitsOf(1.0f));
}

TEST(WarpMatrixTest, Unsupported) {
  Warp w;
  for (unsigned l = 0; l < 32; ++l)
    w.in[l] = {shapeCode(8, 8, 4),
               typeCode(F32, BF16, BF16, F32),
               2,
               4,
               2,
               4,
               0,
               0,
               0,
               0,
               0,
               0,
               0,
               0,
               0,
               0};
  std::string error;
  EXPECT_FALSE(w.run(WOOLY_WARP_MMA, 4, WarpMemory(), error));
  EXPECT_NE(error.find("m8n8k4"), std::string::npos) << error;
  EXPECT_NE(error.find("not supported on the CPU backend"), std::string::npos)
      << error;
  // Not all lanes.
  WarpLane lanes[32];
  EXPECT_FALSE(
      resolveMatrixOp(WOOLY_WARP_MMA, lanes, 0xffffu, WarpMemory(), error));
}

//===----------------------------------------------------------------------===//
// ldmatrix
//===----------------------------------------------------------------------===//

TEST(WarpMatrixTest, LdMatrix) {
  // Four 8x8 matrices at scattered, 16-byte-aligned row addresses.
  std::vector<char> shared(4096);
  std::mt19937 rng(7);
  uint16_t M[4][8][8];
  unsigned rowOff[4][8];
  for (unsigned j = 0; j < 4; ++j)
    for (unsigned r = 0; r < 8; ++r) {
      rowOff[j][r] = 16 * ((j * 37 + r * 11) % 256);
      for (unsigned c = 0; c < 8; ++c) {
        M[j][r][c] = uint16_t(rng());
        std::memcpy(&shared[rowOff[j][r] + 2 * c], &M[j][r][c], 2);
      }
    }
  WarpMemory mem;
  mem.shared = shared.data();
  mem.sharedSize = shared.size();
  for (unsigned count : {1u, 2u, 4u})
    for (unsigned trans : {0u, 1u}) {
      SCOPED_TRACE("x" + std::to_string(count) + (trans ? " trans" : ""));
      Warp w;
      for (unsigned l = 0; l < 32; ++l) {
        // Lanes past 8 * count supply ignored addresses.
        unsigned off = l < 8 * count ? rowOff[l / 8][l % 8] : 0xfffff0u;
        w.in[l] = {off, 0, count, trans};
      }
      std::string error;
      ASSERT_TRUE(w.run(WOOLY_WARP_LDMATRIX, count, mem, error)) << error;
      // PTX ISA: thread l holds, of each matrix, row l / 4 and elements
      // 2 * (l % 4) and 2 * (l % 4) + 1 (of the transpose with .trans).
      for (unsigned l = 0; l < 32; ++l)
        for (unsigned j = 0; j < count; ++j) {
          unsigned r = l / 4, c = 2 * (l % 4);
          uint16_t lo = trans ? M[j][c][r] : M[j][r][c];
          uint16_t hi = trans ? M[j][c + 1][r] : M[j][r][c + 1];
          EXPECT_EQ(w.out[l][j], uint32_t(lo) | uint32_t(hi) << 16)
              << "lane " << l << " matrix " << j;
        }
    }
  // Out of the shared window.
  Warp w;
  for (unsigned l = 0; l < 32; ++l)
    w.in[l] = {l == 3 ? 4096u - 8 : 0u, 0, 1, 0};
  std::string error;
  EXPECT_FALSE(w.run(WOOLY_WARP_LDMATRIX, 1, mem, error));
  EXPECT_NE(error.find("shared"), std::string::npos) << error;
}

//===----------------------------------------------------------------------===//
// wmma
//===----------------------------------------------------------------------===//

struct HostMatrix {
  unsigned rows, cols, bytes, stride;
  bool col;
  std::vector<char> data;
  HostMatrix(unsigned r, unsigned c, unsigned bytes, unsigned stride, bool col)
      : rows(r), cols(c), bytes(bytes), stride(stride), col(col),
        data(size_t(stride) * (col ? c : r) * bytes + 64, 0) {}
  char *at(unsigned r, unsigned c) {
    return &data[(col ? size_t(c) * stride + r : size_t(r) * stride + c) *
                 bytes];
  }
  uint64_t get(unsigned r, unsigned c) {
    uint64_t v = 0;
    std::memcpy(&v, at(r, c), bytes);
    return v;
  }
  void set(unsigned r, unsigned c, uint64_t v) {
    std::memcpy(at(r, c), &v, bytes);
  }
  uint64_t addr() { return uint64_t(reinterpret_cast<uintptr_t>(data.data())); }
};

/// Generic accesses are checked against the three host matrices.
WarpMemory checkedMemory(std::vector<HostMatrix *> ms, unsigned *calls) {
  WarpMemory mem;
  mem.checkGeneric = [ms, calls](uint64_t addr, uint64_t size, bool,
                                 std::string &error) {
    ++*calls;
    for (HostMatrix *m : ms)
      if (addr >= m->addr() && addr + size <= m->addr() + m->data.size())
        return true;
    error = "out of bounds";
    return false;
  };
  return mem;
}

bool wmmaLoad(uint32_t role, HostMatrix &m, unsigned shape, uint32_t type,
              bool defaultStride, unsigned nwords, const WarpMemory &mem,
              std::vector<uint32_t> frag[32], std::string &error) {
  Warp w;
  uint64_t a = m.addr();
  for (unsigned l = 0; l < 32; ++l)
    w.in[l] = {role,
               m.col ? 1u : 0u,
               shape,
               type,
               0,
               uint32_t(a),
               uint32_t(a >> 32),
               defaultStride ? 0 : m.stride};
  if (!w.run(WOOLY_WARP_WMMA_LOAD, nwords, mem, error))
    return false;
  for (unsigned l = 0; l < 32; ++l)
    frag[l] = w.out[l];
  return true;
}

/// wmma.load a, b, c -> wmma.mma -> wmma.store d for one layout
/// combination, compared with a reference product.
void checkWmma(unsigned M, unsigned N, unsigned K, uint32_t at, uint32_t ct,
               uint32_t dt, bool colA, bool colB, bool colC, bool colD,
               bool defaultStride, uint32_t seed) {
  SCOPED_TRACE("wmma m" + std::to_string(M) + "n" + std::to_string(N) + "k" +
               std::to_string(K) + " a " + std::to_string(at) + " c " +
               std::to_string(ct) + " d " + std::to_string(dt) + " layouts " +
               std::to_string(colA) + std::to_string(colB) +
               std::to_string(colC) + std::to_string(colD));
  std::mt19937 rng(seed);
  auto bytesOf = [](uint32_t t) {
    return t == F16 || t == BF16  ? 2u
           : (t == S8 || t == U8) ? 1u
           : t == F64             ? 8u
                                  : 4u;
  };
  auto ld = [&](unsigned r, unsigned c, bool col) {
    return defaultStride ? (col ? r : c) : (col ? r : c) + 8;
  };
  HostMatrix A(M, K, bytesOf(at), ld(M, K, colA), colA);
  HostMatrix B(K, N, bytesOf(at), ld(K, N, colB), colB);
  HostMatrix C(M, N, bytesOf(ct), ld(M, N, colC), colC);
  HostMatrix D(M, N, bytesOf(dt), ld(M, N, colD), colD);
  std::vector<uint64_t> a(M * K), b(K * N), c(M * N);
  for (unsigned i = 0; i < M; ++i)
    for (unsigned k = 0; k < K; ++k)
      A.set(i, k, a[i * K + k] = randomElem(at, rng));
  for (unsigned k = 0; k < K; ++k)
    for (unsigned j = 0; j < N; ++j)
      B.set(k, j, b[k * N + j] = randomElem(at, rng));
  for (unsigned i = 0; i < M; ++i)
    for (unsigned j = 0; j < N; ++j)
      C.set(i, j, c[i * N + j] = randomElem(ct, rng));
  unsigned calls = 0;
  WarpMemory mem = checkedMemory({&A, &B, &C, &D}, &calls);
  // Fragment sizes of the PTX ISA (wmma "Matrix Fragments").
  bool f16 = at == F16;
  unsigned aWords = f16 ? 8 : (M * K / 32) * bytesOf(at) / 4;
  unsigned bWords = f16 ? 8 : (K * N / 32) * bytesOf(at) / 4;
  if (at == S8 || at == U8) {
    aWords = M * K / 128;
    bWords = K * N / 128;
  }
  unsigned cWords = (M * N / 32) * bytesOf(ct) / 4;
  unsigned dWords = (M * N / 32) * bytesOf(dt) / 4;
  unsigned shape = shapeCode(M, N, K);
  std::vector<uint32_t> fa[32], fb[32], fc[32];
  std::string error;
  ASSERT_TRUE(wmmaLoad(0, A, shape, at, defaultStride, aWords, mem, fa, error))
      << error;
  ASSERT_TRUE(wmmaLoad(1, B, shape, at, defaultStride, bWords, mem, fb, error))
      << error;
  ASSERT_TRUE(wmmaLoad(2, C, shape, ct, defaultStride, cWords, mem, fc, error))
      << error;
  Warp mma;
  uint32_t types = typeCode(dt, at, at, ct);
  for (unsigned l = 0; l < 32; ++l) {
    mma.in[l] = {shape,  types,  (colA ? 1u : 0u) | (colB ? 2u : 0u),
                 aWords, bWords, cWords};
    mma.in[l].insert(mma.in[l].end(), fa[l].begin(), fa[l].end());
    mma.in[l].insert(mma.in[l].end(), fb[l].begin(), fb[l].end());
    mma.in[l].insert(mma.in[l].end(), fc[l].begin(), fc[l].end());
  }
  ASSERT_TRUE(mma.run(WOOLY_WARP_WMMA_MMA, dWords, mem, error)) << error;
  Warp st;
  uint64_t dAddr = D.addr();
  for (unsigned l = 0; l < 32; ++l) {
    st.in[l] = {colD ? 1u : 0u,
                shape,
                dt,
                0,
                uint32_t(dAddr),
                uint32_t(dAddr >> 32),
                defaultStride ? 0 : D.stride};
    st.in[l].insert(st.in[l].end(), mma.out[l].begin(), mma.out[l].end());
  }
  ASSERT_TRUE(st.run(WOOLY_WARP_WMMA_STORE, 0, mem, error)) << error;
  EXPECT_GT(calls, 0u);
  std::vector<uint64_t> ref = refMatmul(M, N, K, types, false, a, b, c);
  for (unsigned i = 0; i < M; ++i)
    for (unsigned j = 0; j < N; ++j)
      EXPECT_EQ(D.get(i, j), ref[i * N + j]) << "D(" << i << ", " << j << ")";
}

TEST(WarpMatrixTest, WmmaRoundTripM16N16K16) {
  unsigned seed = 100;
  for (uint32_t ct : {F32, F16})
    for (uint32_t dt : {F32, F16})
      for (unsigned layouts = 0; layouts < 16; ++layouts)
        checkWmma(16, 16, 16, F16, ct, dt, layouts & 1, layouts & 2,
                  layouts & 4, layouts & 8, layouts % 3 == 0, ++seed);
  checkWmma(16, 16, 16, BF16, F32, F32, false, true, false, false, false, 200);
  checkWmma(16, 16, 16, S8, S32, S32, true, false, false, true, false, 201);
  checkWmma(16, 16, 16, U8, S32, S32, false, false, true, false, true, 202);
}

TEST(WarpMatrixTest, WmmaRoundTripOtherShapes) {
  checkWmma(32, 8, 16, F16, F32, F32, false, true, false, false, false, 300);
  checkWmma(8, 32, 16, F16, F16, F32, true, false, true, false, true, 301);
  checkWmma(32, 8, 16, BF16, F32, F32, true, true, false, true, false, 302);
  checkWmma(8, 32, 16, S8, S32, S32, false, true, false, false, false, 303);
  checkWmma(16, 16, 8, TF32, F32, F32, false, true, true, false, false, 304);
  checkWmma(8, 8, 4, F64, F64, F64, true, false, false, true, false, 305);
}

TEST(WarpMatrixTest, WmmaLayoutMatchesMma) {
  // The documented wmma layout: a m16n16k16 f16 A fragment is the A fragment
  // of mma.m16n8k16 (registers 0-3), repeated in registers 4-7; B and C are
  // two m16n8k16 fragments side by side.
  HostMatrix A(16, 16, 2, 16, false), B(16, 16, 2, 16, false),
      C(16, 16, 4, 16, false);
  std::vector<uint64_t> a(256), bLeft(128), bRight(128), cLeft(128),
      cRight(128);
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned c = 0; c < 16; ++c) {
      A.set(r, c, a[r * 16 + c] = r * 16 + c);
      B.set(r, c, 1000 + r * 16 + c);
      (c < 8 ? bLeft : bRight)[r * 8 + c % 8] = 1000 + r * 16 + c;
      C.set(r, c, 5000 + r * 16 + c);
      (c < 8 ? cLeft : cRight)[r * 8 + c % 8] = 5000 + r * 16 + c;
    }
  unsigned calls = 0;
  WarpMemory mem = checkedMemory({&A, &B, &C}, &calls);
  std::vector<uint32_t> fa[32], fb[32], fc[32];
  std::string error;
  unsigned shape = shapeCode(16, 16, 16);
  ASSERT_TRUE(wmmaLoad(0, A, shape, F16, true, 8, mem, fa, error)) << error;
  ASSERT_TRUE(wmmaLoad(1, B, shape, F16, true, 8, mem, fb, error)) << error;
  ASSERT_TRUE(wmmaLoad(2, C, shape, F32, true, 8, mem, fc, error)) << error;
  FragTable ta{8, 16, aHalfK16}, tb{4, 16, bHalfK16}, tc{4, 32, accum16x8};
  for (unsigned l = 0; l < 32; ++l) {
    std::vector<uint32_t> ea, eb, ec;
    packFrag(ta, l, a, 16, ea);
    ea.insert(ea.end(), ea.begin(), ea.end());
    packFrag(tb, l, bLeft, 8, eb);
    packFrag(tb, l, bRight, 8, eb);
    eb.insert(eb.end(), eb.begin(), eb.end());
    packFrag(tc, l, cLeft, 8, ec);
    packFrag(tc, l, cRight, 8, ec);
    EXPECT_EQ(fa[l], ea) << "lane " << l;
    EXPECT_EQ(fb[l], eb) << "lane " << l;
    EXPECT_EQ(fc[l], ec) << "lane " << l;
  }
}

// Sub-byte wmma fragments (s4/u4 m8n8k32, b1 m8n8k128) have the layouts of
// mma.m8n8k32 / mma.m8n8k128; in memory, element 0 of a row is in the low
// bits of its byte.
TEST(WarpMatrixTest, WmmaSubByteLayouts) {
  struct Case {
    uint32_t role, type, shape;
    unsigned bits, stride, elems;
    bool col;
    Table rc;
  };
  const Case cases[] = {
      {0, U4, shapeCode(8, 8, 32), 4, 64, 8, false, aInt4M8},
      {1, S4, shapeCode(8, 8, 32), 4, 48, 8, true, bInt4K32},
      {0, B1, shapeCode(8, 8, 128), 1, 256, 32, false, aBitM8},
      {1, B1, shapeCode(8, 8, 128), 1, 384, 32, true, bBitK128},
  };
  std::mt19937 rng(180);
  for (const Case &c : cases) {
    SCOPED_TRACE("role " + std::to_string(c.role) + " type " +
                 std::to_string(c.type));
    HostMatrix buf(8, 8, 1, c.stride, c.col);
    for (char &x : buf.data)
      x = char(rng());
    unsigned calls = 0;
    WarpMemory mem = checkedMemory({&buf}, &calls);
    std::vector<uint32_t> frag[32];
    std::string error;
    ASSERT_TRUE(
        wmmaLoad(c.role, buf, c.shape, c.type, false, 1, mem, frag, error))
        << error;
    for (unsigned l = 0; l < 32; ++l)
      for (unsigned i = 0; i < c.elems; ++i) {
        RowCol rc = c.rc(l, i);
        uint64_t bit = (c.col ? uint64_t(rc.second) * c.stride + rc.first
                              : uint64_t(rc.first) * c.stride + rc.second) *
                       c.bits;
        uint32_t want =
            (uint8_t(buf.data[bit / 8]) >> (bit % 8)) & ((1u << c.bits) - 1);
        EXPECT_EQ((frag[l][0] >> (i * c.bits)) & ((1u << c.bits) - 1), want)
            << "lane " << l << " element " << i;
      }
  }
}

TEST(WarpMatrixTest, WmmaBadAddress) {
  HostMatrix A(16, 16, 2, 16, false);
  unsigned calls = 0;
  WarpMemory mem = checkedMemory({}, &calls);
  std::vector<uint32_t> fa[32];
  std::string error;
  EXPECT_FALSE(
      wmmaLoad(0, A, shapeCode(16, 16, 16), F16, true, 8, mem, fa, error));
  EXPECT_EQ(error, "out of bounds");
  // An unsupported fragment.
  EXPECT_FALSE(
      wmmaLoad(0, A, shapeCode(8, 8, 32), F16, true, 1, mem, fa, error));
  EXPECT_NE(error.find("not supported"), std::string::npos) << error;
}

//===----------------------------------------------------------------------===//
// ZLUDA's warp tests (outputs recorded on NVIDIA GPUs)
//===----------------------------------------------------------------------===//

std::string zludaDir() {
  return std::string(WOOLY_SOURCE_DIR) + "/../shared/conformance/zluda";
}

std::string readFile(const std::string &path) {
  std::ifstream f(path);
  if (!f)
    return {};
  return std::string(std::istreambuf_iterator<char>(f),
                     std::istreambuf_iterator<char>());
}

/// The `output_hex` words of test `name` in expected.json.
bool expectedOutput(const std::string &name, std::vector<uint32_t> &out) {
  std::string json = readFile(zludaDir() + "/expected.json");
  size_t p = json.find("\"" + name + "\": {");
  if (p == std::string::npos)
    return false;
  p = json.find("\"output_hex\": [", p);
  if (p == std::string::npos)
    return false;
  size_t end = json.find(']', p);
  out.clear();
  for (size_t q = json.find("\"0x", p); q < end; q = json.find("\"0x", q + 1))
    out.push_back(uint32_t(std::strtoul(json.c_str() + q + 1, nullptr, 16)));
  return true;
}

/// The integers of the initializer of `values_g` in a PTX file.
std::vector<uint32_t> ptxInitializer(const std::string &name) {
  std::string ptx = readFile(zludaDir() + "/ptx/" + name + ".ptx");
  std::vector<uint32_t> v;
  size_t p = ptx.find("values_g[");
  if (p == std::string::npos)
    return v;
  p = ptx.find('{', p);
  size_t end = ptx.find('}', p);
  for (size_t i = p + 1; i < end; ++i) {
    if (ptx.compare(i, 2, "//") == 0) {
      i = ptx.find('\n', i);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(ptx[i]))) {
      char *e;
      v.push_back(uint32_t(std::strtoul(ptx.c_str() + i, &e, 10)));
      i = size_t(e - ptx.c_str()) - 1;
    }
  }
  return v;
}

#define REQUIRE_ZLUDA(name, expected)                                          \
  std::vector<uint32_t> expected;                                              \
  if (!expectedOutput(name, expected))                                         \
    GTEST_SKIP() << "ZLUDA conformance data not found in " << zludaDir();

/// cvt.rn.{f16,bf16}x2.f32 d, a, b: a in the upper half, b in the lower.
uint32_t cvtX2(bool bf16, float a, float b) {
  auto cv = [&](float x) -> uint32_t { return bf16 ? toBf16(x) : toHalf(x); };
  return cv(a) << 16 | cv(b);
}

/// mma_m16n8k16_f32_{bf16,f16}_..._f32 and its _2x variant: per thread,
/// in_j = 8 * tid + j; A = cvt(in0, in1), cvt(in2, in3), ...; B and C as
/// in the kernel.
void zludaMmaHalf(const std::string &name, bool bf16, bool twice) {
  REQUIRE_ZLUDA(name, expected);
  // The output buffer holds 256 words: both warps for one op, the first
  // warp for two.
  unsigned perThread = twice ? 8 : 4;
  ASSERT_EQ(expected.size(), 256u);
  uint32_t ab = bf16 ? BF16 : F16;
  for (unsigned warp = 0; warp < 2; ++warp)
    for (unsigned op = 0; op < (twice ? 2u : 1u); ++op) {
      Warp w;
      for (unsigned l = 0; l < 32; ++l) {
        unsigned tid = 32 * warp + l;
        float in[8];
        for (unsigned j = 0; j < 8; ++j)
          in[j] = float(tid) * 8.0f + float(j);
        unsigned b0 = 4 * op; // second op: b4b5, b6b7 and C = in4..in7
        w.in[l] = {shapeCode(16, 8, 16),
                   typeCode(F32, ab, ab, F32),
                   2,
                   4,
                   2,
                   4,
                   cvtX2(bf16, in[0], in[1]),
                   cvtX2(bf16, in[2], in[3]),
                   cvtX2(bf16, in[4], in[5]),
                   cvtX2(bf16, in[6], in[7]),
                   cvtX2(bf16, in[b0], in[b0 + 1]),
                   cvtX2(bf16, in[b0 + 2], in[b0 + 3]),
                   bitsOf(in[b0]),
                   bitsOf(in[b0 + 1]),
                   bitsOf(in[b0 + 2]),
                   bitsOf(in[b0 + 3])};
      }
      std::string error;
      ASSERT_TRUE(w.run(WOOLY_WARP_MMA, 4, WarpMemory(), error)) << error;
      for (unsigned l = 0; l < 32; ++l)
        for (unsigned j = 0; j < 4; ++j) {
          unsigned tid = 32 * warp + l;
          if (tid * perThread + 4 * op + j >= expected.size())
            continue;
          EXPECT_EQ(w.out[l][j], expected[tid * perThread + 4 * op + j])
              << name << ": thread " << tid << " d" << 4 * op + j;
        }
    }
}

TEST(WarpMatrixZludaTest, MmaBf16) {
  zludaMmaHalf("mma_m16n8k16_f32_bf16_bf16_f32", true, false);
}
TEST(WarpMatrixZludaTest, MmaF16) {
  zludaMmaHalf("mma_m16n8k16_f32_f16_f16_f32", false, false);
}
TEST(WarpMatrixZludaTest, MmaBf16Twice) {
  zludaMmaHalf("mma_m16n8k16_f32_bf16_bf16_f32_2x", true, true);
}

/// mma_m16n8k32_s32_s8_s8_s32{,_interleave}: in_j = u16(16 * tid + j),
/// registers packed with pack_u8 (in0 | in1 << 8 | in2 << 16 | in3 << 24,
/// overlapping bits included), C = in0..in3.
void zludaMmaInt8(const std::string &name, bool interleave) {
  REQUIRE_ZLUDA(name, expected);
  unsigned ops = interleave ? 4 : 1;
  ASSERT_EQ(expected.size(), 64 * 4 * ops);
  // Register orders of the interleave kernel's four mma ops.
  const unsigned aOrder[4][4] = {
      {0, 1, 2, 3}, {3, 2, 1, 0}, {0, 1, 2, 3}, {3, 2, 1, 0}};
  const unsigned bOrder[4][2] = {{0, 1}, {1, 0}, {1, 0}, {0, 0}};
  for (unsigned warp = 0; warp < 2; ++warp)
    for (unsigned op = 0; op < ops; ++op) {
      Warp w;
      for (unsigned l = 0; l < 32; ++l) {
        unsigned tid = 32 * warp + l;
        uint32_t in[16];
        for (unsigned j = 0; j < 16; ++j)
          in[j] = uint16_t(tid * 16 + j);
        auto pack = [&](unsigned f) {
          return in[f] | in[f + 1] << 8 | in[f + 2] << 16 | in[f + 3] << 24;
        };
        uint32_t a[4] = {pack(0), pack(4), pack(8), pack(12)};
        // The plain kernel packs in0..in3 into both B registers.
        uint32_t b[2] = {pack(0), interleave ? pack(4) : pack(0)};
        w.in[l] = {shapeCode(16, 8, 32),
                   typeCode(S32, S8, S8, S32),
                   2,
                   4,
                   2,
                   4,
                   a[aOrder[op][0]],
                   a[aOrder[op][1]],
                   a[aOrder[op][2]],
                   a[aOrder[op][3]],
                   b[bOrder[op][0]],
                   b[bOrder[op][1]],
                   in[0],
                   in[1],
                   in[2],
                   in[3]};
      }
      std::string error;
      ASSERT_TRUE(w.run(WOOLY_WARP_MMA, 4, WarpMemory(), error)) << error;
      for (unsigned l = 0; l < 32; ++l)
        for (unsigned j = 0; j < 4; ++j) {
          unsigned tid = 32 * warp + l;
          EXPECT_EQ(w.out[l][j], expected[tid * 4 * ops + 4 * op + j])
              << name << ": thread " << tid << " d" << 4 * op + j;
        }
    }
}

TEST(WarpMatrixZludaTest, MmaInt8) {
  zludaMmaInt8("mma_m16n8k32_s32_s8_s8_s32", false);
}
TEST(WarpMatrixZludaTest, MmaInt8Interleave) {
  zludaMmaInt8("mma_m16n8k32_s32_s8_s8_s32_interleave", true);
}

TEST(WarpMatrixZludaTest, LdMatrix) {
  // values_g (u32[64]) is copied to values_s; lane l's row address is
  // values_s + 16 * l; ldmatrix .x2; thread t stores x0, x1 at 8 * t.
  // Only the first warp's output is recorded.
  REQUIRE_ZLUDA("ldmatrix", expected);
  std::vector<uint32_t> values = ptxInitializer("ldmatrix");
  ASSERT_EQ(values.size(), 64u);
  ASSERT_EQ(expected.size(), 64u);
  std::vector<char> shared(256);
  std::memcpy(shared.data(), values.data(), 256);
  WarpMemory mem;
  mem.shared = shared.data();
  mem.sharedSize = shared.size();
  Warp w;
  for (unsigned l = 0; l < 32; ++l)
    w.in[l] = {l < 16 ? 16 * l : 0, 0, 2, 0};
  std::string error;
  ASSERT_TRUE(w.run(WOOLY_WARP_LDMATRIX, 2, mem, error)) << error;
  for (unsigned l = 0; l < 32; ++l)
    for (unsigned j = 0; j < 2; ++j)
      EXPECT_EQ(w.out[l][j], expected[2 * l + j]) << "lane " << l;
}

TEST(WarpMatrixZludaTest, LdMatrixTrans) {
  // values_g (u16[256]) is copied to values_s; lane l's row address is
  // values_s + 16 * l; ldmatrix .x4.trans; thread t stores the halves of
  // x0..x3 as b16 at 32 * t + 0, 4, 8, ... 28 (so i32 words).
  REQUIRE_ZLUDA("ldmatrix_trans", expected);
  std::vector<uint32_t> values = ptxInitializer("ldmatrix_trans");
  ASSERT_EQ(values.size(), 256u);
  ASSERT_EQ(expected.size(), 256u);
  std::vector<char> shared(512);
  for (unsigned i = 0; i < 256; ++i) {
    uint16_t h = uint16_t(values[i]);
    std::memcpy(&shared[2 * i], &h, 2);
  }
  WarpMemory mem;
  mem.shared = shared.data();
  mem.sharedSize = shared.size();
  Warp w;
  for (unsigned l = 0; l < 32; ++l)
    w.in[l] = {16 * l, 0, 4, 1};
  std::string error;
  ASSERT_TRUE(w.run(WOOLY_WARP_LDMATRIX, 4, mem, error)) << error;
  for (unsigned l = 0; l < 32; ++l)
    for (unsigned j = 0; j < 4; ++j) {
      EXPECT_EQ(w.out[l][j] & 0xffff, expected[8 * l + 2 * j])
          << "lane " << l << " x" << j << ".x";
      EXPECT_EQ(w.out[l][j] >> 16, expected[8 * l + 2 * j + 1])
          << "lane " << l << " x" << j << ".y";
    }
}

} // namespace
