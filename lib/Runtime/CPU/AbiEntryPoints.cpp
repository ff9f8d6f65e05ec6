//===- AbiEntryPoints.cpp - Entry points of generated code ------*- C++ -*-===//
//
// The `__wooly_rt_*` functions that kernels compiled for `host` call
// (include/Wooly/Runtime/CPU/ABI.h): bounds checks and their faults,
// barriers, warp collectives, `exit`, `trap`, special registers, `isspacep`
// and `nanosleep`. printf and assert are in Printf.cpp.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <chrono>
#include <csetjmp>

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;

namespace {
/// Whether an access of `size` bytes (a power of two > 1) at `addr` is
/// not aligned to its size.
bool misaligned(uint64_t addr, uint32_t size) {
  return size > 1 && llvm::isPowerOf2_32(size) && (addr & (size - 1)) != 0;
}

/// Ends the launch with the GPU's "misaligned address".
[[noreturn]] void faultMisaligned(GpuThread *t, uint64_t addr, uint32_t size,
                                  uint32_t flags) {
  faultThread(t, FaultKind::MisalignedAddress, [&] {
    std::string what = (flags & WOOLY_ACCESS_WRITE)
                           ? ((flags & WOOLY_ACCESS_READ) ? "atomic" : "write")
                           : "read";
    return "misaligned address 0x" + hex(addr) + " (a " + std::to_string(size) +
           "-byte " + what + " must be aligned to its size)";
  });
}
} // namespace

