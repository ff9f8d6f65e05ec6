//===- wooly-nvptx-bench.cpp - GPU compile time vs. ptxas -------*- C++ -*-===//
//
// For the largest `test/corpus/*.sm_90.ptx` files (by size), times one
// full `compile()` for `sm_90` (PTX import + Wooly passes + LLVM NVPTX
// codegen back to PTX) against `ptxas -arch=sm_90` on the ORIGINAL PTX (a
// subprocess, output to /dev/null, so its time includes process start-up),
// a CompileCache hit, and (`--amdgpu`, on by default) one full `compile()`
// of the same PTX for `gfx942` (ROCDL lowering + LLVM AMDGPU codegen + the
// ld.lld subprocess that links the code object). With `--serial` (on by
// default) each run also times `compile()` with CompileOptions::threads = 1
// (the kernels of a module one after the other) beside the default
// (`--compile-threads`), with the process's CPU time of both, and the load
// average before and after: on a shared machine the wall-time speed-up of the
// parallel compile is only meaningful next to them. Prints one table row per
// file, a median row and whether the targets are met. See
// bench/README.md.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"
#include "Wooly/Compiler/Compiler.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#ifndef WOOLY_SOURCE_DIR
#define WOOLY_SOURCE_DIR "."
#endif

using namespace wooly;
namespace cl = llvm::cl;

static cl::OptionCategory benchCategory("wooly-nvptx-bench options");
static cl::opt<unsigned> reps("reps",
                              cl::desc("Timed compile() calls and ptxas runs "
                                       "per file (the median is reported)"),
                              cl::init(5), cl::cat(benchCategory));
static cl::opt<unsigned>
    numFiles("files", cl::desc("How many of the largest *.sm_90.ptx files"),
             cl::init(8), cl::cat(benchCategory));
static cl::opt<std::string> ptxasPath("ptxas", cl::desc("The ptxas executable"),
                                      cl::init("/usr/local/cuda/bin/ptxas"),
                                      cl::cat(benchCategory));
static cl::opt<bool>
    amdgpu("amdgpu", cl::desc("Also time compile() of the same PTX for gfx942"),
           cl::init(true), cl::cat(benchCategory));
static cl::opt<std::string> corpusDir("corpus",
                                      cl::desc("Directory of the corpus PTX"),
                                      cl::init(WOOLY_SOURCE_DIR "/test/corpus"),
                                      cl::cat(benchCategory));

static cl::opt<unsigned> threads(
    "compile-threads",
    cl::desc("CompileOptions::threads of the timed compiles (0: the default, "
             "the hardware's threads up to 8)"),
    cl::init(0), cl::cat(benchCategory));
static cl::opt<bool>
    serial("serial",
           cl::desc("Also time compile() with threads=1, interleaved, and "
                    "report the speed-up and the CPU time of both"),
           cl::init(true), cl::cat(benchCategory));

using namespace wooly::bench;

namespace {
std::string readFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    die("cannot read " + path + ": " + buf.getError().message());
  return (*buf)->getBuffer().str();
}

/// The `*.sm_90.ptx` files of `dir`, largest first.
std::vector<std::pair<std::string, uint64_t>>
corpusFiles(const std::string &dir) {
  std::vector<std::pair<std::string, uint64_t>> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef path = it->path();
    if (!path.ends_with(".sm_90.ptx"))
      continue;
    uint64_t size = 0;
    if (llvm::sys::fs::file_size(path, size))
      continue;
    files.push_back({path.str(), size});
  }
  if (ec)
    die("cannot list " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end(), [](const auto &a, const auto &b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return files;
}

/// Runs ptxas on `path` once; returns its wall time, or an error message.
double runPtxas(const std::string &path, std::string &error) {
  llvm::SmallVector<llvm::StringRef, 8> args = {ptxasPath, "-arch=sm_90", path,
                                                "-o", "/dev/null"};
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef("/dev/null"), std::nullopt};
  std::string msg;
  auto t0 = Clock::now();
  int rc = llvm::sys::ExecuteAndWait(ptxasPath, args, std::nullopt, redirects,
                                     0, 0, &msg);
  auto t1 = Clock::now();
  if (rc != 0)
    error = "ptxas exited with " + std::to_string(rc) +
            (msg.empty() ? "" : ": " + msg);
  return seconds(t0, t1);
}

