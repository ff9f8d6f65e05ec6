//===- TargetCodegen.h - The target-specific steps of compile() -*- C++ -*-===//
//
// Internal to lib/Compiler. `compile()` (Compiler.cpp) runs the steps every
// target shares: import, the caller's Wooly passes, the kernel analyses,
// `wooly-expand-arith`, reading the metadata the lowering left on the module,
// translation to LLVM IR, LLVM's optimisation pipeline and code generation
// (`compileLLVMModule`). A `TargetCodegen` supplies only what differs between
// targets:
//
//   host    convert-wooly-to-llvm; native TargetMachine; ELF object
//   sm_XX   convert-wooly-to-nvvm; NVPTX TargetMachine; PTX text
//   gfxXXX  convert-wooly-to-rocdl; AMDGPU TargetMachine (code object v5);
//           ROCm device libraries linked before optimisation; the object
//           linked by ld.lld into an HSA code object whose AMDGPU metadata
//           note fills the registers/spills of each kernel (AMDGPU.cpp)
//
// The AMDGPU helpers are declared here too so that unit tests can drive them
// on hand-written LLVM IR.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_COMPILER_TARGETCODEGEN_H
#define WOOLY_LIB_COMPILER_TARGETCODEGEN_H

#include "Wooly/Compiler/Compiler.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class Module;
class PassBuilder;
class TargetMachine;
} // namespace llvm

namespace mlir {
class DialectRegistry;
class OpPassManager;
} // namespace mlir

namespace wooly::detail {

/// One target's code generation: what differs between the LLVM backends
/// `compile()` drives.
class TargetCodegen {
public:
  virtual ~TargetCodegen();

