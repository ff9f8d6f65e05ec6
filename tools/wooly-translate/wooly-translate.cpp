//===- wooly-translate.cpp - PTX to Wooly IR translator -----*- C++ -*-===//
//
// Translates between PTX and Wooly IR: `--import-ptx in.ptx` prints the
// raised Wooly IR; `--target=sm_90 in.ptx -o out.ptx` compiles through the
// compile API (include/Wooly/Compiler/Compiler.h) and writes the binary
// (PTX text for sm_XX).
//
//===----------------------------------------------------------------------===//

#include "Wooly/Compiler/Compiler.h"
#include "Wooly/InitAllPasses.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

/// `--target=T [--passes=P] in.{ptx,mlir} [-o out]`: compiles `in` for T.
static int compileMain(int argc, char **argv) {
  std::string target, passes, input, output = "-";
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a = argv[i];
    if (a.consume_front("--target="))
      target = a.str();
    else if (a.consume_front("--passes="))
      passes = a.str();
    else if (a == "-o" && i + 1 < argc)
      output = argv[++i];
    else if (a.consume_front("-o="))
      output = a.str();
    else if (!a.starts_with("-") || a == "-")
      input = a.str();
    else {
      llvm::errs() << "wooly-translate: unknown option '" << a
                   << "' with --target\n";
      return 1;
    }
  }
  if (input.empty())
    input = "-";
  auto buf = llvm::MemoryBuffer::getFileOrSTDIN(input);
  if (!buf) {
    llvm::errs() << input << ": " << buf.getError().message() << "\n";
    return 1;
  }
  llvm::Expected<wooly::Target> t = wooly::Target::parse(target);
  if (!t) {
    llvm::errs() << "wooly-translate: " << llvm::toString(t.takeError())
                 << "\n";
    return 1;
  }
  wooly::CompileInput in;
  in.kind = llvm::StringRef(input).ends_with(".mlir")
                ? wooly::CompileInput::Kind::MLIR
                : wooly::CompileInput::Kind::PTX;
  in.text = (*buf)->getBuffer().str();
  in.name = input == "-" ? "<stdin>" : input;
  wooly::CompileOptions opts;
  opts.passes = passes;
  llvm::Expected<wooly::CompiledModule> m = wooly::compile(in, *t, opts);
  if (!m) {
    llvm::errs() << llvm::toString(m.takeError()) << "\n";
    return 1;
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(output, ec, llvm::sys::fs::OF_None);
  if (ec) {
    llvm::errs() << output << ": " << ec.message() << "\n";
    return 1;
  }
  os << m->binary;
  return 0;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (llvm::StringRef(argv[i]).starts_with("--target="))
      return compileMain(argc, argv);
  mlir::wooly::hideBackendOptions();
  mlir::wooly::registerAllTranslations();
  return mlir::failed(mlir::mlirTranslateMain(
      argc, argv,
      "wooly-translate: translate PTX to Wooly IR.\n\n"
      "  wooly-translate --import-ptx kernel.ptx [-o out.mlir]\n"
      "  wooly-translate --target=sm_90 kernel.ptx -o out.ptx\n\n"
      "Errors are reported as file:line:col diagnostics; the exit status is\n"
      "non-zero when the input cannot be imported.\n"));
}
