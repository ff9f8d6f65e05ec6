//===- AMDGPU.cpp - The gfxXXX backend of the compile API -------*- C++ -*-===//
//
// Wooly IR -> convert-wooly-to-rocdl{chip=...} -> LLVM IR -> LLVM's AMDGPU
// backend (amdgcn-amd-amdhsa, code object v5) -> relocatable object ->
// `ld.lld -shared` -> HSA code object, the binary a HIP runtime loads.
//
// - ROCm's device libraries are linked only when the module calls them
//   (declares `__ocml_*`/`__ockl_*` functions), from the directory the caller
//   names (CompileOptions::rocmDeviceLibs): ocml/ockl plus the oclc control
//   libraries for the chip, with llvm::Linker's LinkOnlyNeeded, then every
//   definition they brought is internalized. Kernels that call no device
//   library need no ROCm installation at all.
// - ld.lld runs as a subprocess on temporary files, removed afterwards.
// - The registers, spills and segment sizes of each kernel come from the
//   code object's AMDGPU metadata note (NT_AMDGPU_METADATA, msgpack), i.e.
//   from what the backend actually allocated.
//
//===----------------------------------------------------------------------===//

#include "TargetCodegen.h"

#include "Wooly/Conversion/Passes.h"
#include "Wooly/Dialect/Wooly/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/ROCDL/ROCDLToLLVMIRTranslation.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/Internalize.h"

#include <map>
#include <mutex>
#include <optional>

using namespace wooly;
using namespace wooly::detail;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

/// The AMD chips the compile API accepts (those the ROCDL lowering targets).
static constexpr StringRef kChips[] = {"gfx90a", "gfx942"};
/// The code object version written (the module flag's encoding: 500 = v5).
static constexpr unsigned kCodeObjectVersion = 500;

//===----------------------------------------------------------------------===//
// ROCm device libraries
//===----------------------------------------------------------------------===//

std::vector<std::string> detail::rocmDeviceLibFiles(StringRef chip) {
  // The control libraries clang links for HIP with default flags. The
  // wavefront-size one is last: newer ROCm releases no longer ship it, so it
  // is linked only when present (see linkROCmDeviceLibs).
  return {"ocml.bc",
          "ockl.bc",
          ("oclc_isa_version_" + chip.drop_front(3) + ".bc").str(),
          "oclc_abi_version_" + std::to_string(kCodeObjectVersion) + ".bc",
          "oclc_daz_opt_off.bc",
          "oclc_unsafe_math_off.bc",
          "oclc_finite_only_off.bc",
          "oclc_correctly_rounded_sqrt_on.bc",
          "oclc_wavefrontsize64_on.bc"};
}

namespace {
/// The device library (`ocml`, `ockl`) that defines `name`, or "".
StringRef deviceLibOf(StringRef name) {
  if (name.starts_with("__ocml_"))
    return "ocml";
  if (name.starts_with("__ockl_"))
    return "ockl";
  return "";
}

/// The device-library functions `m` uses but does not define, grouped by
/// library.
std::map<std::string, std::vector<std::string>>
neededDeviceLibs(const llvm::Module &m) {
  std::map<std::string, std::vector<std::string>> needed;
  for (const llvm::Function &f : m)
    if (f.isDeclaration() && !f.use_empty() &&
        !deviceLibOf(f.getName()).empty())
      needed[deviceLibOf(f.getName()).str()].push_back(f.getName().str());
  return needed;
}

/// Links the bitcode file `path` into `m`, only what `m` needs of it.
Error linkBitcode(llvm::Module &m, StringRef path) {
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> lib =
      llvm::getLazyIRFileModule(path, diag, m.getContext());
  if (!lib) {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    diag.print("", os, /*ShowColors=*/false);
    return llvm::createStringError("cannot read the ROCm device library " +
                                   path + ": " + StringRef(msg).trim());
  }
  // A library without a target (a hand-made one) takes the module's, which
  // is what the device libraries carry anyway.
  if (lib->getTargetTriple().empty())
    lib->setTargetTriple(m.getTargetTriple());
  if (lib->getDataLayoutStr().empty())
    lib->setDataLayout(m.getDataLayout());
  if (llvm::Linker::linkModules(m, std::move(lib),
                                llvm::Linker::Flags::LinkOnlyNeeded))
    return llvm::createStringError("cannot link the ROCm device library " +
                                   path);
  return Error::success();
}
} // namespace

