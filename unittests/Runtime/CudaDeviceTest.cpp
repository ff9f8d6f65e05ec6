//===- CudaDeviceTest.cpp - CudaDevice with fake drivers --------*- C++ -*-===//
//
// CudaDevice (lib/Runtime/CUDA) loads the CUDA driver with dlopen. These
// tests give it stand-in drivers (FakeCudaDriver.cpp, built as libcuda.so.1
// in three folders), so they run without a GPU: the error messages, the
// order of initialisation and the launch's parameter-buffer wiring.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Runtime/CUDA/CudaDevice.h"

#include "FakeCudaDriver.h"

#include "gtest/gtest.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

using namespace wooly::cuda;

namespace {
std::string errorText(llvm::Error e) { return llvm::toString(std::move(e)); }

template <typename T> std::string errorText(llvm::Expected<T> &x) {
  EXPECT_FALSE(bool(x));
  return x ? std::string() : llvm::toString(x.takeError());
}

/// The last launch the full stand-in driver recorded.
const wooly::test::FakeLaunch *lastLaunch() {
  return wooly::test::fakeLastLaunch(FAKE_CUDA_FULL);
}

TEST(CudaDeviceTest, MissingDriver) {
  auto d = CudaDevice::open(0, "/nonexistent/libcuda.so.1");
  std::string msg = errorText(d);
  EXPECT_NE(msg.find("CUDA driver /nonexistent/libcuda.so.1 not found ("),
            std::string::npos)
      << msg;
}

TEST(CudaDeviceTest, NoDevice) {
  auto d = CudaDevice::open(0, FAKE_CUDA_NO_DEVICE);
  EXPECT_EQ(errorText(d), "no CUDA device (CUDA_ERROR_NO_DEVICE: no "
                          "CUDA-capable device is detected)");
}

TEST(CudaDeviceTest, MissingEntryPoint) {
  auto d = CudaDevice::open(0, FAKE_CUDA_INCOMPLETE);
  std::string msg = errorText(d);
  EXPECT_NE(msg.find("lacks the entry point cuLaunchKernel"), std::string::npos)
      << msg;
}

TEST(CudaDeviceTest, NoSuchOrdinal) {
  auto d = CudaDevice::open(3, FAKE_CUDA_FULL);
  EXPECT_EQ(errorText(d), "no CUDA device 3 (the driver reports 1)");
}

const char *kPtx = ".version 7.0\n.target sm_80\n.address_size 64\n"
                   ".global .u32 counter;\n"
                   ".visible .entry copy(.param .u32 n, .param .u64 p)\n"
                   "{ ret; }\n"
                   ".visible .entry faulty() { ret; }\n";

TEST(CudaDeviceTest, MemoryAndLaunch) {
  auto opened = CudaDevice::open(0, FAKE_CUDA_FULL);
  ASSERT_TRUE(bool(opened)) << llvm::toString(opened.takeError());
  CudaDevice &dev = **opened;
  EXPECT_EQ(dev.name(), "Fake GPU");
  EXPECT_EQ(dev.multiprocessorCount(), 132u);
  EXPECT_EQ(dev.computeCapability(), (std::pair<int, int>{9, 0}));

  // Memory: zero-filled allocations, copies both ways, memset.
  auto addr = dev.allocate(16);
  ASSERT_TRUE(bool(addr)) << llvm::toString(addr.takeError());
  uint8_t bytes[16];
  std::memset(bytes, 0xee, sizeof bytes);
  ASSERT_FALSE(bool(dev.copyFromDevice(bytes, *addr, 16)));
  for (uint8_t b : bytes)
    EXPECT_EQ(b, 0);
  uint8_t pattern[4] = {1, 2, 3, 4};
  ASSERT_FALSE(bool(dev.copyToDevice(*addr + 4, pattern, 4)));
  ASSERT_FALSE(bool(dev.memset(*addr + 12, 0x7f, 4)));
  ASSERT_FALSE(bool(dev.copyFromDevice(bytes, *addr, 16)));
  EXPECT_EQ(bytes[4], 1);
  EXPECT_EQ(bytes[7], 4);
  EXPECT_EQ(bytes[12], 0x7f);
  EXPECT_EQ(bytes[11], 0);

  // A PTX the JIT rejects: its log comes with the error.
  auto bad = dev.loadPTX("garbage");
  std::string msg = errorText(bad);
  EXPECT_NE(msg.find("CUDA_ERROR_INVALID_PTX"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ptxas fatal   : no .entry in the input"),
            std::string::npos)
      << msg;

  auto module = dev.loadPTX(kPtx);
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());

  // The parameter buffer reaches cuLaunchKernel through `extra`.
  std::vector<uint8_t> params(16, 0);
  uint32_t n = 42;
  std::memcpy(params.data(), &n, 4);
  std::memcpy(params.data() + 8, &*addr, 8);
  CudaLaunchConfig config;
  config.grid = {2, 3, 4};
  config.block = {32, 2, 1};
  config.dynamicSharedBytes = 1024;
  ASSERT_FALSE(
      bool(dev.launch(*module, "copy", config, params, {0, 8}, {4, 8})));
  const wooly::test::FakeLaunch *last = lastLaunch();
  ASSERT_NE(last, nullptr);
  EXPECT_STREQ(last->kernel, "copy");
  EXPECT_EQ(last->grid[2], 4u);
  EXPECT_EQ(last->block[0], 32u);
  EXPECT_EQ(last->shared, 1024u);
  EXPECT_EQ(last->params, params);

  // A parameter outside the buffer; an unknown kernel; a kernel that faults.
  EXPECT_EQ(
      errorText(dev.launch(*module, "copy", config, params, {0, 12}, {4, 8})),
      "launch of kernel 'copy': parameter 1 (offset 12, 8 bytes) lies "
      "outside the 16-byte parameter buffer");
  EXPECT_EQ(errorText(dev.launch(*module, "nope", config, params)),
            "no kernel 'nope' in the module (cuModuleGetFunction: "
            "CUDA_ERROR_NOT_FOUND: named symbol not found)");
  // An illegal address loses a GPU's context for good (CUDA's sticky
  // errors; the stand-in's "faulty" does not stick): the device says so,
  // from then on, in every error.
  EXPECT_FALSE(dev.lostReason());
  EXPECT_EQ(errorText(dev.launch(*module, "faulty", config, {})),
            "kernel 'faulty': CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory "
            "access was encountered; the device's context is lost for every "
            "tenant since this error (a fault that CUDA makes sticky for the "
            "whole context): restart wooly-serve");
  EXPECT_EQ(dev.lostReason().value_or(""),
            "kernel 'faulty': CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory "
            "access was encountered");

  // Module variables: address and size from the driver.
  auto var = dev.globalAddress(*module, "counter");
  ASSERT_TRUE(bool(var)) << llvm::toString(var.takeError());
  EXPECT_EQ(var->second, 4u);
  auto nope = dev.globalAddress(*module, "nope");
  EXPECT_EQ(errorText(nope), "no module variable 'nope' (cuModuleGetGlobal: "
                             "CUDA_ERROR_NOT_FOUND: named symbol not found)");

  // Each thread issues its work on a stream of its own (never the legacy
  // default stream, which the stand-in refuses), the same one every time.
  ASSERT_FALSE(bool(dev.launch(*module, "copy", config, params)));
  int mine = lastLaunch()->stream;
  EXPECT_NE(mine, 0);
  ASSERT_FALSE(bool(dev.launch(*module, "copy", config, params)));
  EXPECT_EQ(lastLaunch()->stream, mine);
  int other = 0;
  std::thread([&] {
    ASSERT_FALSE(bool(dev.launch(*module, "copy", config, params)));
    other = lastLaunch()->stream;
    // Its kernel times are its own.
    EXPECT_EQ(dev.lastKernelMs(), 0.25);
  }).join();
  EXPECT_NE(other, 0);
  EXPECT_NE(other, mine);

  // Device-to-device copies, overlapping ones as memmove.
  uint8_t seq[16];
  for (int i = 0; i < 16; ++i)
    seq[i] = uint8_t(i);
  ASSERT_FALSE(bool(dev.copyToDevice(*addr, seq, 16)));
  ASSERT_FALSE(bool(dev.copyDeviceToDevice(*addr + 3, *addr, 12)));
  ASSERT_FALSE(bool(dev.copyFromDevice(bytes, *addr, 16)));
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(bytes[3 + i], i) << i;

  EXPECT_FALSE(bool(dev.unloadModule(*module)));
  EXPECT_FALSE(bool(dev.free(*addr)));
}
} // namespace

