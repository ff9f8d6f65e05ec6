//===- GPUConversionsTest.cpp - The GPU lowerings' software conversions ---===//
//
// The GPU lowerings replace conversions that a chip lacks (sm_80:
// cvt.rn.{bf16,f16}.f64 and the OCP fp8 conversions; gfx942: all of them)
// by exact sequences of plain LLVM operations (gpu::f64ToHalf, f32ToFp8,
// fp8ToF16). Those operations mean the same on the host, so each sequence
// is built into an llvm.func here, JIT-compiled for the host with MLIR's
// ExecutionEngine, and compared bit for bit with an independent oracle,
// llvm::APFloat's conversions (round to nearest even; PTX's canonical NaNs
// and `.satfinite` saturation applied on top), as are the CPU backend's
// helpers (lib/Runtime/CPU/FloatHelpers.cpp) that implement the same
// instructions: every fp8 value, and millions of raw-bit f64/f32 inputs
// plus the edge cases (zeros, subnormals, rounding ties, the overflow
// threshold, infinities, NaNs).
//
//===----------------------------------------------------------------------===//

#include "GPULowering.h"

#include "Wooly/Runtime/CPU/FloatHelpers.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/bit.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

using namespace mlir;
using namespace mlir::wooly::gpu;

namespace {

using llvm::APFloat;

/// PTX's canonical NaNs: f16 and bf16, and the fp8 formats.
constexpr uint32_t kHalfNaN = 0x7fff, kFp8NaN = 0x7f;

/// The oracle: `x` converted to `sem` by APFloat, rounded to nearest even,
/// as bits; a NaN gives `nan`.
uint32_t
convertBits(APFloat x, const llvm::fltSemantics &sem, uint32_t nan,
            APFloat::roundingMode mode = APFloat::rmNearestTiesToEven) {
  if (x.isNaN())
    return nan;
  bool losesInfo;
  x.convert(sem, mode, &losesInfo);
  return uint32_t(x.bitcastToAPInt().getZExtValue());
}

/// The oracle for `cvt.rn.satfinite.{e4m3,e5m2}`: rounded to nearest even,
/// an infinity or an overflow saturates to the largest finite value of its
/// sign (e4m3 has no infinity: APFloat overflows it to NaN).
uint32_t satfiniteFp8Bits(float f, const llvm::fltSemantics &sem) {
  APFloat x(f);
  if (x.isNaN())
    return kFp8NaN;
  bool losesInfo;
  x.convert(sem, APFloat::rmNearestTiesToEven, &losesInfo);
  if (!x.isFinite())
    x = APFloat::getLargest(sem, std::signbit(f));
  return uint32_t(x.bitcastToAPInt().getZExtValue());
}

/// f32 -> bf16, round to nearest even (what the GPUs' cvt.rn.bf16.f32 does
/// and LLVM's `fptrunc float to bfloat` means). The JIT compiles for a
/// baseline x86-64 (a host with AVX512-BF16 would use vcvtneps2bf16, which
/// flushes subnormals), where that `fptrunc` calls `__truncsfbf2`; the
/// toolchain here has none, so the JIT gets this one. The x86-64 ABI
/// returns a bf16 in the low 16 bits of xmm0, hence the float whose bits
/// are the result. NaNs give the canonical NaN.
float truncSFBF2(float f) {
  return llvm::bit_cast<float>(
      convertBits(APFloat(f), APFloat::BFloat(), kHalfNaN));
}

/// The conversions, JIT-compiled: each takes the source bits or value and
/// returns the result's bits in a uint32_t.
class GPUConversionsTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  }

  void SetUp() override {
    registry.insert<LLVM::LLVMDialect>();
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    ctx = std::make_unique<MLIRContext>(registry);
    ctx->loadDialect<LLVM::LLVMDialect>();
    OpBuilder b(ctx.get());
    Location loc = b.getUnknownLoc();
    module = ModuleOp::create(loc);
    b.setInsertionPointToEnd(module->getBody());
    Type i32 = b.getI32Type(), f32 = b.getF32Type(), f64 = b.getF64Type();
    auto define = [&](StringRef name, Type arg,
                      llvm::function_ref<Value(Emitter &, Value)> body) {
      auto fn = LLVM::LLVMFuncOp::create(
          b, loc, name, LLVM::LLVMFunctionType::get(i32, {arg}));
      OpBuilder::InsertionGuard guard(b);
      Block *entry = fn.addEntryBlock(b);
      b.setInsertionPointToStart(entry);
      Emitter e{b, loc};
      LLVM::ReturnOp::create(b, loc, body(e, entry->getArgument(0)));
    };
    define("bf16_of_f64", f64, [&](Emitter &e, Value x) {
      return f64ToHalf(e, x, b.getBF16Type());
    });
    define("f16_of_f64", f64, [&](Emitter &e, Value x) {
      return f64ToHalf(e, x, b.getF16Type());
    });
    // The directed roundings: name, half type, direction.
    for (auto [name, half, d] :
         {std::tuple{"bf16_rz_of_f64", b.getBF16Type(), Directed::TowardZero},
          std::tuple{"bf16_rm_of_f64", b.getBF16Type(), Directed::Down},
          std::tuple{"bf16_rp_of_f64", b.getBF16Type(), Directed::Up},
          std::tuple{"f16_rz_of_f64", b.getF16Type(), Directed::TowardZero},
          std::tuple{"f16_rm_of_f64", b.getF16Type(), Directed::Down},
          std::tuple{"f16_rp_of_f64", b.getF16Type(), Directed::Up}})
      define(name, f64, [&, half = half, d = d](Emitter &e, Value x) {
        return f64ToHalfDirected(e, x, half, d);
      });
    define("e4m3_of_f32", f32,
           [&](Emitter &e, Value x) { return f32ToFp8(e, x, kE4M3); });
    define("e5m2_of_f32", f32,
           [&](Emitter &e, Value x) { return f32ToFp8(e, x, kE5M2); });
    define("f16_of_e4m3", i32,
           [&](Emitter &e, Value x) { return fp8ToF16(e, x, true); });
    define("f16_of_e5m2", i32,
           [&](Emitter &e, Value x) { return fp8ToF16(e, x, false); });
    ASSERT_TRUE(succeeded(module->verify()));
    // Baseline x86-64 (or the host's CPU elsewhere), without its features.
    llvm::Triple triple(llvm::sys::getProcessTriple());
    std::string err;
    const llvm::Target *target =
        llvm::TargetRegistry::lookupTarget(triple, err);
    ASSERT_TRUE(target) << err;
    std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
        triple, triple.isX86() ? "x86-64" : "generic", "", {}, std::nullopt));
    ASSERT_TRUE(tm);
    auto created = ExecutionEngine::create(*module, {}, std::move(tm));
    ASSERT_TRUE(bool(created)) << llvm::toString(created.takeError());
    engine = std::move(*created);
    engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
      llvm::orc::SymbolMap symbols;
      symbols[interner("__truncsfbf2")] = {
          llvm::orc::ExecutorAddr::fromPtr(&truncSFBF2),
          llvm::JITSymbolFlags::Exported};
      return symbols;
    });
  }

  /// The JIT-compiled function `name` as a `uint32_t (*)(Arg)`.
  template <typename Arg> uint32_t (*lookup(StringRef name))(Arg) {
    auto sym = engine->lookup(name);
    if (!sym) {
      ADD_FAILURE() << llvm::toString(sym.takeError());
      return nullptr;
    }
    return reinterpret_cast<uint32_t (*)(Arg)>(*sym);
  }

  DialectRegistry registry;
  std::unique_ptr<MLIRContext> ctx;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<ExecutionEngine> engine;
};

