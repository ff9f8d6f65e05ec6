//===- intrinsics.cu - A CUDA-samples-style program -----------------------===//
//
// Integer and float intrinsics, warp-level primitives of sm_70/sm_80 and the
// less common atomics, each compared with a host reimplementation: __brev,
// __clz, __ffs, __popcll, __byte_perm, __funnelshift_l/r, __umulhi,
// __mul64hi, __sad, __usad, __vabsdiffu4, __hadd, __rhadd, __saturatef,
// __fdividef-free exact ops (fminf, copysignf, truncf, rintf),
// __match_any_sync,
// __match_all_sync, __reduce_add_sync/__reduce_min_sync/__reduce_or_sync,
// __activemask, __syncwarp, atomicInc/atomicDec wraparound, atomicExch,
// atomicAnd/Or/Xor, 64-bit atomicMin/atomicMax, atomicAdd on double,
// atomicCAS on unsigned short; the SIMD video instructions (vadd4 ... vmax2)
// through the __v* intrinsics and inline PTX.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>
#define APP_NAME "sample_intrinsics"
#include "../CudaApp.h"

constexpr int N = 256;
constexpr int OUTS = 30;

__global__ void intOps(const unsigned *a, const unsigned *b, unsigned *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = a[i], y = b[i];
  unsigned *o = out + i * OUTS;
  o[0] = __brev(x);
  o[1] = __clz(x);
  o[2] = __ffs(int(x));
  o[3] = __popcll((unsigned long long)x << 32 | y);
  o[4] = __byte_perm(x, y, 0x5140 + (i & 7));
  o[5] = __funnelshift_l(x, y, i);
  o[6] = __funnelshift_r(x, y, i);
  o[7] = __funnelshift_lc(x, y, i);
  o[8] = __umulhi(x, y);
  o[9] = unsigned(__mul64hi((long long)x * 3, (long long)y << 7));
  o[10] = __sad(int(x), int(y), 5u);
  o[11] = __usad(x, y, 7u);
  o[12] = __vabsdiffu4(x, y);
  o[13] = unsigned(__hadd(int(x), int(y)));
  o[14] = __urhadd(x, y);
  o[15] = __float_as_uint(__saturatef(__uint_as_float(x)));
  o[16] = __float_as_uint(copysignf(1.5f, __uint_as_float(y)));
  o[17] = __float_as_uint(truncf(float(int(x)) / 7.0f));
  o[18] = __float_as_uint(rintf(float(int(y % 1000)) * 0.25f));
  o[19] = __vadd4(x, y);
  // SIMD intrinsics that nvcc compiles to vabsdiff2/vabsdiff4 (the last two
  // with .add), and the other SIMD video instructions written as inline PTX.
  o[20] = __vabsdiffu2(x, y);
  o[21] = __vsadu2(x, y);
  o[22] = __vsadu4(x, y);
  o[23] = __vabsdiffs4(x, y);
  unsigned r;
  asm("vadd4.u32.u32.u32.sat %0, %1, %2, %3;"
      : "=r"(r)
      : "r"(x), "r"(y), "r"(0u));
  o[24] = r;
  asm("vavrg2.s32.s32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(0u));
  o[25] = r;
  asm("vmin4.s32.s32.u32 %0.b20, %1, %2, %3;"
      : "=r"(r)
      : "r"(x), "r"(y), "r"(0x5a5a5a5au));
  o[26] = r;
  asm("vsub2.s32.s32.s32.add %0, %1, %2, %3;"
      : "=r"(r)
      : "r"(x), "r"(y), "r"(1000u));
  o[27] = r;
  asm("vmax4.u32.u32.u32 %0, %1.b0123, %2.b4444, %3;"
      : "=r"(r)
      : "r"(x), "r"(y), "r"(0u));
  o[28] = r;
  asm("vsub4.s32.s32.s32.sat %0.b31, %1, %2, %3;"
      : "=r"(r)
      : "r"(x), "r"(y), "r"(0x12345678u));
  o[29] = r;
}

__global__ void warpOps(const unsigned *a, unsigned *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = a[i] & 7; // 8 classes
  unsigned *o = out + i * 8;
  o[0] = __match_any_sync(0xffffffffu, v);
  int pred;
  o[1] = __match_all_sync(0xffffffffu, v & 0, &pred);
  o[2] = unsigned(pred);
  o[3] = __reduce_add_sync(0xffffffffu, a[i] & 0xffff);
  o[4] = __reduce_min_sync(0xffffffffu, a[i]);
  o[5] = __reduce_or_sync(0xffffffffu, 1u << v);
  // Half the warp active.
  if (threadIdx.x & 1) {
    o[6] = __activemask();
    __syncwarp(0xaaaaaaaau);
    o[7] = __reduce_max_sync(0xaaaaaaaau, a[i]);
  } else {
    o[6] = 0;
    o[7] = 0;
  }
}

struct Atomics {
  unsigned inc, dec, exch, sawZero, andv, orv, xorv;
  unsigned long long minv, maxv;
  double sum;
  unsigned short shorts[2];
};

__global__ void atomicOps(const unsigned *a, Atomics *s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  atomicInc(&s->inc, 99u); // wraps at 100
  atomicDec(&s->dec, 50u); // from 10: wraps to 50
  if (atomicExch(&s->exch, unsigned(i) + 1u) == 0u)
    atomicAdd(&s->sawZero, 1u); // exactly one thread saw 0
  atomicAnd(&s->andv, ~(1u << (i & 31)) | 0x80000000u);
  atomicOr(&s->orv, 1u << (i % 31));
  atomicXor(&s->xorv, a[i]);
  atomicMin(&s->minv, (unsigned long long)a[i] << 20);
  atomicMax(&s->maxv, (unsigned long long)a[i] << 20);
  atomicAdd(&s->sum, double(a[i] & 0xff) * 0.5);
  // 16-bit CAS loop on one half of a word.
  unsigned short *p = &s->shorts[i & 1];
  unsigned short old = *p, assumed;
  do {
    assumed = old;
    old = atomicCAS(p, assumed, (unsigned short)(assumed + 3));
  } while (old != assumed);
}

static unsigned brev(unsigned x) {
  unsigned r = 0;
  for (int k = 0; k < 32; ++k)
    r |= ((x >> k) & 1u) << (31 - k);
  return r;
}
static unsigned bytePerm(unsigned x, unsigned y, unsigned s) {
  uint64_t v = (uint64_t)y << 32 | x;
  unsigned r = 0;
  for (int k = 0; k < 4; ++k) {
    unsigned sel = (s >> (4 * k)) & 7;
    r |= (unsigned)((v >> (8 * sel)) & 0xff) << (8 * k);
  }
  return r;
}
static float saturate(float f) {
  if (std::isnan(f))
    return 0.0f;
  return f < 0 ? 0.0f : f > 1 ? 1.0f : f;
}

int main() {
  std::vector<unsigned> a(N), b(N);
  uint32_t s = 88172645u;
  for (int i = 0; i < N; ++i) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    a[i] = s;
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    b[i] = (i % 9 == 0) ? 0 : s;
  }
  a[3] = 0;
  a[4] = 0x3f000000u;
  a[5] = 0x7fc00000u;
  a[6] = 0xbf800000u;
  unsigned *dA, *dB, *dOut, *dWarp;
  Atomics *dS;
  CHECK(cudaMalloc(&dA, N * 4));
  CHECK(cudaMalloc(&dB, N * 4));
  CHECK(cudaMalloc(&dOut, N * OUTS * 4));
  CHECK(cudaMalloc(&dWarp, N * 8 * 4));
  CHECK(cudaMalloc(&dS, sizeof(Atomics)));
  CHECK(cudaMemcpy(dA, a.data(), N * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, b.data(), N * 4, cudaMemcpyHostToDevice));
  Atomics init{0, 10, 0, 0, 0xffffffffu, 0, 0, ~0ull, 0, 0.0, {1, 2}};
  CHECK(cudaMemcpy(dS, &init, sizeof(Atomics), cudaMemcpyHostToDevice));
  intOps<<<N / 64, 64>>>(dA, dB, dOut);
  warpOps<<<N / 64, 64>>>(dA, dWarp);
  atomicOps<<<N / 64, 64>>>(dA, dS);
  CHECK(cudaGetLastError());
  std::vector<unsigned> out(N * OUTS), warp(N * 8);
  Atomics got;
  CHECK(cudaMemcpy(out.data(), dOut, N * OUTS * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(warp.data(), dWarp, N * 8 * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&got, dS, sizeof(Atomics), cudaMemcpyDeviceToHost));
  int bad = 0;
  auto check = [&](const char *what, int i, unsigned g, unsigned w) {
    if (g != w && bad++ < 12)
      std::printf("%s[%d] = 0x%08x, want 0x%08x\n", what, i, g, w);
  };
  auto fbits = [](float f) {
    unsigned u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  auto bitsf = [](unsigned u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  for (int i = 0; i < N; ++i) {
    unsigned x = a[i], y = b[i];
    const unsigned *o = &out[i * OUTS];
    check("brev", i, o[0], brev(x));
    check("clz", i, o[1], x ? __builtin_clz(x) : 32);
    check("ffs", i, o[2], __builtin_ffs(int(x)));
    check("popcll", i, o[3],
          __builtin_popcountll((unsigned long long)x << 32 | y));
    check("byte_perm", i, o[4], bytePerm(x, y, 0x5140 + (i & 7)));
    uint64_t hilo = (uint64_t)y << 32 | x;
    check("funnelshift_l", i, o[5], unsigned((hilo << (i & 31)) >> 32));
    check("funnelshift_r", i, o[6], unsigned(hilo >> (i & 31)));
    int c = i < 32 ? i : 32;
    check("funnelshift_lc", i, o[7],
          c == 32  ? x
          : c == 0 ? y
                   : unsigned((hilo << c) >> 32));
    check("umulhi", i, o[8], unsigned(((uint64_t)x * y) >> 32));
    __int128 m = (__int128)((long long)x * 3) * (__int128)((long long)y << 7);
    check("mul64hi", i, o[9], unsigned((unsigned long long)(m >> 64)));
    check("sad", i, o[10],
          unsigned(std::llabs((long long)int(x) - int(y))) + 5u);
    check("usad", i, o[11], unsigned(x > y ? x - y : y - x) + 7u);
    unsigned vd = 0, va = 0;
    for (int k = 0; k < 4; ++k) {
      unsigned p = (x >> 8 * k) & 0xff, q = (y >> 8 * k) & 0xff;
      vd |= (p > q ? p - q : q - p) << 8 * k;
      va |= ((p + q) & 0xff) << 8 * k;
    }
    check("vabsdiffu4", i, o[12], vd);
    check("hadd", i, o[13], unsigned(int(((long long)int(x) + int(y)) >> 1)));
    check("urhadd", i, o[14], unsigned(((uint64_t)x + y + 1) >> 1));
    check("saturatef", i, o[15], fbits(saturate(bitsf(x))));
    check("copysignf", i, o[16], fbits(std::copysign(1.5f, bitsf(y))));
    check("truncf", i, o[17], fbits(std::trunc(float(int(x)) / 7.0f)));
    check("rintf", i, o[18], fbits(std::rint(float(int(y % 1000)) * 0.25f)));
    check("vadd4", i, o[19], va);
    // Elements of x and y: k bytes (width 8) or halves (width 16).
    auto el = [](unsigned v, int k, int width, bool sgn) -> int {
      unsigned e = (v >> (k * width)) & ((1u << width) - 1);
      if (sgn && (e >> (width - 1)))
        return int(e) - (1 << width);
      return int(e);
    };
    unsigned ad2 = 0, sad2 = 0, sad4 = 0, ads4 = 0;
    for (int k = 0; k < 2; ++k) {
      int d = std::abs(el(x, k, 16, false) - el(y, k, 16, false));
      ad2 |= unsigned(d) << (16 * k);
      sad2 += d;
    }
    for (int k = 0; k < 4; ++k) {
      sad4 += std::abs(el(x, k, 8, false) - el(y, k, 8, false));
      ads4 |= unsigned(std::abs(el(x, k, 8, true) - el(y, k, 8, true)) & 0xff)
              << (8 * k);
    }
    check("vabsdiffu2", i, o[20], ad2);
    check("vsadu2", i, o[21], sad2);
    check("vsadu4", i, o[22], sad4);
    check("vabsdiffs4", i, o[23], ads4);
    auto clampTo = [](int v, int lo, int hi) {
      return v < lo ? lo : v > hi ? hi : v;
    };
    unsigned add4 = 0, avg2 = 0, min4 = 0, max4 = 0, sub4 = 0;
    int sub2 = 1000;
    for (int k = 0; k < 4; ++k) {
      add4 |= unsigned(clampTo(el(x, k, 8, false) + el(y, k, 8, false), 0, 255))
              << (8 * k);
      int m = std::min(el(x, k, 8, true), el(y, k, 8, false));
      min4 |= ((k == 0 || k == 2) ? unsigned(m & 0xff)
                                  : (0x5a5a5a5au >> (8 * k)) & 0xff)
              << (8 * k);
      // .b0123 reverses x's bytes; .b4444 repeats y's byte 0.
      max4 |= unsigned(std::max(el(x, 3 - k, 8, false), el(y, 0, 8, false)))
              << (8 * k);
      int s = clampTo(el(x, k, 8, true) - el(y, k, 8, true), -128, 127);
      sub4 |= ((k == 1 || k == 3) ? unsigned(s & 0xff)
                                  : (0x12345678u >> (8 * k)) & 0xff)
              << (8 * k);
    }
    for (int k = 0; k < 2; ++k) {
      int s = el(x, k, 16, true) + el(y, k, 16, true);
      int avg = s >= 0 ? (s + 1) >> 1 : s >> 1;
      avg2 |= unsigned(avg & 0xffff) << (16 * k);
      sub2 += el(x, k, 16, true) - el(y, k, 16, true);
    }
    check("vadd4.sat", i, o[24], add4);
    check("vavrg2", i, o[25], avg2);
    check("vmin4.b20", i, o[26], min4);
    check("vsub2.add", i, o[27], unsigned(sub2));
    check("vmax4.sel", i, o[28], max4);
    check("vsub4.sat.b31", i, o[29], sub4);
  }
  for (int w = 0; w < N / 32; ++w) {
    unsigned sum = 0, mn = ~0u, orv = 0, mxOdd = 0, oddMask = 0xaaaaaaaau;
    for (int l = 0; l < 32; ++l) {
      unsigned v = a[w * 32 + l];
      sum += v & 0xffff;
      mn = v < mn ? v : mn;
      orv |= 1u << (v & 7);
      if (l & 1)
        mxOdd = v > mxOdd ? v : mxOdd;
    }
    for (int l = 0; l < 32; ++l) {
      int i = w * 32 + l;
      unsigned any = 0;
      for (int k = 0; k < 32; ++k)
        if ((a[w * 32 + k] & 7) == (a[i] & 7))
          any |= 1u << k;
      const unsigned *o = &warp[i * 8];
      check("match_any", i, o[0], any);
      check("match_all", i, o[1], 0xffffffffu);
      check("match_all.pred", i, o[2], 1);
      check("reduce_add", i, o[3], sum);
      check("reduce_min", i, o[4], mn);
      check("reduce_or", i, o[5], orv);
      check("activemask", i, o[6], (l & 1) ? oddMask : 0);
      check("reduce_max", i, o[7], (l & 1) ? mxOdd : 0);
    }
  }
  unsigned xr = 0;
  unsigned long long mn = ~0ull, mx = 0;
  double sum = 0;
  for (int i = 0; i < N; ++i) {
    xr ^= a[i];
    unsigned long long v = (unsigned long long)a[i] << 20;
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
    sum += (a[i] & 0xff) * 0.5;
  }
  // inc: 256 increments wrapping at 100 -> 256 % 100 = 56.
  // dec: from 10, 256 decrements with wrap to 50: after 10 -> 0, then wraps
  // each 51 steps: (256 - 10) % 51 = 42 -> 50 - 42 + 1 = ... computed below.
  unsigned dec = 10;
  for (int i = 0; i < N; ++i)
    dec = (dec == 0 || dec > 50) ? 50 : dec - 1;
  check("atomicInc", 0, got.inc, 256 % 100);
  check("atomicDec", 0, got.dec, dec);
  check("atomicExch.sawZero", 0, got.sawZero, 1);
  check("atomicExch.last", 0, got.exch >= 1 && got.exch <= unsigned(N), 1);
  check("atomicAnd", 0, got.andv, 0x80000000u);
  check("atomicOr", 0, got.orv, 0x7fffffffu);
  check("atomicXor", 0, got.xorv, xr);
  check("atomicMin64.lo", 0, unsigned(got.minv), unsigned(mn));
  check("atomicMin64.hi", 0, unsigned(got.minv >> 32), unsigned(mn >> 32));
  check("atomicMax64.lo", 0, unsigned(got.maxv), unsigned(mx));
  check("atomicMax64.hi", 0, unsigned(got.maxv >> 32), unsigned(mx >> 32));
  check("atomicAdd.f64", 0, got.sum == sum, 1);
  check("atomicCAS.u16[0]", 0, got.shorts[0], 1 + 3 * 128);
  check("atomicCAS.u16[1]", 0, got.shorts[1], 2 + 3 * 128);
  std::printf("intrinsics: %d mismatches\n", bad);
  EXPECT(bad == 0, "%d mismatches", bad);
  app::pass();
  return 0;
}
