// The source of fuzz/corpus/fatbin (fuzz/make-seeds.sh compiles it with
// nvcc -fatbin): two kernels and two module variables, like the protocol
// seeds' PTX module.
__device__ unsigned counter;
__constant__ float scale;

extern "C" __global__ void add(const float *x, float *y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] += scale * x[i];
}

extern "C" __global__ void spin(unsigned *p, unsigned n) {
  for (unsigned i = 0; i < n; ++i)
    atomicAdd(&counter, p[i % 4]);
}
