//===- wooly-fuzz-ptx.cpp - Fuzzes the PTX importer -------------*- C++ -*-===//
//
// The input is PTX text, imported (include/Wooly/Target/PTX/PTXImporter.h)
// in one MLIRContext kept for the whole run. The importer verifies what it
// builds, so a module that comes back is valid Wooly IR; an input it refuses
// gets located errors, which are dropped here. A crash, a sanitizer report
// or an assertion is a bug.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Target/PTX/PTXImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
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
  return 0;
}
