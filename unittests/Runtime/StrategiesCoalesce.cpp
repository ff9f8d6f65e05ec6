//===- StrategiesCoalesce.cpp - Launch strategy of wooly-coalesce -*- C++
//-*-===//
//
// `coalesce`: the test's module is the plain one (the strategy's `passes`
// are empty); the launch compiles the test's PTX file again with
// `wooly-coalesce{kernels=K,K}` (cached per file and kernel), and runs ONE
// launch of `__wooly_coalesced` with two parts of the same kernel K:
//
//   part 0: the test's launch (its parameter buffer as given, its grid and
//           block), blocks [0, t);
//   part 1: the same launch on copies of every allocation its parameters
//           point to (8-byte parameters whose value lies inside a live,
//           freeable device allocation; the copy gets the same contents and
//           the parameter the same offset into the copy), blocks [t, 2t).
//
// After the launch every copy must equal its original bit for bit (both
// tenants computed the same), then the copies are freed; the test's own
// reference check verifies part 0. Each launch's printf output therefore
// appears twice (`Strategy::tenants`). Module variables (`.global`) are not
// copied: both parts share them.
//
// A kernel the pass refuses (the compile fails) gives an error whose
// message starts with "coalesce refused:"; CorpusDiffTest turns it into a
// skip.
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include "Wooly/Compiler/LaunchParams.h"
#include "Wooly/Runtime/CoalesceTable.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>

using namespace wooly;
using namespace wooly::test;

