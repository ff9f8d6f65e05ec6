//===- SchedulerTest.cpp - The scheduling policies, on the sim GPU --------===//
//
// The wooly policy (include/Wooly/Server/Scheduler.h) driven directly and on
// the sim backend (include/Wooly/Sim/Sim.h): strict priority, weighted fair
// share, SLA pacing with preemption, resumed slices, held unsliceable
// launches, determinism; and the sim's own model.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Server/Scheduler.h"
#include "Wooly/Server/Trace.h"
#include "Wooly/Sim/Sim.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <numeric>
#include <set>

using namespace wooly;
using namespace wooly::server;
using namespace wooly::sim;

namespace {

constexpr Nanos kMs = 1000000;

TenantConfig tenantConfig(std::string name, PriorityClass c,
                          uint32_t weight = 1, double slaMs = 0) {
  TenantConfig t;
  t.name = std::move(name);
  t.priorityClass = c;
  t.weight = weight;
  t.slaMs = slaMs;
  return t;
}

WorkItem launchItem(const TenantConfig &t, uint64_t id, uint64_t blocks,
                    bool sliceable = true) {
  WorkItem w;
  w.id = id;
  w.tenant = &t;
  w.kernelKey = 1;
  w.gridBlocks = blocks;
  w.threadsPerBlock = 256;
  w.sliceable = sliceable;
  return w;
}

TenantSpec spec(TenantConfig c, std::vector<KernelModel> chain,
                double periodUs = 0, double phaseUs = 0) {
  TenantSpec t;
  t.config = std::move(c);
  t.chain = std::move(chain);
  t.periodUs = periodUs;
  t.phaseUs = phaseUs;
  return t;
}

/// A latency-critical inference next to two saturating best-effort
/// tenants with long multi-wave kernels, on an H100.
Scenario latencyScenario() {
  Scenario sc;
  sc.gpu = GpuConfig::h100();
  sc.durationUs = 400000;
  sc.tenants.push_back(
      spec(tenantConfig("lc", PriorityClass::LatencyCritical, 1, 2),
           {KernelModel::make("lc.a", 1056, 100),
            KernelModel::make("lc.b", 528, 80)},
           8000, 500));
  sc.tenants.push_back(
      spec(tenantConfig("train", PriorityClass::BestEffort),
           {KernelModel::make("train.gemm", 8448, 120, 256, 128, 96 << 10)}));
  sc.tenants.push_back(
      spec(tenantConfig("batch", PriorityClass::BestEffort),
           {KernelModel::make("batch.map", 4224, 60, 128, 64)}));
  return sc;
}

TEST(SchedulerTest, StrictPriorityBetweenClasses) {
  TenantConfig be = tenantConfig("be", PriorityClass::BestEffort);
  TenantConfig normal = tenantConfig("normal", PriorityClass::Normal);
  TenantConfig lc = tenantConfig("lc", PriorityClass::LatencyCritical, 1, 5);
  WoolyPolicyOptions o;
  o.maxRunning = 1;
  o.latencyCriticalExtra = 0;
  o.pacing = false;
  auto s = createWoolyScheduler(o);
  std::vector<WorkItem> items;
  items.reserve(9);
  for (int i = 0; i < 3; ++i) {
    items.push_back(launchItem(be, items.size() + 1, 64));
    items.push_back(launchItem(normal, items.size() + 1, 64));
    items.push_back(launchItem(lc, items.size() + 1, 64));
  }
  for (WorkItem &w : items)
    s->ready(&w, 0);
  std::vector<PriorityClass> order;
  Nanos now = 0;
  while (Dispatch d = s->next(now)) {
    order.push_back(d.item->tenant->priorityClass);
    EXPECT_FALSE(s->next(now)) << "more than maxRunning dispatches";
    now += kMs;
    EXPECT_TRUE(s->finished(d, Outcome{1, d.item->gridBlocks}, now));
  }
  std::vector<PriorityClass> expected = {
      PriorityClass::LatencyCritical, PriorityClass::LatencyCritical,
      PriorityClass::LatencyCritical, PriorityClass::Normal,
      PriorityClass::Normal,          PriorityClass::Normal,
      PriorityClass::BestEffort,      PriorityClass::BestEffort,
      PriorityClass::BestEffort};
  EXPECT_EQ(order, expected);
  EXPECT_EQ(s->queued(), 0u);
  EXPECT_EQ(s->running(), 0u);
}

TEST(SchedulerTest, StrictPriorityOnTheSim) {
  // A normal tenant's kernels never wait for a best-effort one's: with
  // pacing its items preempt best-effort slices, so each starts within one
  // best-effort virtual block, however long the best-effort kernels are.
  Scenario sc;
  sc.gpu = GpuConfig::smaller(16);
  sc.durationUs = 200000;
  sc.tenants.push_back(
      spec(tenantConfig("lc", PriorityClass::LatencyCritical, 1, 5),
           {KernelModel::make("lc.k", 16, 50)}, 50000, 1000));
  sc.tenants.push_back(spec(tenantConfig("normal", PriorityClass::Normal),
                            {KernelModel::make("normal.k", 64, 40)}, 3000,
                            100));
  sc.tenants.push_back(spec(tenantConfig("be", PriorityClass::BestEffort),
                            {KernelModel::make("be.long", 20000, 100)}));
  RunResult r = runScenario(sc, Policy::Wooly);
  const TenantResult &normal = r.tenants[1];
  ASSERT_GT(normal.startDelayUs.size(), 50u);
  // One best-effort block (100 us +- 10%) plus the launch overhead.
  EXPECT_LE(percentile(normal.startDelayUs, 1.0), 125.0);
  EXPECT_GT(r.tenants[2].workUs, 0.0) << "best-effort work never ran";
}

TEST(SchedulerTest, WeightsGiveProportionalShares) {
  // Three backlogged tenants of one class, weights 1:2:4, one launch on
  // the device at a time (each fills it): device time within 5% of 1:2:4.
  Scenario sc;
  sc.gpu = GpuConfig::smaller(8);
  sc.durationUs = 2000000;
  sc.wooly.maxRunning = 1;
  const uint32_t weights[] = {1, 2, 4};
  const double blockUs[] = {100, 70, 130}; // different kernels, too
  for (int i = 0; i < 3; ++i)
    sc.tenants.push_back(spec(
        tenantConfig("w" + std::to_string(weights[i]), PriorityClass::Normal,
                     weights[i]),
        {KernelModel::make("k" + std::to_string(i), 64, blockUs[i], 1024)}));
  RunResult r = runScenario(sc, Policy::Wooly);
  double total = 0;
  for (const TenantResult &t : r.tenants)
    total += t.workUs;
  ASSERT_GT(total, 0.0);
  for (int i = 0; i < 3; ++i) {
    double share = r.tenants[i].workUs / total;
    double target = weights[i] / 7.0;
    EXPECT_NEAR(share / target, 1.0, 0.05)
        << "tenant " << r.tenants[i].name << " got " << share << ", want "
        << target;
    // The scheduler's own accounting agrees.
    EXPECT_NEAR(r.schedulerStats[i].share / target, 1.0, 0.05);
  }
}

TEST(SchedulerTest, LatencyCriticalStartsWithinItsSlaUnderSaturation) {
  Scenario sc = latencyScenario();
  RunResult r = runScenario(sc, Policy::Wooly);
  const TenantResult &lc = r.tenants[0];
  ASSERT_GT(lc.requests, 40u);
  double slaUs = sc.tenants[0].config.slaMs * 1000;
  // Every kernel starts within the SLA, every request ends within it.
  EXPECT_LE(percentile(lc.startDelayUs, 1.0), slaUs);
  EXPECT_LE(percentile(lc.latencyUs, 1.0), slaUs);
  // ... while best-effort work keeps the device busy.
  EXPECT_GE(r.busy, 0.9);
  double beWork = r.tenants[1].workUs + r.tenants[2].workUs;
  EXPECT_GT(beWork, 0.7 * sc.gpu.device.sms * sc.durationUs * 0.5);

  // Without pacing the same mix misses the SLA: the test can fail.
  sc.wooly.pacing = false;
  RunResult unpaced = runScenario(sc, Policy::Wooly);
  EXPECT_GT(percentile(unpaced.tenants[0].latencyUs, 0.99), slaUs);
}

TEST(SchedulerTest, DecisionsAreDeterministic) {
  Scenario sc = latencyScenario();
  sc.durationUs = 100000;
  RunResult a = runScenario(sc, Policy::Wooly);
  RunResult b = runScenario(sc, Policy::Wooly);
  ASSERT_GT(a.decisions.size(), 100u);
  EXPECT_TRUE(a.decisions == b.decisions);
  EXPECT_EQ(a.busy, b.busy);
  for (size_t i = 0; i < a.tenants.size(); ++i)
    EXPECT_EQ(a.tenants[i].latencyUs, b.tenants[i].latencyUs);
  // Some of the decisions are constrained slices.
  EXPECT_TRUE(std::any_of(a.decisions.begin(), a.decisions.end(),
                          [](const DecisionRecord &d) {
                            return d.sliceEnd != 0 && d.physicalBlocks != 0;
                          }));
}

TEST(SchedulerTest, PreemptedSliceResumesWhereItStopped) {
  TenantConfig be = tenantConfig("be", PriorityClass::BestEffort);
  TenantConfig lc = tenantConfig("lc", PriorityClass::LatencyCritical, 1, 5);
  WoolyPolicyOptions o;
  o.device = DeviceModel::cpu(4);
  auto s = createWoolyScheduler(o);
  s->announce(&lc, 0);
  WorkItem w = launchItem(be, 1, 1000);
  s->ready(&w, 0);
  Dispatch d = s->next(0);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d.sliced());
  EXPECT_EQ(d.physicalBlocks, 4u);
  EXPECT_EQ(d.sliceBegin, 0u);
  EXPECT_LE(d.sliceEnd, 1000u);
  // A latency-critical launch needs the device: the slice is preempted.
  WorkItem l = launchItem(lc, 2, 8);
  s->ready(&l, kMs);
  std::vector<uint64_t> pre = s->takePreemptions();
  ASSERT_EQ(pre.size(), 1u);
  EXPECT_EQ(pre[0], d.ticket);
  Dispatch dl = s->next(kMs);
  ASSERT_TRUE(dl);
  EXPECT_EQ(dl.item, &l);
  EXPECT_FALSE(dl.sliced());
  // The slice stopped after 7 virtual blocks: the item is queued again.
  EXPECT_FALSE(s->finished(d, Outcome{0.5, 7}, kMs + 1000));
  EXPECT_TRUE(s->finished(dl, Outcome{0.2, 8}, 2 * kMs));
  // The latency-critical tenant stays active (reserving the device) for
  // activityMs after its work.
  EXPECT_FALSE(s->next(2 * kMs));
  uint64_t covered = 7;
  Nanos now = 3 * kMs;
  while (Dispatch r = s->next(now)) {
    EXPECT_EQ(r.item, &w);
    EXPECT_EQ(r.sliceBegin, covered) << "a slice skipped or repeated blocks";
    covered = r.sliceEnd;
    now += kMs;
    if (s->finished(r, Outcome{1, r.sliceEnd - r.sliceBegin}, now))
      break;
  }
  EXPECT_EQ(covered, 1000u);
  EXPECT_EQ(s->queued(), 0u);
  std::vector<TenantStats> st = s->stats(now);
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].name, "lc"); // announced first
  EXPECT_EQ(st[1].preempted, 1u);
}

