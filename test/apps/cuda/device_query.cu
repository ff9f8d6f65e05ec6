//===- device_query.cu - What the runtime says about the device -----------===//
//
// The deviceQuery sample in small: device count and selection (an ordinal
// past the last device is refused), cudaGetDeviceProperties cross-checked
// with cudaDeviceGetAttribute, cudaMemGetInfo, the runtime and driver
// versions, and cudaDeviceReset at the end.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "device_query"
#include "CudaApp.h"

/// Fails unless attribute `attr` of device 0 equals `expected`.
static void expectAttribute(cudaDeviceAttr attr, const char *name,
                            long long expected) {
  int value = 0;
  CHECK(cudaDeviceGetAttribute(&value, attr, 0));
  EXPECT(
      value == expected,
      "cudaDeviceGetAttribute(%s) = %d, but cudaGetDeviceProperties says %lld",
      name, value, expected);
}

int main() {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  std::printf("device count = %d\n", count);
  EXPECT(count >= 1, "cudaGetDeviceCount gave %d", count);

  int device = -1;
  CHECK(cudaGetDevice(&device));
  EXPECT(device == 0, "the current device is %d, expected 0", device);
  CHECK(cudaSetDevice(0));

  // One past the last device (1 when there is one GPU) must be refused.
  cudaError_t err = cudaSetDevice(count);
  EXPECT(err == cudaErrorInvalidDevice, "cudaSetDevice(%d) returned %s", count,
         cudaGetErrorName(err));
  err = cudaGetLastError();
  EXPECT(err == cudaErrorInvalidDevice,
         "cudaGetLastError after cudaSetDevice(%d) returned %s", count,
         cudaGetErrorName(err));
  std::printf("cudaSetDevice(%d): cudaErrorInvalidDevice\n", count);
  CHECK(cudaGetDevice(&device));
  EXPECT(device == 0, "the current device is %d after a failed cudaSetDevice",
         device);

  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device 0: %s\n", prop.name);
  std::printf("  compute capability %d.%d, %d SMs\n", prop.major, prop.minor,
              prop.multiProcessorCount);
  std::printf("  totalGlobalMem = %zu MiB, sharedMemPerBlock = %zu bytes\n",
              prop.totalGlobalMem >> 20, prop.sharedMemPerBlock);
  std::printf("  warpSize = %d, maxThreadsPerBlock = %d\n", prop.warpSize,
              prop.maxThreadsPerBlock);
  EXPECT(prop.name[0] != '\0', "the device has no name");
  EXPECT(prop.warpSize == 32, "warpSize = %d", prop.warpSize);
  EXPECT(prop.major * 10 + prop.minor >= 75,
         "compute capability %d.%d is below CUDA 13's minimum 7.5", prop.major,
         prop.minor);
  EXPECT(prop.multiProcessorCount > 0, "multiProcessorCount = %d",
         prop.multiProcessorCount);
  EXPECT(prop.maxThreadsPerBlock > 0 && prop.maxThreadsPerBlock <= 1024,
         "maxThreadsPerBlock = %d", prop.maxThreadsPerBlock);
  EXPECT(prop.maxThreadsDim[0] == prop.maxThreadsPerBlock,
         "maxThreadsDim[0] = %d, maxThreadsPerBlock = %d",
         prop.maxThreadsDim[0], prop.maxThreadsPerBlock);
  EXPECT(prop.sharedMemPerBlock >= 48 * 1024, "sharedMemPerBlock = %zu",
         prop.sharedMemPerBlock);
  EXPECT(prop.totalGlobalMem > 0, "totalGlobalMem = 0");

  expectAttribute(cudaDevAttrMultiProcessorCount, "MultiProcessorCount",
                  prop.multiProcessorCount);
  expectAttribute(cudaDevAttrWarpSize, "WarpSize", prop.warpSize);
  expectAttribute(cudaDevAttrMaxThreadsPerBlock, "MaxThreadsPerBlock",
                  prop.maxThreadsPerBlock);
  expectAttribute(cudaDevAttrComputeCapabilityMajor, "ComputeCapabilityMajor",
                  prop.major);
  expectAttribute(cudaDevAttrComputeCapabilityMinor, "ComputeCapabilityMinor",
                  prop.minor);
  expectAttribute(cudaDevAttrMaxSharedMemoryPerBlock, "MaxSharedMemoryPerBlock",
                  static_cast<long long>(prop.sharedMemPerBlock));

  // Texture and surface limits (deviceQuery prints them; programs size
  // their arrays by them): each the attribute's value; on a device with
  // textures (prop.maxTexture1D > 0) at least what every CUDA 13 GPU has.
  expectAttribute(cudaDevAttrMaxTexture1DWidth, "MaxTexture1DWidth",
                  prop.maxTexture1D);
  expectAttribute(cudaDevAttrMaxTexture2DWidth, "MaxTexture2DWidth",
                  prop.maxTexture2D[0]);
  expectAttribute(cudaDevAttrMaxTexture2DHeight, "MaxTexture2DHeight",
                  prop.maxTexture2D[1]);
  expectAttribute(cudaDevAttrMaxTexture3DDepth, "MaxTexture3DDepth",
                  prop.maxTexture3D[2]);
  expectAttribute(cudaDevAttrMaxTexture2DLayeredLayers,
                  "MaxTexture2DLayeredLayers", prop.maxTexture2DLayered[2]);
  expectAttribute(cudaDevAttrMaxSurface2DWidth, "MaxSurface2DWidth",
                  prop.maxSurface2D[0]);
  expectAttribute(cudaDevAttrMaxSurface3DWidth, "MaxSurface3DWidth",
                  prop.maxSurface3D[0]);
  expectAttribute(cudaDevAttrMaxTextureCubemapWidth, "MaxTextureCubemapWidth",
                  prop.maxTextureCubemap);
  std::printf("  textures: 1D=(%d), 2D=(%d, %d), 3D=(%d, %d, %d), "
              "2D layered=(%d, %d) x %d layers, surface 2D=(%d, %d)\n",
              prop.maxTexture1D, prop.maxTexture2D[0], prop.maxTexture2D[1],
              prop.maxTexture3D[0], prop.maxTexture3D[1], prop.maxTexture3D[2],
              prop.maxTexture2DLayered[0], prop.maxTexture2DLayered[1],
              prop.maxTexture2DLayered[2], prop.maxSurface2D[0],
              prop.maxSurface2D[1]);
  if (prop.maxTexture1D > 0) {
    EXPECT(prop.maxTexture1D >= 65536 && prop.maxTexture2D[0] >= 65536 &&
               prop.maxTexture2D[1] >= 32768 && prop.maxTexture3D[0] >= 4096 &&
               prop.maxSurface2D[0] >= 32768 && prop.surfaceAlignment > 0 &&
               prop.texturePitchAlignment > 0,
           "texture limits below any CUDA 13 GPU's");
    size_t linear = 0;
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
    CHECK(cudaDeviceGetTexture1DLinearMaxWidth(&linear, &desc, 0));
    EXPECT(linear >= (size_t(1) << 27), "1D linear texture limit %zu", linear);
  }

  err = cudaGetDeviceProperties(&prop, count);
  EXPECT(err == cudaErrorInvalidDevice,
         "cudaGetDeviceProperties(%d) returned %s", count,
         cudaGetErrorName(err));
  EXPECT(cudaGetLastError() == cudaErrorInvalidDevice,
         "cudaGetLastError did not report cudaGetDeviceProperties(%d)", count);

  size_t freeBytes = 0, totalBytes = 0;
  CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("memory: %zu MiB free of %zu MiB\n", freeBytes >> 20,
              totalBytes >> 20);
  EXPECT(totalBytes > 0 && freeBytes <= totalBytes,
         "cudaMemGetInfo: %zu free of %zu", freeBytes, totalBytes);
  EXPECT(totalBytes <= prop.totalGlobalMem,
         "cudaMemGetInfo total %zu exceeds totalGlobalMem %zu", totalBytes,
         prop.totalGlobalMem);

  int runtimeVersion = 0, driverVersion = 0;
  CHECK(cudaRuntimeGetVersion(&runtimeVersion));
  CHECK(cudaDriverGetVersion(&driverVersion));
  std::printf("runtime version = %d, driver version = %d\n", runtimeVersion,
              driverVersion);
  EXPECT(runtimeVersion / 1000 == CUDART_VERSION / 1000,
         "runtime version %d, but built against %d", runtimeVersion,
         CUDART_VERSION);
  EXPECT(driverVersion >= 13000,
         "driver version %d cannot run a CUDA 13 program", driverVersion);

  // Driver functions looked up through the runtime (as PyTorch does).
  void *entry = nullptr;
  cudaDriverEntryPointQueryResult found;
  CHECK(cudaGetDriverEntryPointByVersion("cuDriverGetVersion", &entry, 12000,
                                         cudaEnableDefault, &found));
  EXPECT(found == cudaDriverEntryPointSuccess && entry,
         "cuDriverGetVersion not found through cudaGetDriverEntryPoint");
  int viaEntry = 0;
  EXPECT(reinterpret_cast<int (*)(int *)>(entry)(&viaEntry) == 0 &&
             viaEntry == driverVersion,
         "cuDriverGetVersion through its entry point gave %d", viaEntry);
  CHECK(cudaGetDriverEntryPointByVersion("cuNoSuchFunction", &entry, 12000,
                                         cudaEnableDefault, &found));
  EXPECT(found == cudaDriverEntryPointSymbolNotFound,
         "a function that does not exist was found");
  std::printf("driver entry point cuDriverGetVersion: %d\n", viaEntry);

  // The PCI address, both ways (NCCL and frameworks map devices by it).
  char bus[32];
  CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));
  int byBus = -1;
  CHECK(cudaDeviceGetByPCIBusId(&byBus, bus));
  EXPECT(byBus == 0, "cudaDeviceGetByPCIBusId(%s) = %d", bus, byBus);
  std::printf("PCI bus id %s is device %d\n", bus, byBus);
  // Device flags read back as set; resetting persisting L2 lines works.
  CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync | cudaDeviceMapHost));
  unsigned flags = 0;
  CHECK(cudaGetDeviceFlags(&flags));
  EXPECT(flags == (cudaDeviceScheduleBlockingSync | cudaDeviceMapHost),
         "cudaGetDeviceFlags = %u", flags);
  EXPECT(cudaSetDeviceFlags(3) == cudaErrorInvalidValue,
         "scheduling flags 3 were accepted");
  cudaGetLastError();
  CHECK(cudaCtxResetPersistingL2Cache());

  CHECK(cudaDeviceReset());
  app::pass();
  return 0;
}
