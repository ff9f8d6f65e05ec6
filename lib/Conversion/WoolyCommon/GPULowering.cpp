//===- GPULowering.cpp - Wooly to LLVM for any GPU -------------*- C++ -*-===//
//
// The GPU half of the shared lowering (see GPULowering.h): kernels take
// their parameters by value (a kernel that takes a parameter's address
// reads a copy of its parameter buffer); an access in state space S is an
// `inttoptr` to the target's pointer in the address space of S; `cvta` is
// an `addrspacecast` between the space's pointers and generic ones;
// variables are LLVM globals in their space's address space.
//
// The driver: shared and target checks (located errors, nothing rewritten
// yet), the target's `.approx` math and `__wooly_*` helper lowering, then
// the shared lowering.
//
//===----------------------------------------------------------------------===//

#include "GPULowering.h"
#include "Wooly/Conversion/Passes.h"

#include "llvm/ADT/StringSwitch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::common;
using namespace mlir::wooly::gpu;

//===----------------------------------------------------------------------===//
// Emitter and value helpers
//===----------------------------------------------------------------------===//

Value gpu::narrowHelperArg(Emitter &e, Value v, Type ft) {
  Value i = e.intCast(v, e.rw.getI16Type());
  return LLVM::BitcastOp::create(e.rw, e.loc, ft, i);
}

//===----------------------------------------------------------------------===//
// The GPU half of the shared lowering
//===----------------------------------------------------------------------===//

GPUTargetInfo::~GPUTargetInfo() = default;

/// Whether argument `i` of `op` is a kernel's byte-array parameter
/// (`.param .align A .b8 p[N]`, a vector of i8 here) that `target` passes
/// `byval`.
static bool byValParam(const GPUTargetInfo &target, FuncOp op, unsigned i) {
  return target.byteArrayParamsByVal() && op.getKernel() &&
         isa<VectorType>(op.getArgumentTypes()[i]);
}

/// The declared alignment of kernel parameter `i` of `op` (1 when none).
static uint64_t paramAlign(FuncOp op, unsigned i) {
  if (auto align = op.getArgAttrOfType<IntegerAttr>(i, "wooly.align"))
    return align.getInt();
  return 1;
}

/// A byte-array parameter passed `byval` is a pointer.
SmallVector<Type> GPUTargetInfo::functionArguments(FuncOp op) const {
  SmallVector<Type> types(op.getArgumentTypes());
  for (unsigned i = 0; i < types.size(); ++i)
    if (byValParam(*this, op, i))
      types[i] = LLVM::LLVMPointerType::get(op.getContext());
  return types;
}

/// A byte-array parameter keeps its declared alignment: `byval` with its
/// `[N x i8]` and alignment, or (a vector) with the alignment as its stack
/// alignment: the code generator would align the vector to its size.
void GPUTargetInfo::finishKernel(OpBuilder &b, LLVM::LLVMFuncOp fn, FuncOp op,
                                 const LoweringState &) const {
  ArrayRef<Type> argTypes = op.getArgumentTypes();
  for (unsigned i = 0; i < argTypes.size(); ++i) {
    auto vt = dyn_cast<VectorType>(argTypes[i]);
    if (!vt)
      continue;
    if (byValParam(*this, op, i)) {
      fn.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                    TypeAttr::get(LLVM::LLVMArrayType::get(
                        vt.getElementType(), vt.getNumElements())));
      fn.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                    b.getI64IntegerAttr(paramAlign(op, i)));
    } else if (op.getArgAttrOfType<IntegerAttr>(i, "wooly.align")) {
      fn.setArgAttr(i, LLVM::LLVMDialect::getStackAlignmentAttrName(),
                    b.getI64IntegerAttr(paramAlign(op, i)));
    }
  }
}

