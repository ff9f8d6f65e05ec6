//===- Backend.cpp - The backends behind wooly::Backend -----------*- C++
//-*-===//
//
// Two adapters: CpuBackend over cpu::CpuDevice (runs the compiled host
// module) and CudaBackend over cuda::CudaDevice (runs the original PTX, with
// the parameter layout of the compiled module), and `createBackend`, which
// picks one by name.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Runtime/Backend.h"
#include "BackendModule.h"
#include "Remote.h"
#include "Wooly/Compiler/CompiledModule.h"
#include "Wooly/Runtime/CPU/CpuDevice.h"
#include "Wooly/Runtime/CUDA/CudaDevice.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace wooly {

Backend::~Backend() = default;

llvm::Error Backend::copyDeviceToDevice(uint64_t dst, uint64_t src,
                                        uint64_t bytes) {
  // In chunks of at most 1 MiB, front to back or back to front so that an
  // overlap is copied as memmove would.
  constexpr uint64_t kChunk = 1 << 20;
  std::vector<char> buffer(std::min(bytes, kChunk));
  bool backwards = dst > src && dst < src + bytes;
  for (uint64_t done = 0; done < bytes;) {
    uint64_t n = std::min(kChunk, bytes - done);
    uint64_t off = backwards ? bytes - done - n : done;
    if (llvm::Error e = copyFromDevice(buffer.data(), src + off, n))
      return e;
    if (llvm::Error e = copyToDevice(dst + off, buffer.data(), n))
      return e;
    done += n;
  }
  return llvm::Error::success();
}

static llvm::Error noTextures(const Backend &b) {
  return llvm::createStringError("texture and surface objects are not "
                                 "supported yet on the " +
                                 b.kind() + " backend");
}
llvm::Expected<uint64_t> Backend::createTextureObject(const ResourceDesc &,
                                                      const TextureDesc &,
                                                      uint64_t) {
  return noTextures(*this);
}
llvm::Expected<uint64_t> Backend::createSurfaceObject(const ResourceDesc &,
                                                      uint64_t) {
  return noTextures(*this);
}
llvm::Error Backend::destroyTextureObject(uint64_t) {
  return noTextures(*this);
}
llvm::Error Backend::destroySurfaceObject(uint64_t) {
  return noTextures(*this);
}

llvm::Error Backend::bindReference(BackendModule *module, llvm::StringRef name,
                                   uint64_t handle) {
  auto var = globalAddress(module, name);
  if (!var)
    return var.takeError();
  if (var->second != sizeof handle)
    return llvm::createStringError("'" + name +
                                   "' is not a texture or surface reference "
                                   "(a 64-bit module variable)");
  return copyToDevice(var->first, &handle, sizeof handle);
}

llvm::Error Backend::setHeapSize(uint64_t, uint64_t) {
  return llvm::createStringError(
      "the device heap's size cannot be set on the " + kind() +
      " backend yet (its heap is not one per tenant)");
}

llvm::Error Backend::swapOut(uint64_t) {
  return llvm::createStringError("the " + kind() +
                                 " backend cannot swap memory out");
}

llvm::Error Backend::swapIn(uint64_t) {
  return llvm::createStringError("the " + kind() +
                                 " backend cannot swap memory in");
}

llvm::Error Backend::share(uint64_t, uint64_t) {
  return llvm::createStringError("the " + kind() +
                                 " backend cannot share memory between "
                                 "allocations");
}

llvm::Error Backend::unshare(uint64_t) {
  return llvm::createStringError("the " + kind() +
                                 " backend cannot share memory between "
                                 "allocations");
}

namespace {
/// The bytes a content hash or a comparison reads back at a time.
constexpr uint64_t kContentChunk = 1 << 20;
} // namespace

uint64_t contentHashOf(
    uint64_t bytes,
    llvm::function_ref<llvm::ArrayRef<uint8_t>(uint64_t offset, uint64_t n)>
        chunk) {
  std::vector<uint64_t> hashes;
  hashes.reserve(bytes / kContentChunk + 2);
  hashes.push_back(bytes);
  for (uint64_t off = 0; off < bytes; off += kContentChunk) {
    llvm::ArrayRef<uint8_t> data =
        chunk(off, std::min<uint64_t>(kContentChunk, bytes - off));
    hashes.push_back(llvm::xxh3_64bits(data));
  }
  return llvm::xxh3_64bits(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(hashes.data()),
                              hashes.size() * sizeof(uint64_t)));
}

