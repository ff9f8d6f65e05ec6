// RUN: wooly-opt %s --split-input-file --verify-roundtrip | FileCheck %s

// Module-scope variables: sized, unsized extern (dynamic shared), initialized.

// CHECK: wooly.global shared @tile : f32[256] align 4
// CHECK: wooly.global shared extern @dyn : i8[0] align 16
// CHECK: wooly.global global @tab : i32[4] align 4 init dense<[1, 2, 3, 4]> : tensor<4xi32>
// CHECK: wooly.global const visible @one : f32[1] align 4 init dense<1.500000e+00> : tensor<1xf32>
wooly.global shared @tile : f32[256] align 4
wooly.global shared extern @dyn : i8[0] align 16
wooly.global global @tab : i32[4] align 4 init dense<[1, 2, 3, 4]> : tensor<4xi32>
wooly.global const visible @one : f32[1] align 4 init dense<1.5> : tensor<1xf32>

// CHECK-LABEL: wooly.func @addr
// CHECK: %[[A:.*]] = addressof @tile : i32
// CHECK: %[[G:.*]] = addressof @tab : i64
// CHECK: ret %[[A]], %[[G]] : i32, i64
wooly.func @addr() -> (i32, i64) {
  %a = wooly.addressof @tile : i32
  %g = wooly.addressof @tab : i64
  wooly.ret %a, %g : i32, i64
}

// -----

// Functions: kernel with launch bounds, device function, declaration; direct
// and indirect calls; the thread terminators and brkpt.

// CHECK-LABEL: wooly.func @callee(
// CHECK-SAME: %[[A:.*]]: i32, %{{.*}}: f32) -> i32
// CHECK: ret %[[A]] : i32
wooly.func @callee(%a: i32, %b: f32) -> i32 {
  wooly.ret %a : i32
}

// CHECK: wooly.func private @decl(i64) -> f32
wooly.func private @decl(i64) -> f32

// CHECK-LABEL: wooly.func @k(
// CHECK-SAME: %{{.*}}: i64 {wooly.align = 8 : i64, wooly.type = "u64"})
// CHECK-SAME: attributes {kernel, linkage = "visible", maxnreg = 64 : i32, maxntid = array<i32: 128, 1, 1>, minnctapersm = 2 : i32, reqntid = array<i32: 128>}
// CHECK: %[[T:.*]] = sreg tid x : i32
// CHECK: %[[F:.*]] = arith.constant
// CHECK: %{{.*}} = call uni @callee(%[[T]], %[[F]]) : (i32, f32) -> i32
// CHECK: %{{.*}} = call @callee(%[[T]], %[[F]]) : (i32, f32) -> i32
// CHECK: %[[FP:.*]] = addressof @decl : i64
// CHECK: %{{.*}} = call_indirect %[[FP]](%[[FP]]) : i64, (i64) -> f32
// CHECK: brkpt
// CHECK: exit
wooly.func @k(%p: i64 {wooly.type = "u64", wooly.align = 8 : i64}) attributes {kernel, linkage = "visible", maxntid = array<i32: 128, 1, 1>, reqntid = array<i32: 128>, minnctapersm = 2 : i32, maxnreg = 64 : i32} {
  %t = wooly.sreg tid x : i32
  %f = arith.constant 1.0 : f32
  %r = wooly.call uni @callee(%t, %f) : (i32, f32) -> i32
  %r1 = wooly.call @callee(%t, %f) : (i32, f32) -> i32
  %fp = wooly.addressof @decl : i64
  %r2 = wooly.call_indirect %fp(%fp) : i64, (i64) -> f32
  wooly.brkpt
  wooly.exit
}

// CHECK-LABEL: wooly.func @aborts
// CHECK: trap
wooly.func @aborts() attributes {noreturn} {
  wooly.trap
}

// -----

// Special registers: dimensioned, 32-bit and 64-bit.

// CHECK-LABEL: wooly.func @sregs
// CHECK: sreg ctaid y : i32
// CHECK: sreg laneid : i32
// CHECK: sreg clock64 : i64
// CHECK: sreg globaltimer : i64
// CHECK: sreg lanemask_lt : i32
wooly.func @sregs() -> (i32, i32, i64, i64, i32) {
  %0 = wooly.sreg ctaid y : i32
  %1 = wooly.sreg laneid : i32
  %2 = wooly.sreg clock64 : i64
  %3 = wooly.sreg globaltimer : i64
  %4 = wooly.sreg lanemask_lt : i32
  wooly.ret %0, %1, %2, %3, %4 : i32, i32, i64, i64, i32
}

