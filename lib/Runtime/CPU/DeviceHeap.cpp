//===- DeviceHeap.cpp - CUDA's device heap on the CPU backend ---*- C++ -*-===//

#include "Wooly/Runtime/CPU/DeviceHeap.h"

#include "Wooly/Runtime/CPU/DeviceMemory.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

using namespace wooly::cpu;

namespace {
constexpr uint64_t kAlign = 16;
} // namespace

DeviceHeaps::~DeviceHeaps() {
  for (auto &[domain, heap] : heaps)
    llvm::consumeError(memory.free(heap->base));
}

uint64_t DeviceHeaps::allocate(uint64_t domain, uint64_t size) {
  std::lock_guard<std::mutex> lock(mutex);
  auto sized = sizes.find(domain);
  uint64_t bytes = sized == sizes.end() ? heapBytes : sized->second;
  if (size > bytes)
    return 0;
  uint64_t rounded = llvm::alignTo(std::max<uint64_t>(size, 1), kAlign);
  std::unique_ptr<Heap> &heap = heaps[domain];
  if (!heap) {
    llvm::Expected<uint64_t> base = memory.allocate(bytes, domain);
    if (!base) {
      llvm::consumeError(base.takeError());
      heaps.erase(domain);
      return 0;
    }
    heap = std::make_unique<Heap>();
    heap->base = *base;
    heap->bytes = bytes;
    heap->free[*base] = bytes;
  }
  for (auto it = heap->free.begin(); it != heap->free.end(); ++it) {
    auto [start, length] = *it;
    if (length < rounded)
      continue;
    heap->free.erase(it);
    if (length > rounded)
      heap->free[start + rounded] = length - rounded;
    heap->used[start] = rounded;
    return start;
  }
  return 0;
}

llvm::Error DeviceHeaps::free(uint64_t domain, uint64_t addr) {
  if (addr == 0)
    return llvm::Error::success();
  std::lock_guard<std::mutex> lock(mutex);
  auto h = heaps.find(domain);
  if (h == heaps.end() || !h->second->used.count(addr))
    return llvm::createStringError(llvm::formatv(
        "free(0x{0:x-}): not a block that device-side malloc returned, or "
        "freed already",
        addr));
  Heap &heap = *h->second;
  uint64_t start = addr, length = heap.used[addr];
  heap.used.erase(addr);
  // Merges with the free neighbours on either side.
  auto next = heap.free.lower_bound(start);
  if (next != heap.free.end() && next->first == start + length) {
    length += next->second;
    next = heap.free.erase(next);
  }
  if (next != heap.free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      prev->second += length;
      return llvm::Error::success();
    }
  }
  heap.free[start] = length;
  return llvm::Error::success();
}

llvm::Error DeviceHeaps::setSize(uint64_t domain, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  if (heaps.count(domain))
    return llvm::createStringError(
        "the device heap is in use (a kernel has allocated from it): its "
        "size can be set only before the first kernel that calls malloc, "
        "as in CUDA");
  if (bytes == heapBytes)
    sizes.erase(domain);
  else
    sizes[domain] = bytes;
  return llvm::Error::success();
}

uint64_t DeviceHeaps::size(uint64_t domain) {
  std::lock_guard<std::mutex> lock(mutex);
  auto sized = sizes.find(domain);
  return sized == sizes.end() ? heapBytes : sized->second;
}

uint64_t DeviceHeaps::release(uint64_t domain) {
  std::lock_guard<std::mutex> lock(mutex);
  sizes.erase(domain);
  auto h = heaps.find(domain);
  if (h == heaps.end())
    return 0;
  uint64_t bytes = h->second->bytes;
  llvm::consumeError(memory.free(h->second->base));
  heaps.erase(h);
  return bytes;
}

size_t DeviceHeaps::blocksInUse(uint64_t domain) {
  std::lock_guard<std::mutex> lock(mutex);
  auto h = heaps.find(domain);
  return h == heaps.end() ? 0 : h->second->used.size();
}
