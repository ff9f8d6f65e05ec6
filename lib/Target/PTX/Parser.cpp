//===- Parser.cpp - PTX text to syntax tree ------------------*- C++ -*-===//
//
// A recursive-descent parser for the PTX ISA subset that nvcc 12/13 and LLVM's
// NVPTX backend emit. It reports the first error with its location and stops.
//
//===----------------------------------------------------------------------===//

#include "PTXAst.h"
#include "Wooly/Target/PTX/Lexer.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/Twine.h"

using namespace mlir::wooly::ptx;
using llvm::StringRef;

namespace {

/// Recursive-descent PTX parser with two tokens of lookahead.
class Parser {
public:
  Parser(StringRef buffer, ErrorFn error, ModuleSink *sink)
      : lexer(buffer), error(error), sink(sink) {
    tok[0] = lexer.next();
    tok[1] = lexer.next();
  }

  bool parseModule(Module &m);

private:
  const Token &cur() const { return tok[0]; }
  const Token &peek() const { return tok[1]; }
  void consume() {
    tok[0] = tok[1];
    tok[1] = lexer.next();
  }
  /// Re-lexes from `pos` (after skipping a line-terminated directive).
  void restartAt(const char *pos) {
    lexer.resetTo(pos);
    lexer.skipToEndOfLine();
    tok[0] = lexer.next();
    tok[1] = lexer.next();
  }
  bool fail(const char *loc, const llvm::Twine &msg) {
    if (!failed)
      error(loc, msg);
    failed = true;
    return false;
  }
  bool failHere(const llvm::Twine &msg) {
    if (cur().is(TokenKind::Error))
      return fail(cur().loc(), "invalid token '" + cur().spelling + "'");
    return fail(cur().loc(), msg);
  }
  bool expect(TokenKind k, StringRef what) {
    if (!cur().is(k))
      return failHere("expected " + tokenKindName(k) + " " + what +
                      ", found '" + cur().spelling + "'");
    consume();
    return true;
  }
  /// Returns true when `next` directly follows `prev` (no space between).
  static bool adjacent(const Token &prev, const Token &next) {
    return prev.spelling.end() == next.spelling.data();
  }
  bool parseInt(int64_t &value, bool allowNegative = true);
  bool parseDirectiveLine(StringRef d, Module &m);
  bool parseVarDecl(VarDecl &d, bool allowInit);
  bool parseParamList(std::vector<VarDecl> &params);
  bool parseFunction(Module &m, StringRef linkage);
  bool parseBody(Function &f, Module &m);
  bool parseInstruction(Instruction &inst);
  bool parseOperand(Operand &op);
  bool parseAddress(Operand &op);
  bool parseInitializer(VarDecl &d);
  bool parseDims(std::vector<int64_t> &dims);
  /// Parses optional `[N][M]...` dimensions into `d.arraySize` (their
  /// product; 0 for `[]`), at most 2^32 elements.
  bool parseArraySize(VarDecl &d);
  bool skipSection();

  /// Hands a finished variable or function to the sink, or keeps it.
  bool emitGlobal(Module &m, VarDecl v) {
    if (!sink) {
      m.globals.push_back(std::move(v));
      return true;
    }
    if (!sink->onGlobal(v))
      failed = true;
    return !failed;
  }
  bool emitFunction(Module &m, std::unique_ptr<Function> f) {
    if (!sink) {
      m.functions.push_back(std::move(f));
      return true;
    }
    if (!sink->onFunction(*f))
      failed = true;
    return !failed;
  }

  Lexer lexer;
  ErrorFn error;
  ModuleSink *sink;
  Token tok[2];
  bool failed = false;
  /// Location of the last integer parseInt() read, for range errors.
  const char *lastIntLoc = nullptr;
  /// Current nesting of parseOperand().
  unsigned operandDepth = 0;
  static constexpr unsigned kMaxOperandDepth = 8;
  /// Bound on one function body (the largest real kernels have a few
  /// hundred thousand instructions), which bounds the importer's memory.
  static constexpr size_t kMaxStatements = 2000000;
};

} // namespace