/// A `byval` parameter's value is loaded from it.
SmallVector<Value> GPUTargetInfo::bodyArguments(Emitter &e, FuncOp op,
                                                Block *entry,
                                                const LoweringState &) const {
  SmallVector<Value> args(entry->getArguments());
  for (unsigned i = 0; i < args.size(); ++i)
    if (byValParam(*this, op, i))
      args[i] = LLVM::LoadOp::create(e.rw, e.loc, op.getArgumentTypes()[i],
                                     args[i], paramAlign(op, i));
  return args;
}

/// A kernel that takes parameter addresses reads its parameters from a
/// copy laid out like the CUDA parameter buffer (a `byval` parameter is
/// copied from its pointer).
void GPUTargetInfo::finishEntry(Emitter &e, FuncOp op, LLVM::LLVMFuncOp fn,
                                Block *entry, LoweringState &state) const {
  bool paramAddresses = false;
  fn.getBody().walk([&](ParamAddressOp) {
    paramAddresses = true;
    return WalkResult::interrupt();
  });
  if (!op.getKernel() || !paramAddresses)
    return;
  ArrayRef<uint64_t> offsets = state.paramOffsets[op.getSymName()];
  uint64_t bytes = 1;
  for (auto [i, t] : llvm::enumerate(op.getArgumentTypes()))
    bytes = std::max(bytes, offsets[i] + common::byteSize(t));
  Value copy = LLVM::AllocaOp::create(e.rw, e.loc, e.ptr(allocaAddressSpace()),
                                      e.i8(), e.c64(bytes), /*alignment=*/16);
  for (auto [i, arg] : llvm::enumerate(entry->getArguments())) {
    Value slot =
        LLVM::GEPOp::create(e.rw, e.loc, copy.getType(), e.i8(), copy,
                            ArrayRef<LLVM::GEPArg>{int32_t(offsets[i])});
    if (byValParam(*this, op, i))
      LLVM::MemcpyOp::create(e.rw, e.loc, slot, arg,
                             e.c64(common::byteSize(op.getArgumentTypes()[i])),
                             /*isVolatile=*/false);
    else
      LLVM::StoreOp::create(e.rw, e.loc, arg, slot, /*alignment=*/1);
  }
  paramCopies[fn.getOperation()] = copy;
}

/// A variable is a global in its space's address space; an `extern` one
/// (defined elsewhere) and the dynamic shared memory are declarations.
FailureOr<common::LoweredGlobal>
GPUTargetInfo::createGlobal(OpBuilder &b, GlobalOp g, uint64_t align) const {
  unsigned as = *addressSpace(g.getSpace());
  bool isExtern = g.getLinkage() && *g.getLinkage() == Linkage::extern_;
  bool visible = g.getLinkage() && *g.getLinkage() != Linkage::extern_;
  uint64_t count = g.getCount();
  Type arrTy = LLVM::LLVMArrayType::get(g.getElemType(), count);
  bool shared = g.getSpace() == StateSpace::shared ||
                g.getSpace() == StateSpace::shared_cluster;
  if (isExtern || (shared && count == 0))
    return common::LoweredGlobal{
        LLVM::GlobalOp::create(b, g.getLoc(), arrTy, /*isConstant=*/false,
                               LLVM::Linkage::External, g.getSymName(),
                               Attribute(), align, as),
        /*declaration=*/true};
  // A `.global` or `.const` variable is the host's to read and write
  // (cuModuleGetGlobal, cudaMemcpyToSymbol: nvcc declares `__device__` and
  // `__constant__` variables without `.visible` outside -rdc, and `static`
  // ones never): with internal linkage, LLVM would take one that no kernel
  // stores to for its initializer and fold its loads to it. Shared and
  // local variables, and those declared in a function body, are the
  // module's alone.
  bool hostAccessible = (g.getSpace() == StateSpace::global ||
                         g.getSpace() == StateSpace::constant) &&
                        !g->hasAttr("wooly.function_scope");
  LLVM::Linkage linkage = visible || hostAccessible ? LLVM::Linkage::External
                                                    : LLVM::Linkage::Internal;
  if (g.getLinkage() && *g.getLinkage() == Linkage::weak)
    linkage = LLVM::Linkage::Weak;
  Attribute value = shared ? Attribute() : common::denseInitializer(g, count);
  return common::LoweredGlobal{
      LLVM::GlobalOp::create(b, g.getLoc(), arrTy, /*isConstant=*/false,
                             linkage, g.getSymName(), value, align, as)};
}

