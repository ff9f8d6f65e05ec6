//===- Compiler.cpp - The compile API and its cache -------------*- C++ -*-===//
//
// PTX/Wooly -> the caller's Wooly passes -> wooly-expand-arith -> the
// target's lowering -> LLVM IR -> optimised code from the target's LLVM
// backend: a native object for the host, PTX text for `sm_XX`, an HSA code
// object for `gfxXXX`. What differs between targets is a TargetCodegen
// (TargetCodegen.h); everything else is here, once. The metadata (kernels,
// parameter layout, globals, shared memory) is read from the lowered module,
// where the conversion left it as attributes; the target's code generator
// adds what only it knows (AMDGPU: registers and spills).
//
//===----------------------------------------------------------------------===//

#include "Wooly/Compiler/Compiler.h"
#include "TargetCodegen.h"
#include "Wooly/Conversion/Passes.h"
#include "Wooly/Dialect/Wooly/Analysis/KernelAnalysis.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/InitAllDialects.h"
#include "Wooly/InitAllPasses.h"
#include "Wooly/Target/PTX/PTXImporter.h"

#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <condition_variable>
#include <unistd.h>

using namespace wooly;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

#ifndef WOOLY_VERSION_STRING
#define WOOLY_VERSION_STRING "unknown"
#endif
#ifndef WOOLY_BUILD_ID
#define WOOLY_BUILD_ID "unknown"
#endif

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

namespace {
/// Appends `s` to a key's fields, after its length.
void appendField(std::string &fields, StringRef s) {
  uint64_t n = s.size();
  fields.append(reinterpret_cast<const char *>(&n), sizeof(n));
  fields.append(s.data(), s.size());
}

/// Everything a cache key covers but the input's text, each field after its
/// length. Cheap whatever the input's size: the host CPU's features are
/// queried once, the device libraries are stat'ed, not read.
std::string keyFields(const CompileInput &input, const Target &target,
                      const CompileOptions &options) {
  std::string fields;
  auto field = [&](StringRef s) { appendField(fields, s); };
  field("wooly " WOOLY_VERSION_STRING " build " WOOLY_BUILD_ID);
  field("llvm " LLVM_VERSION_STRING);
  field(target.str());
  field(target.chip);
  if (target.kind == Target::Kind::Host) {
    // The object is specific to the host CPU's features (queried once).
    static const std::string hostFeatures = [] {
      std::vector<std::string> fs;
      for (auto &f : llvm::sys::getHostCPUFeatures())
        fs.push_back((f.second ? "+" : "-") + f.first().str());
      llvm::sort(fs);
      return llvm::join(fs, ",");
    }();
    field(hostFeatures);
  }
  if (target.kind == Target::Kind::AMDGCN) {
    // The device libraries the chip could link: their directory and each
    // file's size and modification time (a stat each, not a content hash,
    // so that a cache hit stays cheap), and the linker.
    field("rocm-device-libs " + options.rocmDeviceLibs);
    if (!options.rocmDeviceLibs.empty())
      for (const std::string &file : detail::rocmDeviceLibFiles(target.chip)) {
        llvm::SmallString<256> path(options.rocmDeviceLibs);
        llvm::sys::path::append(path, file);
        llvm::sys::fs::file_status st;
        if (llvm::sys::fs::status(path, st))
          field(file + " absent");
        else
          field(file + " " + std::to_string(st.getSize()) + " " +
                std::to_string(
                    st.getLastModificationTime().time_since_epoch().count()));
      }
    field("lld " + options.lldPath);
  }
  field("O" + std::to_string(options.optLevel));
  field(options.boundsChecks ? "checks" : "nochecks");
  field("passes " + options.passes);
  if (options.kernels) {
    field("kernels " + std::to_string(options.kernels->size()));
    for (const std::string &k : *options.kernels)
      field("kernel " + k);
  }
  field(input.kind == CompileInput::Kind::PTX ? "ptx" : "mlir");
  return fields;
}

/// The SHA-256 key of `fields` (keyFields) and the input's text.
std::string sha256Key(StringRef fields, StringRef text) {
  llvm::SHA256 h;
  h.update(fields);
  uint64_t n = text.size();
  h.update(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(&n),
                                   sizeof(n)));
  h.update(text);
  return llvm::toHex(h.final(), /*LowerCase=*/true);
}
} // namespace

