//===- ImportArith.cpp - PTX arithmetic and comparisons ---------*- C++ -*-===//
//
// Integer and floating-point arithmetic (add ... rem, min/max, mul/mad/fma,
// the carry chain add.cc/addc/..., sqrt/rcp and the approximate functions),
// selp, setp and set.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::ptx;
using llvm::StringRef;
using OK = Operand::Kind;

Value Importer::saturatingAddS32(Value a, Value c, bool subtract) {
  Type i64 = intType(64);
  Value wa = make<arith::ExtSIOp>(i64, a);
  Value wc = make<arith::ExtSIOp>(i64, c);
  Value s = subtract ? Value(make<arith::SubIOp>(wa, wc))
                     : Value(make<arith::AddIOp>(wa, wc));
  s = make<arith::MaxSIOp>(s, constInt(i64, INT32_MIN));
  s = make<arith::MinSIOp>(s, constInt(i64, INT32_MAX));
  return make<arith::TruncIOp>(intType(32), s);
}

bool Importer::readSources(const Instruction &inst, Type t,
                           SmallVectorImpl<Value> &out) {
  for (size_t i = 1; i < inst.operands.size(); ++i) {
    Value v = read(inst.operands[i], t);
    if (!v)
      return false;
    out.push_back(v);
  }
  return true;
}

