//===- Workload.cpp - Tenants on the sim GPU under a policy ---*- C++ -*-===//
//
// runScenario: each tenant is one stream of kernel chains (requests or
// training steps). A kernel is handed to the policy's Scheduler when it is
// ready (the request arrived, or the previous kernel of the chain ended
// plus the client's think time); what the scheduler dispatches is submitted
// to GpuSim at once; preemptions it asks for raise the launch's flag. The
// four policies:
//
//   fifo       one queue, one launch on the device at a time, in readiness
//              order (one context, one stream: the hardware's order)
//   mps        every launch submitted when ready, all concurrent; the
//              hardware dispatcher alone decides (MPS without priorities)
//   timeslice  like mps, but each tenant is its own context and the GPU
//              time-slices between contexts (GpuConfig::timesliceUs,
//              switchUs)
//   wooly      the server's policy (createWoolyScheduler)
//
//===----------------------------------------------------------------------===//

#include "Wooly/Sim/Sim.h"

#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <deque>
#include <map>
#include <queue>

using namespace wooly;
using namespace wooly::sim;
using server::Dispatch;
using server::WorkItem;

llvm::StringRef wooly::sim::policyName(Policy p) {
  switch (p) {
  case Policy::Fifo:
    return "fifo";
  case Policy::TimeSlice:
    return "timeslice";
  case Policy::Mps:
    return "mps";
  case Policy::Wooly:
    return "wooly";
  }
  return "?";
}

double wooly::sim::jainIndex(const std::vector<double> &x) {
  double sum = 0, squares = 0;
  for (double v : x) {
    sum += v;
    squares += v * v;
  }
  return squares > 0 ? sum * sum / (double(x.size()) * squares) : 1;
}

namespace {

Nanos toNanos(double us) { return Nanos(std::llround(us * 1000)); }
double toUs(Nanos n) { return double(n) / 1000; }

/// The driver's state of one tenant.
struct TenantRun {
  const TenantSpec *spec = nullptr;
  unsigned index = 0;
  /// Arrival times of requests not yet finished (the first is running).
  std::deque<Nanos> requests;
  /// The chain position of the running request, or -1 when none.
  int kernel = -1;
  WorkItem item;
  Nanos kernelReady = 0;
  bool kernelStarted = false;
  TenantResult result;
};

enum class TimerType { Arrival, KernelReady, Poll };
struct Timer {
  Nanos at;
  uint64_t seq;
  TimerType type;
  unsigned tenant;
  bool operator>(const Timer &o) const {
    return at != o.at ? at > o.at : seq > o.seq;
  }
};

} // namespace

