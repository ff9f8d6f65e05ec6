//===- BackendTest.cpp - createBackend and the Backend interface --*- C++
//-*-===//
//
// One PTX kernel through `createBackend("cpu")` (memory, load, launch, read
// back); the errors of an unknown backend name; and the `cuda` backend with
// the stand-in drivers of FakeCudaDriver.cpp (no GPU needed): its start-up
// errors, and a launch that carries the compiled module's parameter layout
// to the driver.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Runtime/Backend.h"
#include "Wooly/Compiler/Compiler.h"

#include "FakeCudaDriver.h"

#include "gtest/gtest.h"

#include <cstring>
#include <vector>

using namespace wooly;

namespace {
std::string errorText(llvm::Error e) { return llvm::toString(std::move(e)); }

template <typename T> std::string errorText(llvm::Expected<T> &x) {
  EXPECT_FALSE(bool(x));
  return x ? std::string() : llvm::toString(x.takeError());
}

/// Adds 1 to each of the first `n` 32-bit words at `p` (one per thread).
const char *kPtx = R"(.version 7.0
.target sm_80
.address_size 64
.visible .entry inc(.param .u32 n, .param .u64 p)
{
  .reg .pred %p;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u32 %r1, [n];
  ld.param.u64 %rd1, [p];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p, %r2, %r1;
  @%p bra DONE;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r3, [%rd3];
  add.u32 %r3, %r3, 1;
  st.global.u32 [%rd3], %r3;
DONE:
  ret;
}
)";

std::shared_ptr<const CompiledModule> compileFor(const char *ptx,
                                                 llvm::StringRef target) {
  CompileInput in;
  in.text = ptx;
  in.name = "test.ptx";
  auto m = compile(in, llvm::cantFail(Target::parse(target)), {});
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return nullptr;
  }
  return std::make_shared<const CompiledModule>(std::move(*m));
}

std::shared_ptr<const CompiledModule> compileHost(const char *ptx) {
  return compileFor(ptx, "host");
}

/// The parameter buffer of `inc(n, p)`, laid out as the compiled module
/// says.
std::vector<uint8_t> incParams(const CompiledModule &m, uint32_t n,
                               uint64_t p) {
  const KernelInfo *k = m.findKernel("inc");
  EXPECT_NE(k, nullptr);
  if (!k)
    return {};
  std::vector<uint8_t> buf(k->paramBufferSize, 0);
  std::memcpy(buf.data() + k->paramOffsets[0], &n, 4);
  std::memcpy(buf.data() + k->paramOffsets[1], &p, 8);
  return buf;
}

TEST(BackendTest, Names) {
  EXPECT_EQ(backendNames().size(), 3u);
  EXPECT_EQ(backendNames()[0], "cpu");
  EXPECT_EQ(backendNames()[1], "cuda");
  EXPECT_EQ(backendNames()[2], "remote");
  EXPECT_TRUE(backendRunsOriginalPTX("cuda"));
  EXPECT_TRUE(backendRunsOriginalPTX("remote"));
  EXPECT_FALSE(backendRunsOriginalPTX("cpu"));
  EXPECT_FALSE(backendRunsOriginalPTX("hip"));
}

TEST(BackendTest, UnknownBackend) {
  auto b = createBackend("hip");
  EXPECT_EQ(errorText(b), "unknown backend 'hip' (cpu, cuda or remote)");
  auto empty = createBackend("");
  EXPECT_EQ(errorText(empty), "unknown backend '' (cpu, cuda or remote)");
  // The remote backend with no server there says so (quickly: the
  // connect timeout comes from the environment).
  setenv("WOOLY_CONNECT_TIMEOUT_MS", "200", 1);
  BackendOptions o;
  o.server = "ipc:///nonexistent/wooly-backend-test.sock";
  auto remote = createBackend("remote", o);
  unsetenv("WOOLY_CONNECT_TIMEOUT_MS");
  std::string text = errorText(remote);
  EXPECT_NE(text.find("no wooly-serve answered at "
                      "'ipc:///nonexistent/wooly-backend-test.sock'"),
            std::string::npos)
      << text;
}

