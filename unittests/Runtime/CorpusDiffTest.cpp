//===- CorpusDiffTest.cpp - Corpus kernels vs C++ references --------------===//
//
// Differential tests of the CPU backend: every `__global__` of
// test/corpus/*.cu is compiled from its nvcc PTX (sm_80, sm_90 and
// compute_120's `.target sm_120`, the test parameter), launched on
// `CpuDevice` with random inputs (fixed seeds, sizes that are not multiples
// of the block size, several blocks) and compared with a plain C++ reference
// written from the .cu source.
//
// Comparisons:
//  - bit patterns wherever the kernel's arithmetic is IEEE-exact (integer
//    code, .rn float ops, fixed-order reductions replayed in the same order
//    and with the same FMA contractions that nvcc emitted in the PTX);
//  - order-dependent float atomics use data whose partial sums are exact
//    (small integers / dyadic fractions), so bits still match;
//  - kernels whose PTX contains `.approx` instructions (expf/sinf/cosf/logf
//    library sequences, rsqrtf, __expf, --use_fast_math) are compared against
//    a double-precision reference within the bound documented at the test.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Compiler/Compiler.h"
#include "Wooly/Compiler/LaunchParams.h"
#include "Wooly/Runtime/CPU/CpuDevice.h"

#include "Strategies.h"
#include "TextureReference.h"

#include "llvm/ADT/bit.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

// The references spell out every FMA that nvcc emitted; nothing else may be
// contracted.
#pragma clang fp contract(off)

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::texref;

namespace {

//===----------------------------------------------------------------------===//
// Device, modules, buffers, launches
//===----------------------------------------------------------------------===//

std::mutex printedMutex;
std::string printed;

CpuDevice &device() {
  static CpuDevice *dev = [] {
    CpuDevice::Options o;
    o.workers = 2;
    o.printfSink = [](llvm::StringRef s) {
      std::lock_guard<std::mutex> lock(printedMutex);
      printed += s.str();
    };
    return new CpuDevice(std::move(o));
  }();
  return *dev;
}

std::string takePrinted() {
  std::lock_guard<std::mutex> lock(printedMutex);
  std::string s = std::move(printed);
  printed.clear();
  return s;
}

struct Loaded {
  LoadedModule *module = nullptr;
  std::string error;
};

/// Compiles (with `passes`) and loads test/corpus/<file> once per process.
Loaded &load(const std::string &file, const std::string &passes) {
  static std::map<std::pair<std::string, std::string>, Loaded> cache;
  auto it = cache.find({file, passes});
  if (it != cache.end())
    return it->second;
  Loaded &l = cache[{file, passes}];
  std::string path = std::string(WOOLY_CORPUS_DIR) + "/" + file;
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf) {
    l.error = "cannot read " + path;
    return l;
  }
  auto target = Target::parse("host");
  if (!target) {
    l.error = llvm::toString(target.takeError());
    return l;
  }
  CompileOptions options;
  options.passes = passes;
  auto compiled = compile(
      CompileInput{CompileInput::Kind::PTX, (*buf)->getBuffer().str(), file},
      *target, options);
  if (!compiled) {
    l.error = "compiling " + file + ": " + llvm::toString(compiled.takeError());
    return l;
  }
  auto mod = std::make_shared<const CompiledModule>(std::move(*compiled));
  auto loaded = device().loadModule(mod);
  if (!loaded) {
    l.error = "loading " + file + ": " + llvm::toString(loaded.takeError());
    return l;
  }
  l.module = *loaded;
  return l;
}

/// A device buffer.
struct Buf {
  uint64_t addr = 0;
  size_t bytes = 0;
};

/// One kernel argument: a scalar's bytes or a buffer's address.
struct P {
  std::vector<uint8_t> b;
  template <class T> P(T v) : b(sizeof(T)) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::memcpy(b.data(), &v, sizeof(T));
  }
  P(Buf buf) : b(8) { std::memcpy(b.data(), &buf.addr, 8); }
};

using Dim = std::array<uint32_t, 3>;

/// A test parameter: the PTX architecture and the launch strategy.
struct Variant {
  std::string arch;
  wooly::test::Strategy strategy;
};

/// How gtest prints a Variant (in test listings and failures).
void PrintTo(const Variant &v, std::ostream *os) {
  *os << v.arch << " " << v.strategy.name;
}

template <class T>
::testing::AssertionResult sameBits(const std::vector<T> &got,
                                    const std::vector<T> &want);
uint32_t ceilDiv(uint32_t a, uint32_t b);

class CorpusDiff : public ::testing::TestWithParam<Variant> {
protected:
  std::vector<uint64_t> allocated;
  /// Set by a test whose outputs depend on the order of concurrent atomics
  /// (see LaunchRequest::orderDependent).
  bool orderDependent = false;
  /// Set by a test whose kernels synchronise the whole grid: its launches
  /// are cooperative (LaunchConfig::cooperative).
  bool cooperative = false;

  void TearDown() override {
    for (uint64_t a : allocated)
      llvm::consumeError(device().memory().free(a));
  }

  /// Whether the strategy's passes refuse `file` because its kernels
  /// synchronise the whole grid (wooly-constrain, wooly-slice and
  /// wooly-isolate do, with a located error that
  /// test/Runtime/CPU/cooperative.test checks).
  bool refusesGridSync(const std::string &file) {
    Loaded &l = load(file, GetParam().strategy.passes);
    return !l.module &&
           l.error.find("synchronises its whole grid") != std::string::npos;
  }

public:
  /// Whether the strategy's passes refuse `file` because it has bulk
  /// copies (wooly-isolate: "not supported yet").
  bool refusesBulk(const std::string &file) {
    Loaded &l = load(file, GetParam().strategy.passes);
    return !l.module &&
           l.error.find("bulk copies (cp.async.bulk) are not supported yet") !=
               std::string::npos;
  }

  /// Launches vatomics.cu's `kernel` on values `v` and bins `bin` of `n`
  /// elements into zeroed sums, which must equal `want` bit for bit.
  template <class T>
  ::testing::AssertionResult
  runBins(const char *kernel, const std::vector<T> &v,
          const std::vector<int32_t> &bin, const std::vector<T> &want, int n) {
    Buf bv = up(v), bb = up(bin), ba = up(std::vector<T>(want.size(), T()));
    ::testing::AssertionResult r =
        launch(ptx("vatomics"), kernel, {ceilDiv(n, 96), 1, 1}, {96, 1, 1}, 0,
               {bv, bb, ba, n});
    if (!r)
      return r;
    return sameBits(down<T>(ba), want);
  }

protected:
  /// `<base>.<arch>.ptx`
  std::string ptx(const std::string &base) const {
    return base + "." + GetParam().arch + ".ptx";
  }

  Buf alloc(size_t bytes) {
    auto a = device().memory().allocate(bytes ? bytes : 1);
    if (!a) {
      ADD_FAILURE() << llvm::toString(a.takeError());
      return {};
    }
    allocated.push_back(*a);
    return {*a, bytes};
  }

  template <class T> Buf up(const std::vector<T> &v) {
    Buf b = alloc(v.size() * sizeof(T));
    if (b.addr && !v.empty())
      if (auto e = device().memory().copyToDevice(b.addr, v.data(), b.bytes))
        ADD_FAILURE() << llvm::toString(std::move(e));
    return b;
  }

  template <class T> std::vector<T> down(Buf b) {
    std::vector<T> v(b.bytes / sizeof(T));
    if (b.addr && !v.empty())
      if (auto e = device().memory().copyFromDevice(v.data(), b.addr, b.bytes))
        ADD_FAILURE() << llvm::toString(std::move(e));
    return v;
  }

  ::testing::AssertionResult launch(const std::string &file, const char *kernel,
                                    Dim grid, Dim block, uint32_t shared,
                                    std::vector<P> args) {
    const wooly::test::Strategy &strategy = GetParam().strategy;
    Loaded &l = load(file, strategy.passes);
    if (!l.module)
      return ::testing::AssertionFailure() << l.error;
    const CompiledModule &cm = device().compiled(l.module);
    const KernelInfo *k = cm.findKernel(kernel);
    if (!k)
      return ::testing::AssertionFailure()
             << "no kernel " << kernel << " in " << file;
    size_t userParams = 0;
    for (const std::string &role : k->paramRoles)
      userParams += role.empty();
    if (userParams != args.size())
      return ::testing::AssertionFailure()
             << kernel << " takes " << userParams << " parameters, test passes "
             << args.size();
    std::vector<uint8_t> params(userParamBufferSize(*k), 0);
    for (size_t i = 0; i < args.size(); ++i) {
      if (k->paramSizes[i] != args[i].b.size())
        return ::testing::AssertionFailure()
               << kernel << " parameter " << i << " has " << k->paramSizes[i]
               << " bytes, test passes " << args[i].b.size();
      std::memcpy(params.data() + k->paramOffsets[i], args[i].b.data(),
                  args[i].b.size());
    }
    LaunchConfig config;
    config.grid = grid;
    config.block = block;
    config.dynamicSharedBytes = shared;
    config.cooperative = cooperative;
    llvm::Error e = llvm::Error::success();
    if (strategy.launch)
      e = strategy.launch(wooly::test::LaunchRequest{
          &device(), l.module, k, config, params,
          std::string(WOOLY_CORPUS_DIR) + "/" + file, orderDependent});
    else
      e = device().launch(l.module, kernel, config, params);
    if (e) {
      // A kernel the strategy's pass refuses: the test is reported as
      // skipped (GTEST_SKIP in a helper records the skip and the test goes
      // on); the launch runs plainly so the rest of the test stays
      // meaningful (the strategy's module is the plain one).
      std::string msg = llvm::toString(std::move(e));
      if (llvm::StringRef(msg).starts_with("coalesce refused:")) {
        [&] { GTEST_SKIP() << msg; }();
        e = device().launch(l.module, kernel, config, params);
      } else {
        e = llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
      }
    }
    if (e)
      return ::testing::AssertionFailure()
             << "launch of " << kernel << " (" << file
             << ") failed: " << llvm::toString(std::move(e));
    return ::testing::AssertionSuccess();
  }

  /// The printf output of the launches since the last call, once: under a
  /// strategy that runs each launch's work `tenants` times, every line must
  /// appear a multiple of `tenants` times, and is kept 1/`tenants` of them.
  std::string printedOnce() {
    std::string text = takePrinted();
    unsigned n = GetParam().strategy.tenants;
    if (n <= 1)
      return text;
    std::map<std::string, unsigned> count;
    std::istringstream is(text);
    for (std::string line; std::getline(is, line);)
      ++count[line];
    std::string once;
    for (auto &[line, c] : count) {
      EXPECT_EQ(c % n, 0u) << "line printed " << c << " times under " << n
                           << " tenants: " << line;
      for (unsigned i = 0; i < c / n; ++i)
        once += line + "\n";
    }
    return once;
  }
};

//===----------------------------------------------------------------------===//
// Comparison helpers
//===----------------------------------------------------------------------===//

template <class T> std::string show(T v) {
  std::ostringstream os;
  if constexpr (std::is_floating_point_v<T>) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", double(v));
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    U u = llvm::bit_cast<U>(v);
    os << buf << " (0x" << std::hex << uint64_t(u) << ")";
  } else if constexpr (sizeof(T) == 1) {
    os << int(v);
  } else {
    os << +v << " (0x" << std::hex << uint64_t(std::make_unsigned_t<T>(v))
       << ")";
  }
  return os.str();
}

/// Bit-exact comparison; reports the number of differing elements and the
/// first one.
template <class T>
::testing::AssertionResult sameBits(const std::vector<T> &got,
                                    const std::vector<T> &want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << "size " << got.size() << " != expected " << want.size();
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0 && bad++ == 0)
      first = i;
  if (!bad)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << got.size() << " elements differ; first at index "
         << first << ": got " << show(got[first]) << ", expected "
         << show(want[first]);
}

/// |got - want| <= tol(i) for every element (NaN never passes).
template <class T, class Tol>
::testing::AssertionResult within(const std::vector<T> &got,
                                  const std::vector<double> &want, Tol tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << "size " << got.size() << " != expected " << want.size();
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::fabs(double(got[i]) - want[i]);
    double t = tol(i);
    if (!(err <= t)) {
      if (bad++ == 0)
        first = i;
    }
    if (std::isfinite(err) && t > 0)
      worst = std::max(worst, err / t);
  }
  if (!bad)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << got.size()
         << " elements outside the bound; first at index " << first << ": got "
         << show(got[first]) << ", expected ~" << show(want[first])
         << ", tolerance " << tol(first) << " (worst finite err/tol " << worst
         << ")";
}

double ulpOf(float v) {
  float a = std::fabs(v);
  if (!(a >= std::numeric_limits<float>::min()))
    return std::ldexp(1.0, -149);
  int e;
  std::frexp(a, &e);
  return std::ldexp(1.0, e - 24);
}

//===----------------------------------------------------------------------===//
// Random inputs and 16-bit formats
//===----------------------------------------------------------------------===//

std::vector<float> randF(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

template <class T = int32_t>
std::vector<T> randI(size_t n, int64_t lo, int64_t hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<T> v(n);
  for (T &x : v)
    x = T(d(rng));
  return v;
}

/// Rounds finite `v` to nearest-even in a binary format with `p` significand
/// bits and normal exponents [emin, emax] (subnormals and overflow to inf).
double roundFmt(double v, int p, int emin, int emax) {
  if (v == 0 || !std::isfinite(v))
    return v;
  int e;
  std::frexp(std::fabs(v), &e);
  int lead = std::max(e - 1, emin);
  double ulp = std::ldexp(1.0, lead - (p - 1));
  double r = std::nearbyint(v / ulp) * ulp;
  double maxv = std::ldexp(2.0 - std::ldexp(1.0, 1 - p), emax);
  if (std::fabs(r) > maxv)
    return std::copysign(INFINITY, v);
  return r;
}
double roundHalf(double v) { return roundFmt(v, 11, -14, 15); }
double roundBf16(double v) { return roundFmt(v, 8, -126, 127); }

/// Bits of a value exactly representable in f16 / bf16.
uint16_t halfBits(double exact) {
  return llvm::bit_cast<uint16_t>(static_cast<_Float16>(exact));
}
float halfToFloat(uint16_t b) { return float(llvm::bit_cast<_Float16>(b)); }
uint16_t bf16Bits(double exact) {
  return uint16_t(llvm::bit_cast<uint32_t>(float(exact)) >> 16);
}
float bf16ToFloat(uint16_t b) {
  return llvm::bit_cast<float>(uint32_t(b) << 16);
}

uint32_t ceilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

//===----------------------------------------------------------------------===//
// elementwise.cu
//===----------------------------------------------------------------------===//

TEST_P(CorpusDiff, saxpy) {
  const int n = 1000;
  float a = 1.75f;
  auto x = randF(n, -10, 10, 1), y = randF(n, -10, 10, 2);
  Buf bx = up(x), by = up(y);
  ASSERT_TRUE(launch(ptx("elementwise"), "saxpy", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, a, bx, by}));
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i)
    want[i] = std::fma(a, x[i], y[i]); // fma.rn.f32 in the PTX
  EXPECT_TRUE(sameBits(down<float>(by), want));
}

