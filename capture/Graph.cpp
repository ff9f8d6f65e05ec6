//===- Graph.cpp - CUDA graphs and stream capture in libcudart -----------===//
//
// A graph is built on the client (nodes with dependencies); instantiating
// it orders the nodes topologically and splits the order into runs: runs of
// nodes the server can keep (kernels, byte-wise memsets, device-to-device
// copies, event records and waits) become graphs on the server at the first
// launch, and a launch replays each with one small call (GraphLaunch). The
// other nodes (host functions, copies from or to this process's memory) run
// on the client between them, in order on the stream; host nodes and
// device-to-host copies wait for the stream, as they must. A kernel node's
// new parameters make its run be stored again at the next launch.
//
// Stream capture records the stream's launches, copies, memsets, host
// functions and event records as nodes, each depending on what the stream
// did last. Another stream that waits for an event recorded in the capture
// joins it (a fork): its work becomes nodes that depend on what the event
// followed, and where the capture's stream waits for an event that stream
// recorded, it depends on that stream's nodes too (a join). The capture
// ends on the stream that began it, once every stream that joined it has
// been joined back.
//
// The queries (nodes, root nodes, dependencies, dependents, edges) read the
// client's graph; a clone copies its nodes and edges, and each copy knows
// its original (cudaGraphNodeFindInClone).
//
// A child graph node owns a copy of the graph it was given; instantiation
// expands it in place (flattenGraph), nested ones too.
//
// cudaGraphExecUpdate takes the parameters of a graph of the same shape.
//
// Not supported yet (clear errors): 3D memcpy nodes, memory allocation
// nodes, child graph parameters of an instantiated graph.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "Log.h"
#include "Runtime.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

using namespace wooly::cuabi;
using namespace wooly::capture;

extern "C" {
CUresult cuFuncGetParamInfo(CUfunction, size_t, size_t *, size_t *);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, CUstream, void **,
                        void **);
CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuMemsetD16Async(CUdeviceptr, unsigned short, size_t, CUstream);
CUresult cuMemsetD32Async(CUdeviceptr, unsigned, size_t, CUstream);
CUresult cuLaunchHostFunc(CUstream, CUhostFn, void *);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned);
CUresult cuFuncGetName(const char **, CUfunction);
// The runtime's (Textures.cpp).
cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms *, cudaStream_t);
}

struct CUgraphNode_st {
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  CUgraph_st *graph = nullptr;
  std::vector<CUgraphNode_st *> deps;
  // Kernel: the function, its configuration and its packed parameters (the
  // arguments are copied when the node is made, as CUDA does).
  const void *func = nullptr;
  CUfunction fn = nullptr;
  dim3 grid, block;
  unsigned shared = 0;
  std::vector<char> params;
  std::vector<size_t> paramOffsets;  // of each parameter in `params`
  std::vector<void *> paramPointers; // into `params`, made by GetParams
  // Memcpy: `bytes` from `src` to `dst`, or, where the node was given 3D
  // parameters that are not one run of bytes (arrays, rows apart),
  // `copy3d`.
  void *dst = nullptr;
  const void *src = nullptr;
  size_t bytes = 0;
  cudaMemcpyKind kind = cudaMemcpyDefault;
  std::optional<cudaMemcpy3DParms> copy3d;
  // Memset.
  size_t pitch = 0, width = 0, height = 0;
  unsigned value = 0, elementSize = 1;
  // Host.
  cudaHostFn_t host = nullptr;
  void *userData = nullptr;
  // Event record / wait.
  cudaEvent_t event = nullptr;
  /// Child graph: the node's own copy of the graph it was given (registered
  /// in Graphs::graphs, destroyed with the node).
  CUgraph_st *child = nullptr;
  /// The node this one is a copy of (cudaGraphClone), for
  /// cudaGraphNodeFindInClone.
  const CUgraphNode_st *original = nullptr;
  /// An instantiated graph's kernel, memcpy or memset node turned off with
  /// cudaGraphNodeSetEnabled: it does nothing, its edges still order.
  bool disabled = false;
};

/// Graph memory: the allocations of a graph's allocation nodes. CUDA gives
/// such an allocation one address for the graph's life; here it is made
/// when the node is (cudaMallocAsync in a capture, cudaGraphAddMemAllocNode)
/// and freed when the last graph, copy or exec holding it goes, so the
/// nodes do nothing when the graph runs. A program may free one itself
/// (cudaFree, or cudaFreeAsync outside a capture); then it is no graph's.
struct GraphMemory {
  std::vector<void *> ptrs;
  ~GraphMemory();
};

struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;
  /// The graph memory its nodes' allocations live in (the first, made at
  /// the first allocation node, its own), and that of the graphs its child
  /// graph nodes were copied from.
  std::vector<std::shared_ptr<GraphMemory>> memory;
};

/// A run of consecutive nodes of an instantiated graph: kept on the server
/// (kernels, memsets, device-to-device copies, events) or run by the client
/// (host functions, copies from or to host memory).
struct Segment {
  size_t begin = 0, end = 0; // [begin, end) of CUgraphExec_st::order
  bool onServer = false;
  uint64_t handle = 0;  // the server's graph; 0: create at next launch
  bool refused = false; // the server cannot keep it: run on the client
};

struct CUgraphExec_st {
  std::vector<CUgraphNode_st> order;
  std::unordered_map<const CUgraphNode_st *, size_t> index;
  std::vector<Segment> segments;
  std::vector<size_t> segmentOf; // per node of `order`
  /// Per node of `order`, the positions of the nodes it depends on
  /// (ascending): its edges, which cudaGraphExecUpdate compares.
  std::vector<std::vector<size_t>> depsOf;
  std::mutex mu; // launches of one exec run one at a time
  /// Made before cudaDeviceReset: unusable (set under Graphs::mu, which a
  /// launch may take while it holds `mu`, so not under `mu`).
  std::atomic<bool> reset{false};
  /// The flags it was instantiated with (cudaGraphExecGetFlags).
  unsigned long long flags = 0;
  /// The graph memory of the graph it was made from.
  std::vector<std::shared_ptr<GraphMemory>> memory;
};

namespace {

/// A stream in a capture: the graph, the nodes its next node depends on,
/// the capture's id and the stream that began it (the stream itself, or
/// the one whose capture it joined).
struct Capture {
  CUgraph_st *graph = nullptr;
  std::vector<CUgraphNode_st *> deps;
  unsigned long long id = 0;
  cudaStream_t origin = nullptr;
};

/// An event recorded in a capture: which, and the nodes a stream that
/// waits for it depends on.
struct CapturedEvent {
  unsigned long long id = 0;
  std::vector<CUgraphNode_st *> deps;
};

struct Graphs {
  std::mutex mu;
  std::unordered_set<CUgraph_st *> graphs;
  std::unordered_set<CUgraphExec_st *> execs;
  std::unordered_map<cudaStream_t, Capture> captures;
  /// Events recorded by a capture in progress.
  std::unordered_map<cudaEvent_t, CapturedEvent> capturedEvents;
  unsigned long long nextCaptureId = 1;
};

Graphs &graphs() {
  static Graphs *g = new Graphs;
  return *g;
}

/// The live graph memory allocations: each one's size (for
/// cudaDeviceGetGraphMemAttribute) and the GraphMemory that holds it (an
/// address the program freed may come back in another graph's).
struct GraphAllocations {
  std::mutex mu;
  std::unordered_map<void *, std::pair<size_t, const GraphMemory *>> live;
  uint64_t used = 0, usedHigh = 0;
};

GraphAllocations &graphAllocations() {
  static GraphAllocations *a = new GraphAllocations; // outlives destructors
  return *a;
}

/// `graph`'s own graph memory (g.mu held).
GraphMemory &ownMemory(CUgraph_st &graph) {
  if (graph.memory.empty())
    graph.memory.push_back(std::make_shared<GraphMemory>());
  return *graph.memory.front();
}

/// Records `ptr` (`bytes`) as an allocation of `graph` (g.mu held).
void ownAllocation(CUgraph_st &graph, void *ptr, size_t bytes) {
  GraphMemory &memory = ownMemory(graph);
  memory.ptrs.push_back(ptr);
  GraphAllocations &a = graphAllocations();
  std::lock_guard<std::mutex> lock(a.mu);
  a.live[ptr] = {bytes, &memory};
  a.used += bytes;
  a.usedHigh = std::max(a.usedHigh, a.used);
}

/// Whether `ptr` is an allocation of `graph` the program has not freed
/// (g.mu held).
bool ownsAllocation(CUgraph_st &graph, void *ptr) {
  if (graph.memory.empty())
    return false;
  GraphAllocations &a = graphAllocations();
  std::lock_guard<std::mutex> lock(a.mu);
  auto it = a.live.find(ptr);
  return it != a.live.end() && it->second.second == graph.memory.front().get();
}

/// Takes memory node `node` into `graph` (g.mu held; other nodes pass):
/// an allocation node's memory is the graph's from now on; a free node must
/// free memory the graph allocated (other memory is not supported yet:
/// false, logged for `call`).
bool adoptMemoryNode(CUgraph_st &graph, const CUgraphNode_st &node,
                     const char *call) {
  if (node.type == cudaGraphNodeTypeMemAlloc)
    ownAllocation(graph, node.dst, node.bytes);
  if (node.type != cudaGraphNodeTypeMemFree || ownsAllocation(graph, node.dst))
    return true;
  log(1,
      "%s: freeing memory that the graph did not allocate is not "
      "supported yet",
      call);
  return false;
}

std::atomic<int> activeCaptures{0};
thread_local cudaStreamCaptureMode captureMode = cudaStreamCaptureModeGlobal;

bool isSpecialStream(cudaStream_t s) {
  return !s || s == kStreamLegacy || s == kStreamPerThread;
}

/// Packs a kernel's arguments into its parameter buffer.
cudaError_t packParams(CUgraphNode_st &n, void **args) {
  size_t size = driverParamBufferSize(n.fn);
  n.params.assign(size, 0);
  n.paramOffsets.clear();
  for (size_t i = 0;; ++i) {
    size_t offset = 0, bytes = 0;
    if (cuFuncGetParamInfo(n.fn, i, &offset, &bytes) != CUDA_SUCCESS)
      break;
    if (!args || !args[i])
      return cudaErrorInvalidValue;
    std::memcpy(n.params.data() + offset, args[i], bytes);
    n.paramOffsets.push_back(offset);
  }
  return cudaSuccess;
}

cudaError_t setKernelParams(CUgraphNode_st &n, const cudaKernelNodeParams &p) {
  if (p.extra) {
    log(1, "kernel node parameters given through 'extra' are not supported "
           "yet; use kernelParams");
    return cudaErrorNotSupported;
  }
  CUfunction fn;
  cudaError_t e = resolveFunction(p.func, fn);
  if (e != cudaSuccess)
    return e;
  n.func = p.func;
  n.fn = fn;
  n.grid = p.gridDim;
  n.block = p.blockDim;
  n.shared = p.sharedMemBytes;
  return packParams(n, p.kernelParams);
}

cudaError_t addNode(CUgraph_st *graph, const cudaGraphNode_t *deps,
                    size_t numDeps, std::unique_ptr<CUgraphNode_st> node,
                    cudaGraphNode_t *out) {
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.graphs.count(graph) || (numDeps && !deps))
    return cudaErrorInvalidValue;
  for (size_t i = 0; i < numDeps; ++i) {
    if (!deps[i] || deps[i]->graph != graph)
      return cudaErrorInvalidValue;
    node->deps.push_back(deps[i]);
  }
  if (!adoptMemoryNode(*graph, *node, "cudaGraphAddMemFreeNode"))
    return cudaErrorNotSupported;
  node->graph = graph;
  if (out)
    *out = node.get();
  graph->nodes.push_back(std::move(node));
  return cudaSuccess;
}

