//===- LaunchParams.h - Fill the launch parameters of passes -----*- C++ -*-===//
//
// The sharing passes append parameters to kernels whose values are chosen
// at launch time (KernelInfo::paramRoles). `extendParams` builds the whole
// parameter buffer from the user's part and values given by role.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_COMPILER_LAUNCHPARAMS_H
#define WOOLY_COMPILER_LAUNCHPARAMS_H

#include "Wooly/Compiler/Compiler.h"

#include "llvm/ADT/ArrayRef.h"

#include <map>
#include <string>
#include <vector>

namespace wooly {

/// Values of launch parameters by role (e.g. "virtual_grid_x" -> 64).
using LaunchParamValues = std::map<std::string, uint64_t>;

/// Bytes of the user's part of `kernel`'s parameter buffer (the buffer the
/// untransformed kernel takes; appended parameters come after it).
uint64_t userParamBufferSize(const KernelInfo &kernel);

/// Returns the parameter buffer of `kernel`: `userParams` (which must be
/// `userParamBufferSize` bytes), then every appended parameter filled from
/// `values` by its role (little-endian, the parameter's size). A role
/// without a value is an error naming it.
llvm::Expected<std::vector<uint8_t>>
extendParams(const KernelInfo &kernel, llvm::ArrayRef<uint8_t> userParams,
             const LaunchParamValues &values);

} // namespace wooly

#endif // WOOLY_COMPILER_LAUNCHPARAMS_H
