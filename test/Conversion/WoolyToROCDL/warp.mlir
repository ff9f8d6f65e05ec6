// RUN: wooly-opt %s --convert-wooly-to-rocdl --split-input-file | FileCheck %s

// shfl.sync: the source lane follows PTX's rules (c = clamp | segment mask
// << 8; up compares signed j >= maxLane, the others j <= maxLane; an
// invalid source reads the thread's own lane) within the thread's 32-lane
// half of the wave, and is read with ds_bpermute at (half | lane) * 4.
// CHECK-LABEL: llvm.func @shfl(
// CHECK: %[[LO:.*]] = rocdl.mbcnt.lo
// CHECK: %[[WL:.*]] = rocdl.mbcnt.hi %{{.*}}, %[[LO]]
// CHECK: %[[LANE:.*]] = llvm.and %[[WL]], %{{.*}} : i32
// CHECK: %[[B:.*]] = llvm.and %{{.*}}, %{{.*}} : i32
// CHECK: %[[CVAL:.*]] = llvm.and %[[C:.*]], %{{.*}} : i32
// CHECK: %[[C8:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK: %[[SH:.*]] = llvm.lshr %[[C]], %[[C8]] : i32
// CHECK: %[[SEG:.*]] = llvm.and %[[SH]], %{{.*}} : i32
// CHECK: %[[NSEG:.*]] = llvm.xor %[[SEG]], %{{.*}} : i32
// CHECK: %[[MIN:.*]] = llvm.and %[[LANE]], %[[SEG]] : i32
// CHECK: %[[CV:.*]] = llvm.and %[[CVAL]], %[[NSEG]] : i32
// CHECK: %[[MAX:.*]] = llvm.or %[[MIN]], %[[CV]] : i32
// CHECK: %[[J:.*]] = llvm.sub %[[LANE]], %[[B]] : i32
// CHECK: %[[OK:.*]] = llvm.icmp "sge" %[[J]], %[[MAX]] : i32
// CHECK: %[[SRC:.*]] = llvm.select %[[OK]], %[[J]], %[[LANE]] : i1, i32
// CHECK: %[[WL2:.*]] = rocdl.mbcnt.hi
// CHECK: %[[C32:.*]] = llvm.mlir.constant(32 : i32) : i32
// CHECK: %[[HALF:.*]] = llvm.and %[[WL2]], %[[C32]] : i32
// CHECK: %[[WSRC:.*]] = llvm.or %[[HALF]], %[[SRC]] : i32
// CHECK: %[[C2:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: %[[ADDR:.*]] = llvm.shl %[[WSRC]], %[[C2]] : i32
// CHECK: rocdl.ds_bpermute %[[ADDR]], %{{.*}} : (i32, i32) -> i32
// CHECK: %[[J1:.*]] = llvm.add %{{.*}}, %{{.*}} : i32
// CHECK: llvm.icmp "sle" %[[J1]], %{{.*}} : i32
// CHECK: rocdl.ds_bpermute
// CHECK: llvm.xor
// CHECK: llvm.icmp "sle"
// CHECK: rocdl.ds_bpermute
// CHECK: %[[IMAX:.*]] = llvm.or %[[IMIN:.*]], %{{.*}} : i32
// CHECK: %[[IB:.*]] = llvm.and %{{.*}}, %{{.*}} : i32
// CHECK: %[[J3:.*]] = llvm.or %[[IMIN]], %[[IB]] : i32
// CHECK: %[[OK3:.*]] = llvm.icmp "sle" %[[J3]], %[[IMAX]] : i32
// CHECK: rocdl.ds_bpermute
// CHECK: llvm.store %[[OK3]]
wooly.func @shfl(%p: i64 {wooly.type = "u64"}, %s: i32 {wooly.type = "u32"}, %v: i32 {wooly.type = "u32"}) attributes {kernel} {
  %m = arith.constant -1 : i32
  %cl = arith.constant 7199 : i32
  %r0, %p0 = wooly.shfl up %v, %s, %cl, %m : i32
  %r1, %p1 = wooly.shfl down %r0, %s, %cl, %m : i32
  %r2, %p2 = wooly.shfl bfly %r1, %s, %cl, %m : i32
  %r3, %p3 = wooly.shfl idx %r2, %s, %cl, %m : i32
  wooly.st global %p, %r3 : i64, i32
  wooly.st global %p, %p3 : i64, i1
  wooly.ret
}

