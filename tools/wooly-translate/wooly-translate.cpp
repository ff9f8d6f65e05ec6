//===- wooly-translate.cpp - PTX to Wooly IR translator -----*- C++ -*-===//
//
// Translates between PTX and Wooly IR: `--import-ptx in.ptx` prints the
// raised Wooly IR; `--target=T in.ptx -o out` compiles through the compile
// API (include/Wooly/Compiler/Compiler.h) and writes the binary: PTX text for
// sm_XX, an HSA code object for gfx90a/gfx942 (never to a terminal), an ELF
// object for host. Both modes share one llvm::cl command line; the import
// mode runs the registered translation as mlir-translate does.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Compiler/Compiler.h"
#include "Wooly/InitAllPasses.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Support/ToolUtilities.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>

namespace cl = llvm::cl;

/// The usage of the compile mode (printed by --help).
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

namespace {
/// The command line. Registered in `main` after the backends' options are
/// hidden (see hideBackendOptions), as mlir-translate registers its own.
struct Options {
  cl::opt<std::string> input{cl::Positional, cl::desc("<input file>"),
                             cl::init("-")};
  cl::opt<std::string> output{"o", cl::desc("Output filename"),
                              cl::value_desc("filename"), cl::init("-")};

  // Import mode (mlir-translate's options).
  cl::opt<const mlir::Translation *, false, mlir::TranslationParser>
      translation{"", cl::desc("Translations to perform")};
  cl::opt<bool> allowUnregisteredDialects{
      "allow-unregistered-dialect",
      cl::desc("Allow operation with no registered dialects (discouraged: "
               "testing only!)"),
      cl::init(false)};
  cl::opt<std::string> inputSplitMarker{
      "split-input-file", cl::ValueOptional,
      cl::callback([this](const std::string &marker) {
        // Without a value: the default marker.
        if (marker.empty())
          inputSplitMarker.setValue(mlir::kDefaultSplitMarker);
      }),
      cl::desc("Split the input file into chunks using the given or default "
               "marker and process each chunk independently"),
      cl::init("")};
  cl::opt<std::string> outputSplitMarker{
      "output-split-marker",
      cl::desc("Split marker to use for merging the ouput"), cl::init("")};
  cl::opt<mlir::SourceMgrDiagnosticVerifierHandler::Level> verifyDiagnostics{
      "verify-diagnostics", cl::ValueOptional,
      cl::desc("Check that emitted diagnostics match expected-* lines on the "
               "corresponding line"),
      cl::values(
          clEnumValN(mlir::SourceMgrDiagnosticVerifierHandler::Level::All,
                     "all",
                     "Check all diagnostics (expected, unexpected, "
                     "near-misses)"),
          clEnumValN(mlir::SourceMgrDiagnosticVerifierHandler::Level::All, "",
                     "Check all diagnostics (expected, unexpected, "
                     "near-misses)"),
          clEnumValN(
              mlir::SourceMgrDiagnosticVerifierHandler::Level::OnlyExpected,
              "only-expected", "Check only expected diagnostics"))};
  cl::opt<bool> errorDiagnosticsOnly{
      "error-diagnostics-only",
      cl::desc("Filter all non-error diagnostics (discouraged: testing "
               "only!)"),
      cl::init(false)};

  // Compile mode.
  cl::OptionCategory compileCat{"Compile options (--target)"};
  cl::opt<std::string> target{
      "target",
      cl::desc("Compile for T: sm_XX, gfx90a, gfx942 or host (instead of a "
               "translation)"),
      cl::value_desc("T"), cl::cat(compileCat)};
  cl::opt<std::string> passes{
      "passes", cl::desc("Wooly passes to run first, e.g. wooly-constrain"),
      cl::value_desc("pipeline"), cl::cat(compileCat)};
  cl::list<std::string> kernels{
      "kernel",
      cl::desc("Compile only this kernel (and the module's variables and "
               "device functions); repeatable"),
      cl::value_desc("name"), cl::cat(compileCat)};
  cl::opt<std::string> rocmDeviceLibs{
      "rocm-device-libs",
      cl::desc("ROCm's device-library bitcode (default: "
               "$WOOLY_ROCM_DEVICE_LIBS)"),
      cl::value_desc("dir"), cl::cat(compileCat)};
  cl::opt<std::string> lld{
      "lld", cl::desc("The linker (default: ld.lld-22 or ld.lld on PATH)"),
      cl::value_desc("path"), cl::cat(compileCat)};
  cl::opt<unsigned> compileThreads{
      "compile-threads",
      cl::desc("sm_XX: compile the kernels of a module on N threads (0: "
               "the hardware's, at most 8; 1: one after the other); the "
               "output is the same whatever N"),
      cl::value_desc("N"), cl::init(0), cl::cat(compileCat)};
  cl::opt<bool> kernelModes{
      "kernel-modes",
      cl::desc("--target=host: instead of the object, print how each "
               "kernel runs on the CPU backend (direct, region - with a "
               "warp function where whole warps can run at once - or "
               "fibers and why)"),
      cl::cat(compileCat)};
};
} // namespace

