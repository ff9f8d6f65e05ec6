//===- saxpy.cpp - A tenant: saxpy rounds on two streams --------*- C++ -*-===//
//
// wooly-app-saxpy --ptx=elementwise.sm_90.ptx [--n=N] [--rounds=R]
//
// Runs R rounds of y = a*x + y on two streams (half of the vector each,
// asynchronous copies, launches and event records, the way a CUDA program
// overlaps work), then checks y bit for bit against the host (nvcc
// contracts a*x+y to one fused multiply-add: std::fma). Exits 0 when every
// element matches.
//
//===----------------------------------------------------------------------===//

#include "AppUtil.h"

#include <cmath>

using namespace wooly::client;

int main(int argc, char **argv) {
  std::string ptxPath = app::option(argc, argv, "ptx", "");
  if (ptxPath.empty()) {
    std::fprintf(stderr, "usage: wooly-app-saxpy --ptx=elementwise.sm_90.ptx "
                         "[--n=N] [--rounds=R]\n");
    return 2;
  }
  int n = std::atoi(app::option(argc, argv, "n", "1048576").c_str());
  int rounds = std::atoi(app::option(argc, argv, "rounds", "4").c_str());
  if (n <= 0 || n % 2 || rounds <= 0) {
    std::fprintf(stderr, "--n must be positive and even, --rounds positive\n");
    return 2;
  }
  Status s;
  Options o;
  o.clientName = "wooly-app-saxpy";
  std::unique_ptr<Client> c = Client::connect(o, s);
  app::check(s, "connect");
  DeviceProperties dev;
  app::check(c->getDevice(dev), "device");
  std::printf("saxpy: tenant '%s' on %s (%u SMs, sm_%u%u)\n",
              c->session().tenant.c_str(), dev.name.c_str(), dev.smCount,
              dev.computeMajor, dev.computeMinor);

  Module m;
  app::check(c->loadModule(app::readFile(ptxPath), "elementwise", m), "load");
  const KernelLayout *saxpy = m.findKernel("saxpy");
  if (!saxpy) {
    std::fprintf(stderr, "no saxpy kernel in %s\n", ptxPath.c_str());
    return 1;
  }

  std::vector<float> x(n), y(n), expect(n);
  app::Random rng(42);
  for (int i = 0; i < n; ++i) {
    x[i] = rng.unit();
    y[i] = rng.unit();
  }
  uint64_t dx, dy, bytes = uint64_t(n) * 4;
  app::check(c->malloc(bytes, dx), "malloc x");
  app::check(c->malloc(bytes, dy), "malloc y");
  uint64_t streams[2], start, stop;
  app::check(c->streamCreate(streams[0]), "stream");
  app::check(c->streamCreate(streams[1]), "stream");
  app::check(c->eventCreate(start), "event");
  app::check(c->eventCreate(stop), "event");

  int half = n / 2;
  app::check(c->eventRecord(start, streams[0]), "record");
  for (int k = 0; k < 2; ++k) {
    uint64_t off = uint64_t(k) * half * 4;
    app::check(c->copyToDevice(dx + off, x.data() + k * half, half * 4,
                               streams[k], /*async=*/true),
               "copy x");
    app::check(c->copyToDevice(dy + off, y.data() + k * half, half * 4,
                               streams[k], /*async=*/true),
               "copy y");
  }
  for (int r = 0; r < rounds; ++r) {
    float a = 0.5f + 0.25f * float(r);
    for (int k = 0; k < 2; ++k) {
      app::Params p(*saxpy);
      p.add(int32_t(half))
          .add(a)
          .add(dx + uint64_t(k) * half * 4)
          .add(dy + uint64_t(k) * half * 4);
      app::check(c->launch(m.handle, "saxpy", {uint32_t((half + 255) / 256)},
                           {256}, 0, p.data(), p.size(), streams[k]),
                 "launch");
    }
    for (int i = 0; i < n; ++i)
      y[i] = std::fma(a, x[i], y[i]);
  }
  app::check(c->streamWaitEvent(streams[0], start), "wait event");
  app::check(c->eventRecord(stop, streams[1]), "record");
  std::vector<float> got(n);
  for (int k = 0; k < 2; ++k)
    app::check(c->copyFromDevice(got.data() + k * half,
                                 dy + uint64_t(k) * half * 4, half * 4,
                                 streams[k]),
               "copy back");
  app::check(c->eventSynchronize(stop), "event sync");
  float ms = 0;
  app::check(c->eventElapsed(start, stop, ms), "elapsed");
  long bad = 0;
  for (int i = 0; i < n; ++i)
    if (std::memcmp(&got[i], &y[i], 4) != 0 && bad++ < 5)
      std::fprintf(stderr, "y[%d] = %a, expected %a\n", i, got[i], y[i]);
  app::check(c->free(dx), "free");
  app::check(c->free(dy), "free");
  app::check(c->deviceSynchronize(), "sync");
  if (bad) {
    std::printf("saxpy: FAILED, %ld of %d elements differ\n", bad, n);
    return 1;
  }
  std::printf("saxpy: %d rounds over %d floats on 2 streams: all %d results "
              "bit-identical to the host (%.1f ms between the events)\n",
              rounds, n, n, ms);
  return 0;
}
