//===- ImportMatrix.cpp - PTX matrix instructions ---------------*- C++ -*-===//
//
// ldmatrix, mma.sync and wmma.load/store/mma.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::ptx;
using llvm::StringRef;
using OK = Operand::Kind;

LogicalResult Importer::emitMatrix(Instruction &inst, Opcode op) {
  Type i32 = intType(32);
  auto readVec = [&](const Operand &o, Type t, SmallVectorImpl<Value> &out) {
    if (o.kind != OK::Vector) {
      (void)error(o.loc, "expected a vector operand '{...}'");
      return false;
    }
    for (const Operand &e : o.elems) {
      Value v = read(e, t);
      if (!v)
        return false;
      out.push_back(v);
    }
    return true;
  };
  if (op == Opcode::Ldmatrix) {
    int n = inst.has("x4") ? 4 : inst.has("x2") ? 2 : 1;
    if (failed(expectOperands(inst, 2)))
      return failure();
    Type at;
    Value addr = address(inst.operands[1], at);
    if (!addr)
      return failure();
    // Without `.shared` (or `.shared::cta`) the address is generic (and must
    // point to shared memory): the op takes a shared-space address.
    if (spaceOf(inst) != StateSpace::shared)
      addr = make<CvtaOp>(at, CvtaDir::from_generic, StateSpace::shared, addr);
    SmallVector<Type> types(n, i32);
    auto ld = make<LdMatrixOp>(types, addr, inst.has("trans"));
    const Operand &d = inst.operands[0];
    if (d.kind != OK::Vector || d.elems.size() != static_cast<size_t>(n))
      return error(d.loc, "expected " + Twine(n) + " destination registers");
    for (int k = 0; k < n; ++k)
      if (failed(write(d.elems[k], ld.getResult(k))))
        return failure();
    return success();
  }
  // Shapes look like m16n8k16.
  StringRef shape;
  for (StringRef m : inst.mods)
    if (m.starts_with("m") && m.contains('n') && m.contains('k'))
      shape = m;
  if (shape.empty())
    return error(inst.loc, "'" + inst.opcode + "' needs a shape");
  SmallVector<Layout, 2> layouts;
  for (StringRef m : inst.mods)
    if (auto l = symbolizeLayout(m))
      layouts.push_back(*l);
  SmallVector<PtxType, 4> types;
  for (StringRef m : inst.mods)
    if (auto t = ptxType(m))
      types.push_back(*t);
  // Registers of a fragment: floats for f32/f64 elements, i32 otherwise.
  auto regType = [&](const PtxType &t) -> Type {
    if (t.scalar == ScalarType::f32 || t.scalar == ScalarType::f64)
      return t.type;
    return i32;
  };
  // Single-bit products (`.b1` A and B): `.xor.popc` or `.and.popc`.
  MmaBitOpAttr bitOp;
  bool popc = inst.has("popc"), isXor = inst.has("xor"),
       isAnd = inst.has("and");
  if (popc || isXor || isAnd) {
    if (!popc || isXor == isAnd)
      return error(inst.loc, "'" + inst.opcode +
                                 "': single-bit products take '.xor.popc' "
                                 "or '.and.popc'");
    bitOp =
        MmaBitOpAttr::get(ctx, isXor ? MmaBitOp::xor_popc : MmaBitOp::and_popc);
  }
  bool product =
      op == Opcode::Mma || (!inst.mods.empty() && inst.mods[0] == "mma");
  bool single = llvm::any_of(
      types, [](const PtxType &t) { return t.scalar == ScalarType::b1; });
  if (bitOp && !product)
    return error(inst.loc, "'.popc' is a modifier of products only");
  if (product && single != bool(bitOp))
    return error(inst.loc, "'" + inst.opcode + "': " +
                               (single ? "'.b1' products need '.xor.popc' or "
                                         "'.and.popc'"
                                       : "'.popc' needs '.b1' inputs"));
  if (op == Opcode::Mma) {
    if (layouts.size() != 2 || types.size() != 4 ||
        failed(expectOperands(inst, 4)))
      return error(inst.loc, "'mma' needs two layouts and four types");
    SmallVector<Value> a, bb, c;
    if (!readVec(inst.operands[1], regType(types[1]), a) ||
        !readVec(inst.operands[2], regType(types[2]), bb) ||
        !readVec(inst.operands[3], regType(types[3]), c))
      return failure();
    const Operand &d = inst.operands[0];
    if (d.kind != OK::Vector)
      return error(d.loc, "expected a vector destination");
    SmallVector<Type> dt(d.elems.size(), regType(types[0]));
    auto mma =
        make<MmaOp>(dt, b.getStringAttr(shape), layouts[0], layouts[1],
                    types[0].scalar, types[1].scalar, types[2].scalar,
                    types[3].scalar, a, bb, c, inst.has("satfinite"), bitOp);
    for (size_t k = 0; k < d.elems.size(); ++k)
      if (failed(write(d.elems[k], mma.getResult(k))))
        return failure();
    return success();
  }
  // wmma.load / wmma.store / wmma.mma
  if (inst.mods.empty())
    return unsupported(inst);
  StringRef kindMod = inst.mods[0];
  StateSpace space = spaceOf(inst).value_or(StateSpace::generic);
  if (kindMod == "load") {
    auto role =
        inst.mods.size() > 1 ? symbolizeMatrixRole(inst.mods[1]) : std::nullopt;
    if (!role || layouts.empty() || types.empty() || inst.operands.size() < 2 ||
        inst.operands.size() > 3)
      return error(inst.loc, "malformed 'wmma.load'");
    Type at;
    Value addr = address(inst.operands[1], at);
    Value stride;
    if (inst.operands.size() == 3 && !(stride = read(inst.operands[2], i32)))
      return failure();
    if (!addr)
      return failure();
    const Operand &d = inst.operands[0];
    if (d.kind != OK::Vector)
      return error(d.loc, "expected a vector destination");
    SmallVector<Type> rt(d.elems.size(), regType(types[0]));
    auto ld = make<WmmaLoadOp>(rt, *role, layouts[0], b.getStringAttr(shape),
                               types[0].scalar, space, addr, stride);
    for (size_t k = 0; k < d.elems.size(); ++k)
      if (failed(write(d.elems[k], ld.getResult(k))))
        return failure();
    return success();
  }
  if (kindMod == "store") {
    if (layouts.empty() || types.empty() || inst.operands.size() < 2 ||
        inst.operands.size() > 3)
      return error(inst.loc, "malformed 'wmma.store'");
    Type at;
    Value addr = address(inst.operands[0], at);
    if (!addr)
      return failure();
    SmallVector<Value> vals;
    if (!readVec(inst.operands[1], regType(types[0]), vals))
      return failure();
    Value stride;
    if (inst.operands.size() == 3 && !(stride = read(inst.operands[2], i32)))
      return failure();
    make<WmmaStoreOp>(layouts[0], b.getStringAttr(shape), types[0].scalar,
                      space, addr, stride, vals);
    return success();
  }
  if (kindMod == "mma") {
    if (layouts.size() != 2 || types.size() < 2 ||
        failed(expectOperands(inst, 4)))
      return error(inst.loc, "malformed 'wmma.mma'");
    // `.dtype.ctype` (f16 inputs) or `.dtype.atype.btype.ctype`.
    if (types.size() != 2 && types.size() != 4)
      return error(inst.loc, "malformed 'wmma.mma'");
    PtxType dty = types[0], cty = types.back();
    ScalarType aty = types.size() == 4 ? types[1].scalar : ScalarType::f16;
    ScalarType bty = types.size() == 4 ? types[2].scalar : ScalarType::f16;
    SmallVector<Value> a, bb, c;
    // f64 fragments are doubles; the others are 32-bit registers.
    Type at = types.size() == 4 ? regType(types[1]) : i32;
    Type bt = types.size() == 4 ? regType(types[2]) : i32;
    if (!readVec(inst.operands[1], at, a) ||
        !readVec(inst.operands[2], bt, bb) ||
        !readVec(inst.operands[3], regType(cty), c))
      return failure();
    const Operand &d = inst.operands[0];
    if (d.kind != OK::Vector)
      return error(d.loc, "expected a vector destination");
    SmallVector<Type> dt(d.elems.size(), regType(dty));
    auto mma = make<WmmaMmaOp>(
        dt, layouts[0], layouts[1], b.getStringAttr(shape), dty.scalar, aty,
        bty, cty.scalar, a, bb, c, inst.has("satfinite"), bitOp);
    for (size_t k = 0; k < d.elems.size(); ++k)
      if (failed(write(d.elems[k], mma.getResult(k))))
        return failure();
    return success();
  }
  return unsupported(inst);
}
