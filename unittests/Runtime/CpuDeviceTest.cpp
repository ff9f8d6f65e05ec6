//===- CpuDeviceTest.cpp - Launch semantics of the CPU backend --*- C++ -*-===//
//
// Bad launches and faulting kernels return errors and leave the device
// usable; barriers with counts, bar.red, nanosleep and printf behave as on a
// GPU; launches from several threads run concurrently, each reporting its
// own faults.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Runtime/CPU/CpuDevice.h"
#include "Wooly/Compiler/Compiler.h"

#include <gtest/gtest.h>

#include "llvm/ADT/StringExtras.h"
#include <atomic>

#include <cstring>
#include <thread>

using namespace wooly;
using namespace wooly::cpu;

namespace {
const char *kHeader = ".version 7.0\n.target sm_80\n.address_size 64\n";

/// A device with one loaded module.
struct Fixture {
  CpuDevice device;
  std::shared_ptr<const CompiledModule> module;
  LoadedModule *loaded = nullptr;

  explicit Fixture(const std::string &body, unsigned workers = 2,
                   bool regions = true)
      : device(options(workers, regions)) {
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
  static CpuDevice::Options options(unsigned workers, bool regions) {
    CpuDevice::Options o;
    o.workers = workers;
    o.regions = regions;
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

//===----------------------------------------------------------------------===//
// Concurrent launches
//===----------------------------------------------------------------------===//

// out[i] = i * a + b for i < n (direct mode), and a fiber-mode kernel:
// out[ctaid * 128 + tid] = the neighbour's (tid ^ 1) value of
// tid * seed + ctaid, exchanged in shared memory across a barrier.
const char *kAffineAndNeighbours = R"(
.visible .entry affine(.param .u64 out, .param .u32 n, .param .u32 a,
                       .param .u32 b)
{
  .reg .pred %p;
  .reg .b32 %r<9>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r6, [a];
  ld.param.u32 %r7, [b];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p, %r5, %r1;
  @%p bra DONE;
  mad.lo.s32 %r8, %r5, %r6, %r7;
  mul.wide.u32 %rd2, %r5, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r8;
DONE:
  ret;
}
.visible .entry neighbours(.param .u64 out, .param .u32 seed)
{
  .shared .u32 slots[128];
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r9, [seed];
  mov.u32 %r1, %tid.x;
  mov.u32 %r10, %ctaid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, slots;
  add.s32 %r4, %r3, %r2;
  mad.lo.s32 %r5, %r1, %r9, %r10;
  st.shared.u32 [%r4], %r5;
  bar.sync 0;
  xor.b32 %r6, %r1, 1;
  shl.b32 %r6, %r6, 2;
  add.s32 %r6, %r3, %r6;
  ld.shared.u32 %r7, [%r6];
  mad.lo.s32 %r11, %r10, 128, %r1;
  mul.wide.u32 %rd2, %r11, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r7;
  ret;
}
)";

// Two threads launch different kernels (one in direct mode, one in fiber
// mode) many times on one device while a third loads and unloads a module;
// every launch's output is checked bit for bit.
TEST(CpuDevice, ConcurrentLaunchesFromSeveralThreads) {
  Fixture f(kAffineAndNeighbours, /*workers=*/3);
  ASSERT_TRUE(f.loaded);
  constexpr uint32_t kRounds = 150, kN = 1000, kBlocks = 8;
  uint64_t outA = f.alloc(kN * 4), outB = f.alloc(kBlocks * 128 * 4);
  std::string failA, failB, failC;
  std::thread a([&] {
    for (uint32_t r = 0; r < kRounds && failA.empty(); ++r) {
      failA = f.launch("affine", launchOf(8, 128),
                       f.params("affine", {outA, kN, r + 3, r * 7}));
      std::vector<uint32_t> v = f.read(outA, kN);
      for (uint32_t i = 0; i < kN && failA.empty(); ++i)
        if (v[i] != i * (r + 3) + r * 7)
          failA = "round " + std::to_string(r) + ": out[" + std::to_string(i) +
                  "] = " + std::to_string(v[i]);
    }
  });
  std::thread b([&] {
    for (uint32_t r = 0; r < kRounds && failB.empty(); ++r) {
      failB = f.launch("neighbours", launchOf(kBlocks, 128),
                       f.params("neighbours", {outB, r + 1}));
      std::vector<uint32_t> v = f.read(outB, kBlocks * 128);
      for (uint32_t c = 0; c < kBlocks && failB.empty(); ++c)
        for (uint32_t t = 0; t < 128 && failB.empty(); ++t)
          if (v[c * 128 + t] != (t ^ 1) * (r + 1) + c)
            failB = "round " + std::to_string(r) + ": block " +
                    std::to_string(c) + " thread " + std::to_string(t) +
                    " wrote " + std::to_string(v[c * 128 + t]);
    }
  });
  std::thread c([&] {
    for (int r = 0; r < 10 && failC.empty(); ++r) {
      auto loaded = f.device.loadModule(f.module);
      if (!loaded) {
        failC = llvm::toString(loaded.takeError());
        break;
      }
      if (llvm::Error e = f.device.unloadModule(*loaded))
        failC = llvm::toString(std::move(e));
    }
  });
  a.join();
  b.join();
  c.join();
  EXPECT_EQ(failA, "");
  EXPECT_EQ(failB, "");
  EXPECT_EQ(failC, "");
}

// Thread 0 of each block counts the block in counts[%ctaid.x] and writes
// %nsmid << 16 | %smid to smids[%ctaid.x].
const char *kCountBlocks = R"(
.visible .entry count_blocks(.param .u64 counts, .param .u64 smids)
{
  .reg .pred %p;
  .reg .b32 %r<8>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [counts];
  ld.param.u64 %rd2, [smids];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p, %r1, 0;
  @%p bra DONE;
  mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd1, %rd3;
  atom.global.add.u32 %r3, [%rd4], 1;
  add.s64 %rd5, %rd2, %rd3;
  mov.u32 %r4, %smid;
  mov.u32 %r5, %nsmid;
  shl.b32 %r6, %r5, 16;
  or.b32 %r7, %r6, %r4;
  st.global.u32 [%rd5], %r7;
DONE:
  ret;
}
)";

// The grid is cut into one span of blocks per worker, and workers steal
// from each other's spans: every block still runs exactly once, with two
// launches sharing the pool (pool workers then leave a launch after every
// block, with blocks left in their spans), and %smid names one of the
// launch's %nsmid workers. Block counts that do not divide evenly, and
// grids smaller than the pool.
TEST(CpuDevice, EveryBlockRunsOnceWhileWorkersStealSpans) {
  Fixture f(kCountBlocks, /*workers=*/4);
  ASSERT_TRUE(f.loaded);
  auto run = [&](uint32_t blocks, uint32_t rounds) {
    uint64_t counts = f.alloc(blocks * 4), smids = f.alloc(blocks * 4);
    std::string fail;
    for (uint32_t r = 0; r < rounds && fail.empty(); ++r) {
      llvm::cantFail(f.device.memory().memset(counts, 0, blocks * 4));
      fail = f.launch("count_blocks", launchOf(blocks, 32),
                      f.params("count_blocks", {counts, smids}));
      std::vector<uint32_t> c = f.read(counts, blocks);
      std::vector<uint32_t> s = f.read(smids, blocks);
      uint32_t nsmid = std::min<uint32_t>(blocks, 4);
      for (uint32_t b = 0; b < blocks && fail.empty(); ++b) {
        if (c[b] != 1)
          fail = "grid of " + std::to_string(blocks) + ", round " +
                 std::to_string(r) + ": block " + std::to_string(b) + " ran " +
                 std::to_string(c[b]) + " times";
        else if (s[b] >> 16 != nsmid || (s[b] & 0xffff) >= nsmid)
          fail = "block " + std::to_string(b) + ": %smid " +
                 std::to_string(s[b] & 0xffff) + " of %nsmid " +
                 std::to_string(s[b] >> 16);
      }
    }
    return fail;
  };
  std::string failA, failB;
  std::thread a([&] {
    for (uint32_t blocks : {1999u, 3u, 4u, 5u, 1u, 257u})
      if (failA.empty())
        failA = run(blocks, 20);
  });
  std::thread b([&] {
    for (uint32_t blocks : {2u, 1001u, 64u, 7u})
      if (failB.empty())
        failB = run(blocks, 20);
  });
  a.join();
  b.join();
  EXPECT_EQ(failA, "");
  EXPECT_EQ(failB, "");
}

// Every thread counts itself in `started`, then polls `flag` until it is
// non-zero, at most `maxIter` times; a thread that gives up sets the flag to
// 2, so that the others stop waiting too. Each writes the flag it saw to
// out[global index].
const char *kWaiter = R"(
.visible .entry waiter(.param .u64 flag, .param .u64 started, .param .u64 out,
                       .param .u64 maxIter)
{
  .reg .pred %p;
  .reg .b32 %r<10>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [started];
  ld.param.u64 %rd3, [out];
  ld.param.u64 %rd6, [maxIter];
  atom.global.add.u32 %r2, [%rd2], 1;
  mov.u64 %rd7, 0;
WAIT:
  ld.volatile.global.u32 %r4, [%rd1];
  setp.ne.u32 %p, %r4, 0;
  @%p bra SEEN;
  add.u64 %rd7, %rd7, 1;
  setp.lt.u64 %p, %rd7, %rd6;
  @%p bra WAIT;
  mov.u32 %r4, 2;
  st.volatile.global.u32 [%rd1], %r4;
SEEN:
  mov.u32 %r5, %ctaid.x;
  mov.u32 %r6, %ntid.x;
  mov.u32 %r7, %tid.x;
  mad.lo.s32 %r8, %r5, %r6, %r7;
  mul.wide.u32 %rd4, %r8, 4;
  add.s64 %rd5, %rd3, %rd4;
  st.global.u32 [%rd5], %r4;
  ret;
}
// Waits at barrier 1 for 64 threads in a block of 32: a deadlock.
.visible .entry stuck()
{
  bar.sync 1, 64;
  ret;
}
)";

/// A launch of `waiter` on its own thread, which a test lets end by raising
/// the flag.
struct Waiter {
  static constexpr uint32_t kBlocks = 16, kThreads = 32;
  /// Polls of the flag before a GPU thread gives up: seconds, far more than
  /// a short launch takes, but bounded so that a failing test ends.
  static constexpr uint64_t kMaxPolls = uint64_t(1) << 34;
  Fixture &f;
  uint64_t flag, started, out;
  std::atomic<bool> done{false};
  std::string error;
  std::thread thread;

