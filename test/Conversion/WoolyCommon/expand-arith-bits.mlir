// RUN: wooly-opt %s --wooly-expand-arith --split-input-file | FileCheck %s

// pack puts the first operand in the low bits.
// CHECK-LABEL: wooly.func @pack
// CHECK: %[[HI:.*]] = arith.extui %arg1 : i32 to i64
// CHECK: arith.shli %[[HI]], %c32_i64
wooly.func @pack(%a: i32, %b: i32) -> i64 {
  %r = wooly.pack %a, %b : i32, i32 -> i64
  wooly.ret %r : i64
}

// -----

// unpack of f16x2 extracts the elements.
// CHECK-LABEL: wooly.func @unpack
// CHECK: vector.extract %arg0[0] : f16 from vector<2xf16>
// CHECK: vector.extract %arg0[1] : f16 from vector<2xf16>
wooly.func @unpack(%a: vector<2xf16>) -> (f16, f16) {
  %x, %y = wooly.unpack %a : vector<2xf16> -> f16, f16
  wooly.ret %x, %y : f16, f16
}

// -----

// bitcast between i32 and f16x2 goes through vector<1xi32>.
// CHECK-LABEL: wooly.func @bitcast
// CHECK: vector.broadcast %arg0 : i32 to vector<1xi32>
// CHECK: vector.bitcast %{{.*}} : vector<1xi32> to vector<2xf16>
wooly.func @bitcast(%a: i32) -> vector<2xf16> {
  %r = wooly.bitcast %a : i32 -> vector<2xf16>
  wooly.ret %r : vector<2xf16>
}

// -----

// Byte access into a parameter aggregate, little-endian.
// CHECK-LABEL: wooly.func @bytes
// CHECK: vector.extract_strided_slice %arg0 {offsets = [4], sizes = [4], strides = [1]}
// CHECK: vector.insert_strided_slice %{{.*}}, %arg0 {offsets = [8], strides = [1]}
wooly.func @bytes(%p: vector<16xi8>, %v: f32) -> (f32, vector<16xi8>) {
  %x = wooly.extract_bytes %p[4] : vector<16xi8> -> f32
  %q = wooly.insert_bytes %v, %p[8] : f32 into vector<16xi8>
  wooly.ret %x, %q : f32, vector<16xi8>
}

// -----

// bfe.s: field masked, then filled with the field's last bit.
// CHECK-LABEL: wooly.func @bfe_s
// CHECK: arith.andi %arg1, %c255_i32
// CHECK: arith.shrui %arg0
// CHECK: arith.subi
// CHECK-NOT: = bfe
wooly.func @bfe_s(%a: i32, %p: i32, %l: i32) -> i32 {
  %r = wooly.bfe s %a, %p, %l : i32
  wooly.ret %r : i32
}

// -----

// bfi on 64 bits.
// CHECK-LABEL: wooly.func @bfi
// CHECK: arith.extui %{{.*}} : i32 to i64
// CHECK: arith.shli %arg0
// CHECK-NOT: = bfi
wooly.func @bfi(%a: i64, %b: i64, %p: i32, %l: i32) -> i64 {
  %r = wooly.bfi %a, %b, %p, %l : i64
  wooly.ret %r : i64
}

// -----

// prmt.b4e selects one of four fixed selectors by c[1:0].
// CHECK-LABEL: wooly.func @prmt_b4e
// CHECK-DAG: arith.constant 22128 : i32
// CHECK-DAG: arith.constant 291 : i32
// CHECK-NOT: = prmt
wooly.func @prmt_b4e(%a: i32, %b: i32, %c: i32) -> i32 {
  %r = wooly.prmt b4e %a, %b, %c : i32
  wooly.ret %r : i32
}

// -----

// lop3 0x96 (a ^ b ^ c) is two xors.
// CHECK-LABEL: wooly.func @lop3_xor
// CHECK-COUNT-2: arith.xori
// CHECK-NOT: arith.andi
wooly.func @lop3_xor(%a: i32, %b: i32, %c: i32) -> i32 {
  %r = wooly.lop3 %a, %b, %c lut 150 : i32
  wooly.ret %r : i32
}

// -----

// lop3 0xff is all ones.
// CHECK-LABEL: wooly.func @lop3_ones
// CHECK: %[[C:.*]] = arith.constant -1 : i32
// CHECK: ret %[[C]]
wooly.func @lop3_ones(%a: i32, %b: i32, %c: i32) -> i32 {
  %r = wooly.lop3 %a, %b, %c lut 255 : i32
  wooly.ret %r : i32
}

// -----

// brev.b32: five mask-and-swap steps.
// CHECK-LABEL: wooly.func @brev
// CHECK-COUNT-5: arith.ori
wooly.func @brev(%a: i32) -> i32 {
  %r = wooly.brev %a : i32
  wooly.ret %r : i32
}

// -----

// bfind.s.shiftamt: count leading non-sign bits; 0xffffffff when none.
// CHECK-LABEL: wooly.func @bfind
// CHECK: arith.cmpi slt, %arg0
// CHECK: math.ctlz %{{.*}} : i64
// CHECK: arith.select %{{.*}}, %c-1_i32
wooly.func @bfind(%a: i64) -> i32 {
  %r = wooly.bfind s %a shiftamt : i64
  wooly.ret %r : i32
}

// -----

// bmsk.clamp computes in 64 bits.
// CHECK-LABEL: wooly.func @bmsk
// CHECK: arith.minui %arg0, %c32_i32
// CHECK: arith.shli %{{.*}} : i64
wooly.func @bmsk(%p: i32, %l: i32) -> i32 {
  %r = wooly.bmsk clamp %p, %l : i32
  wooly.ret %r : i32
}

// -----

// shf.r.wrap shifts the 64-bit pair {b, a} by n mod 32.
// CHECK-LABEL: wooly.func @shf_r
// CHECK: arith.andi %arg2, %c31_i32
// CHECK: arith.shrui %{{.*}} : i64
wooly.func @shf_r(%a: i32, %b: i32, %n: i32) -> i32 {
  %r = wooly.shf r wrap %a, %b, %n : i32
  wooly.ret %r : i32
}
