//===- Server.cpp - wooly-serve: many tenants, one device -------*- C++ -*-===//
//
// How a request flows:
//
//  - ONE I/O thread owns all state (sessions, modules, streams, events, the
//    scheduler). It receives every message from the ROUTER socket,
//    validates each call against the caller's session before it touches
//    anything, and turns the calls that do device work into `Op`s.
//  - An Op waits for its dependencies: the previous op of its stream (and
//    CUDA's legacy default stream: an op on stream 0 waits for every stream
//    of the session, an op on another stream for stream 0), an event it
//    waits for, its kernel's compilation. Once they are done it goes to the
//    Scheduler (the dispatch seam), or completes at once when it does no
//    device work (event records, synchronisation markers).
//  - Executor threads run the ops the scheduler hands out (launches,
//    copies, memsets) on the shared Backend; compile threads import,
//    compile (through the shared CompileCache) and load kernels. Both post
//    their results back to the I/O thread through a queue, and wake it with
//    an empty message into the ROUTER itself (an inproc DEALER per thread),
//    so that the I/O thread waits in one blocking receive - the fewest
//    system calls per request. No other thread touches the socket or the
//    state.
//  - Asynchronous calls get no reply; their errors are kept per stream
//    (first error wins) and reported by the next synchronising call of the
//    stream or of the device. A kernel fault is sticky: every later call of
//    the session fails with it, as CUDA does after a fault - but only for
//    that session: the other tenants never see it.
//  - Kernels compile lazily, at their first launch, and only the kernels
//    launched: a module of 26 kernels of which 5 are launched compiles 5.
//    Each compiled kernel extends its session's backend module
//    (Backend::extendModule), so the module's `.global`/`.const` variables
//    stay one instance per session; a copy to a variable before any launch
//    compiles the variables alone. A backend that loads modules whole
//    compiles the module whole at its first use.
//  - Coalescing: the scheduler may hand out small launches of several
//    tenants as one dispatch (Dispatch::fused). Their kernels, merged from
//    the tenants' modules (mergeForCoalescing) and compiled through
//    wooly-coalesce once per kernel set on a compile thread, then run as
//    one launch whose parts are fault domains: a fault ends only its own
//    part and reaches only its own tenant. Until the fused kernel is ready
//    (or where it cannot be compiled) the parts run one after another.
//  - Containment: kernels are compiled through wooly-contain, so that each
//    launch has a status record. The watchdog: loops poll it, and the I/O
//    thread sets the status of a launch past --kernel-timeout-ms; the
//    launch fails for its tenant alone. On a GPU (cuda) every module is
//    compiled for the device's own target with traps, failed assertions
//    and misaligned accesses contained too: they set the status and end
//    the launch, and the executor reports them to the kernel's tenant,
//    instead of ending the device context for everyone. The cpu backend's
//    runtime contains those by itself, per fault domain.
//  - Memory: every byte of device memory goes through the MemoryManager
//    (include/Wooly/Server/MemoryManager.h). An op that does device work
//    acquires its tenant's memory when it becomes ready (waiting in
//    `memoryWaiters` while it is moved back on the swap thread, or while
//    others' work keeps it out) and releases it when it completes; a
//    tenant with none acquired is idle, and its memory may move out to
//    make room. The swaps for acquisitions, mallocs (whose reply waits in
//    `pendingMallocs`), copies on write (the op waits in `memoryWaiters`)
//    and module variables (the load waits in `pendingModuleLoads`) run on
//    the swap thread, so the other tenants' work goes on meanwhile; the
//    evictions for the server's own memory still run on the I/O thread.
//  - A client that dies is noticed through the socket monitor (the
//    connection's file descriptor closes): its session is torn down, queued
//    work dropped, running work finished, then its memory freed and its
//    modules unloaded.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Server/Server.h"
#include "Wooly/Compiler/Compiler.h"
#include "Wooly/Compiler/LaunchParams.h"
#include "Wooly/Dialect/Wooly/Analysis/KernelAnalysis.h"
#include "Wooly/Runtime/Backend.h"
#include "Wooly/Runtime/CoalesceTable.h"
#include "Wooly/Runtime/Launch.h"
#include "Wooly/Server/MemoryManager.h"
#include "Wooly/Server/Scheduler.h"
#include "Wooly/Server/Tenants.h"
#include "Wooly/Server/Trace.h"

#include "Metrics.h"
#include "wooly.pb.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <zmq.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace wooly;
using namespace wooly::server;
namespace pb = wooly::v1;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint32_t kVersion = pb::PROTOCOL_VERSION_CURRENT;

/// The ROUTER's inproc endpoint for the server's own worker threads, and
/// the routing-id prefix of their wake-up messages.
constexpr const char *kWakeEndpoint = "inproc://wooly-serve-wake";
constexpr const char *kWakePrefix = "\x01wooly-wake-";

/// The memory of the virtual device the `cpu` backend presents when
/// --device-memory does not say (the rest of that device: Impl::start).
constexpr uint64_t kCpuDefaultMemory = 4ull << 30;

/// A zmq_msg_t that closes itself.
struct Frame {
  zmq_msg_t msg;
  Frame() { zmq_msg_init(&msg); }
  ~Frame() { zmq_msg_close(&msg); }
  Frame(const Frame &) = delete;
  Frame &operator=(const Frame &) = delete;
  Frame(Frame &&o) noexcept {
    zmq_msg_init(&msg);
    zmq_msg_move(&msg, &o.msg);
  }
  Frame &operator=(Frame &&o) noexcept {
    zmq_msg_move(&msg, &o.msg);
    return *this;
  }
  const char *data() { return static_cast<const char *>(zmq_msg_data(&msg)); }
  size_t size() { return zmq_msg_size(&msg); }
  std::string str() { return std::string(data(), size()); }
};

pb::Status status(pb::ErrorCode code, std::string message, uint64_t seq,
                  bool sticky = false) {
  pb::Status s;
  s.set_code(code);
  s.set_message(std::move(message));
  s.set_seq(seq);
  s.set_sticky(sticky);
  return s;
}

/// The protocol's code of a kernel fault of kind `kind`.
pb::ErrorCode faultCode(wooly::FaultKind kind) {
  switch (kind) {
  case wooly::FaultKind::Assert:
    return pb::DEVICE_ASSERT;
  case wooly::FaultKind::MisalignedAddress:
    return pb::MISALIGNED_ADDRESS;
  case wooly::FaultKind::IllegalAddress:
    return pb::ILLEGAL_ADDRESS;
  case wooly::FaultKind::Launch:
    break;
  }
  return pb::LAUNCH_FAILURE;
}

/// The status of a failed launch (`fault`: sticky, LAUNCH_FAILURE or the
/// code of its KernelFaultError's kind) or other device work (INTERNAL).
pb::Status faultStatus(llvm::Error e, uint64_t seq, bool fault) {
  pb::ErrorCode code = fault ? pb::LAUNCH_FAILURE : pb::INTERNAL;
  std::string message;
  llvm::handleAllErrors(
      std::move(e),
      [&](const wooly::KernelFaultError &k) {
        code = faultCode(k.kind());
        message = k.message();
      },
      [&](const llvm::ErrorInfoBase &b) { message = b.message(); });
  return status(code, std::move(message), seq, fault);
}

/// Compares a token in time that depends only on the lengths.
bool sameSecret(const std::string &a, const std::string &b) {
  if (a.size() != b.size())
    return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string sha256Hex(llvm::StringRef text) {
  auto digest = llvm::SHA256::hash(llvm::arrayRefFromStringRef(text));
  return llvm::toHex(digest, /*LowerCase=*/true);
}

std::string bytesText(uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0)
    return std::to_string(b >> 30) + " GiB";
  if (b >= (1ull << 20) && b % (1ull << 20) == 0)
    return std::to_string(b >> 20) + " MiB";
  return std::to_string(b) + " bytes";
}

/// Buffers for device-to-host replies, reused: on first touch a fresh large
/// allocation costs a page fault per 4 KiB, more than the copy into it.
/// ZeroMQ gives a buffer back (from its I/O thread) once it is sent.
class BufferPool {
public:
  struct Buffer {
    char *data;
    size_t capacity;
    BufferPool *pool;
  };
  struct Giver {
    void operator()(Buffer *b) const { b->pool->give(b); }
  };
  using Ptr = std::unique_ptr<Buffer, Giver>;

  ~BufferPool() {
    for (auto &[cap, b] : free)
      release(b);
  }
  /// A buffer of at least `bytes` (a power of two from 64 KiB on).
  Ptr take(size_t bytes) {
    size_t cap = std::max<size_t>(bytes, 1);
    if (cap >= kMinPooled)
      cap = llvm::PowerOf2Ceil(cap);
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = free.find(cap);
      if (it != free.end()) {
        Buffer *b = it->second;
        free.erase(it);
        pooled -= cap;
        return Ptr(b);
      }
    }
    return Ptr(new Buffer{new char[cap], cap, this});
  }
  /// Back to the pool, or freed past the pool's cap.
  void give(Buffer *b) {
    if (b->capacity >= kMinPooled) {
      std::lock_guard<std::mutex> lock(mutex);
      if (pooled + b->capacity <= kMaxPooled) {
        pooled += b->capacity;
        free.emplace(b->capacity, b);
        return;
      }
    }
    release(b);
  }

private:
  static void release(Buffer *b) {
    delete[] b->data;
    delete b;
  }
  static constexpr size_t kMinPooled = 64 << 10, kMaxPooled = 512 << 20;
  std::mutex mutex;
  std::multimap<size_t, Buffer *> free;
  size_t pooled = 0;
};

struct Session;
struct SessionModule;

/// The PTX text of a module, shared by every session that loads it.
struct ModuleImage {
  std::string hash, name, text;
  /// Whether every kernel can be compiled through wooly-contain (it has no
  /// indirect calls). Decided for the whole module: its parts (kernel by
  /// kernel) must agree on the signatures of their device functions.
  bool containable() const {
    return text.find(".callprototype") == std::string::npos &&
           text.find(".calltargets") == std::string::npos;
  }
  enum class State { Inspecting, Ready, Failed } state = State::Inspecting;
  ModuleLayout layout;
  std::string error;
  /// Loads waiting for the inspection: (session id, seq).
  std::vector<std::pair<uint64_t, uint64_t>> waiting;
  unsigned users = 0;
};

/// A compiled and loaded kernel set of one session's module: one kernel,
/// or the whole module ("").
struct KernelSlot {
  enum class State { None, Compiling, Ready, Failed } state = State::None;
  std::shared_ptr<const CompiledModule> compiled;
  std::string error;
  /// Compiled through wooly-slice (the scheduler may constrain, slice and
  /// preempt its launches).
  bool sliced = false;
  /// Ops waiting for the compilation.
  std::vector<struct Op *> waiting;
};

/// The kernel that runs fused launches of one kernel set
/// (Dispatch::fused): compiled and loaded once, shared by every tenant.
struct FusedKernel {
  enum class State { Compiling, Ready, Failed };
  /// Written by the I/O thread, read by executors: under `fusedMutex`.
  State state = State::Compiling;
  std::shared_ptr<const CompiledModule> compiled;
  const KernelInfo *kernel = nullptr; // __wooly_coalesced
  BackendModule *loaded = nullptr;
  /// The kernel index of each kernel of the set, by kernelKey.
  std::map<uint64_t, uint32_t> indexOf;
};

/// A unit of device work or a synchronisation point.
struct Op : WorkItem {
  enum class Type {
    Launch,
    CopyIn,
    CopyOut,
    CopyD2D,
    Memset,
    SymbolIn,
    SymbolOut,
    EventRecord,
    Marker,
    Free,
    Unload,
    /// Destroys the texture object `dst` (a surface object's when `value`).
    DestroyTexture,
  };
  Type type = Type::Marker;
  Session *session = nullptr;
  uint64_t stream = 0;
  uint64_t seq = 0;
  unsigned pendingDeps = 0;
  std::vector<Op *> dependents;
  /// The call waits for a reply once the op completes.
  bool reply = false;
  /// Reports deferred errors of `stream` (0 with `deviceWide`: all).
  bool reportsErrors = false, deviceWide = false;
  // Data.
  Frame in;
  /// Bytes of `in`, counted in the session's `heldBytes` until it ends.
  uint64_t heldBytes = 0;
  /// Device-to-host data (from the pool; not cleared: the copy fills it).
  BufferPool::Ptr out;
  uint64_t dst = 0, src = 0;
  uint8_t value = 0;
  // Launches.
  SessionModule *module = nullptr;
  KernelSlot *slot = nullptr;
  std::string kernelName;
  LaunchConfig config;
  std::vector<uint8_t> params;
  // Event records.
  uint64_t event = 0;
  /// Its tenant's memory was acquired for it (MemoryManager::acquire):
  /// released when it completes.
  bool acquired = false;
  /// Deduplication: the allocations it may write (MemoryManager::
  /// beginWrite), ended when it completes; for a copy that fills one
  /// whole, the content hash of its data (taken by the executor).
  std::vector<uint64_t> writes;
  bool hashContent = false;
  uint64_t contentHash = 0;
  // Results (written by the executor).
  pb::Status result;
  /// Device time of all its dispatches, and of the last one (from its
  /// start, ns on the scheduler's clock, to its end).
  double ms = 0, lastMs = 0;
  Nanos startedNs = 0;
  /// Virtual blocks the last dispatch ran.
  uint64_t blocksRun = 0;
  /// In a fused dispatch: the session ended or faulted before it ran, so
  /// it does not run (its result is set).
  bool skip = false;
  /// Launches it ran fused with (0: alone).
  unsigned fusedWith = 0;
  Clock::time_point arrived;
  /// Runs on the I/O thread when a sync op completes, to fill the reply.
  std::function<void(pb::Reply &)> fill;
};

struct Stream {
  Op *tail = nullptr;
  bool destroyed = false;
  pb::Status error; // first deferred error (code OK: none)
};

struct Event {
  Op *record = nullptr;
  bool recorded = false;
  Clock::time_point when;
};

/// The slot key of a module compiled whole (backends that cannot add
/// kernels to a loaded module), and of its variables alone.
constexpr const char *kWholeModule = "";
constexpr const char *kVariablesOnly = "\x01variables";

struct SessionModule {
  uint64_t handle = 0;
  std::shared_ptr<ModuleImage> image;
  /// Compiled parts by kernel name (kWholeModule, kVariablesOnly).
  std::map<std::string, KernelSlot> slots;
  /// The backend's module: the first part loaded; later parts extend it
  /// (compile threads, under `loadMutex`).
  BackendModule *loaded = nullptr;
  std::mutex loadMutex;
  bool unloading = false;
  /// Module variables registered as the session's memory: base -> size,
  /// and their addresses by name (once the module is loaded).
  std::map<uint64_t, uint64_t> variables;
  std::map<std::string, uint64_t> variableAddress;
  /// The key of its variables' reservation in the memory manager (0:
  /// none; MemoryManager::reservePinned).
  uint64_t variablesKey = 0;
};

struct TenantState {
  TenantConfig config;
  /// Its id in the memory manager (whose counters are its memory use).
  uint64_t memId = 0;
  unsigned sessions = 0;
  TenantMetrics metrics;
  /// Launch latencies (call received to kernel done), seconds: the last
  /// kLatencySamples, and the count and sum of all (under tenantsMutex).
  static constexpr size_t kLatencySamples = 4096;
  std::vector<double> latency;
  size_t nextLatency = 0;
  uint64_t latencyCount = 0;
  double latencySum = 0;
};

/// What a session's kernels print (device printf), appended from worker
/// threads and sent with the session's next reply.
struct DeviceOutput {
  /// Kept per session until a reply takes it; more is dropped (and said).
  static constexpr size_t kLimit = 4 << 20;
  std::mutex mutex;
  std::string text;
  bool truncated = false;

  void append(llvm::StringRef s) {
    std::lock_guard<std::mutex> lock(mutex);
    if (text.size() + s.size() > kLimit) {
      truncated = true;
      return;
    }
    text.append(s.data(), s.size());
  }
  std::string take() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string out = std::move(text);
    text.clear();
    if (truncated)
      out += "[wooly-serve: device printf output over 4 MiB between two "
             "replies was dropped]\n";
    truncated = false;
    return out;
  }
};

struct Session {
  uint64_t id = 0;
  std::string routingId;
  int fd = -1;
  TenantState *tenant = nullptr;
  std::string client;
  bool dead = false;
  /// Ops created and not yet completed.
  uint64_t liveOps = 0;
  /// Bytes of copy payloads its live ops hold.
  uint64_t heldBytes = 0;
  /// Its limits: its tenant's where set, else the server's.
  SessionLimits limits;
  pb::Status sticky;
  std::map<uint64_t, uint64_t> allocations; // base -> size
  /// A device heap size set with SetHeapSize, and its reservation in the
  /// memory manager (0, 0: the backend's default heap, not charged).
  uint64_t heapBytes = 0, heapKey = 0;
  std::map<uint64_t, std::unique_ptr<SessionModule>> modules;
  std::map<uint64_t, Stream> streams;
  std::map<uint64_t, Event> events;
  /// Texture and surface objects (the backend's handles): whether each is
  /// a surface.
  std::map<uint64_t, bool> textures;
  /// CUDA graphs: the asynchronous calls a GraphLaunch replays.
  struct Graph {
    std::vector<pb::Call> calls;
    uint64_t bytes = 0; // serialised size, counted against the limit
  };
  std::map<uint64_t, Graph> graphs;
  uint64_t graphBytes = 0; // of all `graphs`
  uint64_t nextHandle = 1;
  /// Shared with the printf sinks of the session's launches in flight.
  std::shared_ptr<DeviceOutput> output = std::make_shared<DeviceOutput>();
};

/// A queue of work for other threads.
class JobQueue {
public:
  void push(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      jobs.push_back(std::move(job));
    }
    cv.notify_one();
  }
  /// Blocks for the next job; false once stopped and empty.
  bool pop(std::function<void()> &job) {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return stopping || !jobs.empty(); });
    if (jobs.empty())
      return false;
    job = std::move(jobs.front());
    jobs.pop_front();
    return true;
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    cv.notify_all();
  }

private:
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::function<void()>> jobs;
  bool stopping = false;
};

} // namespace

//===----------------------------------------------------------------------===//
// Server::Impl
//===----------------------------------------------------------------------===//

class Server::Impl {
public:
  explicit Impl(ServerOptions o) : options(std::move(o)) {}
  ~Impl();

  llvm::Error start();
  llvm::Error run();

  // I/O thread.
  bool receive(std::vector<Frame> &frames, int &fd);
  void onMessage(std::vector<Frame> &frames, int fd);
  void onMonitorEvents();
  void runCompletions();
  void handleCall(const std::string &routingId, int fd, pb::Call &call,
                  std::deque<Frame> &payloads, bool last);
  void reply(const std::string &routingId, pb::Reply &r,
             BufferPool::Ptr payload = nullptr, size_t payloadBytes = 0);
  void replyStatus(const std::string &routingId, uint64_t seq,
                   const pb::Status &s);

  // Calls.
  void hello(const std::string &routingId, int fd, pb::Call &call);
  void moduleLoad(Session &s, pb::Call &call, Frame &text);
  void textureCreate(Session &s, const pb::Call &call);
  void finishInspect(const std::shared_ptr<ModuleImage> &image);
  void moduleLoaded(Session &s, uint64_t seq,
                    const std::shared_ptr<ModuleImage> &image);

  // Ops.
  Op *newOp(Session &s, Op::Type type, uint64_t stream, uint64_t seq);
  void addDep(Op *op, Op *on);
  void chain(Op *op, bool deviceWide);
  void submit(Op *op);
  void makeReady(Op *op, std::deque<Op *> *work = nullptr);
  /// Deduplication: tells the memory manager which allocations `op` may
  /// write (private copies for shared ones); an error status when one
  /// cannot get its copy. `mustWait` set: a copy must wait for the
  /// tenant's other work, or for room made on the swap thread
  /// (MustWaitError; nothing counted).
  pb::Status beginWrites(Op *op, bool *mustWait);
  void dispatch();
  /// Runs a dispatch on the calling executor; a sliced launch with its
  /// preemption flag and counter (0: none, or its own), a contained one
  /// with its status record (0: none).
  void execute(Op *op, const Dispatch &d, uint64_t preemptFlag,
               uint64_t sliceCounter, uint64_t statusRecord = 0);
  /// Runs the launches of a fused dispatch (those not `skip`ped): as one
  /// launch of `fk` when it is ready, else one after another. Executor.
  Outcome::Fusion executeFused(const std::vector<Op *> &ops, FusedKernel *fk,
                               uint64_t statusRecord);
  /// The fused kernel of `ops`' kernel set, its compilation started when
  /// new (null: too many sets). I/O thread.
  FusedKernel *fusedKernelFor(const std::vector<Op *> &ops);
  /// The dispatch's span on its tenant's trace track (--trace).
  void traceDispatch(Op *op, const Dispatch &d);
  /// Raises the preemption flags the scheduler asks for.
  void preempt();
  /// A slot of kContainRecordBytes in device memory, its first u32 zeroed:
  /// a sliced dispatch's preemption flag or counter, or a launch's status
  /// record (0 when none could be allocated: the slice then runs
  /// unpreemptibly, or allocates its own counter; the launch runs
  /// uncontained).
  uint64_t takeFlag();
  void giveFlag(uint64_t addr);
  /// Copies the scheduler's per-tenant measurements for /metrics.
  void snapshotSchedulerStats();
  /// The trace track of a tenant (numbered in the order first seen).
  unsigned traceTrack(const TenantConfig &t);
  void complete(Op *op);
  void finishOp(Op *op, std::deque<Op *> &worklist);
  /// DEVICE_LOST (sticky) for call `seq` when the backend's context is lost
  /// for good (Backend::lostReason: on a GPU, a fault that CUDA makes sticky
  /// for the whole context); OK while the device works. Logs the loss the
  /// first time it is seen.
  pb::Status lostStatus(uint64_t seq);
  std::atomic<bool> lostLogged{false};
  void requireSlot(Op *op);
  void startCompile(Session &s, SessionModule &m, const std::string &key,
                    KernelSlot &slot);

