// RUN: wooly-opt %s --convert-wooly-to-rocdl --split-input-file --verify-diagnostics

// ldmatrix, mma.sync and wmma have no AMD lowering yet (never miscompiled).
wooly.func @k(%p: i64 {wooly.type = "u64"}, %s: i32 {wooly.type = "u32"}, %a: i32 {wooly.type = "u32"}, %f: f32 {wooly.type = "f32"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.ldmatrix' op has no AMD equivalent yet}}
  %l1 = wooly.ldmatrix %s : i32 -> i32
  // expected-error @+1 {{'wooly.mma_sync' op has no AMD equivalent yet}}
  %d:4 = wooly.mma_sync "m16n8k16" row col f32 f16 f16 f32 (%a, %a, %a, %a) (%a, %a) (%f, %f, %f, %f) : (i32, i32, i32, i32) (i32, i32) (f32, f32, f32, f32) -> f32, f32, f32, f32
  %st = arith.constant 16 : i32
  // expected-error @+1 {{'wooly.wmma_load' op has no AMD equivalent yet}}
  %wc:8 = wooly.wmma_load c row "m16n16k16" f32 global %p, %st : i64 -> f32, f32, f32, f32, f32, f32, f32, f32
  // expected-error @+1 {{'wooly.wmma_store' op has no AMD equivalent yet}}
  wooly.wmma_store row "m16n16k16" f32 global %p, %st (%wc#0, %wc#1, %wc#2, %wc#3, %wc#4, %wc#5, %wc#6, %wc#7) : i64, f32, f32, f32, f32, f32, f32, f32, f32
  wooly.ret
}

// -----

// wmma.mma likewise.
wooly.func @k(%a: i32 {wooly.type = "u32"}, %f: f32 {wooly.type = "f32"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.wmma_mma' op has no AMD equivalent yet}}
  %wd:8 = wooly.wmma_mma row col "m16n16k16" f32 f16 f16 f32 (%a, %a, %a, %a, %a, %a, %a, %a) (%a, %a, %a, %a, %a, %a, %a, %a) (%f, %f, %f, %f, %f, %f, %f, %f) : (i32, i32, i32, i32, i32, i32, i32, i32) (i32, i32, i32, i32, i32, i32, i32, i32) (f32, f32, f32, f32, f32, f32, f32, f32) -> f32, f32, f32, f32, f32, f32, f32, f32
  wooly.ret
}

// -----

// gfx9 has no clusters: no shared::cluster state space.
wooly.func @k(%s: i32 {wooly.type = "u32"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.ld' op in the shared::cluster state space has no AMD equivalent yet}}
  %v = wooly.ld shared_cluster %s : i32 -> i32
  wooly.ret
}

// -----

// isspacep.const cannot be told apart from global memory on AMD.
wooly.func @k(%g: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.isspacep' op isspacep.const is not supported yet on amdgcn}}
  %c = wooly.isspacep const %g : i64
  wooly.st global %g, %c : i64, i1
  wooly.ret
}

// -----

// Special registers without an AMD counterpart yet.
wooly.func @k(%p: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.sreg' op special register %smid is not supported yet on amdgcn}}
  %0 = wooly.sreg smid : i32
  // expected-error @+1 {{'wooly.sreg' op special register %nsmid is not supported yet on amdgcn}}
  %1 = wooly.sreg nsmid : i32
  // expected-error @+1 {{'wooly.sreg' op special register %nwarpid is not supported yet on amdgcn}}
  %2 = wooly.sreg nwarpid : i32
  // expected-error @+1 {{'wooly.sreg' op special register %gridid is not supported yet on amdgcn}}
  %3 = wooly.sreg gridid : i64
  wooly.ret
}

// -----

// gfx9's s_barrier waits for the whole work-group: no thread counts, no
// arrive-only (producer/consumer barriers), for bar.red too.
wooly.func @k(%c: i1) attributes {kernel} {
  %one = arith.constant 1 : i32
  %n = arith.constant 64 : i32
  // expected-error @+1 {{'wooly.barrier' op a barrier with a thread count has no AMD equivalent yet}}
  wooly.barrier %one, %n
  // expected-error @+1 {{'wooly.barrier' op bar.arrive has no AMD equivalent yet}}
  wooly.barrier %one, %n arrive aligned
  // expected-error @+1 {{'wooly.bar_red' op a barrier with a thread count has no AMD equivalent yet}}
  %s = wooly.bar_red or %one, %c count %n aligned : i1
  // The lanes of a wave may arrive from different instructions.
  // expected-error @+1 {{'wooly.bar_red' op a non-aligned barrier.red has no AMD equivalent yet}}
  %t = wooly.bar_red popc %one, %c : i32
  wooly.ret
}

// -----

// redux.sync has no popc.
wooly.func @k(%v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %m = arith.constant -1 : i32
  // expected-error @+1 {{'wooly.redux' op redux.sync.popc is not supported yet on amdgcn}}
  %r = wooly.redux popc %v, %m : i32
  wooly.ret
}

// -----

// exit ends the thread: in a kernel that is a return, in a called function
// there is no AMD counterpart yet.
wooly.func @f() {
  // expected-error @+1 {{'wooly.exit' op exit in a called function is not supported yet on amdgcn}}
  wooly.exit
}

// -----

// No device library is linked: calls of external functions are refused.
wooly.func private @vprintf(i64, i64) -> i32 attributes {linkage = "extern"}
wooly.func @k(%p: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.call' op calls external function 'vprintf', which has no AMD implementation yet (no device library is linked)}}
  %r = wooly.call @vprintf(%p, %p) : (i64, i64) -> i32
  wooly.ret
}

// -----

// Helpers of wooly-expand-arith without an exact AMD lowering yet: directed
// f64 division/reciprocal/square root (no wider format to go through), f16
// directed fma.
func.func private @__wooly_frcp_rz_f64(f64) -> f64
func.func private @__wooly_fma_rz_f16(i32, i32, i32) -> i32
wooly.func @k(%p: i64 {wooly.type = "u64"}, %d: f64 {wooly.type = "f64"}, %v: i32 {wooly.type = "u32"}) attributes {kernel} {
  // expected-error @+1 {{helper '__wooly_frcp_rz_f64' is not supported yet on amdgcn}}
  %r = func.call @__wooly_frcp_rz_f64(%d) : (f64) -> f64
  // expected-error @+1 {{helper '__wooly_fma_rz_f16' is not supported yet on amdgcn}}
  %h = func.call @__wooly_fma_rz_f16(%v, %v, %v) : (i32, i32, i32) -> i32
  wooly.ret
}

// -----

// The fp8 conversions of an f64 that is no exact widening of an f32 would
// round twice: refused.
func.func private @__wooly_cvt_f64_e5m2_rn_satfinite(f64) -> i32
wooly.func @k(%p: i64 {wooly.type = "u64"}, %d: f64 {wooly.type = "f64"}) attributes {kernel} {
  // expected-error @+1 {{helper '__wooly_cvt_f64_e5m2_rn_satfinite' is not supported yet on amdgcn}}
  %e = func.call @__wooly_cvt_f64_e5m2_rn_satfinite(%d) : (f64) -> i32
  wooly.st global %p, %e : i64, i32
  wooly.ret
}

// -----

// .approx transcendentals exist for f32 (tanh also f16) only.
wooly.func @k(%p: i64 {wooly.type = "u64"}, %d: f64 {wooly.type = "f64"}) attributes {kernel} {
  // expected-error @+1 {{'math.sin' op on 'f64' is not supported yet on amdgcn}}
  %s = math.sin %d : f64
  // expected-error @+1 {{'math.tanh' op on 'f64' is not supported yet on amdgcn}}
  %t = math.tanh %s : f64
  wooly.st global %p, %t : i64, f64
  wooly.ret
}

// -----

// The shared refusals hold on AMD too: the predicate of match.any.
wooly.func @k(%p: i64 {wooly.type = "u64"}, %v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %m = arith.constant -1 : i32
  // expected-error @+1 {{'wooly.match' op the predicate of match.any is not supported yet on amdgcn}}
  %r, %q = wooly.match any %v, %m : i32
  wooly.st global %p, %q : i64, i1
  wooly.ret
}

// -----

// Modules are not linked with each other: an external variable (other than
// the dynamic shared memory) has no definition.
// expected-error @+1 {{'wooly.global' op declares external variable 'elsewhere', which has no AMD definition yet (modules are not linked with each other)}}
wooly.global global extern @elsewhere : i32[4] align 4
wooly.global shared extern @dyn : i8[0] align 16
wooly.func @k() attributes {kernel} {
  wooly.ret
}

// -----

// Textures and surfaces have no AMD lowering yet.
wooly.func @tex(%h: i64 {wooly.type = "u64"}, %x: f32 {wooly.type = "f32"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.tex' op texture and surface access is not supported yet on amdgcn}}
  %a:4 = wooly.tex dim2 f32 f32 %h (%x, %x) : f32, f32 -> f32, f32, f32, f32
  wooly.ret
}
