//===- ReplayMain.cpp - Runs a fuzz target on saved inputs ------*- C++ -*-===//
//
// The main of the fuzz targets in the regular build (without libFuzzer):
// runs LLVMFuzzerTestOneInput once on every file named, and on every file
// of every directory named (in name order, skipping dot files), so that the
// seed corpus and the crash regressions of fuzz/ run in every test run.
// Prints how many inputs it ran; a bug shows as a crash or an abort.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char **argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (!fs::is_directory(argv[i], ec)) {
      inputs.push_back(argv[i]);
      continue;
    }
    std::vector<fs::path> files;
    for (const fs::directory_entry &e : fs::directory_iterator(argv[i], ec))
      if (e.is_regular_file() && e.path().filename().string()[0] != '.')
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    inputs.insert(inputs.end(), files.begin(), files.end());
  }
  for (const fs::path &p : inputs) {
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], p.c_str());
      return 1;
    }
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                           bytes.size());
  }
  std::printf("ran %zu inputs\n", inputs.size());
  return 0;
}
