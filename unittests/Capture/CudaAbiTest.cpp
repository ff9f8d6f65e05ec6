//===- CudaAbiTest.cpp - capture/CudaAbi.h against NVIDIA's headers -------===//
//
// The capture libraries declare the CUDA 13 ABI themselves (they must build
// without a toolkit). Where the toolkit's headers are found, this test checks
// every structure's size and field offsets and every error code's value
// against them, at compile time; the test below only reports which case was
// built.
//
//===----------------------------------------------------------------------===//

#include "CudaAbi.h"

#include "gtest/gtest.h"

#include <cstddef>

#if WOOLY_HAVE_CUDA_HEADERS
// Flags that NVIDIA's headers define as macros: ours are read before those
// headers are included (the macros would replace their names).
namespace {
namespace ours = wooly::cuabi;
constexpr unsigned kOurFlags[] = {ours::cudaArrayLayered,
                                  ours::cudaArraySurfaceLoadStore,
                                  ours::cudaArrayCubemap,
                                  ours::cudaArrayTextureGather,
                                  ours::CU_TRSF_READ_AS_INTEGER,
                                  ours::CU_TRSF_NORMALIZED_COORDINATES,
                                  ours::CU_TRSF_SRGB,
                                  ours::CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION,
                                  ours::CU_TRSF_SEAMLESS_CUBEMAP};
} // namespace

#include <cuda.h>
#include <cuda_runtime_api.h>

namespace wabi = wooly::cuabi;