void mergeDeps(std::vector<CUgraphNode_st *> &deps,
               const std::vector<CUgraphNode_st *> &more);

/// Destroys `graph` (g.mu held) and, first, the child graphs its nodes own.
void destroyGraphLocked(Graphs &g, CUgraph_st *graph) {
  for (auto &n : graph->nodes)
    if (n->child)
      destroyGraphLocked(g, n->child);
  g.graphs.erase(graph);
  delete graph;
}

/// The graph memory `graph` and its child graphs hold (g.mu held).
void collectMemory(const CUgraph_st &graph,
                   std::vector<std::shared_ptr<GraphMemory>> &out) {
  for (const std::shared_ptr<GraphMemory> &m : graph.memory)
    if (std::find(out.begin(), out.end(), m) == out.end())
      out.push_back(m);
  for (auto &n : graph.nodes)
    if (n->child)
      collectMemory(*n->child, out);
}

/// Whether `graph` is a child graph node's own (g.mu held).
bool isChildGraphLocked(Graphs &g, const CUgraph_st *graph) {
  for (const CUgraph_st *other : g.graphs)
    for (auto &n : other->nodes)
      if (n->child == graph)
        return true;
  return false;
}

/// A copy of `original` (g.mu held), registered: its nodes and edges, and
/// copies of their child graphs. Each node remembers the one it copies
/// (cudaGraphNodeFindInClone).
CUgraph_st *cloneGraphLocked(Graphs &g, const CUgraph_st &original) {
  auto *copy = new CUgraph_st;
  g.graphs.insert(copy);
  copy->memory = original.memory;
  std::unordered_map<const CUgraphNode_st *, CUgraphNode_st *> of;
  for (auto &n : original.nodes) {
    auto c = std::make_unique<CUgraphNode_st>(*n);
    c->graph = copy;
    c->paramPointers.clear(); // made again by GetParams, into its own copy
    c->original = n.get();
    if (n->child)
      c->child = cloneGraphLocked(g, *n->child);
    of[n.get()] = c.get();
    copy->nodes.push_back(std::move(c));
  }
  for (auto &c : copy->nodes)
    for (CUgraphNode_st *&d : c->deps)
      d = of.at(d);
  return copy;
}

/// Appends to `out` copies of `graph`'s nodes in an order that respects
/// their edges, with child graphs expanded in place (nested ones too): a
/// child graph's first nodes depend on what its node depended on, and
/// what depended on its node depends on its last nodes. Nodes of `graph`
/// without dependencies depend on `entry`. `from[i]` is the node `out[i]`
/// copies; `leaves` gets the copies nothing in `graph` depends on (or
/// `entry`, for an empty graph). False where the graph has a cycle.
bool flattenGraph(const CUgraph_st &graph,
                  const std::vector<CUgraphNode_st *> &entry,
                  std::vector<std::unique_ptr<CUgraphNode_st>> &out,
                  std::vector<const CUgraphNode_st *> &from,
                  std::vector<CUgraphNode_st *> &leaves) {
  // Kahn's algorithm, stable: ready nodes come in the order they were added.
  std::unordered_map<const CUgraphNode_st *, size_t> pending;
  std::unordered_map<const CUgraphNode_st *,
                     std::vector<const CUgraphNode_st *>>
      users;
  std::vector<const CUgraphNode_st *> order;
  for (auto &n : graph.nodes) {
    pending[n.get()] = n->deps.size();
    for (const CUgraphNode_st *d : n->deps)
      users[d].push_back(n.get());
    if (n->deps.empty())
      order.push_back(n.get());
  }
  for (size_t i = 0; i < order.size(); ++i)
    for (const CUgraphNode_st *u : users[order[i]])
      if (--pending[u] == 0)
        order.push_back(u);
  if (order.size() != graph.nodes.size())
    return false;
  // What each node's completion is: its copy, or a child graph's last
  // nodes.
  std::unordered_map<const CUgraphNode_st *, std::vector<CUgraphNode_st *>>
      done;
  for (const CUgraphNode_st *n : order) {
    std::vector<CUgraphNode_st *> deps =
        n->deps.empty() ? entry : std::vector<CUgraphNode_st *>();
    for (const CUgraphNode_st *d : n->deps)
      mergeDeps(deps, done.at(d));
    if (n->type == cudaGraphNodeTypeGraph) {
      std::vector<CUgraphNode_st *> last;
      if (!n->child || !flattenGraph(*n->child, deps, out, from, last))
        return false;
      done[n] = std::move(last);
      continue;
    }
    auto copy = std::make_unique<CUgraphNode_st>(*n);
    copy->deps = std::move(deps);
    done[n] = {copy.get()};
    from.push_back(n);
    out.push_back(std::move(copy));
  }
  leaves.clear();
  for (const CUgraphNode_st *n : order)
    if (users[n].empty())
      mergeDeps(leaves, done.at(n));
  if (graph.nodes.empty())
    leaves = entry;
  return true;
}

/// For each of `flat`'s nodes, the positions in `flat` of those it depends
/// on, ascending.
std::vector<std::vector<size_t>>
depPositions(const std::vector<std::unique_ptr<CUgraphNode_st>> &flat) {
  std::unordered_map<const CUgraphNode_st *, size_t> at;
  for (size_t i = 0; i < flat.size(); ++i)
    at[flat[i].get()] = i;
  std::vector<std::vector<size_t>> deps(flat.size());
  for (size_t i = 0; i < flat.size(); ++i) {
    for (const CUgraphNode_st *d : flat[i]->deps)
      deps[i].push_back(at.at(d));
    std::sort(deps[i].begin(), deps[i].end());
  }
  return deps;
}

/// Appends a node to the capture of `stream`, after the capture's last node.
cudaError_t captureNode(cudaStream_t stream,
                        std::unique_ptr<CUgraphNode_st> node) {
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  auto it = g.captures.find(stream);
  if (it == g.captures.end())
    return cudaErrorStreamCaptureInvalidated;
  Capture &c = it->second;
  if (!adoptMemoryNode(*c.graph, *node, "cudaFreeAsync in a stream capture"))
    return cudaErrorStreamCaptureUnsupported;
  node->graph = c.graph;
  node->deps = c.deps;
  c.deps.assign(1, node.get());
  c.graph->nodes.push_back(std::move(node));
  return cudaSuccess;
}

/// Adds `more` to `deps`, each node once.
void mergeDeps(std::vector<CUgraphNode_st *> &deps,
               const std::vector<CUgraphNode_st *> &more) {
  for (CUgraphNode_st *n : more)
    if (std::find(deps.begin(), deps.end(), n) == deps.end())
      deps.push_back(n);
}

