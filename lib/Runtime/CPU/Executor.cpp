//===- Executor.cpp - Faults and stacks of GPU threads ----------*- C++ -*-===//
//
// What the entry points and both executors share (Executor.h): naming a
// GPU thread and ending the launch with its fault, the worker's stack, and
// the block-wide part of a thread's context.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "llvm/Support/FormatVariadic.h"

#include <pthread.h>

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;

std::string detail::describeThread(const GpuThread *t) {
  const WoolyThreadCtx &c = t->ctx;
  // The block is the worker's: a lane of a warp in lockstep has only its
  // warp's first lane's `ctaid` up to date (RegionExecutor.cpp).
  uint64_t block[3] = {c.ctaid[0], c.ctaid[1], c.ctaid[2]};
  if (t->worker)
    std::copy(t->worker->block, t->worker->block + 3, block);
  return llvm::formatv("block ({0},{1},{2}) thread ({3},{4},{5})", block[0],
                       block[1], block[2], c.tid[0], c.tid[1], c.tid[2])
      .str();
}

void detail::recordFault(GpuThread *t, const std::string &message,
                         FaultKind kind) {
  Worker *w = t->worker;
  w->launch->fail("kernel '" + w->launch->kernel->name + "': " + message +
                      " (" + describeThread(t) + ")",
                  w->linearBlock, kind);
}

[[noreturn]] void detail::leaveFaulted(GpuThread *t) {
  Worker *w = t->worker;
  if (w->fiberMode) {
    t->status = ThreadStatus::Faulted;
    yieldToScheduler(t);
    __builtin_unreachable();
  }
  std::longjmp(w->jmp, kJmpFault);
}

[[noreturn]] void detail::faultThread(GpuThread *t, const char *message) {
  recordFault(t, message); // the std::string made here is gone after it
  leaveFaulted(t);
}

std::string detail::hex(uint64_t v) { return llvm::formatv("{0:x-}", v).str(); }

__attribute__((noinline)) uint64_t detail::stackTopHere() {
  return reinterpret_cast<uint64_t>(__builtin_frame_address(0));
}

void detail::computeWorkerStack(Worker &w) {
  static thread_local std::pair<uint64_t, uint64_t> range = [] {
    std::pair<uint64_t, uint64_t> r{0, 0};
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void *addr;
      size_t size;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0)
        r = {reinterpret_cast<uint64_t>(addr),
             reinterpret_cast<uint64_t>(addr) + size};
      pthread_attr_destroy(&attr);
    }
    return r;
  }();
  w.stackLo = range.first;
  w.stackHi = range.second;
}

void detail::initBlockCtx(Worker &w, GpuThread &t) {
  LaunchState &l = *w.launch;
  WoolyThreadCtx &c = t.ctx;
  for (int i = 0; i < 3; ++i) {
    c.ntid[i] = l.config.block[i];
    c.ctaid[i] = uint32_t(w.block[i]);
    c.nctaid[i] = l.config.grid[i];
  }
  c.nwarpid = (l.threadsPerBlock + 31) / 32;
  c.dynSmemSize = l.config.dynamicSharedBytes;
  c.totalSmemSize = l.totalShared;
  c.gridid = 1;
  c.shared = w.shared.data();
  c.params = l.params;
  c.paramBytes = l.kernel->paramBufferSize;
  c.siteCache = w.cache.data();
  c.runtime = &t;
  t.worker = &w;
  t.status = ThreadStatus::Runnable;
}

void detail::initBlockThreads(Worker &w) {
  const auto &blk = w.launch->config.block;
  uint32_t tx = 0, ty = 0, tz = 0;
  for (uint32_t i = 0; i < w.launch->threadsPerBlock; ++i) {
    GpuThread &t = w.threads[i];
    initBlockCtx(w, t);
    // The thread index advances without divisions.
    t.ctx.tid[0] = tx;
    t.ctx.tid[1] = ty;
    t.ctx.tid[2] = tz;
    t.ctx.laneid = i & 31;
    t.ctx.warpid = i >> 5;
    t.index = i;
    if (++tx == blk[0]) {
      tx = 0;
      if (++ty == blk[1]) {
        ty = 0;
        ++tz;
      }
    }
  }
}
