//===- LaunchParams.cpp - Fill the launch parameters of passes ---*- C++ -*-===//

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
    return llvm::createStringError(
        "kernel '" + k.name + "': the parameter buffer has " +
        std::to_string(user.size()) + " bytes, the kernel's own parameters "
        "take " + std::to_string(userSize));
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
