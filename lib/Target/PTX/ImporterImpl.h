//===- ImporterImpl.h - The PTX importer's shared state ----*- C++ -*-===//
//
// Internal to lib/Target/PTX. The importer class: one object raises one PTX
// module. Its shared state and helpers (types, values, SSA, diagnostics) are
// defined in Importer.cpp; module-level declarations in ImportModule.cpp;
// function bodies, control flow and calls in ImportControlFlow.cpp; each
// instruction family in its own Import<Family>.cpp. Instructions reach their
// handler through the opcode table of PTXInstructions.def, which also lists
// the modifiers each opcode accepts (InstructionTable.cpp checks them).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_TARGET_PTX_IMPORTERIMPL_H
#define WOOLY_LIB_TARGET_PTX_IMPORTERIMPL_H

#include "PTXAst.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Target/PTX/SSABuilder.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/StringSaver.h"

#include <cstring>
#include <optional>
#include <vector>

namespace mlir::wooly::ptx {

/// The largest `%v<N>` range of vector registers or `.param`s accepted.
inline constexpr int64_t kMaxEagerRange = 4096;
/// The largest `.param` byte array accepted.
inline constexpr int64_t kMaxParamBytes = int64_t(1) << 20;

/// Returns the width in bits of a scalar or vector type (0 for others).
inline uint64_t widthOf(Type t) {
  if (t.isIntOrFloat())
    return t.getIntOrFloatBitWidth();
  if (auto v = dyn_cast<VectorType>(t))
    return static_cast<uint64_t>(v.getNumElements()) *
           v.getElementType().getIntOrFloatBitWidth();
  return 0;
}

/// A PTX register, parameter or vector register in scope.
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

/// The PTX opcodes the importer knows (PTXInstructions.def).
enum class Opcode : uint8_t {
#define PTX_INSTRUCTION(Id, ...) Id,
#include "PTXInstructions.def"
};

/// Flags of an opcode in PTXInstructions.def.
enum InstructionFlags : unsigned {
  kNone = 0,
  /// Only computes registers: a guarded instance runs unconditionally and
  /// its results are selected by the guard.
  kPure = 1,
  /// Registers may be wider or narrower than the instruction type.
  kRelaxedSizes = 2,
};

/// What a modifier is to one opcode.
enum class ModifierKind : uint8_t {
  Handled,     ///< implemented by the handler
  Type,        ///< a type modifier (`.u32`), counted against MaxTypes
  Ignored,     ///< accepted and ignored (a performance hint)
  Unsupported, ///< valid PTX, not implemented yet
};

class Importer;

/// A map keyed by short strings (opcodes, modifiers), looked up for every
/// instruction: strings of up to 8 characters, most of them, are integer
/// keys, found without hashing a string; longer ones go to a StringMap.
template <typename T> class ShortStringMap {
public:
  /// Returns the value of `s`, or null.
  const T *find(llvm::StringRef s) const {
    if (s.size() <= 8) {
      auto it = shortKeys.find(pack(s));
      return it == shortKeys.end() ? nullptr : &it->second;
    }
    auto it = longKeys.find(s);
    return it == longKeys.end() ? nullptr : &it->second;
  }
  /// Adds `s` with `value`; returns the entry and whether it is new.
  std::pair<T *, bool> insert(llvm::StringRef s, T value) {
    if (s.size() <= 8) {
      auto [it, inserted] = shortKeys.try_emplace(pack(s), std::move(value));
      return {&it->second, inserted};
    }
    auto [it, inserted] = longKeys.try_emplace(s, std::move(value));
    return {&it->second, inserted};
  }

private:
  /// The characters of `s` (at most 8, none of them NUL) as an integer.
  static uint64_t pack(llvm::StringRef s) {
    uint64_t key = 0;
    std::memcpy(&key, s.data(), s.size());
    return key;
  }
  /// Spreads the characters of a packed key over the hash bits.
  struct PackedKeyInfo : llvm::DenseMapInfo<uint64_t> {
    static unsigned getHashValue(uint64_t key) {
      return static_cast<unsigned>((key * 0x9E3779B97F4A7C15ULL) >> 32);
    }
  };
  llvm::DenseMap<uint64_t, T, PackedKeyInfo> shortKeys;
  llvm::StringMap<T> longKeys;
};

/// One row of the opcode table: the handler of an opcode and the modifiers
/// it accepts.
struct InstructionInfo {
  using Handler = LogicalResult (Importer::*)(Instruction &, Opcode);
  Opcode opcode;
  Handler handler;
  unsigned flags;
  unsigned maxTypes;
  /// Every modifier the opcode accepts or knows; others are unknown.
  ShortStringMap<ModifierKind> modifiers;
};

/// Returns the rounding-mode modifier of `inst`, if it has one.
inline std::optional<RoundingMode> roundingOf(const Instruction &inst) {
  for (llvm::StringRef m : inst.mods)
    if (auto r = symbolizeRoundingMode(m))
      return r;
  return std::nullopt;
}

/// Raises a PTX module to Wooly IR. The shared state (SSA builder, scopes,
/// value and type helpers, diagnostics) lives here; the instruction handlers
/// are defined in one file per instruction family (Import*.cpp) and reached
/// through the opcode table (InstructionTable.cpp, PTXInstructions.def).
class Importer final : public ModuleSink {
public:
  /// Creates an importer for the main buffer of `sm`, parsed into `ast`.
  Importer(MLIRContext *ctx, llvm::SourceMgr &sm, Module &ast)
      : ctx(ctx), sm(sm), ast(ast), b(ctx) {
    const llvm::MemoryBuffer *buf = sm.getMemoryBuffer(sm.getMainFileID());
    bufferName = b.getStringAttr(buf->getBufferIdentifier());
    cursor = {buf->getBufferStart(), buf->getBufferStart(), 1};
  }

