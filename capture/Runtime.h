//===- Runtime.h - Internals of Wooly's libcudart ---------------*- C++ -*-===//
//
// Shared by Runtime.cpp (registration, launches, memory, streams) and
// Graph.cpp (stream capture and graphs).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_CAPTURE_RUNTIME_H
#define WOOLY_CAPTURE_RUNTIME_H

#include "CudaAbi.h"

/// An exported runtime entry point.
#define RT_API extern "C" __attribute__((visibility("default")))
/// Returns the runtime error of a failed driver call (recorded as the
/// thread's last error).
#define RETURN_IF(r)                                                           \
  do {                                                                         \
    ::wooly::cuabi::CUresult r_ = (r);                                         \
    if (r_ != ::wooly::cuabi::CUDA_SUCCESS)                                    \
      return fromDriver(r_);                                                   \
  } while (0)
/// Opens the session on first use, or returns why it cannot be opened.
#define INIT()                                                                 \
  do {                                                                         \
    cudaError_t e_ = ensureInit();                                             \
    if (e_ != ::wooly::cuabi::cudaSuccess)                                     \
      return setError(e_);                                                     \
  } while (0)
/// Exports `name` as another name of `target` (the _ptsz/_ptds variants).
#define WOOLY_ALIAS(name, target)                                              \
  extern "C" __attribute__((visibility("default"), alias(#target))) void name();

namespace wooly::capture {

using cuabi::cudaError_t;
using cuabi::cudaStream_t;
using cuabi::dim3;

/// Records `e` as the thread's last error (unless success) and returns it.
cudaError_t setError(cudaError_t e);
/// setError of the runtime code of a driver result.
cudaError_t fromDriver(cuabi::CUresult r);
/// Opens the session on first use; cudaErrorNoDevice when no server answers.
cudaError_t ensureInit();
/// The driver function of a kernel handle or host stub, loading its module
/// on first use (cudaErrorInvalidDeviceFunction when `func` is neither).
cudaError_t resolveFunction(const void *func, cuabi::CUfunction &fn);
/// A launch in stream order (captured when `stream` is capturing);
/// `cooperative`: cudaLaunchCooperativeKernel's.
cudaError_t launch(const void *func, dim3 grid, dim3 block, void **args,
                   size_t shared, cudaStream_t stream,
                   bool cooperative = false);
cudaError_t memcpy(void *dst, const void *src, size_t bytes,
                   cuabi::cudaMemcpyKind kind, cudaStream_t stream, bool async);
cudaError_t memset(void *dst, int value, size_t bytes, cudaStream_t stream,
                   bool async);

// Stream capture (Graph.cpp). `isCapturing` is cheap when nothing captures.
bool isCapturing(cudaStream_t stream);
cudaError_t captureKernel(cudaStream_t stream, const void *func,
                          cuabi::CUfunction fn, dim3 grid, dim3 block,
                          void **args, size_t shared);
cudaError_t captureMemcpy(cudaStream_t stream, void *dst, const void *src,
                          size_t bytes, cuabi::cudaMemcpyKind kind);
cudaError_t captureMemset(cudaStream_t stream, void *dst, unsigned value,
                          unsigned elementSize, size_t width, size_t height,
                          size_t pitch);
cudaError_t captureHost(cudaStream_t stream, cuabi::cudaHostFn_t fn,
                        void *data);
cudaError_t captureEventRecord(cudaStream_t stream, cuabi::cudaEvent_t event);
cudaError_t captureEventWait(cudaStream_t stream, cuabi::cudaEvent_t event);
/// Whether `event` was recorded by a capture still in progress (another
/// stream waiting for it would join the capture, which is not supported).
bool recordedByCapture(cuabi::cudaEvent_t event);
/// Drops every capture in progress (cudaDeviceReset).
void forgetGraphs();

// Graph memory: allocations of memory nodes (cudaMallocAsync in a capture,
// cudaGraphAddMemAllocNode), which live as long as their graph, its copies
// and the execs made from them (Graph.cpp, "Graph memory").
/// Adds an allocation node for `ptr` (`bytes`, allocated by the caller) to
/// the capture of `stream`; the graph owns it from then on.
cudaError_t captureMemAlloc(cudaStream_t stream, void *ptr, size_t bytes);
/// Adds a free node of `ptr` to the capture of `stream` (memory its graph
/// allocated: other memory is not supported yet).
cudaError_t captureMemFree(cudaStream_t stream, void *ptr);
/// `ptr` is no graph's any more: the program frees it itself.
void forgetGraphMemory(void *ptr);
/// Allocates `bytes` as cudaMallocAsync does from `pool` (the current one
/// where null), and frees such an allocation without touching the calling
/// thread's last error (Runtime.cpp).
cudaError_t allocateForGraph(void **ptr, size_t bytes);
void freeGraphMemory(void *ptr);

} // namespace wooly::capture

#endif // WOOLY_CAPTURE_RUNTIME_H
