//===- LLVMLowering.h - Wooly to LLVM, for every target --------*- C++ -*-===//
//
// Internal to lib/Conversion: the one lowering of Wooly IR to the LLVM
// dialect, shared by `convert-wooly-to-llvm` (the host CPU backend),
// `convert-wooly-to-nvvm` and `convert-wooly-to-rocdl`. What differs between
// targets sits behind the abstract `TargetInfo`. A lowering is made by
// `prepareLowering(module, info)` (the GPUs' by `gpu::prepareGPULowering`,
// which first runs the checks and rewrites that only GPUs need; see
// GPULowering.h) and applied by `applyLowering`: the public
// `WoolyLLVMLowering` API of Wooly/Conversion/Passes.h, on which the passes
// are thin.
//
// The shared part owns: the type conversion and the pass skeleton (module
// preparation, dialect conversion with the upstream arith/cf/func/math/
// vector patterns); functions, calls and returns; module-scope variables as
// LLVM globals with their initializers and `addressof`; parameter
// addresses; loads, stores, `cvta`, atomics, `red` and fences (with the
// target's pointers and `syncscope` names); traps, prefetches and cache
// policies; the CUDA parameter layout (`kernelParamLayout`, the one rule
// every part of Wooly uses). A target supplies its symbols, signatures,
// address spaces and pointers (the host checks every access there), scope
// names, kernel marking, and the lowering of the ops whose meaning is a
// machine's own (special registers, barriers, warp collectives, `cp.async`,
// matrix ops, `exit`, `isspacep`, ...): one `lower` overload per such op.
//
// Kept out of include/ because it needs the LLVM dialect; it includes no
// vendor dialect (NVVM, ROCDL).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_CONVERSION_WOOLYCOMMON_LLVMLOWERING_H
#define WOOLY_LIB_CONVERSION_WOOLYCOMMON_LLVMLOWERING_H

#include "Wooly/Conversion/Passes.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>

namespace mlir::wooly::common {

//===----------------------------------------------------------------------===//
// Value helpers
//===----------------------------------------------------------------------===//

/// Byte size of a value of type `t` in memory (an `i1` takes a byte).
uint64_t byteSize(Type t);

/// The LLVM atomic ordering of a PTX memory order (relaxed by default).
LLVM::AtomicOrdering ordering(std::optional<MemOrder> sem);

/// The `atomicrmw` operation of a PTX atomic op (`cas` is a `cmpxchg`; it
/// maps to `xchg` here only so that the switch is total).
LLVM::AtomicBinOp atomicBinOp(AtomicOp op);

/// The initializer of a global whose `init` is dense elements, padded with
/// zeros to `count` elements (`{1.0}` for `f32 a[4]`); null otherwise.
Attribute denseInitializer(GlobalOp g, uint64_t count);

/// Replaces `op` with the results of a lowered call: the call's result, or
/// the fields of the struct it returns when `op` has several results.
void replaceWithCallResults(ConversionPatternRewriter &rw, Operation *op,
                            LLVM::CallOp call);

/// The LLVM result type of a function or call with `results`: void, the
/// one result, or a literal struct of them.
Type resultTypeOf(MLIRContext *ctx, TypeRange results);

/// Builds the lowered code of one op at one location.
struct Emitter {
  OpBuilder &rw;
  Location loc;

  /// `i8`.
  Type i8() { return rw.getI8Type(); }
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
  /// The `i64` constant `v`.
  Value c64(uint64_t v) { return cst(i64(), v); }
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
  /// `p` moved by `byteOffset` bytes (`p` itself for 0).
  Value gep(Value p, int64_t byteOffset) {
    if (byteOffset == 0)
      return p;
    return LLVM::GEPOp::create(rw, loc, p.getType(), i8(), p,
                               ArrayRef<LLVM::GEPArg>{int32_t(byteOffset)});
  }
  /// `p` moved by the integer `byteOffset` bytes.
  Value gep(Value p, Value byteOffset) {
    return LLVM::GEPOp::create(rw, loc, p.getType(), i8(), p,
                               ArrayRef<LLVM::GEPArg>{byteOffset});
  }
  /// Calls function `fn` (no result when `result` is null).
  Value call(StringRef fn, Type result, ValueRange args);
  /// Calls the LLVM intrinsic `name` (no result when `result` is null).
  Value intrinsic(StringRef name, Type result, ValueRange args);
  /// Creates the registered op `name` (a vendor dialect's, such as
  /// `nvvm.read.ptx.sreg.tid.x` or `rocdl.workitem.id.x`) with one result of
  /// type `result` (none when null); null when no such op is registered.
  Value namedOp(StringRef name, Type result, ValueRange operands = {});
};

/// The special registers whose value follows from the lane on a target that
/// runs each block as a cluster of one CTA (the host and AMD GPUs):
/// `%cluster_ctaid`/`%cluster_ctarank` (0), `%cluster_nctaid`/
/// `%cluster_nctarank` (1), `%warpsize` (32) and the lane masks, of the
/// `i32` that `lane` emits (only when one is needed). Null for the others.
Value derivedSReg(Emitter &e, SpecialReg reg, llvm::function_ref<Value()> lane);

//===----------------------------------------------------------------------===//
// The target
//===----------------------------------------------------------------------===//

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
};