/// An address in an initializer is in the variable's own space.
FailureOr<Value>
GPUTargetInfo::initializerAddress(OpBuilder &b, GlobalOp g, StringRef sym,
                                  Type elem, const LoweringState &state) const {
  unsigned tas = 0;
  if (auto s = state.globalSpaces.find(sym); s != state.globalSpaces.end()) {
    if (s->second == StateSpace::local)
      return g.emitOpError("initializer takes the address of a .local "
                           "variable");
    tas = *addressSpace(s->second);
  }
  Value p = LLVM::AddressOfOp::create(
      b, g.getLoc(), LLVM::LLVMPointerType::get(b.getContext(), tas), sym);
  return Value(LLVM::PtrToIntOp::create(b, g.getLoc(), elem, p));
}

/// A local variable's address is in the local space.
FailureOr<Value> GPUTargetInfo::localAddress(Emitter &e, AddressOfOp op,
                                             Value slot) const {
  unsigned as = *addressSpace(StateSpace::local);
  if (as != allocaAddressSpace())
    slot = LLVM::AddrSpaceCastOp::create(e.rw, e.loc, e.ptr(as), slot);
  return e.toInt(slot, op.getType());
}

/// The address of a variable in its own state space (PTX's
/// `mov.u64 %rd, sym`), or a function's generic address.
FailureOr<Value>
GPUTargetInfo::symbolAddress(Emitter &e, AddressOfOp op,
                             const LoweringState &state) const {
  unsigned as = 0;
  auto space = state.globalSpaces.find(op.getGlobal());
  if (space != state.globalSpaces.end())
    as = *addressSpace(space->second);
  Value p = LLVM::AddressOfOp::create(e.rw, e.loc, e.ptr(as), op.getGlobal());
  return e.toInt(p, op.getType());
}

/// The generic address of the parameter in the kernel's copy of its
/// parameter buffer (made by `finishEntry`), so that `ld.param` through it
/// (lowered as a generic load) reads its bytes. 64-bit addresses only
/// (checkSupported refuses the others).
FailureOr<Value> GPUTargetInfo::paramAddress(Emitter &e, ParamAddressOp op,
                                             LLVM::LLVMFuncOp fn,
                                             uint64_t offset) const {
  Value copy = paramCopies.lookup(fn.getOperation());
  if (!copy)
    return op.emitOpError("has no copy of its kernel's parameters (internal "
                          "error)");
  Value p = LLVM::GEPOp::create(e.rw, e.loc, copy.getType(), e.i8(), copy,
                                ArrayRef<LLVM::GEPArg>{int32_t(offset)});
  if (allocaAddressSpace() != 0)
    p = LLVM::AddrSpaceCastOp::create(e.rw, e.loc, e.ptr(0), p);
  return e.toInt(p, op.getType());
}

/// An `addrspacecast` between the space's pointers and generic ones.
FailureOr<Value> GPUTargetInfo::cvta(Emitter &e, CvtaOp op, Value addr) const {
  unsigned as = *addressSpace(op.getSpace());
  bool toGeneric = op.getDir() == CvtaDir::to_generic;
  if (as == 0)
    return e.intCast(addr, op.getType());
  Value p = e.toPtr(addr, toGeneric ? as : 0);
  Value q =
      LLVM::AddrSpaceCastOp::create(e.rw, e.loc, e.ptr(toGeneric ? 0 : as), p);
  return e.toInt(q, op.getType());
}

