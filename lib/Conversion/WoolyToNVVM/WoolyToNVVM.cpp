//===- WoolyToNVVM.cpp - Lower Wooly IR to LLVM + NVVM ----------*- C++ -*-===//
//
// `convert-wooly-to-nvvm`: lowers Wooly kernels (after `wooly-expand-arith`)
// to the LLVM and NVVM dialects with PTX's semantics, for LLVM's NVPTX
// backend.
//
// Functions: a kernel `@k` becomes `llvm.func @k` with `nvvm.kernel`, taking
// its parameters by value; a device function keeps its name and signature
// (several results are returned as a struct). Function-scope `.local`
// variables become allocas in the entry block (one per activation).
//
// Addresses: a Wooly address is an integer in the state space of the access
// (PTX's model). An access in space S becomes `inttoptr` to a pointer in
// NVPTX address space S (generic 0, global 1, shared 3, const 4, local 5,
// shared::cluster 7) and a load/store/atomic through it; `cvta` is an
// `addrspacecast` between the two pointer types.
//
// Before the conversion, ops that map 1:1 to NVVM intrinsics are rewritten
// in place: the `math` ops `wooly-expand-arith` produces for `.approx`
// (`sin`, `cos`, `ex2`, `lg2`, `rsqrt`, `tanh`) and the calls of its
// helpers `__wooly_*` that have an exact NVPTX counterpart (directed
// rounding, f16/bf16 fma.rn, cvt.rn.bf16.f64, fp8 conversions). Ops without
// a faithful lowering yet are rejected up front with a located "not
// supported yet on nvptx".
//
//===----------------------------------------------------------------------===//

#include "../WoolyCommon/LLVMLowering.h"
#include "Wooly/Conversion/Passes.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::wooly {
#define GEN_PASS_DEF_CONVERTWOOLYTONVVM
#include "Wooly/Conversion/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::common;

namespace {

constexpr StringLiteral kNotSupported = " is not supported yet on nvptx";

//===----------------------------------------------------------------------===//
// Shared state and helpers
//===----------------------------------------------------------------------===//

/// What the patterns share.
struct LoweringState {
  /// Function-scope `.local` variables: symbol -> (function, size, align).
  struct LocalVar {
    StringRef function;
    uint64_t bytes;
    uint64_t align;
  };
  llvm::StringMap<LocalVar> localVars;
  /// The alloca of each local variable in the lowered function.
  DenseMap<std::pair<Operation *, StringRef>, Value> localAllocas;
  /// State space of each module-scope variable.
  llvm::StringMap<StateSpace> globalSpaces;
  /// Kernel parameter offsets in the CUDA parameter buffer, per kernel.
  llvm::StringMap<SmallVector<uint64_t>> paramOffsets;
};

/// The NVPTX address space of a PTX state space (param has none here).
std::optional<unsigned> addressSpace(StateSpace s) {
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
    return 7;
  case StateSpace::param:
    return std::nullopt;
  }
  return std::nullopt;
}

/// The LLVM `syncscope` of a PTX scope (`gpu` when absent, as in PTX).
StringRef syncScope(std::optional<MemScope> scope) {
  switch (scope.value_or(MemScope::gpu)) {
  case MemScope::cta:
    return "block";
  case MemScope::cluster:
    return "cluster";
  case MemScope::gpu:
    return "device";
  case MemScope::sys:
    return "";
  }
  return "";
}

/// Builds the lowered code of one op.
struct Emitter {
  OpBuilder &rw;
  Location loc;

  Type i32() { return rw.getI32Type(); }
  Type i64() { return rw.getI64Type(); }
  Type ptr(unsigned as = 0) {
    return LLVM::LLVMPointerType::get(rw.getContext(), as);
  }
  Value cst(Type t, uint64_t v) {
    return LLVM::ConstantOp::create(rw, loc, t, rw.getIntegerAttr(t, v));
  }
  Value c32(uint64_t v) { return cst(i32(), v); }

  /// Zero-extends or truncates integer `v` to `t`.
  Value intCast(Value v, Type t) {
    unsigned from = v.getType().getIntOrFloatBitWidth();
    unsigned to = t.getIntOrFloatBitWidth();
    if (from == to)
      return v;
    if (from < to)
      return LLVM::ZExtOp::create(rw, loc, t, v);
    return LLVM::TruncOp::create(rw, loc, t, v);
  }
  /// Integer address `addr` as a pointer in address space `as`.
  Value toPtr(Value addr, unsigned as) {
    return LLVM::IntToPtrOp::create(rw, loc, ptr(as), addr);
  }
  /// Pointer `p` as an integer of type `t`.
  Value toInt(Value p, Type t) {
    return LLVM::PtrToIntOp::create(rw, loc, t, p);
  }
  Value intrinsic(StringRef name, Type result, ValueRange args) {
    auto op = LLVM::CallIntrinsicOp::create(rw, loc, result,
                                            rw.getStringAttr(name), args);
    return result ? op.getResult(0) : Value();
  }
  /// A value-producing NVVM op by name (`nvvm.read.ptx.sreg.tid.x`).
  Value nvvmOp(StringRef name, Type result) {
    if (!OperationName(name, rw.getContext()).isRegistered())
      return {};
    OperationState st(loc, name);
    st.addTypes(result);
    return rw.create(st)->getResult(0);
  }
};

/// Base of the Wooly patterns: gives access to the shared state.
template <typename Op> struct WoolyPattern : ConvertOpToLLVMPattern<Op> {
  WoolyPattern(const LLVMTypeConverter &converter, LoweringState &state)
      : ConvertOpToLLVMPattern<Op>(converter), state(state) {}
  LoweringState &state;
  Emitter emitter(ConversionPatternRewriter &rw, Operation *op) const {
    return Emitter{rw, op->getLoc()};
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

/// Lowers `wooly.func` to `llvm.func`: kernels get `nvvm.kernel` and their
/// launch bounds; device functions are internal unless visible.
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
      fn->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), rw.getUnitAttr());
      if (auto a = op.getMaxntidAttr())
        fn->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(), a);
      if (auto a = op.getReqntidAttr())
        fn->setAttr(NVVM::NVVMDialect::getReqntidAttrName(), a);
      if (auto a = op.getMinnctapersmAttr())
        fn->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(), a);
      if (auto a = op.getMaxnregAttr())
        fn->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(), a);
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
      Value slot = LLVM::AllocaOp::create(rw, op.getLoc(),
                                          LLVM::LLVMPointerType::get(mctx),
                                          rw.getI8Type(), n, var.align);
      state.localAllocas[{fn.getOperation(), sym}] = slot;
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

/// `exit` is `nvvm.exit` (ends the thread, from any function).
struct ExitOpLowering : WoolyPattern<ExitOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(ExitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    NVVM::Exit::create(rw, op.getLoc());
    rw.replaceOpWithNewOp<LLVM::UnreachableOp>(op);
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

/// `brkpt` is `nvvm.breakpoint`.
struct BrkptOpLowering : WoolyPattern<BrkptOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(BrkptOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    rw.replaceOpWithNewOp<NVVM::Breakpoint>(op);
    return success();
  }
};

