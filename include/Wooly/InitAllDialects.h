//===- InitAllDialects.h - Register Wooly's dialects -------*- C++ -*-===//
//
// Registration of every dialect Wooly tools may see in their input.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_INITALLDIALECTS_H
#define WOOLY_INITALLDIALECTS_H

namespace mlir {
class DialectRegistry;
namespace wooly {

/// Adds the Wooly dialect, the upstream dialects Wooly IR uses (arith, math,
/// cf, func, vector) and those its lowerings produce (LLVM, NVVM, ROCDL) to
/// `registry`, so that every tool reads back what another one printed.
void registerAllDialects(DialectRegistry &registry);

} // namespace wooly
} // namespace mlir

#endif // WOOLY_INITALLDIALECTS_H
