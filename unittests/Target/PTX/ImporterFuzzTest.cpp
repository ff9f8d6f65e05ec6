//===- ImporterFuzzTest.cpp - Deterministic importPTX fuzzing -*- C++ -*-===//
//
// Mutates seed PTX texts (the corpus, the ZLUDA conformance PTX when present
// and a few embedded kernels) with a fixed-seed generator and checks that
// every result of importPTX is either a module that verifies or a failure
// with at least one error located in the buffer (file:line:col).
//
// On Unix the cases run in a forked child process with a memory limit, so a
// crash, a runaway allocation or a hang is reported as a failing case (and
// the child restarted after it) instead of taking the test binary down.
// MinimizedFindings replays minimized inputs of failures found so far.
//
// Environment variables for exploratory runs (unset in normal runs):
//   WOOLY_FUZZ_DUMP_DIR=dir  writes every failing case to dir/fuzz-<case>.ptx,
//                            to reproduce with wooly-translate --import-ptx.
//   WOOLY_FUZZ_SEED=n        another generator seed.
//   WOOLY_FUZZ_CASES=n       another number of cases.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Target/PTX/PTXImporter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#ifdef LLVM_ON_UNIX
#include <csignal>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#ifndef WOOLY_SOURCE_DIR
#error "WOOLY_SOURCE_DIR must name the source tree"
#endif

using namespace mlir;

namespace {

/// Number of generated cases and the generator's seed.
constexpr unsigned kDefaultNumCases = 50000;
constexpr unsigned kDefaultSeed = 0x5EED2024;

/// Returns the value of environment variable `name`, or `dflt`.
unsigned envOr(const char *name, unsigned dflt) {
  const char *v = std::getenv(name);
  return v ? static_cast<unsigned>(std::strtoul(v, nullptr, 0)) : dflt;
}
const unsigned kNumCases = envOr("WOOLY_FUZZ_CASES", kDefaultNumCases);
const unsigned kSeed = envOr("WOOLY_FUZZ_SEED", kDefaultSeed);
/// Limits of the child process that runs the cases: address space, and
/// seconds per case before a case counts as hanging. Both are far above what
/// a case needs (a few MB, milliseconds): they only turn runaway loops into
/// reported failures.
constexpr uint64_t kChildMemoryBytes = 4ull << 30;
constexpr unsigned kHangSeconds = 60;

/// One seed input.
struct Seed {
  std::string name;
  std::string text;
};

/// Embedded kernels: a loop with predicated code, a device function call,
/// vector registers and a module-scope array.
const char *const kEmbedded[] = {
    R"(.version 8.0
.target sm_80
.address_size 64

.visible .entry loop(.param .u64 out, .param .u32 n)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [out];
	ld.param.u32 	%r1, [n];
	mov.u32 	%r2, 0;
	mov.u32 	%r3, 0;
$L__BB0_1:
	setp.ge.s32 	%p1, %r2, %r1;
	@%p1 bra 	$L__BB0_3;
	and.b32 	%r4, %r2, 1;
	setp.eq.s32 	%p2, %r4, 0;
	@%p2 add.s32 	%r3, %r3, %r2;
	@!%p2 sub.s32 	%r3, %r3, 1;
	add.s32 	%r2, %r2, 1;
	bra.uni 	$L__BB0_1;
$L__BB0_3:
	cvta.to.global.u64 	%rd2, %rd1;
	st.global.u32 	[%rd2], %r3;
	ret;
}
)",
    R"(.version 8.0
.target sm_80
.address_size 64

.global .align 4 .b8 table[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

.func (.param .b32 func_retval0) twice(.param .b32 twice_param_0)
{
	.reg .b32 	%r<3>;
	ld.param.u32 	%r1, [twice_param_0];
	shl.b32 	%r2, %r1, 1;
	st.param.b32 	[func_retval0], %r2;
	ret;
}

.visible .entry caller(.param .u64 caller_param_0)
{
	.reg .f32 	%f<5>;
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<5>;
	.reg .v2 .f32 	%v;

	ld.param.u64 	%rd1, [caller_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u64 	%rd3, table;
	ld.global.u32 	%r1, [%rd3+4];
	{ // callseq 0
	.reg .b32 temp_param_reg;
	.param .b32 param0;
	st.param.b32 	[param0], %r1;
	.param .b32 retval0;
	call.uni (retval0), twice, (param0);
	ld.param.b32 	%r2, [retval0];
	} // callseq 0
	ld.global.v2.f32 	{%f1, %f2}, [%rd2];
	mov.v2.f32 	%v, {%f1, %f2};
	add.rn.f32 	%f3, %f1, 0f3F800000;
	fma.rn.f32 	%f4, %f3, %f2, 0fBF000000;
	st.global.f32 	[%rd2+8], %f4;
	st.global.u32 	[%rd2+12], %r2;
	ret;
}
)",
};