bool Parser::parseInt(int64_t &value, bool allowNegative) {
  bool neg = false;
  if (allowNegative && cur().is(TokenKind::Minus)) {
    neg = true;
    consume();
  }
  if (!cur().is(TokenKind::Integer))
    return failHere("expected an integer, found '" + cur().spelling + "'");
  uint64_t v;
  if (!Lexer::parseInteger(cur().spelling, v))
    return failHere("integer '" + cur().spelling + "' is out of range");
  value = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  lastIntLoc = cur().loc();
  consume();
  return true;
}

bool Parser::skipSection() {
  // `.section .debug_info { ... }`: skipped as a balanced brace group.
  consume(); // .section
  while (!cur().is(TokenKind::LBrace) && !cur().is(TokenKind::Eof))
    consume();
  int depth = 0;
  do {
    if (cur().is(TokenKind::Eof))
      return failHere("unterminated .section");
    if (cur().is(TokenKind::LBrace))
      ++depth;
    else if (cur().is(TokenKind::RBrace))
      --depth;
    consume();
  } while (depth > 0);
  return true;
}

bool Parser::parseModule(Module &m) {
  while (!cur().is(TokenKind::Eof)) {
    if (!cur().is(TokenKind::Directive))
      return failHere("expected a directive at module scope, found '" +
                      cur().spelling + "'");
    StringRef d = cur().spelling;
    if (d == ".version") {
      consume();
      if (!cur().is(TokenKind::Float) && !cur().is(TokenKind::Integer))
        return failHere("expected a version number after .version");
      m.version = cur().spelling.str();
      consume();
    } else if (d == ".target") {
      consume();
      do {
        if (cur().is(TokenKind::Comma))
          consume();
        if (!cur().is(TokenKind::Identifier))
          return failHere("expected a target name after .target");
        m.targets.push_back(cur().spelling.str());
        consume();
      } while (cur().is(TokenKind::Comma));
    } else if (d == ".address_size") {
      consume();
      if (!parseInt(m.addressSize, false))
        return false;
      if (m.addressSize != 32 && m.addressSize != 64)
        return fail(lastIntLoc, ".address_size must be 32 or 64");
    } else if (d == ".file" || d == ".loc") {
      restartAt(cur().loc());
    } else if (d == ".section") {
      if (!skipSection())
        return false;
    } else if (d == ".visible" || d == ".extern" || d == ".weak" ||
               d == ".common") {
      StringRef linkage = d.drop_front();
      consume();
      if (cur().isWord(".entry") || cur().isWord(".func")) {
        if (!parseFunction(m, linkage))
          return false;
      } else {
        VarDecl v;
        v.linkage = linkage;
        if (!parseVarDecl(v, true))
          return false;
        if (!expect(TokenKind::Semicolon, "after a variable declaration") ||
            !emitGlobal(m, std::move(v)))
          return false;
      }
    } else if (d == ".entry" || d == ".func") {
      if (!parseFunction(m, ""))
        return false;
    } else if (d == ".global" || d == ".shared" || d == ".const" ||
               d == ".local") {
      VarDecl v;
      if (!parseVarDecl(v, true))
        return false;
      if (!expect(TokenKind::Semicolon, "after a variable declaration") ||
          !emitGlobal(m, std::move(v)))
        return false;
    } else {
      return failHere("unsupported PTX directive '" + d + "' at module scope");
    }
  }
  if (m.version.empty())
    return fail(cur().loc(), "missing .version directive");
  return !failed;
}

bool Parser::parseDims(std::vector<int64_t> &dims) {
  while (cur().is(TokenKind::LBracket)) {
    consume();
    if (cur().is(TokenKind::RBracket)) {
      dims.push_back(0);
    } else {
      int64_t n;
      if (!parseInt(n, false))
        return false;
      if (n <= 0 || n > (int64_t(1) << 32))
        return fail(lastIntLoc, "array size out of range");
      dims.push_back(n);
    }
    if (!expect(TokenKind::RBracket, "after an array size"))
      return false;
  }
  return true;
}

