//===- Fiber.h - Minimal stackful coroutines for GPU threads ----*- C++ -*-===//
//
// Internal to the CPU runtime. A fiber is a stack plus a saved stack
// pointer; `switchTo` saves the callee-saved registers (and the FP control
// words) on the current stack and resumes another one. On x86-64 this is a
// dozen instructions (no signal-mask system call, unlike swapcontext); other
// architectures use ucontext.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_RUNTIME_CPU_FIBER_H
#define WOOLY_LIB_RUNTIME_CPU_FIBER_H

#include <cstddef>
#include <cstdint>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace wooly::cpu {

/// A saved execution context.
struct FiberContext {
#if defined(__x86_64__)
  void *sp = nullptr;
#else
  ucontext_t uc;
#endif
};

/// Prepares `ctx` to run `entry(arg)` on the stack `[stack, stack + size)`
/// at the next `fiberSwitch` into it. `entry` must never return.
void fiberInit(FiberContext &ctx, char *stack, size_t size,
               void (*entry)(void *), void *arg);

/// Saves the current context into `from` and resumes `to`.
void fiberSwitch(FiberContext &from, FiberContext &to);

/// A stack for fibers: anonymous memory with a guard page below it.
class FiberStack {
public:
  /// Bytes of the inaccessible guard zone below each stack.
  static constexpr size_t kGuardBytes = 64 * 1024;
  FiberStack() = default;
  explicit FiberStack(size_t bytes);
  FiberStack(FiberStack &&other) noexcept;
  FiberStack &operator=(FiberStack &&other) noexcept;
  FiberStack(const FiberStack &) = delete;
  ~FiberStack();
  char *base() const { return usable; }
  size_t size() const { return usableBytes; }

private:
  char *mapping = nullptr;
  size_t mappingBytes = 0;
  char *usable = nullptr;
  size_t usableBytes = 0;
};

} // namespace wooly::cpu

#endif // WOOLY_LIB_RUNTIME_CPU_FIBER_H
