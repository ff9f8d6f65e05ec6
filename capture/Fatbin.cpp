//===- Fatbin.cpp - Reads the fatbins nvcc embeds in programs ---*- C++ -*-===//
//
// Every field is read byte by byte as little-endian from bounds-checked
// offsets, so misaligned or truncated input cannot make the reader touch
// memory outside what it was given. Sizes are compared by subtraction from
// what is left, never by adding to an offset, so values near UINT64_MAX
// cannot wrap. Layout: notes/capture.md, sections 1.2 to 1.5.
//
//===----------------------------------------------------------------------===//

#include "Fatbin.h"

#include <lz4.h>
#include <zstd.h>

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>

using namespace wooly::capture;

namespace {

/// The fatbin header: u32 magic, u16 version, u16 header_size, u64 fat_size.
constexpr size_t FatbinHeaderSize = 16;
/// The fixed part of an entry header (notes/capture.md 1.3).
constexpr size_t EntryHeaderSize = 64;
/// The only entry version nvcc writes (and ZLUDA accepts).
constexpr uint16_t EntryVersion = 0x0101;
/// Bound on the per-object fatbins of a version-2 wrapper, so a missing NULL
/// terminator ends in an error rather than a walk through memory.
constexpr size_t MaxPrelinkedFatbins = 1 << 16;

/// The `__fatBinC_Wrapper_t` of CUDA's `fatbinary_section.h`.
struct RawWrapper {
  int32_t magic;
  int32_t version;
  const void *data;
  const void *filenameOrFatbins;
};

uint16_t le16(const unsigned char *p) { return uint16_t(p[0] | p[1] << 8); }

uint32_t le32(const unsigned char *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}

uint64_t le64(const unsigned char *p) {
  return uint64_t(le32(p)) | uint64_t(le32(p + 4)) << 32;
}

/// printf into a std::string.
__attribute__((format(printf, 1, 2))) std::string formatted(const char *fmt,
                                                            ...) {
  char buffer[256];
  va_list args;
  va_start(args, fmt);
  int length = std::vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  if (length < 0)
    return fmt;
  if (size_t(length) < sizeof(buffer))
    return std::string(buffer, size_t(length));
  std::string result(size_t(length) + 1, '\0');
  va_start(args, fmt);
  std::vsnprintf(&result[0], result.size(), fmt, args);
  va_end(args);
  result.resize(size_t(length));
  return result;
}

/// Runs `fn` (which returns false and sets `error` on failure) so that no
/// exception leaves: an allocation failure becomes `false` plus a message.
template <typename Fn> bool guarded(std::string &error, Fn &&fn) noexcept {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
  try {
    return fn();
  } catch (const std::bad_alloc &) {
    // Fits the small-string buffer that clear() keeps: cannot throw.
    error.clear();
    error = "out of memory";
  } catch (...) {
    error.clear();
    error = "internal error";
  }
  return false;
#else
  (void)error;
  return fn();
#endif
}

const char *kindName(EntryKind kind) {
  switch (kind) {
  case EntryKind::Ptx:
    return "PTX";
  case EntryKind::Elf:
    return "ELF";
  case EntryKind::LtoIr:
    return "LTO IR";
  }
  return "unknown";
}

const char *archPrefix(EntryKind kind) {
  switch (kind) {
  case EntryKind::Ptx:
    return "compute";
  case EntryKind::Elf:
    return "sm";
  case EntryKind::LtoIr:
    return "lto";
  }
  return "arch";
}

/// `view` without its trailing NULs and blanks.
std::string_view trimTrailing(std::string_view view) {
  while (!view.empty() && (view.back() == '\0' || view.back() == ' '))
    view.remove_suffix(1);
  return view;
}

/// The `length` bytes at `offset` of the entry header at `header`, when they
/// lie within its `headerSize` bytes; empty otherwise.
std::string_view headerString(const unsigned char *header, uint32_t headerSize,
                              uint32_t offset, uint32_t length) {
  if (length == 0 || offset > headerSize || length > headerSize - offset)
    return {};
  return {reinterpret_cast<const char *>(header) + offset, length};
}

bool parseImpl(std::string_view bytes, std::vector<FatbinEntry> &entries,
               std::string &error) {
  const auto *base = reinterpret_cast<const unsigned char *>(bytes.data());
  size_t size = bytes.size();
  if (size < FatbinHeaderSize) {
    error = formatted("fatbin header needs 16 bytes, only %zu given", size);
    return false;
  }
  uint32_t magic = le32(base);
  uint16_t version = le16(base + 4);
  uint16_t headerSize = le16(base + 6);
  uint64_t entriesSize = le64(base + 8);
  if (magic != FatbinMagic) {
    error = formatted("bad fatbin magic 0x%08x (expected 0x%08x)", magic,
                      FatbinMagic);
    return false;
  }
  if (version != 1) {
    error = formatted("unsupported fatbin version %u (expected 1)", version);
    return false;
  }
  if (headerSize < FatbinHeaderSize) {
    error = formatted("fatbin header_size %u is smaller than 16", headerSize);
    return false;
  }
  if (headerSize > size || entriesSize > size - headerSize) {
    error = formatted("fatbin of %u header bytes and 0x%llx bytes of entries "
                      "runs past the end of the 0x%zx bytes given",
                      headerSize, (unsigned long long)entriesSize, size);
    return false;
  }
  size_t end = headerSize + size_t(entriesSize);

  for (size_t pos = headerSize, index = 0; pos < end; ++index) {
    const unsigned char *header = base + pos;
    size_t left = end - pos;
    auto fail = [&](const std::string &what) {
      error =
          formatted("fatbin entry %zu at offset 0x%zx: ", index, pos) + what;
      return false;
    };
    if (left < EntryHeaderSize)
      return fail(
          formatted("header of 64 bytes runs past the end of the fatbin "
                    "(0x%zx bytes)",
                    end));

    uint16_t kind = le16(header);
    uint16_t entryVersion = le16(header + 2);
    uint32_t entryHeaderSize = le32(header + 4);
    uint64_t payloadSize = le64(header + 8);
    uint32_t compressedSize = le32(header + 16);
    uint32_t optionsOffset = le32(header + 20);
    uint64_t flags = le64(header + 40);
    if (kind != uint16_t(EntryKind::Ptx) && kind != uint16_t(EntryKind::Elf) &&
        kind != uint16_t(EntryKind::LtoIr))
      return fail(formatted("unknown kind %u", kind));
    if (entryVersion != EntryVersion)
      return fail(formatted("unsupported entry version 0x%x (expected 0x%x)",
                            entryVersion, EntryVersion));
    if (entryHeaderSize < EntryHeaderSize)
      return fail(
          formatted("header_size %u is smaller than 64", entryHeaderSize));
    if (entryHeaderSize > left)
      return fail(
          formatted("header of %u bytes runs past the end of the fatbin "
                    "(0x%zx bytes)",
                    entryHeaderSize, end));
    if (payloadSize > left - entryHeaderSize)
      return fail(formatted("payload of %llu bytes runs past the end of the "
                            "fatbin (0x%zx bytes)",
                            (unsigned long long)payloadSize, end));

    FatbinEntry entry;
    entry.kind = EntryKind(kind);
    entry.versionMinor = le16(header + 24);
    entry.versionMajor = le16(header + 26);
    entry.arch = le32(header + 28);
    entry.flags = flags;
    entry.offset = pos;
    bool lz4 = flags & FatbinFlagLz4, zstd = flags & FatbinFlagZstd;
    if (lz4 && zstd)
      return fail(formatted("both the LZ4 and the zstd flag are set (flags "
                            "0x%llx)",
                            (unsigned long long)flags));
    if ((lz4 || zstd) && compressedSize == 0)
      return fail(formatted("flagged %s but its compressed size is 0",
                            lz4 ? "LZ4" : "zstd"));
    if (!lz4 && !zstd && compressedSize != 0)
      return fail(formatted("compressed size %u but no known compression flag "
                            "(flags 0x%llx)",
                            compressedSize, (unsigned long long)flags));
    if (compressedSize > payloadSize)
      return fail(formatted("compressed size %u exceeds the payload size %llu",
                            compressedSize, (unsigned long long)payloadSize));
    const char *payload =
        reinterpret_cast<const char *>(header) + entryHeaderSize;
    if (lz4 || zstd) {
      entry.compression = lz4 ? Compression::Lz4 : Compression::Zstd;
      entry.payload = {payload, compressedSize};
      entry.uncompressedSize = le64(header + 56);
    } else {
      entry.payload = {payload, size_t(payloadSize)};
    }
    entry.identifier = headerString(header, entryHeaderSize, le32(header + 32),
                                    le32(header + 36));
    // A {u32 offset, u32 length} record of the ptxas options (0 if none).
    if (optionsOffset != 0 && optionsOffset <= entryHeaderSize &&
        entryHeaderSize - optionsOffset >= 8)
      entry.options = trimTrailing(
          headerString(header, entryHeaderSize, le32(header + optionsOffset),
                       le32(header + optionsOffset + 4)));
    entries.push_back(entry);
    pos += entryHeaderSize + size_t(payloadSize);
  }
  return true;
}

/// An upper bound of what the single zstd frame `p` decompresses to, read
/// from its block headers without decompressing: a raw or RLE block gives
/// its size, a compressed one at most 128 KiB (zstd's largest block). None
/// when `p` is not one well-formed frame. A frame header may claim any
/// content size; this keeps a claim that the blocks cannot back from
/// costing an allocation of that size.
std::optional<uint64_t> zstdContentBound(std::string_view p) {
  auto byte = [&](size_t i) { return uint8_t(p[i]); };
  if (p.size() < 6 || byte(0) != 0x28 || byte(1) != 0xb5 || byte(2) != 0x2f ||
      byte(3) != 0xfd)
    return std::nullopt;
  uint8_t descriptor = byte(4);
  bool singleSegment = descriptor & 0x20, checksum = descriptor & 0x04;
  static const size_t dictBytes[] = {0, 1, 2, 4};
  static const size_t sizeBytes[] = {0, 2, 4, 8};
  size_t fcs = sizeBytes[descriptor >> 6];
  if (fcs == 0 && singleSegment)
    fcs = 1;
  size_t at = 5 + (singleSegment ? 0 : 1) + dictBytes[descriptor & 3] + fcs;
  uint64_t bound = 0;
  for (bool last = false; !last;) {
    if (p.size() < 3 || at > p.size() - 3)
      return std::nullopt;
    uint32_t header =
        byte(at) | uint32_t(byte(at + 1)) << 8 | uint32_t(byte(at + 2)) << 16;
    at += 3;
    last = header & 1;
    uint32_t type = (header >> 1) & 3, size = header >> 3;
    size_t stored = type == 1 ? 1 : size; // RLE: one byte, repeated
    if (type == 3 || stored > p.size() - at)
      return std::nullopt;
    at += stored;
    bound += type == 2 ? 128 * 1024 : size;
  }
  if (checksum)
    at += 4;
  if (at != p.size())
    return std::nullopt;
  return bound;
}

bool contentsImpl(const FatbinEntry &entry, std::string &out,
                  std::string &error) {
  auto fail = [&](const std::string &what) {
    error =
        formatted("fatbin entry at offset 0x%zx (%s %s_%u): ", entry.offset,
                  kindName(entry.kind), archPrefix(entry.kind), entry.arch) +
        what;
    out.clear();
    return false;
  };
  std::string_view payload = entry.payload;
  uint64_t size = entry.uncompressedSize;
  switch (entry.compression) {
  case Compression::None:
    out.assign(payload.data(), payload.size());
    break;

  case Compression::Lz4: {
    if (size == 0)
      return fail("LZ4 payload without an uncompressed size");
    if (size > MaxUncompressedSize)
      return fail(formatted("uncompressed size %llu is over the limit of 1 GiB",
                            (unsigned long long)size));
    if (payload.size() > size_t(INT_MAX))
      return fail(formatted("LZ4 payload of %zu bytes is too big for liblz4",
                            payload.size()));
    // An LZ4 block expands at most ~255 times; anything more is corrupt.
    if (size > uint64_t(payload.size()) * 256 + 256)
      return fail(
          formatted("uncompressed size %llu is impossible for %zu bytes "
                    "of LZ4 data",
                    (unsigned long long)size, payload.size()));
    out.resize(size_t(size));
    int decoded = LZ4_decompress_safe(payload.data(), &out[0],
                                      int(payload.size()), int(size));
    if (decoded < 0)
      return fail(formatted(
          "corrupt LZ4 data (LZ4_decompress_safe returned %d)", decoded));
    if (uint64_t(decoded) != size)
      return fail(formatted("LZ4 data decompressed to %d bytes instead of %llu",
                            decoded, (unsigned long long)size));
    break;
  }

  case Compression::Zstd: {
    unsigned long long frameSize =
        ZSTD_getFrameContentSize(payload.data(), payload.size());
    if (frameSize == ZSTD_CONTENTSIZE_ERROR)
      return fail("the payload is not a zstd frame");
    if (frameSize == ZSTD_CONTENTSIZE_UNKNOWN) {
      if (size == 0)
        return fail("neither the zstd frame nor the header gives the "
                    "uncompressed size");
    } else {
      if (size != 0 && frameSize != size)
        return fail(
            formatted("the zstd frame holds %llu bytes, the header says "
                      "%llu",
                      frameSize, (unsigned long long)size));
      size = frameSize;
    }
    if (size > MaxUncompressedSize)
      return fail(formatted("uncompressed size %llu is over the limit of 1 GiB",
                            (unsigned long long)size));
    std::optional<uint64_t> bound = zstdContentBound(payload);
    if (!bound)
      return fail("the payload is not one well-formed zstd frame");
    if (size > *bound)
      return fail(formatted("uncompressed size %llu is impossible for a "
                            "zstd frame whose blocks hold at most %llu bytes",
                            (unsigned long long)size,
                            (unsigned long long)*bound));
    out.resize(size_t(size));
    size_t decoded =
        ZSTD_decompress(&out[0], out.size(), payload.data(), payload.size());
    if (ZSTD_isError(decoded))
      return fail(
          formatted("corrupt zstd data (%s)", ZSTD_getErrorName(decoded)));
    if (decoded != size)
      return fail(
          formatted("zstd data decompressed to %zu bytes instead of %llu",
                    decoded, (unsigned long long)size));
    break;
  }
  }

  if (entry.kind == EntryKind::Ptx) {
    size_t last = out.find_last_not_of('\0');
    out.resize(last == std::string::npos ? 0 : last + 1);
  }
  return true;
}

bool readWrapperImpl(const void *wrapper, WrapperImages &out,
                     std::string &error) {
  if (!wrapper) {
    error = "null fatbin wrapper";
    return false;
  }
  RawWrapper raw;
  std::memcpy(&raw, wrapper, sizeof(raw));
  if (uint32_t(raw.magic) != FatbinWrapperMagic) {
    error = formatted("fatbin wrapper at %p has magic 0x%08x (expected 0x%08x)",
                      wrapper, uint32_t(raw.magic), FatbinWrapperMagic);
    return false;
  }
  auto add = [&](const void *data, const std::string &what) {
    size_t size = fatbinSize(data);
    if (size == 0) {
      unsigned char header[FatbinHeaderSize];
      std::memcpy(header, data, sizeof(header));
      error = formatted("fatbin wrapper at %p: %s at %p is not a fatbin (magic "
                        "0x%08x, 0x%llx bytes of entries)",
                        wrapper, what.c_str(), data, le32(header),
                        (unsigned long long)le64(header + 8));
      return false;
    }
    out.fatbins.emplace_back(static_cast<const char *>(data), size);
    return true;
  };

  out.version = raw.version;
  if (raw.version == 1) {
    if (!raw.data) {
      error =
          formatted("fatbin wrapper at %p (version 1) has no fatbin", wrapper);
      return false;
    }
    return add(raw.data, "the data");
  }
  if (raw.version != 2) {
    error = formatted("fatbin wrapper at %p has version %d (expected 1 or 2)",
                      wrapper, raw.version);
    return false;
  }
  if (raw.data) {
    if (!add(raw.data, "the linked data"))
      return false;
    out.linkedIndex = 0;
  }
  if (!raw.filenameOrFatbins)
    return true;
  const auto *array = static_cast<const unsigned char *>(raw.filenameOrFatbins);
  for (size_t i = 0;; ++i) {
    if (i == MaxPrelinkedFatbins) {
      error = formatted("fatbin wrapper at %p: more than %zu prelinked fatbins "
                        "(no NULL terminator?)",
                        wrapper, MaxPrelinkedFatbins);
      return false;
    }
    const void *fatbin;
    std::memcpy(&fatbin, array + i * sizeof(fatbin), sizeof(fatbin));
    if (!fatbin)
      return true;
    if (!add(fatbin, formatted("prelinked fatbin %zu", i)))
      return false;
  }
}

bool ptxFromWrapperImpl(const void *wrapper, std::vector<std::string> &ptx,
                        std::string &error, uint32_t maxArch) {
  WrapperImages images;
  if (!readWrapperImpl(wrapper, images, error))
    return false;
  std::vector<FatbinEntry> entries;
  for (size_t i = 0; i < images.fatbins.size(); ++i) {
    auto fail = [&](const std::string &what) {
      error = formatted("fatbin %zu of the wrapper at %p: ", i, wrapper) + what;
      ptx.clear();
      return false;
    };
    std::string what;
    entries.clear();
    if (!parseImpl(images.fatbins[i], entries, what))
      return fail(what);
    int index = pickPtx(entries, maxArch);
    if (index < 0)
      continue;
    std::string text;
    if (!contentsImpl(entries[size_t(index)], text, what))
      return fail(what);
    ptx.push_back(std::move(text));
  }
  return true;
}

bool isPortable(const FatbinEntry &entry) {
  return !(entry.flags & (FatbinFlagArchSpecific | FatbinFlagFamilySpecific));
}

/// Whether PTX `entry` can be compiled for `arch`.
bool runsOn(const FatbinEntry &entry, uint32_t arch) {
  if (entry.flags & FatbinFlagArchSpecific)
    return entry.arch == arch;
  if (entry.flags & FatbinFlagFamilySpecific)
    return entry.arch / 10 == arch / 10 && entry.arch <= arch;
  return entry.arch <= arch;
}

/// Whether `a` is a better pick than `b`: a higher arch, then portable.
bool better(const FatbinEntry &a, const FatbinEntry &b) {
  if (a.arch != b.arch)
    return a.arch > b.arch;
  return isPortable(a) && !isPortable(b);
}

} // namespace

