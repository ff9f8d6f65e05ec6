//===- wooly-fuzz-fatbin.cpp - Fuzzes the fatbin reader ---------*- C++ -*-===//
//
// The input is the bytes of a `.nv_fatbin` section: fatbins back to back.
// Each is walked (parseFatbin), every entry decompressed (entryContents),
// the PTX entry picked for a few device archs (pickPtx), and, when its
// header's size fits the input, read again through a version-1
// `__fatBinC_Wrapper_t` the way __cudaRegisterFatBinary gets it
// (ptxFromWrapper). Malformed input must give `false` and a message; a
// crash, a sanitizer report or an entry outside the input is a bug.
//
//===----------------------------------------------------------------------===//

#include "Fatbin.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace wooly::capture;

/// Device archs pickPtx() chooses for: none (the highest), Turing, Hopper,
/// Blackwell.
static const uint32_t kArchs[] = {0, 75, 90, 120};

/// Checks that `view` lies within [begin, end).
static void checkWithin(std::string_view view, const char *begin,
                        const char *end) {
  if (!view.empty() && (view.data() < begin || view.data() > end ||
                        view.size() > size_t(end - view.data())))
    std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // An 8-byte aligned copy: a wrapper's `data` is a `const unsigned long
  // long *`, and the first fatbin of a section starts aligned.
  std::vector<uint64_t> aligned((size + 7) / 8);
  if (size)
    std::memcpy(aligned.data(), data, size);
  const char *bytes = reinterpret_cast<const char *>(aligned.data());
  std::string_view section(bytes, size);

  std::vector<FatbinEntry> entries;
  std::string error, contents;
  for (size_t pos = 0; size - pos >= 16;) {
    std::string_view rest = section.substr(pos);
    size_t fatbin = fatbinSize(rest.data());
    if (!parseFatbin(rest, entries, error))
      break;
    for (const FatbinEntry &e : entries) {
      for (std::string_view v : {e.identifier, e.options, e.payload})
        checkWithin(v, rest.data(), rest.data() + rest.size());
      (void)entryContents(e, contents, error);
    }
    for (uint32_t arch : kArchs) {
      int picked = pickPtx(entries, arch);
      if (picked >= int(entries.size()) ||
          (picked >= 0 && entries[picked].kind != EntryKind::Ptx))
        std::abort();
    }
    // parseFatbin() accepted it, so its header fits, and a wrapper (which
    // trusts the header) may point at it.
    if (fatbin < 16 || fatbin > rest.size())
      std::abort();
    struct {
      int32_t magic = int32_t(FatbinWrapperMagic), version = 1;
      const void *data, *filenameOrFatbins = nullptr;
    } wrapper;
    wrapper.data = rest.data();
    std::vector<std::string> ptx;
    (void)ptxFromWrapper(&wrapper, ptx, error);
    // The next fatbin of the section starts 8-byte aligned.
    pos += std::min(rest.size(), (fatbin + 7) & ~size_t(7));
  }
  return 0;
}
