//===- Printf.cpp - Device printf and assert --------------------*- C++ -*-===//
//
// CUDA's device-side `vprintf` (the format string and the packed argument
// buffer read, checked, from the kernel's memory and formatted on the
// host) and `__assertfail`, which ends the launch with CUDA's message.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <mutex>

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;

/// Reads a NUL-terminated string from device memory, checking each byte.
static bool readDeviceString(GpuThread *t, uint64_t addr, std::string &out) {
  std::optional<Allocation> a =
      t->worker->launch->reachable(t->worker->linearBlock, addr, 1, false);
  if (!a)
    return false;
  uint64_t end = a->base + a->size;
  for (uint64_t p = addr; p < end; ++p) {
    char c = *reinterpret_cast<const char *>(p);
    if (!c)
      return true;
    out.push_back(c);
  }
  return false;
}

/// Formats CUDA's device printf into `out`: the arguments are packed in a
/// buffer, each aligned to its size (integers promoted to at least 4 bytes,
/// floats to double). False, with `error`, for a format string or an
/// argument outside the thread's memory.
static bool formatDevicePrintf(GpuThread *t, uint64_t format, uint64_t args,
                               uint64_t kernelSp, std::string &out,
                               std::string &error) {
  std::string fmt;
  if (!readDeviceString(t, format, fmt)) {
    error = "printf format string at 0x" + hex(format) +
            " is not a NUL-terminated string in device memory";
    return false;
  }
  uint64_t cursor = args;
  auto take = [&](uint64_t size) -> uint64_t {
    cursor = (cursor + size - 1) / size * size;
    uint64_t v = 0;
    if (!error.empty())
      return 0;
    if (!t->worker->launch->reachable(t->worker->linearBlock, cursor, size,
                                      false)) {
      // The argument buffer is a local array of the calling thread.
      auto [lo, hi] = liveStack(t, kernelSp);
      if (cursor < lo || cursor + size > hi) {
        error =
            "printf argument buffer at 0x" + hex(cursor) + " is out of bounds";
        return 0;
      }
    }
    std::memcpy(&v, reinterpret_cast<const void *>(cursor), size);
    cursor += size;
    return v;
  };
  for (size_t i = 0; i < fmt.size() && error.empty(); ++i) {
    if (fmt[i] != '%') {
      out.push_back(fmt[i]);
      continue;
    }
    size_t start = i++;
    if (i < fmt.size() && fmt[i] == '%') {
      out.push_back('%');
      continue;
    }
    while (i < fmt.size() && strchr("-+ #0", fmt[i]))
      ++i;
    while (i < fmt.size() && (isdigit(fmt[i]) || fmt[i] == '.'))
      ++i;
    int longs = 0;
    while (i < fmt.size() && strchr("hlLqjzt", fmt[i])) {
      if (strchr("lLqjzt", fmt[i]))
        ++longs;
      ++i;
    }
    if (i >= fmt.size())
      break;
    char conv = fmt[i];
    std::string spec = fmt.substr(start, i - start);
    // Strip length modifiers; re-add the one the host needs.
    std::string flags;
    for (char c : spec)
      if (!strchr("hlLqjzt", c))
        flags.push_back(c);
    char buf[512];
    switch (conv) {
    case 'd':
    case 'i': {
      int64_t v = longs ? int64_t(take(8)) : int64_t(int32_t(take(4)));
      snprintf(buf, sizeof buf, (flags + "lld").c_str(), (long long)v);
      break;
    }
    case 'u':
    case 'x':
    case 'X':
    case 'o': {
      uint64_t v = longs ? take(8) : uint64_t(uint32_t(take(4)));
      snprintf(buf, sizeof buf, (flags + "ll" + conv).c_str(),
               (unsigned long long)v);
      break;
    }
    case 'c':
      snprintf(buf, sizeof buf, (flags + "c").c_str(), int(take(4)));
      break;
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
    case 'a':
    case 'A': {
      uint64_t bits = take(8);
      double d;
      std::memcpy(&d, &bits, 8);
      snprintf(buf, sizeof buf, (flags + conv).c_str(), d);
      break;
    }
    case 'p':
      snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)take(8));
      break;
    case 's': {
      uint64_t p = take(8);
      std::string s;
      if (!readDeviceString(t, p, s))
        s = "(bad string)";
      snprintf(buf, sizeof buf, (flags + "s").c_str(), s.c_str());
      break;
    }
    default:
      snprintf(buf, sizeof buf, "%s", spec.c_str());
      break;
    }
    out += buf;
  }
  return error.empty();
}

void __wooly_rt_assertfail(WoolyThreadCtx *ctx, uint64_t message, uint64_t file,
                           uint32_t line, uint64_t function) {
  GpuThread *t = threadOf(ctx);
  {
    // As CUDA prints it: "FILE:LINE: FUNCTION: ... Assertion `MSG` failed."
    // The strings are the kernel's: each is read checked, "?" when it is
    // not in the thread's memory.
    std::string m, f, fn;
    auto read = [&](uint64_t addr, std::string &out) {
      if (!readDeviceString(t, addr, out))
        out = "?";
    };
    read(message, m);
    read(file, f);
    read(function, fn);
    recordFault(t,
                f + ":" + std::to_string(line) + ": " + fn + ": Assertion `" +
                    m + "` failed.",
                FaultKind::Assert);
  }
  leaveFaulted(t);
}

int32_t __wooly_rt_vprintf(WoolyThreadCtx *ctx, uint64_t format,
                           uint64_t args) {
  GpuThread *t = threadOf(ctx);
  uint64_t kernelSp = WOOLY_CALLER_SP;
  int32_t written = 0;
  bool ok;
  {
    // Every string is gone before a fault leaves the thread's frames.
    std::string out, error;
    ok = formatDevicePrintf(t, format, args, kernelSp, out, error);
    if (!ok) {
      recordFault(t, error);
    } else {
      static std::mutex printMutex;
      std::lock_guard<std::mutex> lock(printMutex);
      if (t->worker->launch->printfSink && *t->worker->launch->printfSink)
        (*t->worker->launch->printfSink)(out);
      else {
        fwrite(out.data(), 1, out.size(), stdout);
        fflush(stdout);
      }
      written = int32_t(out.size());
    }
  }
  if (!ok)
    leaveFaulted(t);
  return written;
}
