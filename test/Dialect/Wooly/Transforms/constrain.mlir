// RUN: wooly-opt %s --wooly-constrain --split-input-file | FileCheck %s

// 1-D: the virtual grid is appended with its roles, the physical block walks
// v = %ctaid.x, v + %nctaid.x, ... below vx*vy*vz, and %ctaid.x reads v % vx.
// CHECK-LABEL: wooly.func @one_d
// CHECK-SAME: %[[OUT:[^:]*]]: i64 {wooly.type = "u64"}
// CHECK-SAME: %[[VX:[^:]*]]: i32 {wooly.launch_param = "virtual_grid_x", wooly.name = "one_d_virtual_grid_x", wooly.type = "u32"}
// CHECK-SAME: %[[VY:[^:]*]]: i32 {wooly.launch_param = "virtual_grid_y", wooly.name = "one_d_virtual_grid_y", wooly.type = "u32"}
// CHECK-SAME: %[[VZ:[^:]*]]: i32 {wooly.launch_param = "virtual_grid_z", wooly.name = "one_d_virtual_grid_z", wooly.type = "u32"}
// CHECK: %[[X:.*]] = arith.extui %[[VX]] : i32 to i64
// CHECK: %[[Y:.*]] = arith.extui %[[VY]] : i32 to i64
// CHECK: %[[Z:.*]] = arith.extui %[[VZ]] : i32 to i64
// CHECK: %[[XY:.*]] = arith.muli %[[X]], %[[Y]] : i64
// CHECK: %[[TOTAL:.*]] = arith.muli %[[XY]], %[[Z]] : i64
// CHECK: %[[PID:.*]] = sreg ctaid x : i32
// CHECK: %[[PN:.*]] = sreg nctaid x : i32
// CHECK: %[[FIRST:.*]] = arith.extui %[[PID]] : i32 to i64
// CHECK: %[[STEP:.*]] = arith.extui %[[PN]] : i32 to i64
// CHECK: cf.br ^[[HEADER:.*]](%[[FIRST]] : i64)
// CHECK: ^[[HEADER]](%[[V:.*]]: i64):
// CHECK: %[[MORE:.*]] = arith.cmpi ult, %[[V]], %[[TOTAL]] : i64
// CHECK: cf.cond_br %[[MORE]], ^[[BODY:.*]](%[[V]] : i64), ^[[DONE:.*]]
// CHECK: ^[[BODY]](%[[VB:.*]]: i64):
// CHECK: %[[CX:.*]] = arith.remui %[[VB]], %[[X]] : i64
// CHECK: %[[CX32:.*]] = arith.trunci %[[CX]] : i64 to i32
// CHECK: st global %[[OUT]], %[[CX32]] : i64, i32
// CHECK-NOT: barrier
// CHECK: %[[NEXT:.*]] = arith.addi %[[V]], %[[STEP]] : i64
// CHECK: cf.br ^[[HEADER]](%[[NEXT]] : i64)
// CHECK: ^[[DONE]]:
// CHECK-NEXT: ret
wooly.func @one_d(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %b = wooly.sreg ctaid x : i32
  wooly.st global %out, %b : i64, i32
  wooly.ret
}

// -----

// 3-D: %ctaid.{x,y,z} read (v % vx, v / vx % vy, v / vx / vy).
// CHECK-LABEL: wooly.func @three_d
// CHECK: %[[X:.*]] = arith.extui %{{.*}} : i32 to i64
// CHECK: %[[Y:.*]] = arith.extui %{{.*}} : i32 to i64
// CHECK: cf.cond_br %{{.*}}, ^[[BODY:.*]](%{{.*}} : i64)
// CHECK: ^[[BODY]](%[[V:.*]]: i64):
// CHECK: %[[CX:.*]] = arith.remui %[[V]], %[[X]] : i64
// CHECK: %[[REST:.*]] = arith.divui %[[V]], %[[X]] : i64
// CHECK: %[[CY:.*]] = arith.remui %[[REST]], %[[Y]] : i64
// CHECK: %[[CZ:.*]] = arith.divui %[[REST]], %[[Y]] : i64
// CHECK: %[[BX:.*]] = arith.trunci %[[CX]] : i64 to i32
// CHECK: %[[BY:.*]] = arith.trunci %[[CY]] : i64 to i32
// CHECK: %[[BZ:.*]] = arith.trunci %[[CZ]] : i64 to i32
// CHECK: st global %{{.*}}, %[[BX]], %[[BY]], %[[BZ]], %[[BX]] : i64, i32, i32, i32, i32
wooly.func @three_d(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %x = wooly.sreg ctaid x : i32
  %y = wooly.sreg ctaid y : i32
  %z = wooly.sreg ctaid z : i32
  wooly.st global %out, %x, %y, %z, %x : i64, i32, i32, i32, i32
  wooly.ret
}

// -----

