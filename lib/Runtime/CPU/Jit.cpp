//===- Jit.cpp - Loading compiled modules into the JIT ----------*- C++ -*-===//
//
// The CpuDevice's LLJIT: one JITDylib per loaded module, with the runtime's
// entry points and float helpers bound by name, each part of the module
// linked in as an object file, and its kernels and variables looked up.
//
//===----------------------------------------------------------------------===//

#include "CpuDeviceImpl.h"

#include "Wooly/Runtime/CPU/FloatHelpers.h"

#include "llvm/ExecutionEngine/Orc/AbsoluteSymbols.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Object/SymbolSize.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

Error CpuDevice::Impl::ensureJIT() {
  if (jit)
    return Error::success();
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto j = llvm::orc::LLJITBuilder().create();
  if (!j)
    return j.takeError();
  jit = std::move(*j);
  return Error::success();
}

llvm::orc::SymbolMap CpuDevice::Impl::runtimeSymbols() {
  llvm::orc::SymbolMap map;
  auto add = [&](StringRef name, void *addr) {
    map[jit->mangleAndIntern(name)] = llvm::orc::ExecutorSymbolDef(
        llvm::orc::ExecutorAddr::fromPtr(addr),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  };
#define WOOLY_RT(name) add(#name, reinterpret_cast<void *>(&name))
  WOOLY_RT(__wooly_rt_check);
  WOOLY_RT(__wooly_rt_shared_oob);
  WOOLY_RT(__wooly_rt_barrier);
  WOOLY_RT(__wooly_rt_iteration_barrier);
  WOOLY_RT(__wooly_rt_bar_red);
  WOOLY_RT(__wooly_rt_warp);
  WOOLY_RT(__wooly_rt_exit);
  WOOLY_RT(__wooly_rt_trap);
  WOOLY_RT(__wooly_rt_bad_call);
  WOOLY_RT(__wooly_rt_malloc);
  WOOLY_RT(__wooly_rt_free);
  WOOLY_RT(__wooly_rt_space_oob);
  WOOLY_RT(__wooly_rt_sreg);
  WOOLY_RT(__wooly_rt_isspacep);
  WOOLY_RT(__wooly_rt_nanosleep);
  WOOLY_RT(__wooly_rt_mbarrier);
  WOOLY_RT(__wooly_rt_mbarrier_wait);
  WOOLY_RT(__wooly_rt_bulk_copy);
  WOOLY_RT(__wooly_rt_vprintf);
  WOOLY_RT(__wooly_rt_assertfail);
  WOOLY_RT(__wooly_rt_texture);
  WOOLY_RT(__wooly_rt_texquery);
#undef WOOLY_RT
  forEachFloatHelper([&](const char *name, void *addr) { add(name, addr); });
  return map;
}

Expected<LoadedModule *>
CpuDevice::Impl::load(std::shared_ptr<const CompiledModule> m) {
  if (m->target.kind != Target::Kind::Host)
    return llvm::createStringError("module compiled for '" + m->target.str() +
                                   "' cannot run on the CPU backend");
  std::lock_guard<std::mutex> lock(deviceMutex);
  if (Error e = ensureJIT())
    return std::move(e);
  auto impl = std::make_unique<LoadedModuleImpl>();
  auto jd =
      jit->createJITDylib("wooly-module-" + std::to_string(nextModuleId++));
  if (!jd)
    return jd.takeError();
  impl->dylib = &*jd;
  auto fail = [&](Error e) -> Error {
    // Nothing of the half-loaded module stays behind.
    unregisterGlobals(*impl);
    return llvm::joinErrors(
        std::move(e), jit->getExecutionSession().removeJITDylib(*impl->dylib));
  };
  if (Error e =
          impl->dylib->define(llvm::orc::absoluteSymbols(runtimeSymbols())))
    return fail(std::move(e));
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      jit->getDataLayout().getGlobalPrefix());
  if (!gen)
    return fail(gen.takeError());
  impl->dylib->addGenerator(std::move(*gen));
  if (Error e = addPart(*impl, std::move(m)))
    return fail(std::move(e));
  modules.push_back(std::move(impl));
  return reinterpret_cast<LoadedModule *>(modules.back().get());
}

Error CpuDevice::Impl::extend(LoadedModule *handle,
                              std::shared_ptr<const CompiledModule> m) {
  if (m->target.kind != Target::Kind::Host)
    return llvm::createStringError("module compiled for '" + m->target.str() +
                                   "' cannot run on the CPU backend");
  std::lock_guard<std::mutex> lock(deviceMutex);
  auto *impl = reinterpret_cast<LoadedModuleImpl *>(handle);
  if (!llvm::any_of(modules, [&](auto &p) { return p.get() == impl; }))
    return llvm::createStringError("unknown module");
  return addPart(*impl, std::move(m));
}

