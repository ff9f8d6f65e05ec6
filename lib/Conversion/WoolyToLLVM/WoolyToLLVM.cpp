//===- WoolyToLLVM.cpp - Lower Wooly IR for the CPU backend -----*- C++ -*-===//
//
// `convert-wooly-to-llvm`: lowers Wooly kernels to the LLVM dialect for the
// CPU SIMT runtime, as the host target of the shared lowering
// (WoolyCommon/LLVMLowering.h): this file holds only what is the host's own.
// The contract with the runtime (thread context layout, kernel entry
// signature, `__wooly_rt_*` functions, address spaces) is
// `include/Wooly/Runtime/CPU/ABI.h`.
//
// Functions: `wooly.func @f` becomes `llvm.func @__wooly_fn_f(ctx, args...)`
// returning its results (a struct when there are several); a kernel `@k`
// becomes `llvm.func @__wooly_kernel_k(ctx, params)` whose entry block loads
// the parameters from the CUDA parameter buffer. Special registers come from
// the thread context; barriers, warp collectives, `exit`, `trap` and
// `printf` call the runtime.
//
// Memory: every global/const/generic access is checked against a
// per-access-site cache of a valid address range held by the worker
// (`WoolyThreadCtx::siteCache`); a miss calls `__wooly_rt_check`, which
// refills the entry or ends the launch with an out-of-bounds error (after
// inlining, LLVM-level checks over whole loops stand in for these where
// the addresses are affine: lib/Compiler/WidenAccessChecks.cpp). Shared
// accesses are offsets into the block's shared window, checked inline
// (not those that SharedOffsets.h proves aligned and inside the static
// shared memory, which every launch has);
// `.local` and `.param` accesses are checked against the thread's live
// stack and the launch's parameter buffer. A kernel that never synchronises
// runs its block's threads in a loop (`__wooly_block_<k>`).
//
//===----------------------------------------------------------------------===//

#include "../WoolyCommon/LLVMLowering.h"
#include "WarpVector.h"
#include "Wooly/Conversion/Passes.h"
#include "Wooly/Dialect/Wooly/Analysis/KernelAnalysis.h"
#include "Wooly/Dialect/Wooly/Analysis/SharedOffsets.h"
#include "Wooly/Dialect/Wooly/Analysis/WaitLoops.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Runtime/CPU/ABI.h"
#include "Wooly/Runtime/CPU/WarpShuffle.h"

#include "mlir/Analysis/Liveness.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#include <cstddef>
#include <map>

namespace mlir::wooly {
#define GEN_PASS_DEF_CONVERTWOOLYTOLLVM
#include "Wooly/Conversion/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::common;

// The ScalarType and AtomicOp values runtime calls receive are the
// dialect's (ABI.h restates them for the runtime, which does not include
// the dialect).
#define WOOLY_SAME_VALUE(Enum, name, abi)                                      \
  static_assert(uint32_t(Enum::name) == abi, #abi " differs from the "         \
                                                  "dialect");
WOOLY_SAME_VALUE(ScalarType, b16, WOOLY_ST_b16)
WOOLY_SAME_VALUE(ScalarType, b32, WOOLY_ST_b32)
WOOLY_SAME_VALUE(ScalarType, b64, WOOLY_ST_b64)
WOOLY_SAME_VALUE(ScalarType, u8, WOOLY_ST_u8)
WOOLY_SAME_VALUE(ScalarType, u32, WOOLY_ST_u32)
WOOLY_SAME_VALUE(ScalarType, u64, WOOLY_ST_u64)
WOOLY_SAME_VALUE(ScalarType, s8, WOOLY_ST_s8)
WOOLY_SAME_VALUE(ScalarType, s32, WOOLY_ST_s32)
WOOLY_SAME_VALUE(ScalarType, s64, WOOLY_ST_s64)
WOOLY_SAME_VALUE(ScalarType, f16, WOOLY_ST_f16)
WOOLY_SAME_VALUE(ScalarType, bf16, WOOLY_ST_bf16)
WOOLY_SAME_VALUE(ScalarType, tf32, WOOLY_ST_tf32)
WOOLY_SAME_VALUE(ScalarType, f32, WOOLY_ST_f32)
WOOLY_SAME_VALUE(ScalarType, f64, WOOLY_ST_f64)
WOOLY_SAME_VALUE(ScalarType, s4, WOOLY_ST_s4)
WOOLY_SAME_VALUE(ScalarType, u4, WOOLY_ST_u4)
WOOLY_SAME_VALUE(ScalarType, e4m3, WOOLY_ST_e4m3)
WOOLY_SAME_VALUE(ScalarType, e5m2, WOOLY_ST_e5m2)
WOOLY_SAME_VALUE(ScalarType, b1, WOOLY_ST_b1)
WOOLY_SAME_VALUE(AtomicOp, add, WOOLY_AO_add)
WOOLY_SAME_VALUE(AtomicOp, fadd, WOOLY_AO_fadd)
WOOLY_SAME_VALUE(AtomicOp, umin, WOOLY_AO_umin)
WOOLY_SAME_VALUE(AtomicOp, smin, WOOLY_AO_smin)
WOOLY_SAME_VALUE(AtomicOp, fmin, WOOLY_AO_fmin)
WOOLY_SAME_VALUE(AtomicOp, umax, WOOLY_AO_umax)
WOOLY_SAME_VALUE(AtomicOp, smax, WOOLY_AO_smax)
WOOLY_SAME_VALUE(AtomicOp, fmax, WOOLY_AO_fmax)
WOOLY_SAME_VALUE(AtomicOp, inc, WOOLY_AO_inc)
WOOLY_SAME_VALUE(AtomicOp, dec, WOOLY_AO_dec)
WOOLY_SAME_VALUE(AtomicOp, and_, WOOLY_AO_and)
WOOLY_SAME_VALUE(AtomicOp, or_, WOOLY_AO_or)
WOOLY_SAME_VALUE(AtomicOp, xor_, WOOLY_AO_xor)
#undef WOOLY_SAME_VALUE

namespace {

static_assert(unsigned(kAccessRead) == WOOLY_ACCESS_READ &&
                  unsigned(kAccessWrite) == WOOLY_ACCESS_WRITE,
              "ABI.h's access flags");

//===----------------------------------------------------------------------===//
// The host's state for one lowering
//===----------------------------------------------------------------------===//

/// Bytes of shared memory reserved for the system in each block; its second
/// half is `%reserved_smem_offset_1`'s (cooperative groups' scratch, at
/// most 288 bytes for 1024 threads).
constexpr uint64_t kReservedSmemBytes = 1024;

/// What the host's hooks share: the layout of shared memory, the next
/// access-site id and the options.
struct HostState {
  bool boundsChecks = true;
  /// The scopes of runtime memory: `[context, cache]`. Kernel memory
  /// accesses never touch it, so they carry it as `noalias_scopes`, which
  /// lets LLVM keep context fields and cache entries in registers across
  /// the kernel's stores.
  ArrayAttr runtimeScope;
  /// `[context]`, the scope of accesses to the thread context and the
  /// parameter buffer, and `[cache]`, that of the access-site cache. A
  /// check's slow path (`__wooly_rt_check`) writes only its cache entry, so
  /// it carries `[context]` as `noalias_scopes`: the site cache's address,
  /// a context field, stays in a register across it (and is invariant in a
  /// loop, which WidenAccessChecks needs).
  ArrayAttr contextScope, cacheScope;
  /// Next memory-access site id (index into `WoolyThreadCtx::siteCache`).
  uint32_t nextSite = 0;
  /// Offset of each `.shared` variable in the shared window.
  llvm::StringMap<uint64_t> sharedOffsets;
  /// End of the static shared variables, and the largest alignment of the
  /// dynamic shared memory (`extern .shared x[]`).
  uint64_t sharedEnd = 0, dynamicSharedAlign = 16;
  /// Offset of the dynamic shared memory.
  uint64_t dynamicSharedOffset = 0;
  /// Offset of the reserved shared memory (`%reserved_smem_offset_*`), when
  /// the module reads where it is: after the static shared variables.
  std::optional<uint64_t> reservedSmem;
  /// The dynamic shared memory variables.
  SmallVector<GlobalOp> externShared;
  /// Symbols of the module's `.global`/`.const` variables.
  llvm::StringSet<> memoryGlobals;
  /// Functions with a body: name -> is a kernel.
  llvm::StringMap<bool> definedFunctions;
  /// Functions that (transitively) reach a barrier, a warp collective or
  /// `nanosleep`: their threads must run as fibers.
  llvm::StringSet<> needsFibers;
  /// For the kernels among them, regionSplitBlocker's answer.
  llvm::StringMap<std::string> fiberReasons;
  /// Functions (their lowered symbols) with a shared-memory atomic, which
  /// lowers to a plain load and store (emitSharedAtomic).
  llvm::StringSet<> sharedAtomics;
  /// Kernels (their lowered symbols) whose threads cannot tell in which
  /// order their code between two cuts interleaves (orderFreeKernel).
  llvm::StringSet<> orderFree;
};

std::string kernelSymbol(StringRef name) {
  return ("__wooly_kernel_" + name).str();
}
std::string functionSymbol(StringRef name) {
  return ("__wooly_fn_" + name).str();
}
std::string globalSymbol(StringRef name) { return ("__wooly_g_" + name).str(); }

//===----------------------------------------------------------------------===//
// IR-building helpers
//===----------------------------------------------------------------------===//

/// Builds the lowered code of one op; holds the rewriter and location.
struct HostEmitter : Emitter {
  HostEmitter(ConversionPatternRewriter &rw, Location loc, HostState &state)
      : Emitter{rw, loc}, rewriter(rw), state(state) {}
  /// The pattern's rewriter (`rw`, as a rewriter).
  ConversionPatternRewriter &rewriter;
  HostState &state;

  /// The thread context: first argument of the enclosing lowered function.
  Value ctx(Operation *op) {
    auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
    return fn.getBody().front().getArgument(0);
  }

  /// Marks an access to the thread context or the parameters.
  template <typename OpTy> OpTy runtime(OpTy op) {
    cast<LLVM::AliasAnalysisOpInterface>(op.getOperation())
        .setAliasScopes(state.contextScope);
    return op;
  }
  /// Marks an access to the access-site cache.
  template <typename OpTy> OpTy siteCache(OpTy op) {
    cast<LLVM::AliasAnalysisOpInterface>(op.getOperation())
        .setAliasScopes(state.cacheScope);
    return op;
  }
  /// Marks an access to kernel memory (global, shared, local, ...).
  template <typename OpTy> OpTy data(OpTy op) {
    cast<LLVM::AliasAnalysisOpInterface>(op.getOperation())
        .setNoAliasScopes(state.runtimeScope);
    return op;
  }
  Value loadField(Value ctx, size_t offset, Type t) {
    return runtime(LLVM::LoadOp::create(rw, loc, t, gep(ctx, int64_t(offset))));
  }

  /// `v` zero-extended (or truncated) to `i64`.
  Value toI64(Value v) { return intCast(v, i64()); }

  /// An alloca in the entry block of the enclosing function (so that loops
  /// do not grow the stack).
  Value entryAlloca(Operation *op, Type elem, uint64_t count,
                    uint64_t align = 8) {
    auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
    OpBuilder::InsertionGuard guard(rw);
    rw.setInsertionPointToStart(&fn.getBody().front());
    Value n = LLVM::ConstantOp::create(rw, loc, rw.getI64Type(),
                                       rw.getI64IntegerAttr(count));
    return LLVM::AllocaOp::create(rw, loc, ptr(), elem, n, align);
  }

  /// Splits the current block at the insertion point: emits
  /// `cond_br ok, cont, slow`, lets `slowPath` fill the slow block, which
  /// falls through to `cont`; leaves the insertion point at `cont`.
  void emitUnlikely(Value ok, llvm::function_ref<void()> slowPath) {
    Block *cur = rw.getInsertionBlock();
    Block *cont = rewriter.splitBlock(cur, rw.getInsertionPoint());
    Block *slow = rw.createBlock(cont);
    rw.setInsertionPointToEnd(cur);
    auto br = LLVM::CondBrOp::create(rw, loc, ok, cont, slow);
    br.setBranchWeights(rw.getDenseI32ArrayAttr({2000, 1}));
    rw.setInsertionPointToStart(slow);
    slowPath();
    LLVM::BrOp::create(rw, loc, ValueRange{}, cont);
    rw.setInsertionPointToStart(cont);
  }

  /// `ok`, and with WOOLY_ACCESS_ALIGNED for a power-of-two `size` > 1,
  /// also that `addr` is a multiple of `size`.
  Value alignedToo(Value ok, Value addr, uint64_t size, unsigned flags) {
    if (!(flags & WOOLY_ACCESS_ALIGNED) || size <= 1 ||
        !llvm::isPowerOf2_64(size))
      return ok;
    Value low = LLVM::AndOp::create(rw, loc, addr, c64(size - 1));
    Value aligned =
        LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::eq, low, c64(0));
    return LLVM::AndOp::create(rw, loc, ok, aligned);
  }

  /// Returns a pointer for an access of `size` bytes at integer address
  /// `addr` in `space`, checking bounds (and, with WOOLY_ACCESS_ALIGNED,
  /// alignment) as the ABI describes.
  FailureOr<Value> address(Operation *op, StateSpace space, Value addr,
                           uint64_t size, unsigned flags) {
    Value c = ctx(op);
    switch (space) {
    case StateSpace::shared:
    case StateSpace::shared_cluster: {
      Value off = toI64(addr);
      if (state.boundsChecks) {
        uint32_t site = state.nextSite++;
        // An offset bounded at compile time (SharedOffsets.h) inside the
        // static shared memory, which every launch has, needs at most the
        // alignment check, and none where its low bits are known (below).
        auto bound = op->getAttrOfType<IntegerAttr>(kMaxSharedOffsetAttr);
        bool inside = bound && uint64_t(bound.getInt()) + size <=
                                   state.dynamicSharedOffset;
        Value ok;
        if (inside) {
          // The offset is below 2^31 too: its extension says so, which
          // spares the warp vector code a check that the lanes' 32-bit
          // offsets do not wrap (WarpVector.cpp).
          if (auto zext = off.getDefiningOp<LLVM::ZExtOp>();
              zext && zext.getArg() == addr && bound.getInt() < (1ll << 31))
            zext.setNonNeg(true);
          ok = LLVM::ConstantOp::create(rw, loc, rw.getI1Type(),
                                        rw.getBoolAttr(true));
        } else {
          Value total = toI64(
              loadField(c, offsetof(WoolyThreadCtx, totalSmemSize), i32()));
          // A launch has at least the module's static shared memory (the
          // runtime adds the dynamic bytes to it): saying so lets LLVM drop
          // the check of an offset it can bound below that, such as a
          // 256-bin table indexed by a byte.
          if (state.dynamicSharedOffset)
            total = LLVM::UMaxOp::create(rw, loc, total,
                                         c64(state.dynamicSharedOffset));
          // `[off, off + size)` inside `[0, total)`. Where the static
          // shared memory alone holds an access (total >= size), that is
          // one comparison with a bound the same for every thread, `off <=
          // total - size` (neither side wraps), which the warp vector code
          // makes once for a warp's contiguous accesses; otherwise `off <
          // total` and `off + size <= total` (the sum may wrap).
          if (state.dynamicSharedOffset >= size) {
            ok = LLVM::ICmpOp::create(
                rw, loc, LLVM::ICmpPredicate::ule, off,
                LLVM::SubOp::create(rw, loc, total, c64(size),
                                    LLVM::IntegerOverflowFlags::nuw));
          } else {
            Value end = LLVM::AddOp::create(rw, loc, off, c64(size));
            Value below = LLVM::ICmpOp::create(
                rw, loc, LLVM::ICmpPredicate::ult, off, total);
            Value fits = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::ule,
                                              end, total);
            ok = LLVM::AndOp::create(rw, loc, below, fits);
          }
        }
        // A multiple of the size is aligned (SharedOffsets.h).
        auto zeros = op->getAttrOfType<IntegerAttr>(kSharedOffsetZerosAttr);
        bool aligned = !(flags & WOOLY_ACCESS_ALIGNED) || size <= 1 ||
                       (zeros && zeros.getInt() < 64 &&
                        (uint64_t(1) << zeros.getInt()) % size == 0);
        if (!inside || !aligned) {
          ok = alignedToo(ok, off, size, flags);
          emitUnlikely(ok, [&] {
            call("__wooly_rt_shared_oob", {}, {c, c32(site), off, c32(size)});
          });
        }
      }
      Value base = loadField(c, offsetof(WoolyThreadCtx, shared), ptr());
      return gep(base, off);
    }
    case StateSpace::local:
    case StateSpace::param:
      if (addr.getType().getIntOrFloatBitWidth() != 64)
        return op->emitOpError("32-bit ")
               << stringifyStateSpace(space)
               << " addresses are not supported on the host yet";
      if (state.boundsChecks) {
        // `.local`: inside the thread's stack; `.param`: inside the
        // launch's parameter buffer (ABI.h). Anything else ends the launch.
        Value end = LLVM::AddOp::create(rw, loc, addr, c64(size));
        Value lo, hi;
        if (space == StateSpace::local) {
          // The live stack: from the stack pointer (under it, dead frames
          // of earlier calls and kernels) to where the kernel's first frame
          // begins (above, the runtime's frames).
          lo = LLVM::PtrToIntOp::create(
              rw, loc, i64(), LLVM::StackSaveOp::create(rw, loc, ptr()));
          hi = loadField(c, offsetof(WoolyThreadCtx, localHi), i64());
        } else {
          lo = LLVM::PtrToIntOp::create(
              rw, loc, i64(),
              loadField(c, offsetof(WoolyThreadCtx, params), ptr()));
          hi = LLVM::AddOp::create(
              rw, loc, lo,
              loadField(c, offsetof(WoolyThreadCtx, paramBytes), i64()));
        }
        Value above =
            LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::uge, addr, lo);
        Value below =
            LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::ule, end, hi);
        Value noWrap =
            LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::uge, end, addr);
        Value ok = alignedToo(
            LLVM::AndOp::create(
                rw, loc, LLVM::AndOp::create(rw, loc, above, below), noWrap),
            addr, size, flags);
        static_assert(uint32_t(StateSpace::local) == WOOLY_SPACE_LOCAL &&
                          uint32_t(StateSpace::param) == WOOLY_SPACE_PARAM,
                      "ABI.h's space numbers");
        emitUnlikely(ok, [&] {
          call("__wooly_rt_space_oob", {},
               {c, addr, c32(size), c32(flags), c32(uint32_t(space))});
        });
      }
      return Value(LLVM::IntToPtrOp::create(rw, loc, ptr(), addr));
    case StateSpace::generic:
    case StateSpace::global:
    case StateSpace::constant: {
      if (addr.getType().getIntOrFloatBitWidth() != 64)
        return op->emitOpError("32-bit ")
               << stringifyStateSpace(space)
               << " addresses are not supported on the host yet";
      if (state.boundsChecks) {
        uint32_t site = state.nextSite++;
        Value cache = loadField(c, offsetof(WoolyThreadCtx, siteCache), ptr());
        Value entry = gep(cache, int64_t(site) * sizeof(WoolyAccessRange));
        Value lo = siteCache(LLVM::LoadOp::create(rw, loc, i64(), entry));
        Value last =
            siteCache(LLVM::LoadOp::create(rw, loc, i64(), gep(entry, 8)));
        Value off = LLVM::SubOp::create(rw, loc, addr, lo);
        Value ok = alignedToo(
            LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::ule, off, last),
            addr, size, flags);
        emitUnlikely(ok, [&] {
          LLVM::CallOp::create(
              rw, loc, TypeRange{},
              FlatSymbolRefAttr::get(rw.getContext(), "__wooly_rt_check"),
              ValueRange{c, entry, addr, c32(size), c32(flags)})
              .setNoaliasScopesAttr(state.contextScope);
        });
      }
      return Value(LLVM::IntToPtrOp::create(rw, loc, ptr(), addr));
    }
    }
    return op->emitOpError("unsupported state space");
  }
};

/// A shared-memory atomic on the host: a block's threads run on one worker
/// and switch only inside runtime calls, and no other block sees its shared
/// memory, so a plain load-modify-store is atomic (and avoids `lock`ed
/// instructions, ~15x slower).
Value emitSharedAtomic(HostEmitter &e, AtomicOp kind, Value p,
                       ValueRange values) {
  auto &rw = e.rw;
  Location loc = e.loc;
  Type t = values[0].getType();
  uint64_t size = byteSize(t);
  Value old = e.data(LLVM::LoadOp::create(rw, loc, t, p, size));
  Value v = values[0];
  auto cmp = [&](LLVM::ICmpPredicate pred, Value a, Value b) {
    return LLVM::ICmpOp::create(rw, loc, pred, a, b);
  };
  auto select = [&](Value c, Value a, Value b) {
    return Value(LLVM::SelectOp::create(rw, loc, c, a, b));
  };
  Value next;
  switch (kind) {
  case AtomicOp::add:
    next = LLVM::AddOp::create(rw, loc, old, v);
    break;
  case AtomicOp::fadd:
    next = LLVM::FAddOp::create(rw, loc, old, v);
    break;
  case AtomicOp::umin:
    next = select(cmp(LLVM::ICmpPredicate::ult, v, old), v, old);
    break;
  case AtomicOp::smin:
    next = select(cmp(LLVM::ICmpPredicate::slt, v, old), v, old);
    break;
  case AtomicOp::umax:
    next = select(cmp(LLVM::ICmpPredicate::ugt, v, old), v, old);
    break;
  case AtomicOp::smax:
    next = select(cmp(LLVM::ICmpPredicate::sgt, v, old), v, old);
    break;
  case AtomicOp::fmin:
    next = LLVM::MinNumOp::create(rw, loc, old, v);
    break;
  case AtomicOp::fmax:
    next = LLVM::MaxNumOp::create(rw, loc, old, v);
    break;
  case AtomicOp::inc: {
    // old >= v ? 0 : old + 1
    Value one = e.cst(t, 1), zero = e.cst(t, 0);
    next = select(cmp(LLVM::ICmpPredicate::uge, old, v), zero,
                  LLVM::AddOp::create(rw, loc, old, one));
    break;
  }
  case AtomicOp::dec: {
    // old == 0 || old > v ? v : old - 1
    Value one = e.cst(t, 1), zero = e.cst(t, 0);
    Value wrap =
        LLVM::OrOp::create(rw, loc, cmp(LLVM::ICmpPredicate::eq, old, zero),
                           cmp(LLVM::ICmpPredicate::ugt, old, v));
    next = select(wrap, v, LLVM::SubOp::create(rw, loc, old, one));
    break;
  }
  case AtomicOp::and_:
    next = LLVM::AndOp::create(rw, loc, old, v);
    break;
  case AtomicOp::or_:
    next = LLVM::OrOp::create(rw, loc, old, v);
    break;
  case AtomicOp::xor_:
    next = LLVM::XOrOp::create(rw, loc, old, v);
    break;
  case AtomicOp::exch:
    next = v;
    break;
  case AtomicOp::cas: {
    // Compare bits (a float compare would treat NaN and -0 differently).
    Type it = rw.getIntegerType(size * 8);
    Value oldBits = isa<IntegerType>(t)
                        ? old
                        : Value(LLVM::BitcastOp::create(rw, loc, it, old));
    Value cmpBits =
        isa<IntegerType>(t)
            ? values[0]
            : Value(LLVM::BitcastOp::create(rw, loc, it, values[0]));
    next =
        select(cmp(LLVM::ICmpPredicate::eq, oldBits, cmpBits), values[1], old);
    break;
  }
  }
  e.data(LLVM::StoreOp::create(rw, loc, next, p, size));
  return old;
}