/// Reads every `*.ptx` file of `dir` (sorted by name) into `seeds`.
void readSeedDir(llvm::StringRef dir, std::vector<Seed> &seeds) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".ptx")
      paths.push_back(it->path());
  llvm::sort(paths);
  for (const std::string &path : paths) {
    auto buf = llvm::MemoryBuffer::getFile(path);
    if (!buf)
      continue;
    seeds.push_back(
        {llvm::sys::path::filename(path).str(), (*buf)->getBuffer().str()});
  }
}

/// Returns all seed inputs.
std::vector<Seed> loadSeeds() {
  std::vector<Seed> seeds;
  readSeedDir(WOOLY_SOURCE_DIR "/test/corpus", seeds);
  readSeedDir(WOOLY_SOURCE_DIR "/../shared/conformance/zluda/ptx", seeds);
  for (auto [i, text] : llvm::enumerate(kEmbedded))
    seeds.push_back({"embedded" + std::to_string(i) + ".ptx", text});
  return seeds;
}

/// Splits `text` into lines (without their '\n').
std::vector<std::string> splitLines(const std::string &text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(start));
      return lines;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
}

/// Joins `lines` with '\n'.
std::string joinLines(const std::vector<std::string> &lines) {
  std::string out;
  for (auto [i, line] : llvm::enumerate(lines)) {
    if (i)
      out += '\n';
    out += line;
  }
  return out;
}

bool isWordChar(char c) { return llvm::isAlnum(c) || c == '_' || c == '$'; }

/// Returns the [begin, end) of the opcode of instruction line `line`, or
/// {npos, npos} if the line does not look like an instruction.
std::pair<size_t, size_t> opcodeSpan(const std::string &line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line.find(';') == std::string::npos)
    return {std::string::npos, std::string::npos};
  if (line[i] == '@') {
    // Skip the guard.
    i = line.find_first_of(" \t", i);
    if (i == std::string::npos)
      return {std::string::npos, std::string::npos};
    i = line.find_first_not_of(" \t", i);
    if (i == std::string::npos)
      return {std::string::npos, std::string::npos};
  }
  if (!llvm::isAlpha(line[i]))
    return {std::string::npos, std::string::npos};
  size_t e = i;
  while (e < line.size() && isWordChar(line[e]))
    ++e;
  return {i, e};
}

/// Register names, opcodes and type suffixes seen in the seeds.
struct Pools {
  std::vector<std::string> opcodes, registers;
};

Pools collectPools(const std::vector<Seed> &seeds) {
  llvm::StringSet<> ops, regs;
  for (const Seed &s : seeds) {
    for (const std::string &line : splitLines(s.text)) {
      auto [b, e] = opcodeSpan(line);
      if (b != std::string::npos)
        ops.insert(line.substr(b, e - b));
    }
    for (size_t i = 0; i < s.text.size(); ++i) {
      if (s.text[i] != '%')
        continue;
      size_t e = i + 1;
      while (e < s.text.size() && isWordChar(s.text[e]))
        ++e;
      if (e > i + 1)
        regs.insert(s.text.substr(i, e - i));
      i = e - 1;
    }
  }
  Pools pools;
  for (auto &op : ops)
    pools.opcodes.push_back(op.getKey().str());
  for (auto &r : regs)
    pools.registers.push_back(r.getKey().str());
  llvm::sort(pools.opcodes);
  llvm::sort(pools.registers);
  // Names no seed declares.
  for (const char *r : {"%r999999", "%undeclared", "%", "%p0", "%rd", "%tid",
                        "%laneid", "%clock64"})
    pools.registers.push_back(r);
  for (const char *op : {"frobnicate", "ld", "bra", "ret", "call", "exit"})
    pools.opcodes.push_back(op);
  return pools;
}

