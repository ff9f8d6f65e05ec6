//===- DeviceMemory.cpp - Device memory of the CPU backend ------*- C++ -*-===//

#include "Wooly/Runtime/CPU/DeviceMemory.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>
#include <cstring>
#include <linux/mman.h>
#include <mutex>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

using namespace wooly::cpu;
using llvm::Error;

static std::string hex(uint64_t v) { return llvm::formatv("{0:x-}", v).str(); }

namespace {
/// Every allocation is a reserved range of whole pages of its own, so that
/// its pages can be mapped out (swapOut) and back in (swapIn) at the same
/// address; mapped pages are zero until touched, so no allocation costs
/// time to clear.
uint64_t pageSize() {
  static const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  return page;
}

uint64_t roundedSize(uint64_t size) {
  uint64_t page = pageSize();
  return (size + page - 1) & ~(page - 1);
}

/// Maps fresh pages over `[base, base + rounded)` (MAP_FIXED replaces what
/// was there, so the range never becomes free for another mapping):
/// readable and writable zero pages, or PROT_NONE (no memory behind them).
bool remap(uint64_t base, uint64_t rounded, bool accessible) {
  void *p =
      ::mmap(reinterpret_cast<void *>(base), rounded,
             accessible ? PROT_READ | PROT_WRITE : PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  return p != MAP_FAILED;
}

void release(uint64_t base, uint64_t size) {
  ::munmap(reinterpret_cast<void *>(base), roundedSize(size));
}
} // namespace

DeviceMemory::~DeviceMemory() {
  for (auto &[base, a] : allocations)
    if (!a.moduleGlobal)
      release(base, a.size);
  for (auto &[id, g] : groups)
    ::close(g.fd);
}

llvm::Expected<uint64_t> DeviceMemory::allocate(uint64_t size,
                                                uint64_t domain) {
  if (size == 0)
    return llvm::createStringError("cannot allocate 0 bytes");
  {
    std::shared_lock<std::shared_mutex> lock(mutex);
    if (size > limit || inUse > limit - size)
      return llvm::createStringError(
          "out of device memory: " + llvm::Twine(size) + " bytes requested, " +
          llvm::Twine(inUse) + " of " + llvm::Twine(limit) + " in use");
  }
  uint64_t rounded = roundedSize(size);
  if (rounded < size)
    return llvm::createStringError("allocation size overflows");
  void *p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return llvm::createStringError("out of host memory allocating " +
                                   llvm::Twine(size) + " bytes");
  uint64_t base = reinterpret_cast<uint64_t>(p);
  std::unique_lock<std::shared_mutex> lock(mutex);
  allocations[base] = Allocation{base, size, false, "", domain};
  inUse += size;
  return base;
}

DeviceMemory::HostCopy::~HostCopy() {
  if (pages)
    ::munmap(pages, rounded);
}

Error DeviceMemory::swapOut(uint64_t addr) {
  std::unique_lock<std::shared_mutex> lock(mutex);
  auto it = allocations.find(addr);
  if (it == allocations.end() || it->second.moduleGlobal)
    return llvm::createStringError("swap-out of 0x" + hex(addr) +
                                   ", which is not the base of an allocation");
  Allocation &a = it->second;
  if (a.swapped)
    return llvm::createStringError("0x" + hex(addr) + " is swapped out");
  if (a.sharedGroup)
    return llvm::createStringError("0x" + hex(addr) +
                                   " shares its pages with other allocations");
  HostCopy host;
  host.rounded = roundedSize(a.size);
  void *base = reinterpret_cast<void *>(addr);
  // The pages move to a new host mapping; the range keeps a mapping with
  // no pages behind it, made inaccessible.
  void *moved = ::mremap(base, host.rounded, host.rounded,
                         MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
  if (moved != MAP_FAILED) {
    host.pages = moved;
    if (::mprotect(base, host.rounded, PROT_NONE) != 0 &&
        !remap(addr, host.rounded, /*accessible=*/false)) {
      // Put the pages back where they were (replacing the empty range).
      ::mremap(moved, host.rounded, host.rounded, MREMAP_MAYMOVE | MREMAP_FIXED,
               base);
      host.pages = nullptr;
      return llvm::createStringError("cannot map out the pages at 0x" +
                                     hex(addr));
    }
  } else {
    host.copy.reset(new (std::nothrow) uint8_t[a.size]);
    if (!host.copy)
      return llvm::createStringError("out of host memory swapping out " +
                                     llvm::Twine(a.size) + " bytes");
    std::memcpy(host.copy.get(), base, a.size);
    if (!remap(addr, host.rounded, /*accessible=*/false))
      return llvm::createStringError("cannot map out the pages at 0x" +
                                     hex(addr));
  }
  swappedOut.emplace(addr, std::move(host));
  a.swapped = true;
  inUse -= a.size;
  swappedBytes += a.size;
  return Error::success();
}

Error DeviceMemory::swapIn(uint64_t addr) {
  std::unique_lock<std::shared_mutex> lock(mutex);
  auto it = allocations.find(addr);
  auto host = swappedOut.find(addr);
  if (it == allocations.end() || !it->second.swapped ||
      host == swappedOut.end())
    return llvm::createStringError("swap-in of 0x" + hex(addr) +
                                   ", which is not swapped out");
  Allocation &a = it->second;
  HostCopy &h = host->second;
  if (h.pages) {
    // Replaces the reserved range in one step: the address is never free.
    if (::mremap(h.pages, h.rounded, h.rounded, MREMAP_MAYMOVE | MREMAP_FIXED,
                 reinterpret_cast<void *>(addr)) == MAP_FAILED)
      return llvm::createStringError("cannot map in the pages at 0x" +
                                     hex(addr));
    h.pages = nullptr;
  } else {
    if (!remap(addr, h.rounded, /*accessible=*/true))
      return llvm::createStringError("cannot map in the pages at 0x" +
                                     hex(addr));
    std::memcpy(reinterpret_cast<void *>(addr), h.copy.get(), a.size);
  }
  swappedOut.erase(host);
  a.swapped = false;
  inUse += a.size;
  swappedBytes -= a.size;
  return Error::success();
}

uint64_t DeviceMemory::bytesSwapped() const {
  std::shared_lock<std::shared_mutex> lock(mutex);
  return swappedBytes;
}

Error DeviceMemory::free(uint64_t addr) {
  std::unique_lock<std::shared_mutex> lock(mutex);
  auto it = allocations.find(addr);
  if (it == allocations.end() || it->second.moduleGlobal)
    return llvm::createStringError(
        "free of 0x" + hex(addr) +
        ", which is not the base of a live allocation");
  uint64_t size = it->second.size;
  if (it->second.swapped) {
    swappedOut.erase(addr);
    swappedBytes -= size;
  } else if (it->second.sharedGroup) {
    // The group's pages stay with its other members; the last one left
    // gets pages of its own again.
    SharedGroup &g = groups[it->second.sharedGroup];
    llvm::erase(g.members, addr);
    if (g.members.size() == 1) {
      // Where its private copy cannot be made, it stays mapped read-only,
      // alone: its bytes are intact, only writes to it fail.
      Allocation &last = allocations[g.members.front()];
      llvm::consumeError(privatize(last));
    }
  } else {
    inUse -= size;
  }
  allocations.erase(it);
  lock.unlock();
  release(addr, size);
  return Error::success();
}

Error DeviceMemory::privatize(Allocation &a) {
  SharedGroup &g = groups[a.sharedGroup];
  void *fresh = ::mmap(nullptr, g.rounded, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (fresh == MAP_FAILED)
    return llvm::createStringError("out of host memory for a private copy "
                                   "of the shared allocation at 0x" +
                                   hex(a.base));
  std::memcpy(fresh, reinterpret_cast<const void *>(a.base), a.size);
  // Replaces the read-only mapping in one step: the address is never free
  // and always reads the same bytes.
  if (::mremap(fresh, g.rounded, g.rounded, MREMAP_MAYMOVE | MREMAP_FIXED,
               reinterpret_cast<void *>(a.base)) == MAP_FAILED) {
    ::munmap(fresh, g.rounded);
    return llvm::createStringError("cannot map a private copy at 0x" +
                                   hex(a.base));
  }
  // `inUse` counts each group's pages once, and private pages.
  llvm::erase(g.members, a.base);
  inUse += a.size;
  if (g.members.empty()) {
    ::close(g.fd);
    groups.erase(a.sharedGroup);
    inUse -= a.size;
  }
  a.sharedGroup = 0;
  return Error::success();
}

Error DeviceMemory::share(uint64_t addr, uint64_t with) {
  std::unique_lock<std::shared_mutex> lock(mutex);
  auto it = allocations.find(addr), wit = allocations.find(with);
  if (it == allocations.end() || wit == allocations.end() || addr == with ||
      it->second.moduleGlobal || wit->second.moduleGlobal)
    return llvm::createStringError("sharing 0x" + hex(addr) + " with 0x" +
                                   hex(with) +
                                   ": not two distinct allocations");
  Allocation &a = it->second, &w = wit->second;
  if (a.size != w.size || a.swapped || w.swapped || a.sharedGroup)
    return llvm::createStringError(
        "sharing 0x" + hex(addr) + " with 0x" + hex(with) +
        ": sizes differ, one is swapped out, or it is shared already");
  uint64_t rounded = roundedSize(a.size);
  if (!w.sharedGroup) {
    // A new group: `with`'s bytes move into a memfd that it maps.
    int fd = ::memfd_create("wooly-shared", MFD_CLOEXEC);
    if (fd < 0)
      return llvm::createStringError("memfd_create failed");
    uint64_t done = 0;
    bool ok = ::ftruncate(fd, off_t(rounded)) == 0;
    while (ok && done < w.size) {
      ssize_t n = ::pwrite(fd, reinterpret_cast<const char *>(with) + done,
                           w.size - done, off_t(done));
      ok = n > 0;
      done += ok ? uint64_t(n) : 0;
    }
    if (!ok || ::mmap(reinterpret_cast<void *>(with), rounded, PROT_READ,
                      MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
      ::close(fd);
      return llvm::createStringError("cannot share the pages of 0x" +
                                     hex(with));
    }
    uint64_t id = nextGroup++;
    groups[id] = SharedGroup{fd, rounded, {with}};
    w.sharedGroup = id;
    // `with`'s pages are gone, the group's count instead: the same bytes.
  }
  SharedGroup &g = groups[w.sharedGroup];
  if (::mmap(reinterpret_cast<void *>(addr), rounded, PROT_READ,
             MAP_SHARED | MAP_FIXED, g.fd, 0) == MAP_FAILED)
    return llvm::createStringError("cannot map the shared pages at 0x" +
                                   hex(addr));
  g.members.push_back(addr);
  a.sharedGroup = w.sharedGroup;
  inUse -= a.size; // Its own pages are gone.
  return Error::success();
}

Error DeviceMemory::unshare(uint64_t addr) {
  std::unique_lock<std::shared_mutex> lock(mutex);
  auto it = allocations.find(addr);
  if (it == allocations.end() || !it->second.sharedGroup)
    return llvm::createStringError("unsharing 0x" + hex(addr) +
                                   ", which is not a shared allocation");
  uint64_t group = it->second.sharedGroup;
  if (Error e = privatize(it->second))
    return e;
  auto g = groups.find(group);
  if (g != groups.end() && g->second.members.size() == 1)
    return privatize(allocations[g->second.members.front()]);
  return Error::success();
}

bool DeviceMemory::sameBytes(uint64_t a, uint64_t b, uint64_t size) const {
  std::shared_lock<std::shared_mutex> lock(mutex);
  auto ia = allocations.find(a), ib = allocations.find(b);
  if (ia == allocations.end() || ib == allocations.end() ||
      ia->second.swapped || ib->second.swapped || size > ia->second.size ||
      size > ib->second.size)
    return false;
  return std::memcmp(reinterpret_cast<const void *>(a),
                     reinterpret_cast<const void *>(b), size) == 0;
}

void DeviceMemory::registerGlobal(uint64_t base, uint64_t size,
                                  std::string name, uint64_t domain) {
  std::unique_lock<std::shared_mutex> lock(mutex);
  allocations[base] = Allocation{base, size, true, std::move(name), domain};
}

void DeviceMemory::setGlobalDomain(uint64_t base, uint64_t domain) {
  std::unique_lock<std::shared_mutex> lock(mutex);
  auto it = allocations.find(base);
  if (it != allocations.end() && it->second.moduleGlobal)
    it->second.domain = domain;
}

void DeviceMemory::unregisterGlobal(uint64_t base) {
  std::unique_lock<std::shared_mutex> lock(mutex);
  allocations.erase(base);
}

std::optional<Allocation> DeviceMemory::find(uint64_t addr, uint64_t size,
                                             bool swappedToo) const {
  std::shared_lock<std::shared_mutex> lock(mutex);
  auto it = allocations.upper_bound(addr);
  if (it == allocations.begin())
    return std::nullopt;
  --it;
  const Allocation &a = it->second;
  if (a.swapped && !swappedToo)
    return std::nullopt;
  uint64_t off = addr - a.base;
  if (off < a.size && size <= a.size - off)
    return a;
  // A zero-size module global still owns its base address.
  if (size == 0 && off == 0)
    return a;
  return std::nullopt;
}

std::optional<Allocation> DeviceMemory::nearest(uint64_t addr) const {
  std::shared_lock<std::shared_mutex> lock(mutex);
  if (allocations.empty())
    return std::nullopt;
  auto it = allocations.upper_bound(addr);
  std::optional<Allocation> best;
  uint64_t bestDist = UINT64_MAX;
  if (it != allocations.end()) {
    best = it->second;
    bestDist = it->second.base - addr;
  }
  if (it != allocations.begin()) {
    --it;
    uint64_t end = it->second.base + it->second.size;
    uint64_t d = addr >= end ? addr - end : 0;
    if (d <= bestDist)
      best = it->second;
  }
  return best;
}

uint64_t DeviceMemory::bytesInUse() const {
  std::shared_lock<std::shared_mutex> lock(mutex);
  return inUse;
}

Error DeviceMemory::checkRange(uint64_t addr, uint64_t size,
                               const char *what) const {
  if (size == 0)
    return Error::success();
  if (find(addr, size))
    return Error::success();
  {
    std::shared_lock<std::shared_mutex> lock(mutex);
    auto it = allocations.upper_bound(addr);
    if (it != allocations.begin() && (--it)->second.swapped &&
        addr - it->first < it->second.size)
      return llvm::createStringError(llvm::Twine(what) + " of " +
                                     llvm::Twine(size) +
                                     " bytes at device address 0x" + hex(addr) +
                                     ": the allocation is swapped out");
  }
  return llvm::createStringError(llvm::Twine(what) + " of " +
                                 llvm::Twine(size) +
                                 " bytes at device address 0x" + hex(addr) +
                                 " is outside every live allocation");
}

Error DeviceMemory::checkWritable(uint64_t addr, uint64_t size,
                                  const char *what) const {
  std::optional<Allocation> a = size ? find(addr, size) : std::nullopt;
  if (!a)
    return checkRange(addr, size, what);
  if (a->sharedGroup)
    return llvm::createStringError(
        llvm::Twine(what) + " of " + llvm::Twine(size) +
        " bytes at device address 0x" + hex(addr) +
        ": the allocation's bytes are shared read-only with other tenants "
        "(deduplicated); it must be given its own copy first");
  return Error::success();
}

Error DeviceMemory::copyToDevice(uint64_t dst, const void *src, uint64_t size) {
  if (Error e = checkWritable(dst, size, "copy to device"))
    return e;
  std::memcpy(reinterpret_cast<void *>(dst), src, size);
  return Error::success();
}

Error DeviceMemory::copyFromDevice(void *dst, uint64_t src, uint64_t size) {
  if (Error e = checkRange(src, size, "copy from device"))
    return e;
  std::memcpy(dst, reinterpret_cast<const void *>(src), size);
  return Error::success();
}

Error DeviceMemory::copyDeviceToDevice(uint64_t dst, uint64_t src,
                                       uint64_t size) {
  if (Error e = checkRange(src, size, "device-to-device copy source"))
    return e;
  if (Error e = checkWritable(dst, size, "device-to-device copy destination"))
    return e;
  std::memmove(reinterpret_cast<void *>(dst),
               reinterpret_cast<const void *>(src), size);
  return Error::success();
}

Error DeviceMemory::memset(uint64_t dst, uint8_t value, uint64_t size) {
  if (Error e = checkWritable(dst, size, "memset"))
    return e;
  std::memset(reinterpret_cast<void *>(dst), value, size);
  return Error::success();
}
