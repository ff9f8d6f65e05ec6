//===- Strategies.h - How differential tests launch kernels -----*- C++ -*-===//
//
// A launch strategy compiles a module with some Wooly passes and runs a
// launch its own way (e.g. constrained to N physical blocks, in slices with
// a preemption, fenced into a tenant's memory). The corpus differential
// tests (CorpusDiffTest.cpp) run every kernel under every strategy and
// compare with the same C++ references, so each transformation is shown
// to preserve what the kernel computes.
//
// Each pass adds its strategies in its own file (StrategiesConstrain.cpp,
// StrategiesIsolate.cpp, ...), returned by the functions declared below.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_UNITTESTS_RUNTIME_STRATEGIES_H
#define WOOLY_UNITTESTS_RUNTIME_STRATEGIES_H

#include "Wooly/Compiler/Compiler.h"
#include "Wooly/Runtime/CPU/CpuDevice.h"

#include <functional>
#include <string>
#include <vector>

namespace wooly::test {

/// One launch as a test asks for it (the untransformed kernel's view).
struct LaunchRequest {
  cpu::CpuDevice *device = nullptr;
  cpu::LoadedModule *module = nullptr;
  /// The kernel as compiled under the strategy's passes.
  const KernelInfo *kernel = nullptr;
  LaunchConfig config;
  /// The user's parameter buffer (the untransformed kernel's layout).
  std::vector<uint8_t> userParams;
  /// Path of the corpus .ptx file the kernel comes from.
  std::string file;
  /// The outputs depend on the order in which atomics of concurrent blocks
  /// land (e.g. which `atomicExch` wins): two runs may differ and both be
  /// right, so a strategy must not compare runs with each other.
  bool orderDependent = false;
};

/// A way of compiling and launching kernels.
struct Strategy {
  /// Test-name suffix: letters, digits and '_' only.
  std::string name;
  /// Wooly passes to compile with (CompileOptions::passes).
  std::string passes;
  /// Runs the launch; null means a plain `CpuDevice::launch`.
  std::function<llvm::Error(const LaunchRequest &)> launch;
  /// How many times each launch's work runs (its printf output appears
  /// this many times; e.g. 2 for a launch fused with a copy of itself).
  unsigned tenants = 1;
};

/// Every strategy: "plain" first, then those of each pass.
std::vector<Strategy> allStrategies();

/// Strategies of wooly-constrain and wooly-slice (StrategiesConstrain.cpp).
std::vector<Strategy> constrainStrategies();
/// Strategies of wooly-isolate (StrategiesIsolate.cpp).
std::vector<Strategy> isolateStrategies();
/// Strategies of wooly-coalesce (StrategiesCoalesce.cpp).
std::vector<Strategy> coalesceStrategies();

} // namespace wooly::test

#endif // WOOLY_UNITTESTS_RUNTIME_STRATEGIES_H
