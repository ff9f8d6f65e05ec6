//===- WarpShuffle.h - Which lane a shfl reads ------------------*- C++ -*-===//
//
// The semantics of `shfl.sync`'s lane selection, shared by the CPU runtime
// (lib/Runtime/CPU/WarpOps.cpp, RegionExecutor.cpp), which completes
// shuffles whose operands it receives, and by the host lowering
// (convert-wooly-to-llvm), which completes a full-warp shuffle whose mode,
// lane and clamp operands are constants as a fixed permutation of the
// lanes' values.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_RUNTIME_CPU_WARPSHUFFLE_H
#define WOOLY_RUNTIME_CPU_WARPSHUFFLE_H

#include <cstdint>

namespace wooly::cpu {

/// The lane whose value lane `lane` of `group` reads in a `shfl` of mode
/// `mode` (0 up, 1 down, 2 bfly, 3 idx) with lane operand `b` and clamp
/// operand `c`, and in `pval` whether that source lane was in range.
inline uint32_t shflSource(uint32_t lane, uint32_t mode, uint32_t b, uint32_t c,
                           uint32_t group, bool &pval) {
  b &= 31;
  uint32_t cval = c & 31, segmask = (c >> 8) & 31;
  int maxLane = int((lane & segmask) | (cval & ~segmask));
  int minLane = int(lane & segmask);
  int j = int(lane);
  switch (mode) {
  case 0: // up
    j = int(lane) - int(b);
    pval = j >= maxLane;
    break;
  case 1: // down
    j = int(lane) + int(b);
    pval = j <= maxLane;
    break;
  case 2: // bfly
    j = int(lane ^ b);
    pval = j <= maxLane;
    break;
  default: // idx
    j = minLane | int(b & ~segmask);
    pval = j <= maxLane;
    break;
  }
  if (!pval)
    j = int(lane);
  // A source lane outside the group (inactive) gives an unspecified
  // value on the GPU; here it is the reading lane's own value.
  return (group & (1u << j)) ? uint32_t(j) : lane;
}

} // namespace wooly::cpu

#endif // WOOLY_RUNTIME_CPU_WARPSHUFFLE_H
