//===- wooly-conformance.cpp - Run a PTX conformance suite -----*- C++ -*-===//
//
// Runs every test of a ZLUDA-style suite (a folder with `expected.json` and
// `ptx/`, see its README) on the CPU backend (or, with --backend=cuda, on
// an NVIDIA GPU: the original PTX, or with --target=sm_XX the PTX that
// Wooly generates from it), following the suite's rules:
// zeroed output buffer, input copied in, arguments (input, output) as device
// pointers (both the output for warp tests), one block of `block_dim_x`
// threads, 1024 bytes of dynamic shared memory, bit-exact comparison of
// the output. Prints each failure and `N passed, N failed, N skipped`.
// After a failed test it checks that the device still answers (a fault can
// leave a GPU context unusable: CUDA's sticky errors) and, where it does
// not, starts it again and says so, so that one fault fails one test.
//
// With --passes (cpu, or cuda with --target=sm_XX) every test is compiled with
// those Wooly passes and launched as a runtime would launch the transformed
// kernel, its appended launch parameters filled by role
// (Wooly/Compiler/LaunchParams.h): wooly-constrain/wooly-slice: virtual grid =
// the test's grid (1,1,1) on
// --physical-blocks physical blocks; wooly-slice: the slice [0, 1) with a
// zeroed u32 counter in device memory and no preemption flag, and the test
// fails unless the counter then says that the one block ran;
// wooly-isolate: the tenant region is the hull of the test's input and
// output allocations, rounded up to 256 bytes.
//
// With --coalesce (cpu, or cuda with --target=sm_XX) every test's kernel K is
// compiled with `wooly-coalesce{kernels=K,K}` and run as ONE launch of
// `__wooly_coalesced` with two parts (Wooly/Runtime/CoalesceTable.h): part 0 on
// the test's buffers, part 1 on copies of them (the input's contents, a zeroed
// output), one block each. Part 0's output must equal the expected output
// and part 1's output part 0's, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Compiler/Compiler.h"
#include "Wooly/Compiler/LaunchParams.h"
#include "Wooly/Runtime/Backend.h"
#include "Wooly/Runtime/CoalesceTable.h"
#include "Wooly/Runtime/Launch.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <optional>

using namespace wooly;
using llvm::StringRef;
namespace cl = llvm::cl;

static cl::OptionCategory cat("wooly-conformance options");
static cl::opt<std::string> suiteDir(cl::Positional, cl::Required,
                                     cl::desc("<suite folder>"), cl::cat(cat));
static cl::opt<std::string>
    filter("filter", cl::desc("Only run tests whose name matches this regex"),
           cl::cat(cat));
static cl::opt<bool> verbose("v", cl::desc("Print every test's result"),
                             cl::cat(cat));
static cl::opt<std::string> knownFailures(
    "known-failures",
    cl::desc("File of tests expected to fail, one per line: NAME reason...; "
             "they are reported as known and do not fail the run"),
    cl::cat(cat));
static cl::opt<std::string>
    backend("backend", cl::init("cpu"),
            cl::desc("Where to run: cpu (the CPU backend) or cuda (an NVIDIA "
                     "GPU)"),
            cl::cat(cat));
static cl::opt<std::string> targetOpt(
    "target", cl::init("host"),
    cl::desc("What to compile every test for: host (the default; the cuda "
             "backend then runs the ORIGINAL PTX) or sm_XX (the cuda backend "
             "runs the PTX that Wooly generates)"),
    cl::cat(cat));
static cl::opt<bool> variant32("ptx32",
                               cl::desc("Run the 32-bit-address variants "
                                        "(ptx32/) instead"),
                               cl::cat(cat));

static cl::opt<std::string>
    passes("passes",
           cl::desc("Compile every test with these Wooly passes (an MLIR "
                    "pipeline, e.g. wooly-constrain) and fill their launch "
                    "parameters (cpu, or cuda with --target=sm_XX)"),
           cl::cat(cat));
static cl::opt<unsigned>
    physicalBlocks("physical-blocks",
                   cl::desc("Physical blocks to launch kernels transformed by "
                            "wooly-constrain or wooly-slice on (default 1)"),
                   cl::init(1), cl::cat(cat));

static cl::opt<bool> coalesce(
    "coalesce",
    cl::desc("Compile every test's kernel K with wooly-coalesce{kernels=K,K} "
             "and run it as one fused launch of two parts: the test's "
             "buffers and copies of them (cpu, or cuda with "
             "--target=sm_XX)"),
    cl::cat(cat));

