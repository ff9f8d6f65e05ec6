// RUN: wooly-opt %s --split-input-file --verify-diagnostics

// A function's linkage must be a PTX linking directive.
// expected-error @+1 {{'wooly.func' op unknown linkage 'public'}}
wooly.func @f() attributes {linkage = "public"} {
  wooly.ret
}

// -----

// Kernels (.entry) have no return values.
// expected-error @+1 {{'wooly.func' op a kernel cannot return values}}
wooly.func @k() -> i32 attributes {kernel} {
  %c = arith.constant 0 : i32
  wooly.ret %c : i32
}

// -----

// maxntid takes 1 to 3 dimensions.
// expected-error @+1 {{'wooly.func' op 'maxntid' needs 1 to 3 dimensions}}
wooly.func @k() attributes {kernel, maxntid = array<i32: 1, 2, 3, 4>} {
  wooly.ret
}

// -----

// reqntid dimensions are positive.
// expected-error @+1 {{'wooly.func' op 'reqntid' dimensions must be positive}}
wooly.func @k() attributes {kernel, reqntid = array<i32: 32, 0>} {
  wooly.ret
}

// -----

// The entry block's arguments are the parameters (generic form, since the
// custom form derives them from the signature). FunctionOpInterface reports
// this before FuncOp::verify's own check can.
// expected-error @+1 {{'wooly.func' op type of entry block argument #0('i32') must match the type of the corresponding argument in function signature('i64')}}
"wooly.func"() <{function_type = (i64) -> (), sym_name = "f"}> ({
^bb0(%a: i32):
  "wooly.ret"() : () -> ()
}) : () -> ()

// -----

// ret returns exactly the function's result types.
wooly.func @f() -> i32 {
  %c = arith.constant 0 : i64
  // expected-error @+1 {{'wooly.ret' op operand types do not match the results of 'f'}}
  wooly.ret %c : i64
}

// -----

// ret only appears directly in a wooly.func (HasParent).
// expected-error @+1 {{'wooly.ret' op expects parent op 'wooly.func'}}
wooly.ret

// -----

// Alignment is a power of two.
// expected-error @+1 {{'wooly.global' op alignment must be a positive power of two}}
wooly.global shared @a : f32[4] align 6

// -----

// TODO(verifier): `wooly.global global @a : i32[-1] align 4` is accepted:
// GlobalOp::verify tests `getCount() < 0` but I64Attr's getter returns
// uint64_t. Add the case for "element count must not be negative" once fixed.

// Elements have a bit width.
// expected-error @+1 {{'wooly.global' op element type must be an integer or float type}}
wooly.global global @a : index[4] align 8

// -----

// Module-scope variables are not parameters.
// expected-error @+1 {{'wooly.global' op module-scope variables live in global, shared, const or local space}}
wooly.global param @a : i32[1] align 4

// -----

// The initializer fits the variable.
// expected-error @+1 {{'wooly.global' op initializer has more elements than the variable}}
wooly.global const @a : i32[2] align 4 init dense<[1, 2, 3]> : tensor<3xi32>

// -----

// addressof names a variable or function.
wooly.func @f() {
  // expected-error @+1 {{'wooly.addressof' op 'nowhere' does not name a wooly.global or wooly.func}}
  %a = wooly.addressof @nowhere : i64
  wooly.ret
}

// -----

// addressof gives a 32- or 64-bit address (ODS type constraint).
wooly.global shared @s : i32[1] align 4
wooly.func @f() {
  // expected-error @+1 {{'wooly.addressof' op result #0 must be 32- or 64-bit address, but got 'i16'}}
  %a = wooly.addressof @s : i16
  wooly.ret
}

// -----

// call names a wooly.func.
wooly.global global @v : i32[1] align 4
wooly.func @f() {
  // expected-error @+1 {{'wooly.call' op 'v' does not name a wooly.func}}
  wooly.call @v() : () -> ()
  wooly.ret
}

// -----

// Kernels are not callable.
wooly.func @k() attributes {kernel} {
  wooly.ret
}
wooly.func @f() {
  // expected-error @+1 {{'wooly.call' op cannot call kernel 'k'}}
  wooly.call @k() : () -> ()
  wooly.ret
}

