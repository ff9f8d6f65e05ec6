//===- ImportControlFlow.cpp - PTX bodies, branches, calls ------*- C++ -*-===//
//
// Function bodies: labels and blocks, scopes, guarded instructions (selects
// or branches around them), the dispatch of each instruction to its family,
// `bra`, `ret`, `exit`, `trap`, `brkpt`, `nanosleep` and `call`.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::ptx;
using llvm::StringRef;
using OK = Operand::Kind;

//===----------------------------------------------------------------------===//
// Function bodies and control flow
//===----------------------------------------------------------------------===//

static bool isBranch(const Instruction &i) { return i.opcode == "bra"; }

static bool isTerminator(const Instruction &i) {
  return i.opcode == "bra" || i.opcode == "ret" || i.opcode == "exit" ||
         i.opcode == "trap";
}

void Importer::afterEdgeTo(Block *target) {
  // Sealed once every edge counted in the pre-pass exists.
  if (llvm::range_size(target->getUses()) >= expectedPreds.lookup(target))
    ssa->sealBlock(target);
}

void Importer::branchTo(Block *target) {
  make<cf::BranchOp>(target, ValueRange());
  afterEdgeTo(target);
}

void Importer::startBlock(Block *block) {
  func.getBody().push_back(block);
  cur = block;
  b.setInsertionPointToEnd(block);
  afterEdgeTo(block);
}

/// Gives each label its block and each `bra` its target, and counts the edges
/// into every label block. Labels are scoped by `{ }`: a branch goes to the
/// label of that name in the innermost enclosing scope that has one, so the
/// same inline-assembly block (with its labels) may appear several times.
LogicalResult Importer::resolveLabels(Function &f) {
  llvm::DenseMap<std::pair<unsigned, StringRef>, Block *> byScope;
  SmallVector<unsigned> parentOf{0}, open{0};
  SmallVector<std::pair<Instruction *, unsigned>> branches;
  // Statement indices for findLoops().
  llvm::DenseMap<Block *, size_t> labelIndex;
  SmallVector<size_t> branchIndex;
  bool fallsThrough = true;
  size_t index = 0;
  for (auto &s : f.body) {
    size_t i = index++;
    switch (s.kind) {
    case Statement::Kind::ScopeBegin:
      parentOf.push_back(open.back());
      open.push_back(parentOf.size() - 1);
      break;
    case Statement::Kind::ScopeEnd:
      if (open.size() > 1)
        open.pop_back();
      break;
    case Statement::Kind::Label: {
      Block *&blk = byScope[{open.back(), s.label}];
      if (blk)
        return error(s.loc, "redefinition of label '" + s.label + "'");
      blk = new Block();
      labelBlocks.push_back(blk);
      blockOf[&s] = blk;
      labelIndex[blk] = i;
      if (fallsThrough)
        ++expectedPreds[blk];
      fallsThrough = true;
      break;
    }
    case Statement::Kind::Instr:
      fallsThrough = !(isTerminator(s.instr) && s.instr.guard.empty());
      if (isBranch(s.instr)) {
        branches.emplace_back(&s.instr, open.back());
        branchIndex.push_back(i);
      }
      break;
    default:
      break;
    }
  }
  SmallVector<std::pair<size_t, Block *>> targets;
  for (auto [k, branch] : llvm::enumerate(branches)) {
    auto [inst, scope] = branch;
    auto &ops = inst->operands;
    if (ops.size() != 1 || ops[0].kind != OK::Symbol)
      return error(inst->loc, "'bra' expects one label operand");
    Block *target = nullptr;
    for (unsigned id = scope;; id = parentOf[id]) {
      target = byScope.lookup({id, ops[0].name});
      if (target || id == 0)
        break;
    }
    if (!target)
      return error(ops[0].loc,
                   "branch to undefined label '" + ops[0].name + "'");
    blockOf[inst] = target;
    ++expectedPreds[target];
    targets.emplace_back(branchIndex[k], target);
  }
  findLoops(f, labelIndex, targets);
  return success();
}

/// Adds the regKey()s of the registers that destination operand `op` names
/// to `out`; the base register of an address too (`st.param [p], r`
/// writes `p`).
static void addDestinations(const Operand &op, ShortStringMap<char> &out) {
  switch (op.kind) {
  case OK::Reg:
  case OK::Symbol:
  case OK::Address:
    if (!op.name.empty())
      out.insert(regKey(op.name), 0);
    break;
  case OK::Vector:
  case OK::List:
  case OK::Pair:
    for (const Operand &e : op.elems)
      addDestinations(e, out);
    break;
  default:
    break;
  }
}

