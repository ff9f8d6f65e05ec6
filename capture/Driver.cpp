//===- Driver.cpp - Wooly's libcuda.so.1 --------------------------------===//
//
// The CUDA driver API on a wooly-serve session: one connection per process
// (the client library), opened by cuInit. Modules are PTX (text, a fatbin,
// or a registration wrapper), loaded on the server; kernels, memory, streams
// and events are the server's, named by handles this library hands out.
//
//  - Every call holds one process-wide mutex around the client, which is not
//    thread-safe; host functions run with the mutex released.
//  - Device pointers are the server's addresses. They are recorded here too,
//    so that cudaMemcpyDefault and cuPointerGetAttribute can tell them apart
//    from host pointers.
//  - Functions this file does not define return CUDA_ERROR_NOT_SUPPORTED and
//    log their name once (DriverStubs.cpp, from CuExports.def).
//  - A kernel fault on the server is sticky: every later call returns it,
//    until cuDevicePrimaryCtxReset opens a new session.
//
// libcudart.so.13 (Runtime.cpp) is built on these entry points, as NVIDIA's
// runtime is built on its driver.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "CudaAbi.h"
#include "Fatbin.h"
#include "Log.h"
#include "PtxLink.h"

#include "Wooly/Client/Client.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

using namespace wooly::cuabi;
using wooly::capture::log;
using wooly::capture::logUnsupportedOnce;
namespace client = wooly::client;

#define WOOLY_CU_API extern "C" __attribute__((visibility("default")))

WOOLY_CU_API CUresult cuStreamSynchronize(CUstream stream);

namespace {
CUresult bindReferences(CUfunction f);
} // namespace

//===----------------------------------------------------------------------===//
// Objects behind the handles
//===----------------------------------------------------------------------===//

struct CUctx_st {
  unsigned flags = 0;
};

struct CUfunc_st {
  CUmod_st *module = nullptr;
  std::string name;
  std::vector<uint64_t> offsets, sizes;
  uint64_t paramBytes = 0;
  int maxDynamicShared = 48 * 1024;
};

/// A texture or surface reference of a module (cuModuleGetTexRef,
/// cuModuleGetSurfRef): the module variable that the importer makes of a
/// PTX `.texref`/`.surfref`, which holds the handle of the object bound to
/// it; the state the cuTexRefSet* calls accumulate, as an object's
/// descriptors; and the object last made from them.
struct CUtexref_st {
  CUmod_st *module = nullptr;
  bool surface = false;
  /// The module variable's address.
  uint64_t variable = 0;
  /// What is bound (resType -1: nothing yet) and how it is sampled.
  CUDA_RESOURCE_DESC resource;
  CUDA_TEXTURE_DESC texture;
  /// cuTexRefSetFormat's format, for linear and pitch-linear memory.
  CUarray_format format = CU_AD_FORMAT_FLOAT;
  unsigned channels = 1;
  /// The state changed since `object` was made (bound at the next launch
  /// of the module's kernels).
  bool dirty = false;
  /// The object whose handle the variable holds (0: none).
  unsigned long long object = 0;
};

struct CUmod_st {
  uint64_t handle = 0;
  /// The architecture of the PTX's `.target` (80 for `sm_80`, 90 for
  /// `sm_90a`; 0 when it names none): CU_FUNC_ATTRIBUTE_PTX_VERSION.
  int ptxArch = 0;
  client::Module info;
  std::unordered_map<std::string, std::unique_ptr<CUfunc_st>> functions;
  std::unordered_map<std::string, std::unique_ptr<CUtexref_st>> refs;
};

struct CUstream_st {
  uint64_t handle = 0;
  unsigned flags = 0;
  int priority = 0;
};

struct CUevent_st {
  uint64_t handle = 0;
  unsigned flags = 0;
};

namespace {

/// A managed allocation: `size` bytes at the program's pointer, inside the
/// server's allocation at `serverAddress`; `mapped` bytes of this process's
/// address space (whole pages) from the pointer on. Or a managed module
/// variable of `module` (its pages are in State::managedVariablePages). Or
/// the device's copy of registered host memory (`host`, which is then where
/// the host's copy is: see cuMemHostGetDevicePointer).
/// A location of managed memory, as cuMemAdvise and cuMemPrefetchAsync
/// name it (CUmemLocationType: 0 none, 1 the device, 2 the host, 3 a host
/// NUMA node).
struct MemLocation {
  int type = 0, id = 0;
  bool operator==(const MemLocation &o) const {
    return type == o.type && id == o.id;
  }
};

/// What the program said of a part of a managed range: cuMemAdvise's
/// advice and the last place cuMemPrefetchAsync was asked to move it to.
/// Kept for cuMemRangeGetAttribute(s); the copies move at launches and
/// synchronisations whatever it says.
struct MemAdvice {
  bool readMostly = false;
  MemLocation preferred, lastPrefetch;
  /// CU_MEM_ADVISE_SET_ACCESSED_BY: bit 0 the device, bit 1 the host.
  unsigned accessedBy = 0;
  bool operator==(const MemAdvice &o) const {
    return readMostly == o.readMostly && preferred == o.preferred &&
           lastPrefetch == o.lastPrefetch && accessedBy == o.accessedBy;
  }
};

struct ManagedRange {
  size_t size = 0;
  uint64_t serverAddress = 0;
  size_t mapped = 0;
  CUmod_st *module = nullptr;
  void *host = nullptr;
  /// The host's copy of the range at device address `address`.
  void *hostCopy(uint64_t address) const {
    return host ? host : reinterpret_cast<void *>(address);
  }
  /// MemAdvice from each offset to the next one here (empty: the default
  /// everywhere).
  std::map<uint64_t, MemAdvice> advice = {};
};

/// Host memory registered with cuMemHostRegister: its size, and the device
/// address of its copy once the program asked for one (0 until then).
struct RegisteredRange {
  size_t size = 0;
  uint64_t device = 0;
};

/// CUDA's defaults of the stack, printf FIFO and device heap sizes
/// (CUlimit 0 to 2).
constexpr std::array<size_t, 3> kDefaultLimits = {1024, 1 << 20, 8 << 20};

/// The process's view of its session.
struct State {
  std::mutex mu;
  std::unique_ptr<client::Client> client;
  bool initialized = false;
  CUresult initResult = CUDA_ERROR_NOT_INITIALIZED;
  client::DeviceProperties props;
  /// The sticky error of a kernel fault (CUDA_SUCCESS when none).
  CUresult sticky = CUDA_SUCCESS;
  /// cuCtxSetLimit's values (CUlimit 0 to 2): the stack and printf FIFO
  /// sizes as the program set them (the server keeps its own), and the
  /// device heap's, which the server's session has.
  std::array<size_t, 3> limits = kDefaultLimits;
  /// The server's device takes cooperative launches.
  bool cooperativeLaunch = false;

  CUctx_st primary;
  int primaryRefs = 0;

  std::unordered_set<CUmod_st *> modules;
  std::unordered_set<CUfunc_st *> functions;
  std::unordered_set<CUstream_st *> streams;
  std::unordered_set<CUevent_st *> events;
  std::unordered_set<CUarray_st *> arrays;
  std::unordered_set<CUmipmappedArray_st *> mipmaps;
  std::unordered_set<CUtexref_st *> refs;
  /// Device ranges (allocations and module variables): start -> size.
  std::map<uint64_t, uint64_t> deviceRanges;
  /// Host allocations of cuMemAllocHost/cuMemHostAlloc: start -> size.
  std::map<uintptr_t, size_t> hostRanges;
  /// The flags each cuMemHostAlloc allocation was made with (mapped ones
  /// too, which are managed ranges): start -> flags (cuMemHostGetFlags).
  std::map<uintptr_t, unsigned> hostAllocFlags;
  /// Host memory registered with cuMemHostRegister: start -> range.
  std::map<uintptr_t, RegisteredRange> registered;
  /// Managed allocations (cuMemAllocManaged): their start, which is the
  /// program's pointer, -> the server's allocation. The same addresses are
  /// mapped in this process (see "Managed memory").
  std::map<uint64_t, ManagedRange> managed;
  /// The pages mapped for managed module variables (several variables, of
  /// several modules, may share one; they stay mapped).
  std::set<uint64_t> managedVariablePages;
  /// The host's copies of managed memory may be newer than the device's:
  /// they go to the device before the next device work.
  bool managedHostNewer = false;
  /// Device work may have written managed memory since the host's copies
  /// were last brought back: they come back at the next synchronisation.
  bool managedDeviceNewer = false;
};

State &state() {
  static State *s = new State; // never destroyed: atexit handlers use it
  return *s;
}

thread_local CUctx_st *currentContext = nullptr;

CUresult fromCode(const client::Status &st) {
  using C = client::Code;
  switch (st.code) {
  case C::Ok:
    return CUDA_SUCCESS;
  case C::InvalidValue:
  case C::InvalidAddress:
  case C::Malformed:
    return CUDA_ERROR_INVALID_VALUE;
  case C::OutOfMemory:
    return CUDA_ERROR_OUT_OF_MEMORY;
  case C::InvalidHandle:
    return CUDA_ERROR_INVALID_HANDLE;
  case C::NotFound:
    return CUDA_ERROR_NOT_FOUND;
  case C::LaunchFailure:
    return CUDA_ERROR_LAUNCH_FAILED;
  case C::DeviceAssert:
    return CUDA_ERROR_ASSERT;
  case C::MisalignedAddress:
    return CUDA_ERROR_MISALIGNED_ADDRESS;
  case C::IllegalAddress:
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  case C::LaunchTimeout:
    return CUDA_ERROR_LAUNCH_TIMEOUT;
  case C::CompileError:
    return CUDA_ERROR_INVALID_PTX;
  case C::NotReady:
    return CUDA_ERROR_NOT_READY;
  case C::VersionMismatch:
    return CUDA_ERROR_SYSTEM_DRIVER_MISMATCH;
  case C::Unauthenticated:
    return CUDA_ERROR_NOT_PERMITTED;
  case C::Unsupported:
    return CUDA_ERROR_NOT_SUPPORTED;
  case C::LimitExceeded:
    return CUDA_ERROR_NOT_PERMITTED;
  case C::NoSession:
  case C::Unavailable:
  case C::DeviceLost:
    return CUDA_ERROR_DEVICE_UNAVAILABLE;
  case C::Internal:
    break;
  }
  return CUDA_ERROR_UNKNOWN;
}

/// Maps a failed client call to its CUresult, logs the server's message and
/// records a sticky fault.
CUresult fail(State &s, const client::Status &st, const char *call) {
  CUresult r = fromCode(st);
  if (st.code != client::Code::NotReady)
    log(1, "%s: %s", call, st.str().c_str());
  if (st.sticky && s.sticky == CUDA_SUCCESS)
    s.sticky = r;
  return r;
}

#define CHECK_STATUS(call, expr)                                               \
  do {                                                                         \
    client::Status st_ = (expr);                                               \
    if (!st_.ok())                                                             \
      return fail(s, st_, call);                                               \
  } while (0)

/// The common preamble: initialised, connected, no sticky fault.
#define LOCKED_READY(s)                                                        \
  State &s = state();                                                          \
  std::lock_guard<std::mutex> lock_(s.mu);                                     \
  if (!s.initialized || !s.client)                                             \
    return s.initialized ? s.initResult : CUDA_ERROR_NOT_INITIALIZED;          \
  if (s.sticky != CUDA_SUCCESS)                                                \
    return s.sticky;

//===----------------------------------------------------------------------===//
// Managed memory
//===----------------------------------------------------------------------===//
//
// A managed allocation is device memory whose address is also mapped in this
// process: the program's pointer works on the host and in kernels alike.
// The two copies are kept coherent where CUDA lets the host look without
// concurrent managed access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS
// is 0): before device work (a launch, copy, memset or graph launch) the
// host's copies go to the device, in the work's stream, when the host may
// have written them since; at a synchronisation (context, stream, event, a
// synchronous copy) the device's come back when device work ran since. So
// a program that initialises managed memory, launches, synchronises and
// reads the results sees what it would on a GPU, at the cost of copying
// every managed allocation each way once per launch-and-synchronise round.
// The host touching managed memory while device work runs (allowed only
// with concurrent managed access) is not coherent.

/// Before device work (in any stream): the host's copies of managed memory
/// go first, in the legacy default stream (0). The server orders every
/// later operation of the session, in any stream, after that stream's
/// work, so kernels queued next in other streams find the host's bytes
/// too. (A synchronous copy alone does not: its reply comes once the server
/// holds the bytes, before the device has them, and a kernel in a
/// non-blocking stream could run first, and be overwritten by the copy.)
client::Status managedToDevice(State &s) {
  if (s.managed.empty())
    return client::Status();
  if (s.managedHostNewer) {
    for (const auto &[address, range] : s.managed) {
      client::Status st =
          s.client->copyToDevice(address, range.hostCopy(address), range.size,
                                 /*stream=*/0, /*async=*/false);
      if (!st.ok())
        return st;
    }
    s.managedHostNewer = false;
  }
  s.managedDeviceNewer = true;
  return client::Status();
}

/// After a synchronisation: the device's copies of managed memory come
/// back when device work ran since the last time.
client::Status managedToHost(State &s) {
  if (s.managed.empty() || !s.managedDeviceNewer)
    return client::Status();
  for (const auto &[address, range] : s.managed) {
    client::Status st = s.client->copyFromDevice(range.hostCopy(address),
                                                 address, range.size, 0);
    if (!st.ok())
      return st;
  }
  s.managedDeviceNewer = false;
  s.managedHostNewer = true; // the host may write them now
  return client::Status();
}

/// Device work follows: managed memory first (a macro because CHECK_STATUS
/// returns from the caller).
#define MANAGED_TO_DEVICE(s, call) CHECK_STATUS(call, managedToDevice(s))
/// A synchronisation ended: managed memory back.
#define MANAGED_TO_HOST(s, call) CHECK_STATUS(call, managedToHost(s))

std::string programName() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return (name.empty() ? std::string("pid") : name) + " (pid " +
         std::to_string(getpid()) + ")";
}

CUresult connect(State &s) {
  client::Options options;
  options.clientName = programName();
  client::Status st;
  s.client = client::Client::connect(options, st);
  if (!s.client) {
    log(1, "cannot open a session on wooly-serve: %s", st.str().c_str());
    // A server that answers that its device is lost: the device is
    // unavailable; one that does not answer: no device.
    if (st.code == client::Code::DeviceLost)
      return CUDA_ERROR_DEVICE_UNAVAILABLE;
    return fromCode(st) == CUDA_ERROR_DEVICE_UNAVAILABLE ? CUDA_ERROR_NO_DEVICE
                                                         : fromCode(st);
  }
  st = s.client->getDevice(s.props);
  if (!st.ok()) {
    log(1, "cannot query wooly-serve's device: %s", st.str().c_str());
    s.client.reset();
    return fromCode(st);
  }
  s.cooperativeLaunch = s.props.maxCooperativeBlocks > 0;
  log(2, "session %llu on %s as tenant '%s' (%s, %s backend)",
      (unsigned long long)s.client->session().id, s.client->server().c_str(),
      s.client->session().tenant.c_str(), s.props.name.c_str(),
      s.props.backend.c_str());
  return CUDA_SUCCESS;
}

/// The server's stream handle of `stream` (null, legacy and per-thread are
/// the legacy default stream); false when `stream` is not ours.
bool streamHandle(State &s, CUstream stream, uint64_t &handle) {
  if (!stream || stream == kStreamLegacy || stream == kStreamPerThread) {
    handle = 0;
    return true;
  }
  if (!s.streams.count(stream))
    return false;
  handle = stream->handle;
  return true;
}

#define RESOLVE_STREAM(s, stream, handle)                                      \
  uint64_t handle = 0;                                                         \
  if (!streamHandle(s, stream, handle))                                        \
    return CUDA_ERROR_INVALID_HANDLE;

bool isDevicePointer(State &s, uint64_t addr, uint64_t bytes = 1) {
  auto it = s.deviceRanges.upper_bound(addr);
  if (it == s.deviceRanges.begin())
    return false;
  --it;
  return addr >= it->first && addr - it->first + bytes <= it->second;
}

/// Forgets every object of the session (a reset or a lost connection).
void dropObjects(State &s) {
  for (CUmod_st *m : s.modules)
    delete m;
  for (CUstream_st *st : s.streams)
    delete st;
  for (CUevent_st *e : s.events)
    delete e;
  for (CUarray_st *a : s.arrays)
    delete a;
  s.arrays.clear();
  for (CUmipmappedArray_st *m : s.mipmaps)
    delete m;
  s.mipmaps.clear();
  s.modules.clear();
  s.functions.clear();
  s.streams.clear();
  s.events.clear();
  s.deviceRanges.clear();
}