  explicit Waiter(Fixture &f)
      : f(f), flag(f.alloc(4)), started(f.alloc(4)),
        out(f.alloc(kBlocks * kThreads * 4)) {
    thread = std::thread([this] {
      error = this->f.launch(
          "waiter", launchOf(kBlocks, kThreads),
          this->f.params("waiter", {flag, started, out, kMaxPolls}));
      done = true;
    });
    // Until the kernel runs (or the launch has failed).
    while (!load(started) && !done)
      std::this_thread::yield();
  }
  ~Waiter() { finish(); }

  static uint32_t load(uint64_t addr) {
    return __atomic_load_n(reinterpret_cast<uint32_t *>(addr),
                           __ATOMIC_ACQUIRE);
  }
  /// Raises the flag (if the kernel has not given up) and waits for the
  /// launch to return.
  void finish() {
    if (!thread.joinable())
      return;
    uint32_t zero = 0;
    __atomic_compare_exchange_n(reinterpret_cast<uint32_t *>(flag), &zero, 1u,
                                false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    thread.join();
  }
  /// How many GPU threads saw the flag the test raised (all of them unless
  /// one gave up waiting).
  uint32_t sawFlag() {
    uint32_t n = 0;
    for (uint32_t v : f.read(out, kBlocks * kThreads))
      n += v == 1;
    return n;
  }
};

// A long launch (every worker of the pool spinning in its blocks until the
// test raises a flag) does not hold up a short launch from another thread:
// the short one returns while the long one still waits, since the flag is
// raised only after that.
TEST(CpuDevice, LongLaunchDoesNotBlockAnotherThread) {
  Fixture f(std::string(kIota) + kWaiter);
  ASSERT_TRUE(f.loaded);
  uint64_t out = f.alloc(100 * 4);
  Waiter waiter(f);
  std::string shortError =
      f.launch("iota", launchOf(4, 32), f.params("iota", {out, 100}));
  bool longStillRunning = !waiter.done;
  waiter.finish();
  EXPECT_EQ(shortError, "");
  EXPECT_TRUE(longStillRunning);
  EXPECT_EQ(waiter.error, "");
  EXPECT_EQ(waiter.sawFlag(), Waiter::kBlocks * Waiter::kThreads)
      << "the long launch gave up waiting: the short one did not complete "
         "while it ran";
  std::vector<uint32_t> v = f.read(out, 100);
  for (uint32_t i = 0; i < 100; ++i)
    ASSERT_EQ(v[i], i);
}

// Faulting launches (trap, out-of-bounds write, deadlock) on one thread while
// another thread's launch runs: each fault is reported by the launch that
// caused it, and the other launch succeeds. First while a long launch is
// known to be running, then with many launches on two threads.
TEST(CpuDevice, FaultIsReportedToItsOwnLaunchOnly) {
  Fixture f(std::string(kIota) + kWaiter + kAffineAndNeighbours);
  ASSERT_TRUE(f.loaded);
  uint64_t small = f.alloc(100 * 4);
  auto faultingLaunches = [&](std::string &failure) {
    std::string trap = f.launch("trapper", launchOf(2, 8), {});
    if (trap.find("kernel 'trapper': trap instruction executed") ==
        std::string::npos)
      failure = "trapper returned: '" + trap + "'";
    std::string oob =
        f.launch("iota", launchOf(4, 32), f.params("iota", {small, 128}));
    if (oob.find("kernel 'iota': out-of-bounds write of 4 bytes") ==
        std::string::npos)
      failure = "iota out of bounds returned: '" + oob + "'";
    std::string stuck = f.launch("stuck", launchOf(3, 32), {});
    if (stuck.find("kernel 'stuck': deadlock in block") == std::string::npos)
      failure = "stuck returned: '" + stuck + "'";
  };

  {
    Waiter waiter(f);
    std::string failure;
    faultingLaunches(failure);
    bool longStillRunning = !waiter.done;
    waiter.finish();
    EXPECT_EQ(failure, "");
    EXPECT_TRUE(longStillRunning);
    EXPECT_EQ(waiter.error, "");
    EXPECT_EQ(waiter.sawFlag(), Waiter::kBlocks * Waiter::kThreads);
  }

  constexpr uint32_t kRounds = 50, kN = 4096;
  uint64_t out = f.alloc(kN * 4);
  std::string failA, failB;
  std::thread a([&] {
    for (uint32_t r = 0; r < kRounds && failA.empty(); ++r)
      faultingLaunches(failA);
  });
  std::thread b([&] {
    for (uint32_t r = 0; r < kRounds * 3 && failB.empty(); ++r) {
      failB = f.launch("affine", launchOf(kN / 64, 64),
                       f.params("affine", {out, kN, r + 1, r}));
      std::vector<uint32_t> v = f.read(out, kN);
      for (uint32_t i = 0; i < kN && failB.empty(); ++i)
        if (v[i] != i * (r + 1) + r)
          failB = "round " + std::to_string(r) + ": out[" + std::to_string(i) +
                  "] = " + std::to_string(v[i]);
    }
  });
  a.join();
  b.join();
  EXPECT_EQ(failA, "");
  EXPECT_EQ(failB, "");
}
} // namespace

namespace {
// out[ctaid] = ctaid + 1 from thread 0, except that block `bad` traps:
// `marks` runs in direct mode, `marksSync` (a barrier) as fibers.
const char *kDomains = R"(
.visible .entry marks(.param .u64 out, .param .u32 bad)
{
  .reg .pred %p;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [bad];
  mov.u32 %r2, %ctaid.x;
  setp.eq.u32 %p, %r2, %r1;
  @%p trap;
  mov.u32 %r3, %tid.x;
  setp.ne.u32 %p, %r3, 0;
  @%p bra DONE;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  add.u32 %r3, %r2, 1;
  st.global.u32 [%rd3], %r3;
DONE:
  ret;
}
.visible .entry marksSync(.param .u64 out, .param .u32 bad)
{
  .reg .pred %p;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [bad];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %tid.x;
  bar.sync 0;
  setp.eq.u32 %p, %r2, %r1;
  @%p trap;
  setp.ne.u32 %p, %r3, 0;
  @%p bra DONE;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  add.u32 %r3, %r2, 1;
  st.global.u32 [%rd3], %r3;
DONE:
  ret;
}
)";

// Memory domains per part of a launch (a fused launch's tenants): a part
// reaches its own domain's memory only, even where the other part's blocks
// ran first on the same worker and filled the access-site cache with that
// memory (one worker, both parts the same kernel: the same sites). And a
// read-only range is readable from every part, writable from none.
TEST(CpuDevice, MemoryDomainsPerPart) {
  Fixture f(kDomains, 1);
  ASSERT_TRUE(f.loaded);
  for (const char *kernel : {"marks", "marksSync"}) {
    SCOPED_TRACE(kernel);
    uint64_t out = llvm::cantFail(f.device.memory().allocate(8 * 4, 7));
    LaunchConfig c = launchOf(8, 32);
    c.faultDomains = {0, 4};
    c.memoryDomains = {7, 9};
    llvm::Error e =
        f.device.launch(f.loaded, kernel, c, f.params(kernel, {out, 99}));
    std::vector<std::pair<size_t, std::string>> faults;
    llvm::handleAllErrors(
        std::move(e), [&](const FaultDomainsError &d) { faults = d.faults(); },
        [&](const llvm::ErrorInfoBase &other) {
          ADD_FAILURE() << "not a FaultDomainsError: " << other.message();
        });
    ASSERT_EQ(faults.size(), 1u) << "domain 9 wrote domain 7's memory";
    EXPECT_EQ(faults[0].first, 1u);
    EXPECT_NE(faults[0].second.find("out-of-bounds write"), std::string::npos)
        << faults[0].second;
    std::vector<uint32_t> v = f.read(out, 8);
    EXPECT_EQ(v, (std::vector<uint32_t>{1, 2, 3, 4, 0, 0, 0, 0}));

    // The same memory as a read-only range of the launch: still not
    // writable from domain 9.
    c.readOnlyRanges = {{out, 8 * 4}};
    e = f.device.launch(f.loaded, kernel, c, f.params(kernel, {out, 99}));
    EXPECT_TRUE(bool(e));
    llvm::consumeError(std::move(e));
    llvm::cantFail(f.device.memory().free(out));
  }
}

// The device heaps' allocator: 16-byte aligned blocks that do not overlap,
// null where the heap has no room, freed blocks merged so that the whole
// heap can be taken again, errors for addresses malloc did not return, and
// each domain's heap an allocation of that domain, freed by release.
TEST(DeviceHeaps, AllocatesAlignedBlocksAndMergesFreedOnes) {
  DeviceMemory memory;
  DeviceHeaps heaps(memory, 4096);
  EXPECT_EQ(heaps.allocate(1, 4097), 0u) << "larger than the heap";
  EXPECT_EQ(memory.bytesInUse(), 0u) << "made before it was needed";
  std::vector<uint64_t> blocks;
  for (uint64_t size : {1, 16, 17, 100, 0}) {
    uint64_t b = heaps.allocate(1, size);
    ASSERT_NE(b, 0u);
    EXPECT_EQ(b % 16, 0u);
    blocks.push_back(b);
  }
  EXPECT_EQ(memory.bytesInUse(), 4096u);
  std::optional<Allocation> a = memory.find(blocks[0], 1);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->domain, 1u);
  // Sizes 1, 16, 17, 100, 0 take 16, 16, 32, 112, 16 bytes, in a row.
  EXPECT_EQ(blocks[1] - blocks[0], 16u);
  EXPECT_EQ(blocks[2] - blocks[1], 16u);
  EXPECT_EQ(blocks[3] - blocks[2], 32u);
  EXPECT_EQ(blocks[4] - blocks[3], 112u);
  EXPECT_EQ(heaps.blocksInUse(1), 5u);
  EXPECT_EQ(heaps.allocate(1, 4096 - 192 + 1), 0u) << "no room left";
  // Freed in an order that merges on both sides.
  for (size_t i : {1, 3, 2, 0, 4})
    EXPECT_FALSE(bool(heaps.free(1, blocks[i])));
  EXPECT_EQ(heaps.blocksInUse(1), 0u);
  uint64_t whole = heaps.allocate(1, 4096);
  EXPECT_EQ(whole, blocks[0]) << "the freed ranges were not merged";
  EXPECT_FALSE(bool(heaps.free(1, 0))) << "free(NULL) does nothing";
  EXPECT_FALSE(bool(heaps.free(1, whole)));
  for (auto [domain, addr] : std::vector<std::pair<uint64_t, uint64_t>>{
           {1, whole}, {1, whole + 16}, {2, whole}}) {
    llvm::Error e = heaps.free(domain, addr);
    ASSERT_TRUE(bool(e));
    EXPECT_NE(llvm::toString(std::move(e))
                  .find("not a block that device-side "
                        "malloc returned"),
              std::string::npos);
  }
  // Another domain's heap is another allocation.
  uint64_t other = heaps.allocate(2, 8);
  ASSERT_NE(other, 0u);
  EXPECT_EQ(memory.find(other, 8)->domain, 2u);
  EXPECT_EQ(heaps.release(1), 4096u);
  EXPECT_EQ(heaps.release(1), 0u);
  EXPECT_EQ(memory.bytesInUse(), 4096u);
  EXPECT_EQ(heaps.allocate(1, 8) % 16, 0u) << "a released heap is made again";
}

