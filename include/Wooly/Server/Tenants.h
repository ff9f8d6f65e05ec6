//===- Tenants.h - Tenants of wooly-serve and their limits ------*- C++ -*-===//
//
// The tenants file (`wooly-serve --tenants=FILE`) is YAML:
//
//   tenants:
//     - name: inference
//       token: "s3cret-1"
//       class: latency-critical      # latency-critical | normal | best-effort
//       weight: 2                    # share inside its class (default 1)
//       sla_ms: 5                    # latency-critical only
//       memory: 4GiB                 # quota (default: the device's memory)
//       dedup: false                 # never share identical buffers with
//                                    # other tenants (default: true)
//       limits:                      # per session (default: wooly-serve's)
//         modules: 64
//         streams: 256
//         events: 4096
//         graphs: 64
//         allocations: 100000
//         outstanding: 10000         # operations queued or running
//         outstanding_bytes: 1GiB    # copy payloads held by the server
//
// Without a file the server is open: any tenant name is accepted without a
// token, in class `normal` with weight 1 and the device's memory as quota.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_SERVER_TENANTS_H
#define WOOLY_SERVER_TENANTS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace wooly::server {

/// Scheduling classes, in strict priority order.
enum class PriorityClass { LatencyCritical, Normal, BestEffort };

/// "latency-critical", "normal", "best-effort".
llvm::StringRef className(PriorityClass c);

/// Limits on one session's resources (0: the server's default,
/// ServerOptions). A call past one fails with LIMIT_EXCEEDED.
struct SessionLimits {
  uint64_t modules = 0, streams = 0, events = 0, graphs = 0, allocations = 0;
  /// Operations (launches, copies, memsets, ...) queued or running.
  uint64_t outstanding = 0;
  /// Bytes of copies to the device the server holds until they run.
  uint64_t outstandingBytes = 0;
};

/// One tenant's identity and limits.
struct TenantConfig {
  std::string name;
  /// Empty: no token needed (open mode only).
  std::string token;
  PriorityClass priorityClass = PriorityClass::Normal;
  /// Share inside its class (>= 1).
  uint32_t weight = 1;
  /// Latency target of a latency-critical tenant (0: none).
  double slaMs = 0;
  /// Bytes of device memory the tenant may hold (0: the device's memory).
  uint64_t quotaBytes = 0;
  /// Its buffers may share one copy with other tenants' identical ones
  /// (deduplication). Off for a tenant that must not let others learn,
  /// e.g. from the time a first write takes, that they hold the same bytes.
  bool dedup = true;
  /// Each of its sessions' limits (0s: the server's).
  SessionLimits limits;
};

/// The configured tenants.
struct TenantRegistry {
  /// No tenants file: every tenant name is accepted (see the file header).
  bool open = true;
  std::vector<TenantConfig> tenants;

  /// The tenant named `name`, or null.
  const TenantConfig *find(llvm::StringRef name) const;
};

/// Reads a tenants file. Errors name the file, line and column.
llvm::Expected<TenantRegistry> loadTenants(llvm::StringRef path);
/// The same from text (`name` is used in errors).
llvm::Expected<TenantRegistry> parseTenants(llvm::StringRef text,
                                            llvm::StringRef name);

/// Parses a byte size: "4096", "64KiB", "512MiB", "4GiB", "1TiB" (binary
/// units), "1KB", "1MB", "1GB" (decimal units), optionally with a
/// fraction ("1.5GiB"). Errors say what was expected.
llvm::Expected<uint64_t> parseByteSize(llvm::StringRef text);

} // namespace wooly::server

#endif // WOOLY_SERVER_TENANTS_H
