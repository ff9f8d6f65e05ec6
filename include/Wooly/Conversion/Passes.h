//===- Passes.h - Wooly conversion passes ------------------*- C++ -*-===//
//
// Declarations and registration of the passes that lower Wooly IR.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_CONVERSION_PASSES_H
#define WOOLY_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class ConversionTarget;
class LLVMTypeConverter;
class ModuleOp;
class RewritePatternSet;
namespace arith {
class ArithDialect;
} // namespace arith
namespace math {
class MathDialect;
} // namespace math
namespace vector {
class VectorDialect;
} // namespace vector
namespace func {
class FuncDialect;
} // namespace func
namespace LLVM {
class LLVMDialect;
} // namespace LLVM
namespace NVVM {
class NVVMDialect;
} // namespace NVVM
namespace ROCDL {
class ROCDLDialect;
} // namespace ROCDL

namespace wooly {

#define GEN_PASS_DECL
#include "Wooly/Conversion/Passes.h.inc"

/// Adds the patterns that expand Wooly's pure computation ops into
/// arith/math/vector (and `func.call`s of `__wooly_*` runtime helpers where
/// no upstream op has the semantics).
void populateWoolyExpandArithPatterns(RewritePatternSet &patterns);

/// The discardable attribute with which `wooly-expand-arith` marks the
/// correctly rounded op it emits for a PTX approximation that has no op of
/// its own (`div.approx`, `div.full`, `rcp.approx`, `sqrt.approx`, with
/// `.ftz` appended when flushing): a GPU lowering may emit the GPU's own
/// instruction instead, to get its exact bits.
inline constexpr llvm::StringLiteral kApproxAttr = "wooly.approx";

/// A module's lowering to the LLVM dialect for one target, for pipelines
/// that build their own conversion. `prepareWoolyTo{LLVM,NVVM,ROCDL}Lowering`
/// makes it and rewrites what is module-wide first (the module's variables
/// become LLVM globals; kernels' parameter layouts; the target's checks and
/// declarations); `populateWoolyTo{LLVM,NVVM,ROCDL}ConversionPatterns` adds
/// the patterns of every op (Wooly's, and upstream arith, cf, func, math
/// and vector), which refer to the lowering: it must outlive them. Then
/// `applyFullConversion` with a target that `configureTarget` set up, and
/// `finalize`. The passes `convert-wooly-to-*` are these steps.
///
/// What the preparation learned of the module (its kernels, variables and
/// functions) is what the patterns use: no other pass may run between the
/// preparation and the conversion, and a lowering is applied once. A
/// failed preparation may leave the module partly rewritten.
class WoolyLLVMLowering {
public:
  virtual ~WoolyLLVMLowering();
  /// Adds the patterns of every op (what the populate functions do).
  virtual void populatePatterns(const LLVMTypeConverter &converter,
                                RewritePatternSet &patterns) = 0;
  /// Marks legal what the lowering produces (LLVM and the target's
  /// dialects) and illegal what it removes.
  virtual void configureTarget(ConversionTarget &target) const = 0;
  /// The target's last touches on the converted module.
  virtual void finalize(ModuleOp module) = 0;
};

/// The host CPU backend's lowering of `module` (`convert-wooly-to-llvm`);
/// failure after located errors.
FailureOr<std::unique_ptr<WoolyLLVMLowering>>
prepareWoolyToLLVMLowering(ModuleOp module, bool boundsChecks = true);
/// NVPTX's lowering of `module` for `chip` (`sm_XX`).
FailureOr<std::unique_ptr<WoolyLLVMLowering>>
prepareWoolyToNVVMLowering(ModuleOp module, StringRef chip);
/// AMDGPU's lowering of `module` for `chip` (`gfx90a`, `gfx942`).
FailureOr<std::unique_ptr<WoolyLLVMLowering>>
prepareWoolyToROCDLLowering(ModuleOp module, StringRef chip);

/// Adds the patterns of `lowering`, made by prepareWoolyToLLVMLowering.
void populateWoolyToLLVMConversionPatterns(const LLVMTypeConverter &converter,
                                           RewritePatternSet &patterns,
                                           WoolyLLVMLowering &lowering);
/// Adds the patterns of `lowering`, made by prepareWoolyToNVVMLowering.
void populateWoolyToNVVMConversionPatterns(const LLVMTypeConverter &converter,
                                           RewritePatternSet &patterns,
                                           WoolyLLVMLowering &lowering);
/// Adds the patterns of `lowering`, made by prepareWoolyToROCDLLowering.
void populateWoolyToROCDLConversionPatterns(const LLVMTypeConverter &converter,
                                            RewritePatternSet &patterns,
                                            WoolyLLVMLowering &lowering);

#define GEN_PASS_REGISTRATION
#include "Wooly/Conversion/Passes.h.inc"

} // namespace wooly
} // namespace mlir

#endif // WOOLY_CONVERSION_PASSES_H