/// The CPU time (user + system) of this process's threads so far (not of
/// its children: ptxas is not counted).
double cpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

/// How many cores this process gets now: `n` threads each spin the same
/// loop one thread spins alone; n x (time alone) / (time of the n). 1 on a
/// machine with no idle core, `n` on an idle one with `n` cores.
double coresAvailable(unsigned n) {
  auto spin = [] {
    volatile uint64_t x = 0;
    for (uint64_t i = 0; i < 100000000; ++i)
      x = x + i;
  };
  auto t0 = Clock::now();
  spin();
  double alone = seconds(t0, Clock::now());
  std::vector<std::thread> threads;
  auto t1 = Clock::now();
  for (unsigned i = 0; i < n; ++i)
    threads.emplace_back(spin);
  for (std::thread &t : threads)
    t.join();
  return n * alone / seconds(t1, Clock::now());
}

/// The first line of /proc/loadavg, or "?".
std::string loadAverage() {
  auto buf = llvm::MemoryBuffer::getFileAsStream("/proc/loadavg");
  if (!buf)
    return "?";
  return (*buf)->getBuffer().split('\n').first.str();
}

struct Row {
  std::string file;
  uint64_t bytes = 0;
  size_t kernels = 0;
  double oursMs = 0, ptxasMs = 0, hitUs = 0;
  /// With --serial: compile() with threads=1, and the CPU time of the
  /// timed compile (threads as given) and of the serial one; negative when
  /// not measured.
  double serialMs = -1, oursCpuMs = -1, serialCpuMs = -1;
  /// gfx942 compile time; negative when not measured (refused for AMD).
  double amdMs = -1;
};
} // namespace