TEST(SchedulerTest, UnsliceableLaunchIsHeldThenRunsWholeAndIsCounted) {
  TenantConfig be = tenantConfig("be", PriorityClass::BestEffort);
  TenantConfig lc = tenantConfig("lc", PriorityClass::LatencyCritical, 1, 5);
  WoolyPolicyOptions o;
  o.device = DeviceModel::cpu(4);
  o.maxHoldMs = 10;
  auto s = createWoolyScheduler(o);
  WorkItem l = launchItem(lc, 1, 4);
  s->ready(&l, 0);
  Dispatch dl = s->next(0);
  ASSERT_TRUE(dl);
  WorkItem w = launchItem(be, 2, 100, /*sliceable=*/false);
  s->ready(&w, 0);
  EXPECT_FALSE(s->next(0)) << "ran next to a latency-critical launch";
  EXPECT_TRUE(s->finished(dl, Outcome{1, 4}, kMs));
  // Active for activityMs after its work: still held...
  EXPECT_FALSE(s->next(kMs + 100000));
  // ... then it runs whole once the tenant is idle.
  Dispatch d = s->next(2 * kMs);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d.sliced());
  EXPECT_EQ(d.physicalBlocks, 0u);
  EXPECT_EQ(s->stats(2 * kMs)[1].unpaced, 1u);
}

