//===- Scheduler.cpp - Dispatch policies of wooly-serve ---------*- C++ -*-===//
//
// The `fifo` and `wooly` policies (see include/Wooly/Server/Scheduler.h for
// what they guarantee). Both share `PolicyBase`: the tenants in the order
// they were first seen, their queues, and the accounting behind
// TenantStats. Nothing here reads a clock or iterates a hash table, so the
// decisions depend only on the calls.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Server/Scheduler.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <deque>
#include <unordered_map>

using namespace wooly::server;

Scheduler::~Scheduler() = default;

uint64_t
wooly::server::kernelSetKey(const std::vector<const WorkItem *> &items) {
  std::vector<uint64_t> keys;
  for (const WorkItem *i : items)
    keys.push_back(i->kernelKey);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return llvm::xxh3_64bits(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(keys.data()),
                              keys.size() * sizeof(uint64_t)));
}

DeviceModel DeviceModel::h100() { return DeviceModel(); }

DeviceModel DeviceModel::cpu(unsigned workers) {
  DeviceModel d;
  d.sms = std::max(1u, workers);
  d.maxBlocksPerSM = 1;
  d.maxThreadsPerSM = 1024;
  d.registersPerSM = ~0u;
  d.sharedPerSM = ~0ull;
  return d;
}

unsigned DeviceModel::blocksPerSM(uint32_t threads, uint32_t registers,
                                  uint64_t shared) const {
  uint64_t n = maxBlocksPerSM;
  threads = std::max(1u, threads);
  n = std::min<uint64_t>(n, maxThreadsPerSM / threads);
  if (registers)
    n = std::min<uint64_t>(n, registersPerSM / (uint64_t(registers) * threads));
  if (shared)
    n = std::min<uint64_t>(n, sharedPerSM / shared);
  return unsigned(std::max<uint64_t>(1, n));
}

double wooly::server::percentile(std::vector<double> samples, double p) {
  if (samples.empty())
    return 0;
  std::sort(samples.begin(), samples.end());
  double rank = std::ceil(std::clamp(p, 0.0, 1.0) * double(samples.size()));
  size_t i = rank < 1 ? 0 : size_t(rank) - 1;
  return samples[std::min(i, samples.size() - 1)];
}

namespace {

constexpr double kNanosPerMs = 1e6;

/// One tenant as a policy sees it.
struct Tenant {
  /// A copy: the caller's TenantConfig may go away with the tenant's last
  /// session while its history stays here.
  TenantConfig config;
  unsigned ordinal = 0;
  /// Ready items in the order they became ready (a partly run slice goes
  /// back to the front).
  std::deque<WorkItem *> queue;
  unsigned running = 0;
  /// Start-time fair queuing: charged ms / weight.
  double vtime = 0;
  double chargedMs = 0;
  uint64_t dispatches = 0, items = 0, unpaced = 0, preempted = 0;
  // Starvation accounting (see the header): the state since `since`.
  Nanos since = 0;
  double backloggedNs = 0, starvedNs = 0;
  // Queueing delays (ms), a ring of the last ones.
  std::vector<double> delays;
  size_t nextDelay = 0;
  // Pacing (latency-critical tenants): when work last ended, and the most
  // SMs one of its launches needed; (lower classes) since when the head item
  // has been held back.
  Nanos lastActivity = INT64_MIN / 2;
  unsigned lastNeedSMs = 0;
  Nanos holdSince = -1;
  /// Forgotten once its work is done (Scheduler::retire).
  bool retired = false;

  PriorityClass priorityClass() const { return config.priorityClass; }
  uint32_t weight() const { return std::max(1u, config.weight); }
  bool backlogged() const { return !queue.empty() || running; }
};

/// A dispatch on the device.
struct Running {
  uint64_t ticket = 0;
  Tenant *tenant = nullptr;
  /// The tenants of the launches fused with the item (Dispatch::fused).
  std::vector<Tenant *> parts;
  unsigned needSMs = 0;
  bool preemptible = false, preemptAsked = false;
};

class PolicyBase : public Scheduler {
public:
  explicit PolicyBase(size_t delaySamples) : delaySamples(delaySamples) {}

