//===- wooly-serve.cpp - Share one device among many tenants ----*- C++ -*-===//
//
// A thin main over the server library (include/Wooly/Server/Server.h):
// parses the options, starts the server, turns SIGINT/SIGTERM into a
// clean drain and exit.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Server/Server.h"
#include "Wooly/Server/Tenants.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <unistd.h>

using namespace llvm;

static cl::OptionCategory cat("wooly-serve options");

static cl::list<std::string> listen(
    "listen",
    cl::desc("ZeroMQ endpoint to serve on, ipc://PATH or tcp://HOST:PORT "
             "(repeat for several; default: ipc:///tmp/wooly-<uid>.sock, the "
             "clients' default)"),
    cl::value_desc("endpoint"), cl::cat(cat));
static cl::opt<std::string>
    backendName("backend",
                cl::desc("Device all tenants share: cpu (the embedded CPU "
                         "backend, default) or cuda (an NVIDIA GPU)"),
                cl::init("cpu"), cl::cat(cat));
static cl::opt<std::string> tenantsFile(
    "tenants",
    cl::desc("YAML file of tenants (name, token, class, weight, sla_ms, "
             "memory). Without it any tenant name is accepted without a "
             "token, in class normal"),
    cl::value_desc("file"), cl::cat(cat));
static cl::opt<std::string> metrics(
    "metrics",
    cl::desc("Serve Prometheus metrics at http://HOST:PORT/metrics (port 0: "
             "a free one, logged at start-up)"),
    cl::value_desc("host:port"), cl::cat(cat));
static cl::opt<std::string>
    cacheDir("cache-dir",
             cl::desc("Directory of the compile cache on disk (default: "
                      "memory only)"),
             cl::value_desc("dir"), cl::cat(cat));
static cl::opt<std::string> deviceMemory(
    "device-memory",
    cl::desc("Device memory all tenants share (e.g. 8GiB; cpu default "
             "4GiB; cuda: at most the GPU's free memory, the default). "
             "Quotas may add up to more: idle tenants' memory moves to host "
             "memory when it is needed (cpu; cuda with --cuda-swap)"),
    cl::value_desc("bytes"), cl::cat(cat));
static cl::opt<bool> cudaSwap(
    "cuda-swap",
    cl::desc("cuda: allocate device memory with the virtual memory "
             "management API (cuMemAddressReserve/cuMemCreate/cuMemMap), so "
             "that idle tenants' memory can move to host memory and back "
             "at the same addresses (oversubscription), and identical "
             "read-only buffers share one physical copy (deduplication). "
             "Allocations and frees then synchronise with the device"),
    cl::init(false), cl::cat(cat));
static cl::opt<unsigned> swapDelayMs(
    "swap-delay-ms",
    cl::desc("Testing: pause this long before moving each allocation in or "
             "out, so that a swap lasts"),
    cl::init(0), cl::Hidden, cl::cat(cat));
static cl::opt<unsigned>
    executors("executors",
              cl::desc("Threads running launches and copies (default: one "
                       "per core for cpu, 4 for cuda: each with a stream "
                       "of its own)"),
              cl::init(0), cl::cat(cat));
static cl::opt<unsigned>
    compileThreads("compile-threads",
                   cl::desc("Threads compiling kernels (default 2)"),
                   cl::init(0), cl::cat(cat));
static cl::opt<unsigned>
    cpuWorkers("cpu-workers",
               cl::desc("Worker threads of the cpu backend (default: one "
                        "per core)"),
               cl::init(0), cl::cat(cat));
static cl::opt<unsigned> drainTimeout(
    "drain-timeout-ms",
    cl::desc("On SIGINT/SIGTERM, how long queued work may finish (default "
             "10000)"),
    cl::init(10000), cl::cat(cat));
static cl::opt<std::string> maxMessage(
    "max-message",
    cl::desc("Largest message (and copy) a client may send (default 2GiB)"),
    cl::value_desc("bytes"), cl::init("2GiB"), cl::cat(cat));
static cl::opt<unsigned> maxOutstanding(
    "max-outstanding",
    cl::desc("Operations (launches, copies, memsets) a session may have "
             "queued or running before its calls fail with LIMIT_EXCEEDED "
             "(default 65536; a tenant's limits.outstanding overrides it)"),
    cl::init(1 << 16), cl::cat(cat));
static cl::opt<std::string> maxOutstandingBytes(
    "max-outstanding-bytes",
    cl::desc("Bytes of copies to the device the server may hold for a "
             "session until they run (default 4GiB; a tenant's "
             "limits.outstanding_bytes overrides it)"),
    cl::value_desc("bytes"), cl::init("4GiB"), cl::cat(cat));
static cl::opt<std::string> maxGraphBytes(
    "max-graph-bytes",
    cl::desc("What a session's CUDA graphs kept on the server may hold "
             "(default 256MiB)"),
    cl::value_desc("bytes"), cl::init("256MiB"), cl::cat(cat));

static cl::opt<std::string> scheduler(
    "scheduler",
    cl::desc("Dispatch policy: wooly (default: strict priority classes, "
             "weighted fair share, SLA pacing) or fifo (arrival order)"),
    cl::init("wooly"), cl::cat(cat));
static cl::opt<bool> pacing(
    "pacing",
    cl::desc("wooly: while a latency-critical tenant is configured, run "
             "other tenants' kernels sliced and preemptible so its kernels "
             "start within its SLA (cpu and cuda; default true)"),
    cl::init(true), cl::cat(cat));
