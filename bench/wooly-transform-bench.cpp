//===- wooly-transform-bench.cpp - Cost of the sharing passes --*- C++ -*-===//
//
// Runs a few corpus kernels on the CPU backend (compiled from their `sm_80`
// PTX for the `host` target) untransformed and under each sharing pass, and
// prints one table row per kernel: the original launch time and the
// transformed/original time ratio of
//
//   constrain N=P   wooly-constrain on P = workers x 4 physical blocks (the
//                   CPU's "SMs x occupancy": 4 blocks per worker thread)
//   constrain N=1   wooly-constrain on one physical block
//   slice           wooly-slice, the whole grid as one slice [0, blocks) on
//                   P physical blocks, zeroed counter, no preemption flag
//   isolate         wooly-isolate on the original grid, the tenant region
//                   the hull of the case's buffers (end rounded up to 256)
//   contain         wooly-contain{traps=false alignment=false} on the
//                   original grid: every loop head polls a status record
//                   that is never set (what wooly-serve runs on the cpu
//                   backend, whose runtime contains traps by itself)
//   contain all     wooly-contain with every check (what wooly-serve runs
//                   on a GPU): loop polls, and an alignment check before
//                   each load, store and atomic
//
// then the geometric mean of each ratio over the kernels. Launch values
// come from Wooly/Compiler/LaunchParams.h. Every variant's output is
// compared bit for bit with the original's after a warm-up launch (the
// benchmark aborts on a difference); then the variants are timed in
// interleaved rounds (one launch of each per round, buffers restored
// between launches outside the timing) and the median per variant is
// reported, so all ratios come from one run. See bench/README.md.
//
// A second table measures wooly-coalesce: k (--coalesce-parts, 8) small
// launches of vec_add (n = 4096, block 256: 16 blocks each, on their own
// buffers) run one after another vs ONE launch of `__wooly_coalesced` with
// the k launches as its parts (both from the same module, compiled with
// `wooly-coalesce{kernels=vec_add,...}`); outputs are compared bit for bit
// after a warm-up, then both are timed in interleaved rounds (median).
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"
#include "Wooly/Compiler/Compiler.h"
#include "Wooly/Compiler/LaunchParams.h"
#include "Wooly/Runtime/CPU/CpuDevice.h"
#include "Wooly/Runtime/CoalesceTable.h"
#include "Wooly/Runtime/Launch.h"

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

static llvm::cl::OptionCategory benchCategory("wooly-transform-bench options");
static cl::opt<unsigned> reps("reps",
                              cl::desc("Timed launches per variant (the "
                                       "median is reported)"),
                              cl::init(7), cl::cat(benchCategory));
static cl::opt<double>
    scale("scale", cl::desc("Multiply every problem size by this (>0)"),
          cl::init(1.0), cl::cat(benchCategory));
static cl::opt<unsigned>
    workers("workers",
            cl::desc("CPU backend worker threads (0: one per hardware "
                     "thread)"),
            cl::init(0), cl::cat(benchCategory));
static cl::opt<unsigned> blocksPerWorker(
    "blocks-per-worker",
    cl::desc("Physical blocks per worker for 'constrain N=P' and 'slice'"),
    cl::init(4), cl::cat(benchCategory));
static cl::opt<unsigned>
    coalesceParts("coalesce-parts",
                  cl::desc("Launches fused by the coalesce table (k)"),
                  cl::init(8), cl::cat(benchCategory));
static cl::opt<unsigned>
    coalesceReps("coalesce-reps",
                 cl::desc("Timed rounds of the coalesce table (median)"),
                 cl::init(51), cl::cat(benchCategory));
static cl::opt<bool> onlyCoalesce("only-coalesce",
                                  cl::desc("Print only the coalesce table"),
                                  cl::init(false), cl::cat(benchCategory));
static cl::opt<std::string> corpusDir("corpus",
                                      cl::desc("Directory of the corpus PTX"),
                                      cl::init(WOOLY_SOURCE_DIR "/test/corpus"),
                                      cl::cat(benchCategory));

using namespace wooly::bench;