llvm::Expected<uint64_t> Backend::contentHash(uint64_t addr, uint64_t bytes) {
  std::vector<uint8_t> buffer(std::min<uint64_t>(bytes, kContentChunk));
  llvm::Error error = llvm::Error::success();
  uint64_t h = contentHashOf(bytes, [&](uint64_t off, uint64_t n) {
    if (error)
      return llvm::ArrayRef<uint8_t>(buffer.data(), n);
    error = copyFromDevice(buffer.data(), addr + off, n);
    return llvm::ArrayRef<uint8_t>(buffer.data(), n);
  });
  if (error)
    return std::move(error);
  return h;
}

llvm::Expected<bool> Backend::sameBytes(uint64_t a, uint64_t b,
                                        uint64_t bytes) {
  std::vector<uint8_t> x(std::min<uint64_t>(bytes, kContentChunk)), y(x.size());
  for (uint64_t off = 0; off < bytes; off += kContentChunk) {
    uint64_t n = std::min<uint64_t>(kContentChunk, bytes - off);
    if (llvm::Error e = copyFromDevice(x.data(), a + off, n))
      return std::move(e);
    if (llvm::Error e = copyFromDevice(y.data(), b + off, n))
      return std::move(e);
    if (std::memcmp(x.data(), y.data(), n) != 0)
      return false;
  }
  return true;
}

llvm::Error Backend::extendModule(BackendModule *,
                                  std::shared_ptr<const CompiledModule>) {
  return llvm::createStringError("the " + kind() +
                                 " backend loads modules whole: it cannot "
                                 "add kernels to a loaded module");
}

namespace {

/// Owns the BackendModule objects handed out by one backend. Thread-safe
/// (the cpu backend is called from several threads); a module found by
/// `find` stays valid until it is taken out, i.e. unloaded by the caller.
template <typename ModuleT> class ModuleTable {
public:
  ModuleT *add(std::unique_ptr<ModuleT> m) {
    ModuleT *raw = m.get();
    std::lock_guard<std::mutex> lock(mutex);
    modules[raw] = std::move(m);
    return raw;
  }
  /// The module behind `handle`, or null if this backend did not load it
  /// (or has unloaded it).
  ModuleT *find(BackendModule *handle) const {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = modules.find(handle);
    return it == modules.end() ? nullptr : it->second.get();
  }
  /// Removes the module behind `handle` and returns it (null as for
  /// `find`): of two threads unloading the same module, one gets it.
  std::unique_ptr<ModuleT> take(BackendModule *handle) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = modules.find(handle);
    if (it == modules.end())
      return nullptr;
    std::unique_ptr<ModuleT> m = std::move(it->second);
    modules.erase(it);
    return m;
  }

private:
  mutable std::mutex mutex;
  llvm::DenseMap<BackendModule *, std::unique_ptr<ModuleT>> modules;
};

llvm::Error unknownModule(llvm::StringRef backend) {
  return llvm::createStringError("not a module of this " + backend +
                                 " backend (unloaded or from another one)");
}

//===----------------------------------------------------------------------===//
// cpu
//===----------------------------------------------------------------------===//

class CpuModule : public BackendModule {
public:
  CpuModule(std::shared_ptr<const CompiledModule> compiled,
            cpu::LoadedModule *loaded)
      : BackendModule(std::move(compiled)), loaded(loaded) {}
  cpu::LoadedModule *loaded;
};

class CpuBackend final : public Backend {
public:
  explicit CpuBackend(const BackendOptions &options)
      : device(deviceOptions(options)),
        workers(options.cpuWorkers
                    ? options.cpuWorkers
                    : std::max(1u, std::thread::hardware_concurrency())) {}

  llvm::StringRef kind() const override { return "cpu"; }
  std::string name() const override {
    return llvm::formatv("cpu ({0} worker{1})", workers,
                         workers == 1 ? "" : "s")
        .str();
  }
  unsigned computeUnits() const override { return workers; }
  unsigned maxCooperativeBlocks() const override {
    return device.limits().maxCooperativeBlocks;
  }
  bool concurrentLaunches() const override { return true; }
  bool supportsFaultDomains() const override { return true; }