/// Raw-bit f64 inputs: random bits, plus values around every bf16/f16
/// rounding boundary that random bits rarely hit.
std::vector<uint64_t> f64Inputs(size_t n) {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> v;
  for (size_t i = 0; i < n; ++i)
    v.push_back(rng());
  // Exponents of every f16/bf16 scale, with ties and near-ties below the
  // 7th and 10th mantissa bits, random low bits, both signs.
  for (int exp = -140; exp <= 130; ++exp)
    for (uint64_t tail : {0ull, 1ull, (1ull << 41), (1ull << 44),
                          (1ull << 41) - 1, (1ull << 44) - 1, (1ull << 41) + 1,
                          (1ull << 44) + 1, (3ull << 41), (3ull << 44)})
      for (uint64_t sign : {0ull, 1ull << 63}) {
        uint64_t e = uint64_t(exp + 1023) << 52;
        v.push_back(sign | e | (tail & ((1ull << 52) - 1)));
        v.push_back(sign | e | ((rng() & ((1ull << 52) - 1)) | tail));
      }
  for (double d : {0.0, -0.0, 65504.0, 65520.0, 65519.99, 3.3895313892515355e38,
                   3.3961775292304611e38, 5.9604644775390625e-8,
                   2.9802322387695312e-8, 9.183549615799121e-41,
                   double(INFINITY), double(-INFINITY), double(NAN)})
    for (double s : {1.0, -1.0})
      v.push_back(llvm::bit_cast<uint64_t>(d * s));
  return v;
}