namespace {
//===----------------------------------------------------------------------===//
// Cases
//===----------------------------------------------------------------------===//

/// A device buffer of a case: its initial contents (empty: zero-filled),
/// size, and whether the kernel writes it (then it is restored before
/// every launch and compared after the warm-up).
struct Buffer {
  std::vector<uint8_t> init;
  uint64_t bytes = 0;
  bool written = false;
};

/// One kernel argument: a buffer (by index) or a 32-bit scalar (bits).
struct Arg {
  int buffer = -1;
  uint32_t scalar = 0;
};

struct Case {
  std::string label;  // Shown in the table.
  std::string file;   // Corpus PTX file.
  std::string kernel; // Kernel name.
  LaunchConfig config;
  std::vector<Buffer> buffers;
  std::vector<Arg> args;
};

template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

uint64_t scaled(uint64_t n, uint64_t multiple) {
  uint64_t s = uint64_t(double(n) * scale);
  return std::max<uint64_t>(multiple, s / multiple * multiple);
}

std::vector<float> randomFloats(std::mt19937 &rng, uint64_t n) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

std::vector<Case> makeCases() {
  std::vector<Case> cases;
  std::mt19937 rng(12345);
  { // Barrier-free elementwise: c = a + b.
    uint32_t n = uint32_t(scaled(4u << 20, 256));
    Case c{"vec_add", "elementwise.sm_80.ptx", "vec_add", {}, {}, {}};
    c.config.grid = {n / 256, 1, 1};
    c.config.block = {256, 1, 1};
    c.buffers = {{bytesOf(randomFloats(rng, n)), n * 4ull},
                 {bytesOf(randomFloats(rng, n)), n * 4ull},
                 {{}, n * 4ull, true}};
    c.args = {{-1, n}, {0}, {1}, {2}};
    cases.push_back(std::move(c));
  }
  { // Barrier-free, in place: y = a * x + y.
    uint32_t n = uint32_t(scaled(4u << 20, 256));
    Case c{"saxpy", "elementwise.sm_80.ptx", "saxpy", {}, {}, {}};
    c.config.grid = {n / 256, 1, 1};
    c.config.block = {256, 1, 1};
    c.buffers = {{bytesOf(randomFloats(rng, n)), n * 4ull},
                 {bytesOf(randomFloats(rng, n)), n * 4ull, true}};
    c.args = {{-1, n}, {-1, bitsOf(1.5f)}, {0}, {1}};
    cases.push_back(std::move(c));
  }
  { // 16x16 shared-memory tiles, two barriers per tile: C = aAB + bC.
    uint32_t m = uint32_t(scaled(256, 16));
    Case c{"sgemm_tiled", "gemm.sm_80.ptx", "sgemm_tiled", {}, {}, {}};
    c.config.grid = {m / 16, m / 16, 1};
    c.config.block = {16, 16, 1};
    uint64_t e = uint64_t(m) * m;
    c.buffers = {{bytesOf(randomFloats(rng, e)), e * 4},
                 {bytesOf(randomFloats(rng, e)), e * 4},
                 {bytesOf(randomFloats(rng, e)), e * 4, true}};
    c.args = {{-1, m},
              {-1, m},
              {-1, m},
              {-1, bitsOf(1.0f)},
              {0},
              {1},
              {-1, bitsOf(0.5f)},
              {2}};
    cases.push_back(std::move(c));
  }
  { // 32x8 blocks with a barrier, 2-D grid: tiled transpose.
    uint32_t rows = uint32_t(scaled(1024, 32)), cols = rows;
    uint64_t e = uint64_t(rows) * cols;
    Case c{"transpose_padded",
           "transpose.sm_80.ptx",
           "transpose_padded",
           {},
           {},
           {}};
    c.config.grid = {cols / 32, rows / 32, 1};
    c.config.block = {32, 8, 1};
    c.buffers = {{bytesOf(randomFloats(rng, e)), e * 4}, {{}, e * 4, true}};
    c.args = {{-1, rows}, {-1, cols}, {0}, {1}};
    cases.push_back(std::move(c));
  }
  { // Warp shuffles + a barrier: one sum per 256-thread block.
    uint32_t n = uint32_t(scaled(1u << 20, 256));
    std::uniform_int_distribution<int> d(-1000, 1000);
    std::vector<int> in(n);
    for (int &v : in)
      v = d(rng);
    Case c{"block_sum_i32", "reduction.sm_80.ptx", "block_sum_i32", {}, {}, {}};
    c.config.grid = {n / 256, 1, 1};
    c.config.block = {256, 1, 1};
    c.buffers = {{bytesOf(in), n * 4ull}, {{}, n / 256 * 4ull, true}};
    c.args = {{-1, n}, {0}, {1}};
    cases.push_back(std::move(c));
  }
  { // Shared-memory atomics, barriers, grid-stride loop over 256 blocks.
    uint32_t n = uint32_t(scaled(4u << 20, 256));
    std::vector<uint8_t> data(n);
    for (uint8_t &v : data)
      v = uint8_t((rng() & 0xff) / 2 + (rng() & 0xff) / 2);
    Case c{"histogram256", "histogram.sm_80.ptx", "histogram256", {}, {}, {}};
    c.config.grid = {256, 1, 1};
    c.config.block = {256, 1, 1};
    c.buffers = {{data, n}, {{}, 256 * 4, true}};
    c.args = {{-1, n}, {0}, {1}};
    cases.push_back(std::move(c));
  }
  return cases;
}

//===----------------------------------------------------------------------===//
// Variants
//===----------------------------------------------------------------------===//

enum class Kind { Original, Constrain, Slice, Isolate, Contain };

struct Variant {
  const char *title;  // Column title.
  const char *passes; // CompileOptions::passes.
  Kind kind;
  uint32_t physical; // Physical blocks (constrain, slice).
};

/// One variant of one case, ready to launch.
struct Prepared {
  LoadedModule *module = nullptr;
  LaunchConfig config;
  std::vector<uint8_t> params;
  bool slice = false;
  std::vector<double> times;
};

std::string readFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    die("cannot read " + path + ": " + buf.getError().message());
  return (*buf)->getBuffer().str();
}

