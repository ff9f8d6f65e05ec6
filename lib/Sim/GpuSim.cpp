//===- GpuSim.cpp - A GPU's SMs as discrete events --------------*- C++ -*-===//
//
// See include/Wooly/Sim/Sim.h for the model. Events are ordered by (time,
// sequence number), every duration is an integer number of nanoseconds, and
// block durations come from a hash, so a run is a pure function of its
// submissions.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Sim/Sim.h"

#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cassert>
#include <climits>
#include <cmath>
#include <deque>
#include <queue>

using namespace wooly;
using namespace wooly::sim;

GpuConfig GpuConfig::h100() { return GpuConfig(); }

GpuConfig GpuConfig::smaller(unsigned sms) {
  GpuConfig g;
  g.device.sms = std::max(1u, sms);
  g.name = "sms=" + std::to_string(g.device.sms);
  return g;
}

llvm::Expected<GpuConfig> GpuConfig::parse(llvm::StringRef text) {
  if (text == "h100")
    return h100();
  unsigned n = 0;
  if (text.consume_front("sms=") && !text.getAsInteger(10, n) && n > 0 &&
      n <= 4096)
    return smaller(n);
  return llvm::createStringError(
      "unknown GPU '%s': expected 'h100' or 'sms=N' (1 <= N <= 4096)",
      text.str().c_str());
}

namespace {

Nanos toNanos(double us) { return Nanos(std::llround(us * 1000)); }

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct SmState {
  unsigned threads = 0, blocks = 0, registers = 0;
  uint64_t shared = 0;
};

struct LaunchState {
  const KernelModel *kernel = nullptr;
  uint64_t kernelHash = 0;
  uint64_t physical = 0, begin = 0, end = 0;
  bool looped = false, preempted = false, done = false;
  uint64_t counter = 0, placed = 0, live = 0, run = 0;
  Nanos firstStart = -1;
  unsigned context = 0;
};

/// A resident physical block.
struct Block {
  uint64_t launch = 0;
  unsigned sm = 0;
  Nanos end = 0, remaining = 0;
  size_t pos = 0; // in its context's resident list
};

struct Context {
  std::vector<SmState> sms;
  std::vector<unsigned> residentPerSM;
  unsigned busySMs = 0;
  /// Visible launches with blocks not yet placed, in visibility order.
  std::deque<uint64_t> queue;
  std::vector<size_t> resident;
  uint64_t generation = 0;
  bool hasWork() const { return !queue.empty() || !resident.empty(); }
};

enum class EventType { Visible, BlockDone, Quantum, SwitchDone };

struct Event {
  Nanos at;
  uint64_t seq;
  EventType type;
  uint64_t a;   // launch, block or context
  uint64_t gen; // generation the event belongs to
  bool operator>(const Event &o) const {
    return at != o.at ? at > o.at : seq > o.seq;
  }
};

} // namespace

class GpuSim::Impl {
public:
  Impl(GpuConfig config, Mode mode) : cfg(std::move(config)), mode(mode) {
    // Concurrent: one context, always active. Time-sliced: none active
    // until the first launch becomes visible.
    if (mode == Mode::TimeSliced)
      active = -1;
    else
      context(0);
  }

  uint64_t submit(const SimLaunch &l, Nanos now) {
    assert(l.kernel && "a launch needs a kernel");
    LaunchState s;
    s.kernel = l.kernel;
    s.kernelHash = mix(llvm::xxh3_64bits(l.kernel->name));
    uint64_t grid = std::max<uint64_t>(1, l.kernel->blocks);
    if (l.sliceEnd) {
      s.begin = std::min(l.sliceBegin, grid);
      s.end = std::min(l.sliceEnd, grid);
    } else {
      s.begin = 0;
      s.end = grid;
    }
    uint64_t count = s.end > s.begin ? s.end - s.begin : 0;
    s.looped = l.physicalBlocks || l.sliceEnd;
    s.physical =
        l.physicalBlocks ? std::min<uint64_t>(l.physicalBlocks, count) : count;
    s.physical = std::max<uint64_t>(1, s.physical);
    s.context = mode == Mode::TimeSliced ? l.context : 0;
    context(s.context);
    launches.push_back(s);
    uint64_t id = launches.size();
    push(now + toNanos(cfg.launchUs), EventType::Visible, id, 0);
    return id;
  }

  void preempt(uint64_t id) {
    if (id && id <= launches.size() && launches[id - 1].looped)
      launches[id - 1].preempted = true;
  }

  Nanos nextEvent() const {
    return events.empty() ? LLONG_MAX : events.top().at;
  }

