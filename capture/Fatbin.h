//===- Fatbin.h - Reads the fatbins nvcc embeds in programs -----*- C++ -*-===//
//
// The fatbin reader of the capture layer: finds the fatbins that
// __cudaRegisterFatBinary receives, walks their entries and decompresses the
// PTX (and ELF) images. Layout and measured facts: notes/capture.md, section 1.
//
// It is loaded into user processes, so it is plain C++17 with libzstd and
// liblz4 only (no LLVM), and no exception leaves it: every function reports
// failure as `false` plus a message, and never reads outside the bytes it is
// given (or, for a wrapper, outside the fatbins the wrapper's headers bound).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_CAPTURE_FATBIN_H
#define WOOLY_CAPTURE_FATBIN_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wooly::capture {

/// The magic of a fatbin header (`u32` at offset 0).
constexpr uint32_t FatbinMagic = 0xBA55ED50;
/// The magic of the `__fatBinC_Wrapper_t` that __cudaRegisterFatBinary gets.
constexpr uint32_t FatbinWrapperMagic = 0x466243B1;
/// The biggest decompressed entry entryContents() accepts (1 GiB).
constexpr uint64_t MaxUncompressedSize = uint64_t(1) << 30;

/// Entry header flags (`u64` at offset 40; notes/capture.md 1.3): the payload
/// is raw LZ4 blocks.
constexpr uint64_t FatbinFlagLz4 = 0x2000;
/// The payload is a zstd frame.
constexpr uint64_t FatbinFlagZstd = 0x8000;
/// Arch-specific code (`compute_90a`): runs only on that exact arch.
constexpr uint64_t FatbinFlagArchSpecific = 0x100000;
/// Family-specific code (`compute_100f`): runs on its arch and the later
/// minor versions of the same major.
constexpr uint64_t FatbinFlagFamilySpecific = 0x200000;

/// What an entry holds (`u16` at offset 0 of its header).
enum class EntryKind : uint16_t {
  /// PTX text (`compute_XX`).
  Ptx = 1,
  /// A cubin (`sm_XX` SASS), linked or relocatable.
  Elf = 2,
  /// LTO IR (`-dlto`, `code=lto_XX`): opaque; its payload is flagged zstd but
  /// is not a zstd frame, so entryContents() refuses it.
  LtoIr = 8,
};

/// How an entry's payload is stored.
enum class Compression { None, Lz4, Zstd };

/// One entry of a fatbin. The views point into the bytes given to
/// parseFatbin() and live as long as they do.
struct FatbinEntry {
  /// What the entry holds.
  EntryKind kind;
  /// The arch times ten: 75, 90, 120 (`sm_XX` for ELF, `compute_XX` for PTX).
  uint32_t arch = 0;
  /// PTX entries: the PTX ISA version (`.version 9.0` is 9, 0). ELF entries:
  /// what the header holds (1.8 on nvcc 13, meaning unknown).
  uint32_t versionMajor = 0, versionMinor = 0;
  /// The header's flags (FatbinFlags and others).
  uint64_t flags = 0;
  /// How `payload` is stored.
  Compression compression = Compression::None;
  /// The identifier (`fatbinary --ident`), or empty.
  std::string_view identifier;
  /// The ptxas options recorded with the entry (`fatbinary --cmdline`,
  /// "--compile-only" for `-rdc` PTX), or empty.
  std::string_view options;
  /// The payload as stored: for a compressed entry exactly the compressed
  /// bytes, otherwise the whole padded payload.
  std::string_view payload;
  /// The decompressed size for a compressed entry, 0 otherwise.
  uint64_t uncompressedSize = 0;
  /// Where the entry header starts, from the start of the fatbin.
  size_t offset = 0;
};

/// The size (header plus entries) of the fatbin whose 16-byte header is at
/// `data`, or 0 when its magic is not FatbinMagic or the size does not fit in
/// a size_t. Reads the 16 header bytes only.
size_t fatbinSize(const void *data);

/// Walks the fatbin (header, then entries) at the start of `bytes`, which may
/// hold more after it (a `.nv_fatbin` section holds fatbins back to back; step
/// with fatbinSize()). Fills `entries` and returns true; on a bad magic or
/// version, a fatbin or entry that runs past the end, an entry header_size
/// smaller than 64, an unknown kind or entry version, or inconsistent sizes or
/// compression flags, clears `entries` and returns false with a message like
/// "fatbin entry 2 at offset 0x1a0: payload of 720 bytes runs past the end of
/// the fatbin (0x400 bytes)". Never reads outside `bytes`. An identifier or
/// options record that does not lie within its entry header is left empty.
bool parseFatbin(std::string_view bytes, std::vector<FatbinEntry> &entries,
                 std::string &error);

/// The entry's contents in `out`: the payload decompressed (a zstd frame or
/// raw LZ4 blocks, sized by `uncompressedSize`; more than MaxUncompressedSize
/// is refused) or copied. For PTX the trailing NUL padding is stripped. On
/// corrupt data returns false with a message; never reads outside `payload`.
bool entryContents(const FatbinEntry &entry, std::string &out,
                   std::string &error);

/// The fatbins a `__fatBinC_Wrapper_t` points to, each bounded with
/// fatbinSize().
struct WrapperImages {
  /// The wrapper's version: 1, or 2 for `-rdc` (device-linked) programs.
  int version = 0;
  /// Version 1: the wrapper's one fatbin (`data`). Version 2: the linked
  /// fatbin (`data`, ELF only; skipped when null) and then every per-object
  /// fatbin of the NULL-terminated `filename_or_fatbins` array (PTX and
  /// relocatable ELF).
  std::vector<std::string_view> fatbins;
  /// Version 2: the index in `fatbins` of the linked fatbin; -1 for version 1
  /// or when `data` is null.
  int linkedIndex = -1;
};

/// Reads the `{int magic = 0x466243B1; int version; const unsigned long long
/// *data; void *filename_or_fatbins;}` wrapper at `wrapper`, which is what
/// __cudaRegisterFatBinary receives. Returns false with a message on a null
/// wrapper, a bad magic or version, or a fatbin pointer whose header has a bad
/// magic. Trusts the pointers and the fatbin headers' sizes: the memory they
/// describe must be readable.
bool readWrapper(const void *wrapper, WrapperImages &out, std::string &error);

/// The index in `entries` of the PTX entry to send, or -1 when there is none:
/// the PTX entry with the highest arch <= `maxArch` that runs there (an
/// arch-specific entry only on its own arch, a family-specific one only within
/// its family); when there is none, or `maxArch` is 0, the PTX entry with the
/// highest arch. Among entries of the same arch a portable one wins over an
/// arch- or family-specific one, and then the first.
int pickPtx(const std::vector<FatbinEntry> &entries, uint32_t maxArch = 0);

/// Every PTX text a registered wrapper carries, decompressed: one per fatbin
/// that has a PTX entry (chosen by pickPtx() with `maxArch`), in the order of
/// WrapperImages::fatbins (version 1: at most one; version 2: one per object).
/// Returns false with a message on malformed input.
bool ptxFromWrapper(const void *wrapper, std::vector<std::string> &ptx,
                    std::string &error, uint32_t maxArch = 0);

} // namespace wooly::capture

#endif // WOOLY_CAPTURE_FATBIN_H
