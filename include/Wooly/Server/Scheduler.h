//===- Scheduler.h - The global scheduler of wooly-serve --------*- C++ -*-===//
//
// Every launch and copy of every tenant goes through one `Scheduler`: the
// server (or the `sim` device model, lib/Sim) hands it each work item once
// the item's dependencies (the earlier work of its stream, events it waits
// for, its kernel's compilation) are done, and asks it what runs next
// whenever the device can take more. The scheduler decides the order and,
// for launches of kernels that `wooly-slice` accepted, HOW each launch runs:
// on how many physical blocks (constrained) and which virtual blocks
// (sliced), and which running slices to preempt. It never decides
// correctness: per-stream order is already guaranteed by the dependencies,
// and a sliced launch that is preempted resumes exactly where it stopped.
//
// Time is passed in by the caller (`Nanos`, any monotonic origin), never
// read from a clock, and no decision depends on pointer values, hash order
// or threads: the same sequence of calls gives the same decisions
// (`DecisionRecord`s), which is what makes a schedule testable and
// replayable. The server calls a scheduler from one thread only.
//
// The `wooly` policy (createWoolyScheduler):
//
//  - Strict priority between classes: latency-critical, then normal, then
//    best-effort. An item of a lower class never starts while an item of a
//    higher class is queued.
//  - Weighted fair share inside a class, by start-time fair queuing: each
//    tenant has a virtual time charged with the device time its work used
//    (measured duration x the fraction of the device's block slots it held)
//    divided by its weight; the backlogged tenant with the smallest virtual
//    time goes next (ties: the tenant seen first). A tenant that becomes
//    backlogged starts at the class's virtual clock, so idleness banks no
//    credit.
//  - SLA pacing: while a latency-critical tenant is present (it had work in
//    the last `presenceMs`), launches of lower classes that have a sliced
//    variant run as bounded, preemptible slices: constrained to one wave of
//    physical blocks (the device's block slots for the kernel, less the SMs
//    the latency-critical tenants' recent launches needed while one of them
//    is active) and sliced so that every physical block runs for at most
//    `activeSliceMs` (`idleSliceMs` while the latency-critical tenants are
//    idle) by the cost model. When an item becomes ready and the device
//    lacks the SMs it needs, running slices of lower classes are asked to
//    stop at their next virtual block (`takePreemptions`), the newest first,
//    so a latency-critical item waits for at most one virtual block of
//    other tenants' work. A launch that cannot be sliced (the
//    passes refused it, or it is not a kernel) is held back while a
//    latency-critical tenant is active, at most `maxHoldMs`, and then runs
//    whole; each such launch is counted (`TenantStats::unpaced`).
//  - The cost model: per kernel, the duration of one virtual block
//    (exponentially weighted over the measured launches of that kernel;
//    `defaultBlockMs` before the first), and the blocks one SM holds
//    (DeviceModel::blocksPerSM, from the launch's threads, registers and
//    shared memory).
//
//  - Coalescing (`coalesceMaxParts` > 1): while no latency-critical tenant
//    is present, a launch of the normal or best-effort class that goes
//    whole, is `coalescible` and small (the cost model expects at most
//    `coalesceMaxMs` of it, from launches of its kernel measured alone) takes
//    along the head launches of other tenants of its class that are
//    coalescible and small too, in fair-share order, up to
//    `coalesceMaxParts` launches and `coalesceMaxBlocks` blocks: one
//    dispatch, run by the caller as one launch of a fused kernel. Measured
//    to help: per kernel set, the fused launch's time over the sum of its
//    launches' times alone (the cost model) is averaged, and a set whose
//    ratio stays above `coalesceMaxRatio` after `coalesceProbe` fused runs
//    is not fused again, nor one the caller cannot compile. Each tenant is
//    charged its launches' share of the blocks.
//
// Metrics (TenantStats), per tenant: queueing delay (ready to first
// dispatch), device time received against weight, and STARVATION: the
// fraction of the time the tenant had ready work that none of its work was
// running, over the time it had work at all (ready or running). 0 means its
// work always ran as soon as it was ready; 1 means it never ran.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_SERVER_SCHEDULER_H
#define WOOLY_SERVER_SCHEDULER_H

#include "Wooly/Server/Tenants.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace wooly {
struct KernelInfo;
struct LaunchConfig;
} // namespace wooly

namespace wooly::server {

/// Nanoseconds since any fixed origin (the caller's clock).
using Nanos = int64_t;

/// What the scheduler sees of one unit of work.
struct WorkItem {
  enum class Kind { Launch, Copy, Memset };

  virtual ~WorkItem() = default;

