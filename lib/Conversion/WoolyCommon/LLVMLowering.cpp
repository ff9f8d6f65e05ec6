//===- LLVMLowering.cpp - Wooly to LLVM, for every target ------*- C++ -*-===//
//
// The target-neutral half of the lowerings (see LLVMLowering.h).
//
// Functions: a kernel `@k` becomes an `llvm.func`, marked by the target,
// with the metadata the compile API reads (`wooly.kernel`,
// `wooly.param_offsets`, `wooly.param_sizes`, ...); a device function keeps
// its signature after the arguments the target adds (several results are
// returned as a struct). Function-scope `.local` variables become allocas
// in the entry block (one per activation), in the target's alloca address
// space.
//
// Addresses: a Wooly address is an integer in the state space of the access
// (PTX's model). An access goes through the pointer the target makes of it
// (on a GPU an `inttoptr` to the space's pointer type; on the host, a
// checked host address). Atomics and fences keep their order, and their PTX
// scope becomes the target's `syncscope`.
//
// The driver: LLVM globals for the module's variables, the kernels'
// parameter layouts and the target's preparation, then one full dialect
// conversion with the shared patterns, the target's and upstream arith/cf/
// func/math/vector to LLVM, then the target's finishing touches.
//
//===----------------------------------------------------------------------===//

#include "LLVMLowering.h"
#include "Wooly/Dialect/Wooly/Analysis/KernelAnalysis.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::common;

//===----------------------------------------------------------------------===//
// Value helpers
//===----------------------------------------------------------------------===//

uint64_t common::byteSize(Type t) {
  if (auto v = dyn_cast<VectorType>(t))
    return v.getNumElements() * byteSize(v.getElementType());
  unsigned bits = t.getIntOrFloatBitWidth();
  return bits == 1 ? 1 : (bits + 7) / 8;
}

LLVM::AtomicOrdering common::ordering(std::optional<MemOrder> sem) {
  if (!sem)
    return LLVM::AtomicOrdering::monotonic;
  switch (*sem) {
  case MemOrder::weak:
  case MemOrder::relaxed:
    return LLVM::AtomicOrdering::monotonic;
  case MemOrder::acquire:
    return LLVM::AtomicOrdering::acquire;
  case MemOrder::release:
    return LLVM::AtomicOrdering::release;
  case MemOrder::acq_rel:
    return LLVM::AtomicOrdering::acq_rel;
  case MemOrder::sc:
    return LLVM::AtomicOrdering::seq_cst;
  }
  return LLVM::AtomicOrdering::seq_cst;
}

LLVM::AtomicBinOp common::atomicBinOp(AtomicOp op) {
  switch (op) {
  case AtomicOp::add:
    return LLVM::AtomicBinOp::add;
  case AtomicOp::fadd:
    return LLVM::AtomicBinOp::fadd;
  case AtomicOp::umin:
    return LLVM::AtomicBinOp::umin;
  case AtomicOp::smin:
    return LLVM::AtomicBinOp::min;
  case AtomicOp::fmin:
    return LLVM::AtomicBinOp::fmin;
  case AtomicOp::umax:
    return LLVM::AtomicBinOp::umax;
  case AtomicOp::smax:
    return LLVM::AtomicBinOp::max;
  case AtomicOp::fmax:
    return LLVM::AtomicBinOp::fmax;
  case AtomicOp::inc:
    return LLVM::AtomicBinOp::uinc_wrap;
  case AtomicOp::dec:
    return LLVM::AtomicBinOp::udec_wrap;
  case AtomicOp::and_:
    return LLVM::AtomicBinOp::_and;
  case AtomicOp::or_:
    return LLVM::AtomicBinOp::_or;
  case AtomicOp::xor_:
    return LLVM::AtomicBinOp::_xor;
  case AtomicOp::exch:
  case AtomicOp::cas:
    return LLVM::AtomicBinOp::xchg;
  }
  return LLVM::AtomicBinOp::xchg;
}

Attribute common::denseInitializer(GlobalOp g, uint64_t count) {
  auto el = dyn_cast_or_null<DenseElementsAttr>(g.getInitAttr());
  if (!el)
    return {};
  Type et = el.getElementType();
  auto shape = RankedTensorType::get({int64_t(count)}, et);
  // A list shorter than the variable (`{1.0}` for `f32 a[4]`) is padded.
  if (uint64_t(el.getNumElements()) == count)
    return el.reshape(shape);
  SmallVector<Attribute> values(el.getValues<Attribute>());
  values.resize(std::min<uint64_t>(values.size(), count));
  Builder b(g.getContext());
  Attribute zero = isa<FloatType>(et) ? Attribute(b.getFloatAttr(et, 0.0))
                                      : Attribute(b.getIntegerAttr(et, 0));
  values.resize(count, zero);
  return DenseElementsAttr::get(shape, values);
}

