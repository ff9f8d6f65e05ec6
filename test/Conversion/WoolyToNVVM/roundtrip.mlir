// RUN: wooly-opt --convert-wooly-to-nvvm %s | wooly-opt | FileCheck %s

// The NVVM lowering (LLVM and NVVM ops) reads back into wooly-opt: every
// dialect it produces is registered.
// CHECK-LABEL: llvm.func @k(
// CHECK: nvvm.read.ptx.sreg.tid.x : i32
// CHECK: nvvm.barrier
// CHECK: nvvm.shfl.sync bfly
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