  size_t queued() const override { return numQueued; }
  size_t running() const override { return runningList.size(); }

  std::vector<TenantStats> stats(Nanos now) const override {
    std::vector<TenantStats> out;
    double total = 0;
    for (const auto &t : tenants)
      total += t->chargedMs;
    for (const auto &tp : tenants) {
      const Tenant &t = *tp;
      TenantStats s;
      s.name = t.config.name;
      s.priorityClass = t.priorityClass();
      s.weight = t.weight();
      s.dispatches = t.dispatches;
      s.items = t.items;
      s.chargedMs = t.chargedMs;
      s.share = total > 0 ? t.chargedMs / total : 0;
      double backlogged = t.backloggedNs, starved = t.starvedNs;
      if (t.backlogged())
        backlogged += double(now - t.since);
      if (!t.queue.empty() && !t.running)
        starved += double(now - t.since);
      s.backloggedMs = backlogged / kNanosPerMs;
      s.starvedMs = starved / kNanosPerMs;
      s.starvation = backlogged > 0 ? starved / backlogged : 0;
      s.unpaced = t.unpaced;
      s.preempted = t.preempted;
      s.queueDelayMs = t.delays;
      out.push_back(std::move(s));
    }
    return out;
  }

  void announce(const TenantConfig *config, Nanos now) override {
    Tenant &t = tenantOf(config);
    t.retired = false;
    account(t, now);
    if (t.priorityClass() == PriorityClass::LatencyCritical)
      t.lastActivity = std::max(t.lastActivity, now);
  }

  void retire(const TenantConfig *config, Nanos now) override {
    auto it = byName.find(config->name);
    if (it == byName.end())
      return;
    Tenant &t = *it->second;
    account(t, now);
    t.retired = true;
    forgetIfDone(t);
  }

protected:
  /// The tenant of running dispatch `d` (not looked up through the item:
  /// the caller's TenantConfig may be gone by now).
  Tenant &runningTenant(const Dispatch &d) {
    auto it = llvm::find_if(
        runningList, [&](const Running &r) { return r.ticket == d.ticket; });
    assert(it != runningList.end() && "finished() of an unknown dispatch");
    return *it->tenant;
  }

  /// Forgets a retired tenant that has no work left.
  void forgetIfDone(Tenant &t) {
    if (!t.retired || t.backlogged())
      return;
    onForget(t);
    byName.erase(t.config.name);
    auto it = std::find_if(tenants.begin(), tenants.end(),
                           [&](const auto &p) { return p.get() == &t; });
    tenants.erase(it);
  }
  virtual void onForget(Tenant &) {}

  Tenant &tenantOf(const WorkItem *item) { return tenantOf(item->tenant); }
  /// Tenants are known by name: a tenant that reconnects keeps its
  /// virtual time and history.
  Tenant &tenantOf(const TenantConfig *config) {
    auto [it, inserted] = byName.try_emplace(config->name, nullptr);
    if (inserted) {
      tenants.push_back(std::make_unique<Tenant>());
      it->second = tenants.back().get();
      it->second->config = *config;
      it->second->ordinal = nextOrdinal++;
      onNewTenant(*it->second);
    }
    return *it->second;
  }
  virtual void onNewTenant(Tenant &) {}

  /// Closes the accounting period of `t` before its state changes.
  static void account(Tenant &t, Nanos now) {
    double span = double(now - t.since);
    if (span > 0) {
      if (t.backlogged())
        t.backloggedNs += span;
      if (!t.queue.empty() && !t.running)
        t.starvedNs += span;
    }
    t.since = now;
  }

  void enqueue(Tenant &t, WorkItem *item, Nanos now) {
    account(t, now);
    item->readyAt = now;
    item->blocksDone = 0;
    item->dispatchedOnce = false;
    t.queue.push_back(item);
    numQueued++;
  }

