//===- MemoryManager.cpp - One device memory for many tenants ---*- C++ -*-===//
//
// See include/Wooly/Server/MemoryManager.h. The counters change only with
// the blocks they count, under one mutex, so that `verify` (the tests'
// oracle) can recompute every one of them from `blocks`.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Server/MemoryManager.h"
#include "Wooly/Runtime/Backend.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>
#include <tuple>

using namespace wooly;
using namespace wooly::server;

namespace {
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string mib(uint64_t bytes) {
  if (bytes % (1 << 20) == 0)
    return llvm::formatv("{0} MiB", bytes >> 20).str();
  return llvm::formatv("{0} bytes", bytes).str();
}
} // namespace

MemoryManager::MemoryManager(Backend &backend, uint64_t capacity)
    : backend(backend), cap(capacity), canSwap(backend.supportsSwap()),
      canShare(backend.supportsSharing()),
      remapsToShare(backend.sharingRemaps()) {
  usage.capacity = capacity;
  tenantMap[kInternal].name = "(server)";
  tenantMap[kInternal].quota = UINT64_MAX;
}

MemoryManager::~MemoryManager() = default;

uint64_t MemoryManager::addTenant(std::string name, uint64_t quota,
                                  bool dedup) {
  std::lock_guard<std::mutex> lock(mutex);
  uint64_t id = nextTenant++;
  TenantMemory &t = tenantMap[id];
  t.name = std::move(name);
  t.dedup = dedup;
  t.quota = quota ? quota : cap;
  t.lastActive = ++tick;
  return id;
}

bool MemoryManager::removeTenant(uint64_t tenant) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = tenantMap.find(tenant);
  if (tenant == kInternal || it == tenantMap.end() || it->second.used() ||
      moving.count(tenant))
    return false;
  tenantMap.erase(it);
  return true;
}

void MemoryManager::moved(uint64_t addr, Block &b, bool out, double seconds) {
  TenantMemory &t = tenantMap[b.tenant];
  b.swapped = out;
  // From `from` to `to`, on the tenant's and on the device's counters.
  uint64_t &from = out ? t.resident : t.swapped;
  uint64_t &to = out ? t.swapped : t.resident;
  from -= b.bytes;
  to += b.bytes;
  uint64_t &devFrom = out ? usage.physical : usage.swapped;
  uint64_t &devTo = out ? usage.swapped : usage.physical;
  devFrom -= b.bytes;
  devTo += b.bytes;
  (out ? usage.swapOuts : usage.swapIns)++;
  (out ? usage.swapOutBytes : usage.swapInBytes) += b.bytes;
  (out ? usage.swapOutSeconds : usage.swapInSeconds) += seconds;
}

std::vector<uint64_t> MemoryManager::movable(uint64_t tenant, bool out) {
  std::vector<uint64_t> addrs;
  for (auto &[addr, b] : blocks)
    // A shared copy stays: moving one member out would free nothing.
    if (b.tenant == tenant && !b.pinned && !b.group && b.swapped != out &&
        !b.moving)
      addrs.push_back(addr);
  return addrs;
}

void MemoryManager::counted(uint64_t tenant, bool out) {
  auto it = tenantMap.find(tenant);
  if (it == tenantMap.end())
    return;
  TenantMemory &t = it->second;
  if (out) {
    t.evictions++;
    usage.evictions++;
  } else {
    t.swapIns++;
  }
}

bool MemoryManager::move(uint64_t tenant, bool out) {
  std::vector<uint64_t> addrs = movable(tenant, out);
  for (uint64_t addr : addrs) {
    auto start = Clock::now();
    if (llvm::Error e = out ? backend.swapOut(addr) : backend.swapIn(addr)) {
      // Host memory ran out (or its mappings): what moved stays moved,
      // and is counted so.
      llvm::consumeError(std::move(e));
      return false;
    }
    moved(addr, blocks[addr], out, secondsSince(start));
  }
  if (!addrs.empty())
    counted(tenant, out);
  return true;
}

