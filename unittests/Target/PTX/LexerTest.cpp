//===- LexerTest.cpp - Tests of the PTX tokenizer ----------*- C++ -*-===//
//
// Token kinds, spellings and literal values produced by ptx::Lexer.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Target/PTX/Lexer.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/bit.h"
#include "gtest/gtest.h"

#include <cstring>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

using namespace mlir::wooly::ptx;

namespace mlir::wooly::ptx {
/// Prints token kinds by name in test failures.
static void PrintTo(TokenKind kind, std::ostream *os) {
  *os << tokenKindName(kind).str();
}
} // namespace mlir::wooly::ptx

namespace {

/// A token kind and spelling, comparable in expectations.
using KS = std::pair<TokenKind, std::string>;

/// Lexes all of `text` up to (excluding) the first Eof.
std::vector<KS> lexAll(llvm::StringRef text) {
  Lexer lexer(text);
  std::vector<KS> tokens;
  for (unsigned i = 0; i < 10000; ++i) {
    Token t = lexer.next();
    if (t.is(TokenKind::Eof))
      return tokens;
    tokens.emplace_back(t.kind, t.spelling.str());
  }
  ADD_FAILURE() << "lexer did not reach Eof";
  return tokens;
}

/// Lexes `text`, which must be exactly one token, and returns it.
Token lexOne(llvm::StringRef text) {
  Lexer lexer(text);
  Token t = lexer.next();
  EXPECT_TRUE(lexer.next().is(TokenKind::Eof))
      << "more than one token in '" << text.str() << "'";
  return t;
}

/// Returns the value of integer literal `text`, which must lex as one token.
std::pair<bool, uint64_t> intValue(llvm::StringRef text) {
  Token t = lexOne(text);
  EXPECT_EQ(t.kind, TokenKind::Integer) << text.str();
  uint64_t value = 0;
  bool ok = Lexer::parseInteger(t.spelling, value);
  return {ok, value};
}

TEST(PTXLexerTest, Punctuation) {
  std::vector<KS> expected = {
      {TokenKind::Comma, ","},    {TokenKind::Semicolon, ";"},
      {TokenKind::Colon, ":"},    {TokenKind::LBracket, "["},
      {TokenKind::RBracket, "]"}, {TokenKind::LBrace, "{"},
      {TokenKind::RBrace, "}"},   {TokenKind::LParen, "("},
      {TokenKind::RParen, ")"},   {TokenKind::Plus, "+"},
      {TokenKind::Minus, "-"},    {TokenKind::Bang, "!"},
      {TokenKind::At, "@"},       {TokenKind::Pipe, "|"},
      {TokenKind::Less, "<"},     {TokenKind::Greater, ">"},
      {TokenKind::Equal, "="},    {TokenKind::Star, "*"},
      {TokenKind::Tilde, "~"},
  };
  EXPECT_EQ(lexAll(",;:[]{}()+-!@|<>=*~"), expected);
  // The same with whitespace of every kind in between.
  EXPECT_EQ(lexAll(" ,\t;\n:\r[\f]\v{ } ( ) + - ! @ | < > = * ~ "), expected);
}

TEST(PTXLexerTest, EveryKindHasAName) {
  for (int k = static_cast<int>(TokenKind::Eof);
       k <= static_cast<int>(TokenKind::Tilde); ++k)
    EXPECT_FALSE(tokenKindName(static_cast<TokenKind>(k)).empty()) << k;
  EXPECT_EQ(tokenKindName(TokenKind::Semicolon), "';'");
  EXPECT_EQ(tokenKindName(TokenKind::Eof), "end of file");
}

TEST(PTXLexerTest, Identifiers) {
  for (const char *s : {"foo", "_", "_Z3fooPf", "ld", "sm_80", "$str",
                        "$L__BB0_1", "%r1", "%rd42", "%p", "%SP", "%f$1"}) {
    Token t = lexOne(s);
    EXPECT_EQ(t.kind, TokenKind::Identifier) << s;
    EXPECT_EQ(t.spelling, s);
  }
}

TEST(PTXLexerTest, Directives) {
  for (const char *s :
       {".version", ".global", ".f32", ".v4", ".shared::cta", ".L2::cache_hint",
        ".shared::cluster", ".L1::no_allocate", ".a::b::c", ".b8", ".x"}) {
    Token t = lexOne(s);
    EXPECT_EQ(t.kind, TokenKind::Directive) << s;
    EXPECT_EQ(t.spelling, s);
  }
}

TEST(PTXLexerTest, DirectiveQualifierNeedsIdentifierAfterColons) {
  // `::` joins only when an identifier character follows.
  EXPECT_EQ(lexAll(".shared::"),
            (std::vector<KS>{{TokenKind::Directive, ".shared"},
                             {TokenKind::Colon, ":"},
                             {TokenKind::Colon, ":"}}));
  EXPECT_EQ(lexAll(".a:b"), (std::vector<KS>{{TokenKind::Directive, ".a"},
                                             {TokenKind::Colon, ":"},
                                             {TokenKind::Identifier, "b"}}));
}

TEST(PTXLexerTest, InstructionWithModifiers) {
  EXPECT_EQ(lexAll("cp.async.ca.shared::cta.global [%r1], [%rd2+16], 16;"),
            (std::vector<KS>{{TokenKind::Identifier, "cp"},
                             {TokenKind::Directive, ".async"},
                             {TokenKind::Directive, ".ca"},
                             {TokenKind::Directive, ".shared::cta"},
                             {TokenKind::Directive, ".global"},
                             {TokenKind::LBracket, "["},
                             {TokenKind::Identifier, "%r1"},
                             {TokenKind::RBracket, "]"},
                             {TokenKind::Comma, ","},
                             {TokenKind::LBracket, "["},
                             {TokenKind::Identifier, "%rd2"},
                             {TokenKind::Plus, "+"},
                             {TokenKind::Integer, "16"},
                             {TokenKind::RBracket, "]"},
                             {TokenKind::Comma, ","},
                             {TokenKind::Integer, "16"},
                             {TokenKind::Semicolon, ";"}}));
}

TEST(PTXLexerTest, SpecialRegisterComponent) {
  // `%tid.x` is a register followed by a `.x` modifier.
  EXPECT_EQ(lexAll("mov.u32 %r1, %tid.x;"),
            (std::vector<KS>{{TokenKind::Identifier, "mov"},
                             {TokenKind::Directive, ".u32"},
                             {TokenKind::Identifier, "%r1"},
                             {TokenKind::Comma, ","},
                             {TokenKind::Identifier, "%tid"},
                             {TokenKind::Directive, ".x"},
                             {TokenKind::Semicolon, ";"}}));
}

TEST(PTXLexerTest, GuardAndLabel) {
  EXPECT_EQ(lexAll("$L__BB0_1:\n\t@!%p1 bra \t$L__BB0_1;"),
            (std::vector<KS>{{TokenKind::Identifier, "$L__BB0_1"},
                             {TokenKind::Colon, ":"},
                             {TokenKind::At, "@"},
                             {TokenKind::Bang, "!"},
                             {TokenKind::Identifier, "%p1"},
                             {TokenKind::Identifier, "bra"},
                             {TokenKind::Identifier, "$L__BB0_1"},
                             {TokenKind::Semicolon, ";"}}));
}

TEST(PTXLexerTest, RegisterRange) {
  EXPECT_EQ(lexAll(".reg .b32 %r<27>;"),
            (std::vector<KS>{{TokenKind::Directive, ".reg"},
                             {TokenKind::Directive, ".b32"},
                             {TokenKind::Identifier, "%r"},
                             {TokenKind::Less, "<"},
                             {TokenKind::Integer, "27"},
                             {TokenKind::Greater, ">"},
                             {TokenKind::Semicolon, ";"}}));
}

TEST(PTXLexerTest, DecimalIntegers) {
  EXPECT_EQ(intValue("0"), std::make_pair(true, uint64_t(0)));
  EXPECT_EQ(intValue("42"), std::make_pair(true, uint64_t(42)));
  EXPECT_EQ(intValue("18446744073709551615"), std::make_pair(true, UINT64_MAX));
}

TEST(PTXLexerTest, HexIntegers) {
  EXPECT_EQ(intValue("0x1F"), std::make_pair(true, uint64_t(31)));
  EXPECT_EQ(intValue("0XfF"), std::make_pair(true, uint64_t(255)));
  EXPECT_EQ(intValue("0xFFFFFFFFFFFFFFFF"), std::make_pair(true, UINT64_MAX));
  // `0x` with no digits lexes as an integer but has no value.
  EXPECT_FALSE(intValue("0x").first);
}

TEST(PTXLexerTest, OctalIntegers) {
  EXPECT_EQ(intValue("017"), std::make_pair(true, uint64_t(15)));
  EXPECT_EQ(intValue("00"), std::make_pair(true, uint64_t(0)));
  EXPECT_EQ(intValue("01777777777777777777777"),
            std::make_pair(true, UINT64_MAX));
  // 8 is not an octal digit.
  EXPECT_FALSE(intValue("08").first);
}

TEST(PTXLexerTest, BinaryIntegers) {
  // PTX binary literals: `0b` / `0B` followed by 0s and 1s.
  EXPECT_EQ(intValue("0b101"), std::make_pair(true, uint64_t(5)));
  EXPECT_EQ(intValue("0B11"), std::make_pair(true, uint64_t(3)));
  EXPECT_EQ(intValue("0b101U"), std::make_pair(true, uint64_t(5)));
}

TEST(PTXLexerTest, BinaryValuesParse) {
  // parseInteger itself understands the binary form, whatever the lexer does.
  uint64_t v = 0;
  EXPECT_TRUE(Lexer::parseInteger("0b101", v));
  EXPECT_EQ(v, 5u);
  EXPECT_TRUE(Lexer::parseInteger("0B" + std::string(64, '1'), v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_FALSE(Lexer::parseInteger("0b" + std::string(65, '1'), v));
  EXPECT_FALSE(Lexer::parseInteger("0b2", v));
  EXPECT_FALSE(Lexer::parseInteger("0b", v));
}

TEST(PTXLexerTest, UnsignedSuffix) {
  EXPECT_EQ(intValue("42U"), std::make_pair(true, uint64_t(42)));
  EXPECT_EQ(intValue("42u"), std::make_pair(true, uint64_t(42)));
  EXPECT_EQ(intValue("0x10U"), std::make_pair(true, uint64_t(16)));
  EXPECT_EQ(intValue("010U"), std::make_pair(true, uint64_t(8)));
  EXPECT_EQ(intValue("0U"), std::make_pair(true, uint64_t(0)));
  // Only one suffix.
  EXPECT_EQ(lexOne("42UU").kind, TokenKind::Error);
}

TEST(PTXLexerTest, IntegerOverflow) {
  EXPECT_FALSE(intValue("18446744073709551616").first);
  EXPECT_FALSE(intValue("0x10000000000000000").first);
  EXPECT_FALSE(intValue("99999999999999999999999999").first);
  EXPECT_FALSE(intValue("02000000000000000000000").first);
}

TEST(PTXLexerTest, NegativeNumberIsMinusThenInteger) {
  EXPECT_EQ(lexAll("-1"), (std::vector<KS>{{TokenKind::Minus, "-"},
                                           {TokenKind::Integer, "1"}}));
}

TEST(PTXLexerTest, HexFloats) {
  uint64_t bits = 0;
  bool isDouble = true;
  Token f = lexOne("0f3F800000");
  ASSERT_EQ(f.kind, TokenKind::Float);
  EXPECT_EQ(f.spelling, "0f3F800000");
  ASSERT_TRUE(Lexer::parseFloat(f.spelling, bits, isDouble));
  EXPECT_FALSE(isDouble);
  EXPECT_EQ(bits, 0x3F800000u);

  // Bit patterns are taken as they are: a NaN payload and -0.0.
  ASSERT_TRUE(Lexer::parseFloat(lexOne("0F7FC00001").spelling, bits, isDouble));
  EXPECT_FALSE(isDouble);
  EXPECT_EQ(bits, 0x7FC00001u);
  ASSERT_TRUE(Lexer::parseFloat(lexOne("0f80000000").spelling, bits, isDouble));
  EXPECT_EQ(bits, 0x80000000u);

  Token d = lexOne("0d3FF0000000000000");
  ASSERT_EQ(d.kind, TokenKind::Float);
  ASSERT_TRUE(Lexer::parseFloat(d.spelling, bits, isDouble));
  EXPECT_TRUE(isDouble);
  EXPECT_EQ(bits, 0x3FF0000000000000u);
  ASSERT_TRUE(
      Lexer::parseFloat(lexOne("0DFFF8000000000123").spelling, bits, isDouble));
  EXPECT_TRUE(isDouble);
  EXPECT_EQ(bits, 0xFFF8000000000123u);
}

TEST(PTXLexerTest, HexFloatsNeedExactDigitCount) {
  uint64_t bits = 0;
  bool isDouble = false;
  for (const char *s :
       {"0f3F80", "0f3F8000000", "0d3FF0", "0d3FF00000000000000", "0f", "0d"}) {
    Token t = lexOne(s);
    EXPECT_EQ(t.kind, TokenKind::Float) << s;
    EXPECT_FALSE(Lexer::parseFloat(t.spelling, bits, isDouble)) << s;
  }
}

TEST(PTXLexerTest, DecimalFloats) {
  uint64_t bits = 0;
  bool isDouble = false;
  struct Case {
    const char *text;
    double value;
  };
  for (Case c : {Case{"1.5", 1.5}, Case{"1e-3", 1e-3}, Case{"0.1", 0.1},
                 Case{"2.5E+2", 250.0}, Case{"3e8", 3e8}, Case{"0.0", 0.0},
                 Case{"1.25e-1", 0.125}}) {
    Token t = lexOne(c.text);
    ASSERT_EQ(t.kind, TokenKind::Float) << c.text;
    EXPECT_EQ(t.spelling, c.text);
    ASSERT_TRUE(Lexer::parseFloat(t.spelling, bits, isDouble)) << c.text;
    EXPECT_TRUE(isDouble) << c.text;
    EXPECT_EQ(bits, llvm::bit_cast<uint64_t>(c.value)) << c.text;
  }
  // The exact bits of the nearest double to 1e-3 and 0.1.
  ASSERT_TRUE(Lexer::parseFloat("1e-3", bits, isDouble));
  EXPECT_EQ(bits, 0x3F50624DD2F1A9FCu);
  ASSERT_TRUE(Lexer::parseFloat("0.1", bits, isDouble));
  EXPECT_EQ(bits, 0x3FB999999999999Au);
}

TEST(PTXLexerTest, NumberFollowedByDotIsNotAFloat) {
  // `1.` without a digit after the dot: an integer, then an error.
  EXPECT_EQ(lexAll("1."), (std::vector<KS>{{TokenKind::Integer, "1"},
                                           {TokenKind::Error, "."}}));
  // `2.x`: an integer, then a directive-like modifier.
  EXPECT_EQ(lexAll("2.x"), (std::vector<KS>{{TokenKind::Integer, "2"},
                                            {TokenKind::Directive, ".x"}}));
  // An exponent with no digits is not part of the number.
  EXPECT_EQ(lexOne("1e").kind, TokenKind::Error);
}

TEST(PTXLexerTest, Strings) {
  Token s = lexOne("\"text\"");
  EXPECT_EQ(s.kind, TokenKind::String);
  EXPECT_EQ(s.spelling, "\"text\"");
  Token esc = lexOne(R"("a\"b\\")");
  EXPECT_EQ(esc.kind, TokenKind::String);
  EXPECT_EQ(esc.spelling, R"("a\"b\\")");
  EXPECT_EQ(lexOne("\"\"").kind, TokenKind::String);
  EXPECT_EQ(lexAll(".pragma \"nounroll\";"),
            (std::vector<KS>{{TokenKind::Directive, ".pragma"},
                             {TokenKind::String, "\"nounroll\""},
                             {TokenKind::Semicolon, ";"}}));
}

TEST(PTXLexerTest, UnterminatedStrings) {
  // At the end of the buffer.
  Token t = lexOne("\"abc");
  EXPECT_EQ(t.kind, TokenKind::Error);
  EXPECT_EQ(t.spelling, "\"abc");
  // At the end of the line: lexing resumes on the next line.
  EXPECT_EQ(lexAll("\"abc\nfoo"),
            (std::vector<KS>{{TokenKind::Error, "\"abc"},
                             {TokenKind::Identifier, "foo"}}));
  // A backslash right before the end of the buffer.
  EXPECT_EQ(lexOne("\"ab\\").kind, TokenKind::Error);
}

TEST(PTXLexerTest, LineComments) {
  EXPECT_EQ(lexAll("a // comment ; b\nc//\n//x"),
            (std::vector<KS>{{TokenKind::Identifier, "a"},
                             {TokenKind::Identifier, "c"}}));
  // A single slash is not a comment.
  EXPECT_EQ(lexAll("/ a"), (std::vector<KS>{{TokenKind::Error, "/"},
                                            {TokenKind::Identifier, "a"}}));
}

TEST(PTXLexerTest, BlockComments) {
  EXPECT_EQ(lexAll("a /* b ; \n c */ d/**/e/* * / **/f"),
            (std::vector<KS>{{TokenKind::Identifier, "a"},
                             {TokenKind::Identifier, "d"},
                             {TokenKind::Identifier, "e"},
                             {TokenKind::Identifier, "f"}}));
  // Block comments do not nest.
  EXPECT_EQ(lexAll("/* /* */ x */"),
            (std::vector<KS>{{TokenKind::Identifier, "x"},
                             {TokenKind::Star, "*"},
                             {TokenKind::Error, "/"}}));
}

TEST(PTXLexerTest, UnterminatedBlockComments) {
  for (const char *s :
       {"a /* no end", "a /* ends in star *", "a /*", "a /*/"}) {
    Lexer lexer(s);
    Token a = lexer.next();
    EXPECT_EQ(a.kind, TokenKind::Identifier) << s;
    Token eof = lexer.next();
    EXPECT_EQ(eof.kind, TokenKind::Eof) << s;
    EXPECT_EQ(eof.loc(), s + std::strlen(s)) << s;
  }
}

TEST(PTXLexerTest, ErrorTokens) {
  // A number running into identifier characters.
  Token bad = lexOne("12abc");
  EXPECT_EQ(bad.kind, TokenKind::Error);
  EXPECT_EQ(bad.spelling, "12abc");
  EXPECT_EQ(lexOne("0x1G").kind, TokenKind::Error);
  // A lone `%`, then what follows.
  EXPECT_EQ(lexAll("% r1"), (std::vector<KS>{{TokenKind::Error, "%"},
                                             {TokenKind::Identifier, "r1"}}));
  EXPECT_EQ(lexAll("%"), (std::vector<KS>{{TokenKind::Error, "%"}}));
  EXPECT_EQ(lexAll("%%r"), (std::vector<KS>{{TokenKind::Error, "%"},
                                            {TokenKind::Identifier, "%r"}}));
  // Stray characters: one error token each, lexing goes on.
  EXPECT_EQ(lexAll("a # b"), (std::vector<KS>{{TokenKind::Identifier, "a"},
                                              {TokenKind::Error, "#"},
                                              {TokenKind::Identifier, "b"}}));
  for (const char *s : {"#", "?", "^", "&", "'", "\\", "`", "\x7f", "\xff"}) {
    Token t = lexOne(s);
    EXPECT_EQ(t.kind, TokenKind::Error) << s;
    EXPECT_EQ(t.spelling, s);
  }
  // A lone dot.
  EXPECT_EQ(lexAll(". x"), (std::vector<KS>{{TokenKind::Error, "."},
                                            {TokenKind::Identifier, "x"}}));
}

TEST(PTXLexerTest, EmbeddedNul) {
  std::string text("a\0b", 3);
  EXPECT_EQ(lexAll(text),
            (std::vector<KS>{{TokenKind::Identifier, "a"},
                             {TokenKind::Error, std::string(1, '\0')},
                             {TokenKind::Identifier, "b"}}));
}

TEST(PTXLexerTest, EofRepeats) {
  const char *text = "  x ; // tail";
  Lexer lexer(text);
  EXPECT_TRUE(lexer.next().isWord("x"));
  EXPECT_TRUE(lexer.next().is(TokenKind::Semicolon));
  for (int i = 0; i < 5; ++i) {
    Token t = lexer.next();
    EXPECT_EQ(t.kind, TokenKind::Eof);
    EXPECT_TRUE(t.spelling.empty());
    EXPECT_EQ(t.loc(), text + std::strlen(text));
  }
  Lexer empty("");
  EXPECT_TRUE(empty.next().is(TokenKind::Eof));
  EXPECT_TRUE(empty.next().is(TokenKind::Eof));
}

TEST(PTXLexerTest, TokensPointIntoTheBuffer) {
  llvm::StringRef text = "ld.global.f32 %f1, [%rd1];";
  Lexer lexer(text);
  for (Token t = lexer.next(); !t.is(TokenKind::Eof); t = lexer.next()) {
    EXPECT_GE(t.loc(), text.begin());
    EXPECT_LE(t.loc() + t.spelling.size(), text.end());
    EXPECT_EQ(text.substr(t.loc() - text.begin(), t.spelling.size()),
              t.spelling);
  }
}

TEST(PTXLexerTest, IsWord) {
  EXPECT_TRUE(lexOne("ld").isWord("ld"));
  EXPECT_TRUE(lexOne(".global").isWord(".global"));
  EXPECT_FALSE(lexOne("\"ld\"").isWord("\"ld\""));
  EXPECT_FALSE(lexOne("42").isWord("42"));
}

TEST(PTXLexerTest, SkipToEndOfLineAndReset) {
  llvm::StringRef text = ".loc 1 2 3\nret;";
  Lexer lexer(text);
  Token loc = lexer.next();
  EXPECT_TRUE(loc.isWord(".loc"));
  lexer.skipToEndOfLine();
  EXPECT_EQ(lexer.remaining(), "\nret;");
  EXPECT_TRUE(lexer.next().isWord("ret"));
  lexer.resetTo(loc.loc());
  EXPECT_EQ(lexer.remaining(), text);
  EXPECT_TRUE(lexer.next().isWord(".loc"));
  EXPECT_EQ(lexer.next().spelling, "1");
}

} // namespace
