// RUN: wooly-opt %s --convert-wooly-to-rocdl --split-input-file | FileCheck %s

// Directed rounding: the one correctly rounded VALU instruction runs under
// MODE.FP_ROUND (f32 bits 0-1, f64/f16 bits 2-3: 1 = +inf, 2 = -inf,
// 3 = zero) in a single asm block that saves and restores MODE, so nothing
// can be scheduled between the switches; a - b is a + (-b).
// CHECK-LABEL: llvm.func @rounding(
// CHECK: %[[RZ:.*]] = llvm.inline_asm "s_getreg_b32 $1, hwreg(HW_REG_MODE, 0, 4)\0As_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 4), 15\0As_nop 3\0Av_add_f32 $0, $2, $3\0As_nop 3\0As_setreg_b32 hwreg(HW_REG_MODE, 0, 4), $1", "=v,=&s,v,v" %{{.*}}, %{{.*}} : (f32, f32) -> !llvm.struct<(f32, i32)>
// CHECK: %[[R:.*]] = llvm.extractvalue %[[RZ]][0] : !llvm.struct<(f32, i32)>
// CHECK: %[[NEG:.*]] = llvm.fneg %[[D:.*]] : f64
// CHECK: llvm.inline_asm "{{.*}}hwreg(HW_REG_MODE, 0, 4), 10\0As_nop 3\0Av_add_f64 $0, $2, $3{{.*}}", "=v,=&s,v,v" %[[D]], %[[NEG]] : (f64, f64) -> !llvm.struct<(f64, i32)>
// CHECK: llvm.inline_asm "{{.*}}hwreg(HW_REG_MODE, 0, 4), 5\0As_nop 3\0Av_fma_f32 $0, $2, $3, $4{{.*}}", "=v,=&s,v,v,v" %{{.*}}, %{{.*}}, %[[R]] : (f32, f32, f32) -> !llvm.struct<(f32, i32)>
// CHECK-NOT: __wooly_
func.func private @__wooly_fadd_rz_f32(f32, f32) -> f32
func.func private @__wooly_fsub_rm_f64(f64, f64) -> f64
func.func private @__wooly_fma_rp_f32(f32, f32, f32) -> f32
wooly.func @rounding(%p: i64 {wooly.type = "u64"}, %a: f32 {wooly.type = "f32"}, %d: f64 {wooly.type = "f64"}) attributes {kernel} {
  %r = func.call @__wooly_fadd_rz_f32(%a, %a) : (f32, f32) -> f32
  %s = func.call @__wooly_fsub_rm_f64(%d, %d) : (f64, f64) -> f64
  %t = func.call @__wooly_fma_rp_f32(%a, %a, %r) : (f32, f32, f32) -> f32
  wooly.st global %p, %t : i64, f32
  wooly.st global %p, %s : i64, f64
  wooly.ret
}

// -----