std::optional<std::vector<uint64_t>>
MemoryManager::victimsFor(uint64_t bytes, uint64_t requester) {
  if (bytes > cap)
    return std::nullopt;
  uint64_t committed = this->committed();
  if (committed <= cap - bytes)
    return std::vector<uint64_t>();
  if (!canSwap)
    return std::nullopt;
  // Idle tenants with something to move, least recently active first
  // (none whose memory a swap in flight moves).
  std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> idle; // when, id, own
  for (auto &[id, t] : tenantMap) {
    uint64_t own = t.resident - t.pinned - t.shared;
    if (id == kInternal || id == requester || t.busy || own == 0 ||
        moving.count(id))
      continue;
    idle.push_back({t.lastActive, id, own});
  }
  std::sort(idle.begin(), idle.end());
  std::vector<uint64_t> victims;
  for (auto &[when, id, own] : idle) {
    victims.push_back(id);
    committed -= own;
    if (committed <= cap - bytes)
      return victims;
  }
  // Nothing moves unless enough can move.
  return std::nullopt;
}

bool MemoryManager::waitForRoom(uint64_t bytes, uint64_t requester) {
  if (!startSwap || bytes > cap || committed() <= cap - bytes)
    return false;
  // The caller tries again once the swap has settled: the one in flight
  // (which may leave room, or hold what could move), or one moving idle
  // tenants out now.
  if (swapJob)
    return true;
  std::optional<std::vector<uint64_t>> victims = victimsFor(bytes, requester);
  if (!victims)
    return false;
  planSwap(*victims, std::nullopt);
  return true;
}

bool MemoryManager::makeRoom(uint64_t bytes, uint64_t requester) {
  std::optional<std::vector<uint64_t>> victims = victimsFor(bytes, requester);
  if (!victims)
    return false;
  for (uint64_t id : *victims)
    if (!move(id, /*out=*/true))
      return false;
  return committed() <= cap - bytes;
}

uint64_t MemoryManager::committed() const {
  // The swap in flight moves `pendingOut` out, then `reserved` in: its
  // peak is now or at its end.
  return usage.physical + (reserved > pendingOut ? reserved - pendingOut : 0);
}

llvm::Expected<uint64_t> MemoryManager::allocate(uint64_t tenant,
                                                 uint64_t bytes,
                                                 uint64_t domain,
                                                 bool mayWait) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = tenantMap.find(tenant);
  if (it == tenantMap.end())
    return llvm::createStringError("unknown tenant");
  TenantMemory &t = it->second;
  if (bytes == 0)
    return llvm::createStringError("cannot allocate 0 bytes");
  if (tenant != kInternal && bytes > t.quota - std::min(t.quota, t.used()))
    return llvm::createStringError(
        llvm::formatv("allocating {0} would exceed tenant '{1}''s quota: {2} "
                      "of {3} in use",
                      mib(bytes), t.name, mib(t.used()), mib(t.quota))
            .str());
  // A tenant's memory must fit the device as a whole, to come back whole.
  if (bytes > cap || (tenant != kInternal && t.used() > cap - bytes)) {
    usage.outOfMemory++;
    return llvm::createStringError(
        llvm::formatv("out of device memory: {0} requested, the tenant holds "
                      "{1} of a device of {2}",
                      mib(bytes), mib(t.used()), mib(cap))
            .str());
  }
  if (mayWait && waitForRoom(bytes, tenant))
    return llvm::make_error<MustWaitError>();
  if (!makeRoom(bytes, tenant)) {
    usage.outOfMemory++;
    return llvm::createStringError(
        llvm::formatv("out of device memory: {0} requested, {1} of {2} in use "
                      "and no idle tenant's memory to move out",
                      mib(bytes), mib(usage.physical), mib(cap))
            .str());
  }
  auto addr =
      domain ? backend.allocateIn(bytes, domain) : backend.allocate(bytes);
  if (!addr)
    return addr.takeError();
  Block &b = blocks[*addr];
  b.tenant = tenant;
  b.bytes = bytes;
  t.resident += bytes;
  t.allocations += bytes;
  t.lastActive = ++tick;
  usage.physical += bytes;
  if (tenant == kInternal)
    usage.internal += bytes;
  return *addr;
}

