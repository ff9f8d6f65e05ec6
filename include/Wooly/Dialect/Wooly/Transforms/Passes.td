//===- Passes.td - Wooly's sharing passes ------------------*- tablegen -*-===//
//
// The passes that let one GPU serve many tenants (DESIGN.md, "Passes").
//
// Launch parameters. A pass that needs values chosen at launch time appends
// parameters to the kernel, after the user's, each tagged with the argument
// attribute `wooly.launch_param = "<role>"`. The compile API reports the
// roles (`KernelInfo::paramRoles`) and `wooly::extendParams`
// (include/Wooly/Runtime/LaunchParams.h) fills them in the parameter buffer
// from the values a runtime supplies. Roles are documented with each pass.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_TRANSFORMS_PASSES
#define WOOLY_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def WoolyConstrain : Pass<"wooly-constrain", "ModuleOp"> {
  let summary = "Run each kernel on at most N physical blocks";
  let description = [{
    Rewrites every kernel so that a launch on any number N of physical
    blocks (chosen at launch time, 1-D) computes exactly what the original
    computes on its grid: each physical block loops over the virtual block
    ids `b, b + N, b + 2N, ...` below the virtual grid size; `%ctaid` and
    `%nctaid` read the virtual values; `ret`/`exit` continue with the next
    virtual block; a block barrier separates iterations when the kernel
    uses shared memory or barriers. Device functions are inlined first;
    kernels whose remaining calls read block ids, or that use constructs
    that make the transformation unsafe, are refused with a reason.
    Launch parameters (u32 each): `virtual_grid_x`, `virtual_grid_y`,
    `virtual_grid_z` (the original grid).
  }];
  let dependentDialects = ["arith::ArithDialect", "cf::ControlFlowDialect"];
}

def WoolySlice : Pass<"wooly-slice", "ModuleOp"> {
  let summary = "Run only virtual blocks [begin, end) of a launch, preemptibly";
  let description = [{
    Like `wooly-constrain`, but a launch executes only the virtual blocks
    with linear ids in `[slice_begin, slice_end)`, handed out one at a time
    from a counter in device memory; before taking the next block a
    physical block reads the preemption flag and stops when it is non-zero.
    When the launch ends, `slice_begin + *counter` (clamped to `slice_end`)
    is the first virtual block not executed: a new launch from there
    resumes the slice. Launch parameters: `virtual_grid_x/y/z` (u32),
    `slice_begin`, `slice_end` (u32), `slice_counter` (u64 device address
    of a u32, zero before the launch), `preempt_flag` (u64 device address
    of a u32, or 0 for none).
  }];
  let dependentDialects = ["arith::ArithDialect", "cf::ControlFlowDialect"];
}

def WoolyIsolate : Pass<"wooly-isolate", "ModuleOp"> {
  let summary = "Fence every global and generic access into the tenant's memory";
  let description = [{
    Software fault isolation for kernels of different tenants in one
    device context: every global and generic memory access (loads, stores,
    atomics, `cp.async`, vector accesses) is confined to the tenant's
    memory region given at launch time; see the pass's source for the
    policy (redirect or trap) and the launch parameters.
  }];
  let dependentDialects = ["arith::ArithDialect", "cf::ControlFlowDialect"];
}

#endif // WOOLY_TRANSFORMS_PASSES
