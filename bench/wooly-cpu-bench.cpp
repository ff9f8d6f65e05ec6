//===- wooly-cpu-bench.cpp - CPU backend vs. plain C++ loops ----*- C++ -*-===//
//
// Runs a few corpus kernels on the CPU backend (compiled from their
// `sm_80` PTX for the `host` target) and the same computation written as a
// plain single-threaded C++ loop in this file, checks that both give the
// same output, and prints one table row per kernel: backend time per launch
// with one worker and with all workers, the C++ time, their ratios, and the
// compile time and CompileCache hit time of the kernel's module.
// See bench/README.md.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"
#include "Wooly/Compiler/Compiler.h"
#include "Wooly/Runtime/CPU/CpuDevice.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#ifndef WOOLY_SOURCE_DIR
#define WOOLY_SOURCE_DIR "."
#endif

using namespace wooly;
using namespace wooly::cpu;
namespace cl = llvm::cl;

static llvm::cl::OptionCategory benchCategory("wooly-cpu-bench options");
static cl::opt<unsigned> reps("reps",
                              cl::desc("Timed repetitions per measurement "
                                       "(the median is reported)"),
                              cl::init(7), cl::cat(benchCategory));
static cl::opt<unsigned> compileReps("compile-reps",
                                     cl::desc("compile() calls per module"),
                                     cl::init(3), cl::cat(benchCategory));
static cl::opt<double>
    scale("scale", cl::desc("Multiply every problem size by this (>0)"),
          cl::init(1.0), cl::cat(benchCategory));
static cl::opt<bool>
    noBoundsChecks("no-bounds-checks",
                   cl::desc("Compile the kernels without memory-access checks"),
                   cl::cat(benchCategory));
static cl::opt<std::string> dumpObjects(
    "dump-objects",
    cl::desc("Write each compiled module (an ELF object) to this directory, "
             "e.g. for objdump"),
    cl::cat(benchCategory));
static cl::opt<std::string> benchKernelDir(
    "bench-kernels", cl::desc("Directory of the benchmark's own kernels' PTX"),
    cl::init(WOOLY_SOURCE_DIR "/bench/kernels"), cl::cat(benchCategory));
static cl::list<std::string>
    only("only", cl::desc("Run only the rows with these labels (repeatable)"),
         cl::cat(benchCategory));
static cl::opt<unsigned>
    workers("workers",
            cl::desc("Workers of the second device, the \"all\" columns, and "
                     "threads of the split C++ loop (0: one per hardware "
                     "thread)"),
            cl::init(0), cl::cat(benchCategory));
static cl::opt<std::string> corpusDir("corpus",
                                      cl::desc("Directory of the corpus PTX"),
                                      cl::init(WOOLY_SOURCE_DIR "/test/corpus"),
                                      cl::cat(benchCategory));

using namespace wooly::bench;

namespace {
//===----------------------------------------------------------------------===//
// The plain C++ versions: straightforward single-threaded loops, the way a
// person would write them (noinline, so that each is timed as written).
//===----------------------------------------------------------------------===//

__attribute__((noinline)) void cppVecAdd(int n, const float *a, const float *b,
                                         float *c) {
  for (int i = 0; i < n; ++i)
    c[i] = a[i] + b[i];
}

__attribute__((noinline)) void cppTranspose(int rows, int cols, const float *in,
                                            float *out) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      out[c * rows + r] = in[r * cols + c];
}

/// Rows [r0, r1) of the transpose in 32x32 tiles, as the kernel's blocks
/// move them (without the shared-memory staging): what a strided copy can
/// gain from more threads on this machine's memory.
__attribute__((noinline)) void cppTransposeTiles(int rows, int cols,
                                                 const float *in, float *out,
                                                 int r0, int r1) {
  for (int tr = r0; tr < r1; tr += 32)
    for (int tc = 0; tc < cols; tc += 32)
      for (int r = tr; r < std::min(r1, tr + 32); ++r)
        for (int c = tc; c < std::min(cols, tc + 32); ++c)
          out[c * rows + r] = in[r * cols + c];
}

__attribute__((noinline)) void cppBlockSum(int n, int block, const int *in,
                                           int *out) {
  for (int b = 0; b * block < n; ++b) {
    int s = 0;
    for (int i = b * block; i < std::min(n, (b + 1) * block); ++i)
      s += in[i];
    out[b] = s;
  }
}

