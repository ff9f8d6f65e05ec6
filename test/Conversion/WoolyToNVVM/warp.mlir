// RUN: wooly-opt %s --convert-wooly-to-nvvm --split-input-file | FileCheck %s

// shfl: every mode, with the mask, PTX's c operand (clamp | segment << 8)
// and the valid predicate; vote: i1 for all/any/uni, i32 for ballot; redux:
// signed and unsigned min/max, add and the bitwise ops; match: any (mask
// only) and all (mask and predicate).
// CHECK-LABEL: llvm.func @warp(
// CHECK: %[[M:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK: %[[C:.*]] = llvm.mlir.constant(7199 : i32) : i32
// CHECK: %[[S0:.*]] = nvvm.shfl.sync bfly %[[M]], %{{.*}}, %{{.*}}, %[[C]] {return_value_and_is_valid} : i32 -> !llvm.struct<(i32, i1)>
// CHECK: %[[R0:.*]] = llvm.extractvalue %[[S0]][0]
// CHECK: %[[S1:.*]] = nvvm.shfl.sync up %[[M]], %[[R0]], %{{.*}}, %[[C]] {return_value_and_is_valid}
// CHECK: %[[R1:.*]] = llvm.extractvalue %[[S1]][0]
// CHECK: %[[S2:.*]] = nvvm.shfl.sync down %[[M]], %[[R1]], %{{.*}}, %[[C]] {return_value_and_is_valid}
// CHECK: %[[R2:.*]] = llvm.extractvalue %[[S2]][0]
// CHECK: %[[S3:.*]] = nvvm.shfl.sync idx %[[M]], %[[R2]], %{{.*}}, %[[C]] {return_value_and_is_valid}
// CHECK: %[[P3:.*]] = llvm.extractvalue %[[S3]][1] : !llvm.struct<(i32, i1)>
// CHECK: %[[A:.*]] = nvvm.vote.sync all %[[M]], %[[P3]] -> i1
// CHECK: %[[B:.*]] = nvvm.vote.sync any %[[M]], %[[A]] -> i1
// CHECK: %[[U:.*]] = nvvm.vote.sync uni %[[M]], %[[B]] -> i1
// CHECK: %[[BAL:.*]] = nvvm.vote.sync ballot %[[M]], %[[U]] -> i32
// CHECK: %[[X0:.*]] = nvvm.redux.sync add %[[BAL]], %[[M]] : i32 -> i32
// CHECK: nvvm.redux.sync umin %[[X0]], %[[M]] : i32 -> i32
// CHECK: nvvm.redux.sync min
// CHECK: nvvm.redux.sync umax
// CHECK: nvvm.redux.sync max
// CHECK: nvvm.redux.sync and
// CHECK: nvvm.redux.sync or
// CHECK: %[[X7:.*]] = nvvm.redux.sync xor
// CHECK: %[[MA:.*]] = nvvm.match.sync any %[[M]], %[[X7]] : i32 -> i32
// CHECK: %[[MB:.*]] = nvvm.match.sync all %[[MA]], %{{.*}} : i64 -> !llvm.struct<(i32, i1)>
// CHECK: llvm.extractvalue %[[MB]][0]
// CHECK: llvm.extractvalue %[[MB]][1]
wooly.func @warp(%p: i64 {wooly.type = "u64"}, %s: i32 {wooly.type = "u32"}, %v: i32 {wooly.type = "u32"}, %w: i64 {wooly.type = "u64"}) attributes {kernel} {
  %m = arith.constant -1 : i32
  %cl = arith.constant 7199 : i32
  %r0, %p0 = wooly.shfl bfly %v, %s, %cl, %m : i32
  %r1, %p1 = wooly.shfl up %r0, %s, %cl, %m : i32
  %r2, %p2 = wooly.shfl down %r1, %s, %cl, %m : i32
  %r3, %p3 = wooly.shfl idx %r2, %s, %cl, %m : i32
  %a = wooly.vote all %p3, %m : i1
  %b = wooly.vote any %a, %m : i1
  %u = wooly.vote uni %b, %m : i1
  %bal = wooly.vote ballot %u, %m : i32
  %x0 = wooly.redux add %bal, %m : i32
  %x1 = wooly.redux umin %x0, %m : i32
  %x2 = wooly.redux smin %x1, %m : i32
  %x3 = wooly.redux umax %x2, %m : i32
  %x4 = wooly.redux smax %x3, %m : i32
  %x5 = wooly.redux and %x4, %m : i32
  %x6 = wooly.redux or %x5, %m : i32
  %x7 = wooly.redux xor %x6, %m : i32
  %ma, %mp = wooly.match any %x7, %m : i32
  %mb, %mq = wooly.match all %w, %ma : i64
  wooly.st global %p, %mb : i64, i32
  wooly.st global %p, %mq : i64, i1
  wooly.ret
}