llvm::Error MemoryManager::free(uint64_t addr) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = blocks.find(addr);
  if (it == blocks.end() || it->second.pinned || it->second.freeAfterMove)
    return llvm::createStringError(
        llvm::formatv("free of {0:x}, which is not a managed allocation", addr)
            .str());
  if (it->second.moving) {
    // The swap thread is moving it: it frees it when the move ends.
    it->second.freeAfterMove = true;
    return llvm::Error::success();
  }
  return freeBlock(it);
}

llvm::Error MemoryManager::freeBlock(std::map<uint64_t, Block>::iterator it) {
  uint64_t addr = it->first;
  // The backend frees a swapped allocation's host copy too.
  if (llvm::Error e = backend.free(addr))
    return e;
  Block b = it->second;
  dropCandidate(addr, it->second);
  blocks.erase(it);
  TenantMemory &t = tenantMap[b.tenant];
  t.allocations -= b.bytes;
  if (b.swapped) {
    t.swapped -= b.bytes;
    usage.swapped -= b.bytes;
  } else if (b.group) {
    // The copy stays with the group's other members (the backend gave the
    // last one left its own pages: it is no longer shared).
    t.resident -= b.bytes;
    removeMember(addr, b);
  } else {
    t.resident -= b.bytes;
    usage.physical -= b.bytes;
    if (b.tenant == kInternal)
      usage.internal -= b.bytes;
  }
  return llvm::Error::success();
}

llvm::Error MemoryManager::reservePinned(uint64_t tenant, uint64_t key,
                                         uint64_t bytes, bool mayWait,
                                         llvm::StringRef what) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = tenantMap.find(tenant);
  if (it == tenantMap.end() || blocks.count(key))
    return llvm::createStringError("unknown tenant or key in use");
  TenantMemory &t = it->second;
  if (bytes > t.quota - std::min(t.quota, t.used()))
    return llvm::createStringError(
        llvm::formatv("{4} ({0}) would exceed tenant '{1}''s quota: {2} of "
                      "{3} in use",
                      mib(bytes), t.name, mib(t.used()), mib(t.quota), what)
            .str());
  if (mayWait && bytes <= cap && t.used() <= cap - bytes &&
      waitForRoom(bytes, tenant))
    return llvm::make_error<MustWaitError>();
  if (bytes > cap || t.used() > cap - bytes || !makeRoom(bytes, tenant)) {
    usage.outOfMemory++;
    return llvm::createStringError(
        llvm::formatv("out of device memory for {3} ({0}): {1} of {2} in use "
                      "and no idle tenant's memory to move out",
                      mib(bytes), mib(usage.physical), mib(cap), what)
            .str());
  }
  Block &b = blocks[key];
  b.tenant = tenant;
  b.bytes = bytes;
  b.pinned = true;
  t.resident += bytes;
  t.pinned += bytes;
  usage.physical += bytes;
  return llvm::Error::success();
}

void MemoryManager::removePinned(uint64_t addr) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = blocks.find(addr);
  if (it == blocks.end() || !it->second.pinned)
    return;
  TenantMemory &t = tenantMap[it->second.tenant];
  t.resident -= it->second.bytes;
  t.pinned -= it->second.bytes;
  usage.physical -= it->second.bytes;
  blocks.erase(it);
}

//===----------------------------------------------------------------------===//
// Deduplication
//===----------------------------------------------------------------------===//

std::pair<const uint64_t, MemoryManager::Block> *
MemoryManager::blockAt(uint64_t addr) {
  auto it = blocks.upper_bound(addr);
  if (it == blocks.begin())
    return nullptr;
  --it;
  if (it->second.pinned || addr - it->first >= it->second.bytes)
    return nullptr;
  return &*it;
}

void MemoryManager::dropCandidate(uint64_t addr, Block &b) {
  if (!b.hash)
    return;
  auto [begin, end] = candidates.equal_range({*b.hash, b.bytes});
  for (auto it = begin; it != end; ++it)
    if (it->second == addr) {
      candidates.erase(it);
      break;
    }
  b.hash.reset();
}