bool Parser::parseArraySize(VarDecl &d) {
  const char *loc = cur().loc();
  std::vector<int64_t> dims;
  if (!parseDims(dims))
    return false;
  if (dims.empty())
    return true;
  int64_t n = 1;
  for (int64_t x : dims) {
    if (x == 0) {
      n = 0;
      break;
    }
    n *= x;
    if (n > (int64_t(1) << 32))
      return fail(loc, "array too large");
  }
  d.arraySize = n;
  return true;
}

bool Parser::parseInitializer(VarDecl &d) {
  // `= value` or `= {v, v, ...}` (nested braces flattened).
  d.hasInit = true;
  int depth = 0;
  do {
    if (cur().is(TokenKind::LBrace)) {
      ++depth;
      consume();
      continue;
    }
    if (cur().is(TokenKind::RBrace)) {
      --depth;
      consume();
      if (cur().is(TokenKind::Comma) && depth > 0)
        consume();
      continue;
    }
    Operand op;
    op.loc = cur().loc();
    if (cur().is(TokenKind::Identifier)) {
      // The address of a variable or function.
      if (peek().is(TokenKind::LParen))
        return failHere("'" + cur().spelling +
                        "(...)' initializers are not supported yet");
      op.kind = Operand::Kind::Symbol;
      op.name = cur().spelling;
      consume();
      if (cur().is(TokenKind::Plus) || cur().is(TokenKind::Minus))
        return failHere("address initializers with an offset are not "
                        "supported yet");
      d.init.push_back(op);
      if (cur().is(TokenKind::Comma))
        consume();
      continue;
    }
    bool neg = false;
    if (cur().is(TokenKind::Minus)) {
      neg = true;
      consume();
    }
    if (cur().is(TokenKind::Integer)) {
      uint64_t v;
      if (!Lexer::parseInteger(cur().spelling, v))
        return failHere("integer out of range");
      op.kind = Operand::Kind::Imm;
      op.imm = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    } else if (cur().is(TokenKind::Float)) {
      op.kind = Operand::Kind::FImm;
      if (!Lexer::parseFloat(cur().spelling, op.bits, op.isDouble))
        return failHere("malformed floating-point literal");
      if (neg)
        op.bits ^= op.isDouble ? (uint64_t(1) << 63) : (uint64_t(1) << 31);
    } else {
      return failHere("expected an initializer value, found '" +
                      cur().spelling + "'");
    }
    consume();
    d.init.push_back(op);
    if (cur().is(TokenKind::Comma))
      consume();
  } while (depth > 0 && !cur().is(TokenKind::Eof));
  if (depth > 0)
    return failHere("unterminated initializer");
  return true;
}

