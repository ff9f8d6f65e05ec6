// RUN: wooly-opt %s --convert-wooly-to-llvm --split-input-file | FileCheck %s

// Shared accesses whose offsets are bounded at compile time inside the
// static shared memory have no bounds check (SharedOffsets.h): the bound
// comes from the thread id's range (below 1024) and the variables' layout
// here, and from the branches that lead to an access and the values of a
// loop's toggle in shared-bounds-scan.mlir.

// s[tid] of a 4 KiB array: at most 4092 and a multiple of 4, so no check
// at all. s[tid + 1] may be at 4096: its bound is loaded (the window's
// size, `umax` with the static size) and checked. An `int` at byte offset
// 2 * tid is inside but may be misaligned: only its alignment is checked.
// CHECK-LABEL: llvm.func @__wooly_kernel_by_tid(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr
// CHECK: %[[TID:.*]] = llvm.load %[[CTX]] {{.*}} -> i32
// CHECK: %[[MAX:.*]] = llvm.mlir.constant(1023 : i32) : i32
// CHECK: llvm.and %[[TID]], %[[MAX]] : i32
// The bounded offset's extension says it is below 2^31 (for the warp
// vector code: WarpVector.cpp); the other's does not.
// CHECK: llvm.zext nneg %{{.*}} : i32 to i64
// CHECK-NOT: llvm.call @__wooly_rt_shared_oob(
// CHECK: llvm.store
// CHECK: llvm.zext %{{.*}} : i32 to i64
// CHECK: llvm.intr.umax
// CHECK: llvm.call @__wooly_rt_shared_oob(
// CHECK: llvm.store
// CHECK: llvm.zext nneg %{{.*}} : i32 to i64
// CHECK-NOT: llvm.intr.umax
// CHECK: llvm.icmp "eq"
// CHECK: llvm.call @__wooly_rt_shared_oob(
// CHECK: llvm.store
// CHECK-NOT: llvm.call @__wooly_rt_shared_oob(
// CHECK: llvm.return
wooly.global shared @s : i32[1024] align 4
wooly.func @by_tid(%v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %base = wooly.addressof @s : i32
  %tid = wooly.sreg tid x : i32
  %o = arith.shli %tid, %c2 : i32
  %a = arith.addi %base, %o : i32
  wooly.st shared %a, %v : i32, i32
  %t1 = arith.addi %tid, %c1 : i32
  %o1 = arith.shli %t1, %c2 : i32
  %a1 = arith.addi %base, %o1 : i32
  wooly.st shared %a1, %v : i32, i32
  %o2 = arith.shli %tid, %c1 : i32
  %a2 = arith.addi %base, %o2 : i32
  wooly.st shared %a2, %v : i32, i32
  wooly.ret
}

// -----

// An offset from a parameter, or one a loop moves with no bound, keeps
// its check; so does a store past the end by one element.
// CHECK-LABEL: llvm.func @__wooly_kernel_unbounded(
// CHECK-COUNT-3: llvm.intr.umax
// CHECK: llvm.return
wooly.global shared @w : i32[64] align 4
wooly.func @unbounded(%p: i32 {wooly.type = "u32"}, %n: i32 {wooly.type = "u32"}) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  %c4 = arith.constant 4 : i32
  %c256 = arith.constant 256 : i32
  %base = wooly.addressof @w : i32
  %a = arith.addi %base, %p : i32
  wooly.st shared %a, %n : i32, i32
  %end = arith.addi %base, %c256 : i32
  wooly.st shared %end, %n : i32, i32
  cf.br ^loop(%c0 : i32)
^loop(%i: i32):
  %o = arith.addi %base, %i : i32
  wooly.st shared %o, %n : i32, i32
  %i2 = arith.addi %i, %c4 : i32
  %more = arith.cmpi ult, %i2, %n : i32
  cf.cond_br %more, ^loop(%i2 : i32), ^done
^done:
  wooly.ret
}

// -----

// A device function's accesses keep their checks: a module compiled kernel
// by kernel links its parts into one program, where the function's one
// definition serves kernels with less static shared memory than its part's.
// CHECK-LABEL: llvm.func weak_odr @__wooly_fn_dev(
// CHECK: llvm.intr.umax
// CHECK: llvm.call @__wooly_rt_shared_oob(
// CHECK-LABEL: llvm.func @__wooly_kernel_calls_dev(
wooly.global shared @ds : i32[1024] align 4
wooly.func @dev(%v: i32 {wooly.type = "u32"}) {
  %c2 = arith.constant 2 : i32
  %base = wooly.addressof @ds : i32
  %tid = wooly.sreg tid x : i32
  %o = arith.shli %tid, %c2 : i32
  %a = arith.addi %base, %o : i32
  wooly.st shared %a, %v : i32, i32
  wooly.ret
}
wooly.func @calls_dev(%v: i32 {wooly.type = "u32"}) attributes {kernel} {
  wooly.call @dev(%v) : (i32) -> ()
  wooly.ret
}
