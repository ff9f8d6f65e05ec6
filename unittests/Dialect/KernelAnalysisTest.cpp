//===- KernelAnalysisTest.cpp - Kernel analyses and occupancy ----*- C++
//-*-===//

#include "Wooly/Dialect/Wooly/Analysis/KernelAnalysis.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/InitAllDialects.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <map>

using namespace mlir;
using namespace mlir::wooly;

namespace {
/// A kernel with a 4 KiB shared tile that reads its first parameter and
/// writes its second.
const char *kModule = R"(
wooly.global shared @tile : f32[1024] align 4
wooly.func @k(%in: i64 {wooly.type = "u64"}, %out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %t = wooly.addressof @tile : i32
  %v = wooly.ld global %in : i64 -> f32
  wooly.st shared %t, %v : i32, f32
  %c0 = arith.constant 0 : i32
  wooly.barrier %c0
  %w = wooly.ld shared %t : i32 -> f32
  wooly.st global %out, %w : i64, f32
  wooly.ret
}
)";

KernelSummary analyze(MLIRContext &ctx) {
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(kModule, &ctx);
  EXPECT_TRUE(bool(m));
  std::vector<KernelSummary> all = analyzeKernels(*m);
  EXPECT_EQ(all.size(), 1u);
  return all.empty() ? KernelSummary() : all[0];
}

TEST(KernelAnalysis, ParametersSharedMemoryAndBarriers) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  KernelSummary s = analyze(ctx);
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_TRUE(s.params[0].isReadOnlyPointer());
  EXPECT_TRUE(s.params[1].written);
  EXPECT_FALSE(s.params[1].isReadOnlyPointer());
  EXPECT_EQ(s.staticSharedBytes, 4096u);
  EXPECT_TRUE(s.usesBarriers);
  EXPECT_FALSE(s.usesWarpCollectives);
  EXPECT_GT(s.registerEstimate, 0u);
  EXPECT_GT(s.costHint, 0u);
}

TEST(KernelAnalysis, OccupancyIsLimitedByEachResource) {
  KernelSummary s;
  s.registerEstimate = 32;
  // Threads: 2048 per SM / 256 per block = 8 blocks.
  EXPECT_EQ(estimateBlocksPerSM(s, 256), 8u);
  // Registers: 128 registers x 256 threads = 32768 per block -> 2 blocks.
  s.registerEstimate = 128;
  EXPECT_EQ(estimateBlocksPerSM(s, 256), 2u);
  // Shared memory: 100 KiB per block -> 2 blocks in 228 KiB.
  s.registerEstimate = 16;
  s.staticSharedBytes = 100 * 1024;
  EXPECT_EQ(estimateBlocksPerSM(s, 64), 2u);
  // Dynamic shared memory counts too: 100 + 20 KiB -> 1 block.
  EXPECT_EQ(estimateBlocksPerSM(s, 64, 20 * 1024), 1u);
  // The block limit: tiny blocks are capped at 32 per SM.
  s.staticSharedBytes = 0;
  EXPECT_EQ(estimateBlocksPerSM(s, 32), 32u);
  // A block too large for the SM gives 0.
  EXPECT_EQ(estimateBlocksPerSM(s, 4096), 0u);
}
/// Kernels whose barriers and warp collectives are, or are not, in one
/// chain of dominance outside loops.
const char *kSplitModule = R"(
wooly.func @helper() {
  %c0 = arith.constant 0 : i32
  wooly.barrier %c0
  wooly.ret
}
wooly.func @uniform(%n: i32 {wooly.type = "u32"}) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c31 = arith.constant 31 : i32
  %cm1 = arith.constant -1 : i32
  %t = wooly.sreg tid x : i32
  %early = arith.cmpi uge, %t, %n : i32
  cf.cond_br %early, ^done, ^work
^work:
  %r, %ok = wooly.shfl bfly %t, %c1, %c31, %cm1 : i32
  wooly.barrier %c0
  %late = arith.cmpi ugt, %t, %c31 : i32
  cf.cond_br %late, ^done, ^warp0
^warp0:
  %r2, %ok2 = wooly.shfl bfly %r, %c1, %c31, %cm1 : i32
  cf.br ^done
^done:
  wooly.ret
}
wooly.func @looped(%n: i32 {wooly.type = "u32"}) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  cf.br ^loop(%c0 : i32)
^loop(%i: i32):
  wooly.barrier %c0
  %i1 = arith.addi %i, %c1 : i32
  %more = arith.cmpi ult, %i1, %n : i32
  cf.cond_br %more, ^loop(%i1 : i32), ^done
