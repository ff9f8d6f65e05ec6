//===- CpuDeviceTest.cpp - Launch semantics of the CPU backend --*- C++ -*-===//
//
// Bad launches and faulting kernels return errors and leave the device
// usable; barriers with counts, bar.red, nanosleep and printf behave as on a
// GPU.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Runtime/CPU/CpuDevice.h"
#include "Wooly/Compiler/Compiler.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace wooly;
using namespace wooly::cpu;

namespace {
const char *kHeader = ".version 7.0\n.target sm_80\n.address_size 64\n";

/// A device with one loaded module.
struct Fixture {
  CpuDevice device;
  std::shared_ptr<const CompiledModule> module;
  LoadedModule *loaded = nullptr;

  explicit Fixture(const std::string &body) : device(options()) {
    CompileInput in;
    in.text = std::string(kHeader) + body;
    in.name = "test.ptx";
    auto m = compile(in, llvm::cantFail(Target::parse("host")), {});
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
  }
  static CpuDevice::Options options() {
    CpuDevice::Options o;
    o.workers = 2;
    return o;
  }
  uint64_t alloc(size_t bytes) {
    return llvm::cantFail(device.memory().allocate(bytes));
  }
  /// Parameter buffer of 64-bit values (pointers) and 32-bit scalars.
  std::vector<uint8_t> params(const std::string &kernel,
                              std::vector<uint64_t> values) {
    const KernelInfo *k = module->findKernel(kernel);
    std::vector<uint8_t> buf(k->paramBufferSize);
    for (size_t i = 0; i < values.size() && i < k->paramOffsets.size(); ++i)
      std::memcpy(buf.data() + k->paramOffsets[i], &values[i],
                  k->paramSizes[i]);
    return buf;
  }
  std::string launch(const std::string &kernel, LaunchConfig config,
                     std::vector<uint8_t> p) {
    llvm::Error e = device.launch(loaded, kernel, config, p);
    return e ? llvm::toString(std::move(e)) : "";
  }
  std::vector<uint32_t> read(uint64_t addr, size_t n) {
    std::vector<uint32_t> v(n);
    llvm::cantFail(device.memory().copyFromDevice(v.data(), addr, n * 4));
    return v;
  }
};

LaunchConfig launchOf(uint32_t grid, uint32_t block) {
  LaunchConfig c;
  c.grid = {grid, 1, 1};
  c.block = {block, 1, 1};
  return c;
}

// out[i] = i for every global thread index i < n.
const char *kIota = R"(
.visible .entry iota(.param .u64 out, .param .u32 n)
{
  .reg .pred %p;
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p, %r5, %r1;
  @%p bra DONE;
  mul.wide.u32 %rd2, %r5, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r5;
DONE:
  ret;
}
.visible .entry trapper()
{
  trap;
}
)";

TEST(CpuDevice, BadLaunchesReturnErrorsAndTheDeviceStaysUsable) {
  Fixture f(kIota);
  ASSERT_TRUE(f.loaded);
  uint64_t out = f.alloc(100 * 4);
  // Too many threads per block.
  EXPECT_NE(f.launch("iota", launchOf(1, 2048), f.params("iota", {out, 100}))
                .find("block dimension x is 2048, the limit is 1024"),
            std::string::npos);
  // Missing parameters.
  EXPECT_NE(f.launch("iota", launchOf(1, 32), {})
                .find("the parameter buffer has 0 bytes, the kernel takes 12"),
            std::string::npos);
  // Unknown kernel.
  EXPECT_NE(f.launch("nope", launchOf(1, 32), {}).find("no kernel named"),
            std::string::npos);
  // Out of bounds: n is larger than the buffer.
  std::string oob =
      f.launch("iota", launchOf(4, 32), f.params("iota", {out, 128}));
  EXPECT_NE(oob.find("kernel 'iota': out-of-bounds write of 4 bytes"),
            std::string::npos)
      << oob;
  EXPECT_NE(oob.find("400 bytes from the start of the 400-byte allocation"),
            std::string::npos)
      << oob;
  // trap.
  EXPECT_NE(f.launch("trapper", launchOf(2, 8), {})
                .find("kernel 'trapper': trap instruction executed"),
            std::string::npos);
  // After all that, a correct launch works.
  EXPECT_EQ(f.launch("iota", launchOf(4, 32), f.params("iota", {out, 100})),
            "");
  std::vector<uint32_t> v = f.read(out, 100);
  for (uint32_t i = 0; i < 100; ++i)
    ASSERT_EQ(v[i], i);
}

// Two halves of a 128-thread block synchronise on barriers 1 and 2 with a
// count of 64 each; every thread then reads its neighbour's slot.
const char *kNamedBarriers = R"(
.visible .entry halves(.param .u64 out)
{
  .shared .u32 slots[128];
  .reg .pred %p;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, slots;
  add.s32 %r4, %r3, %r2;
  mul.lo.u32 %r5, %r1, 10;
  st.shared.u32 [%r4], %r5;
  setp.ge.u32 %p, %r1, 64;
  @%p bra UPPER;
  bar.sync 1, 64;
  bra READ;
UPPER:
  bar.sync 2, 64;
READ:
  xor.b32 %r6, %r1, 1;
  shl.b32 %r6, %r6, 2;
  add.s32 %r6, %r3, %r6;
  ld.shared.u32 %r7, [%r6];
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r7;
  ret;
}
)";