  // Sessions.
  Session *sessionOf(const std::string &routingId);
  void teardown(Session &s, const char *why);
  void maybeErase(Session &s);
  /// In open mode, forgets a tenant with no session and no memory left.
  void forgetTenant(TenantState &t);
  bool inSessionMemory(Session &s, uint64_t addr, uint64_t bytes);
  SessionModule *findModule(Session &s, uint64_t handle);
  pb::Status checkStream(Session &s, uint64_t stream, uint64_t seq);

  void log(const std::string &line) { options.log(line); }
  /// Hands `fn` to the I/O thread. Called by executor and compile threads:
  /// each wakes the I/O thread through its own inproc socket into the
  /// ROUTER (`wakeSocket`), so the I/O thread only ever waits in one
  /// receive (the fewest system calls per request).
  void post(std::function<void()> fn) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(completionMutex);
      completions.push_back(std::move(fn));
      wake = !wakePending;
      wakePending = true;
    }
    if (wake && wakeSocket)
      zmq_send(wakeSocket, "", 0, ZMQ_DONTWAIT);
  }
  /// The body of an executor or compile thread (`index`: its number): runs
  /// `queue`'s jobs, with its own wake socket.
  void workerThread(unsigned index, JobQueue &queue);
  static thread_local void *wakeSocket;

  std::string metricsText();

  ServerOptions options;
  /// Outlives the ZeroMQ context (closed in ~Impl's body), which gives
  /// buffers back.
  BufferPool replyBuffers;
  TenantRegistry tenants;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<CompileCache> cache;
  uint64_t deviceMemory = 0;
  pb::DeviceProperties device;

  void *zctx = nullptr, *router = nullptr, *monitor = nullptr;
  std::vector<std::string> bound;
  std::atomic<bool> stopRequested{false};

  std::mutex completionMutex;
  std::vector<std::function<void()>> completions;
  bool wakePending = false;

  JobQueue execQueue, compileQueue;
  std::vector<std::thread> execThreads, compileThreads;
  /// The swap thread (where memory can move): runs the swaps that
  /// `MemoryManager::acquire` starts, so that the I/O thread and the other
  /// tenants' work go on while a tenant's memory moves.
  JobQueue swapQueue;
  std::thread swapThread;
  unsigned numExecutors = 1, idleExecutors = 1;

  std::map<uint64_t, std::unique_ptr<Session>> sessions;
  std::map<std::string, Session *> byRouting;
  std::map<std::string, std::shared_ptr<ModuleImage>> images;
  uint64_t nextSession = 1, nextOpId = 1, nextVariablesKey = 1;

  // Tenants (the metrics thread reads them: `tenantsMutex`).
  std::mutex tenantsMutex;
  std::map<std::string, std::unique_ptr<TenantState>> tenantStates;
  /// Every byte of device memory the server creates goes through it.
  std::unique_ptr<MemoryManager> memory;
  /// Ops whose tenant's memory could not be brought back yet (others'
  /// memory in use): tried again as work completes (I/O thread).
  std::deque<Op *> memoryWaiters;
  /// Its size, for /metrics.
  std::atomic<uint64_t> memoryWaiting{0};
  bool retryingWaiters = false;
  /// Makes the ops of `memoryWaiters` ready that can now be.
  void retryMemoryWaiters();
  /// A malloc call: allocates and replies, or waits in `pendingMallocs`
  /// while idle tenants' memory moves out for it on the swap thread.
  struct PendingMalloc {
    std::string routingId;
    uint64_t session = 0, bytes = 0, seq = 0;
  };
  std::deque<PendingMalloc> pendingMallocs;
  /// Module loads whose variables wait for room (moduleLoaded).
  struct PendingModuleLoad {
    uint64_t session = 0, seq = 0;
    std::shared_ptr<ModuleImage> image;
  };
  std::deque<PendingModuleLoad> pendingModuleLoads;
  void allocateFor(PendingMalloc m);

  // Device metrics (I/O thread; read under `tenantsMutex`).
  Clock::time_point startTime = Clock::now(), busySince;
  double busySeconds = 0;
  unsigned running = 0;
  std::atomic<uint64_t> queuedOps{0};

  std::unique_ptr<MetricsEndpoint> metricsEndpoint;

  /// Whether lower-class kernels are compiled through wooly-slice (a
  /// latency-critical tenant is configured and the policy paces).
  bool paceKernels = false;
  /// Whether launches may be fused (--coalesce, the wooly policy, a
  /// backend with fault domains), and the fused kernels by kernel set
  /// (created by the I/O thread, never removed; states under fusedMutex).
  bool coalesceOn = false;
  std::mutex fusedMutex;
  std::map<uint64_t, std::unique_ptr<FusedKernel>> fusedKernels;
  /// Launches that ran fused, and the fused launches (executors).
  std::atomic<uint64_t> coalescedLaunches{0}, coalescedDispatches{0};
  /// Containment: the wooly-contain pipeline every tenant kernel is
  /// compiled through (empty: none). The watchdog (--kernel-timeout-ms)
  /// raises the status of a running launch past its deadline (I/O thread);
  /// `containTraps`: kernels record traps, assertions and misaligned
  /// accesses (cuda), read from the record after each launch.
  std::string containPasses;
  bool watchdogOn = false;
  bool containTraps = false;
  struct Watched {
    uint64_t record = 0;
    Clock::time_point deadline;
    bool raised = false;
  };
  std::map<uint64_t, Watched> watchedByTicket;
  /// Replies a client may leave unread before its session is closed.
  static constexpr int kReplyQueue = 64;
  /// Sessions whose client stopped reading (closed by the I/O loop).
  std::vector<uint64_t> stalled;
  /// Whether the launch's kernel has a status record (it was compiled
  /// through wooly-contain): only those are watched, for a kernel that
  /// does not poll would run on and still be reported stopped.
  bool contained(const Op &op) const;
  /// Reads the CURVE key pair and makes the ROUTER a CURVE server for the
  /// endpoints bound from now on.
  llvm::Error enableCurve();
  /// The status record of launch dispatch `ticket`, with its deadline when
  /// the watchdog is on (0: no containment, or no record to be had).
  uint64_t watch(uint64_t ticket);
  /// Sets the status of launches past their deadline.
  void checkWatchdog();
  /// Takes dispatch `ticket`'s status record back; true when the watchdog
  /// stopped it.
  bool unwatch(uint64_t ticket);
  /// The error of a launch the watchdog stopped.
  pb::Status watchdogStatus(const Op &op) const;
  /// Reads launch `op`'s status record after it ran: the error of a trap,
  /// failed assertion or misaligned access it recorded. Executor.
  void readContainStatus(Op *op, uint64_t record);
  /// Zeroed device slots of kFlagSlotBytes: preemption flags, slice
  /// counters and status records. Free ones, and the flag of each running
  /// sliced dispatch by ticket (I/O thread).
  std::vector<uint64_t> freeFlags;
  std::vector<uint64_t> flagBlocks;
  bool flagAllocFailed = false;
  std::map<uint64_t, uint64_t> flagOfTicket;
  /// The scheduler's measurements as of `schedStatsAt` (under
  /// `tenantsMutex`, for the metrics thread).
  std::vector<TenantStats> schedStats;
  Clock::time_point schedStatsAt;
  /// --trace: the timeline, and tracks by tenant name.
  std::unique_ptr<TraceWriter> trace;
  std::map<std::string, unsigned> traceTracks;

  /// The scheduler's clock: nanoseconds since the server started.
  Nanos nowNanos() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() -
                                                                startTime)
        .count();
  }
};

Server::Impl::~Impl() {
  execQueue.stop();
  compileQueue.stop();
  swapQueue.stop();
  if (swapThread.joinable())
    swapThread.join();
  for (std::thread &t : execThreads)
    t.join();
  for (std::thread &t : compileThreads)
    t.join();
  metricsEndpoint.reset();
  // Whatever sessions remain: their memory and modules go with the backend.
  sessions.clear();
  if (monitor)
    zmq_close(monitor);
  if (router)
    zmq_close(router);
  if (zctx)
    zmq_ctx_term(zctx);
}

llvm::Error Server::Impl::start() {
  if (!options.log)
    options.log = [](const std::string &line) {
      auto now = std::chrono::system_clock::now();
      std::time_t t = std::chrono::system_clock::to_time_t(now);
      char buf[32];
      std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&t));
      std::fprintf(stderr, "[wooly-serve %s] %s\n", buf, line.c_str());
    };
  if (options.listen.empty())
    return llvm::createStringError("no endpoint to listen on");
  if (!options.tenantsFile.empty()) {
    auto reg = loadTenants(options.tenantsFile);
    if (!reg)
      return reg.takeError();
    tenants = std::move(*reg);
  }

  BackendOptions bo;
  bo.cpuWorkers = options.cpuWorkers;
  bo.cudaVirtualMemory = options.cudaSwap;
  if (options.printfSink)
    bo.printfSink = [sink = options.printfSink](llvm::StringRef s) {
      sink(s.str());
    };
  auto b = createBackend(options.backend, bo);
  if (!b)
    return b.takeError();
  backend = std::move(*b);
  startTime = Clock::now();
  cache = std::make_unique<CompileCache>(options.cacheDir);
  deviceMemory =
      options.deviceMemory ? options.deviceMemory : kCpuDefaultMemory;
  // A device with memory of its own: at most what it has free now (what
  // other processes and the context hold is not ours to hand out).
  std::string capacityNote;
  if (std::optional<uint64_t> free = backend->freeDeviceMemory()) {
    if (!options.deviceMemory)
      deviceMemory = *free;
    else if (*free < options.deviceMemory) {
      deviceMemory = *free;
      capacityNote = " (--device-memory=" + bytesText(options.deviceMemory) +
                     " is more than the device has free: " + bytesText(*free) +
                     ")";
    }
  }
  memory = std::make_unique<MemoryManager>(*backend, deviceMemory);
  if (!(options.kernelTimeoutMs >= 0))
    return llvm::createStringError("--kernel-timeout-ms must be 0 (no "
                                   "watchdog) or more");
  // Containment (wooly-contain). The watchdog stops a kernel by letting
  // its threads exit at a loop head (an exited thread does not hold up a
  // block-wide barrier). The cpu backend's runtime contains traps,
  // assertions and wild accesses by itself, per fault domain of a fused
  // launch: there the pass only adds the watchdog's polls. A GPU (a
  // backend with a native target) needs the whole pass to keep them from
  // ending the device context, so with --contain every module is compiled
  // for it; without, modules run as written, unwatched.
  if (backend->nativeTarget() != "host") {
    containTraps = options.contain;
    watchdogOn = containTraps && options.kernelTimeoutMs > 0;
    if (containTraps)
      containPasses =
          watchdogOn ? "wooly-contain" : "wooly-contain{watchdog=false}";
  } else {
    watchdogOn = options.kernelTimeoutMs > 0;
    if (watchdogOn)
      containPasses = "wooly-contain{traps=false alignment=false}";
  }

  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  // Executors bound the work submitted to the device at once. The cpu
  // backend gets one per core; the cuda backend gives each executor a
  // stream of its own, and kKernelsInFlight launches at once keep a GPU
  // busy while leaving the scheduler the choice of what runs next.
  constexpr unsigned kKernelsInFlight = 4;
  numExecutors = options.executors          ? options.executors
                 : backend->kind() == "cpu" ? std::max(2u, hw)
                                            : kKernelsInFlight;
  if (!backend->concurrentLaunches())
    numExecutors = 1;
  idleExecutors = numExecutors;

  // The scheduler. With a latency-critical tenant configured, one executor
  // is kept for latency-critical launches (the policy's extra).
  bool latencyCritical = false;
  for (const TenantConfig &t : tenants.tenants)
    latencyCritical |= t.priorityClass == PriorityClass::LatencyCritical;
  if (options.scheduler == "fifo") {
    scheduler = createFifoScheduler(numExecutors);
  } else if (options.scheduler == "wooly") {
    WoolyPolicyOptions po;
    if (backend->kind() == "cpu") {
      po.device = DeviceModel::cpu(backend->computeUnits());
    } else {
      po.device = DeviceModel::h100();
      po.device.sms = std::max(1u, backend->computeUnits());
    }
    // Pacing runs sliced kernels next to latency-critical ones: it needs
    // launches that run at the same time (cpu, cuda).
    po.pacing = options.pacing && backend->concurrentLaunches();
    if (latencyCritical && numExecutors > 1) {
      po.maxRunning = numExecutors - 1;
      po.latencyCriticalExtra = 1;
    } else {
      po.maxRunning = numExecutors;
      po.latencyCriticalExtra = 0;
    }
    paceKernels = po.pacing && latencyCritical;
    coalesceOn = options.coalesce && backend->supportsFaultDomains();
    if (coalesceOn)
      po.coalesceMaxParts = 8;
    scheduler = createWoolyScheduler(po);
  } else {
    return llvm::createStringError("unknown scheduler '" + options.scheduler +
                                   "': expected 'wooly' or 'fifo'");
  }
  if (!options.traceFile.empty())
    trace = std::make_unique<TraceWriter>();

  // The device as clients see it.
  device.set_name(backend->kind() == "cpu"
                      ? "Wooly CPU virtual device (" + backend->name() + ")"
                      : backend->name());
  device.set_backend(backend->kind().str());
  device.set_sm_count(backend->computeUnits());
  device.set_total_memory(deviceMemory);
  device.set_compute_major(9);
  device.set_compute_minor(0);
  device.set_max_threads_per_block(1024);
  auto dim = [](pb::Dim3 *d, uint32_t x, uint32_t y, uint32_t z) {
    d->set_x(x);
    d->set_y(y);
    d->set_z(z);
  };
  dim(device.mutable_max_block(), 1024, 1024, 64);
  dim(device.mutable_max_grid(), 0x7fffffffu, 65535, 65535);
  device.set_shared_per_block(227 * 1024);
  device.set_warp_size(32);
  device.set_max_threads_per_sm(2048);
  device.set_regs_per_block(65536);
  device.set_const_memory(64 * 1024);
  device.set_clock_khz(1000000);
  device.set_max_cooperative_blocks(backend->maxCooperativeBlocks());

  zctx = zmq_ctx_new();
  router = zmq_socket(zctx, ZMQ_ROUTER);
  int zero = 0, hb = 1000, hbTimeout = 10000;
  int64_t maxMsg = int64_t(options.maxMessageBytes);
  zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(router, ZMQ_MAXMSGSIZE, &maxMsg, sizeof maxMsg);
  zmq_setsockopt(router, ZMQ_HEARTBEAT_IVL, &hb, sizeof hb);
  zmq_setsockopt(router, ZMQ_HEARTBEAT_TIMEOUT, &hbTimeout, sizeof hbTimeout);
  // A client that stopped reading its replies: at the high-water mark (a
  // well-behaved client has one synchronous call, so one reply, in flight)
  // a send fails at once (ROUTER_MANDATORY, DONTWAIT) and the session is
  // closed, so the server never holds more than kReplyQueue of its replies
  // (nor blocks on it).
  int hwm = kReplyQueue, one = 1;
  zmq_setsockopt(router, ZMQ_SNDHWM, &hwm, sizeof hwm);
  zmq_setsockopt(router, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
  std::string monName = "inproc://wooly-serve-monitor";
  zmq_socket_monitor(router, monName.c_str(), ZMQ_EVENT_DISCONNECTED);
  monitor = zmq_socket(zctx, ZMQ_PAIR);
  zmq_connect(monitor, monName.c_str());
  // Endpoints other than tcp first: a listener takes the socket's security
  // options as they are when it binds, and CURVE is for tcp.
  std::vector<std::string> order;
  for (const std::string &ep : options.listen)
    if (ep.rfind("tcp://", 0) != 0)
      order.push_back(ep);
  bool tcp = order.size() != options.listen.size();
  for (const std::string &ep : options.listen)
    if (ep.rfind("tcp://", 0) == 0)
      order.push_back(ep);
  bool curve = false;
  for (const std::string &ep : order) {
    bool isIpc = ep.rfind("ipc://", 0) == 0;
    if (isIpc)
      ::unlink(ep.substr(6).c_str()); // a stale socket of a dead server
    if (!curve && ep.rfind("tcp://", 0) == 0 && !options.curveKeyFile.empty()) {
      if (llvm::Error e = enableCurve())
        return e;
      curve = true;
    }
    // An ipc socket is created for its owner alone.
    mode_t mask = isIpc ? ::umask(077) : 0;
    int rc = zmq_bind(router, ep.c_str());
    if (isIpc)
      ::umask(mask);
    if (rc != 0)
      return llvm::createStringError("cannot listen on '" + ep +
                                     "': " + zmq_strerror(zmq_errno()));
    char last[512];
    size_t len = sizeof last;
    zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, last, &len);
    bound.push_back(last);
  }
  if (!options.curveKeyFile.empty() && !tcp)
    log("--curve-keys has no effect: no tcp:// endpoint");
  if (tcp && !curve)
    log("warning: tcp endpoints without CURVE (--curve-keys): traffic is "
        "plain, and tokens travel unencrypted");

  // Worker threads wake the I/O thread through the ROUTER itself.
  if (zmq_bind(router, kWakeEndpoint) != 0)
    return llvm::createStringError(std::string("cannot bind ") + kWakeEndpoint +
                                   ": " + zmq_strerror(zmq_errno()));
  unsigned nc = options.compileThreads ? options.compileThreads : 2;
  for (unsigned i = 0; i < numExecutors; ++i)
    execThreads.emplace_back([this, i] { workerThread(i, execQueue); });
  for (unsigned i = 0; i < nc; ++i)
    compileThreads.emplace_back(
        [this, i, n = numExecutors] { workerThread(n + i, compileQueue); });
  if (memory->swaps()) {
    swapThread = std::thread(
        [this, n = numExecutors + nc] { workerThread(n, swapQueue); });
    // Each swap on the swap thread; once it has run, the I/O thread ends
    // it and retries the work that waits for memory.
    memory->swapInBackground(
        [this] {
          swapQueue.push([this] {
            memory->runSwap();
            post([this] {
              if (!memory->settleSwap())
                return;
              for (PendingMalloc &m : std::exchange(pendingMallocs, {}))
                allocateFor(std::move(m));
              for (PendingModuleLoad &l :
                   std::exchange(pendingModuleLoads, {})) {
                l.image->users--;
                if (auto it = sessions.find(l.session);
                    it != sessions.end() && !it->second->dead)
                  moduleLoaded(*it->second, l.seq, l.image);
                else if (l.image->users == 0 &&
                         l.image->state != ModuleImage::State::Inspecting)
                  images.erase(l.image->hash);
              }
              retryMemoryWaiters();
              // Tenants of open mode whose last session ended while the
              // swap moved their memory.
              std::vector<TenantState *> idle;
              {
                std::lock_guard<std::mutex> lock(tenantsMutex);
                for (auto &[name, t] : tenantStates)
                  if (t->sessions == 0)
                    idle.push_back(t.get());
              }
              for (TenantState *t : idle)
                forgetTenant(*t);
            });
          });
        },
        std::chrono::milliseconds(options.swapDelayMs));
  }

  if (!options.metrics.empty()) {
    auto ep = MetricsEndpoint::start(options.metrics,
                                     [this] { return metricsText(); });
    if (!ep)
      return ep.takeError();
    metricsEndpoint = std::move(*ep);
  }

  std::string where;
  for (const std::string &ep : bound)
    where += (where.empty() ? "" : ", ") + ep;
  log("listening on " + where + "; backend " + backend->kind().str() + " (" +
      backend->name() + "), " + std::to_string(numExecutors) + " executor" +
      (numExecutors == 1 ? "" : "s") + ", device memory " +
      bytesText(deviceMemory) + capacityNote +
      (memory->swaps() ? " (oversubscribed: idle tenants' memory moves to "
                         "host memory when it is needed)"
       : backend->kind() == "cuda"
           ? " (not oversubscribed: --cuda-swap allocates so "
             "that idle tenants' memory can move out)"
           : " (not oversubscribed: swapping is not "
             "supported yet on this backend)") +
      ", scheduler " + scheduler->name() +
      (paceKernels ? " (pacing lower classes: their kernels are compiled "
                     "sliced)"
                   : ""));
  if (tenants.open)
    log("no --tenants file: any tenant name is accepted without a token "
        "(class normal, weight 1, quota = the device's memory)");
  else
    log("tenants: " + std::to_string(tenants.tenants.size()) + " from " +
        options.tenantsFile);
  if (metricsEndpoint)
    log("metrics at http://" + metricsEndpoint->address() + "/metrics");
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// The I/O loop
//===----------------------------------------------------------------------===//

