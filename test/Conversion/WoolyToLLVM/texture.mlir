// RUN: wooly-opt %s --convert-wooly-to-llvm --split-input-file | FileCheck %s

// Texture and surface ops call the runtime with the instruction's word
// (WoolyTextureOp in ABI.h), the handle and the 32-bit words of the layer,
// coordinates and level or values; results come back as words.
// tex a2d (geometry 4) with a level: 4 << 3 | 1 << 11 = 2080; its inputs are
// the layer, x, y and the level.
// CHECK-LABEL: llvm.func @__wooly_kernel_k(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr
// CHECK-DAG: %[[OP:.*]] = llvm.mlir.constant(2080 : i32) : i32
// CHECK: llvm.call @__wooly_rt_texture(%[[CTX]], %[[OP]], %{{.*}}, %[[IN:.*]], %[[OUT:.*]]) : (!llvm.ptr, i32, i64, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: llvm.load %[[OUT]] {alignment = 4 : i64} : !llvm.ptr -> f32
// sust.b.2d.v4.b8.trap: kind 3, geometry 1, element 0, vector 4 << 15.
// CHECK-DAG: llvm.mlir.constant(131083 : i32) : i32
// CHECK: llvm.call @__wooly_rt_texture
// CHECK: llvm.call @__wooly_rt_texquery(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i32, i32, i64, i32) -> i32
wooly.func @k(%h: i64 {wooly.type = "u64"}, %x: f32 {wooly.type = "f32"}, %i: i32 {wooly.type = "s32"}, %out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %a:4 = wooly.tex a2d f32 f32 %h layer %i (%x, %x) lod %x : f32, f32 -> f32, f32, f32, f32
  wooly.st global %out, %a#0 : i64, f32
  wooly.sust dim2 b8 trap %h (%i, %i) (%i, %i, %i, %i) : (i32, i32) (i32, i32, i32, i32)
  %q = wooly.tex_query width %h : i32
  wooly.st global %out, %q : i64, i32
  wooly.ret
}