Error CpuDevice::Impl::addPart(LoadedModuleImpl &impl,
                               std::shared_ptr<const CompiledModule> m) {
  {
    std::shared_lock<std::shared_mutex> read(impl.mutex);
    for (const KernelInfo &k : m->kernels)
      if (impl.kernels.count(k.name))
        return llvm::createStringError("kernel '" + k.name +
                                       "' is already loaded");
  }
  // The part's own tracker: a part that fails half-way is removed again,
  // so that a retry does not meet its definitions.
  llvm::orc::ResourceTrackerSP tracker = impl.dylib->createResourceTracker();
  auto undo = [&](Error e) -> Error {
    return llvm::joinErrors(std::move(e), tracker->remove());
  };
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(m->binary, "wooly");
  if (Error e = jit->addObjectFile(tracker, std::move(buffer)))
    return undo(std::move(e));
  writePerfMap(*impl.dylib, m->binary);
  llvm::StringMap<LoadedModuleImpl::Kernel> kernels;
  for (const KernelInfo &k : m->kernels) {
    LoadedModuleImpl::Kernel &entry = kernels[k.name];
    entry.info = &k;
    entry.part = m.get();
    auto sym = jit->lookup(*impl.dylib, k.symbol);
    if (!sym)
      return undo(sym.takeError());
    entry.fn = sym->toPtr<WoolyKernelFn>();
    if (!k.blockSymbol.empty()) {
      auto block = jit->lookup(*impl.dylib, k.blockSymbol);
      if (!block)
        return undo(block.takeError());
      entry.blockFn = block->toPtr<WoolyBlockFn>();
    }
    if (!k.regionSymbol.empty()) {
      auto regions = jit->lookup(*impl.dylib, k.regionSymbol);
      if (!regions)
        return undo(regions.takeError());
      entry.regionFn = regions->toPtr<WoolyKernelFn>();
    }
    if (!k.warpSymbol.empty()) {
      auto warps = jit->lookup(*impl.dylib, k.warpSymbol);
      if (!warps)
        return undo(warps.takeError());
      entry.warpFn = warps->toPtr<WoolyWarpFn>();
    }
  }
  std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> globals;
  for (const GlobalInfo &g : m->globals) {
    auto sym = jit->lookup(*impl.dylib, g.symbol);
    if (!sym)
      return undo(sym.takeError());
    globals.push_back({g.name, {sym->getValue(), g.size}});
  }
  std::unique_lock<std::shared_mutex> write(impl.mutex);
  for (auto &[name, k] : kernels)
    impl.kernels[name] = k;
  // A later part's variables are the first part's (weak definitions).
  for (auto &[name, range] : globals)
    if (impl.globals.try_emplace(name, range).second)
      memory.registerGlobal(range.first, range.second, name, impl.domain);
  impl.parts.push_back(std::move(m));
  return Error::success();
}

// With WOOLY_PERF_MAP set, each function of a loaded part is appended to
// /tmp/perf-<pid>.map, the file `perf report` reads to name JIT code
// ("<start> <size> <name>" in hex). Only for profiling: the functions are
// looked up (and so materialized) eagerly, and the lines stay in the file
// after the module is unloaded.
void CpuDevice::Impl::writePerfMap(llvm::orc::JITDylib &dylib,
                                   StringRef binary) {
  static const bool enabled =
      llvm::sys::Process::GetEnv("WOOLY_PERF_MAP").has_value();
  if (!enabled)
    return;
  auto obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(binary, "wooly"));
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return;
  }
  std::string path = "/tmp/perf-" +
                     std::to_string(llvm::sys::Process::getProcessId()) +
                     ".map";
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Append);
  if (ec)
    return;
  for (auto &[sym, size] : llvm::object::computeSymbolSizes(**obj)) {
    auto type = sym.getType();
    auto name = sym.getName();
    if (!type || *type != llvm::object::SymbolRef::ST_Function || !name ||
        name->empty() || !size) {
      if (!type)
        llvm::consumeError(type.takeError());
      if (!name)
        llvm::consumeError(name.takeError());
      continue;
    }
    auto addr = jit->lookup(dylib, *name);
    if (!addr) {
      llvm::consumeError(addr.takeError());
      continue;
    }
    os << llvm::format_hex_no_prefix(addr->getValue(), 1) << ' '
       << llvm::format_hex_no_prefix(size, 1) << ' ' << *name << '\n';
  }
}

void CpuDevice::Impl::unregisterGlobals(LoadedModuleImpl &m) {
  for (auto &g : m.globals)
    memory.unregisterGlobal(g.second.first);
}

Error CpuDevice::Impl::unload(LoadedModule *handle) {
  std::lock_guard<std::mutex> lock(deviceMutex);
  auto *m = reinterpret_cast<LoadedModuleImpl *>(handle);
  auto it = llvm::find_if(modules, [&](auto &p) { return p.get() == m; });
  if (it == modules.end())
    return llvm::createStringError("unknown module");
  unregisterGlobals(*m);
  if (Error e = jit->getExecutionSession().removeJITDylib(*m->dylib))
    return e;
  modules.erase(it);
  return Error::success();
}
