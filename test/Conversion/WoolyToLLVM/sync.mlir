// RUN: wooly-opt %s --convert-wooly-to-llvm --split-input-file | FileCheck %s

// Barriers and warp collectives call the runtime; a kernel that reaches one
// is marked as needing fibers.
// CHECK-LABEL: llvm.func @__wooly_kernel_k(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr
// CHECK-SAME: wooly.needs_fibers
// CHECK: llvm.call @__wooly_rt_barrier(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: llvm.call @__wooly_rt_warp(%[[CTX]], %{{.*}}, %{{.*}}, %[[IN:.*]], %{{.*}}, %[[OUT:.*]], %{{.*}})
// CHECK: llvm.load %[[OUT]] {alignment = 4 : i64} : !llvm.ptr -> i32
wooly.func @k(%v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  %c31 = arith.constant 31 : i32
  %m = arith.constant -1 : i32
  wooly.barrier %c0 aligned
  %r, %ok = wooly.shfl bfly %v, %c0, %c31, %m : i32
  wooly.ret
}

// -----

// A kernel without barriers or collectives runs its threads directly.
// CHECK-LABEL: llvm.func @__wooly_kernel_plain(
// CHECK-NOT: wooly.needs_fibers
// CHECK: llvm.return
wooly.func @plain() attributes {kernel} {
  wooly.ret
}

// -----

// A kernel is marked when a device function it calls synchronises; `exit`
// in a device function ends the thread through the runtime.
// CHECK-LABEL: llvm.func weak_odr @__wooly_fn_helper(
// CHECK: llvm.call @__wooly_rt_exit(
// CHECK-NEXT: llvm.unreachable
// CHECK-LABEL: llvm.func @__wooly_kernel_caller(
// CHECK-SAME: wooly.needs_fibers
// CHECK: llvm.call @__wooly_fn_helper(%{{.*}})
wooly.func @helper() {
  %c0 = arith.constant 0 : i32
  wooly.barrier %c0
  wooly.exit
}
wooly.func @caller() attributes {kernel} {
  wooly.call @helper() : () -> ()
  wooly.ret
}

// -----

// The device heap: malloc and free go to the runtime's heap of the block's
// memory domain; malloc's result is the block's address.
// CHECK-LABEL: llvm.func @__wooly_kernel_heap(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr
// CHECK: %[[P:.*]] = llvm.call @__wooly_rt_malloc(%[[CTX]], %{{.*}}) : (!llvm.ptr, i64) -> i64
// CHECK: llvm.call @__wooly_rt_free(%[[CTX]], %[[P]]) : (!llvm.ptr, i64) -> ()
wooly.func private @malloc(i64) -> i64 attributes {linkage = "extern"}
wooly.func private @free(i64) attributes {linkage = "extern"}
wooly.func @heap(%n: i64 {wooly.type = "u64"}) attributes {kernel} {
  %p = wooly.call @malloc(%n) : (i64) -> i64
  wooly.call @free(%p) : (i64) -> ()
  wooly.ret
}

// -----

// Volatile shared and generic accesses (pre-Volta warp-synchronous code)
// first meet the lanes active there: activemask, then a warp sync with that
// mask, so the kernel runs with fibers or region by region. Other accesses
// are left alone.
// CHECK-LABEL: llvm.func @__wooly_kernel_warpsync(
// CHECK-SAME: wooly.needs_fibers
// CHECK: llvm.call @__wooly_rt_warp
// CHECK: llvm.call @__wooly_rt_warp
// CHECK: llvm.load volatile
// CHECK: llvm.call @__wooly_rt_warp
// CHECK: llvm.call @__wooly_rt_warp
// CHECK: llvm.store volatile
// CHECK-NOT: llvm.call @__wooly_rt_warp
// CHECK: llvm.return
wooly.global shared @s : i32[64] align 4
wooly.func @warpsync(%p: i64 {wooly.type = "u64"}) attributes {kernel} {
  %a = wooly.addressof @s : i32
  %v = wooly.ld shared volatile %a : i32 -> i32
  wooly.st shared volatile %a, %v : i32, i32
  %w = wooly.ld global %p : i64 -> i32
  wooly.st global %p, %w : i64, i32
  wooly.ret
}
