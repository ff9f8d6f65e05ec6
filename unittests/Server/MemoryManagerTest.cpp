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

#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <thread>
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
  /// The pattern each allocation was filled with (its address, or one of
  /// a few contents that several allocations share), and the bytes
  /// written over it since.
  std::map<uint64_t, uint64_t> seeds;
  std::map<uint64_t, std::map<uint64_t, uint8_t>> writes;
  std::vector<uint8_t> expected(uint64_t addr) const {
    std::vector<uint8_t> v = patternOf(seeds.at(addr), allocations.at(addr));
    if (auto w = writes.find(addr); w != writes.end())
      for (auto [off, b] : w->second)
        v[off] = b;
    return v;
  }
  uint8_t expectedAt(uint64_t addr, uint64_t off) const {
    if (auto w = writes.find(addr); w != writes.end())
      if (auto b = w->second.find(off); b != w->second.end())
        return b->second;
    return pattern(seeds.at(addr), off);
  }
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

void fill(MemoryManager &mm, Backend &b, uint64_t tenant, uint64_t addr,
          const std::vector<uint8_t> &bytes);

// Random allocations, frees, work, module variables, and writes to
// buffers that often hold the same bytes as others' (deduplication, copy
// on write) by 8 tenants with
// 32 MiB quotas on a 64 MiB device: after every step the counters agree
// with the allocations (MemoryManager::verify), none exceeds the capacity
// or a quota, each tenant's view is the sum of its own allocations, a
// failed allocation changes nothing, and a tenant holding work has all of
// its memory resident. At the end every byte is what was written, at the
// address it was written to.
// `background`: swaps as wooly-serve runs them (swapInBackground), each
// run at a random later step, so that allocations, frees (of memory the
// swap is to move), work and writes fall between a swap's start and its
// end; allocations may wait for one (mayWait).
/// Returns how many calls waited for a swap, and how many frees came while
/// a swap was to move the memory (background).
void randomOrders(bool background, uint64_t seed, unsigned *waitedOut,
                  unsigned *deferredOut) {
  auto backend = cpuBackend();
  ASSERT_TRUE(backend);
  ASSERT_TRUE(backend->supportsSwap());
  MemoryManager mm(*backend, 64 * kMiB);
  std::mt19937_64 rng(seed);
  if (background)
    mm.swapInBackground([] {});
  unsigned waited = 0, deferred = 0;
  // Frees one of `t`'s allocations, at random.
  auto freeOne = [&](Model &t) {
    auto it = t.allocations.begin();
    std::advance(it, rng() % t.allocations.size());
    EXPECT_FALSE(bool(mm.free(it->first)));
    t.seeds.erase(it->first);
    t.writes.erase(it->first);
    t.allocations.erase(it);
  };
  // Runs the swap in flight, if any, to its end.
  auto settle = [&] {
    if (!mm.swapping())
      return;
    mm.runSwap();
    EXPECT_TRUE(mm.settleSwap());
  };
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
      // One in three holds one of a few contents shared across tenants.
      uint64_t seed = rng() % 3 == 0 ? 1 + rng() % 3 : 0;
      if (seed)
        bytes = seed == 1 ? 3 * kMiB + 5 : seed * 4096;
      std::vector<uint64_t> before = snapshot(mm);
      auto a = mm.allocate(t.id, bytes, 0, background && rng() % 2);
      if (!a) {
        waited += a.errorIsA<MustWaitError>();
        llvm::consumeError(a.takeError());
        EXPECT_EQ(snapshot(mm), before) << "a refused allocation changed "
                                           "something, step "
                                        << step;
        ++refused;
      } else {
        ++allocated;
        t.allocations[*a] = bytes;
        t.seeds[*a] = seed ? seed << 40 : *a;
        // Filled as the server fills it: a whole copy, announced.
        fill(mm, *backend, t.id, *a, patternOf(t.seeds[*a], bytes));
      }
    } else if (action < 47) {
      // A write to one byte, announced (copy on write where shared).
      if (!t.allocations.empty() && mm.acquire(t.id) == Acquired::Yes) {
        auto it = t.allocations.begin();
        std::advance(it, rng() % t.allocations.size());
        uint64_t off = rng() % it->second;
        uint8_t b = uint8_t(rng());
        std::vector<uint64_t> before = snapshot(mm);
        auto w = mm.beginWrite(t.id, it->first + off, 1);
        if (!w) {
          // No room for a private copy (or it waits for a swap): refused,
          // nothing changed.
          waited += w.errorIsA<MustWaitError>();
          llvm::consumeError(w.takeError());
          EXPECT_EQ(snapshot(mm), before) << "step " << step;
          ++refused;
        } else {
          EXPECT_FALSE(bool(backend->copyToDevice(it->first + off, &b, 1)));
          mm.endWrite(w->first);
          t.writes[it->first][off] = b;
        }
        mm.release(t.id);
      }
    } else if (action < 65) {
      if (!t.allocations.empty())
        freeOne(t);
    } else if (action < 82) {
      Acquired a = mm.acquire(t.id);
      if (a == Acquired::Wait && background && !t.allocations.empty() &&
          rng() % 2) {
        // Its memory is to come back (or others' move): it goes away
        // meanwhile, its allocations freed.
        freeOne(t);
        // Still counted: the swap frees it when its move ends.
        deferred += mm.tenant(t.id).allocations > t.sum();
      }
      if (a == Acquired::Yes) {
        ++t.busy;
        // Its memory is all there while it works.
        EXPECT_EQ(mm.tenant(t.id).swapped, 0u);
        for (auto &[addr, bytes] : t.allocations) {
          uint8_t b = 0;
          EXPECT_FALSE(bool(backend->copyFromDevice(&b, addr + bytes - 1, 1)));
          EXPECT_EQ(b, t.expectedAt(addr, bytes - 1));
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
    if (background && rng() % 6 == 0)
      settle();
    ASSERT_EQ(mm.verify(), "") << "step " << step;
    DeviceMemoryUsage d = mm.device();
    ASSERT_LE(d.physical, d.capacity) << "step " << step;
    for (const Model &m : tenants) {
      TenantMemory v = mm.tenant(m.id);
      // Memory freed while a swap is to move it goes when it has moved.
      if (mm.swapping())
        ASSERT_GE(v.allocations, m.sum()) << v.name << " at step " << step;
      else
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
  EXPECT_GT(d.dedupShares, 10u);
  EXPECT_GT(d.copiesOnWrite, 0u);
  *waitedOut += waited;
  *deferredOut += deferred;
  // Every byte, once each tenant's memory is back.
  settle();
  for (Model &t : tenants) {
    while (t.busy) {
      mm.release(t.id);
      --t.busy;
    }
  }
  for (Model &t : tenants) {
    Acquired got = mm.acquire(t.id);
    if (got == Acquired::Wait) {
      settle();
      got = mm.acquire(t.id);
    }
    ASSERT_EQ(got, Acquired::Yes) << mm.tenant(t.id).name;
    for (auto &[addr, bytes] : t.allocations) {
      std::vector<uint8_t> got(bytes);
      ASSERT_FALSE(bool(backend->copyFromDevice(got.data(), addr, bytes)));
      EXPECT_EQ(got, t.expected(addr)) << "allocation " << addr;
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

TEST(MemoryManagerTest, RandomOrdersKeepEveryCounterExact) {
  unsigned waited = 0, deferred = 0;
  randomOrders(/*background=*/false, 1234, &waited, &deferred);
  EXPECT_EQ(waited + deferred, 0u);
}

TEST(MemoryManagerTest, RandomOrdersWithSwapsInBackground) {
  unsigned waited = 0, deferred = 0;
  for (uint64_t seed : {1234u, 99u, 7u})
    randomOrders(/*background=*/true, seed, &waited, &deferred);
  EXPECT_GT(waited, 0u);
  EXPECT_GT(deferred, 0u) << "no memory was freed while a swap was to move it";
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

namespace {
/// Copies `bytes` into the allocation at `addr` as the server does: the
/// write is announced, done, and ended with the content hash of the data.
void fill(MemoryManager &mm, Backend &b, uint64_t tenant, uint64_t addr,
          const std::vector<uint8_t> &bytes) {
  auto w = mm.beginWrite(tenant, addr, bytes.size());
  ASSERT_TRUE(bool(w)) << llvm::toString(w.takeError());
  ASSERT_FALSE(
      llvm::errorToBool(b.copyToDevice(addr, bytes.data(), bytes.size())));
  uint64_t h = contentHashOf(bytes.size(), [&](uint64_t off, uint64_t n) {
    return llvm::ArrayRef<uint8_t>(bytes.data() + off, n);
  });
  bool whole = w->first == addr && w->second == bytes.size();
  mm.endWrite(w->first, whole ? std::optional<uint64_t>(h) : std::nullopt);
}

/// Tenants t0, t1, t2 (32 MiB quotas), each with one allocation of
/// `bytes`.
void threeTenants(MemoryManager &mm, uint64_t bytes, uint64_t (&t)[3],
                  uint64_t (&addr)[3]) {
  for (int i = 0; i < 3; ++i) {
    t[i] = mm.addTenant("t" + std::to_string(i), 32 * kMiB);
    auto a = mm.allocate(t[i], bytes);
    ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
    addr[i] = *a;
  }
}

std::vector<uint8_t> readBack(Backend &b, uint64_t addr, uint64_t bytes) {
  std::vector<uint8_t> v(bytes);
  EXPECT_FALSE(llvm::errorToBool(b.copyFromDevice(v.data(), addr, bytes)));
  return v;
}
} // namespace

// Three tenants load the same "weights": physical memory holds one copy,
// each at its own address; a write (announced as the server announces
// copies, memsets and kernels that may write) gives the writer a private
// copy and the others keep reading the original bytes; different bytes,
// a write in flight and a swapped-out twin never share; every counter
// stays exact (verify) through frees in any order.
TEST(MemoryManagerTest, IdenticalBuffersShareOneCopyUntilWritten) {
  std::unique_ptr<Backend> backend = cpuBackend();
  ASSERT_TRUE(backend && backend->supportsSharing());
  MemoryManager mm(*backend, 64 * kMiB);
  ASSERT_TRUE(mm.dedups());
  constexpr uint64_t kBytes = 8 * kMiB + 100; // not a whole number of pages
  std::vector<uint8_t> weights = patternOf(0x1000, kBytes);
  uint64_t t[3], addr[3];
  threeTenants(mm, kBytes, t, addr);
  for (int i = 0; i < 3; ++i) {
    fill(mm, *backend, t[i], addr[i], weights);
    EXPECT_EQ(mm.verify(), "");
  }
  DeviceMemoryUsage d = mm.device();
  EXPECT_EQ(d.physical, kBytes); // one copy
  EXPECT_EQ(d.saved, 2 * kBytes);
  EXPECT_EQ(d.dedupShares, 2u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(mm.tenant(t[i]).shared, kBytes);
    EXPECT_EQ(mm.tenant(t[i]).used(), kBytes); // each sees its own buffer
    EXPECT_EQ(readBack(*backend, addr[i], kBytes), weights);
  }
  // A shared copy is read-only: a write that was not announced fails.
  std::vector<uint8_t> one(1, 0xee);
  EXPECT_TRUE(llvm::errorToBool(backend->copyToDevice(addr[1], one.data(), 1)));

  // Tenant 1 writes (copy on write): its own copy, the others unchanged.
  auto w = mm.beginWrite(t[1], addr[1] + 4096, 1);
  ASSERT_TRUE(bool(w)) << llvm::toString(w.takeError());
  EXPECT_EQ(w->first, addr[1]);
  ASSERT_FALSE(
      llvm::errorToBool(backend->copyToDevice(addr[1] + 4096, one.data(), 1)));
  mm.endWrite(w->first);
  EXPECT_EQ(mm.verify(), "");
  d = mm.device();
  EXPECT_EQ(d.physical, 2 * kBytes);
  EXPECT_EQ(d.saved, kBytes);
  EXPECT_EQ(d.copiesOnWrite, 1u);
  EXPECT_EQ(mm.tenant(t[1]).shared, 0u);
  std::vector<uint8_t> written = weights;
  written[4096] = 0xee;
  EXPECT_EQ(readBack(*backend, addr[1], kBytes), written);
  EXPECT_EQ(readBack(*backend, addr[0], kBytes), weights);
  EXPECT_EQ(readBack(*backend, addr[2], kBytes), weights);

  // A fourth buffer with the same bytes but a write in flight (another
  // op's) does not share when its copy ends; different bytes never do.
  uint64_t t3 = mm.addTenant("t3", 32 * kMiB);
  auto a3 = mm.allocate(t3, kBytes);
  ASSERT_TRUE(bool(a3));
  auto inFlight = mm.beginWrite(t3, *a3, 1);
  ASSERT_TRUE(bool(inFlight));
  fill(mm, *backend, t3, *a3, weights);
  EXPECT_EQ(mm.device().physical, 3 * kBytes);
  mm.endWrite(inFlight->first);
  auto a4 = mm.allocate(t3, kBytes);
  ASSERT_TRUE(bool(a4));
  fill(mm, *backend, t3, *a4, written); // tenant 1's bytes now: private
  // ... which shares with tenant 1's buffer? No: tenant 1's was written
  // after its copy, so it is no candidate.
  EXPECT_EQ(mm.device().physical, 4 * kBytes);
  EXPECT_EQ(mm.verify(), "");

  // Frees in any order keep the counters exact; the last member of a
  // shared copy gets its own pages and keeps its bytes.
  ASSERT_FALSE(llvm::errorToBool(mm.free(addr[0])));
  EXPECT_EQ(mm.verify(), "");
  EXPECT_EQ(mm.tenant(t[2]).shared, 0u);
  EXPECT_EQ(mm.device().saved, 0u);
  EXPECT_EQ(readBack(*backend, addr[2], kBytes), weights);
  ASSERT_FALSE(llvm::errorToBool(backend->copyToDevice(addr[2], one.data(), 1)))
      << "the last member is writable again";
  for (uint64_t a : {addr[1], addr[2], *a3, *a4})
    ASSERT_FALSE(llvm::errorToBool(mm.free(a)));
  EXPECT_EQ(mm.verify(), "");
  EXPECT_EQ(mm.device().physical, 0u);
}

// A shared copy is not swapped out, and makes no idle tenant's memory look
// movable; a tenant whose other memory moves out keeps its shared buffer's
// bytes and gets the rest back intact.
TEST(MemoryManagerTest, SharedCopiesStayResidentThroughSwapping) {
  std::unique_ptr<Backend> backend = cpuBackend();
  ASSERT_TRUE(backend);
  MemoryManager mm(*backend, 32 * kMiB);
  std::vector<uint8_t> weights = patternOf(0x2000, 8 * kMiB);
  uint64_t a = mm.addTenant("a", 0), b = mm.addTenant("b", 0);
  auto wa = mm.allocate(a, 8 * kMiB), wb = mm.allocate(b, 8 * kMiB);
  ASSERT_TRUE(wa && wb);
  fill(mm, *backend, a, *wa, weights);
  fill(mm, *backend, b, *wb, weights);
  auto own = mm.allocate(a, 8 * kMiB);
  ASSERT_TRUE(bool(own));
  std::vector<uint8_t> mine = patternOf(0x3000, 8 * kMiB);
  fill(mm, *backend, a, *own, mine);
  EXPECT_EQ(mm.device().physical, 16 * kMiB);
  // b needs 20 MiB more: only a's own 8 MiB can move (16 + 20 - 8 = 28).
  auto big = mm.allocate(b, 20 * kMiB);
  ASSERT_TRUE(bool(big)) << llvm::toString(big.takeError());
  EXPECT_EQ(mm.tenant(a).swapped, 8 * kMiB);
  EXPECT_EQ(mm.tenant(a).shared, 8 * kMiB);
  EXPECT_EQ(mm.verify(), "");
  // Nothing more can move: a clean out-of-memory.
  auto more = mm.allocate(b, 8 * kMiB);
  EXPECT_FALSE(bool(more));
  llvm::consumeError(more.takeError());
  ASSERT_FALSE(llvm::errorToBool(mm.free(*big)));
  ASSERT_EQ(mm.acquire(a), Acquired::Yes);
  EXPECT_EQ(readBack(*backend, *own, 8 * kMiB), mine);
  EXPECT_EQ(readBack(*backend, *wa, 8 * kMiB), weights);
  mm.release(a);
  EXPECT_EQ(mm.verify(), "");
}

// An allocation the host fills in parts is hashed when a kernel that only
// reads it is about to run for the second time since (noteRead), once, and
// then shares; one last written by a kernel is never hashed.
TEST(MemoryManagerTest, BuffersFilledInPartsShareWhenFirstRead) {
  std::unique_ptr<Backend> backend = cpuBackend();
  ASSERT_TRUE(backend);
  MemoryManager mm(*backend, 64 * kMiB);
  constexpr uint64_t kBytes = 4 * kMiB;
  std::vector<uint8_t> weights = patternOf(0x4000, kBytes);
  uint64_t a = mm.addTenant("a", 0), b = mm.addTenant("b", 0),
           c = mm.addTenant("c", 0);
  auto wa = mm.allocate(a, kBytes), wb = mm.allocate(b, kBytes),
       wc = mm.allocate(c, kBytes);
  ASSERT_TRUE(wa && wb && wc);
  fill(mm, *backend, a, *wa, weights); // one copy: hashed at once
  // b: two halves, written from the host.
  for (uint64_t half = 0; half < 2; ++half) {
    auto w = mm.beginWrite(b, *wb + half * kBytes / 2, kBytes / 2);
    ASSERT_TRUE(bool(w));
    ASSERT_FALSE(bool(backend->copyToDevice(*wb + half * kBytes / 2,
                                            weights.data() + half * kBytes / 2,
                                            kBytes / 2)));
    EXPECT_EQ(mm.endWrite(w->first, std::nullopt, /*fromHost=*/true), "");
  }
  // c: the same bytes, but last written by a kernel.
  auto w = mm.beginWrite(c, *wc, 1);
  ASSERT_TRUE(bool(w));
  ASSERT_FALSE(bool(backend->copyToDevice(*wc, weights.data(), kBytes)));
  mm.endWrite(w->first, std::nullopt, /*fromHost=*/false);
  EXPECT_EQ(mm.device().saved, 0u);
  EXPECT_EQ(mm.noteRead(b, *wb), "") << "the first read: not hashed yet";
  EXPECT_EQ(mm.device().saved, 0u);
  EXPECT_NE(mm.noteRead(b, *wb + 12345).find("one copy kept for both"),
            std::string::npos);
  EXPECT_EQ(mm.device().saved, kBytes);
  EXPECT_EQ(mm.noteRead(b, *wb), "") << "hashed once";
  EXPECT_EQ(mm.noteRead(c, *wc), "") << "a kernel's bytes are not hashed";
  EXPECT_EQ(mm.noteRead(c, *wc), "") << "a kernel's bytes are not hashed";
  EXPECT_EQ(mm.noteRead(a, *wb), "") << "not a's allocation";
  EXPECT_EQ(mm.device().saved, kBytes);
  EXPECT_EQ(mm.verify(), "");
}

// A tenant configured without deduplication (`dedup: false`) never shares:
// neither its buffers with others' nor others' with its.
TEST(MemoryManagerTest, TenantsWithoutDedupNeverShare) {
  std::unique_ptr<Backend> backend = cpuBackend();
  ASSERT_TRUE(backend);
  MemoryManager mm(*backend, 64 * kMiB);
  std::vector<uint8_t> weights = patternOf(0x5000, 2 * kMiB);
  uint64_t secret = mm.addTenant("secret", 0, /*dedup=*/false),
           a = mm.addTenant("a", 0), b = mm.addTenant("b", 0);
  auto ws = mm.allocate(secret, weights.size());
  ASSERT_TRUE(bool(ws));
  fill(mm, *backend, secret, *ws, weights);
  auto wa = mm.allocate(a, weights.size());
  ASSERT_TRUE(bool(wa));
  fill(mm, *backend, a, *wa, weights);
  EXPECT_EQ(mm.device().saved, 0u);
  auto wb = mm.allocate(b, weights.size());
  ASSERT_TRUE(bool(wb));
  fill(mm, *backend, b, *wb, weights);
  EXPECT_EQ(mm.device().saved, weights.size()) << "a and b share";
  EXPECT_EQ(mm.tenant(secret).shared, 0u);
  EXPECT_EQ(mm.verify(), "");
}

// On the cuda backend (the stand-in driver, with virtual memory
// management) sharing and unsharing remap an allocation, which no kernel
// may use meanwhile: a tenant with other work acquired does not have its
// buffer remapped to share (it stays a candidate: a later twin shares
// with it instead), and its copy on write waits (MustWaitError, nothing
// changed) until its other work is released. Without virtual memory
// management the cuda backend does not share at all.
TEST(MemoryManagerTest, CudaRemapsOnlyWhileTheTenantHasNoOtherWork) {
  BackendOptions o;
  o.cudaDriverLibrary = FAKE_CUDA_FULL;
  auto plain = createBackend("cuda", o);
  ASSERT_TRUE(bool(plain)) << llvm::toString(plain.takeError());
  EXPECT_FALSE((*plain)->supportsSharing());
  EXPECT_FALSE(MemoryManager(**plain, 64 * kMiB).dedups());
  o.cudaVirtualMemory = true;
  auto created = createBackend("cuda", o);
  ASSERT_TRUE(bool(created)) << llvm::toString(created.takeError());
  Backend &backend = **created;
  ASSERT_TRUE(backend.supportsSharing() && backend.sharingRemaps());
  MemoryManager mm(backend, 64 * kMiB);
  ASSERT_TRUE(mm.dedups());
  constexpr uint64_t kBytes = 4 * kMiB;
  std::vector<uint8_t> weights = patternOf(0x2000, kBytes);
  uint64_t t[3], addr[3];
  threeTenants(mm, kBytes, t, addr);
  // t0 fills its buffer; t1 fills its own while it has other work (two
  // units acquired): it is not remapped.
  fill(mm, backend, t[0], addr[0], weights);
  ASSERT_EQ(mm.acquire(t[1]), Acquired::Yes);
  ASSERT_EQ(mm.acquire(t[1]), Acquired::Yes);
  fill(mm, backend, t[1], addr[1], weights);
  EXPECT_EQ(mm.device().saved, 0u);
  EXPECT_EQ(mm.verify(), "");
  // t2, idle, shares with t0's (the first candidate); t0 is never
  // remapped, only made read-only.
  fill(mm, backend, t[2], addr[2], weights);
  EXPECT_EQ(mm.device().saved, kBytes);
  EXPECT_EQ(mm.tenant(t[2]).shared, kBytes);
  EXPECT_EQ(mm.tenant(t[1]).shared, 0u);

  // t2 with other work: its copy on write waits, and nothing changes.
  ASSERT_EQ(mm.acquire(t[2]), Acquired::Yes);
  ASSERT_EQ(mm.acquire(t[2]), Acquired::Yes);
  auto w = mm.beginWrite(t[2], addr[2] + 64, 1);
  ASSERT_FALSE(bool(w));
  EXPECT_TRUE(w.takeError().isA<MustWaitError>());
  EXPECT_EQ(mm.device().saved, kBytes);
  EXPECT_EQ(mm.device().copiesOnWrite, 0u);
  EXPECT_EQ(mm.verify(), "");
  // Its other work done, the copy is made.
  mm.release(t[2]);
  bool copied = false;
  w = mm.beginWrite(t[2], addr[2] + 64, 1, &copied);
  ASSERT_TRUE(bool(w)) << llvm::toString(w.takeError());
  EXPECT_TRUE(copied);
  std::vector<uint8_t> one(1, 0x77);
  ASSERT_FALSE(
      llvm::errorToBool(backend.copyToDevice(addr[2] + 64, one.data(), 1)));
  mm.endWrite(w->first);
  mm.release(t[2]);
  mm.release(t[1]);
  mm.release(t[1]);
  EXPECT_EQ(mm.device().saved, 0u);
  EXPECT_EQ(mm.device().copiesOnWrite, 1u);
  EXPECT_EQ(mm.verify(), "");
  std::vector<uint8_t> written = weights;
  written[64] = 0x77;
  EXPECT_EQ(readBack(backend, addr[0], kBytes), weights);
  EXPECT_EQ(readBack(backend, addr[1], kBytes), weights);
  EXPECT_EQ(readBack(backend, addr[2], kBytes), written);
  for (uint64_t a : addr)
    ASSERT_FALSE(llvm::errorToBool(mm.free(a)));
  EXPECT_EQ(mm.verify(), "");
  EXPECT_EQ(mm.device().physical, 0u);
}

// Swaps off the caller's thread (swapInBackground, as wooly-serve runs
// them on its swap thread), made to last with a pause before each
// allocation moves: while a tenant's memory comes back, the tenants it
// moves out and the tenant itself acquire nothing, another tenant
// acquires, works, and allocates, and every counter stays exact at every
// step. A tenant whose memory is about to move in is killed (its
// allocations freed) mid-swap: they are freed, not moved, and the
// counters are exact once it settles. Every byte survives.
TEST(MemoryManagerTest, BackgroundSwapsLetOtherTenantsGoOn) {
  std::unique_ptr<Backend> backend = cpuBackend();
  ASSERT_TRUE(backend);
  MemoryManager mm(*backend, 64 * kMiB);
  ASSERT_TRUE(mm.swaps());
  uint64_t a = mm.addTenant("a", 64 * kMiB), b = mm.addTenant("b", 64 * kMiB),
           c = mm.addTenant("c", 64 * kMiB);
  std::map<uint64_t, uint64_t> sizes; // every allocation's bytes
  auto alloc = [&](uint64_t tenant, uint64_t bytes) {
    auto r = mm.allocate(tenant, bytes);
    EXPECT_TRUE(bool(r)) << llvm::toString(r.takeError());
    if (!r)
      return uint64_t(0);
    sizes[*r] = bytes;
    fill(mm, *backend, tenant, *r, patternOf(*r, bytes));
    return *r;
  };
  uint64_t a0 = alloc(a, 20 * kMiB), a1 = alloc(a, 20 * kMiB);
  uint64_t b0 = alloc(b, 20 * kMiB), b1 = alloc(b, 20 * kMiB); // a moves out
  uint64_t c0 = alloc(c, 2 * kMiB);
  ASSERT_EQ(mm.tenant(a).swapped, 40 * kMiB);
  std::atomic<int> starts{0};
  mm.swapInBackground([&] { starts++; }, std::chrono::milliseconds(300));

  // a's memory comes back: b moves out, on another thread (4 moves, 1.2 s).
  EXPECT_EQ(mm.acquire(a), Acquired::Wait);
  EXPECT_EQ(starts.load(), 1);
  EXPECT_TRUE(mm.swapping());
  std::thread swapper([&] { mm.runSwap(); });
  EXPECT_EQ(mm.acquire(a), Acquired::Wait);
  EXPECT_EQ(mm.acquire(b), Acquired::Wait) << "b's memory is moving out";
  EXPECT_EQ(starts.load(), 1) << "one swap at a time";
  // c goes on: it works on its memory and allocates more.
  ASSERT_EQ(mm.acquire(c), Acquired::Yes);
  std::vector<uint8_t> ones(2 * kMiB, 0x11);
  fill(mm, *backend, c, c0, ones);
  mm.release(c);
  uint64_t c1 = alloc(c, 2 * kMiB);
  EXPECT_EQ(mm.verify(), "");
  EXPECT_TRUE(mm.swapping()) << "c's work was done while the swap ran";
  EXPECT_EQ(mm.device().swapIns, 0u);
  swapper.join();
  EXPECT_TRUE(mm.settleSwap());
  EXPECT_FALSE(mm.swapping());
  EXPECT_EQ(mm.verify(), "");
  ASSERT_EQ(mm.acquire(a), Acquired::Yes);
  EXPECT_EQ(mm.tenant(a).resident, 40 * kMiB);
  EXPECT_EQ(mm.tenant(b).swapped, 40 * kMiB);
  for (uint64_t x : {a0, a1})
    EXPECT_EQ(readBack(*backend, x, sizes[x]), patternOf(x, sizes[x]));
  mm.release(a);

  // b's memory is to come back; b is killed before it has.
  uint64_t swapInsBefore = mm.device().swapIns;
  EXPECT_EQ(mm.acquire(b), Acquired::Wait);
  std::thread swapper2([&] { mm.runSwap(); });
  for (uint64_t x : {b0, b1})
    ASSERT_FALSE(llvm::errorToBool(mm.free(x)));
  EXPECT_TRUE(llvm::errorToBool(mm.free(b0))) << "freed once";
  EXPECT_FALSE(mm.removeTenant(b)) << "its memory is still moving";
  EXPECT_EQ(mm.verify(), "");
  swapper2.join();
  EXPECT_TRUE(mm.settleSwap());
  EXPECT_EQ(mm.verify(), "");
  EXPECT_EQ(mm.tenant(b).used(), 0u);
  EXPECT_EQ(mm.device().swapIns, swapInsBefore) << "freed, not moved in";
  EXPECT_TRUE(mm.removeTenant(b));
  // a and c (moved out for b, or not) come back with every byte.
  mm.swapInBackground([&] { starts++; }); // no pause
  for (uint64_t t : {a, c}) {
    Acquired got = mm.acquire(t);
    if (got == Acquired::Wait) {
      mm.runSwap();
      EXPECT_TRUE(mm.settleSwap());
      got = mm.acquire(t);
    }
    ASSERT_EQ(got, Acquired::Yes);
    mm.release(t);
  }
  EXPECT_EQ(readBack(*backend, c0, 2 * kMiB), ones);
  for (uint64_t x : {a0, a1, c1})
    EXPECT_EQ(readBack(*backend, x, sizes[x]), patternOf(x, sizes[x]));
  EXPECT_EQ(mm.device().swapped, 0u);
  EXPECT_EQ(mm.verify(), "");

  // An allocation that needs idle memory moved out (mayWait): the swap
  // starts, the call waits (MustWaitError, nothing allocated) until it
  // settles, then succeeds; without mayWait it moves memory at once.
  uint64_t d = mm.addTenant("d", 64 * kMiB);
  uint64_t physical = mm.device().physical;
  auto r = mm.allocate(d, 40 * kMiB, 0, /*mayWait=*/true);
  ASSERT_FALSE(bool(r));
  EXPECT_TRUE(r.takeError().isA<MustWaitError>());
  EXPECT_TRUE(mm.swapping());
  EXPECT_EQ(mm.device().physical, physical);
  r = mm.allocate(d, 40 * kMiB, 0, /*mayWait=*/true);
  ASSERT_FALSE(bool(r));
  EXPECT_TRUE(r.takeError().isA<MustWaitError>()) << "the swap is in flight";
  EXPECT_EQ(mm.verify(), "");
  mm.runSwap();
  EXPECT_TRUE(mm.settleSwap());
  r = mm.allocate(d, 40 * kMiB, 0, /*mayWait=*/true);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(mm.tenant(a).swapped, 40 * kMiB);
  EXPECT_EQ(mm.verify(), "");
  ASSERT_FALSE(llvm::errorToBool(mm.free(*r)));
  EXPECT_EQ(mm.verify(), "");
}

// With swaps on the swap thread, a copy on write that needs room does not
// move memory on the caller's thread: beginWrite starts the swap that
// moves an idle tenant out and fails with MustWaitError (still shared,
// nothing changed); once the swap settled, the copy is made.
TEST(MemoryManagerTest, CopyOnWriteWaitsForRoomOnTheSwapThread) {
  constexpr uint64_t kBytes = 20 * kMiB;
  auto backend = cpuBackend();
  ASSERT_TRUE(backend);
  MemoryManager mm(*backend, 64 * kMiB);
  uint64_t t0 = mm.addTenant("t0", 0), t1 = mm.addTenant("t1", 0),
           idle = mm.addTenant("idle", 0);
  std::vector<uint8_t> weights = patternOf(0x3000, kBytes);
  auto w0 = mm.allocate(t0, kBytes), w1 = mm.allocate(t1, kBytes);
  ASSERT_TRUE(w0 && w1);
  fill(mm, *backend, t0, *w0, weights);
  fill(mm, *backend, t1, *w1, weights);
  ASSERT_EQ(mm.device().saved, kBytes);
  auto v = mm.allocate(idle, 40 * kMiB); // 60 MiB in use
  ASSERT_TRUE(bool(v));
  fill(mm, *backend, idle, *v, patternOf(*v, 40 * kMiB));
  mm.swapInBackground([] {});
  ASSERT_EQ(mm.acquire(t1), Acquired::Yes);
  auto w = mm.beginWrite(t1, *w1 + 8, 1);
  ASSERT_FALSE(bool(w));
  EXPECT_TRUE(w.takeError().isA<MustWaitError>());
  EXPECT_TRUE(mm.swapping());
  EXPECT_EQ(mm.device().saved, kBytes) << "still shared";
  EXPECT_EQ(mm.verify(), "");
  mm.release(t1); // as the server does while the op waits
  mm.runSwap();
  EXPECT_TRUE(mm.settleSwap());
  EXPECT_EQ(mm.tenant(idle).swapped, 40 * kMiB);
  ASSERT_EQ(mm.acquire(t1), Acquired::Yes);
  bool copied = false;
  w = mm.beginWrite(t1, *w1 + 8, 1, &copied);
  ASSERT_TRUE(bool(w)) << llvm::toString(w.takeError());
  EXPECT_TRUE(copied);
  std::vector<uint8_t> one(1, 0x99);
  ASSERT_FALSE(
      llvm::errorToBool(backend->copyToDevice(*w1 + 8, one.data(), 1)));
  mm.endWrite(w->first);
  mm.release(t1);
  EXPECT_EQ(mm.verify(), "");
  std::vector<uint8_t> written = weights;
  written[8] = 0x99;
  EXPECT_EQ(readBack(*backend, *w0, kBytes), weights);
  EXPECT_EQ(readBack(*backend, *w1, kBytes), written);
  ASSERT_EQ(mm.acquire(idle), Acquired::Wait); // comes back on the swap thread
  mm.runSwap();
  EXPECT_TRUE(mm.settleSwap());
  ASSERT_EQ(mm.acquire(idle), Acquired::Yes);
  EXPECT_EQ(readBack(*backend, *v, 40 * kMiB), patternOf(*v, 40 * kMiB));
  mm.release(idle);
  EXPECT_EQ(mm.verify(), "");
}

// With swaps on the swap thread, module variables that need room
// (reservePinned with mayWait) wait for the swap that moves an idle
// tenant out, then are reserved.
TEST(MemoryManagerTest, ModuleVariablesWaitForRoomOnTheSwapThread) {
  auto backend = cpuBackend();
  ASSERT_TRUE(backend);
  MemoryManager mm(*backend, 64 * kMiB);
  uint64_t x = mm.addTenant("x", 0), y = mm.addTenant("y", 0);
  auto big = mm.allocate(x, 56 * kMiB);
  ASSERT_TRUE(bool(big));
  mm.swapInBackground([] {});
  constexpr uint64_t kKey = 1ull << 63;
  llvm::Error e = mm.reservePinned(y, kKey, 16 * kMiB, /*mayWait=*/true);
  EXPECT_TRUE(e.isA<MustWaitError>());
  llvm::consumeError(std::move(e));
  EXPECT_EQ(mm.tenant(y).pinned, 0u);
  EXPECT_EQ(mm.verify(), "");
  mm.runSwap();
  EXPECT_TRUE(mm.settleSwap());
  EXPECT_EQ(mm.tenant(x).swapped, 56 * kMiB);
  EXPECT_FALSE(llvm::errorToBool(mm.reservePinned(y, kKey, 16 * kMiB, true)));
  EXPECT_EQ(mm.tenant(y).pinned, 16 * kMiB);
  EXPECT_EQ(mm.verify(), "");
  mm.removePinned(kKey);
  ASSERT_FALSE(llvm::errorToBool(mm.free(*big)));
  EXPECT_EQ(mm.verify(), "");
}