llvm::Error Server::Impl::run() {
  Clock::time_point drainDeadline, nextMonitorCheck;
  bool draining = false;
  // The receive wakes up at least this often: stop requests, drain
  // deadlines and disconnects are looked at between messages.
  int timeout = 20;
  zmq_setsockopt(router, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
  for (;;) {
    if (stopRequested.load() && !draining) {
      draining = true;
      drainDeadline =
          Clock::now() + std::chrono::milliseconds(options.drainTimeoutMs);
      uint64_t live = 0;
      for (auto &[id, s] : sessions)
        live += s->liveOps;
      log("stopping: draining " + std::to_string(live) + " queued operation" +
          (live == 1 ? "" : "s"));
    }
    if (draining) {
      uint64_t live = 0;
      for (auto &[id, s] : sessions)
        live += s->liveOps;
      if (live == 0 || Clock::now() >= drainDeadline) {
        if (live)
          log("drain timeout: " + std::to_string(live) +
              " operations left unfinished");
        std::vector<Session *> open;
        for (auto &[id, s] : sessions)
          if (!s->dead)
            open.push_back(s.get());
        for (Session *s : open)
          teardown(*s, "server stopping");
        // Running work must end before the backend goes away.
        while (running) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          runCompletions();
        }
        if (trace) {
          if (llvm::Error e = trace->write(options.traceFile))
            log(llvm::toString(std::move(e)));
          else
            log(llvm::formatv("trace of {0} dispatches written to {1}{2}",
                              trace->size(), options.traceFile,
                              trace->dropped() ? llvm::formatv(" ({0} dropped)",
                                                               trace->dropped())
                                                     .str()
                                               : std::string())
                    .str());
        }
        log("stopped");
        return llvm::Error::success();
      }
    }
    // Disconnects are read every few milliseconds (and before each Hello).
    Clock::time_point now = Clock::now();
    if (now >= nextMonitorCheck) {
      onMonitorEvents();
      // A dead session's memory may let ops waiting for memory run.
      dispatch();
      nextMonitorCheck = now + std::chrono::milliseconds(20);
    }
    if (metricsEndpoint && now - schedStatsAt >= std::chrono::milliseconds(50))
      snapshotSchedulerStats();
    if (!watchedByTicket.empty())
      checkWatchdog();
    for (uint64_t id : std::exchange(stalled, {}))
      if (auto it = sessions.find(id); it != sessions.end())
        teardown(*it->second, "the client stopped reading its replies");
    // Work the scheduler holds back (pacing) is asked for again within a
    // millisecond; otherwise the receive waits up to 20 ms.
    int wanted = scheduler->queued() && idleExecutors ? 1 : 20;
    if (wanted != timeout) {
      timeout = wanted;
      zmq_setsockopt(router, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    }
    std::vector<Frame> frames;
    int fd = -1;
    if (!receive(frames, fd)) {
      if (zmq_errno() != EAGAIN && zmq_errno() != EINTR)
        return llvm::createStringError(std::string("receive: ") +
                                       zmq_strerror(zmq_errno()));
      runCompletions();
      continue;
    }
    if (llvm::StringRef(frames[0].str()).starts_with(kWakePrefix)) {
      runCompletions();
      continue;
    }
    // While draining, requests are not served: their clients see the
    // server go away.
    if (!draining)
      onMessage(frames, fd);
  }
}

/// Receives one whole message from the ROUTER (waiting up to its receive
/// timeout); `fd` is the connection's file descriptor.
bool Server::Impl::receive(std::vector<Frame> &frames, int &fd) {
  bool more = true;
  while (more) {
    Frame f;
    if (zmq_msg_recv(&f.msg, router, frames.empty() ? 0 : ZMQ_DONTWAIT) < 0)
      return !frames.empty();
    // The connection's file descriptor (read before the frame moves: the
    // move does not keep it), to match the monitor's disconnect events.
    if (fd < 0)
      fd = zmq_msg_get(&f.msg, ZMQ_SRCFD);
    more = zmq_msg_more(&f.msg);
    frames.push_back(std::move(f));
  }
  return true;
}

void Server::Impl::workerThread(unsigned index, JobQueue &queue) {
  void *wake = zmq_socket(zctx, ZMQ_DEALER);
  std::string id = kWakePrefix + std::to_string(index);
  int zero = 0;
  zmq_setsockopt(wake, ZMQ_ROUTING_ID, id.data(), id.size());
  zmq_setsockopt(wake, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(wake, ZMQ_SNDHWM, &zero, sizeof zero);
  zmq_connect(wake, kWakeEndpoint);
  wakeSocket = wake;
  std::function<void()> job;
  while (queue.pop(job))
    job();
  wakeSocket = nullptr;
  zmq_close(wake);
}

thread_local void *Server::Impl::wakeSocket = nullptr;

void Server::Impl::runCompletions() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(completionMutex);
    batch.swap(completions);
    // The next post wakes the I/O thread again.
    wakePending = false;
  }
  for (auto &fn : batch)
    fn();
  dispatch();
}

void Server::Impl::onMonitorEvents() {
  for (;;) {
    Frame ev;
    if (zmq_msg_recv(&ev.msg, monitor, ZMQ_DONTWAIT) < 0)
      return;
    bool more = zmq_msg_more(&ev.msg);
    while (more) {
      Frame rest;
      zmq_msg_recv(&rest.msg, monitor, 0);
      more = zmq_msg_more(&rest.msg);
    }
    if (ev.size() < 6)
      continue;
    uint16_t event;
    uint32_t fd;
    std::memcpy(&event, ev.data(), 2);
    std::memcpy(&fd, ev.data() + 2, 4);
    if (event != ZMQ_EVENT_DISCONNECTED)
      continue;
    // teardown() may erase the session: collect first.
    std::vector<Session *> gone;
    for (auto &[id, s] : sessions)
      if (!s->dead && s->fd == int(fd))
        gone.push_back(s.get());
    for (Session *s : gone)
      teardown(*s, "client disconnected");
  }
}

void Server::Impl::onMessage(std::vector<Frame> &frames, int fd) {
  std::string routingId = frames[0].str();
  if (frames.size() < 2) {
    replyStatus(routingId, 0,
                status(pb::MALFORMED, "a message needs an envelope frame", 0));
    return;
  }
  pb::Request req;
  if (!req.ParseFromArray(frames[1].data(), int(frames[1].size()))) {
    Session *s = sessionOf(routingId);
    if (s)
      s->tenant->metrics.errors++;
    replyStatus(routingId, 0,
                status(pb::MALFORMED,
                       "the envelope is not a wooly.v1.Request (" +
                           std::to_string(frames[1].size()) + " bytes)",
                       0));
    return;
  }
  uint64_t firstSeq = req.calls_size() ? req.calls(0).seq() : 0;
  if (req.version() != kVersion) {
    replyStatus(routingId,
                req.calls_size() ? req.calls(req.calls_size() - 1).seq() : 0,
                status(pb::VERSION_MISMATCH,
                       llvm::formatv("the client speaks protocol version {0}, "
                                     "this server speaks version {1}",
                                     req.version(), kVersion)
                           .str(),
                       firstSeq));
    return;
  }
  std::deque<Frame> payloads;
  for (size_t i = 2; i < frames.size(); ++i)
    payloads.push_back(std::move(frames[i]));
  for (int i = 0; i < req.calls_size(); ++i)
    handleCall(routingId, fd, *req.mutable_calls(i), payloads,
               i + 1 == req.calls_size());
  if (!payloads.empty()) {
    Session *s = sessionOf(routingId);
    if (s)
      s->tenant->metrics.errors++;
    log("dropped " + std::to_string(payloads.size()) +
        " payload frames no call claimed");
  }
  dispatch();
}