bool Parser::parseVarDecl(VarDecl &d, bool allowInit) {
  d.loc = cur().loc();
  // State space.
  if (!cur().is(TokenKind::Directive))
    return failHere("expected a state space");
  d.space = cur().spelling.drop_front();
  consume();
  // Attributes and type, in any order: .align N, .v2/.v4, .ptr, .type.
  while (cur().is(TokenKind::Directive)) {
    StringRef w = cur().spelling.drop_front();
    if (w == "align") {
      consume();
      if (!parseInt(d.align, false))
        return false;
      if (d.align <= 0 || (d.align & (d.align - 1)) || d.align > (1 << 20))
        return fail(lastIntLoc, "alignment must be a power of two");
    } else if (w == "v2" || w == "v4" || w == "v8") {
      d.vecWidth = w[1] - '0';
      consume();
    } else if (w == "attribute") {
      // `.attribute(.managed)`: a variable of CUDA's managed memory.
      consume();
      if (!expect(TokenKind::LParen, "after '.attribute'"))
        return false;
      if (!cur().is(TokenKind::Directive) || !cur().isWord(".managed"))
        return failHere("variable attribute '" + cur().spelling +
                        "' is not supported yet (only '.managed' is)");
      consume();
      if (!expect(TokenKind::RParen, "after the variable attribute"))
        return false;
      if (d.space != "global")
        return fail(d.loc, "'.attribute(.managed)' is only allowed on "
                           "'.global' variables");
      d.managed = true;
    } else if (w == "ptr") {
      consume();
      if (cur().is(TokenKind::Directive) &&
          (cur().isWord(".global") || cur().isWord(".shared") ||
           cur().isWord(".const") || cur().isWord(".local"))) {
        d.ptrSpace = cur().spelling.drop_front();
        consume();
      }
      // `.ptr [.space] .align N`: the alignment of what the pointer points
      // to, not the parameter's own (nvcc 13 writes `.ptr .align 1` for
      // sm_100 and later).
      if (cur().is(TokenKind::Directive) && cur().isWord(".align")) {
        consume();
        if (!parseInt(d.ptrAlign, false))
          return false;
        if (d.ptrAlign <= 0 || (d.ptrAlign & (d.ptrAlign - 1)) ||
            d.ptrAlign > (1 << 20))
          return fail(lastIntLoc, "alignment must be a power of two");
      }
    } else {
      if (!d.type.empty())
        return failHere("unexpected '" + cur().spelling + "' in declaration");
      d.type = w;
      consume();
    }
  }
  if (d.type.empty())
    return failHere("expected a type in declaration, found '" + cur().spelling +
                    "'");
  if (!cur().is(TokenKind::Identifier))
    return failHere("expected a name in declaration, found '" + cur().spelling +
                    "'");
  d.name = cur().spelling;
  consume();
  if (cur().is(TokenKind::Less)) {
    consume();
    if (!parseInt(d.rangeCount, false))
      return false;
    if (d.rangeCount < 0 || d.rangeCount > (1 << 24))
      return fail(lastIntLoc, "register range out of bounds");
    if (!expect(TokenKind::Greater, "after a register count"))
      return false;
  }
  if (!parseArraySize(d))
    return false;
  if (cur().is(TokenKind::Equal)) {
    if (!allowInit)
      return failHere("initializer not allowed here");
    consume();
    if (!parseInitializer(d))
      return false;
  }
  return true;
}

bool Parser::parseParamList(std::vector<VarDecl> &params) {
  if (!expect(TokenKind::LParen, "to open a parameter list"))
    return false;
  while (!cur().is(TokenKind::RParen)) {
    VarDecl p;
    if (!parseVarDecl(p, false))
      return false;
    params.push_back(p);
    if (cur().is(TokenKind::Comma)) {
      consume();
      continue;
    }
    if (!cur().is(TokenKind::RParen))
      return failHere("expected ',' or ')' in parameter list, found '" +
                      cur().spelling + "'");
  }
  consume();
  return true;
}

bool Parser::parseFunction(Module &m, StringRef linkage) {
  auto f = std::make_unique<Function>();
  f->loc = cur().loc();
  f->isKernel = cur().isWord(".entry");
  f->linkage = linkage;
  consume();
  if (!f->isKernel && cur().is(TokenKind::LParen))
    if (!parseParamList(f->results))
      return false;
  if (!cur().is(TokenKind::Identifier))
    return failHere("expected a function name, found '" + cur().spelling + "'");
  f->name = cur().spelling;
  consume();
  if (cur().is(TokenKind::LParen))
    if (!parseParamList(f->params))
      return false;
  // Performance directives.
  while (cur().is(TokenKind::Directive)) {
    StringRef d = cur().spelling;
    const char *dloc = cur().loc();
    consume();
    if (d == ".maxntid" || d == ".reqntid") {
      auto &dims = d == ".maxntid" ? f->maxntid : f->reqntid;
      do {
        if (cur().is(TokenKind::Comma))
          consume();
        int64_t v;
        if (!parseInt(v, false))
          return false;
        if (v <= 0 || v > INT32_MAX)
          return fail(lastIntLoc, d + " values must be in [1, 2^31)");
        dims.push_back(v);
      } while (cur().is(TokenKind::Comma));
      if (dims.size() > 3)
        return fail(dloc, d + " takes at most 3 dimensions");
    } else if (d == ".minnctapersm" || d == ".maxnreg" ||
               d == ".maxnctapersm") {
      int64_t v;
      if (!parseInt(v, false))
        return false;
      if (v < 0 || v > INT32_MAX)
        return fail(lastIntLoc, d + " must be in [0, 2^31)");
      if (d == ".minnctapersm")
        f->minnctapersm = v;
      else if (d == ".maxnreg")
        f->maxnreg = v;
    } else if (d == ".noreturn") {
      f->noreturn = true;
    } else if (d == ".pragma") {
      if (!expect(TokenKind::String, "after .pragma"))
        return false;
      if (!expect(TokenKind::Semicolon, "after .pragma"))
        return false;
    } else {
      return fail(dloc, "unsupported function directive '" + d + "'");
    }
  }
  if (cur().is(TokenKind::Semicolon)) {
    consume();
  } else if (cur().is(TokenKind::LBrace)) {
    f->hasBody = true;
    if (!parseBody(*f, m))
      return false;
  } else {
    return failHere("expected '{' or ';' after function header, found '" +
                    cur().spelling + "'");
  }
  return emitFunction(m, std::move(f));
}

