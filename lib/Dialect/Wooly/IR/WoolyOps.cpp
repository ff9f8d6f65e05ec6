//===- WoolyOps.cpp - Wooly operations: verifiers and syntax -*- C++ -*-===//
//
// Verifiers, custom syntax and interface methods of the Wooly operations.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Dialect/Wooly/IR/Wooly.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::wooly;

#include "Wooly/Dialect/Wooly/IR/WoolyEnums.cpp.inc"

/// Returns the number of bits of `type` (integers, floats and vectors of
/// them), or 0 for types without a fixed bit size.
static uint64_t bitWidth(Type type) {
  if (type.isIntOrFloat())
    return type.getIntOrFloatBitWidth();
  if (auto vec = dyn_cast<VectorType>(type))
    if (vec.hasStaticShape() && vec.getElementType().isIntOrFloat())
      return static_cast<uint64_t>(vec.getNumElements()) *
             vec.getElementType().getIntOrFloatBitWidth();
  return 0;
}

//===----------------------------------------------------------------------===//
// FuncOp
//===----------------------------------------------------------------------===//

void FuncOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                   FunctionType type) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name), TypeAttr::get(type));
  state.addRegion();
}

ParseResult FuncOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildFuncType =
      [](Builder &builder, ArrayRef<Type> argTypes, ArrayRef<Type> results,
         function_interface_impl::VariadicFlag,
         std::string &) { return builder.getFunctionType(argTypes, results); };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      getFunctionTypeAttrName(result.name), buildFuncType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void FuncOp::print(OpAsmPrinter &p) {
  function_interface_impl::printFunctionOp(
      p, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
      getArgAttrsAttrName(), getResAttrsAttrName());
}

LogicalResult FuncOp::verify() {
  if (auto linkage = getLinkage(); linkage && !symbolizeLinkage(*linkage))
    return emitOpError("unknown linkage '") << *linkage << "'";
  if (getKernel() && !getResultTypes().empty())
    return emitOpError("a kernel cannot return values");
  for (auto [name, attr] :
       {std::pair<StringRef, DenseI32ArrayAttr>{"maxntid", getMaxntidAttr()},
        {"reqntid", getReqntidAttr()}}) {
    if (!attr)
      continue;
    if (attr.size() < 1 || attr.size() > 3)
      return emitOpError() << "'" << name << "' needs 1 to 3 dimensions";
    for (int32_t d : attr.asArrayRef())
      if (d <= 0)
        return emitOpError() << "'" << name << "' dimensions must be positive";
  }
  if (!isExternal()) {
    Block &entry = getBody().front();
    if (entry.getArgumentTypes() != getArgumentTypes())
      return emitOpError("entry block arguments do not match the signature");
  }
  return success();
}

LogicalResult ParamAddressOp::verify() {
  auto func = (*this)->getParentOfType<FuncOp>();
  if (!func || !func.getKernel())
    return emitOpError("is only valid inside a kernel");
  if (getIndexAttr().getInt() < 0 ||
      getIndexAttr().getInt() >=
          static_cast<int64_t>(func.getArgumentTypes().size()))
    return emitOpError("parameter index ")
           << getIndexAttr().getInt() << " is out of range";
  return success();
}

LogicalResult RetOp::verify() {
  auto func = (*this)->getParentOfType<FuncOp>();
  if (!llvm::equal(getOperandTypes(), func.getResultTypes()))
    return emitOpError("operand types do not match the results of '")
           << func.getSymName() << "'";
  return success();
}

//===----------------------------------------------------------------------===//
// GlobalOp and symbol users
//===----------------------------------------------------------------------===//

