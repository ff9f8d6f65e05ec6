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
WOOLY_DRIVER_PRIVATE cuabi::CUresult driverLoadPtx(std::string_view ptx,
                                                   std::string_view name,
                                                   cuabi::CUmodule *module);
/// Whether [ptr, ptr + bytes) is device memory of the session (an allocation
/// or a module variable).
WOOLY_DRIVER_PRIVATE bool driverIsDevicePointer(const void *ptr, size_t bytes);
/// The last call's sequence number (for logs).
WOOLY_DRIVER_PRIVATE uint64_t driverLastSeq();
/// The size of a kernel's parameter buffer (0 for an unknown function).
WOOLY_DRIVER_PRIVATE size_t driverParamBufferSize(cuabi::CUfunction fn);
/// One call of a graph kept on the server (see driverGraphCreate).
struct GraphCall {
  enum class Kind {
    Launch,
    Memset,
    CopyDeviceToDevice,
    EventRecord,
    EventWait
  };
  Kind kind = Kind::Launch;
  cuabi::CUfunction fn = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned shared = 0;
  const void *params = nullptr; // the packed parameter buffer
  size_t paramBytes = 0;
  cuabi::CUdeviceptr dst = 0, src = 0;
  size_t bytes = 0;
  unsigned char value = 0;
  cuabi::CUevent event = nullptr;
};
/// Stores `calls` on the server as one graph (checked there at each
/// launch); CUDA_ERROR_NOT_SUPPORTED when the server cannot.
WOOLY_DRIVER_PRIVATE cuabi::CUresult
driverGraphCreate(const GraphCall *calls, size_t count, uint64_t *graph);
/// Replays a stored graph on `stream` (asynchronous: one small call).
WOOLY_DRIVER_PRIVATE cuabi::CUresult driverGraphLaunch(uint64_t graph,
                                                       cuabi::CUstream stream);
WOOLY_DRIVER_PRIVATE cuabi::CUresult driverGraphDestroy(uint64_t graph);
/// A sentence describing `code` (cuGetErrorString, cudaGetErrorString), or
/// null for an unknown code.
WOOLY_DRIVER_PRIVATE const char *resultDescription(int code);

} // namespace wooly::capture

#endif // WOOLY_CAPTURE_DRIVER_H
