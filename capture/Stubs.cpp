//===- Stubs.cpp - Every CUDA export Wooly does not implement ------------===//
//
// One weak definition per function the real library exports (the .def file
// named by WOOLY_STUBS_DEF): it logs the name once and returns "not
// supported" (801, the same number for cudaErrorNotSupported and
// CUDA_ERROR_NOT_SUPPORTED). The real definitions in Runtime.cpp, Graph.cpp
// and Driver.cpp are strong and win at link time, so each name is exported
// once, and a program never finds a function missing.
//
// Every function in these lists that is not implemented returns an error
// code (cudaError_t, CUresult or cublasStatus_t, an int) in the x86-64
// ABI's return register, so a stub without parameters is a valid
// stand-in; the few that return something else (cudaGetErrorName,
// cudaCreateChannelDesc, the __cuda registration calls, cublasGetStatusName
// and cublasGetCudartVersion, ...) are implemented.
//
//===----------------------------------------------------------------------===//

#include "Log.h"

#define WOOLY_STUB(name, result)                                               \
  extern "C" __attribute__((weak, visibility("default"))) int name() {         \
    wooly::capture::logUnsupportedOnce(#name);                                 \
    return result;                                                             \
  }

#if defined(WOOLY_STUBS_CUDART)
#define WOOLY_CUDART(name) WOOLY_STUB(name, 801)
#include "CudartExports.def"
#elif defined(WOOLY_STUBS_CU)
#define WOOLY_CU(name) WOOLY_STUB(name, 801)
#include "CuExports.def"
#elif defined(WOOLY_STUBS_CUBLAS)
// cublasStatus_t's CUBLAS_STATUS_NOT_SUPPORTED (cuBLAS and cuBLASLt). The
// legacy API's void functions (cublasSgemm without a handle, ...) ignore
// it.
#define WOOLY_CUBLAS(name) WOOLY_STUB(name, 15)
#include "blas/CublasExports.def"
#elif defined(WOOLY_STUBS_CUBLASLT)
#define WOOLY_CUBLASLT(name) WOOLY_STUB(name, 15)
#include "blas/CublasLtExports.def"
#else
#error                                                                         \
    "define WOOLY_STUBS_CUDART, WOOLY_STUBS_CU, WOOLY_STUBS_CUBLAS or WOOLY_STUBS_CUBLASLT"
#endif
