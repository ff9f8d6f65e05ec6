//===- WoolyOps.td - Wooly operations ----------------------*- tablegen -*-===//
//
// Operations of the Wooly dialect. Each op states the exact PTX semantics it
// carries; see WoolyDialect.td for the principles.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_OPS_TD
#define WOOLY_OPS_TD

include "Wooly/Dialect/Wooly/IR/WoolyDialect.td"
include "Wooly/Dialect/Wooly/IR/WoolyEnums.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/RegionKindInterface.td"

class Wooly_Op<string mnemonic, list<Trait> traits = []>
    : Op<Wooly_Dialect, mnemonic, traits>;

// Value categories.
def Wooly_Int : AnyTypeOf<[I1, I8, I16, I32, I64], "PTX integer">;
def Wooly_Addr : AnyTypeOf<[I32, I64], "32- or 64-bit address">;
def Wooly_FloatLike : AnyTypeOf<[F16, BF16, F32, F64,
    VectorOfLengthAndType<[2], [F16, BF16]>], "PTX floating-point value">;

//===----------------------------------------------------------------------===//
// Functions and module-scope variables
//===----------------------------------------------------------------------===//

def Wooly_FuncOp : Wooly_Op<"func", [
    AutomaticAllocationScope, CallableOpInterface, FunctionOpInterface,
    IsolatedFromAbove, OpAsmOpInterface]> {
  let summary = "a PTX kernel (`.entry`) or device function (`.func`)";
  let description = [{
    A kernel (with the `kernel` attribute) or a device function. Parameters
    are block arguments typed by their PTX type (`.u32` is `i32`, `.f32` is
    `f32`, a byte array `.b8 p[N]` is `vector<Nxi8>`); each argument keeps
    its PTX type and alignment as the argument attributes `wooly.type` and
    `wooly.align`. A device function's `.param` return values are its results.
    A declaration (`.extern .func`) has no body.

    Launch bounds are kept as attributes: `maxntid`, `reqntid` (1 to 3
    dimensions), `minnctapersm`, `maxnreg`; `linkage` keeps `.visible`,
    `.extern` or `.weak`.

    ```mlir
    wooly.func @axpy(%a: f32 {wooly.type = "f32"}, %x: i64 {wooly.type = "u64"})
        attributes {kernel, linkage = "visible", maxntid = array<i32: 256>} {
      wooly.ret
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs,
                       UnitAttr:$kernel,
                       OptionalAttr<StrAttr>:$linkage,
                       OptionalAttr<DenseI32ArrayAttr>:$maxntid,
                       OptionalAttr<DenseI32ArrayAttr>:$reqntid,
                       OptionalAttr<I32Attr>:$minnctapersm,
                       OptionalAttr<I32Attr>:$maxnreg,
                       UnitAttr:$noreturn);
  let regions = (region AnyRegion:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "StringRef":$name, "FunctionType":$type)>];
  let extraClassDeclaration = [{
    /// Returns the argument types of this function.
    ArrayRef<Type> getArgumentTypes() { return getFunctionType().getInputs(); }
    /// Returns the result types of this function.
    ArrayRef<Type> getResultTypes() { return getFunctionType().getResults(); }
    /// Returns the region on the current operation that is callable.
    Region *getCallableRegion() { return isExternal() ? nullptr : &getBody(); }
    /// Returns true if this is a declaration without a body.
    bool isDeclaration() { return isExternal(); }
    static StringRef getDefaultDialect() { return "wooly"; }
  }];
}

def Wooly_GlobalOp : Wooly_Op<"global", [Symbol,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a module-scope variable in a state space";
  let description = [{
    A `.global`, `.shared`, `.const` or `.local` variable of `count` elements
    of `elem_type` (`count = 0` declares an unsized array: the dynamic shared
    memory `extern .shared .align 16 .b8 smem[]`). `init` holds the initial
    value when the PTX gives one: dense elements, or an array whose elements
    are numbers or symbol references (`.const .u64 p[2] = {x, y}`), each
    reference standing for the address of that variable or function in its
    own state space, as `wooly.addressof` gives it.

    ```mlir
    wooly.global shared @tile : f32[256] align 4
    wooly.global shared extern @dyn : i8[0] align 16
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Wooly_StateSpace:$space,
                       TypeAttr:$elem_type, I64Attr:$count, I64Attr:$align,
                       OptionalAttr<Wooly_Linkage>:$linkage,
                       OptionalAttr<AnyAttrOf<[ElementsAttr, ArrayAttr]>>:$init);
  let assemblyFormat = [{
    $space ($linkage^)? $sym_name `:` $elem_type `[` $count `]` `align` $align
    (`init` $init^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Wooly_AddressOfOp : Wooly_Op<"addressof", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "address of a module-scope variable or function";
  let description = [{
    The address of `global` in the variable's own state space (as PTX's
    `mov.u64 %rd, sym` gives it), or the generic address of a function.

    ```mlir
    %a = wooly.addressof @tile : i32
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$global);
  let results = (outs Wooly_Addr:$result);
  let assemblyFormat = "$global attr-dict `:` type($result)";
}

def Wooly_ParamAddressOp : Wooly_Op<"param_address", [Pure]> {
  let summary = "address of a kernel parameter in the param state space";
  let description = [{
    The address, in the `param` state space, of the kernel's parameter
    number `index` (PTX's `mov.u64 %rd, kernel_param_0`). Loads from it with
    `wooly.ld param` read the parameter's bytes; kernel parameters are
    read-only.

    ```mlir
    %p = wooly.param_address 0 : i64
    ```
  }];
  let arguments = (ins I64Attr:$index);
  let results = (outs Wooly_Addr:$result);
  let assemblyFormat = "$index attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Wooly_RetOp : Wooly_Op<"ret", [Terminator, ReturnLike,
    HasParent<"FuncOp">]> {
  let summary = "return from a kernel or device function";
  let description = [{
    Returns the current values of the function's `.param` return values.

    ```mlir
    wooly.ret %v : i32
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$operands);
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
  let hasVerifier = 1;
}

def Wooly_ExitOp : Wooly_Op<"exit", [Terminator]> {
  let summary = "terminate the executing thread (`exit`)";
  let description = [{
    Ends the thread; in a device function it ends the thread, not the call.

    ```mlir
    wooly.exit
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Wooly_TrapOp : Wooly_Op<"trap", [Terminator]> {
  let summary = "abort the kernel with an error (`trap`)";
  let description = [{
    Aborts the launch; the host sees a launch failure.

    ```mlir
    wooly.trap
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Wooly_BrkptOp : Wooly_Op<"brkpt"> {
  let summary = "breakpoint (`brkpt`)";
  let description = [{
    Suspends execution for a debugger; without one it has no effect.

    ```mlir
    wooly.brkpt
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Wooly_CallOp : Wooly_Op<"call", [CallOpInterface,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "call a device function with the `.param` ABI";
  let description = [{
    Calls `callee` with the values of the argument `.param`s and yields the
    values of its return `.param`s. `uni` records PTX's `call.uni`
    (non-divergent call).

    ```mlir
    %r = wooly.call @f(%a, %b) : (i32, f32) -> i32
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$operands,
                       UnitAttr:$uni, OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let results = (outs Variadic<AnyType>);
  let assemblyFormat = [{
    (`uni` $uni^)? $callee `(` $operands `)` attr-dict `:` functional-type($operands, results)
  }];
  let extraClassDeclaration = [{
    /// Returns the callee symbol.
    CallInterfaceCallable getCallableForCallee() { return getCalleeAttr(); }
    /// Sets the callee symbol.
    void setCalleeFromCallable(CallInterfaceCallable callee) {
      (*this)->setAttr("callee", cast<SymbolRefAttr>(callee));
    }
    /// Returns the call arguments.
    Operation::operand_range getArgOperands() { return getOperands(); }
    /// Returns the call arguments as a mutable range.
    MutableOperandRange getArgOperandsMutable() { return getOperandsMutable(); }
  }];
}

def Wooly_CallIndirectOp : Wooly_Op<"call_indirect"> {
  let summary = "call a device function through a generic address";
  let description = [{
    Calls the function whose generic address is `callee` (PTX `call` with a
    register and a `.callprototype`).

    ```mlir
    %r = wooly.call_indirect %fp(%a) : i64, (i64) -> i64
    ```
  }];
  let arguments = (ins Wooly_Addr:$callee, Variadic<AnyType>:$args);
  let results = (outs Variadic<AnyType>);
  let assemblyFormat = [{
    $callee `(` $args `)` attr-dict `:` type($callee) `,` functional-type($args, results)
  }];
}

//===----------------------------------------------------------------------===//
// Special registers and bit-level moves
//===----------------------------------------------------------------------===//

def Wooly_SRegOp : Wooly_Op<"sreg", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "read a PTX special register";
  let description = [{
    Reads `%tid`, `%ntid`, `%ctaid`, `%nctaid` (with a dimension), `%laneid`,
    `%warpid`, `%smid`, `%clock`, `%clock64`, `%globaltimer`, the lane masks
    and the others. `%reserved_smem_offset_{begin,end,cap,0,1}` locate the
    shared memory that the system reserves in each block (its start, end
    and size in bytes in the shared window, and two offsets in it, the
    second cooperative groups' scratch). Timer and id registers that change while a thread runs
    (`clock`, `clock64`, `globaltimer`, `smid`, `warpid`) are modelled as
    reads of a volatile resource and are never folded or hoisted.

    ```mlir
    %t = wooly.sreg tid x : i32
    %c = wooly.sreg clock64 : i64
    ```
  }];
  let arguments = (ins Wooly_SpecialReg:$reg, OptionalAttr<Wooly_Dim>:$dim);
  let results = (outs Wooly_Int:$result);
  let assemblyFormat = "$reg ($dim^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Wooly_EnvRegOp : Wooly_Op<"envreg", [Pure]> {
  let summary = "read a driver-defined environment register (`%envreg<N>`)";
  let description = [{
    Reads `%envreg<index>` (0 to 31), a read-only register whose value the
    driver sets for the launch. CUDA's cooperative groups read
    `%envreg1:%envreg2` (high and low halves) as the address of the grid
    workspace of a cooperative launch (an `unsigned` size, then the grid
    barrier's counter), null for a launch that is not cooperative; the CPU
    backend defines the same and every other register as 0. NVIDIA GPUs
    read the driver's registers.

    ```mlir
    %hi = wooly.envreg 1 : i32
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>,
                                              IntMaxValue<31>]>:$index);
  let results = (outs I32:$result);
  let assemblyFormat = "$index attr-dict `:` type($result)";
}

def Wooly_PackOp : Wooly_Op<"pack", [Pure]> {
  let summary = "concatenate bit patterns (vector `mov`)";
  let description = [{
    Concatenates its operands' bits, the first operand in the least
    significant bits: PTX's `mov.b64 %rd, {%r1, %r2}`.

    ```mlir
    %d = wooly.pack %lo, %hi : i32, i32 -> i64
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
}

def Wooly_UnpackOp : Wooly_Op<"unpack", [Pure]> {
  let summary = "split a bit pattern (vector `mov`)";
  let description = [{
    Splits the operand's bits into the results, the first result taking the
    least significant bits: PTX's `mov.b64 {%r1, %r2}, %rd`.

    ```mlir
    %lo, %hi = wooly.unpack %d : i64 -> i32, i32
    ```
  }];
  let arguments = (ins AnyType:$input);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
  let hasVerifier = 1;
}

def Wooly_ExtractBytesOp : Wooly_Op<"extract_bytes", [Pure]> {
  let summary = "read a value from a byte-array parameter";
  let description = [{
    Reads the bits of a value of the result type at byte `offset` of a
    `vector<Nxi8>` (a `.param .b8 p[N]` aggregate), little-endian, as
    `ld.param` does.

    ```mlir
    %x = wooly.extract_bytes %p[8] : vector<16xi8> -> f32
    ```
  }];
  let arguments = (ins AnyType:$source, I64Attr:$offset);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$source `[` $offset `]` attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def Wooly_InsertBytesOp : Wooly_Op<"insert_bytes", [Pure,
    AllTypesMatch<["dest", "result"]>]> {
  let summary = "write a value into a byte-array parameter";
  let description = [{
    Returns `dest` with the bytes at `offset` replaced by the bits of
    `value`, little-endian, as `st.param` does.

    ```mlir
    %q = wooly.insert_bytes %v, %p[8] : f32 into vector<16xi8>
    ```
  }];
  let arguments = (ins AnyType:$value, AnyType:$dest, I64Attr:$offset);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$value `,` $dest `[` $offset `]` attr-dict `:` type($value) `into` type($dest)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//
//
// Memory effects, on the default resource: a plain load reads (CSE merges two
// with no write between them, an unused one is dead) and a plain store
// writes. Everything that observes or orders other threads' accesses both
// reads and writes, so that it is never merged, removed or moved across
// another memory access: volatile, relaxed, acquire and `.cv` loads,
// volatile and ordered stores, atomics, reductions, fences, barriers and
// asynchronous copies.

def Wooly_LoadOp : Wooly_Op<"ld", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "load from a state space (`ld`, `ldu`, `ld.global.nc`)";
  let description = [{
    Loads one value, or a vector of 2, 4 or 8 values (`.v2 .v4 .v8`), from the
    integer address `addr` in `space`. `cache` keeps the cache operator
    (`.ca .cg .cs .lu .cv`, `nc` for the non-coherent read-only path);
    `volatile`, and `sem`/`scope` for `ld.relaxed`/`ld.acquire`, keep the
    memory-model semantics. Results have the instruction's type; the importer
    extends narrow loads into wider registers with `arith` ops.

    ```mlir
    %v = wooly.ld global %p cache nc : i64 -> f32
    %a, %b = wooly.ld shared %q : i32 -> i32, i32
    ```
  }];
  let arguments = (ins Wooly_StateSpace:$space, Wooly_Addr:$addr,
                       OptionalAttr<Wooly_CacheOp>:$cache, UnitAttr:$is_volatile,
                       OptionalAttr<Wooly_MemOrder>:$sem,
                       OptionalAttr<Wooly_MemScope>:$scope);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $space (`volatile` $is_volatile^)? ($sem^)? ($scope^)? $addr (`cache` $cache^)?
    attr-dict `:` type($addr) `->` type($results)
  }];
  let hasVerifier = 1;
}

def Wooly_StoreOp : Wooly_Op<"st", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "store to a state space (`st`)";
  let description = [{
    Stores one value, or 2, 4 or 8 values as a vector, at `addr` in `space`;
    modifiers as for `wooly.ld`.

    ```mlir
    wooly.st global %p, %v : i64, f32
    ```
  }];
  let arguments = (ins Wooly_StateSpace:$space, Wooly_Addr:$addr,
                       Variadic<AnyType>:$values,
                       OptionalAttr<Wooly_CacheOp>:$cache, UnitAttr:$is_volatile,
                       OptionalAttr<Wooly_MemOrder>:$sem,
                       OptionalAttr<Wooly_MemScope>:$scope);
  let assemblyFormat = [{
    $space (`volatile` $is_volatile^)? ($sem^)? ($scope^)? $addr `,` $values
    (`cache` $cache^)? attr-dict `:` type($addr) `,` type($values)
  }];
  let hasVerifier = 1;
}

def Wooly_AtomOp : Wooly_Op<"atom", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "atomic read-modify-write returning the old value (`atom`)";
  let description = [{
    Atomically applies `op` to the value at `addr` and returns the old value.
    `cas` takes the compare value then the new value; `inc`/`dec` wrap as in
    PTX (`inc`: `old >= b ? 0 : old + 1`; `dec`: `old == 0 || old > b ? b :
    old - 1`). Memory order defaults to relaxed, scope to gpu.

    ```mlir
    %old = wooly.atom global add %p, %v : i64, i32 -> i32
    %o2 = wooly.atom shared cas acq_rel cta %q, %cmp, %new : i32, i32, i32 -> i32
    ```
  }];
  let arguments = (ins Wooly_StateSpace:$space, Wooly_AtomicOp:$op,
                       Wooly_Addr:$addr, Variadic<AnyType>:$values,
                       OptionalAttr<Wooly_MemOrder>:$sem,
                       OptionalAttr<Wooly_MemScope>:$scope);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $space $op ($sem^)? ($scope^)? $addr `,` $values attr-dict `:` type($addr) `,` type($values) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Wooly_RedOp : Wooly_Op<"red", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "atomic reduction without a result (`red`)";
  let description = [{
    Like `wooly.atom` but discards the old value.

    ```mlir
    wooly.red global fadd %p, %v : i64, f32
    ```
  }];
  let arguments = (ins Wooly_StateSpace:$space, Wooly_AtomicOp:$op,
                       Wooly_Addr:$addr, AnyType:$value,
                       OptionalAttr<Wooly_MemOrder>:$sem,
                       OptionalAttr<Wooly_MemScope>:$scope);
  let assemblyFormat = [{
    $space $op ($sem^)? ($scope^)? $addr `,` $value attr-dict `:` type($addr) `,` type($value)
  }];
  let hasVerifier = 1;
}

def Wooly_FenceOp : Wooly_Op<"fence", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "memory fence (`fence`, `membar`)";
  let description = [{
    Orders memory accesses: `fence.sc`/`fence.acq_rel` at a scope.
    `membar.cta/gl/sys` are `fence sc` at scope `cta/gpu/sys`.

    ```mlir
    wooly.fence sc gpu
    ```
  }];
  let arguments = (ins Wooly_MemOrder:$sem, Wooly_MemScope:$scope);
  let assemblyFormat = "$sem $scope attr-dict";
}

def Wooly_BarrierOp : Wooly_Op<"barrier", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "CTA barrier (`bar.sync`, `barrier.sync`, `bar.arrive`)";
  let description = [{
    Waits on named barrier `id` until `count` threads (all of the CTA when
    absent) have arrived. `arrive` only signals arrival. `aligned` (PTX's
    `bar` and `.aligned`) asserts that all threads of the warp execute the
    same barrier.

    ```mlir
    wooly.barrier %c0 aligned
    wooly.barrier %id, %n arrive
    ```
  }];
  let arguments = (ins I32:$id, Optional<I32>:$count, UnitAttr:$arrive,
                       UnitAttr:$aligned);
  let assemblyFormat = [{
    $id (`,` $count^)? (`arrive` $arrive^)? (`aligned` $aligned^)? attr-dict
  }];
}

def Wooly_IterationBarrierOp : Wooly_Op<"iteration_barrier", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "end of a virtual block for the calling thread (constrain, slice)";
  let description = [{
    Waits until every thread of the block that has not exited waits here.
    While a thread waits here it counts as exited for every other barrier
    and warp collective of the block, exactly as if it had executed `exit`:
    the sharing passes (`wooly-constrain`, `wooly-slice`) put it at the end
    of each virtual block, where the original kernel's `ret`/`exit` now go,
    so a thread that finishes its virtual block early does not take part in
    the barriers and collectives of the others, and no thread starts the
    next virtual block (and reuses shared memory) before all have finished.
    A target must implement this meaning or refuse kernels that need it.
    ```mlir
    wooly.iteration_barrier
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Wooly_WarpSyncOp : Wooly_Op<"warp_sync", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "warp barrier (`bar.warp.sync`)";
  let description = [{
    Waits until every lane named in `mask` has executed a `bar.warp.sync`
    with the same mask, and orders their memory accesses.

    ```mlir
    wooly.warp_sync %mask
    ```
  }];
  let arguments = (ins I32:$mask);
  let assemblyFormat = "$mask attr-dict";
}

def Wooly_BitcastOp : Wooly_Op<"bitcast", [Pure]> {
  let summary = "reinterpret bits between types of equal width";
  let description = [{
    Reinterprets the bits of `input` as `result`'s type, for the cases that
    `arith.bitcast` cannot express (e.g. `i32` to `vector<2xf16>`).

    ```mlir
    %h = wooly.bitcast %r : i32 -> vector<2xf16>
    ```
  }];
  let arguments = (ins AnyType:$input);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Wooly_BarRedOp : Wooly_Op<"bar_red", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "CTA barrier with a reduction over a predicate (`bar.red`)";
  let description = [{
    A barrier that also reduces `pred` over the participating threads:
    `popc` counts true predicates (`i32`), `and`/`or` combine them (`i1`).
    `aligned` (PTX `bar.red`, `barrier.red.aligned`): every thread of a
    warp executes the same instruction; without it (`barrier.red`) the
    threads of a warp may arrive from different instructions.

    ```mlir
    %n = wooly.bar_red popc %c0, %p aligned : i32
    ```
  }];
  let arguments = (ins Wooly_ReduxKind:$op, I32:$id, Optional<I32>:$count,
                       I1:$pred, UnitAttr:$aligned);
  let results = (outs AnyTypeOf<[I1, I32]>:$result);
  let assemblyFormat = [{
    $op $id `,` $pred (`count` $count^)? (`aligned` $aligned^)? attr-dict `:`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Warp-level operations
//===----------------------------------------------------------------------===//
//
// A warp collective's result depends on which lanes execute that instance
// with it, not only on its operands: two `shfl`s with the same operands in
// different places of a divergent program are not interchangeable, an unused
// one still pairs with the other lanes' (sm_70 lets different instructions
// meet), and `activemask` changes as lanes diverge. They read and write
// memory so that they are never merged, removed, hoisted or moved across a
// memory access (`bar.warp.sync` orders memory too). The `.aligned` matrix
// ops (`mma_sync`, `wmma_mma`) are executed by the whole warp as one and
// stay pure; the matrix loads and stores are collectives too.

def Wooly_ShflOp : Wooly_Op<"shfl", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "exchange a 32-bit value within a warp (`shfl.sync`)";
  let description = [{
    PTX `shfl.sync.mode.b32 d|p, a, b, c, membermask` with 32-lane warp
    semantics: `b` is the lane or offset, `c` packs the clamp value (bits
    0-4) and the segment mask (bits 8-12). `valid` is true when the source
    lane is in range.

    ```mlir
    %v, %ok = wooly.shfl bfly %a, %b, %c, %mask : i32
    ```
  }];
  let arguments = (ins Wooly_ShflMode:$mode, I32:$value, I32:$lane, I32:$clamp,
                       I32:$mask);
  let results = (outs I32:$result, I1:$valid);
  let assemblyFormat = "$mode $value `,` $lane `,` $clamp `,` $mask attr-dict `:` type($result)";
}

def Wooly_VoteOp : Wooly_Op<"vote", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "warp vote (`vote.sync`)";
  let description = [{
    `all`, `any`, `uni` give an `i1`; `ballot` gives the `i32` mask of lanes
    whose predicate is true.

    ```mlir
    %b = wooly.vote ballot %p, %mask : i32
    ```
  }];
  let arguments = (ins Wooly_VoteMode:$mode, I1:$pred, I32:$mask);
  let results = (outs AnyTypeOf<[I1, I32]>:$result);
  let assemblyFormat = "$mode $pred `,` $mask attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Wooly_MatchOp : Wooly_Op<"match", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "find lanes holding the same value (`match.sync`)";
  let description = [{
    `any`: the mask of lanes in `mask` whose value equals this lane's. `all`:
    `mask` if all lanes hold the same value, else 0, and `pred` says which.

    ```mlir
    %m, %p = wooly.match all %v, %mask : i32
    ```
  }];
  let arguments = (ins Wooly_MatchMode:$mode, AnyTypeOf<[I32, I64]>:$value,
                       I32:$mask);
  let results = (outs I32:$result, I1:$pred);
  let assemblyFormat = "$mode $value `,` $mask attr-dict `:` type($value)";
}

def Wooly_ReduxOp : Wooly_Op<"redux", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "warp-wide integer reduction (`redux.sync`)";
  let description = [{
    Reduces a 32-bit integer over the lanes in `mask`.

    ```mlir
    %s = wooly.redux add %v, %mask : i32
    ```
  }];
  let arguments = (ins Wooly_ReduxKind:$op, I32:$value, I32:$mask);
  let results = (outs I32:$result);
  let assemblyFormat = "$op $value `,` $mask attr-dict `:` type($result)";
}

def Wooly_ActiveMaskOp : Wooly_Op<"activemask", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "mask of the active lanes of the warp (`activemask`)";
  let description = [{
    The mask of the lanes of the executing warp that are active (not exited
    and not diverged away) at this point, bit `i` for lane `i`.

    ```mlir
    %m = wooly.activemask : i32
    ```
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Floating point
//===----------------------------------------------------------------------===//

class Wooly_FloatBinaryOp<string mnemonic, string what>
    : Wooly_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "floating-point " # what # " with PTX modifiers";
  let description = [{
    PTX `}] # mnemonic # [{` with an explicit rounding mode (absent: the
    default `.rn`, which the compiler may contract into an FMA), `.ftz`
    (subnormal inputs and results flushed to sign-preserving zero) and
    `.sat` (result clamped to [0, 1], NaN to 0). Plain round-to-nearest
    forms without `ftz`/`sat` are imported as `arith` ops instead.

    ```mlir
    %r = wooly.}] # mnemonic # [{ %a, %b rz ftz : f32
    ```
  }];
  let arguments = (ins Wooly_FloatLike:$lhs, Wooly_FloatLike:$rhs,
                       OptionalAttr<Wooly_RoundingMode>:$rnd, UnitAttr:$ftz,
                       UnitAttr:$sat);
  let results = (outs Wooly_FloatLike:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs ($rnd^)? (`ftz` $ftz^)? (`sat` $sat^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Wooly_FAddOp : Wooly_FloatBinaryOp<"fadd", "addition">;
def Wooly_FSubOp : Wooly_FloatBinaryOp<"fsub", "subtraction">;
def Wooly_FMulOp : Wooly_FloatBinaryOp<"fmul", "multiplication">;

def Wooly_FmaOp : Wooly_Op<"fma", [Pure, SameOperandsAndResultType]> {
  let summary = "fused multiply-add with PTX modifiers (`fma`, `mad.f`)";
  let description = [{
    `a * b + c` rounded once with `rnd`; `ftz`, `sat` and `relu` (negative
    results become +0) as in PTX.

    ```mlir
    %r = wooly.fma %a, %b, %c rn ftz sat : f32
    ```
  }];
  let arguments = (ins Wooly_FloatLike:$a, Wooly_FloatLike:$b, Wooly_FloatLike:$c,
                       Wooly_RoundingMode:$rnd, UnitAttr:$ftz, UnitAttr:$sat,
                       UnitAttr:$relu);
  let results = (outs Wooly_FloatLike:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $c $rnd (`ftz` $ftz^)? (`sat` $sat^)? (`relu` $relu^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Wooly_FDivOp : Wooly_Op<"fdiv", [Pure, SameOperandsAndResultType]> {
  let summary = "floating-point division (`div.approx`, `div.full`, `div.rn`)";
  let description = [{
    Exactly one of: a rounding mode (IEEE division), `approx` (PTX
    `div.approx.f32`: `a * rcp.approx(b)`, max error 2 ulp), or `full` (PTX
    `div.full.f32`: max error 2 ulp over the full range).

    ```mlir
    %q = wooly.fdiv %a, %b approx ftz : f32
    ```
  }];
  let arguments = (ins Wooly_FloatLike:$lhs, Wooly_FloatLike:$rhs,
                       OptionalAttr<Wooly_RoundingMode>:$rnd, UnitAttr:$approx,
                       UnitAttr:$full, UnitAttr:$ftz);
  let results = (outs Wooly_FloatLike:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs ($rnd^)? (`approx` $approx^)? (`full` $full^)? (`ftz` $ftz^)?
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

class Wooly_FloatRoundedUnaryOp<string mnemonic, string what>
    : Wooly_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = what # " with PTX modifiers";
  let description = [{
    Exactly one of a rounding mode (correctly rounded) or `approx` (the PTX
    `.approx` form, within the ISA's stated error); `ftz` flushes subnormal
    inputs and results.

    ```mlir
    %r = wooly.}] # mnemonic # [{ %a rn ftz : f32
    ```
  }];
  let arguments = (ins Wooly_FloatLike:$input,
                       OptionalAttr<Wooly_RoundingMode>:$rnd, UnitAttr:$approx,
                       UnitAttr:$ftz);
  let results = (outs Wooly_FloatLike:$result);
  let assemblyFormat = [{
    $input ($rnd^)? (`approx` $approx^)? (`ftz` $ftz^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Wooly_FSqrtOp : Wooly_FloatRoundedUnaryOp<"fsqrt", "square root (`sqrt`)">;
def Wooly_FRcpOp : Wooly_FloatRoundedUnaryOp<"frcp", "reciprocal (`rcp`)">;

def Wooly_FApproxOp : Wooly_Op<"fapprox", [Pure, SameOperandsAndResultType]> {
  let summary = "approximate transcendental (`sin cos lg2 ex2 rsqrt tanh .approx`)";
  let description = [{
    The PTX `.approx` functions, within the error bounds the PTX ISA states
    for each; `ftz` flushes subnormal inputs and results.

    ```mlir
    %s = wooly.fapprox sin %x ftz : f32
    ```
  }];
  let arguments = (ins Wooly_ApproxFn:$fn, Wooly_FloatLike:$input, UnitAttr:$ftz);
  let results = (outs Wooly_FloatLike:$result);
  let assemblyFormat = "$fn $input (`ftz` $ftz^)? attr-dict `:` type($result)";
}

def Wooly_FMinOp : Wooly_Op<"fmin", [Pure, SameOperandsAndResultType]> {
  let summary = "floating-point minimum with PTX NaN rules (`min.f`)";
  let description = [{
    Without `nan`: if one input is NaN the other is returned (NaN only if
    both are). With `nan`: NaN if either input is NaN. `-0.0` is less than
    `+0.0`. `ftz` flushes subnormal inputs. `xorsign_abs` implements
    `.xorsign.abs`.

    ```mlir
    %m = wooly.fmin %a, %b nan : f16
    ```
  }];
  let arguments = (ins Wooly_FloatLike:$lhs, Wooly_FloatLike:$rhs, UnitAttr:$nan,
                       UnitAttr:$ftz, UnitAttr:$xorsign_abs);
  let results = (outs Wooly_FloatLike:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`nan` $nan^)? (`ftz` $ftz^)? (`xorsign_abs` $xorsign_abs^)? attr-dict `:` type($result)
  }];
}

def Wooly_FMaxOp : Wooly_Op<"fmax", [Pure, SameOperandsAndResultType]> {
  let summary = "floating-point maximum with PTX NaN rules (`max.f`)";
  let description = [{
    As `wooly.fmin`, for the maximum; `+0.0` is greater than `-0.0`.

    ```mlir
    %m = wooly.fmax %a, %b : f32
    ```
  }];
  let arguments = (ins Wooly_FloatLike:$lhs, Wooly_FloatLike:$rhs, UnitAttr:$nan,
                       UnitAttr:$ftz, UnitAttr:$xorsign_abs);
  let results = (outs Wooly_FloatLike:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`nan` $nan^)? (`ftz` $ftz^)? (`xorsign_abs` $xorsign_abs^)? attr-dict `:` type($result)
  }];
}

def Wooly_FlushOp : Wooly_Op<"flush", [Pure, SameOperandsAndResultType]> {
  let summary = "flush a subnormal to sign-preserving zero (`.ftz` on inputs)";
  let description = [{
    Returns `±0.0` for a subnormal input (keeping its sign), the input
    otherwise. Used for the `.ftz` forms of comparisons, `min`/`max`, `abs`,
    `neg` and conversions.

    ```mlir
    %f = wooly.flush %x : f32
    ```
  }];
  let arguments = (ins Wooly_FloatLike:$input);
  let results = (outs Wooly_FloatLike:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Wooly_CvtOp : Wooly_Op<"cvt", [Pure]> {
  let summary = "conversion between PTX types (`cvt`)";
  let description = [{
    Converts from `src_type` to `dst_type` (PTX types, which keep the
    signedness the MLIR types lack), with the PTX rounding (`rn rz rm rp` for
    float results, `rni rzi rmi rpi` for integer results, `rna`, `rs`),
    `sat` (clamp to the destination range; NaN to 0 for integers; [0,1] for
    floats), `ftz`, `relu` and `satfinite`. Float-to-integer conversions
    saturate as PTX defines. Packed forms take two inputs: `cvt.rn.f16x2.f32
    d, a, b` puts `a` in the upper half. fp8 types are `e4m3`, `e5m2` and
    their `x2` pairs (as `i16`).

    ```mlir
    %i = wooly.cvt %f rzi sat : f32 to s32 : f32 -> i32
    %h = wooly.cvt %a, %b rn : f32 to f16x2 : f32, f32 -> vector<2xf16>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, Wooly_ScalarType:$src_type,
                       Wooly_ScalarType:$dst_type,
                       OptionalAttr<Wooly_RoundingMode>:$rnd, UnitAttr:$ftz,
                       UnitAttr:$sat, UnitAttr:$relu, UnitAttr:$satfinite);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $inputs ($rnd^)? (`ftz` $ftz^)? (`sat` $sat^)? (`relu` $relu^)? (`satfinite` $satfinite^)?
    `:` $src_type `to` $dst_type attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Integer
//===----------------------------------------------------------------------===//

class Wooly_IntBinaryOp<string mnemonic, string what, string semantics>
    : Wooly_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = what;
  let description = semantics # [{

    ```mlir
    %r = wooly.}] # mnemonic # [{ s %a, %b : i32
    ```
  }];
  let arguments = (ins Wooly_Signedness:$sign, Wooly_Int:$lhs, Wooly_Int:$rhs);
  let results = (outs Wooly_Int:$result);
  let assemblyFormat = "$sign $lhs `,` $rhs attr-dict `:` type($result)";
}

def Wooly_DivOp : Wooly_IntBinaryOp<"div", "integer division (`div.s`, `div.u`)", [{
    Truncating division, defined for every input (PTX leaves some results
    unspecified; Wooly fixes them to what NVIDIA hardware returns): `x / 0`
    is all ones (`-1`), and signed `MIN / -1` is `MIN`.
  }]>;
def Wooly_RemOp : Wooly_IntBinaryOp<"rem", "integer remainder (`rem.s`, `rem.u`)", [{
    Remainder with the sign of the dividend, defined for every input: `x rem
    0` is `x`, and signed `MIN rem -1` is 0.
  }]>;
def Wooly_ShrOp : Wooly_IntBinaryOp<"shr", "right shift with PTX clamping (`shr`)", [{
    Shifts right by the unsigned amount `rhs`; amounts at or above the bit
    width give 0 (`u`) or the sign fill (`s`), as in PTX.
  }]>;

def Wooly_ShlOp : Wooly_Op<"shl", [Pure, SameOperandsAndResultType]> {
  let summary = "left shift with PTX clamping (`shl`)";
  let description = [{
    Shifts left by the unsigned amount `rhs`; amounts at or above the bit
    width give 0, as in PTX (`arith.shli` would be poison).

    ```mlir
    %r = wooly.shl %a, %n : i32
    ```
  }];
  let arguments = (ins Wooly_Int:$lhs, Wooly_Int:$rhs);
  let results = (outs Wooly_Int:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Wooly_BfeOp : Wooly_Op<"bfe", [Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "bit-field extract (`bfe`)";
  let description = [{
    Extracts `len` bits starting at `pos` (each taken mod 256), zero- (`u`) or
    sign-extended (`s`, the sign bit being the field's last bit, or the
    value's top bit when the field extends past it), as PTX specifies.

    ```mlir
    %r = wooly.bfe s %a, %pos, %len : i32
    ```
  }];
  let arguments = (ins Wooly_Signedness:$sign, Wooly_Int:$value, I32:$pos, I32:$len);
  let results = (outs Wooly_Int:$result);
  let assemblyFormat = "$sign $value `,` $pos `,` $len attr-dict `:` type($result)";
}

def Wooly_BfiOp : Wooly_Op<"bfi", [Pure, AllTypesMatch<["insert", "base", "result"]>]> {
  let summary = "bit-field insert (`bfi`)";
  let description = [{
    Inserts the low `len` bits of `insert` into `base` at `pos` (each taken
    mod 256; nothing is inserted when `len` is 0 or `pos` is past the width).

    ```mlir
    %r = wooly.bfi %a, %b, %pos, %len : i32
    ```
  }];
  let arguments = (ins Wooly_Int:$insert, Wooly_Int:$base, I32:$pos, I32:$len);
  let results = (outs Wooly_Int:$result);
  let assemblyFormat = "$insert `,` $base `,` $pos `,` $len attr-dict `:` type($result)";
}

def Wooly_PrmtOp : Wooly_Op<"prmt", [Pure]> {
  let summary = "byte permute (`prmt.b32`)";
  let description = [{
    Selects four bytes from the eight bytes of `{b, a}` by the selector `c`
    (generic mode: four 4-bit selectors, bit 3 replicating the sign bit) or
    by one of the fixed modes `f4e b4e rc8 ecl ecr rc16`.

    ```mlir
    %r = wooly.prmt generic %a, %b, %c : i32
    ```
  }];
  let arguments = (ins Wooly_PrmtMode:$mode, I32:$a, I32:$b, I32:$c);
  let results = (outs I32:$result);
  let assemblyFormat = "$mode $a `,` $b `,` $c attr-dict `:` type($result)";
}

def Wooly_Lop3Op : Wooly_Op<"lop3", [Pure, SameOperandsAndResultType]> {
  let summary = "arbitrary three-input logic (`lop3.b32`)";
  let description = [{
    Bitwise function of `a`, `b`, `c` given by the 8-bit truth table `lut`
    (bit `(a<<2)|(b<<1)|c` of `lut` is the output for those input bits).

    ```mlir
    %r = wooly.lop3 %a, %b, %c lut 150 : i32
    ```
  }];
  let arguments = (ins I32:$a, I32:$b, I32:$c, I32Attr:$lut);
  let results = (outs I32:$result);
  let assemblyFormat = "$a `,` $b `,` $c `lut` $lut attr-dict `:` type($result)";
}

def Wooly_BrevOp : Wooly_Op<"brev", [Pure, SameOperandsAndResultType]> {
  let summary = "bit reverse (`brev`)";
  let description = [{
    Reverses the order of the bits of the operand (bit 0 becomes the top bit).

    ```mlir
    %r = wooly.brev %a : i32
    ```
  }];
  let arguments = (ins Wooly_Int:$input);
  let results = (outs Wooly_Int:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Wooly_BfindOp : Wooly_Op<"bfind", [Pure]> {
  let summary = "find most significant non-sign bit (`bfind`)";
  let description = [{
    The bit position of the most significant 1 (`u`) or non-sign bit (`s`),
    or `0xffffffff` if there is none; `shiftamt` returns the left-shift
    amount that would normalise the value instead.

    ```mlir
    %r = wooly.bfind u %a shiftamt : i64
    ```
  }];
  let arguments = (ins Wooly_Signedness:$sign, Wooly_Int:$input, UnitAttr:$shiftamt);
  let results = (outs I32:$result);
  let assemblyFormat = "$sign $input (`shiftamt` $shiftamt^)? attr-dict `:` type($input)";
}

def Wooly_BmskOp : Wooly_Op<"bmsk", [Pure]> {
  let summary = "bit-field mask (`bmsk`)";
  let description = [{
    A mask of `len` ones starting at bit `pos`; `clamp` limits `pos` and
    `len` to 32, `wrap` takes them mod 32.

    ```mlir
    %m = wooly.bmsk clamp %pos, %len : i32
    ```
  }];
  let arguments = (ins Wooly_ShiftWrap:$mode, I32:$pos, I32:$len);
  let results = (outs I32:$result);
  let assemblyFormat = "$mode $pos `,` $len attr-dict `:` type($result)";
}

def Wooly_ShfOp : Wooly_Op<"shf", [Pure]> {
  let summary = "funnel shift (`shf.l`, `shf.r`)";
  let description = [{
    Shifts the 64-bit value `{b, a}` left (`l`, result: upper 32 bits) or right
    (`r`, result: lower 32 bits) by `n`, clamped to 32 (`clamp`) or taken mod
    32 (`wrap`).

    ```mlir
    %r = wooly.shf l clamp %a, %b, %n : i32
    ```
  }];
  let arguments = (ins Wooly_ShiftDir:$dir, Wooly_ShiftWrap:$mode, I32:$a, I32:$b,
                       I32:$n);
  let results = (outs I32:$result);
  let assemblyFormat = "$dir $mode $a `,` $b `,` $n attr-dict `:` type($result)";
}

def Wooly_Mul24Op : Wooly_Op<"mul24", [Pure, SameOperandsAndResultType]> {
  let summary = "24-bit multiply (`mul24`)";
  let description = [{
    Multiplies the low 24 bits of the operands (sign- or zero-extended) and
    returns the low 32 bits (`lo`) or bits 16-47 (`hi`) of the 48-bit product.

    ```mlir
    %r = wooly.mul24 s hi %a, %b : i32
    ```
  }];
  let arguments = (ins Wooly_Signedness:$sign, Wooly_HalfSel:$half, I32:$lhs, I32:$rhs);
  let results = (outs I32:$result);
  let assemblyFormat = "$sign $half $lhs `,` $rhs attr-dict `:` type($result)";
}

def Wooly_SadOp : Wooly_Op<"sad", [Pure, SameOperandsAndResultType]> {
  let summary = "sum of absolute difference (`sad`)";
  let description = [{
    `c + |a - b|`, the difference taken as signed or unsigned.

    ```mlir
    %r = wooly.sad u %a, %b, %c : i32
    ```
  }];
  let arguments = (ins Wooly_Signedness:$sign, Wooly_Int:$a, Wooly_Int:$b, Wooly_Int:$c);
  let results = (outs Wooly_Int:$result);
  let assemblyFormat = "$sign $a `,` $b `,` $c attr-dict `:` type($result)";
}

def Wooly_Dp4aOp : Wooly_Op<"dp4a", [Pure]> {
  let summary = "four-way byte dot product with accumulate (`dp4a`)";
  let description = [{
    `c + sum(a.byte[i] * b.byte[i])`, bytes of `a` and `b` taken as signed or
    unsigned independently.

    ```mlir
    %r = wooly.dp4a s u %a, %b, %c : i32
    ```
  }];
  let arguments = (ins Wooly_Signedness:$a_sign, Wooly_Signedness:$b_sign,
                       I32:$a, I32:$b, I32:$c);
  let results = (outs I32:$result);
  let assemblyFormat = "$a_sign $b_sign $a `,` $b `,` $c attr-dict `:` type($result)";
}

def Wooly_Dp2aOp : Wooly_Op<"dp2a", [Pure]> {
  let summary = "two-way 16x8 dot product with accumulate (`dp2a`)";
  let description = [{
    `c + a.half[0] * b.byte[k] + a.half[1] * b.byte[k+1]` with `k` = 0
    (`lo`) or 2 (`hi`).

    ```mlir
    %r = wooly.dp2a u s lo %a, %b, %c : i32
    ```
  }];
  let arguments = (ins Wooly_Signedness:$a_sign, Wooly_Signedness:$b_sign,
                       Wooly_HalfSel:$half, I32:$a, I32:$b, I32:$c);
  let results = (outs I32:$result);
  let assemblyFormat = "$a_sign $b_sign $half $a `,` $b `,` $c attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Generic addressing
//===----------------------------------------------------------------------===//

def Wooly_CvtaOp : Wooly_Op<"cvta", [Pure]> {
  let summary = "convert between a state-space and a generic address (`cvta`)";
  let description = [{
    `to_generic` maps an address of `space` into the generic address space;
    `from_generic` maps a generic address that points into `space` back to
    that space's own addressing. The result is undefined (as in PTX) when a
    generic address does not point into `space`.

    ```mlir
    %g = wooly.cvta to_generic shared %s : i32 -> i64
    ```
  }];
  let arguments = (ins Wooly_CvtaDir:$dir, Wooly_StateSpace:$space, Wooly_Addr:$addr);
  let results = (outs Wooly_Addr:$result);
  let assemblyFormat = "$dir $space $addr attr-dict `:` type($addr) `->` type($result)";
}

def Wooly_IsSpacePOp : Wooly_Op<"isspacep", [Pure]> {
  let summary = "test whether a generic address lies in a state space (`isspacep`)";
  let description = [{
    True when the generic address `addr` points into `space`.

    ```mlir
    %p = wooly.isspacep shared %a : i64
    ```
  }];
  let arguments = (ins Wooly_StateSpace:$space, Wooly_Addr:$addr);
  let results = (outs I1:$result);
  let assemblyFormat = "$space $addr attr-dict `:` type($addr)";
}

//===----------------------------------------------------------------------===//
// Asynchronous copies and matrix operations
//===----------------------------------------------------------------------===//

def Wooly_CpAsyncOp : Wooly_Op<"cp_async", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "asynchronous global-to-shared copy (`cp.async.ca/cg.shared.global`)";
  let description = [{
    Copies `size` (4, 8 or 16) bytes from global `src` to shared `dst`
    asynchronously; with `src_size` only that many bytes are read and the
    rest of the destination is zero-filled. The copy completes by a later
    `wooly.cp_async_wait`.

    ```mlir
    wooly.cp_async %dst, %src, 16 cache cg : i32, i64
    ```
  }];
  let arguments = (ins Wooly_Addr:$dst, I64:$src, I32Attr:$size,
                       Optional<I32>:$src_size, OptionalAttr<Wooly_CacheOp>:$cache);
  let assemblyFormat = [{
    $dst `,` $src `,` $size (`src_size` $src_size^)? (`cache` $cache^)? attr-dict `:` type($dst) `,` type($src)
  }];
}

def Wooly_CpAsyncCommitOp : Wooly_Op<"cp_async_commit", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "close the current group of async copies (`cp.async.commit_group`)";
  let description = [{
    Groups all `wooly.cp_async` copies issued by this thread since the last
    commit; `wooly.cp_async_wait` waits on such groups.

    ```mlir
    wooly.cp_async_commit
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Wooly_CpAsyncWaitOp : Wooly_Op<"cp_async_wait", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "wait for async copies (`cp.async.wait_group N`, `wait_all`)";
  let description = [{
    Waits until at most `pending` committed groups are incomplete (`wait_all`
    is `pending = 0` after a commit).

    ```mlir
    wooly.cp_async_wait 0
    ```
  }];
  let arguments = (ins I32Attr:$pending);
  let assemblyFormat = "$pending attr-dict";
}

def Wooly_LdMatrixOp : Wooly_Op<"ldmatrix", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "warp-collective load of 8x8 b16 matrices from shared memory (`ldmatrix`)";
  let description = [{
    Loads 1, 2 or 4 8x8 matrices of 16-bit elements; each lane supplies a
    row address and receives one `i32` (two elements) per matrix; `trans`
    transposes each matrix.

    ```mlir
    %a, %b, %c, %d = wooly.ldmatrix %p trans : i32 -> i32, i32, i32, i32
    ```
  }];
  let arguments = (ins Wooly_Addr:$addr, UnitAttr:$trans);
  let results = (outs Variadic<I32>:$results);
  let assemblyFormat = "$addr (`trans` $trans^)? attr-dict `:` type($addr) `->` type($results)";
  let hasVerifier = 1;
}

def Wooly_MmaOp : Wooly_Op<"mma_sync", [Pure, AttrSizedOperandSegments]> {
  let summary = "warp-level matrix multiply-accumulate (`mma.sync.aligned`)";
  let description = [{
    `D = A * B + C` for one warp, with the fragment distribution of the PTX
    ISA for `shape` (e.g. `m16n8k16`) and the element types `d_type a_type
    b_type c_type`. Fragments are the packed registers PTX uses. Single-bit
    (`b1`) products take `bit_op` (`popc xor` / `popc and`): each element
    of D is C plus the population count of the xor (and) of a row of A and
    a column of B.

    ```mlir
    %d0, %d1, %d2, %d3 = wooly.mma_sync "m16n8k16" row col f32 bf16 bf16 f32
        (%a0, %a1, %a2, %a3) (%b0, %b1) (%c0, %c1, %c2, %c3)
        : (i32, i32, i32, i32) (i32, i32) (f32, f32, f32, f32) -> f32, f32, f32, f32
    ```
  }];
  let arguments = (ins StrAttr:$shape, Wooly_Layout:$layout_a, Wooly_Layout:$layout_b,
                       Wooly_ScalarType:$d_type, Wooly_ScalarType:$a_type,
                       Wooly_ScalarType:$b_type, Wooly_ScalarType:$c_type,
                       Variadic<AnyType>:$a, Variadic<AnyType>:$b,
                       Variadic<AnyType>:$c, UnitAttr:$satfinite,
                       OptionalAttr<Wooly_MmaBitOp>:$bit_op);
  let results = (outs Variadic<AnyType>:$d);
  let assemblyFormat = [{
    $shape $layout_a $layout_b $d_type $a_type $b_type $c_type (`satfinite` $satfinite^)?
    (`popc` $bit_op^)?
    ` ` `(` $a `)` `(` $b `)` `(` $c `)` attr-dict
    `:` `(` type($a) `)` `(` type($b) `)` `(` type($c) `)` `->` type($d)
  }];
}

def Wooly_WmmaLoadOp : Wooly_Op<"wmma_load", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "load a wmma fragment (`wmma.load.{a,b,c}.sync.aligned`)";
  let description = [{
    Warp-collective load of the `role` fragment of shape `shape` with element
    type `type` and `layout`, from `addr` in `space` with row stride `stride`
    elements.

    ```mlir
    %f:8 = wooly.wmma_load a row "m16n16k16" f16 global %p, %s : i64 -> i32, ...
    ```
  }];
  let arguments = (ins Wooly_MatrixRole:$role, Wooly_Layout:$layout, StrAttr:$shape,
                       Wooly_ScalarType:$type, Wooly_StateSpace:$space,
                       Wooly_Addr:$addr, Optional<I32>:$stride);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $role $layout $shape $type $space $addr (`,` $stride^)? attr-dict `:` type($addr) `->` type($results)
  }];
}

def Wooly_WmmaStoreOp : Wooly_Op<"wmma_store", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "store a wmma accumulator fragment (`wmma.store.d.sync.aligned`)";
  let description = [{
    Warp-collective store of the accumulator fragment `values` (element type
    `type`, `layout`, `shape`) to `addr` in `space` with row stride `stride`
    elements.

    ```mlir
    wooly.wmma_store row "m16n16k16" f32 global %p, %s (%d0, ...) : i64, f32, ...
    ```
  }];
  let arguments = (ins Wooly_Layout:$layout, StrAttr:$shape,
                       Wooly_ScalarType:$type, Wooly_StateSpace:$space,
                       Wooly_Addr:$addr, Optional<I32>:$stride, Variadic<AnyType>:$values);
  let assemblyFormat = [{
    $layout $shape $type $space $addr (`,` $stride^)? ` ` `(` $values `)` attr-dict `:` type($addr) `,` type($values)
  }];
}

def Wooly_WmmaMmaOp : Wooly_Op<"wmma_mma", [Pure, AttrSizedOperandSegments]> {
  let summary = "wmma matrix multiply-accumulate (`wmma.mma.sync.aligned`)";
  let description = [{
    `D = A * B + C` on wmma fragments of `shape`, with the element types
    `d_type a_type b_type c_type` (PTX's short form `.f32.f32` means f16
    inputs) and `satfinite` as in PTX.

    ```mlir
    %d:8 = wooly.wmma_mma row col "m16n16k16" f32 f16 f16 f32 (...) (...) (...) : ...
    ```
  }];
  let arguments = (ins Wooly_Layout:$layout_a, Wooly_Layout:$layout_b, StrAttr:$shape,
                       Wooly_ScalarType:$d_type, Wooly_ScalarType:$a_type,
                       Wooly_ScalarType:$b_type, Wooly_ScalarType:$c_type,
                       Variadic<AnyType>:$a, Variadic<AnyType>:$b, Variadic<AnyType>:$c,
                       UnitAttr:$satfinite, OptionalAttr<Wooly_MmaBitOp>:$bit_op);
  let results = (outs Variadic<AnyType>:$d);
  let assemblyFormat = [{
    $layout_a $layout_b $shape $d_type $a_type $b_type $c_type (`satfinite` $satfinite^)?
    (`popc` $bit_op^)?
    ` ` `(` $a `)` `(` $b `)` `(` $c `)` attr-dict
    `:` `(` type($a) `)` `(` type($b) `)` `(` type($c) `)` `->` type($d)
  }];
}

//===----------------------------------------------------------------------===//
// Hopper: mbarriers, bulk asynchronous copies, proxy fences, elect, stmatrix
//===----------------------------------------------------------------------===//

def Wooly_MbarrierInitOp : Wooly_Op<"mbarrier_init", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "initialise an mbarrier object (`mbarrier.init`)";
  let description = [{
    Initialises the 8-byte mbarrier object at shared address `addr`: phase
    0, expected and pending arrival counts `count` (1 to 2^20 - 1), no
    transactions pending.

    ```mlir
    wooly.mbarrier_init %bar, %count : i32
    ```
  }];
  let arguments = (ins Wooly_Addr:$addr, I32:$count);
  let assemblyFormat = "$addr `,` $count attr-dict `:` type($addr)";
}

def Wooly_MbarrierInvalOp : Wooly_Op<"mbarrier_inval", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "invalidate an mbarrier object (`mbarrier.inval`)";
  let description = [{
    Invalidates the mbarrier object at shared address `addr`, so that its
    memory may be used for something else.

    ```mlir
    wooly.mbarrier_inval %bar : i32
    ```
  }];
  let arguments = (ins Wooly_Addr:$addr);
  let assemblyFormat = "$addr attr-dict `:` type($addr)";
}

def Wooly_MbarrierUpdateOp : Wooly_Op<"mbarrier_update", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "arrive on an mbarrier, or change its transaction count";
  let description = [{
    On the mbarrier object at `addr` (in `space`: `shared`, or
    `shared_cluster` for another CTA's): `expect_tx` adds `tx` bytes to the
    current phase's transaction count, `complete_tx` subtracts them, and
    `arrive`/`arrive_drop` first add `tx` (`.expect_tx`), then arrive
    `count` times (`arrive_drop` also lowers the expected count of later
    phases by `count`). The phase completes when no arrival and no
    transaction byte is pending: the phase flips and the pending count is
    reset to the expected count. `cp_async_arrive` (`cp.async.mbarrier.
    arrive`) arrives once when the thread's earlier `wooly.cp_async` copies
    have completed, after adding one pending arrival (`_noinc`: without).
    `result` is the state before the arrival
    (`mbarrier.arrive`'s destination), for `wooly.mbarrier_wait`.
    `sem`/`scope` are PTX's (`.release`/`.relaxed`, `.cta`/`.cluster`).

    ```mlir
    %st = wooly.mbarrier_update arrive shared %bar, %c1, %bytes : i32 -> i64
    ```
  }];
  let arguments = (ins Wooly_MbarrierUpdate:$kind, Wooly_StateSpace:$space,
                       Wooly_Addr:$addr, I32:$count, I32:$tx,
                       OptionalAttr<Wooly_MemOrder>:$sem,
                       OptionalAttr<Wooly_MemScope>:$scope);
  let results = (outs I64:$state);
  let assemblyFormat = [{
    $kind $space ($sem^)? ($scope^)? $addr `,` $count `,` $tx attr-dict `:` type($addr) `->` type($state)
  }];
}

def Wooly_MbarrierWaitOp : Wooly_Op<"mbarrier_wait", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "test for the completion of an mbarrier phase (`mbarrier.test_wait`, `try_wait`)";
  let description = [{
    True when the phase of the mbarrier at shared address `addr` that
    `phase` names has completed: with `parity`, `phase` (i32) is the parity
    of that phase; without, it is the state an arrive returned. `try`
    (`try_wait`) may suspend the thread until the phase completes;
    `test_wait` never waits. `timeout` is try_wait's suspend-time hint.

    ```mlir
    %done = wooly.mbarrier_wait try parity %bar, %p : i32, i32
    ```
  }];
  let arguments = (ins Wooly_Addr:$addr, AnyTypeOf<[I32, I64]>:$phase,
                       UnitAttr:$blocking, UnitAttr:$parity,
                       OptionalAttr<Wooly_MemOrder>:$sem,
                       OptionalAttr<Wooly_MemScope>:$scope);
  let results = (outs I1:$done);
  let assemblyFormat = [{
    (`try` $blocking^)? (`parity` $parity^)? ($sem^)? ($scope^)? $addr `,` $phase attr-dict `:` type($addr) `,` type($phase)
  }];
}

def Wooly_MbarrierPendingCountOp : Wooly_Op<"mbarrier_pending_count", [Pure]> {
  let summary = "pending arrivals of an mbarrier state (`mbarrier.pending_count`)";
  let description = [{
    The number of arrivals still pending in the phase of `state`, an
    opaque state that `wooly.mbarrier_update arrive` returned.

    ```mlir
    %n = wooly.mbarrier_pending_count %st
    ```
  }];
  let arguments = (ins I64:$state);
  let results = (outs I32:$count);
  let assemblyFormat = "$state attr-dict";
}

def Wooly_BulkCopyOp : Wooly_Op<"bulk_copy", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "bulk asynchronous copy or reduction (`cp.async.bulk`, `cp.reduce.async.bulk`)";
  let description = [{
    Copies `size` bytes (a multiple of 16; addresses 16-byte aligned) from
    `src` in `src_space` to `dst` in `dst_space` (global to shared::cluster,
    shared::cta to global, shared::cta to shared::cluster), asynchronously.
    With `mbar`, the copy completes as a `complete_tx` of `size` bytes on
    that mbarrier (shared address); otherwise it belongs to the thread's
    bulk async-group (`wooly.bulk_commit`, `wooly.bulk_wait`). With
    `redop`, each element of type `red_type` of the destination becomes
    `dst op src` (`cp.reduce.async.bulk`), atomically per element.

    ```mlir
    wooly.bulk_copy shared_cluster global %dst, %src, %n mbar %bar : i32, i64, i32
    ```
  }];
  let arguments = (ins Wooly_StateSpace:$dst_space, Wooly_StateSpace:$src_space,
                       Wooly_Addr:$dst, Wooly_Addr:$src, I32:$size,
                       Optional<Wooly_Addr>:$mbar,
                       OptionalAttr<Wooly_AtomicOp>:$redop,
                       OptionalAttr<Wooly_ScalarType>:$red_type);
  let assemblyFormat = [{
    $dst_space $src_space $dst `,` $src `,` $size (`mbar` $mbar^)? (`reduce` $redop^)? (`type` $red_type^)?
    attr-dict `:` type($dst) `,` type($src) (`,` type($mbar)^)?
  }];
  let hasVerifier = 1;
}

def Wooly_BulkCommitOp : Wooly_Op<"bulk_commit", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "close the bulk async-group (`cp.async.bulk.commit_group`)";
  let description = [{
    Groups the thread's bulk copies without an mbarrier issued since the
    last commit.

    ```mlir
    wooly.bulk_commit
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Wooly_BulkWaitOp : Wooly_Op<"bulk_wait", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "wait for bulk async-groups (`cp.async.bulk.wait_group`)";
  let description = [{
    Waits until at most `pending` of the thread's committed bulk groups are
    incomplete (`read`: only until their sources have been read).

    ```mlir
    wooly.bulk_wait 0 read
    ```
  }];
  let arguments = (ins I32Attr:$pending, UnitAttr:$read);
  let assemblyFormat = "$pending (`read` $read^)? attr-dict";
}

def Wooly_AsyncFenceOp : Wooly_Op<"async_fence", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "proxy and mbarrier-init fences (`fence.proxy.async`, `fence.mbarrier_init`)";
  let description = [{
    The PTX fence `fence` (e.g. `fence.proxy.async.shared::cta`,
    `fence.mbarrier_init.release.cluster`): orders the generic proxy's
    accesses with the async proxy's (bulk copies), or mbarrier
    initialisations with later accesses of the cluster.

    ```mlir
    wooly.async_fence "fence.proxy.async.shared::cta"
    ```
  }];
  let arguments = (ins StrAttr:$fence);
  let assemblyFormat = "$fence attr-dict";
}

def Wooly_GridDepControlOp : Wooly_Op<"griddepcontrol", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "programmatic dependent launch (`griddepcontrol`)";
  let description = [{
    `launch_dependents` allows the launch's dependent grids to start;
    `wait` waits until the grids it depends on have completed and their
    memory operations are visible. Without dependent grids (every launch of
    the CPU backend), both have no effect.

    ```mlir
    wooly.griddepcontrol "wait"
    ```
  }];
  let arguments = (ins StrAttr:$kind);
  let assemblyFormat = "$kind attr-dict";
}

def Wooly_ElectOp : Wooly_Op<"elect", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "elect one lane of a warp (`elect.sync`)";
  let description = [{
    Warp collective over the lanes of `mask`: `leader` is the lowest lane of
    the mask that executes it, `is_leader` is true in that lane only.

    ```mlir
    %leader, %p = wooly.elect %mask
    ```
  }];
  let arguments = (ins I32:$mask);
  let results = (outs I32:$leader, I1:$is_leader);
  let assemblyFormat = "$mask attr-dict";
}

def Wooly_StMatrixOp : Wooly_Op<"stmatrix", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "warp-collective store of 8x8 b16 matrices to shared memory (`stmatrix`)";
  let description = [{
    The inverse of `wooly.ldmatrix`: stores 1, 2 or 4 8x8 matrices of
    16-bit elements; each lane supplies a row address (lanes 8i..8i+7 those
    of matrix i) and one `i32` (two elements) per matrix; `trans` stores
    each matrix transposed.

    ```mlir
    wooly.stmatrix %p, %a, %b trans : i32, i32, i32
    ```
  }];
  let arguments = (ins Wooly_Addr:$addr, Variadic<I32>:$values, UnitAttr:$trans);
  let assemblyFormat = "$addr `,` $values (`trans` $trans^)? attr-dict `:` type($addr) `,` type($values)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Textures and surfaces
//===----------------------------------------------------------------------===//

def Wooly_TexOp : Wooly_Op<"tex", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead]>]> {
  let summary = "texture fetch through a texture object (`tex`)";
  let description = [{
    Samples the texture object `handle` (a 64-bit handle, CUDA's
    `cudaTextureObject_t`) of `geometry` at `coords` (`c_type` f32 or s32;
    one per dimension, and a cube's three), in the layer `layer` of a
    layered texture, with the texture's own addressing, filtering and read
    mode. `lod` (PTX `.level`) or the gradients `grad_x`/`grad_y` (`.grad`)
    select the mipmap level. The four results are the texel's components
    as `d_type` (f32, s32 or u32).

    ```mlir
    %r:4 = wooly.tex dim2 f32 f32 %h (%x, %y) : f32, f32 -> f32, f32, f32, f32
    ```
  }];
  let arguments = (ins Wooly_TexGeometry:$geometry, Wooly_ScalarType:$d_type,
                       Wooly_ScalarType:$c_type, I64:$handle,
                       Optional<I32>:$layer, Variadic<AnyType>:$coords,
                       Optional<F32>:$lod, Variadic<F32>:$grad_x,
                       Variadic<F32>:$grad_y);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $geometry $d_type $c_type $handle (`layer` $layer^)? ` ` `(` $coords `)`
    (`lod` $lod^)? (`grad` `(` $grad_x^ `)` `(` $grad_y `)`)?
    attr-dict `:` type($coords) `->` type($results)
  }];
  let hasVerifier = 1;
}

def Wooly_Tld4Op : Wooly_Op<"tld4", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead]>]> {
  let summary = "texture gather of one component of four texels (`tld4`)";
  let description = [{
    Gathers `component` of the four texels that bilinear filtering of the
    texture object `handle` at `(x, y)` would combine, in the order
    (i, j+1), (i+1, j+1), (i+1, j), (i, j), as `d_type`. `geometry` is
    dim2 (the default, not printed), a2d (with `layer`), cube (three
    coordinates: a direction) or acube (both).

    ```mlir
    %r:4 = wooly.tld4 r f32 %h (%x, %y) : f32, f32 -> f32, f32, f32, f32
    %c:4 = wooly.tld4 g f32 %h layer %l (%x, %y, %z) geometry acube : f32, f32, f32 -> f32, f32, f32, f32
    ```
  }];
  let arguments = (ins Wooly_TexComponent:$component, Wooly_ScalarType:$d_type,
                       I64:$handle, Optional<I32>:$layer,
                       Variadic<F32>:$coords,
                       DefaultValuedAttr<Wooly_TexGeometry,
                           "::mlir::wooly::TexGeometry::dim2">:$geometry);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $component $d_type $handle (`layer` $layer^)? ` ` `(` $coords `)`
    (`geometry` $geometry^)? attr-dict `:` type($coords) `->` type($results)
  }];
  let hasVerifier = 1;
}

def Wooly_TexQueryOp : Wooly_Op<"tex_query", [MemoryEffects<[MemRead]>]> {
  let summary = "texture or surface attribute query (`txq`, `suq`)";
  let description = [{
    Returns attribute `query` of the texture object `handle` (`surface`:
    of the surface object, PTX `suq`); `lod` is `txq.level`'s mipmap level.

    ```mlir
    %w = wooly.tex_query width %h : i32
    ```
  }];
  let arguments = (ins Wooly_TexQuery:$query, UnitAttr:$surface, I64:$handle,
                       Optional<I32>:$lod);
  let results = (outs I32:$result);
  let assemblyFormat = [{
    $query (`surface` $surface^)? $handle (`lod` $lod^)? attr-dict `:` type($result)
  }];
}

def Wooly_SuldOp : Wooly_Op<"suld", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead]>]> {
  let summary = "unformatted surface load (`suld.b`)";
  let description = [{
    Loads one element of `type` (b8, b16, b32, b64) per result from the
    surface object `handle` at `coords` (x in bytes, y and z in rows and
    slices) of layer `layer`; `clamp` says what an access outside the
    surface does (trap, clamp to the edge, read zeros).

    ```mlir
    %r:4 = wooly.suld dim2 b8 trap %h (%x, %y) : i32, i32 -> i16, i16, i16, i16
    ```
  }];
  let arguments = (ins Wooly_TexGeometry:$geometry, Wooly_ScalarType:$type,
                       Wooly_SurfClamp:$clamp, I64:$handle,
                       Optional<I32>:$layer, Variadic<I32>:$coords);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $geometry $type $clamp $handle (`layer` $layer^)? ` ` `(` $coords `)`
    attr-dict `:` type($coords) `->` type($results)
  }];
}

def Wooly_SustOp : Wooly_Op<"sust", [AttrSizedOperandSegments,
    MemoryEffects<[MemWrite]>]> {
  let summary = "surface store (`sust.b`, `sust.p`)";
  let description = [{
    Stores `values` to the surface object `handle` at `coords` (as
    `wooly.suld`): unformatted elements of `type`, or with `formatted`
    (`sust.p`) 32-bit values converted to the surface's channel format.

    ```mlir
    wooly.sust dim2 b32 trap %h (%x, %y) (%v) : (i32, i32) (i32)
    ```
  }];
  let arguments = (ins Wooly_TexGeometry:$geometry, Wooly_ScalarType:$type,
                       Wooly_SurfClamp:$clamp, UnitAttr:$formatted,
                       I64:$handle, Optional<I32>:$layer,
                       Variadic<I32>:$coords, Variadic<AnyType>:$values);
  let assemblyFormat = [{
    $geometry $type $clamp (`formatted` $formatted^)? $handle (`layer` $layer^)?
    ` ` `(` $coords `)` `(` $values `)` attr-dict
    `:` `(` type($coords) `)` `(` type($values) `)`
  }];
}

def Wooly_SuredOp : Wooly_Op<"sured", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "atomic reduction into a surface (`sured.b`)";
  let description = [{
    Atomically combines `value` into the element of `type` at `coords` of
    the surface object `handle` with `op` (add, min, max, and, or).

    ```mlir
    wooly.sured add u32 dim2 trap %h (%x, %y), %v : (i32, i32) i32
    ```
  }];
  let arguments = (ins Wooly_AtomicOp:$op, Wooly_ScalarType:$type,
                       Wooly_TexGeometry:$geometry, Wooly_SurfClamp:$clamp,
                       I64:$handle, Optional<I32>:$layer,
                       Variadic<I32>:$coords, AnyInteger:$value);
  let assemblyFormat = [{
    $op $type $geometry $clamp $handle (`layer` $layer^)? ` ` `(` $coords `)`
    `,` $value attr-dict `:` `(` type($coords) `)` type($value)
  }];
}

//===----------------------------------------------------------------------===//
// Miscellaneous
//===----------------------------------------------------------------------===//

def Wooly_NanosleepOp : Wooly_Op<"nanosleep"> {
  let summary = "suspend the thread for about `ns` nanoseconds (`nanosleep`)";
  let description = [{
    Suspends the thread for a duration close to `ns` nanoseconds (at most
    1 ms, as in PTX); it has no other effect.

    ```mlir
    wooly.nanosleep %t
    ```
  }];
  let arguments = (ins I32:$ns);
  let assemblyFormat = "$ns attr-dict";
}

def Wooly_PrefetchOp : Wooly_Op<"prefetch"> {
  let summary = "cache prefetch hint (`prefetch`, `prefetchu`)";
  let description = [{
    A performance hint with no semantic effect: `level` names the cache
    (`L1`, `L2`, `L2::evict_last` ...).

    ```mlir
    wooly.prefetch global "L2" %p : i64
    ```
  }];
  let arguments = (ins Wooly_StateSpace:$space, StrAttr:$level, Wooly_Addr:$addr);
  let assemblyFormat = "$space $level $addr attr-dict `:` type($addr)";
}

def Wooly_CreatePolicyOp : Wooly_Op<"createpolicy", [Pure]> {
  let summary = "create an L2 cache eviction policy (`createpolicy.fractional`)";
  let description = [{
    Returns an opaque 64-bit cache policy for `.L2::cache_hint` accesses;
    `primary`/`secondary` name the eviction priorities and `fraction` the
    share of accesses that get the primary one.

    ```mlir
    %pol = wooly.createpolicy "evict_last" "evict_unchanged" 1.0 : i64
    ```
  }];
  let arguments = (ins StrAttr:$primary, StrAttr:$secondary, F32Attr:$fraction);
  let results = (outs I64:$result);
  let assemblyFormat = "$primary $secondary $fraction attr-dict `:` type($result)";
}

#endif // WOOLY_OPS_TD
