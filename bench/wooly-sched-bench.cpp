//===- wooly-sched-bench.cpp - Scheduling policies on the sim GPU ---------===//
//
// Four tenants share a simulated H100 (lib/Sim) under four policies - fifo,
// timeslice, mps and wooly - and a fifth measurement times the wooly
// scheduler's own decisions with 64 tenants. See bench/README.md for the
// mix and what each column means. Deterministic: the same options print the
// same table.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Server/Scheduler.h"
#include "Wooly/Server/Trace.h"
#include "Wooly/Sim/Sim.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace wooly;
using namespace wooly::sim;
using server::PriorityClass;

static llvm::cl::opt<double>
    durationMs("duration-ms", llvm::cl::desc("Simulated time per run (ms)"),
               llvm::cl::init(4000));
static llvm::cl::opt<std::string>
    gpuName("gpu", llvm::cl::desc("The GPU: h100 or sms=N (default h100)"),
            llvm::cl::init("h100"));
static llvm::cl::opt<std::string>
    traceFile("trace",
              llvm::cl::desc("Write the wooly policy's schedule as a Chrome "
                             "trace (Perfetto) to this file"),
              llvm::cl::value_desc("file"));
static llvm::cl::opt<unsigned>
    decisions("decisions",
              llvm::cl::desc("Decisions timed in the 64-tenant microbenchmark"),
              llvm::cl::init(200000));