void MemoryManager::removeMember(uint64_t addr, Block &b) {
  auto g = groups.find(b.group);
  llvm::erase(g->second.members, addr);
  tenantMap[b.tenant].shared -= b.bytes;
  usage.saved -= b.bytes;
  b.group = 0;
  if (g->second.members.size() == 1) {
    Block &last = blocks[g->second.members.front()];
    tenantMap[last.tenant].shared -= last.bytes;
    last.group = 0;
    groups.erase(g);
  }
}

llvm::Error MemoryManager::leaveGroup(uint64_t addr, Block &b) {
  // The caller's op is one unit of the tenant's work; another may be a
  // kernel reading the allocation that the backend is about to remap.
  if (remapsToShare && tenantMap[b.tenant].busy > 1)
    return llvm::make_error<MustWaitError>();
  // Its own copy is device memory like an allocation (the write waits
  // while idle tenants' memory moves out for it on the swap thread).
  if (waitForRoom(b.bytes, b.tenant))
    return llvm::make_error<MustWaitError>();
  if (!makeRoom(b.bytes, b.tenant)) {
    usage.outOfMemory++;
    return llvm::createStringError(
        llvm::formatv("out of device memory for a private copy of the "
                      "shared (deduplicated) allocation at {0:x} ({1}) "
                      "before a write: {2} of {3} in use and no idle "
                      "tenant's memory to move out",
                      addr, mib(b.bytes), mib(usage.physical), mib(cap))
            .str());
  }
  if (llvm::Error e = backend.unshare(addr))
    return e;
  removeMember(addr, b);
  usage.physical += b.bytes;
  usage.copiesOnWrite++;
  return llvm::Error::success();
}

std::string MemoryManager::findTwin(uint64_t addr, Block &b) {
  // `addr` is remapped: not while other work of its tenant may read it (it
  // stays a candidate: a later twin shares with it, unremapped).
  if (remapsToShare && tenantMap[b.tenant].busy > 1)
    return "";
  auto [begin, end] = candidates.equal_range({*b.hash, b.bytes});
  for (auto it = begin; it != end; ++it) {
    uint64_t other = it->second;
    if (other == addr)
      continue;
    Block &o = blocks[other];
    if (o.swapped || o.writers || o.moving)
      continue;
    // The hash found it; the bytes decide.
    llvm::Expected<bool> same = backend.sameBytes(addr, other, b.bytes);
    if (!same) {
      llvm::consumeError(same.takeError());
      continue;
    }
    if (!*same)
      continue;
    if (llvm::Error e = backend.share(addr, other)) {
      llvm::consumeError(std::move(e));
      return "";
    }
    if (!o.group) {
      o.group = nextGroup++;
      groups[o.group] = Group{o.bytes, {other}};
      tenantMap[o.tenant].shared += o.bytes;
    }
    groups[o.group].members.push_back(addr);
    b.group = o.group;
    tenantMap[b.tenant].shared += b.bytes;
    usage.physical -= b.bytes;
    usage.saved += b.bytes;
    usage.dedupShares++;
    return llvm::formatv("{0} at {1:x} holds the same bytes as {2:x} of "
                         "tenant '{3}': one copy kept for both "
                         "(deduplicated; {4} saved in all)",
                         mib(b.bytes), addr, other, tenantMap[o.tenant].name,
                         mib(usage.saved))
        .str();
  }
  return "";
}

llvm::Expected<std::pair<uint64_t, uint64_t>>
MemoryManager::beginWrite(uint64_t tenant, uint64_t addr, uint64_t bytes,
                          bool *copied) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!canShare)
    return std::pair<uint64_t, uint64_t>{0, 0};
  auto *e = blockAt(addr);
  if (!e || e->second.tenant != tenant || e->second.tenant == kInternal)
    return std::pair<uint64_t, uint64_t>{0, 0};
  Block &b = e->second;
  if (b.group) {
    if (llvm::Error err = leaveGroup(e->first, b))
      return std::move(err);
    if (copied)
      *copied = true;
  }
  dropCandidate(e->first, b);
  b.writers++;
  return std::pair<uint64_t, uint64_t>{e->first, b.bytes};
}

