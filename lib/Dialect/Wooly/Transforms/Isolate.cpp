//===- Isolate.cpp - The wooly-isolate pass ---------------------*- C++ -*-===//
//
// Software fault isolation for kernels of different tenants sharing one
// device context (DESIGN.md, "Passes": isolate).
//
// Region. A tenant's memory is one contiguous range
// `[isolate_base, isolate_base + isolate_size)` chosen at launch: every
// kernel gets two appended parameters (`wooly.type = "u64"`) with the launch
// roles `isolate_base` and `isolate_size`; every device function with a body
// gets the same two values as two extra trailing arguments, passed by every
// `wooly.call` to it. Indirect calls are refused (their callee's signature
// is unknown); calls to declarations (`vprintf`) are left alone.
// `isolate_size` must be at least 256 bytes (the largest static access is
// 32 bytes; a runtime gives whole 256-byte allocation granules).
//
// Policy: redirect, never trap. An access of `n` bytes at `addr` whose range
// is not inside the region is redirected into the region:
//
//   off  = addr - base            (unsigned; below base wraps to huge)
//   off' = minu(off, size - n)    (size - n: once per function and n)
//   addr' = base + off'
//
// Three ops per access. An access inside the region has `off <= size - n`
// and is unchanged (bit-exact); any other access lands on the region's last
// `n` bytes, so another tenant's bytes are never read or written and the
// kernel keeps running. `n` is the access's footprint: the sum of the
// loaded/stored values (vectors included), the atomic's operand, the bytes
// a `cp.async` reads (`min(src_size, size)`), or a wmma fragment's rows
// times its stride; a wmma stride whose footprint exceeds the region is
// replaced by 0 (the fragment then reads one row repeatedly).
//
// What is fenced, by state space and address provenance. The address of an
// access is traced back (through `arith.addi/subi` with one pointer operand,
// `arith.select` of two like pointers, and `cvta`) to a root:
//
//   - an object of the module: `wooly.addressof` of a `.global`, `.const` or
//     `.local` variable of known size, or `wooly.param_address` of a kernel
//     parameter. The module belongs to the tenant that loaded it, so the
//     access is clamped into that object (same formula, with the object's
//     address and size): exact for correct code, and an offset added to the
//     object's address cannot reach anything else.
//   - a generic address made by `cvta to_generic shared/local` of an address
//     that is not such an object: the access is rewritten into that state
//     space (`cvta from_generic` + the space's own access), where it can only
//     touch the block's shared window or the thread's local memory.
//   - otherwise (kernel parameters, loaded pointers, integers, block
//     arguments): global, generic and const accesses are fenced into the
//     tenant region; shared, local and param accesses are left alone.
//
// `const` is fenced like global because on the CPU backend const addresses
// are host pointers checked only against live allocations, which include
// other tenants' buffers. `cp.async` sources are global. `ldmatrix` (shared),
// `prefetch` (no access), `isspacep` and values of kernel parameters (not
// memory accesses) are untouched.
//
// Refused with a located error: indirect calls, and reads of %envreg* (a
// cooperative launch's grid workspace lies outside the region).
//
// Limitations (documented, not silently wrong for the corpus):
//   - A generic pointer into shared or local memory that cannot be traced
//     (e.g. carried by a loop's block argument, stored to memory, passed to a
//     device function) is fenced into the region: the access is redirected
//     and reads the region's last bytes. Likewise a wmma access to a module
//     variable, and accesses to unsized (`extern`) variables.
//   - On the CPU backend local and param accesses are raw host pointers that
//     the backend does not check; an untraceable `ld.local`/`ld.param` at an
//     arbitrary address is not fenced here (on GPUs these spaces are
//     confined by the hardware).
//   - The runtime's `vprintf` reads the format string and argument buffer it
//     is given (and `%s` strings) without a fence.
//   - Only 64-bit addresses are supported (32-bit global/generic addresses
//     are refused with an error).
//
//===----------------------------------------------------------------------===//

#include "VirtualBlocks.h"

#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Dialect/Wooly/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdio>
#include <functional>

