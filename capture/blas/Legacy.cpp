//===- Legacy.cpp - cuBLAS's legacy API in the drop-in libcublas ----------===//
//
// The legacy API (cublas.h: no handle, cublasInit first) is not implemented:
// cublasInit, like every other legacy function, is a stub of Stubs.cpp that
// returns CUBLAS_STATUS_NOT_SUPPORTED. Stubs return an int, which is wrong
// for the legacy functions that return a value of another type: those are
// here, with their return types, returning 0 (an index of 0 says "none",
// as for an empty vector) after the same message.
//
//===----------------------------------------------------------------------===//

#include "Log.h"

namespace {
struct Complex {
  float x, y;
};
struct DoubleComplex {
  double x, y;
};
} // namespace

// The parameters are never read: a definition without them is a valid
// stand-in in the x86-64 ABI, whatever the caller passes.
#define WOOLY_LEGACY(type, name)                                               \
  extern "C" __attribute__((visibility("default"))) type name() {              \
    wooly::capture::logUnsupportedOnce(                                        \
        #name, "the legacy cuBLAS API (cublas.h) is not implemented: use "     \
               "cublas_v2.h");                                                 \
    return type{};                                                             \
  }

WOOLY_LEGACY(float, cublasSnrm2)
WOOLY_LEGACY(double, cublasDnrm2)
WOOLY_LEGACY(float, cublasScnrm2)
WOOLY_LEGACY(double, cublasDznrm2)
WOOLY_LEGACY(float, cublasSdot)
WOOLY_LEGACY(double, cublasDdot)
WOOLY_LEGACY(Complex, cublasCdotu)
WOOLY_LEGACY(Complex, cublasCdotc)
WOOLY_LEGACY(DoubleComplex, cublasZdotu)
WOOLY_LEGACY(DoubleComplex, cublasZdotc)
WOOLY_LEGACY(int, cublasIsamax)
WOOLY_LEGACY(int, cublasIdamax)
WOOLY_LEGACY(int, cublasIcamax)
WOOLY_LEGACY(int, cublasIzamax)
WOOLY_LEGACY(int, cublasIsamin)
WOOLY_LEGACY(int, cublasIdamin)
WOOLY_LEGACY(int, cublasIcamin)
WOOLY_LEGACY(int, cublasIzamin)
WOOLY_LEGACY(float, cublasSasum)
WOOLY_LEGACY(double, cublasDasum)
WOOLY_LEGACY(float, cublasScasum)
WOOLY_LEGACY(double, cublasDzasum)