  Nanos step(std::vector<Completion> &done) {
    if (events.empty())
      return lastTime;
    Nanos now = events.top().at;
    advance(now);
    while (!events.empty() && events.top().at == now) {
      Event e = events.top();
      events.pop();
      handle(e, now, done);
    }
    if (mode == Mode::TimeSliced)
      maybeSwitch(now);
    if (active >= 0)
      place(unsigned(active), now, done);
    return now;
  }

  double busyFraction(Nanos until) const {
    double integral = busyIntegral;
    if (until > lastTime && active >= 0)
      integral += double(contexts[active].busySMs) * double(until - lastTime);
    return until > 0 ? integral / (double(cfg.device.sms) * double(until)) : 0;
  }

private:
  Context &context(unsigned c) {
    while (contexts.size() <= c) {
      contexts.emplace_back();
      contexts.back().sms.resize(cfg.device.sms);
      contexts.back().residentPerSM.resize(cfg.device.sms);
    }
    return contexts[c];
  }

  void push(Nanos at, EventType type, uint64_t a, uint64_t gen) {
    events.push({at, ++seq, type, a, gen});
  }

  void advance(Nanos now) {
    if (active >= 0)
      busyIntegral += double(contexts[active].busySMs) * double(now - lastTime);
    lastTime = now;
  }

  void handle(const Event &e, Nanos now, std::vector<Completion> &done) {
    switch (e.type) {
    case EventType::Visible: {
      LaunchState &l = launches[e.a - 1];
      context(l.context).queue.push_back(e.a);
      if (mode == Mode::TimeSliced && active < 0 && !switching)
        activate(l.context, now);
      break;
    }
    case EventType::BlockDone: {
      Block &b = blocks[e.a];
      LaunchState &l = launches[b.launch - 1];
      if (e.gen != contexts[l.context].generation)
        break; // the context was switched out; resumed elsewhere
      if (!takeNext(e.a, now))
        exitBlock(e.a, now, done);
      break;
    }
    case EventType::Quantum:
      if (active >= 0 && e.gen == quantumGen && othersHaveWork())
        beginSwitch(now);
      else if (active >= 0 && e.gen == quantumGen)
        push(now + toNanos(cfg.timesliceUs), EventType::Quantum, 0,
             ++quantumGen);
      break;
    case EventType::SwitchDone:
      switching = false;
      activate(unsigned(e.a), now);
      break;
    }
  }

  /// Block `id` takes its next virtual block; false when there is none.
  bool takeNext(size_t id, Nanos now) {
    Block &b = blocks[id];
    LaunchState &l = launches[b.launch - 1];
    if (l.preempted || l.counter >= l.end - l.begin)
      return false;
    uint64_t v = l.begin + l.counter++;
    l.run++;
    double u = double(mix(l.kernelHash ^ v) >> 11) * 0x1p-53;
    double us = l.kernel->blockUs * (1 + l.kernel->jitter * (2 * u - 1));
    if (l.looped)
      us += cfg.loopUs;
    if (l.firstStart < 0)
      l.firstStart = now;
    b.end = now + std::max<Nanos>(1, toNanos(us));
    push(b.end, EventType::BlockDone, id, contexts[l.context].generation);
    return true;
  }

  void exitBlock(size_t id, Nanos now, std::vector<Completion> &done) {
    Block &b = blocks[id];
    LaunchState &l = launches[b.launch - 1];
    Context &c = contexts[l.context];
    SmState &sm = c.sms[b.sm];
    const KernelModel &k = *l.kernel;
    sm.threads -= k.threads;
    sm.blocks -= 1;
    sm.registers -= k.registers * k.threads;
    sm.shared -= k.sharedBytes;
    if (--c.residentPerSM[b.sm] == 0)
      c.busySMs--;
    // Swap-remove from the context's resident list.
    size_t last = c.resident.back();
    c.resident[b.pos] = last;
    blocks[last].pos = b.pos;
    c.resident.pop_back();
    freeBlocks.push_back(id);
    l.live--;
    finishIfDone(b.launch, now, done);
  }

  void finishIfDone(uint64_t id, Nanos now, std::vector<Completion> &done) {
    LaunchState &l = launches[id - 1];
    if (l.done || l.live || l.placed < l.physical)
      return;
    l.done = true;
    done.push_back({id, l.run, l.firstStart < 0 ? now : l.firstStart, now});
  }

  bool fits(const SmState &sm, const KernelModel &k) const {
    return sm.threads + k.threads <= cfg.device.maxThreadsPerSM &&
           sm.blocks + 1 <= cfg.device.maxBlocksPerSM &&
           uint64_t(sm.registers) + uint64_t(k.registers) * k.threads <=
               cfg.device.registersPerSM &&
           sm.shared + k.sharedBytes <= cfg.device.sharedPerSM;
  }

