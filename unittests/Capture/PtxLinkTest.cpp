//===- PtxLinkTest.cpp - Linking the PTX modules of -rdc programs ---------===//

#include "PtxLink.h"

#include "gtest/gtest.h"

#include <fstream>
#include <random>
#include <sstream>

using wooly::capture::linkPtx;

namespace {

std::string readInput(const std::string &name) {
  std::ifstream in(std::string(WOOLY_CAPTURE_INPUTS_DIR) + "/rdc/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos;
       p = text.find(what, p + 1))
    ++n;
  return n;
}

const char *kHeader = ".version 8.0\n.target sm_75\n.address_size 64\n";

} // namespace

// nvcc 13's PTX of test/apps/cuda/rdc_{a,b}.cu (-rdc=true): a kernel in the
// first calls a function and the second defines it and a variable.
TEST(PtxLink, NvccRdcObjects) {
  std::string a = readInput("rdc_a.ptx"), b = readInput("rdc_b.ptx");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  std::string out, error;
  ASSERT_TRUE(linkPtx({a, b}, out, error)) << error;
  EXPECT_EQ(count(out, ".version"), 1u);
  EXPECT_EQ(count(out, ".target"), 1u);
  EXPECT_EQ(count(out, ".extern"), 0u) << out;
  // One prototype, then the definition after the kernel that calls it.
  size_t proto = out.find("_Z10polynomialf(");
  size_t caller = out.find(".entry _Z8evaluatePKfPfi");
  size_t def = out.rfind("_Z10polynomialf(");
  ASSERT_NE(proto, std::string::npos);
  EXPECT_LT(proto, caller);
  EXPECT_LT(caller, def);
  // The variable is declared before every function.
  EXPECT_LT(out.find("polynomialCalls;"), caller);
  // The kernels and their bodies are all there.
  EXPECT_NE(out.find(".entry _Z10resetCallsj"), std::string::npos);
  EXPECT_EQ(count(out, "{"), count(a + b, "{"));
}

TEST(PtxLink, OneModuleIsUnchanged) {
  std::string m = std::string(kHeader) + ".visible .entry k()\n{\n\tret;\n}\n";
  std::string out, error;
  ASSERT_TRUE(linkPtx({m}, out, error));
  EXPECT_EQ(out, m);
}

TEST(PtxLink, LocalNamesThatClashAreRenamed) {
  std::string m0 = std::string(kHeader) +
                   ".global .align 1 .b8 $str[3] = {104, 105, 0};\n"
                   ".func helper()\n{\n\tret;\n}\n"
                   ".visible .entry k0()\n{\n\tmov.u64 %rd1, $str;\n"
                   "\tcall helper, ();\n\tret;\n}\n";
  std::string m1 =
      std::string(".version 8.5\n.target sm_75\n.address_size 64\n") +
      ".global .align 1 .b8 $str[3] = {111, 107, 0};\n"
      ".func helper()\n{\n\tret;\n}\n"
      ".visible .entry k1()\n{\n\tmov.u64 %rd1, $str;\n"
      "\tcall helper, ();\n\tret;\n}\n";
  std::string out, error;
  ASSERT_TRUE(linkPtx({m0, m1}, out, error)) << error;
  EXPECT_NE(out.find(".version 8.5"), std::string::npos) << "highest version";
  EXPECT_EQ(count(out, "$str_wooly_m0"), 2u) << out;
  EXPECT_EQ(count(out, "$str_wooly_m1"), 2u) << out;
  EXPECT_EQ(count(out, "helper_wooly_m0"), 2u) << out;
  EXPECT_EQ(count(out, "helper_wooly_m1"), 2u) << out;
  // Registers and directives are not identifiers to rename.
  EXPECT_EQ(count(out, "%rd1"), 2u);
  EXPECT_EQ(count(out, ".global .align 1"), 2u);
}