/// Marshals a warp collective: the inputs become 32-bit words in an entry
/// alloca, `__wooly_rt_warp` fills the output words.
struct WarpCall {
  HostEmitter &e;
  Operation *op;
  SmallVector<Value> words;

  void add(Value v) {
    Type t = v.getType();
    if (t.isInteger(1)) {
      words.push_back(LLVM::ZExtOp::create(e.rw, e.loc, e.i32(), v));
      return;
    }
    unsigned bits = byteSize(t) * 8;
    Type it = e.rw.getIntegerType(bits);
    Value i =
        isa<IntegerType>(t) ? v : LLVM::BitcastOp::create(e.rw, e.loc, it, v);
    if (bits <= 32) {
      words.push_back(e.intCast(i, e.i32()));
      return;
    }
    for (unsigned sh = 0; sh < bits; sh += 32) {
      Value s =
          sh ? Value(LLVM::LShrOp::create(e.rw, e.loc, i, e.cst(it, sh))) : i;
      words.push_back(LLVM::TruncOp::create(e.rw, e.loc, e.i32(), s));
    }
  }
  void addConst(uint32_t v) { words.push_back(e.c32(v)); }

  /// Emits the call; returns the pointer to the output words.
  Value emit(uint32_t kind, Value mask, uint32_t nout) {
    Value in = e.entryAlloca(op, e.i32(), std::max<size_t>(words.size(), 1), 4);
    for (auto [i, w] : llvm::enumerate(words))
      LLVM::StoreOp::create(e.rw, e.loc, w, e.gep(in, int64_t(4 * i)));
    Value out = e.entryAlloca(op, e.i32(), std::max<uint32_t>(nout, 1), 4);
    e.call("__wooly_rt_warp", {},
           {e.ctx(op), e.c32(kind), mask, in, e.c32(words.size()), out,
            e.c32(nout)});
    return out;
  }

  /// Reads a value of type `t` from the output words starting at `*word`.
  Value read(Value out, unsigned &word, Type t) {
    if (t.isInteger(1)) {
      Value w = LLVM::LoadOp::create(e.rw, e.loc, e.i32(),
                                     e.gep(out, int64_t(4 * word++)));
      return LLVM::ICmpOp::create(e.rw, e.loc, LLVM::ICmpPredicate::ne, w,
                                  e.c32(0));
    }
    unsigned bytes = byteSize(t);
    Value v =
        LLVM::LoadOp::create(e.rw, e.loc, t, e.gep(out, int64_t(4 * word)), 4);
    word += (bytes + 3) / 4;
    return v;
  }
};

/// Encodes an mma/wmma shape string `mMnNkK` as `m | n << 8 | k << 16`.
FailureOr<uint32_t> shapeCode(Operation *op, StringRef shape) {
  unsigned m, n, k;
  StringRef s = shape;
  if (!s.consume_front("m") || s.consumeInteger(10, m) ||
      !s.consume_front("n") || s.consumeInteger(10, n) ||
      !s.consume_front("k") || s.consumeInteger(10, k) || !s.empty())
    return op->emitOpError("bad matrix shape '") << shape << "'";
  return m | n << 8 | k << 16;
}

/// Words needed for values of the given types.
uint32_t wordCount(TypeRange types) {
  uint32_t n = 0;
  for (Type t : types)
    n += (byteSize(t) + 3) / 4;
  return n;
}

/// Adds the mma/wmma.mma header (shape, types, layouts, fragment sizes) and
/// fragments as `WOOLY_WARP_MMA` documents.
template <typename Op>
LogicalResult marshalMma(Op op, typename Op::Adaptor adaptor, WarpCall &w) {
  FailureOr<uint32_t> shape = shapeCode(op, op.getShape());
  if (failed(shape))
    return failure();
  w.addConst(*shape);
  w.addConst(uint32_t(op.getAType()) | uint32_t(op.getBType()) << 8 |
             uint32_t(op.getCType()) << 16 | uint32_t(op.getDType()) << 24);
  w.addConst(uint32_t(op.getLayoutA()) | uint32_t(op.getLayoutB()) << 1 |
             (op.getSatfinite() ? 4u : 0u) |
             (op.getBitOp() ? (uint32_t(*op.getBitOp()) + 1) << 3 : 0u));
  w.addConst(wordCount(adaptor.getA().getTypes()));
  w.addConst(wordCount(adaptor.getB().getTypes()));
  w.addConst(wordCount(adaptor.getC().getTypes()));
  for (ValueRange frag : {adaptor.getA(), adaptor.getB(), adaptor.getC()})
    for (Value v : frag)
      w.add(v);
  return success();
}

/// Address of a wmma fragment access as a generic host address.
FailureOr<Value> wmmaAddress(HostEmitter &e, Operation *op, StateSpace space,
                             Value addr) {
  if (space == StateSpace::shared || space == StateSpace::shared_cluster) {
    Value base =
        e.loadField(e.ctx(op), offsetof(WoolyThreadCtx, shared), e.ptr());
    Value baseInt = LLVM::PtrToIntOp::create(e.rw, e.loc, e.i64(), base);
    return Value(LLVM::AddOp::create(e.rw, e.loc, baseInt, e.toI64(addr)));
  }
  if (addr.getType().getIntOrFloatBitWidth() != 64)
    return op->emitOpError("32-bit addresses are not supported on the host "
                           "yet");
  return addr;
}

/// Adds the common part of `wmma.load`/`wmma.store`: layout, shape, type,
/// generic address and stride.
template <typename Op>
LogicalResult marshalWmmaAccess(Op op, typename Op::Adaptor adaptor,
                                WarpCall &w) {
  FailureOr<uint32_t> shape = shapeCode(op, op.getShape());
  FailureOr<Value> addr =
      wmmaAddress(w.e, op, op.getSpace(), adaptor.getAddr());
  if (failed(shape) || failed(addr))
    return failure();
  w.addConst(uint32_t(op.getLayout()));
  w.addConst(*shape);
  w.addConst(uint32_t(op.getType()));
  w.addConst(uint32_t(StateSpace::generic));
  w.add(*addr);
  if (adaptor.getStride())
    w.add(adaptor.getStride());
  else
    w.addConst(0);
  return success();
}

// How each warp collective is encoded (`WoolyWarpKind` in ABI.h): `marshal`
// adds the op's input words and returns the kind and the lane mask.
struct WarpRequest {
  uint32_t kind;
  Value mask;
};

FailureOr<WarpRequest> marshal(ShflOp op, ShflOp::Adaptor a, WarpCall &w) {
  w.addConst(uint32_t(op.getMode()));
  w.add(a.getValue());
  w.add(a.getLane());
  w.add(a.getClamp());
  return WarpRequest{WOOLY_WARP_SHFL, a.getMask()};
}
FailureOr<WarpRequest> marshal(VoteOp op, VoteOp::Adaptor a, WarpCall &w) {
  w.addConst(uint32_t(op.getMode()));
  w.add(a.getPred());
  return WarpRequest{WOOLY_WARP_VOTE, a.getMask()};
}
FailureOr<WarpRequest> marshal(MatchOp op, MatchOp::Adaptor a, WarpCall &w) {
  w.addConst(uint32_t(op.getMode()));
  Value v = a.getValue();
  bool is64 = v.getType().isInteger(64);
  w.add(is64 ? v : w.e.toI64(v)); // Two words: lo, hi.
  w.addConst(is64 ? 1 : 0);
  return WarpRequest{WOOLY_WARP_MATCH, a.getMask()};
}
FailureOr<WarpRequest> marshal(ReduxOp op, ReduxOp::Adaptor a, WarpCall &w) {
  w.addConst(uint32_t(op.getOp()));
  w.add(a.getValue());
  return WarpRequest{WOOLY_WARP_REDUX, a.getMask()};
}
FailureOr<WarpRequest> marshal(ActiveMaskOp, ActiveMaskOp::Adaptor,
                               WarpCall &w) {
  return WarpRequest{WOOLY_WARP_ACTIVEMASK, w.e.c32(0xffffffffu)};
}
FailureOr<WarpRequest> marshal(WarpSyncOp, WarpSyncOp::Adaptor a, WarpCall &) {
  return WarpRequest{WOOLY_WARP_SYNC, a.getMask()};
}
FailureOr<WarpRequest> marshal(LdMatrixOp op, LdMatrixOp::Adaptor a,
                               WarpCall &w) {
  w.add(w.e.toI64(a.getAddr()));
  w.addConst(op.getNumResults());
  w.addConst(op.getTrans() ? 1 : 0);
  return WarpRequest{WOOLY_WARP_LDMATRIX, w.e.c32(0xffffffffu)};
}
FailureOr<WarpRequest> marshal(MmaOp op, MmaOp::Adaptor a, WarpCall &w) {
  if (failed(marshalMma(op, a, w)))
    return failure();
  return WarpRequest{WOOLY_WARP_MMA, w.e.c32(0xffffffffu)};
}
FailureOr<WarpRequest> marshal(WmmaMmaOp op, WmmaMmaOp::Adaptor a,
                               WarpCall &w) {
  if (failed(marshalMma(op, a, w)))
    return failure();
  return WarpRequest{WOOLY_WARP_WMMA_MMA, w.e.c32(0xffffffffu)};
}
FailureOr<WarpRequest> marshal(WmmaLoadOp op, WmmaLoadOp::Adaptor a,
                               WarpCall &w) {
  w.addConst(uint32_t(op.getRole()));
  if (failed(marshalWmmaAccess(op, a, w)))
    return failure();
  return WarpRequest{WOOLY_WARP_WMMA_LOAD, w.e.c32(0xffffffffu)};
}
FailureOr<WarpRequest> marshal(ElectOp, ElectOp::Adaptor a, WarpCall &) {
  return WarpRequest{WOOLY_WARP_ELECT, a.getMask()};
}
FailureOr<WarpRequest> marshal(StMatrixOp op, StMatrixOp::Adaptor a,
                               WarpCall &w) {
  w.add(w.e.toI64(a.getAddr()));
  w.addConst(a.getValues().size());
  w.addConst(op.getTrans() ? 1 : 0);
  for (Value v : a.getValues())
    w.add(v);
  return WarpRequest{WOOLY_WARP_STMATRIX, w.e.c32(0xffffffffu)};
}
FailureOr<WarpRequest> marshal(WmmaStoreOp op, WmmaStoreOp::Adaptor a,
                               WarpCall &w) {
  if (failed(marshalWmmaAccess(op, a, w)))
    return failure();
  for (Value v : a.getValues())
    w.add(v);
  return WarpRequest{WOOLY_WARP_WMMA_STORE, w.e.c32(0xffffffffu)};
}

//===----------------------------------------------------------------------===//
// The host target
//===----------------------------------------------------------------------===//

/// The CPU backend: every function takes the thread context first, and
/// every access is checked (unless bounds checks are off).
class HostTargetInfo : public TargetInfo {
public:
  HostTargetInfo(MLIRContext *ctx, bool boundsChecks);

  StringRef name() const override { return "host"; }
  void populatePatterns(const LLVMTypeConverter &converter,
                        RewritePatternSet &patterns) const override;
  LogicalResult beginModule(ModuleOp module) const override;
  LogicalResult prepareModule(ModuleOp module, OpBuilder &b,
                              const LoweringState &s) const override;
  void finalizeModule(ModuleOp module) const override;

  std::string functionSymbol(StringRef name, bool kernel) const override {
    return kernel ? kernelSymbol(name) : ::functionSymbol(name);
  }
  std::string globalSymbol(StringRef name) const override {
    return ::globalSymbol(name);
  }
  bool keepsDeclarations() const override { return false; }
  LLVM::Linkage functionLinkage(FuncOp op) const override;
  SmallVector<Type> functionArguments(FuncOp op) const override;
  void markKernel(OpBuilder &b, LLVM::LLVMFuncOp fn, FuncOp op) const override;
  void finishKernel(OpBuilder &b, LLVM::LLVMFuncOp fn, FuncOp op,
                    const LoweringState &s) const override;
  SmallVector<Value> bodyArguments(Emitter &e, FuncOp op, Block *entry,
                                   const LoweringState &s) const override;
  SmallVector<Value> implicitArguments(Emitter &e,
                                       Operation *op) const override;
  std::optional<LogicalResult>
  lowerSpecialCall(CallOp op, CallOp::Adaptor adaptor,
                   ConversionPatternRewriter &rw) const override;
  FailureOr<std::string> calleeSymbol(CallOp op) const override;
  LogicalResult checkIndirectCall(ConversionPatternRewriter &rw,
                                  CallIndirectOp op,
                                  Value callee) const override;
  void emitTrap(ConversionPatternRewriter &rw, Operation *op) const override;

  std::optional<unsigned> addressSpace(StateSpace s) const override {
    return 0;
  }
  unsigned allocaAddressSpace() const override { return 0; }
  StringRef syncScope(std::optional<MemScope>) const override { return {}; }
  FailureOr<LoweredGlobal> createGlobal(OpBuilder &b, GlobalOp g,
                                        uint64_t align) const override;
  FailureOr<Value> initializerAddress(OpBuilder &b, GlobalOp g, StringRef sym,
                                      Type elem,
                                      const LoweringState &s) const override;
  FailureOr<Value> localAddress(Emitter &e, AddressOfOp op,
                                Value slot) const override;
  FailureOr<Value> symbolAddress(Emitter &e, AddressOfOp op,
                                 const LoweringState &s) const override;
  FailureOr<Value> paramAddress(Emitter &e, ParamAddressOp op,
                                LLVM::LLVMFuncOp fn,
                                uint64_t offset) const override;
  FailureOr<Value> cvta(Emitter &e, CvtaOp op, Value addr) const override;
  FailureOr<Value> accessPointer(ConversionPatternRewriter &rw, Operation *op,
                                 StateSpace space, Value addr, uint64_t size,
                                 unsigned kind) const override;
  void markAccess(Operation *access) const override {
    cast<LLVM::AliasAnalysisOpInterface>(access).setNoAliasScopes(
        state.runtimeScope);
  }
  bool vectorAccesses() const override { return false; }
  bool invariantLoads() const override { return false; }
  Value sharedAtomic(Emitter &e, AtomicOp kind, Value p,
                     ValueRange values) const override;

  WOOLY_TARGET_OPS(WOOLY_LOWER_OVERRIDE)

private:
  /// An emitter of host code at `op`. Every builder the shared patterns
  /// hand to a hook is their ConversionPatternRewriter.
  HostEmitter emitter(OpBuilder &rw, Operation *op) const {
    return HostEmitter{static_cast<ConversionPatternRewriter &>(rw),
                       op->getLoc(), state};
  }
  /// Lowers a warp collective (`__wooly_rt_warp`).
  template <typename Op>
  LogicalResult lowerWarp(Op op, typename Op::Adaptor adaptor,
                          ConversionPatternRewriter &rw) const;

  mutable HostState state;
};

/// Marks the context and parameter arguments of `f` (`kernel` or a function
/// built from it): both noalias (generated code never writes the parameters,
/// and reaches the context only through its argument) and dereferenceable,
/// the context aligned, so that loads through them may be hoisted out of
/// loops even from conditional code.
void markContextArguments(OpBuilder &b, LLVM::LLVMFuncOp kernel,
                          LLVM::LLVMFuncOp f) {
  int64_t paramBytes = 0;
  if (auto offsets =
          kernel->getAttrOfType<DenseI64ArrayAttr>("wooly.param_offsets")) {
    auto sizes = kernel->getAttrOfType<DenseI64ArrayAttr>("wooly.param_sizes");
    for (auto [o, n] : llvm::zip(offsets.asArrayRef(), sizes.asArrayRef()))
      paramBytes = std::max(paramBytes, o + n);
  }
  for (unsigned i = 0; i < 2; ++i)
    f.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(), b.getUnitAttr());
  f.setArgAttr(0, LLVM::LLVMDialect::getDereferenceableAttrName(),
               b.getI64IntegerAttr(sizeof(WoolyThreadCtx)));
  // Aligned too, so that a context field read in conditional code (the
  // site cache's address) may be hoisted out of the thread loop.
  f.setArgAttr(0, LLVM::LLVMDialect::getAlignAttrName(),
               b.getI64IntegerAttr(alignof(WoolyThreadCtx)));
  if (paramBytes)
    f.setArgAttr(1, LLVM::LLVMDialect::getDereferenceableAttrName(),
                 b.getI64IntegerAttr(paramBytes));
}

/// For a kernel that never synchronises, builds
/// `__wooly_block_<k>(ctx, params, start)`: a loop over the block's threads
/// from linear index `start`, setting `%tid`, `%laneid` and `%warpid` in the
/// context and calling the kernel, which is inlined. This saves a call per
/// thread and lets LLVM hoist the parameter and context loads out of the
/// loop (both pointers are `noalias`: generated code never writes them).
void buildBlockLoop(ModuleOp module, LLVM::LLVMFuncOp kernel,
                    ArrayAttr contextScope) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(kernel);
  Location loc = kernel.getLoc();
  Type ptrTy = LLVM::LLVMPointerType::get(ctx);
  Type i32 = b.getI32Type();
  StringRef name = kernel->getAttrOfType<StringAttr>("wooly.kernel").getValue();
  auto fnType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                            {ptrTy, ptrTy, i32});
  auto fn =
      LLVM::LLVMFuncOp::create(b, loc, ("__wooly_block_" + name).str(), fnType);
  fn.setNoUnwind(true);
  kernel->setAttr("wooly.block_function", b.getStringAttr(fn.getName()));
  markContextArguments(b, kernel, fn);
  markContextArguments(b, kernel, kernel);
  kernel.setAlwaysInlineAttr(b.getUnitAttr());

  Block *entry = fn.addEntryBlock(b);
  Value c = entry->getArgument(0), params = entry->getArgument(1),
        start = entry->getArgument(2);
  b.setInsertionPointToStart(entry);
  auto cst = [&](int64_t v) {
    return LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(v));
  };
  auto field = [&](size_t offset) {
    Value p = LLVM::GEPOp::create(b, loc, ptrTy, b.getI8Type(), c,
                                  ArrayRef<LLVM::GEPArg>{int32_t(offset)});
    return p;
  };
  size_t tidOff = offsetof(WoolyThreadCtx, tid);
  size_t ntidOff = offsetof(WoolyThreadCtx, ntid);
  auto load = [&](Value p) {
    auto op = LLVM::LoadOp::create(b, loc, i32, p);
    op.setAliasScopesAttr(contextScope);
    return op;
  };
  auto store = [&](Value v, Value p) {
    auto op = LLVM::StoreOp::create(b, loc, v, p);
    op.setAliasScopesAttr(contextScope);
  };
  Value nx = load(field(ntidOff));
  Value ny = load(field(ntidOff + 4));
  Value nz = load(field(ntidOff + 8));
  Value nxy = LLVM::MulOp::create(b, loc, nx, ny);
  Value n = LLVM::MulOp::create(b, loc, nxy, nz);
  Value tx0 = LLVM::URemOp::create(b, loc, start, nx);
  Value q = LLVM::UDivOp::create(b, loc, start, nx);
  Value ty0 = LLVM::URemOp::create(b, loc, q, ny);
  Value tz0 = LLVM::UDivOp::create(b, loc, start, nxy);
  Value tidX = field(tidOff), tidY = field(tidOff + 4),
        tidZ = field(tidOff + 8);
  Value lane = field(offsetof(WoolyThreadCtx, laneid));
  Value warp = field(offsetof(WoolyThreadCtx, warpid));

  // Rows of the block (a `%tid.y`, `%tid.z` pair) in the outer loop, the
  // threads of a row in the inner one: `%tid.x` and the linear index are
  // plain induction variables there, so that LLVM sees the addresses of a
  // row's accesses as affine (WidenAccessChecks.cpp hoists their bounds
  // checks out of it, and the vectoriser may take it). The first row
  // begins at `%tid.x` = tx0, the others at 0.
  Block *rowHeader = b.createBlock(&fn.getBody(), {}, {i32, i32, i32, i32},
                                   {loc, loc, loc, loc});
  Block *rowBody = b.createBlock(&fn.getBody());
  Block *thread = b.createBlock(&fn.getBody(), {}, {i32, i32}, {loc, loc});
  Block *rowEnd = b.createBlock(&fn.getBody(), {}, {i32}, {loc});
  Block *exit = b.createBlock(&fn.getBody());
  b.setInsertionPointToEnd(entry);
  LLVM::BrOp::create(b, loc, ValueRange{start, tx0, ty0, tz0}, rowHeader);

  // rowHeader(i, x0, y, z): i is the linear index of thread (x0, y, z).
  b.setInsertionPointToStart(rowHeader);
  Value i = rowHeader->getArgument(0), x0 = rowHeader->getArgument(1),
        ty = rowHeader->getArgument(2), tz = rowHeader->getArgument(3);
  Value more = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, i, n);
  LLVM::CondBrOp::create(b, loc, more, rowBody, exit);

  b.setInsertionPointToStart(rowBody);
  store(ty, tidY);
  store(tz, tidZ);
  LLVM::BrOp::create(b, loc, ValueRange{x0, i}, thread);

  // thread(tx, j): one thread of the row, j its linear index.
  b.setInsertionPointToStart(thread);
  Value tx = thread->getArgument(0), j = thread->getArgument(1);
  store(tx, tidX);
  store(LLVM::AndOp::create(b, loc, j, cst(31)), lane);
  store(LLVM::LShrOp::create(b, loc, j, cst(5)), warp);
  LLVM::CallOp::create(b, loc, TypeRange{},
                       FlatSymbolRefAttr::get(ctx, kernel.getName()),
                       ValueRange{c, params});
  Value tx1 = LLVM::AddOp::create(b, loc, tx, cst(1));
  Value j1 = LLVM::AddOp::create(b, loc, j, cst(1));
  Value inRow = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, tx1, nx);
  LLVM::CondBrOp::create(b, loc, inRow, thread, ValueRange{tx1, j1}, rowEnd,
                         ValueRange{j1});

  // rowEnd(next): the next row, `%tid.z` advancing when `%tid.y` wraps.
  b.setInsertionPointToStart(rowEnd);
  Value ty1 = LLVM::AddOp::create(b, loc, ty, cst(1));
  Value wrapY = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, ty1, ny);
  Value tyN = LLVM::SelectOp::create(b, loc, wrapY, cst(0), ty1);
  Value tzN = LLVM::SelectOp::create(
      b, loc, wrapY, LLVM::AddOp::create(b, loc, tz, cst(1)), tz);
  LLVM::BrOp::create(
      b, loc, ValueRange{rowEnd->getArgument(0), cst(0), tyN, tzN}, rowHeader);

  b.setInsertionPointToStart(exit);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

