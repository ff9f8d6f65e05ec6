//===- FatbinTest.cpp - Tests of the capture layer's fatbin reader -------===//
//
// Reads the fatbins nvcc 13 wrote for Inputs/kernels.cu (one per compression
// mode, -rdc, a device-linked one, one with identifiers, one of LTO IR; see
// Inputs/README.md), builds version-1 and version-2 wrappers around them, and
// feeds the reader truncated, corrupted and absurd input, always from
// exactly-sized heap buffers so that a read past the end lands outside the
// allocation.
//
//===----------------------------------------------------------------------===//

#include "Fatbin.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>

using namespace wooly::capture;

namespace {

std::string readInput(const std::string &name) {
  std::ifstream in(std::string(WOOLY_CAPTURE_INPUTS_DIR) + "/" + name,
                   std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// What fatbinary makes of nvcc's PTX before storing it: comments dropped,
/// runs of blanks folded into one space, lines trimmed (line breaks kept).
std::string compactPtx(const std::string &ptx) {
  std::string result;
  std::istringstream lines(ptx);
  std::string line;
  bool first = true;
  while (std::getline(lines, line)) {
    if (!first)
      result += '\n';
    first = false;
    line = line.substr(0, line.find("//"));
    std::string folded;
    for (char c : line) {
      bool blank = c == ' ' || c == '\t';
      if (blank && (folded.empty() || folded.back() == ' '))
        continue;
      folded += blank ? ' ' : c;
    }
    while (!folded.empty() && folded.back() == ' ')
      folded.pop_back();
    result += folded;
  }
  if (!ptx.empty() && ptx.back() == '\n')
    result += '\n';
  return result;
}

/// A heap copy of `bytes` with no slack after it.
struct ExactBuffer {
  explicit ExactBuffer(std::string_view bytes)
      : data(new char[bytes.size()]), size(bytes.size()) {
    std::memcpy(data.get(), bytes.data(), size);
  }
  std::string_view view() const { return {data.get(), size}; }
  std::unique_ptr<char[]> data;
  size_t size;
};

/// An 8-byte aligned copy of `bytes`, as fatbins are in a program image.
struct AlignedBuffer {
  explicit AlignedBuffer(std::string_view bytes)
      : words((bytes.size() + 7) / 8) {
    std::memcpy(words.data(), bytes.data(), bytes.size());
  }
  const unsigned long long *data() const { return words.data(); }
  std::vector<unsigned long long> words;
};

/// `__fatBinC_Wrapper_t` (CUDA's fatbinary_section.h).
struct TestWrapper {
  int magic;
  int version;
  const unsigned long long *data;
  void *filenameOrFatbins;
};

void put16(std::string &bytes, size_t offset, uint16_t value) {
  for (int i = 0; i < 2; ++i)
    bytes[offset + i] = char(value >> (8 * i));
}
void put32(std::string &bytes, size_t offset, uint32_t value) {
  for (int i = 0; i < 4; ++i)
    bytes[offset + i] = char(value >> (8 * i));
}
void put64(std::string &bytes, size_t offset, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    bytes[offset + i] = char(value >> (8 * i));
}
uint16_t get16(std::string_view bytes, size_t offset) {
  return uint16_t(uint8_t(bytes[offset]) | uint8_t(bytes[offset + 1]) << 8);
}

const char *const AllFatbins[] = {
    "kernels.default.fatbin", "kernels.speed.fatbin", "kernels.size.fatbin",
    "kernels.none.fatbin",    "kernels.rdc.fatbin",   "kernels.linked.fatbin",
    "kernels.ident.fatbin",   "kernels.lto.fatbin"};

/// The index of the first entry of `kind`, or -1.
int find(const std::vector<FatbinEntry> &entries, EntryKind kind) {
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].kind == kind)
      return int(i);
  return -1;
}

/// Parses `bytes`, which must be valid.
std::vector<FatbinEntry> parseValid(std::string_view bytes) {
  std::vector<FatbinEntry> entries;
  std::string error;
  EXPECT_TRUE(parseFatbin(bytes, entries, error)) << error;
  return entries;
}

/// The offset of the first entry of `kind` in the valid fatbin `bytes`.
size_t entryOffset(const std::string &bytes, EntryKind kind) {
  std::vector<FatbinEntry> entries = parseValid(bytes);
  int index = find(entries, kind);
  EXPECT_GE(index, 0);
  return index < 0 ? 0 : entries[size_t(index)].offset;
}

/// Parses `bytes` (from an exact copy), which must be rejected with an error
/// containing `message`.
void expectRejected(const std::string &bytes, const std::string &message) {
  ExactBuffer buffer(bytes);
  std::vector<FatbinEntry> entries;
  std::string error;
  EXPECT_FALSE(parseFatbin(buffer.view(), entries, error));
  EXPECT_TRUE(entries.empty());
  EXPECT_NE(error.find(message), std::string::npos) << error;
}

FatbinEntry ptxEntry(uint32_t arch, uint64_t flags = 0) {
  FatbinEntry entry;
  entry.kind = EntryKind::Ptx;
  entry.arch = arch;
  entry.flags = flags;
  return entry;
}

FatbinEntry elfEntry(uint32_t arch) {
  FatbinEntry entry = ptxEntry(arch);
  entry.kind = EntryKind::Elf;
  return entry;
}

//===----------------------------------------------------------------------===//
// The nvcc outputs
//===----------------------------------------------------------------------===//

struct Mode {
  const char *file;
  Compression ptx;
  Compression elf;
  bool relocatable;
};

std::ostream &operator<<(std::ostream &os, const Mode &mode) {
  return os << mode.file;
}

class FatbinModeTest : public ::testing::TestWithParam<Mode> {};

// Each compression mode: the ELF and PTX entries have the right arch and
// compression, and the PTX decompresses to what nvcc -ptx printed (compacted
// as fatbinary does), the ELF to a cubin (the same bytes as the uncompressed
// one, except for -rdc's relocatable object).
TEST_P(FatbinModeTest, ParsesAndDecompresses) {
  const Mode &mode = GetParam();
  std::string bytes = readInput(mode.file);
  ASSERT_FALSE(bytes.empty()) << "missing input " << mode.file;
  ExactBuffer buffer(bytes);
  EXPECT_EQ(fatbinSize(buffer.data.get()), bytes.size());

  std::vector<FatbinEntry> entries;
  std::string error;
  ASSERT_TRUE(parseFatbin(buffer.view(), entries, error)) << error;
  ASSERT_EQ(entries.size(), 2u);
  int ptxIndex = find(entries, EntryKind::Ptx);
  int elfIndex = find(entries, EntryKind::Elf);
  ASSERT_GE(ptxIndex, 0);
  ASSERT_GE(elfIndex, 0);
  const FatbinEntry &ptx = entries[size_t(ptxIndex)];
  const FatbinEntry &elf = entries[size_t(elfIndex)];

  std::string expectedPtx = compactPtx(readInput("kernels.ptx"));
  ASSERT_FALSE(expectedPtx.empty());
  EXPECT_EQ(ptx.arch, 75u);
  EXPECT_EQ(ptx.versionMajor, 9u);
  EXPECT_EQ(ptx.versionMinor, 0u);
  EXPECT_EQ(ptx.compression, mode.ptx);
  EXPECT_EQ(ptx.uncompressedSize,
            mode.ptx == Compression::None ? 0 : expectedPtx.size() + 1);
  EXPECT_TRUE(ptx.identifier.empty());
  EXPECT_EQ(ptx.options, mode.relocatable ? "--compile-only" : "");
  EXPECT_EQ(elf.arch, 75u);
  EXPECT_EQ(elf.compression, mode.elf);
  EXPECT_TRUE(elf.options.empty());
  for (const FatbinEntry &entry : entries) {
    EXPECT_GE(entry.payload.data(), buffer.data.get());
    EXPECT_LE(entry.payload.data() + entry.payload.size(),
              buffer.data.get() + buffer.size);
  }
  // PTX headers are 80 bytes (96 with -rdc's options record), ELF ones 64.
  EXPECT_EQ(size_t(ptx.payload.data() - buffer.data.get()),
            ptx.offset + (mode.relocatable ? 96 : 80));
  EXPECT_EQ(size_t(elf.payload.data() - buffer.data.get()), elf.offset + 64);

  EXPECT_EQ(pickPtx(entries), ptxIndex);
  EXPECT_EQ(pickPtx(entries, 75), ptxIndex);
  EXPECT_EQ(pickPtx(entries, 90), ptxIndex);
  EXPECT_EQ(pickPtx(entries, 60), ptxIndex);

  std::string text;
  ASSERT_TRUE(entryContents(ptx, text, error)) << error;
  EXPECT_EQ(text, expectedPtx);
  EXPECT_EQ(text.find('\0'), std::string::npos);

  std::string cubin;
  ASSERT_TRUE(entryContents(elf, cubin, error)) << error;
  ASSERT_GT(cubin.size(), 64u);
  EXPECT_EQ(cubin.substr(0, 4), "\x7f"
                                "ELF");
  // e_type: ET_REL (1) for -rdc objects, ET_EXEC (2) otherwise.
  EXPECT_EQ(get16(cubin, 16), mode.relocatable ? 1 : 2);
  if (!mode.relocatable) {
    std::string plainBytes = readInput("kernels.none.fatbin");
    std::vector<FatbinEntry> plain = parseValid(plainBytes);
    int plainElf = find(plain, EntryKind::Elf);
    ASSERT_GE(plainElf, 0);
    EXPECT_EQ(cubin, plain[size_t(plainElf)].payload);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Nvcc13, FatbinModeTest,
    ::testing::Values(Mode{"kernels.default.fatbin", Compression::Zstd,
                           Compression::None, false},
                      Mode{"kernels.speed.fatbin", Compression::Lz4,
                           Compression::None, false},
                      Mode{"kernels.size.fatbin", Compression::Zstd,
                           Compression::Zstd, false},
                      Mode{"kernels.none.fatbin", Compression::None,
                           Compression::None, false},
                      Mode{"kernels.rdc.fatbin", Compression::Zstd,
                           Compression::Zstd, true}),
    [](const ::testing::TestParamInfo<Mode> &info) {
      std::string name = info.param.file;
      name = name.substr(8, name.find(".fatbin") - 8); // kernels.<name>.fatbin
      name[0] = char(std::toupper(name[0]));
      return name;
    });

// fatbinary --ident --cmdline: both entries carry the identifier, the PTX
// entry the options; the ELF entry's header grows to 80 bytes.
TEST(FatbinTest, IdentifierAndOptions) {
  std::string bytes = readInput("kernels.ident.fatbin");
  ExactBuffer buffer(bytes);
  std::vector<FatbinEntry> entries = parseValid(buffer.view());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].kind, EntryKind::Ptx);
  EXPECT_EQ(entries[0].identifier, "myident.cu");
  EXPECT_EQ(entries[0].options, "-O3 -v");
  EXPECT_EQ(entries[1].kind, EntryKind::Elf);
  EXPECT_EQ(entries[1].identifier, "myident.cu");
  EXPECT_EQ(entries[1].options, "");
  EXPECT_EQ(entries[1].payload.data() - buffer.data.get(),
            ptrdiff_t(entries[1].offset + 80));
  EXPECT_EQ(pickPtx(entries), 0);
  std::string text, error;
  ASSERT_TRUE(entryContents(entries[0], text, error)) << error;
  EXPECT_EQ(text, compactPtx(readInput("kernels.ptx")));
}

