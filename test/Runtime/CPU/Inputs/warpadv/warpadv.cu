// Kernels for test/Runtime/CPU/warp-adversarial.test: code shapes that
// stress the CPU backend's warp functions (their whole-warp vector regions,
// lib/Conversion/WoolyToLLVM/WarpVector.cpp, and lock-step lane loops,
// lib/Compiler/LockstepLanes.cpp) against thread-by-thread execution and
// fibers: sorts and scans in shared memory, votes, matches, shuffles with
// lane-dependent sources and widths, partial warps, 2-D and 3-D blocks,
// early returns before barriers, divisions by lane-dependent values,
// wrapping and negative shared indices, 8/16/64-bit and floating-point
// elements, shared atomics whose old values are used, barriers in loops
// whose trip counts differ between blocks, and grid-stride loops. The test
// runs every launch of launches.txt in every mode and compares every
// buffer bit for bit.

// Bitonic sort of 256 keys (with their indices) in shared memory; each
// thread handles the pairs i = tid, tid + blockDim.x, ... (any block size).
extern "C" __global__ void bitonic_sort(const unsigned *in, unsigned *out,
                                        int *perm) {
  __shared__ unsigned key[256];
  __shared__ short idx[256];
  unsigned base = blockIdx.x * 256;
  for (int i = threadIdx.x; i < 256; i += blockDim.x) {
    key[i] = in[base + i];
    idx[i] = (short)i;
  }
  __syncthreads();
  for (int k = 2; k <= 256; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < 256; i += blockDim.x) {
        int l = i ^ j;
        if (l > i) {
          bool up = (i & k) == 0;
          unsigned a = key[i], b = key[l];
          if ((a > b) == up) {
            key[i] = b;
            key[l] = a;
            short t = idx[i];
            idx[i] = idx[l];
            idx[l] = t;
          }
        }
      }
      __syncthreads();
    }
  }
  for (int i = threadIdx.x; i < 256; i += blockDim.x) {
    out[base + i] = key[i];
    perm[base + i] = idx[i];
  }
}

// Votes and ballots on lane-dependent predicates, in partial warps too (the
// lanes past the block take no part), with the ballot's bits used as
// shift amounts and indices.
extern "C" __global__ void votes(const int *in, unsigned *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = in[i];
  unsigned full = __activemask();
  unsigned b = __ballot_sync(full, v & 1);
  int any = __any_sync(full, v > 1000000);
  int all = __all_sync(full, (v & 3) != 3);
  unsigned below = b & ((1u << lane) - 1u);
  unsigned r = __popc(below) * 7 + __ffs(b) + (any << 8) + (all << 9);
  if (v & 2) {
    unsigned b2 = __ballot_sync(__activemask(), lane % 3 == 0);
    r ^= b2 >> (lane & 7);
  }
  r += __clz(b | 1) + (b >> ((v >> 3) & 31));
  out[i] = r ^ full;
}

// __match_any_sync / __match_all_sync on keys with few distinct values: the
// lanes that share a key elect the lowest one, which adds the group.
extern "C" __global__ void match_groups(const int *in, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int key = in[i] & 7;
  unsigned m = __match_any_sync(__activemask(), key);
  int pred;
  unsigned all = __match_all_sync(__activemask(), key >> 3, &pred);
  int leader = __ffs(m) - 1;
  int sum = 0;
  for (unsigned rest = m; rest; rest &= rest - 1) {
    int src = __ffs(rest) - 1;
    sum += __shfl_sync(m, in[i] >> 4, src);
  }
  out[i] = (lane == leader ? sum : -key) + (int)(all & 0xff) * pred;
}

// Shuffles whose source lane, delta and width are values: the width a
// kernel parameter (a power of two), the source from the data.
extern "C" __global__ void shfl_var(const int *in, int *out, int width,
                                    int delta) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = in[i];
  int src = (v >> 5) & 63; // Past the segment and the warp at times.
  int a = __shfl_sync(0xffffffffu, v, src, width);
  int c = __shfl_up_sync(0xffffffffu, v, delta, width);
  int d = __shfl_down_sync(0xffffffffu, v + a, (lane * 3) & 15, width);
  int e = __shfl_xor_sync(0xffffffffu, c, lane & (width - 1), width);
  out[i] = a ^ (c * 3) ^ (d << 1) ^ (e * 5);
}