Error detail::linkROCmDeviceLibs(llvm::Module &m, StringRef chip,
                                 StringRef dir) {
  std::map<std::string, std::vector<std::string>> needed = neededDeviceLibs(m);
  if (needed.empty())
    return Error::success();
  auto describe = [&] {
    std::string list;
    for (const auto &[lib, fns] : needed)
      list += (list.empty() ? "" : "; ") + lib + ": " + llvm::join(fns, ", ");
    return list;
  };
  if (dir.empty())
    return llvm::createStringError("kernel needs the ROCm device library (" +
                                   describe() +
                                   "): pass --rocm-device-libs=DIR (e.g. "
                                   "/opt/rocm/amdgcn/bitcode)");

  // What the module itself defines and exports stays visible; whatever the
  // libraries bring becomes internal.
  llvm::StringSet<> exported;
  for (const llvm::GlobalValue &gv : m.global_values())
    if (!gv.isDeclaration() && !gv.hasLocalLinkage())
      exported.insert(gv.getName());

  auto path = [&](StringRef file) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, file);
    return std::string(p);
  };
  std::vector<std::string> files = rocmDeviceLibFiles(chip);
  // ocml may call ockl: link until nothing new is needed.
  llvm::StringSet<> linked;
  while (true) {
    bool progress = false;
    for (const auto &entry : neededDeviceLibs(m)) {
      if (!linked.insert(entry.first).second)
        continue;
      std::string file = path(entry.first + ".bc");
      if (!llvm::sys::fs::exists(file))
        return llvm::createStringError(
            "kernel needs the ROCm device library (" + describe() + "), but " +
            file + " does not exist");
      if (Error e = linkBitcode(m, file))
        return e;
      progress = true;
    }
    if (!progress)
      break;
  }
  // The oclc control libraries (all files after ocml and ockl).
  for (const std::string &file : llvm::drop_begin(files, 2)) {
    std::string p = path(file);
    bool optional = file == files.back();
    if (!llvm::sys::fs::exists(p)) {
      if (optional)
        continue;
      return llvm::createStringError(
          "the ROCm device library directory " + dir + " has no " + file +
          " (needed with ocml/ockl for " + chip + ")");
    }
    if (Error e = linkBitcode(m, p))
      return e;
  }
  // Every device-library function the module calls is now defined.
  std::map<std::string, std::vector<std::string>> missing = neededDeviceLibs(m);
  if (!missing.empty()) {
    needed = std::move(missing);
    return llvm::createStringError("the ROCm device libraries in " + dir +
                                   " do not define " + describe());
  }
  llvm::internalizeModule(m, [&](const llvm::GlobalValue &gv) {
    return exported.contains(gv.getName());
  });
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Linking with ld.lld
//===----------------------------------------------------------------------===//

Expected<std::string> detail::findLld(StringRef explicitPath) {
  if (!explicitPath.empty()) {
    if (llvm::sys::fs::can_execute(explicitPath))
      return explicitPath.str();
    return llvm::createStringError(
        "the linker '" + explicitPath +
        "' (--lld) does not exist or is not executable");
  }
  const std::string versioned = "ld.lld-" + std::to_string(LLVM_VERSION_MAJOR);
  const std::string llvmBin =
      "/usr/lib/llvm-" + std::to_string(LLVM_VERSION_MAJOR) + "/bin";
  for (StringRef name : {StringRef(versioned), StringRef("ld.lld")})
    if (llvm::ErrorOr<std::string> p = llvm::sys::findProgramByName(name))
      return *p;
  if (llvm::ErrorOr<std::string> p =
          llvm::sys::findProgramByName("ld.lld", {llvmBin}))
    return *p;
  return llvm::createStringError(
      "cannot find ld.lld to link AMDGPU code objects (looked "
      "for " +
      versioned + " and ld.lld on PATH and in " + llvmBin + "): install lld-" +
      std::to_string(LLVM_VERSION_MAJOR) +
      " (scripts/install-deps.sh) or pass --lld=PATH");
}

namespace {
/// A temporary file, removed when this goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  std::optional<llvm::FileRemover> remover;

  /// Creates an empty file named like `wooly-<prefix>-*.<suffix>`.
  Error create(StringRef prefix, StringRef suffix) {
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("wooly-" + prefix, suffix, path))
      return llvm::createStringError("cannot create a temporary file: " +
                                     ec.message());
    remover.emplace(path);
    return Error::success();
  }
};
} // namespace

