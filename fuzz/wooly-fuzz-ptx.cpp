//===- wooly-fuzz-ptx.cpp - Fuzzes the PTX importer -------------*- C++ -*-===//
//
// The input is PTX text, imported (include/Wooly/Target/PTX/PTXImporter.h)
// in one MLIRContext kept for the whole run, as the compiler imports it:
// without MLIR's verifier (PTXImportOptions::verify), since the importer
// builds valid IR by construction. That claim is checked here: a module that
// comes back and fails the verifier aborts the run. An input the importer
// refuses gets located errors, which are dropped here. A crash, a sanitizer
// report, an assertion or an invalid module is a bug.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Target/PTX/PTXImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace {
/// One context for the whole run (the importer loads its dialects on first
/// use), on this thread only; its diagnostics go nowhere.
struct Context {
  mlir::MLIRContext context{mlir::MLIRContext::Threading::DISABLED};
  mlir::ScopedDiagnosticHandler quiet{
      &context, [](mlir::Diagnostic &) { return mlir::success(); }};
};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static Context ctx;
  llvm::StringRef ptx(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::wooly::importPTX(ptx, "fuzz.ptx", &ctx.context);
  if (module && mlir::failed(mlir::verify(*module)))
    __builtin_trap(); // Imported, but not valid Wooly IR.
  return 0;
}
