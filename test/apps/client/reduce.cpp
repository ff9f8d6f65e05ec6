//===- reduce.cpp - A tenant: block reductions with shuffles ----*- C++ -*-===//
//
// wooly-app-reduce --ptx=reduction.sm_90.ptx [--n=N] [--rounds=R]
//
// Sums integers per block with `block_sum_i32` (shared memory, barriers,
// warp shuffles), R times over new data, and checks every block's sum
// exactly against the host. Exits 0 when all match.
//
//===----------------------------------------------------------------------===//

#include "AppUtil.h"

using namespace wooly::client;

int main(int argc, char **argv) {
  std::string ptxPath = app::option(argc, argv, "ptx", "");
  if (ptxPath.empty()) {
    std::fprintf(stderr, "usage: wooly-app-reduce --ptx=reduction.sm_90.ptx "
                         "[--n=N] [--rounds=R]\n");
    return 2;
  }
  int n = std::atoi(app::option(argc, argv, "n", "65536").c_str());
  int rounds = std::atoi(app::option(argc, argv, "rounds", "3").c_str());
  if (n <= 0 || rounds <= 0) {
    std::fprintf(stderr, "--n and --rounds must be positive\n");
    return 2;
  }
  Status s;
  Options o;
  o.clientName = "wooly-app-reduce";
  std::unique_ptr<Client> c = Client::connect(o, s);
  app::check(s, "connect");
  Module m;
  app::check(c->loadModule(app::readFile(ptxPath), "reduction", m), "load");
  const KernelLayout *k = m.findKernel("block_sum_i32");
  if (!k) {
    std::fprintf(stderr, "no block_sum_i32 kernel in %s\n", ptxPath.c_str());
    return 1;
  }
  const int block = 256, blocks = (n + block - 1) / block;
  uint64_t din, dout;
  app::check(c->malloc(uint64_t(n) * 4, din), "malloc in");
  app::check(c->malloc(uint64_t(blocks) * 4, dout), "malloc out");
  uint64_t free = 0, total = 0;
  app::check(c->memInfo(free, total), "meminfo");
  std::printf("reduce: tenant '%s', quota %llu MiB, %llu MiB free\n",
              c->session().tenant.c_str(), (unsigned long long)(total >> 20),
              (unsigned long long)(free >> 20));
  std::vector<int32_t> in(n), out(blocks);
  app::Random rng(7);
  long bad = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < n; ++i)
      in[i] = int32_t(rng.next() % 2001) - 1000;
    app::check(c->copyToDevice(din, in.data(), uint64_t(n) * 4), "copy in");
    app::check(c->memset(dout, 0xff, uint64_t(blocks) * 4, 0, true), "memset");
    app::Params p(*k);
    p.add(int32_t(n)).add(din).add(dout);
    app::check(c->launch(m.handle, "block_sum_i32", {uint32_t(blocks)},
                         {uint32_t(block)}, 0, p.data(), p.size()),
               "launch");
    app::check(c->copyFromDevice(out.data(), dout, uint64_t(blocks) * 4),
               "copy out");
    for (int b = 0; b < blocks; ++b) {
      int32_t sum = 0;
      for (int i = b * block; i < std::min(n, (b + 1) * block); ++i)
        sum += in[i];
      if (out[b] != sum && bad++ < 5)
        std::fprintf(stderr, "round %d block %d: %d, expected %d\n", r, b,
                     out[b], sum);
    }
  }
  app::check(c->free(din), "free");
  app::check(c->free(dout), "free");
  if (bad) {
    std::printf("reduce: FAILED, %ld block sums differ\n", bad);
    return 1;
  }
  std::printf("reduce: %d rounds of %d block sums (barriers, warp shuffles): "
              "all exact\n",
              rounds, blocks);
  return 0;
}
