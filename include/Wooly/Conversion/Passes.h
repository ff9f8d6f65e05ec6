//===- Passes.h - Wooly conversion passes ------------------*- C++ -*-===//
//
// Declarations and registration of the passes that lower Wooly IR.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_CONVERSION_PASSES_H
#define WOOLY_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
namespace arith {
class ArithDialect;
} // namespace arith
namespace math {
class MathDialect;
} // namespace math
namespace vector {
class VectorDialect;
} // namespace vector
namespace func {
class FuncDialect;
} // namespace func
namespace LLVM {
class LLVMDialect;
} // namespace LLVM
namespace NVVM {
class NVVMDialect;
} // namespace NVVM
namespace ROCDL {
class ROCDLDialect;
} // namespace ROCDL

namespace wooly {

#define GEN_PASS_DECL
#include "Wooly/Conversion/Passes.h.inc"

/// Adds the patterns that expand Wooly's pure computation ops into
/// arith/math/vector (and `func.call`s of `__wooly_*` runtime helpers where
/// no upstream op has the semantics).
void populateWoolyExpandArithPatterns(RewritePatternSet &patterns);

/// The discardable attribute with which `wooly-expand-arith` marks the
/// correctly rounded op it emits for a PTX approximation that has no op of
/// its own (`div.approx`, `div.full`, `rcp.approx`, `sqrt.approx`, with
/// `.ftz` appended when flushing): a GPU lowering may emit the GPU's own
/// instruction instead, to get its exact bits.
inline constexpr llvm::StringLiteral kApproxAttr = "wooly.approx";

#define GEN_PASS_REGISTRATION
#include "Wooly/Conversion/Passes.h.inc"

} // namespace wooly
} // namespace mlir

#endif // WOOLY_CONVERSION_PASSES_H
