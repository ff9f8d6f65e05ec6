// RUN: wooly-opt %s --convert-wooly-to-llvm --split-input-file --verify-diagnostics

// Calls to external functions other than vprintf, __assertfail, malloc and
// free cannot run on the host.
wooly.func private @ext(i32) -> i32 attributes {linkage = "extern"}
wooly.func @k(%a: i32 {wooly.type = "u32"}) attributes {kernel} {
  // expected-error @+2 {{calls 'ext', which has no definition in the module}}
  // expected-error @+1 {{failed to legalize operation 'wooly.call'}}
  %r = wooly.call @ext(%a) : (i32) -> i32
  wooly.ret
}

// -----

// 32-bit global addresses need a 32-bit address space the host lacks.
wooly.global shared @out : f32[1] align 4
wooly.func @k32(%a: i32 {wooly.type = "u32"}) attributes {kernel} {
  // expected-error @+2 {{32-bit global addresses are not supported on the host yet}}
  // expected-error @+1 {{failed to legalize operation 'wooly.ld'}}
  %v = wooly.ld global %a : i32 -> f32
  %o = wooly.addressof @out : i32
  wooly.st shared %o, %v : i32, f32
  wooly.ret
}

// -----

// .local variables live in a function's frame.
// expected-error @+1 {{a module-scope .local variable is not supported yet on host}}
wooly.global local @l : i32[4] align 4

// -----

// malloc and free (the device heap) are recognised by their CUDA signatures.
wooly.func private @malloc(i64, i64) -> i64 attributes {linkage = "extern"}
wooly.func @k(%a: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+2 {{malloc takes (size) and returns a pointer}}
  // expected-error @+1 {{failed to legalize operation 'wooly.call'}}
  %r = wooly.call @malloc(%a, %a) : (i64, i64) -> i64
  wooly.ret
}