/// The PTX of a module image: PTX text, a fatbin or a registration wrapper.
CUresult ptxOfImage(const void *image, std::string &ptx, std::string &error) {
  if (!image)
    return CUDA_ERROR_INVALID_VALUE;
  uint32_t magic;
  std::memcpy(&magic, image, sizeof magic);
  if (magic == 0x466243B1u) { // __fatBinC_Wrapper_t
    std::vector<std::string> texts;
    if (!wooly::capture::ptxFromWrapper(image, texts, error))
      return CUDA_ERROR_INVALID_IMAGE;
    if (texts.empty()) {
      error = "the image carries no PTX";
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    return wooly::capture::linkPtx(texts, ptx, error) ? CUDA_SUCCESS
                                                      : CUDA_ERROR_INVALID_PTX;
  }
  if (magic == 0xBA55ED50u) { // a fatbin
    size_t size = wooly::capture::fatbinSize(image);
    std::vector<wooly::capture::FatbinEntry> entries;
    if (!size || !wooly::capture::parseFatbin(
                     std::string_view(static_cast<const char *>(image), size),
                     entries, error))
      return CUDA_ERROR_INVALID_IMAGE;
    int pick = wooly::capture::pickPtx(entries);
    if (pick < 0) {
      error = "the fatbin carries no PTX (only SASS, which Wooly cannot run); "
              "build with a PTX target (e.g. nvcc -arch=compute_XX or "
              "-gencode ...,code=compute_XX)";
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    return wooly::capture::entryContents(entries[pick], ptx, error)
               ? CUDA_SUCCESS
               : CUDA_ERROR_INVALID_IMAGE;
  }
  if (magic == 0x464C457Fu) { // "\x7fELF"
    error = "the image is a cubin (SASS), which Wooly cannot run; load PTX "
            "instead";
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  ptx = static_cast<const char *>(image);
  return CUDA_SUCCESS;
}

/// The architecture of PTX text's first `.target sm_NN...` directive
/// (80 for `sm_80`, 90 for `sm_90a`), 0 when there is none.
int ptxTargetArch(std::string_view ptx) {
  size_t at = ptx.find(".target");
  if (at == std::string_view::npos)
    return 0;
  size_t i = at + 7;
  while (i < ptx.size() && (ptx[i] == ' ' || ptx[i] == '\t'))
    ++i;
  if (ptx.substr(i, 3) != "sm_")
    return 0;
  int arch = 0;
  for (i += 3; i < ptx.size() && ptx[i] >= '0' && ptx[i] <= '9' && arch < 10000;
       ++i)
    arch = arch * 10 + (ptx[i] - '0');
  return arch;
}

} // namespace

//===----------------------------------------------------------------------===//
// Private interface for libcudart (Driver.h)
//===----------------------------------------------------------------------===//

namespace wooly::capture {

const char *driverLaunchAttribute(int id, const char *value,
                                  LaunchAttributes &out) {
  switch (id) {
  case cudaLaunchAttributeIgnore:
  case cudaLaunchAttributeAccessPolicyWindow:
  case cudaLaunchAttributeSynchronizationPolicy:
  case cudaLaunchAttributeClusterSchedulingPolicyPreference:
  case cudaLaunchAttributeProgrammaticStreamSerialization:
  case cudaLaunchAttributePriority:
  case cudaLaunchAttributeMemSyncDomainMap:
  case cudaLaunchAttributeMemSyncDomain:
  case cudaLaunchAttributePreferredClusterDimension:
  case cudaLaunchAttributePreferredSharedMemoryCarveout:
  case cudaLaunchAttributeNvlinkUtilCentricScheduling:
    return nullptr;
  case cudaLaunchAttributeCooperative: {
    int v;
    std::memcpy(&v, value, sizeof v);
    out.cooperative = v != 0;
    return nullptr;
  }
  case cudaLaunchAttributeClusterDimension: {
    unsigned dim[3];
    std::memcpy(dim, value, sizeof dim);
    if (dim[0] <= 1 && dim[1] <= 1 && dim[2] <= 1)
      return nullptr;
    return "thread block clusters of more than one block are not supported "
           "yet";
  }
  case cudaLaunchAttributeProgrammaticEvent:
    return "a programmatic event is not supported yet";
  case cudaLaunchAttributeLaunchCompletionEvent:
    return "a launch completion event is not supported yet";
  case cudaLaunchAttributeDeviceUpdatableKernelNode:
    return "device-updatable kernel nodes are not supported yet";
  default:
    return "this launch attribute is not supported yet";
  }
}

CUresult driverLoadPtx(std::string_view ptx, std::string_view name,
                       CUmodule *module) {
  LOCKED_READY(s);
  // Kernels that launch kernels call the device runtime (cudadevrt).
  for (const char *sym :
       {"cudaLaunchDeviceV2", "cudaLaunchDevice(", "cudaGetParameterBufferV2"})
    if (ptx.find(sym) != std::string_view::npos) {
      log(1,
          "%.*s: uses dynamic parallelism (a kernel launching kernels, "
          "%s), which Wooly does not support yet",
          (int)name.size(), name.data(), sym);
      return CUDA_ERROR_NOT_SUPPORTED;
    }
  client::Module info;
  CHECK_STATUS("cuModuleLoadData", s.client->loadModule(ptx, name, info));
  auto *m = new CUmod_st;
  m->handle = info.handle;
  m->ptxArch = ptxTargetArch(ptx);
  m->info = std::move(info);
  s.modules.insert(m);
  log(2, "loaded module %.*s: %zu kernels, %zu variables", (int)name.size(),
      name.data(), m->info.kernels.size(), m->info.variables.size());
  *module = m;
  return CUDA_SUCCESS;
}

bool driverIsDevicePointer(const void *ptr, size_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return isDevicePointer(s, reinterpret_cast<uint64_t>(ptr), bytes ? bytes : 1);
}

CUresult driverGraphCreate(const GraphCall *calls, size_t count,
                           uint64_t *graph) {
  LOCKED_READY(s);
  s.client->beginGraph();
  for (size_t i = 0; i < count; ++i) {
    const GraphCall &c = calls[i];
    client::Status st;
    switch (c.kind) {
    case GraphCall::Kind::Launch:
      if (!s.functions.count(c.fn)) {
        s.client->abandonGraph();
        return CUDA_ERROR_INVALID_HANDLE;
      }
      st = s.client->launch(c.fn->module->handle, c.fn->name,
                            {c.grid[0], c.grid[1], c.grid[2]},
                            {c.block[0], c.block[1], c.block[2]}, c.shared,
                            c.params, c.paramBytes, 0);
      break;
    case GraphCall::Kind::Memset:
      st = s.client->memset(c.dst, c.value, c.bytes, 0, true);
      break;
    case GraphCall::Kind::CopyDeviceToDevice:
      st = s.client->copyDeviceToDevice(c.dst, c.src, c.bytes, 0, true);
      break;
    case GraphCall::Kind::EventRecord:
    case GraphCall::Kind::EventWait:
      if (!s.events.count(c.event)) {
        s.client->abandonGraph();
        return CUDA_ERROR_INVALID_HANDLE;
      }
      st = c.kind == GraphCall::Kind::EventRecord
               ? s.client->eventRecord(c.event->handle, 0)
               : s.client->streamWaitEvent(0, c.event->handle);
      break;
    }
    if (!st.ok()) {
      s.client->abandonGraph();
      return fail(s, st, "cudaGraphInstantiate");
    }
  }
  uint64_t handle = 0;
  client::Status st = s.client->endGraph(handle);
  if (st.code == client::Code::Unsupported ||
      st.code == client::Code::Malformed)
    return CUDA_ERROR_NOT_SUPPORTED; // an older server: run on the client
  CHECK_STATUS("cudaGraphInstantiate", st);
  log(2, "graph %llu: %zu calls kept on the server", (unsigned long long)handle,
      count);
  *graph = handle;
  return CUDA_SUCCESS;
}

CUresult driverGraphLaunch(uint64_t graph, CUstream stream) {
  LOCKED_READY(s);
  RESOLVE_STREAM(s, stream, handle);
  MANAGED_TO_DEVICE(s, "cudaGraphLaunch");
  CHECK_STATUS("cudaGraphLaunch", s.client->graphLaunch(graph, handle));
  return CUDA_SUCCESS;
}

CUresult driverGraphDestroy(uint64_t graph) {
  LOCKED_READY(s);
  CHECK_STATUS("cudaGraphExecDestroy", s.client->graphDestroy(graph));
  return CUDA_SUCCESS;
}

namespace {
/// Checks the format, flags and extents of an array (or of level 0 of a
/// mipmapped one) as driverArrayCreate takes them.
CUresult checkArray(const wooly::ChannelFormat &format, uint64_t width,
                    uint64_t height, uint64_t depth, unsigned flags,
                    CUresult badFormat) {
  if (const char *why = wooly::channelFormatError(format)) {
    log(1, "cannot create a CUDA array: %s", why);
    return badFormat;
  }
  constexpr unsigned kKnown = cudaArrayLayered | cudaArraySurfaceLoadStore |
                              cudaArrayCubemap | cudaArrayTextureGather;
  if (flags & ~kKnown) {
    log(1,
        "CUDA array flags 0x%x are not supported yet (sparse, deferred "
        "mapping, color attachment)",
        flags & ~kKnown);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  constexpr uint64_t kMaxExtent = uint64_t(1) << 30;
  if (!width || width > kMaxExtent || height > kMaxExtent ||
      depth > kMaxExtent ||
      ((flags & cudaArrayCubemap) &&
       (depth % 6 || !depth || width != height)) ||
      ((flags & cudaArrayLayered) && !depth))
    return CUDA_ERROR_INVALID_VALUE;
  // (Each extent is below 2^30 and a texel at most 16 bytes; the levels
  // of a mipmapped array take at most twice level 0's bytes.)
  unsigned __int128 bytes = (unsigned __int128)width * (height ? height : 1) *
                            (depth ? depth : 1) * format.elementBytes();
  if (bytes > (uint64_t(1) << 47))
    return CUDA_ERROR_OUT_OF_MEMORY;
  return CUDA_SUCCESS;
}
} // namespace

CUresult driverArrayCreate(const wooly::ChannelFormat &format, uint64_t width,
                           uint64_t height, uint64_t depth, unsigned flags,
                           CUresult badFormat, CUarray_st **array) {
  if (!array)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult e = checkArray(format, width, height, depth, flags, badFormat))
    return e;
  auto a = std::make_unique<CUarray_st>();
  a->format = format;
  a->width = width;
  a->height = height;
  a->depth = depth;
  a->flags = flags;
  LOCKED_READY(s);
  uint64_t address = 0;
  CHECK_STATUS("cudaMallocArray", s.client->malloc(a->bytes(), address));
  a->address = address;
  s.deviceRanges[address] = a->bytes();
  *array = a.release();
  s.arrays.insert(*array);
  return CUDA_SUCCESS;
}

CUresult driverArrayDestroy(CUarray_st *array) {
  LOCKED_READY(s);
  if (!s.arrays.count(array) || array->owner)
    return CUDA_ERROR_INVALID_VALUE; // a level goes with its mipmapped array
  CHECK_STATUS("cudaFreeArray", s.client->free(array->address));
  s.deviceRanges.erase(array->address);
  s.arrays.erase(array);
  delete array;
  return CUDA_SUCCESS;
}

bool driverIsArray(const CUarray_st *array) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.arrays.count(const_cast<CUarray_st *>(array)) != 0;
}

CUresult driverMipmappedArrayCreate(const wooly::ChannelFormat &format,
                                    uint64_t width, uint64_t height,
                                    uint64_t depth, unsigned flags,
                                    unsigned levels, CUresult badFormat,
                                    CUmipmappedArray_st **array) {
  if (!array)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult e = checkArray(format, width, height, depth, flags, badFormat))
    return e;
  auto m = std::make_unique<CUmipmappedArray_st>();
  wooly::ResourceDesc &r = m->resource;
  r.kind = wooly::ResourceDesc::Kind::MipmappedArray;
  r.format = format;
  r.width = width;
  r.height = height;
  r.depth = depth;
  r.layered = flags & cudaArrayLayered;
  r.cubemap = flags & cudaArrayCubemap;
  r.levels = std::clamp<unsigned>(levels, 1, wooly::mipLevelLimit(r));
  m->flags = flags;
  uint64_t bytes = wooly::mipLevelOffset(r, r.levels);
  LOCKED_READY(s);
  uint64_t address = 0;
  CHECK_STATUS("cudaMallocMipmappedArray", s.client->malloc(bytes, address));
  r.address = address;
  s.deviceRanges[address] = bytes;
  for (uint32_t l = 0; l < r.levels; ++l) {
    uint64_t e[3];
    wooly::mipLevelExtent(r, l, e);
    auto a = new CUarray_st;
    a->address = address + wooly::mipLevelOffset(r, l);
    a->format = format;
    a->width = e[0];
    a->height = e[1];
    a->depth = e[2];
    a->flags = flags;
    a->owner = m.get();
    m->levels.push_back(a);
    s.arrays.insert(a);
  }
  *array = m.release();
  s.mipmaps.insert(*array);
  return CUDA_SUCCESS;
}

CUresult driverMipmappedArrayDestroy(CUmipmappedArray_st *array) {
  LOCKED_READY(s);
  if (!s.mipmaps.count(array))
    return CUDA_ERROR_INVALID_VALUE;
  CHECK_STATUS("cudaFreeMipmappedArray",
               s.client->free(array->resource.address));
  s.deviceRanges.erase(array->resource.address);
  for (CUarray_st *a : array->levels) {
    s.arrays.erase(a);
    delete a;
  }
  s.mipmaps.erase(array);
  delete array;
  return CUDA_SUCCESS;
}

CUresult driverMipmappedArrayLevel(CUmipmappedArray_st *array, unsigned level,
                                   CUarray_st **out) {
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.mipmaps.count(array))
    return CUDA_ERROR_INVALID_HANDLE;
  if (level >= array->levels.size())
    return CUDA_ERROR_INVALID_VALUE;
  *out = array->levels[level];
  return CUDA_SUCCESS;
}

bool driverMipmappedResource(const CUmipmappedArray_st *array,
                             wooly::ResourceDesc &out) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.mipmaps.count(const_cast<CUmipmappedArray_st *>(array)))
    return false;
  out = array->resource;
  return true;
}

CUresult driverTextureCreate(const wooly::ResourceDesc &resource,
                             const wooly::TextureDesc &texture, bool surface,
                             uint64_t *handle,
                             const client::TextureExtras &extras) {
  if (!handle)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  CHECK_STATUS(
      surface ? "cudaCreateSurfaceObject" : "cudaCreateTextureObject",
      s.client->textureCreate(resource, texture, surface, *handle, extras));
  return CUDA_SUCCESS;
}

CUresult driverTextureDestroy(uint64_t handle, bool surface) {
  LOCKED_READY(s);
  CHECK_STATUS(surface ? "cudaDestroySurfaceObject"
                       : "cudaDestroyTextureObject",
               s.client->textureDestroy(handle, surface));
  return CUDA_SUCCESS;
}

size_t driverParamBufferSize(CUfunction fn) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.functions.count(fn) ? fn->paramBytes : 0;
}

uint64_t driverLastSeq() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.client ? s.client->lastSeq() : 0;
}

} // namespace wooly::capture

//===----------------------------------------------------------------------===//
// Initialisation, versions, errors
//===----------------------------------------------------------------------===//

WOOLY_CU_API CUresult cuInit(unsigned flags) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!s.initialized) {
    s.initialized = true;
    s.initResult = connect(s);
  }
  return s.initResult;
}

WOOLY_CU_API CUresult cuDriverGetVersion(int *version) {
  if (!version)
    return CUDA_ERROR_INVALID_VALUE;
  *version = kCudaVersion;
  return CUDA_SUCCESS;
}

namespace {
struct ResultName {
  CUresult code;
  const char *name;
};
const ResultName kResultNames[] = {
#define WOOLY_CU_RESULT(name, value) {name, #name},
#include "CuResults.def"
#undef WOOLY_CU_RESULT
};
} // namespace

WOOLY_CU_API CUresult cuGetErrorName(CUresult error, const char **str) {
  if (!str)
    return CUDA_ERROR_INVALID_VALUE;
  for (const ResultName &r : kResultNames)
    if (r.code == error) {
      *str = r.name;
      return CUDA_SUCCESS;
    }
  *str = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

WOOLY_CU_API CUresult cuGetErrorString(CUresult error, const char **str) {
  if (!str)
    return CUDA_ERROR_INVALID_VALUE;
  *str = wooly::capture::resultDescription(error);
  return *str ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

WOOLY_CU_API CUresult cuGetExportTable(const void **table, const void *id) {
  (void)id;
  if (table)
    *table = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    log(1, "this program asked for NVIDIA's private driver interface "
           "(cuGetExportTable), which only NVIDIA's own runtime uses: the "
           "program links the CUDA runtime statically (nvcc's default "
           "-cudart static) or uses a library that does (cuBLAS, cuDNN, "
           "NCCL, ...). Wooly cannot run it; rebuild the program with "
           "'nvcc -cudart shared'.");
  });
  return CUDA_ERROR_NOT_SUPPORTED;
}

/// Every exported name resolves through dlsym on this library, so the
/// functions Wooly does not implement come back as their stubs.
WOOLY_CU_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
                                          int cudaVersion,
                                          unsigned long long flags,
                                          CUdriverProcAddressQueryResult *res) {
  if (!symbol || !pfn)
    return CUDA_ERROR_INVALID_VALUE;
  static void *self = [] {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void *>(&cuInit), &info))
      return static_cast<void *>(nullptr);
    return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }();
  *pfn = nullptr;
  if (self) {
    std::string base = symbol;
    // Versions whose signatures differ: the caller's CUDA version picks.
    if (base == "cuCtxCreate" && cudaVersion < 12050)
      base = "cuCtxCreate_v2";
    // The newest version first; per-thread-stream variants before the
    // plain one when asked for.
    bool perThread = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    for (const char *v : {"_v4", "_v3", "_v2", ""}) {
      for (const char *st : {"_ptsz", "_ptds", ""}) {
        if (*st && !perThread)
          continue;
        if ((*pfn = dlsym(self, (base + v + st).c_str())))
          break;
      }
      if (*pfn)
        break;
    }
  }
  if (res)
    *res = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS
                : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/// The first version, without the query result.
