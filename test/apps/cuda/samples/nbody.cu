//===- nbody.cu - A CUDA-samples-style program ----------------------------===//
//
// N-body forces (GPU Gems 3 style): float4 positions with mass in w, shared
// tiles, rsqrtf, #pragma unroll, one integration step; host reference.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <cstdio>
#include <vector>
#define APP_NAME "sample_nbody"
#include "../CudaApp.h"

constexpr int N = 1024;
constexpr int TILE = 128;
constexpr float SOFT = 0.01f;

__device__ __forceinline__ float3 interact(float4 bi, float4 bj, float3 ai) {
  float3 r = make_float3(bj.x - bi.x, bj.y - bi.y, bj.z - bi.z);
  float d2 = r.x * r.x + r.y * r.y + r.z * r.z + SOFT;
  float inv = rsqrtf(d2);
  float s = bj.w * inv * inv * inv;
  ai.x += r.x * s;
  ai.y += r.y * s;
  ai.z += r.z * s;
  return ai;
}

__global__ void __launch_bounds__(TILE)
    integrate(const float4 *__restrict__ pos, float4 *__restrict__ vel,
              float4 *__restrict__ newPos, float dt, int n) {
  __shared__ float4 tile[TILE];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 me = pos[i];
  float3 acc = make_float3(0, 0, 0);
  for (int t = 0; t < n / TILE; ++t) {
    tile[threadIdx.x] = pos[t * TILE + threadIdx.x];
    __syncthreads();
#pragma unroll 8
    for (int j = 0; j < TILE; ++j)
      acc = interact(me, tile[j], acc);
    __syncthreads();
  }
  float4 v = vel[i];
  v.x += acc.x * dt;
  v.y += acc.y * dt;
  v.z += acc.z * dt;
  vel[i] = v;
  newPos[i] =
      make_float4(me.x + v.x * dt, me.y + v.y * dt, me.z + v.z * dt, me.w);
}

int main() {
  std::vector<float4> pos(N), vel(N), out(N), outVel(N);
  unsigned seed = 12345;
  auto rnd = [&] {
    seed = seed * 1664525u + 1013904223u;
    return (seed >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
  };
  for (int i = 0; i < N; ++i) {
    pos[i] = make_float4(rnd(), rnd(), rnd(), 0.5f + 0.5f * std::fabs(rnd()));
    vel[i] = make_float4(rnd() * 0.1f, rnd() * 0.1f, rnd() * 0.1f, 0);
  }
  float4 *dPos, *dVel, *dNew;
  CHECK(cudaMalloc(&dPos, N * sizeof(float4)));
  CHECK(cudaMalloc(&dVel, N * sizeof(float4)));
  CHECK(cudaMalloc(&dNew, N * sizeof(float4)));
  CHECK(
      cudaMemcpy(dPos, pos.data(), N * sizeof(float4), cudaMemcpyHostToDevice));
  CHECK(
      cudaMemcpy(dVel, vel.data(), N * sizeof(float4), cudaMemcpyHostToDevice));
  const float dt = 0.001f;
  integrate<<<N / TILE, TILE>>>(dPos, dVel, dNew, dt, N);
  CHECK(cudaGetLastError());
  CHECK(
      cudaMemcpy(out.data(), dNew, N * sizeof(float4), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(outVel.data(), dVel, N * sizeof(float4),
                   cudaMemcpyDeviceToHost));
  double maxErr = 0;
  for (int i = 0; i < N; ++i) {
    double ax = 0, ay = 0, az = 0;
    for (int j = 0; j < N; ++j) {
      double rx = pos[j].x - pos[i].x, ry = pos[j].y - pos[i].y,
             rz = pos[j].z - pos[i].z;
      double d2 = rx * rx + ry * ry + rz * rz + SOFT;
      double s = pos[j].w / (d2 * std::sqrt(d2));
      ax += rx * s;
      ay += ry * s;
      az += rz * s;
    }
    double vx = vel[i].x + ax * dt, vy = vel[i].y + ay * dt,
           vz = vel[i].z + az * dt;
    double e = std::fabs(outVel[i].x - vx) + std::fabs(outVel[i].y - vy) +
               std::fabs(outVel[i].z - vz) +
               std::fabs(out[i].x - (pos[i].x + vx * dt)) +
               std::fabs(out[i].w - pos[i].w);
    if (e > maxErr)
      maxErr = e;
  }
  std::printf("nbody: n = %d, max error %.3g\n", N, maxErr);
  EXPECT(maxErr < 1e-3, "max error %g", maxErr);
  app::pass();
  return 0;
}