// Threads past `n` leave before the barriers; the rest reduce in shared
// memory (the usual tree, with its `tid < s` branches) and a warp sum.
extern "C" __global__ void early_return(const int *in, int *out, int n) {
  __shared__ int s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  int tid = threadIdx.x;
  int cnt = min((int)blockDim.x, n - (int)(blockIdx.x * blockDim.x));
  s[tid] = in[i];
  __syncthreads();
  for (int st = 1; st < cnt; st <<= 1) {
    int v = 0;
    if (tid % (2 * st) == 0 && tid + st < cnt)
      v = s[tid + st];
    __syncthreads();
    s[tid] += v;
    __syncthreads();
  }
  out[i] = s[0] - s[tid];
}

// Divisions by lane-dependent values, zero and -1 among them, in 32 and 64
// bits, signed and unsigned, and the float forms.
extern "C" __global__ void lane_div(const int *in, int *out, long long *out64,
                                    float *outf) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = in[i];
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  int d = lane - 7; // Zero in lane 7, -1 in lane 6.
  if (lane == 5)
    v = (int)0x80000000; // INT_MIN / -2
  int q = v / (d == 0 ? 1 : d);
  int r = v % (lane + 1);
  unsigned uq = (unsigned)v / (unsigned)(lane | 1);
  long long w = (long long)v * 1000003LL + lane;
  long long q64 = w / (long long)(d == 0 ? 3 : d);
  unsigned long long u64 =
      (unsigned long long)w % (unsigned long long)(lane + 9);
  q += __shfl_xor_sync(0xffffffffu, r, 3);
  out[i] = q ^ (r << 4) ^ (int)uq;
  out64[i] = q64 ^ (long long)u64;
  outf[i] = (float)v / (float)d; // inf, -inf, and NaN where v is 0.
}

// Shared arrays of bytes, shorts and 64-bit words indexed with wrapping and
// negative offsets (a parameter), stored and read back across a barrier.
extern "C" __global__ void wrap_types(const int *in, int *out, int off) {
  __shared__ unsigned char b8[256];
  __shared__ short h16[256];
  __shared__ long long q64[256];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int v = in[i];
  b8[(tid + off) & 255] = (unsigned char)v;
  h16[(tid * 7 - off) & 255] = (short)(v >> 8);
  q64[(255 - tid) & 255] = (long long)v * v;
  __syncthreads();
  int k = tid - off; // Negative for some threads.
  int a = b8[(k % 256 + 256) % 256];
  int c = h16[255 - (tid & 255)];
  long long q = q64[(tid + 1) & 255];
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  out[i] = a + c * 3 + (int)(q >> 7) + v;
}

// 8-, 16-bit, 64-bit, float and double values through warp shuffles and
// stores of their own widths.
extern "C" __global__ void mixed_types(const int *in, unsigned char *o8,
                                       short *o16, long long *o64, float *of,
                                       double *od) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = in[i];
  unsigned char c = (unsigned char)v;
  short h = (short)(v >> 3);
  long long q = (long long)v << 20 | lane;
  float f = (float)v * 0.5f;
  double d = (double)v / 3.0;
  for (int off = 1; off < 32; off <<= 1) {
    c += (unsigned char)__shfl_xor_sync(0xffffffffu, (int)c, off);
    h ^= (short)__shfl_down_sync(0xffffffffu, (int)h, off);
    q += __shfl_up_sync(0xffffffffu, q, off);
    f = fmaxf(f, __shfl_xor_sync(0xffffffffu, f, off));
    d += __shfl_xor_sync(0xffffffffu, d, off);
  }
  o8[i] = c;
  o16[i] = h;
  o64[i] = q;
  of[i] = f;
  od[i] = d;
}

