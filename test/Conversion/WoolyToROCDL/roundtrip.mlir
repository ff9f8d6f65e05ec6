// RUN: wooly-opt --convert-wooly-to-rocdl=chip=gfx942 %s | wooly-opt | FileCheck %s

// The gfx942 lowering (LLVM and ROCDL ops) reads back into wooly-opt: every
// dialect it produces is registered.
// CHECK-LABEL: llvm.func @k(
// CHECK: rocdl.workitem.id.x : i32
// CHECK: rocdl.s.barrier
// CHECK: rocdl.ds_bpermute
// CHECK: llvm.return
wooly.func @k(%p: i64 {wooly.type = "u64"}, %s: i32 {wooly.type = "u32"}) attributes {kernel} {
  %tid = wooly.sreg tid x : i32
  %id = arith.constant 0 : i32
  wooly.barrier %id aligned
  %m = arith.constant -1 : i32
  %cl = arith.constant 7199 : i32
  %r, %ok = wooly.shfl bfly %tid, %s, %cl, %m : i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}