static cl::opt<std::string> curveKeys(
    "curve-keys",
    cl::desc("Encrypt tcp:// endpoints with CURVE, with the server key pair "
             "in this file (clients need its public key: WOOLY_SERVER_KEY)"),
    cl::value_desc("file"), cl::cat(cat));
static cl::opt<std::string> genCurveKeys(
    "gen-curve-keys",
    cl::desc("Write a new CURVE key pair to PREFIX.key (secret, owner-only) "
             "and PREFIX.pub (the public key for clients), then exit"),
    cl::value_desc("prefix"), cl::cat(cat));
static cl::opt<double> kernelTimeout(
    "kernel-timeout-ms",
    cl::desc("The watchdog: stop a launch that runs longer than this (at "
             "its next loop iteration) and fail it for its tenant; 0: no "
             "watchdog (default 30000; on a GPU with --contain)"),
    cl::init(30000), cl::cat(cat));
static cl::opt<bool> contain(
    "contain",
    cl::desc("On a GPU, compile every tenant module through wooly-contain "
             "for the device's own target, so that a trap, failed assert or "
             "misaligned access ends its tenant's launch instead of the "
             "device context shared by all, and watch launches with the "
             "watchdog (default false while its cost on a GPU is studied; "
             "the cpu backend contains them by itself)"),
    cl::init(false), cl::cat(cat));
static cl::opt<bool> coalesce(
    "coalesce",
    cl::desc("wooly: fuse small launches of different tenants into one "
             "launch (wooly-coalesce) where that is measured to help; a "
             "fault stays its tenant's (cpu; default true)"),
    cl::init(true), cl::cat(cat));
static cl::opt<std::string>
    traceFile("trace",
              cl::desc("At exit, write what ran when (one track per tenant) "
                       "as a Chrome trace JSON that ui.perfetto.dev opens"),
              cl::value_desc("file"), cl::cat(cat));

static wooly::server::Server *theServer = nullptr;

static void onSignal(int) {
  if (theServer)
    theServer->requestStop();
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(cat);
  cl::SetVersionPrinter([](raw_ostream &os) { os << "wooly-serve 0.1.0\n"; });
  cl::ParseCommandLineOptions(
      argc, argv,
      "wooly-serve: share one device among many tenants\n\n"
      "Clients (programs using Wooly's client library or its CUDA drop-ins)\n"
      "connect over ZeroMQ, open a session as a tenant, and load, copy and\n"
      "launch; every tenant's kernels run in one device context, compiled\n"
      "from PTX on demand and cached. Clients find the server through\n"
      "WOOLY_SERVER (default ipc:///tmp/wooly-<uid>.sock), WOOLY_TENANT and\n"
      "WOOLY_TOKEN. SIGINT/SIGTERM finish queued work, then exit.\n");

  if (!genCurveKeys.empty()) {
    if (Error e = wooly::server::generateCurveKeys(genCurveKeys)) {
      errs() << "wooly-serve: error: " << toString(std::move(e)) << "\n";
      return 1;
    }
    outs() << "wrote " << genCurveKeys << ".key (keep it secret) and "
           << genCurveKeys << ".pub\n";
    return 0;
  }

  wooly::server::ServerOptions o;
  o.curveKeyFile = curveKeys;
  o.listen.assign(listen.begin(), listen.end());
  if (o.listen.empty())
    o.listen.push_back("ipc:///tmp/wooly-" + std::to_string(getuid()) +
                       ".sock");
  o.backend = backendName;
  o.tenantsFile = tenantsFile;
  o.metrics = metrics;
  o.cacheDir = cacheDir;
  o.executors = executors;
  o.compileThreads = compileThreads;
  o.cpuWorkers = cpuWorkers;
  o.cudaSwap = cudaSwap;
  o.swapDelayMs = swapDelayMs;
  o.drainTimeoutMs = drainTimeout;
  o.scheduler = scheduler;
  o.pacing = pacing;
  o.coalesce = coalesce;
  o.maxOutstandingPerSession = maxOutstanding;
  o.contain = contain;
  o.kernelTimeoutMs = kernelTimeout;
  o.traceFile = traceFile;
  for (auto [opt, out] :
       {std::pair<cl::opt<std::string> *, uint64_t *>{&deviceMemory,
                                                      &o.deviceMemory},
        {&maxMessage, &o.maxMessageBytes},
        {&maxGraphBytes, &o.maxGraphBytesPerSession},
        {&maxOutstandingBytes, &o.maxOutstandingBytesPerSession}}) {
    if (opt->empty())
      continue;
    auto bytes = wooly::server::parseByteSize(*opt);
    if (!bytes) {
      errs() << "wooly-serve: --" << opt->ArgStr << ": "
             << toString(bytes.takeError()) << "\n";
      return 2;
    }
    *out = *bytes;
  }
  if (maxOutstanding == 0 || o.maxOutstandingBytesPerSession == 0) {
    errs() << "wooly-serve: --max-outstanding and --max-outstanding-bytes "
              "must be at least 1\n";
    return 2;
  }

  auto server = wooly::server::Server::create(std::move(o));
  if (!server) {
    errs() << "wooly-serve: error: " << toString(server.takeError()) << "\n";
    return 1;
  }
  theServer = server->get();
  struct sigaction sa = {};
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  if (Error e = (*server)->run()) {
    errs() << "wooly-serve: error: " << toString(std::move(e)) << "\n";
    return 1;
  }
  theServer = nullptr;
  return 0;
}