TEST_P(CorpusDiff, vec_add) {
  const int n = 777;
  auto a = randF(n, -100, 100, 3), b = randF(n, -100, 100, 4);
  Buf ba = up(a), bb = up(b), bc = up(std::vector<float>(n, -1.0f));
  ASSERT_TRUE(launch(ptx("elementwise"), "vec_add", {ceilDiv(n, 64), 1, 1},
                     {64, 1, 1}, 0, {n, ba, bb, bc}));
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i)
    want[i] = a[i] + b[i];
  EXPECT_TRUE(sameBits(down<float>(bc), want));
}

// sinf/cosf/expf/logf are CUDA library sequences (expf uses ex2.approx):
// compared with the correctly rounded double result within 3 ulp (CUDA's
// documented maximum errors are 2/2/2/1 ulp, plus 0.5 for rounding the
// reference). sqrt (sqrt.rn), fabs, fmin, fmax are compared bit-exactly.
TEST_P(CorpusDiff, unary_math) {
  const int n = 1000;
  auto x = randF(n, -8, 8, 5);
  x[0] = 0.0f;
  x[1] = -0.0f;
  x[2] = 0.5f;
  x[3] = -0.5f;
  Buf bx = up(x), bo = alloc(8 * n * sizeof(float));
  ASSERT_TRUE(launch(ptx("elementwise"), "unary_math", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, bx, bo}));
  auto got = down<float>(bo);
  std::vector<float> gotApprox, exact, wantExact;
  std::vector<double> wantApprox;
  for (int i = 0; i < n; ++i) {
    float v = x[i];
    double d = v;
    wantApprox.push_back(std::sin(d));
    wantApprox.push_back(std::cos(d));
    wantApprox.push_back(std::exp(d));
    wantApprox.push_back(std::log(double(std::fabs(v) + 1.0f)));
    for (int k = 0; k < 4; ++k)
      gotApprox.push_back(got[8 * i + k]);
    wantExact.push_back(std::sqrt(std::fabs(v)));
    wantExact.push_back(std::fabs(v));
    wantExact.push_back(std::fmin(v, 0.5f));
    wantExact.push_back(std::fmax(v, -0.5f));
    for (int k = 4; k < 8; ++k)
      exact.push_back(got[8 * i + k]);
  }
  EXPECT_TRUE(within(gotApprox, wantApprox, [&](size_t i) {
    return 3 * ulpOf(float(wantApprox[i]));
  })) << "(index = 4*element + {sin, cos, exp, log})";
  EXPECT_TRUE(sameBits(exact, wantExact))
      << "(index = 4*element + {sqrt, fabs, fmin, fmax})";
}

TEST_P(CorpusDiff, int_ops) {
  const int n = 1100;
  auto a = randI(n, INT32_MIN, INT32_MAX, 6),
       b = randI(n, INT32_MIN, INT32_MAX, 7);
  auto small = randI(n, -100, 100, 8);
  for (int i = 0; i < n; ++i) {
    if (i % 3 == 0)
      b[i] = small[i]; // small divisors (and some zeros)
    if (a[i] == INT32_MIN && (b[i] == -1))
      a[i] = 5;
  }
  Buf ba = up(a), bb = up(b), bo = alloc(8 * n * 4);
  ASSERT_TRUE(launch(ptx("elementwise"), "int_ops", {ceilDiv(n, 256), 1, 1},
                     {256, 1, 1}, 0, {n, ba, bb, bo}));
  std::vector<int32_t> want(8 * n);
  for (int i = 0; i < n; ++i) {
    int32_t x = a[i], y = b[i], d = y == 0 ? 1 : y;
    uint32_t ux = uint32_t(x), ud = uint32_t(d);
    int s = y & 31;
    int32_t *o = &want[8 * i];
    o[0] = int32_t(ux << s);
    o[1] = x >> s;
    o[2] = int32_t(ux >> s);
    o[3] = int32_t(ux * uint32_t(y));
    o[4] = x / d;
    o[5] = x % d;
    o[6] = int32_t(ux / ud);
    o[7] = int32_t((ux % ud) ^ (ux & ~ud) ^ (ux | 7u));
  }
  EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
}

//===----------------------------------------------------------------------===//
// reduction.cu
//===----------------------------------------------------------------------===//

// Shared-memory tree (strides 128, 64, 32) then __shfl_down_sync; replayed
// exactly (a lane whose source lane is out of range reads its own value).
TEST_P(CorpusDiff, block_sum_f32) {
  const int n = 256 * 5 + 77, blocks = ceilDiv(n, 256);
  auto in = randF(n, -1, 1, 9);
  Buf bi = up(in), bo = alloc(blocks * 4);
  ASSERT_TRUE(launch(ptx("reduction"), "block_sum_f32",
                     {uint32_t(blocks), 1, 1}, {256, 1, 1}, 0, {n, bi, bo}));
  std::vector<float> want(blocks);
  for (int b = 0; b < blocks; ++b) {
    float s[256];
    for (int t = 0; t < 256; ++t)
      s[t] = b * 256 + t < n ? in[b * 256 + t] : 0.0f;
    for (int stride = 128; stride >= 32; stride >>= 1)
      for (int t = 0; t < stride; ++t)
        s[t] += s[t + stride];
    float v[32];
    std::copy(s, s + 32, v);
    for (int off = 16; off > 0; off >>= 1) {
      float nv[32];
      for (int l = 0; l < 32; ++l)
        nv[l] = v[l] + (l + off < 32 ? v[l + off] : v[l]);
      std::copy(nv, nv + 32, v);
    }
    want[b] = v[0];
  }
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

TEST_P(CorpusDiff, block_sum_i32) {
  const int n = 160 * 6 + 45, block = 160, blocks = ceilDiv(n, block);
  auto in = randI(n, INT32_MIN / 2, INT32_MAX / 2, 10);
  Buf bi = up(in), bo = alloc(blocks * 4);
  ASSERT_TRUE(launch(ptx("reduction"), "block_sum_i32",
                     {uint32_t(blocks), 1, 1}, {block, 1, 1}, 0, {n, bi, bo}));
  std::vector<int32_t> want(blocks);
  for (int b = 0; b < blocks; ++b) {
    uint32_t s = 0;
    for (int t = 0; t < block && b * block + t < n; ++t)
      s += uint32_t(in[b * block + t]);
    want[b] = int32_t(s);
  }
  EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
}

// __activemask() (out[4w+3]) is informative only and not compared.
TEST_P(CorpusDiff, warp_vote) {
  const int warps = 13, n = 32 * warps;
  auto in = randI(n, -3, 3, 11);
  auto pos = randI(n, 1, 9, 12);
  for (int w = 0; w < warps; ++w)
    for (int l = 0; l < 32; ++l) {
      int &v = in[32 * w + l];
      if (w % 4 == 1)
        v = pos[32 * w + l]; // all positive: any(<0)=0, all(!=0)=1
      if (w % 4 == 2)
        v = -pos[32 * w + l]; // all negative: ballot 0
      if (w % 4 == 3 && v == 0)
        v = 1; // no zeros but mixed signs
    }
  Buf bi = up(in), bo = up(std::vector<uint32_t>(4 * warps, 0xdeadbeef));
  ASSERT_TRUE(launch(ptx("reduction"), "warp_vote", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, bi, bo}));
  auto got = down<uint32_t>(bo);
  std::vector<uint32_t> g3, w3;
  for (int w = 0; w < warps; ++w) {
    uint32_t ballot = 0, any = 0, all = 1;
    for (int l = 0; l < 32; ++l) {
      int v = in[32 * w + l];
      ballot |= uint32_t(v > 0) << l;
      any |= v < 0;
      all &= v != 0;
    }
    w3.insert(w3.end(), {ballot, any, all});
    g3.insert(g3.end(), {got[4 * w], got[4 * w + 1], got[4 * w + 2]});
  }
  EXPECT_TRUE(sameBits(g3, w3)) << "(index = 3*warp + {ballot, any, all})";
}

//===----------------------------------------------------------------------===//
// atomics.cu
//===----------------------------------------------------------------------===//

// Integer inputs with |partial sums| < 2^24: the float atomicAdd sum is exact
// in every order, so bits are compared.
TEST_P(CorpusDiff, atomic_add_f32) {
  const int n = 1000;
  auto in = randI(n, -1000, 1000, 13);
  Buf bi = up(in), si = up(std::vector<int32_t>{7}),
      sf = up(std::vector<float>{0.5f});
  ASSERT_TRUE(launch(ptx("atomics"), "atomic_add_f32", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, bi, si, sf}));
  int32_t wi = 7;
  float wf = 0.5f;
  for (int v : in) {
    wi += v;
    wf += float(v);
  }
  EXPECT_TRUE(sameBits(down<int32_t>(si), std::vector<int32_t>{wi}));
  EXPECT_TRUE(sameBits(down<float>(sf), std::vector<float>{wf}));
}

TEST_P(CorpusDiff, atomic_int_misc) {
  const int n = 2500;
  auto in = randI(n, INT32_MIN, INT32_MAX, 14);
  std::vector<int32_t> init{INT32_MIN, INT32_MAX, 12345, 0, 0, 0, 0};
  Buf bi = up(in), br = up(init);
  orderDependent = true; // Which atomicExch lands last; which CAS wins.
  ASSERT_TRUE(launch(ptx("atomics"), "atomic_int_misc", {ceilDiv(n, 256), 1, 1},
                     {256, 1, 1}, 0, {n, bi, br}));
  auto got = down<int32_t>(br);
  int32_t mx = INT32_MIN, mn = INT32_MAX;
  uint32_t umx = 0;
  for (int v : in) {
    mx = std::max(mx, v);
    mn = std::min(mn, v);
    umx = std::max(umx, uint32_t(v));
  }
  std::vector<int32_t> want{mx, mn, got[2], n % 1001, 1, got[5], int32_t(umx)};
  EXPECT_TRUE(sameBits(got, want));
  EXPECT_NE(std::find(in.begin(), in.end(), got[2]), in.end())
      << "atomicExch result " << got[2] << " is not one of the inputs";
  EXPECT_GE(got[5], 1);
  EXPECT_LE(got[5], n);
}

// CAS-loop float max (deterministic) and CAS-loop double add of dyadic
// values k/256 (exact in every order): bits.
TEST_P(CorpusDiff, atomic_cas_loops) {
  const int n = 1500;
  auto k = randI(n, -2048, 2048, 15);
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i)
    x[i] = float(k[i]) / 256.0f;
  Buf bx = up(x), bm = up(std::vector<float>{-INFINITY}),
      bs = up(std::vector<double>{0.25});
  ASSERT_TRUE(launch(ptx("atomics"), "atomic_cas_loops",
                     {ceilDiv(n, 128), 1, 1}, {128, 1, 1}, 0, {n, bx, bm, bs}));
  float mx = -INFINITY;
  double sum = 0.25;
  for (float v : x) {
    mx = std::max(mx, v);
    sum += double(v);
  }
  EXPECT_TRUE(sameBits(down<float>(bm), std::vector<float>{mx}));
  EXPECT_TRUE(sameBits(down<double>(bs), std::vector<double>{sum}));
}

//===----------------------------------------------------------------------===//
// control.cu
//===----------------------------------------------------------------------===//

TEST_P(CorpusDiff, collatz_steps) {
  const int n = 1000;
  auto in = randI<uint32_t>(n, 0, UINT32_MAX, 16);
  Buf bi = up(in), bo = alloc(n * 4);
  // Grid-stride loop: fewer threads than elements.
  ASSERT_TRUE(launch(ptx("control"), "collatz_steps", {3, 1, 1}, {96, 1, 1}, 0,
                     {n, bi, bo}));
  std::vector<int32_t> want(n);
  for (int i = 0; i < n; ++i) {
    uint32_t v = (in[i] & 0xFFFFu) + 1u;
    int steps = 0;
    while (v != 1u && steps < 1000) {
      v = (v & 1u) ? 3u * v + 1u : v >> 1;
      ++steps;
    }
    want[i] = steps;
  }
  EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
}

TEST_P(CorpusDiff, switch_ops) {
  const int n = 999;
  auto op = randI(n, -1, 9, 17), a = randI(n, INT32_MIN, INT32_MAX, 18),
       b = randI(n, -50, 50, 19);
  for (int i = 0; i < n; ++i) {
    if (i % 5 == 0)
      b[i] = a[(i * 7) % n];
    if (a[i] == INT32_MIN && b[i] == -1)
      a[i] = 0;
  }
  Buf bop = up(op), ba = up(a), bb = up(b), bo = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("control"), "switch_ops", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, bop, ba, bb, bo}));
  std::vector<int32_t> want(n);
  for (int i = 0; i < n; ++i) {
    int32_t x = a[i], y = b[i], r;
    switch (op[i]) {
    case 0:
      r = int32_t(uint32_t(x) + uint32_t(y));
      break;
    case 1:
      r = int32_t(uint32_t(x) - uint32_t(y));
      break;
    case 2:
      r = int32_t(uint32_t(x) * uint32_t(y));
      break;
    case 3:
      r = y != 0 ? x / y : 0;
      break;
    case 4:
      r = std::min(x, y);
      break;
    case 5:
      r = std::max(x, y);
      break;
    case 7:
      r = x & y;
      break;
    default:
      r = -1;
      break;
    }
    want[i] = r;
  }
  EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
}

TEST_P(CorpusDiff, classify_point) {
  const int n = 1000;
  auto x = randF(n, -1, 1, 20), y = randF(n, -1, 1, 21);
  for (int i = 0; i < n; ++i) {
    if (i % 7 == 0)
      x[i] = (i % 2) ? 0.0f : -0.0f;
    if (i % 11 == 0)
      y[i] = (i % 3) ? 0.0f : -0.0f;
  }
  Buf bx = up(x), by = up(y), bo = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("control"), "classify_point", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, bx, by, bo}));
  std::vector<int32_t> want(n);
  for (int i = 0; i < n; ++i) {
    float px = x[i], py = y[i];
    int c;
    if (px == 0.0f)
      c = py == 0.0f ? 0 : 6;
    else if (py == 0.0f)
      c = 5;
    else if (px > 0.0f)
      c = py > 0.0f ? 1 : 4;
    else
      c = py > 0.0f ? 2 : 3;
    want[i] = c;
  }
  EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
}

TEST_P(CorpusDiff, nested_loops) {
  const int n = 500;
  auto in = randI(n, -100000, 100000, 22);
  Buf bi = up(in), bo = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("control"), "nested_loops", {ceilDiv(n, 64), 1, 1},
                     {64, 1, 1}, 0, {n, bi, bo}));
  std::vector<int32_t> want(n);
  for (int i = 0; i < n; ++i) {
    int m = ((in[i] % 64) + 64) % 64, acc = 0;
    for (int j = 0; j < m; ++j)
      for (int k = 0; k <= j; ++k) {
        if (k % 3 == 0)
          continue;
        if (k * j > 500)
          break;
        acc += k ^ j;
      }
    want[i] = acc;
  }
  EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
}

//===----------------------------------------------------------------------===//
// coopgroups.cu
//===----------------------------------------------------------------------===//

