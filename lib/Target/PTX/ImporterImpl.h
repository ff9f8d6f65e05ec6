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
#include "Wooly/Target/PTX/PTXImporter.h"
#include "Wooly/Target/PTX/SSABuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/StringSaver.h"

#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <type_traits>
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

/// What the importer's loop analysis (Importer::findLoops) records of a
/// register name: the name up to its first '.', so that a vector register
/// and its components `v.x` (or `v.r`) share one.
inline StringRef regKey(StringRef name) {
  return name.take_until([](char c) { return c == '.'; });
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

/// The characters of `s` (at most 8, none of them NUL) as an integer.
inline uint64_t packShortString(llvm::StringRef s) {
  // The bytes in memory order (as a memcpy into the key would place them
  // on a little-endian host), read with fixed-size loads rather than a
  // call to memcpy: two overlapping 4-byte loads, or three single bytes.
  const auto *p = reinterpret_cast<const unsigned char *>(s.data());
  size_t n = s.size();
  if (n >= 4) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    return uint64_t(
               llvm::support::endian::byte_swap(lo, llvm::endianness::little)) |
           (uint64_t(
                llvm::support::endian::byte_swap(hi, llvm::endianness::little))
            << (8 * (n - 4)));
  }
  if (n == 0) // An empty StringRef may have no data pointer.
    return 0;
  return uint64_t(p[0]) | (uint64_t(p[n / 2]) << (8 * (n / 2))) |
         (uint64_t(p[n - 1]) << (8 * (n - 1)));
}

