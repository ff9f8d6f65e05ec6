// RUN: wooly-opt %s --convert-wooly-to-nvvm | FileCheck %s

// Atomics keep their operation, order and scope (cta -> block, gpu or none
// -> device, sys -> system); fences and barriers map to their NVVM forms.
// CHECK-LABEL: llvm.func @k(
// CHECK: llvm.atomicrmw add %{{.*}}, %{{.*}} syncscope("device") monotonic : !llvm.ptr<1>, i32
// CHECK: llvm.atomicrmw fadd %{{.*}}, %{{.*}} syncscope("block") acq_rel : !llvm.ptr<3>, f32
// CHECK: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} acquire acquire : !llvm.ptr, i32
// CHECK: llvm.atomicrmw uinc_wrap %{{.*}}, %{{.*}} syncscope("device") monotonic : !llvm.ptr<1>, i32
// CHECK: llvm.fence syncscope("block") seq_cst
// CHECK: llvm.fence syncscope("device") acq_rel
// CHECK: nvvm.barrier id = %{{.*}}
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.count"
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.arrive.aligned.count"
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.red.popc.aligned.all"({{.*}}) : (i32, i1) -> i32
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.red.and.all"({{.*}}) : (i32, i1) -> i1
wooly.func @k(%p: i64 {wooly.type = "u64"}, %s: i32 {wooly.type = "u32"}, %v: i32 {wooly.type = "u32"}, %f: f32 {wooly.type = "f32"}, %c: i1) attributes {kernel} {
  %0 = wooly.atom global add %p, %v : i64, i32 -> i32
  %1 = wooly.atom shared fadd acq_rel cta %s, %f : i32, f32 -> f32
  %2 = wooly.atom generic cas acquire sys %p, %v, %v : i64, i32, i32 -> i32
  wooly.red global inc %p, %v : i64, i32
  wooly.fence sc cta
  wooly.fence acq_rel gpu
  %id = arith.constant 1 : i32
  %n = arith.constant 64 : i32
  wooly.barrier %id aligned
  wooly.barrier %id, %n
  wooly.barrier %id, %n arrive aligned
  %3 = wooly.bar_red popc %id, %c aligned : i32
  %4 = wooly.bar_red and %id, %c : i1
  wooly.ret
}