// The device-linked fatbin of an -rdc program: one linked ELF, no PTX.
TEST(FatbinTest, LinkedFatbinHasNoPtx) {
  std::string bytes = readInput("kernels.linked.fatbin");
  std::vector<FatbinEntry> entries = parseValid(bytes);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].kind, EntryKind::Elf);
  EXPECT_EQ(entries[0].arch, 75u);
  EXPECT_EQ(pickPtx(entries), -1);
  EXPECT_EQ(pickPtx(entries, 75), -1);
}

// LTO IR entries (kind 8) parse, are never picked, and their payload (flagged
// zstd, but not a zstd frame) is refused with a message.
TEST(FatbinTest, LtoIrEntry) {
  std::string bytes = readInput("kernels.lto.fatbin");
  std::vector<FatbinEntry> entries = parseValid(bytes);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].kind, EntryKind::LtoIr);
  EXPECT_EQ(entries[0].arch, 75u);
  EXPECT_EQ(pickPtx(entries), -1);
  std::string out, error;
  EXPECT_FALSE(entryContents(entries[0], out, error));
  EXPECT_NE(error.find("not a zstd frame"), std::string::npos) << error;
  EXPECT_TRUE(out.empty());
}

// A .nv_fatbin section holds fatbins back to back: fatbinSize() steps from one
// to the next and parseFatbin() reads only the first of what it is given.
TEST(FatbinTest, BackToBack) {
  std::string section;
  for (const char *file : AllFatbins)
    section += readInput(file);
  ExactBuffer buffer(section);
  size_t offset = 0, count = 0;
  while (offset < buffer.size) {
    ASSERT_LE(16u, buffer.size - offset);
    size_t size = fatbinSize(buffer.data.get() + offset);
    ASSERT_NE(size, 0u);
    ASSERT_LE(size, buffer.size - offset);
    std::string expected = readInput(AllFatbins[count]);
    EXPECT_EQ(size, expected.size());
    std::vector<FatbinEntry> entries;
    std::string error;
    EXPECT_TRUE(parseFatbin(buffer.view().substr(offset), entries, error))
        << error;
    EXPECT_EQ(entries.size(), parseValid(expected).size());
    offset += size;
    ++count;
  }
  EXPECT_EQ(count, std::size(AllFatbins));
}

