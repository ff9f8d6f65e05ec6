//===- Coalesce.cpp - Fuse launches into one kernel -------------*- C++ -*-===//
//
// wooly-coalesce (see Passes.td; the table: include/Wooly/Runtime/
// CoalesceTable.h). For the distinct kernels K0..Kn-1 of the option it adds
//
//   wooly.func @__wooly_part_Ki(<Ki's params>, ctaid x/y/z, nctaid x/y/z,
//                               tid x/y/z, ntid x/y/z, dynamic_smem_size)
//     (Ki's body; the block/thread id registers read the trailing args)
//
//   wooly.func @__wooly_coalesced(%table: i64 {coalesce_table}) kernel:
//     entry:    b = %ctaid.x; t = %tid.x; n = table[0]; br scan(0)
//     scan(i):  i < n ? check(i) : exit
//     check(i): rec = table + 8 + 48 i; first = rec[4];
//               g = rec.grid; rel = b - first
//               b >= first && rel < gx*gy*gz ? found : scan(i + 1)
//     found:    t < bx*by*bz ? run : exit          (idle threads leave)
//     run:      ctaid = (rel % gx, rel / gx % gy, rel / gx / gy)
//               tid = (t % bx, t / bx % by, t / bx / by)
//               kernel index k: a chain of cond_br to call_j (else exit)
//     call_j:   params loaded from rec.params + offset (CUDA layout)
//               call @__wooly_part_Kj(...); ret
//
// The idle threads of a part are the block's last ones, so the part's warps
// are numbered as in its own launch and `%laneid`/`%warpid` need no
// rewriting; threads that exited do not take part in `bar.sync`.
//
// A kernel's function-scope `.local` variables live in its frame: the part
// function gets copies (`<var>___wooly_part_<kernel>`) owned by it.
// Function-scope `.shared` variables stay shared with the kernel (shared
// memory is laid out per module, so all of them coexist in the fused
// kernel; the kernel analysis, which follows calls, reports their sum).
//
// Arithmetic is in 32 bits except the block range test (64 bits): grid and
// block dimensions are within CUDA's limits (a grid's block count below
// 2^32 is assumed, as the table's `first block` is a u32).
//
//===----------------------------------------------------------------------===//

#include "VirtualBlocks.h"

#include "Wooly/Dialect/Wooly/Analysis/KernelAnalysis.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Dialect/Wooly/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::wooly {
#define GEN_PASS_DEF_WOOLYCOALESCE
#include "Wooly/Dialect/Wooly/Transforms/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;