std::string wooly::cacheKey(const CompileInput &input, const Target &target,
                            const CompileOptions &options) {
  return sha256Key(keyFields(input, target, options), input.text);
}

namespace {
/// Reads a compile input into a module (PTX through the importer, Wooly IR
/// through the parser) and collects the context's error diagnostics as
/// "file:line:col: error: message".
class InputReader {
public:
  InputReader(mlir::MLIRContext &ctx, const CompileInput &input)
      : ctx(ctx), input(input), os(diags),
        handler(&ctx, [this](mlir::Diagnostic &d) {
          if (d.getSeverity() != mlir::DiagnosticSeverity::Error)
            return mlir::success();
          if (auto fl = mlir::dyn_cast<mlir::FileLineColLoc>(d.getLocation()))
            os << fl.getFilename().getValue() << ':' << fl.getLine() << ':'
               << fl.getColumn() << ": ";
          else
            os << this->input.name << ": ";
          os << "error: " << d.str() << '\n';
          return mlir::success();
        }) {}

  mlir::OwningOpRef<mlir::ModuleOp> read() {
    if (input.kind == CompileInput::Kind::PTX)
      return mlir::wooly::importPTX(input.text, input.name, &ctx);
    return mlir::parseSourceString<mlir::ModuleOp>(
        input.text, mlir::ParserConfig(&ctx), input.name);
  }

  /// The diagnostics collected, or "<name>: <what>" when there are none.
  llvm::Error error(StringRef what) const {
    return llvm::createStringError(diags.empty()
                                       ? (input.name + ": " + what).str()
                                       : StringRef(diags).rtrim().str());
  }

private:
  mlir::MLIRContext &ctx;
  const CompileInput &input;
  std::string diags;
  llvm::raw_string_ostream os;
  mlir::ScopedDiagnosticHandler handler;
};

/// Reads a `.maxntid`/`.reqntid`-style attribute (1 to 3 dimensions) of `op`
/// into `d`; missing dimensions are 1, a missing attribute leaves `d`.
void readDims(mlir::Operation *op, StringRef attr, std::array<uint32_t, 3> &d) {
  if (auto a = op->getAttrOfType<mlir::DenseI32ArrayAttr>(attr)) {
    d = {1, 1, 1};
    for (auto [i, v] : llvm::enumerate(a.asArrayRef()))
      if (i < 3)
        d[i] = v;
  }
}

/// Reads the kernel and global metadata the conversion left on the module.
void collectMetadata(mlir::ModuleOp module, CompiledModule &out,
                     bool keepsVariableNames) {
  if (auto a =
          module->getAttrOfType<mlir::IntegerAttr>("wooly.num_access_sites"))
    out.numAccessSites = a.getInt();
  if (auto a =
          module->getAttrOfType<mlir::IntegerAttr>("wooly.static_shared_size"))
    out.staticSharedSize = a.getInt();
  for (auto fn : module.getOps<mlir::LLVM::LLVMFuncOp>()) {
    auto name = fn->getAttrOfType<mlir::StringAttr>("wooly.kernel");
    if (!name)
      continue;
    KernelInfo k;
    k.name = name.getValue().str();
    k.symbol = fn.getName().str();
    auto offsets =
        fn->getAttrOfType<mlir::DenseI64ArrayAttr>("wooly.param_offsets");
    auto sizes =
        fn->getAttrOfType<mlir::DenseI64ArrayAttr>("wooly.param_sizes");
    for (int64_t o : offsets.asArrayRef())
      k.paramOffsets.push_back(o);
    for (int64_t s : sizes.asArrayRef())
      k.paramSizes.push_back(s);
    k.paramRoles.assign(k.paramOffsets.size(), "");
    if (auto roles = fn->getAttrOfType<mlir::ArrayAttr>("wooly.param_roles"))
      for (auto [i, r] : llvm::enumerate(roles))
        if (i < k.paramRoles.size())
          k.paramRoles[i] = mlir::cast<mlir::StringAttr>(r).getValue().str();
    for (size_t i = 0; i < k.paramOffsets.size(); ++i)
      k.paramBufferSize =
          std::max(k.paramBufferSize, k.paramOffsets[i] + k.paramSizes[i]);
    k.needsFibers = fn->hasAttr("wooly.needs_fibers");
    if (auto reason = fn->getAttrOfType<mlir::StringAttr>("wooly.fiber_reason"))
      k.fiberReason = reason.getValue().str();
    if (auto regions =
            fn->getAttrOfType<mlir::StringAttr>("wooly.region_function"))
      k.regionSymbol = regions.getValue().str();
    if (auto frame =
            fn->getAttrOfType<mlir::IntegerAttr>("wooly.region_frame_bytes"))
      k.regionFrameBytes = frame.getInt();
    if (auto warps = fn->getAttrOfType<mlir::StringAttr>("wooly.warp_function"))
      k.warpSymbol = warps.getValue().str();
    if (auto blockFn =
            fn->getAttrOfType<mlir::StringAttr>("wooly.block_function"))
      k.blockSymbol = blockFn.getValue().str();
    readDims(fn, "wooly.maxntid", k.maxntid);
    readDims(fn, "wooly.reqntid", k.reqntid);
    out.kernels.push_back(std::move(k));
  }
  for (auto g : module.getOps<mlir::LLVM::GlobalOp>()) {
    StringRef sym = g.getSymName();
    // GPU targets keep the PTX names: their .global/.const variables that
    // are defined here (address spaces 1 and 4).
    StringRef name = sym;
    if (keepsVariableNames) {
      if ((g.getAddrSpace() != 1 && g.getAddrSpace() != 4) ||
          (g.getLinkage() == mlir::LLVM::Linkage::External &&
           !g.getValueOrNull() && g.getInitializerRegion().empty()))
        continue;
    } else if (!name.consume_front("__wooly_g_")) {
      continue;
    }
    auto arr = mlir::cast<mlir::LLVM::LLVMArrayType>(g.getType());
    mlir::Type elem = arr.getElementType();
    uint64_t elemBytes =
        mlir::isa<mlir::VectorType>(elem)
            ? mlir::cast<mlir::VectorType>(elem).getNumElements() *
                  ((mlir::cast<mlir::VectorType>(elem)
                        .getElementType()
                        .getIntOrFloatBitWidth() +
                    7) /
                   8)
            : (elem.getIntOrFloatBitWidth() + 7) / 8;
    out.globals.push_back(
        {name.str(), sym.str(), arr.getNumElements() * elemBytes});
  }
}
} // namespace