//===----------------------------------------------------------------------===//
// pickPtx
//===----------------------------------------------------------------------===//

// The highest arch <= maxArch, else the highest; ELF entries never count.
TEST(FatbinTest, PickPtx) {
  std::vector<FatbinEntry> entries = {elfEntry(90), ptxEntry(75), ptxEntry(120),
                                      elfEntry(120), ptxEntry(90)};
  EXPECT_EQ(pickPtx(entries), 2);
  EXPECT_EQ(pickPtx(entries, 0), 2);
  EXPECT_EQ(pickPtx(entries, 75), 1);
  EXPECT_EQ(pickPtx(entries, 86), 1);
  EXPECT_EQ(pickPtx(entries, 90), 4);
  EXPECT_EQ(pickPtx(entries, 100), 4);
  EXPECT_EQ(pickPtx(entries, 120), 2);
  EXPECT_EQ(pickPtx(entries, 121), 2);
  EXPECT_EQ(pickPtx(entries, 60), 2); // nothing runs: the highest
  EXPECT_EQ(pickPtx({}), -1);
  EXPECT_EQ(pickPtx({elfEntry(75), elfEntry(90)}, 90), -1);
  // Two entries of one arch: the first.
  EXPECT_EQ(pickPtx({ptxEntry(80), ptxEntry(80)}, 90), 0);
}