void common::replaceWithCallResults(ConversionPatternRewriter &rw,
                                    Operation *op, LLVM::CallOp call) {
  if (op->getNumResults() <= 1) {
    rw.replaceOp(op, call.getResults());
    return;
  }
  SmallVector<Value> results;
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    results.push_back(
        LLVM::ExtractValueOp::create(rw, op->getLoc(), call.getResult(), i));
  rw.replaceOp(op, results);
}

Type common::resultTypeOf(MLIRContext *mctx, TypeRange results) {
  if (results.empty())
    return LLVM::LLVMVoidType::get(mctx);
  if (results.size() == 1)
    return results[0];
  return LLVM::LLVMStructType::getLiteral(mctx, SmallVector<Type>(results));
}

Value Emitter::intCast(Value v, Type t) {
  unsigned from = v.getType().getIntOrFloatBitWidth();
  unsigned to = t.getIntOrFloatBitWidth();
  if (from == to)
    return v;
  if (from < to)
    return LLVM::ZExtOp::create(rw, loc, t, v);
  return LLVM::TruncOp::create(rw, loc, t, v);
}

Value Emitter::call(StringRef fn, Type result, ValueRange args) {
  auto op =
      LLVM::CallOp::create(rw, loc, result ? TypeRange{result} : TypeRange{},
                           FlatSymbolRefAttr::get(rw.getContext(), fn), args);
  return result ? op.getResult() : Value();
}

Value Emitter::intrinsic(StringRef name, Type result, ValueRange args) {
  auto op = LLVM::CallIntrinsicOp::create(rw, loc, result,
                                          rw.getStringAttr(name), args);
  return result ? op.getResult(0) : Value();
}

Value Emitter::namedOp(StringRef name, Type result, ValueRange operands) {
  if (!OperationName(name, rw.getContext()).isRegistered())
    return {};
  OperationState st(loc, name);
  st.addOperands(operands);
  if (result)
    st.addTypes(result);
  Operation *op = rw.create(st);
  return result ? op->getResult(0) : Value();
}

Value common::derivedSReg(Emitter &e, SpecialReg reg,
                          llvm::function_ref<Value()> lane) {
  // lt = (1 << lane) - 1, le = (2 << lane) - 1 (wraps to ~0 for lane 31);
  // ge and gt are their complements.
  auto lanemask = [&](bool le, bool invert) {
    Value m = LLVM::SubOp::create(
        e.rw, e.loc,
        LLVM::ShlOp::create(e.rw, e.loc, e.c32(le ? 2 : 1), lane()), e.c32(1));
    return invert ? Value(LLVM::XOrOp::create(e.rw, e.loc, m, e.c32(~0u))) : m;
  };
  switch (reg) {
  case SpecialReg::cluster_ctaid:
  case SpecialReg::cluster_ctarank:
    return e.c32(0);
  case SpecialReg::cluster_nctaid:
  case SpecialReg::cluster_nctarank:
    return e.c32(1);
  case SpecialReg::warpsize:
    return e.c32(32);
  case SpecialReg::lanemask_eq:
    return LLVM::ShlOp::create(e.rw, e.loc, e.c32(1), lane());
  case SpecialReg::lanemask_lt:
    return lanemask(false, false);
  case SpecialReg::lanemask_le:
    return lanemask(true, false);
  case SpecialReg::lanemask_ge:
    return lanemask(false, true);
  case SpecialReg::lanemask_gt:
    return lanemask(true, true);
  default:
    return {};
  }
}

//===----------------------------------------------------------------------===//
// TargetInfo defaults
//===----------------------------------------------------------------------===//

TargetInfo::~TargetInfo() = default;

std::string TargetInfo::notSupported() const {
  return (" is not supported yet on " + name()).str();
}

std::optional<unsigned> TargetInfo::addressSpace(StateSpace s) const {
  switch (s) {
  case StateSpace::generic:
    return 0;
  case StateSpace::global:
    return 1;
  case StateSpace::shared:
    return 3;
  case StateSpace::constant:
    return 4;
  case StateSpace::local:
    return 5;
  case StateSpace::shared_cluster:
  case StateSpace::param:
    return std::nullopt;
  }
  return std::nullopt;
}

