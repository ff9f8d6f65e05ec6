//===- symbols.cu - __constant__ and __device__ variables -----------------===//
//
// Module-scope device variables reached through the runtime's symbol API:
// cudaMemcpyToSymbol (whole and at an offset), cudaMemcpyFromSymbol (sync and
// async), cudaGetSymbolAddress + cudaGetSymbolSize, then plain cudaMemcpy on
// that address. A kernel reads the constant bank and the device table and
// counts its threads with atomicAdd on a __device__ counter.
//
//===----------------------------------------------------------------------===//

#define APP_NAME "symbols"
#include "CudaApp.h"

#include <vector>

__constant__ float coeffs[16];
__device__ unsigned int threadCount;
__device__ float table[256];

__global__ void apply(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = in[i] * coeffs[i % 16] + table[i % 256];
    atomicAdd(&threadCount, 1u);
  }
}

__global__ void doubleTable() { table[threadIdx.x] *= 2.0f; }

int main() {
  const int n = 8192;
  std::vector<float> hostCoeffs(16), hostTable(256), in(n), out(n);
  for (int i = 0; i < 16; ++i)
    hostCoeffs[i] = 0.5f * (i + 1);
  for (int i = 0; i < 256; ++i)
    hostTable[i] = float(i % 17);
  for (int i = 0; i < n; ++i)
    in[i] = float(i % 1000);

  // The whole constant array, then its last four entries at an offset.
  CHECK(cudaMemcpyToSymbol(coeffs, hostCoeffs.data(), 16 * sizeof(float)));
  const float tail[4] = {-1.0f, -2.0f, -3.0f, -4.0f};
  CHECK(cudaMemcpyToSymbol(coeffs, tail, sizeof(tail), 12 * sizeof(float),
                           cudaMemcpyHostToDevice));
  for (int i = 0; i < 4; ++i)
    hostCoeffs[12 + i] = tail[i];
  std::vector<float> readBack(16);
  CHECK(cudaMemcpyFromSymbol(readBack.data(), coeffs, 16 * sizeof(float)));
  for (int i = 0; i < 16; ++i)
    EXPECT(readBack[i] == hostCoeffs[i], "coeffs[%d] reads back %g, not %g", i,
           readBack[i], hostCoeffs[i]);

  const unsigned int start = 1000;
  CHECK(cudaMemcpyToSymbol(threadCount, &start, sizeof(start)));

  // The table through its address.
  void *tableAddress = nullptr;
  size_t tableSize = 0;
  CHECK(cudaGetSymbolAddress(&tableAddress, table));
  CHECK(cudaGetSymbolSize(&tableSize, table));
  EXPECT(tableAddress != nullptr, "cudaGetSymbolAddress gave NULL");
  EXPECT(tableSize == 256 * sizeof(float), "table is %zu bytes, expected %zu",
         tableSize, 256 * sizeof(float));
  CHECK(cudaMemcpy(tableAddress, hostTable.data(), tableSize,
                   cudaMemcpyHostToDevice));

  float *dIn, *dOut;
  CHECK(cudaMalloc(&dIn, n * sizeof(float)));
  CHECK(cudaMalloc(&dOut, n * sizeof(float)));
  CHECK(cudaMemcpy(dIn, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  apply<<<n / 128, 128>>>(dIn, dOut, n);
  CHECK(cudaGetLastError());
  CHECK(
      cudaMemcpy(out.data(), dOut, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    float expected = in[i] * hostCoeffs[i % 16] + hostTable[i % 256];
    EXPECT(out[i] == expected, "out[%d] = %g, expected %g", i, out[i],
           expected);
  }

  unsigned int count = 0;
  CHECK(cudaMemcpyFromSymbolAsync(&count, threadCount, sizeof(count), 0,
                                  cudaMemcpyDeviceToHost, 0));
  CHECK(cudaStreamSynchronize(0));
  std::printf("threadCount = %u\n", count);
  EXPECT(count == start + n, "threadCount = %u, expected %u", count, start + n);

  // A kernel writes the table; read it back through the address.
  doubleTable<<<1, 256>>>();
  CHECK(cudaGetLastError());
  std::vector<float> doubled(256);
  CHECK(cudaMemcpy(doubled.data(), tableAddress, tableSize,
                   cudaMemcpyDeviceToHost));
  for (int i = 0; i < 256; ++i)
    EXPECT(doubled[i] == 2 * hostTable[i], "table[%d] = %g, expected %g", i,
           doubled[i], 2 * hostTable[i]);

  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dOut));
  std::printf("out[%d] = %g\n", n - 1, out[n - 1]);
  app::pass();
  return 0;
}
