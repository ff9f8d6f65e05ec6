//===- MemoryManagerTest.cpp - One device memory for many tenants ---------===//
//
// The memory manager (lib/Server/MemoryManager.cpp) over the real cpu
// backend, whose allocations are reserved address ranges with pages mapped
// in and out: random allocations, frees and work by many tenants whose
// quotas add up to several times the device, with every counter checked
// against a model after every step and every byte checked at the end.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Server/MemoryManager.h"
#include "Wooly/Runtime/Backend.h"

#include "gtest/gtest.h"

#include <map>
#include <random>
#include <vector>

using namespace wooly;
using namespace wooly::server;

namespace {

constexpr uint64_t kMiB = 1 << 20;

std::unique_ptr<Backend> cpuBackend() {
  BackendOptions o;
  o.cpuWorkers = 1;
  auto b = createBackend("cpu", o);
  EXPECT_TRUE(bool(b));
  return b ? std::move(*b) : nullptr;
}

/// The byte at offset `i` of allocation `addr` (a pattern of its own).
uint8_t pattern(uint64_t addr, uint64_t i) {
  uint64_t x = (addr >> 12) * 0x9E3779B97F4A7C15ull + i * 0x2545F4914F6CDD1Dull;
  return uint8_t(x >> 56);
}

std::vector<uint8_t> patternOf(uint64_t addr, uint64_t bytes) {
  std::vector<uint8_t> v(bytes);
  for (uint64_t i = 0; i < bytes; ++i)
    v[i] = pattern(addr, i);
  return v;
}

/// What the test knows of one tenant.
struct Model {
  uint64_t id = 0, quota = 0;
  std::map<uint64_t, uint64_t> allocations; // addr -> bytes
  unsigned busy = 0;
  uint64_t sum() const {
    uint64_t s = 0;
    for (auto &[a, b] : allocations)
      s += b;
    return s;
  }
};

/// Counters that may not change when a call fails.
std::vector<uint64_t> snapshot(const MemoryManager &m) {
  DeviceMemoryUsage d = m.device();
  std::vector<uint64_t> v = {d.physical, d.swapped, d.evictions, d.swapOuts,
                             d.swapIns};
  for (const TenantMemory &t : m.tenants()) {
    v.push_back(t.resident);
    v.push_back(t.swapped);
  }
  return v;
}

// Random allocations, frees, work and module variables by 8 tenants with
// 32 MiB quotas on a 64 MiB device: after every step the counters agree
// with the allocations (MemoryManager::verify), none exceeds the capacity
// or a quota, each tenant's view is the sum of its own allocations, a
// failed allocation changes nothing, and a tenant holding work has all of
// its memory resident. At the end every byte is what was written, at the
// address it was written to.
TEST(MemoryManagerTest, RandomOrdersKeepEveryCounterExact) {
  auto backend = cpuBackend();
  ASSERT_TRUE(backend);
  ASSERT_TRUE(backend->supportsSwap());
  MemoryManager mm(*backend, 64 * kMiB);
  std::mt19937_64 rng(1234);
  std::vector<Model> tenants(8);
  for (size_t i = 0; i < tenants.size(); ++i) {
    tenants[i].quota = 32 * kMiB;
    tenants[i].id = mm.addTenant("t" + std::to_string(i), tenants[i].quota);
  }
  uint64_t pinnedKey = 1ull << 63; // not an address
  std::map<uint64_t, std::pair<size_t, uint64_t>> pinned;
  unsigned refused = 0, allocated = 0;
  for (int step = 0; step < 3000; ++step) {
    Model &t = tenants[rng() % tenants.size()];
    unsigned action = rng() % 100;
    if (action < 40) {
      // Mostly small, sometimes large (up to 12 MiB).
      uint64_t bytes =
          rng() % 4 == 0 ? 1 + rng() % (12 * kMiB) : 1 + rng() % (64 << 10);
      std::vector<uint64_t> before = snapshot(mm);
      auto a = mm.allocate(t.id, bytes);
      if (!a) {
        llvm::consumeError(a.takeError());
        EXPECT_EQ(snapshot(mm), before) << "a refused allocation changed "
                                           "something, step "
                                        << step;
        ++refused;
      } else {
        ++allocated;
        t.allocations[*a] = bytes;
        std::vector<uint8_t> p = patternOf(*a, bytes);
        EXPECT_FALSE(bool(backend->copyToDevice(*a, p.data(), bytes)));
      }
    } else if (action < 65) {
      if (!t.allocations.empty()) {
        auto it = t.allocations.begin();
        std::advance(it, rng() % t.allocations.size());
        EXPECT_FALSE(bool(mm.free(it->first)));
        t.allocations.erase(it);
      }
    } else if (action < 82) {
      Acquired a = mm.acquire(t.id);
      if (a == Acquired::Yes) {
        ++t.busy;
        // Its memory is all there while it works.
        EXPECT_EQ(mm.tenant(t.id).swapped, 0u);
        for (auto &[addr, bytes] : t.allocations) {
          uint8_t b = 0;
          EXPECT_FALSE(bool(backend->copyFromDevice(&b, addr + bytes - 1, 1)));
          EXPECT_EQ(b, pattern(addr, bytes - 1));
        }
      }
    } else if (action < 97) {
      if (t.busy) {
        mm.release(t.id);
        --t.busy;
      }
    } else if (pinned.size() < 8) {
      // A module's variables: reserved, or refused with nothing changed.
      uint64_t bytes = 1 + rng() % (256 << 10);
      size_t owner = &t - tenants.data();
      std::vector<uint64_t> before = snapshot(mm);
      if (llvm::Error e = mm.reservePinned(t.id, pinnedKey, bytes)) {
        llvm::consumeError(std::move(e));
        EXPECT_EQ(snapshot(mm), before) << "step " << step;
      } else {
        pinned[pinnedKey] = {owner, bytes};
      }
      ++pinnedKey;
    } else {
      auto it = pinned.begin();
      mm.removePinned(it->first);
      pinned.erase(it);
    }
    ASSERT_EQ(mm.verify(), "") << "step " << step;
    DeviceMemoryUsage d = mm.device();
    ASSERT_LE(d.physical, d.capacity) << "step " << step;
    for (const Model &m : tenants) {
      TenantMemory v = mm.tenant(m.id);
      ASSERT_EQ(v.allocations, m.sum()) << v.name << " at step " << step;
      ASSERT_LE(v.used(), m.quota);
      ASSERT_EQ(v.busy, m.busy);
    }
  }
  EXPECT_GT(allocated, 100u);
  EXPECT_GT(refused, 0u) << "the device never filled";
  DeviceMemoryUsage d = mm.device();
  EXPECT_GT(d.evictions, 0u);
  EXPECT_GT(d.swapIns, 0u);
  // Every byte, once each tenant's memory is back.
  for (Model &t : tenants) {
    while (t.busy) {
      mm.release(t.id);
      --t.busy;
    }
  }
  for (Model &t : tenants) {
    ASSERT_EQ(mm.acquire(t.id), Acquired::Yes) << mm.tenant(t.id).name;
    for (auto &[addr, bytes] : t.allocations) {
      std::vector<uint8_t> got(bytes);
      ASSERT_FALSE(bool(backend->copyFromDevice(got.data(), addr, bytes)));
      EXPECT_EQ(got, patternOf(addr, bytes)) << "allocation " << addr;
    }
    mm.release(t.id);
  }
  // Everything freed: every counter back to 0 but the pinned bytes.
  for (Model &t : tenants)
    for (auto &[addr, bytes] : t.allocations)
      EXPECT_FALSE(bool(mm.free(addr)));
  for (auto &[addr, p] : pinned)
    mm.removePinned(addr);
  EXPECT_EQ(mm.verify(), "");
  EXPECT_EQ(mm.device().physical, 0u);
  EXPECT_EQ(mm.device().swapped, 0u);
}

// When nothing can move out (every other tenant is working), an
// allocation fails with out of memory and nothing changes; a swap-in
// waits, and is refused outright when it could never fit.
TEST(MemoryManagerTest, NothingToEvictIsACleanOutOfMemory) {
  auto backend = cpuBackend();
  ASSERT_TRUE(backend);
  MemoryManager mm(*backend, 16 * kMiB);
  uint64_t a = mm.addTenant("a", 0), b = mm.addTenant("b", 0),
           c = mm.addTenant("c", 64 * kMiB);
  auto pa = mm.allocate(a, 8 * kMiB);
  ASSERT_TRUE(bool(pa));
  std::vector<uint8_t> p = patternOf(*pa, 8 * kMiB);
  ASSERT_FALSE(bool(backend->copyToDevice(*pa, p.data(), p.size())));
  ASSERT_EQ(mm.acquire(a), Acquired::Yes);
  auto pb = mm.allocate(b, 8 * kMiB);
  ASSERT_TRUE(bool(pb));
  ASSERT_EQ(mm.acquire(b), Acquired::Yes);
  std::vector<uint64_t> before = snapshot(mm);
  auto pc = mm.allocate(c, 1);
  ASSERT_FALSE(bool(pc));
  EXPECT_NE(llvm::toString(pc.takeError()).find("out of device memory"),
            std::string::npos);
  EXPECT_EQ(snapshot(mm), before);
  // Larger than the device: refused whatever is idle.
  auto big = mm.allocate(c, 17 * kMiB);
  ASSERT_FALSE(bool(big));
  llvm::consumeError(big.takeError());
  // `a` idle: its memory moves out for c, and c's for a's next work.
  mm.release(a);
  auto pc2 = mm.allocate(c, 8 * kMiB);
  ASSERT_TRUE(bool(pc2)) << llvm::toString(pc2.takeError());
  EXPECT_EQ(mm.tenant(a).swapped, 8 * kMiB);
  EXPECT_EQ(mm.tenant(a).evictions, 1u);
  // Copies into swapped-out memory are refused (never a wild access).
  llvm::Error e = backend->copyToDevice(*pa, p.data(), 16);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("swapped out"),
            std::string::npos);
  // b works, c holds work: a waits.
  ASSERT_EQ(mm.acquire(c), Acquired::Yes);
  EXPECT_EQ(mm.acquire(a), Acquired::Wait);
  EXPECT_EQ(mm.tenant(a).swapped, 8 * kMiB);
  mm.release(c);
  ASSERT_EQ(mm.acquire(a), Acquired::Yes);
  std::vector<uint8_t> got(8 * kMiB);
  ASSERT_FALSE(bool(backend->copyFromDevice(got.data(), *pa, got.size())));
  EXPECT_EQ(got, p);
  EXPECT_EQ(mm.verify(), "");
  // Pinned memory of others that leaves no room: never.
  mm.release(a);
  mm.release(b);
  uint64_t d = mm.addTenant("d", 0);
  ASSERT_FALSE(bool(mm.reservePinned(d, 1ull << 63, 12 * kMiB)));
  EXPECT_EQ(mm.acquire(c), Acquired::Never);
  EXPECT_EQ(mm.verify(), "");
}

} // namespace
