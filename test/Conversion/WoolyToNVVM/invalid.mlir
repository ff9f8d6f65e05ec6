// RUN: wooly-opt %s --convert-wooly-to-nvvm --split-input-file --verify-diagnostics

// Warp collectives are not lowered to NVPTX yet.
wooly.func @k(%v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %m = arith.constant -1 : i32
  %c = arith.constant 31 : i32
  // expected-error @+1 {{'wooly.shfl' op is not supported yet on nvptx}}
  %r, %p = wooly.shfl bfly %v, %v, %c, %m : i32
  wooly.ret
}

// -----

// Parameter addresses are not supported yet.
wooly.func @k(%v: i32 {wooly.type = "u32"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.param_address' op is not supported yet on nvptx}}
  %a = wooly.param_address 0 : i64
  wooly.ret
}

// -----

// A helper of wooly-expand-arith without an NVVM intrinsic is refused.
func.func private @__wooly_cvt_e4m3_f16(i32) -> i32
wooly.func @k(%v: i32 {wooly.type = "u32"}) attributes {kernel} {
  // expected-error @+1 {{helper '__wooly_cvt_e4m3_f16' is not supported yet on nvptx}}
  %r = func.call @__wooly_cvt_e4m3_f16(%v) : (i32) -> i32
  wooly.ret
}