// -----

// vote.sync takes the thread's half of the 64-bit ballot (shifted by 0 or
// 32), ANDed with the member mask: ballot is that, any is non-zero, all is
// "no member with a false predicate", uni is "none or all"; activemask is
// the half of ballot(true).
// CHECK-LABEL: llvm.func @vote(
// CHECK: %[[BAL:.*]] = rocdl.ballot %[[P:.*]] : i64
// CHECK: %[[HB:.*]] = llvm.and %{{.*}}, %{{.*}} : i32
// CHECK: %[[SHIFT:.*]] = llvm.zext %[[HB]] : i32 to i64
// CHECK: %[[S:.*]] = llvm.lshr %[[BAL]], %[[SHIFT]] : i64
// CHECK: %[[H:.*]] = llvm.trunc %[[S]] : i64 to i32
// CHECK: %[[BALLOT:.*]] = llvm.and %[[H]], %[[M:.*]] : i32
// CHECK: rocdl.ballot %[[P]] : i64
// CHECK: %[[ANYB:.*]] = llvm.and %{{.*}}, %[[M]] : i32
// CHECK: %[[NONE:.*]] = llvm.icmp "eq" %[[ANYB]], %{{.*}} : i32
// CHECK: %[[ANY:.*]] = llvm.xor %[[NONE]], %{{.*}} : i1
// CHECK: %[[NP:.*]] = llvm.xor %[[P]], %{{.*}} : i1
// CHECK: rocdl.ballot %[[NP]] : i64
// CHECK: %[[ALLB:.*]] = llvm.and %{{.*}}, %[[M]] : i32
// CHECK: %[[ALL:.*]] = llvm.icmp "eq" %[[ALLB]], %{{.*}} : i32
// CHECK: rocdl.ballot %[[P]] : i64
// CHECK: %[[U1:.*]] = llvm.icmp "eq"
// CHECK: rocdl.ballot
// CHECK: %[[U2:.*]] = llvm.icmp "eq"
// CHECK: %[[UNI:.*]] = llvm.or %[[U1]], %[[U2]] : i1
// CHECK: %[[TRUE:.*]] = llvm.mlir.constant(true) : i1
// CHECK: rocdl.ballot %[[TRUE]] : i64
// CHECK: %[[AM:.*]] = llvm.trunc %{{.*}} : i64 to i32
// CHECK: llvm.store %[[BALLOT]]
// CHECK: llvm.store %[[ANY]]
// CHECK: llvm.store %[[ALL]]
// CHECK: llvm.store %[[UNI]]
// CHECK: llvm.store %[[AM]]
wooly.func @vote(%p: i64 {wooly.type = "u64"}, %m: i32 {wooly.type = "u32"}, %c: i1) attributes {kernel} {
  %bal = wooly.vote ballot %c, %m : i32
  %any = wooly.vote any %c, %m : i1
  %all = wooly.vote all %c, %m : i1
  %uni = wooly.vote uni %c, %m : i1
  %am = wooly.activemask : i32
  wooly.st global %p, %bal : i64, i32
  wooly.st global %p, %any : i64, i1
  wooly.st global %p, %all : i64, i1
  wooly.st global %p, %uni : i64, i1
  wooly.st global %p, %am : i64, i32
  wooly.ret
}

// -----

