//===- Importer.cpp - Raise a PTX syntax tree to Wooly IR ----*- C++ -*-===//
//
// Raises PTX to Wooly IR as the parser delivers it, one function at a time:
// module-scope variables become `wooly.global`, functions `wooly.func`,
// virtual registers SSA values (through SSABuilder), guarded instructions
// either selects (when they only compute registers) or conditional branches
// around the instruction, and each instruction `arith`/`math` ops where those
// have exactly the PTX semantics, `wooly` ops otherwise. Anything not
// understood is a located error.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Target/PTX/PTXImporter.h"

#include "PTXAst.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Target/PTX/SSABuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/StringSaver.h"

#include <cstring>

using namespace mlir;
using namespace mlir::wooly;
using llvm::StringRef;
using ptx::Operand;
using OK = Operand::Kind;

/// The largest `%v<N>` range of vector registers or `.param`s accepted.
static constexpr int64_t kMaxEagerRange = 4096;
/// The largest `.param` byte array accepted.
static constexpr int64_t kMaxParamBytes = int64_t(1) << 20;

namespace {

/// Thrown-free error propagation: handlers return failure() after emitting.
struct VarInfo {
  SSABuilder::Var id;
  Type type;
  bool isParam = false;
  /// For a vector register `.reg .v4 .f32 v`: its width; the components are
  /// separate variables named `v.x` ... `v.w`.
  unsigned vecWidth = 0;
  /// For a kernel parameter: its argument number.
  int argIndex = -1;
};

/// A PTX type name's properties.
struct PtxType {
  Type type; ///< MLIR storage type
  bool isSigned = false;
  bool isFloat = false;
  ScalarType scalar = ScalarType::b32;
};

class Importer final : public ptx::ModuleSink {
public:
  Importer(MLIRContext *ctx, llvm::SourceMgr &sm, ptx::Module &ast)
      : ctx(ctx), sm(sm), ast(ast), b(ctx) {
    const llvm::MemoryBuffer *buf = sm.getMemoryBuffer(sm.getMainFileID());
    bufferName = b.getStringAttr(buf->getBufferIdentifier());
    cursor = {buf->getBufferStart(), buf->getBufferStart(), 1};
  }

  /// Parses the buffer and raises each variable and function as soon as it
  /// is parsed.
  OwningOpRef<ModuleOp> run();

  bool onGlobal(const ptx::VarDecl &var) override {
    return succeeded(importGlobal(var, var.name));
  }
  bool onFunction(ptx::Function &f) override {
    if (failed(declareFunction(f)))
      return false;
    if (!f.hasBody)
      return true;
    // Verify each function while its IR is still in cache; the module-level
    // checks (symbol uses) run once at the end.
    return succeeded(importBody(f)) &&
           succeeded(verify(funcs.lookup(f.name), /*verifyRecursively=*/true));
  }

