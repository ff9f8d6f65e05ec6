//===- ImportConversions.cpp - PTX moves and conversions --------*- C++ -*-===//
//
// mov (scalars and vectors) and cvt (including cvt.pack).
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::ptx;
using llvm::StringRef;
using OK = Operand::Kind;

LogicalResult Importer::emitMov(Instruction &inst, Opcode op) {
  auto t = instrType(inst);
  if (!t || failed(expectOperands(inst, 2)))
    return t ? failure() : error(inst.loc, "'mov' needs a type");
  int vec = 1;
  for (StringRef m : inst.mods)
    if (m == "v2" || m == "v4" || m == "v8")
      vec = m[1] - '0';
  if (vec == 1) {
    Value v = read(inst.operands[1], t->type);
    if (!v)
      return failure();
    return write(inst.operands[0], v);
  }
  // mov.vN.T: element-wise moves between vectors of N registers (vector
  // registers or `{a, b, ...}`). All sources are read before any write, so
  // permutations such as `{b, a}, {a, b}` work.
  SmallVector<Operand, 2> sides;
  for (const Operand &o : inst.operands) {
    auto expanded = expandVector(o);
    const Operand &v = expanded ? *expanded : o;
    if (v.kind != OK::Vector || v.elems.size() != static_cast<size_t>(vec))
      return error(o.loc, "'mov.v" + Twine(vec) + "' needs vectors of " +
                              Twine(vec) + " registers");
    sides.push_back(v);
  }
  SmallVector<Value, 8> values;
  for (const Operand &e : sides[1].elems) {
    Value v = read(e, t->type);
    if (!v)
      return failure();
    values.push_back(v);
  }
  for (auto [e, v] : llvm::zip(sides[0].elems, values))
    if (failed(write(e, v)))
      return failure();
  return success();
}

LogicalResult Importer::emitCvt(Instruction &inst, Opcode op) {
  // cvt[.rnd][.ftz][.sat][.relu][.satfinite].dtype.atype d, a[, b]
  auto dt = instrType(inst, 0), st = instrType(inst, 1);
  if (!dt || !st)
    return error(inst.loc, "'cvt' needs a destination and a source type");
  // Only cvt.pack takes a third type.
  if (!inst.has("pack") && failed(checkTypeCount(inst, 2)))
    return failure();
  if (inst.has("pack")) {
    // cvt.pack.sat.T.s32{.b32} d, a, b{, c}: with w the width of T,
    // d = (c << 2w) | (sat_T(a) << w) | sat_T(b), the fields as raw bits.
    auto ct = instrType(inst, 0), at = instrType(inst, 1);
    if (!ct || !at || !inst.has("sat") || at->scalar != ScalarType::s32)
      return error(inst.loc, "'cvt.pack' needs '.sat', a destination type "
                             "and '.s32' sources");
    unsigned w = widthOf(ct->type);
    bool withC = inst.operands.size() == 4;
    if (w == 16 ? withC : !withC)
      return expectOperands(inst, w == 16 ? 3 : 4);
    if (w != 4 && w != 8 && w != 16)
      return error(inst.loc, "'cvt.pack' to '." +
                                 stringifyScalarType(ct->scalar) +
                                 "' is not supported yet");
    Type i32 = intType(32);
    auto field = [&](const Operand &o) -> Value {
      Value v = read(o, i32);
      if (!v)
        return {};
      Value narrow = checked(CvtOp::create(
          b, curLoc, ct->type, ValueRange{v}, ScalarType::s32, ct->scalar,
          RoundingModeAttr(), false, /*sat=*/true, false, false));
      if (!narrow)
        return {};
      return make<arith::ExtUIOp>(i32, narrow);
    };
    Value fa = field(inst.operands[1]), fb = field(inst.operands[2]);
    if (!fa || !fb)
      return failure();
    Value r = arith::OrIOp::create(
        b, curLoc, make<arith::ShLIOp>(fa, constInt(i32, w)), fb);
    if (withC) {
      Value c = read(inst.operands[3], i32);
      if (!c)
        return failure();
      r = arith::OrIOp::create(b, curLoc,
                               make<arith::ShLIOp>(c, constInt(i32, 2 * w)), r);
    }
    return write(inst.operands[0], r);
  }
  bool packed = inst.operands.size() == 3;
  if (!packed && failed(expectOperands(inst, 2)))
    return failure();
  auto rnd = roundingOf(inst);
  bool ftz = inst.has("ftz"), sat = inst.has("sat"), relu = inst.has("relu"),
       satfinite = inst.has("satfinite");
  SmallVector<Value, 2> in;
  for (size_t i = 1; i < inst.operands.size(); ++i) {
    Value v = read(inst.operands[i], st->type, st->isSigned);
    if (!v)
      return failure();
    in.push_back(v);
  }
  Value r;
  bool srcInt = !st->isFloat, dstInt = !dt->isFloat;
  if (!packed && srcInt && dstInt && !sat) {
    // Integer to integer: truncate or extend by the source's signedness.
    r = coerce(in[0], dt->type, st->isSigned);
  } else if (!packed && !rnd && !ftz && !sat && !relu && !satfinite &&
             st->scalar == ScalarType::f32 && dt->scalar == ScalarType::f64) {
    // Exact widening; with a rounding modifier (cvt.rni.f64.f32 rounds to
    // an integral value) it stays a wooly.cvt.
    r = make<arith::ExtFOp>(dt->type, in[0]);
  } else if (!packed && !rnd && !sat && !relu && !satfinite && !ftz &&
             (st->scalar == ScalarType::f16 ||
              st->scalar == ScalarType::bf16) &&
             (dt->scalar == ScalarType::f32 || dt->scalar == ScalarType::f64)) {
    r = make<arith::ExtFOp>(dt->type, in[0]);
  } else if (!packed && !sat && !ftz && !relu && !satfinite && srcInt &&
             (dt->scalar == ScalarType::f32 || dt->scalar == ScalarType::f64) &&
             rnd && *rnd == RoundingMode::rn) {
    r = st->isSigned ? Value(make<arith::SIToFPOp>(dt->type, in[0]))
                     : Value(make<arith::UIToFPOp>(dt->type, in[0]));
  } else {
    r = checked(
        make<CvtOp>(dt->type, in, st->scalar, dt->scalar,
                    rnd ? RoundingModeAttr::get(ctx, *rnd) : RoundingModeAttr(),
                    ftz, sat, relu, satfinite));
    if (!r)
      return failure();
  }
  return write(inst.operands[0], r, dt->isSigned);
}
