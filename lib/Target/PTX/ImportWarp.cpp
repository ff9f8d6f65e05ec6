//===- ImportWarp.cpp - PTX warp and CTA synchronisation --------*- C++ -*-===//
//
// Warp-level instructions (activemask, shfl, vote, match, redux) and CTA
// barriers (bar, barrier, bar.red, bar.warp.sync).
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::ptx;
using llvm::StringRef;
using OK = Operand::Kind;

LogicalResult Importer::emitWarp(Instruction &inst, Opcode op) {
  Type i32 = intType(32), i1 = b.getI1Type();
  bool sync = inst.has("sync");
  auto maskOf = [&](size_t i) -> Value {
    if (!sync)
      return constInt(i32, -1);
    if (i >= inst.operands.size()) {
      (void)error(inst.loc, "missing member mask");
      return {};
    }
    return read(inst.operands[i], i32);
  };
  const Operand &dst = inst.operands.empty() ? Operand() : inst.operands[0];
  if (op == Opcode::Activemask) {
    if (failed(expectOperands(inst, 1)))
      return failure();
    return write(dst, make<ActiveMaskOp>(i32));
  }
  if (op == Opcode::Shfl) {
    std::optional<ShflMode> mode;
    for (StringRef m : inst.mods)
      if (auto sm = symbolizeShflMode(m))
        mode = sm;
    if (!mode)
      return error(inst.loc, "'shfl' needs a mode");
    if (failed(expectOperands(inst, sync ? 5 : 4)))
      return failure();
    Value a = read(inst.operands[1], i32), lane = read(inst.operands[2], i32),
          c = read(inst.operands[3], i32), mask = maskOf(4);
    if (!a || !lane || !c || !mask)
      return failure();
    auto s = make<ShflOp>(*mode, a, lane, c, mask);
    if (dst.kind == OK::Pair) {
      if (failed(write(dst.elems[0], s.getResult())))
        return failure();
      return write(dst.elems[1], s.getValid());
    }
    return write(dst, s.getResult());
  }
  if (op == Opcode::Vote) {
    std::optional<VoteMode> mode;
    for (StringRef m : inst.mods)
      if (auto vm = symbolizeVoteMode(m))
        mode = vm;
    if (!mode)
      return error(inst.loc, "'vote' needs a mode");
    if (failed(expectOperands(inst, sync ? 3 : 2)))
      return failure();
    Value p = read(inst.operands[1], i1), mask = maskOf(2);
    if (!p || !mask)
      return failure();
    Type rt = *mode == VoteMode::ballot ? i32 : i1;
    return write(dst, make<VoteOp>(rt, *mode, p, mask));
  }
  if (op == Opcode::Match) {
    auto t = instrType(inst);
    MatchMode mode = inst.has("all") ? MatchMode::all : MatchMode::any;
    if (!t || failed(expectOperands(inst, 3)))
      return t ? failure() : error(inst.loc, "'match' needs a type");
    Value v = read(inst.operands[1], t->type), mask = maskOf(2);
    if (!v || !mask)
      return failure();
    auto m = make<MatchOp>(mode, v, mask);
    if (!checked(m.getResult()))
      return failure();
    if (dst.kind == OK::Pair) {
      if (failed(write(dst.elems[0], m.getResult())))
        return failure();
      return write(dst.elems[1], m.getPred());
    }
    return write(dst, m.getResult());
  }
  // redux.sync.op.type d, a, mask
  auto t = instrType(inst);
  if (!t || failed(expectOperands(inst, 3)))
    return t ? failure() : error(inst.loc, "'redux' needs a type");
  std::optional<ReduxKind> kind;
  for (StringRef m : inst.mods) {
    if (m == "add" || m == "and" || m == "or" || m == "xor")
      kind = *symbolizeReduxKind(m);
    else if (m == "min")
      kind = t->isSigned ? ReduxKind::smin : ReduxKind::umin;
    else if (m == "max")
      kind = t->isSigned ? ReduxKind::smax : ReduxKind::umax;
  }
  if (!kind || t->isFloat)
    return unsupported(inst);
  Value v = read(inst.operands[1], i32), mask = maskOf(2);
  if (!v || !mask)
    return failure();
  return write(dst, make<ReduxOp>(i32, *kind, v, mask));
}

LogicalResult Importer::emitBarrier(Instruction &inst, Opcode op) {
  Type i32 = intType(32);
  if (inst.has("warp")) {
    if (failed(expectOperands(inst, 1)))
      return failure();
    Value mask = read(inst.operands[0], i32);
    if (!mask)
      return failure();
    make<WarpSyncOp>(mask);
    return success();
  }
  if (inst.has("red")) {
    // bar.red.op.type d, a{, b}, {!}c
    std::optional<ReduxKind> kind;
    for (StringRef m : inst.mods)
      if (m == "popc" || m == "and" || m == "or")
        kind = *symbolizeReduxKind(m);
    if (!kind || inst.operands.size() < 3 || inst.operands.size() > 4)
      return error(inst.loc, "malformed 'bar.red'");
    Value id = read(inst.operands[1], i32);
    Value count;
    if (inst.operands.size() == 4 && !(count = read(inst.operands[2], i32)))
      return failure();
    Value p = read(inst.operands.back(), b.getI1Type());
    if (!id || !p)
      return failure();
    Type rt = *kind == ReduxKind::popc ? i32 : b.getI1Type();
    bool aligned = op == Opcode::Bar || inst.has("aligned");
    return write(inst.operands[0],
                 make<BarRedOp>(rt, *kind, id, count, p, aligned));
  }
  bool arrive = inst.has("arrive");
  if (!arrive && !inst.has("sync") && !inst.mods.empty() &&
      !(inst.mods.size() == 1 && inst.mods[0] == "aligned"))
    return unsupported(inst);
  if (inst.operands.empty() || inst.operands.size() > 2)
    return error(inst.loc, "'" + inst.opcode +
                               "' expects a barrier id and an "
                               "optional thread count");
  Value id = read(inst.operands[0], i32);
  Value count;
  if (inst.operands.size() == 2 && !(count = read(inst.operands[1], i32)))
    return failure();
  if (!id)
    return failure();
  bool aligned = op == Opcode::Bar || inst.has("aligned");
  make<BarrierOp>(id, count, arrive, aligned);
  return success();
}