// Shared atomics whose old values are used: a slot per thread taken with
// atomicAdd (the order of the slots is the order the threads run, which
// every mode of the CPU backend keeps), a max whose old value selects, and
// a compare-and-swap claim.
extern "C" __global__ void shared_atomics(const int *in, int *out) {
  __shared__ int count, best, owner;
  __shared__ int slots[256];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  if (tid == 0) {
    count = 0;
    best = -1;
    owner = -1;
  }
  __syncthreads();
  int v = in[i] & 0xffff;
  int pos = -1;
  if (v & 1)
    pos = atomicAdd(&count, 1);
  int was = atomicMax(&best, v);
  int claimed = atomicCAS(&owner, -1, tid);
  if (pos >= 0)
    slots[pos] = tid;
  __syncthreads();
  out[i] =
      (pos * 3) ^ (was < v) ^ (claimed << 4) ^ (tid < count ? slots[tid] : 0);
}

// A 16x16 tile of a matrix product in shared memory (2-D blocks: a warp
// is two rows), floats with fmaf.
extern "C" __global__ void matmul_tile(const float *a, const float *b, float *c,
                                       int n) {
  __shared__ float ta[16][17], tb[16][16];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += 16) {
    ta[ty][tx] = (row < n && k0 + tx < n) ? a[row * n + k0 + tx] : 0.0f;
    tb[ty][tx] = (col < n && k0 + ty < n) ? b[(k0 + ty) * n + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < 16; ++k)
      acc = fmaf(ta[ty][k], tb[k][tx], acc);
    __syncthreads();
  }
  if (row < n && col < n)
    c[row * n + col] = acc;
}

// 3-D blocks of any shape: each thread's linear index, its warp and lane
// from that, a warp sum and a neighbour in the z direction via shared
// memory.
extern "C" __global__ void block3d(const int *in, int *out) {
  __shared__ int s[512];
  int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int nt = blockDim.x * blockDim.y * blockDim.z;
  int i = blockIdx.x * nt + t;
  int v = in[i];
  s[t] = v;
  int w = v;
  for (int off = 16; off; off >>= 1)
    w += __shfl_xor_sync(__activemask(), w, off);
  __syncthreads();
  int zn = threadIdx.z + 1 < blockDim.z ? t + blockDim.x * blockDim.y : t;
  out[i] = w ^ s[zn] ^ (threadIdx.y << 20) ^ (threadIdx.z << 25);
}

// A scan whose barriers lie in a loop run a different number of times in
// each block (its bound from blockIdx.x), on 64-bit values.
extern "C" __global__ void varying_trips(const long long *in, long long *out) {
  __shared__ long long buf[2][256];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int steps = (blockIdx.x * 5) % 9; // 0 to 8 passes.
  int cur = 0;
  buf[0][tid] = in[i];
  __syncthreads();
  for (int p = 0; p < steps; ++p) {
    int off = 1 << p;
    long long x = buf[cur][tid];
    if (tid >= off)
      x += buf[cur][tid - off] ^ (long long)p;
    buf[cur ^ 1][tid] = x;
    cur ^= 1;
    __syncthreads();
  }
  out[i] = buf[cur][(tid + steps) % blockDim.x];
}

