//===- CompilerTest.cpp - The compile API and its cache key -----*- C++ -*-===//

#include "Wooly/Compiler/Compiler.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

using namespace wooly;

namespace {
const char *kPTX = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

CompileInput ptx(std::string text = kPTX) {
  CompileInput in;
  in.text = std::move(text);
  in.name = "k.ptx";
  return in;
}

Target host() { return llvm::cantFail(Target::parse("host")); }

TEST(CacheKey, StableForTheSameCompilation) {
  EXPECT_EQ(cacheKey(ptx(), host(), {}), cacheKey(ptx(), host(), {}));
  EXPECT_EQ(cacheKey(ptx(), host(), {}).size(), 64u); // SHA-256 in hex.
}

TEST(CacheKey, ChangesWithEverythingThatAffectsTheOutput) {
  std::string base = cacheKey(ptx(), host(), {});
  // Input text (even one character).
  EXPECT_NE(base, cacheKey(ptx(std::string(kPTX) + " "), host(), {}));
  // Input kind.
  CompileInput mlir = ptx();
  mlir.kind = CompileInput::Kind::MLIR;
  EXPECT_NE(base, cacheKey(mlir, host(), {}));
  // Target.
  EXPECT_NE(base, cacheKey(ptx(), llvm::cantFail(Target::parse("sm_90")), {}));
  EXPECT_NE(cacheKey(ptx(), llvm::cantFail(Target::parse("sm_80")), {}),
            cacheKey(ptx(), llvm::cantFail(Target::parse("sm_90")), {}));
  // Options.
  CompileOptions o1;
  o1.optLevel = 3;
  EXPECT_NE(base, cacheKey(ptx(), host(), o1));
  CompileOptions o2;
  o2.boundsChecks = false;
  EXPECT_NE(base, cacheKey(ptx(), host(), o2));
  // The kernels selected: all (none given), none, one.
  CompileOptions none, one;
  none.kernels.emplace();
  one.kernels = std::vector<std::string>{"k"};
  EXPECT_NE(base, cacheKey(ptx(), host(), none));
  EXPECT_NE(base, cacheKey(ptx(), host(), one));
  EXPECT_NE(cacheKey(ptx(), host(), none), cacheKey(ptx(), host(), one));
  // The name of the input is not part of the output.
  CompileInput renamed = ptx();
  renamed.name = "other.ptx";
  EXPECT_EQ(base, cacheKey(renamed, host(), {}));
}

TEST(Target, ParsesAndRejects) {
  EXPECT_EQ(llvm::cantFail(Target::parse("sm_90")).str(), "sm_90");
  EXPECT_EQ(llvm::cantFail(Target::parse("gfx942")).kind, Target::Kind::AMDGCN);
  auto bad = Target::parse("tpu");
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("unknown target 'tpu'"),
            std::string::npos);
}

TEST(Compile, HostModuleHasKernelMetadata) {
  auto m = compile(ptx(), host(), {});
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  ASSERT_EQ(m->kernels.size(), 1u);
  const KernelInfo &k = m->kernels[0];
  EXPECT_EQ(k.name, "k");
  EXPECT_EQ(k.paramOffsets, (std::vector<uint64_t>{0, 8}));
  EXPECT_EQ(k.paramSizes, (std::vector<uint64_t>{8, 4}));
  EXPECT_EQ(k.paramBufferSize, 12u);
  EXPECT_FALSE(k.needsFibers);
  // The pointer is written through; the u32 is not a pointer.
  EXPECT_EQ(k.readOnlyParams, (std::vector<bool>{false, false}));
  EXPECT_GT(k.costHint, 0u);
  EXPECT_FALSE(m->binary.empty());
  EXPECT_EQ(m->key, cacheKey(ptx(), host(), {}));
}

TEST(Compile, NVPTXGivesPTXWithTheSameKernelMetadata) {
  auto m = compile(ptx(), llvm::cantFail(Target::parse("sm_90")), {});
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_NE(m->binary.find(".target sm_90"), std::string::npos);
  ASSERT_EQ(m->kernels.size(), 1u);
  auto h = compile(ptx(), host(), {});
  ASSERT_TRUE(bool(h)) << llvm::toString(h.takeError());
  EXPECT_EQ(m->kernels[0].paramOffsets, h->kernels[0].paramOffsets);
  EXPECT_EQ(m->kernels[0].paramSizes, h->kernels[0].paramSizes);
}