/// Type modifiers that mutations swap in for one another.
const char *const kTypes[] = {
    ".u8",  ".u16", ".u32",  ".u64", ".s8",   ".s16",  ".s32",   ".s64",
    ".b8",  ".b16", ".b32",  ".b64", ".b128", ".f16",  ".f16x2", ".bf16",
    ".f32", ".f64", ".pred", ".v2",  ".v4",   ".e4m3", ".x",     ".rn"};

/// The mutation engine.
class Mutator {
public:
  Mutator(const Pools &pools, unsigned seed) : pools(pools), rng(seed) {}

  /// Returns a number in [0, n) (n > 0), the same on every platform.
  size_t pick(size_t n) { return n ? rng() % n : 0; }

  /// Returns a mutated copy of `text` and describes the mutations in `what`.
  std::string mutate(const std::string &text, std::string &what) {
    std::string out = text;
    unsigned kind = pick(100);
    if (kind < 12) {
      size_t at = pick(out.size() + 1);
      out.resize(at);
      what = "truncate@" + std::to_string(at);
      return out;
    }
    unsigned count = 1 + pick(3);
    for (unsigned i = 0; i < count; ++i) {
      unsigned k = pick(100);
      if (i)
        what += ",";
      if (k < 30)
        what += byteMutation(out);
      else
        what += tokenMutation(out);
    }
    return out;
  }

private:
  std::string byteMutation(std::string &s) {
    static const char interesting[] = "{}[]();,.:%@!<>=+-*/\"\\\n\t 0123456789"
                                      "abcdefxyzUL_$#";
    unsigned k = pick(3);
    size_t at = pick(s.size() + 1);
    if (k == 0 && !s.empty()) {
      at = pick(s.size());
      s[at] = static_cast<char>(s[at] ^ (1u << pick(8)));
      return "flip@" + std::to_string(at);
    }
    if (k == 1 || s.empty()) {
      char c = pick(4) == 0 ? static_cast<char>(pick(256))
                            : interesting[pick(sizeof(interesting) - 1)];
      s.insert(s.begin() + at, c);
      return "insert@" + std::to_string(at);
    }
    at = pick(s.size());
    size_t n = 1 + pick(std::min<size_t>(16, s.size() - at));
    s.erase(at, n);
    return "delete@" + std::to_string(at) + "+" + std::to_string(n);
  }

  std::string tokenMutation(std::string &s) {
    std::vector<std::string> lines = splitLines(s);
    size_t n = lines.size();
    switch (pick(6)) {
    case 0: { // swap two lines
      size_t a = pick(n), b = pick(n);
      std::swap(lines[a], lines[b]);
      s = joinLines(lines);
      return "swap" + std::to_string(a) + "/" + std::to_string(b);
    }
    case 1: { // delete a line
      size_t a = pick(n);
      lines.erase(lines.begin() + a);
      s = joinLines(lines);
      return "dropline" + std::to_string(a);
    }
    case 2: { // duplicate a line, next to it or elsewhere
      size_t a = pick(n);
      size_t to = pick(2) ? a : pick(n + 1);
      std::string copy = lines[a];
      lines.insert(lines.begin() + to, copy);
      s = joinLines(lines);
      return "dupline" + std::to_string(a) + "->" + std::to_string(to);
    }
    case 3: { // replace an opcode
      std::vector<size_t> instrs;
      for (size_t i = 0; i < n; ++i)
        if (opcodeSpan(lines[i]).first != std::string::npos)
          instrs.push_back(i);
      if (instrs.empty())
        return "noop";
      size_t a = instrs[pick(instrs.size())];
      auto [b, e] = opcodeSpan(lines[a]);
      const std::string &op = pools.opcodes[pick(pools.opcodes.size())];
      lines[a].replace(b, e - b, op);
      s = joinLines(lines);
      return "opcode" + std::to_string(a) + "=" + op;
    }
    case 4: { // replace a register name
      std::vector<std::pair<size_t, size_t>> regs;
      for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%')
          continue;
        size_t e = i + 1;
        while (e < s.size() && isWordChar(s[e]))
          ++e;
        regs.push_back({i, e});
        i = e - 1;
      }
      if (regs.empty())
        return "noop";
      auto [b, e] = regs[pick(regs.size())];
      const std::string &r = pools.registers[pick(pools.registers.size())];
      s.replace(b, e - b, r);
      return "reg@" + std::to_string(b) + "=" + r;
    }
    default: { // change a type suffix
      std::vector<std::pair<size_t, size_t>> spans;
      for (const char *t : kTypes) {
        llvm::StringRef ty(t);
        for (size_t p = s.find(t); p != std::string::npos;
             p = s.find(t, p + 1)) {
          size_t e = p + ty.size();
          if (e == s.size() || !isWordChar(s[e]))
            spans.push_back({p, e});
        }
      }
      if (spans.empty())
        return "noop";
      llvm::sort(spans);
      auto [b, e] = spans[pick(spans.size())];
      const char *t = kTypes[pick(std::size(kTypes))];
      s.replace(b, e - b, t);
      return "type@" + std::to_string(b) + "=" + t;
    }
    }
  }

  const Pools &pools;
  std::mt19937 rng;
};

