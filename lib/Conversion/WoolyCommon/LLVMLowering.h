//===- LLVMLowering.h - Shared by the LLVM-based lowerings -----*- C++ -*-===//
//
// Internal to lib/Conversion: what convert-wooly-to-llvm (host) and the
// GPU lowerings (GPULowering.h) have in common where the meaning is the
// same on every target. Kept out of include/ because it needs the LLVM
// dialect.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_CONVERSION_WOOLYCOMMON_LLVMLOWERING_H
#define WOOLY_LIB_CONVERSION_WOOLYCOMMON_LLVMLOWERING_H

#include "Wooly/Dialect/Wooly/IR/Wooly.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

#include <optional>

namespace mlir::wooly::common {

/// Byte size of a value of type `t` in memory (an `i1` takes a byte).
uint64_t byteSize(Type t);

/// The LLVM atomic ordering of a PTX memory order (relaxed by default).
LLVM::AtomicOrdering ordering(std::optional<MemOrder> sem);

/// The `atomicrmw` operation of a PTX atomic op (`cas` is a `cmpxchg`; it
/// maps to `xchg` here only so that the switch is total).
LLVM::AtomicBinOp atomicBinOp(AtomicOp op);

/// The initializer of a global whose `init` is dense elements, padded with
/// zeros to `count` elements (`{1.0}` for `f32 a[4]`); null otherwise.
Attribute denseInitializer(GlobalOp g, uint64_t count);

/// Replaces `op` with the results of a lowered call: the call's result, or
/// the fields of the struct it returns when `op` has several results.
void replaceWithCallResults(ConversionPatternRewriter &rw, Operation *op,
                            LLVM::CallOp call);

} // namespace mlir::wooly::common

#endif // WOOLY_LIB_CONVERSION_WOOLYCOMMON_LLVMLOWERING_H