LogicalResult Importer::emitIntOrFloatArith(Instruction &inst, Opcode op) {
  // add.cc, sub.cc (the table allows `.cc` on no other opcode here).
  if (inst.has("cc"))
    return emitCarry(inst, op);
  auto t = instrType(inst);
  if (!t)
    return error(inst.loc, "'" + inst.opcode + "' needs a type");
  bool unary = op == Opcode::Not || op == Opcode::Cnot || op == Opcode::Neg ||
               op == Opcode::Abs;
  size_t want = unary ? 2 : op == Opcode::Selp ? 4 : 3;
  if (failed(expectOperands(inst, want)))
    return failure();
  Type ty = t->type;
  SmallVector<Value> src;
  if (op == Opcode::Selp) {
    Value a = read(inst.operands[1], ty), c = read(inst.operands[2], ty),
          p = read(inst.operands[3], b.getI1Type());
    if (!a || !c || !p)
      return failure();
    return write(inst.operands[0], make<arith::SelectOp>(p, a, c));
  }
  if (op == Opcode::Shl || op == Opcode::Shr) {
    if (!ty.isInteger())
      return error(inst.loc,
                   "'" + inst.opcode + "' needs a .b16, .b32 or .b64 type");
    Value a = read(inst.operands[1], ty);
    const Operand &amt = inst.operands[2];
    if (!a)
      return failure();
    unsigned w = widthOf(ty);
    Value r;
    if (amt.kind == OK::Imm && amt.imm >= 0 && amt.imm < w) {
      Value n = constInt(ty, amt.imm);
      if (op == Opcode::Shl)
        r = make<arith::ShLIOp>(a, n);
      else if (t->isSigned)
        r = make<arith::ShRSIOp>(a, n);
      else
        r = make<arith::ShRUIOp>(a, n);
    } else {
      // The amount is a u32 in PTX, whatever the operand type.
      Value n = read(amt, intType(32));
      if (!n)
        return failure();
      n = coerce(n, ty);
      if (w < 32) {
        // A 16-bit shift by >= 2^16 must still clamp: saturate first.
        Value n32 = read(amt, intType(32));
        Value big = make<arith::CmpIOp>(arith::CmpIPredicate::uge, n32,
                                        constInt(intType(32), w));
        n = make<arith::SelectOp>(big, constInt(ty, w), n);
      }
      if (op == Opcode::Shl)
        r = make<ShlOp>(a, n);
      else
        r = ShrOp::create(b, curLoc,
                          t->isSigned ? Signedness::s : Signedness::u, a, n);
    }
    return write(inst.operands[0], r);
  }
  if (!readSources(inst, ty, src))
    return failure();
  Value r;
  bool ftz = inst.has("ftz");
  if (t->isFloat) {
    auto flush = [&](Value v) { return ftz ? Value(make<FlushOp>(v)) : v; };
    if (op == Opcode::Add || op == Opcode::Sub) {
      auto rnd = roundingOf(inst);
      bool sat = inst.has("sat");
      if (!ftz && !sat && (!rnd || *rnd == RoundingMode::rn)) {
        auto fm =
            rnd ? arith::FastMathFlags::none : arith::FastMathFlags::contract;
        r = op == Opcode::Add ? Value(make<arith::AddFOp>(src[0], src[1], fm))
                              : Value(make<arith::SubFOp>(src[0], src[1], fm));
      } else {
        auto rndAttr =
            rnd ? RoundingModeAttr::get(ctx, *rnd) : RoundingModeAttr();
        r = op == Opcode::Add
                ? Value(make<FAddOp>(src[0], src[1], rndAttr, ftz, sat))
                : Value(make<FSubOp>(src[0], src[1], rndAttr, ftz, sat));
      }
    } else if (op == Opcode::Min || op == Opcode::Max) {
      if (inst.has("relu"))
        return error(inst.loc, "'" + inst.opcode +
                                   ".relu' on floats is not supported yet");
      bool nan = inst.has("NaN");
      bool xs = inst.has("xorsign");
      if (xs != inst.has("abs"))
        return error(inst.loc, "'." + Twine(xs ? "xorsign" : "abs") +
                                   "' needs '." + (xs ? "abs" : "xorsign") +
                                   "' (`.xorsign.abs`)");
      r = op == Opcode::Min ? Value(make<FMinOp>(src[0], src[1], nan, ftz, xs))
                            : Value(make<FMaxOp>(src[0], src[1], nan, ftz, xs));
    } else if (op == Opcode::Div) {
      auto rnd = roundingOf(inst);
      bool approx = inst.has("approx"), full = inst.has("full");
      if (!approx && !full && !rnd)
        return error(inst.loc, "'div' on floats needs '.approx', '.full' or "
                               "a rounding mode");
      if (rnd && *rnd == RoundingMode::rn && !ftz)
        r = make<arith::DivFOp>(src[0], src[1]);
      else
        r = checked(make<FDivOp>(src[0], src[1],
                                 rnd ? RoundingModeAttr::get(ctx, *rnd)
                                     : RoundingModeAttr(),
                                 approx, full, ftz));
      if (!r)
        return failure();
    } else if (op == Opcode::Neg) {
      r = make<arith::NegFOp>(flush(src[0]));
    } else if (op == Opcode::Abs) {
      r = make<math::AbsFOp>(flush(src[0]));
    } else if (op == Opcode::Copysign) {
      // copysign.f32 d, a, b: b with the sign of a.
      r = make<math::CopySignOp>(src[1], src[0]);
    } else {
      return unsupported(inst);
    }
    return write(inst.operands[0], r);
  }
  if (op == Opcode::Add || op == Opcode::Sub) {
    if (inst.has("sat")) {
      if (!t->isSigned || !ty.isInteger(32))
        return error(inst.loc, "'.sat' integer add/sub is only defined for "
                               ".s32");
      r = saturatingAddS32(src[0], src[1], /*subtract=*/op == Opcode::Sub);
    } else {
      r = op == Opcode::Add ? Value(make<arith::AddIOp>(src[0], src[1]))
                            : Value(make<arith::SubIOp>(src[0], src[1]));
    }
  } else if (op == Opcode::And) {
    r = make<arith::AndIOp>(src[0], src[1]);
  } else if (op == Opcode::Or) {
    r = make<arith::OrIOp>(src[0], src[1]);
  } else if (op == Opcode::Xor) {
    r = make<arith::XOrIOp>(src[0], src[1]);
  } else if (op == Opcode::Not) {
    r = make<arith::XOrIOp>(src[0], constInt(ty, -1));
  } else if (op == Opcode::Cnot) {
    Value z =
        make<arith::CmpIOp>(arith::CmpIPredicate::eq, src[0], constInt(ty, 0));
    r = make<arith::ExtUIOp>(ty, z);
  } else if (op == Opcode::Neg) {
    r = make<arith::SubIOp>(constInt(ty, 0), src[0]);
  } else if (op == Opcode::Abs) {
    r = make<math::AbsIOp>(src[0]);
  } else if (op == Opcode::Min || op == Opcode::Max) {
    bool isMin = op == Opcode::Min;
    r = t->isSigned ? (isMin ? Value(make<arith::MinSIOp>(src[0], src[1]))
                             : Value(make<arith::MaxSIOp>(src[0], src[1])))
                    : (isMin ? Value(make<arith::MinUIOp>(src[0], src[1]))
                             : Value(make<arith::MaxUIOp>(src[0], src[1])));
    // `.relu` clamps negative results to 0 (signed types only).
    if (inst.has("relu")) {
      if (!t->isSigned)
        return error(inst.loc,
                     "'" + inst.opcode + ".relu' needs a signed type");
      r = make<arith::MaxSIOp>(r, constInt(ty, 0));
    }
  } else if (op == Opcode::Div) {
    r = make<DivOp>(t->isSigned ? Signedness::s : Signedness::u, src[0],
                    src[1]);
  } else if (op == Opcode::Rem) {
    r = make<RemOp>(t->isSigned ? Signedness::s : Signedness::u, src[0],
                    src[1]);
  } else {
    return unsupported(inst);
  }
  return write(inst.operands[0], r);
}

