//===- WoolyToROCDL.cpp - Lower Wooly IR to LLVM + ROCDL --------*- C++ -*-===//
//
// `convert-wooly-to-rocdl`: lowers Wooly kernels (after `wooly-expand-arith`)
// to the LLVM and ROCDL dialects with PTX's semantics, for LLVM's AMDGPU
// backend (gfx90a, gfx942). The lowering itself is shared with the other
// targets (`lib/Conversion/WoolyCommon/LLVMLowering.h`, and GPULowering.h for
// what GPUs share); this file is the AMD `GPUTargetInfo`, the pass and the
// exported prepare/populate functions. The output is a builtin module of
// `llvm.func`s; kernels carry `rocdl.kernel` (the `amdgpu_kernel` calling
// convention) and take their parameters by value in the kernarg segment.
//
// Memory: address spaces are AMDGPU's: flat (generic) 0, global 1, LDS
// (shared) 3, constant 4, private (local) 5; allocas live in 5. PTX scopes
// become AMDGPU `syncscope`s: cta "workgroup", gpu (the default) and
// cluster "agent" (gfx9 has no clusters; agent is the next wider scope),
// sys "" (system). `shared::cluster` has no AMD equivalent (located error).
// `isspacep.shared/local` are `llvm.amdgcn.is.shared/private`;
// `isspacep.global` is "neither", which is also true of a `.const`
// variable's generic address (constant memory is global memory on AMD).
//
// Threads and warps: gfx90a/gfx942 waves have 64 lanes and a PTX warp has
// 32 threads, so a PTX warp is one half of a wave. With `lane` the lane in
// the wave (`mbcnt`), `%laneid` is `lane & 31` and `%warpid` is the flat
// thread id in the block divided by 32 (a workgroup's threads fill waves in
// flat order, so this is the half of the wave the thread is in).
//  - `shfl.sync` computes the source lane with PTX's rules exactly (`c`
//    holds the clamp value in bits 0-4 and the segment mask in bits 8-12;
//    an out-of-range source reads the thread's own value and clears the
//    predicate) within the thread's 32-lane half, then reads it with
//    `ds_bpermute` at (half | source lane) * 4.
//  - `vote.sync` takes the thread's 32-bit half of the 64-bit `ballot`
//    (ANDed with the member mask): `ballot` is that, `any` is "non-zero",
//    `all` is "no member with a false predicate", `uni` is "all or none".
//    `activemask` is the half of `ballot(true)`.
//  - `bar.warp.sync` is a wave-level no-op plus a wavefront fence: the
//    lanes of a wave execute in lockstep under one program counter, so the
//    threads of a half-wave are always converged when they execute it, and
//    memory operations of one wave are ordered for its own lanes (the
//    wavefront-scope fence emits no instruction; it only keeps the compiler
//    from moving memory operations across the sync point).
//  - `redux.sync` and `match.sync` read each of the 32 lanes of the half
//    with `readlane` (constant lane numbers, so no divergence issue) and
//    fold the members' values (members: active threads in the mask).
// Special registers: `%tid`/`%ctaid` are `workitem.id`/`workgroup.id`;
// `%ntid` and `%nctaid` come from the HSA dispatch packet (workgroup size
// and grid size in threads, rounded up), so no device library is needed.
// `%clock`/`%clock64` are `s_memtime`; `%globaltimer` is `s_memrealtime`
// (100 MHz on gfx9) scaled to nanoseconds. `%total_smem_size` is the
// packet's group_segment_size (static + dynamic LDS), `%dynamic_smem_size`
// that minus `llvm.amdgcn.groupstaticsize`. Cluster registers have the
// values of a launch without clusters (every AMD launch: each block is its
// own one-block cluster). `%smid`, `%nsmid`, `%nwarpid` and `%gridid` are
// located errors.
//
// Synchronisation: `bar.sync a` / `barrier.sync a` without a thread count
// is `s_barrier` between workgroup-scope release and acquire fences (what
// upstream's `gpu.barrier` lowering emits), whatever the barrier number:
// when every barrier waits for all the CTA's threads, the threads of a
// program that does not deadlock pass the same sequence of barriers, so
// one hardware barrier serves for all sixteen. A non-aligned
// `barrier.sync` whose threads would arrive at different instructions
// within one wave is not modelled (AMD's barrier counts waves, not
// threads). `bar.red.{popc,and,or}` counts predicates in an LDS word
// between three such barriers. Thread counts and `bar.arrive` (producer/
// consumer barriers) have no gfx9 equivalent: located errors. `exit` in a
// kernel returns from it (the thread stops; a wave that finishes no longer
// takes part in `s_barrier`); in a called function it is a located error.
// `nanosleep` is `s_sleep 1` (PTX allows any duration in [0, 2t]).
//
// Arithmetic: `.approx` sin/cos are `llvm.amdgcn.sin/cos` of the input in
// revolutions (x / 2pi, reduced with `fract` as gfx9's range needs);
// `ex2`, `lg2` and `rsqrt` stay `llvm.exp2/log2` and `1/sqrt`, which the
// AMDGPU backend lowers to v_exp/v_log/v_rsq with denormal handling, at
// least as accurate as PTX's approximations; `tanh.approx` calls the ROCm
// device library (`__ocml_tanh_f32/f16`, declared here; the compile side
// links ocml or reports the `__ocml_*` functions a module needs).
// Directed rounding (`__wooly_{fadd,fsub,fmul,fma}_{rz,rm,rp}_{f32,f64}`)
// runs the one correctly rounded instruction under a temporarily changed
// MODE.FP_ROUND, inside a single inline-asm block so that nothing can be
// scheduled between the mode switches (`llvm.set.rounding` around a plain
// `fadd` would not pin the `fadd` there: without strictfp and constrained
// FP ops, which MLIR's LLVM dialect lacks, LLVM may move or CSE it).
// `__wooly_fma_rn_f16` is `llvm.fma.f16` (v_fma_f16 rounds once);
// `__wooly_fma_rn_bf16` (no bf16 fma on gfx9) rounds the f32 fma to odd
// (with the rounding-mode fmas) and then to bf16, which is exact;
// `cvt.rn.bf16.f64` of a widened f32 is one `fptrunc`. The OCP fp8
// conversions of PTX are done in integer arithmetic (gfx942's own fp8
// instructions use the FNUZ formats): e4m3/e5m2 to f16 is exact, f32 to
// e4m3/e5m2 (`.rn.satfinite`) rounds the significand to nearest even.
// Directed f32 division, reciprocal and square root, `cvt.{rz,rm,rp}.f32.f64`
// and directed s64/u64 to f32/f64 go through f64 (see directedViaF64). The
// other helpers (directed f64 division, reciprocal and square root, which
// have no wider format to go through; directed f16 fma) are located
// errors.
//
// Not lowered (located errors, never a silent miscompile): `ldmatrix`,
// `mma.sync` and `wmma` ("has no AMD equivalent yet"), calls of external
// functions such as `vprintf` (no device library is linked) and external
// variables other than dynamic shared memory (modules are not linked), the
// shared refusals of GPULowering. CUDA's `__assertfail` (a failed
// `assert`) traps: the kernel aborts as on NVIDIA, without the message.
// `cp.async` is a synchronous copy (zero filled beyond `src-size`); its commit
// and wait are no-ops, which is correct because the copy is complete when
// `cp.async` returns.
//
//===----------------------------------------------------------------------===//

