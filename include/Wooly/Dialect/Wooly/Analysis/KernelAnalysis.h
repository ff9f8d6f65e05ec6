//===- KernelAnalysis.h - Facts the runtime needs about kernels -*- C++ -*-===//
//
// Per-kernel facts for the scheduler and the memory manager (DESIGN.md,
// "analyses"): which pointer parameters are only read (their buffers can be
// deduplicated across tenants by content), static shared memory, a register
// estimate, occupancy, and a static cost hint.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_DIALECT_WOOLY_ANALYSIS_KERNELANALYSIS_H
#define WOOLY_DIALECT_WOOLY_ANALYSIS_KERNELANALYSIS_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
namespace wooly {
class FuncOp;

/// How a kernel uses one parameter.
struct ParamUsage {
  /// The parameter's value reaches the address of a memory access.
  bool isPointer = false;
  /// Memory is written through it (store, atomic, reduction, async-copy or
  /// wmma destination).
  bool written = false;
  /// Its value leaves the kernel's view: stored to memory, passed to a
  /// call, or combined in a way the analysis does not follow. An escaped
  /// pointer is never reported read-only.
  bool escapes = false;

  /// True for a pointer parameter the kernel only reads through.
  bool isReadOnlyPointer() const { return isPointer && !written && !escapes; }
};

/// The facts about one kernel.
struct KernelSummary {
  std::string name;
  std::vector<ParamUsage> params;
  /// Bytes of the `.shared` variables the kernel and the functions it calls
  /// name (the dynamic shared memory comes on top, at launch).
  uint64_t staticSharedBytes = 0;
  /// An estimate of the 32-bit registers a thread needs: the largest
  /// number of values live at once, in 32-bit units (64-bit values count
  /// twice). A real backend reports its own figure.
  unsigned registerEstimate = 0;
  /// It may write device memory that no parameter is known to point to:
  /// through an address loaded from memory or returned by a call, one made
  /// from an integer, or by a call or an operation the analysis does not
  /// follow. Writes to `.shared`, `.local` and through the addresses of
  /// module variables do not count. Deduplication gives every buffer of the
  /// tenant its own copy before such a kernel runs.
  bool writesUnknownMemory = false;
  /// Barrier and warp-collective use.
  bool usesBarriers = false;
  bool usesWarpCollectives = false;
  /// A static cost hint: operations weighted by 8 per loop nesting level
  /// (loops found as back edges of the control-flow graph).
  uint64_t costHint = 0;
};

/// Analyzes `kernel` (a `wooly.func` with the `kernel` attribute).
KernelSummary analyzeKernel(FuncOp kernel);

/// The CUDA parameter buffer of `kernel`: the offset and size of each
/// parameter, each at its alignment (`wooly.align` where the PTX gives one,
/// else its size; 1 for vectors). The one rule every lowering and the
/// server's module inspection use.
void kernelParamLayout(FuncOp kernel, std::vector<uint64_t> &offsets,
                       std::vector<uint64_t> &sizes);

/// Why the threads of `fn` could not run region by region - the function
/// cut at each barrier and warp collective, each thread resumed at the cut
/// it stopped at, as CPU compilers of CUDA do - rather than as one fiber
/// each; empty when they could. They could when every such cut is a plain
/// `bar.sync 0` of the whole block or a warp collective other than the
/// matrix ones, in the function's body. Cuts may lie in loops and in
/// divergent code: the region executor runs the threads under the fiber
/// scheduler's own rules (each thread up to its next cut, in thread order;
/// then the collectives and the barrier that can complete), so threads at
/// different cuts behave as fibers would. A call to a function for which
/// `synchronises` holds, an indirect call or `nanosleep` each stand in the
/// way.
std::string
regionSplitBlocker(FuncOp fn,
                   llvm::function_ref<bool(llvm::StringRef)> synchronises);

/// Analyzes every kernel of `module`, in order.
std::vector<KernelSummary> analyzeKernels(ModuleOp module);

/// Blocks of `threadsPerBlock` threads that fit on one SM with
/// `registersPerSM` registers, `sharedPerSM` bytes of shared memory and at
/// most `maxThreadsPerSM` threads and `maxBlocksPerSM` blocks (the defaults
/// are an sm_90 SM's).
unsigned estimateBlocksPerSM(const KernelSummary &kernel,
                             unsigned threadsPerBlock,
                             uint64_t dynamicSharedBytes = 0,
                             unsigned registersPerSM = 65536,
                             uint64_t sharedPerSM = 228 * 1024,
                             unsigned maxThreadsPerSM = 2048,
                             unsigned maxBlocksPerSM = 32);

} // namespace wooly
} // namespace mlir

#endif // WOOLY_DIALECT_WOOLY_ANALYSIS_KERNELANALYSIS_H
