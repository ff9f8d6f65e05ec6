//===- funcptr.cu - A CUDA-samples-style program --------------------------===//
//
// Device function pointers (a table in __device__ memory, a pointer copied to
// the host with cudaMemcpyFromSymbol and passed back as a kernel argument),
// functor templates, extended __device__ lambdas, virtual functions on
// objects built in device memory by placement new, __constant__ coefficients
// set with cudaMemcpyToSymbol, printf from the device, and new/delete on the
// device heap.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <cstdio>
#include <new>
#include <vector>
#define APP_NAME "sample_funcptr"
#include "../CudaApp.h"

typedef float (*UnaryOp)(float);

__device__ float square(float x) { return x * x; }
__device__ float negate(float x) { return -x; }
__device__ float halve(float x) { return x * 0.5f; }

__device__ UnaryOp opTable[3] = {square, negate, halve};
__device__ UnaryOp squarePtr = square;

__constant__ float poly[4]; // c0 + c1 x + c2 x^2 + c3 x^3

__global__ void applyTable(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = opTable[i % 3](in[i]);
}

__global__ void applyPointer(UnaryOp op, const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = op(in[i]);
}

struct Horner {
  __device__ float operator()(float x) const {
    return ((poly[3] * x + poly[2]) * x + poly[1]) * x + poly[0];
  }
};

template <typename F>
__global__ void transform(const float *in, float *out, int n, F f) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x)
    out[i] = f(in[i]);
}

struct Shape {
  __device__ virtual float area() const = 0;
  // Its deleting variant calls the device heap's free.
  __device__ virtual ~Shape() {}
};
struct Square : Shape {
  float side;
  __device__ Square(float s) : side(s) {}
  __device__ float area() const override { return side * side; }
};
struct Rect : Shape {
  float w, h;
  __device__ Rect(float a, float b) : w(a), h(b) {}
  __device__ float area() const override { return w * h; }
};

union ShapeStorage {
  Square sq;
  Rect rect;
  __device__ ShapeStorage() {}
};

__global__ void shapes(ShapeStorage *storage, float *areas, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  Shape *s;
  if (i % 2)
    s = new (&storage[i].rect) Rect(float(i), 2.0f);
  else
    s = new (&storage[i].sq) Square(float(i));
  areas[i] = s->area();
  if (i == 5)
    printf("device: shape %d area %.1f, poly[3] = %.2f\n", i, areas[i],
           poly[3]);
}

// The device heap: new and delete (malloc and free).
__global__ void heap(int *out) {
  int *p = new int[4];
  for (int k = 0; k < 4; ++k)
    p[k] = k * 10 + threadIdx.x;
  out[threadIdx.x] = p[3];
  delete[] p;
}

int main() {
  const int n = 300;
  std::vector<float> in(n), out(n);
  for (int i = 0; i < n; ++i)
    in[i] = (i - 150) * 0.01f;
  float *dIn, *dOut, *dAreas;
  ShapeStorage *dStorage;
  CHECK(cudaMalloc(&dIn, n * sizeof(float)));
  CHECK(cudaMalloc(&dOut, n * sizeof(float)));
  CHECK(cudaMalloc(&dAreas, n * sizeof(float)));
  CHECK(cudaMalloc(&dStorage, n * sizeof(ShapeStorage)));
  CHECK(cudaMemcpy(dIn, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  const float coeffs[4] = {1.0f, -2.0f, 0.5f, 0.25f};
  CHECK(cudaMemcpyToSymbol(poly, coeffs, sizeof(coeffs)));
  int bad = 0;
  auto expect = [&](const char *what, auto ref) {
    CHECK(cudaMemcpy(out.data(), dOut, n * sizeof(float),
                     cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
      float want = ref(i);
      if (std::fabs(out[i] - want) > 1e-5f * (1 + std::fabs(want)) && bad++ < 5)
        std::printf("%s[%d] = %g, want %g\n", what, i, out[i], want);
    }
  };
  applyTable<<<(n + 127) / 128, 128>>>(dIn, dOut, n);
  CHECK(cudaGetLastError());
  expect("table", [&](int i) {
    float x = in[i];
    return i % 3 == 0 ? x * x : i % 3 == 1 ? -x : x * 0.5f;
  });
  UnaryOp hostCopy;
  CHECK(cudaMemcpyFromSymbol(&hostCopy, squarePtr, sizeof(UnaryOp)));
  applyPointer<<<(n + 127) / 128, 128>>>(hostCopy, dIn, dOut, n);
  CHECK(cudaGetLastError());
  expect("pointer", [&](int i) { return in[i] * in[i]; });
  transform<<<2, 64>>>(dIn, dOut, n, Horner());
  CHECK(cudaGetLastError());
  expect("horner", [&](int i) {
    float x = in[i];
    return ((coeffs[3] * x + coeffs[2]) * x + coeffs[1]) * x + coeffs[0];
  });
  float k = 3.0f;
  transform<<<2, 64>>>(dIn, dOut, n,
                       [=] __device__(float x) { return k * x + 1.0f; });
  CHECK(cudaGetLastError());
  expect("lambda", [&](int i) { return k * in[i] + 1.0f; });
  shapes<<<(n + 127) / 128, 128>>>(dStorage, dOut, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  expect("shapes",
         [&](int i) { return i % 2 ? float(i) * 2.0f : float(i) * float(i); });
  EXPECT(bad == 0, "%d mismatches", bad);
  int *dHeap, heapOut[4] = {};
  CHECK(cudaMalloc(&dHeap, sizeof(heapOut)));
  heap<<<1, 4>>>(dHeap);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(heapOut, dHeap, sizeof(heapOut), cudaMemcpyDeviceToHost));
  for (int t = 0; t < 4; ++t)
    EXPECT(heapOut[t] == 30 + t, "heap[%d] = %d", t, heapOut[t]);
  std::printf("device heap: new/delete work\n");
  app::pass();
  return 0;
}
