//===- ExpandArith.cpp - Expand Wooly computation ops -------*- C++ -*-===//
//
// Rewrites Wooly's pure computation ops into arith/math/vector with PTX's
// exact semantics, and into calls of `__wooly_*` runtime helpers
// (lib/Runtime/CPU/FloatHelpers.cpp) where no upstream op rounds as PTX
// does: directed rounding, narrowing to f16/bf16/fp8 other than f32->f16 and
// f64->f32 round-to-nearest, 64-bit integer to narrow float, f16/bf16 fma.
//
// Known inexactness, all within PTX's documented error bounds: the `.approx`
// forms (div.approx, div.full, rcp/sqrt.approx, sin/cos/lg2/ex2/rsqrt/tanh)
// are computed with the host's correctly rounded or libm functions, not with
// the GPU's hardware approximations. The ops standing in for div/rcp/sqrt
// approximations carry `kApproxAttr` (Passes.h), so that the GPU lowerings
// can emit the GPU's instructions; the others are math ops of their own.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Conversion/Passes.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/APFloat.h"

namespace mlir::wooly {
#define GEN_PASS_DEF_WOOLYEXPANDARITH
#include "Wooly/Conversion/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;

namespace {

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

/// Total bit width of a scalar or vector type (0 if none).
unsigned widthOf(Type t) {
  if (t.isIntOrFloat())
    return t.getIntOrFloatBitWidth();
  if (auto v = dyn_cast<VectorType>(t))
    if (v.getRank() == 1 && v.getElementType().isIntOrFloat())
      return v.getNumElements() * v.getElementType().getIntOrFloatBitWidth();
  return 0;
}

/// The integer type of the same shape as `t` (float -> int of its width).
Type intLike(Type t) {
  Type elem = getElementTypeOrSelf(t);
  Type ie = IntegerType::get(t.getContext(), elem.getIntOrFloatBitWidth());
  if (auto v = dyn_cast<VectorType>(t))
    return VectorType::get(v.getShape(), ie);
  return ie;
}

/// A small IR builder for scalar-or-vector arithmetic at one location.
struct Emitter {
  OpBuilder &b;
  Location loc;

  Value intC(Type t, const APInt &v) {
    Type elem = getElementTypeOrSelf(t);
    auto attr = IntegerAttr::get(elem, v);
    if (auto vt = dyn_cast<VectorType>(t))
      return arith::ConstantOp::create(b, loc,
                                       DenseElementsAttr::get(vt, attr));
    return arith::ConstantOp::create(b, loc, attr);
  }
  Value intC(Type t, int64_t v) {
    unsigned w = getElementTypeOrSelf(t).getIntOrFloatBitWidth();
    return intC(t, APInt(w, static_cast<uint64_t>(v), /*isSigned=*/true,
                         /*implicitTrunc=*/true));
  }
  /// A float constant (scalar or splat) with the given bit pattern.
  Value fltBits(Type t, uint64_t bits) {
    auto ft = cast<FloatType>(getElementTypeOrSelf(t));
    APFloat v(ft.getFloatSemantics(), APInt(ft.getWidth(), bits));
    auto attr = FloatAttr::get(ft, v);
    if (auto vt = dyn_cast<VectorType>(t))
      return arith::ConstantOp::create(b, loc,
                                       DenseElementsAttr::get(vt, attr));
    return arith::ConstantOp::create(b, loc, attr);
  }
  Value fltC(Type t, double v) {
    auto ft = cast<FloatType>(getElementTypeOrSelf(t));
    APFloat f(v);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return fltBits(t, f.bitcastToAPInt().getZExtValue());
  }