  /// Takes the head item of `t` off its queue for a dispatch.
  WorkItem *takeHead(Tenant &t, Nanos now) {
    account(t, now);
    WorkItem *item = t.queue.front();
    t.queue.pop_front();
    numQueued--;
    t.running++;
    t.dispatches++;
    t.holdSince = -1;
    if (!item->dispatchedOnce) {
      item->dispatchedOnce = true;
      double ms = double(now - item->readyAt) / kNanosPerMs;
      if (t.delays.size() < delaySamples)
        t.delays.push_back(ms);
      else if (delaySamples) {
        t.delays[t.nextDelay] = ms;
        t.nextDelay = (t.nextDelay + 1) % delaySamples;
      }
    }
    return item;
  }

  /// Takes the head item of `t` for dispatch `d` and records it.
  Dispatch start(Tenant &t, Dispatch d, Nanos now, unsigned needSMs,
                 bool preemptible) {
    d.item = takeHead(t, now);
    d.ticket = ++lastTicket;
    runningList.push_back({d.ticket, &t, {}, needSMs, preemptible, false});
    return d;
  }

  /// Fuses the head item of `u` into the running dispatch `d`.
  void addPart(Tenant &u, Dispatch &d, Nanos now, unsigned needSMs) {
    d.fused.push_back(takeHead(u, now));
    Running &r = runningList.back();
    assert(r.ticket == d.ticket && "parts join the newest dispatch");
    r.parts.push_back(&u);
    r.needSMs += needSMs;
  }

  /// Logs the decision `d` (when it is one) and returns it.
  Dispatch decided(Dispatch d, Nanos now) {
    if (d && decisionLog) {
      Tenant &t = runningTenant(d);
      decisionLog({now, d.item->id, d.ticket, t.ordinal, d.physicalBlocks,
                   d.sliceBegin, d.sliceEnd, unsigned(d.fused.size())});
    }
    return d;
  }

  /// Ends dispatch `d`; returns whether its item is done (else it went back
  /// to the front of its tenant's queue).
  bool end(const Dispatch &d, const Outcome &o, Nanos now, double charge) {
    Tenant &t = runningTenant(d);
    std::vector<Tenant *> parts =
        llvm::find_if(runningList, [&](const Running &r) {
          return r.ticket == d.ticket;
        })->parts;
    account(t, now);
    llvm::erase_if(runningList,
                   [&](const Running &r) { return r.ticket == d.ticket; });
    if (!parts.empty()) {
      // A fused dispatch: every launch is done; each tenant pays its
      // launches' share of the blocks.
      uint64_t total = d.item->gridBlocks;
      for (const WorkItem *w : d.fused)
        total += w->gridBlocks;
      auto pay = [&](Tenant &u, const WorkItem &w) {
        account(u, now);
        u.running--;
        double c = charge * double(w.gridBlocks) /
                   double(std::max<uint64_t>(total, 1));
        u.chargedMs += c;
        u.vtime += c / u.weight();
        u.items++;
      };
      pay(t, *d.item);
      for (size_t i = 0; i < parts.size(); ++i)
        pay(*parts[i], *d.fused[i]);
      forgetIfDone(t);
      for (Tenant *u : parts) // each a tenant of its own, not t
        forgetIfDone(*u);
      return true;
    }
    t.running--;
    t.chargedMs += charge;
    t.vtime += charge / t.weight();
    WorkItem *item = d.item;
    bool done = true;
    if (d.sliced()) {
      item->blocksDone = std::min(d.sliceEnd, d.sliceBegin + o.blocksRun);
      done = o.failed || item->blocksDone >= item->gridBlocks;
      if (!done && item->blocksDone < d.sliceEnd)
        t.preempted++;
    }
    if (done) {
      t.items++;
      forgetIfDone(t);
    } else {
      t.queue.push_front(item);
      numQueued++;
    }
    return done;
  }

  std::vector<std::unique_ptr<Tenant>> tenants;
  /// Looked up only, never iterated (order comes from `tenants`).
  std::unordered_map<std::string, Tenant *> byName;
  std::vector<Running> runningList;
  /// Ordinals are never reused, so ties break the same way however
  /// tenants come and go.
  unsigned nextOrdinal = 0;
  size_t numQueued = 0;
  uint64_t lastTicket = 0;
  size_t delaySamples;
};

//===----------------------------------------------------------------------===//
// fifo
//===----------------------------------------------------------------------===//

class FifoScheduler final : public PolicyBase {
public:
  explicit FifoScheduler(unsigned maxRunning)
      : PolicyBase(4096), maxRunning(maxRunning) {}
  const char *name() const override { return "fifo"; }

