//===- PTXImporter.h - Raise PTX text to Wooly IR ------------*- C++ -*-===//
//
// The PTX importer: parses PTX ISA text (nvcc 12/13, LLVM NVPTX) and raises it
// to a module of Wooly IR in SSA form. Errors are reported as located
// diagnostics (`file:line:col`) through the context's diagnostic engine.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_TARGET_PTX_PTXIMPORTER_H
#define WOOLY_TARGET_PTX_PTXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir {
class MLIRContext;
namespace wooly {

/// How the importer checks what it builds.
struct PTXImportOptions {
  /// Also run MLIR's verifier over every imported function. The importer
  /// builds valid IR by construction: each instruction's handler checks its
  /// operands' types and counts and reports a located error before it
  /// builds anything, the SSA builder makes every definition dominate its
  /// uses, and what depends on the whole module (symbol uses: calls, address
  /// of module variables) is verified in every case. The full verifier is
  /// for the checks of that claim: the fuzzers and the importer's
  /// randomized tests turn a module that fails it into a failure.
  bool verify = false;
};

/// Imports the main buffer of `sourceMgr` as PTX. Returns null after emitting
/// a located error. The Wooly, arith, math and cf dialects are loaded into
/// `context` as needed.
OwningOpRef<ModuleOp> importPTX(llvm::SourceMgr &sourceMgr,
                                MLIRContext *context,
                                const PTXImportOptions &options = {});

/// Imports `ptx` (named `bufferName` in diagnostics).
OwningOpRef<ModuleOp> importPTX(llvm::StringRef ptx, llvm::StringRef bufferName,
                                MLIRContext *context,
                                const PTXImportOptions &options = {});

/// Registers the `--import-ptx` translation with mlir-translate-style tools.
void registerPTXImportTranslation();

} // namespace wooly
} // namespace mlir

#endif // WOOLY_TARGET_PTX_PTXIMPORTER_H