/// `wooly.call` is a direct `llvm.call` (PTX's ABI is NVPTX's).
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
      Value p =
          LLVM::AddrSpaceCastOp::create(rw, e.loc, e.ptr(5), local->second);
      rw.replaceOp(op, e.toInt(p, op.getType()));
      return success();
    }
    if (state.localVars.count(sym))
      return op.emitOpError("takes the address of local variable '")
             << sym << "' outside its function";
    unsigned as = 0;
    auto space = state.globalSpaces.find(sym);
    if (space != state.globalSpaces.end())
      as = *addressSpace(space->second);
    Value p = LLVM::AddressOfOp::create(rw, e.loc, e.ptr(as), sym);
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
    unsigned as = *addressSpace(op.getSpace());
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

/// `wooly.isspacep`: `llvm.nvvm.isspacep.<space>`.
struct IsSpacePOpLowering : WoolyPattern<IsSpacePOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(IsSpacePOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    if (op.getSpace() == StateSpace::generic) {
      rw.replaceOp(op, e.cst(rw.getI1Type(), 1));
      return success();
    }
    StringRef name;
    switch (op.getSpace()) {
    case StateSpace::global:
      name = "llvm.nvvm.isspacep.global";
      break;
    case StateSpace::shared:
      name = "llvm.nvvm.isspacep.shared";
      break;
    case StateSpace::shared_cluster:
      name = "llvm.nvvm.isspacep.shared.cluster";
      break;
    case StateSpace::constant:
      name = "llvm.nvvm.isspacep.const";
      break;
    case StateSpace::local:
      name = "llvm.nvvm.isspacep.local";
      break;
    default:
      return op.emitOpError("isspacep.param") << kNotSupported;
    }
    rw.replaceOp(
        op, e.intrinsic(name, rw.getI1Type(), {e.toPtr(adaptor.getAddr(), 0)}));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Special registers
//===----------------------------------------------------------------------===//

/// `wooly.sreg`: `nvvm.read.ptx.sreg.*`.
struct SRegOpLowering : WoolyPattern<SRegOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(SRegOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    StringRef dim = "x";
    if (op.getDim())
      dim = stringifyDim(*op.getDim());
    auto read = [&](StringRef name, Type t) {
      return e.nvvmOp(("nvvm.read.ptx.sreg." + name).str(), t);
    };
    auto withDim = [&](StringRef name) {
      return read((name + "." + dim).str(), e.i32());
    };
    Value v;
    switch (op.getReg()) {
    case SpecialReg::tid:
    case SpecialReg::ntid:
    case SpecialReg::ctaid:
    case SpecialReg::nctaid:
    case SpecialReg::clusterid:
    case SpecialReg::nclusterid:
      v = withDim(stringifySpecialReg(op.getReg()));
      break;
    case SpecialReg::cluster_ctaid:
      v = withDim("cluster.ctaid");
      break;
    case SpecialReg::cluster_nctaid:
      v = withDim("cluster.nctaid");
      break;
    case SpecialReg::cluster_ctarank:
      v = read("cluster.ctarank", e.i32());
      break;
    case SpecialReg::cluster_nctarank:
      v = read("cluster.nctarank", e.i32());
      break;
    case SpecialReg::laneid:
    case SpecialReg::warpid:
    case SpecialReg::nwarpid:
    case SpecialReg::smid:
    case SpecialReg::nsmid:
    case SpecialReg::clock:
    case SpecialReg::warpsize:
      v = read(stringifySpecialReg(op.getReg()), e.i32());
      break;
    case SpecialReg::gridid:
      v = read("gridid", e.i64());
      break;
    case SpecialReg::clock64:
      v = read("clock64", e.i64());
      break;
    case SpecialReg::globaltimer:
      v = read("globaltimer", e.i64());
      break;
    case SpecialReg::globaltimer_lo:
      v = read("globaltimer.lo", e.i32());
      break;
    case SpecialReg::globaltimer_hi: {
      if (Value t = read("globaltimer", e.i64()))
        v = LLVM::LShrOp::create(rw, e.loc, t, e.cst(e.i64(), 32));
      break;
    }
    case SpecialReg::lanemask_eq:
      v = read("lanemask.eq", e.i32());
      break;
    case SpecialReg::lanemask_le:
      v = read("lanemask.le", e.i32());
      break;
    case SpecialReg::lanemask_lt:
      v = read("lanemask.lt", e.i32());
      break;
    case SpecialReg::lanemask_ge:
      v = read("lanemask.ge", e.i32());
      break;
    case SpecialReg::lanemask_gt:
      v = read("lanemask.gt", e.i32());
      break;
    case SpecialReg::dynamic_smem_size:
      v = read("dynamic.smem.size", e.i32());
      break;
    case SpecialReg::total_smem_size:
      v = read("total.smem.size", e.i32());
      break;
    }
    if (!v)
      return op.emitOpError("special register %")
             << stringifySpecialReg(op.getReg()) << kNotSupported;
    rw.replaceOp(op, e.intCast(v, op.getType()));
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
    unsigned as = *addressSpace(op.getSpace());
    Type t = op.getResult(0).getType();
    uint64_t elem = byteSize(t);
    uint64_t n = op.getNumResults();
    Value p = e.toPtr(adaptor.getAddr(), as);
    bool atomic = op.getSem() && *op.getSem() != MemOrder::weak && n == 1;
    bool invariant = op.getCache() && *op.getCache() == CacheOp::nc &&
                     op.getSpace() == StateSpace::global;
    if (n == 1) {
      rw.replaceOp(op, LLVM::LoadOp::create(
                           rw, e.loc, t, p, elem, op.getIsVolatile(),
                           /*isNonTemporal=*/false, invariant,
                           /*isInvariantGroup=*/false,
                           atomic ? ordering(op.getSem())
                                  : LLVM::AtomicOrdering::not_atomic,
                           atomic ? syncScope(op.getScope()) : StringRef())
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
    unsigned as = *addressSpace(op.getSpace());
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
          atomic ? syncScope(op.getScope()) : StringRef());
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
Value emitAtomic(Emitter &e, StateSpace space, AtomicOp kind, Value addr,
                 ValueRange values, std::optional<MemOrder> sem,
                 std::optional<MemScope> scope) {
  Type t = values[0].getType();
  Value p = e.toPtr(addr, *addressSpace(space));
  LLVM::AtomicOrdering ord = ordering(sem);
  StringRef ss = syncScope(scope);
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
    rw.replaceOp(op,
                 emitAtomic(e, op.getSpace(), op.getOp(), adaptor.getAddr(),
                            adaptor.getValues(), op.getSem(), op.getScope()));
    return success();
  }
};

/// `wooly.red`: an atomic whose old value is dropped.
struct RedOpLowering : WoolyPattern<RedOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(RedOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    emitAtomic(e, op.getSpace(), op.getOp(), adaptor.getAddr(),
               ValueRange{adaptor.getValue()}, op.getSem(), op.getScope());
    rw.eraseOp(op);
    return success();
  }
};

/// `wooly.fence`: `fence` with the PTX scope as `syncscope` (NVPTX prints
/// `fence.sc`/`fence.acq_rel` at that scope).
struct FenceOpLowering : WoolyPattern<FenceOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(FenceOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    LLVM::AtomicOrdering ord = op.getSem() == MemOrder::sc
                                   ? LLVM::AtomicOrdering::seq_cst
                                   : LLVM::AtomicOrdering::acq_rel;
    rw.replaceOpWithNewOp<LLVM::FenceOp>(op, ord, syncScope(op.getScope()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Synchronisation
//===----------------------------------------------------------------------===//

/// `wooly.barrier`: `nvvm.barrier` (aligned), or the non-aligned
/// `llvm.nvvm.barrier.cta.*` intrinsics; `arrive` signals only.
struct BarrierOpLowering : WoolyPattern<BarrierOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(BarrierOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    Value id = adaptor.getId(), count = adaptor.getCount();
    bool aligned = op.getAligned();
    if (op.getArrive()) {
      if (!count)
        return op.emitOpError("bar.arrive without a thread count")
               << kNotSupported;
      e.intrinsic(aligned ? "llvm.nvvm.barrier.cta.arrive.aligned.count"
                          : "llvm.nvvm.barrier.cta.arrive.count",
                  {}, {id, count});
    } else if (aligned) {
      NVVM::BarrierOp::create(rw, e.loc, TypeRange{}, id, count,
                              NVVM::BarrierReductionAttr(), Value());
    } else if (count) {
      e.intrinsic("llvm.nvvm.barrier.cta.sync.count", {}, {id, count});
    } else {
      e.intrinsic("llvm.nvvm.barrier.cta.sync.all", {}, {id});
    }
    rw.eraseOp(op);
    return success();
  }
};

/// `wooly.bar_red`: `bar.red.{popc,and,or}` through the
/// `llvm.nvvm.barrier.cta.red.*.aligned` intrinsics (`nvvm.barrier` with a
/// reduction only takes barrier 0).
struct BarRedOpLowering : WoolyPattern<BarRedOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(BarRedOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    StringRef kind;
    switch (op.getOp()) {
    case ReduxKind::popc:
      kind = "popc";
      break;
    case ReduxKind::and_:
      kind = "and";
      break;
    case ReduxKind::or_:
      kind = "or";
      break;
    default:
      return op.emitOpError("bar.red.")
             << stringifyReduxKind(op.getOp()) << kNotSupported;
    }
    bool popc = kind == "popc";
    Type rt = popc ? e.i32() : rw.getI1Type();
    SmallVector<Value> args{adaptor.getId()};
    if (adaptor.getCount())
      args.push_back(adaptor.getCount());
    args.push_back(adaptor.getPred());
    Value r = e.intrinsic(("llvm.nvvm.barrier.cta.red." + kind + ".aligned." +
                           (adaptor.getCount() ? "count" : "all"))
                              .str(),
                          rt, args);
    rw.replaceOp(op, e.intCast(r, op.getType()));
    return success();
  }
};

/// `wooly.warp_sync`: `bar.warp.sync`.
struct WarpSyncOpLowering : WoolyPattern<WarpSyncOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(WarpSyncOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    e.intrinsic("llvm.nvvm.bar.warp.sync", {}, {adaptor.getMask()});
    rw.eraseOp(op);
    return success();
  }
};

/// `wooly.activemask`: `activemask.b32`.
struct ActiveMaskOpLowering : WoolyPattern<ActiveMaskOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(ActiveMaskOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    rw.replaceOp(op, e.intrinsic("llvm.nvvm.activemask", e.i32(), {}));
    return success();
  }
};

