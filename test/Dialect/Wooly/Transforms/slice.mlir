// RUN: wooly-opt %s --wooly-slice --split-input-file | FileCheck %s

// The appended parameters and their roles; the shared slot through which
// thread (0,0,0) publishes the virtual block; the dispatch: a barrier, the
// leader reads the preemption flag (when its address is not 0) and takes an
// index from the counter only when the flag is clear, then a barrier and
// every thread reads the slot; STOP (-1) ends the physical block. The slot
// comes last in the module, so that the kernels' own shared variables keep
// their offsets.
// CHECK-LABEL: wooly.func @one_d
// CHECK-SAME: %[[OUT:[^:]*]]: i64 {wooly.type = "u64"}
// CHECK-SAME: %[[VX:[^:]*]]: i32 {wooly.launch_param = "virtual_grid_x", wooly.name = "one_d_virtual_grid_x", wooly.type = "u32"}
// CHECK-SAME: %[[VY:[^:]*]]: i32 {wooly.launch_param = "virtual_grid_y", {{[^}]*}}wooly.type = "u32"}
// CHECK-SAME: %[[VZ:[^:]*]]: i32 {wooly.launch_param = "virtual_grid_z", {{[^}]*}}wooly.type = "u32"}
// CHECK-SAME: %[[BEGIN:[^:]*]]: i32 {wooly.launch_param = "slice_begin", {{[^}]*}}wooly.type = "u32"}
// CHECK-SAME: %[[END:[^:]*]]: i32 {wooly.launch_param = "slice_end", {{[^}]*}}wooly.type = "u32"}
// CHECK-SAME: %[[COUNTER:[^:]*]]: i64 {wooly.launch_param = "slice_counter", {{[^}]*}}wooly.type = "u64"}
// CHECK-SAME: %[[FLAG:[^:]*]]: i64 {wooly.launch_param = "preempt_flag", {{[^}]*}}wooly.type = "u64"}
// CHECK: arith.muli
// CHECK-NEXT: %[[TOTAL:.*]] = arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: %[[TX:.*]] = sreg tid x : i32
// CHECK: %[[TY:.*]] = sreg tid y : i32
// CHECK: %[[TZ:.*]] = sreg tid z : i32
// CHECK: %[[LEADER:.*]] = arith.andi
// CHECK: %[[END64:.*]] = arith.extui %[[END]] : i32 to i64
// CHECK: %[[LIMIT:.*]] = arith.minui %[[END64]], %[[TOTAL]] : i64
// CHECK: %[[BEGIN64:.*]] = arith.extui %[[BEGIN]] : i32 to i64
// CHECK: %[[STOP:.*]] = arith.constant -1 : i32
// CHECK: cf.br ^[[HEADER:bb[0-9]+]]{{$}}
// CHECK: ^[[HEADER]]:
// CHECK: barrier
// CHECK-NEXT: cf.cond_br %[[LEADER]], ^[[TAKE:bb[0-9]+]], ^[[JOIN:bb[0-9]+]]{{$}}
// CHECK: ^[[TAKE]]:
// CHECK: %[[HASFLAG:.*]] = arith.cmpi ne, %[[FLAG]], %{{.*}} : i64
// CHECK: cf.cond_br %[[HASFLAG]], ^[[READ:bb[0-9]+]], ^[[GRAB:bb[0-9]+]]{{$}}
// CHECK: ^[[READ]]:
// CHECK: %[[F:.*]] = ld global volatile %[[FLAG]] {wooly.no_wait} : i64 -> i32
// CHECK: %[[PRE:.*]] = arith.cmpi ne, %[[F]], %{{.*}} : i32
// CHECK: cf.cond_br %[[PRE]], ^[[PUBLISH:bb[0-9]+]](%[[STOP]] : i32), ^[[GRAB]]{{$}}
// CHECK: ^[[GRAB]]:
// CHECK: %[[IDX:.*]] = atom global add %[[COUNTER]], %{{.*}} : i64, i32 -> i32
// CHECK: %[[IDX64:.*]] = arith.extui %[[IDX]] : i32 to i64
// CHECK: %[[V64:.*]] = arith.addi %[[BEGIN64]], %[[IDX64]] : i64
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[V64]], %[[LIMIT]] : i64
// CHECK: %[[V32:.*]] = arith.trunci %[[V64]] : i64 to i32
// CHECK: %[[SEL:.*]] = arith.select %[[OK]], %[[V32]], %[[STOP]] : i32
// CHECK: cf.br ^[[PUBLISH]](%[[SEL]] : i32)
// CHECK: ^[[PUBLISH]](%[[P:.*]]: i32):
// CHECK: %[[SLOT:.*]] = addressof @__wooly_slice_block : i32
// CHECK: st shared %[[SLOT]], %[[P]] : i32, i32
// CHECK: cf.br ^[[JOIN]]{{$}}
// CHECK: ^[[JOIN]]:
// CHECK: barrier
// CHECK: %[[SLOT2:.*]] = addressof @__wooly_slice_block : i32
// CHECK: %[[V:.*]] = ld shared %[[SLOT2]] {wooly.uniform} : i32 -> i32
// CHECK: %[[ISSTOP:.*]] = arith.cmpi eq, %[[V]], %[[STOP]] : i32
// CHECK: %[[VB:.*]] = arith.extui %[[V]] : i32 to i64
// CHECK: cf.cond_br %[[ISSTOP]], ^[[DONE:bb[0-9]+]], ^[[BODY:bb[0-9]+]](%[[VB]] : i64)
// CHECK: ^[[BODY]](%[[BV:.*]]: i64):
// CHECK: %[[CX:.*]] = arith.remui %[[BV]], %{{.*}} : i64
// CHECK: %[[CX32:.*]] = arith.trunci %[[CX]] : i64 to i32
// CHECK: st global %[[OUT]], %[[CX32]] : i64, i32
// CHECK-NEXT: cf.br ^[[LATCH:bb[0-9]+]]{{$}}
// CHECK: ^[[LATCH]]:
// CHECK-NEXT: cf.br ^[[HEADER]]{{$}}
// CHECK: ^[[DONE]]:
// CHECK-NEXT: ret
// CHECK: wooly.global shared @__wooly_slice_block : i32[1] align 4
wooly.func @one_d(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %b = wooly.sreg ctaid x : i32
  wooly.st global %out, %b : i64, i32
  wooly.ret
}

