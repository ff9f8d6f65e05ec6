//===- TargetCodegen.cpp - LLVM code generation of every target -*- C++ -*-===//
//
// The part of compile() below LLVM IR that every target shares (creating a
// TargetMachine, optimising, generating code) and the two code generators that
// need nothing else: `host` (convert-wooly-to-llvm, native ELF object) and
// `sm_XX` (convert-wooly-to-nvvm, PTX text). The AMDGPU one is in AMDGPU.cpp.
//
//===----------------------------------------------------------------------===//

#include "TargetCodegen.h"
#include "LockstepLanes.h"
#include "WidenAccessChecks.h"

#include "Wooly/Conversion/Passes.h"
#include "Wooly/Dialect/Wooly/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PrintPasses.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Transforms/Scalar/LICM.h"
#include "llvm/Transforms/Scalar/LoopPassManager.h"
#include "llvm/Transforms/Scalar/SimplifyCFG.h"

#include <mutex>

using namespace wooly;
using namespace wooly::detail;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

TargetCodegen::~TargetCodegen() = default;

llvm::CodeGenOptLevel detail::codeGenLevel(unsigned optLevel) {
  switch (optLevel) {
  case 0:
    return llvm::CodeGenOptLevel::None;
  case 1:
    return llvm::CodeGenOptLevel::Less;
  case 2:
    return llvm::CodeGenOptLevel::Default;
  default:
    return llvm::CodeGenOptLevel::Aggressive;
  }
}

Expected<std::unique_ptr<llvm::TargetMachine>>
detail::createTargetMachine(StringRef tripleName, StringRef cpu,
                            StringRef features, StringRef what,
                            unsigned optLevel) {
  llvm::Triple triple(tripleName);
  std::string err;
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t)
    return llvm::createStringError("no LLVM backend for " + what +
                                   " targets: " + err);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      t->createMCSubtargetInfo(triple, "", ""));
  if (!sti || !sti->isCPUStringValid(cpu))
    return llvm::createStringError("unknown " + what + " target '" + cpu + "'");
  llvm::TargetOptions to;
  std::unique_ptr<llvm::TargetMachine> tm(
      t->createTargetMachine(triple, cpu, features, to, llvm::Reloc::PIC_,
                             std::nullopt, codeGenLevel(optLevel)));
  if (!tm)
    return llvm::createStringError("cannot create the " + what +
                                   " target machine for " + cpu);
  return std::move(tm);
}

void detail::optimizeModule(llvm::Module &m, llvm::TargetMachine &tm,
                            unsigned optLevel,
                            const TargetCodegen &targetCodegen) {
  if (optLevel == 0)
    return;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // LLVM's -print-before=... / -print-after=... (with -filter-print-funcs),
  // where a tool parses LLVM's options (wooly-translate); only then, so
  // that other compiles pay nothing for the instrumentation.
  llvm::PassInstrumentationCallbacks pic;
  std::optional<llvm::StandardInstrumentations> si;
  if (llvm::shouldPrintBeforeSomePass() || llvm::shouldPrintAfterSomePass()) {
    si.emplace(m.getContext(), /*DebugLogging=*/false);
    si->registerCallbacks(pic, &mam);
  }
  llvm::PassBuilder pb(&tm, llvm::PipelineTuningOptions(), std::nullopt, &pic);
  targetCodegen.registerPasses(pb);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = optLevel == 1   ? llvm::OptimizationLevel::O1
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                  : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
  mpm.run(m, mam);
}

Expected<std::string> detail::emitCode(llvm::TargetMachine &tm, llvm::Module &m,
                                       llvm::CodeGenFileType fileType) {
  llvm::SmallVector<char, 0> code;
  llvm::raw_svector_ostream os(code);
  llvm::legacy::PassManager codegen;
  if (tm.addPassesToEmitFile(codegen, os, nullptr, fileType))
    return llvm::createStringError("the backend cannot emit code for " +
                                   tm.getTargetCPU());
  codegen.run(m);
  return std::string(code.begin(), code.end());
}

namespace {
/// `host`: the CPU backend's lowering and a native ELF object for the host
/// CPU and its features.
class HostCodegen : public TargetCodegen {
public:
  explicit HostCodegen(const CompileOptions &options)
      : TargetCodegen(options) {}

