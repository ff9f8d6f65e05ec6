//===- shared_weights.cu - Several tenants, one set of weights ------------===//
//
// What an inference tenant does with a model's weights: copy them to the
// device once and only read them. Run as several tenants at once, wooly-
// serve keeps one copy of identical weights (deduplication). Every
// instance checks its own results bit for bit:
//
//   shared_weights [read|read-chunks|write] [SYNC-DIR N]
//
// `read` (the default) reads the weights with a kernel; `read-chunks` too,
// after copying them to the device in four parts; `write` then also
// adds 1 to each weight with a kernel that writes through its parameter
// (the server gives this tenant a copy of its own first: copy on write)
// and checks that its later reads see its own bytes. With SYNC-DIR and N,
// N instances started together meet there (files): none runs a kernel
// before all have uploaded their weights, a writer writes once the others
// have read theirs twice, and the readers keep theirs until it has written
// (so that its write finds the copy shared).
//
//===----------------------------------------------------------------------===//

#define APP_NAME "shared_weights"
#include "CudaApp.h"

#include <chrono>
#include <cstring>
#include <fstream>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string>
#include <thread>
#include <vector>

__global__ void affine(const float *w, float *y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x)
    y[i] = w[i] * 2.0f + 1.0f;
}

__global__ void bump(float *w, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x)
    w[i] += 1.0f;
}

/// Runs `affine` and compares with the host, for weights `w`.
static void check(const float *dW, float *dY, const std::vector<float> &w,
                  const char *what) {
  int n = int(w.size());
  affine<<<64, 256>>>(dW, dY, n);
  CHECK(cudaGetLastError());
  std::vector<float> y(n);
  CHECK(cudaMemcpy(y.data(), dY, n * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    if (y[i] != w[i] * 2.0f + 1.0f && wrong++ < 5)
      std::printf("%s: y[%d] = %.9g, expected %.9g\n", what, i, y[i],
                  w[i] * 2.0f + 1.0f);
  EXPECT(wrong == 0, "%s: %d of %d results differ", what, wrong, n);
}

/// Waits (up to two minutes) until `count` files named `prefix`* exist in
/// `dir`, polling.
static void waitFor(const std::string &dir, const std::string &prefix,
                    int count) {
  for (int tries = 0; tries < 12000; ++tries) {
    int found = 0;
    for (int i = 0; i < 64; ++i) {
      struct stat st;
      std::string f = dir + "/" + prefix + std::to_string(i);
      found += ::stat(f.c_str(), &st) == 0;
    }
    if (found >= count)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT(false, "timed out waiting for %d '%s' files in %s", count,
         prefix.c_str(), dir.c_str());
}

/// Creates `dir`/`prefix`<the first free number>.
static void announce(const std::string &dir, const std::string &prefix) {
  for (int i = 0; i < 64; ++i) {
    std::string f = dir + "/" + prefix + std::to_string(i);
    int fd = ::open(f.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd >= 0) {
      ::close(fd);
      return;
    }
  }
  EXPECT(false, "cannot create a '%s' file in %s", prefix.c_str(),
         dir.c_str());
}

int main(int argc, char **argv) {
  bool write = argc > 1 && std::strcmp(argv[1], "write") == 0;
  bool chunks = argc > 1 && std::strcmp(argv[1], "read-chunks") == 0;
  std::string sync = argc > 3 ? argv[2] : "";
  int instances = argc > 3 ? std::atoi(argv[3]) : 0;
  const int n = 1 << 20; // 4 MiB of weights
  std::vector<float> w(n);
  for (int i = 0; i < n; ++i)
    w[i] = float(i % 1000) * 0.25f - float(i % 7);

  float *dW, *dY;
  CHECK(cudaMalloc(&dW, n * sizeof(float)));
  CHECK(cudaMalloc(&dY, n * sizeof(float)));
  if (chunks) {
    for (int part = 0; part < 4; ++part)
      CHECK(cudaMemcpy(dW + part * (n / 4), w.data() + part * (n / 4),
                       n / 4 * sizeof(float), cudaMemcpyHostToDevice));
  } else {
    CHECK(cudaMemcpy(dW, w.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  }
  CHECK(cudaDeviceSynchronize());
  if (!sync.empty()) {
    announce(sync, "uploaded.");
    waitFor(sync, "uploaded.", instances);
  }
  // Two steps of inference.
  check(dW, dY, w, "read");
  check(dW, dY, w, "read again");
  // The readers have read (and shared) before the writer writes.
  if (!sync.empty() && !write)
    announce(sync, "read.");
  if (write) {
    if (!sync.empty())
      waitFor(sync, "read.", instances - 1);
    bump<<<64, 256>>>(dW, n);
    CHECK(cudaGetLastError());
    for (float &v : w)
      v += 1.0f;
    check(dW, dY, w, "after write");
    if (!sync.empty())
      announce(sync, "written.");
  } else if (!sync.empty()) {
    waitFor(sync, "written.", 1);
  }
  // The weights themselves, as this tenant last wrote them.
  std::vector<float> back(n);
  CHECK(cudaMemcpy(back.data(), dW, n * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT(std::memcmp(back.data(), w.data(), n * sizeof(float)) == 0,
         "the weights read back differ from what this tenant wrote");
  CHECK(cudaFree(dW));
  CHECK(cudaFree(dY));
  std::printf("%s: %d weights\n", argc > 1 ? argv[1] : "read", n);
  app::pass();
  return 0;
}
