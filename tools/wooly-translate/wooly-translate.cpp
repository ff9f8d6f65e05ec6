//===- wooly-translate.cpp - PTX to Wooly IR translator -----*- C++ -*-===//
//
// Translates between PTX and Wooly IR: `--import-ptx in.ptx` prints the
// raised Wooly IR.
//
//===----------------------------------------------------------------------===//

#include "Wooly/InitAllPasses.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::wooly::hideBackendOptions();
  mlir::wooly::registerAllTranslations();
  return mlir::failed(mlir::mlirTranslateMain(
      argc, argv,
      "wooly-translate: translate PTX to Wooly IR.\n\n"
      "  wooly-translate --import-ptx kernel.ptx [-o out.mlir]\n\n"
      "Errors are reported as file:line:col diagnostics; the exit status is\n"
      "non-zero when the input cannot be imported.\n"));
}
