//===- Scheduler.cpp - Dispatch policies of wooly-serve ---------*- C++ -*-===//

#include "Wooly/Server/Scheduler.h"

#include <deque>

using namespace wooly::server;

Scheduler::~Scheduler() = default;

namespace {
/// One queue in readiness order.
class FifoScheduler final : public Scheduler {
public:
  const char *name() const override { return "fifo"; }
  void ready(WorkItem *item) override { queue.push_back(item); }
  WorkItem *next() override {
    if (queue.empty())
      return nullptr;
    WorkItem *item = queue.front();
    queue.pop_front();
    return item;
  }
  void finished(WorkItem *, double) override {}
  size_t queued() const override { return queue.size(); }

private:
  std::deque<WorkItem *> queue;
};
} // namespace

std::unique_ptr<Scheduler> wooly::server::createFifoScheduler() {
  return std::make_unique<FifoScheduler>();
}