/// The LLVM global of a module-scope variable (`TargetInfo::createGlobal`):
/// none, a declaration, or a definition (which the shared lowering fills
/// unless it has a dense initializer).
struct LoweredGlobal {
  LLVM::GlobalOp op;
  bool declaration = false;
};

/// How a memory access uses its bytes (`TargetInfo::accessPointer`).
enum AccessKind : unsigned { kAccessRead = 1, kAccessWrite = 2 };

/// Applies `X` to each Wooly op whose lowering is the target's own.
#define WOOLY_TARGET_OPS(X)                                                    \
  X(ExitOp)                                                                    \
  X(BrkptOp)                                                                   \
  X(IsSpacePOp)                                                                \
  X(SRegOp)                                                                    \
  X(EnvRegOp)                                                                  \
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
  X(WmmaStoreOp)                                                               \
  X(TexOp)                                                                     \
  X(Tld4Op)                                                                    \
  X(TexQueryOp)                                                                \
  X(SuldOp)                                                                    \
  X(SustOp)                                                                    \
  X(SuredOp)                                                                   \
  X(MbarrierInitOp)                                                            \
  X(MbarrierInvalOp)                                                           \
  X(MbarrierUpdateOp)                                                          \
  X(MbarrierWaitOp)                                                            \
  X(MbarrierPendingCountOp)                                                    \
  X(BulkCopyOp)                                                                \
  X(BulkCommitOp)                                                              \
  X(BulkWaitOp)                                                                \
  X(AsyncFenceOp)                                                              \
  X(GridDepControlOp)                                                          \
  X(ElectOp)                                                                   \
  X(StMatrixOp)

/// Declares, in a `TargetInfo` subclass, the override of `lower` for `Op`.
#define WOOLY_LOWER_OVERRIDE(Op)                                               \
  LogicalResult lower(Op op, Op::Adaptor adaptor,                              \
                      ConversionPatternRewriter &rw) const override;

/// The target-specific half of the lowering. Hooks that lower an op may
/// return failure only after a located error.
class TargetInfo {
public:
  virtual ~TargetInfo();

  //===--------------------------------------------------------------------===//
  // Naming, legality, module
  //===--------------------------------------------------------------------===//

  /// The target's name in diagnostics ("host", "nvptx", "amdgcn").
  virtual StringRef name() const = 0;
  /// " is not supported yet on <name>", the tail of refusals.
  std::string notSupported() const;
  /// Marks the target's own dialect(s) legal in the conversion.
  virtual void addLegalDialects(ConversionTarget &target) const {}
  /// Adds the target's own patterns (beyond `lower`) and upstream ones.
  virtual void populatePatterns(const LLVMTypeConverter &converter,
                                RewritePatternSet &patterns) const {}
  /// Before the module's variables are lowered.
  virtual LogicalResult beginModule(ModuleOp module) const { return success(); }
  /// After the variables and parameter layouts, before the conversion;
  /// `b` inserts at the module level (after the last global made, or at the
  /// start of the module after a global with an initializer region).
  virtual LogicalResult prepareModule(ModuleOp module, OpBuilder &b,
                                      const LoweringState &state) const {
    return success();
  }
  /// Last touches on the lowered module (the chip, a target triple).
  virtual void finalizeModule(ModuleOp module) const {}

  //===--------------------------------------------------------------------===//
  // Symbols and functions
  //===--------------------------------------------------------------------===//

