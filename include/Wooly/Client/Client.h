//===- Client.h - The C++ client of wooly-serve -----------------*- C++ -*-===//
//
// A connection to wooly-serve and the session it opens: the calls a CUDA
// runtime and driver need (memory, modules, launches, streams, events),
// over the protocol of proto/wooly.proto.
//
//  - No LLVM or MLIR and no Protobuf in this header; no exception crosses
//    this API: every call returns a `Status`.
//  - CUDA's stream semantics: `launch`, and the copies, memsets and event
//    records called with `async = true`, are fire-and-forget. They are
//    batched into one message until the next synchronous call (or until
//    the batch is full) and run in order per stream on the server. The
//    error of an asynchronous call is returned by the next synchronising
//    call of its stream (streamSynchronize, a device-to-host copy on it) or
//    of the device (deviceSynchronize), naming the call's sequence number.
//  - A `Client` is not thread-safe: use one from one thread at a time.
//
// The server is found through the environment: WOOLY_SERVER (default:
// `defaultServerAddress()`), WOOLY_TENANT (default: the user name) and
// WOOLY_TOKEN (default: empty).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_CLIENT_CLIENT_H
#define WOOLY_CLIENT_CLIENT_H

#include "Wooly/Runtime/Texture.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wooly::client {

/// The error codes of the protocol (wooly.v1.ErrorCode, same values).
enum class Code : int {
  Ok = 0,
  InvalidValue = 1,
  OutOfMemory = 2,
  InvalidHandle = 3,
  InvalidAddress = 4,
  NotFound = 5,
  LaunchFailure = 6,
  CompileError = 7,
  NotReady = 8,
  VersionMismatch = 9,
  Unauthenticated = 10,
  NoSession = 11,
  Malformed = 12,
  Unsupported = 13,
  LimitExceeded = 14,
  Internal = 15,
  /// A device-side assert failed (sticky).
  DeviceAssert = 16,
  /// A misaligned load, store or atomic (sticky).
  MisalignedAddress = 17,
  /// A kernel accessed memory outside what it may reach (sticky).
  IllegalAddress = 18,
  /// The server's watchdog stopped a kernel past its time budget (sticky).
  LaunchTimeout = 19,
  /// The server's device context is lost for every tenant (sticky; see
  /// DEVICE_LOST in proto/wooly.proto).
  DeviceLost = 20,
  /// Client side: the server cannot be reached or the connection was lost.
  Unavailable = 100,
};

/// The name of a code ("OUT_OF_MEMORY").
const char *codeName(Code code);

/// The result of a call.
struct Status {
  Code code = Code::Ok;
  std::string message;
  /// The sequence number of the call the error belongs to (for a deferred
  /// error, the asynchronous call that failed); 0 when not known.
  uint64_t seq = 0;
  /// The session is unusable after a sticky error (a kernel fault).
  bool sticky = false;

  bool ok() const { return code == Code::Ok; }
  explicit operator bool() const { return !ok(); }
  /// "OUT_OF_MEMORY: ... (call 12)".
  std::string str() const;
};

/// How `Client::connect` finds and greets the server.
struct Options {
  /// ZeroMQ endpoint (`ipc://PATH`, `tcp://HOST:PORT`); empty: WOOLY_SERVER,
  /// else `defaultServerAddress()`.
  std::string server;
  /// Empty: WOOLY_TENANT, else the user name.
  std::string tenant;
  /// Empty: WOOLY_TOKEN.
  std::string token;
  /// The server's CURVE public key (Z85, 40 characters; `wooly-serve
  /// --gen-curve-keys` writes it to PREFIX.pub) for a server that encrypts
  /// its tcp:// endpoints. Empty: WOOLY_SERVER_KEY, else none (plain).
  std::string serverKey;
  /// For the server's logs (empty: "pid N").
  std::string clientName;
  /// How long `connect` waits for the server's answer (WOOLY_CONNECT_TIMEOUT_MS
  /// overrides it).
  int connectTimeoutMs = 5000;
  /// Asynchronous calls batched before the batch is sent on its own.
  size_t maxBatchCalls = 256;
  /// Bytes of asynchronous copy data batched before the batch is sent.
  size_t maxBatchBytes = 1 << 20;
  /// Receives what the session's kernels print (device printf), in order,
  /// before the call whose reply carried it returns. Null: written to this
  /// process's stdout, as CUDA's driver does.
  std::function<void(std::string_view)> deviceOutput;
};

