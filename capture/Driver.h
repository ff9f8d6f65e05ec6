//===- Driver.h - What libcudart asks of Wooly's libcuda --------*- C++ -*-===//
//
// The few entry points of Wooly's libcuda.so.1 that are not CUDA's own,
// for Wooly's libcudart.so.13 (exported in a private namespace; see
// capture/libcuda.map).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_CAPTURE_DRIVER_H
#define WOOLY_CAPTURE_DRIVER_H

#include "CudaAbi.h"

#include <cstdint>
#include <string_view>

#define WOOLY_DRIVER_PRIVATE __attribute__((visibility("default")))

namespace wooly::capture {

/// Loads PTX text as a module; `name` is for logs.
WOOLY_DRIVER_PRIVATE cuabi::CUresult driverLoadPtx(std::string_view ptx, std::string_view name,
                              cuabi::CUmodule *module);
/// Whether [ptr, ptr + bytes) is device memory of the session (an allocation
/// or a module variable).
WOOLY_DRIVER_PRIVATE bool driverIsDevicePointer(const void *ptr, size_t bytes);
/// The last call's sequence number (for logs).
WOOLY_DRIVER_PRIVATE uint64_t driverLastSeq();
/// The size of a kernel's parameter buffer (0 for an unknown function).
WOOLY_DRIVER_PRIVATE size_t driverParamBufferSize(cuabi::CUfunction fn);
/// A sentence describing `code` (cuGetErrorString, cudaGetErrorString), or
/// null for an unknown code.
WOOLY_DRIVER_PRIVATE const char *resultDescription(int code);

} // namespace wooly::capture

#endif // WOOLY_CAPTURE_DRIVER_H
