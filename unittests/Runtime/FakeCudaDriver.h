//===- FakeCudaDriver.h - What the stand-in CUDA driver records -*- C++ -*-===//
//
// Shared by FakeCudaDriver.cpp (the stand-in libcuda.so.1) and the tests
// that load it (CudaDeviceTest, BackendTest): the record of the last
// cuLaunchKernel, and how a test reads it from the loaded driver.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_UNITTESTS_RUNTIME_FAKECUDADRIVER_H
#define WOOLY_UNITTESTS_RUNTIME_FAKECUDADRIVER_H

#include <dlfcn.h>

#include <cstdint>
#include <vector>

namespace wooly::test {

/// What the last cuLaunchKernel received.
struct FakeLaunch {
  char kernel[64];
  unsigned grid[3], block[3], shared;
  /// The stream it was issued on (streams are numbered from 1 as made).
  int stream;
  std::vector<uint8_t> params;
};

/// The last launch recorded by the stand-in driver at `path`, which the
/// process has already loaded (null if it has not).
inline const FakeLaunch *fakeLastLaunch(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!lib)
    return nullptr;
  auto fn = reinterpret_cast<const FakeLaunch *(*)()>(
      dlsym(lib, "fakeCudaLastLaunch"));
  return fn ? fn() : nullptr;
}

} // namespace wooly::test

#endif // WOOLY_UNITTESTS_RUNTIME_FAKECUDADRIVER_H