namespace {

constexpr const char *kPass = "wooly-coalesce";
/// Table layout (CoalesceTable.h).
constexpr int64_t kHeaderBytes = 8, kPartBytes = 48;
constexpr int64_t kKernelIndexOff = 0, kFirstBlockOff = 4, kGridOff = 8,
                  kBlockOff = 20, kDynSharedOff = 32, kParamsOff = 40;
/// The trailing arguments of a part function, in order.
constexpr unsigned kNumIdArgs = 13;

/// Whether reading `reg` in a part must see the part's value.
bool isRemapped(SpecialReg reg) {
  switch (reg) {
  case SpecialReg::tid:
  case SpecialReg::ntid:
  case SpecialReg::ctaid:
  case SpecialReg::nctaid:
  case SpecialReg::clusterid:
  case SpecialReg::nclusterid:
  case SpecialReg::dynamic_smem_size:
    return true;
  default:
    return false;
  }
}

/// Index of `reg`'s dimension `d` among the trailing arguments.
unsigned idArgIndex(SpecialReg reg, unsigned d) {
  switch (reg) {
  case SpecialReg::ctaid:
  case SpecialReg::clusterid: // Clusters of one block: the block id.
    return d;
  case SpecialReg::nctaid:
  case SpecialReg::nclusterid:
    return 3 + d;
  case SpecialReg::tid:
    return 6 + d;
  case SpecialReg::ntid:
    return 9 + d;
  default:
    return 12; // dynamic_smem_size
  }
}

/// `v` (an integer) as `type` (an integer), zero-extended or truncated.
Value castInt(OpBuilder &b, Location loc, Value v, Type type) {
  unsigned from = v.getType().getIntOrFloatBitWidth();
  unsigned to = type.getIntOrFloatBitWidth();
  if (from == to)
    return v;
  if (from < to)
    return arith::ExtUIOp::create(b, loc, type, v);
  return arith::TruncIOp::create(b, loc, type, v);
}

/// Memoised: why device function `f` (or what it calls) cannot run in a
/// part, or "" when it can.
class CalleeChecker {
public:
  std::string why(FuncOp f) {
    auto it = memo.find(f);
    if (it != memo.end())
      return it->second;
    memo[f] = ""; // Recursion sees what is known so far.
    std::string r;
    if (!f.isDeclaration())
      f.walk([&](Operation *op) -> WalkResult {
        if (auto s = dyn_cast<SRegOp>(op)) {
          if (isRemapped(s.getReg()) || s.getReg() == SpecialReg::gridid ||
              s.getReg() == SpecialReg::total_smem_size) {
            r = ("reads %" + stringifySpecialReg(s.getReg()) +
                 " (not supported yet)")
                    .str();
            return WalkResult::interrupt();
          }
        } else if (isa<CallIndirectOp>(op)) {
          r = "makes an indirect call (not supported)";
          return WalkResult::interrupt();
        } else if (auto env = dyn_cast<EnvRegOp>(op)) {
          r = ("reads %envreg" + Twine(env.getIndex()) +
               " (grid-wide synchronisation; not supported)")
                  .str();
          return WalkResult::interrupt();
        } else if (auto c = dyn_cast<CallOp>(op)) {
          auto callee = SymbolTable::lookupNearestSymbolFrom<FuncOp>(
              op, c.getCalleeAttr());
          if (!callee) {
            r = "calls a symbol that is not a function";
            return WalkResult::interrupt();
          }
          std::string inner = why(callee);
          if (!inner.empty()) {
            r = ("calls '" + callee.getSymName() + "', which " + inner).str();
            return WalkResult::interrupt();
          }
        }
        return WalkResult::advance();
      });
    return memo[f] = r;
  }

private:
  llvm::DenseMap<Operation *, std::string> memo;
};

/// Checks that `kernel` can run as a part; emits a located error if not.
LogicalResult checkKernel(FuncOp kernel, CalleeChecker &callees) {
  StringRef name = kernel.getSymName();
  auto refuse = [&](Operation *at, const Twine &why) {
    at->emitError() << kPass << ": kernel '" << name << "' " << why;
    return failure();
  };
  if (kernel.getReqntid())
    return refuse(kernel, "has .reqntid (the fused launch's block is 1-D "
                          "with the largest part's threads)");
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i) {
    if (kernel.getArgAttr(i, kLaunchParamAttr))
      return refuse(kernel, "has launch parameters of another pass (run "
                            "wooly-coalesce first)");
    Type t = kernel.getArgumentTypes()[i];
    if (!t.isIntOrFloat() || t.isInteger(1))
      return refuse(kernel, "has a byte-array parameter (not supported yet)");
  }
  if (!kernel.getResultTypes().empty())
    return refuse(kernel, "returns values");
  Operation *bad = nullptr;
  std::string why;
  kernel.walk([&](Operation *op) -> WalkResult {
    if (isa<ParamAddressOp>(op))
      why = "takes the address of a parameter (not supported yet)";
    else if (isa<CallIndirectOp>(op))
      why = "makes an indirect call (not supported)";
    else if (auto env = dyn_cast<EnvRegOp>(op))
      why = ("reads %envreg" + Twine(env.getIndex()) +
             " (grid-wide synchronisation; not supported)")
                .str();
    else if (auto s = dyn_cast<SRegOp>(op)) {
      if (s.getReg() == SpecialReg::gridid ||
          s.getReg() == SpecialReg::total_smem_size)
        why = ("reads %" + stringifySpecialReg(s.getReg()) + " (not supported)")
                  .str();
    } else if (auto c = dyn_cast<CallOp>(op)) {
      auto callee =
          SymbolTable::lookupNearestSymbolFrom<FuncOp>(op, c.getCalleeAttr());
      if (!callee)
        why = ("calls '" + c.getCallee() + "', which is not a function").str();
      else if (std::string w = callees.why(callee); !w.empty())
        why = ("calls '" + c.getCallee() + "', which " + w).str();
    }
    if (why.empty())
      return WalkResult::advance();
    bad = op;
    return WalkResult::interrupt();
  });
  if (bad)
    return refuse(bad, why);
  return success();
}

