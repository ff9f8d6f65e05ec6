//===- hold.cpp - A tenant that holds memory until killed -------*- C++ -*-===//
//
// wooly-app-hold [--bytes=N]
//
// Allocates N bytes (default 64 MiB), fills them, prints "ready" and then
// waits for its standard input to close. The server's tests kill it with
// SIGKILL to check that a dead client's memory returns to the device.
//
//===----------------------------------------------------------------------===//

#include "AppUtil.h"

#include <unistd.h>

using namespace wooly::client;

int main(int argc, char **argv) {
  uint64_t bytes = std::strtoull(
      app::option(argc, argv, "bytes", "67108864").c_str(), nullptr, 10);
  Status s;
  Options o;
  o.clientName = "wooly-app-hold";
  std::unique_ptr<Client> c = Client::connect(o, s);
  app::check(s, "connect");
  uint64_t addr;
  app::check(c->malloc(bytes, addr), "malloc");
  app::check(c->memset(addr, 0x5a, bytes), "memset");
  app::check(c->deviceSynchronize(), "sync");
  std::printf("ready\n");
  std::fflush(stdout);
  char buf[64];
  while (read(0, buf, sizeof buf) > 0) {
  }
  return 0;
}