void Server::Impl::reply(const std::string &routingId, pb::Reply &r,
                         BufferPool::Ptr payload, size_t payloadBytes) {
  r.set_version(kVersion);
  if (Session *s = sessionOf(routingId)) {
    std::string out = s->output->take();
    if (!out.empty())
      r.set_device_output(std::move(out));
  }
  std::string env = r.SerializeAsString();
  if (zmq_send(router, routingId.data(), routingId.size(),
               ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
    // EHOSTUNREACH: the client is gone (its session ends through the
    // monitor). EAGAIN: it has kReplyQueue replies unread; closed once the
    // call at hand is done with it.
    if (zmq_errno() == EAGAIN)
      if (Session *s = sessionOf(routingId))
        stalled.push_back(s->id);
    return; // A payload buffer goes back to its pool.
  }
  if (payload) {
    zmq_send(router, env.data(), env.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    // The payload is handed over without a copy; ZeroMQ frees it.
    BufferPool::Buffer *b = payload.release();
    zmq_msg_t m;
    zmq_msg_init_data(
        &m, b->data, payloadBytes,
        [](void *, void *hint) {
          auto *b = static_cast<BufferPool::Buffer *>(hint);
          b->pool->give(b);
        },
        b);
    if (zmq_msg_send(&m, router, ZMQ_DONTWAIT) < 0)
      zmq_msg_close(&m);
  } else {
    zmq_send(router, env.data(), env.size(), ZMQ_DONTWAIT);
  }
}

void Server::Impl::replyStatus(const std::string &routingId, uint64_t seq,
                               const pb::Status &s) {
  pb::Reply r;
  r.set_seq(seq);
  *r.mutable_status() = s;
  reply(routingId, r);
}

Session *Server::Impl::sessionOf(const std::string &routingId) {
  auto it = byRouting.find(routingId);
  return it == byRouting.end() ? nullptr : it->second;
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

void Server::Impl::hello(const std::string &routingId, int fd, pb::Call &call) {
  const pb::Hello &h = call.hello();
  uint64_t seq = call.seq();
  // A disconnect of this fd that happened before this message must be seen
  // first: the new connection may have been given the same fd number.
  onMonitorEvents();
  if (sessionOf(routingId))
    return replyStatus(routingId, seq,
                       status(pb::INVALID_VALUE,
                              "this connection already has a session", seq));
  TenantConfig config;
  if (tenants.open) {
    if (h.tenant().empty() || h.tenant().size() > 256)
      return replyStatus(routingId, seq,
                         status(pb::UNAUTHENTICATED,
                                "a tenant name of 1 to 256 bytes is needed",
                                seq));
    config.name = h.tenant();
    config.quotaBytes = deviceMemory;
  } else {
    const TenantConfig *t = tenants.find(h.tenant());
    if (!t || !sameSecret(t->token, h.token())) {
      log("refused a session for tenant '" + h.tenant() +
          "': unknown tenant or wrong token");
      return replyStatus(
          routingId, seq,
          status(pb::UNAUTHENTICATED,
                 "unknown tenant '" + h.tenant() + "' or wrong token", seq));
    }
    config = *t;
    if (!config.quotaBytes)
      config.quotaBytes = deviceMemory;
  }
  if (pb::Status lost = lostStatus(seq); lost.code() != pb::OK) {
    log("refused a session for tenant '" + config.name +
        "': the device is lost");
    return replyStatus(routingId, seq, lost);
  }
  TenantState *tenant;
  {
    std::lock_guard<std::mutex> lock(tenantsMutex);
    auto &slot = tenantStates[config.name];
    if (!slot) {
      slot = std::make_unique<TenantState>();
      slot->config = config;
      slot->memId =
          memory->addTenant(config.name, config.quotaBytes, config.dedup);
    }
    tenant = slot.get();
    tenant->sessions++;
  }
  auto s = std::make_unique<Session>();
  s->id = nextSession++;
  s->routingId = routingId;
  s->fd = fd;
  s->tenant = tenant;
  s->client = h.client();
  s->streams[0]; // the default stream
  const SessionLimits &own = config.limits;
  auto pick = [](uint64_t tenants, uint64_t servers) {
    return tenants ? tenants : servers;
  };
  s->limits.modules = pick(own.modules, options.maxModulesPerSession);
  s->limits.streams = pick(own.streams, options.maxStreamsPerSession);
  s->limits.events = pick(own.events, options.maxEventsPerSession);
  s->limits.graphs = pick(own.graphs, options.maxGraphsPerSession);
  s->limits.allocations =
      pick(own.allocations, options.maxAllocationsPerSession);
  s->limits.outstanding =
      pick(own.outstanding, options.maxOutstandingPerSession);
  s->limits.outstandingBytes =
      pick(own.outstandingBytes, options.maxOutstandingBytesPerSession);
  log(llvm::formatv(
          "session {0} opened: tenant '{1}' ({2}, weight {3}{4}, "
          "quota {5}) from {6}",
          s->id, config.name, className(config.priorityClass), config.weight,
          config.slaMs > 0 ? llvm::formatv(", SLA {0} ms", config.slaMs).str()
                           : std::string(),
          bytesText(config.quotaBytes),
          h.client().empty() ? std::string("a client") : h.client())
          .str());
  pb::Reply r;
  r.set_seq(seq);
  pb::SessionInfo *si = r.mutable_session();
  si->set_session(s->id);
  si->set_tenant(config.name);
  si->set_priority_class(className(config.priorityClass).str());
  si->set_weight(config.weight);
  si->set_sla_ms(config.slaMs);
  si->set_quota_bytes(config.quotaBytes);
  scheduler->announce(&tenant->config, nowNanos());
  byRouting[routingId] = s.get();
  sessions[s->id] = std::move(s);
  reply(routingId, r);
}

SessionModule *Server::Impl::findModule(Session &s, uint64_t handle) {
  auto it = s.modules.find(handle);
  return it == s.modules.end() || it->second->unloading ? nullptr
                                                        : it->second.get();
}

pb::Status Server::Impl::checkStream(Session &s, uint64_t stream,
                                     uint64_t seq) {
  auto it = s.streams.find(stream);
  if (it == s.streams.end() || it->second.destroyed)
    return status(pb::INVALID_HANDLE,
                  "stream " + std::to_string(stream) +
                      " is not a stream of this session",
                  seq);
  return pb::Status();
}

bool Server::Impl::inSessionMemory(Session &s, uint64_t addr, uint64_t bytes) {
  if (addr + bytes < addr)
    return false;
  auto inside = [&](const std::map<uint64_t, uint64_t> &ranges) {
    auto it = ranges.upper_bound(addr);
    if (it == ranges.begin())
      return false;
    --it;
    return addr >= it->first && addr + bytes <= it->first + it->second;
  };
  if (inside(s.allocations))
    return true;
  for (auto &[h, m] : s.modules)
    if (inside(m->variables))
      return true;
  return false;
}

void Server::Impl::moduleLoad(Session &s, pb::Call &call, Frame &text) {
  const pb::ModuleLoad &ml = call.module_load();
  uint64_t seq = call.seq();
  if (s.modules.size() >= s.limits.modules)
    return replyStatus(s.routingId, seq,
                       status(pb::LIMIT_EXCEEDED,
                              llvm::formatv("a session may load at most {0} "
                                            "modules",
                                            s.limits.modules),
                              seq));
  auto it = images.find(ml.hash());
  if (ml.payload_bytes() == 0) {
    if (it == images.end())
      return replyStatus(s.routingId, seq,
                         status(pb::NOT_FOUND, "send the module's text", seq));
  } else {
    if (text.size() != ml.payload_bytes())
      return replyStatus(
          s.routingId, seq,
          status(pb::MALFORMED,
                 llvm::formatv("the module text frame has {0} bytes, the call "
                               "says {1}",
                               text.size(), ml.payload_bytes()),
                 seq));
    if (it == images.end()) {
      std::string t = text.str();
      if (sha256Hex(t) != ml.hash())
        return replyStatus(s.routingId, seq,
                           status(pb::INVALID_VALUE,
                                  "the module text does not match its hash",
                                  seq));
      auto image = std::make_shared<ModuleImage>();
      image->hash = ml.hash();
      image->name =
          ml.name().empty() ? "module-" + ml.hash().substr(0, 12) : ml.name();
      image->text = std::move(t);
      it = images.emplace(ml.hash(), image).first;
      // Import and read the layout off the I/O thread.
      compileQueue.push([this, image] {
        CompileInput in;
        in.text = image->text;
        in.name = image->name;
        auto start = Clock::now();
        std::string error;
        ModuleLayout result;
        // Nothing thrown here may end the thread (and the server).
        try {
          auto layout = inspect(in);
          if (layout)
            result = std::move(*layout);
          else
            error = llvm::toString(layout.takeError());
        } catch (const std::exception &x) {
          error = std::string("import failed: ") + x.what();
        }
        double ms =
            std::chrono::duration<double, std::milli>(Clock::now() - start)
                .count();
        post([this, image, result = std::move(result), error, ms]() mutable {
          image->layout = std::move(result);
          image->error = error;
          image->state = error.empty() ? ModuleImage::State::Ready
                                       : ModuleImage::State::Failed;
          log(llvm::formatv("module {0}: {1} in {2:f1} ms", image->name,
                            error.empty()
                                ? llvm::formatv("{0} kernels, {1} variables",
                                                image->layout.kernels.size(),
                                                image->layout.globals.size())
                                      .str()
                                : "rejected: " + error,
                            ms)
                  .str());
          finishInspect(image);
        });
      });
    }
  }
  std::shared_ptr<ModuleImage> image = it->second;
  if (image->state == ModuleImage::State::Inspecting) {
    image->waiting.push_back({s.id, seq});
    return;
  }
  moduleLoaded(s, seq, image);
}

void Server::Impl::textureCreate(Session &s, const pb::Call &call) {
  const pb::TextureCreate &c = call.texture_create();
  const pb::TextureResource &pr = c.resource();
  const pb::TextureSampling &pt = c.sampling();
  const char *what = c.surface() ? "surface" : "texture";
  auto fail = [&](pb::ErrorCode code, const std::string &why) {
    s.tenant->metrics.errors++;
    log(llvm::formatv("session {0} (tenant '{1}'): cannot create a {2} "
                      "object: {3}",
                      s.id, s.tenant->config.name, what, why)
            .str());
    replyStatus(s.routingId, call.seq(), status(code, why, call.seq()));
  };
  // Counted like events: a client cannot grow the backend's table without
  // bound.
  if (s.textures.size() >= s.limits.events)
    return fail(pb::LIMIT_EXCEEDED,
                llvm::formatv("a session may hold at most {0} texture and "
                              "surface objects",
                              s.limits.events));
  if (pr.channel_bits_size() != 4 ||
      (!c.surface() &&
       (pt.address_mode_size() != 3 || pt.border_color_size() != 4)))
    return fail(pb::MALFORMED, "a texture descriptor of the wrong shape");
  auto unsupported = [&](const char *feature) {
    return fail(pb::UNSUPPORTED,
                std::string(feature) + " is not supported yet");
  };
  if (pr.channel_kind() > 3)
    return unsupported("a channel kind other than signed, unsigned or float "
                       "(normalized integer, NV12, block compressed)");
  if (c.resource_view())
    return unsupported("a resource view (cudaResourceViewDesc)");
  if (!c.surface() && pt.max_anisotropy() > 1)
    return unsupported("anisotropic filtering (maxAnisotropy > 1)");
  if (!c.surface() && pt.seamless_cubemap() && pr.cubemap())
    return unsupported("seamless cubemap filtering");
  ResourceDesc r;
  r.kind = ResourceDesc::Kind(std::min<uint32_t>(pr.kind(), 255));
  r.address = pr.address();
  for (int i = 0; i < 4; ++i)
    r.format.bits[i] = pr.channel_bits(i);
  r.format.kind = ChannelKind(std::min<uint32_t>(pr.channel_kind(), 255));
  r.width = pr.width();
  r.height = pr.height();
  r.depth = pr.depth();
  r.pitch = pr.pitch();
  r.layered = pr.layered();
  r.cubemap = pr.cubemap();
  r.levels = std::max<uint32_t>(pr.levels(), 1);
  if (!inSessionMemory(s, r.address, 1))
    return fail(pb::INVALID_ADDRESS,
                llvm::formatv("the texels at {0:x} are not in one of this "
                              "session's allocations",
                              r.address));
  TextureDesc t;
  if (!c.surface()) {
    for (int i = 0; i < 3; ++i)
      t.addressMode[i] =
          AddressMode(std::min<uint32_t>(pt.address_mode(i), 255));
    t.filterMode = FilterMode(std::min<uint32_t>(pt.filter_mode(), 255));
    t.readMode = ReadMode(std::min<uint32_t>(pt.read_mode(), 255));
    t.sRGB = pt.srgb();
    for (int i = 0; i < 4; ++i)
      t.borderColor[i] = pt.border_color(i);
    t.normalizedCoords = pt.normalized_coords();
    t.mipmapFilterMode =
        FilterMode(std::min<uint32_t>(pt.mipmap_filter_mode(), 255));
    t.mipmapLevelBias = pt.mipmap_level_bias();
    t.minMipmapLevelClamp = pt.min_mipmap_level_clamp();
    t.maxMipmapLevelClamp = pt.max_mipmap_level_clamp();
  }
  // In the session's memory domain: only its own kernels can use it, and
  // its texels must be its own memory (the backend checks both).
  llvm::Expected<uint64_t> h = c.surface()
                                   ? backend->createSurfaceObject(r, s.id)
                                   : backend->createTextureObject(r, t, s.id);
  if (!h) {
    std::string why = llvm::toString(h.takeError());
    return fail(llvm::StringRef(why).contains("not supported")
                    ? pb::UNSUPPORTED
                    : pb::INVALID_VALUE,
                why);
  }
  s.textures[*h] = c.surface();
  pb::Reply reply0;
  reply0.set_seq(call.seq());
  reply0.mutable_handle()->set_handle(*h);
  reply(s.routingId, reply0);
}

void Server::Impl::finishInspect(const std::shared_ptr<ModuleImage> &image) {
  auto waiting = std::move(image->waiting);
  for (auto [sid, seq] : waiting) {
    auto it = sessions.find(sid);
    if (it != sessions.end() && !it->second->dead)
      moduleLoaded(*it->second, seq, image);
  }
  if (image->state == ModuleImage::State::Failed || image->users == 0)
    images.erase(image->hash);
}

void Server::Impl::moduleLoaded(Session &s, uint64_t seq,
                                const std::shared_ptr<ModuleImage> &image) {
  if (image->state == ModuleImage::State::Failed)
    return replyStatus(s.routingId, seq,
                       status(pb::COMPILE_ERROR, image->error, seq));
  // The module's variables, as it declares them, before the backend
  // creates any (one instance per session).
  uint64_t variableBytes = 0;
  for (const GlobalInfo &g : image->layout.globals)
    variableBytes += g.size;
  uint64_t variablesKey = 0;
  if (variableBytes) {
    variablesKey = (1ull << 63) | nextVariablesKey++;
    if (llvm::Error e =
            memory->reservePinned(s.tenant->memId, variablesKey, variableBytes,
                                  /*mayWait=*/true)) {
      if (e.isA<MustWaitError>()) {
        // Idle tenants' memory moves out for them on the swap thread: the
        // load ends once that swap has settled.
        llvm::consumeError(std::move(e));
        image->users++; // the compiled image stays cached meanwhile
        pendingModuleLoads.push_back({s.id, seq, image});
        return;
      }
      if (pb::Status lost = lostStatus(seq); lost.code() != pb::OK) {
        llvm::consumeError(std::move(e));
        return replyStatus(s.routingId, seq, lost);
      }
      return replyStatus(
          s.routingId, seq,
          status(pb::OUT_OF_MEMORY, llvm::toString(std::move(e)), seq));
    }
  }
  auto m = std::make_unique<SessionModule>();
  m->handle = s.nextHandle++;
  m->variablesKey = variablesKey;
  m->image = image;
  image->users++;
  pb::Reply r;
  r.set_seq(seq);
  pb::ModuleLoaded *out = r.mutable_module();
  out->set_module(m->handle);
  for (const KernelInfo &k : image->layout.kernels) {
    pb::KernelLayout *l = out->add_kernels();
    l->set_name(k.name);
    for (uint64_t o : k.paramOffsets)
      l->add_param_offsets(o);
    for (uint64_t z : k.paramSizes)
      l->add_param_sizes(z);
    l->set_param_buffer_size(k.paramBufferSize);
  }
  for (const GlobalInfo &g : image->layout.globals) {
    pb::ModuleVariable *v = out->add_variables();
    v->set_name(g.name);
    v->set_size(g.size);
  }
  s.modules[m->handle] = std::move(m);
  reply(s.routingId, r);
}

void Server::Impl::handleCall(const std::string &routingId, int fd,
                              pb::Call &call, std::deque<Frame> &payloads,
                              bool last) {
  uint64_t seq = call.seq();
  // What the call is: synchronous or not, whether it carries a payload
  // frame, and the stream an asynchronous call's error is filed under.
  bool isSync = true, claimed = false;
  uint64_t stream = 0;
  switch (call.op_case()) {
  case pb::Call::kCopyToDevice:
    isSync = !call.copy_to_device().async();
    claimed = true;
    stream = call.copy_to_device().stream();
    break;
  case pb::Call::kCopyToSymbol:
    isSync = !call.copy_to_symbol().async();
    claimed = true;
    stream = call.copy_to_symbol().stream();
    break;
  case pb::Call::kModuleLoad:
    claimed = call.module_load().payload_bytes() != 0;
    break;
  case pb::Call::kCopyDeviceToDevice:
    isSync = !call.copy_device_to_device().async();
    stream = call.copy_device_to_device().stream();
    break;
  case pb::Call::kMemset:
    isSync = !call.memset().async();
    stream = call.memset().stream();
    break;
  case pb::Call::kLaunch:
    isSync = false;
    stream = call.launch().stream();
    break;
  case pb::Call::kEventRecord:
    isSync = false;
    stream = call.event_record().stream();
    break;
  case pb::Call::kStreamWaitEvent:
    isSync = false;
    stream = call.stream_wait_event().stream();
    break;
  case pb::Call::kGraphLaunch:
    isSync = false;
    stream = call.graph_launch().stream();
    break;
  default:
    break;
  }
  Session *s = sessionOf(routingId);
  auto fail = [&](pb::Status st) {
    if (s)
      s->tenant->metrics.errors++;
    if (isSync) {
      replyStatus(routingId, seq, st);
      return;
    }
    // An asynchronous call's error waits for the next synchronisation of
    // its stream (of the default stream when the stream is not known).
    if (!s)
      return;
    auto it = s->streams.find(stream);
    Stream &st0 = it != s->streams.end() ? it->second : s->streams[0];
    if (st0.error.code() == pb::OK)
      st0.error = st;
  };
  // The call's payload frame is taken now, whatever happens to the call,
  // so that a refused call never leaves its frame to the next one.
  Frame payload;
  if (claimed) {
    if (payloads.empty())
      return fail(
          status(pb::MALFORMED, "the call's payload frame is missing", seq));
    payload = std::move(payloads.front());
    payloads.pop_front();
  }
  // A synchronous call is the last of its message: anything after it would
  // be answered out of order.
  if (isSync && !last)
    return fail(status(pb::MALFORMED,
                       "a synchronous call must be the last of its message",
                       seq));
  if (call.op_case() == pb::Call::kHello)
    return hello(routingId, fd, call);
  if (!s || s->dead) {
    return fail(status(pb::NO_SESSION,
                       "no session: the first call must be Hello", seq));
  }
  if (s->sticky.code() != pb::OK && call.op_case() != pb::Call::kPing)
    return fail(s->sticky);
  // Backpressure: a session's queued and running operations, and the copy
  // bytes the server holds for it, are bounded, so that a client that
  // floods the server gets an error instead of its memory.
  bool queues = false, drains = false;
  switch (call.op_case()) {
  case pb::Call::kEventSynchronize:
  case pb::Call::kStreamSynchronize:
  case pb::Call::kDeviceSynchronize:
    // How a client waits for its work to end: refused only well past the
    // limit (a client pipelining waits without reading their replies).
    drains = true;
    break;
  case pb::Call::kLaunch:
  case pb::Call::kCopyToDevice:
  case pb::Call::kCopyFromDevice:
  case pb::Call::kCopyToSymbol:
  case pb::Call::kCopyFromSymbol:
  case pb::Call::kCopyDeviceToDevice:
  case pb::Call::kMemset:
  case pb::Call::kGraphLaunch:
  case pb::Call::kEventRecord:
  case pb::Call::kStreamWaitEvent:
  case pb::Call::kFree:
  case pb::Call::kModuleUnload:
  case pb::Call::kTextureDestroy:
    // Every call that queues an operation.
    queues = true;
    break;
  default:
    break;
  }
  constexpr uint64_t kDrainSlack = 1024;
  if ((queues && s->liveOps >= s->limits.outstanding) ||
      (drains && s->liveOps >= s->limits.outstanding + kDrainSlack))
    return fail(status(pb::LIMIT_EXCEEDED,
                       llvm::formatv("a session may have at most {0} "
                                     "operations outstanding (synchronise "
                                     "more often)",
                                     s->limits.outstanding),
                       seq));
  if (queues &&
      payload.size() > s->limits.outstandingBytes -
                           std::min(s->heldBytes, s->limits.outstandingBytes))
    return fail(status(pb::LIMIT_EXCEEDED,
                       llvm::formatv("a session may have at most {0} bytes "
                                     "of copies outstanding ({1} held, this "
                                     "one {2})",
                                     s->limits.outstandingBytes, s->heldBytes,
                                     payload.size()),
                       seq));

  // Checks this call's payload frame against the size the call claims.
  auto checkPayload = [&](uint64_t expected) -> bool {
    if (payload.size() != expected) {
      fail(status(pb::MALFORMED,
                  llvm::formatv("the payload frame has {0} bytes, the call "
                                "says {1}",
                                payload.size(), expected),
                  seq));
      return false;
    }
    return true;
  };
  auto addressError = [&](uint64_t addr, uint64_t bytes) {
    return status(pb::INVALID_ADDRESS,
                  llvm::formatv("[{0:x}, +{1}) is not inside one of this "
                                "session's allocations",
                                addr, bytes),
                  seq);
  };
  auto simpleReply = [&]() -> pb::Reply {
    pb::Reply r;
    r.set_seq(seq);
    return r;
  };

  switch (call.op_case()) {
  case pb::Call::kPing: {
    pb::Reply r = simpleReply();
    return reply(routingId, r);
  }
  case pb::Call::kGetDevice: {
    pb::Reply r = simpleReply();
    *r.mutable_device() = device;
    return reply(routingId, r);
  }
  case pb::Call::kModuleLoad:
    return moduleLoad(*s, call, payload);
  case pb::Call::kModuleUnload: {
    SessionModule *m = findModule(*s, call.module_unload().module());
    if (!m)
      return fail(
          status(pb::INVALID_HANDLE, "not a module of this session", seq));
    m->unloading = true;
    Op *op = newOp(*s, Op::Type::Unload, 0, seq);
    op->module = m;
    op->reply = true;
    // Compilations in flight finish first (their ops are earlier work).
    for (auto &[key, slot] : m->slots)
      if (slot.state == KernelSlot::State::Compiling) {
        op->pendingDeps++;
        slot.waiting.push_back(op);
      }
    chain(op, /*deviceWide=*/true);
    return submit(op);
  }
  case pb::Call::kFuncAttributes:
  case pb::Call::kOccupancy: {
    bool attrs = call.has_func_attributes();
    uint64_t mh =
        attrs ? call.func_attributes().module() : call.occupancy().module();
    std::string kernel =
        attrs ? call.func_attributes().kernel() : call.occupancy().kernel();
    SessionModule *m = findModule(*s, mh);
    if (!m)
      return fail(
          status(pb::INVALID_HANDLE, "not a module of this session", seq));
    if (!m->image->layout.findKernel(kernel))
      return fail(status(pb::NOT_FOUND,
                         "no kernel named '" + kernel + "' in the module",
                         seq));
    // The answer needs the compiled kernel.
    Op *op = newOp(*s, Op::Type::Marker, 0, seq);
    op->module = m;
    op->kernelName = kernel;
    op->reply = true;
    uint32_t threads = attrs ? 0 : call.occupancy().block_threads();
    uint64_t dyn = attrs ? 0 : call.occupancy().dynamic_shared_bytes();
    op->fill = [op, attrs, threads, dyn](pb::Reply &r) {
      const KernelInfo *k = op->slot && op->slot->compiled
                                ? op->slot->compiled->findKernel(op->kernelName)
                                : nullptr;
      if (!k)
        return;
      uint32_t maxThreads = 1024;
      if (k->maxntid[0])
        maxThreads = std::min<uint32_t>(
            maxThreads, k->maxntid[0] * k->maxntid[1] * k->maxntid[2]);
      if (attrs) {
        pb::KernelAttributes *a = r.mutable_attributes();
        a->set_registers(k->registers ? k->registers : k->registerEstimate);
        a->set_static_shared_bytes(k->staticSharedBytes);
        a->set_max_threads_per_block(maxThreads);
        // The kernel's own parameters, without what the server's passes
        // (slice, watchdog) appended.
        a->set_param_buffer_size(userParamBufferSize(*k));
        a->set_local_bytes(k->privateBytes);
      } else {
        mlir::wooly::KernelSummary sum;
        sum.registerEstimate = k->registerEstimate;
        sum.staticSharedBytes = k->staticSharedBytes;
        r.mutable_occupancy()->set_active_blocks_per_sm(
            threads > maxThreads
                ? 0
                : mlir::wooly::estimateBlocksPerSM(sum, threads, dyn));
      }
    };
    requireSlot(op);
    return submit(op);
  }
  case pb::Call::kMalloc: {
    uint64_t bytes = call.malloc().bytes();
    if (bytes == 0)
      return fail(status(pb::INVALID_VALUE, "cannot allocate 0 bytes", seq));
    if (s->allocations.size() >= s->limits.allocations)
      return fail(status(pb::LIMIT_EXCEEDED,
                         llvm::formatv("a session may hold at most {0} "
                                       "allocations",
                                       s->limits.allocations),
                         seq));
    // Within the quota, on the device (idle tenants' memory may move out
    // to make room), in the session's memory domain: no other session's
    // kernel reaches it.
    // Where idle tenants' memory must move out first, that runs on the swap
    // thread and the reply waits for it (pendingMallocs).
    return allocateFor(PendingMalloc{routingId, s->id, bytes, seq});
  }
  case pb::Call::kFree: {
    uint64_t addr = call.free().address();
    auto it = s->allocations.find(addr);
    if (it == s->allocations.end())
      return fail(status(pb::INVALID_ADDRESS,
                         llvm::formatv("{0:x} is not an allocation of this "
                                       "session",
                                       addr),
                         seq));
    // Later calls can no longer name it; the memory goes once the
    // session's earlier work is done.
    Op *op = newOp(*s, Op::Type::Free, 0, seq);
    op->dst = addr;
    op->bytes = it->second;
    op->reply = true;
    s->allocations.erase(it);
    chain(op, /*deviceWide=*/true);
    return submit(op);
  }
  case pb::Call::kMemInfo: {
    // The tenant's own view: its quota, what it holds (resident or
    // swapped out), and what it may still allocate (idle tenants' memory
    // moves out to make room for it).
    TenantState &t = *s->tenant;
    pb::Reply r = simpleReply();
    r.mutable_memory()->set_total(t.config.quotaBytes);
    r.mutable_memory()->set_used(memory->tenant(t.memId).used());
    r.mutable_memory()->set_free(memory->available(t.memId));
    return reply(routingId, r);
  }
  case pb::Call::kCopyToDevice: {
    const pb::CopyToDevice &c = call.copy_to_device();
    if (!checkPayload(c.payload_bytes()))
      return;
    if (pb::Status st = checkStream(*s, c.stream(), seq); st.code())
      return fail(st);
    if (!inSessionMemory(*s, c.dst(), c.payload_bytes()))
      return fail(addressError(c.dst(), c.payload_bytes()));
    Op *op = newOp(*s, Op::Type::CopyIn, c.stream(), seq);
    op->kind = WorkItem::Kind::Copy;
    op->dst = c.dst();
    op->bytes = c.payload_bytes();
    op->in = std::move(payload);
    op->heldBytes = op->in.size();
    s->heldBytes += op->heldBytes;
    chain(op, false);
    submit(op);
    if (isSync) {
      // The data is the server's now: the caller may reuse its buffer.
      pb::Reply r = simpleReply();
      reply(routingId, r);
    }
    return;
  }
  case pb::Call::kCopyFromDevice: {
    const pb::CopyFromDevice &c = call.copy_from_device();
    if (pb::Status st = checkStream(*s, c.stream(), seq); st.code())
      return fail(st);
    if (c.bytes() > options.maxMessageBytes)
      return fail(status(pb::LIMIT_EXCEEDED,
                         llvm::formatv("a copy of {0} exceeds the message "
                                       "limit of {1}",
                                       bytesText(c.bytes()),
                                       bytesText(options.maxMessageBytes)),
                         seq));
    if (!inSessionMemory(*s, c.src(), c.bytes()))
      return fail(addressError(c.src(), c.bytes()));
    Op *op = newOp(*s, Op::Type::CopyOut, c.stream(), seq);
    op->kind = WorkItem::Kind::Copy;
    op->src = c.src();
    op->bytes = c.bytes();
    op->reply = true;
    op->reportsErrors = true;
    chain(op, false);
    return submit(op);
  }
  case pb::Call::kCopyDeviceToDevice: {
    const pb::CopyDeviceToDevice &c = call.copy_device_to_device();
    if (pb::Status st = checkStream(*s, c.stream(), seq); st.code())
      return fail(st);
    if (!inSessionMemory(*s, c.dst(), c.bytes()))
      return fail(addressError(c.dst(), c.bytes()));
    if (!inSessionMemory(*s, c.src(), c.bytes()))
      return fail(addressError(c.src(), c.bytes()));
    Op *op = newOp(*s, Op::Type::CopyD2D, c.stream(), seq);
    op->kind = WorkItem::Kind::Copy;
    op->dst = c.dst();
    op->src = c.src();
    op->bytes = c.bytes();
    op->reply = isSync;
    op->reportsErrors = isSync;
    chain(op, false);
    return submit(op);
  }
  case pb::Call::kMemset: {
    const pb::Memset &c = call.memset();
    if (pb::Status st = checkStream(*s, c.stream(), seq); st.code())
      return fail(st);
    if (c.value() > 255)
      return fail(
          status(pb::INVALID_VALUE, "memset value must be a byte", seq));
    if (!inSessionMemory(*s, c.dst(), c.bytes()))
      return fail(addressError(c.dst(), c.bytes()));
    Op *op = newOp(*s, Op::Type::Memset, c.stream(), seq);
    op->kind = WorkItem::Kind::Memset;
    op->dst = c.dst();
    op->bytes = c.bytes();
    op->value = uint8_t(c.value());
    op->reply = isSync;
    op->reportsErrors = isSync;
    chain(op, false);
    return submit(op);
  }
  case pb::Call::kCopyToSymbol:
  case pb::Call::kCopyFromSymbol:
  case pb::Call::kGetSymbol: {
    uint64_t mh, stream = 0, offset = 0, bytes = 0;
    std::string symbol;
    if (call.has_copy_to_symbol()) {
      const pb::CopyToSymbol &c = call.copy_to_symbol();
      if (!checkPayload(c.payload_bytes()))
        return;
      mh = c.module(), symbol = c.symbol(), stream = c.stream(),
      offset = c.offset(), bytes = c.payload_bytes();
    } else if (call.has_copy_from_symbol()) {
      const pb::CopyFromSymbol &c = call.copy_from_symbol();
      mh = c.module(), symbol = c.symbol(), stream = c.stream(),
      offset = c.offset(), bytes = c.bytes();
    } else {
      mh = call.get_symbol().module(), symbol = call.get_symbol().symbol();
    }
    if (pb::Status st = checkStream(*s, stream, seq); st.code())
      return fail(st);
    SessionModule *m = findModule(*s, mh);
    if (!m)
      return fail(
          status(pb::INVALID_HANDLE, "not a module of this session", seq));
    const GlobalInfo *g = nullptr;
    for (const GlobalInfo &x : m->image->layout.globals)
      if (x.name == symbol)
        g = &x;
    if (!g)
      return fail(status(pb::NOT_FOUND,
                         "no module variable named '" + symbol + "'", seq));
    if (offset > g->size || bytes > g->size - offset)
      return fail(status(pb::INVALID_VALUE,
                         llvm::formatv("[{0}, +{1}) is outside '{2}' ({3} "
                                       "bytes)",
                                       offset, bytes, symbol, g->size),
                         seq));
    Op::Type type = call.has_copy_to_symbol()     ? Op::Type::SymbolIn
                    : call.has_copy_from_symbol() ? Op::Type::SymbolOut
                                                  : Op::Type::Marker;
    Op *op = newOp(*s, type, stream, seq);
    op->kind = WorkItem::Kind::Copy;
    op->module = m;
    op->kernelName = symbol; // the variable, for the executor
    op->src = offset;
    op->bytes = bytes;
    op->in = std::move(payload);
    op->heldBytes = op->in.size();
    s->heldBytes += op->heldBytes;
    op->reply = isSync;
    op->reportsErrors = isSync && type != Op::Type::Marker;
    if (type == Op::Type::Marker) {
      op->reply = true;
      op->fill = [op, symbol](pb::Reply &r) {
        auto it = op->module->variableAddress.find(symbol);
        if (it == op->module->variableAddress.end())
          return;
        r.mutable_symbol()->set_address(it->second);
        r.mutable_symbol()->set_size(op->module->variables[it->second]);
      };
    }
    requireSlot(op);
    if (type != Op::Type::Marker)
      chain(op, false);
    return submit(op);
  }
  case pb::Call::kLaunch: {
    const pb::Launch &c = call.launch();
    if (pb::Status st = checkStream(*s, c.stream(), seq); st.code())
      return fail(st);
    SessionModule *m = findModule(*s, c.module());
    if (!m)
      return fail(
          status(pb::INVALID_HANDLE, "not a module of this session", seq));
    const KernelInfo *k = m->image->layout.findKernel(c.kernel());
    if (!k)
      return fail(status(pb::NOT_FOUND,
                         "no kernel named '" + c.kernel() + "' in the module",
                         seq));
    if (c.params().size() != k->paramBufferSize)
      return fail(
          status(pb::INVALID_VALUE,
                 llvm::formatv("kernel '{0}': the parameter buffer "
                               "has {1} bytes, the kernel takes {2} "
                               "({3} parameters)",
                               c.kernel(), c.params().size(),
                               k->paramBufferSize, k->paramOffsets.size()),
                 seq));
    LaunchConfig cfg;
    cfg.grid = {c.grid().x(), c.grid().y(), c.grid().z()};
    cfg.block = {c.block().x(), c.block().y(), c.block().z()};
    cfg.dynamicSharedBytes = c.dynamic_shared_bytes();
    cfg.cooperative = c.cooperative();
    uint64_t blocks = uint64_t(cfg.grid[0]) * cfg.grid[1] * cfg.grid[2];
    if (cfg.cooperative && blocks > device.max_cooperative_blocks())
      return fail(status(
          pb::INVALID_VALUE,
          device.max_cooperative_blocks()
              ? llvm::formatv("kernel '{0}': a cooperative launch of {1} "
                              "blocks, the device runs at most {2} at once",
                              c.kernel(), blocks,
                              device.max_cooperative_blocks())
                    .str()
              : "kernel '" + c.kernel() +
                    "': the device has no cooperative launches",
          seq));
    uint64_t threads = uint64_t(cfg.block[0]) * cfg.block[1] * cfg.block[2];
    const pb::Dim3 &mb = device.max_block(), &mg = device.max_grid();
    if (!threads || !cfg.grid[0] || !cfg.grid[1] || !cfg.grid[2] ||
        threads > device.max_threads_per_block() || cfg.block[0] > mb.x() ||
        cfg.block[1] > mb.y() || cfg.block[2] > mb.z() ||
        cfg.grid[0] > mg.x() || cfg.grid[1] > mg.y() || cfg.grid[2] > mg.z())
      return fail(status(pb::INVALID_VALUE,
                         llvm::formatv("kernel '{0}': invalid configuration: "
                                       "grid {1}x{2}x{3}, block {4}x{5}x{6}",
                                       c.kernel(), cfg.grid[0], cfg.grid[1],
                                       cfg.grid[2], cfg.block[0], cfg.block[1],
                                       cfg.block[2]),
                         seq));
    if (cfg.dynamicSharedBytes > device.shared_per_block())
      return fail(status(pb::INVALID_VALUE,
                         llvm::formatv("kernel '{0}': {1} bytes of dynamic "
                                       "shared memory, the limit is {2}",
                                       c.kernel(), cfg.dynamicSharedBytes,
                                       device.shared_per_block()),
                         seq));
    Op *op = newOp(*s, Op::Type::Launch, c.stream(), seq);
    op->kind = WorkItem::Kind::Launch;
    op->module = m;
    op->kernelName = c.kernel();
    op->config = cfg;
    op->config.printfSink = [out = s->output](llvm::StringRef text) {
      out->append(text);
    };
    // The kernel reaches the session's own memory only (where the backend
    // has memory domains).
    op->config.memoryDomains = {s->id};
    op->launch = &op->config;
    op->params.assign(c.params().begin(), c.params().end());
    requireSlot(op);
    chain(op, false);
    return submit(op);
  }
  case pb::Call::kStreamCreate: {
    if (s->streams.size() >= s->limits.streams)
      return fail(status(pb::LIMIT_EXCEEDED,
                         llvm::formatv("a session may have at most {0} "
                                       "streams",
                                       s->limits.streams),
                         seq));
    uint64_t h = s->nextHandle++;
    s->streams[h];
    pb::Reply r = simpleReply();
    r.mutable_handle()->set_handle(h);
    return reply(routingId, r);
  }
  case pb::Call::kTextureCreate:
    return textureCreate(*s, call);
  case pb::Call::kTextureDestroy: {
    const pb::TextureDestroy &d = call.texture_destroy();
    auto it = s->textures.find(d.handle());
    if (it == s->textures.end() || it->second != d.surface())
      return fail(
          status(pb::INVALID_HANDLE,
                 llvm::formatv("{0:x} is not a {1} object of this "
                               "session",
                               d.handle(), d.surface() ? "surface" : "texture"),
                 seq));
    // Later calls can no longer name it; it goes once the session's earlier
    // work (kernels that may sample it) is done.
    s->textures.erase(it);
    Op *op = newOp(*s, Op::Type::DestroyTexture, 0, seq);
    op->dst = d.handle();
    op->value = d.surface();
    op->reply = true;
    chain(op, /*deviceWide=*/true);
    return submit(op);
  }
  case pb::Call::kStreamDestroy: {
    uint64_t h = call.stream_destroy().stream();
    if (h == 0)
      return fail(status(pb::INVALID_HANDLE,
                         "the default stream cannot be destroyed", seq));
    if (pb::Status st = checkStream(*s, h, seq); st.code())
      return fail(st);
    // Its queued work still runs (as in CUDA); the handle is gone now.
    Stream &st = s->streams[h];
    st.destroyed = true;
    if (!st.tail)
      s->streams.erase(h);
    pb::Reply r = simpleReply();
    return reply(routingId, r);
  }
  case pb::Call::kStreamSynchronize:
  case pb::Call::kStreamQuery: {
    uint64_t h = call.has_stream_synchronize()
                     ? call.stream_synchronize().stream()
                     : call.stream_query().stream();
    if (pb::Status st = checkStream(*s, h, seq); st.code())
      return fail(st);
    if (call.has_stream_query()) {
      Stream &st = s->streams[h];
      bool busy = st.tail || (h != 0 && s->streams[0].tail);
      return replyStatus(routingId, seq,
                         busy ? status(pb::NOT_READY, "work pending", seq)
                              : pb::Status());
    }
    Op *op = newOp(*s, Op::Type::Marker, h, seq);
    op->reply = true;
    op->reportsErrors = true;
    chain(op, false);
    return submit(op);
  }
  case pb::Call::kStreamWaitEvent: {
    const pb::StreamWaitEvent &w = call.stream_wait_event();
    if (pb::Status st = checkStream(*s, w.stream(), seq); st.code())
      return fail(st);
    auto ev = s->events.find(w.event());
    if (ev == s->events.end())
      return fail(
          status(pb::INVALID_HANDLE, "not an event of this session", seq));
    Op *op = newOp(*s, Op::Type::Marker, w.stream(), seq);
    if (ev->second.record)
      addDep(op, ev->second.record);
    chain(op, false);
    return submit(op);
  }
  case pb::Call::kEventCreate: {
    if (s->events.size() >= s->limits.events)
      return fail(status(pb::LIMIT_EXCEEDED,
                         llvm::formatv("a session may have at most {0} "
                                       "events",
                                       s->limits.events),
                         seq));
    uint64_t h = s->nextHandle++;
    s->events[h];
    pb::Reply r = simpleReply();
    r.mutable_handle()->set_handle(h);
    return reply(routingId, r);
  }
  case pb::Call::kEventDestroy: {
    auto ev = s->events.find(call.event_destroy().event());
    if (ev == s->events.end())
      return fail(
          status(pb::INVALID_HANDLE, "not an event of this session", seq));
    // A pending record finishes without it (Op::event names it by handle).
    s->events.erase(ev);
    pb::Reply r = simpleReply();
    return reply(routingId, r);
  }
  case pb::Call::kEventRecord: {
    const pb::EventRecord &e = call.event_record();
    if (pb::Status st = checkStream(*s, e.stream(), seq); st.code())
      return fail(st);
    auto ev = s->events.find(e.event());
    if (ev == s->events.end())
      return fail(
          status(pb::INVALID_HANDLE, "not an event of this session", seq));
    Op *op = newOp(*s, Op::Type::EventRecord, e.stream(), seq);
    op->event = e.event();
    ev->second.record = op;
    ev->second.recorded = false;
    chain(op, false);
    return submit(op);
  }
  case pb::Call::kEventQuery:
  case pb::Call::kEventSynchronize:
  case pb::Call::kEventElapsed: {
    auto find = [&](uint64_t h) -> Event * {
      auto it = s->events.find(h);
      return it == s->events.end() ? nullptr : &it->second;
    };
    if (call.has_event_elapsed()) {
      Event *a = find(call.event_elapsed().start());
      Event *b = find(call.event_elapsed().end());
      if (!a || !b)
        return fail(
            status(pb::INVALID_HANDLE, "not an event of this session", seq));
      if (a->record || b->record)
        return fail(status(pb::NOT_READY, "an event is still pending", seq));
      if (!a->recorded || !b->recorded)
        return fail(
            status(pb::INVALID_VALUE, "an event has not been recorded", seq));
      pb::Reply r = simpleReply();
      r.mutable_elapsed()->set_ms(
          float(std::chrono::duration<double, std::milli>(b->when - a->when)
                    .count()));
      return reply(routingId, r);
    }
    uint64_t h = call.has_event_query() ? call.event_query().event()
                                        : call.event_synchronize().event();
    Event *e = find(h);
    if (!e)
      return fail(
          status(pb::INVALID_HANDLE, "not an event of this session", seq));
    if (call.has_event_query())
      return replyStatus(routingId, seq,
                         e->record ? status(pb::NOT_READY, "work pending", seq)
                                   : pb::Status());
    Op *op = newOp(*s, Op::Type::Marker, 0, seq);
    op->reply = true;
    if (e->record)
      addDep(op, e->record);
    return submit(op);
  }
  case pb::Call::kGraphCreate: {
    if (s->graphs.size() >= s->limits.graphs)
      return fail(status(pb::LIMIT_EXCEEDED,
                         llvm::formatv("a session may keep at most {0} graphs",
                                       s->limits.graphs),
                         seq));
    // Measured before the calls are moved out of the message.
    uint64_t bytes = call.graph_create().ByteSizeLong();
    auto *calls = call.mutable_graph_create()->mutable_calls();
    if (unsigned(calls->size()) > options.maxGraphCalls)
      return fail(status(pb::LIMIT_EXCEEDED,
                         llvm::formatv("a graph may hold at most {0} calls, "
                                       "this one has {1}",
                                       options.maxGraphCalls, calls->size()),
                         seq));
    std::vector<pb::Call> stored;
    stored.reserve(calls->size());
    for (int i = 0; i < calls->size(); ++i) {
      pb::Call &c = (*calls)[i];
      switch (c.op_case()) {
      case pb::Call::kLaunch:
      case pb::Call::kEventRecord:
      case pb::Call::kStreamWaitEvent:
        break;
      case pb::Call::kMemset:
        c.mutable_memset()->set_async(true);
        break;
      case pb::Call::kCopyDeviceToDevice:
        c.mutable_copy_device_to_device()->set_async(true);
        break;
      default:
        return fail(status(pb::INVALID_VALUE,
                           llvm::formatv("graph call {0} is not a launch, "
                                         "memset, device-to-device copy, event "
                                         "record or stream wait",
                                         i),
                           seq));
      }
      stored.push_back(std::move(c));
    }
    if (s->graphBytes + bytes > options.maxGraphBytesPerSession)
      return fail(status(pb::LIMIT_EXCEEDED,
                         llvm::formatv("the session's graphs would keep {0} "
                                       "bytes, the limit is {1}",
                                       s->graphBytes + bytes,
                                       options.maxGraphBytesPerSession),
                         seq));
    s->graphBytes += bytes;
    uint64_t h = s->nextHandle++;
    s->graphs.emplace(h, Session::Graph{std::move(stored), bytes});
    pb::Reply r = simpleReply();
    r.mutable_handle()->set_handle(h);
    return reply(routingId, r);
  }
  case pb::Call::kGraphDestroy: {
    auto g = s->graphs.find(call.graph_destroy().graph());
    if (g == s->graphs.end())
      return fail(status(pb::INVALID_HANDLE,
                         llvm::formatv("graph {0} is not a graph of this "
                                       "session",
                                       call.graph_destroy().graph()),
                         seq));
    s->graphBytes -= g->second.bytes;
    s->graphs.erase(g);
    pb::Reply r = simpleReply();
    return reply(routingId, r);
  }
  case pb::Call::kGraphLaunch: {
    auto it = s->graphs.find(call.graph_launch().graph());
    if (it == s->graphs.end())
      return fail(status(pb::INVALID_HANDLE,
                         llvm::formatv("graph {0} is not a graph of this "
                                       "session",
                                       call.graph_launch().graph()),
                         seq));
    if (pb::Status st = checkStream(*s, stream, seq); st.code() != pb::OK)
      return fail(st);
    // All of it or nothing: a graph never runs in part for backpressure.
    if (s->liveOps + it->second.calls.size() > s->limits.outstanding)
      return fail(
          status(pb::LIMIT_EXCEEDED,
                 llvm::formatv("a graph of {0} calls would pass the "
                               "session's {1} operations outstanding",
                               it->second.calls.size(), s->limits.outstanding),
                 seq));
    // Each stored call goes through the same checks as if it had been sent
    // now, on this stream, under this call's sequence number.
    std::deque<Frame> none;
    for (const pb::Call &stored : it->second.calls) {
      pb::Call c = stored;
      c.set_seq(seq);
      switch (c.op_case()) {
      case pb::Call::kLaunch:
        c.mutable_launch()->set_stream(stream);
        break;
      case pb::Call::kMemset:
        c.mutable_memset()->set_stream(stream);
        break;
      case pb::Call::kCopyDeviceToDevice:
        c.mutable_copy_device_to_device()->set_stream(stream);
        break;
      case pb::Call::kEventRecord:
        c.mutable_event_record()->set_stream(stream);
        break;
      case pb::Call::kStreamWaitEvent:
        c.mutable_stream_wait_event()->set_stream(stream);
        break;
      default:
        break;
      }
      handleCall(routingId, fd, c, none, false);
      if (s->dead || s->sticky.code() != pb::OK)
        break;
    }
    return;
  }
  case pb::Call::kSetHeapSize: {
    uint64_t bytes = call.set_heap_size().bytes();
    if (bytes == 0)
      return fail(status(pb::INVALID_VALUE, "a device heap of 0 bytes", seq));
    if (!backend->hasDomainHeaps())
      return fail(status(pb::UNSUPPORTED,
                         "the device heap's size cannot be set on the " +
                             backend->kind().str() +
                             " backend yet (its heap is every tenant's)",
                         seq));
    // Charged to the tenant's quota, pinned (the backend makes the heap
    // and kernels write it behind the memory manager's back). The previous
    // size's reservation goes first; it comes back if this one fails.
    auto restore = [&] {
      if (s->heapKey)
        llvm::consumeError(memory->reservePinned(s->tenant->memId, s->heapKey,
                                                 s->heapBytes, false,
                                                 "the device heap"));
    };
    if (s->heapKey)
      memory->removePinned(s->heapKey);
    uint64_t key = (1ull << 63) | nextVariablesKey++;
    if (llvm::Error e =
            memory->reservePinned(s->tenant->memId, key, bytes,
                                  /*mayWait=*/false, "the device heap")) {
      restore();
      return fail(status(pb::OUT_OF_MEMORY, llvm::toString(std::move(e)), seq));
    }
    if (llvm::Error e = backend->setHeapSize(s->id, bytes)) {
      // The heap is in use already (a kernel allocated from it).
      memory->removePinned(key);
      restore();
      return fail(status(pb::INVALID_VALUE, llvm::toString(std::move(e)), seq));
    }
    s->heapKey = key;
    s->heapBytes = bytes;
    log(llvm::formatv("session {0}: device heap {1}", s->id, bytesText(bytes))
            .str());
    pb::Reply r = simpleReply();
    return reply(routingId, r);
  }
  case pb::Call::kDeviceSynchronize: {
    Op *op = newOp(*s, Op::Type::Marker, 0, seq);
    op->reply = true;
    op->reportsErrors = true;
    op->deviceWide = true;
    chain(op, true);
    return submit(op);
  }
  case pb::Call::kHello:
  case pb::Call::OP_NOT_SET:
    break;
  }
  return fail(status(
      pb::UNSUPPORTED,
      "unknown call (field " + std::to_string(int(call.op_case())) + ")", seq));
}

//===----------------------------------------------------------------------===//
// Ops: dependencies, dispatch, completion
//===----------------------------------------------------------------------===//

Op *Server::Impl::newOp(Session &s, Op::Type type, uint64_t stream,
                        uint64_t seq) {
  Op *op = new Op();
  op->type = type;
  op->id = nextOpId++;
  op->session = &s;
  op->WorkItem::session = s.id;
  op->tenant = &s.tenant->config;
  op->stream = stream;
  op->seq = seq;
  op->arrived = Clock::now();
  s.liveOps++;
  s.tenant->metrics.queued++;
  return op;
}

void Server::Impl::addDep(Op *op, Op *on) {
  if (!on || on == op)
    return;
  on->dependents.push_back(op);
  op->pendingDeps++;
}

void Server::Impl::chain(Op *op, bool deviceWide) {
  Session &s = *op->session;
  if (deviceWide || op->stream == 0) {
    // CUDA's legacy default stream: waits for every stream of the session.
    for (auto &[h, st] : s.streams)
      addDep(op, st.tail);
  } else {
    addDep(op, s.streams[op->stream].tail);
    addDep(op, s.streams[0].tail);
  }
  if (!deviceWide)
    s.streams[op->stream].tail = op;
}

void Server::Impl::requireSlot(Op *op) {
  SessionModule &m = *op->module;
  // Kernel by kernel where the backend can add kernels to a loaded module;
  // module variables need any part (each defines them all), else one of
  // variables only.
  std::string key = op->kernelName;
  if (!backend->canExtendModules()) {
    key = kWholeModule;
  } else if (op->type != Op::Type::Launch &&
             !m.image->layout.findKernel(op->kernelName)) {
    key = kVariablesOnly;
    for (auto &[k, slot] : m.slots)
      if (slot.state == KernelSlot::State::Ready ||
          slot.state == KernelSlot::State::Compiling)
        key = k;
  }
  KernelSlot &slot = m.slots[key];
  op->slot = &slot;
  if (slot.state == KernelSlot::State::None)
    startCompile(*op->session, m, key, slot);
  if (slot.state == KernelSlot::State::Compiling) {
    op->pendingDeps++;
    slot.waiting.push_back(op);
  }
}

/// Two pass pipelines, one after the other (either may be empty).
static std::string pipeline(llvm::StringRef first, llvm::StringRef second) {
  if (first.empty() || second.empty())
    return (first + second).str();
  return (first + "," + second).str();
}

void Server::Impl::startCompile(Session &s, SessionModule &m,
                                const std::string &key, KernelSlot &slot) {
  slot.state = KernelSlot::State::Compiling;
  std::shared_ptr<ModuleImage> image = m.image;
  KernelSlot *slotPtr = &slot;
  SessionModule *mPtr = &m;
  uint64_t sid = s.id;
  // Kernels of tenants below latency-critical are compiled sliced when the
  // scheduler paces them: kernel by kernel on the cpu backend, a whole
  // module at a time for the device's own target on the others (cuda loads
  // modules whole; one refused kernel leaves the whole module as written).
  bool slice = paceKernels && key != kVariablesOnly &&
               s.tenant->config.priorityClass != PriorityClass::LatencyCritical;
  std::string sliceTarget = backend->nativeTarget();
  // Every kernel is contained where the module allows; on a GPU that means
  // compiling it for the device's own target.
  std::string contain = image->containable() ? containPasses : "";
  bool native = slice || (containTraps && !contain.empty());
  compileQueue.push([this, image, key, slotPtr, mPtr, sid, slice, native,
                     sliceTarget, contain] {
    CompileInput in;
    in.text = image->text;
    in.name = image->name;
    CompileOptions co;
    if (key == kVariablesOnly)
      co.kernels.emplace();
    else if (key != kWholeModule)
      co.kernels = std::vector<std::string>{key};
    auto start = Clock::now();
    bool hit = false, sliced = false;
    std::string error, refusal;
    std::shared_ptr<const CompiledModule> module;
    // Nothing thrown here may end the thread (and the server).
    try {
      auto target = Target::parse("host");
      if (!target) {
        error = llvm::toString(target.takeError());
      } else if (native) {
        // For the device's own target: sliced and/or contained. A kernel
        // wooly-slice refuses runs as written (the scheduler holds it back
        // while a latency-critical tenant is active); a module the passes
        // or the device refuse runs uncontained, as written.
        co.passes = pipeline(slice ? "wooly-slice" : "", contain);
        if (auto sliceTo = Target::parse(sliceTarget); !sliceTo) {
          refusal = llvm::toString(sliceTo.takeError());
        } else if (auto c = cache->getOrCompile(in, *sliceTo, co, &hit)) {
          module = *c;
          sliced = slice;
        } else {
          refusal = llvm::toString(c.takeError());
          if (key == kWholeModule && image->layout.kernels.size() > 1) {
            // A module compiled whole: the kernels the passes accept are
            // sliced, the others run as written (each tried alone).
            std::vector<std::string> accepted, refused;
            for (const KernelInfo &k : image->layout.kernels) {
              CompileOptions one = co;
              one.kernels = std::vector<std::string>{k.name};
              bool h = false;
              auto r = cache->getOrCompile(in, *sliceTo, one, &h);
              if (r)
                accepted.push_back(k.name);
              else
                refused.push_back(k.name + " (" +
                                  llvm::StringRef(llvm::toString(r.takeError()))
                                      .split('\n')
                                      .first.str() +
                                  ")");
            }
            if (!accepted.empty()) {
              co.passes = pipeline(
                  "wooly-slice{kernels=" + llvm::join(accepted, ",") + "}",
                  contain);
              if (auto some = cache->getOrCompile(in, *sliceTo, co, &hit)) {
                module = *some;
                sliced = slice;
                refusal = llvm::join(refused, "; ");
              } else {
                llvm::consumeError(some.takeError());
              }
            }
          }
        }
      }
      if (!module && slice && containTraps && !contain.empty()) {
        // Not sliced, still contained.
        co.passes = contain;
        if (auto sliceTo = Target::parse(sliceTarget))
          if (auto c = cache->getOrCompile(in, *sliceTo, co, &hit))
            module = *c;
          else
            refusal += "; " + llvm::toString(c.takeError());
        else
          llvm::consumeError(sliceTo.takeError());
      }
      // The fallback: the host target gives the layout, and a GPU runs the
      // PTX as written; the cpu backend runs it with its watchdog.
      co.passes = containTraps ? "" : contain;
      // The first part loads the module, the others extend it.
      auto load = [&]() -> llvm::Error {
        std::lock_guard<std::mutex> lock(mPtr->loadMutex);
        if (mPtr->loaded)
          return backend->extendModule(mPtr->loaded, module);
        auto l = backend->loadModule(module, image->text);
        if (!l)
          return l.takeError();
        // Its variables are the session's: no other session's kernel
        // reaches them.
        backend->setModuleDomain(*l, sid);
        mPtr->loaded = *l;
        return llvm::Error::success();
      };
      if (module) {
        // A sliced module the device refuses (the driver's JIT) is a
        // refusal too: the module as written runs instead.
        if (llvm::Error e = load()) {
          refusal = llvm::toString(std::move(e));
          module.reset();
          sliced = false;
        }
      }
      if (target && !module) {
        auto c = cache->getOrCompile(in, *target, co, &hit);
        if (c)
          module = *c;
        else
          error = llvm::toString(c.takeError());
        if (module)
          if (llvm::Error e = load())
            error = llvm::toString(std::move(e));
      }
    } catch (const std::exception &x) {
      error = std::string("compile failed: ") + x.what();
    }
    double ms =
        std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    post([this, image, key, slotPtr, mPtr, sid, module, error, ms, hit, sliced,
          refusal, slice] {
      KernelSlot &slot = *slotPtr;
      SessionModule &m = *mPtr;
      slot.compiled = module;
      slot.error = error;
      slot.sliced = sliced;
      if (!refusal.empty() && error.empty() && !slice)
        log(llvm::formatv("session {0}: {1} cannot be contained, it runs as "
                          "written (a trap or fault of it ends the device "
                          "context): {2}",
                          sid, image->name, refusal)
                .str());
      else if (!refusal.empty() && error.empty())
        log(llvm::formatv("session {0}: {1} of {2} cannot be sliced, {3} "
                          "whole (held back while a latency-critical tenant "
                          "is active): {4}",
                          sid,
                          key != kWholeModule ? "kernel " + key
                          : sliced            ? std::string("some kernels")
                                              : std::string("the kernels"),
                          image->name,
                          key == kWholeModule ? "they run" : "it runs", refusal)
                .str());
      slot.state =
          error.empty() ? KernelSlot::State::Ready : KernelSlot::State::Failed;
      std::string what = key == kWholeModule ? "module " + image->name
                         : key == kVariablesOnly
                             ? "the variables of " + image->name
                             : "kernel " + key + " of " + image->name;
      if (error.empty()) {
        log(llvm::formatv("session {0}: {1} ready in {2:f1} ms ({3}{4})", sid,
                          what, ms, hit ? "compile cache hit" : "compiled",
                          sliced ? ", sliced" : "")
                .str());
        if (module)
          for (const GlobalInfo &g : module->globals) {
            auto addr = backend->globalAddress(m.loaded, g.name);
            if (!addr) {
              llvm::consumeError(addr.takeError());
              continue;
            }
            m.variables[addr->first] = addr->second;
            m.variableAddress[g.name] = addr->first;
          }
      } else {
        log(llvm::formatv("session {0}: {1} failed to compile: {2}", sid, what,
                          error)
                .str());
      }
      for (Op *op : std::exchange(slot.waiting, {}))
        if (--op->pendingDeps == 0)
          makeReady(op);
      dispatch();
    });
  });
}

void Server::Impl::submit(Op *op) {
  if (op->pendingDeps == 0)
    makeReady(op);
}

pb::Status Server::Impl::beginWrites(Op *op, bool *mustWait) {
  if (!memory->dedups())
    return pb::Status();
  uint64_t tenant = op->session->tenant->memId;
  auto logCopyOnWrite = [&](uint64_t base, uint64_t bytes,
                            const std::string &why) {
    log(llvm::formatv("tenant '{0}': {1} at {2:x} shared its bytes with "
                      "other allocations: it gets a copy of its own before "
                      "a write (copy on write){3}",
                      op->session->tenant->config.name, bytesText(bytes), base,
                      why)
            .str());
  };
  auto fail = [&](llvm::Error e) {
    for (uint64_t base : op->writes)
      memory->endWrite(base);
    op->writes.clear();
    if (e.isA<MustWaitError>()) {
      llvm::consumeError(std::move(e));
      *mustWait = true;
      return pb::Status();
    }
    if (pb::Status lost = lostStatus(op->seq); lost.code() != pb::OK) {
      llvm::consumeError(std::move(e));
      return lost;
    }
    return status(pb::OUT_OF_MEMORY, llvm::toString(std::move(e)), op->seq);
  };
  // Counts a write to the allocation `addr` falls in; returns its base
  // and size ({0, 0}: memory deduplication leaves alone).
  std::pair<uint64_t, uint64_t> range;
  auto write = [&](uint64_t addr, uint64_t bytes) -> llvm::Error {
    bool copied = false;
    auto r = memory->beginWrite(tenant, addr, bytes, &copied);
    if (!r)
      return r.takeError();
    if (copied)
      logCopyOnWrite(r->first, r->second, "");
    range = *r;
    if (r->second)
      op->writes.push_back(r->first);
    return llvm::Error::success();
  };
  switch (op->type) {
  case Op::Type::CopyIn:
  case Op::Type::CopyD2D:
  case Op::Type::Memset:
    if (llvm::Error e = write(op->dst, op->bytes))
      return fail(std::move(e));
    // A copy that fills a whole allocation hashes its data.
    op->hashContent = op->type == Op::Type::CopyIn && range.first == op->dst &&
                      range.second == op->bytes;
    return pb::Status();
  case Op::Type::Launch: {
    const KernelInfo *k = op->kernel;
    if (!k || k->writesUnknownMemory) {
      // It may write any of the tenant's memory.
      std::vector<std::pair<uint64_t, uint64_t>> copied;
      auto all = memory->beginWriteAll(tenant, &copied);
      if (!all)
        return fail(all.takeError());
      for (auto [base, bytes] : copied)
        logCopyOnWrite(base, bytes,
                       ": kernel '" + op->kernelName +
                           "' may write memory that no parameter names");
      op->writes = std::move(*all);
      return pb::Status();
    }
    // Each parameter the kernel may write through (or that escapes), where
    // it points into one of the tenant's allocations; the others are only
    // read: an allocation the host wrote in parts is hashed now (and may
    // share a copy).
    for (size_t i = 0; i < k->paramOffsets.size(); ++i) {
      bool readOnly = i < k->readOnlyParams.size() && k->readOnlyParams[i];
      if (k->paramSizes[i] != 8 || k->paramOffsets[i] + 8 > op->params.size())
        continue;
      uint64_t value;
      std::memcpy(&value, op->params.data() + k->paramOffsets[i], 8);
      if (readOnly) {
        std::string shared = memory->noteRead(tenant, value);
        if (!shared.empty())
          log("tenant '" + op->session->tenant->config.name + "': " + shared);
      } else if (llvm::Error e = write(value, 1)) {
        return fail(std::move(e));
      }
    }
    return pb::Status();
  }
  default:
    return pb::Status();
  }
}

void Server::Impl::makeReady(Op *op, std::deque<Op *> *work) {
  Session &s = *op->session;
  // Completes `op` now, or in the caller's worklist when there is one.
  auto done = [&] {
    if (work)
      work->push_back(op);
    else
      complete(op);
  };
  auto cancel = [&](pb::Status st) {
    op->result = std::move(st);
    done();
  };
  // Freeing and unloading happen even for a session that ended: they
  // return what the session can no longer name.
  if (op->type == Op::Type::Free) {
    if (llvm::Error e = memory->free(op->dst))
      op->result = status(pb::INTERNAL, llvm::toString(std::move(e)), op->seq);
    return done();
  }
  if (op->type == Op::Type::DestroyTexture) {
    llvm::Error e = op->value ? backend->destroySurfaceObject(op->dst)
                              : backend->destroyTextureObject(op->dst);
    if (e)
      op->result = status(pb::INTERNAL, llvm::toString(std::move(e)), op->seq);
    return done();
  }
  if (op->type == Op::Type::Unload) {
    SessionModule &m = *op->module;
    memory->removePinned(m.variablesKey);
    if (m.loaded)
      llvm::consumeError(backend->unloadModule(m.loaded));
    std::shared_ptr<ModuleImage> image = m.image;
    s.modules.erase(m.handle);
    op->module = nullptr;
    if (--image->users == 0 && image->state != ModuleImage::State::Inspecting)
      images.erase(image->hash);
    return done();
  }
  if (s.dead)
    return cancel(status(pb::NO_SESSION, "the session ended", op->seq));
  bool deviceWork =
      op->type == Op::Type::Launch || op->type == Op::Type::CopyIn ||
      op->type == Op::Type::CopyOut || op->type == Op::Type::CopyD2D ||
      op->type == Op::Type::Memset || op->type == Op::Type::SymbolIn ||
      op->type == Op::Type::SymbolOut;
  if (s.sticky.code() != pb::OK && deviceWork)
    return cancel(s.sticky);
  if (op->slot && op->slot->state == KernelSlot::State::Failed)
    return cancel(status(pb::COMPILE_ERROR, op->slot->error, op->seq));
  if (!deviceWork)
    return done();
  // Its tenant's memory comes back (if it was moved out) and stays until
  // the op completes; while others' work keeps it out, the op waits.
  if (!op->acquired) {
    switch (memory->acquire(s.tenant->memId)) {
    case Acquired::Yes:
      op->acquired = true;
      break;
    case Acquired::Wait:
      memoryWaiters.push_back(op);
      memoryWaiting = memoryWaiters.size();
      return;
    case Acquired::Never:
      return cancel(status(pb::OUT_OF_MEMORY,
                           "the tenant's memory cannot come back: the "
                           "device's memory that cannot move out leaves no "
                           "room for it",
                           op->seq));
    }
  }
  if (op->type == Op::Type::Launch)
    op->kernel = op->slot->compiled->findKernel(op->kernelName);
  bool mustWait = false;
  if (pb::Status st = beginWrites(op, &mustWait); st.code() != pb::OK)
    return cancel(std::move(st));
  if (mustWait) {
    // A copy on write that remaps memory the tenant's other work may be
    // reading, or that needs room made on the swap thread: the op lets its
    // memory go and waits for that work or that swap.
    memory->release(s.tenant->memId);
    op->acquired = false;
    memoryWaiters.push_back(op);
    memoryWaiting = memoryWaiters.size();
    return;
  }
  if (op->type == Op::Type::SymbolIn || op->type == Op::Type::SymbolOut) {
    // The variable's address, resolved here: the executor reads only the
    // op (the module's tables belong to this thread).
    auto it = op->module->variableAddress.find(op->kernelName);
    if (it == op->module->variableAddress.end())
      return cancel(status(pb::NOT_FOUND,
                           "module variable '" + op->kernelName +
                               "' has no address on this device",
                           op->seq));
    op->dst = it->second + op->src;
  }
  if (op->type == Op::Type::Launch) {
    const LaunchConfig &c = op->config;
    op->kernelKey =
        llvm::xxh3_64bits(op->module->image->hash + "/" + op->kernelName);
    op->gridBlocks = uint64_t(c.grid[0]) * c.grid[1] * c.grid[2];
    // Slices name virtual blocks with 32 bits.
    // A cooperative launch's blocks all run at once: never in slices, never
    // fused with others.
    op->sliceable = op->kernel && isSliced(*op->kernel) &&
                    op->gridBlocks <= UINT32_MAX && !c.cooperative;
    // Fused launches run the kernel as written, merged with others: not
    // for modules with variables (each session has its own instance) or
    // printf (a fused launch has one output sink).
    const ModuleImage &image = *op->module->image;
    op->coalescible = coalesceOn && op->kernel && !c.cooperative &&
                      image.layout.globals.empty() &&
                      image.text.find("vprintf") == std::string::npos &&
                      op->gridBlocks <= UINT32_MAX;
    op->threadsPerBlock = c.block[0] * c.block[1] * c.block[2];
    if (op->kernel) {
      op->registersPerThread = op->kernel->registers
                                   ? op->kernel->registers
                                   : op->kernel->registerEstimate;
      op->sharedBytesPerBlock =
          op->kernel->staticSharedBytes + c.dynamicSharedBytes;
    }
  }
  scheduler->ready(op, nowNanos());
  queuedOps++;
  preempt();
}

void Server::Impl::dispatch() {
  // What the scheduler hands out runs on an executor, except copies and
  // memsets of up to 1 MiB (a memcpy of some 100 us) on a backend that
  // copies by memcpy (cpu): those run here, at once, instead of paying two
  // thread hand-offs (a 4-byte read-back would cost more in hand-offs than
  // in the copy). The scheduler still decides their order and is told they
  // finished.
  constexpr uint64_t kInlineBytes = 1 << 20;
  while (idleExecutors > 0) {
    Dispatch d = scheduler->next(nowNanos());
    if (!d)
      return;
    auto *op = static_cast<Op *>(d.item);
    std::vector<Op *> ops = {op};
    for (WorkItem *w : d.fused)
      ops.push_back(static_cast<Op *>(w));
    queuedOps -= ops.size();
    // Work queued before its session ended or faulted does not run.
    bool anyLive = false;
    for (Op *o : ops) {
      o->skip = o->session->dead || o->session->sticky.code() != pb::OK;
      if (o->skip)
        o->result = o->session->dead
                        ? status(pb::NO_SESSION, "the session ended", o->seq)
                        : o->session->sticky;
      anyLive |= !o->skip;
    }
    if (!anyLive) {
      scheduler->finished(d, Outcome{0, 0, true, Outcome::Fusion::Pending},
                          nowNanos());
      for (Op *o : ops)
        complete(o);
      continue;
    }
    auto busy = [this](bool starts) {
      std::lock_guard<std::mutex> lock(tenantsMutex);
      if (starts && running++ == 0)
        busySince = Clock::now();
      if (!starts && --running == 0)
        busySeconds +=
            std::chrono::duration<double>(Clock::now() - busySince).count();
    };
    busy(true);
    if (!d.fused.empty()) {
      idleExecutors--;
      FusedKernel *fk = fusedKernelFor(ops);
      // Watched when every part's kernel polls the status (the fused
      // kernel does whenever the watchdog is on).
      bool allPoll = true;
      for (Op *o : ops)
        allPoll &= contained(*o);
      uint64_t record = allPoll ? watch(d.ticket) : 0;
      execQueue.push([this, ops, d, fk, record, busy] {
        auto start = Clock::now();
        Outcome::Fusion how = Outcome::Fusion::Refused;
        try {
          how = executeFused(ops, fk, record);
        } catch (const std::exception &x) {
          for (Op *o : ops)
            if (!o->skip && o->result.code() == pb::OK)
              o->result = status(pb::INTERNAL, x.what(), o->seq);
        }
        double ms =
            std::chrono::duration<double, std::milli>(Clock::now() - start)
                .count();
        post([this, ops, d, busy, how, ms] {
          idleExecutors++;
          busy(false);
          if (unwatch(d.ticket))
            for (Op *o : ops)
              if (!o->skip)
                o->result = watchdogStatus(*o);
          // A fused run that left parts out (ended sessions) or lost
          // parts to faults says nothing of what fusing the set saves.
          bool whole = true;
          for (Op *o : ops) {
            if (!o->skip)
              traceDispatch(o, d);
            whole &= !o->skip && o->result.code() == pb::OK;
          }
          scheduler->finished(d,
                              Outcome{ms, 0, false,
                                      how == Outcome::Fusion::Fused && !whole
                                          ? Outcome::Fusion::Pending
                                          : how},
                              nowNanos());
          for (Op *o : ops)
            complete(o);
        });
      });
      continue;
    }
    if (op->type != Op::Type::Launch && op->bytes <= kInlineBytes &&
        backend->kind() == "cpu") {
      execute(op, d, 0, 0);
      busy(false);
      scheduler->finished(d, Outcome{op->lastMs, 1, false}, nowNanos());
      traceDispatch(op, d);
      complete(op);
      continue;
    }
    idleExecutors--;
    // A slice's preemption flag and its counter come from the pool of
    // zeroed u32s (no allocation on the launch path; without a counter the
    // launch allocates its own).
    uint64_t flag = 0, counter = 0;
    if (d.sliced() && (flag = takeFlag())) {
      flagOfTicket[d.ticket] = flag;
      counter = takeFlag();
    }
    uint64_t record =
        op->type == Op::Type::Launch && contained(*op) ? watch(d.ticket) : 0;
    execQueue.push([this, op, d, flag, counter, record, busy] {
      // Nothing thrown here may end the thread (and the server).
      try {
        execute(op, d, flag, counter, record);
      } catch (const std::exception &x) {
        op->result = status(pb::INTERNAL, x.what(), op->seq);
      }
      post([this, op, d, flag, counter, busy] {
        idleExecutors++;
        busy(false);
        if (unwatch(d.ticket))
          op->result = watchdogStatus(*op);
        if (flag) {
          flagOfTicket.erase(d.ticket);
          giveFlag(flag);
        }
        if (counter)
          giveFlag(counter);
        bool failed = op->result.code() != pb::OK;
        traceDispatch(op, d);
        if (!scheduler->finished(d, Outcome{op->lastMs, op->blocksRun, failed},
                                 nowNanos())) {
          // A preempted or partial slice: the rest of the launch is queued
          // again, where it was.
          queuedOps++;
          return;
        }
        complete(op);
      });
    });
  }
}

void Server::Impl::traceDispatch(Op *op, const Dispatch &d) {
  if (!trace)
    return;
  const char *what = op->type == Op::Type::Launch   ? nullptr
                     : op->type == Op::Type::Memset ? "memset"
                                                    : "copy";
  std::vector<std::pair<std::string, std::string>> args = {
      {"session", std::to_string(op->session->id)},
      {"stream", std::to_string(op->stream)},
      {"call", std::to_string(op->seq)}};
  if (op->type == Op::Type::Launch) {
    args.push_back({"grid_blocks", std::to_string(op->gridBlocks)});
    args.push_back({"blocks_run", std::to_string(op->blocksRun)});
    if (d.physicalBlocks)
      args.push_back({"physical_blocks", std::to_string(d.physicalBlocks)});
    if (op->fusedWith)
      args.push_back({"coalesced_with", std::to_string(op->fusedWith)});
    if (d.sliced())
      args.push_back({"slice", std::to_string(d.sliceBegin) + "-" +
                                   std::to_string(d.sliceEnd)});
  } else {
    args.push_back({"bytes", std::to_string(op->bytes)});
  }
  if (op->result.code() != pb::OK)
    args.push_back({"error", op->result.message()});
  trace->span(traceTrack(op->session->tenant->config),
              what ? std::string(what) : op->kernelName,
              double(op->startedNs) / 1000, op->lastMs * 1000, args);
}

unsigned Server::Impl::traceTrack(const TenantConfig &t) {
  auto [it, inserted] =
      traceTracks.try_emplace(t.name, unsigned(traceTracks.size()));
  if (inserted)
    trace->nameTrack(it->second,
                     t.name + " (" + className(t.priorityClass).str() + ")");
  return it->second;
}

void Server::Impl::preempt() {
  for (uint64_t ticket : scheduler->takePreemptions()) {
    auto it = flagOfTicket.find(ticket);
    if (it == flagOfTicket.end())
      continue; // ended, or running without a flag
    uint32_t one = 1;
    if (llvm::Error e = backend->copyToDevice(it->second, &one, sizeof one))
      log("cannot raise a preemption flag: " + llvm::toString(std::move(e)));
  }
}

uint64_t Server::Impl::takeFlag() {
  if (freeFlags.empty()) {
    // 1024 slots at a time, never more than 64 Ki of them.
    constexpr uint64_t kBlock = 1024 * kContainRecordBytes;
    if (flagBlocks.size() >= 64)
      return 0;
    auto a = memory->allocate(MemoryManager::kInternal, kBlock);
    if (!a) {
      // Said once: the slices then run without a flag (unpreemptibly).
      std::string why = llvm::toString(a.takeError());
      if (!flagAllocFailed)
        log("cannot allocate flags, slices run unpreemptibly and launches "
            "uncontained: " +
            why);
      flagAllocFailed = true;
      return 0;
    }
    flagBlocks.push_back(*a);
    for (uint64_t off = kBlock; off > 0; off -= kContainRecordBytes)
      freeFlags.push_back(*a + off - kContainRecordBytes);
  }
  uint64_t flag = freeFlags.back();
  uint32_t zero = 0;
  if (llvm::Error e = backend->copyToDevice(flag, &zero, sizeof zero)) {
    log("cannot clear a preemption flag: " + llvm::toString(std::move(e)));
    return 0;
  }
  freeFlags.pop_back();
  return flag;
}

void Server::Impl::giveFlag(uint64_t addr) { freeFlags.push_back(addr); }

/// "300", or "0.25": milliseconds as people write them.
static std::string msText(double ms) {
  return std::fmod(ms, 1.0) == 0 ? llvm::formatv("{0:f0}", ms).str()
                                 : llvm::formatv("{0:f2}", ms).str();
}

/// The two Z85 keys of a key-pair file (`public ...`, `secret ...`).
static llvm::Expected<std::pair<std::string, std::string>>
readCurveKeys(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return llvm::createStringError("cannot read the CURVE key file '" + path +
                                   "': " + buf.getError().message());
  std::string pub, sec;
  llvm::SmallVector<llvm::StringRef> lines;
  (*buf)->getBuffer().split(lines, '\n');
  for (llvm::StringRef line : lines) {
    line = line.trim();
    if (line.consume_front("public "))
      pub = line.trim().str();
    else if (line.consume_front("secret "))
      sec = line.trim().str();
  }
  if (pub.size() != 40 || sec.size() != 40)
    return llvm::createStringError(
        "'" + path +
        "' is not a CURVE key file (lines 'public KEY' and 'secret KEY', 40 "
        "Z85 characters each; wooly-serve --gen-curve-keys writes one)");
  return std::pair{pub, sec};
}

llvm::Error wooly::server::generateCurveKeys(llvm::StringRef prefix) {
  if (!zmq_has("curve"))
    return llvm::createStringError("this libzmq has no CURVE support");
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0)
    return llvm::createStringError(std::string("zmq_curve_keypair: ") +
                                   zmq_strerror(zmq_errno()));
  std::string key = (prefix + ".key").str(), pubFile = (prefix + ".pub").str();
  // Only the owner may read the secret key: created so, never chmod'ed.
  int fd = ::open(key.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0)
    return llvm::createStringError("cannot create '" + key +
                                   "': " + std::strerror(errno));
  std::string text = std::string("# wooly-serve CURVE key pair: keep it "
                                 "secret\npublic ") +
                     pub + "\nsecret " + sec + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::close(fd);
  std::error_code ec;
  llvm::raw_fd_ostream out(pubFile, ec);
  if (!ok || ec)
    return llvm::createStringError("cannot write the key files '" + key +
                                   "', '" + pubFile + "'");
  out << pub << "\n";
  return llvm::Error::success();
}

llvm::Error Server::Impl::enableCurve() {
  if (!zmq_has("curve"))
    return llvm::createStringError("--curve-keys: this libzmq has no CURVE "
                                   "support");
  auto keys = readCurveKeys(options.curveKeyFile);
  if (!keys)
    return keys.takeError();
  int one = 1;
  if (zmq_setsockopt(router, ZMQ_CURVE_SERVER, &one, sizeof one) != 0 ||
      zmq_setsockopt(router, ZMQ_CURVE_SECRETKEY, keys->second.data(), 40) != 0)
    return llvm::createStringError(std::string("cannot enable CURVE: ") +
                                   zmq_strerror(zmq_errno()));
  log("CURVE on tcp endpoints; clients need the public key " + keys->first +
      " (WOOLY_SERVER_KEY)");
  return llvm::Error::success();
}

bool Server::Impl::contained(const Op &op) const {
  return op.kernel &&
         llvm::is_contained(op.kernel->paramRoles, "launch_status");
}

uint64_t Server::Impl::watch(uint64_t ticket) {
  if (containPasses.empty())
    return 0;
  uint64_t record = takeFlag();
  if (!record)
    return 0; // Logged once by takeFlag: the launch runs unwatched.
  Clock::time_point deadline = Clock::time_point::max();
  if (watchdogOn)
    deadline =
        Clock::now() +
        std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double, std::milli>(options.kernelTimeoutMs));
  watchedByTicket[ticket] = {record, deadline, false};
  return record;
}

bool Server::Impl::unwatch(uint64_t ticket) {
  auto it = watchedByTicket.find(ticket);
  if (it == watchedByTicket.end())
    return false;
  bool raised = it->second.raised;
  giveFlag(it->second.record);
  watchedByTicket.erase(it);
  return raised;
}

void Server::Impl::checkWatchdog() {
  Clock::time_point now = Clock::now();
  for (auto &[ticket, w] : watchedByTicket) {
    if (w.raised || now < w.deadline)
      continue;
    uint32_t one = uint32_t(ContainStatus::Stopped);
    if (llvm::Error e = backend->copyToDevice(w.record, &one, sizeof one)) {
      log("watchdog: cannot set a launch's status: " +
          llvm::toString(std::move(e)));
      continue;
    }
    w.raised = true;
    log("watchdog: dispatch " + std::to_string(ticket) + " ran past " +
        msText(options.kernelTimeoutMs) + " ms: stopping it");
  }
}

pb::Status Server::Impl::watchdogStatus(const Op &op) const {
  return status(pb::LAUNCH_TIMEOUT,
                "kernel '" + op.kernelName + "' ran past its time budget of " +
                    msText(options.kernelTimeoutMs) +
                    " ms and was stopped (the server's watchdog, "
                    "--kernel-timeout-ms)",
                op.seq, /*sticky=*/true);
}

void Server::Impl::readContainStatus(Op *op, uint64_t record) {
  llvm::Error e = containStatusError(*backend, op->kernelName, record);
  if (!e)
    return;
  // A fault the kernel recorded is sticky; a record the server could not
  // read is the server's error, not the kernel's.
  bool fault = e.isA<KernelFaultError>();
  op->result = faultStatus(std::move(e), op->seq, fault);
}

FusedKernel *Server::Impl::fusedKernelFor(const std::vector<Op *> &ops) {
  std::vector<const WorkItem *> items(ops.begin(), ops.end());
  uint64_t key = kernelSetKey(items);
  auto it = fusedKernels.find(key);
  if (it != fusedKernels.end())
    return it->second.get();
  // Fused kernels stay loaded; a server that meets ever new kernel sets
  // runs their launches one by one past this many.
  constexpr size_t kMaxFusedKernels = 256;
  if (fusedKernels.size() >= kMaxFusedKernels)
    return nullptr;
  auto owned = std::make_unique<FusedKernel>();
  FusedKernel *fk = owned.get();
  fusedKernels[key] = std::move(owned);

  // The set's kernels in kernelKey order: the fused kernel's indices.
  std::map<uint64_t, const Op *> byKey;
  for (const Op *o : ops)
    byKey.emplace(o->kernelKey, o);
  std::vector<CoalesceSource> sources;
  std::vector<std::shared_ptr<ModuleImage>> images; // kept alive
  std::string names;
  for (auto &[k, o] : byKey) {
    fk->indexOf[k] = uint32_t(sources.size());
    sources.push_back(
        {o->module->image->text, o->module->image->name, o->kernelName});
    images.push_back(o->module->image);
    names += (names.empty() ? "" : ", ") + o->kernelName;
  }
  std::string target = backend->nativeTarget();
  compileQueue.push([this, fk, sources, images, names, target] {
    auto start = Clock::now();
    std::string error;
    bool hit = false;
    std::shared_ptr<const CompiledModule> module;
    BackendModule *loaded = nullptr;
    // Nothing thrown here may end the thread (and the server).
    try {
      auto merged = mergeForCoalescing(sources);
      auto t = Target::parse(target);
      if (!merged) {
        error = llvm::toString(merged.takeError());
        if (!t)
          llvm::consumeError(t.takeError());
      } else if (!t) {
        error = llvm::toString(t.takeError());
      } else {
        CompileInput in;
        in.kind = CompileInput::Kind::MLIR;
        in.text = std::move(merged->mlir);
        in.name = "coalesced(" + names + ")";
        CompileOptions co;
        co.passes =
            "wooly-coalesce{kernels=" + llvm::join(merged->kernels, ",") + "}" +
            (containPasses.empty() ? "" : "," + containPasses);
        auto c = cache->getOrCompile(in, *t, co, &hit);
        if (!c) {
          error = llvm::toString(c.takeError());
        } else {
          module = *c;
          auto l = backend->loadModule(module, "");
          if (l)
            loaded = *l;
          else
            error = llvm::toString(l.takeError());
        }
      }
    } catch (const std::exception &x) {
      error = std::string("compile failed: ") + x.what();
    }
    double ms =
        std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    post([this, fk, module, loaded, error, names, ms, hit] {
      std::lock_guard<std::mutex> lock(fusedMutex);
      fk->compiled = module;
      fk->loaded = loaded;
      fk->kernel = module ? module->findKernel("__wooly_coalesced") : nullptr;
      if (error.empty() && fk->kernel) {
        fk->state = FusedKernel::State::Ready;
        log(llvm::formatv("coalesced kernel of {0} ready in {1:f1} ms ({2})",
                          names, ms, hit ? "compile cache hit" : "compiled")
                .str());
      } else {
        fk->state = FusedKernel::State::Failed;
        log("kernels " + names + " are not coalesced: " +
            (error.empty() ? "no __wooly_coalesced kernel" : error));
      }
    });
  });
  return fk;
}

Outcome::Fusion Server::Impl::executeFused(const std::vector<Op *> &ops,
                                           FusedKernel *fk,
                                           uint64_t statusRecord) {
  FusedKernel::State state = FusedKernel::State::Failed;
  if (fk) {
    std::lock_guard<std::mutex> lock(fusedMutex);
    state = fk->state;
  }
  std::vector<Op *> live;
  for (Op *o : ops)
    if (!o->skip)
      live.push_back(o);
  auto oneByOne = [&](Outcome::Fusion how) {
    for (Op *o : live)
      execute(o, Dispatch(), 0, 0, statusRecord);
    return how;
  };
  if (state != FusedKernel::State::Ready)
    return oneByOne(state == FusedKernel::State::Compiling
                        ? Outcome::Fusion::Pending
                        : Outcome::Fusion::Refused);

  auto start = Clock::now();
  Nanos startedNs =
      std::chrono::duration_cast<std::chrono::nanoseconds>(start - startTime)
          .count();
  // The table and every part's parameters in one allocation.
  std::vector<CoalescePart> parts(live.size());
  uint64_t tableBytes =
      sizeof(CoalesceTableHeader) + live.size() * sizeof(CoalescePart);
  uint64_t bytes = llvm::alignTo(tableBytes, 16);
  std::vector<uint64_t> offsets;
  for (size_t i = 0; i < live.size(); ++i) {
    const Op &o = *live[i];
    CoalescePart &p = parts[i];
    p.kernelIndex = fk->indexOf.at(o.kernelKey);
    for (int d = 0; d < 3; ++d) {
      p.grid[d] = o.config.grid[d];
      p.block[d] = o.config.block[d];
    }
    p.dynamicSharedBytes = o.config.dynamicSharedBytes;
    offsets.push_back(bytes);
    bytes += llvm::alignTo(std::max<uint64_t>(o.params.size(), 1), 16);
  }
  auto base = memory->allocate(MemoryManager::kInternal, bytes);
  if (!base) {
    llvm::consumeError(base.takeError());
    return oneByOne(Outcome::Fusion::Pending);
  }
  llvm::Error e = llvm::Error::success();
  for (size_t i = 0; i < live.size() && !e; ++i) {
    parts[i].params = *base + offsets[i];
    e = backend->copyToDevice(parts[i].params, live[i]->params.data(),
                              live[i]->params.size());
  }
  assignFirstBlocks(parts);
  std::vector<uint8_t> table = encodeCoalesceTable(parts);
  if (!e)
    e = backend->copyToDevice(*base, table.data(), table.size());
  LaunchConfig c;
  c.grid = {uint32_t(coalescedGrid(parts)), 1, 1};
  c.block = {coalescedBlock(parts), 1, 1};
  c.dynamicSharedBytes = coalescedDynamicShared(parts);
  for (const CoalescePart &p : parts)
    c.faultDomains.push_back(p.firstBlock);
  // Each part reaches its own session's memory, the launch's status
  // record, and the table for reading (its dispatch code reads it; the
  // parts' parameters in it are readable by every part, not writable).
  for (Op *o : live)
    c.memoryDomains.push_back(o->session->id);
  c.readOnlyRanges.push_back({*base, bytes});
  if (statusRecord)
    c.allowedRanges.push_back({statusRecord, kContainRecordBytes});
  std::vector<uint8_t> params;
  if (!e) {
    auto fp = extendParams(
        *fk->kernel, {},
        {{"coalesce_table", *base}, {"launch_status", statusRecord}});
    if (fp)
      params = std::move(*fp);
    else
      e = fp.takeError();
  }
  std::vector<std::pair<size_t, std::string>> faults;
  std::vector<FaultKind> kinds;
  if (!e) {
    e = backend->launch(fk->loaded, "__wooly_coalesced", c, params);
    // A part's fault is that part's tenant's alone.
    e = llvm::handleErrors(std::move(e), [&](const FaultDomainsError &d) {
      faults = d.faults();
      for (size_t i = 0; i < faults.size(); ++i)
        kinds.push_back(d.kind(i));
    });
  }
  if (llvm::Error fe = memory->free(*base))
    llvm::consumeError(std::move(fe));
  if (e) {
    // Refused before any block ran (a launch limit the parts' launches
    // meet one by one, or no memory for the table): the parts run alone,
    // and the scheduler fuses this set no more.
    llvm::consumeError(std::move(e));
    return oneByOne(Outcome::Fusion::Refused);
  }
  double ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  uint64_t blocks = 0;
  for (const CoalescePart &p : parts)
    blocks += p.blocks();
  for (size_t i = 0; i < live.size(); ++i) {
    Op &o = *live[i];
    o.startedNs = startedNs;
    o.lastMs =
        ms * double(parts[i].blocks()) / double(std::max<uint64_t>(blocks, 1));
    o.ms += o.lastMs;
    o.blocksRun = o.gridBlocks;
    o.fusedWith = unsigned(live.size() - 1);
  }
  coalescedDispatches++;
  coalescedLaunches += live.size();
  for (auto [i, fault] : llvm::enumerate(faults))
    if (auto &[part, message] = fault; part < live.size())
      live[part]->result =
          status(faultCode(kinds[i]),
                 llvm::formatv("launch of kernel '{0}', run coalesced with {1} "
                               "other launch{2} (its blocks from {3} on): {4}",
                               live[part]->kernelName, live.size() - 1,
                               live.size() == 2 ? "" : "es",
                               parts[part].firstBlock, message)
                     .str(),
                 live[part]->seq, /*sticky=*/true);
  return Outcome::Fusion::Fused;
}

/// Runs on an executor thread: only the op's own fields and the backend.
void Server::Impl::execute(Op *op, const Dispatch &d, uint64_t preemptFlag,
                           uint64_t sliceCounter, uint64_t statusRecord) {
  auto start = Clock::now();
  op->startedNs =
      std::chrono::duration_cast<std::chrono::nanoseconds>(start - startTime)
          .count();
  llvm::Error e = llvm::Error::success();
  bool fault = false;
  switch (op->type) {
  case Op::Type::Launch: {
    if (!op->kernel) {
      e = llvm::createStringError("kernel '" + op->kernelName +
                                  "' is missing from its compiled module");
      break;
    }
    // The scheduler's choices for a sliced kernel; a kernel that is not
    // sliced only ever gets whole dispatches.
    LaunchOptions lo;
    lo.physicalBlocks = d.physicalBlocks;
    lo.sliceBegin = uint32_t(d.sliceBegin);
    lo.sliceEnd = uint32_t(d.sliceEnd);
    lo.preemptFlag = preemptFlag;
    lo.sliceCounter = sliceCounter;
    lo.statusRecord = statusRecord;
    // A sliced kernel without a flag slot gets its counter from the
    // memory manager, never from the backend behind its back.
    uint64_t ownCounter = 0;
    if (!sliceCounter && isSliced(*op->kernel)) {
      auto c = memory->allocate(MemoryManager::kInternal, 4);
      if (!c) {
        e = c.takeError();
        break;
      }
      lo.sliceCounter = ownCounter = *c;
    }
    auto r = launchKernel(*backend, op->module->loaded, *op->kernel, op->config,
                          op->params, lo);
    if (ownCounter)
      llvm::consumeError(memory->free(ownCounter));
    if (!r) {
      e = r.takeError();
      fault = true;
    } else {
      op->blocksRun = d.sliced() ? r->blocksRun : op->gridBlocks;
      if (statusRecord && containTraps)
        readContainStatus(op, statusRecord);
    }
    break;
  }
  case Op::Type::CopyIn:
    e = backend->copyToDevice(op->dst, op->in.data(), op->bytes);
    if (!e && op->hashContent)
      op->contentHash =
          contentHashOf(op->bytes, [&](uint64_t offset, uint64_t n) {
            return llvm::ArrayRef<uint8_t>(
                reinterpret_cast<const uint8_t *>(op->in.data()) + offset, n);
          });
    break;
  case Op::Type::CopyOut:
    op->out = replyBuffers.take(op->bytes);
    e = backend->copyFromDevice(op->out->data, op->src, op->bytes);
    break;
  case Op::Type::CopyD2D:
    e = backend->copyDeviceToDevice(op->dst, op->src, op->bytes);
    break;
  case Op::Type::Memset:
    e = backend->memset(op->dst, op->value, op->bytes);
    break;
  case Op::Type::SymbolIn:
  case Op::Type::SymbolOut: {
    uint64_t addr = op->dst; // resolved by makeReady
    if (op->type == Op::Type::SymbolIn) {
      e = backend->copyToDevice(addr, op->in.data(), op->bytes);
    } else {
      op->out = replyBuffers.take(op->bytes);
      e = backend->copyFromDevice(op->out->data, addr, op->bytes);
    }
    break;
  }
  default:
    break;
  }
  op->lastMs =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  op->ms += op->lastMs;
  if (e)
    op->result = faultStatus(std::move(e), op->seq, fault);
}

void Server::Impl::complete(Op *first) {
  // A worklist, not recursion: one completion may release a long chain.
  std::deque<Op *> work{first};
  while (!work.empty()) {
    Op *op = work.front();
    work.pop_front();
    finishOp(op, work);
  }
  retryMemoryWaiters();
}

void Server::Impl::allocateFor(PendingMalloc m) {
  auto it = sessions.find(m.session);
  if (it == sessions.end() || it->second->dead)
    return; // The client is gone: nothing was allocated.
  Session &s = *it->second;
  auto addr = memory->allocate(s.tenant->memId, m.bytes, s.id,
                               /*mayWait=*/true);
  if (!addr) {
    llvm::Error e = addr.takeError();
    if (e.isA<MustWaitError>()) {
      llvm::consumeError(std::move(e));
      pendingMallocs.push_back(std::move(m));
      return;
    }
    s.tenant->metrics.errors++;
    if (pb::Status lost = lostStatus(m.seq); lost.code() != pb::OK) {
      llvm::consumeError(std::move(e));
      return replyStatus(m.routingId, m.seq, lost);
    }
    return replyStatus(
        m.routingId, m.seq,
        status(pb::OUT_OF_MEMORY, llvm::toString(std::move(e)), m.seq));
  }
  s.allocations[*addr] = m.bytes;
  pb::Reply r;
  r.set_seq(m.seq);
  r.mutable_allocated()->set_address(*addr);
  reply(m.routingId, r);
}

void Server::Impl::retryMemoryWaiters() {
  if (retryingWaiters || memoryWaiters.empty())
    return;
  retryingWaiters = true;
  // In arrival order; an op that must still wait goes to the back again.
  std::deque<Op *> waiting = std::exchange(memoryWaiters, {});
  for (Op *op : waiting)
    makeReady(op);
  memoryWaiting = memoryWaiters.size();
  retryingWaiters = false;
}

pb::Status Server::Impl::lostStatus(uint64_t seq) {
  std::optional<std::string> why = backend->lostReason();
  if (!why)
    return pb::Status();
  if (!lostLogged.exchange(true))
    log("the device is lost for every tenant: " + *why +
        ". Every session's device work fails from now on, and new sessions "
        "are refused; restart wooly-serve (with --contain, a tenant's trap, "
        "failed assert or misaligned access ends only its own launch)");
  return status(pb::DEVICE_LOST,
                "the server's device is lost for every tenant (" + *why +
                    "); it must be restarted",
                seq, /*sticky=*/true);
}

void Server::Impl::finishOp(Op *op, std::deque<Op *> &work) {
  Session &s = *op->session;
  TenantMetrics &metrics = s.tenant->metrics;
  bool failed = op->result.code() != pb::OK;
  bool cancelled = failed && (op->result.code() == pb::NO_SESSION ||
                              (s.sticky.code() != pb::OK &&
                               op->result.seq() == s.sticky.seq() &&
                               op->result.seq() != op->seq));
  if (!cancelled) {
    switch (op->type) {
    case Op::Type::Launch: {
      metrics.launches++;
      metrics.kernelMicros += uint64_t(op->ms * 1000);
      double seconds =
          std::chrono::duration<double>(Clock::now() - op->arrived).count();
      TenantState &t = *s.tenant;
      std::lock_guard<std::mutex> lock(tenantsMutex);
      if (t.latency.size() < TenantState::kLatencySamples)
        t.latency.push_back(seconds);
      else
        t.latency[t.nextLatency++ % TenantState::kLatencySamples] = seconds;
      t.latencyCount++;
      t.latencySum += seconds;
      break;
    }
    case Op::Type::CopyIn:
    case Op::Type::SymbolIn:
      metrics.bytesToDevice += op->bytes;
      break;
    case Op::Type::CopyOut:
    case Op::Type::SymbolOut:
      metrics.bytesFromDevice += op->bytes;
      break;
    case Op::Type::CopyD2D:
      metrics.bytesDeviceToDevice += op->bytes;
      break;
    default:
      break;
    }
    if (failed)
      metrics.errors++;
  }
  if (failed && !cancelled) {
    // Work that failed because a fault (perhaps another tenant's) lost the
    // context; the fault itself keeps its own error.
    if (pb::Status lost = lostStatus(op->seq);
        lost.code() != pb::OK && !op->result.sticky())
      op->result = lost;
  }
  if (failed && !cancelled) {
    if (op->result.sticky()) {
      if (s.sticky.code() == pb::OK) {
        s.sticky = op->result;
        log(llvm::formatv("session {0} (tenant '{1}'): {2} (call {3}); the "
                          "session's later calls fail with it",
                          s.id, s.tenant->config.name, op->result.message(),
                          op->seq)
                .str());
      }
    } else if (!op->reply) {
      auto it = s.streams.find(op->stream);
      if (it != s.streams.end() && it->second.error.code() == pb::OK)
        it->second.error = op->result;
    }
  }
  // The reply of a synchronous call.
  if (op->reply && !s.dead) {
    pb::Reply r;
    r.set_seq(op->seq);
    pb::Status st = op->result;
    if (op->reportsErrors && st.code() == pb::OK) {
      if (s.sticky.code() != pb::OK) {
        st = s.sticky;
      } else {
        for (auto &[h, stream] : s.streams) {
          if (!op->deviceWide && h != op->stream)
            continue;
          if (stream.error.code() != pb::OK) {
            if (st.code() == pb::OK)
              st = stream.error;
            stream.error = pb::Status();
          }
        }
      }
      if (st.code() != pb::OK)
        *r.mutable_deferred() = st;
    }
    if (st.code() != pb::OK)
      *r.mutable_status() = st;
    bool withData = false;
    if (st.code() == pb::OK) {
      if (op->fill)
        op->fill(r);
      if (op->type == Op::Type::CopyOut || op->type == Op::Type::SymbolOut) {
        r.set_payload_bytes(op->bytes);
        withData = true;
      }
    }
    if (withData)
      reply(s.routingId, r, std::move(op->out), op->bytes);
    else
      reply(s.routingId, r);
  }
  // The stream and event this op was the tail of.
  auto it = s.streams.find(op->stream);
  if (it != s.streams.end() && it->second.tail == op) {
    it->second.tail = nullptr;
    if (it->second.destroyed)
      s.streams.erase(it);
  }
  if (op->type == Op::Type::EventRecord) {
    auto ev = s.events.find(op->event);
    if (ev != s.events.end() && ev->second.record == op) {
      ev->second.record = nullptr;
      ev->second.recorded = !failed;
      ev->second.when = Clock::now();
    }
  }
  for (Op *d : op->dependents)
    if (--d->pendingDeps == 0)
      makeReady(d, &work);
  for (uint64_t base : op->writes) {
    bool fromHost = op->type == Op::Type::CopyIn ||
                    op->type == Op::Type::Memset ||
                    op->type == Op::Type::CopyD2D;
    std::string shared =
        memory->endWrite(base,
                         op->hashContent && !failed && base == op->dst
                             ? std::optional<uint64_t>(op->contentHash)
                             : std::nullopt,
                         fromHost && !failed);
    if (!shared.empty())
      log("tenant '" + s.tenant->config.name + "': " + shared);
  }
  if (op->acquired)
    memory->release(s.tenant->memId);
  metrics.queued--;
  s.liveOps--;
  s.heldBytes -= op->heldBytes;
  delete op;
  maybeErase(s);
}

//===----------------------------------------------------------------------===//
// Sessions
//===----------------------------------------------------------------------===//

void Server::Impl::teardown(Session &s, const char *why) {
  if (s.dead)
    return;
  s.dead = true;
  byRouting.erase(s.routingId);
  log(llvm::formatv("session {0} (tenant '{1}'): {2}; dropping {3} queued "
                    "operation{4}",
                    s.id, s.tenant->config.name, why, s.liveOps,
                    s.liveOps == 1 ? "" : "s")
          .str());
  // Queued ops are cancelled as the scheduler hands them out or as their
  // dependencies complete (or as they wait for memory: tried again now);
  // running ones finish. Then `maybeErase` frees.
  maybeErase(s);
  retryMemoryWaiters();
}

void Server::Impl::maybeErase(Session &s) {
  if (!s.dead || s.liveOps)
    return;
  uint64_t freed = 0;
  size_t objects = s.textures.size();
  for (auto [handle, surface] : s.textures)
    llvm::consumeError(surface ? backend->destroySurfaceObject(handle)
                               : backend->destroyTextureObject(handle));
  for (auto &[addr, bytes] : s.allocations) {
    llvm::consumeError(memory->free(addr));
    freed += bytes;
  }
  // The backend's own memory of the session: its device heap.
  uint64_t heap = backend->releaseMemoryDomain(s.id);
  if (s.heapKey)
    memory->removePinned(s.heapKey);
  for (auto &[h, m] : s.modules) {
    memory->removePinned(m->variablesKey);
    if (m->loaded)
      llvm::consumeError(backend->unloadModule(m->loaded));
    if (--m->image->users == 0 &&
        m->image->state != ModuleImage::State::Inspecting)
      images.erase(m->image->hash);
  }
  log(llvm::formatv(
          "session {0} closed: {1} returned to the device{2}{3}", s.id,
          bytesText(freed),
          heap ? llvm::formatv(" (and its device heap, {0})", bytesText(heap))
                     .str()
               : std::string(),
          objects ? llvm::formatv("; {0} texture or surface "
                                  "object{1} destroyed",
                                  objects, objects == 1 ? "" : "s")
                        .str()
                  : std::string())
          .str());
  // The session counts for its tenant until here: a dead session with work
  // still in flight keeps using its TenantState.
  {
    std::lock_guard<std::mutex> lock(tenantsMutex);
    s.tenant->sessions--;
  }
  // In open mode any name makes a tenant: one that has nothing left is
  // forgotten, so that clients cannot grow the server without bound.
  forgetTenant(*s.tenant);
  sessions.erase(s.id);
}

void Server::Impl::forgetTenant(TenantState &t) {
  // (Not while a swap moves its memory: then once that swap settles.)
  if (tenants.open && t.sessions == 0 && memory->removeTenant(t.memId)) {
    scheduler->retire(&t.config, nowNanos());
    std::lock_guard<std::mutex> lock(tenantsMutex);
    tenantStates.erase(t.config.name);
  }
}

//===----------------------------------------------------------------------===//
// Metrics
//===----------------------------------------------------------------------===//

void Server::Impl::snapshotSchedulerStats() {
  std::vector<TenantStats> st = scheduler->stats(nowNanos());
  std::lock_guard<std::mutex> lock(tenantsMutex);
  schedStats = std::move(st);
  schedStatsAt = Clock::now();
}

std::string Server::Impl::metricsText() {
  PrometheusWriter w;
  std::lock_guard<std::mutex> lock(tenantsMutex);
  double uptime =
      std::chrono::duration<double>(Clock::now() - startTime).count();
  double busy = busySeconds;
  if (running)
    busy += std::chrono::duration<double>(Clock::now() - busySince).count();
  w.family("wooly_device_busy_seconds_total", "counter",
           "Time during which at least one launch or copy ran on the device.");
  w.sample("wooly_device_busy_seconds_total", {}, busy);
  w.family("wooly_device_busy_fraction", "gauge",
           "Busy time over the server's uptime.");
  w.sample("wooly_device_busy_fraction", {},
           uptime > 0 ? std::min(1.0, busy / uptime) : 0);
  w.family("wooly_coalesced_launches_total", "counter",
           "Launches that ran fused with launches of other tenants.");
  w.sample("wooly_coalesced_launches_total", {},
           double(coalescedLaunches.load()));
  w.family("wooly_coalesced_dispatches_total", "counter",
           "Fused launches (each runs several tenants' launches).");
  w.sample("wooly_coalesced_dispatches_total", {},
           double(coalescedDispatches.load()));
  w.family("wooly_device_memory_bytes", "gauge",
           "Device memory shared by all tenants.");
  w.sample("wooly_device_memory_bytes", {}, double(deviceMemory));
  DeviceMemoryUsage mem = memory->device();
  const std::pair<const char *, const char *> memGauges[] = {
      {"wooly_device_memory_used_bytes",
       "Device memory in use: tenants' resident memory and the server's "
       "own."},
      {"wooly_device_memory_internal_bytes",
       "Device memory the server uses itself (flags, fused-launch tables)."},
      {"wooly_device_memory_swapped_bytes",
       "Tenants' device memory moved out to host memory."},
      {"wooly_device_memory_dedup_saved_bytes",
       "Device memory deduplication saves: allocations of identical bytes, "
       "only read, that map one physical copy (its size times the sharers "
       "less one)."},
      {"wooly_memory_waiting_operations",
       "Operations waiting for their tenant's memory to come back."},
  };
  const double memGaugeValues[] = {double(mem.physical), double(mem.internal),
                                   double(mem.swapped), double(mem.saved),
                                   double(memoryWaiting.load())};
  for (size_t i = 0; i < std::size(memGauges); ++i) {
    w.family(memGauges[i].first, "gauge", memGauges[i].second);
    w.sample(memGauges[i].first, {}, memGaugeValues[i]);
  }
  const std::pair<const char *, const char *> memCounters[] = {
      {"wooly_memory_evictions_total",
       "Times an idle tenant's memory was moved out to make room."},
      {"wooly_memory_swap_outs_total", "Allocations moved out to host memory."},
      {"wooly_memory_swap_ins_total", "Allocations brought back."},
      {"wooly_memory_swap_out_bytes_total", "Bytes moved out to host memory."},
      {"wooly_memory_swap_in_bytes_total", "Bytes brought back."},
      {"wooly_memory_swap_out_seconds_total", "Time spent moving memory out."},
      {"wooly_memory_swap_in_seconds_total", "Time spent bringing it back."},
      {"wooly_memory_out_of_memory_total",
       "Allocations and swap-ins refused for lack of device memory."},
      {"wooly_memory_dedup_shares_total",
       "Allocations that started to map another's identical bytes "
       "(deduplication)."},
      {"wooly_memory_copies_on_write_total",
       "Shared allocations given a private copy before a write."},
  };
  const double memCounterValues[] = {
      double(mem.evictions),   double(mem.swapOuts),
      double(mem.swapIns),     double(mem.swapOutBytes),
      double(mem.swapInBytes), mem.swapOutSeconds,
      mem.swapInSeconds,       double(mem.outOfMemory),
      double(mem.dedupShares), double(mem.copiesOnWrite)};
  for (size_t i = 0; i < std::size(memCounters); ++i) {
    w.family(memCounters[i].first, "counter", memCounters[i].second);
    w.sample(memCounters[i].first, {}, memCounterValues[i]);
  }
  w.family("wooly_queued_operations", "gauge",
           "Launches and copies ready and waiting for an executor.");
  w.sample("wooly_queued_operations", {}, double(queuedOps.load()));
  w.family("wooly_compile_cache_hits_total", "counter",
           "Kernel compilations served by the compile cache.");
  w.sample("wooly_compile_cache_hits_total", {}, double(cache->hits()));
  w.family("wooly_compile_cache_misses_total", "counter",
           "Kernel compilations that ran the compiler.");
  w.sample("wooly_compile_cache_misses_total", {}, double(cache->misses()));

  struct Family {
    const char *name, *type, *help;
    std::function<double(const TenantState &)> value;
  };
  const Family families[] = {
      {"wooly_tenant_sessions", "gauge", "Open sessions of the tenant.",
       [](const TenantState &t) { return double(t.sessions); }},
      {"wooly_tenant_launches_total", "counter", "Kernels launched.",
       [](const TenantState &t) { return double(t.metrics.launches.load()); }},
      {"wooly_tenant_kernel_seconds_total", "counter",
       "Time the tenant's kernels ran.",
       [](const TenantState &t) {
         return double(t.metrics.kernelMicros.load()) / 1e6;
       }},
      {"wooly_tenant_memory_used_bytes", "gauge",
       "Device memory the tenant holds (resident and swapped out).",
       [this](const TenantState &t) {
         return double(memory->tenant(t.memId).used());
       }},
      {"wooly_tenant_memory_resident_bytes", "gauge",
       "The tenant's memory in device memory (module variables included).",
       [this](const TenantState &t) {
         return double(memory->tenant(t.memId).resident);
       }},
      {"wooly_tenant_memory_swapped_bytes", "gauge",
       "The tenant's memory moved out to host memory.",
       [this](const TenantState &t) {
         return double(memory->tenant(t.memId).swapped);
       }},
      {"wooly_tenant_memory_shared_bytes", "gauge",
       "The tenant's memory whose one physical copy it shares with other "
       "allocations (deduplication; part of resident).",
       [this](const TenantState &t) {
         return double(memory->tenant(t.memId).shared);
       }},
      {"wooly_tenant_memory_evictions_total", "counter",
       "Times the tenant's memory was moved out.",
       [this](const TenantState &t) {
         return double(memory->tenant(t.memId).evictions);
       }},
      {"wooly_tenant_memory_swap_ins_total", "counter",
       "Times the tenant's memory was brought back.",
       [this](const TenantState &t) {
         return double(memory->tenant(t.memId).swapIns);
       }},
      {"wooly_tenant_memory_quota_bytes", "gauge", "The tenant's quota.",
       [](const TenantState &t) { return double(t.config.quotaBytes); }},
      {"wooly_tenant_queued_operations", "gauge",
       "Operations of the tenant not yet completed.",
       [](const TenantState &t) { return double(t.metrics.queued.load()); }},
      {"wooly_tenant_errors_total", "counter",
       "Calls of the tenant that failed.",
       [](const TenantState &t) { return double(t.metrics.errors.load()); }},
  };
  for (const Family &f : families) {
    w.family(f.name, f.type, f.help);
    for (auto &[name, t] : tenantStates)
      w.sample(f.name, {{"tenant", name}}, f.value(*t));
  }
  w.family("wooly_tenant_launch_latency_seconds", "summary",
           "Launch latency of the tenant: call received to kernel done "
           "(quantiles over its last 4096 launches).");
  for (auto &[name, t] : tenantStates) {
    for (double q : {0.5, 0.9, 0.99})
      w.sample("wooly_tenant_launch_latency_seconds",
               {{"tenant", name}, {"quantile", llvm::formatv("{0}", q)}},
               percentile(t->latency, q));
    w.sample("wooly_tenant_launch_latency_seconds_sum", {{"tenant", name}},
             t->latencySum);
    w.sample("wooly_tenant_launch_latency_seconds_count", {{"tenant", name}},
             double(t->latencyCount));
  }
  // The scheduler's own measurements (Scheduler.h), as of its last
  // snapshot (at most some 50 ms old); tenants it has seen, connected or not.
  w.family("wooly_scheduler_info", "gauge",
           "The scheduling policy (label policy).");
  w.sample("wooly_scheduler_info", {{"policy", scheduler->name()}}, 1);
  w.family("wooly_tenant_queue_delay_seconds", "summary",
           "Time from an operation becoming ready to its first dispatch "
           "(quantiles over the last 4096).");
  for (const TenantStats &t : schedStats) {
    for (double q : {0.5, 0.99})
      w.sample("wooly_tenant_queue_delay_seconds",
               {{"tenant", t.name}, {"quantile", llvm::formatv("{0}", q)}},
               percentile(t.queueDelayMs, q) / 1000);
    double sum = 0;
    for (double v : t.queueDelayMs)
      sum += v / 1000;
    w.sample("wooly_tenant_queue_delay_seconds_sum", {{"tenant", t.name}}, sum);
    w.sample("wooly_tenant_queue_delay_seconds_count", {{"tenant", t.name}},
             double(t.queueDelayMs.size()));
  }
  struct SchedFamily {
    const char *name, *type, *help;
    std::function<double(const TenantStats &)> value;
  };
  const SchedFamily schedFamilies[] = {
      {"wooly_tenant_weight", "gauge", "The tenant's weight in its class.",
       [](const TenantStats &t) { return double(t.weight); }},
      {"wooly_tenant_device_share", "gauge",
       "The tenant's share of all device time charged so far (compare with "
       "its weight over the weights of its class).",
       [](const TenantStats &t) { return t.share; }},
      {"wooly_tenant_device_charged_seconds_total", "counter",
       "Device time charged to the tenant: duration x the fraction of the "
       "device's block slots its work held.",
       [](const TenantStats &t) { return t.chargedMs / 1000; }},
      {"wooly_tenant_starvation_ratio", "gauge",
       "Starvation: the fraction of the time the tenant had ready work that "
       "none of its work was running, over the time it had work at all.",
       [](const TenantStats &t) { return t.starvation; }},
      {"wooly_tenant_preemptions_total", "counter",
       "Slices of the tenant stopped early for a higher class.",
       [](const TenantStats &t) { return double(t.preempted); }},
      {"wooly_tenant_unpaced_launches_total", "counter",
       "Launches run whole although pacing wanted them sliced (the passes "
       "refused the kernel).",
       [](const TenantStats &t) { return double(t.unpaced); }},
  };
  for (const SchedFamily &f : schedFamilies) {
    w.family(f.name, f.type, f.help);
    for (const TenantStats &t : schedStats)
      w.sample(f.name, {{"tenant", t.name}}, f.value(t));
  }
  // What the weights promise, to set against wooly_tenant_device_share.
  w.family("wooly_tenant_weight_share", "gauge",
           "The tenant's weight over the weights of all tenants of its "
           "class: its fair share of what the higher classes leave.");
  for (const TenantStats &t : schedStats) {
    double classWeights = 0;
    for (const TenantStats &o : schedStats)
      if (o.priorityClass == t.priorityClass)
        classWeights += o.weight;
    w.sample("wooly_tenant_weight_share", {{"tenant", t.name}},
             classWeights > 0 ? t.weight / classWeights : 0);
  }
  w.family("wooly_tenant_copy_bytes_total", "counter",
           "Bytes copied by the tenant, by direction.");
  for (auto &[name, t] : tenantStates) {
    w.sample("wooly_tenant_copy_bytes_total",
             {{"tenant", name}, {"direction", "host_to_device"}},
             double(t->metrics.bytesToDevice.load()));
    w.sample("wooly_tenant_copy_bytes_total",
             {{"tenant", name}, {"direction", "device_to_host"}},
             double(t->metrics.bytesFromDevice.load()));
    w.sample("wooly_tenant_copy_bytes_total",
             {{"tenant", name}, {"direction", "device_to_device"}},
             double(t->metrics.bytesDeviceToDevice.load()));
  }
  return w.str();
}

//===----------------------------------------------------------------------===//
// Server
//===----------------------------------------------------------------------===//

Server::Server(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Server::~Server() = default;

llvm::Expected<std::unique_ptr<Server>> Server::create(ServerOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  try {
    if (llvm::Error e = impl->start())
      return std::move(e);
  } catch (const std::exception &e) {
    return llvm::createStringError(std::string("cannot start: ") + e.what());
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

llvm::Error Server::run() {
  try {
    return impl->run();
  } catch (const std::exception &e) {
    return llvm::createStringError(std::string("server failed: ") + e.what());
  }
}

void Server::requestStop() {
  // The I/O thread sees it within its receive timeout (20 ms), or at once
  // when a signal interrupts the receive.
  impl->stopRequested.store(true);
}

std::string Server::metricsText() { return impl->metricsText(); }

std::vector<std::string> Server::endpoints() const { return impl->bound; }
