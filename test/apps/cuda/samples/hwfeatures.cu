//===- hwfeatures.cu - Less common kernel and runtime features ------------===//
//
// Warp specialisation with named barriers (producer warps `bar.arrive 1,
// 128`, consumer warps `bar.sync 1, 128`), shuffles on sub-warp widths (8 and
// 4), inline PTX bit operations (prmt, lop3, bfe, bfi, shf, mul.hi), a 6 KiB
// by-value kernel parameter, 80 KiB of dynamic shared memory
// (cudaFuncAttributeMaxDynamicSharedMemorySize), a surface object over a
// CUDA array (surf2Dread/surf2Dwrite), cudaMalloc3D + cudaMemcpy3D both
// ways, double, 64-bit max and __half2 atomics and a spin lock of
// atomicCAS/atomicExch around a plain counter.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cuda_fp16.h>

#include <numeric>
#include <vector>
#define APP_NAME "sample_hwfeatures"
#include "../CudaApp.h"

// Warps 0-1 fill a 64-int buffer, warps 2-3 wait for it (named barrier 1
// of 128 threads) and combine it; then the whole block moves on.
__global__ void namedBarriers(const int *in, int *out, int n) {
  __shared__ int buf[64];
  for (int base = 0; base < n; base += 64) {
    if (threadIdx.x < 64) {
      buf[threadIdx.x] = in[base + threadIdx.x] * 2;
      asm volatile("bar.arrive 1, 128;" ::: "memory");
    } else {
      asm volatile("bar.sync 1, 128;" ::: "memory");
      int t = threadIdx.x - 64;
      out[base + t] = buf[t] + buf[63 - t];
    }
    __syncthreads();
  }
}

__global__ void subWarpShuffles(const int *in, int *out) {
  int v = in[threadIdx.x], s = v;
  for (int off = 4; off > 0; off >>= 1)
    s += __shfl_down_sync(0xffffffffu, s, off, 8);
  out[threadIdx.x * 3] = s;
  out[threadIdx.x * 3 + 1] = __shfl_sync(0xffffffffu, v, 3, 8);
  out[threadIdx.x * 3 + 2] = __shfl_xor_sync(0xffffffffu, v, 1, 4);
}

__global__ void bitOps(const unsigned *in, unsigned *out) {
  unsigned a = in[threadIdx.x], b = in[threadIdx.x + 32], r[6];
  asm("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(r[0]) : "r"(a), "r"(b));
  asm("lop3.b32 %0, %1, %2, %3, 0x96;"
      : "=r"(r[1])
      : "r"(a), "r"(b), "r"(a >> 3));
  asm("bfe.u32 %0, %1, 5, 9;" : "=r"(r[2]) : "r"(a));
  asm("bfi.b32 %0, %1, %2, 8, 7;" : "=r"(r[3]) : "r"(b), "r"(a));
  asm("shf.l.wrap.b32 %0, %1, %2, 13;" : "=r"(r[4]) : "r"(a), "r"(b));
  asm("mul.hi.u32 %0, %1, %2;" : "=r"(r[5]) : "r"(a), "r"(b));
  for (int k = 0; k < 6; ++k)
    out[threadIdx.x * 6 + k] = r[k];
}

struct Weights {
  float w[1500];
  int n;
};
__global__ void bigParameter(Weights p, float *out) {
  float s = 0;
  for (int i = 0; i < p.n; ++i)
    s += p.w[i];
  out[threadIdx.x] = s + threadIdx.x;
}

constexpr int kDynamicShared = 80 * 1024;
__global__ void bigShared(float *out) {
  extern __shared__ float sm[];
  const int n = kDynamicShared / 4;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    sm[i] = float(i);
  __syncthreads();
  float s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    s += sm[n - 1 - i];
  atomicAdd(out, s);
}

__global__ void surfaceTwice(cudaSurfaceObject_t s, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x,
      y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) {
    float v;
    surf2Dread(&v, s, x * 4, y);
    surf2Dwrite(v * 2 + x, s, x * 4, y);
  }
}

__global__ void atomics(double *d, unsigned long long *mx, int *lock,
                        int *counter, __half2 *h) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(d, 0.5 * (i % 7));
  atomicMax(mx, (unsigned long long)i * 3u);
  if (threadIdx.x == 0) { // one thread a block through the lock
    while (atomicCAS(lock, 0, 1) != 0) {
    }
    __threadfence();
    *counter += 1;
    __threadfence();
    atomicExch(lock, 0);
  }
  atomicAdd(h, __floats2half2_rn(1.0f, 2.0f));
}

