//===- ImporterLimitsTest.cpp - importPTX on very large inputs -*- C++ -*-===//
//
// Valid PTX can be arbitrarily long and deeply structured; hostile PTX can
// nest operands without end. These tests check that the importer neither
// overflows its stack nor explodes in memory, and reports located errors.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Target/PTX/PTXImporter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "gtest/gtest.h"

#include <string>

using namespace mlir;

namespace {

/// Imports `ptx`, collecting the first error message.
OwningOpRef<ModuleOp> importText(MLIRContext &ctx, const std::string &ptx,
                                 std::string &firstError) {
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (firstError.empty())
      firstError = d.str();
    return success();
  });
  return wooly::importPTX(ptx, "limits.ptx", &ctx);
}

const char *kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

// 50,000 guarded stores make a chain of 50,000 join blocks; a register
// written before them and read after them is looked up through all of them.
TEST(PTXImporterLimits, LongChainOfGuardedStores) {
  std::string ptx = kHeader;
  ptx += ".visible .entry k(.param .u64 p)\n{\n"
         "  .reg .b64 %rd<2>;\n  .reg .b32 %r<3>;\n  .reg .pred %p<2>;\n"
         "  ld.param.u64 %rd1, [p];\n  mov.u32 %r1, 5;\n"
         "  setp.ne.u64 %p1, %rd1, 0;\n";
  for (int i = 0; i < 50000; ++i)
    ptx += "  @%p1 st.global.u32 [%rd1], %r2;\n";
  ptx += "  st.global.u32 [%rd1], %r1;\n  ret;\n}\n";
  MLIRContext ctx;
  std::string err;
  auto module = importText(ctx, ptx, err);
  ASSERT_TRUE(module) << err;
  EXPECT_TRUE(succeeded(verify(*module)));
}

// 50,000 guarded branches to the next line: a chain of 50,000 join blocks,
// each with its own scoped label; reading a register at the end walks them
// all (with worklists, not recursion, so the caller's stack suffices).
TEST(PTXImporterLimits, LongChainOfJoins) {
  std::string ptx = kHeader;
  ptx += ".visible .entry k(.param .u64 o)\n{\n"
         "  .reg .pred p;\n  .reg .b32 a;\n  .reg .b64 r;\n"
         "  ld.param.u64 r, [o];\n  mov.u32 a, 1;\n  setp.eq.u32 p, a, 0;\n";
  for (int i = 0; i < 50000; ++i)
    ptx += "  { @p bra L; L: }\n";
  ptx += "  st.global.u32 [r], a;\n  ret;\n}\n";
  MLIRContext ctx;
  std::string err;
  auto module = importText(ctx, ptx, err);
  ASSERT_TRUE(module) << err;
  EXPECT_TRUE(succeeded(verify(*module)));
}

// Guarded arithmetic becomes selects: no blocks at all.
TEST(PTXImporterLimits, GuardedArithmeticNeedsNoBlocks) {
  std::string ptx = kHeader;
  ptx += ".visible .entry k(.param .u64 p)\n{\n"
         "  .reg .b64 %rd<2>;\n  .reg .b32 %r<3>;\n  .reg .pred %p<2>;\n"
         "  ld.param.u64 %rd1, [p];\n  mov.u32 %r1, 5;\n"
         "  setp.ne.u64 %p1, %rd1, 0;\n";
  for (int i = 0; i < 1000; ++i)
    ptx += "  @%p1 add.s32 %r1, %r1, 1;\n";
  ptx += "  st.global.u32 [%rd1], %r1;\n  ret;\n}\n";
  MLIRContext ctx;
  std::string err;
  auto module = importText(ctx, ptx, err);
  ASSERT_TRUE(module) << err;
  size_t blocks = 0;
  module->walk([&](Block *) { ++blocks; });
  EXPECT_EQ(blocks, 2u); // the module body and the kernel's entry block
}

// Operands nest at most a few levels; deeper nesting is a located error.
TEST(PTXImporterLimits, DeepOperandNestingIsAnError) {
  for (const char *open : {"{", "!", "("}) {
    std::string ptx = kHeader;
    ptx += ".visible .entry k()\n{\n  .reg .pred %p<3>;\n  not.pred %p1, ";
    for (int i = 0; i < 100000; ++i)
      ptx += open;
    ptx += "%p2;\n  ret;\n}\n";
    MLIRContext ctx;
    std::string err;
    auto module = importText(ctx, ptx, err);
    EXPECT_FALSE(module);
    EXPECT_EQ(err, "operand nesting too deep") << open;
  }
}

// A huge register range costs nothing until its registers are used.
TEST(PTXImporterLimits, HugeRegisterRangeIsLazy) {
  std::string ptx = kHeader;
  ptx += ".visible .entry k()\n{\n  .reg .b32 %r<16777216>;\n"
         "  mov.u32 %r16777215, 1;\n  ret;\n}\n";
  MLIRContext ctx;
  std::string err;
  auto module = importText(ctx, ptx, err);
  ASSERT_TRUE(module) << err;
}

} // namespace
