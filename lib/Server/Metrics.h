//===- Metrics.h - Prometheus metrics of wooly-serve ------------*- C++ -*-===//
//
// Counters updated by the server's I/O thread and read by the HTTP thread
// of the `/metrics` endpoint, the Prometheus text writer, and the endpoint
// itself (cpp-httplib, kept out of the other files: its header is heavy).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_SERVER_METRICS_H
#define WOOLY_LIB_SERVER_METRICS_H

#include "llvm/Support/Error.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace wooly::server {

/// One tenant's counters (all its sessions together).
struct TenantMetrics {
  std::atomic<uint64_t> launches{0}, kernelMicros{0};
  std::atomic<uint64_t> bytesToDevice{0}, bytesFromDevice{0},
      bytesDeviceToDevice{0};
  std::atomic<uint64_t> errors{0};
  /// Operations created and not yet completed.
  std::atomic<int64_t> queued{0};
};

/// Writes the Prometheus text exposition format (version 0.0.4).
class PrometheusWriter {
public:
  using Labels = std::vector<std::pair<std::string, std::string>>;
  /// Starts a metric family: `# HELP` and `# TYPE` lines.
  void family(const std::string &name, const char *type, const char *help);
  /// One sample; label values are escaped.
  void sample(const std::string &name, const Labels &labels, double value);
  const std::string &str() const { return text; }

private:
  std::string text;
};

/// An HTTP server answering `GET /metrics` on its own thread.
class MetricsEndpoint {
public:
  /// Listens on `hostPort` ("127.0.0.1:9400"; port 0 picks a free one).
  static llvm::Expected<std::unique_ptr<MetricsEndpoint>>
  start(const std::string &hostPort, std::function<std::string()> render);
  ~MetricsEndpoint();
  /// "HOST:PORT" as bound.
  std::string address() const;

  class Impl;

private:
  explicit MetricsEndpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace wooly::server

#endif // WOOLY_LIB_SERVER_METRICS_H
