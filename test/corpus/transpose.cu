// Matrix transpose through shared memory (deterministic, pure data movement).

#define TDIM 32
#define ROWS 8

// out[x][y] = in[y][x] for a rows x cols row-major matrix `in` (out is cols x rows).
// Tile is 32x(32+1): the +1 column of padding avoids shared-memory bank conflicts.
// Launch blockDim = (32, 8), grid = (ceil(cols/32), ceil(rows/32)).
extern "C" __global__ void transpose_padded(int rows, int cols, const float* in, float* out) {
  __shared__ float tile[TDIM][TDIM + 1];
  int x = blockIdx.x * TDIM + threadIdx.x;
  int y = blockIdx.y * TDIM + threadIdx.y;
  for (int j = 0; j < TDIM; j += ROWS)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * TDIM + threadIdx.x;   // now indexes rows of `in` (columns of `out`)
  y = blockIdx.x * TDIM + threadIdx.y;
  for (int j = 0; j < TDIM; j += ROWS)
    if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Naive transpose without shared memory, for comparison: out[c][r] = in[r][c]
extern "C" __global__ void transpose_naive(int rows, int cols, const float* in, float* out) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}