// fma.rn.f16 is llvm.fma.f16 (v_fma_f16 rounds once); 16-bit floats travel
// as the low bits of an i32 and a NaN result is PTX's canonical NaN.
// CHECK-LABEL: llvm.func @fma_f16(
// CHECK: %[[NAN:.*]] = llvm.mlir.constant(32767 : i16) : i16
// CHECK: %[[R:.*]] = llvm.call_intrinsic "llvm.fma.f16"(%{{.*}}, %{{.*}}, %{{.*}}) : (f16, f16, f16) -> f16
// CHECK: %[[ISNAN:.*]] = llvm.fcmp "uno" %[[R]], %[[R]] : f16
// CHECK: %[[BITS:.*]] = llvm.bitcast %[[R]] : f16 to i16
// CHECK: %[[SEL:.*]] = llvm.select %[[ISNAN]], %[[NAN]], %[[BITS]] : i1, i16
// CHECK: llvm.zext %[[SEL]] : i16 to i32
func.func private @__wooly_fma_rn_f16(i32, i32, i32) -> i32
wooly.func @fma_f16(%p: i64 {wooly.type = "u64"}, %a: i32 {wooly.type = "u32"}, %b: i32 {wooly.type = "u32"}, %c: i32 {wooly.type = "u32"}) attributes {kernel} {
  %r = func.call @__wooly_fma_rn_f16(%a, %b, %c) : (i32, i32, i32) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// cvt.rn.bf16.f64 of any other f64 goes through f32 rounded to odd, then
// rounds once to bf16.
// CHECK-LABEL: llvm.func @cvt_bf16_f64(
// CHECK: ^bb1(%{{.*}}: i64, %[[D:.*]]: f64)
// CHECK: %[[R:.*]] = llvm.fptrunc %[[D]] : f64 to f32
// CHECK: llvm.fcmp "one"
// CHECK: %[[ODD:.*]] = llvm.bitcast %{{.*}} : i32 to f32
// CHECK: llvm.fptrunc %[[ODD]] : f32 to bf16
func.func private @__wooly_cvt_f64_bf16_rn(f64) -> i32
wooly.func @cvt_bf16_f64(%p: i64 {wooly.type = "u64"}, %d: f64 {wooly.type = "f64"}) attributes {kernel} {
  %r = func.call @__wooly_cvt_f64_bf16_rn(%d) : (f64) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// cvt.rn.bf16.f64 of an f64 widened from an f32 rounds once from the f32.
// CHECK-LABEL: llvm.func @cvt_bf16(
// CHECK: ^bb1(%{{.*}}: i64, %[[F:.*]]: f32)
// CHECK: llvm.fptrunc %[[F]] : f32 to bf16
// CHECK: llvm.fcmp "uno" %[[F]], %[[F]] : f32
func.func private @__wooly_cvt_f64_bf16_rn(f64) -> i32
wooly.func @cvt_bf16(%p: i64 {wooly.type = "u64"}, %f: f32 {wooly.type = "f32"}) attributes {kernel} {
  %w = arith.extf %f : f32 to f64
  %r = func.call @__wooly_cvt_f64_bf16_rn(%w) : (f64) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// .approx: sin/cos are llvm.amdgcn.sin/cos of the input in revolutions
// (x * 1/(2 pi), reduced with fract); ex2/lg2 stay llvm.exp2/log2 and rsqrt
// 1/sqrt (v_exp/v_log/v_rsq with denormal handling); tanh calls ocml's
// __ocml_tanh_f32/f16, declared in the module (per element for vectors).
// CHECK-DAG: llvm.func @__ocml_tanh_f16(f16) -> f16
// CHECK-DAG: llvm.func @__ocml_tanh_f32(f32) -> f32
// CHECK-LABEL: llvm.func @approx(
// CHECK: %[[INV2PI:.*]] = llvm.mlir.constant(0.159154937 : f32) : f32
// CHECK: %[[REV:.*]] = llvm.fmul %{{.*}}, %[[INV2PI]] : f32
// CHECK: %[[FR:.*]] = llvm.call_intrinsic "llvm.amdgcn.fract.f32"(%[[REV]]) : (f32) -> f32
// CHECK: %[[SIN:.*]] = llvm.call_intrinsic "llvm.amdgcn.sin.f32"(%[[FR]]) : (f32) -> f32
// CHECK: %[[REV2:.*]] = llvm.fmul %[[SIN]], %[[INV2PI]] : f32
// CHECK: %[[FR2:.*]] = llvm.call_intrinsic "llvm.amdgcn.fract.f32"(%[[REV2]]) : (f32) -> f32
// CHECK: %[[COS:.*]] = llvm.call_intrinsic "llvm.amdgcn.cos.f32"(%[[FR2]]) : (f32) -> f32
// CHECK: %[[EX:.*]] = llvm.intr.exp2(%[[COS]]) : (f32) -> f32
// CHECK: %[[LG:.*]] = llvm.intr.log2(%[[EX]]) : (f32) -> f32
// CHECK: %[[SQ:.*]] = llvm.intr.sqrt(%[[LG]]) : (f32) -> f32
// CHECK: %[[RS:.*]] = llvm.fdiv %{{.*}}, %[[SQ]] : f32
// CHECK: llvm.call @__ocml_tanh_f32(%[[RS]]) : (f32) -> f32
// CHECK: llvm.call @__ocml_tanh_f16(%{{.*}}) : (f16) -> f16
// CHECK: llvm.call @__ocml_tanh_f16(%{{.*}}) : (f16) -> f16
wooly.func @approx(%p: i64 {wooly.type = "u64"}, %x: f32 {wooly.type = "f32"}, %v: vector<2xf16>) attributes {kernel} {
  %s = math.sin %x : f32
  %c = math.cos %s : f32
  %e = math.exp2 %c : f32
  %l = math.log2 %e : f32
  %r = math.rsqrt %l : f32
  %t = math.tanh %r : f32
  %th = math.tanh %v : vector<2xf16>
  wooly.st global %p, %t : i64, f32
  wooly.st global %p, %th : i64, vector<2xf16>
  wooly.ret
}

// -----

// fma.rn.bf16 (no bf16 fma on gfx9): the f32 fma rounded to odd (toward
// zero, lowest bit set when the fma rounded up and down differ), then
// rounded to nearest bf16: one rounding of the exact result.
// CHECK-LABEL: llvm.func @fma_bf16(
// CHECK: %[[A:.*]] = llvm.fpext %{{.*}} : bf16 to f32
// CHECK: %[[B:.*]] = llvm.fpext %{{.*}} : bf16 to f32
// CHECK: %[[C:.*]] = llvm.fpext %{{.*}} : bf16 to f32
// CHECK: %[[RZ:.*]] = llvm.inline_asm "{{.*}}hwreg(HW_REG_MODE, 0, 4), 15\0As_nop 3\0Av_fma_f32 $0, $2, $3, $4{{.*}}" %[[A]], %[[B]], %[[C]]
// CHECK: %[[Z:.*]] = llvm.extractvalue %[[RZ]][0]
// CHECK: %[[RP:.*]] = llvm.inline_asm "{{.*}}hwreg(HW_REG_MODE, 0, 4), 5\0As_nop 3\0Av_fma_f32 $0, $2, $3, $4{{.*}}" %[[A]], %[[B]], %[[C]]
// CHECK: %[[UP:.*]] = llvm.extractvalue %[[RP]][0]
// CHECK: %[[RM:.*]] = llvm.inline_asm "{{.*}}hwreg(HW_REG_MODE, 0, 4), 10\0As_nop 3\0Av_fma_f32 $0, $2, $3, $4{{.*}}" %[[A]], %[[B]], %[[C]]
// CHECK: %[[DOWN:.*]] = llvm.extractvalue %[[RM]][0]
// CHECK: %[[INEXACT:.*]] = llvm.fcmp "one" %[[UP]], %[[DOWN]] : f32
// CHECK: %[[BITS:.*]] = llvm.bitcast %[[Z]] : f32 to i32
// CHECK: %[[STICKY:.*]] = llvm.zext %[[INEXACT]] : i1 to i32
// CHECK: %[[ODDBITS:.*]] = llvm.or %[[BITS]], %[[STICKY]] : i32
// CHECK: %[[ODD:.*]] = llvm.bitcast %[[ODDBITS]] : i32 to f32
// CHECK: llvm.fptrunc %[[ODD]] : f32 to bf16
func.func private @__wooly_fma_rn_bf16(i32, i32, i32) -> i32
wooly.func @fma_bf16(%p: i64 {wooly.type = "u64"}, %a: i32 {wooly.type = "u32"}, %b: i32 {wooly.type = "u32"}, %c: i32 {wooly.type = "u32"}) attributes {kernel} {
  %r = func.call @__wooly_fma_rn_bf16(%a, %b, %c) : (i32, i32, i32) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// f32 (widened to f64 exactly) to e4m3, .rn.satfinite: the significand with
// its implicit bit is shifted right by 23 - 3 (plus the distance below
// e4m3's smallest normal exponent -6, capped at 25) and rounded to nearest
// even; the biased exponent goes above it; beyond 0x7e (448) saturates;
// NaN is 0x7f; the sign is bit 7.
// CHECK-LABEL: llvm.func @cvt_e4m3(
// CHECK-DAG: %[[MAX:.*]] = llvm.mlir.constant(126 : i32) : i32
// CHECK-DAG: %[[NAN:.*]] = llvm.mlir.constant(127 : i32) : i32
// CHECK-DAG: %[[MINEXP:.*]] = llvm.mlir.constant(-6 : i32) : i32
// CHECK-DAG: %[[LAST:.*]] = llvm.mlir.constant(20 : i32) : i32
// CHECK: %[[BITS:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK: %[[EXP:.*]] = llvm.sub %{{.*}}, %[[NAN]] : i32
// CHECK: %[[BELOW:.*]] = llvm.sub %[[MINEXP]], %[[EXP]] : i32
// CHECK: %[[SUB:.*]] = llvm.icmp "sgt" %[[BELOW]]
// CHECK: llvm.add %{{.*}}, %[[LAST]] : i32
// CHECK: %[[Q:.*]] = llvm.lshr
// CHECK: %[[UP:.*]] = llvm.or %{{.*}}, %{{.*}} : i1
// CHECK: %[[INC:.*]] = llvm.zext %[[UP]] : i1 to i32
// CHECK: %[[QR:.*]] = llvm.add %[[Q]], %[[INC]] : i32
// CHECK: %[[ENC:.*]] = llvm.select %[[SUB]], %[[QR]], %{{.*}} : i1, i32
// CHECK: %[[OVER:.*]] = llvm.icmp "ugt" %[[ENC]], %[[MAX]] : i32
// CHECK: llvm.select %[[OVER]], %[[MAX]], %[[ENC]] : i1, i32
func.func private @__wooly_cvt_f64_e4m3_rn_satfinite(f64) -> i32
wooly.func @cvt_e4m3(%p: i64 {wooly.type = "u64"}, %f: f32 {wooly.type = "f32"}) attributes {kernel} {
  %w = arith.extf %f : f32 to f64
  %r = func.call @__wooly_cvt_f64_e4m3_rn_satfinite(%w) : (f64) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// e5m2 to f16 is the upper byte of the f16 (exact); a NaN is PTX's
// canonical f16 NaN.
// CHECK-LABEL: llvm.func @cvt_e5m2_f16(
// CHECK: %[[BYTE:.*]] = llvm.and %{{.*}}, %{{.*}} : i32
// CHECK: %[[H:.*]] = llvm.shl %[[BYTE]], %{{.*}} : i32
// CHECK: %[[ABS:.*]] = llvm.and %[[H]], %{{.*}} : i32
// CHECK: %[[ISNAN:.*]] = llvm.icmp "ugt" %[[ABS]], %{{.*}} : i32
// CHECK: llvm.select %[[ISNAN]], %{{.*}}, %[[H]] : i1, i32
func.func private @__wooly_cvt_e5m2_f16(i32) -> i32
wooly.func @cvt_e5m2_f16(%p: i64 {wooly.type = "u64"}, %a: i32 {wooly.type = "u32"}) attributes {kernel} {
  %r = func.call @__wooly_cvt_e5m2_f16(%a) : (i32) -> i32
  wooly.st global %p, %r : i64, i32
  wooly.ret
}

// -----

// Directed rounding through f64: f32 division, square root and reciprocal
// are the correctly rounded f64 result converted under the mode
// (v_cvt_f32_f64); cvt.rz.f32.f64 is that conversion; s64/u64 to f64 adds
// the exactly converted halves under the mode, and to f32 converts that
// under the mode again (directed roundings onto nested grids compose).
// CHECK-LABEL: llvm.func @via_f64(
// CHECK: ^bb1(%{{.*}}: i64, %[[A:.*]]: f32, %[[D:.*]]: f64, %[[N:.*]]: i64)
// CHECK: %[[AD:.*]] = llvm.fpext %[[A]] : f32 to f64
// CHECK: %[[BD:.*]] = llvm.fpext %[[A]] : f32 to f64
// CHECK: %[[Q:.*]] = llvm.fdiv %[[AD]], %[[BD]] : f64
// CHECK: llvm.inline_asm "{{.*}}hwreg(HW_REG_MODE, 0, 4), 15\0As_nop 3\0Av_cvt_f32_f64 $0, $2\0A{{.*}}", "=v,=&s,v" %[[Q]] : (f64) -> !llvm.struct<(f32, i32)>
// CHECK: %[[S:.*]] = llvm.intr.sqrt(%{{.*}}) : (f64) -> f64
// CHECK: llvm.inline_asm "{{.*}}, 5\0As_nop 3\0Av_cvt_f32_f64 $0, $2{{.*}}" %[[S]]
// CHECK: %[[R:.*]] = llvm.fdiv %{{.*}}, %{{.*}} : f64
// CHECK: llvm.inline_asm "{{.*}}, 10\0As_nop 3\0Av_cvt_f32_f64 $0, $2{{.*}}" %[[R]]
// CHECK: llvm.inline_asm "{{.*}}, 15\0As_nop 3\0Av_cvt_f32_f64 $0, $2{{.*}}" %[[D]]
// CHECK: %[[HI:.*]] = llvm.ashr %[[N]], %{{.*}} : i64
// CHECK: %[[HI32:.*]] = llvm.trunc %[[HI]] : i64 to i32
// CHECK: %[[LO32:.*]] = llvm.trunc %[[N]] : i64 to i32
// CHECK: %[[HID:.*]] = llvm.sitofp %[[HI32]] : i32 to f64
// CHECK: %[[HIS:.*]] = llvm.fmul %[[HID]], %{{.*}} : f64
// CHECK: %[[LOD:.*]] = llvm.uitofp %[[LO32]] : i32 to f64
// CHECK: %[[SUM:.*]] = llvm.inline_asm "{{.*}}, 10\0As_nop 3\0Av_add_f64 $0, $2, $3{{.*}}" %[[HIS]], %[[LOD]]
// CHECK: %[[SUMV:.*]] = llvm.extractvalue %[[SUM]][0] : !llvm.struct<(f64, i32)>
// CHECK: llvm.inline_asm "{{.*}}, 10\0As_nop 3\0Av_cvt_f32_f64 $0, $2{{.*}}" %[[SUMV]]
// CHECK: llvm.lshr %[[N]], %{{.*}} : i64
// CHECK: llvm.uitofp
// CHECK: llvm.inline_asm "{{.*}}, 5\0As_nop 3\0Av_add_f64 $0, $2, $3{{.*}}"
func.func private @__wooly_fdiv_rz_f32(f32, f32) -> f32
func.func private @__wooly_fsqrt_rp_f32(f32) -> f32
func.func private @__wooly_frcp_rm_f32(f32) -> f32
func.func private @__wooly_cvt_f64_f32_rz(f64) -> f32
func.func private @__wooly_cvt_s64_f32_rm(i64) -> f32
func.func private @__wooly_cvt_u64_f64_rp(i64) -> f64
wooly.func @via_f64(%p: i64 {wooly.type = "u64"}, %a: f32 {wooly.type = "f32"}, %d: f64 {wooly.type = "f64"}, %n: i64 {wooly.type = "s64"}) attributes {kernel} {
  %q = func.call @__wooly_fdiv_rz_f32(%a, %a) : (f32, f32) -> f32
  %s = func.call @__wooly_fsqrt_rp_f32(%q) : (f32) -> f32
  %r = func.call @__wooly_frcp_rm_f32(%s) : (f32) -> f32
  %c = func.call @__wooly_cvt_f64_f32_rz(%d) : (f64) -> f32
  %i = func.call @__wooly_cvt_s64_f32_rm(%n) : (i64) -> f32
  %u = func.call @__wooly_cvt_u64_f64_rp(%n) : (i64) -> f64
  wooly.st global %p, %r : i64, f32
  wooly.st global %p, %c : i64, f32
  wooly.st global %p, %i : i64, f32
  wooly.st global %p, %u : i64, f64
  wooly.ret
}