TEST(CpuDevice, NamedBarriersWithCounts) {
  Fixture f(kNamedBarriers);
  ASSERT_TRUE(f.loaded);
  uint64_t out = f.alloc(128 * 4);
  ASSERT_EQ(f.launch("halves", launchOf(3, 128), f.params("halves", {out})),
            "");
  std::vector<uint32_t> v = f.read(out, 128);
  for (uint32_t i = 0; i < 128; ++i)
    ASSERT_EQ(v[i], (i ^ 1) * 10) << "thread " << i;
}

// bar.red over "tid is odd": popc, and, or.
const char *kBarRed = R"(
.visible .entry red(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 1;
  setp.eq.u32 %p1, %r2, 1;
  bar.red.popc.u32 %r3, 0, %p1;
  bar.red.and.pred %p2, 0, %p1;
  bar.red.or.pred %p3, 0, %p1;
  selp.u32 %r4, 1, 0, %p2;
  selp.u32 %r5, 1, 0, %p3;
  shl.b32 %r4, %r4, 16;
  shl.b32 %r5, %r5, 17;
  or.b32 %r3, %r3, %r4;
  or.b32 %r3, %r3, %r5;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
  ret;
}
)";

TEST(CpuDevice, BarRedReducesPredicates) {
  Fixture f(kBarRed);
  ASSERT_TRUE(f.loaded);
  uint64_t out = f.alloc(96 * 4);
  ASSERT_EQ(f.launch("red", launchOf(1, 96), f.params("red", {out})), "");
  std::vector<uint32_t> v = f.read(out, 96);
  // 48 odd threads; not all odd (and = 0); some odd (or = 1).
  for (uint32_t i = 0; i < 96; ++i)
    ASSERT_EQ(v[i], 48u | (0u << 16) | (1u << 17)) << "thread " << i;
}

// Thread 0 spins (with nanosleep) until thread 1 raises a flag in shared
// memory: independent thread scheduling lets thread 1 run.
const char *kSpin = R"(
.visible .entry spin(.param .u64 out)
{
  .shared .u32 flag;
  .reg .pred %p;
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p, %r1, 1;
  @%p bra RAISE;
WAIT:
  ld.volatile.shared.u32 %r2, [flag];
  setp.eq.u32 %p, %r2, 0;
  @!%p bra SEEN;
  nanosleep.u32 100;
  bra WAIT;
SEEN:
  st.global.u32 [%rd1], %r2;
  ret;
RAISE:
  mov.u32 %r3, 42;
  st.volatile.shared.u32 [flag], %r3;
  ret;
}
)";

TEST(CpuDevice, NanosleepYieldsToOtherThreads) {
  Fixture f(kSpin);
  ASSERT_TRUE(f.loaded);
  uint64_t out = f.alloc(4);
  ASSERT_EQ(f.launch("spin", launchOf(1, 2), f.params("spin", {out})), "");
  EXPECT_EQ(f.read(out, 1)[0], 42u);
}

const char *kPrintf = R"(
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
.global .align 1 .b8 fmt[14] = {116, 105, 100, 32, 37, 100, 32, 120, 32, 37, 102, 10, 0, 0};
.visible .entry hello()
{
  .local .align 8 .b8 depot[16];
  .reg .b32 %r<3>;
  .reg .f64 %fd1;
  .reg .b64 %rd<6>;
  mov.u64 %rd1, depot;
  cvta.local.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  st.local.u32 [%rd1], %r1;
  mov.f64 %fd1, 0d3FF8000000000000;
  st.local.f64 [%rd1+8], %fd1;
  mov.u64 %rd3, fmt;
  cvta.global.u64 %rd4, %rd3;
  {
  .param .b64 param0;
  st.param.b64 [param0], %rd4;
  .param .b64 param1;
  st.param.b64 [param1], %rd2;
  .param .b32 retval0;
  call.uni (retval0), vprintf, (param0, param1);
  ld.param.b32 %r2, [retval0];
  }
  ret;
}
)";

TEST(CpuDevice, PrintfFormatsTheArgumentBuffer) {
  CpuDevice::Options o;
  std::string printed;
  o.workers = 1;
  o.printfSink = [&](llvm::StringRef s) { printed += s.str(); };
  CpuDevice device(o);
  CompileInput in;
  in.text = std::string(kHeader) + kPrintf;
  auto m = compile(in, llvm::cantFail(Target::parse("host")), {});
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  auto loaded =
      device.loadModule(std::make_shared<const CompiledModule>(std::move(*m)));
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  llvm::Error e = device.launch(*loaded, "hello", launchOf(1, 2), {});
  ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));
  EXPECT_EQ(printed, "tid 0 x 1.500000\ntid 1 x 1.500000\n");
}
} // namespace