// -----

// Bit moves: pack/unpack (vector mov), bitcast, byte-array parameters.

// CHECK-LABEL: wooly.func @bits(
// CHECK-SAME: %[[LO:[^:]*]]: i32, %[[HI:[^:]*]]: i32, %[[P:[^:]*]]: vector<16xi8>
// CHECK: %[[D:.*]] = pack %[[LO]], %[[HI]] : i32, i32 -> i64
// CHECK: %{{.*}}:4 = unpack %[[D]] : i64 -> i16, i16, i16, i16
// CHECK: %{{.*}} = bitcast %[[LO]] : i32 -> vector<2xf16>
// CHECK: %[[X:.*]] = extract_bytes %[[P]][8] : vector<16xi8> -> f32
// CHECK: %{{.*}} = insert_bytes %[[X]], %[[P]][12] : f32 into vector<16xi8>
// CHECK: %{{.*}} = extract_bytes %[[P]][15] : vector<16xi8> -> i1
wooly.func @bits(%lo: i32, %hi: i32, %p: vector<16xi8>) -> (i64, i16, vector<2xf16>, f32, vector<16xi8>, i1) {
  %d = wooly.pack %lo, %hi : i32, i32 -> i64
  %q:4 = wooly.unpack %d : i64 -> i16, i16, i16, i16
  %h = wooly.bitcast %lo : i32 -> vector<2xf16>
  %x = wooly.extract_bytes %p[8] : vector<16xi8> -> f32
  %p2 = wooly.insert_bytes %x, %p[12] : f32 into vector<16xi8>
  %b = wooly.extract_bytes %p[15] : vector<16xi8> -> i1
  wooly.ret %d, %q#3, %h, %x, %p2, %b : i64, i16, vector<2xf16>, f32, vector<16xi8>, i1
}

// -----

// Loads and stores: cache operators, vectors, volatile, memory order + scope.

// CHECK-LABEL: wooly.func @memory(
// CHECK-SAME: %[[G:[^:]*]]: i64, %[[S:[^:]*]]: i32
// CHECK: %[[V:.*]] = ld global %[[G]] cache nc : i64 -> f32
// CHECK: %{{.*}}:4 = ld shared %[[S]] : i32 -> i32, i32, i32, i32
// CHECK: %{{.*}} = ld generic volatile %[[G]] : i64 -> i8
// CHECK: %{{.*}} = ld global acquire gpu %[[G]] : i64 -> i32
// CHECK: %{{.*}} = ld const %[[G]] cache ca : i64 -> i64
// CHECK: st global %[[G]], %[[V]] : i64, f32
// CHECK: st shared %[[S]], %[[V]], %[[V]] cache cs : i32, f32, f32
// CHECK: st global release sys %[[G]], %[[V]] : i64, f32
// CHECK: st local volatile %[[S]], %[[V]] : i32, f32
wooly.func @memory(%g: i64, %s: i32) {
  %v = wooly.ld global %g cache nc : i64 -> f32
  %w:4 = wooly.ld shared %s : i32 -> i32, i32, i32, i32
  %b = wooly.ld generic volatile %g : i64 -> i8
  %a = wooly.ld global acquire gpu %g : i64 -> i32
  %c = wooly.ld const %g cache ca : i64 -> i64
  wooly.st global %g, %v : i64, f32
  wooly.st shared %s, %v, %v cache cs : i32, f32, f32
  wooly.st global release sys %g, %v : i64, f32
  wooly.st local volatile %s, %v : i32, f32
  wooly.ret
}

// -----

// Atomics, reductions and fences.

