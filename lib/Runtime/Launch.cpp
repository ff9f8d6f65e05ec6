//===- Launch.cpp - Launch a kernel with Wooly's appended parameters ------===//

#include "Wooly/Runtime/Launch.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace wooly;

namespace {
bool hasRole(const KernelInfo &kernel, llvm::StringRef role) {
  return llvm::is_contained(kernel.paramRoles, role);
}
} // namespace

bool wooly::hasAppendedParams(const KernelInfo &kernel) {
  return llvm::any_of(kernel.paramRoles,
                      [](const std::string &r) { return !r.empty(); });
}

bool wooly::isSliced(const KernelInfo &kernel) {
  return hasRole(kernel, "slice_counter");
}

llvm::Expected<PreparedLaunch>
wooly::prepareLaunch(const KernelInfo &kernel, const LaunchConfig &config,
                     llvm::ArrayRef<uint8_t> userParams,
                     const LaunchOptions &options, uint64_t sliceCounter) {
  PreparedLaunch out;
  out.config = config;
  if (!hasAppendedParams(kernel)) {
    out.params.assign(userParams.begin(), userParams.end());
    return out;
  }
  if (userParams.size() != userParamBufferSize(kernel))
    return llvm::createStringError(
        llvm::formatv("kernel '{0}': the parameter buffer has {1} bytes, the "
                      "kernel takes {2}",
                      kernel.name, userParams.size(),
                      userParamBufferSize(kernel))
            .str());
  uint64_t numBlocks =
      uint64_t(config.grid[0]) * config.grid[1] * config.grid[2];
  LaunchParamValues values = constrainValues(config.grid);
  if (isSliced(kernel)) {
    if (!sliceCounter)
      return llvm::createStringError("kernel '" + kernel.name +
                                     "' is sliced: its launch needs a counter "
                                     "in device memory");
    if (numBlocks > UINT32_MAX)
      return llvm::createStringError(
          "kernel '" + kernel.name +
          "': a sliced launch has at most 2^32-1 virtual blocks");
    out.sliced = true;
    out.sliceBegin =
        std::min<uint32_t>(options.sliceBegin, uint32_t(numBlocks));
    out.sliceEnd = options.sliceEnd ? std::min<uint32_t>(options.sliceEnd,
                                                         uint32_t(numBlocks))
                                    : uint32_t(numBlocks);
    if (out.sliceEnd < out.sliceBegin)
      return llvm::createStringError("kernel '" + kernel.name +
                                     "': the slice ends before it begins");
    values = sliceValues(config.grid, out.sliceBegin, out.sliceEnd,
                         sliceCounter, options.preemptFlag);
  }
  if (hasRole(kernel, "isolate_base")) {
    if (!options.isolateRegion)
      return llvm::createStringError("kernel '" + kernel.name +
                                     "' is isolated: its launch needs a "
                                     "memory region");
    // The slice counter, preemption flag and status record are accessed
    // by the kernel too: the region must hold them.
    uint64_t lo = options.isolateRegion->first;
    uint64_t hi = options.isolateRegion->second;
    for (auto [addr, bytes] :
         {std::pair{out.sliced ? sliceCounter : 0, uint64_t(4)},
          std::pair{options.preemptFlag, uint64_t(4)},
          std::pair{options.statusRecord, kContainRecordBytes}})
      if (addr) {
        lo = std::min(lo, addr);
        hi = std::max(hi, addr + bytes);
      }
    values.merge(isolateValues(lo, hi));
  }
  values["launch_status"] = options.statusRecord;
  auto params = extendParams(kernel, userParams, values);
  if (!params)
    return params.takeError();
  out.params = std::move(*params);
  if (hasRole(kernel, "virtual_grid_x")) {
    uint64_t n = options.physicalBlocks ? options.physicalBlocks
                                        : std::min<uint64_t>(numBlocks, 65535);
    out.config.grid = {uint32_t(std::max<uint64_t>(n, 1)), 1, 1};
  }
  return out;
}

