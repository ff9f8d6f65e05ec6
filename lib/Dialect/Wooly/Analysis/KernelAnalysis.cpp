//===- KernelAnalysis.cpp - What the runtime needs to know of a kernel ----===//
//
// Read-only pointer parameters are found by a forward taint analysis over
// SSA: each value carries the set of parameters it may be derived from
// (through any computation except comparisons, and through block arguments
// to a fixed point). A parameter reaching the address of a memory access is
// a pointer; reaching the address of a write makes it written; reaching a
// stored value, a call or an atomic's operand makes it escape. The result is
// sound for deduplication: a parameter reported read-only is never written
// through by the kernel. Two more bits follow values that no parameter
// explains: `unknown` (loaded from memory, returned by a call) and `module`
// (the address of a module variable); a write whose address carries
// `unknown`, or neither a parameter nor `module`, is a write to memory the
// analysis cannot name (KernelSummary::writesUnknownMemory).
//
//===----------------------------------------------------------------------===//

#include "Wooly/Dialect/Wooly/Analysis/KernelAnalysis.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"

#include "mlir/Analysis/CFGLoopInfo.h"
#include "mlir/Analysis/Liveness.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::wooly;

namespace {
/// Parameter sets per SSA value.
class Taint {
public:
  explicit Taint(unsigned numParams) : numParams(numParams), none(numParams) {}

  const llvm::BitVector &get(Value v) {
    auto it = sets.find(v);
    return it != sets.end() ? it->second : none;
  }
  /// Adds `bits` to `v`'s set; returns true when it grew. `bits` is a copy:
  /// it is often another value's set (get), which adding to the map can
  /// move.
  bool add(Value v, llvm::BitVector bits) {
    if (bits.none())
      return false;
    llvm::BitVector &set = sets.try_emplace(v, numParams).first->second;
    llvm::BitVector before = set;
    set |= bits;
    return set != before;
  }

private:
  unsigned numParams;
  llvm::BitVector none;
  llvm::DenseMap<Value, llvm::BitVector> sets;
};

/// The address operand and whether the access writes, for memory ops.
struct Access {
  Value addr;
  bool writes;
};

SmallVector<Access, 2> accessesOf(Operation *op) {
  if (auto ld = dyn_cast<LoadOp>(op))
    return {{ld.getAddr(), false}};
  if (auto st = dyn_cast<StoreOp>(op))
    return {{st.getAddr(), true}};
  if (auto at = dyn_cast<AtomOp>(op))
    return {{at.getAddr(), true}};
  if (auto red = dyn_cast<RedOp>(op))
    return {{red.getAddr(), true}};
  if (auto cp = dyn_cast<CpAsyncOp>(op))
    return {{cp.getSrc(), false}, {cp.getDst(), true}};
  if (auto wl = dyn_cast<WmmaLoadOp>(op))
    return {{wl.getAddr(), false}};
  if (auto ws = dyn_cast<WmmaStoreOp>(op))
    return {{ws.getAddr(), true}};
  if (auto lm = dyn_cast<LdMatrixOp>(op))
    return {{lm.getAddr(), false}};
  if (auto sm = dyn_cast<StMatrixOp>(op))
    return {{sm.getAddr(), true}};
  if (auto bc = dyn_cast<BulkCopyOp>(op))
    return {{bc.getSrc(), false}, {bc.getDst(), true}};
  return {};
}

/// Loop depth of each block of `region`: the number of natural loops
/// (CFGLoopInfo) that contain it. A loop with several back edges to one
/// header is one loop.
llvm::DenseMap<Block *, unsigned> loopDepths(Region &region) {
  llvm::DenseMap<Block *, unsigned> depth;
  // The entry block has no predecessors: one block is never a loop.
  if (region.empty() || region.hasOneBlock())
    return depth;
  DominanceInfo dom(region.getParentOp());
  CFGLoopInfo loops(dom.getDomTree(&region));
  for (Block &b : region)
    if (unsigned d = loops.getLoopDepth(&b))
      depth[&b] = d;
  return depth;
}

uint64_t byteSize(Type t) {
  if (auto v = dyn_cast<VectorType>(t))
    return v.getNumElements() * byteSize(v.getElementType());
  unsigned bits = t.isIntOrFloat() ? t.getIntOrFloatBitWidth() : 8;
  return bits == 1 ? 1 : (bits + 7) / 8;
}

unsigned registerUnits(Type t) {
  if (t.isInteger(1))
    return 0; // Predicates live in predicate registers.
  if (auto v = dyn_cast<VectorType>(t))
    return (v.getNumElements() * v.getElementTypeBitWidth() + 31) / 32;
  if (t.isIntOrFloat())
    return (t.getIntOrFloatBitWidth() + 31) / 32;
  return 1;
}
} // namespace