  /// Registers the translations to LLVM IR of the dialects the lowering
  /// produces (besides builtin and LLVM).
  virtual void registerTranslations(mlir::DialectRegistry &registry) const {}
  /// Adds the lowering of Wooly IR (after `wooly-expand-arith`) to the LLVM
  /// dialect to `pm`.
  virtual llvm::Error addLowering(mlir::OpPassManager &pm) const = 0;
  /// True when module-scope variables keep their PTX names (GPU targets);
  /// the host lowering prefixes them with `__wooly_g_`.
  virtual bool keepsVariableNames() const { return true; }
  /// Creates the TargetMachine the module is compiled with.
  virtual llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
  createTargetMachine() const = 0;
  /// Adjusts the translated module before optimisation (module flags,
  /// libraries to link). Its triple and data layout are already set.
  virtual llvm::Error prepareModule(llvm::Module &module) const {
    return llvm::Error::success();
  }
  /// Adds the target's own passes to LLVM's optimisation pipeline.
  virtual void registerPasses(llvm::PassBuilder &pb) const {}
  /// What the code generator writes.
  virtual llvm::CodeGenFileType fileType() const = 0;
  /// Turns the code generator's output into `out.binary` and adds what the
  /// backend reports about each kernel to `out.kernels`.
  virtual llvm::Error finish(std::string code, CompiledModule &out) const {
    out.binary = std::move(code);
    return llvm::Error::success();
  }
  /// True when the code generator's outputs for the parts of a module
  /// (splitModuleByRoots) can be joined into one (`joinParts`): its kernels
  /// are then compiled in parallel.
  virtual bool joinsParts() const { return false; }
  /// Joins the outputs of the parts of a module, in part order, into the
  /// output of the whole module.
  virtual llvm::Expected<std::string>
  joinParts(llvm::ArrayRef<std::string> parts) const {
    return llvm::createStringError("this target does not join parts");
  }

protected:
  explicit TargetCodegen(const CompileOptions &options) : options(options) {}
  const CompileOptions &options;
};

/// The code generator for `target`; an error for a chip it does not know.
/// It refers to `options`, which must outlive it.
llvm::Expected<std::unique_ptr<TargetCodegen>>
createTargetCodegen(const Target &target, const CompileOptions &options);

/// The AMDGPU code generator for `target` (gfxXXX).
llvm::Expected<std::unique_ptr<TargetCodegen>>
createAMDGPUCodegen(const Target &target, const CompileOptions &options);

/// LLVM's code generation level for an optimisation level 0-3.
llvm::CodeGenOptLevel codeGenLevel(unsigned optLevel);

/// Creates the TargetMachine for `triple`/`cpu`/`features`, after checking
/// that the backend knows `cpu` (creating the machine would only warn).
/// `what` names the target in errors ("NVIDIA", "AMD").
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(llvm::StringRef triple, llvm::StringRef cpu,
                    llvm::StringRef features, llvm::StringRef what,
                    unsigned optLevel);

/// Compiles the translated `module` with `targetCodegen` and its TargetMachine
/// `tm`: sets the triple and data layout, prepares, optimises at
/// `optLevel`, generates code and finishes `out` (binary and
/// backend-reported kernel metadata). When the target joins parts and the
/// module has several kernels, its parts (splitModuleByRoots) are optimised
/// and code-generated on up to `threads` threads (1: on this one) and
/// joined; the output does not depend on `threads`.
llvm::Error compileLLVMModule(const TargetCodegen &targetCodegen,
                              llvm::TargetMachine &tm, llvm::Module &module,
                              unsigned optLevel, CompiledModule &out,
                              unsigned threads = 1);

/// Runs LLVM's default optimisation pipeline at `optLevel` (nothing at 0)
/// with the target's own passes on `m`.
void optimizeModule(llvm::Module &m, llvm::TargetMachine &tm, unsigned optLevel,
                    const TargetCodegen &targetCodegen);

/// Generates `fileType` code for `m` with `tm`.
llvm::Expected<std::string> emitCode(llvm::TargetMachine &tm, llvm::Module &m,
                                     llvm::CodeGenFileType fileType);

//===----------------------------------------------------------------------===//
// A module's kernels in parallel (SplitCodegen.cpp)
//===----------------------------------------------------------------------===//

/// One part of a split module, as bitcode (to be read into a context of its
/// own).
struct ModulePart {
  std::string bitcode;
  /// False for the part that holds only module variables: it is not
  /// optimised (the optimiser would drop the variables no function there
  /// uses).
  bool optimize = true;
};

/// Splits `module` into parts that compile independently: its roots (each
/// kernel and each non-local function no kernel reaches), in module order,
/// in at most `maxParts` groups of consecutive roots of about the same
/// number of instructions, each part with the functions its roots reach;
/// then one part with the module variables that are not internal to one
/// part. The parts depend on the module alone. std::nullopt when there are
/// fewer than two kernels or the module has what a split does not handle
/// (module inline asm, aliases, `llvm.*` variables, functions in variable
/// initializers). Private symbols of `module` become internal.
std::optional<std::vector<ModulePart>>
splitModuleByRoots(llvm::Module &module, unsigned maxParts = 8);

/// Reads part number `index` into a context of its own, optimises it at
/// `optLevel` (when `part.optimize`), renames the local symbols the
/// optimiser created `<name>$p<index>`, and generates code with `tm`.
llvm::Expected<std::string>
compileModulePart(const TargetCodegen &targetCodegen, llvm::TargetMachine &tm,
                  const ModulePart &part, unsigned index, unsigned optLevel);

/// Compiles `parts` on up to `threads` threads, each part with a
/// TargetMachine of its own; the outputs in part order.
llvm::Expected<std::vector<std::string>>
compileModuleParts(const TargetCodegen &targetCodegen,
                   llvm::ArrayRef<ModulePart> parts, unsigned optLevel,
                   unsigned threads);

/// The threads a compilation uses by default: the hardware's, at most 8.
unsigned defaultCompileThreads();

/// Joins the PTX of the parts of a module into one PTX module: the header
/// once, each function declaration once, each variable defined once (the
/// parts' `.extern` declarations of it dropped), the variables before the
/// functions, the functions in part order. An error when the parts disagree
/// (headers, two definitions of a symbol) or a part's text is not the shape
/// the NVPTX backend writes.
llvm::Expected<std::string> joinPTXParts(llvm::ArrayRef<std::string> parts);

//===----------------------------------------------------------------------===//
// AMDGPU (AMDGPU.cpp)
//===----------------------------------------------------------------------===//

/// The ROCm device-library files `chip` may link from a device-library
/// directory: ocml.bc, ockl.bc, then the oclc control libraries.
std::vector<std::string> rocmDeviceLibFiles(llvm::StringRef chip);

/// Links the ROCm device libraries `module` needs (it calls `__ocml_*` or
/// `__ockl_*` functions it does not define) from `dir`, with the oclc control
/// libraries for `chip`, and internalizes what they bring. Without such
/// declarations it does nothing; with them and no `dir`, or a missing file, it
/// is an error that says what is needed.
llvm::Error linkROCmDeviceLibs(llvm::Module &module, llvm::StringRef chip,
                               llvm::StringRef dir);

/// The ld.lld to run: `explicitPath` when given, else `ld.lld-<LLVM major>`
/// or `ld.lld` on PATH, else LLVM's own bin directory; an error saying how to
/// install it when there is none.
llvm::Expected<std::string> findLld(llvm::StringRef explicitPath);

/// Links the relocatable AMDGPU `object` into an HSA code object
/// (`ld.lld -shared`) with the linker at `lld`, through temporary files.
llvm::Expected<std::string> linkCodeObject(llvm::StringRef object,
                                           llvm::StringRef lld);

/// Reads the AMDGPU metadata note of `codeObject` and fills, for each kernel
/// of `kernels` it describes (matched by symbol), the registers, spills,
/// private and shared segment sizes. An error when the note is missing or
/// malformed.
llvm::Error readAMDGPUKernelMetadata(llvm::StringRef codeObject,
                                     std::vector<KernelInfo> &kernels);

} // namespace wooly::detail

#endif // WOOLY_LIB_COMPILER_TARGETCODEGEN_H
