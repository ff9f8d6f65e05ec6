//===- ImportAsync.cpp - PTX asynchronous copies and mbarriers --*- C++ -*-===//
//
// Hopper's asynchronous data movement and what goes with it: mbarrier
// objects, bulk copies and reductions (`cp.async.bulk`,
// `cp.reduce.async.bulk`) with their bulk groups, `griddepcontrol`,
// `elect.sync`, `stmatrix` and `setmaxnreg`.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::ptx;
using llvm::StringRef;
using OK = Operand::Kind;

/// The state spaces named by the modifiers of `inst`, in order (a bulk
/// copy names its destination's, then its source's).
static SmallVector<StateSpace, 2> spacesOf(const Instruction &inst) {
  SmallVector<StateSpace, 2> spaces;
  for (StringRef m : inst.mods) {
    if (m == "global")
      spaces.push_back(StateSpace::global);
    else if (m == "shared" || m == "shared::cta")
      spaces.push_back(StateSpace::shared);
    else if (m == "shared::cluster")
      spaces.push_back(StateSpace::shared_cluster);
  }
  return spaces;
}

Value Importer::sharedAddress(const Operand &op, bool generic) {
  Type at;
  Value addr = address(op, at);
  if (!addr || !generic)
    return addr;
  return make<CvtaOp>(at, CvtaDir::from_generic, StateSpace::shared, addr);
}

LogicalResult Importer::emitMbarrier(Instruction &inst, Opcode op) {
  Type i32 = intType(32), i64 = intType(64);
  auto t = instrType(inst);
  if (!t || t->scalar != ScalarType::b64)
    return error(inst.loc, "'mbarrier' takes '.b64'");
  SmallVector<StateSpace, 2> spaces = spacesOf(inst);
  StateSpace space = spaces.empty() ? StateSpace::generic : spaces[0];
  bool generic = space == StateSpace::generic;
  std::optional<MemOrder> sem;
  std::optional<MemScope> scope;
  for (StringRef m : inst.mods) {
    if (auto s = symbolizeMemOrder(m))
      sem = s;
    if (auto s = symbolizeMemScope(m))
      scope = s;
  }
  MemOrderAttr semAttr = sem ? MemOrderAttr::get(ctx, *sem) : MemOrderAttr();
  MemScopeAttr scopeAttr =
      scope ? MemScopeAttr::get(ctx, *scope) : MemScopeAttr();
  if (inst.has("init") || inst.has("inval")) {
    bool init = inst.has("init");
    if (failed(expectOperands(inst, init ? 2 : 1)))
      return failure();
    Value addr = sharedAddress(inst.operands[0], generic);
    if (!addr)
      return failure();
    if (!init) {
      make<MbarrierInvalOp>(addr);
      return success();
    }
    Value count = read(inst.operands[1], i32);
    if (!count)
      return failure();
    make<MbarrierInitOp>(addr, count);
    return success();
  }
  if (inst.has("pending_count")) {
    if (failed(expectOperands(inst, 2)))
      return failure();
    Value state = read(inst.operands[1], i64);
    if (!state)
      return failure();
    return write(inst.operands[0], make<MbarrierPendingCountOp>(i32, state));
  }
  if (inst.has("test_wait") || inst.has("try_wait")) {
    // test_wait/try_wait{.parity} p, [addr], state-or-parity{, hint}
    bool blocking = inst.has("try_wait"), parity = inst.has("parity");
    if (inst.operands.size() != 3 && !(blocking && inst.operands.size() == 4))
      return error(inst.loc,
                   "'mbarrier." +
                       StringRef(blocking ? "try_wait" : "test_wait") +
                       "' expects a predicate, an address and a " +
                       (parity ? "phase parity" : "state"));
    Value addr = sharedAddress(inst.operands[1], generic);
    Value phase = read(inst.operands[2], parity ? i32 : i64);
    // The fourth operand of try_wait is a suspend-time hint.
    if (inst.operands.size() == 4 && !read(inst.operands[3], i32))
      return failure();
    if (!addr || !phase)
      return failure();
    Value done =
        make<MbarrierWaitOp>(addr, phase, blocking, parity, semAttr, scopeAttr);
    return write(inst.operands[0], done);
  }
  // arrive{.expect_tx}, arrive_drop{.expect_tx}, arrive.noComplete,
  // expect_tx, complete_tx: [state,] [addr] {, count or tx}.
  MbarrierUpdate kind;
  bool tx = inst.has("expect_tx") || inst.has("complete_tx");
  if (inst.has("arrive"))
    kind = MbarrierUpdate::arrive;
  else if (inst.has("arrive_drop"))
    kind = MbarrierUpdate::arrive_drop;
  else if (inst.has("expect_tx"))
    kind = MbarrierUpdate::expect_tx;
  else if (inst.has("complete_tx"))
    kind = MbarrierUpdate::complete_tx;
  else
    return unsupported(inst);
  bool arrives =
      kind == MbarrierUpdate::arrive || kind == MbarrierUpdate::arrive_drop;
  // `.noComplete` (sm_80's arrive with a count that must not complete the
  // phase) is an arrive whose completion PTX forbids: the same arrive.
  size_t first = arrives ? 1 : 0;
  size_t n = inst.operands.size();
  if (n < first + 1 || n > first + 2)
    return error(inst.loc, "malformed '" + inst.opcode + "." +
                               stringifyMbarrierUpdate(kind) + "'");
  if (inst.has("noComplete") && n != first + 2)
    return error(inst.loc, "'.noComplete' needs a count");
  Value addr = sharedAddress(inst.operands[first], generic);
  if (!addr)
    return failure();
  Value count = constInt(i32, arrives ? 1 : 0), bytes = constInt(i32, 0);
  if (n == first + 2) {
    Value v = read(inst.operands[first + 1], i32);
    if (!v)
      return failure();
    (tx ? bytes : count) = v;
  } else if (tx) {
    return error(inst.loc, "'" + inst.opcode + "." +
                               stringifyMbarrierUpdate(kind) +
                               "' needs a transaction count");
  }
  // A remote arrive (shared::cluster) has no state: `_` or no destination.
  StateSpace opSpace =
      space == StateSpace::shared_cluster ? space : StateSpace::shared;
  Value state = make<MbarrierUpdateOp>(i64, kind, opSpace, addr, count, bytes,
                                       semAttr, scopeAttr);
  if (arrives)
    return write(inst.operands[0], state);
  return success();
}