KernelSummary mlir::wooly::analyzeKernel(FuncOp kernel) {
  KernelSummary s;
  s.name = kernel.getSymName().str();
  unsigned n = kernel.getNumArguments();
  s.params.resize(n);
  if (auto module = kernel->getParentOfType<ModuleOp>()) {
    // The static shared variables the kernel (or a function it calls)
    // names, laid out as the lowering does.
    llvm::DenseSet<StringRef> used;
    SmallVector<FuncOp> work{kernel};
    llvm::DenseSet<Operation *> seen{kernel};
    while (!work.empty()) {
      FuncOp f = work.pop_back_val();
      f.walk([&](Operation *op) {
        if (auto a = dyn_cast<AddressOfOp>(op))
          used.insert(a.getGlobal());
        if (auto c = dyn_cast<CallOp>(op))
          if (auto callee = module.lookupSymbol<FuncOp>(c.getCallee()))
            if (seen.insert(callee).second)
              work.push_back(callee);
      });
    }
    uint64_t end = 0;
    for (auto g : module.getOps<GlobalOp>()) {
      if (g.getSpace() != StateSpace::shared || g.getCount() == 0 ||
          !used.contains(g.getSymName()))
        continue;
      uint64_t align = std::max<uint64_t>(g.getAlign(), 1);
      end = (end + align - 1) / align * align +
            byteSize(g.getElemType()) * g.getCount();
    }
    s.staticSharedBytes = end;
  }
  if (kernel.isDeclaration())
    return s;

  // Taint: parameter i starts in argument i; propagate to a fixed point.
  // Bits n and n + 1: `unknown` and `module` (see the file's comment).
  const unsigned unknownBit = n, moduleBit = n + 1;
  Taint taint(n + 2);
  Block &entry = kernel.getBody().front();
  for (unsigned i = 0; i < n; ++i) {
    llvm::BitVector self(n + 2);
    self.set(i);
    taint.add(entry.getArgument(i), self);
  }
  llvm::BitVector unknownSet(n + 2), moduleSet(n + 2);
  unknownSet.set(unknownBit);
  moduleSet.set(moduleBit);
  bool changed = true;
  while (changed) {
    changed = false;
    kernel.walk([&](Operation *op) {
      bool access = !accessesOf(op).empty();
      // Values that come from memory or from a callee: unknown.
      if (access || isa<CallOp, CallIndirectOp>(op))
        for (Value r : op->getResults())
          changed |= taint.add(r, unknownSet);
      if (isa<AddressOfOp>(op))
        changed |= taint.add(op->getResult(0), moduleSet);
      // Into results: from every operand, except through comparisons and
      // memory reads (a loaded value is not derived from its address).
      if (!isa<arith::CmpIOp, arith::CmpFOp>(op) && !access)
        for (Value r : op->getResults())
          for (Value o : op->getOperands())
            changed |= taint.add(r, taint.get(o));
      // Into successor block arguments.
      if (auto br = dyn_cast<BranchOpInterface>(op))
        for (unsigned i = 0; i < op->getNumSuccessors(); ++i) {
          OperandRange fwd = br.getSuccessorOperands(i).getForwardedOperands();
          Block *succ = op->getSuccessor(i);
          unsigned skip = succ->getNumArguments() - fwd.size();
          for (auto [j, v] : llvm::enumerate(fwd))
            changed |= taint.add(succ->getArgument(skip + j), taint.get(v));
        }
    });
  }
  llvm::BitVector pointers(n + 2), written(n + 2), escapes(n + 2);
  bool narrowAddresses = false; // Any 32-bit address (.address_size 32)?
  kernel.walk([&](Operation *op) {
    SmallVector<Access, 2> accesses = accessesOf(op);
    llvm::SmallPtrSet<Value, 2> addrs;
    std::optional<StateSpace> space;
    if (auto ld = dyn_cast<LoadOp>(op))
      space = ld.getSpace();
    else if (auto st = dyn_cast<StoreOp>(op))
      space = st.getSpace();
    else if (auto at = dyn_cast<AtomOp>(op))
      space = at.getSpace();
    else if (auto red = dyn_cast<RedOp>(op))
      space = red.getSpace();
    else if (auto ws = dyn_cast<WmmaStoreOp>(op))
      space = ws.getSpace();
    bool globalOrGeneric = space && (*space == StateSpace::global ||
                                     *space == StateSpace::generic);
    for (const Access &a : accesses) {
      narrowAddresses |= globalOrGeneric && a.addr.getType().isInteger(32);
      const llvm::BitVector &t = taint.get(a.addr);
      pointers |= t;
      if (a.writes) {
        written |= t;
        // A write that may land outside the kernel's own (shared, local,
        // `cp.async` destination) memory, at an address no parameter or
        // module variable explains.
        bool ownMemory =
            isa<CpAsyncOp>(op) || (space && (*space == StateSpace::shared ||
                                             *space == StateSpace::local));
        bool named = t.find_first() >= 0 && t.find_first() < int(unknownBit);
        if (!ownMemory &&
            (t.test(unknownBit) || (!named && !t.test(moduleBit))))
          s.writesUnknownMemory = true;
      }
      addrs.insert(a.addr);
    }
    bool memoryOp = !accesses.empty();
    bool call = isa<CallOp, CallIndirectOp>(op);
    // A callee may write anywhere, but for the runtime's `vprintf` and
    // `__assertfail` (which write only their own buffers).
    if (auto c = dyn_cast<CallOp>(op)) {
      StringRef callee = c.getCallee();
      if (callee != "vprintf" && callee != "__assertfail")
        s.writesUnknownMemory = true;
    } else if (isa<CallIndirectOp>(op)) {
      s.writesUnknownMemory = true;
    } else if (!memoryOp) {
      // An operation this analysis does not follow that writes memory
      // and has an operand that may be an address (not a barrier or a
      // fence, whose operands are 32-bit counts and ids).
      auto effects = dyn_cast<MemoryEffectOpInterface>(op);
      if (effects && effects.hasEffect<MemoryEffects::Write>() &&
          llvm::any_of(op->getOperands(),
                       [](Value o) { return o.getType().isInteger(64); }))
        s.writesUnknownMemory = true;
    }
    if (memoryOp || call)
      for (Value o : op->getOperands())
        if (!addrs.contains(o))
          escapes |= taint.get(o); // Stored, passed, or an atomic operand.
    if (isa<BarrierOp, BarRedOp, IterationBarrierOp>(op))
      s.usesBarriers = true;
    if (isa<ShflOp, VoteOp, MatchOp, ReduxOp, ActiveMaskOp, WarpSyncOp,
            LdMatrixOp, MmaOp, WmmaLoadOp, WmmaStoreOp, WmmaMmaOp>(op))
      s.usesWarpCollectives = true;
  });
  // Index parameters also reach addresses (`p + i * 4`): only a parameter
  // of the address's width can hold a pointer.
  for (unsigned i = 0; i < n; ++i) {
    Type t = kernel.getArgumentTypes()[i];
    bool addressSized = t.isInteger(64) || (narrowAddresses && t.isInteger(32));
    s.params[i] = {pointers.test(i) && addressSized, written.test(i),
                   escapes.test(i)};
  }

  // Register estimate: the most 32-bit units live at any operation.
  Liveness liveness(kernel);
  for (Block &b : kernel.getBody())
    for (Operation &op : b) {
      unsigned units = 0;
      for (Value v : liveness.getLiveness(&b)->currentlyLiveValues(&op))
        units += registerUnits(v.getType());
      s.registerEstimate = std::max(s.registerEstimate, units);
    }

  // Cost: operations weighted by 8 per loop level.
  llvm::DenseMap<Block *, unsigned> depth = loopDepths(kernel.getBody());
  for (Block &b : kernel.getBody()) {
    uint64_t weight = 1;
    for (unsigned d = 0; d < std::min(depth.lookup(&b), 6u); ++d)
      weight *= 8;
    s.costHint += weight * b.getOperations().size();
  }
  return s;
}