  Error addLowering(mlir::OpPassManager &pm) const override {
    mlir::wooly::ConvertWoolyToLLVMOptions convOpts;
    convOpts.boundsChecks = options.boundsChecks;
    pm.addPass(mlir::wooly::createConvertWoolyToLLVM(convOpts));
    return Error::success();
  }
  bool keepsVariableNames() const override { return false; }
  /// Every frame of generated code touches its stack page by page
  /// (inline stack probes), so that deep recursion or a large frame meets
  /// the guard page below its stack instead of stepping over it into other
  /// memory; the CPU backend turns that fault into a launch error.
  Error prepareModule(llvm::Module &module) const override {
    for (llvm::Function &f : module)
      if (!f.isDeclaration())
        f.addFnAttr("probe-stack", "inline-asm");
    return Error::success();
  }
  Expected<std::unique_ptr<llvm::TargetMachine>>
  createTargetMachine() const override {
    static std::once_flag once;
    std::call_once(once, [] {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
    });
    llvm::SubtargetFeatures features;
    for (auto &f : llvm::sys::getHostCPUFeatures())
      features.AddFeature(f.first(), f.second);
    return detail::createTargetMachine(
        llvm::sys::getProcessTriple(), llvm::sys::getHostCPUName(),
        features.getString(), "host", options.optLevel);
  }
  /// Bounds checks widened over loops (WidenAccessChecks.h), just before
  /// the vectoriser: the copy of a loop without them may then vectorise.
  /// Then a region's loop run by a warp's lanes in lock step
  /// (LockstepLanes.h).
  void registerPasses(llvm::PassBuilder &pb) const override {
    if (options.boundsChecks)
      pb.registerVectorizerStartEPCallback(
          [](llvm::FunctionPassManager &fpm, llvm::OptimizationLevel) {
            fpm.addPass(WidenAccessChecksPass());
            fpm.addPass(llvm::SimplifyCFGPass());
            fpm.addPass(llvm::createFunctionToLoopPassAdaptor(
                llvm::LICMPass(llvm::LICMOptions()), /*UseMemorySSA=*/true));
          });
    pb.registerVectorizerStartEPCallback(
        [](llvm::FunctionPassManager &fpm, llvm::OptimizationLevel) {
          fpm.addPass(LockstepLanesPass());
        });
  }
  llvm::CodeGenFileType fileType() const override {
    return llvm::CodeGenFileType::ObjectFile;
  }
};

/// `sm_XX`: convert-wooly-to-nvvm and PTX text from LLVM's NVPTX backend,
/// PTX ISA 8.1 for sm_70..sm_90 (the first version whose kernels take up to
/// 32,764 bytes of parameters on sm_70 and later, 4,352 before; CUDA 12.1+
/// ptxas), LLVM's minimum otherwise (8.6 and later from sm_100 on).
class NVPTXCodegen : public TargetCodegen {
public:
  NVPTXCodegen(const Target &target, const CompileOptions &options)
      : TargetCodegen(options), chip(target.chip) {}

