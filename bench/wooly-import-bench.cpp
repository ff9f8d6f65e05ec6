//===- wooly-import-bench.cpp - PTX import throughput benchmark -*- C++ -*-===//
//
// Times importPTX on the largest PTX files of the corpus (and the ZLUDA
// conformance PTX when present) plus a synthetic module of >100k
// instructions, and, in the same run, the time MLIR takes to parse the
// printed Wooly IR of the same module. Prints one table row per input.
// See bench/README.md.
//
//===----------------------------------------------------------------------===//

#include "Wooly/InitAllDialects.h"
#include "Wooly/Target/PTX/Lexer.h"
#include "Wooly/Target/PTX/PTXImporter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#ifndef WOOLY_SOURCE_DIR
#define WOOLY_SOURCE_DIR "."
#endif

using namespace mlir;
using wooly::ptx::Lexer;
using wooly::ptx::Token;
using wooly::ptx::TokenKind;

static llvm::cl::OptionCategory benchCategory("wooly-import-bench options");
static llvm::cl::list<std::string>
    inputFiles(llvm::cl::Positional,
               llvm::cl::desc("[PTX files; default: the corpus and ZLUDA PTX]"),
               llvm::cl::cat(benchCategory));
static llvm::cl::opt<unsigned>
    numLargest("n", llvm::cl::desc("How many of the largest files to time"),
               llvm::cl::init(8), llvm::cl::cat(benchCategory));
static llvm::cl::opt<unsigned> minInstructions(
    "synthetic-instructions",
    llvm::cl::desc("Instructions in the synthetic module (0: none)"),
    llvm::cl::init(100000), llvm::cl::cat(benchCategory));
static llvm::cl::opt<double>
    minSeconds("min-time",
               llvm::cl::desc("Seconds to spend per measurement (at least "
                              "3 repetitions)"),
               llvm::cl::init(0.5), llvm::cl::cat(benchCategory));
static llvm::cl::opt<std::string> writeSynthetic(
    "write-synthetic",
    llvm::cl::desc("Also write the synthetic module to this file (to "
                   "profile wooly-translate --import-ptx on it)"),
    llvm::cl::value_desc("path"), llvm::cl::cat(benchCategory));
static llvm::cl::opt<bool> cpuTime(
    "cpu-time",
    llvm::cl::desc("Time with the measuring thread's CPU time instead of "
                   "the wall clock (for a machine other work shares: time "
                   "spent waiting for a core is not counted)"),
    llvm::cl::init(false), llvm::cl::cat(benchCategory));
static llvm::cl::opt<bool> importOnly(
    "import-only",
    llvm::cl::desc("Time only the import, not the reparse (to profile the "
                   "importer alone)"),
    llvm::cl::init(false), llvm::cl::cat(benchCategory));
static llvm::cl::opt<bool> printLocations(
    "print-locations",
    llvm::cl::desc("Print (and so reparse) the IR with its locations"),
    llvm::cl::init(false), llvm::cl::cat(benchCategory));