std::vector<KernelSummary> mlir::wooly::analyzeKernels(ModuleOp module) {
  std::vector<KernelSummary> out;
  for (auto f : module.getOps<FuncOp>())
    if (f.getKernel())
      out.push_back(analyzeKernel(f));
  return out;
}

void mlir::wooly::kernelParamLayout(FuncOp kernel,
                                    std::vector<uint64_t> &offsets,
                                    std::vector<uint64_t> &sizes) {
  offsets.clear();
  sizes.clear();
  uint64_t off = 0;
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i) {
    Type t = kernel.getArgumentTypes()[i];
    uint64_t size = byteSize(t);
    uint64_t align = size;
    if (auto a = kernel.getArgAttrOfType<IntegerAttr>(i, "wooly.align"))
      align = a.getInt();
    else if (isa<VectorType>(t))
      align = 1;
    align = std::max<uint64_t>(align, 1);
    off = (off + align - 1) / align * align;
    offsets.push_back(off);
    sizes.push_back(size);
    off += size;
  }
}

unsigned mlir::wooly::estimateBlocksPerSM(
    const KernelSummary &k, unsigned threadsPerBlock,
    uint64_t dynamicSharedBytes, unsigned registersPerSM, uint64_t sharedPerSM,
    unsigned maxThreadsPerSM, unsigned maxBlocksPerSM) {
  if (threadsPerBlock == 0)
    return 0;
  unsigned blocks = std::min(maxBlocksPerSM, maxThreadsPerSM / threadsPerBlock);
  // Registers are allocated per warp in units of 256.
  unsigned regsPerThread = std::max(k.registerEstimate, 16u);
  unsigned warps = (threadsPerBlock + 31) / 32;
  unsigned regsPerWarp = (regsPerThread * 32 + 255) / 256 * 256;
  if (regsPerWarp)
    blocks = std::min(blocks, registersPerSM / (regsPerWarp * warps));
  uint64_t shared = k.staticSharedBytes + dynamicSharedBytes;
  if (shared)
    blocks = std::min<uint64_t>(blocks, sharedPerSM / shared);
  return blocks;
}

