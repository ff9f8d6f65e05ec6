// RUN: wooly-opt %s --wooly-contain --split-input-file --verify-diagnostics | FileCheck %s
// RUN: wooly-opt %s --wooly-contain="traps=false alignment=false" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=POLL

// A loop head polls the status record (a launch parameter of the kernel):
// when its address is not 0 the thread reads it (volatile) and exits when
// it is set; otherwise the loop goes on as before.
// CHECK-LABEL: wooly.func @loop
// CHECK-SAME: %[[N:[^:]*]]: i32 {wooly.type = "u32"}
// CHECK-SAME: %[[ST:[^:]*]]: i64 {wooly.launch_param = "launch_status", {{[^}]*}}wooly.type = "u64"}
// CHECK: %[[NZ:.*]] = arith.cmpi ne, %[[ST]], %{{.*}} : i64
// CHECK: cf.br ^[[HEAD:bb[0-9]+]](
// CHECK: ^[[HEAD]](%[[I:.*]]: i32):
// CHECK-NEXT: cf.cond_br %[[NZ]], ^[[CHECK:bb[0-9]+]], ^[[BODY:bb[0-9]+]]{{$}}
// CHECK: ^[[CHECK]]:
// CHECK: %[[V:.*]] = ld global volatile %[[ST]] {wooly.no_wait} : i64 -> i32
// CHECK: %[[UP:.*]] = arith.cmpi ne, %[[V]], %{{.*}} : i32
// CHECK-NEXT: cf.cond_br %[[UP]], ^[[STOP:bb[0-9]+]], ^[[BODY]]{{$}}
// CHECK: ^[[STOP]]:
// CHECK-NEXT: exit
// CHECK: ^[[BODY]]:
// CHECK: arith.addi %[[I]]
// CHECK: cf.cond_br %{{.*}}, ^{{bb[0-9]+}}, ^[[HEAD]](%{{.*}} : i32)
// POLL-LABEL: wooly.func @loop
// POLL: ld global volatile
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
// parameter all the same; a device function gets the record as a trailing
// argument from every call, and polls its own loops.
// CHECK-LABEL: wooly.func @helper(
// CHECK-SAME: %[[X:[^:]*]]: i32, %[[HF:[^:]*]]: i64 {wooly.type = "u64"})
// CHECK: ld global volatile %[[HF]]
// CHECK-LABEL: wooly.func @straight(
// CHECK-SAME: %[[KF:[^:]*]]: i64 {wooly.launch_param = "launch_status"
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

// trap, brkpt and a failed assertion branch to the one raise block (with
// their code, 2, 3 and 4, and the assertion's line and strings) when the
// launch has a status record, and run as written when it has none. The
// raise block sets the status by compare-and-swap from 0; only the first
// fault fills in its details and the thread's ids; the thread exits.
// CHECK-LABEL: wooly.func @faults
// CHECK-SAME: %[[ST:[^:]*]]: i64 {wooly.launch_param = "launch_status"
// CHECK: %[[HAS:.*]] = arith.cmpi ne, %[[ST]]
// CHECK: %[[C3:.*]] = arith.constant 3 : i32
// CHECK: cf.cond_br %[[HAS]], ^[[RAISE:bb[0-9]+]](%[[C3]], {{.*}}), ^[[BRK:bb[0-9]+]]
// CHECK: ^[[BRK]]:
// CHECK-NEXT: brkpt
// CHECK: %[[C4:.*]] = arith.constant 4 : i32
// CHECK: cf.cond_br %[[HAS]], ^[[RAISE]](%[[C4]], %[[LINE:.*]], %[[MSG:[^,]*]], %[[FILE:[^,]*]], %[[FN:[^)]*]] : i32, i32, i64, i64, i64), ^[[AF:bb[0-9]+]]
// CHECK: ^[[AF]]:
// CHECK-NEXT: call @__assertfail(
// CHECK: %[[C2:.*]] = arith.constant 2 : i32
// CHECK: cf.cond_br %[[HAS]], ^[[RAISE]](%[[C2]], {{.*}}), ^[[TRAP:bb[0-9]+]]
// CHECK: ^[[TRAP]]:
// CHECK-NEXT: trap
// CHECK: ^[[RAISE]](%[[CODE:.*]]: i32, %[[L:.*]]: i32, %[[A:.*]]: i64, %[[B:.*]]: i64, %[[C:.*]]: i64):
// CHECK: %[[OLD:.*]] = atom global cas %[[ST]], %{{.*}}, %[[CODE]] : i64, i32, i32 -> i32
// CHECK: cf.cond_br %{{.*}}, ^[[FILL:bb[0-9]+]], ^[[OUT:bb[0-9]+]]
// CHECK: ^[[FILL]]:
// CHECK: st global %{{.*}}, %[[L]] : i64, i32
// CHECK: st global %{{.*}}, %[[A]] : i64, i64
// CHECK: sreg ctaid x
// CHECK: sreg tid z
// CHECK: ^[[OUT]]:
// CHECK-NEXT: exit
// POLL-LABEL: wooly.func @faults
// POLL-NOT: atom
// POLL: brkpt
// POLL: call @__assertfail
// POLL: trap
wooly.func private @__assertfail(i64 {wooly.type = "b64"}, i64 {wooly.type = "b64"}, i32 {wooly.type = "b32"}, i64 {wooly.type = "b64"}, i64 {wooly.type = "b64"})
wooly.func @faults(%m: i64 {wooly.type = "u64"}, %line: i32 {wooly.type = "u32"}) attributes {kernel} {
  wooly.brkpt
  %one = arith.constant 1 : i64
  wooly.call @__assertfail(%m, %m, %line, %m, %one) : (i64, i64, i32, i64, i64) -> ()
  wooly.trap
}

// -----

// A load, store or atomic wider than a byte checks its alignment (all of a
// vector's bytes) and records code 5 with the address; .param and byte
// accesses are not checked.
// CHECK-LABEL: wooly.func @aligned
// CHECK: %[[M:.*]] = arith.constant 15 : i64
// CHECK: arith.andi %{{.*}}, %[[M]] : i64
// CHECK: ld global %{{.*}} : i64 -> f32, f32, f32, f32
// CHECK: arith.constant 7 : i32
// CHECK: ld shared %{{.*}} : i32 -> i64
// CHECK-NOT: arith.andi
// CHECK: ld global %{{.*}} : i64 -> i8
// POLL-LABEL: wooly.func @aligned
// POLL-NOT: arith.andi
wooly.func @aligned(%p: i64 {wooly.type = "u64"}, %q: i32 {wooly.type = "u32"}) attributes {kernel} {
  %a, %b, %c, %d = wooly.ld global %p : i64 -> f32, f32, f32, f32
  %e = wooly.ld shared %q : i32 -> i64
  %f = wooly.ld global %p : i64 -> i8
  wooly.ret
}

// -----

wooly.func @indirect(%f: i64 {wooly.type = "u64"}) attributes {kernel} {
  // expected-error @+1 {{'wooly.call_indirect' op wooly-contain: indirect calls are not supported}}
  wooly.call_indirect %f() : i64, () -> ()
  wooly.ret
}
