//===- wooly-coalesce-bench.cpp - Small launches of many tenants --------===//
//
// Many tenants each launching a small kernel and waiting for it (an
// inference-style request loop), on wooly-serve's CPU backend with
// coalescing off and on (`--coalesce`): launches per second over all
// tenants, each tenant's launch latency, and how many launches ran fused
// (from the server's trace). Every result is checked against the host.
// Both servers run in this one process's run, so the ratio is from one run
// (see bench/README.md).
//
//===----------------------------------------------------------------------===//

#include "ServeUtil.h"

#include "Wooly/Client/Client.h"
#include "Wooly/Server/Scheduler.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <csignal>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace wooly;
using namespace wooly::bench;
namespace client = wooly::client;

static llvm::cl::opt<unsigned>
    numTenants("tenants", llvm::cl::desc("Tenants (one thread each)"),
               llvm::cl::init(8));
static llvm::cl::opt<unsigned>
    launches("launches", llvm::cl::desc("Launches per tenant measured"),
             llvm::cl::init(300));
static llvm::cl::opt<unsigned>
    blocks("blocks", llvm::cl::desc("Blocks of 64 threads per launch"),
           llvm::cl::init(2));
static llvm::cl::opt<unsigned>
    batch("batch",
          llvm::cl::desc("Launches between two synchronisations (the "
                         "latency is per batch)"),
          llvm::cl::init(1));
static llvm::cl::opt<unsigned>
    executors("executors",
              llvm::cl::desc("wooly-serve --executors (0: its default)"),
              llvm::cl::init(0));
static llvm::cl::opt<std::string>
    servePath("serve", llvm::cl::desc("wooly-serve (default: beside this "
                                      "program)"));

namespace {

/// Two modules: tenants alternate between them, so that both one kernel of
/// several tenants and different kernels fuse.
const char *kPtx[2] = {R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry axpb(.param .u64 out, .param .u64 in, .param .u32 a)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in];
  ld.param.u32 %r1, [a];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.u32 %r5, %r2, %r3, %r4;
  mul.wide.u32 %rd3, %r5, 4;
  add.u64 %rd4, %rd2, %rd3;
  ld.global.u32 %r6, [%rd4];
  mad.lo.u32 %r6, %r6, %r1, 7;
  add.u64 %rd5, %rd1, %rd3;
  st.global.u32 [%rd5], %r6;
  ret;
}
)",
                       R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry xorsq(.param .u64 out, .param .u64 in, .param .u32 a)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in];
  ld.param.u32 %r1, [a];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.u32 %r5, %r2, %r3, %r4;
  mul.wide.u32 %rd3, %r5, 4;
  add.u64 %rd4, %rd2, %rd3;
  ld.global.u32 %r6, [%rd4];
  mul.lo.u32 %r6, %r6, %r6;
  xor.b32 %r6, %r6, %r1;
  add.u64 %rd5, %rd1, %rd3;
  st.global.u32 [%rd5], %r6;
  ret;
}
)"};
const char *kKernel[2] = {"axpb", "xorsq"};

uint32_t expect(int kind, uint32_t x, uint32_t a) {
  return kind == 0 ? x * a + 7 : (x * x) ^ a;
}

std::string tempDir;
pid_t live = -1;

void onSignal(int sig) {
  if (live > 0)
    ::kill(live, SIGTERM);
  ::_exit(128 + sig);
}

struct Result {
  double launchesPerSecond = 0, p50 = 0, p99 = 0;
  uint64_t fused = 0, total = 0;
};