std::string
wooly::regionSplitBlocker(FuncOp fn,
                          llvm::function_ref<bool(StringRef)> synchronises) {
  std::string blocker;
  SmallVector<Operation *> cuts;
  fn.walk([&](Operation *op) {
    if (!blocker.empty())
      return WalkResult::interrupt();
    if (isa<CallIndirectOp>(op))
      blocker = "an indirect call";
    else if (auto call = dyn_cast<CallOp>(op);
             call && synchronises(call.getCallee()))
      blocker = "a call to a function that synchronises";
    else if (auto wait = op->getAttrOfType<LocationAttr>("wooly.wait_loop")) {
      std::string where;
      if (auto file = dyn_cast<FileLineColLoc>(Location(wait)))
        where = (" (" + llvm::sys::path::filename(file.getFilename().strref()) +
                 ":" + Twine(file.getLine()) + ")")
                    .str();
      blocker = "a loop that waits for other threads' writes" + where;
    } else if (isa<NanosleepOp>(op))
      blocker = "nanosleep (it may wait for other threads)";
    else if (isa<MbarrierWaitOp>(op))
      blocker = "an mbarrier wait";
    else if (isa<LdMatrixOp, StMatrixOp, MmaOp, WmmaLoadOp, WmmaStoreOp,
                 WmmaMmaOp>(op))
      blocker = "a warp matrix operation";
    else if (isa<BarRedOp>(op))
      blocker = "bar.red";
    else if (isa<IterationBarrierOp>(op))
      blocker = "an iteration barrier";
    else if (auto b = dyn_cast<BarrierOp>(op)) {
      if (b.getArrive() || b.getCount() || !matchPattern(b.getId(), m_Zero()))
        blocker = "a named barrier, bar.arrive or a barrier thread count";
      else
        cuts.push_back(op);
    } else if (isa<ShflOp, VoteOp, MatchOp, ReduxOp, ActiveMaskOp, WarpSyncOp,
                   ElectOp>(op)) {
      cuts.push_back(op);
    }
    return WalkResult::advance();
  });
  if (!blocker.empty())
    return blocker;
  // Cuts may lie in loops and in divergent code: the region executor runs
  // the threads under the fiber scheduler's rules, each from its own cut.
  // Only a cut inside an op's region (none is there after the importer's
  // structured ops are lowered) could not be resumed at.
  for (Operation *op : cuts)
    if (op->getParentRegion() != &fn.getBody())
      return "a barrier or warp collective in a nested region";
  return "";
}