LLVM::Linkage TargetInfo::functionLinkage(FuncOp op) const {
  StringRef linkage = op.getLinkage().value_or("");
  if (op.getKernel() || op.isDeclaration() || linkage == "visible" ||
      linkage == "extern")
    return LLVM::Linkage::External;
  if (linkage == "weak")
    return LLVM::Linkage::Weak;
  return LLVM::Linkage::Internal;
}

void TargetInfo::emitTrap(ConversionPatternRewriter &rw, Operation *op) const {
  LLVM::Trap::create(rw, op->getLoc());
}

#define WOOLY_LOWER_REFUSE(Op)                                                 \
  LogicalResult TargetInfo::lower(Op op, Op::Adaptor,                          \
                                  ConversionPatternRewriter &) const {         \
    return op->emitOpError() << StringRef(notSupported()).ltrim();             \
  }
WOOLY_TARGET_OPS(WOOLY_LOWER_REFUSE)
#undef WOOLY_LOWER_REFUSE

namespace {

/// Base of the Wooly patterns: gives access to the shared state and the
/// target.
template <typename Op> struct WoolyPattern : ConvertOpToLLVMPattern<Op> {
  WoolyPattern(const LLVMTypeConverter &converter, LoweringState &state,
               const TargetInfo &target)
      : ConvertOpToLLVMPattern<Op>(converter), state(state), target(target) {}
  LoweringState &state;
  const TargetInfo &target;
  Emitter emitter(ConversionPatternRewriter &rw, Operation *op) const {
    return Emitter{rw, op->getLoc()};
  }
};

/// An op whose lowering is the target's own (`TargetInfo::lower`).
template <typename Op> struct TargetOpLowering : WoolyPattern<Op> {
  using WoolyPattern<Op>::WoolyPattern;
  LogicalResult matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    return this->target.lower(op, adaptor, rw);
  }
};

//===----------------------------------------------------------------------===//
// Functions, calls and terminators
//===----------------------------------------------------------------------===//

/// Lowers `wooly.func` to `llvm.func` with the target's symbol, linkage and
/// arguments: kernels are marked by the target (with their launch bounds)
/// and carry the compile API's metadata; the entry block holds the locals'
/// allocas and branches to the body.
struct FuncOpLowering : WoolyPattern<FuncOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(FuncOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    MLIRContext *mctx = op.getContext();
    if (op.isDeclaration() && !target.keepsDeclarations()) {
      // External functions (`vprintf`, ...) are resolved at the call.
      rw.eraseOp(op);
      return success();
    }
    bool kernel = op.getKernel();
    ArrayRef<Type> argTypes = op.getArgumentTypes();
    SmallVector<Type> llvmArgs = target.functionArguments(op);
    auto fnType = LLVM::LLVMFunctionType::get(
        resultTypeOf(mctx, op.getResultTypes()), llvmArgs);
    auto fn = LLVM::LLVMFuncOp::create(
        rw, op.getLoc(), target.functionSymbol(op.getSymName(), kernel), fnType,
        target.functionLinkage(op));
    if (op.isDeclaration()) {
      rw.eraseOp(op);
      return success();
    }
    if (kernel) {
      target.markKernel(rw, fn, op);
      // Metadata for the compile API (read before translation to LLVM IR).
      SmallVector<int64_t> offsets, sizes;
      for (auto [i, t] : llvm::enumerate(argTypes)) {
        offsets.push_back(state.paramOffsets[op.getSymName()][i]);
        sizes.push_back(byteSize(t));
      }
      fn->setAttr("wooly.kernel", rw.getStringAttr(op.getSymName()));
      fn->setAttr("wooly.param_offsets", rw.getDenseI64ArrayAttr(offsets));
      fn->setAttr("wooly.param_sizes", rw.getDenseI64ArrayAttr(sizes));
      // Launch parameters appended by the sharing passes.
      SmallVector<Attribute> roles;
      bool anyRole = false;
      for (unsigned i = 0; i < argTypes.size(); ++i) {
        auto role = op.getArgAttrOfType<StringAttr>(i, "wooly.launch_param");
        anyRole |= bool(role);
        roles.push_back(role ? role : rw.getStringAttr(""));
      }
      if (anyRole)
        fn->setAttr("wooly.param_roles", rw.getArrayAttr(roles));
      for (StringRef bound : {"maxntid", "reqntid"})
        if (Attribute a = op->getAttr(bound))
          fn->setAttr(("wooly." + bound).str(), a);
      target.finishKernel(rw, fn, op, state);
    }
    Block *entry =
        rw.createBlock(&fn.getBody(), {}, llvmArgs,
                       SmallVector<Location>(llvmArgs.size(), op.getLoc()));
    Block *body = &op.getBody().front();
    rw.inlineRegionBefore(op.getBody(), fn.getBody(), fn.getBody().end());
    rw.setInsertionPointToEnd(entry);
    Emitter e = emitter(rw, op);
    SmallVector<Value> bodyArgs = target.bodyArguments(e, op, entry, state);
    // Local variables of this function: one alloca each, per activation.
    for (auto &[sym, var] : state.localVars) {
      if (var.function != op.getSymName())
        continue;
      Value n = e.c64(var.bytes ? var.bytes : 1);
      Value slot = LLVM::AllocaOp::create(rw, op.getLoc(),
                                          e.ptr(target.allocaAddressSpace()),
                                          e.i8(), n, var.align);
      state.localAllocas[{fn.getOperation(), sym}] = slot;
    }
    target.finishEntry(e, op, fn, entry, state);
    LLVM::BrOp::create(rw, op.getLoc(), bodyArgs, body);
    rw.eraseOp(op);
    return success();
  }
};