// %nctaid and %nclusterid read the virtual grid; %clusterid the virtual id.
// CHECK-LABEL: wooly.func @grid_size
// CHECK-SAME: %[[VX:[^:]*]]: i32 {wooly.launch_param = "virtual_grid_x"
// CHECK-SAME: %[[VY:[^:]*]]: i32 {wooly.launch_param = "virtual_grid_y"
// CHECK-SAME: %[[VZ:[^:]*]]: i32 {wooly.launch_param = "virtual_grid_z"
// CHECK: cf.cond_br %{{.*}}, ^[[BODY:.*]](%{{.*}} : i64)
// CHECK: ^[[BODY]](%[[V:.*]]: i64):
// CHECK: %[[CX:.*]] = arith.remui %[[V]]
// CHECK: %[[CX32:.*]] = arith.trunci %[[CX]] : i64 to i32
// CHECK: st global %{{.*}}, %[[VX]], %[[VY]], %[[VZ]], %[[VY]] : i64, i32, i32, i32, i32
// CHECK: st global %{{.*}}, %[[CX32]] : i64, i32
wooly.func @grid_size(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %x = wooly.sreg nctaid x : i32
  %y = wooly.sreg nctaid y : i32
  %z = wooly.sreg nctaid z : i32
  %cy = wooly.sreg nclusterid y : i32
  %c = wooly.sreg clusterid x : i32
  wooly.st global %out, %x, %y, %z, %cy : i64, i32, i32, i32, i32
  wooly.st global %out, %c : i64, i32
  wooly.ret
}

// -----

// ret and exit in the body continue with the next virtual block (the latch);
// the only ret left ends the physical block.
// CHECK-LABEL: wooly.func @ret_exit
// CHECK: cf.br ^[[HEADER:.*]](%{{.*}} : i64)
// CHECK: ^[[HEADER]](%[[V:.*]]: i64):
// CHECK: cf.cond_br %{{.*}}, ^[[BODY:.*]](%[[V]] : i64), ^[[DONE:.*]]
// CHECK: ^[[BODY]](%{{.*}}: i64):
// CHECK: cf.cond_br %{{.*}}, ^[[A:.*]], ^[[B:.*]]
// CHECK: ^[[A]]:
// CHECK-NEXT: cf.br ^[[LATCH:.*]]
// CHECK: ^[[B]]:
// CHECK-NEXT: cf.br ^[[LATCH]]
// CHECK: ^[[LATCH]]:
// CHECK: cf.br ^[[HEADER]]
// CHECK: ^[[DONE]]:
// CHECK-NEXT: ret
// CHECK-NOT: exit
// CHECK-NOT: ret
wooly.func @ret_exit(%p: i1 {wooly.type = "pred"}) attributes {kernel} {
  cf.cond_br %p, ^a, ^b
^a:
  wooly.ret
^b:
  wooly.exit
}

// -----

// A kernel with a barrier gets an iteration barrier in the latch (threads
// that finish their virtual block early count as exited for the others).
// CHECK-LABEL: wooly.func @with_barrier
// CHECK: barrier %{{.*}}, %{{.*}}
// CHECK-NEXT: cf.br ^[[LATCH:bb[0-9]+]]{{$}}
// CHECK: ^[[LATCH]]:
// CHECK-NEXT: iteration_barrier
// CHECK-NEXT: arith.addi
// CHECK-NEXT: cf.br
wooly.func @with_barrier() attributes {kernel} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  wooly.barrier %c0, %c64
  wooly.ret
}

// -----

// Shared memory in the module: the latch barrier is there, with no barrier
// in the kernel itself.
// CHECK-LABEL: wooly.func @with_shared
// CHECK: iteration_barrier
// CHECK-NEXT: arith.addi
wooly.global shared @tile : f32[64] align 4
wooly.func @with_shared(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %t = wooly.addressof @tile : i32
  %v = wooly.ld shared %t : i32 -> f32
  wooly.st global %out, %v : i64, f32
  wooly.ret
}

// -----

// A warp collective: the latch barrier is there.
// CHECK-LABEL: wooly.func @with_vote
// CHECK: vote ballot
// CHECK: iteration_barrier
// CHECK-NEXT: arith.addi
wooly.func @with_vote(%out: i64 {wooly.type = "u64"}, %p: i1 {wooly.type = "pred"}) attributes {kernel} {
  %m = arith.constant -1 : i32
  %b = wooly.vote ballot %p, %m : i32
  wooly.st global %out, %b : i64, i32
  wooly.ret
}

// -----

// Device functions that don't read block ids stay calls; device functions
// are not changed; no latch barrier without shared state.
// CHECK-LABEL: wooly.func @helper
// CHECK-NOT: launch_param
// CHECK: ret
// CHECK-LABEL: wooly.func @calls_helper
// CHECK: call @helper
// CHECK-NOT: barrier
wooly.func @helper(%x: i32) -> i32 {
  %t = wooly.sreg tid x : i32
  %r = arith.addi %x, %t : i32
  wooly.ret %r : i32
}
wooly.func @calls_helper(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %b = wooly.sreg ctaid x : i32
  %r = wooly.call @helper(%b) : (i32) -> i32
  wooly.st global %out, %r : i64, i32
  wooly.ret
}
