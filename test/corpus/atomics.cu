// Atomic operations on global memory.
// Integer results are order-independent (deterministic), except atomicExch.
// The CAS float max is deterministic; the float sum in atomic_add_f32 and the
// CAS double sum in atomic_cas_loops are ORDER-DEPENDENT in floating point.

// *sum_i += in[i] (int) and *sum_f += (float)in[i]  (float sum is order-dependent)
extern "C" __global__ void atomic_add_f32(int n, const int* in, int* sum_i, float* sum_f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicAdd(sum_i, in[i]);
    atomicAdd(sum_f, (float)in[i]);
  }
}

// res[0]=max, res[1]=min, res[2]=exchange (some in[i], nondeterministic which),
// res[3]=atomicInc counter wrapping at 1000 (final value = n % 1001);
// res[4]=number of threads whose atomicCAS(res[5], 0, i+1) succeeded (exactly 1 if n>0)
extern "C" __global__ void atomic_int_misc(int n, const int* in, int* res) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  atomicMax(&res[0], v);
  atomicMin(&res[1], v);
  atomicExch(&res[2], v);
  atomicInc(reinterpret_cast<unsigned*>(&res[3]), 1000u);
  if (atomicCAS(&res[5], 0, i + 1) == 0) atomicAdd(&res[4], 1);
  atomicMax(reinterpret_cast<unsigned*>(&res[6]), (unsigned)v);   // unsigned max
}

// Float max via atomicCAS loop on the bit pattern (deterministic result)
__device__ __noinline__ float atomic_max_float(float* addr, float val) {
  int* p = reinterpret_cast<int*>(addr);
  int old = *p, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= val) break;
    old = atomicCAS(p, assumed, __float_as_int(val));
  } while (old != assumed);
  return __int_as_float(old);
}

// Double add via 64-bit atomicCAS loop (order-dependent rounding)
__device__ __noinline__ double atomic_add_double_cas(double* addr, double val) {
  unsigned long long* p = reinterpret_cast<unsigned long long*>(addr);
  unsigned long long old = *p, assumed;
  do {
    assumed = old;
    old = atomicCAS(p, assumed, __double_as_longlong(val + __longlong_as_double(assumed)));
  } while (old != assumed);
  return __longlong_as_double(old);
}

// *mx = max(x[i]) via CAS loop; *sum = sum((double)x[i]) via CAS loop
extern "C" __global__ void atomic_cas_loops(int n, const float* x, float* mx, double* sum) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomic_max_float(mx, x[i]);
    atomic_add_double_cas(sum, (double)x[i]);
  }
}
