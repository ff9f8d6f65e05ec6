// RUN: wooly-opt %s --convert-wooly-to-nvvm --split-input-file | FileCheck %s

// A kernel becomes an nvvm.kernel llvm.func taking its parameters by value,
// with its launch bounds and CUDA parameter layout.
// CHECK-LABEL: llvm.func @k(
// CHECK-SAME: %[[N:.*]]: i32, %[[P:.*]]: i64)
// CHECK-SAME: nvvm.kernel
// CHECK-SAME: nvvm.maxntid = array<i32: 256>
// CHECK-SAME: wooly.param_offsets = array<i64: 0, 8>, wooly.param_sizes = array<i64: 4, 8>
// CHECK: llvm.br ^bb1(%[[N]], %[[P]] : i32, i64)
// CHECK: llvm.return
wooly.func @k(%n: i32 {wooly.type = "u32"}, %p: i64 {wooly.type = "u64"})
    attributes {kernel, maxntid = array<i32: 256>} {
  wooly.ret
}

// -----

// reqntid; exit is nvvm.exit; a device function is internal and called
// directly, several results come back in a struct.
// CHECK-LABEL: llvm.func internal @f(
// CHECK-SAME: -> !llvm.struct<(i32, i32)>
// CHECK: llvm.insertvalue
// CHECK: llvm.return %{{.*}} : !llvm.struct<(i32, i32)>
// CHECK-LABEL: llvm.func @k2(
// CHECK-SAME: nvvm.reqntid = array<i32: 32, 2>
// CHECK: %[[R:.*]] = llvm.call @f(%{{.*}}) : (i32) -> !llvm.struct<(i32, i32)>
// CHECK: llvm.extractvalue %[[R]][0]
// CHECK: llvm.extractvalue %[[R]][1]
// CHECK: nvvm.exit
// CHECK-NEXT: llvm.unreachable
wooly.func @f(%a: i32) -> (i32, i32) {
  wooly.ret %a, %a : i32, i32
}
wooly.func @k2(%a: i32 {wooly.type = "u32"}) attributes {kernel, reqntid = array<i32: 32, 2>} {
  %x, %y = wooly.call @f(%a) : (i32) -> (i32, i32)
  wooly.exit
}

// -----

// trap is llvm.intr.trap.
// CHECK-LABEL: llvm.func @k3(
// CHECK: llvm.intr.trap
// CHECK-NEXT: llvm.unreachable
wooly.func @k3() attributes {kernel} {
  wooly.trap
}

// -----

// A kernel that takes a parameter's address copies its parameters into a
// buffer laid out like the CUDA parameter buffer (an alloca: NVPTX puts it
// in local memory); the address is the generic address of the copy, and
// ld.param through it a generic load.
// CHECK-LABEL: llvm.func @param_address(
// CHECK-SAME: %[[A:.*]]: i64, %[[B:.*]]: i32)
// CHECK: %[[N:.*]] = llvm.mlir.constant(12 : i64) : i64
// CHECK: %[[COPY:.*]] = llvm.alloca %[[N]] x i8 {alignment = 16 : i64} : (i64) -> !llvm.ptr
// CHECK: %[[S0:.*]] = llvm.getelementptr %[[COPY]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.store %[[A]], %[[S0]] {alignment = 1 : i64} : i64, !llvm.ptr
// CHECK: %[[S1:.*]] = llvm.getelementptr %[[COPY]][8] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.store %[[B]], %[[S1]] {alignment = 1 : i64} : i32, !llvm.ptr
// CHECK: %[[P:.*]] = llvm.getelementptr %[[COPY]][8]
// CHECK: %[[I:.*]] = llvm.ptrtoint %[[P]] : !llvm.ptr to i64
// CHECK: %[[Q:.*]] = llvm.inttoptr %[[I]] : i64 to !llvm.ptr
// CHECK: llvm.load %[[Q]] {alignment = 4 : i64} : !llvm.ptr -> i32
wooly.func @param_address(%out: i64 {wooly.type = "u64"}, %v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %a = wooly.param_address 1 : i64
  %x = wooly.ld param %a : i64 -> i32
  wooly.st global %out, %x : i64, i32
  wooly.ret
}