namespace mlir::wooly {
#define GEN_PASS_DEF_WOOLYISOLATE
#include "Wooly/Dialect/Wooly/Transforms/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;

namespace {

using vblocks::typeBytes;

/// Bits of one element of a wmma fragment's matrix in memory.
unsigned scalarBits(ScalarType t) {
  switch (t) {
  case ScalarType::b1:
    return 1;
  case ScalarType::s4:
  case ScalarType::u4:
    return 4;
  case ScalarType::b8:
  case ScalarType::u8:
  case ScalarType::s8:
  case ScalarType::e4m3:
  case ScalarType::e5m2:
    return 8;
  case ScalarType::b16:
  case ScalarType::u16:
  case ScalarType::s16:
  case ScalarType::f16:
  case ScalarType::bf16:
  case ScalarType::e4m3x2:
  case ScalarType::e5m2x2:
    return 16;
  case ScalarType::b64:
  case ScalarType::u64:
  case ScalarType::s64:
  case ScalarType::f64:
    return 64;
  case ScalarType::b128:
    return 128;
  default:
    return 32;
  }
}

/// Where an address comes from (see the file header).
struct Root {
  enum Kind { Unknown, Window, Object } kind = Unknown;
  /// Window: the space (shared, shared_cluster, local) and the type of its
  /// addresses. Object: the object's own space.
  StateSpace space = StateSpace::generic;
  Type windowAddrType;
  /// Object: a module variable, or else a kernel parameter's index.
  GlobalOp var;
  int64_t paramIndex = -1;
  uint64_t size = 0;

  bool sameAs(const Root &o) const {
    if (kind != o.kind)
      return false;
    if (kind == Window)
      return space == o.space && windowAddrType == o.windowAddrType;
    if (kind == Object)
      return space == o.space && var == o.var && paramIndex == o.paramIndex;
    return true;
  }
};

/// Rewrites the accesses of one function.
class FunctionFencer {
public:
  FunctionFencer(FuncOp func, SymbolTable &symbols, Value base, Value size)
      : func(func), symbols(symbols), base(base), size(size),
        builder(func.getContext()) {}

  LogicalResult run() {
    SmallVector<Operation *> accesses;
    func.walk([&](Operation *op) {
      if (isa<LoadOp, StoreOp, AtomOp, RedOp, CpAsyncOp, WmmaLoadOp,
              WmmaStoreOp>(op))
        accesses.push_back(op);
    });
    for (Operation *op : accesses)
      if (failed(fence(op)))
        return failure();
    return success();
  }

private:
  /// Traces `v` to its root (see the file header).
  Root trace(Value v, unsigned depth = 0) {
    if (depth > 32)
      return {};
    Operation *def = v.getDefiningOp();
    if (!def)
      return {};
    if (auto a = dyn_cast<AddressOfOp>(def)) {
      auto var = symbols.lookup<GlobalOp>(a.getGlobal());
      if (!var)
        return {};
      Root r;
      r.space = var.getSpace();
      if (r.space == StateSpace::shared ||
          r.space == StateSpace::shared_cluster) {
        r.kind = Root::Window;
        r.windowAddrType = v.getType();
        return r;
      }
      uint64_t elem = typeBytes(var.getElemType());
      if (var.getCount() == 0 || elem == 0)
        return {};
      r.kind = Root::Object;
      r.var = var;
      r.size = elem * var.getCount();
      return r;
    }
    if (auto p = dyn_cast<ParamAddressOp>(def)) {
      int64_t i = p.getIndex();
      if (!func.getKernel() || i < 0 || i >= int64_t(func.getNumArguments()))
        return {};
      Root r;
      r.kind = Root::Object;
      r.space = StateSpace::param;
      r.paramIndex = i;
      r.size = typeBytes(func.getArgument(i).getType());
      return r.size ? r : Root{};
    }
    if (auto c = dyn_cast<CvtaOp>(def)) {
      Root inner = trace(c.getAddr(), depth + 1);
      if (c.getDir() == CvtaDir::to_generic) {
        if (inner.kind == Root::Object && inner.space == c.getSpace())
          return inner;
        if (c.getSpace() == StateSpace::shared ||
            c.getSpace() == StateSpace::shared_cluster ||
            c.getSpace() == StateSpace::local) {
          Root r;
          r.kind = Root::Window;
          r.space = c.getSpace();
          r.windowAddrType = c.getAddr().getType();
          return r;
        }
        return {};
      }
      // from_generic: keeps an object of that space.
      if (inner.kind == Root::Object && inner.space == c.getSpace())
        return inner;
      return {};
    }
    if (auto add = dyn_cast<arith::AddIOp>(def)) {
      Root l = trace(add.getLhs(), depth + 1);
      Root r = trace(add.getRhs(), depth + 1);
      if (l.kind != Root::Unknown && r.kind == Root::Unknown)
        return l;
      if (r.kind != Root::Unknown && l.kind == Root::Unknown)
        return r;
      return {};
    }
    if (auto sub = dyn_cast<arith::SubIOp>(def)) {
      Root l = trace(sub.getLhs(), depth + 1);
      Root r = trace(sub.getRhs(), depth + 1);
      return r.kind == Root::Unknown ? l : Root{};
    }
    if (auto sel = dyn_cast<arith::SelectOp>(def)) {
      Root l = trace(sel.getTrueValue(), depth + 1);
      Root r = trace(sel.getFalseValue(), depth + 1);
      return l.sameAs(r) ? l : Root{};
    }
    if (isa<arith::ExtUIOp, arith::ExtSIOp>(def))
      return trace(def->getOperand(0), depth + 1);
    return {};
  }