// -----

// Call arguments match the callee's parameters.
wooly.func private @g(i32)
wooly.func @f(%x: i64) {
  // expected-error @+1 {{'wooly.call' op argument types do not match the signature of 'g'}}
  wooly.call @g(%x) : (i64) -> ()
  wooly.ret
}

// -----

// Call results match the callee's results.
wooly.func private @g() -> f32
wooly.func @f() {
  // expected-error @+1 {{'wooly.call' op result types do not match the signature of 'g'}}
  %r = wooly.call @g() : () -> f64
  wooly.ret
}

// -----

// %tid needs a dimension.
wooly.func @f() {
  // expected-error @+1 {{'wooly.sreg' op 'tid' needs dimension}}
  %t = wooly.sreg tid : i32
  wooly.ret
}

// -----

// %laneid has none.
wooly.func @f() {
  // expected-error @+1 {{'wooly.sreg' op 'laneid' takes no dimension}}
  %t = wooly.sreg laneid x : i32
  wooly.ret
}

// -----

// Special registers have their PTX width.
wooly.func @f() {
  // expected-error @+1 {{'wooly.sreg' op 'clock64' is 64-bit}}
  %t = wooly.sreg clock64 : i32
  wooly.ret
}

// -----

// Special registers are integers (ODS type constraint).
wooly.func @f() {
  // expected-error @+1 {{'wooly.sreg' op result #0 must be PTX integer, but got 'f32'}}
  %t = wooly.sreg laneid : f32
  wooly.ret
}

// -----

// pack concatenates at least two values.
wooly.func @f(%a: i64) {
  // expected-error @+1 {{'wooly.pack' op needs at least two operands}}
  %d = wooly.pack %a : i64 -> i64
  wooly.ret
}

// -----

// pack keeps every bit.
wooly.func @f(%a: i32, %b: i16) {
  // expected-error @+1 {{'wooly.pack' op operands have 48 bits but results have 64}}
  %d = wooly.pack %a, %b : i32, i16 -> i64
  wooly.ret
}

// -----

// pack operands need a bit width.
wooly.func @f(%a: index, %b: index) {
  // expected-error @+1 {{'wooly.pack' op operand type 'index' has no bit width}}
  %d = wooly.pack %a, %b : index, index -> i128
  wooly.ret
}

// -----

// unpack splits into at least two values.
wooly.func @f(%a: i64) {
  // expected-error @+1 {{'wooly.unpack' op needs at least two results}}
  %d = wooly.unpack %a : i64 -> i64
  wooly.ret
}

// -----

// unpack results need a bit width.
wooly.func @f(%a: i64) {
  // expected-error @+1 {{'wooly.unpack' op result type 'index' has no bit width}}
  %d:2 = wooly.unpack %a : i64 -> index, index
  wooly.ret
}

// -----

// bitcast keeps the width.
wooly.func @f(%a: i32) {
  // expected-error @+1 {{'wooly.bitcast' op operands have 32 bits but results have 64}}
  %d = wooly.bitcast %a : i32 -> f64
  wooly.ret
}

// -----

// Byte accesses need fixed-width types.
wooly.func @f(%p: vector<8xi8>) {
  // expected-error @+1 {{'wooly.extract_bytes' op needs types with a fixed bit width}}
  %x = wooly.extract_bytes %p[0] : vector<8xi8> -> index
  wooly.ret
}

// -----

// Byte arrays are vectors of i8.
wooly.func @f(%p: vector<2xi32>) {
  // expected-error @+1 {{'wooly.extract_bytes' op byte array must be a vector of i8}}
  %x = wooly.extract_bytes %p[0] : vector<2xi32> -> i32
  wooly.ret
}

// -----

// Byte accesses move whole bytes (or a predicate).
wooly.func @f(%p: vector<8xi8>) {
  // expected-error @+1 {{'wooly.extract_bytes' op value must be a whole number of bytes}}
  %x = wooly.extract_bytes %p[0] : vector<8xi8> -> i4
  wooly.ret
}

// -----