size_t wooly::capture::fatbinSize(const void *data) {
  if (!data)
    return 0;
  unsigned char header[FatbinHeaderSize];
  std::memcpy(header, data, sizeof(header));
  if (le32(header) != FatbinMagic)
    return 0;
  uint64_t headerSize = le16(header + 6), entriesSize = le64(header + 8);
  if (entriesSize > uint64_t(SIZE_MAX) - headerSize)
    return 0;
  return size_t(headerSize + entriesSize);
}

bool wooly::capture::parseFatbin(std::string_view bytes,
                                 std::vector<FatbinEntry> &entries,
                                 std::string &error) {
  entries.clear();
  bool ok = guarded(error, [&] { return parseImpl(bytes, entries, error); });
  if (!ok)
    entries.clear();
  return ok;
}

bool wooly::capture::entryContents(const FatbinEntry &entry, std::string &out,
                                   std::string &error) {
  out.clear();
  bool ok = guarded(error, [&] { return contentsImpl(entry, out, error); });
  if (!ok)
    out.clear();
  return ok;
}

bool wooly::capture::readWrapper(const void *wrapper, WrapperImages &out,
                                 std::string &error) {
  out = WrapperImages();
  bool ok =
      guarded(error, [&] { return readWrapperImpl(wrapper, out, error); });
  if (!ok)
    out = WrapperImages();
  return ok;
}

int wooly::capture::pickPtx(const std::vector<FatbinEntry> &entries,
                            uint32_t maxArch) {
  int best = -1;
  auto consider = [&](bool needRuns) {
    for (size_t i = 0; i < entries.size(); ++i) {
      const FatbinEntry &entry = entries[i];
      if (entry.kind != EntryKind::Ptx || (needRuns && !runsOn(entry, maxArch)))
        continue;
      if (best < 0 || better(entry, entries[size_t(best)]))
        best = int(i);
    }
  };
  if (maxArch != 0)
    consider(true);
  if (best < 0)
    consider(false);
  return best;
}

bool wooly::capture::ptxFromWrapper(const void *wrapper,
                                    std::vector<std::string> &ptx,
                                    std::string &error, uint32_t maxArch) {
  ptx.clear();
  bool ok = guarded(
      error, [&] { return ptxFromWrapperImpl(wrapper, ptx, error, maxArch); });
  if (!ok)
    ptx.clear();
  return ok;
}