/// Ends capture `id` (g.mu held): its streams stop capturing, its events
/// are forgotten.
void endCaptureLocked(Graphs &g, unsigned long long id) {
  for (auto it = g.captures.begin(); it != g.captures.end();) {
    if (it->second.id == id) {
      it = g.captures.erase(it);
      --activeCaptures;
    } else {
      ++it;
    }
  }
  for (auto e = g.capturedEvents.begin(); e != g.capturedEvents.end();)
    e = e->second.id == id ? g.capturedEvents.erase(e) : std::next(e);
}

/// Whether the server can keep `n` in a graph: it needs nothing from this
/// process's memory when it runs.
bool serverNode(const CUgraphNode_st &n) {
  switch (n.type) {
  case cudaGraphNodeTypeKernel:
  case cudaGraphNodeTypeEventRecord:
  case cudaGraphNodeTypeWaitEvent:
  case cudaGraphNodeTypeEmpty:
  case cudaGraphNodeTypeMemAlloc: // graph memory: made with the node
  case cudaGraphNodeTypeMemFree:
    return true;
  case cudaGraphNodeTypeMemset: {
    // Byte-wise: every byte of an element the same.
    for (unsigned i = 1; i < n.elementSize; ++i)
      if (((n.value >> (8 * i)) & 0xff) != (n.value & 0xff))
        return false;
    return true;
  }
  case cudaGraphNodeTypeMemcpy:
    if (n.copy3d)
      return false; // the client runs it (cudaMemcpy3DAsync)
    return n.kind == cudaMemcpyDeviceToDevice ||
           (n.kind == cudaMemcpyDefault &&
            driverIsDevicePointer(n.dst, n.bytes) &&
            driverIsDevicePointer(n.src, n.bytes));
  default:
    return false;
  }
}

/// The calls that keep the segment's nodes on the server.
std::vector<GraphCall> serverCalls(CUgraphExec_st &exec, const Segment &seg) {
  std::vector<GraphCall> calls;
  for (size_t i = seg.begin; i < seg.end; ++i) {
    const CUgraphNode_st &n = exec.order[i];
    if (n.disabled)
      continue;
    GraphCall c;
    switch (n.type) {
    case cudaGraphNodeTypeKernel:
      c.kind = GraphCall::Kind::Launch;
      c.fn = n.fn;
      c.grid[0] = n.grid.x, c.grid[1] = n.grid.y, c.grid[2] = n.grid.z;
      c.block[0] = n.block.x, c.block[1] = n.block.y, c.block[2] = n.block.z;
      c.shared = n.shared;
      c.params = n.params.data();
      c.paramBytes = n.params.size();
      calls.push_back(c);
      break;
    case cudaGraphNodeTypeMemset:
      c.kind = GraphCall::Kind::Memset;
      c.value = (unsigned char)n.value;
      c.bytes = n.width * n.elementSize;
      for (size_t row = 0; row < n.height; ++row) {
        c.dst = reinterpret_cast<CUdeviceptr>(n.dst) + row * n.pitch;
        calls.push_back(c);
      }
      break;
    case cudaGraphNodeTypeMemcpy:
      c.kind = GraphCall::Kind::CopyDeviceToDevice;
      c.dst = reinterpret_cast<CUdeviceptr>(n.dst);
      c.src = reinterpret_cast<CUdeviceptr>(n.src);
      c.bytes = n.bytes;
      calls.push_back(c);
      break;
    case cudaGraphNodeTypeEventRecord:
    case cudaGraphNodeTypeWaitEvent:
      c.kind = n.type == cudaGraphNodeTypeEventRecord
                   ? GraphCall::Kind::EventRecord
                   : GraphCall::Kind::EventWait;
      c.event = n.event;
      calls.push_back(c);
      break;
    default:
      break;
    }
  }
  return calls;
}

/// Forgets the server's copy of `seg` (its nodes' parameters changed, or
/// the exec goes): it is made again at the next launch.
void forgetServerGraph(Segment &seg) {
  if (seg.handle)
    (void)driverGraphDestroy(seg.handle);
  seg.handle = 0;
}

/// Issues one node on `stream`.
cudaError_t runNode(CUgraphNode_st &n, cudaStream_t stream) {
  CUresult r = CUDA_SUCCESS;
  if (n.disabled)
    return cudaSuccess;
  switch (n.type) {
  case cudaGraphNodeTypeKernel: {
    size_t size = n.params.size();
    void *extra[] = {kLaunchParamBufferPointer, n.params.data(),
                     kLaunchParamBufferSize, &size, kLaunchParamEnd};
    r = cuLaunchKernel(n.fn, n.grid.x, n.grid.y, n.grid.z, n.block.x, n.block.y,
                       n.block.z, n.shared, stream, nullptr, extra);
    break;
  }
  case cudaGraphNodeTypeMemcpy:
    if (n.copy3d)
      return cudaMemcpy3DAsync(&*n.copy3d, stream);
    return wooly::capture::memcpy(n.dst, n.src, n.bytes, n.kind, stream, true);
  case cudaGraphNodeTypeMemset:
    for (size_t row = 0; row < n.height && r == CUDA_SUCCESS; ++row) {
      auto d = reinterpret_cast<CUdeviceptr>(n.dst) + row * n.pitch;
      switch (n.elementSize) {
      case 1:
        r = cuMemsetD8Async(d, (unsigned char)n.value, n.width, stream);
        break;
      case 2:
        r = cuMemsetD16Async(d, (unsigned short)n.value, n.width, stream);
        break;
      default:
        r = cuMemsetD32Async(d, n.value, n.width, stream);
        break;
      }
    }
    break;
  case cudaGraphNodeTypeHost:
    r = cuLaunchHostFunc(stream, n.host, n.userData);
    break;
  case cudaGraphNodeTypeEventRecord:
    r = cuEventRecord(n.event, stream);
    break;
  case cudaGraphNodeTypeWaitEvent:
    r = cuStreamWaitEvent(stream, n.event, 0);
    break;
  default:
    break;
  }
  return static_cast<cudaError_t>(r);
}

} // namespace

//===----------------------------------------------------------------------===//
// Capture hooks (Runtime.h)
//===----------------------------------------------------------------------===//

namespace wooly::capture {

bool isCapturing(cudaStream_t stream) {
  if (activeCaptures.load(std::memory_order_relaxed) == 0)
    return false;
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.captures.count(stream) != 0;
}

cudaError_t captureMemAlloc(cudaStream_t stream, void *ptr, size_t bytes) {
  auto node = std::make_unique<CUgraphNode_st>();
  node->type = cudaGraphNodeTypeMemAlloc;
  node->dst = ptr;
  node->bytes = bytes;
  return captureNode(stream, std::move(node));
}

cudaError_t captureMemFree(cudaStream_t stream, void *ptr) {
  auto node = std::make_unique<CUgraphNode_st>();
  node->type = cudaGraphNodeTypeMemFree;
  node->dst = ptr;
  return captureNode(stream, std::move(node));
}

void forgetGraphMemory(void *ptr) {
  GraphAllocations &a = graphAllocations();
  std::lock_guard<std::mutex> lock(a.mu);
  auto it = a.live.find(ptr);
  if (it == a.live.end())
    return;
  a.used -= it->second.first;
  a.live.erase(it);
}

cudaError_t captureKernel(cudaStream_t stream, const void *func, CUfunction fn,
                          dim3 grid, dim3 block, void **args, size_t shared) {
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeKernel;
  n->func = func;
  n->fn = fn;
  n->grid = grid;
  n->block = block;
  n->shared = (unsigned)shared;
  cudaError_t e = packParams(*n, args);
  if (e != cudaSuccess)
    return e;
  return captureNode(stream, std::move(n));
}

cudaError_t captureMemcpy(cudaStream_t stream, void *dst, const void *src,
                          size_t bytes, cudaMemcpyKind kind) {
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeMemcpy;
  n->dst = dst;
  n->src = src;
  n->bytes = bytes;
  n->kind = kind;
  return captureNode(stream, std::move(n));
}

cudaError_t captureMemset(cudaStream_t stream, void *dst, unsigned value,
                          unsigned elementSize, size_t width, size_t height,
                          size_t pitch) {
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeMemset;
  n->dst = dst;
  n->value = value;
  n->elementSize = elementSize;
  n->width = width;
  n->height = height;
  n->pitch = pitch;
  return captureNode(stream, std::move(n));
}

cudaError_t captureHost(cudaStream_t stream, cudaHostFn_t fn, void *data) {
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeHost;
  n->host = fn;
  n->userData = data;
  return captureNode(stream, std::move(n));
}

cudaError_t captureEventRecord(cudaStream_t stream, cudaEvent_t event) {
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeEventRecord;
  n->event = event;
  cudaError_t e = captureNode(stream, std::move(n));
  if (e == cudaSuccess) {
    Graphs &g = graphs();
    std::lock_guard<std::mutex> lock(g.mu);
    auto it = g.captures.find(stream); // ended meanwhile by another thread?
    if (it != g.captures.end())
      g.capturedEvents[event] = CapturedEvent{it->second.id, it->second.deps};
  }
  return e;
}

bool recordedByCapture(cudaEvent_t event) {
  if (activeCaptures.load(std::memory_order_relaxed) == 0)
    return false;
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.capturedEvents.count(event) != 0;
}

cudaError_t captureEventWait(cudaStream_t stream, cudaEvent_t event) {
  {
    Graphs &g = graphs();
    std::lock_guard<std::mutex> lock(g.mu);
    auto recorded = g.capturedEvents.find(event);
    if (recorded != g.capturedEvents.end()) {
      auto it = g.captures.find(stream);
      if (it == g.captures.end()) {
        // A fork: the stream joins the capture after the event's nodes.
        const Capture *from = nullptr;
        for (const auto &[s, c] : g.captures)
          if (c.id == recorded->second.id)
            from = &c;
        if (!from)
          return cudaErrorStreamCaptureInvalidated;
        Capture joined{from->graph, recorded->second.deps, from->id,
                       from->origin};
        g.captures[stream] = std::move(joined);
        ++activeCaptures;
        return cudaSuccess;
      }
      // A join within the capture: no node, only dependencies.
      if (it->second.id != recorded->second.id)
        return cudaErrorStreamCaptureIsolation;
      mergeDeps(it->second.deps, recorded->second.deps);
      return cudaSuccess;
    }
  }
  // An event from outside the capture: waited for where the graph runs.
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeWaitEvent;
  n->event = event;
  return captureNode(stream, std::move(n));
}

void forgetGraphs() {
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  activeCaptures -= (int)g.captures.size();
  g.captures.clear();
  g.capturedEvents.clear();
  // Their kernels, events and server graphs were the old session's, and
  // so is graph memory: nothing of it is freed again.
  for (CUgraphExec_st *exec : g.execs)
    exec->reset = true;
  GraphAllocations &a = graphAllocations();
  std::lock_guard<std::mutex> memoryLock(a.mu);
  a.live.clear();
  a.used = 0;
}

} // namespace wooly::capture