LogicalResult Importer::emitMulMad(Instruction &inst, Opcode op) {
  // mad.cc (the only one of mul, mad, fma that takes `.cc`).
  if (inst.has("cc"))
    return emitCarry(inst, op);
  auto t = instrType(inst);
  if (!t)
    return error(inst.loc, "'" + inst.opcode + "' needs a type");
  bool isMad = op != Opcode::Mul;
  if (failed(expectOperands(inst, isMad ? 4 : 3)))
    return failure();
  Type ty = t->type;
  if (t->isFloat) {
    SmallVector<Value> src;
    if (!readSources(inst, ty, src))
      return failure();
    auto rnd = roundingOf(inst);
    bool ftz = inst.has("ftz"), sat = inst.has("sat");
    Value r;
    if (!isMad) {
      if (!ftz && !sat && (!rnd || *rnd == RoundingMode::rn))
        r = make<arith::MulFOp>(src[0], src[1],
                                rnd ? arith::FastMathFlags::none
                                    : arith::FastMathFlags::contract);
      else
        r = make<FMulOp>(src[0], src[1],
                         rnd ? RoundingModeAttr::get(ctx, *rnd)
                             : RoundingModeAttr(),
                         ftz, sat);
    } else {
      // mad.f32 without rounding is fma.rn (sm_20+).
      RoundingMode mode = rnd.value_or(RoundingMode::rn);
      bool relu = inst.has("relu");
      // math.fma only for f32/f64: for f16/bf16, LLVM may compute it in
      // f32 and round twice, so wooly.fma (one rounding) is used instead.
      Type elem = getElementTypeOrSelf(src[0].getType());
      if (mode == RoundingMode::rn && !ftz && !sat && !relu &&
          (elem.isF32() || elem.isF64()))
        r = make<math::FmaOp>(src[0], src[1], src[2]);
      else
        r = make<FmaOp>(src[0], src[1], src[2], mode, ftz, sat, relu);
    }
    return write(inst.operands[0], r);
  }
  bool wide = inst.has("wide"), hi = inst.has("hi");
  Value a = read(inst.operands[1], ty), c = read(inst.operands[2], ty);
  if (!a || !c)
    return failure();
  Value r;
  if (wide) {
    if (widthOf(ty) != 16 && widthOf(ty) != 32)
      return error(inst.loc,
                   "'" + inst.opcode + ".wide' needs a 16- or 32-bit type");
    Type wt = intType(widthOf(ty) * 2);
    a = coerce(a, wt, t->isSigned);
    c = coerce(c, wt, t->isSigned);
    r = make<arith::MulIOp>(a, c);
    ty = wt;
  } else if (hi) {
    if (t->isSigned)
      r = make<arith::MulSIExtendedOp>(a, c).getHigh();
    else
      r = make<arith::MulUIExtendedOp>(a, c).getHigh();
  } else {
    r = make<arith::MulIOp>(a, c);
  }
  if (isMad) {
    Value addend = read(inst.operands[3], ty);
    if (!addend)
      return failure();
    if (inst.has("sat")) {
      if (!hi || !t->isSigned || !ty.isInteger(32))
        return error(inst.loc, "'.sat' is only defined for mad.hi.s32");
      r = saturatingAddS32(r, addend);
    } else {
      r = make<arith::AddIOp>(r, addend);
    }
  }
  return write(inst.operands[0], r);
}

