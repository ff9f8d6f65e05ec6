// Cooperative-groups reductions: thread_block, tiled_partition<32>, cg::reduce.
// Integer sums: deterministic.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// out[blockIdx.x] = sum of in[] over the block; tile-level cg::reduce(plus<int>),
// then warp 0 reduces the per-tile partials. blockDim.x must be a multiple of 32, <= 1024.
extern "C" __global__ void cg_block_sum(int n, const int* in, int* out) {
  __shared__ int partial[32];
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  int i = blockIdx.x * blockDim.x + block.thread_rank();
  int v = (i < n) ? in[i] : 0;
  int s = cg::reduce(tile, v, cg::plus<int>());
  if (tile.thread_rank() == 0) partial[tile.meta_group_rank()] = s;
  block.sync();
  if (tile.meta_group_rank() == 0) {
    int p = (tile.thread_rank() < tile.meta_group_size()) ? partial[tile.thread_rank()] : 0;
    p = cg::reduce(tile, p, cg::plus<int>());
    if (tile.thread_rank() == 0) out[blockIdx.x] = p;
  }
}

// Per 32-thread tile: out[tile] = max of in[] over the tile (cg::greater<int>), and
// cnt[tile] = number of lanes with in>0 (tile.ballot + popc). n multiple of 32.
extern "C" __global__ void cg_tile_max_count(int n, const int* in, int* out, int* cnt) {
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  int m = cg::reduce(tile, v, cg::greater<int>());
  unsigned b = tile.ballot(v > 0);
  if (tile.thread_rank() == 0) {
    out[i / 32] = m;
    cnt[i / 32] = __popc(b);
  }
}

// Per 8-thread sub-tile: out[i] = sum of in over i's 8-lane group (shfl_xor within tile;
// blockDim.x must be a multiple of 32; fixed butterfly order, deterministic)
extern "C" __global__ void cg_tile8_sum(int n, const float* in, float* out) {
  cg::thread_block_tile<8> t8 = cg::tiled_partition<8>(cg::this_thread_block());
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = (i < n) ? in[i] : 0.0f;
  for (int off = 4; off > 0; off >>= 1) v += t8.shfl_xor(v, off);
  if (i < n) out[i] = v;
}