WOOLY_CU_API CUresult cuGetProcAddress(const char *symbol, void **pfn,
                                       int cudaVersion,
                                       unsigned long long flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, nullptr);
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

/// Initialised and connected; holds the state's lock for the rest of the
/// function (a reset on another thread replaces the client and the device).
#define CHECK_INIT(s)                                                          \
  State &s = state();                                                          \
  std::unique_lock<std::mutex> lock_(s.mu);                                    \
  if (!s.initialized)                                                          \
    return CUDA_ERROR_NOT_INITIALIZED;                                         \
  if (!s.client)                                                               \
    return s.initResult;

WOOLY_CU_API CUresult cuDeviceGetCount(int *count) {
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  *count = s.client ? 1 : 0;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  CHECK_INIT(s);
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  CHECK_INIT(s);
  if (!name || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, len, "%s", s.props.name.c_str());
  return CUDA_SUCCESS;
}

/// The device's PCI address as CUDA writes it ("domain:bus:device.0",
/// hexadecimal): Wooly's device reports 0 for each (the server's GPU, if
/// it has one, is not the program's to address), so "0000:00:00.0".
WOOLY_CU_API CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice dev) {
  CHECK_INIT(s);
  if (!id || len < 13)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(id, size_t(len), "%04x:%02x:%02x.0", 0u, 0u, 0u);
  return CUDA_SUCCESS;
}

/// The device at a PCI address ("[domain:]bus:device.function"): device 0
/// where it is cuDeviceGetPCIBusId's.
WOOLY_CU_API CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *id) {
  CHECK_INIT(s);
  if (!dev || !id)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  char end = 0;
  if (std::sscanf(id, "%x:%x:%x.%x%c", &domain, &bus, &device, &function,
                  &end) != 4 &&
      std::sscanf(id, "%x:%x.%x%c", &bus, &device, &function, &end) != 3)
    return CUDA_ERROR_INVALID_VALUE;
  if (domain || bus || device || function)
    return CUDA_ERROR_INVALID_DEVICE;
  *dev = 0;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  CHECK_INIT(s);
  if (!bytes)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  // The tenant's quota when it has one: the device it may use.
  uint64_t quota = s.client->session().quotaBytes;
  *bytes = quota ? std::min<uint64_t>(quota, s.props.totalMemory)
                 : s.props.totalMemory;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuDeviceGetUuid_v2(cudaUUID_t *uuid, CUdevice dev) {
  CHECK_INIT(s);
  if (!uuid)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  std::memset(uuid->bytes, 0, sizeof uuid->bytes);
  std::memcpy(uuid->bytes, "wooly", 5);
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuDeviceGetUuid(cudaUUID_t *uuid, CUdevice dev) {
  return cuDeviceGetUuid_v2(uuid, dev);
}

WOOLY_CU_API CUresult cuDeviceComputeCapability(int *major, int *minor,
                                                CUdevice dev) {
  CHECK_INIT(s);
  if (!major || !minor)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *major = (int)s.props.computeMajor;
  *minor = (int)s.props.computeMinor;
  return CUDA_SUCCESS;
}

/// The texture and surface limits of a device with textures (those of
/// compute capability 8.x, which the CPU backend's arrays, of up to 2^30
/// elements a side, hold): the attribute's value, or none where `attribute`
/// is not one of them.
static std::optional<int> textureLimit(int attribute) {
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH:
    return 131072;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT:
    return 65536;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH:
    return 16384;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH:
    return 32768;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS:
    return 2048;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS:
    return 2046;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH:
    return 1 << 28;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT:
    return 65000;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH:
    return (1 << 21) - 32;
  case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT:
    return 512;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
    return 32;
  default:
    return std::nullopt;
  }
}

WOOLY_CU_API CUresult
cuDeviceGetTexture1DLinearMaxWidth(size_t *maxWidthInElements, CUarray_format,
                                   unsigned numChannels, CUdevice dev) {
  CHECK_INIT(s);
  if (!maxWidthInElements ||
      (numChannels != 1 && numChannels != 2 && numChannels != 4))
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  if (s.props.backend != "cpu")
    return CUDA_ERROR_NOT_SUPPORTED; // No textures on this backend yet.
  *maxWidthInElements =
      size_t(*textureLimit(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH));
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuDeviceGetAttribute(int *value, int attribute,
                                           CUdevice dev) {
  CHECK_INIT(s);
  if (!value)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  const client::DeviceProperties &p = s.props;
  auto clampInt = [](uint64_t v) {
    return (int)std::min<uint64_t>(v, 0x7fffffff);
  };
  // Textures and surfaces are the CPU backend's (the cuda backend has none
  // yet, and refuses them): elsewhere their limits are 0.
  if (std::optional<int> limit = textureLimit(attribute)) {
    *value = p.backend == "cpu" ? *limit : 0;
    return CUDA_SUCCESS;
  }
  int v = 0;
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    v = (int)p.maxThreadsPerBlock;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
    v = (int)p.maxBlock[attribute - CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X];
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
    v = clampInt(p.maxGrid[attribute - CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X]);
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    v = clampInt(p.sharedPerBlock);
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
    v = clampInt(p.sharedPerBlock * 2);
    break;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
    v = clampInt(p.constMemory);
    break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
    v = (int)p.warpSize;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
    v = 0x7fffffff;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
    v = (int)p.regsPerBlock;
    break;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
    v = (int)p.clockKHz;
    break;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
    v = 512;
    break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    v = (int)p.smCount;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
    v = (int)p.maxThreadsPerSM;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
    v = p.maxThreadsPerSM ? (int)std::max<uint32_t>(1, p.maxThreadsPerSM / 64)
                          : 1;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    v = (int)p.computeMajor;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    v = (int)p.computeMinor;
    break;
  case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
  case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
    v = 1;
    break;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
    v = 1;
    break;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
    v = 4 << 20;
    break;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
    v = 256;
    break;
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
    v = s.cooperativeLaunch;
    break;
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    v = 1; // without concurrent access ("Managed memory")
    break;
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
  case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
    v = 1; // mapped host memory is managed memory (cuMemHostAlloc,
    break; // cuMemHostGetDevicePointer)
  default:
    v = 0; // not offered (concurrent managed access, cooperative launch, ...)
    break;
  }
  *value = v;
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Contexts: one primary context, which is the session
//===----------------------------------------------------------------------===//

WOOLY_CU_API CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  CHECK_INIT(s);
  if (!ctx)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  ++s.primaryRefs;
  *ctx = &s.primary;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  CHECK_INIT(s);
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  if (s.primaryRefs > 0)
    --s.primaryRefs;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags,
                                                 int *active) {
  CHECK_INIT(s);
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  if (flags)
    *flags = s.primary.flags;
  if (active)
    *active = s.primaryRefs > 0;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev,
                                                    unsigned flags) {
  CHECK_INIT(s);
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  s.primary.flags = flags;
  return CUDA_SUCCESS;
}

/// Closes the session and opens a new one: every allocation, module, stream
/// and event of the old one is gone (as CUDA's reset destroys them), and a
/// sticky fault is cleared.
WOOLY_CU_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  CHECK_INIT(s);
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  s.client.reset();
  dropObjects(s);
  s.sticky = CUDA_SUCCESS;
  s.limits = kDefaultLimits; // a new session's
  s.initResult = connect(s);
  return s.initResult;
}

WOOLY_CU_API CUresult cuCtxCreate_v4(CUcontext *ctx, void *params,
                                     unsigned flags, CUdevice dev) {
  (void)params;
  CUresult r = cuDevicePrimaryCtxRetain(ctx, dev);
  if (r == CUDA_SUCCESS) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    s.primary.flags = flags;
    currentContext = *ctx;
  }
  return r;
}

WOOLY_CU_API CUresult cuCtxCreate_v2(CUcontext *ctx, unsigned flags,
                                     CUdevice dev) {
  return cuCtxCreate_v4(ctx, nullptr, flags, dev);
}