namespace {
// `keep` mallocs a block from thread 0 and writes 42 into it and its address
// into out[0]; `poke` writes into the address it is given; `release` frees
// it. `badFree` frees the address it is given.
const char *kHeap = R"(
.extern .func (.param .b64 func_retval0) malloc(.param .b64 malloc_param_0);
.extern .func free(.param .b64 free_param_0);
.visible .entry keep(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  {
  .param .b64 param0;
  st.param.b64 [param0+0], 64;
  .param .b64 retval0;
  call.uni (retval0), malloc, (param0);
  ld.param.b64 %rd2, [retval0+0];
  }
  mov.u32 %r1, 42;
  st.global.u32 [%rd2], %r1;
  st.global.u64 [%rd1], %rd2;
  ret;
}
.visible .entry poke(.param .u64 at)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [at];
  mov.u32 %r1, 7;
  st.global.u32 [%rd1+4], %r1;
  ret;
}
.visible .entry badFree(.param .u64 at)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [at];
  {
  .param .b64 param0;
  st.param.b64 [param0+0], %rd1;
  call.uni free, (param0);
  }
  ret;
}
)";
} // namespace

// A block of one domain's heap outlives its launch, and another launch of
// the same domain may use it; another domain's launch may not (its heap is
// memory of the first domain); free of an address malloc did not return
// ends the launch with an error that says so.
TEST(CpuDevice, DeviceHeapBlocksBelongToTheirDomain) {
  Fixture f(kHeap, 1);
  ASSERT_TRUE(f.loaded);
  uint64_t out = llvm::cantFail(f.device.memory().allocate(8, 7));
  LaunchConfig c = launchOf(1, 1);
  c.memoryDomains = {7};
  ASSERT_EQ(f.launch("keep", c, f.params("keep", {out})), "");
  uint64_t block = 0;
  llvm::cantFail(f.device.memory().copyFromDevice(&block, out, 8));
  ASSERT_NE(block, 0u);
  EXPECT_EQ(f.read(block, 1)[0], 42u);
  EXPECT_EQ(f.device.heaps().blocksInUse(7), 1u);
  EXPECT_EQ(f.launch("poke", c, f.params("poke", {block})), "");
  EXPECT_EQ(f.read(block, 2)[1], 7u);
  c.memoryDomains = {9};
  EXPECT_NE(f.launch("poke", c, f.params("poke", {block}))
                .find("out-of-bounds write"),
            std::string::npos)
      << "domain 9 wrote domain 7's heap";
  c.memoryDomains = {7};
  std::string e = f.launch("badFree", c, f.params("badFree", {out}));
  EXPECT_NE(e.find("device-side free(0x"), std::string::npos) << e;
  EXPECT_NE(e.find("not a block that device-side malloc returned"),
            std::string::npos)
      << e;
  EXPECT_EQ(f.launch("badFree", c, f.params("badFree", {block})), "");
  EXPECT_EQ(f.device.heaps().blocksInUse(7), 0u);
  EXPECT_EQ(f.device.releaseDomain(7), 8u << 20);
}

