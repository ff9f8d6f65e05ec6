//===- WarpOps.h - Semantics of warp collectives on the CPU -----*- C++ -*-===//
//
// Internal to the CPU runtime. When every lane of a warp collective has
// arrived, the scheduler calls one of these with the participating lanes'
// input and output words (encodings: `WoolyWarpKind` in
// `include/Wooly/Runtime/CPU/ABI.h`).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_RUNTIME_CPU_WARPOPS_H
#define WOOLY_LIB_RUNTIME_CPU_WARPOPS_H

#include "Wooly/Runtime/CPU/WarpShuffle.h"

#include <cstdint>
#include <functional>
#include <string>

namespace wooly::cpu {

/// One lane's part of a collective. `in`/`out` point into the lane's stack.
struct WarpLane {
  const uint32_t *in = nullptr;
  uint32_t nin = 0;
  uint32_t *out = nullptr;
  uint32_t nout = 0;
};

/// Memory the matrix collectives may touch.
struct WarpMemory {
  /// The block's shared window.
  char *shared = nullptr;
  uint64_t sharedSize = 0;
  /// Checks a generic access `[addr, addr + size)`; on failure fills
  /// `error` and returns false.
  std::function<bool(uint64_t addr, uint64_t size, bool write,
                     std::string &error)>
      checkGeneric;
};

/// The f32 value of f16 bits `h` (exact; a NaN keeps its payload, quieted).
float halfToFloat(uint16_t h);

/// f32 -> f16 bits, rounded to nearest even; NaN -> the canonical 0x7fff.
uint16_t floatToHalf(float f);

/// Computes `kind` (shfl, vote, match, redux) for the lanes whose bit is set
/// in `group` (`lanes[i]` is lane i). Returns false with `error` set for a
/// malformed request.
bool resolveWarpOp(uint32_t kind, WarpLane lanes[32], uint32_t group,
                   std::string &error);

/// Computes a matrix collective (`ldmatrix`, `mma.sync`, `wmma.*`); every
/// lane of the warp takes part (`group` must be all 32 lanes).
bool resolveMatrixOp(uint32_t kind, WarpLane lanes[32], uint32_t group,
                     const WarpMemory &memory, std::string &error);

} // namespace wooly::cpu

#endif // WOOLY_LIB_RUNTIME_CPU_WARPOPS_H
