//===- CompiledModule.h - What a runtime needs of a compilation -*- C++ -*-===//
//
// The result of `compile()` (Wooly/Compiler/Compiler.h) as the runtimes see
// it: the target, the binary, each kernel's launch metadata (KernelInfo) and
// the module variables, with a byte form for a cache or the wire. Defined in
// the small WoolyCompiledModule library (lib/Compiler/CompiledModule.cpp),
// which needs neither MLIR nor the compiler, so that a runtime can load and
// launch compiled modules without linking the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_COMPILER_COMPILEDMODULE_H
#define WOOLY_COMPILER_COMPILEDMODULE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace wooly {

/// A compilation target.
struct Target {
  enum class Kind { Host, NVPTX, AMDGCN };
  Kind kind = Kind::Host;
  /// `sm_90`, `gfx942`; the host CPU's name for `host`.
  std::string chip;

  /// Parses `host`, `sm_XX` or `gfxXXX` (compile() then checks the chip:
  /// the AMD ones it knows are gfx90a and gfx942).
  static llvm::Expected<Target> parse(llvm::StringRef text);
  /// The spelling `parse` accepts.
  std::string str() const;
};

/// What a runtime needs to know to launch one kernel.
struct KernelInfo {
  /// The PTX name of the kernel.
  std::string name;
  /// The symbol of its entry point in the binary.
  std::string symbol;
  /// For kernels that never synchronise, the symbol of a function that runs
  /// the block's threads from a linear index on (`__wooly_block_<name>`);
  /// empty otherwise.
  std::string blockSymbol;
  /// Offset and size of each parameter in the parameter buffer.
  std::vector<uint64_t> paramOffsets, paramSizes;
  /// Size of the whole parameter buffer.
  uint64_t paramBufferSize = 0;
  /// For each parameter, its launch role ("" for the user's parameters;
  /// e.g. "virtual_grid_x" for one a pass appended, see
  /// include/Wooly/Dialect/Wooly/Transforms/Passes.td).
  std::vector<std::string> paramRoles;
  /// True when the kernel reaches a barrier or warp collective (its threads
  /// then run region by region on the CPU backend where `regionSymbol` is
  /// set, else as fibers).
  bool needsFibers = false;
  /// For a kernel that needs fibers, why its threads could not run region
  /// by region instead (cut at its barriers and warp collectives into loops
  /// over the block's threads; mlir::wooly::regionSplitBlocker, or the
  /// lowering's own "local memory live across a barrier or warp
  /// collective"), e.g. "a warp matrix operation". Empty when they can.
  std::string fiberReason;
  /// For a kernel that could be split, the symbol of its region function
  /// (`__wooly_regions_<name>`, ABI.h) and the bytes of each thread's frame
  /// for it; empty where there is none (the kernel then runs as fibers).
  std::string regionSymbol;
  uint64_t regionFrameBytes = 0;
  /// Where the kernel has one, the symbol of its warp function
  /// (`__wooly_warp_<name>`, ABI.h), which runs a whole warp's lanes
  /// through the regions at once.
  std::string warpSymbol;
  /// `.maxntid`/`.reqntid` (0 where absent).
  std::array<uint32_t, 3> maxntid{}, reqntid{};
  /// Analyses (include/Wooly/Dialect/Wooly/Analysis/KernelAnalysis.h): for
  /// each parameter, whether it is a pointer the kernel only reads through
  /// (its buffer may be deduplicated across tenants).
  std::vector<bool> readOnlyParams;
  /// Whether it may write device memory that no parameter names (through
  /// a loaded address, a call, ...): buffers read-only for every parameter
  /// may still be written by it.
  bool writesUnknownMemory = true;
  /// Static shared memory of the kernel (what the backend reports where it
  /// reports it, AMDGPU's group segment; otherwise what the kernel itself
  /// names), an estimate of its registers per thread from the Wooly IR, and
  /// a static cost hint.
  uint64_t staticSharedBytes = 0;
  unsigned registerEstimate = 0;
  uint64_t costHint = 0;
  /// What the backend reports about the compiled kernel, 0 where the backend
  /// reports none (host; sm_XX, whose registers only ptxas allocates):
  /// vector registers per thread (AMDGPU `.vgpr_count`), scalar registers
  /// per wave (`.sgpr_count`), registers spilled to memory (vector and
  /// scalar spills together) and private (scratch) bytes per thread
  /// (`.private_segment_fixed_size`).
  unsigned registers = 0;
  unsigned scalarRegisters = 0;
  unsigned spills = 0;
  uint64_t privateBytes = 0;
};

/// A module-scope `.global`/`.const` variable of the binary.
struct GlobalInfo {
  std::string name, symbol;
  uint64_t size = 0;
};

/// The result of a compilation.
struct CompiledModule {
  Target target;
  /// The binary: an ELF relocatable object for `host`, PTX text for
  /// `sm_XX`, an HSA code object (ELF shared object) for `gfxXXX`.
  std::string binary;
  std::vector<KernelInfo> kernels;
  std::vector<GlobalInfo> globals;
  /// Bytes of static shared memory (the dynamic part starts here).
  uint64_t staticSharedSize = 0;
  /// Number of memory-access sites (the size of the per-worker cache).
  uint64_t numAccessSites = 0;
  /// The key this module was compiled under.
  std::string key;

  /// Returns the kernel named `name`, or null.
  const KernelInfo *findKernel(llvm::StringRef name) const;
  /// A self-contained byte string (for an on-disk cache or the wire).
  std::string serialize() const;
  static llvm::Expected<CompiledModule> deserialize(llvm::StringRef bytes);
};

} // namespace wooly

#endif // WOOLY_COMPILER_COMPILEDMODULE_H
