// RUN: wooly-opt %s --convert-wooly-to-nvvm=chip=sm_80 --split-input-file --verify-diagnostics

// cvt.rn.bf16.f64 needs sm_90 and the fp8 conversions sm_89: below, the
// helpers stay refused.
func.func private @__wooly_cvt_f64_bf16_rn(f64) -> i32
wooly.func @k(%p: i64 {wooly.type = "u64"}, %d: f64 {wooly.type = "f64"}) attributes {kernel} {
  // expected-error @+1 {{helper '__wooly_cvt_f64_bf16_rn' is not supported yet on nvptx}}
  %r = func.call @__wooly_cvt_f64_bf16_rn(%d) : (f64) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

func.func private @__wooly_cvt_e4m3_f16(i32) -> i32
wooly.func @k(%p: i64 {wooly.type = "u64"}, %a: i32 {wooly.type = "u32"}) attributes {kernel} {
  // expected-error @+1 {{helper '__wooly_cvt_e4m3_f16' is not supported yet on nvptx}}
  %r = func.call @__wooly_cvt_e4m3_f16(%a) : (i32) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}