TEST(BackendTest, CpuRunsAKernel) {
  BackendOptions options;
  options.cpuWorkers = 2;
  auto created = createBackend("cpu", options);
  ASSERT_TRUE(bool(created)) << llvm::toString(created.takeError());
  Backend &b = **created;
  EXPECT_EQ(b.kind(), "cpu");
  EXPECT_EQ(b.name(), "cpu (2 workers)");

  auto compiled = compileHost(kPtx);
  ASSERT_TRUE(compiled);
  auto module = b.loadModule(compiled, kPtx);
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());

  // 8 words, zero-filled; 0..5 copied in, word 7 set by memset.
  auto addr = b.allocate(32);
  ASSERT_TRUE(bool(addr)) << llvm::toString(addr.takeError());
  uint32_t words[8] = {};
  ASSERT_FALSE(bool(b.copyFromDevice(words, *addr, sizeof words)));
  for (uint32_t w : words)
    EXPECT_EQ(w, 0u);
  uint32_t in[6] = {0, 1, 2, 3, 4, 5};
  ASSERT_FALSE(bool(b.copyToDevice(*addr, in, sizeof in)));
  ASSERT_FALSE(bool(b.memset(*addr + 28, 0x01, 4)));

  // Threads 0..6 add 1; word 7 is left alone.
  LaunchConfig config;
  config.block = {8, 1, 1};
  ASSERT_FALSE(
      bool(b.launch(*module, "inc", config, incParams(*compiled, 7, *addr))));
  ASSERT_FALSE(bool(b.copyFromDevice(words, *addr, sizeof words)));
  for (uint32_t i = 0; i < 6; ++i)
    EXPECT_EQ(words[i], i + 1) << i;
  EXPECT_EQ(words[6], 1u);
  EXPECT_EQ(words[7], 0x01010101u);

  // The backend's own errors come back unchanged and leave it usable.
  config.block = {2048, 1, 1};
  EXPECT_EQ(errorText(b.launch(*module, "inc", config,
                               incParams(*compiled, 7, *addr))),
            "launch of kernel 'inc': block dimension x is 2048, the limit "
            "is 1024");

  EXPECT_FALSE(bool(b.free(*addr)));
  EXPECT_FALSE(bool(b.unloadModule(*module)));
  EXPECT_NE(errorText(b.unloadModule(*module))
                .find("not a module of this cpu "
                      "backend"),
            std::string::npos);

  // The cpu backend needs the compiled module, compiled for host.
  auto none = b.loadModule(nullptr, kPtx);
  EXPECT_NE(errorText(none).find("compiled host module"), std::string::npos);
  auto sm90 = compileFor(kPtx, "sm_90");
  ASSERT_TRUE(sm90);
  auto wrong = b.loadModule(sm90, kPtx);
  EXPECT_EQ(errorText(wrong),
            "the cpu backend runs modules compiled for host, not sm_90");
}

// Two allocations of equal bytes share one read-only copy (deduplication):
// copies into either fail, a kernel that writes one faults with a launch
// error (the process lives on, the shared bytes are unchanged; in direct,
// region and fiber mode), and after `unshare` the kernel runs and only the
// writer's bytes change.
const char *kSyncPtx = R"(.version 7.0
.target sm_80
.address_size 64
.visible .entry inc(.param .u32 n, .param .u64 p)
{
  .reg .pred %p;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u32 %r1, [n];
  ld.param.u64 %rd1, [p];
  mov.u32 %r2, %tid.x;
  bar.sync 0;
  setp.ge.u32 %p, %r2, %r1;
  @%p bra DONE;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r3, [%rd3];
  add.u32 %r3, %r3, 1;
  st.global.u32 [%rd3], %r3;
DONE:
  ret;
}
)";
/// nanosleep keeps a kernel on fibers (it may wait for other threads).
const char *kFiberPtx = R"(.version 7.0
.target sm_80
.address_size 64
.visible .entry inc(.param .u32 n, .param .u64 p)
{
  .reg .pred %p;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u32 %r1, [n];
  ld.param.u64 %rd1, [p];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p, %r2, %r1;
  @%p bra DONE;
  bar.sync 0;
  nanosleep.u32 1;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r3, [%rd3];
  add.u32 %r3, %r3, 1;
  st.global.u32 [%rd3], %r3;
DONE:
  ret;
}
)";