/// How one import ended.
enum class Outcome {
  Ok,             ///< A module that verifies, no errors.
  LocatedError,   ///< No module; at least one error located in the buffer.
  InvalidModule,  ///< A module that does not verify.
  ModuleAndError, ///< A module, but errors were reported.
  Unlocated,      ///< No module and no error located in the buffer.
  Crash,          ///< The importer crashed, ran out of memory or hung.
};
constexpr unsigned kNumOutcomes = 6;

const char *outcomeName(Outcome o) {
  switch (o) {
  case Outcome::Ok:
    return "ok";
  case Outcome::LocatedError:
    return "located error";
  case Outcome::InvalidModule:
    return "module fails verification";
  case Outcome::ModuleAndError:
    return "module despite errors";
  case Outcome::Unlocated:
    return "no located error";
  case Outcome::Crash:
    return "crash/out of memory/hang";
  }
  return "?";
}

/// Returns true if `loc` names a position inside `text` (named `name`).
bool isInBuffer(Location loc, llvm::StringRef name, llvm::StringRef text) {
  auto fl = dyn_cast<FileLineColLoc>(loc);
  if (!fl || fl.getFilename() != name)
    return false;
  unsigned line = fl.getLine(), col = fl.getColumn();
  if (line < 1 || col < 1)
    return false;
  // Find the line; an error at the end of the buffer may be on the line
  // after a final newline.
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
  if (line > lines.size())
    return false;
  return col <= lines[line - 1].size() + 1;
}

/// Imports `text` and classifies the result. `firstError` receives the
/// first error diagnostic as text, for reports.
Outcome importOne(MLIRContext &ctx, const std::string &text,
                  llvm::StringRef name, std::string &firstError) {
  unsigned errors = 0, located = 0;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() != DiagnosticSeverity::Error)
      return success();
    ++errors;
    if (isInBuffer(d.getLocation(), name, text))
      ++located;
    if (firstError.empty()) {
      llvm::raw_string_ostream os(firstError);
      os << d.getLocation() << ": " << d.str();
    }
    return success();
  });
  OwningOpRef<ModuleOp> module = wooly::importPTX(text, name, &ctx);
  if (module) {
    if (failed(verify(*module)))
      return Outcome::InvalidModule;
    return errors ? Outcome::ModuleAndError : Outcome::Ok;
  }
  return located ? Outcome::LocatedError : Outcome::Unlocated;
}

// Every seed on its own imports (or fails with a located error): the
// baseline the mutations start from.
TEST(PTXImporterFuzzTest, SeedsImport) {
  std::vector<Seed> seeds = loadSeeds();
  ASSERT_FALSE(seeds.empty());
  MLIRContext ctx(MLIRContext::Threading::DISABLED);
  unsigned ok = 0;
  for (const Seed &s : seeds) {
    std::string err;
    Outcome o = importOne(ctx, s.text, s.name, err);
    EXPECT_TRUE(o == Outcome::Ok || o == Outcome::LocatedError)
        << s.name << ": " << outcomeName(o) << " " << err;
    ok += o == Outcome::Ok;
  }
  // The corpus and embedded kernels must import; the ZLUDA files may use
  // unsupported instructions.
  for (const Seed &s : seeds) {
    if (s.name.find(".sm_") == std::string::npos &&
        !llvm::StringRef(s.name).starts_with("embedded"))
      continue;
    std::string err;
    EXPECT_EQ(importOne(ctx, s.text, s.name, err), Outcome::Ok)
        << s.name << ": " << err;
  }
  std::printf("[ seeds    ] %zu seeds, %u import\n", seeds.size(), ok);
}

/// One generated case.
struct Case {
  unsigned index;
  const Seed *seed;
  std::string what; ///< The mutations applied.
  std::string text;
};