/// `wooly.ret` returns the results (a struct when there are several).
struct RetOpLowering : WoolyPattern<RetOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(RetOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    ValueRange vals = adaptor.getOperands();
    if (vals.size() <= 1) {
      rw.replaceOpWithNewOp<LLVM::ReturnOp>(op, vals);
      return success();
    }
    auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
    Type st = fn.getFunctionType().getReturnType();
    Value agg = LLVM::UndefOp::create(rw, op.getLoc(), st);
    for (auto [i, v] : llvm::enumerate(vals))
      agg = LLVM::InsertValueOp::create(rw, op.getLoc(), agg, v, i);
    rw.replaceOpWithNewOp<LLVM::ReturnOp>(op, agg);
    return success();
  }
};

/// `trap` ends the launch the target's way (`llvm.trap` on a GPU).
struct TrapOpLowering : WoolyPattern<TrapOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(TrapOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    target.emitTrap(rw, op);
    rw.replaceOpWithNewOp<LLVM::UnreachableOp>(op);
    return success();
  }
};

/// `wooly.call` is a direct `llvm.call` of the callee's symbol, after the
/// target's implicit arguments (the `.param` ABI becomes the target calling
/// convention of LLVM); the target lowers its special callees itself.
struct CallOpLowering : WoolyPattern<CallOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(CallOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (std::optional<LogicalResult> r =
            target.lowerSpecialCall(op, adaptor, rw))
      return *r;
    FailureOr<std::string> callee = target.calleeSymbol(op);
    if (failed(callee))
      return failure();
    Emitter e = emitter(rw, op);
    SmallVector<Value> args = target.implicitArguments(e, op);
    args.append(adaptor.getOperands().begin(), adaptor.getOperands().end());
    Type rt = resultTypeOf(op.getContext(), op.getResultTypes());
    bool isVoid = isa<LLVM::LLVMVoidType>(rt);
    auto call = LLVM::CallOp::create(
        rw, op.getLoc(), isVoid ? TypeRange{} : TypeRange{rt},
        FlatSymbolRefAttr::get(op.getContext(), *callee), args);
    replaceWithCallResults(rw, op, call);
    return success();
  }
};

/// `wooly.call_indirect` calls through a function's generic address, which
/// the target may check first.
struct CallIndirectOpLowering : WoolyPattern<CallIndirectOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(CallIndirectOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (failed(target.checkIndirectCall(rw, op, adaptor.getCallee())))
      return failure();
    Emitter e = emitter(rw, op);
    SmallVector<Value> args{e.toPtr(adaptor.getCallee(), 0)};
    SmallVector<Value> implicit = target.implicitArguments(e, op);
    args.append(implicit.begin(), implicit.end());
    args.append(adaptor.getArgs().begin(), adaptor.getArgs().end());
    SmallVector<Type> argTypes(ValueRange(implicit).getTypes());
    llvm::append_range(argTypes, adaptor.getArgs().getTypes());
    auto fnType = LLVM::LLVMFunctionType::get(
        resultTypeOf(op.getContext(), op.getResultTypes()), argTypes);
    auto call = LLVM::CallOp::create(rw, op.getLoc(), fnType, args);
    replaceWithCallResults(rw, op, call);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Variables and addresses
//===----------------------------------------------------------------------===//

/// `wooly.global` ops were turned into LLVM globals before the patterns ran.
struct GlobalOpLowering : WoolyPattern<GlobalOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(GlobalOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    rw.eraseOp(op);
    return success();
  }
};

