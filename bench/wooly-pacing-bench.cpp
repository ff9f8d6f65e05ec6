//===- wooly-pacing-bench.cpp - SLA pacing in real time ------------------===//
//
// A latency-critical tenant's kernel latency on wooly-serve (the CPU backend,
// or an NVIDIA GPU with --backend=cuda), alone and next to a best-effort
// tenant running long kernels, under servers started by this program:
// `fifo` on one executor (one launch at a time, as time-slicing runs
// contexts), `fifo` (arrival order, launches running at once as under MPS),
// `wooly` without pacing (priorities only) and `wooly` (priorities and SLA
// pacing: the best-effort kernels run constrained, sliced and preemptible).
// Also the best-effort throughput kept. All ratios come from one run (see
// bench/README.md).
//
//===----------------------------------------------------------------------===//

#include "ServeUtil.h"

#include "Wooly/Client/Client.h"
#include "Wooly/Server/Scheduler.h"

#include "llvm/ADT/StringExtras.h"
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
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace wooly;
using namespace wooly::bench;
namespace client = wooly::client;

static llvm::cl::opt<unsigned>
    requests("requests",
             llvm::cl::desc("Latency-critical launches measured per case"),
             llvm::cl::init(100));
static llvm::cl::opt<double>
    gapMs("gap-ms",
          llvm::cl::desc("Pause between two latency-critical launches"),
          llvm::cl::init(5));
static llvm::cl::opt<unsigned>
    lcIters("lc-iters",
            llvm::cl::desc("Loop iterations per thread of the latency-"
                           "critical kernel (4 blocks of 128 threads)"),
            llvm::cl::init(2000));
static llvm::cl::opt<unsigned>
    beIters("be-iters",
            llvm::cl::desc("Loop iterations per thread of the best-effort "
                           "kernel (1024 blocks of 128 threads)"),
            llvm::cl::init(2000));
static llvm::cl::opt<unsigned>
    beBlocks("be-blocks",
             llvm::cl::desc("Blocks of 128 threads per best-effort kernel"),
             llvm::cl::init(1024));
static llvm::cl::opt<double>
    slaMs("sla-ms", llvm::cl::desc("The latency-critical tenant's SLA"),
          llvm::cl::init(5));
static llvm::cl::opt<std::string>
    backendName("backend",
                llvm::cl::desc("wooly-serve's backend: cpu (default) or cuda"),
                llvm::cl::init("cpu"));
static llvm::cl::opt<std::string>
    logDir("log-dir", llvm::cl::desc("Keep each server's log in this folder "
                                     "(default: discarded)"));
static llvm::cl::opt<std::string>
    servePath("serve", llvm::cl::desc("wooly-serve (default: beside this "
                                      "program)"));

namespace {

/// Each thread runs an LCG `iters` times and stores the result.
const char *kPtx = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry spin(.param .u32 iters, .param .u64 out) {
  .reg .pred %p;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u32 %r1, [iters];
  ld.param.u64 %rd1, [out];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.u32 %r5, %r2, %r3, %r4;
  mov.u32 %r6, %r5;
  mov.u32 %r7, 0;
LOOP:
  setp.ge.u32 %p, %r7, %r1;
  @%p bra DONE;
  mad.lo.u32 %r6, %r6, 1664525, 1013904223;
  add.u32 %r7, %r7, 1;
  bra LOOP;
DONE:
  mul.wide.u32 %rd2, %r5, 4;
  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r6;
  ret;
}
)";

struct Server {
  pid_t pid = -1;
  std::string dir, endpoint;
};

std::string tempDir;
std::vector<Server *> live;

void stop(Server &s) { stopServe(s.pid); }

Server start(const std::string &name, std::vector<std::string> extra) {
  Server s;
  s.dir = tempDir;
  s.endpoint = "ipc://" + tempDir + "/" + name + ".sock";
  std::vector<std::string> args = {"--listen=" + s.endpoint,
                                   "--tenants=" + tempDir + "/tenants.yaml",
                                   "--backend=" + backendName};
  args.insert(args.end(), extra.begin(), extra.end());
  s.pid = startServe(servePath, args,
                     (logDir.empty() ? tempDir : logDir.getValue()) + "/" +
                         name + ".log");
  return s;
}