/// Generates the cases in order.
class CaseGenerator {
public:
  CaseGenerator(const std::vector<Seed> &seeds)
      : seeds(seeds), pools(collectPools(seeds)), mutator(pools, kSeed) {}

  Case next() {
    Case c;
    c.index = count++;
    c.seed = &seeds[mutator.pick(seeds.size())];
    c.text = mutator.mutate(c.seed->text, c.what);
    return c;
  }

private:
  const std::vector<Seed> &seeds;
  Pools pools;
  Mutator mutator;
  unsigned count = 0;
};

/// The result of one case.
struct Record {
  Outcome outcome;
  std::string error;
};

/// Imports `text` (named `name`) in `ctx`, creating the context if needed.
Record runCase(std::unique_ptr<MLIRContext> &ctx, const std::string &text,
               const std::string &name) {
  if (!ctx)
    ctx = std::make_unique<MLIRContext>(MLIRContext::Threading::DISABLED);
  Record r;
  r.outcome = importOne(*ctx, text, name, r.error);
  return r;
}

#ifdef LLVM_ON_UNIX
/// Writes `r` to `fd` in one write (short enough to be atomic on a pipe):
/// the outcome byte, then for failures the length and text of the error.
void writeRecord(int fd, const Record &r) {
  std::string buf(1, static_cast<char>(r.outcome));
  if (r.outcome != Outcome::Ok && r.outcome != Outcome::LocatedError) {
    std::string msg = r.error.substr(0, 1000);
    uint32_t len = msg.size();
    buf.append(reinterpret_cast<const char *>(&len), sizeof(len));
    buf += msg;
  }
  const char *p = buf.data();
  size_t size = buf.size();
  while (size) {
    ssize_t n = ::write(fd, p, size);
    if (n <= 0)
      std::_Exit(3);
    p += n;
    size -= n;
  }
}

/// Reads `size` bytes from `fd`; false at the end of the stream.
bool readAll(int fd, void *data, size_t size) {
  char *p = static_cast<char *>(data);
  while (size) {
    ssize_t n = ::read(fd, p, size);
    if (n <= 0)
      return false;
    p += n;
    size -= n;
  }
  return true;
}

/// Reads one record from `fd`; false at the end of the stream.
bool readRecord(int fd, Record &r) {
  char o;
  if (!readAll(fd, &o, 1))
    return false;
  r.outcome = static_cast<Outcome>(o);
  r.error.clear();
  if (r.outcome == Outcome::Ok || r.outcome == Outcome::LocatedError)
    return true;
  uint32_t len = 0;
  if (!readAll(fd, &len, sizeof(len)))
    return false;
  r.error.resize(len);
  return readAll(fd, r.error.data(), len);
}

/// Runs `body(fd)` in a child process with limited memory, its stderr
/// discarded, and passes each record it writes to `fd` to `onRecord`.
/// Returns the record for a child that died before it finished: a Crash
/// naming the signal or exit status, or std::nullopt if it exited normally.
std::optional<Record>
runInChild(llvm::function_ref<void(int)> body,
           llvm::function_ref<void(const Record &)> onRecord) {
  int fds[2];
  if (::pipe(fds) != 0)
    return Record{Outcome::Crash, "pipe() failed"};
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0)
    return Record{Outcome::Crash, "fork() failed"};
  if (pid == 0) {
    ::close(fds[0]);
    // Keep the child's crash reports off the test output.
    int devNull = ::open("/dev/null", O_WRONLY);
    if (devNull >= 0)
      ::dup2(devNull, 2);
    struct rlimit limit = {kChildMemoryBytes, kChildMemoryBytes};
    ::setrlimit(RLIMIT_AS, &limit);
    body(fds[1]);
    std::_Exit(0);
  }
  ::close(fds[1]);
  Record r;
  while (readRecord(fds[0], r))
    onRecord(r);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return std::nullopt;
  r.outcome = Outcome::Crash;
  r.error = WIFSIGNALED(status)
                ? "killed by signal " + std::to_string(WTERMSIG(status))
                : "exit status " + std::to_string(WEXITSTATUS(status));
  return r;
}
#endif