/// Makes the device-function clone of `kernel` (inserted after it).
FuncOp makePart(FuncOp kernel, SymbolTable &symbols) {
  MLIRContext *ctx = kernel.getContext();
  Builder b(ctx);
  FuncOp part = kernel.clone();
  part.setSymName(("__wooly_part_" + kernel.getSymName()).str());
  part.setKernel(false);
  part.removeLinkageAttr();
  part.removeMaxntidAttr();
  part.removeReqntidAttr();
  part.removeMinnctapersmAttr();
  part.removeMaxnregAttr();
  symbols.insert(part, std::next(Block::iterator(kernel)));

  static const char *names[kNumIdArgs] = {"ctaid_x",
                                          "ctaid_y",
                                          "ctaid_z",
                                          "nctaid_x",
                                          "nctaid_y",
                                          "nctaid_z",
                                          "tid_x",
                                          "tid_y",
                                          "tid_z",
                                          "ntid_x",
                                          "ntid_y",
                                          "ntid_z",
                                          "dynamic_smem_size"};
  unsigned first = part.getNumArguments();
  for (unsigned i = 0; i < kNumIdArgs; ++i) {
    NamedAttribute attrs[] = {
        b.getNamedAttr("wooly.name", b.getStringAttr(names[i])),
        b.getNamedAttr("wooly.type", b.getStringAttr("u32"))};
    (void)part.insertArgument(part.getNumArguments(), b.getI32Type(),
                              b.getDictionaryAttr(attrs), part.getLoc());
  }
  // The kernel's function-scope .local variables (per thread, in the
  // owner's frame): the part gets its own copies, owned by it.
  auto module = kernel->getParentOfType<ModuleOp>();
  llvm::StringMap<StringAttr> locals;
  for (auto g : llvm::make_early_inc_range(module.getOps<GlobalOp>())) {
    auto owner = g->getAttrOfType<FlatSymbolRefAttr>("wooly.function_scope");
    if (!owner || owner.getValue() != kernel.getSymName() ||
        g.getSpace() != StateSpace::local)
      continue; // `.shared` ones are shared with the kernel: per module.
    GlobalOp copy = g.clone();
    copy.setSymName((g.getSymName() + "_" + part.getSymName()).str());
    copy->setAttr("wooly.function_scope",
                  FlatSymbolRefAttr::get(part.getSymNameAttr()));
    locals[g.getSymName()] =
        symbols.insert(copy, std::next(Block::iterator(g)));
  }
  part.walk([&](AddressOfOp a) {
    auto it = locals.find(a.getGlobal());
    if (it != locals.end())
      a.setGlobalAttr(FlatSymbolRefAttr::get(it->second));
  });
  SmallVector<SRegOp> sregs;
  part.walk([&](SRegOp s) {
    if (isRemapped(s.getReg()))
      sregs.push_back(s);
  });
  OpBuilder ob(ctx);
  for (SRegOp s : sregs) {
    unsigned d = s.getDim() ? unsigned(*s.getDim()) : 0;
    Value arg = part.getArgument(first + idArgIndex(s.getReg(), d));
    ob.setInsertionPoint(s);
    s.replaceAllUsesWith(castInt(ob, s.getLoc(), arg, s.getType()));
    s.erase();
  }
  return part;
}

