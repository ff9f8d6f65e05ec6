//===- DeviceMemory.cpp - Device memory of the CPU backend ------*- C++ -*-===//

#include "Wooly/Runtime/CPU/DeviceMemory.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sys/mman.h>

using namespace wooly::cpu;
using llvm::Error;

static std::string hex(uint64_t v) { return llvm::formatv("{0:x-}", v).str(); }

namespace {
/// Allocations from this size on are mapped pages: zero until touched, so
/// a large allocation costs no time to clear.
constexpr uint64_t kMapThreshold = 1 << 20;

uint64_t roundedSize(uint64_t size) { return (size + 255) & ~uint64_t(255); }

void release(uint64_t base, uint64_t size) {
  uint64_t rounded = roundedSize(size);
  if (rounded >= kMapThreshold)
    ::munmap(reinterpret_cast<void *>(base), rounded);
  else
    std::free(reinterpret_cast<void *>(base));
}
} // namespace

DeviceMemory::~DeviceMemory() {
  for (auto &[base, a] : allocations)
    if (!a.moduleGlobal)
      release(base, a.size);
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
  void *p = nullptr;
  if (rounded >= kMapThreshold) {
    p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      p = nullptr;
  } else if ((p = std::aligned_alloc(256, rounded))) {
    std::memset(p, 0, rounded);
  }
  if (!p)
    return llvm::createStringError("out of host memory allocating " +
                                   llvm::Twine(size) + " bytes");
  uint64_t base = reinterpret_cast<uint64_t>(p);
  std::unique_lock<std::shared_mutex> lock(mutex);
  allocations[base] = Allocation{base, size, false, "", domain};
  inUse += size;
  return base;
}

Error DeviceMemory::free(uint64_t addr) {
  std::unique_lock<std::shared_mutex> lock(mutex);
  auto it = allocations.find(addr);
  if (it == allocations.end() || it->second.moduleGlobal)
    return llvm::createStringError(
        "free of 0x" + hex(addr) +
        ", which is not the base of a live allocation");
  uint64_t size = it->second.size;
  inUse -= size;
  allocations.erase(it);
  lock.unlock();
  release(addr, size);
  return Error::success();
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

std::optional<Allocation> DeviceMemory::find(uint64_t addr,
                                             uint64_t size) const {
  std::shared_lock<std::shared_mutex> lock(mutex);
  auto it = allocations.upper_bound(addr);
  if (it == allocations.begin())
    return std::nullopt;
  --it;
  const Allocation &a = it->second;
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
  return llvm::createStringError(llvm::Twine(what) + " of " +
                                 llvm::Twine(size) +
                                 " bytes at device address 0x" + hex(addr) +
                                 " is outside every live allocation");
}

Error DeviceMemory::copyToDevice(uint64_t dst, const void *src, uint64_t size) {
  if (Error e = checkRange(dst, size, "copy to device"))
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
  if (Error e = checkRange(dst, size, "device-to-device copy destination"))
    return e;
  std::memmove(reinterpret_cast<void *>(dst),
               reinterpret_cast<const void *>(src), size);
  return Error::success();
}

Error DeviceMemory::memset(uint64_t dst, uint8_t value, uint64_t size) {
  if (Error e = checkRange(dst, size, "memset"))
    return e;
  std::memset(reinterpret_cast<void *>(dst), value, size);
  return Error::success();
}
