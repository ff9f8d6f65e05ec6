// RUN: wooly-opt %s --wooly-expand-arith --split-input-file | FileCheck %s

// Float to s32 with rzi: NaN -> 0, saturation at the powers of two.
// CHECK-LABEL: wooly.func @f32_to_s32
// CHECK: %[[T:.*]] = math.trunc %arg0 : f32
// CHECK: arith.cmpf oge, %[[T]]
// CHECK: arith.cmpf olt, %[[T]]
// CHECK: arith.cmpf uno, %[[T]], %[[T]]
// CHECK: arith.fptosi %{{.*}} : f32 to i32
wooly.func @f32_to_s32(%a: f32) -> i32 {
  %r = wooly.cvt %a rzi : f32 to s32 : f32 -> i32
  wooly.ret %r : i32
}

// -----

// rni to u16 rounds to even first.
// CHECK-LABEL: wooly.func @f32_to_u16
// CHECK: math.roundeven %arg0 : f32
// CHECK: arith.fptoui %{{.*}} : f32 to i16
wooly.func @f32_to_u16(%a: f32) -> i16 {
  %r = wooly.cvt %a rni : f32 to u16 : f32 -> i16
  wooly.ret %r : i16
}

// -----

// sat s32 -> u32 clamps in a wider type.
// CHECK-LABEL: wooly.func @sat_s32_u32
// CHECK: arith.extsi %arg0 : i32 to i33
// CHECK: arith.cmpi slt
// CHECK: arith.cmpi sgt
// CHECK: arith.trunci %{{.*}} : i33 to i32
wooly.func @sat_s32_u32(%a: i32) -> i32 {
  %r = wooly.cvt %a sat : s32 to u32 : i32 -> i32
  wooly.ret %r : i32
}

// -----

// s32 -> f32 with rz calls the exact integer helper on 64 bits.
// CHECK-LABEL: wooly.func @s32_to_f32_rz
// CHECK: %[[W:.*]] = arith.extsi %arg0 : i32 to i64
// CHECK: call @__wooly_cvt_s64_f32_rz(%[[W]]) : (i64) -> f32
wooly.func @s32_to_f32_rz(%a: i32) -> f32 {
  %r = wooly.cvt %a rz : s32 to f32 : i32 -> f32
  wooly.ret %r : f32
}

// -----

// f64 -> f32 rn is a truncf with a canonical NaN.
// CHECK-LABEL: wooly.func @f64_to_f32
// CHECK: arith.truncf %arg0 : f64 to f32
// CHECK: arith.select
wooly.func @f64_to_f32(%a: f64) -> f32 {
  %r = wooly.cvt %a rn : f64 to f32 : f64 -> f32
  wooly.ret %r : f32
}

// -----

// cvt.sat.f32.f32 only clamps; cvt.rni.f32.f32 rounds to integral.
// CHECK-LABEL: wooly.func @same_type
// CHECK: arith.cmpf ogt
// CHECK: math.roundeven
wooly.func @same_type(%a: f32) -> (f32, f32) {
  %r = wooly.cvt %a sat : f32 to f32 : f32 -> f32
  %s = wooly.cvt %a rni : f32 to f32 : f32 -> f32
  wooly.ret %r, %s : f32, f32
}

// -----

// Two f32 to bf16x2: the first operand goes to the upper element.
// CHECK-LABEL: wooly.func @pair_bf16x2
// CHECK: %[[D1:.*]] = arith.extf %arg1 : f32 to f64
// CHECK: call @__wooly_cvt_f64_bf16_rn(%[[D1]])
// CHECK: %[[D0:.*]] = arith.extf %arg0 : f32 to f64
// CHECK: call @__wooly_cvt_f64_bf16_rn(%[[D0]])
// CHECK: vector.from_elements %{{.*}}, %{{.*}} : vector<2xbf16>
wooly.func @pair_bf16x2(%a: f32, %b: f32) -> vector<2xbf16> {
  %r = wooly.cvt %a, %b rn : f32 to bf16x2 : f32, f32 -> vector<2xbf16>
  wooly.ret %r : vector<2xbf16>
}

// -----

// relu on f16x2 from f32: negative and NaN lanes fixed up after rounding.
// CHECK-LABEL: wooly.func @pair_f16x2_relu
// CHECK: arith.truncf %arg1 : f32 to f16
// CHECK: arith.cmpi slt
// CHECK: arith.truncf %arg0 : f32 to f16
wooly.func @pair_f16x2_relu(%a: f32, %b: f32) -> vector<2xf16> {
  %r = wooly.cvt %a, %b rn relu : f32 to f16x2 : f32, f32 -> vector<2xf16>
  wooly.ret %r : vector<2xf16>
}

// -----

// fp8: e4m3x2 from two f32 (satfinite), and back to f16x2.
// CHECK-LABEL: wooly.func @fp8
// CHECK-COUNT-2: call @__wooly_cvt_f64_e4m3_rn_satfinite
// CHECK-COUNT-2: call @__wooly_cvt_e5m2_f16
wooly.func @fp8(%a: f32, %b: f32, %c: i16) -> (i16, vector<2xf16>) {
  %r = wooly.cvt %a, %b rn satfinite : f32 to e4m3x2 : f32, f32 -> i16
  %h = wooly.cvt %c rn : e5m2x2 to f16x2 : i16 -> vector<2xf16>
  wooly.ret %r, %h : i16, vector<2xf16>
}

// -----

// tf32 with rna: add half an ulp of the 10-bit mantissa, clear 13 bits.
// CHECK-LABEL: wooly.func @tf32
// CHECK: arith.addi %{{.*}}, %c4096_i32
// CHECK: arith.andi %{{.*}}, %c-8192_i32
wooly.func @tf32(%a: f32) -> i32 {
  %r = wooly.cvt %a rna : f32 to tf32 : f32 -> i32
  wooly.ret %r : i32
}
