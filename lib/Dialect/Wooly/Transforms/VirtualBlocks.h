//===- VirtualBlocks.h - Loops over virtual blocks (internal) ----*- C++
//-*-===//
//
// What wooly-constrain and wooly-slice share: the checks that a kernel can
// run its virtual blocks in a loop, launch parameters, and the rewrite of a
// kernel's body into the body of a loop over virtual block ids; and what
// the passes that hand a value to every function (wooly-isolate,
// wooly-contain) share.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_DIALECT_WOOLY_TRANSFORMS_VIRTUALBLOCKS_H
#define WOOLY_LIB_DIALECT_WOOLY_TRANSFORMS_VIRTUALBLOCKS_H

#include "Wooly/Dialect/Wooly/IR/Wooly.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::wooly::vblocks {

/// Operations that need every lane their mask names (or the whole warp):
/// shfl, vote, match, redux, bar.warp.sync, ldmatrix, mma, wmma.
bool isWarpCollective(Operation *op);

/// What a device function does (with everything it calls).
struct Summary {
  bool readsBlockIds = false;
  bool exits = false;
  bool indirectCall = false;
  bool gridId = false;
  bool gridSync = false;
  /// Shared memory, barriers or warp collectives.
  bool blockShared = false;
  /// Block barriers (bar.sync, bar.red, iteration barriers), and warp
  /// collectives (isWarpCollective).
  bool barrier = false, warpCollective = false;
};

/// Computes (and memoises) the summary of a function and its callees.
class Summarizer {
public:
  const Summary &get(FuncOp f);

private:
  llvm::DenseMap<Operation *, Summary> memo;
};

/// Checks that `kernel` can become a loop over virtual blocks: no indirect
/// calls, no `%gridid`, no call (direct or transitive) to a device function
/// that reads block ids or may `exit`, no grid-wide synchronisation through
/// the CUDA device runtime. Emits a located error naming `pass` otherwise.
LogicalResult checkKernel(FuncOp kernel, StringRef pass);

/// Whether threads of one virtual block may still use block-shared state
/// (shared memory, barriers, warp collectives) that the next virtual block
/// run by the same physical block would disturb: then iterations are
/// separated by a block barrier.
bool needsIterationBarrier(FuncOp kernel);

/// Bytes of a value of type `t` in memory (vectors: all elements; 0 when
/// unknown).
uint64_t typeBytes(Type t);

/// Refuses every indirect call of `module` with a located error
/// "<pass>: indirect calls are not supported (<why>)"; failure when there
/// was one.
LogicalResult refuseIndirectCalls(ModuleOp module, StringRef pass,
                                  StringRef why);

/// Every call of a device function with a body passes on, appended to its
/// operands, the values `extra` gives its caller (what a pass appended to
/// every function: trailing arguments of device functions, launch
/// parameters of kernels). A call of a kernel is a located error naming
/// `pass`.
LogicalResult
passOnTrailingArgs(ModuleOp module,
                   const llvm::DenseMap<Operation *, SmallVector<Value>> &extra,
                   StringRef pass);

/// Appends a parameter of `type` (PTX type `ptxType`) with the launch role
/// `role` to `kernel` and returns it.
BlockArgument appendLaunchParam(FuncOp kernel, StringRef role, Type type,
                                StringRef ptxType);

/// The blocks of a kernel rewritten by `buildVirtualLoop`.
struct VirtualLoop {
  /// The entry block (the kernel's parameters), without a terminator.
  Block *entry = nullptr;
  /// The first block of the original body; its one argument is the linear
  /// virtual block id (i64, below the virtual grid's size).
  Block *body = nullptr;
  /// Where every `wooly.ret`/`wooly.exit` of the body now branches; no
  /// terminator yet.
  Block *latch = nullptr;
  /// A block holding only `wooly.ret`: the end of the physical block.
  Block *done = nullptr;
  /// The virtual grid (i32 parameters) and its size vx*vy*vz (i64,
  /// computed in `entry`).
  Value gridX, gridY, gridZ, total;
};

/// Splits `kernel`'s body: `%ctaid`/`%clusterid` read the components of the
/// body's virtual id, `%nctaid`/`%nclusterid` the virtual grid; `ret`/`exit`
/// branch to the latch. The caller connects entry, latch and body.
VirtualLoop buildVirtualLoop(FuncOp kernel, Value gridX, Value gridY,
                             Value gridZ);

/// Builds `wooly.iteration_barrier` at `b`'s point: the end of a virtual
/// block, where a thread that finished early counts as exited for the
/// others' barriers and collectives (the meaning `ret`/`exit` had).
void createIterationBarrier(OpBuilder &b, Location loc);

/// Builds `wooly.barrier 0` (all threads of the block) at `b`'s point.
void createBlockBarrier(OpBuilder &b, Location loc);

} // namespace mlir::wooly::vblocks

#endif // WOOLY_LIB_DIALECT_WOOLY_TRANSFORMS_VIRTUALBLOCKS_H