/// `wooly.nanosleep`: `nanosleep.u32`.
struct NanosleepOpLowering : WoolyPattern<NanosleepOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(NanosleepOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    e.intrinsic("llvm.nvvm.nanosleep", {},
                {e.intCast(adaptor.getOperands()[0], e.i32())});
    rw.eraseOp(op);
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
// Warp collectives, asynchronous copies, matrix operations
//===----------------------------------------------------------------------===//

/// `wooly.shfl`: `nvvm.shfl.sync` returning the value and the valid
/// predicate; `c` (clamp | segment mask << 8) is PTX's `c` operand.
struct ShflOpLowering : WoolyPattern<ShflOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(ShflOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    NVVM::ShflKind kind = NVVM::ShflKind::idx;
    switch (op.getMode()) {
    case ShflMode::up:
      kind = NVVM::ShflKind::up;
      break;
    case ShflMode::down:
      kind = NVVM::ShflKind::down;
      break;
    case ShflMode::bfly:
      kind = NVVM::ShflKind::bfly;
      break;
    case ShflMode::idx:
      kind = NVVM::ShflKind::idx;
      break;
    }
    Type st = LLVM::LLVMStructType::getLiteral(op.getContext(),
                                               {e.i32(), rw.getI1Type()});
    Value r = NVVM::ShflOp::create(rw, e.loc, st, adaptor.getMask(),
                                   adaptor.getValue(), adaptor.getLane(),
                                   adaptor.getClamp(), kind, rw.getUnitAttr());
    rw.replaceOp(op, {LLVM::ExtractValueOp::create(rw, e.loc, r, 0),
                      LLVM::ExtractValueOp::create(rw, e.loc, r, 1)});
    return success();
  }
};

/// `wooly.vote`: `nvvm.vote.sync` (i1 for all/any/uni, i32 for ballot).
struct VoteOpLowering : WoolyPattern<VoteOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(VoteOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    NVVM::VoteSyncKind kind = NVVM::VoteSyncKind::any;
    switch (op.getMode()) {
    case VoteMode::all:
      kind = NVVM::VoteSyncKind::all;
      break;
    case VoteMode::any:
      kind = NVVM::VoteSyncKind::any;
      break;
    case VoteMode::uni:
      kind = NVVM::VoteSyncKind::uni;
      break;
    case VoteMode::ballot:
      kind = NVVM::VoteSyncKind::ballot;
      break;
    }
    Type rt = op.getMode() == VoteMode::ballot ? Type(rw.getI32Type())
                                               : Type(rw.getI1Type());
    if (op.getType() != rt)
      return op.emitOpError("vote result type ")
             << op.getType() << kNotSupported;
    rw.replaceOpWithNewOp<NVVM::VoteSyncOp>(op, rt, adaptor.getMask(),
                                            adaptor.getPred(), kind);
    return success();
  }
};

/// The `redux.sync` kind of a Wooly reduction (none for `popc`).
std::optional<NVVM::ReduxKind> reduxKind(ReduxKind k) {
  switch (k) {
  case ReduxKind::add:
    return NVVM::ReduxKind::ADD;
  case ReduxKind::umin:
    return NVVM::ReduxKind::UMIN;
  case ReduxKind::smin:
    return NVVM::ReduxKind::MIN;
  case ReduxKind::umax:
    return NVVM::ReduxKind::UMAX;
  case ReduxKind::smax:
    return NVVM::ReduxKind::MAX;
  case ReduxKind::and_:
    return NVVM::ReduxKind::AND;
  case ReduxKind::or_:
    return NVVM::ReduxKind::OR;
  case ReduxKind::xor_:
    return NVVM::ReduxKind::XOR;
  case ReduxKind::popc:
    return std::nullopt;
  }
  return std::nullopt;
}

