//===- wooly-memory-bench.cpp - Swapping tenants' device memory -*- C++ -*-===//
//
// What oversubscription costs on the cpu backend (see bench/README.md):
//
//  1. swap-out and swap-in bandwidth of one allocation (Backend::swapOut /
//     swapIn: a copy to host memory and the pages mapped out; pages mapped
//     in and the copy back) against memcpy of the same size, into a
//     buffer already touched and into a fresh one (page faults included,
//     as a swap pays them), medians of --reps, ratios from the same run;
//  2. through wooly-serve (--device-memory=1.5 x SIZE): the time a
//     tenant's launch (a small kernel, launch + synchronise) takes when its
//     SIZE bytes are resident, and right after they were moved out for
//     another tenant (the launch then waits for its memory to come back,
//     and for the other tenant's to move out), against memcpy of SIZE.
//
//  3. deduplication (the MemoryManager over the cpu backend, in process):
//     N tenants fill an allocation of SIZE with the same bytes, as the
//     server fills one (the write announced, copied, its data hashed, the
//     write ended: a byte comparison with the twin and the pages shared);
//     physical memory and the savings, the time of each fill against
//     memcpy of SIZE, and of a copy on write (a tenant's first write into
//     a shared copy).
//  4. through wooly-serve: while one tenant's memory comes back (on the
//     server's swap thread, each move made longer with --swap-delay-ms),
//     how many launches + synchronisations of another tenant complete, and
//     how long they take, against the same with no swap in flight.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"
#include "ServeUtil.h"

#include "Wooly/Client/Client.h"
#include "Wooly/Runtime/Backend.h"
#include "Wooly/Server/MemoryManager.h"

#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sys/mman.h>
#include <thread>

using namespace wooly;
using bench::Clock;
using bench::die;
using bench::option;

