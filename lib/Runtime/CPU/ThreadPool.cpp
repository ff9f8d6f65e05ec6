//===- ThreadPool.cpp - The workers that launches share ---------*- C++ -*-===//
//
// The CpuDevice's pool of `maxWorkers - 1` threads, started by the first
// launch that can use them. Each active launch is in a list that the pool's
// workers pick from, the one with the fewest workers first; a worker runs
// blocks of the launch it joined (BlockLoop.cpp) until none is left, or
// picks again after every block while more than one launch is active.
//
//===----------------------------------------------------------------------===//

#include "CpuDeviceImpl.h"

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;

std::unique_ptr<Worker> CpuDevice::Impl::takeCallerWorker() {
  if (idleCallers.empty()) {
    auto w = std::make_unique<Worker>();
    w->stackBytes = options.fiberStackBytes;
    return w;
  }
  std::unique_ptr<Worker> w = std::move(idleCallers.back());
  idleCallers.pop_back();
  return w;
}

void CpuDevice::Impl::startPool() {
  if (!poolWorkers.empty())
    return;
  for (unsigned i = 1; i < maxWorkers; ++i) {
    poolWorkers.push_back(std::make_unique<Worker>());
    Worker *w = poolWorkers.back().get();
    w->stackBytes = options.fiberStackBytes;
    threads.emplace_back([this, w] { poolLoop(*w); });
  }
}

LaunchState *CpuDevice::Impl::pickLaunch() {
  LaunchState *best = nullptr;
  for (LaunchState *l : active) {
    if (l->failed.load(std::memory_order_relaxed) || !l->blocksLeft() ||
        l->poolParticipants + 1 >= l->numWorkers)
      continue;
    if (!best || l->poolParticipants < best->poolParticipants)
      best = l;
  }
  return best;
}

void CpuDevice::Impl::poolLoop(Worker &w) {
  computeWorkerStack(w);
  std::unique_lock<std::mutex> lock(poolMutex);
  for (;;) {
    LaunchState *l = nullptr;
    poolCv.wait(lock, [&] { return stopping || (l = pickLaunch()); });
    if (stopping)
      return;
    ++l->poolParticipants;
    // A free slot: at most numWorkers - 1 pool workers are in the launch,
    // and slot 0 is the calling thread's.
    w.index = 1;
    while (l->slotTaken[w.index])
      ++w.index;
    l->slotTaken[w.index] = true;
    w.launch = l;
    lock.unlock();
    joinLaunch(w);
    runBlocks(w, &numActive);
    lock.lock();
    w.launch = nullptr;
    // The blocks left in its span are stolen by the others, or taken over
    // by the next worker in the slot.
    l->slotTaken[w.index] = false;
    // Notified under the lock: `l` dies as soon as its caller sees 0.
    if (--l->poolParticipants == 0)
      l->allLeft.notify_all();
  }
}