namespace {
/// The stand-in driver's counts of reserved ranges, physical allocations
/// and mappings (FakeCudaDriver.cpp).
const unsigned long long *fakeVmm() {
  void *lib = dlopen(FAKE_CUDA_FULL, RTLD_NOW | RTLD_NOLOAD);
  if (!lib)
    return nullptr;
  auto fn = reinterpret_cast<const unsigned long long *(*)()>(
      dlsym(lib, "fakeCudaVmmLive"));
  return fn ? fn() : nullptr;
}
} // namespace

// With virtual memory management, an allocation is a reserved range with
// physical memory mapped in; swapping it out copies its bytes to host
// memory and releases the physical memory (the range stays reserved), and
// swapping it in maps new memory at the same address with the same bytes.
// Freeing a swapped-out allocation releases its range.
TEST(CudaDeviceTest, VirtualMemorySwapsAtTheSameAddress) {
  auto opened = CudaDevice::open(0, FAKE_CUDA_FULL);
  ASSERT_TRUE(bool(opened)) << llvm::toString(opened.takeError());
  CudaDevice &d = **opened;
  EXPECT_FALSE(d.virtualMemory());
  EXPECT_NE(errorText(d.swapOut(0x1000)).find("virtual memory management"),
            std::string::npos);
  ASSERT_FALSE(bool(d.enableVirtualMemory()));
  ASSERT_TRUE(d.virtualMemory());
  const unsigned long long *live = fakeVmm();
  ASSERT_TRUE(live);
  unsigned long long before[3] = {live[0], live[1], live[2]};
  constexpr uint64_t kBytes = 3 << 20; // two 2 MiB granules
  auto a = d.allocate(kBytes);
  ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
  EXPECT_EQ(live[0], before[0] + 1);
  EXPECT_EQ(live[1], before[1] + 1);
  EXPECT_EQ(live[2], before[2] + 1);
  std::vector<uint8_t> bytes(kBytes), got(kBytes, 0xff);
  for (uint64_t i = 0; i < kBytes; ++i)
    bytes[i] = uint8_t(i * 7 + (i >> 12));
  // Zero-filled at first.
  ASSERT_FALSE(bool(d.copyFromDevice(got.data(), *a, kBytes)));
  EXPECT_EQ(got, std::vector<uint8_t>(kBytes, 0));
  ASSERT_FALSE(bool(d.copyToDevice(*a, bytes.data(), kBytes)));
  ASSERT_FALSE(bool(d.swapOut(*a)));
  EXPECT_EQ(live[1], before[1]) << "the physical memory is released";
  EXPECT_EQ(live[2], before[2]);
  EXPECT_EQ(live[0], before[0] + 1) << "the range stays reserved";
  EXPECT_NE(errorText(d.swapOut(*a)).find("not a resident allocation"),
            std::string::npos);
  ASSERT_FALSE(bool(d.swapIn(*a)));
  EXPECT_EQ(live[1], before[1] + 1);
  std::fill(got.begin(), got.end(), 0);
  ASSERT_FALSE(bool(d.copyFromDevice(got.data(), *a, kBytes)));
  EXPECT_EQ(got, bytes);
  EXPECT_NE(errorText(d.swapIn(*a)).find("not swapped out"), std::string::npos);
  // Freed while swapped out: its range goes too.
  ASSERT_FALSE(bool(d.swapOut(*a)));
  ASSERT_FALSE(bool(d.free(*a)));
  EXPECT_EQ(live[0], before[0]);
  EXPECT_EQ(live[1], before[1]);
  EXPECT_EQ(live[2], before[2]);
  EXPECT_NE(errorText(d.free(*a)).find("not an allocation"), std::string::npos);
}