static cl::opt<bool> fibers(
    "fibers",
    cl::desc("cpu: run kernels that synchronise as fibers, also where the "
             "compiler split them into regions"),
    cl::cat(cat));

namespace {
unsigned typeBytes(StringRef t) {
  if (t == "u8")
    return 1;
  if (t == "u16" || t == "i16" || t == "f16")
    return 2;
  if (t == "u32" || t == "i32" || t == "f32")
    return 4;
  if (t == "u64" || t == "i64" || t == "f64")
    return 8;
  return 0;
}

/// Parses the `*_hex` strings into little-endian bytes.
bool hexElements(const llvm::json::Array *arr, unsigned bytes,
                 std::vector<uint8_t> &out) {
  if (!arr)
    return false;
  for (const llvm::json::Value &v : *arr) {
    auto s = v.getAsString();
    if (!s)
      return false;
    uint64_t x;
    StringRef t = *s;
    t.consume_front("0x");
    if (t.getAsInteger(16, x))
      return false;
    for (unsigned i = 0; i < bytes; ++i)
      out.push_back(uint8_t(x >> (8 * i)));
  }
  return true;
}

std::string elemHex(const uint8_t *p, unsigned bytes) {
  uint64_t x = 0;
  for (unsigned i = 0; i < bytes; ++i)
    x |= uint64_t(p[i]) << (8 * i);
  return llvm::formatv("{0:x-}", x).str();
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(cat);
  cl::ParseCommandLineOptions(argc, argv,
                              "wooly-conformance: run a ZLUDA-style PTX "
                              "conformance suite on the CPU backend\n");
  llvm::SmallString<256> jsonPath(suiteDir);
  llvm::sys::path::append(jsonPath, "expected.json");
  auto buf = llvm::MemoryBuffer::getFile(jsonPath);
  if (!buf) {
    llvm::errs() << "error: cannot read " << jsonPath << ": "
                 << buf.getError().message() << '\n';
    return 2;
  }
  auto json = llvm::json::parse((*buf)->getBuffer());
  if (!json || !json->getAsObject()) {
    llvm::errs() << "error: " << jsonPath << " is not a JSON object\n";
    if (!json)
      llvm::consumeError(json.takeError());
    return 2;
  }
  std::optional<llvm::Regex> re;
  if (!filter.empty())
    re.emplace(filter);

  // Tests in name order, so that the output is stable.
  std::vector<std::string> names;
  for (auto &kv : *json->getAsObject())
    names.push_back(kv.first.str());
  llvm::sort(names);

  llvm::StringMap<std::string> known;
  if (!knownFailures.empty()) {
    auto kb = llvm::MemoryBuffer::getFile(knownFailures);
    if (!kb) {
      llvm::errs() << "error: cannot read " << knownFailures << ": "
                   << kb.getError().message() << '\n';
      return 2;
    }
    llvm::SmallVector<StringRef> lines;
    (*kb)->getBuffer().split(lines, '\n');
    for (StringRef line : lines) {
      line = line.trim();
      if (line.empty() || line.starts_with("#"))
        continue;
      auto [name, reason] = line.split(' ');
      known[name] = reason.trim().str();
    }
  }

  // The backend gets both the compiled module and the PTX: the cpu backend
  // runs the former, the cuda backend the former when it is PTX
  // (--target=sm_XX), else the original PTX (with the parameter layout of
  // the host compilation).
  auto target = Target::parse(targetOpt);
  if (!target) {
    llvm::errs() << "error: " << llvm::toString(target.takeError()) << '\n';
    return 2;
  }
  bool runsOriginal =
      backendRunsOriginalPTX(backend) && target->kind == Target::Kind::Host;
  if (target->kind != Target::Kind::Host &&
      !(backend == "cuda" && target->kind == Target::Kind::NVPTX)) {
    llvm::errs() << "error: --target=" << targetOpt
                 << " cannot run on --backend=" << backend
                 << " (cpu runs host; cuda runs host or sm_XX)\n";
    return 2;
  }
  BackendOptions backendOptions;
  backendOptions.cpuRegions = !fibers;
  auto created = createBackend(backend, backendOptions);
  if (!created) {
    llvm::errs() << "error: " << llvm::toString(created.takeError()) << '\n';
    return 2;
  }
  std::unique_ptr<Backend> owner = std::move(*created);
  Backend *device = owner.get();
  if (!passes.empty() && runsOriginal) {
    llvm::errs() << "error: --passes needs the compiled module to run: the "
                    "cpu backend, or --target=sm_XX\n";
    return 2;
  }
  if (coalesce && runsOriginal) {
    llvm::errs() << "error: --coalesce needs the compiled module to run: the "
                    "cpu backend, or --target=sm_XX\n";
    return 2;
  }
  if (coalesce && !passes.empty()) {
    llvm::errs() << "error: --coalesce and --passes cannot be combined\n";
    return 2;
  }
  if (physicalBlocks == 0) {
    llvm::errs() << "error: --physical-blocks must be at least 1\n";
    return 2;
  }
  if (!passes.empty())
    llvm::outs() << "passes: " << passes << '\n';
  if (coalesce)
    llvm::outs() << "passes: wooly-coalesce{kernels=K,K} (two parts)\n";
  // The CPU backend is the default; name any other device in the output.
  if (device->kind() != "cpu")
    llvm::outs() << "device: " << device->name() << '\n';
  if (target->kind != Target::Kind::Host)
    llvm::outs() << "target: " << target->str() << " (Wooly's PTX)\n";
  unsigned passed = 0, failed = 0, skipped = 0, knownFailed = 0;
  // The test that failed last, while the device may not have been checked
  // since: a fault can leave a GPU context unusable (CUDA's sticky errors,
  // e.g. a misaligned address), and every later test would fail with it.
  std::string lastFailed;
  for (const std::string &name : names) {
    if (re && !re->match(name))
      continue;
    if (!lastFailed.empty()) {
      // A copy reaches the context (an allocation may come from a pool).
      uint32_t word = 0;
      auto probe = device->allocate(sizeof(word));
      llvm::Error err = probe
                            ? device->copyToDevice(*probe, &word, sizeof(word))
                            : probe.takeError();
      if (probe)
        err = llvm::joinErrors(std::move(err), device->free(*probe));
      if (err) {
        // One line (joined errors have one each).
        std::string why =
            llvm::join(llvm::split(llvm::toString(std::move(err)), '\n'), "; ");
        owner.reset();
        auto again = createBackend(backend, backendOptions);
        if (!again) {
          llvm::errs() << "error: the device failed after " << lastFailed
                       << " (" << why << ") and could not be started again: "
                       << llvm::toString(again.takeError()) << '\n';
          return 2;
        }
        owner = std::move(*again);
        device = owner.get();
        llvm::outs() << "note: the device failed after " << lastFailed << " ("
                     << why << "); started it again (a new context) for "
                     << name << " and the tests after it\n";
      }
      lastFailed.clear();
    }
    const llvm::json::Object &t = *json->getAsObject()->getObject(name);
    auto report = [&](StringRef what) {
      ++failed;
      lastFailed = name;
      auto k = known.find(name);
      if (k != known.end()) {
        ++knownFailed;
        llvm::outs() << "KNOWN FAIL " << name << ": " << what
                     << "\n  reason: " << k->second << '\n';
        return;
      }
      llvm::outs() << "FAIL " << name << ": " << what << '\n';
    };
    if (!t.getBoolean("enabled").value_or(false)) {
      ++skipped;
      if (verbose)
        llvm::outs() << "SKIP " << name << ": "
                     << t.getString("disabled_reason").value_or("disabled")
                     << '\n';
      continue;
    }
    StringRef rel = variant32 ? t.getString("ptx_32bit").value_or("")
                              : t.getString("ptx").value_or("");
    if (rel.empty()) {
      if (variant32)
        continue; // No 32-bit variant.
      report("no ptx file");
      continue;
    }
    llvm::SmallString<256> ptxPath(suiteDir);
    llvm::sys::path::append(ptxPath, rel);
    auto ptx = llvm::MemoryBuffer::getFile(ptxPath);
    if (!ptx) {
      report("cannot read " + ptxPath.str().str());
      continue;
    }
    CompileInput input;
    input.text = (*ptx)->getBuffer().str();
    input.name = ptxPath.str().str();
    StringRef kernel = t.getString("kernel").value_or(name);
    CompileOptions options;
    options.passes = passes;
    if (coalesce)
      options.passes =
          ("wooly-coalesce{kernels=" + kernel + "," + kernel + "}").str();
    auto compiled = compile(input, *target, options);
    if (!compiled) {
      std::string msg = llvm::toString(compiled.takeError());
      report("compile error: " + StringRef(msg).split('\n').first.str());
      continue;
    }
    auto module = std::make_shared<const CompiledModule>(std::move(*compiled));
    auto loaded = device->loadModule(module, input.text);
    if (!loaded) {
      report("load error: " + llvm::toString(loaded.takeError()));
      continue;
    }
    auto unload = llvm::scope_exit(
        [&] { llvm::consumeError(device->unloadModule(*loaded)); });
    const KernelInfo *k = module->findKernel(kernel);
    if (!k) {
      report("no kernel '" + kernel.str() + "'");
      continue;
    }
    unsigned inBytes = typeBytes(t.getString("input_type").value_or(""));
    unsigned outBytes = typeBytes(t.getString("output_type").value_or(""));
    std::vector<uint8_t> in, expected;
    bool hasInput = t.getArray("input_hex") != nullptr;
    if ((hasInput && !hexElements(t.getArray("input_hex"), inBytes, in)) ||
        !outBytes ||
        !hexElements(t.getArray("output_hex"), outBytes, expected)) {
      report("malformed expected.json entry");
      continue;
    }
    uint64_t outSize = std::max<size_t>(expected.size(), 1);
    auto outAddr = device->allocate(outSize);
    uint64_t inAddr = 0;
    if (!outAddr) {
      report(llvm::toString(outAddr.takeError()));
      continue;
    }
    if (hasInput && !in.empty()) {
      auto a = device->allocate(in.size());
      if (!a) {
        report(llvm::toString(a.takeError()));
        continue;
      }
      inAddr = *a;
      if (auto e = device->copyToDevice(inAddr, in.data(), in.size())) {
        report(llvm::toString(std::move(e)));
        continue;
      }
    } else {
      inAddr = *outAddr;
    }
    auto freeAll = llvm::scope_exit([&] {
      llvm::consumeError(device->free(*outAddr));
      if (inAddr != *outAddr)
        llvm::consumeError(device->free(inAddr));
    });
    // Arguments: (input, output); warp kernels often take only the output.
    // Parameters a pass appended (with a role) come after them.
    size_t numUser = 0;
    bool appended = false;
    for (size_t i = 0; i < k->paramOffsets.size(); ++i) {
      if (i < k->paramRoles.size() && !k->paramRoles[i].empty())
        appended = true;
      else
        ++numUser;
    }
    std::vector<uint8_t> params(userParamBufferSize(*k), 0);
    uint64_t ptrs[2] = {inAddr, *outAddr};
    if (numUser == 1)
      ptrs[0] = *outAddr;
    bool badParams = false;
    for (size_t i = 0; i < numUser; ++i) {
      if (i >= 2 || k->paramSizes[i] != 8) {
        badParams = true;
        break;
      }
      std::memcpy(params.data() + k->paramOffsets[i], &ptrs[i], 8);
    }
    if (badParams) {
      report("kernel parameters are not one or two 64-bit pointers");
      continue;
    }
    LaunchConfig config;
    config.block[0] = uint32_t(t.getInteger("block_dim_x").value_or(1));
    config.dynamicSharedBytes = 1024;
    // --coalesce: part 1's buffers (copies of the test's), the parameter
    // buffers and the table in device memory.
    std::vector<uint64_t> coalesceAllocs;
    auto freeCoalesce = llvm::scope_exit([&] {
      for (uint64_t a : coalesceAllocs)
        llvm::consumeError(device->free(a));
    });
    uint64_t outCopy = 0;
    if (coalesce) {
      const KernelInfo *fused = module->findKernel("__wooly_coalesced");
      if (!fused) {
        report("no __wooly_coalesced kernel");
        continue;
      }
      auto upload = [&](const void *data,
                        size_t bytes) -> llvm::Expected<uint64_t> {
        auto a = device->allocate(std::max<size_t>(bytes, 1));
        if (!a)
          return a.takeError();
        coalesceAllocs.push_back(*a);
        if (bytes)
          if (auto e = device->copyToDevice(*a, data, bytes))
            return std::move(e);
        return *a;
      };
      std::vector<uint8_t> zeros(outSize, 0);
      auto oc = upload(zeros.data(), zeros.size());
      if (!oc) {
        report(llvm::toString(oc.takeError()));
        continue;
      }
      outCopy = *oc;
      uint64_t inCopy = outCopy;
      if (inAddr != *outAddr) {
        auto ic = upload(in.data(), in.size());
        if (!ic) {
          report(llvm::toString(ic.takeError()));
          continue;
        }
        inCopy = *ic;
      }
      uint64_t ptrs1[2] = {inCopy, outCopy};
      if (numUser == 1)
        ptrs1[0] = *oc;
      std::vector<uint8_t> params1 = params;
      for (size_t i = 0; i < numUser; ++i)
        std::memcpy(params1.data() + k->paramOffsets[i], &ptrs1[i], 8);
      std::vector<CoalescePart> parts(2);
      bool bad = false;
      for (int p = 0; p < 2 && !bad; ++p) {
        parts[p].block[0] = config.block[0];
        parts[p].dynamicSharedBytes = config.dynamicSharedBytes;
        const std::vector<uint8_t> &pb = p == 0 ? params : params1;
        auto a = upload(pb.data(), pb.size());
        if (!a) {
          report(llvm::toString(a.takeError()));
          bad = true;
          break;
        }
        parts[p].params = *a;
      }
      if (bad)
        continue;
      assignFirstBlocks(parts);
      std::vector<uint8_t> table = encodeCoalesceTable(parts);
      auto tableAddr = upload(table.data(), table.size());
      if (!tableAddr) {
        report(llvm::toString(tableAddr.takeError()));
        continue;
      }
      auto fusedParams =
          extendParams(*fused, {}, {{"coalesce_table", *tableAddr}});
      if (!fusedParams) {
        report(llvm::toString(fusedParams.takeError()));
        continue;
      }
      LaunchConfig fc;
      fc.grid = {uint32_t(coalescedGrid(parts)), 1, 1};
      fc.block = {coalescedBlock(parts), 1, 1};
      fc.dynamicSharedBytes = coalescedDynamicShared(parts);
      if (auto e =
              device->launch(*loaded, "__wooly_coalesced", fc, *fusedParams)) {
        report("launch error: " + llvm::toString(std::move(e)));
        continue;
      }
    } else {
      // The appended parameters (see the file header) are filled by the
      // runtime's launch: the virtual grid, the slice [0, 1) (the whole
      // one-block grid) and the test's buffers as the isolation region.
      LaunchOptions options;
      options.physicalBlocks = physicalBlocks;
      options.sliceEnd = 1;
      uint64_t lo = std::min(inAddr, *outAddr);
      uint64_t hi = std::max(*outAddr + outSize,
                             inAddr == *outAddr ? 0 : inAddr + in.size());
      options.isolateRegion = {lo, hi};
      auto ran = launchKernel(*device, *loaded, *k, config, params, options);
      if (!ran) {
        report("launch error: " + llvm::toString(ran.takeError()));
        continue;
      }
      if (appended && ran->blocksRun != 1) {
        report(llvm::formatv("the launch ran {0} blocks of 1", ran->blocksRun)
                   .str());
        continue;
      }
    }
    std::vector<uint8_t> got(expected.size());
    if (auto e = device->copyFromDevice(got.data(), *outAddr, got.size())) {
      report(llvm::toString(std::move(e)));
      continue;
    }
    size_t bad = expected.size();
    for (size_t i = 0; i < expected.size(); i += outBytes)
      if (std::memcmp(&got[i], &expected[i], outBytes)) {
        bad = i;
        break;
      }
    if (bad != expected.size()) {
      report(llvm::formatv("element {0}: got 0x{1}, expected 0x{2}",
                           bad / outBytes, elemHex(&got[bad], outBytes),
                           elemHex(&expected[bad], outBytes))
                 .str());
      continue;
    }
    if (outCopy) {
      // Part 1 (on the copies) computed what part 0 did.
      std::vector<uint8_t> got1(expected.size());
      if (auto e = device->copyFromDevice(got1.data(), outCopy, got1.size())) {
        report(llvm::toString(std::move(e)));
        continue;
      }
      for (size_t i = 0; i < expected.size(); i += outBytes)
        if (std::memcmp(&got1[i], &got[i], outBytes)) {
          bad = i;
          break;
        }
      if (bad != expected.size()) {
        report(llvm::formatv("coalesced part 1, element {0}: got 0x{1}, "
                             "part 0 got 0x{2}",
                             bad / outBytes, elemHex(&got1[bad], outBytes),
                             elemHex(&got[bad], outBytes))
                   .str());
        continue;
      }
    }
    ++passed;
    if (verbose)
      llvm::outs() << "PASS " << name << '\n';
  }
  llvm::outs() << passed << " passed, " << failed << " failed, " << skipped
               << " skipped";
  if (!known.empty())
    llvm::outs() << " (" << knownFailed << " of the failures known)";
  llvm::outs() << '\n';
  return failed > knownFailed ? 1 : 0;
}
