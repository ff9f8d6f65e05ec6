// RUN: wooly-opt %s --wooly-coalesce="kernels=k" --split-input-file --verify-diagnostics
// RUN: not wooly-opt %s --wooly-coalesce="kernels=k,missing" --split-input-file 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not wooly-opt %s --wooly-coalesce="kernels=f" --split-input-file 2>&1 | FileCheck %s --check-prefix=NOTKERNEL

// MISSING: error: wooly-coalesce: 'missing' is not a kernel with a body in the module
// NOTKERNEL: error: wooly-coalesce: 'f' is not a kernel with a body in the module

// A device function that reads %tid is not rewritten: refused.
wooly.func @f() -> i32 {
  %t = wooly.sreg tid x : i32
  wooly.ret %t : i32
}
wooly.func @k(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{wooly-coalesce: kernel 'k' calls 'f', which reads %tid (not supported yet)}}
  %v = wooly.call @f() : () -> i32
  wooly.st global %out, %v : i64, i32
  wooly.ret
}

// -----

// The same through a chain of calls (%ctaid).
wooly.func @inner() -> i32 {
  %b = wooly.sreg ctaid y : i32
  wooly.ret %b : i32
}
wooly.func @f() -> i32 {
  %b = wooly.call @inner() : () -> i32
  wooly.ret %b : i32
}
wooly.func @k(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{wooly-coalesce: kernel 'k' calls 'f', which calls 'inner', which reads %ctaid (not supported yet)}}
  %v = wooly.call @f() : () -> i32
  wooly.st global %out, %v : i64, i32
  wooly.ret
}

// -----

// Parameters taken by address.
wooly.func @k(%n: i32 {wooly.type = "u32"}) attributes {kernel} {
  // expected-error @+1 {{wooly-coalesce: kernel 'k' takes the address of a parameter (not supported yet)}}
  %p = wooly.param_address 0 : i64
  %v = wooly.ld param %p : i64 -> i32
  wooly.ret
}

// -----

// .reqntid: the fused block is 1-D with the largest part's threads.
// expected-error @+1 {{wooly-coalesce: kernel 'k' has .reqntid}}
wooly.func @k(%n: i32 {wooly.type = "u32"}) attributes {kernel, reqntid = array<i32: 128>} {
  wooly.ret
}

// -----

// Byte-array (struct) parameters.
// expected-error @+1 {{wooly-coalesce: kernel 'k' has a byte-array parameter (not supported yet)}}
wooly.func @k(%s: vector<12xi8> {wooly.type = "b8"}) attributes {kernel} {
  wooly.ret
}

// -----

// %gridid differs between launches.
wooly.func @k(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{wooly-coalesce: kernel 'k' reads %gridid (not supported)}}
  %g = wooly.sreg gridid : i64
  wooly.st global %out, %g : i64, i64
  wooly.ret
}

// -----

// Launch parameters of another pass.
// expected-error @+1 {{wooly-coalesce: kernel 'k' has launch parameters of another pass (run wooly-coalesce first)}}
wooly.func @k(%n: i32 {wooly.type = "u32", wooly.launch_param = "virtual_grid_x"}) attributes {kernel} {
  wooly.ret
}

// -----

// Indirect calls.
wooly.func @k(%fp: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{wooly-coalesce: kernel 'k' makes an indirect call (not supported)}}
  wooly.call_indirect %fp() : i64, () -> ()
  wooly.ret
}