/// The per-user default endpoint: `ipc:///tmp/wooly-<uid>.sock`.
std::string defaultServerAddress();

/// The server's device (wooly.v1.DeviceProperties).
struct DeviceProperties {
  std::string name, backend;
  uint32_t smCount = 0;
  uint64_t totalMemory = 0;
  uint32_t computeMajor = 0, computeMinor = 0;
  uint32_t maxThreadsPerBlock = 0;
  std::array<uint32_t, 3> maxBlock{}, maxGrid{};
  uint64_t sharedPerBlock = 0;
  uint32_t warpSize = 32, maxThreadsPerSM = 0, regsPerBlock = 0;
  uint64_t constMemory = 0;
  uint32_t clockKHz = 0;
  /// Cooperative launches: at most this many blocks (0: none).
  uint32_t maxCooperativeBlocks = 0;
};

/// The session the server opened (wooly.v1.SessionInfo).
struct SessionInfo {
  uint64_t id = 0;
  std::string tenant, priorityClass;
  uint32_t weight = 1;
  double slaMs = 0;
  uint64_t quotaBytes = 0;
};

/// A kernel's parameter buffer layout.
struct KernelLayout {
  std::string name;
  std::vector<uint64_t> paramOffsets, paramSizes;
  uint64_t paramBufferSize = 0;
};

/// A module variable (`__device__`, `__constant__`).
struct ModuleVariable {
  std::string name;
  uint64_t size = 0;
};

/// A loaded module.
struct Module {
  uint64_t handle = 0;
  std::vector<KernelLayout> kernels;
  std::vector<ModuleVariable> variables;

  /// The kernel named `name`, or null.
  const KernelLayout *findKernel(std::string_view name) const;
};

struct KernelAttributes {
  uint32_t registers = 0;
  uint64_t staticSharedBytes = 0;
  uint32_t maxThreadsPerBlock = 0;
  uint64_t paramBufferSize = 0;
  uint64_t localBytes = 0;
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

/// What a program may ask of a texture object beyond TextureDesc
/// (Client::textureCreate): sent so that the server refuses it, as not
/// supported yet.
struct TextureExtras {
  unsigned maxAnisotropy = 0;
  bool seamlessCubemap = false;
  bool resourceView = false;
};

/// A connection and its session.
class Client {
public:
  /// Connects to the server and opens a session. On failure returns null
  /// and sets `status` (Unavailable when no server answers in time,
  /// Unauthenticated, VersionMismatch, ...).
  static std::unique_ptr<Client> connect(const Options &options,
                                         Status &status);
  ~Client();
  Client(const Client &) = delete;
  Client &operator=(const Client &) = delete;

  const SessionInfo &session() const;
  /// The endpoint this client is connected to.
  const std::string &server() const;

  Status getDevice(DeviceProperties &out);

  /// Loads a module from PTX text: sends its hash first and the text only
  /// when the server does not have it yet.
  Status loadModule(std::string_view ptx, std::string_view name, Module &out);
  Status unloadModule(uint64_t module);
  Status funcAttributes(uint64_t module, std::string_view kernel,
                        KernelAttributes &out);
  Status occupancy(uint64_t module, std::string_view kernel,
                   uint32_t blockThreads, uint64_t dynamicSharedBytes,
                   uint32_t &blocksPerSM);

  /// Allocates zero-filled device memory within the tenant's quota.
  Status malloc(uint64_t bytes, uint64_t &address);
  /// Frees an allocation once the session's earlier work is done.
  Status free(uint64_t address);
  /// The tenant's view: its quota and what is left of it.
  Status memInfo(uint64_t &free, uint64_t &total);

