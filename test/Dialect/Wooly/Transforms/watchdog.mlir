// RUN: wooly-opt %s --wooly-watchdog --split-input-file --verify-diagnostics | FileCheck %s

// A loop head polls the abort flag (a launch parameter of the kernel): when
// its address is not 0 the thread reads it (volatile) and exits when it is
// raised; otherwise the loop goes on as before.
// CHECK-LABEL: wooly.func @loop
// CHECK-SAME: %[[N:[^:]*]]: i32 {wooly.type = "u32"}
// CHECK-SAME: %[[FLAG:[^:]*]]: i64 {wooly.launch_param = "abort_flag", {{[^}]*}}wooly.type = "u64"}
// CHECK: cf.br ^[[HEAD:bb[0-9]+]](
// CHECK: ^[[HEAD]](%[[I:.*]]: i32):
// CHECK: %[[NZ:.*]] = arith.cmpi ne, %[[FLAG]], %{{.*}} : i64
// CHECK-NEXT: cf.cond_br %[[NZ]], ^[[CHECK:bb[0-9]+]], ^[[BODY:bb[0-9]+]]{{$}}
// CHECK: ^[[CHECK]]:
// CHECK: %[[V:.*]] = ld global volatile %[[FLAG]] : i64 -> i32
// CHECK: %[[UP:.*]] = arith.cmpi ne, %[[V]], %{{.*}} : i32
// CHECK-NEXT: cf.cond_br %[[UP]], ^[[STOP:bb[0-9]+]], ^[[BODY]]{{$}}
// CHECK: ^[[STOP]]:
// CHECK-NEXT: exit
// CHECK: ^[[BODY]]:
// CHECK: arith.addi %[[I]]
// CHECK: cf.cond_br %{{.*}}, ^{{bb[0-9]+}}, ^[[HEAD]](%{{.*}} : i32)
wooly.func @loop(%n: i32 {wooly.type = "u32"}) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  cf.br ^head(%c0 : i32)
^head(%i: i32):
  %c1 = arith.constant 1 : i32
  %next = arith.addi %i, %c1 : i32
  %done = arith.cmpi uge, %next, %n : i32
  cf.cond_br %done, ^out, ^head(%next : i32)
^out:
  wooly.ret
}

// -----

// Straight code needs no poll (it ends by itself), but the kernel takes the
// parameter all the same; a device function gets the flag as a trailing
// argument from every call, and polls its own loops.
// CHECK-LABEL: wooly.func @helper(
// CHECK-SAME: %[[X:[^:]*]]: i32, %[[HF:[^:]*]]: i64 {wooly.type = "u64"})
// CHECK: ld global volatile %[[HF]]
// CHECK-LABEL: wooly.func @straight(
// CHECK-SAME: %[[KF:[^:]*]]: i64 {wooly.launch_param = "abort_flag"
// CHECK-NOT: ld global volatile
// CHECK: call @helper(%{{.*}}, %[[KF]]) : (i32, i64) -> i32
// CHECK-NOT: ld global volatile
// CHECK: ret
wooly.func @helper(%x: i32) -> i32 {
  cf.br ^head(%x : i32)
^head(%v: i32):
  %c1 = arith.constant 1 : i32
  %s = arith.shrui %v, %c1 : i32
  %z = arith.constant 0 : i32
  %done = arith.cmpi eq, %s, %z : i32
  cf.cond_br %done, ^out, ^head(%s : i32)
^out:
  wooly.ret %s : i32
}
wooly.func @straight(%p: i64 {wooly.type = "u64"}) attributes {kernel} {
  %c = arith.constant 7 : i32
  %r = wooly.call @helper(%c) : (i32) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

wooly.func @indirect(%f: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.call_indirect' op wooly-watchdog: indirect calls are not supported}}
  wooly.call_indirect %f() : i64, () -> ()
  wooly.ret
}
