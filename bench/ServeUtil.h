//===- ServeUtil.h - Benchmarks that start wooly-serve ---------*- C++ -*-===//
//
// What the benchmarks that run their own wooly-serve share: where the
// server binary is, a temporary folder for its socket and log, starting it
// and stopping it.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_BENCH_SERVEUTIL_H
#define WOOLY_BENCH_SERVEUTIL_H

#include "BenchUtil.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <csignal>
#include <optional>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace wooly::bench {

/// `serve` if given, else the wooly-serve beside the program whose `main`
/// is at `mainAddr` (argv0 = argv[0]).
inline std::string servePathOr(const std::string &serve, const char *argv0,
                               void *mainAddr) {
  if (!serve.empty())
    return serve;
  return (llvm::sys::path::parent_path(
              llvm::sys::fs::getMainExecutable(argv0, mainAddr)) +
          "/wooly-serve")
      .str();
}

/// A new temporary folder named after `prefix` (dies when it cannot).
inline std::string makeTempDir(const char *prefix) {
  llvm::SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(prefix, dir))
    die("temporary directory: " + ec.message());
  return dir.str().str();
}

/// Starts `serve` with `args` (after argv[0]), its output to `log`;
/// returns its pid (dies when it cannot start).
inline pid_t startServe(const std::string &serve,
                        const std::vector<std::string> &args,
                        const std::string &log) {
  std::vector<llvm::StringRef> argv = {serve};
  argv.insert(argv.end(), args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {
      llvm::StringRef(""), llvm::StringRef(log), llvm::StringRef(log)};
  std::string err;
  llvm::sys::ProcessInfo pi =
      llvm::sys::ExecuteNoWait(serve, argv, std::nullopt, redirects, 0, &err);
  if (pi.Pid <= 0)
    die("cannot start " + serve + ": " + err);
  return pi.Pid;
}

/// Stops a server started by startServe (SIGTERM: it drains and exits).
inline void stopServe(pid_t &pid) {
  if (pid <= 0)
    return;
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  pid = -1;
}

} // namespace wooly::bench

#endif // WOOLY_BENCH_SERVEUTIL_H
