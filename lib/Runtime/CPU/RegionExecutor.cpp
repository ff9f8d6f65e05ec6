//===- RegionExecutor.cpp - Blocks run region by region ---------*- C++ -*-===//
//
// A kernel whose barriers and warp collectives the compiler could cut it
// at (KernelInfo::regionSymbol) runs without fibers: its region function
// takes one thread from one cut to the next and returns. A block runs in
// rounds: every live thread, in thread order, on the worker's own stack,
// up to the next cut (or its end); then the cut's warp collectives are
// completed, as the fiber scheduler completes them; then the next round.
// That is the fiber scheduler's own order (every thread runs until it
// waits, in thread order, then the collectives complete), so the results
// are the same bit for bit. Values that live across a cut are in each
// thread's frame (`ctx.regionFrame`). `exit` and faults `longjmp` back
// here, as in direct mode.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <csetjmp>

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;

void detail::runBlockRegions(Worker &w) {
  LaunchState &l = *w.launch;
  uint32_t n = l.threadsPerBlock;
  uint64_t frame =
      llvm::alignTo(std::max<uint64_t>(l.kernel->regionFrameBytes, 16), 64);
  if (w.threads.size() < n)
    w.threads.resize(n);
  if (w.regionFrames.size() < n * frame + 64)
    w.regionFrames.resize(n * frame + 64);
  char *frames = reinterpret_cast<char *>(
      llvm::alignTo(reinterpret_cast<uintptr_t>(w.regionFrames.data()), 64));
  initBlockThreads(w);
  uint64_t localHi = w.stackHi > w.stackLo ? stackTopHere() : ~uint64_t(0);
  for (uint32_t i = 0; i < n; ++i) {
    GpuThread &t = w.threads[i];
    t.ctx.regionFrame = frames + uint64_t(i) * frame;
    t.ctx.resume = 0;
    // `.local` memory is on the worker's stack, under this frame, as in
    // direct mode.
    t.ctx.localLo = w.stackLo;
    t.ctx.localHi = localHi;
  }
  w.atWarp = w.atBarrier = w.atIteration = w.exited = 0;
  WoolyKernelFn fn = l.regionFn;
  const char *params = l.params;
  // Kept in memory, not in locals: they must survive a longjmp.
  volatile uint32_t cut = 0;
  volatile bool first = true;
  for (;;) {
    // One setjmp a round: `exit`, a fault or an overflow comes back here
    // with the thread in `w.next`.
    first = true;
    w.next = 0;
    int why = setjmp(w.jmp);
    if (why == kJmpFault)
      return;
    if (why == kJmpOverflow) {
      l.fail(llvm::formatv("kernel '{0}': stack overflow: the thread's "
                           "frames outgrew the worker's stack of {1} bytes "
                           "(deep or unbounded recursion?) ({2})",
                           l.kernel->name, w.stackHi - w.stackLo,
                           describeThread(&w.threads[w.next]))
                 .str(),
             w.linearBlock);
      return;
    }
    if (why == kJmpExit) {
      w.threads[w.next].status = ThreadStatus::Exited;
      ++w.exited;
      ++w.next;
    }
    for (; w.next < n; ++w.next) {
      GpuThread &t = w.threads[w.next];
      if (t.status == ThreadStatus::Exited)
        continue;
      t.status = ThreadStatus::Runnable;
      fn(&t.ctx, params);
      if (t.ctx.resume == WOOLY_REGION_EXITED) {
        t.status = ThreadStatus::Exited;
        ++w.exited;
        continue;
      }
      if (first) {
        cut = t.ctx.resume;
        first = false;
      } else if (t.ctx.resume != cut) {
        // The compiler splits only kernels whose threads meet the same
        // cuts in the same order; never go on with a wrong result.
        l.fail("kernel '" + l.kernel->name +
                   "': internal error: threads of a block at different "
                   "cuts in region mode (" +
                   describeThread(&t) + ")",
               w.linearBlock);
        return;
      }
    }
    if (w.exited == n || l.stopped(w.linearBlock))
      return;
    if (w.atWarp) {
      resolveWarps(w);
      if (l.stopped(w.linearBlock))
        return;
      if (w.atWarp) {
        l.fail("kernel '" + l.kernel->name + "': deadlock in block (" +
                   std::to_string(w.block[0]) + "," +
                   std::to_string(w.block[1]) + "," +
                   std::to_string(w.block[2]) +
                   "): a warp collective whose lanes are not all there",
               w.linearBlock);
        return;
      }
    }
  }
}