/// The coalesce table (see the file header).
void benchCoalesce(CpuDevice &device, const Target &host, unsigned numWorkers) {
  const unsigned k = coalesceParts;
  const uint32_t n = 4096, block = 256;
  const char *kernel = "vec_add";
  DeviceMemory &mem = device.memory();
  std::string list;
  for (unsigned i = 0; i < k; ++i)
    list += std::string(i ? "," : "") + kernel;
  CompileOptions options;
  options.passes = "wooly-coalesce{kernels=" + list + "}";
  const std::string file = "elementwise.sm_80.ptx";
  CompileInput input{CompileInput::Kind::PTX, readFile(corpusDir + "/" + file),
                     file};
  auto module = std::make_shared<const CompiledModule>(
      check(compile(input, host, options),
            "compile " + file + " with " + options.passes));
  LoadedModule *loaded = check(device.loadModule(module), "loadModule");
  const KernelInfo *kv = module->findKernel(kernel);
  const KernelInfo *kf = module->findKernel("__wooly_coalesced");
  if (!kv || !kf)
    die("coalesce: missing vec_add or __wooly_coalesced");
  if (kv->paramOffsets.size() != 4)
    die("coalesce: vec_add does not take 4 parameters");

  std::mt19937 rng(4242);
  std::vector<uint64_t> allocs, outs;
  std::vector<std::vector<uint8_t>> params;
  std::vector<CoalescePart> parts(k);
  LaunchConfig one;
  one.grid = {n / block, 1, 1};
  one.block = {block, 1, 1};
  for (unsigned i = 0; i < k; ++i) {
    uint64_t buf[3];
    for (int b = 0; b < 3; ++b) {
      buf[b] = check(mem.allocate(n * 4), "allocate");
      allocs.push_back(buf[b]);
      if (b < 2) {
        auto v = randomFloats(rng, n);
        check(mem.copyToDevice(buf[b], v.data(), n * 4), "copyToDevice");
      }
    }
    outs.push_back(buf[2]);
    std::vector<uint8_t> p(userParamBufferSize(*kv), 0);
    std::memcpy(p.data() + kv->paramOffsets[0], &n, 4);
    for (int b = 0; b < 3; ++b)
      std::memcpy(p.data() + kv->paramOffsets[b + 1], &buf[b], 8);
    uint64_t pa = check(mem.allocate(p.size()), "allocate");
    allocs.push_back(pa);
    check(mem.copyToDevice(pa, p.data(), p.size()), "copyToDevice");
    params.push_back(std::move(p));
    CoalescePart &cp = parts[i];
    cp.kernelIndex = 0;
    cp.grid[0] = one.grid[0];
    cp.block[0] = one.block[0];
    cp.params = pa;
  }
  assignFirstBlocks(parts);
  std::vector<uint8_t> table = encodeCoalesceTable(parts);
  uint64_t tableAddr = check(mem.allocate(table.size()), "allocate");
  allocs.push_back(tableAddr);
  check(mem.copyToDevice(tableAddr, table.data(), table.size()),
        "copyToDevice");
  std::vector<uint8_t> fusedParams = check(
      extendParams(*kf, {}, {{"coalesce_table", tableAddr}}), "parameters");
  LaunchConfig fused;
  fused.grid = {uint32_t(coalescedGrid(parts)), 1, 1};
  fused.block = {coalescedBlock(parts), 1, 1};
  fused.dynamicSharedBytes = coalescedDynamicShared(parts);

  auto separate = [&] {
    for (unsigned i = 0; i < k; ++i)
      check(device.launch(loaded, kernel, one, params[i]), "launch vec_add");
  };
  auto together = [&] {
    check(device.launch(loaded, "__wooly_coalesced", fused, fusedParams),
          "launch __wooly_coalesced");
  };
  auto outputs = [&] {
    std::vector<uint8_t> all(size_t(k) * n * 4);
    for (unsigned i = 0; i < k; ++i)
      check(mem.copyFromDevice(all.data() + size_t(i) * n * 4, outs[i], n * 4),
            "copyFromDevice");
    return all;
  };
  auto clear = [&] {
    for (uint64_t o : outs)
      check(mem.memset(o, 0, n * 4), "memset");
  };
  // Warm-up and check.
  separate();
  std::vector<uint8_t> want = outputs();
  clear();
  together();
  if (outputs() != want)
    die("coalesce: the fused launch's outputs differ from the separate "
        "launches'");
  std::vector<double> tSep, tFused;
  for (unsigned r = 0; r < coalesceReps; ++r) {
    auto t0 = Clock::now();
    separate();
    auto t1 = Clock::now();
    together();
    auto t2 = Clock::now();
    tSep.push_back(seconds(t0, t1));
    tFused.push_back(seconds(t1, t2));
  }
  double ms = median(tSep) * 1e3, mf = median(tFused) * 1e3;
  std::printf("wooly-coalesce on the CPU backend: %u launches of %s (n = %u, "
              "block %u, %u blocks each) one after another vs one fused "
              "launch\n",
              k, kernel, n, block, one.grid[0]);
  std::printf("%u workers; median of %u interleaved rounds after a warm-up; "
              "outputs checked bit for bit; fused kernel runs on %s\n",
              numWorkers, unsigned(coalesceReps),
              kf->needsFibers ? "fibers" : "direct");
  std::printf("%-10s %14s %12s %16s\n", "kernel", "separate ms", "fused ms",
              "fused/separate");
  std::printf("%s\n", std::string(55, '-').c_str());
  std::printf("%-10s %14.3f %12.3f %16.3f\n", kernel, ms, mf, mf / ms);
  check(device.unloadModule(loaded), "unloadModule");
  for (uint64_t a : allocs)
    check(mem.free(a), "free");
}
} // namespace