// compute_90a PTX runs only on sm_90, compute_100f only within family 10.x;
// at equal arch the portable entry wins.
TEST(FatbinTest, PickPtxArchAndFamilySpecific) {
  FatbinEntry sm90a = ptxEntry(90, FatbinFlagArchSpecific);
  FatbinEntry sm100f = ptxEntry(100, FatbinFlagFamilySpecific);
  EXPECT_EQ(pickPtx({sm90a, ptxEntry(90)}, 90), 1);
  EXPECT_EQ(pickPtx({ptxEntry(90), sm90a}, 90), 0);
  EXPECT_EQ(pickPtx({sm90a, ptxEntry(90)}), 1);
  EXPECT_EQ(pickPtx({sm90a, ptxEntry(80)}, 90), 0);
  EXPECT_EQ(pickPtx({sm90a, ptxEntry(80)}, 100), 1);
  EXPECT_EQ(pickPtx({sm100f, ptxEntry(80)}, 100), 0);
  EXPECT_EQ(pickPtx({sm100f, ptxEntry(80)}, 103), 0);
  EXPECT_EQ(pickPtx({sm100f, ptxEntry(80)}, 120), 1);
  EXPECT_EQ(pickPtx({sm100f, ptxEntry(80)}, 90), 1);
  // Nothing runs on sm_75: the highest, portable first.
  EXPECT_EQ(pickPtx({sm90a, sm100f, ptxEntry(100)}, 75), 2);
}

//===----------------------------------------------------------------------===//
// Wrappers
//===----------------------------------------------------------------------===//

// A version-1 wrapper: its one fatbin, bounded by its header even when more
// follows it in memory; the PTX comes out decompressed.
TEST(FatbinTest, WrapperVersion1) {
  std::string bytes = readInput("kernels.default.fatbin");
  AlignedBuffer image(bytes + readInput("kernels.speed.fatbin"));
  TestWrapper wrapper = {0x466243B1, 1, image.data(), nullptr};

  WrapperImages images;
  std::string error;
  ASSERT_TRUE(readWrapper(&wrapper, images, error)) << error;
  EXPECT_EQ(images.version, 1);
  EXPECT_EQ(images.linkedIndex, -1);
  ASSERT_EQ(images.fatbins.size(), 1u);
  EXPECT_EQ(static_cast<const void *>(images.fatbins[0].data()),
            static_cast<const void *>(image.data()));
  EXPECT_EQ(images.fatbins[0], bytes);

  std::vector<std::string> ptx;
  ASSERT_TRUE(ptxFromWrapper(&wrapper, ptx, error)) << error;
  ASSERT_EQ(ptx.size(), 1u);
  EXPECT_EQ(ptx[0], compactPtx(readInput("kernels.ptx")));
  ASSERT_TRUE(ptxFromWrapper(&wrapper, ptx, error, 90)) << error;
  EXPECT_EQ(ptx.size(), 1u);

  // A fatbin without PTX gives none.
  AlignedBuffer linked(readInput("kernels.linked.fatbin"));
  TestWrapper noPtx = {0x466243B1, 1, linked.data(), nullptr};
  ASSERT_TRUE(ptxFromWrapper(&noPtx, ptx, error)) << error;
  EXPECT_TRUE(ptx.empty());
}