void Importer::findLoops(Function &f,
                         const llvm::DenseMap<Block *, size_t> &labelIndex,
                         ArrayRef<std::pair<size_t, Block *>> branches) {
  // Each loop header and its last backward branch, in statement order.
  llvm::MapVector<Block *, size_t> lastBackEdge;
  for (auto [i, target] : branches) {
    size_t t = labelIndex.lookup(target);
    if (i > t) {
      size_t &last = lastBackEdge[target];
      last = std::max(last, i);
    }
  }
  // Bounds the work on pathological bodies (many loops, deep nests): the
  // loops not analysed keep the builder's general path.
  size_t budget = 64 * (f.body.size() + branches.size()) + 4096;
  for (auto &loop : lastBackEdge) {
    Block *header = loop.first;
    size_t last = loop.second;
    size_t first = labelIndex.lookup(header);
    if (branches.size() > budget)
      break;
    budget -= branches.size();
    // Control enters the statements first..last only at the header label
    // (the statement before it falls through, and forward branches target
    // the header): no branch from outside targets a label inside.
    bool entersInside = llvm::any_of(branches, [&](auto branch) {
      size_t target = labelIndex.lookup(branch.second);
      return target > first && target <= last &&
             (branch.first < first || branch.first > last);
    });
    if (entersInside)
      continue;
    size_t length = last - first + 1;
    if (length > budget)
      break;
    budget -= length;
    // Every register a statement of the loop names as its destination
    // (operand 0: the only operand that instructions write). The carry flag
    // has no name: loopMayWrite() counts it as written.
    ShortStringMap<char> &writes = loopWrites.emplace_back();
    for (size_t i = first; i <= last; ++i) {
      const Statement &s = f.body[i];
      if (s.kind == Statement::Kind::Instr && !s.instr.operands.empty())
        addDestinations(s.instr.operands[0], writes);
    }
    loopOf[header] = loopWrites.size() - 1;
  }
}

bool Importer::loopMayWrite(Block *header, SSABuilder::Var var) {
  auto it = loopOf.find(header);
  if (it == loopOf.end() || var >= varKeys.size() || varKeys[var].empty())
    return true;
  return loopWrites[it->second].find(varKeys[var]) != nullptr;
}

LogicalResult Importer::emitStatement(Statement &s) {
  using K = Statement::Kind;
  switch (s.kind) {
  case K::ScopeBegin:
    scopes.emplace_back();
    forgetLookups();
    return success();
  case K::ScopeEnd:
    if (scopes.size() <= 1)
      return error(s.loc, "unbalanced '}'");
    scopes.pop_back();
    forgetLookups();
    return success();
  case K::Pragma:
    pendingPragma = s.label;
    return success();
  case K::Label: {
    Block *blk = blockOf.lookup(&s);
    curLoc = loc(s.loc);
    if (!cur->empty() && cur->back().hasTrait<OpTrait::IsTerminator>()) {
      // Previous block ended: nothing falls through.
    } else {
      branchTo(blk);
    }
    startBlock(blk);
    // A loop header entered from one block so far: the SSA builder reads
    // the registers its loop does not write from that block.
    if (!loopOf.empty() && blk->hasOneUse() && !ssa->isSealed(blk) &&
        loopOf.contains(blk))
      ssa->setLoopEntry(blk, blk->getSinglePredecessor());
    return success();
  }
  case K::Decl:
    return declareVariables(s);
  case K::Instr:
    return emitInstruction(s.instr);
  }
  return success();
}

const Importer::HeadInfo *Importer::headOf(const Instruction &inst) {
  // The parser takes only modifiers that follow the opcode without a space,
  // so the head is one piece of the buffer (checked all the same).
  const char *begin = inst.opcode.data(), *end = inst.opcode.end();
  bool contiguous = true;
  for (StringRef m : inst.mods) {
    if (m.data() != end + 1 || *end != '.') {
      contiguous = false;
      break;
    }
    end = m.end();
  }
  StringRef spelling(begin, end - begin);
  if (contiguous)
    if (auto it = heads.find(spelling); it != heads.end())
      return &it->second;
  const InstructionInfo *info = lookupInstruction(inst.opcode);
  if (!info) {
    (void)unsupported(const_cast<Instruction &>(inst));
    return nullptr;
  }
  if (failed(checkModifiers(inst, *info)))
    return nullptr;
  HeadInfo head{info, {}};
  for (StringRef m : inst.mods)
    if (std::optional<PtxType> t = ptxType(m))
      head.types.push_back(*t);
  if (!contiguous) {
    // Not kept (it has no spelling to find it by).
    uncachedHead = std::move(head);
    return &uncachedHead;
  }
  return &heads.try_emplace(spelling, std::move(head)).first->second;
}

