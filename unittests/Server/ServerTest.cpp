//===- ServerTest.cpp - wooly-serve as a process, with real clients -------===//
//
// Every test starts `wooly-serve` as a child process on a temporary
// `ipc://` path (the cpu backend), talks to it through the client library,
// through the tenant programs of test/apps/client run as processes, or
// through a raw ZeroMQ socket (malformed input), and stops it with SIGTERM
// (the server must drain and exit 0).
//
//===----------------------------------------------------------------------===//

#include "Wooly/Client/Client.h"

#include "gtest/gtest.h"

#include <zmq.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace wooly::client;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Spawns `argv` with stdout/stderr to `logPath` (and stdin from a pipe
/// whose write end is returned in `stdinFd` when asked for).
pid_t spawn(const std::vector<std::string> &argv, const std::string &logPath,
            const std::vector<std::string> &env = {}, int *stdinFd = nullptr,
            int *stdoutFd = nullptr) {
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  if (stdinFd && pipe(in) != 0)
    return -1;
  if (stdoutFd && pipe(out) != 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    int log = open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (stdinFd) {
      dup2(in[0], 0);
      close(in[1]);
    }
    dup2(stdoutFd ? out[1] : log, 1);
    dup2(log, 2);
    for (const std::string &e : env)
      putenv(const_cast<char *>(e.c_str()));
    std::vector<char *> args;
    for (const std::string &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  if (stdinFd) {
    close(in[0]);
    *stdinFd = in[1];
  }
  if (stdoutFd) {
    close(out[1]);
    *stdoutFd = out[0];
  }
  return pid;
}

/// Waits for `pid`; returns its exit status (128+signal when killed).
int waitExit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid)
    return -1;
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

/// A wooly-serve process on a temporary ipc:// path.
class ServerTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/wooly-server-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
    endpoint = "ipc://" + dir + "/serve.sock";
    logPath = dir + "/serve.log";
  }

  void TearDown() override {
    stopServer();
    std::string cmd = "rm -rf '" + dir + "'";
    (void)!system(cmd.c_str());
  }

  /// Stops the server (SIGTERM) and expects a clean exit.
  void stopServer() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      int rc = waitExit(pid);
      EXPECT_EQ(rc, 0) << "wooly-serve did not exit cleanly:\n" << log();
      pid = -1;
    }
  }

  /// Starts the server with `extra` options and waits until it answers.
  void startServer(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {
        WOOLY_BIN_DIR "/wooly-serve", "--listen=" + endpoint,
        "--metrics=127.0.0.1:0", "--cpu-workers=2"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    pid = spawn(argv, logPath);
    ASSERT_GT(pid, 0);
    // The client waits (up to its connect timeout) for the server.
    // A refusal (tenants file, no token) is an answer too.
    Status s;
    auto probe = connect("probe", "", &s);
    ASSERT_TRUE(probe || s.code == Code::Unauthenticated) << s.str() << "\n"
                                                          << log();
  }

  /// `output`: receives what the session's kernels print.
  std::unique_ptr<Client> connect(const std::string &tenant,
                                  const std::string &token = "",
                                  Status *status = nullptr,
                                  std::string *output = nullptr) {
    Options o;
    if (output)
      o.deviceOutput = [output](std::string_view text) {
        output->append(text);
      };
    o.server = endpoint;
    o.tenant = tenant;
    o.token = token;
    o.connectTimeoutMs = 10000;
    Status s;
    auto c = Client::connect(o, s);
    if (status)
      *status = s;
    return c;
  }

  std::string log() { return readFile(logPath); }

  /// The metrics endpoint's "HOST:PORT", from the server's log.
  std::string metricsAddress() {
    std::string l = log();
    size_t at = l.find("metrics at http://");
    if (at == std::string::npos)
      return "";
    at += strlen("metrics at http://");
    return l.substr(at, l.find("/metrics", at) - at);
  }

  /// GET /metrics with a raw socket.
  std::string fetchMetrics() {
    std::string addr = metricsAddress();
    size_t colon = addr.rfind(':');
    if (colon == std::string::npos)
      return "";
    std::string cmd = "exec 3<>/dev/tcp/" + addr.substr(0, colon) + "/" +
                      addr.substr(colon + 1) +
                      "; printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3; "
                      "cat <&3";
    std::string full = "bash -c \"" + cmd + "\"";
    FILE *p = popen(full.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while (p && (n = fread(buf, 1, sizeof buf, p)) > 0)
      out.append(buf, n);
    if (p)
      pclose(p);
    size_t body = out.find("\r\n\r\n");
    return body == std::string::npos ? "" : out.substr(body + 4);
  }

  /// The value of the metrics sample line starting with `prefix`.
  double metric(const std::string &text, const std::string &prefix) {
    size_t at = text.find("\n" + prefix + " ");
    if (at == std::string::npos)
      return -1;
    return std::atof(text.c_str() + at + prefix.size() + 2);
  }

  std::string dir, endpoint, logPath;
  pid_t pid = -1;
};

std::string corpus(const char *name) {
  return readFile(std::string(WOOLY_CORPUS_DIR) + "/" + name);
}

/// A parameter buffer for `layout` from 8-byte and 4-byte values.
struct Params {
  explicit Params(const KernelLayout &l) : l(l), bytes(l.paramBufferSize) {}
  template <typename T> Params &add(T v) {
    EXPECT_LT(i, l.paramOffsets.size());
    EXPECT_EQ(l.paramSizes[i], sizeof(T));
    std::memcpy(bytes.data() + l.paramOffsets[i++], &v, sizeof(T));
    return *this;
  }
  const KernelLayout &l;
  std::vector<uint8_t> bytes;
  size_t i = 0;
};

/// A healthy tenant's work: vec_add of 256 floats (1.5 + 2.25) in a module
/// and buffers of its own, set up in `c`.
struct VecAdd {
  explicit VecAdd(Client &c) : c(c) {
    EXPECT_TRUE(c.loadModule(corpus("elementwise.sm_90.ptx"), "ew", m).ok());
    std::vector<float> x(256, 1.5f), y(256, 2.25f);
    for (uint64_t *d : {&dx, &dy, &dz})
      EXPECT_TRUE(c.malloc(1024, *d).ok());
    EXPECT_TRUE(c.copyToDevice(dx, x.data(), 1024).ok());
    EXPECT_TRUE(c.copyToDevice(dy, y.data(), 1024).ok());
  }
  /// Launches it; "" when every element came out 3.75, else what did not.
  std::string run() {
    const KernelLayout *k = m.findKernel("vec_add");
    if (!k)
      return "no vec_add";
    Params q(*k);
    q.add(int32_t(256)).add(dx).add(dy).add(dz);
    std::vector<float> z(256, 0.0f);
    if (Status st = c.memset(dz, 0, 1024); !st.ok())
      return st.str();
    if (Status st = c.launch(m.handle, "vec_add", {1}, {256}, 0, q.bytes.data(),
                             q.bytes.size());
        !st.ok())
      return st.str();
    if (Status st = c.copyFromDevice(z.data(), dz, 1024); !st.ok())
      return st.str();
    for (size_t i = 0; i < z.size(); ++i)
      if (z[i] != 3.75f)
        return "z[" + std::to_string(i) + "] = " + std::to_string(z[i]);
    return "";
  }
  Client &c;
  Module m;
  uint64_t dx = 0, dy = 0, dz = 0;
};

/// A module whose kernel `count(out, n)` counts to n, storing every step
/// (volatile) at `out`: a kernel that runs as long as asked.
const char *kCountModule = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry count(.param .u64 out, .param .u32 n)
{
  .reg .pred %p;
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r2, [n];
  mov.u32 %r1, 0;
LOOP:
  add.u32 %r1, %r1, 1;
  st.volatile.global.u32 [%rd1], %r1;
  setp.lt.u32 %p, %r1, %r2;
  @%p bra.uni LOOP;
  ret;
}
)";

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

// Two tenant programs at once, each checking its results bit for bit.
TEST_F(ServerTest, TwoClientProcessesAtOnce) {
  startServer();
  std::string env = "WOOLY_SERVER=" + endpoint;
  pid_t a = spawn({WOOLY_BIN_DIR "/wooly-app-saxpy",
                   "--ptx=" WOOLY_CORPUS_DIR "/elementwise.sm_90.ptx",
                   "--n=262144", "--rounds=3"},
                  dir + "/saxpy.log", {env, "WOOLY_TENANT=alpha"});
  pid_t b = spawn({WOOLY_BIN_DIR "/wooly-app-reduce",
                   "--ptx=" WOOLY_CORPUS_DIR "/reduction.sm_90.ptx",
                   "--n=16384", "--rounds=2"},
                  dir + "/reduce.log", {env, "WOOLY_TENANT=beta"});
  EXPECT_EQ(waitExit(a), 0) << readFile(dir + "/saxpy.log") << log();
  EXPECT_EQ(waitExit(b), 0) << readFile(dir + "/reduce.log") << log();
  EXPECT_NE(readFile(dir + "/saxpy.log").find("bit-identical"),
            std::string::npos);
  EXPECT_NE(readFile(dir + "/reduce.log").find("all exact"), std::string::npos);
}

// Another session's allocation, module, stream and event: errors, and the
// owner's data is unchanged.
TEST_F(ServerTest, ForeignHandlesAndAddressesAreRefused) {
  startServer();
  auto a = connect("alice");
  auto b = connect("bob");
  ASSERT_TRUE(a && b);
  std::vector<uint32_t> data(1024);
  for (uint32_t i = 0; i < data.size(); ++i)
    data[i] = i * 2654435761u;
  uint64_t buf;
  ASSERT_TRUE(a->malloc(4096, buf).ok());
  ASSERT_TRUE(a->copyToDevice(buf, data.data(), 4096).ok());
  Module m;
  ASSERT_TRUE(a->loadModule(corpus("elementwise.sm_90.ptx"), "ew", m).ok());
  uint64_t stream, event;
  ASSERT_TRUE(a->streamCreate(stream).ok());
  ASSERT_TRUE(a->eventCreate(event).ok());

  std::vector<uint32_t> junk(1024, 0xdeadbeef);
  EXPECT_EQ(b->copyToDevice(buf, junk.data(), 4096).code, Code::InvalidAddress);
  EXPECT_EQ(b->copyToDevice(buf + 4000, junk.data(), 200).code,
            Code::InvalidAddress);
  EXPECT_EQ(b->memset(buf, 0, 16).code, Code::InvalidAddress);
  EXPECT_EQ(b->copyFromDevice(junk.data(), buf, 4096).code,
            Code::InvalidAddress);
  EXPECT_EQ(b->free(buf).code, Code::InvalidAddress);
  EXPECT_EQ(b->streamSynchronize(stream).code, Code::InvalidHandle);
  EXPECT_EQ(b->eventSynchronize(event).code, Code::InvalidHandle);
  EXPECT_EQ(b->unloadModule(m.handle).code, Code::InvalidHandle);
  uint64_t bbuf;
  ASSERT_TRUE(b->malloc(4096, bbuf).ok());
  EXPECT_EQ(b->copyDeviceToDevice(bbuf, buf, 4096).code, Code::InvalidAddress);
  // An asynchronous launch naming alice's module fails at b's next sync.
  const KernelLayout *k = m.findKernel("vec_add");
  ASSERT_NE(k, nullptr);
  Params p(*k);
  p.add(int32_t(1024)).add(bbuf).add(bbuf).add(bbuf);
  ASSERT_TRUE(b->launch(m.handle, "vec_add", {4}, {256}, 0, p.bytes.data(),
                        p.bytes.size())
                  .ok());
  uint64_t launchSeq = b->lastSeq();
  Status s = b->deviceSynchronize();
  EXPECT_EQ(s.code, Code::InvalidHandle) << s.str();
  EXPECT_EQ(s.seq, launchSeq) << "the deferred error names the launch";
  // The error was reported once (not sticky).
  EXPECT_TRUE(b->deviceSynchronize().ok());

  std::vector<uint32_t> back(1024);
  ASSERT_TRUE(a->copyFromDevice(back.data(), buf, 4096).ok());
  EXPECT_EQ(back, data);
}

// Texture and surface objects belong to the session that made them: another
// session can neither make one over its memory nor destroy one; features
// that are not supported yet are refused as such; a session's objects are
// destroyed when it ends.
TEST_F(ServerTest, TextureObjectsBelongToTheirSession) {
  startServer();
  auto a = connect("alice");
  auto b = connect("bob");
  ASSERT_TRUE(a && b);
  // A 16 x 16 float4 CUDA array: an allocation laid out row after row.
  wooly::ResourceDesc r;
  r.kind = wooly::ResourceDesc::Kind::Array;
  r.format.bits[0] = r.format.bits[1] = r.format.bits[2] = r.format.bits[3] =
      32;
  r.format.kind = wooly::ChannelKind::Float;
  r.width = r.height = 16;
  ASSERT_TRUE(a->malloc(16 * 16 * 16, r.address).ok());
  wooly::TextureDesc t;
  t.filterMode = wooly::FilterMode::Linear;
  uint64_t tex = 0, surf = 0;
  ASSERT_TRUE(a->textureCreate(r, t, false, tex).ok());
  ASSERT_TRUE(a->textureCreate(r, t, true, surf).ok());
  EXPECT_NE(tex, surf);

  uint64_t other = 0;
  EXPECT_EQ(b->textureCreate(r, t, false, other).code, Code::InvalidAddress);
  EXPECT_EQ(b->textureDestroy(tex, false).code, Code::InvalidHandle);
  EXPECT_EQ(b->textureDestroy(surf, true).code, Code::InvalidHandle);
  // The wrong kind, and texels past the allocation.
  EXPECT_EQ(a->textureDestroy(tex, true).code, Code::InvalidHandle);
  wooly::ResourceDesc tooBig = r;
  tooBig.height = 17;
  EXPECT_EQ(a->textureCreate(tooBig, t, false, other).code, Code::InvalidValue);
  // Not supported yet, and said so.
  wooly::client::TextureExtras anisotropic;
  anisotropic.maxAnisotropy = 8;
  Status st = a->textureCreate(r, t, false, other, anisotropic);
  EXPECT_EQ(st.code, Code::Unsupported);
  EXPECT_NE(st.message.find("anisotropic filtering"), std::string::npos)
      << st.str();
  wooly::ResourceDesc mip = r;
  mip.kind = wooly::ResourceDesc::Kind::MipmappedArray;
  wooly::TextureDesc texels = t;
  texels.normalizedCoords = false;
  EXPECT_EQ(a->textureCreate(mip, texels, false, other).code,
            Code::Unsupported);
  EXPECT_NE(log().find("a mipmapped texture with unnormalized coordinates is "
                       "not supported yet"),
            std::string::npos)
      << log();

  EXPECT_TRUE(a->textureDestroy(tex, false).ok());
  EXPECT_EQ(a->textureDestroy(tex, false).code, Code::InvalidHandle);
  // The surface is left to the end of the session.
  a.reset();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline &&
         log().find("1 texture or surface object destroyed") ==
             std::string::npos)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_NE(log().find("1 texture or surface object destroyed"),
            std::string::npos)
      << log();
}

// A texture object made while its tenant's memory is moved out (the tenant
// idle, another one needing the room), sampled once the memory is back:
// point sampling at texel centres gives the texels bit for bit.
TEST_F(ServerTest, TextureOverMovedOutMemory) {
  std::ofstream(dir + "/tenants.yaml")
      << "tenants:\n  - name: t0\n    token: \"k\"\n    memory: 48MiB\n"
         "  - name: t1\n    token: \"k\"\n    memory: 48MiB\n";
  startServer({"--device-memory=64MiB", "--tenants=" + dir + "/tenants.yaml"});
  auto a = connect("t0", "k");
  auto b = connect("t1", "k");
  ASSERT_TRUE(a && b);
  const int w = 16, h = 16, n = w * h;
  std::vector<float> texels(n * 4);
  for (size_t i = 0; i < texels.size(); ++i)
    texels[i] = float(i) * 0.25f - 100.0f;
  wooly::ResourceDesc r;
  r.kind = wooly::ResourceDesc::Kind::Array;
  r.format.bits[0] = r.format.bits[1] = r.format.bits[2] = r.format.bits[3] =
      32;
  r.format.kind = wooly::ChannelKind::Float;
  r.width = w;
  r.height = h;
  ASSERT_TRUE(a->malloc(n * 16, r.address).ok());
  ASSERT_TRUE(a->copyToDevice(r.address, texels.data(), n * 16).ok());
  uint64_t big = 0, bBig = 0;
  ASSERT_TRUE(a->malloc(40 << 20, big).ok());
  ASSERT_TRUE(a->deviceSynchronize().ok());
  Status st = b->malloc(40 << 20, bBig);
  ASSERT_TRUE(st.ok()) << st.str() << log();
  EXPECT_GT(metric(fetchMetrics(),
                   "wooly_tenant_memory_swapped_bytes{tenant=\"t0\"}"),
            0);

  uint64_t tex = 0;
  st = a->textureCreate(r, wooly::TextureDesc(), false, tex);
  ASSERT_TRUE(st.ok()) << st.str() << log();
  Module m;
  ASSERT_TRUE(a->loadModule(corpus("texture.sm_90.ptx"), "texture", m).ok());
  std::vector<float> coords;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      coords.push_back(float(x) + 0.5f);
      coords.push_back(float(y) + 0.5f);
    }
  uint64_t dc = 0, dout = 0;
  ASSERT_TRUE(a->malloc(n * 8, dc).ok());
  ASSERT_TRUE(a->malloc(n * 16, dout).ok());
  ASSERT_TRUE(a->copyToDevice(dc, coords.data(), n * 8).ok());
  const KernelLayout *k = m.findKernel("tex2d_sample");
  ASSERT_NE(k, nullptr);
  Params p(*k);
  p.add(tex).add(dout).add(dc).add(int32_t(n));
  ASSERT_TRUE(a->launch(m.handle, "tex2d_sample", {uint32_t(n / 64)}, {64}, 0,
                        p.bytes.data(), p.bytes.size())
                  .ok());
  std::vector<float> back(n * 4);
  st = a->copyFromDevice(back.data(), dout, n * 16);
  ASSERT_TRUE(st.ok()) << st.str() << log();
  EXPECT_EQ(std::memcmp(back.data(), texels.data(), n * 16), 0);
}