/// Whether every use of `p` (an alloca) is as the address of a load or a
/// store, through GEPs, or a pointer argument of a warp collective: the
/// buffers the lowering makes for itself, which may live in the region
/// frame (a `.local` variable must stay on the stack, where its checks
/// look for it).
bool isBufferAlloca(Value p) {
  for (OpOperand &use : p.getUses()) {
    Operation *user = use.getOwner();
    if (auto gep = dyn_cast<LLVM::GEPOp>(user)) {
      if (use.getOperandNumber() != 0 || !isBufferAlloca(gep.getResult()))
        return false;
    } else if (auto load = dyn_cast<LLVM::LoadOp>(user)) {
      (void)load;
    } else if (auto store = dyn_cast<LLVM::StoreOp>(user)) {
      if (store.getValue() == p)
        return false;
    } else if (auto call = dyn_cast<LLVM::CallOp>(user)) {
      if (call.getCallee() != "__wooly_rt_warp")
        return false;
    } else {
      return false;
    }
  }
  return true;
}

/// The most operations the warp function's loops may inline: those of the
/// lane functions of every region (buildRegionLaneFunctions).
constexpr size_t kWarpInlineBudget = 40000;

/// The most regions one run of a warp function's vector code takes in, one
/// after another with the constant permutations between them (each start
/// of such a run has its own copy of what follows).
constexpr unsigned kWarpVectorChain = 12;

/// One slot of a warp's region frame. Each lane has its copy of every slot;
/// the 32 copies of a slot are neighbours (structure of arrays): lane `l`'s
/// is at `frame + 32 * at + l * stride`, so that a loop over a warp's lanes
/// (the warp function) reads and writes a slot as one vector.
struct FrameSlot {
  uint64_t at = 0, stride = 0;
};

/// A cut of a kernel's lane function: a barrier, or a warp collective whose
/// input words, output words and mask the region left in the frame.
struct RegionCut {
  bool warp = false;
  uint32_t kind = 0, nin = 0, nout = 0;
  FrameSlot in, out;
  /// Where the region left its input words: `staged` (the usual case),
  /// each that is a constant (a shuffle's mode, often its lane and clamp)
  /// only here, the others each in staging slot `RegionLayout::staging[i]`
  /// (a word's 32 lanes side by side); or, when not, in `in` as the
  /// runtime reads them. Whoever makes the request writes them there.
  bool staged = false;
  SmallVector<std::optional<uint32_t>, 4> word;
  /// The mask, if a constant; else the region left it in RegionLayout::mask.
  std::optional<uint32_t> mask;
  /// Whether the next region reads the output words from the staging slots
  /// `RegionLayout::results` rather than from `out`: whoever resumes a
  /// thread whose collective the runtime completed (in `out`) first copies
  /// them there.
  bool resultsStaged = false;
};

/// What buildLaneFunction made.
struct RegionLayout {
  /// Bytes of the frame per thread (a warp's frame is 32 times that).
  uint64_t frameBytes = 0;
  /// The slot of a warp collective's mask, and those of its input words.
  FrameSlot mask;
  SmallVector<FrameSlot> staging, results;
  /// For each region, the one region that can follow it (its only cut's,
  /// or WOOLY_REGION_EXITED), where there is only one: then every lane
  /// that runs it stops at the same place.
  SmallVector<std::optional<uint32_t>> successor;
  /// The lane function's accesses to the frame: each lane's own slots, so
  /// a loop over the lanes has no dependence between lanes through them
  /// (`llvm.loop.parallel_accesses`).
  LLVM::AccessGroupAttr frameAccesses;
  /// Cut `i` ends region `i` and region `i + 1` follows it.
  SmallVector<RegionCut> cuts;
  /// The slots of integers kept across cuts, at most 64, and the word in
  /// each warp's frame that says which of them hold one value in all 32
  /// copies (warp_vector::UniformSlots; lane 0's copy of `uniformBits`).
  SmallVector<FrameSlot> uniformSlots;
  std::optional<FrameSlot> uniformBits;
};

/// `frame + 32 * slot.at + lane * slot.stride` (`lane` an i64).
Value slotAddress(OpBuilder &b, Location loc, Value frame, Value lane,
                  FrameSlot slot) {
  Type ptrTy = LLVM::LLVMPointerType::get(b.getContext());
  Value base =
      LLVM::GEPOp::create(b, loc, ptrTy, b.getI8Type(), frame,
                          ArrayRef<LLVM::GEPArg>{int64_t(32 * slot.at)});
  Value off = LLVM::MulOp::create(
      b, loc, lane,
      LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                               b.getI64IntegerAttr(int64_t(slot.stride))));
  return LLVM::GEPOp::create(b, loc, ptrTy, b.getI8Type(), base,
                             ArrayRef<LLVM::GEPArg>{off});
}

/// Where `b` stands: the warp's word of uniform slots (RegionLayout) is
/// cleared, before code that writes the lanes' slots one by one.
void clearUniformBits(OpBuilder &b, Location loc, Value frame,
                      const RegionLayout &layout) {
  if (!layout.uniformBits)
    return;
  Type ptrTy = LLVM::LLVMPointerType::get(b.getContext());
  LLVM::StoreOp::create(
      b, loc,
      LLVM::ConstantOp::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(0)),
      LLVM::GEPOp::create(
          b, loc, ptrTy, b.getI8Type(), frame,
          ArrayRef<LLVM::GEPArg>{int64_t(32 * layout.uniformBits->at)}));
}

/// Whether an address made from `alloca` (through any operation but a load,
/// whose result is what the memory holds, and through branches to block
/// arguments) is in `across`, or is stored to memory: the `.local` memory
/// is then reached on both sides of a cut, where its contents do not
/// survive (the region's next call has a stack of its own, and the lanes
/// of a warp function share one).
bool addressLivesAcross(Value alloca, const llvm::SetVector<Value> &across) {
  SmallVector<Value> work{alloca};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (across.contains(v))
      return true;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<LLVM::LoadOp>(user))
        continue;
      if (auto store = dyn_cast<LLVM::StoreOp>(user)) {
        if (store.getValue() == v)
          return true;
        continue;
      }
      if (auto br = dyn_cast<BranchOpInterface>(user)) {
        if (std::optional<BlockArgument> arg =
                br.getSuccessorBlockArgument(use.getOperandNumber()))
          work.push_back(*arg);
        continue;
      }
      llvm::append_range(work, user->getResults());
    }
  }
  return false;
}

/// For a kernel whose barriers and warp collectives can be split
/// (regionSplitBlocker), builds `__wooly_lanes_<k>(ctx, params, region,
/// lane, frame) -> next`: the kernel cut at each of them. A call runs one
/// thread (`lane` of the warp whose frame is `frame`) from the start of
/// `region` (0: the kernel's entry; i + 1: right after cut i) to its next
/// cut, and returns the region that follows that cut, or
/// WOOLY_REGION_EXITED at the end of the kernel or at `exit`. At a warp
/// collective the region leaves its input words, output buffer and mask
/// in the frame (RegionLayout::cuts); the caller completes it (the runtime,
/// or the warp function). Values that live across a cut are kept in the
/// frame: each stored where it is defined and loaded where it is used, as
/// are the lowering's own buffers (a warp collective's operands and
/// results); constants are made again where used. Returns the layout, or
/// nothing (and builds nothing) where the kernel cannot be split so
/// (`.local` memory live across a cut, an entry point that waits in
/// another way).
std::optional<RegionLayout> buildLaneFunction(ModuleOp module,
                                              LLVM::LLVMFuncOp kernel,
                                              ArrayAttr contextScope) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(kernel);
  StringRef name = kernel->getAttrOfType<StringAttr>("wooly.kernel").getValue();
  auto fn = cast<LLVM::LLVMFuncOp>(b.clone(*kernel.getOperation()));
  fn.setSymName(("__wooly_lanes_" + name).str());
  // Called by __wooly_regions_<k> alone (the warp function calls its
  // per-region copies): LLVM inlines it there and drops it.
  fn.setLinkage(LLVM::Linkage::Internal);
  for (NamedAttribute a : llvm::to_vector(fn->getDiscardableAttrs()))
    fn->removeAttr(a.getName());
  fn.setAlwaysInlineAttr(nullptr);
  Location loc = fn.getLoc();
  Type ptrTy = LLVM::LLVMPointerType::get(ctx);
  Type i32 = b.getI32Type(), i64 = b.getI64Type();

  // The cuts, each made the end of its block.
  SmallVector<LLVM::CallOp> cuts, exits;
  bool unsupported = false;
  fn.walk([&](LLVM::CallOp call) {
    std::optional<StringRef> callee = call.getCallee();
    if (!callee)
      return;
    if (*callee == "__wooly_rt_barrier" || *callee == "__wooly_rt_warp")
      cuts.push_back(call);
    else if (*callee == "__wooly_rt_exit" &&
             isa_and_nonnull<LLVM::UnreachableOp>(call->getNextNode()))
      exits.push_back(call);
    else if (*callee == "__wooly_rt_bar_red" ||
             *callee == "__wooly_rt_iteration_barrier" ||
             *callee == "__wooly_rt_nanosleep" ||
             *callee == "__wooly_rt_mbarrier_wait")
      unsupported = true;
  });
  if (unsupported || cuts.empty()) {
    fn.erase();
    return std::nullopt;
  }
  // The new signature: (ctx, params, region, lane, frame, warp's ctx) ->
  // next region.
  fn.setFunctionType(
      LLVM::LLVMFunctionType::get(i32, {ptrTy, ptrTy, i32, i64, ptrTy, ptrTy}));
  Block *entry = &fn.getBody().front();
  fn->removeAttr(fn.getArgAttrsAttrName());
  fn->removeAttr(fn.getResAttrsAttrName());
  Value regionArg = entry->addArgument(i32, loc);
  Value lane = entry->addArgument(i64, loc);
  Value frame = entry->addArgument(ptrTy, loc);
  Value warpCtx = entry->addArgument(ptrTy, loc);
  markContextArguments(b, kernel, fn);
  // Only the function reaches the frame while it runs.
  fn.setArgAttr(4, LLVM::LLVMDialect::getNoAliasAttrName(), b.getUnitAttr());
  // The context fields that are the same for every thread of a warp are
  // read from the warp's first lane's context: in the warp function's loops
  // they are then the same address for every lane, read once.
  for (OpOperand &use :
       llvm::make_early_inc_range(entry->getArgument(0).getUses())) {
    auto gep = dyn_cast<LLVM::GEPOp>(use.getOwner());
    if (!gep || gep.getBase() != use.get() ||
        !gep.getDynamicIndices().empty() ||
        gep.getRawConstantIndices().size() != 1 ||
        !llvm::all_of(gep->getUsers(),
                      [](Operation *u) { return isa<LLVM::LoadOp>(u); }))
      continue;
    int64_t offset = gep.getRawConstantIndices()[0];
    bool perLane = offset < int64_t(offsetof(WoolyThreadCtx, ntid)) ||
                   offset == int64_t(offsetof(WoolyThreadCtx, laneid)) ||
                   offset == int64_t(offsetof(WoolyThreadCtx, warpid)) ||
                   offset == int64_t(offsetof(WoolyThreadCtx, runtime)) ||
                   offset >= int64_t(offsetof(WoolyThreadCtx, resume));
    if (!perLane)
      use.set(warpCtx);
  }

  SmallVector<Block *> conts;
  for (LLVM::CallOp call : cuts) {
    Block *block = call->getBlock();
    Block *cont = block->splitBlock(call->getNextNode());
    b.setInsertionPointToEnd(block);
    LLVM::BrOp::create(b, loc, ValueRange{}, cont);
    conts.push_back(cont);
  }
  Liveness liveness(fn);
  llvm::SetVector<Value> across;
  for (Block *cont : conts)
    for (Value v : liveness.getLiveIn(cont))
      across.insert(v);

  // The new entry: the slots' addresses, then the switch to the region.
  Block *first = entry->splitBlock(&entry->front());
  DataLayout layout(module);
  RegionLayout out;
  DenseMap<Value, FrameSlot> slotOf;
  auto slot = [&](uint64_t size, uint64_t align) {
    align = std::max<uint64_t>(align, 1);
    FrameSlot s;
    s.at = llvm::alignTo(out.frameBytes, align);
    s.stride = llvm::alignTo(std::max<uint64_t>(size, 1), align);
    out.frameBytes = s.at + s.stride;
    b.setInsertionPointToEnd(entry);
    Value p = slotAddress(b, loc, frame, lane, s);
    slotOf[p] = s;
    return p;
  };
  // The lowering's buffers move to the frame; other allocas stay, unless
  // they live across a cut. The input words of every warp collective share
  // one slot, as do their output words: a collective's inputs are stored
  // right before its cut and read at the cut, its outputs written at the
  // cut and read right after it, so no two collectives' are ever in use at
  // once, and a round of the block touches the same few cache lines of
  // each frame whichever cut it ends at.
  enum Role { None, In, Out };
  auto warpRole = [](Value p) {
    for (OpOperand &use : p.getUses())
      if (auto call = dyn_cast<LLVM::CallOp>(use.getOwner());
          call && call.getCallee() == "__wooly_rt_warp")
        return use.getOperandNumber() == 3 ? In : Out;
    return None;
  };
  SmallVector<LLVM::AllocaOp> roleAllocas[3];
  uint64_t roleBytes[3] = {0, 0, 0};
  for (auto alloca : llvm::to_vector(first->getOps<LLVM::AllocaOp>())) {
    bool lives = across.contains(alloca.getResult());
    if (!isBufferAlloca(alloca.getResult())) {
      lives = addressLivesAcross(alloca.getResult(), across);
      if (lives) {
        fn.erase();
        return std::nullopt;
      }
      continue;
    }
    auto count = alloca.getArraySize().getDefiningOp<LLVM::ConstantOp>();
    auto n = count ? dyn_cast<IntegerAttr>(count.getValue()) : IntegerAttr();
    if (!n) {
      fn.erase();
      return std::nullopt;
    }
    uint64_t size = layout.getTypeSize(alloca.getElemType()) * n.getInt();
    Role role = warpRole(alloca.getResult());
    if (role != None && alloca.getAlignment().value_or(1) <= 16) {
      roleAllocas[role].push_back(alloca);
      roleBytes[role] = std::max(roleBytes[role], size);
      continue;
    }
    Value p =
        slot(size, std::max<uint64_t>(alloca.getAlignment().value_or(1), 4));
    across.remove(alloca.getResult());
    alloca.getResult().replaceAllUsesWith(p);
    alloca.erase();
  }
  for (Role role : {In, Out}) {
    if (roleAllocas[role].empty())
      continue;
    Value p = slot(roleBytes[role], 4);
    for (LLVM::AllocaOp alloca : roleAllocas[role]) {
      across.remove(alloca.getResult());
      alloca.getResult().replaceAllUsesWith(p);
      alloca.erase();
    }
  }
  // Values across cuts: made again where used, if they are cheap and
  // nothing writes what they are made of: constants, the parameters, the
  // warp's context fields (all of these the same for the whole warp: in a
  // loop over the lanes they are invariant), the lane's own ids in its
  // context (`%tid`, `%laneid`, `%warpid`, set before the launch), and a
  // few operations on them. Made again, they keep what LLVM knows of them
  // (that `tid * 4` is a multiple of 4, that the lanes' `tid` are
  // consecutive) where a frame slot would hide it. The others are kept in
  // the frame.
  Value params = entry->getArgument(1), laneCtx = entry->getArgument(0);
  auto laneId = [](int64_t offset) {
    return (offset >= int64_t(offsetof(WoolyThreadCtx, tid)) &&
            offset < int64_t(offsetof(WoolyThreadCtx, ntid)) &&
            offset % 4 == 0) ||
           offset == int64_t(offsetof(WoolyThreadCtx, laneid)) ||
           offset == int64_t(offsetof(WoolyThreadCtx, warpid));
  };
  // What a block argument is, where its block's only predecessor
  // branches to it unconditionally (the lowering passes the parameters
  // through such a block), else the argument itself.
  auto forwarded = [&](Value v) {
    while (auto arg = dyn_cast<BlockArgument>(v)) {
      Block *pred = arg.getOwner()->getSinglePredecessor();
      auto br = pred ? dyn_cast<LLVM::BrOp>(pred->getTerminator()) : nullptr;
      if (!br)
        break;
      v = br.getDestOperands()[arg.getArgNumber()];
    }
    return v;
  };
  std::function<bool(Value, unsigned &)> remakeable = [&](Value v,
                                                          unsigned &budget) {
    v = forwarded(v);
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getOwner() == entry && (v == params || v == warpCtx);
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumRegions() || def->getNumResults() != 1 ||
        budget-- == 0)
      return false;
    if (auto load = dyn_cast<LLVM::LoadOp>(def)) {
      if (load.getVolatile_() ||
          load.getOrdering() != LLVM::AtomicOrdering::not_atomic)
        return false;
      Value addr = load.getAddr();
      std::optional<int64_t> offset = 0;
      while (auto gep = addr.getDefiningOp<LLVM::GEPOp>()) {
        if (!gep.getDynamicIndices().empty())
          return false;
        if (gep.getElemType() == b.getI8Type() &&
            gep.getRawConstantIndices().size() == 1 && offset)
          *offset += gep.getRawConstantIndices()[0];
        else
          offset.reset();
        addr = gep.getBase();
      }
      if (addr == laneCtx)
        return offset && laneId(*offset);
      return addr == params || addr == warpCtx;
    }
    if (!isMemoryEffectFree(def))
      return false;
    return llvm::all_of(def->getOperands(),
                        [&](Value x) { return remakeable(x, budget); });
  };
  std::function<Value(Value, IRMapping &)> remake = [&](Value v,
                                                        IRMapping &made) {
    Value at = forwarded(v);
    if (Value m = made.lookupOrNull(at); m)
      return m;
    Operation *def = at.getDefiningOp();
    if (!def)
      return at;
    for (Value x : def->getOperands())
      made.map(x, remake(x, made));
    Operation *copy = b.clone(*def, made);
    made.map(at, copy->getResult(0));
    return Value(copy->getResult(0));
  };
  for (Value v : across) {
    if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == entry)
      continue; // The arguments: passed again.
    Operation *def = v.getDefiningOp();
    unsigned budget = 12;
    if (remakeable(v, budget)) {
      for (OpOperand &use : llvm::make_early_inc_range(v.getUses())) {
        b.setInsertionPoint(use.getOwner());
        IRMapping made;
        use.set(remake(v, made));
      }
      continue;
    }
    Type t = v.getType();
    Value p = slot(layout.getTypeSize(t), layout.getTypeABIAlignment(t));
    if (isa<IntegerType>(t) && out.uniformSlots.size() < 64)
      out.uniformSlots.push_back(slotOf.lookup(p));
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : v.getUses())
      uses.push_back(&use);
    if (def)
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
    // The frame is runtime memory, as the context is: no kernel access
    // reaches it, so they carry its scope and LLVM may keep a slot's value
    // in a register across the kernel's stores.
    LLVM::StoreOp::create(b, loc, v, p).setAliasScopesAttr(contextScope);
    for (OpOperand *use : uses) {
      b.setInsertionPoint(use->getOwner());
      auto load = LLVM::LoadOp::create(b, loc, t, p);
      load.setAliasScopesAttr(contextScope);
      use->set(load);
    }
  }
  if (!out.uniformSlots.empty())
    out.uniformBits = slotOf.lookup(slot(8, 8));
  Value maskSlot;
  SmallVector<Value> staging, results;
  if (llvm::any_of(cuts, [](LLVM::CallOp c) {
        return c.getCallee() == "__wooly_rt_warp";
      })) {
    maskSlot = slot(4, 4);
    out.mask = slotOf.lookup(maskSlot);
  }
  auto ret = [&](uint32_t next) {
    LLVM::ReturnOp::create(b, loc,
                           ValueRange{LLVM::ConstantOp::create(
                               b, loc, i32, b.getI32IntegerAttr(next))});
  };
  // The end of the kernel and `exit` return WOOLY_REGION_EXITED.
  for (auto r : llvm::to_vector(fn.getOps<LLVM::ReturnOp>())) {
    b.setInsertionPoint(r);
    ret(WOOLY_REGION_EXITED);
    r.erase();
  }
  for (LLVM::CallOp call : exits) {
    Operation *unreachable = call->getNextNode();
    b.setInsertionPoint(call);
    ret(WOOLY_REGION_EXITED);
    unreachable->erase();
    call.erase();
  }
  // Each cut returns the next region; a warp collective leaves its mask in
  // the frame, and where its words are.
  auto constant = [](Value v) -> std::optional<uint32_t> {
    if (auto c = v.getDefiningOp<LLVM::ConstantOp>())
      if (auto a = dyn_cast<IntegerAttr>(c.getValue()))
        return uint32_t(a.getInt());
    return std::nullopt;
  };
  SmallVector<Value> outBuffers(cuts.size());
  for (auto [i, call] : llvm::enumerate(cuts)) {
    Block *block = call->getBlock();
    Operation *br = block->getTerminator();
    RegionCut cut;
    if (call.getCallee() == "__wooly_rt_warp") {
      std::optional<uint32_t> kind = constant(call.getOperand(1)),
                              nin = constant(call.getOperand(4)),
                              nout = constant(call.getOperand(6));
      auto in = slotOf.find(call.getOperand(3)),
           res = slotOf.find(call.getOperand(5));
      if (!kind || !nin || !nout || in == slotOf.end() || res == slotOf.end()) {
        fn.erase();
        return std::nullopt;
      }
      cut.warp = true;
      cut.kind = *kind;
      cut.nin = *nin;
      cut.nout = *nout;
      cut.in = in->second;
      cut.out = res->second;
      outBuffers[i] = call.getOperand(5);
      // The input words: the last store to each before the call (WarpCall
      // stores them all right before it).
      Value buffer = call.getOperand(3);
      SmallVector<LLVM::StoreOp> stores(*nin);
      for (Operation *op = call->getPrevNode(); op; op = op->getPrevNode()) {
        auto store = dyn_cast<LLVM::StoreOp>(op);
        if (!store)
          continue;
        Value addr = store.getAddr();
        int64_t offset = 0;
        if (auto gep = addr.getDefiningOp<LLVM::GEPOp>();
            gep && gep.getBase() == buffer && gep.getDynamicIndices().empty() &&
            gep.getRawConstantIndices().size() == 1 &&
            gep.getElemType() == b.getI8Type()) {
          offset = gep.getRawConstantIndices()[0];
          addr = buffer;
        }
        if (addr == buffer && offset % 4 == 0 && offset >= 0 &&
            offset / 4 < int64_t(*nin) && !stores[offset / 4] &&
            store.getValue().getType() == i32)
          stores[offset / 4] = store;
      }
      cut.staged =
          llvm::all_of(stores, [](LLVM::StoreOp s) { return bool(s); });
      if (cut.staged) {
        cut.word.resize(*nin);
        for (auto [w, store] : llvm::enumerate(stores)) {
          cut.word[w] = constant(store.getValue());
          if (cut.word[w]) {
            store.erase();
            continue;
          }
          while (out.staging.size() <= w) {
            Value p = slot(4, 4);
            out.staging.push_back(slotOf.lookup(p));
            staging.push_back(p);
          }
          store.getAddrMutable().assign(staging[w]);
          store.setAliasScopesAttr(contextScope);
        }
      }
      cut.mask = constant(call.getOperand(2));
      if (!cut.mask) {
        b.setInsertionPoint(call);
        LLVM::StoreOp::create(b, loc, call.getOperand(2), maskSlot)
            .setAliasScopesAttr(contextScope);
      }
    }
    call.erase(); // The caller completes the barrier or collective.
    out.cuts.push_back(cut);
    b.setInsertionPoint(br);
    ret(uint32_t(i + 1));
    br->erase();
  }
  // The output words move to staging slots too where every read of a
  // collective's output buffer is a 4-byte word at the start of the region
  // after its cut.
  DenseMap<Block *, size_t> cutBefore;
  llvm::SetVector<Value> outputs;
  for (auto [i, cont] : llvm::enumerate(conts))
    if (out.cuts[i].warp) {
      cutBefore[cont] = i;
      outputs.insert(outBuffers[i]);
    }
  for (Value buffer : outputs) {
    SmallVector<std::pair<LLVM::LoadOp, unsigned>> reads;
    auto read = [&](Operation *op, int64_t offset) {
      auto load = dyn_cast<LLVM::LoadOp>(op);
      auto at = load ? cutBefore.find(load->getBlock()) : cutBefore.end();
      if (at == cutBefore.end() || outBuffers[at->second] != buffer ||
          offset % 4 || offset < 0 ||
          offset / 4 >= int64_t(out.cuts[at->second].nout) ||
          layout.getTypeSize(load.getType()) != 4)
        return false;
      reads.push_back({load, unsigned(offset / 4)});
      return true;
    };
    bool all = llvm::all_of(buffer.getUsers(), [&](Operation *user) {
      auto gep = dyn_cast<LLVM::GEPOp>(user);
      if (!gep)
        return read(user, 0);
      return gep.getBase() == buffer && gep.getDynamicIndices().empty() &&
             gep.getRawConstantIndices().size() == 1 &&
             gep.getElemType() == b.getI8Type() &&
             llvm::all_of(gep->getUsers(), [&](Operation *u) {
               return read(u, gep.getRawConstantIndices()[0]);
             });
    });
    if (!all)
      continue;
    for (auto [load, word] : reads) {
      while (out.results.size() <= word) {
        Value p = slot(4, 4);
        out.results.push_back(slotOf.lookup(p));
        results.push_back(p);
      }
      load.getAddrMutable().assign(results[word]);
      load.setAliasScopesAttr(contextScope);
    }
    for (auto [i, cut] : llvm::enumerate(out.cuts))
      if (cut.warp && outBuffers[i] == buffer)
        cut.resultsStaged = true;
  }

  b.setInsertionPointToEnd(entry);
  SmallVector<int32_t> cases;
  SmallVector<ValueRange> operands;
  for (size_t i = 0; i < conts.size(); ++i) {
    cases.push_back(int32_t(i + 1));
    operands.push_back(ValueRange{});
  }
  LLVM::SwitchOp::create(b, loc, regionArg, first, ValueRange{}, cases,
                         BlockRange(conts), operands);
  out.frameBytes = llvm::alignTo(out.frameBytes, 16);
  // Where each region can end.
  for (size_t r = 0; r <= conts.size(); ++r) {
    std::optional<uint32_t> only;
    bool several = false;
    llvm::SmallPtrSet<Block *, 16> seen;
    SmallVector<Block *> work{r ? conts[r - 1] : first};
    while (!work.empty() && !several) {
      Block *block = work.pop_back_val();
      if (!seen.insert(block).second)
        continue;
      if (auto ret = dyn_cast<LLVM::ReturnOp>(block->getTerminator())) {
        std::optional<uint32_t> next = constant(ret.getOperand(0));
        several = !next || (only && *only != *next);
        only = next;
      }
      for (Block *succ : block->getSuccessors())
        work.push_back(succ);
    }
    out.successor.push_back(several ? std::nullopt : only);
  }
  out.frameAccesses = LLVM::AccessGroupAttr::get(ctx);
  ArrayAttr groups = b.getArrayAttr({out.frameAccesses});
  fn.walk([&](LLVM::AccessGroupOpInterface op) {
    Value addr;
    if (auto load = dyn_cast<LLVM::LoadOp>(op.getOperation()))
      addr = load.getAddr();
    else if (auto store = dyn_cast<LLVM::StoreOp>(op.getOperation()))
      addr = store.getAddr();
    while (auto gep = addr ? addr.getDefiningOp<LLVM::GEPOp>() : nullptr)
      addr = gep.getBase();
    if (addr && addr == frame)
      op.setAccessGroups(groups);
  });
  return out;
}