std::unique_ptr<client::Client> connect(const Server &s, const char *tenant,
                                        const char *token) {
  client::Options o;
  o.server = s.endpoint;
  o.tenant = tenant;
  o.token = token;
  o.clientName = "wooly-pacing-bench";
  o.connectTimeoutMs = 20000;
  client::Status st;
  auto c = client::Client::connect(o, st);
  if (!c)
    die(std::string("connect as ") + tenant + ": " + st.str());
  return c;
}

/// What a tenant launches: a kernel of a module, its grid and block, and
/// its parameters (u32 scalars, and buffers of random floats).
struct Work {
  std::string ptx, kernel;
  client::Dim3 grid, block;
  struct Param {
    bool buffer = false;
    uint64_t value = 0; // a u32, or a buffer's bytes
  };
  std::vector<Param> params;
};

Work::Param u32(uint32_t v) { return {false, v}; }
Work::Param floats(uint64_t n) { return {true, n * 4}; }

/// The spin kernel on `blocks` blocks of 128 threads.
Work spinWork(uint32_t iters, uint32_t blocks) {
  return {kPtx, "spin", {blocks}, {128}, {u32(iters), floats(blocks * 128)}};
}

/// llm.c-style training and inference kernels (test/corpus/llmc).
static llvm::cl::opt<std::string>
    llmcPtx("llmc", llvm::cl::desc("--workload=llmc: llmc.sm_90.ptx "
                                   "(test/corpus/llmc)"));
static llvm::cl::opt<std::string> workload(
    "workload",
    llvm::cl::desc("spin (default: synthetic kernels, --lc-iters, --be-iters, "
                   "--be-blocks) or llmc (latency-critical: causal softmax of "
                   "--rows rows of 1024; best-effort: the tiled training "
                   "matmul, --bt x 768 by 768 x 3072)"),
    llvm::cl::init("spin"));
static llvm::cl::opt<unsigned>
    rows("rows", llvm::cl::desc("--workload=llmc: softmax rows"),
         llvm::cl::init(256));
static llvm::cl::opt<unsigned>
    bt("bt", llvm::cl::desc("--workload=llmc: the matmul's rows (B x T)"),
       llvm::cl::init(4096));

Work llmcSoftmax(const std::string &ptx) {
  constexpr uint32_t T = 1024;
  return {ptx,
          "softmax_forward",
          {rows},
          {128},
          {floats(uint64_t(rows) * T), floats(uint64_t(rows) * T), u32(rows),
           u32(T)}};
}

Work llmcMatmul(const std::string &ptx) {
  constexpr uint32_t C = 768, OC = 3072;
  return {ptx,
          "matmul_forward",
          {OC / 16, (bt + 15) / 16},
          {16, 16},
          {floats(uint64_t(bt) * OC), floats(uint64_t(bt) * C),
           floats(uint64_t(OC) * C), floats(OC), u32(bt), u32(C), u32(OC)}};
}

struct Tenant {
  std::unique_ptr<client::Client> c;
  client::Module m;
  Work work;
  std::vector<uint8_t> params;

  Tenant(const Server &s, const char *name, const char *token, Work w)
      : work(std::move(w)) {
    c = connect(s, name, token);
    client::Status st = c->loadModule(work.ptx, work.kernel, m);
    if (!st.ok())
      die("load: " + st.str());
    const client::KernelLayout *k = m.findKernel(work.kernel);
    if (!k || k->paramOffsets.size() != work.params.size())
      die("kernel " + work.kernel + ": unexpected parameters");
    params.resize(k->paramBufferSize);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (size_t i = 0; i < work.params.size(); ++i) {
      const Work::Param &p = work.params[i];
      if (!p.buffer) {
        uint32_t v = uint32_t(p.value);
        std::memcpy(params.data() + k->paramOffsets[i], &v, 4);
        continue;
      }
      uint64_t addr = 0;
      if (!(st = c->malloc(p.value, addr)).ok())
        die("malloc: " + st.str());
      std::vector<float> init(p.value / 4);
      for (float &f : init)
        f = dist(rng);
      if (!(st = c->copyToDevice(addr, init.data(), p.value)).ok())
        die("copy: " + st.str());
      std::memcpy(params.data() + k->paramOffsets[i], &addr, 8);
    }
  }
  client::Status launch(uint64_t stream = 0) {
    return c->launch(m.handle, work.kernel, work.grid, work.block, 0,
                     params.data(), params.size(), stream);
  }
};