/// A pointer in the space's address space (`ld.param` through an address
/// reads the kernel's parameter copy through its generic address).
FailureOr<Value> GPUTargetInfo::accessPointer(ConversionPatternRewriter &rw,
                                              Operation *op, StateSpace space,
                                              Value addr, uint64_t,
                                              unsigned) const {
  unsigned as = space == StateSpace::param ? 0 : *addressSpace(space);
  return Emitter{rw, op->getLoc()}.toPtr(addr, as);
}

namespace {

//===----------------------------------------------------------------------===//
// Before the conversion: checks, `.approx` math, helper calls
//===----------------------------------------------------------------------===//

/// Rejects, with a located error each, what no GPU target lowers faithfully
/// yet, then what `target` refuses.
LogicalResult checkSupported(ModuleOp module, const GPUTargetInfo &target) {
  bool ok = true;
  std::string tail = target.notSupported();
  auto fail = [&](Operation *op, const Twine &what) {
    if (what.isTriviallyEmpty())
      op->emitOpError() << StringRef(tail).ltrim();
    else
      op->emitOpError() << what << tail;
    ok = false;
  };
  module.walk([&](Operation *op) {
    if (isa<IterationBarrierOp>(op))
      return fail(op, "");
    if (auto pa = dyn_cast<ParamAddressOp>(op);
        pa && pa.getType().getIntOrFloatBitWidth() != 64)
      return fail(op, "32-bit parameter addresses");
    if (auto m = dyn_cast<MatchOp>(op);
        m && m.getMode() == MatchMode::any && !m.getPred().use_empty())
      return fail(op, "the predicate of match.any");
    if (auto v = dyn_cast<VoteOp>(op);
        v && v.getType() != (v.getMode() == VoteMode::ballot
                                 ? Type(IntegerType::get(op->getContext(), 32))
                                 : Type(IntegerType::get(op->getContext(), 1))))
      return fail(op, "this vote result type");
    if (auto st = dyn_cast<StoreOp>(op);
        st && st.getSpace() == StateSpace::param)
      return fail(op, "st.param through an address");
    if (auto a = dyn_cast<AtomOp>(op); a && a.getSpace() == StateSpace::param)
      return fail(op, "atom.param");
    if (auto a = dyn_cast<RedOp>(op); a && a.getSpace() == StateSpace::param)
      return fail(op, "red.param");
    if (auto c = dyn_cast<CvtaOp>(op); c && c.getSpace() == StateSpace::param)
      return fail(op, "cvta.param");
    if (auto g = dyn_cast<GlobalOp>(op)) {
      if (g.getSpace() == StateSpace::param)
        return fail(op, "a .param variable");
      if (g.getSpace() == StateSpace::local &&
          !g->getAttr("wooly.function_scope"))
        return fail(op, "a module-scope .local variable");
      if (g.getSpace() == StateSpace::local && g.getInitAttr())
        return fail(op, "an initialized .local variable");
    }
    if (failed(target.checkOp(op)))
      ok = false;
  });
  return success(ok);
}

/// Rewrites the `math` ops that `wooly-expand-arith` makes of `.approx`,
/// and the ops it marks with `kApproxAttr`, into the target's
/// approximations (the GPU's own results).
LogicalResult lowerApproxMath(ModuleOp module, const GPUTargetInfo &target) {
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    auto form = op->getAttrOfType<StringAttr>(kApproxAttr);
    if (!form)
      return;
    op->removeAttr(kApproxAttr);
    OpBuilder b(op);
    Emitter e{b, op->getLoc()};
    if (Value r = target.approxArith(e, op, form.getValue())) {
      op->getResult(0).replaceAllUsesWith(r);
      op->erase();
    }
  });
  module.walk([&](Operation *op) {
    if (isa<math::SinOp, math::CosOp, math::Exp2Op, math::Log2Op, math::RsqrtOp,
            math::TanhOp>(op))
      ops.push_back(op);
  });
  bool ok = true;
  for (Operation *op : ops) {
    OpBuilder b(op);
    Emitter e{b, op->getLoc()};
    FailureOr<Value> r = target.approxMath(e, op);
    if (failed(r)) {
      ok = false;
      continue;
    }
    if (!*r)
      continue;
    op->getResult(0).replaceAllUsesWith(*r);
    op->erase();
  }
  return success(ok);
}

