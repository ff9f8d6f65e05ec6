// RUN: wooly-opt %s --convert-wooly-to-llvm --split-input-file | FileCheck %s

// A kernel whose barrier and shuffle lie in one chain of dominance is split
// into regions: its lane function runs one thread of a warp from a region
// (its third argument) to the next cut and returns the next region, with
// the values that live across cuts, the shuffle's input words that are
// not constants and its results in the warp's frame (accesses in one
// access group: each lane's own); the warp function runs the 32 lanes of a
// warp, a vectorisable loop per region, and completes a uniform shuffle
// itself; the region function runs one thread for the runtime, from
// ctx->resume (offset 136), with its lane (ctx->laneid, offset 48) and its
// warp's frame (ctx->regionFrame, offset 128): it copies the results of a
// collective the runtime completed into the frame, leaves the next region
// in ctx->resume and makes the request of the collective it stopped at.
// CHECK-LABEL: llvm.func @__wooly_kernel_k(
// CHECK-SAME: wooly.fiber_reason = ""
// CHECK-SAME: wooly.region_frame_bytes = {{[0-9]+}} : i64, wooly.region_function = "__wooly_regions_k", wooly.warp_function = "__wooly_warp_k"
// CHECK-LABEL: llvm.func @__wooly_warp_k(
// CHECK: llvm.switch %{{.*}} : i32, ^{{.*}} [
// CHECK-NEXT: 2: ^
// CHECK-NEXT: ]
// CHECK: llvm.switch %{{.*}} : i32, ^{{.*}} [
// CHECK-NEXT: 0: ^
// CHECK-NEXT: 1: ^
// CHECK-NEXT: 2: ^
// CHECK: llvm.call @__wooly_lanes_k_0(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %arg0) : (!llvm.ptr, !llvm.ptr, i32, i64, !llvm.ptr, !llvm.ptr) -> i32
// CHECK: llvm.cond_br {{.*}} {loop_annotation = #{{.*}}}
// CHECK: llvm.call @__wooly_rt_warp(
// CHECK-LABEL: llvm.func @__wooly_regions_k(
// CHECK: %[[RP:.*]] = llvm.getelementptr %[[CTX:arg[0-9]+]][136]
// CHECK: %[[R:.*]] = llvm.load %[[RP]]
// CHECK: %[[LP:.*]] = llvm.getelementptr %[[CTX]][48]
// CHECK: %[[L32:.*]] = llvm.load %[[LP]]
// CHECK: %[[L:.*]] = llvm.zext %[[L32]]
// CHECK: %[[FP:.*]] = llvm.getelementptr %[[CTX]][128]
// CHECK: %[[F:.*]] = llvm.load %[[FP]]
// CHECK: llvm.switch %[[R]] : i32, ^[[CALL:.*]] [
// CHECK-NEXT: 2: ^[[COPY:[^ ]*]]
// CHECK: ^[[CALL]]:
// CHECK: %[[N:.*]] = llvm.call @__wooly_lanes_k(%[[CTX]], %{{.*}}, %[[R]], %[[L]], %[[F]], %[[CTX]])
// CHECK: llvm.store %[[N]], %{{.*}}
// CHECK: llvm.switch %[[N]] : i32, ^[[DONE:.*]] [
// CHECK-NEXT: 2: ^[[REQUEST:[^(]*]](
// CHECK: ^[[COPY]]:
// CHECK: llvm.br ^[[CALL]]
// The request of the shuffle: its constant words (mode, lane, clamp) and
// mask come as the block's arguments, the value from its staging slot.
// CHECK: ^[[REQUEST]](%[[MODE:.*]]: i32, %[[LANE:.*]]: i32, %[[CLAMP:.*]]: i32, %[[MASK:.*]]: i32):
// CHECK: llvm.store %[[MODE]]
// CHECK: llvm.store %[[LANE]]
// CHECK: llvm.store %[[CLAMP]]
// CHECK: llvm.call @__wooly_rt_warp(%[[CTX]], %{{.*}}, %[[MASK]],
// CHECK-LABEL: llvm.func internal @__wooly_lanes_k(
// CHECK: llvm.switch %arg2 : i32, ^[[FIRST:.*]] [
// CHECK-NEXT: 1: ^[[AFTER_BARRIER:[^,]*]],
// CHECK-NEXT: 2: ^[[AFTER_SHFL:[^ ]*]]
// The parameter %p (passed on through a block argument) and %tid.x are
// made again after the cuts, not kept in the frame: the first region
// stores nothing there.
// CHECK: ^[[FIRST]]:
// CHECK-NOT: access_groups
// CHECK: llvm.return %{{.*}} : i32
// CHECK-NEXT: ^[[AFTER_BARRIER]]:
// CHECK-NOT: llvm.call @__wooly_rt_warp
// CHECK: llvm.store %{{.*}}, %{{.*}} {access_groups = [#[[GROUP:.*]]], alias_scopes
// CHECK-NOT: llvm.call @__wooly_rt_warp
// CHECK: llvm.return %{{.*}} : i32
// CHECK-NEXT: ^[[AFTER_SHFL]]:
// CHECK-NEXT: llvm.load %{{.*}} {access_groups = [#[[GROUP]]]
// CHECK: llvm.load %arg1 {alias_scopes
// CHECK: %[[EXITED:.*]] = llvm.mlir.constant(-1 : i32)
// CHECK-NEXT: llvm.return %[[EXITED]]
wooly.func @k(%p: i64 {wooly.type = "u64"}) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c31 = arith.constant 31 : i32
  %cm1 = arith.constant -1 : i32
  %t = wooly.sreg tid x : i32
  wooly.barrier %c0
  %r, %ok = wooly.shfl bfly %t, %c1, %c31, %cm1 : i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// A barrier in a loop gets a region function too: the cut's region is
// entered from the switch, in the middle of the loop; the induction
// variable, live across the cut, goes through the frame.
// CHECK-LABEL: llvm.func @__wooly_kernel_loop(
// CHECK-SAME: wooly.fiber_reason = ""
// CHECK-SAME: wooly.region_function = "__wooly_regions_loop"
// CHECK-LABEL: llvm.func internal @__wooly_lanes_loop(
// CHECK: llvm.switch %{{.*}} : i32, ^[[FIRST:.*]] [
// CHECK-NEXT: 1: ^[[AFTER_BARRIER:[^ ]*]]
// CHECK: ^[[AFTER_BARRIER]]:
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK: llvm.add
// CHECK: llvm.icmp "ult"
wooly.func @loop(%n: i32 {wooly.type = "u32"}) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  cf.br ^loop(%c0 : i32)
^loop(%i: i32):
  wooly.barrier %c0
  %i1 = arith.addi %i, %c1 : i32
  %more = arith.cmpi ult, %i1, %n : i32
  cf.cond_br %more, ^loop(%i1 : i32), ^done
^done:
  wooly.ret
}