namespace {

/// The mix's kernels, with the block's resources before its duration.
KernelModel kernel(std::string name, uint64_t blocks, uint32_t threads,
                   uint32_t registers, uint64_t shared, double blockUs) {
  return KernelModel::make(std::move(name), blocks, blockUs, threads, registers,
                           shared);
}

TenantSpec tenant(std::string name, PriorityClass c, uint32_t weight,
                  double slaMs) {
  TenantSpec t;
  t.config.name = std::move(name);
  t.config.priorityClass = c;
  t.config.weight = weight;
  t.config.slaMs = slaMs;
  return t;
}

/// The documented four-tenant mix (bench/README.md).
std::vector<TenantSpec> mix() {
  std::vector<TenantSpec> ts;
  // Latency-critical inference (SLA 5 ms): a request every 40 ms, five
  // kernels of about 3 ms together when alone.
  TenantSpec lc = tenant("lc-inference", PriorityClass::LatencyCritical, 1, 5);
  lc.chain = {kernel("lc.attention", 2112, 256, 32, 16 << 10, 250),
              kernel("lc.mlp-up", 4224, 256, 32, 0, 200),
              kernel("lc.mlp-down", 4224, 256, 32, 0, 200),
              kernel("lc.logits", 1056, 256, 64, 0, 150),
              kernel("lc.sample", 132, 128, 32, 0, 40)};
  lc.periodUs = 40000;
  lc.phaseUs = 1000;
  ts.push_back(lc);
  // Normal inference: a request every 6 ms, three small kernels.
  TenantSpec ni = tenant("normal-inference", PriorityClass::Normal, 1, 0);
  ni.chain = {kernel("ni.encoder", 264, 256, 64, 32 << 10, 50),
              kernel("ni.decoder", 264, 256, 64, 32 << 10, 50),
              kernel("ni.head", 132, 128, 32, 0, 30)};
  ni.periodUs = 6000;
  ni.phaseUs = 1700;
  ts.push_back(ni);
  // Best-effort training: long GEMM-like kernels back to back (32 waves of
  // 80-100 us blocks, about 3 ms each), weight 2.
  TenantSpec tr = tenant("be-training", PriorityClass::BestEffort, 2, 0);
  tr.chain = {kernel("train.gemm-fwd", 8448, 256, 128, 96 << 10, 80),
              kernel("train.gemm-bwd", 8448, 256, 128, 96 << 10, 100)};
  ts.push_back(tr);
  // Best-effort batch work: medium kernels back to back, weight 1.
  TenantSpec bb = tenant("be-batch", PriorityClass::BestEffort, 1, 0);
  bb.chain = {kernel("batch.stencil", 4224, 128, 64, 8 << 10, 40)};
  ts.push_back(bb);
  return ts;
}

struct Summary {
  double p50 = 0, p99 = 0, p50Inflation = 0, p99Inflation = 0;
  double beKept = 0, busy = 0, jain = 0, slaMet = 0;
  uint64_t preempted = 0, unpaced = 0;
};

double beWork(const RunResult &r, const std::vector<TenantSpec> &ts) {
  double w = 0;
  for (size_t i = 0; i < ts.size(); ++i)
    if (ts[i].config.priorityClass == PriorityClass::BestEffort)
      w += r.tenants[i].workUs;
  return w;
}

} // namespace

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "wooly-sched-bench: four scheduling policies on a simulated GPU\n\n"
      "Runs the four-tenant mix of bench/README.md (latency-critical\n"
      "inference with an SLA, normal inference, best-effort training and\n"
      "best-effort batch work) on the sim backend under fifo, timeslice,\n"
      "mps and wooly, prints a table per policy and a summary, then times\n"
      "the wooly scheduler's decisions with 64 tenants.\n");
  auto gpu = GpuConfig::parse(gpuName);
  if (!gpu) {
    llvm::errs() << "wooly-sched-bench: " << llvm::toString(gpu.takeError())
                 << "\n";
    return 2;
  }
  llvm::raw_ostream &os = llvm::outs();
  Scenario base;
  base.gpu = *gpu;
  base.durationUs = durationMs * 1000;
  std::vector<TenantSpec> all = mix();

  // Baselines: the latency-critical tenant alone; the best-effort tenants
  // alone (both on mps, i.e. the device to themselves).
  Scenario lcAlone = base;
  lcAlone.tenants = {all[0]};
  RunResult alone = runScenario(lcAlone, Policy::Mps);
  double aloneP50 = server::percentile(alone.tenants[0].latencyUs, 0.5);
  double aloneP99 = server::percentile(alone.tenants[0].latencyUs, 0.99);
  Scenario beAlone = base;
  for (const TenantSpec &t : all)
    if (t.config.priorityClass == PriorityClass::BestEffort)
      beAlone.tenants.push_back(t);
  RunResult beOnly = runScenario(beAlone, Policy::Mps);
  double beAloneWork = 0;
  for (const TenantResult &t : beOnly.tenants)
    beAloneWork += t.workUs;

  os << llvm::formatv("GPU {0} ({1} SMs), {2} ms simulated per run\n",
                      base.gpu.name, base.gpu.device.sms,
                      durationMs.getValue());
  os << llvm::formatv("alone: {0} p50 {1:f3} ms, p99 {2:f3} ms; best-effort "
                      "alone: busy {3:f3}\n\n",
                      all[0].config.name, aloneP50 / 1000, aloneP99 / 1000,
                      beOnly.busy);

  Scenario full = base;
  full.tenants = all;
  std::vector<std::pair<Policy, Summary>> summaries;
  for (Policy p :
       {Policy::Fifo, Policy::TimeSlice, Policy::Mps, Policy::Wooly}) {
    server::TraceWriter trace;
    bool tracing = p == Policy::Wooly && !traceFile.empty();
    RunResult r = runScenario(full, p, tracing ? &trace : nullptr);
    if (tracing) {
      if (llvm::Error e = trace.write(traceFile)) {
        llvm::errs() << "wooly-sched-bench: " << llvm::toString(std::move(e))
                     << "\n";
        return 1;
      }
    }
    os << "policy " << policyName(p) << "\n";
    os << llvm::formatv("  {0,-18} {1,-17} {2,6} {3,9} {4,9} {5,9} {6,9} "
                        "{7,10} {8,7} {9,7}\n",
                        "tenant", "class", "weight", "requests", "p50 ms",
                        "p99 ms", "start p99", "work ms", "share", "starved");
    double totalWork = 0;
    for (const TenantResult &t : r.tenants)
      totalWork += t.workUs;
    std::vector<double> beNormalised;
    for (size_t i = 0; i < all.size(); ++i) {
      const TenantResult &t = r.tenants[i];
      const server::TenantConfig &c = all[i].config;
      bool closedLoop = all[i].periodUs <= 0;
      os << llvm::formatv(
          "  {0,-18} {1,-17} {2,6} {3,9} {4,9} {5,9} {6,9} {7,10:f1} "
          "{8,7:f3} {9,7:f3}\n",
          t.name, server::className(c.priorityClass), c.weight, t.requests,
          closedLoop
              ? std::string("-")
              : llvm::formatv("{0:f3}",
                              server::percentile(t.latencyUs, 0.5) / 1000)
                    .str(),
          closedLoop
              ? std::string("-")
              : llvm::formatv("{0:f3}",
                              server::percentile(t.latencyUs, 0.99) / 1000)
                    .str(),
          llvm::formatv("{0:f3}",
                        server::percentile(t.startDelayUs, 0.99) / 1000)
              .str(),
          t.workUs / 1000, totalWork > 0 ? t.workUs / totalWork : 0,
          r.schedulerStats.size() > i ? r.schedulerStats[i].starvation : 0);
      if (c.priorityClass == PriorityClass::BestEffort)
        beNormalised.push_back(t.workUs / c.weight);
    }
    Summary s;
    s.p50 = server::percentile(r.tenants[0].latencyUs, 0.5);
    s.p99 = server::percentile(r.tenants[0].latencyUs, 0.99);
    s.p50Inflation = s.p50 / aloneP50;
    s.p99Inflation = s.p99 / aloneP99;
    s.beKept = beAloneWork > 0 ? beWork(r, all) / beAloneWork : 0;
    s.busy = r.busy;
    s.jain = jainIndex(beNormalised);
    size_t met = 0;
    for (double l : r.tenants[0].latencyUs)
      met += l <= all[0].config.slaMs * 1000;
    s.slaMet = r.tenants[0].latencyUs.empty()
                   ? 0
                   : double(met) / double(r.tenants[0].latencyUs.size());
    for (const server::TenantStats &st : r.schedulerStats) {
      s.preempted += st.preempted;
      s.unpaced += st.unpaced;
    }
    os << llvm::formatv("  latency-critical p50 x{0:f2}, p99 x{1:f2} (SLA "
                        "met {2:f1}%), best-effort kept {3:f3}, busy {4:f3}, "
                        "Jain(best-effort, by weight) {5:f3}",
                        s.p50Inflation, s.p99Inflation, s.slaMet * 100,
                        s.beKept, s.busy, s.jain);
    if (p == Policy::Wooly)
      os << llvm::formatv(", {0} preemptions, {1} decisions", s.preempted,
                          r.decisions.size());
    os << "\n\n";
    summaries.push_back({p, s});
  }

  os << llvm::formatv("{0,-10} {1,9} {2,9} {3,8} {4,8} {5,6}\n", "policy",
                      "p50 infl", "p99 infl", "be_kept", "busy", "jain");
  for (auto &[p, s] : summaries)
    os << llvm::formatv("{0,-10} {1,9:f2} {2,9:f2} {3,8:f3} {4,8:f3} "
                        "{5,6:f3}\n",
                        policyName(p), s.p50Inflation, s.p99Inflation, s.beKept,
                        s.busy, s.jain);

  // The sim against the published baselines, which co-locate ONE
  // latency-critical inference job with ONE best-effort training job.
  {
    Scenario pair = base;
    pair.tenants = {all[0], all[2]};
    os << "\ncalibration, lc-inference + be-training only (published "
          "co-located inference p99: mps x2.2-11.8, timeslice x2.1-2.7):\n";
    for (Policy p : {Policy::TimeSlice, Policy::Mps, Policy::Wooly}) {
      RunResult r = runScenario(pair, p);
      os << llvm::formatv(
          "  {0,-10} p50 x{1:f2}, p99 x{2:f2}\n", policyName(p),
          server::percentile(r.tenants[0].latencyUs, 0.5) / aloneP50,
          server::percentile(r.tenants[0].latencyUs, 0.99) / aloneP99);
    }
    os << "\n";
  }

  // The scheduler's own cost: 64 tenants of all classes, always
  // backlogged; one decision = ready + next + finished.
  {
    std::vector<server::TenantConfig> cfgs(64);
    for (unsigned i = 0; i < cfgs.size(); ++i) {
      cfgs[i].name = "t" + std::to_string(i);
      cfgs[i].priorityClass = PriorityClass(i % 3);
      cfgs[i].weight = 1 + i % 4;
      cfgs[i].slaMs = 5;
    }
    server::WoolyPolicyOptions o;
    o.device = base.gpu.device;
    o.maxRunning = 8;
    auto sched = server::createWoolyScheduler(o);
    std::vector<server::WorkItem> items(cfgs.size() * 2);
    for (size_t i = 0; i < items.size(); ++i) {
      items[i].tenant = &cfgs[i % cfgs.size()];
      items[i].kernelKey = i % 7;
      items[i].gridBlocks = 1024;
      items[i].threadsPerBlock = 256;
      items[i].sliceable = true;
    }
    server::Nanos now = 0;
    uint64_t id = 0;
    for (auto &it : items) {
      it.id = ++id;
      sched->ready(&it, now);
    }
    std::vector<double> ns;
    ns.reserve(decisions);
    std::vector<server::Dispatch> running;
    for (unsigned i = 0; i < decisions; ++i) {
      now += 10'000;
      auto t0 = std::chrono::steady_clock::now();
      server::Dispatch d = sched->next(now);
      if (!d && !running.empty()) {
        server::Dispatch f = running.front();
        running.erase(running.begin());
        server::Outcome out{0.05, f.sliced() ? f.sliceEnd - f.sliceBegin
                                             : f.item->gridBlocks};
        if (sched->finished(f, out, now)) {
          f.item->id = ++id;
          sched->ready(f.item, now);
        }
        d = sched->next(now);
      }
      (void)sched->takePreemptions();
      auto t1 = std::chrono::steady_clock::now();
      if (d)
        running.push_back(d);
      ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    }
    os << llvm::formatv("scheduler decision, 64 tenants: p50 {0:f0} ns, p99 "
                        "{1:f0} ns, max {2:f0} ns ({3} decisions; target p99 "
                        "<= 1000 ns)\n",
                        server::percentile(ns, 0.5),
                        server::percentile(ns, 0.99),
                        server::percentile(ns, 1.0), ns.size());
  }

  const Summary &w = summaries.back().second;
  os << llvm::formatv("wooly: hp_p99_inflation={0:f3} be_kept={1:f3} "
                      "busy={2:f3}\n",
                      w.p99Inflation, w.beKept, w.busy);
  return 0;
}
