//===- GPULowering.h - Wooly to LLVM for any GPU ---------------*- C++ -*-===//
//
// Internal to lib/Conversion: the lowering of Wooly IR to the LLVM dialect
// that is the same on every GPU, shared by `convert-wooly-to-nvvm` and
// `convert-wooly-to-rocdl`. What differs between vendors sits behind the
// abstract `GPUTargetInfo`; a pass is a target info plus
// `runGPULowering(module, info)`.
//
// The shared part owns: the type conversion and the pass skeleton (checks,
// `.approx` math and `__wooly_*` helper rewriting, module preparation,
// dialect conversion); functions, calls and returns; module-scope variables
// as LLVM globals and `addressof`; loads, stores, `cvta`, atomics, `red` and
// fences (with the target's address spaces and `syncscope` names); traps,
// prefetches and cache policies. A target supplies address-space numbers,
// scope names, kernel marking, and the lowering of the ops whose meaning is
// a machine's own (special registers, barriers, warp collectives, `cp.async`,
// matrix ops, `exit`, `isspacep`, ...): one `lower` overload per such op.
// A target refuses what it cannot lower faithfully in `checkOp`, with a
// located error, before anything is rewritten.
//
// Kept out of include/ because it needs the LLVM dialect; it includes no
// vendor dialect (NVVM, ROCDL).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_CONVERSION_WOOLYCOMMON_GPULOWERING_H
#define WOOLY_LIB_CONVERSION_WOOLYCOMMON_GPULOWERING_H

#include "Wooly/Dialect/Wooly/IR/Wooly.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>

namespace mlir {
namespace func {
class CallOp;
} // namespace func
} // namespace mlir

namespace mlir::wooly::gpu {

/// What the patterns of one lowering share.
struct LoweringState {
  /// A function-scope `.local` variable: its function, size and alignment.
  struct LocalVar {
    StringRef function;
    uint64_t bytes;
    uint64_t align;
  };
  /// Function-scope `.local` variables by symbol.
  llvm::StringMap<LocalVar> localVars;
  /// The alloca of each local variable in the lowered function.
  DenseMap<std::pair<Operation *, StringRef>, Value> localAllocas;
  /// State space of each module-scope variable.
  llvm::StringMap<StateSpace> globalSpaces;
  /// Kernel parameter offsets in the CUDA parameter buffer, per kernel.
  llvm::StringMap<SmallVector<uint64_t>> paramOffsets;
  /// For each lowered kernel that takes a parameter's address
  /// (`wooly.param_address`): a copy of its parameter buffer, an alloca
  /// in the entry block (the param state space is not addressable on a GPU
  /// target, so param addresses are generic addresses of this copy).
  DenseMap<Operation *, Value> paramCopies;
};

/// Builds the lowered code of one op at one location.
struct Emitter {
  OpBuilder &rw;
  Location loc;