LogicalResult Importer::emitCarry(Instruction &inst, Opcode op) {
  // add.cc / addc(.cc) / sub.cc / subc(.cc) / mad(c).lo/hi(.cc): the carry
  // flag CC.CF is a function-wide i1 variable. Reached from add, sub and
  // mad with `.cc`, whose other modifiers (`.sat`, `.wide`, rounding) do not
  // combine with it.
  for (StringRef m : inst.mods)
    if (m != "cc" && m != "hi" && m != "lo" && !symbolizeScalarType(m))
      return unknownModifier(inst, m);
  auto t = instrType(inst);
  if (!t || t->isFloat || !(t->type.isInteger(32) || t->type.isInteger(64)))
    return error(inst.loc,
                 "'" + inst.opcode + "' needs a 32- or 64-bit integer type");
  bool isMad = op == Opcode::Mad || op == Opcode::Madc;
  if (failed(expectOperands(inst, isMad ? 4 : 3)))
    return failure();
  if (!carryVar)
    carryVar = newVar(b.getI1Type(), StringRef());
  Type ty = t->type;
  Value a = read(inst.operands[1], ty), c = read(inst.operands[2], ty);
  if (!a || !c)
    return failure();
  bool useCarry =
      op == Opcode::Addc || op == Opcode::Subc || op == Opcode::Madc;
  bool setCarry = inst.has("cc");
  bool isSub = op == Opcode::Sub || op == Opcode::Subc;
  Value lhs = a, rhs = c;
  if (isMad) {
    if (inst.has("hi"))
      lhs = t->isSigned ? make<arith::MulSIExtendedOp>(a, c).getHigh()
                        : make<arith::MulUIExtendedOp>(a, c).getHigh();
    else
      lhs = make<arith::MulIOp>(a, c);
    rhs = read(inst.operands[3], ty);
    if (!rhs)
      return failure();
  }
  Value cin =
      useCarry ? ssa->readVariable(*carryVar, cur) : constInt(b.getI1Type(), 0);
  Value r, cout;
  if (isSub) {
    // a - b computed as a + ~b + CF (CF = 1 when there is no borrow), and
    // CC.CF receives the carry out of that sum, as NVIDIA hardware does
    // (the ZLUDA suite's subc_cc_s32 checks this against a GPU): a borrow
    // leaves CF = 0, and subc consumes CF the same way.
    Value nb = make<arith::XOrIOp>(rhs, constInt(ty, -1));
    Value carryIn = useCarry ? cin : constInt(b.getI1Type(), 1);
    auto s1 = make<arith::AddUIExtendedOp>(lhs, nb);
    auto s2 = arith::AddUIExtendedOp::create(b, curLoc, s1.getSum(),
                                             make<arith::ExtUIOp>(ty, carryIn));
    r = s2.getSum();
    cout = make<arith::OrIOp>(s1.getOverflow(), s2.getOverflow());
  } else {
    auto s1 = make<arith::AddUIExtendedOp>(lhs, rhs);
    r = s1.getSum();
    cout = s1.getOverflow();
    if (useCarry) {
      auto s2 = arith::AddUIExtendedOp::create(b, curLoc, r,
                                               make<arith::ExtUIOp>(ty, cin));
      r = s2.getSum();
      cout = make<arith::OrIOp>(cout, s2.getOverflow());
    }
  }
  if (setCarry)
    assign(*carryVar, cout);
  return write(inst.operands[0], r);
}