LogicalResult GlobalOp::verify() {
  int64_t align = getAlignAttr().getInt();
  if (align <= 0 || !llvm::isPowerOf2_64(align))
    return emitOpError("alignment must be a positive power of two");
  if (getCountAttr().getInt() < 0)
    return emitOpError("element count must not be negative");
  if (!bitWidth(getElemType()))
    return emitOpError("element type must be an integer or float type");
  switch (getSpace()) {
  case StateSpace::global:
  case StateSpace::shared:
  case StateSpace::constant:
  case StateSpace::local:
    break;
  default:
    return emitOpError("module-scope variables live in global, shared, const "
                       "or local space");
  }
  int64_t capacity = std::max<int64_t>(getCountAttr().getInt(), 1);
  if (auto init = getInitAttr()) {
    if (auto dense = dyn_cast<ElementsAttr>(init)) {
      auto shaped = dyn_cast<ShapedType>(dense.getType());
      if (!shaped || shaped.getNumElements() > capacity)
        return emitOpError("initializer has more elements than the variable");
    } else {
      auto array = cast<ArrayAttr>(init);
      if (static_cast<int64_t>(array.size()) > capacity)
        return emitOpError("initializer has more elements than the variable");
      for (Attribute a : array) {
        if (isa<FlatSymbolRefAttr>(a) && !getElemType().isInteger(64) &&
            !getElemType().isInteger(32))
          return emitOpError("address initializers need a 32- or 64-bit "
                             "integer element type");
        if (!isa<IntegerAttr, FloatAttr, FlatSymbolRefAttr>(a))
          return emitOpError("initializer elements must be numbers or "
                             "symbol references");
      }
    }
  }
  return success();
}

LogicalResult GlobalOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto array = dyn_cast_if_present<ArrayAttr>(getInitAttr());
  if (!array)
    return success();
  for (Attribute a : array) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(a);
    if (!ref)
      continue;
    Operation *sym = symbolTable.lookupNearestSymbolFrom(*this, ref);
    if (!sym || !isa<GlobalOp, FuncOp>(sym))
      return emitOpError("initializer names '")
             << ref.getValue()
             << "', which is not a wooly.global or wooly.func";
  }
  return success();
}

LogicalResult
AddressOfOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *sym = symbolTable.lookupNearestSymbolFrom(*this, getGlobalAttr());
  if (!sym || !isa<GlobalOp, FuncOp>(sym))
    return emitOpError("'")
           << getGlobal() << "' does not name a wooly.global or wooly.func";
  return success();
}

LogicalResult CallOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto fn = symbolTable.lookupNearestSymbolFrom<FuncOp>(*this, getCalleeAttr());
  if (!fn)
    return emitOpError("'") << getCallee() << "' does not name a wooly.func";
  if (fn.getKernel())
    return emitOpError("cannot call kernel '") << getCallee() << "'";
  FunctionType type = fn.getFunctionType();
  if (!llvm::equal(type.getInputs(), getOperandTypes()))
    return emitOpError("argument types do not match the signature of '")
           << getCallee() << "'";
  if (!llvm::equal(type.getResults(), getResultTypes()))
    return emitOpError("result types do not match the signature of '")
           << getCallee() << "'";
  return success();
}

//===----------------------------------------------------------------------===//
// Special registers and bit moves
//===----------------------------------------------------------------------===//

/// Registers indexed by a dimension.
static bool isDimensioned(SpecialReg reg) {
  switch (reg) {
  case SpecialReg::tid:
  case SpecialReg::ntid:
  case SpecialReg::ctaid:
  case SpecialReg::nctaid:
  case SpecialReg::clusterid:
  case SpecialReg::nclusterid:
  case SpecialReg::cluster_ctaid:
  case SpecialReg::cluster_nctaid:
    return true;
  default:
    return false;
  }
}

LogicalResult SRegOp::verify() {
  SpecialReg reg = getReg();
  if (isDimensioned(reg) != getDim().has_value())
    return emitOpError("'")
           << stringifySpecialReg(reg) << "' "
           << (isDimensioned(reg) ? "needs" : "takes no") << " dimension";
  unsigned want = 32;
  if (reg == SpecialReg::clock64 || reg == SpecialReg::globaltimer ||
      reg == SpecialReg::gridid)
    want = 64;
  if (getType().getIntOrFloatBitWidth() != want)
    return emitOpError("'")
           << stringifySpecialReg(reg) << "' is " << want << "-bit";
  return success();
}

void SRegOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  switch (getReg()) {
  case SpecialReg::clock:
  case SpecialReg::clock64:
  case SpecialReg::globaltimer:
  case SpecialReg::globaltimer_lo:
  case SpecialReg::globaltimer_hi:
  case SpecialReg::smid:
  case SpecialReg::warpid:
    // Changes while the thread runs: a read of a volatile resource, written
    // too so that two reads are never merged.
    effects.emplace_back(MemoryEffects::Read::get());
    effects.emplace_back(MemoryEffects::Write::get());
    break;
  default:
    break;
  }
}