TEST_F(GPUConversionsTest, BF16AndF16OfF64) {
  auto bf16 = lookup<double>("bf16_of_f64");
  auto f16 = lookup<double>("f16_of_f64");
  ASSERT_TRUE(bf16 && f16);
  unsigned bad = 0;
  for (uint64_t bits : f64Inputs(1 << 21)) {
    double x = llvm::bit_cast<double>(bits);
    uint32_t want = convertBits(APFloat(x), APFloat::BFloat(), kHalfNaN);
    uint32_t want16 = convertBits(APFloat(x), APFloat::IEEEhalf(), kHalfNaN);
    uint32_t got = bf16(x), got16 = f16(x);
    uint32_t helper = __wooly_cvt_f64_bf16_rn(x);
    uint32_t helper16 = __wooly_cvt_f64_f16_rn(x);
    if ((got != want || got16 != want16 || helper != want ||
         helper16 != want16) &&
        ++bad <= 10)
      ADD_FAILURE() << "f64 bits 0x" << std::hex << bits << ": bf16 0x" << got
                    << " (helper 0x" << helper << ", APFloat 0x" << want
                    << "), f16 0x" << got16 << " (helper 0x" << helper16
                    << ", APFloat 0x" << want16 << ")";
  }
  EXPECT_EQ(bad, 0u);
}

// cvt.{rz,rm,rp}.{bf16,f16}: APFloat's directed roundings, and the CPU
// backend's helpers.
TEST_F(GPUConversionsTest, BF16AndF16OfF64Directed) {
  struct Case {
    const char *name;
    const llvm::fltSemantics &sem;
    APFloat::roundingMode mode;
    uint32_t (*helper)(double);
  };
  const Case cases[] = {
      {"bf16_rz_of_f64", APFloat::BFloat(), APFloat::rmTowardZero,
       __wooly_cvt_f64_bf16_rz},
      {"bf16_rm_of_f64", APFloat::BFloat(), APFloat::rmTowardNegative,
       __wooly_cvt_f64_bf16_rm},
      {"bf16_rp_of_f64", APFloat::BFloat(), APFloat::rmTowardPositive,
       __wooly_cvt_f64_bf16_rp},
      {"f16_rz_of_f64", APFloat::IEEEhalf(), APFloat::rmTowardZero,
       __wooly_cvt_f64_f16_rz},
      {"f16_rm_of_f64", APFloat::IEEEhalf(), APFloat::rmTowardNegative,
       __wooly_cvt_f64_f16_rm},
      {"f16_rp_of_f64", APFloat::IEEEhalf(), APFloat::rmTowardPositive,
       __wooly_cvt_f64_f16_rp},
  };
  std::vector<uint64_t> inputs = f64Inputs(1 << 19);
  for (const Case &c : cases) {
    auto fn = lookup<double>(c.name);
    ASSERT_TRUE(fn);
    unsigned bad = 0;
    for (uint64_t bits : inputs) {
      double x = llvm::bit_cast<double>(bits);
      uint32_t want = convertBits(APFloat(x), c.sem, kHalfNaN, c.mode);
      uint32_t got = fn(x), helper = c.helper(x);
      if ((got != want || helper != want) && ++bad <= 10)
        ADD_FAILURE() << c.name << " of f64 bits 0x" << std::hex << bits
                      << ": 0x" << got << " (helper 0x" << helper
                      << ", APFloat 0x" << want << ")";
    }
    EXPECT_EQ(bad, 0u) << c.name;
  }
}