// A tenant's allocations stay within its quota; memInfo shows its view.
TEST_F(ServerTest, QuotaIsEnforced) {
  std::ofstream(dir + "/tenants.yaml") << "tenants:\n"
                                          "  - name: small\n"
                                          "    token: \"t0k\"\n"
                                          "    memory: 1MiB\n"
                                          "  - name: big\n"
                                          "    token: \"other\"\n"
                                          "    class: best-effort\n";
  startServer({"--tenants=" + dir + "/tenants.yaml"});
  Status s;
  EXPECT_FALSE(connect("small", "wrong", &s));
  EXPECT_EQ(s.code, Code::Unauthenticated) << s.str();
  EXPECT_FALSE(connect("nobody", "t0k", &s));
  EXPECT_EQ(s.code, Code::Unauthenticated);
  auto c = connect("small", "t0k", &s);
  ASSERT_TRUE(c) << s.str();
  EXPECT_EQ(c->session().quotaBytes, 1u << 20);
  uint64_t a, b2, free = 0, total = 0;
  ASSERT_TRUE(c->malloc(512 << 10, a).ok());
  s = c->malloc(600 << 10, b2);
  EXPECT_EQ(s.code, Code::OutOfMemory) << s.str();
  EXPECT_NE(s.message.find("quota"), std::string::npos) << s.message;
  ASSERT_TRUE(c->memInfo(free, total).ok());
  EXPECT_EQ(total, 1u << 20);
  EXPECT_EQ(free, 512u << 10);
  // A second session of the same tenant shares the quota.
  auto c2 = connect("small", "t0k");
  ASSERT_TRUE(c2);
  EXPECT_EQ(c2->malloc(600 << 10, b2).code, Code::OutOfMemory);
  ASSERT_TRUE(c->free(a).ok());
  EXPECT_TRUE(c2->malloc(600 << 10, b2).ok());
  auto big = connect("big", "other");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->session().priorityClass, "best-effort");
}

// A client killed mid-work: its session is torn down and its memory
// returns (seen through another session of the same tenant).
TEST_F(ServerTest, KilledClientMemoryIsReturned) {
  startServer({"--device-memory=512MiB"});
  auto watcher = connect("victim");
  ASSERT_TRUE(watcher);
  int in = -1, out = -1;
  pid_t child = spawn(
      {WOOLY_BIN_DIR "/wooly-app-hold", "--bytes=268435456"}, dir + "/hold.log",
      {"WOOLY_SERVER=" + endpoint, "WOOLY_TENANT=victim"}, &in, &out);
  ASSERT_GT(child, 0);
  char buf[16] = {};
  ASSERT_GT(read(out, buf, 6), 0) << readFile(dir + "/hold.log") << log();
  EXPECT_EQ(std::string(buf, 5), "ready");
  uint64_t free = 0, total = 0;
  ASSERT_TRUE(watcher->memInfo(free, total).ok());
  EXPECT_EQ(free, (512ull - 256) << 20);
  kill(child, SIGKILL);
  EXPECT_EQ(waitExit(child), 128 + SIGKILL);
  close(in);
  close(out);
  // The server notices the closed connection asynchronously.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(watcher->memInfo(free, total).ok());
    if (free == 512ull << 20)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(free, 512ull << 20) << log();
  EXPECT_NE(log().find("client disconnected"), std::string::npos);
  // The memory can be allocated again.
  uint64_t a;
  EXPECT_TRUE(watcher->malloc(400 << 20, a).ok());
}

/// A raw DEALER socket for malformed input.
class RawClient {
public:
  /// `receiveQueue`: ZMQ_RCVHWM (messages it lets queue unread; 0:
  /// ZeroMQ's default).
  explicit RawClient(const std::string &endpoint, int receiveQueue = 0) {
    ctx = zmq_ctx_new();
    sock = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0, timeout = 10000;
    zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof zero);
    if (receiveQueue)
      zmq_setsockopt(sock, ZMQ_RCVHWM, &receiveQueue, sizeof receiveQueue);
    zmq_setsockopt(sock, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_connect(sock, endpoint.c_str());
  }
  ~RawClient() {
    zmq_close(sock);
    zmq_ctx_term(ctx);
  }
  void send(const std::vector<std::string> &frames) {
    for (size_t i = 0; i < frames.size(); ++i)
      zmq_send(sock, frames[i].data(), frames[i].size(),
               i + 1 < frames.size() ? ZMQ_SNDMORE : 0);
  }
  /// The envelope of the next reply ("" on timeout); its payload frames in
  /// `payloads`.
  std::string receive(std::vector<std::string> *payloads = nullptr) {
    std::vector<std::string> frames;
    for (;;) {
      zmq_msg_t m;
      zmq_msg_init(&m);
      if (zmq_msg_recv(&m, sock, 0) < 0) {
        zmq_msg_close(&m);
        break;
      }
      frames.emplace_back(static_cast<char *>(zmq_msg_data(&m)),
                          zmq_msg_size(&m));
      bool more = zmq_msg_more(&m);
      zmq_msg_close(&m);
      if (!more)
        break;
    }
    if (frames.empty())
      return "";
    if (payloads)
      payloads->assign(frames.begin() + 1, frames.end());
    return frames[0];
  }

private:
  void *ctx, *sock;
};

// Hand-encoded Protobuf (wire format), so that the test does not share the
// client's encoder: field numbers from proto/wooly.proto.
std::string varint(uint64_t v) {
  std::string s;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    s += char(v ? b | 0x80 : b);
  } while (v);
  return s;
}
std::string field(unsigned num, uint64_t v) {
  return varint(num << 3) + varint(v);
}
std::string field(unsigned num, const std::string &bytes) {
  return varint(num << 3 | 2) + varint(bytes.size()) + bytes;
}
/// Request{version, calls: [Call{seq, <op field> = body}]}.
std::string request(uint32_t version, uint64_t seq, unsigned op,
                    const std::string &body) {
  return field(1, version) + field(2, field(1, seq) + field(op, body));
}

// Malformed messages get an error reply or are dropped; the server keeps
// serving everyone.
TEST_F(ServerTest, MalformedInputIsRefused) {
  startServer();
  auto good = connect("good");
  ASSERT_TRUE(good);
  RawClient raw(endpoint);
  // Random bytes as the envelope.
  std::string noise;
  for (int i = 0; i < 64; ++i)
    noise += char(i * 37 + 11);
  raw.send({noise});
  std::string r = raw.receive();
  EXPECT_NE(r.find("not a wooly.v1.Request"), std::string::npos) << r;
  // A truncated envelope.
  std::string hello = request(1, 1, 10, field(1, std::string("raw")));
  raw.send({hello.substr(0, hello.size() - 3)});
  r = raw.receive();
  EXPECT_NE(r.find("not a wooly.v1.Request"), std::string::npos) << r;
  // A wrong version: the error names both.
  raw.send({request(7, 2, 10, field(1, std::string("raw")))});
  r = raw.receive();
  EXPECT_NE(r.find("version 7"), std::string::npos) << r;
  EXPECT_NE(r.find("version 1"), std::string::npos) << r;
  // A call before Hello.
  raw.send({request(1, 3, 17, field(1, 64))});
  r = raw.receive();
  EXPECT_NE(r.find("no session"), std::string::npos) << r;
  // Now a session.
  raw.send({request(1, 4, 10, field(1, std::string("raw")))});
  r = raw.receive();
  EXPECT_NE(r.find("raw"), std::string::npos) << r;
  // An unknown call (a field number the server does not know).
  raw.send({request(1, 5, 99, field(1, 1))});
  r = raw.receive();
  EXPECT_NE(r.find("unknown call"), std::string::npos) << r;
  // Malloc: a real allocation to aim at.
  raw.send({request(1, 6, 17, field(1, 4096))});
  r = raw.receive();
  ASSERT_FALSE(r.empty());
  // A payload frame shorter than the call claims (CopyToDevice, sync).
  raw.send({request(1, 7, 20, field(1, 0x1000) + field(2, 4096)),
            std::string(100, 'x')});
  r = raw.receive();
  EXPECT_NE(r.find("payload frame has 100 bytes"), std::string::npos) << r;
  // A missing payload frame.
  raw.send({request(1, 8, 20, field(1, 0x1000) + field(2, 4096))});
  r = raw.receive();
  EXPECT_NE(r.find("payload frame is missing"), std::string::npos) << r;
  // A huge size claim: a 2^62-byte device-to-host copy.
  raw.send({request(1, 9, 21, field(1, 0x1000) + field(2, 1ull << 62))});
  r = raw.receive();
  EXPECT_FALSE(r.empty());
  EXPECT_NE(r.find("exceeds the message limit"), std::string::npos) << r;
  // A huge malloc.
  raw.send({request(1, 10, 17, field(1, 1ull << 62))});
  r = raw.receive();
  EXPECT_NE(r.find("quota"), std::string::npos) << r;
  // An empty message.
  raw.send({std::string()});
  r = raw.receive();
  EXPECT_FALSE(r.empty());
  // A refused call does not leave its payload frame to the next call: a
  // synchronous copy that is not the last call of its message is refused,
  // and the asynchronous copy after it gets its own frame.
  raw.send({request(1, 11, 17, field(1, 64))});
  r = raw.receive();
  ASSERT_GT(r.size(), 4u);
  // The allocation's address: Reply.allocated (15) { address (1) }.
  uint64_t addr = 0;
  {
    size_t at = r.find(char(15 << 3 | 2));
    ASSERT_NE(at, std::string::npos) << r;
    size_t p = at + 3; // tag, length, then field 1's tag
    for (unsigned shift = 0; p < r.size(); shift += 7) {
      uint8_t b = uint8_t(r[p++]);
      addr |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        break;
    }
  }
  std::string two =
      field(1, 1) +
      field(2, field(1, 12) + field(20, field(1, addr) + field(2, 4))) +
      field(2, field(1, 13) +
                   field(20, field(1, addr) + field(2, 4) + field(4, 1)));
  raw.send({two, "AAAA", "BBBB"});
  r = raw.receive();
  EXPECT_NE(r.find("must be the last"), std::string::npos) << r;
  // Read it back: CopyFromDevice (21) {src, bytes 4}.
  raw.send({request(1, 14, 21, field(1, addr) + field(2, 4))});
  std::vector<std::string> data;
  r = raw.receive(&data);
  ASSERT_EQ(data.size(), 1u) << r;
  EXPECT_EQ(data[0], "BBBB");

  // The well-behaved client never noticed.
  uint64_t a;
  ASSERT_TRUE(good->malloc(64, a).ok());
  uint32_t v = 0x12345678, w = 0;
  ASSERT_TRUE(good->copyToDevice(a, &v, 4).ok());
  ASSERT_TRUE(good->copyFromDevice(&w, a, 4).ok());
  EXPECT_EQ(w, v);
}

// A kernel fault is sticky for its session only.
TEST_F(ServerTest, KernelFaultIsStickyForItsSessionOnly) {
  startServer();
  auto bad = connect("mallory");
  auto good = connect("alice");
  ASSERT_TRUE(bad && good);
  Module mb;
  ASSERT_TRUE(bad->loadModule(corpus("elementwise.sm_90.ptx"), "ew", mb).ok());
  VecAdd work(*good);
  const KernelLayout *k = mb.findKernel("vec_add");
  ASSERT_NE(k, nullptr);
  uint64_t buf;
  ASSERT_TRUE(bad->malloc(1024, buf).ok());
  // c points nowhere: the store faults (the CPU backend checks bounds).
  Params p(*k);
  p.add(int32_t(256)).add(buf).add(buf).add(uint64_t(16));
  ASSERT_TRUE(bad->launch(mb.handle, "vec_add", {1}, {256}, 0, p.bytes.data(),
                          p.bytes.size())
                  .ok());
  Status s = bad->deviceSynchronize();
  EXPECT_EQ(s.code, Code::IllegalAddress) << s.str();
  EXPECT_TRUE(s.sticky);
  EXPECT_EQ(bad->malloc(16, buf).code, Code::IllegalAddress);

  // The other tenant's work is unaffected.
  EXPECT_EQ(work.run(), "");
}

// Streams, events, module variables, kernel attributes; only the kernels
// launched are compiled.
TEST_F(ServerTest, StreamsEventsVariablesAndLazyCompiles) {
  startServer();
  auto c = connect("user");
  ASSERT_TRUE(c);
  Module m;
  ASSERT_TRUE(c->loadModule(corpus("reduction.sm_90.ptx"), "red", m).ok());
  EXPECT_EQ(m.kernels.size(), 3u);
  // A second load of the same text: by hash, same layouts.
  Module again;
  ASSERT_TRUE(c->loadModule(corpus("reduction.sm_90.ptx"), "red", again).ok());
  EXPECT_NE(again.handle, m.handle);
  EXPECT_EQ(again.kernels.size(), 3u);
  // A module that does not compile.
  Module broken;
  Status s = c->loadModule(".version 8.0\n.target sm_90\n.address_size 64\n"
                           ".visible .entry k() { bogus.op; }\n",
                           "broken", broken);
  EXPECT_EQ(s.code, Code::CompileError) << s.str();
  EXPECT_NE(s.message.find("broken:"), std::string::npos) << s.message;

  const KernelLayout *k = m.findKernel("block_sum_i32");
  ASSERT_NE(k, nullptr);
  KernelAttributes attrs;
  ASSERT_TRUE(c->funcAttributes(m.handle, "block_sum_i32", attrs).ok());
  EXPECT_EQ(attrs.paramBufferSize, k->paramBufferSize);
  EXPECT_GT(attrs.staticSharedBytes, 0u);
  uint32_t blocks = 0;
  ASSERT_TRUE(c->occupancy(m.handle, "block_sum_i32", 256, 0, blocks).ok());
  EXPECT_GT(blocks, 0u);
  EXPECT_EQ(c->funcAttributes(m.handle, "nope", attrs).code, Code::NotFound);

  std::vector<int32_t> in(1024);
  for (int i = 0; i < 1024; ++i)
    in[i] = i - 300;
  uint64_t din, dout, st, e0, e1;
  ASSERT_TRUE(c->malloc(4096, din).ok());
  ASSERT_TRUE(c->malloc(16, dout).ok());
  ASSERT_TRUE(c->streamCreate(st).ok());
  ASSERT_TRUE(c->eventCreate(e0).ok());
  ASSERT_TRUE(c->eventCreate(e1).ok());
  ASSERT_TRUE(c->eventRecord(e0, st).ok());
  ASSERT_TRUE(c->copyToDevice(din, in.data(), 4096, st, true).ok());
  Params p(*k);
  p.add(int32_t(1024)).add(din).add(dout);
  ASSERT_TRUE(c->launch(m.handle, "block_sum_i32", {4}, {256}, 0,
                        p.bytes.data(), p.bytes.size(), st)
                  .ok());
  ASSERT_TRUE(c->eventRecord(e1, st).ok());
  ASSERT_TRUE(c->streamSynchronize(st).ok());
  EXPECT_TRUE(c->streamQuery(st).ok());
  EXPECT_TRUE(c->eventQuery(e1).ok());
  float ms = -1;
  ASSERT_TRUE(c->eventElapsed(e0, e1, ms).ok());
  EXPECT_GE(ms, 0.0f);
  int32_t sums[4];
  ASSERT_TRUE(c->copyFromDevice(sums, dout, 16, st).ok());
  // Device-to-device, asynchronous, within the session's memory.
  uint64_t dcopy;
  ASSERT_TRUE(c->malloc(16, dcopy).ok());
  ASSERT_TRUE(c->copyDeviceToDevice(dcopy, dout, 16, st, true).ok());
  int32_t copied[4] = {};
  ASSERT_TRUE(c->copyFromDevice(copied, dcopy, 16, st).ok());
  EXPECT_EQ(std::memcmp(copied, sums, 16), 0);
  for (int b = 0; b < 4; ++b) {
    int32_t want = 0;
    for (int i = 0; i < 256; ++i)
      want += in[b * 256 + i];
    EXPECT_EQ(sums[b], want);
  }
  // Only block_sum_i32 was compiled (one cache miss, the attributes call
  // shared it), not the module's two other kernels.
  std::string logText = log();
  EXPECT_NE(logText.find("kernel block_sum_i32 of red ready"),
            std::string::npos)
      << logText;
  EXPECT_EQ(logText.find("block_sum_f32"), std::string::npos) << logText;
  EXPECT_EQ(logText.find("warp_vote"), std::string::npos) << logText;

  // Module variables: elementwise's __cudart_i2opi_f table (24 bytes).
  Module ew;
  ASSERT_TRUE(c->loadModule(corpus("elementwise.sm_90.ptx"), "ew", ew).ok());
  ASSERT_EQ(ew.variables.size(), 1u);
  EXPECT_EQ(ew.variables[0].name, "__cudart_i2opi_f");
  EXPECT_EQ(ew.variables[0].size, 24u);
  uint8_t table[24];
  ASSERT_TRUE(c->copyFromSymbol(table, ew.handle, "__cudart_i2opi_f", 24).ok());
  EXPECT_EQ(table[0], 65);
  EXPECT_EQ(table[23], 162);
  uint8_t patch[4] = {1, 2, 3, 4};
  ASSERT_TRUE(
      c->copyToSymbol(ew.handle, "__cudart_i2opi_f", patch, 4, 20).ok());
  uint64_t addr = 0, size = 0;
  ASSERT_TRUE(c->getSymbol(ew.handle, "__cudart_i2opi_f", addr, size).ok());
  EXPECT_EQ(size, 24u);
  uint8_t tail[4];
  ASSERT_TRUE(c->copyFromDevice(tail, addr + 20, 4).ok());
  EXPECT_EQ(std::memcmp(tail, patch, 4), 0);
  EXPECT_EQ(c->copyToSymbol(ew.handle, "__cudart_i2opi_f", patch, 4, 22).code,
            Code::InvalidValue);
  EXPECT_EQ(c->copyFromSymbol(table, ew.handle, "nope", 4).code,
            Code::NotFound);
  ASSERT_TRUE(c->unloadModule(ew.handle).ok());
  EXPECT_EQ(c->copyFromDevice(tail, addr + 20, 4).code, Code::InvalidAddress);
}

