//===- IsolateTest.cpp - wooly-isolate against an attacker kernel -*- C++
//-*-===//
//
// A tenant's arena is one allocation holding the attacker's buffers (`own`,
// `out`); victim buffers are allocated right before and right after it. The
// attacker kernel reaches the victims (a) by offsetting its own pointer past
// its end and before its start, (b) through a pointer smuggled in as an
// integer parameter and used with a generic access; it copies what it reads
// to `out` and overwrites the victims (plain and atomic stores).
//
// Without the pass the attack works, with or without the CPU backend's
// bounds checks (they accept any live allocation, and the victims are
// live): shown, so that the test can fail. With `wooly-isolate` (bounds
// checks on) the launch succeeds (redirected accesses stay inside the
// arena, so the checks never fire), the victims are unchanged and no victim
// byte value appears in `out`.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Compiler/Compiler.h"
#include "Wooly/Compiler/LaunchParams.h"
#include "Wooly/Runtime/CPU/CpuDevice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

using namespace wooly;
using namespace wooly::cpu;

namespace {

constexpr uint32_t kThreads = 64;
constexpr uint64_t kVictimBytes = kThreads * 4;
constexpr uint64_t kArenaBytes = 4096;
constexpr uint64_t kOwnOffset = 0, kOutOffset = 1024;
constexpr uint8_t kVictimByte = 0xA5, kOwnByte = 0x11;

// Thread i reads victim word i three ways into out[i], out[64 + i],
// out[128 + i], then overwrites the victim words.
const char *kAttacker = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry attack(.param .u64 own, .param .u64 out, .param .u64 fwd,
                       .param .u64 back, .param .u64 smuggled)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [own];
  ld.param.u64 %rd2, [out];
  ld.param.u64 %rd3, [fwd];
  ld.param.u64 %rd4, [back];
  ld.param.u64 %rd5, [smuggled];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd6, %r1, 4;
  add.s64 %rd7, %rd1, %rd3;
  add.s64 %rd7, %rd7, %rd6;
  sub.s64 %rd8, %rd1, %rd4;
  add.s64 %rd8, %rd8, %rd6;
  add.s64 %rd9, %rd5, %rd6;
  ld.global.u32 %r2, [%rd7];
  ld.global.u32 %r3, [%rd8];
  ld.u32 %r4, [%rd9];
  add.s64 %rd10, %rd2, %rd6;
  st.global.u32 [%rd10], %r2;
  st.global.u32 [%rd10+256], %r3;
  st.global.u32 [%rd10+512], %r4;
  mov.u32 %r5, 0xDEADBEEF;
  st.global.u32 [%rd7], %r5;
  st.global.u32 [%rd8], %r5;
  st.u32 [%rd9], %r5;
  atom.global.add.u32 %r6, [%rd7], 1;
  red.global.add.u32 [%rd8], 1;
  ret;
}
)";

/// The attack's memory and launch, compiled with or without the pass.
struct Scenario {
  CpuDevice device;
  std::shared_ptr<const CompiledModule> module;
  LoadedModule *loaded = nullptr;
  uint64_t before = 0, arena = 0, after = 0;