namespace {
/// The stand-in driver's own cuMemcpyHtoD, which checks the access of the
/// mappings it writes (read-only ones refuse).
int fakeCopyToDevice(uint64_t dst, const void *src, size_t bytes) {
  void *lib = dlopen(FAKE_CUDA_FULL, RTLD_NOW | RTLD_NOLOAD);
  auto fn =
      lib ? reinterpret_cast<int (*)(unsigned long long, const void *, size_t)>(
                dlsym(lib, "cuMemcpyHtoD_v2"))
          : nullptr;
  return fn ? fn(dst, src, bytes) : -1;
}
} // namespace

// Deduplication with virtual memory management: allocations of equal bytes
// map one physical allocation, read-only, each at its own address. Physical
// memory is counted once; writes fail while shared (in CudaDevice, and in
// the driver: the mappings are read-only); a swap refuses them; unsharing
// gives one member a private copy at the same address while the others
// keep reading the original bytes; the last member left gets the memory as
// its own, writable. Without virtual memory management, sharing is refused.
TEST(CudaDeviceTest, VirtualMemorySharesOneReadOnlyCopy) {
  auto opened = CudaDevice::open(0, FAKE_CUDA_FULL);
  ASSERT_TRUE(bool(opened)) << llvm::toString(opened.takeError());
  CudaDevice &d = **opened;
  auto plain = d.allocate(64);
  ASSERT_TRUE(bool(plain));
  EXPECT_NE(errorText(d.share(*plain, *plain))
                .find("needs virtual memory management"),
            std::string::npos);
  ASSERT_FALSE(bool(d.free(*plain)));
  ASSERT_FALSE(bool(d.enableVirtualMemory()));
  const unsigned long long *live = fakeVmm();
  ASSERT_TRUE(live);
  unsigned long long created = live[1], physical = live[3];
  constexpr uint64_t kBytes = 3 << 20, kRounded = 4 << 20; // 2 MiB granules
  std::vector<uint8_t> bytes(kBytes), got(kBytes);
  for (uint64_t i = 0; i < kBytes; ++i)
    bytes[i] = uint8_t(i * 13 + (i >> 11));
  uint64_t a[3];
  for (uint64_t &x : a) {
    auto r = d.allocate(kBytes);
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    x = *r;
    ASSERT_FALSE(bool(d.copyToDevice(x, bytes.data(), kBytes)));
  }
  EXPECT_EQ(live[1], created + 3);
  EXPECT_EQ(live[3], physical + 3 * kRounded);
  auto readBack = [&](uint64_t addr) {
    std::fill(got.begin(), got.end(), 0);
    EXPECT_FALSE(bool(d.copyFromDevice(got.data(), addr, kBytes)));
    return got;
  };

  ASSERT_FALSE(bool(d.share(a[1], a[0])));
  ASSERT_FALSE(bool(d.share(a[2], a[0])));
  EXPECT_EQ(live[1], created + 1) << "one physical copy for three";
  EXPECT_EQ(live[3], physical + kRounded);
  for (uint64_t x : a)
    EXPECT_EQ(readBack(x), bytes);
  EXPECT_NE(errorText(d.share(a[1], a[0])).find("shared already"),
            std::string::npos);
  // Every write fails, and changes nothing.
  uint8_t patch[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_NE(errorText(d.copyToDevice(a[1] + 100, patch, 8))
                .find("shared read-only with other tenants"),
            std::string::npos);
  EXPECT_NE(errorText(d.memset(a[0], 0, 8)).find("shared read-only"),
            std::string::npos);
  EXPECT_NE(
      errorText(d.copyDeviceToDevice(a[2], a[0], 8)).find("shared read-only"),
      std::string::npos);
  EXPECT_EQ(fakeCopyToDevice(a[1] + 100, patch, 8), 700)
      << "the driver's mapping is read-only";
  EXPECT_NE(errorText(d.swapOut(a[0])).find("shared with other allocations"),
            std::string::npos);
  EXPECT_NE(errorText(d.swapOut(a[2])).find("shared with other allocations"),
            std::string::npos);
  for (uint64_t x : a)
    EXPECT_EQ(readBack(x), bytes);

  // a[1] gets a private copy at its address, and writes it.
  ASSERT_FALSE(bool(d.unshare(a[1])));
  EXPECT_EQ(live[1], created + 2);
  EXPECT_EQ(live[3], physical + 2 * kRounded);
  EXPECT_EQ(readBack(a[1]), bytes);
  ASSERT_FALSE(bool(d.copyToDevice(a[1] + 100, patch, 8)));
  std::vector<uint8_t> patched = bytes;
  std::copy(patch, patch + 8, patched.begin() + 100);
  EXPECT_EQ(readBack(a[1]), patched);
  EXPECT_EQ(readBack(a[0]), bytes);
  EXPECT_EQ(readBack(a[2]), bytes);
  EXPECT_NE(errorText(d.memset(a[2], 0, 8)).find("shared read-only"),
            std::string::npos);
  EXPECT_NE(errorText(d.unshare(a[1])).find("not a shared allocation"),
            std::string::npos);

  // a[2] goes: a[0], left alone, keeps the copy's memory, writable.
  ASSERT_FALSE(bool(d.free(a[2])));
  EXPECT_EQ(live[1], created + 2);
  EXPECT_EQ(readBack(a[0]), bytes);
  ASSERT_FALSE(bool(d.memset(a[0] + 8, 0xee, 4)));
  std::vector<uint8_t> set = bytes;
  std::fill(set.begin() + 8, set.begin() + 12, 0xee);
  EXPECT_EQ(readBack(a[0]), set);
  EXPECT_EQ(readBack(a[1]), patched);
  ASSERT_FALSE(bool(d.swapOut(a[0])));
  ASSERT_FALSE(bool(d.swapIn(a[0])));
  EXPECT_EQ(readBack(a[0]), set);
  ASSERT_FALSE(bool(d.free(a[0])));
  ASSERT_FALSE(bool(d.free(a[1])));
  EXPECT_EQ(live[1], created);
  EXPECT_EQ(live[3], physical);
}

// A swap's copy runs without the device's lock: while a slow swap-out
// (the stand-in driver's copies to the host made to take 600 ms) is in
// flight, another thread allocates, copies, reads and frees other memory,
// and is done before the swap is.
TEST(CudaDeviceTest, SwapCopiesLetOtherCallsProceed) {
  auto opened = CudaDevice::open(0, FAKE_CUDA_FULL);
  ASSERT_TRUE(bool(opened)) << llvm::toString(opened.takeError());
  CudaDevice &d = **opened;
  ASSERT_FALSE(bool(d.enableVirtualMemory()));
  void *lib = dlopen(FAKE_CUDA_FULL, RTLD_NOW | RTLD_NOLOAD);
  auto slow = reinterpret_cast<void (*)(unsigned)>(
      lib ? dlsym(lib, "fakeCudaSlowCopies") : nullptr);
  ASSERT_TRUE(slow);
  constexpr uint64_t kBytes = 4 << 20;
  auto big = d.allocate(kBytes), other = d.allocate(64);
  ASSERT_TRUE(big && other);
  std::vector<uint8_t> bytes(kBytes);
  for (uint64_t i = 0; i < kBytes; ++i)
    bytes[i] = uint8_t(i * 31 + (i >> 9));
  ASSERT_FALSE(bool(d.copyToDevice(*big, bytes.data(), kBytes)));
  slow(600);
  std::atomic<bool> swapped{false};
  std::thread swapper([&] {
    EXPECT_FALSE(bool(d.swapOut(*big)));
    swapped = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  uint8_t in[64], out[64] = {};
  for (int i = 0; i < 64; ++i)
    in[i] = uint8_t(i + 1);
  EXPECT_FALSE(bool(d.copyToDevice(*other, in, 64)));
  EXPECT_FALSE(bool(d.copyFromDevice(out, *other, 64)));
  EXPECT_EQ(std::memcmp(in, out, 64), 0);
  auto more = d.allocate(64);
  ASSERT_TRUE(bool(more));
  EXPECT_FALSE(bool(d.free(*more)));
  EXPECT_NE(errorText(d.free(*big)).find("being swapped"), std::string::npos);
  EXPECT_FALSE(swapped.load()) << "the other calls did not wait for the swap";
  swapper.join();
  slow(0);
  ASSERT_FALSE(bool(d.swapIn(*big)));
  std::vector<uint8_t> got(kBytes);
  ASSERT_FALSE(bool(d.copyFromDevice(got.data(), *big, kBytes)));
  EXPECT_EQ(got, bytes);
  EXPECT_FALSE(bool(d.free(*big)));
  EXPECT_FALSE(bool(d.free(*other)));
}
