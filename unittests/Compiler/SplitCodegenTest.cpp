//===- SplitCodegenTest.cpp - A module's kernels compiled in parallel ----===//
//
// compile() for sm_90 splits a module with several kernels into parts that
// are compiled on a thread pool and joined (lib/Compiler/SplitCodegen.cpp).
// These tests check that the thread count does not change a byte of the
// output, that the joined module defines each symbol once with the kernels
// in their order, that state the kernels share stays shared, and the split
// and the join on hand-written inputs.
//
//===----------------------------------------------------------------------===//

#include "TargetCodegen.h"

#include "Wooly/Compiler/Compiler.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <map>

using namespace wooly;

namespace {
std::string readSource(llvm::StringRef relPath) {
  std::string path = std::string(WOOLY_SOURCE_DIR) + "/" + relPath.str();
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf) {
    ADD_FAILURE() << "cannot read " << path;
    return "";
  }
  return (*buf)->getBuffer().str();
}

std::string compileWith(const std::string &ptx, unsigned threads) {
  CompileInput in{CompileInput::Kind::PTX, ptx, "in.ptx"};
  CompileOptions options;
  options.threads = threads;
  llvm::Expected<CompiledModule> m =
      compile(in, llvm::cantFail(Target::parse("sm_90")), options);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return "";
  }
  return m->binary;
}

/// The names of the matches of `pattern`'s first group in `text`, in order.
std::vector<std::string> matches(llvm::StringRef text,
                                 llvm::StringRef pattern) {
  llvm::Regex re(pattern);
  std::string error;
  EXPECT_TRUE(re.isValid(error)) << pattern.str() << ": " << error;
  std::vector<std::string> out;
  llvm::SmallVector<llvm::StringRef, 2> m;
  llvm::SmallVector<llvm::StringRef, 0> lines;
  text.split(lines, '\n');
  for (llvm::StringRef line : lines)
    if (re.match(line, &m))
      out.push_back(m[1].str());
  return out;
}

/// Checks what a joined PTX module must be: the header once, each module
/// variable and function defined once, the kernels as in `input`.
void expectWellFormedJoin(const std::string &input, const std::string &ptx) {
  EXPECT_EQ(matches(ptx, "^\\.version ([0-9.]+)$").size(), 1u);
  EXPECT_EQ(matches(ptx, "^\\.target (sm_90)$").size(), 1u);
  EXPECT_EQ(matches(ptx, "^\\.address_size (64)$").size(), 1u);
  EXPECT_EQ(matches(ptx, "^\\.visible \\.entry ([A-Za-z0-9_$]+)\\("),
            matches(input, "^\\.visible \\.entry ([A-Za-z0-9_$]+)\\("));
  std::map<std::string, int> defined;
  for (const char *pattern :
       {"^(\\.visible )?\\.(global|shared|const) [^;]* "
        "([A-Za-z0-9_$]+)(\\[[0-9]*\\])?( "
        "=.*)?;$",
        "^(\\.extern )\\.(shared) [^;]* ([A-Za-z0-9_$]+)\\[\\];$"}) {
    llvm::Regex re(pattern);
    std::string error;
    ASSERT_TRUE(re.isValid(error)) << error;
    llvm::SmallVector<llvm::StringRef, 0> lines;
    llvm::StringRef(ptx).split(lines, '\n');
    llvm::SmallVector<llvm::StringRef, 5> m;
    for (llvm::StringRef line : lines)
      if (re.match(line, &m))
        ++defined[m[3].str()];
  }
  EXPECT_FALSE(defined.empty());
  for (const auto &[name, count] : defined)
    EXPECT_EQ(count, 1) << name;
}

// The largest module of the large corpus (36 kernels) and a hand-written one:
// the same bytes with 1, 2 and 4 threads, and a well-formed join.
TEST(SplitCodegen, ThreadCountDoesNotChangeThePTX) {
  for (const char *file : {"bench/corpus-large/reduce.sm_90.ptx",
                           "test/Target/NVPTX/Inputs/split-kernels.ptx"}) {
    SCOPED_TRACE(file);
    std::string input = readSource(file);
    std::string one = compileWith(input, 1);
    ASSERT_FALSE(one.empty());
    EXPECT_EQ(one, compileWith(input, 4));
    EXPECT_EQ(one, compileWith(input, 2));
    expectWellFormedJoin(input, one);
  }
}

// The output does not depend on the thread count: neither does the key.
TEST(SplitCodegen, ThreadsAreNotPartOfTheCacheKey) {
  CompileInput in{CompileInput::Kind::PTX,
                  readSource("test/Target/NVPTX/Inputs/split-kernels.ptx"),
                  "in.ptx"};
  Target sm90 = llvm::cantFail(Target::parse("sm_90"));
  CompileOptions one, four;
  one.threads = 1;
  four.threads = 4;
  EXPECT_EQ(cacheKey(in, sm90, one), cacheKey(in, sm90, four));
  EXPECT_EQ(cacheKey(in, sm90, one), cacheKey(in, sm90, {}));
}

