//===- LaunchParams.cpp - Fill the passes' launch parameters ----*- C++ -*-===//

#include "Wooly/Compiler/LaunchParams.h"

#include <algorithm>
#include <cstring>

using namespace wooly;

uint64_t wooly::userParamBufferSize(const KernelInfo &k) {
  uint64_t end = 0;
  for (size_t i = 0; i < k.paramOffsets.size(); ++i)
    if (i >= k.paramRoles.size() || k.paramRoles[i].empty())
      end = std::max(end, k.paramOffsets[i] + k.paramSizes[i]);
  return end;
}

llvm::Expected<std::vector<uint8_t>>
wooly::extendParams(const KernelInfo &k, llvm::ArrayRef<uint8_t> user,
                    const LaunchParamValues &values) {
  uint64_t userSize = userParamBufferSize(k);
  if (user.size() != userSize)
    return llvm::createStringError("kernel '" + k.name +
                                   "': the parameter buffer has " +
                                   std::to_string(user.size()) +
                                   " bytes, the kernel's own parameters "
                                   "take " +
                                   std::to_string(userSize));
  std::vector<uint8_t> buffer(std::max(k.paramBufferSize, userSize), 0);
  std::copy(user.begin(), user.end(), buffer.begin());
  for (size_t i = 0; i < k.paramRoles.size() && i < k.paramOffsets.size();
       ++i) {
    const std::string &role = k.paramRoles[i];
    if (role.empty())
      continue;
    auto it = values.find(role);
    if (it == values.end())
      return llvm::createStringError("kernel '" + k.name +
                                     "': no value for launch parameter '" +
                                     role + "'");
    uint64_t v = it->second;
    uint64_t n = std::min<uint64_t>(k.paramSizes[i], sizeof(v));
    std::memcpy(buffer.data() + k.paramOffsets[i], &v, n); // Little-endian.
  }
  return buffer;
}

LaunchParamValues wooly::constrainValues(const std::array<uint32_t, 3> &g) {
  return {{"virtual_grid_x", g[0]},
          {"virtual_grid_y", g[1]},
          {"virtual_grid_z", g[2]}};
}

LaunchParamValues wooly::sliceValues(const std::array<uint32_t, 3> &grid,
                                     uint32_t begin, uint32_t end,
                                     uint64_t counterAddr, uint64_t flagAddr) {
  LaunchParamValues v = constrainValues(grid);
  v["slice_begin"] = begin;
  v["slice_end"] = end;
  v["slice_counter"] = counterAddr;
  v["preempt_flag"] = flagAddr;
  return v;
}

LaunchParamValues wooly::isolateValues(uint64_t lo, uint64_t hi) {
  uint64_t size = hi > lo ? (hi - lo + 255) / 256 * 256 : 256;
  return {{"isolate_base", lo},
          {"isolate_size", std::max<uint64_t>(size, 256)}};
}