/// Whether a load or store with these modifiers observes or orders other
/// threads' accesses (volatile, relaxed/acquire/release, or not cached:
/// `.cv`), which makes it a write and a read that is never merged or
/// removed.
static bool isOrderedAccess(bool isVolatile, std::optional<MemOrder> sem,
                            std::optional<CacheOp> cache) {
  return isVolatile || (sem && *sem != MemOrder::weak) || cache == CacheOp::cv;
}

void LoadOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Read::get());
  if (isOrderedAccess(getIsVolatile(), getSem(), getCache()))
    effects.emplace_back(MemoryEffects::Write::get());
}

void StoreOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Write::get());
  if (isOrderedAccess(getIsVolatile(), getSem(), getCache()))
    effects.emplace_back(MemoryEffects::Read::get());
}

/// Checks that the bits of `from` and `to` add up to the same width.
static LogicalResult verifySameBits(Operation *op, TypeRange from,
                                    TypeRange to) {
  unsigned a = 0, b = 0;
  for (Type t : from) {
    unsigned w = bitWidth(t);
    if (!w)
      return op->emitOpError("operand type ") << t << " has no bit width";
    a += w;
  }
  for (Type t : to) {
    unsigned w = bitWidth(t);
    if (!w)
      return op->emitOpError("result type ") << t << " has no bit width";
    b += w;
  }
  if (a != b)
    return op->emitOpError("operands have ")
           << a << " bits but results have " << b;
  return success();
}

LogicalResult BitcastOp::verify() {
  return verifySameBits(*this, getInput().getType(), getType());
}

LogicalResult PackOp::verify() {
  if (getInputs().size() < 2)
    return emitOpError("needs at least two operands");
  return verifySameBits(*this, getInputs().getTypes(), getType());
}

LogicalResult UnpackOp::verify() {
  if (getResults().size() < 2)
    return emitOpError("needs at least two results");
  return verifySameBits(*this, getInput().getType(), getResultTypes());
}

/// Checks a byte access of `valueType` at `offset` into `bytesType`.
static LogicalResult verifyByteAccess(Operation *op, Type bytesType,
                                      Type valueType, int64_t offset) {
  auto vec = dyn_cast<VectorType>(bytesType);
  uint64_t total = bitWidth(bytesType);
  uint64_t width = bitWidth(valueType);
  if (!total || !width)
    return op->emitOpError("needs types with a fixed bit width");
  if (vec && !vec.getElementType().isInteger(8))
    return op->emitOpError("byte array must be a vector of i8");
  if (width % 8 && width != 1)
    return op->emitOpError("value must be a whole number of bytes");
  uint64_t bytes = std::max<uint64_t>(width, 8) / 8, size = total / 8;
  // Checked without overflow: the offset is an arbitrary attribute.
  if (offset < 0 || static_cast<uint64_t>(offset) > size ||
      size - offset < bytes)
    return op->emitOpError("access of ")
           << bytes << " bytes at offset " << offset << " is outside the "
           << size << "-byte parameter";
  return success();
}

LogicalResult ExtractBytesOp::verify() {
  return verifyByteAccess(*this, getSource().getType(), getType(), getOffset());
}