LogicalResult Importer::emitInstruction(Instruction &inst) {
  curLoc = loc(inst.loc);
  curInst = nullptr;
  curHead = headOf(inst);
  if (!curHead)
    return failure();
  curInst = &inst;
  const InstructionInfo *info = curHead->info;
  if (!cur->empty() && cur->back().hasTrait<OpTrait::IsTerminator>()) {
    // Code after an unconditional terminator: an unreachable block.
    startBlock(new Block());
  }
  if (inst.guard.empty())
    return emitUnguarded(inst, *info);

  Operand g;
  g.kind = OK::Reg;
  g.name = inst.guard;
  g.negated = inst.guardNegated;
  g.loc = inst.guardLoc;
  VarInfo *var = lookup(inst.guard);
  if (!var || !var->type.isInteger(1))
    return error(inst.guardLoc, "guard '" + inst.guard +
                                    "' is not a declared predicate register");
  Value pred = read(g, b.getI1Type());
  if (!pred)
    return failure();

  if (info->opcode == Opcode::Bra) {
    Block *target = blockOf.lookup(&inst);
    Block *next = new Block();
    expectedPreds[next] = 1;
    auto br =
        make<cf::CondBranchOp>(pred, target, ValueRange(), next, ValueRange());
    if (!pendingPragma.empty()) {
      br->setAttr("wooly.pragma", b.getStringAttr(pendingPragma));
      pendingPragma = {};
    }
    afterEdgeTo(target);
    startBlock(next);
    return success();
  }

  // A guarded instruction without side effects (and that cannot fault) runs
  // unconditionally; its results are selected by the guard.
  if (info->flags & kPure) {
    guard = pred;
    LogicalResult r = emitUnguarded(inst, *info);
    guard = Value();
    return r;
  }

  // Any other guarded instruction: branch around it.
  Block *then = new Block();
  Block *join = new Block();
  expectedPreds[then] = 1;
  expectedPreds[join] = 2;
  make<cf::CondBranchOp>(pred, then, ValueRange(), join, ValueRange());
  startBlock(then);
  if (failed(emitUnguarded(inst, *info))) {
    // The body owns `join` from now on (it is freed with the function).
    func.getBody().push_back(join);
    return failure();
  }
  if (cur->empty() || !cur->back().hasTrait<OpTrait::IsTerminator>())
    branchTo(join);
  else
    expectedPreds[join] = 1;
  startBlock(join);
  ssa->sealBlock(join);
  return success();
}

LogicalResult Importer::emitRet(Instruction &inst) {
  SmallVector<Value> values;
  for (auto [i, id] : llvm::enumerate(retVars)) {
    auto vec = vectorRets.find(i);
    if (vec == vectorRets.end()) {
      values.push_back(ssa->readVariable(id, cur));
      continue;
    }
    SmallVector<Value> parts;
    for (auto c : vec->second)
      parts.push_back(ssa->readVariable(c, cur));
    Type rt = func.getResultTypes()[i];
    Value packed = make<PackOp>(intType(widthOf(rt)), parts);
    values.push_back(bitcast(packed, rt));
  }
  make<RetOp>(values);
  return success();
}

LogicalResult Importer::emitUnguarded(Instruction &inst,
                                      const InstructionInfo &info) {
  if (info.flags & kRelaxedSizes) {
    relaxedSizes = true;
    llvm::scope_exit restore([&] { relaxedSizes = false; });
    return (this->*info.handler)(inst, info.opcode);
  }
  return (this->*info.handler)(inst, info.opcode);
}

LogicalResult Importer::emitBra(Instruction &inst, Opcode op) {
  Block *target = blockOf.lookup(&inst);
  auto br = make<cf::BranchOp>(target, ValueRange());
  if (!pendingPragma.empty()) {
    br->setAttr("wooly.pragma", b.getStringAttr(pendingPragma));
    pendingPragma = {};
  }
  afterEdgeTo(target);
  return success();
}