Expected<CompiledModule> wooly::compile(const CompileInput &input,
                                        const Target &target,
                                        const CompileOptions &options) {
  Expected<std::unique_ptr<detail::TargetCodegen>> codegen =
      detail::createTargetCodegen(target, options);
  if (!codegen)
    return codegen.takeError();
  // Before any work: this checks the chip.
  Expected<std::unique_ptr<llvm::TargetMachine>> tm =
      (*codegen)->createTargetMachine();
  if (!tm)
    return tm.takeError();
  mlir::DialectRegistry registry;
  mlir::wooly::registerAllDialects(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  (*codegen)->registerTranslations(registry);
  mlir::MLIRContext ctx(registry, mlir::MLIRContext::Threading::DISABLED);
  ctx.loadAllAvailableDialects();

  InputReader reader(ctx, input);
  auto failWith = [&](StringRef what) { return reader.error(what); };
  mlir::OwningOpRef<mlir::ModuleOp> module = reader.read();
  if (!module)
    return failWith("cannot read the input");

  if (options.kernels) {
    // Only the kernels asked for; an unknown name is an error.
    llvm::StringSet<> wanted;
    for (const std::string &k : *options.kernels)
      wanted.insert(k);
    llvm::StringSet<> found;
    for (auto fn :
         llvm::make_early_inc_range(module->getOps<mlir::wooly::FuncOp>())) {
      if (!fn.getKernel())
        continue;
      if (wanted.contains(fn.getSymName()))
        found.insert(fn.getSymName());
      else
        fn.erase();
    }
    for (const std::string &k : *options.kernels)
      if (!found.contains(k))
        return llvm::createStringError(input.name + ": no kernel named '" + k +
                                       "'");
  }

  mlir::PassManager pm(&ctx);
  if (!options.passes.empty()) {
    static std::once_flag registered;
    std::call_once(registered, [] { mlir::wooly::registerAllPasses(); });
    std::string errors;
    llvm::raw_string_ostream errorOS(errors);
    // `pm` is anchored on builtin.module already: the passes go in as they
    // are (wrapping them in "builtin.module(...)" would nest them on the
    // module's nested modules, of which there are none).
    if (mlir::failed(mlir::parsePassPipeline(options.passes, pm, errorOS)))
      return llvm::createStringError("bad pass pipeline '" + options.passes +
                                     "': " + StringRef(errors).trim());
  }
  if (mlir::failed(pm.run(*module)))
    return failWith("a pass failed");
  // Analyses of the (transformed) Wooly kernels, before lowering.
  std::vector<mlir::wooly::KernelSummary> summaries =
      mlir::wooly::analyzeKernels(*module);

  pm.clear();
  pm.addPass(mlir::wooly::createWoolyExpandArith());
  if (Error e = (*codegen)->addLowering(pm))
    return std::move(e);
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  // The lowering's passes build their output correct by construction (the
  // lit tests verify after each of them): the module is verified once, at
  // the end, before the translation to LLVM IR relies on it.
  pm.enableVerifier(false);
  if (mlir::failed(pm.run(*module)) || mlir::failed(mlir::verify(*module)))
    return failWith("lowering failed");

  CompiledModule out;
  out.target = target;
  out.key = cacheKey(input, target, options);
  collectMetadata(*module, out, (*codegen)->keepsVariableNames());
  for (KernelInfo &k : out.kernels)
    for (const mlir::wooly::KernelSummary &sum : summaries)
      if (sum.name == k.name) {
        for (const mlir::wooly::ParamUsage &p : sum.params)
          k.readOnlyParams.push_back(p.isReadOnlyPointer());
        k.writesUnknownMemory = sum.writesUnknownMemory;
        k.staticSharedBytes = sum.staticSharedBytes;
        k.registerEstimate = sum.registerEstimate;
        k.costHint = sum.costHint;
      }

  llvm::LLVMContext llvmCtx;
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(*module, llvmCtx, input.name);
  if (!llvmModule)
    return failWith("translation to LLVM IR failed");
  unsigned threads =
      options.threads ? options.threads : detail::defaultCompileThreads();
  if (Error e = detail::compileLLVMModule(**codegen, **tm, *llvmModule,
                                          options.optLevel, out, threads))
    return llvm::createStringError(input.name + ": " +
                                   llvm::toString(std::move(e)));
  return out;
}

const KernelInfo *ModuleLayout::findKernel(StringRef name) const {
  for (const KernelInfo &k : kernels)
    if (k.name == name)
      return &k;
  return nullptr;
}

Expected<ModuleLayout> wooly::inspect(const CompileInput &input) {
  mlir::DialectRegistry registry;
  mlir::wooly::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry, mlir::MLIRContext::Threading::DISABLED);
  ctx.loadAllAvailableDialects();
  InputReader reader(ctx, input);
  mlir::OwningOpRef<mlir::ModuleOp> module = reader.read();
  if (!module)
    return reader.error("cannot read the input");
  ModuleLayout out;
  for (auto fn : module->getOps<mlir::wooly::FuncOp>()) {
    if (!fn.getKernel() || fn.isDeclaration())
      continue;
    KernelInfo k;
    k.name = fn.getSymName().str();
    mlir::wooly::kernelParamLayout(fn, k.paramOffsets, k.paramSizes);
    for (size_t i = 0; i < k.paramOffsets.size(); ++i)
      k.paramBufferSize =
          std::max(k.paramBufferSize, k.paramOffsets[i] + k.paramSizes[i]);
    k.paramRoles.assign(k.paramOffsets.size(), "");
    readDims(fn, "maxntid", k.maxntid);
    readDims(fn, "reqntid", k.reqntid);
    out.kernels.push_back(std::move(k));
  }
  for (auto g : module->getOps<mlir::wooly::GlobalOp>()) {
    using mlir::wooly::StateSpace;
    if (g.getSpace() != StateSpace::global &&
        g.getSpace() != StateSpace::constant)
      continue;
    if (g.getLinkage() && *g.getLinkage() == mlir::wooly::Linkage::extern_)
      continue;
    mlir::Type t = g.getElemType();
    uint64_t elem = 1;
    if (auto v = mlir::dyn_cast<mlir::VectorType>(t))
      elem = v.getNumElements() *
             ((v.getElementType().getIntOrFloatBitWidth() + 7) / 8);
    else if (t.isIntOrFloat())
      elem = (t.getIntOrFloatBitWidth() + 7) / 8;
    out.globals.push_back({g.getSymName().str(), "", elem * g.getCount()});
  }
  return out;
}

