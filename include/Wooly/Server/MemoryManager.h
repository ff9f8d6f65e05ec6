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
//  - Module variables are reserved before the backend creates them
//    (reservePinned: the sizes the module declares) and pinned (never
//    swapped: the backend creates them inside the module), as is the
//    server's own memory (tenant kInternal).
//
// Thread-safe: every call takes one mutex; swaps run under it, so that no
// tenant can acquire memory while it moves.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_SERVER_MEMORYMANAGER_H
#define WOOLY_SERVER_MEMORYMANAGER_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <mutex>
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
  /// Bytes it shares with other tenants (deduplication; 0 until then).
  uint64_t shared = 0;
  /// Its allocations (not counting module variables).
  uint64_t allocations = 0;
  /// Times its memory was moved out, and brought back.
  uint64_t evictions = 0, swapIns = 0;
  /// Work it has acquired and not released (`acquire`).
  uint64_t busy = 0;
  /// When it last acquired or released work (a tick of the manager).
  uint64_t lastActive = 0;

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
  /// Bytes deduplication saves (0: not implemented yet).
  uint64_t saved = 0;
  /// Tenants evicted, allocations moved out and back, and their bytes.
  uint64_t evictions = 0, swapOuts = 0, swapIns = 0;
  uint64_t swapOutBytes = 0, swapInBytes = 0;
  /// Seconds spent moving memory out and in.
  double swapOutSeconds = 0, swapInSeconds = 0;
  /// Allocations and swap-ins refused for lack of device memory.
  uint64_t outOfMemory = 0;
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
  uint64_t capacity() const { return cap; }

  /// A new tenant with `quota` bytes (0: the capacity); returns its id.
  uint64_t addTenant(std::string name, uint64_t quota);
  /// Forgets a tenant that holds nothing; false if it still holds memory.
  bool removeTenant(uint64_t tenant);

  /// Allocates `bytes` for `tenant` in memory domain `domain`
  /// (Backend::allocateIn), moving idle tenants' memory out when it does
  /// not fit. Errors (nothing changed): 0 bytes, past the quota, larger
  /// than the device, nothing left to evict, the backend's own.
  llvm::Expected<uint64_t> allocate(uint64_t tenant, uint64_t bytes,
                                    uint64_t domain = 0);
  /// Frees an allocation made by `allocate` (resident or swapped).
  llvm::Error free(uint64_t addr);
  /// Reserves `bytes` for `tenant` that the backend creates itself (a
  /// module's variables), pinned, under `key`: a handle of the caller's
  /// that is not a device address (e.g. with bit 63 set). Moves idle
  /// tenants' memory out to make room. Errors (nothing changed): past the
  /// quota, nothing left to evict, a key in use.
  llvm::Error reservePinned(uint64_t tenant, uint64_t key, uint64_t bytes);
  /// Returns what `reservePinned` reserved under `key` (the module was
  /// unloaded); no-op for an unknown key.
  void removePinned(uint64_t key);

  /// Makes `tenant`'s memory resident for one unit of work and keeps it so
  /// until `release`: swaps it in, moving idle tenants' memory out.
  Acquired acquire(uint64_t tenant);
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
  };
  /// Makes `bytes` fit in device memory, moving out idle tenants other
  /// than `requester` (least recently active first, whole tenants); true
  /// when it fits. Moves nothing when it cannot make it fit.
  bool makeRoom(uint64_t bytes, uint64_t requester);
  /// Moves every block of `tenant` but the pinned ones out to host memory
  /// (`out`) or back; false when the backend failed one (those moved
  /// before it stay moved, and counted so).
  bool move(uint64_t tenant, bool out);

  Backend &backend;
  const uint64_t cap;
  const bool canSwap;
  mutable std::mutex mutex;
  std::map<uint64_t, TenantMemory> tenantMap;
  std::map<uint64_t, Block> blocks;
  DeviceMemoryUsage usage;
  uint64_t nextTenant = 1, tick = 0;
};

} // namespace wooly::server

#endif // WOOLY_SERVER_MEMORYMANAGER_H
