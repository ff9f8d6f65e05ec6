// RUN: wooly-opt %s --wooly-expand-arith --split-input-file | FileCheck %s

// Signed division guards the divisor against 0 and MIN / -1; x / 0 is -1.
// CHECK-LABEL: wooly.func @div_s
// CHECK-NOT: = div
// CHECK: %[[Z:.*]] = arith.cmpi eq, %arg1
// CHECK: %[[Q:.*]] = arith.divsi %arg0, %[[SAFE:.*]] : i32
// CHECK: arith.select %[[Z]], %{{.*}}, %[[Q]] : i32
wooly.func @div_s(%a: i32, %b: i32) -> i32 {
  %r = wooly.div s %a, %b : i32
  wooly.ret %r : i32
}

// -----

// Unsigned remainder by 0 returns the dividend.
// CHECK-LABEL: wooly.func @rem_u
// CHECK: %[[Z:.*]] = arith.cmpi eq, %arg1
// CHECK: %[[R:.*]] = arith.remui %arg0
// CHECK: arith.select %[[Z]], %arg0, %[[R]] : i64
wooly.func @rem_u(%a: i64, %b: i64) -> i64 {
  %r = wooly.rem u %a, %b : i64
  wooly.ret %r : i64
}

// -----

// Shift left by >= 32 gives 0 (no poison shift reaches LLVM).
// CHECK-LABEL: wooly.func @shl
// CHECK: %[[BIG:.*]] = arith.cmpi uge, %arg1, %{{.*}} : i32
// CHECK: %[[N:.*]] = arith.select %[[BIG]]
// CHECK: %[[S:.*]] = arith.shli %arg0, %[[N]]
// CHECK: arith.select %[[BIG]], %{{.*}}, %[[S]]
wooly.func @shl(%a: i32, %n: i32) -> i32 {
  %r = wooly.shl %a, %n : i32
  wooly.ret %r : i32
}

// -----

// Arithmetic shift right clamps the amount to 31 (sign fill).
// CHECK-LABEL: wooly.func @shr_s
// CHECK: %[[C:.*]] = arith.constant 31 : i32
// CHECK: %[[N:.*]] = arith.minui %arg1, %[[C]]
// CHECK: arith.shrsi %arg0, %[[N]]
wooly.func @shr_s(%a: i32, %n: i32) -> i32 {
  %r = wooly.shr s %a, %n : i32
  wooly.ret %r : i32
}

// -----

// mul24.hi: 24-bit sign-extended operands, bits 16..47 of the product.
// CHECK-LABEL: wooly.func @mul24_hi
// CHECK: arith.shrsi %{{.*}} : i64
// CHECK: %[[P:.*]] = arith.muli %{{.*}} : i64
// CHECK: %[[H:.*]] = arith.shrui %[[P]], %{{.*}} : i64
// CHECK: arith.trunci %[[H]] : i64 to i32
wooly.func @mul24_hi(%a: i32, %b: i32) -> i32 {
  %r = wooly.mul24 s hi %a, %b : i32
  wooly.ret %r : i32
}

// -----

// sad: c + |a - b| with an unsigned comparison.
// CHECK-LABEL: wooly.func @sad_u
// CHECK: arith.cmpi ugt, %arg0, %arg1
// CHECK: arith.addi %arg2
wooly.func @sad_u(%a: i32, %b: i32, %c: i32) -> i32 {
  %r = wooly.sad u %a, %b, %c : i32
  wooly.ret %r : i32
}

// -----

// dp4a: four byte products accumulated into c.
// CHECK-LABEL: wooly.func @dp4a
// CHECK-COUNT-4: arith.muli
// CHECK-NOT: = dp4a
wooly.func @dp4a(%a: i32, %b: i32, %c: i32) -> i32 {
  %r = wooly.dp4a s u %a, %b, %c : i32
  wooly.ret %r : i32
}

// -----

// dp2a.hi: two 16x8 products with bytes 2 and 3 of b.
// CHECK-LABEL: wooly.func @dp2a
// CHECK-COUNT-2: arith.muli
// CHECK-NOT: = dp2a
wooly.func @dp2a(%a: i32, %b: i32, %c: i32) -> i32 {
  %r = wooly.dp2a u s hi %a, %b, %c : i32
  wooly.ret %r : i32
}