namespace {

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The coalesced module of one (device, file, kernel), or why there is none.
struct Fused {
  cpu::LoadedModule *module = nullptr;
  const KernelInfo *kernel = nullptr;
  /// Non-empty: the pass refused (message starts with "coalesce refused:").
  std::string refused;
  /// Non-empty: another error (reading, loading).
  std::string error;
};

Fused &fused(cpu::CpuDevice &device, const std::string &file,
             const std::string &kernel) {
  static std::mutex mutex;
  static std::map<std::tuple<cpu::CpuDevice *, std::string, std::string>,
                  std::unique_ptr<Fused>>
      cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = cache[{&device, file, kernel}];
  if (slot)
    return *slot;
  slot = std::make_unique<Fused>();
  Fused &f = *slot;
  auto buf = llvm::MemoryBuffer::getFile(file);
  if (!buf) {
    f.error = "cannot read " + file;
    return f;
  }
  auto target = Target::parse("host");
  if (!target) {
    f.error = llvm::toString(target.takeError());
    return f;
  }
  CompileOptions options;
  options.passes = "wooly-coalesce{kernels=" + kernel + "," + kernel + "}";
  auto compiled =
      compile(CompileInput{CompileInput::Kind::PTX, (*buf)->getBuffer().str(),
                           llvm::sys::path::filename(file).str()},
              *target, options);
  if (!compiled) {
    f.refused = "coalesce refused: " + kernel + " (" +
                llvm::sys::path::filename(file).str() +
                "): " + llvm::toString(compiled.takeError());
    return f;
  }
  auto mod = std::make_shared<const CompiledModule>(std::move(*compiled));
  auto loaded = device.loadModule(mod);
  if (!loaded) {
    f.error =
        "loading coalesced " + file + ": " + llvm::toString(loaded.takeError());
    return f;
  }
  f.module = *loaded;
  f.kernel = device.compiled(f.module).findKernel("__wooly_coalesced");
  if (!f.kernel)
    f.error = "no __wooly_coalesced in the coalesced " + file;
  return f;
}

/// Device allocations owned by one launch, freed on destruction.
class Owned {
public:
  explicit Owned(cpu::DeviceMemory &m) : memory(m) {}
  ~Owned() {
    for (uint64_t a : addrs)
      llvm::consumeError(memory.free(a));
  }
  llvm::Expected<uint64_t> upload(const void *data, size_t bytes) {
    auto a = memory.allocate(std::max<size_t>(bytes, 1));
    if (!a)
      return a.takeError();
    addrs.push_back(*a);
    if (bytes)
      if (llvm::Error e = memory.copyToDevice(*a, data, bytes))
        return std::move(e);
    return *a;
  }
  llvm::Expected<uint64_t> allocate(size_t bytes) {
    auto a = memory.allocate(std::max<size_t>(bytes, 1));
    if (a)
      addrs.push_back(*a);
    return a;
  }

private:
  cpu::DeviceMemory &memory;
  std::vector<uint64_t> addrs;
};

llvm::Error launchCoalesced(const LaunchRequest &r) {
  Fused &f = fused(*r.device, r.file, r.kernel->name);
  if (!f.refused.empty())
    return fail(f.refused);
  if (!f.error.empty())
    return fail(f.error);

  cpu::DeviceMemory &memory = r.device->memory();
  Owned owned(memory);

  // Part 1's parameters: every pointer into a device allocation redirected
  // to a copy of that allocation.
  std::map<uint64_t, std::pair<uint64_t, uint64_t>>
      copies; // base -> copy, size
  std::vector<uint8_t> params1 = r.userParams;
  for (size_t i = 0; i < r.kernel->paramOffsets.size(); ++i) {
    if (!r.kernel->paramRoles[i].empty() || r.kernel->paramSizes[i] != 8)
      continue;
    uint64_t off = r.kernel->paramOffsets[i];
    if (off + 8 > params1.size())
      continue;
    uint64_t v;
    std::memcpy(&v, r.userParams.data() + off, 8);
    auto a = memory.find(v, 1);
    if (!a || a->moduleGlobal)
      continue;
    auto it = copies.find(a->base);
    if (it == copies.end()) {
      auto c = owned.allocate(a->size);
      if (!c)
        return c.takeError();
      if (llvm::Error e = memory.copyDeviceToDevice(*c, a->base, a->size))
        return e;
      it = copies.insert({a->base, {*c, a->size}}).first;
    }
    uint64_t patched = it->second.first + (v - a->base);
    std::memcpy(params1.data() + off, &patched, 8);
  }

  // The table: two parts of kernel index 0, one after the other.
  std::vector<CoalescePart> parts(2);
  for (int p = 0; p < 2; ++p) {
    CoalescePart &cp = parts[p];
    cp.kernelIndex = 0;
    for (int d = 0; d < 3; ++d) {
      cp.grid[d] = r.config.grid[d];
      cp.block[d] = r.config.block[d];
    }
    cp.dynamicSharedBytes = r.config.dynamicSharedBytes;
    const std::vector<uint8_t> &bytes = p == 0 ? r.userParams : params1;
    auto addr = owned.upload(bytes.data(), bytes.size());
    if (!addr)
      return addr.takeError();
    cp.params = *addr;
  }
  assignFirstBlocks(parts);
  std::vector<uint8_t> table = encodeCoalesceTable(parts);
  auto tableAddr = owned.upload(table.data(), table.size());
  if (!tableAddr)
    return tableAddr.takeError();
  auto params = extendParams(*f.kernel, {}, {{"coalesce_table", *tableAddr}});
  if (!params)
    return params.takeError();
  LaunchConfig c = r.config;
  c.grid = {uint32_t(coalescedGrid(parts)), 1, 1};
  c.block = {coalescedBlock(parts), 1, 1};
  c.dynamicSharedBytes = coalescedDynamicShared(parts);
  if (llvm::Error e =
          r.device->launch(f.module, "__wooly_coalesced", c, *params))
    return e;

  // Both tenants computed the same, unless the test says its outputs depend
  // on the order of concurrent atomics: then each tenant's result is valid
  // but they may differ (the test's reference still checks part 0).
  if (r.orderDependent)
    copies.clear();
  for (auto &[base, copy] : copies) {
    std::vector<uint8_t> want(copy.second), got(copy.second);
    if (llvm::Error e = memory.copyFromDevice(want.data(), base, copy.second))
      return e;
    if (llvm::Error e =
            memory.copyFromDevice(got.data(), copy.first, copy.second))
      return e;
    if (want != got) {
      size_t at = 0;
      while (want[at] == got[at])
        ++at;
      return fail("coalesce: part 1's copy of the allocation at " +
                  llvm::Twine::utohexstr(base) + " (" +
                  llvm::Twine(copy.second) +
                  " bytes) differs from part 0's at byte " + llvm::Twine(at));
    }
  }
  return llvm::Error::success();
}

} // namespace

std::vector<Strategy> wooly::test::coalesceStrategies() {
  Strategy s{"coalesce", "", launchCoalesced};
  s.tenants = 2;
  return {s};
}