/// `wooly.redux`: `nvvm.redux.sync` on i32.
struct ReduxOpLowering : WoolyPattern<ReduxOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(ReduxOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    auto kind = reduxKind(op.getOp());
    if (!kind)
      return op.emitOpError("redux.sync.")
             << stringifyReduxKind(op.getOp()) << kNotSupported;
    rw.replaceOpWithNewOp<NVVM::ReduxOp>(
        op, rw.getI32Type(), adaptor.getValue(), *kind, adaptor.getMask());
    return success();
  }
};

/// `wooly.match`: `nvvm.match.sync` (`all` also gives the predicate).
struct MatchOpLowering : WoolyPattern<MatchOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(MatchOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    if (op.getMode() == MatchMode::any) {
      // PTX's match.any has no predicate (checkSupported refuses a used one).
      Value m = NVVM::MatchSyncOp::create(rw, e.loc, e.i32(), adaptor.getMask(),
                                          adaptor.getValue(),
                                          NVVM::MatchSyncKind::any);
      rw.replaceOp(op, {m, LLVM::PoisonOp::create(rw, e.loc, rw.getI1Type())});
      return success();
    }
    Type st = LLVM::LLVMStructType::getLiteral(op.getContext(),
                                               {e.i32(), rw.getI1Type()});
    Value r =
        NVVM::MatchSyncOp::create(rw, e.loc, st, adaptor.getMask(),
                                  adaptor.getValue(), NVVM::MatchSyncKind::all);
    rw.replaceOp(op, {LLVM::ExtractValueOp::create(rw, e.loc, r, 0),
                      LLVM::ExtractValueOp::create(rw, e.loc, r, 1)});
    return success();
  }
};

/// `wooly.cp_async`: `nvvm.cp.async.shared.global` (ca/cg, 4/8/16 bytes,
/// optional source size).
struct CpAsyncOpLowering : WoolyPattern<CpAsyncOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(CpAsyncOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    bool cg = op.getCache() && *op.getCache() == CacheOp::cg;
    NVVM::CpAsyncOp::create(rw, e.loc, e.toPtr(adaptor.getDst(), 3),
                            e.toPtr(adaptor.getSrc(), 1), op.getSize(),
                            cg ? NVVM::LoadCacheModifierKind::CG
                               : NVVM::LoadCacheModifierKind::CA,
                            adaptor.getSrcSize());
    rw.eraseOp(op);
    return success();
  }
};

struct CpAsyncCommitOpLowering : WoolyPattern<CpAsyncCommitOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(CpAsyncCommitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    rw.replaceOpWithNewOp<NVVM::CpAsyncCommitGroupOp>(op);
    return success();
  }
};

struct CpAsyncWaitOpLowering : WoolyPattern<CpAsyncWaitOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(CpAsyncWaitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    rw.replaceOpWithNewOp<NVVM::CpAsyncWaitGroupOp>(op, op.getPending());
    return success();
  }
};

/// `wooly.ldmatrix`: `nvvm.ldmatrix` m8n8 b16 (x1/x2/x4, trans = col).
struct LdMatrixOpLowering : WoolyPattern<LdMatrixOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(LdMatrixOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    unsigned n = op.getNumResults();
    Type rt = n == 1 ? e.i32()
                     : Type(LLVM::LLVMStructType::getLiteral(
                           op.getContext(), SmallVector<Type>(n, e.i32())));
    Value r = NVVM::LdMatrixOp::create(
        rw, e.loc, rt, e.toPtr(adaptor.getAddr(), 3), n,
        op.getTrans() ? NVVM::MMALayout::col : NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(op.getContext(), 8, 8),
        NVVM::LdStMatrixEltType::B16);
    if (n == 1) {
      rw.replaceOp(op, r);
      return success();
    }
    SmallVector<Value> results;
    for (unsigned i = 0; i < n; ++i)
      results.push_back(LLVM::ExtractValueOp::create(rw, e.loc, r, i));
    rw.replaceOp(op, results);
    return success();
  }
};

/// Register counts of an `mma.sync`/`wmma.mma` and the intrinsic that
/// computes it exactly, or none.
struct MatrixMma {
  std::string intrinsic;
  unsigned a, b, c; // Registers of A, B and C (D has C's).
};

/// Whether fragment registers `vals` are `n` values of type `t`.
bool fragmentIs(TypeRange vals, unsigned n, Type t) {
  return vals.size() == n && llvm::all_of(vals, [&](Type v) { return v == t; });
}

/// The Wooly register type of a fragment element type (f16 pairs are i32).
Type fragmentType(MLIRContext *ctx, ScalarType t) {
  if (t == ScalarType::f32)
    return Float32Type::get(ctx);
  return IntegerType::get(ctx, 32);
}

std::optional<MatrixMma> mmaSyncIntrinsic(MmaOp op) {
  if (op.getLayoutA() != Layout::row || op.getLayoutB() != Layout::col)
    return std::nullopt;
  ScalarType at = op.getAType(), bt = op.getBType(), ct = op.getCType(),
             dt = op.getDType();
  StringRef shape = op.getShape();
  std::optional<MatrixMma> m;
  auto fp = [](ScalarType t) {
    return t == ScalarType::f16 || t == ScalarType::f32;
  };
  if (shape == "m16n8k16" && at == ScalarType::f16 && bt == ScalarType::f16 &&
      fp(ct) && fp(dt) && !op.getSatfinite())
    m = MatrixMma{("llvm.nvvm.mma.m16n8k16.row.col." + stringifyScalarType(dt) +
                   "." + stringifyScalarType(ct))
                      .str(),
                  4, 2, ct == ScalarType::f32 ? 4u : 2u};
  else if (shape == "m16n8k16" && at == ScalarType::bf16 &&
           bt == ScalarType::bf16 && ct == ScalarType::f32 &&
           dt == ScalarType::f32 && !op.getSatfinite())
    m = MatrixMma{"llvm.nvvm.mma.m16n8k16.row.col.bf16", 4, 2, 4};
  else if (shape == "m16n8k32" && at == ScalarType::s8 &&
           bt == ScalarType::s8 && ct == ScalarType::s32 &&
           dt == ScalarType::s32)
    m = MatrixMma{op.getSatfinite()
                      ? "llvm.nvvm.mma.m16n8k32.row.col.satfinite.s8"
                      : "llvm.nvvm.mma.m16n8k32.row.col.s8",
                  4, 2, 4};
  if (!m)
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  Type i32 = IntegerType::get(ctx, 32);
  if (!fragmentIs(op.getA().getTypes(), m->a, i32) ||
      !fragmentIs(op.getB().getTypes(), m->b, i32) ||
      !fragmentIs(op.getC().getTypes(), m->c, fragmentType(ctx, ct)) ||
      !fragmentIs(op.getResultTypes(), m->c, fragmentType(ctx, dt)))
    return std::nullopt;
  return m;
}