/// Rewrites the calls of `__wooly_*` helpers as the target says and drops
/// the helpers' declarations.
LogicalResult lowerHelperCalls(ModuleOp module, const GPUTargetInfo &target) {
  SmallVector<func::CallOp> calls;
  module.walk([&](func::CallOp c) {
    if (c.getCallee().starts_with("__wooly_"))
      calls.push_back(c);
  });
  bool ok = true;
  for (func::CallOp c : calls) {
    OpBuilder b(c);
    Emitter e{b, c.getLoc()};
    FailureOr<Value> r = target.helperCall(e, c);
    if (failed(r)) {
      ok = false;
      continue;
    }
    c.getResult(0).replaceAllUsesWith(*r);
    c.erase();
  }
  for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>()))
    if (fn.getName().starts_with("__wooly_") && fn.isDeclaration() &&
        fn.symbolKnownUseEmpty(module))
      fn.erase();
  return success(ok);
}

} // namespace

//===----------------------------------------------------------------------===//
// Value helpers shared by the targets
//===----------------------------------------------------------------------===//

Value gpu::mapScalars(Emitter &e, Value v,
                      llvm::function_ref<Value(Value)> fn) {
  auto vt = dyn_cast<VectorType>(v.getType());
  if (!vt)
    return fn(v);
  Value out = LLVM::UndefOp::create(e.rw, e.loc, vt);
  for (int64_t i = 0; i < vt.getNumElements(); ++i) {
    Value x = LLVM::ExtractElementOp::create(e.rw, e.loc, v, e.c32(i));
    out = LLVM::InsertElementOp::create(e.rw, e.loc, out, fn(x), e.c32(i));
  }
  return out;
}

Value gpu::narrowSource(Emitter &e, Value d) {
  auto ext = d.getDefiningOp<arith::ExtFOp>();
  if (!ext)
    return {};
  Value x = ext.getIn();
  if (x.getType().isF32())
    return x;
  if (x.getType().isF16())
    return LLVM::FPExtOp::create(e.rw, e.loc, e.rw.getF32Type(), x);
  return {};
}

