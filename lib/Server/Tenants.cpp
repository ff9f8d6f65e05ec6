//===- Tenants.cpp - The tenants file of wooly-serve ------------*- C++ -*-===//
//
// Parsed with yaml-cpp; every error names the file, line and column of the
// offending node.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Server/Tenants.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <yaml-cpp/yaml.h>

#include <cmath>

using namespace wooly::server;
using llvm::StringRef;

StringRef wooly::server::className(PriorityClass c) {
  switch (c) {
  case PriorityClass::LatencyCritical:
    return "latency-critical";
  case PriorityClass::Normal:
    return "normal";
  case PriorityClass::BestEffort:
    return "best-effort";
  }
  return "normal";
}

const TenantConfig *TenantRegistry::find(StringRef name) const {
  for (const TenantConfig &t : tenants)
    if (t.name == name)
      return &t;
  return nullptr;
}

llvm::Expected<uint64_t> wooly::server::parseByteSize(StringRef text) {
  StringRef t = text.trim();
  size_t digits = 0;
  while (digits < t.size() && (isdigit(t[digits]) || t[digits] == '.'))
    ++digits;
  StringRef number = t.take_front(digits), unit = t.drop_front(digits).trim();
  double value = 0;
  if (number.empty() || number.getAsDouble(value) || value < 0)
    return llvm::createStringError(
        "'" + text + "' is not a byte size (e.g. 4096, 512MiB, 4GiB, 1GB)");
  struct Unit {
    const char *name;
    double factor;
  } units[] = {{"", 1},
               {"B", 1},
               {"KiB", 1024.0},
               {"MiB", 1024.0 * 1024},
               {"GiB", 1024.0 * 1024 * 1024},
               {"TiB", 1024.0 * 1024 * 1024 * 1024},
               {"KB", 1e3},
               {"MB", 1e6},
               {"GB", 1e9},
               {"TB", 1e12}};
  for (const Unit &u : units)
    if (unit == u.name) {
      double bytes = std::floor(value * u.factor);
      if (bytes >= 18446744073709551615.0)
        return llvm::createStringError("'" + text + "' is too large");
      return uint64_t(bytes);
    }
  return llvm::createStringError("'" + text + "': unknown unit '" + unit +
                                 "' (B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
}

namespace {
llvm::Error errorAt(StringRef file, const YAML::Node &node,
                    const llvm::Twine &msg) {
  YAML::Mark m = node.Mark();
  return llvm::createStringError(
      llvm::formatv("{0}:{1}:{2}: {3}", file, m.line + 1, m.column + 1, msg)
          .str());
}
} // namespace

llvm::Expected<TenantRegistry> wooly::server::parseTenants(StringRef text,
                                                           StringRef name) {
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception &e) {
    return llvm::createStringError(llvm::formatv("{0}:{1}:{2}: {3}", name,
                                                 e.mark.line + 1,
                                                 e.mark.column + 1, e.msg)
                                       .str());
  }
  if (!root.IsMap() || !root["tenants"])
    return llvm::createStringError(name +
                                   ": expected a map with a 'tenants' list");
  YAML::Node list = root["tenants"];
  if (!list.IsSequence())
    return errorAt(name, list, "'tenants' must be a list");
  TenantRegistry reg;
  reg.open = false;
  llvm::StringSet<> seen;
  try {
    for (const YAML::Node &n : list) {
      if (!n.IsMap())
        return errorAt(name, n, "a tenant must be a map (name, token, ...)");
      TenantConfig t;
      for (const auto &kv : n) {
        std::string key = kv.first.as<std::string>();
        const YAML::Node &v = kv.second;
        if (key == "name") {
          t.name = v.as<std::string>();
        } else if (key == "token") {
          t.token = v.as<std::string>();
        } else if (key == "class") {
          std::string c = v.as<std::string>();
          if (c == "latency-critical")
            t.priorityClass = PriorityClass::LatencyCritical;
          else if (c == "normal")
            t.priorityClass = PriorityClass::Normal;
          else if (c == "best-effort")
            t.priorityClass = PriorityClass::BestEffort;
          else
            return errorAt(name, v,
                           "unknown class '" + c +
                               "' (latency-critical, normal or best-effort)");
        } else if (key == "weight") {
          long long w = v.as<long long>();
          if (w < 1 || w > 1000000)
            return errorAt(name, v, "weight must be 1 to 1000000");
          t.weight = uint32_t(w);
        } else if (key == "sla_ms") {
          t.slaMs = v.as<double>();
          if (!(t.slaMs > 0))
            return errorAt(name, v, "sla_ms must be positive");
        } else if (key == "memory") {
          auto bytes = parseByteSize(v.as<std::string>());
          if (!bytes)
            return errorAt(name, v, llvm::toString(bytes.takeError()));
          t.quotaBytes = *bytes;
        } else if (key == "dedup") {
          bool on = false;
          if (!YAML::convert<bool>::decode(v, on))
            return errorAt(name, v, "dedup must be true or false");
          t.dedup = on;
        } else if (key == "limits") {
          if (!v.IsMap())
            return errorAt(name, v,
                           "'limits' must be a map (modules, streams, ...)");
          for (const auto &lim : v) {
            std::string what = lim.first.as<std::string>();
            const YAML::Node &lv = lim.second;
            uint64_t *field = what == "modules"       ? &t.limits.modules
                              : what == "streams"     ? &t.limits.streams
                              : what == "events"      ? &t.limits.events
                              : what == "graphs"      ? &t.limits.graphs
                              : what == "allocations" ? &t.limits.allocations
                              : what == "outstanding" ? &t.limits.outstanding
                              : what == "outstanding_bytes"
                                  ? &t.limits.outstandingBytes
                                  : nullptr;
            if (!field)
              return errorAt(name, lim.first,
                             "unknown limit '" + what +
                                 "' (modules, streams, events, graphs, "
                                 "allocations, outstanding, "
                                 "outstanding_bytes)");
            if (what == "outstanding_bytes") {
              auto bytes = parseByteSize(lv.as<std::string>());
              if (!bytes)
                return errorAt(name, lv, llvm::toString(bytes.takeError()));
              *field = *bytes;
            } else {
              long long n = lv.as<long long>();
              if (n < 1)
                return errorAt(name, lv, "a limit must be at least 1");
              *field = uint64_t(n);
            }
            if (*field == 0)
              return errorAt(name, lv, "a limit must be at least 1");
          }
        } else {
          return errorAt(name, kv.first,
                         "unknown key '" + key +
                             "' (name, token, class, weight, sla_ms, memory, "
                             "dedup, limits)");
        }
      }
      if (t.name.empty())
        return errorAt(name, n, "a tenant needs a 'name'");
      if (t.token.empty())
        return errorAt(name, n, "tenant '" + t.name + "' needs a 'token'");
      if (t.slaMs > 0 && t.priorityClass != PriorityClass::LatencyCritical)
        return errorAt(name, n,
                       "tenant '" + t.name +
                           "': sla_ms is for latency-critical tenants only");
      if (!seen.insert(t.name).second)
        return errorAt(name, n, "tenant '" + t.name + "' is listed twice");
      reg.tenants.push_back(std::move(t));
    }
  } catch (const YAML::Exception &e) {
    return llvm::createStringError(llvm::formatv("{0}:{1}:{2}: {3}", name,
                                                 e.mark.line + 1,
                                                 e.mark.column + 1, e.msg)
                                       .str());
  }
  if (reg.tenants.empty())
    return llvm::createStringError(name + ": the tenants list is empty");
  return reg;
}

llvm::Expected<TenantRegistry> wooly::server::loadTenants(StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return llvm::createStringError("cannot read tenants file '" + path +
                                   "': " + buf.getError().message());
  return parseTenants((*buf)->getBuffer(), path);
}
