// RUN: wooly-opt %s --convert-wooly-to-nvvm --split-input-file | FileCheck %s

// Variables live in NVPTX's address spaces; addressof gives the address in
// the variable's own space; accesses go through a pointer of the op's space.
// A .global or .const variable is the host's too (cudaMemcpyToSymbol), so it
// is external even without .visible; a shared one is the module's.
// CHECK-DAG: llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<256 x f32>
// CHECK-DAG: llvm.mlir.global external @dyn() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK-DAG: llvm.mlir.global external @gv(dense<[1, 2]> : tensor<2xi32>) {addr_space = 1 : i32, alignment = 4 : i64} : !llvm.array<2 x i32>
// CHECK-DAG: llvm.mlir.global external @cv(dense<{{.*}}> : tensor<4xf32>) {addr_space = 4 : i32, alignment = 4 : i64} : !llvm.array<4 x f32>
// CHECK-LABEL: llvm.func @k(
// CHECK: %[[T:.*]] = llvm.mlir.addressof @tile : !llvm.ptr<3>
// CHECK: %[[TI:.*]] = llvm.ptrtoint %[[T]] : !llvm.ptr<3> to i32
// CHECK: %[[SP:.*]] = llvm.inttoptr %[[TI]] : i32 to !llvm.ptr<3>
// CHECK: llvm.load %[[SP]] {alignment = 4 : i64} : !llvm.ptr<3> -> f32
// CHECK: %[[GP:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<1>
// CHECK: llvm.store volatile %{{.*}}, %[[GP]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK: %[[CP:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<4>
// CHECK: llvm.load %[[CP]] {alignment = 4 : i64} : !llvm.ptr<4> -> f32
// CHECK: %[[NC:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<1>
// CHECK: llvm.load %[[NC]] invariant {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: %[[Q:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
// CHECK: llvm.load %[[Q]] atomic syncscope("device") acquire {alignment = 4 : i64} : !llvm.ptr -> i32
wooly.global shared @tile : f32[256] align 4
wooly.global shared extern @dyn : i8[0] align 16
wooly.global global visible @gv : i32[2] align 4 init dense<[1, 2]> : tensor<2xi32>
wooly.global const @cv : f32[4] align 4 init dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
wooly.func @k(%p: i64 {wooly.type = "u64"}) attributes {kernel} {
  %t = wooly.addressof @tile : i32
  %v = wooly.ld shared %t : i32 -> f32
  wooly.st global volatile %p, %v : i64, f32
  %c = wooly.addressof @cv : i64
  %w = wooly.ld const %c : i64 -> f32
  %a, %b, %cc, %d = wooly.ld global %p cache nc : i64 -> f32, f32, f32, f32
  %q = wooly.ld generic acquire gpu %p : i64 -> i32
  wooly.st global %p, %w : i64, f32
  wooly.st global %p, %a : i64, f32
  wooly.ret
}

// -----

// cvta is an addrspacecast between the space's pointers and generic ones;
// a function-scope .local variable is an alloca whose address is local.
// CHECK-LABEL: llvm.func @k(
// CHECK: %[[A:.*]] = llvm.alloca %{{.*}} x i8 {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK: %[[S:.*]] = llvm.inttoptr %{{.*}} : i32 to !llvm.ptr<3>
// CHECK: %[[G:.*]] = llvm.addrspacecast %[[S]] : !llvm.ptr<3> to !llvm.ptr
// CHECK: llvm.ptrtoint %[[G]] : !llvm.ptr to i64
// CHECK: %[[G2:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
// CHECK: %[[S2:.*]] = llvm.addrspacecast %[[G2]] : !llvm.ptr to !llvm.ptr<1>
// CHECK: llvm.ptrtoint %[[S2]] : !llvm.ptr<1> to i64
// CHECK: %[[L:.*]] = llvm.addrspacecast %[[A]] : !llvm.ptr to !llvm.ptr<5>
// CHECK: llvm.ptrtoint %[[L]] : !llvm.ptr<5> to i64
// CHECK: llvm.call_intrinsic "llvm.nvvm.isspacep.shared"
wooly.global local @buf : i8[16] align 8 {wooly.function_scope = @k}
wooly.func @k(%s: i32 {wooly.type = "u32"}, %g: i64 {wooly.type = "u64"}) attributes {kernel} {
  %0 = wooly.cvta to_generic shared %s : i32 -> i64
  %1 = wooly.cvta from_generic global %g : i64 -> i64
  %2 = wooly.addressof @buf : i64
  %3 = wooly.isspacep shared %g : i64
  wooly.st global %g, %0, %1 : i64, i64, i64
  wooly.st global %g, %2 : i64, i64
  %4 = arith.extui %3 : i1 to i32
  wooly.st global %g, %4 : i64, i32
  wooly.ret
}