__attribute__((noinline)) void cppBlockScan(int n, int block, const int *in,
                                            int *out) {
  for (int b = 0; b * block < n; ++b) {
    int s = 0;
    for (int i = b * block; i < std::min(n, (b + 1) * block); ++i)
      out[i] = s += in[i];
  }
}

__attribute__((noinline)) void cppSoftmaxRows(int rows, int cols,
                                              const float *in, float *out) {
  for (int r = 0; r < rows; ++r) {
    const float *x = in + size_t(r) * cols;
    float *y = out + size_t(r) * cols;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c)
      m = std::fmax(m, x[c]);
    float s = 0.0f;
    for (int c = 0; c < cols; ++c)
      s += std::exp(x[c] - m);
    float inv = 1.0f / s;
    for (int c = 0; c < cols; ++c)
      y[c] = std::exp(x[c] - m) * inv;
  }
}

__attribute__((noinline)) void cppHistogram(int n, const unsigned char *data,
                                            unsigned *hist) {
  std::memset(hist, 0, 256 * sizeof(unsigned));
  for (int i = 0; i < n; ++i)
    ++hist[data[i]];
}

//===----------------------------------------------------------------------===//
// Cases
//===----------------------------------------------------------------------===//

/// A device buffer of a case: its initial contents (empty: zero-filled) and
/// size.
struct Buffer {
  std::vector<uint8_t> init;
  uint64_t bytes = 0;
};

/// One kernel argument: a buffer (by index) or a 32-bit scalar.
struct Arg {
  int buffer = -1;
  uint32_t scalar = 0;
};

/// One table row.
struct Case {
  std::string label; // Shown in the table.
  std::string file;  // PTX file, in the corpus or (`own`) bench/kernels.
  bool own = false;
  std::string kernel; // Kernel name.
  LaunchConfig config;
  std::vector<Buffer> buffers;
  std::vector<Arg> args;
  int output = -1;                    // Buffer compared with the C++ result.
  bool zeroOutput = false;            // Zero the output before each launch.
  uint64_t threads = 0;               // GPU threads per launch.
  uint64_t elements = 0;              // Elements of the problem.
  double bytes = 0;                   // Bytes read + written by one run.
  std::function<void(uint8_t *)> cpp; // The C++ version (writes cppOut).
  /// Where the C++ version splits into independent parts: part `i` of `n`
  /// (run on `n` threads to show how far the machine itself scales).
  std::function<void(uint8_t *, unsigned i, unsigned n)> cppPart;
  /// Compares the backend's output with the C++ output where they may
  /// differ by rounding: returns what differs, or "" (empty: bit for bit).
  std::function<std::string(const uint8_t *got, const uint8_t *want,
                            uint64_t bytes)>
      compare;
  std::vector<uint8_t> cppOut;
};

template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

uint64_t scaled(uint64_t n, uint64_t multiple) {
  uint64_t s = uint64_t(double(n) * scale);
  return std::max<uint64_t>(multiple, s / multiple * multiple);
}

/// `n` integers in [-1000, 1000].
std::vector<int> randomInts(std::mt19937 &rng, int n) {
  std::uniform_int_distribution<int> d(-1000, 1000);
  std::vector<int> v(n);
  for (int &x : v)
    x = d(rng);
  return v;
}

