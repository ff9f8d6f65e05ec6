// RUN: wooly-opt %s --convert-wooly-to-nvvm --split-input-file | FileCheck %s

// mma.sync and wmma shapes and types without an exact NVVM intrinsic are the
// PTX instruction itself: registers as `$N` operands with their constraints
// (r: 32-bit, f: f32, d: f64; l: a 64-bit address).

// CHECK-LABEL: llvm.func @mma_m16n8k8
// CHECK: llvm.inline_asm has_side_effects "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {$0, $1, $2, $3}, {$4, $5}, {$6}, {$7, $8, $9, $10};", "=f,=f,=f,=f,r,r,r,f,f,f,f"
wooly.func @mma_m16n8k8(%p: i64 {wooly.type = "u64"}, %a: i32 {wooly.type = "u32"}, %f: f32 {wooly.type = "f32"}) attributes {kernel} {
  %d:4 = wooly.mma_sync "m16n8k8" row col f32 f16 f16 f32 (%a, %a) (%a) (%f, %f, %f, %f) : (i32, i32) (i32) (f32, f32, f32, f32) -> f32, f32, f32, f32
  wooly.st global %p, %d#3 : i64, f32
  wooly.ret
}

// -----

// CHECK-LABEL: llvm.func @dmma
// CHECK: "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {$0, $1}, {$2}, {$3}, {$4, $5};", "=d,=d,d,d,d,d"
wooly.func @dmma(%p: i64 {wooly.type = "u64"}, %a: f64 {wooly.type = "f64"}) attributes {kernel} {
  %d:2 = wooly.mma_sync "m8n8k4" row col f64 f64 f64 f64 (%a) (%a) (%a, %a) : (f64) (f64) (f64, f64) -> f64, f64
  wooly.st global %p, %d#1 : i64, f64
  wooly.ret
}

// -----

// CHECK-LABEL: llvm.func @wmma_bf16
// CHECK: "wmma.load.a.sync.aligned.row.m16n16k16.global.bf16 {$0, $1, $2, $3}, [$4], $5;", "=r,=r,=r,=r,l,r"
// CHECK: "wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32 {$0, $1, $2, $3, $4, $5, $6, $7}, {$8, $9, $10, $11}, {$12, $13, $14, $15}, {$16, $17, $18, $19, $20, $21, $22, $23};"
// CHECK: "wmma.store.d.sync.aligned.row.m16n16k16.shared.s32 [$0], {$1, $2, $3, $4, $5, $6, $7, $8}, $9;", "r,r,r,r,r,r,r,r,r,r"
wooly.func @wmma_bf16(%p: i64 {wooly.type = "u64"}, %s: i32 {wooly.type = "u32"}, %f: f32 {wooly.type = "f32"}) attributes {kernel} {
  %a:4 = wooly.wmma_load a row "m16n16k16" bf16 global %p, %s : i64 -> i32, i32, i32, i32
  %d:8 = wooly.wmma_mma row col "m16n16k16" f32 bf16 bf16 f32 (%a#0, %a#1, %a#2, %a#3) (%a#0, %a#1, %a#2, %a#3) (%f, %f, %f, %f, %f, %f, %f, %f) : (i32, i32, i32, i32) (i32, i32, i32, i32) (f32, f32, f32, f32, f32, f32, f32, f32) -> f32, f32, f32, f32, f32, f32, f32, f32
  wooly.wmma_store row "m16n16k16" s32 shared %s, %s (%s, %s, %s, %s, %s, %s, %s, %s) : i32, i32, i32, i32, i32, i32, i32, i32, i32
  wooly.st global %p, %d#7 : i64, f32
  wooly.ret
}