namespace {

constexpr uint64_t kMiB = 1 << 20;

/// A small kernel that touches the tenant's buffer: vec_add of the test
/// corpus (z = x + y over n floats).
std::string vecAddPtx() {
  std::string path =
      std::string(WOOLY_SOURCE_DIR) + "/test/corpus/elementwise.sm_90.ptx";
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    die("cannot read " + path);
  return (*buf)->getBuffer().str();
}

double ms(Clock::time_point a) { return bench::seconds(a, Clock::now()) * 1e3; }

/// memcpy of `bytes` into a touched buffer and into a fresh mapping (page
/// faults included), median ms of `reps`.
std::pair<double, double> memcpyMs(uint64_t bytes, int reps) {
  std::vector<uint8_t> src(bytes, 0x5a), dst(bytes, 0);
  std::vector<double> warm, fresh;
  for (int r = 0; r < reps; ++r) {
    auto t = Clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    warm.push_back(ms(t));
    t = Clock::now();
    void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      die("mmap");
    std::memcpy(p, src.data(), bytes);
    fresh.push_back(ms(t));
    ::munmap(p, bytes);
  }
  return {bench::median(warm), bench::median(fresh)};
}

void swapBandwidth(const std::vector<uint64_t> &sizes, int reps) {
  auto b = createBackend("cpu");
  if (!b)
    die(llvm::toString(b.takeError()));
  Backend &backend = **b;
  std::printf("\n1. swap bandwidth, cpu backend (median of %d; GB/s = 1e9 "
              "bytes/s)\n",
              reps);
  std::printf("%8s %10s %10s %10s %12s %10s %10s %12s %12s\n", "MiB", "out ms",
              "in ms", "memcpy ms", "fresh-cp ms", "out GB/s", "in GB/s",
              "out/memcpy", "in/memcpy");
  for (uint64_t size : sizes) {
    auto a = backend.allocate(size);
    if (!a)
      die(llvm::toString(a.takeError()));
    bench::check(backend.memset(*a, 0x5a, size), "memset");
    std::vector<double> out, in;
    for (int r = 0; r < reps; ++r) {
      auto t = Clock::now();
      bench::check(backend.swapOut(*a), "swapOut");
      out.push_back(ms(t));
      t = Clock::now();
      bench::check(backend.swapIn(*a), "swapIn");
      in.push_back(ms(t));
    }
    uint8_t last = 0;
    bench::check(backend.copyFromDevice(&last, *a + size - 1, 1), "read");
    if (last != 0x5a)
      die("a swapped byte changed");
    bench::check(backend.free(*a), "free");
    auto [cp, fresh] = memcpyMs(size, reps);
    double o = bench::median(out), i = bench::median(in);
    std::printf("%8llu %10.3f %10.3f %10.2f %12.2f %10.0f %10.0f %12.4f "
                "%12.4f\n",
                (unsigned long long)(size / kMiB), o, i, cp, fresh,
                size / o / 1e6, size / i / 1e6, o / cp, i / cp);
  }
}

/// A wooly-serve of the bench's own (stopped at the end), and its clients.
struct Serve {
  std::string dir, endpoint;
  pid_t pid = -1;
  Serve(const std::string &serve, std::vector<std::string> args) {
    dir = bench::makeTempDir("wooly-memory-bench");
    endpoint = "ipc://" + dir + "/serve.sock";
    args.push_back("--listen=" + endpoint);
    args.push_back("--kernel-timeout-ms=0");
    pid = bench::startServe(serve, args, dir + "/serve.log");
  }
  ~Serve() {
    bench::stopServe(pid);
    std::string cmd = "rm -rf '" + dir + "'";
    (void)!std::system(cmd.c_str());
  }
  std::unique_ptr<client::Client> connect(const char *tenant) {
    client::Options o;
    o.server = endpoint;
    o.tenant = tenant;
    o.connectTimeoutMs = 20000;
    client::Status st;
    auto c = client::Client::connect(o, st);
    if (!c)
      fail("connect", st);
    return c;
  }
  void ok(client::Status st, const char *what) {
    if (!st.ok())
      fail(what, st);
  }
  [[noreturn]] void fail(const char *what, const client::Status &st) {
    bench::stopServe(pid);
    die(std::string(what) + ": " + st.str());
  }
};

/// A small kernel run by one tenant: vec_add over 256 floats inside its
/// buffer at `buf`, launched and synchronised.
struct SmallLaunch {
  Serve &serve;
  client::Client &c;
  client::Module m;
  std::vector<uint8_t> params;
  SmallLaunch(Serve &serve, client::Client &c, uint64_t buf)
      : serve(serve), c(c) {
    serve.ok(c.loadModule(vecAddPtx(), "elementwise", m), "load");
    const client::KernelLayout *k = m.findKernel("vec_add");
    if (!k)
      die("no vec_add in the corpus' elementwise.sm_90.ptx");
    params.resize(k->paramBufferSize);
    int32_t n = 256;
    uint64_t x = buf, y = buf + 1024, z = buf + 2048;
    std::memcpy(params.data() + k->paramOffsets[0], &n, 4);
    std::memcpy(params.data() + k->paramOffsets[1], &x, 8);
    std::memcpy(params.data() + k->paramOffsets[2], &y, 8);
    std::memcpy(params.data() + k->paramOffsets[3], &z, 8);
    run(); // compiles the kernel
  }
  /// Its time in ms.
  double run() {
    auto t = Clock::now();
    serve.ok(c.launch(m.handle, "vec_add", {1}, {256}, 0, params.data(),
                      params.size()),
             "launch");
    serve.ok(c.deviceSynchronize(), "sync");
    return ms(t);
  }
};

void firstLaunchWait(const std::string &serveBin, uint64_t size, int reps) {
  std::vector<double> resident, swapped;
  {
    Serve serve(serveBin,
                {"--device-memory=" + std::to_string(size + size / 2)});
    auto a = serve.connect("a"), b = serve.connect("b");
    uint64_t pa = 0, pb = 0;
    serve.ok(a->malloc(size, pa), "malloc a");
    serve.ok(a->memset(pa, 0x5a, size), "memset a");
    SmallLaunch launchA(serve, *a, pa);
    for (int r = 0; r < reps; ++r)
      resident.push_back(launchA.run());
    serve.ok(b->malloc(size, pb), "malloc b"); // moves a's memory out
    for (int r = 0; r < reps; ++r) {
      // b works (a's memory moves out), then a launches.
      serve.ok(b->memset(pb, uint8_t(r), 4096), "memset b");
      serve.ok(b->deviceSynchronize(), "sync b");
      swapped.push_back(launchA.run());
    }
  }
  auto [cp, fresh] = memcpyMs(size, reps);
  double res = bench::median(resident), sw = bench::median(swapped);
  std::printf("%8llu %12.3f %14.3f %10.3f %10.2f %14.4f\n",
              (unsigned long long)(size / kMiB), res, sw, sw - res, cp,
              (sw - res) / cp);
}

/// Section 4: while tenant a's memory comes back (b's moving out for it,
/// on the server's swap thread, each move made to last `delayMs` more
/// with --swap-delay-ms, as a slow link would), tenant c launches small
/// kernels again and again: how many complete during the swap, and how
/// long each takes, against c's launches with no swap in flight.
void launchesDuringSwap(const std::string &serveBin, uint64_t size,
                        unsigned delayMs, int reps) {
  Serve serve(serveBin, {"--device-memory=" + std::to_string(size + size / 2),
                         "--swap-delay-ms=" + std::to_string(delayMs)});
  auto a = serve.connect("a"), b = serve.connect("b"), c = serve.connect("c");
  uint64_t pa = 0, pb = 0, pc = 0;
  serve.ok(a->malloc(size, pa), "malloc a");
  serve.ok(a->memset(pa, 0x5a, size), "memset a");
  serve.ok(b->malloc(size, pb), "malloc b"); // moves a's memory out
  serve.ok(b->memset(pb, 0x33, size), "memset b");
  serve.ok(c->malloc(1 << 20, pc), "malloc c");
  SmallLaunch launchC(serve, *c, pc);
  std::vector<double> idle, during;
  for (int r = 0; r < reps; ++r)
    idle.push_back(launchC.run());
  // a's memset needs its memory back; it waits on a thread of its own.
  std::atomic<bool> back{false};
  double swapMs = 0;
  serve.ok(a->memset(pa, 0x11, 4096, 0, /*async=*/true), "memset a");
  auto start = Clock::now();
  serve.ok(a->flush(), "flush a");
  std::thread waiter([&] {
    serve.ok(a->deviceSynchronize(), "sync a");
    swapMs = ms(start);
    back = true;
  });
  while (!back)
    during.push_back(launchC.run());
  waiter.join();
  double longest = *std::max_element(during.begin(), during.end());
  std::printf("%8llu %10u %10.1f %10zu %12.3f %12.3f %12.3f\n",
              (unsigned long long)(size / kMiB), delayMs, swapMs, during.size(),
              bench::median(idle), bench::median(during), longest);
}

/// Section 3 for `tenants` tenants sharing `size` bytes of weights.
void dedup(uint64_t size, unsigned tenants, int reps) {
  BackendOptions o;
  o.cpuWorkers = 1;
  auto backend = createBackend("cpu", o);
  if (!backend)
    die("cpu backend: " + llvm::toString(backend.takeError()));
  server::MemoryManager mm(**backend, uint64_t(tenants + 1) * size);
  std::vector<uint8_t> weights(size);
  for (uint64_t i = 0; i < size; ++i)
    weights[i] = uint8_t(i * 2654435761u >> 13);
  std::vector<double> fills;
  std::vector<uint64_t> addrs, ids;
  for (unsigned t = 0; t < tenants; ++t) {
    uint64_t id = mm.addTenant("t" + std::to_string(t), 0);
    ids.push_back(id);
    auto a = mm.allocate(id, size);
    if (!a)
      die("allocate: " + llvm::toString(a.takeError()));
    addrs.push_back(*a);
    auto start = Clock::now();
    auto w = mm.beginWrite(id, *a, size);
    if (!w)
      die("beginWrite: " + llvm::toString(w.takeError()));
    if (llvm::Error e = (*backend)->copyToDevice(*a, weights.data(), size))
      die("copy: " + llvm::toString(std::move(e)));
    uint64_t h = contentHashOf(size, [&](uint64_t off, uint64_t n) {
      return llvm::ArrayRef<uint8_t>(weights.data() + off, n);
    });
    mm.endWrite(w->first, h);
    fills.push_back(ms(start));
  }
  server::DeviceMemoryUsage d = mm.device();
  // A copy on write: the last tenant's first write.
  auto start = Clock::now();
  auto w = mm.beginWrite(ids.back(), addrs.back(), 1);
  double cow = ms(start);
  if (!w)
    die("copy on write: " + llvm::toString(w.takeError()));
  mm.endWrite(w->first);
  if (std::string bad = mm.verify(); !bad.empty())
    die("memory manager counters: " + bad);
  double fresh = memcpyMs(size, reps).second;
  // The first fill has no twin; the others compare and share.
  double first = fills.front();
  fills.erase(fills.begin());
  double later = fills.empty() ? 0 : bench::median(fills);
  std::printf("%8u %10llu %12llu %10llu %12.2f %12.2f %10.2f %10.2f %10.2f "
              "%10.2f\n",
              tenants, (unsigned long long)(uint64_t(tenants) * size / kMiB),
              (unsigned long long)(d.physical / kMiB),
              (unsigned long long)(d.saved / kMiB), first, later, cow, fresh,
              later / fresh, cow / fresh);
}

} // namespace