TEST(BackendTest, CpuSharedMemoryIsReadOnlyUntilUnshared) {
  for (const char *ptx : {kPtx, kSyncPtx, kFiberPtx}) {
    for (unsigned workers : {1u, 2u}) {
      BackendOptions options;
      options.cpuWorkers = workers;
      auto created = createBackend("cpu", options);
      ASSERT_TRUE(bool(created)) << llvm::toString(created.takeError());
      Backend &b = **created;
      ASSERT_TRUE(b.supportsSharing());
      auto compiled = compileHost(ptx);
      ASSERT_TRUE(compiled);
      // The three ways a block runs: direct, region by region, fibers.
      const KernelInfo *k = compiled->findKernel("inc");
      ASSERT_TRUE(k);
      EXPECT_EQ(k->needsFibers, ptx != kPtx);
      EXPECT_EQ(k->regionSymbol.empty(), ptx != kSyncPtx);
      auto module = b.loadModule(compiled, ptx);
      ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
      constexpr uint64_t kBytes = 3 * 4096 + 12;
      std::vector<uint32_t> words(kBytes / 4);
      for (size_t i = 0; i < words.size(); ++i)
        words[i] = uint32_t(i * 2654435761u);
      auto x = b.allocate(kBytes), y = b.allocate(kBytes);
      ASSERT_TRUE(x && y);
      ASSERT_FALSE(bool(b.copyToDevice(*x, words.data(), kBytes)));
      ASSERT_FALSE(bool(b.copyToDevice(*y, words.data(), kBytes)));
      auto same = b.sameBytes(*x, *y, kBytes);
      ASSERT_TRUE(same && *same);
      auto hx = b.contentHash(*x, kBytes), hy = b.contentHash(*y, kBytes);
      ASSERT_TRUE(hx && hy);
      EXPECT_EQ(*hx, *hy);
      ASSERT_FALSE(bool(b.share(*y, *x)));
      uint32_t one = 1;
      EXPECT_NE(errorText(b.copyToDevice(*y, &one, 4)).find("shared read-only"),
                std::string::npos);
      EXPECT_NE(errorText(b.memset(*x, 0, 4)).find("shared read-only"),
                std::string::npos);
      LaunchConfig config;
      config.block = {64, 1, 1};
      std::string error = errorText(
          b.launch(*module, "inc", config, incParams(*compiled, 64, *y)));
      EXPECT_NE(error.find("invalid memory access at address 0x"),
                std::string::npos)
          << error;
      std::vector<uint32_t> got(words.size());
      ASSERT_FALSE(bool(b.copyFromDevice(got.data(), *x, kBytes)));
      EXPECT_EQ(got, words);
      ASSERT_FALSE(bool(b.unshare(*y)));
      ASSERT_FALSE(
          bool(b.launch(*module, "inc", config, incParams(*compiled, 64, *y))));
      ASSERT_FALSE(bool(b.copyFromDevice(got.data(), *y, kBytes)));
      for (size_t i = 0; i < words.size(); ++i)
        ASSERT_EQ(got[i], words[i] + (i < 64 ? 1 : 0)) << i;
      ASSERT_FALSE(bool(b.copyFromDevice(got.data(), *x, kBytes)));
      EXPECT_EQ(got, words);
      // Both have their own pages again: x is writable.
      EXPECT_FALSE(bool(b.copyToDevice(*x, &one, 4)));
      EXPECT_FALSE(bool(b.free(*x)));
      EXPECT_FALSE(bool(b.free(*y)));
      EXPECT_FALSE(bool(b.unloadModule(*module)));
    }
  }
}

TEST(BackendTest, CudaWithoutDriver) {
  BackendOptions options;
  options.cudaDriverLibrary = "/nonexistent/libcuda.so.1";
  auto b = createBackend("cuda", options);
  std::string msg = errorText(b);
  EXPECT_NE(msg.find("CUDA driver /nonexistent/libcuda.so.1 not found ("),
            std::string::npos)
      << msg;
}

