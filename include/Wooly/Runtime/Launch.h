//===- Launch.h - Launch a kernel with Wooly's appended parameters -*- C++ -*-===//
//
// The sharing passes (wooly-constrain, wooly-slice, wooly-isolate) append
// parameters to a kernel whose values are chosen at launch
// (KernelInfo::paramRoles). `launchKernel` is the one place that turns a
// user's launch (grid, block, the user's parameter buffer) into the launch
// of the transformed kernel: it fills the appended parameters by role, runs
// a constrained kernel on a smaller physical grid, gives a sliced kernel its
// counter, and confines an isolated kernel to the region given. Used by
// wooly-run, wooly-conformance and wooly-serve.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_RUNTIME_LAUNCH_H
#define WOOLY_RUNTIME_LAUNCH_H

#include "Wooly/Compiler/LaunchParams.h"
#include "Wooly/Runtime/Backend.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace wooly {

/// Choices for the parameters the passes append.
struct LaunchOptions {
  /// wooly-constrain: physical blocks to run the virtual grid on (0: as
  /// many as the virtual grid has, at most 65535).
  uint32_t physicalBlocks = 0;
  /// wooly-slice: the virtual blocks [begin, end) to run (end 0: all).
  uint32_t sliceBegin = 0, sliceEnd = 0;
  /// wooly-slice: the device address of a u32 preemption flag (0: none).
  uint64_t preemptFlag = 0;
  /// wooly-isolate: the region [lo, hi) the kernel's accesses are confined
  /// to; required for an isolated kernel.
  std::optional<std::pair<uint64_t, uint64_t>> isolateRegion;
};

/// What a launch did, for the callers that care (a sliced launch that was
/// preempted ran fewer blocks than asked).
struct LaunchResult {
  /// Virtual blocks run (all of them unless the kernel is sliced and was
  /// preempted).
  uint64_t blocksRun = 0;
};

/// Whether `kernel` has parameters a pass appended.
bool hasAppendedParams(const KernelInfo &kernel);

/// Launches `kernel` of `module` on `backend` for the user's `config` and
/// parameter buffer `userParams` (`userParamBufferSize(kernel)` bytes),
/// filling the appended parameters as `options` says. A sliced kernel
/// gets a counter in device memory for the launch (allocated and freed
/// here). Errors: the backend's, or a role that cannot be filled (e.g. an
/// isolated kernel without `isolateRegion`).
llvm::Expected<LaunchResult> launchKernel(Backend &backend,
                                          BackendModule *module,
                                          const KernelInfo &kernel,
                                          const LaunchConfig &config,
                                          llvm::ArrayRef<uint8_t> userParams,
                                          const LaunchOptions &options = {});

} // namespace wooly

#endif // WOOLY_RUNTIME_LAUNCH_H