  Value c64(uint64_t v, Location loc) {
    return arith::ConstantIntOp::create(builder, loc, int64_t(v), 64);
  }

  /// `isolate_size - n`, computed once per function at its entry.
  Value lastOffset(uint64_t n) {
    auto it = lasts.find(n);
    if (it != lasts.end())
      return it->second;
    OpBuilder::InsertionGuard g(builder);
    builder.setInsertionPointToStart(&func.getBody().front());
    Location loc = func.getLoc();
    Value last = arith::SubIOp::create(builder, loc, size, c64(n, loc));
    lasts[n] = last;
    return last;
  }

  /// `lo + minu(addr - lo, last)`: the clamp of the file header.
  Value clamp(Value addr, Value lo, Value last, Location loc) {
    Value off = arith::SubIOp::create(builder, loc, addr, lo);
    Value min = arith::MinUIOp::create(builder, loc, off, last);
    return arith::AddIOp::create(builder, loc, lo, min);
  }

  /// The address of an object root, in `space` (the access's).
  Value objectAddress(const Root &r, StateSpace space, Location loc) {
    Value a;
    Type i64 = builder.getI64Type();
    if (r.var)
      a = AddressOfOp::create(builder, loc, i64, GlobalOp(r.var).getSymName());
    else
      a = ParamAddressOp::create(builder, loc, i64, r.paramIndex);
    if (space == StateSpace::generic)
      a = CvtaOp::create(builder, loc, i64, CvtaDir::to_generic, r.space, a);
    return a;
  }

  /// Footprint in bytes of a wmma access (static part).
  struct WmmaShape {
    uint64_t lines = 0, width = 0, bits = 0;
  };
  static FailureOr<WmmaShape> wmmaShape(StringRef shape, MatrixRole role,
                                        Layout layout, ScalarType type) {
    unsigned m = 0, n = 0, k = 0;
    if (sscanf(shape.str().c_str(), "m%un%uk%u", &m, &n, &k) != 3)
      return failure();
    uint64_t rows = m, cols = n;
    if (role == MatrixRole::a)
      cols = k;
    else if (role == MatrixRole::b)
      rows = k;
    WmmaShape s;
    s.lines = layout == Layout::row ? rows : cols;
    s.width = layout == Layout::row ? cols : rows;
    s.bits = scalarBits(type);
    return s;
  }

  /// Replaces a wmma access's address (and stride) by fenced ones.
  LogicalResult fenceWmma(Operation *op, OpOperand &addrOperand,
                          OpOperand *strideOperand, WmmaShape s) {
    Location loc = op->getLoc();
    builder.setInsertionPoint(op);
    uint64_t rowBytes = (s.width * s.bits + 7) / 8;
    Value last;
    if (!strideOperand) {
      last = lastOffset((s.lines * s.width * s.bits + 7) / 8);
    } else {
      // n = ((lines - 1) * bits * stride + width * bits + 7) / 8; when n
      // exceeds the region, stride 0 (footprint: one row).
      Value stride = strideOperand->get();
      Value s64 =
          arith::ExtUIOp::create(builder, loc, builder.getI64Type(), stride);
      Value bits = arith::MulIOp::create(builder, loc, s64,
                                         c64((s.lines - 1) * s.bits, loc));
      bits = arith::AddIOp::create(builder, loc, bits,
                                   c64(s.width * s.bits + 7, loc));
      Value n = arith::ShRUIOp::create(builder, loc, bits, c64(3, loc));
      Value ok = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ule,
                                       n, size);
      Value zero = arith::ConstantIntOp::create(builder, loc, 0, 32);
      Value safeStride =
          arith::SelectOp::create(builder, loc, ok, stride, zero);
      Value safeN =
          arith::SelectOp::create(builder, loc, ok, n, c64(rowBytes, loc));
      last = arith::SubIOp::create(builder, loc, size, safeN);
      strideOperand->set(safeStride);
    }
    addrOperand.set(clamp(addrOperand.get(), base, last, loc));
    return success();
  }

