// RUN: wooly-opt %s --convert-wooly-to-rocdl --split-input-file | FileCheck %s

// Atomics keep their operation and order; scopes become AMDGPU syncscopes
// (cta -> workgroup, gpu or none -> agent, cluster -> agent, sys -> system,
// printed without syncscope); fences likewise. bar.sync a (aligned or not,
// any barrier a, all threads) is s_barrier between workgroup release and
// acquire fences;
// bar.warp.sync is a wavefront fence and a wave barrier (a code-motion
// barrier: a PTX warp is half of a lockstep wave); nanosleep is s_sleep.
// CHECK-LABEL: llvm.func @k(
// CHECK: llvm.atomicrmw add %{{.*}}, %{{.*}} syncscope("agent") monotonic : !llvm.ptr<1>, i32
// CHECK: llvm.atomicrmw fadd %{{.*}}, %{{.*}} syncscope("workgroup") acq_rel : !llvm.ptr<3>, f32
// CHECK: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} acquire acquire : !llvm.ptr, i32
// CHECK: llvm.atomicrmw uinc_wrap %{{.*}}, %{{.*}} syncscope("agent") monotonic : !llvm.ptr<1>, i32
// CHECK: llvm.atomicrmw xchg %{{.*}}, %{{.*}} syncscope("agent") monotonic : !llvm.ptr<1>, i32
// CHECK: llvm.fence syncscope("workgroup") seq_cst
// CHECK: llvm.fence syncscope("agent") acq_rel
// CHECK: llvm.fence acq_rel
// CHECK: llvm.fence syncscope("workgroup") release
// CHECK-NEXT: rocdl.s.barrier
// CHECK-NEXT: llvm.fence syncscope("workgroup") acquire
// CHECK-NEXT: llvm.fence syncscope("workgroup") release
// CHECK-NEXT: rocdl.s.barrier
// CHECK-NEXT: llvm.fence syncscope("workgroup") acquire
// CHECK-NEXT: llvm.fence syncscope("wavefront") acq_rel
// CHECK-NEXT: llvm.call_intrinsic "llvm.amdgcn.wave.barrier"() : () -> ()
// CHECK-NEXT: rocdl.s.sleep 1
// CHECK-NOT: rocdl
// CHECK: llvm.return
wooly.func @k(%p: i64 {wooly.type = "u64"}, %s: i32 {wooly.type = "u32"}, %v: i32 {wooly.type = "u32"}, %f: f32 {wooly.type = "f32"}, %c: i1) attributes {kernel} {
  %0 = wooly.atom global add %p, %v : i64, i32 -> i32
  %1 = wooly.atom shared fadd acq_rel cta %s, %f : i32, f32 -> f32
  %2 = wooly.atom generic cas acquire sys %p, %v, %v : i64, i32, i32 -> i32
  wooly.red global inc %p, %v : i64, i32
  %3 = wooly.atom global exch relaxed cluster %p, %v : i64, i32 -> i32
  wooly.fence sc cta
  wooly.fence acq_rel gpu
  wooly.fence acq_rel sys
  %id = arith.constant 0 : i32
  wooly.barrier %id aligned
  %id1 = arith.constant 1 : i32
  wooly.barrier %id1
  %m = arith.constant -1 : i32
  wooly.warp_sync %m
  wooly.nanosleep %v
  wooly.ret
}

// -----