// -----

// ldmatrix m8n8 b16 from a shared-space address: x1/x2/x4, trans is the
// column layout. cp.async: ca/cg, 4/8/16 bytes, the optional source size;
// commit and wait groups.
// CHECK-LABEL: llvm.func @async(
// CHECK: %[[P1:.*]] = llvm.inttoptr %{{.*}} : i32 to !llvm.ptr<3>
// CHECK: nvvm.ldmatrix %[[P1]] {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 1 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> i32
// CHECK: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 2 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32)>
// CHECK: nvvm.ldmatrix %{{.*}} {{.*}}layout = #nvvm.mma_layout<row>, num = 4 : i32{{.*}} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK: %[[D:.*]] = llvm.inttoptr %{{.*}} : i32 to !llvm.ptr<3>
// CHECK: %[[G:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<1>
// CHECK: nvvm.cp.async.shared.global %[[D]], %[[G]], 4, cache = ca : !llvm.ptr<3>, !llvm.ptr<1>
// CHECK: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 8, cache = ca, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.cp.async.wait.group 1
wooly.func @async(%p: i64 {wooly.type = "u64"}, %s: i32 {wooly.type = "u32"}, %v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %l1 = wooly.ldmatrix %s : i32 -> i32
  %l2:2 = wooly.ldmatrix %s trans : i32 -> i32, i32
  %l4:4 = wooly.ldmatrix %s : i32 -> i32, i32, i32, i32
  wooly.st global %p, %l1 : i64, i32
  wooly.st global %p, %l2#1 : i64, i32
  wooly.st global %p, %l4#3 : i64, i32
  wooly.cp_async %s, %p, 4 cache ca : i32, i64
  wooly.cp_async %s, %p, 8 src_size %v cache ca : i32, i64
  wooly.cp_async %s, %p, 16 cache cg : i32, i64
  wooly.cp_async_commit
  wooly.cp_async_wait 1
  wooly.ret
}

// -----