TEST(SchedulerTest, StarvationIsMeasured) {
  // A best-effort tenant behind a backlogged normal one never runs: its
  // starvation is 1; the normal tenant's is 0.
  TenantConfig be = tenantConfig("be", PriorityClass::BestEffort);
  TenantConfig normal = tenantConfig("normal", PriorityClass::Normal);
  WoolyPolicyOptions o;
  o.maxRunning = 1;
  auto s = createWoolyScheduler(o);
  std::vector<WorkItem> items;
  items.reserve(11);
  items.push_back(launchItem(be, 1, 8));
  for (int i = 0; i < 10; ++i)
    items.push_back(launchItem(normal, i + 2, 8));
  for (WorkItem &w : items)
    s->ready(&w, 0);
  Nanos now = 0;
  for (int i = 0; i < 10; ++i) {
    Dispatch d = s->next(now);
    ASSERT_TRUE(d);
    EXPECT_EQ(d.item->tenant, &normal);
    now += kMs;
    s->finished(d, Outcome{1, 8}, now);
  }
  std::vector<TenantStats> st = s->stats(now);
  EXPECT_DOUBLE_EQ(st[0].starvation, 1.0);
  EXPECT_DOUBLE_EQ(st[0].backloggedMs, 10.0);
  EXPECT_DOUBLE_EQ(st[1].starvation, 0.0);
  EXPECT_EQ(st[1].queueDelayMs.size(), 10u);
  EXPECT_DOUBLE_EQ(percentile(st[1].queueDelayMs, 1.0), 9.0);
}