//===----------------------------------------------------------------------===//
// Stream capture
//===----------------------------------------------------------------------===//

RT_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                          cudaStreamCaptureMode mode) {
  (void)mode;
  if (isSpecialStream(stream))
    return setError(cudaErrorStreamCaptureUnsupported);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.captures.count(stream))
    return setError(cudaErrorIllegalState);
  auto *graph = new CUgraph_st;
  g.graphs.insert(graph);
  g.captures[stream] = Capture{graph, {}, g.nextCaptureId++, stream};
  ++activeCaptures;
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamEndCapture(cudaStream_t stream,
                                        cudaGraph_t *graph) {
  if (!graph)
    return setError(cudaErrorInvalidValue);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  auto it = g.captures.find(stream);
  if (it == g.captures.end())
    return setError(cudaErrorIllegalState);
  const Capture &c = it->second;
  if (c.origin != stream)
    return setError(cudaErrorStreamCaptureUnmatched); // a stream that joined
  // Every stream that joined the capture must have been joined back: what
  // it did last is something the capture's stream depends on.
  std::unordered_set<const CUgraphNode_st *> before;
  std::vector<const CUgraphNode_st *> work(c.deps.begin(), c.deps.end());
  while (!work.empty()) {
    const CUgraphNode_st *n = work.back();
    work.pop_back();
    if (before.insert(n).second)
      work.insert(work.end(), n->deps.begin(), n->deps.end());
  }
  bool joined = true;
  for (const auto &[s, other] : g.captures)
    if (other.id == c.id && s != stream)
      for (const CUgraphNode_st *n : other.deps)
        joined &= before.count(n) != 0;
  CUgraph_st *captured = c.graph;
  endCaptureLocked(g, c.id);
  if (!joined) {
    log(1, "cudaStreamEndCapture: a stream that joined the capture (waited "
           "for an event recorded in it) was not joined back (the capture's "
           "stream never waited for an event recorded after its work)");
    destroyGraphLocked(g, captured);
    return setError(cudaErrorStreamCaptureUnjoined);
  }
  *graph = captured;
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                         cudaStreamCaptureStatus *status) {
  if (!status)
    return setError(cudaErrorInvalidValue);
  *status = isCapturing(stream) ? cudaStreamCaptureStatusActive
                                : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

RT_API cudaError_t cudaStreamGetCaptureInfo(
    cudaStream_t stream, cudaStreamCaptureStatus *status,
    unsigned long long *id, cudaGraph_t *graph, const cudaGraphNode_t **deps,
    const void **edges, size_t *numDeps) {
  if (!status)
    return setError(cudaErrorInvalidValue);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  auto it = g.captures.find(stream);
  if (it == g.captures.end()) {
    *status = cudaStreamCaptureStatusNone;
    return cudaSuccess;
  }
  Capture &c = it->second;
  *status = cudaStreamCaptureStatusActive;
  if (id)
    *id = c.id;
  if (graph)
    *graph = c.graph;
  if (deps)
    *deps = c.deps.empty() ? nullptr : c.deps.data();
  if (edges)
    *edges = nullptr;
  if (numDeps)
    *numDeps = c.deps.size();
  return cudaSuccess;
}

/// Replaces (cudaStreamSetCaptureDependencies, 1) or adds to
/// (cudaStreamAddCaptureDependencies, 0) the nodes the stream's next
/// captured work depends on: nodes of the capture's graph, without edge
/// data.
RT_API cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream,
                                                       cudaGraphNode_t *deps,
                                                       const void *edgeData,
                                                       size_t numDeps,
                                                       unsigned flags) {
  if ((numDeps && !deps) || flags > 1 || edgeData)
    return setError(edgeData ? cudaErrorNotSupported : cudaErrorInvalidValue);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  auto it = g.captures.find(stream);
  if (it == g.captures.end())
    return setError(cudaErrorIllegalState);
  Capture &c = it->second;
  for (size_t i = 0; i < numDeps; ++i)
    if (!deps[i] || deps[i]->graph != c.graph)
      return setError(cudaErrorInvalidValue);
  std::vector<CUgraphNode_st *> nodes(deps, deps + numDeps);
  if (flags == 1)
    c.deps.clear();
  mergeDeps(c.deps, nodes);
  return cudaSuccess;
}

RT_API cudaError_t
cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode *mode) {
  if (!mode)
    return setError(cudaErrorInvalidValue);
  std::swap(*mode, captureMode);
  return cudaSuccess;
}

//===----------------------------------------------------------------------===//
// The explicit graph API
//===----------------------------------------------------------------------===//

RT_API cudaError_t cudaGraphCreate(cudaGraph_t *graph, unsigned flags) {
  if (!graph || flags)
    return setError(cudaErrorInvalidValue);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  *graph = new CUgraph_st;
  g.graphs.insert(*graph);
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.graphs.count(graph) || isChildGraphLocked(g, graph))
    return setError(cudaErrorInvalidValue); // a node's: it goes with it
  destroyGraphLocked(g, graph);
  return cudaSuccess;
}

/// A child graph node: runs a copy of `child`, made now (CUDA's semantics:
/// later changes to `child` do not reach the node).
RT_API cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t *node,
                                              cudaGraph_t graph,
                                              const cudaGraphNode_t *deps,
                                              size_t numDeps,
                                              cudaGraph_t child) {
  if (!node)
    return setError(cudaErrorInvalidValue);
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeGraph;
  Graphs &g = graphs();
  {
    std::lock_guard<std::mutex> lock(g.mu);
    if (!g.graphs.count(child) || child == graph)
      return setError(cudaErrorInvalidValue);
    n->child = cloneGraphLocked(g, *child);
  }
  CUgraph_st *copy = n->child;
  cudaError_t e = addNode(graph, deps, numDeps, std::move(n), node);
  if (e != cudaSuccess) {
    std::lock_guard<std::mutex> lock(g.mu);
    destroyGraphLocked(g, copy);
  }
  return setError(e);
}

/// The node's own graph: its nodes may be read and changed (not destroyed).
RT_API cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node,
                                                   cudaGraph_t *graph) {
  if (!node || !graph || node->type != cudaGraphNodeTypeGraph)
    return setError(cudaErrorInvalidValue);
  *graph = node->child;
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *node,
                                          cudaGraph_t graph,
                                          const cudaGraphNode_t *deps,
                                          size_t numDeps,
                                          const cudaKernelNodeParams *params) {
  if (!node || !params)
    return setError(cudaErrorInvalidValue);
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeKernel;
  cudaError_t e = setKernelParams(*n, *params);
  if (e != cudaSuccess)
    return setError(e);
  return setError(addNode(graph, deps, numDeps, std::move(n), node));
}