^done:
  wooly.ret
}
wooly.func @divergent(%n: i32 {wooly.type = "u32"}) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c31 = arith.constant 31 : i32
  %cm1 = arith.constant -1 : i32
  %t = wooly.sreg tid x : i32
  %odd = arith.cmpi uge, %t, %n : i32
  cf.cond_br %odd, ^a, ^join
^a:
  %r, %ok = wooly.shfl bfly %t, %c1, %c31, %cm1 : i32
  cf.br ^join
^join:
  wooly.barrier %c0
  wooly.ret
}
wooly.func @named() attributes {kernel} {
  %c1 = arith.constant 1 : i32
  wooly.barrier %c1
  wooly.ret
}
wooly.func @calls() attributes {kernel} {
  wooly.call @helper() : () -> ()
  wooly.ret
}
)";

TEST(KernelAnalysis, RegionSplitBlockers) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(kSplitModule, &ctx);
  ASSERT_TRUE(bool(m));
  auto blocker = [&](StringRef name) {
    auto f = m->lookupSymbol<FuncOp>(name);
    EXPECT_TRUE(bool(f)) << name.str();
    return f ? regionSplitBlocker(
                   f, [](StringRef callee) { return callee == "helper"; })
             : std::string("?");
  };
  // Threads may leave early; warp 0 alone at the last shuffle is fine.
  EXPECT_EQ(blocker("uniform"), "");
  // Cuts in loops and in divergent code run under the fiber scheduler's
  // rules in region mode too.
  EXPECT_EQ(blocker("looped"), "");
  EXPECT_EQ(blocker("divergent"), "");
  EXPECT_EQ(blocker("named"),
            "a named barrier, bar.arrive or a barrier thread count");
  EXPECT_EQ(blocker("calls"), "a call to a function that synchronises");
}

/// Writes the analysis can and cannot name (deduplication relies on it: a
/// kernel that may write memory no parameter names makes every shared
/// buffer of its tenant private before it runs).
const char *kWritesModule = R"(
wooly.global global @counter : i32[1] align 4
wooly.global shared @tile : i32[64] align 4
wooly.func @helper() {
  wooly.ret
}
wooly.func @through_params(%in: i64 {wooly.type = "u64"}, %out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %v = wooly.ld global %in : i64 -> i32
  %c4 = arith.constant 4 : i64
  %p = arith.addi %out, %c4 : i64
  wooly.st global %p, %v : i64, i32
  %t = wooly.addressof @tile : i32
  wooly.st shared %t, %v : i32, i32
  %g = wooly.addressof @counter : i64
  wooly.st global %g, %v : i64, i32
  wooly.ret
}
wooly.func @through_loaded(%in: i64 {wooly.type = "u64"}) attributes {kernel} {
  %p = wooly.ld global %in : i64 -> i64
  %c1 = arith.constant 1 : i32
  wooly.st global %p, %c1 : i64, i32
  wooly.ret
}
wooly.func @param_plus_loaded(%in: i64 {wooly.type = "u64"}) attributes {kernel} {
  %o = wooly.ld global %in : i64 -> i64
  %p = arith.addi %in, %o : i64
  %c1 = arith.constant 1 : i32
  wooly.st global %p, %c1 : i64, i32
  wooly.ret
}
wooly.func @to_constant() attributes {kernel} {
  %a = arith.constant 4096 : i64
  %c1 = arith.constant 1 : i32
  wooly.st global %a, %c1 : i64, i32
  wooly.ret
}
wooly.func @calls(%in: i64 {wooly.type = "u64"}) attributes {kernel} {
  %v = wooly.ld global %in : i64 -> i32
  wooly.call @helper() : () -> ()
  wooly.ret
}
)";

TEST(KernelAnalysis, WritesToMemoryNoParameterNames) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(kWritesModule, &ctx);
  ASSERT_TRUE(bool(m));
  std::map<std::string, KernelSummary> byName;
  for (KernelSummary &s : analyzeKernels(*m))
    byName[s.name] = s;
  ASSERT_EQ(byName.size(), 5u);
  const KernelSummary &params = byName["through_params"];
  EXPECT_FALSE(params.writesUnknownMemory);
  EXPECT_TRUE(params.params[0].isReadOnlyPointer());
  EXPECT_TRUE(params.params[1].written);
  EXPECT_TRUE(byName["through_loaded"].writesUnknownMemory);
  EXPECT_TRUE(byName["through_loaded"].params[0].isReadOnlyPointer());
  // The parameter is marked written, but the loaded offset may take the
  // address anywhere.
  EXPECT_TRUE(byName["param_plus_loaded"].writesUnknownMemory);
  EXPECT_TRUE(byName["param_plus_loaded"].params[0].written);
  EXPECT_TRUE(byName["to_constant"].writesUnknownMemory);
  EXPECT_TRUE(byName["calls"].writesUnknownMemory);
}
} // namespace
