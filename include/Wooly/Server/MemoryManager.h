//===- MemoryManager.h - One device memory for many tenants -----*- C++ -*-===//
//
// The memory manager of a device that wooly-serve shares: every byte of
// device memory the server creates goes through it (tenants' allocations,
// their modules' variables, the server's own flags and fused-launch
// tables), so that its counters are the device's use, exactly.
//
//  - Capacity: the device memory all tenants share (--device-memory).
//    Quotas are per tenant, and their sum may exceed the capacity.
//  - Oversubscription: when an allocation or a swap-in does not fit, the
//    memory of idle tenants (no work acquired, see `acquire`) moves out of
//    device memory into host memory (Backend::swapOut), least recently
//    active tenant first and whole tenants at a time; its addresses stay
//    reserved, and it comes back (Backend::swapIn) when the tenant next
//    acquires it for work. When nothing can be evicted, the call fails
//    with an out-of-memory error and nothing has changed.
//  - Deduplication (where the backend can share memory): an allocation
//    filled whole by one copy gets a content hash (taken from the copied
//    data), and one written by copies in parts (or memsets) gets one when a
//    kernel that only reads it is about to run (`noteRead`: taken from
//    device memory, once per such fill); when another allocation of the
//    same size already holds the
//    same bytes (hash, then a byte comparison) and neither has been
//    written since, the backend maps one physical copy, read-only, at both
//    addresses. Every op that may write an allocation says so first
//    (`beginWrite`): a shared one gets a private copy then (copy on write,
//    which needs device memory like an allocation), and no allocation
//    with a write in flight is ever shared. Shared allocations are not
//    swapped out (moving one frees nothing while another maps it).
//    Where the backend remaps an allocation to share or unshare it
//    (Backend::sharingRemaps: cuda), that allocation is only remapped
//    while its tenant has no other work acquired (no kernel of its can be
//    reading it): it shares later otherwise, and a copy on write waits
//    (beginWrite's MustWaitError) until the tenant's other work is done.
//  - Module variables are reserved before the backend creates them
//    (reservePinned: the sizes the module declares) and pinned (never
//    swapped: the backend creates them inside the module), as is the
//    server's own memory (tenant kInternal).
//
// Thread-safe: every call takes one mutex. Swaps run under it, so that no
// tenant can acquire memory while it moves, except those of
// `swapInBackground` (wooly-serve's): they run on a thread of the
// caller's, taking the mutex only between allocations, while the tenants
// they move acquire nothing and the others carry on; the calls that need
// them wait (Acquired::Wait, MustWaitError) and are made again once the
// swap has settled.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_SERVER_MEMORYMANAGER_H
#define WOOLY_SERVER_MEMORYMANAGER_H

#include "llvm/Support/Error.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace wooly {
class Backend;
} // namespace wooly

namespace wooly::server {

/// The manager's view of one tenant's memory.
struct TenantMemory {
  std::string name;
  /// Bytes it may hold (resident + swapped).
  uint64_t quota = 0;
  /// Bytes in device memory (its allocations and module variables).
  uint64_t resident = 0;
  /// Bytes of its allocations moved out to host memory.
  uint64_t swapped = 0;
  /// Bytes of module variables (part of `resident`, never swapped).
  uint64_t pinned = 0;
  /// Bytes of its allocations whose one physical copy is shared with
  /// other allocations (deduplication; part of `resident`).
  uint64_t shared = 0;
  /// Its allocations (not counting module variables).
  uint64_t allocations = 0;
  /// Times its memory was moved out, and brought back.
  uint64_t evictions = 0, swapIns = 0;
  /// Work it has acquired and not released (`acquire`).
  uint64_t busy = 0;
  /// When it last acquired or released work (a tick of the manager).
  uint64_t lastActive = 0;
  /// Its allocations take part in deduplication.
  bool dedup = true;

