// RUN: wooly-opt %s --convert-wooly-to-nvvm --split-input-file | FileCheck %s

// The helpers of wooly-expand-arith with an exact NVPTX counterpart become
// that instruction; 16- and 8-bit floats travel as the low bits of an i32,
// and a NaN result is PTX's canonical NaN as in the helper.

// fma.rn.f16 is llvm.fma.f16.
// CHECK-LABEL: llvm.func @fma_f16(
// CHECK: %[[N:.*]] = llvm.mlir.constant(32767 : i16) : i16
// CHECK: %[[A:.*]] = llvm.trunc %{{.*}} : i32 to i16
// CHECK: %[[AH:.*]] = llvm.bitcast %[[A]] : i16 to f16
// CHECK: %[[R:.*]] = llvm.call_intrinsic "llvm.fma.f16"(%[[AH]], %{{.*}}, %{{.*}}) : (f16, f16, f16) -> f16
// CHECK: %[[U:.*]] = llvm.fcmp "uno" %[[R]], %[[R]] : f16
// CHECK: %[[B:.*]] = llvm.bitcast %[[R]] : f16 to i16
// CHECK: %[[S:.*]] = llvm.select %[[U]], %[[N]], %[[B]] : i1, i16
// CHECK: llvm.zext %[[S]] : i16 to i32
// CHECK-NOT: __wooly
func.func private @__wooly_fma_rn_f16(i32, i32, i32) -> i32
wooly.func @fma_f16(%p: i64 {wooly.type = "u64"}, %a: i32 {wooly.type = "u32"}, %b: i32 {wooly.type = "u32"}, %c: i32 {wooly.type = "u32"}) attributes {kernel} {
  %r = func.call @__wooly_fma_rn_f16(%a, %b, %c) : (i32, i32, i32) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// fma.rn.bf16 is llvm.fma.bf16.
// CHECK-LABEL: llvm.func @fma_bf16(
// CHECK: llvm.bitcast %{{.*}} : i16 to bf16
// CHECK: %[[R:.*]] = llvm.call_intrinsic "llvm.fma.bf16"(%{{.*}}, %{{.*}}, %{{.*}}) : (bf16, bf16, bf16) -> bf16
// CHECK: llvm.fcmp "uno" %[[R]], %[[R]] : bf16
// CHECK: llvm.bitcast %[[R]] : bf16 to i16
// CHECK-NOT: __wooly
func.func private @__wooly_fma_rn_bf16(i32, i32, i32) -> i32
wooly.func @fma_bf16(%p: i64 {wooly.type = "u64"}, %a: i32 {wooly.type = "u32"}, %b: i32 {wooly.type = "u32"}, %c: i32 {wooly.type = "u32"}) attributes {kernel} {
  %r = func.call @__wooly_fma_rn_bf16(%a, %b, %c) : (i32, i32, i32) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// cvt.rn.bf16.f64 is fptrunc to bf16 (sm_90), from the f32 itself when the
// f64 widens one (exact either way).
// CHECK-LABEL: llvm.func @cvt_bf16(
// CHECK-SAME: %{{.*}}: f32, %{{.*}}: f64)
// CHECK: ^bb1(%{{.*}}: i64, %[[F:.*]]: f32, %[[D:.*]]: f64):
// CHECK: %[[R:.*]] = llvm.fptrunc %[[D]] : f64 to bf16
// CHECK: llvm.fcmp "uno" %[[D]], %[[D]] : f64
// CHECK: llvm.bitcast %[[R]] : bf16 to i16
// CHECK: %[[R2:.*]] = llvm.fptrunc %[[F]] : f32 to bf16
// CHECK: llvm.fcmp "uno" %[[F]], %[[F]] : f32
// CHECK: llvm.bitcast %[[R2]] : bf16 to i16
// CHECK-NOT: __wooly
func.func private @__wooly_cvt_f64_bf16_rn(f64) -> i32
wooly.func @cvt_bf16(%p: i64 {wooly.type = "u64"}, %f: f32 {wooly.type = "f32"}, %d: f64 {wooly.type = "f64"}) attributes {kernel} {
  %r = func.call @__wooly_cvt_f64_bf16_rn(%d) : (f64) -> i32
  wooly.st global %p, %r : i64, i32
  %w = arith.extf %f : f32 to f64
  %r2 = func.call @__wooly_cvt_f64_bf16_rn(%w) : (f64) -> i32
  wooly.st global %p, %r2 : i64, i32
  wooly.ret
}

// -----

// cvt.rn.satfinite.e4m3x2.f32 of (0, x): the second operand is the low byte.
// An f16 widens to f32 exactly first.
// CHECK-LABEL: llvm.func @cvt_e4m3(
// CHECK: ^bb1(%{{.*}}: i64, %[[F:.*]]: f32, %[[H:.*]]: f16):
// CHECK: %[[Z:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK: %[[P:.*]] = llvm.call_intrinsic "llvm.nvvm.ff.to.e4m3x2.rn"(%[[Z]], %[[F]]) : (f32, f32) -> i16
// CHECK: %[[B:.*]] = llvm.trunc %[[P]] : i16 to i8
// CHECK: %[[U:.*]] = llvm.fcmp "uno" %[[F]], %[[F]] : f32
// CHECK: %[[S:.*]] = llvm.select %[[U]], %{{.*}}, %[[B]] : i1, i8
// CHECK: llvm.zext %[[S]] : i8 to i32
// CHECK: %[[X:.*]] = llvm.fpext %[[H]] : f16 to f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ff.to.e4m3x2.rn"(%{{.*}}, %[[X]]) : (f32, f32) -> i16
// CHECK-NOT: __wooly
func.func private @__wooly_cvt_f64_e4m3_rn_satfinite(f64) -> i32
wooly.func @cvt_e4m3(%p: i64 {wooly.type = "u64"}, %f: f32 {wooly.type = "f32"}, %h: f16 {wooly.type = "f16"}) attributes {kernel} {
  %w = arith.extf %f : f32 to f64
  %r = func.call @__wooly_cvt_f64_e4m3_rn_satfinite(%w) : (f64) -> i32
  wooly.st global %p, %r : i64, i32
  %wh = arith.extf %h : f16 to f64
  %r2 = func.call @__wooly_cvt_f64_e4m3_rn_satfinite(%wh) : (f64) -> i32
  wooly.st global %p, %r2 : i64, i32
  wooly.ret
}

// -----

// cvt.rn.satfinite.e5m2x2.f32 likewise.
// CHECK-LABEL: llvm.func @cvt_e5m2(
// CHECK: llvm.call_intrinsic "llvm.nvvm.ff.to.e5m2x2.rn"(%{{.*}}, %{{.*}}) : (f32, f32) -> i16
// CHECK-NOT: __wooly
func.func private @__wooly_cvt_f64_e5m2_rn_satfinite(f64) -> i32
wooly.func @cvt_e5m2(%p: i64 {wooly.type = "u64"}, %f: f32 {wooly.type = "f32"}) attributes {kernel} {
  %w = arith.extf %f : f32 to f64
  %r = func.call @__wooly_cvt_f64_e5m2_rn_satfinite(%w) : (f64) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// cvt.rn.f16x2.e4m3x2 of the low byte (upper byte zero): element 0.
// CHECK-LABEL: llvm.func @cvt_e4m3_f16(
// CHECK: %[[B:.*]] = llvm.trunc %{{.*}} : i32 to i8
// CHECK: %[[W:.*]] = llvm.zext %[[B]] : i8 to i16
// CHECK: %[[V:.*]] = llvm.call_intrinsic "llvm.nvvm.e4m3x2.to.f16x2.rn"(%[[W]]) : (i16) -> vector<2xf16>
// CHECK: %[[R:.*]] = llvm.extractelement %[[V]][%{{.*}} : i32] : vector<2xf16>
// CHECK: llvm.fcmp "uno" %[[R]], %[[R]] : f16
// CHECK-NOT: __wooly
func.func private @__wooly_cvt_e4m3_f16(i32) -> i32
wooly.func @cvt_e4m3_f16(%p: i64 {wooly.type = "u64"}, %a: i32 {wooly.type = "u32"}) attributes {kernel} {
  %r = func.call @__wooly_cvt_e4m3_f16(%a) : (i32) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// cvt.rn.f16x2.e5m2x2 likewise.
// CHECK-LABEL: llvm.func @cvt_e5m2_f16(
// CHECK: llvm.call_intrinsic "llvm.nvvm.e5m2x2.to.f16x2.rn"(%{{.*}}) : (i16) -> vector<2xf16>
// CHECK-NOT: __wooly
func.func private @__wooly_cvt_e5m2_f16(i32) -> i32
wooly.func @cvt_e5m2_f16(%p: i64 {wooly.type = "u64"}, %a: i32 {wooly.type = "u32"}) attributes {kernel} {
  %r = func.call @__wooly_cvt_e5m2_f16(%a) : (i32) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// The correctly rounded ops that wooly-expand-arith emits for div.approx,
// div.full, rcp.approx and sqrt.approx (marked wooly.approx) become the
// GPU's own instructions, so that the results are nvcc's bits; rcp.approx
// without ftz, which has no NVVM intrinsic, is inline PTX. Unmarked ops and
// forms without a GPU instruction (f64 sqrt.approx) stay as they are.
// CHECK-LABEL: llvm.func @approx_arith(
// CHECK: llvm.call_intrinsic "llvm.nvvm.div.approx.f"(%[[A:.*]], %[[B:.*]]) : (f32, f32) -> f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.div.approx.ftz.f"(%[[A]], %[[B]]) : (f32, f32) -> f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.div.full"(%[[A]], %[[B]]) : (f32, f32) -> f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.rcp.approx.ftz.f"(%[[B]]) : (f32) -> f32
// CHECK: llvm.inline_asm "rcp.approx.f32 $0, $1;", "=f,f" %[[B]] : (f32) -> f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.rcp.approx.ftz.d"(%[[D:.*]]) : (f64) -> f64
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.approx.f"(%[[A]]) : (f32) -> f32
// CHECK: llvm.intr.sqrt(%[[D]]) : (f64) -> f64
// CHECK: llvm.fdiv %[[A]], %[[B]] : f32
// CHECK-NOT: wooly.approx
wooly.func @approx_arith(%p: i64 {wooly.type = "u64"}, %a: f32, %b: f32, %d: f64) attributes {kernel} {
  %one = arith.constant 1.0 : f32
  %oned = arith.constant 1.0 : f64
  %0 = arith.divf %a, %b {wooly.approx = "div.approx"} : f32
  %1 = arith.divf %a, %b {wooly.approx = "div.approx.ftz"} : f32
  %2 = arith.divf %a, %b {wooly.approx = "div.full"} : f32
  %3 = arith.divf %one, %b {wooly.approx = "rcp.approx.ftz"} : f32
  %4 = arith.divf %one, %b {wooly.approx = "rcp.approx"} : f32
  %5 = arith.divf %oned, %d {wooly.approx = "rcp.approx.ftz"} : f64
  %6 = math.sqrt %a {wooly.approx = "sqrt.approx"} : f32
  %7 = math.sqrt %d {wooly.approx = "sqrt.approx"} : f64
  %8 = arith.divf %a, %b : f32
  wooly.st global %p, %0 : i64, f32
  wooly.st global %p, %1 : i64, f32
  wooly.st global %p, %2 : i64, f32
  wooly.st global %p, %3 : i64, f32
  wooly.st global %p, %4 : i64, f32
  wooly.st global %p, %5 : i64, f64
  wooly.st global %p, %6 : i64, f32
  wooly.st global %p, %7 : i64, f64
  wooly.st global %p, %8 : i64, f32
  wooly.ret
}

// -----

// cvt.rz.bf16.f32 (here through the f64 helper): rounded to f32 and then to
// bf16, each to nearest and stepped back one unit toward zero where that
// went away from zero (GPUConversionsTest checks every mode against APFloat).
// CHECK-LABEL: llvm.func @cvt_rz_bf16(
// CHECK: %[[F:.*]] = llvm.fptrunc %{{.*}} : f64 to f32
// CHECK: llvm.intr.fabs
// CHECK: llvm.fcmp "ogt"
// CHECK: llvm.fptrunc %{{.*}} : f32 to bf16
// CHECK: llvm.fpext %{{.*}} : bf16 to f32
// CHECK: llvm.fcmp "ogt"
// CHECK: llvm.zext %{{.*}} : i16 to i32
// CHECK-NOT: __wooly
func.func private @__wooly_cvt_f64_bf16_rz(f64) -> i32
wooly.func @cvt_rz_bf16(%p: i64 {wooly.type = "u64"}, %x: f64 {wooly.type = "f64"}) attributes {kernel} {
  %r = func.call @__wooly_cvt_f64_bf16_rz(%x) : (f64) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}