// split-kernels.ptx: the recursive device function both `writer` and
// `reader` call is defined once a part (the first copy keeps its name);
// `counter`, written by one kernel and read by two, is one module variable
// that each reads from memory; `mine`, used by `writer` only, is demoted
// into it as in a whole-module compile.
TEST(SplitCodegen, SharedStateStaysShared) {
  std::string ptx =
      compileWith(readSource("test/Target/NVPTX/Inputs/split-kernels.ptx"), 3);
  EXPECT_EQ(matches(ptx, "^\\.func .* (fib[$p0-9]*)\\($"),
            (std::vector<std::string>{"fib", "fib$p1"}));
  EXPECT_EQ(matches(ptx, "^(\\.visible )?\\.global .* counter\\[4\\];$").size(),
            1u);
  EXPECT_EQ(matches(ptx, "(st\\.global\\.b32)[ \t]*\\[counter\\]").size(), 1u);
  EXPECT_EQ(
      matches(ptx, "(ld\\.global\\.b32)[ \t]*%r[0-9]+, \\[counter\\]").size(),
      2u);
  EXPECT_EQ(matches(ptx, "^\\.(shared) .* both\\[64\\];$").size(), 1u);
  EXPECT_EQ(matches(ptx, "^(\\.extern \\.shared) .* dyn\\[\\];$").size(), 1u);
  EXPECT_EQ(matches(ptx, "^\t\\.(shared) .*mine").size(), 1u);
  // The reader calls its own copy.
  size_t reader = ptx.find(".entry reader(");
  ASSERT_NE(reader, std::string::npos);
  EXPECT_NE(ptx.find("call.uni (retval0), fib$p1,", reader), std::string::npos);
}

const char *kTwoKernels = R"(
target triple = "nvptx64-nvidia-cuda"
@shared = internal addrspace(1) global i32 0, align 4
@own = internal addrspace(3) global [4 x i32] undef, align 4
@unused = addrspace(1) global i32 7, align 4

define internal i32 @f(i32 %x) {
  %y = add i32 %x, 1
  ret i32 %y
}
define ptx_kernel void @a(ptr addrspace(1) %p) {
  %v = load i32, ptr addrspace(1) @shared
  %w = call i32 @f(i32 %v)
  store i32 %w, ptr addrspace(3) @own
  store i32 %w, ptr addrspace(1) %p
  ret void
}
define ptx_kernel void @b(ptr addrspace(1) %p) {
  %w = call i32 @f(i32 2)
  store i32 %w, ptr addrspace(1) @shared
  ret void
}
)";

std::unique_ptr<llvm::Module> parseIR(const char *text,
                                      llvm::LLVMContext &ctx) {
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(text, diag, ctx);
  if (!m)
    ADD_FAILURE() << diag.getMessage().str();
  return m;
}

std::unique_ptr<llvm::Module> readPart(const detail::ModulePart &part,
                                       llvm::LLVMContext &ctx) {
  return llvm::cantFail(
      llvm::parseBitcodeFile(llvm::MemoryBufferRef(part.bitcode, "part"), ctx));
}

TEST(SplitCodegen, SplitsByKernel) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = parseIR(kTwoKernels, ctx);
  ASSERT_TRUE(m);
  std::optional<std::vector<detail::ModulePart>> parts =
      detail::splitModuleByRoots(*m);
  ASSERT_TRUE(parts);
  ASSERT_EQ(parts->size(), 3u);

  llvm::LLVMContext c0, c1, c2;
  std::unique_ptr<llvm::Module> a = readPart((*parts)[0], c0);
  std::unique_ptr<llvm::Module> b = readPart((*parts)[1], c1);
  std::unique_ptr<llvm::Module> vars = readPart((*parts)[2], c2);
  // Part 0: kernel a, f under its name, `own` defined (only a uses it),
  // `shared` declared (b writes it).
  EXPECT_TRUE((*parts)[0].optimize);
  ASSERT_TRUE(a->getFunction("a"));
  EXPECT_FALSE(a->getFunction("b"));
  ASSERT_TRUE(a->getFunction("f"));
  EXPECT_FALSE(a->getFunction("f")->isDeclaration());
  EXPECT_FALSE(a->getNamedGlobal("own")->isDeclaration());
  EXPECT_TRUE(a->getNamedGlobal("shared")->isDeclaration());
  EXPECT_FALSE(a->getNamedGlobal("unused"));
  // Part 1: kernel b with its own internal copy of f.
  ASSERT_TRUE(b->getFunction("b"));
  EXPECT_FALSE(b->getFunction("a"));
  EXPECT_FALSE(b->getFunction("f"));
  ASSERT_TRUE(b->getFunction("f$p1"));
  EXPECT_TRUE(b->getFunction("f$p1")->hasInternalLinkage());
  EXPECT_TRUE(b->getNamedGlobal("shared")->isDeclaration());
  EXPECT_FALSE(b->getNamedGlobal("own"));
  // The variables' part: not optimised, no functions, every variable but
  // `own`.
  EXPECT_FALSE((*parts)[2].optimize);
  EXPECT_TRUE(vars->functions().empty());
  EXPECT_FALSE(vars->getNamedGlobal("shared")->isDeclaration());
  EXPECT_FALSE(vars->getNamedGlobal("unused")->isDeclaration());
  EXPECT_FALSE(vars->getNamedGlobal("own"));
}

