//===- Trace.h - Schedules as Chrome trace JSON (Perfetto) ------*- C++ -*-===//
//
// A timeline of what ran where and when, in the Chrome trace event format
// (JSON object form) that Perfetto (ui.perfetto.dev) and chrome://tracing
// open: one track per tenant, one complete ("X") event per dispatch with its
// kernel, blocks and slice as arguments. Written by `wooly-serve --trace`
// and by the sim (lib/Sim).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_SERVER_TRACE_H
#define WOOLY_SERVER_TRACE_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace wooly::server {

class TraceWriter {
public:
  /// Names track `track` (a tenant) and orders it by `track`.
  void nameTrack(unsigned track, const std::string &name);
  /// A span on `track` from `startUs` for `durUs` microseconds; `args` are
  /// shown as the event's arguments (values are strings or numbers as
  /// written: a value that parses as a number is written as one).
  void span(unsigned track, const std::string &name, double startUs,
            double durUs,
            const std::vector<std::pair<std::string, std::string>> &args = {});
  /// An instant event (a preemption, an arrival) on `track`.
  void instant(unsigned track, const std::string &name, double atUs);
  /// Spans kept; more are dropped (and counted) so a long run cannot take
  /// all memory.
  void setLimit(size_t events) { limit = events; }
  size_t dropped() const { return droppedEvents; }
  size_t size() const { return events.size(); }

  /// The whole trace as JSON.
  std::string json() const;
  /// Writes `json()` to `path` (atomically: a temporary file renamed).
  llvm::Error write(const std::string &path) const;

private:
  std::vector<std::string> events;
  size_t limit = 4u << 20;
  size_t droppedEvents = 0;
};

} // namespace wooly::server

#endif // WOOLY_SERVER_TRACE_H