  llvm::Expected<uint64_t> allocate(uint64_t bytes) override {
    return device.memory().allocate(bytes);
  }
  llvm::Expected<uint64_t> allocateIn(uint64_t bytes,
                                      uint64_t domain) override {
    return device.memory().allocate(bytes, domain);
  }
  void setModuleDomain(BackendModule *handle, uint64_t domain) override {
    if (CpuModule *m = modules.find(handle))
      device.setModuleDomain(m->loaded, domain);
  }
  uint64_t releaseMemoryDomain(uint64_t domain) override {
    return device.releaseDomain(domain);
  }
  llvm::Error setHeapSize(uint64_t domain, uint64_t bytes) override {
    return device.heaps().setSize(domain, bytes);
  }
  bool hasDomainHeaps() const override { return true; }
  llvm::Error free(uint64_t addr) override {
    return device.memory().free(addr);
  }
  bool supportsSwap() const override { return true; }
  llvm::Error swapOut(uint64_t addr) override {
    return device.memory().swapOut(addr);
  }
  llvm::Error swapIn(uint64_t addr) override {
    return device.memory().swapIn(addr);
  }
  bool supportsSharing() const override { return true; }
  llvm::Error share(uint64_t addr, uint64_t with) override {
    return device.memory().share(addr, with);
  }
  llvm::Error unshare(uint64_t addr) override {
    return device.memory().unshare(addr);
  }
  llvm::Expected<uint64_t> contentHash(uint64_t addr, uint64_t bytes) override {
    // Device memory is host memory: hashed where it is.
    if (bytes && !device.memory().find(addr, bytes))
      return llvm::createStringError(
          "content hash of memory outside every resident allocation");
    return contentHashOf(bytes, [&](uint64_t off, uint64_t n) {
      return llvm::ArrayRef<uint8_t>(
          reinterpret_cast<const uint8_t *>(addr + off), n);
    });
  }
  llvm::Expected<bool> sameBytes(uint64_t a, uint64_t b,
                                 uint64_t bytes) override {
    return device.memory().sameBytes(a, b, bytes);
  }
  llvm::Error copyToDevice(uint64_t dst, const void *src,
                           uint64_t bytes) override {
    return device.memory().copyToDevice(dst, src, bytes);
  }
  llvm::Error copyFromDevice(void *dst, uint64_t src, uint64_t bytes) override {
    return device.memory().copyFromDevice(dst, src, bytes);
  }
  llvm::Error copyDeviceToDevice(uint64_t dst, uint64_t src,
                                 uint64_t bytes) override {
    return device.memory().copyDeviceToDevice(dst, src, bytes);
  }
  llvm::Error memset(uint64_t dst, uint8_t value, uint64_t bytes) override {
    return device.memory().memset(dst, value, bytes);
  }

  llvm::Expected<uint64_t> createTextureObject(const ResourceDesc &resource,
                                               const TextureDesc &texture,
                                               uint64_t domain) override {
    return device.createTextureObject(resource, texture, domain);
  }
  llvm::Expected<uint64_t> createSurfaceObject(const ResourceDesc &resource,
                                               uint64_t domain) override {
    return device.createSurfaceObject(resource, domain);
  }
  llvm::Error destroyTextureObject(uint64_t handle) override {
    return device.destroyTextureObject(handle);
  }
  llvm::Error destroySurfaceObject(uint64_t handle) override {
    return device.destroySurfaceObject(handle);
  }

  llvm::Expected<BackendModule *>
  loadModule(std::shared_ptr<const CompiledModule> compiled,
             llvm::StringRef /*ptxText*/) override {
    if (!compiled)
      return llvm::createStringError(
          "the cpu backend runs the compiled host module: none given");
    if (compiled->target.kind != Target::Kind::Host)
      return llvm::createStringError(
          "the cpu backend runs modules compiled for host, not " +
          compiled->target.str());
    auto loaded = device.loadModule(compiled);
    if (!loaded)
      return loaded.takeError();
    return modules.add(
        std::make_unique<CpuModule>(std::move(compiled), *loaded));
  }

  bool canExtendModules() const override { return true; }
  llvm::Error
  extendModule(BackendModule *handle,
               std::shared_ptr<const CompiledModule> part) override {
    CpuModule *m = modules.find(handle);
    if (!m)
      return unknownModule("cpu");
    if (!part || part->target.kind != Target::Kind::Host)
      return llvm::createStringError(
          "the cpu backend runs modules compiled for host");
    return device.extendModule(m->loaded, std::move(part));
  }