// Byte accesses stay inside the parameter.
wooly.func @f(%p: vector<8xi8>) {
  // expected-error @+1 {{'wooly.extract_bytes' op access of 4 bytes at offset 6 is outside the 8-byte parameter}}
  %x = wooly.extract_bytes %p[6] : vector<8xi8> -> f32
  wooly.ret
}

// -----

// insert_bytes has the same bounds check.
wooly.func @f(%p: vector<8xi8>, %v: i64) {
  // expected-error @+1 {{'wooly.insert_bytes' op access of 8 bytes at offset 1 is outside the 8-byte parameter}}
  %q = wooly.insert_bytes %v, %p[1] : i64 into vector<8xi8>
  wooly.ret
}

// -----

// Vector loads have 1, 2, 4 or 8 elements.
wooly.func @f(%p: i64) {
  // expected-error @+1 {{'wooly.ld' op accesses 1, 2, 4 or 8 values, not 3}}
  %a:3 = wooly.ld global %p : i64 -> i32, i32, i32
  wooly.ret
}

// -----

// Vector elements share one type.
wooly.func @f(%p: i64) {
  // expected-error @+1 {{'wooly.ld' op vector elements must have one type}}
  %a:2 = wooly.ld global %p : i64 -> i32, f32
  wooly.ret
}

// -----

// Loaded values have a bit width.
wooly.func @f(%p: i64) {
  // expected-error @+1 {{'wooly.ld' op value type must have a fixed bit width}}
  %a = wooly.ld global %p : i64 -> index
  wooly.ret
}

// -----

// A scope comes with a memory order.
wooly.func @f(%p: i64) {
  // expected-error @+1 {{'wooly.ld' op a scope needs a memory order}}
  %a = wooly.ld global %p {scope = 2 : i32} : i64 -> i32
  wooly.ret
}

// -----

// volatile and a memory order exclude each other.
wooly.func @f(%p: i64, %v: i32) {
  // expected-error @+1 {{'wooly.st' op 'volatile' excludes a memory order}}
  wooly.st global volatile relaxed sys %p, %v : i64, i32
  wooly.ret
}

// -----

// The const space is read-only.
wooly.func @f(%p: i64, %v: i32) {
  // expected-error @+1 {{'wooly.st' op cannot store to the const space}}
  wooly.st const %p, %v : i64, i32
  wooly.ret
}

// -----

// Addresses are i32 or i64 (ODS type constraint).
wooly.func @f(%p: i16) {
  // expected-error @+1 {{'wooly.ld' op operand #0 must be 32- or 64-bit address, but got 'i16'}}
  %a = wooly.ld shared %p : i16 -> i32
  wooly.ret
}

// -----

// Float atomics need a float type.
wooly.func @f(%p: i64, %v: i32) {
  // expected-error @+1 {{'wooly.atom' op 'fadd' needs a floating-point type}}
  %o = wooly.atom global fadd %p, %v : i64, i32 -> i32
  wooly.ret
}

// -----

// Integer atomics need an integer type.
wooly.func @f(%p: i64, %v: f32) {
  // expected-error @+1 {{'wooly.atom' op 'add' needs an integer type}}
  %o = wooly.atom global add %p, %v : i64, f32 -> f32
  wooly.ret
}

// -----

// cas takes the compare and the new value.
wooly.func @f(%p: i64, %v: i32) {
  // expected-error @+1 {{'wooly.atom' op 'cas' takes 2 value operand(s)}}
  %o = wooly.atom global cas %p, %v : i64, i32 -> i32
  wooly.ret
}

// -----

// Other atomics take one value.
wooly.func @f(%p: i64, %v: i32) {
  // expected-error @+1 {{'wooly.atom' op 'exch' takes 1 value operand(s)}}
  %o = wooly.atom global exch %p, %v, %v : i64, i32, i32 -> i32
  wooly.ret
}

// -----

// atom values have the result type.
wooly.func @f(%p: i64, %v: i64) {
  // expected-error @+1 {{'wooly.atom' op value operands must have the result type}}
  %o = wooly.atom global add %p, %v : i64, i64 -> i32
  wooly.ret
}