// mma.sync: m16n8k16 f16 (f32 or f16 accumulators; f16 pairs travel as i32
// and are bitcast to <2 x f16>), m16n8k16 bf16 -> f32, m16n8k32 s8 -> s32.
// CHECK-LABEL: llvm.func @mma(
// CHECK: llvm.bitcast %{{.*}} : i32 to vector<2xf16>
// CHECK: %[[D:.*]] = llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"({{.*}}) : (vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.bf16"({{.*}}) : (i32, i32, i32, i32, i32, i32, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: llvm.call_intrinsic "llvm.nvvm.mma.m16n8k32.row.col.s8"({{.*}}) : (i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK: %[[H:.*]] = llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.f16.f16"({{.*}}) : (vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>) -> !llvm.struct<(vector<2xf16>, vector<2xf16>)>
// CHECK: %[[H1:.*]] = llvm.extractvalue %[[H]][1]
// CHECK: llvm.bitcast %[[H1]] : vector<2xf16> to i32
wooly.func @mma(%p: i64 {wooly.type = "u64"}, %a: i32 {wooly.type = "u32"}, %f: f32 {wooly.type = "f32"}) attributes {kernel} {
  %d:4 = wooly.mma_sync "m16n8k16" row col f32 f16 f16 f32 (%a, %a, %a, %a) (%a, %a) (%f, %f, %f, %f) : (i32, i32, i32, i32) (i32, i32) (f32, f32, f32, f32) -> f32, f32, f32, f32
  %e:4 = wooly.mma_sync "m16n8k16" row col f32 bf16 bf16 f32 (%a, %a, %a, %a) (%a, %a) (%d#0, %d#1, %d#2, %d#3) : (i32, i32, i32, i32) (i32, i32) (f32, f32, f32, f32) -> f32, f32, f32, f32
  %g:4 = wooly.mma_sync "m16n8k32" row col s32 s8 s8 s32 (%a, %a, %a, %a) (%a, %a) (%a, %a, %a, %a) : (i32, i32, i32, i32) (i32, i32) (i32, i32, i32, i32) -> i32, i32, i32, i32
  %h:2 = wooly.mma_sync "m16n8k16" row col f16 f16 f16 f16 (%a, %a, %a, %a) (%a, %a) (%g#0, %g#1) : (i32, i32, i32, i32) (i32, i32) (i32, i32) -> i32, i32
  wooly.st global %p, %e#3 : i64, f32
  wooly.st global %p, %h#1 : i64, i32
  wooly.ret
}

// -----

// wmma m16n16k16: f16 A/B fragments (8 x i32 <-> 8 x <2 x f16>), f32 C/D,
// the layouts, the stride and the state space of the address.
// CHECK-LABEL: llvm.func @wmma(
// CHECK: %[[S:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK: %[[PA:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<1>
// CHECK: nvvm.wmma.load %[[PA]], %[[S]] {eltype = #nvvm.mma_type<f16>, frag = #nvvm.mma_frag<a>, k = 16 : i32, layout = #nvvm.mma_layout<row>, m = 16 : i32, n = 16 : i32} : (!llvm.ptr<1>) -> !llvm.struct<(vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>)>
// CHECK: %[[PB:.*]] = llvm.inttoptr %{{.*}} : i32 to !llvm.ptr<3>
// CHECK: nvvm.wmma.load %[[PB]], %[[S]] {eltype = #nvvm.mma_type<f16>, frag = #nvvm.mma_frag<b>, k = 16 : i32, layout = #nvvm.mma_layout<col>, m = 16 : i32, n = 16 : i32} : (!llvm.ptr<3>)
// CHECK: nvvm.wmma.load %{{.*}}, %[[S]] {eltype = #nvvm.mma_type<f32>, frag = #nvvm.mma_frag<c>, k = 16 : i32, layout = #nvvm.mma_layout<row>, m = 16 : i32, n = 16 : i32} : (!llvm.ptr<1>) -> !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32)>
// CHECK: llvm.call_intrinsic "llvm.nvvm.wmma.m16n16k16.mma.row.col.f32.f32"({{.*}}) : (vector<2xf16>, {{.*}}, vector<2xf16>, f32, {{.*}}, f32) -> !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32)>
// CHECK: nvvm.wmma.store %{{.*}}, %[[S]], %{{.*}} {eltype = #nvvm.mma_type<f32>, k = 16 : i32, layout = #nvvm.mma_layout<row>, m = 16 : i32, n = 16 : i32} : !llvm.ptr<1>, f32, f32, f32, f32, f32, f32, f32, f32
wooly.func @wmma(%p: i64 {wooly.type = "u64"}, %a: i32 {wooly.type = "u32"}) attributes {kernel} {
  %s = arith.constant 16 : i32
  %wa:8 = wooly.wmma_load a row "m16n16k16" f16 global %p, %s : i64 -> i32, i32, i32, i32, i32, i32, i32, i32
  %wb:8 = wooly.wmma_load b col "m16n16k16" f16 shared %a, %s : i32 -> i32, i32, i32, i32, i32, i32, i32, i32
  %wc:8 = wooly.wmma_load c row "m16n16k16" f32 global %p, %s : i64 -> f32, f32, f32, f32, f32, f32, f32, f32
  %wd:8 = wooly.wmma_mma row col "m16n16k16" f32 f16 f16 f32 (%wa#0, %wa#1, %wa#2, %wa#3, %wa#4, %wa#5, %wa#6, %wa#7) (%wb#0, %wb#1, %wb#2, %wb#3, %wb#4, %wb#5, %wb#6, %wb#7) (%wc#0, %wc#1, %wc#2, %wc#3, %wc#4, %wc#5, %wc#6, %wc#7) : (i32, i32, i32, i32, i32, i32, i32, i32) (i32, i32, i32, i32, i32, i32, i32, i32) (f32, f32, f32, f32, f32, f32, f32, f32) -> f32, f32, f32, f32, f32, f32, f32, f32
  wooly.wmma_store row "m16n16k16" f32 global %p, %s (%wd#0, %wd#1, %wd#2, %wd#3, %wd#4, %wd#5, %wd#6, %wd#7) : i64, f32, f32, f32, f32, f32, f32, f32, f32
  wooly.ret
}
