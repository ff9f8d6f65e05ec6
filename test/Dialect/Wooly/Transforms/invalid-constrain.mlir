// RUN: wooly-opt %s --wooly-constrain --split-input-file --verify-diagnostics
// RUN: not wooly-opt %s --wooly-slice --split-input-file 2>&1 | FileCheck %s --check-prefix=SLICE

// wooly-slice refuses the same kernels, in its own name.
// SLICE: error: wooly-slice: kernel 'k' calls 'block_of', which reads %ctaid/%nctaid
// SLICE: error: wooly-slice: kernel 'k' calls 'outer', which reads %ctaid/%nctaid
// SLICE: error: wooly-slice: kernel 'k' calls 'die', which may exit the thread
// SLICE: error: wooly-slice: kernel 'k' makes an indirect call
// SLICE: error: wooly-slice: kernel 'k' reads %gridid

// A device function that reads %ctaid is not inlined yet: refused.
wooly.func @block_of() -> i32 {
  %b = wooly.sreg ctaid x : i32
  wooly.ret %b : i32
}
wooly.func @k(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{wooly-constrain: kernel 'k' calls 'block_of', which reads %ctaid/%nctaid (not supported yet)}}
  %b = wooly.call @block_of() : () -> i32
  wooly.st global %out, %b : i64, i32
  wooly.ret
}

// -----

// The same through a chain of calls (%nctaid).
wooly.func @inner() -> i32 {
  %b = wooly.sreg nctaid y : i32
  wooly.ret %b : i32
}
wooly.func @outer() -> i32 {
  %b = wooly.call @inner() : () -> i32
  wooly.ret %b : i32
}
wooly.func @k(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{wooly-constrain: kernel 'k' calls 'outer', which reads %ctaid/%nctaid (not supported yet)}}
  %b = wooly.call @outer() : () -> i32
  wooly.st global %out, %b : i64, i32
  wooly.ret
}

// -----

// `exit` in a device function would end the physical block's thread.
wooly.func @die() {
  wooly.exit
}
wooly.func @k() attributes {kernel} {
  // expected-error @+1 {{wooly-constrain: kernel 'k' calls 'die', which may exit the thread (not supported yet)}}
  wooly.call @die() : () -> ()
  wooly.ret
}

// -----

// Indirect calls: the callee is unknown.
wooly.func @k(%f: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{wooly-constrain: kernel 'k' makes an indirect call (not supported)}}
  wooly.call_indirect %f() : i64, () -> ()
  wooly.ret
}

// -----

// %gridid tells launches apart; a constrained launch is a different one.
wooly.func @k(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{wooly-constrain: kernel 'k' reads %gridid (not supported)}}
  %g = wooly.sreg gridid : i64
  wooly.st global %out, %g : i64, i64
  wooly.ret
}
