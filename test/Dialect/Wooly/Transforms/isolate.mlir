// RUN: wooly-opt %s --wooly-isolate --split-input-file | FileCheck %s

// A global load through a kernel parameter: the region is appended as two
// u64 launch parameters and the address is clamped into it (sub, minu, add),
// with `size - 4` computed once at the entry.
// CHECK-LABEL: wooly.func @load_global(
// CHECK-SAME: %[[P:[^:]*]]: i64 {wooly.type = "u64"},
// CHECK-SAME: %[[BASE:[^:]*]]: i64 {wooly.launch_param = "isolate_base", wooly.type = "u64"},
// CHECK-SAME: %[[SIZE:[^:]*]]: i64 {wooly.launch_param = "isolate_size", wooly.type = "u64"})
// CHECK: %[[C4:.*]] = arith.constant 4 : i64
// CHECK: %[[LAST:.*]] = arith.subi %[[SIZE]], %[[C4]] : i64
// CHECK: %[[OFF:.*]] = arith.subi %[[P]], %[[BASE]] : i64
// CHECK: %[[MIN:.*]] = arith.minui %[[OFF]], %[[LAST]] : i64
// CHECK: %[[A:.*]] = arith.addi %[[BASE]], %[[MIN]] : i64
// CHECK: ld global %[[A]] : i64 -> f32
wooly.func @load_global(%p: i64 {wooly.type = "u64"}) attributes {kernel} {
  %v = wooly.ld global %p : i64 -> f32
  wooly.ret
}

// -----

// A vector store (v4.f32, 16 bytes) through a generic address.
// CHECK-LABEL: wooly.func @store_vector_generic(
// CHECK-SAME: %[[P:[^:]*]]: i64 {wooly.type = "u64"},
// CHECK-SAME: %[[BASE:[^:]*]]: i64 {wooly.launch_param = "isolate_base"
// CHECK-SAME: %[[SIZE:[^:]*]]: i64 {wooly.launch_param = "isolate_size"
// CHECK: %[[C16:.*]] = arith.constant 16 : i64
// CHECK: %[[LAST:.*]] = arith.subi %[[SIZE]], %[[C16]] : i64
// CHECK: %[[OFF:.*]] = arith.subi %[[P]], %[[BASE]] : i64
// CHECK: %[[MIN:.*]] = arith.minui %[[OFF]], %[[LAST]] : i64
// CHECK: %[[A:.*]] = arith.addi %[[BASE]], %[[MIN]] : i64
// CHECK: st generic %[[A]], %{{.*}} : i64, f32, f32, f32, f32
wooly.func @store_vector_generic(%p: i64 {wooly.type = "u64"}, %v: f32 {wooly.type = "f32"}) attributes {kernel} {
  wooly.st generic %p, %v, %v, %v, %v : i64, f32, f32, f32, f32
  wooly.ret
}

// -----

// Atomics and reductions are fenced with their operand's size.
// CHECK-LABEL: wooly.func @atomics(
// CHECK-DAG: arith.constant 8 : i64
// CHECK-DAG: arith.constant 4 : i64
// CHECK: %[[A1:.*]] = arith.addi %{{.*}}, %{{.*}} : i64
// CHECK-NEXT: atom global add %[[A1]]
// CHECK: arith.minui
// CHECK: %[[A2:.*]] = arith.addi %{{.*}}, %{{.*}} : i64
// CHECK-NEXT: red global add %[[A2]]
wooly.func @atomics(%p: i64 {wooly.type = "u64"}, %q: i64 {wooly.type = "u64"}, %v: i32 {wooly.type = "u32"}, %w: i64 {wooly.type = "u64"}) attributes {kernel} {
  %o = wooly.atom global add %p, %v : i64, i32 -> i32
  wooly.red global add %q, %w : i64, i64
  wooly.ret
}

// -----

