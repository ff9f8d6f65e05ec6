//===- wooly-serve-bench.cpp - wooly-serve as a client sees it --*- C++ -*-===//
//
// Starts wooly-serve as a child process on an ipc:// and a tcp://127.0.0.1
// endpoint and measures, per transport, what a client pays through the
// client library (include/Wooly/Client/Client.h):
//
//  1. the client's CPU time per asynchronous launch (batched launches of a
//     kernel that does nothing, then one streamSynchronize);
//  2. synchronising round trips (streamSynchronize of an idle stream, a
//     4-byte copyFromDevice) against a raw ZeroMQ round trip of the same
//     shape;
//  3. synchronous copy bandwidth host to device and device to host against
//     raw ZeroMQ moving the same bytes.
//
// The raw baselines: a ROUTER echo with the server's socket options on
// endpoints of its own, in a forked process like the server (or, with
// --echo=thread, a thread of this process), and a DEALER with the client's
// socket options (linger 0, high-water marks 0, heartbeats), sending and
// receiving like the client does (zero-copy sends of the caller's buffer,
// one copy into the caller's buffer on receive). Wooly and raw calls
// alternate, so that both see the same background load. The server (and
// the echo process) is always stopped with SIGTERM and waited for, also on
// errors. See bench/README.md.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"

#include "Wooly/Client/Client.h"

#include <zmq.h>

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <memory>
#include <netinet/in.h>
#include <sched.h>
#include <spawn.h>
#include <sstream>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

using namespace wooly;
using bench::Clock;
using bench::die;
using bench::option;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Whether `--name` is among the arguments.
bool flag(int argc, char **argv, const char *name) {
  std::string f = std::string("--") + name;
  for (int i = 1; i < argc; ++i)
    if (f == argv[i])
      return true;
  return false;
}

/// The calling thread's CPU time in seconds.
double threadCpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

/// The process's CPU time in seconds (all threads, ZeroMQ's I/O thread too).
double processCpu() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

/// The `p`-quantile (0..1) of `v`, nearest rank.
double quantile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = size_t(p * double(v.size()));
  return v[std::min(i, v.size() - 1)];
}

/// `die` with `what` and the status when it is an error.
void check(const client::Status &s, const std::string &what) {
  if (!s.ok())
    die(what + ": " + s.str());
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    die("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The value of the first "key : value" line of /proc/cpuinfo.
std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      size_t c = line.find(':');
      return c == std::string::npos ? line : line.substr(c + 2);
    }
  return "unknown CPU";
}

/// "12.3 us", "1.23 ms".
std::string micros(double sec) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f us", sec * 1e6);
  return buf;
}

std::string sizeText(uint64_t bytes) {
  if (bytes >= (1u << 20))
    return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

/// A free TCP port on 127.0.0.1 (bound to port 0, read back, closed).
int freeTcpPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    die(std::string("socket: ") + strerror(errno));
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0) {
    ::close(fd);
    die(std::string("cannot find a free port: ") + strerror(errno));
  }
  int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

//===----------------------------------------------------------------------===//
// The server child process
//===----------------------------------------------------------------------===//

/// The running wooly-serve (0: none) and the temporary directory.
pid_t serverPid = 0;
std::string tempDir, serverLog;

/// The raw echo's process when it runs in one (0: none).
pid_t echoPid = 0;

/// Stops the raw echo process.
void stopEcho() {
  if (echoPid <= 0)
    return;
  ::kill(echoPid, SIGTERM);
  ::waitpid(echoPid, nullptr, 0);
  echoPid = 0;
}

/// Stops the server (SIGTERM, then SIGKILL after 20 s) and waits for it.
void stopServer() {
  if (serverPid <= 0)
    return;
  pid_t pid = serverPid;
  serverPid = 0;
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 2000; ++i) {
    int st;
    pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR))
      return;
    ::usleep(10000);
  }
  std::fprintf(stderr, "%s: wooly-serve (pid %d) ignored SIGTERM; killing it\n",
               bench::programName, int(pid));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

/// Removes the temporary directory and what is in it (flat).
void removeTempDir() {
  if (tempDir.empty())
    return;
  for (const char *name : {"serve.sock", "raw.sock", "serve.log"})
    ::unlink((tempDir + "/" + name).c_str());
  ::rmdir(tempDir.c_str());
  tempDir.clear();
}