RunResult wooly::sim::runScenario(const Scenario &sc, Policy policy,
                                  server::TraceWriter *trace) {
  GpuSim gpu(sc.gpu, policy == Policy::TimeSlice ? GpuSim::Mode::TimeSliced
                                                 : GpuSim::Mode::Concurrent);
  std::unique_ptr<server::Scheduler> sched;
  switch (policy) {
  case Policy::Fifo:
    sched = server::createFifoScheduler(1);
    break;
  case Policy::Mps:
  case Policy::TimeSlice:
    sched = server::createFifoScheduler(0);
    break;
  case Policy::Wooly: {
    server::WoolyPolicyOptions o = sc.wooly;
    o.device = sc.gpu.device;
    sched = server::createWoolyScheduler(o);
    break;
  }
  }
  RunResult out;
  server::DeviceModel model = sc.gpu.device;
  sched->setDecisionLog(
      [&](const server::DecisionRecord &r) { out.decisions.push_back(r); });

  std::vector<TenantRun> tenants(sc.tenants.size());
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers;
  uint64_t timerSeq = 0;
  auto addTimer = [&](Nanos at, TimerType type, unsigned t) {
    timers.push({at, ++timerSeq, type, t});
  };
  uint64_t nextItemId = 0;
  for (unsigned i = 0; i < tenants.size(); ++i) {
    TenantRun &t = tenants[i];
    t.spec = &sc.tenants[i];
    t.index = i;
    t.result.name = t.spec->config.name;
    if (trace)
      trace->nameTrack(
          i, t.spec->config.name + " (" +
                 server::className(t.spec->config.priorityClass).str() + ")");
    sched->announce(&t.spec->config, 0);
    if (t.spec->chain.empty())
      continue;
    addTimer(toNanos(t.spec->phaseUs), TimerType::Arrival, i);
  }

  // Makes kernel `t.kernel` of the running request ready at `now`.
  auto kernelReady = [&](TenantRun &t, Nanos now) {
    const KernelModel &k = t.spec->chain[unsigned(t.kernel)];
    WorkItem &item = t.item;
    item = WorkItem();
    item.kind = WorkItem::Kind::Launch;
    item.id = ++nextItemId;
    item.session = t.index + 1;
    item.tenant = &t.spec->config;
    item.kernelKey = llvm::xxh3_64bits(k.name);
    item.gridBlocks = std::max<uint64_t>(1, k.blocks);
    item.threadsPerBlock = k.threads;
    item.registersPerThread = k.registers;
    item.sharedBytesPerBlock = k.sharedBytes;
    item.sliceable = k.sliceable;
    t.kernelReady = now;
    t.kernelStarted = false;
    sched->ready(&item, now);
  };
  auto startRequest = [&](TenantRun &t, Nanos now) {
    t.kernel = 0;
    kernelReady(t, now);
  };

  std::map<uint64_t, uint64_t> launchOfTicket; // ticket -> sim launch
  std::map<uint64_t, Dispatch> dispatchOfLaunch;
  std::vector<Completion> done;
  Nanos end = toNanos(sc.durationUs);
  Nanos now = 0, pollAt = -1;
  while (true) {
    Nanos tNext = std::min<Nanos>(
        gpu.nextEvent(), timers.empty() ? Nanos(LLONG_MAX) : timers.top().at);
    if (tNext == LLONG_MAX || tNext > end)
      break;
    now = tNext;
    if (gpu.nextEvent() == now) {
      done.clear();
      gpu.step(done);
      for (const Completion &c : done) {
        Dispatch d = dispatchOfLaunch.at(c.launch);
        dispatchOfLaunch.erase(c.launch);
        launchOfTicket.erase(d.ticket);
        TenantRun &t = tenants[unsigned(d.item->session - 1)];
        const KernelModel &k = t.spec->chain[unsigned(t.kernel)];
        t.result.workUs +=
            double(c.blocksRun) * k.blockUs /
            model.blocksPerSM(k.threads, k.registers, k.sharedBytes);
        t.result.dispatches++;
        if (!t.kernelStarted) {
          t.kernelStarted = true;
          t.result.startDelayUs.push_back(toUs(c.firstStart - t.kernelReady));
        }
        if (trace) {
          std::vector<std::pair<std::string, std::string>> args = {
              {"blocks_run", std::to_string(c.blocksRun)},
              {"grid", std::to_string(k.blocks)}};
          if (d.physicalBlocks)
            args.push_back(
                {"physical_blocks", std::to_string(d.physicalBlocks)});
          if (d.sliced())
            args.push_back({"slice", std::to_string(d.sliceBegin) + "-" +
                                         std::to_string(d.sliceEnd)});
          trace->span(t.index, k.name, toUs(c.firstStart),
                      toUs(c.end - c.firstStart), args);
        }
        server::Outcome o;
        o.deviceMs = double(c.end - c.firstStart) / 1e6;
        o.blocksRun = c.blocksRun;
        if (!sched->finished(d, o, now))
          continue; // the rest of the launch is queued again
        // The next kernel of the chain, or the end of the request.
        if (unsigned(t.kernel) + 1 < t.spec->chain.size()) {
          t.kernel++;
          addTimer(now + toNanos(t.spec->thinkUs), TimerType::KernelReady,
                   t.index);
          continue;
        }
        t.result.requests++;
        t.result.latencyUs.push_back(toUs(now - t.requests.front()));
        t.requests.pop_front();
        t.kernel = -1;
        if (t.spec->periodUs <= 0)
          addTimer(now + toNanos(t.spec->thinkUs), TimerType::Arrival, t.index);
        else if (!t.requests.empty())
          addTimer(now + toNanos(t.spec->thinkUs), TimerType::KernelReady,
                   t.index);
      }
    }
    while (!timers.empty() && timers.top().at == now) {
      Timer tm = timers.top();
      timers.pop();
      if (tm.type == TimerType::Poll)
        continue;
      TenantRun &t = tenants[tm.tenant];
      if (tm.type == TimerType::Arrival) {
        t.requests.push_back(now);
        if (t.spec->periodUs > 0)
          addTimer(now + toNanos(t.spec->periodUs), TimerType::Arrival,
                   tm.tenant);
        if (t.kernel < 0 && t.requests.size() == 1)
          startRequest(t, now);
      } else if (t.kernel < 0) {
        startRequest(t, now); // a queued request
      } else {
        kernelReady(t, now);
      }
    }
    for (uint64_t ticket : sched->takePreemptions()) {
      auto it = launchOfTicket.find(ticket);
      if (it != launchOfTicket.end()) {
        gpu.preempt(it->second);
        if (trace) {
          const Dispatch &d = dispatchOfLaunch.at(it->second);
          trace->instant(unsigned(d.item->session - 1), "preempt", toUs(now));
        }
      }
    }
    while (Dispatch d = sched->next(now)) {
      TenantRun &t = tenants[unsigned(d.item->session - 1)];
      SimLaunch l;
      l.kernel = &t.spec->chain[unsigned(t.kernel)];
      l.physicalBlocks = d.physicalBlocks;
      l.sliceBegin = d.sliceBegin;
      l.sliceEnd = d.sliceEnd;
      l.context = t.index;
      uint64_t id = gpu.submit(l, now);
      launchOfTicket[d.ticket] = id;
      dispatchOfLaunch[id] = d;
    }
    // A policy that holds work back is asked again 50 us later.
    if (sched->queued() && pollAt <= now) {
      pollAt = now + 50'000;
      addTimer(pollAt, TimerType::Poll, 0);
    }
  }

  out.busy = gpu.busyFraction(end);
  out.schedulerStats = sched->stats(end);
  for (TenantRun &t : tenants)
    out.tenants.push_back(std::move(t.result));
  return out;
}