std::vector<Case> makeCases() {
  std::vector<Case> cases;
  std::mt19937 rng(12345);

  { // 1. Barrier-free elementwise: c = a + b.
    Case c;
    int n = int(scaled(16u << 20, 256));
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> a(n), b(n);
    for (int i = 0; i < n; ++i)
      a[i] = d(rng), b[i] = d(rng);
    c.label = "vec_add";
    c.file = "elementwise.sm_80.ptx";
    c.kernel = "vec_add";
    c.config.grid = {uint32_t(n / 256), 1, 1};
    c.config.block = {256, 1, 1};
    c.buffers = {{bytesOf(a), uint64_t(n) * 4},
                 {bytesOf(b), uint64_t(n) * 4},
                 {{}, uint64_t(n) * 4}};
    c.args = {{-1, uint32_t(n)}, {0}, {1}, {2}};
    c.output = 2;
    c.threads = c.elements = uint64_t(n);
    c.bytes = 12.0 * n;
    c.cppOut.resize(uint64_t(n) * 4);
    auto inputs =
        std::make_shared<std::pair<std::vector<float>, std::vector<float>>>(
            std::move(a), std::move(b));
    c.cpp = [inputs, n](uint8_t *out) {
      cppVecAdd(n, inputs->first.data(), inputs->second.data(),
                reinterpret_cast<float *>(out));
    };
    c.cppPart = [inputs, n](uint8_t *out, unsigned i, unsigned parts) {
      int lo = int(int64_t(n) * i / parts),
          hi = int(int64_t(n) * (i + 1) / parts);
      cppVecAdd(hi - lo, inputs->first.data() + lo, inputs->second.data() + lo,
                reinterpret_cast<float *>(out) + lo);
    };
    cases.push_back(std::move(c));
  }

  { // 2. 256-thread blocks (32x8) with a barrier: tiled transpose.
    Case c;
    int rows = int(scaled(2048, 32)), cols = rows;
    uint64_t n = uint64_t(rows) * cols;
    std::vector<float> in(n);
    for (uint64_t i = 0; i < n; ++i)
      in[i] = float(i);
    c.label = "transpose_padded";
    c.file = "transpose.sm_80.ptx";
    c.kernel = "transpose_padded";
    c.config.grid = {uint32_t(cols / 32), uint32_t(rows / 32), 1};
    c.config.block = {32, 8, 1};
    c.buffers = {{bytesOf(in), n * 4}, {{}, n * 4}};
    c.args = {{-1, uint32_t(rows)}, {-1, uint32_t(cols)}, {0}, {1}};
    c.output = 1;
    c.threads = n / 4; // Each thread moves 4 elements.
    c.elements = n;
    c.bytes = 8.0 * double(n);
    c.cppOut.resize(n * 4);
    auto input = std::make_shared<std::vector<float>>(std::move(in));
    c.cpp = [input, rows, cols](uint8_t *out) {
      cppTranspose(rows, cols, input->data(), reinterpret_cast<float *>(out));
    };
    c.cppPart = [input, rows, cols](uint8_t *out, unsigned i, unsigned parts) {
      int tiles = (rows + 31) / 32;
      int lo = int(int64_t(tiles) * i / parts) * 32,
          hi = std::min(rows, int(int64_t(tiles) * (i + 1) / parts) * 32);
      cppTransposeTiles(rows, cols, input->data(),
                        reinterpret_cast<float *>(out), lo, hi);
    };
    cases.push_back(std::move(c));
  }

  { // 3. Warp-shuffle reduction (+ one barrier), 256-thread blocks.
    Case c;
    int n = int(scaled(4u << 20, 256));
    std::vector<int> in = randomInts(rng, n);
    c.label = "block_sum_i32";
    c.file = "reduction.sm_80.ptx";
    c.kernel = "block_sum_i32";
    c.config.grid = {uint32_t(n / 256), 1, 1};
    c.config.block = {256, 1, 1};
    c.buffers = {{bytesOf(in), uint64_t(n) * 4}, {{}, uint64_t(n / 256) * 4}};
    c.args = {{-1, uint32_t(n)}, {0}, {1}};
    c.output = 1;
    c.threads = c.elements = uint64_t(n);
    c.bytes = 4.0 * n + 4.0 * (n / 256);
    c.cppOut.resize(uint64_t(n / 256) * 4);
    c.cpp = [in = std::move(in), n](uint8_t *out) {
      cppBlockSum(n, 256, in.data(), reinterpret_cast<int *>(out));
    };
    cases.push_back(std::move(c));
  }

  { // 4. Shared-memory atomics + barriers, grid-stride loop: histogram.
    Case c;
    int n = int(scaled(16u << 20, 256));
    std::vector<uint8_t> data(n);
    // Skewed (a sum of two bytes), so that some bins are hot.
    for (uint8_t &v : data)
      v = uint8_t((rng() & 0xff) / 2 + (rng() & 0xff) / 2);
    c.label = "histogram256";
    c.file = "histogram.sm_80.ptx";
    c.kernel = "histogram256";
    c.config.grid = {256, 1, 1};
    c.config.block = {256, 1, 1};
    c.buffers = {{data, uint64_t(n)}, {{}, 256 * 4}};
    c.args = {{-1, uint32_t(n)}, {0}, {1}};
    c.output = 1;
    c.zeroOutput = true;
    c.threads = 256 * 256;
    c.elements = uint64_t(n);
    c.bytes = double(n);
    c.cppOut.resize(256 * 4);
    c.cpp = [data = std::move(data), n](uint8_t *out) {
      cppHistogram(n, data.data(), reinterpret_cast<unsigned *>(out));
    };
    cases.push_back(std::move(c));
  }

  // 5. Two inclusive block scans of the same input, checked against the
  // same C++ loop: Hillis-Steele, barriers in a loop (`block_scan_i32`),
  // and as CUB's BlockScan makes it, warp shuffles and the warps' totals
  // through shared memory (`block_scan_warps`).
  auto scanCase = [&](const char *label, const char *kernel) {
    Case c;
    int n = int(scaled(4u << 20, 256));
    std::vector<int> in = randomInts(rng, n);
    c.label = label;
    c.file = "cpu-bench.sm_80.ptx";
    c.own = true;
    c.kernel = kernel;
    c.config.grid = {uint32_t(n / 256), 1, 1};
    c.config.block = {256, 1, 1};
    c.buffers = {{bytesOf(in), uint64_t(n) * 4}, {{}, uint64_t(n) * 4}};
    c.args = {{-1, uint32_t(n)}, {0}, {1}};
    c.output = 1;
    c.threads = c.elements = uint64_t(n);
    c.bytes = 8.0 * n;
    c.cppOut.resize(uint64_t(n) * 4);
    c.cpp = [in = std::move(in), n](uint8_t *out) {
      cppBlockScan(n, 256, in.data(), reinterpret_cast<int *>(out));
    };
    cases.push_back(std::move(c));
  };
  scanCase("block_scan_i32", "block_scan_loop_i32");
  scanCase("block_scan_warps", "block_scan_warps_i32");

  { // 6. Softmax, a block per row: warp shuffles + shared memory + barriers.
    Case c;
    int cols = 1024, rows = int(scaled(4096, 1));
    uint64_t n = uint64_t(rows) * cols;
    std::uniform_real_distribution<float> d(-8.0f, 8.0f);
    std::vector<float> in(n);
    for (float &v : in)
      v = d(rng);
    c.label = "softmax_rows";
    c.file = "cpu-bench.sm_80.ptx";
    c.own = true;
    c.kernel = "softmax_block_rows";
    c.config.grid = {uint32_t(rows), 1, 1};
    c.config.block = {256, 1, 1};
    c.buffers = {{bytesOf(in), n * 4}, {{}, n * 4}};
    c.args = {{-1, uint32_t(rows)}, {-1, uint32_t(cols)}, {0}, {1}};
    c.output = 1;
    c.threads = uint64_t(rows) * 256;
    c.elements = n;
    c.bytes = 8.0 * double(n);
    c.cppOut.resize(n * 4);
    c.cpp = [in = std::move(in), rows, cols](uint8_t *out) {
      cppSoftmaxRows(rows, cols, in.data(), reinterpret_cast<float *>(out));
    };
    // The sums add in another order, and the kernel's expf is CUDA's (at
    // most 2 ulp off): each value within 1e-5 of the C++ one, relatively.
    c.compare = [](const uint8_t *got, const uint8_t *want, uint64_t bytes) {
      for (uint64_t i = 0; i < bytes / 4; ++i) {
        float g, w;
        std::memcpy(&g, got + 4 * i, 4);
        std::memcpy(&w, want + 4 * i, 4);
        if (!(std::fabs(g - w) <= 1e-5f * std::fabs(w) + 1e-30f))
          return "element " + std::to_string(i) + " is " + std::to_string(g) +
                 ", the C++ loop's " + std::to_string(w);
      }
      return std::string();
    };
    cases.push_back(std::move(c));
  }
  return cases;
}