// The metrics endpoint: per-tenant counters, and promtool accepts it.
TEST_F(ServerTest, MetricsArePrometheusText) {
  startServer();
  auto c = connect("metered");
  ASSERT_TRUE(c);
  uint64_t a;
  ASSERT_TRUE(c->malloc(1 << 20, a).ok());
  std::vector<char> data(1 << 20, 7);
  ASSERT_TRUE(c->copyToDevice(a, data.data(), data.size()).ok());
  ASSERT_TRUE(c->copyFromDevice(data.data(), a, 4096).ok());
  std::string text = fetchMetrics();
  ASSERT_FALSE(text.empty()) << log();
  EXPECT_EQ(metric(text, "wooly_tenant_memory_used_bytes{tenant=\"metered\"}"),
            double(1 << 20))
      << text;
  EXPECT_EQ(metric(text, "wooly_tenant_copy_bytes_total{tenant=\"metered\","
                         "direction=\"host_to_device\"}"),
            double(1 << 20))
      << text;
  EXPECT_EQ(metric(text, "wooly_tenant_copy_bytes_total{tenant=\"metered\","
                         "direction=\"device_to_host\"}"),
            4096.0);
  EXPECT_GE(metric(text, "wooly_device_busy_fraction"), 0.0);
  if (system("command -v promtool >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "promtool not found (Debian package 'prometheus'): the "
                    "metrics text was not checked by promtool";
  std::string path = dir + "/metrics.txt";
  std::ofstream(path) << text;
  std::string cmd = "promtool check metrics < '" + path + "' > '" + dir +
                    "/promtool.log' 2>&1";
  EXPECT_EQ(system(cmd.c_str()), 0) << readFile(dir + "/promtool.log");
}

} // namespace

namespace {
// Two kernels sharing a module variable, compiled one by one.
const char *kVariablesPTX = R"(.version 8.0
.target sm_90
.address_size 64
.global .align 4 .u32 counter = 7;
.visible .entry bump(.param .u32 bump_v) {
  .reg .b32 %r<4>;
  ld.param.u32 %r1, [bump_v];
  ld.global.u32 %r2, [counter];
  add.u32 %r3, %r2, %r1;
  st.global.u32 [counter], %r3;
  ret;
}
.visible .entry read(.param .u64 read_out) {
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [read_out];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.u32 %r1, [counter];
  st.global.u32 [%rd2], %r1;
  ret;
}
)";

// Kernels compiled separately share one instance of the module's variable
// per session; each session has its own.
TEST_F(ServerTest, KernelsCompiledApartShareModuleVariables) {
  startServer();
  auto c = connect("one");
  auto d = connect("two");
  ASSERT_TRUE(c && d);
  Module m;
  ASSERT_TRUE(c->loadModule(kVariablesPTX, "vars", m).ok());
  uint32_t v = 0;
  // Before any launch: the variables alone are compiled.
  ASSERT_TRUE(c->copyFromSymbol(&v, m.handle, "counter", 4).ok());
  EXPECT_EQ(v, 7u);
  uint64_t out;
  ASSERT_TRUE(c->malloc(4, out).ok());
  auto run = [&](Client &cl, const Module &mod, const char *k, auto arg) {
    Params p(*mod.findKernel(k));
    p.add(arg);
    return cl.launch(mod.handle, k, {1}, {1}, 0, p.bytes.data(),
                     p.bytes.size());
  };
  ASSERT_TRUE(run(*c, m, "bump", uint32_t(5)).ok());
  ASSERT_TRUE(run(*c, m, "read", out).ok());
  ASSERT_TRUE(c->copyFromDevice(&v, out, 4).ok());
  EXPECT_EQ(v, 12u);
  uint32_t hundred = 100;
  ASSERT_TRUE(c->copyToSymbol(m.handle, "counter", &hundred, 4).ok());
  ASSERT_TRUE(run(*c, m, "bump", uint32_t(1)).ok());
  ASSERT_TRUE(run(*c, m, "read", out).ok());
  ASSERT_TRUE(c->copyFromDevice(&v, out, 4).ok());
  EXPECT_EQ(v, 101u);
  // The other session's instance is untouched by the first's writes.
  Module m2;
  ASSERT_TRUE(d->loadModule(kVariablesPTX, "vars", m2).ok());
  uint64_t out2;
  ASSERT_TRUE(d->malloc(4, out2).ok());
  ASSERT_TRUE(run(*d, m2, "read", out2).ok());
  ASSERT_TRUE(d->copyFromDevice(&v, out2, 4).ok());
  EXPECT_EQ(v, 7u);
  std::string l = log();
  EXPECT_NE(l.find("the variables of vars ready"), std::string::npos) << l;
  EXPECT_NE(l.find("kernel bump of vars ready"), std::string::npos) << l;
  EXPECT_NE(l.find("kernel read of vars ready"), std::string::npos) << l;
}
} // namespace

namespace {
/// A free TCP port on 127.0.0.1 (bound then released).
int freePort() {
  void *ctx = zmq_ctx_new();
  void *s = zmq_socket(ctx, ZMQ_REP);
  zmq_bind(s, "tcp://127.0.0.1:*");
  char last[256];
  size_t len = sizeof last;
  zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, last, &len);
  zmq_close(s);
  zmq_ctx_term(ctx);
  std::string ep(last);
  return std::atoi(ep.substr(ep.rfind(':') + 1).c_str());
}

// The same server on ipc:// and tcp://127.0.0.1 at once; a tenant program
// over tcp.
TEST_F(ServerTest, ServesTcpAndIpcTogether) {
  std::string tcp = "tcp://127.0.0.1:" + std::to_string(freePort());
  startServer({"--listen=" + tcp});
  EXPECT_NE(log().find(tcp), std::string::npos) << log();
  pid_t a = spawn({WOOLY_BIN_DIR "/wooly-app-saxpy",
                   "--ptx=" WOOLY_CORPUS_DIR "/elementwise.sm_90.ptx",
                   "--n=65536", "--rounds=2"},
                  dir + "/saxpy.log", {"WOOLY_SERVER=" + tcp});
  auto c = connect("ipc-user");
  ASSERT_TRUE(c);
  uint64_t addr;
  ASSERT_TRUE(c->malloc(1 << 16, addr).ok());
  std::vector<uint8_t> in(1 << 16), out(1 << 16);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = uint8_t(i * 7);
  ASSERT_TRUE(c->copyToDevice(addr, in.data(), in.size()).ok());
  ASSERT_TRUE(c->copyFromDevice(out.data(), addr, out.size()).ok());
  EXPECT_EQ(in, out);
  EXPECT_EQ(waitExit(a), 0) << readFile(dir + "/saxpy.log") << log();
}

// A server that dies ends a client's calls with Unavailable, not a hang.
TEST_F(ServerTest, ClientSeesADeadServer) {
  startServer();
  auto c = connect("survivor");
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->ping().ok());
  kill(pid, SIGKILL);
  EXPECT_EQ(waitExit(pid), 128 + SIGKILL);
  pid = -1;
  uint64_t a;
  Status s = c->malloc(64, a);
  EXPECT_EQ(s.code, Code::Unavailable) << s.str();
  EXPECT_NE(s.message.find("lost the connection"), std::string::npos)
      << s.message;
  // Every later call says the same at once.
  EXPECT_EQ(c->ping().code, Code::Unavailable);
  // No server at all: connect gives up after its timeout with a clear
  // message.
  Options o;
  o.server = endpoint;
  o.connectTimeoutMs = 300;
  auto none = Client::connect(o, s);
  EXPECT_FALSE(none);
  EXPECT_EQ(s.code, Code::Unavailable);
  EXPECT_NE(s.message.find("no wooly-serve answered"), std::string::npos)
      << s.message;
}
} // namespace

namespace {
/// Runs `argv` with `env`, returns its exit status and its output.
std::pair<int, std::string> run(const std::vector<std::string> &argv,
                                const std::vector<std::string> &env,
                                const std::string &logPath) {
  pid_t p = spawn(argv, logPath, env);
  int rc = waitExit(p);
  return {rc, readFile(logPath)};
}

/// The summary line of wooly-conformance ("N passed, N failed, ...").
std::string summary(const std::string &out) {
  size_t at = out.rfind(" passed, ");
  if (at == std::string::npos)
    return "";
  size_t start = out.rfind('\n', at);
  start = start == std::string::npos ? 0 : start + 1;
  return out.substr(start, out.find('\n', at) - start);
}

/// Runs the ZLUDA suite in-process and through the server at `endpoint`
/// (wooly-conformance --backend=remote, with `env` naming the tenant) and
/// expects the same exit status and summary; logs go to `dir`.
void expectZludaSameThroughServer(const std::string &dir,
                                  const std::string &endpoint,
                                  std::vector<std::string> env,
                                  const std::string &serverLog) {
  std::vector<std::string> argv = {
      WOOLY_BIN_DIR "/wooly-conformance", WOOLY_ZLUDA_DIR,
      "--known-failures=" WOOLY_SOURCE_DIR
      "/test/Runtime/CPU/zluda-known-failures.txt"};
  auto local = run(argv, {}, dir + "/local.log");
  argv.push_back("--backend=remote");
  env.push_back("WOOLY_SERVER=" + endpoint);
  auto remote = run(argv, env, dir + "/remote.log");
  EXPECT_EQ(remote.first, local.first) << remote.second;
  ASSERT_NE(summary(local.second), "") << local.second;
  EXPECT_EQ(summary(remote.second), summary(local.second))
      << remote.second << serverLog;
}

// The ZLUDA suite (182 kernels with exact expected outputs) run through the
// server (wooly-conformance --backend=remote) gives what it gives on the
// CPU backend in-process: every kernel, copy and fault through the protocol.
TEST_F(ServerTest, ZludaSuiteThroughTheServer) {
  if (access(WOOLY_ZLUDA_DIR "/expected.json", R_OK) != 0)
    GTEST_SKIP() << "no ZLUDA suite at " WOOLY_ZLUDA_DIR;
  startServer();
  expectZludaSameThroughServer(dir, endpoint, {}, log());
}
} // namespace

// CUDA graphs kept on the server: a recorded sequence of launches, memsets
// and copies replayed by one call per launch; handles are the session's;
// calls that need this process's memory cannot be recorded; a replayed
// launch's error is reported under the GraphLaunch's sequence number.
TEST_F(ServerTest, GraphsAreKeptOnTheServer) {
  startServer();
  auto c = connect("alice");
  auto other = connect("bob");
  ASSERT_TRUE(c && other);
  Module m;
  ASSERT_TRUE(c->loadModule(corpus("elementwise.sm_90.ptx"), "ew", m).ok());
  const KernelLayout *k = m.findKernel("vec_add");
  ASSERT_NE(k, nullptr);
  const int n = 256;
  std::vector<float> x(n, 1.5f), z(n);
  uint64_t dx, dz, dw;
  ASSERT_TRUE(c->malloc(n * 4, dx).ok());
  ASSERT_TRUE(c->malloc(n * 4, dz).ok());
  ASSERT_TRUE(c->malloc(n * 4, dw).ok());
  ASSERT_TRUE(c->copyToDevice(dx, x.data(), n * 4).ok());

  // z = 0; z = x + z; w = z: each replay adds nothing new, so z = x after
  // any number of replays; then z = x + w doubles it.
  ASSERT_TRUE(c->beginGraph().ok());
  ASSERT_TRUE(c->memset(dz, 0, n * 4, 0, true).ok());
  Params p(*k);
  p.add(int32_t(n)).add(dx).add(dz).add(dz);
  ASSERT_TRUE(c->launch(m.handle, "vec_add", {1}, {n}, 0, p.bytes.data(),
                        p.bytes.size())
                  .ok());
  ASSERT_TRUE(c->copyDeviceToDevice(dw, dz, n * 4, 0, true).ok());
  // Not recordable: a copy from this process's memory, a synchronous call.
  EXPECT_EQ(c->copyToDevice(dz, x.data(), 4, 0, true).code, Code::Unsupported);
  uint64_t dummy;
  EXPECT_EQ(c->malloc(16, dummy).code, Code::InvalidValue);
  uint64_t graph = 0;
  ASSERT_TRUE(c->endGraph(graph).ok());
  ASSERT_NE(graph, 0u);
  // Recording did not run anything.
  ASSERT_TRUE(c->copyFromDevice(z.data(), dw, n * 4).ok());
  EXPECT_EQ(z[0], 0.0f);

  uint64_t before = c->lastSeq();
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(c->graphLaunch(graph, 0).ok());
  EXPECT_EQ(c->lastSeq() - before, 10u) << "one call per replay";
  ASSERT_TRUE(c->copyFromDevice(z.data(), dw, n * 4).ok());
  for (float v : z)
    ASSERT_EQ(v, 1.5f);

  // Another session cannot launch or destroy it.
  EXPECT_TRUE(other->graphLaunch(graph, 0).ok()); // asynchronous
  EXPECT_EQ(other->deviceSynchronize().code, Code::InvalidHandle);
  EXPECT_EQ(other->graphDestroy(graph).code, Code::InvalidHandle);

  // A graph whose launch faults: the error names the GraphLaunch call.
  ASSERT_TRUE(c->beginGraph().ok());
  Params bad(*k);
  bad.add(int32_t(n)).add(dx).add(dz).add(uint64_t(16));
  ASSERT_TRUE(c->launch(m.handle, "vec_add", {1}, {n}, 0, bad.bytes.data(),
                        bad.bytes.size())
                  .ok());
  uint64_t faulty = 0;
  ASSERT_TRUE(c->endGraph(faulty).ok());
  ASSERT_TRUE(c->graphDestroy(graph).ok());
  EXPECT_EQ(c->graphDestroy(graph).code, Code::InvalidHandle);
  ASSERT_TRUE(c->graphLaunch(faulty, 0).ok());
  uint64_t launchSeq = c->lastSeq();
  Status s = c->deviceSynchronize();
  EXPECT_EQ(s.code, Code::IllegalAddress) << s.str();
  EXPECT_EQ(s.seq, launchSeq) << s.str();
}

// What a session's graphs keep on the server is bounded (--max-graph-bytes),
// counted on the calls' full size, and returned when a graph is destroyed.
TEST_F(ServerTest, GraphBytesAreBounded) {
  startServer({"--max-graph-bytes=64KiB"});
  auto c = connect("alice");
  ASSERT_TRUE(c);
  Module m;
  ASSERT_TRUE(c->loadModule(corpus("elementwise.sm_90.ptx"), "ew", m).ok());
  std::vector<uint8_t> params(m.findKernel("vec_add")->paramBufferSize);
  auto record = [&](int launches, uint64_t &graph) {
    EXPECT_TRUE(c->beginGraph().ok());
    for (int i = 0; i < launches; ++i)
      EXPECT_TRUE(c->launch(m.handle, "vec_add", {1}, {32}, 0, params.data(),
                            params.size())
                      .ok());
    return c->endGraph(graph);
  };
  // About 70 bytes a launch: 500 launches fit, 2000 do not, and two graphs
  // of 500 do not either.
  uint64_t small = 0, big = 0, second = 0;
  ASSERT_TRUE(record(500, small).ok());
  Status s = record(2000, big);
  EXPECT_EQ(s.code, Code::LimitExceeded) << s.str();
  EXPECT_NE(s.message.find("the limit is 65536"), std::string::npos) << s.str();
  // A second graph of the same size only fits once the first is gone.
  EXPECT_EQ(record(500, second).code, Code::LimitExceeded);
  ASSERT_TRUE(c->graphDestroy(small).ok());
  EXPECT_TRUE(record(500, second).ok());
}

namespace {
/// Runs `kernel` of `ptx` through `c` on `in` (ints) into a fresh buffer of
/// `outBytes`, `launches` times with the same parameters; returns the output
/// bytes of the last launch.
std::vector<uint8_t> runKernel(Client &c, const std::string &ptx,
                               const char *kernel, Dim3 grid, Dim3 block,
                               const std::vector<uint64_t> &inputs,
                               const std::vector<int32_t> &ints,
                               uint64_t outBytes, int launches,
                               uint64_t *outAddr = nullptr) {
  Module m;
  EXPECT_TRUE(c.loadModule(ptx, "k", m).ok());
  const KernelLayout *k = m.findKernel(kernel);
  EXPECT_NE(k, nullptr);
  if (!k)
    return {};
  uint64_t out = 0;
  EXPECT_TRUE(c.malloc(outBytes, out).ok());
  EXPECT_TRUE(c.memset(out, 0, outBytes, 0, true).ok());
  Params p(*k);
  for (int32_t v : ints)
    p.add(v);
  for (uint64_t a : inputs)
    p.add(a);
  p.add(out);
  for (int i = 0; i < launches; ++i)
    EXPECT_TRUE(c.launch(m.handle, kernel, grid, block, 0, p.bytes.data(),
                         p.bytes.size())
                    .ok());
  std::vector<uint8_t> bytes(outBytes);
  Status s = c.copyFromDevice(bytes.data(), out, outBytes);
  EXPECT_TRUE(s.ok()) << s.str();
  if (outAddr)
    *outAddr = out;
  return bytes;
}
} // namespace