  void registerTranslations(mlir::DialectRegistry &registry) const override {
    mlir::registerNVVMDialectTranslation(registry);
  }
  Error addLowering(mlir::OpPassManager &pm) const override {
    mlir::wooly::ConvertWoolyToNVVMOptions nvOpts;
    nvOpts.chip = chip;
    // Constrained and sliced kernels: iteration barriers in ordinary ops.
    pm.addPass(mlir::wooly::createWoolyLowerIterationBarrier());
    pm.addPass(mlir::wooly::createConvertWoolyToNVVM(nvOpts));
    return Error::success();
  }
  Expected<std::unique_ptr<llvm::TargetMachine>>
  createTargetMachine() const override {
    static std::once_flag once;
    std::call_once(once, [] {
      LLVMInitializeNVPTXTargetInfo();
      LLVMInitializeNVPTXTarget();
      LLVMInitializeNVPTXTargetMC();
      LLVMInitializeNVPTXAsmPrinter();
    });
    unsigned sm = 0;
    StringRef(chip).drop_front(3).getAsInteger(10, sm);
    return detail::createTargetMachine("nvptx64-nvidia-cuda", chip,
                                       sm >= 70 && sm <= 90 ? "+ptx81" : "",
                                       "NVIDIA", options.optLevel);
  }
  llvm::CodeGenFileType fileType() const override {
    return llvm::CodeGenFileType::AssemblyFile;
  }
  /// Local symbols get the names NVPTX's backend would give them (`.` and
  /// other characters PTX does not allow become `_$_`) before the module is
  /// split: the parts refer to them by these names, as declarations the
  /// backend would not rename.
  Error prepareModule(llvm::Module &module) const override {
    auto clean = [](llvm::GlobalValue &g) {
      if (!g.hasLocalLinkage())
        return;
      std::string name;
      for (char c : g.getName())
        if (llvm::isAlnum(c) || c == '_' || c == '$')
          name += c;
        else
          name += "_$_";
      g.setName(name);
    };
    for (llvm::GlobalVariable &g : module.globals())
      clean(g);
    for (llvm::Function &f : module.functions())
      clean(f);
    return Error::success();
  }
  bool joinsParts() const override { return true; }
  Expected<std::string>
  joinParts(llvm::ArrayRef<std::string> parts) const override {
    return joinPTXParts(parts);
  }
  /// fp8 `mma.sync` (sm_89 and later; written as inline PTX) needs PTX ISA
  /// 8.7 (8.4 for m16n8k32 with f32 accumulators): such modules declare at
  /// least 8.7 (CUDA 12.8+ ptxas) instead of 8.1 (or LLVM's minimum).
  Error finish(std::string code, CompiledModule &out) const override {
    static const llvm::Regex fp8Mma(
        "mma\\.sync\\.aligned\\.[^ ]*\\.e[45]m[23]\\.");
    static const llvm::Regex version("\\.version ([0-9]+)\\.([0-9]+)\n");
    llvm::SmallVector<StringRef, 3> m;
    unsigned major = 0, minor = 0;
    if (fp8Mma.match(code) && version.match(code, &m) &&
        !m[1].getAsInteger(10, major) && !m[2].getAsInteger(10, minor) &&
        major * 10 + minor < 87) {
      size_t at = m[0].data() - code.data();
      code.replace(at, m[0].size(), ".version 8.7\n");
    }
    out.binary = std::move(code);
    return Error::success();
  }

private:
  std::string chip;
};
} // namespace

Expected<std::unique_ptr<TargetCodegen>>
detail::createTargetCodegen(const Target &target,
                            const CompileOptions &options) {
  switch (target.kind) {
  case Target::Kind::Host:
    return std::make_unique<HostCodegen>(options);
  case Target::Kind::NVPTX:
    return std::make_unique<NVPTXCodegen>(target, options);
  case Target::Kind::AMDGCN:
    return createAMDGPUCodegen(target, options);
  }
  return llvm::createStringError("unknown target kind");
}

Error detail::compileLLVMModule(const TargetCodegen &targetCodegen,
                                llvm::TargetMachine &tm, llvm::Module &module,
                                unsigned optLevel, CompiledModule &out,
                                unsigned threads) {
  module.setTargetTriple(tm.getTargetTriple());
  module.setDataLayout(tm.createDataLayout());
  if (Error e = targetCodegen.prepareModule(module))
    return e;
  // Several kernels: in parallel, below LLVM IR (SplitCodegen.cpp).
  if (targetCodegen.joinsParts())
    if (std::optional<std::vector<ModulePart>> parts =
            splitModuleByRoots(module)) {
      Expected<std::vector<std::string>> outputs =
          compileModuleParts(targetCodegen, *parts, optLevel, threads);
      if (!outputs)
        return outputs.takeError();
      Expected<std::string> joined = targetCodegen.joinParts(*outputs);
      if (!joined)
        return joined.takeError();
      return targetCodegen.finish(std::move(*joined), out);
    }
  optimizeModule(module, tm, optLevel, targetCodegen);
  Expected<std::string> code = emitCode(tm, module, targetCodegen.fileType());
  if (!code)
    return code.takeError();
  return targetCodegen.finish(std::move(*code), out);
}