// CHECK-LABEL: wooly.func @atomics(
// CHECK-SAME: %[[P:[^:]*]]: i64, %[[Q:[^:]*]]: i32, %[[V:[^:]*]]: i32, %[[F:[^:]*]]: f32
// CHECK: %{{.*}} = atom global add %[[P]], %[[V]] : i64, i32 -> i32
// CHECK: %{{.*}} = atom shared cas acq_rel cta %[[Q]], %[[V]], %[[V]] : i32, i32, i32 -> i32
// CHECK: %{{.*}} = atom generic fadd relaxed sys %[[P]], %[[F]] : i64, f32 -> f32
// CHECK: %{{.*}} = atom global inc %[[P]], %[[V]] : i64, i32 -> i32
// CHECK: red global fadd %[[P]], %[[F]] : i64, f32
// CHECK: red shared umax release gpu %[[Q]], %[[V]] : i32, i32
// CHECK: fence sc gpu
// CHECK: fence acq_rel cta
wooly.func @atomics(%p: i64, %q: i32, %v: i32, %f: f32) {
  %0 = wooly.atom global add %p, %v : i64, i32 -> i32
  %1 = wooly.atom shared cas acq_rel cta %q, %v, %v : i32, i32, i32 -> i32
  %2 = wooly.atom generic fadd relaxed sys %p, %f : i64, f32 -> f32
  %3 = wooly.atom global inc %p, %v : i64, i32 -> i32
  wooly.red global fadd %p, %f : i64, f32
  wooly.red shared umax release gpu %q, %v : i32, i32
  wooly.fence sc gpu
  wooly.fence acq_rel cta
  wooly.ret
}

// -----

// Barriers and warp-level operations.

// CHECK-LABEL: wooly.func @sync(
// CHECK-SAME: %[[ID:[^:]*]]: i32, %[[N:[^:]*]]: i32, %[[PR:[^:]*]]: i1, %[[M:[^:]*]]: i32
// CHECK: barrier %[[ID]] aligned
// CHECK: barrier %[[ID]], %[[N]] arrive
// CHECK: warp_sync %[[M]]
// CHECK: %{{.*}} = bar_red popc %[[ID]], %[[PR]] : i32
// CHECK: %{{.*}} = bar_red and %[[ID]], %[[PR]] count %[[N]] : i1
// CHECK: %{{.*}}, %{{.*}} = shfl bfly %[[N]], %[[ID]], %[[ID]], %[[M]] : i32
// CHECK: %{{.*}}, %{{.*}} = shfl idx %[[N]], %[[ID]], %[[ID]], %[[M]] : i32
// CHECK: %{{.*}} = vote ballot %[[PR]], %[[M]] : i32
// CHECK: %{{.*}} = vote uni %[[PR]], %[[M]] : i1
// CHECK: %{{.*}}, %{{.*}} = match all %[[N]], %[[M]] : i32
// CHECK: %{{.*}}, %{{.*}} = match any %{{.*}}, %[[M]] : i64
// CHECK: %{{.*}} = redux umin %[[N]], %[[M]] : i32
// CHECK: %{{.*}} = activemask : i32
wooly.func @sync(%id: i32, %n: i32, %p: i1, %m: i32, %w: i64) {
  wooly.barrier %id aligned
  wooly.barrier %id, %n arrive
  wooly.warp_sync %m
  %0 = wooly.bar_red popc %id, %p : i32
  %1 = wooly.bar_red and %id, %p count %n : i1
  %2, %3 = wooly.shfl bfly %n, %id, %id, %m : i32
  %4, %5 = wooly.shfl idx %n, %id, %id, %m : i32
  %6 = wooly.vote ballot %p, %m : i32
  %7 = wooly.vote uni %p, %m : i1
  %8, %9 = wooly.match all %n, %m : i32
  %10, %11 = wooly.match any %w, %m : i64
  %12 = wooly.redux umin %n, %m : i32
  %13 = wooly.activemask : i32
  wooly.ret
}

// -----

// Floating point with PTX modifiers.