//===----------------------------------------------------------------------===//
// Measurement
//===----------------------------------------------------------------------===//

/// The calling thread's CPU time so far.
double threadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

struct Row {
  std::string label, mode, fiberReason;
  uint64_t elements = 0, threads = 0;
  double ms1 = 0, msAll = 0, msCpp = 0;
  /// CPU time of the launching thread with one worker (it runs every
  /// block): unlike wall time, not inflated when other processes share the
  /// cores.
  double cpuMs1 = 0, cpuMsCpp = 0;
  /// The C++ version split over all hardware threads (0: not splittable).
  /// The C++ loop split into parts (where it splits), on one thread and on
  /// as many threads as the backend has workers.
  double msCppOne = 0, msCppAll = 0;
  double bytes = 0;
  double compileMs = 0, hitUs = 0;
};

/// Runs `c` on `device`: warm-up launch, check against the C++ output,
/// then `reps` timed launches. Returns the median seconds per launch, and
/// in `cpuSeconds` the median CPU time of the calling thread per launch.
double runOnDevice(CpuDevice &device, LoadedModule *module, const Case &c,
                   const char *which, double *cpuSeconds = nullptr) {
  const KernelInfo *k = device.compiled(module).findKernel(c.kernel);
  if (!k)
    die("no kernel " + c.kernel + " in " + c.file);
  if (k->paramOffsets.size() != c.args.size())
    die(c.kernel + ": the kernel takes " +
        std::to_string(k->paramOffsets.size()) + " parameters, the case " +
        std::to_string(c.args.size()));
  DeviceMemory &mem = device.memory();
  std::vector<uint64_t> addrs;
  for (const Buffer &b : c.buffers) {
    uint64_t a = check(mem.allocate(b.bytes), "allocate");
    if (!b.init.empty())
      check(mem.copyToDevice(a, b.init.data(), b.bytes), "copyToDevice");
    addrs.push_back(a);
  }
  std::vector<uint8_t> params(k->paramBufferSize, 0);
  for (size_t i = 0; i < c.args.size(); ++i) {
    const Arg &a = c.args[i];
    uint64_t size = k->paramSizes[i];
    if (a.buffer >= 0) {
      if (size != 8)
        die(c.kernel + ": parameter " + std::to_string(i) +
            " is not a pointer");
      std::memcpy(params.data() + k->paramOffsets[i], &addrs[a.buffer], 8);
    } else {
      if (size != 4)
        die(c.kernel + ": parameter " + std::to_string(i) +
            " is not a 32-bit scalar");
      std::memcpy(params.data() + k->paramOffsets[i], &a.scalar, 4);
    }
  }
  uint64_t out = addrs[c.output];
  uint64_t outBytes = c.buffers[c.output].bytes;
  auto launch = [&]() {
    check(device.launch(module, c.kernel, c.config, params),
          std::string("launch of ") + c.kernel);
  };
  // Warm-up, then the check.
  if (c.zeroOutput)
    check(mem.memset(out, 0, outBytes), "memset");
  launch();
  std::vector<uint8_t> got(outBytes);
  check(mem.copyFromDevice(got.data(), out, outBytes), "copyFromDevice");
  if (c.compare) {
    std::string why = c.compare(got.data(), c.cppOut.data(), outBytes);
    if (!why.empty())
      die(c.kernel + " (" + which +
          "): the CPU backend's output differs from the C++ output: " + why);
  } else if (got != c.cppOut) {
    size_t i = 0;
    while (got[i] == c.cppOut[i])
      ++i;
    die(c.kernel + " (" + which +
        "): the CPU backend's output differs from "
        "the C++ output (first difference at byte " +
        std::to_string(i) + " of " + std::to_string(outBytes) + ")");
  }
  std::vector<double> times, cpuTimes;
  for (unsigned r = 0; r < reps; ++r) {
    if (c.zeroOutput)
      check(mem.memset(out, 0, outBytes), "memset");
    double c0 = threadCpuSeconds();
    auto t0 = Clock::now();
    launch();
    auto t1 = Clock::now();
    cpuTimes.push_back(threadCpuSeconds() - c0);
    times.push_back(seconds(t0, t1));
  }
  for (uint64_t a : addrs)
    check(mem.free(a), "free");
  if (cpuSeconds)
    *cpuSeconds = median(cpuTimes);
  return median(times);
}

