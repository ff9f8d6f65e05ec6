//===- WoolyToNVVM.cpp - Lower Wooly IR to LLVM + NVVM ----------*- C++ -*-===//
//
// `convert-wooly-to-nvvm`: lowers Wooly kernels (after `wooly-expand-arith`)
// to the LLVM and NVVM dialects with PTX's semantics, for LLVM's NVPTX
// backend. The lowering itself is shared with the other targets
// (`lib/Conversion/WoolyCommon/LLVMLowering.h`, and GPULowering.h for what
// GPUs share); this file is the NVPTX `GPUTargetInfo`, the pass and the
// exported prepare/populate functions.
//
// Kernels are marked `nvvm.kernel` with `.maxntid`/`.reqntid`/
// `.minnctapersm`/`.maxnreg` as NVVM attributes. Address spaces are NVPTX's
// (generic 0, global 1, shared 3, const 4, local 5, shared::cluster 7;
// allocas are generic and cast to local), scopes are NVPTX's `syncscope`s
// (cta "block", cluster "cluster", gpu "device", sys "").
//
// Before the conversion, ops that map 1:1 to NVVM intrinsics are rewritten
// in place: the `math` ops `wooly-expand-arith` produces for `.approx`
// (`sin`, `cos`, `ex2`, `lg2`, `rsqrt`, `tanh`) and the calls of its
// helpers `__wooly_*` that have an exact NVPTX counterpart (directed
// rounding, f16/bf16 fma.rn, cvt.rn.bf16.f64, fp8 conversions). Special
// registers, barriers, warp collectives, `cp.async`, `ldmatrix`, `mma` and
// `wmma` map to NVVM ops and intrinsics. Ops without a faithful lowering yet
// are rejected up front with a located "not supported yet on nvptx".
//
//===----------------------------------------------------------------------===//

#include "../WoolyCommon/GPULowering.h"
#include "../WoolyCommon/LLVMLowering.h"
#include "Wooly/Conversion/Passes.h"
#include "Wooly/Dialect/Wooly/Analysis/KernelAnalysis.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::wooly {
#define GEN_PASS_DEF_CONVERTWOOLYTONVVM
#include "Wooly/Conversion/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::common;
using namespace mlir::wooly::gpu;

namespace {

constexpr StringLiteral kNotSupported = " is not supported yet on nvptx";

/// The NVPTX target: NVVM ops and intrinsics for a given `sm_XX`.
class NVVMTargetInfo : public GPUTargetInfo {
public:
  /// The target for `sm_<sm>`.
  explicit NVVMTargetInfo(StringRef chip, unsigned sm) : chip(chip), sm(sm) {}

  StringRef name() const override { return "nvptx"; }
  void addLegalDialects(ConversionTarget &target) const override {
    target.addLegalDialect<NVVM::NVVMDialect>();
  }
  LogicalResult checkOp(Operation *op) const override;
  void finalizeModule(ModuleOp module) const override {
    module->setAttr("wooly.chip", StringAttr::get(module.getContext(), chip));
  }
  std::optional<unsigned> addressSpace(StateSpace s) const override;
  unsigned allocaAddressSpace() const override { return 0; }
  bool byteArrayParamsByVal() const override { return true; }
  StringRef syncScope(std::optional<MemScope> scope) const override;
  FailureOr<Value> approxMath(Emitter &e, Operation *op) const override;
  Value approxArith(Emitter &e, Operation *op, StringRef form) const override;
  FailureOr<Value> helperCall(Emitter &e, func::CallOp call) const override;
  void markKernel(OpBuilder &b, LLVM::LLVMFuncOp fn, FuncOp op) const override;

  WOOLY_TARGET_OPS(WOOLY_LOWER_OVERRIDE)

private:
  /// The `sm_XX` name and its number.
  std::string chip;
  unsigned sm;
};

//===----------------------------------------------------------------------===//
// Memory model and kernels
//===----------------------------------------------------------------------===//

/// NVPTX's address spaces: the shared numbering, and shared::cluster 7
/// from sm_90 on. Before sm_90 a block is a cluster of one CTA, whose
/// shared::cluster window holds only its own shared memory, at the same
/// addresses as in the shared::cta window.
std::optional<unsigned> NVVMTargetInfo::addressSpace(StateSpace s) const {
  if (s == StateSpace::shared_cluster)
    return sm >= 90 ? 7 : *GPUTargetInfo::addressSpace(StateSpace::shared);
  return GPUTargetInfo::addressSpace(s);
}

/// The NVPTX `syncscope` of a PTX scope (`gpu` when absent, as in PTX);
/// before sm_90, the cluster is the CTA.
StringRef NVVMTargetInfo::syncScope(std::optional<MemScope> scope) const {
  switch (scope.value_or(MemScope::gpu)) {
  case MemScope::cta:
    return "block";
  case MemScope::cluster:
    return sm >= 90 ? "cluster" : "block";
  case MemScope::gpu:
    return "device";
  case MemScope::sys:
    return "";
  }
  return "";
}

/// `nvvm.kernel` and the launch bounds as NVVM attributes.
void NVVMTargetInfo::markKernel(OpBuilder &b, LLVM::LLVMFuncOp fn,
                                FuncOp op) const {
  fn->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
  if (auto a = op.getMaxntidAttr())
    fn->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(), a);
  if (auto a = op.getReqntidAttr())
    fn->setAttr(NVVM::NVVMDialect::getReqntidAttrName(), a);
  if (auto a = op.getMinnctapersmAttr())
    fn->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(), a);
  if (auto a = op.getMaxnregAttr())
    fn->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(), a);
}

//===----------------------------------------------------------------------===//
// Functions, addresses, special registers, synchronisation
//===----------------------------------------------------------------------===//

/// `exit` is `nvvm.exit` (ends the thread, from any function).
LogicalResult NVVMTargetInfo::lower(ExitOp op, ExitOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  NVVM::Exit::create(rw, op.getLoc());
  rw.replaceOpWithNewOp<LLVM::UnreachableOp>(op);
  return success();
}

/// `brkpt` is `nvvm.breakpoint`.
LogicalResult NVVMTargetInfo::lower(BrkptOp op, BrkptOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  rw.replaceOpWithNewOp<NVVM::Breakpoint>(op);
  return success();
}

