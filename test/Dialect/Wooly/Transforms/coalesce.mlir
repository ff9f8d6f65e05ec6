// RUN: wooly-opt %s --wooly-coalesce="kernels=a,b,a" | FileCheck %s

// Two kernels (a repeated: it is dispatched as kernel index 0 once). The
// originals stay; each gets a device-function clone whose block/thread id
// reads are its 13 trailing arguments; @__wooly_coalesced scans the table,
// lets idle threads exit, and dispatches on the kernel index.

// CHECK-LABEL: wooly.func @a(
// CHECK-SAME: attributes {kernel
// CHECK: sreg tid y : i32
// CHECK: sreg ctaid z : i32

// CHECK-LABEL: wooly.func @__wooly_part_a(
// CHECK-SAME: %[[N:[^:]*]]: i32 {wooly.type = "u32"}, %[[OUT:[^:]*]]: i64 {wooly.type = "u64"}, %{{[^:]*}}: i16 {wooly.type = "u16"}
// CHECK-SAME: %[[CX:[^:]*]]: i32 {wooly.name = "ctaid_x", wooly.type = "u32"}, %{{[^:]*}}: i32 {wooly.name = "ctaid_y", wooly.type = "u32"}, %[[CZ:[^:]*]]: i32 {wooly.name = "ctaid_z", wooly.type = "u32"}
// CHECK-SAME: %[[NCX:[^:]*]]: i32 {wooly.name = "nctaid_x", wooly.type = "u32"}
// CHECK-SAME: %[[TY:[^:]*]]: i32 {wooly.name = "tid_y", wooly.type = "u32"}
// CHECK-SAME: %[[NTX:[^:]*]]: i32 {wooly.name = "ntid_x", wooly.type = "u32"}
// CHECK-SAME: %[[DYN:[^:]*]]: i32 {wooly.name = "dynamic_smem_size", wooly.type = "u32"})
// CHECK-NOT: attributes
// CHECK-NOT: sreg tid
// CHECK-NOT: sreg ctaid
// The lane id is the same in the fused launch: kept.
// CHECK: sreg laneid : i32
// CHECK: st global %[[OUT]], %[[TY]] : i64, i32
// CHECK: st global %[[OUT]], %[[CZ]] : i64, i32
// CHECK: st global %[[OUT]], %[[NTX]] : i64, i32
// CHECK: st global %[[OUT]], %[[NCX]] : i64, i32
// CHECK: st global %[[OUT]], %[[DYN]] : i64, i32
// CHECK: st global %[[OUT]], %[[CX]] : i64, i32
// CHECK: exit
wooly.func @a(%n: i32 {wooly.type = "u32"}, %out: i64 {wooly.type = "u64"},
              %h: i16 {wooly.type = "u16"})
    attributes {kernel, linkage = "visible", maxntid = array<i32: 256>} {
  %t = wooly.sreg tid y : i32
  %b = wooly.sreg ctaid z : i32
  %nt = wooly.sreg ntid x : i32
  %g = wooly.sreg nctaid x : i32
  %d = wooly.sreg dynamic_smem_size : i32
  %c = wooly.sreg clusterid x : i32
  %l = wooly.sreg laneid : i32
  wooly.st global %out, %t : i64, i32
  wooly.st global %out, %b : i64, i32
  wooly.st global %out, %nt : i64, i32
  wooly.st global %out, %g : i64, i32
  wooly.st global %out, %d : i64, i32
  wooly.st global %out, %c : i64, i32
  wooly.st global %out, %l : i64, i32
  wooly.exit
}

// Function-scope .local variables are copied for the part; .shared ones
// are not (shared memory is laid out per module).
// CHECK: wooly.global local @buf : i32[4] align 4 {wooly.function_scope = @b}
// CHECK-NEXT: wooly.global local @buf___wooly_part_b : i32[4] align 4 {wooly.function_scope = @__wooly_part_b}
// CHECK-LABEL: wooly.func @__wooly_part_b(
// CHECK-SAME: %{{[^:]*}}: f64 {wooly.align = 8 : i64, wooly.type = "f64"}, %{{[^:]*}}: i8 {wooly.type = "u8"}, %{{[^:]*}}: i64 {wooly.type = "u64"}
// CHECK: addressof @buf___wooly_part_b : i64
// CHECK: addressof @tile : i32
// CHECK: barrier
wooly.global shared @tile : f32[64] align 4 {wooly.function_scope = @b}
wooly.global local @buf : i32[4] align 4 {wooly.function_scope = @b}
wooly.func @b(%x: f64 {wooly.type = "f64", wooly.align = 8}, %c: i8 {wooly.type = "u8"},
              %p: i64 {wooly.type = "u64"}) attributes {kernel} {
  %z = arith.constant 0 : i32
  %lb = wooly.addressof @buf : i64
  %tl = wooly.addressof @tile : i32
  wooly.st local %lb, %z : i64, i32
  wooly.st shared %tl, %z : i32, i32
  wooly.barrier %z
  wooly.st global %p, %x : i64, f64
  wooly.ret
}

