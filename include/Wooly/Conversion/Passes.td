//===- Passes.td - Wooly conversion passes -----------------*- tablegen -*-===//
//
// Lowerings out of the Wooly dialect.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_CONVERSION_PASSES
#define WOOLY_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def WoolyExpandArith : Pass<"wooly-expand-arith", "ModuleOp"> {
  let summary = "Expand Wooly's pure computation ops into arith/math/vector";
  let description = [{
    Rewrites the Wooly ops that compute a value without touching memory or
    other threads (integer bit manipulation such as `bfe`, `prmt`, `lop3`,
    `shf`; PTX-clamped shifts and total division; `cvt` with rounding and
    saturation; floating-point ops with `.ftz`, `.sat`, directed rounding and
    `.approx`; `pack`/`unpack`/`bitcast`/`extract_bytes`/`insert_bytes`) into
    upstream `arith`, `math` and `vector` ops with exactly PTX's semantics.
    This expansion is shared by every target (`lib/Conversion/WoolyCommon`).
    Where a target has no instruction for a semantics (directed rounding on
    the host), the expansion calls a runtime helper `__wooly_*` declared as
    a private `func.func`.
  }];
  let dependentDialects = ["arith::ArithDialect", "math::MathDialect",
                           "vector::VectorDialect", "func::FuncDialect"];
}

def ConvertWoolyToLLVM : Pass<"convert-wooly-to-llvm", "ModuleOp"> {
  let summary = "Lower Wooly IR to the LLVM dialect for the host CPU backend";
  let description = [{
    Lowers a module of Wooly kernels (after `wooly-expand-arith`) to the LLVM
    dialect for execution by the CPU SIMT runtime (`lib/Runtime/CPU`).
    Every function takes a pointer to the thread context
    (`WoolyThreadCtx`, `include/Wooly/Runtime/CPU/ABI.h`) as its first
    argument; a kernel `@k` becomes `@__wooly_kernel_k(ctx, params)`, which
    reads its parameters from the CUDA parameter buffer. Special registers
    are read from the context; shared memory is addressed relative to the
    block's shared window; every global, const and generic access is checked
    against the live allocations through a per-access-site cache (a miss
    calls the runtime, which reports an out-of-bounds access as a launch
    error). Barriers and warp collectives call the runtime, which schedules
    the block's threads as fibers.
  }];
  let dependentDialects = ["LLVM::LLVMDialect"];
  let options = [
    Option<"boundsChecks", "bounds-checks", "bool", /*default=*/"true",
           "Check every global/const/generic access against the live "
           "allocations (an out-of-bounds access becomes a launch error)">,
  ];
}

def ConvertWoolyToNVVM : Pass<"convert-wooly-to-nvvm", "ModuleOp"> {
  let summary = "Lower Wooly IR to the LLVM and NVVM dialects for NVPTX";
  let description = [{
    Lowers a module of Wooly kernels (after `wooly-expand-arith`) to the LLVM
    and NVVM dialects with PTX's semantics, for LLVM's NVPTX backend. Kernels
    become `llvm.func`s with `nvvm.kernel` taking their parameters by value;
    `.maxntid`/`.reqntid` become `nvvm.maxntid`/`nvvm.reqntid`. Variables
    become globals in NVPTX's address spaces (global 1, shared 3, const 4;
    function-scope `.local` variables are allocas), and integer addresses
    are those of the variable's own state space, as in PTX. Loads, stores
    and atomics keep their volatility, order and scope (`syncscope`).
    Special registers, barriers (with reduction), `isspacep`, `exit`, warp
    collectives, `cp.async`, `ldmatrix`, `mma` and `wmma` map to NVVM ops
    and intrinsics; `.approx` transcendentals and the directed-rounding
    helpers `__wooly_*` of `wooly-expand-arith` map to the matching NVVM
    intrinsics. The lowering is shared with `convert-wooly-to-rocdl`
    (lib/Conversion/WoolyCommon); this pass supplies NVPTX's target info.
    Anything without a faithful lowering yet (parameter addresses, some
    shapes of `mma`/`wmma`, ...) is a located "not supported yet on nvptx"
    error.
  }];
  let dependentDialects = ["LLVM::LLVMDialect", "NVVM::NVVMDialect"];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "The target GPU (sm_XX)">,
  ];
}

def ConvertWoolyToROCDL : Pass<"convert-wooly-to-rocdl", "ModuleOp"> {
  let summary = "Lower Wooly IR to the LLVM and ROCDL dialects for AMDGPU";
  let description = [{
    Lowers a module of Wooly kernels (after `wooly-expand-arith`) to the LLVM
    and ROCDL dialects with PTX's semantics, for LLVM's AMDGPU backend
    (gfx90a, gfx942; 64-lane waves). The lowering is shared with
    `convert-wooly-to-nvvm` (lib/Conversion/WoolyCommon); kernels become
    `llvm.func`s with `rocdl.kernel` taking their parameters by value;
    `.reqntid`/`.maxntid` become `rocdl.reqd_work_group_size` and
    `rocdl.flat_work_group_size`. Variables live in AMDGPU's address spaces
    (global 1, LDS 3, constant 4, private 5). A PTX warp is one 32-lane half
    of a wave: `%laneid`, `shfl.sync`, `vote.sync`, `activemask`,
    `redux.sync` and `match.sync` act within the thread's half. `bar.sync 0`
    is `s_barrier` with workgroup fences; `cp.async` is a synchronous copy;
    `tanh.approx` calls ocml's `__ocml_tanh_*`. What has no faithful AMD
    lowering (matrix ops, named barriers, `shared::cluster`, calls of
    external functions such as `vprintf`, some rounding helpers, ...) is a
    located error.
  }];
  let dependentDialects = ["LLVM::LLVMDialect", "ROCDL::ROCDLDialect"];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"gfx942\"",
           "The target GPU (gfx90a or gfx942)">,
  ];
}

#endif // WOOLY_CONVERSION_PASSES