std::optional<MatrixMma> wmmaMmaIntrinsic(WmmaMmaOp op) {
  ScalarType at = op.getAType(), bt = op.getBType(), ct = op.getCType(),
             dt = op.getDType();
  auto fp = [](ScalarType t) {
    return t == ScalarType::f16 || t == ScalarType::f32;
  };
  if (op.getShape() != "m16n16k16" || at != ScalarType::f16 ||
      bt != ScalarType::f16 || !fp(ct) || !fp(dt))
    return std::nullopt;
  MatrixMma m{
      ("llvm.nvvm.wmma.m16n16k16.mma." + stringifyLayout(op.getLayoutA()) +
       "." + stringifyLayout(op.getLayoutB()) + "." + stringifyScalarType(dt) +
       "." + stringifyScalarType(ct) + (op.getSatfinite() ? ".satfinite" : ""))
          .str(),
      8, 8, ct == ScalarType::f32 ? 8u : 4u};
  MLIRContext *ctx = op.getContext();
  Type i32 = IntegerType::get(ctx, 32);
  if (!fragmentIs(op.getA().getTypes(), m.a, i32) ||
      !fragmentIs(op.getB().getTypes(), m.b, i32) ||
      !fragmentIs(op.getC().getTypes(), m.c, fragmentType(ctx, ct)) ||
      !fragmentIs(op.getResultTypes(), dt == ScalarType::f32 ? 8u : 4u,
                  fragmentType(ctx, dt)))
    return std::nullopt;
  return m;
}

/// Whether a wmma load/store of `type` fragments is lowered: m16n16k16,
/// f16 A/B, f16/f32 C/D, with an explicit stride, in a space with pointers.
bool wmmaLdStSupported(StringRef shape, ScalarType t,
                       std::optional<MatrixRole> role, StateSpace space,
                       bool hasStride, TypeRange regs) {
  if (shape != "m16n16k16" || !hasStride || !addressSpace(space) ||
      space == StateSpace::constant || space == StateSpace::local ||
      space == StateSpace::shared_cluster)
    return false;
  bool ab = role && (*role == MatrixRole::a || *role == MatrixRole::b);
  MLIRContext *ctx = regs.empty() ? nullptr : regs[0].getContext();
  if (!ctx)
    return false;
  if (ab)
    return t == ScalarType::f16 &&
           fragmentIs(regs, 8, IntegerType::get(ctx, 32));
  if (t == ScalarType::f32)
    return fragmentIs(regs, 8, Float32Type::get(ctx));
  if (t == ScalarType::f16)
    return fragmentIs(regs, 4, IntegerType::get(ctx, 32));
  return false;
}

/// The intrinsic's register type of a fragment element type.
Type intrinsicFragType(MLIRContext *ctx, ScalarType t) {
  if (t == ScalarType::f16)
    return VectorType::get({2}, Float16Type::get(ctx));
  return fragmentType(ctx, t);
}

/// Converts Wooly fragment registers to/from the intrinsic's types.
Value toFrag(Emitter &e, Value v, Type t) {
  return v.getType() == t ? v : LLVM::BitcastOp::create(e.rw, e.loc, t, v);
}

/// Calls `name` on the fragments and unpacks the struct result into
/// registers of type `out`.
SmallVector<Value> callMma(Emitter &e, StringRef name, ValueRange args,
                           unsigned n, Type fragTy, Type out) {
  Type st = LLVM::LLVMStructType::getLiteral(e.rw.getContext(),
                                             SmallVector<Type>(n, fragTy));
  Value r = e.intrinsic(name, st, args);
  SmallVector<Value> results;
  for (unsigned i = 0; i < n; ++i)
    results.push_back(
        toFrag(e, LLVM::ExtractValueOp::create(e.rw, e.loc, r, i), out));
  return results;
}

/// `wooly.mma_sync`: the `llvm.nvvm.mma.*` intrinsic of its shape and types.
struct MmaOpLowering : WoolyPattern<MmaOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(MmaOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    auto m = mmaSyncIntrinsic(op);
    if (!m)
      return op.emitOpError() << StringRef(kNotSupported).ltrim();
    Emitter e = emitter(rw, op);
    MLIRContext *ctx = op.getContext();
    // f16 A/B pairs are <2 x f16>; bf16 and s8 fragments stay i32.
    Type abTy = intrinsicFragType(ctx, op.getAType() == ScalarType::f16
                                           ? ScalarType::f16
                                           : ScalarType::s32);
    SmallVector<Value> args;
    for (Value v : adaptor.getA())
      args.push_back(toFrag(e, v, abTy));
    for (Value v : adaptor.getB())
      args.push_back(toFrag(e, v, abTy));
    for (Value v : adaptor.getC())
      args.push_back(toFrag(e, v, intrinsicFragType(ctx, op.getCType())));
    rw.replaceOp(op, callMma(e, m->intrinsic, args, op.getNumResults(),
                             intrinsicFragType(ctx, op.getDType()),
                             fragmentType(ctx, op.getDType())));
    return success();
  }
};

/// `wooly.wmma_mma`: `llvm.nvvm.wmma.m16n16k16.mma.*` (f16 inputs).
struct WmmaMmaOpLowering : WoolyPattern<WmmaMmaOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(WmmaMmaOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    auto m = wmmaMmaIntrinsic(op);
    if (!m)
      return op.emitOpError() << StringRef(kNotSupported).ltrim();
    Emitter e = emitter(rw, op);
    MLIRContext *ctx = op.getContext();
    Type h2 = intrinsicFragType(ctx, ScalarType::f16);
    SmallVector<Value> args;
    for (Value v : adaptor.getA())
      args.push_back(toFrag(e, v, h2));
    for (Value v : adaptor.getB())
      args.push_back(toFrag(e, v, h2));
    for (Value v : adaptor.getC())
      args.push_back(toFrag(e, v, intrinsicFragType(ctx, op.getCType())));
    rw.replaceOp(op, callMma(e, m->intrinsic, args, op.getNumResults(),
                             intrinsicFragType(ctx, op.getDType()),
                             fragmentType(ctx, op.getDType())));
    return success();
  }
};

NVVM::MMALayout mmaLayout(Layout l) {
  return l == Layout::row ? NVVM::MMALayout::row : NVVM::MMALayout::col;
}

