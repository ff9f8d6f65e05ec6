//===- ImportBits.cpp - PTX bit and video instructions ----------*- C++ -*-===//
//
// popc, clz, brev, bfind, bfe, bfi, prmt, lop3, shf, bmsk, mul24/mad24,
// sad, dp4a/dp2a, the scalar video shifts vshl/vshr and the SIMD video
// instructions vadd2 ... vmax4.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::ptx;
using llvm::StringRef;
using OK = Operand::Kind;

LogicalResult Importer::emitBits(Instruction &inst, Opcode op) {
  auto t = instrType(inst);
  if (!t && op != Opcode::Prmt && op != Opcode::Lop3 && op != Opcode::Bmsk)
    return error(inst.loc, "'" + inst.opcode + "' needs a type");
  if (t && (t->isFloat || !isa<IntegerType>(t->type)))
    return error(inst.loc, "'" + inst.opcode + "' needs an integer type");
  Type i32 = intType(32);
  Type ty = t ? t->type : i32;
  Signedness sign = t && t->isSigned ? Signedness::s : Signedness::u;
  auto src = [&](unsigned i, Type tt) { return read(inst.operands[i], tt); };
  Value r;
  if (op == Opcode::Popc || op == Opcode::Clz || op == Opcode::Brev) {
    if (failed(expectOperands(inst, 2)))
      return failure();
    Value a = src(1, ty);
    if (!a)
      return failure();
    if (op == Opcode::Brev) {
      r = make<BrevOp>(a);
    } else {
      r = op == Opcode::Popc ? Value(make<math::CtPopOp>(a))
                             : Value(make<math::CountLeadingZerosOp>(a));
      r = coerce(r, i32);
    }
  } else if (op == Opcode::Bfind) {
    if (failed(expectOperands(inst, 2)))
      return failure();
    Value a = src(1, ty);
    if (!a)
      return failure();
    r = make<BfindOp>(sign, a, inst.has("shiftamt"));
  } else if (op == Opcode::Bfe) {
    if (failed(expectOperands(inst, 4)))
      return failure();
    Value a = src(1, ty), p = src(2, i32), l = src(3, i32);
    if (!a || !p || !l)
      return failure();
    r = make<BfeOp>(sign, a, p, l);
  } else if (op == Opcode::Bfi) {
    if (failed(expectOperands(inst, 5)))
      return failure();
    Value a = src(1, ty), c = src(2, ty), p = src(3, i32), l = src(4, i32);
    if (!a || !c || !p || !l)
      return failure();
    r = make<BfiOp>(a, c, p, l);
  } else if (op == Opcode::Prmt) {
    if (failed(expectOperands(inst, 4)))
      return failure();
    PrmtMode mode = PrmtMode::generic;
    for (StringRef m : inst.mods)
      if (auto pm = symbolizePrmtMode(m))
        mode = *pm;
    Value a = src(1, i32), c = src(2, i32), s = src(3, i32);
    if (!a || !c || !s)
      return failure();
    r = make<PrmtOp>(mode, a, c, s);
  } else if (op == Opcode::Lop3) {
    if (failed(expectOperands(inst, 5)))
      return failure();
    if (inst.operands[4].kind != OK::Imm)
      return error(inst.operands[4].loc, "lop3 needs an immediate LUT");
    Value a = src(1, i32), c = src(2, i32), d = src(3, i32);
    if (!a || !c || !d)
      return failure();
    r = make<Lop3Op>(a, c, d, b.getI32IntegerAttr(inst.operands[4].imm & 0xff));
  } else if (op == Opcode::Shf) {
    if (failed(expectOperands(inst, 4)))
      return failure();
    ShiftDir dir = inst.has("l") ? ShiftDir::l : ShiftDir::r;
    ShiftWrap mode = inst.has("wrap") ? ShiftWrap::wrap : ShiftWrap::clamp;
    Value a = src(1, i32), c = src(2, i32), n = src(3, i32);
    if (!a || !c || !n)
      return failure();
    r = make<ShfOp>(dir, mode, a, c, n);
  } else if (op == Opcode::Bmsk) {
    if (failed(expectOperands(inst, 3)))
      return failure();
    ShiftWrap mode = inst.has("wrap") ? ShiftWrap::wrap : ShiftWrap::clamp;
    Value p = src(1, i32), l = src(2, i32);
    if (!p || !l)
      return failure();
    r = make<BmskOp>(mode, p, l);
  } else if (op == Opcode::Mul24 || op == Opcode::Mad24) {
    bool mad = op == Opcode::Mad24;
    if (failed(expectOperands(inst, mad ? 4 : 3)))
      return failure();
    Value a = src(1, i32), c = src(2, i32);
    if (!a || !c)
      return failure();
    HalfSel half = inst.has("hi") ? HalfSel::hi : HalfSel::lo;
    r = make<Mul24Op>(sign, half, a, c);
    if (mad) {
      Value d = src(3, i32);
      if (!d)
        return failure();
      if (inst.has("sat")) {
        if (half != HalfSel::hi || sign != Signedness::s)
          return error(inst.loc, "'.sat' is only defined for mad24.hi.s32");
        r = saturatingAddS32(r, d);
      } else {
        r = make<arith::AddIOp>(r, d);
      }
    }
  } else if (op == Opcode::Sad) {
    if (failed(expectOperands(inst, 4)))
      return failure();
    Value a = src(1, ty), c = src(2, ty), d = src(3, ty);
    if (!a || !c || !d)
      return failure();
    r = make<SadOp>(sign, a, c, d);
  } else if (op == Opcode::Dp4a || op == Opcode::Dp2a) {
    if (failed(expectOperands(inst, 4)))
      return failure();
    auto at = instrType(inst, 0), bt = instrType(inst, 1);
    if (!at || !bt)
      return error(inst.loc, "'" + inst.opcode + "' needs two types");
    Value a = src(1, i32), c = src(2, i32), d = src(3, i32);
    if (!a || !c || !d)
      return failure();
    Signedness as = at->isSigned ? Signedness::s : Signedness::u;
    Signedness bs = bt->isSigned ? Signedness::s : Signedness::u;
    if (op == Opcode::Dp4a)
      r = make<Dp4aOp>(as, bs, a, c, d);
    else
      r = make<Dp2aOp>(as, bs, inst.has("hi") ? HalfSel::hi : HalfSel::lo, a, c,
                       d);
  } else {
    return unsupported(inst);
  }
  return write(inst.operands[0], r);
}