int main(int argc, char **argv) {
  bench::programName = "wooly-memory-bench";
  int reps = std::stoi(option(argc, argv, "reps", "5"));
  std::vector<uint64_t> sizes;
  std::string sizeList = option(argc, argv, "sizes-mib", "16,64,256");
  for (llvm::StringRef s = sizeList; !s.empty();) {
    auto [head, tail] = s.split(',');
    sizes.push_back(std::stoull(head.str()) * kMiB);
    s = tail;
  }
  std::string serve = bench::servePathOr(option(argc, argv, "serve", ""),
                                         argv[0], (void *)&main);
  swapBandwidth(sizes, reps);
  std::printf("\n2. a tenant's launch + synchronise through wooly-serve "
              "(cpu, --device-memory = 1.5 x size; median of %d): resident, "
              "and right after its memory moved out for another tenant\n",
              reps);
  std::printf("%8s %12s %14s %10s %10s %14s\n", "MiB", "resident ms",
              "after-swap ms", "wait ms", "memcpy ms", "wait/memcpy");
  for (uint64_t size : sizes)
    firstLaunchWait(serve, size, reps);
  uint64_t dedupSize = sizes.back();
  std::printf("\n3. deduplication, cpu backend (MemoryManager in process): "
              "N tenants fill %llu MiB with the same bytes; fill = announce "
              "+ copy + hash (+ compare and share for all but the first); "
              "cow = a tenant's first write into the shared copy; against "
              "memcpy into fresh pages\n",
              (unsigned long long)(dedupSize / kMiB));
  std::printf("%8s %10s %12s %10s %12s %12s %10s %10s %10s %10s\n", "tenants",
              "MiB", "physical MiB", "saved MiB", "1st fill ms", "next fill ms",
              "cow ms", "memcpy ms", "fill/cpy", "cow/cpy");
  for (unsigned n : {1u, 2u, 4u, 8u})
    dedup(dedupSize, n, reps);
  unsigned delayMs =
      unsigned(std::stoul(option(argc, argv, "swap-delay-ms", "100")));
  std::printf("\n4. another tenant's launches while a tenant's memory moves "
              "back (wooly-serve, cpu, --device-memory = 1.5 x size, "
              "--swap-delay-ms: each of the 2 moves lasts that much more): "
              "swap = a's wait for its memory; c's launch + synchronise "
              "with no swap (median of %d) and during it\n",
              reps);
  std::printf("%8s %10s %10s %10s %12s %12s %12s\n", "MiB", "delay ms",
              "swap ms", "c launches", "c idle ms", "c during ms", "c max ms");
  for (uint64_t size : sizes)
    launchesDuringSwap(serve, size, delayMs, reps);
  return 0;
}