/// Emits, where `b` stands, what completes nothing but tells the runtime
/// of thread `ctx`'s cut: if `next` follows a warp collective, the
/// collective's request (`__wooly_rt_warp` records it; the runtime
/// completes it), its input words first put where the runtime reads them.
/// Continues in a new block, where `b` is left.
void emitCutRequest(OpBuilder &b, Location loc, LLVM::LLVMFuncOp fn, Value ctx,
                    Value next, Value frame, Value lane,
                    const RegionLayout &layout, ArrayAttr contextScope) {
  Type i32 = b.getI32Type();
  auto c32 = [&](uint32_t v) {
    return Value(LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(v)));
  };
  auto load = [&](FrameSlot slot) {
    auto op = LLVM::LoadOp::create(b, loc, i32,
                                   slotAddress(b, loc, frame, lane, slot));
    op.setAliasScopesAttr(contextScope);
    return Value(op);
  };
  // Collectives that differ only in their constant words and masks share
  // a block, which takes those as arguments.
  using Key = std::tuple<uint32_t, uint32_t, uint32_t, bool, uint64_t, uint64_t,
                         bool, uint64_t>;
  struct Group {
    const RegionCut *cut;
    Block *block;
  };
  std::map<Key, Group> groups;
  Block *from = b.getInsertionBlock();
  Block *done = b.createBlock(&fn.getBody(), fn.getBody().end());
  SmallVector<int32_t> cases;
  SmallVector<Block *> dests;
  SmallVector<SmallVector<Value>> args;
  for (auto [i, cutRef] : llvm::enumerate(layout.cuts)) {
    const RegionCut &cut = cutRef;
    if (!cut.warp)
      continue;
    uint64_t constant = 0;
    for (auto [w, word] : llvm::enumerate(cut.word))
      if (word)
        constant |= uint64_t(1) << std::min<size_t>(w, 63);
    Key key{cut.kind,  cut.nin,    cut.nout,       cut.staged,
            cut.in.at, cut.out.at, bool(cut.mask), constant};
    auto [at, fresh] = groups.try_emplace(key, Group{&cut, nullptr});
    SmallVector<Value> operands;
    b.setInsertionPointToEnd(from);
    for (const std::optional<uint32_t> &word : cut.word)
      if (word)
        operands.push_back(c32(*word));
    if (cut.mask)
      operands.push_back(c32(*cut.mask));
    if (fresh) {
      SmallVector<Type> types(operands.size(), i32);
      at->second.block =
          b.createBlock(&fn.getBody(), fn.getBody().end(), types,
                        SmallVector<Location>(types.size(), loc));
      Block *block = at->second.block;
      unsigned arg = 0;
      Value in = slotAddress(b, loc, frame, lane, cut.in);
      if (cut.staged)
        for (auto [w, word] : llvm::enumerate(cut.word)) {
          Value v = word ? block->getArgument(arg++) : load(layout.staging[w]);
          Value p = LLVM::GEPOp::create(b, loc, in.getType(), b.getI8Type(), in,
                                        ArrayRef<LLVM::GEPArg>{int32_t(4 * w)});
          LLVM::StoreOp::create(b, loc, v, p).setAliasScopesAttr(contextScope);
        }
      Value mask = cut.mask ? block->getArgument(arg++) : load(layout.mask);
      LLVM::CallOp::create(
          b, loc, TypeRange{},
          FlatSymbolRefAttr::get(b.getContext(), "__wooly_rt_warp"),
          ValueRange{ctx, c32(cut.kind), mask, in, c32(cut.nin),
                     slotAddress(b, loc, frame, lane, cut.out), c32(cut.nout)});
      LLVM::BrOp::create(b, loc, ValueRange{}, done);
    }
    cases.push_back(int32_t(i + 1));
    dests.push_back(at->second.block);
    args.push_back(operands);
  }
  b.setInsertionPointToEnd(from);
  LLVM::SwitchOp::create(b, loc, next, done, ValueRange{}, cases,
                         BlockRange(dests),
                         SmallVector<ValueRange>(args.begin(), args.end()));
  b.setInsertionPointToStart(done);
}

/// Emits, where `b` stands, what a thread needs before it resumes at
/// `region` after a warp collective the runtime completed: its output
/// words copied from the collective's buffer to the staging slots the
/// region reads them from (RegionCut::resultsStaged). `copy(emit)` emits
/// `emit(lane)` for each lane concerned. Continues in a new block, where
/// `b` is left.
void emitResultCopy(
    OpBuilder &b, Location loc, LLVM::LLVMFuncOp fn, Value region, Value frame,
    const RegionLayout &layout, ArrayAttr contextScope,
    llvm::function_ref<void(llvm::function_ref<void(Value)>)> copy) {
  // Every collective's outputs are in the same buffer (`out`), and their
  // staging slots are the same: one copy of as many words as the largest
  // has serves them all.
  Type i32 = b.getI32Type();
  const RegionCut *staged = nullptr;
  uint32_t words = 0;
  SmallVector<int32_t> cases;
  for (auto [i, cut] : llvm::enumerate(layout.cuts))
    if (cut.resultsStaged) {
      staged = &cut;
      words = std::max(words, cut.nout);
      cases.push_back(int32_t(i + 1));
    }
  if (!staged)
    return;
  Block *from = b.getInsertionBlock();
  Block *done = b.createBlock(&fn.getBody(), fn.getBody().end());
  Block *block = b.createBlock(&fn.getBody(), fn.getBody().end());
  copy([&](Value lane) {
    Value res = slotAddress(b, loc, frame, lane, staged->out);
    for (uint32_t w = 0; w < words && w < layout.results.size(); ++w) {
      Value p = LLVM::GEPOp::create(b, loc, res.getType(), b.getI8Type(), res,
                                    ArrayRef<LLVM::GEPArg>{int32_t(4 * w)});
      auto v = LLVM::LoadOp::create(b, loc, i32, p);
      v.setAliasScopesAttr(contextScope);
      LLVM::StoreOp::create(b, loc, v,
                            slotAddress(b, loc, frame, lane, layout.results[w]))
          .setAliasScopesAttr(contextScope);
    }
  });
  LLVM::BrOp::create(b, loc, ValueRange{}, done);
  b.setInsertionPointToEnd(from);
  LLVM::SwitchOp::create(b, loc, region, done, ValueRange{}, cases,
                         SmallVector<Block *>(cases.size(), block),
                         SmallVector<ValueRange>(cases.size(), ValueRange{}));
  b.setInsertionPointToStart(done);
}

/// Builds `__wooly_regions_<k>(ctx, params)`, which runs one thread from
/// region `ctx->resume` to its next cut (`__wooly_lanes_<k>`), leaves the
/// next region in `ctx->resume` and makes the request of a warp collective
/// it stopped at. The thread's frame is its warp's (`ctx->regionFrame`).
void buildRegionFunction(ModuleOp module, LLVM::LLVMFuncOp kernel,
                         const RegionLayout &layout, ArrayAttr contextScope) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  StringRef name = kernel->getAttrOfType<StringAttr>("wooly.kernel").getValue();
  Location loc = kernel.getLoc();
  Type ptrTy = LLVM::LLVMPointerType::get(ctx);
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  b.setInsertionPointAfter(kernel);
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, ("__wooly_regions_" + name).str(),
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                  {ptrTy, ptrTy}));
  markContextArguments(b, kernel, fn);
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  Value c = entry->getArgument(0), params = entry->getArgument(1);
  auto field = [&](size_t offset) {
    return Value(LLVM::GEPOp::create(b, loc, ptrTy, b.getI8Type(), c,
                                     ArrayRef<LLVM::GEPArg>{int32_t(offset)}));
  };
  auto load = [&](size_t offset, Type t) {
    auto op = LLVM::LoadOp::create(b, loc, t, field(offset));
    op.setAliasScopesAttr(contextScope);
    return Value(op);
  };
  Value region = load(offsetof(WoolyThreadCtx, resume), i32);
  Value lane = LLVM::ZExtOp::create(
      b, loc, i64, load(offsetof(WoolyThreadCtx, laneid), i32));
  Value frame = load(offsetof(WoolyThreadCtx, regionFrame), ptrTy);
  // The thread writes its own slots: the warp's vector code may no longer
  // take one copy for all (WarpVector.h, UniformSlots).
  clearUniformBits(b, loc, frame, layout);
  emitResultCopy(b, loc, fn, region, frame, layout, contextScope,
                 [&](llvm::function_ref<void(Value)> emit) { emit(lane); });
  Value next = LLVM::CallOp::create(
                   b, loc, TypeRange{i32},
                   FlatSymbolRefAttr::get(ctx, ("__wooly_lanes_" + name).str()),
                   ValueRange{c, params, region, lane, frame, c})
                   .getResult();
  LLVM::StoreOp::create(b, loc, next, field(offsetof(WoolyThreadCtx, resume)))
      .setAliasScopesAttr(contextScope);
  emitCutRequest(b, loc, fn, c, next, frame, lane, layout, contextScope);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

/// Emits `for (i = 0; i < 32; ++i) acc = body(i, acc)` (i an i64; `acc`
/// may be null: no accumulator) where `b` stands, and leaves `b` after the
/// loop. Returns the final `acc`.
Value emitLaneLoop(OpBuilder &b, Location loc, LLVM::LLVMFuncOp fn, Value init,
                   llvm::function_ref<Value(Value lane, Value acc)> body,
                   LLVM::AccessGroupAttr parallel = {}) {
  Type i64 = b.getI64Type();
  SmallVector<Type> types{i64};
  SmallVector<Location> locs{loc};
  if (init) {
    types.push_back(init.getType());
    locs.push_back(loc);
  }
  Block *from = b.getInsertionBlock();
  Block *header = b.createBlock(&fn.getBody(), fn.getBody().end(), types, locs);
  b.setInsertionPointToEnd(from);
  auto c64 = [&](int64_t v) {
    return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
  };
  SmallVector<Value> start{c64(0)};
  if (init)
    start.push_back(init);
  LLVM::BrOp::create(b, loc, start, header);
  b.setInsertionPointToStart(header);
  Value lane = header->getArgument(0);
  Value acc = body(lane, init ? header->getArgument(1) : Value());
  Value lane1 = LLVM::AddOp::create(b, loc, lane, c64(1));
  Value more =
      LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, lane1, c64(32));
  Block *end = b.getInsertionBlock();
  SmallVector<Type> exitTypes(init ? 1 : 0, init ? init.getType() : Type());
  SmallVector<Location> exitLocs(exitTypes.size(), loc);
  Block *exit =
      b.createBlock(&fn.getBody(), fn.getBody().end(), exitTypes, exitLocs);
  b.setInsertionPointToEnd(end);
  SmallVector<Value> again{lane1}, done;
  if (init) {
    again.push_back(acc);
    done.push_back(acc);
  }
  auto br = LLVM::CondBrOp::create(b, loc, more, header, again, exit, done);
  // The lanes' accesses to their frame are independent.
  MLIRContext *ctx = b.getContext();
  SmallVector<LLVM::AccessGroupAttr> groups;
  if (parallel)
    groups.push_back(parallel);
  // Each loop its own annotation (one loop ID each in LLVM, whose loop
  // passes mark a loop done through its ID): told apart by a location.
  auto where = cast<FusedLoc>(FusedLoc::get(
      {loc},
      b.getStringAttr(fn.getName() + " lane loop " +
                      std::to_string(fn.getBody().getBlocks().size())),
      ctx));
  // Vectorised where LLVM finds it worth it, but neither unrolled nor
  // interleaved: a warp function has a loop per region, and their copies
  // would cost more compile time than they gain (wooly-cpu-bench: within
  // 7%).
  auto unroll = LLVM::LoopUnrollAttr::get(ctx, b.getBoolAttr(true), {}, {}, {},
                                          {}, {}, {});
  auto interleave = LLVM::LoopInterleaveAttr::get(ctx, b.getI32IntegerAttr(1));
  br.setLoopAnnotationAttr(
      LLVM::LoopAnnotationAttr::get(ctx, {}, {}, interleave, unroll, {}, {}, {},
                                    {}, {}, {}, {}, {}, where, {}, groups));
  b.setInsertionPointToStart(exit);
  return init ? exit->getArgument(0) : Value();
}

/// The lane functions of one region (buildRegionLaneFunctions): `plain`,
/// and `rows`, where the region reads `%tid`, the same for a block whose
/// rows are whole warps (`%ntid.x` a multiple of 32).
struct RegionLanes {
  std::string plain, rows;
};

/// Makes the thread ids that lane function `fn` (a region's copy) reads
/// from the lane's context out of the lane index: `%laneid` is the lane
/// (always); with `rows` (the block's rows are whole warps, so lane 0's
/// `%tid.x` is a multiple of 32 and the lanes' follow it), `%tid.x` is lane
/// 0's with the lane in its low 5 bits, and `%tid.y`, `%tid.z` are lane
/// 0's. LLVM then sees the lanes' addresses as consecutive, so that their
/// checks widen (WidenAccessChecks.cpp) and the warp function's loops
/// vectorise. Returns whether `fn` reads `%tid` from the lane's context.
bool laneIdsFromLane(LLVM::LLVMFuncOp fn, bool rows) {
  Block *entry = &fn.getBody().front();
  Value laneCtx = entry->getArgument(0), lane = entry->getArgument(3),
        warpCtx = entry->getArgument(5);
  OpBuilder b(fn.getContext());
  Type i32 = b.getI32Type();
  bool readsTid = false;
  for (OpOperand &use : llvm::make_early_inc_range(laneCtx.getUses())) {
    // A field's address: a GEP, or the context itself (`%tid.x`).
    Operation *gep = use.getOwner();
    int64_t offset = 0;
    if (auto g = dyn_cast<LLVM::GEPOp>(gep)) {
      if (g.getBase() != laneCtx || !g.getDynamicIndices().empty() ||
          g.getRawConstantIndices().size() != 1 ||
          g.getElemType() != b.getI8Type())
        continue;
      offset = g.getRawConstantIndices()[0];
    } else if (auto load = dyn_cast<LLVM::LoadOp>(gep);
               !load || load.getAddr() != laneCtx) {
      continue;
    }
    bool tid = offset >= int64_t(offsetof(WoolyThreadCtx, tid)) &&
               offset < int64_t(offsetof(WoolyThreadCtx, ntid));
    bool laneid = offset == int64_t(offsetof(WoolyThreadCtx, laneid));
    if (!tid && !laneid)
      continue;
    bool isGep = isa<LLVM::GEPOp>(gep);
    SmallVector<Operation *> users;
    if (isGep)
      users = llvm::to_vector(gep->getUsers());
    else
      users.push_back(gep);
    for (Operation *user : users) {
      auto load = dyn_cast<LLVM::LoadOp>(user);
      if (!load || load.getType() != i32)
        continue;
      readsTid |= tid;
      if (tid && !rows)
        continue;
      b.setInsertionPoint(load);
      Location loc = load.getLoc();
      Value l = LLVM::TruncOp::create(b, loc, i32, lane);
      Value v = l;
      if (tid) {
        auto first = LLVM::LoadOp::create(
            b, loc, i32,
            LLVM::GEPOp::create(b, loc, laneCtx.getType(), b.getI8Type(),
                                warpCtx,
                                ArrayRef<LLVM::GEPArg>{int32_t(offset)}));
        first.setAliasScopesAttr(load.getAliasScopesAttr());
        v = first;
        if (offset == int64_t(offsetof(WoolyThreadCtx, tid))) {
          // The lowering's bound of %tid.x (`and` with 1023, SRegOp's
          // lowering) goes on lane 0's part, so that the lanes' ids stay
          // `base + lane` (an `or` that LLVM sees as an add).
          int32_t mask = ~31;
          Operation *bound = nullptr;
          if (load->hasOneUse())
            if (auto a = dyn_cast<LLVM::AndOp>(*load->user_begin())) {
              Value other =
                  a.getLhs() == load.getResult() ? a.getRhs() : a.getLhs();
              APInt c;
              if (matchPattern(other, m_ConstantInt(&c)) &&
                  (c.getZExtValue() & 31) == 31) {
                mask &= int32_t(c.getZExtValue());
                bound = a;
              }
            }
          Value base = LLVM::AndOp::create(
              b, loc, first,
              LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(mask)));
          auto both = LLVM::OrOp::create(b, loc, base, l);
          both.setIsDisjoint(true);
          v = both;
          if (bound) {
            bound->getResult(0).replaceAllUsesWith(v);
            bound->erase();
          }
        }
      }
      load.getResult().replaceAllUsesWith(v);
      load.erase();
    }
    if (isGep && gep->use_empty())
      gep->erase();
  }
  return readsTid;
}