bool Parser::parseBody(Function &f, Module &m) {
  consume(); // {
  int depth = 1;
  while (depth > 0) {
    if (f.body.size() >= kMaxStatements)
      return failHere("function '" + f.name + "' has more than " +
                      llvm::Twine(kMaxStatements) +
                      " statements; not supported");
    const Token &t = cur();
    // Parsed in place (a Statement is large; moving it costs as much as
    // parsing it); dropped again where the text holds no statement.
    Statement &s = f.body.emplace_back();
    s.loc = t.loc();
    if (t.is(TokenKind::Eof))
      return failHere("unexpected end of file in body of '" + f.name + "'");
    if (t.is(TokenKind::LBrace)) {
      ++depth;
      consume();
      s.kind = Statement::Kind::ScopeBegin;
      continue;
    }
    if (t.is(TokenKind::RBrace)) {
      --depth;
      consume();
      if (depth > 0)
        s.kind = Statement::Kind::ScopeEnd;
      else
        f.body.pop_back();
      continue;
    }
    if (t.is(TokenKind::Semicolon)) {
      consume();
      f.body.pop_back();
      continue;
    }
    if (t.is(TokenKind::Directive)) {
      StringRef d = t.spelling;
      if (d == ".loc" || d == ".file") {
        f.body.pop_back();
        restartAt(t.loc());
        continue;
      }
      if (d == ".pragma") {
        consume();
        if (!cur().is(TokenKind::String))
          return failHere("expected a string after .pragma");
        s.kind = Statement::Kind::Pragma;
        s.label = cur().spelling.drop_front().drop_back();
        consume();
        if (!expect(TokenKind::Semicolon, "after .pragma"))
          return false;
        continue;
      }
      if (d == ".reg" || d == ".param" || d == ".local" || d == ".shared" ||
          d == ".global" || d == ".const") {
        s.kind = Statement::Kind::Decl;
        VarDecl first;
        if (!parseVarDecl(first, d != ".reg" && d != ".param"))
          return false;
        s.decls.push_back(first);
        // `.reg .b32 %a, %b<4>, %c;`
        while (cur().is(TokenKind::Comma)) {
          consume();
          VarDecl more = first;
          more.loc = cur().loc();
          more.rangeCount = -1;
          more.arraySize = -1;
          more.init.clear();
          if (!cur().is(TokenKind::Identifier))
            return failHere("expected a name in declaration");
          more.name = cur().spelling;
          consume();
          if (cur().is(TokenKind::Less)) {
            consume();
            if (!parseInt(more.rangeCount, false))
              return false;
            if (more.rangeCount < 0 || more.rangeCount > (1 << 24))
              return fail(lastIntLoc, "register range out of bounds");
            if (!expect(TokenKind::Greater, "after a register count"))
              return false;
          }
          if (!parseArraySize(more))
            return false;
          s.decls.push_back(more);
        }
        if (!expect(TokenKind::Semicolon, "after a declaration"))
          return false;
        continue;
      }
      return failHere("unsupported directive '" + d + "' in a function body");
    }
    // Label or `name: .callprototype ...`.
    if (t.is(TokenKind::Identifier) && peek().is(TokenKind::Colon)) {
      StringRef name = t.spelling;
      consume();
      consume();
      if (cur().isWord(".callprototype")) {
        consume();
        Prototype proto;
        if (cur().is(TokenKind::LParen) && !parseParamList(proto.results))
          return false;
        if (!cur().is(TokenKind::Identifier)) // `_`
          return failHere("expected '_' in .callprototype");
        consume();
        if (cur().is(TokenKind::LParen) && !parseParamList(proto.params))
          return false;
        while (cur().is(TokenKind::Directive)) // .noreturn etc.
          consume();
        if (!expect(TokenKind::Semicolon, "after .callprototype"))
          return false;
        m.prototypes.emplace_back(name, std::move(proto));
        f.body.pop_back();
        continue;
      }
      s.kind = Statement::Kind::Label;
      s.label = name;
      continue;
    }
    s.kind = Statement::Kind::Instr;
    if (!parseInstruction(s.instr))
      return false;
  }
  return true;
}

