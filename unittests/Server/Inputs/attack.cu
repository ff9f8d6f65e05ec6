//===- attack.cu - Kernels that try to reach another tenant's memory ------===//
//
// The attacker's kernels of ServerTest.AttackerReachesNoOtherTenantsMemory
// (attack.ptx beside this file is nvcc 13's `-arch=sm_80 -ptx` of it).
//
//===----------------------------------------------------------------------===//

#include <cstdio>
// Reads 64 words at src into dst.
extern "C" __global__ void steal(const unsigned *src, unsigned *dst) {
  dst[threadIdx.x] = src[threadIdx.x];
}
// The same with src = base + offset (an adjacent or guessed address).
extern "C" __global__ void stealAt(const char *base, long long offset,
                                   unsigned *dst) {
  dst[threadIdx.x] =
      reinterpret_cast<const unsigned *>(base + offset)[threadIdx.x];
}
// The pointer smuggled as an integer: src = bits ^ key.
extern "C" __global__ void stealXor(unsigned long long bits,
                                    unsigned long long key, unsigned *dst) {
  const unsigned *src = reinterpret_cast<const unsigned *>(bits ^ key);
  dst[threadIdx.x] = src[threadIdx.x];
}
// Overwrites 64 words at dst.
extern "C" __global__ void scribble(unsigned *dst) {
  dst[threadIdx.x] = 0xDEADu;
}
// Prints the string at p.
extern "C" __global__ void leak(const char *p) { printf("%s\n", p); }
// Atomically adds to a word at p.
extern "C" __global__ void bump(unsigned *p) { atomicAdd(p, 1u); }