// redux.sync folds the values of the members (active threads of the half
// in the mask) lane by lane: readlane of lane k of both halves, the
// thread's half selected, folded when bit k of the members is set, from
// the operation's identity (INT_MAX for smin).
// CHECK-LABEL: llvm.func @redux(
// CHECK: ^bb1(%{{.*}}: i64, %[[V:.*]]: i32, %[[M:.*]]: i32)
// CHECK: %[[TRUE:.*]] = llvm.mlir.constant(true) : i1
// CHECK: rocdl.ballot %[[TRUE]] : i64
// CHECK: %[[MEMBERS:.*]] = llvm.and %{{.*}}, %[[M]] : i32
// CHECK: %[[UPPER:.*]] = llvm.icmp "ne"
// CHECK: %[[ID:.*]] = llvm.mlir.constant(2147483647 : i32) : i32
// CHECK: %[[L0:.*]] = rocdl.readlane %[[V]], %{{.*}} : (i32, i32) -> i32
// CHECK: %[[C32:.*]] = llvm.mlir.constant(32 : i32) : i32
// CHECK: %[[H0:.*]] = rocdl.readlane %[[V]], %[[C32]] : (i32, i32) -> i32
// CHECK: %[[X0:.*]] = llvm.select %[[UPPER]], %[[H0]], %[[L0]] : i1, i32
// CHECK: %[[LT:.*]] = llvm.icmp "slt" %[[ID]], %[[X0]] : i32
// CHECK: %[[MIN:.*]] = llvm.select %[[LT]], %[[ID]], %[[X0]] : i1, i32
// CHECK: %[[BIT:.*]] = llvm.and %[[MEMBERS]], %{{.*}} : i32
// CHECK: %[[IN:.*]] = llvm.icmp "ne" %[[BIT]], %{{.*}} : i32
// CHECK: llvm.select %[[IN]], %[[MIN]], %[[ID]] : i1, i32
// CHECK-COUNT-62: rocdl.readlane %[[V]]
// CHECK-NOT: rocdl.readlane
// CHECK: llvm.return
wooly.func @redux(%p: i64 {wooly.type = "u64"}, %v: i32 {wooly.type = "u32"}, %m: i32 {wooly.type = "u32"}) attributes {kernel} {
  %x = wooly.redux smin %v, %m : i32
  wooly.st global %p, %x : i64, i32
  wooly.ret
}

// -----

// match.all.sync (64-bit values): the mask of members holding the thread's
// value; the member mask when that is every member (with the predicate),
// else 0.
// CHECK-LABEL: llvm.func @match(
// CHECK: ^bb1(%{{.*}}: i64, %[[W:.*]]: i64, %[[M:.*]]: i32)
// CHECK: %[[MEMBERS:.*]] = llvm.and %{{.*}}, %[[M]] : i32
// CHECK: rocdl.readlane %[[W]], %{{.*}} : (i64, i32) -> i64
// CHECK: %[[X:.*]] = llvm.select %{{.*}} : i1, i64
// CHECK: llvm.icmp "eq" %[[X]], %[[W]] : i64
// CHECK-COUNT-62: rocdl.readlane %[[W]]
// CHECK-NOT: rocdl.readlane
// CHECK: %[[SAME:.*]] = llvm.and %{{.*}}, %[[MEMBERS]] : i32
// CHECK: %[[ALL:.*]] = llvm.icmp "eq" %[[SAME]], %[[MEMBERS]] : i32
// CHECK: %[[R:.*]] = llvm.select %[[ALL]], %[[M]], %{{.*}} : i1, i32
// CHECK: llvm.store %[[R]]
// CHECK: llvm.store %[[ALL]]
wooly.func @match(%p: i64 {wooly.type = "u64"}, %w: i64 {wooly.type = "u64"}, %m: i32 {wooly.type = "u32"}) attributes {kernel} {
  %mb, %mq = wooly.match all %w, %m : i64
  wooly.st global %p, %mb : i64, i32
  wooly.st global %p, %mq : i64, i1
  wooly.ret
}