/// `wooly.isspacep`: `llvm.nvvm.isspacep.<space>`.
LogicalResult NVVMTargetInfo::lower(IsSpacePOp op, IsSpacePOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
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
    name = sm >= 90 ? "llvm.nvvm.isspacep.shared.cluster"
                    : "llvm.nvvm.isspacep.shared";
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

/// `wooly.sreg`: `nvvm.read.ptx.sreg.*`.
LogicalResult NVVMTargetInfo::lower(SRegOp op, SRegOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  StringRef dim = "x";
  if (op.getDim())
    dim = stringifyDim(*op.getDim());
  auto read = [&](StringRef name, Type t) {
    return e.namedOp(("nvvm.read.ptx.sreg." + name).str(), t);
  };
  auto withDim = [&](StringRef name) {
    return read((name + "." + dim).str(), e.i32());
  };
  // Before sm_90 (PTX written for a newer GPU, retargeted) a block is a
  // cluster of one CTA: the cluster's registers follow.
  bool clusters = sm >= 90;
  SpecialReg reg = op.getReg();
  if (!clusters &&
      (reg == SpecialReg::cluster_ctaid || reg == SpecialReg::cluster_nctaid ||
       reg == SpecialReg::cluster_ctarank ||
       reg == SpecialReg::cluster_nctarank)) {
    rw.replaceOp(op, e.intCast(derivedSReg(e, reg, [] { return Value(); }),
                               op.getType()));
    return success();
  }
  Value v;
  switch (reg) {
  case SpecialReg::tid:
  case SpecialReg::ntid:
  case SpecialReg::ctaid:
  case SpecialReg::nctaid:
    v = withDim(stringifySpecialReg(op.getReg()));
    break;
  case SpecialReg::clusterid:
    v = withDim(clusters ? "clusterid" : "ctaid");
    break;
  case SpecialReg::nclusterid:
    v = withDim(clusters ? "nclusterid" : "nctaid");
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
  case SpecialReg::reserved_smem_offset_begin:
  case SpecialReg::reserved_smem_offset_end:
  case SpecialReg::reserved_smem_offset_cap:
  case SpecialReg::reserved_smem_offset_0:
  case SpecialReg::reserved_smem_offset_1:
    // NVVM has no intrinsic for these: the instruction itself.
    v = LLVM::InlineAsmOp::create(
            rw, e.loc, e.i32(), ValueRange{},
            ("mov.u32 $0, %" + stringifySpecialReg(reg) + ";").str(), "=r",
            /*has_side_effects=*/false, /*is_align_stack=*/false,
            LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
            .getResult(0);
    break;
  }
  if (!v)
    return op.emitOpError("special register %")
           << stringifySpecialReg(op.getReg()) << kNotSupported;
  rw.replaceOp(op, e.intCast(v, op.getType()));
  return success();
}

/// `wooly.envreg`: the driver's register (`llvm.nvvm.read.ptx.sreg.envreg*`).
LogicalResult NVVMTargetInfo::lower(EnvRegOp op, EnvRegOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  rw.replaceOp(
      op, e.intrinsic(
              ("llvm.nvvm.read.ptx.sreg.envreg" + Twine(op.getIndex())).str(),
              e.i32(), {}));
  return success();
}

/// `wooly.barrier`: `nvvm.barrier` (aligned), or the non-aligned
/// `llvm.nvvm.barrier.cta.*` intrinsics; `arrive` signals only.
LogicalResult NVVMTargetInfo::lower(BarrierOp op, BarrierOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
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

/// `wooly.bar_red`: `barrier.cta.red.{popc,and,or}{.aligned}` through the
/// `llvm.nvvm.barrier.cta.red.*` intrinsics (`nvvm.barrier` with a
/// reduction only takes barrier 0).
LogicalResult NVVMTargetInfo::lower(BarRedOp op, BarRedOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
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
  Value r = e.intrinsic(("llvm.nvvm.barrier.cta.red." + kind +
                         (op.getAligned() ? ".aligned." : ".") +
                         (adaptor.getCount() ? "count" : "all"))
                            .str(),
                        rt, args);
  rw.replaceOp(op, e.intCast(r, op.getType()));
  return success();
}

/// `wooly.warp_sync`: `bar.warp.sync`.
LogicalResult NVVMTargetInfo::lower(WarpSyncOp op, WarpSyncOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  e.intrinsic("llvm.nvvm.bar.warp.sync", {}, {adaptor.getMask()});
  rw.eraseOp(op);
  return success();
}

/// `wooly.activemask`: `activemask.b32`.
LogicalResult NVVMTargetInfo::lower(ActiveMaskOp op,
                                    ActiveMaskOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  rw.replaceOp(op, e.intrinsic("llvm.nvvm.activemask", e.i32(), {}));
  return success();
}

/// `wooly.nanosleep`: `nanosleep.u32`.
LogicalResult NVVMTargetInfo::lower(NanosleepOp op,
                                    NanosleepOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  e.intrinsic("llvm.nvvm.nanosleep", {},
              {e.intCast(adaptor.getOperands()[0], e.i32())});
  rw.eraseOp(op);
  return success();
}

//===----------------------------------------------------------------------===//
// Warp collectives, asynchronous copies, matrix operations
//===----------------------------------------------------------------------===//

/// `wooly.shfl`: `nvvm.shfl.sync` returning the value and the valid
/// predicate; `c` (clamp | segment mask << 8) is PTX's `c` operand.
LogicalResult NVVMTargetInfo::lower(ShflOp op, ShflOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
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

/// `wooly.vote`: `nvvm.vote.sync` (i1 for all/any/uni, i32 for ballot).
LogicalResult NVVMTargetInfo::lower(VoteOp op, VoteOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
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
    return op.emitOpError("vote result type ") << op.getType() << kNotSupported;
  rw.replaceOpWithNewOp<NVVM::VoteSyncOp>(op, rt, adaptor.getMask(),
                                          adaptor.getPred(), kind);
  return success();
}

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
LogicalResult NVVMTargetInfo::lower(ReduxOp op, ReduxOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  auto kind = reduxKind(op.getOp());
  if (!kind)
    return op.emitOpError("redux.sync.")
           << stringifyReduxKind(op.getOp()) << kNotSupported;
  rw.replaceOpWithNewOp<NVVM::ReduxOp>(op, rw.getI32Type(), adaptor.getValue(),
                                       *kind, adaptor.getMask());
  return success();
}

/// `wooly.match`: `nvvm.match.sync` (`all` also gives the predicate).
LogicalResult NVVMTargetInfo::lower(MatchOp op, MatchOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  if (op.getMode() == MatchMode::any) {
    // PTX's match.any has no predicate (checkSupported refuses a used one).
    Value m =
        NVVM::MatchSyncOp::create(rw, e.loc, e.i32(), adaptor.getMask(),
                                  adaptor.getValue(), NVVM::MatchSyncKind::any);
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

/// `wooly.cp_async`: `nvvm.cp.async.shared.global` (ca/cg, 4/8/16 bytes,
/// optional source size).
LogicalResult NVVMTargetInfo::lower(CpAsyncOp op, CpAsyncOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  bool cg = op.getCache() && *op.getCache() == CacheOp::cg;
  NVVM::CpAsyncOp::create(rw, e.loc, e.toPtr(adaptor.getDst(), 3),
                          e.toPtr(adaptor.getSrc(), 1), op.getSize(),
                          cg ? NVVM::LoadCacheModifierKind::CG
                             : NVVM::LoadCacheModifierKind::CA,
                          adaptor.getSrcSize());
  rw.eraseOp(op);
  return success();
}

LogicalResult NVVMTargetInfo::lower(CpAsyncCommitOp op,
                                    CpAsyncCommitOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  rw.replaceOpWithNewOp<NVVM::CpAsyncCommitGroupOp>(op);
  return success();
}

LogicalResult NVVMTargetInfo::lower(CpAsyncWaitOp op,
                                    CpAsyncWaitOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  rw.replaceOpWithNewOp<NVVM::CpAsyncWaitGroupOp>(op, op.getPending());
  return success();
}

/// `wooly.ldmatrix`: `nvvm.ldmatrix` m8n8 b16 (x1/x2/x4, trans = col).
LogicalResult NVVMTargetInfo::lower(LdMatrixOp op, LdMatrixOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
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
  if (shape != "m16n16k16" || !hasStride || space == StateSpace::param ||
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

/// The PTX instruction(s) `ptx` as inline assembly with `constraints`,
/// returning `results` (none, one value, or a struct of several).
static Value inlinePtx(Emitter &e, TypeRange results, ValueRange operands,
                       const Twine &ptx, StringRef constraints,
                       bool sideEffects = true) {
  Type rt;
  if (results.size() == 1)
    rt = results[0];
  else if (results.size() > 1)
    rt = LLVM::LLVMStructType::getLiteral(e.rw.getContext(),
                                          SmallVector<Type>(results));
  auto op = LLVM::InlineAsmOp::create(
      e.rw, e.loc, rt ? TypeRange{rt} : TypeRange{}, operands, ptx.str(),
      constraints, sideEffects, /*is_align_stack=*/false,
      LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
  return rt ? op.getResult(0) : Value();
}

//===----------------------------------------------------------------------===//
// mma.sync and wmma without an NVVM intrinsic: the instruction itself
//===----------------------------------------------------------------------===//

/// The inline-assembly constraint of a fragment register of type `t`.
static char fragmentConstraint(Type t) {
  if (t.isF32())
    return 'f';
  if (t.isF64())
    return 'd';
  if (t.isInteger(64))
    return 'l';
  return 'r';
}

/// `{$first, ...}` for `n` operands and their constraints (`,X` each).
static std::string operandList(unsigned first, TypeRange types,
                               std::string &constraints, bool output) {
  std::string list = "{";
  for (auto [i, t] : llvm::enumerate(types)) {
    list += (i ? ", $" : "$") + std::to_string(first + i);
    if (!constraints.empty())
      constraints += ",";
    constraints += output ? std::string("=") + fragmentConstraint(t)
                          : std::string(1, fragmentConstraint(t));
  }
  return list + "}";
}

/// The matrix instruction `ptx` (its operands written as `$N`) with results
/// `results` and operands `operands`: the results in order.
static SmallVector<Value> matrixPtx(Emitter &e, TypeRange results,
                                    ValueRange operands, const Twine &ptx,
                                    StringRef constraints) {
  Value r = inlinePtx(e, results, operands, ptx, constraints);
  SmallVector<Value> out;
  if (results.size() == 1)
    out.push_back(r);
  else
    for (unsigned i = 0; i < results.size(); ++i)
      out.push_back(LLVM::ExtractValueOp::create(e.rw, e.loc, r, i));
  return out;
}

/// The address operand of a wmma access in `space` and its constraint.
static std::pair<Value, char> wmmaAddressOperand(Emitter &e, StateSpace space,
                                                 Value addr) {
  if (space == StateSpace::shared)
    return {e.intCast(addr, e.i32()), 'r'};
  return {e.intCast(addr, e.i64()), 'l'};
}

/// `.global`, `.shared` or nothing (generic) in a wmma access.
static std::string wmmaSpace(StateSpace space) {
  if (space == StateSpace::global)
    return ".global";
  if (space == StateSpace::shared)
    return ".shared";
  return "";
}

/// The operands of an mma or wmma.mma instruction: `{d}, {a}, {b}, {c}`
/// with their constraints, the values, and the results' types.
struct MmaPtxOperands {
  std::string text, constraints;
  SmallVector<Value> operands;
};

template <typename Op>
static MmaPtxOperands mmaPtxOperands(Op op, typename Op::Adaptor adaptor) {
  MmaPtxOperands m;
  unsigned nd = op.getNumResults(), na = adaptor.getA().size(),
           nb = adaptor.getB().size();
  m.text =
      operandList(0, op.getResultTypes(), m.constraints, true) + ", " +
      operandList(nd, adaptor.getA().getTypes(), m.constraints, false) + ", " +
      operandList(nd + na, adaptor.getB().getTypes(), m.constraints, false) +
      ", " +
      operandList(nd + na + nb, adaptor.getC().getTypes(), m.constraints,
                  false) +
      ";";
  llvm::append_range(m.operands, adaptor.getA());
  llvm::append_range(m.operands, adaptor.getB());
  llvm::append_range(m.operands, adaptor.getC());
  return m;
}

/// `.xor.popc` / `.and.popc` of a single-bit product, or nothing.
static std::string bitOpSuffix(std::optional<MmaBitOp> bitOp) {
  return bitOp ? "." + stringifyMmaBitOp(*bitOp).str() + ".popc" : "";
}

/// `wooly.mma_sync` as `mma.sync.aligned...` itself.
static LogicalResult lowerMmaPtx(MmaOp op, MmaOp::Adaptor adaptor,
                                 ConversionPatternRewriter &rw) {
  Emitter e{rw, op.getLoc()};
  MmaPtxOperands m = mmaPtxOperands(op, adaptor);
  std::string ptx = "mma.sync.aligned." + op.getShape().str() + "." +
                    stringifyLayout(op.getLayoutA()).str() + "." +
                    stringifyLayout(op.getLayoutB()).str() +
                    (op.getSatfinite() ? ".satfinite." : ".") +
                    stringifyScalarType(op.getDType()).str() + "." +
                    stringifyScalarType(op.getAType()).str() + "." +
                    stringifyScalarType(op.getBType()).str() + "." +
                    stringifyScalarType(op.getCType()).str() +
                    bitOpSuffix(op.getBitOp()) + " " + m.text;
  rw.replaceOp(
      op, matrixPtx(e, op.getResultTypes(), m.operands, ptx, m.constraints));
  return success();
}

/// `wooly.wmma_mma` as `wmma.mma.sync.aligned...` itself (f16 inputs in
/// the short `.dtype.ctype` form).
static LogicalResult lowerWmmaMmaPtx(WmmaMmaOp op, WmmaMmaOp::Adaptor adaptor,
                                     ConversionPatternRewriter &rw) {
  Emitter e{rw, op.getLoc()};
  MmaPtxOperands m = mmaPtxOperands(op, adaptor);
  std::string types = "." + stringifyScalarType(op.getDType()).str();
  if (op.getAType() != ScalarType::f16)
    types += "." + stringifyScalarType(op.getAType()).str() + "." +
             stringifyScalarType(op.getBType()).str();
  types += "." + stringifyScalarType(op.getCType()).str();
  std::string ptx = "wmma.mma" + bitOpSuffix(op.getBitOp()) + ".sync.aligned." +
                    stringifyLayout(op.getLayoutA()).str() + "." +
                    stringifyLayout(op.getLayoutB()).str() + "." +
                    op.getShape().str() + types +
                    (op.getSatfinite() ? ".satfinite" : "") + " " + m.text;
  rw.replaceOp(
      op, matrixPtx(e, op.getResultTypes(), m.operands, ptx, m.constraints));
  return success();
}

/// `wooly.wmma_load` as `wmma.load...` itself.
static LogicalResult lowerWmmaLoadPtx(WmmaLoadOp op,
                                      WmmaLoadOp::Adaptor adaptor,
                                      ConversionPatternRewriter &rw) {
  Emitter e{rw, op.getLoc()};
  std::string constraints;
  unsigned n = op.getNumResults();
  std::string d = operandList(0, op.getResultTypes(), constraints, true);
  auto [addr, ac] = wmmaAddressOperand(e, op.getSpace(), adaptor.getAddr());
  SmallVector<Value> operands{addr};
  constraints += std::string(",") + ac;
  std::string tail = "[$" + std::to_string(n) + "]";
  if (adaptor.getStride()) {
    operands.push_back(adaptor.getStride());
    constraints += ",r";
    tail += ", $" + std::to_string(n + 1);
  }
  std::string ptx = "wmma.load." + stringifyMatrixRole(op.getRole()).str() +
                    ".sync.aligned." + stringifyLayout(op.getLayout()).str() +
                    "." + op.getShape().str() + wmmaSpace(op.getSpace()) + "." +
                    stringifyScalarType(op.getType()).str() + " " + d + ", " +
                    tail + ";";
  rw.replaceOp(op,
               matrixPtx(e, op.getResultTypes(), operands, ptx, constraints));
  return success();
}

/// `wooly.wmma_store` as `wmma.store.d...` itself.
static LogicalResult lowerWmmaStorePtx(WmmaStoreOp op,
                                       WmmaStoreOp::Adaptor adaptor,
                                       ConversionPatternRewriter &rw) {
  Emitter e{rw, op.getLoc()};
  auto [addr, ac] = wmmaAddressOperand(e, op.getSpace(), adaptor.getAddr());
  std::string constraints(1, ac);
  SmallVector<Value> operands{addr};
  std::string vals =
      operandList(1, adaptor.getValues().getTypes(), constraints, false);
  llvm::append_range(operands, adaptor.getValues());
  std::string tail;
  if (adaptor.getStride()) {
    tail = ", $" + std::to_string(operands.size());
    operands.push_back(adaptor.getStride());
    constraints += ",r";
  }
  inlinePtx(e, {}, operands,
            "wmma.store.d.sync.aligned." + stringifyLayout(op.getLayout()) +
                "." + op.getShape() + wmmaSpace(op.getSpace()) + "." +
                stringifyScalarType(op.getType()) + " [$0], " + vals + tail +
                ";",
            constraints);
  rw.eraseOp(op);
  return success();
}

/// `wooly.mma_sync`: the `llvm.nvvm.mma.*` intrinsic of its shape and types.
LogicalResult NVVMTargetInfo::lower(MmaOp op, MmaOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  auto m = mmaSyncIntrinsic(op);
  if (!m)
    return lowerMmaPtx(op, adaptor, rw);
  Emitter e{rw, op.getLoc()};
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

/// `wooly.wmma_mma`: `llvm.nvvm.wmma.m16n16k16.mma.*` (f16 inputs).
LogicalResult NVVMTargetInfo::lower(WmmaMmaOp op, WmmaMmaOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  auto m = wmmaMmaIntrinsic(op);
  if (!m)
    return lowerWmmaMmaPtx(op, adaptor, rw);
  Emitter e{rw, op.getLoc()};
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

NVVM::MMALayout mmaLayout(Layout l) {
  return l == Layout::row ? NVVM::MMALayout::row : NVVM::MMALayout::col;
}

/// `wooly.wmma_load`: `nvvm.wmma.load` m16n16k16 with the stride.
LogicalResult NVVMTargetInfo::lower(WmmaLoadOp op, WmmaLoadOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  if (!wmmaLdStSupported(op.getShape(), op.getType(), op.getRole(),
                         op.getSpace(), bool(op.getStride()),
                         op.getResultTypes()) ||
      op.getRole() == MatrixRole::d)
    return lowerWmmaLoadPtx(op, adaptor, rw);
  Emitter e{rw, op.getLoc()};
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

/// `wooly.wmma_store`: `nvvm.wmma.store` m16n16k16 with the stride.
LogicalResult NVVMTargetInfo::lower(WmmaStoreOp op,
                                    WmmaStoreOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  if (!wmmaLdStSupported(op.getShape(), op.getType(), MatrixRole::d,
                         op.getSpace(), bool(op.getStride()),
                         op.getValues().getTypes()))
    return lowerWmmaStorePtx(op, adaptor, rw);
  Emitter e{rw, op.getLoc()};
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

//===----------------------------------------------------------------------===//
// Textures and surfaces
//===----------------------------------------------------------------------===//

/// The geometry in NVVM's intrinsic names (`2d.array`).
StringRef nvvmGeometry(TexGeometry g) {
  switch (g) {
  case TexGeometry::a1d:
    return "1d.array";
  case TexGeometry::a2d:
    return "2d.array";
  case TexGeometry::acube:
    return "cube.array";
  default:
    return ptxGeometry(g);
  }
}

/// The `.v2`/`.v4` and element part of a suld/sust intrinsic (`v4i8`).
std::string surfaceVector(unsigned vec, ScalarType t) {
  return (vec > 1 ? "v" + std::to_string(vec) : std::string()) + "i" +
         std::to_string(surfaceElementBits(t));
}

/// Why NVVM cannot lower texture or surface op `op`, or empty.
std::string textureRefusal(Operation *op) {
  if (auto t = dyn_cast<TexOp>(op)) {
    bool f32 = t.getCType() == ScalarType::f32;
    if (!f32 && (t.getLod() || !t.getGradX().empty() ||
                 t.getGeometry() == TexGeometry::cube ||
                 t.getGeometry() == TexGeometry::acube))
      return "a texture fetch with .s32 coordinates and a level, gradients "
             "or a cube";
  }
  if (auto s = dyn_cast<SuldOp>(op);
      s && s.getNumResults() == 4 && surfaceElementBits(s.getType()) == 64)
    return "suld.v4.b64";
  if (auto s = dyn_cast<SustOp>(op)) {
    if (s.getValues().size() == 4 && surfaceElementBits(s.getType()) == 64)
      return "sust.v4.b64";
    if (s.getFormatted() && s.getClamp() != SurfClamp::trap)
      return "sust.p." + stringifySurfClamp(s.getClamp()).str();
  }
  return "";
}

/// The struct of `n` values of `t` (a scalar for one).
Type intrinsicResults(MLIRContext *ctx, Type t, unsigned n) {
  if (n == 1)
    return t;
  return LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(n, t));
}

/// Replaces `op` with the fields of `r` (`n` of them, or `r` itself for
/// one), each converted to `op`'s result type.
void replaceWithFields(ConversionPatternRewriter &rw, Emitter &e, Operation *op,
                       Value r, unsigned n) {
  SmallVector<Value> results;
  for (unsigned i = 0; i < n; ++i) {
    Value v = n == 1 ? r : LLVM::ExtractValueOp::create(rw, e.loc, r, i);
    Type t = op->getResult(i).getType();
    if (v.getType() != t)
      v = e.intCast(v, t);
    results.push_back(v);
  }
  rw.replaceOp(op, results);
}

/// The texture's or surface's layer and coordinates, then `rest`.
SmallVector<Value> textureArgs(Value handle, Value layer, ValueRange coords,
                               ValueRange rest = {}) {
  SmallVector<Value> args{handle};
  if (layer)
    args.push_back(layer);
  llvm::append_range(args, coords);
  llvm::append_range(args, rest);
  return args;
}

/// `wooly.tex`: `llvm.nvvm.tex.unified.<geometry>[.level|.grad].v4<d>.<c>`.
LogicalResult NVVMTargetInfo::lower(TexOp op, TexOp::Adaptor a,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  std::string name =
      ("llvm.nvvm.tex.unified." + nvvmGeometry(op.getGeometry()) +
       (a.getLod()             ? ".level"
        : a.getGradX().empty() ? ""
                               : ".grad") +
       ".v4" + stringifyScalarType(op.getDType()) + "." +
       stringifyScalarType(op.getCType()))
          .str();
  SmallVector<Value> rest;
  if (a.getLod())
    rest.push_back(a.getLod());
  llvm::append_range(rest, a.getGradX());
  llvm::append_range(rest, a.getGradY());
  Type rt = op.getResult(0).getType();
  Value r = e.intrinsic(
      name, intrinsicResults(op.getContext(), rt, 4),
      textureArgs(a.getHandle(), a.getLayer(), a.getCoords(), rest));
  replaceWithFields(rw, e, op, r, 4);
  return success();
}

/// `wooly.tld4`: `llvm.nvvm.tld4.unified.<c>.2d.v4<d>.f32`; NVVM has no
/// intrinsic for the other geometries: the instruction itself (inline PTX,
/// the coordinate vector padded to 4 with its last coordinate).
LogicalResult NVVMTargetInfo::lower(Tld4Op op, Tld4Op::Adaptor a,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  if (op.getGeometry() != TexGeometry::dim2) {
    bool f32 = op.getDType() == ScalarType::f32;
    SmallVector<Value> args{a.getHandle()};
    std::string constraints = f32 ? "=f,=f,=f,=f,l" : "=r,=r,=r,=r,l";
    SmallVector<std::string> vec;
    if (a.getLayer()) {
      args.push_back(a.getLayer());
      constraints += ",r";
    }
    for (Value c : a.getCoords()) {
      args.push_back(c);
      constraints += ",f";
    }
    for (unsigned i = 5; i < 4 + args.size(); ++i)
      vec.push_back("$" + std::to_string(i));
    while (vec.size() < 4)
      vec.push_back(vec.back());
    std::string text =
        ("tld4." + stringifyTexComponent(op.getComponent()) + "." +
         ptxGeometry(op.getGeometry()) + ".v4." +
         stringifyScalarType(op.getDType()) + ".f32 {$0, $1, $2, $3}, [$4, {" +
         vec[0] + ", " + vec[1] + ", " + vec[2] + ", " + vec[3] + "}];")
            .str();
    Type rt = op.getResult(0).getType();
    Value r = LLVM::InlineAsmOp::create(
                  rw, e.loc, intrinsicResults(op.getContext(), rt, 4), args,
                  text, constraints, /*has_side_effects=*/false,
                  /*is_align_stack=*/false, LLVM::TailCallKind::None,
                  LLVM::AsmDialectAttr(), ArrayAttr())
                  .getResult(0);
    replaceWithFields(rw, e, op, r, 4);
    return success();
  }
  std::string name =
      ("llvm.nvvm.tld4.unified." + stringifyTexComponent(op.getComponent()) +
       ".2d.v4" + stringifyScalarType(op.getDType()) + ".f32")
          .str();
  Type rt = op.getResult(0).getType();
  Value r = e.intrinsic(name, intrinsicResults(op.getContext(), rt, 4),
                        textureArgs(a.getHandle(), {}, a.getCoords()));
  replaceWithFields(rw, e, op, r, 4);
  return success();
}

/// `wooly.tex_query`: `llvm.nvvm.txq.*`/`llvm.nvvm.suq.*` where NVVM has
/// the query, else the instruction itself.
LogicalResult NVVMTargetInfo::lower(TexQueryOp op, TexQueryOp::Adaptor a,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  TexQuery q = op.getQuery();
  bool intrinsic = !a.getLod() &&
                   (q == TexQuery::width || q == TexQuery::height ||
                    q == TexQuery::depth || q == TexQuery::channel_data_type ||
                    q == TexQuery::channel_order || q == TexQuery::array_size ||
                    (!op.getSurface() && (q == TexQuery::num_mipmap_levels ||
                                          q == TexQuery::num_samples)));
  StringRef inst = op.getSurface() ? "suq" : "txq";
  Value r;
  if (intrinsic) {
    // `channel_data_type` is `llvm.nvvm.txq.channel.data.type`.
    std::string query = stringifyTexQuery(q).str();
    std::replace(query.begin(), query.end(), '_', '.');
    r = e.intrinsic(("llvm.nvvm." + inst + "." + query).str(), e.i32(),
                    {a.getHandle()});
  } else {
    SmallVector<Value> args{a.getHandle()};
    std::string text = (inst + (a.getLod() ? ".level." : ".") +
                        stringifyTexQuery(q) + ".b32 $0, [$1]")
                           .str();
    std::string constraints = "=r,l";
    if (a.getLod()) {
      args.push_back(a.getLod());
      text += ", $2";
      constraints += ",r";
    }
    r = LLVM::InlineAsmOp::create(
            rw, e.loc, e.i32(), args, text + ";", constraints,
            /*has_side_effects=*/false, /*is_align_stack=*/false,
            LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
            .getResult(0);
  }
  rw.replaceOp(op, r);
  return success();
}

/// `wooly.suld`: `llvm.nvvm.suld.<geometry>.<vector>.<clamp>` (8-bit
/// elements come back as i16).
LogicalResult NVVMTargetInfo::lower(SuldOp op, SuldOp::Adaptor a,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  unsigned vec = op.getNumResults(), bits = surfaceElementBits(op.getType());
  std::string name = ("llvm.nvvm.suld." + nvvmGeometry(op.getGeometry()) + "." +
                      surfaceVector(vec, op.getType()) + "." +
                      stringifySurfClamp(op.getClamp()))
                         .str();
  Type et = rw.getIntegerType(bits == 8 ? 16 : bits);
  Value r =
      e.intrinsic(name, intrinsicResults(op.getContext(), et, vec),
                  textureArgs(a.getHandle(), a.getLayer(), a.getCoords()));
  replaceWithFields(rw, e, op, r, vec);
  return success();
}

/// `wooly.sust`: `llvm.nvvm.sust.{b,p}.<geometry>.<vector>.<clamp>`.
LogicalResult NVVMTargetInfo::lower(SustOp op, SustOp::Adaptor a,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  unsigned vec = a.getValues().size(), bits = surfaceElementBits(op.getType());
  std::string name =
      ("llvm.nvvm.sust." + Twine(op.getFormatted() ? "p." : "b.") +
       nvvmGeometry(op.getGeometry()) + "." + surfaceVector(vec, op.getType()) +
       "." + stringifySurfClamp(op.getClamp()))
          .str();
  Type et = rw.getIntegerType(bits == 8 ? 16 : bits);
  SmallVector<Value> values;
  for (Value v : a.getValues())
    values.push_back(e.intCast(v, et));
  e.intrinsic(name, {},
              textureArgs(a.getHandle(), a.getLayer(), a.getCoords(), values));
  rw.eraseOp(op);
  return success();
}

/// `wooly.sured`: NVVM has no intrinsic; the instruction itself.
LogicalResult NVVMTargetInfo::lower(SuredOp op, SuredOp::Adaptor a,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  StringRef kind;
  switch (op.getOp()) {
  case AtomicOp::add:
    kind = "add";
    break;
  case AtomicOp::umin:
  case AtomicOp::smin:
    kind = "min";
    break;
  case AtomicOp::umax:
  case AtomicOp::smax:
    kind = "max";
    break;
  case AtomicOp::and_:
    kind = "and";
    break;
  case AtomicOp::or_:
    kind = "or";
    break;
  default:
    return op.emitOpError("sured.")
           << stringifyAtomicOp(op.getOp()) << kNotSupported;
  }
  SmallVector<Value> args =
      textureArgs(a.getHandle(), a.getLayer(), a.getCoords(), a.getValue());
  // PTX pads 3D and a2d coordinates to four.
  std::string coords;
  unsigned n = args.size() - 2;
  for (unsigned i = 0; i < n; ++i)
    coords += (i ? ", $" : "$") + std::to_string(i + 1);
  if (n == 3)
    coords += ", $" + std::to_string(n);
  std::string text = ("sured.b." + kind + "." + ptxGeometry(op.getGeometry()) +
                      "." + stringifyScalarType(op.getType()) + "." +
                      stringifySurfClamp(op.getClamp()) + " [$0, {" + coords +
                      "}], $" + Twine(n + 1) + ";")
                         .str();
  std::string constraints = "l";
  for (unsigned i = 0; i < n; ++i)
    constraints += ",r";
  constraints += surfaceElementBits(op.getType()) == 64 ? ",l" : ",r";
  LLVM::InlineAsmOp::create(rw, e.loc, TypeRange{}, args, text, constraints,
                            /*has_side_effects=*/true, /*is_align_stack=*/false,
                            LLVM::TailCallKind::None, LLVM::AsmDialectAttr(),
                            ArrayAttr());
  rw.eraseOp(op);
  return success();
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

/// Lowers the helpers of `wooly-expand-arith` that have an exact NVPTX
/// counterpart on `sm` other than a single intrinsic call with the helper's
/// own signature (16- and 8-bit floats passed as the low bits of an i32).
/// Returns null when there is none.
Value lowerNarrowHelper(Emitter &e, StringRef helper, ValueRange args,
                        unsigned sm) {
  OpBuilder &b = e.rw;
  // fma.rn.f16 (sm_53) / fma.rn.bf16 (sm_80): one rounding, as the helper.
  bool f16 = helper == "__wooly_fma_rn_f16",
       bf16 = helper == "__wooly_fma_rn_bf16";
  if ((f16 && sm >= 53) || (bf16 && sm >= 80)) {
    Type ft = f16 ? Type(b.getF16Type()) : Type(b.getBF16Type());
    SmallVector<Value, 3> xs;
    for (Value a : args)
      xs.push_back(narrowHelperArg(e, a, ft));
    Value r = e.intrinsic(f16 ? "llvm.fma.f16" : "llvm.fma.bf16", ft, xs);
    return helperBits(e, r, isNaNOf(e, r), 0x7fff);
  }
  // cvt.rn.bf16.f64 (sm_90); cvt.rn.bf16.f32 (sm_80) when widened from f32,
  // else through f32 rounded to odd.
  if (helper == "__wooly_cvt_f64_bf16_rn" && sm >= 80) {
    Value x = args[0];
    if (auto ext = x.getDefiningOp<arith::ExtFOp>();
        ext && ext.getIn().getType().isF32())
      x = ext.getIn();
    if (x.getType().isF32() || sm >= 90) {
      Value r = LLVM::FPTruncOp::create(b, e.loc, b.getBF16Type(), x);
      return helperBits(e, r, isNaNOf(e, x), 0x7fff);
    }
    return f64ToHalf(e, x, b.getBF16Type());
  }
  if (helper == "__wooly_cvt_f64_f16_rn")
    return f64ToHalf(e, args[0], b.getF16Type());
  // cvt.{rz,rm,rp}.{bf16,f16}.{f32,f64}.
  if (Value r = lowerDirectedHalfHelper(e, helper, args[0]))
    return r;
  // cvt.rn.satfinite.{e4m3,e5m2}x2.f32 (sm_89) of an f32 (or exactly
  // widened f16): the second operand goes to the low byte.
  bool e4 = helper == "__wooly_cvt_f64_e4m3_rn_satfinite",
       e5 = helper == "__wooly_cvt_f64_e5m2_rn_satfinite";
  if (e4 || e5) {
    Value x = narrowSource(e, args[0]);
    if (!x)
      return {};
    // Before sm_89: the same rounding in integer arithmetic.
    if (sm < 89)
      return f32ToFp8(e, x, e4 ? kE4M3 : kE5M2);
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
  if ((e4 || e5) && sm < 89)
    return fp8ToF16(e, args[0], e4);
  if (e4 || e5) {
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

//===----------------------------------------------------------------------===//
// Hopper: mbarriers, bulk copies, fences, griddepcontrol, elect, stmatrix
//===----------------------------------------------------------------------===//

/// A shared-space address as the 32-bit register PTX takes.
static Value sharedReg(Emitter &e, Value addr) {
  return e.intCast(addr, e.i32());
}

/// `.sem.scope` as written in PTX (empty when absent).
static std::string semScope(std::optional<MemOrder> sem,
                            std::optional<MemScope> scope) {
  std::string s;
  if (sem)
    s += "." + stringifyMemOrder(*sem).str();
  if (scope)
    s += "." + stringifyMemScope(*scope).str();
  return s;
}

/// Whether `v` is the integer constant `c`.
static bool isConstInt(Value v, int64_t c) {
  APInt x;
  return matchPattern(v, m_ConstantInt(&x)) && x.getSExtValue() == c;
}

LogicalResult NVVMTargetInfo::lower(MbarrierInitOp op,
                                    MbarrierInitOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  inlinePtx(e, {}, {sharedReg(e, adaptor.getAddr()), adaptor.getCount()},
            "mbarrier.init.shared.b64 [$0], $1;", "r,r");
  rw.eraseOp(op);
  return success();
}

LogicalResult NVVMTargetInfo::lower(MbarrierInvalOp op,
                                    MbarrierInvalOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  inlinePtx(e, {}, {sharedReg(e, adaptor.getAddr())},
            "mbarrier.inval.shared.b64 [$0];", "r");
  rw.eraseOp(op);
  return success();
}

/// arrive (with `.expect_tx` or a count), arrive_drop, expect_tx and
/// complete_tx as the instruction they came from; a remote
/// (shared::cluster) arrive has no state (its result is 0).
LogicalResult NVVMTargetInfo::lower(MbarrierUpdateOp op,
                                    MbarrierUpdateOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  std::string ss = semScope(op.getSem(), op.getScope());
  bool remote = op.getSpace() == StateSpace::shared_cluster;
  std::string space = remote ? ".shared::cluster" : ".shared";
  Value addr = sharedReg(e, adaptor.getAddr());
  MbarrierUpdate kind = op.getKind();
  if (kind == MbarrierUpdate::cp_async_arrive ||
      kind == MbarrierUpdate::cp_async_arrive_noinc) {
    bool noinc = kind == MbarrierUpdate::cp_async_arrive_noinc;
    inlinePtx(e, {}, {addr},
              Twine("cp.async.mbarrier.arrive") + (noinc ? ".noinc" : "") +
                  ".shared.b64 [$0];",
              "r");
    rw.replaceOp(op, e.c64(0));
    return success();
  }
  if (kind == MbarrierUpdate::expect_tx ||
      kind == MbarrierUpdate::complete_tx) {
    inlinePtx(e, {}, {addr, adaptor.getTx()},
              "mbarrier." + stringifyMbarrierUpdate(kind) + ss + space +
                  ".b64 [$0], $1;",
              "r,r");
    rw.replaceOp(op, e.c64(0));
    return success();
  }
  bool drop = kind == MbarrierUpdate::arrive_drop;
  bool tx = !isConstInt(op.getTx(), 0);
  bool count = !isConstInt(op.getCount(), 1);
  std::string name = drop ? "mbarrier.arrive_drop" : "mbarrier.arrive";
  std::string dst = remote ? "_" : "$0";
  SmallVector<Value> operands{addr};
  std::string ptx, constraints = remote ? "" : "=l,";
  unsigned next = remote ? 0 : 1;
  auto arg = [&](Value v) {
    operands.push_back(v);
    constraints += ",r";
    return "$" + std::to_string(next + operands.size() - 1);
  };
  constraints += "r";
  std::string a = "[$" + std::to_string(next) + "]";
  if (tx && count) {
    // Both: the expect-tx, then the counted arrive.
    std::string t = arg(adaptor.getTx()), c = arg(adaptor.getCount());
    ptx = "mbarrier.expect_tx.relaxed" +
          std::string(op.getScope()
                          ? "." + stringifyMemScope(*op.getScope()).str()
                          : ".cta") +
          space + ".b64 " + a + ", " + t + ";\n\t" + name + ss + space +
          ".b64 " + dst + ", " + a + ", " + c + ";";
  } else if (tx) {
    ptx = name + ".expect_tx" + ss + space + ".b64 " + dst + ", " + a + ", " +
          arg(adaptor.getTx()) + ";";
  } else if (count) {
    ptx = name + ss + space + ".b64 " + dst + ", " + a + ", " +
          arg(adaptor.getCount()) + ";";
  } else {
    ptx = name + ss + space + ".b64 " + dst + ", " + a + ";";
  }
  Value state = inlinePtx(e, remote ? TypeRange{} : TypeRange{e.i64()},
                          operands, ptx, constraints);
  rw.replaceOp(op, remote ? e.c64(0) : state);
  return success();
}

LogicalResult NVVMTargetInfo::lower(MbarrierWaitOp op,
                                    MbarrierWaitOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  bool parity = op.getParity();
  std::string ptx = std::string("{\n\t.reg .pred p;\n\tmbarrier.") +
                    (op.getBlocking() ? "try_wait" : "test_wait") +
                    (parity ? ".parity" : "") +
                    semScope(op.getSem(), op.getScope()) +
                    ".shared.b64 p, [$1], $2;\n\tselp.u32 $0, 1, 0, p;\n\t}";
  Value r = inlinePtx(e, {e.i32()},
                      {sharedReg(e, adaptor.getAddr()), adaptor.getPhase()},
                      ptx, parity ? "=r,r,r" : "=r,r,l");
  rw.replaceOp(op, LLVM::ICmpOp::create(rw, e.loc, LLVM::ICmpPredicate::ne, r,
                                        e.c32(0)));
  return success();
}

LogicalResult NVVMTargetInfo::lower(MbarrierPendingCountOp op,
                                    MbarrierPendingCountOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  rw.replaceOp(op, inlinePtx(e, {e.i32()}, {adaptor.getState()},
                             "mbarrier.pending_count.b64 $0, $1;", "=r,l",
                             /*sideEffects=*/false));
  return success();
}

/// The reduction suffix of `cp.reduce.async.bulk` (`.add.noftz.f16`).
static std::string bulkReduction(AtomicOp op, ScalarType type) {
  std::string name;
  switch (op) {
  case AtomicOp::add:
  case AtomicOp::fadd:
    name = "add";
    break;
  case AtomicOp::umin:
  case AtomicOp::smin:
  case AtomicOp::fmin:
    name = "min";
    break;
  case AtomicOp::umax:
  case AtomicOp::smax:
  case AtomicOp::fmax:
    name = "max";
    break;
  default:
    name = stringifyAtomicOp(op).str();
    break;
  }
  if (op == AtomicOp::fadd &&
      (type == ScalarType::f16 || type == ScalarType::bf16))
    name += ".noftz";
  return "." + name + "." + stringifyScalarType(type).str();
}

LogicalResult NVVMTargetInfo::lower(BulkCopyOp op, BulkCopyOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  bool toGlobal = op.getDstSpace() == StateSpace::global;
  bool fromGlobal = op.getSrcSpace() == StateSpace::global;
  std::string red;
  if (op.getRedop())
    red = bulkReduction(*op.getRedop(), *op.getRedType());
  std::string ptx = op.getRedop() ? "cp.reduce.async.bulk" : "cp.async.bulk";
  SmallVector<Value> operands;
  std::string constraints;
  if (toGlobal) {
    ptx += ".global.shared::cta.bulk_group" + red + " [$0], [$1], $2;";
    operands = {adaptor.getDst(), sharedReg(e, adaptor.getSrc()),
                adaptor.getSize()};
    constraints = "l,r,r";
  } else {
    // A shared::cta address of the CTA is one of its shared::cluster ones.
    ptx += std::string(".shared::cluster") +
           (fromGlobal ? ".global" : ".shared::cta") +
           ".mbarrier::complete_tx::bytes" + red + " [$0], [$1], $2, [$3];";
    operands = {sharedReg(e, adaptor.getDst()),
                fromGlobal ? adaptor.getSrc() : sharedReg(e, adaptor.getSrc()),
                adaptor.getSize(), sharedReg(e, adaptor.getMbar())};
    constraints = fromGlobal ? "r,l,r,r" : "r,r,r,r";
  }
  inlinePtx(e, {}, operands, ptx, constraints);
  rw.eraseOp(op);
  return success();
}

LogicalResult NVVMTargetInfo::lower(BulkCommitOp op, BulkCommitOp::Adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  inlinePtx(e, {}, {}, "cp.async.bulk.commit_group;", "");
  rw.eraseOp(op);
  return success();
}

LogicalResult NVVMTargetInfo::lower(BulkWaitOp op, BulkWaitOp::Adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  inlinePtx(e, {}, {},
            "cp.async.bulk.wait_group" + Twine(op.getRead() ? ".read " : " ") +
                Twine(op.getPending()) + ";",
            "");
  rw.eraseOp(op);
  return success();
}

LogicalResult NVVMTargetInfo::lower(AsyncFenceOp op, AsyncFenceOp::Adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  inlinePtx(e, {}, {}, op.getFence() + ";", "");
  rw.eraseOp(op);
  return success();
}

LogicalResult NVVMTargetInfo::lower(GridDepControlOp op,
                                    GridDepControlOp::Adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  inlinePtx(e, {}, {}, "griddepcontrol." + op.getKind() + ";", "");
  rw.eraseOp(op);
  return success();
}

LogicalResult NVVMTargetInfo::lower(ElectOp op, ElectOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  Value r = inlinePtx(e, {e.i32(), e.i32()}, {adaptor.getMask()},
                      "{\n\t.reg .pred p;\n\telect.sync $0|p, $2;\n\t"
                      "selp.u32 $1, 1, 0, p;\n\t}",
                      "=r,=r,r");
  Value leader = LLVM::ExtractValueOp::create(rw, e.loc, r, 0);
  Value is = LLVM::ExtractValueOp::create(rw, e.loc, r, 1);
  rw.replaceOp(op,
               {leader, LLVM::ICmpOp::create(rw, e.loc, LLVM::ICmpPredicate::ne,
                                             is, e.c32(0))});
  return success();
}

LogicalResult NVVMTargetInfo::lower(StMatrixOp op, StMatrixOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  size_t n = adaptor.getValues().size();
  std::string regs, constraints = "r";
  SmallVector<Value> operands{sharedReg(e, adaptor.getAddr())};
  for (size_t i = 0; i < n; ++i) {
    regs += (i ? ", $" : "$") + std::to_string(i + 1);
    constraints += ",r";
    operands.push_back(adaptor.getValues()[i]);
  }
  inlinePtx(e, {}, operands,
            "stmatrix.sync.aligned.m8n8.x" + Twine(n) +
                (op.getTrans() ? ".trans" : "") + ".shared.b16 [$0], {" + regs +
                "};",
            constraints);
  rw.eraseOp(op);
  return success();
}

//===----------------------------------------------------------------------===//
// Before the conversion: checks, `.approx` math, helpers
//===----------------------------------------------------------------------===//

/// Rejects, with a located error, what NVPTX has no faithful lowering of.
/// The PTX instruction that `op` lowers to on NVPTX and the first `sm_XX`
/// that has it, for the instructions that not every GPU Wooly compiles for
/// (sm_75 and later) has and that the lowering does not rebuild from older
/// ones (clusters are rebuilt before sm_90: a block is a cluster of one
/// CTA); {"", 0} for the others.
static std::pair<StringRef, unsigned> firstGPUWith(Operation *op) {
  if (isa<CpAsyncOp, CpAsyncCommitOp, CpAsyncWaitOp>(op))
    return {"cp.async", 80};
  // mbarrier is sm_80's; its transaction counts, counted arrives, memory
  // orders and try_wait are sm_90's.
  if (isa<MbarrierInitOp, MbarrierInvalOp, MbarrierPendingCountOp>(op))
    return {"mbarrier", 80};
  if (auto u = dyn_cast<MbarrierUpdateOp>(op)) {
    APInt one, zero;
    if (u.getKind() == MbarrierUpdate::cp_async_arrive ||
        u.getKind() == MbarrierUpdate::cp_async_arrive_noinc)
      return {"cp.async.mbarrier.arrive", 80};
    if (u.getKind() == MbarrierUpdate::expect_tx)
      return {"mbarrier.expect_tx", 90};
    if (u.getKind() == MbarrierUpdate::complete_tx)
      return {"mbarrier.complete_tx", 90};
    if (!matchPattern(u.getTx(), m_ConstantInt(&zero)) || zero != 0)
      return {"mbarrier.arrive.expect_tx", 90};
    if (!matchPattern(u.getCount(), m_ConstantInt(&one)) || one != 1)
      return {"mbarrier.arrive with a count", 90};
    if (u.getSem() || u.getScope() || u.getSpace() != StateSpace::shared)
      return {"mbarrier.arrive with a memory order, scope or "
              "shared::cluster address",
              90};
    return {"mbarrier.arrive", 80};
  }
  if (auto w = dyn_cast<MbarrierWaitOp>(op))
    return w.getBlocking() || w.getSem() || w.getScope()
               ? std::pair<StringRef, unsigned>{"mbarrier.try_wait", 90}
               : std::pair<StringRef, unsigned>{"mbarrier.test_wait", 80};
  if (isa<BulkCopyOp, BulkCommitOp, BulkWaitOp>(op))
    return {"cp.async.bulk", 90};
  if (auto f = dyn_cast<AsyncFenceOp>(op))
    return {f.getFence(), 90};
  if (isa<GridDepControlOp>(op))
    return {"griddepcontrol", 90};
  if (isa<ElectOp>(op))
    return {"elect.sync", 90};
  if (isa<StMatrixOp>(op))
    return {"stmatrix", 90};
  if (isa<ReduxOp>(op))
    return {"redux.sync", 80};
  // Every mma.sync shape the lowering takes (m16n8k16 f16/bf16, m16n8k32
  // s8) is sm_80's.
  if (auto m = dyn_cast<MmaOp>(op)) {
    // f64 beyond m8n8k4 is sm_90's.
    if (m.getAType() == ScalarType::f64 && m.getShape() != "m8n8k4")
      return {"mma.sync .f64 m16n8kK", 90};
    // fp8 inputs are sm_89's.
    if (m.getAType() == ScalarType::e4m3 || m.getAType() == ScalarType::e5m2)
      return {"mma.sync .e4m3/.e5m2", 89};
    return {"mma.sync", 80};
  }
  return {"", 0};
}

LogicalResult NVVMTargetInfo::checkOp(Operation *op) const {
  auto fail = [&](const Twine &what) {
    if (what.isTriviallyEmpty())
      op->emitOpError() << StringRef(kNotSupported).ltrim();
    else
      op->emitOpError() << what << kNotSupported;
    return failure();
  };
  // PTX written for a newer GPU (e.g. `.target sm_120`) is lowered for the
  // chip asked for when it uses nothing that chip lacks.
  if (auto [inst, first] = firstGPUWith(op); sm < first) {
    op->emitError() << "'" << inst << "' needs sm_" << first
                    << " or later; compiling for " << chip;
    return failure();
  }
  if (auto f = dyn_cast<FuncOp>(op); f && f.getKernel()) {
    // PTX ISA 8.1 (what sm_70 and later get) takes 32,764 bytes of kernel
    // parameters, 4,352 before; parameters that the sharing passes append
    // count too.
    std::vector<uint64_t> offsets, sizes;
    kernelParamLayout(f, offsets, sizes);
    uint64_t bytes = 0;
    for (size_t i = 0; i < offsets.size(); ++i)
      bytes = std::max(bytes, offsets[i] + sizes[i]);
    uint64_t limit = sm >= 70 ? 32764 : 4352;
    if (bytes > limit) {
      op->emitError() << "kernel '" << f.getSymName()
                      << "' cannot be lowered for a GPU: its parameters take "
                      << bytes << " bytes, more than the " << limit << " that "
                      << chip << " allows";
      return failure();
    }
  }
  // Matrix shapes and types without an NVVM intrinsic are the
  // instruction itself (ptxas checks it for the chip).
  if (auto l = dyn_cast<WmmaLoadOp>(op); l && l.getRole() == MatrixRole::d)
    return fail("wmma.load.d");
  if (auto l = dyn_cast<WmmaLoadOp>(op);
      l && l.getSpace() != StateSpace::global &&
      l.getSpace() != StateSpace::shared && l.getSpace() != StateSpace::generic)
    return fail("wmma.load from ." + stringifyStateSpace(l.getSpace()));
  if (auto s = dyn_cast<WmmaStoreOp>(op);
      s && s.getSpace() != StateSpace::global &&
      s.getSpace() != StateSpace::shared && s.getSpace() != StateSpace::generic)
    return fail("wmma.store to ." + stringifyStateSpace(s.getSpace()));
  if (std::string why = textureRefusal(op); !why.empty())
    return fail(why);
  if (auto r = dyn_cast<ReduxOp>(op); r && !reduxKind(r.getOp()))
    return fail("redux.sync." + stringifyReduxKind(r.getOp()));
  if (auto c = dyn_cast<CpAsyncOp>(op)) {
    bool cg = c.getCache() && *c.getCache() == CacheOp::cg;
    if (c.getCache() && !cg && *c.getCache() != CacheOp::ca)
      return fail("cp.async." + stringifyCacheOp(*c.getCache()));
    if (cg && c.getSize() != 16)
      return fail("cp.async.cg of " + Twine(c.getSize()) + " bytes");
    if (c.getSize() != 4 && c.getSize() != 8 && c.getSize() != 16)
      return fail("cp.async of " + Twine(c.getSize()) + " bytes");
  }
  if (auto l = dyn_cast<LdMatrixOp>(op); l && l.getNumResults() != 1 &&
                                         l.getNumResults() != 2 &&
                                         l.getNumResults() != 4)
    return fail("ldmatrix of " + Twine(l.getNumResults()) + " matrices");
  return success();
}

/// The NVVM approximation of an `.approx` math op (the GPU's own results).
FailureOr<Value> NVVMTargetInfo::approxMath(Emitter &e, Operation *op) const {
  OpBuilder &b = e.rw;
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
  if (name.empty() && !tanh)
    return op->emitOpError("on ") << elem << kNotSupported;
  return mapScalars(e, in, [&](Value x) -> Value {
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
}

/// div.approx/div.full/rcp.approx/sqrt.approx as the GPU's own instruction
/// (NVVM's intrinsic; inline PTX for rcp.approx.f32 without ftz, which has
/// none), so that the results are the bits nvcc's code gets. Scalars only.
Value NVVMTargetInfo::approxArith(Emitter &e, Operation *op,
                                  StringRef form) const {
  Type t = op->getResult(0).getType();
  if (!t.isF32() && !t.isF64())
    return {};
  bool f64 = t.isF64();
  SmallVector<Value> args(op->getOperands());
  StringRef name = llvm::StringSwitch<StringRef>(f64 ? "" : form)
                       .Case("div.approx", "llvm.nvvm.div.approx.f")
                       .Case("div.approx.ftz", "llvm.nvvm.div.approx.ftz.f")
                       .Case("div.full", "llvm.nvvm.div.full")
                       .Case("div.full.ftz", "llvm.nvvm.div.full.ftz")
                       .Case("sqrt.approx", "llvm.nvvm.sqrt.approx.f")
                       .Case("sqrt.approx.ftz", "llvm.nvvm.sqrt.approx.ftz.f")
                       .Case("rcp.approx.ftz", "llvm.nvvm.rcp.approx.ftz.f")
                       .Default("");
  if (f64 && form == "rcp.approx.ftz")
    name = "llvm.nvvm.rcp.approx.ftz.d";
  bool rcp = form.starts_with("rcp.");
  if (rcp)
    args.erase(args.begin()); // 1.0 / x: the divisor.
  if (!name.empty())
    return e.intrinsic(name, t, args);
  if (form == "rcp.approx" && !f64)
    return LLVM::InlineAsmOp::create(
               e.rw, e.loc, t, ValueRange{args[0]}, "rcp.approx.f32 $0, $1;",
               "=f,f", /*has_side_effects=*/false, /*is_align_stack=*/false,
               LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
        .getResult(0);
  return {};
}

/// A `__wooly_*` helper as the NVVM intrinsic(s) with its exact semantics.
FailureOr<Value> NVVMTargetInfo::helperCall(Emitter &e, func::CallOp c) const {
  if (Value r = lowerNarrowHelper(e, c.getCallee(), c.getOperands(), sm))
    return r;
  std::string name = helperIntrinsic(c.getCallee());
  if (name.empty())
    return c.emitError("helper '") << c.getCallee() << "'" << kNotSupported;
  SmallVector<Value> args(c.getOperands());
  Type rt = c.getResult(0).getType();
  if (StringRef(name).starts_with("llvm.nvvm.sub.")) {
    // a - b rounds as a + (-b) (negation is exact).
    args[1] = LLVM::FNegOp::create(e.rw, e.loc, args[1]);
    name = "llvm.nvvm.add." + name.substr(strlen("llvm.nvvm.sub."));
  }
  return e.intrinsic(name, rt, args);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertWoolyToNVVMPass
    : wooly::impl::ConvertWoolyToNVVMBase<ConvertWoolyToNVVMPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto lowering = prepareWoolyToNVVMLowering(module, chip);
    if (failed(lowering) || failed(applyLowering(module, **lowering)))
      return signalPassFailure();
  }
};

} // namespace

FailureOr<std::unique_ptr<WoolyLLVMLowering>>
mlir::wooly::prepareWoolyToNVVMLowering(ModuleOp module, StringRef chip) {
  StringRef sm = chip;
  unsigned smVersion = 0;
  if (!sm.consume_front("sm_") || sm.getAsInteger(10, smVersion)) {
    module.emitError("convert-wooly-to-nvvm: bad chip '")
        << chip << "' (sm_XX)";
    return failure();
  }
  return prepareGPULowering(module,
                            std::make_unique<NVVMTargetInfo>(chip, smVersion));
}

void mlir::wooly::populateWoolyToNVVMConversionPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns,
    WoolyLLVMLowering &lowering) {
  lowering.populatePatterns(converter, patterns);
}