  Value cmpI(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value cmpF(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  Value sel(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value andI(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value orI(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value xorI(Value x, Value y) { return arith::XOrIOp::create(b, loc, x, y); }
  Value notI(Value x) { return xorI(x, intC(x.getType(), -1)); }
  Value shl(Value x, Value n) { return arith::ShLIOp::create(b, loc, x, n); }
  Value lshr(Value x, Value n) { return arith::ShRUIOp::create(b, loc, x, n); }
  Value ashr(Value x, Value n) { return arith::ShRSIOp::create(b, loc, x, n); }
  Value shl(Value x, int64_t n) { return shl(x, intC(x.getType(), n)); }
  Value lshr(Value x, int64_t n) { return lshr(x, intC(x.getType(), n)); }
  Value ashr(Value x, int64_t n) { return ashr(x, intC(x.getType(), n)); }
  Value umin(Value x, Value y) { return arith::MinUIOp::create(b, loc, x, y); }

  /// Integer resize: truncation, or extension (signed or not).
  Value resize(Value v, Type t, bool isSigned = false) {
    unsigned from = widthOf(v.getType()), to = widthOf(t);
    if (from == to)
      return v;
    if (from > to)
      return arith::TruncIOp::create(b, loc, t, v);
    if (isSigned)
      return arith::ExtSIOp::create(b, loc, t, v);
    return arith::ExtUIOp::create(b, loc, t, v);
  }

  /// `x << n` that gives 0 for n >= width (n unsigned, same type as x).
  Value safeShl(Value x, Value n) {
    unsigned w = widthOf(x.getType());
    Value big = cmpI(arith::CmpIPredicate::uge, n, intC(n.getType(), w));
    Value r = shl(x, sel(big, intC(n.getType(), 0), n));
    return sel(big, intC(x.getType(), 0), r);
  }
  /// `x >>u n` that gives 0 for n >= width.
  Value safeLshr(Value x, Value n) {
    unsigned w = widthOf(x.getType());
    Value big = cmpI(arith::CmpIPredicate::uge, n, intC(n.getType(), w));
    Value r = lshr(x, sel(big, intC(n.getType(), 0), n));
    return sel(big, intC(x.getType(), 0), r);
  }

  /// Reinterprets the bits of `v` as type `t` (same total width): scalars,
  /// rank-1 vectors and any mix of the two.
  Value reinterpret(Value v, Type t) {
    Type from = v.getType();
    if (from == t)
      return v;
    auto fv = dyn_cast<VectorType>(from);
    auto tv = dyn_cast<VectorType>(t);
    if (!fv && !tv)
      return arith::BitcastOp::create(b, loc, t, v);
    if (fv && tv &&
        fv.getElementType().getIntOrFloatBitWidth() ==
            tv.getElementType().getIntOrFloatBitWidth() &&
        fv.getShape() == tv.getShape())
      return arith::BitcastOp::create(b, loc, t, v);
    // Through a one-element vector of the integer of the whole width.
    Type whole = IntegerType::get(t.getContext(), widthOf(t));
    auto one = VectorType::get({1}, whole);
    Value asOne;
    if (fv) {
      asOne = vector::BitCastOp::create(b, loc, one, v);
    } else {
      Value i = reinterpret(v, whole);
      asOne = vector::BroadcastOp::create(b, loc, one, i);
    }
    if (tv)
      return vector::BitCastOp::create(b, loc, tv, asOne);
    Value i = vector::ExtractOp::create(b, loc, asOne, ArrayRef<int64_t>{0});
    return reinterpret(i, t);
  }

  // Float classification on the bits (scalar or vector).
  Value bitsOf(Value f) { return reinterpret(f, intLike(f.getType())); }
  Value isNaN(Value f) { return cmpF(arith::CmpFPredicate::UNO, f, f); }
  Value isInf(Value f) {
    Value a = math::AbsFOp::create(b, loc, f);
    return cmpF(arith::CmpFPredicate::OEQ, a,
                fltBits(f.getType(), infBits(f.getType())));
  }
  static uint64_t infBits(Type t) {
    auto ft = cast<FloatType>(getElementTypeOrSelf(t));
    return APFloat::getInf(ft.getFloatSemantics())
        .bitcastToAPInt()
        .getZExtValue();
  }
  static uint64_t maxBits(Type t) {
    auto ft = cast<FloatType>(getElementTypeOrSelf(t));
    return APFloat::getLargest(ft.getFloatSemantics())
        .bitcastToAPInt()
        .getZExtValue();
  }
  /// PTX's canonical NaN: all ones except the sign bit.
  Value canonicalNaN(Type t) {
    unsigned w = getElementTypeOrSelf(t).getIntOrFloatBitWidth();
    return fltBits(t, APInt::getSignedMaxValue(w).getZExtValue());
  }

  /// The NaN that narrowing the f64 NaN `x` to float type `dst` gives on
  /// NVIDIA GPUs (measured on an H100 for cvt.rn.{f32,f16,bf16}.f64): the
  /// sign, the quiet bit and the leading bits of the payload are kept, as
  /// in an IEEE conversion. (Narrowing an f32 NaN gives the canonical NaN.)
  Value narrowedNaN(Value x, Type dst) {
    auto ft = cast<FloatType>(dst);
    unsigned w = ft.getWidth(), m = ft.getFPMantissaWidth() - 1;
    Type i64 = b.getI64Type(), it = b.getIntegerType(w);
    Value bits = reinterpret(x, i64);
    Value sign = resize(lshr(bits, 63), it);
    Value payload = resize(
        lshr(andI(bits, intC(i64, (1ull << 52) - 1)), int64_t(52 - m)), it);
    uint64_t expAndQuiet =
        (((1ull << (w - 1 - m)) - 1) << m) | (1ull << (m - 1));
    Value r =
        orI(orI(shl(sign, int64_t(w - 1)), intC(it, expAndQuiet)), payload);
    return reinterpret(r, dst);
  }

  /// Flushes a subnormal to sign-preserving zero.
  Value flush(Value f) {
    Type it = intLike(f.getType());
    auto ft = cast<FloatType>(getElementTypeOrSelf(f.getType()));
    unsigned w = ft.getWidth();
    APInt expMask = APFloat::getInf(ft.getFloatSemantics()).bitcastToAPInt();
    APInt signMask = APInt::getSignMask(w);
    Value bits = bitsOf(f);
    Value exp = andI(bits, intC(it, expMask));
    Value isSub = cmpI(arith::CmpIPredicate::eq, exp, intC(it, 0));
    Value r = sel(isSub, andI(bits, intC(it, signMask)), bits);
    return reinterpret(r, f.getType());
  }
  /// `.sat`: clamps to [+0, 1]; NaN and -0 give +0.
  Value saturate(Value f) {
    Type t = f.getType();
    Value zero = fltC(t, 0.0), one = fltC(t, 1.0);
    Value r = sel(cmpF(arith::CmpFPredicate::OGT, f, zero), f, zero);
    return sel(cmpF(arith::CmpFPredicate::OGT, f, one), one, r);
  }
  /// `.relu`: negative values (and -0) give +0, NaN the canonical NaN.
  Value relu(Value f) {
    Type t = f.getType();
    Value zero = fltC(t, 0.0);
    Value neg = cmpI(arith::CmpIPredicate::slt, bitsOf(f), intC(intLike(t), 0));
    Value r = sel(neg, zero, f);
    return sel(isNaN(f), canonicalNaN(t), r);
  }
};

/// Whether `.ftz` applies to values of this type: f32 and f16 (scalar or
/// packed) flush; f64 never does; bf16 has no subnormal handling modifier.
bool flushes(Type t) {
  Type e = getElementTypeOrSelf(t);
  return e.isF32() || e.isF16();
}

/// Applies `fn` to each element of vectors (or to scalars).
Value mapElements(Emitter &e, ValueRange vs,
                  function_ref<Value(ValueRange)> fn) {
  auto vt = dyn_cast<VectorType>(vs.front().getType());
  if (!vt)
    return fn(vs);
  SmallVector<Value> parts;
  for (int64_t i = 0; i < vt.getNumElements(); ++i) {
    SmallVector<Value> args;
    for (Value v : vs)
      args.push_back(
          vector::ExtractOp::create(e.b, e.loc, v, ArrayRef<int64_t>{i}));
    parts.push_back(fn(args));
  }
  Type rt = VectorType::get(vt.getShape(), parts.front().getType());
  return vector::FromElementsOp::create(e.b, e.loc, rt, parts);
}

/// Calls runtime helper `name`, declaring it as a private function of the
/// enclosing module on first use.
Value callHelper(Emitter &e, Operation *at, StringRef name, Type result,
                 ValueRange args) {
  auto module = at->getParentOfType<ModuleOp>();
  auto fn = module.lookupSymbol<func::FuncOp>(name);
  if (!fn) {
    OpBuilder::InsertionGuard g(e.b);
    e.b.setInsertionPointToStart(module.getBody());
    SmallVector<Type> argTypes(args.getTypes());
    fn = func::FuncOp::create(e.b, module.getLoc(), name,
                              e.b.getFunctionType(argTypes, {result}));
    fn.setPrivate();
  }
  return func::CallOp::create(e.b, e.loc, fn, args).getResult(0);
}

/// Calls a helper on a 16-bit float passed/returned as the low bits of an
/// i32 (see FloatHelpers.h).
Value narrowResult(Emitter &e, Value i32, Type floatType) {
  Type it = e.b.getIntegerType(floatType.getIntOrFloatBitWidth());
  return e.reinterpret(e.resize(i32, it), floatType);
}
Value narrowArg(Emitter &e, Value f) {
  Value bits = e.bitsOf(f);
  return e.resize(bits, e.b.getI32Type());
}

StringRef modeName(RoundingMode m) { return stringifyRoundingMode(m); }

bool isDirected(std::optional<RoundingMode> m) {
  return m && (*m == RoundingMode::rz || *m == RoundingMode::rm ||
               *m == RoundingMode::rp);
}

StringRef floatSuffix(Type t) {
  Type e = getElementTypeOrSelf(t);
  if (e.isF16())
    return "f16";
  if (e.isBF16())
    return "bf16";
  if (e.isF32())
    return "f32";
  return "f64";
}

/// The pattern context: a rewriter and whether failures are reported as
/// errors (the pass's final diagnosis) or as match failures.
struct Ctx {
  PatternRewriter &rw;
  bool emitErrors;
  LogicalResult fail(Operation *op, const Twine &msg) const {
    if (emitErrors)
      return op->emitOpError(msg);
    return rw.notifyMatchFailure(op, msg);
  }
};

//===----------------------------------------------------------------------===//
// Bit reinterpretation
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Value>> expand(PackOp op, Emitter &e, const Ctx &) {
  Type rt = op.getType();
  // A vector built from its elements.
  if (auto vt = dyn_cast<VectorType>(rt)) {
    if (vt.getNumElements() == (int64_t)op.getInputs().size() &&
        llvm::all_of(op.getInputs().getTypes(),
                     [&](Type t) { return t == vt.getElementType(); }))
      return SmallVector<Value>{
          vector::FromElementsOp::create(e.b, e.loc, vt, op.getInputs())};
  }
  unsigned total = widthOf(rt), offset = 0;
  Type whole = e.b.getIntegerType(total);
  Value acc = e.intC(whole, 0);
  for (Value in : op.getInputs()) {
    unsigned w = widthOf(in.getType());
    Value bits = e.reinterpret(in, e.b.getIntegerType(w));
    Value ext = e.resize(bits, whole);
    acc = e.orI(acc, offset ? e.shl(ext, offset) : ext);
    offset += w;
  }
  return SmallVector<Value>{e.reinterpret(acc, rt)};
}

FailureOr<SmallVector<Value>> expand(UnpackOp op, Emitter &e, const Ctx &) {
  Type in = op.getInput().getType();
  SmallVector<Value> results;
  if (auto vt = dyn_cast<VectorType>(in)) {
    if (vt.getNumElements() == (int64_t)op.getNumResults() &&
        llvm::all_of(op.getResultTypes(),
                     [&](Type t) { return t == vt.getElementType(); })) {
      for (int64_t i = 0; i < vt.getNumElements(); ++i)
        results.push_back(vector::ExtractOp::create(e.b, e.loc, op.getInput(),
                                                    ArrayRef<int64_t>{i}));
      return results;
    }
  }
  unsigned total = widthOf(in), offset = 0;
  Value bits = e.reinterpret(op.getInput(), e.b.getIntegerType(total));
  for (Type t : op.getResultTypes()) {
    unsigned w = widthOf(t);
    Value part = offset ? e.lshr(bits, offset) : bits;
    part = e.resize(part, e.b.getIntegerType(w));
    results.push_back(e.reinterpret(part, t));
    offset += w;
  }
  return results;
}

FailureOr<SmallVector<Value>> expand(BitcastOp op, Emitter &e, const Ctx &) {
  return SmallVector<Value>{e.reinterpret(op.getInput(), op.getType())};
}

/// The value as `n` bytes (vector<nxi8>), i1 taking a whole byte.
Value toBytes(Emitter &e, Value v, unsigned n) {
  unsigned w = widthOf(v.getType());
  Value bits = e.reinterpret(v, e.b.getIntegerType(w));
  if (w < 8 * n)
    bits = e.resize(bits, e.b.getIntegerType(8 * n));
  return e.reinterpret(bits, VectorType::get({n}, e.b.getI8Type()));
}

FailureOr<SmallVector<Value>> expand(ExtractBytesOp op, Emitter &e,
                                     const Ctx &ctx) {
  Type rt = op.getType();
  unsigned w = widthOf(rt), n = std::max(w, 8u) / 8;
  int64_t off = op.getOffset();
  Value src = op.getSource();
  auto vt = dyn_cast<VectorType>(src.getType());
  Value bytes;
  if (vt) {
    if (n == vt.getNumElements())
      bytes = src;
    else
      bytes = vector::ExtractStridedSliceOp::create(
          e.b, e.loc, src, ArrayRef<int64_t>{off}, ArrayRef<int64_t>{n},
          ArrayRef<int64_t>{1});
    Value bits = e.reinterpret(bytes, e.b.getIntegerType(8 * n));
    return SmallVector<Value>{
        e.reinterpret(e.resize(bits, e.b.getIntegerType(w)), rt)};
  }
  unsigned total = widthOf(src.getType());
  Value bits = e.reinterpret(src, e.b.getIntegerType(total));
  if (off)
    bits = e.lshr(bits, 8 * off);
  bits = e.resize(bits, e.b.getIntegerType(w));
  return SmallVector<Value>{e.reinterpret(bits, rt)};
}

FailureOr<SmallVector<Value>> expand(InsertBytesOp op, Emitter &e,
                                     const Ctx &) {
  Type dt = op.getDest().getType();
  Value v = op.getValue();
  unsigned w = widthOf(v.getType()), n = std::max(w, 8u) / 8;
  int64_t off = op.getOffset();
  if (auto vt = dyn_cast<VectorType>(dt)) {
    Value bytes = toBytes(e, v, n);
    if (n == vt.getNumElements())
      return SmallVector<Value>{bytes};
    return SmallVector<Value>{vector::InsertStridedSliceOp::create(
        e.b, e.loc, bytes, op.getDest(), ArrayRef<int64_t>{off},
        ArrayRef<int64_t>{1})};
  }
  unsigned total = widthOf(dt);
  Type it = e.b.getIntegerType(total);
  Value dest = e.reinterpret(op.getDest(), it);
  Value bits = e.reinterpret(v, e.b.getIntegerType(w));
  bits = e.resize(bits, it);
  APInt mask = APInt::getBitsSet(total, 8 * off, 8 * off + 8 * n);
  Value r =
      e.orI(e.andI(dest, e.intC(it, ~mask)), off ? e.shl(bits, 8 * off) : bits);
  return SmallVector<Value>{e.reinterpret(r, dt)};
}

//===----------------------------------------------------------------------===//
// Floating point
//===----------------------------------------------------------------------===//

/// Shared tail of the arithmetic ops: `.ftz` on the result, then `.sat`.
Value finish(Emitter &e, Value r, bool ftz, bool sat) {
  if (ftz && flushes(r.getType()))
    r = e.flush(r);
  if (sat)
    r = e.saturate(r);
  return r;
}

Value flushIf(Emitter &e, Value v, bool ftz) {
  return ftz && flushes(v.getType()) ? e.flush(v) : v;
}

enum class BinKind { add, sub, mul };

template <typename OpT>
FailureOr<SmallVector<Value>> expandBinary(OpT op, BinKind kind, Emitter &e,
                                           const Ctx &ctx) {
  Type t = op.getType();
  auto rnd = op.getRnd();
  bool narrow =
      !getElementTypeOrSelf(t).isF32() && !getElementTypeOrSelf(t).isF64();
  if (isDirected(rnd) && narrow)
    return ctx.fail(op, "directed rounding on f16/bf16 is not supported yet");
  Value a = flushIf(e, op.getLhs(), op.getFtz());
  Value b = flushIf(e, op.getRhs(), op.getFtz());
  Value r;
  if (isDirected(rnd)) {
    StringRef name = kind == BinKind::add   ? "fadd"
                     : kind == BinKind::sub ? "fsub"
                                            : "fmul";
    std::string helper =
        ("__wooly_" + name + "_" + modeName(*rnd) + "_" + floatSuffix(t)).str();
    r = callHelper(e, op, helper, t, {a, b});
  } else {
    // Round to nearest: f16/bf16 go through f32 in LLVM, which is exact for
    // a single +, -, * (24 >= 2*11+2 bits). Never contracted.
    if (kind == BinKind::add)
      r = arith::AddFOp::create(e.b, e.loc, a, b);
    else if (kind == BinKind::sub)
      r = arith::SubFOp::create(e.b, e.loc, a, b);
    else
      r = arith::MulFOp::create(e.b, e.loc, a, b);
  }
  return SmallVector<Value>{finish(e, r, op.getFtz(), op.getSat())};
}

FailureOr<SmallVector<Value>> expand(FAddOp op, Emitter &e, const Ctx &c) {
  return expandBinary(op, BinKind::add, e, c);
}
FailureOr<SmallVector<Value>> expand(FSubOp op, Emitter &e, const Ctx &c) {
  return expandBinary(op, BinKind::sub, e, c);
}
FailureOr<SmallVector<Value>> expand(FMulOp op, Emitter &e, const Ctx &c) {
  return expandBinary(op, BinKind::mul, e, c);
}

FailureOr<SmallVector<Value>> expand(FmaOp op, Emitter &e, const Ctx &ctx) {
  Type t = op.getType();
  RoundingMode rnd = op.getRnd();
  if (!isDirected(rnd) && rnd != RoundingMode::rn)
    return ctx.fail(op, "rounding '" + modeName(rnd) + "' is not supported");
  bool ftz = op.getFtz();
  Value a = flushIf(e, op.getA(), ftz), b = flushIf(e, op.getB(), ftz),
        c = flushIf(e, op.getC(), ftz);
  Type elem = getElementTypeOrSelf(t);
  Value r;
  if (elem.isF16() || elem.isBF16()) {
    // f32 would round twice: one rounding to odd in double, then to 16 bits.
    std::string helper =
        ("__wooly_fma_" + modeName(rnd) + "_" + floatSuffix(t)).str();
    r = mapElements(e, ValueRange{a, b, c}, [&](ValueRange s) {
      Value call = callHelper(
          e, op, helper, e.b.getI32Type(),
          {narrowArg(e, s[0]), narrowArg(e, s[1]), narrowArg(e, s[2])});
      return narrowResult(e, call, elem);
    });
  } else if (rnd == RoundingMode::rn) {
    r = math::FmaOp::create(e.b, e.loc, a, b, c);
  } else {
    std::string helper =
        ("__wooly_fma_" + modeName(rnd) + "_" + floatSuffix(t)).str();
    r = callHelper(e, op, helper, t, {a, b, c});
  }
  r = finish(e, r, ftz, op.getSat());
  if (op.getRelu())
    r = e.relu(r);
  return SmallVector<Value>{r};
}

/// Marks `r`'s defining op as the exact stand-in for a PTX approximation
/// (`kApproxAttr`, e.g. "rcp.approx.ftz"), so that a GPU lowering can use
/// the GPU's own instruction instead (its results differ in the last bits).
void tagApprox(Value r, StringRef form, bool ftz) {
  Operation *def = r.getDefiningOp();
  def->setAttr(
      kApproxAttr,
      StringAttr::get(def->getContext(), ftz ? (form + ".ftz").str() : form));
}

FailureOr<SmallVector<Value>> expand(FDivOp op, Emitter &e, const Ctx &ctx) {
  Type t = op.getType();
  auto rnd = op.getRnd();
  bool narrow =
      !getElementTypeOrSelf(t).isF32() && !getElementTypeOrSelf(t).isF64();
  if (isDirected(rnd) && narrow)
    return ctx.fail(op, "directed rounding on f16/bf16 is not supported yet");
  Value a = flushIf(e, op.getLhs(), op.getFtz());
  Value b = flushIf(e, op.getRhs(), op.getFtz());
  Value r;
  if (isDirected(rnd))
    r = callHelper(
        e, op, ("__wooly_fdiv_" + modeName(*rnd) + "_" + floatSuffix(t)).str(),
        t, {a, b});
  else {
    // rn is IEEE division; div.full (<= 2 ulp) and div.approx (a * rcp(b),
    // <= 2 ulp) are computed exactly, within their stated bounds.
    r = arith::DivFOp::create(e.b, e.loc, a, b);
    if (op.getApprox() || op.getFull())
      tagApprox(r, op.getApprox() ? "div.approx" : "div.full", op.getFtz());
  }
  return SmallVector<Value>{finish(e, r, op.getFtz(), false)};
}

template <typename OpT>
FailureOr<SmallVector<Value>> expandRoundedUnary(OpT op, bool isSqrt,
                                                 Emitter &e, const Ctx &ctx) {
  Type t = op.getType();
  auto rnd = op.getRnd();
  bool narrow =
      !getElementTypeOrSelf(t).isF32() && !getElementTypeOrSelf(t).isF64();
  if (isDirected(rnd) && narrow)
    return ctx.fail(op, "directed rounding on f16/bf16 is not supported yet");
  Value x = flushIf(e, op.getInput(), op.getFtz());
  Value r;
  if (isDirected(rnd)) {
    r = callHelper(e, op,
                   ("__wooly_" + StringRef(isSqrt ? "fsqrt" : "frcp") + "_" +
                    modeName(*rnd) + "_" + floatSuffix(t))
                       .str(),
                   t, {x});
  } else if (isSqrt) {
    // rn, and .approx computed exactly (within the PTX error bound).
    r = math::SqrtOp::create(e.b, e.loc, x);
  } else {
    r = arith::DivFOp::create(e.b, e.loc, e.fltC(t, 1.0), x);
  }
  if (op.getApprox())
    tagApprox(r, isSqrt ? "sqrt.approx" : "rcp.approx", op.getFtz());
  return SmallVector<Value>{finish(e, r, op.getFtz(), false)};
}

FailureOr<SmallVector<Value>> expand(FSqrtOp op, Emitter &e, const Ctx &c) {
  return expandRoundedUnary(op, /*isSqrt=*/true, e, c);
}
FailureOr<SmallVector<Value>> expand(FRcpOp op, Emitter &e, const Ctx &c) {
  return expandRoundedUnary(op, /*isSqrt=*/false, e, c);
}

Value narrowFloat(Emitter &e, Operation *op, Value x, Type dst, RoundingMode m);

FailureOr<SmallVector<Value>> expand(FApproxOp op, Emitter &e, const Ctx &) {
  Type t = op.getType();
  Type elem = getElementTypeOrSelf(t);
  bool ftz = op.getFtz();
  Value x = flushIf(e, op.getInput(), ftz);
  // f16/bf16 compute in f32 (exact widening) and round back once.
  Value wide = x;
  Type wt = t;
  if (elem.isF16() || elem.isBF16()) {
    wt = isa<VectorType>(t)
             ? Type(VectorType::get(cast<VectorType>(t).getShape(),
                                    e.b.getF32Type()))
             : Type(e.b.getF32Type());
    wide = arith::ExtFOp::create(e.b, e.loc, wt, x);
  }
  Value r;
  switch (op.getFn()) {
  case ApproxFn::sin:
    r = math::SinOp::create(e.b, e.loc, wide);
    break;
  case ApproxFn::cos:
    r = math::CosOp::create(e.b, e.loc, wide);
    break;
  case ApproxFn::lg2:
    r = math::Log2Op::create(e.b, e.loc, wide);
    break;
  case ApproxFn::ex2:
    r = math::Exp2Op::create(e.b, e.loc, wide);
    break;
  case ApproxFn::rsqrt:
    r = math::RsqrtOp::create(e.b, e.loc, wide);
    break;
  case ApproxFn::tanh:
    r = math::TanhOp::create(e.b, e.loc, wide);
    break;
  }
  // Back to 16 bits, rounded once. bf16 goes through the exact conversion
  // of narrowFloat: a host with AVX512-BF16 compiles a plain f32 -> bf16
  // truncation to vcvtneps2bf16, which flushes subnormal results.
  if (wt != t && elem.isBF16())
    r = mapElements(e, ValueRange{r}, [&](ValueRange s) {
      return narrowFloat(e, op, s[0], elem, RoundingMode::rn);
    });
  else if (wt != t)
    r = arith::TruncFOp::create(e.b, e.loc, t, r);
  // The GPU returns its canonical NaN, whatever the host's libm gives.
  r = e.sel(e.isNaN(r), e.canonicalNaN(t), r);
  return SmallVector<Value>{finish(e, r, ftz, false)};
}

/// PTX min/max (both ops): NaN rules, -0 < +0, `.NaN`, `.xorsign.abs`.
template <typename OpT>
FailureOr<SmallVector<Value>> expandMinMax(OpT op, bool isMin, Emitter &e,
                                           const Ctx &) {
  Type t = op.getType();
  Type it = intLike(t);
  Value a = flushIf(e, op.getLhs(), op.getFtz());
  Value b = flushIf(e, op.getRhs(), op.getFtz());
  Value signs;
  if (op.getXorsignAbs()) {
    unsigned w = getElementTypeOrSelf(t).getIntOrFloatBitWidth();
    Value signMask = e.intC(it, APInt::getSignMask(w));
    signs = e.andI(e.xorI(e.bitsOf(a), e.bitsOf(b)), signMask);
    a = math::AbsFOp::create(e.b, e.loc, a);
    b = math::AbsFOp::create(e.b, e.loc, b);
  }
  // The choice is made on the operands' bits: a chain of selects of floats
  // (a reduction of maxima) sends LLVM's floating-point class analysis
  // through every select and its condition, recursively - half of the -O3
  // time of a softmax-style module; on integers the chain is opaque to it.
  // The result is the same value, bit for bit.
  using P = arith::CmpFPredicate;
  Value aNaN = e.isNaN(a), bNaN = e.isNaN(b);
  Value aBits = e.bitsOf(a), bBits = e.bitsOf(b);
  Value r =
      e.sel(e.cmpF(P::OLT, a, b), isMin ? aBits : bBits, isMin ? bBits : aBits);
  // Equal values: only +0/-0 differ; min takes the set sign bit.
  Value eqBits = isMin ? e.orI(aBits, bBits) : e.andI(aBits, bBits);
  r = e.sel(e.cmpF(P::OEQ, a, b), eqBits, r);
  Value nanBits = e.bitsOf(e.canonicalNaN(t));
  if (op.getNan()) {
    r = e.sel(e.orI(aNaN, bNaN), nanBits, r);
  } else {
    r = e.sel(aNaN, bBits, r);
    r = e.sel(bNaN, aBits, r);
    r = e.sel(e.andI(aNaN, bNaN), nanBits, r);
  }
  if (op.getXorsignAbs()) {
    // The sign goes onto a number, never onto the NaN.
    r = e.sel(e.isNaN(e.reinterpret(r, t)), r, e.orI(r, signs));
  }
  r = e.reinterpret(r, t);
  return SmallVector<Value>{r};
}

FailureOr<SmallVector<Value>> expand(FMinOp op, Emitter &e, const Ctx &c) {
  return expandMinMax(op, /*isMin=*/true, e, c);
}
FailureOr<SmallVector<Value>> expand(FMaxOp op, Emitter &e, const Ctx &c) {
  return expandMinMax(op, /*isMin=*/false, e, c);
}

FailureOr<SmallVector<Value>> expand(FlushOp op, Emitter &e, const Ctx &) {
  // An explicit flush (from an `.ftz` modifier) applies to f16 and bf16 too;
  // f64 is never flushed by PTX.
  if (getElementTypeOrSelf(op.getType()).isF64())
    return SmallVector<Value>{op.getInput()};
  return SmallVector<Value>{e.flush(op.getInput())};
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

bool isSignedInt(ScalarType s) {
  return s == ScalarType::s8 || s == ScalarType::s16 || s == ScalarType::s32 ||
         s == ScalarType::s64 || s == ScalarType::s4;
}
bool isPlainInt(ScalarType s) {
  switch (s) {
  case ScalarType::b8:
  case ScalarType::b16:
  case ScalarType::b32:
  case ScalarType::b64:
  case ScalarType::u8:
  case ScalarType::u16:
  case ScalarType::u32:
  case ScalarType::u64:
  case ScalarType::s8:
  case ScalarType::s16:
  case ScalarType::s32:
  case ScalarType::s64:
  case ScalarType::s4:
  case ScalarType::u4:
    return true;
  default:
    return false;
  }
}
bool isPlainFloat(ScalarType s) {
  return s == ScalarType::f16 || s == ScalarType::bf16 ||
         s == ScalarType::f32 || s == ScalarType::f64;
}
bool isIntRounding(std::optional<RoundingMode> m) {
  return m && (*m == RoundingMode::rni || *m == RoundingMode::rzi ||
               *m == RoundingMode::rmi || *m == RoundingMode::rpi);
}

/// Rounds a float to an integral value in its own type.
Value roundIntegral(Emitter &e, Value x, RoundingMode m) {
  switch (m) {
  case RoundingMode::rni:
    return math::RoundEvenOp::create(e.b, e.loc, x);
  case RoundingMode::rzi:
    return math::TruncOp::create(e.b, e.loc, x);
  case RoundingMode::rmi:
    return math::FloorOp::create(e.b, e.loc, x);
  default:
    return math::CeilOp::create(e.b, e.loc, x);
  }
}

/// Integer to integer; `sat` clamps to the destination's range.
Value cvtIntInt(Emitter &e, Value x, ScalarType st, ScalarType dt, Type rt,
                bool sat) {
  bool ss = isSignedInt(st), ds = isSignedInt(dt);
  unsigned sw = widthOf(x.getType()), dw = widthOf(rt);
  Type it = e.b.getIntegerType(dw);
  if (!sat)
    return e.reinterpret(
        e.resize(e.reinterpret(x, e.b.getIntegerType(sw)), it, ss), rt);
  // Compare in a width that holds both ranges exactly.
  unsigned cw = std::max(sw, dw) + 1;
  Type ct = e.b.getIntegerType(cw);
  Value v = e.resize(e.reinterpret(x, e.b.getIntegerType(sw)), ct, ss);
  APInt lo = ds ? APInt::getSignedMinValue(dw).sext(cw) : APInt(cw, 0);
  APInt hi = ds ? APInt::getSignedMaxValue(dw).zext(cw)
                : APInt::getMaxValue(dw).zext(cw);
  Value loC = e.intC(ct, lo), hiC = e.intC(ct, hi);
  v = e.sel(e.cmpI(arith::CmpIPredicate::slt, v, loC), loC, v);
  v = e.sel(e.cmpI(arith::CmpIPredicate::sgt, v, hiC), hiC, v);
  return e.reinterpret(e.resize(v, it), rt);
}

/// Float to integer with an integer rounding: NaN gives 0, out-of-range
/// values saturate (PTX float-to-integer conversions always saturate).
Value cvtFloatInt(Emitter &e, Value x, ScalarType dt, Type rt, RoundingMode m) {
  Type ft = x.getType();
  if (!getElementTypeOrSelf(ft).isF32() && !getElementTypeOrSelf(ft).isF64()) {
    ft = e.b.getF32Type();
    x = arith::ExtFOp::create(e.b, e.loc, ft, x);
  }
  unsigned dw = widthOf(rt);
  Type it = e.b.getIntegerType(dw);
  bool ds = isSignedInt(dt);
  Value r = roundIntegral(e, x, m);
  using P = arith::CmpFPredicate;
  // Powers of two are exact in f32 and f64.
  double hiBound = std::ldexp(1.0, ds ? dw - 1 : dw);   // first value too large
  double loBound = ds ? -std::ldexp(1.0, dw - 1) : 0.0; // smallest in range
  Value tooBig = e.cmpF(P::OGE, r, e.fltC(ft, hiBound));
  Value tooSmall = e.cmpF(P::OLT, r, e.fltC(ft, loBound));
  Value nan = e.isNaN(r);
  Value bad = e.orI(e.orI(tooBig, tooSmall), nan);
  Value safe = e.sel(bad, e.fltC(ft, 0.0), r);
  Value v = ds ? Value(arith::FPToSIOp::create(e.b, e.loc, it, safe))
               : Value(arith::FPToUIOp::create(e.b, e.loc, it, safe));
  APInt maxV = ds ? APInt::getSignedMaxValue(dw) : APInt::getMaxValue(dw);
  APInt minV = ds ? APInt::getSignedMinValue(dw) : APInt(dw, 0);
  v = e.sel(tooBig, e.intC(it, maxV), v);
  v = e.sel(tooSmall, e.intC(it, minV), v);
  v = e.sel(nan, e.intC(it, 0), v);
  return e.reinterpret(v, rt);
}

/// Rounds a scalar f32/f64 to a narrower float type `dst` with mode `m`.
Value narrowFloat(Emitter &e, Operation *op, Value x, Type dst,
                  RoundingMode m) {
  Type src = x.getType();
  // A NaN becomes the canonical NaN from an f32, keeps its sign and leading
  // payload bits from an f64 (what the GPU does).
  auto nanOf = [&](Value r) {
    return e.sel(e.isNaN(x),
                 src.isF64() ? e.narrowedNaN(x, dst) : e.canonicalNaN(dst), r);
  };
  if (m == RoundingMode::rn &&
      ((src.isF32() && dst.isF16()) || (src.isF64() && dst.isF32())))
    // Correctly rounded by the host.
    return nanOf(arith::TruncFOp::create(e.b, e.loc, dst, x));
  Value d =
      src.isF64() ? x : arith::ExtFOp::create(e.b, e.loc, e.b.getF64Type(), x);
  if (dst.isF32())
    return nanOf(callHelper(e, op, ("__wooly_cvt_f64_f32_" + modeName(m)).str(),
                            dst, {d}));
  std::string name =
      ("__wooly_cvt_f64_" + floatSuffix(dst) + "_" + modeName(m)).str();
  return nanOf(
      narrowResult(e, callHelper(e, op, name, e.b.getI32Type(), {d}), dst));
}

/// Integer to float with rounding `m` (rn when absent).
Value cvtIntFloat(Emitter &e, Operation *op, Value x, ScalarType st, Type dst,
                  RoundingMode m) {
  bool ss = isSignedInt(st);
  if (m == RoundingMode::rn && (dst.isF32() || dst.isF64()))
    return ss ? Value(arith::SIToFPOp::create(e.b, e.loc, dst, x))
              : Value(arith::UIToFPOp::create(e.b, e.loc, dst, x));
  Value wide = e.resize(x, e.b.getI64Type(), ss);
  std::string name = ("__wooly_cvt_" + StringRef(ss ? "s64" : "u64") + "_" +
                      floatSuffix(dst) + "_" + modeName(m))
                         .str();
  if (dst.isF32() || dst.isF64())
    return callHelper(e, op, name, dst, {wide});
  return narrowResult(e, callHelper(e, op, name, e.b.getI32Type(), {wide}),
                      dst);
}

/// Float to float (scalars): widening, narrowing, same type.
Value cvtFloatFloat(Emitter &e, Operation *op, Value x, Type dst,
                    std::optional<RoundingMode> rnd) {
  Type src = x.getType();
  unsigned sw = src.getIntOrFloatBitWidth(), dw = dst.getIntOrFloatBitWidth();
  if (isIntRounding(rnd)) {
    // Round to an integral value, in the wider of the two types.
    if (dw >= sw && src != dst) {
      Value w = arith::ExtFOp::create(e.b, e.loc, dst, x);
      return roundIntegral(e, w, *rnd);
    }
    Value r = roundIntegral(e, x, *rnd);
    if (src == dst)
      return r;
    return narrowFloat(e, op, r, dst, RoundingMode::rn);
  }
  if (src == dst)
    return x;
  // bf16 <-> f16, or widening: exact through f32/f64.
  if (dw > sw || (dw == sw && src != dst)) {
    if (dw > sw)
      return arith::ExtFOp::create(e.b, e.loc, dst, x);
    Value w = arith::ExtFOp::create(e.b, e.loc, e.b.getF32Type(), x);
    return narrowFloat(e, op, w, dst, rnd.value_or(RoundingMode::rn));
  }
  return narrowFloat(e, op, x, dst, rnd.value_or(RoundingMode::rn));
}

/// `.satfinite` on a float result: infinities become the largest finite
/// value of their sign (NaN stays NaN).
Value satFinite(Emitter &e, Value r) {
  Type t = r.getType();
  Value big = e.fltBits(t, Emitter::maxBits(t));
  Value signed_ = math::CopySignOp::create(e.b, e.loc, big, r);
  return e.sel(e.isInf(r), signed_, r);
}

FailureOr<SmallVector<Value>> expand(CvtOp op, Emitter &e, const Ctx &ctx) {
  ScalarType st = op.getSrcType(), dt = op.getDstType();
  auto rnd = op.getRnd();
  bool ftz = op.getFtz(), sat = op.getSat(), relu = op.getRelu(),
       satfinite = op.getSatfinite();
  MLIRContext *mctx = op.getContext();
  Type srcT = getStorageType(mctx, st), dstT = getStorageType(mctx, dt);
  Type rt = op.getType();
  auto unsupported = [&]() {
    return ctx.fail(op, "conversion '" + stringifyScalarType(st) + "' to '" +
                            stringifyScalarType(dt) +
                            "' with these modifiers "
                            "is not supported yet");
  };
  if (rnd && (*rnd == RoundingMode::rs ||
              (*rnd == RoundingMode::rna && dt != ScalarType::tf32)))
    return unsupported();
  SmallVector<Value> ins;
  for (Value v : op.getInputs())
    ins.push_back(v);

  // Integer to integer.
  if (isPlainInt(st) && isPlainInt(dt)) {
    if (rnd || ftz || relu || satfinite)
      return unsupported();
    Value x = e.reinterpret(ins[0], srcT);
    return SmallVector<Value>{cvtIntInt(e, x, st, dt, rt, sat)};
  }

  // Float to integer.
  if (isPlainFloat(st) && isPlainInt(dt)) {
    if (!isIntRounding(rnd) || relu || satfinite)
      return unsupported();
    Value x = e.reinterpret(ins[0], srcT);
    if (ftz && srcT.isF32())
      x = e.flush(x);
    return SmallVector<Value>{cvtFloatInt(e, x, dt, rt, *rnd)};
  }

  // Integer to float.
  if (isPlainInt(st) && isPlainFloat(dt)) {
    if (isIntRounding(rnd) || relu || satfinite)
      return unsupported();
    Value x = e.reinterpret(ins[0], srcT);
    Value r = cvtIntFloat(e, op, x, st, dstT, rnd.value_or(RoundingMode::rn));
    if (sat)
      r = e.saturate(r);
    return SmallVector<Value>{e.reinterpret(r, rt)};
  }

  // Float to float, scalar.
  if (isPlainFloat(st) && isPlainFloat(dt)) {
    if (satfinite && !(dt == ScalarType::f16 || dt == ScalarType::bf16))
      return unsupported();
    Value x = e.reinterpret(ins[0], srcT);
    if (ftz && srcT.isF32())
      x = e.flush(x);
    Value r = cvtFloatFloat(e, op, x, dstT, rnd);
    if (ftz && dstT.isF32())
      r = e.flush(r);
    if (satfinite)
      r = satFinite(e, r);
    if (sat)
      r = e.saturate(r);
    if (relu)
      r = e.relu(r);
    return SmallVector<Value>{e.reinterpret(r, rt)};
  }

  // Two f32 to a packed pair: the first input goes to the upper half.
  if (st == ScalarType::f32 &&
      (dt == ScalarType::f16x2 || dt == ScalarType::bf16x2) &&
      ins.size() == 2) {
    if (isIntRounding(rnd) || sat || ftz)
      return unsupported();
    Type elem = cast<VectorType>(dstT).getElementType();
    auto one = [&](Value v) {
      Value x = e.reinterpret(v, e.b.getF32Type());
      Value r = narrowFloat(e, op, x, elem, rnd.value_or(RoundingMode::rn));
      if (satfinite)
        r = satFinite(e, r);
      if (relu)
        r = e.relu(r);
      return r;
    };
    Value lo = one(ins[1]), hi = one(ins[0]);
    Value v = vector::FromElementsOp::create(e.b, e.loc, cast<VectorType>(dstT),
                                             ValueRange{lo, hi});
    return SmallVector<Value>{e.reinterpret(v, rt)};
  }

  // f32 (pair) or f16x2 to an fp8 pair: .rn.satfinite only.
  if ((dt == ScalarType::e4m3x2 || dt == ScalarType::e5m2x2) &&
      (st == ScalarType::f32 || st == ScalarType::f16x2)) {
    if (!satfinite || (rnd && *rnd != RoundingMode::rn) || sat || ftz)
      return unsupported();
    std::string name = ("__wooly_cvt_f64_" +
                        StringRef(dt == ScalarType::e4m3x2 ? "e4m3" : "e5m2") +
                        "_rn_satfinite")
                           .str();
    SmallVector<Value, 2> parts; // low byte first
    if (st == ScalarType::f32) {
      if (ins.size() != 2)
        return unsupported();
      parts = {ins[1], ins[0]};
      for (Value &p : parts)
        p = e.reinterpret(p, e.b.getF32Type());
    } else {
      Value v = e.reinterpret(ins[0], srcT);
      for (int64_t i = 0; i < 2; ++i)
        parts.push_back(
            vector::ExtractOp::create(e.b, e.loc, v, ArrayRef<int64_t>{i}));
    }
    Type i32 = e.b.getI32Type();
    Value acc = e.intC(i32, 0);
    for (unsigned i = 0; i < 2; ++i) {
      Value x = parts[i];
      if (relu)
        x = e.relu(x);
      Value d = arith::ExtFOp::create(e.b, e.loc, e.b.getF64Type(), x);
      Value byte = callHelper(e, op, name, i32, {d});
      acc = e.orI(acc, i ? e.shl(byte, 8) : byte);
    }
    return SmallVector<Value>{
        e.reinterpret(e.resize(acc, e.b.getI16Type()), rt)};
  }

  // fp8 pair to f16x2 (exact).
  if ((st == ScalarType::e4m3x2 || st == ScalarType::e5m2x2) &&
      dt == ScalarType::f16x2) {
    if ((rnd && *rnd != RoundingMode::rn) || sat || ftz || satfinite)
      return unsupported();
    std::string name =
        ("__wooly_cvt_" +
         StringRef(st == ScalarType::e4m3x2 ? "e4m3" : "e5m2") + "_f16")
            .str();
    Type i32 = e.b.getI32Type();
    Value bits = e.resize(e.reinterpret(ins[0], e.b.getI16Type()), i32);
    SmallVector<Value, 2> halves;
    for (unsigned i = 0; i < 2; ++i) {
      Value byte = e.andI(i ? e.lshr(bits, 8) : bits, e.intC(i32, 0xff));
      Value h = narrowResult(e, callHelper(e, op, name, i32, {byte}),
                             e.b.getF16Type());
      if (relu)
        h = e.relu(h);
      halves.push_back(h);
    }
    Value v = vector::FromElementsOp::create(e.b, e.loc, cast<VectorType>(dstT),
                                             halves);
    return SmallVector<Value>{e.reinterpret(v, rt)};
  }

  // f32 to tf32 (an f32 bit pattern with the low 13 bits clear).
  if (st == ScalarType::f32 && dt == ScalarType::tf32) {
    RoundingMode m = rnd.value_or(RoundingMode::rna);
    if (sat || ftz ||
        (m != RoundingMode::rna && m != RoundingMode::rn &&
         m != RoundingMode::rz))
      return unsupported();
    Type i32 = e.b.getI32Type();
    Value x = e.reinterpret(ins[0], e.b.getF32Type());
    if (relu)
      x = e.relu(x);
    Value bits = e.bitsOf(x);
    Value mag = e.andI(bits, e.intC(i32, 0x7fffffff));
    Value r = bits;
    if (m == RoundingMode::rna)
      r = e.add(bits, e.intC(i32, 0x1000));
    else if (m == RoundingMode::rn)
      r = e.add(bits, e.add(e.intC(i32, 0xfff),
                            e.andI(e.lshr(bits, 13), e.intC(i32, 1))));
    r = e.andI(r, e.intC(i32, ~0x1fff));
    Value isInfOrNaN =
        e.cmpI(arith::CmpIPredicate::uge, mag, e.intC(i32, 0x7f800000));
    // Infinities keep their bits; NaN becomes the canonical NaN.
    r = e.sel(isInfOrNaN, bits, r);
    r = e.sel(e.isNaN(x), e.intC(i32, 0x7fffffff), r);
    if (satfinite) {
      Value sign = e.andI(bits, e.intC(i32, INT32_MIN));
      Value rmag = e.andI(r, e.intC(i32, 0x7fffffff));
      Value inf =
          e.cmpI(arith::CmpIPredicate::eq, rmag, e.intC(i32, 0x7f800000));
      r = e.sel(inf, e.orI(sign, e.intC(i32, 0x7f7fe000)), r);
    }
    return SmallVector<Value>{e.reinterpret(r, rt)};
  }
  return unsupported();
}

//===----------------------------------------------------------------------===//
// Integer
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Value>> expand(DivOp op, Emitter &e, const Ctx &) {
  Value a = op.getLhs(), b = op.getRhs();
  Type t = a.getType();
  unsigned w = widthOf(t);
  Value zero = e.intC(t, 0), one = e.intC(t, 1), ones = e.intC(t, -1);
  Value byZero = e.cmpI(arith::CmpIPredicate::eq, b, zero);
  Value r;
  if (op.getSign() == Signedness::u) {
    r = arith::DivUIOp::create(e.b, e.loc, a, e.sel(byZero, one, b));
  } else {
    // MIN / -1 divides by 1 instead, which gives MIN as the GPU does.
    Value ovf = e.andI(e.cmpI(arith::CmpIPredicate::eq, a,
                              e.intC(t, APInt::getSignedMinValue(w))),
                       e.cmpI(arith::CmpIPredicate::eq, b, ones));
    r = arith::DivSIOp::create(e.b, e.loc, a,
                               e.sel(e.orI(byZero, ovf), one, b));
  }
  return SmallVector<Value>{e.sel(byZero, ones, r)};
}

FailureOr<SmallVector<Value>> expand(RemOp op, Emitter &e, const Ctx &) {
  Value a = op.getLhs(), b = op.getRhs();
  Type t = a.getType();
  unsigned w = widthOf(t);
  Value zero = e.intC(t, 0), one = e.intC(t, 1), ones = e.intC(t, -1);
  Value byZero = e.cmpI(arith::CmpIPredicate::eq, b, zero);
  Value r;
  if (op.getSign() == Signedness::u) {
    r = arith::RemUIOp::create(e.b, e.loc, a, e.sel(byZero, one, b));
  } else {
    // MIN rem -1 computes MIN rem 1 = 0.
    Value ovf = e.andI(e.cmpI(arith::CmpIPredicate::eq, a,
                              e.intC(t, APInt::getSignedMinValue(w))),
                       e.cmpI(arith::CmpIPredicate::eq, b, ones));
    r = arith::RemSIOp::create(e.b, e.loc, a,
                               e.sel(e.orI(byZero, ovf), one, b));
  }
  return SmallVector<Value>{e.sel(byZero, a, r)};
}

FailureOr<SmallVector<Value>> expand(ShlOp op, Emitter &e, const Ctx &) {
  return SmallVector<Value>{e.safeShl(op.getLhs(), op.getRhs())};
}

FailureOr<SmallVector<Value>> expand(ShrOp op, Emitter &e, const Ctx &) {
  Value a = op.getLhs(), n = op.getRhs();
  if (op.getSign() == Signedness::u)
    return SmallVector<Value>{e.safeLshr(a, n)};
  unsigned w = widthOf(a.getType());
  // Amounts >= width fill with the sign: shift by width - 1.
  Value clamped = e.umin(n, e.intC(n.getType(), w - 1));
  return SmallVector<Value>{e.ashr(a, clamped)};
}

/// A mask of the low `len` bits (len unsigned in [0, width]).
Value lowMask(Emitter &e, Type t, Value len) {
  unsigned w = widthOf(t);
  Value full = e.cmpI(arith::CmpIPredicate::uge, len, e.intC(t, w));
  Value m =
      e.sub(e.shl(e.intC(t, 1), e.sel(full, e.intC(t, 0), len)), e.intC(t, 1));
  return e.sel(full, e.intC(t, -1), m);
}

FailureOr<SmallVector<Value>> expand(BfeOp op, Emitter &e, const Ctx &) {
  Value a = op.getValue();
  Type t = a.getType();
  unsigned w = widthOf(t);
  Type i32 = e.b.getI32Type();
  Value pos = e.andI(op.getPos(), e.intC(i32, 0xff));
  Value len = e.andI(op.getLen(), e.intC(i32, 0xff));
  // The bits of the field that lie inside the value: min(len, w - pos).
  Value posIn = e.cmpI(arith::CmpIPredicate::ult, pos, e.intC(i32, w));
  Value room = e.sub(e.intC(i32, w), e.umin(pos, e.intC(i32, w)));
  Value effLen = e.umin(len, room); // 0 when pos >= w
  Value posT = e.resize(e.umin(pos, e.intC(i32, w - 1)), t);
  Value shifted = e.sel(posIn, e.lshr(a, posT), e.intC(t, 0));
  Value mask = lowMask(e, t, e.resize(effLen, t));
  Value field = e.andI(shifted, mask);
  if (op.getSign() == Signedness::u)
    return SmallVector<Value>{field};
  // Sign bit: a[min(pos + len - 1, w - 1)], 0 when len == 0.
  Value last = e.sub(e.add(pos, len), e.intC(i32, 1));
  Value sbitPos = e.umin(last, e.intC(i32, w - 1));
  Value sbit = e.andI(e.lshr(a, e.resize(sbitPos, t)), e.intC(t, 1));
  Value lenZero = e.cmpI(arith::CmpIPredicate::eq, len, e.intC(i32, 0));
  Value fill = e.sel(lenZero, e.intC(t, 0), e.sub(e.intC(t, 0), sbit));
  return SmallVector<Value>{e.orI(field, e.andI(fill, e.notI(mask)))};
}

FailureOr<SmallVector<Value>> expand(BfiOp op, Emitter &e, const Ctx &) {
  Value a = op.getInsert(), base = op.getBase();
  Type t = a.getType();
  unsigned w = widthOf(t);
  Type i32 = e.b.getI32Type();
  Value pos = e.andI(op.getPos(), e.intC(i32, 0xff));
  Value len = e.andI(op.getLen(), e.intC(i32, 0xff));
  Value room = e.sub(e.intC(i32, w), e.umin(pos, e.intC(i32, w)));
  Value effLen = e.umin(len, room);
  Value mask = lowMask(e, t, e.resize(effLen, t));
  // pos >= w leaves effLen = 0: an empty mask, whatever the shift.
  Value posT = e.resize(e.umin(pos, e.intC(i32, w - 1)), t);
  Value maskAt = e.shl(mask, posT);
  Value r = e.orI(e.andI(base, e.notI(maskAt)), e.andI(e.shl(a, posT), maskAt));
  return SmallVector<Value>{r};
}

/// The generic selector (four nibbles) of each fixed prmt mode, by c[1:0].
ArrayRef<int64_t> prmtSelectors(PrmtMode m) {
  static const int64_t f4e[] = {0x3210, 0x4321, 0x5432, 0x6543};
  static const int64_t b4e[] = {0x5670, 0x6701, 0x7012, 0x0123};
  static const int64_t rc8[] = {0x0000, 0x1111, 0x2222, 0x3333};
  static const int64_t ecl[] = {0x3210, 0x3211, 0x3222, 0x3333};
  static const int64_t ecr[] = {0x0000, 0x1110, 0x2210, 0x3210};
  static const int64_t rc16[] = {0x1010, 0x3232, 0x1010, 0x3232};
  switch (m) {
  case PrmtMode::f4e:
    return f4e;
  case PrmtMode::b4e:
    return b4e;
  case PrmtMode::rc8:
    return rc8;
  case PrmtMode::ecl:
    return ecl;
  case PrmtMode::ecr:
    return ecr;
  case PrmtMode::rc16:
    return rc16;
  case PrmtMode::generic:
    break;
  }
  return {};
}

FailureOr<SmallVector<Value>> expand(PrmtOp op, Emitter &e, const Ctx &) {
  Type i32 = e.b.getI32Type(), i64 = e.b.getI64Type();
  Value c = op.getC();
  Value sel = c;
  bool generic = op.getMode() == PrmtMode::generic;
  if (!generic) {
    ArrayRef<int64_t> table = prmtSelectors(op.getMode());
    Value idx = e.andI(c, e.intC(i32, 3));
    sel = e.intC(i32, table[0]);
    for (int64_t i = 1; i < 4; ++i)
      sel = e.sel(e.cmpI(arith::CmpIPredicate::eq, idx, e.intC(i32, i)),
                  e.intC(i32, table[i]), sel);
  }
  // The eight bytes {b, a}, a in the low half.
  Value bytes =
      e.orI(e.shl(e.resize(op.getB(), i64), 32), e.resize(op.getA(), i64));
  Value r = e.intC(i32, 0);
  for (int64_t i = 0; i < 4; ++i) {
    Value nib = e.andI(e.lshr(sel, 4 * i), e.intC(i32, 0xf));
    Value which = e.andI(nib, e.intC(i32, 7));
    Value byte = e.resize(e.lshr(bytes, e.resize(e.shl(which, 3), i64)), i32);
    byte = e.andI(byte, e.intC(i32, 0xff));
    if (generic) {
      // Bit 3 of the selector replicates the byte's sign bit.
      Value rep = e.cmpI(arith::CmpIPredicate::ne, e.andI(nib, e.intC(i32, 8)),
                         e.intC(i32, 0));
      Value sign = e.lshr(byte, 7);
      byte = e.sel(rep, e.andI(e.sub(e.intC(i32, 0), sign), e.intC(i32, 0xff)),
                   byte);
    }
    r = e.orI(r, i ? e.shl(byte, 8 * i) : byte);
  }
  return SmallVector<Value>{r};
}

/// Shannon expansion of a truth table over `vars` (most significant first):
/// `bits` holds 2^n entries.
Value expandLut(Emitter &e, ArrayRef<Value> vars, uint64_t bits, unsigned n,
                Type t) {
  uint64_t all = n == 6 ? ~0ull : ((1ull << (1u << n)) - 1);
  bits &= all;
  if (bits == 0)
    return e.intC(t, 0);
  if (bits == all)
    return e.intC(t, -1);
  unsigned half = 1u << (n - 1);
  uint64_t lo = bits & ((1ull << half) - 1), hi = bits >> half;
  Value x = vars.front();
  if (n == 1)
    return hi ? x : e.notI(x);
  if (lo == hi)
    return expandLut(e, vars.drop_front(), lo, n - 1, t);
  uint64_t halfAll = (1ull << half) - 1;
  if (lo == 0)
    return e.andI(x, expandLut(e, vars.drop_front(), hi, n - 1, t));
  Value l = expandLut(e, vars.drop_front(), lo, n - 1, t);
  // (x & h) | (~x & l) is l ^ (x & d) with d = h ^ l.
  uint64_t d = (hi ^ lo) & halfAll;
  if (d == halfAll)
    return e.xorI(l, x);
  return e.xorI(l, e.andI(x, expandLut(e, vars.drop_front(), d, n - 1, t)));
}

FailureOr<SmallVector<Value>> expand(Lop3Op op, Emitter &e, const Ctx &) {
  Value vars[] = {op.getA(), op.getB(), op.getC()};
  uint64_t lut = op.getLut() & 0xff;
  return SmallVector<Value>{expandLut(e, vars, lut, 3, op.getType())};
}

FailureOr<SmallVector<Value>> expand(BrevOp op, Emitter &e, const Ctx &ctx) {
  Value x = op.getInput();
  Type t = x.getType();
  unsigned w = widthOf(t);
  if (w == 1)
    return SmallVector<Value>{x};
  if (!llvm::isPowerOf2_32(w) || w < 8)
    return ctx.fail(op, "brev of this width is not supported");
  // Swap ever larger groups: 1, 2, 4 ... w/2 bits.
  for (unsigned s = 1; s < w; s *= 2) {
    APInt m(w, 0);
    for (unsigned i = 0; i < w; ++i)
      if ((i / s) % 2 == 0)
        m.setBit(i);
    Value mask = e.intC(t, m);
    x = e.orI(e.shl(e.andI(x, mask), s), e.andI(e.lshr(x, s), mask));
  }
  return SmallVector<Value>{x};
}

FailureOr<SmallVector<Value>> expand(BfindOp op, Emitter &e, const Ctx &) {
  Value x = op.getInput();
  Type t = x.getType();
  unsigned w = widthOf(t);
  Type i32 = e.b.getI32Type();
  if (op.getSign() == Signedness::s) {
    // The most significant bit that differs from the sign: of ~x if x < 0.
    Value neg = e.cmpI(arith::CmpIPredicate::slt, x, e.intC(t, 0));
    x = e.sel(neg, e.notI(x), x);
  }
  Value clz = e.resize(math::CountLeadingZerosOp::create(e.b, e.loc, x), i32);
  Value none = e.cmpI(arith::CmpIPredicate::eq, x, e.intC(t, 0));
  Value r = op.getShiftamt() ? clz : e.sub(e.intC(i32, w - 1), clz);
  return SmallVector<Value>{e.sel(none, e.intC(i32, -1), r)};
}

FailureOr<SmallVector<Value>> expand(BmskOp op, Emitter &e, const Ctx &) {
  Type i32 = e.b.getI32Type(), i64 = e.b.getI64Type();
  Value pos = op.getPos(), len = op.getLen();
  if (op.getMode() == ShiftWrap::clamp) {
    pos = e.umin(pos, e.intC(i32, 32));
    len = e.umin(len, e.intC(i32, 32));
  } else {
    pos = e.andI(pos, e.intC(i32, 31));
    len = e.andI(len, e.intC(i32, 31));
  }
  // In 64 bits: ((1 << len) - 1) << pos, then the low 32 bits.
  Value m = e.sub(e.shl(e.intC(i64, 1), e.resize(len, i64)), e.intC(i64, 1));
  m = e.shl(m, e.resize(pos, i64));
  return SmallVector<Value>{e.resize(m, i32)};
}

FailureOr<SmallVector<Value>> expand(ShfOp op, Emitter &e, const Ctx &) {
  Type i32 = e.b.getI32Type(), i64 = e.b.getI64Type();
  Value n = op.getN();
  n = op.getMode() == ShiftWrap::clamp ? e.umin(n, e.intC(i32, 32))
                                       : e.andI(n, e.intC(i32, 31));
  Value pair =
      e.orI(e.shl(e.resize(op.getB(), i64), 32), e.resize(op.getA(), i64));
  Value n64 = e.resize(n, i64);
  Value r = op.getDir() == ShiftDir::l ? e.lshr(e.shl(pair, n64), 32)
                                       : e.lshr(pair, n64);
  return SmallVector<Value>{e.resize(r, i32)};
}

FailureOr<SmallVector<Value>> expand(Mul24Op op, Emitter &e, const Ctx &) {
  Type i32 = e.b.getI32Type(), i64 = e.b.getI64Type();
  bool s = op.getSign() == Signedness::s;
  auto low24 = [&](Value v) {
    Value x = e.resize(v, i64);
    Value sh = e.shl(x, 40);
    return s ? e.ashr(sh, 40) : e.lshr(sh, 40);
  };
  Value p = e.mul(low24(op.getLhs()), low24(op.getRhs()));
  if (op.getHalf() == HalfSel::hi)
    p = e.lshr(p, 16);
  return SmallVector<Value>{e.resize(p, i32)};
}

FailureOr<SmallVector<Value>> expand(SadOp op, Emitter &e, const Ctx &) {
  Value a = op.getA(), b = op.getB();
  auto gt = op.getSign() == Signedness::s ? arith::CmpIPredicate::sgt
                                          : arith::CmpIPredicate::ugt;
  Value diff = e.sel(e.cmpI(gt, a, b), e.sub(a, b), e.sub(b, a));
  return SmallVector<Value>{e.add(op.getC(), diff)};
}

/// Field `i` of `bits` bits of `x` (i32), sign- or zero-extended to i32.
Value fieldOf(Emitter &e, Value x, unsigned i, unsigned bits, bool isSigned) {
  Value sh = e.shl(x, 32 - bits * (i + 1));
  return isSigned ? e.ashr(sh, 32 - bits) : e.lshr(sh, 32 - bits);
}

FailureOr<SmallVector<Value>> expand(Dp4aOp op, Emitter &e, const Ctx &) {
  bool as = op.getASign() == Signedness::s, bs = op.getBSign() == Signedness::s;
  Value acc = op.getC();
  for (unsigned i = 0; i < 4; ++i)
    acc = e.add(acc, e.mul(fieldOf(e, op.getA(), i, 8, as),
                           fieldOf(e, op.getB(), i, 8, bs)));
  return SmallVector<Value>{acc};
}

FailureOr<SmallVector<Value>> expand(Dp2aOp op, Emitter &e, const Ctx &) {
  bool as = op.getASign() == Signedness::s, bs = op.getBSign() == Signedness::s;
  unsigned k = op.getHalf() == HalfSel::hi ? 2 : 0;
  Value acc = op.getC();
  for (unsigned i = 0; i < 2; ++i)
    acc = e.add(acc, e.mul(fieldOf(e, op.getA(), i, 16, as),
                           fieldOf(e, op.getB(), k + i, 8, bs)));
  return SmallVector<Value>{acc};
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// Rewrites one Wooly op with its `expand` function.
template <typename OpT> struct ExpandPattern : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    Emitter e{rewriter, op.getLoc()};
    Ctx ctx{rewriter, /*emitErrors=*/false};
    FailureOr<SmallVector<Value>> r = expand(op, e, ctx);
    if (failed(r))
      return failure();
    rewriter.replaceOp(op, *r);
    return success();
  }
};

/// Reports why `op` could not be expanded (after the greedy driver).
template <typename OpT> bool diagnose(Operation *op) {
  auto typed = dyn_cast<OpT>(op);
  if (!typed)
    return false;
  struct DiagnosticRewriter : PatternRewriter {
    using PatternRewriter::PatternRewriter;
  } rewriter(op->getContext());
  rewriter.setInsertionPoint(op);
  // The expansion fails before it builds anything, so nothing is created
  // (an op left over by the driver is one whose expansion fails).
  Emitter e{rewriter, op->getLoc()};
  Ctx ctx{rewriter, /*emitErrors=*/true};
  FailureOr<SmallVector<Value>> r = expand(typed, e, ctx);
  if (failed(r))
    return true;
  // Left over by the driver but expandable: expand it now.
  rewriter.replaceOp(op, *r);
  return false;
}

#define WOOLY_EXPANDED_OPS                                                     \
  PackOp, UnpackOp, BitcastOp, ExtractBytesOp, InsertBytesOp, FAddOp, FSubOp,  \
      FMulOp, FmaOp, FDivOp, FSqrtOp, FRcpOp, FApproxOp, FMinOp, FMaxOp,       \
      FlushOp, CvtOp, DivOp, RemOp, ShlOp, ShrOp, BfeOp, BfiOp, PrmtOp,        \
      Lop3Op, BrevOp, BfindOp, BmskOp, ShfOp, Mul24Op, SadOp, Dp4aOp, Dp2aOp

template <typename... Ops> void addPatterns(RewritePatternSet &patterns) {
  (patterns.add<ExpandPattern<Ops>>(patterns.getContext()), ...);
}

template <typename... Ops> bool diagnoseAny(Operation *op) {
  return (diagnose<Ops>(op) || ...);
}

} // namespace

void mlir::wooly::populateWoolyExpandArithPatterns(
    RewritePatternSet &patterns) {
  addPatterns<WOOLY_EXPANDED_OPS>(patterns);
}

namespace {
struct WoolyExpandArithPass
    : wooly::impl::WoolyExpandArithBase<WoolyExpandArithPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateWoolyExpandArithPatterns(patterns);
    // Only the expanded ops are rewritten: no folding of the rest of the IR.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);
    bool failedAny = false;
    getOperation()->walk([&](Operation *op) {
      if (diagnoseAny<WOOLY_EXPANDED_OPS>(op))
        failedAny = true;
    });
    if (failedAny)
      signalPassFailure();
  }
};
} // namespace