/// Imports `text` in isolation (a child process on Unix).
Record runIsolated(const std::string &text, const std::string &name) {
#ifdef LLVM_ON_UNIX
  Record result{Outcome::Crash, "no result"};
  std::optional<Record> died = runInChild(
      [&](int fd) {
        std::unique_ptr<MLIRContext> ctx;
        ::alarm(kHangSeconds);
        writeRecord(fd, runCase(ctx, text, name));
      },
      [&](const Record &r) { result = r; });
  return died ? *died : result;
#else
  std::unique_ptr<MLIRContext> ctx;
  return runCase(ctx, text, name);
#endif
}

// The fuzz loop. On Unix the cases run in a child process; when it dies on
// a case, that case counts as a crash and a new child goes on after it.
TEST(PTXImporterFuzzTest, MutatedInputsFailCleanly) {
  std::vector<Seed> seeds = loadSeeds();
  ASSERT_FALSE(seeds.empty());
  CaseGenerator gen(seeds);
  const char *dumpDir = std::getenv("WOOLY_FUZZ_DUMP_DIR");

  unsigned counts[kNumOutcomes] = {};
  unsigned reported = 0;
  auto tally = [&](const Case &c, const Record &r) {
    ++counts[static_cast<unsigned>(r.outcome)];
    if (r.outcome == Outcome::Ok || r.outcome == Outcome::LocatedError)
      return;
    if (dumpDir) {
      std::error_code ec;
      llvm::SmallString<128> path(dumpDir);
      llvm::sys::path::append(path, "fuzz-" + std::to_string(c.index) + ".ptx");
      llvm::raw_fd_ostream os(path, ec);
      os << c.text;
    }
    if (reported++ < 20)
      ADD_FAILURE() << "case " << c.index << " (" << c.seed->name << ": "
                    << c.what << "): " << outcomeName(r.outcome)
                    << (r.error.empty() ? "" : "; first error: ") << r.error;
  };
  // A fresh context every 2000 cases keeps interned names from piling up.
  auto runNext = [](std::unique_ptr<MLIRContext> &ctx, const Case &c) {
    if (c.index % 2000 == 0)
      ctx.reset();
    return runCase(ctx, c.text, "fuzz" + std::to_string(c.index) + ".ptx");
  };

#ifdef LLVM_ON_UNIX
  unsigned next = 0;
  while (next < kNumCases) {
    // The child starts from the generator's current state (fork copies it)
    // and runs to the end; the parent replays the same cases to match the
    // records with their inputs.
    std::optional<Record> died = runInChild(
        [&](int fd) {
          std::unique_ptr<MLIRContext> ctx;
          for (unsigned i = next; i < kNumCases; ++i) {
            Case c = gen.next();
            ::alarm(kHangSeconds);
            Record r = runNext(ctx, c);
            ::alarm(0);
            writeRecord(fd, r);
          }
        },
        [&](const Record &r) {
          tally(gen.next(), r);
          ++next;
        });
    if (!died)
      break;
    // The child died on case `next`: count it and go on after it.
    if (next < kNumCases) {
      tally(gen.next(), *died);
      ++next;
    }
  }
  EXPECT_EQ(next, kNumCases);
#else
  std::unique_ptr<MLIRContext> ctx;
  for (unsigned i = 0; i < kNumCases; ++i) {
    Case c = gen.next();
    tally(c, runNext(ctx, c));
  }
#endif

  std::printf("[ fuzz     ] %u cases from %zu seeds (seed 0x%X)\n", kNumCases,
              seeds.size(), kSeed);
  for (unsigned o = 0; o < kNumOutcomes; ++o)
    std::printf("[ fuzz     ]   %-26s %u\n",
                outcomeName(static_cast<Outcome>(o)), counts[o]);
  EXPECT_EQ(counts[static_cast<unsigned>(Outcome::Ok)] +
                counts[static_cast<unsigned>(Outcome::LocatedError)],
            kNumCases)
      << "see the failing cases above; WOOLY_FUZZ_DUMP_DIR=dir writes them";
  // Both outcomes occur: the mutations neither break everything nor nothing.
  EXPECT_GT(counts[static_cast<unsigned>(Outcome::Ok)], 0u);
  EXPECT_GT(counts[static_cast<unsigned>(Outcome::LocatedError)], 0u);
}

