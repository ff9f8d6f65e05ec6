// RUN: wooly-opt %s --convert-wooly-to-nvvm=chip=sm_80 --split-input-file --verify-diagnostics | FileCheck %s

// Below sm_90 there is no cvt.rn.bf16.f64: an f64 that is no widening of an
// f32 goes through f32 rounded to odd (round to nearest, a step back toward
// zero when that rounded away, the lowest bit set when inexact), then
// cvt.rn.bf16.f32 (sm_80): one rounding in all.
// CHECK-LABEL: llvm.func @bf16_of_f64(
// CHECK: ^bb1(%{{.*}}: i64, %[[D:.*]]: f64)
// CHECK: %[[R:.*]] = llvm.fptrunc %[[D]] : f64 to f32
// CHECK: %[[B:.*]] = llvm.fpext %[[R]] : f32 to f64
// CHECK: %[[INEXACT:.*]] = llvm.fcmp "one" %[[B]], %[[D]] : f64
// CHECK: llvm.fcmp "ogt"
// CHECK: %[[BITS:.*]] = llvm.bitcast %[[R]] : f32 to i32
// CHECK: llvm.sub %[[BITS]]
// CHECK: llvm.or
// CHECK: %[[ODD:.*]] = llvm.bitcast %{{.*}} : i32 to f32
// CHECK: llvm.fptrunc %[[ODD]] : f32 to bf16
func.func private @__wooly_cvt_f64_bf16_rn(f64) -> i32
wooly.func @bf16_of_f64(%p: i64 {wooly.type = "u64"}, %d: f64 {wooly.type = "f64"}) attributes {kernel} {
  %r = func.call @__wooly_cvt_f64_bf16_rn(%d) : (f64) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// An f64 widened from an f32 rounds once, with cvt.rn.bf16.f32 (sm_80).
// CHECK-LABEL: llvm.func @bf16_of_f32(
// CHECK: ^bb1(%{{.*}}: i64, %[[F:.*]]: f32)
// CHECK: llvm.fptrunc %[[F]] : f32 to bf16
func.func private @__wooly_cvt_f64_bf16_rn(f64) -> i32
wooly.func @bf16_of_f32(%p: i64 {wooly.type = "u64"}, %f: f32 {wooly.type = "f32"}) attributes {kernel} {
  %w = arith.extf %f : f32 to f64
  %r = func.call @__wooly_cvt_f64_bf16_rn(%w) : (f64) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// The fp8 conversions need sm_89; below, they are computed in integer
// arithmetic (exact, as the helpers).
// CHECK-LABEL: llvm.func @fp8(
// CHECK-NOT: llvm.nvvm.e4m3x2
// CHECK-NOT: llvm.nvvm.ff.to
// CHECK: llvm.return
func.func private @__wooly_cvt_e4m3_f16(i32) -> i32
func.func private @__wooly_cvt_f64_e5m2_rn_satfinite(f64) -> i32
wooly.func @fp8(%p: i64 {wooly.type = "u64"}, %a: i32 {wooly.type = "u32"}, %f: f32 {wooly.type = "f32"}) attributes {kernel} {
  %r = func.call @__wooly_cvt_e4m3_f16(%a) : (i32) -> i32
  wooly.st global %p, %r : i64, i32
  %w = arith.extf %f : f32 to f64
  %e = func.call @__wooly_cvt_f64_e5m2_rn_satfinite(%w) : (f64) -> i32
  wooly.st global %p, %e : i64, i32
  wooly.ret
}

// -----

// An fp8 conversion of an f64 that is no widening of an f32 would round
// twice: refused.
func.func private @__wooly_cvt_f64_e4m3_rn_satfinite(f64) -> i32
wooly.func @k(%p: i64 {wooly.type = "u64"}, %d: f64 {wooly.type = "f64"}) attributes {kernel} {
  // expected-error @+1 {{helper '__wooly_cvt_f64_e4m3_rn_satfinite' is not supported yet on nvptx}}
  %r = func.call @__wooly_cvt_f64_e4m3_rn_satfinite(%d) : (f64) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// cvt.rn.f16.f64 goes through f32 rounded to odd too (exact on any chip).
// CHECK-LABEL: llvm.func @f16_of_f64(
// CHECK: llvm.fptrunc %{{.*}} : f64 to f32
// CHECK: %[[ODD:.*]] = llvm.bitcast %{{.*}} : i32 to f32
// CHECK: llvm.fptrunc %[[ODD]] : f32 to f16
func.func private @__wooly_cvt_f64_f16_rn(f64) -> i32
wooly.func @f16_of_f64(%p: i64 {wooly.type = "u64"}, %d: f64 {wooly.type = "f64"}) attributes {kernel} {
  %r = func.call @__wooly_cvt_f64_f16_rn(%d) : (f64) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}