/// Prints the end of the server's log (on errors).
void printServerLog() {
  std::ifstream in(serverLog);
  if (!in)
    return;
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line))
    lines.push_back(line);
  std::fprintf(stderr, "--- last lines of the wooly-serve log ---\n");
  for (size_t i = lines.size() > 20 ? lines.size() - 20 : 0; i < lines.size();
       ++i)
    std::fprintf(stderr, "%s\n", lines[i].c_str());
}

/// Whether the run finished; otherwise the exit handler shows the log.
bool finished = false;

/// This program's process (not the forked echo's).
pid_t mainPid = 0;

void atExit() {
  if (::getpid() != mainPid)
    return;
  if (!finished && serverPid > 0) {
    std::fflush(stdout);
    printServerLog();
  }
  stopServer();
  stopEcho();
  removeTempDir();
}

void onSignal(int sig) {
  if (echoPid > 0) {
    ::kill(echoPid, SIGTERM);
    ::waitpid(echoPid, nullptr, 0);
  }
  if (serverPid > 0) {
    ::kill(serverPid, SIGTERM);
    ::waitpid(serverPid, nullptr, 0);
  }
  if (!tempDir.empty()) {
    for (const char *name : {"/serve.sock", "/raw.sock", "/serve.log"})
      ::unlink((tempDir + name).c_str());
    ::rmdir(tempDir.c_str());
  }
  ::_exit(128 + sig);
}

