//===- DirectExecutor.cpp - Blocks whose threads never wait -----*- C++ -*-===//
//
// A kernel that never synchronises (no barrier, warp collective, nanosleep
// or indirect call on any path) runs its threads one after another on the
// worker's own stack: one call per thread (or the generated block loop), no
// context switches. `exit` and faults `longjmp` back here.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "llvm/Support/FormatVariadic.h"

#include <csetjmp>

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;

namespace {
/// Sets the thread-specific fields for linear thread index `linear`.
void setThreadIndex(Worker &w, GpuThread &t, uint32_t linear) {
  const auto &blk = w.launch->config.block;
  WoolyThreadCtx &c = t.ctx;
  c.tid[0] = linear % blk[0];
  c.tid[1] = (linear / blk[0]) % blk[1];
  c.tid[2] = linear / (blk[0] * blk[1]);
  c.laneid = linear % 32;
  c.warpid = linear / 32;
  t.index = linear;
}

} // namespace

/// Direct mode: threads in order on the worker's stack. The block-wide
/// context is set once; the thread index advances incrementally.
void detail::runBlockDirect(Worker &w) {
  LaunchState &l = *w.launch;
  GpuThread &t = w.direct;
  WoolyThreadCtx &c = t.ctx;
  const auto &blk = l.config.block;
  initBlockCtx(w, t);
  // `.local` memory lives on the worker's stack, under this frame (the
  // kernel's frames begin right below it; unchecked when the system does
  // not tell where the stack is). Generated code takes the stack pointer
  // as the lower bound, the runtime its own frame.
  c.localLo = w.stackLo;
  c.localHi = w.stackHi > w.stackLo ? stackTopHere() : ~uint64_t(0);
  // `w.next` is memory, not a local, so its value survives longjmp.
  w.next = 0;
  int why = setjmp(w.jmp);
  if (why == kJmpFault)
    return;
  if (why == kJmpOverflow) {
    l.fail(llvm::formatv("kernel '{0}': stack overflow: the thread's frames "
                         "outgrew the worker's stack of {1} bytes (deep or "
                         "unbounded recursion?) ({2})",
                         l.kernel->name, w.stackHi - w.stackLo,
                         describeThread(&t))
               .str(),
           w.linearBlock);
    return;
  }
  if (why == kJmpExit) {
    // The thread in the context exited; continue with the next one.
    w.next = c.tid[0] + blk[0] * (c.tid[1] + blk[1] * c.tid[2]) + 1;
  }
  if (w.next >= l.threadsPerBlock)
    return;
  setThreadIndex(w, t, w.next);
  if (l.blockFn) {
    // The generated loop runs the rest of the block; after an `exit` in a
    // device function it is resumed after the exiting thread.
    l.blockFn(&c, l.params, w.next);
    return;
  }
  WoolyKernelFn fn = l.fn;
  const char *params = l.params;
  for (;;) {
    fn(&c, params);
    uint32_t next = ++w.next;
    if (next >= l.threadsPerBlock)
      return;
    c.laneid = next & 31;
    c.warpid = next >> 5;
    if (++c.tid[0] == blk[0]) {
      c.tid[0] = 0;
      if (++c.tid[1] == blk[1]) {
        c.tid[1] = 0;
        ++c.tid[2];
      }
    }
  }
}
