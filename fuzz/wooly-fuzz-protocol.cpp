//===- wooly-fuzz-protocol.cpp - Fuzzes wooly-serve's protocol --*- C++ -*-===//
//
// A real server (include/Wooly/Server/Server.h: the cpu backend, one worker,
// an ipc:// socket in a temporary directory, its log dropped) runs on a
// thread of this process for the whole run. Each input is one client
// connection: a ZeroMQ DEALER socket that sends the input's messages in
// order and then closes (the server tears the session down).
//
// Input format: a sequence of frames, each
//
//   u8 control      bit 0: another frame of the same message follows
//   u16 length      little-endian
//   length bytes    (fewer when the input ends first)
//
// so that a message is an envelope frame (a wooly.v1.Request) and its
// payload frames, as proto/wooly.proto describes; fuzz/make-seeds.cpp
// writes well-formed calls in this format (fuzz/corpus/protocol).
//
// Two things an input cannot spell are filled in before an envelope that
// parses as a Request is sent (others go out byte for byte):
//  - Device addresses are host pointers that change from run to run. An
//    address field whose top 16 bits are 0xA110 (kAddressTag) names an
//    allocation this connection made: bits 32-47 pick the allocation
//    (modulo their number, in the order the Malloc replies came) and the
//    low 32 bits are added to its address. Free.address, the copies' and
//    Memset's dst and src, TextureCreate's resource address, and every
//    8-byte-aligned word of a Launch's params are resolved this way (in a
//    GraphCreate's calls too).
//  - A ModuleLoad with its text in a payload frame but an empty hash gets
//    the text's SHA-256, so that mutated PTX reaches the compiler.
//
// After each message a Ping follows. The harness reads replies until the
// Ping's has come and, when the message's last call is synchronous, that
// call's too (proto/wooly.proto: it gets exactly one reply, perhaps after
// its stream's work); meanwhile it keeps the addresses Malloc replies give.
// Whatever it was sent, the server must answer within kAnswerTimeoutMs: a
// hang or a dead server aborts, which libFuzzer reports. A crash or a
// sanitizer report in the server's threads is a bug as well.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Server/Server.h"

#include "wooly.pb.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

#include <google/protobuf/stubs/logging.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace pb = wooly::v1;

namespace {

/// The top 16 bits of an address field that names an allocation.
constexpr uint64_t kAddressTag = 0xA110;
/// How long the server may take to answer a message (a synchronous call
/// may wait for a kernel's compilation and run; the watchdog stops kernels
/// after 1 s).
constexpr int kAnswerTimeoutMs = 20000;
/// Messages read from one input at most (the rest is ignored).
constexpr size_t kMaxMessages = 64;
/// The sequence number of the Ping that follows each message.
constexpr uint64_t kPingSeq = 0xF022F022F022F022ull;

using Message = std::vector<std::string>;

/// The server, its thread and the client side's ZeroMQ context, started by
/// the first input (harness()).
struct Harness {
  std::string dir, endpoint;
  std::unique_ptr<wooly::server::Server> server;
  std::thread thread;
  void *zctx = nullptr;

  Harness() {
    // Protobuf logs every string field with invalid UTF-8 that the server
    // refuses; that is an answer, not news (and a reply of the server's
    // that a client cannot parse fails below).
    google::protobuf::SetLogHandler(nullptr);
    char tmpl[] = "/tmp/wooly-fuzz-protocol-XXXXXX";
    if (!mkdtemp(tmpl))
      fail("mkdtemp failed");
    dir = tmpl;
    endpoint = "ipc://" + dir + "/serve.sock";
    wooly::server::ServerOptions o;
    o.listen = {endpoint};
    o.backend = "cpu";
    o.cpuWorkers = 1;
    o.executors = 1;
    o.compileThreads = 1;
    o.deviceMemory = 64ull << 20;
    o.maxMessageBytes = 1 << 20;
    o.kernelTimeoutMs = 1000;
    o.drainTimeoutMs = 1000;
    o.log = [](const std::string &) {};
    o.printfSink = [](const std::string &) {};
    auto created = wooly::server::Server::create(std::move(o));
    if (!created)
      fail(("cannot start the server: " + llvm::toString(created.takeError()))
               .c_str());
    server = std::move(*created);
    thread = std::thread([this] {
      if (llvm::Error e = server->run())
        fail(("the server stopped: " + llvm::toString(std::move(e))).c_str());
    });
    zctx = zmq_ctx_new();
  }

  /// Stops the server (it drains) and waits for its threads.
  ~Harness() {
    server->requestStop();
    thread.join();
    server.reset();
    zmq_ctx_term(zctx);
    std::remove((dir + "/serve.sock").c_str());
    rmdir(dir.c_str());
  }