// CHECK-LABEL: wooly.func @float(
// CHECK-SAME: %[[A:[^:]*]]: f32, %[[B:[^:]*]]: f32, %[[H:[^:]*]]: vector<2xf16>
// CHECK: %{{.*}} = fadd %[[A]], %[[B]] rz ftz : f32
// CHECK: %{{.*}} = fsub %[[A]], %[[B]] sat : f32
// CHECK: %{{.*}} = fmul %[[H]], %[[H]] rm : vector<2xf16>
// CHECK: %{{.*}} = fma %[[A]], %[[B]], %[[A]] rn ftz sat : f32
// CHECK: %{{.*}} = fma %[[H]], %[[H]], %[[H]] rn relu : vector<2xf16>
// CHECK: %{{.*}} = fdiv %[[A]], %[[B]] approx ftz : f32
// CHECK: %{{.*}} = fdiv %[[A]], %[[B]] full : f32
// CHECK: %{{.*}} = fdiv %[[A]], %[[B]] rz : f32
// CHECK: %{{.*}} = fsqrt %[[A]] approx ftz : f32
// CHECK: %{{.*}} = frcp %[[A]] rp : f32
// CHECK: %{{.*}} = fapprox sin %[[A]] ftz : f32
// CHECK: %{{.*}} = fapprox tanh %[[H]] : vector<2xf16>
// CHECK: %{{.*}} = fmin %[[A]], %[[B]] nan ftz : f32
// CHECK: %{{.*}} = fmax %[[A]], %[[B]] xorsign_abs : f32
// CHECK: %{{.*}} = flush %[[A]] : f32
wooly.func @float(%a: f32, %b: f32, %h: vector<2xf16>) {
  %0 = wooly.fadd %a, %b rz ftz : f32
  %1 = wooly.fsub %a, %b sat : f32
  %2 = wooly.fmul %h, %h rm : vector<2xf16>
  %3 = wooly.fma %a, %b, %a rn ftz sat : f32
  %4 = wooly.fma %h, %h, %h rn relu : vector<2xf16>
  %5 = wooly.fdiv %a, %b approx ftz : f32
  %6 = wooly.fdiv %a, %b full : f32
  %7 = wooly.fdiv %a, %b rz : f32
  %8 = wooly.fsqrt %a approx ftz : f32
  %9 = wooly.frcp %a rp : f32
  %10 = wooly.fapprox sin %a ftz : f32
  %11 = wooly.fapprox tanh %h : vector<2xf16>
  %12 = wooly.fmin %a, %b nan ftz : f32
  %13 = wooly.fmax %a, %b xorsign_abs : f32
  %14 = wooly.flush %a : f32
  wooly.ret
}

// -----

// Conversions: float to int with integer rounding and saturation, packed
// destinations, fp8 pairs, int narrowing with saturation.

// CHECK-LABEL: wooly.func @cvt(
// CHECK-SAME: %[[F:[^:]*]]: f32, %[[G:[^:]*]]: f32, %[[I:[^:]*]]: i32
// CHECK: %{{.*}} = cvt %[[F]] rzi sat : f32 to s32 : f32 -> i32
// CHECK: %{{.*}} = cvt %[[F]], %[[G]] rn : f32 to f16x2 : f32, f32 -> vector<2xf16>
// CHECK: %{{.*}} = cvt %[[F]], %[[G]] rn satfinite : f32 to e4m3x2 : f32, f32 -> i16
// CHECK: %{{.*}} = cvt %[[I]] sat : s32 to u8 : i32 -> i8
// CHECK: %{{.*}} = cvt %[[F]] rn ftz relu : f32 to bf16 : f32 -> bf16
wooly.func @cvt(%f: f32, %g: f32, %i: i32) {
  %0 = wooly.cvt %f rzi sat : f32 to s32 : f32 -> i32
  %1 = wooly.cvt %f, %g rn : f32 to f16x2 : f32, f32 -> vector<2xf16>
  %2 = wooly.cvt %f, %g rn satfinite : f32 to e4m3x2 : f32, f32 -> i16
  %3 = wooly.cvt %i sat : s32 to u8 : i32 -> i8
  %4 = wooly.cvt %f rn ftz relu : f32 to bf16 : f32 -> bf16
  wooly.ret
}

// -----

// Integer ops with PTX semantics.

