// Hopper's asynchronous data movement (sm_90): TMA-style bulk copies
// (cp.async.bulk) completing on mbarriers, bulk stores and reductions
// completing in bulk groups, elect.sync and stmatrix. Each kernel has a plain
// path for GPUs before sm_90 (__CUDA_ARCH__ < 900) that computes the same.
#include <cuda/barrier>
#include <cuda/ptx>
#include <stdint.h>
namespace ptx = cuda::ptx;

#define TILE 256

// out[i] = in[i] * s, tile by tile (TILE floats): a two-stage pipeline in
// which thread 0 loads the next tile with a bulk copy (mbarrier expect_tx +
// complete_tx) while the block scales the current one, then stores it with
// a bulk copy to global memory (bulk group). blockDim = TILE; any grid.
extern "C" __global__ void bulk_scale(const float* in, float* out, float s, int ntiles) {
#if __CUDA_ARCH__ >= 900
  __shared__ alignas(128) float smem[2][TILE];
  __shared__ alignas(8) uint64_t bar[2];
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar[0], 1);
    ptx::mbarrier_init(&bar[1], 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  int tile = blockIdx.x;
  uint32_t phase[2] = {0, 0};
  int stage = 0;
  if (threadIdx.x == 0 && tile < ntiles) {
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar[0], TILE * 4);
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem[0], in + (size_t)tile * TILE, TILE * 4, &bar[0]);
  }
  for (; tile < ntiles; tile += gridDim.x) {
    int next = tile + gridDim.x;
    if (threadIdx.x == 0 && next < ntiles) {
      ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar[stage ^ 1], TILE * 4);
      ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem[stage ^ 1], in + (size_t)next * TILE, TILE * 4, &bar[stage ^ 1]);
    }
    while (!ptx::mbarrier_try_wait_parity(&bar[stage], phase[stage])) {}
    phase[stage] ^= 1;
    smem[stage][threadIdx.x] *= s;
    ptx::fence_proxy_async(ptx::space_shared);
    __syncthreads();
    if (threadIdx.x == 0) {
      ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, out + (size_t)tile * TILE, smem[stage], TILE * 4);
      ptx::cp_async_bulk_commit_group();
      ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>());
    }
    __syncthreads();
    stage ^= 1;
  }
#else
  for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x)
    out[(size_t)tile * TILE + threadIdx.x] = in[(size_t)tile * TILE + threadIdx.x] * s;
#endif
}

// out[b*128 + i] = in[b*128 + (i + 1) % 128]: each block copies its 128 ints
// to shared memory with cuda::memcpy_async on a cuda::barrier (a bulk copy on
// sm_90) and every thread waits on the barrier. blockDim = 128.
extern "C" __global__ void barrier_rotate(const int* in, int* out) {
  __shared__ alignas(16) int buf[128];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  size_t base = (size_t)blockIdx.x * 128;
  if (threadIdx.x == 0)
    cuda::memcpy_async(buf, in + base, cuda::aligned_size_t<16>(sizeof(int) * 128), bar);
  bar.arrive_and_wait();
  out[base + threadIdx.x] = buf[(threadIdx.x + 1) % 128];
}

// acc[i] += sum over tiles t of in[t*TILE + i]: each block bulk-loads its
// tiles and adds them into acc with cp.reduce.async.bulk (.add.s32, element-
// wise atomic). blockDim = TILE; acc zeroed by the caller.
extern "C" __global__ void bulk_reduce_add(const int* in, int* acc, int ntiles) {
#if __CUDA_ARCH__ >= 900
  __shared__ alignas(128) int smem[TILE];
  __shared__ alignas(8) uint64_t bar;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  uint32_t phase = 0;
  for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
    if (threadIdx.x == 0) {
      ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar, TILE * 4);
      ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem, in + (size_t)tile * TILE, TILE * 4, &bar);
    }
    while (!ptx::mbarrier_try_wait_parity(&bar, phase)) {}
    phase ^= 1;
    __syncthreads();
    if (threadIdx.x == 0) {
      ptx::cp_reduce_async_bulk(ptx::space_global, ptx::space_shared, ptx::op_add, acc, smem, TILE * 4);
      ptx::cp_async_bulk_commit_group();
      ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>());
    }
    __syncthreads();
  }
#else
  for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x)
    atomicAdd(&acc[threadIdx.x], in[(size_t)tile * TILE + threadIdx.x]);
#endif
}

// Per warp: lane l holds words in[w*128 + 4*l + j] (j < 4), two 16-bit
// elements each; stmatrix.x4.trans stores them as four transposed 8x8
// matrices to shared memory, which the warp copies to out[w*256 ...]; the
// lane elect.sync picks writes leader[w]. blockDim = 64 (two warps).
extern "C" __global__ void stmatrix_elect(const uint32_t* in, uint16_t* out, uint32_t* leader) {
  __shared__ alignas(16) uint16_t mats[2][4][8][8];
  unsigned w = threadIdx.x / 32, l = threadIdx.x % 32;
  const uint32_t* src = in + ((size_t)blockIdx.x * 2 + w) * 128 + 4 * l;
  uint32_t r0 = src[0], r1 = src[1], r2 = src[2], r3 = src[3];
#if __CUDA_ARCH__ >= 900
  uint32_t row = (uint32_t)__cvta_generic_to_shared(&mats[w][l / 8][l % 8][0]);
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
               :: "r"(row), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
  uint32_t lead, is;
  asm volatile("{\n\t.reg .pred p;\n\telect.sync %0|p, %2;\n\tselp.u32 %1, 1, 0, p;\n\t}"
               : "=r"(lead), "=r"(is) : "r"(0xffffffffu));
#else
  uint32_t regs[4] = {r0, r1, r2, r3};
  unsigned r = l / 4, c = 2 * (l % 4);
  for (int j = 0; j < 4; ++j) {
    mats[w][j][c][r] = (uint16_t)regs[j];
    mats[w][j][c + 1][r] = (uint16_t)(regs[j] >> 16);
  }
  uint32_t lead = 0, is = l == 0;
#endif
  __syncwarp();
  if (is) leader[blockIdx.x * 2 + w] = lead + 100 * (l + 1);
  uint16_t* dst = out + ((size_t)blockIdx.x * 2 + w) * 256;
  for (int i = l; i < 256; i += 32) dst[i] = (&mats[w][0][0][0])[i];
}