namespace {

/// One benchmark input.
struct Input {
  std::string name;
  std::string text;
};

/// Returns true for the directives that end at the line end (no `;`).
bool isLineDirective(const Token &t) {
  return t.isWord(".version") || t.isWord(".target") ||
         t.isWord(".address_size") || t.isWord(".file") || t.isWord(".loc");
}

/// Scans `text` with the PTX lexer. Returns the number of instructions:
/// statements inside function bodies that start with an opcode (optionally
/// after a `@%p` guard) and end with `;`. Declarations (`.reg`, `.param`,
/// `.shared`, ...), `.pragma`, labels and `{`/`}` scopes are not counted.
/// If `symbols` is given, it receives the names that are module symbols in
/// Wooly IR: the first identifier outside parentheses of each module-scope
/// statement (kernels, functions, variables) and the names of function-scope
/// `.local`/`.shared`/`.global`/`.const` variables.
unsigned scanPTX(llvm::StringRef text,
                 std::vector<llvm::StringRef> *symbols = nullptr) {
  Lexer lexer(text);
  unsigned count = 0;
  int bodyDepth = 0;  // > 0 inside a function body
  int parenDepth = 0; // at module scope
  bool haveName = false;
  bool prevWasEqual = false;
  auto skipStatement = [&] {
    for (Token t = lexer.next(); !t.is(TokenKind::Eof); t = lexer.next())
      if (t.is(TokenKind::Semicolon))
        return;
  };
  for (Token t = lexer.next(); !t.is(TokenKind::Eof); t = lexer.next()) {
    if (isLineDirective(t)) {
      lexer.skipToEndOfLine();
      continue;
    }
    if (bodyDepth == 0) {
      if (t.is(TokenKind::LBrace) && prevWasEqual) {
        // A variable initializer `= {...}`.
        for (int d = 1; d && !t.is(TokenKind::Eof);) {
          t = lexer.next();
          d += t.is(TokenKind::LBrace) - t.is(TokenKind::RBrace);
        }
      } else if (t.is(TokenKind::LBrace)) {
        bodyDepth = 1;
      } else if (t.is(TokenKind::LParen)) {
        ++parenDepth;
      } else if (t.is(TokenKind::RParen)) {
        --parenDepth;
      } else if (t.is(TokenKind::Semicolon)) {
        haveName = false;
        parenDepth = 0;
      } else if (t.is(TokenKind::Identifier) && parenDepth == 0 && !haveName) {
        if (symbols)
          symbols->push_back(t.spelling);
        haveName = true;
      }
      prevWasEqual = t.is(TokenKind::Equal);
      continue;
    }
    // Inside a body, at the start of a statement.
    if (t.is(TokenKind::LBrace)) {
      ++bodyDepth;
    } else if (t.is(TokenKind::RBrace)) {
      if (--bodyDepth == 0) {
        haveName = false;
        parenDepth = 0;
      }
    } else if (t.is(TokenKind::Identifier)) {
      const char *pos = lexer.remaining().data();
      if (lexer.next().is(TokenKind::Colon))
        continue; // a label
      lexer.resetTo(pos);
      ++count;
      skipStatement();
    } else if (t.is(TokenKind::At)) {
      ++count;
      skipStatement();
    } else if (t.is(TokenKind::Directive)) {
      // Function-scope variables outside .reg/.param are module symbols in
      // Wooly IR: collect their names too.
      bool isVar = t.isWord(".local") || t.isWord(".shared") ||
                   t.isWord(".global") || t.isWord(".const");
      for (t = lexer.next();
           !t.is(TokenKind::Eof) && !t.is(TokenKind::Semicolon);
           t = lexer.next()) {
        if (isVar && symbols && t.is(TokenKind::Identifier)) {
          symbols->push_back(t.spelling);
          isVar = false;
        }
      }
    }
  }
  return count;
}

/// Returns `text` without its `.version`, `.target` and `.address_size`
/// lines and with every module-scope name `n` in `symbols` renamed to
/// `n<suffix>`.
std::string renameCopy(llvm::StringRef text, const llvm::StringSet<> &symbols,
                       llvm::StringRef suffix) {
  std::string out;
  Lexer lexer(text);
  const char *copied = text.begin();
  for (Token t = lexer.next(); !t.is(TokenKind::Eof); t = lexer.next()) {
    if (t.isWord(".version") || t.isWord(".target") ||
        t.isWord(".address_size")) {
      out.append(copied, t.loc());
      lexer.skipToEndOfLine();
      copied = lexer.remaining().data();
      continue;
    }
    if (t.is(TokenKind::Identifier) && symbols.contains(t.spelling)) {
      out.append(copied, t.loc() + t.spelling.size());
      out += suffix;
      copied = t.loc() + t.spelling.size();
    }
  }
  out.append(copied, text.end());
  return out;
}

/// Concatenates renamed copies of `kernels` until the module has at least
/// `minInstr` instructions.
Input makeSynthetic(const std::vector<Input> &kernels, unsigned minInstr) {
  unsigned perRound = 0;
  for (const Input &k : kernels)
    perRound += scanPTX(k.text);
  unsigned rounds = perRound ? (minInstr + perRound - 1) / perRound : 0;
  Input syn;
  syn.text = ".version 9.0\n.target sm_90\n.address_size 64\n";
  for (unsigned r = 0; r < rounds; ++r) {
    for (const Input &k : kernels) {
      std::vector<llvm::StringRef> names;
      scanPTX(k.text, &names);
      llvm::StringSet<> set;
      for (llvm::StringRef n : names)
        set.insert(n);
      syn.text += "\n// ---- " + k.name + " copy " + std::to_string(r) + "\n";
      syn.text += renameCopy(k.text, set,
                             "_c" + std::to_string(r) + "_" +
                                 std::to_string(&k - kernels.data()));
    }
  }
  syn.name = "synthetic(" + std::to_string(rounds) + "x" +
             std::to_string(kernels.size()) + " kernels)";
  return syn;
}

/// Reads the `*.ptx` files of `dir`, sorted by name.
void readDir(llvm::StringRef dir, std::vector<Input> &inputs) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".ptx")
      paths.push_back(it->path());
  llvm::sort(paths);
  for (const std::string &p : paths)
    if (auto buf = llvm::MemoryBuffer::getFile(p))
      inputs.push_back({p, (*buf)->getBuffer().str()});
}

