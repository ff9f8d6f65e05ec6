// RUN: wooly-opt %s --convert-wooly-to-nvvm --split-input-file --verify-diagnostics

// redux.sync has no popc (only bar.red does).
wooly.func @k(%v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %m = arith.constant -1 : i32
  // expected-error @+1 {{'wooly.redux' op redux.sync.popc is not supported yet on nvptx}}
  %r = wooly.redux popc %v, %m : i32
  wooly.ret
}

// -----

// PTX's match.any has no predicate.
wooly.func @k(%p: i64 {wooly.type = "u64"}, %v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %m = arith.constant -1 : i32
  // expected-error @+1 {{'wooly.match' op the predicate of match.any is not supported yet on nvptx}}
  %r, %q = wooly.match any %v, %m : i32
  wooly.st global %p, %q : i64, i1
  wooly.ret
}

// -----

// cp.async.cg copies 16 bytes only.
wooly.func @k(%p: i64 {wooly.type = "u64"}, %s: i32 {wooly.type = "u32"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.cp_async' op cp.async.cg of 8 bytes is not supported yet on nvptx}}
  wooly.cp_async %s, %p, 8 cache cg : i32, i64
  wooly.ret
}

// -----

// 32-bit parameter addresses are not supported yet.
wooly.func @k(%p: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.param_address' op 32-bit parameter addresses is not supported yet on nvptx}}
  %a = wooly.param_address 0 : i32
  wooly.st global %p, %a : i64, i32
  wooly.ret
}

// -----

// A helper of wooly-expand-arith without an exact NVPTX counterpart (there
// is no fma.rz.f16) is refused.
func.func private @__wooly_fma_rz_f16(i32, i32, i32) -> i32
wooly.func @k(%v: i32 {wooly.type = "u32"}) attributes {kernel} {
  // expected-error @+1 {{helper '__wooly_fma_rz_f16' is not supported yet on nvptx}}
  %r = func.call @__wooly_fma_rz_f16(%v, %v, %v) : (i32, i32, i32) -> i32
  wooly.ret
}

// -----

// An f64 that is no exact widening of an f32 would round twice: refused.
func.func private @__wooly_cvt_f64_e4m3_rn_satfinite(f64) -> i32
wooly.func @cvt_e4m3_f64(%p: i64 {wooly.type = "u64"}, %d: f64 {wooly.type = "f64"}) attributes {kernel} {
  // expected-error @+1 {{helper '__wooly_cvt_f64_e4m3_rn_satfinite' is not supported yet on nvptx}}
  %r = func.call @__wooly_cvt_f64_e4m3_rn_satfinite(%d) : (f64) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// wmma.load of the D fragment does not exist in PTX.
wooly.func @k(%p: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.wmma_load' op wmma.load.d is not supported yet on nvptx}}
  %wa:8 = wooly.wmma_load d row "m16n16k16" f32 global %p : i64 -> f32, f32, f32, f32, f32, f32, f32, f32
  wooly.ret
}

// -----

// A formatted surface store that does not trap: NVVM has only sust.p.*.trap.
wooly.func @refused(%h: i64 {wooly.type = "u64"}, %x: i32 {wooly.type = "s32"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.sust' op sust.p.clamp is not supported yet on nvptx}}
  wooly.sust dim2 b32 clamp formatted %h (%x, %x) (%x) : (i32, i32) (i32)
  wooly.ret
}
