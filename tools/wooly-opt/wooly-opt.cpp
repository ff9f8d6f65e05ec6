//===- wooly-opt.cpp - Wooly IR optimizer driver -------------*- C++ -*-===//
//
// Parses, verifies, transforms and prints Wooly IR: MLIR's standard `-opt`
// driver with Wooly's dialects and passes registered.
//
//===----------------------------------------------------------------------===//

#include "Wooly/InitAllDialects.h"
#include "Wooly/InitAllPasses.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::wooly::hideBackendOptions();
  mlir::wooly::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::wooly::registerAllDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "wooly-opt: verify, transform and print Wooly IR.\n\n"
      "Reads Wooly IR (as printed by `wooly-translate --import-ptx`), runs "
      "the\n"
      "passes named on the command line and prints the result. Useful flags:\n"
      "  --verify-diagnostics  check `expected-error` annotations\n"
      "  --verify-roundtrip    check that the printed IR parses back\n"
      "  --split-input-file    treat `// -----` separated chunks separately\n",
      registry));
}