/// The kernel a corpus file holds: `softmax` for `softmax.sm_90.ptx`.
std::string kernelName(llvm::StringRef path) {
  llvm::StringRef file = llvm::sys::path::filename(path);
  return file.substr(0, file.find('.')).str();
}

/// A point in time on the clock the measurements use (--cpu-time: this
/// thread's CPU time; otherwise the steady wall clock), in seconds.
double now() {
  if (cpuTime) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
  }
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Seconds since `start` (a value of now()).
double secondsSince(double start) { return now() - start; }

/// Runs `fn` (which returns the seconds one call took) at least 3 times
/// and for at least --min-time seconds; returns the median.
template <typename Fn> double median(Fn fn) {
  std::vector<double> times;
  double total = 0;
  while (times.size() < 3 || (total < minSeconds && times.size() < 1000)) {
    double t = fn();
    times.push_back(t);
    total += t;
  }
  llvm::sort(times);
  return times[times.size() / 2];
}

/// Imports `text`; returns null and sets `error` on failure.
OwningOpRef<ModuleOp> import(MLIRContext &ctx, const Input &in,
                             std::string &error) {
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (error.empty()) {
      llvm::raw_string_ostream os(error);
      os << d.getLocation() << ": " << d.str();
    }
    return success();
  });
  return wooly::importPTX(in.text, in.name, &ctx);
}

/// The measurements of one input.
struct Row {
  std::string name;
  size_t ptxBytes = 0, irBytes = 0;
  unsigned instructions = 0;
  double importSec = 0, reparseSec = 0;
};

/// Measures `in`; false (with a message) if it does not import or reparse.
bool measure(const Input &in, Row &row) {
  row.name = llvm::sys::path::filename(in.name).str();
  row.ptxBytes = in.text.size();
  row.instructions = scanPTX(in.text);

  MLIRContext importCtx(MLIRContext::Threading::DISABLED);
  std::string error;
  OwningOpRef<ModuleOp> module = import(importCtx, in, error);
  if (!module) {
    llvm::errs() << "skipping " << in.name << ": " << error << "\n";
    return false;
  }
  std::string ir;
  {
    llvm::raw_string_ostream os(ir);
    OpPrintingFlags flags;
    if (printLocations)
      flags.enableDebugInfo();
    module->print(os, flags);
  }
  row.irBytes = ir.size();
  module = nullptr;

  row.importSec = median([&] {
    double start = now();
    OwningOpRef<ModuleOp> m = wooly::importPTX(in.text, in.name, &importCtx);
    double t = secondsSince(start);
    if (!m)
      llvm::report_fatal_error("import failed on repetition");
    return t;
  });
  if (importOnly)
    return true;

  DialectRegistry registry;
  wooly::registerAllDialects(registry);
  MLIRContext parseCtx(registry, MLIRContext::Threading::DISABLED);
  parseCtx.loadAllAvailableDialects();
  ParserConfig config(&parseCtx);
  {
    ScopedDiagnosticHandler handler(&parseCtx, [&](Diagnostic &d) {
      if (error.empty()) {
        llvm::raw_string_ostream os(error);
        os << d.getLocation() << ": " << d.str();
      }
      return success();
    });
    if (!parseSourceString<ModuleOp>(ir, config)) {
      llvm::errs() << "skipping " << in.name
                   << ": the printed IR does not parse: " << error << "\n";
      return false;
    }
  }
  row.reparseSec = median([&] {
    double start = now();
    OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(ir, config);
    double t = secondsSince(start);
    if (!m)
      llvm::report_fatal_error("reparse failed on repetition");
    return t;
  });
  return true;
}