/// Minimized inputs of failures fuzzing found (with other seeds or case
/// counts), kept as regression cases.
struct Finding {
  const char *what;
  const char *text;
};
const Finding kFindings[] = {
    {"unreachable guarded self-loop before a read (SSABuilder walked the "
     "single-predecessor cycle forever)",
     R"(.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u64 out)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<2>;
	ret;
$L__BB0_1:
	@%p1 bra 	$L__BB0_1;
	add.s32 	%r1, %r1, 1;
	ret;
}
)"},
    {"shl on a packed float type with an immediate amount (constInt on "
     "vector<2xf16>)",
     R"(.version 8.0
.target sm_80
.address_size 64

.visible .entry k()
{
	.reg .b32 	%r<3>;
	shl.f16x2 	%r2, %r1, 1;
	ret;
}
)"},
    {"shr on a packed bf16 type with an immediate amount",
     R"(.version 8.0
.target sm_80
.address_size 64

.visible .entry k()
{
	.reg .b32 	%r<3>;
	shr.bf16x2 	%r2, %r1, 1;
	ret;
}
)"},
    {"cvt.rn.f16x2.f32 with one source (cvt's operand count for packed "
     "results)",
     R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .align 4 .b8 p[8])
{
	.reg .b32 %r<3>;
	.reg .f32 %f<3>;
	cvt.rn.f16x2.f32 	%r1, %f1;
	ret;
}
)"},
    {"cvt.rzi on an integer source (integer rounding needs a float)",
     R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .align 4 .b8 p[8])
{
	.reg .b32 %r<3>;
	.reg .f32 %f<3>;
	cvt.rzi.f32.b32 	%f1, %r2;
	ret;
}
)"},
    {"clz on f32 (bit operations take integer types)",
     R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .align 4 .b8 p[8])
{
	.reg .f32 %f<3>;
	.reg .b32 %r<3>;
	clz.f32 	%r1, %f1;
	ret;
}
)"},
    {"bfind on f32",
     R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .align 4 .b8 p[8])
{
	.reg .f32 %f<3>;
	.reg .b32 %r<3>;
	bfind.f32 	%r1, %f1;
	ret;
}
)"},
    {"bfi on f16x2",
     R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .align 4 .b8 p[8])
{
	.reg .b32 %r<5>;
	bfi.f16x2 	%r1, %r2, %r3, 0, 8;
	ret;
}
)"},
    {"cvta to f64 (cvta takes .u32 or .u64)",
     R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .align 4 .b8 p[8])
{
	.reg .f64 %fd<3>;
	cvta.to.global.f64 	%fd1, %fd2;
	ret;
}
)"},
    {"match on f32 (match takes .b32 or .b64)",
     R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .align 4 .b8 p[8])
{
	.reg .f32 %f<3>;
	.reg .b32 %r<3>;
	match.any.sync.f32 	%r1, %f1, -1;
	ret;
}
)"},
    {"atom.inc on f32 (inc and dec take integers)",
     R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .align 4 .b8 p[8])
{
	.reg .f32 %f<3>;
	.reg .b64 %rd<3>;
	atom.global.inc.f32 	%f1, [%rd1], %f2;
	ret;
}
)"},
    {"setp on e4m3 (float comparisons of an 8-bit storage type)",
     R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .align 4 .b8 p[8])
{
	.reg .b8 %rs<3>;
	.reg .pred %p<2>;
	setp.lt.e4m3 	%p1, %rs1, %rs2;
	ret;
}
)"},
    {"div.approx on f16x2 (approximate division is f32 only)",
     R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry k()
{
	.reg .b32 %r<4>;
	div.approx.f16x2 	%r1, %r2, %r3;
	ret;
}
)"},
    {"an address initializer naming no symbol (symbol uses are checked "
     "once the module is read)",
     R"(.version 8.0
.target sm_90
.address_size 64
.global .u64 p = nowhere;
)"},
    {"addc on .pred (the carry chain takes 32- or 64-bit integers)",
     R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .align 4 .b8 p[8])
{
	.reg .pred %p<4>;
	addc.pred 	%p1, %p2, %p3;
	ret;
}
)"},
};

// Each minimized finding imports or fails with a located error.
TEST(PTXImporterFuzzTest, MinimizedFindings) {
  for (auto [i, f] : llvm::enumerate(kFindings)) {
    Record r = runIsolated(f.text, "finding" + std::to_string(i) + ".ptx");
    EXPECT_TRUE(r.outcome == Outcome::Ok || r.outcome == Outcome::LocatedError)
        << f.what << ": " << outcomeName(r.outcome) << " " << r.error;
  }
}

} // namespace