llvm::Expected<std::vector<uint64_t>> MemoryManager::beginWriteAll(
    uint64_t tenant, std::vector<std::pair<uint64_t, uint64_t>> *copied) {
  std::vector<uint64_t> bases;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!canShare)
      return bases;
    for (auto &[addr, b] : blocks)
      if (b.tenant == tenant && !b.pinned && !b.swapped)
        bases.push_back(addr);
  }
  for (size_t i = 0; i < bases.size(); ++i) {
    bool copy = false;
    auto r = beginWrite(tenant, bases[i], 1, &copy);
    if (r && copy && copied)
      copied->push_back(*r);
    if (!r) {
      for (size_t j = 0; j < i; ++j)
        endWrite(bases[j]);
      return r.takeError();
    }
  }
  return bases;
}

std::string MemoryManager::endWrite(uint64_t base, std::optional<uint64_t> hash,
                                    bool fromHost) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = blocks.find(base);
  if (it == blocks.end() || it->second.pinned)
    return ""; // Freed meanwhile.
  Block &b = it->second;
  if (b.writers)
    b.writers--;
  // A kernel's write: its bytes are left unhashed (activations change with
  // every step; weights come from the host).
  b.fromHost = fromHost && !hash;
  b.reads = 0;
  if (!hash || b.writers || b.swapped || b.group || !canShare)
    return "";
  return candidate(base, b, *hash);
}

std::string MemoryManager::candidate(uint64_t base, Block &b, uint64_t hash) {
  dropCandidate(base, b);
  b.fromHost = false;
  if (!tenantMap[b.tenant].dedup)
    return "";
  b.hash = hash;
  candidates.emplace(std::make_pair(hash, b.bytes), base);
  return findTwin(base, b);
}

std::string MemoryManager::noteRead(uint64_t tenant, uint64_t addr) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!canShare)
    return "";
  auto *e = blockAt(addr);
  if (!e || e->second.tenant != tenant || e->second.tenant == kInternal)
    return "";
  Block &b = e->second;
  if (!b.fromHost || b.writers || b.swapped || b.group || b.hash ||
      !tenantMap[tenant].dedup || ++b.reads < 2)
    return "";
  llvm::Expected<uint64_t> h = backend.contentHash(e->first, b.bytes);
  if (!h) {
    llvm::consumeError(h.takeError());
    return "";
  }
  return candidate(e->first, b, *h);
}

Acquired MemoryManager::acquire(uint64_t tenant) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = tenantMap.find(tenant);
  if (it == tenantMap.end())
    return Acquired::Never;
  TenantMemory &t = it->second;
  // A swap in flight moves its memory (out or in): not until it settles.
  if (moving.count(tenant))
    return Acquired::Wait;
  if (t.swapped) {
    // It fits at all only where the memory that can never move (others'
    // pinned, the server's) leaves room.
    // Module variables, shared copies (once each) and its own resident
    // memory.
    uint64_t unmovable = usage.internal;
    std::set<uint64_t> groupsSeen;
    for (auto &[addr, b] : blocks)
      if (b.tenant != kInternal && !b.swapped &&
          (b.group ? groupsSeen.insert(b.group).second
                   : b.pinned || b.tenant == tenant))
        unmovable += b.bytes;
    if (unmovable > cap || t.swapped > cap - unmovable) {
      usage.outOfMemory++;
      return Acquired::Never;
    }
    if (startSwap) {
      // One swap in flight at a time, on the caller's swap thread: the
      // tenant waits, the others go on.
      if (swapJob)
        return Acquired::Wait;
      std::optional<std::vector<uint64_t>> victims =
          victimsFor(t.swapped, tenant);
      if (!victims)
        return Acquired::Wait;
      planSwap(*victims, tenant);
      return Acquired::Wait;
    }
    if (!makeRoom(t.swapped, tenant))
      return Acquired::Wait;
    if (!move(tenant, /*out=*/false))
      return Acquired::Wait;
  }
  t.busy++;
  t.lastActive = ++tick;
  return Acquired::Yes;
}