struct Result {
  double aloneP50 = 0, aloneP99 = 0, withP50 = 0, withP99 = 0;
  double beAlone = 0, beWith = 0; // best-effort kernels per second
};

/// `requests` latency-critical launches (launch + synchronise), `gap` apart.
std::vector<double> measureLc(Tenant &lc) {
  std::vector<double> ms;
  for (unsigned i = 0; i < requests; ++i) {
    auto t0 = Clock::now();
    client::Status st = lc.launch();
    if (st.ok())
      st = lc.c->deviceSynchronize();
    if (!st.ok())
      die("latency-critical launch: " + st.str());
    ms.push_back(seconds(t0, Clock::now()) * 1000);
    std::this_thread::sleep_for(
        std::chrono::microseconds(int64_t(gapMs * 1000)));
  }
  return ms;
}

/// Best-effort kernels on two streams until `stop`; returns kernels done.
std::thread runBe(Tenant &be, std::atomic<bool> &stopFlag,
                  std::atomic<uint64_t> &done) {
  return std::thread([&] {
    uint64_t s1 = 0, s2 = 0;
    if (!be.c->streamCreate(s1).ok() || !be.c->streamCreate(s2).ok())
      die("streamCreate");
    while (!stopFlag) {
      client::Status st = be.launch(s1);
      if (st.ok())
        st = be.launch(s2);
      if (st.ok())
        st = be.c->deviceSynchronize();
      if (!st.ok())
        die("best-effort launch: " + st.str());
      done += 2;
    }
  });
}

Result runCase(const std::string &name, std::vector<std::string> extra) {
  Server s = start(name, std::move(extra));
  live.push_back(&s);
  std::string ptx;
  if (workload == "llmc") {
    auto buf = llvm::MemoryBuffer::getFile(llmcPtx);
    if (!buf)
      die("--llmc=" + llmcPtx + ": cannot read it");
    ptx = (*buf)->getBuffer().str();
  }
  Tenant lc(s, "lc", "l",
            workload == "llmc" ? llmcSoftmax(ptx) : spinWork(lcIters, 4));
  Tenant be(s, "be", "b",
            workload == "llmc" ? llmcMatmul(ptx) : spinWork(beIters, beBlocks));
  Result r;
  // Warm up: compile both kernels (and the sliced variant).
  for (int i = 0; i < 5; ++i)
    if (!lc.launch().ok() || !lc.c->deviceSynchronize().ok())
      die("latency-critical warm-up");
  if (!be.launch().ok() || !be.c->deviceSynchronize().ok())
    die("best-effort warm-up");

  std::vector<double> alone = measureLc(lc);
  r.aloneP50 = server::percentile(alone, 0.5);
  r.aloneP99 = server::percentile(alone, 0.99);

  std::atomic<bool> stopFlag{false};
  std::atomic<uint64_t> done{0};
  std::thread t = runBe(be, stopFlag, done);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  uint64_t d0 = done;
  auto m0 = Clock::now();
  std::vector<double> with = measureLc(lc);
  r.beWith = double(done - d0) / seconds(m0, Clock::now());
  stopFlag = true;
  t.join();
  r.withP50 = server::percentile(with, 0.5);
  r.withP99 = server::percentile(with, 0.99);

  // The best-effort tenant alone, as long as the latency run took.
  stopFlag = false;
  done = 0;
  auto a0 = Clock::now();
  std::thread t2 = runBe(be, stopFlag, done);
  std::this_thread::sleep_for(
      std::chrono::milliseconds(int64_t(requests * (gapMs + r.withP50))));
  stopFlag = true;
  t2.join();
  r.beAlone = double(done) / seconds(a0, Clock::now());
  lc.c.reset();
  be.c.reset();
  stop(s);
  live.pop_back();
  return r;
}

