//===- Scheduler.h - The dispatch seam of wooly-serve -----------*- C++ -*-===//
//
// Every launch and copy of every tenant goes through one `Scheduler`: the
// server hands it each work item once the item's dependencies (the earlier
// work of its stream, events it waits for, its kernel's compilation) are
// done, and asks it which item runs next whenever an executor is free. The
// scheduler sees the tenant (class, weight, SLA) and, for launches, the
// kernel's KernelInfo; it decides order only, never correctness (per-stream
// order is already guaranteed by the dependencies).
//
// The server calls a scheduler from one thread only. A policy must be
// deterministic: the same sequence of calls gives the same decisions.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_SERVER_SCHEDULER_H
#define WOOLY_SERVER_SCHEDULER_H

#include "Wooly/Server/Tenants.h"

#include <cstdint>
#include <memory>

namespace wooly {
struct KernelInfo;
struct LaunchConfig;
} // namespace wooly

namespace wooly::server {

/// What the scheduler sees of one unit of work.
struct WorkItem {
  enum class Kind { Launch, Copy, Memset };

  virtual ~WorkItem() = default;

  Kind kind = Kind::Launch;
  /// The server's id for the item; increases with arrival.
  uint64_t id = 0;
  /// The session (one connection of a tenant) and its tenant.
  uint64_t session = 0;
  const TenantConfig *tenant = nullptr;
  /// Launches: the compiled kernel and its configuration.
  const KernelInfo *kernel = nullptr;
  const LaunchConfig *launch = nullptr;
  /// Copies and memsets: the bytes moved or set.
  uint64_t bytes = 0;
};

/// A dispatch policy.
class Scheduler {
public:
  virtual ~Scheduler();
  /// A short name for logs and metrics ("fifo").
  virtual const char *name() const = 0;
  /// `item` may run now.
  virtual void ready(WorkItem *item) = 0;
  /// The next item to run, removed from the scheduler; null when none.
  virtual WorkItem *next() = 0;
  /// `item` (returned by `next`) ended after `deviceMs` of device time.
  virtual void finished(WorkItem *item, double deviceMs) = 0;
  /// Items ready but not yet returned by `next`.
  virtual size_t queued() const = 0;
};

/// First come, first served across all tenants, in the order items became
/// ready.
std::unique_ptr<Scheduler> createFifoScheduler();

} // namespace wooly::server

#endif // WOOLY_SERVER_SCHEDULER_H