  /// Returns the `file:line:col` location of `p` in the buffer. Locations
  /// are mostly requested in increasing order, so the line is found by
  /// counting newlines from the previous position.
  Location loc(const char *p) {
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
  /// Emits `msg` at `p`. Messages quote the input, which may hold any
  /// bytes, and must stay printable UTF-8 (wooly-serve sends them in
  /// protocol strings): a byte outside printable ASCII is written as \xNN.
  LogicalResult error(const char *p, const Twine &msg) {
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

private:
  // Types.
  std::optional<PtxType> ptxType(StringRef name);
  std::optional<PtxType> instrType(const ptx::Instruction &inst, int which = 0);
  Type intType(unsigned bits) { return b.getIntegerType(bits); }
  Type addrType() { return intType(ast.addressSize); }

  // Module level.
  LogicalResult importGlobal(const ptx::VarDecl &d, StringRef name);
  LogicalResult declareFunction(ptx::Function &f);
  LogicalResult importBody(ptx::Function &f);
  std::optional<Type> paramType(const ptx::VarDecl &d);
  DictionaryAttr paramAttrs(const ptx::VarDecl &d);

  // Values.
  /// Returns the function's one `arith.constant` of `value`, created at the
  /// top of the entry block on first use.
  Value constant(TypedAttr value);
  /// The integer constant `v` of type `t`, sign-extended or truncated to
  /// the width of `t`.
  Value constInt(Type t, int64_t v) {
    return constant(
        b.getIntegerAttr(t, llvm::APInt(64, v, /*isSigned=*/true)
                                .sextOrTrunc(t.getIntOrFloatBitWidth())));
  }
  Value constFloat(Type t, double v) { return constant(b.getFloatAttr(t, v)); }
  Value coerce(Value v, Type t, bool signExtend = false);
  Value bitcast(Value v, Type t);
  Value read(const Operand &op, Type t, bool signExtend = false);
  /// Reads operands 1..n of `inst` (its sources) as `t` into `out`.
  bool readSources(const ptx::Instruction &inst, Type t,
                   SmallVectorImpl<Value> &out);
  LogicalResult write(const Operand &op, Value v, bool signExtend = false);
  VarInfo *lookup(StringRef name);
  StringRef vectorComponent(StringRef name, int64_t i) {
    static const char *xyzw[] = {".x", ".y", ".z", ".w"};
    return names.save(name + xyzw[i]);
  }
  /// Expands a whole vector register into a `{v.x, v.y, ...}` operand.
  std::optional<Operand> expandVector(const Operand &op,
                                      VarInfo *known = nullptr) {
    VarInfo *v = known ? known : lookup(op.name);
    if (!v || !v->vecWidth)
      return std::nullopt;
    Operand vec;
    vec.kind = OK::Vector;
    vec.loc = op.loc;
    for (unsigned i = 0; i < v->vecWidth; ++i) {
      Operand e;
      e.kind = OK::Reg;
      e.loc = op.loc;
      e.name = vectorComponent(op.name, i);
      vec.elems.push_back(e);
    }
    return vec;
  }
  Value readSpecial(const Operand &op, Type t);
  Value address(const Operand &op, Type &type,
                std::optional<StateSpace> access = std::nullopt);
  Value undefValue(Type t);

  // Control flow.
  void branchTo(Block *target);
  void afterEdgeTo(Block *target);
  void startBlock(Block *block);
  LogicalResult resolveLabels(ptx::Function &f);
  LogicalResult emitStatement(ptx::Statement &s);
  LogicalResult emitInstruction(ptx::Instruction &inst);
  LogicalResult emitUnguarded(ptx::Instruction &inst);
  LogicalResult emitRet(ptx::Instruction &inst);

  // Instruction families.
  LogicalResult emitMov(ptx::Instruction &inst);
  LogicalResult emitLdSt(ptx::Instruction &inst, bool isLoad);
  LogicalResult emitParamAccess(ptx::Instruction &inst, bool isLoad,
                                VarInfo *param, int64_t offset, PtxType ty,
                                int vec);
  LogicalResult emitIntOrFloatArith(ptx::Instruction &inst);
  LogicalResult emitMulMad(ptx::Instruction &inst);
  LogicalResult emitCarry(ptx::Instruction &inst);
  LogicalResult emitUnaryFloat(ptx::Instruction &inst);
  LogicalResult emitSetp(ptx::Instruction &inst, bool isSet);
  LogicalResult emitCvt(ptx::Instruction &inst);
  LogicalResult emitBits(ptx::Instruction &inst);
  LogicalResult emitVideoShift(ptx::Instruction &inst);
  LogicalResult emitAtom(ptx::Instruction &inst, bool isRed);
  LogicalResult emitWarp(ptx::Instruction &inst);
  LogicalResult emitBarrier(ptx::Instruction &inst);
  LogicalResult emitCall(ptx::Instruction &inst);
  LogicalResult emitMatrix(ptx::Instruction &inst);
  LogicalResult emitMisc(ptx::Instruction &inst);

  /// `a + b` (or `a - b`) on s32, clamped to [INT32_MIN, INT32_MAX].
  Value saturatingAddS32(Value a, Value c, bool subtract = false) {
    Type i64 = intType(64);
    Value wa = arith::ExtSIOp::create(b, curLoc, i64, a);
    Value wc = arith::ExtSIOp::create(b, curLoc, i64, c);
    Value s = subtract ? Value(arith::SubIOp::create(b, curLoc, wa, wc))
                       : Value(arith::AddIOp::create(b, curLoc, wa, wc));
    s = arith::MaxSIOp::create(b, curLoc, s, constInt(i64, INT32_MIN));
    s = arith::MinSIOp::create(b, curLoc, s, constInt(i64, INT32_MAX));
    return arith::TruncIOp::create(b, curLoc, intType(32), s);
  }

  /// PTX requires a register to have the size of the instruction type,
  /// except for `ld`, `st` and `cvt` (which extend and truncate).
  bool relaxedSizes = false;
  LogicalResult checkOperandSize(const Operand &op, const VarInfo &var, Type t);

  LogicalResult expectOperands(ptx::Instruction &inst, size_t n) {
    if (inst.operands.size() != n)
      return error(inst.loc, "'" + inst.opcode + "' expects " + Twine(n) +
                                 " operands, got " +
                                 Twine(inst.operands.size()));
    return success();
  }
  LogicalResult unsupported(ptx::Instruction &inst) {
    std::string full = inst.opcode.str();
    for (StringRef m : inst.mods)
      full += "." + m.str();
    return error(inst.loc, "unsupported PTX instruction '" + full + "'");
  }
  std::optional<StateSpace> spaceOf(const ptx::Instruction &inst);

  MLIRContext *ctx;
  llvm::SourceMgr &sm;
  ptx::Module &ast;
  OpBuilder b;
  StringAttr bufferName;
  /// Storage for names the importer makes up (`%r7` of `%r<10>`, `v.x`).
  llvm::BumpPtrAllocator nameAlloc;
  llvm::UniqueStringSaver names{nameAlloc};
  /// The last position loc() resolved.
  struct {
    const char *pos, *lineStart;
    unsigned line;
  } cursor;
  Location curLoc = UnknownLoc::get(ctx);
  ModuleOp module;
  llvm::StringMap<FuncOp> funcs;
  llvm::StringSet<> definedFuncs;
  llvm::StringMap<GlobalOp> globals;

  // Per function.
  FuncOp func;
  SSABuilder *ssa = nullptr;
  Block *cur = nullptr;
  Block *entry = nullptr;
  /// A `%r<N>` declaration: its registers get variables on first use.
  struct RegRange {
    int64_t count;
    Type type;
  };
  /// One `{ }` scope: its variables and register ranges.
  struct Scope {
    llvm::StringMap<VarInfo> vars;
    /// Register ranges by prefix (`%r` for `%r<10>`).
    llvm::StringMap<RegRange> ranges;

    /// Returns the range that declares `name`, if any: `name` is a prefix
    /// followed by a decimal index below the range's count.
    const RegRange *rangeOf(StringRef name) const {
      if (ranges.empty())
        return nullptr;
      // Try each split into prefix and all-digit suffix.
      for (size_t i = name.size(); i > 0 && llvm::isDigit(name[i - 1]); --i) {
        auto it = ranges.find(name.take_front(i - 1));
        if (it == ranges.end())
          continue;
        StringRef digits = name.drop_front(i - 1);
        uint64_t n;
        if ((digits.size() > 1 && digits[0] == '0') ||
            digits.getAsInteger(10, n) ||
            n >= static_cast<uint64_t>(it->second.count))
          continue;
        return &it->second;
      }
      return nullptr;
    }
  };
  std::vector<Scope> scopes;
  /// The block of each label statement and the target block of each `bra`
  /// instruction (labels are scoped by `{ }` like registers).
  llvm::DenseMap<const void *, Block *> blockOf;
  /// Every label block, owned here until it is inserted into the body.
  SmallVector<Block *> labelBlocks;
  /// Function-scope variables: PTX name to module symbol name.
  llvm::StringMap<StringRef> localSymbols;
  /// Returns the module symbol that `name` refers to in the current function.
  StringRef symbolName(StringRef name) const {
    auto it = localSymbols.find(name);
    return it == localSymbols.end() ? name : it->second;
  }
  llvm::DenseMap<Block *, unsigned> expectedPreds;
  llvm::SmallVector<SSABuilder::Var> retVars;
  llvm::DenseMap<unsigned, SmallVector<SSABuilder::Var>> vectorRets;
  std::optional<SSABuilder::Var> carryVar;
  /// While a guarded side-effect-free instruction is emitted: its guard.
  /// Writes then keep the old value where the guard is false (a select).
  Value guard;
  /// Writes `v` to variable `id`, honouring the guard.
  void assign(SSABuilder::Var id, Value v) {
    if (guard)
      v = arith::SelectOp::create(b, curLoc, guard, v,
                                  ssa->readVariable(id, cur));
    ssa->writeVariable(id, cur, v);
  }
  llvm::DenseMap<Attribute, Value> constants;
  Operation *lastConstant = nullptr;
  StringRef pendingPragma;
};

} // namespace

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

std::optional<PtxType> Importer::ptxType(StringRef n) {
  PtxType t;
  auto sc = symbolizeScalarType(n);
  if (!sc)
    return std::nullopt;
  t.scalar = *sc;
  char k = n[0];
  t.isSigned = k == 's';
  t.isFloat = k == 'f' || n.starts_with("bf") || n == "tf32" ||
              n.starts_with("e4") || n.starts_with("e5");
  t.type = getStorageType(ctx, *sc);
  return t;
}

/// Returns the `which`-th type modifier of `inst` (0 = first).
std::optional<PtxType> Importer::instrType(const ptx::Instruction &inst,
                                           int which) {
  int seen = 0;
  for (StringRef m : inst.mods) {
    if (auto t = ptxType(m)) {
      if (seen++ == which)
        return t;
    }
  }
  return std::nullopt;
}

static uint64_t widthOf(Type t) {
  if (t.isIntOrFloat())
    return t.getIntOrFloatBitWidth();
  if (auto v = dyn_cast<VectorType>(t))
    return static_cast<uint64_t>(v.getNumElements()) *
           v.getElementType().getIntOrFloatBitWidth();
  return 0;
}

LogicalResult Importer::checkOperandSize(const Operand &op, const VarInfo &var,
                                         Type t) {
  if (relaxedSizes || widthOf(var.type) == widthOf(t))
    return success();
  return error(op.loc,
               "register '" + op.name + "' has " + Twine(widthOf(var.type)) +
                   " bits; the instruction operates on " + Twine(widthOf(t)));
}

std::optional<StateSpace> Importer::spaceOf(const ptx::Instruction &inst) {
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
  auto op = arith::ConstantOp::create(b, curLoc, value);
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
    return arith::BitcastOp::create(b, curLoc, t, v);
  return BitcastOp::create(b, curLoc, t, v);
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
    r = arith::TruncIOp::create(b, curLoc, intType(tw), i);
  else if (signExtend)
    r = arith::ExtSIOp::create(b, curLoc, intType(tw), i);
  else
    r = arith::ExtUIOp::create(b, curLoc, intType(tw), i);
  return bitcast(r, t);
}

VarInfo *Importer::lookup(StringRef name) {
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
    auto f = it->vars.find(name);
    if (f != it->vars.end())
      return &f->second;
    if (const RegRange *r = it->rangeOf(name)) {
      // First use of a register of a `%r<N>` range.
      VarInfo info{ssa->addVariable(r->type), r->type, false};
      return &it->vars.try_emplace(name, info).first->second;
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
  Value v = SRegOp::create(b, curLoc, intType(w), *reg,
                           dim ? DimAttr::get(ctx, *dim) : DimAttr());
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
      return arith::AddIOp::create(b, curLoc, v, constInt(t, op.imm));
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
      v = arith::XOrIOp::create(b, curLoc, v, constInt(b.getI1Type(), 1));
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
    if (StringRef sym = symbolName(op.name);
        globals.count(sym) || funcs.count(sym)) {
      Type at = widthOf(t) == 32 ? intType(32) : intType(64);
      Value a =
          AddressOfOp::create(b, curLoc, at, FlatSymbolRefAttr::get(ctx, sym));
      if (op.imm)
        a = arith::AddIOp::create(b, curLoc, a, constInt(at, op.imm));
      return coerce(a, t);
    }
    if (VarInfo *v = var; v && v->isParam) {
      if (v->argIndex < 0 || !func.getKernel()) {
        (void)error(op.loc, "taking the address of parameter '" + op.name +
                                "' is only supported for kernel parameters");
        return {};
      }
      Type at = widthOf(t) == 32 ? intType(32) : intType(64);
      Value a = ParamAddressOp::create(b, curLoc, at,
                                       b.getI64IntegerAttr(v->argIndex));
      if (op.imm)
        a = arith::AddIOp::create(b, curLoc, a, constInt(at, op.imm));
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
    Value packed = PackOp::create(b, curLoc, intType(w), parts);
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
    SmallVector<Type> types(n, intType(w / n));
    auto parts = UnpackOp::create(b, curLoc, types, bitcast(v, intType(w)));
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
  } else if (StringRef sym = symbolName(op.name);
             globals.count(sym) || funcs.count(sym)) {
    type = addrType();
    base =
        AddressOfOp::create(b, curLoc, type, FlatSymbolRefAttr::get(ctx, sym));
    auto g = globals.find(sym);
    if (access == StateSpace::generic && g != globals.end() &&
        g->second.getSpace() != StateSpace::global &&
        g->second.getSpace() != StateSpace::generic)
      base = CvtaOp::create(b, curLoc, type, CvtaDir::to_generic,
                            g->second.getSpace(), base);
  } else {
    (void)error(op.loc, "use of undeclared identifier '" + op.name + "'");
    return {};
  }
  if (op.imm)
    base = arith::AddIOp::create(b, curLoc, base, constInt(type, op.imm));
  return base;
}

//===----------------------------------------------------------------------===//
// Module level
//===----------------------------------------------------------------------===//

LogicalResult Importer::importGlobal(const ptx::VarDecl &d, StringRef name) {
  auto space = llvm::StringSwitch<std::optional<StateSpace>>(d.space)
                   .Case("global", StateSpace::global)
                   .Case("shared", StateSpace::shared)
                   .Case("const", StateSpace::constant)
                   .Case("local", StateSpace::local)
                   .Default(std::nullopt);
  if (!space)
    return error(d.loc,
                 "unsupported state space '." + d.space + "' for a variable");
  auto t = ptxType(d.type);
  if (!t || d.type == "pred")
    return error(d.loc, "unsupported variable type '." + d.type + "'");
  if (d.rangeCount >= 0)
    return error(d.loc, "register ranges are only valid for .reg");
  if (globals.count(name) || funcs.count(name))
    return error(d.loc, "redefinition of '" + name + "'");
  int64_t count = d.arraySize < 0 ? 1 : d.arraySize;
  count *= d.vecWidth;
  Type elem = t->type;
  if (isa<VectorType>(elem)) // f16x2 storage
    elem = intType(32);
  int64_t align = d.align ? d.align : std::max<int64_t>(widthOf(elem) / 8, 1);
  Attribute init;
  bool hasAddresses = llvm::any_of(
      d.init, [](const Operand &o) { return o.kind == OK::Symbol; });
  if (d.hasInit && hasAddresses) {
    if (!elem.isInteger(64) && !elem.isInteger(32))
      return error(d.loc, "address initializers need a .u32/.u64 variable");
    if (d.init.size() > static_cast<size_t>(std::max<int64_t>(count, 1)))
      return error(d.loc, "too many initializers for '" + name + "'");
    SmallVector<Attribute> values;
    for (const Operand &o : d.init)
      values.push_back(
          o.kind == OK::Symbol
              ? Attribute(FlatSymbolRefAttr::get(ctx, o.name))
              : Attribute(b.getIntegerAttr(
                    elem,
                    o.kind == OK::Imm ? o.imm : static_cast<int64_t>(o.bits))));
    init = b.getArrayAttr(values);
  } else if (d.hasInit) {
    if (d.init.size() > static_cast<size_t>(std::max<int64_t>(count, 1)))
      return error(d.loc, "too many initializers for '" + name + "'");
    auto vt =
        RankedTensorType::get({static_cast<int64_t>(d.init.size())}, elem);
    SmallVector<Attribute> values;
    for (const Operand &o : d.init) {
      if (auto ft = dyn_cast<FloatType>(elem)) {
        double v = o.kind == OK::Imm ? static_cast<double>(o.imm)
                   : o.isDouble      ? llvm::bit_cast<double>(o.bits)
                                : static_cast<double>(llvm::bit_cast<float>(
                                      static_cast<uint32_t>(o.bits)));
        if (o.kind == OK::FImm && !o.isDouble && ft.isF32()) {
          values.push_back(
              b.getFloatAttr(ft, llvm::APFloat(llvm::APFloat::IEEEsingle(),
                                               llvm::APInt(32, o.bits))));
          continue;
        }
        if (o.kind == OK::FImm && o.isDouble && ft.isF64()) {
          values.push_back(
              b.getFloatAttr(ft, llvm::APFloat(llvm::APFloat::IEEEdouble(),
                                               llvm::APInt(64, o.bits))));
          continue;
        }
        values.push_back(b.getFloatAttr(ft, v));
      } else {
        int64_t v = o.kind == OK::Imm ? o.imm : static_cast<int64_t>(o.bits);
        values.push_back(b.getIntegerAttr(elem, v));
      }
    }
    init = DenseElementsAttr::get(vt, values);
  }
  // Function-scope variables go right before their function.
  if (func && func->getParentOp() == module.getOperation() && ssa)
    b.setInsertionPoint(func);
  else
    b.setInsertionPointToEnd(module.getBody());
  LinkageAttr linkage;
  if (!d.linkage.empty())
    if (auto l = symbolizeLinkage(d.linkage))
      linkage = LinkageAttr::get(ctx, *l);
  auto g = GlobalOp::create(b, loc(d.loc), b.getStringAttr(name),
                            StateSpaceAttr::get(ctx, *space),
                            TypeAttr::get(elem), b.getI64IntegerAttr(count),
                            b.getI64IntegerAttr(align), linkage, init);
  globals[name] = g;
  return success();
}

std::optional<Type> Importer::paramType(const ptx::VarDecl &d) {
  auto t = ptxType(d.type);
  if (!t)
    return std::nullopt;
  if (d.arraySize >= 0 || d.vecWidth > 1) {
    int64_t n =
        std::max<int64_t>(d.arraySize, 1) * d.vecWidth * (widthOf(t->type) / 8);
    // PTX limits parameter space to a few KiB; 1 MiB bounds hostile input.
    if (n <= 0 || n > kMaxParamBytes)
      return std::nullopt;
    return VectorType::get({n}, intType(8));
  }
  return t->type;
}

DictionaryAttr Importer::paramAttrs(const ptx::VarDecl &d) {
  SmallVector<NamedAttribute> attrs;
  attrs.push_back(b.getNamedAttr("wooly.name", b.getStringAttr(d.name)));
  attrs.push_back(b.getNamedAttr("wooly.type", b.getStringAttr(d.type)));
  if (d.align)
    attrs.push_back(
        b.getNamedAttr("wooly.align", b.getI64IntegerAttr(d.align)));
  if (!d.ptrSpace.empty())
    attrs.push_back(
        b.getNamedAttr("wooly.ptr_space", b.getStringAttr(d.ptrSpace)));
  return b.getDictionaryAttr(attrs);
}

LogicalResult Importer::declareFunction(ptx::Function &f) {
  SmallVector<Type> args, results;
  SmallVector<Attribute> argAttrs, resAttrs;
  for (auto &p : f.params) {
    auto t = paramType(p);
    if (!t)
      return error(p.loc, "unsupported parameter type '." + p.type + "'");
    args.push_back(*t);
    argAttrs.push_back(paramAttrs(p));
  }
  for (auto &p : f.results) {
    auto t = paramType(p);
    if (!t)
      return error(p.loc, "unsupported return type '." + p.type + "'");
    results.push_back(*t);
    resAttrs.push_back(paramAttrs(p));
  }
  auto type = b.getFunctionType(args, results);
  auto it = funcs.find(f.name);
  if (it != funcs.end()) {
    // A prototype followed by its definition: the signatures must agree.
    FuncOp existing = it->second;
    if (existing.getFunctionType() != type ||
        existing.getKernel() != f.isKernel)
      return error(f.loc,
                   "'" + f.name + "' redeclared with a different signature");
    if (f.hasBody && !definedFuncs.insert(f.name).second)
      return error(f.loc, "redefinition of '" + f.name + "'");
    if (f.hasBody) {
      // The definition after a prototype: it is no longer a declaration.
      existing.setPublic();
      if (!f.linkage.empty())
        existing.setLinkage(f.linkage);
    }
    return success();
  }
  if (globals.count(f.name))
    return error(f.loc, "redefinition of '" + f.name + "'");
  b.setInsertionPointToEnd(module.getBody());
  auto fn = FuncOp::create(b, loc(f.loc), f.name, type);
  fn.setArgAttrsAttr(b.getArrayAttr(argAttrs));
  if (!resAttrs.empty())
    fn.setResAttrsAttr(b.getArrayAttr(resAttrs));
  if (f.isKernel)
    fn.setKernel(true);
  if (!f.linkage.empty())
    fn.setLinkage(f.linkage);
  auto dims = [&](const std::vector<int64_t> &v) {
    SmallVector<int32_t> d(v.begin(), v.end());
    return b.getDenseI32ArrayAttr(d);
  };
  if (!f.maxntid.empty())
    fn.setMaxntidAttr(dims(f.maxntid));
  if (!f.reqntid.empty())
    fn.setReqntidAttr(dims(f.reqntid));
  if (f.minnctapersm)
    fn.setMinnctapersmAttr(b.getI32IntegerAttr(*f.minnctapersm));
  if (f.maxnreg)
    fn.setMaxnregAttr(b.getI32IntegerAttr(*f.maxnreg));
  if (f.noreturn)
    fn.setNoreturn(true);
  if (!f.hasBody)
    fn.setPrivate();
  funcs[f.name] = fn;
  if (f.hasBody)
    definedFuncs.insert(f.name);
  return success();
}

OwningOpRef<ModuleOp> Importer::run() {
  ctx->loadDialect<WoolyDialect, arith::ArithDialect, math::MathDialect,
                   cf::ControlFlowDialect>();
  OwningOpRef<ModuleOp> owned = ModuleOp::create(loc(nullptr));
  module = *owned;
  const llvm::MemoryBuffer *buf = sm.getMemoryBuffer(sm.getMainFileID());
  bool parsed = ptx::parseModule(
      buf->getBuffer(), ast,
      [&](const char *p, const Twine &msg) { (void)error(p, msg); }, this);
  if (!parsed)
    return nullptr;
  module->setAttr("wooly.ptx_version", b.getStringAttr(ast.version));
  SmallVector<Attribute> targets;
  for (auto &t : ast.targets)
    targets.push_back(b.getStringAttr(t));
  module->setAttr("wooly.target", b.getArrayAttr(targets));
  module->setAttr("wooly.address_size", b.getI32IntegerAttr(ast.addressSize));
  if (failed(verify(module, /*verifyRecursively=*/false)))
    return nullptr;
  return owned;
}

//===----------------------------------------------------------------------===//
// Function bodies and control flow
//===----------------------------------------------------------------------===//

static bool isBranch(const ptx::Instruction &i) { return i.opcode == "bra"; }

/// Instructions that only compute register values (no memory, no warp or
/// CTA interaction, no traps): a guarded one can run unconditionally.
static bool isSideEffectFree(const ptx::Instruction &i) {
  return llvm::StringSwitch<bool>(i.opcode)
      .Cases({"mov", "add", "sub", "mul", "mad", "fma", "div", "rem", "min",
              "max", "abs", "neg", "not", "cnot", "and", "or", "xor"},
             true)
      .Cases({"shl", "shr", "selp", "setp", "set", "cvt", "cvta", "isspacep",
              "popc", "clz", "brev", "bfind", "bfe", "bfi", "prmt", "lop3"},
             true)
      .Cases({"shf", "bmsk", "mul24", "mad24", "sad", "dp4a", "dp2a",
              "copysign", "sqrt", "rcp", "rsqrt", "sin", "cos", "lg2", "ex2",
              "tanh"},
             true)
      .Cases({"addc", "subc", "madc", "vshl", "vshr"}, true)
      .Default(false);
}
static bool isTerminator(const ptx::Instruction &i) {
  return i.opcode == "bra" || i.opcode == "ret" || i.opcode == "exit" ||
         i.opcode == "trap";
}

void Importer::afterEdgeTo(Block *target) {
  // Sealed once every edge counted in the pre-pass exists.
  if (llvm::range_size(target->getUses()) >= expectedPreds.lookup(target))
    ssa->sealBlock(target);
}

void Importer::branchTo(Block *target) {
  cf::BranchOp::create(b, curLoc, target, ValueRange());
  afterEdgeTo(target);
}

void Importer::startBlock(Block *block) {
  func.getBody().push_back(block);
  cur = block;
  b.setInsertionPointToEnd(block);
  afterEdgeTo(block);
}

LogicalResult Importer::importBody(ptx::Function &f) {
  func = funcs[f.name];
  auto makeUndef = [&](Type t) { return undefValue(t); };
  SSABuilder builder(makeUndef);
  ssa = &builder;
  scopes.clear();
  scopes.emplace_back();
  blockOf.clear();
  labelBlocks.clear();
  localSymbols.clear();
  expectedPreds.clear();
  retVars.clear();
  carryVar.reset();
  constants.clear();
  lastConstant = nullptr;
  pendingPragma = {};

  entry = func.addEntryBlock();
  cur = entry;
  b.setInsertionPointToEnd(entry);
  ssa->sealBlock(entry);
  curLoc = loc(f.loc);
  // `.reg .v2 .u32 x` parameters and results: one variable per component.
  auto declareVectorReg =
      [&](const ptx::VarDecl &p,
          SmallVectorImpl<SSABuilder::Var> &ids) -> LogicalResult {
    if (p.vecWidth > 4)
      return error(p.loc, "vector registers have at most 4 elements");
    auto pt = ptxType(p.type);
    VarInfo whole{0, pt->type, false, static_cast<unsigned>(p.vecWidth)};
    if (!scopes.back().vars.try_emplace(p.name, whole).second)
      return error(p.loc, "redeclaration of parameter '" + p.name + "'");
    for (int64_t k = 0; k < p.vecWidth; ++k) {
      auto id = ssa->addVariable(pt->type);
      scopes.back().vars.try_emplace(vectorComponent(p.name, k),
                                     VarInfo{id, pt->type, false});
      ids.push_back(id);
    }
    return success();
  };
  vectorRets.clear();
  for (auto [i, p] : llvm::enumerate(f.params)) {
    Type t = entry->getArgument(i).getType();
    if (p.space == "reg" && p.vecWidth > 1) {
      SmallVector<SSABuilder::Var> ids;
      if (failed(declareVectorReg(p, ids)))
        return failure();
      Type et = ssa->getType(ids[0]);
      SmallVector<Type> parts(ids.size(), intType(widthOf(et)));
      auto split =
          UnpackOp::create(b, curLoc, parts,
                           bitcast(entry->getArgument(i), intType(widthOf(t))));
      for (auto [k, id] : llvm::enumerate(ids))
        ssa->writeVariable(id, entry, coerce(split.getResult(k), et));
      continue;
    }
    auto id = ssa->addVariable(t);
    VarInfo info{id, t, p.space == "param"};
    info.argIndex = static_cast<int>(i);
    if (!scopes.back().vars.try_emplace(p.name, info).second)
      return error(p.loc, "redeclaration of parameter '" + p.name + "'");
    ssa->writeVariable(id, entry, entry->getArgument(i));
  }
  for (auto [i, p] : llvm::enumerate(f.results)) {
    Type t = func.getResultTypes()[i];
    if (p.space == "reg" && p.vecWidth > 1) {
      SmallVector<SSABuilder::Var> ids;
      if (failed(declareVectorReg(p, ids)))
        return failure();
      vectorRets[i] = ids;
      retVars.push_back(0);
      continue;
    }
    auto id = ssa->addVariable(t);
    if (!scopes.back()
             .vars.try_emplace(p.name, VarInfo{id, t, p.space == "param"})
             .second)
      return error(p.loc, "redeclaration of parameter '" + p.name + "'");
    retVars.push_back(id);
  }

  LogicalResult result = resolveLabels(f);
  for (auto &s : f.body) {
    if (failed(result))
      break;
    result = emitStatement(s);
  }
  if (succeeded(result) && scopes.size() != 1)
    result = error(f.loc, "unbalanced '{' in body of '" + f.name + "'");
  if (succeeded(result) &&
      (cur->empty() || !cur->back().hasTrait<OpTrait::IsTerminator>())) {
    // Falling off the end of a body returns.
    ptx::Instruction ret;
    ret.opcode = "ret";
    ret.loc = f.loc;
    result = emitRet(ret);
  }
  // Blocks of labels never reached by emission (after a failure) are owned
  // here; drop their uses first.
  for (Block *blk : labelBlocks) {
    if (!blk->getParent()) {
      blk->dropAllUses();
      delete blk;
    }
  }
  if (succeeded(result))
    ssa->finalize(func.getBody());
  ssa = nullptr;
  return result;
}

/// Gives each label its block and each `bra` its target, and counts the edges
/// into every label block. Labels are scoped by `{ }`: a branch goes to the
/// label of that name in the innermost enclosing scope that has one, so the
/// same inline-assembly block (with its labels) may appear several times.
LogicalResult Importer::resolveLabels(ptx::Function &f) {
  llvm::DenseMap<std::pair<unsigned, StringRef>, Block *> byScope;
  SmallVector<unsigned> parentOf{0}, open{0};
  SmallVector<std::pair<ptx::Instruction *, unsigned>> branches;
  bool fallsThrough = true;
  for (auto &s : f.body) {
    switch (s.kind) {
    case ptx::Statement::Kind::ScopeBegin:
      parentOf.push_back(open.back());
      open.push_back(parentOf.size() - 1);
      break;
    case ptx::Statement::Kind::ScopeEnd:
      if (open.size() > 1)
        open.pop_back();
      break;
    case ptx::Statement::Kind::Label: {
      Block *&blk = byScope[{open.back(), s.label}];
      if (blk)
        return error(s.loc, "redefinition of label '" + s.label + "'");
      blk = new Block();
      labelBlocks.push_back(blk);
      blockOf[&s] = blk;
      if (fallsThrough)
        ++expectedPreds[blk];
      fallsThrough = true;
      break;
    }
    case ptx::Statement::Kind::Instr:
      fallsThrough = !(isTerminator(s.instr) && s.instr.guard.empty());
      if (isBranch(s.instr))
        branches.emplace_back(&s.instr, open.back());
      break;
    default:
      break;
    }
  }
  for (auto [inst, scope] : branches) {
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
  }
  return success();
}

LogicalResult Importer::emitStatement(ptx::Statement &s) {
  using K = ptx::Statement::Kind;
  switch (s.kind) {
  case K::ScopeBegin:
    scopes.emplace_back();
    return success();
  case K::ScopeEnd:
    if (scopes.size() <= 1)
      return error(s.loc, "unbalanced '}'");
    scopes.pop_back();
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
    return success();
  }
  case K::Decl:
    for (auto &d : s.decls) {
      if (d.space == "reg" || d.space == "param") {
        // Components are named .x to .w.
        if (d.vecWidth > 4)
          return error(
              d.loc, "vector " +
                         Twine(d.space == "reg" ? "registers" : "parameters") +
                         " have at most 4 elements");
        auto t = d.space == "param" ? paramType(d) : std::optional<Type>();
        if (d.space == "reg") {
          auto pt = ptxType(d.type);
          if (!pt)
            return error(d.loc, "unsupported register type '." + d.type + "'");
          if (d.arraySize >= 0)
            return error(d.loc, "array registers are not supported yet");
          t = pt->type;
        }
        if (!t)
          return error(d.loc, "unsupported parameter type '." + d.type + "'");
        auto declare = [&](StringRef name) -> LogicalResult {
          auto id = ssa->addVariable(*t);
          if (scopes.back().rangeOf(name) ||
              !scopes.back()
                   .vars.try_emplace(name, VarInfo{id, *t, d.space == "param"})
                   .second)
            return error(d.loc, "redeclaration of '" + name + "'");
          return success();
        };
        auto declareOne = [&](StringRef name) -> LogicalResult {
          if (d.vecWidth <= 1)
            return declare(name);
          VarInfo whole{0, *t, false, static_cast<unsigned>(d.vecWidth)};
          if (!scopes.back().vars.try_emplace(name, whole).second)
            return error(d.loc, "redeclaration of '" + name + "'");
          for (int64_t i = 0; i < d.vecWidth; ++i)
            if (failed(declare(vectorComponent(name, i))))
              return failure();
          return success();
        };
        if (d.rangeCount >= 0 && d.vecWidth <= 1 && d.space == "reg") {
          if (!scopes.back()
                   .ranges.try_emplace(d.name, RegRange{d.rangeCount, *t})
                   .second)
            return error(d.loc, "redeclaration of '" + d.name + "<...>'");
        } else if (d.rangeCount >= 0) {
          // Vector and .param ranges are expanded eagerly: keep them small.
          if (d.rangeCount > kMaxEagerRange)
            return error(d.loc, "ranges of vector registers or parameters "
                                "are limited to " +
                                    Twine(kMaxEagerRange) + " names");
          for (int64_t i = 0; i < d.rangeCount; ++i) {
            // Names live as long as the module's buffer: intern them.
            StringRef n = names.save(d.name + Twine(i));
            if (failed(declareOne(n)))
              return failure();
          }
        } else if (failed(declareOne(d.name))) {
          return failure();
        }
        continue;
      }
      // Function-scope .local/.shared/.global/.const variables are module
      // symbols in Wooly IR, tagged with the function that declares them
      // (a `.local` one is per activation: lowering must give recursive
      // functions a frame of their own).
      // Their symbol is `function.name`: PTX names cannot contain '.', so it
      // never collides with a module-scope name, declared before or after.
      StringRef symName = names.save(func.getSymName() + "." + d.name);
      if (!localSymbols.try_emplace(d.name, symName).second)
        return error(d.loc, "redefinition of '" + d.name + "'");
      if (failed(importGlobal(d, symName)))
        return failure();
      globals[symName]->setAttr("wooly.function_scope",
                                FlatSymbolRefAttr::get(func.getSymNameAttr()));
      b.setInsertionPointToEnd(cur);
    }
    return success();
  case K::Instr:
    return emitInstruction(s.instr);
  }
  return success();
}

LogicalResult Importer::emitInstruction(ptx::Instruction &inst) {
  curLoc = loc(inst.loc);
  if (!cur->empty() && cur->back().hasTrait<OpTrait::IsTerminator>()) {
    // Code after an unconditional terminator: an unreachable block.
    startBlock(new Block());
  }
  if (inst.guard.empty())
    return emitUnguarded(inst);

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

  if (isBranch(inst)) {
    Block *target = blockOf.lookup(&inst);
    Block *next = new Block();
    expectedPreds[next] = 1;
    auto br = cf::CondBranchOp::create(b, curLoc, pred, target, ValueRange(),
                                       next, ValueRange());
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
  if (isSideEffectFree(inst)) {
    guard = pred;
    LogicalResult r = emitUnguarded(inst);
    guard = Value();
    return r;
  }

  // Any other guarded instruction: branch around it.
  Block *then = new Block();
  Block *join = new Block();
  expectedPreds[then] = 1;
  expectedPreds[join] = 2;
  cf::CondBranchOp::create(b, curLoc, pred, then, ValueRange(), join,
                           ValueRange());
  startBlock(then);
  if (failed(emitUnguarded(inst))) {
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

LogicalResult Importer::emitRet(ptx::Instruction &inst) {
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
    Value packed = PackOp::create(b, curLoc, intType(widthOf(rt)), parts);
    values.push_back(bitcast(packed, rt));
  }
  RetOp::create(b, curLoc, values);
  return success();
}

LogicalResult Importer::emitUnguarded(ptx::Instruction &inst) {
  StringRef op = inst.opcode;
  if (op == "bra") {
    Block *target = blockOf.lookup(&inst);
    auto br = cf::BranchOp::create(b, curLoc, target, ValueRange());
    if (!pendingPragma.empty()) {
      br->setAttr("wooly.pragma", b.getStringAttr(pendingPragma));
      pendingPragma = {};
    }
    afterEdgeTo(target);
    return success();
  }
  if ((op == "ret" || op == "exit" || op == "trap" || op == "brkpt") &&
      !inst.operands.empty())
    return error(inst.loc, "'" + op + "' takes no operands");
  if (op == "ret")
    return emitRet(inst);
  if (op == "exit") {
    ExitOp::create(b, curLoc);
    return success();
  }
  if (op == "trap") {
    TrapOp::create(b, curLoc);
    return success();
  }
  if (op == "brkpt") {
    BrkptOp::create(b, curLoc);
    return success();
  }
  if (op == "mov")
    return emitMov(inst);
  if (op == "ld" || op == "ldu" || op == "st" || op == "cvt") {
    // These extend or truncate registers of another size.
    relaxedSizes = true;
    llvm::scope_exit restore([&] { relaxedSizes = false; });
    return op == "cvt" ? emitCvt(inst) : emitLdSt(inst, op != "st");
  }
  if (op == "add" || op == "sub" || op == "and" || op == "or" || op == "xor" ||
      op == "min" || op == "max" || op == "div" || op == "rem" || op == "shl" ||
      op == "shr" || op == "not" || op == "cnot" || op == "neg" ||
      op == "abs" || op == "selp" || op == "copysign")
    return !inst.has("cc")              ? emitIntOrFloatArith(inst)
           : op == "add" || op == "sub" ? emitCarry(inst)
                                        : unsupported(inst);
  if (op == "addc" || op == "subc" || op == "madc")
    return emitCarry(inst);
  if (op == "mul" || op == "mad" || op == "fma")
    return !inst.has("cc") ? emitMulMad(inst)
           : op == "mad"   ? emitCarry(inst)
                           : unsupported(inst);
  if (op == "sqrt" || op == "rcp" || op == "rsqrt" || op == "sin" ||
      op == "cos" || op == "lg2" || op == "ex2" || op == "tanh")
    return emitUnaryFloat(inst);
  if (op == "setp")
    return emitSetp(inst, false);
  if (op == "set")
    return emitSetp(inst, true);
  if (op == "cvt" || op == "cvta" || op == "isspacep")
    return emitCvt(inst);
  if (op == "popc" || op == "clz" || op == "brev" || op == "bfind" ||
      op == "bfe" || op == "bfi" || op == "prmt" || op == "lop3" ||
      op == "shf" || op == "bmsk" || op == "mul24" || op == "mad24" ||
      op == "sad" || op == "dp4a" || op == "dp2a")
    return emitBits(inst);
  if (op == "vshl" || op == "vshr")
    return emitVideoShift(inst);
  if (op == "atom")
    return emitAtom(inst, false);
  if (op == "red")
    return emitAtom(inst, true);
  if (op == "shfl" || op == "vote" || op == "match" || op == "redux" ||
      op == "activemask")
    return emitWarp(inst);
  if (op == "bar" || op == "barrier" || op == "membar" || op == "fence")
    return emitBarrier(inst);
  if (op == "call")
    return emitCall(inst);
  if (op == "ldmatrix" || op == "mma" || op == "wmma" || op == "cp")
    return emitMatrix(inst);
  return emitMisc(inst);
}

//===----------------------------------------------------------------------===//
// Instruction families
//===----------------------------------------------------------------------===//

LogicalResult Importer::emitMov(ptx::Instruction &inst) {
  auto t = instrType(inst);
  if (!t || failed(expectOperands(inst, 2)))
    return t ? failure() : error(inst.loc, "'mov' needs a type");
  int vec = 1;
  for (StringRef m : inst.mods)
    if (m == "v2" || m == "v4" || m == "v8")
      vec = m[1] - '0';
  if (vec == 1) {
    Value v = read(inst.operands[1], t->type);
    if (!v)
      return failure();
    return write(inst.operands[0], v);
  }
  // mov.vN.T: element-wise moves between vectors of N registers (vector
  // registers or `{a, b, ...}`). All sources are read before any write, so
  // permutations such as `{b, a}, {a, b}` work.
  SmallVector<Operand, 2> sides;
  for (const Operand &o : inst.operands) {
    auto expanded = expandVector(o);
    const Operand &v = expanded ? *expanded : o;
    if (v.kind != OK::Vector || v.elems.size() != static_cast<size_t>(vec))
      return error(o.loc, "'mov.v" + Twine(vec) + "' needs vectors of " +
                              Twine(vec) + " registers");
    sides.push_back(v);
  }
  SmallVector<Value, 8> values;
  for (const Operand &e : sides[1].elems) {
    Value v = read(e, t->type);
    if (!v)
      return failure();
    values.push_back(v);
  }
  for (auto [e, v] : llvm::zip(sides[0].elems, values))
    if (failed(write(e, v)))
      return failure();
  return success();
}

LogicalResult Importer::emitParamAccess(ptx::Instruction &inst, bool isLoad,
                                        VarInfo *param, int64_t offset,
                                        PtxType ty, int vec) {
  const Operand &data = inst.operands[isLoad ? 0 : 1];
  uint64_t elemBytes = std::max<uint64_t>(widthOf(ty.type) / 8, 1);
  uint64_t totalBytes = widthOf(param->type) / 8;
  uint64_t elemBits = widthOf(ty.type);
  uint64_t total = widthOf(param->type);
  // Checked without overflow: offsets come straight from the input.
  if (offset < 0 || static_cast<uint64_t>(offset) > totalBytes ||
      (totalBytes - offset) / elemBytes < static_cast<uint64_t>(vec))
    return error(inst.loc,
                 "access outside parameter of " + Twine(totalBytes) + " bytes");
  auto elemOperand = [&](int i) -> const Operand & {
    return vec > 1 ? data.elems[i] : data;
  };
  if (vec > 1 && (data.kind != OK::Vector ||
                  data.elems.size() != static_cast<size_t>(vec)))
    return error(data.loc, "expected a vector of " + Twine(vec) + " values");
  for (int i = 0; i < vec; ++i) {
    int64_t off = offset + i * (elemBits / 8);
    bool direct = off == 0 && elemBits == total;
    // A store of the whole parameter does not read its old value.
    Value whole =
        isLoad || !direct ? ssa->readVariable(param->id, cur) : Value();
    if (isLoad) {
      Value v =
          direct
              ? bitcast(whole, ty.type)
              : Value(ExtractBytesOp::create(b, curLoc, ty.type, whole, off));
      if (failed(write(elemOperand(i), v, ty.isSigned)))
        return failure();
    } else {
      Value v = read(elemOperand(i), ty.type);
      if (!v)
        return failure();
      Value updated =
          direct ? bitcast(v, param->type)
                 : Value(InsertBytesOp::create(b, curLoc, v, whole, off));
      ssa->writeVariable(param->id, cur, updated);
    }
  }
  return success();
}

LogicalResult Importer::emitLdSt(ptx::Instruction &inst, bool isLoad) {
  auto t = instrType(inst);
  if (!t)
    return error(inst.loc, "'" + inst.opcode + "' needs a type");
  // `.L2::cache_hint` adds a cache-policy operand: a performance hint that
  // is kept as the `wooly.hints` attribute, not as a value.
  size_t want = inst.has("L2::cache_hint") ? 3 : 2;
  if (inst.operands.size() != want)
    return expectOperands(inst, want);
  int vec = 1;
  for (StringRef m : inst.mods)
    if (m == "v2" || m == "v4" || m == "v8")
      vec = m[1] - '0';
  StateSpace space = spaceOf(inst).value_or(StateSpace::generic);
  const Operand &addrOp = inst.operands[isLoad ? 1 : 0];
  if (addrOp.kind != OK::Address)
    return error(addrOp.loc, "expected an address operand '[...]'");
  // Parameters are values in Wooly IR.
  VarInfo *named = addrOp.name.empty() ? nullptr : lookup(addrOp.name);
  if (named && named->isParam)
    return emitParamAccess(inst, isLoad, named, addrOp.imm, *t, vec);
  if (space == StateSpace::param && !isLoad)
    return error(inst.loc, "stores to parameters through addresses are not "
                           "supported yet");
  Type at;
  Value addr = address(addrOp, at, space);
  if (!addr)
    return failure();

  CacheOpAttr cache;
  MemOrderAttr sem;
  MemScopeAttr scope;
  bool isVolatile = false;
  SmallVector<Attribute> hints;
  for (StringRef m : inst.mods) {
    if (auto c = symbolizeCacheOp(m))
      cache = CacheOpAttr::get(ctx, *c);
    else if (m == "volatile")
      isVolatile = true;
    else if (m == "mmio")
      return error(inst.loc, "'.mmio' accesses are not supported yet");
    else if (m == "relaxed" || m == "acquire" || m == "release" || m == "weak")
      sem = MemOrderAttr::get(ctx, *symbolizeMemOrder(m));
    else if (auto s = symbolizeMemScope(m))
      scope = MemScopeAttr::get(ctx, *s);
    else if (m.starts_with("L1::") || m.starts_with("L2::"))
      hints.push_back(b.getStringAttr(m));
  }
  if (inst.opcode == "ldu")
    cache = CacheOpAttr::get(ctx, CacheOp::nc);
  if (sem && sem.getValue() == MemOrder::weak) {
    sem = {};
    scope = {};
  }
  if (scope && !sem)
    return error(inst.loc, "a scope needs '.relaxed', '.acquire' or "
                           "'.release'");

  if (auto v = expandVector(inst.operands[isLoad ? 0 : 1]))
    inst.operands[isLoad ? 0 : 1] = *v;
  const Operand &data = inst.operands[isLoad ? 0 : 1];
  if (vec > 1 && (data.kind != OK::Vector ||
                  data.elems.size() != static_cast<size_t>(vec)))
    return error(data.loc, "expected a vector of " + Twine(vec) + " values");
  Type elemType = t->type;
  Operation *memOp;
  if (isLoad) {
    SmallVector<Type> types(vec, elemType);
    auto ld = LoadOp::create(b, curLoc, types, space, addr, cache, isVolatile,
                             sem, scope);
    memOp = ld;
    for (int i = 0; i < vec; ++i)
      if (failed(write(vec > 1 ? data.elems[i] : data, ld.getResult(i),
                       t->isSigned)))
        return failure();
  } else {
    SmallVector<Value> values;
    for (int i = 0; i < vec; ++i) {
      Value v = read(vec > 1 ? data.elems[i] : data, elemType);
      if (!v)
        return failure();
      values.push_back(v);
    }
    memOp = StoreOp::create(b, curLoc, space, addr, values, cache, isVolatile,
                            sem, scope);
  }
  if (!hints.empty())
    memOp->setAttr("wooly.hints", b.getArrayAttr(hints));
  return success();
}

bool Importer::readSources(const ptx::Instruction &inst, Type t,
                           SmallVectorImpl<Value> &out) {
  for (size_t i = 1; i < inst.operands.size(); ++i) {
    Value v = read(inst.operands[i], t);
    if (!v)
      return false;
    out.push_back(v);
  }
  return true;
}

static std::optional<RoundingMode> roundingOf(const ptx::Instruction &inst) {
  for (StringRef m : inst.mods)
    if (auto r = symbolizeRoundingMode(m))
      return r;
  return std::nullopt;
}

LogicalResult Importer::emitIntOrFloatArith(ptx::Instruction &inst) {
  StringRef op = inst.opcode;
  auto t = instrType(inst);
  if (!t)
    return error(inst.loc, "'" + op + "' needs a type");
  bool unary = op == "not" || op == "cnot" || op == "neg" || op == "abs";
  size_t want = unary ? 2 : op == "selp" ? 4 : 3;
  if (failed(expectOperands(inst, want)))
    return failure();
  Type ty = t->type;
  SmallVector<Value> src;
  if (op == "selp") {
    Value a = read(inst.operands[1], ty), c = read(inst.operands[2], ty),
          p = read(inst.operands[3], b.getI1Type());
    if (!a || !c || !p)
      return failure();
    return write(inst.operands[0], arith::SelectOp::create(b, curLoc, p, a, c));
  }
  if (op == "shl" || op == "shr") {
    if (!ty.isInteger())
      return error(inst.loc, "'" + op + "' needs a .b16, .b32 or .b64 type");
    Value a = read(inst.operands[1], ty);
    const Operand &amt = inst.operands[2];
    if (!a)
      return failure();
    unsigned w = widthOf(ty);
    Value r;
    if (amt.kind == OK::Imm && amt.imm >= 0 && amt.imm < w) {
      Value n = constInt(ty, amt.imm);
      if (op == "shl")
        r = arith::ShLIOp::create(b, curLoc, a, n);
      else if (t->isSigned)
        r = arith::ShRSIOp::create(b, curLoc, a, n);
      else
        r = arith::ShRUIOp::create(b, curLoc, a, n);
    } else {
      // The amount is a u32 in PTX, whatever the operand type.
      Value n = read(amt, intType(32));
      if (!n)
        return failure();
      n = coerce(n, ty);
      if (w < 32) {
        // A 16-bit shift by >= 2^16 must still clamp: saturate first.
        Value n32 = read(amt, intType(32));
        Value big = arith::CmpIOp::create(b, curLoc, arith::CmpIPredicate::uge,
                                          n32, constInt(intType(32), w));
        n = arith::SelectOp::create(b, curLoc, big, constInt(ty, w), n);
      }
      if (op == "shl")
        r = ShlOp::create(b, curLoc, a, n);
      else
        r = ShrOp::create(b, curLoc,
                          t->isSigned ? Signedness::s : Signedness::u, a, n);
    }
    return write(inst.operands[0], r);
  }
  if (!readSources(inst, ty, src))
    return failure();
  Value r;
  bool ftz = inst.has("ftz");
  if (t->isFloat) {
    auto flush = [&](Value v) {
      return ftz ? Value(FlushOp::create(b, curLoc, v)) : v;
    };
    if (op == "add" || op == "sub") {
      auto rnd = roundingOf(inst);
      bool sat = inst.has("sat");
      if (!ftz && !sat && (!rnd || *rnd == RoundingMode::rn)) {
        auto fm =
            rnd ? arith::FastMathFlags::none : arith::FastMathFlags::contract;
        r = op == "add"
                ? Value(arith::AddFOp::create(b, curLoc, src[0], src[1], fm))
                : Value(arith::SubFOp::create(b, curLoc, src[0], src[1], fm));
      } else {
        auto rndAttr =
            rnd ? RoundingModeAttr::get(ctx, *rnd) : RoundingModeAttr();
        r = op == "add" ? Value(FAddOp::create(b, curLoc, src[0], src[1],
                                               rndAttr, ftz, sat))
                        : Value(FSubOp::create(b, curLoc, src[0], src[1],
                                               rndAttr, ftz, sat));
      }
    } else if (op == "min" || op == "max") {
      if (inst.has("relu"))
        return error(inst.loc,
                     "'" + op + ".relu' on floats is not supported yet");
      bool nan = inst.has("NaN");
      bool xs = inst.has("xorsign");
      r = op == "min"
              ? Value(FMinOp::create(b, curLoc, src[0], src[1], nan, ftz, xs))
              : Value(FMaxOp::create(b, curLoc, src[0], src[1], nan, ftz, xs));
    } else if (op == "div") {
      auto rnd = roundingOf(inst);
      bool approx = inst.has("approx"), full = inst.has("full");
      if (!approx && !full && !rnd)
        return error(inst.loc, "'div' on floats needs '.approx', '.full' or "
                               "a rounding mode");
      if (rnd && *rnd == RoundingMode::rn && !ftz)
        r = arith::DivFOp::create(b, curLoc, src[0], src[1]);
      else
        r = FDivOp::create(b, curLoc, src[0], src[1],
                           rnd ? RoundingModeAttr::get(ctx, *rnd)
                               : RoundingModeAttr(),
                           approx, full, ftz);
    } else if (op == "neg") {
      r = arith::NegFOp::create(b, curLoc, flush(src[0]));
    } else if (op == "abs") {
      r = math::AbsFOp::create(b, curLoc, flush(src[0]));
    } else if (op == "copysign") {
      // copysign.f32 d, a, b: b with the sign of a.
      r = math::CopySignOp::create(b, curLoc, src[1], src[0]);
    } else {
      return unsupported(inst);
    }
    return write(inst.operands[0], r);
  }
  if (op == "add" || op == "sub") {
    if (inst.has("sat")) {
      if (!t->isSigned || !ty.isInteger(32))
        return error(inst.loc, "'.sat' integer add/sub is only defined for "
                               ".s32");
      r = saturatingAddS32(src[0], src[1], /*subtract=*/op == "sub");
    } else {
      r = op == "add" ? Value(arith::AddIOp::create(b, curLoc, src[0], src[1]))
                      : Value(arith::SubIOp::create(b, curLoc, src[0], src[1]));
    }
  } else if (op == "and") {
    r = arith::AndIOp::create(b, curLoc, src[0], src[1]);
  } else if (op == "or") {
    r = arith::OrIOp::create(b, curLoc, src[0], src[1]);
  } else if (op == "xor") {
    r = arith::XOrIOp::create(b, curLoc, src[0], src[1]);
  } else if (op == "not") {
    r = arith::XOrIOp::create(b, curLoc, src[0], constInt(ty, -1));
  } else if (op == "cnot") {
    Value z = arith::CmpIOp::create(b, curLoc, arith::CmpIPredicate::eq, src[0],
                                    constInt(ty, 0));
    r = arith::ExtUIOp::create(b, curLoc, ty, z);
  } else if (op == "neg") {
    r = arith::SubIOp::create(b, curLoc, constInt(ty, 0), src[0]);
  } else if (op == "abs") {
    r = math::AbsIOp::create(b, curLoc, src[0]);
  } else if (op == "min" || op == "max") {
    bool isMin = op == "min";
    r = t->isSigned
            ? (isMin ? Value(arith::MinSIOp::create(b, curLoc, src[0], src[1]))
                     : Value(arith::MaxSIOp::create(b, curLoc, src[0], src[1])))
            : (isMin
                   ? Value(arith::MinUIOp::create(b, curLoc, src[0], src[1]))
                   : Value(arith::MaxUIOp::create(b, curLoc, src[0], src[1])));
    // `.relu` clamps negative results to 0 (signed types only).
    if (inst.has("relu")) {
      if (!t->isSigned)
        return error(inst.loc, "'" + op + ".relu' needs a signed type");
      r = arith::MaxSIOp::create(b, curLoc, r, constInt(ty, 0));
    }
  } else if (op == "div") {
    r = DivOp::create(b, curLoc, t->isSigned ? Signedness::s : Signedness::u,
                      src[0], src[1]);
  } else if (op == "rem") {
    r = RemOp::create(b, curLoc, t->isSigned ? Signedness::s : Signedness::u,
                      src[0], src[1]);
  } else {
    return unsupported(inst);
  }
  return write(inst.operands[0], r);
}

LogicalResult Importer::emitMulMad(ptx::Instruction &inst) {
  StringRef op = inst.opcode;
  auto t = instrType(inst);
  if (!t)
    return error(inst.loc, "'" + op + "' needs a type");
  bool isMad = op != "mul";
  if (failed(expectOperands(inst, isMad ? 4 : 3)))
    return failure();
  Type ty = t->type;
  if (t->isFloat) {
    SmallVector<Value> src;
    if (!readSources(inst, ty, src))
      return failure();
    auto rnd = roundingOf(inst);
    bool ftz = inst.has("ftz"), sat = inst.has("sat");
    Value r;
    if (!isMad) {
      if (!ftz && !sat && (!rnd || *rnd == RoundingMode::rn))
        r = arith::MulFOp::create(b, curLoc, src[0], src[1],
                                  rnd ? arith::FastMathFlags::none
                                      : arith::FastMathFlags::contract);
      else
        r = FMulOp::create(b, curLoc, src[0], src[1],
                           rnd ? RoundingModeAttr::get(ctx, *rnd)
                               : RoundingModeAttr(),
                           ftz, sat);
    } else {
      if (inst.has("oob"))
        return error(inst.loc, "'.oob' is not supported yet");
      // mad.f32 without rounding is fma.rn (sm_20+).
      RoundingMode mode = rnd.value_or(RoundingMode::rn);
      bool relu = inst.has("relu");
      // math.fma only for f32/f64: for f16/bf16, LLVM may compute it in
      // f32 and round twice, so wooly.fma (one rounding) is used instead.
      Type elem = getElementTypeOrSelf(src[0].getType());
      if (mode == RoundingMode::rn && !ftz && !sat && !relu &&
          (elem.isF32() || elem.isF64()))
        r = math::FmaOp::create(b, curLoc, src[0], src[1], src[2]);
      else
        r = FmaOp::create(b, curLoc, src[0], src[1], src[2], mode, ftz, sat,
                          relu);
    }
    return write(inst.operands[0], r);
  }
  bool wide = inst.has("wide"), hi = inst.has("hi");
  Value a = read(inst.operands[1], ty), c = read(inst.operands[2], ty);
  if (!a || !c)
    return failure();
  Value r;
  if (wide) {
    if (widthOf(ty) != 16 && widthOf(ty) != 32)
      return error(inst.loc, "'" + op + ".wide' needs a 16- or 32-bit type");
    Type wt = intType(widthOf(ty) * 2);
    a = coerce(a, wt, t->isSigned);
    c = coerce(c, wt, t->isSigned);
    r = arith::MulIOp::create(b, curLoc, a, c);
    ty = wt;
  } else if (hi) {
    if (t->isSigned)
      r = arith::MulSIExtendedOp::create(b, curLoc, a, c).getHigh();
    else
      r = arith::MulUIExtendedOp::create(b, curLoc, a, c).getHigh();
  } else {
    r = arith::MulIOp::create(b, curLoc, a, c);
  }
  if (isMad) {
    Value addend = read(inst.operands[3], ty);
    if (!addend)
      return failure();
    if (inst.has("sat")) {
      if (!hi || !t->isSigned || !ty.isInteger(32))
        return error(inst.loc, "'.sat' is only defined for mad.hi.s32");
      r = saturatingAddS32(r, addend);
    } else {
      r = arith::AddIOp::create(b, curLoc, r, addend);
    }
  }
  return write(inst.operands[0], r);
}

LogicalResult Importer::emitCarry(ptx::Instruction &inst) {
  // add.cc / addc(.cc) / sub.cc / subc(.cc) / mad(c).lo/hi(.cc): the carry
  // flag CC.CF is a function-wide i1 variable.
  StringRef op = inst.opcode;
  auto t = instrType(inst);
  if (!t || t->isFloat)
    return error(inst.loc, "'" + op + "' needs an integer type");
  bool isMad = op == "mad" || op == "madc";
  if (failed(expectOperands(inst, isMad ? 4 : 3)))
    return failure();
  if (!carryVar)
    carryVar = ssa->addVariable(b.getI1Type());
  Type ty = t->type;
  Value a = read(inst.operands[1], ty), c = read(inst.operands[2], ty);
  if (!a || !c)
    return failure();
  bool useCarry = op == "addc" || op == "subc" || op == "madc";
  bool setCarry = inst.has("cc");
  bool isSub = op == "sub" || op == "subc";
  Value lhs = a, rhs = c;
  if (isMad) {
    if (inst.has("hi"))
      lhs = t->isSigned
                ? arith::MulSIExtendedOp::create(b, curLoc, a, c).getHigh()
                : arith::MulUIExtendedOp::create(b, curLoc, a, c).getHigh();
    else
      lhs = arith::MulIOp::create(b, curLoc, a, c);
    rhs = read(inst.operands[3], ty);
    if (!rhs)
      return failure();
  }
  Value cin =
      useCarry ? ssa->readVariable(*carryVar, cur) : constInt(b.getI1Type(), 0);
  Value r, cout;
  if (isSub) {
    // a - b computed as a + ~b + CF (CF = 1 when there is no borrow), and
    // CC.CF receives the carry out of that sum, as NVIDIA hardware does
    // (the ZLUDA suite's subc_cc_s32 checks this against a GPU): a borrow
    // leaves CF = 0, and subc consumes CF the same way.
    Value nb = arith::XOrIOp::create(b, curLoc, rhs, constInt(ty, -1));
    Value carryIn = useCarry ? cin : constInt(b.getI1Type(), 1);
    auto s1 = arith::AddUIExtendedOp::create(b, curLoc, lhs, nb);
    auto s2 = arith::AddUIExtendedOp::create(
        b, curLoc, s1.getSum(),
        arith::ExtUIOp::create(b, curLoc, ty, carryIn));
    r = s2.getSum();
    cout = arith::OrIOp::create(b, curLoc, s1.getOverflow(), s2.getOverflow());
  } else {
    auto s1 = arith::AddUIExtendedOp::create(b, curLoc, lhs, rhs);
    r = s1.getSum();
    cout = s1.getOverflow();
    if (useCarry) {
      auto s2 = arith::AddUIExtendedOp::create(
          b, curLoc, r, arith::ExtUIOp::create(b, curLoc, ty, cin));
      r = s2.getSum();
      cout = arith::OrIOp::create(b, curLoc, cout, s2.getOverflow());
    }
  }
  if (setCarry)
    assign(*carryVar, cout);
  return write(inst.operands[0], r);
}

LogicalResult Importer::emitUnaryFloat(ptx::Instruction &inst) {
  StringRef op = inst.opcode;
  auto t = instrType(inst);
  if (!t || !t->isFloat)
    return error(inst.loc, "'" + op + "' needs a floating-point type");
  if (failed(expectOperands(inst, 2)))
    return failure();
  Value x = read(inst.operands[1], t->type);
  if (!x)
    return failure();
  bool ftz = inst.has("ftz"), approx = inst.has("approx");
  auto rnd = roundingOf(inst);
  Value r;
  if (op == "sqrt" || op == "rcp") {
    if (!approx && !rnd)
      return error(inst.loc, "'" + op + "' needs '.approx' or a rounding mode");
    if (approx && rnd)
      rnd.reset();
    if (rnd && *rnd == RoundingMode::rn && !ftz) {
      if (op == "sqrt") {
        r = math::SqrtOp::create(b, curLoc, x);
      } else {
        if (!isa<FloatType>(t->type))
          return error(inst.loc, "'rcp' needs a scalar float type");
        r = arith::DivFOp::create(b, curLoc, constFloat(t->type, 1.0), x);
      }
    } else {
      auto ra = rnd ? RoundingModeAttr::get(ctx, *rnd) : RoundingModeAttr();
      r = op == "sqrt" ? Value(FSqrtOp::create(b, curLoc, x, ra, approx, ftz))
                       : Value(FRcpOp::create(b, curLoc, x, ra, approx, ftz));
    }
  } else {
    auto fn = *symbolizeApproxFn(op);
    if (!approx && fn != ApproxFn::rsqrt && fn != ApproxFn::ex2 &&
        fn != ApproxFn::tanh)
      return error(inst.loc, "'" + op + "' needs '.approx'");
    r = FApproxOp::create(b, curLoc, fn, x, ftz);
  }
  return write(inst.operands[0], r);
}

LogicalResult Importer::emitSetp(ptx::Instruction &inst, bool isSet) {
  // setp.CmpOp[.BoolOp][.ftz].type p[|q], a, b[, {!}c]
  // set.CmpOp[.BoolOp][.ftz].dtype.stype d, a, b[, {!}c]
  auto st = isSet ? instrType(inst, 1) : instrType(inst);
  auto dt = isSet ? instrType(inst, 0) : std::optional<PtxType>();
  if (!st || (isSet && !dt))
    return error(inst.loc, "'" + inst.opcode + "' needs its type(s)");
  if (inst.mods.empty())
    return error(inst.loc, "'" + inst.opcode + "' needs a comparison");
  StringRef cmp = inst.mods[0];
  std::optional<StringRef> boolOp;
  if (inst.mods.size() > 1 &&
      (inst.mods[1] == "and" || inst.mods[1] == "or" || inst.mods[1] == "xor"))
    boolOp = inst.mods[1];
  size_t n = inst.operands.size();
  if (n != (boolOp ? 4u : 3u))
    return expectOperands(inst, boolOp ? 4 : 3);
  Value a = read(inst.operands[1], st->type),
        c = read(inst.operands[2], st->type);
  if (!a || !c)
    return failure();
  Value cmpResult;
  if (st->isFloat) {
    using P = arith::CmpFPredicate;
    auto pred = llvm::StringSwitch<std::optional<P>>(cmp)
                    .Case("eq", P::OEQ)
                    .Case("ne", P::ONE)
                    .Case("lt", P::OLT)
                    .Case("le", P::OLE)
                    .Case("gt", P::OGT)
                    .Case("ge", P::OGE)
                    .Case("equ", P::UEQ)
                    .Case("neu", P::UNE)
                    .Case("ltu", P::ULT)
                    .Case("leu", P::ULE)
                    .Case("gtu", P::UGT)
                    .Case("geu", P::UGE)
                    .Case("num", P::ORD)
                    .Case("nan", P::UNO)
                    .Default(std::nullopt);
    if (!pred)
      return error(inst.loc, "unknown float comparison '." + cmp + "'");
    if (inst.has("ftz")) {
      a = FlushOp::create(b, curLoc, a);
      c = FlushOp::create(b, curLoc, c);
    }
    cmpResult = arith::CmpFOp::create(b, curLoc, *pred, a, c);
  } else {
    using P = arith::CmpIPredicate;
    bool s = st->isSigned;
    auto pred = llvm::StringSwitch<std::optional<P>>(cmp)
                    .Case("eq", P::eq)
                    .Case("ne", P::ne)
                    .Case("lt", s ? P::slt : P::ult)
                    .Case("le", s ? P::sle : P::ule)
                    .Case("gt", s ? P::sgt : P::ugt)
                    .Case("ge", s ? P::sge : P::uge)
                    .Case("lo", P::ult)
                    .Case("ls", P::ule)
                    .Case("hi", P::ugt)
                    .Case("hs", P::uge)
                    .Default(std::nullopt);
    if (!pred)
      return error(inst.loc, "unknown integer comparison '." + cmp + "'");
    cmpResult = arith::CmpIOp::create(b, curLoc, *pred, a, c);
  }
  // Per-lane results: scalars give one, x2 types give two (low half first).
  SmallVector<Value, 2> lanes;
  if (isa<VectorType>(cmpResult.getType())) {
    auto parts = UnpackOp::create(
        b, curLoc, TypeRange{b.getI1Type(), b.getI1Type()}, cmpResult);
    lanes.append(parts.getResults().begin(), parts.getResults().end());
  } else {
    lanes.push_back(cmpResult);
  }
  Value boolIn;
  if (boolOp) {
    boolIn = read(inst.operands[3], b.getI1Type());
    if (!boolIn)
      return failure();
  }
  auto combine = [&](Value v) -> Value {
    if (!boolOp)
      return v;
    if (*boolOp == "and")
      return arith::AndIOp::create(b, curLoc, v, boolIn);
    if (*boolOp == "or")
      return arith::OrIOp::create(b, curLoc, v, boolIn);
    return arith::XOrIOp::create(b, curLoc, v, boolIn);
  };
  auto i1True = [&] { return constInt(b.getI1Type(), 1); };
  const Operand &dst = inst.operands[0];
  if (!isSet) {
    if (lanes.size() == 2) {
      if (dst.kind != OK::Pair)
        return error(dst.loc, "x2 comparisons write a pair 'p|q'");
      if (failed(write(dst.elems[0], combine(lanes[0]))))
        return failure();
      return write(dst.elems[1], combine(lanes[1]));
    }
    if (dst.kind == OK::Pair) {
      if (failed(write(dst.elems[0], combine(lanes[0]))))
        return failure();
      Value notR = arith::XOrIOp::create(b, curLoc, lanes[0], i1True());
      return write(dst.elems[1], combine(notR));
    }
    return write(dst, combine(lanes[0]));
  }
  // set: true is all ones for integers and 1.0 for f32; x2 per half.
  Type elem = dt->type;
  Type laneType = elem;
  if (auto vt = dyn_cast<VectorType>(elem))
    laneType = vt.getElementType();
  else if (lanes.size() == 2)
    laneType = intType(widthOf(elem) / 2); // u32 result of an x2 compare
  auto materialize = [&](Value p) -> Value {
    if (isa<FloatType>(laneType)) {
      return arith::SelectOp::create(b, curLoc, p, constFloat(laneType, 1.0),
                                     constFloat(laneType, 0.0));
    }
    return arith::SelectOp::create(b, curLoc, p, constInt(laneType, -1),
                                   constInt(laneType, 0));
  };
  if (lanes.size() == 2) {
    Value lo = materialize(combine(lanes[0]));
    Value hi = materialize(combine(lanes[1]));
    Value packed =
        PackOp::create(b, curLoc, intType(widthOf(elem)), ValueRange{lo, hi});
    return write(dst, packed);
  }
  return write(dst, materialize(combine(lanes[0])));
}

LogicalResult Importer::emitCvt(ptx::Instruction &inst) {
  StringRef op = inst.opcode;
  if (op == "cvta") {
    // cvta.space.size d, a (to generic) / cvta.to.space.size d, a
    auto t = instrType(inst);
    auto space = spaceOf(inst);
    if (!t || !space || failed(expectOperands(inst, 2)))
      return t && space ? failure()
                        : error(inst.loc, "'cvta' needs a space and a size");
    Value a = read(inst.operands[1], t->type);
    if (!a)
      return failure();
    auto dir = inst.has("to") ? CvtaDir::from_generic : CvtaDir::to_generic;
    Value r = CvtaOp::create(b, curLoc, t->type, dir, *space, a);
    return write(inst.operands[0], r);
  }
  if (op == "isspacep") {
    auto space = spaceOf(inst);
    if (!space || failed(expectOperands(inst, 2)))
      return space ? failure() : error(inst.loc, "'isspacep' needs a space");
    Value a = read(inst.operands[1], addrType());
    if (!a)
      return failure();
    return write(inst.operands[0], IsSpacePOp::create(b, curLoc, *space, a));
  }
  // cvt[.rnd][.ftz][.sat][.relu][.satfinite].dtype.atype d, a[, b]
  auto dt = instrType(inst, 0), st = instrType(inst, 1);
  if (!dt || !st)
    return error(inst.loc, "'cvt' needs a destination and a source type");
  if (inst.has("pack")) {
    // cvt.pack.sat.T.s32{.b32} d, a, b{, c}: with w the width of T,
    // d = (c << 2w) | (sat_T(a) << w) | sat_T(b), the fields as raw bits.
    auto ct = instrType(inst, 0), at = instrType(inst, 1);
    if (!ct || !at || !inst.has("sat") || at->scalar != ScalarType::s32)
      return error(inst.loc, "'cvt.pack' needs '.sat', a destination type "
                             "and '.s32' sources");
    unsigned w = widthOf(ct->type);
    bool withC = inst.operands.size() == 4;
    if (w == 16 ? withC : !withC)
      return expectOperands(inst, w == 16 ? 3 : 4);
    if (w != 4 && w != 8 && w != 16)
      return error(inst.loc, "'cvt.pack' to '." +
                                 stringifyScalarType(ct->scalar) +
                                 "' is not supported yet");
    Type i32 = intType(32);
    auto field = [&](const Operand &o) -> Value {
      Value v = read(o, i32);
      if (!v)
        return {};
      Value narrow = CvtOp::create(
          b, curLoc, ct->type, ValueRange{v}, ScalarType::s32, ct->scalar,
          RoundingModeAttr(), false, /*sat=*/true, false, false);
      return arith::ExtUIOp::create(b, curLoc, i32, narrow);
    };
    Value fa = field(inst.operands[1]), fb = field(inst.operands[2]);
    if (!fa || !fb)
      return failure();
    Value r = arith::OrIOp::create(
        b, curLoc, arith::ShLIOp::create(b, curLoc, fa, constInt(i32, w)), fb);
    if (withC) {
      Value c = read(inst.operands[3], i32);
      if (!c)
        return failure();
      r = arith::OrIOp::create(
          b, curLoc, arith::ShLIOp::create(b, curLoc, c, constInt(i32, 2 * w)),
          r);
    }
    return write(inst.operands[0], r);
  }
  bool packed = inst.operands.size() == 3;
  if (!packed && failed(expectOperands(inst, 2)))
    return failure();
  auto rnd = roundingOf(inst);
  bool ftz = inst.has("ftz"), sat = inst.has("sat"), relu = inst.has("relu"),
       satfinite = inst.has("satfinite");
  SmallVector<Value, 2> in;
  for (size_t i = 1; i < inst.operands.size(); ++i) {
    Value v = read(inst.operands[i], st->type, st->isSigned);
    if (!v)
      return failure();
    in.push_back(v);
  }
  Value r;
  bool srcInt = !st->isFloat, dstInt = !dt->isFloat;
  if (!packed && srcInt && dstInt && !sat) {
    // Integer to integer: truncate or extend by the source's signedness.
    r = coerce(in[0], dt->type, st->isSigned);
  } else if (!packed && !rnd && !ftz && !sat && !relu && !satfinite &&
             st->scalar == ScalarType::f32 && dt->scalar == ScalarType::f64) {
    // Exact widening; with a rounding modifier (cvt.rni.f64.f32 rounds to
    // an integral value) it stays a wooly.cvt.
    r = arith::ExtFOp::create(b, curLoc, dt->type, in[0]);
  } else if (!packed && !rnd && !sat && !relu && !satfinite && !ftz &&
             (st->scalar == ScalarType::f16 ||
              st->scalar == ScalarType::bf16) &&
             (dt->scalar == ScalarType::f32 || dt->scalar == ScalarType::f64)) {
    r = arith::ExtFOp::create(b, curLoc, dt->type, in[0]);
  } else if (!packed && !sat && !ftz && !relu && !satfinite && srcInt &&
             (dt->scalar == ScalarType::f32 || dt->scalar == ScalarType::f64) &&
             rnd && *rnd == RoundingMode::rn) {
    r = st->isSigned
            ? Value(arith::SIToFPOp::create(b, curLoc, dt->type, in[0]))
            : Value(arith::UIToFPOp::create(b, curLoc, dt->type, in[0]));
  } else {
    r = CvtOp::create(b, curLoc, dt->type, in, st->scalar, dt->scalar,
                      rnd ? RoundingModeAttr::get(ctx, *rnd)
                          : RoundingModeAttr(),
                      ftz, sat, relu, satfinite);
  }
  return write(inst.operands[0], r, dt->isSigned);
}

LogicalResult Importer::emitBits(ptx::Instruction &inst) {
  StringRef op = inst.opcode;
  auto t = instrType(inst);
  if (!t && op != "prmt" && op != "lop3" && op != "bmsk")
    return error(inst.loc, "'" + op + "' needs a type");
  Type i32 = intType(32);
  Type ty = t ? t->type : i32;
  Signedness sign = t && t->isSigned ? Signedness::s : Signedness::u;
  auto src = [&](unsigned i, Type tt) { return read(inst.operands[i], tt); };
  Value r;
  if (op == "popc" || op == "clz" || op == "brev") {
    if (failed(expectOperands(inst, 2)))
      return failure();
    Value a = src(1, ty);
    if (!a)
      return failure();
    if (op == "brev") {
      r = BrevOp::create(b, curLoc, a);
    } else {
      r = op == "popc" ? Value(math::CtPopOp::create(b, curLoc, a))
                       : Value(math::CountLeadingZerosOp::create(b, curLoc, a));
      r = coerce(r, i32);
    }
  } else if (op == "bfind") {
    if (failed(expectOperands(inst, 2)))
      return failure();
    Value a = src(1, ty);
    if (!a)
      return failure();
    r = BfindOp::create(b, curLoc, sign, a, inst.has("shiftamt"));
  } else if (op == "bfe") {
    if (failed(expectOperands(inst, 4)))
      return failure();
    Value a = src(1, ty), p = src(2, i32), l = src(3, i32);
    if (!a || !p || !l)
      return failure();
    r = BfeOp::create(b, curLoc, sign, a, p, l);
  } else if (op == "bfi") {
    if (failed(expectOperands(inst, 5)))
      return failure();
    Value a = src(1, ty), c = src(2, ty), p = src(3, i32), l = src(4, i32);
    if (!a || !c || !p || !l)
      return failure();
    r = BfiOp::create(b, curLoc, a, c, p, l);
  } else if (op == "prmt") {
    if (failed(expectOperands(inst, 4)))
      return failure();
    PrmtMode mode = PrmtMode::generic;
    for (StringRef m : inst.mods)
      if (auto pm = symbolizePrmtMode(m))
        mode = *pm;
    Value a = src(1, i32), c = src(2, i32), s = src(3, i32);
    if (!a || !c || !s)
      return failure();
    r = PrmtOp::create(b, curLoc, mode, a, c, s);
  } else if (op == "lop3") {
    if (failed(expectOperands(inst, 5)))
      return failure();
    if (inst.operands[4].kind != OK::Imm)
      return error(inst.operands[4].loc, "lop3 needs an immediate LUT");
    Value a = src(1, i32), c = src(2, i32), d = src(3, i32);
    if (!a || !c || !d)
      return failure();
    r = Lop3Op::create(b, curLoc, a, c, d,
                       b.getI32IntegerAttr(inst.operands[4].imm & 0xff));
  } else if (op == "shf") {
    if (failed(expectOperands(inst, 4)))
      return failure();
    ShiftDir dir = inst.has("l") ? ShiftDir::l : ShiftDir::r;
    ShiftWrap mode = inst.has("wrap") ? ShiftWrap::wrap : ShiftWrap::clamp;
    Value a = src(1, i32), c = src(2, i32), n = src(3, i32);
    if (!a || !c || !n)
      return failure();
    r = ShfOp::create(b, curLoc, dir, mode, a, c, n);
  } else if (op == "bmsk") {
    if (failed(expectOperands(inst, 3)))
      return failure();
    ShiftWrap mode = inst.has("wrap") ? ShiftWrap::wrap : ShiftWrap::clamp;
    Value p = src(1, i32), l = src(2, i32);
    if (!p || !l)
      return failure();
    r = BmskOp::create(b, curLoc, mode, p, l);
  } else if (op == "mul24" || op == "mad24") {
    bool mad = op == "mad24";
    if (failed(expectOperands(inst, mad ? 4 : 3)))
      return failure();
    Value a = src(1, i32), c = src(2, i32);
    if (!a || !c)
      return failure();
    HalfSel half = inst.has("hi") ? HalfSel::hi : HalfSel::lo;
    r = Mul24Op::create(b, curLoc, sign, half, a, c);
    if (mad) {
      Value d = src(3, i32);
      if (!d)
        return failure();
      if (inst.has("sat")) {
        if (half != HalfSel::hi || sign != Signedness::s)
          return error(inst.loc, "'.sat' is only defined for mad24.hi.s32");
        r = saturatingAddS32(r, d);
      } else {
        r = arith::AddIOp::create(b, curLoc, r, d);
      }
    }
  } else if (op == "sad") {
    if (failed(expectOperands(inst, 4)))
      return failure();
    Value a = src(1, ty), c = src(2, ty), d = src(3, ty);
    if (!a || !c || !d)
      return failure();
    r = SadOp::create(b, curLoc, sign, a, c, d);
  } else if (op == "dp4a" || op == "dp2a") {
    if (failed(expectOperands(inst, 4)))
      return failure();
    auto at = instrType(inst, 0), bt = instrType(inst, 1);
    if (!at || !bt)
      return error(inst.loc, "'" + op + "' needs two types");
    Value a = src(1, i32), c = src(2, i32), d = src(3, i32);
    if (!a || !c || !d)
      return failure();
    Signedness as = at->isSigned ? Signedness::s : Signedness::u;
    Signedness bs = bt->isSigned ? Signedness::s : Signedness::u;
    if (op == "dp4a")
      r = Dp4aOp::create(b, curLoc, as, bs, a, c, d);
    else
      r = Dp2aOp::create(b, curLoc, as, bs,
                         inst.has("hi") ? HalfSel::hi : HalfSel::lo, a, c, d);
  } else {
    return unsupported(inst);
  }
  return write(inst.operands[0], r);
}

/// vshl/vshr.dtype.atype.u32{.sat}.mode{.op2} d, a, b{, c}: the scalar video
/// shifts without byte/half selectors, decomposed into arith ops on 64 bits:
/// the amount is clamped to 32 (`.clamp`) or taken mod 32 (`.wrap`), the
/// shifted value saturates to dtype with `.sat` (else it is truncated), then
/// `.add`/`.min`/`.max` combine it with c.
LogicalResult Importer::emitVideoShift(ptx::Instruction &inst) {
  auto dt = instrType(inst, 0), at = instrType(inst, 1),
       bt = instrType(inst, 2);
  if (!dt || !at || !bt || !dt->type.isInteger(32) || !at->type.isInteger(32) ||
      !bt->type.isInteger(32) || bt->isSigned)
    return error(inst.loc, "'" + inst.opcode +
                               "' needs .u32/.s32 dtype and atype and a .u32 "
                               "shift type");
  bool clamp = inst.has("clamp");
  if (!clamp && !inst.has("wrap"))
    return error(inst.loc, "'" + inst.opcode + "' needs '.clamp' or '.wrap'");
  std::optional<StringRef> op2;
  for (StringRef m : {"add", "min", "max"})
    if (inst.has(m))
      op2 = m;
  if (failed(expectOperands(inst, op2 ? 4 : 3)))
    return failure();
  for (const Operand &o : inst.operands)
    if (o.name.contains('.'))
      return error(o.loc, "video byte/half selectors are not supported yet");
  Type i32 = intType(32), wide = intType(64);
  Value a = read(inst.operands[1], i32), n = read(inst.operands[2], i32);
  if (!a || !n)
    return failure();
  n = clamp ? Value(arith::MinUIOp::create(b, curLoc, n, constInt(i32, 32)))
            : Value(arith::AndIOp::create(b, curLoc, n, constInt(i32, 31)));
  // 32-bit values shifted by up to 32: 64 bits hold every result, and with
  // `.sat` a 128-bit intermediate keeps the signed clamp exact.
  if (inst.has("sat"))
    wide = intType(128);
  Value wa = at->isSigned ? Value(arith::ExtSIOp::create(b, curLoc, wide, a))
                          : Value(arith::ExtUIOp::create(b, curLoc, wide, a));
  Value wn = arith::ExtUIOp::create(b, curLoc, wide, n);
  Value t;
  if (inst.opcode == "vshl")
    t = arith::ShLIOp::create(b, curLoc, wa, wn);
  else if (at->isSigned)
    t = arith::ShRSIOp::create(b, curLoc, wa, wn);
  else
    t = arith::ShRUIOp::create(b, curLoc, wa, wn);
  if (inst.has("sat")) {
    int64_t lo = dt->isSigned ? INT32_MIN : 0;
    int64_t hi = dt->isSigned ? INT32_MAX : UINT32_MAX;
    t = arith::MaxSIOp::create(b, curLoc, t, constInt(wide, lo));
    t = arith::MinSIOp::create(b, curLoc, t, constInt(wide, hi));
  }
  Value r = arith::TruncIOp::create(b, curLoc, i32, t);
  if (op2) {
    Value c = read(inst.operands[3], i32);
    if (!c)
      return failure();
    if (*op2 == "add")
      r = arith::AddIOp::create(b, curLoc, r, c);
    else if (*op2 == "min")
      r = dt->isSigned ? Value(arith::MinSIOp::create(b, curLoc, r, c))
                       : Value(arith::MinUIOp::create(b, curLoc, r, c));
    else
      r = dt->isSigned ? Value(arith::MaxSIOp::create(b, curLoc, r, c))
                       : Value(arith::MaxUIOp::create(b, curLoc, r, c));
  }
  return write(inst.operands[0], r);
}

LogicalResult Importer::emitAtom(ptx::Instruction &inst, bool isRed) {
  auto t = instrType(inst);
  if (!t)
    return error(inst.loc, "'" + inst.opcode + "' needs a type");
  if (widthOf(t->type) > 64 || isa<VectorType>(t->type) || inst.has("v2") ||
      inst.has("v4") || inst.has("v8"))
    return error(inst.loc, "atomics on '." + stringifyScalarType(t->scalar) +
                               "' or vectors are not supported yet");
  StateSpace space = spaceOf(inst).value_or(StateSpace::generic);
  MemOrderAttr sem;
  MemScopeAttr scope;
  std::optional<AtomicOp> kind;
  for (StringRef m : inst.mods) {
    if (m == "relaxed" || m == "acquire" || m == "release" || m == "acq_rel")
      sem = MemOrderAttr::get(ctx, *symbolizeMemOrder(m));
    else if (auto s = symbolizeMemScope(m))
      scope = MemScopeAttr::get(ctx, *s);
    else if (m == "add")
      kind = t->isFloat ? AtomicOp::fadd : AtomicOp::add;
    else if (m == "min")
      kind = t->isFloat    ? AtomicOp::fmin
             : t->isSigned ? AtomicOp::smin
                           : AtomicOp::umin;
    else if (m == "max")
      kind = t->isFloat    ? AtomicOp::fmax
             : t->isSigned ? AtomicOp::smax
                           : AtomicOp::umax;
    else if (m == "inc" || m == "dec" || m == "exch" || m == "cas")
      kind = *symbolizeAtomicOp(m);
    else if (m == "and" || m == "or" || m == "xor")
      kind = *symbolizeAtomicOp(m);
  }
  if (!kind)
    return error(inst.loc, "'" + inst.opcode + "' needs an operation");
  if (scope && !sem)
    sem = MemOrderAttr::get(ctx, MemOrder::relaxed);
  size_t nvals = *kind == AtomicOp::cas ? 2 : 1;
  size_t want = (isRed ? 1 : 2) + nvals;
  // An optional trailing cache-policy operand (.L2::cache_hint).
  if (inst.operands.size() == want + 1 && inst.has("L2::cache_hint"))
    inst.operands.pop_back();
  if (failed(expectOperands(inst, want)))
    return failure();
  Type at;
  Value addr = address(inst.operands[isRed ? 0 : 1], at,
                       spaceOf(inst).value_or(StateSpace::generic));
  if (!addr)
    return failure();
  SmallVector<Value, 2> vals;
  for (size_t i = isRed ? 1 : 2; i < want; ++i) {
    Value v = read(inst.operands[i], t->type);
    if (!v)
      return failure();
    vals.push_back(v);
  }
  if (isRed) {
    RedOp::create(b, curLoc, space, *kind, addr, vals[0], sem, scope);
    return success();
  }
  Value r =
      AtomOp::create(b, curLoc, t->type, space, *kind, addr, vals, sem, scope);
  return write(inst.operands[0], r, t->isSigned);
}

LogicalResult Importer::emitWarp(ptx::Instruction &inst) {
  StringRef op = inst.opcode;
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
  if (op == "activemask") {
    if (failed(expectOperands(inst, 1)))
      return failure();
    return write(dst, ActiveMaskOp::create(b, curLoc, i32));
  }
  if (op == "shfl") {
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
    auto s = ShflOp::create(b, curLoc, *mode, a, lane, c, mask);
    if (dst.kind == OK::Pair) {
      if (failed(write(dst.elems[0], s.getResult())))
        return failure();
      return write(dst.elems[1], s.getValid());
    }
    return write(dst, s.getResult());
  }
  if (op == "vote") {
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
    return write(dst, VoteOp::create(b, curLoc, rt, *mode, p, mask));
  }
  if (op == "match") {
    auto t = instrType(inst);
    MatchMode mode = inst.has("all") ? MatchMode::all : MatchMode::any;
    if (!t || failed(expectOperands(inst, 3)))
      return t ? failure() : error(inst.loc, "'match' needs a type");
    Value v = read(inst.operands[1], t->type), mask = maskOf(2);
    if (!v || !mask)
      return failure();
    auto m = MatchOp::create(b, curLoc, mode, v, mask);
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
  return write(dst, ReduxOp::create(b, curLoc, i32, *kind, v, mask));
}

LogicalResult Importer::emitBarrier(ptx::Instruction &inst) {
  StringRef op = inst.opcode;
  Type i32 = intType(32);
  if (op == "membar") {
    MemScope scope = inst.has("cta")   ? MemScope::cta
                     : inst.has("sys") ? MemScope::sys
                                       : MemScope::gpu;
    if (inst.has("proxy"))
      return unsupported(inst);
    FenceOp::create(b, curLoc, MemOrder::sc, scope);
    return success();
  }
  if (op == "fence") {
    if (inst.has("proxy") || inst.has("mbarrier_init"))
      return unsupported(inst);
    // A fence without `.sem` is `.acq_rel` (PTX ISA, `fence`).
    MemOrder sem = inst.has("sc")        ? MemOrder::sc
                   : inst.has("acquire") ? MemOrder::acquire
                   : inst.has("release") ? MemOrder::release
                                         : MemOrder::acq_rel;
    std::optional<MemScope> scope;
    for (StringRef m : inst.mods)
      if (auto s = symbolizeMemScope(m))
        scope = s;
    if (!scope)
      return error(inst.loc, "'fence' needs a scope");
    FenceOp::create(b, curLoc, sem, *scope);
    return success();
  }
  if (inst.has("warp")) {
    if (failed(expectOperands(inst, 1)))
      return failure();
    Value mask = read(inst.operands[0], i32);
    if (!mask)
      return failure();
    WarpSyncOp::create(b, curLoc, mask);
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
    bool aligned = op == "bar" || inst.has("aligned");
    return write(inst.operands[0],
                 BarRedOp::create(b, curLoc, rt, *kind, id, count, p, aligned));
  }
  bool arrive = inst.has("arrive");
  if (!arrive && !inst.has("sync") && !inst.mods.empty() &&
      !(inst.mods.size() == 1 && inst.mods[0] == "aligned"))
    return unsupported(inst);
  if (inst.operands.empty() || inst.operands.size() > 2)
    return error(inst.loc, "'" + op +
                               "' expects a barrier id and an "
                               "optional thread count");
  Value id = read(inst.operands[0], i32);
  Value count;
  if (inst.operands.size() == 2 && !(count = read(inst.operands[1], i32)))
    return failure();
  if (!id)
    return failure();
  bool aligned = op == "bar" || inst.has("aligned");
  BarrierOp::create(b, curLoc, id, count, arrive, aligned);
  return success();
}

LogicalResult Importer::emitCall(ptx::Instruction &inst) {
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
    const ptx::Prototype *p = nullptr;
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
    call = CallIndirectOp::create(b, curLoc, resTypes, target, argValues);
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

LogicalResult Importer::emitMatrix(ptx::Instruction &inst) {
  StringRef op = inst.opcode;
  Type i32 = intType(32);
  auto readVec = [&](const Operand &o, Type t, SmallVectorImpl<Value> &out) {
    if (o.kind != OK::Vector) {
      (void)error(o.loc, "expected a vector operand '{...}'");
      return false;
    }
    for (const Operand &e : o.elems) {
      Value v = read(e, t);
      if (!v)
        return false;
      out.push_back(v);
    }
    return true;
  };
  if (op == "cp") {
    if (!inst.mods.empty() && inst.mods[0] == "async") {
      if (inst.has("commit_group")) {
        CpAsyncCommitOp::create(b, curLoc);
        return success();
      }
      if (inst.has("wait_all")) {
        CpAsyncCommitOp::create(b, curLoc);
        CpAsyncWaitOp::create(b, curLoc, 0);
        return success();
      }
      if (inst.has("wait_group")) {
        if (failed(expectOperands(inst, 1)) || inst.operands[0].kind != OK::Imm)
          return error(inst.loc, "'cp.async.wait_group' needs an immediate");
        CpAsyncWaitOp::create(b, curLoc, inst.operands[0].imm);
        return success();
      }
      if (inst.has("bulk") || inst.has("mbarrier"))
        return unsupported(inst);
      if (inst.has("L2::cache_hint") && inst.operands.size() >= 4)
        inst.operands.pop_back();
      if (inst.operands.size() < 3 || inst.operands.size() > 4)
        return error(inst.loc, "'cp.async' expects dst, src, size[, src-size]");
      Type dt, st;
      Value dst = address(inst.operands[0], dt);
      Value src = address(inst.operands[1], st);
      if (!dst || !src)
        return failure();
      if (inst.operands[2].kind != OK::Imm)
        return error(inst.operands[2].loc, "copy size must be an immediate");
      int64_t size = inst.operands[2].imm;
      if (size != 4 && size != 8 && size != 16)
        return error(inst.operands[2].loc, "copy size must be 4, 8 or 16");
      Value srcSize;
      if (inst.operands.size() == 4) {
        const Operand &last = inst.operands[3];
        VarInfo *lv = last.kind == OK::Reg || last.kind == OK::Symbol
                          ? lookup(last.name)
                          : nullptr;
        if (lv && lv->type.isInteger(1)) {
          // The ignore-src predicate: when true, nothing is read and the
          // whole destination is zero-filled (src-size 0).
          Value p = read(last, b.getI1Type());
          if (!p)
            return failure();
          srcSize = arith::SelectOp::create(b, curLoc, p, constInt(i32, 0),
                                            constInt(i32, size));
        } else if (!(srcSize = read(last, i32))) {
          return failure();
        }
      }
      CacheOpAttr cache =
          CacheOpAttr::get(ctx, inst.has("cg") ? CacheOp::cg : CacheOp::ca);
      CpAsyncOp::create(b, curLoc, dst, coerce(src, intType(64)),
                        b.getI32IntegerAttr(size), srcSize, cache);
      return success();
    }
    return unsupported(inst);
  }
  if (op == "ldmatrix") {
    int n = inst.has("x4") ? 4 : inst.has("x2") ? 2 : 1;
    if (failed(expectOperands(inst, 2)))
      return failure();
    Type at;
    Value addr = address(inst.operands[1], at);
    if (!addr)
      return failure();
    // Without `.shared` the address is generic (and must point to shared
    // memory): the op takes a shared-space address.
    if (!inst.has("shared"))
      addr = CvtaOp::create(b, curLoc, at, CvtaDir::from_generic,
                            StateSpace::shared, addr);
    SmallVector<Type> types(n, i32);
    auto ld = LdMatrixOp::create(b, curLoc, types, addr, inst.has("trans"));
    const Operand &d = inst.operands[0];
    if (d.kind != OK::Vector || d.elems.size() != static_cast<size_t>(n))
      return error(d.loc, "expected " + Twine(n) + " destination registers");
    for (int k = 0; k < n; ++k)
      if (failed(write(d.elems[k], ld.getResult(k))))
        return failure();
    return success();
  }
  // Shapes look like m16n8k16.
  StringRef shape;
  for (StringRef m : inst.mods)
    if (m.starts_with("m") && m.contains('n') && m.contains('k'))
      shape = m;
  if (shape.empty())
    return error(inst.loc, "'" + op + "' needs a shape");
  SmallVector<Layout, 2> layouts;
  for (StringRef m : inst.mods)
    if (auto l = symbolizeLayout(m))
      layouts.push_back(*l);
  SmallVector<PtxType, 4> types;
  for (StringRef m : inst.mods)
    if (auto t = ptxType(m))
      types.push_back(*t);
  // Registers of a fragment: floats for f32/f64 elements, i32 otherwise.
  auto regType = [&](const PtxType &t) -> Type {
    if (t.scalar == ScalarType::f32 || t.scalar == ScalarType::f64)
      return t.type;
    return i32;
  };
  if (op == "mma") {
    if (layouts.size() != 2 || types.size() != 4 ||
        failed(expectOperands(inst, 4)))
      return error(inst.loc, "'mma' needs two layouts and four types");
    SmallVector<Value> a, bb, c;
    if (!readVec(inst.operands[1], regType(types[1]), a) ||
        !readVec(inst.operands[2], regType(types[2]), bb) ||
        !readVec(inst.operands[3], regType(types[3]), c))
      return failure();
    const Operand &d = inst.operands[0];
    if (d.kind != OK::Vector)
      return error(d.loc, "expected a vector destination");
    SmallVector<Type> dt(d.elems.size(), regType(types[0]));
    auto mma = MmaOp::create(b, curLoc, dt, b.getStringAttr(shape), layouts[0],
                             layouts[1], types[0].scalar, types[1].scalar,
                             types[2].scalar, types[3].scalar, a, bb, c,
                             inst.has("satfinite"));
    for (size_t k = 0; k < d.elems.size(); ++k)
      if (failed(write(d.elems[k], mma.getResult(k))))
        return failure();
    return success();
  }
  // wmma.load / wmma.store / wmma.mma
  if (inst.mods.empty())
    return unsupported(inst);
  StringRef kindMod = inst.mods[0];
  StateSpace space = spaceOf(inst).value_or(StateSpace::generic);
  if (kindMod == "load") {
    auto role =
        inst.mods.size() > 1 ? symbolizeMatrixRole(inst.mods[1]) : std::nullopt;
    if (!role || layouts.empty() || types.empty() || inst.operands.size() < 2 ||
        inst.operands.size() > 3)
      return error(inst.loc, "malformed 'wmma.load'");
    Type at;
    Value addr = address(inst.operands[1], at);
    Value stride;
    if (inst.operands.size() == 3 && !(stride = read(inst.operands[2], i32)))
      return failure();
    if (!addr)
      return failure();
    const Operand &d = inst.operands[0];
    if (d.kind != OK::Vector)
      return error(d.loc, "expected a vector destination");
    SmallVector<Type> rt(d.elems.size(), regType(types[0]));
    auto ld = WmmaLoadOp::create(b, curLoc, rt, *role, layouts[0],
                                 b.getStringAttr(shape), types[0].scalar, space,
                                 addr, stride);
    for (size_t k = 0; k < d.elems.size(); ++k)
      if (failed(write(d.elems[k], ld.getResult(k))))
        return failure();
    return success();
  }
  if (kindMod == "store") {
    if (layouts.empty() || types.empty() || inst.operands.size() < 2 ||
        inst.operands.size() > 3)
      return error(inst.loc, "malformed 'wmma.store'");
    Type at;
    Value addr = address(inst.operands[0], at);
    if (!addr)
      return failure();
    SmallVector<Value> vals;
    if (!readVec(inst.operands[1], regType(types[0]), vals))
      return failure();
    Value stride;
    if (inst.operands.size() == 3 && !(stride = read(inst.operands[2], i32)))
      return failure();
    WmmaStoreOp::create(b, curLoc, layouts[0], b.getStringAttr(shape),
                        types[0].scalar, space, addr, stride, vals);
    return success();
  }
  if (kindMod == "mma") {
    if (layouts.size() != 2 || types.size() < 2 ||
        failed(expectOperands(inst, 4)))
      return error(inst.loc, "malformed 'wmma.mma'");
    // `.dtype.ctype` (f16 inputs) or `.dtype.atype.btype.ctype`.
    if (types.size() != 2 && types.size() != 4)
      return error(inst.loc, "malformed 'wmma.mma'");
    PtxType dty = types[0], cty = types.back();
    ScalarType aty = types.size() == 4 ? types[1].scalar : ScalarType::f16;
    ScalarType bty = types.size() == 4 ? types[2].scalar : ScalarType::f16;
    SmallVector<Value> a, bb, c;
    if (!readVec(inst.operands[1], i32, a) ||
        !readVec(inst.operands[2], i32, bb) ||
        !readVec(inst.operands[3], regType(cty), c))
      return failure();
    const Operand &d = inst.operands[0];
    if (d.kind != OK::Vector)
      return error(d.loc, "expected a vector destination");
    SmallVector<Type> dt(d.elems.size(), regType(dty));
    auto mma = WmmaMmaOp::create(b, curLoc, dt, layouts[0], layouts[1],
                                 b.getStringAttr(shape), dty.scalar, aty, bty,
                                 cty.scalar, a, bb, c, inst.has("satfinite"));
    for (size_t k = 0; k < d.elems.size(); ++k)
      if (failed(write(d.elems[k], mma.getResult(k))))
        return failure();
    return success();
  }
  return unsupported(inst);
}

LogicalResult Importer::emitMisc(ptx::Instruction &inst) {
  StringRef op = inst.opcode;
  if (op == "nanosleep") {
    if (failed(expectOperands(inst, 1)))
      return failure();
    Value t = read(inst.operands[0], intType(32));
    if (!t)
      return failure();
    NanosleepOp::create(b, curLoc, t);
    return success();
  }
  if (op == "prefetch" || op == "prefetchu") {
    if (failed(expectOperands(inst, 1)))
      return failure();
    StateSpace space = spaceOf(inst).value_or(StateSpace::generic);
    StringRef level = inst.mods.empty() ? "L1" : inst.mods.back();
    Type at;
    Value addr = address(inst.operands[0], at);
    if (!addr)
      return failure();
    PrefetchOp::create(b, curLoc, space, b.getStringAttr(level), addr);
    return success();
  }
  if (op == "createpolicy") {
    if (!inst.has("fractional") || inst.operands.empty() ||
        inst.operands.size() > 2)
      return unsupported(inst);
    SmallVector<StringRef, 2> prios;
    for (StringRef m : inst.mods)
      if (m.starts_with("L2::"))
        prios.push_back(m.drop_front(4));
    if (prios.empty())
      return error(inst.loc, "'createpolicy' needs an eviction priority");
    double fraction = 1.0;
    if (inst.operands.size() == 2) {
      const Operand &f = inst.operands[1];
      if (f.kind != OK::FImm)
        return error(f.loc, "fraction must be a float immediate");
      fraction = f.isDouble
                     ? llvm::bit_cast<double>(f.bits)
                     : llvm::bit_cast<float>(static_cast<uint32_t>(f.bits));
    }
    Value r = CreatePolicyOp::create(
        b, curLoc, intType(64), b.getStringAttr(prios[0]),
        b.getStringAttr(prios.size() > 1 ? prios[1] : "evict_unchanged"),
        b.getF32FloatAttr(fraction));
    return write(inst.operands[0], r);
  }
  return unsupported(inst);
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> mlir::wooly::importPTX(llvm::SourceMgr &sourceMgr,
                                             MLIRContext *context) {
  // Nothing in the import recurses with the input's size (SSA construction
  // uses worklists, operand nesting is bounded), so it runs on the caller's
  // thread whatever the input.
  ptx::Module ast;
  Importer importer(context, sourceMgr, ast);
  return importer.run();
}

OwningOpRef<ModuleOp> mlir::wooly::importPTX(StringRef ptx,
                                             StringRef bufferName,
                                             MLIRContext *context) {
  llvm::SourceMgr sm;
  sm.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(ptx, bufferName,
                                       /*RequiresNullTerminator=*/false),
      llvm::SMLoc());
  return importPTX(sm, context);
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