/// `wooly.wmma_load`: `nvvm.wmma.load` m16n16k16 with the stride.
struct WmmaLoadOpLowering : WoolyPattern<WmmaLoadOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(WmmaLoadOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!wmmaLdStSupported(op.getShape(), op.getType(), op.getRole(),
                           op.getSpace(), bool(op.getStride()),
                           op.getResultTypes()) ||
        op.getRole() == MatrixRole::d)
      return op.emitOpError() << StringRef(kNotSupported).ltrim();
    Emitter e = emitter(rw, op);
    MLIRContext *ctx = op.getContext();
    unsigned n = op.getNumResults();
    Type ft = intrinsicFragType(ctx, op.getType());
    Type st = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(n, ft));
    NVVM::MMAFrag frag = op.getRole() == MatrixRole::a   ? NVVM::MMAFrag::a
                         : op.getRole() == MatrixRole::b ? NVVM::MMAFrag::b
                                                         : NVVM::MMAFrag::c;
    NVVM::MMATypes et = op.getType() == ScalarType::f16 ? NVVM::MMATypes::f16
                                                        : NVVM::MMATypes::f32;
    Value r = NVVM::WMMALoadOp::create(
        rw, e.loc, st, e.toPtr(adaptor.getAddr(), *addressSpace(op.getSpace())),
        adaptor.getStride(), rw.getI32IntegerAttr(16), rw.getI32IntegerAttr(16),
        rw.getI32IntegerAttr(16),
        NVVM::MMALayoutAttr::get(ctx, mmaLayout(op.getLayout())),
        NVVM::MMATypesAttr::get(ctx, et), NVVM::MMAFragAttr::get(ctx, frag));
    SmallVector<Value> results;
    for (unsigned i = 0; i < n; ++i)
      results.push_back(toFrag(e, LLVM::ExtractValueOp::create(rw, e.loc, r, i),
                               fragmentType(ctx, op.getType())));
    rw.replaceOp(op, results);
    return success();
  }
};

/// `wooly.wmma_store`: `nvvm.wmma.store` m16n16k16 with the stride.
struct WmmaStoreOpLowering : WoolyPattern<WmmaStoreOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult matchAndRewrite(WmmaStoreOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!wmmaLdStSupported(op.getShape(), op.getType(), MatrixRole::d,
                           op.getSpace(), bool(op.getStride()),
                           op.getValues().getTypes()))
      return op.emitOpError() << StringRef(kNotSupported).ltrim();
    Emitter e = emitter(rw, op);
    MLIRContext *ctx = op.getContext();
    Type ft = intrinsicFragType(ctx, op.getType());
    SmallVector<Value> vals;
    for (Value v : adaptor.getValues())
      vals.push_back(toFrag(e, v, ft));
    NVVM::MMATypes et = op.getType() == ScalarType::f16 ? NVVM::MMATypes::f16
                                                        : NVVM::MMATypes::f32;
    NVVM::WMMAStoreOp::create(
        rw, e.loc, e.toPtr(adaptor.getAddr(), *addressSpace(op.getSpace())),
        rw.getI32IntegerAttr(16), rw.getI32IntegerAttr(16),
        rw.getI32IntegerAttr(16),
        NVVM::MMALayoutAttr::get(ctx, mmaLayout(op.getLayout())),
        NVVM::MMATypesAttr::get(ctx, et), vals, adaptor.getStride());
    rw.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Before the conversion: 1:1 NVVM intrinsics, unsupported ops
//===----------------------------------------------------------------------===//

/// Applies `fn` to each element of `v` (scalars directly).
Value mapScalars(Emitter &e, Value v, llvm::function_ref<Value(Value)> fn) {
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

/// Rewrites the `math` ops that `wooly-expand-arith` makes of `.approx`
/// into the NVVM approximations (the GPU's own results).
LogicalResult lowerApproxMath(ModuleOp module) {
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (isa<math::SinOp, math::CosOp, math::Exp2Op, math::Log2Op, math::RsqrtOp,
            math::TanhOp>(op))
      ops.push_back(op);
  });
  bool ok = true;
  for (Operation *op : ops) {
    OpBuilder b(op);
    Emitter e{b, op->getLoc()};
    Value in = op->getOperand(0);
    Type elem = getElementTypeOrSelf(in.getType());
    bool f64 = elem.isF64();
    StringRef name;
    if (isa<math::RsqrtOp>(op))
      name = f64 ? "llvm.nvvm.rsqrt.approx.d" : "llvm.nvvm.rsqrt.approx.f";
    else if (isa<math::Log2Op>(op))
      name = f64 ? "" : "llvm.nvvm.lg2.approx.f";
    else if (!f64 && isa<math::SinOp>(op))
      name = "llvm.nvvm.sin.approx.f";
    else if (!f64 && isa<math::CosOp>(op))
      name = "llvm.nvvm.cos.approx.f";
    else if (!f64 && isa<math::Exp2Op>(op))
      name = "llvm.nvvm.ex2.approx.f32";
    bool tanh = isa<math::TanhOp>(op) && elem.isF32();
    if (name.empty() && !tanh) {
      op->emitOpError("on ") << elem << kNotSupported;
      ok = false;
      continue;
    }
    Value r = mapScalars(e, in, [&](Value x) -> Value {
      if (tanh)
        return LLVM::InlineAsmOp::create(b, e.loc, x.getType(), ValueRange{x},
                                         "tanh.approx.f32 $0, $1;", "=f,f",
                                         /*has_side_effects=*/false,
                                         /*is_align_stack=*/false,
                                         LLVM::TailCallKind::None,
                                         LLVM::AsmDialectAttr(), ArrayAttr())
            .getResult(0);
      return e.intrinsic(name, x.getType(), {x});
    });
    op->getResult(0).replaceAllUsesWith(r);
    op->erase();
  }
  return success(ok);
}

/// The NVVM intrinsic for a `__wooly_*` helper of `wooly-expand-arith`, or
/// "" when there is none (yet).
std::string helperIntrinsic(StringRef helper) {
  StringRef rest = helper;
  if (!rest.consume_front("__wooly_"))
    return "";
  // __wooly_<op>_<mode>_<f32|f64>
  SmallVector<StringRef> parts;
  rest.split(parts, '_');
  if (parts.size() == 3 && (parts[2] == "f32" || parts[2] == "f64") &&
      (parts[1] == "rz" || parts[1] == "rm" || parts[1] == "rp")) {
    StringRef op = llvm::StringSwitch<StringRef>(parts[0])
                       .Case("fadd", "add")
                       .Case("fsub", "sub")
                       .Case("fmul", "mul")
                       .Case("fdiv", "div")
                       .Case("fma", "fma")
                       .Case("fsqrt", "sqrt")
                       .Case("frcp", "rcp")
                       .Default("");
    if (op.empty())
      return "";
    return ("llvm.nvvm." + op + "." + parts[1] + "." +
            (parts[2] == "f32" ? "f" : "d"))
        .str();
  }
  // __wooly_cvt_<from>_<to>_<mode>
  if (parts.size() == 4 && parts[0] == "cvt" &&
      (parts[3] == "rz" || parts[3] == "rm" || parts[3] == "rp" ||
       parts[3] == "rn")) {
    StringRef from = parts[1], to = parts[2], mode = parts[3];
    if (from == "f64" && to == "f32")
      return ("llvm.nvvm.d2f." + mode).str();
    if (mode == "rn")
      return ""; // Round to nearest needs no helper on nvptx (see below).
    StringRef src = from == "s64" ? "ll" : from == "u64" ? "ull" : "";
    StringRef dst = to == "f32" ? "f" : to == "f64" ? "d" : "";
    if (!src.empty() && !dst.empty())
      return ("llvm.nvvm." + src + "2" + dst + "." + mode).str();
  }
  return "";
}