WOOLY_CU_API CUresult cuCtxDestroy_v2(CUcontext ctx) {
  CHECK_INIT(s);
  if (ctx != &s.primary)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (currentContext == ctx)
    currentContext = nullptr;
  if (s.primaryRefs > 0)
    --s.primaryRefs;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  CHECK_INIT(s);
  if (ctx && ctx != &s.primary)
    return CUDA_ERROR_INVALID_CONTEXT;
  currentContext = ctx;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuCtxGetCurrent(CUcontext *ctx) {
  if (!ctx)
    return CUDA_ERROR_INVALID_VALUE;
  *ctx = currentContext;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  return cuCtxSetCurrent(ctx);
}

WOOLY_CU_API CUresult cuCtxPopCurrent_v2(CUcontext *ctx) {
  if (ctx)
    *ctx = currentContext;
  currentContext = nullptr;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuCtxGetDevice(CUdevice *dev) {
  if (!dev)
    return CUDA_ERROR_INVALID_VALUE;
  *dev = 0;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuCtxGetFlags(unsigned *flags) {
  if (!flags)
    return CUDA_ERROR_INVALID_VALUE;
  *flags = state().primary.flags;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned *version) {
  (void)ctx;
  if (!version)
    return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  // Priorities are accepted and remembered; the server's scheduler does not
  // order streams by them yet.
  if (least)
    *least = 0;
  if (greatest)
    *greatest = -5;
  return CUDA_SUCCESS;
}

/// The device keeps no persisting L2 lines (access policy windows are
/// accepted and change nothing): nothing to reset.
WOOLY_CU_API CUresult cuCtxResetPersistingL2Cache() {
  CHECK_INIT(s);
  return CUDA_SUCCESS;
}

/// Device limits. The heap's size is the session's on the server (charged
/// to the tenant's quota; refused once a kernel has allocated from the
/// heap, as in CUDA). Where the server's device has no heap per session
/// (the cuda backend: the context's heap is every tenant's), the size
/// stays CUDA's default and the program is told, without an error:
/// programs set a large heap just in case, and device-side malloc returns
/// null past the heap as on a GPU. Stack and printf FIFO sizes are
/// recorded and reported back.
WOOLY_CU_API CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  LOCKED_READY(s);
  if (limit == CU_LIMIT_MALLOC_HEAP_SIZE) {
    if (value == s.limits[limit])
      return CUDA_SUCCESS;
    client::Status st = s.client->setHeapSize(value);
    if (st.code == client::Code::Unsupported) {
      log(1,
          "cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, %zu): %s; the device "
          "heap stays %zu MiB, and device-side malloc returns null beyond it",
          value, st.message.c_str(), s.limits[limit] >> 20);
      return CUDA_SUCCESS;
    }
    CHECK_STATUS("cuCtxSetLimit", st);
    s.limits[limit] = value;
    return CUDA_SUCCESS;
  }
  if (limit == CU_LIMIT_STACK_SIZE || limit == CU_LIMIT_PRINTF_FIFO_SIZE) {
    s.limits[limit] = value;
    return CUDA_SUCCESS;
  }
  // Launch depths of dynamic parallelism (not supported), L2 hints.
  return unsigned(limit) <= CU_LIMIT_PERSISTING_L2_CACHE_SIZE
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

WOOLY_CU_API CUresult cuCtxGetLimit(size_t *value, CUlimit limit) {
  if (!value)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  if (unsigned(limit) <= CU_LIMIT_MALLOC_HEAP_SIZE)
    *value = s.limits[limit];
  else if (unsigned(limit) <= CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
    *value = 0;
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuCtxSynchronize() {
  LOCKED_READY(s);
  CHECK_STATUS("cuCtxSynchronize", s.client->deviceSynchronize());
  MANAGED_TO_HOST(s, "cuCtxSynchronize");
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Modules and functions
//===----------------------------------------------------------------------===//

WOOLY_CU_API CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  if (!module || !image)
    return CUDA_ERROR_INVALID_VALUE;
  std::string ptx, error;
  CUresult r = ptxOfImage(image, ptx, error);
  if (r != CUDA_SUCCESS) {
    log(1, "cuModuleLoadData: %s", error.c_str());
    return r;
  }
  return wooly::capture::driverLoadPtx(ptx, "cuModuleLoadData", module);
}

WOOLY_CU_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                                         unsigned numOptions, void *options,
                                         void **optionValues) {
  // JIT options (log buffers, optimisation level) do not apply: the server
  // compiles. The log buffers are left as they are.
  (void)numOptions, (void)options, (void)optionValues;
  return cuModuleLoadData(module, image);
}

WOOLY_CU_API CUresult cuModuleLoadFatBinary(CUmodule *module,
                                            const void *fatbin) {
  return cuModuleLoadData(module, fatbin);
}

WOOLY_CU_API CUresult cuModuleLoad(CUmodule *module, const char *path) {
  if (!module || !path)
    return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    log(1, "cuModuleLoad: cannot open '%s'", path);
    return CUDA_ERROR_FILE_NOT_FOUND;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  std::string bytes = buf.str();
  bytes.push_back('\0');
  return cuModuleLoadData(module, bytes.data());
}

//===----------------------------------------------------------------------===//
// JIT linking (cuLink*)
//===----------------------------------------------------------------------===//
//
// What NVRTC-based programs and Python JITs (numba, CuPy) do to link device
// code: the inputs' PTX (PTX text, or a fatbin's) is joined with linkPtx as
// for `-rdc` programs, and the "cubin" cuLinkComplete hands back is that PTX
// text, which cuModuleLoadData takes. SASS inputs (cubins, host objects,
// libraries, LTO IR) cannot be linked: the error says so, also in the error
// log buffer the program passed.

struct CUlinkState_st {
  std::vector<std::string> ptx;
  std::string linked;
  char *errorLog = nullptr;
  size_t errorLogBytes = 0;

  /// Records `message` in the program's error log buffer (if any) and in
  /// Wooly's log.
  CUresult fail(CUresult r, const std::string &message) {
    log(1, "%s", message.c_str());
    if (errorLog && errorLogBytes)
      std::snprintf(errorLog, errorLogBytes, "%s", message.c_str());
    return r;
  }
};

namespace {
constexpr int kJitErrorLogBuffer = 5, kJitErrorLogBufferBytes = 6;
constexpr int kJitInputPtx = 1, kJitInputFatbinary = 2;
std::mutex linkStatesMutex;
std::unordered_set<CUlinkState_st *> linkStates;

CUlinkState_st *findLinkState(CUlinkState_st *state) {
  std::lock_guard<std::mutex> lock(linkStatesMutex);
  return linkStates.count(state) ? state : nullptr;
}
} // namespace

WOOLY_CU_API CUresult cuLinkCreate_v2(unsigned numOptions, int *options,
                                      void **optionValues,
                                      CUlinkState_st **stateOut) {
  if (!stateOut || (numOptions && (!options || !optionValues)))
    return CUDA_ERROR_INVALID_VALUE;
  auto state = std::make_unique<CUlinkState_st>();
  for (unsigned i = 0; i < numOptions; ++i) {
    if (options[i] == kJitErrorLogBuffer)
      state->errorLog = static_cast<char *>(optionValues[i]);
    else if (options[i] == kJitErrorLogBufferBytes)
      state->errorLogBytes = reinterpret_cast<uintptr_t>(optionValues[i]);
  }
  if (state->errorLog && state->errorLogBytes)
    state->errorLog[0] = '\0';
  std::lock_guard<std::mutex> lock(linkStatesMutex);
  *stateOut = state.release();
  linkStates.insert(*stateOut);
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuLinkAddData_v2(CUlinkState_st *state, int type,
                                       void *data, size_t size,
                                       const char *name, unsigned numOptions,
                                       int *options, void **optionValues) {
  (void)numOptions, (void)options, (void)optionValues;
  if (!findLinkState(state) || !data)
    return CUDA_ERROR_INVALID_VALUE;
  std::string what = name && *name ? std::string(" '") + name + "'" : "";
  if (type == kJitInputPtx) {
    const char *text = static_cast<const char *>(data);
    state->ptx.emplace_back(text, size ? strnlen(text, size) : strlen(text));
    return CUDA_SUCCESS;
  }
  if (type == kJitInputFatbinary) {
    std::string ptx, error;
    if (CUresult r = ptxOfImage(data, ptx, error))
      return state->fail(r, "cuLinkAddData" + what + ": " + error);
    state->ptx.push_back(std::move(ptx));
    return CUDA_SUCCESS;
  }
  return state->fail(
      CUDA_ERROR_NOT_SUPPORTED,
      "cuLinkAddData" + what +
          ": only PTX and fatbins with PTX can be linked (cubins, host "
          "objects, libraries and LTO IR carry SASS or IR that Wooly cannot "
          "run)");
}

WOOLY_CU_API CUresult cuLinkAddFile_v2(CUlinkState_st *state, int type,
                                       const char *path, unsigned numOptions,
                                       int *options, void **optionValues) {
  if (!findLinkState(state) || !path)
    return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return state->fail(CUDA_ERROR_FILE_NOT_FOUND,
                       std::string("cuLinkAddFile: cannot open '") + path +
                           "'");
  std::stringstream buf;
  buf << in.rdbuf();
  std::string bytes = buf.str();
  bytes.push_back('\0');
  return cuLinkAddData_v2(state, type, bytes.data(), bytes.size(), path,
                          numOptions, options, optionValues);
}

WOOLY_CU_API CUresult cuLinkComplete(CUlinkState_st *state, void **image,
                                     size_t *size) {
  if (!findLinkState(state) || !image || !size)
    return CUDA_ERROR_INVALID_VALUE;
  if (state->ptx.empty())
    return state->fail(CUDA_ERROR_INVALID_VALUE,
                       "cuLinkComplete: nothing was added to link");
  std::string error;
  if (!wooly::capture::linkPtx(state->ptx, state->linked, error))
    return state->fail(CUDA_ERROR_INVALID_PTX, "cuLinkComplete: " + error);
  // PTX text, NUL-terminated, as cuModuleLoadData reads it; it lives as
  // long as the link state.
  *image = state->linked.data();
  *size = state->linked.size() + 1;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuLinkDestroy(CUlinkState_st *state) {
  {
    std::lock_guard<std::mutex> lock(linkStatesMutex);
    if (!linkStates.erase(state))
      return CUDA_ERROR_INVALID_VALUE;
  }
  delete state;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuModuleUnload(CUmodule module) {
  LOCKED_READY(s);
  if (!s.modules.count(module))
    return CUDA_ERROR_INVALID_HANDLE;
  CHECK_STATUS("cuModuleUnload", s.client->unloadModule(module->handle));
  for (auto &[name, f] : module->functions)
    s.functions.erase(f.get());
  // The objects made for its references go with it.
  for (auto &[name, r] : module->refs) {
    if (r->object)
      (void)s.client->textureDestroy(r->object, r->surface);
    s.refs.erase(r.get());
  }
  for (auto it = s.managed.begin(); it != s.managed.end();)
    it = it->second.module == module ? s.managed.erase(it) : std::next(it);
  s.modules.erase(module);
  delete module;
  return CUDA_SUCCESS;
}

namespace wooly::capture {

CUresult driverMapManagedVariable(CUmodule module, const char *name,
                                  void **hostAddress) {
  if (!name || !hostAddress)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  if (!s.modules.count(module))
    return CUDA_ERROR_INVALID_HANDLE;
  uint64_t address = 0, size = 0;
  CHECK_STATUS("__cudaRegisterManagedVar",
               s.client->getSymbol(module->handle, name, address, size));
  if (size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  const uint64_t first = address / page * page;
  const uint64_t end = (address + size + page - 1) / page * page;
  std::vector<uint64_t> fresh;
  for (uint64_t p = first; p < end; p += page) {
    if (s.managedVariablePages.count(p))
      continue;
    void *want = reinterpret_cast<void *>(p);
    void *got =
        ::mmap(want, page, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (got != want) {
      if (got != MAP_FAILED)
        ::munmap(got, page);
      for (uint64_t q : fresh) {
        ::munmap(reinterpret_cast<void *>(q), page);
        s.managedVariablePages.erase(q);
      }
      log(1,
          "__managed__ variable '%s': its device address 0x%llx is in use "
          "in this process",
          name, (unsigned long long)address);
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    fresh.push_back(p);
    s.managedVariablePages.insert(p);
  }
  // The device holds the initial value; earlier device work may have
  // written the other managed memory, which stays as it is.
  CHECK_STATUS("__cudaRegisterManagedVar",
               s.client->copyFromDevice(reinterpret_cast<void *>(address),
                                        address, size, 0));
  s.managed[address] = ManagedRange{size, 0, 0, module};
  s.managedHostNewer = true; // the host may write it now
  *hostAddress = reinterpret_cast<void *>(address);
  log(2, "__managed__ variable '%s': %llu bytes at 0x%llx", name,
      (unsigned long long)size, (unsigned long long)address);
  return CUDA_SUCCESS;
}

} // namespace wooly::capture

WOOLY_CU_API CUresult cuModuleGetFunction(CUfunction *fn, CUmodule module,
                                          const char *name) {
  if (!fn || !name)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  if (!s.modules.count(module))
    return CUDA_ERROR_INVALID_HANDLE;
  auto it = module->functions.find(name);
  if (it != module->functions.end()) {
    *fn = it->second.get();
    return CUDA_SUCCESS;
  }
  const client::KernelLayout *layout = module->info.findKernel(name);
  if (!layout)
    return CUDA_ERROR_NOT_FOUND;
  auto f = std::make_unique<CUfunc_st>();
  f->module = module;
  f->name = name;
  f->offsets = layout->paramOffsets;
  f->sizes = layout->paramSizes;
  f->paramBytes = layout->paramBufferSize;
  f->maxDynamicShared =
      (int)std::min<uint64_t>(s.props.sharedPerBlock, 0x7fffffff);
  *fn = f.get();
  s.functions.insert(f.get());
  module->functions.emplace(name, std::move(f));
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes,
                                           CUmodule module, const char *name) {
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  if (!s.modules.count(module))
    return CUDA_ERROR_INVALID_HANDLE;
  uint64_t address = 0, size = 0;
  client::Status st = s.client->getSymbol(module->handle, name, address, size);
  if (st.code == client::Code::NotFound)
    return CUDA_ERROR_NOT_FOUND;
  CHECK_STATUS("cuModuleGetGlobal", st);
  s.deviceRanges[address] = size;
  if (dptr)
    *dptr = address;
  if (bytes)
    *bytes = size;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuFuncGetAttribute(int *value, int attrib,
                                         CUfunction fn) {
  if (!value)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  if (!s.functions.count(fn))
    return CUDA_ERROR_INVALID_HANDLE;
  if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    *value = fn->maxDynamicShared;
    return CUDA_SUCCESS;
  }
  client::KernelAttributes a;
  CHECK_STATUS("cuFuncGetAttribute",
               s.client->funcAttributes(fn->module->handle, fn->name, a));
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = (int)a.maxThreadsPerBlock;
    break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    *value = (int)a.staticSharedBytes;
    break;
  case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    *value = 0;
    break;
  case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    *value = (int)a.localBytes;
    break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS:
    *value = (int)a.registers;
    break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    // As the driver says after JIT-compiling PTX: the PTX's architecture
    // (CUB picks its tuning policy by it and fails with "invalid device
    // function" for one the program has no code for), while the binary
    // is the device's.
    if (fn->module->ptxArch) {
      *value = fn->module->ptxArch;
      break;
    }
    [[fallthrough]];
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
    *value = (int)(s.props.computeMajor * 10 + s.props.computeMinor);
    break;
  default:
    *value = 0;
    break;
  }
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuFuncSetAttribute(CUfunction fn, int attrib, int value) {
  LOCKED_READY(s);
  if (!s.functions.count(fn))
    return CUDA_ERROR_INVALID_HANDLE;
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    if (value < 0 || (uint64_t)value > s.props.sharedPerBlock)
      return CUDA_ERROR_INVALID_VALUE;
    fn->maxDynamicShared = value;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    return value >= -1 && value <= 100 ? CUDA_SUCCESS
                                       : CUDA_ERROR_INVALID_VALUE;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

WOOLY_CU_API CUresult cuFuncSetCacheConfig(CUfunction fn, int config) {
  (void)config;
  LOCKED_READY(s);
  return s.functions.count(fn) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

WOOLY_CU_API CUresult cuFuncGetParamInfo(CUfunction fn, size_t index,
                                         size_t *offset, size_t *size) {
  LOCKED_READY(s);
  if (!s.functions.count(fn))
    return CUDA_ERROR_INVALID_HANDLE;
  if (index >= fn->offsets.size())
    return CUDA_ERROR_INVALID_VALUE;
  if (offset)
    *offset = fn->offsets[index];
  if (size)
    *size = fn->sizes[index];
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuFuncGetName(const char **name, CUfunction fn) {
  LOCKED_READY(s);
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  if (!s.functions.count(fn))
    return CUDA_ERROR_INVALID_HANDLE;
  *name = fn->name.c_str();
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int *blocks, CUfunction fn, int blockSize, size_t dynamicShared,
    unsigned flags) {
  (void)flags;
  if (!blocks || blockSize <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  if (!s.functions.count(fn))
    return CUDA_ERROR_INVALID_HANDLE;
  uint32_t n = 0;
  CHECK_STATUS("cuOccupancyMaxActiveBlocksPerMultiprocessor",
               s.client->occupancy(fn->module->handle, fn->name,
                                   (uint32_t)blockSize, dynamicShared, n));
  *blocks = (int)n;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(
    int *blocks, CUfunction fn, int blockSize, size_t dynamicShared) {
  return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
      blocks, fn, blockSize, dynamicShared, 0);
}

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

namespace {

CUresult launchLocked(State &s, CUfunction f, client::Dim3 grid,
                      client::Dim3 block, unsigned shared, CUstream stream,
                      void **params, void **extra, bool cooperative = false) {
  if (!s.functions.count(f))
    return CUDA_ERROR_INVALID_HANDLE;
  RESOLVE_STREAM(s, stream, handle);
  const client::DeviceProperties &p = s.props;
  uint64_t threads = (uint64_t)block.x * block.y * block.z;
  if (!grid.x || !grid.y || !grid.z || !threads ||
      threads > p.maxThreadsPerBlock || block.x > p.maxBlock[0] ||
      block.y > p.maxBlock[1] || block.z > p.maxBlock[2] ||
      grid.x > p.maxGrid[0] || grid.y > p.maxGrid[1] || grid.z > p.maxGrid[2])
    return CUDA_ERROR_INVALID_VALUE;
  if ((int64_t)shared > f->maxDynamicShared)
    return CUDA_ERROR_INVALID_VALUE;

  alignas(16) char small[1024];
  std::vector<char> large;
  char *buffer = small;
  uint64_t bytes = f->paramBytes;
  if (bytes > sizeof small) {
    large.resize(bytes);
    buffer = large.data();
  }
  if (params) {
    for (size_t i = 0, e = f->offsets.size(); i != e; ++i) {
      if (!params[i])
        return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(buffer + f->offsets[i], params[i], f->sizes[i]);
    }
  } else if (extra) {
    const void *ptr = nullptr;
    size_t size = SIZE_MAX;
    for (size_t i = 0; extra[i] != kLaunchParamEnd; i += 2) {
      if (extra[i] == kLaunchParamBufferPointer)
        ptr = extra[i + 1];
      else if (extra[i] == kLaunchParamBufferSize)
        size = *static_cast<size_t *>(extra[i + 1]);
      else
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ptr || size == SIZE_MAX || size < bytes)
      return CUDA_ERROR_INVALID_VALUE;
    buffer = static_cast<char *>(const_cast<void *>(ptr));
  } else if (bytes) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  MANAGED_TO_DEVICE(s, "cuLaunchKernel");
  if (cooperative && !s.cooperativeLaunch) {
    logUnsupportedOnce("cuLaunchCooperativeKernel",
                       "the server's device has no grid-wide "
                       "synchronisation (only the cpu backend has)");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (cooperative &&
      uint64_t(grid.x) * grid.y * grid.z > p.maxCooperativeBlocks) {
    log(1,
        "cuLaunchCooperativeKernel: %llu blocks, the device runs at most "
        "%u at once",
        (unsigned long long)(uint64_t(grid.x) * grid.y * grid.z),
        p.maxCooperativeBlocks);
    return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }
  CHECK_STATUS(cooperative ? "cuLaunchCooperativeKernel" : "cuLaunchKernel",
               s.client->launch(f->module->handle, f->name, grid, block, shared,
                                buffer, bytes, handle, cooperative));
  return CUDA_SUCCESS;
}

} // namespace

WOOLY_CU_API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy,
                                     unsigned gz, unsigned bx, unsigned by,
                                     unsigned bz, unsigned shared,
                                     CUstream stream, void **params,
                                     void **extra) {
  if (CUresult e = bindReferences(f))
    return e;
  LOCKED_READY(s);
  return launchLocked(s, f, {gx, gy, gz}, {bx, by, bz}, shared, stream, params,
                      extra);
}

WOOLY_CU_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config,
                                       CUfunction f, void **params,
                                       void **extra) {
  if (!config)
    return CUDA_ERROR_INVALID_VALUE;
  wooly::capture::LaunchAttributes attributes;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute &a = config->attrs[i];
    if (const char *why = wooly::capture::driverLaunchAttribute(
            a.id, a.value.bytes, attributes)) {
      log(1, "cuLaunchKernelEx: launch attribute %d: %s", a.id, why);
      return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  bool cooperative = attributes.cooperative;
  if (CUresult e = bindReferences(f))
    return e;
  LOCKED_READY(s);
  return launchLocked(
      s, f, {config->gridDimX, config->gridDimY, config->gridDimZ},
      {config->blockDimX, config->blockDimY, config->blockDimZ},
      config->sharedMemBytes, config->hStream, params, extra, cooperative);
}

/// All blocks at once, with grid-wide synchronisation: the cpu backend's
/// (at most its DeviceLimits::maxCooperativeBlocks blocks); elsewhere
/// CUDA_ERROR_NOT_SUPPORTED, and the device attribute says 0.
WOOLY_CU_API CUresult cuLaunchCooperativeKernel(
    CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
    unsigned by, unsigned bz, unsigned shared, CUstream stream, void **params) {
  if (CUresult e = bindReferences(f))
    return e;
  LOCKED_READY(s);
  return launchLocked(s, f, {gx, gy, gz}, {bx, by, bz}, shared, stream, params,
                      nullptr, /*cooperative=*/true);
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

WOOLY_CU_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
  if (!dptr)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t address = 0;
  CHECK_STATUS("cuMemAlloc", s.client->malloc(bytes, address));
  s.deviceRanges[address] = bytes;
  *dptr = address;
  return CUDA_SUCCESS;
}

/// Managed memory ("Managed memory" above): a server allocation whose
/// address, rounded up to a page, is mapped here too. The server's address
/// space is another process's (or a GPU's), so the address may be taken
/// here: then another allocation is tried (the ones refused are held until
/// the end, so that the server does not give them again).
namespace {
/// cuMemAllocManaged's work, with the session's lock held.
CUresult allocManagedLocked(State &s, size_t bytes, CUdeviceptr *dptr,
                            const char *call) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  if (bytes > SIZE_MAX - 2 * page)
    return CUDA_ERROR_OUT_OF_MEMORY;
  const size_t mapped = (bytes + page - 1) / page * page;
  std::vector<uint64_t> refused;
  auto releaseRefused = [&] {
    for (uint64_t a : refused)
      (void)s.client->free(a);
  };
  for (int attempt = 0; attempt < 8; ++attempt) {
    // A page-aligned allocation is used as it is; otherwise one a page
    // larger, from its first page boundary on.
    uint64_t address = 0;
    client::Status st = s.client->malloc(bytes, address);
    if (st.ok() && address % page != 0) {
      (void)s.client->free(address);
      st = s.client->malloc(bytes + page, address);
    }
    if (!st.ok()) {
      releaseRefused();
      return fail(s, st, call);
    }
    uint64_t start = (address + page - 1) / page * page;
    void *want = reinterpret_cast<void *>(start);
    void *p = ::mmap(want, mapped, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == want) {
      releaseRefused();
      s.managed[start] = ManagedRange{bytes, address, mapped};
      s.deviceRanges[start] = bytes;
      s.managedHostNewer = true;
      *dptr = start;
      log(2, "%s: %zu bytes at 0x%llx, mapped in this process too", call, bytes,
          (unsigned long long)start);
      return CUDA_SUCCESS;
    }
    if (p != MAP_FAILED) // a kernel without MAP_FIXED_NOREPLACE
      ::munmap(p, mapped);
    refused.push_back(address);
  }
  releaseRefused();
  log(1, "%s: no address the server gave for %zu bytes is free in this process",
      call, bytes);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

/// Frees managed allocation `it` (the server frees once the session's
/// earlier work is done; this process's mapping goes now: the program may
/// not touch it any more).
CUresult freeManagedLocked(State &s,
                           std::map<uint64_t, ManagedRange>::iterator it,
                           const char *call) {
  uint64_t start = it->first;
  ManagedRange range = it->second;
  CHECK_STATUS(call, s.client->free(range.serverAddress));
  ::munmap(reinterpret_cast<void *>(start), range.mapped);
  s.managed.erase(it);
  s.deviceRanges.erase(start);
  return CUDA_SUCCESS;
}
} // namespace

WOOLY_CU_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes,
                                        unsigned flags) {
  // CU_MEM_ATTACH_GLOBAL (1) or CU_MEM_ATTACH_HOST (2): every allocation is
  // reachable from every stream here.
  if (!dptr || bytes == 0 || (flags != 1 && flags != 2))
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  return allocManagedLocked(s, bytes, dptr, "cuMemAllocManaged");
}

namespace {
/// Whether [ptr, ptr + bytes) lies in one managed allocation.
bool isManagedRange(State &s, uint64_t ptr, size_t bytes) {
  auto it = s.managed.upper_bound(ptr);
  if (it == s.managed.begin())
    return false;
  --it;
  uint64_t offset = ptr - it->first;
  return offset < it->second.size && bytes <= it->second.size - offset;
}
} // namespace

namespace {
/// The managed allocation that holds all of [ptr, ptr + bytes), if one does.
ManagedRange *managedRangeOf(State &s, uint64_t ptr, size_t bytes,
                             uint64_t &offset) {
  if (!bytes || !isManagedRange(s, ptr, bytes))
    return nullptr;
  auto it = std::prev(s.managed.upper_bound(ptr));
  offset = ptr - it->first;
  return &it->second;
}

/// `location` as a MemLocation, or none where it names no place here. The
/// CUDA 11 calls pass a device ordinal as a device location: -1 is the host
/// (CU_DEVICE_CPU).
std::optional<MemLocation> memLocation(CUmemLocation location, CUresult &err) {
  err = CUDA_ERROR_INVALID_VALUE;
  switch (location.type) {
  case 1: // CU_MEM_LOCATION_TYPE_DEVICE
    if (location.id == -1)
      return MemLocation{2, 0};
    if (location.id != 0) {
      err = CUDA_ERROR_INVALID_DEVICE;
      return std::nullopt;
    }
    return MemLocation{1, 0};
  case 2: // CU_MEM_LOCATION_TYPE_HOST
    return MemLocation{2, 0};
  case 3: // CU_MEM_LOCATION_TYPE_HOST_NUMA: this process's one node
    if (location.id != 0)
      return std::nullopt;
    return MemLocation{3, 0};
  case 4: // CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT
    return MemLocation{3, 0};
  default:
    return std::nullopt;
  }
}

/// Applies `change` to the advice of bytes [lo, hi) of `range`.
template <typename Change>
void changeAdvice(ManagedRange &range, uint64_t lo, uint64_t hi,
                  Change change) {
  std::map<uint64_t, MemAdvice> &m = range.advice;
  if (m.empty())
    m.emplace(0, MemAdvice());
  auto split = [&](uint64_t at) {
    auto it = std::prev(m.upper_bound(at));
    if (it->first != at)
      m.emplace_hint(std::next(it), at, it->second);
  };
  split(lo);
  if (hi < range.size)
    split(hi);
  for (auto it = m.find(lo); it != m.end() && it->first < hi; ++it)
    change(it->second);
  // Neighbours alike become one.
  for (auto it = m.begin(); it != m.end();) {
    auto next = std::next(it);
    if (next != m.end() && next->second == it->second)
      m.erase(next);
    else
      it = next;
  }
}
} // namespace

/// Hints on managed memory: recorded (cuMemRangeGetAttribute reads them
/// back), with no other effect: the copies move at launches and
/// synchronisations.
WOOLY_CU_API CUresult cuMemPrefetchAsync_v2(CUdeviceptr ptr, size_t bytes,
                                            CUmemLocation location,
                                            unsigned flags, CUstream stream) {
  LOCKED_READY(s);
  RESOLVE_STREAM(s, stream, handle);
  (void)handle;
  uint64_t offset = 0;
  ManagedRange *range = managedRangeOf(s, ptr, bytes, offset);
  if (flags != 0 || !range)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult err;
  std::optional<MemLocation> to = memLocation(location, err);
  if (!to)
    return err;
  changeAdvice(*range, offset, offset + bytes,
               [&](MemAdvice &a) { a.lastPrefetch = *to; });
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuMemAdvise_v2(CUdeviceptr ptr, size_t bytes, int advice,
                                     CUmemLocation location) {
  LOCKED_READY(s);
  uint64_t offset = 0;
  ManagedRange *range = managedRangeOf(s, ptr, bytes, offset);
  // CU_MEM_ADVISE_SET_READ_MOSTLY (1) .. UNSET_ACCESSED_BY (6)
  if (advice < 1 || advice > 6 || !range)
    return CUDA_ERROR_INVALID_VALUE;
  std::optional<MemLocation> at;
  if (advice == 3 || advice == 5 || advice == 6) { // the location counts
    CUresult err;
    if (!(at = memLocation(location, err)))
      return err;
  }
  changeAdvice(*range, offset, offset + bytes, [&](MemAdvice &a) {
    switch (advice) {
    case 1:
    case 2:
      a.readMostly = advice == 1;
      break;
    case 3:
      a.preferred = *at;
      break;
    case 4:
      a.preferred = MemLocation();
      break;
    default: {
      unsigned bit = at->type == 1 ? 1u : 2u;
      a.accessedBy = advice == 5 ? a.accessedBy | bit : a.accessedBy & ~bit;
      break;
    }
    }
  });
  return CUDA_SUCCESS;
}

/// What cuMemAdvise and cuMemPrefetchAsync recorded for a managed range
/// (CUmem_range_attribute 1-8), as CUDA documents each.
WOOLY_CU_API CUresult cuMemRangeGetAttributes(void **data, size_t *dataSizes,
                                              int *attributes,
                                              size_t numAttributes,
                                              CUdeviceptr ptr, size_t bytes) {
  if (!data || !dataSizes || !attributes || !numAttributes)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  uint64_t offset = 0;
  ManagedRange *range = managedRangeOf(s, ptr, bytes, offset);
  if (!range)
    return CUDA_ERROR_INVALID_VALUE;
  // The advice of each part of the range.
  std::vector<MemAdvice> parts;
  if (range->advice.empty()) {
    parts.emplace_back();
  } else {
    for (auto it = std::prev(range->advice.upper_bound(offset));
         it != range->advice.end() && it->first < offset + bytes; ++it)
      parts.push_back(it->second);
  }
  // The location all parts share, if they share one.
  auto common = [&](MemLocation MemAdvice::*field) {
    MemLocation first = parts.front().*field;
    for (const MemAdvice &a : parts)
      if (!(a.*field == first))
        return MemLocation();
    return first;
  };
  // As a device ordinal: the device, CU_DEVICE_CPU (-1) or
  // CU_DEVICE_INVALID (-2).
  auto ordinal = [](MemLocation l) {
    return l.type == 1 ? 0 : l.type == 2 || l.type == 3 ? -1 : -2;
  };
  for (size_t i = 0; i < numAttributes; ++i) {
    int attribute = attributes[i];
    size_t size = dataSizes[i];
    int *out = static_cast<int *>(data[i]);
    if (!out || (attribute == 3 ? size == 0 || size % 4 : size != 4))
      return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
    case 1: // READ_MOSTLY
      *out = std::all_of(parts.begin(), parts.end(),
                         [](const MemAdvice &a) { return a.readMostly; });
      break;
    case 2: // PREFERRED_LOCATION
      *out = ordinal(common(&MemAdvice::preferred));
      break;
    case 3: { // ACCESSED_BY: the device, the host, then CU_DEVICE_INVALID
      unsigned all = ~0u;
      for (const MemAdvice &a : parts)
        all &= a.accessedBy;
      size_t n = size / 4, k = 0;
      if ((all & 1) && k < n)
        out[k++] = 0;
      if ((all & 2) && k < n)
        out[k++] = -1;
      while (k < n)
        out[k++] = -2;
      break;
    }
    case 4: // LAST_PREFETCH_LOCATION
      *out = ordinal(common(&MemAdvice::lastPrefetch));
      break;
    case 5: // PREFERRED_LOCATION_TYPE
    case 7: // LAST_PREFETCH_LOCATION_TYPE
      *out = common(attribute == 5 ? &MemAdvice::preferred
                                   : &MemAdvice::lastPrefetch)
                 .type;
      break;
    case 6: // PREFERRED_LOCATION_ID
    case 8: // LAST_PREFETCH_LOCATION_ID
      *out = common(attribute == 6 ? &MemAdvice::preferred
                                   : &MemAdvice::lastPrefetch)
                 .id;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuMemRangeGetAttribute(void *data, size_t dataSize,
                                             int attribute, CUdeviceptr ptr,
                                             size_t bytes) {
  return cuMemRangeGetAttributes(&data, &dataSize, &attribute, 1, ptr, bytes);
}

/// The CUDA 11 forms, with a device for the location.
WOOLY_CU_API CUresult cuMemPrefetchAsync(CUdeviceptr ptr, size_t bytes,
                                         int device, CUstream stream) {
  return cuMemPrefetchAsync_v2(ptr, bytes, CUmemLocation{1, device}, 0, stream);
}

WOOLY_CU_API CUresult cuMemAdvise(CUdeviceptr ptr, size_t bytes, int advice,
                                  int device) {
  return cuMemAdvise_v2(ptr, bytes, advice, CUmemLocation{1, device});
}

WOOLY_CU_API CUresult cuStreamAttachMemAsync(CUstream stream, CUdeviceptr ptr,
                                             size_t bytes, unsigned flags) {
  LOCKED_READY(s);
  RESOLVE_STREAM(s, stream, handle);
  (void)handle;
  // CU_MEM_ATTACH_GLOBAL, _HOST or _SINGLE; the whole allocation (0) or
  // its size.
  auto it = s.managed.find(ptr);
  if ((flags != 1 && flags != 2 && flags != 4) || it == s.managed.end() ||
      (bytes != 0 && bytes != it->second.size))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

/// Rows 256-byte aligned, as the runtime's cudaMallocPitch.
WOOLY_CU_API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch,
                                         size_t widthBytes, size_t height,
                                         unsigned elementBytes) {
  if (!pitch || (elementBytes != 4 && elementBytes != 8 && elementBytes != 16))
    return CUDA_ERROR_INVALID_VALUE;
  if (widthBytes > SIZE_MAX - 255)
    return CUDA_ERROR_OUT_OF_MEMORY;
  size_t p = (widthBytes + 255) & ~size_t(255);
  if (height && p > SIZE_MAX / height)
    return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = cuMemAlloc_v2(dptr, p * height);
  if (r == CUDA_SUCCESS)
    *pitch = p;
  return r;
}

WOOLY_CU_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
  if (!dptr)
    return CUDA_SUCCESS;
  LOCKED_READY(s);
  auto managed = s.managed.find(dptr);
  if (managed != s.managed.end() && managed->second.host)
    return CUDA_ERROR_INVALID_VALUE; // registered memory's: cuMemHostUnregister
  if (managed != s.managed.end() && !managed->second.module)
    return freeManagedLocked(s, managed, "cuMemFree");
  CHECK_STATUS("cuMemFree", s.client->free(dptr));
  s.deviceRanges.erase(dptr);
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
  LOCKED_READY(s);
  uint64_t f = 0, t = 0;
  CHECK_STATUS("cuMemGetInfo", s.client->memInfo(f, t));
  if (free)
    *free = f;
  if (total)
    *total = t;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size,
                                              CUdeviceptr dptr) {
  LOCKED_READY(s);
  auto it = s.deviceRanges.upper_bound(dptr);
  if (it == s.deviceRanges.begin())
    return CUDA_ERROR_NOT_FOUND;
  --it;
  if (dptr - it->first >= it->second)
    return CUDA_ERROR_NOT_FOUND;
  if (base)
    *base = it->first;
  if (size)
    *size = it->second;
  return CUDA_SUCCESS;
}

/// Host memory "pinned" for the device is ordinary memory of this process:
/// copies go over the connection either way.
/// Pinned host memory. With CU_MEMHOSTALLOC_DEVICEMAP (cudaHostAllocMapped)
/// kernels may use it too, at the same address (CUDA's unified addressing):
/// it is then managed memory ("Managed memory": coherent at launches and
/// synchronisations, not while a kernel runs).
WOOLY_CU_API CUresult cuMemHostAlloc(void **ptr, size_t bytes, unsigned flags) {
  if (!ptr)
    return CUDA_ERROR_INVALID_VALUE;
  if (flags & 0x02) { // CU_MEMHOSTALLOC_DEVICEMAP
    if (bytes == 0)
      return CUDA_ERROR_INVALID_VALUE;
    LOCKED_READY(s);
    CUdeviceptr d = 0;
    if (CUresult r = allocManagedLocked(s, bytes, &d, "cuMemHostAlloc"))
      return r;
    s.hostAllocFlags[d] = flags;
    *ptr = reinterpret_cast<void *>(d);
    return CUDA_SUCCESS;
  }
  void *p = nullptr;
  if (posix_memalign(&p, 4096, bytes ? bytes : 1) != 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.hostRanges[reinterpret_cast<uintptr_t>(p)] = bytes;
  s.hostAllocFlags[reinterpret_cast<uintptr_t>(p)] = flags;
  *ptr = p;
  return CUDA_SUCCESS;
}

/// The flags of the cuMemHostAlloc allocation that `ptr` lies in.
WOOLY_CU_API CUresult cuMemHostGetFlags(unsigned *flags, void *ptr) {
  if (!flags)
    return CUDA_ERROR_INVALID_VALUE;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto p = reinterpret_cast<uintptr_t>(ptr);
  auto it = s.hostAllocFlags.upper_bound(p);
  if (it == s.hostAllocFlags.begin())
    return CUDA_ERROR_INVALID_VALUE;
  --it;
  size_t size = 0;
  if (auto h = s.hostRanges.find(it->first); h != s.hostRanges.end())
    size = h->second;
  else if (auto m = s.managed.find(it->first); m != s.managed.end())
    size = m->second.size;
  if (p - it->first >= std::max<size_t>(size, 1))
    return CUDA_ERROR_INVALID_VALUE;
  *flags = it->second;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuMemAllocHost_v2(void **ptr, size_t bytes) {
  return cuMemHostAlloc(ptr, bytes, 0);
}

WOOLY_CU_API CUresult cuMemFreeHost(void *ptr) {
  State &s = state();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto managed = s.managed.find(reinterpret_cast<uint64_t>(ptr));
    if (managed != s.managed.end() && !managed->second.module &&
        !managed->second.host && s.client) {
      s.hostAllocFlags.erase(reinterpret_cast<uintptr_t>(ptr));
      return freeManagedLocked(s, managed, "cuMemFreeHost");
    }
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (ptr && !s.hostRanges.erase(reinterpret_cast<uintptr_t>(ptr)))
      return CUDA_ERROR_INVALID_VALUE;
    s.hostAllocFlags.erase(reinterpret_cast<uintptr_t>(ptr));
  }
  ::free(ptr);
  return CUDA_SUCCESS;
}

namespace {
/// The registered range [ptr, ptr + bytes) lies in, or end().
std::map<uintptr_t, RegisteredRange>::iterator
findRegistered(State &s, uintptr_t ptr, size_t bytes = 1) {
  auto it = s.registered.upper_bound(ptr);
  if (it == s.registered.begin())
    return s.registered.end();
  --it;
  uintptr_t offset = ptr - it->first;
  return offset < it->second.size && bytes <= it->second.size - offset
             ? it
             : s.registered.end();
}
} // namespace

/// The device address of mapped host memory. cuMemHostAlloc's mapped
/// allocations are managed memory, at the same address on both sides.
/// Registered host memory (cuMemHostRegister; mapped whatever its flags, as
/// on a system with unified addressing) gets a device copy at its first
/// call here: server memory that is kept coherent with the program's like
/// managed memory (at launches and synchronisations). Its address is not
/// the host's (CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM
/// is 0), so kernels reach it only through this call's answer, and memory
/// the program registers only to copy from faster costs nothing.
WOOLY_CU_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *ptr,
                                                   unsigned flags) {
  if (!dptr || !ptr || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  uint64_t p = reinterpret_cast<uint64_t>(ptr);
  if (isManagedRange(s, p, 1)) {
    *dptr = p;
    return CUDA_SUCCESS;
  }
  auto reg = findRegistered(s, p);
  if (reg == s.registered.end())
    return CUDA_ERROR_INVALID_VALUE; // not mapped host memory
  RegisteredRange &r = reg->second;
  if (!r.device) {
    uint64_t address = 0;
    CHECK_STATUS("cuMemHostGetDevicePointer",
                 s.client->malloc(r.size, address));
    ManagedRange copy;
    copy.size = r.size;
    copy.serverAddress = address;
    copy.host = reinterpret_cast<void *>(reg->first);
    s.managed[address] = copy;
    s.deviceRanges[address] = r.size;
    s.managedHostNewer = true; // the host's bytes go over before device work
    r.device = address;
    log(2,
        "cuMemHostGetDevicePointer: registered host memory at %p (%zu "
        "bytes) has its device copy at 0x%llx",
        copy.host, r.size, (unsigned long long)address);
  }
  *dptr = r.device + (p - reg->first);
  return CUDA_SUCCESS;
}

/// Registers host memory. Copies from and to it need nothing (they go over
/// the connection either way); a device copy is made only where the
/// program asks for its device address (cuMemHostGetDevicePointer).
WOOLY_CU_API CUresult cuMemHostRegister_v2(void *ptr, size_t bytes,
                                           unsigned flags) {
  // CU_MEMHOSTREGISTER_PORTABLE | DEVICEMAP | IOMEMORY | READ_ONLY
  if (!ptr || !bytes || (flags & ~0xfu))
    return CUDA_ERROR_INVALID_VALUE;
  if (flags & 0x04) // CU_MEMHOSTREGISTER_IOMEMORY: a device's I/O memory
    return CUDA_ERROR_NOT_SUPPORTED;
  CHECK_INIT(s);
  uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  if (bytes > UINTPTR_MAX - p)
    return CUDA_ERROR_INVALID_VALUE;
  // Overlapping an earlier registration (in part or whole) is an error.
  auto next = s.registered.lower_bound(p);
  if ((next != s.registered.end() && next->first < p + bytes) ||
      findRegistered(s, p) != s.registered.end())
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  s.registered[p] = RegisteredRange{bytes, 0};
  return CUDA_SUCCESS;
}

/// Unregisters host memory: its device copy, if it has one, comes back
/// first where device work may have written it, and goes.
WOOLY_CU_API CUresult cuMemHostUnregister(void *ptr) {
  if (!ptr)
    return CUDA_ERROR_INVALID_VALUE;
  CHECK_INIT(s);
  auto it = s.registered.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == s.registered.end())
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  if (uint64_t device = it->second.device) {
    if (s.managedDeviceNewer)
      CHECK_STATUS("cuMemHostUnregister",
                   s.client->copyFromDevice(ptr, device, it->second.size, 0));
    CHECK_STATUS("cuMemHostUnregister", s.client->free(device));
    s.managed.erase(device);
    s.deviceRanges.erase(device);
  }
  s.registered.erase(it);
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuPointerGetAttribute(void *data, int attribute,
                                            CUdeviceptr ptr) {
  if (!data)
    return CUDA_ERROR_INVALID_VALUE;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  bool device = isDevicePointer(s, ptr);
  bool host = false;
  if (!device) {
    auto it = s.hostRanges.upper_bound(ptr);
    if (it != s.hostRanges.begin()) {
      --it;
      host = ptr - it->first < it->second;
    }
    host |= findRegistered(s, ptr) != s.registered.end();
  }
  if (!device && !host)
    return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *static_cast<unsigned *>(data) =
        device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    *static_cast<CUdeviceptr *>(data) = device ? ptr : 0;
    return device ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    *static_cast<void **>(data) = host ? reinterpret_cast<void *>(ptr) : 0;
    return host ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED: {
    // Not the device copy of registered host memory (managed here only in
    // how it is kept coherent).
    auto it = s.managed.upper_bound(ptr);
    bool copy = it != s.managed.begin() && std::prev(it)->second.host;
    *static_cast<int *>(data) = isManagedRange(s, ptr, 1) && !copy;
    return CUDA_SUCCESS;
  }
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    *static_cast<int *>(data) = 0;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    *static_cast<CUcontext *>(data) = &s.primary;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

namespace {

CUresult copyH2D(CUdeviceptr dst, const void *src, size_t bytes,
                 CUstream stream, bool async, const char *call) {
  if (!bytes)
    return CUDA_SUCCESS;
  if (!src)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  RESOLVE_STREAM(s, stream, handle);
  MANAGED_TO_DEVICE(s, call);
  CHECK_STATUS(call, s.client->copyToDevice(dst, src, bytes, handle, async));
  if (!async)
    MANAGED_TO_HOST(s, call);
  return CUDA_SUCCESS;
}

CUresult copyD2H(void *dst, CUdeviceptr src, size_t bytes, CUstream stream,
                 const char *call) {
  if (!bytes)
    return CUDA_SUCCESS;
  if (!dst)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  RESOLVE_STREAM(s, stream, handle);
  MANAGED_TO_DEVICE(s, call);
  CHECK_STATUS(call, s.client->copyFromDevice(dst, src, bytes, handle));
  MANAGED_TO_HOST(s, call);
  return CUDA_SUCCESS;
}

CUresult copyD2D(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                 CUstream stream, bool async, const char *call) {
  if (!bytes)
    return CUDA_SUCCESS;
  LOCKED_READY(s);
  RESOLVE_STREAM(s, stream, handle);
  MANAGED_TO_DEVICE(s, call);
  CHECK_STATUS(call,
               s.client->copyDeviceToDevice(dst, src, bytes, handle, async));
  if (!async)
    MANAGED_TO_HOST(s, call);
  return CUDA_SUCCESS;
}

/// memset of `count` elements of `width` bytes: one byte-wise memset when
/// every byte of the value is the same, else the pattern is copied in.
CUresult memsetElements(CUdeviceptr dst, uint32_t value, unsigned width,
                        size_t count, CUstream stream, bool async,
                        const char *call) {
  if (!count)
    return CUDA_SUCCESS;
  if (count > (SIZE_MAX >> 2))
    return CUDA_ERROR_INVALID_VALUE;
  uint8_t b0 = value & 0xff;
  bool uniform = true;
  for (unsigned i = 1; i < width; ++i)
    uniform &= ((value >> (8 * i)) & 0xff) == b0;
  LOCKED_READY(s);
  RESOLVE_STREAM(s, stream, handle);
  MANAGED_TO_DEVICE(s, call);
  if (uniform) {
    CHECK_STATUS(call, s.client->memset(dst, b0, count * width, handle, async));
    if (!async)
      MANAGED_TO_HOST(s, call);
    return CUDA_SUCCESS;
  }
  // The pattern is copied in, 1 MiB at a time (asynchronous copies are
  // batched; a synchronous memset waits for the last).
  const size_t chunk = std::min<size_t>(count, (1 << 20) / width);
  std::vector<uint8_t> pattern(chunk * width);
  for (size_t i = 0; i < chunk; ++i)
    std::memcpy(&pattern[i * width], &value, width);
  for (size_t done = 0; done < count;) {
    size_t n = std::min(chunk, count - done);
    bool last = done + n == count;
    CHECK_STATUS(call,
                 s.client->copyToDevice(dst + done * width, pattern.data(),
                                        n * width, handle, async || !last));
    done += n;
  }
  if (!async)
    MANAGED_TO_HOST(s, call);
  return CUDA_SUCCESS;
}

} // namespace

WOOLY_CU_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src,
                                      size_t bytes) {
  return copyH2D(dst, src, bytes, nullptr, false, "cuMemcpyHtoD");
}
WOOLY_CU_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src,
                                           size_t bytes, CUstream stream) {
  return copyH2D(dst, src, bytes, stream, true, "cuMemcpyHtoDAsync");
}
WOOLY_CU_API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src,
                                      size_t bytes) {
  return copyD2H(dst, src, bytes, nullptr, "cuMemcpyDtoH");
}
WOOLY_CU_API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src,
                                           size_t bytes, CUstream stream) {
  return copyD2H(dst, src, bytes, stream, "cuMemcpyDtoHAsync");
}
WOOLY_CU_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src,
                                      size_t bytes) {
  return copyD2D(dst, src, bytes, nullptr, false, "cuMemcpyDtoD");
}
WOOLY_CU_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src,
                                           size_t bytes, CUstream stream) {
  return copyD2D(dst, src, bytes, stream, true, "cuMemcpyDtoDAsync");
}

namespace {
/// Unified addressing: the direction follows from which pointers are the
/// device's; a host-to-host copy happens here, in stream order.
CUresult copyUnified(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                     CUstream stream, bool async, const char *call) {
  // By where each range starts: one that runs past its allocation is then
  // the server's to refuse, never copied here.
  bool dDev =
      wooly::capture::driverIsDevicePointer(reinterpret_cast<void *>(dst), 1);
  bool sDev =
      wooly::capture::driverIsDevicePointer(reinterpret_cast<void *>(src), 1);
  if (dDev && sDev)
    return copyD2D(dst, src, bytes, stream, async, call);
  if (dDev)
    return copyH2D(dst, reinterpret_cast<const void *>(src), bytes, stream,
                   async, call);
  if (sDev)
    return copyD2H(reinterpret_cast<void *>(dst), src, bytes, stream, call);
  CUresult r = async ? cuStreamSynchronize(stream) : CUDA_SUCCESS;
  if (r == CUDA_SUCCESS && bytes)
    std::memmove(reinterpret_cast<void *>(dst),
                 reinterpret_cast<const void *>(src), bytes);
  return r;
}
} // namespace

WOOLY_CU_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                                    size_t bytes, CUstream stream) {
  return copyUnified(dst, src, bytes, stream, true, "cuMemcpyAsync");
}

WOOLY_CU_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return copyUnified(dst, src, bytes, nullptr, false, "cuMemcpy");
}

WOOLY_CU_API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value,
                                    size_t count) {
  return memsetElements(dst, value, 1, count, nullptr, false, "cuMemsetD8");
}
WOOLY_CU_API CUresult cuMemsetD16_v2(CUdeviceptr dst, unsigned short value,
                                     size_t count) {
  return memsetElements(dst, value, 2, count, nullptr, false, "cuMemsetD16");
}
WOOLY_CU_API CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned value,
                                     size_t count) {
  return memsetElements(dst, value, 4, count, nullptr, false, "cuMemsetD32");
}
WOOLY_CU_API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value,
                                      size_t count, CUstream stream) {
  return memsetElements(dst, value, 1, count, stream, true, "cuMemsetD8Async");
}
WOOLY_CU_API CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value,
                                       size_t count, CUstream stream) {
  return memsetElements(dst, value, 2, count, stream, true, "cuMemsetD16Async");
}
WOOLY_CU_API CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value,
                                       size_t count, CUstream stream) {
  return memsetElements(dst, value, 4, count, stream, true, "cuMemsetD32Async");
}

namespace {
/// `height` rows of `width` elements of `size` bytes, `pitch` bytes apart:
/// one memset per row, or one for all where the rows fill their pitch.
CUresult memset2D(CUdeviceptr dst, size_t pitch, unsigned value, unsigned size,
                  size_t width, size_t height, CUstream stream, bool async,
                  const char *call) {
  if (height > 1 && pitch < width * size)
    return CUDA_ERROR_INVALID_VALUE;
  if (pitch == width * size)
    return memsetElements(dst, value, size, width * height, stream, async,
                          call);
  for (size_t row = 0; row < height; ++row)
    if (CUresult r = memsetElements(dst + row * pitch, value, size, width,
                                    stream, async, call))
      return r;
  return CUDA_SUCCESS;
}
} // namespace

WOOLY_CU_API CUresult cuMemsetD2D8_v2(CUdeviceptr dst, size_t pitch,
                                      unsigned char value, size_t width,
                                      size_t height) {
  return memset2D(dst, pitch, value, 1, width, height, nullptr, false,
                  "cuMemsetD2D8");
}
WOOLY_CU_API CUresult cuMemsetD2D16_v2(CUdeviceptr dst, size_t pitch,
                                       unsigned short value, size_t width,
                                       size_t height) {
  return memset2D(dst, pitch, value, 2, width, height, nullptr, false,
                  "cuMemsetD2D16");
}
WOOLY_CU_API CUresult cuMemsetD2D32_v2(CUdeviceptr dst, size_t pitch,
                                       unsigned value, size_t width,
                                       size_t height) {
  return memset2D(dst, pitch, value, 4, width, height, nullptr, false,
                  "cuMemsetD2D32");
}
WOOLY_CU_API CUresult cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch,
                                        unsigned char value, size_t width,
                                        size_t height, CUstream stream) {
  return memset2D(dst, pitch, value, 1, width, height, stream, true,
                  "cuMemsetD2D8Async");
}
WOOLY_CU_API CUresult cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch,
                                         unsigned short value, size_t width,
                                         size_t height, CUstream stream) {
  return memset2D(dst, pitch, value, 2, width, height, stream, true,
                  "cuMemsetD2D16Async");
}
WOOLY_CU_API CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch,
                                         unsigned value, size_t width,
                                         size_t height, CUstream stream) {
  return memset2D(dst, pitch, value, 4, width, height, stream, true,
                  "cuMemsetD2D32Async");
}

//===----------------------------------------------------------------------===//
// Arrays, 2D and 3D copies, texture and surface objects
//===----------------------------------------------------------------------===//

namespace {

/// Wooly's channel format of a driver array format; false for the formats
/// that are not supported yet (normalized integer, NV12, block compressed)
/// and for a channel count other than 1, 2 or 4.
bool channelFormat(CUarray_format format, unsigned channels,
                   wooly::ChannelFormat &f) {
  int bits = 0;
  wooly::ChannelKind kind = wooly::ChannelKind::Unsigned;
  switch (format) {
  case CU_AD_FORMAT_UNSIGNED_INT8:
  case CU_AD_FORMAT_UNSIGNED_INT16:
  case CU_AD_FORMAT_UNSIGNED_INT32:
    bits = 8 << (format - CU_AD_FORMAT_UNSIGNED_INT8);
    break;
  case CU_AD_FORMAT_SIGNED_INT8:
  case CU_AD_FORMAT_SIGNED_INT16:
  case CU_AD_FORMAT_SIGNED_INT32:
    bits = 8 << (format - CU_AD_FORMAT_SIGNED_INT8);
    kind = wooly::ChannelKind::Signed;
    break;
  case CU_AD_FORMAT_HALF:
  case CU_AD_FORMAT_FLOAT:
    bits = format == CU_AD_FORMAT_HALF ? 16 : 32;
    kind = wooly::ChannelKind::Float;
    break;
  }
  if (!bits || (channels != 1 && channels != 2 && channels != 4))
    return false;
  f = wooly::ChannelFormat();
  for (unsigned c = 0; c < channels; ++c)
    f.bits[c] = bits;
  f.kind = kind;
  return true;
}

/// The driver's format of a channel format (which `channelFormat` made).
CUarray_format arrayFormat(const wooly::ChannelFormat &f) {
  int log2 = f.bits[0] == 8 ? 0 : f.bits[0] == 16 ? 1 : 2;
  switch (f.kind) {
  case wooly::ChannelKind::Signed:
    return CUarray_format(CU_AD_FORMAT_SIGNED_INT8 + log2);
  case wooly::ChannelKind::Float:
    return log2 == 1 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
  case wooly::ChannelKind::Unsigned:
    break;
  }
  return CUarray_format(CU_AD_FORMAT_UNSIGNED_INT8 + log2);
}

CUresult arrayCreate(CUarray *array, size_t width, size_t height, size_t depth,
                     CUarray_format format, unsigned channels, unsigned flags,
                     const char *call) {
  wooly::ChannelFormat f;
  if (!channelFormat(format, channels, f)) {
    log(1,
        "%s: array format 0x%x with %u channels is not supported yet (Wooly "
        "takes 8, 16 and 32-bit integers, halves and floats; 1, 2 or 4 "
        "channels)",
        call, unsigned(format), channels);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return wooly::capture::driverArrayCreate(f, width, height, depth, flags,
                                           CUDA_ERROR_INVALID_VALUE, array);
}

/// One side of a 2D or 3D copy: host or device memory, where its first byte
/// is, and its row and slice pitches.
struct CopySide {
  bool device = false;
  uint64_t at = 0;
  size_t pitch = 0, slicePitch = 0;
};

/// The side of a copy at (x bytes, y, z) of its memory, for a copy of
/// `width` bytes x `height` x `depth`; false when it is not valid.
bool copySide(State &s, CUmemorytype type, const void *host, CUdeviceptr device,
              CUarray array, size_t x, size_t y, size_t z, size_t pitch,
              size_t rows, size_t width, size_t height, size_t depth,
              CopySide &out) {
  if (type == CU_MEMORYTYPE_ARRAY) {
    if (!s.arrays.count(array))
      return false;
    out.device = true;
    out.pitch = array->rowBytes();
    out.slicePitch = array->rowBytes() * array->rows();
    return array->at(x, y, z, width, height, depth, out.at);
  }
  uint64_t base;
  if (type == CU_MEMORYTYPE_HOST) {
    base = reinterpret_cast<uint64_t>(host);
  } else if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED) {
    base = device;
    out.device = type == CU_MEMORYTYPE_DEVICE || isDevicePointer(s, device);
  } else {
    return false;
  }
  if (!base || (height > 1 && pitch < width) || (depth > 1 && rows < height))
    return false;
  out.pitch = pitch;
  out.slicePitch = pitch * rows;
  out.at = base + z * out.slicePitch + y * pitch + x;
  return true;
}

/// Copies `depth` slices of `height` rows of `width` bytes in stream order
/// (a copy from the device is a round trip per slice: its rows' span comes
/// back at once and is spread here); `async`: without waiting for the
/// stream at the end.
CUresult copyBox(State &s, const CopySide &dst, const CopySide &src,
                 size_t width, size_t height, size_t depth, uint64_t stream,
                 bool async, const char *call) {
  if (!width || !height || !depth)
    return CUDA_SUCCESS;
  MANAGED_TO_DEVICE(s, call);
  bool contiguous = dst.pitch == width && src.pitch == width;
  size_t rowsAtOnce = contiguous ? height : 1;
  for (size_t z = 0; z < depth; ++z) {
    uint64_t d0 = dst.at + z * dst.slicePitch, s0 = src.at + z * src.slicePitch;
    if (src.device && !dst.device) {
      // Bounded: a span over 64 MiB goes row by row.
      size_t span = (height - 1) * src.pitch + width;
      bool whole = height == 1 || src.pitch <= (64u << 20) / (height - 1);
      std::vector<char> rows(whole ? span : width);
      for (size_t y = 0; y < height; y += whole ? height : 1) {
        CHECK_STATUS(call,
                     s.client->copyFromDevice(rows.data(), s0 + y * src.pitch,
                                              rows.size(), stream));
        for (size_t r = 0; r < (whole ? height : 1); ++r)
          std::memcpy(reinterpret_cast<char *>(d0 + (y + r) * dst.pitch),
                      rows.data() + r * src.pitch, width);
      }
      continue;
    }
    if (!src.device && !dst.device) {
      CHECK_STATUS(call, s.client->streamSynchronize(stream));
      for (size_t y = 0; y < height; ++y)
        std::memmove(reinterpret_cast<void *>(d0 + y * dst.pitch),
                     reinterpret_cast<const void *>(s0 + y * src.pitch), width);
      continue;
    }
    for (size_t y = 0; y < height; y += rowsAtOnce) {
      uint64_t d = d0 + y * dst.pitch, from = s0 + y * src.pitch;
      size_t n = width * rowsAtOnce;
      CHECK_STATUS(
          call, src.device
                    ? s.client->copyDeviceToDevice(d, from, n, stream, true)
                    : s.client->copyToDevice(d, reinterpret_cast<void *>(from),
                                             n, stream, true));
    }
  }
  if (!async) {
    CHECK_STATUS(call, s.client->streamSynchronize(stream));
    MANAGED_TO_HOST(s, call);
  }
  return CUDA_SUCCESS;
}

CUresult memcpy3D(const CUDA_MEMCPY3D *p, CUstream stream, bool async,
                  const char *call) {
  if (!p || p->srcLOD || p->dstLOD || p->reserved0 || p->reserved1)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  RESOLVE_STREAM(s, stream, handle);
  size_t height = p->Height ? p->Height : 1, depth = p->Depth ? p->Depth : 1;
  CopySide src, dst;
  if (!copySide(s, p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray,
                p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch, p->srcHeight,
                p->WidthInBytes, height, depth, src) ||
      !copySide(s, p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray,
                p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch, p->dstHeight,
                p->WidthInBytes, height, depth, dst))
    return CUDA_ERROR_INVALID_VALUE;
  return copyBox(s, dst, src, p->WidthInBytes, height, depth, handle, async,
                 call);
}

CUresult memcpy2D(const CUDA_MEMCPY2D *p, CUstream stream, bool async,
                  const char *call) {
  if (!p)
    return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D q;
  std::memset(&q, 0, sizeof q);
  q.srcXInBytes = p->srcXInBytes;
  q.srcY = p->srcY;
  q.srcMemoryType = p->srcMemoryType;
  q.srcHost = p->srcHost;
  q.srcDevice = p->srcDevice;
  q.srcArray = p->srcArray;
  q.srcPitch = p->srcPitch;
  q.dstXInBytes = p->dstXInBytes;
  q.dstY = p->dstY;
  q.dstMemoryType = p->dstMemoryType;
  q.dstHost = p->dstHost;
  q.dstDevice = p->dstDevice;
  q.dstArray = p->dstArray;
  q.dstPitch = p->dstPitch;
  q.WidthInBytes = p->WidthInBytes;
  q.Height = p->Height;
  q.Depth = 1;
  return memcpy3D(&q, stream, async, call);
}

using DriverRecords =
    wooly::capture::TextureRecords<CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC>;
/// The descriptors of the objects made through the driver API.
DriverRecords &driverRecords() {
  static DriverRecords *r = new DriverRecords; // never destroyed
  return *r;
}

/// Creates an object on the server and records its descriptors.
CUresult createObject(unsigned long long *object, const wooly::ResourceDesc &r,
                      const wooly::TextureDesc &d,
                      const DriverRecords::Record &rec,
                      const wooly::client::TextureExtras &extras = {}) {
  uint64_t handle = 0;
  if (CUresult e = wooly::capture::driverTextureCreate(r, d, rec.surface,
                                                       &handle, extras))
    return e;
  driverRecords().add(handle, rec);
  *object = handle;
  return CUDA_SUCCESS;
}

CUresult destroyObject(unsigned long long object, bool surface) {
  if (CUresult e = wooly::capture::driverTextureDestroy(object, surface))
    return e;
  driverRecords().erase(object);
  return CUDA_SUCCESS;
}

/// Wooly's resource descriptor of `r`.
CUresult resourceOf(const CUDA_RESOURCE_DESC &r, wooly::ResourceDesc &out) {
  if (r.flags)
    return CUDA_ERROR_INVALID_VALUE;
  switch (r.resType) {
  case 0: { // CU_RESOURCE_TYPE_ARRAY
    if (!wooly::capture::driverIsArray(r.res.array.hArray))
      return CUDA_ERROR_INVALID_HANDLE;
    const CUarray_st &a = *r.res.array.hArray;
    out.kind = wooly::ResourceDesc::Kind::Array;
    out.address = a.address;
    out.format = a.format;
    out.width = a.width;
    out.height = a.height;
    out.depth = a.depth;
    out.layered = a.flags & cudaArrayLayered;
    out.cubemap = a.flags & cudaArrayCubemap;
    return CUDA_SUCCESS;
  }
  case 1: // CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
    if (!wooly::capture::driverMipmappedResource(r.res.mipmap.hMipmappedArray,
                                                 out))
      return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
  case 2:   // CU_RESOURCE_TYPE_LINEAR
  case 3: { // CU_RESOURCE_TYPE_PITCH2D
    bool linear = r.resType == 2;
    CUarray_format format = linear ? r.res.linear.format : r.res.pitch2D.format;
    unsigned channels =
        linear ? r.res.linear.numChannels : r.res.pitch2D.numChannels;
    if (!channelFormat(format, channels, out.format)) {
      log(1,
          "cuTexObjectCreate: format 0x%x with %u channels is not "
          "supported yet",
          unsigned(format), channels);
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (linear) {
      out.kind = wooly::ResourceDesc::Kind::Linear;
      out.address = r.res.linear.devPtr;
      out.width = r.res.linear.sizeInBytes / out.format.elementBytes();
    } else {
      out.kind = wooly::ResourceDesc::Kind::Pitch2D;
      out.address = r.res.pitch2D.devPtr;
      out.width = r.res.pitch2D.width;
      out.height = r.res.pitch2D.height;
      out.pitch = r.res.pitch2D.pitchInBytes;
    }
    return CUDA_SUCCESS;
  }
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

} // namespace

WOOLY_CU_API CUresult cuArrayCreate_v2(CUarray *array,
                                       const CUDA_ARRAY_DESCRIPTOR *d) {
  if (!d)
    return CUDA_ERROR_INVALID_VALUE;
  return arrayCreate(array, d->Width, d->Height, 0, d->Format, d->NumChannels,
                     0, "cuArrayCreate");
}

WOOLY_CU_API CUresult cuArray3DCreate_v2(CUarray *array,
                                         const CUDA_ARRAY3D_DESCRIPTOR *d) {
  if (!d)
    return CUDA_ERROR_INVALID_VALUE;
  return arrayCreate(array, d->Width, d->Height, d->Depth, d->Format,
                     d->NumChannels, d->Flags, "cuArray3DCreate");
}

WOOLY_CU_API CUresult cuArrayDestroy(CUarray array) {
  return wooly::capture::driverArrayDestroy(array);
}

WOOLY_CU_API CUresult cuMipmappedArrayCreate(CUmipmappedArray *array,
                                             const CUDA_ARRAY3D_DESCRIPTOR *d,
                                             unsigned numLevels) {
  if (!d)
    return CUDA_ERROR_INVALID_VALUE;
  wooly::ChannelFormat f;
  if (!channelFormat(d->Format, d->NumChannels, f)) {
    log(1,
        "cuMipmappedArrayCreate: array format 0x%x with %u channels is not "
        "supported yet",
        unsigned(d->Format), d->NumChannels);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return wooly::capture::driverMipmappedArrayCreate(
      f, d->Width, d->Height, d->Depth, d->Flags, numLevels,
      CUDA_ERROR_INVALID_VALUE, array);
}

WOOLY_CU_API CUresult cuMipmappedArrayGetLevel(CUarray *level,
                                               CUmipmappedArray array,
                                               unsigned index) {
  return wooly::capture::driverMipmappedArrayLevel(array, index, level);
}

WOOLY_CU_API CUresult cuMipmappedArrayDestroy(CUmipmappedArray array) {
  return wooly::capture::driverMipmappedArrayDestroy(array);
}

WOOLY_CU_API CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *d,
                                                CUarray array) {
  if (!d)
    return CUDA_ERROR_INVALID_VALUE;
  if (!wooly::capture::driverIsArray(array))
    return CUDA_ERROR_INVALID_HANDLE;
  d->Width = array->width;
  d->Height = array->height;
  d->Depth = array->depth;
  d->Format = arrayFormat(array->format);
  d->NumChannels = array->format.channels();
  d->Flags = array->flags;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *d,
                                              CUarray array) {
  CUDA_ARRAY3D_DESCRIPTOR d3;
  if (!d)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = cuArray3DGetDescriptor_v2(&d3, array);
  if (r == CUDA_SUCCESS)
    *d = CUDA_ARRAY_DESCRIPTOR{d3.Width, d3.Height, d3.Format, d3.NumChannels};
  return r;
}

WOOLY_CU_API CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *p) {
  return memcpy2D(p, nullptr, false, "cuMemcpy2D");
}
WOOLY_CU_API CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *p) {
  return memcpy2D(p, nullptr, false, "cuMemcpy2DUnaligned");
}
WOOLY_CU_API CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p,
                                         CUstream stream) {
  return memcpy2D(p, stream, true, "cuMemcpy2DAsync");
}
WOOLY_CU_API CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *p) {
  return memcpy3D(p, nullptr, false, "cuMemcpy3D");
}
WOOLY_CU_API CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p,
                                         CUstream stream) {
  return memcpy3D(p, stream, true, "cuMemcpy3DAsync");
}