TEST_P(CorpusDiff, cg_block_sum) {
  const int block = 192, n = block * 4 + 50, blocks = ceilDiv(n, block);
  auto in = randI(n, INT32_MIN / 4, INT32_MAX / 4, 23);
  Buf bi = up(in), bo = alloc(blocks * 4);
  ASSERT_TRUE(launch(ptx("coopgroups"), "cg_block_sum",
                     {uint32_t(blocks), 1, 1}, {block, 1, 1}, 0, {n, bi, bo}));
  std::vector<int32_t> want(blocks);
  for (int b = 0; b < blocks; ++b) {
    uint32_t s = 0;
    for (int t = 0; t < block && b * block + t < n; ++t)
      s += uint32_t(in[b * block + t]);
    want[b] = int32_t(s);
  }
  EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
}

TEST_P(CorpusDiff, cg_tile_max_count) {
  const int tiles = 11, n = 32 * tiles;
  auto in = randI(n, -1000000, 1000000, 24);
  for (int l = 0; l < 32; ++l)
    in[32 * 3 + l] = -1 - l; // a tile without positives
  Buf bi = up(in), bo = alloc(tiles * 4), bc = alloc(tiles * 4);
  ASSERT_TRUE(launch(ptx("coopgroups"), "cg_tile_max_count",
                     {ceilDiv(n, 128), 1, 1}, {128, 1, 1}, 0, {n, bi, bo, bc}));
  std::vector<int32_t> wm(tiles), wc(tiles);
  for (int t = 0; t < tiles; ++t) {
    int m = INT32_MIN, c = 0;
    for (int l = 0; l < 32; ++l) {
      m = std::max(m, in[32 * t + l]);
      c += in[32 * t + l] > 0;
    }
    wm[t] = m;
    wc[t] = c;
  }
  EXPECT_TRUE(sameBits(down<int32_t>(bo), wm));
  EXPECT_TRUE(sameBits(down<int32_t>(bc), wc));
}

// Butterfly over 8 lanes replayed exactly.
TEST_P(CorpusDiff, cg_tile8_sum) {
  const int n = 1000;
  auto in = randF(n, -10, 10, 25);
  Buf bi = up(in), bo = up(std::vector<float>(n, 0.0f));
  ASSERT_TRUE(launch(ptx("coopgroups"), "cg_tile8_sum", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, bi, bo}));
  std::vector<float> want(n);
  for (int g = 0; g < int(ceilDiv(n, 8)); ++g) {
    float v[8];
    for (int l = 0; l < 8; ++l)
      v[l] = 8 * g + l < n ? in[8 * g + l] : 0.0f;
    for (int off = 4; off > 0; off >>= 1) {
      float nv[8];
      for (int l = 0; l < 8; ++l)
        nv[l] = v[l] + v[l ^ off];
      std::copy(nv, nv + 8, v);
    }
    for (int l = 0; l < 8 && 8 * g + l < n; ++l)
      want[8 * g + l] = v[l];
  }
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

//===----------------------------------------------------------------------===//
// cpasync.cu
//===----------------------------------------------------------------------===//

TEST_P(CorpusDiff, cp_async_scale) {
  const int n = 256 * 5; // the kernel requires a multiple of 256
  auto in = randF(n, -5, 5, 26);
  Buf bi = up(in), bo = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("cpasync"), "cp_async_scale", {n / 256, 1, 1},
                     {256, 1, 1}, 0, {n, bi, bo}));
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i)
    want[i] = 2.0f * in[(i / 256) * 256 + 255 - i % 256];
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

TEST_P(CorpusDiff, cp_async_pipelined_sum) {
  const int tiles = 5, blocks = 3;
  auto in = randF(blocks * tiles * 256, -3, 3, 27);
  Buf bi = up(in), bo = alloc(blocks * 256 * 4);
  ASSERT_TRUE(launch(ptx("cpasync"), "cp_async_pipelined_sum", {blocks, 1, 1},
                     {64, 1, 1}, 0, {tiles, bi, bo}));
  std::vector<float> want(blocks * 256);
  for (int b = 0; b < blocks; ++b)
    for (int j = 0; j < 256; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < tiles; ++k)
        acc += in[(b * tiles + k) * 256 + j];
      want[b * 256 + j] = acc;
    }
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

//===----------------------------------------------------------------------===//
// devfunc.cu
//===----------------------------------------------------------------------===//

TEST_P(CorpusDiff, devfunc_chain) {
  const int n = 1000;
  auto x = randF(n, -20, 20, 28);
  // stats3 returns a 12-byte struct (`.param .b8 func_retval0[12]`), built
  // with byte inserts: the strided-slice path of the host lowering.
  Buf bx = up(x), bo = alloc(3 * n * 4), bc = alloc(n * 4), bh = alloc(n * 8);
  ASSERT_TRUE(launch(ptx("devfunc"), "devfunc_chain", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, bx, bo, bc, bh}));
  auto clampf = [](float v, float lo, float hi) {
    return std::fmin(std::fmax(v, lo), hi);
  };
  std::vector<float> wo(3 * n);
  std::vector<int32_t> wc(n);
  std::vector<uint64_t> wh(n);
  for (int i = 0; i < n; ++i) {
    float a = x[i], b = x[std::min(i + 1, n - 1)],
          c = x[std::min(i + 2, n - 1)];
    float lo = clampf(std::fmin(a, std::fmin(b, c)), -10.0f, 10.0f);
    float hi = clampf(std::fmax(a, std::fmax(b, c)), -10.0f, 10.0f);
    int count = (a > 0.0f) + (b > 0.0f) + (c > 0.0f);
    wo[3 * i] = lo;
    wo[3 * i + 1] = hi;
    // mix3(a, b, count, 0.25, 0.5f) as nvcc emitted it (constants
    // propagated): fma(count, 0.25, fma(a, 0.25, b * 0.5)).
    wo[3 * i + 2] = std::fma(float(count), 0.25f, std::fma(a, 0.25f, b * 0.5f));
    wc[i] = count;
    uint64_t h = (uint64_t(i) ^ 42u) * 0x9E3779B97F4A7C15ull;
    wh[i] = h ^ (h >> 29);
  }
  EXPECT_TRUE(sameBits(down<float>(bo), wo));
  EXPECT_TRUE(sameBits(down<int32_t>(bc), wc));
  EXPECT_TRUE(sameBits(down<uint64_t>(bh), wh));
}

//===----------------------------------------------------------------------===//
// dynshared.cu
//===----------------------------------------------------------------------===//

TEST_P(CorpusDiff, reverse_block) {
  const int block = 96, n = block * 7; // full blocks only
  auto in = randF(n, -1, 1, 29);
  Buf bi = up(in), bo = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("dynshared"), "reverse_block", {n / block, 1, 1},
                     {block, 1, 1}, block * 4, {n, bi, bo}));
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i)
    want[i] = in[(i / block) * block + block - 1 - i % block];
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

TEST_P(CorpusDiff, stencil3) {
  const int block = 128, n = 1000;
  auto in = randF(n, -4, 4, 30);
  Buf bi = up(in), bo = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("dynshared"), "stencil3", {ceilDiv(n, block), 1, 1},
                     {block, 1, 1}, (block + 2) * 4, {n, bi, bo}));
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) {
    float l = i > 0 ? in[i - 1] : 0.0f, r = i + 1 < n ? in[i + 1] : 0.0f;
    want[i] = r + std::fma(in[i], 2.0f, l); // fma + add in the PTX
  }
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

//===----------------------------------------------------------------------===//
// f64.cu
//===----------------------------------------------------------------------===//

TEST_P(CorpusDiff, daxpy) {
  const int n = 1000;
  double a = -1.3;
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> d(-10, 10);
  std::vector<double> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = d(rng);
    y[i] = d(rng);
  }
  Buf bx = up(x), by = up(y);
  ASSERT_TRUE(launch(ptx("f64"), "daxpy", {ceilDiv(n, 128), 1, 1}, {128, 1, 1},
                     0, {n, a, bx, by}));
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i)
    want[i] = std::fma(a, x[i], y[i]);
  EXPECT_TRUE(sameBits(down<double>(by), want));
}

// Warp shuffle sums + one double atomicAdd per warp: inputs k/16 make every
// partial sum exact, so the result is order-independent and bits are compared.
TEST_P(CorpusDiff, dot_f64) {
  const int n = 1000;
  auto kx = randI(n, -256, 256, 32), ky = randI(n, -256, 256, 33);
  std::vector<double> x(n), y(n);
  double want = 1.0;
  for (int i = 0; i < n; ++i) {
    x[i] = kx[i] / 16.0;
    y[i] = ky[i] / 16.0;
    want += x[i] * y[i];
  }
  Buf bx = up(x), by = up(y), br = up(std::vector<double>{1.0});
  ASSERT_TRUE(launch(ptx("f64"), "dot_f64", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, bx, by, br}));
  EXPECT_TRUE(sameBits(down<double>(br), std::vector<double>{want}));
}

// sqrt.rn, fma.rn, div.rn: bits; rsqrt.approx.f64: relative error <= 2^-32.
TEST_P(CorpusDiff, f64_math) {
  const int n = 1000;
  std::mt19937 rng(34);
  std::uniform_real_distribution<double> d(-100, 100);
  std::vector<double> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = d(rng);
    y[i] = d(rng);
    if (y[i] == 0)
      y[i] = 1;
  }
  x[0] = 0.0;
  x[1] = -0.0;
  Buf bx = up(x), by = up(y), bo = alloc(4 * n * 8);
  ASSERT_TRUE(launch(ptx("f64"), "f64_math", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, bx, by, bo}));
  auto got = down<double>(bo);
  std::vector<double> gotExact, wantExact, gotRsqrt, wantRsqrt;
  for (int i = 0; i < n; ++i) {
    gotExact.insert(gotExact.end(),
                    {got[4 * i], got[4 * i + 1], got[4 * i + 2]});
    wantExact.insert(wantExact.end(), {std::sqrt(std::fabs(x[i])),
                                       std::fma(x[i], y[i], 1.0), x[i] / y[i]});
    gotRsqrt.push_back(got[4 * i + 3]);
    wantRsqrt.push_back(1.0 / std::sqrt(std::fabs(x[i]) + 1.0));
  }
  EXPECT_TRUE(sameBits(gotExact, wantExact))
      << "(index = 3*element + {sqrt, fma, div})";
  EXPECT_TRUE(within(gotRsqrt, wantRsqrt, [&](size_t i) {
    return std::ldexp(std::fabs(wantRsqrt[i]), -32);
  })) << "(rsqrt)";
}

TEST_P(CorpusDiff, f64_convert) {
  const int n = 1000;
  auto f = randF(n, -1e7f, 1e7f, 35);
  auto g = randF(n, -3, 3, 36);
  for (int i = 0; i < n; i += 2)
    f[i] = g[i]; // fractional values too
  Buf bf = up(f), bd = alloc(n * 8), bfo = alloc(n * 4), bl = alloc(n * 8);
  ASSERT_TRUE(launch(ptx("f64"), "f64_convert", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, bf, bd, bfo, bl}));
  std::vector<double> wd(n);
  std::vector<float> wf(n);
  std::vector<int64_t> wl(n);
  for (int i = 0; i < n; ++i) {
    double v = double(f[i]) * 3.0;
    wd[i] = v;
    wf[i] = float(v);
    wl[i] = int64_t(v);
  }
  EXPECT_TRUE(sameBits(down<double>(bd), wd));
  EXPECT_TRUE(sameBits(down<float>(bfo), wf));
  EXPECT_TRUE(sameBits(down<int64_t>(bl), wl));
}

//===----------------------------------------------------------------------===//
// gemm.cu
//===----------------------------------------------------------------------===//

// acc = fmaf chain over k padded with zeros to a multiple of 16, then
// C = fma(acc, alpha, C * beta) (as in the PTX): bits.
TEST_P(CorpusDiff, sgemm_tiled) {
  const int M = 37, N = 45, K = 50;
  float alpha = 1.25f, beta = -0.75f;
  auto A = randF(M * K, -1, 1, 37), B = randF(K * N, -1, 1, 38),
       C = randF(M * N, -1, 1, 39);
  Buf bA = up(A), bB = up(B), bC = up(C);
  ASSERT_TRUE(launch(ptx("gemm"), "sgemm_tiled",
                     {ceilDiv(N, 16), ceilDiv(M, 16), 1}, {16, 16, 1}, 0,
                     {M, N, K, alpha, bA, bB, beta, bC}));
  std::vector<float> want(M * N);
  int Kp = int(ceilDiv(K, 16)) * 16;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      float acc = 0.0f;
      for (int k = 0; k < Kp; ++k) {
        float a = k < K ? A[r * K + k] : 0.0f, b = k < K ? B[k * N + c] : 0.0f;
        acc = std::fma(a, b, acc);
      }
      want[r * N + c] = std::fma(acc, alpha, C[r * N + c] * beta);
    }
  EXPECT_TRUE(sameBits(down<float>(bC), want));
}

//===----------------------------------------------------------------------===//
// half.cu
//===----------------------------------------------------------------------===//

// Inputs are multiples of 2^-8 in [-8, 8] (exact in f16), so products and
// sums are exact in double and rounded once to f16 by the reference.
TEST_P(CorpusDiff, half2_arith) {
  const int n2 = 500, n = 2 * n2;
  auto ka = randI(n, -2047, 2047, 40), kb = randI(n, -2047, 2047, 41),
       kc = randI(n, -2047, 2047, 42);
  std::vector<uint16_t> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = halfBits(ka[i] / 256.0);
    b[i] = halfBits(kb[i] / 256.0);
    c[i] = halfBits(kc[i] / 256.0 * (i % 9 == 0 ? 4096.0 : 1.0)); // some large
  }
  Buf ba = up(a), bb = up(b), bc = up(c), bo = alloc(n * 2), bf = alloc(n * 2);
  ASSERT_TRUE(launch(ptx("half"), "half2_arith", {ceilDiv(n2, 128), 1, 1},
                     {128, 1, 1}, 0, {n2, ba, bb, bc, bo, bf}));
  std::vector<uint16_t> wo(n), wf(n);
  for (int i = 0; i < n; ++i) {
    double x = halfToFloat(a[i]), y = halfToFloat(b[i]), z = halfToFloat(c[i]);
    double p = roundHalf(x * y);
    wo[i] = halfBits(roundHalf(p + z));
    wf[i] = halfBits(roundHalf(x * y + z));
  }
  EXPECT_TRUE(sameBits(down<uint16_t>(bo), wo)) << "(__hadd2(__hmul2))";
  EXPECT_TRUE(sameBits(down<uint16_t>(bf), wf)) << "(__hfma2)";
}