// A launch in fault domains (a coalesced launch's parts): a fault ends only
// its domain; the blocks of the others all run, and the error names the
// domain that faulted.
TEST(CpuDevice, FaultDomainsFailAlone) {
  Fixture f(kDomains, 3);
  ASSERT_TRUE(f.loaded);
  for (const char *kernel : {"marks", "marksSync"}) {
    SCOPED_TRACE(kernel);
    constexpr uint32_t kBlocks = 12;
    uint64_t out = f.alloc(kBlocks * 4);
    LaunchConfig c = launchOf(kBlocks, 64);
    c.faultDomains = {0, 4, 8};
    llvm::Error e =
        f.device.launch(f.loaded, kernel, c, f.params(kernel, {out, 5}));
    ASSERT_TRUE(bool(e));
    std::vector<std::pair<size_t, std::string>> faults;
    llvm::handleAllErrors(
        std::move(e), [&](const FaultDomainsError &d) { faults = d.faults(); },
        [&](const llvm::ErrorInfoBase &other) {
          ADD_FAILURE() << "not a FaultDomainsError: " << other.message();
        });
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0].first, 1u);
    EXPECT_NE(faults[0].second.find("block (5,0,0)"), std::string::npos)
        << faults[0].second;
    std::vector<uint32_t> v = f.read(out, kBlocks);
    for (uint32_t b : {0u, 1u, 2u, 3u, 8u, 9u, 10u, 11u})
      EXPECT_EQ(v[b], b + 1) << "block " << b;
    EXPECT_EQ(v[5], 0u);

    // Bad domains are refused; without domains the fault ends the launch.
    c.faultDomains = {1, 4};
    EXPECT_NE(f.launch(kernel, c, f.params(kernel, {out, 99}))
                  .find("fault domains must start at block 0"),
              std::string::npos);
    c.faultDomains.clear();
    EXPECT_NE(f.launch(kernel, c, f.params(kernel, {out, 5})), "");
  }
}
} // namespace