/// Builds `@__wooly_coalesced` dispatching to `parts` (kernel index j calls
/// parts[j], a clone of kernels[j]).
void buildCoalesced(ModuleOp module, ArrayRef<FuncOp> kernels,
                    ArrayRef<FuncOp> parts, SymbolTable &symbols) {
  MLIRContext *ctx = module.getContext();
  Location loc = module.getLoc();
  OpBuilder b(ctx);
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto fused =
      FuncOp::create(b, loc, "__wooly_coalesced", b.getFunctionType({}, {}));
  fused.setKernel(true);
  fused.setLinkage("visible");
  symbols.insert(fused); // At the module's end; renamed if taken.
  Region &region = fused.getBody();
  Block *entry = new Block();
  region.push_back(entry);
  Value table = vblocks::appendLaunchParam(fused, "coalesce_table", i64, "u64");

  auto global = StateSpaceAttr::get(ctx, StateSpace::global);
  auto load = [&](Value addr, Type t) -> Value {
    return LoadOp::create(b, loc, TypeRange{t}, global, addr, CacheOpAttr(),
                          UnitAttr(), MemOrderAttr(), MemScopeAttr())
        .getResult(0);
  };
  auto c32 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, v, 32);
  };
  auto c64 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, v, 64);
  };
  auto at = [&](Value base, int64_t off) -> Value {
    return arith::AddIOp::create(b, loc, base, c64(off));
  };
  auto sreg = [&](SpecialReg r) -> Value {
    return SRegOp::create(b, loc, i32, SpecialRegAttr::get(ctx, r),
                          DimAttr::get(ctx, Dim::x));
  };
  auto addBlock = [&]() {
    Block *blk = new Block();
    region.push_back(blk);
    return blk;
  };

  // entry
  b.setInsertionPointToEnd(entry);
  Value blockId = sreg(SpecialReg::ctaid);
  Value threadId = sreg(SpecialReg::tid);
  Value count = load(table, i32);
  Block *scan = addBlock();
  Value idx = scan->addArgument(i32, loc);
  Block *check = addBlock();
  Block *found = addBlock();
  Block *run = addBlock();
  Block *exitBlock = addBlock();
  cf::BranchOp::create(b, loc, scan, ValueRange{c32(0)});

  // exit: physical blocks in no part, idle threads, unknown kernel indices.
  b.setInsertionPointToEnd(exitBlock);
  ExitOp::create(b, loc);

  // scan(i)
  b.setInsertionPointToEnd(scan);
  Value more =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, idx, count);
  cf::CondBranchOp::create(b, loc, more, check, ValueRange{}, exitBlock,
                           ValueRange{});

  // check(i): does the part hold this physical block?
  b.setInsertionPointToEnd(check);
  Value idx64 = arith::ExtUIOp::create(b, loc, i64, idx);
  Value recOff = arith::MulIOp::create(b, loc, idx64, c64(kPartBytes));
  Value rec = arith::AddIOp::create(
      b, loc, arith::AddIOp::create(b, loc, table, c64(kHeaderBytes)), recOff);
  Value firstBlock = load(at(rec, kFirstBlockOff), i32);
  Value grid[3], block[3];
  for (int d = 0; d < 3; ++d)
    grid[d] = load(at(rec, kGridOff + 4 * d), i32);
  Value gxy = arith::MulIOp::create(
      b, loc, arith::ExtUIOp::create(b, loc, i64, grid[0]),
      arith::ExtUIOp::create(b, loc, i64, grid[1]));
  Value nBlocks = arith::MulIOp::create(
      b, loc, gxy, arith::ExtUIOp::create(b, loc, i64, grid[2]));
  Value rel64 = arith::SubIOp::create(
      b, loc, arith::ExtUIOp::create(b, loc, i64, blockId),
      arith::ExtUIOp::create(b, loc, i64, firstBlock));
  // blockId < firstBlock makes rel64 wrap to a huge value: one test.
  Value inPart =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rel64, nBlocks);
  Value next = arith::AddIOp::create(b, loc, idx, c32(1));
  cf::CondBranchOp::create(b, loc, inPart, found, ValueRange{}, scan,
                           ValueRange{next});

  // found: idle threads leave.
  b.setInsertionPointToEnd(found);
  for (int d = 0; d < 3; ++d)
    block[d] = load(at(rec, kBlockOff + 4 * d), i32);
  Value bxy = arith::MulIOp::create(b, loc, block[0], block[1]);
  Value nThreads = arith::MulIOp::create(b, loc, bxy, block[2]);
  Value active = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       threadId, nThreads);
  cf::CondBranchOp::create(b, loc, active, run, ValueRange{}, exitBlock,
                           ValueRange{});

  // run: the part's ids, then dispatch on the kernel index.
  b.setInsertionPointToEnd(run);
  Value rel = arith::TruncIOp::create(b, loc, i32, rel64);
  auto split = [&](Value linear, Value dims[3], Value out[3]) {
    out[0] = arith::RemUIOp::create(b, loc, linear, dims[0]);
    Value rest = arith::DivUIOp::create(b, loc, linear, dims[0]);
    out[1] = arith::RemUIOp::create(b, loc, rest, dims[1]);
    out[2] = arith::DivUIOp::create(b, loc, rest, dims[1]);
  };
  Value ctaid[3], tid[3];
  split(rel, grid, ctaid);
  split(threadId, block, tid);
  Value dynShared = load(at(rec, kDynSharedOff), i32);
  Value kernelIndex = load(at(rec, kKernelIndexOff), i32);
  Value paramBuf = load(at(rec, kParamsOff), i64);
  SmallVector<Value> ids{ctaid[0], ctaid[1], ctaid[2], grid[0], grid[1],
                         grid[2],  tid[0],   tid[1],   tid[2],  block[0],
                         block[1], block[2], dynShared};

  for (unsigned j = 0; j < kernels.size(); ++j) {
    FuncOp kernel = kernels[j];
    Block *call = addBlock();
    Block *rest = j + 1 < kernels.size() ? addBlock() : exitBlock;
    Value is = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                     kernelIndex, c32(j));
    cf::CondBranchOp::create(b, loc, is, call, ValueRange{}, rest,
                             ValueRange{});
    b.setInsertionPointToEnd(call);
    SmallVector<Value> args;
    std::vector<uint64_t> offsets, sizes;
    kernelParamLayout(kernel, offsets, sizes);
    for (auto [i, t] : llvm::enumerate(kernel.getArgumentTypes()))
      args.push_back(load(at(paramBuf, offsets[i]), t));
    args.append(ids);
    CallOp::create(b, loc, TypeRange{},
                   FlatSymbolRefAttr::get(ctx, FuncOp(parts[j]).getSymName()),
                   args, UnitAttr(), ArrayAttr(), ArrayAttr());
    RetOp::create(b, loc, ValueRange{});
    if (rest != exitBlock)
      b.setInsertionPointToEnd(rest);
  }
}

struct WoolyCoalescePass : wooly::impl::WoolyCoalesceBase<WoolyCoalescePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<FuncOp> kernels;
    llvm::StringSet<> seen;
    bool ok = true;
    for (const std::string &name : this->kernels) {
      if (!seen.insert(name).second)
        continue;
      auto f = module.lookupSymbol<FuncOp>(name);
      if (!f || !f.getKernel() || f.isDeclaration()) {
        module.emitError() << kPass << ": '" << name
                           << "' is not a kernel with a body in the module";
        ok = false;
        continue;
      }
      kernels.push_back(f);
    }
    if (ok && kernels.empty()) {
      module.emitError() << kPass << ": no kernels given (option 'kernels')";
      ok = false;
    }
    CalleeChecker callees;
    for (FuncOp k : kernels)
      ok &= succeeded(checkKernel(k, callees));
    if (!ok)
      return signalPassFailure();
    SymbolTable symbols(module);
    SmallVector<FuncOp> parts;
    for (FuncOp k : kernels)
      parts.push_back(makePart(k, symbols));
    buildCoalesced(module, kernels, parts, symbols);
  }
};

} // namespace