// -----

// 3-D ids and the grid size as in wooly-constrain; exit goes to the latch;
// a name taken by the user's module gets a fresh one.
// CHECK: wooly.global shared @__wooly_slice_block : i8[4] align 4
// CHECK-LABEL: wooly.func @three_d
// CHECK-SAME: %[[VX:[^:]*]]: i32 {wooly.launch_param = "virtual_grid_x"
// CHECK: addressof @[[SLOTNAME:__wooly_slice_block_[0-9]+]]
// CHECK: ^{{bb[0-9]+}}(%[[V:.*]]: i64):
// CHECK: %[[CX:.*]] = arith.remui %[[V]], %[[X:.*]] : i64
// CHECK: %[[REST:.*]] = arith.divui %[[V]], %[[X]] : i64
// CHECK: %[[CY:.*]] = arith.remui %[[REST]], %[[Y:.*]] : i64
// CHECK: %[[CZ:.*]] = arith.divui %[[REST]], %[[Y]] : i64
// CHECK: %[[BY:.*]] = arith.trunci %[[CY]] : i64 to i32
// CHECK: %[[BZ:.*]] = arith.trunci %[[CZ]] : i64 to i32
// CHECK: st global %{{.*}}, %[[BY]], %[[BZ]], %[[VX]], %[[BY]] : i64, i32, i32, i32, i32
// CHECK-NEXT: cf.br ^[[LATCH:bb[0-9]+]]{{$}}
// CHECK-NOT: exit
// CHECK: wooly.global shared @[[SLOTNAME]] : i32[1] align 4
wooly.global shared @__wooly_slice_block : i8[4] align 4
wooly.func @three_d(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %y = wooly.sreg ctaid y : i32
  %z = wooly.sreg ctaid z : i32
  %n = wooly.sreg nctaid x : i32
  wooly.st global %out, %y, %z, %n, %y : i64, i32, i32, i32, i32
  wooly.exit
}