namespace {
// Fiber stacks the system cannot map (each 4 PiB here, past any address
// space) end the launch with an error instead of the process; the device
// goes on serving.
TEST(CpuDevice, FiberStacksTheSystemRefusesFailTheLaunch) {
  CpuDevice::Options o;
  o.workers = 2;
  o.regions = false; // marksSync could run region by region.
  o.fiberStackBytes = size_t(1) << 52;
  CpuDevice device(o);
  CompileInput in;
  in.text = std::string(kHeader) + kDomains;
  in.name = "test.ptx";
  auto m = compile(in, llvm::cantFail(Target::parse("host")), {});
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  auto module = std::make_shared<const CompiledModule>(std::move(*m));
  auto loaded = device.loadModule(module);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  uint64_t out = llvm::cantFail(device.memory().allocate(64));
  auto params = [&](const char *kernel) {
    const KernelInfo *k = module->findKernel(kernel);
    std::vector<uint8_t> buf(k->paramBufferSize);
    uint32_t none = 99;
    std::memcpy(buf.data() + k->paramOffsets[0], &out, 8);
    std::memcpy(buf.data() + k->paramOffsets[1], &none, 4);
    return buf;
  };
  llvm::Error e =
      device.launch(*loaded, "marksSync", launchOf(2, 64), params("marksSync"));
  ASSERT_TRUE(bool(e));
  std::string msg = llvm::toString(std::move(e));
  EXPECT_NE(msg.find("kernel 'marksSync': cannot allocate the fiber stacks "
                     "of a block of 64 threads"),
            std::string::npos)
      << msg;
  // Kernels without barriers need no fiber stacks.
  EXPECT_FALSE(
      bool(device.launch(*loaded, "marks", launchOf(16, 32), params("marks"))));
  std::vector<uint32_t> v(16);
  llvm::cantFail(device.memory().copyFromDevice(v.data(), out, 64));
  EXPECT_EQ(v[15], 16u);
}
} // namespace

namespace {
// An indirect call reaches only a device function of the module: any other
// integer ends the launch with an error instead of jumping there.
const char *kIndirect = R"(
.func (.param .b32 r) twice(.param .b32 x)
{
  .reg .b32 %a;
  ld.param.b32 %a, [x];
  add.u32 %a, %a, %a;
  st.param.b32 [r], %a;
  ret;
}
.visible .entry addr(.param .u64 out)
{
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, twice;
  st.global.u64 [%rd1], %rd2;
  ret;
}
.visible .entry icall(.param .u64 fp, .param .u64 out)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [fp];
  ld.param.u64 %rd2, [out];
  {
    .param .b32 a;
    st.param.b32 [a], 21;
    .param .b32 r;
    proto: .callprototype (.param .b32 _) _ (.param .b32 _);
    call (r), %rd1, (a), proto;
    ld.param.b32 %r1, [r];
  }
  st.global.u32 [%rd2], %r1;
  ret;
}
)";

// Lanes of one warp at different collectives of the same mask: the launch
// fails with an error naming both, and the device stays usable.
const char *kMismatch = R"(
.visible .entry mismatch(.param .u64 out)
{
  .reg .pred %p;
  .reg .b32 %r<4>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p, %r1, 0;
  @%p bra A;
  vote.sync.ballot.b32 %r2, %p, 0xffffffff;
  bra.uni DONE;
A:
  shfl.sync.idx.b32 %r2, %r1, 0, 31, 0xffffffff;
DONE:
  st.global.u32 [%rd1], %r2;
  ret;
}
)";

TEST(CpuDevice, WarpCollectiveMismatchFailsTheLaunch) {
  Fixture f(kMismatch);
  ASSERT_TRUE(f.loaded);
  uint64_t out = f.alloc(16);
  for (int round = 0; round < 3; ++round) {
    std::string e =
        f.launch("mismatch", launchOf(2, 32), f.params("mismatch", {out}));
    EXPECT_NE(e.find("kernel 'mismatch': warp collective mismatch"),
              std::string::npos)
        << e;
  }
}

// out[g] = in[first + stride * g] for the global linear thread index g < n
// (blocks of any shape); and rows: out[g] = the sum of in[g * m + j] for
// j < m, a loop in each thread. Host code checks these accesses once per
// row of threads, or per thread's loop, when it can (WidenAccessChecks).
const char *kGather = R"(
.visible .entry gather(.param .u64 in, .param .u64 out, .param .u32 n,
                       .param .u32 first, .param .u32 stride)
{
  .reg .pred %p;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r2, [first];
  ld.param.u32 %r3, [stride];
  mov.u32 %r4, %tid.x;
  mov.u32 %r5, %tid.y;
  mov.u32 %r6, %ntid.x;
  mov.u32 %r7, %ntid.y;
  mov.u32 %r8, %ctaid.x;
  mad.lo.s32 %r9, %r5, %r6, %r4;
  mul.lo.s32 %r10, %r6, %r7;
  mad.lo.s32 %r11, %r8, %r10, %r9;
  setp.ge.u32 %p, %r11, %r1;
  @%p bra DONE;
  mad.lo.s32 %r12, %r11, %r3, %r2;
  mul.wide.s32 %rd3, %r12, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r13, [%rd4];
  mul.wide.u32 %rd5, %r11, 4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.u32 [%rd6], %r13;
DONE:
  ret;
}
.visible .entry rows(.param .u64 in, .param .u64 out, .param .u32 m)
{
  .reg .pred %p;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [m];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %ctaid.x;
  mad.lo.s32 %r5, %r4, %r3, %r2;
  mul.lo.s32 %r6, %r5, %r1;
  mov.u32 %r7, 0;
  mov.u32 %r8, 0;
LOOP:
  add.s32 %r9, %r6, %r8;
  mul.wide.u32 %rd3, %r9, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r10, [%rd4];
  add.s32 %r7, %r7, %r10;
  add.s32 %r8, %r8, 1;
  setp.lt.u32 %p, %r8, %r1;
  @%p bra LOOP;
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.u32 [%rd6], %r7;
  ret;
}
)";

