//===- SharedOffsets.h - Bounds of shared-memory offsets --------*- C++ -*-===//
//
// Most shared-memory accesses of real kernels index a static array by the
// thread id and values derived from it: `buf[cur][tid]` of a scan, `s[tid]`
// of a reduction, `hist[byte]`. Their offsets are bounded at compile time,
// and where the bound lies inside the module's static shared memory, which
// every launch has, the access cannot leave the block's window: a target
// that checks each access (the host) may drop that check. This bounds the
// offsets with MLIR's integer range analysis (arith's transfer functions,
// branch arguments joined to a fixed point), given what PTX guarantees of
// the special registers and where the target laid out each variable.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_DIALECT_WOOLY_ANALYSIS_SHAREDOFFSETS_H
#define WOOLY_DIALECT_WOOLY_ANALYSIS_SHAREDOFFSETS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::wooly {

/// On a `ld`, `st`, `atom` or `red` of the shared state space: the largest
/// address (an unsigned i64, the offset in the shared window) it can access
/// at, from annotateSharedOffsetBounds.
inline constexpr llvm::StringLiteral kMaxSharedOffsetAttr =
    "wooly.max_shared_offset";

/// On the same accesses: how many low bits of the address are known to be
/// zero (the address is a multiple of 2 to that power), where any are.
inline constexpr llvm::StringLiteral kSharedOffsetZerosAttr =
    "wooly.shared_offset_zeros";

/// Gives each shared-memory access of a kernel of `module` (not of a device
/// function, whose one definition may serve the kernels of a module's
/// other parts, with less static shared memory) whose address the integer
/// range analysis bounds the attribute kMaxSharedOffsetAttr, and
/// kSharedOffsetZerosAttr where its low bits are known (shifts, multiples,
/// the variables' offsets: `s[tid]` of an `int` array is 4-byte aligned).
/// `offsets` is the offset of each shared variable in the window (`addressof`
/// of a variable not in it is unbounded). The special registers are bounded by
/// the limits of every launch: `%tid` below 1024 (64 in z), `%ntid` from 1
/// to 1024 (64 in z), `%laneid` below 32. Functions are analysed each on
/// its own (their arguments unbounded): a device function may serve kernels
/// compiled apart.
void annotateSharedOffsetBounds(ModuleOp module,
                                const llvm::StringMap<uint64_t> &offsets);

} // namespace mlir::wooly

#endif // WOOLY_DIALECT_WOOLY_ANALYSIS_SHAREDOFFSETS_H