  void ready(WorkItem *item, Nanos now) override {
    enqueue(tenantOf(item), item, now);
    order.push_back(item);
  }

  Dispatch next(Nanos now) override {
    if (order.empty() || (maxRunning && runningList.size() >= maxRunning))
      return {};
    WorkItem *item = order.front();
    order.pop_front();
    Tenant &t = tenantOf(item);
    // The tenant's own queue is in the same order.
    assert(t.queue.front() == item);
    return decided(start(t, Dispatch(), now, 0, false), now);
  }

  bool finished(const Dispatch &d, const Outcome &o, Nanos now) override {
    return end(d, o, now, o.deviceMs);
  }

private:
  unsigned maxRunning;
  std::deque<WorkItem *> order;
};

//===----------------------------------------------------------------------===//
// wooly
//===----------------------------------------------------------------------===//

/// What the cost model knows of one kernel.
struct KernelCost {
  double blockMs = 0;
  uint64_t samples = 0;
};

class WoolyScheduler final : public PolicyBase {
public:
  explicit WoolyScheduler(WoolyPolicyOptions o)
      : PolicyBase(o.delaySamples), opts(std::move(o)) {}
  const char *name() const override { return "wooly"; }

  void ready(WorkItem *item, Nanos now) override {
    Tenant &t = tenantOf(item);
    // A tenant that becomes backlogged starts at its class's clock.
    if (!t.backlogged())
      t.vtime = std::max(t.vtime, vclock[classIndex(t)]);
    enqueue(t, item, now);
    if (t.priorityClass() == PriorityClass::LatencyCritical)
      t.lastActivity = now;
    if (!opts.pacing || item->kind != WorkItem::Kind::Launch)
      return;
    // Running slices of lower classes stop at their next virtual block,
    // the newest first, until the item has the SMs it needs.
    int free = int(opts.device.sms);
    for (const Running &r : runningList)
      if (!r.preemptAsked)
        free -= int(r.needSMs);
    int deficit = int(smsNeeded(*item)) - free;
    for (auto r = runningList.rbegin(); r != runningList.rend() && deficit > 0;
         ++r)
      if (r->preemptible && !r->preemptAsked &&
          r->tenant->priorityClass() > t.priorityClass()) {
        r->preemptAsked = true;
        preemptions.push_back(r->ticket);
        deficit -= int(r->needSMs);
      }
  }

  std::vector<uint64_t> takePreemptions() override {
    std::vector<uint64_t> out;
    out.swap(preemptions);
    return out;
  }

  Dispatch next(Nanos now) override {
    if (!numQueued)
      return {};
    for (unsigned c = 0; c < 3; ++c) {
      unsigned limit = opts.maxRunning;
      if (c == 0)
        limit += opts.latencyCriticalExtra;
      // Backlogged tenants of the class by (virtual time, ordinal); the
      // first whose head item may start now goes.
      candidates.clear();
      for (Tenant *t : byClass[c])
        if (!t->queue.empty())
          candidates.push_back(t);
      if (candidates.empty())
        continue;
      if (runningList.size() >= limit)
        return {};
      std::sort(candidates.begin(), candidates.end(),
                [](const Tenant *a, const Tenant *b) {
                  return a->vtime != b->vtime ? a->vtime < b->vtime
                                              : a->ordinal < b->ordinal;
                });
      for (Tenant *t : candidates)
        if (Dispatch d = plan(*t, now)) {
          vclock[c] = std::max(vclock[c], t->vtime);
          if (c > 0)
            coalesce(d, *t, now);
          return decided(std::move(d), now);
        }
      // Strict priority: nothing of a lower class while this class waits.
      return {};
    }
    return {};
  }