// Bounds checks that host code makes once for a whole row of threads or a
// thread's loop still catch every out-of-bounds access, in the thread that
// makes it, with the error of a check per access: reads past the end at
// the last or the first thread of a block, below the start (a negative
// stride), with a stride of two, in a 2-D block, at one iteration of a
// thread's loop, and writes past the end. One worker, so that the blocks
// before the faulting one have filled the site cache (the hoisted checks
// run from the second block on). In bounds, the results are right.
TEST(CpuDevice, HoistedBoundsChecksCatchEveryOutOfBoundsAccess) {
  Fixture f(kGather, /*workers=*/1);
  ASSERT_TRUE(f.loaded);
  struct Case {
    const char *what;
    uint32_t bx, by, grid;
    uint32_t inElems, outElems, n, first, stride;
    // The faulting access: its element index in `in` (or in `out` for a
    // write), and the thread making it.
    int64_t badIndex;
    bool write;
    uint32_t block, tx, ty;
  };
  const Case cases[] = {
      {"past the end, last thread", 64, 1, 8, 511, 512, 512, 0, 1, 511, false,
       7, 63, 0},
      {"past the end, first thread", 64, 1, 8, 320, 512, 512, 0, 1, 320, false,
       5, 0, 0},
      {"below the start", 64, 1, 8, 512, 512, 512, 330, uint32_t(-1), -1, false,
       5, 11, 0},
      {"stride two", 64, 1, 8, 513, 512, 512, 0, 2, 514, false, 4, 1, 0},
      {"2-D block", 16, 4, 8, 229, 512, 512, 0, 1, 229, false, 3, 5, 2},
      {"write past the end", 64, 1, 8, 512, 200, 512, 0, 1, 200, true, 3, 8, 0},
  };
  for (const Case &c : cases) {
    uint64_t in = f.alloc(c.inElems * 4), out = f.alloc(c.outElems * 4);
    std::vector<uint32_t> init(c.inElems);
    for (uint32_t i = 0; i < c.inElems; ++i)
      init[i] = i * 3 + 1;
    llvm::cantFail(
        f.device.memory().copyToDevice(in, init.data(), init.size() * 4));
    LaunchConfig config;
    config.grid = {c.grid, 1, 1};
    config.block = {c.bx, c.by, 1};
    std::string e =
        f.launch("gather", config,
                 f.params("gather", {in, out, c.n, c.first, c.stride}));
    uint64_t addr = (c.write ? out : in) + uint64_t(c.badIndex * 4);
    std::string access = std::string("out-of-bounds ") +
                         (c.write ? "write" : "read") +
                         " of 4 bytes at address 0x" +
                         llvm::utohexstr(addr, /*LowerCase=*/true) + " ";
    std::string thread = "(block (" + std::to_string(c.block) +
                         ",0,0) thread (" + std::to_string(c.tx) + "," +
                         std::to_string(c.ty) + ",0))";
    EXPECT_NE(e.find("kernel 'gather': " + access), std::string::npos)
        << c.what << ": " << e;
    EXPECT_NE(e.find(thread), std::string::npos) << c.what << ": " << e;
    // The same kernel within bounds: as many threads as both buffers allow.
    uint32_t most = std::min(c.inElems, c.outElems);
    uint32_t first = c.stride == uint32_t(-1) ? most - 1 : 0;
    uint32_t n =
        c.stride == 2 ? std::min((c.inElems + 1) / 2, c.outElems) : most;
    EXPECT_EQ(f.launch("gather", config,
                       f.params("gather", {in, out, n, first, c.stride})),
              "")
        << c.what;
    std::vector<uint32_t> got = f.read(out, n);
    for (uint32_t g = 0; g < n; ++g)
      ASSERT_EQ(got[g], (first + c.stride * g) * 3 + 1)
          << c.what << ": out[" << g << "]";
  }

  // A thread's loop: thread 192 (block 3, thread 0) reads in[192 * 8 + 7].
  uint64_t in = f.alloc(1543 * 4), out = f.alloc(256 * 4);
  std::string e =
      f.launch("rows", launchOf(4, 64), f.params("rows", {in, out, 8}));
  EXPECT_NE(e.find("kernel 'rows': out-of-bounds read of 4 bytes at "
                   "address 0x" +
                   llvm::utohexstr(in + 1543 * 4, /*LowerCase=*/true) + " "),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("(block (3,0,0) thread (0,0,0))"), std::string::npos) << e;
  // Misaligned: every access of the launch; the first thread reports it.
  e = f.launch("gather", launchOf(8, 64),
               f.params("gather", {in + 2, out, 256, 0, 1}));
  EXPECT_NE(e.find("misaligned address 0x" +
                   llvm::utohexstr(in + 2, /*LowerCase=*/true)),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("(block (0,0,0) thread (0,0,0))"), std::string::npos) << e;
}

// `.local` and `.param` accesses are checked: inside the thread's own
// local memory and the parameter buffer they work, elsewhere the launch
// fails with an error (a store to address 16 used to end the process).
const char *kSpaces = R"(
.visible .entry spaces(.param .u64 where, .param .u64 off, .param .u64 out)
{
  .local .align 4 .b8 buf[16];
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [where];
  ld.param.u64 %rd2, [off];
  ld.param.u64 %rd3, [out];
  mov.u64 %rd4, buf;
  st.local.u32 [%rd4+4], 5;
  ld.local.u32 %r1, [%rd4+4];
  mov.u64 %rd5, off;
  add.u64 %rd5, %rd5, %rd2;
  ld.param.u32 %r2, [%rd5];
  add.u32 %r1, %r1, %r2;
  setp.ne.u64 %p1, %rd1, 0;
  @%p1 st.local.u32 [%rd1], 7;
  st.global.u32 [%rd3], %r1;
  ret;
}
)";