TEST(PtxLink, ExternsDeclaredOnce) {
  std::string decl = ".extern .func (.param .b32 r) vprintf\n"
                     "(\n\t.param .b64 a,\n\t.param .b64 b\n);\n";
  std::string m0 = kHeader + decl + ".visible .entry k0()\n{\n\tret;\n}\n";
  std::string m1 = kHeader + decl + ".visible .entry k1()\n{\n\tret;\n}\n";
  std::string out, error;
  ASSERT_TRUE(linkPtx({m0, m1}, out, error)) << error;
  EXPECT_EQ(count(out, "vprintf"), 1u) << out;
}

TEST(PtxLink, MultipleDefinitionIsAnError) {
  std::string m = std::string(kHeader) + ".visible .func f()\n{\n\tret;\n}\n";
  std::string out, error;
  EXPECT_FALSE(linkPtx({m, m}, out, error));
  EXPECT_NE(error.find("multiple definition of 'f'"), std::string::npos)
      << error;
}

TEST(PtxLink, WeakDefinitionsKeepTheFirst) {
  std::string m0 =
      std::string(kHeader) + ".weak .func w()\n{\n\t// first\n\tret;\n}\n";
  std::string m1 =
      std::string(kHeader) + ".weak .func w()\n{\n\t// second\n\tret;\n}\n";
  std::string out, error;
  ASSERT_TRUE(linkPtx({m0, m1}, out, error)) << error;
  EXPECT_NE(out.find("first"), std::string::npos);
  EXPECT_EQ(out.find("second"), std::string::npos);
}

TEST(PtxLink, MalformedInputIsAnErrorWithALocation) {
  std::string out, error;
  EXPECT_FALSE(linkPtx(
      {kHeader, std::string(kHeader) + "\n.visible .entry k()\n{\n\tret;\n"},
      out, error));
  EXPECT_NE(error.find("module 1 line 5: unbalanced braces"), std::string::npos)
      << error;
  EXPECT_FALSE(linkPtx({kHeader, std::string(kHeader) + ".visible .global"},
                       out, error));
  EXPECT_NE(error.find("module 1"), std::string::npos) << error;
}

// Truncated and corrupted modules: an answer either way, never a crash.
TEST(PtxLink, CorruptedModulesDoNotCrash) {
  std::string a = readInput("rdc_a.ptx"), b = readInput("rdc_b.ptx");
  std::mt19937 rng(7);
  for (size_t len = 0; len <= b.size(); len += 7) {
    std::string out, error;
    (void)linkPtx({a, b.substr(0, len)}, out, error);
  }
  const char junk[] = "{};()[]=.$%/*\n ";
  for (int i = 0; i < 2000; ++i) {
    std::string c = a;
    for (int k = 0; k < 4; ++k)
      c[rng() % c.size()] = junk[rng() % (sizeof junk - 1)];
    std::string out, error;
    (void)linkPtx({c, b}, out, error);
  }
}

// A variable whose initialiser names a function (a device function-pointer
// table) needs the function declared before it: prototypes come first.
TEST(PtxLink, PrototypesPrecedeVariables) {
  std::string m0 = std::string(kHeader) +
                   ".func (.param .b32 r) _Z1fi(.param .b32 a);\n"
                   ".visible .global .align 8 .u64 table[1] = {_Z1fi};\n"
                   ".func (.param .b32 r) _Z1fi(.param .b32 a)\n{\n\tret;\n}\n";
  std::string m1 = std::string(kHeader) + ".visible .entry k()\n{\n\tret;\n}\n";
  std::string out, error;
  ASSERT_TRUE(linkPtx({m0, m1}, out, error)) << error;
  size_t proto = out.find("_Z1fi(.param .b32 a);");
  size_t table = out.find("table[1]");
  size_t body = out.find("_Z1fi(.param .b32 a)\n{");
  ASSERT_NE(proto, std::string::npos) << out;
  EXPECT_LT(proto, table) << out;
  EXPECT_LT(table, body) << out;
}