int main(int argc, char **argv) {
  programName = "wooly-transform-bench";
  llvm::cl::HideUnrelatedOptions(benchCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "wooly-transform-bench: cost of the sharing passes on the CPU "
      "backend\n");
  if (reps == 0 || blocksPerWorker == 0 || !(scale > 0))
    die("--reps, --blocks-per-worker and --scale must be positive");
  Target host = check(Target::parse("host"), "target");
  unsigned numWorkers = workers
                            ? unsigned(workers)
                            : std::max(1u, std::thread::hardware_concurrency());
  uint32_t p = numWorkers * blocksPerWorker;
  CpuDevice::Options devOptions;
  devOptions.workers = numWorkers;
  CpuDevice device(devOptions);
  DeviceMemory &mem = device.memory();
  if (onlyCoalesce) {
    benchCoalesce(device, host, numWorkers);
    return 0;
  }

  std::string pTitle = "constrain N=" + std::to_string(p);
  const std::vector<Variant> variants = {
      {"original", "", Kind::Original, 0},
      {pTitle.c_str(), "wooly-constrain", Kind::Constrain, p},
      {"constrain N=1", "wooly-constrain", Kind::Constrain, 1},
      {"slice", "wooly-slice", Kind::Slice, p},
      {"isolate", "wooly-isolate", Kind::Isolate, 0},
      {"contain", "wooly-contain{traps=false alignment=false}", Kind::Contain,
       0},
      {"contain all", "wooly-contain", Kind::Contain, 0}};

  // The slice counter (zeroed before every slice launch), and the status
  // record of wooly-contain (never set: loops poll it, as in wooly-serve).
  uint64_t counter = check(mem.allocate(4), "allocate");
  uint64_t statusRecord = check(mem.allocate(kContainRecordBytes), "allocate");
  check(mem.memset(statusRecord, 0, kContainRecordBytes), "memset");

  std::vector<Case> cases = makeCases();
  // ms[case][variant]: median milliseconds per launch.
  std::vector<std::vector<double>> ms;
  std::vector<uint64_t> blocks;
  std::vector<std::string> modes; // Of the original kernel.
  std::string modeChanges;        // Transformed kernels that need fibers.
  for (const Case &c : cases) {
    CompileInput input{CompileInput::Kind::PTX,
                       readFile(corpusDir + "/" + c.file), c.file};
    std::vector<uint64_t> addrs;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const Buffer &b : c.buffers) {
      uint64_t a = check(mem.allocate(b.bytes), "allocate");
      addrs.push_back(a);
      lo = std::min(lo, a);
      hi = std::max(hi, a + b.bytes);
    }
    auto restore = [&](bool all) {
      for (size_t i = 0; i < c.buffers.size(); ++i) {
        const Buffer &b = c.buffers[i];
        if (!all && !b.written)
          continue;
        if (b.init.empty())
          check(mem.memset(addrs[i], 0, b.bytes), "memset");
        else
          check(mem.copyToDevice(addrs[i], b.init.data(), b.bytes),
                "copyToDevice");
      }
    };
    restore(true);
    auto output = [&]() {
      std::vector<uint8_t> out;
      for (size_t i = 0; i < c.buffers.size(); ++i) {
        if (!c.buffers[i].written)
          continue;
        size_t at = out.size();
        out.resize(at + c.buffers[i].bytes);
        check(mem.copyFromDevice(out.data() + at, addrs[i], c.buffers[i].bytes),
              "copyFromDevice");
      }
      return out;
    };
    uint64_t total =
        uint64_t(c.config.grid[0]) * c.config.grid[1] * c.config.grid[2];
    blocks.push_back(total);

    std::vector<Prepared> prepared;
    std::vector<std::shared_ptr<const CompiledModule>> keep;
    for (const Variant &v : variants) {
      CompileOptions options;
      options.passes = v.passes;
      auto module = std::make_shared<const CompiledModule>(check(
          compile(input, host, options),
          "compile " + c.file + (v.passes[0] ? " with " : "") + v.passes));
      keep.push_back(module);
      const KernelInfo *k = module->findKernel(c.kernel);
      if (!k)
        die("no kernel " + c.kernel + " in " + c.file);
      if (v.kind == Kind::Original)
        modes.push_back(k->needsFibers ? "fibers" : "direct");
      else if (k->needsFibers && modes.back() == "direct")
        modeChanges += " " + c.label + " (" + v.title + ")";
      Prepared pr;
      pr.module = check(device.loadModule(module), "loadModule");
      pr.config = c.config;
      // The user's parameters: the kernel's own, in order.
      std::vector<uint8_t> user(userParamBufferSize(*k), 0);
      size_t a = 0;
      for (size_t i = 0; i < k->paramOffsets.size(); ++i) {
        if (i < k->paramRoles.size() && !k->paramRoles[i].empty())
          continue;
        if (a >= c.args.size())
          die(c.kernel + ": the kernel takes more parameters than the case");
        const Arg &arg = c.args[a++];
        uint64_t size = k->paramSizes[i];
        if (arg.buffer >= 0) {
          if (size != 8)
            die(c.kernel + ": parameter " + std::to_string(i) +
                " is not a pointer");
          std::memcpy(user.data() + k->paramOffsets[i], &addrs[arg.buffer], 8);
        } else {
          if (size != 4)
            die(c.kernel + ": parameter " + std::to_string(i) +
                " is not a 32-bit scalar");
          std::memcpy(user.data() + k->paramOffsets[i], &arg.scalar, 4);
        }
      }
      if (a != c.args.size())
        die(c.kernel + ": the kernel takes fewer parameters than the case");
      LaunchParamValues values;
      switch (v.kind) {
      case Kind::Original:
        break;
      case Kind::Constrain:
        values = constrainValues(c.config.grid);
        pr.config.grid = {v.physical, 1, 1};
        break;
      case Kind::Slice:
        if (total > UINT32_MAX)
          die(c.kernel + ": grid too large for wooly-slice");
        values = sliceValues(c.config.grid, 0, uint32_t(total), counter);
        pr.config.grid = {v.physical, 1, 1};
        pr.slice = true;
        break;
      case Kind::Isolate:
        values = isolateValues(lo, hi);
        break;
      case Kind::Contain:
        values["launch_status"] = statusRecord;
        break;
      }
      pr.params = check(extendParams(*k, user, values),
                        c.kernel + ": launch parameters");
      prepared.push_back(std::move(pr));
    }

    auto launch = [&](Prepared &pr, const Variant &v, bool timed) {
      restore(false);
      if (pr.slice)
        check(mem.memset(counter, 0, 4), "memset");
      auto t0 = Clock::now();
      check(device.launch(pr.module, c.kernel, pr.config, pr.params),
            "launch of " + c.kernel + " (" + v.title + ")");
      auto t1 = Clock::now();
      if (timed)
        pr.times.push_back(seconds(t0, t1));
      if (pr.slice) {
        uint32_t taken = 0;
        check(mem.copyFromDevice(&taken, counter, 4), "copyFromDevice");
        if (std::min<uint64_t>(taken, total) != total)
          die(c.kernel + " (slice): " + std::to_string(taken) + " of " +
              std::to_string(total) + " blocks executed");
      }
    };
    // Warm-up and the check against the original's output.
    std::vector<uint8_t> reference;
    for (size_t i = 0; i < variants.size(); ++i) {
      launch(prepared[i], variants[i], false);
      std::vector<uint8_t> got = output();
      if (i == 0) {
        reference = std::move(got);
        continue;
      }
      if (got != reference) {
        size_t at = 0;
        while (got[at] == reference[at])
          ++at;
        die(c.kernel + " (" + variants[i].title +
            "): the output differs from the original's (first difference "
            "at byte " +
            std::to_string(at) + " of " + std::to_string(reference.size()) +
            ")");
      }
    }
    // Interleaved timing rounds.
    for (unsigned r = 0; r < reps; ++r)
      for (size_t i = 0; i < variants.size(); ++i)
        launch(prepared[i], variants[i], true);
    std::vector<double> row;
    for (Prepared &pr : prepared) {
      row.push_back(median(pr.times) * 1e3);
      check(device.unloadModule(pr.module), "unloadModule");
    }
    ms.push_back(std::move(row));
    for (uint64_t a : addrs)
      check(mem.free(a), "free");
  }
  check(mem.free(counter), "free");
  check(mem.free(statusRecord), "free");

  std::printf("Wooly sharing passes on the CPU backend: transformed / "
              "original launch time\n");
  std::printf("%u workers, P = %u physical blocks (%u per worker); median "
              "of %u interleaved launches per variant after a warm-up; "
              "outputs checked bit for bit\n",
              numWorkers, p, unsigned(blocksPerWorker), unsigned(reps));
  // Each ratio column as wide as its title (at least 9).
  auto width = [&](size_t v) {
    return int(std::max<size_t>(9, std::strlen(variants[v].title)));
  };
  std::printf("%-17s %-6s %7s %11s", "kernel", "mode", "blocks", "original ms");
  size_t rule = 17 + 1 + 6 + 1 + 7 + 1 + 11;
  for (size_t v = 1; v < variants.size(); ++v) {
    std::printf(" %*s", width(v), variants[v].title);
    rule += 1 + width(v);
  }
  std::printf("\n%s\n", std::string(rule, '-').c_str());
  std::vector<double> logSum(variants.size(), 0.0);
  for (size_t c = 0; c < cases.size(); ++c) {
    std::printf("%-17s %-6s %7llu %11.2f", cases[c].label.c_str(),
                modes[c].c_str(), (unsigned long long)blocks[c], ms[c][0]);
    for (size_t v = 1; v < variants.size(); ++v) {
      double ratio = ms[c][v] / ms[c][0];
      logSum[v] += std::log(ratio);
      std::printf(" %*.3f", width(v), ratio);
    }
    std::printf("\n");
  }
  std::printf("%s\n", std::string(rule, '-').c_str());
  std::printf("%-17s %-6s %7s %11s", "geomean", "", "", "");
  for (size_t v = 1; v < variants.size(); ++v)
    std::printf(" %*.3f", width(v), std::exp(logSum[v] / double(cases.size())));
  std::printf("\n");
  if (!modeChanges.empty())
    std::printf("\nrun on fibers only when transformed:%s\n",
                modeChanges.c_str());
  std::printf("\n");
  benchCoalesce(device, host, numWorkers);
  return 0;
}