  [[noreturn]] static void fail(const char *what) {
    std::fprintf(stderr, "wooly-fuzz-protocol: %s\n", what);
    std::abort();
  }
};

/// The harness, owned by a thread_local of the thread that runs the inputs.
/// libFuzzer ends the process with exit() from that thread while the
/// server's threads still work; thread_local objects of the exiting thread
/// are destroyed before any object of static storage duration (C++
/// [basic.start.term]), so the server stops while LLVM's and MLIR's static
/// objects still exist.
Harness &harness() {
  thread_local std::unique_ptr<Harness> h = std::make_unique<Harness>();
  return *h;
}

/// Whether the server replies to `call`: all calls but the asynchronous
/// ones (launches, event records, stream waits, graph launches, copies and
/// memsets marked async).
bool isSynchronous(const pb::Call &c) {
  switch (c.op_case()) {
  case pb::Call::kCopyToDevice:
    return !c.copy_to_device().async();
  case pb::Call::kCopyToSymbol:
    return !c.copy_to_symbol().async();
  case pb::Call::kCopyDeviceToDevice:
    return !c.copy_device_to_device().async();
  case pb::Call::kMemset:
    return !c.memset().async();
  case pb::Call::kLaunch:
  case pb::Call::kEventRecord:
  case pb::Call::kStreamWaitEvent:
  case pb::Call::kGraphLaunch:
    return false;
  default:
    return true;
  }
}

/// Splits an input into messages (see the file comment).
std::vector<Message> splitInput(const uint8_t *data, size_t size) {
  std::vector<Message> messages;
  bool startNew = true;
  for (size_t pos = 0; pos < size;) {
    uint8_t control = data[pos++];
    size_t length = 0;
    if (size - pos >= 2)
      length = data[pos] | size_t(data[pos + 1]) << 8;
    pos += std::min<size_t>(2, size - pos);
    length = std::min(length, size - pos);
    if (startNew) {
      if (messages.size() == kMaxMessages)
        break;
      messages.emplace_back();
    }
    messages.back().emplace_back(reinterpret_cast<const char *>(data + pos),
                                 length);
    pos += length;
    startNew = !(control & 1);
  }
  return messages;
}

/// Resolves a tagged address against `allocations`; true if it changed it.
bool resolve(uint64_t &value, const std::vector<uint64_t> &allocations) {
  if (value >> 48 != kAddressTag || allocations.empty())
    return false;
  uint64_t index = (value >> 32 & 0xFFFF) % allocations.size();
  value = allocations[index] + (value & 0xFFFFFFFF);
  return true;
}

/// Resolves the tagged addresses of `call`; true if any changed.
bool resolveCall(pb::Call &call, const std::vector<uint64_t> &allocations) {
  auto field = [&](uint64_t value, auto set) {
    if (!resolve(value, allocations))
      return false;
    set(value);
    return true;
  };
  switch (call.op_case()) {
  case pb::Call::kFree: {
    pb::Free *f = call.mutable_free();
    return field(f->address(), [&](uint64_t v) { f->set_address(v); });
  }
  case pb::Call::kCopyToDevice: {
    pb::CopyToDevice *c = call.mutable_copy_to_device();
    return field(c->dst(), [&](uint64_t v) { c->set_dst(v); });
  }
  case pb::Call::kCopyFromDevice: {
    pb::CopyFromDevice *c = call.mutable_copy_from_device();
    return field(c->src(), [&](uint64_t v) { c->set_src(v); });
  }
  case pb::Call::kCopyDeviceToDevice: {
    pb::CopyDeviceToDevice *c = call.mutable_copy_device_to_device();
    bool dst = field(c->dst(), [&](uint64_t v) { c->set_dst(v); });
    return field(c->src(), [&](uint64_t v) { c->set_src(v); }) || dst;
  }
  case pb::Call::kMemset: {
    pb::Memset *m = call.mutable_memset();
    return field(m->dst(), [&](uint64_t v) { m->set_dst(v); });
  }
  case pb::Call::kLaunch: {
    std::string *params = call.mutable_launch()->mutable_params();
    bool changed = false;
    for (size_t at = 0; at + 8 <= params->size(); at += 8) {
      uint64_t word;
      std::memcpy(&word, params->data() + at, 8);
      if (resolve(word, allocations)) {
        std::memcpy(&(*params)[at], &word, 8);
        changed = true;
      }
    }
    return changed;
  }
  case pb::Call::kTextureCreate: {
    pb::TextureResource *r = call.mutable_texture_create()->mutable_resource();
    return field(r->address(), [&](uint64_t v) { r->set_address(v); });
  }
  case pb::Call::kGraphCreate: {
    bool changed = false;
    for (pb::Call &c : *call.mutable_graph_create()->mutable_calls())
      changed |= resolveCall(c, allocations);
    return changed;
  }
  default:
    return false;
  }
}

/// Sends `message` on `socket`, its envelope prepared: tagged addresses
/// resolved, empty ModuleLoad hashes filled in. Returns the sequence number
/// of the reply to wait for, if any.
std::optional<uint64_t> send(void *socket, Message &message,
                             const std::vector<uint64_t> &allocations) {
  pb::Request request;
  std::optional<uint64_t> awaited;
  if (request.ParseFromString(message[0])) {
    const pb::Call *last =
        request.calls_size() ? &*request.calls().rbegin() : nullptr;
    // (A call numbered like the Ping is answered once the Ping is.)
    if (last && isSynchronous(*last) && last->seq() != kPingSeq)
      awaited = last->seq();
    bool changed = false;
    // Payload frames go to the calls that claim one, in order (as the
    // server hands them out).
    size_t payload = 1;
    for (pb::Call &c : *request.mutable_calls()) {
      changed |= resolveCall(c, allocations);
      bool claims = c.has_copy_to_device() || c.has_copy_to_symbol() ||
                    (c.has_module_load() && c.module_load().payload_bytes());
      if (!claims || payload == message.size())
        continue;
      const std::string &text = message[payload++];
      if (c.has_module_load() && c.module_load().hash().empty()) {
        c.mutable_module_load()->set_hash(
            llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(text)),
                        /*LowerCase=*/true));
        changed = true;
      }
    }
    if (changed)
      message[0] = request.SerializeAsString();
  }
  for (size_t i = 0; i < message.size(); ++i)
    zmq_send(socket, message[i].data(), message[i].size(),
             i + 1 < message.size() ? ZMQ_SNDMORE : 0);
  return awaited;
}