/// Compiles `--input` for `--target` and writes the binary to `-o`.
static int compileMain(const Options &o) {
  wooly::CompileOptions opts;
  if (o.rocmDeviceLibs.getNumOccurrences())
    opts.rocmDeviceLibs = o.rocmDeviceLibs;
  else if (const char *env = std::getenv("WOOLY_ROCM_DEVICE_LIBS"))
    opts.rocmDeviceLibs = env;
  if (!o.kernels.empty())
    opts.kernels.emplace(o.kernels.begin(), o.kernels.end());
  opts.lldPath = o.lld;
  opts.passes = o.passes;
  opts.threads = o.compileThreads;
  const std::string &input = o.input, &output = o.output;
  auto buf = llvm::MemoryBuffer::getFileOrSTDIN(input);
  if (!buf) {
    llvm::errs() << input << ": " << buf.getError().message() << "\n";
    return 1;
  }
  llvm::Expected<wooly::Target> t = wooly::Target::parse(o.target);
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
  // Code objects and host objects are binary: refuse a terminal before
  // compiling.
  bool binary = t->kind != wooly::Target::Kind::NVPTX;
  if (binary && !o.kernelModes && output == "-" &&
      llvm::sys::Process::StandardOutIsDisplayed()) {
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
  if (o.kernelModes) {
    // One line a kernel: `name: mode[: why fibers]`.
    for (const wooly::KernelInfo &k : m->kernels) {
      llvm::outs() << k.name << ": ";
      if (!k.needsFibers)
        llvm::outs() << "direct\n";
      else if (!k.regionSymbol.empty())
        llvm::outs() << (k.warpSymbol.empty() ? "region\n"
                                              : "region, warp function\n");
      else
        llvm::outs() << "fibers: " << k.fiberReason << "\n";
    }
    return 0;
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

/// Runs the requested translation on each chunk of `--input`, as
/// mlir-translate does.
static int translateMain(const Options &o) {
  mlir::DefaultTimingManager tm;
  mlir::applyDefaultTimingManagerCLOptions(tm);
  mlir::TimingScope timing = tm.getRootScope();
  const mlir::Translation &translation = *o.translation;
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      translation.getInputAlignment()
          ? mlir::openInputFile(o.input, *translation.getInputAlignment(),
                                &error)
          : mlir::openInputFile(o.input, &error);
  std::unique_ptr<llvm::ToolOutputFile> output =
      input ? mlir::openOutputFile(o.output, &error) : nullptr;
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  auto processChunk = [&](std::unique_ptr<llvm::MemoryBuffer> chunk,
                          llvm::raw_ostream &os) {
    // Translations expect a null-terminated buffer; chunks need not be.
    if (!chunk->getBuffer().ends_with('\0'))
      chunk = llvm::MemoryBuffer::getMemBufferCopy(
          chunk->getBuffer(), chunk->getBufferIdentifier());
    mlir::TimingScope translationTiming =
        timing.nest(translation.getDescription());
    mlir::MLIRContext context;
    context.allowUnregisteredDialects(o.allowUnregisteredDialects);
    context.printOpOnDiagnostic(o.verifyDiagnostics.getNumOccurrences() == 0);
    auto sourceMgr = std::make_shared<llvm::SourceMgr>();
    sourceMgr->AddNewSourceBuffer(std::move(chunk), llvm::SMLoc());
    if (o.verifyDiagnostics.getNumOccurrences()) {
      // Whether the translation fails does not count: the diagnostics do.
      mlir::SourceMgrDiagnosticVerifierHandler handler(*sourceMgr, &context,
                                                       o.verifyDiagnostics);
      (void)translation(sourceMgr, os, &context);
      return handler.verify();
    }
    mlir::SourceMgrDiagnosticHandler handler(*sourceMgr, &context);
    std::optional<mlir::ScopedDiagnosticHandler> errorsOnly;
    if (o.errorDiagnosticsOnly)
      errorsOnly.emplace(&context, [](mlir::Diagnostic &diag) {
        // Handled (dropped) unless an error.
        return mlir::success(diag.getSeverity() !=
                             mlir::DiagnosticSeverity::Error);
      });
    return translation(sourceMgr, os, &context);
  };
  if (mlir::failed(mlir::splitAndProcessBuffer(std::move(input), processChunk,
                                               output->os(), o.inputSplitMarker,
                                               o.outputSplitMarker)))
    return 1;
  output->keep();
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::wooly::hideBackendOptions();
  mlir::wooly::registerAllTranslations();
  Options options;
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerTranslationCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  std::string overview =
      std::string(
          "wooly-translate: translate PTX to Wooly IR, or compile it.\n\n"
          "  wooly-translate --import-ptx kernel.ptx [-o out.mlir]\n") +
      kCompileUsage +
      "\nErrors are reported as file:line:col diagnostics; the exit status "
      "is\nnon-zero when the input cannot be imported or compiled.\n";
  cl::ParseCommandLineOptions(argc, argv, overview);
  bool compile = options.target.getNumOccurrences() != 0;
  if (compile == (options.translation.getNumOccurrences() != 0)) {
    llvm::errs() << "wooly-translate: give either a translation "
                    "(--import-ptx) or --target=T; see --help\n";
    return 1;
  }
  return compile ? compileMain(options) : translateMain(options);
}