  Kind kind = Kind::Launch;
  /// The caller's id for the item; increases with arrival.
  uint64_t id = 0;
  /// The session (one connection of a tenant) and its tenant.
  uint64_t session = 0;
  const TenantConfig *tenant = nullptr;
  /// Launches: the compiled kernel and its configuration (may be null
  /// where the caller has none, as in the sim; the fields below are what
  /// the policy uses).
  const KernelInfo *kernel = nullptr;
  const LaunchConfig *launch = nullptr;
  /// Copies and memsets: the bytes moved or set.
  uint64_t bytes = 0;

  /// Launches: identifies the kernel for the cost model (equal for launches
  /// of the same compiled kernel), the virtual grid's blocks, and what one
  /// block uses of an SM.
  uint64_t kernelKey = 0;
  uint64_t gridBlocks = 1;
  uint32_t threadsPerBlock = 1;
  uint32_t registersPerThread = 0;
  uint64_t sharedBytesPerBlock = 0;
  /// The launch has a sliced variant (wooly-slice accepted the kernel), so
  /// it may run constrained, sliced and preemptible.
  bool sliceable = false;
  /// The launch may run fused with other launches in one launch of a
  /// kernel that dispatches to each (wooly-coalesce); the caller says so
  /// for the kernels it can merge.
  bool coalescible = false;

  /// Owned by the scheduler: virtual blocks done by earlier slices, and
  /// when the item became ready.
  uint64_t blocksDone = 0;
  Nanos readyAt = 0;
  bool dispatchedOnce = false;
};

/// How one dispatch of an item runs.
struct Dispatch {
  WorkItem *item = nullptr;
  /// Numbers the dispatches of a scheduler (for preemption and logs).
  uint64_t ticket = 0;
  /// Physical blocks of a constrained launch (0: the launch's own grid).
  uint32_t physicalBlocks = 0;
  /// The virtual blocks [sliceBegin, sliceEnd) of a sliced launch
  /// (sliceEnd 0: not sliced, the whole launch).
  uint64_t sliceBegin = 0, sliceEnd = 0;
  /// Launches of other tenants that run fused with `item`, in one launch of
  /// a coalesced kernel (after `item`, in this order); each is done when
  /// the dispatch ends. Empty: `item` alone.
  std::vector<WorkItem *> fused;

  bool sliced() const { return sliceEnd != 0; }
  explicit operator bool() const { return item != nullptr; }
};

/// What a dispatch did.
struct Outcome {
  /// Device time, from its start to its end.
  double deviceMs = 0;
  /// Virtual blocks run (a preempted slice: fewer than it was given).
  uint64_t blocksRun = 0;
  /// The dispatch failed: the item is done whatever it ran.
  bool failed = false;
  /// A fused dispatch (Dispatch::fused): whether its launches ran as one
  /// launch of the fused kernel, one after another while that kernel is
  /// being compiled, or one after another for good because it cannot be
  /// compiled (the scheduler then never fuses that set of kernels again).
  enum class Fusion { Fused, Pending, Refused } fusion = Fusion::Fused;
};

/// Identifies a set of kernels (the distinct `kernelKey`s of `items`,
/// whatever their order and multiplicity): what a fused kernel is compiled
/// and measured for.
uint64_t kernelSetKey(const std::vector<const WorkItem *> &items);

/// One decision, for logs and determinism checks.
struct DecisionRecord {
  Nanos at = 0;
  uint64_t item = 0, ticket = 0;
  unsigned tenant = 0; // ordinal: the order tenants were first seen
  uint32_t physicalBlocks = 0;
  uint64_t sliceBegin = 0, sliceEnd = 0;
  /// Launches fused with the item (Dispatch::fused).
  unsigned fused = 0;
  bool operator==(const DecisionRecord &o) const {
    return at == o.at && item == o.item && ticket == o.ticket &&
           tenant == o.tenant && physicalBlocks == o.physicalBlocks &&
           sliceBegin == o.sliceBegin && sliceEnd == o.sliceEnd &&
           fused == o.fused;
  }
};

/// The device as the scheduler models it (block slots per SM).
struct DeviceModel {
  unsigned sms = 132;
  unsigned maxThreadsPerSM = 2048;
  unsigned maxBlocksPerSM = 32;
  unsigned registersPerSM = 65536;
  uint64_t sharedPerSM = 228 * 1024;