void MemoryManager::planSwap(const std::vector<uint64_t> &victims,
                             std::optional<uint64_t> tenant) {
  // The blocks it moves are fixed now, and the swap's alone.
  SwapJob job;
  job.victims = victims;
  for (uint64_t id : victims)
    for (uint64_t addr : movable(id, /*out=*/true)) {
      job.out.push_back(addr);
      pendingOut += blocks[addr].bytes;
    }
  if (tenant) {
    job.tenant = *tenant;
    job.in = movable(*tenant, /*out=*/false);
    moving.insert(*tenant);
  }
  for (uint64_t addr : job.out)
    blocks[addr].moving = true;
  for (uint64_t addr : job.in) {
    blocks[addr].moving = true;
    reserved += blocks[addr].bytes;
  }
  moving.insert(victims.begin(), victims.end());
  swapJob = std::move(job);
  startSwap();
}

void MemoryManager::swapInBackground(std::function<void()> start,
                                     std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> lock(mutex);
  startSwap = std::move(start);
  swapDelay = delay;
}

bool MemoryManager::moveOnSwapThread(uint64_t addr, bool out, bool ok,
                                     unsigned &count) {
  {
    // Freed before its turn (its tenant went away): it does not move.
    std::lock_guard<std::mutex> lock(mutex);
    auto it = blocks.find(addr);
    if (it->second.freeAfterMove) {
      uint64_t &pending = out ? pendingOut : reserved;
      pending -= std::min(pending, it->second.bytes);
      it->second.moving = false;
      llvm::consumeError(freeBlock(it));
      return ok;
    }
  }
  // The copy runs without the lock: other tenants allocate, free and
  // acquire meanwhile. The block is the swap's alone while `moving`.
  llvm::Error e = llvm::Error::success();
  double seconds = 0;
  if (ok) {
    if (swapDelay.count())
      std::this_thread::sleep_for(swapDelay);
    auto start = Clock::now();
    e = out ? backend.swapOut(addr) : backend.swapIn(addr);
    seconds = secondsSince(start);
  }
  std::lock_guard<std::mutex> lock(mutex);
  auto it = blocks.find(addr);
  Block &b = it->second;
  b.moving = false;
  if (ok && !e) {
    moved(addr, b, out, seconds);
    count++;
    uint64_t &pending = out ? pendingOut : reserved;
    pending -= std::min(pending, b.bytes);
  } else if (e) {
    // Host memory ran out (or its mappings): what moved stays moved, and
    // is counted so; the rest stays where it is.
    llvm::consumeError(std::move(e));
    ok = false;
  }
  if (b.freeAfterMove)
    llvm::consumeError(freeBlock(it));
  return ok;
}

void MemoryManager::runSwap() {
  SwapJob job;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!swapJob || swapJob->done)
      return;
    job = *swapJob;
  }
  // Out first, then in: device memory never holds more than the capacity.
  bool ok = true;
  unsigned movedOut = 0, movedIn = 0;
  for (uint64_t addr : job.out)
    ok = moveOnSwapThread(addr, /*out=*/true, ok, movedOut);
  bool in = ok;
  for (uint64_t addr : job.in)
    in = moveOnSwapThread(addr, /*out=*/false, in, movedIn);
  std::lock_guard<std::mutex> lock(mutex);
  if (movedOut)
    for (uint64_t id : job.victims)
      counted(id, /*out=*/true);
  if (movedIn)
    counted(job.tenant, /*out=*/false);
  swapJob->done = true;
}

bool MemoryManager::settleSwap() {
  std::lock_guard<std::mutex> lock(mutex);
  if (!swapJob || !swapJob->done)
    return false;
  swapJob.reset();
  moving.clear();
  reserved = pendingOut = 0;
  return true;
}

bool MemoryManager::swapping() const {
  std::lock_guard<std::mutex> lock(mutex);
  return swapJob.has_value();
}