TEST(SchedulerTest, RetiredTenantsAreForgottenOnceTheirWorkIsDone) {
  // Tenants coming and going (open mode: any name is a tenant) must not
  // grow the scheduler without bound.
  WoolyPolicyOptions o;
  o.maxRunning = 1;
  auto s = createWoolyScheduler(o);
  std::vector<TenantConfig> many;
  for (int i = 0; i < 1000; ++i)
    many.push_back(
        tenantConfig("t" + std::to_string(i), PriorityClass::Normal));
  for (const TenantConfig &t : many)
    s->announce(&t, 0);
  EXPECT_EQ(s->stats(0).size(), 1000u);
  // One with work in flight stays until the work ends.
  WorkItem w = launchItem(many[7], 1, 8);
  s->ready(&w, 0);
  Dispatch d = s->next(0);
  ASSERT_TRUE(d);
  for (const TenantConfig &t : many)
    s->retire(&t, kMs);
  ASSERT_EQ(s->stats(kMs).size(), 1u);
  EXPECT_EQ(s->stats(kMs)[0].name, "t7");
  // The caller's config may be gone by the time the dispatch ends.
  many[7].name = "renamed";
  EXPECT_TRUE(s->finished(d, Outcome{1, 8}, 2 * kMs));
  EXPECT_EQ(s->stats(2 * kMs).size(), 0u);
  // Announced again: a new tenant, scheduled as before.
  TenantConfig back = tenantConfig("t7", PriorityClass::Normal);
  s->announce(&back, 3 * kMs);
  WorkItem w2 = launchItem(back, 2, 8);
  s->ready(&w2, 3 * kMs);
  EXPECT_TRUE(s->next(3 * kMs));
}

