//===- Compare.h - Integer comparisons --------------------------*- C++ -*-===//
//
// What the analyses need of `arith.cmpi` predicates that arith lacks.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_DIALECT_WOOLY_ANALYSIS_COMPARE_H
#define WOOLY_DIALECT_WOOLY_ANALYSIS_COMPARE_H

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace mlir::wooly {

/// The predicate of `b ? a` for `a ? b` (`x < y` is `y > x`).
inline arith::CmpIPredicate swappedPredicate(arith::CmpIPredicate p) {
  using P = arith::CmpIPredicate;
  switch (p) {
  case P::ult:
    return P::ugt;
  case P::ugt:
    return P::ult;
  case P::ule:
    return P::uge;
  case P::uge:
    return P::ule;
  case P::slt:
    return P::sgt;
  case P::sgt:
    return P::slt;
  case P::sle:
    return P::sge;
  case P::sge:
    return P::sle;
  default:
    return p;
  }
}

} // namespace mlir::wooly

#endif // WOOLY_DIALECT_WOOLY_ANALYSIS_COMPARE_H