#define SAME_LAYOUT(T) static_assert(sizeof(wabi::T) == sizeof(::T), #T);
#define SAME_FIELD(T, F)                                                       \
  static_assert(offsetof(wabi::T, F) == offsetof(::T, F), #T "." #F);

SAME_LAYOUT(cudaDeviceProp)
SAME_FIELD(cudaDeviceProp, totalGlobalMem)
SAME_FIELD(cudaDeviceProp, sharedMemPerBlock)
SAME_FIELD(cudaDeviceProp, warpSize)
SAME_FIELD(cudaDeviceProp, maxThreadsPerBlock)
SAME_FIELD(cudaDeviceProp, maxThreadsDim)
SAME_FIELD(cudaDeviceProp, maxGridSize)
SAME_FIELD(cudaDeviceProp, totalConstMem)
SAME_FIELD(cudaDeviceProp, major)
SAME_FIELD(cudaDeviceProp, minor)
SAME_FIELD(cudaDeviceProp, multiProcessorCount)
SAME_FIELD(cudaDeviceProp, surfaceAlignment)
SAME_FIELD(cudaDeviceProp, l2CacheSize)
SAME_FIELD(cudaDeviceProp, maxThreadsPerMultiProcessor)
SAME_FIELD(cudaDeviceProp, sharedMemPerMultiprocessor)
SAME_FIELD(cudaDeviceProp, regsPerMultiprocessor)
SAME_FIELD(cudaDeviceProp, sharedMemPerBlockOptin)
SAME_FIELD(cudaDeviceProp, maxBlocksPerMultiProcessor)
SAME_FIELD(cudaDeviceProp, reservedSharedMemPerBlock)
SAME_FIELD(cudaDeviceProp, hostNumaMultinodeIpcSupported)
SAME_FIELD(cudaDeviceProp, reserved)

SAME_LAYOUT(cudaFuncAttributes)
SAME_FIELD(cudaFuncAttributes, maxThreadsPerBlock)
SAME_FIELD(cudaFuncAttributes, numRegs)
SAME_FIELD(cudaFuncAttributes, maxDynamicSharedSizeBytes)
SAME_FIELD(cudaFuncAttributes, nonPortableClusterSizeAllowed)

SAME_LAYOUT(cudaPointerAttributes)
SAME_FIELD(cudaPointerAttributes, devicePointer)
SAME_FIELD(cudaPointerAttributes, hostPointer)

SAME_LAYOUT(cudaChannelFormatDesc)
SAME_LAYOUT(cudaExtent)
SAME_LAYOUT(cudaPos)
SAME_LAYOUT(cudaPitchedPtr)
SAME_LAYOUT(cudaMemcpy3DParms)
SAME_FIELD(cudaMemcpy3DParms, dstArray)
SAME_FIELD(cudaMemcpy3DParms, extent)
SAME_FIELD(cudaMemcpy3DParms, kind)
SAME_LAYOUT(cudaResourceDesc)
SAME_FIELD(cudaResourceDesc, res.pitch2D.desc)
SAME_FIELD(cudaResourceDesc, res.pitch2D.pitchInBytes)
SAME_FIELD(cudaResourceDesc, res.linear.sizeInBytes)
SAME_FIELD(cudaResourceDesc, flags)
SAME_LAYOUT(cudaTextureDesc)
SAME_FIELD(cudaTextureDesc, borderColor)
SAME_FIELD(cudaTextureDesc, normalizedCoords)
SAME_FIELD(cudaTextureDesc, seamlessCubemap)
SAME_LAYOUT(CUDA_ARRAY_DESCRIPTOR)
SAME_FIELD(CUDA_ARRAY_DESCRIPTOR, NumChannels)
SAME_LAYOUT(CUDA_ARRAY3D_DESCRIPTOR)
SAME_FIELD(CUDA_ARRAY3D_DESCRIPTOR, Flags)
SAME_LAYOUT(CUDA_MEMCPY2D)
SAME_FIELD(CUDA_MEMCPY2D, dstMemoryType)
SAME_FIELD(CUDA_MEMCPY2D, WidthInBytes)
SAME_LAYOUT(CUDA_MEMCPY3D)
SAME_FIELD(CUDA_MEMCPY3D, srcHeight)
SAME_FIELD(CUDA_MEMCPY3D, dstArray)
SAME_FIELD(CUDA_MEMCPY3D, Depth)
SAME_LAYOUT(CUDA_RESOURCE_DESC)
SAME_FIELD(CUDA_RESOURCE_DESC, res.linear.sizeInBytes)
SAME_FIELD(CUDA_RESOURCE_DESC, res.pitch2D.pitchInBytes)
SAME_FIELD(CUDA_RESOURCE_DESC, flags)
SAME_LAYOUT(CUDA_TEXTURE_DESC)
SAME_FIELD(CUDA_TEXTURE_DESC, flags)
SAME_FIELD(CUDA_TEXTURE_DESC, borderColor)
SAME_LAYOUT(cudaLaunchAttribute)
SAME_FIELD(cudaLaunchAttribute, val)
SAME_LAYOUT(cudaLaunchConfig_t)
SAME_FIELD(cudaLaunchConfig_t, dynamicSmemBytes)
SAME_FIELD(cudaLaunchConfig_t, stream)
SAME_FIELD(cudaLaunchConfig_t, attrs)
SAME_FIELD(cudaLaunchConfig_t, numAttrs)

SAME_LAYOUT(cudaKernelNodeParams)
SAME_FIELD(cudaKernelNodeParams, gridDim)
SAME_FIELD(cudaKernelNodeParams, blockDim)
SAME_FIELD(cudaKernelNodeParams, sharedMemBytes)
SAME_FIELD(cudaKernelNodeParams, kernelParams)
SAME_FIELD(cudaKernelNodeParams, extra)
SAME_LAYOUT(cudaMemsetParams)
SAME_FIELD(cudaMemsetParams, value)
SAME_FIELD(cudaMemsetParams, elementSize)
SAME_FIELD(cudaMemsetParams, width)
SAME_FIELD(cudaMemsetParams, height)
SAME_LAYOUT(cudaHostNodeParams)
static_assert(sizeof(wabi::dim3) == sizeof(::dim3), "dim3");

// The driver's launch configuration (names differ: CUlaunchConfig_st).
static_assert(sizeof(wabi::CUlaunchConfig) == sizeof(::CUlaunchConfig), "");
static_assert(offsetof(wabi::CUlaunchConfig, hStream) ==
                  offsetof(::CUlaunchConfig, hStream),
              "");
static_assert(offsetof(wabi::CUlaunchConfig, attrs) ==
                  offsetof(::CUlaunchConfig, attrs),
              "");
static_assert(sizeof(wabi::CUlaunchAttribute) == sizeof(::CUlaunchAttribute),
              "");

// Every error code.
#define WOOLY_CUDA_ERROR(name, value)                                          \
  static_assert(static_cast<int>(::name) == value, #name);
#include "CudaErrors.def"
#undef WOOLY_CUDA_ERROR
#define WOOLY_CU_RESULT(name, value)                                           \
  static_assert(static_cast<int>(::name) == value, #name);
#include "CuResults.def"
#undef WOOLY_CU_RESULT

// Attributes and enums the libraries answer.
static_assert(wabi::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ==
                  ::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
              "");
static_assert(wabi::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN ==
                  ::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
              "");
static_assert(wabi::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR ==
                  ::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
              "");
static_assert(wabi::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ==
                  (int)::cudaDevAttrComputeCapabilityMajor,
              "");
static_assert(wabi::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ==
                  ::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              "");
static_assert(int(wabi::CU_LIMIT_MALLOC_HEAP_SIZE) ==
                      int(::CU_LIMIT_MALLOC_HEAP_SIZE) &&
                  int(wabi::CU_LIMIT_PERSISTING_L2_CACHE_SIZE) ==
                      int(::CU_LIMIT_PERSISTING_L2_CACHE_SIZE) &&
                  int(wabi::CU_LIMIT_STACK_SIZE) == int(::cudaLimitStackSize) &&
                  int(wabi::CU_LIMIT_MALLOC_HEAP_SIZE) ==
                      int(::cudaLimitMallocHeapSize),
              "CUlimit and cudaLimit share their numbers");
SAME_LAYOUT(cudaMemcpy3DPeerParms);
SAME_FIELD(cudaMemcpy3DPeerParms, srcDevice);
SAME_FIELD(cudaMemcpy3DPeerParms, dstDevice);
SAME_FIELD(cudaMemcpy3DPeerParms, extent);
SAME_LAYOUT(cudaMemPoolProps);
SAME_FIELD(cudaMemPoolProps, location);
SAME_FIELD(cudaMemPoolProps, maxSize);
SAME_FIELD(cudaMemPoolProps, usage);
SAME_LAYOUT(cudaMemAccessDesc);
SAME_FIELD(cudaMemAccessDesc, flags);
static_assert(int(wabi::cudaMemPoolAttrReleaseThreshold) ==
                  (int)::cudaMemPoolAttrReleaseThreshold,
              "");
static_assert(int(wabi::cudaMemPoolAttrUsedMemHigh) ==
                  (int)::cudaMemPoolAttrUsedMemHigh,
              "");
static_assert(int(wabi::cudaMemPoolReuseAllowInternalDependencies) ==
                  (int)::cudaMemPoolReuseAllowInternalDependencies,
              "");
static_assert(wabi::cudaMemAllocationTypePinned ==
                  (int)::cudaMemAllocationTypePinned,
              "");
static_assert(wabi::cudaMemLocationTypeDevice ==
                  (int)::cudaMemLocationTypeDevice,
              "");
static_assert(wabi::cudaMemAccessFlagsProtReadWrite ==
                  (int)::cudaMemAccessFlagsProtReadWrite,
              "");
static_assert(int(wabi::cudaLimitStackSize) == (int)::cudaLimitStackSize, "");
static_assert(int(wabi::cudaLimitPrintfFifoSize) ==
                  (int)::cudaLimitPrintfFifoSize,
              "");
static_assert(int(wabi::cudaLimitMallocHeapSize) ==
                  (int)::cudaLimitMallocHeapSize,
              "");
static_assert(wabi::cudaFuncAttributeMaxDynamicSharedMemorySize ==
                  (int)::cudaFuncAttributeMaxDynamicSharedMemorySize,
              "");
static_assert(wabi::CU_POINTER_ATTRIBUTE_MEMORY_TYPE ==
                  ::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
              "");
static_assert(wabi::cudaLaunchAttributeCooperative ==
                  (int)::cudaLaunchAttributeCooperative,
              "");
static_assert(wabi::cudaLaunchAttributeClusterDimension ==
                  (int)::cudaLaunchAttributeClusterDimension,
              "");
static_assert(wabi::cudaLaunchAttributeProgrammaticStreamSerialization ==
                  (int)::cudaLaunchAttributeProgrammaticStreamSerialization,
              "");
static_assert(wabi::cudaLaunchAttributeMemSyncDomain ==
                  (int)::cudaLaunchAttributeMemSyncDomain,
              "");
static_assert(wabi::cudaLaunchAttributePreferredSharedMemoryCarveout ==
                  (int)::cudaLaunchAttributePreferredSharedMemoryCarveout,
              "");
static_assert(wabi::cudaLaunchAttributeNvlinkUtilCentricScheduling ==
                  (int)::cudaLaunchAttributeNvlinkUtilCentricScheduling,
              "");
static_assert(wabi::cudaLaunchAttributePriority ==
                  (int)::cudaLaunchAttributePriority,
              "");
static_assert(wabi::cudaGraphNodeTypeEventRecord ==
                  (int)::cudaGraphNodeTypeEventRecord,
              "");
// Arrays, copies and texture objects.
static_assert(kOurFlags[0] == cudaArrayLayered &&
                  kOurFlags[0] == CUDA_ARRAY3D_LAYERED &&
                  kOurFlags[1] == cudaArraySurfaceLoadStore &&
                  kOurFlags[1] == CUDA_ARRAY3D_SURFACE_LDST &&
                  kOurFlags[2] == cudaArrayCubemap &&
                  kOurFlags[2] == CUDA_ARRAY3D_CUBEMAP &&
                  kOurFlags[3] == cudaArrayTextureGather &&
                  kOurFlags[3] == CUDA_ARRAY3D_TEXTURE_GATHER,
              "array flags");
static_assert(kOurFlags[4] == CU_TRSF_READ_AS_INTEGER &&
                  kOurFlags[5] == CU_TRSF_NORMALIZED_COORDINATES &&
                  kOurFlags[6] == CU_TRSF_SRGB &&
                  kOurFlags[7] == CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION &&
                  kOurFlags[8] == CU_TRSF_SEAMLESS_CUBEMAP,
              "texture flags");
#define SAME_VALUE(ours, theirs)                                               \
  static_assert(int(wabi::ours) == int(theirs), #ours);
SAME_VALUE(cudaResourceTypePitch2D, ::cudaResourceTypePitch2D)
SAME_VALUE(cudaResourceTypePitch2D, CU_RESOURCE_TYPE_PITCH2D)
SAME_VALUE(cudaResourceTypeMipmappedArray, CU_RESOURCE_TYPE_MIPMAPPED_ARRAY)
SAME_VALUE(cudaChannelFormatKindFloat, ::cudaChannelFormatKindFloat)
SAME_VALUE(CU_AD_FORMAT_UNSIGNED_INT32, ::CU_AD_FORMAT_UNSIGNED_INT32)
SAME_VALUE(CU_AD_FORMAT_SIGNED_INT32, ::CU_AD_FORMAT_SIGNED_INT32)
SAME_VALUE(CU_AD_FORMAT_HALF, ::CU_AD_FORMAT_HALF)
SAME_VALUE(CU_AD_FORMAT_FLOAT, ::CU_AD_FORMAT_FLOAT)
SAME_VALUE(CU_MEMORYTYPE_ARRAY, ::CU_MEMORYTYPE_ARRAY)
static_assert(wabi::kCudaVersion == CUDA_VERSION, "");
#endif

TEST(CudaAbi, CheckedAgainstToolkitHeaders) {
#if WOOLY_HAVE_CUDA_HEADERS
  EXPECT_EQ(wabi::kLaunchParamEnd, CU_LAUNCH_PARAM_END);
  EXPECT_EQ(wabi::kLaunchParamBufferPointer, CU_LAUNCH_PARAM_BUFFER_POINTER);
  EXPECT_EQ(wabi::kLaunchParamBufferSize, CU_LAUNCH_PARAM_BUFFER_SIZE);
  EXPECT_EQ(wabi::kStreamLegacy, cudaStreamLegacy);
  EXPECT_EQ(wabi::kStreamPerThread, cudaStreamPerThread);
#else
  GTEST_SKIP() << "no CUDA toolkit headers: layouts not checked";
#endif
}
