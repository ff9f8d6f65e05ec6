// RUN: wooly-opt %s --convert-wooly-to-rocdl | FileCheck %s

// Special registers: work-item and work-group ids are ROCDL ops; %ntid is
// the dispatch packet's workgroup_size (u16 at 4/6/8) and %nctaid its
// grid_size (u32 at 12/16/20, in threads) divided by it, rounded up;
// %laneid is the lane in the 32-lane half of the wave (mbcnt & 31); %warpid
// is the flat thread id / 32; clocks are s_memtime, %globaltimer is
// s_memrealtime (100 MHz) in ns; lane masks are relative to the half;
// %warpsize is PTX's 32; a launch has one-block clusters; the shared
// memory sizes come from the packet's group_segment_size (at 28) and
// llvm.amdgcn.groupstaticsize.
// CHECK-LABEL: llvm.func @k(
// CHECK: rocdl.workitem.id.x : i32
// CHECK: %[[DP:.*]] = llvm.call_intrinsic "llvm.amdgcn.dispatch.ptr"() : () -> !llvm.ptr<4>
// CHECK: %[[NY:.*]] = llvm.getelementptr %[[DP]][6] : (!llvm.ptr<4>) -> !llvm.ptr<4>, i8
// CHECK: llvm.load %[[NY]] invariant {alignment = 2 : i64} : !llvm.ptr<4> -> i16
// CHECK: rocdl.workgroup.id.z : i32
// CHECK: %[[GP:.*]] = llvm.getelementptr %{{.*}}[12] : (!llvm.ptr<4>) -> !llvm.ptr<4>, i8
// CHECK: %[[GRID:.*]] = llvm.load %[[GP]] invariant {alignment = 4 : i64} : !llvm.ptr<4> -> i32
// CHECK: %[[BP:.*]] = llvm.getelementptr %{{.*}}[4] : (!llvm.ptr<4>) -> !llvm.ptr<4>, i8
// CHECK: %[[B16:.*]] = llvm.load %[[BP]] invariant {alignment = 2 : i64} : !llvm.ptr<4> -> i16
// CHECK: %[[B:.*]] = llvm.zext %[[B16]] : i16 to i32
// CHECK: %[[BM1:.*]] = llvm.sub %[[B]], %{{.*}} : i32
// CHECK: %[[SUM:.*]] = llvm.add %[[GRID]], %[[BM1]] : i32
// CHECK: llvm.udiv %[[SUM]], %[[B]] : i32
// CHECK: %[[LO:.*]] = rocdl.mbcnt.lo %[[ONES:.*]], %{{.*}} : (i32, i32) -> i32
// CHECK: %[[LANE:.*]] = rocdl.mbcnt.hi %[[ONES]], %[[LO]] : (i32, i32) -> i32
// CHECK: %[[C31:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK: llvm.and %[[LANE]], %[[C31]] : i32
// CHECK: %[[TZ:.*]] = rocdl.workitem.id.z : i32
// CHECK: %[[TY:.*]] = rocdl.workitem.id.y : i32
// CHECK: %[[TX:.*]] = rocdl.workitem.id.x : i32
// CHECK: %[[ZN:.*]] = llvm.mul %[[TZ]], %{{.*}} : i32
// CHECK: %[[ZY:.*]] = llvm.add %[[ZN]], %[[TY]] : i32
// CHECK: %[[ZYN:.*]] = llvm.mul %[[ZY]], %{{.*}} : i32
// CHECK: %[[FLAT:.*]] = llvm.add %[[ZYN]], %[[TX]] : i32
// CHECK: %[[C5:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK: llvm.lshr %[[FLAT]], %[[C5]] : i32
// CHECK: %[[T:.*]] = llvm.call_intrinsic "llvm.amdgcn.s.memtime"() : () -> i64
// CHECK: llvm.trunc %[[T]] : i64 to i32
// CHECK: llvm.call_intrinsic "llvm.amdgcn.s.memtime"() : () -> i64
// CHECK: %[[RT:.*]] = llvm.call_intrinsic "llvm.amdgcn.s.memrealtime"() : () -> i64
// CHECK: %[[C10:.*]] = llvm.mlir.constant(10 : i64) : i64
// CHECK: llvm.mul %[[RT]], %[[C10]] : i64
// CHECK: %[[LT1:.*]] = llvm.shl %{{.*}}, %{{.*}} : i32
// CHECK: llvm.sub %[[LT1]], %{{.*}} : i32
// CHECK: %[[GE1:.*]] = llvm.shl %{{.*}}, %{{.*}} : i32
// CHECK: %[[GE2:.*]] = llvm.sub %[[GE1]], %{{.*}} : i32
// CHECK: %[[M1:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK: llvm.xor %[[GE2]], %[[M1]] : i32
// CHECK: llvm.mlir.constant(32 : i32) : i32
// CHECK: llvm.mlir.constant(1 : i32) : i32
// CHECK: %[[GS:.*]] = llvm.getelementptr %{{.*}}[28] : (!llvm.ptr<4>) -> !llvm.ptr<4>, i8
// CHECK: %[[TOTAL:.*]] = llvm.load %[[GS]] invariant {alignment = 4 : i64} : !llvm.ptr<4> -> i32
// CHECK: %[[GS2:.*]] = llvm.getelementptr %{{.*}}[28] : (!llvm.ptr<4>) -> !llvm.ptr<4>, i8
// CHECK: %[[TOTAL2:.*]] = llvm.load %[[GS2]] invariant {alignment = 4 : i64} : !llvm.ptr<4> -> i32
// CHECK: %[[STATIC:.*]] = llvm.call_intrinsic "llvm.amdgcn.groupstaticsize"() : () -> i32
// CHECK: llvm.sub %[[TOTAL2]], %[[STATIC]] : i32
// CHECK: llvm.store %[[TOTAL]]
// CHECK-NOT: rocdl.workgroup.dim
// CHECK-NOT: rocdl.grid.dim
wooly.func @k(%p: i64 {wooly.type = "u64"}) attributes {kernel} {
  %0 = wooly.sreg tid x : i32
  %1 = wooly.sreg ntid y : i32
  %2 = wooly.sreg ctaid z : i32
  %3 = wooly.sreg nctaid x : i32
  %4 = wooly.sreg laneid : i32
  %5 = wooly.sreg warpid : i32
  %9 = wooly.sreg clock : i32
  %10 = wooly.sreg clock64 : i64
  %11 = wooly.sreg globaltimer : i64
  %12 = wooly.sreg lanemask_lt : i32
  %13 = wooly.sreg lanemask_ge : i32
  %14 = wooly.sreg warpsize : i32
  %15 = wooly.sreg cluster_nctarank : i32
  %16 = wooly.sreg total_smem_size : i32
  %17 = wooly.sreg dynamic_smem_size : i32
  wooly.st global %p, %0 : i64, i32
  wooly.st global %p, %1 : i64, i32
  wooly.st global %p, %2 : i64, i32
  wooly.st global %p, %3 : i64, i32
  wooly.st global %p, %4 : i64, i32
  wooly.st global %p, %5 : i64, i32
  wooly.st global %p, %9 : i64, i32
  wooly.st global %p, %10 : i64, i64
  wooly.st global %p, %11 : i64, i64
  wooly.st global %p, %12 : i64, i32
  wooly.st global %p, %13 : i64, i32
  wooly.st global %p, %14 : i64, i32
  wooly.st global %p, %15 : i64, i32
  wooly.st global %p, %16 : i64, i32
  wooly.st global %p, %17 : i64, i32
  wooly.ret
}