TEST_P(CorpusDiff, half_convert) {
  const int n = 1000;
  std::mt19937 rng(43);
  std::uniform_real_distribution<double> m(1, 2);
  std::uniform_int_distribution<int> e(-30, 17), s(0, 1);
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) // subnormal, normal and overflowing f16 values
    x[i] = float(std::ldexp(m(rng), e(rng)) * (s(rng) ? -1 : 1));
  x[0] = 65504.0f;
  x[1] = 65519.99f;
  x[2] = 65520.0f;
  x[3] = -0.0f;
  x[4] = std::ldexp(1.0f, -25); // ties to even -> 0
  x[5] = std::ldexp(1.5f, -25); // -> smallest subnormal
  Buf bx = up(x), bh = alloc(n * 2), bb = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("half"), "half_convert", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, bx, bh, bb}));
  std::vector<uint16_t> wh(n);
  std::vector<float> wb(n);
  for (int i = 0; i < n; ++i) {
    double h = roundHalf(x[i]);
    wh[i] = halfBits(h);
    wb[i] = float(h) * 2.0f;
  }
  EXPECT_TRUE(sameBits(down<uint16_t>(bh), wh));
  EXPECT_TRUE(sameBits(down<float>(bb), wb));
}

TEST_P(CorpusDiff, bf16x2_arith) {
  const int n2 = 400, n = 2 * n2;
  auto x = randF(n, -8, 8, 44), qf = randF(n, -8, 8, 45);
  std::vector<uint16_t> q(n);
  for (int i = 0; i < n; ++i)
    q[i] = bf16Bits(roundBf16(qf[i]));
  q[6] = bf16Bits(-1.0); // p*q + p == 0
  x[7] = 0.0f;
  x[8] = -0.0f;
  Buf bx = up(x), bq = up(q), bo = alloc(n * 2), bf = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("half"), "bf16x2_arith", {ceilDiv(n2, 64), 1, 1},
                     {64, 1, 1}, 0, {n2, bx, bq, bo, bf}));
  std::vector<uint16_t> wo(n);
  std::vector<float> wf(n);
  for (int i = 0; i < n; ++i) {
    float p = float(roundBf16(x[i]));
    float qq = bf16ToFloat(q[i]);
    float r = float(roundBf16(double(p) * qq + p)); // exact in double
    float z = float(roundBf16(double(p) * 0.0));    // signed zero
    r = float(roundBf16(double(r) + double(z)));
    wo[i] = bf16Bits(r);
    wf[i] = r;
  }
  EXPECT_TRUE(sameBits(down<uint16_t>(bo), wo));
  EXPECT_TRUE(sameBits(down<float>(bf), wf));
}

TEST_P(CorpusDiff, mixed16_to_f32) {
  const int n = 1000;
  auto hb = randI<uint16_t>(n, 0, 0xffff, 46),
       bb = randI<uint16_t>(n, 0, 0xffff, 47);
  for (int i = 0; i < n; ++i) {
    if ((hb[i] & 0x7c00) == 0x7c00)
      hb[i] &= 0xbfff; // finite f16
    if ((bb[i] & 0x7f80) == 0x7f80)
      bb[i] &= 0xbfff; // finite bf16
  }
  Buf bh = up(hb), bbf = up(bb), by = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("half"), "mixed16_to_f32", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, bh, bbf, by}));
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i)
    want[i] = halfToFloat(hb[i]) + bf16ToFloat(bb[i]);
  EXPECT_TRUE(sameBits(down<float>(by), want));
}

//===----------------------------------------------------------------------===//
// histogram.cu
//===----------------------------------------------------------------------===//

TEST_P(CorpusDiff, histogram256) {
  const int n = 10007;
  auto data = randI<uint8_t>(n, 0, 255, 48);
  for (int i = 0; i < n; i += 3)
    data[i] = 17; // a hot bin
  Buf bd = up(data), bh = up(std::vector<uint32_t>(256, 0));
  ASSERT_TRUE(launch(ptx("histogram"), "histogram256", {4, 1, 1}, {192, 1, 1},
                     0, {n, bd, bh}));
  std::vector<uint32_t> want(256, 0);
  for (uint8_t v : data)
    ++want[v];
  EXPECT_TRUE(sameBits(down<uint32_t>(bh), want));
}

TEST_P(CorpusDiff, histogram_float) {
  const int n = 3001, nbins = 37;
  float lo = -2.5f, hi = 3.0f;
  auto x = randF(n, -3.5f, 4.0f, 49);
  Buf bx = up(x), bh = up(std::vector<int32_t>(nbins, 0));
  ASSERT_TRUE(launch(ptx("histogram"), "histogram_float",
                     {ceilDiv(n, 256), 1, 1}, {256, 1, 1}, 0,
                     {n, bx, lo, hi, nbins, bh}));
  std::vector<int32_t> want(nbins, 0);
  for (float v : x) {
    float t = (v - lo) * float(nbins);
    t = t / (hi - lo);
    int b = int(t);
    b = std::min(nbins - 1, std::max(0, b));
    ++want[b];
  }
  EXPECT_TRUE(sameBits(down<int32_t>(bh), want));
}

//===----------------------------------------------------------------------===//
// layernorm.cu (+ --use_fast_math)
//===----------------------------------------------------------------------===//

float butterflySum(const float *lanes) {
  float v[32];
  std::copy(lanes, lanes + 32, v);
  for (int off = 16; off > 0; off >>= 1) {
    float nv[32];
    for (int l = 0; l < 32; ++l)
      nv[l] = v[l] + v[l ^ off];
    std::copy(nv, nv + 32, v);
  }
  return v[0];
}

// Reference in the kernel's order (per-lane sums with the PTX's FMAs,
// butterfly, div.rn) with an exact 1/sqrt; rsqrt.approx.f32 (and, for the
// fast-math PTX, approximate division and ftz) make the result inexact:
// |err| <= tol * (|gamma*rstd|*(|x|+|mean|) + |beta|) with tol = 2^-20 (8 ulp)
// for the plain PTX and 2^-17 for fast-math.
TEST_P(CorpusDiff, layernorm_rows) {
  const int rows = 21, cols = 100, block = 128;
  const float eps = 1e-5f;
  auto x = randF(rows * cols, -3, 5, 50), gamma = randF(cols, 0.5f, 1.5f, 51),
       beta = randF(cols, -1, 1, 52);
  for (const char *variant : {"layernorm", "layernorm_fastmath"}) {
    SCOPED_TRACE(variant);
    double tol = std::string(variant) == "layernorm" ? std::ldexp(1.0, -20)
                                                     : std::ldexp(1.0, -17);
    Buf bx = up(x), bg = up(gamma), bb = up(beta), by = alloc(rows * cols * 4);
    ASSERT_TRUE(launch(ptx(variant), "layernorm_rows",
                       {ceilDiv(rows, block / 32), 1, 1}, {block, 1, 1}, 0,
                       {rows, cols, eps, bx, bg, bb, by}));
    std::vector<double> want(rows * cols), scale(rows * cols);
    for (int r = 0; r < rows; ++r) {
      const float *xr = &x[r * cols];
      float lanes[32];
      for (int l = 0; l < 32; ++l) {
        float s = 0.0f;
        for (int c = l; c < cols; c += 32)
          s += xr[c];
        lanes[l] = s;
      }
      float mean = butterflySum(lanes) / float(cols);
      for (int l = 0; l < 32; ++l) {
        float v = 0.0f;
        for (int c = l; c < cols; c += 32) {
          float d = xr[c] - mean;
          v = std::fma(d, d, v);
        }
        lanes[l] = v;
      }
      float var = butterflySum(lanes) / float(cols);
      double rstd = 1.0 / std::sqrt(double(var + eps));
      for (int c = 0; c < cols; ++c) {
        want[r * cols + c] = (double(xr[c]) - mean) * rstd * gamma[c] + beta[c];
        scale[r * cols + c] =
            std::fabs(gamma[c] * rstd) * (std::fabs(xr[c]) + std::fabs(mean)) +
            std::fabs(beta[c]);
      }
    }
    EXPECT_TRUE(within(down<float>(by), want,
                       [&](size_t i) { return tol * scale[i]; }));
  }
}

// Plain PTX: sqrt.rn, rcp.rn and div.rn only, replayed exactly -> bits.
// Fast-math PTX: relative error <= 2^-17.
TEST_P(CorpusDiff, rmsnorm_rows) {
  const int rows = 19, cols = 77, block = 64;
  const float eps = 1e-6f;
  auto x = randF(rows * cols, -2, 2, 53), gamma = randF(cols, 0.5f, 1.5f, 54);
  std::vector<float> exact(rows * cols);
  std::vector<double> approx(rows * cols);
  for (int r = 0; r < rows; ++r) {
    const float *xr = &x[r * cols];
    float lanes[32];
    for (int l = 0; l < 32; ++l) {
      float s = 0.0f;
      for (int c = l; c < cols; c += 32)
        s = std::fma(xr[c], xr[c], s);
      lanes[l] = s;
    }
    float t = butterflySum(lanes) / float(cols) + eps;
    float rr = 1.0f / std::sqrt(t);
    double rd = 1.0 / std::sqrt(double(t));
    for (int c = 0; c < cols; ++c) {
      exact[r * cols + c] = (rr * xr[c]) * gamma[c];
      approx[r * cols + c] = xr[c] * rd * gamma[c];
    }
  }
  for (const char *variant : {"layernorm", "layernorm_fastmath"}) {
    SCOPED_TRACE(variant);
    Buf bx = up(x), bg = up(gamma), by = alloc(rows * cols * 4);
    ASSERT_TRUE(launch(ptx(variant), "rmsnorm_rows",
                       {ceilDiv(rows, block / 32), 1, 1}, {block, 1, 1}, 0,
                       {rows, cols, eps, bx, bg, by}));
    if (std::string(variant) == "layernorm")
      EXPECT_TRUE(sameBits(down<float>(by), exact));
    else
      EXPECT_TRUE(within(down<float>(by), approx, [&](size_t i) {
        return std::ldexp(std::fabs(approx[i]), -17);
      }));
  }
}

//===----------------------------------------------------------------------===//
// localmem.cu
//===----------------------------------------------------------------------===//

TEST_P(CorpusDiff, bubble_sort_per_thread) {
  const int nthreads = 150;
  for (int k : {13, 20}) { // 20: len is capped at 16, the rest untouched
    SCOPED_TRACE("k=" + std::to_string(k));
    auto in = randI(k * nthreads, -1000, 1000, 55 + k);
    std::vector<int32_t> want(k * nthreads, -7);
    Buf bi = up(in), bo = up(want);
    ASSERT_TRUE(launch(ptx("localmem"), "bubble_sort_per_thread",
                       {ceilDiv(nthreads, 64), 1, 1}, {64, 1, 1}, 0,
                       {nthreads, k, bi, bo}));
    int len = std::min(k, 16);
    for (int i = 0; i < nthreads; ++i) {
      std::copy(&in[k * i], &in[k * i] + len, &want[k * i]);
      std::sort(&want[k * i], &want[k * i] + len);
    }
    EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
  }
}

TEST_P(CorpusDiff, local_lut) {
  const int n = 1000;
  auto idx = randI(n, INT32_MIN, INT32_MAX, 57);
  Buf bi = up(idx), bo = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("localmem"), "local_lut", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {n, bi, bo}));
  std::vector<int32_t> want(n);
  for (int i = 0; i < n; ++i) {
    int j = idx[i] & 15;
    want[i] = j * j + i;
  }
  EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
}

//===----------------------------------------------------------------------===//
// printf.cu (output captured through CpuDevice::Options::printfSink; lines
// compared as a sorted multiset since their order is unspecified)
//===----------------------------------------------------------------------===//

std::vector<std::string> sortedLines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream is(text);
  for (std::string l; std::getline(is, l);)
    lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  return lines;
}

TEST_P(CorpusDiff, print_values) {
  const int n = 40;
  auto x = randF(n, -100, 100, 58);
  x[0] = 0.1f;
  Buf bx = up(x), bo = up(std::vector<int32_t>(n + 8, -1));
  takePrinted();
  ASSERT_TRUE(launch(ptx("printf"), "print_values", {3, 1, 1}, {16, 1, 1}, 0,
                     {n, bx, bo}));
  std::string text = printedOnce();
  std::string want;
  std::vector<int32_t> wo(n + 8, -1);
  for (int i = 0; i < n; ++i) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "i=%d v=%f\n", i, double(x[i] * 2.0f));
    want += buf;
    wo[i] = i;
  }
  EXPECT_EQ(sortedLines(text), sortedLines(want)) << "printed:\n" << text;
  EXPECT_TRUE(text.empty() || text.back() == '\n');
  EXPECT_TRUE(sameBits(down<int32_t>(bo), wo));
}

TEST_P(CorpusDiff, print_block) {
  takePrinted();
  ASSERT_TRUE(
      launch(ptx("printf"), "print_block", {5, 1, 1}, {64, 1, 1}, 0, {1.5f}));
  std::string text = printedOnce();
  std::string want;
  for (int b = 0; b < 5; ++b)
    want += "block " + std::to_string(b) + " f=1.500000\n";
  EXPECT_EQ(sortedLines(text), sortedLines(want)) << "printed:\n" << text;
}

//===----------------------------------------------------------------------===//
// scan.cu
//===----------------------------------------------------------------------===//

TEST_P(CorpusDiff, block_scan_f32) {
  const int n = 256 * 3 + 100, blocks = ceilDiv(n, 256);
  auto in = randF(n, -1, 1, 59);
  Buf bi = up(in), bo = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("scan"), "block_scan_f32", {uint32_t(blocks), 1, 1},
                     {256, 1, 1}, 0, {n, bi, bo}));
  std::vector<float> want(n);
  for (int b = 0; b < blocks; ++b) {
    float cur[256], nxt[256];
    for (int t = 0; t < 256; ++t)
      cur[t] = b * 256 + t < n ? in[b * 256 + t] : 0.0f;
    for (int off = 1; off < 256; off <<= 1) {
      for (int t = 0; t < 256; ++t) {
        float v = cur[t];
        if (t >= off)
          v += cur[t - off];
        nxt[t] = v;
      }
      std::copy(nxt, nxt + 256, cur);
    }
    for (int t = 0; t < 256 && b * 256 + t < n; ++t)
      want[b * 256 + t] = cur[t];
  }
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

TEST_P(CorpusDiff, warp_scan_i32) {
  const int n = 1000;
  auto in = randI(n, INT32_MIN, INT32_MAX, 60);
  Buf bi = up(in), bo = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("scan"), "warp_scan_i32", {ceilDiv(n, 96), 1, 1},
                     {96, 1, 1}, 0, {n, bi, bo}));
  std::vector<int32_t> want(n);
  uint32_t s = 0;
  for (int i = 0; i < n; ++i) {
    s = (i % 32 == 0 ? 0 : s) + uint32_t(in[i]); // blocks of 96: warps at i%32
    want[i] = int32_t(s);
  }
  EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
}

TEST_P(CorpusDiff, block_scan_i32) {
  const int n = 1000, block = 224;
  auto in = randI(n, -100000, 100000, 61);
  Buf bi = up(in), bo = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("scan"), "block_scan_i32", {ceilDiv(n, block), 1, 1},
                     {block, 1, 1}, 0, {n, bi, bo}));
  std::vector<int32_t> want(n);
  int32_t s = 0;
  for (int i = 0; i < n; ++i) {
    s = (i % block == 0 ? 0 : s) + in[i];
    want[i] = s;
  }
  EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
}

//===----------------------------------------------------------------------===//
// softmax.cu (+ --use_fast_math)
//===----------------------------------------------------------------------===//

