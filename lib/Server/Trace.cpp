//===- Trace.cpp - Schedules as Chrome trace JSON ---------------*- C++ -*-===//

#include "Wooly/Server/Trace.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace wooly::server;

namespace {
std::string quoted(const std::string &s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::json::Value(s);
  return out;
}

bool isNumber(const std::string &s) {
  if (s.empty())
    return false;
  char *end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && s.find_first_of("nNiI") == s.npos;
}
} // namespace

void TraceWriter::nameTrack(unsigned track, const std::string &name) {
  events.push_back(
      llvm::formatv(R"({{"ph":"M","pid":1,"tid":{0},)"
                    R"("name":"thread_name","args":{{"name":{1}}})",
                    track, quoted(name))
          .str());
  events.push_back(llvm::formatv(R"({{"ph":"M","pid":1,"tid":{0},)"
                                 R"("name":"thread_sort_index",)"
                                 R"("args":{{"sort_index":{0}}})",
                                 track)
                       .str());
}

void TraceWriter::span(
    unsigned track, const std::string &name, double startUs, double durUs,
    const std::vector<std::pair<std::string, std::string>> &args) {
  if (events.size() >= limit) {
    droppedEvents++;
    return;
  }
  std::string a;
  for (const auto &[k, v] : args) {
    if (!a.empty())
      a += ",";
    a += quoted(k) + ":" + (isNumber(v) ? v : quoted(v));
  }
  events.push_back(llvm::formatv(R"({{"ph":"X","pid":1,"tid":{0},"name":{1},)"
                                 R"("ts":{2:f3},"dur":{3:f3},"args":{{{4}}})",
                                 track, quoted(name), startUs, durUs, a)
                       .str());
}

void TraceWriter::instant(unsigned track, const std::string &name,
                          double atUs) {
  if (events.size() >= limit) {
    droppedEvents++;
    return;
  }
  events.push_back(llvm::formatv(R"({{"ph":"i","s":"t","pid":1,"tid":{0},)"
                                 R"("name":{1},"ts":{2:f3}})",
                                 track, quoted(name), atUs)
                       .str());
}

std::string TraceWriter::json() const {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (size_t i = 0; i < events.size(); ++i) {
    out += events[i];
    out += i + 1 < events.size() ? ",\n" : "\n";
  }
  out += "]";
  if (droppedEvents)
    out +=
        ",\"metadata\":{\"dropped_events\":" + std::to_string(droppedEvents) +
        "}";
  out += "}\n";
  return out;
}

llvm::Error TraceWriter::write(const std::string &path) const {
  std::string tmp = path + ".tmp";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmp, ec);
    if (ec)
      return llvm::createStringError(ec, "cannot write trace '" + tmp +
                                             "': " + ec.message());
    os << json();
    os.close();
    if (os.has_error())
      return llvm::createStringError(os.error(),
                                     "cannot write trace '" + tmp +
                                         "': " + os.error().message());
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, path))
    return llvm::createStringError(ec, "cannot write trace '" + path +
                                           "': " + ec.message());
  return llvm::Error::success();
}