extern "C" {

void __wooly_rt_check(WoolyThreadCtx *ctx, WoolyAccessRange *entry,
                      uint64_t addr, uint32_t size, uint32_t flags) {
  GpuThread *t = threadOf(ctx);
  Worker *w = t->worker;
  if ((flags & WOOLY_ACCESS_ALIGNED) && misaligned(addr, size))
    faultMisaligned(t, addr, size, flags);
  if (std::optional<Allocation> a = w->launch->reachable(
          w->linearBlock, addr, size, flags & WOOLY_ACCESS_WRITE)) {
    // `find` guarantees a->size >= size.
    if (entry)
      *entry = {a->base, a->size - size};
    return;
  }
  uint64_t shared = reinterpret_cast<uint64_t>(ctx->shared);
  if (addr >= shared && addr - shared < ctx->totalSmemSize &&
      size <= ctx->totalSmemSize - (addr - shared)) {
    if (entry)
      *entry = {shared, ctx->totalSmemSize - size};
    return;
  }
  auto [lo, hi] = liveStack(t, WOOLY_CALLER_SP);
  if (addr >= lo && addr < hi && size <= hi - addr)
    return; // A local variable (not cached: each fiber has its own stack).
  uint64_t params = reinterpret_cast<uint64_t>(ctx->params);
  uint64_t paramBytes = w->launch->kernel->paramBufferSize;
  if (addr >= params && addr - params < paramBytes &&
      size <= paramBytes - (addr - params))
    return;
  faultThread(t, FaultKind::IllegalAddress, [&] {
    std::string what = (flags & WOOLY_ACCESS_WRITE)
                           ? ((flags & WOOLY_ACCESS_READ) ? "atomic" : "write")
                           : "read";
    std::string msg = "out-of-bounds " + what + " of " + std::to_string(size) +
                      " bytes at address 0x" + hex(addr);
    if (std::optional<Allocation> n =
            w->launch->nearestReachable(w->linearBlock, addr)) {
      int64_t delta = int64_t(addr - n->base);
      msg += llvm::formatv(" ({0} bytes from the start of the {1}-byte "
                           "allocation at {2:x}{3})",
                           delta, n->size, n->base,
                           n->moduleGlobal ? " '" + n->name + "'" : "")
                 .str();
    }
    return msg;
  });
}

void __wooly_rt_space_oob(WoolyThreadCtx *ctx, uint64_t addr, uint32_t size,
                          uint32_t flags, uint32_t space) {
  if ((flags & WOOLY_ACCESS_ALIGNED) && misaligned(addr, size))
    faultMisaligned(threadOf(ctx), addr, size, flags);
  faultThread(threadOf(ctx), FaultKind::IllegalAddress, [&] {
    std::string what = (flags & WOOLY_ACCESS_WRITE)
                           ? ((flags & WOOLY_ACCESS_READ) ? "atomic" : "write")
                           : "read";
    return "out-of-bounds " + what + " of " + std::to_string(size) +
           " bytes of " +
           (space == WOOLY_SPACE_LOCAL ? "local memory" : "parameter space") +
           " at address 0x" + hex(addr) +
           (space == WOOLY_SPACE_LOCAL
                ? " (outside the thread's live stack frames)"
                : " (outside the " + std::to_string(ctx->paramBytes) +
                      "-byte parameter buffer)");
  });
}

void __wooly_rt_shared_oob(WoolyThreadCtx *ctx, uint32_t site, uint64_t offset,
                           uint32_t size) {
  // Inside the window, the inline check failed on alignment.
  if (offset < ctx->totalSmemSize && size <= ctx->totalSmemSize - offset)
    faultThread(threadOf(ctx), FaultKind::MisalignedAddress, [&] {
      return "misaligned shared-memory access of " + std::to_string(size) +
             " bytes at offset " + std::to_string(offset) +
             " (it must be aligned to its size)";
    });
  faultThread(threadOf(ctx), FaultKind::IllegalAddress, [&] {
    return "out-of-bounds shared-memory access of " + std::to_string(size) +
           " bytes at offset " + std::to_string(offset) + " (the block has " +
           std::to_string(ctx->totalSmemSize) + " bytes of shared memory)";
  });
}

static void arriveAtBarrier(GpuThread *t, uint32_t id, uint32_t count,
                            bool arriveOnly, int redOp, uint32_t pred) {
  Worker *w = t->worker;
  if (!w->fiberMode)
    faultThread(t, "internal error: barrier reached in direct mode");
  if (id >= 16)
    faultThread(t, [&] {
      return "barrier id " + std::to_string(id) + " is out of range";
    });
  if (count != 0 && (count % 32 != 0 && count != w->launch->threadsPerBlock))
    faultThread(t, [&] {
      return "barrier thread count " + std::to_string(count) +
             " is not a multiple of the warp size";
    });
  Barrier &b = w->barriers[id];
  if (count && b.arrived && b.expected != count)
    faultThread(t, [&] {
      return "barrier " + std::to_string(id) +
             " used with different thread counts";
    });
  b.expected = count;
  ++b.arrived;
  if (redOp >= 0) {
    b.popc += pred ? 1 : 0;
    b.andAll &= pred ? 1 : 0;
    b.orAny |= pred ? 1 : 0;
  }
  if (arriveOnly)
    return;
  b.waiting.push_back(t->index);
  ++w->atBarrier;
  t->status = ThreadStatus::AtBarrier;
  yieldToScheduler(t);
}

void __wooly_rt_iteration_barrier(WoolyThreadCtx *ctx) {
  GpuThread *t = threadOf(ctx);
  if (!t->worker->fiberMode)
    faultThread(t, "internal error: iteration barrier reached in direct mode");
  ++t->worker->atIteration;
  t->status = ThreadStatus::AtIteration;
  yieldToScheduler(t);
}

void __wooly_rt_barrier(WoolyThreadCtx *ctx, uint32_t id, uint32_t count,
                        uint32_t arriveOnly) {
  arriveAtBarrier(threadOf(ctx), id, count, arriveOnly, -1, 0);
}

uint32_t __wooly_rt_bar_red(WoolyThreadCtx *ctx, uint32_t op, uint32_t id,
                            uint32_t count, uint32_t pred) {
  GpuThread *t = threadOf(ctx);
  arriveAtBarrier(t, id, count, false, int(op), pred);
  uint32_t r = t->barrierResult;
  switch (op) {
  case 5: // and
    return (r >> 30) & 1;
  case 6: // or
    return r >> 31;
  default: // popc
    return r & 0x3fffffffu;
  }
}

void __wooly_rt_warp(WoolyThreadCtx *ctx, uint32_t kind, uint32_t mask,
                     const uint32_t *in, uint32_t nin, uint32_t *out,
                     uint32_t nout) {
  GpuThread *t = threadOf(ctx);
  if (!t->worker->fiberMode && !t->worker->regionMode)
    faultThread(t, "internal error: warp collective reached in direct mode");
  t->warpKind = kind;
  t->warpMask = mask;
  t->warpLane = WarpLane{in, nin, out, nout};
  ++t->worker->atWarp;
  t->status = ThreadStatus::AtWarp;
  // Region mode: the region function returns, and the block's round
  // completes the collective.
  if (t->worker->fiberMode)
    yieldToScheduler(t);
}

void __wooly_rt_exit(WoolyThreadCtx *ctx) {
  GpuThread *t = threadOf(ctx);
  if (t->worker->fiberMode) {
    t->status = ThreadStatus::Exited;
    yieldToScheduler(t);
    __builtin_unreachable();
  }
  std::longjmp(t->worker->jmp, kJmpExit);
}

void __wooly_rt_trap(WoolyThreadCtx *ctx) {
  faultThread(threadOf(ctx), "trap instruction executed");
}

void __wooly_rt_bad_call(WoolyThreadCtx *ctx, uint64_t target) {
  faultThread(threadOf(ctx), [&] {
    return "indirect call to 0x" + hex(target) +
           ", which is no function of the module";
  });
}

uint64_t __wooly_rt_malloc(WoolyThreadCtx *ctx, uint64_t size) {
  Worker &w = *threadOf(ctx)->worker;
  LaunchState &l = *w.launch;
  return l.heaps->allocate(l.memoryDomainOf(w.linearBlock), size);
}

void __wooly_rt_free(WoolyThreadCtx *ctx, uint64_t ptr) {
  GpuThread *t = threadOf(ctx);
  LaunchState &l = *t->worker->launch;
  if (llvm::Error e =
          l.heaps->free(l.memoryDomainOf(t->worker->linearBlock), ptr))
    faultThread(t,
                [&] { return "device-side " + llvm::toString(std::move(e)); });
}

uint64_t __wooly_rt_sreg(WoolyThreadCtx *ctx, uint32_t which) {
  using namespace std::chrono;
  GpuThread *t = threadOf(ctx);
  switch (which) {
  case 7: // smid
    return t->worker->index;
  case 8: // nsmid
    return t->worker->launch->numWorkers;
  case 10: // clock
  case 11: // clock64
    return uint64_t(
        duration_cast<nanoseconds>(steady_clock::now().time_since_epoch())
            .count());
  case 12:   // globaltimer
  case 27:   // globaltimer_lo
  case 28: { // globaltimer_hi
    uint64_t ns = uint64_t(
        duration_cast<nanoseconds>(system_clock::now().time_since_epoch())
            .count());
    return which == 28 ? ns >> 32 : (which == 27 ? ns & 0xffffffffu : ns);
  }
  case WOOLY_SREG_ENVREG0 + 1:
    return t->worker->launch->gridWorkspace >> 32;
  case WOOLY_SREG_ENVREG0 + 2:
    return t->worker->launch->gridWorkspace & 0xffffffffu;
  default:
    return 0;
  }
}

uint32_t __wooly_rt_isspacep(WoolyThreadCtx *ctx, uint32_t space,
                             uint64_t addr) {
  GpuThread *t = threadOf(ctx);
  uint64_t shared = reinterpret_cast<uint64_t>(ctx->shared);
  bool inShared = addr >= shared && addr - shared < ctx->totalSmemSize;
  auto [lo, hi] = liveStack(t, WOOLY_CALLER_SP);
  bool inLocal = addr >= lo && addr < hi;
  uint64_t params = reinterpret_cast<uint64_t>(ctx->params);
  bool inParam = addr >= params &&
                 addr - params < t->worker->launch->kernel->paramBufferSize;
  switch (space) {
  case 3: // shared
  case 7: // shared::cluster
    return inShared;
  case 5: // local
    return inLocal;
  case 6: // param
    return inParam;
  case 1: // global
    return !inShared && !inLocal && !inParam;
  case 4: // const
    return t->worker->launch->reachable(t->worker->linearBlock, addr, 0, false)
        .has_value();
  default:
    return 1;
  }
}

void __wooly_rt_nanosleep(WoolyThreadCtx *ctx, uint32_t ns) {
  GpuThread *t = threadOf(ctx);
  if (!t->worker->fiberMode)
    return;
  t->status = ThreadStatus::Yielded;
  yieldToScheduler(t);
}

} // extern "C"
