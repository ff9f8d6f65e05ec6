//===- WarpOps.cpp - Warp collectives other than matrix ones ----*- C++ -*-===//
//
// `resolveWarpOp` (WarpOps.h): shfl, vote, match and redux over the lanes of
// a warp that have all arrived, as the fiber scheduler completes them. The
// matrix collectives are in WarpMatrix.cpp.
//
//===----------------------------------------------------------------------===//

#include "WarpOps.h"

#include "Wooly/Runtime/CPU/ABI.h"

#include <algorithm>

bool wooly::cpu::resolveWarpOp(uint32_t kind, WarpLane lanes[32],
                               uint32_t group, std::string &error) {
  auto in = [&](uint32_t lane, uint32_t i) -> uint32_t {
    return i < lanes[lane].nin ? lanes[lane].in[i] : 0;
  };
  auto out = [&](uint32_t lane, uint32_t i, uint32_t v) {
    if (i < lanes[lane].nout)
      lanes[lane].out[i] = v;
  };
  auto each = [&](auto fn) {
    for (uint32_t i = 0; i < 32; ++i)
      if (group & (1u << i))
        fn(i);
  };
  switch (kind) {
  case WOOLY_WARP_SHFL:
    each([&](uint32_t lane) {
      bool pval;
      uint32_t src =
          shflSource(lane, in(lane, 0), in(lane, 2), in(lane, 3), group, pval);
      out(lane, 0, in(src, 1));
      out(lane, 1, pval ? 1 : 0);
    });
    return true;
  case WOOLY_WARP_VOTE: {
    uint32_t ballot = 0;
    each([&](uint32_t lane) {
      if (in(lane, 1))
        ballot |= 1u << lane;
    });
    each([&](uint32_t lane) {
      switch (in(lane, 0)) {
      case 0: // all
        out(lane, 0, (ballot & group) == group);
        break;
      case 1: // any
        out(lane, 0, ballot != 0);
        break;
      case 2: // uni
        out(lane, 0, ballot == 0 || (ballot & group) == group);
        break;
      default: // ballot
        out(lane, 0, ballot);
        break;
      }
    });
    return true;
  }
  case WOOLY_WARP_MATCH:
    each([&](uint32_t lane) {
      uint64_t v = uint64_t(in(lane, 1)) | uint64_t(in(lane, 2)) << 32;
      uint32_t same = 0;
      each([&](uint32_t other) {
        uint64_t o = uint64_t(in(other, 1)) | uint64_t(in(other, 2)) << 32;
        if (o == v)
          same |= 1u << other;
      });
      if (in(lane, 0) == 0) { // any
        out(lane, 0, same);
        out(lane, 1, 0);
      } else { // all
        bool all = same == group;
        out(lane, 0, all ? group : 0);
        out(lane, 1, all ? 1 : 0);
      }
    });
    return true;
  case WOOLY_WARP_REDUX: {
    uint32_t op = 0;
    bool first = true;
    uint32_t acc = 0;
    each([&](uint32_t lane) {
      op = in(lane, 0);
      uint32_t v = in(lane, 1);
      if (first) {
        acc = op == 8 ? (v != 0) : v; // popc counts predicates
        first = false;
        return;
      }
      switch (op) {
      case 0:
        acc += v;
        break;
      case 1:
        acc = std::min(acc, v);
        break;
      case 2:
        acc = uint32_t(std::min(int32_t(acc), int32_t(v)));
        break;
      case 3:
        acc = std::max(acc, v);
        break;
      case 4:
        acc = uint32_t(std::max(int32_t(acc), int32_t(v)));
        break;
      case 5:
        acc &= v;
        break;
      case 6:
        acc |= v;
        break;
      case 7:
        acc ^= v;
        break;
      default:
        acc += v != 0;
        break;
      }
    });
    each([&](uint32_t lane) { out(lane, 0, acc); });
    return true;
  }
  case WOOLY_WARP_ELECT: {
    // The lowest lane of the mask that executes it.
    uint32_t leader = uint32_t(__builtin_ctz(group));
    each([&](uint32_t lane) {
      out(lane, 0, leader);
      out(lane, 1, lane == leader ? 1 : 0);
    });
    return true;
  }
  default:
    error = "unknown warp collective kind " + std::to_string(kind);
    return false;
  }
}