/// vshl/vshr.dtype.atype.u32{.sat}.mode{.op2} d, a, b{, c}: the scalar video
/// shifts without byte/half selectors, decomposed into arith ops on 64 bits:
/// the amount is clamped to 32 (`.clamp`) or taken mod 32 (`.wrap`), the
/// shifted value saturates to dtype with `.sat` (else it is truncated), then
/// `.add`/`.min`/`.max` combine it with c.
LogicalResult Importer::emitVideoShift(Instruction &inst, Opcode op) {
  auto dt = instrType(inst, 0), at = instrType(inst, 1),
       bt = instrType(inst, 2);
  if (!dt || !at || !bt || !dt->type.isInteger(32) || !at->type.isInteger(32) ||
      !bt->type.isInteger(32) || bt->isSigned)
    return error(inst.loc, "'" + inst.opcode +
                               "' needs .u32/.s32 dtype and atype and a .u32 "
                               "shift type");
  bool clamp = inst.has("clamp");
  if (!clamp && !inst.has("wrap"))
    return error(inst.loc, "'" + inst.opcode + "' needs '.clamp' or '.wrap'");
  std::optional<StringRef> op2;
  for (StringRef m : {"add", "min", "max"})
    if (inst.has(m))
      op2 = m;
  if (failed(expectOperands(inst, op2 ? 4 : 3)))
    return failure();
  for (const Operand &o : inst.operands)
    if (o.name.contains('.'))
      return error(o.loc, "video byte/half selectors are not supported yet");
  Type i32 = intType(32), wide = intType(64);
  Value a = read(inst.operands[1], i32), n = read(inst.operands[2], i32);
  if (!a || !n)
    return failure();
  n = clamp ? Value(make<arith::MinUIOp>(n, constInt(i32, 32)))
            : Value(make<arith::AndIOp>(n, constInt(i32, 31)));
  // 32-bit values shifted by up to 32: 64 bits hold every result, and with
  // `.sat` a 128-bit intermediate keeps the signed clamp exact.
  if (inst.has("sat"))
    wide = intType(128);
  Value wa = at->isSigned ? Value(make<arith::ExtSIOp>(wide, a))
                          : Value(make<arith::ExtUIOp>(wide, a));
  Value wn = make<arith::ExtUIOp>(wide, n);
  Value t;
  if (op == Opcode::Vshl)
    t = make<arith::ShLIOp>(wa, wn);
  else if (at->isSigned)
    t = make<arith::ShRSIOp>(wa, wn);
  else
    t = make<arith::ShRUIOp>(wa, wn);
  if (inst.has("sat")) {
    int64_t lo = dt->isSigned ? INT32_MIN : 0;
    int64_t hi = dt->isSigned ? INT32_MAX : UINT32_MAX;
    t = make<arith::MaxSIOp>(t, constInt(wide, lo));
    t = make<arith::MinSIOp>(t, constInt(wide, hi));
  }
  Value r = make<arith::TruncIOp>(i32, t);
  if (op2) {
    Value c = read(inst.operands[3], i32);
    if (!c)
      return failure();
    if (*op2 == "add")
      r = make<arith::AddIOp>(r, c);
    else if (*op2 == "min")
      r = dt->isSigned ? Value(make<arith::MinSIOp>(r, c))
                       : Value(make<arith::MinUIOp>(r, c));
    else
      r = dt->isSigned ? Value(make<arith::MaxSIOp>(r, c))
                       : Value(make<arith::MaxUIOp>(r, c));
  }
  return write(inst.operands[0], r);
}

