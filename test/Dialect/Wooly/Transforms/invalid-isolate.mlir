// RUN: wooly-opt %s --wooly-isolate --split-input-file --verify-diagnostics

// Indirect calls cannot be given the tenant region: refused.
wooly.func @k(%f: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.call_indirect' op wooly-isolate: indirect calls are not supported}}
  wooly.call_indirect %f() : i64, () -> ()
  wooly.ret
}

// -----

// 32-bit global addresses are refused.
wooly.func @k32(%p: i32 {wooly.type = "u32"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.ld' op wooly-isolate: only 64-bit global addresses are supported}}
  %v = wooly.ld global %p : i32 -> f32
  wooly.ret
}