  bool finished(const Dispatch &d, const Outcome &o, Nanos now) override {
    WorkItem *item = d.item;
    Tenant &t = runningTenant(d);
    double fraction = 1;
    if (!d.fused.empty()) {
      // One launch of blocks of several kernels: its share of the device,
      // and what the set gains fused (its launches' times alone are the
      // cost model's, learnt from launches that ran alone).
      uint64_t blocks = item->gridBlocks;
      double alone = estimateMs(*item);
      std::vector<const WorkItem *> all = {item};
      for (const WorkItem *w : d.fused) {
        blocks += w->gridBlocks;
        alone += estimateMs(*w);
        all.push_back(w);
      }
      uint64_t slots = uint64_t(opts.device.sms) * occupancy(*item);
      fraction =
          std::min(1.0, double(blocks) / double(std::max<uint64_t>(slots, 1)));
      FusionStats &f = fusion(kernelSetKey(all));
      if (o.fusion == Outcome::Fusion::Refused) {
        f.off = true;
      } else if (o.fusion == Outcome::Fusion::Fused && !o.failed && alone > 0) {
        double ratio = o.deviceMs / alone;
        f.ratio = f.samples ? 0.75 * f.ratio + 0.25 * ratio : ratio;
        if (++f.samples >= opts.coalesceProbe &&
            f.ratio > opts.coalesceMaxRatio)
          f.off = true;
      }
    } else if (item->kind == WorkItem::Kind::Launch) {
      unsigned occ = occupancy(*item);
      uint64_t slots = uint64_t(opts.device.sms) * occ;
      uint64_t blocks = d.sliced() ? d.sliceEnd - d.sliceBegin
                                   : item->gridBlocks - item->blocksDone;
      uint64_t physical = d.physicalBlocks ? d.physicalBlocks : blocks;
      physical = std::max<uint64_t>(1, std::min(physical, blocks));
      fraction = std::min(1.0, double(physical) / double(slots));
      learn(*item, physical, slots, o);
    }
    if (t.priorityClass() == PriorityClass::LatencyCritical)
      t.lastActivity = now;
    return end(d, o, now, o.deviceMs * fraction);
  }

private:
  static unsigned classIndex(const Tenant &t) {
    return unsigned(t.priorityClass());
  }

  void onNewTenant(Tenant &t) override {
    byClass[classIndex(t)].push_back(&t);
    t.vtime = vclock[classIndex(t)];
    if (t.priorityClass() == PriorityClass::LatencyCritical)
      latencyCritical.push_back(&t);
  }

  void onForget(Tenant &t) override {
    llvm::erase(byClass[classIndex(t)], &t);
    llvm::erase(latencyCritical, &t);
    assert(llvm::none_of(runningList,
                         [&](const Running &r) { return r.tenant == &t; }) &&
           "forgot a tenant with running work");
  }

  /// The SMs the rest of a launch fills (at most the device).
  unsigned smsNeeded(const WorkItem &item) const {
    unsigned occ = occupancy(item);
    uint64_t remaining = item.gridBlocks > item.blocksDone
                             ? item.gridBlocks - item.blocksDone
                             : 1;
    return unsigned(
        std::min<uint64_t>(opts.device.sms, (remaining + occ - 1) / occ));
  }

  unsigned occupancy(const WorkItem &item) const {
    return opts.device.blocksPerSM(item.threadsPerBlock,
                                   item.registersPerThread,
                                   item.sharedBytesPerBlock);
  }

  double blockMs(const WorkItem &item) const {
    auto it = costs.find(item.kernelKey);
    return it == costs.end() || !it->second.samples ? opts.defaultBlockMs
                                                    : it->second.blockMs;
  }

  /// Updates the kernel's block duration from a dispatch that ran `o.
  /// blocksRun` virtual blocks on `physical` blocks of `slots` slots.
  void learn(const WorkItem &item, uint64_t physical, uint64_t slots,
             const Outcome &o) {
    if (!o.blocksRun || o.deviceMs <= 0)
      return;
    uint64_t p = std::min(physical, o.blocksRun);
    double serial = std::ceil(double(o.blocksRun) / double(p)) *
                    std::ceil(double(p) / double(slots));
    double sample = o.deviceMs / serial;
    // Bounded: tenants that launch ever new kernels start the model over
    // rather than grow it without end.
    constexpr size_t kMaxKernels = 1 << 16;
    if (costs.size() >= kMaxKernels && !costs.count(item.kernelKey))
      costs.clear();
    KernelCost &c = costs[item.kernelKey];
    c.blockMs = c.samples ? 0.75 * c.blockMs + 0.25 * sample : sample;
    c.samples++;
  }