  /// The LLVM symbol of Wooly function `name` (a kernel when `kernel`).
  virtual std::string functionSymbol(StringRef name, bool kernel) const {
    return name.str();
  }
  /// The LLVM symbol of module-scope variable `name`.
  virtual std::string globalSymbol(StringRef name) const { return name.str(); }
  /// Whether external function declarations stay in the module.
  virtual bool keepsDeclarations() const { return true; }
  /// The linkage of lowered function `op`.
  virtual LLVM::Linkage functionLinkage(FuncOp op) const;
  /// The LLVM argument types of `op` (its parameters, after any the target
  /// adds).
  virtual SmallVector<Type> functionArguments(FuncOp op) const {
    return SmallVector<Type>(op.getArgumentTypes());
  }
  /// Marks `fn`, lowered from kernel `op`, as a kernel (with its launch
  /// bounds); before the shared metadata.
  virtual void markKernel(OpBuilder &b, LLVM::LLVMFuncOp fn,
                          FuncOp op) const = 0;
  /// After the shared metadata of kernel `fn`.
  virtual void finishKernel(OpBuilder &b, LLVM::LLVMFuncOp fn, FuncOp op,
                            const LoweringState &state) const {}
  /// The values of the body's arguments, emitted at the end of the new
  /// entry block (the default: the entry block's arguments).
  virtual SmallVector<Value> bodyArguments(Emitter &e, FuncOp op, Block *entry,
                                           const LoweringState &state) const {
    return SmallVector<Value>(entry->getArguments());
  }
  /// After the locals' allocas in the entry block of `fn`.
  virtual void finishEntry(Emitter &e, FuncOp op, LLVM::LLVMFuncOp fn,
                           Block *entry, LoweringState &state) const {}
  /// The arguments a call passes before the callee's own (the host's
  /// thread context).
  virtual SmallVector<Value> implicitArguments(Emitter &e,
                                               Operation *op) const {
    return {};
  }
  /// Lowers a direct call the target handles itself (`vprintf`, ...), or
  /// returns none to lower it as a call of `calleeSymbol`.
  virtual std::optional<LogicalResult>
  lowerSpecialCall(CallOp op, CallOp::Adaptor adaptor,
                   ConversionPatternRewriter &rw) const {
    return std::nullopt;
  }
  /// The symbol a direct call of `op` calls; failure after a located error.
  virtual FailureOr<std::string> calleeSymbol(CallOp op) const {
    return op.getCallee().str();
  }
  /// Checks an indirect call's callee before the call; failure after a
  /// located error.
  virtual LogicalResult checkIndirectCall(ConversionPatternRewriter &rw,
                                          CallIndirectOp op,
                                          Value callee) const {
    return success();
  }
  /// Ends the thread's launch with an error (`trap`); an `unreachable`
  /// follows.
  virtual void emitTrap(ConversionPatternRewriter &rw, Operation *op) const;

  //===--------------------------------------------------------------------===//
  // Variables and addresses
  //===--------------------------------------------------------------------===//

  /// The LLVM address space of a PTX state space, or none. The default is
  /// the numbering NVPTX and AMDGPU share: generic 0, global 1, shared 3,
  /// const 4, local 5 (none for shared::cluster and param).
  virtual std::optional<unsigned> addressSpace(StateSpace s) const;
  /// The address space of allocas (function-scope `.local` variables).
  virtual unsigned allocaAddressSpace() const = 0;
  /// The LLVM `syncscope` of a PTX scope (empty: the system).
  virtual StringRef syncScope(std::optional<MemScope> scope) const = 0;
  /// Creates the LLVM global of module-scope variable `g` (aligned to
  /// `align`), with its initializer attribute where it has a dense one;
  /// failure after a located error.
  virtual FailureOr<LoweredGlobal> createGlobal(OpBuilder &b, GlobalOp g,
                                                uint64_t align) const = 0;
  /// The value of the address of `sym` in an initializer of an element of
  /// type `elem` of variable `g`; failure after a located error.
  virtual FailureOr<Value> initializerAddress(OpBuilder &b, GlobalOp g,
                                              StringRef sym, Type elem,
                                              const LoweringState &s) const = 0;
  /// `addressof` a function-scope local variable, whose alloca is `slot`.
  virtual FailureOr<Value> localAddress(Emitter &e, AddressOfOp op,
                                        Value slot) const = 0;
  /// `addressof` a module-scope variable or a function.
  virtual FailureOr<Value> symbolAddress(Emitter &e, AddressOfOp op,
                                         const LoweringState &s) const = 0;
  /// `param_address` of the parameter at `offset` in kernel `fn`'s
  /// parameter buffer.
  virtual FailureOr<Value> paramAddress(Emitter &e, ParamAddressOp op,
                                        LLVM::LLVMFuncOp fn,
                                        uint64_t offset) const = 0;
  /// `cvta` of `addr`.
  virtual FailureOr<Value> cvta(Emitter &e, CvtaOp op, Value addr) const = 0;