// CHECK-LABEL: wooly.func @int(
// CHECK-SAME: %[[A:[^:]*]]: i32, %[[B:[^:]*]]: i32, %[[C:[^:]*]]: i32, %[[L:[^:]*]]: i64
// CHECK: %{{.*}} = div s %[[A]], %[[B]] : i32
// CHECK: %{{.*}} = rem u %[[L]], %[[L]] : i64
// CHECK: %{{.*}} = shr s %[[A]], %[[B]] : i32
// CHECK: %{{.*}} = shl %[[L]], %[[L]] : i64
// CHECK: %{{.*}} = bfe s %[[A]], %[[B]], %[[C]] : i32
// CHECK: %{{.*}} = bfe u %[[L]], %[[B]], %[[C]] : i64
// CHECK: %{{.*}} = bfi %[[A]], %[[B]], %[[C]], %[[C]] : i32
// CHECK: %{{.*}} = prmt generic %[[A]], %[[B]], %[[C]] : i32
// CHECK: %{{.*}} = prmt ecl %[[A]], %[[B]], %[[C]] : i32
// CHECK: %{{.*}} = lop3 %[[A]], %[[B]], %[[C]] lut 150 : i32
// CHECK: %{{.*}} = brev %[[L]] : i64
// CHECK: %{{.*}} = bfind u %[[L]] shiftamt : i64
// CHECK: %{{.*}} = bfind s %[[A]] : i32
// CHECK: %{{.*}} = bmsk clamp %[[A]], %[[B]] : i32
// CHECK: %{{.*}} = shf l wrap %[[A]], %[[B]], %[[C]] : i32
// CHECK: %{{.*}} = mul24 s hi %[[A]], %[[B]] : i32
// CHECK: %{{.*}} = sad u %[[A]], %[[B]], %[[C]] : i32
// CHECK: %{{.*}} = dp4a s u %[[A]], %[[B]], %[[C]] : i32
// CHECK: %{{.*}} = dp2a u s hi %[[A]], %[[B]], %[[C]] : i32
wooly.func @int(%a: i32, %b: i32, %c: i32, %l: i64) {
  %0 = wooly.div s %a, %b : i32
  %1 = wooly.rem u %l, %l : i64
  %2 = wooly.shr s %a, %b : i32
  %3 = wooly.shl %l, %l : i64
  %4 = wooly.bfe s %a, %b, %c : i32
  %5 = wooly.bfe u %l, %b, %c : i64
  %6 = wooly.bfi %a, %b, %c, %c : i32
  %7 = wooly.prmt generic %a, %b, %c : i32
  %8 = wooly.prmt ecl %a, %b, %c : i32
  %9 = wooly.lop3 %a, %b, %c lut 150 : i32
  %10 = wooly.brev %l : i64
  %11 = wooly.bfind u %l shiftamt : i64
  %12 = wooly.bfind s %a : i32
  %13 = wooly.bmsk clamp %a, %b : i32
  %14 = wooly.shf l wrap %a, %b, %c : i32
  %15 = wooly.mul24 s hi %a, %b : i32
  %16 = wooly.sad u %a, %b, %c : i32
  %17 = wooly.dp4a s u %a, %b, %c : i32
  %18 = wooly.dp2a u s hi %a, %b, %c : i32
  wooly.ret
}

// -----

// Generic addressing.

// CHECK-LABEL: wooly.func @generic(
// CHECK-SAME: %[[S:[^:]*]]: i32, %[[G:[^:]*]]: i64
// CHECK: %{{.*}} = cvta to_generic shared %[[S]] : i32 -> i64
// CHECK: %{{.*}} = cvta from_generic global %[[G]] : i64 -> i64
// CHECK: %{{.*}} = isspacep shared %[[G]] : i64
wooly.func @generic(%s: i32, %g: i64) {
  %0 = wooly.cvta to_generic shared %s : i32 -> i64
  %1 = wooly.cvta from_generic global %g : i64 -> i64
  %2 = wooly.isspacep shared %g : i64
  wooly.ret
}

// -----

// Asynchronous copies and matrix operations.