// A grid-stride loop (a lock-step candidate: its atomics' old values are
// not used) with a warp shuffle after it, conditional stores and a
// histogram in shared memory.
extern "C" __global__ void grid_stride(const int *in, int *out, int *hist,
                                       int n) {
  __shared__ int h[64];
  for (int k = threadIdx.x; k < 64; k += blockDim.x)
    h[k] = 0;
  __syncthreads();
  int acc = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x) {
    int v = in[i];
    atomicAdd(&h[v & 63], 1);
    if (v & 4)
      out[i] = v * 3;
    else
      out[i] = acc;
    acc += v >> 4;
  }
  acc += __shfl_xor_sync(0xffffffffu, acc, 1);
  __syncthreads();
  for (int k = threadIdx.x; k < 64; k += blockDim.x)
    atomicAdd(&hist[k], h[k]);
  out[n + blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// A loop whose trip count differs between lanes (from the data), with
// shuffles under `__activemask()` inside it: lanes leave at different
// iterations.
extern "C" __global__ void lane_loop(const int *in, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = in[i];
  int n = (v & 7) + (lane & 3);
  int acc = lane;
  for (int k = 0; k < n; ++k) {
    acc = acc * 5 + (v >> k);
    if (k & 1)
      acc += __shfl_xor_sync(0xffffffffu, v, k & 31);
  }
  int s = __shfl_down_sync(0xffffffffu, acc, 1);
  out[i] = acc ^ s;
}

// Stores of lanes to one shared address under data-dependent conditions of
// several widths (the last such lane's value stays), gathers of strided and
// reversed lanes, and a byte array written at a step that is not its size.
extern "C" __global__ void last_writer(const int *in, int *out) {
  __shared__ long long w64[8];
  __shared__ unsigned char w8[8];
  __shared__ short strided[512];
  __shared__ int rev[256];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int warp = tid >> 5, lane = tid & 31;
  int v = in[i];
  v += __shfl_xor_sync(0xffffffffu, v, 4);
  if (v % 3 == 0)
    w64[warp] = (long long)v * lane;
  if ((v >> 4) & 1)
    w8[warp] = (unsigned char)(v + lane);
  strided[tid * 2] = (short)v;
  strided[tid * 2 + 1] = (short)lane;
  rev[255 - tid] = v;
  __syncthreads();
  int x = v;
  x += __shfl_xor_sync(0xffffffffu, x, 2);
  int r = rev[tid ^ 31] + strided[(511 - tid * 2) & 511];
  out[i] = x + (int)w64[warp] + w8[warp] * 7 + r;
}

// A value whose lanes differ only in its low bits (`tid >> 3`, lanes of
// rows of whole warps) made in a block that the vector code branches
// around where no lane takes it, and used in a block after it by its
// uniform high part alone (`t & ~3`): that part must pass the join too
// (the region's vector code once used it where it was not defined, and
// the kernel failed to compile).
extern "C" __global__ void skipped_high(const int *in, int *out) {
  __shared__ int s[256];
  __shared__ unsigned char qb[64];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  s[tid] = in[i];
  if (tid < 64)
    qb[tid] = (unsigned char)(in[i] * 3);
  __syncthreads();
  int v = in[i];
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  int r = v;
  if (v & 1) {
    int a = s[tid ^ 5];
    int t = tid >> 3;
    r += a * t;
    if (a & 2)
      r += qb[t & ~3];
  }
  r += __shfl_xor_sync(0xffffffffu, r, 2);
  out[i] = r;
}

// Stores of the lanes a data-dependent condition picks to one shared word,
// of each width (the last such lane's value stays), one region each.
extern "C" __global__ void last_types(const int *in, int *out) {
  __shared__ unsigned char c8[8];
  __shared__ short h16[8];
  __shared__ long long q64[8];
  __shared__ double d64[8];
  __shared__ float f32[8];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int warp = tid >> 5, lane = tid & 31;
  if (lane == 0) {
    c8[warp] = 0;
    h16[warp] = 0;
    q64[warp] = 0;
    d64[warp] = 0;
    f32[warp] = 0;
  }
  __syncthreads();
  int v = in[i];
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  if (v & 1)
    c8[warp] = (unsigned char)(v + lane);
  v += __shfl_xor_sync(0xffffffffu, v, 2);
  if (v & 2)
    h16[warp] = (short)(v * lane);
  v += __shfl_xor_sync(0xffffffffu, v, 4);
  if (v & 4)
    q64[warp] = (long long)v * (lane + 1000000);
  v += __shfl_xor_sync(0xffffffffu, v, 8);
  if (v & 8)
    d64[warp] = (double)v / (lane + 1);
  v += __shfl_xor_sync(0xffffffffu, v, 16);
  if ((v & 48) == 48)
    f32[warp] = (float)v * lane;
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  __syncthreads();
  out[i] = v + c8[warp] + h16[warp] * 3 + (int)(q64[warp] >> 5) +
           (int)d64[warp] + (int)f32[warp];
}

// Shared reads and writes whose lanes' addresses are strided, reversed,
// offset by a parameter (wrapping), and whose bytes and shorts are read at
// steps other than their size, one store a region.
extern "C" __global__ void affine_shared(const int *in, int *out, int off) {
  __shared__ int s[1024];
  __shared__ unsigned char b[512];
  __shared__ short h[512];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int v = in[i];
  for (int k = tid; k < 1024; k += blockDim.x)
    s[k] = k * 7;
  for (int k = tid; k < 512; k += blockDim.x) {
    b[k] = k;
    h[k] = -k;
  }
  __syncthreads();
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  int a = s[tid * 2] + s[1023 - tid] + s[(tid + off) & 1023];
  a += __shfl_xor_sync(0xffffffffu, a, 3);
  int c = b[tid + 100] + b[(tid >> 2) + off] + h[300 - tid];
  c += __shfl_xor_sync(0xffffffffu, c, 5);
  int d = s[(tid >> 3) * 8 + 3] + s[(tid & ~7) + off] + s[tid * 3 + 1];
  d += __shfl_xor_sync(0xffffffffu, d, 7);
  __syncthreads();
  s[tid * 2 + 1] = a ^ c;
  a += __shfl_xor_sync(0xffffffffu, a, 9);
  b[tid * 2] = (unsigned char)d;
  a += __shfl_xor_sync(0xffffffffu, a, 11);
  h[(tid + off) & 511] = (short)c;
  a += __shfl_xor_sync(0xffffffffu, a, 13);
  __syncthreads();
  out[i] = v + a + c + d + s[tid ^ 1] + b[tid] + h[tid];
}

// Blocks that leave the block's lockstep (all warps at one barrier) in
// some blocks only: a warp returns early, or some lanes do; launched on one
// worker, so that the next block starts from what this one left.
extern "C" __global__ void block_diverge(const int *in, int *out) {
  __shared__ int s[512];
  int tid = threadIdx.x + blockDim.x * threadIdx.y;
  int nt = blockDim.x * blockDim.y;
  int i = (blockIdx.x + gridDim.x * blockIdx.y) * nt + tid;
  int warp = tid >> 5;
  int v = in[i];
  s[tid] = v;
  __syncthreads();
  if (blockIdx.x % 3 == 1 && warp == 1) {
    out[i] = -1;
    return;
  }
  if (blockIdx.x % 4 == 2 && (tid & 7) == 3) {
    out[i] = blockIdx.x;
    return;
  }
  v += __shfl_xor_sync(__activemask(), v, 1);
  int t = s[(tid + 1) % nt];
  __syncthreads();
  s[tid] = t + v + blockIdx.x;
  __syncthreads();
  out[i] = s[(tid + 5) % nt] ^ (int)blockIdx.y ^ (int)threadIdx.y * 100;
}

// Dynamic shared memory (its size per launch) as ints and doubles, and the
// lane from %laneid as a shuffle's delta.
extern "C" __global__ void dyn_shared(const int *in, double *out, int n) {
  extern __shared__ int dyn[];
  double *dd = (double *)(dyn + 64);
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  unsigned lid;
  asm("mov.u32 %0, %%laneid;" : "=r"(lid));
  if (tid < 64)
    dyn[tid] = in[i] ^ lid;
  __syncthreads();
  double x = dyn[(tid * 5) & 63] * 0.25;
  x += __shfl_down_sync(0xffffffffu, x, lid & 7);
  if (tid < n)
    dd[tid] = x;
  __syncthreads();
  out[i] = dd[(tid + 1) % n] + lid;
}

// Grid-stride loops that the warp functions run with the lanes in lock
// step: lanes that skip the loop (their start past n) or start below 0 by
// `off` (out of bounds: the first thread in thread order must be the one
// reported), a conditional store or shared atomic; 2-D blocks over doubles;
// a stride from a parameter.
extern "C" __global__ void ls_skip(int n, int off, const int *in, int *out,
                                   unsigned *hist) {
  __shared__ unsigned bins[64];
  if (threadIdx.x < 64)
    bins[threadIdx.x] = 0;
  __syncthreads();
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  int start =
      threadIdx.x % 5 == 0 ? n + threadIdx.x : gid - off * (threadIdx.x & 1);
  for (int i = start; i < n; i += blockDim.x * gridDim.x) {
    int v = in[i];
    if (v & 1)
      out[i] = v * 3;
    else
      atomicAdd(&bins[v & 63], 1u);
  }
  __syncthreads();
  if (threadIdx.x < 64)
    atomicAdd(&hist[threadIdx.x], bins[threadIdx.x]);
}

extern "C" __global__ void ls_2d(int n, const double *d, long long *o,
                                 unsigned *hist) {
  __shared__ unsigned bins[64];
  int t = threadIdx.y * blockDim.x + threadIdx.x;
  if (t < 64)
    bins[t] = 0;
  __syncthreads();
  int nt = blockDim.x * blockDim.y;
  for (int i = blockIdx.x * nt + t; i < n; i += nt * gridDim.x) {
    double x = d[i];
    if (x < 0.5)
      o[i] = (long long)(x * 1e6);
    else
      atomicAdd(&bins[(int)(x * 64.0) & 63], 1u);
  }
  __syncthreads();
  if (t < 64)
    atomicAdd(&hist[t], bins[t]);
}

extern "C" __global__ void ls_stride(int n, int stride, const int *in,
                                     unsigned *hist) {
  __shared__ unsigned bins[64];
  if (threadIdx.x < 64)
    bins[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    atomicAdd(&bins[in[i] & 63], 1u);
  __syncthreads();
  if (threadIdx.x < 64)
    atomicAdd(&hist[threadIdx.x], bins[threadIdx.x]);
}

// Warp reductions (redux.sync) over the active lanes, in a branch too, and
// a match on 64-bit keys.
extern "C" __global__ void redux_match(const int *in, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = in[i];
  unsigned m = __activemask();
  int a = __reduce_add_sync(m, v & 0xffff);
  unsigned mx = __reduce_max_sync(m, (unsigned)v);
  int mn = __reduce_min_sync(m, v);
  unsigned o = __reduce_or_sync(m, 1u << (v & 31));
  long long key = (long long)(v & 3) << 40 | (lane & 1);
  unsigned g = __match_any_sync(m, key);
  int r = 0;
  if (v & 1) {
    unsigned m2 = __activemask();
    r = __reduce_xor_sync(m2, (unsigned)v) + __popc(m2);
  }
  out[i] = a ^ (int)mx ^ mn ^ (int)o ^ (int)g ^ r;
}

// The warp-synchronous reduction of volatile shared memory (no barrier
// between its steps: the lanes of the warp in step with each other).
extern "C" __global__ void volatile_reduce(const int *in, int *out) {
  __shared__ int sdata[256];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  sdata[tid] = in[i];
  __syncthreads();
  for (int s = blockDim.x / 2; s > 32; s >>= 1) {
    if (tid < s)
      sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid < 32) {
    volatile int *vs = sdata;
    vs[tid] += vs[tid + 32];
    vs[tid] += vs[tid + 16];
    vs[tid] += vs[tid + 8];
    vs[tid] += vs[tid + 4];
    vs[tid] += vs[tid + 2];
    vs[tid] += vs[tid + 1];
  }
  if (tid == 0)
    out[blockIdx.x] = sdata[0];
}

// Constant shuffles of every kind with constant widths below 32 (each
// segment its own clamp), deltas past the segment, and 64-bit/double values.
extern "C" __global__ void shfl_const(const int *in, long long *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  long long q = (long long)v * 3;
  double d = v * 0.5;
  int a = __shfl_up_sync(0xffffffffu, v, 3, 8);
  int b = __shfl_down_sync(0xffffffffu, v, 5, 8);
  int c = __shfl_xor_sync(0xffffffffu, v, 6, 4);
  int e = __shfl_sync(0xffffffffu, v, 13, 16);
  int f = __shfl_up_sync(0xffffffffu, v, 9, 8);
  int g = __shfl_down_sync(0xffffffffu, v, 31, 32);
  int h = __shfl_sync(0xffffffffu, v, 45, 32);
  int k = __shfl_xor_sync(0xffffffffu, v, 17, 16);
  long long q2 = __shfl_down_sync(0xffffffffu, q, 2, 4);
  double d2 = __shfl_up_sync(0xffffffffu, d, 1, 2);
  out[i] = (long long)a ^ ((long long)b << 3) ^ ((long long)c << 6) ^
           ((long long)e << 9) ^ ((long long)f << 12) ^ ((long long)g << 15) ^
           ((long long)h << 18) ^ ((long long)k << 21) ^ q2 ^ (long long)d2;
}

// A thread's own array indexed by data (`.local` memory), written before a
// barrier and a shuffle and read after them. nvcc computes the array's
// address once, at the start: the integer that crosses the cuts is made
// from the address, not the address itself. Regions kept only that integer
// (the warp function's lanes then shared one array, and thread by thread
// the address was in a stack frame no longer live); the kernel runs as
// fibers.
extern "C" __global__ void local_array(const int *in, int *out) {
  __shared__ int s[256];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int a[16];
  int v = in[i];
  for (int k = 0; k < 16; ++k)
    a[k] = v * k + tid;
  s[tid] = v;
  __syncthreads();
  int j = s[(tid + 1) % blockDim.x] & 15;
  a[j] += __shfl_xor_sync(0xffffffffu, v, 1);
  a[(j + 3) & 15] ^= __shfl_down_sync(0xffffffffu, a[j], 2);
  __syncthreads();
  int r = 0;
  for (int k = 0; k < 16; ++k)
    r = r * 31 + a[(k * 7 + v) & 15];
  out[i] = r;
}

// In odd blocks the lanes of each warp split between two shuffles (the
// warp function hands the lanes to the runtime), in even blocks they stay
// together: on one worker, blocks that stay in the block's lockstep follow
// blocks that left it, and the other way round.
extern "C" __global__ void alt_split(const int *in, int *out) {
  __shared__ int s[256];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int lane = tid & 31;
  int v = in[i];
  s[tid] = v;
  __syncthreads();
  if ((blockIdx.x & 1) && (v & 1))
    v += __shfl_xor_sync(__activemask(), v, 1);
  else
    v -= __shfl_xor_sync(__activemask(), v, 2);
  v += s[(tid + 3) % blockDim.x] * (int)blockIdx.x;
  __syncthreads();
  s[tid] = v ^ lane;
  __syncthreads();
  out[i] = s[(tid + 1) % blockDim.x] + (int)blockIdx.x;
}

// Lanes that return early (a data-dependent set), then votes, a match and
// shuffles among the lanes still there (__activemask), and a barrier.
extern "C" __global__ void exit_votes(const int *in, int *out) {
  __shared__ int s[256];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int lane = tid & 31;
  int v = in[i];
  s[tid] = v;
  out[i] = -7;
  if ((v & 7) == 5 || (lane == 3 && (v & 1)))
    return;
  unsigned m = __activemask();
  unsigned b = __ballot_sync(m, v & 2);
  int src = __ffs(m) - 1;
  int first = __shfl_sync(m, v, src);
  unsigned g = __match_any_sync(m, v & 3);
  int any = __any_sync(m, v < 0);
  __syncthreads();
  int nb = s[(tid + 1) % blockDim.x];
  out[i] = (int)(b ^ m) + first + (int)g * 3 + any + nb;
}

// Contiguous global loads in a vector region, under a lane condition (odd
// lanes) and under a uniform one, past the end of `b` from lane n % 32 on.
extern "C" __global__ void masked_global(const int *a, const int *b, int *out,
                                         int n, int u) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = a[i];
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  int t = 0;
  if (lane & 1)
    t = b[i + n];
  if (u > 0)
    t += b[i + u];
  t += __shfl_xor_sync(0xffffffffu, t, 2);
  out[i] = v + t;
}

// Out of bounds (warp-adversarial.test runs these alone): a shared store
// whose index goes negative for the low lanes of the second warp (`off`
// up to 32), and a global load at a negative offset in thread `bad`.
extern "C" __global__ void neg_shared(const int *in, int *out, int off) {
  __shared__ int s[128];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int v = in[i];
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  s[(tid ^ 32) - off] = v;
  __syncthreads();
  out[i] = s[tid & 127];
}

extern "C" __global__ void neg_global(const int *in, int *out, int bad) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  v += __shfl_xor_sync(__activemask(), v, 1);
  int j = (threadIdx.x == (unsigned)bad) ? -3 : i;
  out[i] = v + in[j];
}