/// Builds `__wooly_lanes_<k>_<r>`, the lane function for region `r` alone
/// (its switch made a branch, the code no lane can reach from there
/// removed), for each region, and `__wooly_lanes_<k>_<r>_rows` where it
/// reads `%tid` (laneIdsFromLane), to be inlined into the warp function's
/// loops where they fit in kWarpInlineBudget; returns their names.
SmallVector<RegionLanes> buildRegionLaneFunctions(ModuleOp module,
                                                  LLVM::LLVMFuncOp kernel,
                                                  const RegionLayout &layout) {
  StringRef name = kernel->getAttrOfType<StringAttr>("wooly.kernel").getValue();
  auto lanes =
      module.lookupSymbol<LLVM::LLVMFuncOp>(("__wooly_lanes_" + name).str());
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(lanes);
  SmallVector<RegionLanes> names;
  SmallVector<LLVM::LLVMFuncOp> fns;
  size_t ops = 0;
  for (size_t r = 0; r <= layout.cuts.size(); ++r) {
    auto fn = cast<LLVM::LLVMFuncOp>(b.clone(*lanes.getOperation()));
    names.push_back({("__wooly_lanes_" + name + "_" + Twine(r)).str(), ""});
    fn.setSymName(names.back().plain);
    fn.setLinkage(LLVM::Linkage::Internal);
    Block *entry = &fn.getBody().front();
    auto dispatch = cast<LLVM::SwitchOp>(entry->getTerminator());
    Block *to = r ? dispatch.getCaseDestinations()[r - 1]
                  : dispatch.getDefaultDestination();
    b.setInsertionPoint(dispatch);
    LLVM::BrOp::create(b, dispatch.getLoc(), ValueRange{}, to);
    dispatch.erase();
    b.setInsertionPointAfter(fn);
    llvm::SmallPtrSet<Block *, 32> reachable;
    SmallVector<Block *> work{entry};
    while (!work.empty()) {
      Block *block = work.pop_back_val();
      if (reachable.insert(block).second)
        llvm::append_range(work, block->getSuccessors());
    }
    SmallVector<Block *> dead;
    for (Block &block : fn.getBody())
      if (!reachable.contains(&block))
        dead.push_back(&block);
    for (Block *block : dead)
      block->dropAllDefinedValueUses();
    for (Block *block : dead)
      block->erase();
    // The entry's slot addresses this region does not use.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
      if (op.use_empty() && isMemoryEffectFree(&op) &&
          !op.hasTrait<OpTrait::IsTerminator>())
        op.erase();
    fn.walk([&](Operation *) { ++ops; });
    fns.push_back(fn);
    if (laneIdsFromLane(fn, /*rows=*/false)) {
      auto rows = cast<LLVM::LLVMFuncOp>(b.clone(*fn.getOperation()));
      names.back().rows = names.back().plain + "_rows";
      rows.setSymName(names.back().rows);
      laneIdsFromLane(rows, /*rows=*/true);
      rows.walk([&](Operation *) { ++ops; });
      fns.push_back(rows);
    }
    b.setInsertionPointAfter(fns.back());
  }
  if (ops <= kWarpInlineBudget)
    for (LLVM::LLVMFuncOp fn : fns)
      fn.setAlwaysInlineAttr(b.getUnitAttr());
  return names;
}

/// Builds `__wooly_warp_<k>(ctx, params, stride)`, for a block's runtime
/// to run a whole warp at once: the 32 lanes (lane `l`'s context is
/// `stride * l` bytes after lane 0's, `ctx`), all runnable at one region,
/// each run to its next cut in lane order, as the runtime would run them
/// one by one. Where they all stop at the same `shfl` with a full mask and
/// `runAhead` (no thread of the kernel can tell in which order threads of
/// different warps run between cuts: no atomics, no `printf`), the
/// shuffle is completed here and the lanes go on to the next region; the
/// warp's collective then completes before the other warps reach it,
/// which the GPU allows. Where all lanes stopped at the same barrier or
/// exited, returns that region (or WOOLY_REGION_EXITED) with only the
/// first lane's `ctx->resume` set to it: the runtime gives it to the
/// other lanes when it needs them. Otherwise returns 0 with each lane's
/// next region in its `ctx->resume` and the request of a warp collective
/// made, as `__wooly_regions_<k>` leaves one thread.
void buildWarpFunction(ModuleOp module, LLVM::LLVMFuncOp kernel,
                       const RegionLayout &layout, bool runAhead,
                       ArrayAttr contextScope) {
  SmallVector<RegionLanes> regionLanes =
      buildRegionLaneFunctions(module, kernel, layout);
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  StringRef name = kernel->getAttrOfType<StringAttr>("wooly.kernel").getValue();
  Location loc = kernel.getLoc();
  Type ptrTy = LLVM::LLVMPointerType::get(ctx);
  Type i1 = b.getI1Type(), i32 = b.getI32Type(), i64 = b.getI64Type();
  b.setInsertionPointAfter(kernel);
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, ("__wooly_warp_" + name).str(),
      LLVM::LLVMFunctionType::get(i32, {ptrTy, ptrTy, i64}));
  markContextArguments(b, kernel, fn);
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  Value ctx0 = entry->getArgument(0), params = entry->getArgument(1),
        stride = entry->getArgument(2);
  auto c32 = [&](uint32_t v) {
    return Value(LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(v)));
  };
  auto laneCtx = [&](Value lane) {
    return Value(
        LLVM::GEPOp::create(b, loc, ptrTy, b.getI8Type(), ctx0,
                            ArrayRef<LLVM::GEPArg>{Value(
                                LLVM::MulOp::create(b, loc, lane, stride))}));
  };
  auto field = [&](Value c, size_t offset) {
    return Value(LLVM::GEPOp::create(b, loc, ptrTy, b.getI8Type(), c,
                                     ArrayRef<LLVM::GEPArg>{int32_t(offset)}));
  };
  auto runtimeLoad = [&](Type t, Value p) {
    auto op = LLVM::LoadOp::create(b, loc, t, p);
    op.setAliasScopesAttr(contextScope);
    return Value(op);
  };
  Value frame =
      runtimeLoad(ptrTy, field(ctx0, offsetof(WoolyThreadCtx, regionFrame)));
  Value first = runtimeLoad(i32, field(ctx0, offsetof(WoolyThreadCtx, resume)));
  Value nexts = LLVM::AllocaOp::create(
      b, loc, ptrTy, i32,
      LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(32)), 16);
  auto nextOf = [&](Value lane) {
    return Value(LLVM::GEPOp::create(b, loc, ptrTy, i32, nexts,
                                     ArrayRef<LLVM::GEPArg>{lane}));
  };
  size_t regions = layout.cuts.size() + 1;
  Block *dispatch =
      b.createBlock(&fn.getBody(), fn.getBody().end(), {i32}, {loc});
  Block *check = b.createBlock(&fn.getBody(), fn.getBody().end());
  Block *uniform =
      b.createBlock(&fn.getBody(), fn.getBody().end(), {i32}, {loc});
  Block *finish =
      b.createBlock(&fn.getBody(), fn.getBody().end(), {i32}, {loc});
  Block *leave = b.createBlock(&fn.getBody(), fn.getBody().end(), {i32}, {loc});
  // From the runtime, the lanes may resume after a collective it
  // completed.
  b.setInsertionPointToEnd(entry);
  emitResultCopy(b, loc, fn, first, frame, layout, contextScope,
                 [&](llvm::function_ref<void(Value)> emit) {
                   clearUniformBits(b, loc, frame, layout);
                   emitLaneLoop(b, loc, fn, Value(), [&](Value lane, Value) {
                     emit(lane);
                     return Value();
                   });
                 });
  LLVM::BrOp::create(b, loc, ValueRange{first}, dispatch);

  // One loop over the lanes per region, each a call of the lane function
  // with its region a constant.
  SmallVector<int32_t> cases;
  SmallVector<Block *> dests;
  // Whether the block's rows are whole warps (laneIdsFromLane).
  Value rows;
  if (llvm::any_of(regionLanes,
                   [](const RegionLanes &r) { return !r.rows.empty(); })) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(entry);
    Value nx = runtimeLoad(i32, field(ctx0, offsetof(WoolyThreadCtx, ntid)));
    rows =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq,
                             LLVM::AndOp::create(b, loc, nx, c32(31)), c32(0));
  }
  // The branches of regions that end at one cut to `uniform`: where that
  // cut is a constant permutation, it and what follows are emitted in their
  // place (below).
  SmallVector<LLVM::BrOp> toUniform;
  // Per region and form (0: plain, 1: rows), the block that runs it as a
  // loop over the lanes, and the one the dispatch goes to, which gets the
  // region's vector code or a branch to the loop at the end.
  struct RegionEntry {
    Block *loop = nullptr, *entry = nullptr;
    StringRef callee;
  };
  SmallVector<std::array<RegionEntry, 2>> entries(regions);
  for (size_t r = 0; r < regions; ++r) {
    Block *body = b.createBlock(&fn.getBody(), fn.getBody().end());
    cases.push_back(int32_t(r));
    dests.push_back(body);
    auto loop = [&](StringRef callee, int form) {
      Block *entry = b.getInsertionBlock();
      entries[r][form] = {b.createBlock(&fn.getBody(), fn.getBody().end()),
                          entry, callee};
      // The lanes write their own slots (the vector code's fallback too).
      clearUniformBits(b, loc, frame, layout);
      emitLaneLoop(
          b, loc, fn, Value(),
          [&](Value lane, Value) {
            Value next =
                LLVM::CallOp::create(
                    b, loc, TypeRange{i32}, FlatSymbolRefAttr::get(ctx, callee),
                    ValueRange{laneCtx(lane), params, c32(uint32_t(r)), lane,
                               frame, ctx0})
                    .getResult();
            LLVM::StoreOp::create(b, loc, next, nextOf(lane));
            return Value();
          },
          layout.frameAccesses);
      // Where the region can end at one cut only, every lane is there.
      if (std::optional<uint32_t> next = layout.successor[r])
        toUniform.push_back(
            LLVM::BrOp::create(b, loc, ValueRange{c32(*next)}, uniform));
      else
        LLVM::BrOp::create(b, loc, ValueRange{}, check);
    };
    if (regionLanes[r].rows.empty()) {
      b.setInsertionPointToEnd(body);
      loop(regionLanes[r].plain, 0);
      continue;
    }
    Block *plain = b.createBlock(&fn.getBody(), fn.getBody().end());
    Block *whole = b.createBlock(&fn.getBody(), fn.getBody().end());
    b.setInsertionPointToEnd(body);
    LLVM::CondBrOp::create(b, loc, rows, whole, plain);
    b.setInsertionPointToStart(whole);
    loop(regionLanes[r].rows, 1);
    b.setInsertionPointToStart(plain);
    loop(regionLanes[r].plain, 0);
  }
  b.setInsertionPointToEnd(dispatch);
  LLVM::SwitchOp::create(b, loc, dispatch->getArgument(0), leave,
                         ValueRange{c32(0)}, cases, BlockRange(dests),
                         SmallVector<ValueRange>(cases.size(), ValueRange{}));
  SmallVector<Block *> regionBlocks = dests;

  // Whether every lane stopped at the same cut, and which.
  b.setInsertionPointToStart(check);
  Value next = LLVM::LoadOp::create(
      b, loc, i32,
      nextOf(LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(0))));
  Value same = emitLaneLoop(
      b, loc, fn, LLVM::ConstantOp::create(b, loc, i1, b.getBoolAttr(true)),
      [&](Value lane, Value acc) {
        Value v = LLVM::LoadOp::create(b, loc, i32, nextOf(lane));
        return Value(LLVM::AndOp::create(
            b, loc, acc,
            LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, v, next)));
      });
  // The shuffles completed here: one block for all of them, which takes the
  // region that follows, each input word (a constant, or in its staging
  // slot) and whether the mask is a constant (the whole warp) as arguments.
  cases.clear();
  dests.clear();
  SmallVector<SmallVector<Value>> caseArgs;
  const RegionCut *shape = nullptr;
  auto inline_ = [&](const RegionCut &cut) {
    return runAhead && cut.warp && cut.kind == WOOLY_WARP_SHFL &&
           cut.nin == 4 && cut.nout == 2 && cut.staged &&
           (!cut.mask || *cut.mask == ~0u) &&
           (!shape || (shape->out.at == cut.out.at &&
                       shape->resultsStaged == cut.resultsStaged));
  };
  // Arguments: next region, then (word, is constant) for words 0-3, then
  // whether the mask is a constant.
  SmallVector<Type> shflTypes{i32};
  for (int w = 0; w < 4; ++w)
    shflTypes.append({i32, i1});
  shflTypes.push_back(i1);
  Block *shfl = b.createBlock(&fn.getBody(), fn.getBody().end(), shflTypes,
                              SmallVector<Location>(shflTypes.size(), loc));
  // A shuffle whose mode, lane and clamp operands are constants, with the
  // whole warp in its constant mask, is a fixed permutation of the lanes'
  // values: a block of its own moves them as one vector, where the input
  // and result words lie side by side in the frame.
  auto permutable = [&](const RegionCut &cut) {
    auto packed = [](const FrameSlot &s) { return s.stride == 4; };
    return runAhead && cut.warp && cut.kind == WOOLY_WARP_SHFL &&
           cut.nin == 4 && cut.nout == 2 && cut.staged && cut.mask &&
           *cut.mask == ~0u && cut.word[0] && cut.word[2] && cut.word[3] &&
           (cut.word[1] ||
            (layout.staging.size() > 1 && packed(layout.staging[1]))) &&
           cut.resultsStaged && !layout.results.empty() &&
           llvm::all_of(layout.results, packed);
  };
  // Emits, where `b` stands, the permutation of constant shuffle `cut`.
  auto emitPermutation = [&](const RegionCut &cut) {
    auto v32 = VectorType::get({32}, i32);
    SmallVector<int32_t> source(32);
    SmallVector<int32_t> pvals(32);
    for (uint32_t l = 0; l < 32; ++l) {
      bool pval = false;
      source[l] = int32_t(::wooly::cpu::shflSource(
          l, *cut.word[0], *cut.word[2], *cut.word[3], ~0u, pval));
      pvals[l] = pval;
    }
    Value lane0 = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(0));
    auto store = [&](Value v, const FrameSlot &slot) {
      LLVM::StoreOp::create(b, loc, v, slotAddress(b, loc, frame, lane0, slot),
                            /*alignment=*/4)
          .setAliasScopesAttr(contextScope);
    };
    Value values;
    if (cut.word[1]) {
      values = LLVM::ConstantOp::create(
          b, loc, v32,
          DenseElementsAttr::get(v32, b.getI32IntegerAttr(*cut.word[1])));
    } else {
      auto load = LLVM::LoadOp::create(
          b, loc, v32, slotAddress(b, loc, frame, lane0, layout.staging[1]),
          /*alignment=*/4);
      load.setAliasScopesAttr(contextScope);
      values = LLVM::ShuffleVectorOp::create(b, loc, load, load, source);
    }
    store(values, layout.results[0]);
    if (layout.results.size() > 1)
      store(LLVM::ConstantOp::create(
                b, loc, v32,
                DenseElementsAttr::get(v32, ArrayRef<int32_t>(pvals))),
            layout.results[1]);
  };
  auto buildPermutation = [&](const RegionCut &cut, uint32_t after) {
    OpBuilder::InsertionGuard guard(b);
    Block *block = b.createBlock(&fn.getBody(), fn.getBody().end());
    emitPermutation(cut);
    LLVM::BrOp::create(b, loc, ValueRange{}, regionBlocks[after]);
    return block;
  };
  DenseMap<uint32_t, Block *> permutationTo;
  b.setInsertionPointToStart(uniform);
  for (auto [c, cutRef] : llvm::enumerate(layout.cuts)) {
    const RegionCut &cut = cutRef;
    if (permutable(cut)) {
      cases.push_back(int32_t(c + 1));
      dests.push_back(buildPermutation(cut, uint32_t(c + 1)));
      permutationTo[uint32_t(c + 1)] = dests.back();
      caseArgs.push_back({});
      continue;
    }
    if (!inline_(cut))
      continue;
    shape = &cut;
    cases.push_back(int32_t(c + 1));
    dests.push_back(shfl);
    SmallVector<Value> args{c32(uint32_t(c + 1))};
    for (int w = 0; w < 4; ++w) {
      args.push_back(c32(cut.word[w].value_or(0)));
      args.push_back(LLVM::ConstantOp::create(
          b, loc, i1, b.getBoolAttr(bool(cut.word[w]))));
    }
    args.push_back(
        LLVM::ConstantOp::create(b, loc, i1, b.getBoolAttr(bool(cut.mask))));
    caseArgs.push_back(args);
  }
  if (!shape) {
    shfl->erase();
  } else {
    const RegionCut &cut = *shape;
    b.setInsertionPointToStart(shfl);
    Value afterShfl = shfl->getArgument(0);
    // Every lane's mask must name the whole warp...
    Block *all = b.createBlock(&fn.getBody(), fn.getBody().end());
    Block *check = b.createBlock(&fn.getBody(), fn.getBody().end());
    b.setInsertionPointToEnd(shfl);
    LLVM::CondBrOp::create(b, loc, shfl->getArgument(9), all, ValueRange{},
                           check, ValueRange{});
    b.setInsertionPointToStart(check);
    Value full = emitLaneLoop(
        b, loc, fn, LLVM::ConstantOp::create(b, loc, i1, b.getBoolAttr(true)),
        [&](Value lane, Value acc) {
          Value m =
              runtimeLoad(i32, slotAddress(b, loc, frame, lane, layout.mask));
          return Value(LLVM::AndOp::create(
              b, loc, acc,
              LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, m,
                                   c32(~0u))));
        });
    LLVM::CondBrOp::create(b, loc, full, all, ValueRange{}, finish,
                           ValueRange{c32(0)});
    // ... then lane l reads the value of lane shflSource(l)
    // (lib/Runtime/CPU/WarpOps.h), and the lanes go on from the next
    // region.
    b.setInsertionPointToStart(all);
    // Input word `w` of lane `l`.
    auto word = [&](Value l, int64_t w) {
      Value constant = shfl->getArgument(1 + 2 * w);
      if (size_t(w) >= layout.staging.size())
        return constant; // No shuffle leaves it in the frame.
      Value staged =
          runtimeLoad(i32, slotAddress(b, loc, frame, l, layout.staging[w]));
      return Value(LLVM::SelectOp::create(b, loc, shfl->getArgument(2 + 2 * w),
                                          constant, staged));
    };
    auto result = [&](Value l, Value value, Value pval) {
      Value res = slotAddress(b, loc, frame, l, cut.out);
      Value at[2] = {res,
                     LLVM::GEPOp::create(b, loc, ptrTy, b.getI8Type(), res,
                                         ArrayRef<LLVM::GEPArg>{int32_t(4)})};
      // Staged results: only the words some region reads have a slot.
      int words = cut.resultsStaged ? int(layout.results.size()) : 2;
      if (cut.resultsStaged)
        for (int w = 0; w < words; ++w)
          at[w] = slotAddress(b, loc, frame, l, layout.results[w]);
      LLVM::StoreOp::create(b, loc, value, at[0])
          .setAliasScopesAttr(contextScope);
      if (words > 1)
        LLVM::StoreOp::create(b, loc, pval, at[1])
            .setAliasScopesAttr(contextScope);
    };
    emitLaneLoop(b, loc, fn, Value(), [&](Value lane, Value) {
      auto op = [&](auto tag, Value x, Value y) {
        return Value(decltype(tag)::create(b, loc, x, y));
      };
      auto icmp = [&](LLVM::ICmpPredicate p, Value x, Value y) {
        return Value(LLVM::ICmpOp::create(b, loc, p, x, y));
      };
      auto select = [&](Value cond, Value x, Value y) {
        return Value(LLVM::SelectOp::create(b, loc, cond, x, y));
      };
      Value l = LLVM::TruncOp::create(b, loc, i32, lane);
      Value mode = word(lane, 0), bw = word(lane, 2), cw = word(lane, 3);
      Value bl = op(LLVM::AndOp(), bw, c32(31));
      Value cval = op(LLVM::AndOp(), cw, c32(31));
      Value seg = op(LLVM::AndOp(), op(LLVM::LShrOp(), cw, c32(8)), c32(31));
      Value notSeg = op(LLVM::XOrOp(), seg, c32(~0u));
      Value minLane = op(LLVM::AndOp(), l, seg);
      Value maxLane =
          op(LLVM::OrOp(), minLane, op(LLVM::AndOp(), cval, notSeg));
      using P = LLVM::ICmpPredicate;
      Value jUp = op(LLVM::SubOp(), l, bl);
      Value jDown = op(LLVM::AddOp(), l, bl);
      Value jBfly = op(LLVM::XOrOp(), l, bl);
      Value jIdx = op(LLVM::OrOp(), minLane, op(LLVM::AndOp(), bl, notSeg));
      Value isUp = icmp(P::eq, mode, c32(0)),
            isDown = icmp(P::eq, mode, c32(1)),
            isBfly = icmp(P::eq, mode, c32(2));
      Value j =
          select(isUp, jUp, select(isDown, jDown, select(isBfly, jBfly, jIdx)));
      Value pval =
          select(isUp, icmp(P::sge, j, maxLane), icmp(P::sle, j, maxLane));
      Value src = LLVM::ZExtOp::create(b, loc, i64, select(pval, j, l));
      result(lane, word(src, 1), LLVM::ZExtOp::create(b, loc, i32, pval));
      return Value();
    });
    LLVM::BrOp::create(b, loc, ValueRange{afterShfl}, dispatch);
  }
  // All lanes at one barrier, or all exited: the code to return.
  b.setInsertionPointToEnd(uniform);
  for (auto [c, cut] : llvm::enumerate(layout.cuts)) {
    if (cut.warp)
      continue;
    cases.push_back(int32_t(c + 1));
    dests.push_back(finish);
    caseArgs.push_back({c32(uint32_t(c + 1))});
  }
  cases.push_back(int32_t(WOOLY_REGION_EXITED));
  dests.push_back(finish);
  caseArgs.push_back({c32(WOOLY_REGION_EXITED)});
  SmallVector<ValueRange> caseOperands(caseArgs.begin(), caseArgs.end());
  LLVM::SwitchOp::create(b, loc, uniform->getArgument(0), finish,
                         ValueRange{c32(0)}, cases, BlockRange(dests),
                         caseOperands);
  b.setInsertionPointToEnd(same.getParentBlock());
  LLVM::CondBrOp::create(b, loc, same, uniform, ValueRange{next}, finish,
                         ValueRange{c32(0)});
  // The regions' vector code (WarpVector.h) where the lane functions allow
  // it, each followed, where all lanes end at a constant shuffle, by its
  // permutation and the next region's vector code, and so on (up to
  // kWarpVectorChain regions): one run of code that LLVM keeps in
  // registers, where the loops would meet in the frame.
  std::function<void(uint32_t, unsigned)> onward;
  warp_vector::UniformSlots uniformSlots;
  if (layout.uniformBits) {
    uniformSlots.bitsAt = int64_t(32 * layout.uniformBits->at);
    for (const FrameSlot &slot : layout.uniformSlots)
      uniformSlots.slots.push_back(int64_t(32 * slot.at));
  }
  // Where `b` stands: region `r`'s form `form` as vector code, or a branch
  // to its loop.
  std::map<std::pair<size_t, int>, bool> vectorises;
  auto vectorRegion = [&](size_t r, int form, unsigned depth) {
    const RegionEntry &e = entries[r][form];
    Block *from = b.getInsertionBlock();
    Block *code = nullptr;
    auto known = vectorises.find({r, form});
    if (known == vectorises.end() || known->second)
      code = warp_vector::emitWarpVectorRegion(
          b, loc, fn.getBody(), module.lookupSymbol<LLVM::LLVMFuncOp>(e.callee),
          params, frame, ctx0, nexts, uint32_t(r), e.loop, check, uniformSlots,
          [&](OpBuilder &, uint32_t next) { onward(next, depth + 1); });
    vectorises[{r, form}] = code != nullptr;
    b.setInsertionPointToEnd(from);
    LLVM::BrOp::create(b, loc, ValueRange{}, code ? code : e.loop);
  };
  // Where `b` stands, all lanes at region `next`.
  onward = [&](uint32_t next, unsigned depth) {
    if (depth >= kWarpVectorChain || next == 0 || next >= regions ||
        !permutationTo.count(next)) {
      // Each lane's next region, for the code after `uniform` that reads
      // them (the vector code does not store them where all lanes agree):
      // a warp collective's, where its lanes may not all name the warp. At
      // a barrier or the end, `uniform` returns without them.
      bool barrier = next == WOOLY_REGION_EXITED ||
                     (next >= 1 && next - 1 < layout.cuts.size() &&
                      !layout.cuts[next - 1].warp);
      auto v32 = VectorType::get({32}, i32);
      if (!barrier)
        LLVM::StoreOp::create(b, loc,
                              LLVM::ConstantOp::create(
                                  b, loc, v32,
                                  DenseElementsAttr::get(
                                      v32, b.getI32IntegerAttr(int32_t(next)))),
                              nexts, /*alignment=*/16);
      LLVM::BrOp::create(b, loc, ValueRange{c32(next)}, uniform);
      return;
    }
    emitPermutation(layout.cuts[next - 1]);
    if (regionLanes[next].rows.empty()) {
      vectorRegion(next, 0, depth);
      return;
    }
    Block *from = b.getInsertionBlock();
    Block *whole = b.createBlock(&fn.getBody(), fn.getBody().end());
    Block *plain = b.createBlock(&fn.getBody(), fn.getBody().end());
    b.setInsertionPointToEnd(from);
    LLVM::CondBrOp::create(b, loc, rows, whole, plain);
    b.setInsertionPointToEnd(whole);
    vectorRegion(next, 1, depth);
    b.setInsertionPointToEnd(plain);
    vectorRegion(next, 0, depth);
  };
  for (LLVM::BrOp br : toUniform) {
    auto next = br.getDestOperands()[0].getDefiningOp<LLVM::ConstantOp>();
    auto region = uint32_t(cast<IntegerAttr>(next.getValue()).getInt());
    Block *block = br->getBlock();
    br.erase();
    b.setInsertionPointToEnd(block);
    onward(region, 0);
  }
  // The dispatch's entries: a region that follows a permutation is
  // normally run in the chain above, so its own entry starts no chain.
  for (size_t r = 0; r < regions; ++r)
    for (int form = 0; form < 2; ++form)
      if (Block *entry = entries[r][form].entry) {
        b.setInsertionPointToEnd(entry);
        bool chained = r == 0 || !permutationTo.count(uint32_t(r));
        vectorRegion(r, form, chained ? 0 : kWarpVectorChain - 1);
      }

  // All lanes at one barrier or exited: only the first lane's context says
  // where (the runtime knows the others are there too from the region
  // returned). Otherwise each lane's next region and request, as the
  // runtime expects them.
  b.setInsertionPointToStart(finish);
  Block *lanes = b.createBlock(&fn.getBody(), fn.getBody().end());
  Block *firstOnly = b.createBlock(&fn.getBody(), fn.getBody().end());
  b.setInsertionPointToEnd(finish);
  LLVM::CondBrOp::create(b, loc,
                         LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne,
                                              finish->getArgument(0), c32(0)),
                         firstOnly, lanes);
  b.setInsertionPointToStart(firstOnly);
  LLVM::StoreOp::create(b, loc, finish->getArgument(0),
                        field(ctx0, offsetof(WoolyThreadCtx, resume)))
      .setAliasScopesAttr(contextScope);
  LLVM::BrOp::create(b, loc, ValueRange{finish->getArgument(0)}, leave);
  b.setInsertionPointToStart(lanes);
  emitLaneLoop(b, loc, fn, Value(), [&](Value lane, Value) {
    Value c = laneCtx(lane);
    Value n = LLVM::LoadOp::create(b, loc, i32, nextOf(lane));
    LLVM::StoreOp::create(b, loc, n, field(c, offsetof(WoolyThreadCtx, resume)))
        .setAliasScopesAttr(contextScope);
    emitCutRequest(b, loc, fn, c, n, frame, lane, layout, contextScope);
    return Value();
  });
  LLVM::BrOp::create(b, loc, ValueRange{finish->getArgument(0)}, leave);
  b.setInsertionPointToStart(leave);
  LLVM::ReturnOp::create(b, loc, ValueRange{leave->getArgument(0)});
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