/// The f32 (or f16, widened exactly) that the f64 `d` was widened from, or
/// null when `d` is not an exact widening of one.
Value narrowSource(Emitter &e, Value d) {
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

/// The helper's i32 result: the low bits of float `r` (its bits zero-extended),
/// or `nanBits` when `isNaN` (the helpers return PTX's canonical NaN).
Value helperBits(Emitter &e, Value r, Value isNaN, uint64_t nanBits) {
  unsigned w = r.getType().getIntOrFloatBitWidth();
  Type it = e.rw.getIntegerType(w);
  Value bits = LLVM::BitcastOp::create(e.rw, e.loc, it, r);
  bits = LLVM::SelectOp::create(e.rw, e.loc, isNaN, e.cst(it, nanBits), bits);
  return e.intCast(bits, e.i32());
}

Value isNaNOf(Emitter &e, Value x) {
  return LLVM::FCmpOp::create(e.rw, e.loc, LLVM::FCmpPredicate::uno, x, x);
}

/// Lowers the helpers of `wooly-expand-arith` that have an exact NVPTX
/// counterpart on `sm` other than a single intrinsic call with the helper's
/// own signature (16- and 8-bit floats passed as the low bits of an i32).
/// Returns null when there is none.
Value lowerNarrowHelper(Emitter &e, StringRef helper, ValueRange args,
                        unsigned sm) {
  OpBuilder &b = e.rw;
  auto narrowArg = [&](Value v, Type ft) -> Value {
    Value i = e.intCast(v, b.getI16Type());
    return LLVM::BitcastOp::create(b, e.loc, ft, i);
  };
  // fma.rn.f16 (sm_53) / fma.rn.bf16 (sm_80): one rounding, as the helper.
  bool f16 = helper == "__wooly_fma_rn_f16",
       bf16 = helper == "__wooly_fma_rn_bf16";
  if ((f16 && sm >= 53) || (bf16 && sm >= 80)) {
    Type ft = f16 ? Type(b.getF16Type()) : Type(b.getBF16Type());
    SmallVector<Value, 3> xs;
    for (Value a : args)
      xs.push_back(narrowArg(a, ft));
    Value r = e.intrinsic(f16 ? "llvm.fma.f16" : "llvm.fma.bf16", ft, xs);
    return helperBits(e, r, isNaNOf(e, r), 0x7fff);
  }
  // cvt.rn.bf16.f64 (sm_90); cvt.rn.bf16.f32 when widened from f32.
  if (helper == "__wooly_cvt_f64_bf16_rn" && sm >= 90) {
    Value x = args[0];
    if (auto ext = x.getDefiningOp<arith::ExtFOp>();
        ext && ext.getIn().getType().isF32())
      x = ext.getIn();
    Value r = LLVM::FPTruncOp::create(b, e.loc, b.getBF16Type(), x);
    return helperBits(e, r, isNaNOf(e, x), 0x7fff);
  }
  // cvt.rn.satfinite.{e4m3,e5m2}x2.f32 (sm_89) of an f32 (or exactly
  // widened f16): the second operand goes to the low byte.
  bool e4 = helper == "__wooly_cvt_f64_e4m3_rn_satfinite",
       e5 = helper == "__wooly_cvt_f64_e5m2_rn_satfinite";
  if ((e4 || e5) && sm >= 89) {
    Value x = narrowSource(e, args[0]);
    if (!x)
      return {};
    Value zero = LLVM::ConstantOp::create(b, e.loc, b.getF32Type(),
                                          b.getF32FloatAttr(0.0f));
    Value pair = e.intrinsic(e4 ? "llvm.nvvm.ff.to.e4m3x2.rn"
                                : "llvm.nvvm.ff.to.e5m2x2.rn",
                             b.getI16Type(), {zero, x});
    Value byte = e.intCast(pair, b.getI8Type());
    byte = LLVM::SelectOp::create(b, e.loc, isNaNOf(e, x),
                                  e.cst(b.getI8Type(), 0x7f), byte);
    return e.intCast(byte, e.i32());
  }
  // cvt.rn.f16x2.{e4m3,e5m2}x2 (sm_89) of the low byte: exact.
  e4 = helper == "__wooly_cvt_e4m3_f16";
  e5 = helper == "__wooly_cvt_e5m2_f16";
  if ((e4 || e5) && sm >= 89) {
    Value byte = e.intCast(args[0], b.getI8Type());
    Value pair = e.intCast(byte, b.getI16Type());
    Type v2 = VectorType::get({2}, b.getF16Type());
    Value h2 = e.intrinsic(e4 ? "llvm.nvvm.e4m3x2.to.f16x2.rn"
                              : "llvm.nvvm.e5m2x2.to.f16x2.rn",
                           v2, {pair});
    Value r = LLVM::ExtractElementOp::create(b, e.loc, h2, e.c32(0));
    return helperBits(e, r, isNaNOf(e, r), 0x7fff);
  }
  return {};
}

/// Rewrites the calls of `__wooly_*` helpers into NVVM intrinsics and drops
/// the helpers' declarations.
LogicalResult lowerHelperCalls(ModuleOp module, unsigned sm) {
  SmallVector<func::CallOp> calls;
  module.walk([&](func::CallOp c) {
    if (c.getCallee().starts_with("__wooly_"))
      calls.push_back(c);
  });
  bool ok = true;
  for (func::CallOp c : calls) {
    {
      OpBuilder b(c);
      Emitter e{b, c.getLoc()};
      if (Value r = lowerNarrowHelper(e, c.getCallee(), c.getOperands(), sm)) {
        c.getResult(0).replaceAllUsesWith(r);
        c.erase();
        continue;
      }
    }
    std::string name = helperIntrinsic(c.getCallee());
    if (name.empty()) {
      c.emitError("helper '") << c.getCallee() << "'" << kNotSupported;
      ok = false;
      continue;
    }
    OpBuilder b(c);
    Emitter e{b, c.getLoc()};
    SmallVector<Value> args(c.getOperands());
    Type rt = c.getResult(0).getType();
    if (StringRef(name).starts_with("llvm.nvvm.sub.")) {
      // a - b rounds as a + (-b) (negation is exact).
      args[1] = LLVM::FNegOp::create(b, e.loc, args[1]);
      name = "llvm.nvvm.add." + name.substr(strlen("llvm.nvvm.sub."));
    }
    c.getResult(0).replaceAllUsesWith(e.intrinsic(name, rt, args));
    c.erase();
  }
  for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>()))
    if (fn.getName().starts_with("__wooly_") && fn.isDeclaration() &&
        fn.symbolKnownUseEmpty(module))
      fn.erase();
  return success(ok);
}

