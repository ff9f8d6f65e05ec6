//===- Lexer.cpp - PTX tokenizer ----------------------------*- C++ -*-===//
//
// A hand-written, allocation-free tokenizer for PTX text.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Target/PTX/Lexer.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"

#include <cstring>

using namespace mlir::wooly::ptx;

llvm::StringRef mlir::wooly::ptx::tokenKindName(TokenKind kind) {
  switch (kind) {
  case TokenKind::Eof:
    return "end of file";
  case TokenKind::Error:
    return "invalid character";
  case TokenKind::Identifier:
    return "identifier";
  case TokenKind::Directive:
    return "directive";
  case TokenKind::Integer:
    return "integer";
  case TokenKind::Float:
    return "floating-point literal";
  case TokenKind::String:
    return "string";
  case TokenKind::Comma:
    return "','";
  case TokenKind::Semicolon:
    return "';'";
  case TokenKind::Colon:
    return "':'";
  case TokenKind::LBracket:
    return "'['";
  case TokenKind::RBracket:
    return "']'";
  case TokenKind::LBrace:
    return "'{'";
  case TokenKind::RBrace:
    return "'}'";
  case TokenKind::LParen:
    return "'('";
  case TokenKind::RParen:
    return "')'";
  case TokenKind::Plus:
    return "'+'";
  case TokenKind::Minus:
    return "'-'";
  case TokenKind::Bang:
    return "'!'";
  case TokenKind::At:
    return "'@'";
  case TokenKind::Pipe:
    return "'|'";
  case TokenKind::Less:
    return "'<'";
  case TokenKind::Greater:
    return "'>'";
  case TokenKind::Equal:
    return "'='";
  case TokenKind::Star:
    return "'*'";
  case TokenKind::Tilde:
    return "'~'";
  }
  return "token";
}

namespace {
/// Character classes, one table lookup per character.
enum CharClass : uint8_t {
  kSpace = 1,      ///< ' ', \t, \n, \r, \f, \v
  kIdentStart = 2, ///< letters, '_', '$', '%'
  kIdentChar = 4,  ///< letters, digits, '_', '$'
};
struct CharTable {
  uint8_t cls[256] = {};
  constexpr CharTable() {
    for (int c : {' ', '\t', '\n', '\r', '\f', '\v'})
      cls[c] |= kSpace;
    for (int c = 0; c < 256; ++c) {
      bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      bool digit = c >= '0' && c <= '9';
      if (alpha || c == '_' || c == '$' || c == '%')
        cls[c] |= kIdentStart;
      if (alpha || digit || c == '_' || c == '$')
        cls[c] |= kIdentChar;
    }
  }
};
constexpr CharTable kChars;
} // namespace

static bool isIdentStart(char c) {
  return kChars.cls[static_cast<unsigned char>(c)] & kIdentStart;
}
static bool isIdentChar(char c) {
  return kChars.cls[static_cast<unsigned char>(c)] & kIdentChar;
}
static bool isSpace(char c) {
  return kChars.cls[static_cast<unsigned char>(c)] & kSpace;
}

void Lexer::skipSpaceAndComments() {
  const char *end = buffer.end();
  while (cur != end) {
    char c = *cur;
    if (isSpace(c)) {
      ++cur;
    } else if (c == '/' && cur + 1 != end && cur[1] == '/') {
      const void *nl = std::memchr(cur, '\n', end - cur);
      cur = nl ? static_cast<const char *>(nl) : end;
    } else if (c == '/' && cur + 1 != end && cur[1] == '*') {
      cur += 2;
      while (cur != end && !(*cur == '*' && cur + 1 != end && cur[1] == '/'))
        ++cur;
      cur = cur == end ? end : cur + 2;
    } else {
      return;
    }
  }
}

Token Lexer::lexNumber(const char *start) {
  const char *end = buffer.end();
  // Hexadecimal float bit patterns: 0f + 8 hex digits, 0d + 16 hex digits.
  if (*cur == '0' && cur + 1 != end &&
      (cur[1] == 'f' || cur[1] == 'F' || cur[1] == 'd' || cur[1] == 'D')) {
    cur += 2;
    while (cur != end && llvm::isHexDigit(*cur))
      ++cur;
    return make(TokenKind::Float, start);
  }
  if (*cur == '0' && cur + 1 != end && (cur[1] == 'x' || cur[1] == 'X')) {
    cur += 2;
    while (cur != end && llvm::isHexDigit(*cur))
      ++cur;
  } else if (*cur == '0' && cur + 1 != end &&
             (cur[1] == 'b' || cur[1] == 'B')) {
    cur += 2;
    while (cur != end && (*cur == '0' || *cur == '1'))
      ++cur;
  } else {
    while (cur != end && llvm::isDigit(*cur))
      ++cur;
    bool isFloat = false;
    if (cur != end && *cur == '.' && cur + 1 != end && llvm::isDigit(cur[1])) {
      isFloat = true;
      ++cur;
      while (cur != end && llvm::isDigit(*cur))
        ++cur;
    }
    if (cur != end && (*cur == 'e' || *cur == 'E')) {
      const char *p = cur + 1;
      if (p != end && (*p == '+' || *p == '-'))
        ++p;
      if (p != end && llvm::isDigit(*p)) {
        isFloat = true;
        cur = p;
        while (cur != end && llvm::isDigit(*cur))
          ++cur;
      }
    }
    if (isFloat)
      return make(TokenKind::Float, start);
  }
  if (cur != end && (*cur == 'U' || *cur == 'u'))
    ++cur;
  if (cur != end && isIdentChar(*cur)) {
    // `12abc`: not a number.
    while (cur != end && isIdentChar(*cur))
      ++cur;
    return make(TokenKind::Error, start);
  }
  return make(TokenKind::Integer, start);
}

