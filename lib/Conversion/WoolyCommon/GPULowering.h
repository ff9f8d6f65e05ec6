//===- GPULowering.h - Wooly to LLVM for any GPU ---------------*- C++ -*-===//
//
// Internal to lib/Conversion: what the GPU targets of the shared lowering
// (LLVMLowering.h) have in common, shared by `convert-wooly-to-nvvm` and
// `convert-wooly-to-rocdl`: `GPUTargetInfo`, the `TargetInfo` of a machine
// with address spaces (an address in space S is an `inttoptr` to the
// target's pointer type of S; `cvta` is an `addrspacecast`; kernels take
// their parameters by value), and the steps that run before the shared
// lowering on a GPU: checks of what no GPU lowers faithfully, the target's
// `.approx` math and the lowering of `__wooly_*` helper calls. A target
// supplies address-space numbers, scope names, kernel marking, refusals
// (`checkOp`) and the `lower` overloads of the machine's own ops.
//
// Kept out of include/ because it needs the LLVM dialect; it includes no
// vendor dialect (NVVM, ROCDL).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_CONVERSION_WOOLYCOMMON_GPULOWERING_H
#define WOOLY_LIB_CONVERSION_WOOLYCOMMON_GPULOWERING_H

#include "LLVMLowering.h"

#include <optional>
#include <string>

namespace mlir {
namespace func {
class CallOp;
} // namespace func
} // namespace mlir

namespace mlir::wooly::gpu {

using common::Emitter;
using common::LoweringState;

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

/// A directed rounding: toward zero (`.rz`), down (`.rm`) or up (`.rp`).
enum class Directed { TowardZero, Down, Up };

/// `__wooly_cvt_f64_{bf16,f16}_{rz,rm,rp}` of any f64 `x` with plain IEEE
/// operations (`half` is bf16 or f16): `x` rounded to f32, then to `half`,
/// each to nearest and stepped back one unit where that went the wrong way
/// for `d`. Directed roundings compose exactly through f32 (its values
/// include every `half`, and its range covers theirs), so this is the one
/// rounding of `x`. The result's bits in an i32 (NaN: the canonical 0x7fff).
Value f64ToHalfDirected(Emitter &e, Value x, Type half, Directed d);

/// The value of a call of `helper` if it is one of
/// `__wooly_cvt_f64_{bf16,f16}_{rz,rm,rp}` (of `x`), else null.
Value lowerDirectedHalfHelper(Emitter &e, StringRef helper, Value x);

/// The vendor-specific half of a GPU lowering (the GPU half of the shared
/// lowering's hooks is defined once here). Every method that lowers an op
/// may assume that `checkOp` accepted it.
class GPUTargetInfo : public common::TargetInfo {
public:
  ~GPUTargetInfo() override;

  /// Rejects, with a located error, an op this target cannot lower
  /// faithfully (the shared checks ran before).
  virtual LogicalResult checkOp(Operation *op) const = 0;

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

  /// Whether a kernel's byte-array parameters (`.param .align A .b8 p[N]`)
  /// are passed `byval` (a pointer to the parameter's `[N x i8]`, which the
  /// code generator declares with exactly N bytes) rather than as a vector
  /// value, whose size the data layout rounds up to a power of two (moving
  /// every later parameter away from CUDA's layout). The default: vectors
  /// aligned to A.
  virtual bool byteArrayParamsByVal() const { return false; }

  // The GPU half of the shared lowering's hooks.
  SmallVector<Type> functionArguments(FuncOp op) const override;
  void finishKernel(OpBuilder &b, LLVM::LLVMFuncOp fn, FuncOp op,
                    const LoweringState &state) const override;
  SmallVector<Value> bodyArguments(Emitter &e, FuncOp op, Block *entry,
                                   const LoweringState &state) const override;
  void finishEntry(Emitter &e, FuncOp op, LLVM::LLVMFuncOp fn, Block *entry,
                   LoweringState &state) const override;
  FailureOr<common::LoweredGlobal> createGlobal(OpBuilder &b, GlobalOp g,
                                                uint64_t align) const override;
  FailureOr<Value> initializerAddress(OpBuilder &b, GlobalOp g, StringRef sym,
                                      Type elem,
                                      const LoweringState &s) const override;
  FailureOr<Value> localAddress(Emitter &e, AddressOfOp op,
                                Value slot) const override;
  FailureOr<Value> symbolAddress(Emitter &e, AddressOfOp op,
                                 const LoweringState &s) const override;
  FailureOr<Value> paramAddress(Emitter &e, ParamAddressOp op,
                                LLVM::LLVMFuncOp fn,
                                uint64_t offset) const override;
  FailureOr<Value> cvta(Emitter &e, CvtaOp op, Value addr) const override;
  FailureOr<Value> accessPointer(ConversionPatternRewriter &rw, Operation *op,
                                 StateSpace space, Value addr, uint64_t size,
                                 unsigned kind) const override;

private:
  /// For each lowered kernel that takes a parameter's address
  /// (`wooly.param_address`): a copy of its parameter buffer, an alloca
  /// in the entry block (the param state space is not addressable on a GPU
  /// target, so param addresses are generic addresses of this copy).
  mutable DenseMap<Operation *, Value> paramCopies;
};

/// Prepares a module of Wooly kernels (after `wooly-expand-arith`) for
/// `target`: checks, `.approx` math and helper calls, then the shared
/// preparation (`common::prepareLowering`).
FailureOr<std::unique_ptr<WoolyLLVMLowering>>
prepareGPULowering(ModuleOp module, std::unique_ptr<GPUTargetInfo> target);

} // namespace mlir::wooly::gpu

#endif // WOOLY_LIB_CONVERSION_WOOLYCOMMON_GPULOWERING_H