  /// Parses the buffer and raises each variable and function as soon as it
  /// is parsed.
  OwningOpRef<ModuleOp> run();

  /// Raises a module-scope variable.
  bool onGlobal(const VarDecl &var) override {
    return succeeded(importGlobal(var, var.name));
  }
  /// Declares a function and raises its body, if it has one.
  bool onFunction(Function &f) override;

  /// Returns the `file:line:col` location of `p` in the buffer.
  Location loc(const char *p);
  /// Emits `msg` at `p`. Messages quote the input, which may hold any
  /// bytes, and must stay printable UTF-8 (wooly-serve sends them in
  /// protocol strings): a byte outside printable ASCII is written as \xNN.
  LogicalResult error(const char *p, const Twine &msg);

private:
  // Types.
  std::optional<PtxType> ptxType(StringRef name);
  std::optional<PtxType> instrType(const Instruction &inst, int which = 0);
  Type intType(unsigned bits) { return b.getIntegerType(bits); }
  Type addrType() { return intType(ast.addressSize); }

  // Module level.
  LogicalResult importGlobal(const VarDecl &d, StringRef name);
  LogicalResult declareFunction(Function &f);
  LogicalResult importBody(Function &f);
  std::optional<Type> paramType(const VarDecl &d);
  DictionaryAttr paramAttrs(const VarDecl &d);

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
  bool readSources(const Instruction &inst, Type t,
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
    vec.kind = Operand::Kind::Vector;
    vec.loc = op.loc;
    for (unsigned i = 0; i < v->vecWidth; ++i) {
      Operand e;
      e.kind = Operand::Kind::Reg;
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

  // Function bodies and control flow (ImportControlFlow.cpp).
  void branchTo(Block *target);
  void afterEdgeTo(Block *target);
  void startBlock(Block *block);
  LogicalResult resolveLabels(Function &f);
  LogicalResult emitStatement(Statement &s);
  LogicalResult emitInstruction(Instruction &inst);
  LogicalResult emitUnguarded(Instruction &inst, const InstructionInfo &info);
  LogicalResult emitBra(Instruction &inst, Opcode op);
  LogicalResult emitRet(Instruction &inst);
  LogicalResult emitExitTrap(Instruction &inst, Opcode op);
  LogicalResult emitCall(Instruction &inst, Opcode op);
  LogicalResult emitNanosleep(Instruction &inst, Opcode op);

  // The opcode table (InstructionTable.cpp).
  /// Returns the table row of `opcode`, or null if it is not known.
  static const InstructionInfo *lookupInstruction(StringRef opcode);
  /// Checks every modifier of `inst` against its row `info`.
  LogicalResult checkModifiers(const Instruction &inst,
                               const InstructionInfo &info);
  /// Reports modifier `m` of `inst` as unknown.
  LogicalResult unknownModifier(const Instruction &inst, StringRef m);
  /// Fails if `inst` has more than `maxTypes` type modifiers.
  LogicalResult checkTypeCount(const Instruction &inst, unsigned maxTypes);
  /// Reports `inst` as an unsupported instruction.
  LogicalResult unsupported(Instruction &inst);

  // Variable declarations in a function body (ImportModule.cpp).
  LogicalResult declareVariables(Statement &s);

  // Memory: loads, stores, atomics, fences, address spaces, async copies,
  // cache control (ImportMemory.cpp).
  LogicalResult emitLdSt(Instruction &inst, Opcode op);
  LogicalResult emitParamAccess(Instruction &inst, bool isLoad, VarInfo *param,
                                int64_t offset, PtxType ty, int vec);
  LogicalResult emitAtom(Instruction &inst, Opcode op);
  LogicalResult emitFence(Instruction &inst, Opcode op);
  LogicalResult emitCvta(Instruction &inst, Opcode op);
  LogicalResult emitCpAsync(Instruction &inst, Opcode op);
  LogicalResult emitPrefetch(Instruction &inst, Opcode op);
  LogicalResult emitCreatePolicy(Instruction &inst, Opcode op);

  // Arithmetic and comparisons (ImportArith.cpp).
  LogicalResult emitIntOrFloatArith(Instruction &inst, Opcode op);
  LogicalResult emitMulMad(Instruction &inst, Opcode op);
  LogicalResult emitCarry(Instruction &inst, Opcode op);
  LogicalResult emitUnaryFloat(Instruction &inst, Opcode op);
  LogicalResult emitSetp(Instruction &inst, Opcode op);

  // Bit manipulation, integer and video instructions (ImportBits.cpp).
  LogicalResult emitBits(Instruction &inst, Opcode op);
  LogicalResult emitVideoShift(Instruction &inst, Opcode op);

  // Moves and conversions (ImportConversions.cpp).
  LogicalResult emitMov(Instruction &inst, Opcode op);
  LogicalResult emitCvt(Instruction &inst, Opcode op);

  // Warp-level and CTA-level synchronisation (ImportWarp.cpp).
  LogicalResult emitWarp(Instruction &inst, Opcode op);
  LogicalResult emitBarrier(Instruction &inst, Opcode op);

  // Matrix instructions: ldmatrix, mma, wmma (ImportMatrix.cpp).
  LogicalResult emitMatrix(Instruction &inst, Opcode op);

  /// `a + b` (or `a - b`) on s32, clamped to [INT32_MIN, INT32_MAX].
  Value saturatingAddS32(Value a, Value c, bool subtract = false);

  /// PTX requires a register to have the size of the instruction type,
  /// except for `ld`, `st` and `cvt` (which extend and truncate).
  bool relaxedSizes = false;
  LogicalResult checkOperandSize(const Operand &op, const VarInfo &var, Type t);

  LogicalResult expectOperands(Instruction &inst, size_t n) {
    if (inst.operands.size() != n)
      return error(inst.loc, "'" + inst.opcode + "' expects " + Twine(n) +
                                 " operands, got " +
                                 Twine(inst.operands.size()));
    return success();
  }
  std::optional<StateSpace> spaceOf(const Instruction &inst);

  MLIRContext *ctx;
  llvm::SourceMgr &sm;
  Module &ast;
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
  void assign(SSABuilder::Var id, Value v);
  llvm::DenseMap<Attribute, Value> constants;
  Operation *lastConstant = nullptr;
  StringRef pendingPragma;
};

} // namespace mlir::wooly::ptx

#endif // WOOLY_LIB_TARGET_PTX_IMPORTERIMPL_H