// cp.async: the global source is fenced for the bytes it reads
// (min(src_size, size)); the shared destination is left alone.
wooly.global shared @buf : i8[64] align 16
// CHECK-LABEL: wooly.func @cp_async(
// CHECK-SAME: %[[SRC:[^:]*]]: i64 {wooly.type = "u64"}, %[[N:[^:]*]]: i32
// CHECK-SAME: %[[BASE:[^:]*]]: i64 {wooly.launch_param = "isolate_base"
// CHECK-SAME: %[[SIZE:[^:]*]]: i64 {wooly.launch_param = "isolate_size"
// CHECK: %[[DST:.*]] = addressof @buf : i32
// CHECK: %[[N64:.*]] = arith.extui %[[N]] : i32 to i64
// CHECK: %[[CNT:.*]] = arith.minui %[[N64]], %{{.*}} : i64
// CHECK: %[[LAST:.*]] = arith.subi %[[SIZE]], %[[CNT]] : i64
// CHECK: %[[OFF:.*]] = arith.subi %[[SRC]], %[[BASE]] : i64
// CHECK: %[[MIN:.*]] = arith.minui %[[OFF]], %[[LAST]] : i64
// CHECK: %[[A:.*]] = arith.addi %[[BASE]], %[[MIN]] : i64
// CHECK: cp_async %[[DST]], %[[A]], 16 src_size %[[N]]
wooly.func @cp_async(%src: i64 {wooly.type = "u64"}, %n: i32 {wooly.type = "u32"}) attributes {kernel} {
  %dst = wooly.addressof @buf : i32
  wooly.cp_async %dst, %src, 16 src_size %n : i32, i64
  wooly.ret
}

// -----

// wmma: the footprint is (rows - 1) * stride + row bytes; a stride whose
// footprint exceeds the region becomes 0.
// CHECK-LABEL: wooly.func @wmma(
// CHECK-SAME: %[[P:[^:]*]]: i64 {wooly.type = "u64"}, %[[S:[^:]*]]: i32
// CHECK-SAME: %[[BASE:[^:]*]]: i64 {wooly.launch_param = "isolate_base"
// CHECK-SAME: %[[SIZE:[^:]*]]: i64 {wooly.launch_param = "isolate_size"
// CHECK: %[[S64:.*]] = arith.extui %[[S]] : i32 to i64
// CHECK: %[[N:.*]] = arith.shrui
// CHECK: %[[OK:.*]] = arith.cmpi ule, %[[N]], %[[SIZE]] : i64
// CHECK: %[[ST:.*]] = arith.select %[[OK]], %[[S]], %{{.*}} : i32
// CHECK: %[[A:.*]] = arith.addi %[[BASE]], %{{.*}} : i64
// CHECK: wmma_load a row "m16n16k16" f16 global %[[A]], %[[ST]]
// CHECK: %[[A2:.*]] = arith.addi %[[BASE]], %{{.*}} : i64
// CHECK: wmma_store row "m16n16k16" f32 generic %[[A2]], %{{.*}} (
wooly.func @wmma(%p: i64 {wooly.type = "u64"}, %s: i32 {wooly.type = "u32"}) attributes {kernel} {
  %f:8 = wooly.wmma_load a row "m16n16k16" f16 global %p, %s : i64 -> i32, i32, i32, i32, i32, i32, i32, i32
  %z = arith.constant 0.0 : f32
  wooly.wmma_store row "m16n16k16" f32 generic %p, %s (%z, %z, %z, %z, %z, %z, %z, %z) : i64, f32, f32, f32, f32, f32, f32, f32, f32
  wooly.ret
}

// -----

// Device functions receive the region as two trailing arguments and every
// call passes the caller's; calls to declarations are unchanged.
// CHECK-LABEL: wooly.func @helper(
// CHECK-SAME: %[[P:[^:]*]]: i64, %[[BASE:[^:]*]]: i64 {wooly.type = "u64"}, %[[SIZE:[^:]*]]: i64 {wooly.type = "u64"})
// CHECK: arith.subi %[[SIZE]]
// CHECK: arith.subi %[[P]], %[[BASE]]
// CHECK: st global
wooly.func private @vprintf(i64, i64) -> i32 attributes {linkage = "extern"}
wooly.func @helper(%p: i64) {
  %c = arith.constant 1 : i32
  wooly.st global %p, %c : i64, i32
  wooly.ret
}
// CHECK-LABEL: wooly.func @caller(
// CHECK-SAME: %[[Q:[^:]*]]: i64 {wooly.type = "u64"},
// CHECK-SAME: %[[KB:[^:]*]]: i64 {wooly.launch_param = "isolate_base"
// CHECK-SAME: %[[KS:[^:]*]]: i64 {wooly.launch_param = "isolate_size"
// CHECK: call @helper(%[[Q]], %[[KB]], %[[KS]]) : (i64, i64, i64) -> ()
// CHECK: call @vprintf(%[[Q]], %[[Q]]) : (i64, i64) -> i32
wooly.func @caller(%q: i64 {wooly.type = "u64"}) attributes {kernel} {
  wooly.call @helper(%q) : (i64) -> ()
  %r = wooly.call @vprintf(%q, %q) : (i64, i64) -> i32
  wooly.ret
}