void MemoryManager::release(uint64_t tenant) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = tenantMap.find(tenant);
  if (it == tenantMap.end() || it->second.busy == 0)
    return;
  it->second.busy--;
  it->second.lastActive = ++tick;
}

TenantMemory MemoryManager::tenant(uint64_t tenant) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = tenantMap.find(tenant);
  return it == tenantMap.end() ? TenantMemory() : it->second;
}

std::vector<TenantMemory> MemoryManager::tenants() const {
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<TenantMemory> out;
  for (auto &[id, t] : tenantMap)
    if (id != kInternal)
      out.push_back(t);
  return out;
}

DeviceMemoryUsage MemoryManager::device() const {
  std::lock_guard<std::mutex> lock(mutex);
  return usage;
}

uint64_t MemoryManager::available(uint64_t tenant) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = tenantMap.find(tenant);
  if (it == tenantMap.end())
    return 0;
  uint64_t limit = std::min(it->second.quota, cap);
  return limit - std::min(limit, it->second.used());
}

std::string MemoryManager::verify() const {
  std::lock_guard<std::mutex> lock(mutex);
  std::map<uint64_t, TenantMemory> expect;
  DeviceMemoryUsage dev;
  for (auto &[addr, b] : blocks) {
    TenantMemory &t = expect[b.tenant];
    if (b.swapped) {
      t.swapped += b.bytes;
      dev.swapped += b.bytes;
    } else {
      t.resident += b.bytes;
      dev.physical += b.bytes;
      if (b.tenant == kInternal)
        dev.internal += b.bytes;
    }
    if (b.pinned)
      t.pinned += b.bytes;
    else
      t.allocations += b.bytes;
  }
  // Deduplication: one physical copy per group.
  for (auto &[id, g] : groups) {
    dev.physical -= g.bytes * (g.members.size() - 1);
    dev.saved += g.bytes * (g.members.size() - 1);
  }
  for (auto &[addr, b] : blocks)
    if (b.group)
      expect[b.tenant].shared += b.bytes;
  std::string out;
  auto check = [&](const std::string &what, uint64_t have, uint64_t want) {
    if (have != want)
      out += llvm::formatv("{0}: {1}, the blocks say {2}\n", what, have, want)
                 .str();
  };
  check("physical", usage.physical, dev.physical);
  check("swapped", usage.swapped, dev.swapped);
  check("internal", usage.internal, dev.internal);
  check("saved", usage.saved, dev.saved);
  for (auto &[id, g] : groups) {
    if (g.members.size() < 2)
      out += llvm::formatv("shared copy {0} has {1} member(s)\n", id,
                           g.members.size())
                 .str();
    for (uint64_t m : g.members) {
      auto b = blocks.find(m);
      if (b == blocks.end() || b->second.group != id || b->second.swapped)
        out +=
            llvm::formatv("shared copy {0}: member {1:x} is not in it\n", id, m)
                .str();
    }
  }
  if (!swapJob) {
    if (reserved || pendingOut || !moving.empty())
      out += "no swap in flight, but memory counted as moving\n";
    for (auto &[addr, b] : blocks)
      if (b.moving || b.freeAfterMove)
        out += llvm::formatv("block {0:x} moving with no swap\n", addr).str();
  }
  if (usage.physical > cap)
    out += llvm::formatv("physical {0} exceeds the capacity {1}\n",
                         usage.physical, cap)
               .str();
  for (auto &[id, t] : tenantMap) {
    const TenantMemory &e = expect[id];
    check(t.name + " resident", t.resident, e.resident);
    check(t.name + " swapped", t.swapped, e.swapped);
    check(t.name + " pinned", t.pinned, e.pinned);
    check(t.name + " allocations", t.allocations, e.allocations);
    check(t.name + " shared", t.shared, e.shared);
    if (id != kInternal && t.used() > t.quota)
      out += t.name + " holds more than its quota\n";
  }
  for (auto &[id, e] : expect)
    if (!tenantMap.count(id))
      out += llvm::formatv("blocks of unknown tenant {0}\n", id).str();
  return out;
}
