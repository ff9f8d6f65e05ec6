//===- Log.h - Diagnostics of the capture libraries -------------*- C++ -*-===//
//
// The drop-ins run inside user programs, so they speak only on stderr,
// prefixed "wooly: ", and only as much as WOOLY_LOG asks:
//   0  nothing;
//   1  errors a CUDA call returns (with the server's message) and calls Wooly
//      does not implement, each name once (the default);
//   2  also what happens once per process (connection, module loads).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_CAPTURE_LOG_H
#define WOOLY_CAPTURE_LOG_H

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace wooly::capture {

inline int logLevel() {
  static const int level = [] {
    const char *v = std::getenv("WOOLY_LOG");
    return v && *v ? std::atoi(v) : 1;
  }();
  return level;
}

__attribute__((format(printf, 2, 3))) inline void log(int level,
                                                      const char *fmt, ...) {
  if (logLevel() < level)
    return;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "wooly: %s\n", buf);
}

/// Logs "NAME is not supported by Wooly yet" the first time NAME is called.
inline void logUnsupportedOnce(const char *name, const char *why = nullptr) {
  static std::mutex mu;
  static std::set<std::string> seen;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!seen.insert(name).second)
      return;
  }
  log(1, "%s is not supported by Wooly yet%s%s (further calls fail silently)",
      name, why ? ": " : "", why ? why : "");
}

} // namespace wooly::capture

#endif // WOOLY_CAPTURE_LOG_H