// A version-2 (-rdc) wrapper: the linked fatbin (flagged, no PTX) and every
// per-object fatbin of the NULL-terminated array, one PTX text per object.
TEST(FatbinTest, WrapperVersion2) {
  std::string linkedBytes = readInput("kernels.linked.fatbin");
  std::string rdcBytes = readInput("kernels.rdc.fatbin");
  std::string speedBytes = readInput("kernels.speed.fatbin");
  AlignedBuffer linked(linkedBytes), rdc(rdcBytes), speed(speedBytes);
  const void *objects[] = {rdc.data(), speed.data(), nullptr};
  TestWrapper wrapper = {0x466243B1, 2, linked.data(), objects};

  WrapperImages images;
  std::string error;
  ASSERT_TRUE(readWrapper(&wrapper, images, error)) << error;
  EXPECT_EQ(images.version, 2);
  ASSERT_EQ(images.fatbins.size(), 3u);
  EXPECT_EQ(images.linkedIndex, 0);
  EXPECT_EQ(images.fatbins[0], linkedBytes);
  EXPECT_EQ(images.fatbins[1], rdcBytes);
  EXPECT_EQ(images.fatbins[2], speedBytes);

  std::vector<std::string> ptx;
  ASSERT_TRUE(ptxFromWrapper(&wrapper, ptx, error)) << error;
  std::string expected = compactPtx(readInput("kernels.ptx"));
  ASSERT_EQ(ptx.size(), 2u);
  EXPECT_EQ(ptx[0], expected);
  EXPECT_EQ(ptx[1], expected);

  // No linked fatbin and an empty array.
  const void *none[] = {nullptr};
  TestWrapper empty = {0x466243B1, 2, nullptr, none};
  ASSERT_TRUE(readWrapper(&empty, images, error)) << error;
  EXPECT_TRUE(images.fatbins.empty());
  EXPECT_EQ(images.linkedIndex, -1);
  ASSERT_TRUE(ptxFromWrapper(&empty, ptx, error)) << error;
  EXPECT_TRUE(ptx.empty());
}

// Bad wrappers and bad fatbins behind good wrappers are errors.
TEST(FatbinTest, WrapperErrors) {
  std::string bytes = readInput("kernels.default.fatbin");
  AlignedBuffer good(bytes);
  std::string badBytes = bytes;
  badBytes[0] ^= 1;
  AlignedBuffer bad(badBytes);
  std::string corruptBytes = bytes;
  put32(corruptBytes, entryOffset(bytes, EntryKind::Ptx) + 4, 8);
  AlignedBuffer corrupt(corruptBytes);

  auto expectError = [](const void *wrapper, const std::string &message) {
    WrapperImages images;
    std::string error;
    EXPECT_FALSE(readWrapper(wrapper, images, error));
    EXPECT_TRUE(images.fatbins.empty());
    EXPECT_NE(error.find(message), std::string::npos) << error;
    std::vector<std::string> ptx;
    error.clear();
    EXPECT_FALSE(ptxFromWrapper(wrapper, ptx, error));
    EXPECT_TRUE(ptx.empty());
    EXPECT_NE(error.find(message), std::string::npos) << error;
  };
  expectError(nullptr, "null fatbin wrapper");
  TestWrapper badMagic = {0x466243B0, 1, good.data(), nullptr};
  expectError(&badMagic, "magic 0x466243b0");
  TestWrapper badVersion = {0x466243B1, 3, good.data(), nullptr};
  expectError(&badVersion, "version 3");
  TestWrapper noData = {0x466243B1, 1, nullptr, nullptr};
  expectError(&noData, "has no fatbin");
  TestWrapper badData = {0x466243B1, 1, bad.data(), nullptr};
  expectError(&badData, "the data at");
  TestWrapper badLinked = {0x466243B1, 2, bad.data(), nullptr};
  expectError(&badLinked, "the linked data at");
  const void *objects[] = {good.data(), bad.data(), nullptr};
  TestWrapper badObject = {0x466243B1, 2, good.data(), objects};
  expectError(&badObject, "prelinked fatbin 1 at");

  // A readable wrapper whose fatbin is malformed: ptxFromWrapper names it.
  const void *corruptObjects[] = {good.data(), corrupt.data(), nullptr};
  TestWrapper corruptObject = {0x466243B1, 2, nullptr, corruptObjects};
  WrapperImages images;
  std::string error;
  EXPECT_TRUE(readWrapper(&corruptObject, images, error)) << error;
  std::vector<std::string> ptx;
  EXPECT_FALSE(ptxFromWrapper(&corruptObject, ptx, error));
  EXPECT_TRUE(ptx.empty());
  EXPECT_NE(error.find("fatbin 1 of the wrapper"), std::string::npos) << error;
  EXPECT_NE(error.find("smaller than 64"), std::string::npos) << error;
}

//===----------------------------------------------------------------------===//
// Malformed fatbins
//===----------------------------------------------------------------------===//

