//===- InitAll.cpp - Dialect, pass and translation registration -*- C++ -*-===//
//
// The one place where tools get their dialects, passes and translations.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Conversion/Passes.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Dialect/Wooly/Transforms/Passes.h"
#include "Wooly/InitAllDialects.h"
#include "Wooly/InitAllPasses.h"
#include "Wooly/Target/PTX/PTXImporter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"

void mlir::wooly::registerAllDialects(DialectRegistry &registry) {
  registry
      .insert<WoolyDialect, arith::ArithDialect, math::MathDialect,
              cf::ControlFlowDialect, func::FuncDialect, vector::VectorDialect,
              LLVM::LLVMDialect, NVVM::NVVMDialect, ROCDL::ROCDLDialect>();
}

void mlir::wooly::registerAllPasses() {
  // Wooly's own passes (constrain, slice, coalesce, isolate) and conversions
  // register here as they land. Generic cleanups are useful on imported IR.
  registerWoolyTransformsPasses();
  registerWoolyConversionPasses();
  registerCanonicalizerPass();
  registerCSEPass();
  registerSymbolDCEPass();
  registerInlinerPass();
  registerSCCPPass();
}

void mlir::wooly::registerAllTranslations() {
  static bool once = [] {
    registerPTXImportTranslation();
    return true;
  }();
  (void)once;
}

void mlir::wooly::hideBackendOptions() {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::StringRef name = entry.first;
    if (name.starts_with("mlir-") || name == "color" || name == "help" ||
        name == "help-list" || name == "version")
      continue;
    entry.second->setHiddenFlag(llvm::cl::Hidden);
  }
}
