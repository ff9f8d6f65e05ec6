// RUN: wooly-opt %s --convert-wooly-to-llvm --split-input-file | FileCheck %s
// RUN: wooly-opt %s --convert-wooly-to-llvm="bounds-checks=false" --split-input-file | FileCheck %s --check-prefix=NOCHECK

// A kernel reads its parameters from the parameter buffer (second argument)
// at their CUDA offsets; a global load is checked through the site cache,
// whose slow path is outside the context's alias scope.
// CHECK-LABEL: llvm.func @__wooly_kernel_k(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr {llvm.align = 8 : i64, llvm.dereferenceable = 144 : i64, llvm.noalias}, %[[PARAMS:[^:]*]]: !llvm.ptr {llvm.dereferenceable = 16 : i64, llvm.noalias})
// CHECK-SAME: wooly.kernel = "k"
// CHECK-SAME: wooly.param_offsets = array<i64: 0, 8>, wooly.param_sizes = array<i64: 4, 8>
// CHECK: %[[N:.*]] = llvm.load %[[PARAMS]]
// CHECK: %[[PP:.*]] = llvm.getelementptr %[[PARAMS]][8]
// CHECK: %[[P:.*]] = llvm.load %[[PP]] {{.*}} -> i64
// CHECK: llvm.br ^bb1(%[[N]], %[[P]] : i32, i64)
// CHECK: ^bb1(%{{.*}}: i32, %[[ADDR:.*]]: i64):
// CHECK: %[[CACHEP:.*]] = llvm.getelementptr %[[CTX]][88]
// CHECK: %[[CACHE:.*]] = llvm.load %[[CACHEP]] {{.*}}: !llvm.ptr -> !llvm.ptr
// CHECK: %[[LO:.*]] = llvm.load %[[CACHE]] {{.*}}: !llvm.ptr -> i64
// CHECK: %[[OFF:.*]] = llvm.sub %[[ADDR]], %[[LO]]
// CHECK: llvm.cond_br %{{.*}} weights([2000, 1]), ^[[OK:.*]], ^[[SLOW:.*]]
// CHECK: ^[[SLOW]]:
// CHECK: llvm.call @__wooly_rt_check(%[[CTX]], %{{.*}}, %[[ADDR]], %{{.*}}, %{{.*}}) {noalias_scopes = [#[[CONTEXT:.*]]]}
// CHECK: ^[[OK]]:
// CHECK: %[[GP:.*]] = llvm.inttoptr %[[ADDR]] : i64 to !llvm.ptr
// CHECK: llvm.load %[[GP]] {alignment = 4 : i64, noalias_scopes = [#{{.*}}]} : !llvm.ptr -> f32
// A kernel without barriers also gets a loop over the block's threads that
// sets %tid/%laneid/%warpid in the context and calls it (inlined later):
// rows of the block outside, the threads of a row (%tid.x) inside.
// CHECK-LABEL: llvm.func @__wooly_block_k(
// CHECK-SAME: %[[BCTX:[^:]*]]: !llvm.ptr {llvm.align = 8 : i64, llvm.dereferenceable = 144 : i64, llvm.noalias}, %[[BPAR:[^:]*]]: !llvm.ptr {llvm.dereferenceable = 16 : i64, llvm.noalias}, %[[START:[^:]*]]: i32)
// CHECK: ^[[ROW:.*]](%[[I:.*]]: i32, %[[X0:.*]]: i32, %{{.*}}: i32, %{{.*}}: i32):
// CHECK: llvm.icmp "ult" %[[I]]
// CHECK: llvm.br ^[[THREAD:.*]](%[[X0]], %[[I]] : i32, i32)
// CHECK: ^[[THREAD]](%[[TX:.*]]: i32, %{{.*}}: i32):
// CHECK: llvm.store %[[TX]], %{{.*}} {alias_scopes = [#[[CONTEXT]]]} : i32, !llvm.ptr
// CHECK: llvm.call @__wooly_kernel_k(%[[BCTX]], %[[BPAR]])
// CHECK: %[[TX1:.*]] = llvm.add %[[TX]]
// CHECK: %[[INROW:.*]] = llvm.icmp "ult" %[[TX1]]
// CHECK: llvm.cond_br %[[INROW]], ^[[THREAD]](%[[TX1]], %{{.*}} : i32, i32), ^{{.*}}(%{{.*}} : i32)
// NOCHECK-LABEL: llvm.func @__wooly_kernel_k(
// NOCHECK-NOT: __wooly_rt_check(
// NOCHECK: llvm.return
wooly.func @k(%n: i32 {wooly.type = "u32"}, %p: i64 {wooly.type = "u64"}) attributes {kernel} {
  %v = wooly.ld global %p : i64 -> f32
  wooly.st global %p, %v : i64, f32
  wooly.ret
}