/// Replaces `op` with `v` unless it failed.
LogicalResult replaceWith(ConversionPatternRewriter &rw, Operation *op,
                          FailureOr<Value> v) {
  if (failed(v))
    return failure();
  rw.replaceOp(op, *v);
  return success();
}

/// `wooly.addressof`: a local variable's alloca in its function, or what
/// the target makes of a variable's or function's address (PTX's
/// `mov.u64 %rd, sym`).
struct AddressOfOpLowering : WoolyPattern<AddressOfOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(AddressOfOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    StringRef sym = op.getGlobal();
    auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
    auto local = state.localAllocas.find({fn.getOperation(), sym});
    if (local != state.localAllocas.end())
      return replaceWith(rw, op, target.localAddress(e, op, local->second));
    if (state.localVars.count(sym))
      return op.emitOpError("takes the address of local variable '")
             << sym << "' outside its function";
    return replaceWith(rw, op, target.symbolAddress(e, op, state));
  }
};

/// `wooly.param_address i`: the address of kernel parameter `i` in the
/// kernel's parameter buffer (the target's own or a copy of it).
struct ParamAddressOpLowering : WoolyPattern<ParamAddressOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(ParamAddressOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
    auto kernel = fn->getAttrOfType<StringAttr>("wooly.kernel");
    if (!kernel)
      return op.emitOpError("a parameter address in a device function")
             << target.notSupported();
    ArrayRef<uint64_t> offsets = state.paramOffsets[kernel.getValue()];
    if (op.getIndex() >= offsets.size())
      return op.emitOpError("parameter index out of range");
    return replaceWith(rw, op,
                       target.paramAddress(e, op, fn, offsets[op.getIndex()]));
  }
};

/// `wooly.cvta`: between a space's addresses and generic ones, as the
/// target lays them out.
struct CvtaOpLowering : WoolyPattern<CvtaOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(CvtaOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    return replaceWith(rw, op, target.cvta(e, op, adaptor.getAddr()));
  }
};

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// `wooly.ld`: a load (for `.v2`/`.v4` of scalars a vector load where the
/// target wants one) through the target's pointer.
struct LoadOpLowering : WoolyPattern<LoadOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(LoadOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Type t = op.getResult(0).getType();
    uint64_t elem = byteSize(t);
    uint64_t n = op.getNumResults();
    FailureOr<Value> p = target.accessPointer(
        rw, op, op.getSpace(), adaptor.getAddr(), elem * n, kAccessRead);
    if (failed(p))
      return failure();
    Emitter e = emitter(rw, op);
    bool atomic = op.getSem() && *op.getSem() != MemOrder::weak && n == 1;
    bool invariant = target.invariantLoads() && op.getCache() &&
                     *op.getCache() == CacheOp::nc &&
                     op.getSpace() == StateSpace::global;
    auto load = [&](Type type, Value at, uint64_t align) {
      auto ld = LLVM::LoadOp::create(
          rw, e.loc, type, at, align, op.getIsVolatile(),
          /*isNonTemporal=*/false, invariant, /*isInvariantGroup=*/false,
          atomic ? ordering(op.getSem()) : LLVM::AtomicOrdering::not_atomic,
          atomic ? target.syncScope(op.getScope()) : StringRef());
      target.markAccess(ld);
      return ld.getResult();
    };
    if (n == 1) {
      rw.replaceOp(op, load(t, *p, elem));
      return success();
    }
    SmallVector<Value> results;
    if (!isa<VectorType>(t) && target.vectorAccesses()) {
      // PTX requires `.vN` accesses to be aligned to their whole size.
      Value v = load(VectorType::get({int64_t(n)}, t), *p, elem * n);
      for (uint64_t i = 0; i < n; ++i)
        results.push_back(
            LLVM::ExtractElementOp::create(rw, e.loc, v, e.c32(i)));
    } else {
      for (uint64_t i = 0; i < n; ++i)
        results.push_back(load(t, e.gep(*p, int64_t(i * elem)), elem));
    }
    rw.replaceOp(op, results);
    return success();
  }
};

