//===- StrategiesConstrain.cpp - Launch strategies of wooly-constrain -*- C++ -*-===//
//
// wooly-constrain: the launch runs on a 1-D physical grid of N blocks
// (`constrain_1`, `constrain_3`, and `constrain_big` with exactly 1000
// blocks, more than any test's grid, so most physical blocks find no
// virtual block). wooly-slice (`slice`): the launch is split at t/3 (t the
// number of blocks): [0, t/3) runs first; a launch over [t/3, t) with the
// preemption flag already set must execute nothing (the counter stays 0);
// then [t/3, t) runs without preemption. After each launch the strategy
// checks what the runtime would read to resume: the first block not
// executed is `begin + min(*counter, end - begin)`.
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include "Wooly/Compiler/LaunchParams.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace wooly;
using namespace wooly::test;

namespace {

uint64_t numBlocks(const LaunchConfig &c) {
  return uint64_t(c.grid[0]) * c.grid[1] * c.grid[2];
}

/// The roles every strategy fills: the original grid.
LaunchParamValues gridValues(const LaunchConfig &c) {
  return {{"virtual_grid_x", c.grid[0]},
          {"virtual_grid_y", c.grid[1]},
          {"virtual_grid_z", c.grid[2]}};
}

/// Launches `r` with `values` on `physical` blocks.
llvm::Error launchOn(const LaunchRequest &r, const LaunchParamValues &values,
                     uint32_t physical) {
  auto params = extendParams(*r.kernel, r.userParams, values);
  if (!params)
    return params.takeError();
  LaunchConfig c = r.config;
  c.grid = {physical, 1, 1};
  return r.device->launch(r.module, r.kernel->name, c, *params);
}

/// wooly-constrain on `n` physical blocks.
Strategy constrained(std::string name, uint32_t n) {
  return {std::move(name), "wooly-constrain",
          [n](const LaunchRequest &r) {
            return launchOn(r, gridValues(r.config), n);
          }};
}

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Device words of a slice launch: the counter and the preemption flag.
class SliceWords {
public:
  explicit SliceWords(cpu::CpuDevice &d) : device(d) {}
  ~SliceWords() {
    for (uint64_t a : {counter, flag})
      if (a)
        llvm::consumeError(device.memory().free(a));
  }
  llvm::Error init() {
    for (uint64_t *a : {&counter, &flag}) {
      auto m = device.memory().allocate(4);
      if (!m)
        return m.takeError();
      *a = *m;
    }
    return llvm::Error::success();
  }
  llvm::Error set(uint64_t addr, uint32_t value) {
    return device.memory().copyToDevice(addr, &value, 4);
  }
  llvm::Expected<uint32_t> get(uint64_t addr) {
    uint32_t v = 0;
    if (auto e = device.memory().copyFromDevice(&v, addr, 4))
      return std::move(e);
    return v;
  }
  cpu::CpuDevice &device;
  uint64_t counter = 0, flag = 0;
};

/// Runs virtual blocks [begin, end) on `physical` blocks with the flag at
/// `flagAddr` (0: none); returns the number of blocks executed.
llvm::Expected<uint64_t> runSlice(const LaunchRequest &r, SliceWords &w,
                                  uint32_t begin, uint32_t end,
                                  uint64_t flagAddr, uint32_t physical) {
  if (auto e = w.set(w.counter, 0))
    return std::move(e);
  LaunchParamValues values = gridValues(r.config);
  values["slice_begin"] = begin;
  values["slice_end"] = end;
  values["slice_counter"] = w.counter;
  values["preempt_flag"] = flagAddr;
  if (auto e = launchOn(r, values, physical))
    return std::move(e);
  auto taken = w.get(w.counter);
  if (!taken)
    return taken.takeError();
  return std::min<uint64_t>(*taken, end - begin);
}

llvm::Error launchSliced(const LaunchRequest &r) {
  uint64_t t = numBlocks(r.config);
  if (t > UINT32_MAX)
    return fail("grid too large for wooly-slice");
  uint32_t third = uint32_t(t / 3), total = uint32_t(t);
  SliceWords w(*r.device);
  if (auto e = w.init())
    return e;
  // [0, t/3) without a flag.
  auto ran = runSlice(r, w, 0, third, 0, 2);
  if (!ran)
    return ran.takeError();
  if (*ran != third)
    return fail(llvm::formatv("slice [0, {0}) executed {1} blocks", third,
                              *ran));
  // [t/3, t), preempted before it starts: nothing runs.
  if (auto e = w.set(w.flag, 1))
    return e;
  ran = runSlice(r, w, third, total, w.flag, 3);
  if (!ran)
    return ran.takeError();
  if (*ran != 0)
    return fail(llvm::formatv("preempted slice executed {0} blocks", *ran));
  // Resume [t/3, t) with the flag clear.
  if (auto e = w.set(w.flag, 0))
    return e;
  ran = runSlice(r, w, third, total, w.flag, 3);
  if (!ran)
    return ran.takeError();
  if (*ran != total - third)
    return fail(llvm::formatv("slice [{0}, {1}) executed {2} blocks", third,
                              total, *ran));
  return llvm::Error::success();
}

} // namespace

std::vector<Strategy> wooly::test::constrainStrategies() {
  return {constrained("constrain_1", 1), constrained("constrain_3", 3),
          constrained("constrain_big", 1000),
          {"slice", "wooly-slice", launchSliced}};
}