  /// Everything it holds.
  uint64_t used() const { return resident + swapped; }
};

/// The manager's view of the device.
struct DeviceMemoryUsage {
  uint64_t capacity = 0;
  /// Bytes in device memory, of all tenants and the server.
  uint64_t physical = 0;
  /// Bytes of the server's own memory (part of `physical`).
  uint64_t internal = 0;
  /// Bytes moved out to host memory.
  uint64_t swapped = 0;
  /// Bytes deduplication saves: for each shared copy, its size times the
  /// number of allocations that map it, less one.
  uint64_t saved = 0;
  /// Allocations that started to share a copy, and that got a private
  /// copy back before a write (copy on write).
  uint64_t dedupShares = 0, copiesOnWrite = 0;
  /// Tenants evicted, allocations moved out and back, and their bytes.
  uint64_t evictions = 0, swapOuts = 0, swapIns = 0;
  uint64_t swapOutBytes = 0, swapInBytes = 0;
  /// Seconds spent moving memory out and in.
  double swapOutSeconds = 0, swapInSeconds = 0;
  /// Allocations and swap-ins refused for lack of device memory.
  uint64_t outOfMemory = 0;
};

/// The error of a call that must be made again later, having changed
/// nothing. beginWrite: the copy on write must wait, because the backend
/// remaps the allocation to give it its own copy (Backend::sharingRemaps)
/// and the tenant has other work acquired that may be reading it: release
/// the op's memory and try again when the tenant's other work is done.
/// allocate and reservePinned (`mayWait`), and a copy on write that needs
/// room (with swapInBackground): idle tenants' memory moves out on the
/// swap thread first: try again once the swap has settled.
class MustWaitError : public llvm::ErrorInfo<MustWaitError> {
public:
  static inline char ID = 0;
  void log(llvm::raw_ostream &os) const override {
    os << "the call waits for other work or a swap to end";
  }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
};

/// What `acquire` found.
enum class Acquired {
  /// The tenant's memory is resident, and stays so until `release`.
  Yes,
  /// Not now: others' memory in use keeps it out; try again after some
  /// work is released.
  Wait,
  /// Never: it cannot fit even with every other tenant's memory moved out.
  Never,
};

class MemoryManager {
public:
  /// The owner of the server's own memory (flags, fused-launch tables):
  /// no quota, never swapped.
  static constexpr uint64_t kInternal = 0;

  /// Manages `capacity` bytes of `backend`'s memory; swaps only where the
  /// backend supports it (Backend::supportsSwap).
  MemoryManager(Backend &backend, uint64_t capacity);
  ~MemoryManager();

  /// Whether memory of idle tenants can move out (oversubscription).
  bool swaps() const { return canSwap; }
  /// Whether identical read-only allocations share memory.
  bool dedups() const { return canShare; }
  uint64_t capacity() const { return cap; }

  /// A new tenant with `quota` bytes (0: the capacity); returns its id.
  /// `dedup`: its allocations may share copies with others' (and the
  /// other way round).
  uint64_t addTenant(std::string name, uint64_t quota, bool dedup = true);
  /// Forgets a tenant that holds nothing; false if it still holds memory.
  bool removeTenant(uint64_t tenant);

  /// Allocates `bytes` for `tenant` in memory domain `domain`
  /// (Backend::allocateIn), moving idle tenants' memory out when it does
  /// not fit. Errors (nothing changed): 0 bytes, past the quota, larger
  /// than the device, nothing left to evict, the backend's own.
  /// `mayWait` (with swapInBackground): where idle tenants' memory must
  /// move out first, that starts on the swap thread (or a swap is in
  /// flight) and the call fails with MustWaitError: try again once the
  /// swap has settled.
  llvm::Expected<uint64_t> allocate(uint64_t tenant, uint64_t bytes,
                                    uint64_t domain = 0, bool mayWait = false);
  /// Frees an allocation made by `allocate` (resident or swapped).
  llvm::Error free(uint64_t addr);
  /// Reserves `bytes` for `tenant` that the backend creates itself (a
  /// module's variables), pinned, under `key`: a handle of the caller's
  /// that is not a device address (e.g. with bit 63 set). Moves idle
  /// tenants' memory out to make room. Errors (nothing changed): past the
  /// quota, nothing left to evict, a key in use.
  /// `mayWait`: as allocate's (MustWaitError while idle tenants' memory
  /// moves out on the swap thread).
  /// `what` names the memory in an error.
  llvm::Error reservePinned(uint64_t tenant, uint64_t key, uint64_t bytes,
                            bool mayWait = false,
                            llvm::StringRef what = "the module's variables");
  /// Returns what `reservePinned` reserved under `key` (the module was
  /// unloaded); no-op for an unknown key.
  void removePinned(uint64_t key);