Token Lexer::next() {
  skipSpaceAndComments();
  const char *start = cur;
  const char *end = buffer.end();
  if (cur == end)
    return make(TokenKind::Eof, start);
  char c = *cur++;
  switch (c) {
  case ',':
    return make(TokenKind::Comma, start);
  case ';':
    return make(TokenKind::Semicolon, start);
  case ':':
    return make(TokenKind::Colon, start);
  case '[':
    return make(TokenKind::LBracket, start);
  case ']':
    return make(TokenKind::RBracket, start);
  case '{':
    return make(TokenKind::LBrace, start);
  case '}':
    return make(TokenKind::RBrace, start);
  case '(':
    return make(TokenKind::LParen, start);
  case ')':
    return make(TokenKind::RParen, start);
  case '+':
    return make(TokenKind::Plus, start);
  case '-':
    return make(TokenKind::Minus, start);
  case '!':
    return make(TokenKind::Bang, start);
  case '@':
    return make(TokenKind::At, start);
  case '|':
    return make(TokenKind::Pipe, start);
  case '<':
    return make(TokenKind::Less, start);
  case '>':
    return make(TokenKind::Greater, start);
  case '=':
    return make(TokenKind::Equal, start);
  case '*':
    return make(TokenKind::Star, start);
  case '~':
    return make(TokenKind::Tilde, start);
  case '"': {
    while (cur != end && *cur != '"' && *cur != '\n') {
      if (*cur == '\\' && cur + 1 != end)
        ++cur;
      ++cur;
    }
    if (cur == end || *cur != '"')
      return make(TokenKind::Error, start);
    ++cur;
    return make(TokenKind::String, start);
  }
  case '.': {
    // A directive or modifier; `::` joins qualified parts (`.shared::cta`).
    if (cur == end || !(isIdentChar(*cur)))
      return make(TokenKind::Error, start);
    while (cur != end) {
      if (isIdentChar(*cur))
        ++cur;
      else if (*cur == ':' && cur + 1 != end && cur[1] == ':' &&
               cur + 2 != end && isIdentChar(cur[2]))
        cur += 2;
      else
        break;
    }
    return make(TokenKind::Directive, start);
  }
  default:
    break;
  }
  if (llvm::isDigit(c)) {
    --cur;
    return lexNumber(start);
  }
  if (isIdentStart(c)) {
    while (cur != end && isIdentChar(*cur))
      ++cur;
    if (c == '%' && cur == start + 1)
      return make(TokenKind::Error, start);
    return make(TokenKind::Identifier, start);
  }
  return make(TokenKind::Error, start);
}

bool Lexer::parseInteger(llvm::StringRef s, uint64_t &value) {
  if (s.ends_with("U") || s.ends_with("u"))
    s = s.drop_back();
  unsigned radix = 10;
  if (s.starts_with("0x") || s.starts_with("0X")) {
    radix = 16;
    s = s.drop_front(2);
  } else if (s.starts_with("0b") || s.starts_with("0B")) {
    radix = 2;
    s = s.drop_front(2);
  } else if (s.size() > 1 && s[0] == '0') {
    radix = 8;
    s = s.drop_front();
  }
  if (s.empty())
    return false;
  return !s.getAsInteger(radix, value);
}

bool Lexer::parseFloat(llvm::StringRef s, uint64_t &bits, bool &isDouble) {
  if (s.size() > 2 && s[0] == '0' &&
      (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')) {
    isDouble = s[1] == 'd' || s[1] == 'D';
    llvm::StringRef digits = s.drop_front(2);
    if (digits.size() != (isDouble ? 16u : 8u))
      return false;
    return !digits.getAsInteger(16, bits);
  }
  isDouble = true;
  llvm::APFloat value(llvm::APFloat::IEEEdouble());
  auto status = value.convertFromString(s, llvm::APFloat::rmNearestTiesToEven);
  if (!status) {
    llvm::consumeError(status.takeError());
    return false;
  }
  bits = value.bitcastToAPInt().getZExtValue();
  return true;
}
