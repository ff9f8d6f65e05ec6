// RUN: wooly-opt %s --convert-wooly-to-nvvm | FileCheck %s

// Special registers read the nvvm.read.ptx.sreg.* ops, widened or narrowed
// to the requested type.
// CHECK-LABEL: llvm.func @k(
// CHECK: nvvm.read.ptx.sreg.tid.x : i32
// CHECK: nvvm.read.ptx.sreg.ntid.y : i32
// CHECK: nvvm.read.ptx.sreg.ctaid.z : i32
// CHECK: nvvm.read.ptx.sreg.nctaid.x : i32
// CHECK: nvvm.read.ptx.sreg.laneid : i32
// CHECK: nvvm.read.ptx.sreg.warpid : i32
// CHECK: nvvm.read.ptx.sreg.nwarpid : i32
// CHECK: nvvm.read.ptx.sreg.smid : i32
// CHECK: nvvm.read.ptx.sreg.nsmid : i32
// CHECK: nvvm.read.ptx.sreg.clock : i32
// CHECK: nvvm.read.ptx.sreg.clock64 : i64
// CHECK: nvvm.read.ptx.sreg.globaltimer : i64
// CHECK: nvvm.read.ptx.sreg.lanemask.lt : i32
// CHECK: nvvm.read.ptx.sreg.dynamic.smem.size : i32
// CHECK: nvvm.read.ptx.sreg.total.smem.size : i32
// CHECK: nvvm.read.ptx.sreg.gridid : i64
wooly.func @k(%p: i64 {wooly.type = "u64"}) attributes {kernel} {
  %0 = wooly.sreg tid x : i32
  %1 = wooly.sreg ntid y : i32
  %2 = wooly.sreg ctaid z : i32
  %3 = wooly.sreg nctaid x : i32
  %4 = wooly.sreg laneid : i32
  %5 = wooly.sreg warpid : i32
  %6 = wooly.sreg nwarpid : i32
  %7 = wooly.sreg smid : i32
  %8 = wooly.sreg nsmid : i32
  %9 = wooly.sreg clock : i32
  %10 = wooly.sreg clock64 : i64
  %11 = wooly.sreg globaltimer : i64
  %12 = wooly.sreg lanemask_lt : i32
  %13 = wooly.sreg dynamic_smem_size : i32
  %14 = wooly.sreg total_smem_size : i32
  %15 = wooly.sreg gridid : i64
  wooly.st global %p, %0 : i64, i32
  wooly.st global %p, %1 : i64, i32
  wooly.st global %p, %2 : i64, i32
  wooly.st global %p, %3 : i64, i32
  wooly.st global %p, %4 : i64, i32
  wooly.st global %p, %5 : i64, i32
  wooly.st global %p, %6 : i64, i32
  wooly.st global %p, %7 : i64, i32
  wooly.st global %p, %8 : i64, i32
  wooly.st global %p, %9 : i64, i32
  wooly.st global %p, %10 : i64, i64
  wooly.st global %p, %11 : i64, i64
  wooly.st global %p, %12 : i64, i32
  wooly.st global %p, %13 : i64, i32
  wooly.st global %p, %14 : i64, i32
  wooly.st global %p, %15 : i64, i64
  wooly.ret
}