WOOLY_CU_API CUresult cuMemcpyHtoA_v2(CUarray dst, size_t offset,
                                      const void *src, size_t bytes) {
  // The array's rows are contiguous.
  if (!wooly::capture::driverIsArray(dst))
    return CUDA_ERROR_INVALID_HANDLE;
  if (offset > dst->bytes() || bytes > dst->bytes() - offset)
    return CUDA_ERROR_INVALID_VALUE;
  return copyH2D(dst->address + offset, src, bytes, nullptr, false,
                 "cuMemcpyHtoA");
}

WOOLY_CU_API CUresult cuMemcpyAtoH_v2(void *dst, CUarray src, size_t offset,
                                      size_t bytes) {
  if (!wooly::capture::driverIsArray(src))
    return CUDA_ERROR_INVALID_HANDLE;
  if (offset > src->bytes() || bytes > src->bytes() - offset)
    return CUDA_ERROR_INVALID_VALUE;
  return copyD2H(dst, src->address + offset, bytes, nullptr, "cuMemcpyAtoH");
}

WOOLY_CU_API CUresult cuTexObjectCreate(CUtexObject *object,
                                        const CUDA_RESOURCE_DESC *resource,
                                        const CUDA_TEXTURE_DESC *texture,
                                        const void *view) {
  if (!object || !resource || !texture)
    return CUDA_ERROR_INVALID_VALUE;
  wooly::ResourceDesc r;
  if (CUresult e = resourceOf(*resource, r))
    return e;
  const CUDA_TEXTURE_DESC &t = *texture;
  wooly::TextureDesc d;
  for (int i = 0; i < 3; ++i) {
    if (t.addressMode[i] < 0 || t.addressMode[i] > 3)
      return CUDA_ERROR_INVALID_VALUE;
    d.addressMode[i] = wooly::AddressMode(t.addressMode[i]);
  }
  if (t.filterMode < 0 || t.filterMode > 1)
    return CUDA_ERROR_INVALID_VALUE;
  d.filterMode = wooly::FilterMode(t.filterMode);
  // The driver reads 8- and 16-bit integers as normalized floats unless
  // told otherwise.
  bool integers = r.format.kind != wooly::ChannelKind::Float;
  d.readMode =
      integers && r.format.bits[0] != 32 && !(t.flags & CU_TRSF_READ_AS_INTEGER)
          ? wooly::ReadMode::NormalizedFloat
          : wooly::ReadMode::ElementType;
  d.sRGB = t.flags & CU_TRSF_SRGB;
  d.normalizedCoords = t.flags & CU_TRSF_NORMALIZED_COORDINATES;
  std::memcpy(d.borderColor, t.borderColor, sizeof d.borderColor);
  if (t.mipmapFilterMode < 0 || t.mipmapFilterMode > 1)
    return CUDA_ERROR_INVALID_VALUE;
  d.mipmapFilterMode = wooly::FilterMode(t.mipmapFilterMode);
  d.mipmapLevelBias = t.mipmapLevelBias;
  d.minMipmapLevelClamp = t.minMipmapLevelClamp;
  d.maxMipmapLevelClamp = t.maxMipmapLevelClamp;
  wooly::client::TextureExtras extras;
  extras.maxAnisotropy = t.maxAnisotropy;
  extras.seamlessCubemap = t.flags & CU_TRSF_SEAMLESS_CUBEMAP;
  extras.resourceView = view != nullptr;
  DriverRecords::Record rec;
  rec.resource = *resource;
  rec.texture = *texture;
  return createObject(object, r, d, rec, extras);
}