  //===--------------------------------------------------------------------===//
  // Memory accesses
  //===--------------------------------------------------------------------===//

  /// The pointer through which an access (`kind`, an AccessKind mask) of
  /// `size` bytes at integer address `addr` in `space` goes; where the
  /// target checks accesses, the check is emitted first.
  virtual FailureOr<Value> accessPointer(ConversionPatternRewriter &rw,
                                         Operation *op, StateSpace space,
                                         Value addr, uint64_t size,
                                         unsigned kind) const = 0;
  /// Marks a lowered access to the kernel's memory (the host tells LLVM it
  /// does not alias runtime memory).
  virtual void markAccess(Operation *access) const {}
  /// Whether `.v2`/`.v4` accesses of scalars are one vector access (else
  /// one access per element).
  virtual bool vectorAccesses() const { return true; }
  /// Whether `ld.global.nc` is an invariant load.
  virtual bool invariantLoads() const { return true; }
  /// An atomic in shared memory, if the target has a cheaper one than an
  /// LLVM atomic: the old value; null for the LLVM atomic.
  virtual Value sharedAtomic(Emitter &e, AtomicOp kind, Value p,
                             ValueRange values) const {
    return {};
  }

  //===--------------------------------------------------------------------===//
  // The ops whose meaning is the machine's own (WOOLY_TARGET_OPS): one
  // `lower` each, which rewrites the op. The default refuses the op with a
  // located "not supported" error; a target overrides what it lowers (and
  // should refuse the rest before any rewriting, as the GPUs' `checkOp`).
  //===--------------------------------------------------------------------===//

#define WOOLY_LOWER_DEFAULT(Op)                                                \
  virtual LogicalResult lower(Op op, Op::Adaptor adaptor,                      \
                              ConversionPatternRewriter &rw) const;
  WOOLY_TARGET_OPS(WOOLY_LOWER_DEFAULT)
#undef WOOLY_LOWER_DEFAULT
};

/// Adds the patterns of the shared lowering and of `target`'s ops
/// (`state` and `target` must outlive them).
void populateWoolyToLLVMCommonPatterns(const LLVMTypeConverter &converter,
                                       RewritePatternSet &patterns,
                                       LoweringState &state,
                                       const TargetInfo &target);

/// A module's lowering (the public WoolyLLVMLowering): its target and the
/// state its patterns share.
class Lowering final : public WoolyLLVMLowering {
public:
  explicit Lowering(std::unique_ptr<TargetInfo> target)
      : target(std::move(target)) {}
  void configureTarget(ConversionTarget &conversionTarget) const override;
  void finalize(ModuleOp module) override;
  /// Adds the shared patterns, the target's and the upstream ones.
  void populatePatterns(const LLVMTypeConverter &converter,
                        RewritePatternSet &patterns) override;

private:
  std::unique_ptr<TargetInfo> target;
  LoweringState state;
  friend FailureOr<std::unique_ptr<WoolyLLVMLowering>>
  prepareLowering(ModuleOp module, std::unique_ptr<TargetInfo> target);
};

/// Prepares `module` (after `wooly-expand-arith`) for `target`: globals,
/// parameter layouts and the target's preparation; failure after located
/// errors.
FailureOr<std::unique_ptr<WoolyLLVMLowering>>
prepareLowering(ModuleOp module, std::unique_ptr<TargetInfo> target);

/// The conversion of a prepared module: all patterns, a full conversion,
/// then the target's finishing touches.
LogicalResult applyLowering(ModuleOp module, WoolyLLVMLowering &lowering);

} // namespace mlir::wooly::common

#endif // WOOLY_LIB_CONVERSION_WOOLYCOMMON_LLVMLOWERING_H
