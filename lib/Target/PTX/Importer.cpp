//===- Importer.cpp - PTX importer values and types -------------*- C++ -*-===//
//
// Raises PTX to Wooly IR as the parser delivers it, one function at a time:
// module-scope variables become `wooly.global`, functions `wooly.func`,
// virtual registers SSA values (through SSABuilder), guarded instructions
// either selects (when they only compute registers) or conditional branches
// around the instruction, and each instruction `arith`/`math` ops where those
// have exactly the PTX semantics, `wooly` ops otherwise. Anything not
// understood is a located error.
//
// This file holds the shared helpers: locations and diagnostics, PTX types,
// reading and writing operands (registers, immediates, symbols, vectors),
// addresses, and the public entry points. The instruction families are in
// Import*.cpp (see ImporterImpl.h).
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "Wooly/Target/PTX/PTXImporter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SourceMgr.h"

#include <cstring>

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::ptx;
using llvm::StringRef;
using OK = Operand::Kind;

//===----------------------------------------------------------------------===//
// Locations and diagnostics
//===----------------------------------------------------------------------===//

/// Locations are mostly requested in increasing order, so the line is found
/// by counting newlines from the previous position.
Location Importer::loc(const char *p) {
  if (!p)
    return UnknownLoc::get(ctx);
  if (p < cursor.pos) {
    // Moving backwards (function bodies after all headers): restart the
    // cursor at p's line.
    auto [line, col] = sm.getLineAndColumn(llvm::SMLoc::getFromPointer(p));
    cursor = {p, p - (col - 1), line};
  }
  for (const char *q = cursor.pos; q < p;) {
    const char *nl = static_cast<const char *>(std::memchr(q, '\n', p - q));
    if (!nl)
      break;
    ++cursor.line;
    cursor.lineStart = nl + 1;
    q = nl + 1;
  }
  cursor.pos = p;
  return FileLineColLoc::get(bufferName, cursor.line,
                             static_cast<unsigned>(p - cursor.lineStart) + 1);
}

LogicalResult Importer::error(const char *p, const Twine &msg) {
  std::string text;
  for (unsigned char c : msg.str()) {
    if (c >= 0x20 && c < 0x7f) {
      text += char(c);
      continue;
    }
    text += "\\x";
    text += llvm::hexdigit(c >> 4, /*LowerCase=*/true);
    text += llvm::hexdigit(c & 15, /*LowerCase=*/true);
  }
  mlir::emitError(loc(p)) << text;
  return failure();
}