WOOLY_CU_API CUresult cuTexObjectDestroy(CUtexObject object) {
  return destroyObject(object, false);
}

WOOLY_CU_API CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *desc,
                                                 CUtexObject object) {
  DriverRecords::Record rec;
  if (!desc || !driverRecords().find(object, false, rec))
    return CUDA_ERROR_INVALID_VALUE;
  *desc = rec.resource;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *desc,
                                                CUtexObject object) {
  DriverRecords::Record rec;
  if (!desc || !driverRecords().find(object, false, rec))
    return CUDA_ERROR_INVALID_VALUE;
  *desc = rec.texture;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuSurfObjectCreate(CUsurfObject *object,
                                         const CUDA_RESOURCE_DESC *resource) {
  if (!object || !resource || resource->resType != 0 /* array */)
    return CUDA_ERROR_INVALID_VALUE;
  wooly::ResourceDesc r;
  if (CUresult e = resourceOf(*resource, r))
    return e;
  DriverRecords::Record rec;
  rec.surface = true;
  rec.resource = *resource;
  std::memset(&rec.texture, 0, sizeof rec.texture);
  return createObject(object, r, wooly::TextureDesc(), rec);
}

WOOLY_CU_API CUresult cuSurfObjectDestroy(CUsurfObject object) {
  return destroyObject(object, true);
}

WOOLY_CU_API CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *desc,
                                                  CUsurfObject object) {
  DriverRecords::Record rec;
  if (!desc || !driverRecords().find(object, true, rec))
    return CUDA_ERROR_INVALID_VALUE;
  *desc = rec.resource;
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Texture and surface references (deprecated, driver API only)
//===----------------------------------------------------------------------===//
//
// A reference is a module variable holding an object's handle. The
// cuTexRefSet*/cuSurfRefSetArray calls only record state; the next launch of
// a kernel of the module makes an object from it (cuTexObjectCreate's own
// checks and descriptors) and writes its handle into the variable with a
// synchronous copy before the launch is sent. A rebind (an object was made
// before) first waits for the device (cuCtxSynchronize), so launches queued
// earlier, on any stream, finish with the object they were launched with;
// then the old object is destroyed. So a rebind costs a synchronisation, as
// binding a texture reference did on NVIDIA's own driver for most uses.

namespace {

/// The reference `r`, if it is one of the session's.
bool isRef(State &s, CUtexref_st *r) { return r && s.refs.count(r); }

/// Finds or makes the reference `name` of `module`.
CUresult getRef(CUtexref_st **out, CUmodule module, const char *name,
                bool surface) {
  if (!out || !name)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  if (!s.modules.count(module))
    return CUDA_ERROR_INVALID_HANDLE;
  auto it = module->refs.find(name);
  if (it != module->refs.end()) {
    if (it->second->surface != surface)
      return CUDA_ERROR_NOT_FOUND;
    *out = it->second.get();
    return CUDA_SUCCESS;
  }
  uint64_t address = 0, size = 0;
  client::Status st = s.client->getSymbol(module->handle, name, address, size);
  if (st.code == client::Code::NotFound)
    return CUDA_ERROR_NOT_FOUND;
  CHECK_STATUS(surface ? "cuModuleGetSurfRef" : "cuModuleGetTexRef", st);
  if (size != 8) // not a reference (the importer makes them 64-bit)
    return CUDA_ERROR_NOT_FOUND;
  s.deviceRanges[address] = size;
  auto r = std::make_unique<CUtexref_st>();
  r->module = module;
  r->surface = surface;
  r->variable = address;
  std::memset(&r->resource, 0, sizeof r->resource);
  r->resource.resType = -1;
  std::memset(&r->texture, 0, sizeof r->texture);
  *out = r.get();
  s.refs.insert(r.get());
  module->refs.emplace(name, std::move(r));
  return CUDA_SUCCESS;
}

/// Runs `change` on the texture reference `r` (a surface reference is
/// refused unless `surfaceToo`) and marks it for binding when it has a
/// resource.
template <typename F>
CUresult changeRef(CUtexref_st *r, F change, bool surfaceToo = false) {
  LOCKED_READY(s);
  if (!isRef(s, r) || (r->surface && !surfaceToo))
    return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult e = change(*r))
    return e;
  r->dirty = r->resource.resType >= 0;
  return CUDA_SUCCESS;
}

/// Reads the reference `r` under the lock.
template <typename F> CUresult readRef(CUtexref_st *r, F read) {
  LOCKED_READY(s);
  if (!isRef(s, r))
    return CUDA_ERROR_INVALID_HANDLE;
  return read(*r);
}

CUresult bindReferences(CUfunction f) {
  std::vector<CUtexref_st *> dirty;
  {
    LOCKED_READY(s);
    if (!s.functions.count(f))
      return CUDA_SUCCESS; // the launch says so
    for (auto &[name, r] : f->module->refs)
      if (r->dirty)
        dirty.push_back(r.get());
  }
  for (CUtexref_st *r : dirty) {
    if (r->object)
      if (CUresult e = cuCtxSynchronize())
        return e;
    unsigned long long object = 0;
    CUresult e = r->surface ? cuSurfObjectCreate(&object, &r->resource)
                            : cuTexObjectCreate(&object, &r->resource,
                                                &r->texture, nullptr);
    if (e)
      return e;
    if ((e = cuMemcpyHtoD_v2(r->variable, &object, sizeof object))) {
      (void)(r->surface ? cuSurfObjectDestroy(object)
                        : cuTexObjectDestroy(object));
      return e;
    }
    if (r->object)
      (void)(r->surface ? cuSurfObjectDestroy(r->object)
                        : cuTexObjectDestroy(r->object));
    r->object = object;
    r->dirty = false;
  }
  return CUDA_SUCCESS;
}

} // namespace