// expf (ex2.approx inside), __expf, logf: compared with a double reference.
// softmax: |err| <= tol * want with tol = 2^-19 (16 ulp) for the plain PTX
// and 2^-16 for fast-math (__expf's error grows with |x| <= 8 here; approximate
// reciprocal). log_softmax: |err| <= tol * (|x| + |lse|) (absolute, as
// x - lse cancels), tol = 2^-18 / 2^-16.
TEST_P(CorpusDiff, softmax_rows) {
  const int rows = 19, cols = 77, block = 64;
  auto x = randF(rows * cols, -4, 4, 62);
  std::vector<double> want(rows * cols);
  for (int r = 0; r < rows; ++r) {
    const float *xr = &x[r * cols];
    double m = *std::max_element(xr, xr + cols), s = 0;
    for (int c = 0; c < cols; ++c)
      s += std::exp(double(xr[c]) - m);
    for (int c = 0; c < cols; ++c)
      want[r * cols + c] = std::exp(double(xr[c]) - m) / s;
  }
  for (const char *variant : {"softmax", "softmax_fastmath"}) {
    SCOPED_TRACE(variant);
    double tol = std::string(variant) == "softmax" ? std::ldexp(1.0, -19)
                                                   : std::ldexp(1.0, -16);
    Buf bx = up(x), by = alloc(rows * cols * 4);
    ASSERT_TRUE(launch(ptx(variant), "softmax_rows",
                       {ceilDiv(rows, block / 32), 1, 1}, {block, 1, 1}, 0,
                       {rows, cols, bx, by}));
    EXPECT_TRUE(
        within(down<float>(by), want, [&](size_t i) { return tol * want[i]; }));
  }
}

TEST_P(CorpusDiff, log_softmax_rows) {
  const int rows = 21, cols = 50, block = 128;
  auto x = randF(rows * cols, -4, 4, 63);
  std::vector<double> want(rows * cols), scale(rows * cols);
  for (int r = 0; r < rows; ++r) {
    const float *xr = &x[r * cols];
    double m = *std::max_element(xr, xr + cols), s = 0;
    for (int c = 0; c < cols; ++c)
      s += std::exp(double(xr[c]) - m);
    double lse = m + std::log(s);
    for (int c = 0; c < cols; ++c) {
      want[r * cols + c] = xr[c] - lse;
      scale[r * cols + c] = std::fabs(xr[c]) + std::fabs(lse);
    }
  }
  for (const char *variant : {"softmax", "softmax_fastmath"}) {
    SCOPED_TRACE(variant);
    double tol = std::string(variant) == "softmax" ? std::ldexp(1.0, -18)
                                                   : std::ldexp(1.0, -16);
    Buf bx = up(x), by = alloc(rows * cols * 4);
    ASSERT_TRUE(launch(ptx(variant), "log_softmax_rows",
                       {ceilDiv(rows, block / 32), 1, 1}, {block, 1, 1}, 0,
                       {rows, cols, bx, by}));
    EXPECT_TRUE(within(down<float>(by), want,
                       [&](size_t i) { return tol * scale[i]; }));
  }
}

//===----------------------------------------------------------------------===//
// transpose.cu
//===----------------------------------------------------------------------===//

std::vector<float> transposed(const std::vector<float> &in, int rows,
                              int cols) {
  std::vector<float> out(in.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      out[c * rows + r] = in[r * cols + c];
  return out;
}

TEST_P(CorpusDiff, transpose_padded) {
  const int rows = 70, cols = 45;
  auto in = randF(rows * cols, -1, 1, 64);
  Buf bi = up(in), bo = alloc(rows * cols * 4);
  ASSERT_TRUE(launch(ptx("transpose"), "transpose_padded",
                     {ceilDiv(cols, 32), ceilDiv(rows, 32), 1}, {32, 8, 1}, 0,
                     {rows, cols, bi, bo}));
  EXPECT_TRUE(sameBits(down<float>(bo), transposed(in, rows, cols)));
}

TEST_P(CorpusDiff, transpose_naive) {
  const int rows = 70, cols = 45;
  auto in = randF(rows * cols, -1, 1, 65);
  Buf bi = up(in), bo = alloc(rows * cols * 4);
  ASSERT_TRUE(launch(ptx("transpose"), "transpose_naive",
                     {ceilDiv(cols, 16), ceilDiv(rows, 16), 1}, {16, 16, 1}, 0,
                     {rows, cols, bi, bo}));
  EXPECT_TRUE(sameBits(down<float>(bo), transposed(in, rows, cols)));
}

//===----------------------------------------------------------------------===//
// vectorized.cu
//===----------------------------------------------------------------------===//

TEST_P(CorpusDiff, scale_add_f4) {
  const int n4 = 250;
  float s = 0.3f;
  auto a = randF(4 * n4, -10, 10, 66), b = randF(4 * n4, -10, 10, 67);
  Buf ba = up(a), bb = up(b), bo = alloc(4 * n4 * 4);
  ASSERT_TRUE(launch(ptx("vectorized"), "scale_add_f4", {ceilDiv(n4, 64), 1, 1},
                     {64, 1, 1}, 0, {n4, ba, bb, s, bo}));
  std::vector<float> want(4 * n4);
  for (int i = 0; i < 4 * n4; ++i)
    want[i] = std::fma(a[i], s, b[i]);
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

TEST_P(CorpusDiff, swap_int2) {
  const int n2 = 333;
  auto in = randI(2 * n2, INT32_MIN, INT32_MAX, 68);
  Buf bi = up(in), bo = alloc(2 * n2 * 4);
  ASSERT_TRUE(launch(ptx("vectorized"), "swap_int2", {ceilDiv(n2, 64), 1, 1},
                     {64, 1, 1}, 0, {n2, bi, bo}));
  std::vector<int32_t> want(2 * n2);
  for (int i = 0; i < n2; ++i) {
    want[2 * i] = in[2 * i + 1];
    want[2 * i + 1] = int32_t(uint32_t(in[2 * i]) + uint32_t(in[2 * i + 1]));
  }
  EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
}

TEST_P(CorpusDiff, ldg_gather) {
  const int n = 1000; // multiple of 4, not of the block size
  auto x = randF(n, -10, 10, 69);
  Buf bx = up(x), bo = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("vectorized"), "ldg_gather", {ceilDiv(n, 96), 1, 1},
                     {96, 1, 1}, 0, {n, bx, bo}));
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i)
    want[i] = x[i] + x[(i / 4) * 4 + 3];
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

//===----------------------------------------------------------------------===//
// wmma.cu
//===----------------------------------------------------------------------===//

// The CPU backend's documented wmma arithmetic
// (lib/Runtime/CPU/WarpMatrix.cpp): each f16*f16 product exact in f32,
// accumulated from C in increasing k order with f32 round-to-nearest after each
// addition. Compared bit-exactly.
std::vector<uint16_t> randHalf(size_t n, uint32_t seed) {
  auto f = randF(n, -2, 2, seed);
  std::vector<uint16_t> h(n);
  for (size_t i = 0; i < n; ++i)
    h[i] = halfBits(roundHalf(f[i]));
  return h;
}

TEST_P(CorpusDiff, wmma_16x16x16) {
  auto A = randHalf(256, 70), B = randHalf(256, 71);
  auto C = randF(256, -4, 4, 72);
  Buf bA = up(A), bB = up(B), bC = up(C), bD = alloc(256 * 4);
  ASSERT_TRUE(launch(ptx("wmma"), "wmma_16x16x16", {1, 1, 1}, {32, 1, 1}, 0,
                     {bA, bB, bC, bD}));
  std::vector<float> want(256);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float acc = C[i * 16 + j];
      for (int k = 0; k < 16; ++k) {
        float p = halfToFloat(A[i * 16 + k]) * halfToFloat(B[j * 16 + k]);
        acc = acc + p; // B is column-major
      }
      want[i * 16 + j] = acc;
    }
  EXPECT_TRUE(sameBits(down<float>(bD), want));
}

TEST_P(CorpusDiff, wmma_gemm) {
  const int M = 32, N = 48, K = 64;
  auto A = randHalf(M * K, 73), B = randHalf(K * N, 74);
  Buf bA = up(A), bB = up(B), bC = up(std::vector<float>(M * N, -1.0f));
  ASSERT_TRUE(launch(ptx("wmma"), "wmma_gemm", {N / 16, M / 16, 1}, {32, 1, 1},
                     0, {M, N, K, bA, bB, bC}));
  std::vector<float> want(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) {
        float p = halfToFloat(A[i * K + k]) * halfToFloat(B[k * N + j]);
        acc = acc + p;
      }
      want[i * N + j] = acc;
    }
  EXPECT_TRUE(sameBits(down<float>(bC), want));
}

//===----------------------------------------------------------------------===//
// wmma2.cu: dmma, tf32, bf16 and int8 wmma GEMM tiles (WarpMatrix.cpp's
// arithmetic: f64 fused in k order; tf32/bf16 products exact in f32, added
// in k order; integers exact)
//===----------------------------------------------------------------------===//

TEST_P(CorpusDiff, dmma_gemm) {
  const int M = 16, N = 24, K = 20;
  std::mt19937 rng(130);
  std::uniform_real_distribution<double> d(-4, 4);
  std::vector<double> A(M * K), B(K * N), C(M * N);
  for (auto *v : {&A, &B, &C})
    for (double &x : *v)
      x = d(rng);
  Buf bA = up(A), bB = up(B), bC = up(C);
  ASSERT_TRUE(launch(ptx("wmma2"), "dmma_gemm", {N / 8, M / 8, 1}, {32, 1, 1},
                     0, {M, N, K, bA, bB, bC}));
  std::vector<double> want(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = C[i * N + j];
      for (int k = 0; k < K; ++k)
        acc = std::fma(A[i * K + k], B[k * N + j], acc);
      want[i * N + j] = acc;
    }
  EXPECT_TRUE(sameBits(down<double>(bC), want));
}

/// `x` rounded to tf32 as cvt.rna.tf32.f32 does (nearest, ties away).
float toTf32(float x) {
  uint32_t u = llvm::bit_cast<uint32_t>(x);
  return llvm::bit_cast<float>((u + 0x1000u) & 0xffffe000u);
}

TEST_P(CorpusDiff, tf32_gemm) {
  const int M = 32, N = 16, K = 24;
  auto A = randF(M * K, -3, 3, 131), B = randF(N * K, -3, 3, 132);
  Buf bA = up(A), bB = up(B), bC = up(std::vector<float>(M * N, -1.0f));
  ASSERT_TRUE(launch(ptx("wmma2"), "tf32_gemm", {N / 16, M / 16, 1}, {32, 1, 1},
                     0, {M, N, K, bA, bB, bC}));
  // B is N x K (column-major K x N); each tile is stored column-major.
  std::vector<float> want(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) {
        float p = toTf32(A[i * K + k]) * toTf32(B[j * K + k]);
        acc = acc + p;
      }
      want[(i / 16 * 16 + j % 16) * N + j / 16 * 16 + i % 16] = acc;
    }
  EXPECT_TRUE(sameBits(down<float>(bC), want));
}

TEST_P(CorpusDiff, bf16_gemm) {
  const int M = 16, N = 32, K = 48;
  auto fa = randF(M * K, -2, 2, 133), fb = randF(K * N, -2, 2, 134);
  std::vector<uint16_t> A(M * K), B(K * N);
  for (size_t i = 0; i < A.size(); ++i)
    A[i] = uint16_t(llvm::bit_cast<uint32_t>(fa[i]) >> 16);
  for (size_t i = 0; i < B.size(); ++i)
    B[i] = uint16_t(llvm::bit_cast<uint32_t>(fb[i]) >> 16);
  auto bf = [](uint16_t h) { return llvm::bit_cast<float>(uint32_t(h) << 16); };
  Buf bA = up(A), bB = up(B), bC = up(std::vector<float>(M * N, -1.0f));
  ASSERT_TRUE(launch(ptx("wmma2"), "bf16_gemm", {N / 16, M / 16, 1}, {32, 1, 1},
                     0, {M, N, K, bA, bB, bC}));
  std::vector<float> want(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) {
        float p = bf(A[i * K + k]) * bf(B[k * N + j]);
        acc = acc + p;
      }
      want[i * N + j] = acc;
    }
  EXPECT_TRUE(sameBits(down<float>(bC), want));
}

TEST_P(CorpusDiff, int8_gemm) {
  const int M = 32, N = 32, K = 64;
  auto A = randI<int8_t>(M * K, -128, 127, 135);
  auto B = randI<int8_t>(N * K, -128, 127, 136);
  auto C = randI<int32_t>(M * N, -100000, 100000, 137);
  Buf bA = up(A), bB = up(B), bC = up(C);
  ASSERT_TRUE(launch(ptx("wmma2"), "int8_gemm", {N / 16, M / 16, 1}, {32, 1, 1},
                     0, {M, N, K, bA, bB, bC}));
  std::vector<int32_t> want(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int32_t acc = C[i * N + j];
      for (int k = 0; k < K; ++k)
        acc += int32_t(A[i * K + k]) * int32_t(B[j * K + k]);
      want[i * N + j] = acc;
    }
  EXPECT_TRUE(sameBits(down<int32_t>(bC), want));
}

//===----------------------------------------------------------------------===//
// mma3.cu: s4 and b1 wmma tiles, b1 mma.sync m16n8k256, f16 mma.m8n8k4
// (quad pairs) and fp8 mma.sync (integer and single-bit products exact;
// f16/fp8 products exact in f32, added to C in k order)
//===----------------------------------------------------------------------===//

/// Element `i` of packed `bits`-bit elements (element 0 in the low bits).
uint32_t packedElem(const std::vector<uint8_t> &v, size_t i, unsigned bits) {
  size_t bit = i * bits;
  return (v[bit / 8] >> (bit % 8)) & ((1u << bits) - 1);
}

TEST_P(CorpusDiff, wmma_s4_gemm) {
  const int M = 16, N = 24, K = 64;
  auto A = randI<uint8_t>(M * K / 2, 0, 255, 140);
  auto B = randI<uint8_t>(N * K / 2, 0, 255, 141);
  auto C = randI<int32_t>(M * N, -100000, 100000, 142);
  Buf bA = up(A), bB = up(B), bC = up(C);
  ASSERT_TRUE(launch(ptx("mma3"), "wmma_s4_gemm", {N / 8, M / 8, 1}, {32, 1, 1},
                     0, {M, N, K, bA, bB, bC}));
  auto s4 = [](uint32_t x) { return int32_t(x << 28) >> 28; };
  std::vector<int32_t> want(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int32_t acc = C[i * N + j];
      for (int k = 0; k < K; ++k)
        acc +=
            s4(packedElem(A, i * K + k, 4)) * s4(packedElem(B, j * K + k, 4));
      want[i * N + j] = acc;
    }
  EXPECT_TRUE(sameBits(down<int32_t>(bC), want));
}

