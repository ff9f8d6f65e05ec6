// RUN: wooly-opt %s --wooly-print-kernel-analysis --split-input-file --verify-diagnostics -o /dev/null

// A copy kernel: the source is only read (its buffer can be deduplicated),
// the destination is written; the index parameter is not a pointer.
// expected-remark @+1 {{kernel 'copy': read-only pointers [0], written [1,2], escaping [], static shared 0 bytes}}
wooly.func @copy(%src: i64 {wooly.type = "u64"}, %dst: i64 {wooly.type = "u64"}, %i: i32 {wooly.type = "u32"}) attributes {kernel} {
  %c4 = arith.constant 4 : i64
  %ie = arith.extui %i : i32 to i64
  %off = arith.muli %ie, %c4 : i64
  %s = arith.addi %src, %off : i64
  %d = arith.addi %dst, %off : i64
  %v = wooly.ld global %s : i64 -> f32
  wooly.st global %d, %v : i64, f32
  wooly.ret
}

// -----

// A pointer stored to memory escapes: it is never reported read-only, even
// though this kernel itself only reads through it.
// expected-remark @+1 {{kernel 'leak': read-only pointers [], written [1], escaping [0]}}
wooly.func @leak(%p: i64 {wooly.type = "u64"}, %q: i64 {wooly.type = "u64"}) attributes {kernel} {
  %v = wooly.ld global %p : i64 -> i32
  wooly.st global %q, %p : i64, i64
  wooly.ret
}

// -----

// Passing a pointer to a device function makes it escape; atomics write.
wooly.func @helper(%x: i64) {
  wooly.ret
}
// expected-remark @+1 {{kernel 'calls': read-only pointers [], written [1], escaping [0]}}
wooly.func @calls(%p: i64 {wooly.type = "u64"}, %q: i64 {wooly.type = "u64"}) attributes {kernel} {
  wooly.call @helper(%p) : (i64) -> ()
  %one = arith.constant 1 : i32
  %old = wooly.atom global add %q, %one : i64, i32 -> i32
  wooly.ret
}

// -----

// Static shared memory counts only the variables the kernel names (with
// their alignment); barriers are reported, and each operation in a loop (the
// header and the body: 5 operations) costs 8, the others 1: 6 + 40 = 46.
wooly.global shared @used : f32[10] align 4
wooly.global shared @other : f32[1000] align 4
wooly.global shared @also : i64[2] align 16
// expected-remark @+1 {{kernel 'loop': read-only pointers [], written [], escaping [], static shared 64 bytes, ~5 registers, barriers yes, warp ops no, cost 46}}
wooly.func @loop(%n: i32 {wooly.type = "u32"}) attributes {kernel} {
  %a = wooly.addressof @used : i32
  %b = wooly.addressof @also : i32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  cf.br ^head(%c0 : i32)
^head(%i: i32):
  %done = arith.cmpi uge, %i, %n : i32
  cf.cond_br %done, ^exit, ^body
^body:
  wooly.barrier %c0
  %next = arith.addi %i, %c1 : i32
  cf.br ^head(%next : i32)
^exit:
  wooly.ret
}

// -----

// A loop with two back edges to its header (a `continue`) is one loop, not
// two nested ones: its 7 operations (header 2, body 3, second latch 2) cost
// 8 each, the entry's 3 and the exit's 1 cost 1: 56 + 4 = 60.
// expected-remark @+1 {{barriers yes, warp ops no, cost 60}}
wooly.func @two_latches(%n: i32 {wooly.type = "u32"}, %m: i32 {wooly.type = "u32"}) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  cf.br ^head(%c0 : i32)
^head(%i: i32):
  %done = arith.cmpi uge, %i, %n : i32
  cf.cond_br %done, ^exit, ^body
^body:
  %next = arith.addi %i, %c1 : i32
  %skip = arith.cmpi ult, %i, %m : i32
  cf.cond_br %skip, ^head(%next : i32), ^more
^more:
  wooly.barrier %c0
  cf.br ^head(%next : i32)
^exit:
  wooly.ret
}

// -----

// Nested loops: the inner loop's 5 operations are at depth 2 (64 each), the
// outer loop's other 4 at depth 1 (8 each), the entry's 3 and the exit's 1
// at depth 0: 320 + 32 + 4 = 356.
// expected-remark @+1 {{barriers yes, warp ops no, cost 356}}
wooly.func @nested(%n: i32 {wooly.type = "u32"}) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  cf.br ^outer(%c0 : i32)
^outer(%i: i32):
  %odone = arith.cmpi uge, %i, %n : i32
  cf.cond_br %odone, ^exit, ^inner(%c0 : i32)
^inner(%j: i32):
  %idone = arith.cmpi uge, %j, %n : i32
  cf.cond_br %idone, ^latch, ^ibody
^ibody:
  wooly.barrier %c0
  %j1 = arith.addi %j, %c1 : i32
  cf.br ^inner(%j1 : i32)
^latch:
  %i1 = arith.addi %i, %c1 : i32
  cf.br ^outer(%i1 : i32)
^exit:
  wooly.ret
}