  llvm::Error unloadModule(BackendModule *handle) override {
    std::unique_ptr<CpuModule> m = modules.take(handle);
    if (!m)
      return unknownModule("cpu");
    return device.unloadModule(m->loaded);
  }

  llvm::Expected<std::pair<uint64_t, uint64_t>>
  globalAddress(BackendModule *handle, llvm::StringRef name) override {
    CpuModule *m = modules.find(handle);
    if (!m)
      return unknownModule("cpu");
    return device.globalAddress(m->loaded, name);
  }

  llvm::Error launch(BackendModule *handle, llvm::StringRef kernelName,
                     const LaunchConfig &config,
                     llvm::ArrayRef<uint8_t> params) override {
    CpuModule *m = modules.find(handle);
    if (!m)
      return unknownModule("cpu");
    return device.launch(m->loaded, kernelName, config, params);
  }

private:
  static cpu::CpuDevice::Options deviceOptions(const BackendOptions &o) {
    cpu::CpuDevice::Options d;
    d.regions = o.cpuRegions;
    d.warps = o.cpuWarps;
    d.workers = o.cpuWorkers;
    if (o.printfSink)
      d.printfSink = o.printfSink;
    return d;
  }

  cpu::CpuDevice device;
  unsigned workers;
  ModuleTable<CpuModule> modules;
};

//===----------------------------------------------------------------------===//
// cuda
//===----------------------------------------------------------------------===//

class GpuModule : public BackendModule {
public:
  GpuModule(std::shared_ptr<const CompiledModule> compiled,
            cuda::CudaModule *loaded)
      : BackendModule(std::move(compiled)), loaded(loaded) {}
  cuda::CudaModule *loaded;
};

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(std::unique_ptr<cuda::CudaDevice> device)
      : device(std::move(device)) {}

  llvm::StringRef kind() const override { return "cuda"; }
  std::string name() const override { return device->name(); }

  bool supportsSwap() const override { return device->virtualMemory(); }
  llvm::Error swapOut(uint64_t addr) override { return device->swapOut(addr); }
  llvm::Error swapIn(uint64_t addr) override { return device->swapIn(addr); }
  bool supportsSharing() const override { return device->virtualMemory(); }
  bool sharingRemaps() const override { return true; }
  llvm::Error share(uint64_t addr, uint64_t with) override {
    if (llvm::Error e = device->makeCurrent())
      return e;
    return device->share(addr, with);
  }
  llvm::Error unshare(uint64_t addr) override {
    if (llvm::Error e = device->makeCurrent())
      return e;
    return device->unshare(addr);
  }
  std::optional<uint64_t> freeDeviceMemory() override {
    if (auto info = device->memoryInfo())
      return info->first;
    return std::nullopt;
  }
  unsigned computeUnits() const override {
    return device->multiprocessorCount();
  }
  std::string nativeTarget() const override {
    auto [major, minor] = device->computeCapability();
    return "sm_" + std::to_string(major * 10 + minor);
  }
  bool concurrentLaunches() const override { return true; }

  // Each call runs on the calling thread's own stream (CudaDevice), so
  // calls of different threads need no lock and launches run concurrently.
  llvm::Expected<uint64_t> allocate(uint64_t bytes) override {
    if (llvm::Error e = device->makeCurrent())
      return std::move(e);
    return device->allocate(bytes);
  }
  llvm::Error free(uint64_t addr) override {
    if (llvm::Error e = device->makeCurrent())
      return e;
    return device->free(addr);
  }
  llvm::Error copyToDevice(uint64_t dst, const void *src,
                           uint64_t bytes) override {
    if (llvm::Error e = device->makeCurrent())
      return e;
    return device->copyToDevice(dst, src, bytes);
  }
  llvm::Error copyFromDevice(void *dst, uint64_t src, uint64_t bytes) override {
    if (llvm::Error e = device->makeCurrent())
      return e;
    return device->copyFromDevice(dst, src, bytes);
  }
  llvm::Error copyDeviceToDevice(uint64_t dst, uint64_t src,
                                 uint64_t bytes) override {
    if (llvm::Error e = device->makeCurrent())
      return e;
    return device->copyDeviceToDevice(dst, src, bytes);
  }
  llvm::Error memset(uint64_t dst, uint8_t value, uint64_t bytes) override {
    if (llvm::Error e = device->makeCurrent())
      return e;
    return device->memset(dst, value, bytes);
  }

  llvm::Expected<BackendModule *>
  loadModule(std::shared_ptr<const CompiledModule> compiled,
             llvm::StringRef ptxText) override {
    // Wooly's own PTX for an sm_XX compilation; the original otherwise.
    llvm::StringRef ptx = ptxText;
    if (compiled && compiled->target.kind == Target::Kind::NVPTX)
      ptx = compiled->binary;
    else if (compiled && compiled->target.kind != Target::Kind::Host)
      return llvm::createStringError(
          "the cuda backend cannot load a module compiled for " +
          compiled->target.str());
    if (ptx.empty())
      return llvm::createStringError(
          "the cuda backend needs PTX: the original PTX or a module compiled "
          "for sm_XX");
    if (llvm::Error e = device->makeCurrent())
      return std::move(e);
    auto loaded = device->loadPTX(ptx);
    if (!loaded)
      return loaded.takeError();
    return modules.add(
        std::make_unique<GpuModule>(std::move(compiled), *loaded));
  }

  llvm::Error unloadModule(BackendModule *handle) override {
    std::unique_ptr<GpuModule> m = modules.take(handle);
    if (!m)
      return unknownModule("cuda");
    if (llvm::Error e = device->makeCurrent())
      return e;
    return device->unloadModule(m->loaded);
  }

  llvm::Expected<std::pair<uint64_t, uint64_t>>
  globalAddress(BackendModule *handle, llvm::StringRef name) override {
    GpuModule *m = modules.find(handle);
    if (!m)
      return unknownModule("cuda");
    if (llvm::Error e = device->makeCurrent())
      return std::move(e);
    return device->globalAddress(m->loaded, name);
  }

  llvm::Error launch(BackendModule *handle, llvm::StringRef kernelName,
                     const LaunchConfig &config,
                     llvm::ArrayRef<uint8_t> params) override {
    GpuModule *m = modules.find(handle);
    if (!m)
      return unknownModule("cuda");
    // The compiled module's layout lets the device check the buffer; a
    // kernel it does not know is left to the driver to report.
    const KernelInfo *info =
        m->compiled ? m->compiled->findKernel(kernelName) : nullptr;
    if (config.cooperative)
      return llvm::createStringError("launch of kernel '" + kernelName +
                                     "': cooperative launches are not "
                                     "supported yet on the cuda backend");
    if (!config.faultDomains.empty())
      return llvm::createStringError(
          "launch of kernel '" + kernelName +
          "': fault domains are not supported on the cuda backend (a "
          "kernel's fault ends the context)");
    if (llvm::Error e = device->makeCurrent())
      return e;
    if (!info)
      return device->launch(m->loaded, kernelName, config, params);
    return device->launch(m->loaded, kernelName, config, params,
                          info->paramOffsets, info->paramSizes);
  }

  std::optional<double> lastKernelMs() const override {
    return device->lastKernelMs();
  }

  std::optional<std::string> lostReason() const override {
    return device->lostReason();
  }