  /// Deduplication. Before an op that may write `[addr, addr + bytes)`
  /// of `tenant`'s memory: the allocation it falls in stops being a
  /// candidate for sharing, gets a private copy if it shares one (copy on
  /// write; it may move idle tenants' memory out for it), and counts a
  /// write in flight until `endWrite`. Returns the allocation's base and
  /// size ({0, 0} for memory the manager does not share: not an
  /// allocation of the tenant, module variables). Errors (still shared):
  /// no device memory for the copy, the backend's.
  /// `copied` (optional): set when it made a private copy. MustWaitError:
  /// the copy must wait for the tenant's other work, or (with
  /// swapInBackground) for idle tenants' memory to move out to make room
  /// for it (nothing changed).
  llvm::Expected<std::pair<uint64_t, uint64_t>>
  beginWrite(uint64_t tenant, uint64_t addr, uint64_t bytes = 1,
             bool *copied = nullptr);
  /// beginWrite for every allocation of `tenant` (a kernel that may write
  /// memory no parameter names); returns their bases. `copied`
  /// (optional): the allocations (base, size) it made private copies of.
  llvm::Expected<std::vector<uint64_t>>
  beginWriteAll(uint64_t tenant,
                std::vector<std::pair<uint64_t, uint64_t>> *copied = nullptr);
  /// Ends a write `beginWrite` counted. `contentHash`: the write filled
  /// the whole allocation (one copy) and its bytes hash so (Backend's
  /// content hash). When no other write is in flight, the allocation
  /// becomes a candidate, and shares the copy of another candidate of the
  /// same size and bytes if there is one. `fromHost`: the write put bytes
  /// that came from the host (a copy or a memset, not a kernel), so that
  /// `noteRead` hashes the allocation. Returns what happened for the log
  /// ("shares one copy with ..."), or an empty string.
  std::string endWrite(uint64_t base, std::optional<uint64_t> contentHash = {},
                       bool fromHost = false);
  /// A kernel that only reads `addr` (of `tenant`) is about to run: where
  /// its allocation was last written from the host in parts, no write is
  /// in flight and this is the second such read since (weights are read
  /// again and again; an input batch copied in for every step is read once
  /// or twice and never costs a hash), its content is hashed now
  /// (Backend::contentHash) and it may share a copy. Returns what happened
  /// for the log, or "".
  std::string noteRead(uint64_t tenant, uint64_t addr);

  /// Makes `tenant`'s memory resident for one unit of work and keeps it so
  /// until `release`: swaps it in, moving idle tenants' memory out. With
  /// `swapInBackground`, that swap is only started (Wait): it runs on the
  /// caller's swap thread, and the tenant acquires once it settled.
  Acquired acquire(uint64_t tenant);

  /// Swap traffic off the caller's thread: from now on, `acquire` plans
  /// the swap a tenant's memory needs (the idle tenants to move out, then
  /// the tenant to move in), and so do `allocate` and `reservePinned`
  /// with `mayWait` and a copy on write (`beginWrite`) that need room (the
  /// idle tenants to move out), failing with MustWaitError; it marks
  /// those tenants as moving (they acquire nothing until it settles: no
  /// running kernel can lose its memory), and calls `start`, which must
  /// make another thread call `runSwap`. One swap at a time. Meanwhile
  /// every other tenant allocates, frees and acquires as usual; device
  /// memory the swap will take back counts as used (`committed`). `delay`:
  /// a pause before each allocation moves (tests: a swap that lasts).
  void swapInBackground(std::function<void()> start,
                        std::chrono::milliseconds delay = {});
  /// Runs the swap `acquire` planned (the swap thread): copies without
  /// the lock, counters updated as each allocation moves; an allocation
  /// freed while it moved is freed when its move ends.
  void runSwap();
  /// After `runSwap` returned (the caller's thread, before it retries the
  /// waiting work): ends the swap, so that the tenants it moved acquire
  /// again. false: no swap had ended.
  bool settleSwap();
  /// Whether a swap is planned or running.
  bool swapping() const;
  /// Ends one unit of work `acquire` admitted.
  void release(uint64_t tenant);