TEST(BackendTest, CudaWithoutDevice) {
  BackendOptions options;
  options.cudaDriverLibrary = FAKE_CUDA_NO_DEVICE;
  auto b = createBackend("cuda", options);
  EXPECT_EQ(errorText(b), "no CUDA device (CUDA_ERROR_NO_DEVICE: no "
                          "CUDA-capable device is detected)");
}

/// The last launch the full stand-in driver recorded.
const wooly::test::FakeLaunch *lastLaunch() {
  return wooly::test::fakeLastLaunch(FAKE_CUDA_FULL);
}

TEST(BackendTest, CudaLaunchesThePTX) {
  BackendOptions options;
  options.cudaDriverLibrary = FAKE_CUDA_FULL;
  auto created = createBackend("cuda", options);
  ASSERT_TRUE(bool(created)) << llvm::toString(created.takeError());
  Backend &b = **created;
  EXPECT_EQ(b.kind(), "cuda");
  EXPECT_EQ(b.name(), "Fake GPU");
  EXPECT_EQ(b.computeUnits(), 132u);
  EXPECT_EQ(b.nativeTarget(), "sm_90");
  EXPECT_TRUE(b.concurrentLaunches());

  auto addr = b.allocate(16);
  ASSERT_TRUE(bool(addr)) << llvm::toString(addr.takeError());
  uint8_t bytes[16];
  ASSERT_FALSE(bool(b.memset(*addr, 0x5a, 16)));
  ASSERT_FALSE(bool(b.copyFromDevice(bytes, *addr, 16)));
  EXPECT_EQ(bytes[15], 0x5a);

  // With a host compilation the cuda backend needs the original PTX text.
  auto compiled = compileHost(kPtx);
  ASSERT_TRUE(compiled);
  auto none = b.loadModule(compiled, "");
  EXPECT_NE(errorText(none).find("the original PTX or a module compiled "
                                 "for sm_XX"),
            std::string::npos);

  // With an sm_XX compilation it loads Wooly's PTX, not the text given (the
  // stand-in driver rejects PTX without an .entry).
  auto sm90 = compileFor(kPtx, "sm_90");
  ASSERT_TRUE(sm90);
  auto recompiled = b.loadModule(sm90, "// not PTX");
  ASSERT_TRUE(bool(recompiled)) << llvm::toString(recompiled.takeError());
  EXPECT_FALSE(bool(b.unloadModule(*recompiled)));
  auto original = b.loadModule(compiled, "// not PTX");
  EXPECT_NE(errorText(original).find("no .entry in the input"),
            std::string::npos);

  auto module = b.loadModule(compiled, kPtx);
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  LaunchConfig config;
  config.grid = {3, 1, 1};
  config.block = {64, 1, 1};
  config.dynamicSharedBytes = 256;
  std::vector<uint8_t> params = incParams(*compiled, 7, *addr);
  EXPECT_EQ(b.lastKernelMs(), std::nullopt);
  ASSERT_FALSE(bool(b.launch(*module, "inc", config, params)));
  // Timed by the (stand-in) driver's events.
  EXPECT_EQ(b.lastKernelMs(), 0.25);
  const wooly::test::FakeLaunch *last = lastLaunch();
  ASSERT_NE(last, nullptr);
  EXPECT_STREQ(last->kernel, "inc");
  EXPECT_EQ(last->grid[0], 3u);
  EXPECT_EQ(last->block[0], 64u);
  EXPECT_EQ(last->shared, 256u);
  EXPECT_EQ(last->params, params);

  // The compiled module's layout is checked against the buffer.
  std::vector<uint8_t> shortParams(params.begin(), params.begin() + 8);
  EXPECT_EQ(errorText(b.launch(*module, "inc", config, shortParams)),
            "launch of kernel 'inc': parameter 1 (offset 8, 8 bytes) lies "
            "outside the 8-byte parameter buffer");
  EXPECT_EQ(b.lastKernelMs(), std::nullopt);

  EXPECT_FALSE(bool(b.unloadModule(*module)));
  EXPECT_FALSE(bool(b.free(*addr)));
}
} // namespace