  double slaMs(const Tenant &t) const {
    return t.config.slaMs > 0 ? t.config.slaMs : 10.0;
  }

  /// Whether any latency-critical tenant is present / active at `now`, the
  /// SMs the active ones need (what their last launches needed), the SMs
  /// running dispatches hold (latency-critical ones, and the others).
  struct LcState {
    bool present = false, active = false;
    unsigned runningSMs = 0, reservedSMs = 0, lowerSMs = 0;
    double minSlaMs = 0;
  };
  LcState latencyCriticalState(Nanos now) const {
    LcState s;
    for (const Tenant *t : latencyCritical) {
      double window = opts.activityMs;
      bool busy = t->backlogged();
      double idleMs = double(now - t->lastActivity) / kNanosPerMs;
      if (busy || idleMs <= opts.presenceMs)
        s.present = true;
      if (busy || idleMs <= window) {
        s.active = true;
        s.reservedSMs = std::max(s.reservedSMs, t->lastNeedSMs);
        s.minSlaMs = s.minSlaMs ? std::min(s.minSlaMs, slaMs(*t)) : slaMs(*t);
      }
    }
    for (const Running &r : runningList)
      if (r.tenant->priorityClass() == PriorityClass::LatencyCritical)
        s.runningSMs += r.needSMs;
      else if (!r.preemptAsked)
        s.lowerSMs += r.needSMs;
    return s;
  }

  /// The dispatch of `t`'s head item at `now`, or none when it must wait.
  Dispatch plan(Tenant &t, Nanos now) {
    WorkItem &item = *t.queue.front();
    bool launch = item.kind == WorkItem::Kind::Launch;
    unsigned occ = launch ? occupancy(item) : 1;
    uint64_t remaining = item.gridBlocks > item.blocksDone
                             ? item.gridBlocks - item.blocksDone
                             : 1;
    unsigned need = launch ? unsigned(std::min<uint64_t>(
                                 opts.device.sms, (remaining + occ - 1) / occ))
                           : 0;
    Dispatch d;
    if (t.priorityClass() == PriorityClass::LatencyCritical || !launch) {
      if (launch && t.priorityClass() == PriorityClass::LatencyCritical)
        t.lastNeedSMs = std::max(t.lastNeedSMs, need);
      return whole(t, item, now, need, occ);
    }
    LcState lc = opts.pacing ? latencyCriticalState(now) : LcState();
    if (!lc.present)
      return whole(t, item, now, need, occ);
    if (!item.sliceable) {
      if (lc.active) {
        if (t.holdSince < 0)
          t.holdSince = now;
        if (double(now - t.holdSince) / kNanosPerMs < opts.maxHoldMs)
          return {};
      }
      t.unpaced++;
      return whole(t, item, now, need, occ);
    }
    // One wave on the SMs that the latency-critical tenants (what they
    // run, or while active what they will need) and the other running
    // slices leave.
    int freeSMs = int(opts.device.sms) - int(lc.lowerSMs) -
                  int(std::max(lc.runningSMs, lc.active ? lc.reservedSMs : 0));
    if (freeSMs <= 0)
      return {};
    uint64_t physical = std::min<uint64_t>(remaining, uint64_t(freeSMs) * occ);
    physical = std::min<uint64_t>(physical, 65535);
    double budget = lc.active ? activeSliceMs(lc) : opts.idleSliceMs;
    double perBlock = blockMs(item);
    uint64_t rounds =
        std::max<uint64_t>(1, uint64_t(std::floor(budget / perBlock)));
    uint64_t length = std::min(remaining, physical * rounds);
    d.physicalBlocks = uint32_t(physical);
    d.sliceBegin = item.blocksDone;
    d.sliceEnd = item.blocksDone + length;
    unsigned needSMs = unsigned((physical + occ - 1) / occ);
    return start(t, d, now, needSMs, true);
  }