TEST_P(CorpusDiff, wmma_b1_gemm) {
  const int M = 16, N = 8, K = 256;
  for (int useAnd : {0, 1}) {
    auto A = randI<uint8_t>(M * K / 8, 0, 255, 143 + useAnd);
    auto B = randI<uint8_t>(N * K / 8, 0, 255, 145 + useAnd);
    auto C = randI<int32_t>(M * N, -1000, 1000, 147);
    Buf bA = up(A), bB = up(B), bC = up(C);
    ASSERT_TRUE(launch(ptx("mma3"), "wmma_b1_gemm", {N / 8, M / 8, 1},
                       {32, 1, 1}, 0, {M, N, K, bA, bB, bC, useAnd}));
    std::vector<int32_t> want(M * N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        int32_t acc = C[i * N + j];
        for (int k = 0; k < K; ++k) {
          uint32_t x = packedElem(A, i * K + k, 1),
                   y = packedElem(B, j * K + k, 1);
          acc += int32_t(useAnd ? x & y : x ^ y);
        }
        want[i * N + j] = acc;
      }
    EXPECT_TRUE(sameBits(down<int32_t>(bC), want)) << "useAnd " << useAnd;
  }
}

TEST_P(CorpusDiff, mma_b1_k256) {
  for (int useAnd : {0, 1}) {
    auto A = randI<uint8_t>(16 * 256 / 8, 0, 255, 150 + useAnd);
    auto B = randI<uint8_t>(8 * 256 / 8, 0, 255, 152 + useAnd);
    auto C = randI<int32_t>(16 * 8, INT32_MAX - 200, INT32_MAX, 154);
    Buf bA = up(A), bB = up(B), bC = up(C);
    ASSERT_TRUE(launch(ptx("mma3"), "mma_b1_k256", {1, 1, 1}, {32, 1, 1}, 0,
                       {bA, bB, bC, useAnd}));
    std::vector<int32_t> want(16 * 8);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j) {
        uint32_t acc = uint32_t(C[i * 8 + j]); // wraps past INT32_MAX
        for (int k = 0; k < 256; ++k) {
          uint32_t x = packedElem(A, i * 256 + k, 1),
                   y = packedElem(B, j * 256 + k, 1);
          acc += useAnd ? x & y : x ^ y;
        }
        want[i * 8 + j] = int32_t(acc);
      }
    EXPECT_TRUE(sameBits(down<int32_t>(bC), want)) << "useAnd " << useAnd;
  }
}

TEST_P(CorpusDiff, mma_quadpair) {
  auto fa = randF(4 * 32, -4, 4, 155), fb = randF(4 * 32, -4, 4, 156);
  auto C = randF(4 * 64, -8, 8, 157);
  std::vector<uint16_t> A(fa.size()), B(fb.size());
  for (size_t i = 0; i < A.size(); ++i)
    A[i] = halfBits(fa[i]);
  for (size_t i = 0; i < B.size(); ++i)
    B[i] = halfBits(fb[i]);
  Buf bA = up(A), bB = up(B), bC = up(C);
  ASSERT_TRUE(launch(ptx("mma3"), "mma_quadpair", {1, 1, 1}, {32, 1, 1}, 0,
                     {bA, bB, bC}));
  std::vector<float> want(C.size());
  for (int q = 0; q < 4; ++q)
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j) {
        float acc = C[64 * q + i * 8 + j];
        for (int k = 0; k < 4; ++k) {
          // B is stored column-major: element (k, j) at j * 4 + k.
          float p = halfToFloat(A[32 * q + i * 4 + k]) *
                    halfToFloat(B[32 * q + j * 4 + k]);
          acc = acc + p;
        }
        want[64 * q + i * 8 + j] = acc;
      }
  EXPECT_TRUE(sameBits(down<float>(bC), want));
}

/// A finite e4m3 (bias 7) or e5m2 (bias 15) value.
float fp8Value(uint8_t b, bool e4m3) {
  int man = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  int e = (b & 0x7f) >> man;
  double f = double(b & ((1 << man) - 1)) / double(1 << man);
  double v = e ? std::ldexp(1.0 + f, e - bias) : std::ldexp(f, 1 - bias);
  return float(b & 0x80 ? -v : v);
}

TEST_P(CorpusDiff, mma_fp8) {
  if (GetParam().arch == "sm_80")
    GTEST_SKIP() << "fp8 mma is sm_89's: the sm_80 build traps";
  auto A = randI<uint8_t>(16 * 32, 0, 255, 158);
  auto B = randI<uint8_t>(8 * 32, 0, 255, 159);
  for (uint8_t &x : A) // finite e4m3: not S.1111.111
    if ((x & 0x7f) == 0x7f)
      x &= 0xfe;
  for (uint8_t &x : B) // finite e5m2: exponent below 31
    if ((x & 0x7c) == 0x7c)
      x &= 0xbf;
  auto C = randF(16 * 8, -100, 100, 160);
  Buf bA = up(A), bB = up(B), bC = up(C);
  ASSERT_TRUE(
      launch(ptx("mma3"), "mma_fp8", {1, 1, 1}, {32, 1, 1}, 0, {bA, bB, bC}));
  std::vector<float> want(C.size());
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      float acc = C[i * 8 + j];
      for (int k = 0; k < 32; ++k) {
        float p =
            fp8Value(A[i * 32 + k], true) * fp8Value(B[j * 32 + k], false);
        acc = acc + p;
      }
      want[i * 8 + j] = acc;
    }
  EXPECT_TRUE(sameBits(down<float>(bC), want));
}

//===----------------------------------------------------------------------===//
// gridsync.cu: cooperative launches, grid.sync()
//===----------------------------------------------------------------------===//

// Quarters in [-16, 16]: every partial sum is exact, so the order of the
// block tree and the partials does not matter and bits are compared.
TEST_P(CorpusDiff, grid_sum) {
  if (refusesGridSync(ptx("gridsync")))
    GTEST_SKIP() << "the strategy refuses grid-wide synchronisation";
  cooperative = true;
  const int n = 20011, blocks = 13;
  auto k = randI(n, -64, 64, 93);
  std::vector<float> in(n);
  float want = 0;
  for (int i = 0; i < n; ++i) {
    in[i] = k[i] / 4.0f;
    want += in[i];
  }
  Buf bi = up(in), bp = alloc(blocks * 4), bo = up(std::vector<float>{-1});
  ASSERT_TRUE(launch(ptx("gridsync"), "grid_sum", {blocks, 1, 1}, {256, 1, 1},
                     0, {bi, bp, bo, n}));
  EXPECT_TRUE(sameBits(down<float>(bo), std::vector<float>{want}));
  // Each block's slice: elements b*256 + t + k*blocks*256.
  std::vector<float> partial(blocks, 0.0f);
  for (int i = 0; i < n; ++i)
    partial[(i / 256) % blocks] += in[i];
  EXPECT_TRUE(sameBits(down<float>(bp), partial));
}

// Seven rounds, each reading what the whole grid wrote in the round before
// (a missing grid barrier reads stale neighbours at block edges); the
// reference adds in the kernel's order, so bits are compared.
TEST_P(CorpusDiff, grid_smooth) {
  if (refusesGridSync(ptx("gridsync")))
    GTEST_SKIP() << "the strategy refuses grid-wide synchronisation";
  cooperative = true;
  const int n = 5003, steps = 7;
  auto x = randF(n, -1, 1, 94);
  Buf bx = up(x), by = up(std::vector<float>(n, 0.0f));
  ASSERT_TRUE(launch(ptx("gridsync"), "grid_smooth", {40, 1, 1}, {96, 1, 1}, 0,
                     {bx, by, n, steps}));
  std::vector<float> a = x, b(n);
  for (int s = 0; s < steps; ++s) {
    for (int i = 0; i < n; ++i) {
      float l = i > 0 ? a[i - 1] : 0.0f, r = i + 1 < n ? a[i + 1] : 0.0f;
      b[i] = (l + a[i]) + r;
    }
    std::swap(a, b);
  }
  // Odd `steps`: the result is in y.
  EXPECT_TRUE(sameBits(down<float>(by), a));
}

// Without a cooperative launch there is no grid workspace: grid.sync()
// traps, as on a GPU.
TEST_P(CorpusDiff, grid_sum_not_cooperative) {
  if (refusesGridSync(ptx("gridsync")))
    GTEST_SKIP() << "the strategy refuses grid-wide synchronisation";
  const int n = 1000;
  Buf bi = up(std::vector<float>(n, 1.0f)), bp = alloc(4 * 4), bo = alloc(4);
  ::testing::AssertionResult r = launch(ptx("gridsync"), "grid_sum", {4, 1, 1},
                                        {256, 1, 1}, 0, {bi, bp, bo, n});
  ASSERT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("trap instruction executed"),
            std::string::npos)
      << r.message();
}

//===----------------------------------------------------------------------===//
// vatomics.cu: packed and vector atomics
//===----------------------------------------------------------------------===//

/// Runs vatomics.cu's `kernel` on `n` random elements of `lanes` components
/// of `T` (`toT` makes one from an exactly representable value) with bins
/// in [0, bins), the values small integers times `scale` (|k| <= 3): every
/// partial sum of a bin is exact, so the order of the atomics does not
/// matter and bits are compared with the sums.
template <class T, class ToT>
::testing::AssertionResult checkBins(CorpusDiff &t, const char *kernel, int n,
                                     int lanes, int bins, double scale,
                                     uint32_t seed, ToT toT) {
  auto bin = randI(n, 0, bins - 1, seed);
  auto k = randI(n * lanes, -3, 3, seed + 1);
  std::vector<T> v(n * lanes), want(bins * lanes);
  std::vector<double> sums(bins * lanes, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < lanes; ++j) {
      double x = k[i * lanes + j] * scale;
      v[i * lanes + j] = toT(x);
      sums[bin[i] * lanes + j] += x;
    }
  for (int i = 0; i < bins * lanes; ++i)
    want[i] = toT(sums[i]);
  return t.runBins(kernel, v, bin, want, n);
}

// Up to ~40 contributions of |v| <= 3 per bin: every sum is an integer
// below 256, exact in f16 and bf16.
TEST_P(CorpusDiff, bins_half2) {
  EXPECT_TRUE(
      checkBins<uint16_t>(*this, "bins_half2", 1500, 2, 64, 1.0, 95, halfBits));
}

TEST_P(CorpusDiff, bins_bf162) {
  EXPECT_TRUE(
      checkBins<uint16_t>(*this, "bins_bf162", 1500, 2, 64, 1.0, 97, bf16Bits));
}

// Quarters: exact in f32 whatever the order.
TEST_P(CorpusDiff, bins_float2) {
  EXPECT_TRUE(checkBins<float>(*this, "bins_float2", 3001, 2, 37, 0.25, 99,
                               [](double x) { return float(x); }));
}

TEST_P(CorpusDiff, bins_float4) {
  EXPECT_TRUE(checkBins<float>(*this, "bins_float4", 3001, 4, 37, 0.25, 101,
                               [](double x) { return float(x); }));
}

//===----------------------------------------------------------------------===//
// bigparams.cu: parameters larger than 4 KiB
//===----------------------------------------------------------------------===//

/// bigparams.cu's `Lut`: 8196 bytes passed by value.
struct Lut {
  float v[2048];
  int32_t n;
};

TEST_P(CorpusDiff, lut_apply) {
  const int n = 3000;
  Lut lut;
  auto v = randF(2048, -100, 100, 90);
  std::copy(v.begin(), v.end(), lut.v);
  lut.n = 1999;
  auto idx = randI(n, INT32_MIN, INT32_MAX, 91);
  Buf bi = up(idx), bo = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("bigparams"), "lut_apply", {ceilDiv(n, 128), 1, 1},
                     {128, 1, 1}, 0, {lut, bi, bo, n}));
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i)
    want[i] = 2.0f * lut.v[idx[i] & 2047] + lut.v[i % lut.n];
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

/// bigparams.cu's `Coeffs`: 32,720 bytes passed by value (32,748 bytes of
/// parameters in all, near CUDA's limit of 32,764).
struct Coeffs {
  double c[4090];
};

TEST_P(CorpusDiff, poly_eval) {
  const int n = 300, deg = 4089;
  static Coeffs p; // 32 KiB: not on the test's stack
  std::mt19937 rng(92);
  std::uniform_real_distribution<double> d(-1, 1);
  for (double &c : p.c)
    c = d(rng);
  std::vector<double> x(n);
  for (double &v : x)
    v = d(rng);
  Buf bx = up(x), by = alloc(n * 8);
  ASSERT_TRUE(launch(ptx("bigparams"), "poly_eval", {ceilDiv(n, 64), 1, 1},
                     {64, 1, 1}, 0, {p, deg, bx, by, n}));
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) {
    double acc = p.c[deg];
    for (int k = deg - 1; k >= 0; --k)
      acc = std::fma(acc, x[i], p.c[k]);
    want[i] = acc;
  }
  EXPECT_TRUE(sameBits(down<double>(by), want));
}

//===----------------------------------------------------------------------===//
// texture.cu: texture and surface objects, against the reference sampler
// of TextureReference.h (RefTex).
//===----------------------------------------------------------------------===//

class TextureDiff : public CorpusDiff {
protected:
  std::vector<uint64_t> textures, surfaces;
  void TearDown() override {
    for (uint64_t t : textures)
      llvm::consumeError(device().destroyTextureObject(t));
    for (uint64_t s : surfaces)
      llvm::consumeError(device().destroySurfaceObject(s));
    CorpusDiff::TearDown();
  }
  uint64_t texture(const ResourceDesc &r, const TextureDesc &t) {
    auto h = device().createTextureObject(r, t);
    if (!h) {
      ADD_FAILURE() << llvm::toString(h.takeError());
      return 0;
    }
    textures.push_back(*h);
    return *h;
  }
  uint64_t surface(const ResourceDesc &r) {
    auto h = device().createSurfaceObject(r);
    if (!h) {
      ADD_FAILURE() << llvm::toString(h.takeError());
      return 0;
    }
    surfaces.push_back(*h);
    return *h;
  }
  /// A float4 CUDA array of `ref`'s texels (2D, or 3D when ref.d > 1).
  ResourceDesc float4Array(const RefTex &ref) {
    ResourceDesc r;
    r.kind = ResourceDesc::Kind::Array;
    r.address = up(ref.texels).addr;
    r.format = float4Format();
    r.width = ref.w;
    r.height = ref.h;
    r.depth = ref.d > 1 ? ref.d : 0;
    return r;
  }
  TextureDesc desc(const RefTex &ref) {
    TextureDesc t;
    for (int k = 0; k < 3; ++k)
      t.addressMode[k] = ref.mode[k];
    t.filterMode = ref.linear ? FilterMode::Linear : FilterMode::Point;
    t.normalizedCoords = ref.normalized;
    for (int c = 0; c < 4; ++c)
      t.borderColor[c] = ref.border[c];
    return t;
  }

  /// tex2d_sample over `ref` (a float4 array) at coordinates for it.
  ::testing::AssertionResult sample2D(const RefTex &ref, uint32_t seed) {
    const int n = 400;
    std::vector<float> c = texCoords(ref.w, ref.h, ref.normalized, seed, n);
    uint64_t tex = texture(float4Array(ref), desc(ref));
    Buf bc = up(c), bo = alloc(n * 16);
    ::testing::AssertionResult r =
        launch(ptx("texture"), "tex2d_sample", {ceilDiv(n, 64), 1, 1},
               {64, 1, 1}, 0, {tex, bo, bc, n});
    if (!r)
      return r;
    std::vector<float> want;
    for (int i = 0; i < n; ++i)
      for (float v : ref.sample(c[2 * i], c[2 * i + 1], 0, 2))
        want.push_back(v);
    return sameBits(down<float>(bo), want);
  }
};

