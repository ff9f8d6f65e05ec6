//===- WoolyDialect.cpp - Wooly dialect registration -------*- C++ -*-===//
//
// Registers the Wooly dialect's operations.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Dialect/Wooly/IR/Wooly.h"

using namespace mlir;
using namespace mlir::wooly;

#include "Wooly/Dialect/Wooly/IR/WoolyOpsDialect.cpp.inc"

void WoolyDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Wooly/Dialect/Wooly/IR/WoolyOps.cpp.inc"
      >();
}
