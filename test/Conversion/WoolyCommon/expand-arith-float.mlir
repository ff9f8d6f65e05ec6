// RUN: wooly-opt %s --wooly-expand-arith --split-input-file | FileCheck %s

// Directed rounding calls a runtime helper, declared once in the module.
// CHECK: func.func private @__wooly_fadd_rz_f32(f32, f32) -> f32
// CHECK-LABEL: wooly.func @fadd_rz
// CHECK: call @__wooly_fadd_rz_f32(%arg0, %arg1) : (f32, f32) -> f32
// CHECK: call @__wooly_fadd_rz_f32
wooly.func @fadd_rz(%a: f32, %b: f32) -> f32 {
  %r = wooly.fadd %a, %b rz : f32
  %s = wooly.fadd %r, %b rz : f32
  wooly.ret %s : f32
}

// -----

// ftz flushes inputs and result through their exponent bits; no fastmath.
// CHECK-LABEL: wooly.func @fmul_ftz
// CHECK: arith.bitcast %arg0 : f32 to i32
// CHECK: arith.andi %{{.*}}, %c2139095040_i32
// CHECK: %[[M:.*]] = arith.mulf %{{[^ ]*}}, %{{[^ ]*}} : f32
// CHECK: arith.bitcast %[[M]] : f32 to i32
// CHECK-NOT: fastmath
wooly.func @fmul_ftz(%a: f32, %b: f32) -> f32 {
  %r = wooly.fmul %a, %b ftz : f32
  wooly.ret %r : f32
}

// -----

// sat clamps to [0, 1] with ordered compares (NaN -> 0).
// CHECK-LABEL: wooly.func @fadd_sat
// CHECK: %[[S:.*]] = arith.addf %arg0, %arg1 : f32
// CHECK: arith.cmpf ogt, %[[S]], %{{.*}} : f32
// CHECK: arith.cmpf ogt, %[[S]], %{{.*}} : f32
wooly.func @fadd_sat(%a: f32, %b: f32) -> f32 {
  %r = wooly.fadd %a, %b sat : f32
  wooly.ret %r : f32
}

// -----

// fma rn is math.fma; f16 fma rounds once through a helper, per element.
// CHECK-LABEL: wooly.func @fma
// CHECK: math.fma %arg0, %arg1, %arg2 : f32
// CHECK-COUNT-2: call @__wooly_fma_rn_f16
// CHECK: vector.from_elements %{{.*}} : vector<2xf16>
wooly.func @fma(%a: f32, %b: f32, %c: f32, %x: vector<2xf16>) -> (f32, vector<2xf16>) {
  %r = wooly.fma %a, %b, %c rn : f32
  %h = wooly.fma %x, %x, %x rn relu : vector<2xf16>
  wooly.ret %r, %h : f32, vector<2xf16>
}

// -----

// div.approx is an IEEE division (within PTX's 2 ulp); div.rp a helper.
// CHECK-LABEL: wooly.func @fdiv
// CHECK: arith.divf
// CHECK: call @__wooly_fdiv_rp_f64
wooly.func @fdiv(%a: f32, %b: f32, %c: f64) -> (f32, f64) {
  %r = wooly.fdiv %a, %b approx : f32
  %d = wooly.fdiv %c, %c rp : f64
  wooly.ret %r, %d : f32, f64
}

// -----

// sqrt.rz and rcp.approx.
// CHECK-LABEL: wooly.func @unary
// CHECK: call @__wooly_fsqrt_rz_f32
// CHECK: arith.divf %cst{{.*}}, %arg0 {wooly.approx = "rcp.approx"} : f32
wooly.func @unary(%a: f32) -> (f32, f32) {
  %r = wooly.fsqrt %a rz : f32
  %s = wooly.frcp %a approx : f32
  wooly.ret %r, %s : f32, f32
}

// -----

// ex2.approx.ftz: math.exp2 with flushes and a canonical NaN.
// CHECK-LABEL: wooly.func @ex2
// CHECK: %[[E:.*]] = math.exp2 %{{.*}} : f32
// CHECK: arith.cmpf uno, %[[E]], %[[E]]
wooly.func @ex2(%a: f32) -> f32 {
  %r = wooly.fapprox ex2 %a ftz : f32
  wooly.ret %r : f32
}

// -----

// tanh.approx.f16 computes in f32 and rounds back once.
// CHECK-LABEL: wooly.func @tanh_f16
// CHECK: arith.extf %arg0 : f16 to f32
// CHECK: math.tanh
// CHECK: arith.truncf %{{.*}} : f32 to f16
wooly.func @tanh_f16(%a: f16) -> f16 {
  %r = wooly.fapprox tanh %a : f16
  wooly.ret %r : f16
}

// -----

// min: NaN operands are ignored, -0 < +0 through the bits, two NaNs give
// the canonical NaN.
// CHECK-LABEL: wooly.func @fmin
// CHECK-DAG: arith.cmpf olt, %arg0, %arg1 : f32
// CHECK-DAG: arith.ori %{{.*}} : i32
// CHECK-DAG: arith.constant 0x7FFFFFFF : f32
// CHECK-NOT: arith.minnumf
wooly.func @fmin(%a: f32, %b: f32) -> f32 {
  %r = wooly.fmin %a, %b : f32
  wooly.ret %r : f32
}

// -----

// max.NaN on f16x2 propagates the canonical NaN element-wise.
// CHECK-LABEL: wooly.func @fmax_nan
// CHECK-DAG: arith.constant dense<0x7FFF> : vector<2xf16>
// CHECK-DAG: arith.cmpf uno, %arg0, %arg0 : vector<2xf16>
wooly.func @fmax_nan(%a: vector<2xf16>, %b: vector<2xf16>) -> vector<2xf16> {
  %r = wooly.fmax %a, %b nan : vector<2xf16>
  wooly.ret %r : vector<2xf16>
}

// -----

// flush keeps the sign of a subnormal.
// CHECK-LABEL: wooly.func @flush
// CHECK: %[[B:.*]] = arith.bitcast %arg0 : f32 to i32
// CHECK: arith.andi %[[B]], %c-2147483648_i32
wooly.func @flush(%a: f32) -> f32 {
  %r = wooly.flush %a : f32
  wooly.ret %r : f32
}

// -----

// f64 is never flushed.
// CHECK-LABEL: wooly.func @flush_f64
// CHECK-NEXT: ret %arg0 : f64
wooly.func @flush_f64(%a: f64) -> f64 {
  %r = wooly.flush %a : f64
  wooly.ret %r : f64
}

// -----

// The stand-ins for div/rcp/sqrt approximations are marked for the GPU
// lowerings (wooly.approx, with .ftz when flushing).
// CHECK-LABEL: func @approx_marks
// CHECK: arith.divf {{.*}} {wooly.approx = "div.approx.ftz"} : f32
// CHECK: arith.divf {{.*}} {wooly.approx = "div.full"} : f32
// CHECK: arith.divf {{.*}} {wooly.approx = "rcp.approx"} : f32
// CHECK: math.sqrt {{.*}} {wooly.approx = "sqrt.approx.ftz"} : f32
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
func.func @approx_marks(%a: f32, %b: f32) -> (f32, f32, f32, f32, f32) {
  %0 = wooly.fdiv %a, %b approx ftz : f32
  %1 = wooly.fdiv %a, %b full : f32
  %2 = wooly.frcp %a approx : f32
  %3 = wooly.fsqrt %a approx ftz : f32
  %4 = wooly.fdiv %a, %b rn : f32
  return %0, %1, %2, %3, %4 : f32, f32, f32, f32, f32
}
