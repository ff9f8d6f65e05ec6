// RUN: wooly-opt %s --wooly-lower-iteration-barrier --split-input-file --verify-diagnostics

// A named barrier: the finished threads wait at barrier 0 only.
wooly.func @k() attributes {kernel} {
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{kernel 'k' cannot be lowered for a GPU (wooly-lower-iteration-barrier): a named, counted or arrive-only barrier}}
  wooly.barrier %c1 aligned
  wooly.iteration_barrier
  wooly.ret
}

// -----

// bar.red: a finished thread cannot take part in the reduction.
wooly.func @k(%p: i1) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  // expected-error @+1 {{kernel 'k' cannot be lowered for a GPU (wooly-lower-iteration-barrier): bar.red}}
  %n = wooly.bar_red popc %c0, %p aligned : i32
  wooly.iteration_barrier
  wooly.ret
}

// -----

// Lanes leave early (tid.x >= n varies within a warp) before a full-mask
// shuffle: an exited lane would be left out, a finished one is waited for.
wooly.func @k(%n: i32 {wooly.type = "u32"}, %out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %c1 = arith.constant 1 : i32
  %m = arith.constant -1 : i32
  %c31 = arith.constant 31 : i32
  %t = wooly.sreg tid x : i32
  %early = arith.cmpi uge, %t, %n : i32
  // expected-note @+1 {{the diverging branch}}
  cf.cond_br %early, ^end, ^work
^work:
  // expected-error @+1 {{kernel 'k' cannot be lowered for a GPU (wooly-lower-iteration-barrier): this warp collective depends on a branch that may diverge within a warp}}
  %v, %ok = wooly.shfl bfly %t, %c1, %c31, %m : i32
  wooly.st global %out, %v : i64, i32
  cf.br ^end
^end:
  wooly.iteration_barrier
  wooly.ret
}

// -----

// The same collective behind a block barrier that every lane passes before
// it can finish: accepted (no diagnostic).
wooly.func @k(%n: i32 {wooly.type = "u32"}, %out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %m = arith.constant -1 : i32
  %c31 = arith.constant 31 : i32
  %t = wooly.sreg tid x : i32
  %early = arith.cmpi uge, %t, %n : i32
  cf.cond_br %early, ^skip, ^work
^work:
  %v, %ok = wooly.shfl bfly %t, %c1, %c31, %m : i32
  wooly.st global %out, %v : i64, i32
  cf.br ^join
^skip:
  cf.br ^join
^join:
  wooly.barrier %c0 aligned
  wooly.iteration_barrier
  wooly.ret
}