/// cp.async.bulk and cp.reduce.async.bulk (the non-tensor forms), and the
/// bulk group's commit and wait.
LogicalResult Importer::emitBulkCopy(Instruction &inst) {
  if (inst.has("commit_group")) {
    if (failed(expectOperands(inst, 0)))
      return failure();
    make<BulkCommitOp>();
    return success();
  }
  if (inst.has("wait_group")) {
    if (failed(expectOperands(inst, 1)) || inst.operands[0].kind != OK::Imm)
      return error(inst.loc, "'cp.async.bulk.wait_group' needs an immediate");
    make<BulkWaitOp>(inst.operands[0].imm, inst.has("read"));
    return success();
  }
  bool reduce = inst.has("reduce");
  SmallVector<StateSpace, 2> spaces = spacesOf(inst);
  if (spaces.size() != 2)
    return error(inst.loc, "'cp.async.bulk' needs a destination and a source "
                           "state space");
  bool viaMbar = inst.has("mbarrier::complete_tx::bytes");
  if (viaMbar == inst.has("bulk_group"))
    return error(inst.loc, "'cp.async.bulk' completes either on an mbarrier "
                           "('.mbarrier::complete_tx::bytes') or in a bulk "
                           "group ('.bulk_group')");
  // The cache policy is the last operand; it is a hint.
  size_t n = inst.operands.size();
  if (inst.has("L2::cache_hint")) {
    if (n < 4)
      return error(inst.loc, "'.L2::cache_hint' needs a cache policy");
    --n;
  }
  if (n != (viaMbar ? 4u : 3u))
    return error(inst.loc, "'cp.async.bulk' expects dst, src, size" +
                               StringRef(viaMbar ? " and an mbarrier" : ""));
  Type dt, st;
  Value dst = address(inst.operands[0], dt);
  Value src = address(inst.operands[1], st);
  Value size = read(inst.operands[2], intType(32));
  Value mbar;
  if (viaMbar && !(mbar = sharedAddress(inst.operands[3], false)))
    return failure();
  if (!dst || !src || !size)
    return failure();
  AtomicOpAttr redop;
  ScalarTypeAttr redType;
  if (reduce) {
    auto t = instrType(inst);
    if (!t)
      return error(inst.loc, "'cp.reduce.async.bulk' needs a type");
    std::optional<AtomicOp> kind;
    for (StringRef m : inst.mods)
      if (auto k = atomicOpOf(m, *t))
        kind = k;
    if (!kind)
      return error(inst.loc, "'cp.reduce.async.bulk' needs an operation");
    redop = AtomicOpAttr::get(ctx, *kind);
    redType = ScalarTypeAttr::get(ctx, t->scalar);
  } else if (instrType(inst)) {
    return error(inst.loc, "'cp.async.bulk' takes no type");
  }
  make<BulkCopyOp>(spaces[0], spaces[1], dst, src, size, mbar, redop, redType);
  return success();
}