void onSignal(int sig) {
  for (Server *s : live)
    if (s->pid > 0)
      ::kill(s->pid, SIGTERM);
  ::_exit(128 + sig);
}

} // namespace

int main(int argc, char **argv) {
  programName = "wooly-pacing-bench";
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "wooly-pacing-bench: SLA pacing in real time\n\n"
      "Starts wooly-serve four times (fifo on one executor, fifo, wooly\n"
      "without pacing, wooly) on --backend with a latency-critical tenant\n"
      "(--sla-ms) and a best-effort one, and measures the latency-critical\n"
      "kernel's latency (launch to synchronise) alone and while the\n"
      "best-effort tenant runs long kernels on two streams, and the\n"
      "best-effort throughput kept.\n");
  servePath = servePathOr(servePath, argv[0], (void *)&main);
  tempDir = makeTempDir("wooly-pacing-bench");
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  std::ofstream(tempDir + "/tenants.yaml")
      << "tenants:\n"
         "  - {name: lc, token: \"l\", class: latency-critical, sla_ms: "
      << slaMs
      << "}\n"
         "  - {name: be, token: \"b\", class: best-effort}\n";

  if (workload == "llmc")
    llvm::outs() << llvm::formatv(
        "backend {0}; latency-critical (SLA {1} ms): softmax_forward of {2} "
        "rows of 1024 (one block of 128 threads a row), {3} launches {4} ms "
        "apart; best-effort: matmul_forward {5} x 768 by 768 x 3072 (16x16 "
        "tiles) on two streams\n\n",
        backendName.getValue(), slaMs.getValue(), rows.getValue(),
        requests.getValue(), gapMs.getValue(), bt.getValue());
  else if (workload == "spin")
    llvm::outs() << llvm::formatv(
        "backend {5}; latency-critical (SLA {6} ms): 4 blocks x 128 threads "
        "x {0} iterations, {1} launches {2} ms apart; best-effort: {4} "
        "blocks x 128 threads x {3} iterations on two streams\n\n",
        lcIters.getValue(), requests.getValue(), gapMs.getValue(),
        beIters.getValue(), beBlocks.getValue(), backendName.getValue(),
        slaMs.getValue());
  else
    die("--workload=" + workload + ": expected spin or llmc");
  llvm::outs() << llvm::formatv("{0,-18} {1,10} {2,10} {3,10} {4,10} {5,9} "
                                "{6,9} {7,8}\n",
                                "server", "alone p50", "alone p99", "with p50",
                                "with p99", "p50 infl", "p99 infl", "be_kept");
  struct Case {
    const char *name;
    std::vector<std::string> args;
  };
  std::vector<Case> cases = {
      {"fifo, 1 executor", {"--scheduler=fifo", "--executors=1"}},
      {"fifo", {"--scheduler=fifo"}},
      {"wooly --no-pacing", {"--scheduler=wooly", "--pacing=false"}},
      {"wooly", {"--scheduler=wooly"}}};
  for (const Case &c : cases) {
    // "fifo0", "fifo1", "wooly2", "wooly3": socket and log names.
    std::string id;
    for (char ch : llvm::StringRef(c.name).split(' ').first)
      if (llvm::isAlnum(ch))
        id += ch;
    Result r = runCase(id + std::to_string(&c - cases.data()), c.args);
    llvm::outs() << llvm::formatv(
        "{0,-18} {1,10:f3} {2,10:f3} {3,10:f3} {4,10:f3} {5,9:f2} {6,9:f2} "
        "{7,8:f3}\n",
        c.name, r.aloneP50, r.aloneP99, r.withP50, r.withP99,
        r.withP50 / r.aloneP50, r.withP99 / r.aloneP99,
        r.beAlone > 0 ? r.beWith / r.beAlone : 0);
    llvm::outs().flush();
  }
  llvm::outs() << "(latencies in ms; be_kept: best-effort kernels per second "
                  "during the latency run over alone)\n";
  llvm::sys::fs::remove_directories(tempDir);
  return 0;
}