//===----------------------------------------------------------------------===//
// CompileCache
//===----------------------------------------------------------------------===//

CompileCache::CompileCache(std::string directory)
    : directory(std::move(directory)) {}

/// A compilation in progress that other threads wait for.
struct CompileCache::Pending {
  std::condition_variable done;
  bool finished = false;
  std::shared_ptr<const CompiledModule> result;
  std::string error;
};

CompileCache::~CompileCache() = default;

std::string CompileCache::lookupKey(const CompileInput &input,
                                    const Target &target,
                                    const CompileOptions &options) {
  // A lookup must not cost a SHA-256 of the whole input (hundreds of
  // microseconds for a large module): the keys computed before are found by
  // a fast hash of what they cover, then confirmed by comparing it all (so
  // that no collision can hand one input another's module).
  std::string fields = keyFields(input, target, options);
  uint64_t fast = llvm::hash_combine(llvm::xxh3_64bits(fields),
                                     llvm::xxh3_64bits(input.text));
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto [begin, end] = keyMemos.equal_range(fast);
    for (auto it = begin; it != end; ++it)
      if (it->second.fields == fields && it->second.text == input.text)
        return it->second.key;
  }
  std::string key = sha256Key(fields, input.text);
  std::lock_guard<std::mutex> lock(mutex);
  keyMemos.emplace(fast, KeyMemo{std::move(fields), input.text, key});
  return key;
}