/// ret, exit, trap and brkpt.
LogicalResult Importer::emitExitTrap(Instruction &inst, Opcode op) {
  if (!inst.operands.empty())
    return error(inst.loc, "'" + inst.opcode + "' takes no operands");
  if (op == Opcode::Ret)
    return emitRet(inst);
  if (op == Opcode::Exit)
    make<ExitOp>();
  else if (op == Opcode::Trap)
    make<TrapOp>();
  else
    make<BrkptOp>();
  return success();
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

LogicalResult Importer::emitCall(Instruction &inst, Opcode op) {
  // call{.uni} (rets), callee, (args){, prototype}
  auto &ops = inst.operands;
  size_t i = 0;
  const Operand *rets = nullptr, *args = nullptr;
  if (i < ops.size() && ops[i].kind == OK::List)
    rets = &ops[i++];
  if (i >= ops.size())
    return error(inst.loc, "'call' needs a callee");
  const Operand &callee = ops[i++];
  if (i < ops.size() && ops[i].kind == OK::List)
    args = &ops[i++];
  const Operand *proto = i < ops.size() ? &ops[i++] : nullptr;
  if (i != ops.size())
    return error(inst.loc, "malformed 'call'");

  SmallVector<Type> argTypes, resTypes;
  FuncOp fn;
  if (callee.kind == OK::Symbol) {
    fn = funcs.lookup(callee.name);
    if (!fn)
      return error(callee.loc,
                   "call to undeclared function '" + callee.name + "'");
    argTypes.assign(fn.getArgumentTypes().begin(), fn.getArgumentTypes().end());
    resTypes.assign(fn.getResultTypes().begin(), fn.getResultTypes().end());
  } else if (callee.kind == OK::Reg) {
    if (!proto || proto->kind != OK::Symbol)
      return error(inst.loc, "an indirect call needs a prototype");
    const Prototype *p = nullptr;
    for (auto &[name, pr] : ast.prototypes)
      if (name == proto->name)
        p = &pr;
    if (!p)
      return error(proto->loc, "unknown prototype '" + proto->name + "'");
    for (auto &d : p->params) {
      auto t = paramType(d);
      if (!t)
        return error(d.loc, "unsupported parameter type");
      argTypes.push_back(*t);
    }
    for (auto &d : p->results) {
      auto t = paramType(d);
      if (!t)
        return error(d.loc, "unsupported parameter type");
      resTypes.push_back(*t);
    }
  } else {
    return error(callee.loc, "expected a function name or register");
  }
  size_t nargs = args ? args->elems.size() : 0;
  size_t nrets = rets ? rets->elems.size() : 0;
  if (nargs != argTypes.size() || nrets != resTypes.size())
    return error(inst.loc, "call passes " + Twine(nargs) + " argument(s) and " +
                               Twine(nrets) + " result(s); the callee takes " +
                               Twine(argTypes.size()) + " and " +
                               Twine(resTypes.size()));
  SmallVector<Value> argValues;
  for (size_t k = 0; k < nargs; ++k) {
    const Operand &a = args->elems[k];
    Value v;
    VarInfo *var = a.kind == OK::Symbol ? lookup(a.name) : nullptr;
    if (var && var->isParam) {
      if (widthOf(var->type) != widthOf(argTypes[k]))
        return error(a.loc, "argument '" + a.name + "' has " +
                                Twine(widthOf(var->type) / 8) +
                                " bytes; the callee's parameter has " +
                                Twine(widthOf(argTypes[k]) / 8));
      v = coerce(ssa->readVariable(var->id, cur), argTypes[k]);
    } else {
      v = read(a, argTypes[k]);
    }
    if (!v)
      return failure();
    argValues.push_back(v);
  }
  Operation *call;
  if (fn) {
    auto c = CallOp::create(
        b, curLoc, resTypes, FlatSymbolRefAttr::get(fn.getSymNameAttr()),
        argValues, /*uni=*/UnitAttr(), ArrayAttr(), ArrayAttr());
    if (inst.has("uni"))
      c.setUni(true);
    call = c;
  } else {
    Value target = read(callee, addrType());
    if (!target)
      return failure();
    call = make<CallIndirectOp>(resTypes, target, argValues);
  }
  for (size_t k = 0; k < nrets; ++k) {
    const Operand &r = rets->elems[k];
    VarInfo *var = r.kind == OK::Symbol ? lookup(r.name) : nullptr;
    if (!var || !var->isParam) {
      if (failed(write(r, call->getResult(k))))
        return failure();
      continue;
    }
    if (widthOf(var->type) != widthOf(resTypes[k]))
      return error(r.loc, "result '" + r.name + "' has " +
                              Twine(widthOf(var->type) / 8) +
                              " bytes; the callee returns " +
                              Twine(widthOf(resTypes[k]) / 8));
    ssa->writeVariable(var->id, cur, coerce(call->getResult(k), var->type));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Execution control
//===----------------------------------------------------------------------===//

LogicalResult Importer::emitNanosleep(Instruction &inst, Opcode op) {
  if (failed(expectOperands(inst, 1)))
    return failure();
  Value t = read(inst.operands[0], intType(32));
  if (!t)
    return failure();
  make<NanosleepOp>(t);
  return success();
}