// SLA pacing: with a latency-critical tenant configured, a best-effort
// tenant's kernels are compiled through wooly-slice and run constrained,
// sliced and preempted as the scheduler decides while the latency-critical
// tenant keeps launching. Their outputs are bit-identical to the same
// kernels run whole (by the latency-critical tenant, whose kernels are never
// sliced), the ZLUDA suite run as the best-effort tenant gives what it gives
// in-process, and /metrics and the trace show the slices and preemptions.
TEST_F(ServerTest, PacedKernelsAreBitIdentical) {
  std::ofstream(dir + "/tenants.yaml") << "tenants:\n"
                                          "  - name: lc\n"
                                          "    token: \"l\"\n"
                                          "    class: latency-critical\n"
                                          "    sla_ms: 2\n"
                                          "  - name: be\n"
                                          "    token: \"b\"\n"
                                          "    class: best-effort\n";
  std::string tracePath = dir + "/trace.json";
  startServer({"--tenants=" + dir + "/tenants.yaml", "--executors=3",
               "--trace=" + tracePath});
  auto lc = connect("lc", "l");
  auto be = connect("be", "b");
  ASSERT_TRUE(lc && be);

  // The latency-critical tenant launches small kernels until told to stop.
  std::atomic<bool> stop{false};
  std::atomic<int> lcLaunches{0};
  std::thread lcThread([&] {
    auto c = connect("lc", "l");
    Module m;
    if (!c || !c->loadModule(corpus("elementwise.sm_90.ptx"), "ew", m).ok())
      return;
    const KernelLayout *k = m.findKernel("vec_add");
    const int n = 1024;
    uint64_t x, z;
    if (!k || !c->malloc(n * 4, x).ok() || !c->malloc(n * 4, z).ok())
      return;
    Params p(*k);
    p.add(int32_t(n)).add(x).add(x).add(z);
    while (!stop) {
      c->launch(m.handle, "vec_add", {4}, {256}, 0, p.bytes.data(),
                p.bytes.size());
      c->deviceSynchronize();
      lcLaunches++;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });

  // Integer block sums (shared memory, barriers, warp shuffles) and a tiled
  // GEMM (two barriers per tile): run whole by lc, paced by be.
  const int n = 1 << 20;
  std::vector<int32_t> ints(n);
  for (int i = 0; i < n; ++i)
    ints[i] = int32_t(uint32_t(i) * 2654435761u >> 7);
  const int dim = 96;
  std::vector<float> mat(dim * dim);
  for (int i = 0; i < dim * dim; ++i)
    mat[i] = float((i * 7919) % 1000) / 250.0f - 2.0f;
  std::string reduction = corpus("reduction.sm_90.ptx");
  std::string gemm = corpus("gemm.sm_90.ptx");
  auto both = [&](Client &c, std::vector<std::vector<uint8_t>> &out) {
    uint64_t din, dmat;
    ASSERT_TRUE(c.malloc(n * 4, din).ok());
    ASSERT_TRUE(c.copyToDevice(din, ints.data(), n * 4).ok());
    ASSERT_TRUE(c.malloc(dim * dim * 4, dmat).ok());
    ASSERT_TRUE(c.copyToDevice(dmat, mat.data(), dim * dim * 4).ok());
    out.push_back(runKernel(c, reduction, "block_sum_i32", {n / 256}, {256},
                            {din}, {n}, (n / 256) * 4, 8));
    // C = 1 * A * A + 0 * C.
    Module m;
    ASSERT_TRUE(c.loadModule(gemm, "gemm", m).ok());
    const KernelLayout *k = m.findKernel("sgemm_tiled");
    ASSERT_NE(k, nullptr);
    uint64_t dc;
    ASSERT_TRUE(c.malloc(dim * dim * 4, dc).ok());
    Params p(*k);
    p.add(int32_t(dim)).add(int32_t(dim)).add(int32_t(dim)).add(1.0f);
    p.add(dmat).add(dmat).add(0.0f).add(dc);
    for (int i = 0; i < 4; ++i)
      ASSERT_TRUE(c.launch(m.handle, "sgemm_tiled", {dim / 16, dim / 16},
                           {16, 16}, 0, p.bytes.data(), p.bytes.size())
                      .ok());
    std::vector<uint8_t> cbytes(dim * dim * 4);
    ASSERT_TRUE(c.copyFromDevice(cbytes.data(), dc, cbytes.size()).ok());
    out.push_back(cbytes);
  };
  std::vector<std::vector<uint8_t>> whole, paced;
  both(*lc, whole);
  both(*be, paced);
  ASSERT_EQ(whole.size(), 2u);
  ASSERT_EQ(paced.size(), 2u);
  EXPECT_TRUE(whole[0] == paced[0]) << "block_sum_i32 differs when paced";
  EXPECT_TRUE(whole[1] == paced[1]) << "sgemm_tiled differs when paced";
  // The reduction is also right.
  int32_t first = 0;
  for (int i = 0; i < 256; ++i)
    first += ints[i];
  int32_t got;
  std::memcpy(&got, paced[0].data(), 4);
  EXPECT_EQ(got, first);

  // The ZLUDA suite as the paced tenant.
  if (access(WOOLY_ZLUDA_DIR "/expected.json", R_OK) == 0)
    expectZludaSameThroughServer(dir, endpoint,
                                 {"WOOLY_TENANT=be", "WOOLY_TOKEN=b"}, "");
  stop = true;
  lcThread.join();
  EXPECT_GT(lcLaunches.load(), 0);

  std::string l = log();
  EXPECT_NE(l.find("block_sum_i32 of k ready in"), std::string::npos) << l;
  EXPECT_NE(l.find("compiled, sliced"), std::string::npos) << l;
  std::string text = fetchMetrics();
  EXPECT_NE(text.find("wooly_scheduler_info{policy=\"wooly\"} 1"),
            std::string::npos)
      << text;
  EXPECT_GE(metric(text, "wooly_tenant_weight{tenant=\"be\"}"), 1.0) << text;
  // The only best-effort tenant: all of its class's share.
  EXPECT_EQ(metric(text, "wooly_tenant_weight_share{tenant=\"be\"}"), 1.0)
      << text;
  EXPECT_GE(metric(text, "wooly_tenant_starvation_ratio{tenant=\"be\"}"), 0.0)
      << text;
  // The latency-critical tenant's launches stopped best-effort slices.
  EXPECT_GT(metric(text, "wooly_tenant_preemptions_total{tenant=\"be\"}"), 0.0)
      << text;
  EXPECT_EQ(metric(text, "wooly_tenant_preemptions_total{tenant=\"lc\"}"), 0.0)
      << text;
  EXPECT_GT(metric(text, "wooly_tenant_queue_delay_seconds_count{tenant="
                         "\"lc\"}"),
            0.0)
      << text;

  // Stop the server: it writes the trace, with the paced tenant's slices.
  lc.reset();
  be.reset();
  kill(pid, SIGTERM);
  EXPECT_EQ(waitExit(pid), 0) << log();
  pid = -1;
  std::string traceText = readFile(tracePath);
  EXPECT_NE(traceText.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(traceText.find("be (best-effort)"), std::string::npos);
  EXPECT_NE(traceText.find("\"slice\":\""), std::string::npos)
      << "no sliced dispatch in the trace";
  EXPECT_NE(traceText.find("\"name\":\"block_sum_i32\""), std::string::npos);
}

namespace {
// Three modules that each define a device function `helper` and a shared
// array `tile` (their names clash when merged), and a long kernel.
const char *kCoalesceA = R"(
.version 8.0
.target sm_80
.address_size 64
.shared .align 4 .b32 tile[64];
.func (.param .b32 r) helper(.param .b32 x)
{
  .reg .b32 %a;
  ld.param.b32 %a, [x];
  add.u32 %a, %a, 1;
  st.param.b32 [r], %a;
  ret;
}
// out[i] = (in[i ^ 1] + 1) * k, through shared memory and a barrier.
.visible .entry scale(.param .u64 out, .param .u64 in, .param .u32 k)
{
  .reg .b32 %r<10>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in];
  ld.param.u32 %r1, [k];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mad.lo.u32 %r5, %r3, %r4, %r2;
  mul.wide.u32 %rd3, %r5, 4;
  add.u64 %rd4, %rd2, %rd3;
  ld.global.u32 %r6, [%rd4];
  {
    .param .b32 p0;
    st.param.b32 [p0], %r6;
    .param .b32 r0;
    call.uni (r0), helper, (p0);
    ld.param.b32 %r7, [r0];
  }
  mul.lo.u32 %r7, %r7, %r1;
  mov.u32 %r8, tile;
  shl.b32 %r9, %r2, 2;
  add.u32 %r9, %r8, %r9;
  st.shared.u32 [%r9], %r7;
  bar.sync 0;
  xor.b32 %r9, %r2, 1;
  shl.b32 %r9, %r9, 2;
  add.u32 %r9, %r8, %r9;
  ld.shared.u32 %r7, [%r9];
  add.u64 %rd5, %rd1, %rd3;
  st.global.u32 [%rd5], %r7;
  ret;
}
)";
const char *kCoalesceB = R"(
.version 8.0
.target sm_80
.address_size 64
.shared .align 4 .b32 tile[64];
.func (.param .b32 r) helper(.param .b32 x)
{
  .reg .b32 %a;
  ld.param.b32 %a, [x];
  mul.lo.u32 %a, %a, %a;
  st.param.b32 [r], %a;
  ret;
}
// out[i] = in[i] * in[i] + v.
.visible .entry square(.param .u64 out, .param .u64 in, .param .u32 v)
{
  .reg .b32 %r<10>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in];
  ld.param.u32 %r1, [v];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mad.lo.u32 %r5, %r3, %r4, %r2;
  mul.wide.u32 %rd3, %r5, 4;
  add.u64 %rd4, %rd2, %rd3;
  ld.global.u32 %r6, [%rd4];
  mov.u32 %r8, tile;
  shl.b32 %r9, %r2, 2;
  add.u32 %r9, %r8, %r9;
  st.shared.u32 [%r9], %r6;
  ld.shared.u32 %r6, [%r9];
  {
    .param .b32 p0;
    st.param.b32 [p0], %r6;
    .param .b32 r0;
    call.uni (r0), helper, (p0);
    ld.param.b32 %r7, [r0];
  }
  add.u32 %r7, %r7, %r1;
  add.u64 %rd5, %rd1, %rd3;
  st.global.u32 [%rd5], %r7;
  ret;
}
)";
const char *kCoalesceC = R"(
.version 8.0
.target sm_80
.address_size 64
// out[i] = v + i (out may point nowhere: the store faults).
.visible .entry poke(.param .u64 out, .param .u32 v)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [v];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mad.lo.u32 %r5, %r3, %r4, %r2;
  add.u32 %r1, %r1, %r5;
  mul.wide.u32 %rd2, %r5, 4;
  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  ret;
}
.visible .entry spin(.param .u32 iters, .param .u64 out)
{
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
  mad.lo.u32 %r6, %r6, %r6, 1013904223;
  add.u32 %r7, %r7, 1;
  bra LOOP;
DONE:
  mul.wide.u32 %rd2, %r5, 4;
  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r6;
  ret;
}
)";

/// A tenant with one small kernel of its own module, its buffers and the
/// results it expects.
struct SmallTenant {
  std::unique_ptr<Client> c;
  Module m;
  std::string kernel;
  uint64_t in = 0, out = 0;
  std::vector<uint32_t> input, expected;
  std::vector<uint8_t> params;
  static constexpr uint32_t kThreads = 64, kBlocks = 2, kN = 128;

  /// Launches and sends the launch at once (the client batches
  /// asynchronous calls until a synchronous one otherwise).
  bool launch() {
    return c->launch(m.handle, kernel, {kBlocks}, {kThreads}, 0, params.data(),
                     params.size())
               .ok() &&
           c->flush().ok();
  }
  /// Synchronises and compares; "" when the results are right.
  std::string check() {
    Status s = c->deviceSynchronize();
    if (!s.ok())
      return kernel + ": " + s.str();
    std::vector<uint32_t> got(kN);
    if (!(s = c->copyFromDevice(got.data(), out, kN * 4)).ok())
      return kernel + ": " + s.str();
    for (uint32_t i = 0; i < kN; ++i)
      if (got[i] != expected[i])
        return kernel + ": out[" + std::to_string(i) +
               "] = " + std::to_string(got[i]) + ", expected " +
               std::to_string(expected[i]);
    // Cleared before the next launch, so that a launch that did not run
    // cannot pass.
    if (!(s = c->memset(out, 0, kN * 4)).ok() ||
        !(s = c->deviceSynchronize()).ok())
      return kernel + ": " + s.str();
    return "";
  }
};
} // namespace

// Small launches of different tenants waiting together run as one launch
// of a kernel merged from their modules (wooly-coalesce), with the results
// of running alone; a fault in one part reaches its tenant only.
TEST_F(ServerTest, CoalescedLaunchesAreBitIdenticalAndFaultsStayTheirTenants) {
  // One executor: launches queue while the long kernel runs.
  std::string tracePath = dir + "/trace.json";
  startServer({"--executors=1", "--trace=" + tracePath});
  struct Spec {
    const char *module, *kernel;
    uint32_t scalar;
  };
  // Two tenants run the same kernel of the same module.
  std::vector<Spec> specs = {{kCoalesceA, "scale", 3},
                             {kCoalesceA, "scale", 5},
                             {kCoalesceB, "square", 7},
                             {kCoalesceC, "poke", 11}};
  std::vector<SmallTenant> ts(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    SmallTenant &t = ts[i];
    t.c = connect("small" + std::to_string(i));
    ASSERT_TRUE(t.c);
    ASSERT_TRUE(t.c->loadModule(specs[i].module, "m", t.m).ok());
    t.kernel = specs[i].kernel;
    const KernelLayout *k = t.m.findKernel(t.kernel);
    ASSERT_NE(k, nullptr);
    ASSERT_TRUE(t.c->malloc(SmallTenant::kN * 4, t.in).ok());
    ASSERT_TRUE(t.c->malloc(SmallTenant::kN * 4, t.out).ok());
    t.input.resize(SmallTenant::kN);
    for (uint32_t j = 0; j < SmallTenant::kN; ++j)
      t.input[j] = j * 2654435761u + uint32_t(i);
    ASSERT_TRUE(
        t.c->copyToDevice(t.in, t.input.data(), SmallTenant::kN * 4).ok());
    uint32_t v = specs[i].scalar;
    t.expected.resize(SmallTenant::kN);
    for (uint32_t j = 0; j < SmallTenant::kN; ++j)
      t.expected[j] = t.kernel == "scale"    ? (t.input[j ^ 1] + 1) * v
                      : t.kernel == "square" ? t.input[j] * t.input[j] + v
                                             : v + j;
    Params p(*k);
    p.add(t.out);
    if (t.kernel != "poke")
      p.add(t.in);
    p.add(v);
    t.params = p.bytes;
    // Alone first: the scheduler fuses only kernels it has measured.
    ASSERT_TRUE(t.launch());
    ASSERT_EQ(t.check(), "");
  }
  auto blocker = connect("blocker");
  ASSERT_TRUE(blocker);
  Module bm;
  ASSERT_TRUE(blocker->loadModule(kCoalesceC, "spin", bm).ok());
  uint64_t spinOut;
  ASSERT_TRUE(blocker->malloc(64 * 4, spinOut).ok());
  Params sp(*bm.findKernel("spin"));
  sp.add(uint32_t(20000000)).add(spinOut);
  DeviceProperties props;
  auto round = [&](const std::vector<size_t> &who) {
    // The long kernel holds the only executor (the reply to getDevice
    // comes after the server took the launch), so the small launches
    // queue and leave together.
    EXPECT_TRUE(blocker
                    ->launch(bm.handle, "spin", {1}, {1}, 0, sp.bytes.data(),
                             sp.bytes.size())
                    .ok());
    EXPECT_TRUE(blocker->getDevice(props).ok());
    // Each tenant's launch reaches the server before anyone synchronises.
    for (size_t i : who)
      EXPECT_TRUE(ts[i].launch());
    for (size_t i : who)
      EXPECT_TRUE(ts[i].c->getDevice(props).ok());
  };

  // Until a fused launch ran (the first rounds run the launches one by
  // one while the fused kernel compiles): every result exact each round.
  double fused = 0;
  std::string text;
  for (int r = 0; r < 40 && fused < 2; ++r) {
    round({0, 1, 2, 3});
    for (SmallTenant &t : ts)
      ASSERT_EQ(t.check(), "") << "round " << r;
    ASSERT_TRUE(blocker->deviceSynchronize().ok());
    text = fetchMetrics();
    fused = metric(text, "wooly_coalesced_launches_total");
  }
  ASSERT_GE(fused, 2) << text << log();
  EXPECT_NE(log().find("coalesced kernel of"), std::string::npos) << log();

  // A fault in one part: tenant 3 writes through a wild pointer while
  // fused with tenant 0 (until a round fuses both).
  Params bad(*ts[3].m.findKernel("poke"));
  bad.add(uint64_t(16)).add(uint32_t(1));
  ts[3].params = bad.bytes;
  bool faultFused = false;
  for (int r = 0; r < 20 && !faultFused; ++r) {
    double before = metric(fetchMetrics(), "wooly_coalesced_dispatches_total");
    round({0, 3});
    ASSERT_EQ(ts[0].check(), "") << "round " << r;
    Status s = ts[3].c->deviceSynchronize();
    ASSERT_EQ(s.code, Code::IllegalAddress) << s.str();
    EXPECT_TRUE(s.sticky);
    EXPECT_NE(s.message.find("poke"), std::string::npos) << s.message;
    ASSERT_TRUE(blocker->deviceSynchronize().ok());
    faultFused =
        metric(fetchMetrics(), "wooly_coalesced_dispatches_total") > before;
    if (faultFused)
      EXPECT_NE(s.message.find("launch of kernel 'poke', run coalesced with 1 "
                               "other launch (its blocks from "),
                std::string::npos)
          << s.message;
    // The faulted session is done for; the next round uses a new one,
    // whose kernel is made ready first (a launch into its own memory), so
    // that its launch in the round is queued as soon as it arrives.
    if (!faultFused) {
      ts[3].c = connect("small3");
      ASSERT_TRUE(ts[3].c->loadModule(kCoalesceC, "m", ts[3].m).ok());
      uint64_t scratch;
      ASSERT_TRUE(ts[3].c->malloc(SmallTenant::kN * 4, scratch).ok());
      Params warm(*ts[3].m.findKernel("poke"));
      warm.add(scratch).add(uint32_t(1));
      ASSERT_TRUE(ts[3]
                      .c
                      ->launch(ts[3].m.handle, "poke", {SmallTenant::kBlocks},
                               {SmallTenant::kThreads}, 0, warm.bytes.data(),
                               warm.bytes.size())
                      .ok());
      ASSERT_TRUE(ts[3].c->deviceSynchronize().ok());
    }
  }
  EXPECT_TRUE(faultFused) << log();
  // The others go on.
  round({0, 1, 2});
  for (size_t i : {0, 1, 2})
    EXPECT_EQ(ts[i].check(), "");
}

