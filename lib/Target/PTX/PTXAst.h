//===- PTXAst.h - Parsed form of a PTX module --------------*- C++ -*-===//
//
// The syntax tree the PTX parser builds and the importer raises to Wooly IR.
// Spellings point into the source buffer; `loc` pointers give locations.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_TARGET_PTX_PTXAST_H
#define WOOLY_LIB_TARGET_PTX_PTXAST_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SourceMgr.h"
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::wooly::ptx {

/// One instruction operand.
struct Operand {
  enum class Kind {
    Reg,     ///< `%r1`, `!%p` (negated), `%tid.x`.
    Imm,     ///< integer immediate (already negated when written `-3`).
    FImm,    ///< float immediate: `bits`, `isDouble`.
    Symbol,  ///< a variable, function or label name.
    Address, ///< `[base+offset]`; `name` empty for `[imm]`.
    Vector,  ///< `{a, b}`.
    List,    ///< `(a, b)` in calls.
    Pair,    ///< `p|q` (two destinations).
    Sink,    ///< `_`.
  };
  Kind kind = Kind::Imm;
  llvm::StringRef name;
  bool negated = false;
  int64_t imm = 0;
  uint64_t bits = 0;
  bool isDouble = false;
  const char *loc = nullptr;
  std::vector<Operand> elems;

  Operand() = default;
  Operand(const Operand &) = default;
  Operand &operator=(const Operand &) = default;
  // noexcept moves keep std::vector from copying on growth.
  Operand(Operand &&) noexcept = default;
  Operand &operator=(Operand &&) noexcept = default;
};

/// A PTX instruction such as `@!%p1 ld.global.v2.f32 {%f1, %f2}, [%rd1+8];`.
struct Instruction {
  llvm::StringRef guard; ///< Guard predicate register, empty if none.
  bool guardNegated = false;
  const char *guardLoc = nullptr;
  llvm::StringRef opcode;                     ///< `ld`
  llvm::SmallVector<llvm::StringRef, 6> mods; ///< `global`, `v2`, `f32`
  llvm::SmallVector<Operand, 3> operands;
  const char *loc = nullptr;

  Instruction() = default;
  Instruction(const Instruction &) = default;
  Instruction &operator=(const Instruction &) = default;
  Instruction(Instruction &&) noexcept = default;
  Instruction &operator=(Instruction &&) noexcept = default;

  /// Returns true if modifier `m` is present.
  bool has(llvm::StringRef m) const {
    for (llvm::StringRef x : mods)
      if (x == m)
        return true;
    return false;
  }
};

/// A declared variable: `.reg`, `.param`, or a state-space variable.
struct VarDecl {
  llvm::StringRef space;    ///< `reg`, `param`, `local`, `shared`, ...
  llvm::StringRef type;     ///< `u32`, `b8`, `pred`, ...
  llvm::StringRef name;     ///< base name
  int64_t align = 0;        ///< 0 = natural
  int64_t vecWidth = 1;     ///< `.v2`/`.v4`
  int64_t arraySize = -1;   ///< -1: scalar, 0: `[]`, N: `[N]` (dims multiplied)
  int64_t rangeCount = -1;  ///< `%r<N>`: N registers `%r0 .. %r{N-1}`
  llvm::StringRef linkage;  ///< `visible`, `extern`, `weak` or empty
  llvm::StringRef ptrSpace; ///< `.ptr .global` on kernel params
  int64_t ptrAlign = 0;     ///< `.ptr .align N`: the pointee's alignment
  std::vector<Operand> init; ///< initializer elements
  bool hasInit = false;
  bool managed = false; ///< `.attribute(.managed)`
  const char *loc = nullptr;
};

/// A statement inside a function body.
struct Statement {
  enum class Kind { Instr, Label, Decl, ScopeBegin, ScopeEnd, Pragma };
  Kind kind = Kind::Instr;
  Instruction instr;          ///< for Instr
  llvm::StringRef label;      ///< for Label; pragma text for Pragma
  std::vector<VarDecl> decls; ///< for Decl
  const char *loc = nullptr;

  Statement() = default;
  Statement(const Statement &) = default;
  Statement &operator=(const Statement &) = default;
  Statement(Statement &&) noexcept = default;
  Statement &operator=(Statement &&) noexcept = default;
};

/// The statements of a function body, in chunks of 64: a statement stays at
/// its address while the list grows (the importer keys labels by it), and
/// one allocation serves 64 statements (a std::deque allocates one per
/// statement of this size).
class StatementList {
  static constexpr size_t kChunk = 64;

public:
  template <typename List, typename T> class Iterator {
  public:
    Iterator(List *list, size_t i) : list(list), i(i) {}
    T &operator*() const { return (*list)[i]; }
    T *operator->() const { return &(*list)[i]; }
    Iterator &operator++() {
      ++i;
      return *this;
    }
    bool operator==(const Iterator &o) const { return i == o.i; }
    bool operator!=(const Iterator &o) const { return i != o.i; }

  private:
    List *list;
    size_t i;
  };
  using iterator = Iterator<StatementList, Statement>;
  using const_iterator = Iterator<const StatementList, const Statement>;

  /// Appends a default statement and returns it.
  Statement &emplace_back() {
    if (count == chunks.size() * kChunk)
      chunks.push_back(std::make_unique<Statement[]>(kChunk));
    ++count;
    return back();
  }
  /// Drops the last statement (its slot is reused, so it is reset).
  void pop_back() {
    back() = Statement();
    --count;
  }
  Statement &back() { return (*this)[count - 1]; }
  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  Statement &operator[](size_t i) { return chunks[i / kChunk][i % kChunk]; }
  const Statement &operator[](size_t i) const {
    return chunks[i / kChunk][i % kChunk];
  }
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, count}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, count}; }