/// `wooly.st`: a store (for `.v2`/`.v4` of scalars a vector store where the
/// target wants one) through the target's pointer.
struct StoreOpLowering : WoolyPattern<StoreOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(StoreOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    ValueRange vals = adaptor.getValues();
    Type t = vals[0].getType();
    uint64_t elem = byteSize(t);
    uint64_t n = vals.size();
    FailureOr<Value> p = target.accessPointer(
        rw, op, op.getSpace(), adaptor.getAddr(), elem * n, kAccessWrite);
    if (failed(p))
      return failure();
    Emitter e = emitter(rw, op);
    bool atomic = op.getSem() && *op.getSem() != MemOrder::weak && n == 1;
    auto store = [&](Value v, Value at, uint64_t align) {
      auto st = LLVM::StoreOp::create(
          rw, e.loc, v, at, align, op.getIsVolatile(),
          /*isNonTemporal=*/false, /*isInvariantGroup=*/false,
          atomic ? ordering(op.getSem()) : LLVM::AtomicOrdering::not_atomic,
          atomic ? target.syncScope(op.getScope()) : StringRef());
      target.markAccess(st);
    };
    if (n == 1) {
      store(vals[0], *p, elem);
    } else if (!isa<VectorType>(t) && target.vectorAccesses()) {
      auto vt = VectorType::get({int64_t(n)}, t);
      Value v = LLVM::UndefOp::create(rw, e.loc, vt);
      for (auto [i, x] : llvm::enumerate(vals))
        v = LLVM::InsertElementOp::create(rw, e.loc, v, x, e.c32(i));
      store(v, *p, elem * n);
    } else {
      for (auto [i, x] : llvm::enumerate(vals))
        store(x, e.gep(*p, int64_t(i * elem)), elem);
    }
    rw.eraseOp(op);
    return success();
  }
};

/// Emits an atomic read-modify-write with the op's order and scope through
/// the target's pointer and returns the old value.
FailureOr<Value> emitAtomic(ConversionPatternRewriter &rw, Operation *op,
                            const TargetInfo &target, StateSpace space,
                            AtomicOp kind, Value addr, ValueRange values,
                            std::optional<MemOrder> sem,
                            std::optional<MemScope> scope) {
  Type t = values[0].getType();
  uint64_t size = byteSize(t);
  FailureOr<Value> p = target.accessPointer(rw, op, space, addr, size,
                                            kAccessRead | kAccessWrite);
  if (failed(p))
    return failure();
  Emitter e{rw, op->getLoc()};
  if (space == StateSpace::shared || space == StateSpace::shared_cluster)
    if (Value old = target.sharedAtomic(e, kind, *p, values))
      return old;
  LLVM::AtomicOrdering ord = ordering(sem);
  StringRef ss = target.syncScope(scope);
  if (kind == AtomicOp::cas) {
    Value cmp = values[0], val = values[1];
    bool isFloat = !isa<IntegerType>(t);
    Type it = rw.getIntegerType(size * 8);
    if (isFloat) {
      cmp = LLVM::BitcastOp::create(rw, e.loc, it, cmp);
      val = LLVM::BitcastOp::create(rw, e.loc, it, val);
    }
    LLVM::AtomicOrdering failOrd = ord == LLVM::AtomicOrdering::release
                                       ? LLVM::AtomicOrdering::monotonic
                                       : (ord == LLVM::AtomicOrdering::acq_rel
                                              ? LLVM::AtomicOrdering::acquire
                                              : ord);
    auto pair = LLVM::AtomicCmpXchgOp::create(rw, e.loc, *p, cmp, val, ord,
                                              failOrd, ss);
    target.markAccess(pair);
    Value old = LLVM::ExtractValueOp::create(rw, e.loc, pair, 0);
    if (isFloat)
      old = LLVM::BitcastOp::create(rw, e.loc, t, old);
    return old;
  }
  auto rmw = LLVM::AtomicRMWOp::create(rw, e.loc, atomicBinOp(kind), *p,
                                       values[0], ord, ss);
  target.markAccess(rmw);
  return Value(rmw);
}

/// `wooly.atom`: `atomicrmw`/`cmpxchg`.
struct AtomOpLowering : WoolyPattern<AtomOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(AtomOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    return replaceWith(rw, op,
                       emitAtomic(rw, op, target, op.getSpace(), op.getOp(),
                                  adaptor.getAddr(), adaptor.getValues(),
                                  op.getSem(), op.getScope()));
  }
};

/// `wooly.red`: an atomic whose old value is dropped.
struct RedOpLowering : WoolyPattern<RedOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(RedOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (failed(emitAtomic(rw, op, target, op.getSpace(), op.getOp(),
                          adaptor.getAddr(), ValueRange{adaptor.getValue()},
                          op.getSem(), op.getScope())))
      return failure();
    rw.eraseOp(op);
    return success();
  }
};

