// RUN: wooly-opt %s --wooly-lower-iteration-barrier --split-input-file | FileCheck %s
// RUN: wooly-opt %s --wooly-constrain --wooly-lower-iteration-barrier --split-input-file | FileCheck %s --check-prefix=LOOP

// Block barriers become non-aligned bar.red popc over "false"; the
// iteration barrier a loop over bar.red popc "true" until every thread of
// the block (ntid.x * ntid.y * ntid.z) reports itself finished.
// CHECK-LABEL: wooly.func @k(
// CHECK: %[[NX:.*]] = sreg ntid x : i32
// CHECK: %[[NY:.*]] = sreg ntid y : i32
// CHECK: %[[NZ:.*]] = sreg ntid z : i32
// CHECK: %[[YZ:.*]] = arith.muli %[[NY]], %[[NZ]] : i32
// CHECK: %[[ALL:.*]] = arith.muli %[[NX]], %[[YZ]] : i32
// CHECK: %[[C0:.*]] = arith.constant 0 : i32
// CHECK: %[[F:.*]] = arith.constant false
// CHECK: %[[T:.*]] = arith.constant true
// CHECK-NOT: trap
// CHECK: bar_red popc %[[C0]], %[[F]] : i32
// CHECK-NOT: barrier
// CHECK: cf.br ^[[WAIT:.*]]
// CHECK: ^[[WAIT]]:
// CHECK: %[[N:.*]] = bar_red popc %[[C0]], %[[T]] : i32
// CHECK: %[[DONE:.*]] = arith.cmpi eq, %[[N]], %[[ALL]] : i32
// CHECK: cf.cond_br %[[DONE]], ^[[AFTER:.*]], ^[[WAIT]]
// CHECK: ^[[AFTER]]:
// CHECK-NEXT: ret
wooly.global shared @s : i8[64] align 4
wooly.func @k(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  %t = wooly.sreg tid x : i32
  wooly.barrier %c0 aligned
  wooly.st global %out, %t : i64, i32
  wooly.iteration_barrier
  wooly.ret
}

// -----

// A warp collective under a branch that is uniform within a warp when the
// block's rows are whole warps (tid.x < 32): accepted, and the kernel
// checks the assumption at entry (trap otherwise).
// CHECK-LABEL: wooly.func @warp0(
// CHECK: %[[LOW:.*]] = arith.andi %{{.*}}, %c31
// CHECK: cf.cond_br %{{.*}}, ^[[TRAP:.*]], ^
// CHECK: ^[[TRAP]]:
// CHECK-NEXT: trap
// CHECK: shfl bfly
wooly.func @warp0(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %c32 = arith.constant 32 : i32
  %c1 = arith.constant 1 : i32
  %m = arith.constant -1 : i32
  %c31 = arith.constant 31 : i32
  %t = wooly.sreg tid x : i32
  %lt = arith.cmpi ult, %t, %c32 : i32
  cf.cond_br %lt, ^reduce, ^end
^reduce:
  %v, %ok = wooly.shfl bfly %t, %c1, %c31, %m : i32
  wooly.st global %out, %v : i64, i32
  cf.br ^end
^end:
  wooly.iteration_barrier
  wooly.ret
}

// -----

// The loop wooly-constrain builds, lowered: the wait loop sits in the latch.
// LOOP-LABEL: wooly.func @sum(
// LOOP: bar_red popc %{{.*}}, %false : i32
// LOOP: bar_red popc %{{.*}}, %true : i32
// LOOP-NOT: iteration_barrier
wooly.global shared @t : i8[16] align 4
wooly.func @sum(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  %b = wooly.sreg ctaid x : i32
  wooly.barrier %c0 aligned
  wooly.st global %out, %b : i64, i32
  wooly.ret
}
