//===- Launch.cpp - Launch a kernel with Wooly's appended parameters ------===//

#include "Wooly/Runtime/Launch.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace wooly;

bool wooly::hasAppendedParams(const KernelInfo &kernel) {
  return llvm::any_of(kernel.paramRoles,
                      [](const std::string &r) { return !r.empty(); });
}

llvm::Expected<LaunchResult>
wooly::launchKernel(Backend &backend, BackendModule *module,
                    const KernelInfo &kernel, const LaunchConfig &config,
                    llvm::ArrayRef<uint8_t> userParams,
                    const LaunchOptions &options) {
  uint64_t numBlocks =
      uint64_t(config.grid[0]) * config.grid[1] * config.grid[2];
  LaunchResult result;
  result.blocksRun = numBlocks;
  if (!hasAppendedParams(kernel)) {
    if (llvm::Error e = backend.launch(module, kernel.name, config, userParams))
      return std::move(e);
    return result;
  }
  if (userParams.size() != userParamBufferSize(kernel))
    return llvm::createStringError(
        llvm::formatv("kernel '{0}': the parameter buffer has {1} bytes, the "
                      "kernel takes {2}",
                      kernel.name, userParams.size(),
                      userParamBufferSize(kernel))
            .str());
  bool constrained = false, sliced = false, isolated = false;
  for (const std::string &role : kernel.paramRoles) {
    constrained |= role == "virtual_grid_x";
    sliced |= role == "slice_counter";
    isolated |= role == "isolate_base";
  }
  LaunchConfig physical = config;
  LaunchParamValues values = constrainValues(config.grid);
  uint64_t counter = 0;
  uint32_t begin = 0, end = 0;
  if (sliced) {
    if (numBlocks > UINT32_MAX)
      return llvm::createStringError(
          "kernel '" + kernel.name +
          "': a sliced launch has at most 2^32-1 virtual blocks");
    begin = std::min<uint32_t>(options.sliceBegin, uint32_t(numBlocks));
    end = options.sliceEnd ? std::min<uint32_t>(options.sliceEnd,
                                                uint32_t(numBlocks))
                           : uint32_t(numBlocks);
    if (end < begin)
      return llvm::createStringError("kernel '" + kernel.name +
                                     "': the slice ends before it begins");
    auto c = backend.allocate(4);
    if (!c)
      return c.takeError();
    counter = *c;
    if (llvm::Error e = backend.memset(counter, 0, 4)) {
      llvm::consumeError(backend.free(counter));
      return std::move(e);
    }
    values = sliceValues(config.grid, begin, end, counter, options.preemptFlag);
  }
  if (isolated) {
    if (!options.isolateRegion) {
      if (counter)
        llvm::consumeError(backend.free(counter));
      return llvm::createStringError("kernel '" + kernel.name +
                                     "' is isolated: its launch needs a "
                                     "memory region");
    }
    values.merge(
        isolateValues(options.isolateRegion->first,
                      options.isolateRegion->second));
  }
  auto params = extendParams(kernel, userParams, values);
  if (!params) {
    if (counter)
      llvm::consumeError(backend.free(counter));
    return params.takeError();
  }
  if (constrained) {
    uint64_t n = options.physicalBlocks ? options.physicalBlocks
                                        : std::min<uint64_t>(numBlocks, 65535);
    physical.grid = {uint32_t(std::max<uint64_t>(n, 1)), 1, 1};
  }
  llvm::Error e = backend.launch(module, kernel.name, physical, *params);
  if (counter) {
    if (!e && options.preemptFlag) {
      uint32_t ran = 0;
      if (llvm::Error ce = backend.copyFromDevice(&ran, counter, 4))
        e = std::move(ce);
      result.blocksRun = std::min<uint64_t>(ran, end - begin);
    } else {
      result.blocksRun = end - begin;
    }
    llvm::consumeError(backend.free(counter));
  }
  if (e)
    return std::move(e);
  return result;
}
