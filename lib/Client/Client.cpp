//===- Client.cpp - The C++ client of wooly-serve ---------------*- C++ -*-===//
//
// One ZeroMQ DEALER socket per client. Asynchronous calls accumulate in
// `batch` (a Request) and `payloads` (their data frames) and are sent with
// the next synchronous call, or alone when the batch is full. A synchronous
// call waits for the Reply that names its sequence number; while waiting it
// reads a monitor of the socket now and then, so that a server that goes
// away ends the wait with an Unavailable error instead of a hang.
//
// Everything that may throw (Protobuf, allocation) is caught at the API:
// no exception leaves this file.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Client/Client.h"

#include "wooly.pb.h"

#include <sodium.h>
#include <zmq.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pwd.h>
#include <sched.h>
#include <unistd.h>

using namespace wooly::client;
namespace pb = wooly::v1;

namespace {
constexpr uint32_t kVersion = pb::PROTOCOL_VERSION_CURRENT;

std::string envOr(const char *name, std::string fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::string(v) : std::move(fallback);
}

Status makeStatus(Code code, std::string message, uint64_t seq = 0) {
  Status s;
  s.code = code;
  s.message = std::move(message);
  s.seq = seq;
  return s;
}

Status fromProto(const pb::Status &p) {
  Status s;
  s.code = Code(p.code());
  s.message = p.message();
  s.seq = p.seq();
  s.sticky = p.sticky();
  return s;
}

std::string sha256Hex(std::string_view text) {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest,
                     reinterpret_cast<const unsigned char *>(text.data()),
                     text.size());
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : digest) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

/// A zmq_msg_t that closes itself.
struct Frame {
  zmq_msg_t msg;
  Frame() { zmq_msg_init(&msg); }
  explicit Frame(size_t n) {
    if (zmq_msg_init_size(&msg, n) != 0) {
      zmq_msg_init(&msg);
      throw std::bad_alloc();
    }
  }
  ~Frame() { zmq_msg_close(&msg); }
  Frame(const Frame &) = delete;
  Frame(Frame &&o) noexcept {
    zmq_msg_init(&msg);
    zmq_msg_move(&msg, &o.msg);
  }
  char *data() { return static_cast<char *>(zmq_msg_data(&msg)); }
  size_t size() { return zmq_msg_size(&msg); }
};
} // namespace

const char *wooly::client::codeName(Code code) {
  if (code == Code::Unavailable)
    return "UNAVAILABLE";
  const std::string &n = pb::ErrorCode_Name(pb::ErrorCode(int(code)));
  return n.empty() ? "UNKNOWN" : n.c_str();
}

std::string Status::str() const {
  std::string s = codeName(code);
  if (!message.empty())
    s += ": " + message;
  if (seq)
    s += " (call " + std::to_string(seq) + ")";
  return s;
}

std::string wooly::client::defaultServerAddress() {
  return "ipc:///tmp/wooly-" + std::to_string(getuid()) + ".sock";
}

const KernelLayout *Module::findKernel(std::string_view name) const {
  for (const KernelLayout &k : kernels)
    if (k.name == name)
      return &k;
  return nullptr;
}

class Client::Impl {
public:
  ~Impl() {
    // What the destructor's flush queued still goes out (for a while).
    if (socket && !dead) {
      int linger = 2000;
      zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
    }
    closeAll();
  }

  void closeAll() {
    if (monitor)
      zmq_close(monitor);
    if (socket)
      zmq_close(socket);
    if (ctx)
      zmq_ctx_term(ctx);
    monitor = socket = ctx = nullptr;
  }

  /// Gives the connection up after a call failed while the caller's buffer
  /// may still be queued for sending without a copy: closing the context
  /// drops the message, so the buffer is free again when the call returns.
  void abandonIfSending() {
    if (!zeroCopyDone || zeroCopyDone->load())
      return;
    dead = true;
    if (deadReason.empty())
      deadReason = "the connection to wooly-serve at '" + endpoint +
                   "' was given up during a copy";
    closeAll();
  }