  Scenario(bool isolate, bool boundsChecks) : device(options()) {
    CompileInput in;
    in.text = kAttacker;
    in.name = "attack.ptx";
    CompileOptions o;
    o.boundsChecks = boundsChecks;
    if (isolate)
      o.passes = "wooly-isolate";
    auto m = compile(in, llvm::cantFail(Target::parse("host")), o);
    if (!m) {
      ADD_FAILURE() << llvm::toString(m.takeError());
      return;
    }
    module = std::make_shared<const CompiledModule>(std::move(*m));
    auto l = device.loadModule(module);
    if (!l) {
      ADD_FAILURE() << llvm::toString(l.takeError());
      return;
    }
    loaded = *l;
    before = fill(kVictimBytes, kVictimByte);
    arena = fill(kArenaBytes, 0);
    after = fill(kVictimBytes, kVictimByte);
    std::vector<uint8_t> own(kOutOffset, kOwnByte);
    llvm::cantFail(device.memory().copyToDevice(arena + kOwnOffset, own.data(),
                                                own.size()));
  }
  static CpuDevice::Options options() {
    CpuDevice::Options o;
    o.workers = 2;
    return o;
  }
  uint64_t fill(uint64_t bytes, uint8_t value) {
    uint64_t a = llvm::cantFail(device.memory().allocate(bytes));
    llvm::cantFail(device.memory().memset(a, value, bytes));
    return a;
  }
  std::vector<uint8_t> read(uint64_t addr, uint64_t bytes) {
    std::vector<uint8_t> v(bytes);
    llvm::cantFail(device.memory().copyFromDevice(v.data(), addr, bytes));
    return v;
  }
  /// Launches the attack; returns the error text ("" on success).
  std::string launch() {
    const KernelInfo *k = module->findKernel("attack");
    if (!k)
      return "no kernel";
    uint64_t own = arena + kOwnOffset;
    std::vector<uint64_t> user{own, arena + kOutOffset, after - own,
                               own - before, before};
    std::vector<uint8_t> p(userParamBufferSize(*k));
    for (size_t i = 0; i < user.size(); ++i)
      std::memcpy(p.data() + k->paramOffsets[i], &user[i], 8);
    auto params = extendParams(
        *k, p, {{"isolate_base", arena}, {"isolate_size", kArenaBytes}});
    if (!params)
      return llvm::toString(params.takeError());
    LaunchConfig c;
    c.grid = {1, 1, 1};
    c.block = {kThreads, 1, 1};
    llvm::Error e = device.launch(loaded, "attack", c, *params);
    return e ? llvm::toString(std::move(e)) : "";
  }
};

bool allBytes(const std::vector<uint8_t> &v, uint8_t b) {
  return std::all_of(v.begin(), v.end(), [&](uint8_t x) { return x == b; });
}

TEST(Isolate, WithoutThePassTheAttackReadsAndWritesTheVictims) {
  Scenario s(/*isolate=*/false, /*boundsChecks=*/false);
  ASSERT_TRUE(s.loaded);
  ASSERT_EQ(s.launch(), "");
  std::vector<uint8_t> out = s.read(s.arena + kOutOffset, 3 * kVictimBytes);
  EXPECT_TRUE(allBytes(out, kVictimByte));
  EXPECT_FALSE(allBytes(s.read(s.before, kVictimBytes), kVictimByte));
  EXPECT_FALSE(allBytes(s.read(s.after, kVictimBytes), kVictimByte));
}

TEST(Isolate, BoundsChecksAloneDoNotStopTheAttack) {
  // The CPU backend's checks accept any live allocation, and the victims
  // are live: without the pass the attack works with checks on too.
  Scenario s(/*isolate=*/false, /*boundsChecks=*/true);
  ASSERT_TRUE(s.loaded);
  ASSERT_EQ(s.launch(), "");
  std::vector<uint8_t> out = s.read(s.arena + kOutOffset, 3 * kVictimBytes);
  EXPECT_TRUE(allBytes(out, kVictimByte));
  EXPECT_FALSE(allBytes(s.read(s.after, kVictimBytes), kVictimByte));
}

TEST(Isolate, WithThePassTheVictimsAreNeitherReadNorWritten) {
  Scenario s(/*isolate=*/true, /*boundsChecks=*/true);
  ASSERT_TRUE(s.loaded);
  const KernelInfo *k = s.module->findKernel("attack");
  ASSERT_TRUE(k);
  ASSERT_EQ(k->paramRoles.size(), 7u);
  EXPECT_EQ(
      std::count(k->paramRoles.begin(), k->paramRoles.end(), "isolate_base"),
      1);
  EXPECT_EQ(
      std::count(k->paramRoles.begin(), k->paramRoles.end(), "isolate_size"),
      1);
  // Redirected accesses stay inside the arena: the bounds checks never fire.
  ASSERT_EQ(s.launch(), "");
  EXPECT_TRUE(allBytes(s.read(s.before, kVictimBytes), kVictimByte));
  EXPECT_TRUE(allBytes(s.read(s.after, kVictimBytes), kVictimByte));
  std::vector<uint8_t> out = s.read(s.arena + kOutOffset, 3 * kVictimBytes);
  EXPECT_EQ(std::count(out.begin(), out.end(), kVictimByte), 0);
  // The attacker's own buffer is intact (writes went to the arena's end).
  EXPECT_TRUE(allBytes(s.read(s.arena + kOwnOffset, kOutOffset), kOwnByte));
}

} // namespace
