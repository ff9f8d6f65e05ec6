//===- WaitLoops.h - Loops that wait for other threads ----------*- C++ -*-===//
//
// A thread that spins until another thread writes memory
// (`while (atomicAdd(&flag, 0) == 0);`, a loop over a volatile or
// `ld.acquire` load) needs that other thread to run meanwhile. On a GPU it
// does; an executor that runs a block's threads one after another (the CPU
// backend's direct and region modes) would spin forever. This finds such
// loops so that the CPU backend can make them yield.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_DIALECT_WOOLY_ANALYSIS_WAITLOOPS_H
#define WOOLY_DIALECT_WOOLY_ANALYSIS_WAITLOOPS_H

#include "mlir/IR/Block.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
class Operation;
namespace wooly {
class FuncOp;

/// Marks a read that a sharing pass adds to a loop of memory the host
/// writes (`wooly-contain`'s watchdog status, `wooly-slice`'s preemption
/// flag): the loop reacts to it but does not wait for another thread.
inline constexpr llvm::StringLiteral kNoWaitAttr = "wooly.no_wait";

/// A loop of a function's body that may wait for another thread.
struct WaitLoop {
  /// The loop's header.
  Block *header = nullptr;
  /// Its blocks that branch back to the header.
  SmallVector<Block *> latches;
  /// The read of memory that decides whether the loop is left.
  Operation *poll = nullptr;
};

/// The loops of `fn`'s body (natural loops, CFGLoopInfo) of which some exit
/// branch's condition depends, through the loop's SSA values and block
/// arguments, on a read inside the loop that observes other threads'
/// writes without changing memory: a volatile, relaxed, acquire or `.cv`
/// load from a space other threads can write (not local, param or const),
/// or an atomic that leaves memory as it is (`add`/`or`/`xor`/`sub` of 0,
/// `and` of all ones, `cas` whose compare and new values are one value),
/// other than a sharing pass's reads of host state (kNoWaitAttr).
/// An atomic that changes memory (claiming work with `atomicAdd(&next, 1)`,
/// a compare-and-swap update or lock) is not a poll: run alone, such a
/// loop still ends.
SmallVector<WaitLoop> findWaitLoops(FuncOp fn);

} // namespace wooly
} // namespace mlir

#endif // WOOLY_DIALECT_WOOLY_ANALYSIS_WAITLOOPS_H