HostTargetInfo::HostTargetInfo(MLIRContext *ctx, bool boundsChecks) {
  state.boundsChecks = boundsChecks;
  auto domain = LLVM::AliasScopeDomainAttr::get(
      ctx, DistinctAttr::create(UnitAttr::get(ctx)),
      StringAttr::get(ctx, "wooly"));
  auto scope = [&](StringRef name) -> Attribute {
    return LLVM::AliasScopeAttr::get(ctx,
                                     DistinctAttr::create(UnitAttr::get(ctx)),
                                     domain, StringAttr::get(ctx, name));
  };
  Attribute context = scope("wooly thread context and parameters");
  Attribute cache = scope("wooly access-site cache");
  state.contextScope = ArrayAttr::get(ctx, {context});
  state.cacheScope = ArrayAttr::get(ctx, {cache});
  state.runtimeScope = ArrayAttr::get(ctx, {context, cache});
}

/// `wooly.iteration_barrier`: the runtime parks the thread as if exited
/// until all of the block's threads are there.
struct IterationBarrierOpLowering : ConvertOpToLLVMPattern<IterationBarrierOp> {
  IterationBarrierOpLowering(const LLVMTypeConverter &converter,
                             HostState &state)
      : ConvertOpToLLVMPattern(converter), state(state) {}
  LogicalResult matchAndRewrite(IterationBarrierOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    HostEmitter e{rw, op.getLoc(), state};
    e.call("__wooly_rt_iteration_barrier", {}, {e.ctx(op)});
    rw.eraseOp(op);
    return success();
  }
  HostState &state;
};

/// Iteration barriers, and libm for the math the LLVM lowering leaves.
void HostTargetInfo::populatePatterns(const LLVMTypeConverter &converter,
                                      RewritePatternSet &patterns) const {
  patterns.add<IterationBarrierOpLowering>(converter, state);
  populateMathToLibmConversionPatterns(patterns, /*benefit=*/0);
}

/// Lays out shared memory (variables are offsets in the block's window).
/// A server compiles a module kernel by kernel (Options::kernels: the other
/// kernels are erased, every function and variable stays) and links the
/// parts into one JITDylib, where the first definition of each device
/// function serves every part: a variable a device function (or a global's
/// initializer) names must have the same offset in every part, so those
/// come first, one after the other in module order. A variable that only
/// kernels name takes space only in those kernels, after the former:
/// kernels that do not share it may use the same bytes for their own. A
/// module with many kernels (CUB's and Thrust's, each with its own temp
/// storage) then needs the window of its largest kernel, not the sum.
LogicalResult HostTargetInfo::beginModule(ModuleOp module) const {
  for (auto f : module.getOps<FuncOp>())
    if (!f.isDeclaration())
      state.definedFunctions[f.getSymName()] = f.getKernel();
  // The kernels (in module order) naming each variable, and the variables
  // named elsewhere.
  llvm::StringMap<SmallVector<unsigned>> kernelsNaming;
  llvm::StringSet<> namedElsewhere;
  unsigned numKernels = 0;
  module.walk([&](AddressOfOp a) {
    auto f = a->getParentOfType<FuncOp>();
    if (!f || !f.getKernel())
      namedElsewhere.insert(a.getGlobal());
  });
  for (auto f : module.getOps<FuncOp>()) {
    if (!f.getKernel())
      continue;
    unsigned k = numKernels++;
    f.walk([&](AddressOfOp a) {
      SmallVector<unsigned> &ks = kernelsNaming[a.getGlobal()];
      if (ks.empty() || ks.back() != k)
        ks.push_back(k);
    });
  }
  auto isShared = [](GlobalOp g) {
    return g.getSpace() == StateSpace::shared ||
           g.getSpace() == StateSpace::shared_cluster;
  };
  // Shared variables first: initializers may take their addresses.
  for (auto g : module.getOps<GlobalOp>()) {
    if (!isShared(g))
      continue;
    uint64_t align = std::max<uint64_t>(g.getAlign(), 1);
    if (g.getCount() == 0) {
      state.externShared.push_back(g);
      state.dynamicSharedAlign = std::max(state.dynamicSharedAlign, align);
      continue;
    }
    if (!namedElsewhere.contains(g.getSymName()))
      continue;
    state.sharedEnd = llvm::alignTo(state.sharedEnd, align);
    state.sharedOffsets[g.getSymName()] = state.sharedEnd;
    state.sharedEnd += byteSize(g.getElemType()) * g.getCount();
  }
  // Where each kernel's variables end so far.
  SmallVector<uint64_t> kernelEnd(numKernels, state.sharedEnd);
  for (auto g : module.getOps<GlobalOp>()) {
    if (!isShared(g) || g.getCount() == 0 ||
        namedElsewhere.contains(g.getSymName()))
      continue;
    auto it = kernelsNaming.find(g.getSymName());
    if (it == kernelsNaming.end()) {
      // Named nowhere: no space.
      state.sharedOffsets[g.getSymName()] = 0;
      continue;
    }
    uint64_t offset = 0;
    for (unsigned k : it->second)
      offset = std::max(offset, kernelEnd[k]);
    offset = llvm::alignTo(offset, std::max<uint64_t>(g.getAlign(), 1));
    uint64_t end = offset + byteSize(g.getElemType()) * g.getCount();
    state.sharedOffsets[g.getSymName()] = offset;
    for (unsigned k : it->second)
      kernelEnd[k] = end;
    state.sharedEnd = std::max(state.sharedEnd, end);
  }
  // The reserved shared memory: 1 KiB per block, as NVIDIA GPUs reserve
  // from sm_80 on, only where a kernel asks where it is: after the
  // variables of every kernel of the module (or part).
  bool reserved = false;
  module.walk([&](SRegOp s) {
    reserved |= s.getReg() >= SpecialReg::reserved_smem_offset_begin &&
                s.getReg() <= SpecialReg::reserved_smem_offset_1;
  });
  if (reserved) {
    state.reservedSmem = llvm::alignTo(state.sharedEnd, 16);
    state.sharedEnd = *state.reservedSmem + kReservedSmemBytes;
  }
  return success();
}

/// `.global` and `.const` variables are weak globals of the host: a module
/// compiled kernel by kernel is linked in parts into one JITDylib, whose
/// first definition of each variable the others share
/// (CpuDevice::extendModule). Shared variables have no global.
FailureOr<LoweredGlobal> HostTargetInfo::createGlobal(OpBuilder &b, GlobalOp g,
                                                      uint64_t align) const {
  switch (g.getSpace()) {
  case StateSpace::shared:
  case StateSpace::shared_cluster:
    return LoweredGlobal{}; // Laid out by beginModule.
  case StateSpace::global:
  case StateSpace::constant: {
    if (g.getLinkage() && *g.getLinkage() == Linkage::extern_)
      return g.emitOpError("external variables are not supported on the "
                           "host yet");
    uint64_t count = std::max<uint64_t>(g.getCount(), 1);
    Type arrTy = LLVM::LLVMArrayType::get(g.getElemType(), count);
    state.memoryGlobals.insert(g.getSymName());
    return LoweredGlobal{LLVM::GlobalOp::create(
        b, g.getLoc(), arrTy, /*isConstant=*/false, LLVM::Linkage::Weak,
        ::globalSymbol(g.getSymName()), denseInitializer(g, count), align)};
  }
  default:
    return g.emitOpError("variables in the ")
           << stringifyStateSpace(g.getSpace())
           << " state space are not supported on the host";
  }
}

/// In an initializer, a shared variable's address is its offset; the others
/// are host addresses.
FailureOr<Value>
HostTargetInfo::initializerAddress(OpBuilder &b, GlobalOp g, StringRef sym,
                                   Type elem, const LoweringState &) const {
  Location loc = g.getLoc();
  auto sh = state.sharedOffsets.find(sym);
  if (sh != state.sharedOffsets.end())
    return Value(LLVM::ConstantOp::create(b, loc, elem,
                                          b.getIntegerAttr(elem, sh->second)));
  std::string target;
  if (auto f = state.definedFunctions.find(sym);
      f != state.definedFunctions.end())
    target = f->second ? kernelSymbol(sym) : ::functionSymbol(sym);
  else if (auto og = g->getParentOfType<ModuleOp>().lookupSymbol<GlobalOp>(sym);
           og && (og.getSpace() == StateSpace::global ||
                  og.getSpace() == StateSpace::constant))
    target = ::globalSymbol(sym);
  else
    return g.emitOpError("initializer refers to '")
           << sym << "', which has no host address";
  Value p = LLVM::AddressOfOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), target);
  return Value(LLVM::PtrToIntOp::create(b, loc, elem, p));
}

/// Warp-synchronous code written for GPUs before Volta (CUDA's classic
/// reductions: `if (tid < 32) { s[tid] += s[tid + 32]; ... }` on a
/// `volatile` shared array, without syncs) relies on the lanes of a warp
/// executing each access together, as GPUs still do where the lanes are
/// converged. The CPU backend runs a warp's threads one after another
/// between collectives, so each lane would finish its whole sequence
/// before the next began and read values not yet written. Each volatile
/// shared or generic access therefore first synchronises with the lanes
/// that are active there (`activemask` + `bar.warp.sync`), which restores
/// the lockstep those programs expect at every such access.
static void syncVolatileWarpAccesses(ModuleOp module) {
  SmallVector<Operation *> accesses;
  module.walk([&](Operation *op) {
    StateSpace space;
    if (auto ld = dyn_cast<LoadOp>(op)) {
      if (!ld.getIsVolatile())
        return;
      space = ld.getSpace();
    } else if (auto st = dyn_cast<StoreOp>(op)) {
      if (!st.getIsVolatile())
        return;
      space = st.getSpace();
    } else {
      return;
    }
    if (space == StateSpace::shared || space == StateSpace::generic)
      accesses.push_back(op);
  });
  for (Operation *op : accesses) {
    OpBuilder b(op);
    Value mask = ActiveMaskOp::create(b, op->getLoc(), b.getI32Type());
    WarpSyncOp::create(b, op->getLoc(), mask);
  }
}

/// A loop that waits for another thread's write (findWaitLoops) yields to
/// the other threads of the block at each iteration, as `nanosleep` does:
/// its function then runs as fibers, and a spin-wait on a thread that comes
/// later in the block ends as on a GPU instead of spinning forever. The
/// yield is a `nanosleep 0` marked `wooly.wait_loop` (regionSplitBlocker
/// names the loop).
static void yieldInWaitLoops(ModuleOp module) {
  for (auto fn : module.getOps<FuncOp>())
    for (const WaitLoop &loop : findWaitLoops(fn))
      for (Block *latch : loop.latches) {
        OpBuilder b(latch->getTerminator());
        Location loc = latch->getTerminator()->getLoc();
        Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
        auto yield = NanosleepOp::create(b, loc, zero);
        yield->setAttr("wooly.wait_loop", loop.poll->getLoc());
      }
}

/// Whether no thread of kernel `f` can tell in which order the threads of
/// a block run their code between two barriers or warp collectives, for
/// race-free programs: its only atomics are integer additions, bitwise
/// operations, minima and maxima whose old value is not used (the memory
/// ends the same in any order), and it has no calls (`printf`), fences,
/// volatile accesses or surface reductions. The warp function may then run
/// a loop of a region lane by lane in lock step
/// (lib/Compiler/LockstepLanes.cpp).
static bool orderFreeKernel(FuncOp f) {
  auto commutative = [](AtomicOp op, Type t) {
    switch (op) {
    case AtomicOp::add:
    case AtomicOp::umin:
    case AtomicOp::smin:
    case AtomicOp::umax:
    case AtomicOp::smax:
    case AtomicOp::and_:
    case AtomicOp::or_:
    case AtomicOp::xor_:
      return t.isInteger();
    default:
      return false;
    }
  };
  WalkResult r = f.walk([&](Operation *op) {
    bool ok = true;
    if (auto atom = dyn_cast<AtomOp>(op))
      ok = atom.getResult().use_empty() && !atom.getSem() &&
           commutative(atom.getOp(), atom.getResult().getType());
    else if (auto red = dyn_cast<RedOp>(op))
      ok = !red.getSem() && commutative(red.getOp(), red.getValue().getType());
    else if (auto ld = dyn_cast<LoadOp>(op))
      ok = !ld.getIsVolatile();
    else if (auto st = dyn_cast<StoreOp>(op))
      ok = !st.getIsVolatile();
    else
      ok = !isa<CallOp, CallIndirectOp, FenceOp, SuredOp, TrapOp, BrkptOp,
                GridDepControlOp>(op);
    return ok ? WalkResult::advance() : WalkResult::interrupt();
  });
  return !r.wasInterrupted();
}

