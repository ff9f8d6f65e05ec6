//===- Lexer.h - PTX tokenizer ------------------------------*- C++ -*-===//
//
// Splits PTX ISA text into tokens. The lexer never fails: characters it does
// not understand become `Error` tokens that the parser reports with their
// location.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_TARGET_PTX_LEXER_H
#define WOOLY_TARGET_PTX_LEXER_H

#include "llvm/ADT/StringRef.h"
#include <cstdint>

namespace mlir::wooly::ptx {

/// The kinds of PTX tokens.
enum class TokenKind {
  Eof,
  Error,      ///< A character or literal the lexer could not read.
  Identifier, ///< `foo`, `%r1`, `$L__BB0_1`, `_`.
  Directive,  ///< `.version`, `.global`, `.f32`, `.shared::cta` (with the dot).
  Integer,    ///< `42`, `0x1F`, `017`, `0b101`, with optional `U` suffix.
  Float,      ///< `0f3F800000`, `0d3FF0000000000000`, `1.5`, `1e-3`.
  String,     ///< `"text"` (quotes included in the spelling).
  Comma,
  Semicolon,
  Colon,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  LParen,
  RParen,
  Plus,
  Minus,
  Bang,
  At,
  Pipe,
  Less,
  Greater,
  Equal,
  Star,
  Tilde,
};

/// Returns a printable name for `kind`, for diagnostics.
llvm::StringRef tokenKindName(TokenKind kind);

/// One token: its kind and its spelling inside the source buffer.
struct Token {
  TokenKind kind = TokenKind::Eof;
  llvm::StringRef spelling;

  /// Returns true if this token is of `k`.
  bool is(TokenKind k) const { return kind == k; }
  /// Returns true if this is an identifier or directive spelled `s`.
  bool isWord(llvm::StringRef s) const {
    return (kind == TokenKind::Identifier || kind == TokenKind::Directive) &&
           spelling == s;
  }
  /// Returns a pointer to the first character, for locations.
  const char *loc() const { return spelling.data(); }
};

/// Tokenizes one PTX buffer. Comments (`//`, `/* */`) are skipped.
class Lexer {
public:
  /// Creates a lexer over `buffer`, which must outlive the tokens.
  explicit Lexer(llvm::StringRef buffer)
      : buffer(buffer), cur(buffer.begin()) {}

  /// Returns the next token; `Eof` at the end (and forever after).
  Token next();

  /// Returns the rest of the buffer from the current position.
  llvm::StringRef remaining() const {
    return llvm::StringRef(cur, buffer.end() - cur);
  }

  /// Moves to the start of the next line (for directives such as `.loc`
  /// that end at the line end rather than at a `;`).
  void skipToEndOfLine() {
    while (cur != buffer.end() && *cur != '\n')
      ++cur;
  }

  /// Moves back to `pos`, a position inside the buffer.
  void resetTo(const char *pos) { cur = pos; }

  /// Parses the value of an `Integer` token. Returns false on overflow.
  static bool parseInteger(llvm::StringRef spelling, uint64_t &value);

  /// Parses a `Float` token: `0f`/`0d` hex forms give their exact bits
  /// (`isDouble` tells which), decimal forms are converted to a double.
  static bool parseFloat(llvm::StringRef spelling, uint64_t &bits,
                         bool &isDouble);

private:
  Token make(TokenKind kind, const char *start) {
    return Token{kind, llvm::StringRef(start, cur - start)};
  }
  void skipSpaceAndComments();
  Token lexNumber(const char *start);

  llvm::StringRef buffer;
  const char *cur;
};

} // namespace mlir::wooly::ptx

#endif // WOOLY_TARGET_PTX_LEXER_H
