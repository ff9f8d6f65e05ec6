//===- CoalesceTable.h - The dispatch table of wooly-coalesce --*- C++ -*-===//
//
// `wooly-coalesce{kernels=a,b,...}` adds the kernel `__wooly_coalesced`,
// whose one parameter (role `coalesce_table`, u64) is the device address of
// this table. Layout (little-endian, 8-byte aligned):
//
//   offset 0  u32 part count
//   offset 4  u32 reserved (0)
//   offset 8  one 48-byte CoalescePart per part:
//     +0  u32 kernel index (into the distinct names of the `kernels` option,
//             in their first-appearance order)
//     +4  u32 first physical block (linear) of the part
//     +8  u32 grid x, y, z       (the part's own grid)
//     +20 u32 block x, y, z      (the part's own block)
//     +32 u32 dynamic shared bytes of the part
//     +36 u32 reserved (0)
//     +40 u64 device address of the part's parameter buffer (the original
//             kernel's CUDA layout, `KernelInfo::paramOffsets`)
//
// Launch `__wooly_coalesced` with a 1-D grid of `coalescedGrid(parts)`
// blocks, a 1-D block of `coalescedBlock(parts)` threads and
// `coalescedDynamicShared(parts)` bytes of dynamic shared memory. Parts'
// block ranges must not overlap; a physical block in no part exits.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_RUNTIME_COALESCETABLE_H
#define WOOLY_RUNTIME_COALESCETABLE_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace wooly {

/// The table's header.
struct CoalesceTableHeader {
  uint32_t partCount = 0;
  uint32_t reserved = 0;
};

/// One launch fused into `__wooly_coalesced`.
struct CoalescePart {
  uint32_t kernelIndex = 0;
  uint32_t firstBlock = 0;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t dynamicSharedBytes = 0;
  uint32_t reserved = 0;
  uint64_t params = 0;

  uint64_t blocks() const { return uint64_t(grid[0]) * grid[1] * grid[2]; }
  uint32_t threads() const { return block[0] * block[1] * block[2]; }
};

static_assert(sizeof(CoalesceTableHeader) == 8, "table header layout");
static_assert(sizeof(CoalescePart) == 48, "table part layout");
static_assert(offsetof(CoalescePart, dynamicSharedBytes) == 32, "layout");
static_assert(offsetof(CoalescePart, params) == 40, "table part layout");

/// Sets each part's `firstBlock` so that the parts follow one another.
inline void assignFirstBlocks(std::vector<CoalescePart> &parts) {
  uint64_t next = 0;
  for (CoalescePart &p : parts) {
    p.firstBlock = uint32_t(next);
    next += p.blocks();
  }
}

/// The fused launch's 1-D grid: past the last block of every part.
inline uint64_t coalescedGrid(const std::vector<CoalescePart> &parts) {
  uint64_t end = 0;
  for (const CoalescePart &p : parts)
    end = std::max(end, uint64_t(p.firstBlock) + p.blocks());
  return end;
}

/// The fused launch's 1-D block: the largest part's threads.
inline uint32_t coalescedBlock(const std::vector<CoalescePart> &parts) {
  uint32_t n = 1;
  for (const CoalescePart &p : parts)
    n = std::max(n, p.threads());
  return n;
}

/// The fused launch's dynamic shared memory: the largest part's.
inline uint32_t coalescedDynamicShared(const std::vector<CoalescePart> &parts) {
  uint32_t n = 0;
  for (const CoalescePart &p : parts)
    n = std::max(n, p.dynamicSharedBytes);
  return n;
}

/// The table's bytes (to copy to device memory).
inline std::vector<uint8_t>
encodeCoalesceTable(const std::vector<CoalescePart> &parts) {
  CoalesceTableHeader h;
  h.partCount = uint32_t(parts.size());
  std::vector<uint8_t> bytes(sizeof(h) + parts.size() * sizeof(CoalescePart));
  std::memcpy(bytes.data(), &h, sizeof(h));
  if (!parts.empty())
    std::memcpy(bytes.data() + sizeof(h), parts.data(),
                parts.size() * sizeof(CoalescePart));
  return bytes;
}

} // namespace wooly

#endif // WOOLY_RUNTIME_COALESCETABLE_H