// Every prefix of every fatbin is rejected, both as is (the header's size
// runs past the end) and with the header's size shrunk to fit (an entry runs
// past the end) -- except where the shrunk fatbin ends at an entry boundary.
TEST(FatbinTest, Truncated) {
  for (const char *file : AllFatbins) {
    SCOPED_TRACE(file);
    std::string bytes = readInput(file);
    ASSERT_FALSE(bytes.empty());
    std::vector<FatbinEntry> full = parseValid(bytes);
    // boundaries[i]: the length of a fatbin holding the first i entries.
    std::vector<size_t> boundaries = {16};
    for (size_t i = 1; i < full.size(); ++i)
      boundaries.push_back(full[i].offset);
    boundaries.push_back(bytes.size());

    for (size_t length = 0; length <= bytes.size(); ++length) {
      ExactBuffer buffer(std::string_view(bytes).substr(0, length));
      std::vector<FatbinEntry> entries;
      std::string error;
      bool ok = parseFatbin(buffer.view(), entries, error);
      ASSERT_EQ(ok, length == bytes.size()) << "length " << length;
      if (!ok) {
        ASSERT_FALSE(error.empty());
        ASSERT_TRUE(entries.empty());
      }
      if (length < 16)
        continue;

      std::string shrunk = bytes.substr(0, length);
      put64(shrunk, 8, length - 16);
      ExactBuffer shrunkBuffer(shrunk);
      error.clear();
      ok = parseFatbin(shrunkBuffer.view(), entries, error);
      auto boundary = std::find(boundaries.begin(), boundaries.end(), length);
      ASSERT_EQ(ok, boundary != boundaries.end()) << "length " << length;
      if (ok)
        ASSERT_EQ(entries.size(), size_t(boundary - boundaries.begin()));
      else
        ASSERT_NE(error.find("runs past the end of the fatbin"),
                  std::string::npos)
            << error;
    }
  }
}

// Every prefix of every compressed payload is refused by entryContents().
TEST(FatbinTest, TruncatedPayloads) {
  size_t checked = 0;
  for (const char *file : AllFatbins) {
    SCOPED_TRACE(file);
    std::string bytes = readInput(file);
    for (const FatbinEntry &entry : parseValid(bytes)) {
      if (entry.compression == Compression::None ||
          entry.kind == EntryKind::LtoIr)
        continue;
      ++checked;
      for (size_t length = 0; length <= entry.payload.size(); ++length) {
        ExactBuffer buffer(entry.payload.substr(0, length));
        FatbinEntry truncated = entry;
        truncated.payload = buffer.view();
        std::string out, error;
        bool ok = entryContents(truncated, out, error);
        ASSERT_EQ(ok, length == entry.payload.size())
            << "length " << length << ": " << error;
        if (!ok) {
          ASSERT_TRUE(out.empty());
        }
      }
    }
  }
  EXPECT_EQ(checked, 7u);
}

// Random bytes flipped in headers and in payloads: the reader says yes or no,
// never crashes, and whatever it accepts lies within the buffer.
TEST(FatbinTest, RandomCorruption) {
  std::mt19937 random(20250101);
  // Both answers must occur, or the corruption is not reaching the checks.
  size_t rejected = 0, decoded = 0, refused = 0;
  for (const char *file : AllFatbins) {
    SCOPED_TRACE(file);
    std::string bytes = readInput(file);
    std::vector<FatbinEntry> full = parseValid(bytes);
    std::vector<size_t> headerBytes, payloadBytes;
    for (size_t i = 0; i < 16; ++i)
      headerBytes.push_back(i);
    for (const FatbinEntry &entry : full) {
      size_t payload = size_t(entry.payload.data() - bytes.data());
      for (size_t i = entry.offset; i < payload; ++i)
        headerBytes.push_back(i);
      for (size_t i = payload; i < payload + entry.payload.size(); ++i)
        payloadBytes.push_back(i);
    }

    for (int iteration = 0; iteration < 4000; ++iteration) {
      const std::vector<size_t> &where =
          iteration % 2 ? payloadBytes : headerBytes;
      std::string corrupt = bytes;
      int flips = 1 + int(random() % 4);
      for (int i = 0; i < flips; ++i) {
        size_t at = where[random() % where.size()];
        switch (random() % 3) {
        case 0:
          corrupt[at] ^= char(1 << (random() % 8));
          break;
        case 1:
          corrupt[at] = char(random());
          break;
        default:
          corrupt[at] = char(random() % 2 ? 0xff : 0);
          break;
        }
      }
      ExactBuffer buffer(corrupt);
      std::vector<FatbinEntry> entries;
      std::string error;
      if (!parseFatbin(buffer.view(), entries, error)) {
        ++rejected;
        ASSERT_FALSE(error.empty());
        ASSERT_TRUE(entries.empty());
        continue;
      }
      for (const FatbinEntry &entry : entries) {
        ASSERT_LT(entry.offset, buffer.size);
        ASSERT_GE(entry.payload.data(), buffer.data.get() + entry.offset + 64);
        ASSERT_LE(entry.payload.data() + entry.payload.size(),
                  buffer.data.get() + buffer.size);
        for (std::string_view field : {entry.identifier, entry.options}) {
          if (!field.empty()) {
            ASSERT_TRUE(field.data() >= buffer.data.get() + entry.offset &&
                        field.data() + field.size() <= entry.payload.data());
          }
        }
        std::string out;
        error.clear();
        if (entryContents(entry, out, error)) {
          ++decoded;
          ASSERT_LE(out.size(), MaxUncompressedSize);
        } else {
          ++refused;
          ASSERT_FALSE(error.empty());
          ASSERT_TRUE(out.empty());
        }
      }
    }
  }
  EXPECT_GT(rejected, 1000u);
  EXPECT_GT(decoded, 1000u);
  EXPECT_GT(refused, 1000u);
}

