//===- Passes.h - Wooly's sharing passes -----------------------*- C++ -*-===//
//
// Declarations and registration of the passes in Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_DIALECT_WOOLY_TRANSFORMS_PASSES_H
#define WOOLY_DIALECT_WOOLY_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace arith {
class ArithDialect;
} // namespace arith
namespace cf {
class ControlFlowDialect;
} // namespace cf

namespace wooly {

#define GEN_PASS_DECL
#include "Wooly/Dialect/Wooly/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Wooly/Dialect/Wooly/Transforms/Passes.h.inc"

/// The argument attribute naming a launch parameter's role.
inline constexpr llvm::StringLiteral kLaunchParamAttr = "wooly.launch_param";

} // namespace wooly
} // namespace mlir

#endif // WOOLY_DIALECT_WOOLY_TRANSFORMS_PASSES_H
