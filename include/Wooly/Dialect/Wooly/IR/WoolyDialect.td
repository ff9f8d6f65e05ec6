//===- WoolyDialect.td - Wooly dialect definition ----------*- tablegen -*-===//
//
// The Wooly dialect: a vendor-neutral, exact representation of PTX kernels.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_DIALECT_TD
#define WOOLY_DIALECT_TD

include "mlir/IR/OpBase.td"

def Wooly_Dialect : Dialect {
  let name = "wooly";
  let cppNamespace = "::mlir::wooly";
  let summary = "Exact, vendor-neutral form of GPU kernels captured as PTX";
  let description = [{
    Wooly IR is the form in which a captured kernel is constrained, sliced,
    coalesced and fenced before it is lowered to NVVM, ROCDL or the host CPU.
    Every op computes bit-for-bit what the PTX instruction it was raised from
    computes on an NVIDIA GPU. Where an upstream op (`arith`, `math`, `cf`) has
    exactly the required semantics the importer uses it; otherwise a `wooly`
    op carries the PTX modifiers (rounding, flush-to-zero, saturation, state
    space, memory order, scope ...) as attributes printed by name.

    Addresses are integers (`i64`, or `i32` for 32-bit shared/local windows)
    and every memory op names its state space explicitly. Virtual registers
    are SSA values; predicates are `i1`; control flow uses `cf` blocks.

    A module raised from PTX carries the discardable attributes
    `wooly.ptx_version`, `wooly.target` and `wooly.address_size`.
  }];
  let useDefaultAttributePrinterParser = 0;
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect"];
}

#endif // WOOLY_DIALECT_TD