/// A w x h float4 texture of random values in [-4, 4).
RefTex randomTex(int w, int h, uint32_t seed, int d = 1, int chans = 4) {
  RefTex t;
  t.w = w;
  t.h = h;
  t.d = d;
  t.chans = chans;
  t.texels = randF(size_t(w) * h * d * chans, -4.0f, 4.0f, seed);
  return t;
}

// Linear filtering with unnormalized coordinates: clamp and border.
TEST_P(TextureDiff, tex2d_linear_clamp_border) {
  RefTex t = randomTex(7, 5, 301);
  t.linear = true;
  EXPECT_TRUE(sample2D(t, 302));
  t.mode[0] = t.mode[1] = AddressMode::Border;
  t.border[0] = 0.5f;
  t.border[3] = -2.0f;
  EXPECT_TRUE(sample2D(t, 303));
}

// Linear filtering with normalized coordinates and each address mode.
TEST_P(TextureDiff, tex2d_linear_normalized_modes) {
  for (AddressMode m : {AddressMode::Wrap, AddressMode::Mirror,
                        AddressMode::Clamp, AddressMode::Border}) {
    RefTex t = randomTex(6, 9, 310 + unsigned(m));
    t.linear = true;
    t.normalized = true;
    t.mode[0] = t.mode[1] = m;
    EXPECT_TRUE(sample2D(t, 320 + unsigned(m)))
        << "address mode " << unsigned(m);
  }
  // Different modes in x and y.
  RefTex t = randomTex(5, 4, 330);
  t.linear = t.normalized = true;
  t.mode[0] = AddressMode::Wrap;
  t.mode[1] = AddressMode::Mirror;
  EXPECT_TRUE(sample2D(t, 331));
}

// Point sampling, unnormalized and normalized (wrap).
TEST_P(TextureDiff, tex2d_point) {
  RefTex t = randomTex(8, 3, 340);
  EXPECT_TRUE(sample2D(t, 341));
  t.normalized = true;
  t.mode[0] = t.mode[1] = AddressMode::Wrap;
  EXPECT_TRUE(sample2D(t, 342));
}

// The 2x2 box filter over a pitch-linear texture (rows padded).
TEST_P(TextureDiff, tex2d_box) {
  const int w = 19, h = 13, pitchTexels = 24;
  RefTex t = randomTex(w, h, 350);
  t.linear = true;
  std::vector<float> padded(size_t(pitchTexels) * h * 4, 123.0f);
  for (int y = 0; y < h; ++y)
    std::memcpy(&padded[size_t(y) * pitchTexels * 4],
                &t.texels[size_t(y) * w * 4], size_t(w) * 16);
  ResourceDesc r;
  r.kind = ResourceDesc::Kind::Pitch2D;
  r.address = up(padded).addr;
  r.format = float4Format();
  r.width = w;
  r.height = h;
  r.pitch = pitchTexels * 16;
  uint64_t tex = texture(r, desc(t));
  Buf bo = alloc(size_t(w) * h * 16);
  ASSERT_TRUE(launch(ptx("texture"), "tex2d_box",
                     {ceilDiv(w, 16), ceilDiv(h, 16), 1}, {16, 16, 1}, 0,
                     {tex, bo, w, h}));
  std::vector<float> want;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      float fx = float(x), fy = float(y);
      auto a = t.sample(fx + 0.25f, fy + 0.25f, 0, 2);
      auto b = t.sample(fx + 0.75f, fy + 0.25f, 0, 2);
      auto c = t.sample(fx + 0.25f, fy + 0.75f, 0, 2);
      auto d = t.sample(fx + 0.75f, fy + 0.75f, 0, 2);
      for (int k = 0; k < 4; ++k)
        want.push_back((a[k] + b[k] + c[k] + d[k]) * 0.25f);
    }
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

// Normalized-float reads of 8-bit texels (x / 255), with linear filtering,
// and the same texels flagged sRGB.
TEST_P(TextureDiff, tex2d_unorm8_srgb) {
  const int w = 6, h = 5;
  std::mt19937 rng(360);
  std::vector<uint8_t> bytes(size_t(w) * h * 4);
  for (uint8_t &b : bytes)
    b = uint8_t(rng());
  for (bool srgb : {false, true}) {
    RefTex t = unorm8Tex(w, h, bytes, srgb);
    t.linear = true;
    ResourceDesc r;
    r.kind = ResourceDesc::Kind::Array;
    r.address = up(bytes).addr;
    r.format.bits[0] = r.format.bits[1] = r.format.bits[2] = r.format.bits[3] =
        8;
    r.format.kind = ChannelKind::Unsigned;
    r.width = w;
    r.height = h;
    TextureDesc d = desc(t);
    d.readMode = ReadMode::NormalizedFloat;
    d.sRGB = srgb;
    const int n = 200;
    std::vector<float> c = texCoords(w, h, false, 361, n);
    uint64_t tex = texture(r, d);
    Buf bc = up(c), bo = alloc(n * 16);
    ASSERT_TRUE(launch(ptx("texture"), "tex2d_sample", {ceilDiv(n, 64), 1, 1},
                       {64, 1, 1}, 0, {tex, bo, bc, n}));
    std::vector<float> want;
    for (int i = 0; i < n; ++i)
      for (float v : t.sample(c[2 * i], c[2 * i + 1], 0, 2))
        want.push_back(v);
    EXPECT_TRUE(sameBits(down<float>(bo), want)) << (srgb ? "sRGB" : "linear");
  }
}

// tex1Dfetch of int4 texels of linear memory; out-of-range indices read 0.
TEST_P(TextureDiff, tex1d_fetch_int) {
  const int texels = 50, n = 300;
  std::mt19937 rng(370);
  std::vector<int32_t> data(texels * 4), idx(n);
  for (int32_t &v : data)
    v = int32_t(rng());
  for (int32_t &i : idx)
    i = int32_t(rng() % 70) - 10;
  ResourceDesc r;
  r.kind = ResourceDesc::Kind::Linear;
  r.address = up(data).addr;
  r.format.bits[0] = r.format.bits[1] = r.format.bits[2] = r.format.bits[3] =
      32;
  r.format.kind = ChannelKind::Signed;
  r.width = texels;
  uint64_t tex = texture(r, TextureDesc());
  Buf bi = up(idx), bo = alloc(n * 16);
  ASSERT_TRUE(launch(ptx("texture"), "tex1d_fetch_int", {ceilDiv(n, 64), 1, 1},
                     {64, 1, 1}, 0, {tex, bo, bi, n}));
  std::vector<int32_t> want;
  for (int32_t i : idx)
    for (int c = 0; c < 4; ++c)
      want.push_back(i >= 0 && i < texels ? data[i * 4 + c] : 0);
  EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
}

// Element reads of uchar4 texels with point sampling (clamp).
TEST_P(TextureDiff, tex2d_uchar) {
  const int w = 9, h = 7, n = 300;
  std::mt19937 rng(380);
  std::vector<uint8_t> bytes(size_t(w) * h * 4);
  for (uint8_t &b : bytes)
    b = uint8_t(rng());
  ResourceDesc r;
  r.kind = ResourceDesc::Kind::Array;
  r.address = up(bytes).addr;
  r.format.bits[0] = r.format.bits[1] = r.format.bits[2] = r.format.bits[3] = 8;
  r.format.kind = ChannelKind::Unsigned;
  r.width = w;
  r.height = h;
  TextureDesc d;
  d.addressMode[0] = d.addressMode[1] = AddressMode::Clamp;
  uint64_t tex = texture(r, d);
  std::vector<float> c = texCoords(w, h, false, 381, n);
  Buf bc = up(c), bo = alloc(n * 4);
  ASSERT_TRUE(launch(ptx("texture"), "tex2d_uchar", {ceilDiv(n, 64), 1, 1},
                     {64, 1, 1}, 0, {tex, bo, bc, n}));
  std::vector<uint8_t> want;
  for (int i = 0; i < n; ++i) {
    int64_t x = std::clamp<int64_t>(int64_t(std::floor(c[2 * i])), 0, w - 1);
    int64_t y =
        std::clamp<int64_t>(int64_t(std::floor(c[2 * i + 1])), 0, h - 1);
    for (int k = 0; k < 4; ++k)
      want.push_back(bytes[(y * w + x) * 4 + k]);
  }
  EXPECT_TRUE(sameBits(down<uint8_t>(bo), want));
}

// tld4: each component of the 2x2 footprint (clamp and wrap).
TEST_P(TextureDiff, tex2d_gather) {
  for (bool normalized : {false, true}) {
    RefTex t = randomTex(7, 6, 390 + normalized);
    t.normalized = normalized;
    if (normalized)
      t.mode[0] = t.mode[1] = AddressMode::Wrap;
    const int n = 200;
    std::vector<float> c = texCoords(t.w, t.h, normalized, 392, n);
    uint64_t tex = texture(float4Array(t), desc(t));
    Buf bc = up(c), bo = alloc(n * 64);
    ASSERT_TRUE(launch(ptx("texture"), "tex2d_gather", {ceilDiv(n, 64), 1, 1},
                       {64, 1, 1}, 0, {tex, bo, bc, n}));
    std::vector<float> want;
    for (int i = 0; i < n; ++i)
      for (int comp = 0; comp < 4; ++comp)
        for (float v : t.gather(c[2 * i], c[2 * i + 1], comp))
          want.push_back(v);
    EXPECT_TRUE(sameBits(down<float>(bo), want));
  }
}

// tex.level and tex.grad on a texture without mipmaps: level 0.
TEST_P(TextureDiff, tex2d_lod_grad) {
  RefTex t = randomTex(5, 5, 400);
  t.linear = true;
  const int n = 150;
  std::vector<float> c = texCoords(t.w, t.h, false, 401, n);
  uint64_t tex = texture(float4Array(t), desc(t));
  Buf bc = up(c), bo = alloc(n * 32);
  ASSERT_TRUE(launch(ptx("texture"), "tex2d_lod_grad", {ceilDiv(n, 64), 1, 1},
                     {64, 1, 1}, 0, {tex, bo, bc, n}));
  std::vector<float> want;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < 2; ++k)
      for (float v : t.sample(c[2 * i], c[2 * i + 1], 0, 2))
        want.push_back(v);
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

// A mipmapped float4 texture of 3 levels (13x9, 6x4, 3x2), bilinear in each
// level: tex.level at fractional levels, tex.grad and tex without a level,
// with point and linear mipmap filtering, a bias and clamps; txq of the
// levels. Against RefMip (TextureReference.h).
TEST_P(TextureDiff, tex2d_mip) {
  RefMip m;
  std::vector<float> all;
  for (int l = 0; l < 3; ++l) {
    RefTex t = randomTex(std::max(13 >> l, 1), std::max(9 >> l, 1), 440 + l);
    t.linear = t.normalized = true;
    t.mode[0] = AddressMode::Wrap;
    t.mode[1] = AddressMode::Mirror;
    all.insert(all.end(), t.texels.begin(), t.texels.end());
    m.levels.push_back(t);
  }
  ResourceDesc r = float4Array(m.levels[0]);
  r.kind = ResourceDesc::Kind::MipmappedArray;
  r.levels = 3;
  Buf texels = up(all);
  r.address = texels.addr;
  ASSERT_EQ(mipLevelOffset(r, 3), all.size() * 4);
  const int n = 300;
  std::mt19937 rng(445);
  std::uniform_real_distribution<float> uc(-0.3f, 1.3f), ul(-1.0f, 3.5f),
      ug(0.0f, 0.4f);
  std::vector<float> args(size_t(n) * 4);
  for (int i = 0; i < n; ++i) {
    args[4 * i] = uc(rng);
    args[4 * i + 1] = uc(rng);
    // Levels at, between and beyond the levels (and exactly half-way).
    args[4 * i + 2] = i % 7 == 0 ? float(i % 4) * 0.5f : ul(rng);
    args[4 * i + 3] = i % 11 == 0 ? 0.0f : ug(rng);
  }
  Buf ba = up(args);
  struct Case {
    bool linear;
    float bias, minClamp, maxClamp;
  } cases[] = {{true, 0, 0, 10}, {false, 0, 0, 10}, {true, 0.3f, 0.25f, 1.6f}};
  for (const Case &k : cases) {
    m.mipLinear = k.linear;
    m.bias = k.bias;
    m.minClamp = k.minClamp;
    m.maxClamp = k.maxClamp;
    TextureDesc d = desc(m.levels[0]);
    d.mipmapFilterMode = k.linear ? FilterMode::Linear : FilterMode::Point;
    d.mipmapLevelBias = k.bias;
    d.minMipmapLevelClamp = k.minClamp;
    d.maxMipmapLevelClamp = k.maxClamp;
    uint64_t tex = texture(r, d);
    Buf bo = alloc(n * 48);
    ASSERT_TRUE(launch(ptx("texture"), "tex2d_mip", {ceilDiv(n, 64), 1, 1},
                       {64, 1, 1}, 0, {tex, bo, ba, n}));
    std::vector<float> want;
    for (int i = 0; i < n; ++i)
      for (const auto &t : m.lodGradPlain(args[4 * i], args[4 * i + 1],
                                          args[4 * i + 2], args[4 * i + 3]))
        want.insert(want.end(), t.begin(), t.end());
    EXPECT_TRUE(sameBits(down<float>(bo), want))
        << "linear " << k.linear << " bias " << k.bias;
  }
  uint64_t tex = textures.back();
  Buf bq = alloc(20);
  ASSERT_TRUE(launch(ptx("texture"), "tex_mip_query", {1, 1, 1}, {1, 1, 1}, 0,
                     {tex, bq, 2}));
  EXPECT_TRUE(
      sameBits(down<int32_t>(bq), std::vector<int32_t>{3, 13, 6, 3, 2}));
  // Unnormalized coordinates are not supported yet; too many levels are
  // refused.
  TextureDesc texelDesc = desc(m.levels[0]);
  texelDesc.normalizedCoords = false;
  auto h = device().createTextureObject(r, texelDesc);
  ASSERT_FALSE(h);
  EXPECT_NE(llvm::toString(h.takeError()).find("not supported yet"),
            std::string::npos);
  r.levels = 5;
  auto h2 = device().createTextureObject(r, desc(m.levels[0]));
  EXPECT_FALSE(h2);
  llvm::consumeError(h2.takeError());
}