/// Starts `serve` listening on `endpoints`, its output in `serverLog`.
void startServer(const std::string &serve,
                 const std::vector<std::string> &endpoints) {
  std::vector<std::string> args = {serve, "--device-memory=4GiB"};
  for (const std::string &ep : endpoints)
    args.push_back("--listen=" + ep);
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, serverLog.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawn(&pid, serve.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    die("cannot start '" + serve + "': " + strerror(rc));
  serverPid = pid;
}

/// Connects a client to `endpoint`, failing early when the server died.
std::unique_ptr<client::Client> connectTo(const std::string &endpoint) {
  client::Options o;
  o.server = endpoint;
  o.tenant = "bench";
  o.clientName = "wooly-serve-bench";
  o.connectTimeoutMs = 500;
  for (int tries = 0; tries < 40; ++tries) {
    client::Status s;
    std::unique_ptr<client::Client> c = client::Client::connect(o, s);
    if (c)
      return c;
    int st;
    if (serverPid > 0 && ::waitpid(serverPid, &st, WNOHANG) == serverPid) {
      serverPid = 0;
      die("wooly-serve exited before it answered at '" + endpoint + "'");
    }
    if (s.code != client::Code::Unavailable)
      die("connect to '" + endpoint + "': " + s.str());
  }
  die("no answer from wooly-serve at '" + endpoint + "' within 20 s");
}

//===----------------------------------------------------------------------===//
// The raw ZeroMQ baseline
//===----------------------------------------------------------------------===//

/// The raw request: one 16-byte header frame {op, 7 unused, uint64 bytes},
/// followed by a payload frame for 'u'. The echo answers with a 16-byte
/// frame, followed by a `bytes` frame for 'd'. The echo thread ends when
/// the context is shut down.
struct RawHeader {
  char op = 'r';
  char pad[7] = {};
  uint64_t bytes = 0;
};
static_assert(sizeof(RawHeader) == 16);

/// The ROUTER echo, with the server's socket options; replies to 'd' send
/// `source` without a copy, as the server sends copyFromDevice data.
void rawEcho(void *router, const char *source) {
  for (;;) {
    zmq_msg_t id, hdr;
    zmq_msg_init(&id);
    zmq_msg_init(&hdr);
    if (zmq_msg_recv(&id, router, 0) < 0) {
      zmq_msg_close(&id);
      zmq_msg_close(&hdr);
      if (zmq_errno() == EINTR)
        continue;
      return;
    }
    zmq_msg_recv(&hdr, router, 0);
    RawHeader h;
    if (zmq_msg_size(&hdr) == sizeof h)
      std::memcpy(&h, zmq_msg_data(&hdr), sizeof h);
    // An upload's data is released after the reply, as the server
    // releases it after it answered (freeing a large message is not free).
    zmq_msg_t data;
    zmq_msg_init(&data);
    bool more = zmq_msg_more(&hdr);
    while (more) {
      zmq_msg_close(&data);
      zmq_msg_init(&data);
      zmq_msg_recv(&data, router, 0);
      more = zmq_msg_more(&data);
    }
    zmq_msg_send(&id, router, ZMQ_SNDMORE);
    RawHeader r;
    r.op = h.op;
    r.bytes = h.op == 'd' ? h.bytes : 0;
    zmq_send(router, &r, sizeof r, h.op == 'd' ? ZMQ_SNDMORE : 0);
    if (h.op == 'd') {
      zmq_msg_t m;
      zmq_msg_init_data(&m, const_cast<char *>(source), h.bytes, nullptr,
                        nullptr);
      if (zmq_msg_send(&m, router, 0) < 0)
        zmq_msg_close(&m);
    }
    zmq_msg_close(&id);
    zmq_msg_close(&hdr);
    zmq_msg_close(&data);
  }
}

/// The echo's ROUTER in `ctx`, with the server's socket options, bound to
/// `ipc` and `tcp`.
void *echoRouter(void *ctx, const std::string &ipc, const std::string &tcp) {
  void *router = zmq_socket(ctx, ZMQ_ROUTER);
  int zero = 0, hb = 1000, hbTimeout = 10000, hwm = 10000;
  int64_t maxMsg = int64_t(2) << 30;
  zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(router, ZMQ_MAXMSGSIZE, &maxMsg, sizeof maxMsg);
  zmq_setsockopt(router, ZMQ_HEARTBEAT_IVL, &hb, sizeof hb);
  zmq_setsockopt(router, ZMQ_HEARTBEAT_TIMEOUT, &hbTimeout, sizeof hbTimeout);
  zmq_setsockopt(router, ZMQ_SNDHWM, &hwm, sizeof hwm);
  if (zmq_bind(router, ipc.c_str()) != 0 || zmq_bind(router, tcp.c_str()) != 0)
    die(std::string("raw echo bind: ") + zmq_strerror(zmq_errno()));
  return router;
}

/// A DEALER with the client library's socket options.
class RawClient {
public:
  RawClient(void *ctx, const std::string &endpoint) {
    socket = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0, hb = 1000, hbTimeout = 10000;
    zmq_setsockopt(socket, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(socket, ZMQ_HEARTBEAT_IVL, &hb, sizeof hb);
    zmq_setsockopt(socket, ZMQ_HEARTBEAT_TIMEOUT, &hbTimeout, sizeof hbTimeout);
    zmq_setsockopt(socket, ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt(socket, ZMQ_RCVHWM, &zero, sizeof zero);
    if (zmq_connect(socket, endpoint.c_str()) != 0)
      die("raw connect to '" + endpoint + "': " + zmq_strerror(zmq_errno()));
  }
  ~RawClient() { zmq_close(socket); }

  /// A small request, a small reply.
  void roundTrip() {
    RawHeader h;
    zmq_send(socket, &h, sizeof h, 0);
    receive(nullptr, 0);
  }

  /// Sends `bytes` of `src` without a copy; waits for the small reply and
  /// for ZeroMQ to release `src` (what Client::copyToDevice does).
  void upload(const void *src, uint64_t bytes) {
    RawHeader h;
    h.op = 'u';
    h.bytes = bytes;
    zmq_send(socket, &h, sizeof h, ZMQ_SNDMORE);
    zmq_msg_t m;
    released.store(false);
    zmq_msg_init_data(
        &m, const_cast<void *>(src), bytes,
        [](void *, void *hint) {
          static_cast<std::atomic<bool> *>(hint)->store(true);
        },
        &released);
    if (zmq_msg_send(&m, socket, 0) < 0)
      die(std::string("raw send: ") + zmq_strerror(zmq_errno()));
    receive(nullptr, 0);
    while (!released.load())
      sched_yield();
  }

  /// Asks for `bytes` and copies the reply's data frame to `dst`.
  void download(void *dst, uint64_t bytes) {
    RawHeader h;
    h.op = 'd';
    h.bytes = bytes;
    zmq_send(socket, &h, sizeof h, 0);
    receive(dst, bytes);
  }

private:
  void receive(void *dst, uint64_t bytes) {
    zmq_msg_t hdr;
    zmq_msg_init(&hdr);
    if (zmq_msg_recv(&hdr, socket, 0) < 0)
      die(std::string("raw receive: ") + zmq_strerror(zmq_errno()));
    bool more = zmq_msg_more(&hdr);
    zmq_msg_close(&hdr);
    if (more) {
      zmq_msg_t data;
      zmq_msg_init(&data);
      zmq_msg_recv(&data, socket, 0);
      if (zmq_msg_size(&data) != bytes)
        die("raw receive: unexpected data size");
      if (dst && bytes)
        std::memcpy(dst, zmq_msg_data(&data), bytes);
      zmq_msg_close(&data);
    }
  }

  void *socket = nullptr;
  std::atomic<bool> released{true};
};

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

struct Row {
  std::string what, wooly, raw, ratio, target, result;
};

void printTable(const std::string &title, const std::vector<Row> &rows) {
  std::printf("\n%s\n", title.c_str());
  const char *fmt = "%-44s %12s %12s %7s %10s %6s\n";
  std::printf(fmt, "measurement", "wooly", "raw zmq", "ratio", "target",
              "result");
  for (const Row &r : rows)
    std::printf(fmt, r.what.c_str(), r.wooly.c_str(), r.raw.c_str(),
                r.ratio.c_str(), r.target.c_str(), r.result.c_str());
  std::fflush(stdout);
}

std::string fixed(double v, const char *unit, int digits = 2) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f%s", digits, v, unit);
  return buf;
}

std::string passMiss(bool ok) { return ok ? "PASS" : "MISS"; }

//===----------------------------------------------------------------------===//
// The measurements
//===----------------------------------------------------------------------===//

struct Config {
  bool quick = false;
  std::string ptx;
  /// Launches per batch, batches.
  int launches = 20000, launchBatches = 5;
  /// Round trips per measurement (after a tenth as warm-up).
  int roundTrips = 2000;
  /// Copy sizes and repetitions.
  std::vector<std::pair<uint64_t, int>> copies = {
      {64u << 10, 400}, {1u << 20, 100}, {16u << 20, 20}, {256u << 20, 5}};
};

/// Host buffers shared by the copies and the raw echo.
struct Buffers {
  std::vector<char> src, dst;
};

/// Measures one transport: `endpoint` is the server's, `rawEndpoint` the
/// echo's.
std::vector<Row> measure(const Config &cfg, const std::string &endpoint,
                         void *zctx, const std::string &rawEndpoint,
                         Buffers &buf) {
  std::vector<Row> rows;
  std::unique_ptr<client::Client> c = connectTo(endpoint);
  RawClient raw(zctx, rawEndpoint);

  // The kernel: vec_add(int n, const float *a, const float *b, float *c)
  // with n = 0 on one thread, so that the server's work is negligible.
  client::Module m;
  check(c->loadModule(cfg.ptx, "elementwise", m), "loadModule");
  const client::KernelLayout *k = m.findKernel("vec_add");
  if (!k || k->paramOffsets.size() != 4)
    die("no vec_add(int, ptr, ptr, ptr) kernel in the PTX");
  uint64_t small;
  check(c->malloc(64, small), "malloc");
  std::vector<char> params(k->paramBufferSize);
  int32_t n = 0;
  std::memcpy(params.data() + k->paramOffsets[0], &n, 4);
  for (int i = 1; i < 4; ++i)
    std::memcpy(params.data() + k->paramOffsets[i], &small, 8);
  auto launchOne = [&] {
    return c->launch(m.handle, "vec_add", {1}, {1}, 0, params.data(),
                     params.size());
  };
  // Warm-up: compiles the kernel.
  for (int i = 0; i < 300; ++i)
    check(launchOne(), "launch");
  check(c->streamSynchronize(0), "streamSynchronize after warm-up launches");

  // 1. Launches.
  std::vector<double> cpuPer, procPer, wallPer;
  for (int b = 0; b < cfg.launchBatches; ++b) {
    auto w0 = Clock::now();
    double p0 = processCpu(), c0 = threadCpu();
    for (int i = 0; i < cfg.launches; ++i)
      check(launchOne(), "launch");
    double c1 = threadCpu();
    check(c->streamSynchronize(0), "streamSynchronize after launches");
    double p1 = processCpu();
    auto w1 = Clock::now();
    cpuPer.push_back((c1 - c0) / cfg.launches);
    procPer.push_back((p1 - p0) / cfg.launches);
    wallPer.push_back(bench::seconds(w0, w1) / cfg.launches);
  }
  double launchCpu = bench::median(cpuPer);
  rows.push_back({"launch: client thread CPU per launch", micros(launchCpu),
                  "-", "-", "<= 2 us", passMiss(launchCpu <= 2e-6)});
  rows.push_back({"launch: client process CPU per launch",
                  micros(bench::median(procPer)), "-", "-", "info", "-"});
  rows.push_back({"launch: wall per launch, end to end",
                  micros(bench::median(wallPer)), "-", "-", "info", "-"});

  // 2. Round trips.
  // Wooly and raw alternate call by call, so that both see the same
  // background load (the first tenth is a warm-up).
  auto timeBoth = [&](auto &&wooly, auto &&raw, std::vector<double> &w,
                      std::vector<double> &r) {
    int warm = cfg.roundTrips / 10;
    for (int i = 0; i < warm + cfg.roundTrips; ++i) {
      auto t0 = Clock::now();
      wooly();
      auto t1 = Clock::now();
      raw();
      auto t2 = Clock::now();
      if (i >= warm) {
        w.push_back(bench::seconds(t0, t1));
        r.push_back(bench::seconds(t1, t2));
      }
    }
  };
  std::vector<double> syncRt, rawRt, copyRt, rawCopyRt;
  timeBoth([&] { check(c->streamSynchronize(0), "streamSynchronize"); },
           [&] { raw.roundTrip(); }, syncRt, rawRt);
  char four[4];
  timeBoth([&] { check(c->copyFromDevice(four, small, 4), "copyFromDevice"); },
           [&] { raw.download(four, 4); }, copyRt, rawCopyRt);
  auto latencyRows = [&](const std::string &name, const std::vector<double> &w,
                         const std::vector<double> &r) {
    double wm = bench::median(w), rm = bench::median(r);
    double w99 = quantile(w, 0.99), r99 = quantile(r, 0.99);
    rows.push_back({name + ", median", micros(wm), micros(rm),
                    fixed(wm / rm, "x"), "<= 1.5x", passMiss(wm / rm <= 1.5)});
    rows.push_back({name + ", p99", micros(w99), micros(r99),
                    fixed(w99 / r99, "x"), "info", "-"});
  };
  latencyRows("streamSynchronize (idle stream)", syncRt, rawRt);
  latencyRows("copyFromDevice 4 B", copyRt, rawCopyRt);

  // 3. Copies.
  uint64_t maxBytes = 0;
  for (auto [bytes, reps] : cfg.copies)
    maxBytes = std::max(maxBytes, bytes);
  uint64_t big;
  check(c->malloc(maxBytes, big), "malloc " + sizeText(maxBytes));
  struct Bw {
    std::string what;
    double wooly, raw;
  };
  std::vector<Bw> h2d, d2h;
  for (const auto &[sizeBytes, sizeReps] : cfg.copies) {
    // Plain copies: lambdas may not capture structured bindings in C++17.
    uint64_t bytes = sizeBytes;
    int reps = sizeReps;
    // Wooly and raw alternate rep by rep (the first is a warm-up); the
    // result is bytes / median time in GB/s.
    auto timeReps = [&](auto &&wooly, auto &&raw, double &w, double &r) {
      std::vector<double> tw, tr;
      for (int i = 0; i <= reps; ++i) {
        auto t0 = Clock::now();
        wooly();
        auto t1 = Clock::now();
        raw();
        auto t2 = Clock::now();
        if (i) {
          tw.push_back(bench::seconds(t0, t1));
          tr.push_back(bench::seconds(t1, t2));
        }
        // The server copies to the device after it answered: let it
        // finish outside the timing, so that reps do not overlap.
        check(c->streamSynchronize(0), "streamSynchronize after copy");
      }
      w = double(bytes) / bench::median(tw) / 1e9;
      r = double(bytes) / bench::median(tr) / 1e9;
    };
    double up, rawUp, down, rawDown;
    timeReps(
        [&] {
          check(c->copyToDevice(big, buf.src.data(), bytes), "copyToDevice");
        },
        [&] { raw.upload(buf.src.data(), bytes); }, up, rawUp);
    timeReps(
        [&] {
          check(c->copyFromDevice(buf.dst.data(), big, bytes),
                "copyFromDevice");
        },
        [&] { raw.download(buf.dst.data(), bytes); }, down, rawDown);
    // The data survived the round trip (d2h reads what h2d wrote).
    std::memset(buf.dst.data(), 0, bytes);
    check(c->copyFromDevice(buf.dst.data(), big, bytes), "copyFromDevice");
    if (std::memcmp(buf.src.data(), buf.dst.data(), bytes))
      die("copyFromDevice of " + sizeText(bytes) +
          " returned other bytes than copyToDevice wrote");
    h2d.push_back({"copyToDevice (h2d) " + sizeText(bytes), up, rawUp});
    d2h.push_back({"copyFromDevice (d2h) " + sizeText(bytes), down, rawDown});
  }
  for (auto *list : {&h2d, &d2h})
    for (const Bw &b : *list)
      rows.push_back({b.what, fixed(b.wooly, " GB/s"), fixed(b.raw, " GB/s"),
                      fixed(b.wooly / b.raw, "x"), ">= 0.8x",
                      passMiss(b.wooly / b.raw >= 0.8)});

  // Everything the session holds is freed.
  check(c->free(big), "free");
  check(c->free(small), "free");
  check(c->unloadModule(m.handle), "unloadModule");
  check(c->deviceSynchronize(), "deviceSynchronize");
  uint64_t freeBytes = 0, total = 0;
  check(c->memInfo(freeBytes, total), "memInfo");
  if (freeBytes != total)
    std::fprintf(stderr, "%s: warning: %llu bytes still allocated at '%s'\n",
                 bench::programName,
                 static_cast<unsigned long long>(total - freeBytes),
                 endpoint.c_str());
  return rows;
}

} // namespace

int main(int argc, char **argv) {
  bench::programName = "wooly-serve-bench";
  if (flag(argc, argv, "help") || flag(argc, argv, "h")) {
    std::printf(
        "usage: wooly-serve-bench [--quick] [--serve=PATH] [--ptx=FILE]\n"
        "                         [--echo=process|thread]\n"
        "  Starts wooly-serve on ipc:// and tcp://127.0.0.1 and measures\n"
        "  launches, round trips and copies against raw ZeroMQ.\n"
        "  --quick       fewer iterations, copies up to 16 MiB (seconds)\n"
        "  --serve=PATH  the wooly-serve binary (default: next to this one)\n"
        "  --ptx=FILE    PTX with vec_add (default: "
        "test/corpus/elementwise.sm_90.ptx)\n"
        "  --echo=MODE   the raw baseline's echo: in a forked process like\n"
        "                the server (default) or a thread of this process\n");
    return 0;
  }
  Config cfg;
  cfg.quick = flag(argc, argv, "quick");
  std::string echoMode = option(argc, argv, "echo", "process");
  if (echoMode != "process" && echoMode != "thread")
    die("--echo must be 'process' or 'thread'");
  bool echoInProcess = echoMode == "thread";
  if (cfg.quick) {
    cfg.launches = 2000;
    cfg.launchBatches = 3;
    cfg.roundTrips = 300;
    cfg.copies = {{64u << 10, 50}, {1u << 20, 20}, {16u << 20, 5}};
  }
  std::string serve = option(argc, argv, "serve", "");
  if (serve.empty()) {
    char self[4096];
    ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
      die("cannot find this program's directory; use --serve=PATH");
    self[len] = 0;
    std::string dir(self);
    serve = dir.substr(0, dir.rfind('/')) + "/wooly-serve";
  }
  if (::access(serve.c_str(), X_OK) != 0)
    die("'" + serve + "' is not an executable; use --serve=PATH");
  cfg.ptx =
      readFile(option(argc, argv, "ptx",
                      WOOLY_SOURCE_DIR "/test/corpus/elementwise.sm_90.ptx"));

  char tmpl[] = "/tmp/wooly-serve-bench.XXXXXX";
  if (!::mkdtemp(tmpl))
    die(std::string("mkdtemp: ") + strerror(errno));
  tempDir = tmpl;
  serverLog = tempDir + "/serve.log";
  mainPid = ::getpid();
  std::atexit(atExit);
  struct sigaction sa = {};
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::string ipc = "ipc://" + tempDir + "/serve.sock";
  std::string tcp = "tcp://127.0.0.1:" + std::to_string(freeTcpPort());
  startServer(serve, {ipc, tcp});

  // The raw echo: one ROUTER on an ipc path and a tcp port of its own.
  Buffers buf;
  uint64_t maxBytes = 0;
  for (auto [bytes, reps] : cfg.copies)
    maxBytes = std::max(maxBytes, bytes);
  buf.src.resize(maxBytes);
  buf.dst.resize(maxBytes);
  for (uint64_t i = 0; i < maxBytes; ++i)
    buf.src[i] = char(i * 131 + (i >> 12));
  std::string rawIpc = "ipc://" + tempDir + "/raw.sock";
  std::string rawTcp = "tcp://127.0.0.1:" + std::to_string(freeTcpPort());
  std::thread echo;
  void *echoCtx = nullptr, *router = nullptr;
  if (echoInProcess) {
    // Its own context, so that each end has its own I/O thread, as the
    // client and the server process have.
    echoCtx = zmq_ctx_new();
    router = echoRouter(echoCtx, rawIpc, rawTcp);
    echo = std::thread(rawEcho, router, buf.src.data());
  } else {
    // Forked before this process creates any ZeroMQ context.
    pid_t pid = ::fork();
    if (pid < 0)
      die(std::string("fork: ") + strerror(errno));
    if (pid == 0) {
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
      void *ctx = zmq_ctx_new();
      rawEcho(echoRouter(ctx, rawIpc, rawTcp), buf.src.data());
      ::_exit(0);
    }
    echoPid = pid;
  }
  void *zctx = zmq_ctx_new();

  int major, minor, patch;
  zmq_version(&major, &minor, &patch);
  time_t now = time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::localtime(&now));
  double load[3] = {};
  getloadavg(load, 3);
  std::printf("wooly-serve-bench%s: %s; nproc %u, %s; load %.2f; libzmq "
              "%d.%d.%d\n",
              cfg.quick ? " --quick" : "", date,
              std::thread::hardware_concurrency(), cpuModel().c_str(), load[0],
              major, minor, patch);
  std::printf("server: %s (cpu backend, default executors), one client "
              "session per transport; raw zmq = DEALER to a ROUTER echo %s\n",
              serve.c_str(),
              echoInProcess ? "thread in this process (--echo=thread)"
                            : "in a forked process (--echo=process)");
  std::printf("launches: %d x %d of vec_add n=0 <<<1,1>>>; round trips: "
              "%d (median, p99); copies: median of ",
              cfg.launchBatches, cfg.launches, cfg.roundTrips);
  for (size_t i = 0; i < cfg.copies.size(); ++i)
    std::printf("%s%d x %s", i ? ", " : "", cfg.copies[i].second,
                sizeText(cfg.copies[i].first).c_str());
  std::printf("\n");
  std::fflush(stdout);

  std::vector<Row> ipcRows = measure(cfg, ipc, zctx, rawIpc, buf);
  printTable("== ipc:// (" + ipc + "; raw: " + rawIpc + ") ==", ipcRows);
  std::vector<Row> tcpRows = measure(cfg, tcp, zctx, rawTcp, buf);
  printTable("== tcp://127.0.0.1 (" + tcp + "; raw: " + rawTcp + ") ==",
             tcpRows);

  if (echoInProcess) {
    // Blocking calls in the echo thread return ETERM: it ends.
    zmq_ctx_shutdown(echoCtx);
    echo.join();
    zmq_close(router);
    zmq_ctx_term(echoCtx);
  }
  zmq_ctx_term(zctx);
  finished = true;
  stopServer();
  stopEcho();
  removeTempDir();
  return 0;
}