namespace {
/// Sets memcpy node `n` from 3D parameters: as `bytes` from `src` to `dst`
/// where they describe one run of bytes (no arrays; a single row, or rows
/// and slices that follow each other on both sides), else as `copy3d`.
cudaError_t setMemcpyParams(CUgraphNode_st &n, const cudaMemcpy3DParms &p) {
  if ((p.srcArray == nullptr) == (p.srcPtr.ptr == nullptr) ||
      (p.dstArray == nullptr) == (p.dstPtr.ptr == nullptr))
    return cudaErrorInvalidValue;
  const cudaExtent &e = p.extent;
  auto runs = [&](const cudaPitchedPtr &ptr) {
    return (e.height <= 1 && e.depth <= 1) ||
           (e.width == ptr.pitch && (e.depth <= 1 || e.height == ptr.ysize));
  };
  n.copy3d.reset();
  n.kind = p.kind;
  if (p.srcArray || p.dstArray || !runs(p.srcPtr) || !runs(p.dstPtr)) {
    n.copy3d = p;
    n.dst = nullptr;
    n.src = nullptr;
    n.bytes = 0;
    return cudaSuccess;
  }
  auto at = [](const cudaPitchedPtr &ptr, const cudaPos &pos) {
    return static_cast<char *>(ptr.ptr) +
           (pos.z * ptr.ysize + pos.y) * ptr.pitch + pos.x;
  };
  n.dst = at(p.dstPtr, p.dstPos);
  n.src = at(p.srcPtr, p.srcPos);
  n.bytes =
      e.width * std::max<size_t>(e.height, 1) * std::max<size_t>(e.depth, 1);
  return cudaSuccess;
}

/// Sets memcpy node `n` to `count` bytes from `src` to `dst`.
void setMemcpy1D(CUgraphNode_st &n, void *dst, const void *src, size_t count,
                 cudaMemcpyKind kind) {
  n.copy3d.reset();
  n.dst = dst;
  n.src = src;
  n.bytes = count;
  n.kind = kind;
}

/// A memcpy node's parameters as 3D ones.
cudaMemcpy3DParms memcpyParams(const CUgraphNode_st &n) {
  if (n.copy3d)
    return *n.copy3d;
  cudaMemcpy3DParms p = {};
  p.srcPtr = {const_cast<void *>(n.src), n.bytes, n.bytes, 1};
  p.dstPtr = {n.dst, n.bytes, n.bytes, 1};
  p.extent = {n.bytes, 1, 1};
  p.kind = n.kind;
  return p;
}

cudaError_t setMemsetParams(CUgraphNode_st &n, const cudaMemsetParams &p) {
  if (!p.dst ||
      (p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4) ||
      (p.height > 1 && p.pitch < p.width * p.elementSize))
    return cudaErrorInvalidValue;
  n.dst = p.dst;
  n.value = p.value;
  n.elementSize = p.elementSize;
  n.width = p.width;
  n.height = p.height ? p.height : 1;
  n.pitch = p.pitch;
  return cudaSuccess;
}
} // namespace

RT_API cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *node,
                                            cudaGraph_t graph,
                                            const cudaGraphNode_t *deps,
                                            size_t numDeps, void *dst,
                                            const void *src, size_t count,
                                            cudaMemcpyKind kind) {
  if (!node)
    return setError(cudaErrorInvalidValue);
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeMemcpy;
  setMemcpy1D(*n, dst, src, count, kind);
  return setError(addNode(graph, deps, numDeps, std::move(n), node));
}

RT_API cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t *node,
                                          cudaGraph_t graph,
                                          const cudaGraphNode_t *deps,
                                          size_t numDeps,
                                          const cudaMemcpy3DParms *params) {
  if (!node || !params)
    return setError(cudaErrorInvalidValue);
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeMemcpy;
  if (cudaError_t e = setMemcpyParams(*n, *params))
    return setError(e);
  return setError(addNode(graph, deps, numDeps, std::move(n), node));
}

RT_API cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *node,
                                          cudaGraph_t graph,
                                          const cudaGraphNode_t *deps,
                                          size_t numDeps,
                                          const cudaMemsetParams *params) {
  if (!node || !params)
    return setError(cudaErrorInvalidValue);
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeMemset;
  if (cudaError_t e = setMemsetParams(*n, *params))
    return setError(e);
  return setError(addNode(graph, deps, numDeps, std::move(n), node));
}

RT_API cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *node,
                                        cudaGraph_t graph,
                                        const cudaGraphNode_t *deps,
                                        size_t numDeps,
                                        const cudaHostNodeParams *params) {
  if (!node || !params || !params->fn)
    return setError(cudaErrorInvalidValue);
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeHost;
  n->host = params->fn;
  n->userData = params->userData;
  return setError(addNode(graph, deps, numDeps, std::move(n), node));
}

GraphMemory::~GraphMemory() {
  for (void *ptr : ptrs) {
    {
      GraphAllocations &a = graphAllocations();
      std::lock_guard<std::mutex> lock(a.mu);
      auto it = a.live.find(ptr);
      if (it == a.live.end() || it->second.second != this)
        continue; // the program freed it, or a device reset did
      a.used -= it->second.first;
      a.live.erase(it);
    }
    freeGraphMemory(ptr);
  }
}

/// An allocation node: the allocation is made now, on the one device, and
/// its address is `params->dptr` (graph memory, above).
RT_API cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *node,
                                            cudaGraph_t graph,
                                            const cudaGraphNode_t *deps,
                                            size_t numDeps,
                                            cudaMemAllocNodeParams *params) {
  if (!node || !params || !params->bytesize ||
      params->poolProps.allocType != cudaMemAllocationTypePinned ||
      params->poolProps.location.type != cudaMemLocationTypeDevice)
    return setError(cudaErrorInvalidValue);
  if (params->poolProps.location.id != 0)
    return setError(cudaErrorInvalidDevice);
  void *ptr = nullptr;
  if (cudaError_t e = allocateForGraph(&ptr, params->bytesize))
    return e;
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeMemAlloc;
  n->dst = ptr;
  n->bytes = params->bytesize;
  if (cudaError_t e = addNode(graph, deps, numDeps, std::move(n), node)) {
    freeGraphMemory(ptr);
    return setError(e);
  }
  params->dptr = ptr;
  return cudaSuccess;
}

/// A free node: of an allocation of the same graph (others are not
/// supported yet); the memory goes with the graph.
RT_API cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *node,
                                           cudaGraph_t graph,
                                           const cudaGraphNode_t *deps,
                                           size_t numDeps, void *ptr) {
  if (!node || !ptr)
    return setError(cudaErrorInvalidValue);
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = cudaGraphNodeTypeMemFree;
  n->dst = ptr;
  return setError(addNode(graph, deps, numDeps, std::move(n), node));
}

/// The parameters of memory node `node` (of `type`): its allocation and,
/// for an allocation node, its size. Null where `node` is no such node.
static cudaError_t memoryNodeParams(cudaGraphNode_t node,
                                    cudaGraphNodeType type, void **ptr,
                                    cudaMemAllocNodeParams *params) {
  if (!node || node->type != type || (!ptr && !params))
    return setError(cudaErrorInvalidValue);
  if (ptr)
    *ptr = node->dst;
  if (params) {
    std::memset(params, 0, sizeof *params);
    params->poolProps.allocType = cudaMemAllocationTypePinned;
    params->poolProps.location = {cudaMemLocationTypeDevice, 0};
    params->bytesize = node->bytes;
    params->dptr = node->dst;
  }
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphMemAllocNodeGetParams(
    cudaGraphNode_t node, cudaMemAllocNodeParams *params) {
  return memoryNodeParams(node, cudaGraphNodeTypeMemAlloc, nullptr, params);
}

RT_API cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node,
                                                 void *ptrOut) {
  return memoryNodeParams(node, cudaGraphNodeTypeMemFree,
                          static_cast<void **>(ptrOut), nullptr);
}

/// Graph memory is freed with its graphs: there is nothing to trim.
RT_API cudaError_t cudaDeviceGraphMemTrim(int device) {
  return setError(device == 0 ? cudaSuccess : cudaErrorInvalidDevice);
}

/// cudaGraphMemAttrUsedMemCurrent (0), UsedMemHigh (1), ReservedMemCurrent
/// (2) and ReservedMemHigh (3): the bytes of live graph memory (nothing is
/// reserved beyond it).
RT_API cudaError_t cudaDeviceGetGraphMemAttribute(int device, int attr,
                                                  void *value) {
  if (device != 0)
    return setError(cudaErrorInvalidDevice);
  if (!value || attr < 0 || attr > 3)
    return setError(cudaErrorInvalidValue);
  GraphAllocations &a = graphAllocations();
  std::lock_guard<std::mutex> lock(a.mu);
  *static_cast<uint64_t *>(value) = attr % 2 ? a.usedHigh : a.used;
  return cudaSuccess;
}

/// Resets a high-water mark (UsedMemHigh, ReservedMemHigh) to 0: to the
/// current use, as CUDA does.
RT_API cudaError_t cudaDeviceSetGraphMemAttribute(int device, int attr,
                                                  void *value) {
  if (device != 0)
    return setError(cudaErrorInvalidDevice);
  if (!value || (attr != 1 && attr != 3) ||
      *static_cast<uint64_t *>(value) != 0)
    return setError(cudaErrorInvalidValue);
  GraphAllocations &a = graphAllocations();
  std::lock_guard<std::mutex> lock(a.mu);
  a.usedHigh = a.used;
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *node,
                                         cudaGraph_t graph,
                                         const cudaGraphNode_t *deps,
                                         size_t numDeps) {
  if (!node)
    return setError(cudaErrorInvalidValue);
  return setError(
      addNode(graph, deps, numDeps, std::make_unique<CUgraphNode_st>(), node));
}

namespace {
cudaError_t addEventNode(cudaGraphNodeType type, cudaGraphNode_t *node,
                         cudaGraph_t graph, const cudaGraphNode_t *deps,
                         size_t numDeps, cudaEvent_t event) {
  if (!node || !event)
    return setError(cudaErrorInvalidValue);
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = type;
  n->event = event;
  return setError(addNode(graph, deps, numDeps, std::move(n), node));
}
} // namespace