  LogicalResult fence(Operation *op) {
    Location loc = op->getLoc();
    builder.setInsertionPoint(op);
    StateSpace space = StateSpace::global;
    OpOperand *addr = nullptr;
    uint64_t n = 0;
    std::function<void(StateSpace)> setSpace = [](StateSpace) {};
    if (auto ld = dyn_cast<LoadOp>(op)) {
      space = ld.getSpace();
      addr = &ld.getAddrMutable();
      for (Type t : ld.getResultTypes())
        n += typeBytes(t);
      setSpace = [ld](StateSpace s) mutable { ld.setSpace(s); };
    } else if (auto st = dyn_cast<StoreOp>(op)) {
      space = st.getSpace();
      addr = &st.getAddrMutable();
      for (Value v : st.getValues())
        n += typeBytes(v.getType());
      setSpace = [st](StateSpace s) mutable { st.setSpace(s); };
    } else if (auto at = dyn_cast<AtomOp>(op)) {
      space = at.getSpace();
      addr = &at.getAddrMutable();
      n = typeBytes(at.getResult().getType());
      setSpace = [at](StateSpace s) mutable { at.setSpace(s); };
    } else if (auto red = dyn_cast<RedOp>(op)) {
      space = red.getSpace();
      addr = &red.getAddrMutable();
      n = typeBytes(red.getValue().getType());
      setSpace = [red](StateSpace s) mutable { red.setSpace(s); };
    } else if (auto cp = dyn_cast<CpAsyncOp>(op)) {
      return fenceCpAsync(cp);
    } else if (auto wl = dyn_cast<WmmaLoadOp>(op)) {
      space = wl.getSpace();
      addr = &wl.getAddrMutable();
      setSpace = [wl](StateSpace s) mutable { wl.setSpace(s); };
    } else if (auto ws = dyn_cast<WmmaStoreOp>(op)) {
      space = ws.getSpace();
      addr = &ws.getAddrMutable();
      setSpace = [ws](StateSpace s) mutable { ws.setSpace(s); };
    }
    bool isWmma = isa<WmmaLoadOp, WmmaStoreOp>(op);
    if (space == StateSpace::shared || space == StateSpace::shared_cluster)
      return success();
    if (!isWmma && n == 0)
      return op->emitOpError("wooly-isolate: access of unknown size");

    Root root = trace(addr->get());
    bool isLocalOrParam =
        space == StateSpace::local || space == StateSpace::param;
    // Generic address into shared/local memory: access that space instead.
    if (space == StateSpace::generic && root.kind == Root::Window) {
      Value a = CvtaOp::create(builder, loc, root.windowAddrType,
                               CvtaDir::from_generic, root.space, addr->get());
      addr->set(a);
      setSpace(root.space);
      return success();
    }
    // An object of the module: clamp into it.
    bool objectFits = root.kind == Root::Object && !isWmma && n <= root.size &&
                      (root.space == space || space == StateSpace::generic);
    if (objectFits) {
      Value lo = objectAddress(root, space, loc);
      Value last = c64(root.size - n, loc);
      addr->set(clamp(addr->get(), lo, last, loc));
      return success();
    }
    if (isLocalOrParam)
      return success();
    // Global, generic, const: into the tenant region.
    if (!addr->get().getType().isInteger(64))
      return op->emitOpError("wooly-isolate: only 64-bit ")
             << stringifyStateSpace(space) << " addresses are supported";
    if (isWmma) {
      FailureOr<WmmaShape> s;
      if (auto wl = dyn_cast<WmmaLoadOp>(op))
        s = wmmaShape(wl.getShape(), wl.getRole(), wl.getLayout(),
                      wl.getType());
      else {
        auto ws = cast<WmmaStoreOp>(op);
        s = wmmaShape(ws.getShape(), MatrixRole::d, ws.getLayout(),
                      ws.getType());
      }
      if (failed(s))
        return op->emitOpError("wooly-isolate: unknown wmma shape");
      OpOperand *stride = nullptr;
      if (auto wl = dyn_cast<WmmaLoadOp>(op);
          wl && !wl.getStrideMutable().empty())
        stride = &wl.getStrideMutable()[0];
      if (auto ws = dyn_cast<WmmaStoreOp>(op);
          ws && !ws.getStrideMutable().empty())
        stride = &ws.getStrideMutable()[0];
      return fenceWmma(op, *addr, stride, *s);
    }
    addr->set(clamp(addr->get(), base, lastOffset(n), loc));
    return success();
  }