// CHECK-LABEL: wooly.func @matrix(
// CHECK-SAME: %[[D:[^:]*]]: i32, %[[S:[^:]*]]: i64, %[[N:[^:]*]]: i32, %[[R:[^:]*]]: i32, %[[F:[^:]*]]: f32
// CHECK: cp_async %[[D]], %[[S]], 16 cache cg : i32, i64
// CHECK: cp_async %[[D]], %[[S]], 8 src_size %[[N]] cache ca : i32, i64
// CHECK: cp_async_commit
// CHECK: cp_async_wait 1
// CHECK: %{{.*}}:4 = ldmatrix %[[D]] trans : i32 -> i32, i32, i32, i32
// CHECK: %{{.*}} = ldmatrix %[[D]] : i32 -> i32
// CHECK: %{{.*}}:4 = mma_sync "m16n8k16" row col f32 bf16 bf16 f32 (%[[R]], %[[R]], %[[R]], %[[R]]) (%[[R]], %[[R]]) (%[[F]], %[[F]], %[[F]], %[[F]]) : (i32, i32, i32, i32) (i32, i32) (f32, f32, f32, f32) -> f32, f32, f32, f32
// CHECK: %{{.*}}:2 = mma_sync "m16n8k32" row col s32 s8 s8 s32 satfinite (%[[R]], %[[R]]) (%[[R]]) (%[[R]], %[[R]]) : (i32, i32) (i32) (i32, i32) -> i32, i32
// CHECK: %{{.*}}:2 = wmma_load a row "m16n16k16" f16 global %[[S]], %[[N]] : i64 -> i32, i32
// CHECK: %{{.*}} = wmma_load c col "m16n16k16" f32 shared %[[D]] : i32 -> f32
// CHECK: %{{.*}}:2 = wmma_mma row col "m16n16k16" f32 f16 f16 f32 (%[[R]], %[[R]]) (%[[R]]) (%[[F]], %[[F]]) : (i32, i32) (i32) (f32, f32) -> f32, f32
// CHECK: wmma_store row "m16n16k16" f32 global %[[S]], %[[N]] (%[[F]], %[[F]]) : i64, f32, f32
// CHECK: wmma_store col "m16n16k16" f32 shared %[[D]] (%[[F]]) : i32, f32
wooly.func @matrix(%d: i32, %s: i64, %n: i32, %r: i32, %f: f32) {
  wooly.cp_async %d, %s, 16 cache cg : i32, i64
  wooly.cp_async %d, %s, 8 src_size %n cache ca : i32, i64
  wooly.cp_async_commit
  wooly.cp_async_wait 1
  %0:4 = wooly.ldmatrix %d trans : i32 -> i32, i32, i32, i32
  %1 = wooly.ldmatrix %d : i32 -> i32
  %2:4 = wooly.mma_sync "m16n8k16" row col f32 bf16 bf16 f32
      (%r, %r, %r, %r) (%r, %r) (%f, %f, %f, %f)
      : (i32, i32, i32, i32) (i32, i32) (f32, f32, f32, f32) -> f32, f32, f32, f32
  %3:2 = wooly.mma_sync "m16n8k32" row col s32 s8 s8 s32 satfinite
      (%r, %r) (%r) (%r, %r) : (i32, i32) (i32) (i32, i32) -> i32, i32
  %4:2 = wooly.wmma_load a row "m16n16k16" f16 global %s, %n : i64 -> i32, i32
  %5 = wooly.wmma_load c col "m16n16k16" f32 shared %d : i32 -> f32
  %6:2 = wooly.wmma_mma row col "m16n16k16" f32 f16 f16 f32 (%r, %r) (%r) (%f, %f)
      : (i32, i32) (i32) (f32, f32) -> f32, f32
  wooly.wmma_store row "m16n16k16" f32 global %s, %n (%f, %f) : i64, f32, f32
  wooly.wmma_store col "m16n16k16" f32 shared %d (%f) : i32, f32
  wooly.ret
}

// -----

// Single-bit products (`.xor.popc` / `.and.popc`).

// CHECK-LABEL: wooly.func @bits(
// CHECK: mma_sync "m16n8k128" row col s32 b1 b1 s32 popc xor (
// CHECK: wmma_mma row col "m8n8k128" s32 b1 b1 s32 popc and (
wooly.func @bits(%r: i32) {
  %0:4 = wooly.mma_sync "m16n8k128" row col s32 b1 b1 s32 popc xor
      (%r, %r) (%r) (%r, %r, %r, %r)
      : (i32, i32) (i32) (i32, i32, i32, i32) -> i32, i32, i32, i32
  %1:2 = wooly.wmma_mma row col "m8n8k128" s32 b1 b1 s32 popc and (%r) (%r) (%r, %r)
      : (i32) (i32) (i32, i32) -> i32, i32
  wooly.ret
}

// -----

// Miscellaneous: sleep, prefetch, cache policies.

// CHECK-LABEL: wooly.func @misc(
// CHECK-SAME: %[[T:[^:]*]]: i32, %[[P:[^:]*]]: i64
// CHECK: nanosleep %[[T]]
// CHECK: prefetch global "L2" %[[P]] : i64
// CHECK: prefetch generic "L1" %[[P]] : i64
// CHECK: %{{.*}} = createpolicy "evict_last" "evict_unchanged" 5.000000e-01 : i64
wooly.func @misc(%t: i32, %p: i64) {
  wooly.nanosleep %t
  wooly.prefetch global "L2" %p : i64
  wooly.prefetch generic "L1" %p : i64
  %0 = wooly.createpolicy "evict_last" "evict_unchanged" 0.5 : i64
  wooly.ret
}

// -----

// Kernel parameter addresses and address-valued initializers.

// CHECK: wooly.global const @table : i64[2] align 8 init [@tile, 3]
wooly.global const @table : i64[2] align 8 init [@tile, 3]
wooly.global shared @tile : f32[4] align 4

// CHECK-LABEL: wooly.func @param_addr(
// CHECK: %[[P:.*]] = param_address 0 : i64
// CHECK: ld param %[[P]] : i64 -> i64
wooly.func @param_addr(%a: i64) attributes {kernel} {
  %0 = wooly.param_address 0 : i64
  %1 = wooly.ld param %0 : i64 -> i64
  wooly.ret
}
