//===- AppUtil.h - Shared bits of the tenant apps ---------------*- C++ -*-===//
//
// The tenant programs in this directory are written against Wooly's client
// library (include/Wooly/Client/Client.h): they connect to wooly-serve,
// load a module of nvcc's PTX from the corpus, run kernels and check every
// result bit for bit against a host computation.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_TEST_APPS_CLIENT_APPUTIL_H
#define WOOLY_TEST_APPS_CLIENT_APPUTIL_H

#include "Wooly/Client/Client.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace app {

/// Exits with a message when `s` is an error.
inline void check(const wooly::client::Status &s, const char *what) {
  if (s.ok())
    return;
  std::fprintf(stderr, "%s: %s\n", what, s.str().c_str());
  std::exit(1);
}

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read '%s'\n", path.c_str());
    std::exit(1);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A kernel's parameter buffer, filled parameter by parameter.
class Params {
public:
  explicit Params(const wooly::client::KernelLayout &layout)
      : layout(layout), buffer(layout.paramBufferSize) {}
  template <typename T> Params &add(const T &value) {
    if (next >= layout.paramOffsets.size() ||
        layout.paramSizes[next] != sizeof(T)) {
      std::fprintf(stderr, "kernel %s: parameter %zu does not take %zu bytes\n",
                   layout.name.c_str(), next, sizeof(T));
      std::exit(1);
    }
    std::memcpy(buffer.data() + layout.paramOffsets[next++], &value, sizeof(T));
    return *this;
  }
  const void *data() const { return buffer.data(); }
  size_t size() const { return buffer.size(); }

private:
  const wooly::client::KernelLayout &layout;
  std::vector<uint8_t> buffer;
  size_t next = 0;
};

/// The value of `--name=VALUE` among the arguments, or `fallback`.
inline std::string option(int argc, char **argv, const char *name,
                          std::string fallback) {
  std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0)
      return argv[i] + prefix.size();
  return fallback;
}

/// A deterministic pseudo-random stream (xorshift64*).
struct Random {
  uint64_t state;
  explicit Random(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
  }
  float unit() { return float(next() >> 40) / float(1 << 24) * 2.0f - 1.0f; }
};

} // namespace app

#endif // WOOLY_TEST_APPS_CLIENT_APPUTIL_H