Expected<std::shared_ptr<const CompiledModule>>
CompileCache::getOrCompile(const CompileInput &input, const Target &target,
                           const CompileOptions &options, bool *hit) {
  std::string key = lookupKey(input, target, options);
  if (hit)
    *hit = true;
  std::shared_ptr<Pending> mine;
  {
    std::unique_lock<std::mutex> lock(mutex);
    auto it = entries.find(key);
    if (it != entries.end()) {
      ++numHits;
      return it->second;
    }
    auto p = pending.find(key);
    if (p != pending.end()) {
      // Another thread is compiling it: wait for that result.
      std::shared_ptr<Pending> other = p->second;
      other->done.wait(lock, [&] { return other->finished; });
      ++numHits;
      if (!other->result)
        return llvm::createStringError(other->error);
      return other->result;
    }
    mine = std::make_shared<Pending>();
    pending[key] = mine;
  }
  // Publishes this thread's result to the waiters.
  auto finish = [&](std::shared_ptr<const CompiledModule> result,
                    std::string error, bool compiled) {
    std::lock_guard<std::mutex> lock(mutex);
    if (result)
      entries.emplace(key, result);
    pending.erase(key);
    mine->result = std::move(result);
    mine->error = std::move(error);
    mine->finished = true;
    mine->done.notify_all();
    if (compiled)
      ++numMisses;
    else
      ++numHits;
  };
  llvm::SmallString<256> path;
  if (!directory.empty()) {
    path = directory;
    llvm::sys::path::append(path, key + ".wooly");
    if (auto buf = llvm::MemoryBuffer::getFile(path)) {
      Expected<CompiledModule> m =
          CompiledModule::deserialize((*buf)->getBuffer());
      if (m && m->key == key) {
        auto shared = std::make_shared<const CompiledModule>(std::move(*m));
        finish(shared, "", /*compiled=*/false);
        return shared;
      }
      if (!m)
        llvm::consumeError(m.takeError()); // A damaged entry is recompiled.
    }
  }
  if (hit)
    *hit = false;
  Expected<CompiledModule> m = compile(input, target, options);
  if (!m) {
    std::string error = llvm::toString(m.takeError());
    finish(nullptr, error, /*compiled=*/true);
    return llvm::createStringError(error);
  }
  auto shared = std::make_shared<const CompiledModule>(std::move(*m));
  if (!directory.empty()) {
    // Write to a temporary file and rename, so readers never see a part.
    llvm::sys::fs::create_directories(directory);
    std::string tmp = (path + ".tmp" + std::to_string(::getpid())).str();
    std::error_code ec;
    {
      llvm::raw_fd_ostream f(tmp, ec);
      if (!ec)
        f << shared->serialize();
    }
    if (!ec)
      llvm::sys::fs::rename(tmp, path);
  }
  finish(shared, "", /*compiled=*/true);
  return shared;
}