// -----

// Shared variables are offsets in one window. Those a device function names
// come first, in module order (@d, at 0: every part of a module compiled
// kernel by kernel shares the functions); a variable only kernels name takes
// space only in those kernels, after them: @b (kernel s) and @c (kernel t)
// both start at 32, and @a, which nothing names, takes none. The window is
// the largest kernel's (CUB and Thrust put dozens of kernels, each with its
// own temp storage, in one module). An access is an offset from the window
// base in the context, checked against its size inline - but these, at
// constant aligned offsets inside the variables, are not checked
// (SharedOffsets.h; shared-bounds.mlir).
// CHECK: module attributes {wooly.num_access_sites = {{[0-9]+}} : i64, wooly.static_shared_size = 288 : i64}
// CHECK-LABEL: llvm.func weak_odr @__wooly_fn_f(
// CHECK: llvm.mlir.constant(0 : i32) : i32
// CHECK-LABEL: llvm.func @__wooly_kernel_s(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr
// CHECK: %[[OFF:.*]] = llvm.mlir.constant(32 : i32) : i32
// CHECK: %[[OFF64:.*]] = llvm.zext nneg %[[OFF]] : i32 to i64
// CHECK-NOT: llvm.call @__wooly_rt_shared_oob(
// CHECK: %[[BASEP:.*]] = llvm.getelementptr %[[CTX]][72]
// CHECK: %[[BASE:.*]] = llvm.load %[[BASEP]] {{.*}}: !llvm.ptr -> !llvm.ptr
// CHECK: %[[PTR:.*]] = llvm.getelementptr %[[BASE]][%[[OFF64]]]
// CHECK: llvm.store %{{.*}}, %[[PTR]] {alignment = 4 : i64, noalias_scopes = [#{{.*}}]} : f32, !llvm.ptr
// CHECK-LABEL: llvm.func @__wooly_kernel_t(
// CHECK: llvm.mlir.constant(32 : i32) : i32
wooly.global shared @a : f32[64] align 4
wooly.global shared @b : i32[4] align 16
wooly.global shared @c : f32[64] align 4
wooly.global shared @d : i32[8] align 16
wooly.global shared extern @dyn : i8[0] align 16
wooly.func @f(%x: f32 {wooly.type = "f32"}) {
  %p = wooly.addressof @d : i32
  wooly.st shared %p, %x : i32, f32
  wooly.ret
}
wooly.func @s(%x: f32 {wooly.type = "f32"}) attributes {kernel} {
  %p = wooly.addressof @b : i32
  wooly.st shared %p, %x : i32, f32
  wooly.call @f(%x) : (f32) -> ()
  wooly.ret
}
wooly.func @t(%x: f32 {wooly.type = "f32"}) attributes {kernel} {
  %p = wooly.addressof @c : i32
  wooly.st shared %p, %x : i32, f32
  wooly.call @f(%x) : (f32) -> ()
  wooly.ret
}

// -----

// .global variables become weak LLVM globals (zero-filled, or padded lists;
// weak so that kernels compiled apart share one instance when linked together);
// their address is a host pointer.
// CHECK: llvm.mlir.global weak @__wooly_g_g(dense<[1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<4xf32>) {addr_space = 0 : i32, alignment = 4 : i64} : !llvm.array<4 x f32>
// CHECK-LABEL: llvm.func @__wooly_kernel_gk(
// CHECK: %[[A:.*]] = llvm.mlir.addressof @__wooly_g_g : !llvm.ptr
// CHECK: llvm.ptrtoint %[[A]] : !llvm.ptr to i64
wooly.global global @g : f32[4] align 4 init dense<[1.0]> : tensor<1xf32>
wooly.func @gk() attributes {kernel} {
  %a = wooly.addressof @g : i64
  %v = wooly.ld global %a : i64 -> f32
  wooly.st global %a, %v : i64, f32
  wooly.ret
}

// -----