TEST(SchedulerTest, SmallLaunchesOfATenantsClassAreCoalesced) {
  TenantConfig a = tenantConfig("a", PriorityClass::Normal);
  TenantConfig b = tenantConfig("b", PriorityClass::Normal);
  TenantConfig c = tenantConfig("c", PriorityClass::Normal);
  TenantConfig low = tenantConfig("low", PriorityClass::BestEffort);
  WoolyPolicyOptions o;
  o.device = DeviceModel::cpu(2);
  o.maxRunning = 1;
  o.latencyCriticalExtra = 0;
  o.coalesceMaxParts = 8;
  o.coalesceProbe = 2;
  auto s = createWoolyScheduler(o);
  std::vector<const TenantConfig *> who = {&a, &b, &c, &low};
  std::vector<std::unique_ptr<WorkItem>> items;
  auto item = [&](const TenantConfig &t, uint64_t kernel, uint64_t blocks) {
    items.push_back(std::make_unique<WorkItem>(
        launchItem(t, items.size() + 1, blocks, false)));
    items.back()->kernelKey = kernel;
    items.back()->coalescible = true;
    return items.back().get();
  };
  Nanos now = 0;
  auto runAlone = [&](WorkItem *w, double ms) {
    s->ready(w, now);
    Dispatch d = s->next(now);
    ASSERT_TRUE(d);
    EXPECT_TRUE(d.fused.empty());
    now += Nanos(ms * kMs);
    s->finished(d, Outcome{ms, w->gridBlocks}, now);
  };
  // Nothing is fused before its kernel was measured alone.
  WorkItem *x = item(a, 1, 2), *y = item(b, 2, 2);
  s->ready(x, now);
  s->ready(y, now);
  Dispatch first = s->next(now);
  ASSERT_TRUE(first);
  EXPECT_TRUE(first.fused.empty());
  s->finished(first, Outcome{0.1, 2}, now += kMs / 10);
  Dispatch second = s->next(now);
  ASSERT_TRUE(second);
  EXPECT_TRUE(second.fused.empty());
  s->finished(second, Outcome{0.1, 2}, now += kMs / 10);
  runAlone(item(c, 3, 2), 0.1);
  runAlone(item(low, 3, 2), 0.1);
  // A long kernel (measured: 5 ms) is never fused.
  runAlone(item(c, 9, 2), 5);

  // Ready together: one dispatch takes the heads of the class's tenants,
  // in fair-share order, and not the best-effort one nor the long kernel.
  auto together = [&](double fusedMs, Outcome::Fusion how) {
    WorkItem *p = item(a, 1, 2), *q = item(b, 2, 2), *r = item(c, 3, 2),
             *l = item(low, 3, 2);
    for (WorkItem *w : {p, q, r, l})
      s->ready(w, now);
    Dispatch d = s->next(now);
    EXPECT_TRUE(d);
    std::vector<const WorkItem *> all = {d.item};
    all.insert(all.end(), d.fused.begin(), d.fused.end());
    now += Nanos(fusedMs * kMs);
    s->finished(d, Outcome{fusedMs, 0, false, how}, now);
    // The best-effort item follows alone.
    Dispatch rest;
    while ((rest = s->next(now))) {
      EXPECT_TRUE(rest.fused.empty());
      s->finished(rest, Outcome{0.1, 2}, now += kMs / 10);
    }
    return all.size();
  };
  EXPECT_EQ(together(0.12, Outcome::Fusion::Fused), 3u);
  // Fair share: the fused launches' tenants were charged their part.
  std::vector<TenantStats> st = s->stats(now);
  for (const TenantStats &t : st)
    EXPECT_GT(t.chargedMs, 0) << t.name;
  // Measured to help (0.12 ms against 0.3 ms alone): fused again.
  EXPECT_EQ(together(0.12, Outcome::Fusion::Fused), 3u);
  // Measured not to help (0.4 ms against 0.3 alone): once its averaged
  // ratio passes coalesceMaxRatio, the set is no longer fused.
  int rounds = 0;
  while (together(0.4, Outcome::Fusion::Fused) == 3u && rounds < 10)
    ++rounds;
  EXPECT_GE(rounds, 2);
  EXPECT_LT(rounds, 10);
  // (A subset of it is another set, measured on its own.)
  EXPECT_LT(together(0.1, Outcome::Fusion::Fused), 3u);

  // A set the caller cannot compile is not fused again.
  auto s2 = createWoolyScheduler(o);
  s.swap(s2);
  x = item(a, 1, 2);
  y = item(b, 2, 2);
  runAlone(x, 0.1);
  runAlone(y, 0.1);
  WorkItem *p = item(a, 1, 2), *q = item(b, 2, 2);
  s->ready(p, now);
  s->ready(q, now);
  Dispatch d = s->next(now);
  ASSERT_EQ(d.fused.size(), 1u);
  s->finished(d, Outcome{0.1, 0, false, Outcome::Fusion::Refused}, now);
  p = item(a, 1, 2);
  q = item(b, 2, 2);
  s->ready(p, now);
  s->ready(q, now);
  d = s->next(now);
  EXPECT_TRUE(d.fused.empty());
}