double timeCpp(Case &c, double &cpuSeconds) {
  c.cpp(c.cppOut.data()); // Warm-up (and the reference output).
  std::vector<double> times, cpuTimes;
  for (unsigned r = 0; r < reps; ++r) {
    double c0 = threadCpuSeconds();
    auto t0 = Clock::now();
    c.cpp(c.cppOut.data());
    auto t1 = Clock::now();
    cpuTimes.push_back(threadCpuSeconds() - c0);
    times.push_back(seconds(t0, t1));
  }
  cpuSeconds = median(cpuTimes);
  return median(times);
}

/// The median wall time of `c.cppPart` run on `parts` threads at once.
double timeCppParts(Case &c, unsigned parts) {
  std::vector<uint8_t> out(c.cppOut.size());
  auto run = [&] {
    std::vector<std::thread> threads;
    for (unsigned i = 0; i < parts; ++i)
      threads.emplace_back([&, i] { c.cppPart(out.data(), i, parts); });
    for (std::thread &t : threads)
      t.join();
  };
  run(); // Warm-up.
  if (out != c.cppOut)
    die(c.label + ": the C++ version split over threads differs from the "
                  "one-thread version");
  std::vector<double> times;
  for (unsigned r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    run();
    times.push_back(seconds(t0, Clock::now()));
  }
  return median(times);
}

