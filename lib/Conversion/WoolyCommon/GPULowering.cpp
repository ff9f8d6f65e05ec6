//===- GPULowering.cpp - Wooly to LLVM for any GPU -------------*- C++ -*-===//
//
// The target-neutral half of the GPU lowerings (see GPULowering.h).
//
// Functions: a kernel `@k` becomes `llvm.func @k`, marked by the target,
// taking its parameters by value, with the metadata the compile API reads
// (`wooly.kernel`, `wooly.param_offsets`, `wooly.param_sizes`, ...); a
// device function keeps its name and signature (several results are
// returned as a struct). Function-scope `.local` variables become allocas
// in the entry block (one per activation), in the target's alloca address
// space.
//
// Addresses: a Wooly address is an integer in the state space of the access
// (PTX's model). An access in space S becomes `inttoptr` to a pointer in the
// target's address space of S and a load/store/atomic through it; `cvta` is
// an `addrspacecast` between the two pointer types. Atomics and fences keep
// their order, and their PTX scope becomes the target's `syncscope`.
//
// The driver: shared and target checks (located errors, nothing rewritten
// yet), the target's `.approx` math and `__wooly_*` helper lowering, LLVM
// globals for the module's variables, then one full dialect conversion with
// the shared patterns, the target's patterns and upstream arith/cf/func/
// math/vector to LLVM.
//
//===----------------------------------------------------------------------===//

#include "GPULowering.h"
#include "LLVMLowering.h"
#include "Wooly/Dialect/Wooly/Analysis/KernelAnalysis.h"

#include "Wooly/Conversion/Passes.h"

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
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::common;
using namespace mlir::wooly::gpu;

//===----------------------------------------------------------------------===//
// Emitter and value helpers
//===----------------------------------------------------------------------===//