// The watchdog: kernels that never end (a plain loop, and a loop with a
// barrier, run as fibers) are stopped past --kernel-timeout-ms; their tenant
// gets a sticky error naming the watchdog, another tenant's work meanwhile
// is unaffected, and the server goes on serving.
TEST_F(ServerTest, WatchdogStopsRunawayKernels) {
  startServer({"--kernel-timeout-ms=300"});
  const char *kForever = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry forever(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 0;
LOOP:
  add.u32 %r1, %r1, 1;
  st.volatile.global.u32 [%rd1], %r1;
  bra.uni LOOP;
}
.visible .entry foreverSync(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 0;
LOOP:
  add.u32 %r1, %r1, 1;
  bar.sync 0;
  bra.uni LOOP;
}
)";
  auto good = connect("good");
  ASSERT_TRUE(good);
  VecAdd work(*good);

  for (const char *kernel : {"forever", "foreverSync"}) {
    SCOPED_TRACE(kernel);
    auto bad = connect("runaway");
    ASSERT_TRUE(bad);
    Module mb;
    ASSERT_TRUE(bad->loadModule(kForever, "forever", mb).ok());
    uint64_t out;
    ASSERT_TRUE(bad->malloc(64, out).ok());
    Params p(*mb.findKernel(kernel));
    p.add(out);
    ASSERT_TRUE(bad->launch(mb.handle, kernel, {2}, {32}, 0, p.bytes.data(),
                            p.bytes.size())
                    .ok());
    ASSERT_TRUE(bad->flush().ok());
    // The other tenant's work runs meanwhile, exactly.
    for (int r = 0; r < 5; ++r)
      ASSERT_EQ(work.run(), "") << "round " << r;
    Status s = bad->deviceSynchronize();
    EXPECT_EQ(s.code, Code::LaunchTimeout) << s.str();
    EXPECT_TRUE(s.sticky);
    EXPECT_NE(s.message.find(std::string("kernel '") + kernel +
                             "' ran past its time budget of 300 ms and was "
                             "stopped (the server's watchdog"),
              std::string::npos)
        << s.message;
  }
  EXPECT_NE(log().find("watchdog: dispatch"), std::string::npos) << log();

  // A module with an indirect call cannot be watched (its kernels run as
  // written): a long kernel of it runs to its end, past the budget, and is
  // not reported stopped.
  std::string unwatchable = std::string(kCountModule) + R"(
.visible .entry indirect(.param .u64 fp)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [fp];
  {
    proto: .callprototype ()_ ();
    call %rd1, (), proto;
  }
  ret;
}
)";
  auto plain = connect("plain");
  ASSERT_TRUE(plain);
  Module mu;
  ASSERT_TRUE(plain->loadModule(unwatchable, "unwatchable", mu).ok());
  uint64_t counter;
  ASSERT_TRUE(plain->malloc(4, counter).ok());
  Params pc(*mu.findKernel("count"));
  uint32_t n = 0xf0000000u;
  pc.add(counter).add(n);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(plain
                  ->launch(mu.handle, "count", {1}, {1}, 0, pc.bytes.data(),
                           pc.bytes.size())
                  .ok());
  uint32_t ran = 0;
  Status st = plain->copyFromDevice(&ran, counter, 4);
  ASSERT_TRUE(st.ok()) << st.str();
  EXPECT_EQ(ran, n);
  // (It ran longer than the budget on this machine, or the check above
  // says nothing about the watchdog: report which.)
  std::printf("unwatchable kernel ran %.0f ms (budget 300 ms)\n",
              std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - t0)
                  .count());

  // The server goes on: a new session of the same tenant works.
  auto again = connect("runaway");
  ASSERT_TRUE(again);
  uint64_t buf;
  EXPECT_TRUE(again->malloc(64, buf).ok());
}

// CURVE on tcp: a client that knows the server's public key works; one
// without it, or with another key, gets no session. The ipc socket is its
// owner's alone.
TEST_F(ServerTest, CurveGuardsTcpAndIpcIsOwnerOnly) {
  std::string prefix = dir + "/server";
  int rc = waitExit(
      spawn({WOOLY_BIN_DIR "/wooly-serve", "--gen-curve-keys=" + prefix},
            dir + "/gen.log"));
  ASSERT_EQ(rc, 0) << readFile(dir + "/gen.log");
  struct stat st;
  ASSERT_EQ(::stat((prefix + ".key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u) << "the secret key is its owner's alone";
  std::string pub = readFile(prefix + ".pub");
  ASSERT_GE(pub.size(), 40u);
  // A second pair: a key that is not the server's.
  ASSERT_EQ(waitExit(spawn({WOOLY_BIN_DIR "/wooly-serve",
                            "--gen-curve-keys=" + dir + "/other"},
                           dir + "/gen2.log")),
            0);
  std::string other = readFile(dir + "/other.pub");

  std::string tcp = "tcp://127.0.0.1:" + std::to_string(freePort());
  startServer({"--listen=" + tcp, "--curve-keys=" + prefix + ".key"});
  EXPECT_NE(log().find("CURVE on tcp endpoints"), std::string::npos) << log();
  ASSERT_EQ(::stat(endpoint.substr(6).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u) << "the ipc socket is its owner's alone";

  auto over = [&](const std::string &key, Status &s) {
    Options o;
    o.server = tcp;
    o.tenant = "remote";
    o.serverKey = key;
    o.connectTimeoutMs = 1500;
    return Client::connect(o, s);
  };
  Status s;
  auto good = over(pub, s);
  ASSERT_TRUE(good) << s.str() << log();
  uint64_t addr;
  std::vector<uint8_t> in(4096, 0x5a), out(4096);
  ASSERT_TRUE(good->malloc(in.size(), addr).ok());
  ASSERT_TRUE(good->copyToDevice(addr, in.data(), in.size()).ok());
  ASSERT_TRUE(good->copyFromDevice(out.data(), addr, out.size()).ok());
  EXPECT_EQ(in, out);

  EXPECT_FALSE(over("", s)) << "a client without the server key";
  EXPECT_EQ(s.code, Code::Unavailable) << s.str();
  EXPECT_FALSE(over(other, s)) << "a client with another key";
  EXPECT_EQ(s.code, Code::Unavailable) << s.str();
  EXPECT_FALSE(over("short", s));
  EXPECT_EQ(s.code, Code::InvalidValue) << s.str();
  // The ipc endpoint needs no key.
  auto local = connect("local");
  ASSERT_TRUE(local);
  EXPECT_TRUE(local->malloc(64, addr).ok());
}

// Per-tenant limits (the tenants file's `limits`, else the server's) and
// backpressure: a session that queues more operations or copy bytes than
// it may gets LIMIT_EXCEEDED for those calls, and only it; a tenant without
// limits of its own gets the server's (--max-outstanding here).
TEST_F(ServerTest, SessionLimitsAndBackpressure) {
  std::ofstream(dir + "/tenants.yaml")
      << "tenants:\n"
         "  - name: tight\n"
         "    token: t\n"
         "    limits: {modules: 1, streams: 2, events: 1, allocations: 3,\n"
         "             outstanding: 4, outstanding_bytes: 64KiB}\n"
         "  - name: roomy\n"
         "    token: r\n";
  startServer({"--tenants=" + dir + "/tenants.yaml", "--max-outstanding=1000",
               "--kernel-timeout-ms=0"});
  auto tight = connect("tight", "t");
  auto roomy = connect("roomy", "r");
  ASSERT_TRUE(tight && roomy);

  Module m1, m2;
  ASSERT_TRUE(
      tight->loadModule(corpus("elementwise.sm_90.ptx"), "ew", m1).ok());
  Status s = tight->loadModule(corpus("control.sm_90.ptx"), "ctl", m2);
  EXPECT_EQ(s.code, Code::LimitExceeded) << s.str();
  EXPECT_NE(s.message.find("at most 1 modules"), std::string::npos)
      << s.message;
  uint64_t st;
  ASSERT_TRUE(tight->streamCreate(st).ok()); // the default stream + 1
  EXPECT_EQ(tight->streamCreate(st).code, Code::LimitExceeded);
  uint64_t ev;
  ASSERT_TRUE(tight->eventCreate(ev).ok());
  EXPECT_EQ(tight->eventCreate(ev).code, Code::LimitExceeded);
  uint64_t a[4];
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(tight->malloc(4096, a[i]).ok());
  s = tight->malloc(4096, a[3]);
  EXPECT_EQ(s.code, Code::LimitExceeded) << s.str();

  // Outstanding operations: a slow kernel holds the stream; 4 fit, the
  // 5th asynchronous call fails and is reported at the next synchronise.
  auto flood = connect("roomy", "r");
  ASSERT_TRUE(flood);
  // The tight tenant may load no second module: use a fresh session of it.
  tight.reset();
  tight = connect("tight", "t");
  ASSERT_TRUE(tight);
  // Queues `launches` launches of count(out, n) (each accepted for
  // sending) and returns `out`.
  auto queueCounts = [](Client &c, uint32_t n, int launches) {
    Module m;
    EXPECT_TRUE(c.loadModule(kCountModule, "count", m).ok());
    uint64_t out = 0;
    EXPECT_TRUE(c.malloc(64, out).ok());
    Params p(*m.findKernel("count"));
    p.add(out).add(n);
    for (int i = 0; i < launches; ++i)
      EXPECT_TRUE(c.launch(m.handle, "count", {1}, {1}, 0, p.bytes.data(),
                           p.bytes.size())
                      .ok());
    return out;
  };
  queueCounts(*tight, 20000000, 6);
  s = tight->deviceSynchronize();
  EXPECT_EQ(s.code, Code::LimitExceeded) << s.str();
  EXPECT_NE(s.message.find("at most 4 operations outstanding"),
            std::string::npos)
      << s.message;
  EXPECT_FALSE(s.sticky);
  // Not sticky: the session goes on.
  ASSERT_TRUE(tight->deviceSynchronize().ok());

  // Outstanding bytes: one copy larger than 64 KiB is refused.
  uint64_t big;
  ASSERT_TRUE(tight->malloc(1 << 20, big).ok());
  std::vector<char> bytes(128 << 10, 1);
  s = tight->copyToDevice(big, bytes.data(), bytes.size());
  EXPECT_EQ(s.code, Code::LimitExceeded) << s.str();
  EXPECT_TRUE(tight->copyToDevice(big, bytes.data(), 32 << 10).ok());

  // A graph of 5 launches is refused whole, not run in part.
  {
    auto g = connect("tight", "t");
    ASSERT_TRUE(g);
    Module m;
    ASSERT_TRUE(g->loadModule(kCountModule, "count", m).ok());
    uint64_t gout;
    ASSERT_TRUE(g->malloc(64, gout).ok());
    Params p(*m.findKernel("count"));
    p.add(gout).add(uint32_t(1));
    ASSERT_TRUE(g->beginGraph().ok());
    for (int i = 0; i < 5; ++i)
      ASSERT_TRUE(g->launch(m.handle, "count", {1}, {1}, 0, p.bytes.data(),
                            p.bytes.size())
                      .ok());
    uint64_t graph = 0;
    ASSERT_TRUE(g->endGraph(graph).ok());
    ASSERT_TRUE(g->graphLaunch(graph).ok());
    s = g->deviceSynchronize();
    EXPECT_EQ(s.code, Code::LimitExceeded) << s.str();
    EXPECT_NE(s.message.find("a graph of 5 calls"), std::string::npos)
        << s.message;
    uint32_t v = 7;
    ASSERT_TRUE(g->copyFromDevice(&v, gout, 4).ok());
    EXPECT_EQ(v, 0u) << "part of the graph ran";
  }

  // The other tenant is not limited by any of this: the server's own
  // limit (1000) lets it queue 200 launches.
  uint64_t rout = queueCounts(*flood, 10, 200);
  EXPECT_TRUE(flood->deviceSynchronize().ok());
  uint32_t v = 0;
  ASSERT_TRUE(flood->copyFromDevice(&v, rout, 4).ok());
  EXPECT_EQ(v, 10u);
}

// A client that sends and never reads its replies (a stalled reader) does
// not slow the others down, and the server holds a bounded number of its
// replies: at the ROUTER's send high-water mark its session is closed. The
// server's resident memory stays far below what the replies add up to
// (measured: 3.5 GiB before the session was closed at the mark, 153 MiB
// after).
TEST_F(ServerTest, StalledReaderBlocksNobody) {
  startServer();
  RawClient stalled(endpoint, /*receiveQueue=*/1);
  stalled.send({request(1, 1, 10, field(1, std::string("stalled")))});
  ASSERT_FALSE(stalled.receive().empty());
  stalled.send({request(1, 2, 17, field(1, 1 << 20))});
  std::string r = stalled.receive();
  uint64_t addr = 0;
  {
    size_t at = r.find(char(15 << 3 | 2)); // Reply.allocated
    ASSERT_NE(at, std::string::npos) << r;
    size_t p = at + 3;
    for (unsigned shift = 0; p < r.size(); shift += 7) {
      uint8_t b = uint8_t(r[p++]);
      addr |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        break;
    }
  }
  // 4000 reads of 1 MiB each (4 GiB of replies), never received.
  for (uint64_t i = 0; i < 4000; ++i)
    stalled.send({request(1, 3 + i, 21, field(1, addr) + field(2, 1 << 20))});

  auto good = connect("good");
  ASSERT_TRUE(good);
  uint64_t a;
  ASSERT_TRUE(good->malloc(64, a).ok());
  double worstMs = 0;
  for (int i = 0; i < 50; ++i) {
    uint32_t v = 1000 + i, w = 0;
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(good->copyToDevice(a, &v, 4).ok());
    ASSERT_TRUE(good->copyFromDevice(&w, a, 4).ok());
    worstMs = std::max(worstMs, std::chrono::duration<double, std::milli>(
                                    std::chrono::steady_clock::now() - t0)
                                    .count());
    EXPECT_EQ(w, v);
  }
  // Ping the server until it has read everything the stalled client sent
  // (its replies then are queued or dropped), and measure its memory.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_TRUE(good->ping().ok());
  std::string status = readFile("/proc/" + std::to_string(pid) + "/status");
  size_t at = status.find("VmRSS:");
  ASSERT_NE(at, std::string::npos);
  double rssMiB = std::atof(status.c_str() + at + 6) / 1024;
  std::printf("good client: worst round trip %.1f ms; server RSS %.0f MiB "
              "after 4 GiB of unread replies\n",
              worstMs, rssMiB);
  EXPECT_LT(worstMs, 2000);
  EXPECT_LT(rssMiB, 1024) << "the server keeps a stalled client's replies";
  EXPECT_NE(log().find("the client stopped reading its replies"),
            std::string::npos)
      << log();
}

// The attack suite: a tenant that knows (or guesses) the addresses of
// another tenant's buffer and module variable tries to read, write, print
// and bump them through copies, kernel parameters, addresses computed from
// its own buffer (adjacent memory), and pointers smuggled as integers. Every
// attempt fails; the victim's bytes are unchanged, none of them reaches the
// attacker, and no error message describes the victim's memory.
TEST_F(ServerTest, AttackerReachesNoOtherTenantsMemory) {
  startServer({"--coalesce=false"});
  const char *kVictim = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .global .align 4 .b32 secretVar[64];
.visible .entry touch(.param .u64 p)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  ret;
}
)";
  auto victim = connect("victim");
  ASSERT_TRUE(victim);
  Module vm;
  ASSERT_TRUE(victim->loadModule(kVictim, "victim", vm).ok());
  std::vector<uint32_t> secret(64);
  for (uint32_t i = 0; i < 64; ++i)
    secret[i] = 0x5EC00000u + i;
  uint64_t vbuf;
  ASSERT_TRUE(victim->malloc(256, vbuf).ok());
  ASSERT_TRUE(victim->copyToDevice(vbuf, secret.data(), 256).ok());
  ASSERT_TRUE(
      victim->copyToSymbol(vm.handle, "secretVar", secret.data(), 256).ok());
  uint64_t vvar = 0, vvarBytes = 0;
  ASSERT_TRUE(victim->getSymbol(vm.handle, "secretVar", vvar, vvarBytes).ok());
  // The victim's launch compiles and loads the module (its variable).
  Params vp(*vm.findKernel("touch"));
  vp.add(vbuf);
  ASSERT_TRUE(victim
                  ->launch(vm.handle, "touch", {1}, {1}, 0, vp.bytes.data(),
                           vp.bytes.size())
                  .ok());
  ASSERT_TRUE(victim->deviceSynchronize().ok());
  std::string attackPtx = readFile(std::string(WOOLY_SOURCE_DIR) +
                                   "/unittests/Server/Inputs/attack.ptx");
  ASSERT_FALSE(attackPtx.empty());

  auto noSecret = [&](const std::vector<uint32_t> &words) {
    for (uint32_t w : words)
      if ((w & 0xFFF00000u) == 0x5EC00000u)
        return false;
    return true;
  };
  char victimBase[32];
  std::snprintf(victimBase, sizeof victimBase, "%llx",
                static_cast<unsigned long long>(vbuf));

  // Each attack in a session of its own (a fault is sticky).
  std::string printed;
  auto attack = [&](const char *what, auto &&run) {
    SCOPED_TRACE(what);
    auto a = connect("mallory", "", nullptr, &printed);
    ASSERT_TRUE(a);
    Module am;
    ASSERT_TRUE(a->loadModule(attackPtx, "attack", am).ok());
    uint64_t own;
    ASSERT_TRUE(a->malloc(256, own).ok());
    Status s = run(*a, am, own);
    // printf of an unreachable string prints "(bad string)" and goes on.
    if (std::string(what) != "printf")
      EXPECT_FALSE(s.ok()) << what << " was not refused";
    // Nothing of the victim's reached the attacker's buffer (where the
    // session can still read it: a kernel fault is sticky).
    std::vector<uint32_t> got(64, 0);
    Status r = a->copyFromDevice(got.data(), own, 256);
    if (r.ok())
      EXPECT_TRUE(noSecret(got)) << what << " leaked the secret";
    // The error names the address tried, never the victim's allocation.
    EXPECT_EQ(s.message.find(std::string("allocation at ") + victimBase),
              std::string::npos)
        << "the error describes the victim's allocation: " << s.message;
    EXPECT_EQ(s.message.find("secretVar"), std::string::npos) << s.message;
  };
  auto launch = [](Client &a, Module &am, const char *kernel, Params &p) {
    Status s = a.launch(am.handle, kernel, {1}, {64}, 0, p.bytes.data(),
                        p.bytes.size());
    if (!s.ok())
      return s;
    return a.deviceSynchronize();
  };

  // Copies to, from and between the victim's addresses.
  for (uint64_t target : {vbuf, vvar, vbuf + 128, vbuf - 256}) {
    attack("copy from", [&](Client &a, Module &, uint64_t) {
      std::vector<uint32_t> got(16);
      Status s = a.copyFromDevice(got.data(), target, 64);
      EXPECT_TRUE(noSecret(got));
      return s;
    });
    attack("copy to", [&](Client &a, Module &, uint64_t) {
      uint32_t x = 0xDEAD;
      return a.copyToDevice(target, &x, 4);
    });
    attack("device-to-device", [&](Client &a, Module &, uint64_t own) {
      Status s = a.copyDeviceToDevice(own, target, 64);
      return s.ok() ? a.deviceSynchronize() : s;
    });
    attack("memset", [&](Client &a, Module &, uint64_t) {
      Status s = a.memset(target, 0, 64);
      return s.ok() ? a.deviceSynchronize() : s;
    });
  }
  // Kernels.
  for (uint64_t target : {vbuf, vvar}) {
    attack("pointer parameter", [&](Client &a, Module &am, uint64_t own) {
      Params p(*am.findKernel("steal"));
      p.add(target).add(own);
      return launch(a, am, "steal", p);
    });
    attack("adjacent address", [&](Client &a, Module &am, uint64_t own) {
      Params p(*am.findKernel("stealAt"));
      p.add(own).add(int64_t(target - own)).add(own);
      return launch(a, am, "stealAt", p);
    });
    attack("smuggled integer", [&](Client &a, Module &am, uint64_t own) {
      uint64_t key = 0x0123456789abcdefull;
      Params p(*am.findKernel("stealXor"));
      p.add(uint64_t(target ^ key)).add(key).add(own);
      return launch(a, am, "stealXor", p);
    });
    attack("write", [&](Client &a, Module &am, uint64_t) {
      Params p(*am.findKernel("scribble"));
      p.add(target);
      return launch(a, am, "scribble", p);
    });
    attack("atomic", [&](Client &a, Module &am, uint64_t) {
      Params p(*am.findKernel("bump"));
      p.add(target);
      return launch(a, am, "bump", p);
    });
    attack("printf", [&](Client &a, Module &am, uint64_t) {
      Params p(*am.findKernel("leak"));
      p.add(target);
      Status s = launch(a, am, "leak", p);
      // The secret's bytes (little-endian words 0x5EC000xx) never print.
      EXPECT_EQ(printed.find("\xC0\x5E"), std::string::npos);
      EXPECT_NE(printed.find("(bad string)"), std::string::npos) << printed;
      return s;
    });
  }

  // The victim's bytes are unchanged, and it works on.
  std::vector<uint32_t> now(64);
  ASSERT_TRUE(victim->copyFromDevice(now.data(), vbuf, 256).ok());
  EXPECT_EQ(now, secret);
  ASSERT_TRUE(
      victim->copyFromSymbol(now.data(), vm.handle, "secretVar", 256).ok());
  EXPECT_EQ(now, secret);
  // The attacker's own memory is its own: a kernel may use it.
  auto a = connect("mallory");
  ASSERT_TRUE(a);
  Module am;
  ASSERT_TRUE(a->loadModule(attackPtx, "attack", am).ok());
  uint64_t src, dst;
  ASSERT_TRUE(a->malloc(256, src).ok());
  ASSERT_TRUE(a->malloc(256, dst).ok());
  std::vector<uint32_t> mine(64, 7), back(64);
  ASSERT_TRUE(a->copyToDevice(src, mine.data(), 256).ok());
  Params p(*am.findKernel("steal"));
  p.add(src).add(dst);
  ASSERT_TRUE(launch(*a, am, "steal", p).ok());
  ASSERT_TRUE(a->copyFromDevice(back.data(), dst, 256).ok());
  EXPECT_EQ(back, mine);
}

// What a kernel leaves in its .local memory (on the CPU backend: the host
// stack) never reaches a kernel of another tenant that reads its own
// uninitialised .local memory, in direct and in fiber mode: the stacks are
// scrubbed when a worker turns to another memory domain.
TEST_F(ServerTest, StaleLocalMemoryIsNotShared) {
  startServer({"--executors=1", "--coalesce=false"});
  const char *kLocals = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry fill(.param .u32 sync)
{
  .local .align 4 .b8 buf[1024];
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<3>;
  ld.param.u32 %r3, [sync];
  setp.ne.u32 %p2, %r3, 0;
  @%p2 bar.sync 0;
  mov.u32 %r1, 0;
  mov.u64 %rd1, buf;
LOOP:
  add.u32 %r2, %r1, 0x5EC00000;
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd2, %rd1, %rd2;
  st.local.u32 [%rd2], %r2;
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, 256;
  @%p1 bra LOOP;
  ret;
}
.visible .entry peek(.param .u64 out, .param .u32 sync)
{
  .local .align 4 .b8 buf[1024];
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd3, [out];
  ld.param.u32 %r3, [sync];
  setp.ne.u32 %p2, %r3, 0;
  @%p2 bar.sync 0;
  mov.u32 %r1, 0;
  mov.u64 %rd1, buf;
LOOP:
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd4, %rd1, %rd2;
  ld.local.u32 %r2, [%rd4];
  add.u64 %rd4, %rd3, %rd2;
  st.global.u32 [%rd4], %r2;
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, 256;
  @%p1 bra LOOP;
  ret;
}
)";
  auto victim = connect("victim");
  auto spy = connect("spy");
  ASSERT_TRUE(victim && spy);
  Module vm, sm;
  ASSERT_TRUE(victim->loadModule(kLocals, "locals", vm).ok());
  ASSERT_TRUE(spy->loadModule(kLocals, "locals", sm).ok());
  uint64_t out;
  ASSERT_TRUE(spy->malloc(1024, out).ok());
  for (uint32_t sync : {0u, 1u}) {
    SCOPED_TRACE(sync ? "fiber mode" : "direct mode");
    for (int round = 0; round < 5; ++round) {
      Params f(*vm.findKernel("fill"));
      f.add(sync);
      ASSERT_TRUE(victim
                      ->launch(vm.handle, "fill", {1}, {1}, 0, f.bytes.data(),
                               f.bytes.size())
                      .ok());
      ASSERT_TRUE(victim->deviceSynchronize().ok());
      Params p(*sm.findKernel("peek"));
      p.add(out).add(sync);
      ASSERT_TRUE(spy->launch(sm.handle, "peek", {1}, {1}, 0, p.bytes.data(),
                              p.bytes.size())
                      .ok());
      std::vector<uint32_t> seen(256);
      ASSERT_TRUE(spy->copyFromDevice(seen.data(), out, 1024).ok());
      for (uint32_t v : seen)
        ASSERT_NE(v & 0xFFF00000u, 0x5EC00000u)
            << "the spy read the victim's dead .local memory";
    }
  }
}

// Open mode forgets a tenant once it has nothing left: not while a dead
// session of it still has work in flight (found by the protocol fuzzer
// under ASan: the tenant's state was freed, then the work's completion
// wrote to it; fuzz/regressions/protocol/tenant-retired-while-dead-...).
TEST_F(ServerTest, TenantOutlivesItsDeadSessionsWork) {
  startServer({"--kernel-timeout-ms=0"});
  {
    auto a = connect("x");
    ASSERT_TRUE(a);
    Module m;
    ASSERT_TRUE(a->loadModule(kCountModule, "count", m).ok());
    uint64_t out;
    ASSERT_TRUE(a->malloc(64, out).ok());
    Params p(*m.findKernel("count"));
    p.add(out).add(uint32_t(100000000));
    ASSERT_TRUE(a->launch(m.handle, "count", {1}, {1}, 0, p.bytes.data(),
                          p.bytes.size())
                    .ok());
    ASSERT_TRUE(a->ping().ok()); // the launch reached the server
  }                              // a disconnects while its kernel runs
  {
    auto b = connect("x");
    ASSERT_TRUE(b);
    ASSERT_TRUE(b->ping().ok());
  } // b's session ends at once, before a's work
  // a's kernel ends; the server goes on.
  for (int i = 0; i < 50 && log().find("session 2 closed") == std::string::npos;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_NE(log().find("session 2 closed"), std::string::npos) << log();
  auto c = connect("x");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->ping().ok());
}

/// A module whose kernel `mix(p, n, k)` XORs each of the `n` u32s at `p`
/// with `k`: the result tells whether every word was there, at its place.
const char *kMixModule = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry mix(.param .u64 p, .param .u32 n, .param .u32 k)
{
  .reg .pred %p;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r2, [k];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.u32 %r6, %r3, %r4, %r5;
  setp.ge.u32 %p, %r6, %r1;
  @%p bra DONE;
  mul.wide.u32 %rd2, %r6, 4;
  add.u64 %rd3, %rd1, %rd2;
  ld.global.u32 %r7, [%rd3];
  xor.b32 %r7, %r7, %r2;
  st.global.u32 [%rd3], %r7;
DONE:
  ret;
}
)";

