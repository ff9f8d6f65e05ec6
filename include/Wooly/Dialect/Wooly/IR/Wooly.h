//===- Wooly.h - Wooly dialect ops and enums ---------------*- C++ -*-===//
//
// The one header to include for the Wooly dialect: the dialect, its enums and
// its operations.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_DIALECT_WOOLY_IR_WOOLY_H
#define WOOLY_DIALECT_WOOLY_IR_WOOLY_H

#include "Wooly/Dialect/Wooly/IR/WoolyDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Wooly/Dialect/Wooly/IR/WoolyEnums.h.inc"

#define GET_OP_CLASSES
#include "Wooly/Dialect/Wooly/IR/WoolyOps.h.inc"

namespace mlir::wooly {
/// Returns the MLIR type that holds a value of PTX type `t`: `i1` for
/// `.pred`, signless integers for the bit/integer types (and the fp8 and tf32
/// encodings), `f16`/`bf16`/`f32`/`f64`, `vector<2xf16>`/`vector<2xbf16>`
/// for the packed pairs. Signedness is not part of the result.
Type getStorageType(MLIRContext *ctx, ScalarType t);
/// The number of coordinates of a texture or surface of geometry `g`,
/// without the layer (a cube's direction has three).
unsigned texCoordCount(TexGeometry g);
/// Whether geometry `g` is layered (takes a layer index).
bool isLayeredGeometry(TexGeometry g);
/// Geometry `g` as PTX spells it (`2d`, `a2d`, `cube`).
StringRef ptxGeometry(TexGeometry g);
/// Bits of a surface element of type `t` (b8 ... b64, u32, s64, ...).
unsigned surfaceElementBits(ScalarType t);
} // namespace mlir::wooly

#endif // WOOLY_DIALECT_WOOLY_IR_WOOLY_H