// -----

// Shared and local accesses are left alone; a generic address made from a
// shared or local address (through offsets) becomes an access to that space.
wooly.global shared @tile : f32[64] align 4
// CHECK-LABEL: wooly.func @windows(
// CHECK: %[[S:.*]] = addressof @tile : i32
// CHECK: ld shared %[[S]] : i32 -> f32
// CHECK: %[[G:.*]] = cvta to_generic shared %[[S]] : i32 -> i64
// CHECK: %[[GA:.*]] = arith.addi %[[G]], %{{.*}} : i64
// CHECK: %[[BACK:.*]] = cvta from_generic shared %[[GA]] : i64 -> i32
// CHECK: st shared %[[BACK]], %{{.*}} : i32, f32
// CHECK: %[[LG:.*]] = cvta to_generic local %[[L:.*]] : i64 -> i64
// CHECK: %[[LBACK:.*]] = cvta from_generic local %[[LG]] : i64 -> i64
// CHECK: ld local %[[LBACK]] : i64 -> i32
// CHECK-NOT: arith.minui
wooly.func @windows(%i: i64 {wooly.type = "u64"}, %l: i64 {wooly.type = "u64"}) attributes {kernel} {
  %s = wooly.addressof @tile : i32
  %v = wooly.ld shared %s : i32 -> f32
  %g = wooly.cvta to_generic shared %s : i32 -> i64
  %ga = arith.addi %g, %i : i64
  wooly.st generic %ga, %v : i64, f32
  %lg = wooly.cvta to_generic local %l : i64 -> i64
  %w = wooly.ld generic %lg : i64 -> i32
  wooly.ret
}

// -----

// Module variables belong to the tenant: an access through a variable's
// address is clamped into the variable (here 40 bytes, a 4-byte access:
// last offset 36), in the access's space.
wooly.global global @table : i32[10] align 4
// CHECK-LABEL: wooly.func @module_var(
// CHECK: %[[T:.*]] = addressof @table : i64
// CHECK: %[[A:.*]] = arith.addi %[[T]], %[[I:.*]] : i64
// CHECK: %[[LO:.*]] = addressof @table : i64
// CHECK: %[[C36:.*]] = arith.constant 36 : i64
// CHECK: %[[OFF:.*]] = arith.subi %[[A]], %[[LO]] : i64
// CHECK: %[[MIN:.*]] = arith.minui %[[OFF]], %[[C36]] : i64
// CHECK: %[[F:.*]] = arith.addi %[[LO]], %[[MIN]] : i64
// CHECK: ld global %[[F]] : i64 -> i32
// CHECK: cvta to_generic global %[[T]] : i64 -> i64
// CHECK: %[[GLO:.*]] = cvta to_generic global %{{.*}} : i64 -> i64
// CHECK: arith.subi %{{.*}}, %[[GLO]]
// CHECK: ld generic
wooly.func @module_var(%i: i64 {wooly.type = "u64"}) attributes {kernel} {
  %t = wooly.addressof @table : i64
  %a = arith.addi %t, %i : i64
  %v = wooly.ld global %a : i64 -> i32
  %g = wooly.cvta to_generic global %t : i64 -> i64
  %ga = arith.addi %g, %i : i64
  %w = wooly.ld generic %ga : i64 -> i32
  wooly.ret
}

// -----

// Kernel parameters read as values are not accesses; ld.param is left
// alone except that an address from param_address is clamped into the
// parameter.
// CHECK-LABEL: wooly.func @params(
// CHECK: %[[PA:.*]] = param_address 0 : i64
// CHECK: %[[LO:.*]] = param_address 0 : i64
// CHECK: arith.subi %[[PA]], %[[LO]]
// CHECK: ld param
wooly.func @params(%x: i64 {wooly.type = "u64"}) attributes {kernel} {
  %pa = wooly.param_address 0 : i64
  %v = wooly.ld param %pa : i64 -> i64
  wooly.ret
}