TEST(Compile, AMDGPUGivesACodeObjectWithTheSameKernelMetadata) {
  Target gfx942 = llvm::cantFail(Target::parse("gfx942"));
  auto m = compile(ptx(), gfx942, {});
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->binary.substr(0, 4), "\x7f"
                                    "ELF");
  ASSERT_EQ(m->kernels.size(), 1u);
  const KernelInfo &k = m->kernels[0];
  EXPECT_NE(m->binary.find(k.symbol + ".kd"), std::string::npos);
  // The backend's figures (AMDGPUTest.cpp checks them in detail).
  EXPECT_GT(k.registers, 0u);
  auto h = compile(ptx(), host(), {});
  ASSERT_TRUE(bool(h)) << llvm::toString(h.takeError());
  EXPECT_EQ(k.paramOffsets, h->kernels[0].paramOffsets);
  EXPECT_EQ(k.paramSizes, h->kernels[0].paramSizes);
  EXPECT_EQ(m->key, cacheKey(ptx(), gfx942, {}));
}

TEST(Compile, ErrorsCarryLocations) {
  auto m = compile(ptx(".version 7.0\n.target sm_80\n.address_size 64\n"
                       ".visible .entry k() { frobnicate.u32 %r1; }\n"),
                   host(), {});
  ASSERT_FALSE(bool(m));
  std::string msg = llvm::toString(m.takeError());
  EXPECT_NE(msg.find("k.ptx:4:"), std::string::npos) << msg;
}

TEST(Compile, ReportsReadOnlyPointerParameters) {
  auto m = compile(ptx(R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry copy(.param .u64 src, .param .u64 dst)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r1;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  ld.global.u32 %r1, [%rd1];
  st.global.u32 [%rd2], %r1;
  ret;
}
)"),
                   host(), {});
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->kernels[0].readOnlyParams, (std::vector<bool>{true, false}));
  auto back = CompiledModule::deserialize(m->serialize());
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->kernels[0].readOnlyParams, (std::vector<bool>{true, false}));
}

TEST(Compile, RunsRequestedPassesAndRejectsUnknownOnes) {
  CompileOptions o;
  o.passes = "wooly-no-such-pass";
  auto m = compile(ptx(), host(), o);
  ASSERT_FALSE(bool(m));
  EXPECT_NE(llvm::toString(m.takeError()).find("bad pass pipeline"),
            std::string::npos);
}

// A module of two kernels and a variable.
const char *kTwoKernels = R"(
.version 7.0
.target sm_80
.address_size 64
.global .align 4 .u32 var = 3;
.visible .entry a(.param .u64 a_p)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [a_p];
  st.global.u32 [%rd1], 1;
  ret;
}
.visible .entry b(.param .u32 b_n, .param .align 8 .b8 b_s[24])
{
  .reg .b32 %r<2>;
  ld.param.u32 %r1, [b_n];
  st.global.u32 [var], %r1;
  ret;
}
)";

TEST(Compile, OnlyTheKernelsAskedFor) {
  CompileOptions o;
  o.kernels = std::vector<std::string>{"b"};
  auto m = compile(ptx(kTwoKernels), host(), o);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  ASSERT_EQ(m->kernels.size(), 1u);
  EXPECT_EQ(m->kernels[0].name, "b");
  ASSERT_EQ(m->globals.size(), 1u);
  EXPECT_EQ(m->globals[0].name, "var");
  // No kernel at all: the module variables alone.
  o.kernels.emplace();
  m = compile(ptx(kTwoKernels), host(), o);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_TRUE(m->kernels.empty());
  EXPECT_EQ(m->globals.size(), 1u);
  // An unknown kernel is an error.
  o.kernels = std::vector<std::string>{"a", "zz"};
  m = compile(ptx(kTwoKernels), host(), o);
  ASSERT_FALSE(bool(m));
  EXPECT_EQ(llvm::toString(m.takeError()), "k.ptx: no kernel named 'zz'");
}

// inspect() gives the layouts compile() gives, without compiling.
TEST(Inspect, LayoutsAndVariablesAsCompiled) {
  auto layout = inspect(ptx(kTwoKernels));
  ASSERT_TRUE(bool(layout)) << llvm::toString(layout.takeError());
  auto m = compile(ptx(kTwoKernels), host(), {});
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  ASSERT_EQ(layout->kernels.size(), m->kernels.size());
  for (const KernelInfo &k : m->kernels) {
    const KernelInfo *l = layout->findKernel(k.name);
    ASSERT_NE(l, nullptr) << k.name;
    EXPECT_EQ(l->paramOffsets, k.paramOffsets) << k.name;
    EXPECT_EQ(l->paramSizes, k.paramSizes) << k.name;
    EXPECT_EQ(l->paramBufferSize, k.paramBufferSize) << k.name;
  }
  // b: a u32 at 0, then 24 bytes aligned to 8.
  EXPECT_EQ(layout->findKernel("b")->paramOffsets,
            (std::vector<uint64_t>{0, 8}));
  ASSERT_EQ(layout->globals.size(), 1u);
  EXPECT_EQ(layout->globals[0].name, "var");
  EXPECT_EQ(layout->globals[0].size, 4u);
  auto bad = inspect(ptx(".version 7.0\n.target sm_80\n.address_size 64\n"
                         ".visible .entry k() { nope; }\n"));
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("k.ptx:4:"),
            std::string::npos);
}