LogicalResult Importer::emitUnaryFloat(Instruction &inst, Opcode op) {
  auto t = instrType(inst);
  if (!t || !t->isFloat)
    return error(inst.loc, "'" + inst.opcode + "' needs a floating-point type");
  if (failed(expectOperands(inst, 2)))
    return failure();
  Value x = read(inst.operands[1], t->type);
  if (!x)
    return failure();
  bool ftz = inst.has("ftz"), approx = inst.has("approx");
  auto rnd = roundingOf(inst);
  Value r;
  if (op == Opcode::Sqrt || op == Opcode::Rcp) {
    if (!approx && !rnd)
      return error(inst.loc,
                   "'" + inst.opcode + "' needs '.approx' or a rounding mode");
    if (approx && rnd)
      rnd.reset();
    if (rnd && *rnd == RoundingMode::rn && !ftz) {
      if (op == Opcode::Sqrt) {
        r = make<math::SqrtOp>(x);
      } else {
        if (!isa<FloatType>(t->type))
          return error(inst.loc, "'rcp' needs a scalar float type");
        r = make<arith::DivFOp>(constFloat(t->type, 1.0), x);
      }
    } else {
      auto ra = rnd ? RoundingModeAttr::get(ctx, *rnd) : RoundingModeAttr();
      r = checked(op == Opcode::Sqrt ? Value(make<FSqrtOp>(x, ra, approx, ftz))
                                     : Value(make<FRcpOp>(x, ra, approx, ftz)));
      if (!r)
        return failure();
    }
  } else {
    auto fn = *symbolizeApproxFn(inst.opcode);
    if (!approx && fn != ApproxFn::rsqrt && fn != ApproxFn::ex2 &&
        fn != ApproxFn::tanh)
      return error(inst.loc, "'" + inst.opcode + "' needs '.approx'");
    r = make<FApproxOp>(fn, x, ftz);
  }
  return write(inst.operands[0], r);
}