/// The warp syncs of volatile accesses, the dynamic shared memory's offset,
/// which functions need fibers, and the declarations of the runtime's entry
/// points.
LogicalResult HostTargetInfo::prepareModule(ModuleOp module, OpBuilder &b,
                                            const LoweringState &) const {
  syncVolatileWarpAccesses(module);
  yieldInWaitLoops(module);
  state.dynamicSharedOffset =
      llvm::alignTo(state.sharedEnd, state.dynamicSharedAlign);
  for (GlobalOp g : state.externShared)
    state.sharedOffsets[g.getSymName()] = state.dynamicSharedOffset;
  // Shared accesses the layout and the special registers bound need no
  // check (HostEmitter::address).
  if (state.boundsChecks)
    annotateSharedOffsetBounds(module, state.sharedOffsets);

  // Which functions need fibers: those with a collective op, and callers of
  // them (indirect calls are assumed to reach one).
  llvm::StringMap<SmallVector<StringRef>> callers;
  SmallVector<StringRef> worklist;
  for (auto f : module.getOps<FuncOp>()) {
    bool direct = false;
    f.walk([&](Operation *op) {
      if (isa<BarrierOp, BarRedOp, IterationBarrierOp, ShflOp, VoteOp, MatchOp,
              ReduxOp, ActiveMaskOp, WarpSyncOp, LdMatrixOp, MmaOp, WmmaLoadOp,
              WmmaStoreOp, WmmaMmaOp, NanosleepOp, CallIndirectOp,
              MbarrierWaitOp, ElectOp, StMatrixOp>(op))
        direct = true;
      else if (auto call = dyn_cast<CallOp>(op))
        callers[call.getCallee()].push_back(f.getSymName());
    });
    if (direct && state.needsFibers.insert(f.getSymName()).second)
      worklist.push_back(f.getSymName());
  }
  while (!worklist.empty()) {
    StringRef f = worklist.pop_back_val();
    for (StringRef caller : callers[f])
      if (state.needsFibers.insert(caller).second)
        worklist.push_back(caller);
  }
  for (auto f : module.getOps<FuncOp>())
    if (f->hasAttr("kernel") && orderFreeKernel(f))
      state.orderFree.insert(kernelSymbol(f.getSymName()));
  // Why each of those kernels could not run region by region instead.
  for (auto f : module.getOps<FuncOp>())
    if (f->hasAttr("kernel") && state.needsFibers.contains(f.getSymName()))
      state.fiberReasons[f.getSymName()] =
          regionSplitBlocker(f, [&](StringRef callee) {
            return state.needsFibers.contains(callee);
          });

  // Declarations of the runtime entry points.
  MLIRContext *ctx = module.getContext();
  Type ptrTy = LLVM::LLVMPointerType::get(ctx);
  Type i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
  Type voidTy = LLVM::LLVMVoidType::get(ctx);
  auto declare = [&](StringRef name, Type result, ArrayRef<Type> args,
                     bool noreturn = false) {
    auto fn = LLVM::LLVMFuncOp::create(
        b, module.getLoc(), name, LLVM::LLVMFunctionType::get(result, args));
    if (noreturn)
      fn->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noreturn")}));
    fn.setNoUnwind(true);
  };
  {
    // See ABI.h: when it returns, the check has only read the context and
    // written the cache entry (and runtime-private memory).
    declare("__wooly_rt_check", voidTy, {ptrTy, ptrTy, i64, i32, i32});
    auto check = module.lookupSymbol<LLVM::LLVMFuncOp>("__wooly_rt_check");
    auto none = LLVM::ModRefInfo::NoModRef, rw = LLVM::ModRefInfo::ModRef;
    check.setMemoryEffectsAttr(LLVM::MemoryEffectsAttr::get(
        ctx, {/*other=*/none, /*argMem=*/rw, /*inaccessibleMem=*/rw,
              /*errnoMem=*/none, /*targetMem0=*/none, /*targetMem1=*/none}));
    check.setArgAttr(0, LLVM::LLVMDialect::getReadonlyAttrName(),
                     b.getUnitAttr());
    check.setArgAttr(0, LLVM::LLVMDialect::getNoCaptureAttrName(),
                     b.getUnitAttr());
    check.setArgAttr(1, LLVM::LLVMDialect::getWriteOnlyAttrName(),
                     b.getUnitAttr());
    check.setArgAttr(1, LLVM::LLVMDialect::getNoCaptureAttrName(),
                     b.getUnitAttr());
  }
  // Does not return (ABI.h): the check's slow path then has no effect on
  // the loop around it, whose context and frame loads may be hoisted.
  declare("__wooly_rt_shared_oob", voidTy, {ptrTy, i32, i64, i32}, true);
  declare("__wooly_rt_space_oob", voidTy, {ptrTy, i64, i32, i32, i32}, true);
  declare("__wooly_rt_barrier", voidTy, {ptrTy, i32, i32, i32});
  declare("__wooly_rt_iteration_barrier", voidTy, {ptrTy});
  declare("__wooly_rt_bar_red", i32, {ptrTy, i32, i32, i32, i32});
  declare("__wooly_rt_warp", voidTy, {ptrTy, i32, i32, ptrTy, i32, ptrTy, i32});
  declare("__wooly_rt_exit", voidTy, {ptrTy}, true);
  declare("__wooly_rt_trap", voidTy, {ptrTy}, true);
  declare("__wooly_rt_bad_call", voidTy, {ptrTy, i64}, true);
  declare("__wooly_rt_malloc", i64, {ptrTy, i64});
  declare("__wooly_rt_free", voidTy, {ptrTy, i64});
  declare("__wooly_rt_sreg", i64, {ptrTy, i32});
  declare("__wooly_rt_isspacep", i32, {ptrTy, i32, i64});
  declare("__wooly_rt_nanosleep", voidTy, {ptrTy, i32});
  declare("__wooly_rt_mbarrier", i64, {ptrTy, i32, i64, i32, i32});
  declare("__wooly_rt_mbarrier_wait", i32, {ptrTy, i64, i32, i32});
  declare("__wooly_rt_bulk_copy", voidTy,
          {ptrTy, i32, i64, i32, i64, i32, i64, i32, i32});
  declare("__wooly_rt_vprintf", i32, {ptrTy, i64, i64});
  declare("__wooly_rt_texture", voidTy, {ptrTy, i32, i64, ptrTy, ptrTy});
  declare("__wooly_rt_texquery", i32, {ptrTy, i32, i32, i64, i32});
  declare("__wooly_rt_assertfail", voidTy, {ptrTy, i64, i64, i32, i64}, true);
  return success();
}

/// The thread loops of the kernels that never synchronise, and what the
/// runtime needs to know of the module.
void HostTargetInfo::finalizeModule(ModuleOp module) const {
  MLIRContext *ctx = module.getContext();
  for (auto fn : llvm::to_vector(module.getOps<LLVM::LLVMFuncOp>())) {
    if (fn->hasAttr("wooly.kernel") && !fn->hasAttr("wooly.needs_fibers"))
      buildBlockLoop(module, fn, state.contextScope);
    auto reason = fn->getAttrOfType<StringAttr>("wooly.fiber_reason");
    if (!reason || !reason.getValue().empty())
      continue;
    std::optional<RegionLayout> layout =
        buildLaneFunction(module, fn, state.contextScope);
    if (!layout) {
      fn->setAttr("wooly.fiber_reason",
                  StringAttr::get(ctx, "local memory live across a barrier "
                                       "or warp collective"));
      continue;
    }
    StringRef name = fn->getAttrOfType<StringAttr>("wooly.kernel").getValue();
    buildRegionFunction(module, fn, *layout, state.contextScope);
    fn->setAttr("wooly.region_function",
                StringAttr::get(ctx, ("__wooly_regions_" + name).str()));
    fn->setAttr(
        "wooly.region_frame_bytes",
        IntegerAttr::get(IntegerType::get(ctx, 64), layout->frameBytes));
    // The warp function, where no thread of the kernel leaves it but at its
    // end (a device function may `exit`: a longjmp out of the middle of a
    // warp). Its warps may run ahead of one another past a `shfl` where the
    // order in which threads of different warps run cannot be seen:
    // no atomics (shared ones are plain loads and stores), no `printf`.
    bool calls = false, ordered = state.sharedAtomics.contains(fn.getName());
    fn.walk([&](Operation *op) {
      if (isa<LLVM::AtomicRMWOp, LLVM::AtomicCmpXchgOp>(op))
        ordered = true;
      auto call = dyn_cast<LLVM::CallOp>(op);
      if (!call)
        return;
      std::optional<StringRef> callee = call.getCallee();
      if (!callee) {
        calls = true;
        return;
      }
      if (*callee == "__wooly_rt_vprintf")
        ordered = true;
      auto f = module.lookupSymbol<LLVM::LLVMFuncOp>(*callee);
      if (!f || !f.isExternal())
        calls = true;
    });
    if (calls)
      continue;
    buildWarpFunction(module, fn, *layout, !ordered, state.contextScope);
    if (state.orderFree.contains(fn.getName()))
      module.lookupSymbol<LLVM::LLVMFuncOp>(("__wooly_warp_" + name).str())
          .setPassthroughAttr(
              ArrayAttr::get(ctx, {StringAttr::get(ctx, "wooly-lockstep")}));
    fn->setAttr("wooly.warp_function",
                StringAttr::get(ctx, ("__wooly_warp_" + name).str()));
  }
  module->setAttr("wooly.num_access_sites",
                  IntegerAttr::get(IntegerType::get(ctx, 64), state.nextSite));
  module->setAttr(
      "wooly.static_shared_size",
      IntegerAttr::get(IntegerType::get(ctx, 64), state.dynamicSharedOffset));
}

//===----------------------------------------------------------------------===//
// Functions, calls and terminators
//===----------------------------------------------------------------------===//

/// Device functions are weak_odr: a module compiled in parts (kernel by
/// kernel) has one instance of each, as of its variables, so a function
/// address taken in one part (a pointer in a `__device__` variable) is the
/// address every part knows and may call (indirect calls are checked
/// against them). All parts compile the same source with the same passes,
/// so every definition is the same: they may be inlined.
LLVM::Linkage HostTargetInfo::functionLinkage(FuncOp op) const {
  return op.getKernel() ? LLVM::Linkage::External : LLVM::Linkage::WeakODR;
}

/// The thread context first; a kernel takes the parameter buffer.
SmallVector<Type> HostTargetInfo::functionArguments(FuncOp op) const {
  Type ptrTy = LLVM::LLVMPointerType::get(op.getContext());
  SmallVector<Type> args{ptrTy};
  if (op.getKernel())
    args.push_back(ptrTy);
  else
    llvm::append_range(args, op.getArgumentTypes());
  return args;
}

void HostTargetInfo::markKernel(OpBuilder &b, LLVM::LLVMFuncOp fn,
                                FuncOp op) const {
  fn.setNoUnwind(true);
}

/// A kernel whose threads synchronise runs them as fibers.
void HostTargetInfo::finishKernel(OpBuilder &b, LLVM::LLVMFuncOp fn, FuncOp op,
                                  const LoweringState &) const {
  if (state.needsFibers.contains(op.getSymName())) {
    fn->setAttr("wooly.needs_fibers", b.getUnitAttr());
    fn->setAttr("wooly.fiber_reason",
                b.getStringAttr(state.fiberReasons.lookup(op.getSymName())));
  }
}

/// A kernel's entry block reads its parameters from the parameter buffer.
SmallVector<Value> HostTargetInfo::bodyArguments(Emitter &pe, FuncOp op,
                                                 Block *entry,
                                                 const LoweringState &s) const {
  if (!op.getKernel())
    return SmallVector<Value>(entry->getArguments().drop_front());
  HostEmitter e = emitter(pe.rw, op);
  SmallVector<Value> args;
  ArrayRef<uint64_t> offsets = s.paramOffsets.find(op.getSymName())->second;
  for (auto [i, t] : llvm::enumerate(op.getArgumentTypes())) {
    Value p = e.gep(entry->getArgument(1), int64_t(offsets[i]));
    args.push_back(
        e.runtime(LLVM::LoadOp::create(e.rw, e.loc, t, p, /*alignment=*/1)));
  }
  return args;
}

/// The thread context.
SmallVector<Value> HostTargetInfo::implicitArguments(Emitter &e,
                                                     Operation *op) const {
  return {emitter(e.rw, op).ctx(op)};
}

/// `vprintf` goes to the runtime's printf, and CUDA's `__assertfail` (a
/// failed `assert`) ends the launch with the assertion's text. The device
/// heap's `malloc` and `free` (and so `new` and `delete`) go to the
/// runtime's heap of the block's memory domain (DeviceHeap.h).
std::optional<LogicalResult>
HostTargetInfo::lowerSpecialCall(CallOp op, CallOp::Adaptor adaptor,
                                 ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  StringRef callee = op.getCallee();
  Value c = e.ctx(op);
  if (callee == "vprintf") {
    if (adaptor.getOperands().size() != 2 || op.getNumResults() > 1)
      return op.emitOpError("vprintf takes (format, args)");
    Value r = e.call("__wooly_rt_vprintf", e.i32(),
                     {c, e.toI64(adaptor.getOperands()[0]),
                      e.toI64(adaptor.getOperands()[1])});
    if (op.getNumResults() == 1)
      rw.replaceOp(op, e.intCast(r, op.getResult(0).getType()));
    else
      rw.eraseOp(op);
    return success();
  }
  if (callee == "malloc" || callee == "free") {
    bool isMalloc = callee == "malloc";
    if (adaptor.getOperands().size() != 1 ||
        op.getNumResults() != (isMalloc ? 1u : 0u))
      return op.emitOpError(isMalloc ? "malloc takes (size) and returns a "
                                       "pointer"
                                     : "free takes (pointer)");
    // The device heap of the block's memory domain (DeviceHeap.h).
    Value arg = e.toI64(adaptor.getOperands()[0]);
    if (isMalloc) {
      Value p = e.call("__wooly_rt_malloc", e.i64(), {c, arg});
      rw.replaceOp(op, e.intCast(p, op.getResult(0).getType()));
    } else {
      e.call("__wooly_rt_free", {}, {c, arg});
      rw.eraseOp(op);
    }
    return success();
  }
  if (callee == "__assertfail") {
    // (message, file, line, function, charSize)
    ValueRange args = adaptor.getOperands();
    if (args.size() < 4 || op.getNumResults())
      return op.emitOpError("__assertfail takes (message, file, line, "
                            "function, size)");
    e.call("__wooly_rt_assertfail", {},
           {c, e.toI64(args[0]), e.toI64(args[1]),
            e.intCast(args[2], rw.getI32Type()), e.toI64(args[3])});
    rw.eraseOp(op);
    return success();
  }
  return std::nullopt;
}

/// Device functions of the module only.
FailureOr<std::string> HostTargetInfo::calleeSymbol(CallOp op) const {
  StringRef callee = op.getCallee();
  auto target = state.definedFunctions.find(callee);
  if (target == state.definedFunctions.end() || target->second)
    return op.emitOpError("calls '")
           << callee
           << "', which has no definition in the module (external device "
              "functions other than vprintf, __assertfail, malloc and free "
              "are not supported yet)";
  return ::functionSymbol(callee);
}

/// Only a device function of the module may be called: any other integer
/// ends the thread's launch (it would jump anywhere).
LogicalResult HostTargetInfo::checkIndirectCall(ConversionPatternRewriter &rw,
                                                CallIndirectOp op,
                                                Value callee) const {
  if (callee.getType().getIntOrFloatBitWidth() != 64)
    return op.emitOpError("32-bit function addresses are not supported");
  if (!state.boundsChecks)
    return success();
  HostEmitter e = emitter(rw, op);
  Value ok = LLVM::ConstantOp::create(rw, op.getLoc(), rw.getI1Type(),
                                      rw.getBoolAttr(false));
  for (const auto &f : state.definedFunctions) {
    if (f.second) // kernels cannot be called
      continue;
    Value addr = LLVM::AddressOfOp::create(rw, op.getLoc(), e.ptr(),
                                           ::functionSymbol(f.getKey()));
    Value asInt =
        LLVM::PtrToIntOp::create(rw, op.getLoc(), rw.getI64Type(), addr);
    Value same = LLVM::ICmpOp::create(rw, op.getLoc(), LLVM::ICmpPredicate::eq,
                                      callee, asInt);
    ok = LLVM::OrOp::create(rw, op.getLoc(), ok, same);
  }
  e.emitUnlikely(ok, [&] {
    e.call("__wooly_rt_bad_call", {}, {e.ctx(op), callee});
  });
  return success();
}

/// `trap` ends the launch with an error.
void HostTargetInfo::emitTrap(ConversionPatternRewriter &rw,
                              Operation *op) const {
  HostEmitter e = emitter(rw, op);
  e.call("__wooly_rt_trap", {}, {e.ctx(op)});
}

//===----------------------------------------------------------------------===//
// Variables and addresses
//===----------------------------------------------------------------------===//

/// A local variable's host address.
FailureOr<Value> HostTargetInfo::localAddress(Emitter &e, AddressOfOp op,
                                              Value slot) const {
  if (op.getType().getIntOrFloatBitWidth() != 64)
    return op->emitOpError("32-bit local addresses are not supported on "
                           "the host yet");
  return e.toInt(slot, op.getType());
}

/// Shared variables are offsets; globals and functions are host addresses.
FailureOr<Value> HostTargetInfo::symbolAddress(Emitter &e, AddressOfOp op,
                                               const LoweringState &) const {
  StringRef sym = op.getGlobal();
  Type t = op.getType();
  auto it = state.sharedOffsets.find(sym);
  if (it != state.sharedOffsets.end())
    return e.cst(t, it->second);
  std::string target;
  if (state.memoryGlobals.contains(sym))
    target = ::globalSymbol(sym);
  else if (auto f = state.definedFunctions.find(sym);
           f != state.definedFunctions.end())
    target = f->second ? kernelSymbol(sym) : ::functionSymbol(sym);
  else
    return op->emitOpError("address of unknown symbol '") << sym << "'";
  if (t.getIntOrFloatBitWidth() != 64)
    return op->emitOpError("32-bit global addresses are not supported on the "
                           "host yet");
  Value addr = LLVM::AddressOfOp::create(e.rw, e.loc, e.ptr(), target);
  return e.toInt(addr, t);
}

/// The parameter's host address in the parameter buffer.
FailureOr<Value> HostTargetInfo::paramAddress(Emitter &e, ParamAddressOp op,
                                              LLVM::LLVMFuncOp fn,
                                              uint64_t offset) const {
  if (op.getType().getIntOrFloatBitWidth() != 64)
    return op.emitOpError("32-bit parameter addresses are not supported on "
                          "the host yet");
  Value params = fn.getBody().front().getArgument(1);
  return e.toInt(e.gep(params, int64_t(offset)), op.getType());
}

