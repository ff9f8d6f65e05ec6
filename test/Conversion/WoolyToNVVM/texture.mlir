// RUN: wooly-opt %s --convert-wooly-to-nvvm --split-input-file | FileCheck %s

// Texture fetches, gathers and queries become the unified-mode NVVM
// intrinsics of texture objects; surface loads and stores the suld/sust
// intrinsics (8-bit elements travel as i16); sured, which NVVM lacks, the
// instruction itself; txq queries NVVM has no intrinsic for, too.
// CHECK-LABEL: llvm.func @tex(
// CHECK: %[[R:.*]] = llvm.call_intrinsic "llvm.nvvm.tex.unified.2d.v4f32.f32"(%{{.*}}, %{{.*}}, %{{.*}}) : (i64, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: llvm.call_intrinsic "llvm.nvvm.tex.unified.2d.array.level.v4f32.f32"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: llvm.call_intrinsic "llvm.nvvm.tex.unified.3d.grad.v4f32.f32"
// CHECK: llvm.call_intrinsic "llvm.nvvm.tex.unified.1d.v4s32.s32"(%{{.*}}, %{{.*}}) : (i64, i32) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK: llvm.call_intrinsic "llvm.nvvm.tld4.unified.b.2d.v4u32.f32"
// CHECK: llvm.inline_asm "tld4.g.a2d.v4.f32.f32 {$0, $1, $2, $3}, [$4, {$5, $6, $7, $7}];", "=f,=f,=f,=f,l,r,f,f" %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (i64, i32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: llvm.inline_asm "tld4.r.acube.v4.s32.f32 {$0, $1, $2, $3}, [$4, {$5, $6, $7, $8}];", "=r,=r,=r,=r,l,r,f,f,f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.txq.num.mipmap.levels"(%{{.*}}) : (i64) -> i32
// CHECK: llvm.inline_asm "txq.filter_mode.b32 $0, [$1];", "=r,l"
// CHECK: llvm.call_intrinsic "llvm.nvvm.suq.width"(%{{.*}}) : (i64) -> i32
wooly.func @tex(%h: i64 {wooly.type = "u64"}, %x: f32 {wooly.type = "f32"}, %i: i32 {wooly.type = "s32"}, %out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %a:4 = wooly.tex dim2 f32 f32 %h (%x, %x) : f32, f32 -> f32, f32, f32, f32
  %b:4 = wooly.tex a2d f32 f32 %h layer %i (%x, %x) lod %x : f32, f32 -> f32, f32, f32, f32
  %c:4 = wooly.tex dim3 f32 f32 %h (%x, %x, %x) grad(%x, %x, %x) (%x, %x, %x) : f32, f32, f32 -> f32, f32, f32, f32
  %d:4 = wooly.tex dim1 s32 s32 %h (%i) : i32 -> i32, i32, i32, i32
  %e:4 = wooly.tld4 b u32 %h (%x, %x) : f32, f32 -> i32, i32, i32, i32
  %g:4 = wooly.tld4 g f32 %h layer %i (%x, %x) geometry a2d : f32, f32 -> f32, f32, f32, f32
  %k:4 = wooly.tld4 r s32 %h layer %i (%x, %x, %x) geometry acube : f32, f32, f32 -> i32, i32, i32, i32
  %q = wooly.tex_query num_mipmap_levels %h : i32
  %f = wooly.tex_query filter_mode %h : i32
  %w = wooly.tex_query width surface %h : i32
  wooly.st global %out, %a#0 : i64, f32
  wooly.st global %out, %b#1 : i64, f32
  wooly.st global %out, %c#2 : i64, f32
  wooly.st global %out, %d#3 : i64, i32
  wooly.st global %out, %e#0 : i64, i32
  wooly.st global %out, %g#1 : i64, f32
  wooly.st global %out, %k#2 : i64, i32
  wooly.st global %out, %q : i64, i32
  wooly.st global %out, %f : i64, i32
  wooly.st global %out, %w : i64, i32
  wooly.ret
}

// -----

// CHECK-LABEL: llvm.func @surf(
// CHECK: %[[L:.*]] = llvm.call_intrinsic "llvm.nvvm.suld.2d.v4i8.trap"(%{{.*}}, %{{.*}}, %{{.*}}) : (i64, i32, i32) -> !llvm.struct<(i16, i16, i16, i16)>
// CHECK: llvm.call_intrinsic "llvm.nvvm.suld.1d.array.i64.clamp"(%{{.*}}, %{{.*}}, %{{.*}}) : (i64, i32, i32) -> i64
// CHECK: llvm.call_intrinsic "llvm.nvvm.sust.b.2d.v4i8.zero"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i32, i32, i16, i16, i16, i16) -> ()
// CHECK: llvm.call_intrinsic "llvm.nvvm.sust.p.3d.v2i32.trap"
// CHECK: llvm.inline_asm has_side_effects "sured.b.add.2d.u32.trap [$0, {$1, $2}], $3;", "l,r,r,r"
// CHECK: llvm.inline_asm has_side_effects "sured.b.max.3d.s64.clamp [$0, {$1, $2, $3, $3}], $4;", "l,r,r,r,l"
wooly.func @surf(%h: i64 {wooly.type = "u64"}, %x: i32 {wooly.type = "s32"}, %v: i64 {wooly.type = "s64"}) attributes {kernel} {
  %a:4 = wooly.suld dim2 b8 trap %h (%x, %x) : i32, i32 -> i32, i32, i32, i32
  %b = wooly.suld a1d b64 clamp %h layer %x (%x) : i32 -> i64
  wooly.sust dim2 b8 zero %h (%x, %x) (%a#0, %a#1, %a#2, %a#3) : (i32, i32) (i32, i32, i32, i32)
  wooly.sust dim3 b32 trap formatted %h (%x, %x, %x) (%x, %x) : (i32, i32, i32) (i32, i32)
  wooly.sured add u32 dim2 trap %h (%x, %x), %x : (i32, i32) i32
  wooly.sured smax s64 dim3 clamp %h (%x, %x, %x), %b : (i32, i32, i32) i64
  wooly.ret
}
