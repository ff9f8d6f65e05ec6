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
// header includes no LLVM target or dialect header. What a compilation
// produces (Target, KernelInfo, CompiledModule) is declared in
// CompiledModule.h, which the runtimes use without linking the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_COMPILER_COMPILER_H
#define WOOLY_COMPILER_COMPILER_H

#include "Wooly/Compiler/CompiledModule.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace wooly {

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
  /// NVPTX: the threads that optimise and code-generate the kernels of a
  /// module with several kernels, each kernel (with the device functions it
  /// reaches) a part of its own, joined into one PTX module (0: the
  /// hardware's, at most 8; 1: the parts one after the other on the calling
  /// thread). The output is the same bytes whatever the number, so it is
  /// not part of the cache key. A module with one kernel is compiled whole;
  /// the host and AMDGPU targets compile every module whole.
  unsigned threads = 0;
};

/// The input of a compilation: PTX text or Wooly IR (MLIR text).
struct CompileInput {
  enum class Kind { PTX, MLIR };
  Kind kind = Kind::PTX;
  std::string text;
  /// Name used in diagnostics (a file name).
  std::string name = "<input>";
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
  /// A key computed before, and what it covers (to confirm a match).
  struct KeyMemo {
    std::string fields, text, key;
  };
  /// `cacheKey(input, target, options)`, without hashing the whole input
  /// again when it was seen before.
  std::string lookupKey(const CompileInput &input, const Target &target,
                        const CompileOptions &options);
  std::string directory;
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const CompiledModule>> entries;
  /// Compilations in progress, by key.
  std::map<std::string, std::shared_ptr<Pending>> pending;
  /// The keys of the inputs seen, by a fast hash of what they cover.
  std::unordered_multimap<uint64_t, KeyMemo> keyMemos;
  std::atomic<uint64_t> numHits{0}, numMisses{0};
};

} // namespace wooly

#endif // WOOLY_COMPILER_COMPILER_H