// -----

// red has the same type rules as atom.
wooly.func @f(%p: i64, %v: i32) {
  // expected-error @+1 {{'wooly.red' op 'fmax' needs a floating-point type}}
  wooly.red global fmax %p, %v : i64, i32
  wooly.ret
}

// -----

// bar.red reduces with popc, and, or only.
wooly.func @f(%id: i32, %p: i1) {
  // expected-error @+1 {{'wooly.bar_red' op bar.red supports popc, and, or}}
  %r = wooly.bar_red add %id, %p : i32
  wooly.ret
}

// -----

// bar.red.popc counts into an i32.
wooly.func @f(%id: i32, %p: i1) {
  // expected-error @+1 {{'wooly.bar_red' op popc gives i32}}
  %r = wooly.bar_red popc %id, %p : i1
  wooly.ret
}

// -----

// bar.red.and/or give a predicate.
wooly.func @f(%id: i32, %p: i1) {
  // expected-error @+1 {{'wooly.bar_red' op and/or give i1}}
  %r = wooly.bar_red or %id, %p : i32
  wooly.ret
}

// -----

// vote.ballot gives the lane mask.
wooly.func @f(%p: i1, %m: i32) {
  // expected-error @+1 {{'wooly.vote' op ballot gives i32}}
  %r = wooly.vote ballot %p, %m : i1
  wooly.ret
}

// -----

// vote.all/any/uni give a predicate.
wooly.func @f(%p: i1, %m: i32) {
  // expected-error @+1 {{'wooly.vote' op all/any/uni give i1}}
  %r = wooly.vote any %p, %m : i32
  wooly.ret
}

// -----

// shfl exchanges 32-bit values (ODS type constraint).
wooly.func @f(%v: i64, %m: i32) {
  // expected-error @+1 {{'wooly.shfl' op operand #0 must be 32-bit signless integer, but got 'i64'}}
  %r, %ok = "wooly.shfl"(%v, %m, %m, %m) <{mode = 2 : i32}> : (i64, i32, i32, i32) -> (i32, i1)
  wooly.ret
}

// -----

// ldmatrix loads 1, 2 or 4 matrices.
wooly.func @f(%p: i32) {
  // expected-error @+1 {{'wooly.ldmatrix' op loads 1, 2 or 4 matrices}}
  %a:3 = wooly.ldmatrix %p : i32 -> i32, i32, i32
  wooly.ret
}

// -----

// Float arithmetic takes float rounding modes, not integer ones.
wooly.func @f(%a: f32) {
  // expected-error @+1 {{'wooly.fadd' op rounding 'rni' is not valid here}}
  %r = wooly.fadd %a, %a rni : f32
  wooly.ret
}

// -----

// fma has the same rule.
wooly.func @f(%a: f32) {
  // expected-error @+1 {{'wooly.fma' op rounding 'rna' is not valid here}}
  %r = wooly.fma %a, %a, %a rna : f32
  wooly.ret
}

// -----

// Float ops take PTX float types (ODS type constraint).
wooly.func @f(%a: i32) {
  // expected-error @+1 {{'wooly.fmul' op operand #0 must be PTX floating-point value, but got 'i32'}}
  %r = wooly.fmul %a, %a : i32
  wooly.ret
}

// -----

// Division names exactly one of a rounding mode, approx, full.
wooly.func @f(%a: f32) {
  // expected-error @+1 {{'wooly.fdiv' op needs exactly one of a rounding mode, 'approx', 'full'}}
  %r = wooly.fdiv %a, %a rn approx : f32
  wooly.ret
}

// -----

// ... and not none of them.
wooly.func @f(%a: f32) {
  // expected-error @+1 {{'wooly.fdiv' op needs exactly one of a rounding mode, 'approx', 'full'}}
  %r = wooly.fdiv %a, %a : f32
  wooly.ret
}

// -----

// div.approx and div.full exist for f32 only.
wooly.func @f(%a: f64) {
  // expected-error @+1 {{'wooly.fdiv' op 'approx' and 'full' division are f32 only}}
  %r = wooly.fdiv %a, %a full : f64
  wooly.ret
}