/// `__wooly_cvt_{e4m3,e5m2}_f16`: the fp8 in the low byte of `arg` as f16
/// bits (exact, in integer arithmetic: for GPUs without PTX's OCP fp8
/// conversions, e.g. sm_80, or gfx942, whose fp8 is the FNUZ variant). e5m2
/// is the upper byte of an f16; an e4m3 normal moves its exponent (bias 7
/// to 15), an e4m3 subnormal m * 2^-9 is computed in f32 (exact). NaN
/// gives PTX's canonical f16 NaN.
Value gpu::fp8ToF16(Emitter &e, Value arg, bool e4m3) {
  OpBuilder &b = e.rw;
  auto c = [&](uint64_t v) { return e.c32(v); };
  auto and_ = [&](Value x, uint64_t m) {
    return Value(LLVM::AndOp::create(b, e.loc, x, c(m)));
  };
  auto shl = [&](Value x, uint64_t n) {
    return Value(LLVM::ShlOp::create(b, e.loc, x, c(n)));
  };
  auto lshr = [&](Value x, uint64_t n) {
    return Value(LLVM::LShrOp::create(b, e.loc, x, c(n)));
  };
  auto icmp = [&](LLVM::ICmpPredicate p, Value x, uint64_t v) {
    return Value(LLVM::ICmpOp::create(b, e.loc, p, x, c(v)));
  };
  Value x = and_(arg, 0xff);
  Value bits;
  if (e4m3) {
    Value sign = shl(and_(x, 0x80), 8);
    Value exp = and_(lshr(x, 3), 0xf);
    Value man = and_(x, 0x7);
    Value normal = LLVM::OrOp::create(
        b, e.loc, shl(LLVM::AddOp::create(b, e.loc, exp, c(8)), 10),
        shl(man, 7));
    Value f = LLVM::UIToFPOp::create(b, e.loc, b.getF32Type(), man);
    f = LLVM::FMulOp::create(
        b, e.loc, f,
        LLVM::ConstantOp::create(b, e.loc, b.getF32Type(),
                                 b.getF32FloatAttr(0x1p-9f)));
    Value h = LLVM::FPTruncOp::create(b, e.loc, b.getF16Type(), f);
    Value sub = e.intCast(LLVM::BitcastOp::create(b, e.loc, b.getI16Type(), h),
                          e.i32());
    Value isSub = icmp(LLVM::ICmpPredicate::eq, exp, 0);
    bits = LLVM::OrOp::create(
        b, e.loc, sign, LLVM::SelectOp::create(b, e.loc, isSub, sub, normal));
    Value isNaN = icmp(LLVM::ICmpPredicate::eq, and_(x, 0x7f), 0x7f);
    return LLVM::SelectOp::create(b, e.loc, isNaN, c(0x7fff), bits);
  }
  bits = shl(x, 8);
  Value isNaN = icmp(LLVM::ICmpPredicate::ugt, and_(bits, 0x7fff), 0x7c00);
  return LLVM::SelectOp::create(b, e.loc, isNaN, c(0x7fff), bits);
}

namespace {
/// Names op class `OpT` as a value (for generic emitting lambdas).
template <typename OpT> struct Tag { using type = OpT; };
} // namespace

/// `__wooly_cvt_f64_{e4m3,e5m2}_rn_satfinite` of an f32 `x`: rounds the
/// significand (with the implicit bit) to the format's precision, to
/// nearest even, shifting further for the format's subnormals; out of range
/// and infinities give the largest finite value, NaN gives 0x7f.
Value gpu::f32ToFp8(Emitter &e, Value x, Fp8Format fmt) {
  OpBuilder &b = e.rw;
  using P = LLVM::ICmpPredicate;
  auto c = [&](uint64_t v) { return e.c32(v); };
  auto bin = [&](auto tag, Value l, Value r) {
    using OpT = typename decltype(tag)::type;
    return Value(OpT::create(b, e.loc, l, r));
  };
  auto icmp = [&](P p, Value l, Value r) {
    return Value(LLVM::ICmpOp::create(b, e.loc, p, l, r));
  };
  auto sel = [&](Value cond, Value t, Value f) {
    return Value(LLVM::SelectOp::create(b, e.loc, cond, t, f));
  };
  Value bits = LLVM::BitcastOp::create(b, e.loc, e.i32(), x);
  Value sign =
      bin(Tag<LLVM::AndOp>(), bin(Tag<LLVM::LShrOp>(), bits, c(24)), c(0x80));
  Value abs = bin(Tag<LLVM::AndOp>(), bits, c(0x7fffffff));
  Value isNaN = icmp(P::ugt, abs, c(0x7f800000));
  Value exp =
      bin(Tag<LLVM::SubOp>(), bin(Tag<LLVM::LShrOp>(), abs, c(23)), c(127));
  Value man = bin(Tag<LLVM::OrOp>(), bin(Tag<LLVM::AndOp>(), abs, c(0x7fffff)),
                  c(0x800000));
  // Bits below the format's last place: 23 - M, plus the distance below
  // its smallest normal exponent (capped: past 25 everything rounds to 0).
  Value below = bin(Tag<LLVM::SubOp>(), c(1 - fmt.bias), exp);
  Value subnormal = icmp(P::sgt, below, c(0));
  Value shift = bin(Tag<LLVM::AddOp>(), c(23 - fmt.mantissa),
                    sel(subnormal, below, c(0)));
  shift = sel(icmp(P::ugt, shift, c(25)), c(25), shift);
  Value q = bin(Tag<LLVM::LShrOp>(), man, shift);
  Value one = c(1);
  Value rem =
      bin(Tag<LLVM::AndOp>(), man,
          bin(Tag<LLVM::SubOp>(), bin(Tag<LLVM::ShlOp>(), one, shift), one));
  Value half =
      bin(Tag<LLVM::ShlOp>(), one, bin(Tag<LLVM::SubOp>(), shift, one));
  Value odd = icmp(P::ne, bin(Tag<LLVM::AndOp>(), q, one), c(0));
  Value up = bin(Tag<LLVM::OrOp>(), icmp(P::ugt, rem, half),
                 bin(Tag<LLVM::AndOp>(), icmp(P::eq, rem, half), odd));
  q = bin(Tag<LLVM::AddOp>(), q, LLVM::ZExtOp::create(b, e.loc, e.i32(), up));
  // Normal: biased exponent above the significand (a carry out of the
  // significand bumps the exponent by itself); subnormal: the significand.
  Value normal =
      bin(Tag<LLVM::SubOp>(),
          bin(Tag<LLVM::AddOp>(),
              bin(Tag<LLVM::ShlOp>(), bin(Tag<LLVM::AddOp>(), exp, c(fmt.bias)),
                  c(fmt.mantissa)),
              q),
          c(1u << fmt.mantissa));
  Value enc = sel(subnormal, q, normal);
  enc = sel(icmp(P::ugt, enc, c(fmt.maxFinite)), c(fmt.maxFinite), enc);
  enc = bin(Tag<LLVM::OrOp>(), enc, sign);
  return sel(isNaN, c(0x7f), enc);
}