LogicalResult InsertBytesOp::verify() {
  return verifyByteAccess(*this, getDest().getType(), getValue().getType(),
                          getOffset());
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

static LogicalResult verifyVectorAccess(Operation *op, TypeRange types) {
  size_t n = types.size();
  if (n != 1 && n != 2 && n != 4 && n != 8)
    return op->emitOpError("accesses 1, 2, 4 or 8 values, not ") << n;
  for (Type t : types)
    if (t != types.front())
      return op->emitOpError("vector elements must have one type");
  if (!bitWidth(types.front()))
    return op->emitOpError("value type must have a fixed bit width");
  return success();
}

static LogicalResult verifyOrder(Operation *op, std::optional<MemOrder> sem,
                                 std::optional<MemScope> scope,
                                 bool isVolatile) {
  if (scope && !sem)
    return op->emitOpError("a scope needs a memory order");
  if (sem && isVolatile)
    return op->emitOpError("'volatile' excludes a memory order");
  return success();
}

LogicalResult LoadOp::verify() {
  if (failed(verifyVectorAccess(*this, getResultTypes())))
    return failure();
  return verifyOrder(*this, getSem(), getScope(), getIsVolatile());
}

LogicalResult StoreOp::verify() {
  if (failed(verifyVectorAccess(*this, getValues().getTypes())))
    return failure();
  if (getSpace() == StateSpace::constant)
    return emitOpError("cannot store to the const space");
  return verifyOrder(*this, getSem(), getScope(), getIsVolatile());
}

/// Checks the operand types of an atomic `op` on values of `type`.
static LogicalResult verifyAtomic(Operation *op, AtomicOp kind, Type type,
                                  size_t numValues) {
  bool isFloatOp = kind == AtomicOp::fadd || kind == AtomicOp::fmin ||
                   kind == AtomicOp::fmax;
  bool bitwiseOk = kind == AtomicOp::exch || kind == AtomicOp::cas ||
                   kind == AtomicOp::and_ || kind == AtomicOp::or_ ||
                   kind == AtomicOp::xor_;
  if (isFloatOp && !isa<FloatType, VectorType>(type))
    return op->emitOpError("'")
           << stringifyAtomicOp(kind) << "' needs a floating-point type";
  if (!isFloatOp && !bitwiseOk && !type.isInteger())
    return op->emitOpError("'")
           << stringifyAtomicOp(kind) << "' needs an integer type";
  size_t want = kind == AtomicOp::cas ? 2 : 1;
  if (numValues != want)
    return op->emitOpError("'") << stringifyAtomicOp(kind) << "' takes " << want
                                << " value operand(s)";
  return success();
}

LogicalResult AtomOp::verify() {
  for (Type t : getValues().getTypes())
    if (t != getType())
      return emitOpError("value operands must have the result type");
  return verifyAtomic(*this, getOp(), getType(), getValues().size());
}

LogicalResult RedOp::verify() {
  return verifyAtomic(*this, getOp(), getValue().getType(), 1);
}

LogicalResult BarRedOp::verify() {
  bool isPopc = getOp() == ReduxKind::popc;
  if (!isPopc && getOp() != ReduxKind::and_ && getOp() != ReduxKind::or_)
    return emitOpError("bar.red supports popc, and, or");
  if (isPopc != getType().isInteger(32))
    return emitOpError(isPopc ? "popc gives i32" : "and/or give i1");
  return success();
}

LogicalResult VoteOp::verify() {
  bool isBallot = getMode() == VoteMode::ballot;
  if (isBallot != getType().isInteger(32))
    return emitOpError(isBallot ? "ballot gives i32" : "all/any/uni give i1");
  return success();
}

LogicalResult LdMatrixOp::verify() {
  size_t n = getResults().size();
  if (n != 1 && n != 2 && n != 4)
    return emitOpError("loads 1, 2 or 4 matrices");
  return success();
}

LogicalResult StMatrixOp::verify() {
  size_t n = getValues().size();
  if (n != 1 && n != 2 && n != 4)
    return emitOpError("stores 1, 2 or 4 matrices");
  return success();
}

LogicalResult BulkCopyOp::verify() {
  StateSpace d = getDstSpace(), s = getSrcSpace();
  bool toShared = d == StateSpace::shared_cluster || d == StateSpace::shared;
  if (!((toShared && s == StateSpace::global) ||
        (d == StateSpace::global && s == StateSpace::shared) ||
        (toShared && s == StateSpace::shared)))
    return emitOpError("copies global to shared, shared to global or shared "
                       "to shared::cluster memory");
  if (bool(getRedop()) != bool(getRedType()))
    return emitOpError("a reduction needs an operation and a type");
  if (d == StateSpace::global && getMbar())
    return emitOpError("to global memory completes in a bulk group, not on "
                       "an mbarrier");
  if (d != StateSpace::global && !getMbar())
    return emitOpError("to shared memory needs an mbarrier");
  return success();
}

//===----------------------------------------------------------------------===//
// Textures and surfaces
//===----------------------------------------------------------------------===//

unsigned mlir::wooly::texCoordCount(TexGeometry g) {
  switch (g) {
  case TexGeometry::dim1:
  case TexGeometry::a1d:
    return 1;
  case TexGeometry::dim2:
  case TexGeometry::a2d:
    return 2;
  default:
    return 3;
  }
}

StringRef mlir::wooly::ptxGeometry(TexGeometry g) {
  switch (g) {
  case TexGeometry::dim1:
    return "1d";
  case TexGeometry::dim2:
    return "2d";
  case TexGeometry::dim3:
    return "3d";
  default:
    return stringifyTexGeometry(g);
  }
}

unsigned mlir::wooly::surfaceElementBits(ScalarType t) {
  switch (t) {
  case ScalarType::b8:
    return 8;
  case ScalarType::b16:
    return 16;
  case ScalarType::b64:
  case ScalarType::u64:
  case ScalarType::s64:
    return 64;
  default:
    return 32;
  }
}

bool mlir::wooly::isLayeredGeometry(TexGeometry g) {
  return g == TexGeometry::a1d || g == TexGeometry::a2d ||
         g == TexGeometry::acube;
}

/// Four results of `d` (f32, s32 or u32) as f32 or i32.
static LogicalResult verifyTexResults(Operation *op, ScalarType d,
                                      TypeRange results) {
  if (d != ScalarType::f32 && d != ScalarType::s32 && d != ScalarType::u32)
    return op->emitOpError("result type must be f32, s32 or u32");
  Type want = d == ScalarType::f32 ? Type(Float32Type::get(op->getContext()))
                                   : IntegerType::get(op->getContext(), 32);
  if (results.size() != 4 ||
      llvm::any_of(results, [&](Type t) { return t != want; }))
    return op->emitOpError("has four results of type ") << want;
  return success();
}

LogicalResult TexOp::verify() {
  if (failed(verifyTexResults(*this, getDType(), getResultTypes())))
    return failure();
  unsigned n = texCoordCount(getGeometry());
  if (getCoords().size() != n)
    return emitOpError("expects ") << n << " coordinates";
  if (bool(getLayer()) != isLayeredGeometry(getGeometry()))
    return emitOpError("takes a layer exactly when its geometry is layered");
  if (getCType() != ScalarType::f32 && getCType() != ScalarType::s32)
    return emitOpError("coordinate type must be f32 or s32");
  Type c = getCType() == ScalarType::f32 ? Type(Float32Type::get(getContext()))
                                         : IntegerType::get(getContext(), 32);
  if (llvm::any_of(getCoords().getTypes(), [&](Type t) { return t != c; }))
    return emitOpError("coordinates must be of type ") << c;
  if (getGradX().size() != getGradY().size() ||
      (!getGradX().empty() && getGradX().size() != n))
    return emitOpError("takes one gradient per coordinate in x and y");
  if (getLod() && !getGradX().empty())
    return emitOpError("takes a level or gradients, not both");
  return success();
}

LogicalResult Tld4Op::verify() {
  TexGeometry g = getGeometry();
  if (g != TexGeometry::dim2 && g != TexGeometry::a2d &&
      g != TexGeometry::cube && g != TexGeometry::acube)
    return emitOpError("gathers from 2D, layered 2D and cube textures only");
  unsigned n = texCoordCount(g);
  if (getCoords().size() != n)
    return emitOpError("expects ") << n << " coordinates";
  if (bool(getLayer()) != isLayeredGeometry(g))
    return emitOpError("takes a layer exactly when its geometry is layered");
  return verifyTexResults(*this, getDType(), getResultTypes());
}

//===----------------------------------------------------------------------===//
// Floating point and conversions
//===----------------------------------------------------------------------===//

static bool isIntegerRounding(RoundingMode m) {
  return m == RoundingMode::rni || m == RoundingMode::rzi ||
         m == RoundingMode::rmi || m == RoundingMode::rpi;
}

/// Float arithmetic takes only the float rounding modes.
static LogicalResult verifyFloatRounding(Operation *op,
                                         std::optional<RoundingMode> rnd) {
  if (rnd && (isIntegerRounding(*rnd) || *rnd == RoundingMode::rna ||
              *rnd == RoundingMode::rs))
    return op->emitOpError("rounding '")
           << stringifyRoundingMode(*rnd) << "' is not valid here";
  return success();
}

template <typename OpT> static LogicalResult verifyFloatBinary(OpT op) {
  if (op.getSat() && !isa<FloatType>(getElementTypeOrSelf(op.getType())))
    return op.emitOpError("'sat' needs a float type");
  return verifyFloatRounding(op, op.getRnd());
}

LogicalResult FAddOp::verify() { return verifyFloatBinary(*this); }
LogicalResult FSubOp::verify() { return verifyFloatBinary(*this); }
LogicalResult FMulOp::verify() { return verifyFloatBinary(*this); }
LogicalResult FmaOp::verify() { return verifyFloatRounding(*this, getRnd()); }

LogicalResult FDivOp::verify() {
  int modes = (getRnd() ? 1 : 0) + (getApprox() ? 1 : 0) + (getFull() ? 1 : 0);
  if (modes != 1)
    return emitOpError(
        "needs exactly one of a rounding mode, 'approx', 'full'");
  if ((getApprox() || getFull()) && !getType().isF32())
    return emitOpError("'approx' and 'full' division are f32 only");
  return verifyFloatRounding(*this, getRnd());
}

template <typename OpT> static LogicalResult verifyRoundedUnary(OpT op) {
  if (op.getRnd().has_value() == op.getApprox())
    return op.emitOpError("needs exactly one of a rounding mode or 'approx'");
  return verifyFloatRounding(op, op.getRnd());
}

LogicalResult FSqrtOp::verify() { return verifyRoundedUnary(*this); }
LogicalResult FRcpOp::verify() { return verifyRoundedUnary(*this); }

Type mlir::wooly::getStorageType(MLIRContext *ctx, ScalarType t) {
  Builder b(ctx);
  switch (t) {
  case ScalarType::pred:
  case ScalarType::b1:
    return b.getI1Type();
  case ScalarType::b8:
  case ScalarType::u8:
  case ScalarType::s8:
  case ScalarType::e4m3:
  case ScalarType::e5m2:
    return b.getI8Type();
  case ScalarType::b16:
  case ScalarType::u16:
  case ScalarType::s16:
  case ScalarType::e4m3x2:
  case ScalarType::e5m2x2:
    return b.getI16Type();
  case ScalarType::b32:
  case ScalarType::u32:
  case ScalarType::s32:
  case ScalarType::tf32:
  case ScalarType::s8x4:
  case ScalarType::u8x4:
    return b.getI32Type();
  case ScalarType::b64:
  case ScalarType::u64:
  case ScalarType::s64:
    return b.getI64Type();
  case ScalarType::b128:
    return b.getIntegerType(128);
  case ScalarType::f16:
    return b.getF16Type();
  case ScalarType::bf16:
    return b.getBF16Type();
  case ScalarType::f16x2:
    return VectorType::get({2}, b.getF16Type());
  case ScalarType::bf16x2:
    return VectorType::get({2}, b.getBF16Type());
  case ScalarType::f32:
    return b.getF32Type();
  case ScalarType::f64:
    return b.getF64Type();
  case ScalarType::s4:
  case ScalarType::u4:
    return b.getIntegerType(4);
  }
  return {};
}

LogicalResult CvtOp::verify() {
  size_t n = getInputs().size();
  // Two inputs exactly for the pairs packed from f32 (cvt.rn.f16x2.f32 d,
  // a, b and the like).
  ScalarType dstT = getDstType();
  bool pair = dstT == ScalarType::f16x2 || dstT == ScalarType::bf16x2 ||
              dstT == ScalarType::e4m3x2 || dstT == ScalarType::e5m2x2;
  size_t want = pair && getSrcType() == ScalarType::f32 ? 2 : 1;
  if (n != want)
    return emitOpError("takes ")
           << want << " input(s) for '" << stringifyScalarType(getSrcType())
           << "' to '" << stringifyScalarType(dstT) << "'";
  // Packed destinations (f16x2 from two f32, e4m3x2 from two f32 ...) take two
  // inputs of the source type; otherwise the input holds the source type.
  Type src = getStorageType(getContext(), getSrcType());
  for (Type t : getInputs().getTypes())
    if (bitWidth(t) != bitWidth(src))
      return emitOpError("input of type ")
             << t << " does not hold a '" << stringifyScalarType(getSrcType())
             << "'";
  Type dst = getStorageType(getContext(), getDstType());
  if (bitWidth(getType()) != bitWidth(dst))
    return emitOpError("result of type ")
           << getType() << " does not hold a '"
           << stringifyScalarType(getDstType()) << "'";
  if (auto rnd = getRnd()) {
    bool srcFloat = isa<FloatType>(getElementTypeOrSelf(src));
    if (isIntegerRounding(*rnd) && !srcFloat)
      return emitOpError("integer rounding needs a float source");
  }
  return success();
}

#define GET_OP_CLASSES
#include "Wooly/Dialect/Wooly/IR/WoolyOps.cpp.inc"