  /// `i32`.
  Type i32() { return rw.getI32Type(); }
  /// `i64`.
  Type i64() { return rw.getI64Type(); }
  /// An LLVM pointer in address space `as`.
  Type ptr(unsigned as = 0) {
    return LLVM::LLVMPointerType::get(rw.getContext(), as);
  }
  /// The integer constant `v` of type `t`.
  Value cst(Type t, uint64_t v) {
    return LLVM::ConstantOp::create(rw, loc, t, rw.getIntegerAttr(t, v));
  }
  /// The `i32` constant `v`.
  Value c32(uint64_t v) { return cst(i32(), v); }
  /// Zero-extends or truncates integer `v` to `t`.
  Value intCast(Value v, Type t);
  /// Integer address `addr` as a pointer in address space `as`.
  Value toPtr(Value addr, unsigned as) {
    return LLVM::IntToPtrOp::create(rw, loc, ptr(as), addr);
  }
  /// Pointer `p` as an integer of type `t`.
  Value toInt(Value p, Type t) {
    return LLVM::PtrToIntOp::create(rw, loc, t, p);
  }
  /// Calls the LLVM intrinsic `name` (no result when `result` is null).
  Value intrinsic(StringRef name, Type result, ValueRange args);
  /// Creates the registered op `name` (a vendor dialect's, such as
  /// `nvvm.read.ptx.sreg.tid.x` or `rocdl.workitem.id.x`) with one result of
  /// type `result` (none when null); null when no such op is registered.
  Value namedOp(StringRef name, Type result, ValueRange operands = {});
};

/// Applies `fn` to each element of `v` (to a scalar `v` directly).
Value mapScalars(Emitter &e, Value v, llvm::function_ref<Value(Value)> fn);

/// The f32 (or f16, widened exactly) that the f64 `d` was widened from, or
/// null when `d` is not an exact widening of one.
Value narrowSource(Emitter &e, Value d);

/// A `__wooly_*` helper's i32 result: the bits of float `r` zero-extended,
/// or `nanBits` when `isNaN` (the helpers return PTX's canonical NaN).
Value helperBits(Emitter &e, Value r, Value isNaN, uint64_t nanBits);

/// Whether float `x` is a NaN.
Value isNaNOf(Emitter &e, Value x);

/// A 16-bit float argument of a `__wooly_*` helper (passed as the low bits
/// of an i32) as a value of float type `ft`.
Value narrowHelperArg(Emitter &e, Value v, Type ft);

/// An 8-bit float format (OCP, as in PTX): exponent bias, mantissa bits,
/// largest finite encoding.
struct Fp8Format {
  int bias;
  unsigned mantissa;
  unsigned maxFinite;
};
inline constexpr Fp8Format kE4M3{7, 3, 0x7e}, kE5M2{15, 2, 0x7b};

/// `__wooly_cvt_{e4m3,e5m2}_f16` in integer arithmetic: the fp8 in the low
/// byte of the i32 `arg` as f16 bits in an i32 (exact; NaN gives PTX's
/// canonical f16 NaN).
Value fp8ToF16(Emitter &e, Value arg, bool e4m3);

/// `__wooly_cvt_f64_{e4m3,e5m2}_rn_satfinite` of an f32 `x` in integer
/// arithmetic: the fp8 encoding (round to nearest even, saturating to the
/// largest finite value, NaN 0x7f) in an i32.
Value f32ToFp8(Emitter &e, Value x, Fp8Format fmt);

/// `__wooly_cvt_f64_{bf16,f16}_rn` of any f64 `x` with plain IEEE
/// operations (`half` is bf16 or f16): `x` rounded to f32 *to odd* (round to
/// nearest, stepped back toward zero when that rounded away, lowest bit set
/// when inexact), then to nearest `half`, which is the one rounding of `x`
/// (f32 carries at least twice the precision of either plus two bits, and
/// covers their exponent ranges). The result's bits in an i32 (NaN: the
/// canonical 0x7fff; wooly-expand-arith picks the NaN itself).
Value f64ToHalf(Emitter &e, Value x, Type half);

/// Applies `X` to each Wooly op whose lowering is the target's own.
#define WOOLY_GPU_TARGET_OPS(X)                                                \
  X(ExitOp)                                                                    \
  X(BrkptOp)                                                                   \
  X(IsSpacePOp)                                                                \
  X(SRegOp)                                                                    \
  X(BarrierOp)                                                                 \
  X(BarRedOp)                                                                  \
  X(WarpSyncOp)                                                                \
  X(ActiveMaskOp)                                                              \
  X(NanosleepOp)                                                               \
  X(ShflOp)                                                                    \
  X(VoteOp)                                                                    \
  X(ReduxOp)                                                                   \
  X(MatchOp)                                                                   \
  X(CpAsyncOp)                                                                 \
  X(CpAsyncCommitOp)                                                           \
  X(CpAsyncWaitOp)                                                             \
  X(LdMatrixOp)                                                                \
  X(MmaOp)                                                                     \
  X(WmmaMmaOp)                                                                 \
  X(WmmaLoadOp)                                                                \
  X(WmmaStoreOp)

/// Declares, in a `GPUTargetInfo` subclass, the override of `lower` for `Op`.
#define WOOLY_GPU_LOWER_OVERRIDE(Op)                                           \
  LogicalResult lower(Op op, Op::Adaptor adaptor,                              \
                      ConversionPatternRewriter &rw) const override;

/// The vendor-specific half of a GPU lowering. Every method that lowers an
/// op may assume that `checkOp` accepted it.
class GPUTargetInfo {
public:
  virtual ~GPUTargetInfo();

  //===--------------------------------------------------------------------===//
  // Naming, legality, module
  //===--------------------------------------------------------------------===//