/// `wooly.fence`: `fence` with the PTX scope as the target's `syncscope`
/// (`fence.sc` is `seq_cst`, `fence.acq_rel` is `acq_rel`).
struct FenceOpLowering : WoolyPattern<FenceOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(FenceOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    LLVM::AtomicOrdering ord = op.getSem() == MemOrder::sc
                                   ? LLVM::AtomicOrdering::seq_cst
                                   : LLVM::AtomicOrdering::acq_rel;
    rw.replaceOpWithNewOp<LLVM::FenceOp>(op, ord,
                                         target.syncScope(op.getScope()));
    return success();
  }
};

/// Hints with no effect on the results: prefetches.
template <typename Op> struct EraseLowering : WoolyPattern<Op> {
  using WoolyPattern<Op>::WoolyPattern;
  LogicalResult matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    rw.eraseOp(op);
    return success();
  }
};

/// `createpolicy` yields an opaque cache policy; hints are not kept yet.
struct CreatePolicyOpLowering : WoolyPattern<CreatePolicyOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(CreatePolicyOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    rw.replaceOp(op, e.cst(op.getType(), 0));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Module-level preparation
//===----------------------------------------------------------------------===//

/// Fills the initializer region of `lg`, the global of `g`: zeros (undef
/// for shared memory, which has no initial value), then the listed elements
/// (numbers, or addresses as the target makes them).
LogicalResult initializeGlobal(OpBuilder &b, GlobalOp g, LLVM::GlobalOp lg,
                               const TargetInfo &target,
                               const LoweringState &state) {
  Type elem = g.getElemType();
  Type arrTy = lg.getGlobalType();
  uint64_t count = cast<LLVM::LLVMArrayType>(arrTy).getNumElements();
  bool shared = g.getSpace() == StateSpace::shared ||
                g.getSpace() == StateSpace::shared_cluster;
  Location loc = g.getLoc();
  Block *blk = b.createBlock(&lg.getInitializerRegion());
  b.setInsertionPointToStart(blk);
  Value agg = shared ? Value(LLVM::UndefOp::create(b, loc, arrTy))
                     : Value(LLVM::ZeroOp::create(b, loc, arrTy));
  if (auto list = dyn_cast_or_null<ArrayAttr>(g.getInitAttr());
      list && !shared) {
    for (auto [i, a] : llvm::enumerate(list)) {
      if (i >= count)
        break;
      Value v;
      if (auto ref = dyn_cast<FlatSymbolRefAttr>(a)) {
        if (!isa<IntegerType>(elem))
          return g.emitOpError("address initializer for a non-integer "
                               "element");
        FailureOr<Value> addr =
            target.initializerAddress(b, g, ref.getValue(), elem, state);
        if (failed(addr))
          return failure();
        v = *addr;
      } else if (auto ia = dyn_cast<IntegerAttr>(a)) {
        v = LLVM::ConstantOp::create(
            b, loc, elem,
            isa<IntegerType>(elem)
                ? Attribute(b.getIntegerAttr(elem, ia.getValue()))
                : Attribute(ia));
      } else if (auto fa = dyn_cast<FloatAttr>(a)) {
        v = LLVM::ConstantOp::create(b, loc, elem, fa);
      } else {
        return g.emitOpError("unsupported initializer element ") << a;
      }
      agg = LLVM::InsertValueOp::create(b, loc, agg, v, int64_t(i));
    }
  }
  LLVM::ReturnOp::create(b, loc, agg);
  return success();
}

/// Creates the LLVM globals of the module's variables, collects locals and
/// the kernels' parameter layout, then lets the target prepare the rest.
LogicalResult prepareModule(ModuleOp module, LoweringState &state,
                            const TargetInfo &target) {
  if (failed(target.beginModule(module)))
    return failure();
  OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  for (auto g : module.getOps<GlobalOp>())
    state.globalSpaces[g.getSymName()] = g.getSpace();
  for (auto g : module.getOps<GlobalOp>()) {
    uint64_t bytes = byteSize(g.getElemType()) * g.getCount();
    uint64_t align = std::max<uint64_t>(g.getAlign(), 1);
    if (g.getSpace() == StateSpace::local) {
      auto owner = g->getAttrOfType<FlatSymbolRefAttr>("wooly.function_scope");
      if (!owner)
        return g.emitOpError("a module-scope .local variable")
               << target.notSupported();
      if (g.getInitAttr())
        return g.emitOpError("initialized .local variables are not supported");
      state.localVars[g.getSymName()] = {owner.getValue(), bytes, align};
      continue;
    }
    FailureOr<LoweredGlobal> lg = target.createGlobal(b, g, align);
    if (failed(lg))
      return failure();
    // No global (the host's shared memory), a declaration, or a dense
    // initializer: nothing to fill in.
    if (!lg->op || lg->declaration || lg->op.getValueAttr())
      continue;
    if (failed(initializeGlobal(b, g, lg->op, target, state)))
      return failure();
    // The next global after this one: the LLVM module keeps the variables
    // in declaration order, which decides where the GPU targets place
    // shared variables (kernels may rely on more than their declared
    // alignment, as they do with the original PTX).
    b.setInsertionPointAfter(lg->op);
  }

  // Kernel parameter layout: each parameter at its alignment (CUDA's rule).
  for (auto f : module.getOps<FuncOp>()) {
    if (!f.getKernel())
      continue;
    std::vector<uint64_t> offsets, sizes;
    kernelParamLayout(f, offsets, sizes);
    state.paramOffsets[f.getSymName()].assign(offsets.begin(), offsets.end());
  }
  return target.prepareModule(module, b, state);
}

} // namespace