  /// The hardware dispatcher of context `ci`: blocks of the launch at the
  /// head of the queue onto SMs, in order, until one does not fit.
  void place(unsigned ci, Nanos now, std::vector<Completion> &done) {
    Context &c = contexts[ci];
    while (!c.queue.empty()) {
      uint64_t id = c.queue.front();
      LaunchState &l = launches[id - 1];
      if (l.preempted) {
        // Blocks not yet placed would see the flag at once.
        l.placed = l.physical;
        c.queue.pop_front();
        finishIfDone(id, now, done);
        continue;
      }
      const KernelModel &k = *l.kernel;
      while (l.placed < l.physical) {
        int best = -1;
        for (unsigned s = 0; s < cfg.device.sms; ++s)
          if (fits(c.sms[s], k) &&
              (best < 0 || c.sms[s].threads < c.sms[unsigned(best)].threads))
            best = int(s);
        if (best < 0)
          break;
        SmState &sm = c.sms[unsigned(best)];
        sm.threads += k.threads;
        sm.blocks += 1;
        sm.registers += k.registers * k.threads;
        sm.shared += k.sharedBytes;
        if (c.residentPerSM[unsigned(best)]++ == 0)
          c.busySMs++;
        size_t bid;
        if (!freeBlocks.empty()) {
          bid = freeBlocks.back();
          freeBlocks.pop_back();
        } else {
          bid = blocks.size();
          blocks.emplace_back();
        }
        blocks[bid] = Block{id, unsigned(best), 0, 0, c.resident.size()};
        c.resident.push_back(bid);
        l.placed++;
        l.live++;
        if (!takeNext(bid, now))
          exitBlock(bid, now, done);
      }
      if (l.placed < l.physical)
        return; // the head launch waits for room; nothing behind it goes
      c.queue.pop_front();
    }
  }

  // Time slicing.
  bool othersHaveWork() const {
    for (size_t i = 0; i < contexts.size(); ++i)
      if (int(i) != active && contexts[i].hasWork())
        return true;
    return false;
  }

  void activate(unsigned ci, Nanos now) {
    active = int(ci);
    Context &c = contexts[ci];
    c.generation++;
    for (size_t id : c.resident) {
      Block &b = blocks[id];
      b.end = now + b.remaining;
      push(b.end, EventType::BlockDone, id, c.generation);
    }
    push(now + toNanos(cfg.timesliceUs), EventType::Quantum, 0, ++quantumGen);
  }

  void beginSwitch(Nanos now) {
    Context &c = contexts[unsigned(active)];
    for (size_t id : c.resident)
      blocks[id].remaining = blocks[id].end - now;
    c.generation++; // its pending block events are stale now
    unsigned from = unsigned(active);
    active = -1;
    switching = true;
    quantumGen++;
    unsigned n = unsigned(contexts.size());
    unsigned to = from;
    for (unsigned i = 1; i <= n; ++i)
      if (contexts[(from + i) % n].hasWork()) {
        to = (from + i) % n;
        break;
      }
    push(now + toNanos(cfg.switchUs), EventType::SwitchDone, to, 0);
  }

  /// An idle active context gives the device to one with work at once.
  void maybeSwitch(Nanos now) {
    if (active < 0 || switching || contexts[unsigned(active)].hasWork())
      return;
    if (othersHaveWork())
      beginSwitch(now);
  }

  GpuConfig cfg;
  Mode mode;
  std::vector<LaunchState> launches;
  std::vector<Block> blocks;
  std::vector<size_t> freeBlocks;
  std::vector<Context> contexts;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  uint64_t seq = 0, quantumGen = 0;
  int active = 0;
  bool switching = false;
  Nanos lastTime = 0;
  double busyIntegral = 0;
};

GpuSim::GpuSim(GpuConfig config, Mode mode)
    : impl(std::make_unique<Impl>(std::move(config), mode)) {}
GpuSim::~GpuSim() = default;

uint64_t GpuSim::submit(const SimLaunch &launch, Nanos now) {
  return impl->submit(launch, now);
}
void GpuSim::preempt(uint64_t launch) { impl->preempt(launch); }
Nanos GpuSim::nextEvent() const { return impl->nextEvent(); }
Nanos GpuSim::step(std::vector<Completion> &done) { return impl->step(done); }
double GpuSim::busyFraction(Nanos until) const {
  return impl->busyFraction(until);
}
