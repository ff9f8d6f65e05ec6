// A small library of reductions used around a training loop (loss/metric accumulation,
// statistics, argmax sampling), written for Wooly's compile-time benchmarks.
// Sum / max / min / mean / variance (Welford) / argmax over whole arrays and over rows,
// for float, double, int, unsigned, __half and __nv_bfloat16, several block sizes.
// Whole-array kernels use grid-stride loops, __shfl_xor_sync warp reductions, shared memory
// across warps and one atomic per block (caller initializes the accumulator to the identity).
// blockDim.x must equal BLOCK (a multiple of 32).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <float.h>
#include <limits.h>
#include <stdint.h>

template <typename T> struct Acc { using type = T; };
template <> struct Acc<__half> { using type = float; };
template <> struct Acc<__nv_bfloat16> { using type = float; };
template <> struct Acc<int> { using type = long long; };
template <> struct Acc<unsigned> { using type = unsigned long long; };

template <typename A, typename T> __device__ __forceinline__ A widen(T x) { return (A)x; }
template <> __device__ __forceinline__ float widen<float, __half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float widen<float, __nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }

struct OpSum {
  template <typename A> __device__ static A identity() { return (A)0; }
  template <typename A> __device__ static A apply(A a, A b) { return a + b; }
};
struct OpMax {
  template <typename A> __device__ static A identity();
  template <typename A> __device__ static A apply(A a, A b) { return a > b ? a : b; }
};
template <> __device__ float OpMax::identity<float>() { return -FLT_MAX; }
template <> __device__ double OpMax::identity<double>() { return -DBL_MAX; }
template <> __device__ long long OpMax::identity<long long>() { return LLONG_MIN; }
template <> __device__ unsigned long long OpMax::identity<unsigned long long>() { return 0ull; }
struct OpMin {
  template <typename A> __device__ static A identity();
  template <typename A> __device__ static A apply(A a, A b) { return a < b ? a : b; }
};
template <> __device__ float OpMin::identity<float>() { return FLT_MAX; }
template <> __device__ double OpMin::identity<double>() { return DBL_MAX; }
template <> __device__ long long OpMin::identity<long long>() { return LLONG_MAX; }
template <> __device__ unsigned long long OpMin::identity<unsigned long long>() { return ~0ull; }