/// The u32 pattern of buffer `b` of tenant `t` at word `i`.
uint32_t memPattern(unsigned t, unsigned b, uint32_t i) {
  uint32_t x = (t * 131 + b * 7 + 1) * 0x9E3779B9u ^ (i * 0x85EBCA6Bu);
  return x ^ (x >> 15);
}

// Six tenants whose quotas (48 MiB each, 288 MiB in all) and allocations
// (20 MiB each, 120 MiB in all) are several times the 64 MiB device: each
// fills its buffers with a known pattern, then they run kernels in turns,
// each tenant idle while the others work. Every byte is verified at the
// end, at the addresses it was written to, and /metrics shows the memory
// that moved out and came back, with the device never over its capacity.
TEST_F(ServerTest, OversubscribedTenantsKeepEveryByte) {
  constexpr unsigned kTenants = 6, kBuffers = 2;
  constexpr uint32_t kWords = (10u << 20) / 4; // 10 MiB buffers
  std::string yaml = "tenants:\n";
  for (unsigned t = 0; t < kTenants; ++t)
    yaml += "  - name: t" + std::to_string(t) +
            "\n    token: \"k\"\n    memory: 48MiB\n";
  std::ofstream(dir + "/tenants.yaml") << yaml;
  startServer({"--device-memory=64MiB", "--tenants=" + dir + "/tenants.yaml"});
  struct Tenant {
    std::unique_ptr<Client> c;
    Module m;
    uint64_t buf[kBuffers] = {};
    uint32_t key = 0; // the XOR of every k applied
  };
  std::vector<Tenant> ts(kTenants);
  for (unsigned t = 0; t < kTenants; ++t) {
    Tenant &x = ts[t];
    x.c = connect("t" + std::to_string(t), "k");
    ASSERT_TRUE(x.c);
    ASSERT_TRUE(x.c->loadModule(kMixModule, "mix", x.m).ok());
    for (unsigned b = 0; b < kBuffers; ++b) {
      Status st = x.c->malloc(uint64_t(kWords) * 4, x.buf[b]);
      ASSERT_TRUE(st.ok()) << st.str() << log();
      std::vector<uint32_t> p(kWords);
      for (uint32_t i = 0; i < kWords; ++i)
        p[i] = memPattern(t, b, i);
      ASSERT_TRUE(x.c->copyToDevice(x.buf[b], p.data(), kWords * 4ull).ok());
    }
    ASSERT_TRUE(x.c->deviceSynchronize().ok());
    uint64_t free = 0, total = 0;
    ASSERT_TRUE(x.c->memInfo(free, total).ok());
    EXPECT_EQ(total, 48ull << 20);
    EXPECT_EQ(free, 28ull << 20);
  }
  for (unsigned round = 0; round < 3; ++round)
    for (unsigned t = 0; t < kTenants; ++t) {
      Tenant &x = ts[t];
      uint32_t k = 0x01000193u * (round * kTenants + t + 1);
      for (unsigned b = 0; b < kBuffers; ++b) {
        Params p(*x.m.findKernel("mix"));
        p.add(x.buf[b]).add(kWords).add(k);
        ASSERT_TRUE(x.c->launch(x.m.handle, "mix", {kWords / 256}, {256}, 0,
                                p.bytes.data(), p.bytes.size())
                        .ok());
      }
      x.key ^= k;
      // Then idle while the others run.
      Status st = x.c->deviceSynchronize();
      ASSERT_TRUE(st.ok()) << st.str() << log();
    }
  for (unsigned t = 0; t < kTenants; ++t) {
    Tenant &x = ts[t];
    for (unsigned b = 0; b < kBuffers; ++b) {
      std::vector<uint32_t> got(kWords);
      ASSERT_TRUE(
          x.c->copyFromDevice(got.data(), x.buf[b], kWords * 4ull).ok());
      uint32_t wrong = 0, first = kWords;
      for (uint32_t i = 0; i < kWords; ++i)
        if (got[i] != (memPattern(t, b, i) ^ x.key) && wrong++ == 0)
          first = i;
      EXPECT_EQ(wrong, 0u) << "tenant " << t << " buffer " << b
                           << ": first wrong word " << first;
    }
  }
  std::string m = fetchMetrics();
  EXPECT_GT(metric(m, "wooly_memory_evictions_total"), 0) << m;
  EXPECT_GT(metric(m, "wooly_memory_swap_ins_total"), 0) << m;
  EXPECT_GT(metric(m, "wooly_memory_swap_out_bytes_total"), 0) << m;
  EXPECT_LE(metric(m, "wooly_device_memory_used_bytes"), double(64 << 20));
  double resident = 0, swapped = 0;
  for (unsigned t = 0; t < kTenants; ++t) {
    std::string l = "{tenant=\"t" + std::to_string(t) + "\"}";
    EXPECT_EQ(metric(m, "wooly_tenant_memory_used_bytes" + l), 20 << 20);
    resident += metric(m, "wooly_tenant_memory_resident_bytes" + l);
    swapped += metric(m, "wooly_tenant_memory_swapped_bytes" + l);
    EXPECT_GT(metric(m, "wooly_tenant_memory_swap_ins_total" + l), 0) << l;
  }
  EXPECT_EQ(swapped, metric(m, "wooly_device_memory_swapped_bytes"));
  EXPECT_EQ(resident + swapped, double(kTenants) * (20 << 20));
  EXPECT_LE(resident, double(64 << 20));
}

/// Kernels for deduplication: `scale` only reads its weights, `mix` writes
/// through its pointer, `indirect` writes through a pointer it loads from
/// memory (the analysis cannot say which buffer that is).
const char *kDedupModule = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry scale(.param .u64 w, .param .u64 out, .param .u32 n)
{
  .reg .pred %p;
  .reg .b32 %r<8>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [w];
  ld.param.u64 %rd4, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.u32 %r6, %r3, %r4, %r5;
  setp.ge.u32 %p, %r6, %r1;
  @%p bra DONE;
  mul.wide.u32 %rd2, %r6, 4;
  add.u64 %rd3, %rd1, %rd2;
  ld.global.u32 %r7, [%rd3];
  mul.lo.u32 %r7, %r7, 3;
  add.u64 %rd5, %rd4, %rd2;
  st.global.u32 [%rd5], %r7;
DONE:
  ret;
}
.visible .entry indirect(.param .u64 table, .param .u32 v)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [table];
  ld.param.u32 %r1, [v];
  ld.global.u64 %rd2, [%rd1];
  st.global.u32 [%rd2], %r1;
  ret;
}
)";