LogicalResult Importer::emitSetp(Instruction &inst, Opcode op) {
  bool isSet = op == Opcode::Set;
  // setp.CmpOp[.BoolOp][.ftz].type p[|q], a, b[, {!}c]
  // set.CmpOp[.BoolOp][.ftz].dtype.stype d, a, b[, {!}c]
  auto st = isSet ? instrType(inst, 1) : instrType(inst);
  auto dt = isSet ? instrType(inst, 0) : std::optional<PtxType>();
  if (!st || (isSet && !dt))
    return error(inst.loc, "'" + inst.opcode + "' needs its type(s)");
  if (inst.mods.empty())
    return error(inst.loc, "'" + inst.opcode + "' needs a comparison");
  StringRef cmp = inst.mods[0];
  std::optional<StringRef> boolOp;
  if (inst.mods.size() > 1 &&
      (inst.mods[1] == "and" || inst.mods[1] == "or" || inst.mods[1] == "xor"))
    boolOp = inst.mods[1];
  size_t n = inst.operands.size();
  if (n != (boolOp ? 4u : 3u))
    return expectOperands(inst, boolOp ? 4 : 3);
  Value a = read(inst.operands[1], st->type),
        c = read(inst.operands[2], st->type);
  if (!a || !c)
    return failure();
  Value cmpResult;
  if (st->isFloat) {
    using P = arith::CmpFPredicate;
    auto pred = llvm::StringSwitch<std::optional<P>>(cmp)
                    .Case("eq", P::OEQ)
                    .Case("ne", P::ONE)
                    .Case("lt", P::OLT)
                    .Case("le", P::OLE)
                    .Case("gt", P::OGT)
                    .Case("ge", P::OGE)
                    .Case("equ", P::UEQ)
                    .Case("neu", P::UNE)
                    .Case("ltu", P::ULT)
                    .Case("leu", P::ULE)
                    .Case("gtu", P::UGT)
                    .Case("geu", P::UGE)
                    .Case("num", P::ORD)
                    .Case("nan", P::UNO)
                    .Default(std::nullopt);
    if (!pred)
      return error(inst.loc, "unknown float comparison '." + cmp + "'");
    if (inst.has("ftz")) {
      a = make<FlushOp>(a);
      c = make<FlushOp>(c);
    }
    cmpResult = checked(make<arith::CmpFOp>(*pred, a, c));
    if (!cmpResult)
      return failure();
  } else {
    using P = arith::CmpIPredicate;
    bool s = st->isSigned;
    auto pred = llvm::StringSwitch<std::optional<P>>(cmp)
                    .Case("eq", P::eq)
                    .Case("ne", P::ne)
                    .Case("lt", s ? P::slt : P::ult)
                    .Case("le", s ? P::sle : P::ule)
                    .Case("gt", s ? P::sgt : P::ugt)
                    .Case("ge", s ? P::sge : P::uge)
                    .Case("lo", P::ult)
                    .Case("ls", P::ule)
                    .Case("hi", P::ugt)
                    .Case("hs", P::uge)
                    .Default(std::nullopt);
    if (!pred)
      return error(inst.loc, "unknown integer comparison '." + cmp + "'");
    cmpResult = make<arith::CmpIOp>(*pred, a, c);
  }
  // Per-lane results: scalars give one, x2 types give two (low half first).
  SmallVector<Value, 2> lanes;
  if (isa<VectorType>(cmpResult.getType())) {
    auto parts = UnpackOp::create(
        b, curLoc, TypeRange{b.getI1Type(), b.getI1Type()}, cmpResult);
    lanes.append(parts.getResults().begin(), parts.getResults().end());
  } else {
    lanes.push_back(cmpResult);
  }
  Value boolIn;
  if (boolOp) {
    boolIn = read(inst.operands[3], b.getI1Type());
    if (!boolIn)
      return failure();
  }
  auto combine = [&](Value v) -> Value {
    if (!boolOp)
      return v;
    if (*boolOp == "and")
      return make<arith::AndIOp>(v, boolIn);
    if (*boolOp == "or")
      return make<arith::OrIOp>(v, boolIn);
    return make<arith::XOrIOp>(v, boolIn);
  };
  auto i1True = [&] { return constInt(b.getI1Type(), 1); };
  const Operand &dst = inst.operands[0];
  if (!isSet) {
    if (lanes.size() == 2) {
      if (dst.kind != OK::Pair)
        return error(dst.loc, "x2 comparisons write a pair 'p|q'");
      if (failed(write(dst.elems[0], combine(lanes[0]))))
        return failure();
      return write(dst.elems[1], combine(lanes[1]));
    }
    if (dst.kind == OK::Pair) {
      if (failed(write(dst.elems[0], combine(lanes[0]))))
        return failure();
      Value notR = make<arith::XOrIOp>(lanes[0], i1True());
      return write(dst.elems[1], combine(notR));
    }
    return write(dst, combine(lanes[0]));
  }
  // set: true is all ones for integers and 1.0 for f32; x2 per half.
  Type elem = dt->type;
  Type laneType = elem;
  if (auto vt = dyn_cast<VectorType>(elem))
    laneType = vt.getElementType();
  else if (lanes.size() == 2)
    laneType = intType(widthOf(elem) / 2); // u32 result of an x2 compare
  auto materialize = [&](Value p) -> Value {
    if (isa<FloatType>(laneType)) {
      return make<arith::SelectOp>(p, constFloat(laneType, 1.0),
                                   constFloat(laneType, 0.0));
    }
    return make<arith::SelectOp>(p, constInt(laneType, -1),
                                 constInt(laneType, 0));
  };
  if (lanes.size() == 2) {
    Value lo = materialize(combine(lanes[0]));
    Value hi = materialize(combine(lanes[1]));
    Value packed = make<PackOp>(intType(widthOf(elem)), ValueRange{lo, hi});
    return write(dst, packed);
  }
  return write(dst, materialize(combine(lanes[0])));
}
