//===- WoolyToNVVM.cpp - Lower Wooly IR to LLVM + NVVM for NVPTX -*- C++ -*-===//
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
// directed-rounding helpers `__wooly_*`. Ops without a faithful lowering
// yet are rejected up front with a located "not supported yet on nvptx".
//
//===----------------------------------------------------------------------===//

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

/// Byte size of a value of type `t` in memory.
uint64_t byteSize(Type t) {
  if (auto v = dyn_cast<VectorType>(t))
    return v.getNumElements() * byteSize(v.getElementType());
  unsigned bits = t.getIntOrFloatBitWidth();
  return bits == 1 ? 1 : (bits + 7) / 8;
}

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

/// The LLVM atomic ordering of a PTX memory order (relaxed by default).
LLVM::AtomicOrdering ordering(std::optional<MemOrder> sem) {
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
template <typename Op>
struct WoolyPattern : ConvertOpToLLVMPattern<Op> {
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
  LogicalResult
  matchAndRewrite(FuncOp op, OpAdaptor adaptor,
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
    auto fn = LLVM::LLVMFuncOp::create(rw, op.getLoc(), op.getSymName(),
                                       fnType, l);
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
    Block *entry = rw.createBlock(
        &fn.getBody(), {}, argTypes,
        SmallVector<Location>(argTypes.size(), op.getLoc()));
    Block *body = &op.getBody().front();
    rw.inlineRegionBefore(op.getBody(), fn.getBody(), fn.getBody().end());
    rw.setInsertionPointToEnd(entry);
    for (auto &[sym, var] : state.localVars) {
      if (var.function != op.getSymName())
        continue;
      Value n = LLVM::ConstantOp::create(rw, op.getLoc(), rw.getI64Type(),
                                         rw.getI64IntegerAttr(
                                             var.bytes ? var.bytes : 1));
      Value slot = LLVM::AllocaOp::create(
          rw, op.getLoc(), LLVM::LLVMPointerType::get(mctx), rw.getI8Type(),
          n, var.align);
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
  LogicalResult
  matchAndRewrite(RetOp op, OpAdaptor adaptor,
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
  LogicalResult
  matchAndRewrite(ExitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    NVVM::Exit::create(rw, op.getLoc());
    rw.replaceOpWithNewOp<LLVM::UnreachableOp>(op);
    return success();
  }
};

/// `trap` is `llvm.trap`.
struct TrapOpLowering : WoolyPattern<TrapOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult
  matchAndRewrite(TrapOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    LLVM::Trap::create(rw, op.getLoc());
    rw.replaceOpWithNewOp<LLVM::UnreachableOp>(op);
    return success();
  }
};

/// `brkpt` is `nvvm.breakpoint`.
struct BrkptOpLowering : WoolyPattern<BrkptOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult
  matchAndRewrite(BrkptOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    rw.replaceOpWithNewOp<NVVM::Breakpoint>(op);
    return success();
  }
};

/// Unpacks the result of a lowered call into the op's results.
void replaceWithCallResults(ConversionPatternRewriter &rw, Operation *op,
                            LLVM::CallOp call) {
  if (op->getNumResults() <= 1) {
    rw.replaceOp(op, call.getResults());
    return;
  }
  SmallVector<Value> results;
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    results.push_back(LLVM::ExtractValueOp::create(rw, op->getLoc(),
                                                   call.getResult(), i));
  rw.replaceOp(op, results);
}

/// `wooly.call` is a direct `llvm.call` (PTX's ABI is NVPTX's).
struct CallOpLowering : WoolyPattern<CallOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult
  matchAndRewrite(CallOp op, OpAdaptor adaptor,
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
  LogicalResult
  matchAndRewrite(CallIndirectOp op, OpAdaptor adaptor,
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
  LogicalResult
  matchAndRewrite(GlobalOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    rw.eraseOp(op);
    return success();
  }
};

/// `wooly.addressof`: the address of a variable in its own state space
/// (PTX's `mov.u64 %rd, sym`), or a function's generic address.
struct AddressOfOpLowering : WoolyPattern<AddressOfOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult
  matchAndRewrite(AddressOfOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    StringRef sym = op.getGlobal();
    auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
    auto local = state.localAllocas.find({fn.getOperation(), sym});
    if (local != state.localAllocas.end()) {
      Value p = LLVM::AddrSpaceCastOp::create(rw, e.loc, e.ptr(5),
                                              local->second);
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
  LogicalResult
  matchAndRewrite(CvtaOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    unsigned as = *addressSpace(op.getSpace());
    bool toGeneric = op.getDir() == CvtaDir::to_generic;
    if (as == 0) {
      rw.replaceOp(op, e.intCast(adaptor.getAddr(), op.getType()));
      return success();
    }
    Value p = e.toPtr(adaptor.getAddr(), toGeneric ? as : 0);
    Value q = LLVM::AddrSpaceCastOp::create(rw, e.loc,
                                            e.ptr(toGeneric ? 0 : as), p);
    rw.replaceOp(op, e.toInt(q, op.getType()));
    return success();
  }
};

/// `wooly.isspacep`: `llvm.nvvm.isspacep.<space>`.
struct IsSpacePOpLowering : WoolyPattern<IsSpacePOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult
  matchAndRewrite(IsSpacePOp op, OpAdaptor adaptor,
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
    rw.replaceOp(op, e.intrinsic(name, rw.getI1Type(),
                                 {e.toPtr(adaptor.getAddr(), 0)}));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Special registers
//===----------------------------------------------------------------------===//

/// `wooly.sreg`: `nvvm.read.ptx.sreg.*`.
struct SRegOpLowering : WoolyPattern<SRegOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult
  matchAndRewrite(SRegOp op, OpAdaptor adaptor,
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
  LogicalResult
  matchAndRewrite(LoadOp op, OpAdaptor adaptor,
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
        results.push_back(LLVM::ExtractElementOp::create(
            rw, e.loc, v, e.c32(i)));
    } else {
      for (uint64_t i = 0; i < n; ++i) {
        Value q = LLVM::GEPOp::create(rw, e.loc, e.ptr(as), rw.getI8Type(), p,
                                      ArrayRef<LLVM::GEPArg>{int32_t(i * elem)});
        results.push_back(LLVM::LoadOp::create(rw, e.loc, t, q, elem,
                                               op.getIsVolatile(), false,
                                               invariant));
      }
    }
    rw.replaceOp(op, results);
    return success();
  }
};

/// `wooly.st`: a store (a vector store for `.v2`/`.v4` of scalars).
struct StoreOpLowering : WoolyPattern<StoreOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult
  matchAndRewrite(StoreOp op, OpAdaptor adaptor,
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
        Value q = LLVM::GEPOp::create(rw, e.loc, e.ptr(as), rw.getI8Type(), p,
                                      ArrayRef<LLVM::GEPArg>{int32_t(i * elem)});
        LLVM::StoreOp::create(rw, e.loc, x, q, elem, op.getIsVolatile());
      }
    }
    rw.eraseOp(op);
    return success();
  }
};

/// The `atomicrmw` operation of a PTX atomic op (`cas` is separate).
LLVM::AtomicBinOp atomicBinOp(AtomicOp op) {
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
    LLVM::AtomicOrdering failOrd =
        ord == LLVM::AtomicOrdering::release
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
  return LLVM::AtomicRMWOp::create(e.rw, e.loc, atomicBinOp(kind), p,
                                   values[0], ord, ss);
}

/// `wooly.atom`: `atomicrmw`/`cmpxchg`.
struct AtomOpLowering : WoolyPattern<AtomOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult
  matchAndRewrite(AtomOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    rw.replaceOp(op, emitAtomic(e, op.getSpace(), op.getOp(),
                                adaptor.getAddr(), adaptor.getValues(),
                                op.getSem(), op.getScope()));
    return success();
  }
};