/// Rejects, with a located error each, what has no faithful lowering yet.
LogicalResult checkSupported(ModuleOp module) {
  bool ok = true;
  auto fail = [&](Operation *op, const Twine &what) {
    if (what.isTriviallyEmpty())
      op->emitOpError() << StringRef(kNotSupported).ltrim();
    else
      op->emitOpError() << what << kNotSupported;
    ok = false;
  };
  module.walk([&](Operation *op) {
    if (isa<IterationBarrierOp, ParamAddressOp>(op))
      return fail(op, "");
    if (auto m = dyn_cast<MmaOp>(op); m && !mmaSyncIntrinsic(m))
      return fail(op, "");
    if (auto m = dyn_cast<WmmaMmaOp>(op); m && !wmmaMmaIntrinsic(m))
      return fail(op, "");
    if (auto l = dyn_cast<WmmaLoadOp>(op);
        l && (l.getRole() == MatrixRole::d ||
              !wmmaLdStSupported(l.getShape(), l.getType(), l.getRole(),
                                 l.getSpace(), bool(l.getStride()),
                                 l.getResultTypes())))
      return fail(op, "");
    if (auto s = dyn_cast<WmmaStoreOp>(op);
        s && !wmmaLdStSupported(s.getShape(), s.getType(), MatrixRole::d,
                                s.getSpace(), bool(s.getStride()),
                                s.getValues().getTypes()))
      return fail(op, "");
    if (auto r = dyn_cast<ReduxOp>(op); r && !reduxKind(r.getOp()))
      return fail(op, "redux.sync." + stringifyReduxKind(r.getOp()));
    if (auto m = dyn_cast<MatchOp>(op);
        m && m.getMode() == MatchMode::any && !m.getPred().use_empty())
      return fail(op, "the predicate of match.any");
    if (auto v = dyn_cast<VoteOp>(op);
        v && v.getType() != (v.getMode() == VoteMode::ballot
                                 ? Type(IntegerType::get(op->getContext(), 32))
                                 : Type(IntegerType::get(op->getContext(), 1))))
      return fail(op, "this vote result type");
    if (auto c = dyn_cast<CpAsyncOp>(op)) {
      bool cg = c.getCache() && *c.getCache() == CacheOp::cg;
      if (c.getCache() && !cg && *c.getCache() != CacheOp::ca)
        return fail(op, "cp.async." + stringifyCacheOp(*c.getCache()));
      if (cg && c.getSize() != 16)
        return fail(op, "cp.async.cg of " + Twine(c.getSize()) + " bytes");
      if (c.getSize() != 4 && c.getSize() != 8 && c.getSize() != 16)
        return fail(op, "cp.async of " + Twine(c.getSize()) + " bytes");
    }
    if (auto l = dyn_cast<LdMatrixOp>(op); l && l.getNumResults() != 1 &&
                                           l.getNumResults() != 2 &&
                                           l.getNumResults() != 4)
      return fail(op, "ldmatrix of " + Twine(l.getNumResults()) + " matrices");
    if (auto ld = dyn_cast<LoadOp>(op);
        ld && ld.getSpace() == StateSpace::param)
      return fail(op, "ld.param through an address");
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
  });
  return success(ok);
}

//===----------------------------------------------------------------------===//
// Module-level preparation
//===----------------------------------------------------------------------===//

/// Creates the LLVM globals of the module's variables, collects locals and
/// the kernels' parameter layout.
LogicalResult prepareModule(ModuleOp module, LoweringState &state) {
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
    unsigned as = *addressSpace(g.getSpace());
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
            tas = *addressSpace(s->second);
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
    SmallVector<uint64_t> offsets;
    uint64_t off = 0;
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      Type t = f.getArgumentTypes()[i];
      uint64_t size = byteSize(t);
      uint64_t align = size;
      if (auto a = f.getArgAttrOfType<IntegerAttr>(i, "wooly.align"))
        align = a.getInt();
      else if (isa<VectorType>(t))
        align = 1;
      align = std::max<uint64_t>(align, 1);
      off = llvm::alignTo(off, align);
      offsets.push_back(off);
      off += size;
    }
    state.paramOffsets[f.getSymName()] = offsets;
  }
  return success();
}

struct ConvertWoolyToNVVMPass
    : wooly::impl::ConvertWoolyToNVVMBase<ConvertWoolyToNVVMPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    StringRef sm = chip;
    unsigned smVersion = 0;
    if (!sm.consume_front("sm_") || sm.getAsInteger(10, smVersion)) {
      module.emitError("convert-wooly-to-nvvm: bad chip '")
          << chip << "' (sm_XX)";
      return signalPassFailure();
    }
    if (failed(checkSupported(module)) || failed(lowerApproxMath(module)) ||
        failed(lowerHelperCalls(module, smVersion)))
      return signalPassFailure();
    LoweringState state;
    if (failed(prepareModule(module, state)))
      return signalPassFailure();
    {
      RewritePatternSet vectorPatterns(ctx);
      vector::populateVectorInsertExtractStridedSliceTransforms(vectorPatterns);
      if (failed(applyPatternsGreedily(module, std::move(vectorPatterns))))
        return signalPassFailure();
    }

    LowerToLLVMOptions options(ctx);
    LLVMTypeConverter converter(ctx, options);
    RewritePatternSet patterns(ctx);
    patterns.add<FuncOpLowering, RetOpLowering, ExitOpLowering, TrapOpLowering,
                 BrkptOpLowering, CallOpLowering, CallIndirectOpLowering,
                 GlobalOpLowering, AddressOfOpLowering, CvtaOpLowering,
                 IsSpacePOpLowering, SRegOpLowering, LoadOpLowering,
                 StoreOpLowering, AtomOpLowering, RedOpLowering,
                 FenceOpLowering, BarrierOpLowering, BarRedOpLowering,
                 WarpSyncOpLowering, ActiveMaskOpLowering, NanosleepOpLowering,
                 EraseLowering<PrefetchOp>, CreatePolicyOpLowering,
                 ShflOpLowering, VoteOpLowering, ReduxOpLowering,
                 MatchOpLowering, CpAsyncOpLowering, CpAsyncCommitOpLowering,
                 CpAsyncWaitOpLowering, LdMatrixOpLowering, MmaOpLowering,
                 WmmaMmaOpLowering, WmmaLoadOpLowering, WmmaStoreOpLowering>(
        converter, state);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    populateFuncToLLVMConversionPatterns(converter, patterns);
    populateMathToLLVMConversionPatterns(converter, patterns);
    populateVectorToLLVMConversionPatterns(converter, patterns);

    LLVMConversionTarget target(*ctx);
    target.addLegalOp<ModuleOp>();
    target.addLegalDialect<NVVM::NVVMDialect>();
    target.addIllegalDialect<WoolyDialect, arith::ArithDialect,
                             math::MathDialect, cf::ControlFlowDialect,
                             func::FuncDialect, vector::VectorDialect>();
    if (failed(applyFullConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    module->setAttr("wooly.chip", StringAttr::get(ctx, chip));
  }
};

} // namespace