  /// Host to device. Synchronous: returns once the server has the data and
  /// has checked the range; asynchronous: the data is copied now, errors
  /// come at the next synchronisation.
  Status copyToDevice(uint64_t dst, const void *src, uint64_t bytes,
                      uint64_t stream = 0, bool async = false);
  /// Device to host, in order on `stream`; always a round trip.
  Status copyFromDevice(void *dst, uint64_t src, uint64_t bytes,
                        uint64_t stream = 0);
  Status copyDeviceToDevice(uint64_t dst, uint64_t src, uint64_t bytes,
                            uint64_t stream = 0, bool async = false);
  Status memset(uint64_t dst, uint8_t value, uint64_t bytes,
                uint64_t stream = 0, bool async = false);
  Status copyToSymbol(uint64_t module, std::string_view symbol, const void *src,
                      uint64_t bytes, uint64_t offset = 0, uint64_t stream = 0,
                      bool async = false);
  Status copyFromSymbol(void *dst, uint64_t module, std::string_view symbol,
                        uint64_t bytes, uint64_t offset = 0,
                        uint64_t stream = 0);
  Status getSymbol(uint64_t module, std::string_view symbol, uint64_t &address,
                   uint64_t &size);

  /// Launches a kernel (asynchronous). `params` is the CUDA parameter
  /// buffer of `paramBytes` bytes. `cooperative`: all blocks at once, with
  /// grid-wide synchronisation (cudaLaunchCooperativeKernel).
  Status launch(uint64_t module, std::string_view kernel, Dim3 grid, Dim3 block,
                uint32_t dynamicSharedBytes, const void *params,
                size_t paramBytes, uint64_t stream = 0,
                bool cooperative = false);

  Status streamCreate(uint64_t &stream);
  Status streamDestroy(uint64_t stream);
  Status streamSynchronize(uint64_t stream);
  /// Ok when the stream's work is done, NotReady otherwise.
  Status streamQuery(uint64_t stream);
  Status streamWaitEvent(uint64_t stream, uint64_t event);

  /// Creates a texture object over `resource` (a CUDA array: an
  /// allocation laid out as Wooly/Runtime/Texture.h says), or with
  /// `surface` a surface object over an array (`texture` unused); `handle`
  /// is what the session's kernels take as their cudaTextureObject_t /
  /// cudaSurfaceObject_t.
  Status textureCreate(const ResourceDesc &resource, const TextureDesc &texture,
                       bool surface, uint64_t &handle,
                       const TextureExtras &extras = {});
  /// Destroys one (once the session's earlier work is done).
  Status textureDestroy(uint64_t handle, bool surface);

  Status eventCreate(uint64_t &event);
  Status eventDestroy(uint64_t event);
  /// Asynchronous.
  Status eventRecord(uint64_t event, uint64_t stream = 0);
  Status eventQuery(uint64_t event);
  Status eventSynchronize(uint64_t event);
  Status eventElapsed(uint64_t start, uint64_t end, float &ms);

  Status deviceSynchronize();
  /// Sets the session's device heap size (cudaLimitMallocHeapSize): charged
  /// to the tenant's quota; INVALID_VALUE once a kernel allocated from the
  /// heap, UNSUPPORTED where the backend's heap is not per session.
  Status setHeapSize(uint64_t bytes);

  /// CUDA graphs kept on the server. After `beginGraph`, the asynchronous
  /// calls `launch`, `memset`/`copyDeviceToDevice` with `async`,
  /// `eventRecord` and `streamWaitEvent` are recorded instead of sent (their
  /// stream is ignored; other asynchronous calls are Unsupported, and
  /// synchronous calls must not be made) until `endGraph` stores them on the
  /// server as one graph. `graphLaunch` (asynchronous) replays it on a
  /// stream: one small call, whatever the graph's size.
  Status beginGraph();
  Status endGraph(uint64_t &graph);
  /// Drops what was recorded since `beginGraph`.
  void abandonGraph();
  Status graphLaunch(uint64_t graph, uint64_t stream = 0);
  Status graphDestroy(uint64_t graph);

  /// Sends the batched asynchronous calls now.
  Status flush();
  /// A round trip that does nothing (for benchmarks and liveness).
  Status ping();

  /// Calls made so far (the last sequence number).
  uint64_t lastSeq() const;

  class Impl;

private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace wooly::client

#endif // WOOLY_CLIENT_CLIENT_H