template <typename Op, typename A> __device__ __forceinline__ A warp_reduce(A v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = Op::apply(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
// Result valid in all threads.
template <typename Op, int BLOCK, typename A> __device__ __forceinline__ A block_reduce(A v) {
  __shared__ A buf[32];
  v = warp_reduce<Op>(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) buf[threadIdx.x >> 5] = v;
  __syncthreads();
  v = (threadIdx.x & 31) < BLOCK / 32 ? buf[threadIdx.x & 31] : Op::template identity<A>();
  return warp_reduce<Op>(v);
}

// Atomic combine of a block result into the global accumulator.
__device__ __forceinline__ void atomic_combine(OpSum, float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_combine(OpSum, double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_combine(OpSum, long long* p, long long v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
}
__device__ __forceinline__ void atomic_combine(OpSum, unsigned long long* p, unsigned long long v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_combine(OpMax, long long* p, long long v) { atomicMax(p, v); }
__device__ __forceinline__ void atomic_combine(OpMin, long long* p, long long v) { atomicMin(p, v); }
__device__ __forceinline__ void atomic_combine(OpMax, unsigned long long* p, unsigned long long v) { atomicMax(p, v); }
__device__ __forceinline__ void atomic_combine(OpMin, unsigned long long* p, unsigned long long v) { atomicMin(p, v); }
// Float max/min via CAS on the bit pattern.
template <typename Op> __device__ __forceinline__ void atomic_cas_combine(float* p, float v) {
  int* ip = reinterpret_cast<int*>(p);
  int old = *ip, assumed;
  do {
    assumed = old;
    float nv = Op::apply(__int_as_float(assumed), v);
    if (nv == __int_as_float(assumed)) break;
    old = atomicCAS(ip, assumed, __float_as_int(nv));
  } while (old != assumed);
}
template <typename Op> __device__ __forceinline__ void atomic_cas_combine(double* p, double v) {
  unsigned long long* ip = reinterpret_cast<unsigned long long*>(p);
  unsigned long long old = *ip, assumed;
  do {
    assumed = old;
    double nv = Op::apply(__longlong_as_double((long long)assumed), v);
    if (nv == __longlong_as_double((long long)assumed)) break;
    old = atomicCAS(ip, assumed, (unsigned long long)__double_as_longlong(nv));
  } while (old != assumed);
}
__device__ __forceinline__ void atomic_combine(OpMax, float* p, float v) { atomic_cas_combine<OpMax>(p, v); }
__device__ __forceinline__ void atomic_combine(OpMin, float* p, float v) { atomic_cas_combine<OpMin>(p, v); }
__device__ __forceinline__ void atomic_combine(OpMax, double* p, double v) { atomic_cas_combine<OpMax>(p, v); }
__device__ __forceinline__ void atomic_combine(OpMin, double* p, double v) { atomic_cas_combine<OpMin>(p, v); }

// *out = Op(*out, Op over x[0..n)); UNROLL independent accumulators per thread.
template <typename T, typename Op, int BLOCK, int UNROLL>
__global__ void __launch_bounds__(BLOCK)
    reduce_all(typename Acc<T>::type* out, const T* x, int64_t n) {
  using A = typename Acc<T>::type;
  A acc[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) acc[u] = Op::template identity<A>();
  const int64_t stride = (int64_t)gridDim.x * BLOCK;
  int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x;
  for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc[u] = Op::apply(acc[u], widen<A>(x[i + u * stride]));
  }
  for (; i < n; i += stride) acc[0] = Op::apply(acc[0], widen<A>(x[i]));
#pragma unroll
  for (int u = 1; u < UNROLL; ++u) acc[0] = Op::apply(acc[0], acc[u]);
  A r = block_reduce<Op, BLOCK>(acc[0]);
  if (threadIdx.x == 0) atomic_combine(Op(), out, r);
}

// Deterministic two-pass variant: pass 1 writes one partial per block, pass 2 (one block)
// reduces the partials in a fixed order into out[0].
template <typename T, typename Op, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    reduce_partial(typename Acc<T>::type* partial, const T* x, int64_t n) {
  using A = typename Acc<T>::type;
  A acc = Op::template identity<A>();
  for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK)
    acc = Op::apply(acc, widen<A>(x[i]));
  A r = block_reduce<Op, BLOCK>(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = r;
}
template <typename A, typename Op, int BLOCK>
__global__ void __launch_bounds__(BLOCK) reduce_final(A* out, const A* partial, int n) {
  A acc = Op::template identity<A>();
  for (int i = threadIdx.x; i < n; i += BLOCK) acc = Op::apply(acc, partial[i]);
  A r = block_reduce<Op, BLOCK>(acc);
  if (threadIdx.x == 0) out[0] = r;
}

// Row reductions: out[r] = Op over x[r][0..cols), one warp per row (ROWWARP) or one block.
template <typename T, typename Op, int BLOCK, bool MEAN>
__global__ void __launch_bounds__(BLOCK)
    reduce_rows_block(typename Acc<T>::type* out, const T* x, int rows, int cols) {
  using A = typename Acc<T>::type;
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    A acc = Op::template identity<A>();
    for (int c = threadIdx.x; c < cols; c += BLOCK) acc = Op::apply(acc, widen<A>(x[(int64_t)r * cols + c]));
    A v = block_reduce<Op, BLOCK>(acc);
    if (threadIdx.x == 0) out[r] = MEAN ? v / (A)cols : v;
  }
}
template <typename T, typename Op, int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
    reduce_rows_warp(typename Acc<T>::type* out, const T* x, int rows, int cols) {
  using A = typename Acc<T>::type;
  int r = blockIdx.x * WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (r >= rows) return;
  A acc = Op::template identity<A>();
  for (int c = lane; c < cols; c += 32) acc = Op::apply(acc, widen<A>(x[(int64_t)r * cols + c]));
  acc = warp_reduce<Op>(acc);
  if (lane == 0) out[r] = acc;
}

// Column sums: out[c] = sum_r x[r][c] (used for bias gradients), 32 columns x ROWS threads.
template <typename T, int ROWS>
__global__ void __launch_bounds__(32 * ROWS)
    reduce_cols_sum(typename Acc<T>::type* out, const T* x, int rows, int cols) {
  using A = typename Acc<T>::type;
  __shared__ A part[ROWS][33];
  int c = blockIdx.x * 32 + threadIdx.x;
  A acc = 0;
  if (c < cols)
    for (int r = threadIdx.y; r < rows; r += ROWS) acc += widen<A>(x[(int64_t)r * cols + c]);
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    A t = 0;
    for (int r = 0; r < ROWS; ++r) t += part[r][threadIdx.x];
    out[c] = t;
  }
}

// Welford mean/variance per row (population variance), block per row.
struct Welford {
  float mean, m2, n;
};
__device__ __forceinline__ Welford welford_merge(Welford a, Welford b) {
  float n = a.n + b.n;
  if (n == 0.0f) return a;
  float d = b.mean - a.mean;
  float wb = b.n / n;
  return {a.mean + d * wb, a.m2 + b.m2 + d * d * a.n * wb, n};
}
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    row_mean_var(float* mean, float* var, const T* x, int rows, int cols) {
  __shared__ Welford buf[32];
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    Welford w = {0.0f, 0.0f, 0.0f};
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
      float v = widen<float>(x[(int64_t)r * cols + c]);
      w.n += 1.0f;
      float d = v - w.mean;
      w.mean += d / w.n;
      w.m2 += d * (v - w.mean);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      Welford o;
      o.mean = __shfl_xor_sync(0xffffffffu, w.mean, off);
      o.m2 = __shfl_xor_sync(0xffffffffu, w.m2, off);
      o.n = __shfl_xor_sync(0xffffffffu, w.n, off);
      w = welford_merge(w, o);
    }
    __syncthreads();
    if ((threadIdx.x & 31) == 0) buf[threadIdx.x >> 5] = w;
    __syncthreads();
    if (threadIdx.x == 0) {
      Welford t = buf[0];
      for (int i = 1; i < BLOCK / 32; ++i) t = welford_merge(t, buf[i]);
      mean[r] = t.mean;
      var[r] = t.n > 0.0f ? t.m2 / t.n : 0.0f;
    }
  }
}