Result runCase(const std::string &name, bool coalesce) {
  std::string endpoint = "ipc://" + tempDir + "/" + name + ".sock";
  std::string trace = tempDir + "/" + name + ".json";
  std::vector<std::string> args = {"--listen=" + endpoint, "--trace=" + trace,
                                   std::string("--coalesce=") +
                                       (coalesce ? "true" : "false")};
  if (executors)
    args.push_back("--executors=" + std::to_string(executors));
  live = startServe(servePath, args, tempDir + "/" + name + ".log");

  const uint32_t n = blocks * 64;
  std::mutex mutex;
  std::vector<double> latencies;
  std::string failure;
  std::atomic<unsigned> warm{0};
  std::atomic<bool> go{false};
  auto tenant = [&](unsigned i) {
    auto fail = [&](const std::string &what) {
      std::lock_guard<std::mutex> lock(mutex);
      if (failure.empty())
        failure = "tenant " + std::to_string(i) + ": " + what;
      warm++;
    };
    client::Options o;
    o.server = endpoint;
    o.tenant = "t" + std::to_string(i);
    o.clientName = "wooly-coalesce-bench";
    o.connectTimeoutMs = 20000;
    client::Status st;
    auto c = client::Client::connect(o, st);
    if (!c)
      return fail("connect: " + st.str());
    int kind = int(i % 2);
    client::Module m;
    uint64_t in = 0, out = 0;
    if (!(st = c->loadModule(kPtx[kind], "m", m)).ok() ||
        !(st = c->malloc(n * 4, in)).ok() || !(st = c->malloc(n * 4, out)).ok())
      return fail(st.str());
    std::vector<uint32_t> input(n), got(n);
    for (uint32_t j = 0; j < n; ++j)
      input[j] = j * 2654435761u + i;
    if (!(st = c->copyToDevice(in, input.data(), n * 4)).ok())
      return fail(st.str());
    const client::KernelLayout *k = m.findKernel(kKernel[kind]);
    std::vector<uint8_t> params(k->paramBufferSize);
    uint32_t a = 3 + 2 * i;
    std::memcpy(params.data() + k->paramOffsets[0], &out, 8);
    std::memcpy(params.data() + k->paramOffsets[1], &in, 8);
    std::memcpy(params.data() + k->paramOffsets[2], &a, 4);
    auto one = [&](unsigned count) {
      client::Status s;
      for (unsigned b = 0; b < count && s.ok(); ++b)
        s = c->launch(m.handle, kKernel[kind], {blocks}, {64}, 0, params.data(),
                      params.size());
      return s.ok() ? c->deviceSynchronize() : s;
    };
    // Warm up: compile, and let the scheduler measure the kernel alone.
    for (int w = 0; w < 5; ++w)
      if (!(st = one(1)).ok())
        return fail(st.str());
    warm++;
    while (!go)
      std::this_thread::yield();
    std::vector<double> mine;
    for (unsigned r = 0; r < launches; r += batch) {
      auto t0 = Clock::now();
      if (!(st = one(std::min<unsigned>(batch, launches - r))).ok())
        return fail(st.str());
      mine.push_back(seconds(t0, Clock::now()) * 1000);
    }
    if (!(st = c->copyFromDevice(got.data(), out, n * 4)).ok())
      return fail(st.str());
    for (uint32_t j = 0; j < n; ++j)
      if (got[j] != expect(kind, input[j], a))
        return fail(llvm::formatv("out[{0}] = {1}, expected {2}", j, got[j],
                                  expect(kind, input[j], a)));
    std::lock_guard<std::mutex> lock(mutex);
    latencies.insert(latencies.end(), mine.begin(), mine.end());
  };
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < numTenants; ++i)
    threads.emplace_back(tenant, i);
  while (warm < numTenants)
    std::this_thread::yield();
  auto t0 = Clock::now();
  go = true;
  for (std::thread &t : threads)
    t.join();
  double wall = seconds(t0, Clock::now());
  stopServe(live);
  if (!failure.empty())
    die(name + ": " + failure);

  Result r;
  r.launchesPerSecond = double(numTenants) * launches / wall;
  r.p50 = server::percentile(latencies, 0.5);
  r.p99 = server::percentile(latencies, 0.99);
  // The trace has a span per launch; fused ones say with how many others.
  auto buf = llvm::MemoryBuffer::getFile(trace);
  if (buf) {
    llvm::StringRef text = (*buf)->getBuffer();
    for (llvm::StringRef k : {kKernel[0], kKernel[1]}) {
      std::string needle = std::string("\"name\":\"") + k.str() + "\"";
      for (size_t at = text.find(needle); at != llvm::StringRef::npos;
           at = text.find(needle, at + 1)) {
        r.total++;
        size_t end = text.find('}', text.find("\"args\"", at));
        if (text.slice(at, end).contains("coalesced_with"))
          r.fused++;
      }
    }
  }
  return r;
}

} // namespace

int main(int argc, char **argv) {
  programName = "wooly-coalesce-bench";
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "wooly-coalesce-bench: many tenants' small launches, coalesced or "
      "not\n\n"
      "Starts wooly-serve (cpu backend) with --coalesce=false, then true;\n"
      "--tenants threads each launch a small kernel and wait for it,\n"
      "--launches times. Prints launches per second, latency quantiles and\n"
      "the launches that ran fused (from the server's trace); every result\n"
      "is checked.\n");
  servePath = servePathOr(servePath, argv[0], (void *)&main);
  tempDir = makeTempDir("wooly-coalesce-bench");
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);

  llvm::outs() << llvm::formatv(
      "{0} tenants, each {1} launches of {2} blocks x 64 threads, {3} "
      "between synchronisations (latency: per synchronisation), two kernels "
      "of two modules\n\n",
      numTenants.getValue(), launches.getValue(), blocks.getValue(),
      batch.getValue());
  llvm::outs() << llvm::formatv("{0,-16} {1,12} {2,9} {3,9} {4,14}\n", "server",
                                "launches/s", "p50 ms", "p99 ms", "ran fused");
  Result off = runCase("off", false);
  Result on = runCase("on", true);
  for (auto [name, r] :
       {std::pair{"--coalesce=false", off}, std::pair{"--coalesce=true", on}})
    llvm::outs() << llvm::formatv("{0,-16} {1,12:f0} {2,9:f3} {3,9:f3} "
                                  "{4,7}/{5,-6}\n",
                                  name, r.launchesPerSecond, r.p50, r.p99,
                                  r.fused, r.total);
  llvm::outs() << llvm::formatv(
      "coalesce: throughput x{0:f2}, p50 latency x{1:f2}\n",
      on.launchesPerSecond / off.launchesPerSecond, on.p50 / off.p50);
  llvm::sys::fs::remove_directories(tempDir);
  return 0;
}
