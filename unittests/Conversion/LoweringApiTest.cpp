//===- LoweringApiTest.cpp - The public WoolyLLVMLowering API -----*- C++
//-*-===//
//
// A pipeline that builds its own conversion from the exported pieces
// (prepareWoolyTo*Lowering, populateWoolyTo*ConversionPatterns,
// configureTarget, finalize) gets what the passes produce.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Conversion/Passes.h"
#include "Wooly/InitAllDialects.h"

#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <functional>
#include <string>

using namespace mlir;

namespace {

/// A kernel with a global variable, a parameter address and a store: the
/// module-wide preparation (globals, parameter layout) and the patterns are
/// both needed.
constexpr const char *kModule = R"mlir(
wooly.global global @g : i32[4] align 4
wooly.func @k(%n: i32 {wooly.type = "u32"}, %out: i64 {wooly.type = "u64"})
    attributes {kernel, linkage = "visible"} {
  %a = wooly.addressof @g : i64
  %p = wooly.param_address 0 : i64
  %v = wooly.ld param %p : i64 -> i32
  wooly.st global %out, %v : i64, i32
  wooly.st global %a, %n : i64, i32
  wooly.exit
}
)mlir";

using Prepare =
    std::function<FailureOr<std::unique_ptr<wooly::WoolyLLVMLowering>>(
        ModuleOp)>;
using Populate = void (*)(const LLVMTypeConverter &, RewritePatternSet &,
                          wooly::WoolyLLVMLowering &);

/// The module lowered by `pass` (a module pass), or by the API.
std::string lower(MLIRContext &ctx, StringRef pass, Prepare prepare,
                  Populate populate) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &ctx);
  if (!module)
    return "parse error";
  if (!pass.empty()) {
    // `pm` is anchored on builtin.module: the pass goes in as it is.
    PassManager pm(&ctx);
    if (failed(parsePassPipeline(pass, pm)) || failed(pm.run(*module)))
      return "pass failed";
  } else {
    auto lowering = prepare(*module);
    if (failed(lowering))
      return "prepare failed";
    LLVMTypeConverter converter(&ctx);
    RewritePatternSet patterns(&ctx);
    populate(converter, patterns, **lowering);
    LLVMConversionTarget target(ctx);
    (*lowering)->configureTarget(target);
    if (failed(applyFullConversion(*module, target, std::move(patterns))))
      return "conversion failed";
    (*lowering)->finalize(*module);
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  return text;
}

class LoweringApi : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    wooly::registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    wooly::registerWoolyConversionPasses();
  }
  MLIRContext ctx;
};

TEST_F(LoweringApi, HostMatchesThePass) {
  std::string api = lower(
      ctx, "", [](ModuleOp m) { return wooly::prepareWoolyToLLVMLowering(m); },
      wooly::populateWoolyToLLVMConversionPatterns);
  EXPECT_NE(api.find("llvm.func @__wooly_kernel_k"), std::string::npos) << api;
  EXPECT_NE(api.find("__wooly_g_g"), std::string::npos) << api;
  EXPECT_EQ(api, lower(ctx, "convert-wooly-to-llvm", {}, {}));
}

TEST_F(LoweringApi, NVVMMatchesThePass) {
  std::string api = lower(
      ctx, "",
      [](ModuleOp m) { return wooly::prepareWoolyToNVVMLowering(m, "sm_90"); },
      wooly::populateWoolyToNVVMConversionPatterns);
  EXPECT_NE(api.find("nvvm.kernel"), std::string::npos) << api;
  EXPECT_EQ(api, lower(ctx, "convert-wooly-to-nvvm{chip=sm_90}", {}, {}));
}

TEST_F(LoweringApi, ROCDLMatchesThePass) {
  std::string api = lower(
      ctx, "",
      [](ModuleOp m) {
        return wooly::prepareWoolyToROCDLLowering(m, "gfx942");
      },
      wooly::populateWoolyToROCDLConversionPatterns);
  EXPECT_NE(api.find("rocdl.kernel"), std::string::npos) << api;
  EXPECT_EQ(api, lower(ctx, "convert-wooly-to-rocdl{chip=gfx942}", {}, {}));
}

// A bad chip is a located error, not a crash.
TEST_F(LoweringApi, BadChipIsAnError) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &ctx);
  ASSERT_TRUE(module);
  std::string diag;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    diag = d.str();
    return success();
  });
  EXPECT_TRUE(failed(wooly::prepareWoolyToNVVMLowering(*module, "gfx942")));
  EXPECT_NE(diag.find("bad chip 'gfx942'"), std::string::npos) << diag;
  EXPECT_TRUE(failed(wooly::prepareWoolyToROCDLLowering(*module, "sm_90")));
  EXPECT_NE(diag.find("unsupported chip 'sm_90'"), std::string::npos) << diag;
}

} // namespace