Value gpu::f64ToHalf(Emitter &e, Value x, Type half) {
  OpBuilder &b = e.rw;
  Type f32 = b.getF32Type(), f64 = b.getF64Type();
  Value r = LLVM::FPTruncOp::create(b, e.loc, f32, x);
  Value back = LLVM::FPExtOp::create(b, e.loc, f64, r);
  Value inexact =
      LLVM::FCmpOp::create(b, e.loc, LLVM::FCmpPredicate::one, back, x);
  Value away = LLVM::FCmpOp::create(b, e.loc, LLVM::FCmpPredicate::ogt,
                                    LLVM::FAbsOp::create(b, e.loc, f64, back),
                                    LLVM::FAbsOp::create(b, e.loc, f64, x));
  Value bits = LLVM::BitcastOp::create(b, e.loc, e.i32(), r);
  // A magnitude rounded up steps back by one unit (also from infinity to
  // the largest finite f32): sign-magnitude bits minus one.
  bits = LLVM::SelectOp::create(
      b, e.loc, LLVM::AndOp::create(b, e.loc, inexact, away),
      LLVM::SubOp::create(b, e.loc, bits, e.c32(1)), bits);
  bits = LLVM::SelectOp::create(
      b, e.loc, inexact, LLVM::OrOp::create(b, e.loc, bits, e.c32(1)), bits);
  Value odd = LLVM::BitcastOp::create(b, e.loc, f32, bits);
  Value h = LLVM::FPTruncOp::create(b, e.loc, half, odd);
  return helperBits(e, h, isNaNOf(e, x), 0x7fff);
}