#include "../WoolyCommon/GPULowering.h"
#include "Wooly/Conversion/Passes.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::wooly {
#define GEN_PASS_DEF_CONVERTWOOLYTOROCDL
#include "Wooly/Conversion/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::common;
using namespace mlir::wooly::gpu;

namespace {

/// The tail of refusals of what a later version may lower.
constexpr StringLiteral kNotSupported = " is not supported yet on amdgcn";
/// The message of refusals of what AMD GPUs have no counterpart of.
constexpr StringLiteral kNoEquivalent = "has no AMD equivalent yet";

/// The AMDGPU target (gfx90a, gfx942): LLVM + ROCDL, 64-lane waves.
class ROCDLTargetInfo : public GPUTargetInfo {
public:
  /// The target for `chip` (gfx90a or gfx942).
  explicit ROCDLTargetInfo(StringRef chip) : chip(chip) {}

  StringRef name() const override { return "amdgcn"; }
  void addLegalDialects(ConversionTarget &target) const override {
    target.addLegalDialect<ROCDL::ROCDLDialect>();
  }
  LogicalResult checkOp(Operation *op) const override;
  void finalizeModule(ModuleOp module) const override;
  unsigned allocaAddressSpace() const override { return 5; }
  StringRef syncScope(std::optional<MemScope> scope) const override;
  FailureOr<Value> approxMath(Emitter &e, Operation *op) const override;
  FailureOr<Value> helperCall(Emitter &e, func::CallOp call) const override;
  void markKernel(OpBuilder &b, LLVM::LLVMFuncOp fn, FuncOp op) const override;

