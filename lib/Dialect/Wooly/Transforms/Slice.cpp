//===- Slice.cpp - The wooly-slice pass (being written) ---*- C++ -*-===//
//
// See Passes.td for what the pass does.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Dialect/Wooly/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"

namespace mlir::wooly {
#define GEN_PASS_DEF_WOOLYSLICE
#include "Wooly/Dialect/Wooly/Transforms/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;

namespace {
struct WoolySlicePass : wooly::impl::WoolySliceBase<WoolySlicePass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().emitError("wooly-slice is not supported yet");
    signalPassFailure();
  }
};
} // namespace