  /// The source of `cp.async` (global) reads `min(src_size, size)` bytes.
  LogicalResult fenceCpAsync(CpAsyncOp cp) {
    Location loc = cp.getLoc();
    builder.setInsertionPoint(cp);
    uint64_t n = cp.getSize();
    Root root = trace(cp.getSrc());
    if (root.kind == Root::Object && root.space == StateSpace::global &&
        n <= root.size) {
      // Clamping with the full size is exact for a copy inside the object
      // only when it reads all `size` bytes; use the dynamic count.
      Value lo = objectAddress(root, StateSpace::global, loc);
      Value count = c64(n, loc);
      if (Value ss = cp.getSrcSize()) {
        Value s64 =
            arith::ExtUIOp::create(builder, loc, builder.getI64Type(), ss);
        count = arith::MinUIOp::create(builder, loc, s64, count);
      }
      Value last =
          arith::SubIOp::create(builder, loc, c64(root.size, loc), count);
      cp.getSrcMutable().set(clamp(cp.getSrc(), lo, last, loc));
      return success();
    }
    Value last;
    if (Value ss = cp.getSrcSize()) {
      Value s64 =
          arith::ExtUIOp::create(builder, loc, builder.getI64Type(), ss);
      Value count = arith::MinUIOp::create(builder, loc, s64, c64(n, loc));
      last = arith::SubIOp::create(builder, loc, size, count);
    } else {
      last = lastOffset(n);
    }
    cp.getSrcMutable().set(clamp(cp.getSrc(), base, last, loc));
    return success();
  }

  FuncOp func;
  SymbolTable &symbols;
  Value base, size;
  OpBuilder builder;
  llvm::DenseMap<uint64_t, Value> lasts;
};

struct WoolyIsolatePass : wooly::impl::WoolyIsolateBase<WoolyIsolatePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    SymbolTable symbols(module);

    // Indirect calls cannot be given the region: refuse them.
    if (failed(vblocks::refuseIndirectCalls(
            module, "wooly-isolate",
            "device functions receive the tenant region as extra arguments")))
      return signalPassFailure();

    // A cooperative launch's grid workspace (%envreg1:%envreg2, through
    // which cooperative groups synchronise the grid) lies outside the
    // tenant's region: its accesses would be redirected, so refuse.
    WalkResult grid = module.walk([&](EnvRegOp env) {
      env.emitError() << "wooly-isolate: "
                      << "this kernel synchronises its whole grid (it reads "
                         "%envreg"
                      << env.getIndex()
                      << ", a cooperative launch's grid workspace, which "
                         "lies outside the tenant's region; not supported "
                         "yet)";
      return WalkResult::interrupt();
    });
    if (grid.wasInterrupted())
      return signalPassFailure();
    // A bulk copy's range is known only at run time and the copy is not
    // redirected into the tenant's region yet: refuse it.
    WalkResult bulk = module.walk([&](BulkCopyOp copy) {
      copy.emitError() << "wooly-isolate: bulk copies (cp.async.bulk) are "
                          "not supported yet";
      return WalkResult::interrupt();
    });
    if (bulk.wasInterrupted())
      return signalPassFailure();

    // Append the region to every function with a body.
    Builder b(ctx);
    Type i64 = b.getI64Type();
    llvm::DenseMap<Operation *, std::pair<Value, Value>> region;
    SmallVector<FuncOp> funcs;
    for (auto func : module.getOps<FuncOp>()) {
      if (func.isDeclaration())
        continue;
      funcs.push_back(func);
      unsigned n = func.getNumArguments();
      auto attrs = [&](StringRef role) {
        SmallVector<NamedAttribute> a{
            b.getNamedAttr("wooly.type", b.getStringAttr("u64"))};
        if (func.getKernel())
          a.push_back(b.getNamedAttr(kLaunchParamAttr, b.getStringAttr(role)));
        return b.getDictionaryAttr(a);
      };
      Location loc = func.getLoc();
      if (failed(func.insertArguments(
              {n, n}, {i64, i64},
              {attrs("isolate_base"), attrs("isolate_size")}, {loc, loc}))) {
        func.emitOpError("wooly-isolate: cannot append the region arguments");
        return signalPassFailure();
      }
      region[func] = {func.getArgument(n), func.getArgument(n + 1)};
    }

    // Pass the region on in every call to a function with a body.
    llvm::DenseMap<Operation *, SmallVector<Value>> extra;
    for (auto &[func, r] : region)
      extra[func] = {r.first, r.second};
    if (failed(vblocks::passOnTrailingArgs(module, extra, "wooly-isolate")))
      return signalPassFailure();

    for (FuncOp func : funcs) {
      auto [base, size] = region.lookup(func);
      if (failed(FunctionFencer(func, symbols, base, size).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