bool Parser::parseInstruction(Instruction &inst) {
  inst.loc = cur().loc();
  if (cur().is(TokenKind::At)) {
    consume();
    if (cur().is(TokenKind::Bang)) {
      inst.guardNegated = true;
      consume();
    }
    if (!cur().is(TokenKind::Identifier))
      return failHere("expected a predicate register after '@'");
    inst.guardLoc = cur().loc();
    inst.guard = cur().spelling;
    consume();
  }
  if (!cur().is(TokenKind::Identifier))
    return failHere("expected an instruction, found '" + cur().spelling + "'");
  inst.loc = cur().loc();
  inst.opcode = cur().spelling;
  Token prev = cur();
  consume();
  while (cur().is(TokenKind::Directive) && adjacent(prev, cur())) {
    inst.mods.push_back(cur().spelling.drop_front());
    prev = cur();
    consume();
  }
  if (cur().is(TokenKind::Semicolon)) {
    consume();
    return true;
  }
  while (true) {
    // Parsed in place: an operand is large enough that moving it shows.
    if (!parseOperand(inst.operands.emplace_back()))
      return false;
    if (cur().is(TokenKind::Comma)) {
      consume();
      continue;
    }
    if (cur().is(TokenKind::Semicolon)) {
      consume();
      return true;
    }
    return failHere("expected ',' or ';' after an operand, found '" +
                    cur().spelling + "'");
  }
}

bool Parser::parseAddress(Operand &op) {
  // [reg], [reg+imm], [sym], [sym+imm], [imm], [reg+-imm], [reg-imm]
  consume(); // [
  op.kind = Operand::Kind::Address;
  if (cur().is(TokenKind::Identifier)) {
    op.name = cur().spelling;
    consume();
    if (cur().is(TokenKind::Plus) || cur().is(TokenKind::Minus)) {
      bool neg = cur().is(TokenKind::Minus);
      consume();
      int64_t off;
      if (!parseInt(off))
        return false;
      op.imm = neg ? -off : off;
    }
    // `[tex, {x, y}]`: a texture or surface and its coordinates.
    if (cur().is(TokenKind::Comma)) {
      consume();
      Operand coords;
      if (!cur().is(TokenKind::LBrace))
        return failHere("expected '{' to open the coordinates of a texture "
                        "or surface access");
      if (!parseOperand(coords))
        return false;
      op.elems.push_back(std::move(coords));
    }
  } else {
    if (!parseInt(op.imm))
      return false;
  }
  return expect(TokenKind::RBracket, "to close an address");
}