// Argmax per row (first index of the maximum), warp per row; out[r] = index.
template <typename T, int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
    argmax_rows(int* out, const T* x, int rows, int cols) {
  int r = blockIdx.x * WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (r >= rows) return;
  float best = -FLT_MAX;
  int bi = cols;  // sentinel larger than any index
  for (int c = lane; c < cols; c += 32) {
    float v = widen<float>(x[(int64_t)r * cols + c]);
    if (v > best || bi == cols) { best = v; bi = c; }
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    float ob = __shfl_xor_sync(0xffffffffu, best, off);
    int oi = __shfl_xor_sync(0xffffffffu, bi, off);
    if (oi < cols && (bi == cols || ob > best || (ob == best && oi < bi))) { best = ob; bi = oi; }
  }
  if (lane == 0) out[r] = bi;
}

// Global argmax over an array: packs (orderable float key, index) into 64 bits and uses
// atomicMax; out must be initialized to 0. Ties resolve to the smallest index.
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) argmax_all(unsigned long long* out, const T* x, int64_t n) {
  unsigned long long best = 0;
  for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK) {
    float v = widen<float>(x[i]);
    unsigned u = __float_as_uint(v);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // order-preserving key
    unsigned long long key = ((unsigned long long)u << 32) | (0xffffffffu - (unsigned)i);
    best = key > best ? key : best;
  }
  best = warp_reduce<OpMax>(best);
  if ((threadIdx.x & 31) == 0) atomicMax(out, best);
}

#define RA(T, OP, B, U)                                                                           \
  template __global__ void reduce_all<T, OP, B, U>(Acc<T>::type*, const T*, int64_t);
#define RP(T, OP, B)                                                                              \
  template __global__ void reduce_partial<T, OP, B>(Acc<T>::type*, const T*, int64_t);
#define RF(A, OP, B) template __global__ void reduce_final<A, OP, B>(A*, const A*, int);
#define RRB(T, OP, B, M)                                                                          \
  template __global__ void reduce_rows_block<T, OP, B, M>(Acc<T>::type*, const T*, int, int);
#define RRW(T, OP, W) template __global__ void reduce_rows_warp<T, OP, W>(Acc<T>::type*, const T*, int, int);

RA(float, OpSum, 256, 4) RA(float, OpSum, 1024, 1) RA(float, OpMax, 256, 2) RA(float, OpMin, 256, 2)
RA(double, OpSum, 256, 2) RA(double, OpMax, 512, 1)
RA(int, OpSum, 256, 4) RA(int, OpMax, 256, 1) RA(unsigned, OpSum, 512, 2) RA(unsigned, OpMin, 128, 1)
RA(__half, OpSum, 256, 4) RA(__nv_bfloat16, OpSum, 256, 4) RA(__nv_bfloat16, OpMax, 512, 2)
RP(float, OpSum, 256) RP(double, OpSum, 256) RP(__nv_bfloat16, OpSum, 512) RP(int, OpMax, 256)
RF(float, OpSum, 256) RF(double, OpSum, 1024) RF(long long, OpMax, 256)
RRB(float, OpSum, 256, true) RRB(float, OpMax, 128, false) RRB(__nv_bfloat16, OpSum, 512, true)
RRB(double, OpSum, 256, true)
RRW(float, OpSum, 4) RRW(__half, OpMax, 8) RRW(int, OpSum, 4)
template __global__ void reduce_cols_sum<float, 8>(float*, const float*, int, int);
template __global__ void reduce_cols_sum<__nv_bfloat16, 16>(float*, const __nv_bfloat16*, int, int);
template __global__ void reduce_cols_sum<double, 8>(double*, const double*, int, int);
template __global__ void row_mean_var<float, 256>(float*, float*, const float*, int, int);
template __global__ void row_mean_var<__nv_bfloat16, 512>(float*, float*, const __nv_bfloat16*, int, int);
template __global__ void argmax_rows<float, 4>(int*, const float*, int, int);
template __global__ void argmax_rows<__nv_bfloat16, 8>(int*, const __nv_bfloat16*, int, int);
template __global__ void argmax_all<float, 256>(unsigned long long*, const float*, int64_t);
template __global__ void argmax_all<__half, 512>(unsigned long long*, const __half*, int64_t);