TEST(CpuDevice, LocalAndParamAccessesAreChecked) {
  Fixture f(kSpaces);
  ASSERT_TRUE(f.loaded);
  uint64_t out = f.alloc(16);
  // In bounds: 5 + the low word of `off` itself (param offset 0 of off).
  ASSERT_EQ(f.launch("spaces", launchOf(2, 8), f.params("spaces", {0, 0, out})),
            "");
  EXPECT_EQ(f.read(out, 1)[0], 5u);
  std::string e =
      f.launch("spaces", launchOf(2, 8), f.params("spaces", {16, 0, out}));
  EXPECT_NE(e.find("kernel 'spaces': out-of-bounds write of 4 bytes of "
                   "local memory at address 0x10 (outside the thread's "
                   "live stack frames)"),
            std::string::npos)
      << e;
  e = f.launch("spaces", launchOf(1, 1), f.params("spaces", {0, 4096, out}));
  EXPECT_NE(e.find("out-of-bounds read of 4 bytes of parameter space"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("(outside the 24-byte parameter buffer)"), std::string::npos)
      << e;
  ASSERT_EQ(f.launch("spaces", launchOf(1, 1), f.params("spaces", {0, 0, out})),
            "");
}

// Unbounded recursion: the stack overflows (the worker thread's in direct
// mode, the fiber's with a barrier); the launch fails with an error, and the
// device and its other kernels go on. The store after the call keeps the
// recursion from becoming a loop.
const char *kRecursion = R"(
.func (.param .b32 r) deeper(.param .b32 n, .param .b64 out)
{
  .reg .b32 %a<3>;
  .reg .b64 %o;
  ld.param.b32 %a1, [n];
  ld.param.b64 %o, [out];
  add.u32 %a2, %a1, 1;
  {
    .param .b32 p0;
    st.param.b32 [p0], %a2;
    .param .b64 p1;
    st.param.b64 [p1], %o;
    .param .b32 r0;
    call (r0), deeper, (p0, p1);
    ld.param.b32 %a2, [r0];
  }
  st.global.u32 [%o], %a2;
  st.param.b32 [r], %a1;
  ret;
}
.visible .entry recurse(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  {
    .param .b32 p0;
    st.param.b32 [p0], 0;
    .param .b64 p1;
    st.param.b64 [p1], %rd1;
    .param .b32 r0;
    call (r0), deeper, (p0, p1);
    ld.param.b32 %r2, [r0];
  }
  st.global.u32 [%rd1], %r2;
  ret;
}
.visible .entry recurseSync(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  bar.sync 0;
  {
    .param .b32 p0;
    st.param.b32 [p0], 0;
    .param .b64 p1;
    st.param.b64 [p1], %rd1;
    .param .b32 r0;
    call (r0), deeper, (p0, p1);
    ld.param.b32 %r2, [r0];
  }
  st.global.u32 [%rd1], %r2;
  ret;
}
)";

TEST(CpuDevice, StackOverflowFailsTheLaunch) {
  Fixture f(std::string(kRecursion) + kIota);
  ASSERT_TRUE(f.loaded);
  uint64_t out = f.alloc(64 * 4);
  for (int round = 0; round < 2; ++round) {
    std::string e =
        f.launch("recurse", launchOf(3, 2), f.params("recurse", {out}));
    EXPECT_NE(e.find("kernel 'recurse': stack overflow: the thread's frames "
                     "outgrew the worker's stack"),
              std::string::npos)
        << e;
    // recurseSync runs region by region, on the worker's stack.
    e = f.launch("recurseSync", launchOf(3, 4), f.params("recurseSync", {out}));
    EXPECT_NE(e.find("kernel 'recurseSync': stack overflow: the thread's "
                     "frames outgrew the worker's stack"),
              std::string::npos)
        << e;
  }
  // As fibers, on each thread's own stack.
  Fixture fibers(kRecursion, /*workers=*/2, /*regions=*/false);
  ASSERT_TRUE(fibers.loaded);
  uint64_t out2 = fibers.alloc(64 * 4);
  std::string e = fibers.launch("recurseSync", launchOf(3, 4),
                                fibers.params("recurseSync", {out2}));
  EXPECT_NE(e.find("kernel 'recurseSync': stack overflow: the thread's "
                   "frames outgrew its fiber stack"),
            std::string::npos)
      << e;
  EXPECT_EQ(f.launch("iota", launchOf(2, 32), f.params("iota", {out, 64})), "");
  EXPECT_EQ(f.read(out, 64)[63], 63u);
}

TEST(CpuDevice, IndirectCallsReachOnlyFunctionsOfTheModule) {
  Fixture f(kIndirect);
  ASSERT_TRUE(f.loaded);
  uint64_t out = f.alloc(16);
  ASSERT_EQ(f.launch("addr", launchOf(1, 1), f.params("addr", {out})), "");
  uint64_t fp = 0;
  llvm::cantFail(f.device.memory().copyFromDevice(&fp, out, 8));
  ASSERT_EQ(f.launch("icall", launchOf(1, 1), f.params("icall", {fp, out})),
            "");
  EXPECT_EQ(f.read(out, 1)[0], 42u);
  for (uint64_t bad : {uint64_t(16), fp + 1, out}) {
    std::string e =
        f.launch("icall", launchOf(1, 4), f.params("icall", {bad, out}));
    EXPECT_NE(e.find("kernel 'icall': indirect call to 0x" +
                     llvm::utohexstr(bad, /*LowerCase=*/true) +
                     ", which is no function of the module"),
              std::string::npos)
        << e;
  }
  ASSERT_EQ(f.launch("icall", launchOf(1, 1), f.params("icall", {fp, out})),
            "");
}
} // namespace

namespace {
// A module compiled kernel by kernel and linked in parts: the parts share
// one instance of the module variable; a kernel cannot be added twice.
/// `text` compiled for the host with only `kernels` (one part of a module
/// compiled kernel by kernel).
std::shared_ptr<const CompiledModule>
compilePart(const std::string &text, std::vector<std::string> kernels) {
  CompileInput in;
  in.text = text;
  in.name = "parts.ptx";
  CompileOptions o;
  o.kernels = std::move(kernels);
  auto m = compile(in, llvm::cantFail(Target::parse("host")), o);
  EXPECT_TRUE(bool(m)) << (m ? "" : llvm::toString(m.takeError()));
  return std::make_shared<const CompiledModule>(std::move(*m));
}

// A function address taken by one part of a module compiled kernel by
// kernel may be called by another part: the parts share one instance of
// each device function (as of each variable).
TEST(CpuDevice, FunctionPointersCrossModuleParts) {
  std::string text = std::string(kHeader) + kIndirect;
  auto part = [&](std::vector<std::string> kernels) {
    return compilePart(text, std::move(kernels));
  };
  CpuDevice device;
  auto first = part({"addr"});
  auto second = part({"icall"});
  auto loaded = device.loadModule(first);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  ASSERT_FALSE(device.extendModule(*loaded, second));
  uint64_t out = llvm::cantFail(device.memory().allocate(16));
  std::vector<uint8_t> p(8);
  std::memcpy(p.data(), &out, 8);
  ASSERT_FALSE(device.launch(*loaded, "addr", launchOf(1, 1), p));
  uint64_t fp = 0;
  ASSERT_FALSE(device.memory().copyFromDevice(&fp, out, 8));
  const KernelInfo *k = second->findKernel("icall");
  std::vector<uint8_t> q(k->paramBufferSize);
  std::memcpy(q.data() + k->paramOffsets[0], &fp, 8);
  std::memcpy(q.data() + k->paramOffsets[1], &out, 8);
  llvm::Error e = device.launch(*loaded, "icall", launchOf(1, 1), q);
  ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));
  uint32_t v = 0;
  ASSERT_FALSE(device.memory().copyFromDevice(&v, out, 4));
  EXPECT_EQ(v, 42u);
}