/// `r`, a float rounded to nearest from the wider `exact`, stepped one
/// unit (its bits, of integer type `it`, plus or minus one: they are
/// sign-magnitude) where that rounding went the wrong way for `d`. NaNs and
/// infinities of `exact` are kept.
static Value stepDirected(Emitter &e, Value r, Value exact, Type it,
                          Directed d) {
  OpBuilder &b = e.rw;
  Location loc = e.loc;
  Type wide = exact.getType();
  Value back = LLVM::FPExtOp::create(b, loc, wide, r);
  Value bits = LLVM::BitcastOp::create(b, loc, it, r);
  Value one = e.cst(it, 1);
  Value smaller = LLVM::SubOp::create(b, loc, bits, one); // magnitude down
  Value larger = LLVM::AddOp::create(b, loc, bits, one);  // magnitude up
  Value negative = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::slt, bits,
                                        e.cst(it, 0));
  Value wrong, stepped;
  switch (d) {
  case Directed::TowardZero:
    wrong = LLVM::FCmpOp::create(b, loc, LLVM::FCmpPredicate::ogt,
                                 LLVM::FAbsOp::create(b, loc, wide, back),
                                 LLVM::FAbsOp::create(b, loc, wide, exact));
    stepped = smaller;
    break;
  case Directed::Down:
    wrong = LLVM::FCmpOp::create(b, loc, LLVM::FCmpPredicate::ogt, back, exact);
    stepped = LLVM::SelectOp::create(b, loc, negative, larger, smaller);
    break;
  case Directed::Up:
    wrong = LLVM::FCmpOp::create(b, loc, LLVM::FCmpPredicate::olt, back, exact);
    stepped = LLVM::SelectOp::create(b, loc, negative, smaller, larger);
    break;
  }
  bits = LLVM::SelectOp::create(b, loc, wrong, stepped, bits);
  return LLVM::BitcastOp::create(b, loc, r.getType(), bits);
}

Value gpu::f64ToHalfDirected(Emitter &e, Value x, Type half, Directed d) {
  OpBuilder &b = e.rw;
  Value f = LLVM::FPTruncOp::create(b, e.loc, b.getF32Type(), x);
  f = stepDirected(e, f, x, e.i32(), d);
  Value h = LLVM::FPTruncOp::create(b, e.loc, half, f);
  h = stepDirected(e, h, f, b.getI16Type(), d);
  return helperBits(e, h, isNaNOf(e, x), 0x7fff);
}

Value gpu::lowerDirectedHalfHelper(Emitter &e, StringRef helper, Value x) {
  if (!helper.consume_front("__wooly_cvt_f64_"))
    return {};
  Type half;
  if (helper.consume_front("bf16_"))
    half = e.rw.getBF16Type();
  else if (helper.consume_front("f16_"))
    half = e.rw.getF16Type();
  else
    return {};
  std::optional<Directed> d =
      llvm::StringSwitch<std::optional<Directed>>(helper)
          .Case("rz", Directed::TowardZero)
          .Case("rm", Directed::Down)
          .Case("rp", Directed::Up)
          .Default(std::nullopt);
  if (!d)
    return {};
  return f64ToHalfDirected(e, x, half, *d);
}

Value gpu::helperBits(Emitter &e, Value r, Value isNaN, uint64_t nanBits) {
  unsigned w = r.getType().getIntOrFloatBitWidth();
  Type it = e.rw.getIntegerType(w);
  Value bits = LLVM::BitcastOp::create(e.rw, e.loc, it, r);
  bits = LLVM::SelectOp::create(e.rw, e.loc, isNaN, e.cst(it, nanBits), bits);
  return e.intCast(bits, e.i32());
}

Value gpu::isNaNOf(Emitter &e, Value x) {
  return LLVM::FCmpOp::create(e.rw, e.loc, LLVM::FCmpPredicate::uno, x, x);
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

FailureOr<std::unique_ptr<WoolyLLVMLowering>>
gpu::prepareGPULowering(ModuleOp module,
                        std::unique_ptr<GPUTargetInfo> target) {
  if (failed(checkSupported(module, *target)) ||
      failed(lowerApproxMath(module, *target)) ||
      failed(lowerHelperCalls(module, *target)))
    return failure();
  return common::prepareLowering(module, std::move(target));
}