// With at most one group: both kernels in one part that defines f once.
TEST(SplitCodegen, GroupsConsecutiveKernels) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = parseIR(kTwoKernels, ctx);
  ASSERT_TRUE(m);
  std::optional<std::vector<detail::ModulePart>> parts =
      detail::splitModuleByRoots(*m, /*maxParts=*/1);
  ASSERT_TRUE(parts);
  ASSERT_EQ(parts->size(), 2u);
  llvm::LLVMContext c0;
  std::unique_ptr<llvm::Module> ab = readPart((*parts)[0], c0);
  EXPECT_FALSE(ab->getFunction("a")->isDeclaration());
  EXPECT_FALSE(ab->getFunction("b")->isDeclaration());
  EXPECT_FALSE(ab->getFunction("f")->isDeclaration());
  EXPECT_FALSE(ab->getFunction("f$p0"));
  // `shared` is used by this part only: defined here.
  EXPECT_FALSE(ab->getNamedGlobal("shared")->isDeclaration());
}

TEST(SplitCodegen, OneKernelIsNotSplit) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = parseIR(R"(
target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @a() {
  ret void
}
define void @helper() {
  ret void
}
)",
                                            ctx);
  ASSERT_TRUE(m);
  EXPECT_FALSE(detail::splitModuleByRoots(*m));
}

TEST(SplitCodegen, FunctionsInInitializersAreNotSplit) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = parseIR(R"(
target triple = "nvptx64-nvidia-cuda"
@table = addrspace(1) global ptr @a
define ptx_kernel void @a() {
  ret void
}
define ptx_kernel void @b() {
  ret void
}
)",
                                            ctx);
  ASSERT_TRUE(m);
  EXPECT_FALSE(detail::splitModuleByRoots(*m));
}

const char *kHeader = "//\n// Generated by LLVM NVPTX Back-End\n//\n\n"
                      ".version 8.1\n.target sm_90\n.address_size 64\n";

TEST(JoinPTX, OneHeaderDeclarationsOnceVariablesFirst) {
  std::string p0 = std::string(kHeader) +
                   "\n.extern .func  (.param .b32 func_retval0) vprintf\n(\n"
                   "\t.param .b64 vprintf_param_0\n)\n;\n"
                   ".extern .global .align 4 .u32 g;\n"
                   "\t// .globl\ta\n.visible .entry a()\n{\n\tret;\n}\n";
  std::string p1 = std::string(kHeader) +
                   "\n.extern .func  (.param .b32 func_retval0) vprintf\n(\n"
                   "\t.param .b64 vprintf_param_0\n)\n;\n"
                   ".extern .shared .align 16 .b8 dyn[];\n"
                   "\t// .globl\tb\n.visible .entry b()\n{\n\t{ // x\n\t}\n"
                   "\tret;\n}\n";
  std::string vars = std::string(kHeader) +
                     "\n.global .align 4 .u32 g = 1;\n"
                     ".global .align 4 .b8 t[8] = {1, 2};\n";
  std::string joined = llvm::cantFail(detail::joinPTXParts({p0, p1, vars}));
  EXPECT_EQ(joined,
            std::string(kHeader) +
                "\n.extern .func  (.param .b32 func_retval0) vprintf\n(\n"
                "\t.param .b64 vprintf_param_0\n)\n;\n"
                "\n.global .align 4 .u32 g = 1;\n"
                "\n.global .align 4 .b8 t[8] = {1, 2};\n"
                "\n.extern .shared .align 16 .b8 dyn[];\n"
                "\n\t// .globl\ta\n.visible .entry a()\n{\n\tret;\n}\n"
                "\n\t// .globl\tb\n.visible .entry b()\n{\n\t{ // x\n\t}\n"
                "\tret;\n}\n");
}

TEST(JoinPTX, RejectsPartsThatDisagree) {
  std::string a = std::string(kHeader) + ".global .u32 g;\n";
  std::string other = a;
  other.replace(other.find("sm_90"), 5, "sm_80");
  EXPECT_TRUE(llvm::StringRef(
                  llvm::toString(detail::joinPTXParts({a, other}).takeError()))
                  .contains("headers differ"));
  EXPECT_TRUE(
      llvm::StringRef(llvm::toString(detail::joinPTXParts({a, a}).takeError()))
          .contains("'g' is defined by two parts"));
  std::string f = std::string(kHeader) + ".func f()\n{\n\tret;\n}\n";
  EXPECT_TRUE(
      llvm::StringRef(llvm::toString(detail::joinPTXParts({f, f}).takeError()))
          .contains("'f' is defined by two parts"));
  EXPECT_TRUE(llvm::StringRef(
                  llvm::toString(detail::joinPTXParts({std::string(kHeader) +
                                                       ".visible .entry k(\n{"})
                                     .takeError()))
                  .contains("unterminated"));
}
} // namespace