// Six tenants load the same 4 MiB of weights: the device holds one copy,
// each tenant reads it at its own address. A kernel that only reads them
// keeps the copy shared; a tenant that writes into its weights - by memcpy,
// by a kernel whose parameter is not read-only, by a kernel that writes
// through a pointer loaded from memory (which the analysis cannot prove
// read-only), by a device-to-device copy or by a memset - gets a private
// copy first, and every other tenant still
// reads the original bytes. /metrics shows the memory saved, the shares
// and the copies on write.
TEST_F(ServerTest, IdenticalWeightsAreKeptOnceUntilWritten) {
  constexpr unsigned kTenants = 6;
  constexpr uint32_t kWords = (4u << 20) / 4;
  std::string yaml = "tenants:\n";
  for (unsigned t = 0; t < kTenants; ++t)
    yaml += "  - name: t" + std::to_string(t) +
            "\n    token: \"k\"\n    memory: 32MiB\n";
  std::ofstream(dir + "/tenants.yaml") << yaml;
  startServer({"--device-memory=64MiB", "--tenants=" + dir + "/tenants.yaml"});
  std::vector<uint32_t> weights(kWords);
  for (uint32_t i = 0; i < kWords; ++i)
    weights[i] = memPattern(7, 7, i);
  struct Tenant {
    std::unique_ptr<Client> c;
    Module m, mix;
    uint64_t w = 0, out = 0;
  };
  std::vector<Tenant> ts(kTenants);
  auto used = [&] {
    std::string m = fetchMetrics();
    return metric(m, "wooly_device_memory_used_bytes") -
           metric(m, "wooly_device_memory_internal_bytes");
  };
  double before = 0; // t0's two buffers
  for (unsigned t = 0; t < kTenants; ++t) {
    Tenant &x = ts[t];
    x.c = connect("t" + std::to_string(t), "k");
    ASSERT_TRUE(x.c);
    ASSERT_TRUE(x.c->loadModule(kDedupModule, "dedup", x.m).ok());
    ASSERT_TRUE(x.c->loadModule(kMixModule, "mix", x.mix).ok());
    ASSERT_TRUE(x.c->malloc(kWords * 4ull, x.w).ok());
    ASSERT_TRUE(x.c->malloc(kWords * 4ull, x.out).ok());
    ASSERT_TRUE(x.c->deviceSynchronize().ok());
    if (t == 0)
      before = used();
    ASSERT_TRUE(x.c->copyToDevice(x.w, weights.data(), kWords * 4ull).ok());
    ASSERT_TRUE(x.c->deviceSynchronize().ok()) << log();
  }
  std::string m = fetchMetrics();
  // One copy of the weights for all four (and each tenant's output buffer).
  auto tenantsUse = [&](const std::string &m) {
    return metric(m, "wooly_device_memory_used_bytes") -
           metric(m, "wooly_device_memory_internal_bytes");
  };
  EXPECT_EQ(tenantsUse(m), before + double(kTenants - 1) * kWords * 4) << m;
  EXPECT_EQ(metric(m, "wooly_device_memory_dedup_saved_bytes"),
            double(kTenants - 1) * kWords * 4);
  EXPECT_EQ(metric(m, "wooly_memory_dedup_shares_total"), kTenants - 1.0);
  for (unsigned t = 0; t < kTenants; ++t) {
    std::string l = "{tenant=\"t" + std::to_string(t) + "\"}";
    EXPECT_EQ(metric(m, "wooly_tenant_memory_shared_bytes" + l), kWords * 4.0);
    EXPECT_EQ(metric(m, "wooly_tenant_memory_used_bytes" + l), kWords * 8.0);
  }
  auto read = [&](Tenant &x, uint64_t addr) {
    std::vector<uint32_t> got(kWords);
    EXPECT_TRUE(x.c->copyFromDevice(got.data(), addr, kWords * 4ull).ok());
    return got;
  };

  // A kernel that only reads the weights: still one copy.
  Params scale(*ts[0].m.findKernel("scale"));
  scale.add(ts[0].w).add(ts[0].out).add(kWords);
  ASSERT_TRUE(ts[0]
                  .c
                  ->launch(ts[0].m.handle, "scale", {kWords / 256}, {256}, 0,
                           scale.bytes.data(), scale.bytes.size())
                  .ok());
  std::vector<uint32_t> scaled = read(ts[0], ts[0].out);
  for (uint32_t i = 0; i < kWords; i += 4099)
    ASSERT_EQ(scaled[i], weights[i] * 3) << i;
  m = fetchMetrics();
  EXPECT_EQ(metric(m, "wooly_device_memory_dedup_saved_bytes"),
            double(kTenants - 1) * kWords * 4);
  EXPECT_EQ(metric(m, "wooly_memory_copies_on_write_total"), 0);

  // t1 writes by memcpy, t2 by a kernel that writes its parameter, t3 by
  // a kernel that writes through a loaded pointer, t4 by a device-to-device
  // copy, t5 by a memset; t0 only reads.
  std::vector<uint32_t> expect1 = weights, expect2 = weights, expect3 = weights,
                        expect4 = weights, expect5 = weights;
  uint32_t patch[4] = {1, 2, 3, 4};
  ASSERT_TRUE(ts[1].c->copyToDevice(ts[1].w + 400, patch, 16).ok());
  std::copy(patch, patch + 4, expect1.begin() + 100);
  Params mix(*ts[2].mix.findKernel("mix"));
  mix.add(ts[2].w).add(kWords).add(0x5a5a5a5au);
  ASSERT_TRUE(ts[2]
                  .c
                  ->launch(ts[2].mix.handle, "mix", {kWords / 256}, {256}, 0,
                           mix.bytes.data(), mix.bytes.size())
                  .ok());
  for (uint32_t &v : expect2)
    v ^= 0x5a5a5a5au;
  // The table (in t3's output buffer) holds the address of word 8 of its
  // weights.
  uint64_t target = ts[3].w + 32;
  ASSERT_TRUE(ts[3].c->copyToDevice(ts[3].out, &target, 8).ok());
  Params ind(*ts[3].m.findKernel("indirect"));
  ind.add(ts[3].out).add(0xdeadbeefu);
  ASSERT_TRUE(ts[3]
                  .c
                  ->launch(ts[3].m.handle, "indirect", {1}, {1}, 0,
                           ind.bytes.data(), ind.bytes.size())
                  .ok());
  expect3[8] = 0xdeadbeefu;
  // t4: words 16..31 of its weights from its output buffer (zeros).
  ASSERT_TRUE(ts[4].c->copyDeviceToDevice(ts[4].w + 64, ts[4].out, 64).ok());
  std::fill(expect4.begin() + 16, expect4.begin() + 32, 0u);
  ASSERT_TRUE(ts[5].c->memset(ts[5].w + 4096, 0xab, 8).ok());
  expect5[1024] = expect5[1025] = 0xababababu;
  for (unsigned t = 1; t < kTenants; ++t) {
    Status st = ts[t].c->deviceSynchronize();
    ASSERT_TRUE(st.ok()) << "t" << t << ": " << st.str() << log();
  }
  EXPECT_EQ(read(ts[0], ts[0].w), weights);
  EXPECT_EQ(read(ts[1], ts[1].w), expect1);
  EXPECT_EQ(read(ts[2], ts[2].w), expect2);
  EXPECT_EQ(read(ts[3], ts[3].w), expect3);
  EXPECT_EQ(read(ts[4], ts[4].w), expect4);
  EXPECT_EQ(read(ts[5], ts[5].w), expect5);
  m = fetchMetrics();
  EXPECT_EQ(metric(m, "wooly_memory_copies_on_write_total"), 5.0) << m;
  EXPECT_EQ(metric(m, "wooly_device_memory_dedup_saved_bytes"), 0.0);
  EXPECT_EQ(tenantsUse(m), before + double(kTenants - 1) * 2 * kWords * 4);
  for (unsigned t = 0; t < kTenants; ++t)
    EXPECT_EQ(metric(m, "wooly_tenant_memory_shared_bytes{tenant=\"t" +
                            std::to_string(t) + "\"}"),
              0.0);
}

// On a device with memory of its own (cuda; here the stand-in driver,
// which reports 3 GiB free), the capacity is at most what the device has
// free: all of it by default, and --device-memory above it is lowered, as
// the log says; a tenant's memory info shows it.
TEST_F(ServerTest, CudaCapacityIsTheDevicesFreeMemory) {
  for (bool asked : {false, true}) {
    const char *old = getenv("LD_LIBRARY_PATH");
    std::string saved = old ? old : "";
    setenv("LD_LIBRARY_PATH", FAKE_CUDA_DIR, 1);
    std::vector<std::string> args = {"--backend=cuda"};
    if (asked)
      args.push_back("--device-memory=64GiB");
    startServer(args);
    if (old)
      setenv("LD_LIBRARY_PATH", saved.c_str(), 1);
    else
      unsetenv("LD_LIBRARY_PATH");
    std::string l = log();
    EXPECT_NE(l.find("device memory 3 GiB"), std::string::npos) << l;
    EXPECT_EQ(l.find("is more than the device has free") != std::string::npos,
              asked)
        << l;
    auto c = connect("t");
    ASSERT_TRUE(c);
    uint64_t free = 0, total = 0;
    ASSERT_TRUE(c->memInfo(free, total).ok());
    EXPECT_EQ(total, 3ull << 30);
    // Texture objects are not supported yet on the cuda backend, and the
    // server says so (a CUDA array is an allocation like any other).
    wooly::ResourceDesc r;
    r.kind = wooly::ResourceDesc::Kind::Linear;
    r.format.bits[0] = 32;
    r.format.kind = wooly::ChannelKind::Float;
    r.width = 64;
    ASSERT_TRUE(c->malloc(256, r.address).ok());
    uint64_t tex = 0;
    Status st = c->textureCreate(r, wooly::TextureDesc(), false, tex);
    EXPECT_EQ(st.code, Code::Unsupported) << st.str();
    EXPECT_NE(st.message.find("not supported yet on the cuda backend"),
              std::string::npos)
        << st.str();
    c.reset();
    stopServer();
  }
}

// Oversubscription on cuda (--cuda-swap; the stand-in driver's virtual
// memory API): four tenants of 24 MiB on a 64 MiB device fill their
// buffers, then work in turns (a memset each, idle otherwise); idle
// tenants' memory moves to host memory and back at the same addresses,
// and every byte is there at the end.
TEST_F(ServerTest, CudaSwapKeepsEveryByte) {
  constexpr unsigned kTenants = 4, kBuffers = 2;
  constexpr uint32_t kWords = (12u << 20) / 4;
  const char *old = getenv("LD_LIBRARY_PATH");
  std::string saved = old ? old : "";
  setenv("LD_LIBRARY_PATH", FAKE_CUDA_DIR, 1);
  startServer({"--backend=cuda", "--cuda-swap", "--device-memory=64MiB"});
  if (old)
    setenv("LD_LIBRARY_PATH", saved.c_str(), 1);
  else
    unsetenv("LD_LIBRARY_PATH");
  EXPECT_NE(log().find("oversubscribed: idle tenants' memory moves"),
            std::string::npos)
      << log();
  struct Tenant {
    std::unique_ptr<Client> c;
    uint64_t buf[kBuffers] = {};
  };
  std::vector<Tenant> ts(kTenants);
  for (unsigned t = 0; t < kTenants; ++t) {
    ts[t].c = connect("t" + std::to_string(t));
    ASSERT_TRUE(ts[t].c);
    for (unsigned b = 0; b < kBuffers; ++b) {
      Status st = ts[t].c->malloc(kWords * 4ull, ts[t].buf[b]);
      ASSERT_TRUE(st.ok()) << st.str() << log();
      std::vector<uint32_t> p(kWords);
      for (uint32_t i = 0; i < kWords; ++i)
        p[i] = memPattern(t, b, i);
      ASSERT_TRUE(
          ts[t].c->copyToDevice(ts[t].buf[b], p.data(), kWords * 4ull).ok());
    }
    Status st = ts[t].c->deviceSynchronize();
    ASSERT_TRUE(st.ok()) << st.str() << log();
  }
  for (unsigned round = 0; round < 2; ++round)
    for (unsigned t = 0; t < kTenants; ++t) {
      // Word 0 of buffer 0 becomes the round's marker.
      ASSERT_TRUE(ts[t].c->memset(ts[t].buf[0], uint8_t(round + 1), 4).ok());
      Status st = ts[t].c->deviceSynchronize();
      ASSERT_TRUE(st.ok()) << st.str() << log();
    }
  for (unsigned t = 0; t < kTenants; ++t)
    for (unsigned b = 0; b < kBuffers; ++b) {
      std::vector<uint32_t> got(kWords);
      ASSERT_TRUE(
          ts[t]
              .c->copyFromDevice(got.data(), ts[t].buf[b], kWords * 4ull)
              .ok());
      uint32_t wrong = 0;
      for (uint32_t i = 0; i < kWords; ++i) {
        uint32_t want = b == 0 && i == 0 ? 0x02020202u : memPattern(t, b, i);
        wrong += got[i] != want;
      }
      EXPECT_EQ(wrong, 0u) << "tenant " << t << " buffer " << b;
    }
  std::string m = fetchMetrics();
  EXPECT_GT(metric(m, "wooly_memory_evictions_total"), 0) << m;
  EXPECT_GT(metric(m, "wooly_memory_swap_ins_total"), 0) << m;
  EXPECT_LE(metric(m, "wooly_device_memory_used_bytes"), double(64 << 20));
}

// Deduplication on the cuda backend (the stand-in driver, whose physical
// allocations can be mapped at several addresses and whose read-only
// mappings refuse writes): with --cuda-swap, three tenants that copy in
// the same weights keep one physical copy; a memcpy and a memset into it
// give the writer a private copy at the same address while the others
// still read the original bytes. Without --cuda-swap the backend cannot
// share, and every tenant keeps its own copy.
TEST_F(ServerTest, CudaKeepsIdenticalWeightsOnceUntilWritten) {
  constexpr unsigned kTenants = 3;
  constexpr uint32_t kWords = (4u << 20) / 4;
  std::vector<uint32_t> weights(kWords);
  for (uint32_t i = 0; i < kWords; ++i)
    weights[i] = memPattern(5, 1, i);
  for (bool vmm : {false, true}) {
    SCOPED_TRACE(vmm ? "--cuda-swap" : "without --cuda-swap");
    const char *old = getenv("LD_LIBRARY_PATH");
    std::string saved = old ? old : "";
    setenv("LD_LIBRARY_PATH", FAKE_CUDA_DIR, 1);
    std::vector<std::string> args = {"--backend=cuda", "--device-memory=64MiB"};
    if (vmm)
      args.push_back("--cuda-swap");
    logPath = dir + (vmm ? "/serve-vmm.log" : "/serve.log");
    startServer(args);
    if (old)
      setenv("LD_LIBRARY_PATH", saved.c_str(), 1);
    else
      unsetenv("LD_LIBRARY_PATH");
    std::vector<std::unique_ptr<Client>> cs(kTenants);
    std::vector<uint64_t> w(kTenants);
    for (unsigned t = 0; t < kTenants; ++t) {
      cs[t] = connect("t" + std::to_string(t));
      ASSERT_TRUE(cs[t]);
      ASSERT_TRUE(cs[t]->malloc(kWords * 4ull, w[t]).ok()) << log();
      ASSERT_TRUE(
          cs[t]->copyToDevice(w[t], weights.data(), kWords * 4ull).ok());
      Status st = cs[t]->deviceSynchronize();
      ASSERT_TRUE(st.ok()) << st.str() << log();
    }
    std::string m = fetchMetrics();
    double kept = vmm ? double(kTenants - 1) * kWords * 4 : 0;
    EXPECT_EQ(metric(m, "wooly_device_memory_dedup_saved_bytes"), kept) << m;
    EXPECT_EQ(metric(m, "wooly_device_memory_used_bytes") -
                  metric(m, "wooly_device_memory_internal_bytes"),
              kTenants * kWords * 4.0 - kept);
    auto read = [&](unsigned t) {
      std::vector<uint32_t> got(kWords);
      EXPECT_TRUE(cs[t]->copyFromDevice(got.data(), w[t], kWords * 4ull).ok());
      return got;
    };
    for (unsigned t = 0; t < kTenants; ++t)
      EXPECT_EQ(read(t), weights) << "t" << t;
    // t1 writes by memcpy, t2 by memset; t0 only reads.
    uint32_t patch[4] = {1, 2, 3, 4};
    ASSERT_TRUE(cs[1]->copyToDevice(w[1] + 400, patch, 16).ok());
    ASSERT_TRUE(cs[2]->memset(w[2] + 4096, 0xab, 8).ok());
    for (unsigned t = 1; t < kTenants; ++t) {
      Status st = cs[t]->deviceSynchronize();
      ASSERT_TRUE(st.ok()) << "t" << t << ": " << st.str() << log();
    }
    std::vector<uint32_t> expect1 = weights, expect2 = weights;
    std::copy(patch, patch + 4, expect1.begin() + 100);
    expect2[1024] = expect2[1025] = 0xababababu;
    EXPECT_EQ(read(0), weights);
    EXPECT_EQ(read(1), expect1);
    EXPECT_EQ(read(2), expect2);
    m = fetchMetrics();
    EXPECT_EQ(metric(m, "wooly_memory_copies_on_write_total"), vmm ? 2.0 : 0.0)
        << m;
    EXPECT_EQ(metric(m, "wooly_device_memory_dedup_saved_bytes"), 0.0);
    EXPECT_EQ(metric(m, "wooly_device_memory_used_bytes") -
                  metric(m, "wooly_device_memory_internal_bytes"),
              kTenants * kWords * 4.0);
    cs.clear();
    stopServer();
  }
}