  Status open(const Options &o) {
    options = o;
    endpoint = o.server.empty() ? envOr("WOOLY_SERVER", defaultServerAddress())
                                : o.server;
    if (sodium_init() < 0)
      return makeStatus(Code::Internal, "libsodium failed to initialise");
    ctx = zmq_ctx_new();
    socket = zmq_socket(ctx, ZMQ_DEALER);
    if (!ctx || !socket)
      return makeStatus(Code::Internal,
                        std::string("zmq: ") + zmq_strerror(zmq_errno()));
    int zero = 0, hb = 1000, hbTimeout = 10000;
    zmq_setsockopt(socket, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(socket, ZMQ_HEARTBEAT_IVL, &hb, sizeof hb);
    zmq_setsockopt(socket, ZMQ_HEARTBEAT_TIMEOUT, &hbTimeout, sizeof hbTimeout);
    // No high-water mark on sends: a batch must never be dropped.
    zmq_setsockopt(socket, ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt(socket, ZMQ_RCVHWM, &zero, sizeof zero);
    // Watch the connection: a disconnect ends waits with Unavailable.
    std::string monName = "inproc://wooly-client-monitor-" +
                          std::to_string(reinterpret_cast<uintptr_t>(this));
    if (zmq_socket_monitor(socket, monName.c_str(),
                           ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) == 0) {
      monitor = zmq_socket(ctx, ZMQ_PAIR);
      zmq_connect(monitor, monName.c_str());
    }
    // CURVE: the server's public key, and a key pair of this connection's.
    std::string serverKey =
        o.serverKey.empty() ? envOr("WOOLY_SERVER_KEY", "") : o.serverKey;
    // (A key read from a file may end in a newline.)
    while (!serverKey.empty() && std::isspace((unsigned char)serverKey.back()))
      serverKey.pop_back();
    if (!serverKey.empty()) {
      char pub[41], sec[41];
      if (serverKey.size() != 40)
        return makeStatus(Code::InvalidValue,
                          "the server key (WOOLY_SERVER_KEY) must be 40 Z85 "
                          "characters, the contents of wooly-serve's "
                          "PREFIX.pub");
      if (!zmq_has("curve") || zmq_curve_keypair(pub, sec) != 0 ||
          zmq_setsockopt(socket, ZMQ_CURVE_SERVERKEY, serverKey.data(), 40) !=
              0 ||
          zmq_setsockopt(socket, ZMQ_CURVE_PUBLICKEY, pub, 40) != 0 ||
          zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, sec, 40) != 0)
        return makeStatus(Code::Internal, std::string("cannot set up CURVE: ") +
                                              zmq_strerror(zmq_errno()));
    }
    if (zmq_connect(socket, endpoint.c_str()) != 0)
      return makeStatus(Code::Unavailable,
                        "cannot connect to '" + endpoint +
                            "': " + zmq_strerror(zmq_errno()));
    std::string tenant = o.tenant;
    if (tenant.empty()) {
      struct passwd *pw = getpwuid(getuid());
      tenant = envOr("WOOLY_TENANT", pw ? pw->pw_name : "default");
    }
    std::string token = o.token.empty() ? envOr("WOOLY_TOKEN", "") : o.token;
    int timeout = std::atoi(
        envOr("WOOLY_CONNECT_TIMEOUT_MS", std::to_string(o.connectTimeoutMs))
            .c_str());
    pb::Call call;
    pb::Hello *h = call.mutable_hello();
    h->set_tenant(tenant);
    h->set_token(token);
    h->set_client(o.clientName.empty() ? "pid " + std::to_string(getpid())
                                       : o.clientName);
    pb::Reply reply;
    std::vector<Frame> frames;
    Status s = roundTrip(call, nullptr, 0, reply, frames, timeout);
    if (s.code == Code::Unavailable && s.message.empty())
      s.message = "no wooly-serve answered at '" + endpoint + "' within " +
                  std::to_string(timeout) +
                  " ms (start it, or set WOOLY_SERVER)";
    if (!s.ok())
      return s;
    const pb::SessionInfo &si = reply.session();
    session.id = si.session();
    session.tenant = si.tenant();
    session.priorityClass = si.priority_class();
    session.weight = si.weight();
    session.slaMs = si.sla_ms();
    session.quotaBytes = si.quota_bytes();
    return {};
  }

  /// Appends an asynchronous call (and its data) to the batch.
  Status enqueue(pb::Call &&call, const void *data, size_t bytes) {
    if (dead)
      return makeStatus(Code::Unavailable, deadReason);
    if (recording)
      return record(std::move(call), data != nullptr);
    call.set_seq(++seq);
    *batch.add_calls() = std::move(call);
    if (data) {
      Frame f(bytes);
      if (bytes)
        std::memcpy(f.data(), data, bytes);
      payloads.push_back(std::move(f));
      batchBytes += bytes;
    }
    if (size_t(batch.calls_size()) >= options.maxBatchCalls ||
        batchBytes >= options.maxBatchBytes)
      return flush();
    return {};
  }

  Status flush() {
    if (dead)
      return makeStatus(Code::Unavailable, deadReason);
    if (batch.calls_size() == 0)
      return {};
    return sendBatch(nullptr, 0);
  }

  /// Sends the batch plus a synchronous `call` (with optional zero-copy
  /// data) and waits for its reply. `timeoutMs` < 0: no limit.
  Status roundTrip(pb::Call &call, const void *data, size_t bytes,
                   pb::Reply &reply, std::vector<Frame> &frames,
                   int timeoutMs = -1) {
    if (dead)
      return makeStatus(Code::Unavailable, deadReason);
    if (recording && !call.has_graph_create())
      return makeStatus(Code::InvalidValue,
                        "a synchronous call while a graph is being recorded");
    uint64_t mySeq = ++seq;
    call.set_seq(mySeq);
    *batch.add_calls() = std::move(call);
    Status s = sendBatch(data, bytes);
    if (s.ok())
      s = await(mySeq, reply, frames, timeoutMs);
    if (!s.ok())
      abandonIfSending();
    return s;
  }

  Status sendBatch(const void *zeroCopy, size_t zeroCopyBytes) {
    batch.set_version(kVersion);
    std::string env;
    if (!batch.SerializeToString(&env))
      return makeStatus(Code::Internal, "cannot encode a request");
    size_t n = payloads.size() + (zeroCopy ? 1 : 0);
    int rc = zmq_send(socket, env.data(), env.size(), n ? ZMQ_SNDMORE : 0);
    for (size_t i = 0; rc >= 0 && i < payloads.size(); ++i)
      rc = zmq_msg_send(&payloads[i].msg, socket, i + 1 < n ? ZMQ_SNDMORE : 0);
    if (rc >= 0 && zeroCopy) {
      // The caller's buffer is sent without a copy; this waits until ZeroMQ
      // is done with it before the caller may touch it again.
      // One flag per send: a late release of an earlier message cannot
      // mark this one done.
      zmq_msg_t m;
      zeroCopyDone = std::make_shared<std::atomic<bool>>(false);
      zmq_msg_init_data(
          &m, const_cast<void *>(zeroCopy), zeroCopyBytes,
          [](void *, void *hint) {
            auto *flag =
                static_cast<std::shared_ptr<std::atomic<bool>> *>(hint);
            (*flag)->store(true);
            delete flag;
          },
          new std::shared_ptr<std::atomic<bool>>(zeroCopyDone));
      rc = zmq_msg_send(&m, socket, 0);
      if (rc < 0)
        zmq_msg_close(&m);
    }
    batch.Clear();
    payloads.clear();
    batchBytes = 0;
    if (rc < 0)
      return makeStatus(Code::Unavailable,
                        std::string("send: ") + zmq_strerror(zmq_errno()));
    return {};
  }

  /// Waits for the reply to `mySeq`; replies to other calls are dropped.
  /// Reads the socket monitor's pending events; true once the connection
  /// to the server was lost (after it had been made).
  bool connectionLost() {
    if (!monitor)
      return false;
    for (;;) {
      Frame ev, addr;
      if (zmq_msg_recv(&ev.msg, monitor, ZMQ_DONTWAIT) < 0)
        return dead;
      if (zmq_msg_more(&ev.msg))
        zmq_msg_recv(&addr.msg, monitor, 0);
      uint16_t event = 0;
      if (ev.size() >= 2)
        std::memcpy(&event, ev.data(), 2);
      if (event == ZMQ_EVENT_CONNECTED) {
        everConnected = true;
      } else if (event == ZMQ_EVENT_DISCONNECTED && everConnected) {
        dead = true;
        deadReason = "lost the connection to wooly-serve at '" + endpoint +
                     "' (its session is gone)";
      }
    }
  }

  /// Waits for the reply to `mySeq`; replies to other calls are dropped.
  /// The wait is a blocking receive (the fewest system calls: a round trip
  /// is mostly their cost); every `kWatchMs` without a reply the socket
  /// monitor is read, so a server that went away ends the wait.
  Status await(uint64_t mySeq, pb::Reply &reply, std::vector<Frame> &frames,
               int timeoutMs) {
    constexpr int kWatchMs = 250;
    auto start = std::chrono::steady_clock::now();
    int current = -2;
    for (;;) {
      int wait = kWatchMs;
      if (timeoutMs >= 0) {
        int spent = int(std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count());
        if (spent >= timeoutMs)
          return makeStatus(Code::Unavailable, "", mySeq);
        wait = std::min(wait, timeoutMs - spent);
      }
      if (wait != current) {
        zmq_setsockopt(socket, ZMQ_RCVTIMEO, &wait, sizeof wait);
        current = wait;
      }
      frames.clear();
      Frame env;
      if (zmq_msg_recv(&env.msg, socket, 0) < 0) {
        if (zmq_errno() != EAGAIN && zmq_errno() != EINTR)
          return makeStatus(Code::Unavailable, std::string("receive: ") +
                                                   zmq_strerror(zmq_errno()));
        if (connectionLost())
          return makeStatus(Code::Unavailable, deadReason, mySeq);
        continue;
      }
      bool more = zmq_msg_more(&env.msg);
      while (more) {
        Frame f;
        if (zmq_msg_recv(&f.msg, socket, 0) < 0)
          break;
        more = zmq_msg_more(&f.msg);
        frames.push_back(std::move(f));
      }
      if (!reply.ParseFromArray(env.data(), int(env.size())))
        return makeStatus(Code::Malformed, "unreadable reply from the server",
                          mySeq);
      if (!reply.device_output().empty())
        deviceOutput(reply.device_output());
      if (reply.seq() != mySeq)
        continue;
      // A zero-copy send is complete once the server answered it; wait for
      // ZeroMQ to release the buffer (it does so right after writing it).
      while (zeroCopyDone && !zeroCopyDone->load())
        sched_yield();
      if (reply.has_status() && reply.status().code() != pb::OK)
        return fromProto(reply.status());
      return {};
    }
  }

  /// Between beginGraph and endGraph: the call joins the graph instead of
  /// the batch.
  Status record(pb::Call &&call, bool hasPayload) {
    switch (call.op_case()) {
    case pb::Call::kLaunch:
    case pb::Call::kMemset:
    case pb::Call::kCopyDeviceToDevice:
    case pb::Call::kEventRecord:
    case pb::Call::kStreamWaitEvent:
      if (!hasPayload)
        break;
      [[fallthrough]];
    default:
      return makeStatus(Code::Unsupported,
                        "a graph on the server holds launches, memsets, "
                        "device-to-device copies, event records and stream "
                        "waits only");
    }
    *recorded.add_calls() = std::move(call);
    return {};
  }

  void deviceOutput(const std::string &text) {
    if (options.deviceOutput) {
      options.deviceOutput(text);
      return;
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }

  bool recording = false;
  pb::GraphCreate recorded;

  Options options;
  std::string endpoint;
  void *ctx = nullptr, *socket = nullptr, *monitor = nullptr;
  SessionInfo session;
  pb::Request batch;
  std::vector<Frame> payloads;
  size_t batchBytes = 0;
  uint64_t seq = 0;
  /// The release flag of the last send without a copy (null: none).
  std::shared_ptr<std::atomic<bool>> zeroCopyDone;
  bool everConnected = false;
  bool dead = false;
  std::string deadReason;
};

//===----------------------------------------------------------------------===//
// The API: each call builds its Call and goes through `enqueue` (async) or
// `sync` (a round trip); exceptions end here.
//===----------------------------------------------------------------------===//

namespace {
/// Runs `fn`, turning an escaping exception into an Internal status.
template <typename Fn> Status guarded(Fn &&fn) {
  try {
    return fn();
  } catch (const std::exception &e) {
    return makeStatus(Code::Internal, e.what());
  } catch (...) {
    return makeStatus(Code::Internal, "unknown exception");
  }
}

pb::Dim3 *setDim(pb::Dim3 *d, Dim3 v) {
  d->set_x(v.x);
  d->set_y(v.y);
  d->set_z(v.z);
  return d;
}
} // namespace

Client::Client(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Client::~Client() {
  // Unsent asynchronous work is still the program's work: send it.
  if (impl)
    (void)guarded([&] { return impl->flush(); });
}

std::unique_ptr<Client> Client::connect(const Options &options,
                                        Status &status) {
  std::unique_ptr<Impl> impl;
  status = guarded([&] {
    impl = std::make_unique<Impl>();
    return impl->open(options);
  });
  if (!status.ok())
    return nullptr;
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

const SessionInfo &Client::session() const { return impl->session; }
const std::string &Client::server() const { return impl->endpoint; }
uint64_t Client::lastSeq() const { return impl->seq; }

namespace {
/// A synchronous call: `fill` sets up the Call, `read` reads the reply.
template <typename Fill, typename Read>
Status sync(Client::Impl &impl, Fill &&fill, Read &&read,
            const void *data = nullptr, size_t bytes = 0) {
  return guarded([&] {
    pb::Call call;
    fill(call);
    pb::Reply reply;
    std::vector<Frame> frames;
    Status s = impl.roundTrip(call, data, bytes, reply, frames);
    if (!s.ok())
      return s;
    return read(reply, frames);
  });
}
auto noReply = [](const pb::Reply &, std::vector<Frame> &) { return Status(); };

/// A call that is asynchronous (batched, no reply) or synchronous (a round
/// trip) as the caller asks; `data` travels in a payload frame.
template <typename Fill>
Status syncOrAsync(Client::Impl &impl, bool async, Fill &&fill,
                   const void *data = nullptr, size_t bytes = 0) {
  if (!async)
    return sync(impl, fill, noReply, data, bytes);
  return guarded([&] {
    pb::Call c;
    fill(c);
    return impl.enqueue(std::move(c), data, bytes);
  });
}
} // namespace

Status Client::getDevice(DeviceProperties &out) {
  return sync(
      *impl, [](pb::Call &c) { c.mutable_get_device(); },
      [&](const pb::Reply &r, std::vector<Frame> &) {
        const pb::DeviceProperties &d = r.device();
        out.name = d.name();
        out.backend = d.backend();
        out.smCount = d.sm_count();
        out.totalMemory = d.total_memory();
        out.computeMajor = d.compute_major();
        out.computeMinor = d.compute_minor();
        out.maxThreadsPerBlock = d.max_threads_per_block();
        out.maxBlock = {d.max_block().x(), d.max_block().y(),
                        d.max_block().z()};
        out.maxGrid = {d.max_grid().x(), d.max_grid().y(), d.max_grid().z()};
        out.sharedPerBlock = d.shared_per_block();
        out.warpSize = d.warp_size();
        out.maxThreadsPerSM = d.max_threads_per_sm();
        out.regsPerBlock = d.regs_per_block();
        out.constMemory = d.const_memory();
        out.clockKHz = d.clock_khz();
        out.maxCooperativeBlocks = d.max_cooperative_blocks();
        return Status();
      });
}

Status Client::loadModule(std::string_view ptx, std::string_view name,
                          Module &out) {
  std::string hash = sha256Hex(ptx);
  auto read = [&](const pb::Reply &r, std::vector<Frame> &) {
    const pb::ModuleLoaded &m = r.module();
    out = Module();
    out.handle = m.module();
    for (const pb::KernelLayout &k : m.kernels()) {
      KernelLayout l;
      l.name = k.name();
      l.paramOffsets.assign(k.param_offsets().begin(), k.param_offsets().end());
      l.paramSizes.assign(k.param_sizes().begin(), k.param_sizes().end());
      l.paramBufferSize = k.param_buffer_size();
      out.kernels.push_back(std::move(l));
    }
    for (const pb::ModuleVariable &v : m.variables())
      out.variables.push_back({v.name(), v.size()});
    return Status();
  };
  auto fill = [&](bool withText) {
    return [&, withText](pb::Call &c) {
      pb::ModuleLoad *l = c.mutable_module_load();
      l->set_hash(hash);
      l->set_name(std::string(name));
      if (withText)
        l->set_payload_bytes(ptx.size());
    };
  };
  // The hash first: the text only travels when the server lacks it.
  Status s = sync(*impl, fill(false), read);
  if (s.code != Code::NotFound)
    return s;
  return sync(*impl, fill(true), read, ptx.data(), ptx.size());
}

Status Client::unloadModule(uint64_t module) {
  return sync(
      *impl,
      [&](pb::Call &c) { c.mutable_module_unload()->set_module(module); },
      noReply);
}

Status Client::funcAttributes(uint64_t module, std::string_view kernel,
                              KernelAttributes &out) {
  return sync(
      *impl,
      [&](pb::Call &c) {
        pb::FuncAttributes *f = c.mutable_func_attributes();
        f->set_module(module);
        f->set_kernel(std::string(kernel));
      },
      [&](const pb::Reply &r, std::vector<Frame> &) {
        const pb::KernelAttributes &a = r.attributes();
        out.registers = a.registers();
        out.staticSharedBytes = a.static_shared_bytes();
        out.maxThreadsPerBlock = a.max_threads_per_block();
        out.paramBufferSize = a.param_buffer_size();
        out.localBytes = a.local_bytes();
        return Status();
      });
}

Status Client::occupancy(uint64_t module, std::string_view kernel,
                         uint32_t blockThreads, uint64_t dynamicSharedBytes,
                         uint32_t &blocksPerSM) {
  return sync(
      *impl,
      [&](pb::Call &c) {
        pb::Occupancy *o = c.mutable_occupancy();
        o->set_module(module);
        o->set_kernel(std::string(kernel));
        o->set_block_threads(blockThreads);
        o->set_dynamic_shared_bytes(dynamicSharedBytes);
      },
      [&](const pb::Reply &r, std::vector<Frame> &) {
        blocksPerSM = r.occupancy().active_blocks_per_sm();
        return Status();
      });
}

Status Client::malloc(uint64_t bytes, uint64_t &address) {
  return sync(
      *impl, [&](pb::Call &c) { c.mutable_malloc()->set_bytes(bytes); },
      [&](const pb::Reply &r, std::vector<Frame> &) {
        address = r.allocated().address();
        return Status();
      });
}

Status Client::free(uint64_t address) {
  return sync(
      *impl, [&](pb::Call &c) { c.mutable_free()->set_address(address); },
      noReply);
}

Status Client::memInfo(uint64_t &free, uint64_t &total) {
  return sync(
      *impl, [](pb::Call &c) { c.mutable_mem_info(); },
      [&](const pb::Reply &r, std::vector<Frame> &) {
        free = r.memory().free();
        total = r.memory().total();
        return Status();
      });
}

Status Client::copyToDevice(uint64_t dst, const void *src, uint64_t bytes,
                            uint64_t stream, bool async) {
  auto fill = [&](pb::Call &c) {
    pb::CopyToDevice *m = c.mutable_copy_to_device();
    m->set_dst(dst);
    m->set_payload_bytes(bytes);
    m->set_stream(stream);
    m->set_async(async);
  };
  return syncOrAsync(*impl, async, fill, src, bytes);
}

namespace {
/// Copies a reply's single payload frame to `dst`.
Status readPayload(const pb::Reply &r, std::vector<Frame> &frames, void *dst,
                   uint64_t bytes) {
  if (frames.size() != 1 || frames[0].size() != bytes ||
      r.payload_bytes() != bytes)
    return makeStatus(Code::Malformed,
                      "the server's reply does not carry the " +
                          std::to_string(bytes) + " bytes asked for",
                      r.seq());
  if (bytes)
    std::memcpy(dst, frames[0].data(), bytes);
  return Status();
}
} // namespace

Status Client::copyFromDevice(void *dst, uint64_t src, uint64_t bytes,
                              uint64_t stream) {
  return sync(
      *impl,
      [&](pb::Call &c) {
        pb::CopyFromDevice *m = c.mutable_copy_from_device();
        m->set_src(src);
        m->set_bytes(bytes);
        m->set_stream(stream);
      },
      [&](const pb::Reply &r, std::vector<Frame> &f) {
        return readPayload(r, f, dst, bytes);
      });
}

Status Client::copyDeviceToDevice(uint64_t dst, uint64_t src, uint64_t bytes,
                                  uint64_t stream, bool async) {
  auto fill = [&](pb::Call &c) {
    pb::CopyDeviceToDevice *m = c.mutable_copy_device_to_device();
    m->set_dst(dst);
    m->set_src(src);
    m->set_bytes(bytes);
    m->set_stream(stream);
    m->set_async(async);
  };
  return syncOrAsync(*impl, async, fill);
}

Status Client::memset(uint64_t dst, uint8_t value, uint64_t bytes,
                      uint64_t stream, bool async) {
  auto fill = [&](pb::Call &c) {
    pb::Memset *m = c.mutable_memset();
    m->set_dst(dst);
    m->set_value(value);
    m->set_bytes(bytes);
    m->set_stream(stream);
    m->set_async(async);
  };
  return syncOrAsync(*impl, async, fill);
}

Status Client::copyToSymbol(uint64_t module, std::string_view symbol,
                            const void *src, uint64_t bytes, uint64_t offset,
                            uint64_t stream, bool async) {
  auto fill = [&](pb::Call &c) {
    pb::CopyToSymbol *m = c.mutable_copy_to_symbol();
    m->set_module(module);
    m->set_symbol(std::string(symbol));
    m->set_offset(offset);
    m->set_payload_bytes(bytes);
    m->set_stream(stream);
    m->set_async(async);
  };
  return syncOrAsync(*impl, async, fill, src, bytes);
}

Status Client::copyFromSymbol(void *dst, uint64_t module,
                              std::string_view symbol, uint64_t bytes,
                              uint64_t offset, uint64_t stream) {
  return sync(
      *impl,
      [&](pb::Call &c) {
        pb::CopyFromSymbol *m = c.mutable_copy_from_symbol();
        m->set_module(module);
        m->set_symbol(std::string(symbol));
        m->set_offset(offset);
        m->set_bytes(bytes);
        m->set_stream(stream);
      },
      [&](const pb::Reply &r, std::vector<Frame> &f) {
        return readPayload(r, f, dst, bytes);
      });
}

Status Client::getSymbol(uint64_t module, std::string_view symbol,
                         uint64_t &address, uint64_t &size) {
  return sync(
      *impl,
      [&](pb::Call &c) {
        pb::GetSymbol *m = c.mutable_get_symbol();
        m->set_module(module);
        m->set_symbol(std::string(symbol));
      },
      [&](const pb::Reply &r, std::vector<Frame> &) {
        address = r.symbol().address();
        size = r.symbol().size();
        return Status();
      });
}

Status Client::launch(uint64_t module, std::string_view kernel, Dim3 grid,
                      Dim3 block, uint32_t dynamicSharedBytes,
                      const void *params, size_t paramBytes, uint64_t stream,
                      bool cooperative) {
  return guarded([&] {
    pb::Call c;
    pb::Launch *l = c.mutable_launch();
    l->set_cooperative(cooperative);
    l->set_module(module);
    l->set_kernel(std::string(kernel));
    setDim(l->mutable_grid(), grid);
    setDim(l->mutable_block(), block);
    l->set_dynamic_shared_bytes(dynamicSharedBytes);
    l->set_params(params, paramBytes);
    l->set_stream(stream);
    return impl->enqueue(std::move(c), nullptr, 0);
  });
}

namespace {
auto readHandle(uint64_t &out) {
  return [&out](const pb::Reply &r, std::vector<Frame> &) {
    out = r.handle().handle();
    return Status();
  };
}
} // namespace

Status Client::streamCreate(uint64_t &stream) {
  return sync(
      *impl, [](pb::Call &c) { c.mutable_stream_create(); },
      readHandle(stream));
}

Status Client::streamDestroy(uint64_t stream) {
  return sync(
      *impl,
      [&](pb::Call &c) { c.mutable_stream_destroy()->set_stream(stream); },
      noReply);
}

Status Client::streamSynchronize(uint64_t stream) {
  return sync(
      *impl,
      [&](pb::Call &c) { c.mutable_stream_synchronize()->set_stream(stream); },
      noReply);
}

Status Client::streamQuery(uint64_t stream) {
  return sync(
      *impl, [&](pb::Call &c) { c.mutable_stream_query()->set_stream(stream); },
      noReply);
}

Status Client::streamWaitEvent(uint64_t stream, uint64_t event) {
  return guarded([&] {
    pb::Call c;
    pb::StreamWaitEvent *w = c.mutable_stream_wait_event();
    w->set_stream(stream);
    w->set_event(event);
    return impl->enqueue(std::move(c), nullptr, 0);
  });
}

Status Client::eventCreate(uint64_t &event) {
  return sync(
      *impl, [](pb::Call &c) { c.mutable_event_create(); }, readHandle(event));
}

Status Client::textureCreate(const ResourceDesc &resource,
                             const TextureDesc &texture, bool surface,
                             uint64_t &handle, const TextureExtras &extras) {
  auto fill = [&](pb::Call &c) {
    pb::TextureCreate *m = c.mutable_texture_create();
    pb::TextureResource *r = m->mutable_resource();
    r->set_kind(uint32_t(resource.kind));
    r->set_address(resource.address);
    for (int bits : resource.format.bits)
      r->add_channel_bits(bits);
    r->set_channel_kind(uint32_t(resource.format.kind));
    r->set_width(resource.width);
    r->set_height(resource.height);
    r->set_depth(resource.depth);
    r->set_pitch(resource.pitch);
    r->set_layered(resource.layered);
    r->set_cubemap(resource.cubemap);
    r->set_levels(resource.levels);
    pb::TextureSampling *t = m->mutable_sampling();
    for (AddressMode mode : texture.addressMode)
      t->add_address_mode(uint32_t(mode));
    t->set_filter_mode(uint32_t(texture.filterMode));
    t->set_read_mode(uint32_t(texture.readMode));
    t->set_srgb(texture.sRGB);
    for (float v : texture.borderColor)
      t->add_border_color(v);
    t->set_normalized_coords(texture.normalizedCoords);
    t->set_mipmap_filter_mode(uint32_t(texture.mipmapFilterMode));
    t->set_mipmap_level_bias(texture.mipmapLevelBias);
    t->set_min_mipmap_level_clamp(texture.minMipmapLevelClamp);
    t->set_max_mipmap_level_clamp(texture.maxMipmapLevelClamp);
    t->set_max_anisotropy(extras.maxAnisotropy);
    t->set_seamless_cubemap(extras.seamlessCubemap);
    m->set_surface(surface);
    m->set_resource_view(extras.resourceView);
  };
  return sync(*impl, fill, readHandle(handle));
}

Status Client::textureDestroy(uint64_t handle, bool surface) {
  return sync(
      *impl,
      [&](pb::Call &c) {
        pb::TextureDestroy *m = c.mutable_texture_destroy();
        m->set_handle(handle);
        m->set_surface(surface);
      },
      noReply);
}

Status Client::eventDestroy(uint64_t event) {
  return sync(
      *impl, [&](pb::Call &c) { c.mutable_event_destroy()->set_event(event); },
      noReply);
}

Status Client::eventRecord(uint64_t event, uint64_t stream) {
  return guarded([&] {
    pb::Call c;
    pb::EventRecord *e = c.mutable_event_record();
    e->set_event(event);
    e->set_stream(stream);
    return impl->enqueue(std::move(c), nullptr, 0);
  });
}

Status Client::eventQuery(uint64_t event) {
  return sync(
      *impl, [&](pb::Call &c) { c.mutable_event_query()->set_event(event); },
      noReply);
}

Status Client::eventSynchronize(uint64_t event) {
  return sync(
      *impl,
      [&](pb::Call &c) { c.mutable_event_synchronize()->set_event(event); },
      noReply);
}

Status Client::eventElapsed(uint64_t start, uint64_t end, float &ms) {
  return sync(
      *impl,
      [&](pb::Call &c) {
        pb::EventElapsed *e = c.mutable_event_elapsed();
        e->set_start(start);
        e->set_end(end);
      },
      [&](const pb::Reply &r, std::vector<Frame> &) {
        ms = r.elapsed().ms();
        return Status();
      });
}

Status Client::deviceSynchronize() {
  return sync(
      *impl, [](pb::Call &c) { c.mutable_device_synchronize(); }, noReply);
}

Status Client::setHeapSize(uint64_t bytes) {
  return sync(
      *impl, [&](pb::Call &c) { c.mutable_set_heap_size()->set_bytes(bytes); },
      noReply);
}

Status Client::beginGraph() {
  if (impl->recording)
    return makeStatus(Code::InvalidValue, "a graph is already being recorded");
  impl->recording = true;
  impl->recorded.Clear();
  return {};
}

Status Client::endGraph(uint64_t &graph) {
  if (!impl->recording)
    return makeStatus(Code::InvalidValue, "no graph is being recorded");
  impl->recording = false;
  pb::GraphCreate calls = std::move(impl->recorded);
  impl->recorded.Clear();
  return sync(
      *impl, [&](pb::Call &c) { *c.mutable_graph_create() = std::move(calls); },
      readHandle(graph));
}

void Client::abandonGraph() {
  impl->recording = false;
  impl->recorded.Clear();
}

Status Client::graphLaunch(uint64_t graph, uint64_t stream) {
  return guarded([&] {
    pb::Call c;
    pb::GraphLaunch *g = c.mutable_graph_launch();
    g->set_graph(graph);
    g->set_stream(stream);
    return impl->enqueue(std::move(c), nullptr, 0);
  });
}

Status Client::graphDestroy(uint64_t graph) {
  return sync(
      *impl, [&](pb::Call &c) { c.mutable_graph_destroy()->set_graph(graph); },
      noReply);
}

Status Client::flush() {
  return guarded([&] { return impl->flush(); });
}

Status Client::ping() {
  return sync(
      *impl, [](pb::Call &c) { c.mutable_ping(); }, noReply);
}