private:
  std::vector<std::unique_ptr<Statement[]>> chunks;
  size_t count = 0;
};

/// `.callprototype` signature.
struct Prototype {
  std::vector<VarDecl> results, params;
};

/// A `.entry` or `.func`, defined or declared.
struct Function {
  bool isKernel = false;
  llvm::StringRef name;
  llvm::StringRef linkage;
  std::vector<VarDecl> results, params;
  std::vector<int64_t> maxntid, reqntid;
  std::optional<int64_t> minnctapersm, maxnreg;
  bool noreturn = false;
  bool hasBody = false;
  StatementList body;
  const char *loc = nullptr;
};

/// A parsed PTX module.
struct Module {
  std::string version;
  std::vector<std::string> targets;
  int64_t addressSize = 64;
  std::vector<VarDecl> globals;
  std::vector<std::unique_ptr<Function>> functions;
  /// Prototypes by label name (function-local labels are unique enough).
  std::vector<std::pair<llvm::StringRef, Prototype>> prototypes;
};

/// Receives parse errors: the location and the message.
using ErrorFn = llvm::function_ref<void(const char *loc, const llvm::Twine &)>;

/// Receives module-scope variables and functions as soon as they are parsed,
/// so that a consumer can raise a function and free its syntax tree before
/// the next one is read.
class ModuleSink {
public:
  virtual ~ModuleSink() = default;
  /// Called for each module-scope variable; returns false to stop (after
  /// reporting an error).
  virtual bool onGlobal(const VarDecl &var) = 0;
  /// Called for each function declaration or definition; returns false to
  /// stop (after reporting an error).
  virtual bool onFunction(Function &function) = 0;
};

/// Parses `buffer` into `module`. Returns false after reporting the first
/// error through `error`. With a `sink`, variables and functions go to it
/// instead of `module.globals` and `module.functions`.
bool parseModule(llvm::StringRef buffer, Module &module, ErrorFn error,
                 ModuleSink *sink = nullptr);

} // namespace mlir::wooly::ptx

#endif // WOOLY_LIB_TARGET_PTX_PTXAST_H
