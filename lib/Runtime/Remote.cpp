//===- Remote.cpp - A Backend that is a wooly-serve session -----*- C++ -*-===//
//
// `createBackend("remote")`: the tools' device is a session of a running
// wooly-serve (found as clients find it: BackendOptions::server, else
// WOOLY_SERVER, WOOLY_TENANT, WOOLY_TOKEN). It sends the original PTX (the
// server compiles it), and every launch is synchronous, as Backend's are: a
// launch then a stream synchronisation, whose error is the launch's.
//
// A kernel fault ends a session's usefulness (CUDA's sticky error). The
// remote backend then opens a new session for the calls that follow, so
// that a tool running many kernels (wooly-conformance) goes on after one
// faults; the old session's allocations and modules are gone with it.
//
//===----------------------------------------------------------------------===//

#include "Remote.h"
#include "BackendModule.h"

#include "Wooly/Client/Client.h"
#include "Wooly/Compiler/CompiledModule.h"

#include "llvm/ADT/DenseMap.h"

#include <mutex>

namespace wooly {

/// A module of the remote session: its handle there.
class RemoteModule : public BackendModule {
public:
  RemoteModule(std::shared_ptr<const CompiledModule> compiled, uint64_t handle,
               uint64_t session)
      : BackendModule(std::move(compiled)), handle(handle), session(session) {}
  uint64_t handle;
  /// The session (connection) it was loaded in.
  uint64_t session;
};

namespace {

llvm::Error toError(const client::Status &s) {
  if (s.ok())
    return llvm::Error::success();
  return llvm::createStringError(s.str());
}

class RemoteBackend final : public Backend {
public:
  explicit RemoteBackend(client::Options options)
      : options(std::move(options)) {}

  llvm::Error connect() {
    client::Status s;
    client = client::Client::connect(options, s);
    if (!client)
      return toError(s);
    ++session;
    client::DeviceProperties dev;
    if (llvm::Error e = toError(client->getDevice(dev)))
      return e;
    deviceName = dev.name;
    deviceUnits = dev.smCount;
    cooperativeBlocks = dev.maxCooperativeBlocks;
    endpoint = client->server();
    return llvm::Error::success();
  }

  llvm::StringRef kind() const override { return "remote"; }
  unsigned computeUnits() const override { return deviceUnits; }
  unsigned maxCooperativeBlocks() const override { return cooperativeBlocks; }
  std::string name() const override {
    return "remote: " + deviceName + " at " + endpoint;
  }

  llvm::Expected<uint64_t> allocate(uint64_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (llvm::Error e = usable())
      return std::move(e);
    // The server's memory is zero-filled, as every backend's is.
    uint64_t addr = 0;
    if (llvm::Error e =
            check(client->malloc(std::max<uint64_t>(bytes, 1), addr)))
      return std::move(e);
    return addr;
  }
  llvm::Error free(uint64_t addr) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (llvm::Error e = usable())
      return e;
    return check(client->free(addr));
  }
  llvm::Error copyToDevice(uint64_t dst, const void *src,
                           uint64_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (llvm::Error e = usable())
      return e;
    return check(client->copyToDevice(dst, src, bytes));
  }
  llvm::Error copyFromDevice(void *dst, uint64_t src, uint64_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (llvm::Error e = usable())
      return e;
    return check(client->copyFromDevice(dst, src, bytes));
  }
  llvm::Error memset(uint64_t dst, uint8_t value, uint64_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (llvm::Error e = usable())
      return e;
    return check(client->memset(dst, value, bytes));
  }

  llvm::Expected<BackendModule *>
  loadModule(std::shared_ptr<const CompiledModule> compiled,
             llvm::StringRef ptxText) override {
    if (ptxText.empty())
      return llvm::createStringError(
          "the remote backend sends PTX to the server: none given");
    std::lock_guard<std::mutex> lock(mutex);
    if (llvm::Error e = usable())
      return std::move(e);
    client::Module m;
    if (llvm::Error e = check(client->loadModule(
            std::string_view(ptxText.data(), ptxText.size()), "", m)))
      return std::move(e);
    auto owned =
        std::make_unique<RemoteModule>(std::move(compiled), m.handle, session);
    RemoteModule *raw = owned.get();
    modules[raw] = std::move(owned);
    return raw;
  }

  llvm::Error unloadModule(BackendModule *handle) override {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = modules.find(handle);
    if (it == modules.end())
      return llvm::createStringError("not a module of this remote backend");
    std::unique_ptr<RemoteModule> m = std::move(it->second);
    modules.erase(it);
    if (m->session != session || !client)
      return llvm::Error::success(); // Gone with its session.
    return check(client->unloadModule(m->handle));
  }

  llvm::Expected<std::pair<uint64_t, uint64_t>>
  globalAddress(BackendModule *handle, llvm::StringRef name) override {
    std::lock_guard<std::mutex> lock(mutex);
    RemoteModule *m = find(handle);
    if (!m)
      return llvm::createStringError("not a module of this remote session");
    uint64_t addr = 0, size = 0;
    if (llvm::Error e = check(client->getSymbol(
            m->handle, std::string_view(name.data(), name.size()), addr, size)))
      return std::move(e);
    return std::make_pair(addr, size);
  }

  llvm::Error launch(BackendModule *handle, llvm::StringRef kernelName,
                     const LaunchConfig &config,
                     llvm::ArrayRef<uint8_t> params) override {
    std::lock_guard<std::mutex> lock(mutex);
    RemoteModule *m = find(handle);
    if (!m)
      return llvm::createStringError("not a module of this remote session");
    auto dim = [](const std::array<uint32_t, 3> &d) {
      return client::Dim3{d[0], d[1], d[2]};
    };
    client::Status s = client->launch(
        m->handle, std::string_view(kernelName.data(), kernelName.size()),
        dim(config.grid), dim(config.block), config.dynamicSharedBytes,
        params.data(), params.size(), /*stream=*/0, config.cooperative);
    if (s.ok())
      s = client->streamSynchronize(0);
    return check(s);
  }

private:
  /// A session that faulted is replaced by a new one.
  llvm::Error usable() {
    if (client)
      return llvm::Error::success();
    return connect();
  }
  /// Turns a status into an error; a sticky one ends the session.
  llvm::Error check(const client::Status &s) {
    if (s.sticky)
      client.reset();
    return toError(s);
  }
  RemoteModule *find(BackendModule *handle) {
    auto it = modules.find(handle);
    if (it == modules.end() || it->second->session != session || !client)
      return nullptr;
    return it->second.get();
  }

  client::Options options;
  std::unique_ptr<client::Client> client;
  std::string deviceName, endpoint;
  unsigned deviceUnits = 0, cooperativeBlocks = 0;
  uint64_t session = 0;
  std::mutex mutex;
  llvm::DenseMap<BackendModule *, std::unique_ptr<RemoteModule>> modules;
};

} // namespace

llvm::Expected<std::unique_ptr<Backend>>
createRemoteBackend(const BackendOptions &options) {
  client::Options o;
  o.server = options.server;
  o.clientName = "wooly remote backend";
  auto backend = std::make_unique<RemoteBackend>(std::move(o));
  if (llvm::Error e = backend->connect())
    return std::move(e);
  return std::move(backend);
}

} // namespace wooly