// -----

// IEEE division takes a float rounding mode.
wooly.func @f(%a: f64) {
  // expected-error @+1 {{'wooly.fdiv' op rounding 'rzi' is not valid here}}
  %r = wooly.fdiv %a, %a rzi : f64
  wooly.ret
}

// -----

// sqrt names exactly one of a rounding mode or approx.
wooly.func @f(%a: f32) {
  // expected-error @+1 {{'wooly.fsqrt' op needs exactly one of a rounding mode or 'approx'}}
  %r = wooly.fsqrt %a : f32
  wooly.ret
}

// -----

// rcp too.
wooly.func @f(%a: f32) {
  // expected-error @+1 {{'wooly.frcp' op needs exactly one of a rounding mode or 'approx'}}
  %r = wooly.frcp %a rn approx : f32
  wooly.ret
}

// -----

// rcp takes a float rounding mode.
wooly.func @f(%a: f64) {
  // expected-error @+1 {{'wooly.frcp' op rounding 'rs' is not valid here}}
  %r = wooly.frcp %a rs : f64
  wooly.ret
}

// -----

// cvt takes two inputs exactly for a pair packed from f32.
wooly.func @f(%a: f32) {
  // expected-error @+1 {{'wooly.cvt' op takes 2 input(s) for 'f32' to 'f16x2'}}
  %r = wooly.cvt %a, %a, %a rn : f32 to f16x2 : f32, f32, f32 -> vector<2xf16>
  wooly.ret
}

// -----

// A one-input cvt to a pair from f32 is missing its second half.
wooly.func @f(%a: f32) {
  // expected-error @+1 {{'wooly.cvt' op takes 2 input(s) for 'f32' to 'f16x2'}}
  %r = wooly.cvt %a rn : f32 to f16x2 : f32 -> vector<2xf16>
  wooly.ret
}

// -----

// Other conversions take one input.
wooly.func @f(%a: i32) {
  // expected-error @+1 {{'wooly.cvt' op takes 1 input(s) for 'u32' to 'u16'}}
  %r = wooly.cvt %a, %a sat : u32 to u16 : i32, i32 -> i16
  wooly.ret
}

// -----

// cvt inputs hold the source type.
wooly.func @f(%a: f64) {
  // expected-error @+1 {{'wooly.cvt' op input of type 'f64' does not hold a 'f32'}}
  %r = wooly.cvt %a rn : f32 to f16 : f64 -> f16
  wooly.ret
}

// -----

// The cvt result holds the destination type.
wooly.func @f(%a: f32) {
  // expected-error @+1 {{'wooly.cvt' op result of type 'i32' does not hold a 'e4m3x2'}}
  %r = wooly.cvt %a, %a rn satfinite : f32 to e4m3x2 : f32, f32 -> i32
  wooly.ret
}

// -----

// Integer rounding (rni rzi rmi rpi) is for float sources.
wooly.func @f(%a: i32) {
  // expected-error @+1 {{'wooly.cvt' op integer rounding needs a float source}}
  %r = wooly.cvt %a rzi : s32 to s16 : i32 -> i16
  wooly.ret
}

// -----

// Enumerated modifiers are parsed by name.
wooly.func @f(%a: i32) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'sign' [u, s]}}
  %r = wooly.div x %a, %a : i32
  wooly.ret
}

// -----

// A parameter address needs an in-range parameter of a kernel.
wooly.func @k(%a: i64) attributes {kernel} {
  // expected-error @+1 {{'wooly.param_address' op parameter index 1 is out of range}}
  %0 = wooly.param_address 1 : i64
  wooly.ret
}

// -----

// Device functions have no parameter addresses.
wooly.func @f(%a: i64) {
  // expected-error @+1 {{'wooly.param_address' op is only valid inside a kernel}}
  %0 = wooly.param_address 0 : i64
  wooly.ret
}

// -----

// Address initializers must name a variable or function.
// expected-error @+1 {{'wooly.global' op initializer names 'nowhere', which is not a wooly.global or wooly.func}}
wooly.global const @t : i64[1] align 8 init [@nowhere]