  /// The tenant's view (empty name: unknown tenant).
  TenantMemory tenant(uint64_t tenant) const;
  /// Every tenant's view but kInternal's, by id.
  std::vector<TenantMemory> tenants() const;
  DeviceMemoryUsage device() const;
  /// Bytes `tenant` may still allocate: its quota (at most the capacity)
  /// less what it holds.
  uint64_t available(uint64_t tenant) const;
  /// Checks every counter against the allocations (tests): an empty
  /// string, or what disagrees.
  std::string verify() const;

private:
  struct Block {
    uint64_t tenant = 0, bytes = 0;
    bool swapped = false, pinned = false;
    /// The swap thread is moving it (nothing else touches it); freed when
    /// that move ends.
    bool moving = false, freeAfterMove = false;
    /// Deduplication: writes in flight; a content hash taken with none in
    /// flight and no write since (a candidate); the shared copy it maps
    /// (0: its own).
    uint64_t writers = 0;
    std::optional<uint64_t> hash;
    /// Written from the host since its last hash, and read by kernels
    /// since then (noteRead hashes it at the second read).
    bool fromHost = false;
    unsigned reads = 0;
    uint64_t group = 0;
  };
  /// A physical copy that several allocations map.
  struct Group {
    uint64_t bytes = 0;
    std::vector<uint64_t> members;
  };
  /// Gives the block at `addr` its own copy again (the lock is held).
  llvm::Error leaveGroup(uint64_t addr, Block &b);
  /// Shares `b` (at `addr`, just hashed) with a candidate of the same
  /// bytes, if there is one (the lock is held).
  std::string findTwin(uint64_t addr, Block &b);
  /// Makes `b` (at `base`, no write in flight) a candidate with content
  /// hash `hash` and looks for its twin (the lock is held).
  std::string candidate(uint64_t base, Block &b, uint64_t hash);
  /// Forgets `b`'s content hash, if it has one (the lock is held).
  void dropCandidate(uint64_t addr, Block &b);
  /// Takes `b` (at `addr`) out of its group, whose last member left has its
  /// own copy (the backend made it so); counters but `physical` (the lock
  /// is held).
  void removeMember(uint64_t addr, Block &b);
  /// The block containing `addr` (null: none).
  std::pair<const uint64_t, Block> *blockAt(uint64_t addr);
  /// Makes `bytes` fit in device memory, moving out idle tenants other
  /// than `requester` (least recently active first, whole tenants); true
  /// when it fits. Moves nothing when it cannot make it fit.
  bool makeRoom(uint64_t bytes, uint64_t requester);
  /// Moves every block of `tenant` but the pinned ones out to host memory
  /// (`out`) or back; false when the backend failed one (those moved
  /// before it stay moved, and counted so).
  bool move(uint64_t tenant, bool out);
  /// Moves the block at `addr` of the swap in flight out or in, on the
  /// swap thread, without the lock while it moves; `ok` false: an earlier
  /// one failed, so it only stops being moved. Returns `ok` and its own
  /// success; counts it in `count` when it moved.
  bool moveOnSwapThread(uint64_t addr, bool out, bool ok, unsigned &count);
  /// Device memory in use, and what the swap in flight will take when it
  /// ends (the lock is held).
  uint64_t committed() const;
  /// The blocks of `tenant` that `move` would move (the lock is held).
  std::vector<uint64_t> movable(uint64_t tenant, bool out);
  /// Counts block `b` (at `addr`) as moved (the lock is held).
  void moved(uint64_t addr, Block &b, bool out, double seconds);
  /// Counts an eviction of `tenant` (`out`) or a swap-in.
  void counted(uint64_t tenant, bool out);
  /// The idle tenants to move out, in order, so that `bytes` more fit (none
  /// when they fit already); none at all when they cannot fit.
  std::optional<std::vector<uint64_t>> victimsFor(uint64_t bytes,
                                                  uint64_t requester);
  /// With swapInBackground, where `bytes` more do not fit: starts a swap
  /// that moves idle tenants other than `requester` out for them, or finds
  /// one in flight, and returns true (the caller waits for it to settle).
  /// false: they fit, or no swap would make them fit (the lock is held).
  bool waitForRoom(uint64_t bytes, uint64_t requester);
  /// Starts a swap (swapInBackground) that moves `victims` out and then
  /// `tenant`, if any, in (the lock is held).
  void planSwap(const std::vector<uint64_t> &victims,
                std::optional<uint64_t> tenant);
  /// Frees the block (the lock is held).
  llvm::Error freeBlock(std::map<uint64_t, Block>::iterator it);

  /// The swap `acquire` planned (swapInBackground).
  struct SwapJob {
    /// The tenants it moves out, and the one it brings back.
    std::vector<uint64_t> victims;
    uint64_t tenant = 0;
    /// Their blocks, fixed when it is planned.
    std::vector<uint64_t> out, in;
    bool done = false;
  };
  std::function<void()> startSwap;
  std::chrono::milliseconds swapDelay{0};
  std::optional<SwapJob> swapJob;
  /// Tenants whose memory the swap moves.
  std::set<uint64_t> moving;
  /// Bytes the swap in flight still moves in (`reserved`) and out.
  uint64_t reserved = 0, pendingOut = 0;

  Backend &backend;
  const uint64_t cap;
  const bool canSwap;
  mutable std::mutex mutex;
  std::map<uint64_t, TenantMemory> tenantMap;
  std::map<uint64_t, Block> blocks;
  std::map<uint64_t, Group> groups;
  /// Candidates for sharing by (hash, size): their bases.
  std::multimap<std::pair<uint64_t, uint64_t>, uint64_t> candidates;
  const bool canShare;
  /// Backend::sharingRemaps: share and unshare only while the block's
  /// tenant has no other work acquired.
  const bool remapsToShare;
  uint64_t nextGroup = 1;
  DeviceMemoryUsage usage;
  uint64_t nextTenant = 1, tick = 0;
};

} // namespace wooly::server

#endif // WOOLY_SERVER_MEMORYMANAGER_H
