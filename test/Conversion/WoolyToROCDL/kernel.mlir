// RUN: wooly-opt %s --convert-wooly-to-rocdl --split-input-file | FileCheck %s
// RUN: wooly-opt %s --convert-wooly-to-rocdl=chip=gfx90a --split-input-file | FileCheck %s --check-prefix=GFX90A
// RUN: not wooly-opt %s --convert-wooly-to-rocdl=chip=gfx1100 --split-input-file 2>&1 | FileCheck %s --check-prefix=BADCHIP

// The chip is checked (gfx90a and gfx942 have 64-lane waves) and recorded.
// GFX90A: module attributes {llvm.target_triple = "amdgcn-amd-amdhsa", wooly.chip = "gfx90a"}
// BADCHIP: convert-wooly-to-rocdl: unsupported chip 'gfx1100' (supported: gfx90a, gfx942)

// A kernel becomes a rocdl.kernel llvm.func taking its parameters by value,
// with .maxntid as the flat work-group size bound and the CUDA parameter
// layout.
// CHECK: module attributes {llvm.target_triple = "amdgcn-amd-amdhsa", wooly.chip = "gfx942"}
// CHECK-LABEL: llvm.func @k(
// CHECK-SAME: %[[N:.*]]: i32, %[[P:.*]]: i64)
// CHECK-SAME: rocdl.flat_work_group_size = "1,256", rocdl.kernel
// CHECK-SAME: wooly.param_offsets = array<i64: 0, 8>, wooly.param_sizes = array<i64: 4, 8>
// CHECK: llvm.br ^bb1(%[[N]], %[[P]] : i32, i64)
// CHECK: llvm.return
wooly.func @k(%n: i32 {wooly.type = "u32"}, %p: i64 {wooly.type = "u64"})
    attributes {kernel, maxntid = array<i32: 256>} {
  wooly.ret
}

// -----

// .reqntid fixes the work-group size; exit in a kernel returns from it; a
// device function is internal and called directly, several results come
// back in a struct.
// CHECK-LABEL: llvm.func internal @f(
// CHECK-SAME: -> !llvm.struct<(i32, i32)>
// CHECK: llvm.insertvalue
// CHECK: llvm.return %{{.*}} : !llvm.struct<(i32, i32)>
// CHECK-LABEL: llvm.func @k2(
// CHECK-SAME: rocdl.flat_work_group_size = "64,64", rocdl.kernel, rocdl.reqd_work_group_size = array<i32: 32, 2, 1>
// CHECK: %[[R:.*]] = llvm.call @f(%{{.*}}) : (i32) -> !llvm.struct<(i32, i32)>
// CHECK: llvm.extractvalue %[[R]][0]
// CHECK: llvm.extractvalue %[[R]][1]
// CHECK-NEXT: llvm.return
wooly.func @f(%a: i32) -> (i32, i32) {
  wooly.ret %a, %a : i32, i32
}
wooly.func @k2(%a: i32 {wooly.type = "u32"}) attributes {kernel, reqntid = array<i32: 32, 2>} {
  %x, %y = wooly.call @f(%a) : (i32) -> (i32, i32)
  wooly.exit
}

// -----

// trap is llvm.intr.trap; brkpt is llvm.intr.debugtrap.
// CHECK-LABEL: llvm.func @k3(
// CHECK: llvm.intr.trap
// CHECK-NEXT: llvm.unreachable
// CHECK-LABEL: llvm.func @k4(
// CHECK: llvm.intr.debugtrap
// CHECK-NEXT: llvm.return
wooly.func @k3() attributes {kernel} {
  wooly.trap
}
wooly.func @k4() attributes {kernel} {
  wooly.brkpt
  wooly.ret
}

// -----

// CUDA's __assertfail (a failed assert) is defined as a trap: the kernel
// aborts as on NVIDIA (the message is not printed).
// CHECK-LABEL: llvm.func internal @__assertfail(
// CHECK-NEXT: llvm.intr.trap
// CHECK-NEXT: llvm.unreachable
// CHECK-LABEL: llvm.func @k5(
// CHECK: llvm.call @__assertfail(
wooly.func private @__assertfail(i64, i64, i32, i64, i64) attributes {linkage = "extern"}
wooly.func @k5(%p: i64 {wooly.type = "u64"}) attributes {kernel} {
  %l = arith.constant 1 : i32
  wooly.call @__assertfail(%p, %p, %l, %p, %p) : (i64, i64, i32, i64, i64) -> ()
  wooly.ret
}

// -----

// A kernel that takes a parameter's address copies its parameters into a
// buffer laid out like the CUDA parameter buffer (a private alloca); the
// address is the generic address of the copy, and ld.param through it a
// generic load.
// CHECK-LABEL: llvm.func @param_address(
// CHECK-SAME: %[[A:.*]]: i64, %[[B:.*]]: i32)
// CHECK: %[[N:.*]] = llvm.mlir.constant(12 : i64) : i64
// CHECK: %[[COPY:.*]] = llvm.alloca %[[N]] x i8 {alignment = 16 : i64} : (i64) -> !llvm.ptr<5>
// CHECK: %[[S0:.*]] = llvm.getelementptr %[[COPY]][0] : (!llvm.ptr<5>) -> !llvm.ptr<5>, i8
// CHECK: llvm.store %[[A]], %[[S0]] {alignment = 1 : i64} : i64, !llvm.ptr<5>
// CHECK: %[[S1:.*]] = llvm.getelementptr %[[COPY]][8] : (!llvm.ptr<5>) -> !llvm.ptr<5>, i8
// CHECK: llvm.store %[[B]], %[[S1]] {alignment = 1 : i64} : i32, !llvm.ptr<5>
// CHECK: %[[P:.*]] = llvm.getelementptr %[[COPY]][8]
// CHECK: %[[G:.*]] = llvm.addrspacecast %[[P]] : !llvm.ptr<5> to !llvm.ptr
// CHECK: %[[I:.*]] = llvm.ptrtoint %[[G]] : !llvm.ptr to i64
// CHECK: %[[Q:.*]] = llvm.inttoptr %[[I]] : i64 to !llvm.ptr
// CHECK: llvm.load %[[Q]] {alignment = 4 : i64} : !llvm.ptr -> i32
wooly.func @param_address(%out: i64 {wooly.type = "u64"}, %v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %a = wooly.param_address 1 : i64
  %x = wooly.ld param %a : i64 -> i32
  wooly.st global %out, %x : i64, i32
  wooly.ret
}

// -----

// Without launch bounds a kernel may use CUDA's 1024 threads per block (the
// ROCDL translation's default would be 256).
// CHECK-LABEL: llvm.func @unbounded(
// CHECK-SAME: rocdl.flat_work_group_size = "1,1024", rocdl.kernel
wooly.func @unbounded() attributes {kernel} {
  wooly.ret
}