RT_API cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *node,
                                               cudaGraph_t graph,
                                               const cudaGraphNode_t *deps,
                                               size_t numDeps,
                                               cudaEvent_t event) {
  return addEventNode(cudaGraphNodeTypeEventRecord, node, graph, deps, numDeps,
                      event);
}

RT_API cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t *node,
                                             cudaGraph_t graph,
                                             const cudaGraphNode_t *deps,
                                             size_t numDeps,
                                             cudaEvent_t event) {
  return addEventNode(cudaGraphNodeTypeWaitEvent, node, graph, deps, numDeps,
                      event);
}

namespace {
/// Whether `count` edges from[i] -> to[i] name nodes of `graph` (a graph
/// of `g`, whose lock the caller holds).
bool edgesOf(Graphs &g, cudaGraph_t graph, const cudaGraphNode_t *from,
             const cudaGraphNode_t *to, size_t count) {
  if (!g.graphs.count(graph) || (count && (!from || !to)))
    return false;
  for (size_t i = 0; i < count; ++i)
    if (!from[i] || !to[i] || from[i]->graph != graph || to[i]->graph != graph)
      return false;
  return true;
}
} // namespace

RT_API cudaError_t cudaGraphAddDependencies(cudaGraph_t graph,
                                            const cudaGraphNode_t *from,
                                            const cudaGraphNode_t *to,
                                            const void *edgeData,
                                            size_t count) {
  (void)edgeData;
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!edgesOf(g, graph, from, to, count))
    return setError(cudaErrorInvalidValue);
  for (size_t i = 0; i < count; ++i)
    to[i]->deps.push_back(from[i]);
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph,
                                               const cudaGraphNode_t *from,
                                               const cudaGraphNode_t *to,
                                               const void *edgeData,
                                               size_t count) {
  (void)edgeData;
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!edgesOf(g, graph, from, to, count))
    return setError(cudaErrorInvalidValue);
  // Every edge must exist; none is removed otherwise.
  for (size_t i = 0; i < count; ++i) {
    size_t have = std::count(to[i]->deps.begin(), to[i]->deps.end(), from[i]);
    size_t asked = 0;
    for (size_t j = 0; j < count; ++j)
      asked += to[j] == to[i] && from[j] == from[i];
    if (have < asked)
      return setError(cudaErrorInvalidValue);
  }
  for (size_t i = 0; i < count; ++i) {
    auto &deps = to[i]->deps;
    deps.erase(std::find(deps.begin(), deps.end(), from[i]));
  }
  return cudaSuccess;
}

namespace {
/// sizeof(cudaGraphEdgeData): ports and a type, all 0 for a default edge.
constexpr size_t kEdgeDataBytes = 8;

/// The answer of the graph queries (cudaGraphGetNodes, ...): with no
/// `out`, how many there are; else the first `*count` of them (the rest of
/// `out` null), and in `*count` how many were written. `edgeData`, where
/// given, gets the default edge (all zero) for each.
void listNodes(const std::vector<CUgraphNode_st *> &all, cudaGraphNode_t *out,
               void *edgeData, size_t *count) {
  if (!out) {
    *count = all.size();
    return;
  }
  size_t n = std::min(*count, all.size());
  std::copy_n(all.begin(), n, out);
  std::fill(out + n, out + *count, nullptr);
  if (edgeData)
    std::memset(edgeData, 0, n * kEdgeDataBytes);
  *count = n;
}
} // namespace

namespace {
/// The nodes `pick` accepts from `graph`'s, listed (listNodes) under the
/// graphs' lock, where `graph` is a graph and `count` is not null.
template <typename F>
cudaError_t queryNodes(cudaGraph_t graph, cudaGraphNode_t *out, size_t *count,
                       F pick) {
  if (!count)
    return setError(cudaErrorInvalidValue);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.graphs.count(graph))
    return setError(cudaErrorInvalidValue);
  std::vector<CUgraphNode_st *> all;
  for (auto &n : graph->nodes)
    if (pick(*n))
      all.push_back(n.get());
  listNodes(all, out, nullptr, count);
  return cudaSuccess;
}
} // namespace

RT_API cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes,
                                     size_t *count) {
  return queryNodes(graph, nodes, count,
                    [](const CUgraphNode_st &) { return true; });
}

RT_API cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph,
                                         cudaGraphNode_t *roots,
                                         size_t *count) {
  return queryNodes(graph, roots, count,
                    [](const CUgraphNode_st &n) { return n.deps.empty(); });
}

/// Every edge of `graph` (a dependency of a node on another), in node
/// order.
RT_API cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t *from,
                                     cudaGraphNode_t *to, void *edgeData,
                                     size_t *count) {
  if (!count || bool(from) != bool(to))
    return setError(cudaErrorInvalidValue);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.graphs.count(graph))
    return setError(cudaErrorInvalidValue);
  std::vector<CUgraphNode_st *> froms, tos;
  for (auto &n : graph->nodes)
    for (CUgraphNode_st *d : n->deps) {
      froms.push_back(d);
      tos.push_back(n.get());
    }
  size_t n = *count;
  listNodes(froms, from, edgeData, &n);
  listNodes(tos, to, nullptr, count);
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node,
                                                cudaGraphNode_t *deps,
                                                void *edgeData, size_t *count) {
  if (!node || !count)
    return setError(cudaErrorInvalidValue);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  listNodes(node->deps, deps, edgeData, count);
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node,
                                                  cudaGraphNode_t *dependents,
                                                  void *edgeData,
                                                  size_t *count) {
  if (!node || !count)
    return setError(cudaErrorInvalidValue);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  std::vector<CUgraphNode_st *> all;
  for (auto &n : node->graph->nodes)
    if (std::find(n->deps.begin(), n->deps.end(), node) != n->deps.end())
      all.push_back(n.get());
  listNodes(all, dependents, edgeData, count);
  return cudaSuccess;
}

/// A copy of `original`'s nodes and edges; each node remembers the one it
/// copies (cudaGraphNodeFindInClone).
RT_API cudaError_t cudaGraphClone(cudaGraph_t *clone, cudaGraph_t original) {
  if (!clone)
    return setError(cudaErrorInvalidValue);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.graphs.count(original))
    return setError(cudaErrorInvalidValue);
  *clone = cloneGraphLocked(g, *original);
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t *node,
                                            cudaGraphNode_t original,
                                            cudaGraph_t clone) {
  if (!node || !original)
    return setError(cudaErrorInvalidValue);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.graphs.count(clone))
    return setError(cudaErrorInvalidValue);
  for (auto &n : clone->nodes)
    if (n->original == original) {
      *node = n.get();
      return cudaSuccess;
    }
  return setError(cudaErrorInvalidValue);
}