// The fused kernel: one parameter with the table's role.
// CHECK-LABEL: wooly.func @__wooly_coalesced(
// CHECK-SAME: %[[T:[^:]*]]: i64 {wooly.launch_param = "coalesce_table", wooly.name = "__wooly_coalesced_coalesce_table", wooly.type = "u64"})
// CHECK-SAME: attributes {kernel, linkage = "visible"}
// CHECK: %[[PB:.*]] = sreg ctaid x : i32
// CHECK: %[[PT:.*]] = sreg tid x : i32
// CHECK: %[[COUNT:.*]] = ld global %[[T]] : i64 -> i32
// CHECK: cf.br ^[[SCAN:.*]](%{{.*}} : i32)
// Linear scan of the parts.
// CHECK: ^[[SCAN]](%[[I:.*]]: i32):
// CHECK: %[[MORE:.*]] = arith.cmpi ult, %[[I]], %[[COUNT]] : i32
// CHECK: cf.cond_br %[[MORE]], ^[[CHECK:.*]], ^[[EXIT:bb[0-9]+]]
// CHECK: ^[[CHECK]]:
// CHECK: %[[C48:.*]] = arith.constant 48 : i64
// CHECK: %[[FIRST:.*]] = ld global %{{.*}} : i64 -> i32
// CHECK: %[[REL:.*]] = arith.subi
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[REL]], %{{.*}} : i64
// CHECK: cf.cond_br %[[IN]], ^[[FOUND:.*]], ^[[SCAN]](%{{.*}} : i32)
// Threads past the part's block size exit.
// CHECK: ^[[FOUND]]:
// CHECK: %[[ACTIVE:.*]] = arith.cmpi ult, %[[PT]], %{{.*}} : i32
// CHECK: cf.cond_br %[[ACTIVE]], ^[[GO:.*]], ^[[EXIT]]
// CHECK: ^[[GO]]:
// CHECK: arith.remui
// CHECK: arith.divui
// CHECK: %[[PARAMS:.*]] = ld global %{{.*}} : i64 -> i64
// Dispatch on the kernel index (0: a, 1: b, else exit).
// CHECK: %[[IS_A:.*]] = arith.cmpi eq, %[[KI:.*]], %{{.*}} : i32
// CHECK: cf.cond_br %[[IS_A]], ^[[CALL_A:.*]], ^[[REST:bb[0-9]+]]
// CHECK: ^[[EXIT]]:
// CHECK-NEXT: exit
// Parameters at their CUDA offsets: i32 at 0, i64 at 8, i16 at 16.
// CHECK: ^[[CALL_A]]:
// CHECK: arith.constant 0 : i64
// CHECK: ld global %{{.*}} : i64 -> i32
// CHECK: arith.constant 8 : i64
// CHECK: ld global %{{.*}} : i64 -> i64
// CHECK: arith.constant 16 : i64
// CHECK: ld global %{{.*}} : i64 -> i16
// CHECK: call @__wooly_part_a({{.*}}) : (i32, i64, i16, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) -> ()
// CHECK-NEXT: ret
// CHECK: ^[[REST]]:
// CHECK: %[[IS_B:.*]] = arith.cmpi eq, %[[KI]], %{{.*}} : i32
// CHECK: cf.cond_br %[[IS_B]], ^[[CALL_B:.*]], ^[[EXIT]]
// f64 at 0, u8 at 8, u64 at 16.
// CHECK: ^[[CALL_B]]:
// CHECK: ld global %{{.*}} : i64 -> f64
// CHECK: arith.constant 8 : i64
// CHECK: ld global %{{.*}} : i64 -> i8
// CHECK: arith.constant 16 : i64
// CHECK: ld global %{{.*}} : i64 -> i64
// CHECK: call @__wooly_part_b(
// CHECK-NEXT: ret