std::string readFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    die("cannot read " + path + ": " + buf.getError().message());
  return (*buf)->getBuffer().str();
}
} // namespace

int main(int argc, char **argv) {
  programName = "wooly-cpu-bench";
  llvm::cl::HideUnrelatedOptions(benchCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "wooly-cpu-bench: CPU backend launch times vs. plain C++ loops\n");
  if (reps == 0 || compileReps == 0 || !(scale > 0))
    die("--reps, --compile-reps and --scale must be positive");
  if (workers > 1024)
    die("--workers must be at most 1024");
  Target host = check(Target::parse("host"), "target");
  CompileOptions options;
  options.boundsChecks = !noBoundsChecks;

  unsigned allWorkers = workers
                            ? unsigned(workers)
                            : std::max(1u, std::thread::hardware_concurrency());
  CpuDevice::Options one, all;
  one.workers = 1;
  all.workers = allWorkers;
  CpuDevice dev1(one), devAll(all);

  std::vector<Case> cases = makeCases();
  std::vector<Row> rows;
  CompileCache cache;
  for (Case &c : cases) {
    if (!only.empty() && llvm::find(only, c.label) == only.end())
      continue;
    Row row;
    row.label = c.label;
    row.elements = c.elements;
    row.threads = c.threads;
    row.bytes = c.bytes;
    CompileInput input{
        CompileInput::Kind::PTX,
        readFile((c.own ? benchKernelDir : corpusDir) + "/" + c.file), c.file};
    // compile(): wall time, median of compileReps calls.
    std::vector<double> ct;
    std::shared_ptr<const CompiledModule> module;
    for (unsigned r = 0; r < compileReps; ++r) {
      auto t0 = Clock::now();
      CompiledModule m =
          check(compile(input, host, options), "compile " + c.file);
      auto t1 = Clock::now();
      ct.push_back(seconds(t0, t1));
      module = std::make_shared<const CompiledModule>(std::move(m));
    }
    row.compileMs = median(ct) * 1e3;
    if (!dumpObjects.empty()) {
      std::string path = dumpObjects + "/" + c.file + ".o";
      if (FILE *f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(module->binary.data(), 1, module->binary.size(), f);
        std::fclose(f);
      } else
        die("cannot write " + path);
    }
    // CompileCache: one miss, then hits (median of 101).
    check(cache.getOrCompile(input, host, options), "cache miss");
    std::vector<double> ht;
    for (int r = 0; r < 101; ++r) {
      auto t0 = Clock::now();
      auto hit = check(cache.getOrCompile(input, host, options), "cache hit");
      auto t1 = Clock::now();
      ht.push_back(seconds(t0, t1));
    }
    row.hitUs = median(ht) * 1e6;

    const KernelInfo *k = module->findKernel(c.kernel);
    if (!k)
      die("no kernel " + c.kernel + " in " + c.file);
    row.mode = !k->needsFibers            ? "direct"
               : !k->regionSymbol.empty() ? "region"
                                          : "fibers";
    row.fiberReason = k->fiberReason;

    double cpuCpp = 0;
    row.msCpp = timeCpp(c, cpuCpp) * 1e3;
    row.cpuMsCpp = cpuCpp * 1e3;
    if (c.cppPart) {
      row.msCppOne = timeCppParts(c, 1) * 1e3;
      row.msCppAll = timeCppParts(c, allWorkers) * 1e3;
    }
    LoadedModule *m1 = check(dev1.loadModule(module), "loadModule");
    LoadedModule *mAll = check(devAll.loadModule(module), "loadModule");
    double cpu1 = 0;
    row.ms1 = runOnDevice(dev1, m1, c, "1 worker", &cpu1) * 1e3;
    row.cpuMs1 = cpu1 * 1e3;
    row.msAll = runOnDevice(devAll, mAll, c, "all workers") * 1e3;
    check(dev1.unloadModule(m1), "unloadModule");
    check(devAll.unloadModule(mAll), "unloadModule");
    rows.push_back(row);
  }

  std::printf("Wooly CPU backend vs. plain C++ (-O2, one thread); median of "
              "%u launches after a warm-up; bounds checks %s\n",
              unsigned(reps), noBoundsChecks ? "off" : "on");
  std::printf("backend workers: 1 and %u (all); b/c = backend time / C++ "
              "time; GB/s and Mthr/s with all workers\n",
              allWorkers);
  std::printf("%-17s %-6s %9s %9s %9s %9s %9s %7s %7s %8s %8s %9s %8s\n",
              "kernel", "mode", "elements", "threads", "1w ms", "all ms",
              "C++ ms", "b/c 1w", "b/c all", "GB/s", "Mthr/s", "compile ms",
              "hit us");
  std::printf("%s\n", std::string(129, '-').c_str());
  for (const Row &r : rows)
    std::printf(
        "%-17s %-6s %9llu %9llu %9.2f %9.2f %9.2f %7.2f %7.2f %8.2f "
        "%8.1f %9.1f %8.1f\n",
        r.label.c_str(), r.mode.c_str(), (unsigned long long)r.elements,
        (unsigned long long)r.threads, r.ms1, r.msAll, r.msCpp, r.ms1 / r.msCpp,
        r.msAll / r.msCpp, r.bytes / (r.msAll * 1e-3) / 1e9,
        double(r.threads) / (r.msAll * 1e-3) / 1e6, r.compileMs, r.hitUs);

  // CPU time of the one thread that runs a 1-worker launch, and of the C++
  // loop: what the ratio is when other processes share the cores (wall
  // times then include time the thread waited for one).
  std::printf("\nthread CPU time, 1 worker (not inflated by other load); "
              "all/1w = speedup of all workers over one (wall); C++ all/1 = "
              "the same for the C++ loop split into parts on %u threads "
              "against one (the transpose's in 32x32 tiles), where it "
              "splits: what the machine's memory allows\n",
              allWorkers);
  std::printf("%-17s %10s %10s %9s %8s %10s\n", "kernel", "1w cpu ms",
              "C++ cpu ms", "cpu b/c", "all/1w", "C++ all/1");
  for (const Row &r : rows) {
    std::printf("%-17s %10.2f %10.2f %9.2f %8.2f", r.label.c_str(), r.cpuMs1,
                r.cpuMsCpp, r.cpuMs1 / r.cpuMsCpp, r.ms1 / r.msAll);
    if (r.msCppAll > 0)
      std::printf(" %10.2f\n", r.msCppOne / r.msCppAll);
    else
      std::printf(" %10s\n", "-");
  }

  bool anyFibers = false;
  for (const Row &r : rows)
    anyFibers |= r.mode == "fibers";
  if (anyFibers)
    std::printf("\nwhy fibers (KernelInfo::fiberReason):\n");
  for (const Row &r : rows)
    if (r.mode == "fibers")
      std::printf("  %-17s %s\n", r.label.c_str(), r.fiberReason.c_str());

  // The targets, against the single-worker ratio (the C++ loop is
  // single-threaded) and, for information, with all workers.
  auto verdict = [](double ratio, double limit) {
    return ratio <= limit ? "MET" : "NOT MET";
  };
  std::printf("\ntargets (backend/C++; 1 worker | all workers):\n");
  for (const Row &r : rows) {
    // Issue 17: elementwise within 3x with bounds checks on; kernels with
    // barriers and warp collectives within 10x.
    double limit = r.mode == "direct" ? 3.0 : 10.0;
    const char *what = r.mode == "direct"
                           ? "barrier-free, <= 3x"
                           : "256-thread blocks with barriers, <= 10x";
    std::printf("  %-17s %-40s %6.2f %-8s | %6.2f %s\n", r.label.c_str(), what,
                r.ms1 / r.msCpp, verdict(r.ms1 / r.msCpp, limit),
                r.msAll / r.msCpp, verdict(r.msAll / r.msCpp, limit));
  }
  return 0;
}