/// Removes a node and its edges from its graph.
RT_API cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  if (!node)
    return setError(cudaErrorInvalidValue);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  CUgraph_st *graph = node->graph;
  if (!g.graphs.count(graph))
    return setError(cudaErrorInvalidValue);
  for (auto &n : graph->nodes)
    n->deps.erase(std::remove(n->deps.begin(), n->deps.end(), node),
                  n->deps.end());
  auto it = std::find_if(graph->nodes.begin(), graph->nodes.end(),
                         [&](auto &n) { return n.get() == node; });
  if (it != graph->nodes.end()) {
    if ((*it)->child)
      destroyGraphLocked(g, (*it)->child);
    graph->nodes.erase(it);
  }
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node,
                                        cudaGraphNodeType *type) {
  if (!node || !type)
    return setError(cudaErrorInvalidValue);
  *type = node->type;
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node,
                                                cudaKernelNodeParams *params) {
  if (!node || !params || node->type != cudaGraphNodeTypeKernel)
    return setError(cudaErrorInvalidValue);
  params->func = const_cast<void *>(node->func ? node->func
                                               : static_cast<void *>(node->fn));
  params->gridDim = node->grid;
  params->blockDim = node->block;
  params->sharedMemBytes = node->shared;
  node->paramPointers.clear();
  for (size_t offset : node->paramOffsets)
    node->paramPointers.push_back(node->params.data() + offset);
  params->kernelParams = node->paramPointers.data();
  params->extra = nullptr;
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node,
                                                cudaMemcpy3DParms *params) {
  if (!node || !params || node->type != cudaGraphNodeTypeMemcpy)
    return setError(cudaErrorInvalidValue);
  *params = memcpyParams(*node);
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphMemcpyNodeSetParams(
    cudaGraphNode_t node, const cudaMemcpy3DParms *params) {
  if (!node || !params || node->type != cudaGraphNodeTypeMemcpy)
    return setError(cudaErrorInvalidValue);
  return setError(setMemcpyParams(*node, *params));
}

RT_API cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node,
                                                  void *dst, const void *src,
                                                  size_t count,
                                                  cudaMemcpyKind kind) {
  if (!node || node->type != cudaGraphNodeTypeMemcpy)
    return setError(cudaErrorInvalidValue);
  setMemcpy1D(*node, dst, src, count, kind);
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node,
                                                cudaMemsetParams *params) {
  if (!node || !params || node->type != cudaGraphNodeTypeMemset)
    return setError(cudaErrorInvalidValue);
  *params = {};
  params->dst = node->dst;
  params->pitch = node->pitch;
  params->value = node->value;
  params->elementSize = node->elementSize;
  params->width = node->width;
  params->height = node->height;
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphMemsetNodeSetParams(
    cudaGraphNode_t node, const cudaMemsetParams *params) {
  if (!node || !params || node->type != cudaGraphNodeTypeMemset)
    return setError(cudaErrorInvalidValue);
  return setError(setMemsetParams(*node, *params));
}

RT_API cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node,
                                              cudaHostNodeParams *params) {
  if (!node || !params || node->type != cudaGraphNodeTypeHost)
    return setError(cudaErrorInvalidValue);
  params->fn = node->host;
  params->userData = node->userData;
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphHostNodeSetParams(
    cudaGraphNode_t node, const cudaHostNodeParams *params) {
  if (!node || !params || !params->fn || node->type != cudaGraphNodeTypeHost)
    return setError(cudaErrorInvalidValue);
  node->host = params->fn;
  node->userData = params->userData;
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphKernelNodeSetParams(
    cudaGraphNode_t node, const cudaKernelNodeParams *params) {
  if (!node || !params || node->type != cudaGraphNodeTypeKernel)
    return setError(cudaErrorInvalidValue);
  return setError(setKernelParams(*node, *params));
}

RT_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec,
                                        cudaGraph_t graph,
                                        unsigned long long flags) {
  // Auto-free-on-launch, upload, device launch, priority: nothing to do
  // (graph memory lives as long as the graph, no device-side launch); kept
  // for cudaGraphExecGetFlags.
  if (!exec)
    return setError(cudaErrorInvalidValue);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.graphs.count(graph))
    return setError(cudaErrorInvalidValue);
  // The nodes in an order that respects the edges, child graphs expanded
  // (flattenGraph).
  std::vector<std::unique_ptr<CUgraphNode_st>> flat;
  std::vector<const CUgraphNode_st *> from;
  std::vector<CUgraphNode_st *> leaves;
  if (!flattenGraph(*graph, {}, flat, from, leaves)) {
    log(1, "cudaGraphInstantiate: the graph has a cycle");
    return setError(cudaErrorInvalidValue);
  }
  auto result = std::make_unique<CUgraphExec_st>();
  result->flags = flags;
  collectMemory(*graph, result->memory);
  result->depsOf = depPositions(flat);
  for (size_t i = 0; i < flat.size(); ++i) {
    result->index[from[i]] = result->order.size();
    result->order.push_back(*flat[i]);
    result->order.back().deps.clear(); // `flat`'s (depsOf has the edges)
  }
  // Runs of nodes the server can keep become graphs on the server (made at
  // the first launch).
  result->segmentOf.resize(result->order.size());
  for (size_t i = 0; i < result->order.size(); ++i) {
    bool server = serverNode(result->order[i]);
    if (result->segments.empty() ||
        result->segments.back().onServer != server) {
      Segment seg;
      seg.begin = i;
      seg.onServer = server;
      result->segments.push_back(seg);
    }
    result->segments.back().end = i + 1;
    result->segmentOf[i] = result->segments.size() - 1;
  }
  *exec = result.release();
  g.execs.insert(*exec);
  return cudaSuccess;
}

/// Gives an instantiated graph the parameters of `graph`'s nodes, where
/// `graph` has the same shape: as many nodes (child graphs expanded), in
/// the same order, of the same types, with the same edges; kernels of the
/// same functions; copies and memsets that stay where they ran (on the
/// server or in this process). Otherwise nothing changes and `info` says
/// why (cudaErrorGraphExecUpdateFailure).
RT_API cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph,
                                       cudaGraphExecUpdateResultInfo *info) {
  auto report = [&](cudaGraphExecUpdateResult result,
                    cudaGraphNode_t node) -> cudaError_t {
    if (info) {
      info->result = result;
      info->errorNode = node;
      info->errorFromNode = nullptr;
    }
    return setError(result == cudaGraphExecUpdateSuccess
                        ? cudaSuccess
                        : cudaErrorGraphExecUpdateFailure);
  };
  std::vector<std::unique_ptr<CUgraphNode_st>> flat;
  std::vector<const CUgraphNode_st *> from;
  std::vector<CUgraphNode_st *> leaves;
  {
    Graphs &g = graphs();
    std::lock_guard<std::mutex> lock(g.mu);
    if (!g.execs.count(exec) || !g.graphs.count(graph))
      return setError(cudaErrorInvalidValue);
    if (!flattenGraph(*graph, {}, flat, from, leaves))
      return report(cudaGraphExecUpdateError, nullptr);
  }
  std::lock_guard<std::mutex> lock(exec->mu);
  if (flat.size() != exec->order.size() || depPositions(flat) != exec->depsOf)
    return report(cudaGraphExecUpdateErrorTopologyChanged, nullptr);
  for (size_t i = 0; i < flat.size(); ++i) {
    const CUgraphNode_st &now = exec->order[i], &next = *flat[i];
    auto *node = const_cast<CUgraphNode_st *>(from[i]);
    if (next.type != now.type)
      return report(cudaGraphExecUpdateErrorNodeTypeChanged, node);
    if (next.type == cudaGraphNodeTypeKernel && next.fn != now.fn)
      return report(cudaGraphExecUpdateErrorUnsupportedFunctionChange, node);
    if (serverNode(next) != serverNode(now))
      return report(cudaGraphExecUpdateErrorParametersChanged, node);
  }
  for (size_t i = 0; i < flat.size(); ++i) {
    exec->order[i] = *flat[i];
    exec->order[i].deps.clear(); // `flat`'s, gone after this call
    exec->index[from[i]] = i;
  }
  for (Segment &seg : exec->segments)
    forgetServerGraph(seg);
  return report(cudaGraphExecUpdateSuccess, nullptr);
}

RT_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec,
                                                 cudaGraph_t graph,
                                                 unsigned long long flags) {
  return cudaGraphInstantiate(exec, graph, flags);
}

RT_API cudaError_t
cudaGraphInstantiateWithParams(cudaGraphExec_t *exec, cudaGraph_t graph,
                               cudaGraphInstantiateParams *params) {
  if (!params)
    return setError(cudaErrorInvalidValue);
  params->errNode_out = nullptr;
  cudaError_t e = cudaGraphInstantiate(exec, graph, params->flags);
  // A graph that is not a graph, or one with a cycle: its structure.
  params->result_out = e == cudaSuccess ? cudaGraphInstantiateSuccess
                       : exec           ? cudaGraphInstantiateInvalidStructure
                                        : cudaGraphInstantiateError;
  return e;
}

RT_API cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t exec,
                                         unsigned long long *flags) {
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!flags || !g.execs.count(exec))
    return setError(cudaErrorInvalidValue);
  *flags = exec->flags;
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.execs.erase(exec))
    return setError(cudaErrorInvalidValue);
  for (Segment &seg : exec->segments)
    forgetServerGraph(seg);
  delete exec;
  return cudaSuccess;
}

namespace {
/// Changes node `node` (of type `type`) of `exec` by `set(old, updated)` on
/// a copy: kept when `set` succeeds and the node stays where it runs (on
/// the server or in this process: the exec's segments do not change); the
/// server's copy of its segment is made again at the next launch.
template <typename Set>
cudaError_t updateExecNode(const char *call, cudaGraphExec_t exec,
                           cudaGraphNode_t node, cudaGraphNodeType type,
                           Set set) {
  CUgraphNode_st *target;
  {
    Graphs &g = graphs();
    std::lock_guard<std::mutex> lock(g.mu);
    if (!g.execs.count(exec))
      return cudaErrorInvalidValue;
    auto it = exec->index.find(node);
    if (it == exec->index.end() || exec->order[it->second].type != type)
      return cudaErrorInvalidValue;
    target = &exec->order[it->second];
  }
  CUgraphNode_st updated = *target;
  if (cudaError_t e = set(*target, updated))
    return e;
  if (serverNode(updated) != serverNode(*target)) {
    log(1,
        "%s: the new parameters move the node between the server and this "
        "process (a copy from or to host memory, a memset of a multi-byte "
        "pattern, a 3D copy run here; device-only work runs on the server): "
        "instantiate the graph again",
        call);
    return cudaErrorInvalidValue;
  }
  std::lock_guard<std::mutex> lock(exec->mu);
  *target = std::move(updated);
  forgetServerGraph(exec->segments[exec->segmentOf[exec->index[node]]]);
  return cudaSuccess;
}
} // namespace

RT_API cudaError_t
cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                 const cudaKernelNodeParams *params) {
  if (!params)
    return setError(cudaErrorInvalidValue);
  return setError(updateExecNode(
      "cudaGraphExecKernelNodeSetParams", exec, node, cudaGraphNodeTypeKernel,
      [&](const CUgraphNode_st &old, CUgraphNode_st &updated) {
        cudaError_t e = setKernelParams(updated, *params);
        if (e == cudaSuccess && updated.fn != old.fn) {
          log(1, "cudaGraphExecKernelNodeSetParams: the node's function "
                 "cannot change");
          return cudaErrorInvalidValue;
        }
        return e;
      }));
}

RT_API cudaError_t
cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                 const cudaMemcpy3DParms *params) {
  if (!params)
    return setError(cudaErrorInvalidValue);
  return setError(updateExecNode(
      "cudaGraphExecMemcpyNodeSetParams", exec, node, cudaGraphNodeTypeMemcpy,
      [&](const CUgraphNode_st &, CUgraphNode_st &updated) {
        return setMemcpyParams(updated, *params);
      }));
}