bool Parser::parseOperand(Operand &op) {
  op.loc = cur().loc();
  // Operands nest only a little in PTX (`{a, b}` inside a call list, `p|q`,
  // `!p`); a limit keeps hostile input from exhausting the stack.
  if (operandDepth >= kMaxOperandDepth)
    return failHere("operand nesting too deep");
  ++operandDepth;
  llvm::scope_exit leave([&] { --operandDepth; });
  const Token &t = cur();
  if (t.is(TokenKind::LBracket))
    return parseAddress(op);
  if (t.is(TokenKind::LBrace) || t.is(TokenKind::LParen)) {
    bool brace = t.is(TokenKind::LBrace);
    op.kind = brace ? Operand::Kind::Vector : Operand::Kind::List;
    consume();
    TokenKind close = brace ? TokenKind::RBrace : TokenKind::RParen;
    while (!cur().is(close)) {
      if (!parseOperand(op.elems.emplace_back()))
        return false;
      if (cur().is(TokenKind::Comma))
        consume();
      else if (!cur().is(close))
        return failHere("expected ',' or '" + StringRef(brace ? "}" : ")") +
                        "' in operand list, found '" + cur().spelling + "'");
    }
    consume();
    return true;
  }
  if (t.is(TokenKind::Bang)) {
    consume();
    if (!parseOperand(op))
      return false;
    if (op.kind != Operand::Kind::Reg && op.kind != Operand::Kind::Symbol)
      return fail(op.loc, "'!' applies to a predicate register");
    op.negated = !op.negated;
    return true;
  }
  if (t.is(TokenKind::Minus) || t.is(TokenKind::Integer) ||
      t.is(TokenKind::Float)) {
    bool neg = false;
    if (t.is(TokenKind::Minus)) {
      neg = true;
      consume();
    }
    if (cur().is(TokenKind::Integer)) {
      uint64_t v;
      if (!Lexer::parseInteger(cur().spelling, v))
        return failHere("integer '" + cur().spelling + "' is out of range");
      op.kind = Operand::Kind::Imm;
      op.imm = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
      consume();
      return true;
    }
    if (cur().is(TokenKind::Float)) {
      op.kind = Operand::Kind::FImm;
      if (!Lexer::parseFloat(cur().spelling, op.bits, op.isDouble))
        return failHere("malformed floating-point literal '" + cur().spelling +
                        "'");
      if (neg)
        op.bits ^= op.isDouble ? (uint64_t(1) << 63) : (uint64_t(1) << 31);
      consume();
      return true;
    }
    return failHere("expected a number after '-'");
  }
  if (t.is(TokenKind::Identifier)) {
    op.name = t.spelling;
    Token prev = t;
    consume();
    if (op.name == "_") {
      op.kind = Operand::Kind::Sink;
    } else {
      op.kind =
          op.name.starts_with("%") ? Operand::Kind::Reg : Operand::Kind::Symbol;
      // Components: `%tid.x`, `v.w` of a vector register.
      if (cur().is(TokenKind::Directive) && adjacent(prev, cur()) &&
          (op.kind == Operand::Kind::Reg || cur().spelling.size() == 2)) {
        op.name =
            StringRef(op.name.data(), cur().spelling.end() - op.name.data());
        consume();
      }
      // `sym + 4` / `reg + 4` as an operand.
      if (cur().is(TokenKind::Plus)) {
        consume();
        if (!parseInt(op.imm))
          return false;
      }
    }
    if (cur().is(TokenKind::Pipe)) {
      consume();
      Operand second;
      if (!parseOperand(second))
        return false;
      Operand pair;
      pair.kind = Operand::Kind::Pair;
      pair.loc = op.loc;
      pair.elems.push_back(std::move(op));
      pair.elems.push_back(std::move(second));
      op = std::move(pair);
    }
    return true;
  }
  return failHere("expected an operand, found '" + t.spelling + "'");
}

bool mlir::wooly::ptx::parseModule(StringRef buffer, Module &module,
                                   ErrorFn error, ModuleSink *sink) {
  Parser p(buffer, error, sink);
  return p.parseModule(module);
}