private:
  // Destroyed after `modules` (declared first): the device unloads what is
  // still loaded when it closes.
  std::unique_ptr<cuda::CudaDevice> device;
  ModuleTable<GpuModule> modules;
};

const llvm::StringRef kBackendNames[] = {"cpu", "cuda", "remote"};

} // namespace

llvm::ArrayRef<llvm::StringRef> backendNames() { return kBackendNames; }

bool backendRunsOriginalPTX(llvm::StringRef name) {
  return name == "cuda" || name == "remote";
}

llvm::Expected<std::unique_ptr<Backend>>
createBackend(llvm::StringRef name, const BackendOptions &options) {
  if (name == "cpu")
    return std::make_unique<CpuBackend>(options);
  if (name == "cuda") {
    auto device = options.cudaDriverLibrary.empty()
                      ? cuda::CudaDevice::open(options.cudaOrdinal)
                      : cuda::CudaDevice::open(options.cudaOrdinal,
                                               options.cudaDriverLibrary);
    if (!device)
      return device.takeError();
    if (options.cudaVirtualMemory)
      if (llvm::Error e = (*device)->enableVirtualMemory())
        return llvm::createStringError(
            "cuda: cannot swap device memory (virtual memory management): " +
            llvm::toString(std::move(e)));
    return std::make_unique<CudaBackend>(std::move(*device));
  }
  if (name == "remote")
    return createRemoteBackend(options);
  return llvm::createStringError("unknown backend '" + name +
                                 "' (cpu, cuda or remote)");
}

} // namespace wooly