//===----------------------------------------------------------------------===//
// Patterns and driver
//===----------------------------------------------------------------------===//

void common::populateWoolyToLLVMCommonPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns,
    LoweringState &state, const TargetInfo &target) {
  patterns.add<FuncOpLowering, RetOpLowering, TrapOpLowering, CallOpLowering,
               CallIndirectOpLowering, GlobalOpLowering, AddressOfOpLowering,
               ParamAddressOpLowering, CvtaOpLowering, LoadOpLowering,
               StoreOpLowering, AtomOpLowering, RedOpLowering, FenceOpLowering,
               EraseLowering<PrefetchOp>, CreatePolicyOpLowering>(
      converter, state, target);
#define WOOLY_ADD_TARGET_PATTERN(Op)                                           \
  patterns.add<TargetOpLowering<Op>>(converter, state, target);
  WOOLY_TARGET_OPS(WOOLY_ADD_TARGET_PATTERN)
#undef WOOLY_ADD_TARGET_PATTERN
}

WoolyLLVMLowering::~WoolyLLVMLowering() = default;

FailureOr<std::unique_ptr<WoolyLLVMLowering>>
common::prepareLowering(ModuleOp module, std::unique_ptr<TargetInfo> target) {
  auto lowering = std::make_unique<Lowering>(std::move(target));
  if (failed(prepareModule(module, lowering->state, *lowering->target)))
    return failure();
  // Byte-array parameters (`insert_bytes`/`extract_bytes` expand to
  // strided slices) become element inserts/extracts VectorToLLVM knows.
  RewritePatternSet vectorPatterns(module.getContext());
  vector::populateVectorInsertExtractStridedSliceTransforms(vectorPatterns);
  if (failed(applyPatternsGreedily(module, std::move(vectorPatterns))))
    return failure();
  return std::unique_ptr<WoolyLLVMLowering>(std::move(lowering));
}

void Lowering::populatePatterns(const LLVMTypeConverter &converter,
                                RewritePatternSet &patterns) {
  populateWoolyToLLVMCommonPatterns(converter, patterns, state, *target);
  arith::populateArithToLLVMConversionPatterns(converter, patterns);
  cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
  populateFuncToLLVMConversionPatterns(converter, patterns);
  populateMathToLLVMConversionPatterns(converter, patterns);
  target->populatePatterns(converter, patterns);
  populateVectorToLLVMConversionPatterns(converter, patterns);
}

void Lowering::configureTarget(ConversionTarget &conversionTarget) const {
  conversionTarget.addLegalDialect<LLVM::LLVMDialect>();
  conversionTarget.addLegalOp<ModuleOp>();
  target->addLegalDialects(conversionTarget);
  conversionTarget.addIllegalDialect<
      WoolyDialect, arith::ArithDialect, math::MathDialect,
      cf::ControlFlowDialect, func::FuncDialect, vector::VectorDialect>();
}

void Lowering::finalize(ModuleOp module) { target->finalizeModule(module); }

LogicalResult common::applyLowering(ModuleOp module,
                                    WoolyLLVMLowering &lowering) {
  MLIRContext *ctx = module.getContext();
  LowerToLLVMOptions options(ctx);
  LLVMTypeConverter converter(ctx, options);
  RewritePatternSet patterns(ctx);
  lowering.populatePatterns(converter, patterns);
  LLVMConversionTarget conversionTarget(*ctx);
  lowering.configureTarget(conversionTarget);
  if (failed(
          applyFullConversion(module, conversionTarget, std::move(patterns))))
    return failure();
  lowering.finalize(module);
  return success();
}
