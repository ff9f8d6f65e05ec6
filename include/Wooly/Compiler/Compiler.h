//===- Compiler.h - One compile API for every Wooly target -----*- C++ -*-===//
//
// `compile(input, target, options)` turns PTX text or a Wooly module into a
// binary for one target plus the metadata a runtime needs to launch its
// kernels; `cacheKey(...)` names the result so that it is compiled once.
// Targets: `host` (an ELF object for the CPU backend's JIT), `sm_XX` (PTX
// text through LLVM's NVPTX backend) and `gfx90a`/`gfx942` (an HSA code
// object through LLVM's AMDGPU backend, linked by ld.lld; ROCm's device
// libraries only for kernels that call them). The target-specific steps live
// behind an internal interface (lib/Compiler/TargetCodegen.h), so this
// header includes no LLVM target or dialect header.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_COMPILER_COMPILER_H
#define WOOLY_COMPILER_COMPILER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
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

/// What the caller may choose about a compilation.
struct CompileOptions {
  /// LLVM optimisation level (0-3).
  unsigned optLevel = 2;
  /// Check global/const/generic accesses against live allocations.
  bool boundsChecks = true;
  /// Wooly passes to run on the imported module before lowering, as an MLIR
  /// pipeline of module passes, e.g. "wooly-constrain" or
  /// "wooly-slice,wooly-isolate" (empty: none).
  std::string passes;
  /// AMDGPU only: the directory of ROCm's device-library bitcode (ocml.bc,
  /// ockl.bc, oclc_*.bc; e.g. /opt/rocm/amdgcn/bitcode). Empty: none, which
  /// is enough for kernels that call no `__ocml_*`/`__ockl_*` function;
  /// those that do are rejected with an error that names the functions.
  std::string rocmDeviceLibs;
  /// The kernels to compile (by PTX name); none given: all of them; an
  /// empty list: none (only the module variables). The others are dropped
  /// right after import, so a server compiles only the kernels a program
  /// launches. Device functions and module variables are kept.
  std::optional<std::vector<std::string>> kernels;
  /// AMDGPU only: the ld.lld executable that links code objects. Empty:
  /// `ld.lld-<LLVM major>` or `ld.lld` on PATH, else LLVM's bin directory.
  std::string lldPath;
};

/// The input of a compilation: PTX text or Wooly IR (MLIR text).
struct CompileInput {
  enum class Kind { PTX, MLIR };
  Kind kind = Kind::PTX;
  std::string text;
  /// Name used in diagnostics (a file name).
  std::string name = "<input>";
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
  /// then run as fibers on the CPU backend).
  bool needsFibers = false;
  /// `.maxntid`/`.reqntid` (0 where absent).
  std::array<uint32_t, 3> maxntid{}, reqntid{};
  /// Analyses (include/Wooly/Dialect/Wooly/Analysis/KernelAnalysis.h): for
  /// each parameter, whether it is a pointer the kernel only reads through
  /// (its buffer may be deduplicated across tenants).
  std::vector<bool> readOnlyParams;
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

/// What a module offers before anything is compiled: each kernel's name,
/// parameter layout (`paramOffsets`, `paramSizes`, `paramBufferSize`) and
/// `.maxntid`/`.reqntid`, and each `.global`/`.const` variable the module
/// defines (`name`, `size`; `symbol` is empty). The other KernelInfo fields
/// are left empty.
struct ModuleLayout {
  std::vector<KernelInfo> kernels;
  std::vector<GlobalInfo> globals;

  /// Returns the kernel named `name`, or null.
  const KernelInfo *findKernel(llvm::StringRef name) const;
};

/// Imports `input` and reads its layout (no lowering: a fraction of a
/// compile). Errors carry `file:line:col` locations.
llvm::Expected<ModuleLayout> inspect(const CompileInput &input);

/// The key of a compilation: a SHA-256 over the input, the target, the
/// options and the compiler's identity (Wooly and LLVM versions and the
/// build). Any change of these changes the key. For `gfxXXX` it also covers
/// the device-library directory and the size and modification time of each
/// library file the chip could link from it (ocml, ockl and the chip's oclc
/// control libraries; a stat each rather than a content hash, so that a
/// cache hit stays cheap), and the ld.lld option.
std::string cacheKey(const CompileInput &input, const Target &target,
                     const CompileOptions &options);

/// Compiles `input` for `target`. Errors carry `file:line:col` locations.
llvm::Expected<CompiledModule> compile(const CompileInput &input,
                                       const Target &target,
                                       const CompileOptions &options);

/// One kernel of a PTX module, a part of a fused kernel
/// (`mergeForCoalescing`).
struct CoalesceSource {
  /// The module's PTX text, and its name in diagnostics.
  std::string ptx, name;
  /// The kernel's PTX name.
  std::string kernel;
};

/// One module that holds the kernels of several modules.
struct MergedModule {
  /// Wooly IR (MLIR text): compile it as CompileInput::Kind::MLIR.
  std::string mlir;
  /// The name each source's kernel has in it, in the order of the sources
  /// (what `wooly-coalesce{kernels=...}` takes).
  std::vector<std::string> kernels;
};

/// The input of a kernel that fuses launches of kernels of different
/// modules (tenants): imports each distinct module once, keeps the kernels
/// named and what they use, renames every symbol a module defines apart
/// (`m<i>_<name>`, i numbering the distinct modules in order), keeps
/// external declarations (vprintf, ...) once, and merges them into one
/// module. Errors: import errors; a module with `.global` or `.const`
/// variables (each tenant's module has its own instance, which a merged
/// module cannot share); parts of different address sizes; an unknown
/// kernel.
llvm::Expected<MergedModule>
mergeForCoalescing(llvm::ArrayRef<CoalesceSource> sources);

/// A thread-safe cache of compiled modules, in memory and optionally in a
/// directory (one file per key). Threads asking for the same key at once
/// share one compilation: the first compiles, the others wait for it.
class CompileCache {
public:
  /// `directory` empty: memory only.
  explicit CompileCache(std::string directory = "");
  ~CompileCache();

  /// Returns the cached module for the input, compiling it on a miss;
  /// `hit` (optional) says whether it was found (or compiled by another
  /// thread that was already at it) rather than compiled by this call.
  llvm::Expected<std::shared_ptr<const CompiledModule>>
  getOrCompile(const CompileInput &input, const Target &target,
               const CompileOptions &options, bool *hit = nullptr);

  /// Hits and misses so far (a wait for another thread's compilation
  /// counts as a hit).
  uint64_t hits() const { return numHits; }
  uint64_t misses() const { return numMisses; }

private:
  struct Pending;
  std::string directory;
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const CompiledModule>> entries;
  /// Compilations in progress, by key.
  std::map<std::string, std::shared_ptr<Pending>> pending;
  std::atomic<uint64_t> numHits{0}, numMisses{0};
};

} // namespace wooly

#endif // WOOLY_COMPILER_COMPILER_H
