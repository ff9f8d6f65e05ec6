// RUN: wooly-opt %s --cse --canonicalize --split-input-file | FileCheck %s

// Plain loads only read: CSE merges two of one address with no write
// between them, and an unused one is removed.
// CHECK-LABEL: wooly.func @plain_loads(
// CHECK-SAME: %[[P:[^:]*]]: i64, %[[Q:[^:]*]]: i64
// CHECK-NEXT: %[[V:.*]] = ld global %[[P]] : i64 -> i32
// CHECK-NEXT: st global %[[Q]], %[[V]] : i64, i32
// CHECK-NEXT: st global %[[Q]], %[[V]] : i64, i32
// CHECK-NEXT: ret
wooly.func @plain_loads(%p: i64, %q: i64) {
  %a = wooly.ld global %p : i64 -> i32
  %b = wooly.ld global %p : i64 -> i32
  %dead = wooly.ld global %q : i64 -> f32
  wooly.st global %q, %a : i64, i32
  wooly.st global %q, %b : i64, i32
  wooly.ret
}

// -----

// A store, an atomic, a reduction, a fence, the barriers and the
// asynchronous-copy wait write memory: the loads around each are not merged.
// CHECK-LABEL: wooly.func @writes_between(
// CHECK-COUNT-10: ld shared
// CHECK: ret
wooly.func @writes_between(%s: i32, %v: i32, %m: i32, %c: i1) {
  %0 = wooly.ld shared %s : i32 -> i32
  wooly.st shared %s, %v : i32, i32
  %1 = wooly.ld shared %s : i32 -> i32
  %old = wooly.atom shared add %s, %v : i32, i32 -> i32
  %2 = wooly.ld shared %s : i32 -> i32
  wooly.red shared add %s, %v : i32, i32
  %3 = wooly.ld shared %s : i32 -> i32
  wooly.fence acq_rel cta
  %4 = wooly.ld shared %s : i32 -> i32
  wooly.barrier %v aligned
  %5 = wooly.ld shared %s : i32 -> i32
  %r = wooly.bar_red popc %v, %c : i32
  %6 = wooly.ld shared %s : i32 -> i32
  wooly.warp_sync %m
  %7 = wooly.ld shared %s : i32 -> i32
  wooly.iteration_barrier
  %8 = wooly.ld shared %s : i32 -> i32
  wooly.cp_async_wait 0
  %9 = wooly.ld shared %s : i32 -> i32
  %sum = arith.addi %0, %1 : i32
  %s2 = arith.addi %sum, %2 : i32
  %s3 = arith.addi %s2, %3 : i32
  %s4 = arith.addi %s3, %4 : i32
  %s5 = arith.addi %s4, %5 : i32
  %s6 = arith.addi %s5, %6 : i32
  %s7 = arith.addi %s6, %7 : i32
  %s8 = arith.addi %s7, %8 : i32
  %s9 = arith.addi %s8, %9 : i32
  wooly.st shared %s, %s9 : i32, i32
  wooly.ret
}

// -----

// Volatile, relaxed, acquire and `.cv` loads observe other threads: unused
// ones stay, and two of one address are not merged.
// CHECK-LABEL: wooly.func @ordered_loads(
// CHECK-COUNT-2: ld global volatile
// CHECK-COUNT-2: ld global relaxed gpu
// CHECK: ld global acquire sys
// CHECK: ld global %{{.*}} cache cv
// CHECK: ret
wooly.func @ordered_loads(%p: i64) {
  %0 = wooly.ld global volatile %p : i64 -> i32
  %1 = wooly.ld global volatile %p : i64 -> i32
  %2 = wooly.ld global relaxed gpu %p : i64 -> i32
  %3 = wooly.ld global relaxed gpu %p : i64 -> i32
  %4 = wooly.ld global acquire sys %p : i64 -> i32
  %5 = wooly.ld global %p cache cv : i64 -> i32
  wooly.ret
}

// -----

// Warp collectives depend on the lanes that execute them with this one:
// unused ones stay and equal ones are not merged.
// CHECK-LABEL: wooly.func @collectives(
// CHECK-COUNT-2: shfl idx
// CHECK-COUNT-2: vote ballot
// CHECK: match any
// CHECK: redux add
// CHECK-COUNT-2: activemask
// CHECK: ldmatrix
// CHECK: ret
wooly.func @collectives(%v: i32, %m: i32, %c: i1, %s: i32) {
  %a, %ap = wooly.shfl idx %v, %v, %v, %m : i32
  %b, %bp = wooly.shfl idx %v, %v, %v, %m : i32
  %0 = wooly.vote ballot %c, %m : i32
  %1 = wooly.vote ballot %c, %m : i32
  %2, %3 = wooly.match any %v, %m : i32
  %4 = wooly.redux add %v, %m : i32
  %5 = wooly.activemask : i32
  %6 = wooly.activemask : i32
  %7 = wooly.ldmatrix %s : i32 -> i32
  wooly.ret
}

// -----

// Stores, atomics and ordering operations are never removed.
// CHECK-LABEL: wooly.func @kept(
// CHECK: st global
// CHECK: atom global add
// CHECK: red global add
// CHECK: fence sc gpu
// CHECK: barrier
// CHECK: bar_red popc
// CHECK: warp_sync
// CHECK: cp_async
// CHECK: cp_async_commit
// CHECK: cp_async_wait 0
// CHECK: ret
wooly.func @kept(%p: i64, %s: i32, %v: i32, %c: i1) {
  wooly.st global %p, %v : i64, i32
  %0 = wooly.atom global add %p, %v : i64, i32 -> i32
  wooly.red global add %p, %v : i64, i32
  wooly.fence sc gpu
  wooly.barrier %v aligned
  %1 = wooly.bar_red popc %v, %c : i32
  wooly.warp_sync %v
  wooly.cp_async %s, %p, 16 : i32, i64
  wooly.cp_async_commit
  wooly.cp_async_wait 0
  wooly.ret
}