/// vop2/vop4.dtype.atype.btype{.sat|.add} d{.mask}, a{.asel}, b{.bsel}, c:
/// the SIMD video instructions, decomposed into arith ops on i32. Each of
/// the 2 halves (4 bytes) of a and b is picked by the selectors from the
/// 4 halves (8 bytes) of b:a (defaults .h10/.h32, .b3210/.b7654) and
/// extended by its operand's type; the element results are optionally
/// clamped to dtype's element range, then either merged into c under the
/// mask (elements outside it are c's) or, with `.add`, summed into c.
LogicalResult Importer::emitVideoSimd(Instruction &inst, Opcode op) {
  bool two = op == Opcode::Vadd2 || op == Opcode::Vsub2 ||
             op == Opcode::Vavrg2 || op == Opcode::Vabsdiff2 ||
             op == Opcode::Vmin2 || op == Opcode::Vmax2;
  unsigned n = two ? 2 : 4, width = two ? 16 : 8;
  char letter = two ? 'h' : 'b';
  auto dt = instrType(inst, 0), at = instrType(inst, 1),
       bt = instrType(inst, 2);
  if (!dt || !at || !bt || !dt->type.isInteger(32) || !at->type.isInteger(32) ||
      !bt->type.isInteger(32))
    return error(inst.loc, "'" + inst.opcode +
                               "' needs .u32/.s32 dtype, atype and btype");
  bool accumulate = inst.has("add"), sat = inst.has("sat");
  if (accumulate && sat)
    return error(inst.loc,
                 "'" + inst.opcode + "' takes '.sat' or '.add', not both");
  if (failed(expectOperands(inst, 4)))
    return failure();
  // The selector or mask after an operand's register: `%r1.b3210` gives
  // the element indices {0, 1, 2, 3} (element 0 is the last digit).
  auto selector = [&](unsigned i, unsigned maxIndex,
                      SmallVector<unsigned, 4> &digits) -> FailureOr<Operand> {
    Operand o = inst.operands[i];
    size_t dot = o.name.find('.');
    if (o.kind != OK::Reg || dot == StringRef::npos)
      return o;
    StringRef sel = o.name.substr(dot + 1);
    o.name = o.name.substr(0, dot);
    digits.clear();
    if (sel.size() < 2 || sel[0] != letter || sel.size() - 1 > n)
      return error(inst.operands[i].loc,
                   "bad selector '." + sel + "' for '" + inst.opcode + "'");
    for (char ch : llvm::reverse(sel.drop_front())) {
      if (ch < '0' || unsigned(ch - '0') > maxIndex)
        return error(inst.operands[i].loc,
                     "bad selector '." + sel + "' for '" + inst.opcode + "'");
      digits.push_back(ch - '0');
    }
    return o;
  };
  SmallVector<unsigned, 4> aSel, bSel, mask;
  for (unsigned i = 0; i < n; ++i) {
    aSel.push_back(i);
    bSel.push_back(n + i);
  }
  FailureOr<Operand> dOp = selector(0, n - 1, mask);
  FailureOr<Operand> aOp = selector(1, 2 * n - 1, aSel);
  FailureOr<Operand> bOp = selector(2, 2 * n - 1, bSel);
  if (failed(dOp) || failed(aOp) || failed(bOp))
    return failure();
  if (aSel.size() != n || bSel.size() != n)
    return error(inst.operands[aSel.size() != n ? 1 : 2].loc,
                 "'" + inst.opcode + "' selectors name " + Twine(n) +
                     " elements");
  unsigned maskBits = mask.empty() ? (1u << n) - 1 : 0;
  for (unsigned m : mask) {
    if (maskBits & (1u << m))
      return error(inst.operands[0].loc,
                   "repeated element in the mask of '" + inst.opcode + "'");
    maskBits |= 1u << m;
  }
  Type i32 = intType(32), i64 = intType(64), elem = intType(width);
  Value a = read(*aOp, i32), bv = read(*bOp, i32),
        c = read(inst.operands[3], i32);
  if (!a || !bv || !c)
    return failure();
  // b:a as 64 bits, from which the selectors pick elements.
  Value pair = make<arith::OrIOp>(
      make<arith::ShLIOp>(make<arith::ExtUIOp>(i64, bv), constInt(i64, 32)),
      make<arith::ExtUIOp>(i64, a));
  auto element = [&](unsigned index, bool isSigned) -> Value {
    Value e = make<arith::TruncIOp>(
        elem, make<arith::ShRUIOp>(pair, constInt(i64, index * width)));
    return isSigned ? Value(make<arith::ExtSIOp>(i32, e))
                    : Value(make<arith::ExtUIOp>(i32, e));
  };
  int64_t lo = dt->isSigned ? -(int64_t(1) << (width - 1)) : 0;
  int64_t hi = dt->isSigned ? (int64_t(1) << (width - 1)) - 1
                            : (int64_t(1) << width) - 1;
  int64_t elemMask = (int64_t(1) << width) - 1;
  Value result = accumulate ? c : constInt(i32, 0);
  for (unsigned i = 0; i < n; ++i) {
    Value va = element(aSel[i], at->isSigned),
          vb = element(bSel[i], bt->isSigned);
    // Either operand may be signed: compare as the wider signed values
    // (every extended element fits in i32 with room to spare).
    Value t;
    switch (op) {
    case Opcode::Vadd2:
    case Opcode::Vadd4:
      t = make<arith::AddIOp>(va, vb);
      break;
    case Opcode::Vsub2:
    case Opcode::Vsub4:
      t = make<arith::SubIOp>(va, vb);
      break;
    case Opcode::Vavrg2:
    case Opcode::Vavrg4: {
      // (s + 1) >> 1 for s >= 0, s >> 1 below.
      Value s = make<arith::AddIOp>(va, vb);
      Value up = make<arith::ShRSIOp>(make<arith::AddIOp>(s, constInt(i32, 1)),
                                      constInt(i32, 1));
      Value down = make<arith::ShRSIOp>(s, constInt(i32, 1));
      Value nonNeg =
          make<arith::CmpIOp>(arith::CmpIPredicate::sge, s, constInt(i32, 0));
      t = make<arith::SelectOp>(nonNeg, up, down);
      break;
    }
    case Opcode::Vabsdiff2:
    case Opcode::Vabsdiff4: {
      Value d = make<arith::SubIOp>(va, vb);
      t = make<arith::MaxSIOp>(d, make<arith::SubIOp>(constInt(i32, 0), d));
      break;
    }
    case Opcode::Vmin2:
    case Opcode::Vmin4:
      t = make<arith::MinSIOp>(va, vb);
      break;
    default:
      t = make<arith::MaxSIOp>(va, vb);
      break;
    }
    if (sat) {
      t = make<arith::MaxSIOp>(t, constInt(i32, lo));
      t = make<arith::MinSIOp>(t, constInt(i32, hi));
    }
    bool selected = maskBits & (1u << i);
    if (accumulate) {
      if (selected)
        result = make<arith::AddIOp>(result, t);
      continue;
    }
    Value field;
    if (selected)
      field =
          make<arith::ShLIOp>(make<arith::AndIOp>(t, constInt(i32, elemMask)),
                              constInt(i32, i * width));
    else
      field = make<arith::AndIOp>(
          c, constInt(i32, int32_t(uint32_t(elemMask) << (i * width))));
    result = make<arith::OrIOp>(result, field);
  }
  return write(*dOp, result);
}