  /// An NVIDIA H100 SXM (132 SMs).
  static DeviceModel h100();
  /// The CPU backend: one "SM" per worker thread, one block each.
  static DeviceModel cpu(unsigned workers);
  /// Blocks of this shape one SM holds at once (at least 1).
  unsigned blocksPerSM(uint32_t threads, uint32_t registersPerThread,
                       uint64_t sharedBytes) const;
};

/// What the scheduler measured of one tenant.
struct TenantStats {
  std::string name;
  PriorityClass priorityClass = PriorityClass::Normal;
  uint32_t weight = 1;
  uint64_t dispatches = 0, items = 0;
  /// Device time charged (ms x share of the device), and the share of all
  /// tenants' charged time.
  double chargedMs = 0, share = 0;
  /// Time with work (ready or running), and with ready work none of which
  /// ran; starvation = starvedMs / backloggedMs (0 when never backlogged).
  double backloggedMs = 0, starvedMs = 0, starvation = 0;
  /// Launches run whole although pacing wanted them sliced, and slices
  /// preempted.
  uint64_t unpaced = 0, preempted = 0;
  /// Queueing delay (ready to first dispatch) of the last items, in ms.
  std::vector<double> queueDelayMs;
};

/// A dispatch policy.
class Scheduler {
public:
  virtual ~Scheduler();
  /// A short name for logs and metrics ("wooly", "fifo").
  virtual const char *name() const = 0;
  /// A tenant connected at `now` (before its first work): it gets its
  /// ordinal now, and a latency-critical tenant is present from now on, so
  /// lower classes are paced before its first request.
  virtual void announce(const TenantConfig *tenant, Nanos now) = 0;
  /// The tenant is gone (its last session ended and the server forgets
  /// it): the scheduler forgets it too, with its history, once its work
  /// is done - so that tenants coming and going cannot grow it without
  /// bound. Announcing it again keeps it.
  virtual void retire(const TenantConfig *tenant, Nanos now) = 0;
  /// `item` may run from `now` on.
  virtual void ready(WorkItem *item, Nanos now) = 0;
  /// The next dispatch; empty when nothing may start now (nothing queued,
  /// or the device holds as much as the policy gives it).
  virtual Dispatch next(Nanos now) = 0;
  /// Dispatch `d` ended. Returns true when its item is done, false when the
  /// item went back to the queue for the rest of its blocks (a preempted
  /// or partial slice).
  virtual bool finished(const Dispatch &d, const Outcome &o, Nanos now) = 0;
  /// Tickets of running dispatches that should stop at their next virtual
  /// block (their preemption flag raised), since the last call.
  virtual std::vector<uint64_t> takePreemptions() { return {}; }
  /// Items ready but not (fully) dispatched, and dispatches running.
  virtual size_t queued() const = 0;
  virtual size_t running() const = 0;
  /// Per-tenant measurements up to `now`, in tenant ordinal order.
  virtual std::vector<TenantStats> stats(Nanos now) const = 0;
  /// Every decision goes to `log` (none by default).
  void setDecisionLog(std::function<void(const DecisionRecord &)> log) {
    decisionLog = std::move(log);
  }

protected:
  std::function<void(const DecisionRecord &)> decisionLog;
};

/// Options of the `wooly` policy.
struct WoolyPolicyOptions {
  DeviceModel device;
  /// Dispatches running at once (the submission depth); latency-critical
  /// items may exceed it by `latencyCriticalExtra`.
  unsigned maxRunning = 4;
  unsigned latencyCriticalExtra = 2;
  /// SLA pacing (see the file header); off: priorities and fair share only.
  bool pacing = true;
  /// How long a physical block of a lower-class slice may run, while a
  /// latency-critical tenant is active (0: from its SLA, a tenth of the
  /// smallest SLA, at least 0.05 ms) and while it is idle.
  double activeSliceMs = 0;
  double idleSliceMs = 2;
  /// A latency-critical tenant is ACTIVE while it has ready or running
  /// work and this long after (what bridges the gaps between the kernels of
  /// one request), and PRESENT this long after its last work.
  double activityMs = 0.25;
  double presenceMs = 1000;
  /// An unsliceable lower-class launch waits at most this long for the
  /// latency-critical tenants to go idle.
  double maxHoldMs = 50;
  /// The cost model's duration of a virtual block before any measurement.
  double defaultBlockMs = 0.02;
  /// Queueing delays kept per tenant for percentiles.
  size_t delaySamples = 4096;
  /// Coalescing (see the file header): launches fused into one dispatch at
  /// most (0 or 1: off), what the cost model may expect of a launch that
  /// is fused ("small"), the fused grid's blocks at most, and the measured
  /// ratio of a kernel set's fused time to its launches' times alone above
  /// which that set is no longer fused (after `coalesceProbe` fused runs).
  unsigned coalesceMaxParts = 0;
  double coalesceMaxMs = 0.5;
  uint64_t coalesceMaxBlocks = 65535;
  double coalesceMaxRatio = 0.9;
  unsigned coalesceProbe = 4;
};

/// First come, first served across all tenants in the order items became
/// ready, each launch whole; at most `maxRunning` dispatches at once (0:
/// no limit).
std::unique_ptr<Scheduler> createFifoScheduler(unsigned maxRunning = 0);

/// The policy of the file header.
std::unique_ptr<Scheduler> createWoolyScheduler(WoolyPolicyOptions options);

/// The `p`-quantile (0..1) of `samples` (nearest rank; 0 when empty).
double percentile(std::vector<double> samples, double p);

} // namespace wooly::server

#endif // WOOLY_SERVER_SCHEDULER_H
