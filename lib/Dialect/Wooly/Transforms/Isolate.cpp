//===- Isolate.cpp - The wooly-isolate pass (being written) ---*- C++ -*-===//
//
// See Passes.td for what the pass does.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Dialect/Wooly/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"

namespace mlir::wooly {
#define GEN_PASS_DEF_WOOLYISOLATE
#include "Wooly/Dialect/Wooly/Transforms/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;

namespace {
struct WoolyIsolatePass : wooly::impl::WoolyIsolateBase<WoolyIsolatePass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().emitError("wooly-isolate is not supported yet");
    signalPassFailure();
  }
};
} // namespace