TEST(SimTest, BlocksAreDispatchedInOrderWithinTheSmLimits) {
  // 4 SMs of 2048 threads: a kernel of 1024-thread blocks holds 2 per SM,
  // so 16 blocks of 100 us take two waves.
  GpuConfig g = GpuConfig::smaller(4);
  g.launchUs = 0;
  GpuSim gpu(g);
  KernelModel k = KernelModel::make("k", 16, 100, 1024);
  k.jitter = 0;
  gpu.submit(SimLaunch{&k, 0, 0, 0, 0}, 0);
  std::vector<Completion> done;
  while (gpu.nextEvent() != INT64_MAX)
    gpu.step(done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].blocksRun, 16u);
  EXPECT_EQ(done[0].end, 200 * 1000);
  EXPECT_DOUBLE_EQ(gpu.busyFraction(done[0].end), 1.0);

  // Constrained to 2 physical blocks and sliced to [4, 10): 6 blocks in 3
  // rounds of 100 us + loopUs.
  GpuSim gpu2(g);
  gpu2.submit(SimLaunch{&k, 2, 4, 10, 0}, 0);
  done.clear();
  while (gpu2.nextEvent() != INT64_MAX)
    gpu2.step(done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].blocksRun, 6u);
  EXPECT_EQ(done[0].end, Nanos(3 * (100 + g.loopUs) * 1000));
}

TEST(SimTest, PreemptionStopsAtTheNextVirtualBlock) {
  GpuConfig g = GpuConfig::smaller(2);
  g.launchUs = 0;
  g.loopUs = 0;
  GpuSim gpu(g);
  KernelModel k = KernelModel::make("k", 1000, 100, 1024);
  k.jitter = 0;
  uint64_t id = gpu.submit(SimLaunch{&k, 4, 0, 1000, 0}, 0);
  std::vector<Completion> done;
  while (gpu.nextEvent() < 250 * 1000)
    gpu.step(done);
  gpu.preempt(id);
  while (gpu.nextEvent() != INT64_MAX)
    gpu.step(done);
  ASSERT_EQ(done.size(), 1u);
  // 4 blocks in each of 3 rounds started before the flag was raised.
  EXPECT_EQ(done[0].blocksRun, 12u);
  EXPECT_EQ(done[0].end, 300 * 1000);
}

TEST(SimTest, TraceIsChromeJsonWithATrackPerTenant) {
  Scenario sc = latencyScenario();
  sc.durationUs = 20000;
  TraceWriter trace;
  runScenario(sc, Policy::Wooly, &trace);
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(trace.json());
  ASSERT_TRUE(bool(v)) << llvm::toString(v.takeError());
  const llvm::json::Array *events = v->getAsObject()->getArray("traceEvents");
  ASSERT_TRUE(events);
  std::set<int64_t> tracks;
  size_t spans = 0;
  for (const llvm::json::Value &e : *events) {
    const llvm::json::Object *o = e.getAsObject();
    if (o->getString("ph") == llvm::StringRef("X")) {
      spans++;
      tracks.insert(*o->getInteger("tid"));
      EXPECT_TRUE(o->getNumber("ts") && o->getNumber("dur"));
    }
  }
  EXPECT_GT(spans, 20u);
  EXPECT_EQ(tracks.size(), 3u);
}

} // namespace