// Atomics lower to atomicrmw/cmpxchg with PTX's orderings; inc/dec wrap.
// CHECK-LABEL: llvm.func @__wooly_kernel_atomics(
// CHECK: llvm.atomicrmw add %{{.*}}, %{{.*}} monotonic {{.*}}: !llvm.ptr, i32
// CHECK: llvm.atomicrmw uinc_wrap %{{.*}}, %{{.*}} monotonic {{.*}}: !llvm.ptr, i32
// CHECK: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} acq_rel acquire {{.*}}: !llvm.ptr, i32
// CHECK: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic {{.*}}: !llvm.ptr, f32
wooly.func @atomics(%p: i64 {wooly.type = "u64"}, %v: i32 {wooly.type = "u32"}, %f: f32 {wooly.type = "f32"}) attributes {kernel} {
  %0 = wooly.atom global add %p, %v : i64, i32 -> i32
  %1 = wooly.atom global inc %p, %v : i64, i32 -> i32
  %2 = wooly.atom global cas acq_rel gpu %p, %v, %1 : i64, i32, i32 -> i32
  wooly.red global fadd %p, %f : i64, f32
  wooly.ret
}

// -----

// Shared-memory atomics are a plain load-modify-store: a block's threads run
// on one worker and switch only inside runtime calls.
// CHECK-LABEL: llvm.func @__wooly_kernel_shared_atomics(
// CHECK-NOT: llvm.atomicrmw
// CHECK: %[[OLD:.*]] = llvm.load %[[P:.*]] {alignment = 4 : i64, noalias_scopes = {{.*}}} : !llvm.ptr -> i32
// CHECK: %[[NEW:.*]] = llvm.add %[[OLD]], %{{.*}} : i32
// CHECK: llvm.store %[[NEW]], %[[P]] {{.*}}: i32, !llvm.ptr
// CHECK: %[[OLD2:.*]] = llvm.load %[[P2:.*]] {alignment = 4 : i64, noalias_scopes = {{.*}}} : !llvm.ptr -> i32
// CHECK: %[[EQ:.*]] = llvm.icmp "eq" %[[OLD2]], %{{.*}} : i32
// CHECK: %[[SEL:.*]] = llvm.select %[[EQ]], %{{.*}}, %[[OLD2]] : i1, i32
// CHECK: llvm.store %[[SEL]], %[[P2]]
// CHECK-NOT: llvm.cmpxchg
// CHECK: llvm.return
wooly.global shared @counter : i32[1] align 4
wooly.func @shared_atomics(%v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %p = wooly.addressof @counter : i32
  %0 = wooly.atom shared add %p, %v : i32, i32 -> i32
  %1 = wooly.atom shared cas %p, %v, %0 : i32, i32, i32 -> i32
  wooly.ret
}

// -----

// A shared access inside the static shared memory's size is checked with one
// comparison, `off <= total - size` (total, the launch's window, is at least
// the static size, here 64 bytes, so the difference does not wrap).
// CHECK-LABEL: llvm.func @__wooly_kernel_one_compare(
// CHECK: %[[OFF:.*]] = llvm.zext %{{.*}} : i32 to i64
// CHECK: %[[TOTAL:.*]] = llvm.intr.umax(%{{.*}}, %{{.*}}) : (i64, i64) -> i64
// CHECK: %[[SIZE:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK: %[[LIMIT:.*]] = llvm.sub %[[TOTAL]], %[[SIZE]] overflow<nuw> : i64
// CHECK: %[[IN:.*]] = llvm.icmp "ule" %[[OFF]], %[[LIMIT]] : i64
// CHECK-NOT: llvm.icmp "ult" %[[OFF]]
// CHECK: llvm.and %[[IN]], %{{.*}} : i1
// CHECK: llvm.call @__wooly_rt_shared_oob(
wooly.global shared @t : i32[16] align 4
wooly.func @one_compare(%i: i32 {wooly.type = "u32"}, %v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %base = wooly.addressof @t : i32
  %o = arith.muli %i, %v : i32
  wooly.st shared %o, %v : i32, i32
  wooly.ret
}

// -----

// With only dynamic shared memory the window may be smaller than the
// access: the offset is below the size and so is its end (their sum may
// wrap in 64 bits).
// CHECK-LABEL: llvm.func @__wooly_kernel_two_compares(
// CHECK: %[[OFF:.*]] = llvm.zext %{{.*}} : i32 to i64
// CHECK: %[[END:.*]] = llvm.add %[[OFF]], %{{.*}} : i64
// CHECK: %[[IN:.*]] = llvm.icmp "ult" %[[OFF]], %[[TOTAL:.*]] : i64
// CHECK: %[[FITS:.*]] = llvm.icmp "ule" %[[END]], %[[TOTAL]] : i64
// CHECK: llvm.and %[[IN]], %[[FITS]] : i1
// CHECK: llvm.call @__wooly_rt_shared_oob(
wooly.global shared extern @dyn : i8[0] align 16
wooly.func @two_compares(%i: i32 {wooly.type = "u32"}, %v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %base = wooly.addressof @dyn : i32
  %o = arith.muli %i, %v : i32
  wooly.st shared %o, %v : i32, i32
  wooly.ret
}