  WOOLY_LOWER_OVERRIDE(ExitOp)
  WOOLY_LOWER_OVERRIDE(BrkptOp)
  WOOLY_LOWER_OVERRIDE(IsSpacePOp)
  WOOLY_LOWER_OVERRIDE(SRegOp)
  WOOLY_LOWER_OVERRIDE(BarrierOp)
  WOOLY_LOWER_OVERRIDE(BarRedOp)
  WOOLY_LOWER_OVERRIDE(WarpSyncOp)
  WOOLY_LOWER_OVERRIDE(ActiveMaskOp)
  WOOLY_LOWER_OVERRIDE(NanosleepOp)
  WOOLY_LOWER_OVERRIDE(ShflOp)
  WOOLY_LOWER_OVERRIDE(VoteOp)
  WOOLY_LOWER_OVERRIDE(ReduxOp)
  WOOLY_LOWER_OVERRIDE(MatchOp)
  WOOLY_LOWER_OVERRIDE(CpAsyncOp)
  WOOLY_LOWER_OVERRIDE(CpAsyncCommitOp)
  WOOLY_LOWER_OVERRIDE(CpAsyncWaitOp)
  // ldmatrix, mma and wmma: refused by `checkOp`.

private:
  /// gfx90a or gfx942.
  std::string chip;
};

//===----------------------------------------------------------------------===//
// Waves, lanes and the dispatch packet
//===----------------------------------------------------------------------===//

/// The thread's lane in its 64-lane wave (`mbcnt.hi(~0, mbcnt.lo(~0, 0))`).
Value waveLane(Emitter &e) {
  Value ones = e.c32(~0u);
  Value lo = e.namedOp("rocdl.mbcnt.lo", e.i32(), {ones, e.c32(0)});
  return e.namedOp("rocdl.mbcnt.hi", e.i32(), {ones, lo});
}

/// The first lane of the thread's PTX warp in the wave: 0 or 32.
Value halfBase(Emitter &e) {
  return LLVM::AndOp::create(e.rw, e.loc, waveLane(e), e.c32(32));
}

/// `%laneid`: the lane within the 32-lane half.
Value ptxLane(Emitter &e) {
  return LLVM::AndOp::create(e.rw, e.loc, waveLane(e), e.c32(31));
}

/// The thread's 32-bit half of a 64-bit wave mask.
Value halfOfMask(Emitter &e, Value mask64) {
  Value shift = LLVM::ZExtOp::create(e.rw, e.loc, e.i64(), halfBase(e));
  Value m = LLVM::LShrOp::create(e.rw, e.loc, mask64, shift);
  return LLVM::TruncOp::create(e.rw, e.loc, e.i32(), m);
}

/// The half of `ballot(pred)` that belongs to the thread's PTX warp.
Value halfBallot(Emitter &e, Value pred) {
  return halfOfMask(e, e.namedOp("rocdl.ballot", e.i64(), {pred}));
}

/// The active threads of the thread's PTX warp that are in `mask`.
Value activeMembers(Emitter &e, Value mask) {
  Value active = halfBallot(e, e.cst(e.rw.getI1Type(), 1));
  return LLVM::AndOp::create(e.rw, e.loc, active, mask);
}

/// `dim` (0-2) of `%tid` or `%ctaid`.
Value workItemOrGroupId(Emitter &e, bool group, unsigned dim) {
  static const char *const items[] = {
      "rocdl.workitem.id.x", "rocdl.workitem.id.y", "rocdl.workitem.id.z"};
  static const char *const groups[] = {
      "rocdl.workgroup.id.x", "rocdl.workgroup.id.y", "rocdl.workgroup.id.z"};
  return e.namedOp(group ? groups[dim] : items[dim], e.i32());
}

/// An unsigned field of the HSA kernel dispatch packet at `offset`.
Value dispatchField(Emitter &e, unsigned offset, Type t) {
  Value packet = e.intrinsic("llvm.amdgcn.dispatch.ptr", e.ptr(4), {});
  Value p = LLVM::GEPOp::create(e.rw, e.loc, e.ptr(4), e.rw.getI8Type(), packet,
                                ArrayRef<LLVM::GEPArg>{int32_t(offset)});
  unsigned bytes = t.getIntOrFloatBitWidth() / 8;
  Value v = LLVM::LoadOp::create(e.rw, e.loc, t, p, bytes,
                                 /*isVolatile=*/false,
                                 /*isNonTemporal=*/false, /*isInvariant=*/true);
  return e.intCast(v, e.i32());
}

/// `%ntid` along `dim`: `workgroup_size_{x,y,z}` (u16 at 4, 6, 8; the
/// packet is `hsa_kernel_dispatch_packet_t`).
Value blockDim(Emitter &e, unsigned dim) {
  return dispatchField(e, 4 + 2 * dim, e.rw.getI16Type());
}

/// `%nctaid` along `dim`: `grid_size_{x,y,z}` (u32 at 12, 16, 20, in
/// threads) divided by the block size, rounded up.
Value gridDim(Emitter &e, unsigned dim) {
  Value threads = dispatchField(e, 12 + 4 * dim, e.i32());
  Value block = blockDim(e, dim);
  Value sum = LLVM::AddOp::create(
      e.rw, e.loc, threads, LLVM::SubOp::create(e.rw, e.loc, block, e.c32(1)));
  return LLVM::UDivOp::create(e.rw, e.loc, sum, block);
}

/// The thread's flat index in its block.
Value flatThreadId(Emitter &e) {
  Value z = workItemOrGroupId(e, false, 2);
  Value y = workItemOrGroupId(e, false, 1);
  Value x = workItemOrGroupId(e, false, 0);
  Value zy = LLVM::AddOp::create(
      e.rw, e.loc, LLVM::MulOp::create(e.rw, e.loc, z, blockDim(e, 1)), y);
  return LLVM::AddOp::create(
      e.rw, e.loc, LLVM::MulOp::create(e.rw, e.loc, zy, blockDim(e, 0)), x);
}

/// The value of `v` in lane `k` of the thread's half (`readlane` of both
/// halves with constant lane numbers, then a select).
Value laneOfHalf(Emitter &e, Value v, Value upperHalf, unsigned k) {
  Value lo = e.namedOp("rocdl.readlane", v.getType(), {v, e.c32(k)});
  Value hi = e.namedOp("rocdl.readlane", v.getType(), {v, e.c32(32 + k)});
  return LLVM::SelectOp::create(e.rw, e.loc, upperHalf, hi, lo);
}

/// Whether bit `k` of `mask` is set.
Value bitSet(Emitter &e, Value mask, unsigned k) {
  Value b = LLVM::AndOp::create(e.rw, e.loc, mask, e.c32(1u << k));
  return LLVM::ICmpOp::create(e.rw, e.loc, LLVM::ICmpPredicate::ne, b,
                              e.c32(0));
}

//===----------------------------------------------------------------------===//
// Memory model and kernels
//===----------------------------------------------------------------------===//

StringRef ROCDLTargetInfo::syncScope(std::optional<MemScope> scope) const {
  switch (scope.value_or(MemScope::gpu)) {
  case MemScope::cta:
    return "workgroup";
  case MemScope::cluster:
  case MemScope::gpu:
    return "agent";
  case MemScope::sys:
    return "";
  }
  return "";
}

/// `rocdl.kernel`; `.reqntid` is `rocdl.reqd_work_group_size` and fixes the
/// flat work-group size, `.maxntid` bounds it. `.minnctapersm` and
/// `.maxnreg` are occupancy hints without an exact AMD meaning: dropped.
void ROCDLTargetInfo::markKernel(OpBuilder &b, LLVM::LLVMFuncOp fn,
                                 FuncOp op) const {
  fn->setAttr("rocdl.kernel", b.getUnitAttr());
  auto product = [](ArrayRef<int32_t> dims) {
    int64_t n = 1;
    for (int32_t d : dims)
      n *= d;
    return n;
  };
  if (auto a = op.getReqntidAttr()) {
    SmallVector<int32_t, 3> dims(a.asArrayRef());
    dims.resize(3, 1);
    fn->setAttr("rocdl.reqd_work_group_size", b.getDenseI32ArrayAttr(dims));
    int64_t n = product(dims);
    fn->setAttr("rocdl.flat_work_group_size",
                b.getStringAttr(Twine(n) + "," + Twine(n)));
  } else if (auto a = op.getMaxntidAttr()) {
    fn->setAttr("rocdl.flat_work_group_size",
                b.getStringAttr("1," + Twine(product(a.asArrayRef()))));
  } else {
    // CUDA's limit, 1024 threads; without the attribute the ROCDL
    // translation would cap the kernel at 256 threads per block.
    fn->setAttr("rocdl.flat_work_group_size", b.getStringAttr("1,1024"));
  }
}

/// CUDA's `assert` failure hook, which prints its message and traps.
constexpr StringLiteral kAssertFail = "__assertfail";

/// Records the chip and the triple; defines `__assertfail` as a trap (the
/// kernel aborts as on NVIDIA; the message is not printed: no printf yet).
void ROCDLTargetInfo::finalizeModule(ModuleOp module) const {
  MLIRContext *ctx = module.getContext();
  module->setAttr("wooly.chip", StringAttr::get(ctx, chip));
  module->setAttr("llvm.target_triple",
                  StringAttr::get(ctx, "amdgcn-amd-amdhsa"));
  auto assertFail = module.lookupSymbol<LLVM::LLVMFuncOp>(kAssertFail);
  if (!assertFail || !assertFail.isExternal())
    return;
  assertFail.setLinkage(LLVM::Linkage::Internal);
  OpBuilder b(ctx);
  Block *body = assertFail.addEntryBlock(b);
  b.setInsertionPointToStart(body);
  LLVM::Trap::create(b, assertFail.getLoc());
  LLVM::UnreachableOp::create(b, assertFail.getLoc());
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

LogicalResult ROCDLTargetInfo::checkOp(Operation *op) const {
  auto fail = [&](const Twine &what) {
    op->emitOpError() << what << kNotSupported;
    return failure();
  };
  if (isa<TexOp, Tld4Op, TexQueryOp, SuldOp, SustOp, SuredOp>(op))
    return fail("texture and surface access");
  // %envreg* (a cooperative launch's grid workspace): HIP's cooperative
  // launches have no such register.
  if (isa<LdMatrixOp, MmaOp, WmmaMmaOp, WmmaLoadOp, WmmaStoreOp, EnvRegOp,
          MbarrierInitOp, MbarrierInvalOp, MbarrierUpdateOp, MbarrierWaitOp,
          MbarrierPendingCountOp, BulkCopyOp, BulkCommitOp, BulkWaitOp,
          AsyncFenceOp, GridDepControlOp, ElectOp, StMatrixOp>(op))
    return op->emitOpError() << kNoEquivalent;
  if (auto s = op->getAttrOfType<StateSpaceAttr>("space");
      s && s.getValue() == StateSpace::shared_cluster)
    return op->emitOpError("in the shared::cluster state space ")
           << kNoEquivalent;
  if (auto g = dyn_cast<GlobalOp>(op); g && g.getLinkage() &&
                                       *g.getLinkage() == Linkage::extern_ &&
                                       g.getSpace() != StateSpace::shared)
    return op->emitOpError("declares external variable '")
           << g.getSymName()
           << "', which has no AMD definition yet (modules are not linked "
              "with each other)";
  if (auto s = dyn_cast<IsSpacePOp>(op);
      s && s.getSpace() == StateSpace::constant)
    return fail("isspacep.const");
  if (auto s = dyn_cast<SRegOp>(op)) {
    switch (s.getReg()) {
    case SpecialReg::nwarpid:
    case SpecialReg::smid:
    case SpecialReg::nsmid:
    case SpecialReg::gridid:
    case SpecialReg::reserved_smem_offset_begin:
    case SpecialReg::reserved_smem_offset_end:
    case SpecialReg::reserved_smem_offset_cap:
    case SpecialReg::reserved_smem_offset_0:
    case SpecialReg::reserved_smem_offset_1:
      return fail("special register %" + stringifySpecialReg(s.getReg()));
    default:
      return success();
    }
  }
  if (auto b = dyn_cast<BarrierOp>(op)) {
    if (b.getArrive())
      return op->emitOpError("bar.arrive ") << kNoEquivalent;
    if (b.getCount())
      return op->emitOpError("a barrier with a thread count ") << kNoEquivalent;
    return success();
  }
  if (auto b = dyn_cast<BarRedOp>(op)) {
    if (b.getOp() != ReduxKind::popc && b.getOp() != ReduxKind::and_ &&
        b.getOp() != ReduxKind::or_)
      return fail("bar.red." + stringifyReduxKind(b.getOp()));
    if (b.getCount())
      return op->emitOpError("a barrier with a thread count ") << kNoEquivalent;
    // The LDS-counter lowering needs every lane of a wave at one bar.red.
    if (!b.getAligned())
      return op->emitOpError("a non-aligned barrier.red ") << kNoEquivalent;
    return success();
  }
  if (auto r = dyn_cast<ReduxOp>(op); r && r.getOp() == ReduxKind::popc)
    return fail("redux.sync.popc");
  if (isa<ExitOp>(op)) {
    auto fn = op->getParentOfType<FuncOp>();
    if (fn && !fn.getKernel())
      return fail("exit in a called function");
    return success();
  }
  if (auto c = dyn_cast<CallOp>(op)) {
    auto callee =
        SymbolTable::lookupNearestSymbolFrom<FuncOp>(op, c.getCalleeAttr());
    if (callee && callee.isDeclaration() && c.getCallee() != kAssertFail)
      return op->emitOpError("calls external function '")
             << c.getCallee()
             << "', which has no AMD implementation yet (no device "
                "library is linked)";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// `.approx` math and helpers
//===----------------------------------------------------------------------===//

/// Declares (once) the device-library function `name` of type `fnType`.
void declareDeviceFunction(Operation *from, StringRef name,
                           LLVM::LLVMFunctionType fnType) {
  auto module = from->getParentOfType<ModuleOp>();
  if (module.lookupSymbol(name))
    return;
  OpBuilder b(module.getBodyRegion());
  LLVM::LLVMFuncOp::create(b, module.getLoc(), name, fnType,
                           LLVM::Linkage::External);
}

FailureOr<Value> ROCDLTargetInfo::approxMath(Emitter &e, Operation *op) const {
  Value in = op->getOperand(0);
  Type elem = getElementTypeOrSelf(in.getType());
  if (isa<math::Exp2Op, math::Log2Op, math::RsqrtOp>(op))
    return Value(); // llvm.exp2/log2 and 1/sqrt: v_exp/v_log/v_rsq.
  if (isa<math::TanhOp>(op)) {
    if (!elem.isF32() && !elem.isF16())
      return op->emitOpError("on ") << elem << kNotSupported;
    std::string fn = elem.isF32() ? "__ocml_tanh_f32" : "__ocml_tanh_f16";
    declareDeviceFunction(op, fn, LLVM::LLVMFunctionType::get(elem, {elem}));
    return mapScalars(e, in, [&](Value x) -> Value {
      return LLVM::CallOp::create(e.rw, e.loc, TypeRange{elem},
                                  FlatSymbolRefAttr::get(op->getContext(), fn),
                                  ValueRange{x})
          .getResult();
    });
  }
  // sin/cos: the hardware takes revolutions.
  if (!elem.isF32())
    return op->emitOpError("on ") << elem << kNotSupported;
  StringRef name =
      isa<math::SinOp>(op) ? "llvm.amdgcn.sin.f32" : "llvm.amdgcn.cos.f32";
  return mapScalars(e, in, [&](Value x) -> Value {
    Value inv2pi = LLVM::ConstantOp::create(
        e.rw, e.loc, e.rw.getF32Type(),
        e.rw.getF32FloatAttr(float(0.5 * llvm::numbers::inv_pi)));
    Value rev = LLVM::FMulOp::create(e.rw, e.loc, x, inv2pi);
    rev = e.intrinsic("llvm.amdgcn.fract.f32", rev.getType(), {rev});
    return e.intrinsic(name, x.getType(), {rev});
  });
}

/// The gfx9 MODE.FP_ROUND value (f32 in bits 0-1, f64/f16 in bits 2-3) of
/// a PTX rounding mode: 1 toward +inf, 2 toward -inf, 3 toward zero.
std::optional<unsigned> fpRoundMode(StringRef mode) {
  return llvm::StringSwitch<std::optional<unsigned>>(mode)
      .Case("rp", 1)
      .Case("rm", 2)
      .Case("rz", 3)
      .Default(std::nullopt);
}

/// The correctly rounded VALU instruction `insn` (`v_add_f32`, `v_fma_f64`,
/// `v_cvt_f32_f64`, ...) of `ops`, with a result of type `result`, run under
/// MODE.FP_ROUND = `mode` (fpRoundMode, for f32 and f64/f16 alike) in one
/// asm block that saves and restores MODE: nothing can be scheduled between
/// the switches.
Value underRoundingMode(Emitter &e, StringRef insn, Type result, unsigned mode,
                        ValueRange ops) {
  std::string operands, constraints = "=v,=&s";
  for (unsigned i = 0; i < ops.size(); ++i) {
    operands += (i ? ", $" : "$") + std::to_string(i + 2);
    constraints += ",v";
  }
  unsigned bits = mode | (mode << 2);
  std::string asmText =
      (Twine("s_getreg_b32 $1, hwreg(HW_REG_MODE, 0, 4)\n"
             "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 4), ") +
       Twine(bits) + "\ns_nop 3\n" + insn + " $0, " + operands +
       "\ns_nop 3\n"
       "s_setreg_b32 hwreg(HW_REG_MODE, 0, 4), $1")
          .str();
  Type st =
      LLVM::LLVMStructType::getLiteral(e.rw.getContext(), {result, e.i32()});
  Value r = LLVM::InlineAsmOp::create(
                e.rw, e.loc, st, ops, asmText, constraints,
                /*has_side_effects=*/false, /*is_align_stack=*/false,
                LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
                .getResult(0);
  return LLVM::ExtractValueOp::create(e.rw, e.loc, r, 0);
}

/// `__wooly_{fadd,fsub,fmul,fma}_{rz,rm,rp}_{f32,f64}` under the rounding
/// mode (a - b is a + (-b): negation is exact). Null when `helper` is not
/// one of these.
Value directedRounding(Emitter &e, StringRef helper, ValueRange args) {
  StringRef rest = helper;
  if (!rest.consume_front("__wooly_"))
    return {};
  SmallVector<StringRef> parts;
  rest.split(parts, '_');
  if (parts.size() != 3 || (parts[2] != "f32" && parts[2] != "f64"))
    return {};
  std::optional<unsigned> mode = fpRoundMode(parts[1]);
  StringRef insn = llvm::StringSwitch<StringRef>(parts[0])
                       .Case("fadd", "add")
                       .Case("fsub", "add")
                       .Case("fmul", "mul")
                       .Case("fma", "fma")
                       .Default("");
  if (!mode || insn.empty())
    return {};
  SmallVector<Value, 3> ops(args);
  if (parts[0] == "fsub")
    ops[1] = LLVM::FNegOp::create(e.rw, e.loc, ops[1]);
  return underRoundingMode(e, ("v_" + insn + "_" + parts[2]).str(),
                           ops[0].getType(), *mode, ops);
}

/// Directed rounding through f64 (null when `helper` is none of these):
///  - `__wooly_cvt_f64_f32_<m>` is `v_cvt_f32_f64` under the mode;
///  - `__wooly_{fdiv,frcp,fsqrt}_<m>_f32`: the f64 result rounded to
///    nearest (LLVM's f64 division and square root are correctly rounded),
///    then converted under the mode. This is the directed rounding of the
///    exact result: a quotient or root of f32s that is no f32 lies more than
///    2^-46 (relative) from every f32, so rounding to 53 bits neither
///    reaches nor crosses one;
///  - `__wooly_cvt_{s64,u64}_{f32,f64}_<m>`: the high and low halves convert
///    exactly, one f64 add rounds under the mode, and for f32 the f64 is
///    converted under the mode too (rounding toward zero/-inf/+inf twice
///    onto nested grids is rounding once).
Value directedViaF64(Emitter &e, StringRef helper, ValueRange args) {
  OpBuilder &b = e.rw;
  StringRef rest = helper;
  if (!rest.consume_front("__wooly_"))
    return {};
  SmallVector<StringRef> parts;
  rest.split(parts, '_');
  Type f32 = b.getF32Type(), f64 = b.getF64Type();
  auto toF32 = [&](Value d, unsigned mode) {
    return underRoundingMode(e, "v_cvt_f32_f64", f32, mode, {d});
  };
  // cvt_f64_f32_<m>
  if (parts.size() == 4 && parts[0] == "cvt" && parts[1] == "f64" &&
      parts[2] == "f32")
    if (std::optional<unsigned> mode = fpRoundMode(parts[3]))
      return toF32(args[0], *mode);
  // {fdiv,frcp,fsqrt}_<m>_f32
  if (parts.size() == 3 && parts[2] == "f32" &&
      (parts[0] == "fdiv" || parts[0] == "frcp" || parts[0] == "fsqrt")) {
    std::optional<unsigned> mode = fpRoundMode(parts[1]);
    if (!mode)
      return {};
    SmallVector<Value, 2> xs;
    for (Value a : args)
      xs.push_back(LLVM::FPExtOp::create(b, e.loc, f64, a));
    Value d;
    if (parts[0] == "fsqrt") {
      d = LLVM::SqrtOp::create(b, e.loc, xs[0]);
    } else {
      Value num = parts[0] == "fdiv"
                      ? xs[0]
                      : Value(LLVM::ConstantOp::create(b, e.loc, f64,
                                                       b.getF64FloatAttr(1.0)));
      d = LLVM::FDivOp::create(b, e.loc, num, xs.back());
    }
    return toF32(d, *mode);
  }
  // cvt_{s64,u64}_{f32,f64}_<m>
  if (parts.size() == 4 && parts[0] == "cvt" &&
      (parts[1] == "s64" || parts[1] == "u64") &&
      (parts[2] == "f32" || parts[2] == "f64")) {
    std::optional<unsigned> mode = fpRoundMode(parts[3]);
    if (!mode)
      return {};
    bool isSigned = parts[1] == "s64";
    Value x = args[0];
    Value hi = e.intCast(
        isSigned ? Value(LLVM::AShrOp::create(b, e.loc, x, e.cst(e.i64(), 32)))
                 : Value(LLVM::LShrOp::create(b, e.loc, x, e.cst(e.i64(), 32))),
        e.i32());
    Value lo = e.intCast(x, e.i32());
    Value hiD = isSigned ? Value(LLVM::SIToFPOp::create(b, e.loc, f64, hi))
                         : Value(LLVM::UIToFPOp::create(b, e.loc, f64, hi));
    hiD = LLVM::FMulOp::create(
        b, e.loc, hiD,
        LLVM::ConstantOp::create(b, e.loc, f64, b.getF64FloatAttr(0x1p32)));
    Value loD = LLVM::UIToFPOp::create(b, e.loc, f64, lo);
    Value d = underRoundingMode(e, "v_add_f64", f64, *mode, {hiD, loD});
    return parts[2] == "f64" ? d : toF32(d, *mode);
  }
  return {};
}

/// `__wooly_fma_rn_bf16` (gfx9 has no bf16 fma; f32 then bf16 would round
/// twice): the f32 fma rounded to odd (toward zero, lowest bit set when
/// inexact, i.e. when the fma rounded up and down differ), then rounded to
/// nearest bf16, which gives the single rounding of the exact result
/// because f32 has more than twice bf16's precision plus two bits.
Value fmaBF16(Emitter &e, ValueRange args) {
  OpBuilder &b = e.rw;
  SmallVector<Value, 3> xs;
  for (Value a : args)
    xs.push_back(LLVM::FPExtOp::create(b, e.loc, b.getF32Type(),
                                       narrowHelperArg(e, a, b.getBF16Type())));
  Type f32 = b.getF32Type();
  Value rz = underRoundingMode(e, "v_fma_f32", f32, *fpRoundMode("rz"), xs);
  Value up = underRoundingMode(e, "v_fma_f32", f32, *fpRoundMode("rp"), xs);
  Value down = underRoundingMode(e, "v_fma_f32", f32, *fpRoundMode("rm"), xs);
  Value inexact =
      LLVM::FCmpOp::create(b, e.loc, LLVM::FCmpPredicate::one, up, down);
  Value bits = LLVM::BitcastOp::create(b, e.loc, e.i32(), rz);
  bits = LLVM::OrOp::create(b, e.loc, bits,
                            LLVM::ZExtOp::create(b, e.loc, e.i32(), inexact));
  Value odd = LLVM::BitcastOp::create(b, e.loc, b.getF32Type(), bits);
  Value r = LLVM::FPTruncOp::create(b, e.loc, b.getBF16Type(), odd);
  return helperBits(e, r, isNaNOf(e, r), 0x7fff);
}

FailureOr<Value> ROCDLTargetInfo::helperCall(Emitter &e, func::CallOp c) const {
  StringRef helper = c.getCallee();
  if (Value r = directedRounding(e, helper, c.getOperands()))
    return r;
  if (Value r = directedViaF64(e, helper, c.getOperands()))
    return r;
  // fma.rn.f16: v_fma_f16 rounds once, as the helper.
  if (helper == "__wooly_fma_rn_f16") {
    Type ft = e.rw.getF16Type();
    SmallVector<Value, 3> xs;
    for (Value a : c.getOperands())
      xs.push_back(narrowHelperArg(e, a, ft));
    Value r = e.intrinsic("llvm.fma.f16", ft, xs);
    return helperBits(e, r, isNaNOf(e, r), 0x7fff);
  }
  if (helper == "__wooly_fma_rn_bf16")
    return fmaBF16(e, c.getOperands());
  if (helper == "__wooly_cvt_e4m3_f16" || helper == "__wooly_cvt_e5m2_f16")
    return fp8ToF16(e, c.getOperand(0), helper == "__wooly_cvt_e4m3_f16");
  bool e4 = helper == "__wooly_cvt_f64_e4m3_rn_satfinite",
       e5 = helper == "__wooly_cvt_f64_e5m2_rn_satfinite";
  if (e4 || e5) {
    // An f64 that is no exact widening of an f32 (or f16) would round twice.
    if (Value x = narrowSource(e, c.getOperand(0)))
      return f32ToFp8(e, x, e4 ? kE4M3 : kE5M2);
  }
  // cvt.rn.bf16.f64: one rounding from f32 when widened from one, else
  // through f32 rounded to odd.
  if (helper == "__wooly_cvt_f64_bf16_rn") {
    auto ext = c.getOperand(0).getDefiningOp<arith::ExtFOp>();
    if (ext && ext.getIn().getType().isF32()) {
      Value x = ext.getIn();
      Value r = LLVM::FPTruncOp::create(e.rw, e.loc, e.rw.getBF16Type(), x);
      return helperBits(e, r, isNaNOf(e, x), 0x7fff);
    }
    return f64ToHalf(e, c.getOperand(0), e.rw.getBF16Type());
  }
  if (helper == "__wooly_cvt_f64_f16_rn")
    return f64ToHalf(e, c.getOperand(0), e.rw.getF16Type());
  if (Value r = lowerDirectedHalfHelper(e, helper, c.getOperand(0)))
    return r;
  return c.emitError("helper '") << helper << "'" << kNotSupported;
}

//===----------------------------------------------------------------------===//
// Functions, addresses, special registers
//===----------------------------------------------------------------------===//

/// `exit` in a kernel returns from it (`checkOp` refused other functions).
LogicalResult ROCDLTargetInfo::lower(ExitOp op, ExitOp::Adaptor,
                                     ConversionPatternRewriter &rw) const {
  rw.replaceOpWithNewOp<LLVM::ReturnOp>(op, ValueRange{});
  return success();
}

/// `brkpt` is `llvm.debugtrap` (`s_trap 3`).
LogicalResult ROCDLTargetInfo::lower(BrkptOp op, BrkptOp::Adaptor,
                                     ConversionPatternRewriter &rw) const {
  rw.replaceOpWithNewOp<LLVM::DebugTrap>(op);
  return success();
}

/// `isspacep`: `llvm.amdgcn.is.shared/private`; global is neither.
LogicalResult ROCDLTargetInfo::lower(IsSpacePOp op, IsSpacePOp::Adaptor a,
                                     ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  Type i1 = rw.getI1Type();
  if (op.getSpace() == StateSpace::generic) {
    rw.replaceOp(op, e.cst(i1, 1));
    return success();
  }
  Value p = e.toPtr(a.getAddr(), 0);
  auto is = [&](StringRef name) { return e.intrinsic(name, i1, {p}); };
  Value r;
  switch (op.getSpace()) {
  case StateSpace::shared:
    r = is("llvm.amdgcn.is.shared");
    break;
  case StateSpace::local:
    r = is("llvm.amdgcn.is.private");
    break;
  case StateSpace::global: {
    Value either = LLVM::OrOp::create(rw, e.loc, is("llvm.amdgcn.is.shared"),
                                      is("llvm.amdgcn.is.private"));
    r = LLVM::XOrOp::create(rw, e.loc, either, e.cst(i1, 1));
    break;
  }
  default:
    return op.emitOpError() << StringRef(kNotSupported).ltrim();
  }
  rw.replaceOp(op, r);
  return success();
}

/// `wooly.sreg` from work-item ids, the dispatch packet, `mbcnt` and the
/// counters (see the file comment).
LogicalResult ROCDLTargetInfo::lower(SRegOp op, SRegOp::Adaptor,
                                     ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  unsigned dim = 0;
  if (op.getDim())
    dim = unsigned(*op.getDim());
  auto nanoseconds = [&]() {
    Value ticks = e.intrinsic("llvm.amdgcn.s.memrealtime", e.i64(), {});
    return LLVM::MulOp::create(rw, e.loc, ticks, e.cst(e.i64(), 10));
  };
  Value v = derivedSReg(e, op.getReg(), [&] { return ptxLane(e); });
  if (v) {
    rw.replaceOp(op, e.intCast(v, op.getType()));
    return success();
  }
  switch (op.getReg()) {
  case SpecialReg::tid:
    v = workItemOrGroupId(e, false, dim);
    break;
  case SpecialReg::ctaid:
  case SpecialReg::clusterid:
    v = workItemOrGroupId(e, true, dim);
    break;
  case SpecialReg::ntid:
    v = blockDim(e, dim);
    break;
  case SpecialReg::nctaid:
  case SpecialReg::nclusterid:
    v = gridDim(e, dim);
    break;
  case SpecialReg::laneid:
    v = ptxLane(e);
    break;
  case SpecialReg::warpid:
    v = LLVM::LShrOp::create(rw, e.loc, flatThreadId(e), e.c32(5));
    break;
  case SpecialReg::clock:
  case SpecialReg::clock64:
    v = e.intrinsic("llvm.amdgcn.s.memtime", e.i64(), {});
    break;
  case SpecialReg::globaltimer:
  case SpecialReg::globaltimer_lo:
    v = nanoseconds();
    break;
  case SpecialReg::globaltimer_hi:
    v = LLVM::LShrOp::create(rw, e.loc, nanoseconds(), e.cst(e.i64(), 32));
    break;
  case SpecialReg::total_smem_size:
    v = dispatchField(e, 28, e.i32());
    break;
  case SpecialReg::dynamic_smem_size:
    v = LLVM::SubOp::create(
        rw, e.loc, dispatchField(e, 28, e.i32()),
        e.intrinsic("llvm.amdgcn.groupstaticsize", e.i32(), {}));
    break;
  case SpecialReg::nwarpid:
  case SpecialReg::smid:
  case SpecialReg::nsmid:
  case SpecialReg::gridid:
    return op.emitOpError("special register %")
           << stringifySpecialReg(op.getReg()) << kNotSupported;
  default:
    llvm_unreachable("lowered by derivedSReg");
  }
  rw.replaceOp(op, e.intCast(v, op.getType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Synchronisation
//===----------------------------------------------------------------------===//

/// A work-group barrier: `s_barrier` between workgroup-scope release and
/// acquire fences.
void blockBarrier(Emitter &e) {
  LLVM::FenceOp::create(e.rw, e.loc, LLVM::AtomicOrdering::release,
                        "workgroup");
  e.namedOp("rocdl.s.barrier", Type());
  LLVM::FenceOp::create(e.rw, e.loc, LLVM::AtomicOrdering::acquire,
                        "workgroup");
}

/// `bar.sync a` (any `a`, all threads): a work-group barrier.
LogicalResult ROCDLTargetInfo::lower(BarrierOp op, BarrierOp::Adaptor,
                                     ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  blockBarrier(e);
  rw.eraseOp(op);
  return success();
}

/// The LDS counter that `bar.red` counts in (declared once per module).
constexpr StringLiteral kBarRedCounter = "__wooly_bar_red_count";

/// `bar.red.{popc,and,or} a` (all threads): threads count their (for `and`,
/// negated) predicates in an LDS counter: every thread zeroes it, barrier,
/// atomic add, barrier, read, barrier (so that the next `bar.red`'s zeroing
/// comes after every read). `popc` is the count, `and` "no false predicate",
/// `or` "some true predicate".
LogicalResult ROCDLTargetInfo::lower(BarRedOp op, BarRedOp::Adaptor a,
                                     ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  auto module = op->getParentOfType<ModuleOp>();
  Type i32 = e.i32();
  if (!module.lookupSymbol(kBarRedCounter)) {
    OpBuilder::InsertionGuard guard(rw);
    rw.setInsertionPointToStart(module.getBody());
    auto g = LLVM::GlobalOp::create(rw, e.loc, i32, /*isConstant=*/false,
                                    LLVM::Linkage::Internal, kBarRedCounter,
                                    Attribute(), /*alignment=*/4,
                                    /*addrSpace=*/3);
    Block *init = rw.createBlock(&g.getInitializerRegion());
    rw.setInsertionPointToStart(init);
    LLVM::ReturnOp::create(rw, e.loc,
                           LLVM::UndefOp::create(rw, e.loc, i32).getResult());
  }
  Value counter =
      LLVM::AddressOfOp::create(rw, e.loc, e.ptr(3), kBarRedCounter);
  LLVM::StoreOp::create(rw, e.loc, e.c32(0), counter, 4, false, false, false,
                        LLVM::AtomicOrdering::monotonic, "workgroup");
  blockBarrier(e);
  Value pred = a.getPred();
  bool isAnd = op.getOp() == ReduxKind::and_;
  if (isAnd)
    pred = LLVM::XOrOp::create(rw, e.loc, pred, e.cst(rw.getI1Type(), 1));
  LLVM::AtomicRMWOp::create(rw, e.loc, LLVM::AtomicBinOp::add, counter,
                            LLVM::ZExtOp::create(rw, e.loc, i32, pred),
                            LLVM::AtomicOrdering::monotonic, "workgroup");
  blockBarrier(e);
  Value n =
      LLVM::LoadOp::create(rw, e.loc, i32, counter, 4, false, false, false,
                           false, LLVM::AtomicOrdering::monotonic, "workgroup");
  blockBarrier(e);
  Value r = n;
  if (op.getOp() != ReduxKind::popc)
    r = LLVM::ICmpOp::create(
        rw, e.loc, isAnd ? LLVM::ICmpPredicate::eq : LLVM::ICmpPredicate::ne, n,
        e.c32(0));
  rw.replaceOp(op, e.intCast(r, op.getType()));
  return success();
}

/// `bar.warp.sync`: a wavefront fence and `llvm.amdgcn.wave.barrier` (see
/// the file comment for why nothing more is needed).
LogicalResult ROCDLTargetInfo::lower(WarpSyncOp op, WarpSyncOp::Adaptor,
                                     ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  LLVM::FenceOp::create(rw, e.loc, LLVM::AtomicOrdering::acq_rel, "wavefront");
  e.intrinsic("llvm.amdgcn.wave.barrier", Type(), {});
  rw.eraseOp(op);
  return success();
}

/// `activemask`: the thread's half of `ballot(true)`.
LogicalResult ROCDLTargetInfo::lower(ActiveMaskOp op, ActiveMaskOp::Adaptor,
                                     ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  rw.replaceOp(op, halfBallot(e, e.cst(rw.getI1Type(), 1)));
  return success();
}

/// `nanosleep`: `s_sleep 1` (about 64 clocks).
LogicalResult ROCDLTargetInfo::lower(NanosleepOp op, NanosleepOp::Adaptor,
                                     ConversionPatternRewriter &rw) const {
  ROCDL::SSleepOp::create(rw, op.getLoc(), 1);
  rw.eraseOp(op);
  return success();
}

//===----------------------------------------------------------------------===//
// Warp collectives
//===----------------------------------------------------------------------===//

/// `shfl.sync` with PTX's source-lane rules within the 32-lane half, read
/// with `ds_bpermute`.
LogicalResult ROCDLTargetInfo::lower(ShflOp op, ShflOp::Adaptor a,
                                     ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  auto and_ = [&](Value x, Value y) {
    return Value(LLVM::AndOp::create(rw, e.loc, x, y));
  };
  auto cmp = [&](LLVM::ICmpPredicate p, Value x, Value y) {
    return Value(LLVM::ICmpOp::create(rw, e.loc, p, x, y));
  };
  Value lane = ptxLane(e);
  Value b = and_(a.getLane(), e.c32(31));
  Value c = a.getClamp();
  Value cval = and_(c, e.c32(31));
  Value segmask = and_(LLVM::LShrOp::create(rw, e.loc, c, e.c32(8)), e.c32(31));
  Value notSeg = LLVM::XOrOp::create(rw, e.loc, segmask, e.c32(~0u));
  Value minLane = and_(lane, segmask);
  Value maxLane = LLVM::OrOp::create(rw, e.loc, minLane, and_(cval, notSeg));
  Value j, valid;
  switch (op.getMode()) {
  case ShflMode::up:
    j = LLVM::SubOp::create(rw, e.loc, lane, b);
    valid = cmp(LLVM::ICmpPredicate::sge, j, maxLane);
    break;
  case ShflMode::down:
    j = LLVM::AddOp::create(rw, e.loc, lane, b);
    valid = cmp(LLVM::ICmpPredicate::sle, j, maxLane);
    break;
  case ShflMode::bfly:
    j = LLVM::XOrOp::create(rw, e.loc, lane, b);
    valid = cmp(LLVM::ICmpPredicate::sle, j, maxLane);
    break;
  case ShflMode::idx:
    j = LLVM::OrOp::create(rw, e.loc, minLane, and_(b, notSeg));
    valid = cmp(LLVM::ICmpPredicate::sle, j, maxLane);
    break;
  }
  Value src = LLVM::SelectOp::create(rw, e.loc, valid, j, lane);
  Value waveSrc = LLVM::OrOp::create(rw, e.loc, halfBase(e), src);
  Value byteAddr = LLVM::ShlOp::create(rw, e.loc, waveSrc, e.c32(2));
  Value r = e.namedOp("rocdl.ds_bpermute", e.i32(), {byteAddr, a.getValue()});
  rw.replaceOp(op, {r, valid});
  return success();
}

/// `vote.sync` from the thread's half of the 64-bit ballot.
LogicalResult ROCDLTargetInfo::lower(VoteOp op, VoteOp::Adaptor a,
                                     ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  auto members = [&](Value pred) {
    return Value(
        LLVM::AndOp::create(rw, e.loc, halfBallot(e, pred), a.getMask()));
  };
  auto none = [&](Value bits) {
    return Value(LLVM::ICmpOp::create(rw, e.loc, LLVM::ICmpPredicate::eq, bits,
                                      e.c32(0)));
  };
  auto notPred = [&]() {
    return Value(
        LLVM::XOrOp::create(rw, e.loc, a.getPred(), e.cst(rw.getI1Type(), 1)));
  };
  Value r;
  switch (op.getMode()) {
  case VoteMode::ballot:
    r = members(a.getPred());
    break;
  case VoteMode::any:
    r = LLVM::XOrOp::create(rw, e.loc, none(members(a.getPred())),
                            e.cst(rw.getI1Type(), 1));
    break;
  case VoteMode::all:
    r = none(members(notPred()));
    break;
  case VoteMode::uni:
    r = LLVM::OrOp::create(rw, e.loc, none(members(a.getPred())),
                           none(members(notPred())));
    break;
  }
  rw.replaceOp(op, r);
  return success();
}

/// Folds `x` into the running reduction `acc` with `kind`.
Value reduceStep(Emitter &e, ReduxKind kind, Value acc, Value x) {
  OpBuilder &b = e.rw;
  auto pick = [&](LLVM::ICmpPredicate p) {
    Value c = LLVM::ICmpOp::create(b, e.loc, p, acc, x);
    return Value(LLVM::SelectOp::create(b, e.loc, c, acc, x));
  };
  switch (kind) {
  case ReduxKind::add:
    return LLVM::AddOp::create(b, e.loc, acc, x);
  case ReduxKind::umin:
    return pick(LLVM::ICmpPredicate::ult);
  case ReduxKind::smin:
    return pick(LLVM::ICmpPredicate::slt);
  case ReduxKind::umax:
    return pick(LLVM::ICmpPredicate::ugt);
  case ReduxKind::smax:
    return pick(LLVM::ICmpPredicate::sgt);
  case ReduxKind::and_:
    return LLVM::AndOp::create(b, e.loc, acc, x);
  case ReduxKind::or_:
    return LLVM::OrOp::create(b, e.loc, acc, x);
  case ReduxKind::xor_:
    return LLVM::XOrOp::create(b, e.loc, acc, x);
  case ReduxKind::popc:
    break;
  }
  return {};
}

/// The identity of a reduction (`popc` has none: refused by `checkOp`).
uint64_t reduceIdentity(ReduxKind kind) {
  switch (kind) {
  case ReduxKind::umin:
  case ReduxKind::and_:
    return ~0u;
  case ReduxKind::smin:
    return 0x7fffffffu;
  case ReduxKind::smax:
    return 0x80000000u;
  default:
    return 0;
  }
}

/// `redux.sync`: the members' values folded lane by lane (`readlane`).
LogicalResult ROCDLTargetInfo::lower(ReduxOp op, ReduxOp::Adaptor a,
                                     ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  Value members = activeMembers(e, a.getMask());
  Value upper = LLVM::ICmpOp::create(rw, e.loc, LLVM::ICmpPredicate::ne,
                                     halfBase(e), e.c32(0));
  Value acc = e.c32(reduceIdentity(op.getOp()));
  for (unsigned k = 0; k < 32; ++k) {
    Value x = laneOfHalf(e, a.getValue(), upper, k);
    Value next = reduceStep(e, op.getOp(), acc, x);
    acc = LLVM::SelectOp::create(rw, e.loc, bitSet(e, members, k), next, acc);
  }
  rw.replaceOp(op, acc);
  return success();
}

/// `match.sync`: `any` is the mask of members holding the thread's value
/// (lane by lane with `readlane`); `all` is the member mask when that is
/// every member, else 0, with the predicate.
LogicalResult ROCDLTargetInfo::lower(MatchOp op, MatchOp::Adaptor a,
                                     ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  Value members = activeMembers(e, a.getMask());
  Value upper = LLVM::ICmpOp::create(rw, e.loc, LLVM::ICmpPredicate::ne,
                                     halfBase(e), e.c32(0));
  Value same = e.c32(0);
  for (unsigned k = 0; k < 32; ++k) {
    Value x = laneOfHalf(e, a.getValue(), upper, k);
    Value eq = LLVM::ICmpOp::create(rw, e.loc, LLVM::ICmpPredicate::eq, x,
                                    a.getValue());
    Value bit = LLVM::SelectOp::create(rw, e.loc, eq, e.c32(1u << k), e.c32(0));
    same = LLVM::OrOp::create(rw, e.loc, same, bit);
  }
  same = LLVM::AndOp::create(rw, e.loc, same, members);
  if (op.getMode() == MatchMode::any) {
    rw.replaceOp(op, {same, LLVM::PoisonOp::create(rw, e.loc, rw.getI1Type())});
    return success();
  }
  Value all =
      LLVM::ICmpOp::create(rw, e.loc, LLVM::ICmpPredicate::eq, same, members);
  Value r = LLVM::SelectOp::create(rw, e.loc, all, a.getMask(), e.c32(0));
  rw.replaceOp(op, {r, all});
  return success();
}

//===----------------------------------------------------------------------===//
// Asynchronous copies
//===----------------------------------------------------------------------===//

/// `cp.async`: a synchronous copy from global to shared memory (one aligned
/// load and store); with `src-size`, the destination is zeroed first and
/// only `min(src-size, size)` bytes are read (`memset` + `memcpy`).
LogicalResult ROCDLTargetInfo::lower(CpAsyncOp op, CpAsyncOp::Adaptor a,
                                     ConversionPatternRewriter &rw) const {
  Emitter e{rw, op.getLoc()};
  Value dst = e.toPtr(a.getDst(), 3);
  Value src = e.toPtr(a.getSrc(), 1);
  unsigned bytes = op.getSize();
  if (!a.getSrcSize() && (bytes == 4 || bytes == 8 || bytes == 16)) {
    // PTX requires the addresses to be aligned to the size.
    Type t = bytes == 4 ? e.i32()
                        : Type(VectorType::get({int64_t(bytes / 4)}, e.i32()));
    Value v = LLVM::LoadOp::create(rw, e.loc, t, src, bytes);
    LLVM::StoreOp::create(rw, e.loc, v, dst, bytes);
    rw.eraseOp(op);
    return success();
  }
  Value size = e.c32(bytes);
  Value len = size;
  if (Value srcSize = a.getSrcSize()) {
    LLVM::MemsetOp::create(rw, e.loc, dst, e.cst(rw.getI8Type(), 0), size,
                           /*isVolatile=*/false);
    Value smaller = LLVM::ICmpOp::create(rw, e.loc, LLVM::ICmpPredicate::ult,
                                         srcSize, size);
    len = LLVM::SelectOp::create(rw, e.loc, smaller, srcSize, size);
  }
  LLVM::MemcpyOp::create(rw, e.loc, dst, src, len, /*isVolatile=*/false);
  rw.eraseOp(op);
  return success();
}

/// `cp.async.commit_group`: nothing is pending.
LogicalResult ROCDLTargetInfo::lower(CpAsyncCommitOp op,
                                     CpAsyncCommitOp::Adaptor,
                                     ConversionPatternRewriter &rw) const {
  rw.eraseOp(op);
  return success();
}

/// `cp.async.wait_group`: nothing is pending.
LogicalResult ROCDLTargetInfo::lower(CpAsyncWaitOp op, CpAsyncWaitOp::Adaptor,
                                     ConversionPatternRewriter &rw) const {
  rw.eraseOp(op);
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertWoolyToROCDLPass
    : wooly::impl::ConvertWoolyToROCDLBase<ConvertWoolyToROCDLPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto lowering = prepareWoolyToROCDLLowering(module, chip);
    if (failed(lowering) || failed(applyLowering(module, **lowering)))
      return signalPassFailure();
  }
};

} // namespace

FailureOr<std::unique_ptr<WoolyLLVMLowering>>
mlir::wooly::prepareWoolyToROCDLLowering(ModuleOp module, StringRef chip) {
  if (chip != "gfx90a" && chip != "gfx942") {
    module.emitError("convert-wooly-to-rocdl: unsupported chip '")
        << chip << "' (supported: gfx90a, gfx942)";
    return failure();
  }
  return prepareGPULowering(module, std::make_unique<ROCDLTargetInfo>(chip));
}

void mlir::wooly::populateWoolyToROCDLConversionPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns,
    WoolyLLVMLowering &lowering) {
  lowering.populatePatterns(converter, patterns);
}
