//===- Server.h - wooly-serve as a library ----------------------*- C++ -*-===//
//
// The server that makes one device shared: tenants connect over ZeroMQ
// (proto/wooly.proto), open sessions, load modules, allocate, copy and
// launch, and every session's work runs in ONE Backend (one device
// context). See lib/Server/Server.cpp for how a request flows.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_SERVER_SERVER_H
#define WOOLY_SERVER_SERVER_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace wooly::server {

/// How a Server is set up (wooly-serve's options).
struct ServerOptions {
  /// ZeroMQ endpoints to bind (`ipc://PATH`, `tcp://HOST:PORT`). An ipc
  /// socket is its owner's alone (mode 0700).
  std::vector<std::string> listen;
  /// CURVE for the tcp:// endpoints (ZeroMQ's encryption, and clients that
  /// must know the server's public key): the key-pair file that
  /// `generateCurveKeys` writes. Empty: tcp traffic is plain.
  std::string curveKeyFile;
  /// `cpu` (the embedded CPU backend) or `cuda`.
  std::string backend = "cpu";
  /// The tenants file (empty: open mode, see Tenants.h).
  std::string tenantsFile;
  /// `HOST:PORT` of the Prometheus endpoint `/metrics` (empty: none).
  std::string metrics;
  /// Directory of the on-disk compile cache (empty: memory only).
  std::string cacheDir;
  /// Device memory all tenants share, in bytes (0: for `cpu` 4 GiB of
  /// virtual device memory; for `cuda` what the GPU has free at start-up,
  /// which also caps a larger value). Quotas may add up to more
  /// (MemoryManager.h: idle tenants' memory moves out on cpu, and on cuda
  /// with `cudaSwap`; otherwise it is a hard limit).
  uint64_t deviceMemory = 0;
  /// cuda: oversubscription - allocations through the virtual memory
  /// management API, so that idle tenants' memory can move to host memory
  /// (BackendOptions::cudaVirtualMemory).
  bool cudaSwap = false;
  /// Testing: a pause before each allocation a swap moves, so that a swap
  /// lasts long enough to observe other tenants' work going on meanwhile.
  unsigned swapDelayMs = 0;
  /// The scheduling policy: `wooly` (include/Wooly/Server/Scheduler.h) or
  /// `fifo`.
  std::string scheduler = "wooly";
  /// `wooly`: pace lower classes while a latency-critical tenant is
  /// configured (their kernels compiled through wooly-slice; backends that
  /// run launches at the same time: cpu, cuda).
  bool pacing = true;
  /// `wooly`: fuse small launches of different tenants into one launch
  /// (wooly-coalesce) where that is measured to help; on backends whose
  /// launches take fault domains (cpu), so that a fault stays its tenant's.
  bool coalesce = true;
  /// Write the schedule as a Chrome trace (Perfetto) here at exit.
  std::string traceFile;
  /// The watchdog: a launch running longer than this is stopped at its
  /// next loop iteration (kernels compiled through wooly-contain) and
  /// fails for its tenant with a sticky error; 0: no watchdog. On a GPU
  /// only with `contain`.
  double kernelTimeoutMs = 30000;
  /// On a GPU backend (one with a native target): every tenant module is
  /// compiled for it through wooly-contain, so that a trap, failed assert
  /// or misaligned access fails its tenant's launch (sticky, for that
  /// session) instead of ending the device context shared by all, and the
  /// watchdog watches its launches. A module the pass or the device
  /// refuses runs as written (logged). Off by default until its cost on a
  /// GPU is understood (bench/README.md). The cpu backend contains these
  /// by itself and always has the watchdog.
  bool contain = false;
  /// Threads that run launches and copies (0: the backend's choice: one
  /// per core for cpu, 4 for cuda, each with a stream of its own).
  unsigned executors = 0;
  /// Threads that compile kernels (0: 2).
  unsigned compileThreads = 0;
  /// CPU backend worker threads (0: one per hardware thread).
  unsigned cpuWorkers = 0;
  /// Limits per session (a tenant's `limits` in the tenants file take
  /// precedence).
  uint64_t maxMessageBytes = 1ull << 31;
  unsigned maxModulesPerSession = 1024;
  unsigned maxStreamsPerSession = 4096;
  unsigned maxEventsPerSession = 1 << 16;
  unsigned maxGraphsPerSession = 4096;
  /// Calls one graph may hold, and bytes all of a session's graphs may keep.
  unsigned maxGraphCalls = 1 << 16;
  uint64_t maxGraphBytesPerSession = 256ull << 20;
  uint64_t maxAllocationsPerSession = 1 << 20;
  /// Operations (launches, copies, memsets) a session may have queued or
  /// running, and bytes of copies to the device the server may hold for
  /// it (backpressure: past them a call fails with LIMIT_EXCEEDED).
  uint64_t maxOutstandingPerSession = 1 << 16;
  uint64_t maxOutstandingBytesPerSession = 4ull << 30;
  /// How long SIGINT/SIGTERM waits for queued work before exiting.
  unsigned drainTimeoutMs = 10000;
  /// Receives log lines (default: stderr with a timestamp).
  std::function<void(const std::string &)> log;
  /// Receives device-side printf output (default: stdout).
  std::function<void(const std::string &)> printfSink;
};

/// A running server.
/// Writes a new CURVE key pair for `ServerOptions::curveKeyFile`:
/// `prefix`.key (both keys, Z85; only its owner may read it) and
/// `prefix`.pub (the public key alone: what clients need, WOOLY_SERVER_KEY).
llvm::Error generateCurveKeys(llvm::StringRef prefix);

class Server {
public:
  /// Creates the backend, binds every endpoint and starts the metrics
  /// endpoint. Errors: a bad endpoint, an unreadable tenants file, a backend
  /// that does not start.
  static llvm::Expected<std::unique_ptr<Server>> create(ServerOptions options);
  ~Server();

  /// Serves requests until `requestStop`, then drains queued work (up to
  /// `drainTimeoutMs`) and returns.
  llvm::Error run();
  /// Asks `run` to stop. Async-signal-safe.
  void requestStop();

  /// The Prometheus text of `/metrics`.
  std::string metricsText();
  /// The endpoints bound (with the port ZeroMQ chose for `tcp://...:*`).
  std::vector<std::string> endpoints() const;

  class Impl;

private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace wooly::server

#endif // WOOLY_SERVER_SERVER_H
