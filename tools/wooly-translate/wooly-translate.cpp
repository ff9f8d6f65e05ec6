//===- wooly-translate.cpp - PTX to Wooly IR translator -----*- C++ -*-===//
//
// Translates between PTX and Wooly IR: `--import-ptx in.ptx` prints the
// raised Wooly IR; `--target=T in.ptx -o out` compiles through the compile
// API (include/Wooly/Compiler/Compiler.h) and writes the binary: PTX text for
// sm_XX, an HSA code object for gfx90a/gfx942 (never to a terminal), an ELF
// object for host.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Compiler/Compiler.h"
#include "Wooly/InitAllPasses.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>

/// The usage of the compile mode (also printed by --help).
static const char *const kCompileUsage =
    "  wooly-translate --target=T [--passes=P] [--kernel=NAME ...]\n"
    "                  [--rocm-device-libs=DIR] [--lld=PATH]\n"
    "                  kernel.{ptx,mlir} [-o out]\n"
    "    compiles for T: sm_XX (PTX text), gfx90a/gfx942 (HSA code object,\n"
    "    linked with ld.lld; binary output is never written to a terminal)\n"
    "    or host (ELF object). --passes runs Wooly passes first (e.g.\n"
    "    wooly-constrain). --kernel compiles only the kernels named (and\n"
    "    the module's variables and device functions).\n"
    "    --rocm-device-libs names ROCm's device-library\n"
    "    bitcode (default: $WOOLY_ROCM_DEVICE_LIBS), needed only by AMD\n"
    "    kernels that call ocml/ockl; --lld the linker (default: ld.lld-22\n"
    "    or ld.lld on PATH).\n";

/// `--target=T [--passes=P] in.{ptx,mlir} [-o out]`: compiles `in` for T.
static int compileMain(int argc, char **argv) {
  std::string target, passes, input, output = "-";
  wooly::CompileOptions opts;
  if (const char *env = std::getenv("WOOLY_ROCM_DEVICE_LIBS"))
    opts.rocmDeviceLibs = env;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a = argv[i];
    if (a.consume_front("--target="))
      target = a.str();
    else if (a.consume_front("--passes="))
      passes = a.str();
    else if (a.consume_front("--kernel=")) {
      if (!opts.kernels)
        opts.kernels.emplace();
      opts.kernels->push_back(a.str());
    } else if (a.consume_front("--rocm-device-libs="))
      opts.rocmDeviceLibs = a.str();
    else if (a.consume_front("--lld="))
      opts.lldPath = a.str();
    else if (a == "-o" && i + 1 < argc)
      output = argv[++i];
    else if (a.consume_front("-o="))
      output = a.str();
    else if (!a.starts_with("-") || a == "-")
      input = a.str();
    else {
      llvm::errs() << "wooly-translate: unknown option '" << a
                   << "' with --target; usage:\n"
                   << kCompileUsage;
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
  opts.passes = passes;
  // Code objects and host objects are binary: refuse a terminal before
  // compiling.
  bool binary = t->kind != wooly::Target::Kind::NVPTX;
  if (binary && output == "-" && llvm::sys::Process::StandardOutIsDisplayed()) {
    llvm::errs() << "wooly-translate: not writing a binary " << t->str()
                 << " object to a terminal; use -o FILE\n";
    return 1;
  }
  llvm::Expected<wooly::CompiledModule> m = wooly::compile(in, *t, opts);
  if (!m) {
    // Located errors come as `file:line:col: error: ...`; name the tool in
    // the others (e.g. a chip the backend does not know).
    std::string msg = llvm::toString(m.takeError());
    if (!llvm::StringRef(msg).split('\n').first.contains("error:"))
      llvm::errs() << "wooly-translate: error: ";
    llvm::errs() << msg << "\n";
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
  std::string overview =
      std::string(
          "wooly-translate: translate PTX to Wooly IR, or compile it.\n\n"
          "  wooly-translate --import-ptx kernel.ptx [-o out.mlir]\n") +
      kCompileUsage +
      "\nErrors are reported as file:line:col diagnostics; the exit status "
      "is\nnon-zero when the input cannot be imported or compiled.\n";
  return mlir::failed(mlir::mlirTranslateMain(argc, argv, overview.c_str()));
}
