//===- BenchUtil.h - Small helpers shared by the benchmarks ----*- C++ -*-===//
//
// Timing, medians and fatal errors for the programs in bench/.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_BENCH_BENCHUTIL_H
#define WOOLY_BENCH_BENCHUTIL_H

#include "llvm/Support/Error.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace wooly::bench {

using Clock = std::chrono::steady_clock;

/// The benchmark's name, for error messages (set by main).
inline const char *programName = "benchmark";

/// Seconds from `a` to `b`.
inline double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// The median of `v` (the mean of the middle two for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// The value of `--name=VALUE` among the arguments, or `fallback`.
inline std::string option(int argc, char **argv, const char *name,
                          std::string fallback) {
  std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).compare(0, prefix.size(), prefix) == 0)
      return argv[i] + prefix.size();
  return fallback;
}

/// Prints `programName: msg` and exits with status 1.
[[noreturn]] inline void die(const std::string &msg) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s: %s\n", programName, msg.c_str());
  std::exit(1);
}

/// The value of `v`, or `die` with `what` and the error.
template <typename T> T check(llvm::Expected<T> v, const std::string &what) {
  if (!v)
    die(what + ": " + llvm::toString(v.takeError()));
  return std::move(*v);
}

/// `die` with `what` and the error when `e` is one.
inline void check(llvm::Error e, const std::string &what) {
  if (e)
    die(what + ": " + llvm::toString(std::move(e)));
}

} // namespace wooly::bench

#endif // WOOLY_BENCH_BENCHUTIL_H