// cp.async is a synchronous copy: an aligned load and store of the size,
// or, with a source size, zeros then min(src-size, size) bytes; commit and
// wait are no-ops (nothing is ever pending).
// CHECK-LABEL: llvm.func @async(
// CHECK: %[[D:.*]] = llvm.inttoptr %{{.*}} : i32 to !llvm.ptr<3>
// CHECK: %[[S:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<1>
// CHECK: %[[V:.*]] = llvm.load %[[S]] {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK: llvm.store %[[V]], %[[D]] {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK: %[[D2:.*]] = llvm.inttoptr %{{.*}} : i32 to !llvm.ptr<3>
// CHECK: %[[S2:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<1>
// CHECK: "llvm.intr.memset"(%[[D2]], %{{.*}}, %[[SIZE:.*]]) <{isVolatile = false}> : (!llvm.ptr<3>, i8, i32) -> ()
// CHECK: %[[LT:.*]] = llvm.icmp "ult" %[[SRCSIZE:.*]], %[[SIZE]] : i32
// CHECK: %[[LEN:.*]] = llvm.select %[[LT]], %[[SRCSIZE]], %[[SIZE]] : i1, i32
// CHECK: "llvm.intr.memcpy"(%[[D2]], %[[S2]], %[[LEN]]) <{isVolatile = false}> : (!llvm.ptr<3>, !llvm.ptr<1>, i32) -> ()
// CHECK-NEXT: llvm.return
wooly.func @async(%p: i64 {wooly.type = "u64"}, %s: i32 {wooly.type = "u32"}, %v: i32 {wooly.type = "u32"}) attributes {kernel} {
  wooly.cp_async %s, %p, 16 cache cg : i32, i64
  wooly.cp_async %s, %p, 8 src_size %v cache ca : i32, i64
  wooly.cp_async_commit
  wooly.cp_async_wait 1
  wooly.ret
}

// -----

// bar.red.{popc,and} (barrier 0 or 1, all threads) count (and: negated) predicates in an LDS counter:
// zeroed by every thread, barrier, atomic add, barrier, read, barrier.
// CHECK: llvm.mlir.global internal @__wooly_bar_red_count() {addr_space = 3 : i32, alignment = 4 : i64} : i32
// CHECK-LABEL: llvm.func @bar_red(
// CHECK: ^bb1(%{{.*}}: i64, %[[C:.*]]: i1)
// CHECK: %[[CNT:.*]] = llvm.mlir.addressof @__wooly_bar_red_count : !llvm.ptr<3>
// CHECK: llvm.store %{{.*}}, %[[CNT]] atomic syncscope("workgroup") monotonic {alignment = 4 : i64} : i32, !llvm.ptr<3>
// CHECK: rocdl.s.barrier
// CHECK: %[[ONE:.*]] = llvm.zext %[[C]] : i1 to i32
// CHECK: llvm.atomicrmw add %[[CNT]], %[[ONE]] syncscope("workgroup") monotonic : !llvm.ptr<3>, i32
// CHECK: rocdl.s.barrier
// CHECK: %[[POPC:.*]] = llvm.load %[[CNT]] atomic syncscope("workgroup") monotonic {alignment = 4 : i64} : !llvm.ptr<3> -> i32
// CHECK: rocdl.s.barrier
// CHECK: %[[CNT2:.*]] = llvm.mlir.addressof @__wooly_bar_red_count : !llvm.ptr<3>
// CHECK: rocdl.s.barrier
// CHECK: %[[NOT:.*]] = llvm.xor %[[C]], %{{.*}} : i1
// CHECK: %[[NOTI:.*]] = llvm.zext %[[NOT]] : i1 to i32
// CHECK: llvm.atomicrmw add %[[CNT2]], %[[NOTI]] syncscope("workgroup") monotonic : !llvm.ptr<3>, i32
// CHECK: rocdl.s.barrier
// CHECK: %[[FALSES:.*]] = llvm.load %[[CNT2]]
// CHECK: rocdl.s.barrier
// CHECK: %[[AND:.*]] = llvm.icmp "eq" %[[FALSES]], %{{.*}} : i32
// CHECK: llvm.store %[[POPC]]
// CHECK: llvm.store %[[AND]]
wooly.func @bar_red(%p: i64 {wooly.type = "u64"}, %c: i1) attributes {kernel} {
  %zero = arith.constant 0 : i32
  %0 = wooly.bar_red popc %zero, %c aligned : i32
  %one = arith.constant 1 : i32
  %1 = wooly.bar_red and %one, %c aligned : i1
  wooly.st global %p, %0 : i64, i32
  wooly.st global %p, %1 : i64, i1
  wooly.ret
}