llvm::Expected<LaunchResult>
wooly::launchKernel(Backend &backend, BackendModule *module,
                    const KernelInfo &kernel, const LaunchConfig &config,
                    llvm::ArrayRef<uint8_t> userParams,
                    const LaunchOptions &options) {
  LaunchResult result;
  result.blocksRun = uint64_t(config.grid[0]) * config.grid[1] * config.grid[2];
  if (!hasAppendedParams(kernel)) {
    if (llvm::Error e = backend.launch(module, kernel.name, config, userParams))
      return std::move(e);
    return result;
  }
  // A sliced kernel's counter: the caller's (zero), else one that lives
  // for this launch only.
  uint64_t counter = 0;
  bool ownCounter = false;
  if (isSliced(kernel)) {
    counter = options.sliceCounter;
    if (!counter) {
      auto c = backend.allocate(4);
      if (!c)
        return c.takeError();
      counter = *c;
      ownCounter = true;
    }
  }
  auto release = [&](llvm::Error e) -> llvm::Error {
    if (ownCounter)
      if (llvm::Error fe = backend.free(counter))
        return llvm::joinErrors(std::move(e), std::move(fe));
    return e;
  };
  auto prepared = prepareLaunch(kernel, config, userParams, options, counter);
  if (!prepared)
    return release(prepared.takeError());
  // The launch's own counter, flag and status record are reachable from a
  // kernel restricted to a memory domain.
  std::vector<std::pair<uint64_t, uint64_t>> &allowed =
      prepared->config.allowedRanges;
  if (counter)
    allowed.push_back({counter, 4});
  if (options.preemptFlag)
    allowed.push_back({options.preemptFlag, 4});
  if (options.statusRecord)
    allowed.push_back({options.statusRecord, kContainRecordBytes});
  // `allocate` zero-fills: an own counter starts at 0.
  if (llvm::Error e = backend.launch(module, kernel.name, prepared->config,
                                     prepared->params))
    return release(std::move(e));
  if (prepared->sliced) {
    uint32_t ran = 0;
    if (llvm::Error e = backend.copyFromDevice(&ran, counter, 4))
      return release(std::move(e));
    result.blocksRun =
        std::min<uint64_t>(ran, prepared->sliceEnd - prepared->sliceBegin);
  }
  if (llvm::Error e = release(llvm::Error::success()))
    return std::move(e);
  return result;
}

llvm::Error wooly::containStatusError(Backend &backend, llvm::StringRef kernel,
                                      uint64_t record) {
  ContainRecord r;
  if (llvm::Error e = backend.copyFromDevice(&r, record, sizeof r))
    return llvm::createStringError("cannot read the launch's status: " +
                                   llvm::toString(std::move(e)));
  auto status = ContainStatus(r.status);
  if (status == ContainStatus::Running || status == ContainStatus::Stopped)
    return llvm::Error::success();
  // A string of the kernel's (in its module's memory), read in pieces as
  // large as its allocation allows, up to 256 bytes; "?" if unreadable.
  auto text = [&](uint64_t addr) -> std::string {
    std::string out;
    while (out.size() < 256) {
      char buf[64];
      uint64_t got = 0;
      for (uint64_t n : {64, 16, 4, 1}) {
        if (llvm::Error e = backend.copyFromDevice(buf, addr + out.size(), n)) {
          llvm::consumeError(std::move(e));
          continue;
        }
        got = n;
        break;
      }
      if (!got)
        break;
      llvm::StringRef piece(buf, got);
      size_t nul = piece.find('\0');
      out += piece.substr(0, nul).str();
      if (nul != llvm::StringRef::npos)
        return out;
    }
    return out.empty() ? "?" : out;
  };
  std::string where =
      llvm::formatv("(block ({0},{1},{2}) thread ({3},{4},{5}))", r.ctaid[0],
                    r.ctaid[1], r.ctaid[2], r.tid[0], r.tid[1], r.tid[2]);
  std::string prefix = "kernel '" + kernel.str() + "': ";
  auto fault = [&](FaultKind kind, const std::string &what) {
    return llvm::make_error<KernelFaultError>(kind,
                                              prefix + what + " " + where);
  };
  switch (status) {
  case ContainStatus::Trap:
    return fault(FaultKind::Launch, "trap instruction executed");
  case ContainStatus::Brkpt:
    return fault(FaultKind::Launch, "brkpt executed without a debugger");
  case ContainStatus::Assert:
    // As CUDA prints it.
    return fault(FaultKind::Assert, text(r.file) + ":" +
                                        std::to_string(r.line) + ": " +
                                        text(r.function) + ": Assertion `" +
                                        text(r.message) + "` failed.");
  case ContainStatus::MisalignedAddress:
    return fault(FaultKind::MisalignedAddress,
                 "misaligned address 0x" + llvm::utohexstr(r.message, true));
  default:
    return fault(FaultKind::Launch, "unknown status " +
                                        std::to_string(r.status) +
                                        " in the launch's status record");
  }
}
