//===- LaunchParams.h - Fill the launch parameters of passes ---*- C++ -*-===//
//
// The sharing passes append parameters to kernels whose values are chosen
// at launch time (KernelInfo::paramRoles). `extendParams` builds the whole
// parameter buffer from the user's part and values given by role.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_COMPILER_LAUNCHPARAMS_H
#define WOOLY_COMPILER_LAUNCHPARAMS_H

#include "Wooly/Compiler/CompiledModule.h"

#include "llvm/ADT/ArrayRef.h"

#include <array>
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

/// Values of the roles of `wooly-constrain`: the virtual grid is the grid
/// the untransformed kernel would be launched on (`virtual_grid_x/y/z`).
/// Launch the transformed kernel on a 1-D grid of any N physical blocks.
LaunchParamValues constrainValues(const std::array<uint32_t, 3> &grid);

/// Values of the roles of `wooly-slice`: the virtual grid `grid`, virtual
/// blocks [`begin`, `end`) (linear ids), the device address of a u32
/// counter that must be zero before the launch, and the device address of
/// a u32 preemption flag (0: none). After the launch the blocks executed
/// are [begin, begin + min(*counter, end - begin)).
LaunchParamValues sliceValues(const std::array<uint32_t, 3> &grid,
                              uint32_t begin, uint32_t end,
                              uint64_t counterAddr, uint64_t flagAddr = 0);

/// Values of the roles of `wooly-isolate` for a tenant whose memory is the
/// hull [`lo`, `hi`) of its allocations: base `lo`, size rounded up to a
/// multiple of 256 bytes (at least 256, the smallest region the pass
/// accepts).
LaunchParamValues isolateValues(uint64_t lo, uint64_t hi);

} // namespace wooly

#endif // WOOLY_COMPILER_LAUNCHPARAMS_H