Value Importer::checked(Value v) {
  Operation *op = v.getDefiningOp();
  if (op && failed(mlir::verify(op, /*verifyRecursively=*/false)))
    return {};
  return v;
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

std::optional<PtxType> Importer::ptxType(StringRef n) {
  if (const std::optional<PtxType> *known = ptxTypes.find(n))
    return *known;
  PtxType t;
  auto sc = symbolizeScalarType(n);
  if (!sc) {
    ptxTypes.insert(n, std::nullopt);
    return std::nullopt;
  }
  t.scalar = *sc;
  char k = n[0];
  t.isSigned = k == 's';
  t.isFloat = k == 'f' || n.starts_with("bf") || n == "tf32" ||
              n.starts_with("e4") || n.starts_with("e5");
  t.type = getStorageType(ctx, *sc);
  ptxTypes.insert(n, t);
  return t;
}

/// Returns the `which`-th type modifier of `inst` (0 = first).
std::optional<PtxType> Importer::instrType(const Instruction &inst, int which) {
  if (&inst == curInst && curHead) {
    if (which < 0 || static_cast<size_t>(which) >= curHead->types.size())
      return std::nullopt;
    return curHead->types[which];
  }
  int seen = 0;
  for (StringRef m : inst.mods) {
    if (auto t = ptxType(m)) {
      if (seen++ == which)
        return t;
    }
  }
  return std::nullopt;
}

LogicalResult Importer::checkOperandSize(const Operand &op, const VarInfo &var,
                                         Type t) {
  if (relaxedSizes || var.type == t || widthOf(var.type) == widthOf(t))
    return success();
  return error(op.loc,
               "register '" + op.name + "' has " + Twine(widthOf(var.type)) +
                   " bits; the instruction operates on " + Twine(widthOf(t)));
}

std::optional<StateSpace> Importer::spaceOf(const Instruction &inst) {
  for (StringRef m : inst.mods) {
    StringRef base = m.split("::").first;
    if (base == "global")
      return StateSpace::global;
    if (base == "shared")
      return m == "shared::cluster" ? StateSpace::shared_cluster
                                    : StateSpace::shared;
    if (base == "local")
      return StateSpace::local;
    if (base == "const")
      return StateSpace::constant;
    if (base == "param")
      return StateSpace::param;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

void Importer::assign(SSABuilder::Var id, Value v) {
  if (guard)
    v = make<arith::SelectOp>(guard, v, ssa->readVariable(id, cur));
  ssa->writeVariable(id, cur, v);
}

Value Importer::constant(TypedAttr value) {
  auto [it, inserted] = constants.try_emplace(value, Value());
  if (!inserted)
    return it->second;
  OpBuilder::InsertionGuard g(b);
  // Constants are hoisted to the entry block, in order of first use.
  if (lastConstant)
    b.setInsertionPointAfter(lastConstant);
  else
    b.setInsertionPointToStart(entry);
  auto op = make<arith::ConstantOp>(value);
  lastConstant = op;
  it->second = op;
  return op;
}

Value Importer::undefValue(Type t) {
  // A register read before any write holds an unspecified value; Wooly
  // fixes it to zero so every backend computes the same.
  if (auto vt = dyn_cast<VectorType>(t))
    return constant(
        DenseElementsAttr::get(vt, b.getZeroAttr(vt.getElementType())));
  return constant(cast<TypedAttr>(b.getZeroAttr(t)));
}

Value Importer::bitcast(Value v, Type t) {
  if (v.getType() == t)
    return v;
  if (v.getType().isIntOrFloat() && t.isIntOrFloat())
    return make<arith::BitcastOp>(t, v);
  return make<BitcastOp>(t, v);
}

Value Importer::coerce(Value v, Type t, bool signExtend) {
  Type from = v.getType();
  if (from == t)
    return v;
  unsigned fw = widthOf(from), tw = widthOf(t);
  if (fw == tw)
    return bitcast(v, t);
  // Integer constants (immediates) are re-materialized at the new width.
  if (auto cst = v.getDefiningOp<arith::ConstantOp>())
    if (auto ia = dyn_cast<IntegerAttr>(cst.getValue()); ia && t.isInteger()) {
      llvm::APInt val = ia.getValue();
      val = fw > tw ? val.trunc(tw) : signExtend ? val.sext(tw) : val.zext(tw);
      return constant(b.getIntegerAttr(t, val));
    }
  // Different widths: go through integers of each width.
  Value i = bitcast(v, intType(fw));
  Value r;
  if (fw > tw)
    r = make<arith::TruncIOp>(intType(tw), i);
  else if (signExtend)
    r = make<arith::ExtSIOp>(intType(tw), i);
  else
    r = make<arith::ExtUIOp>(intType(tw), i);
  return bitcast(r, t);
}

VarInfo *Importer::lookup(StringRef name) {
  if (name.empty() || name.size() > 8)
    return lookupInScopes(name);
  uint64_t key = packShortString(name);
  LookupCacheEntry &e =
      lookupCache[(key * 0x9E3779B97F4A7C15ULL) >> (64 - kLookupCacheBits)];
  if (e.key == key && e.epoch == lookupEpoch)
    return e.var;
  VarInfo *var = lookupInScopes(name);
  e = {key, lookupEpoch, var};
  return var;
}

VarInfo *Importer::lookupInScopes(StringRef name) {
  if (name.size() > 2 && name[name.size() - 2] == '.') {
    char c = name.back();
    const char *alias = c == 'r'   ? ".x"
                        : c == 'g' ? ".y"
                        : c == 'b' ? ".z"
                        : c == 'a' ? ".w"
                                   : nullptr;
    if (alias)
      name = names.save(name.drop_back(2) + alias);
  }
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    if (VarInfo *v = it->vars.find(name))
      return v;
    size_t index;
    if (RegRange *r = it->rangeOf(name, index)) {
      if (index >= r->regs.size()) {
        // Grown by doubling, up to the declared count: a declared range
        // may be far larger than what is used.
        size_t grown = std::max<size_t>(index + 1, 2 * r->regs.size());
        r->regs.resize(std::min<size_t>(grown, r->count), nullptr);
      }
      VarInfo *&v = r->regs[index];
      if (!v) // First use of a register of a `%r<N>` range.
        v = it->vars.add(VarInfo{newVar(r->type, name), r->type, false});
      return v;
    }
  }
  return nullptr;
}

Value Importer::readSpecial(const Operand &op, Type t) {
  StringRef name = op.name.drop_front(); // drop '%'
  auto [base, dimName] = name.split('.');
  std::optional<Dim> dim;
  if (!dimName.empty()) {
    dim = symbolizeDim(dimName);
    if (!dim)
      return {};
  }
  // `%envreg0` .. `%envreg31`: driver-defined, one op.
  unsigned index;
  if (dimName.empty() && base.consume_front("envreg") &&
      !base.getAsInteger(10, index) && index < 32)
    return coerce(make<EnvRegOp>(intType(32), index), t);
  auto reg = symbolizeSpecialReg(base);
  if (!reg)
    return {};
  unsigned w = (*reg == SpecialReg::clock64 ||
                *reg == SpecialReg::globaltimer || *reg == SpecialReg::gridid)
                   ? 64
                   : 32;
  bool needsDim =
      *reg == SpecialReg::tid || *reg == SpecialReg::ntid ||
      *reg == SpecialReg::ctaid || *reg == SpecialReg::nctaid ||
      *reg == SpecialReg::clusterid || *reg == SpecialReg::nclusterid ||
      *reg == SpecialReg::cluster_ctaid || *reg == SpecialReg::cluster_nctaid;
  if (needsDim != dim.has_value())
    return {};
  Value v = make<SRegOp>(intType(w), enumAttr<SpecialRegAttr>(*reg),
                         dim ? enumAttr<DimAttr>(*dim) : DimAttr());
  return coerce(v, t);
}

Value Importer::read(const Operand &op, Type t, bool signExtend) {
  // Registers and names are looked up once.
  VarInfo *var =
      op.kind == OK::Reg || op.kind == OK::Symbol ? lookup(op.name) : nullptr;
  if (var && var->vecWidth)
    return read(*expandVector(op, var), t, signExtend);
  switch (op.kind) {
  case OK::Reg: {
    if (var && op.imm) {
      // `reg + imm` as an operand.
      Operand plain = op;
      plain.imm = 0;
      Value v = read(plain, t, signExtend);
      if (!v || !v.getType().isInteger())
        return v ? ((void)error(op.loc, "'reg + imm' needs an integer type"),
                    Value())
                 : v;
      return make<arith::AddIOp>(v, constInt(t, op.imm));
    }
    if (!var) {
      Value s = readSpecial(op, t);
      if (!s)
        (void)error(op.loc, "use of undeclared register '" + op.name + "'");
      return s;
    }
    if (t.isInteger(1) && !var->type.isInteger(1)) {
      (void)error(op.loc, "'" + op.name + "' is not a predicate register");
      return {};
    }
    if (failed(checkOperandSize(op, *var, t)))
      return {};
    Value v = ssa->readVariable(var->id, cur);
    if (op.negated) {
      if (!v.getType().isInteger(1)) {
        (void)error(op.loc, "'!' needs a predicate register");
        return {};
      }
      v = make<arith::XOrIOp>(v, constInt(b.getI1Type(), 1));
    }
    return coerce(v, t, signExtend);
  }
  case OK::Imm: {
    if (auto ft = dyn_cast<FloatType>(t))
      return constFloat(t, static_cast<double>(op.imm));
    if (!t.isInteger()) {
      Value i = constInt(intType(widthOf(t)), op.imm);
      return bitcast(i, t);
    }
    return constInt(t, op.imm);
  }
  case OK::FImm: {
    if (auto ft = dyn_cast<FloatType>(t)) {
      llvm::APFloat value = op.isDouble
                                ? llvm::APFloat(llvm::APFloat::IEEEdouble(),
                                                llvm::APInt(64, op.bits))
                                : llvm::APFloat(llvm::APFloat::IEEEsingle(),
                                                llvm::APInt(32, op.bits));
      if (&value.getSemantics() != &ft.getFloatSemantics()) {
        bool lost;
        value.convert(ft.getFloatSemantics(),
                      llvm::APFloat::rmNearestTiesToEven, &lost);
      }
      return constant(b.getFloatAttr(ft, value));
    }
    unsigned w = widthOf(t);
    if (!w) {
      (void)error(op.loc, "float immediate for a non-scalar operand");
      return {};
    }
    Value i = constInt(intType(w), static_cast<int64_t>(op.bits));
    return bitcast(i, t);
  }
  case OK::Symbol: {
    // Register names need not start with '%'.
    if (VarInfo *v = var; v && !v->isParam) {
      Operand reg = op;
      reg.kind = OK::Reg;
      return read(reg, t, signExtend);
    }
    if (op.negated) {
      (void)error(op.loc, "'!' needs a predicate register");
      return {};
    }
    if (op.name == "WARP_SZ")
      return coerce(constInt(intType(32), 32), t);
    // `mov.u64 %rd, tex`: a texture or surface reference's handle, for
    // indirect texture access (its address is never exposed).
    if (StringRef sym = symbolName(op.name); texrefs.count(sym)) {
      if (op.imm || widthOf(t) != 64) {
        (void)error(op.loc, "a texture or surface reference is read as a "
                            "64-bit handle");
        return {};
      }
      return coerce(loadTexref(sym), t);
    }
    if (StringRef sym = symbolName(op.name);
        globals.count(sym) || funcs.count(sym)) {
      Type at = widthOf(t) == 32 ? intType(32) : intType(64);
      Value a = make<AddressOfOp>(at, FlatSymbolRefAttr::get(ctx, sym));
      if (op.imm)
        a = make<arith::AddIOp>(a, constInt(at, op.imm));
      return coerce(a, t);
    }
    if (VarInfo *v = var; v && v->isParam) {
      if (v->argIndex < 0 || !func.getKernel()) {
        (void)error(op.loc, "taking the address of parameter '" + op.name +
                                "' is only supported for kernel parameters");
        return {};
      }
      Type at = widthOf(t) == 32 ? intType(32) : intType(64);
      Value a = make<ParamAddressOp>(at, b.getI64IntegerAttr(v->argIndex));
      if (op.imm)
        a = make<arith::AddIOp>(a, constInt(at, op.imm));
      return coerce(a, t);
    }
    (void)error(op.loc, "use of undeclared identifier '" + op.name + "'");
    return {};
  }
  case OK::Vector: {
    SmallVector<Value> parts;
    SmallVector<Type> types;
    unsigned n = op.elems.size();
    unsigned w = widthOf(t);
    if (!n || !w || w % n) {
      (void)error(op.loc, "vector operand does not split the instruction type");
      return {};
    }
    for (const Operand &e : op.elems) {
      Value p = read(e, intType(w / n));
      if (!p)
        return {};
      parts.push_back(p);
    }
    Value packed = make<PackOp>(intType(w), parts);
    return bitcast(packed, t);
  }
  default:
    (void)error(op.loc, "unexpected operand here");
    return {};
  }
}

LogicalResult Importer::write(const Operand &op, Value v, bool signExtend) {
  VarInfo *var =
      op.kind == OK::Reg || op.kind == OK::Symbol ? lookup(op.name) : nullptr;
  if (var && var->vecWidth)
    return write(*expandVector(op, var), v, signExtend);
  switch (op.kind) {
  case OK::Sink:
    return success();
  case OK::Symbol:
  case OK::Reg: {
    if (!var || (op.kind == OK::Symbol && var->isParam))
      return error(op.loc, "use of undeclared register '" + op.name + "'");
    if (op.negated)
      return error(op.loc, "'!' is not allowed on a destination");
    if (failed(checkOperandSize(op, *var, v.getType())))
      return failure();
    assign(var->id, coerce(v, var->type, signExtend));
    return success();
  }
  case OK::Vector: {
    unsigned n = op.elems.size();
    unsigned w = widthOf(v.getType());
    if (!n || !w || w % n)
      return error(op.loc, "vector destination does not split the value");
    if (n == 1) // `{%r}`, as ptxas accepts for a scalar.
      return write(op.elems[0], v, signExtend);
    SmallVector<Type> types(n, intType(w / n));
    auto parts = make<UnpackOp>(types, bitcast(v, intType(w)));
    for (unsigned i = 0; i < n; ++i)
      if (failed(write(op.elems[i], parts.getResult(i))))
        return failure();
    return success();
  }
  default:
    return error(op.loc, "destination must be a register");
  }
}

/// Computes the address of an `[addr]` operand; `type` receives its type.
/// For a generic `access`, a variable of another state space named
/// directly (`ld.b32 r, [shared_var]`) is converted to its generic address.
Value Importer::address(const Operand &op, Type &type,
                        std::optional<StateSpace> access) {
  if (op.kind != OK::Address) {
    (void)error(op.loc, "expected an address operand '[...]'");
    return {};
  }
  if (!op.elems.empty()) {
    (void)error(op.elems[0].loc, "coordinates belong only in the operand of "
                                 "a texture or surface instruction");
    return {};
  }
  Value base;
  if (op.name.empty()) {
    type = addrType();
    return constInt(type, op.imm);
  }
  if (VarInfo *var = lookup(op.name); var || op.name.starts_with("%")) {
    if (!var) {
      (void)error(op.loc, "use of undeclared register '" + op.name + "'");
      return {};
    }
    if (var->isParam) {
      (void)error(op.loc, "parameter used as an address register");
      return {};
    }
    if (var->vecWidth) {
      (void)error(op.loc, "vector register used as an address");
      return {};
    }
    type = var->type.isInteger(32) ? intType(32) : intType(64);
    base = coerce(ssa->readVariable(var->id, cur), type);
  } else if (StringRef sym = symbolName(op.name); texrefs.count(sym)) {
    (void)error(op.loc, "texture or surface reference '" + op.name +
                            "' used as a memory address (only texture and "
                            "surface instructions and 'mov' take it)");
    return {};
  } else if (StringRef sym = symbolName(op.name);
             globals.count(sym) || funcs.count(sym)) {
    type = addrType();
    base = make<AddressOfOp>(type, FlatSymbolRefAttr::get(ctx, sym));
    auto g = globals.find(sym);
    if (access == StateSpace::generic && g != globals.end() &&
        g->second.getSpace() != StateSpace::global &&
        g->second.getSpace() != StateSpace::generic)
      base = make<CvtaOp>(type, enumAttr<CvtaDirAttr>(CvtaDir::to_generic),
                          enumAttr<StateSpaceAttr>(g->second.getSpace()), base);
  } else {
    (void)error(op.loc, "use of undeclared identifier '" + op.name + "'");
    return {};
  }
  if (op.imm)
    base = make<arith::AddIOp>(base, constInt(type, op.imm));
  return base;
}
//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> mlir::wooly::importPTX(llvm::SourceMgr &sourceMgr,
                                             MLIRContext *context,
                                             const PTXImportOptions &options) {
  // Nothing in the import recurses with the input's size (SSA construction
  // uses worklists, operand nesting is bounded), so it runs on the caller's
  // thread whatever the input.
  Module ast;
  Importer importer(context, sourceMgr, ast, options);
  return importer.run();
}

OwningOpRef<ModuleOp> mlir::wooly::importPTX(StringRef ptx,
                                             StringRef bufferName,
                                             MLIRContext *context,
                                             const PTXImportOptions &options) {
  llvm::SourceMgr sm;
  sm.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(ptx, bufferName,
                                       /*RequiresNullTerminator=*/false),
      llvm::SMLoc());
  return importPTX(sm, context, options);
}

void mlir::wooly::registerPTXImportTranslation() {
  TranslateToMLIRRegistration reg(
      "import-ptx", "Import PTX ISA text into Wooly IR",
      [](llvm::SourceMgr &sourceMgr, MLIRContext *context) {
        return importPTX(sourceMgr, context);
      },
      [](DialectRegistry &registry) {
        registry.insert<WoolyDialect, arith::ArithDialect, math::MathDialect,
                        cf::ControlFlowDialect>();
      });
}
