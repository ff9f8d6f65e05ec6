//===- DeviceMemory.h - Device memory of the CPU backend --------*- C++ -*-===//
//
// Allocations of "device" memory for the CPU backend: host memory whose
// bounds are known per allocation, so that kernels' accesses can be checked
// (`__wooly_rt_check`) and copies validated. Module globals are registered
// here too, as allocations the user cannot free.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_RUNTIME_CPU_DEVICEMEMORY_H
#define WOOLY_RUNTIME_CPU_DEVICEMEMORY_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

namespace wooly::cpu {

/// One live allocation: `[base, base + size)`.
struct Allocation {
  uint64_t base = 0;
  uint64_t size = 0;
  /// Registered by a module (a `.global`/`.const` variable): not freeable.
  bool moduleGlobal = false;
  /// For module globals: the variable's name.
  std::string name;
  /// Its memory domain (0: none): a launch restricted to other domains
  /// (LaunchConfig::memoryDomains) cannot reach it.
  uint64_t domain = 0;
  /// Moved out to host memory (`DeviceMemory::swapOut`): its address range
  /// is reserved but maps no memory; `find` does not return it.
  bool swapped = false;
  /// Shares its pages, read-only, with other allocations of the same bytes
  /// (`DeviceMemory::share`): the id of their group, 0 when it has its own.
  uint64_t sharedGroup = 0;
};

/// The allocator and bounds registry. Thread-safe.
class DeviceMemory {
public:
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;
  ~DeviceMemory();

  /// Allocates `size` bytes (page aligned, zero-filled), returns the
  /// device address. Fails on size 0, over the limit or when out of memory.
  /// Each allocation is an address range of its own, reserved with `mmap`,
  /// whose pages `swapOut` and `swapIn` map out and in.
  llvm::Expected<uint64_t> allocate(uint64_t size, uint64_t domain = 0);
  /// Frees an allocation made by `allocate` (resident or swapped out);
  /// `addr` must be its base.
  llvm::Error free(uint64_t addr);
  /// Moves the allocation at `addr` to host memory: its pages move to a
  /// host mapping of their own (mremap with MREMAP_DONTUNMAP: no byte is
  /// copied; where the kernel refuses, a copy), and its range stays
  /// reserved with no memory behind it (PROT_NONE). On error nothing
  /// changed.
  llvm::Error swapOut(uint64_t addr);
  /// Moves the pages of a swapped-out allocation back to its address
  /// (mremap onto the reserved range, which replaces it atomically; or the
  /// copy into fresh pages). On error it stays swapped out.
  llvm::Error swapIn(uint64_t addr);
  /// Bytes of swapped-out allocations (held in host memory).
  uint64_t bytesSwapped() const;

  /// Deduplication. `share(addr, with)`: the allocation at `addr` gives up
  /// its pages and maps those of `with` (an allocation of the same size
  /// whose bytes the caller found equal), read-only for both: the pages of
  /// a group live in a memfd that each member maps at its own address, so
  /// that addresses never change. Until `unshare`, copies and memsets into
  /// either fail, and a kernel's write to them faults (a launch error).
  /// Neither may be swapped out while shared. On error nothing changed.
  llvm::Error share(uint64_t addr, uint64_t with);
  /// Gives the allocation at `addr` pages of its own again (a private,
  /// writable copy of the group's bytes, mapped over its range in one
  /// step); the group's last member gets its own pages back the same way.
  llvm::Error unshare(uint64_t addr);
  /// Compares the first `size` bytes of two allocations' memory.
  bool sameBytes(uint64_t a, uint64_t b, uint64_t size) const;

  /// Copies between host and device memory; the device range must lie
  /// inside one allocation.
  llvm::Error copyToDevice(uint64_t dst, const void *src, uint64_t size);
  llvm::Error copyFromDevice(void *dst, uint64_t src, uint64_t size);
  llvm::Error copyDeviceToDevice(uint64_t dst, uint64_t src, uint64_t size);
  llvm::Error memset(uint64_t dst, uint8_t value, uint64_t size);

  /// Registers / unregisters host memory owned by a loaded module.
  void registerGlobal(uint64_t base, uint64_t size, std::string name,
                      uint64_t domain = 0);
  /// Moves the module global at `base` into memory domain `domain`.
  void setGlobalDomain(uint64_t base, uint64_t domain);
  void unregisterGlobal(uint64_t base);

  /// The allocation containing `[addr, addr + size)`, if any; one that is
  /// swapped out only with `swappedToo` (its address range stays its own).
  std::optional<Allocation> find(uint64_t addr, uint64_t size,
                                 bool swappedToo = false) const;
  /// The allocation nearest to `addr` (for error messages).
  std::optional<Allocation> nearest(uint64_t addr) const;

  /// Bytes currently allocated by `allocate` and not swapped out.
  uint64_t bytesInUse() const;
  /// Upper bound on `bytesInUse` (default: no limit).
  void setLimit(uint64_t bytes) { limit = bytes; }

private:
  llvm::Error checkRange(uint64_t addr, uint64_t size, const char *what) const;
  /// checkRange, and not shared read-only.
  llvm::Error checkWritable(uint64_t addr, uint64_t size,
                            const char *what) const;

  mutable std::shared_mutex mutex;
  std::map<uint64_t, Allocation> allocations;
  /// Where a swapped-out allocation's bytes are: its pages, moved to a
  /// host mapping, or a copy.
  struct HostCopy {
    /// The moved pages (unmapped with it), `rounded` bytes.
    void *pages = nullptr;
    uint64_t rounded = 0;
    std::unique_ptr<uint8_t[]> copy;
    HostCopy() = default;
    HostCopy(HostCopy &&o) noexcept
        : pages(std::exchange(o.pages, nullptr)), rounded(o.rounded),
          copy(std::move(o.copy)) {}
    HostCopy &operator=(HostCopy &&) = delete;
    ~HostCopy();
  };
  /// The bytes of swapped-out allocations, by base.
  std::map<uint64_t, HostCopy> swappedOut;
  /// Deduplicated pages: a memfd and the allocations that map it.
  struct SharedGroup {
    int fd = -1;
    uint64_t rounded = 0;
    std::vector<uint64_t> members;
  };
  std::map<uint64_t, SharedGroup> groups;
  uint64_t nextGroup = 1;
  /// Gives `a` private pages with its current bytes (the lock is held).
  llvm::Error privatize(Allocation &a);
  uint64_t inUse = 0, swappedBytes = 0;
  uint64_t limit = UINT64_MAX;
};

} // namespace wooly::cpu

#endif // WOOLY_RUNTIME_CPU_DEVICEMEMORY_H
