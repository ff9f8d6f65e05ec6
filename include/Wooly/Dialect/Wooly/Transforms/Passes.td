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
    blocks (chosen at launch time, 1-D: a grid of (N, 1, 1)) computes
    exactly what the original computes on its grid: each physical block
    loops over the virtual block ids `b, b + N, b + 2N, ...` (64-bit) below
    the virtual grid size; `%ctaid`/`%clusterid` read the virtual id's
    components `(v % vx, v / vx % vy, v / (vx * vy))`, `%nctaid`/
    `%nclusterid` the virtual grid; `ret`/`exit` in the kernel continue with
    the next virtual block; `wooly.iteration_barrier` (where a thread that
    finished early counts as exited, as after its `ret`) separates
    iterations when the kernel uses shared memory (any `.shared`
    variable in the module), barriers or warp collectives. Device functions
    are not inlined (yet): kernels that call one that reads block ids or may
    `exit`, kernels with indirect calls or `%gridid`, and grid-wide
    synchronisation (calls into the CUDA device runtime's cooperative
    groups, or reads of `%envreg*`, the grid workspace of a cooperative
    launch) are refused with a located error. Not detected: a kernel in which some threads of a block
    leave while others later wait at a barrier (see Constrain.cpp).
    Launch parameters (u32 each): `virtual_grid_x`, `virtual_grid_y`,
    `virtual_grid_z` (the original grid; vx * vy * vz within CUDA's limits).
  }];
  let dependentDialects = ["arith::ArithDialect", "cf::ControlFlowDialect"];
}

def WoolySlice : Pass<"wooly-slice", "ModuleOp"> {
  let summary = "Run only virtual blocks [begin, end) of a launch, preemptibly";
  let description = [{
    Like `wooly-constrain`, but a launch executes only the virtual blocks
    with linear ids in `[slice_begin, slice_end)` (and below the grid's
    size), handed out one at a time: at the top of each iteration, after a
    barrier, thread (0,0,0) reads the preemption flag (when its address is
    not 0); if the flag is 0 it takes `idx = atom.global.add(*counter, 1)`;
    it publishes `slice_begin + idx`, or "stop" when preempted or past the
    end, through a `.shared` u32 the pass adds, and after a second barrier
    every thread reads it. A physical block that sees the flag set stops
    without taking an index, and a taken index is either executed in full
    or lies past the end; so after the launch the virtual blocks executed
    are exactly `[slice_begin, slice_begin + min(*counter, slice_end -
    slice_begin))`, and a new launch from there (counter zeroed again)
    resumes the slice. Launch parameters: `virtual_grid_x/y/z` (u32),
    `slice_begin`, `slice_end` (u32), `slice_counter` (u64 device address
    of a u32, zero before the launch), `preempt_flag` (u64 device address
    of a u32, or 0 for none). Refusals as for `wooly-constrain`. With the
    option `kernels` (`--wooly-slice="kernels=a,b"`) only the kernels named
    are sliced, the others stay as written (an unknown name is an error).
  }];
  let options = [
    ListOption<"kernels", "kernels", "std::string",
               "the kernels to slice (default: all)">
  ];
  let dependentDialects = ["arith::ArithDialect", "cf::ControlFlowDialect"];
}

def WoolyLowerIterationBarrier
    : Pass<"wooly-lower-iteration-barrier", "ModuleOp"> {
  let summary = "Express wooly.iteration_barrier with barriers and counts";
  let description = [{
    Rewrites `wooly.iteration_barrier` (left by `wooly-constrain` and
    `wooly-slice`) into ordinary Wooly ops that every target lowers: block
    barriers become non-aligned `bar_red popc 0` and a thread that finished
    its virtual block loops at barrier 0 reporting itself finished until
    all threads of the block are, so it releases the others' barriers as
    an exited thread would, with no drift of barrier phases. Run by the GPU
    targets before lowering; on the CPU backend (`--passes=...`) it runs the
    very code a GPU runs. Refused with a located error: named or counted
    barriers, `bar.red`, device functions with barriers, and warp
    collectives that lanes of a warp may skip while others finish their
    virtual block (a divergence analysis decides; see
    LowerIterationBarrier.cpp). Kernels accepted on the assumption that the
    block's rows are whole warps trap at entry when they are not.
  }];
  let dependentDialects = ["arith::ArithDialect", "cf::ControlFlowDialect"];
}