/// Shared offsets move by the window base; the other spaces share the
/// generic address.
FailureOr<Value> HostTargetInfo::cvta(Emitter &pe, CvtaOp op, Value a) const {
  HostEmitter e = emitter(pe.rw, op);
  Type rt = op.getType();
  if (op.getSpace() == StateSpace::shared ||
      op.getSpace() == StateSpace::shared_cluster) {
    Value base =
        e.loadField(e.ctx(op), offsetof(WoolyThreadCtx, shared), e.ptr());
    Value baseInt = LLVM::PtrToIntOp::create(e.rw, e.loc, e.i64(), base);
    if (op.getDir() == CvtaDir::to_generic)
      return e.intCast(LLVM::AddOp::create(e.rw, e.loc, baseInt, e.toI64(a)),
                       rt);
    return e.intCast(LLVM::SubOp::create(e.rw, e.loc, e.toI64(a), baseInt), rt);
  }
  if (a.getType().getIntOrFloatBitWidth() != 64 ||
      rt.getIntOrFloatBitWidth() != 64)
    return op.emitOpError("32-bit ")
           << stringifyStateSpace(op.getSpace())
           << " addresses are not supported on the host yet";
  return a;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// A checked host pointer; accesses must be aligned to their size.
FailureOr<Value> HostTargetInfo::accessPointer(ConversionPatternRewriter &rw,
                                               Operation *op, StateSpace space,
                                               Value addr, uint64_t size,
                                               unsigned kind) const {
  return emitter(rw, op).address(op, space, addr, size,
                                 kind | WOOLY_ACCESS_ALIGNED);
}

Value HostTargetInfo::sharedAtomic(Emitter &pe, AtomicOp kind, Value p,
                                   ValueRange values) const {
  // As in emitter(): the builder is the atomic pattern's rewriter.
  HostEmitter e{static_cast<ConversionPatternRewriter &>(pe.rw), pe.loc, state};
  for (Operation *f = pe.rw.getInsertionBlock()->getParentOp(); f;
       f = f->getParentOp()) {
    if (auto lowered = dyn_cast<LLVM::LLVMFuncOp>(f)) {
      state.sharedAtomics.insert(lowered.getName());
      break;
    }
    if (auto func = dyn_cast<FuncOp>(f)) {
      state.sharedAtomics.insert(kernelSymbol(func.getSymName()));
      state.sharedAtomics.insert(::functionSymbol(func.getSymName()));
      break;
    }
  }
  return emitSharedAtomic(e, kind, p, values);
}

//===----------------------------------------------------------------------===//
// Special registers, barriers, asynchronous copies
//===----------------------------------------------------------------------===//

/// `exit` in a kernel returns; in a device function it ends the thread
/// through the runtime.
LogicalResult HostTargetInfo::lower(ExitOp op, ExitOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
  if (fn.getName().starts_with("__wooly_kernel_")) {
    rw.replaceOpWithNewOp<LLVM::ReturnOp>(op, ValueRange{});
    return success();
  }
  HostEmitter e = emitter(rw, op);
  e.call("__wooly_rt_exit", {}, {e.ctx(op)});
  rw.replaceOpWithNewOp<LLVM::UnreachableOp>(op);
  return success();
}

/// `wooly.isspacep`: shared is a range test; the others ask the runtime.
LogicalResult HostTargetInfo::lower(IsSpacePOp op, IsSpacePOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  Value r = e.call(
      "__wooly_rt_isspacep", e.i32(),
      {e.ctx(op), e.c32(uint32_t(op.getSpace())), e.toI64(adaptor.getAddr())});
  rw.replaceOpWithNewOp<LLVM::ICmpOp>(op, LLVM::ICmpPredicate::ne, r, e.c32(0));
  return success();
}

/// `wooly.sreg`: ids come from the thread context, timers from the runtime,
/// lane masks from `%laneid`; a block is a cluster of one CTA.
LogicalResult HostTargetInfo::lower(SRegOp op, SRegOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  Value c = e.ctx(op);
  unsigned dim = op.getDim() ? unsigned(*op.getDim()) : 0;
  auto field = [&](size_t base) {
    return e.loadField(c, base + 4 * dim, e.i32());
  };
  Value v = derivedSReg(e, op.getReg(), [&] {
    return e.loadField(c, offsetof(WoolyThreadCtx, laneid), e.i32());
  });
  if (v) {
    rw.replaceOp(op, e.intCast(v, op.getType()));
    return success();
  }
  switch (op.getReg()) {
  case SpecialReg::tid:
    // Below 1024 (64 in z) in every launch (CpuDevice's DeviceLimits): the
    // mask, which changes no value, tells LLVM so, and lets it drop the
    // checks of shared accesses that index by the thread.
    v = LLVM::AndOp::create(rw, e.loc, field(offsetof(WoolyThreadCtx, tid)),
                            e.c32(dim == 2 ? 63 : 1023));
    break;
  case SpecialReg::ntid:
    v = field(offsetof(WoolyThreadCtx, ntid));
    break;
  case SpecialReg::ctaid:
  case SpecialReg::clusterid:
    v = field(offsetof(WoolyThreadCtx, ctaid));
    break;
  case SpecialReg::nctaid:
  case SpecialReg::nclusterid:
    v = field(offsetof(WoolyThreadCtx, nctaid));
    break;
  case SpecialReg::laneid:
    v = e.loadField(c, offsetof(WoolyThreadCtx, laneid), e.i32());
    break;
  case SpecialReg::warpid:
    v = e.loadField(c, offsetof(WoolyThreadCtx, warpid), e.i32());
    break;
  case SpecialReg::nwarpid:
    v = e.loadField(c, offsetof(WoolyThreadCtx, nwarpid), e.i32());
    break;
  case SpecialReg::gridid:
    v = e.loadField(c, offsetof(WoolyThreadCtx, gridid), e.i32());
    break;
  case SpecialReg::dynamic_smem_size:
    v = e.loadField(c, offsetof(WoolyThreadCtx, dynSmemSize), e.i32());
    break;
  case SpecialReg::total_smem_size:
    v = e.loadField(c, offsetof(WoolyThreadCtx, totalSmemSize), e.i32());
    break;
  case SpecialReg::reserved_smem_offset_begin:
  case SpecialReg::reserved_smem_offset_0:
    v = e.c32(*state.reservedSmem);
    break;
  case SpecialReg::reserved_smem_offset_end:
    v = e.c32(*state.reservedSmem + kReservedSmemBytes);
    break;
  case SpecialReg::reserved_smem_offset_cap:
    v = e.c32(kReservedSmemBytes);
    break;
  case SpecialReg::reserved_smem_offset_1:
    v = e.c32(*state.reservedSmem + kReservedSmemBytes / 2);
    break;
  default:
    // clock, clock64, globaltimer(_lo/_hi), smid, nsmid.
    v = e.call("__wooly_rt_sreg", e.i64(), {c, e.c32(uint32_t(op.getReg()))});
    break;
  }
  rw.replaceOp(op, e.intCast(v, op.getType()));
  return success();
}

/// `wooly.envreg`: the runtime's (a cooperative launch's grid workspace).
LogicalResult HostTargetInfo::lower(EnvRegOp op, EnvRegOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  Value v =
      e.call("__wooly_rt_sreg", e.i64(),
             {e.ctx(op), e.c32(WOOLY_SREG_ENVREG0 + uint32_t(op.getIndex()))});
  rw.replaceOp(op, e.intCast(v, op.getType()));
  return success();
}

/// `wooly.cp_async`: copied at once (completion before the wait is a valid
/// schedule): `src_size` bytes from global, the rest of `size` zero-filled.
LogicalResult HostTargetInfo::lower(CpAsyncOp op, CpAsyncOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  uint64_t size = op.getSize();
  FailureOr<Value> dst =
      e.address(op, StateSpace::shared, adaptor.getDst(), size,
                WOOLY_ACCESS_WRITE | WOOLY_ACCESS_ALIGNED);
  if (failed(dst))
    return failure();
  if (!adaptor.getSrcSize()) {
    FailureOr<Value> src =
        e.address(op, StateSpace::global, adaptor.getSrc(), size,
                  WOOLY_ACCESS_READ | WOOLY_ACCESS_ALIGNED);
    if (failed(src))
      return failure();
    LLVM::MemcpyOp::create(rw, e.loc, *dst, *src, e.c64(size), false);
    rw.eraseOp(op);
    return success();
  }
  // Partial copy: min(src_size, size) bytes, then zeros.
  Value srcSize = e.toI64(adaptor.getSrcSize());
  Value lt = LLVM::ICmpOp::create(rw, e.loc, LLVM::ICmpPredicate::ult, srcSize,
                                  e.c64(size));
  Value n = LLVM::SelectOp::create(rw, e.loc, lt, srcSize, e.c64(size));
  Value nz =
      LLVM::ICmpOp::create(rw, e.loc, LLVM::ICmpPredicate::ne, n, e.c64(0));
  // The source is checked (for `size` bytes at most) only when read.
  Value src = LLVM::IntToPtrOp::create(rw, e.loc, e.ptr(), adaptor.getSrc());
  Block *cur = rw.getInsertionBlock();
  Block *cont = rw.splitBlock(cur, rw.getInsertionPoint());
  Block *copy = rw.createBlock(cont);
  rw.setInsertionPointToEnd(cur);
  LLVM::CondBrOp::create(rw, e.loc, nz, copy, cont);
  rw.setInsertionPointToStart(copy);
  if (state.boundsChecks)
    e.call("__wooly_rt_check", {},
           {e.ctx(op), LLVM::ZeroOp::create(rw, e.loc, e.ptr()),
            adaptor.getSrc(), LLVM::TruncOp::create(rw, e.loc, e.i32(), n),
            e.c32(WOOLY_ACCESS_READ)});
  LLVM::MemcpyOp::create(rw, e.loc, *dst, src, n, false);
  LLVM::BrOp::create(rw, e.loc, ValueRange{}, cont);
  rw.setInsertionPointToStart(cont);
  Value rest = LLVM::SubOp::create(rw, e.loc, e.c64(size), n);
  Value tail = e.gep(*dst, n);
  LLVM::MemsetOp::create(
      rw, e.loc, tail,
      LLVM::ConstantOp::create(rw, e.loc, e.i8(), rw.getI8IntegerAttr(0)), rest,
      false);
  rw.eraseOp(op);
  return success();
}

/// `wooly.barrier`: the runtime parks the thread until the barrier fills.
LogicalResult HostTargetInfo::lower(BarrierOp op, BarrierOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  Value count = adaptor.getCount() ? adaptor.getCount() : e.c32(0);
  e.call("__wooly_rt_barrier", {},
         {e.ctx(op), adaptor.getId(), count, e.c32(op.getArrive() ? 1 : 0)});
  rw.eraseOp(op);
  return success();
}

/// `wooly.bar_red`: a barrier that reduces a predicate.
LogicalResult HostTargetInfo::lower(BarRedOp op, BarRedOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  Value count = adaptor.getCount() ? adaptor.getCount() : e.c32(0);
  Value pred = LLVM::ZExtOp::create(rw, e.loc, e.i32(), adaptor.getPred());
  Value r = e.call(
      "__wooly_rt_bar_red", e.i32(),
      {e.ctx(op), e.c32(uint32_t(op.getOp())), adaptor.getId(), count, pred});
  if (op.getType().isInteger(1))
    r = LLVM::ICmpOp::create(rw, e.loc, LLVM::ICmpPredicate::ne, r, e.c32(0));
  rw.replaceOp(op, r);
  return success();
}

/// `nanosleep` yields to the other threads of the block.
LogicalResult HostTargetInfo::lower(NanosleepOp op,
                                    NanosleepOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  e.call("__wooly_rt_nanosleep", {},
         {e.ctx(op), e.intCast(adaptor.getOperands()[0], e.i32())});
  rw.eraseOp(op);
  return success();
}

//===----------------------------------------------------------------------===//
// Warp collectives
//===----------------------------------------------------------------------===//

/// A warp collective: marshal the inputs, call `__wooly_rt_warp`, read the
/// results back in order (the runtime parks the thread until every lane of
/// the mask has arrived).
template <typename Op>
LogicalResult HostTargetInfo::lowerWarp(Op op, typename Op::Adaptor adaptor,
                                        ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  WarpCall w{e, op, {}};
  FailureOr<WarpRequest> request = marshal(op, adaptor, w);
  if (failed(request))
    return failure();
  Value out =
      w.emit(request->kind, request->mask, wordCount(op->getResultTypes()));
  unsigned word = 0;
  SmallVector<Value> results;
  for (Type t : op->getResultTypes())
    results.push_back(w.read(out, word, t));
  rw.replaceOp(op, results);
  return success();
}

#define WOOLY_HOST_WARP_OP(Op)                                                 \
  LogicalResult HostTargetInfo::lower(Op op, Op::Adaptor adaptor,              \
                                      ConversionPatternRewriter &rw) const {   \
    return lowerWarp(op, adaptor, rw);                                         \
  }
WOOLY_HOST_WARP_OP(ShflOp)
WOOLY_HOST_WARP_OP(VoteOp)
WOOLY_HOST_WARP_OP(MatchOp)
WOOLY_HOST_WARP_OP(ReduxOp)
WOOLY_HOST_WARP_OP(ActiveMaskOp)
WOOLY_HOST_WARP_OP(WarpSyncOp)
WOOLY_HOST_WARP_OP(LdMatrixOp)
WOOLY_HOST_WARP_OP(MmaOp)
WOOLY_HOST_WARP_OP(WmmaMmaOp)
WOOLY_HOST_WARP_OP(WmmaLoadOp)
WOOLY_HOST_WARP_OP(WmmaStoreOp)
WOOLY_HOST_WARP_OP(ElectOp)
WOOLY_HOST_WARP_OP(StMatrixOp)
#undef WOOLY_HOST_WARP_OP

//===----------------------------------------------------------------------===//
// mbarriers and bulk copies (lib/Runtime/CPU/AsyncCopy.cpp)
//===----------------------------------------------------------------------===//

/// `wooly.mbarrier_init`/`inval`/`update`: `__wooly_rt_mbarrier` on the
/// object's shared offset.
static Value callMbarrier(HostEmitter &e, Operation *op, uint32_t kind,
                          Value addr, Value count, Value tx) {
  return e.call("__wooly_rt_mbarrier", e.i64(),
                {e.ctx(op), e.c32(kind), e.toI64(addr),
                 count ? count : e.c32(0), tx ? tx : e.c32(0)});
}

LogicalResult HostTargetInfo::lower(MbarrierInitOp op,
                                    MbarrierInitOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  callMbarrier(e, op, WOOLY_MBAR_INIT, adaptor.getAddr(), adaptor.getCount(),
               {});
  rw.eraseOp(op);
  return success();
}

LogicalResult HostTargetInfo::lower(MbarrierInvalOp op,
                                    MbarrierInvalOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  callMbarrier(e, op, WOOLY_MBAR_INVAL, adaptor.getAddr(), {}, {});
  rw.eraseOp(op);
  return success();
}

/// A block is a cluster of one CTA on the host: a shared::cluster mbarrier
/// address is one of the block's own.
LogicalResult HostTargetInfo::lower(MbarrierUpdateOp op,
                                    MbarrierUpdateOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  uint32_t kind = 0;
  switch (op.getKind()) {
  case MbarrierUpdate::arrive:
    kind = WOOLY_MBAR_ARRIVE;
    break;
  case MbarrierUpdate::arrive_drop:
    kind = WOOLY_MBAR_ARRIVE_DROP;
    break;
  case MbarrierUpdate::expect_tx:
    kind = WOOLY_MBAR_EXPECT_TX;
    break;
  case MbarrierUpdate::complete_tx:
    kind = WOOLY_MBAR_COMPLETE_TX;
    break;
  case MbarrierUpdate::cp_async_arrive:
    // The thread's cp.async copies are complete (done when issued): the
    // added pending arrival and the arrive cancel out.
    rw.replaceOp(op, e.c64(0));
    return success();
  case MbarrierUpdate::cp_async_arrive_noinc:
    kind = WOOLY_MBAR_ARRIVE;
    break;
  }
  rw.replaceOp(op, callMbarrier(e, op, kind, adaptor.getAddr(),
                                adaptor.getCount(), adaptor.getTx()));
  return success();
}

/// `wooly.mbarrier_wait`: the phase parity is the operand, or bit 63 of an
/// arrive's state.
LogicalResult HostTargetInfo::lower(MbarrierWaitOp op,
                                    MbarrierWaitOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  Value phase = adaptor.getPhase();
  if (!op.getParity())
    phase = LLVM::LShrOp::create(rw, e.loc, phase, e.c64(63));
  Value r =
      e.call("__wooly_rt_mbarrier_wait", e.i32(),
             {e.ctx(op), e.toI64(adaptor.getAddr()), e.intCast(phase, e.i32()),
              e.c32(op.getBlocking() ? 1 : 0)});
  rw.replaceOp(op, LLVM::ICmpOp::create(rw, e.loc, LLVM::ICmpPredicate::ne, r,
                                        e.c32(0)));
  return success();
}

/// The pending count of a state: its low bits (ABI.h).
LogicalResult HostTargetInfo::lower(MbarrierPendingCountOp op,
                                    MbarrierPendingCountOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  Value low =
      LLVM::AndOp::create(rw, e.loc, adaptor.getState(),
                          e.c64((uint64_t(1) << WOOLY_MBAR_COUNT_BITS) - 1));
  rw.replaceOp(op, e.intCast(low, e.i32()));
  return success();
}

/// `wooly.bulk_copy`: done at once by the runtime, which then completes
/// its bytes on the mbarrier.
LogicalResult HostTargetInfo::lower(BulkCopyOp op, BulkCopyOp::Adaptor adaptor,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  Value mbar =
      adaptor.getMbar() ? e.toI64(adaptor.getMbar()) : e.c64(~uint64_t(0));
  uint32_t redop = op.getRedop() ? uint32_t(*op.getRedop()) : 0xffffffffu;
  uint32_t redType = op.getRedType() ? uint32_t(*op.getRedType()) : 0;
  e.call("__wooly_rt_bulk_copy", {},
         {e.ctx(op), e.c32(uint32_t(op.getDstSpace())),
          e.toI64(adaptor.getDst()), e.c32(uint32_t(op.getSrcSpace())),
          e.toI64(adaptor.getSrc()), adaptor.getSize(), mbar, e.c32(redop),
          e.c32(redType)});
  rw.eraseOp(op);
  return success();
}

//===----------------------------------------------------------------------===//
// Textures and surfaces
//===----------------------------------------------------------------------===//

namespace {
/// The WoolyTextureOp word of a texture or surface instruction: `kind`,
/// its geometry and the fields `more` adds.
uint32_t textureCode(uint32_t kind, TexGeometry g, uint32_t more = 0) {
  return kind << WOOLY_TEX_KIND_SHIFT |
         uint32_t(g) << WOOLY_TEX_GEOMETRY_SHIFT | more;
}

/// The result field of tex/tld4's `d_type`.
uint32_t texResultCode(ScalarType d) {
  uint32_t r = d == ScalarType::s32 ? 1 : d == ScalarType::u32 ? 2 : 0;
  return r << WOOLY_TEX_RESULT_SHIFT;
}

/// The element, vector and clamp fields of a surface access of `bytes`
/// per element.
uint32_t surfaceCode(unsigned bytes, unsigned vec, SurfClamp clamp) {
  uint32_t log2 = llvm::Log2_32(bytes);
  return log2 << WOOLY_TEX_ELEMENT_SHIFT | vec << WOOLY_TEX_VECTOR_SHIFT |
         uint32_t(clamp) << WOOLY_TEX_CLAMP_SHIFT;
}

/// Calls `__wooly_rt_texture(ctx, code, handle, in, out)` with the 32-bit
/// words of `inputs`; returns the pointer to `nout` output words.
Value textureCall(HostEmitter &e, Operation *op, uint32_t code, Value handle,
                  ValueRange inputs, unsigned nout) {
  WarpCall w{e, op, {}};
  for (Value v : inputs)
    w.add(v);
  Value in = e.entryAlloca(op, e.i32(), std::max<size_t>(w.words.size(), 1), 4);
  for (auto [i, word] : llvm::enumerate(w.words))
    LLVM::StoreOp::create(e.rw, e.loc, word, e.gep(in, int64_t(4 * i)));
  Value out = e.entryAlloca(op, e.i32(), std::max<unsigned>(nout, 1), 4);
  e.call("__wooly_rt_texture", {}, {e.ctx(op), e.c32(code), handle, in, out});
  return out;
}

/// Replaces `op` with the values of its result types read from `out`.
void replaceWithWords(ConversionPatternRewriter &rw, HostEmitter &e,
                      Operation *op, Value out) {
  WarpCall w{e, op, {}};
  unsigned word = 0;
  SmallVector<Value> results;
  for (Type t : op->getResultTypes())
    results.push_back(w.read(out, word, t));
  rw.replaceOp(op, results);
}

/// The layer (if any), the coordinates and `rest` of a texture or surface
/// op, in the order of `__wooly_rt_texture`'s input words.
SmallVector<Value> textureInputs(Value layer, ValueRange coords,
                                 ValueRange rest = {}) {
  SmallVector<Value> in;
  if (layer)
    in.push_back(layer);
  llvm::append_range(in, coords);
  llvm::append_range(in, rest);
  return in;
}
} // namespace

/// `wooly.tex`: the layer, coordinates, level or gradients go to the
/// runtime, which samples as the GPU does (lib/Runtime/CPU/Texture.cpp).
LogicalResult HostTargetInfo::lower(TexOp op, TexOp::Adaptor a,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  uint32_t mode = a.getLod() ? 1 : a.getGradX().empty() ? 0 : 2;
  uint32_t code = textureCode(0, op.getGeometry(),
                              texResultCode(op.getDType()) |
                                  uint32_t(op.getCType() == ScalarType::s32)
                                      << WOOLY_TEX_INT_COORDS_SHIFT |
                                  mode << WOOLY_TEX_MODE_SHIFT);
  SmallVector<Value> rest;
  if (a.getLod())
    rest.push_back(a.getLod());
  llvm::append_range(rest, a.getGradX());
  llvm::append_range(rest, a.getGradY());
  replaceWithWords(rw, e, op,
                   textureCall(e, op, code, a.getHandle(),
                               textureInputs(a.getLayer(), a.getCoords(), rest),
                               4));
  return success();
}

/// `wooly.tld4`: a gather of one component.
LogicalResult HostTargetInfo::lower(Tld4Op op, Tld4Op::Adaptor a,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  uint32_t code =
      textureCode(1, op.getGeometry(),
                  texResultCode(op.getDType()) |
                      uint32_t(op.getComponent()) << WOOLY_TEX_COMPONENT_SHIFT);
  replaceWithWords(rw, e, op,
                   textureCall(e, op, code, a.getHandle(),
                               textureInputs(a.getLayer(), a.getCoords()), 4));
  return success();
}

/// `wooly.tex_query` (txq, suq).
LogicalResult HostTargetInfo::lower(TexQueryOp op, TexQueryOp::Adaptor a,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  Value r = e.call("__wooly_rt_texquery", e.i32(),
                   {e.ctx(op), e.c32(uint32_t(op.getQuery())),
                    e.c32(op.getSurface() ? 1 : 0), a.getHandle(),
                    a.getLod() ? a.getLod() : e.c32(0)});
  rw.replaceOp(op, r);
  return success();
}

/// `wooly.suld`: the elements come back as words.
LogicalResult HostTargetInfo::lower(SuldOp op, SuldOp::Adaptor a,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  unsigned vec = op.getNumResults(),
           bytes = surfaceElementBits(op.getType()) / 8;
  uint32_t code =
      textureCode(2, op.getGeometry(), surfaceCode(bytes, vec, op.getClamp()));
  replaceWithWords(rw, e, op,
                   textureCall(e, op, code, a.getHandle(),
                               textureInputs(a.getLayer(), a.getCoords()),
                               bytes == 8 ? 2 * vec : vec));
  return success();
}

/// `wooly.sust`: coordinates, then the values.
LogicalResult HostTargetInfo::lower(SustOp op, SustOp::Adaptor a,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  unsigned vec = a.getValues().size(),
           bytes = surfaceElementBits(op.getType()) / 8;
  uint32_t code = textureCode(op.getFormatted() ? 4 : 3, op.getGeometry(),
                              surfaceCode(bytes, vec, op.getClamp()));
  textureCall(e, op, code, a.getHandle(),
              textureInputs(a.getLayer(), a.getCoords(), a.getValues()), 0);
  rw.eraseOp(op);
  return success();
}

/// `wooly.sured`: an atomic on the surface's element.
LogicalResult HostTargetInfo::lower(SuredOp op, SuredOp::Adaptor a,
                                    ConversionPatternRewriter &rw) const {
  HostEmitter e = emitter(rw, op);
  uint32_t code = textureCode(
      5, op.getGeometry(),
      surfaceCode(surfaceElementBits(op.getType()) / 8, 1, op.getClamp()) |
          uint32_t(op.getOp()) << WOOLY_TEX_RED_SHIFT);
  textureCall(e, op, code, a.getHandle(),
              textureInputs(a.getLayer(), a.getCoords(), a.getValue()), 0);
  rw.eraseOp(op);
  return success();
}

/// Ops with no effect on the host: breakpoints and the async-copy group
/// bookkeeping (copies complete at once).
#define WOOLY_HOST_ERASED_OP(Op)                                               \
  LogicalResult HostTargetInfo::lower(Op op, Op::Adaptor,                      \
                                      ConversionPatternRewriter &rw) const {   \
    rw.eraseOp(op);                                                            \
    return success();                                                          \
  }
WOOLY_HOST_ERASED_OP(BrkptOp)
WOOLY_HOST_ERASED_OP(CpAsyncCommitOp)
WOOLY_HOST_ERASED_OP(CpAsyncWaitOp)
// Bulk copies are done when issued, by the issuing thread, in the generic
// proxy; a launch has no dependent grids.
WOOLY_HOST_ERASED_OP(BulkCommitOp)
WOOLY_HOST_ERASED_OP(BulkWaitOp)
WOOLY_HOST_ERASED_OP(AsyncFenceOp)
WOOLY_HOST_ERASED_OP(GridDepControlOp)
#undef WOOLY_HOST_ERASED_OP

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertWoolyToLLVMPass
    : mlir::wooly::impl::ConvertWoolyToLLVMBase<ConvertWoolyToLLVMPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto lowering = prepareWoolyToLLVMLowering(module, boundsChecks);
    if (failed(lowering) || failed(applyLowering(module, **lowering)))
      return signalPassFailure();
  }
};

} // namespace

FailureOr<std::unique_ptr<WoolyLLVMLowering>>
mlir::wooly::prepareWoolyToLLVMLowering(ModuleOp module, bool boundsChecks) {
  return prepareLowering(module, std::make_unique<HostTargetInfo>(
                                     module.getContext(), boundsChecks));
}

void mlir::wooly::populateWoolyToLLVMConversionPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns,
    WoolyLLVMLowering &lowering) {
  lowering.populatePatterns(converter, patterns);
}