  /// The target's name in diagnostics ("nvptx", "amdgcn").
  virtual StringRef name() const = 0;
  /// " is not supported yet on <name>", the tail of refusals.
  std::string notSupported() const;
  /// Marks the vendor dialect(s) legal in the conversion.
  virtual void addLegalDialects(ConversionTarget &target) const = 0;
  /// Rejects, with a located error, an op this target cannot lower
  /// faithfully (the shared checks ran before).
  virtual LogicalResult checkOp(Operation *op) const = 0;
  /// Last touches on the lowered module (the chip, a target triple).
  virtual void finalizeModule(ModuleOp module) const = 0;

  //===--------------------------------------------------------------------===//
  // Memory model
  //===--------------------------------------------------------------------===//

  /// The LLVM address space of a PTX state space, or none. The default is
  /// the numbering NVPTX and AMDGPU share: generic 0, global 1, shared 3,
  /// const 4, local 5 (none for shared::cluster and param).
  virtual std::optional<unsigned> addressSpace(StateSpace s) const;
  /// The address space of allocas (function-scope `.local` variables).
  virtual unsigned allocaAddressSpace() const = 0;
  /// The LLVM `syncscope` of a PTX scope (absent means `gpu`, as in PTX).
  virtual StringRef syncScope(std::optional<MemScope> scope) const = 0;

  //===--------------------------------------------------------------------===//
  // Before the conversion
  //===--------------------------------------------------------------------===//

  /// The replacement of a `math` op that `wooly-expand-arith` made of an
  /// `.approx` instruction (`sin cos exp2 log2 rsqrt tanh`, scalar or
  /// vector); null to keep the op for the upstream math lowering. Returns
  /// failure after a located error when there is none.
  virtual FailureOr<Value> approxMath(Emitter &e, Operation *op) const = 0;
  /// The target's own instruction for an op that `wooly-expand-arith`
  /// marked with `kApproxAttr` (`form` is the attribute, e.g.
  /// "rcp.approx.ftz"; the op is an `arith.divf` or `math.sqrt`), or null
  /// to keep the correctly rounded op (within PTX's error bound). The
  /// default keeps it.
  virtual Value approxArith(Emitter &e, Operation *op, StringRef form) const {
    return {};
  }
  /// The value of a call of a `__wooly_*` helper of `wooly-expand-arith`;
  /// failure after a located error when the target has no exact lowering.
  virtual FailureOr<Value> helperCall(Emitter &e, func::CallOp call) const = 0;

  //===--------------------------------------------------------------------===//
  // Functions
  //===--------------------------------------------------------------------===//

  /// Marks `fn`, lowered from kernel `op`, as a kernel with its launch
  /// bounds (`.maxntid`, `.reqntid`, ...).
  virtual void markKernel(OpBuilder &b, LLVM::LLVMFuncOp fn,
                          FuncOp op) const = 0;

  //===--------------------------------------------------------------------===//
  // The ops whose meaning is the machine's own (WOOLY_GPU_TARGET_OPS): one
  // `lower` each, which rewrites the op. The default refuses the op with a
  // located "not supported" error; a target overrides what it lowers (and
  // should refuse the rest in `checkOp` already, before any rewriting).
  //===--------------------------------------------------------------------===//

#define WOOLY_GPU_LOWER_DEFAULT(Op)                                            \
  virtual LogicalResult lower(Op op, Op::Adaptor adaptor,                      \
                              ConversionPatternRewriter &rw) const;
  WOOLY_GPU_TARGET_OPS(WOOLY_GPU_LOWER_DEFAULT)
#undef WOOLY_GPU_LOWER_DEFAULT
};

/// Adds the patterns of the shared lowering and of `target`'s ops.
void populateGPULoweringPatterns(const LLVMTypeConverter &converter,
                                 RewritePatternSet &patterns,
                                 LoweringState &state,
                                 const GPUTargetInfo &target);

/// Lowers a module of Wooly kernels (after `wooly-expand-arith`) for
/// `target`: checks, `.approx` math and helper calls, globals, then the
/// dialect conversion to LLVM plus the target's dialect.
LogicalResult runGPULowering(ModuleOp module, const GPUTargetInfo &target);

} // namespace mlir::wooly::gpu

#endif // WOOLY_LIB_CONVERSION_WOOLYCOMMON_GPULOWERING_H