// Not a fatbin, or not one this reader knows.
TEST(FatbinTest, WrongMagicAndVersion) {
  std::string bytes = readInput("kernels.default.fatbin");
  std::string badMagic = bytes;
  badMagic[3] = 0;
  EXPECT_EQ(fatbinSize(badMagic.data()), 0u);
  expectRejected(badMagic, "bad fatbin magic 0x00");
  expectRejected(std::string(64, '\0'), "bad fatbin magic");
  expectRejected("", "needs 16 bytes");

  std::string badVersion = bytes;
  put16(badVersion, 4, 2);
  expectRejected(badVersion, "unsupported fatbin version 2");

  std::string smallHeader = bytes;
  put16(smallHeader, 6, 8);
  expectRejected(smallHeader, "header_size 8 is smaller than 16");

  size_t ptx = entryOffset(bytes, EntryKind::Ptx);
  std::string badKind = bytes;
  put16(badKind, ptx, 3);
  expectRejected(badKind, "fatbin entry 1 at offset 0x1430: unknown kind 3");
  std::string badEntryVersion = bytes;
  put16(badEntryVersion, ptx + 2, 0x0102);
  expectRejected(badEntryVersion, "unsupported entry version 0x102");
}

// Entry headers shorter than the fixed 64 bytes.
TEST(FatbinTest, SmallEntryHeader) {
  std::string bytes = readInput("kernels.none.fatbin");
  for (uint32_t size : {0u, 16u, 63u}) {
    std::string small = bytes;
    put32(small, 16 + 4, size);
    expectRejected(small, "fatbin entry 0 at offset 0x10: header_size " +
                              std::to_string(size) + " is smaller than 64");
  }
  // A bigger header_size moves the payload: the reader follows it.
  std::string bigger = bytes;
  size_t ptx = entryOffset(bytes, EntryKind::Ptx);
  put32(bigger, ptx + 4, 88);
  put64(bigger, ptx + 8, 2256 - 8);
  std::vector<FatbinEntry> entries = parseValid(bigger);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].payload.size(), 2256u - 8);
}

// Sizes near UINT64_MAX (and UINT32_MAX) are rejected without wrapping.
TEST(FatbinTest, GiantSizes) {
  std::string bytes = readInput("kernels.default.fatbin");
  size_t ptx = entryOffset(bytes, EntryKind::Ptx);

  for (uint64_t entriesSize :
       {~uint64_t(0), ~uint64_t(0) - 15, ~uint64_t(0) - 16, uint64_t(1) << 63,
        uint64_t(bytes.size())}) {
    std::string giant = bytes;
    put64(giant, 8, entriesSize);
    expectRejected(giant, "runs past the end of the 0x1758 bytes given");
    if (entriesSize > ~uint64_t(0) - 16) {
      EXPECT_EQ(fatbinSize(giant.data()), 0u);
    }
  }
  std::string giantHeader = bytes;
  put16(giantHeader, 6, 0xffff);
  expectRejected(giantHeader, "runs past the end");

  // Entry sizes whose sum with the header or the offset wraps to small values.
  for (uint64_t payloadSize : {~uint64_t(0), ~uint64_t(0) - 79,
                               ~uint64_t(0) - 80 - 0x1430 + 1, uint64_t(736)}) {
    std::string giant = bytes;
    put64(giant, ptx + 8, payloadSize);
    expectRejected(giant, "fatbin entry 1 at offset 0x1430: payload of " +
                              std::to_string(payloadSize) +
                              " bytes runs past the end of the fatbin "
                              "(0x1758 bytes)");
  }
  for (uint32_t headerSize : {~uint32_t(0), ~uint32_t(0) - 79, 0x1758u}) {
    std::string giant = bytes;
    put32(giant, ptx + 4, headerSize);
    expectRejected(giant, "header of " + std::to_string(headerSize) +
                              " bytes runs past the end");
  }
  std::string giantCompressed = bytes;
  put32(giantCompressed, ptx + 16, ~uint32_t(0));
  expectRejected(giantCompressed, "exceeds the payload size 728");

  // Identifier and options records out of range are ignored.
  std::string wild = bytes;
  put32(wild, ptx + 20, ~uint32_t(0));
  put32(wild, ptx + 32, ~uint32_t(0) - 3);
  put32(wild, ptx + 36, 8);
  std::vector<FatbinEntry> entries = parseValid(wild);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_TRUE(entries[1].identifier.empty());
  EXPECT_TRUE(entries[1].options.empty());
  std::string wildRecord = bytes;
  put32(wildRecord, ptx + 64, ~uint32_t(0)); // the options record's offset
  put32(wildRecord, ptx + 68, 16);
  entries = parseValid(wildRecord);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_TRUE(entries[1].options.empty());
}

