//===- WoolyDialect.h - Wooly dialect declaration ----------*- C++ -*-===//
//
// Declares the Wooly dialect class.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_DIALECT_WOOLY_IR_WOOLYDIALECT_H
#define WOOLY_DIALECT_WOOLY_IR_WOOLYDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/IR/Dialect.h"

#include "Wooly/Dialect/Wooly/IR/WoolyOpsDialect.h.inc"

#endif // WOOLY_DIALECT_WOOLY_IR_WOOLYDIALECT_H
