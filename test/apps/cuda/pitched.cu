//===- pitched.cu - Pitched allocations and 2D copies ----------------------===//
//
// cudaMallocPitch, cudaMemcpy2D in both directions with a host pitch that
// differs from the device's, cudaMemset2D, a kernel over the rows, and
// cudaPointerGetAttributes / cudaMemcpyDefault on the pointers.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "pitched"
#include "CudaApp.h"

#include <vector>

__global__ void addRowIndex(float *base, size_t pitch, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < width && y < height) {
    float *row = reinterpret_cast<float *>(reinterpret_cast<char *>(base) +
                                           y * pitch);
    row[x] += float(y);
  }
}

int main() {
  const int width = 100, height = 37, hostPitchFloats = 128;
  float *d;
  size_t pitch = 0;
  CHECK(cudaMallocPitch(reinterpret_cast<void **>(&d), &pitch,
                        width * sizeof(float), height));
  EXPECT(pitch >= width * sizeof(float), "pitch %zu too small", pitch);
  std::printf("pitch = %zu bytes for rows of %zu\n", pitch,
              width * sizeof(float));

  std::vector<float> host(hostPitchFloats * height, -1.0f);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      host[y * hostPitchFloats + x] = float(x);
  CHECK(cudaMemset2D(d, pitch, 0, pitch, height));
  CHECK(cudaMemcpy2D(d, pitch, host.data(), hostPitchFloats * sizeof(float),
                     width * sizeof(float), height, cudaMemcpyHostToDevice));
  addRowIndex<<<dim3((width + 63) / 64, height), 64>>>(d, pitch, width,
                                                      height);
  CHECK(cudaGetLastError());
  std::vector<float> back(hostPitchFloats * height, -7.0f);
  CHECK(cudaMemcpy2D(back.data(), hostPitchFloats * sizeof(float), d, pitch,
                     width * sizeof(float), height, cudaMemcpyDefault));
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x)
      EXPECT(back[y * hostPitchFloats + x] == float(x + y),
             "(%d, %d) = %g, expected %d", x, y, back[y * hostPitchFloats + x],
             x + y);
    EXPECT(back[y * hostPitchFloats + width] == -7.0f,
           "the copy wrote past the row's width at row %d", y);
  }
  std::printf("back[36][99] = %g\n", back[36 * hostPitchFloats + 99]);

  cudaPointerAttributes attrs;
  CHECK(cudaPointerGetAttributes(&attrs, d));
  EXPECT(attrs.type == cudaMemoryTypeDevice, "device pointer has type %d",
         int(attrs.type));
  CHECK(cudaPointerGetAttributes(&attrs, host.data()));
  EXPECT(attrs.type == cudaMemoryTypeUnregistered,
         "a malloc'd host pointer has type %d", int(attrs.type));
  CHECK(cudaFree(d));
  app::pass();
  return 0;
}