Expected<std::string> detail::linkCodeObject(StringRef object, StringRef lld) {
  TempFile in, out, log;
  if (Error e = in.create("amdgpu", "o"))
    return std::move(e);
  if (Error e = out.create("amdgpu", "hsaco"))
    return std::move(e);
  if (Error e = log.create("lld", "log"))
    return std::move(e);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(in.path, ec);
    if (!ec)
      os << object;
    if (ec || os.has_error())
      return llvm::createStringError("cannot write " + in.path + ": " +
                                     (ec ? ec : os.error()).message());
  }
  llvm::SmallVector<StringRef, 8> args = {lld,     "-shared", "--no-undefined",
                                          in.path, "-o",      out.path};
  std::optional<StringRef> redirects[] = {StringRef(""), StringRef(log.path),
                                          StringRef(log.path)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(lld, args, std::nullopt, redirects,
                                     /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                     &execError);
  if (rc != 0) {
    std::string msg = execError;
    if (auto buf = llvm::MemoryBuffer::getFile(log.path))
      msg = (*buf)->getBuffer().trim().str();
    return llvm::createStringError(
        lld + " could not link the AMDGPU code object (exit " +
        std::to_string(rc) + "): " + msg);
  }
  auto buf = llvm::MemoryBuffer::getFile(out.path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return llvm::createStringError("cannot read " + out.path + ": " +
                                   buf.getError().message());
  return (*buf)->getBuffer().str();
}

//===----------------------------------------------------------------------===//
// The AMDGPU metadata note
//===----------------------------------------------------------------------===//

namespace {
/// The unsigned integer `map[key]`, or 0 when absent or not an integer.
uint64_t uintField(llvm::msgpack::MapDocNode &map, StringRef key) {
  auto it = map.find(key);
  if (it == map.end())
    return 0;
  llvm::msgpack::DocNode &v = it->second;
  if (v.getKind() == llvm::msgpack::Type::UInt)
    return v.getUInt();
  if (v.getKind() == llvm::msgpack::Type::Int && v.getInt() >= 0)
    return uint64_t(v.getInt());
  return 0;
}

/// The msgpack blob of the NT_AMDGPU_METADATA note of `elf`, or an error.
Expected<std::string> metadataNote(const llvm::object::ELF64LEFile &elf) {
  auto sections = elf.sections();
  if (!sections)
    return sections.takeError();
  for (const auto &sec : *sections) {
    if (sec.sh_type != llvm::ELF::SHT_NOTE)
      continue;
    Error err = Error::success();
    for (const auto &note : elf.notes(sec, err))
      if (note.getName() == "AMDGPU" &&
          note.getType() == llvm::ELF::NT_AMDGPU_METADATA) {
        std::string blob = note.getDescAsStringRef(sec.sh_addralign).str();
        llvm::consumeError(std::move(err));
        return blob;
      }
    if (err)
      return std::move(err);
  }
  return llvm::createStringError("the code object has no AMDGPU metadata note");
}
} // namespace

Error detail::readAMDGPUKernelMetadata(StringRef codeObject,
                                       std::vector<KernelInfo> &kernels) {
  auto fail = [](const llvm::Twine &why) {
    return llvm::createStringError(
        "cannot read the AMDGPU code object's metadata: " + why);
  };
  Expected<llvm::object::ELF64LEFile> elf =
      llvm::object::ELF64LEFile::create(codeObject);
  if (!elf)
    return fail(llvm::toString(elf.takeError()));
  Expected<std::string> blob = metadataNote(*elf);
  if (!blob)
    return fail(llvm::toString(blob.takeError()));
  llvm::msgpack::Document doc;
  if (!doc.readFromBlob(*blob, /*Multi=*/false) || !doc.getRoot().isMap())
    return fail("the note is not a msgpack map");
  llvm::msgpack::MapDocNode root = doc.getRoot().getMap();
  auto list = root.find("amdhsa.kernels");
  if (list == root.end() || !list->second.isArray())
    return fail("no amdhsa.kernels");
  llvm::StringSet<> described;
  for (llvm::msgpack::DocNode &node : list->second.getArray()) {
    if (!node.isMap())
      return fail("an amdhsa.kernels entry is not a map");
    llvm::msgpack::MapDocNode kmap = node.getMap();
    auto name = kmap.find(".name");
    if (name == kmap.end() || !name->second.isString())
      return fail("a kernel without .name");
    StringRef symbol = name->second.getString();
    described.insert(symbol);
    for (KernelInfo &k : kernels) {
      if (k.symbol != symbol)
        continue;
      k.registers = unsigned(uintField(kmap, ".vgpr_count"));
      k.scalarRegisters = unsigned(uintField(kmap, ".sgpr_count"));
      k.spills = unsigned(uintField(kmap, ".vgpr_spill_count") +
                          uintField(kmap, ".sgpr_spill_count"));
      k.privateBytes = uintField(kmap, ".private_segment_fixed_size");
      k.staticSharedBytes = uintField(kmap, ".group_segment_fixed_size");
    }
  }
  for (const KernelInfo &k : kernels)
    if (!described.contains(k.symbol))
      return fail("kernel '" + k.symbol + "' is not described");
  return Error::success();
}

//===----------------------------------------------------------------------===//
// The code generator
//===----------------------------------------------------------------------===//

namespace {
/// `gfx90a`/`gfx942`: convert-wooly-to-rocdl, code object v5 from LLVM's
/// AMDGPU backend, ROCm device libraries when the module calls them, ld.lld,
/// and the kernels' registers and segments from the metadata note.
class AMDGPUCodegen : public TargetCodegen {
public:
  AMDGPUCodegen(const Target &target, const CompileOptions &options)
      : TargetCodegen(options), chip(target.chip) {}

  void registerTranslations(mlir::DialectRegistry &registry) const override {
    mlir::registerROCDLDialectTranslation(registry);
  }

  Error addLowering(mlir::OpPassManager &pm) const override {
    mlir::wooly::ConvertWoolyToROCDLOptions rocdlOpts;
    rocdlOpts.chip = chip;
    // Constrained and sliced kernels: iteration barriers in ordinary ops
    // (the non-aligned bar.red they need is then refused, with its reason).
    pm.addPass(mlir::wooly::createWoolyLowerIterationBarrier());
    pm.addPass(mlir::wooly::createConvertWoolyToROCDL(rocdlOpts));
    return Error::success();
  }

  Expected<std::unique_ptr<llvm::TargetMachine>>
  createTargetMachine() const override {
    static std::once_flag once;
    std::call_once(once, [] {
      LLVMInitializeAMDGPUTargetInfo();
      LLVMInitializeAMDGPUTarget();
      LLVMInitializeAMDGPUTargetMC();
      LLVMInitializeAMDGPUAsmPrinter();
      // Inline assembly (the lowering emits some) is assembled into the
      // object by the AMDGPU assembly parser.
      LLVMInitializeAMDGPUAsmParser();
    });
    return detail::createTargetMachine("amdgcn-amd-amdhsa", chip, "", "AMD",
                                       options.optLevel);
  }

  Error prepareModule(llvm::Module &m) const override {
    if (!m.getModuleFlag("amdhsa_code_object_version"))
      m.addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version",
                      kCodeObjectVersion);
    if (Error e = linkROCmDeviceLibs(m, chip, options.rocmDeviceLibs))
      return e;
    // A call into another module cannot be resolved: code objects are
    // linked whole here.
    for (const llvm::Function &f : m)
      if (f.isDeclaration() && !f.isIntrinsic() && !f.use_empty())
        return llvm::createStringError(
            "function '" + f.getName() +
            "' is called but defined in no module linked here: "
            "calls across PTX modules are not supported yet on "
            "amdgcn");
    return Error::success();
  }

  llvm::CodeGenFileType fileType() const override {
    return llvm::CodeGenFileType::ObjectFile;
  }

  Error finish(std::string object, CompiledModule &out) const override {
    Expected<std::string> lld = findLld(options.lldPath);
    if (!lld)
      return lld.takeError();
    Expected<std::string> codeObject = linkCodeObject(object, *lld);
    if (!codeObject)
      return codeObject.takeError();
    out.binary = std::move(*codeObject);
    return readAMDGPUKernelMetadata(out.binary, out.kernels);
  }

private:
  std::string chip;
};
} // namespace

Expected<std::unique_ptr<TargetCodegen>>
detail::createAMDGPUCodegen(const Target &target,
                            const CompileOptions &options) {
  if (!llvm::is_contained(kChips, target.chip))
    return llvm::createStringError(
        "target '" + target.chip +
        "' is not supported (AMD targets: gfx90a, gfx942)");
  return std::make_unique<AMDGPUCodegen>(target, options);
}