/// Sends a Ping and reads replies until its own and the `awaited` one have
/// come, keeping the addresses that Malloc replies give (and printing each
/// reply when `trace`). Aborts after kAnswerTimeoutMs.
void awaitReplies(void *socket, std::optional<uint64_t> awaited,
                  std::vector<uint64_t> &allocations, bool trace) {
  pb::Request ping;
  ping.set_version(pb::PROTOCOL_VERSION_CURRENT);
  pb::Call *call = ping.add_calls();
  call->set_seq(kPingSeq);
  call->mutable_ping();
  std::string envelope = ping.SerializeAsString();
  zmq_send(socket, envelope.data(), envelope.size(), 0);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(kAnswerTimeoutMs);
  zmq_pollitem_t item = {socket, 0, ZMQ_POLLIN, 0};
  for (bool pinged = false; !pinged || awaited;) {
    // libFuzzer's timer signal (-timeout) interrupts the wait: go on.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    int ready = zmq_poll(&item, 1, std::max<long>(0, left.count()));
    if (ready < 0 && zmq_errno() == EINTR)
      continue;
    if (ready <= 0)
      Harness::fail(pinged ? "the server did not answer a call in time"
                           : "the server did not answer a Ping in time");
    // A reply: its envelope, then its payload frames (dropped).
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    if (zmq_msg_recv(&frame, socket, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&frame);
      continue;
    }
    pb::Reply reply;
    bool parsed =
        reply.ParseFromArray(zmq_msg_data(&frame), int(zmq_msg_size(&frame)));
    while (zmq_msg_more(&frame))
      zmq_msg_recv(&frame, socket, 0);
    zmq_msg_close(&frame);
    if (!parsed)
      Harness::fail("the server sent a reply that is not a wooly.v1.Reply");
    if (trace && reply.seq() != kPingSeq)
      std::fprintf(stderr, "reply %llu: %s %s\n",
                   (unsigned long long)reply.seq(),
                   pb::ErrorCode_Name(reply.status().code()).c_str(),
                   reply.status().message().c_str());
    if (reply.has_allocated())
      allocations.push_back(reply.allocated().address());
    if (reply.seq() == kPingSeq)
      pinged = true;
    else if (awaited && reply.seq() == *awaited)
      awaited.reset();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Harness &h = harness();
  std::vector<Message> messages = splitInput(data, size);
  if (messages.empty())
    return 0;
  void *socket = zmq_socket(h.zctx, ZMQ_DEALER);
  int zero = 0;
  zmq_setsockopt(socket, ZMQ_LINGER, &zero, sizeof zero);
  zmq_connect(socket, h.endpoint.c_str());
  // WOOLY_FUZZ_TRACE=1 prints the replies (to see what an input does).
  static const bool trace = std::getenv("WOOLY_FUZZ_TRACE");
  std::vector<uint64_t> allocations;
  for (Message &m : messages) {
    std::optional<uint64_t> awaited = send(socket, m, allocations);
    awaitReplies(socket, awaited, allocations, trace);
  }
  zmq_close(socket);
  return 0;
}