TEST(CompiledModule, SerializeRoundTrip) {
  auto m = compile(ptx(), host(), {});
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  auto back = CompiledModule::deserialize(m->serialize());
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->binary, m->binary);
  EXPECT_EQ(back->key, m->key);
  ASSERT_EQ(back->kernels.size(), 1u);
  EXPECT_EQ(back->kernels[0].paramOffsets, m->kernels[0].paramOffsets);
  // A truncated entry is rejected, not misread.
  std::string bytes = m->serialize();
  EXPECT_FALSE(
      bool(CompiledModule::deserialize(llvm::StringRef(bytes).drop_back(10))));
  llvm::consumeError(
      CompiledModule::deserialize(llvm::StringRef(bytes).drop_back(10))
          .takeError());
}

// Threads asking for the same compilation at once share one.
TEST(CompileCache, ConcurrentRequestsCompileOnce) {
  CompileCache cache;
  std::vector<std::thread> threads;
  std::vector<const CompiledModule *> got(4, nullptr);
  // Not std::vector<bool>: its elements share words, and the threads
  // write theirs at once.
  std::vector<char> hits(4, 0);
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      bool hit = false;
      auto m = cache.getOrCompile(ptx(kTwoKernels), host(), {}, &hit);
      if (m) {
        got[i] = m->get();
        hits[i] = hit;
      } else {
        llvm::consumeError(m.takeError());
      }
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(cache.misses(), 1u);
  EXPECT_EQ(cache.hits(), 3u);
  for (int i = 0; i < 4; ++i) {
    ASSERT_NE(got[i], nullptr);
    EXPECT_EQ(got[i], got[0]);
  }
  EXPECT_EQ(std::count(hits.begin(), hits.end(), 0), 1);
  // A failed compilation is reported to every waiter, and not cached.
  std::vector<std::string> errors(3);
  threads.clear();
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&, i] {
      auto m = cache.getOrCompile(ptx("bogus"), host(), {});
      errors[i] = m ? "" : llvm::toString(m.takeError());
    });
  for (std::thread &t : threads)
    t.join();
  for (const std::string &e : errors)
    EXPECT_NE(e.find("k.ptx"), std::string::npos) << e;
}

TEST(CompileCache, HitsInMemoryAndOnDisk) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("wooly-cache", dir));
  {
    CompileCache cache(dir.str().str());
    auto a = cache.getOrCompile(ptx(), host(), {});
    ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
    auto b = cache.getOrCompile(ptx(), host(), {});
    ASSERT_TRUE(bool(b));
    EXPECT_EQ(a->get(), b->get());
    EXPECT_EQ(cache.misses(), 1u);
    EXPECT_EQ(cache.hits(), 1u);
  }
  // A new cache over the same directory finds the entry on disk.
  CompileCache again(dir.str().str());
  auto c = again.getOrCompile(ptx(), host(), {});
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(again.hits(), 1u);
  EXPECT_EQ(again.misses(), 0u);
  llvm::sys::fs::remove_directories(dir);
}

// A lookup finds an input seen before by a fast hash, then compares it all:
// an input that differs in its last byte, or in one option, is another
// compilation, and the key of a hit is the input's cacheKey (the on-disk
// name).
TEST(CompileCache, HitsNeedTheSameInputAndOptions) {
  CompileCache cache;
  CompileInput a = ptx(), b = ptx();
  b.text += " ";
  CompileOptions unchecked;
  unchecked.boundsChecks = false;
  auto ma = cache.getOrCompile(a, host(), {});
  ASSERT_TRUE(bool(ma)) << llvm::toString(ma.takeError());
  auto mb = cache.getOrCompile(b, host(), {});
  ASSERT_TRUE(bool(mb)) << llvm::toString(mb.takeError());
  auto mc = cache.getOrCompile(a, host(), unchecked);
  ASSERT_TRUE(bool(mc)) << llvm::toString(mc.takeError());
  EXPECT_EQ(cache.misses(), 3u);
  EXPECT_NE(ma->get(), mb->get());
  EXPECT_NE(ma->get(), mc->get());
  bool hit = false;
  auto again = cache.getOrCompile(b, host(), {}, &hit);
  ASSERT_TRUE(bool(again));
  EXPECT_TRUE(hit);
  EXPECT_EQ(again->get(), mb->get());
  EXPECT_EQ((*again)->key, cacheKey(b, host(), {}));
  EXPECT_NE((*again)->key, cacheKey(a, host(), {}));
}
} // namespace