Value Emitter::intCast(Value v, Type t) {
  unsigned from = v.getType().getIntOrFloatBitWidth();
  unsigned to = t.getIntOrFloatBitWidth();
  if (from == to)
    return v;
  if (from < to)
    return LLVM::ZExtOp::create(rw, loc, t, v);
  return LLVM::TruncOp::create(rw, loc, t, v);
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

Value gpu::narrowHelperArg(Emitter &e, Value v, Type ft) {
  Value i = e.intCast(v, e.rw.getI16Type());
  return LLVM::BitcastOp::create(e.rw, e.loc, ft, i);
}

GPUTargetInfo::~GPUTargetInfo() = default;

std::string GPUTargetInfo::notSupported() const {
  return (" is not supported yet on " + name()).str();
}

std::optional<unsigned> GPUTargetInfo::addressSpace(StateSpace s) const {
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

#define WOOLY_GPU_LOWER_REFUSE(Op)                                             \
  LogicalResult GPUTargetInfo::lower(Op op, Op::Adaptor,                       \
                                     ConversionPatternRewriter &) const {      \
    return op->emitOpError() << StringRef(notSupported()).ltrim();             \
  }
WOOLY_GPU_TARGET_OPS(WOOLY_GPU_LOWER_REFUSE)
#undef WOOLY_GPU_LOWER_REFUSE

namespace {

/// Base of the Wooly patterns: gives access to the shared state and the
/// target.
template <typename Op> struct WoolyPattern : ConvertOpToLLVMPattern<Op> {
  WoolyPattern(const LLVMTypeConverter &converter, LoweringState &state,
               const GPUTargetInfo &target)
      : ConvertOpToLLVMPattern<Op>(converter), state(state), target(target) {}
  LoweringState &state;
  const GPUTargetInfo &target;
  Emitter emitter(ConversionPatternRewriter &rw, Operation *op) const {
    return Emitter{rw, op->getLoc()};
  }
};

/// An op whose lowering is the target's own (`GPUTargetInfo::lower`).
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

Type resultTypeOf(MLIRContext *mctx, TypeRange results) {
  if (results.empty())
    return LLVM::LLVMVoidType::get(mctx);
  if (results.size() == 1)
    return results[0];
  return LLVM::LLVMStructType::getLiteral(mctx, SmallVector<Type>(results));
}

/// Lowers `wooly.func` to `llvm.func`: kernels are marked by the target
/// (with their launch bounds) and carry the compile API's metadata; device
/// functions are internal unless visible.
struct FuncOpLowering : WoolyPattern<FuncOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(FuncOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    MLIRContext *mctx = op.getContext();
    bool kernel = op.getKernel();
    ArrayRef<Type> argTypes = op.getArgumentTypes();
    auto fnType = LLVM::LLVMFunctionType::get(
        resultTypeOf(mctx, op.getResultTypes()), argTypes);
    StringRef linkage = op.getLinkage().value_or("");
    LLVM::Linkage l = LLVM::Linkage::Internal;
    if (kernel || op.isDeclaration() || linkage == "visible" ||
        linkage == "extern")
      l = LLVM::Linkage::External;
    else if (linkage == "weak")
      l = LLVM::Linkage::Weak;
    auto fn =
        LLVM::LLVMFuncOp::create(rw, op.getLoc(), op.getSymName(), fnType, l);
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
      // A byte-array parameter (`.param .align A .b8 p[N]`, a vector of i8
      // here) keeps its declared alignment: the code generator would align
      // the vector to its size and move every later parameter away from
      // CUDA's layout, which the launch's parameter buffer follows.
      for (unsigned i = 0; i < argTypes.size(); ++i)
        if (auto align = op.getArgAttrOfType<IntegerAttr>(i, "wooly.align"))
          if (isa<VectorType>(argTypes[i]))
            fn.setArgAttr(i, LLVM::LLVMDialect::getStackAlignmentAttrName(),
                          rw.getI64IntegerAttr(align.getInt()));
    }
    // A new entry block holds the locals' allocas, then branches to the body.
    Block *entry =
        rw.createBlock(&fn.getBody(), {}, argTypes,
                       SmallVector<Location>(argTypes.size(), op.getLoc()));
    Block *body = &op.getBody().front();
    rw.inlineRegionBefore(op.getBody(), fn.getBody(), fn.getBody().end());
    rw.setInsertionPointToEnd(entry);
    for (auto &[sym, var] : state.localVars) {
      if (var.function != op.getSymName())
        continue;
      Value n = LLVM::ConstantOp::create(
          rw, op.getLoc(), rw.getI64Type(),
          rw.getI64IntegerAttr(var.bytes ? var.bytes : 1));
      Value slot = LLVM::AllocaOp::create(
          rw, op.getLoc(),
          LLVM::LLVMPointerType::get(mctx, target.allocaAddressSpace()),
          rw.getI8Type(), n, var.align);
      state.localAllocas[{fn.getOperation(), sym}] = slot;
    }
    // A kernel that takes parameter addresses reads its parameters from a
    // copy laid out like the CUDA parameter buffer.
    bool paramAddresses = false;
    fn.getBody().walk([&](ParamAddressOp) {
      paramAddresses = true;
      return WalkResult::interrupt();
    });
    if (kernel && paramAddresses) {
      uint64_t bytes = 1;
      for (auto [i, t] : llvm::enumerate(argTypes))
        bytes = std::max(bytes,
                         state.paramOffsets[op.getSymName()][i] + byteSize(t));
      Value n = LLVM::ConstantOp::create(rw, op.getLoc(), rw.getI64Type(),
                                         rw.getI64IntegerAttr(bytes));
      Value copy = LLVM::AllocaOp::create(
          rw, op.getLoc(),
          LLVM::LLVMPointerType::get(mctx, target.allocaAddressSpace()),
          rw.getI8Type(), n, /*alignment=*/16);
      for (auto [i, arg] : llvm::enumerate(entry->getArguments())) {
        Value slot = LLVM::GEPOp::create(
            rw, op.getLoc(), copy.getType(), rw.getI8Type(), copy,
            ArrayRef<LLVM::GEPArg>{
                int32_t(state.paramOffsets[op.getSymName()][i])});
        LLVM::StoreOp::create(rw, op.getLoc(), arg, slot, /*alignment=*/1);
      }
      state.paramCopies[fn.getOperation()] = copy;
    }
    LLVM::BrOp::create(rw, op.getLoc(), entry->getArguments(), body);
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

/// `trap` is `llvm.trap`.
struct TrapOpLowering : WoolyPattern<TrapOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(TrapOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    LLVM::Trap::create(rw, op.getLoc());
    rw.replaceOpWithNewOp<LLVM::UnreachableOp>(op);
    return success();
  }
};

/// `wooly.call` is a direct `llvm.call` (the `.param` ABI becomes the
/// target calling convention of LLVM).
struct CallOpLowering : WoolyPattern<CallOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(CallOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Type rt = resultTypeOf(op.getContext(), op.getResultTypes());
    bool isVoid = isa<LLVM::LLVMVoidType>(rt);
    auto call = LLVM::CallOp::create(
        rw, op.getLoc(), isVoid ? TypeRange{} : TypeRange{rt},
        FlatSymbolRefAttr::get(op.getContext(), op.getCallee()),
        adaptor.getOperands());
    replaceWithCallResults(rw, op, call);
    return success();
  }
};

/// `wooly.call_indirect` calls through a function's generic address.
struct CallIndirectOpLowering : WoolyPattern<CallIndirectOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(CallIndirectOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    Value fnPtr = e.toPtr(adaptor.getCallee(), 0);
    SmallVector<Value> args{fnPtr};
    args.append(adaptor.getArgs().begin(), adaptor.getArgs().end());
    Type rt = resultTypeOf(op.getContext(), op.getResultTypes());
    auto fnType = LLVM::LLVMFunctionType::get(
        rt, SmallVector<Type>(adaptor.getArgs().getTypes()));
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

/// `wooly.addressof`: the address of a variable in its own state space
/// (PTX's `mov.u64 %rd, sym`), or a function's generic address.
struct AddressOfOpLowering : WoolyPattern<AddressOfOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(AddressOfOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    StringRef sym = op.getGlobal();
    auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
    auto local = state.localAllocas.find({fn.getOperation(), sym});
    if (local != state.localAllocas.end()) {
      unsigned as = *target.addressSpace(StateSpace::local);
      Value p = local->second;
      if (as != target.allocaAddressSpace())
        p = LLVM::AddrSpaceCastOp::create(rw, e.loc, e.ptr(as), p);
      rw.replaceOp(op, e.toInt(p, op.getType()));
      return success();
    }
    if (state.localVars.count(sym))
      return op.emitOpError("takes the address of local variable '")
             << sym << "' outside its function";
    unsigned as = 0;
    auto space = state.globalSpaces.find(sym);
    if (space != state.globalSpaces.end())
      as = *target.addressSpace(space->second);
    Value p = LLVM::AddressOfOp::create(rw, e.loc, e.ptr(as), sym);
    rw.replaceOp(op, e.toInt(p, op.getType()));
    return success();
  }
};

/// `wooly.param_address i`: the generic address of parameter `i` in the
/// kernel's copy of its parameter buffer (made by FuncOpLowering), so that
/// `ld.param` through it (lowered as a generic load) reads its bytes. 64-bit
/// addresses only (checkSupported refuses the others).
struct ParamAddressOpLowering : WoolyPattern<ParamAddressOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(ParamAddressOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
    auto copy = state.paramCopies.find(fn.getOperation());
    if (copy == state.paramCopies.end())
      return op.emitOpError("parameter addresses of device functions")
             << target.notSupported();
    ArrayRef<uint64_t> offsets = state.paramOffsets[fn.getName()];
    if (op.getIndex() >= offsets.size())
      return op.emitOpError("parameter index out of range");
    Value p = LLVM::GEPOp::create(
        rw, e.loc, copy->second.getType(), rw.getI8Type(), copy->second,
        ArrayRef<LLVM::GEPArg>{int32_t(offsets[op.getIndex()])});
    if (target.allocaAddressSpace() != 0)
      p = LLVM::AddrSpaceCastOp::create(rw, e.loc, e.ptr(0), p);
    rw.replaceOp(op, e.toInt(p, op.getType()));
    return success();
  }
};

