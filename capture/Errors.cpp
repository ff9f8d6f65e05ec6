//===- Errors.cpp - Descriptions of CUDA's error codes --------------------===//
//
// cuGetErrorString and cudaGetErrorString: the runtime's and the driver's
// codes share their numbers, so one table serves both. The sentences are
// Wooly's own.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

namespace wooly::capture {

const char *resultDescription(int code) {
  switch (code) {
  case 0:
    return "no error";
  case 1:
    return "invalid argument";
  case 2:
    return "out of memory";
  case 3:
    return "initialization error";
  case 4:
    return "driver shutting down";
  case 9:
    return "invalid configuration argument";
  case 12:
    return "invalid pitch argument";
  case 13:
    return "invalid device symbol";
  case 17:
    return "invalid device pointer";
  case 21:
    return "invalid copy direction for memcpy";
  case 35:
    return "CUDA driver version is insufficient for CUDA runtime version";
  case 46:
    return "CUDA-capable device(s) is/are busy or unavailable (the Wooly "
           "server cannot be reached, or its device is lost)";
  case 52:
    return "missing launch configuration";
  case 98:
    return "invalid device function";
  case 100:
    return "no CUDA-capable device is detected (no Wooly server answered)";
  case 101:
    return "invalid device ordinal";
  case 200:
    return "device kernel image is invalid";
  case 201:
    return "invalid device context";
  case 209:
    return "no kernel image is available for execution on the device";
  case 218:
    return "a PTX JIT compilation failed";
  case 300:
    return "invalid source";
  case 301:
    return "file not found";
  case 400:
    return "invalid resource handle";
  case 401:
    return "the operation cannot be performed in the present state";
  case 500:
    return "named symbol not found";
  case 600:
    return "device not ready";
  case 700:
    return "an illegal memory access was encountered";
  case 701:
    return "too many resources requested for launch";
  case 702:
    return "the launch timed out and was terminated";
  case 719:
    return "unspecified launch failure";
  case 720:
    return "too many blocks in cooperative launch";
  case 800:
    return "operation not permitted";
  case 801:
    return "operation not supported";
  case 803:
    return "system has unsupported display driver / cuda driver combination";
  case 900:
    return "operation not permitted when stream is capturing";
  case 901:
    return "operation failed due to a previous error during capture";
  case 903:
    return "the capture was not initiated in this stream";
  case 904:
    return "capture was not ended before the stream was used";
  case 906:
    return "operation would make the legacy stream depend on a capturing "
           "blocking stream";
  case 910:
    return "the graph update was not performed because it included changes "
           "which violated constraints specific to instantiated graph update";
  case 999:
    return "unknown error";
  default:
    return nullptr;
  }
}

} // namespace wooly::capture
