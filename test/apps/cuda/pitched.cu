//===- pitched.cu - Pitched allocations and 2D copies
//----------------------===//
//
// cudaMallocPitch, cudaMemcpy2D in both directions with a host pitch that
// differs from the device's, cudaMemset2D, a kernel over the rows, and
// cudaPointerGetAttributes / cudaMemcpyDefault on the pointers; then 3D:
// cudaMalloc3D, cudaMemcpy3D, cudaMemset3D of a box and cudaMemset3DAsync.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "pitched"
#include "CudaApp.h"

#include <cmath>
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

  // 3D: cudaMalloc3D, cudaMemcpy3D both ways, cudaMemset3D of a box inside
  // (rows shorter than the pitch: the bytes around it keep their values)
  // and of everything (one memset), in a stream.
  const int w = 13, h = 7, depth = 5;
  cudaExtent extent = make_cudaExtent(w * sizeof(float), h, depth);
  cudaPitchedPtr box;
  CHECK(cudaMalloc3D(&box, extent));
  std::vector<float> cube(w * h * depth), cubeBack(w * h * depth);
  for (int i = 0; i < w * h * depth; ++i)
    cube[i] = float(i);
  cudaMemcpy3DParms in = {};
  in.srcPtr = make_cudaPitchedPtr(cube.data(), w * sizeof(float), w, h);
  in.dstPtr = box;
  in.extent = extent;
  in.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&in));
  cudaPitchedPtr inner = box;
  inner.ptr = static_cast<char *>(box.ptr) + box.pitch * box.ysize + // z 1
              box.pitch * 2 + 3 * sizeof(float);                     // y 2, x 3
  CHECK(cudaMemset3D(inner, 0, make_cudaExtent(4 * sizeof(float), 3, 2)));
  cudaMemcpy3DParms out = {};
  out.srcPtr = box;
  out.dstPtr = make_cudaPitchedPtr(cubeBack.data(), w * sizeof(float), w, h);
  out.extent = extent;
  out.kind = cudaMemcpyDeviceToHost;
  CHECK(cudaMemcpy3D(&out));
  int zeroed = 0;
  for (int z = 0; z < depth; ++z)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        int i = (z * h + y) * w + x;
        bool inside = z >= 1 && z < 3 && y >= 2 && y < 5 && x >= 3 && x < 7;
        zeroed += inside;
        EXPECT(cubeBack[i] == (inside ? 0.0f : cube[i]),
               "3D (%d, %d, %d) = %g after cudaMemset3D of a box", x, y, z,
               cubeBack[i]);
      }
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaMemset3DAsync(box, 0xff, make_cudaExtent(box.pitch, h, depth),
                          stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemcpy3D(&out));
  for (int i = 0; i < w * h * depth; ++i)
    EXPECT(std::isnan(cubeBack[i]), "3D element %d = %g after filling 0xff", i,
           cubeBack[i]);
  std::printf("3D: memset of a %d-element box and of everything\n", zeroed);
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(box.ptr));
  app::pass();
  return 0;
}