int main() {
  { // Named barriers.
    const int n = 640;
    std::vector<int> h(n);
    for (int i = 0; i < n; ++i)
      h[i] = i * 3 - 7;
    int *in = app::toDevice(h), *out;
    CHECK(cudaMalloc(&out, n * sizeof(int)));
    namedBarriers<<<1, 128>>>(in, out, n);
    CHECK(cudaGetLastError());
    std::vector<int> o = app::toHost(out, n);
    for (int i = 0; i < n; ++i) {
      int base = i / 64 * 64, t = i % 64;
      EXPECT(o[i] == 2 * h[base + t] + 2 * h[base + 63 - t],
             "named barriers: element %d is %d", i, o[i]);
    }
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
  }
  { // Sub-warp shuffles.
    std::vector<int> h(96);
    for (int i = 0; i < 96; ++i)
      h[i] = (i * 37) % 11 - 5;
    int *in = app::toDevice(h), *out;
    CHECK(cudaMalloc(&out, 96 * 3 * sizeof(int)));
    subWarpShuffles<<<1, 96>>>(in, out);
    std::vector<int> o = app::toHost(out, 96 * 3);
    for (int t = 0; t < 96; ++t) {
      int g = t / 8 * 8, vals[8];
      for (int i = 0; i < 8; ++i)
        vals[i] = h[g + i];
      // shfl_down within 8 lanes: a lane whose source is past the segment
      // keeps its own value.
      for (int off = 4; off > 0; off >>= 1) {
        int next[8];
        for (int i = 0; i < 8; ++i)
          next[i] = vals[i] + (i + off < 8 ? vals[i + off] : vals[i]);
        std::copy(next, next + 8, vals);
      }
      EXPECT(o[t * 3] == vals[t - g], "shfl_down width 8: lane %d", t);
      EXPECT(o[t * 3 + 1] == h[g + 3], "shfl width 8: lane %d", t);
      EXPECT(o[t * 3 + 2] == h[t ^ 1], "shfl_xor width 4: lane %d", t);
    }
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
  }
  { // Inline PTX.
    std::vector<unsigned> h(64);
    for (int i = 0; i < 64; ++i)
      h[i] = 0x9e3779b9u * unsigned(i + 1);
    unsigned *in = app::toDevice(h), *out;
    CHECK(cudaMalloc(&out, 32 * 6 * sizeof(unsigned)));
    bitOps<<<1, 32>>>(in, out);
    std::vector<unsigned> o = app::toHost(out, 32 * 6);
    for (int t = 0; t < 32; ++t) {
      unsigned a = h[t], b = h[t + 32];
      unsigned long long ab = (unsigned long long)b << 32 | a;
      unsigned want[6] = {0};
      for (int k = 0; k < 4; ++k)
        want[0] |= unsigned(ab >> (8 * ((0x5140 >> (4 * k)) & 7)) & 0xff)
                   << (8 * k);
      want[1] = a ^ b ^ (a >> 3);
      want[2] = (a >> 5) & 0x1ff;
      unsigned field = 0x7fu << 8;
      want[3] = (a & ~field) | ((b << 8) & field);
      want[4] = (b << 13) | (a >> 19);
      want[5] = unsigned((unsigned long long)a * b >> 32);
      for (int k = 0; k < 6; ++k)
        EXPECT(o[t * 6 + k] == want[k], "PTX op %d, lane %d: %08x, not %08x", k,
               t, o[t * 6 + k], want[k]);
    }
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
  }
  { // A 6 KiB parameter, 80 KiB of dynamic shared memory.
    Weights p;
    p.n = 1500;
    float sum = 0;
    for (int i = 0; i < p.n; ++i)
      sum += p.w[i] = float(i) * 0.5f;
    float *out;
    CHECK(cudaMalloc(&out, 32 * sizeof(float)));
    bigParameter<<<1, 32>>>(p, out);
    CHECK(cudaGetLastError());
    std::vector<float> o = app::toHost(out, 32);
    for (int i = 0; i < 32; ++i)
      EXPECT(o[i] == sum + float(i), "6 KiB parameter: thread %d", i);
    CHECK(cudaFuncSetAttribute(bigShared,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               kDynamicShared));
    CHECK(cudaMemset(out, 0, sizeof(float)));
    bigShared<<<1, 256, kDynamicShared>>>(out);
    CHECK(cudaGetLastError());
    float got = app::toHost(out, 1)[0];
    const int n = kDynamicShared / 4;
    EXPECT(got == float(n) * float(n - 1) / 2, "80 KiB shared: sum %g", got);
    CHECK(cudaFree(out));
  }
  { // A surface.
    const int w = 40, h = 20;
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
    cudaArray_t array;
    CHECK(cudaMallocArray(&array, &desc, w, h, cudaArraySurfaceLoadStore));
    std::vector<float> img(w * h), back(w * h);
    for (int i = 0; i < w * h; ++i)
      img[i] = float(i) * 0.25f;
    CHECK(cudaMemcpy2DToArray(array, 0, 0, img.data(), w * 4, w * 4, h,
                              cudaMemcpyHostToDevice));
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = array;
    cudaSurfaceObject_t surface;
    CHECK(cudaCreateSurfaceObject(&surface, &res));
    surfaceTwice<<<dim3(3, 3), dim3(16, 8)>>>(surface, w, h);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy2DFromArray(back.data(), w * 4, array, 0, 0, w * 4, h,
                                cudaMemcpyDeviceToHost));
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        EXPECT(back[y * w + x] == img[y * w + x] * 2 + float(x),
               "surface: (%d, %d) is %g", x, y, back[y * w + x]);
    CHECK(cudaDestroySurfaceObject(surface));
    CHECK(cudaFreeArray(array));
  }
  { // 3D copies.
    cudaExtent extent = make_cudaExtent(10 * sizeof(int), 6, 5);
    cudaPitchedPtr device;
    CHECK(cudaMalloc3D(&device, extent));
    std::vector<int> v(10 * 6 * 5), back(v.size(), -1);
    std::iota(v.begin(), v.end(), 0);
    cudaMemcpy3DParms up = {};
    up.srcPtr = make_cudaPitchedPtr(v.data(), 10 * sizeof(int), 10, 6);
    up.dstPtr = device;
    up.extent = extent;
    up.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&up));
    cudaMemcpy3DParms down = {};
    down.srcPtr = device;
    down.dstPtr = make_cudaPitchedPtr(back.data(), 10 * sizeof(int), 10, 6);
    down.extent = extent;
    down.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&down));
    EXPECT(back == v, "cudaMemcpy3D: the bytes differ");
    CHECK(cudaFree(device.ptr));
  }
  { // Atomics and a spin lock.
    double *d;
    unsigned long long *mx;
    int *lock, *counter;
    __half2 *h2;
    CHECK(cudaMalloc(&d, sizeof(double)));
    CHECK(cudaMalloc(&mx, sizeof(unsigned long long)));
    CHECK(cudaMalloc(&lock, sizeof(int)));
    CHECK(cudaMalloc(&counter, sizeof(int)));
    CHECK(cudaMalloc(&h2, sizeof(__half2)));
    for (void *p : {(void *)lock, (void *)counter, (void *)h2})
      CHECK(cudaMemset(p, 0, 4));
    CHECK(cudaMemset(d, 0, sizeof(double)));
    CHECK(cudaMemset(mx, 0, sizeof(unsigned long long)));
    atomics<<<16, 64>>>(d, mx, lock, counter, h2);
    CHECK(cudaDeviceSynchronize());
    double want = 0;
    for (int i = 0; i < 1024; ++i)
      want += 0.5 * (i % 7);
    double gotD = app::toHost(d, 1)[0];
    unsigned long long gotMax = app::toHost(mx, 1)[0];
    int gotCount = app::toHost(counter, 1)[0];
    float2 gotHalf = __half22float2(app::toHost(h2, 1)[0]);
    EXPECT(gotD == want, "double atomicAdd: %g, not %g", gotD, want);
    EXPECT(gotMax == 1023ull * 3, "64-bit atomicMax: %llu", gotMax);
    EXPECT(gotCount == 16, "spin lock: the counter is %d, not 16", gotCount);
    EXPECT(gotHalf.x == 1024 && gotHalf.y == 2048, "__half2 atomicAdd: %g %g",
           gotHalf.x, gotHalf.y);
    for (void *p :
         {(void *)d, (void *)mx, (void *)lock, (void *)counter, (void *)h2})
      CHECK(cudaFree(p));
  }
  std::printf("hwfeatures: named barriers, sub-warp shuffles, inline PTX, "
              "6 KiB parameter, 80 KiB shared, surface, 3D copies, atomics\n");
  app::pass();
  return 0;
}
