//===- Launch.h - A launch with the parameters passes append ----*- C++ -*-===//
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
#include <vector>

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
  /// wooly-slice: the device address of the launch's u32 counter, zero
  /// before the launch (0: `launchKernel` allocates one and frees it after
  /// the launch; a server gives its own to keep allocations off the
  /// launch path).
  uint64_t sliceCounter = 0;
  /// wooly-contain: the device address of the launch's status record
  /// (ContainRecord, kContainRecordBytes, its status word zeroed before the
  /// launch; 0: none). A kernel whose status is set stops at its next loop
  /// iteration.
  uint64_t statusRecord = 0;
  /// wooly-isolate: the region [lo, hi) the kernel's accesses are confined
  /// to; required for an isolated kernel. It is widened to hold the slice
  /// counter and the preemption flag of a sliced kernel.
  std::optional<std::pair<uint64_t, uint64_t>> isolateRegion;
};

/// wooly-contain's status codes (the record's first word).
enum class ContainStatus : uint32_t {
  Running = 0,
  /// The host raised it (the server's watchdog).
  Stopped = 1,
  Trap = 2,
  Brkpt = 3,
  /// CUDA's `assert` failed (`__assertfail`).
  Assert = 4,
  MisalignedAddress = 5,
};

/// wooly-contain's status record, as the kernel writes it
/// (lib/Dialect/Wooly/Transforms/Contain.cpp): the first fault of the launch
/// and the thread that made it.
struct ContainRecord {
  uint32_t status = 0;
  /// Assert: the line.
  uint32_t line = 0;
  /// Assert: the device addresses of the message, file and function
  /// strings. MisalignedAddress: `message` is the address.
  uint64_t message = 0, file = 0, function = 0;
  uint32_t ctaid[3] = {0, 0, 0}, tid[3] = {0, 0, 0};
};
static_assert(sizeof(ContainRecord) == 56, "the layout Contain.cpp writes");
/// Bytes a status record takes on the device.
constexpr uint64_t kContainRecordBytes = 64;

/// The error a launch's status record reports once the launch ended: a
/// KernelFaultError (FaultKind::Assert, MisalignedAddress, or Launch for a
/// trap or brkpt) naming the kernel, the fault and the thread, as CUDA
/// words them; success while the record says Running or Stopped (the host
/// stopped it: its caller knows why). The assertion's strings are read from
/// the device (at most 256 bytes each).
llvm::Error containStatusError(Backend &backend, llvm::StringRef kernel,
                               uint64_t record);

/// What a launch did, for the callers that care (a sliced launch that was
/// preempted ran fewer blocks than asked).
struct LaunchResult {
  /// Virtual blocks run: the whole grid, or for a sliced kernel what its
  /// counter says (fewer than the slice when it was preempted).
  uint64_t blocksRun = 0;
};

/// Whether `kernel` has parameters a pass appended.
bool hasAppendedParams(const KernelInfo &kernel);

/// The launch of the transformed kernel, before it touches a device.
struct PreparedLaunch {
  /// The physical configuration (a constrained kernel's smaller grid).
  LaunchConfig config;
  /// The whole parameter buffer, appended parameters filled.
  std::vector<uint8_t> params;
  /// The kernel is sliced: it needs the counter `prepareLaunch` was given.
  bool sliced = false;
  /// The virtual blocks of the slice, [begin, end).
  uint32_t sliceBegin = 0, sliceEnd = 0;
};

/// Builds the launch of `kernel` for the user's `config` and `userParams`.
/// A sliced kernel needs `sliceCounter`, the device address of a u32 that
/// is zero before the launch (an error names it when missing).
llvm::Expected<PreparedLaunch> prepareLaunch(const KernelInfo &kernel,
                                             const LaunchConfig &config,
                                             llvm::ArrayRef<uint8_t> userParams,
                                             const LaunchOptions &options,
                                             uint64_t sliceCounter = 0);

/// Whether `kernel` was transformed by wooly-slice (it needs a counter).
bool isSliced(const KernelInfo &kernel);

/// Launches `kernel` of `module` on `backend` for the user's `config` and
/// parameter buffer `userParams` (`userParamBufferSize(kernel)` bytes),
/// filling the appended parameters as `options` says. A sliced kernel
/// gets a counter in device memory for the launch (allocated and freed
/// here). Errors: the backend's, or a role that cannot be filled (e.g. an
/// isolated kernel without `isolateRegion`).
llvm::Expected<LaunchResult>
launchKernel(Backend &backend, BackendModule *module, const KernelInfo &kernel,
             const LaunchConfig &config, llvm::ArrayRef<uint8_t> userParams,
             const LaunchOptions &options = {});

} // namespace wooly

#endif // WOOLY_RUNTIME_LAUNCH_H