TEST(CpuDevice, ModuleExtendedKernelByKernel) {
  std::string text = std::string(kHeader) + R"(
.global .align 4 .u32 counter = 7;
.visible .entry bump(.param .u32 v)
{
  .reg .b32 %r<4>;
  ld.param.u32 %r1, [v];
  ld.global.u32 %r2, [counter];
  add.u32 %r3, %r2, %r1;
  st.global.u32 [counter], %r3;
  ret;
}
.visible .entry read(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  ld.global.u32 %r1, [counter];
  st.global.u32 [%rd1], %r1;
  ret;
}
)";
  auto part = [&](std::vector<std::string> kernels) {
    return compilePart(text, std::move(kernels));
  };
  CpuDevice device;
  auto first = part({"bump"});
  auto loaded = device.loadModule(first);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  ASSERT_FALSE(device.extendModule(*loaded, part({"read"})));
  uint32_t five = 5;
  std::vector<uint8_t> p(4);
  std::memcpy(p.data(), &five, 4);
  ASSERT_FALSE(device.launch(*loaded, "bump", launchOf(1, 1), p));
  uint64_t out = llvm::cantFail(device.memory().allocate(4));
  std::vector<uint8_t> q(8);
  std::memcpy(q.data(), &out, 8);
  ASSERT_FALSE(device.launch(*loaded, "read", launchOf(1, 1), q));
  uint32_t v = 0;
  ASSERT_FALSE(device.memory().copyFromDevice(&v, out, 4));
  EXPECT_EQ(v, 12u) << "the second part reads the first part's variable";
  auto addr = device.globalAddress(*loaded, "counter");
  ASSERT_TRUE(bool(addr));
  ASSERT_FALSE(device.memory().copyFromDevice(&v, addr->first, 4));
  EXPECT_EQ(v, 12u);
  llvm::Error dup = device.extendModule(*loaded, part({"read"}));
  ASSERT_TRUE(bool(dup));
  EXPECT_EQ(llvm::toString(std::move(dup)), "kernel 'read' is already loaded");
  ASSERT_FALSE(device.unloadModule(*loaded));
}
} // namespace

namespace {
// Cuts in a loop and in divergent code: each warp w shuffles in a loop of
// w + 1 iterations (v += v of lane ^ 1), lane 0 of each warp stores v in
// shared memory, a barrier, then out[tid] = v + the next warp's part. And
// a block where thread 0 waits at a shuffle of the whole warp while the
// others wait at a barrier: a deadlock.
const char *kDivergentCuts = R"(
.visible .entry divcuts(.param .u64 out)
{
  .reg .pred %p;
  .reg .b32 %r<16>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b32 sh[4];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  mov.u32 %r3, %r1;
  mov.u32 %r4, 0;
LOOP:
  shfl.sync.bfly.b32 %r5, %r3, 1, 31, -1;
  add.s32 %r3, %r3, %r5;
  add.s32 %r4, %r4, 1;
  setp.le.u32 %p, %r4, %r2;
  @%p bra LOOP;
  and.b32 %r6, %r1, 31;
  setp.ne.u32 %p, %r6, 0;
  @%p bra SKIP;
  shl.b32 %r7, %r2, 2;
  mov.u32 %r8, sh;
  add.u32 %r8, %r8, %r7;
  st.shared.u32 [%r8], %r3;
SKIP:
  bar.sync 0;
  add.u32 %r9, %r2, 1;
  and.b32 %r9, %r9, 3;
  shl.b32 %r9, %r9, 2;
  mov.u32 %r10, sh;
  add.u32 %r10, %r10, %r9;
  ld.shared.u32 %r11, [%r10];
  add.s32 %r12, %r3, %r11;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r12;
  ret;
}
.visible .entry stuck()
{
  .reg .pred %p;
  .reg .b32 %r<4>;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p, %r1, 0;
  @%p bra BAR;
  shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;
  bra END;
BAR:
  bar.sync 0;
END:
  ret;
}
)";
} // namespace

TEST(CpuDevice, CutsInLoopsAndDivergentCodeRunRegionByRegion) {
  // The expected values, lane by lane.
  std::vector<uint32_t> v(128), part(4), want(128);
  for (uint32_t t = 0; t < 128; ++t)
    v[t] = t;
  for (uint32_t w = 0; w < 4; ++w)
    for (uint32_t i = 0; i <= w; ++i) {
      std::vector<uint32_t> before(v.begin() + 32 * w, v.begin() + 32 * w + 32);
      for (uint32_t l = 0; l < 32; ++l)
        v[32 * w + l] = before[l] + before[l ^ 1];
    }
  for (uint32_t w = 0; w < 4; ++w)
    part[w] = v[32 * w];
  for (uint32_t t = 0; t < 128; ++t)
    want[t] = v[t] + part[((t >> 5) + 1) & 3];
  for (bool regions : {true, false}) {
    Fixture f(kDivergentCuts, /*workers=*/2, regions);
    ASSERT_TRUE(f.loaded);
    EXPECT_FALSE(f.module->findKernel("divcuts")->regionSymbol.empty());
    EXPECT_EQ(f.module->findKernel("divcuts")->fiberReason, "");
    uint64_t out = f.alloc(128 * 4);
    EXPECT_EQ(f.launch("divcuts", launchOf(3, 128), f.params("divcuts", {out})),
              "");
    EXPECT_EQ(f.read(out, 128), want) << (regions ? "regions" : "fibers");
    // Both executors report the deadlock alike.
    std::string e = f.launch("stuck", launchOf(1, 64), {});
    EXPECT_NE(e.find("kernel 'stuck': deadlock in block (0,0,0): thread 0 at "
                     "a warp collective (mask 0xffffffff); thread 1 at a "
                     "barrier;"),
              std::string::npos)
        << (regions ? "regions: " : "fibers: ") << e;
  }
}