/// `wooly.cvta`: an `addrspacecast` between the space's pointers and
/// generic ones.
struct CvtaOpLowering : WoolyPattern<CvtaOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(CvtaOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    unsigned as = *target.addressSpace(op.getSpace());
    bool toGeneric = op.getDir() == CvtaDir::to_generic;
    if (as == 0) {
      rw.replaceOp(op, e.intCast(adaptor.getAddr(), op.getType()));
      return success();
    }
    Value p = e.toPtr(adaptor.getAddr(), toGeneric ? as : 0);
    Value q =
        LLVM::AddrSpaceCastOp::create(rw, e.loc, e.ptr(toGeneric ? 0 : as), p);
    rw.replaceOp(op, e.toInt(q, op.getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// `wooly.ld`: a load (a vector load for `.v2`/`.v4` of scalars) through a
/// pointer in the op's address space.
struct LoadOpLowering : WoolyPattern<LoadOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(LoadOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    // `ld.param` through an address reads the kernel's parameter copy (see
    // ParamAddressOpLowering) through its generic address.
    unsigned as = op.getSpace() == StateSpace::param
                      ? 0
                      : *target.addressSpace(op.getSpace());
    Type t = op.getResult(0).getType();
    uint64_t elem = byteSize(t);
    uint64_t n = op.getNumResults();
    Value p = e.toPtr(adaptor.getAddr(), as);
    bool atomic = op.getSem() && *op.getSem() != MemOrder::weak && n == 1;
    bool invariant = op.getCache() && *op.getCache() == CacheOp::nc &&
                     op.getSpace() == StateSpace::global;
    if (n == 1) {
      rw.replaceOp(
          op,
          LLVM::LoadOp::create(
              rw, e.loc, t, p, elem, op.getIsVolatile(),
              /*isNonTemporal=*/false, invariant,
              /*isInvariantGroup=*/false,
              atomic ? ordering(op.getSem()) : LLVM::AtomicOrdering::not_atomic,
              atomic ? target.syncScope(op.getScope()) : StringRef())
              .getResult());
      return success();
    }
    SmallVector<Value> results;
    if (!isa<VectorType>(t)) {
      // PTX requires `.vN` accesses to be aligned to their whole size.
      auto vt = VectorType::get({int64_t(n)}, t);
      Value v = LLVM::LoadOp::create(rw, e.loc, vt, p, elem * n,
                                     op.getIsVolatile(), false, invariant);
      for (uint64_t i = 0; i < n; ++i)
        results.push_back(
            LLVM::ExtractElementOp::create(rw, e.loc, v, e.c32(i)));
    } else {
      for (uint64_t i = 0; i < n; ++i) {
        Value q =
            LLVM::GEPOp::create(rw, e.loc, e.ptr(as), rw.getI8Type(), p,
                                ArrayRef<LLVM::GEPArg>{int32_t(i * elem)});
        results.push_back(LLVM::LoadOp::create(
            rw, e.loc, t, q, elem, op.getIsVolatile(), false, invariant));
      }
    }
    rw.replaceOp(op, results);
    return success();
  }
};

/// `wooly.st`: a store (a vector store for `.v2`/`.v4` of scalars).
struct StoreOpLowering : WoolyPattern<StoreOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(StoreOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    unsigned as = *target.addressSpace(op.getSpace());
    ValueRange vals = adaptor.getValues();
    Type t = vals[0].getType();
    uint64_t elem = byteSize(t);
    uint64_t n = vals.size();
    Value p = e.toPtr(adaptor.getAddr(), as);
    bool atomic = op.getSem() && *op.getSem() != MemOrder::weak && n == 1;
    if (n == 1) {
      LLVM::StoreOp::create(
          rw, e.loc, vals[0], p, elem, op.getIsVolatile(), false, false,
          atomic ? ordering(op.getSem()) : LLVM::AtomicOrdering::not_atomic,
          atomic ? target.syncScope(op.getScope()) : StringRef());
    } else if (!isa<VectorType>(t)) {
      auto vt = VectorType::get({int64_t(n)}, t);
      Value v = LLVM::UndefOp::create(rw, e.loc, vt);
      for (auto [i, x] : llvm::enumerate(vals))
        v = LLVM::InsertElementOp::create(rw, e.loc, v, x, e.c32(i));
      LLVM::StoreOp::create(rw, e.loc, v, p, elem * n, op.getIsVolatile());
    } else {
      for (auto [i, x] : llvm::enumerate(vals)) {
        Value q =
            LLVM::GEPOp::create(rw, e.loc, e.ptr(as), rw.getI8Type(), p,
                                ArrayRef<LLVM::GEPArg>{int32_t(i * elem)});
        LLVM::StoreOp::create(rw, e.loc, x, q, elem, op.getIsVolatile());
      }
    }
    rw.eraseOp(op);
    return success();
  }
};

/// Emits an atomic read-modify-write with the op's order and scope and
/// returns the old value.
Value emitAtomic(Emitter &e, const GPUTargetInfo &target, StateSpace space,
                 AtomicOp kind, Value addr, ValueRange values,
                 std::optional<MemOrder> sem, std::optional<MemScope> scope) {
  Type t = values[0].getType();
  Value p = e.toPtr(addr, *target.addressSpace(space));
  LLVM::AtomicOrdering ord = ordering(sem);
  StringRef ss = target.syncScope(scope);
  if (kind == AtomicOp::cas) {
    Value cmp = values[0], val = values[1];
    bool isFloat = !isa<IntegerType>(t);
    Type it = e.rw.getIntegerType(byteSize(t) * 8);
    if (isFloat) {
      cmp = LLVM::BitcastOp::create(e.rw, e.loc, it, cmp);
      val = LLVM::BitcastOp::create(e.rw, e.loc, it, val);
    }
    LLVM::AtomicOrdering failOrd = ord == LLVM::AtomicOrdering::release
                                       ? LLVM::AtomicOrdering::monotonic
                                       : (ord == LLVM::AtomicOrdering::acq_rel
                                              ? LLVM::AtomicOrdering::acquire
                                              : ord);
    Value pair = LLVM::AtomicCmpXchgOp::create(e.rw, e.loc, p, cmp, val, ord,
                                               failOrd, ss);
    Value old = LLVM::ExtractValueOp::create(e.rw, e.loc, pair, 0);
    if (isFloat)
      old = LLVM::BitcastOp::create(e.rw, e.loc, t, old);
    return old;
  }
  return LLVM::AtomicRMWOp::create(e.rw, e.loc, atomicBinOp(kind), p, values[0],
                                   ord, ss);
}

/// `wooly.atom`: `atomicrmw`/`cmpxchg`.
struct AtomOpLowering : WoolyPattern<AtomOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(AtomOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    rw.replaceOp(op, emitAtomic(e, target, op.getSpace(), op.getOp(),
                                adaptor.getAddr(), adaptor.getValues(),
                                op.getSem(), op.getScope()));
    return success();
  }
};