/// `wooly.red`: an atomic whose old value is dropped.
struct RedOpLowering : WoolyPattern<RedOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult
  matchAndRewrite(RedOp op, OpAdaptor adaptor,
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
  LogicalResult
  matchAndRewrite(FenceOp op, OpAdaptor adaptor,
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
  LogicalResult
  matchAndRewrite(BarrierOp op, OpAdaptor adaptor,
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
  LogicalResult
  matchAndRewrite(BarRedOp op, OpAdaptor adaptor,
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
      return op.emitOpError("bar.red.") << stringifyReduxKind(op.getOp())
                                        << kNotSupported;
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
  LogicalResult
  matchAndRewrite(WarpSyncOp op, OpAdaptor adaptor,
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
  LogicalResult
  matchAndRewrite(ActiveMaskOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    rw.replaceOp(op, e.intrinsic("llvm.nvvm.activemask", e.i32(), {}));
    return success();
  }
};

/// `wooly.nanosleep`: `nanosleep.u32`.
struct NanosleepOpLowering : WoolyPattern<NanosleepOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult
  matchAndRewrite(NanosleepOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    e.intrinsic("llvm.nvvm.nanosleep", {},
                {e.intCast(adaptor.getOperands()[0], e.i32())});
    rw.eraseOp(op);
    return success();
  }
};

/// Hints with no effect on the results: prefetches.
template <typename Op>
struct EraseLowering : WoolyPattern<Op> {
  using WoolyPattern<Op>::WoolyPattern;
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    rw.eraseOp(op);
    return success();
  }
};

/// `createpolicy` yields an opaque cache policy; hints are not kept yet.
struct CreatePolicyOpLowering : WoolyPattern<CreatePolicyOp> {
  using WoolyPattern::WoolyPattern;
  LogicalResult
  matchAndRewrite(CreatePolicyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Emitter e = emitter(rw, op);
    rw.replaceOp(op, e.cst(op.getType(), 0));
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
    if (isa<math::SinOp, math::CosOp, math::Exp2Op, math::Log2Op,
            math::RsqrtOp, math::TanhOp>(op))
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
        return LLVM::InlineAsmOp::create(
                   b, e.loc, x.getType(), ValueRange{x},
                   "tanh.approx.f32 $0, $1;", "=f,f",
                   /*has_side_effects=*/false, /*is_align_stack=*/false,
                   LLVM::TailCallKind::None, LLVM::AsmDialectAttr(),
                   ArrayAttr())
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

/// Rewrites the calls of `__wooly_*` helpers into NVVM intrinsics and drops
/// the helpers' declarations.
LogicalResult lowerHelperCalls(ModuleOp module) {
  SmallVector<func::CallOp> calls;
  module.walk([&](func::CallOp c) {
    if (c.getCallee().starts_with("__wooly_"))
      calls.push_back(c);
  });
  bool ok = true;
  for (func::CallOp c : calls) {
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
    if (isa<ShflOp, VoteOp, MatchOp, ReduxOp, LdMatrixOp, MmaOp, WmmaLoadOp,
            WmmaStoreOp, WmmaMmaOp, CpAsyncOp, CpAsyncCommitOp,
            CpAsyncWaitOp, IterationBarrierOp, ParamAddressOp>(op))
      return fail(op, "");
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

/// The initializer of a global whose `init` is dense elements, padded with
/// zeros to `count` elements; null otherwise.
Attribute denseInitializer(GlobalOp g, uint64_t count) {
  auto el = dyn_cast_or_null<DenseElementsAttr>(g.getInitAttr());
  if (!el)
    return {};
  Type et = el.getElementType();
  auto shape = RankedTensorType::get({int64_t(count)}, et);
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
      module.emitError("convert-wooly-to-nvvm: bad chip '") << chip
                                                            << "' (sm_XX)";
      return signalPassFailure();
    }
    if (failed(checkSupported(module)) || failed(lowerApproxMath(module)) ||
        failed(lowerHelperCalls(module)))
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
    patterns.add<FuncOpLowering, RetOpLowering, ExitOpLowering,
                 TrapOpLowering, BrkptOpLowering, CallOpLowering,
                 CallIndirectOpLowering, GlobalOpLowering,
                 AddressOfOpLowering, CvtaOpLowering, IsSpacePOpLowering,
                 SRegOpLowering, LoadOpLowering, StoreOpLowering,
                 AtomOpLowering, RedOpLowering, FenceOpLowering,
                 BarrierOpLowering, BarRedOpLowering, WarpSyncOpLowering,
                 ActiveMaskOpLowering, NanosleepOpLowering,
                 EraseLowering<PrefetchOp>, CreatePolicyOpLowering>(converter,
                                                                    state);
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