LogicalResult Importer::emitCpAsyncArrive(Instruction &inst) {
  auto t = instrType(inst);
  if (!t || t->scalar != ScalarType::b64 || failed(expectOperands(inst, 1)))
    return error(inst.loc, "'cp.async.mbarrier.arrive' takes '.b64' and an "
                           "address");
  Value addr = sharedAddress(inst.operands[0], !spaceOf(inst));
  if (!addr)
    return failure();
  Type i32 = intType(32);
  make<MbarrierUpdateOp>(intType(64),
                         inst.has("noinc")
                             ? MbarrierUpdate::cp_async_arrive_noinc
                             : MbarrierUpdate::cp_async_arrive,
                         StateSpace::shared, addr, constInt(i32, 1),
                         constInt(i32, 0), MemOrderAttr(), MemScopeAttr());
  return success();
}

LogicalResult Importer::emitAsyncMisc(Instruction &inst, Opcode op) {
  if (op == Opcode::Griddepcontrol) {
    if (failed(expectOperands(inst, 0)) || inst.mods.size() != 1)
      return error(inst.loc, "'griddepcontrol' takes '.launch_dependents' or "
                             "'.wait'");
    make<GridDepControlOp>(inst.mods[0]);
    return success();
  }
  if (op == Opcode::Setmaxnreg) {
    // A hint to the register allocator of a warpgroup: no effect on what
    // the program computes.
    auto t = instrType(inst);
    if (!t || t->scalar != ScalarType::u32 || failed(expectOperands(inst, 1)) ||
        inst.operands[0].kind != OK::Imm)
      return error(inst.loc, "'setmaxnreg' takes '.u32' and an immediate");
    return success();
  }
  if (op == Opcode::Elect) {
    // elect.sync d|p, membermask
    if (failed(expectOperands(inst, 2)))
      return failure();
    Value mask = read(inst.operands[1], intType(32));
    if (!mask)
      return failure();
    auto e = make<ElectOp>(intType(32), b.getI1Type(), mask);
    const Operand &d = inst.operands[0];
    if (d.kind != OK::Pair)
      return error(d.loc, "'elect.sync' writes a lane and a predicate 'd|p'");
    if (failed(write(d.elems[0], e.getLeader())))
      return failure();
    return write(d.elems[1], e.getIsLeader());
  }
  // stmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}{.shared}.b16 [p], {r...}
  auto t = instrType(inst);
  if (!t || t->scalar != ScalarType::b16 || !inst.has("m8n8"))
    return error(inst.loc, "'stmatrix' takes '.m8n8' and '.b16'");
  int n = inst.has("x4") ? 4 : inst.has("x2") ? 2 : 1;
  if (failed(expectOperands(inst, 2)))
    return failure();
  Value addr =
      sharedAddress(inst.operands[0], spaceOf(inst) != StateSpace::shared);
  if (!addr)
    return failure();
  const Operand &v = inst.operands[1];
  if (v.kind != OK::Vector || v.elems.size() != static_cast<size_t>(n))
    return error(v.loc, "expected " + Twine(n) + " source registers");
  SmallVector<Value, 4> values;
  for (const Operand &e : v.elems) {
    Value x = read(e, intType(32));
    if (!x)
      return failure();
    values.push_back(x);
  }
  make<StMatrixOp>(addr, values, inst.has("trans"));
  return success();
}
