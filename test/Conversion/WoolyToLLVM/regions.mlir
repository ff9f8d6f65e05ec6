// RUN: wooly-opt %s --convert-wooly-to-llvm --split-input-file | FileCheck %s

// A kernel whose barrier and shuffle lie in one chain of dominance also
// gets a region function: a switch on ctx->resume (offset 136) at its
// entry, the frame's address from ctx->regionFrame (offset 128), a value
// that lives across a cut stored in the frame and loaded after it, each
// cut returning with the next region, the end with WOOLY_REGION_EXITED.
// CHECK-LABEL: llvm.func @__wooly_kernel_k(
// CHECK-SAME: wooly.fiber_reason = ""
// CHECK-SAME: wooly.region_frame_bytes = {{[0-9]+}} : i64, wooly.region_function = "__wooly_regions_k"
// CHECK-LABEL: llvm.func @__wooly_regions_k(
// CHECK: %[[FP:.*]] = llvm.getelementptr %[[CTX:arg[0-9]+]][128]
// CHECK: %[[FRAME:.*]] = llvm.load %[[FP]]
// CHECK: %[[RP:.*]] = llvm.getelementptr %[[CTX]][136]
// CHECK: %[[R:.*]] = llvm.load %[[RP]]
// CHECK: llvm.switch %[[R]] : i32, ^[[FIRST:.*]] [
// CHECK-NEXT: 1: ^[[AFTER_BARRIER:[^,]*]],
// CHECK-NEXT: 2: ^[[AFTER_SHFL:[^ ]*]]
// CHECK: llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr
// CHECK: llvm.getelementptr %[[CTX]][136]
// CHECK-NEXT: llvm.mlir.constant(1 : i32)
// CHECK-NEXT: llvm.store
// CHECK-NEXT: llvm.return
// CHECK: ^[[AFTER_BARRIER]]:
// CHECK: llvm.call @__wooly_rt_warp(
// CHECK: llvm.getelementptr %[[CTX]][136]
// CHECK-NEXT: llvm.mlir.constant(2 : i32)
// CHECK-NEXT: llvm.store
// CHECK-NEXT: llvm.return
// CHECK: ^[[AFTER_SHFL]]:
// CHECK: llvm.getelementptr %[[CTX]][136]
// CHECK-NEXT: llvm.mlir.constant(-1 : i32)
// CHECK-NEXT: llvm.store
// CHECK-NEXT: llvm.return
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
// CHECK-LABEL: llvm.func @__wooly_regions_loop(
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