def WoolyIsolate : Pass<"wooly-isolate", "ModuleOp"> {
  let summary = "Fence every global and generic access into the tenant's memory";
  let description = [{
    Software fault isolation for kernels of different tenants in one
    device context: every global, generic and const memory access (loads,
    stores incl. vectors, atomics, `red`, `cp.async` sources, wmma
    loads/stores) is confined to the tenant's region
    `[isolate_base, isolate_base + isolate_size)`. Policy: redirect, never
    trap: an access of `n` bytes becomes
    `base + minu(addr - base, size - n)` (unchanged when inside the region,
    else the region's last `n` bytes). Accesses through the address of a
    module variable or kernel parameter are clamped into that object;
    generic addresses made from shared/local addresses become accesses to
    that space. Device functions get the region as two trailing arguments;
    indirect calls and kernels that read `%envreg*` (a cooperative
    launch's grid workspace lies outside the region) are refused. Launch parameters (u64 each):
    `isolate_base`, `isolate_size` (at least 256 bytes). Details and
    limitations: lib/Dialect/Wooly/Transforms/Isolate.cpp.
  }];
  let dependentDialects = ["arith::ArithDialect", "cf::ControlFlowDialect"];
}

def WoolyContain : Pass<"wooly-contain", "ModuleOp"> {
  let summary = "A tenant's traps, failed assertions, misaligned accesses "
                "and runaway loops end its launch, not the device";
  let description = [{
    Every kernel takes one more launch parameter, role `launch_status` (u64:
    the device address of a zeroed 64-byte status record, or 0 for none);
    device functions take it as a trailing argument, passed on by every
    call. With `watchdog`, every loop head (the target of a back edge of the
    control-flow graph) reads the status (volatile) and the thread exits
    when it is not 0: the host stops a kernel past its time budget, and one
    thread's trap stops the others. With `traps`, `trap`, `brkpt` and calls
    of `__assertfail` record their code (2, 3, 4: the first fault of the
    launch wins, with the assertion's line, message, file and function and
    the thread's ids) and exit the thread instead of ending the device
    context. With `alignment`, a load, store or atomic whose address is not
    a multiple of its size records code 5 and the address instead of
    running. With status address 0 everything runs as written. Refused with
    a located error: indirect calls. The record's layout:
    lib/Dialect/Wooly/Transforms/Contain.cpp.

    ```mlir
    ^loop(%i: i32):
      cf.cond_br %has_status, ^check, ^body
    ^check:
      %v = wooly.ld global volatile %status : i64 -> i32
      ...  // exit when %v != 0, else ^body
    ```
  }];
  let options = [
    Option<"watchdog", "watchdog", "bool", /*default=*/"true",
           "Loop heads poll the status and exit when it is set">,
    Option<"traps", "traps", "bool", /*default=*/"true",
           "trap, brkpt and __assertfail record their code and exit">,
    Option<"alignment", "alignment", "bool", /*default=*/"true",
           "Misaligned loads, stores and atomics record code 5 and exit">,
  ];
  let dependentDialects = ["arith::ArithDialect", "cf::ControlFlowDialect"];
}

def WoolyPrintKernelAnalysis : Pass<"wooly-print-kernel-analysis", "ModuleOp"> {
  let summary = "Report the kernel analyses as remarks (for tests and people)";
  let description = [{
    Emits one remark per kernel with what `analyzeKernel`
    (include/Wooly/Dialect/Wooly/Analysis/KernelAnalysis.h) finds: the
    read-only pointer parameters (their buffers may be deduplicated), the
    written and escaping ones, static shared memory, the register estimate,
    barrier and warp-collective use, and the cost hint.
  }];
}

def WoolyCoalesce : Pass<"wooly-coalesce", "ModuleOp"> {
  let summary = "Fuse launches of several kernels into one dispatching kernel";
  let description = [{
    Adds the kernel `@__wooly_coalesced` (the named kernels are kept) that
    runs, in one launch, several "parts": launches of the kernels named by
    the option `kernels` (`--wooly-coalesce="kernels=vec_add,saxpy"`; a
    name may repeat, the kernel index of a part counts the distinct names
    in first-appearance order). Its one parameter, role `coalesce_table`
    (u64), is the device address of the dispatch table (layout and launch
    shape helpers: include/Wooly/Runtime/CoalesceTable.h): a u32 part
    count, a reserved u32, then per part (48 bytes) the u32 kernel index,
    first physical block (linear), grid x/y/z, block x/y/z, dynamic shared
    bytes, a reserved u32, and the u64 device address of the part's
    parameter buffer (the original kernel's CUDA layout). Launch it on a
    1-D grid covering every part's blocks, a 1-D block of the largest
    part's threads and the largest part's dynamic shared memory.

    Each physical block scans the table for the part whose block range
    holds `%ctaid.x` (none: it exits); its threads compute the part's
    virtual `%ctaid` and, from `%tid.x` (the linear thread id, so lanes and
    warps are numbered as in the part's own launch), the part's `%tid`;
    threads at or past the part's block size exit at once (exited threads
    take no part in barriers). The others load the kernel's parameters from
    the part's buffer and call `@__wooly_part_<name>`, a device-function
    clone of the kernel whose `%tid/%ntid/%ctaid/%nctaid/%clusterid/
    %nclusterid/%dynamic_smem_size` reads are trailing arguments (13 u32:
    ctaid, nctaid, tid, ntid x/y/z, dynamic shared bytes).

    Shared memory: every module `.shared` variable coexists in the fused
    kernel (the compile API's `staticSharedBytes` of `__wooly_coalesced`
    counts what the parts' kernels name). Refused with a located error:
    unknown names or non-kernels, kernels that take parameters by address
    (`wooly.param_address`), byte-array parameters, `.reqntid`, launch
    parameters of other passes, `%gridid`/`%total_smem_size`, indirect
    calls, and calls to device functions that read the registers above.
    Function-scope `.local` variables of a kernel are copied for its part
    function (`<name>___wooly_part_<kernel>`). Warp collectives of a part whose block size
    is not a multiple of 32: its last warp's missing lanes are exited lanes
    instead of absent ones (not checked; the CUDA rules make full-mask
    collectives there undefined in the original too).
  }];
  let options = [
    ListOption<"kernels", "kernels", "std::string",
               "the kernels the fused kernel dispatches to (repeats allowed)">
  ];
  let dependentDialects = ["arith::ArithDialect", "cf::ControlFlowDialect"];
}

#endif // WOOLY_TRANSFORMS_PASSES