TEST_F(GPUConversionsTest, Fp8OfF32) {
  auto e4 = lookup<float>("e4m3_of_f32");
  auto e5 = lookup<float>("e5m2_of_f32");
  ASSERT_TRUE(e4 && e5);
  std::mt19937 rng(7);
  std::vector<uint32_t> inputs;
  for (int i = 0; i < (1 << 21); ++i)
    inputs.push_back(rng());
  // Every f32 exponent with ties and near-ties below the 2nd/3rd mantissa
  // bits (the fp8 formats' precision) and for their subnormals.
  for (uint32_t exp = 0; exp < 256; ++exp)
    for (uint32_t tail :
         {0u, 1u, 1u << 19, 1u << 20, (1u << 19) - 1, (1u << 20) - 1,
          (1u << 19) + 1, (1u << 20) + 1, 3u << 19, 3u << 20, 0x7fffffu})
      for (uint32_t sign : {0u, 0x80000000u})
        inputs.push_back(sign | exp << 23 | (tail & 0x7fffff));
  unsigned bad = 0;
  for (uint32_t bits : inputs) {
    float x = llvm::bit_cast<float>(bits);
    uint32_t w4 = satfiniteFp8Bits(x, APFloat::Float8E4M3FN());
    uint32_t w5 = satfiniteFp8Bits(x, APFloat::Float8E5M2());
    uint32_t g4 = e4(x), g5 = e5(x);
    uint32_t h4 = __wooly_cvt_f64_e4m3_rn_satfinite(double(x));
    uint32_t h5 = __wooly_cvt_f64_e5m2_rn_satfinite(double(x));
    if ((g4 != w4 || g5 != w5 || h4 != w4 || h5 != w5) && ++bad <= 10)
      ADD_FAILURE() << "f32 bits 0x" << std::hex << bits << ": e4m3 0x" << g4
                    << " (helper 0x" << h4 << ", APFloat 0x" << w4
                    << "), e5m2 0x" << g5 << " (helper 0x" << h5
                    << ", APFloat 0x" << w5 << ")";
  }
  EXPECT_EQ(bad, 0u);
}

TEST_F(GPUConversionsTest, F16OfEveryFp8) {
  auto e4 = lookup<uint32_t>("f16_of_e4m3");
  auto e5 = lookup<uint32_t>("f16_of_e5m2");
  ASSERT_TRUE(e4 && e5);
  // Exact conversions; only the low byte counts.
  for (uint32_t v = 0; v < 256; ++v) {
    uint32_t w4 =
        convertBits(APFloat(APFloat::Float8E4M3FN(), llvm::APInt(8, v)),
                    APFloat::IEEEhalf(), kHalfNaN);
    uint32_t w5 = convertBits(APFloat(APFloat::Float8E5M2(), llvm::APInt(8, v)),
                              APFloat::IEEEhalf(), kHalfNaN);
    EXPECT_EQ(__wooly_cvt_e4m3_f16(v), w4) << "helper, e4m3 0x" << v;
    EXPECT_EQ(__wooly_cvt_e5m2_f16(v), w5) << "helper, e5m2 0x" << v;
    for (uint32_t high : {0u, 0xabcd00u}) {
      EXPECT_EQ(e4(v | high), w4) << "e4m3 0x" << v;
      EXPECT_EQ(e5(v | high), w5) << "e5m2 0x" << v;
    }
  }
}

} // namespace