// The compression flags and sizes must agree.
TEST(FatbinTest, InconsistentCompression) {
  std::string bytes = readInput("kernels.default.fatbin");
  size_t ptx = entryOffset(bytes, EntryKind::Ptx);
  size_t elf = entryOffset(bytes, EntryKind::Elf);

  std::string both = bytes;
  put64(both, ptx + 40, 0x8011 | FatbinFlagLz4);
  expectRejected(both, "both the LZ4 and the zstd flag are set");
  std::string noSize = bytes;
  put32(noSize, ptx + 16, 0);
  expectRejected(noSize, "flagged zstd but its compressed size is 0");
  std::string noFlag = bytes;
  put32(noFlag, elf + 16, 100);
  expectRejected(noFlag, "compressed size 100 but no known compression flag");
}

// A zstd frame may claim any content size in its header: a claim its blocks
// cannot back is refused before anything of that size is allocated (the
// fatbin fuzzer's out-of-memory input: a 900 MB claim, a few bytes of data).
TEST(FatbinTest, ZstdClaimsTheBlocksCannotBack) {
  // Magic, a single-segment descriptor with an 8-byte content size
  // (900,000,000), then one raw block of 4 bytes.
  std::string frame = "\x28\xb5\x2f\xfd\xe0";
  for (int i = 0; i < 8; ++i)
    frame += char((900000000ull >> (8 * i)) & 0xff);
  std::string lastBlock = frame + std::string("\x21\x00\x00", 3) + "abcd";
  std::string openBlock = frame + std::string("\x20\x00\x00", 3) + "abcd";
  auto contents = [](const std::string &payload, const std::string &message) {
    FatbinEntry entry{EntryKind::Ptx};
    entry.compression = Compression::Zstd;
    entry.payload = payload;
    std::string out, error;
    EXPECT_FALSE(entryContents(entry, out, error));
    EXPECT_TRUE(out.empty());
    EXPECT_NE(error.find(message), std::string::npos) << error;
  };
  contents(lastBlock, "uncompressed size 900000000 is impossible for a zstd "
                      "frame whose blocks hold at most 4 bytes");
  // Without its last block the frame is not whole.
  contents(openBlock, "the payload is not one well-formed zstd frame");
}

// entryContents() refuses sizes it cannot or will not produce.
TEST(FatbinTest, UncompressedSizes) {
  auto contents = [](const std::string &file, EntryKind kind,
                     uint64_t uncompressedSize, const std::string &message) {
    std::string bytes = readInput(file);
    std::vector<FatbinEntry> entries = parseValid(bytes);
    int index = find(entries, kind);
    ASSERT_GE(index, 0);
    FatbinEntry entry = entries[size_t(index)];
    entry.uncompressedSize = uncompressedSize;
    std::string out = "stale", error;
    EXPECT_FALSE(entryContents(entry, out, error));
    EXPECT_TRUE(out.empty());
    EXPECT_NE(error.find(message), std::string::npos) << error;
    EXPECT_NE(error.find("fatbin entry at offset 0x"), std::string::npos);
  };
  // zstd: the header must agree with the frame.
  contents("kernels.default.fatbin", EntryKind::Ptx, ~uint64_t(0),
           "the zstd frame holds 2253 bytes, the header says 1844674407");
  contents("kernels.size.fatbin", EntryKind::Elf, 5089,
           "the zstd frame holds 5088 bytes, the header says 5089");
  // LZ4: none, over 1 GiB, more than the data can expand to, or not exact.
  contents("kernels.speed.fatbin", EntryKind::Ptx, 0,
           "without an uncompressed size");
  contents("kernels.speed.fatbin", EntryKind::Ptx, ~uint64_t(0),
           "over the limit of 1 GiB");
  contents("kernels.speed.fatbin", EntryKind::Ptx, MaxUncompressedSize + 1,
           "over the limit of 1 GiB");
  contents("kernels.speed.fatbin", EntryKind::Ptx, 1039 * 256 + 257,
           "impossible for 1039 bytes of LZ4 data");
  contents("kernels.speed.fatbin", EntryKind::Ptx, 2252, "corrupt LZ4 data");
  contents("kernels.speed.fatbin", EntryKind::Ptx, 2254,
           "LZ4 data decompressed to 2253 bytes instead of 2254");
}

} // namespace