WOOLY_CU_API CUresult cuModuleGetTexRef(CUtexref *ref, CUmodule module,
                                        const char *name) {
  return getRef(ref, module, name, false);
}

WOOLY_CU_API CUresult cuModuleGetSurfRef(CUsurfref *ref, CUmodule module,
                                         const char *name) {
  return getRef(ref, module, name, true);
}

WOOLY_CU_API CUresult cuTexRefSetArray(CUtexref ref, CUarray array,
                                       unsigned flags) {
  if (flags != CU_TRSA_OVERRIDE_FORMAT)
    return CUDA_ERROR_INVALID_VALUE;
  if (!wooly::capture::driverIsArray(array))
    return CUDA_ERROR_INVALID_HANDLE;
  return changeRef(ref, [&](CUtexref_st &r) {
    std::memset(&r.resource, 0, sizeof r.resource);
    r.resource.resType = 0; // CU_RESOURCE_TYPE_ARRAY
    r.resource.res.array.hArray = array;
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuSurfRefSetArray(CUsurfref ref, CUarray array,
                                        unsigned flags) {
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!wooly::capture::driverIsArray(array))
    return CUDA_ERROR_INVALID_HANDLE;
  return changeRef(
      ref,
      [&](CUtexref_st &r) {
        if (!r.surface)
          return CUDA_ERROR_INVALID_HANDLE;
        std::memset(&r.resource, 0, sizeof r.resource);
        r.resource.resType = 0;
        r.resource.res.array.hArray = array;
        return CUDA_SUCCESS;
      },
      /*surfaceToo=*/true);
}

WOOLY_CU_API CUresult cuSurfRefGetArray(CUarray *array, CUsurfref ref) {
  if (!array)
    return CUDA_ERROR_INVALID_VALUE;
  return readRef(ref, [&](CUtexref_st &r) {
    if (!r.surface || r.resource.resType != 0)
      return CUDA_ERROR_INVALID_VALUE;
    *array = r.resource.res.array.hArray;
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefSetAddress_v2(size_t *byteOffset, CUtexref ref,
                                            CUdeviceptr address, size_t bytes) {
  return changeRef(ref, [&](CUtexref_st &r) {
    std::memset(&r.resource, 0, sizeof r.resource);
    r.resource.resType = 2; // CU_RESOURCE_TYPE_LINEAR
    r.resource.res.linear.devPtr = address;
    r.resource.res.linear.format = r.format;
    r.resource.res.linear.numChannels = r.channels;
    r.resource.res.linear.sizeInBytes = bytes;
    // Wooly's textures take any address: no offset to apply.
    if (byteOffset)
      *byteOffset = 0;
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefSetAddress2D_v3(CUtexref ref,
                                              const CUDA_ARRAY_DESCRIPTOR *d,
                                              CUdeviceptr address,
                                              size_t pitch) {
  if (!d)
    return CUDA_ERROR_INVALID_VALUE;
  return changeRef(ref, [&](CUtexref_st &r) {
    std::memset(&r.resource, 0, sizeof r.resource);
    r.resource.resType = 3; // CU_RESOURCE_TYPE_PITCH2D
    r.resource.res.pitch2D.devPtr = address;
    r.resource.res.pitch2D.format = d->Format;
    r.resource.res.pitch2D.numChannels = d->NumChannels;
    r.resource.res.pitch2D.width = d->Width;
    r.resource.res.pitch2D.height = d->Height;
    r.resource.res.pitch2D.pitchInBytes = pitch;
    r.format = d->Format;
    r.channels = d->NumChannels;
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefSetFormat(CUtexref ref, CUarray_format format,
                                        int channels) {
  if (channels != 1 && channels != 2 && channels != 4)
    return CUDA_ERROR_INVALID_VALUE;
  return changeRef(ref, [&](CUtexref_st &r) {
    r.format = format;
    r.channels = unsigned(channels);
    if (r.resource.resType == 2) {
      r.resource.res.linear.format = format;
      r.resource.res.linear.numChannels = r.channels;
    } else if (r.resource.resType == 3) {
      r.resource.res.pitch2D.format = format;
      r.resource.res.pitch2D.numChannels = r.channels;
    }
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefSetAddressMode(CUtexref ref, int dim, int mode) {
  if (dim < 0 || dim > 2 || mode < 0 || mode > 3)
    return CUDA_ERROR_INVALID_VALUE;
  return changeRef(ref, [&](CUtexref_st &r) {
    r.texture.addressMode[dim] = mode;
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefSetFilterMode(CUtexref ref, int mode) {
  if (mode < 0 || mode > 1)
    return CUDA_ERROR_INVALID_VALUE;
  return changeRef(ref, [&](CUtexref_st &r) {
    r.texture.filterMode = mode;
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefSetFlags(CUtexref ref, unsigned flags) {
  return changeRef(ref, [&](CUtexref_st &r) {
    r.texture.flags = flags;
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefSetBorderColor(CUtexref ref, const float *color) {
  if (!color)
    return CUDA_ERROR_INVALID_VALUE;
  return changeRef(ref, [&](CUtexref_st &r) {
    std::memcpy(r.texture.borderColor, color, sizeof r.texture.borderColor);
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefSetMaxAnisotropy(CUtexref ref, unsigned value) {
  // More than 1 is refused when the object is made (not supported yet).
  return changeRef(ref, [&](CUtexref_st &r) {
    r.texture.maxAnisotropy = value;
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefGetAddress_v2(CUdeviceptr *address,
                                            CUtexref ref) {
  if (!address)
    return CUDA_ERROR_INVALID_VALUE;
  return readRef(ref, [&](CUtexref_st &r) {
    if (r.resource.resType == 2)
      *address = r.resource.res.linear.devPtr;
    else if (r.resource.resType == 3)
      *address = r.resource.res.pitch2D.devPtr;
    else
      return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefGetArray(CUarray *array, CUtexref ref) {
  if (!array)
    return CUDA_ERROR_INVALID_VALUE;
  return readRef(ref, [&](CUtexref_st &r) {
    if (r.surface || r.resource.resType != 0)
      return CUDA_ERROR_INVALID_VALUE;
    *array = r.resource.res.array.hArray;
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefGetAddressMode(int *mode, CUtexref ref, int dim) {
  if (!mode || dim < 0 || dim > 2)
    return CUDA_ERROR_INVALID_VALUE;
  return readRef(ref, [&](CUtexref_st &r) {
    *mode = r.texture.addressMode[dim];
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefGetFilterMode(int *mode, CUtexref ref) {
  if (!mode)
    return CUDA_ERROR_INVALID_VALUE;
  return readRef(ref, [&](CUtexref_st &r) {
    *mode = r.texture.filterMode;
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefGetFlags(unsigned *flags, CUtexref ref) {
  if (!flags)
    return CUDA_ERROR_INVALID_VALUE;
  return readRef(ref, [&](CUtexref_st &r) {
    *flags = r.texture.flags;
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefGetBorderColor(float *color, CUtexref ref) {
  if (!color)
    return CUDA_ERROR_INVALID_VALUE;
  return readRef(ref, [&](CUtexref_st &r) {
    std::memcpy(color, r.texture.borderColor, sizeof r.texture.borderColor);
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefGetMaxAnisotropy(int *value, CUtexref ref) {
  if (!value)
    return CUDA_ERROR_INVALID_VALUE;
  return readRef(ref, [&](CUtexref_st &r) {
    *value = int(r.texture.maxAnisotropy);
    return CUDA_SUCCESS;
  });
}

WOOLY_CU_API CUresult cuTexRefGetFormat(CUarray_format *format, int *channels,
                                        CUtexref ref) {
  if (!format)
    return CUDA_ERROR_INVALID_VALUE;
  return readRef(ref, [&](CUtexref_st &r) {
    if (r.resource.resType == 0) {
      if (!state().arrays.count(r.resource.res.array.hArray))
        return CUDA_ERROR_INVALID_VALUE; // destroyed since
      const CUarray_st &a = *r.resource.res.array.hArray;
      *format = arrayFormat(a.format);
      if (channels)
        *channels = int(a.format.channels());
      return CUDA_SUCCESS;
    }
    *format = r.format;
    if (channels)
      *channels = int(r.channels);
    return CUDA_SUCCESS;
  });
}

//===----------------------------------------------------------------------===//
// Streams
//===----------------------------------------------------------------------===//

WOOLY_CU_API CUresult cuStreamCreateWithPriority(CUstream *stream,
                                                 unsigned flags, int priority) {
  if (!stream)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  uint64_t handle = 0;
  CHECK_STATUS("cuStreamCreate", s.client->streamCreate(handle));
  auto *st = new CUstream_st;
  st->handle = handle;
  st->flags = flags;
  st->priority = std::clamp(priority, -5, 0);
  s.streams.insert(st);
  *stream = st;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuStreamCreate(CUstream *stream, unsigned flags) {
  return cuStreamCreateWithPriority(stream, flags, 0);
}

WOOLY_CU_API CUresult cuStreamDestroy_v2(CUstream stream) {
  LOCKED_READY(s);
  if (!s.streams.count(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  CHECK_STATUS("cuStreamDestroy", s.client->streamDestroy(stream->handle));
  s.streams.erase(stream);
  delete stream;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuStreamGetPriority(CUstream stream, int *priority) {
  if (!priority)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  RESOLVE_STREAM(s, stream, handle);
  *priority = handle ? stream->priority : 0;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuStreamGetFlags(CUstream stream, unsigned *flags) {
  if (!flags)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  RESOLVE_STREAM(s, stream, handle);
  *flags = handle ? stream->flags : 0;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuStreamSynchronize(CUstream stream) {
  LOCKED_READY(s);
  RESOLVE_STREAM(s, stream, handle);
  CHECK_STATUS("cuStreamSynchronize", s.client->streamSynchronize(handle));
  MANAGED_TO_HOST(s, "cuStreamSynchronize");
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuStreamQuery(CUstream stream) {
  LOCKED_READY(s);
  RESOLVE_STREAM(s, stream, handle);
  CHECK_STATUS("cuStreamQuery", s.client->streamQuery(handle));
  MANAGED_TO_HOST(s, "cuStreamQuery");
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuStreamWaitEvent(CUstream stream, CUevent event,
                                        unsigned flags) {
  (void)flags;
  LOCKED_READY(s);
  RESOLVE_STREAM(s, stream, handle);
  if (!s.events.count(event))
    return CUDA_ERROR_INVALID_HANDLE;
  CHECK_STATUS("cuStreamWaitEvent",
               s.client->streamWaitEvent(handle, event->handle));
  return CUDA_SUCCESS;
}

/// Host functions run on this thread once the stream has reached them: the
/// call waits for the stream's earlier work, then calls `fn` (with no lock
/// held, so `fn` may not call CUDA, as CUDA requires, but would not
/// deadlock if it did).
WOOLY_CU_API CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn,
                                       void *data) {
  if (!fn)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = cuStreamSynchronize(stream);
  if (r != CUDA_SUCCESS)
    return r;
  fn(data);
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuStreamAddCallback(CUstream stream,
                                          CUstreamCallback callback, void *data,
                                          unsigned flags) {
  if (!callback || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = cuStreamSynchronize(stream);
  callback(stream, r, data);
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Events
//===----------------------------------------------------------------------===//

WOOLY_CU_API CUresult cuEventCreate(CUevent *event, unsigned flags) {
  if (!event)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  uint64_t handle = 0;
  CHECK_STATUS("cuEventCreate", s.client->eventCreate(handle));
  auto *e = new CUevent_st;
  e->handle = handle;
  e->flags = flags;
  s.events.insert(e);
  *event = e;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuEventDestroy_v2(CUevent event) {
  LOCKED_READY(s);
  if (!s.events.count(event))
    return CUDA_ERROR_INVALID_HANDLE;
  CHECK_STATUS("cuEventDestroy", s.client->eventDestroy(event->handle));
  s.events.erase(event);
  delete event;
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuEventRecord(CUevent event, CUstream stream) {
  LOCKED_READY(s);
  if (!s.events.count(event))
    return CUDA_ERROR_INVALID_HANDLE;
  RESOLVE_STREAM(s, stream, handle);
  CHECK_STATUS("cuEventRecord", s.client->eventRecord(event->handle, handle));
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuEventRecordWithFlags(CUevent event, CUstream stream,
                                             unsigned flags) {
  (void)flags;
  return cuEventRecord(event, stream);
}

WOOLY_CU_API CUresult cuEventQuery(CUevent event) {
  LOCKED_READY(s);
  if (!s.events.count(event))
    return CUDA_ERROR_INVALID_HANDLE;
  CHECK_STATUS("cuEventQuery", s.client->eventQuery(event->handle));
  MANAGED_TO_HOST(s, "cuEventQuery");
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuEventSynchronize(CUevent event) {
  LOCKED_READY(s);
  if (!s.events.count(event))
    return CUDA_ERROR_INVALID_HANDLE;
  CHECK_STATUS("cuEventSynchronize", s.client->eventSynchronize(event->handle));
  MANAGED_TO_HOST(s, "cuEventSynchronize");
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuEventElapsedTime_v2(float *ms, CUevent start,
                                            CUevent end) {
  if (!ms)
    return CUDA_ERROR_INVALID_VALUE;
  LOCKED_READY(s);
  if (!s.events.count(start) || !s.events.count(end))
    return CUDA_ERROR_INVALID_HANDLE;
  CHECK_STATUS("cuEventElapsedTime",
               s.client->eventElapsed(start->handle, end->handle, *ms));
  return CUDA_SUCCESS;
}

WOOLY_CU_API CUresult cuEventElapsedTime(float *ms, CUevent start,
                                         CUevent end) {
  return cuEventElapsedTime_v2(ms, start, end);
}

//===----------------------------------------------------------------------===//
// Per-thread default stream variants: the per-thread default stream is the
// legacy default stream of the session (documented in capture/README.md).
//===----------------------------------------------------------------------===//

#define WOOLY_ALIAS(name, target)                                              \
  extern "C" __attribute__((visibility("default"), alias(#target))) void name();

WOOLY_ALIAS(cuLaunchKernel_ptsz, cuLaunchKernel)
WOOLY_ALIAS(cuLaunchKernelEx_ptsz, cuLaunchKernelEx)
WOOLY_ALIAS(cuLaunchHostFunc_ptsz, cuLaunchHostFunc)
WOOLY_ALIAS(cuStreamSynchronize_ptsz, cuStreamSynchronize)
WOOLY_ALIAS(cuStreamQuery_ptsz, cuStreamQuery)
WOOLY_ALIAS(cuStreamWaitEvent_ptsz, cuStreamWaitEvent)
WOOLY_ALIAS(cuStreamAddCallback_ptsz, cuStreamAddCallback)
WOOLY_ALIAS(cuStreamGetPriority_ptsz, cuStreamGetPriority)
WOOLY_ALIAS(cuStreamGetFlags_ptsz, cuStreamGetFlags)
WOOLY_ALIAS(cuEventRecord_ptsz, cuEventRecord)
WOOLY_ALIAS(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags)
WOOLY_ALIAS(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD_v2)
WOOLY_ALIAS(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH_v2)
WOOLY_ALIAS(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD_v2)
WOOLY_ALIAS(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync_v2)
WOOLY_ALIAS(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync_v2)
WOOLY_ALIAS(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync_v2)
WOOLY_ALIAS(cuMemcpy_ptds, cuMemcpy)
WOOLY_ALIAS(cuMemcpyAsync_ptsz, cuMemcpyAsync)
WOOLY_ALIAS(cuMemsetD8_v2_ptds, cuMemsetD8_v2)
WOOLY_ALIAS(cuMemsetD16_v2_ptds, cuMemsetD16_v2)
WOOLY_ALIAS(cuMemsetD32_v2_ptds, cuMemsetD32_v2)
WOOLY_ALIAS(cuMemsetD8Async_ptsz, cuMemsetD8Async)
WOOLY_ALIAS(cuMemsetD2D8_v2_ptds, cuMemsetD2D8_v2)
WOOLY_ALIAS(cuMemsetD2D16_v2_ptds, cuMemsetD2D16_v2)
WOOLY_ALIAS(cuMemsetD2D32_v2_ptds, cuMemsetD2D32_v2)
WOOLY_ALIAS(cuMemsetD2D8Async_ptsz, cuMemsetD2D8Async)
WOOLY_ALIAS(cuMemsetD2D16Async_ptsz, cuMemsetD2D16Async)
WOOLY_ALIAS(cuMemsetD2D32Async_ptsz, cuMemsetD2D32Async)
WOOLY_ALIAS(cuMemsetD16Async_ptsz, cuMemsetD16Async)
WOOLY_ALIAS(cuMemsetD32Async_ptsz, cuMemsetD32Async)
WOOLY_ALIAS(cuMemcpy2D_v2_ptds, cuMemcpy2D_v2)
WOOLY_ALIAS(cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2DUnaligned_v2)
WOOLY_ALIAS(cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync_v2)
WOOLY_ALIAS(cuMemcpy3D_v2_ptds, cuMemcpy3D_v2)
WOOLY_ALIAS(cuMemcpy3DAsync_v2_ptsz, cuMemcpy3DAsync_v2)
WOOLY_ALIAS(cuMemcpyHtoA_v2_ptds, cuMemcpyHtoA_v2)
WOOLY_ALIAS(cuMemcpyAtoH_v2_ptds, cuMemcpyAtoH_v2)