// Swap traffic is pipelined with other tenants' work: a tenant's memory
// comes back on the server's swap thread (made to last with
// --swap-delay-ms: 0.7 s before each of the four allocations it moves),
// and meanwhile another tenant's launches, copies and synchronisation
// complete; the metrics show the swap still in flight when they have.
// Then a tenant is killed while its memory moves back: once the swap
// settles, its memory is gone from every counter, and the others' bytes
// are intact. Then a tenant's malloc that needs an idle tenant's memory
// moved out waits for that swap, while the other tenant works on.
TEST_F(ServerTest, OtherTenantsWorkWhileMemoryMoves) {
  constexpr uint32_t kWords = (20u << 20) / 4, kSmall = (1u << 20) / 4;
  startServer({"--device-memory=64MiB", "--swap-delay-ms=700"});
  struct Tenant {
    std::unique_ptr<Client> c;
    uint64_t buf[2] = {};
  };
  Tenant a, b;
  auto fill = [&](Tenant &x, unsigned t) {
    x.c = connect(t ? "b" : "a");
    ASSERT_TRUE(x.c);
    for (unsigned i = 0; i < 2; ++i) {
      ASSERT_TRUE(x.c->malloc(kWords * 4ull, x.buf[i]).ok()) << log();
      std::vector<uint32_t> p(kWords);
      for (uint32_t w = 0; w < kWords; ++w)
        p[w] = memPattern(t, i, w);
      ASSERT_TRUE(x.c->copyToDevice(x.buf[i], p.data(), kWords * 4ull).ok());
    }
    Status st = x.c->deviceSynchronize();
    ASSERT_TRUE(st.ok()) << st.str() << log();
  };
  auto check = [&](Tenant &x, unsigned t, uint32_t word0) {
    for (unsigned i = 0; i < 2; ++i) {
      std::vector<uint32_t> got(kWords);
      ASSERT_TRUE(
          x.c->copyFromDevice(got.data(), x.buf[i], kWords * 4ull).ok());
      uint32_t wrong = 0;
      for (uint32_t w = 0; w < kWords; ++w)
        wrong += got[w] != (i == 0 && w == 0 ? word0 : memPattern(t, i, w));
      EXPECT_EQ(wrong, 0u) << "tenant " << t << " buffer " << i;
    }
  };
  fill(a, 0);
  fill(b, 1); // a's memory moves out
  auto c = connect("c");
  ASSERT_TRUE(c);
  Module m;
  ASSERT_TRUE(c->loadModule(kMixModule, "mix", m).ok());
  uint64_t cbuf = 0;
  ASSERT_TRUE(c->malloc(kSmall * 4ull, cbuf).ok());
  std::vector<uint32_t> cp(kSmall);
  for (uint32_t w = 0; w < kSmall; ++w)
    cp[w] = memPattern(2, 0, w);
  ASSERT_TRUE(c->copyToDevice(cbuf, cp.data(), kSmall * 4ull).ok());
  uint32_t key = 0;
  auto mix = [&](uint32_t k) {
    Params p(*m.findKernel("mix"));
    p.add(cbuf).add(kSmall).add(k);
    ASSERT_TRUE(c->launch(m.handle, "mix", {kSmall / 256}, {256}, 0,
                          p.bytes.data(), p.bytes.size())
                    .ok());
    key ^= k;
  };
  // c's buffer holds its pattern XOR every key applied.
  auto checkC = [&] {
    std::vector<uint32_t> now(kSmall);
    ASSERT_TRUE(c->copyFromDevice(now.data(), cbuf, kSmall * 4ull).ok());
    uint32_t bad = 0;
    for (uint32_t w = 0; w < kSmall; ++w)
      bad += now[w] != (cp[w] ^ key);
    EXPECT_EQ(bad, 0u);
  };
  mix(0x1234567u); // compiled before the swap
  ASSERT_TRUE(c->deviceSynchronize().ok()) << log();
  std::string mt = fetchMetrics();
  ASSERT_EQ(metric(mt, "wooly_tenant_memory_swapped_bytes{tenant=\"a\"}"),
            40 << 20)
      << mt;
  double swapIns = metric(mt, "wooly_memory_swap_ins_total");

  // a's memset needs its memory back: b's moves out, a's in (2.8 s).
  ASSERT_TRUE(a.c->memset(a.buf[0], 0x3c, 4, 0, /*async=*/true).ok());
  ASSERT_TRUE(a.c->flush().ok());
  // Once it waits for its memory, the swap has started.
  auto until = [&](const char *name, double want) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline &&
           metric(fetchMetrics(), name) != want)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(metric(fetchMetrics(), name), want) << name;
  };
  until("wooly_memory_waiting_operations", 1);
  for (uint32_t k : {0x9e3779b9u, 0x85ebca6bu, 0xc2b2ae35u})
    mix(k);
  Status st = c->deviceSynchronize();
  ASSERT_TRUE(st.ok()) << st.str() << log();
  checkC();
  mt = fetchMetrics();
  EXPECT_EQ(metric(mt, "wooly_memory_swap_ins_total"), swapIns)
      << "c's work completed while a's memory was still moving\n"
      << mt;
  EXPECT_EQ(metric(mt, "wooly_memory_waiting_operations"), 1) << mt;
  st = a.c->deviceSynchronize();
  ASSERT_TRUE(st.ok()) << st.str() << log();
  check(a, 0, 0x3c3c3c3cu);
  mt = fetchMetrics();
  EXPECT_EQ(metric(mt, "wooly_memory_swap_ins_total"), swapIns + 2) << mt;
  EXPECT_EQ(metric(mt, "wooly_tenant_memory_swapped_bytes{tenant=\"b\"}"),
            40 << 20);

  // b's memset needs its memory back (c's and a's move out, least
  // recently active first); b is killed before its memory has come back:
  // it is freed instead, and b forgotten.
  ASSERT_TRUE(b.c->memset(b.buf[0], 0x5a, 4, 0, /*async=*/true).ok());
  ASSERT_TRUE(b.c->flush().ok());
  until("wooly_memory_waiting_operations", 1);
  b.c.reset();
  until("wooly_tenant_memory_used_bytes{tenant=\"b\"}", -1); // forgotten
  until("wooly_memory_waiting_operations", 0);
  mt = fetchMetrics();
  EXPECT_EQ(metric(mt, "wooly_device_memory_used_bytes"),
            metric(mt, "wooly_device_memory_internal_bytes"))
      << mt;
  EXPECT_EQ(metric(mt, "wooly_device_memory_swapped_bytes"),
            (40 << 20) + kSmall * 4)
      << mt;
  EXPECT_EQ(metric(mt, "wooly_memory_swap_ins_total"), swapIns + 2)
      << "b's memory was freed, not moved in\n"
      << mt;
  check(a, 0, 0x3c3c3c3cu); // back once more
  checkC();
  mt = fetchMetrics();
  EXPECT_EQ(metric(mt, "wooly_device_memory_swapped_bytes"), 0) << mt;

  // d's malloc needs room: a's memory (least recently active) moves out on
  // the swap thread, and d's reply waits for it, while c works.
  double outs = metric(mt, "wooly_memory_swap_outs_total");
  auto d = connect("d");
  ASSERT_TRUE(d);
  std::atomic<bool> allocated{false};
  uint64_t pd = 0;
  Status dst;
  std::thread mallocD([&] {
    dst = d->malloc(40 << 20, pd);
    allocated = true;
  });
  until("wooly_memory_swap_outs_total", outs + 1); // one of a's two moved
  mix(0x27d4eb2fu);
  st = c->deviceSynchronize();
  EXPECT_TRUE(st.ok()) << st.str();
  checkC();
  mt = fetchMetrics();
  EXPECT_EQ(metric(mt, "wooly_memory_swap_outs_total"), outs + 1)
      << "c's work completed while a's memory moved out for d\n"
      << mt;
  EXPECT_FALSE(allocated.load());
  mallocD.join();
  EXPECT_TRUE(dst.ok()) << dst.str() << log();
  EXPECT_NE(pd, 0u);
  mt = fetchMetrics();
  EXPECT_EQ(metric(mt, "wooly_tenant_memory_swapped_bytes{tenant=\"a\"}"),
            40 << 20)
      << mt;
  EXPECT_EQ(metric(mt, "wooly_tenant_memory_resident_bytes{tenant=\"d\"}"),
            40 << 20);
  check(a, 0, 0x3c3c3c3cu);
}

// A module whose variables need room waits while an idle tenant's memory
// moves out for them on the swap thread, then loads; the idle tenant's
// bytes come back intact.
TEST_F(ServerTest, ModuleVariablesWaitForRoom) {
  startServer({"--device-memory=64MiB"});
  auto x = connect("x"), y = connect("y"), z = connect("z");
  ASSERT_TRUE(x && y && z);
  constexpr uint32_t kWords = (40u << 20) / 4;
  uint64_t px = 0, pz = 0;
  ASSERT_TRUE(x->malloc(kWords * 4ull, px).ok());
  std::vector<uint32_t> p(kWords);
  for (uint32_t i = 0; i < kWords; ++i)
    p[i] = memPattern(3, 0, i);
  ASSERT_TRUE(x->copyToDevice(px, p.data(), kWords * 4ull).ok());
  ASSERT_TRUE(x->deviceSynchronize().ok());
  // 60 MiB in use: the variables need x's (least recently active) out.
  ASSERT_TRUE(z->malloc(20 << 20, pz).ok());
  ASSERT_TRUE(z->memset(pz, 1, 20 << 20).ok());
  const char *ptx = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .global .align 4 .b8 table[16777216];
.visible .entry nop() { ret; }
)";
  Module m;
  Status st = y->loadModule(ptx, "vars", m);
  ASSERT_TRUE(st.ok()) << st.str() << log();
  std::string mt = fetchMetrics();
  EXPECT_EQ(metric(mt, "wooly_tenant_memory_swapped_bytes{tenant=\"x\"}"),
            40 << 20)
      << mt;
  EXPECT_EQ(metric(mt, "wooly_tenant_memory_resident_bytes{tenant=\"y\"}"),
            16 << 20)
      << mt;
  std::vector<uint32_t> got(kWords);
  ASSERT_TRUE(x->copyFromDevice(got.data(), px, kWords * 4ull).ok());
  EXPECT_TRUE(got == p);
}

// A tenant killed while its memory is swapped out, and one whose client
// goes away while its launch waits for its memory to come back (the other
// tenant's kernel holds the device): both sessions' memory returns, the
// waiting launch never runs, and the working tenant's bytes are intact.
TEST_F(ServerTest, TenantsKilledWhileSwappedOut) {
  startServer({"--device-memory=64MiB", "--kernel-timeout-ms=0"});
  // A process that holds 40 MiB (memset to 0x5a), then is moved out.
  int in = -1, out = -1;
  pid_t hold = spawn(
      {WOOLY_BIN_DIR "/wooly-app-hold", "--bytes=41943040"}, dir + "/hold.log",
      {"WOOLY_SERVER=" + endpoint, "WOOLY_TENANT=holder"}, &in, &out);
  ASSERT_GT(hold, 0);
  char buf[16] = {};
  ASSERT_GT(read(out, buf, 6), 0) << readFile(dir + "/hold.log") << log();
  auto a = connect("worker");
  ASSERT_TRUE(a);
  uint64_t pa;
  ASSERT_TRUE(a->malloc(40 << 20, pa).ok()) << log();
  std::vector<uint32_t> pat((40 << 20) / 4);
  for (uint32_t i = 0; i < pat.size(); ++i)
    pat[i] = memPattern(9, 0, i);
  ASSERT_TRUE(a->copyToDevice(pa, pat.data(), 40 << 20).ok());
  std::string m = fetchMetrics();
  EXPECT_EQ(metric(m, "wooly_tenant_memory_swapped_bytes{tenant=\"holder\"}"),
            40 << 20)
      << m;
  kill(hold, SIGKILL);
  EXPECT_EQ(waitExit(hold), 128 + SIGKILL);
  close(in);
  close(out);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline &&
         metric(fetchMetrics(), "wooly_device_memory_swapped_bytes") != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(metric(fetchMetrics(), "wooly_device_memory_swapped_bytes"), 0)
      << log();

  // b's 40 MiB moves out for a's kernel; b's launch then waits for it.
  auto b = connect("waiter");
  ASSERT_TRUE(b);
  Module mb, ma;
  ASSERT_TRUE(b->loadModule(kMixModule, "mix", mb).ok());
  ASSERT_TRUE(a->loadModule(kCountModule, "count", ma).ok());
  // Both kernels compiled first (a launch waiting for its compilation
  // holds no memory yet).
  Params warm(*ma.findKernel("count"));
  warm.add(pa).add(uint32_t(1));
  ASSERT_TRUE(a->launch(ma.handle, "count", {1}, {1}, 0, warm.bytes.data(),
                        warm.bytes.size())
                  .ok());
  ASSERT_TRUE(a->deviceSynchronize().ok());
  uint64_t pb;
  ASSERT_TRUE(b->malloc(40 << 20, pb).ok()) << log();
  ASSERT_TRUE(b->memset(pb, 0x11, 40 << 20).ok());
  Params none(*mb.findKernel("mix"));
  none.add(pb).add(uint32_t(0)).add(uint32_t(1));
  ASSERT_TRUE(b->launch(mb.handle, "mix", {1}, {16}, 0, none.bytes.data(),
                        none.bytes.size())
                  .ok());
  ASSERT_TRUE(b->deviceSynchronize().ok());
  Params pc(*ma.findKernel("count"));
  pc.add(pa).add(uint32_t(2000000000));
  ASSERT_TRUE(a->launch(ma.handle, "count", {1}, {1}, 0, pc.bytes.data(),
                        pc.bytes.size())
                  .ok());
  ASSERT_TRUE(a->ping().ok());
  Params pm(*mb.findKernel("mix"));
  pm.add(pb).add(uint32_t(16)).add(uint32_t(1));
  ASSERT_TRUE(b->launch(mb.handle, "mix", {1}, {16}, 0, pm.bytes.data(),
                        pm.bytes.size())
                  .ok());
  ASSERT_TRUE(b->ping().ok());
  m = fetchMetrics();
  // a's kernel still runs (it counts to 2 billion, seconds): b's launch waits.
  EXPECT_EQ(metric(m, "wooly_memory_waiting_operations"), 1) << m << log();
  EXPECT_EQ(metric(m, "wooly_tenant_memory_swapped_bytes{tenant=\"waiter\"}"),
            40 << 20);
  // Nothing can move out now (a works, b's memory is out already): an
  // allocation is refused, and nothing else changes.
  auto c = connect("third");
  ASSERT_TRUE(c);
  uint64_t pc3;
  Status st = c->malloc(30 << 20, pc3);
  EXPECT_EQ(st.code, Code::OutOfMemory) << st.str();
  EXPECT_NE(st.message.find("no idle tenant"), std::string::npos) << st.message;
  std::string after = fetchMetrics();
  EXPECT_EQ(metric(after, "wooly_memory_out_of_memory_total"), 1) << after;
  for (const char *g :
       {"wooly_device_memory_used_bytes", "wooly_device_memory_swapped_bytes",
        "wooly_memory_evictions_total", "wooly_memory_swap_ins_total"})
    EXPECT_EQ(metric(after, g), metric(m, g)) << g;
  c.reset();
  b.reset(); // the client goes away
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline &&
         metric(fetchMetrics(), "wooly_device_memory_swapped_bytes") != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  m = fetchMetrics();
  EXPECT_EQ(metric(m, "wooly_device_memory_swapped_bytes"), 0) << m;
  EXPECT_EQ(metric(m, "wooly_memory_waiting_operations"), 0) << m;
  ASSERT_TRUE(a->deviceSynchronize().ok()) << log();
  std::vector<uint32_t> got(pat.size());
  ASSERT_TRUE(a->copyFromDevice(got.data(), pa, 40 << 20).ok());
  EXPECT_EQ(got[0], 2000000000u);
  got[0] = pat[0];
  EXPECT_TRUE(got == pat) << "the worker's bytes changed";
  m = fetchMetrics();
  EXPECT_EQ(metric(m, "wooly_device_memory_used_bytes"),
            metric(m, "wooly_device_memory_internal_bytes") + (40 << 20))
      << m;
}

// Module variables go through the memory manager: reserved at module load
// (one instance per session, the sizes the module declares), counted in
// the tenant's memory, refused past its quota, returned at unload.
TEST_F(ServerTest, ModuleVariablesAreAccounted) {
  std::ofstream(dir + "/tenants.yaml") << "tenants:\n"
                                          "  - name: vars\n"
                                          "    token: \"k\"\n"
                                          "    memory: 1MiB\n";
  startServer({"--tenants=" + dir + "/tenants.yaml"});
  const char *ptx = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .global .align 4 .b8 table[262144];
.visible .entry touch()
{
  .reg .b32 %r<2>;
  mov.u32 %r1, 1;
  st.global.u32 [table], %r1;
  ret;
}
)";
  auto c = connect("vars", "k");
  ASSERT_TRUE(c);
  auto used = [&] {
    uint64_t free = 0, total = 0;
    EXPECT_TRUE(c->memInfo(free, total).ok());
    return total - free;
  };
  Module m1, m2, m3, m4;
  ASSERT_TRUE(c->loadModule(ptx, "vars", m1).ok());
  EXPECT_EQ(used(), 256u << 10);
  ASSERT_TRUE(c->loadModule(ptx, "vars", m2).ok());
  ASSERT_TRUE(c->loadModule(ptx, "vars", m3).ok());
  ASSERT_TRUE(c->loadModule(ptx, "vars", m4).ok());
  EXPECT_EQ(used(), 1u << 20);
  Module m5;
  Status st = c->loadModule(ptx, "vars", m5);
  EXPECT_EQ(st.code, Code::OutOfMemory) << st.str();
  std::string m = fetchMetrics();
  EXPECT_EQ(metric(m, "wooly_tenant_memory_resident_bytes{tenant=\"vars\"}"),
            1 << 20)
      << m;
  ASSERT_TRUE(c->unloadModule(m4.handle).ok());
  EXPECT_EQ(used(), 768u << 10);
  uint64_t a;
  EXPECT_TRUE(c->malloc(256 << 10, a).ok());
}
