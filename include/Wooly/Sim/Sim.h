//===- Sim.h - The sim backend: a GPU's SMs as discrete events --*- C++ -*-===//
//
// A deterministic discrete-event model of a GPU for testing and
// benchmarking scheduling policies at GPU scale where no GPU exists (CI). It
// executes no code: a kernel is its grid, its block's resources (threads,
// registers, shared memory) and a duration per block.
//
// The model (GpuSim):
//  - SMs with per-SM limits on resident threads, blocks, registers and
//    shared memory (an H100: 132 SMs of 2048 threads, 32 blocks, 64 Ki
//    registers and 228 KiB).
//  - A launch becomes visible to the block dispatcher `launchUs` after it
//    is submitted (the launch overhead). The dispatcher is the hardware's:
//    launches in the order they became visible, a launch's blocks only after
//    every block of the launches before it was placed (so a long launch
//    delays the ones behind it, as on real GPUs without priorities); each
//    block goes to the SM with the most free threads that can hold it
//    (ties: the lowest SM).
//  - A block of virtual block `v` of kernel `k` runs for `blockUs` times a
//    deterministic factor in [1 - jitter, 1 + jitter] hashed from (k, v);
//    co-resident blocks do not slow each other (no memory-bandwidth model).
//  - Constrained and sliced launches run as wooly-slice's code does: each
//    physical block takes virtual block indices from the launch's counter
//    until the slice is done or its preemption flag is raised
//    (`preempt`), paying `loopUs` per virtual block.
//  - TimeSliced mode (the GPU's time-slicing between contexts): one
//    context runs at a time for `timesliceUs`; at a switch its resident
//    blocks are saved (their remaining time kept) and the device is idle for
//    `switchUs`; contexts are taken round robin among those with work.
//
// The workload driver (runScenario) runs tenants (open-loop request
// streams or closed loops of kernel chains) under a policy: `fifo`, `mps`,
// `timeslice` or `wooly` (the server's own Scheduler, with preemption), and
// measures latencies, throughput, busy SMs, the scheduler's decisions and,
// on request, a Chrome trace (Trace.h).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_SIM_SIM_H
#define WOOLY_SIM_SIM_H

#include "Wooly/Server/Scheduler.h"
#include "Wooly/Server/Trace.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace wooly::sim {

using server::Nanos;

/// The simulated GPU.
struct GpuConfig {
  std::string name = "h100";
  /// The SMs and their per-SM limits (the scheduler's model of the same
  /// GPU, so that policy and device agree).
  server::DeviceModel device = server::DeviceModel::h100();
  /// Submission to first block dispatchable.
  double launchUs = 4;
  /// Per virtual block of a constrained/sliced launch (counter, barriers).
  double loopUs = 0.3;
  /// TimeSliced mode: the quantum and the cost of a context switch.
  double timesliceUs = 2000;
  double switchUs = 50;

  /// An H100 (132 SMs); `smaller(n)` the same SMs, n of them.
  static GpuConfig h100();
  static GpuConfig smaller(unsigned sms);
  /// Parses "h100" or "sms=N" (an H100's SMs, N of them).
  static llvm::Expected<GpuConfig> parse(llvm::StringRef text);
};

/// A kernel: its grid and what one block uses and takes.
struct KernelModel {
  std::string name;
  uint64_t blocks = 1;
  uint32_t threads = 256;
  uint32_t registers = 32;
  uint64_t sharedBytes = 0;
  double blockUs = 10;
  double jitter = 0.1;
  /// The passes can slice it.
  bool sliceable = true;

  /// A kernel of `blocks` blocks of `threads` threads using `registers`
  /// each and `sharedBytes` per block, `blockUs` per block.
  static KernelModel make(std::string name, uint64_t blocks, double blockUs,
                          uint32_t threads = 256, uint32_t registers = 32,
                          uint64_t sharedBytes = 0) {
    KernelModel k;
    k.name = std::move(name);
    k.blocks = blocks;
    k.blockUs = blockUs;
    k.threads = threads;
    k.registers = registers;
    k.sharedBytes = sharedBytes;
    return k;
  }
};

/// One launch as submitted.
struct SimLaunch {
  const KernelModel *kernel = nullptr;
  /// As in server::Dispatch: 0 / sliceEnd 0 for the launch as written.
  uint32_t physicalBlocks = 0;
  uint64_t sliceBegin = 0, sliceEnd = 0;
  /// TimeSliced mode: the launch's context.
  unsigned context = 0;
};

/// A launch that ended.
struct Completion {
  uint64_t launch = 0;
  uint64_t blocksRun = 0;
  /// Its first block started, and its last block ended.
  Nanos firstStart = 0, end = 0;
};

class GpuSim {
public:
  enum class Mode { Concurrent, TimeSliced };
  GpuSim(GpuConfig config, Mode mode = Mode::Concurrent);
  ~GpuSim();

  /// Submits a launch at `now` (not before the last event processed);
  /// returns its id (from 1).
  uint64_t submit(const SimLaunch &launch, Nanos now);
  /// Raises the preemption flag of a launch (a no-op for a finished one or
  /// one that is not sliced).
  void preempt(uint64_t launch);
  /// When the next event happens (INT64_MAX: none).
  Nanos nextEvent() const;
  /// Processes every event at `nextEvent()`; launches that ended are
  /// appended to `done`. Returns the time processed.
  Nanos step(std::vector<Completion> &done);
  /// SM-time with at least one block resident, over SM-time, from 0 to
  /// `until`.
  double busyFraction(Nanos until) const;

  class Impl;

private:
  std::unique_ptr<Impl> impl;
};

/// A tenant of a scenario.
struct TenantSpec {
  server::TenantConfig config;
  /// The kernels of one request (an inference) or step (training), run in
  /// order on one stream.
  std::vector<KernelModel> chain;
  /// > 0: open loop, a request arrives every `periodUs` from `phaseUs` on
  /// (requests queue behind each other); 0: closed loop, the next step as
  /// soon as the last ends.
  double periodUs = 0, phaseUs = 0;
  /// The client's own time between two kernels of a request.
  double thinkUs = 5;
};

struct Scenario {
  GpuConfig gpu;
  std::vector<TenantSpec> tenants;
  double durationUs = 1e6;
  /// The `wooly` policy's options (its device model is set from `gpu`).
  server::WoolyPolicyOptions wooly;
};

enum class Policy { Fifo, TimeSlice, Mps, Wooly };
llvm::StringRef policyName(Policy p);

struct TenantResult {
  std::string name;
  /// Requests (or steps) completed, and their latencies (arrival to the
  /// end of the last kernel), in us.
  uint64_t requests = 0;
  std::vector<double> latencyUs;
  /// Per kernel: ready to its first block running, in us.
  std::vector<double> startDelayUs;
  /// Work done in SM time (us): each virtual block run counts its mean
  /// duration divided by the blocks of its kind one SM holds; and
  /// dispatches.
  double workUs = 0;
  uint64_t dispatches = 0;
};

struct RunResult {
  std::vector<TenantResult> tenants;
  /// Mean fraction of SMs busy over the run.
  double busy = 0;
  std::vector<server::DecisionRecord> decisions;
  std::vector<server::TenantStats> schedulerStats;
};

/// Runs `scenario` under `policy`; with `trace`, writes a Chrome trace of
/// every dispatch (one track per tenant) there.
RunResult runScenario(const Scenario &scenario, Policy policy,
                      server::TraceWriter *trace = nullptr);

/// Jain's fairness index of `x` (1: all equal).
double jainIndex(const std::vector<double> &x);

} // namespace wooly::sim

#endif // WOOLY_SIM_SIM_H