void printTable(const std::vector<Row> &rows) {
  std::printf("%-34s %8s %8s %10s %10s %11s %10s %8s\n", "file", "PTX KiB",
              "IR KiB", "instrs", "import ms", "instr/s", "reparse ms",
              "imp/rep");
  std::printf("%s\n", std::string(106, '-').c_str());
  for (const Row &r : rows)
    std::printf("%-34s %8.1f %8.1f %10u %10.3f %11.0f %10.3f %8.2f\n",
                r.name.substr(0, 34).c_str(), r.ptxBytes / 1024.0,
                r.irBytes / 1024.0, r.instructions, r.importSec * 1e3,
                r.instructions / r.importSec, r.reparseSec * 1e3,
                r.reparseSec > 0 ? r.importSec / r.reparseSec : 0.0);
}

} // namespace

int main(int argc, char **argv) {
  llvm::cl::HideUnrelatedOptions(benchCategory);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "wooly-import-bench: PTX import throughput vs. MLIR reparsing\n");

  std::vector<Input> all;
  if (inputFiles.empty()) {
    readDir(WOOLY_SOURCE_DIR "/test/corpus", all);
    readDir(WOOLY_SOURCE_DIR "/../shared/conformance/zluda/ptx", all);
  } else {
    for (const std::string &p : inputFiles) {
      auto buf = llvm::MemoryBuffer::getFile(p);
      if (!buf) {
        llvm::errs() << "cannot read " << p << "\n";
        return 1;
      }
      all.push_back({p, (*buf)->getBuffer().str()});
    }
  }

  // Inputs that import, largest first; one file per kernel name (the
  // sm_80 and sm_90 versions of a corpus kernel are near-identical).
  std::vector<Input> importable;
  {
    MLIRContext ctx(MLIRContext::Threading::DISABLED);
    for (Input &in : all) {
      std::string error;
      if (import(ctx, in, error))
        importable.push_back(in);
      else
        llvm::errs() << "not importable: " << in.name << ": " << error << "\n";
    }
  }
  llvm::sort(importable, [](const Input &a, const Input &b) {
    if (a.text.size() != b.text.size())
      return a.text.size() > b.text.size();
    return a.name < b.name;
  });
  std::vector<Input> largest;
  llvm::StringSet<> seen;
  for (const Input &in : importable)
    if (largest.size() < numLargest && seen.insert(kernelName(in.name)).second)
      largest.push_back(in);

  // The synthetic module: every distinct corpus kernel (sm_90 versions),
  // renamed and repeated.
  std::vector<Input> kernels;
  for (const Input &in : importable)
    if (llvm::StringRef(in.name).contains(".sm_90."))
      kernels.push_back(in);
  llvm::sort(kernels,
             [](const Input &a, const Input &b) { return a.name < b.name; });
  if (minInstructions && !kernels.empty()) {
    largest.push_back(makeSynthetic(kernels, minInstructions));
    if (!writeSynthetic.empty()) {
      std::error_code ec;
      llvm::raw_fd_ostream os(writeSynthetic, ec);
      if (ec) {
        llvm::errs() << "cannot write " << writeSynthetic << ": "
                     << ec.message() << "\n";
        return 1;
      }
      os << largest.back().text;
    }
  }

  std::vector<Row> rows;
  for (const Input &in : largest) {
    Row row;
    if (measure(in, row))
      rows.push_back(row);
  }
  std::printf("Wooly PTX import vs. MLIR reparse of the imported IR "
              "(single thread, median of >= 3 runs, >= %.2f s each, %s)\n",
              static_cast<double>(minSeconds),
              cpuTime ? "thread CPU time" : "wall clock");
  printTable(rows);

  if (!rows.empty()) {
    const Row &big = *llvm::max_element(rows, [](const Row &a, const Row &b) {
      return a.instructions < b.instructions;
    });
    double rate = big.instructions / big.importSec;
    double ratio = big.importSec / big.reparseSec;
    std::printf("\ntargets on %s:\n", big.name.c_str());
    std::printf("  import >= 1M instr/s:             %.0f instr/s  %s\n", rate,
                rate >= 1e6 ? "MET" : "NOT MET");
    if (!importOnly)
      std::printf("  import time <= 0.8 x reparse:     ratio %.2f   %s\n",
                  ratio, ratio <= 0.8 ? "MET" : "NOT MET");
  }
  return 0;
}