/// A map keyed by short strings (opcodes, modifiers), looked up for every
/// instruction: strings of up to 8 characters, most of them, are integer
/// keys, found without hashing a string; longer ones go to a StringMap.
template <typename T> class ShortStringMap {
public:
  /// Returns the value of `s`, or null.
  const T *find(llvm::StringRef s) const {
    if (s.size() <= 8) {
      if (shortKeys.empty())
        return nullptr;
      auto it = shortKeys.find(packShortString(s));
      return it == shortKeys.end() ? nullptr : &it->second;
    }
    auto it = longKeys.find(s);
    return it == longKeys.end() ? nullptr : &it->second;
  }
  /// Adds `s` with `value`; returns the entry and whether it is new.
  std::pair<T *, bool> insert(llvm::StringRef s, T value) {
    if (s.size() <= 8) {
      auto [it, inserted] =
          shortKeys.try_emplace(packShortString(s), std::move(value));
      return {&it->second, inserted};
    }
    auto [it, inserted] = longKeys.try_emplace(s, std::move(value));
    return {&it->second, inserted};
  }

private:
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
  /// The opcode, its handler, its flags (InstructionFlags) and the number of
  /// type modifiers it takes.
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
  Importer(MLIRContext *ctx, llvm::SourceMgr &sm, Module &ast,
           const PTXImportOptions &options)
      : ctx(ctx), sm(sm), ast(ast), options(options), b(ctx) {
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
  /// Runs the verifier of the op that defines `v` (not of its operands).
  /// For the few ops whose rules depend on the instruction's types in ways
  /// the handler leaves to the op (cvt's operand counts and roundings, the
  /// integer-only bit operations, byte extraction): the rest of the IR is
  /// valid by construction and is not verified (PTXImportOptions::verify).
  /// Returns `v`, or null after the verifier's located error.
  Value checked(Value v);

private:
  // Types.
  /// Returns the properties of PTX type `name` (`u32`), if it is one.
  std::optional<PtxType> ptxType(StringRef name);
  /// ptxType() of the modifiers seen so far (asked for every modifier of
  /// most instructions).
  ShortStringMap<std::optional<PtxType>> ptxTypes;
  /// Returns the `which`-th type modifier of `inst` (0 = first).
  std::optional<PtxType> instrType(const Instruction &inst, int which = 0);
  /// Creates an op of type `OpTy` at `curLoc` (as `OpTy::create(b, curLoc,
  /// args...)` does, but the op's name is found by its TypeID, not by
  /// hashing its name string).
  ///
  /// The most frequent ops are built with their result type and attributes
  /// given, through the generated builders that take them (the same op, as
  /// the default builders would make it): those infer the result type and
  /// get each enum attribute from the context's uniquer, for every op.
  ///
  /// The op's properties are built on the stack (OperationState allocates
  /// them otherwise, once per op); the op copies them.
  template <typename OpTy, typename... Args> OpTy make(Args &&...args) {
    OperationState state(curLoc, opName<OpTy>());
    using Properties = typename mlir::PropertiesSelector<OpTy>::type;
    [[maybe_unused]] Properties properties{};
    if constexpr (!std::is_same_v<Properties, EmptyProperties>)
      state.useProperties(properties);
    constexpr bool intBinary = std::is_same_v<OpTy, arith::AddIOp> ||
                               std::is_same_v<OpTy, arith::SubIOp> ||
                               std::is_same_v<OpTy, arith::MulIOp> ||
                               std::is_same_v<OpTy, arith::ShLIOp>;
    if constexpr (intBinary && sizeof...(Args) == 2 &&
                  (std::is_convertible_v<Args, Value> && ...)) {
      // `lhs, rhs`: the result has their type; no overflow flags.
      buildIntBinary<OpTy>(state, std::forward<Args>(args)...);
    } else if constexpr (std::is_same_v<OpTy, arith::ConstantOp> &&
                         sizeof...(Args) == 1 &&
                         (std::is_convertible_v<Args, TypedAttr> && ...)) {
      TypedAttr value(std::forward<Args>(args)...);
      OpTy::build(b, state, value.getType(), value);
    } else if constexpr (std::is_same_v<OpTy, arith::CmpIOp> &&
                         sizeof...(Args) == 3) {
      buildCmpI(state, std::forward<Args>(args)...);
    } else {
      OpTy::build(b, state, std::forward<Args>(args)...);
    }
    return cast<OpTy>(b.create(state));
  }
  template <typename OpTy>
  void buildIntBinary(OperationState &state, Value lhs, Value rhs) {
    if (!noOverflowFlags)
      noOverflowFlags = arith::IntegerOverflowFlagsAttr::get(
          ctx, arith::IntegerOverflowFlags::none);
    OpTy::build(b, state, lhs.getType(), lhs, rhs, noOverflowFlags);
  }
  void buildCmpI(OperationState &state, arith::CmpIPredicate predicate,
                 Value lhs, Value rhs) {
    arith::CmpIOp::build(
        b, state, enumAttr<arith::CmpIPredicateAttr>(predicate), lhs, rhs);
  }
  /// `AttrT::get(ctx, value)` for an enum attribute, from the importer's
  /// cache (enumAttrs).
  template <typename AttrT, typename E> AttrT enumAttr(E value) {
    auto [it, inserted] =
        enumAttrs.try_emplace({TypeID::get<AttrT>().getAsOpaquePointer(),
                               static_cast<uint64_t>(value)},
                              Attribute());
    if (inserted)
      it->second = AttrT::get(ctx, value);
    return cast<AttrT>(it->second);
  }
  /// The `is_volatile` attribute of a load or store.
  UnitAttr volatileAttr(bool isVolatile) {
    return isVolatile ? b.getUnitAttr() : UnitAttr();
  }
  /// The enum attributes made by enumAttr(), by attribute class and value.
  llvm::DenseMap<std::pair<const void *, uint64_t>, Attribute> enumAttrs;
  /// The `overflowFlags` of the integer ops make() builds.
  arith::IntegerOverflowFlagsAttr noOverflowFlags;
  /// The registered name of `OpTy`, looked up in the context once per
  /// importer (opNames).
  template <typename OpTy> OperationName opName() {
    static const unsigned slot = nextOpSlot();
    if (slot >= opNames.size())
      opNames.resize(slot + 1);
    std::optional<OperationName> &known = opNames[slot];
    if (!known) {
      std::optional<RegisteredOperationName> name =
          RegisteredOperationName::lookup(TypeID::get<OpTy>(), ctx);
      assert(name && "op of a dialect that is not loaded");
      known = *name;
    }
    return *known;
  }
  /// A new index into `opNames`, one per op class that make() creates.
  static unsigned nextOpSlot();
  /// The registered names of the op classes made so far, by their slot.
  std::vector<std::optional<OperationName>> opNames;
  /// Returns the integer type of `bits` bits.
  Type intType(unsigned bits) { return b.getIntegerType(bits); }
  /// Returns the type of addresses (`.address_size`).
  Type addrType() { return intType(ast.addressSize); }

  // Module level.
  /// Raises a state-space variable to a `wooly.global` named `name`.
  LogicalResult importGlobal(const VarDecl &d, StringRef name);
  LogicalResult importTexref(const VarDecl &d, StringRef name);
  /// Declares `f` (or checks it against its earlier declaration).
  LogicalResult declareFunction(Function &f);
  /// Raises the body of `f`, declared before.
  LogicalResult importBody(Function &f);
  /// Returns the type of a parameter: its scalar type, or bytes for arrays
  /// and vectors.
  std::optional<Type> paramType(const VarDecl &d);
  /// Returns the attributes recording a parameter's PTX name, type, alignment
  /// and pointer space.
  DictionaryAttr paramAttrs(const VarDecl &d);
  /// The names of paramAttrs()'s attributes, and its `wooly.type` values
  /// by type name.
  StringAttr nameKey, typeKey, alignKey, ptrSpaceKey, ptrAlignKey;
  llvm::StringMap<StringAttr> paramTypeNames;

  // Values.
  /// Returns the function's one `arith.constant` of `value`, created at the
  /// top of the entry block on first use.
  Value constant(TypedAttr value);
  /// The integer constant `v` of type `t`, sign-extended or truncated to
  /// the width of `t`.
  Value constInt(Type t, int64_t v) {
    // Looked up by type and value first: building the attribute is a
    // lookup in the context's uniquer.
    auto [it, inserted] = intConstants.try_emplace({t, v}, Value());
    if (inserted) {
      // The attribute too: most functions use the same few constants.
      auto [attr, isNew] = intAttrs.try_emplace({t, v}, IntegerAttr());
      if (isNew)
        attr->second =
            b.getIntegerAttr(t, llvm::APInt(64, v, /*isSigned=*/true)
                                    .sextOrTrunc(t.getIntOrFloatBitWidth()));
      it->second = constant(attr->second);
    }
    return it->second;
  }
  /// The float constant `v` of type `t`.
  Value constFloat(Type t, double v) { return constant(b.getFloatAttr(t, v)); }
  /// Converts `v` to `t`: a bitcast for equal widths, else a truncation or
  /// an extension (signed if `signExtend`) of its bits.
  Value coerce(Value v, Type t, bool signExtend = false);
  /// Reinterprets `v` as `t`, of the same width.
  Value bitcast(Value v, Type t);
  /// Returns the value of operand `op` as `t`, or null after an error.
  Value read(const Operand &op, Type t, bool signExtend = false);
  /// Reads operands 1..n of `inst` (its sources) as `t` into `out`.
  bool readSources(const Instruction &inst, Type t,
                   SmallVectorImpl<Value> &out);
  /// Writes `v` to destination `op` (a register, vector or sink).
  LogicalResult write(const Operand &op, Value v, bool signExtend = false);
  /// Returns the register or parameter `name` in scope, or null.
  VarInfo *lookup(StringRef name);
  /// lookup() through the scopes, without the cache.
  VarInfo *lookupInScopes(StringRef name);
  /// The answers of lookup() for names of up to 8 characters (nearly every
  /// register name), direct-mapped by the name's packed characters: most
  /// operands name a register used shortly before. An entry is valid while
  /// `epoch` is the cache's: declarations and scopes change it
  /// (forgetLookups()).
  struct LookupCacheEntry {
    uint64_t key = 0;
    uint64_t epoch = 0;
    VarInfo *var = nullptr;
  };
  static constexpr unsigned kLookupCacheBits = 10;
  std::vector<LookupCacheEntry> lookupCache =
      std::vector<LookupCacheEntry>(size_t(1) << kLookupCacheBits);
  uint64_t lookupEpoch = 1;
  /// Invalidates the answers cached by lookup().
  void forgetLookups() { ++lookupEpoch; }
  /// Returns the name of component `i` of vector register `name` (`v.x`).
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
  /// Reads special register `op` (`%tid.x`) as `t`; null if it is not one.
  Value readSpecial(const Operand &op, Type t);
  /// Computes the address of an `[addr]` operand; `type` receives its type.
  Value address(const Operand &op, Type &type,
                std::optional<StateSpace> access = std::nullopt);
  /// The value of a register read before any write (zero).
  Value undefValue(Type t);

  // Function bodies and control flow (ImportControlFlow.cpp).
  /// Ends the current block with a branch to `target`.
  void branchTo(Block *target);
  /// Seals `target` once all its predecessor edges exist.
  void afterEdgeTo(Block *target);
  /// Appends `block` to the body and emits into it.
  void startBlock(Block *block);
  /// Gives each label its block and each `bra` its target.
  LogicalResult resolveLabels(Function &f);
  /// Finds the loops of `f` for the SSA builder (SSABuilder::setLoopEntry):
  /// each label that backward branches target, where no branch from outside
  /// the statements between it and its last backward branch enters them
  /// elsewhere, with the registers those statements may write.
  /// `labelIndex` gives each label block its statement's index, `branches`
  /// each `bra` its statement's index and target.
  void findLoops(Function &f, const llvm::DenseMap<Block *, size_t> &labelIndex,
                 ArrayRef<std::pair<size_t, Block *>> branches);
  /// Whether the statements of the loop headed by `header` may write `var`
  /// (true when `header` heads no loop found by findLoops()).
  bool loopMayWrite(Block *header, SSABuilder::Var var);
  /// Adds an SSA variable of `type` for the register or parameter `name`
  /// (empty for the importer's own variables, which every loop may write).
  SSABuilder::Var newVar(Type type, StringRef name) {
    varKeys.push_back(regKey(name));
    return ssa->addVariable(type);
  }
  /// Raises one statement of a body.
  LogicalResult emitStatement(Statement &s);
  /// Raises one instruction: finds its table row, checks its modifiers and
  /// emits it unguarded, as a select or inside a branch by its guard.
  LogicalResult emitInstruction(Instruction &inst);
  /// Calls the handler of `info` for `inst`.
  LogicalResult emitUnguarded(Instruction &inst, const InstructionInfo &info);
  /// bra (unguarded; guarded branches are conditional branches).
  LogicalResult emitBra(Instruction &inst, Opcode op);
  /// Returns the current values of the function's results.
  LogicalResult emitRet(Instruction &inst);
  /// ret, exit, trap and brkpt.
  LogicalResult emitExitTrap(Instruction &inst, Opcode op);
  /// call: direct, or indirect through a prototype.
  LogicalResult emitCall(Instruction &inst, Opcode op);
  /// nanosleep.
  LogicalResult emitNanosleep(Instruction &inst, Opcode op);

  /// What an instruction's head (`ld.global.u64`: its opcode and
  /// modifiers) gives every instruction with that spelling: its table row,
  /// checked modifiers and type modifiers.
  struct HeadInfo {
    const InstructionInfo *info = nullptr;
    /// The type modifiers (ptxType()), in order.
    SmallVector<PtxType, 2> types;
  };
  /// The heads seen so far whose modifiers passed checkModifiers(), by
  /// spelling: most instructions repeat a few hundred heads.
  llvm::StringMap<HeadInfo> heads;
  /// The instruction being raised and its head, when its spelling is known
  /// (instrType() answers from it).
  const Instruction *curInst = nullptr;
  const HeadInfo *curHead = nullptr;
  /// The head of an instruction whose spelling is not one piece of the
  /// buffer (not expected from the parser).
  HeadInfo uncachedHead;
  /// Returns the head of `inst` from `heads`, after adding it (null after
  /// reporting an unknown opcode or a modifier error).
  const HeadInfo *headOf(const Instruction &inst);

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
  /// Declares the variables of a `.reg`, `.param` or state-space statement.
  LogicalResult declareVariables(Statement &s);

  // Memory: loads, stores, atomics, fences, address spaces, async copies,
  // cache control (ImportMemory.cpp).
  /// ld, ldu and st.
  LogicalResult emitLdSt(Instruction &inst, Opcode op);
  /// A load or store of `vec` elements of type `ty` at `offset` in parameter
  /// `param`, which is a value.
  LogicalResult emitParamAccess(Instruction &inst, bool isLoad, VarInfo *param,
                                int64_t offset, PtxType ty, int vec);
  /// atom and red.
  LogicalResult emitAtom(Instruction &inst, Opcode op);
  /// The atomic operation that modifier `m` of an atom, red or
  /// cp.reduce.async.bulk on type `t` names, if any.
  static std::optional<AtomicOp> atomicOpOf(StringRef m, const PtxType &t);
  /// atom/red `.add` on a float vector (`.v2/.v4/.v8`) or packed type
  /// (`.f16x2/.bf16x2`) of `vec` elements: one scalar atomic per element.
  LogicalResult emitElementwiseAtom(Instruction &inst, PtxType t, int vec,
                                    StateSpace space, AtomicOp kind, Value addr,
                                    MemOrderAttr sem, MemScopeAttr scope);
  /// membar and fence.
  LogicalResult emitFence(Instruction &inst, Opcode op);
  /// cvta and isspacep.
  LogicalResult emitCvta(Instruction &inst, Opcode op);
  /// cp.async and its commit and wait operations.
  LogicalResult emitCpAsync(Instruction &inst, Opcode op);
  /// prefetch and prefetchu.
  LogicalResult emitPrefetch(Instruction &inst, Opcode op);
  /// createpolicy.fractional.
  LogicalResult emitCreatePolicy(Instruction &inst, Opcode op);

  // Arithmetic and comparisons (ImportArith.cpp).
  /// add, sub, div, rem, min, max, abs, neg, the logical operations, shl,
  /// shr, selp and copysign.
  LogicalResult emitIntOrFloatArith(Instruction &inst, Opcode op);
  /// mul, mad and fma.
  LogicalResult emitMulMad(Instruction &inst, Opcode op);
  /// The carry chain: add.cc, sub.cc, mad.cc, addc, subc and madc.
  LogicalResult emitCarry(Instruction &inst, Opcode op);
  /// sqrt, rcp and the approximate functions (rsqrt, sin, cos, lg2, ex2,
  /// tanh).
  LogicalResult emitUnaryFloat(Instruction &inst, Opcode op);
  /// setp and set.
  LogicalResult emitSetp(Instruction &inst, Opcode op);

  // Bit manipulation, integer and video instructions (ImportBits.cpp).
  /// Bit and integer instructions: popc ... dp2a.
  LogicalResult emitBits(Instruction &inst, Opcode op);
  /// The scalar video shifts vshl and vshr.
  LogicalResult emitVideoShift(Instruction &inst, Opcode op);
  /// The SIMD video instructions vadd2 ... vmax4.
  LogicalResult emitVideoSimd(Instruction &inst, Opcode op);

  // Moves and conversions (ImportConversions.cpp).
  /// mov of scalars and vectors.
  LogicalResult emitMov(Instruction &inst, Opcode op);
  /// cvt, including cvt.pack.
  LogicalResult emitCvt(Instruction &inst, Opcode op);

  // Warp-level and CTA-level synchronisation (ImportWarp.cpp).
  /// activemask, shfl, vote, match and redux.
  LogicalResult emitWarp(Instruction &inst, Opcode op);
  /// bar and barrier: CTA barriers, bar.red and bar.warp.sync.
  LogicalResult emitBarrier(Instruction &inst, Opcode op);

  // Asynchronous copies and mbarriers (ImportAsync.cpp).
  /// mbarrier.*.
  LogicalResult emitMbarrier(Instruction &inst, Opcode op);
  /// cp.async.bulk, cp.reduce.async.bulk and the bulk group's commit and
  /// wait (from emitCpAsync).
  LogicalResult emitBulkCopy(Instruction &inst);
  /// cp.async.mbarrier.arrive{.noinc}.
  LogicalResult emitCpAsyncArrive(Instruction &inst);
  /// griddepcontrol, setmaxnreg, elect.sync and stmatrix.
  LogicalResult emitAsyncMisc(Instruction &inst, Opcode op);
  /// The shared-space address of operand `op`, converted from a generic
  /// one when `generic`.
  Value sharedAddress(const Operand &op, bool generic);

  // Matrix instructions: ldmatrix, mma, wmma (ImportMatrix.cpp).
  /// ldmatrix, mma and wmma.
  LogicalResult emitMatrix(Instruction &inst, Opcode op);

  // Textures and surfaces (ImportTexture.cpp).
  /// tex, tld4, txq, suld, sust, sured and suq.
  LogicalResult emitTexture(Instruction &inst, Opcode op);

  /// `a + b` (or `a - b`) on s32, clamped to [INT32_MIN, INT32_MAX].
  Value saturatingAddS32(Value a, Value c, bool subtract = false);

  /// PTX requires a register to have the size of the instruction type,
  /// except for `ld`, `st` and `cvt` (which extend and truncate).
  bool relaxedSizes = false;
  /// Fails unless register `var` has the width of `t` (or sizes are relaxed).
  LogicalResult checkOperandSize(const Operand &op, const VarInfo &var, Type t);

  /// Fails unless `inst` has `n` operands.
  LogicalResult expectOperands(Instruction &inst, size_t n) {
    if (inst.operands.size() != n)
      return error(inst.loc, "'" + inst.opcode + "' expects " + Twine(n) +
                                 " operands, got " +
                                 Twine(inst.operands.size()));
    return success();
  }
  /// Returns the state space named by a modifier of `inst`, if any.
  std::optional<StateSpace> spaceOf(const Instruction &inst);

  /// The context, source buffer and syntax tree of the module.
  MLIRContext *ctx;
  llvm::SourceMgr &sm;
  Module &ast;
  PTXImportOptions options;
  /// Module variables whose initializers name symbols (checked at the end).
  SmallVector<GlobalOp> addressInitializers;
  /// Builds the IR; its insertion point is the end of the current block.
  OpBuilder b;
  /// The buffer's name in locations.
  StringAttr bufferName;
  /// Storage for names the importer makes up (`%r7` of `%r<10>`, `v.x`).
  llvm::BumpPtrAllocator nameAlloc;
  llvm::UniqueStringSaver names{nameAlloc};
  /// The last position loc() resolved.
  struct {
    const char *pos, *lineStart;
    unsigned line;
  } cursor;
  /// The location of the statement being raised.
  Location curLoc = UnknownLoc::get(ctx);
  /// The module, its functions (by PTX name, and those with a body) and
  /// its variables (by symbol).
  ModuleOp module;
  llvm::StringMap<FuncOp> funcs;
  llvm::StringSet<> definedFuncs;
  llvm::StringMap<GlobalOp> globals;
  /// Module-scope texture and surface references (`.texref`/`.surfref`):
  /// 64-bit module variables holding a texture or surface object's handle,
  /// which the host binds (true: a surface).
  llvm::StringMap<bool> texrefs;
  /// Loads the handle held by the texture or surface reference `sym`.
  Value loadTexref(StringRef sym);

  // Per function.
  /// The function being raised, its SSA builder, the current and the entry
  /// block.
  FuncOp func;
  SSABuilder *ssa = nullptr;
  Block *cur = nullptr;
  Block *entry = nullptr;
  /// A `%r<N>` declaration: its registers get variables on first use, found
  /// by their index (no string is hashed for them).
  struct RegRange {
    /// The name before the index (`%r`), its register count and type.
    StringRef prefix;
    int64_t count;
    Type type;
    /// The entries of the registers used so far, by index (null: unused).
    std::vector<VarInfo *> regs;
  };
  /// One `{ }` scope: its variables and register ranges.
  /// The registers and parameters of one scope by name, looked up for
  /// every operand: short names without hashing a string
  /// (ShortStringMap); the entries do not move while the table grows.
  class VarTable {
  public:
    VarTable() = default;
    VarTable(const VarTable &) = delete;
    VarTable &operator=(const VarTable &) = delete;
    VarTable(VarTable &&) noexcept = default;
    VarTable &operator=(VarTable &&) noexcept = default;

    /// Returns the entry of `name`, or null.
    VarInfo *find(StringRef name) const {
      if (!named)
        return nullptr;
      VarInfo *const *v = index.find(name);
      return v ? *v : nullptr;
    }
    /// Adds `name` with `info`; returns the entry and whether it is new.
    std::pair<VarInfo *, bool> try_emplace(StringRef name, VarInfo info) {
      auto [slot, inserted] = index.insert(name, nullptr);
      if (inserted) {
        *slot = &storage.emplace_back(info);
        ++named;
      }
      return {*slot, inserted};
    }
    /// Adds an entry that has no name here (a register of a range).
    VarInfo *add(VarInfo info) { return &storage.emplace_back(info); }

  private:
    ShortStringMap<VarInfo *> index;
    /// The number of named entries.
    size_t named = 0;
    /// A deque: entries stay put, and come in chunks, not one allocation
    /// each.
    std::deque<VarInfo> storage;
  };

  struct Scope {
    VarTable vars;
    /// Register ranges (`%r<10>`), longest prefix first.
    SmallVector<RegRange, 8> ranges;

    /// Returns the range that declares `name`, if any, and the register's
    /// index in it: `name` is a prefix followed by a decimal index (no
    /// leading zero) below the range's count. Where several prefixes
    /// match, the longest wins.
    RegRange *rangeOf(StringRef name, size_t &index) {
      if (ranges.empty())
        return nullptr;
      // The index is a run of digits at the end of `name`: a prefix that
      // matches ends where that run starts or inside it.
      size_t n = name.size(), firstDigit = n;
      while (firstDigit > 0 && llvm::isDigit(name[firstDigit - 1]))
        --firstDigit;
      for (RegRange &r : ranges) {
        size_t k = r.prefix.size();
        if (k < firstDigit)
          break; // This and the remaining (shorter) prefixes end too early.
        if (k >= n)
          continue;
        // Compared in place: the prefixes are a few characters long.
        const char *a = r.prefix.data(), *p = name.data();
        size_t i = 0;
        while (i < k && a[i] == p[i])
          ++i;
        if (i != k || (n - k > 1 && p[k] == '0'))
          continue;
        uint64_t value = 0;
        for (i = k; i < n; ++i) {
          value = value * 10 + static_cast<uint64_t>(p[i] - '0');
          if (value >= static_cast<uint64_t>(r.count))
            break;
        }
        if (i != n)
          continue;
        index = static_cast<size_t>(value);
        return &r;
      }
      return nullptr;
    }
    /// Returns true if a range of this scope declares `name`.
    bool inRange(StringRef name) {
      size_t index;
      return rangeOf(name, index) != nullptr;
    }
  };
  /// The open scopes, innermost last.
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
  /// The loops that findLoops() found, by header block: an index into
  /// `loopWrites`, the regKey()s of the registers each loop may write.
  llvm::DenseMap<Block *, unsigned> loopOf;
  SmallVector<ShortStringMap<char>> loopWrites;
  /// The regKey() of each SSA variable's register (newVar()).
  SmallVector<StringRef> varKeys;
  /// The number of predecessor edges of each block, known in advance.
  llvm::DenseMap<Block *, unsigned> expectedPreds;
  /// The variables of the results (0 for vector results) and, for vector
  /// results, the variables of their components.
  llvm::SmallVector<SSABuilder::Var> retVars;
  llvm::DenseMap<unsigned, SmallVector<SSABuilder::Var>> vectorRets;
  /// The carry flag CC.CF, once an instruction uses it.
  std::optional<SSABuilder::Var> carryVar;
  /// While a guarded side-effect-free instruction is emitted: its guard.
  /// Writes then keep the old value where the guard is false (a select).
  Value guard;
  /// Writes `v` to variable `id`, honouring the guard.
  void assign(SSABuilder::Var id, Value v);
  /// The constants of the function (see constant()) and the last one.
  llvm::DenseMap<Attribute, Value> constants;
  /// The integer constants of the function by type and value (constInt()).
  llvm::DenseMap<std::pair<Type, int64_t>, Value> intConstants;
  /// The attributes of constInt()'s constants, for all functions.
  llvm::DenseMap<std::pair<Type, int64_t>, IntegerAttr> intAttrs;
  Operation *lastConstant = nullptr;
  /// A `.pragma` waiting for the next branch.
  StringRef pendingPragma;
};

} // namespace mlir::wooly::ptx

#endif // WOOLY_LIB_TARGET_PTX_IMPORTERIMPL_H