/// `wooly.red`: an atomic whose old value is dropped.
struct RedOpLowering : WoolyPattern<RedOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(RedOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    emitAtomic(e, target, op.getSpace(), op.getOp(), adaptor.getAddr(),
               ValueRange{adaptor.getValue()}, op.getSem(), op.getScope());
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

//===----------------------------------------------------------------------===//
// Module-level preparation
//===----------------------------------------------------------------------===//

/// Creates the LLVM globals of the module's variables, collects locals and
/// the kernels' parameter layout.
LogicalResult prepareModule(ModuleOp module, LoweringState &state,
                            const GPUTargetInfo &target) {
  OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  for (auto g : module.getOps<GlobalOp>())
    state.globalSpaces[g.getSymName()] = g.getSpace();
  for (auto g : module.getOps<GlobalOp>()) {
    Type elem = g.getElemType();
    uint64_t bytes = byteSize(elem) * g.getCount();
    uint64_t align = std::max<uint64_t>(g.getAlign(), 1);
    Location loc = g.getLoc();
    if (g.getSpace() == StateSpace::local) {
      auto owner = g->getAttrOfType<FlatSymbolRefAttr>("wooly.function_scope");
      state.localVars[g.getSymName()] = {owner.getValue(), bytes, align};
      continue;
    }
    unsigned as = *target.addressSpace(g.getSpace());
    bool isExtern = g.getLinkage() && *g.getLinkage() == Linkage::extern_;
    bool visible = g.getLinkage() && *g.getLinkage() != Linkage::extern_;
    uint64_t count = g.getCount();
    Type arrTy = LLVM::LLVMArrayType::get(elem, count);
    bool shared = g.getSpace() == StateSpace::shared ||
                  g.getSpace() == StateSpace::shared_cluster;
    if (isExtern || (shared && count == 0)) {
      // Declared here, defined elsewhere (or the dynamic shared memory).
      LLVM::GlobalOp::create(b, loc, arrTy, /*isConstant=*/false,
                             LLVM::Linkage::External, g.getSymName(),
                             Attribute(), align, as);
      continue;
    }
    LLVM::Linkage linkage =
        visible ? LLVM::Linkage::External : LLVM::Linkage::Internal;
    if (g.getLinkage() && *g.getLinkage() == Linkage::weak)
      linkage = LLVM::Linkage::Weak;
    Attribute value = shared ? Attribute() : denseInitializer(g, count);
    auto lg = LLVM::GlobalOp::create(b, loc, arrTy, /*isConstant=*/false,
                                     linkage, g.getSymName(), value, align, as);
    if (value)
      continue;
    // Shared memory is uninitialised; other variables are zeroed, then the
    // listed elements (numbers or addresses in the target's own space).
    Region &r = lg.getInitializerRegion();
    Block *blk = b.createBlock(&r);
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
          StringRef sym = ref.getValue();
          unsigned tas = 0;
          if (auto s = state.globalSpaces.find(sym);
              s != state.globalSpaces.end()) {
            if (s->second == StateSpace::local)
              return g.emitOpError("initializer takes the address of a "
                                   ".local variable");
            tas = *target.addressSpace(s->second);
          }
          Value p = LLVM::AddressOfOp::create(
              b, loc, LLVM::LLVMPointerType::get(b.getContext(), tas), sym);
          v = LLVM::PtrToIntOp::create(b, loc, elem, p);
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
    b.setInsertionPointToStart(module.getBody());
  }

  // Kernel parameter layout: each parameter at its alignment (CUDA's rule).
  for (auto f : module.getOps<FuncOp>()) {
    if (!f.getKernel())
      continue;
    std::vector<uint64_t> offsets, sizes;
    kernelParamLayout(f, offsets, sizes);
    state.paramOffsets[f.getSymName()].assign(offsets.begin(), offsets.end());
  }
  return success();
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
// Patterns and driver
//===----------------------------------------------------------------------===//

void gpu::populateGPULoweringPatterns(const LLVMTypeConverter &converter,
                                      RewritePatternSet &patterns,
                                      LoweringState &state,
                                      const GPUTargetInfo &target) {
  patterns.add<FuncOpLowering, RetOpLowering, TrapOpLowering, CallOpLowering,
               CallIndirectOpLowering, GlobalOpLowering, AddressOfOpLowering,
               ParamAddressOpLowering, CvtaOpLowering, LoadOpLowering,
               StoreOpLowering, AtomOpLowering, RedOpLowering, FenceOpLowering,
               EraseLowering<PrefetchOp>, CreatePolicyOpLowering>(
      converter, state, target);
#define WOOLY_GPU_ADD_TARGET_PATTERN(Op)                                       \
  patterns.add<TargetOpLowering<Op>>(converter, state, target);
  WOOLY_GPU_TARGET_OPS(WOOLY_GPU_ADD_TARGET_PATTERN)
#undef WOOLY_GPU_ADD_TARGET_PATTERN
}

LogicalResult gpu::runGPULowering(ModuleOp module,
                                  const GPUTargetInfo &target) {
  MLIRContext *ctx = module.getContext();
  if (failed(checkSupported(module, target)) ||
      failed(lowerApproxMath(module, target)) ||
      failed(lowerHelperCalls(module, target)))
    return failure();
  LoweringState state;
  if (failed(prepareModule(module, state, target)))
    return failure();
  {
    RewritePatternSet vectorPatterns(ctx);
    vector::populateVectorInsertExtractStridedSliceTransforms(vectorPatterns);
    if (failed(applyPatternsGreedily(module, std::move(vectorPatterns))))
      return failure();
  }

  LowerToLLVMOptions options(ctx);
  LLVMTypeConverter converter(ctx, options);
  RewritePatternSet patterns(ctx);
  populateGPULoweringPatterns(converter, patterns, state, target);
  arith::populateArithToLLVMConversionPatterns(converter, patterns);
  cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
  populateFuncToLLVMConversionPatterns(converter, patterns);
  populateMathToLLVMConversionPatterns(converter, patterns);
  populateVectorToLLVMConversionPatterns(converter, patterns);

  LLVMConversionTarget conversionTarget(*ctx);
  conversionTarget.addLegalOp<ModuleOp>();
  target.addLegalDialects(conversionTarget);
  conversionTarget.addIllegalDialect<
      WoolyDialect, arith::ArithDialect, math::MathDialect,
      cf::ControlFlowDialect, func::FuncDialect, vector::VectorDialect>();
  if (failed(
          applyFullConversion(module, conversionTarget, std::move(patterns))))
    return failure();
  target.finalizeModule(module);
  return success();
}
