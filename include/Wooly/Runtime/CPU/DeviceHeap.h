//===- DeviceHeap.h - CUDA's device heap on the CPU backend -----*- C++ -*-===//
//
// Part of the Wooly project.
//
//===----------------------------------------------------------------------===//
//
// Device-side `malloc` and `free` (and so `new` and `delete` in kernels):
// each memory domain (a tenant session's; 0 outside the server) has a heap
// of its own, one allocation of device memory made in that domain at the
// domain's first `malloc`, so that only its own kernels can reach it. Blocks
// are 16-byte aligned (as CUDA's), taken first-fit from the heap's free
// ranges under a mutex; `free` merges a block with free neighbours. As in
// CUDA, a heap outlives launches: a block one kernel allocates another may
// use and free. A full heap makes `malloc` return null.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_RUNTIME_CPU_DEVICEHEAP_H
#define WOOLY_RUNTIME_CPU_DEVICEHEAP_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace wooly::cpu {

class DeviceMemory;

class DeviceHeaps {
public:
  /// Each domain's heap is `bytes` long (CUDA's default, 8 MiB, unless
  /// set otherwise).
  DeviceHeaps(DeviceMemory &memory, uint64_t bytes)
      : memory(memory), heapBytes(bytes) {}
  /// Frees every heap's allocation.
  ~DeviceHeaps();

  /// A block of `size` bytes (at least 1; 16-byte aligned) in `domain`'s
  /// heap, made on first use; 0 where the heap has no room or cannot be
  /// made.
  uint64_t allocate(uint64_t domain, uint64_t size);
  /// Frees a block `allocate` returned for `domain`; 0 is ignored (as
  /// CUDA's free(NULL)). Any other address is an error that says why.
  llvm::Error free(uint64_t domain, uint64_t addr);
  /// Forgets `domain`'s heap and frees its memory (its session ended);
  /// returns the bytes freed (0: it had none). Its size goes back to the
  /// default.
  uint64_t release(uint64_t domain);
  /// Makes `domain`'s heap `bytes` long (cudaLimitMallocHeapSize). An
  /// error once the heap was made (a kernel of the domain allocated from
  /// it), as CUDA's.
  llvm::Error setSize(uint64_t domain, uint64_t bytes);
  /// The size of `domain`'s heap (made or not).
  uint64_t size(uint64_t domain);

  /// Blocks in use in `domain`'s heap (tests).
  size_t blocksInUse(uint64_t domain);

private:
  struct Heap {
    uint64_t base = 0, bytes = 0;
    /// Free ranges by address: start -> length, never adjacent.
    std::map<uint64_t, uint64_t> free;
    /// Blocks in use: start -> length.
    std::map<uint64_t, uint64_t> used;
  };

  DeviceMemory &memory;
  uint64_t heapBytes;
  std::mutex mutex;
  std::map<uint64_t, std::unique_ptr<Heap>> heaps;
  /// Sizes set with setSize (others: heapBytes).
  std::map<uint64_t, uint64_t> sizes;
};

} // namespace wooly::cpu

#endif // WOOLY_RUNTIME_CPU_DEVICEHEAP_H
