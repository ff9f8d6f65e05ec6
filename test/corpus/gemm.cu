// Tiled single-precision GEMM with 16x16 shared-memory tiles.
// Deterministic: each C element is a fixed-order sum over k (tile by tile, k ascending),
// equal to a sequential C++ loop over k using fmaf, up to FMA contraction choices.

#define TILE 16

// C[M x N] = alpha * A[M x K] * B[K x N] + beta * C   (row-major; launch blockDim = 16x16,
// grid = (ceil(N/16), ceil(M/16)))
extern "C" __global__ void sgemm_tiled(int M, int N, int K, float alpha,
                                       const float* __restrict__ A,
                                       const float* __restrict__ B, float beta,
                                       float* __restrict__ C) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty;
  int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
    Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