int main(int argc, char **argv) {
  programName = "wooly-nvptx-bench";
  cl::HideUnrelatedOptions(benchCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "wooly-nvptx-bench: sm_90 compile() time vs. ptxas on the same PTX\n");
  if (reps == 0 || numFiles == 0)
    die("--reps and --files must be positive");
  if (!llvm::sys::fs::can_execute(ptxasPath))
    die("no ptxas at " + ptxasPath + " (see --ptxas)");
  Target sm90 = check(Target::parse("sm_90"), "target");
  Target gfx942 = check(Target::parse("gfx942"), "target");
  CompileOptions options;
  options.threads = threads;
  CompileOptions serialOptions;
  serialOptions.threads = 1;
  std::string loadBefore = loadAverage();
  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  double coresBefore = coresAvailable(hw);

  auto files = corpusFiles(corpusDir);
  if (files.size() > numFiles)
    files.resize(numFiles);
  if (files.empty())
    die("no *.sm_90.ptx files in " + corpusDir);

  std::vector<Row> rows;
  std::vector<std::string> notes;
  CompileCache cache;
  for (const auto &[path, size] : files) {
    std::string name = llvm::sys::path::filename(path).str();
    CompileInput input{CompileInput::Kind::PTX, readFile(path), name};
    // Warm-up (also decides whether the file is supported).
    auto first = compile(input, sm90, options);
    if (!first) {
      std::string err = llvm::toString(first.takeError());
      if (err.find("not supported yet") == std::string::npos)
        die("compile " + name + ": " + err);
      std::string line = err.substr(0, err.find('\n'));
      notes.push_back(name + ": skipped, refused by our compiler (" + line +
                      ")");
      continue;
    }
    Row row;
    row.file = name;
    row.bytes = size;
    row.kernels = first->kernels.size();

    std::string ptxasError;
    runPtxas(path, ptxasError); // Warm-up.
    if (!ptxasError.empty()) {
      notes.push_back(name + ": skipped, " + ptxasError);
      continue;
    }
    // gfx942: a warm-up, which also decides whether AMD takes the file
    // (the ROCDL lowering refuses some constructs; the error is noted).
    bool timeAMD = amdgpu;
    if (timeAMD) {
      auto amd = compile(input, gfx942, options);
      if (!amd) {
        std::string err = llvm::toString(amd.takeError());
        notes.push_back(name + ": gfx942 not timed (" +
                        err.substr(0, err.find('\n')) + ")");
        timeAMD = false;
      }
    }
    // Interleave ours and ptxas so that both see the same machine state.
    std::vector<double> ours, theirs, amdTimes, serialTimes, oursCpu, serialCpu;
    for (unsigned r = 0; r < reps; ++r) {
      double c0 = cpuSeconds();
      auto t0 = Clock::now();
      CompiledModule m =
          check(compile(input, sm90, options), "compile " + name);
      auto t1 = Clock::now();
      oursCpu.push_back(cpuSeconds() - c0);
      ours.push_back(seconds(t0, t1));
      if (serial) {
        double c1 = cpuSeconds();
        auto t2 = Clock::now();
        CompiledModule one =
            check(compile(input, sm90, serialOptions), "compile " + name);
        serialTimes.push_back(seconds(t2, Clock::now()));
        serialCpu.push_back(cpuSeconds() - c1);
        if (one.binary != m.binary)
          die(name + ": threads=1 and threads=" + std::to_string(threads) +
              " give different PTX");
      }
      theirs.push_back(runPtxas(path, ptxasError));
      if (!ptxasError.empty())
        die(name + ": " + ptxasError);
      if (timeAMD) {
        auto t2 = Clock::now();
        check(compile(input, gfx942, options), "compile " + name + " gfx942");
        amdTimes.push_back(seconds(t2, Clock::now()));
      }
    }
    row.oursMs = median(ours) * 1e3;
    row.ptxasMs = median(theirs) * 1e3;
    if (timeAMD)
      row.amdMs = median(amdTimes) * 1e3;
    row.oursCpuMs = median(oursCpu) * 1e3;
    if (serial) {
      row.serialMs = median(serialTimes) * 1e3;
      row.serialCpuMs = median(serialCpu) * 1e3;
    }

    // CompileCache: one miss, then 101 hits.
    check(cache.getOrCompile(input, sm90, options), "cache miss " + name);
    std::vector<double> hits;
    for (int r = 0; r < 101; ++r) {
      auto t0 = Clock::now();
      auto hit = check(cache.getOrCompile(input, sm90, options), "cache hit");
      auto t1 = Clock::now();
      hits.push_back(seconds(t0, t1));
    }
    row.hitUs = median(hits) * 1e6;
    rows.push_back(row);
  }

  std::printf("Wooly compile() for sm_90 (PTX import + passes + NVPTX codegen) "
              "vs. ptxas -arch=sm_90 on the original PTX\n");
  std::printf("median of %u interleaved runs after one warm-up each; ptxas is "
              "a subprocess (includes process start-up); cache hit: median "
              "of 101\n",
              unsigned(reps));
  if (amdgpu)
    std::printf("gfx942: compile() of the same PTX for gfx942 (ROCDL + AMDGPU "
                "codegen + ld.lld subprocess), median of %u runs "
                "interleaved with the above\n",
                unsigned(reps));
  std::printf("%-28s %7s %7s %10s %10s %8s %12s %9s %10s %8s\n", "file",
              "bytes", "kernels", "ours ms", "ptxas ms", "ours/px", "ms/kernel",
              "hit us", "gfx942 ms", "gfx/sm90");
  const std::string rule(118, '-');
  std::printf("%s\n", rule.c_str());
  std::vector<double> col[8];
  // `v` in a column of `width`, or "-" when not measured (negative).
  auto cell = [](double v, int width, int precision) {
    char buf[32];
    if (v < 0)
      std::snprintf(buf, sizeof(buf), "%*s", width, "-");
    else
      std::snprintf(buf, sizeof(buf), "%*.*f", width, precision, v);
    return std::string(buf);
  };
  for (const Row &r : rows) {
    double ratio = r.oursMs / r.ptxasMs;
    double perKernel = r.kernels ? r.oursMs / double(r.kernels) : 0;
    double amdRatio = r.amdMs < 0 ? -1 : r.amdMs / r.oursMs;
    std::printf("%-28s %7llu %7zu %10.2f %10.2f %8.2f %12.2f %9.1f %s %s\n",
                r.file.c_str(), (unsigned long long)r.bytes, r.kernels,
                r.oursMs, r.ptxasMs, ratio, perKernel, r.hitUs,
                cell(r.amdMs, 10, 2).c_str(), cell(amdRatio, 8, 2).c_str());
    col[0].push_back(double(r.kernels));
    col[1].push_back(r.oursMs);
    col[2].push_back(r.ptxasMs);
    col[3].push_back(ratio);
    col[4].push_back(perKernel);
    col[5].push_back(r.hitUs);
    if (r.amdMs >= 0) {
      col[6].push_back(r.amdMs);
      col[7].push_back(amdRatio);
    }
  }
  if (rows.empty())
    die("no file could be measured");
  std::printf("%s\n", rule.c_str());
  std::printf("%-28s %7s %7.1f %10.2f %10.2f %8.2f %12.2f %9.1f %s %s\n",
              "median", "", median(col[0]), median(col[1]), median(col[2]),
              median(col[3]), median(col[4]), median(col[5]),
              cell(col[6].empty() ? -1 : median(col[6]), 10, 2).c_str(),
              cell(col[7].empty() ? -1 : median(col[7]), 8, 2).c_str());
  for (const std::string &n : notes)
    std::printf("note: %s\n", n.c_str());

  // The parallel compile against threads=1, per file.
  std::printf("\ncompile() with threads=%u (%s) vs. threads=1, same runs; "
              "CPU: this process's user+system time of one compile (all its "
              "threads)\n",
              unsigned(threads), threads == 0 ? "the default" : "as given");
  std::printf("load average before: %s; after: %s\n", loadBefore.c_str(),
              loadAverage().c_str());
  std::printf("cores this process got of %u (%u threads spinning vs. one): "
              "%.2f before, %.2f after\n",
              hw, hw, coresBefore, coresAvailable(hw));
  std::printf("%-28s %7s %10s %10s %8s %10s %10s\n", "file", "kernels",
              "N-thr ms", "1-thr ms", "1/N", "N-thr cpu", "1-thr cpu");
  std::vector<double> tcol[5];
  for (const Row &r : rows) {
    double speedup = r.serialMs < 0 ? -1 : r.serialMs / r.oursMs;
    std::printf("%-28s %7zu %10.2f %s %s %10.2f %s\n", r.file.c_str(),
                r.kernels, r.oursMs, cell(r.serialMs, 10, 2).c_str(),
                cell(speedup, 8, 2).c_str(), r.oursCpuMs,
                cell(r.serialCpuMs, 10, 2).c_str());
    tcol[0].push_back(r.oursMs);
    tcol[2].push_back(r.oursCpuMs);
    if (r.serialMs >= 0) {
      tcol[1].push_back(r.serialMs);
      tcol[3].push_back(speedup);
      tcol[4].push_back(r.serialCpuMs);
    }
  }
  auto med = [&](const std::vector<double> &v, int width) {
    return cell(v.empty() ? -1 : median(v), width, 2);
  };
  std::printf("%-28s %7s %s %s %s %s %s\n", "median", "",
              med(tcol[0], 10).c_str(), med(tcol[1], 10).c_str(),
              med(tcol[3], 8).c_str(), med(tcol[2], 10).c_str(),
              med(tcol[4], 10).c_str());

  double medRatio = median(col[3]), medHit = median(col[5]);
  double maxHit = *std::max_element(col[5].begin(), col[5].end());
  std::printf("\ntargets:\n");
  std::printf("  median full compile within 2x of ptxas: median ours/ptxas "
              "%.2f -> %s\n",
              medRatio, medRatio <= 2.0 ? "MET" : "NOT MET");
  std::printf("  cache hit under 100 us: median %.1f us, max %.1f us -> %s\n",
              medHit, maxHit, maxHit < 100.0 ? "MET" : "NOT MET");
  return 0;
}