RT_API cudaError_t cudaGraphExecMemcpyNodeSetParams1D(
    cudaGraphExec_t exec, cudaGraphNode_t node, void *dst, const void *src,
    size_t count, cudaMemcpyKind kind) {
  return setError(updateExecNode(
      "cudaGraphExecMemcpyNodeSetParams1D", exec, node, cudaGraphNodeTypeMemcpy,
      [&](const CUgraphNode_st &, CUgraphNode_st &updated) {
        setMemcpy1D(updated, dst, src, count, kind);
        return cudaSuccess;
      }));
}

RT_API cudaError_t
cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                 const cudaMemsetParams *params) {
  if (!params)
    return setError(cudaErrorInvalidValue);
  return setError(updateExecNode(
      "cudaGraphExecMemsetNodeSetParams", exec, node, cudaGraphNodeTypeMemset,
      [&](const CUgraphNode_st &, CUgraphNode_st &updated) {
        return setMemsetParams(updated, *params);
      }));
}

RT_API cudaError_t
cudaGraphExecHostNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                               const cudaHostNodeParams *params) {
  if (!params || !params->fn)
    return setError(cudaErrorInvalidValue);
  return setError(updateExecNode(
      "cudaGraphExecHostNodeSetParams", exec, node, cudaGraphNodeTypeHost,
      [&](const CUgraphNode_st &, CUgraphNode_st &updated) {
        updated.host = params->fn;
        updated.userData = params->userData;
        return cudaSuccess;
      }));
}

namespace {
/// The position in `exec` of its kernel, memcpy or memset node `node` (the
/// nodes cudaGraphNodeSetEnabled takes); nullopt for another node.
std::optional<size_t> switchableNode(cudaGraphExec_t exec,
                                     cudaGraphNode_t node) {
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.execs.count(exec))
    return std::nullopt;
  auto it = exec->index.find(node);
  if (it == exec->index.end())
    return std::nullopt;
  cudaGraphNodeType type = exec->order[it->second].type;
  if (type != cudaGraphNodeTypeKernel && type != cudaGraphNodeTypeMemcpy &&
      type != cudaGraphNodeTypeMemset)
    return std::nullopt;
  return it->second;
}
} // namespace

RT_API cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t exec,
                                           cudaGraphNode_t node,
                                           unsigned enabled) {
  std::optional<size_t> i = switchableNode(exec, node);
  if (!i)
    return setError(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> execLock(exec->mu);
  CUgraphNode_st &n = exec->order[*i];
  if (n.disabled != !enabled) {
    n.disabled = !enabled;
    forgetServerGraph(exec->segments[exec->segmentOf[*i]]);
  }
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t exec,
                                           cudaGraphNode_t node,
                                           unsigned *enabled) {
  std::optional<size_t> i = switchableNode(exec, node);
  if (!enabled || !i)
    return setError(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> execLock(exec->mu);
  *enabled = !exec->order[*i].disabled;
  return cudaSuccess;
}

/// The graph in Graphviz's DOT language: a node per graph node (its type,
/// and what it runs or copies), an edge per dependency; child graphs as
/// clusters. `flags` (the amount of detail) is ignored.
RT_API cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char *path,
                                          unsigned flags) {
  (void)flags;
  if (!path)
    return setError(cudaErrorInvalidValue);
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.graphs.count(graph))
    return setError(cudaErrorInvalidValue);
  std::FILE *f = std::fopen(path, "w");
  if (!f)
    return setError(cudaErrorOperatingSystem);
  static const char *const kTypes[] = {"kernel",     "memcpy",      "memset",
                                       "host",       "graph",       "empty",
                                       "wait event", "event record"};
  std::fprintf(f, "digraph cudaGraph {\n");
  unsigned cluster = 0;
  auto print = [&](auto &self, const CUgraph_st &gr) -> void {
    for (const auto &n : gr.nodes) {
      const char *type =
          unsigned(n->type) < std::size(kTypes) ? kTypes[n->type] : "other";
      std::string label = type;
      const char *kernel = nullptr;
      if (n->type == cudaGraphNodeTypeKernel && n->fn &&
          cuFuncGetName(&kernel, n->fn) == CUDA_SUCCESS && kernel)
        label += std::string("\\n") + kernel;
      else if (n->type == cudaGraphNodeTypeMemcpy && !n->copy3d)
        label += "\\n" + std::to_string(n->bytes) + " bytes";
      else if (n->type == cudaGraphNodeTypeMemcpy)
        label += " (3D)";
      else if (n->type == cudaGraphNodeTypeMemset)
        label += "\\n" + std::to_string(n->width * n->elementSize) + " x " +
                 std::to_string(n->height) + " bytes";
      std::fprintf(f, "  \"%p\" [label=\"%s\"];\n",
                   static_cast<const void *>(n.get()), label.c_str());
      for (const CUgraphNode_st *d : n->deps)
        std::fprintf(f, "  \"%p\" -> \"%p\";\n", static_cast<const void *>(d),
                     static_cast<const void *>(n.get()));
      if (n->child) {
        std::fprintf(f, "  subgraph cluster_%u {\n  label=\"child of %p\";\n",
                     cluster++, static_cast<const void *>(n.get()));
        self(self, *n->child);
        std::fprintf(f, "  }\n");
      }
    }
  };
  print(print, *graph);
  std::fprintf(f, "}\n");
  return setError(std::fclose(f) == 0 ? cudaSuccess : cudaErrorOperatingSystem);
}

RT_API cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  cudaError_t e = ensureInit();
  if (e != cudaSuccess)
    return setError(e);
  {
    Graphs &g = graphs();
    std::lock_guard<std::mutex> lock(g.mu);
    if (!g.execs.count(exec))
      return setError(cudaErrorInvalidValue);
  }
  if (isCapturing(stream)) {
    // The capture gets a child graph node: the exec's nodes as they are
    // now (parameter updates included), one after the other in the order
    // the exec runs them.
    auto node = std::make_unique<CUgraphNode_st>();
    node->type = cudaGraphNodeTypeGraph;
    {
      std::lock_guard<std::mutex> execLock(exec->mu);
      Graphs &g = graphs();
      std::lock_guard<std::mutex> lock(g.mu);
      auto *child = new CUgraph_st;
      g.graphs.insert(child);
      child->memory = exec->memory;
      for (const CUgraphNode_st &n : exec->order) {
        auto copy = std::make_unique<CUgraphNode_st>(n);
        copy->graph = child;
        copy->deps.clear();
        copy->paramPointers.clear();
        copy->original = nullptr;
        if (!child->nodes.empty())
          copy->deps.push_back(child->nodes.back().get());
        child->nodes.push_back(std::move(copy));
      }
      node->child = child;
    }
    CUgraph_st *child = node->child;
    e = captureNode(stream, std::move(node));
    if (e != cudaSuccess) {
      Graphs &g = graphs();
      std::lock_guard<std::mutex> lock(g.mu);
      destroyGraphLocked(g, child);
    }
    return setError(e);
  }
  std::lock_guard<std::mutex> lock(exec->mu);
  if (exec->reset) {
    log(1, "cudaGraphLaunch: the graph was instantiated before "
           "cudaDeviceReset");
    return setError(cudaErrorInvalidResourceHandle);
  }
  for (Segment &seg : exec->segments) {
    if (seg.onServer && !seg.refused) {
      if (!seg.handle) {
        std::vector<GraphCall> calls = serverCalls(*exec, seg);
        CUresult r = driverGraphCreate(calls.data(), calls.size(), &seg.handle);
        // A server that cannot keep it (or has no room left): the client
        // runs these nodes instead.
        if (r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_NOT_PERMITTED)
          seg.refused = true;
        else if (r != CUDA_SUCCESS)
          return fromDriver(r);
      }
      if (!seg.refused) {
        CUresult r = driverGraphLaunch(seg.handle, stream);
        if (r != CUDA_SUCCESS)
          return fromDriver(r);
        continue;
      }
    }
    for (size_t i = seg.begin; i < seg.end; ++i) {
      e = runNode(exec->order[i], stream);
      if (e != cudaSuccess)
        return setError(e);
    }
  }
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphUpload(cudaGraphExec_t exec, cudaStream_t stream) {
  (void)stream;
  Graphs &g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.execs.count(exec) ? cudaSuccess : setError(cudaErrorInvalidValue);
}

WOOLY_ALIAS(cudaGraphLaunch_ptsz, cudaGraphLaunch)
WOOLY_ALIAS(cudaGraphUpload_ptsz, cudaGraphUpload)
WOOLY_ALIAS(cudaGraphInstantiateWithParams_ptsz, cudaGraphInstantiateWithParams)
WOOLY_ALIAS(cudaStreamBeginCapture_ptsz, cudaStreamBeginCapture)
WOOLY_ALIAS(cudaStreamEndCapture_ptsz, cudaStreamEndCapture)
WOOLY_ALIAS(cudaStreamIsCapturing_ptsz, cudaStreamIsCapturing)
WOOLY_ALIAS(cudaStreamGetCaptureInfo_ptsz, cudaStreamGetCaptureInfo)
WOOLY_ALIAS(cudaStreamUpdateCaptureDependencies_ptsz,
            cudaStreamUpdateCaptureDependencies)