// A layered 2D texture and a 3D texture of one float channel, linear.
TEST_P(TextureDiff, tex_layered_3d) {
  const int w = 6, h = 5, layers = 3, depth = 4, n = 200;
  RefTex lay = randomTex(w, h, 410, layers, 1),
         vol = randomTex(w, h, 411, depth, 1);
  lay.linear = vol.linear = true;
  ChannelFormat f1;
  f1.bits[0] = 32;
  f1.kind = ChannelKind::Float;
  ResourceDesc rl;
  rl.kind = ResourceDesc::Kind::Array;
  rl.address = up(lay.texels).addr;
  rl.format = f1;
  rl.width = w;
  rl.height = h;
  rl.depth = layers;
  rl.layered = true;
  ResourceDesc rv = rl;
  rv.address = up(vol.texels).addr;
  rv.depth = depth;
  rv.layered = false;
  uint64_t tl = texture(rl, desc(lay)), tv = texture(rv, desc(vol));
  std::mt19937 rng(412);
  std::uniform_real_distribution<float> u(-1.5f, 7.5f);
  std::vector<float> c(size_t(n) * 4);
  for (int i = 0; i < n; ++i) {
    c[4 * i] = u(rng);
    c[4 * i + 1] = u(rng);
    c[4 * i + 2] = u(rng) * 0.6f;
    c[4 * i + 3] = float(int(rng() % 5) - 1); // layers -1..3: clamped
  }
  Buf bc = up(c), bo = alloc(n * 8);
  ASSERT_TRUE(launch(ptx("texture"), "tex_layered_3d", {ceilDiv(n, 64), 1, 1},
                     {64, 1, 1}, 0, {tl, tv, bo, bc, n}));
  std::vector<float> want;
  for (int i = 0; i < n; ++i) {
    int layer = layerIndex(int(c[4 * i + 3]), layers);
    RefTex one = lay;
    one.d = 1;
    one.texels.assign(lay.texels.begin() + size_t(layer) * w * h,
                      lay.texels.begin() + size_t(layer + 1) * w * h);
    want.push_back(one.sample(c[4 * i], c[4 * i + 1], 0, 2)[0]);
    want.push_back(vol.sample(c[4 * i], c[4 * i + 1], c[4 * i + 2], 3)[0]);
  }
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

// tld4 on a layered texture, a cube map and a cubemap array (float4,
// point filtering state: tld4 ignores it): the footprint of the layer or of
// the face the direction selects, faces clamped at their edges.
TEST_P(TextureDiff, tld4_layered_cube) {
  const int w = 6, h = 5, layers = 3, side = 4, n = 200;
  RefTex lay = randomTex(w, h, 450, layers),
         cube = randomTex(side, side, 451, 6),
         acube = randomTex(side, side, 452, 12);
  ResourceDesc rl = float4Array(lay);
  rl.layered = true;
  ResourceDesc rc = float4Array(cube);
  rc.cubemap = true;
  ResourceDesc ra = float4Array(acube);
  ra.cubemap = ra.layered = true;
  uint64_t tl = texture(rl, desc(lay)), tc = texture(rc, desc(cube)),
           ta = texture(ra, desc(acube));
  std::mt19937 rng(453);
  std::uniform_real_distribution<float> u(-1.5f, 7.5f), dir(-1.0f, 1.0f);
  std::vector<float> c(size_t(n) * 4);
  for (int i = 0; i < n; ++i) {
    // Directions that are also texel coordinates of the layered texture
    // half the time (small ones select faces near their centres).
    bool texels = i % 2 == 0;
    c[4 * i] = texels ? u(rng) : dir(rng);
    c[4 * i + 1] = texels ? u(rng) : dir(rng);
    c[4 * i + 2] = i % 3 == 0 ? 0.0f : dir(rng);
    c[4 * i + 3] = float(int(rng() % 4) - 1); // layers -1..2: clamped
  }
  Buf bc = up(c), bo = alloc(n * 48);
  ASSERT_TRUE(launch(ptx("texture"), "tld4_layered_cube",
                     {ceilDiv(n, 64), 1, 1}, {64, 1, 1}, 0,
                     {tl, tc, ta, bo, bc, n}));
  std::vector<float> want;
  auto faceGather = [&](const RefTex &t, int first, float x, float y, float z,
                        int comp) {
    float s, tt;
    int f = cubeFace(x, y, z, s, tt);
    RefTex face = sliceOf(t, first + f);
    face.mode[0] = face.mode[1] = AddressMode::Clamp;
    face.normalized = false;
    return face.gather(s * float(side), tt * float(side), comp);
  };
  for (int i = 0; i < n; ++i) {
    float x = c[4 * i], y = c[4 * i + 1], z = c[4 * i + 2];
    int l = int(c[4 * i + 3]);
    for (float v : sliceOf(lay, layerIndex(l, layers)).gather(x, y, 0))
      want.push_back(v);
    for (float v : faceGather(cube, 0, x, y, z, 1))
      want.push_back(v);
    for (float v : faceGather(acube, 6 * layerIndex(l, 2), x, y, z, 2))
      want.push_back(v);
  }
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

// suld/sust of uchar4 surfaces: r, g, b inverted, alpha copied.
TEST_P(TextureDiff, surf_invert) {
  const int w = 21, h = 11;
  std::mt19937 rng(420);
  std::vector<uint8_t> in(size_t(w) * h * 4);
  for (uint8_t &b : in)
    b = uint8_t(rng());
  ResourceDesc r;
  r.kind = ResourceDesc::Kind::Array;
  r.format.bits[0] = r.format.bits[1] = r.format.bits[2] = r.format.bits[3] = 8;
  r.format.kind = ChannelKind::Unsigned;
  r.width = w;
  r.height = h;
  r.address = up(in).addr;
  uint64_t si = surface(r);
  Buf bo = alloc(in.size());
  r.address = bo.addr;
  uint64_t so = surface(r);
  ASSERT_TRUE(launch(ptx("texture"), "surf_invert",
                     {ceilDiv(w, 16), ceilDiv(h, 16), 1}, {16, 16, 1}, 0,
                     {si, so, w, h}));
  std::vector<uint8_t> want = in;
  for (size_t k = 0; k < want.size(); ++k)
    if (k % 4 != 3)
      want[k] = uint8_t(255 - want[k]);
  EXPECT_TRUE(sameBits(down<uint8_t>(bo), want));
}

// txq and suq.
TEST_P(TextureDiff, tex_query) {
  RefTex t = randomTex(13, 4, 430);
  t.linear = t.normalized = true;
  uint64_t tex = texture(float4Array(t), desc(t));
  ResourceDesc r = float4Array(t);
  r.width = 3;
  r.height = 2;
  uint64_t surf = surface(r);
  Buf bo = alloc(32);
  ASSERT_TRUE(launch(ptx("texture"), "tex_query", {1, 1, 1}, {1, 1, 1}, 0,
                     {tex, surf, bo}));
  EXPECT_TRUE(sameBits(down<int32_t>(bo),
                       std::vector<int32_t>{13, 4, 0, 1, 1, 1, 3, 2}));
}

// A handle reaches nothing it should not: a destroyed object, a surface
// used as a texture and an object whose memory was freed all fault, and an
// object cannot be made over memory outside one allocation.
TEST_P(TextureDiff, invalid_objects_fault) {
  if (GetParam().strategy.name != "plain")
    GTEST_SKIP() << "checked once";
  RefTex t = randomTex(4, 4, 440);
  ResourceDesc r = float4Array(t);
  const int n = 1;
  std::vector<float> c{1.0f, 1.0f};
  Buf bc = up(c), bo = alloc(16);
  auto run = [&](uint64_t h) {
    return launch(ptx("texture"), "tex2d_sample", {1, 1, 1}, {1, 1, 1}, 0,
                  {h, bo, bc, n});
  };
  auto h = device().createTextureObject(r, desc(t));
  ASSERT_TRUE(bool(h)) << llvm::toString(h.takeError());
  ASSERT_TRUE(run(*h));
  ASSERT_FALSE(bool(device().destroyTextureObject(*h)));
  ::testing::AssertionResult destroyed = run(*h);
  EXPECT_FALSE(destroyed);
  EXPECT_NE(std::string(destroyed.message()).find("does not exist"),
            std::string::npos)
      << destroyed.message();
  uint64_t s = surface(r);
  EXPECT_FALSE(run(s));
  EXPECT_FALSE(run(0x12345678));
  // Over a range that runs past the allocation.
  ResourceDesc big = r;
  big.width = 5;
  auto bad = device().createTextureObject(big, desc(t));
  EXPECT_FALSE(bool(bad));
  llvm::consumeError(bad.takeError());
  // Extents whose bytes overflow 64 bits (2^30 x 2^30 x 2^30 float4
  // texels) must not wrap into a small span.
  for (ResourceDesc::Kind kind :
       {ResourceDesc::Kind::Array, ResourceDesc::Kind::Pitch2D}) {
    ResourceDesc huge = r;
    huge.kind = kind;
    huge.width = huge.height = uint64_t(1) << 30;
    huge.depth = kind == ResourceDesc::Kind::Array ? uint64_t(1) << 30 : 0;
    huge.pitch = uint64_t(1) << 34;
    auto wrapped = device().createTextureObject(huge, desc(t));
    EXPECT_FALSE(bool(wrapped));
    llvm::consumeError(wrapped.takeError());
  }
  // Memory freed under a live object.
  auto mem = device().memory().allocate(256);
  ASSERT_TRUE(bool(mem));
  ResourceDesc r2 = r;
  r2.address = *mem;
  auto h2 = device().createTextureObject(r2, desc(t));
  ASSERT_TRUE(bool(h2)) << llvm::toString(h2.takeError());
  textures.push_back(*h2);
  ASSERT_FALSE(bool(device().memory().free(*mem)));
  ::testing::AssertionResult freed = run(*h2);
  EXPECT_FALSE(freed);
  EXPECT_NE(std::string(freed.message()).find("freed"), std::string::npos)
      << freed.message();
}

//===----------------------------------------------------------------------===//
// bulkcopy.cu: mbarriers, cp.async.bulk, cp.reduce.async.bulk, elect.sync,
// stmatrix (sm_90 and compute_120; the sm_80 build takes the plain paths)
//===----------------------------------------------------------------------===//

/// Whether the strategy refuses bulkcopy.cu (wooly-isolate refuses bulk
/// copies with a located "not supported yet").
bool refusesBulkCopies(CorpusDiff &t, const std::string &file);

TEST_P(CorpusDiff, bulk_scale) {
  if (refusesBulkCopies(*this, ptx("bulkcopy")))
    GTEST_SKIP() << "the strategy refuses bulk copies";
  // 13 tiles over 5 blocks: each block runs its two-stage pipeline over
  // two or three tiles, both mbarriers through several phases.
  const int tiles = 13;
  auto x = randF(tiles * 256, -100, 100, 120);
  float s = 1.7f;
  Buf bx = up(x), bo = up(std::vector<float>(tiles * 256, -1.0f));
  ASSERT_TRUE(launch(ptx("bulkcopy"), "bulk_scale", {5, 1, 1}, {256, 1, 1}, 0,
                     {bx, bo, s, tiles}));
  std::vector<float> want(tiles * 256);
  for (int i = 0; i < tiles * 256; ++i)
    want[i] = x[i] * s;
  EXPECT_TRUE(sameBits(down<float>(bo), want));
}

TEST_P(CorpusDiff, barrier_rotate) {
  if (refusesBulkCopies(*this, ptx("bulkcopy")))
    GTEST_SKIP() << "the strategy refuses bulk copies";
  const int blocks = 7;
  auto x = randI<int32_t>(blocks * 128, -1000000, 1000000, 121);
  Buf bx = up(x), bo = alloc(blocks * 128 * 4);
  ASSERT_TRUE(launch(ptx("bulkcopy"), "barrier_rotate", {blocks, 1, 1},
                     {128, 1, 1}, 0, {bx, bo}));
  std::vector<int32_t> want(blocks * 128);
  for (int b = 0; b < blocks; ++b)
    for (int i = 0; i < 128; ++i)
      want[b * 128 + i] = x[b * 128 + (i + 1) % 128];
  EXPECT_TRUE(sameBits(down<int32_t>(bo), want));
}

TEST_P(CorpusDiff, bulk_reduce_add) {
  if (refusesBulkCopies(*this, ptx("bulkcopy")))
    GTEST_SKIP() << "the strategy refuses bulk copies";
  // Integer sums wrap the same in any order.
  const int tiles = 11;
  auto x = randI<int32_t>(tiles * 256, -2000000000, 2000000000, 122);
  Buf bx = up(x), ba = up(std::vector<int32_t>(256, 0));
  ASSERT_TRUE(launch(ptx("bulkcopy"), "bulk_reduce_add", {4, 1, 1}, {256, 1, 1},
                     0, {bx, ba, tiles}));
  std::vector<int32_t> want(256, 0);
  for (int t = 0; t < tiles; ++t)
    for (int i = 0; i < 256; ++i)
      want[i] = int32_t(uint32_t(want[i]) + uint32_t(x[t * 256 + i]));
  EXPECT_TRUE(sameBits(down<int32_t>(ba), want));
}

TEST_P(CorpusDiff, stmatrix_elect) {
  if (refusesBulkCopies(*this, ptx("bulkcopy")))
    GTEST_SKIP() << "the strategy refuses the module's bulk copies";
  const int blocks = 3, warps = 2 * blocks;
  auto x = randI<uint32_t>(warps * 128, 0, 0xffffffffu, 123);
  Buf bx = up(x), bo = alloc(warps * 256 * 2),
      bl = up(std::vector<uint32_t>(warps, 7));
  ASSERT_TRUE(launch(ptx("bulkcopy"), "stmatrix_elect", {blocks, 1, 1},
                     {64, 1, 1}, 0, {bx, bo, bl}));
  // Lane l's word j holds row l/4, columns 2(l%4) and 2(l%4)+1 of matrix
  // j, low half first; .trans stores each matrix transposed.
  std::vector<uint16_t> want(warps * 256);
  for (int w = 0; w < warps; ++w)
    for (int l = 0; l < 32; ++l)
      for (int j = 0; j < 4; ++j) {
        uint32_t v = x[w * 128 + 4 * l + j];
        int r = l / 4, c = 2 * (l % 4);
        want[w * 256 + j * 64 + c * 8 + r] = uint16_t(v);
        want[w * 256 + j * 64 + (c + 1) * 8 + r] = uint16_t(v >> 16);
      }
  EXPECT_TRUE(sameBits(down<uint16_t>(bo), want));
  // Lane 0 is the leader of a full warp: leader[w] = 0 + 100 * 1.
  EXPECT_TRUE(sameBits(down<uint32_t>(bl), std::vector<uint32_t>(warps, 100)));
}

bool refusesBulkCopies(CorpusDiff &t, const std::string &file) {
  return t.refusesBulk(file);
}

std::vector<Variant> variants() {
  std::vector<Variant> out;
  for (const wooly::test::Strategy &s : wooly::test::allStrategies())
    for (const char *arch : {"sm_80", "sm_90", "sm_120"})
      out.push_back({arch, s});
  return out;
}

/// A test's name suffix: the architecture and the strategy.
std::string variantName(const ::testing::TestParamInfo<Variant> &i) {
  return i.param.arch + (i.param.strategy.name == "plain"
                             ? std::string()
                             : "_" + i.param.strategy.name);
}

INSTANTIATE_TEST_SUITE_P(Arch, CorpusDiff, ::testing::ValuesIn(variants()),
                         variantName);
INSTANTIATE_TEST_SUITE_P(Arch, TextureDiff, ::testing::ValuesIn(variants()),
                         variantName);

} // namespace