  /// What the cost model expects of the rest of a launch run alone.
  double estimateMs(const WorkItem &item) const {
    uint64_t slots = uint64_t(opts.device.sms) * occupancy(item);
    uint64_t remaining = item.gridBlocks > item.blocksDone
                             ? item.gridBlocks - item.blocksDone
                             : 1;
    return blockMs(item) *
           double((remaining + slots - 1) / std::max<uint64_t>(slots, 1));
  }

  /// A launch coalescing may take: coalescible, not started, its kernel
  /// measured alone, and small by that measure.
  bool fusible(const WorkItem &item) const {
    if (item.kind != WorkItem::Kind::Launch || !item.coalescible ||
        item.blocksDone)
      return false;
    auto it = costs.find(item.kernelKey);
    return it != costs.end() && it->second.samples &&
           estimateMs(item) <= opts.coalesceMaxMs;
  }

  /// Whatever is known of fusing a kernel set (bounded as `costs` is).
  struct FusionStats {
    double ratio = 0;
    unsigned samples = 0;
    bool off = false;
  };
  FusionStats &fusion(uint64_t key) {
    constexpr size_t kMaxSets = 1 << 16;
    if (fusionStats.size() >= kMaxSets && !fusionStats.count(key))
      fusionStats.clear();
    return fusionStats[key];
  }

  /// Fuses into `d` (a whole launch of `t`, the class below latency-
  /// critical) the small coalescible head launches of the other tenants of
  /// `t`'s class, in fair-share order (see the file header).
  void coalesce(Dispatch &d, Tenant &t, Nanos now) {
    if (opts.coalesceMaxParts < 2 || d.sliced() || d.physicalBlocks ||
        !fusible(*d.item))
      return;
    if (latencyCriticalState(now).present)
      return;
    uint64_t blocks = d.item->gridBlocks;
    std::vector<const WorkItem *> set = {d.item};
    for (Tenant *u : candidates) {
      if (d.fused.size() + 1 >= opts.coalesceMaxParts)
        break;
      if (u == &t || u->queue.empty() || !fusible(*u->queue.front()))
        continue;
      const WorkItem &w = *u->queue.front();
      if (blocks + w.gridBlocks > opts.coalesceMaxBlocks)
        continue;
      set.push_back(&w);
      if (fusion(kernelSetKey(set)).off) {
        set.pop_back();
        continue;
      }
      blocks += w.gridBlocks;
      addPart(*u, d, now, 0);
    }
  }

  double activeSliceMs(const LcState &lc) const {
    if (opts.activeSliceMs > 0)
      return opts.activeSliceMs;
    return std::max(0.05, lc.minSlaMs / 10);
  }

  /// The item as it was launched (a copy, a latency-critical launch, or
  /// no pacing). A launch that earlier slices partly ran goes on sliced,
  /// full width, from where they stopped.
  Dispatch whole(Tenant &t, WorkItem &item, Nanos now, unsigned need,
                 unsigned occ) {
    Dispatch d;
    if (item.blocksDone && item.blocksDone < item.gridBlocks) {
      uint64_t remaining = item.gridBlocks - item.blocksDone;
      d.physicalBlocks = uint32_t(std::min<uint64_t>(
          {remaining, uint64_t(opts.device.sms) * occ, 65535}));
      d.sliceBegin = item.blocksDone;
      d.sliceEnd = item.gridBlocks;
      return start(t, d, now, need, true);
    }
    return start(t, d, now, need, false);
  }

  WoolyPolicyOptions opts;
  std::vector<Tenant *> byClass[3];
  std::vector<Tenant *> latencyCritical;
  double vclock[3] = {0, 0, 0};
  std::vector<Tenant *> candidates;
  std::vector<uint64_t> preemptions;
  /// Looked up by key only, never iterated: order cannot leak into
  /// decisions.
  std::unordered_map<uint64_t, KernelCost> costs;
  std::unordered_map<uint64_t, FusionStats> fusionStats;
};

} // namespace

std::unique_ptr<Scheduler>
wooly::server::createFifoScheduler(unsigned maxRunning) {
  return std::make_unique<FifoScheduler>(maxRunning);
}

std::unique_ptr<Scheduler>
wooly::server::createWoolyScheduler(WoolyPolicyOptions options) {
  return std::make_unique<WoolyScheduler>(std::move(options));
}
