//===- StrategiesIsolate.cpp - Launch strategies of wooly-isolate -*- C++ -*-===//
//
// `isolate`: compiles with `wooly-isolate` and launches with a tenant region
// that covers the test's buffers, so in-bounds behaviour must be unchanged.
//
// A real runtime gives each tenant one contiguous arena. The corpus tests
// allocate separate buffers instead, so the strategy approximates the arena:
// it scans the user's parameter buffer for 8-byte-aligned values that are
// addresses inside live device allocations and takes the hull of those
// allocations, its end rounded up to 256 bytes (the pass needs a region of
// at least 256 bytes). The hull may span memory between the buffers; that
// only makes the fence looser, never changes an in-bounds access. A kernel
// without pointer parameters gets a 256-byte region at its first allocation
// it can find, or at address 256 (its accesses are to module variables,
// which the pass clamps into the variables themselves).
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include "Wooly/Compiler/LaunchParams.h"

#include <algorithm>
#include <cstring>

using namespace wooly;
using namespace wooly::test;

namespace {

/// The tenant region of a launch (see the file header).
LaunchParamValues isolationRegion(const LaunchRequest &r) {
  uint64_t lo = UINT64_MAX, hi = 0;
  const std::vector<uint8_t> &p = r.userParams;
  for (size_t off = 0; off + 8 <= p.size(); off += 8) {
    uint64_t v;
    std::memcpy(&v, p.data() + off, 8);
    if (auto a = r.device->memory().find(v, 1)) {
      lo = std::min(lo, a->base);
      hi = std::max(hi, a->base + a->size);
    }
  }
  if (lo == UINT64_MAX) {
    lo = 256;
    hi = 512;
  }
  uint64_t size = (hi - lo + 255) / 256 * 256;
  return {{"isolate_base", lo}, {"isolate_size", size}};
}

llvm::Error launchIsolated(const LaunchRequest &r) {
  auto params =
      extendParams(*r.kernel, r.userParams, isolationRegion(r));
  if (!params)
    return params.takeError();
  return r.device->launch(r.module, r.kernel->name, r.config, *params);
}

} // namespace

std::vector<Strategy> wooly::test::isolateStrategies() {
  return {{"isolate", "wooly-isolate", launchIsolated}};
}
