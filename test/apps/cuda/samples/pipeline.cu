//===- pipeline.cu - A CUDA-samples-style program -------------------------===//
//
// Threads of one block that wait for each other without a barrier, as
// warp-specialised kernels do:
//   - a producer warp fills a 4-slot ring buffer in shared memory and a
//     consumer warp drains it, each side spinning on a volatile slot
//     counter the other side advances (the producer runs after the consumer
//     in thread order, so a one-thread-after-another executor would spin);
//   - a chained scan: block b waits (on an acquire load of a flag) for
//     block b-1's running total, as single-pass scans do;
//   - cooperative groups' tiled_partition<64>, whose sync spins on the
//     block's reserved shared memory.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cooperative_groups.h>
#include <cstdio>
#include <vector>
#define APP_NAME "sample_pipeline"
#include "../CudaApp.h"

namespace cg = cooperative_groups;

constexpr int SLOTS = 4;

// Warp 0 consumes, warp 1 produces: chunk c of 32 values goes through slot
// c % SLOTS. `produced`/`consumed` count chunks; the producer waits while
// the ring is full, the consumer while it is empty.
__global__ void ring(const float *in, float *out, int chunks) {
  __shared__ float buf[SLOTS][32];
  __shared__ volatile int produced, consumed;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (threadIdx.x == 0)
    produced = consumed = 0;
  __syncthreads();
  const float *src = in + blockIdx.x * chunks * 32;
  float *dst = out + blockIdx.x * chunks * 32;
  for (int c = 0; c < chunks; ++c) {
    if (warp == 1) {
      while (produced - consumed == SLOTS) {
      }
      buf[c % SLOTS][lane] = src[c * 32 + lane] * 2.0f + 1.0f;
      __threadfence_block();
      __syncwarp();
      if (lane == 0)
        produced = c + 1;
    } else {
      while (produced <= c) {
      }
      __threadfence_block();
      dst[c * 32 + lane] = buf[c % SLOTS][lane] + float(c);
      __syncwarp();
      if (lane == 0)
        consumed = c + 1;
    }
    __syncwarp();
  }
}

__device__ int loadAcquire(const int *p) {
  int v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
               : "=r"(v)
               : "l"(p)
               : "memory");
  return v;
}

__device__ void storeRelease(int *p, int v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v)
               : "memory");
}

// Each block sums its 256 values, then thread 0 waits for the previous
// block's inclusive total, publishes its own, and every thread writes its
// block's exclusive prefix.
__global__ void chained(const int *in, int *prefix, int *totals, int *ready) {
  __shared__ int sum, before;
  if (threadIdx.x == 0)
    sum = 0;
  __syncthreads();
  atomicAdd(&sum, in[blockIdx.x * blockDim.x + threadIdx.x]);
  __syncthreads();
  if (threadIdx.x == 0) {
    int b = blockIdx.x, p = 0;
    if (b > 0) {
      while (loadAcquire(&ready[b - 1]) == 0) {
      }
      p = totals[b - 1];
    }
    totals[b] = p + sum;
    storeRelease(&ready[b], 1);
    before = p;
  }
  __syncthreads();
  prefix[blockIdx.x * blockDim.x + threadIdx.x] = before;
}

// Tiles of 64 reverse their values through shared memory.
__global__ void tiles(const int *in, int *out) {
  __shared__ int s[256];
  cg::thread_block block = cg::this_thread_block();
  auto tile = cg::tiled_partition<64>(block);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = in[i];
  tile.sync();
  int r = tile.thread_rank();
  out[i] = s[threadIdx.x - r + 63 - r] + 1000 * tile.meta_group_rank();
}

int main() {
  int bad = 0;
  // The ring: 3 blocks of 2 warps, 10 chunks each.
  const int blocks = 3, chunks = 10, n = blocks * chunks * 32;
  std::vector<float> in(n), out(n);
  for (int i = 0; i < n; ++i)
    in[i] = float(i % 97) * 0.25f;
  float *dIn, *dOut;
  CHECK(cudaMalloc(&dIn, n * 4));
  CHECK(cudaMalloc(&dOut, n * 4));
  CHECK(cudaMemcpy(dIn, in.data(), n * 4, cudaMemcpyHostToDevice));
  ring<<<blocks, 64>>>(dIn, dOut, chunks);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), dOut, n * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    float want = in[i] * 2.0f + 1.0f + float((i / 32) % chunks);
    if (out[i] != want && bad++ < 10)
      std::printf("ring[%d] = %g, want %g\n", i, out[i], want);
  }

  // The chained scan: 8 blocks of 256.
  const int sb = 8, sn = sb * 256;
  std::vector<int> v(sn), prefix(sn), totals(sb);
  for (int i = 0; i < sn; ++i)
    v[i] = (i * 7) % 13;
  int *dV, *dPrefix, *dTotals, *dReady;
  CHECK(cudaMalloc(&dV, sn * 4));
  CHECK(cudaMalloc(&dPrefix, sn * 4));
  CHECK(cudaMalloc(&dTotals, sb * 4));
  CHECK(cudaMalloc(&dReady, sb * 4));
  CHECK(cudaMemcpy(dV, v.data(), sn * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dReady, 0, sb * 4));
  chained<<<sb, 256>>>(dV, dPrefix, dTotals, dReady);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(prefix.data(), dPrefix, sn * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(totals.data(), dTotals, sb * 4, cudaMemcpyDeviceToHost));
  int running = 0;
  for (int b = 0; b < sb; ++b) {
    for (int t = 0; t < 256; ++t)
      if (prefix[b * 256 + t] != running && bad++ < 10)
        std::printf("chained[%d][%d] = %d, want %d\n", b, t,
                    prefix[b * 256 + t], running);
    for (int t = 0; t < 256; ++t)
      running += v[b * 256 + t];
    if (totals[b] != running && bad++ < 10)
      std::printf("total[%d] = %d, want %d\n", b, totals[b], running);
  }

  // Tiles of 64: 2 blocks of 256.
  const int tn = 512;
  std::vector<int> tin(tn), tout(tn);
  for (int i = 0; i < tn; ++i)
    tin[i] = i * 3;
  int *dTin, *dTout;
  CHECK(cudaMalloc(&dTin, tn * 4));
  CHECK(cudaMalloc(&dTout, tn * 4));
  CHECK(cudaMemcpy(dTin, tin.data(), tn * 4, cudaMemcpyHostToDevice));
  tiles<<<2, 256>>>(dTin, dTout);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(tout.data(), dTout, tn * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < tn; ++i) {
    int t = i % 256, r = t % 64, g = t / 64;
    int want = tin[i - t + t - r + 63 - r] + 1000 * g;
    if (tout[i] != want && bad++ < 10)
      std::printf("tiles[%d] = %d, want %d\n", i, tout[i], want);
  }

  std::printf("pipeline: ring %d values, chained scan total %d, %d "
              "mismatches\n",
              n, running, bad);
  EXPECT(bad == 0, "%d mismatches", bad);
  app::pass();
  return 0;
}
