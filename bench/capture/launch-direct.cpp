//===- launch-direct.cpp - launch_loop.cu through the client library -----===//
//
// wooly-capture-launch-direct: the baseline of bench/capture-bench.py. It
// makes the launches of launch_loop.cu (the same kernel, from the PTX that
// `nvcc -ptx` makes of that file at build time) through the client library
// (include/Wooly/Client/Client.h) directly, without the capture layer:
//
//   wooly-capture-launch-direct PTX [N]     (default N: 200000)
//
// The server is the one of WOOLY_SERVER (else the client's default), as
// for a captured program. It loads the PTX with Client::loadModule, takes
// the kernel whose name contains "tick" (the mangled `tick(int *, int)`)
// from the module's kernel list, allocates 4 bytes, warms up (a launch and
// a deviceSynchronize), then times N `Client::launch` calls of <<<1, 32>>>
// on the default stream with the parameter buffer packed per the returned
// layout (the pointer, then i, written into the buffer before each call as
// `tick<<<1, 32>>>(p, i)` passes it), then a deviceSynchronize on its own,
// checks that p[0] == N - 1 and prints the line launch_loop prints:
//
//   launches=N cpu_ns_per_launch=C wall_ns_per_launch=W sync_ms=S
//   total_ns_per_launch=T proc_cpu_ns_per_launch=P
//
// Links the client library only (no LLVM), like the capture layer.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Client/Client.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace wooly::client;

namespace {

[[noreturn]] void die(const std::string &msg) {
  std::fflush(stdout);
  std::fprintf(stderr, "wooly-capture-launch-direct: %s\n", msg.c_str());
  std::exit(1);
}

void check(const Status &s, const char *what) {
  if (!s.ok())
    die(std::string(what) + ": " + s.str());
}

double now(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

} // namespace

int main(int argc, char **argv) {
  const char *usage =
      "usage: wooly-capture-launch-direct PTX [N]\n"
      "  N launches (default 200000) of the 'tick' kernel of PTX\n"
      "  (launch_loop.ptx) through the client library, on the server of\n"
      "  WOOLY_SERVER; see bench/README.md\n";
  if (argc >= 2 &&
      (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
    std::fputs(usage, stdout);
    return 0;
  }
  if (argc < 2 || argc > 3) {
    std::fputs(usage, stderr);
    return 1;
  }
  long n = argc > 2 ? std::atol(argv[2]) : 200000;
  if (n < 1 || n > (1L << 30))
    die("N must be at least 1");
  std::ifstream in(argv[1], std::ios::binary);
  if (!in)
    die(std::string("cannot read '") + argv[1] + "'");
  std::stringstream text;
  text << in.rdbuf();
  std::string ptx = text.str();

  Options o;
  o.clientName = "wooly-capture-launch-direct";
  Status st;
  std::unique_ptr<Client> c = Client::connect(o, st);
  if (!c)
    die("cannot open a session on wooly-serve: " + st.str());

  Module m;
  check(c->loadModule(ptx, "launch_loop", m), "loadModule");
  const KernelLayout *k = nullptr;
  for (const KernelLayout &kl : m.kernels)
    if (kl.name.find("tick") != std::string::npos)
      k = &kl;
  if (!k || k->paramOffsets.size() != 2 || k->paramSizes[0] != 8 ||
      k->paramSizes[1] != 4)
    die("no kernel tick(int *, int) in the PTX");
  // The name as the capture layer passes it: a std::string it keeps.
  const std::string kernel = k->name;

  uint64_t p = 0;
  check(c->malloc(sizeof(int), p), "malloc");
  std::vector<char> params(k->paramBufferSize);
  const uint64_t pOffset = k->paramOffsets[0], vOffset = k->paramOffsets[1];
  std::memcpy(params.data() + pOffset, &p, 8);
  auto launch = [&](int v) {
    std::memcpy(params.data() + vOffset, &v, 4);
    return c->launch(m.handle, kernel, {1}, {32}, 0, params.data(),
                     params.size(), 0);
  };

  // Warm-up: the server compiles the kernel.
  check(launch(-1), "launch");
  check(c->deviceSynchronize(), "deviceSynchronize after the warm-up");

  double c0 = now(CLOCK_THREAD_CPUTIME_ID);
  double p0 = now(CLOCK_PROCESS_CPUTIME_ID);
  double w0 = now(CLOCK_MONOTONIC);
  for (long i = 0; i < n; ++i)
    if (Status s = launch(int(i)); !s.ok())
      die("launch " + std::to_string(i) + ": " + s.str());
  double c1 = now(CLOCK_THREAD_CPUTIME_ID);
  double w1 = now(CLOCK_MONOTONIC);
  check(c->deviceSynchronize(), "deviceSynchronize");
  double w2 = now(CLOCK_MONOTONIC);
  double p1 = now(CLOCK_PROCESS_CPUTIME_ID);

  int v = 0;
  check(c->copyFromDevice(&v, p, sizeof v), "copyFromDevice");
  check(c->free(p), "free");
  check(c->unloadModule(m.handle), "unloadModule");
  if (v != int(n - 1))
    die("p[0] = " + std::to_string(v) + " after the loop, expected " +
        std::to_string(n - 1));
  std::printf("launches=%ld cpu_ns_per_launch=%.1f wall_ns_per_launch=%.1f "
              "sync_ms=%.3f total_ns_per_launch=%.1f "
              "proc_cpu_ns_per_launch=%.1f\n",
              n, (c1 - c0) / double(n), (w1 - w0) / double(n), (w2 - w1) / 1e6,
              (w2 - w0) / double(n), (p1 - p0) / double(n));
  return 0;
}
