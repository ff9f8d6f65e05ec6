//===- wooly-run.cpp - Run one kernel by hand -------------------*- C++ -*-===//
//
// Compiles a PTX or Wooly file for a backend, creates the buffers and
// scalars named by `--arg`, launches one kernel and prints (or saves) the
// buffers afterwards. Example:
//
//   wooly-run saxpy.ptx --kernel=saxpy --grid=4 --block=256
//       --arg=n:u32:1024 --arg=a:f32:2.0 --arg=x:f32[1024]:random:seed=1
//       --arg=y:f32[1024]:zero --print=y
//
// `--texref`/`--surfref` bind a module's texture and surface references
// (PTX `.texref`/`.surfref`) to objects over CUDA arrays it creates.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Compiler/Compiler.h"
#include "Wooly/Runtime/Backend.h"
#include "Wooly/Runtime/Launch.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstring>
#include <optional>
#include <random>

using namespace wooly;
using llvm::StringRef;

namespace cl = llvm::cl;

static cl::OptionCategory runCat("wooly-run options");
static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<input .ptx or .mlir file>"),
                                      cl::cat(runCat));
static cl::opt<std::string>
    kernelName("kernel", cl::desc("Kernel to launch (default: the only one)"),
               cl::cat(runCat));
static cl::opt<std::string>
    backend("backend", cl::init("cpu"),
            cl::desc("Where to run: cpu (the embedded CPU backend) or cuda "
                     "(an NVIDIA GPU, through the CUDA driver)"),
            cl::cat(runCat));
static cl::opt<std::string> targetOpt(
    "target", cl::init("host"),
    cl::desc("What to compile for: host (the default; the cpu backend runs "
             "it, the cuda backend runs the ORIGINAL PTX and takes only the "
             "parameter layout from it) or sm_XX (the cuda backend runs the "
             "PTX that Wooly generates)"),
    cl::cat(runCat));
static cl::opt<std::string> gridOpt("grid", cl::init("1"),
                                    cl::desc("Grid size: X[,Y[,Z]]"),
                                    cl::cat(runCat));
static cl::opt<std::string> blockOpt("block", cl::init("1"),
                                     cl::desc("Block size: X[,Y[,Z]]"),
                                     cl::cat(runCat));
static cl::opt<unsigned>
    sharedOpt("shared", cl::init(0),
              cl::desc("Bytes of dynamic shared memory per block"),
              cl::cat(runCat));
static cl::list<std::string> argOpts(
    "arg",
    cl::desc("A kernel argument, in parameter order:\n"
             "  NAME:TYPE:VALUE          a scalar (u8..u64, s8..s64, f32, "
             "f64, b32, b64)\n"
             "  NAME:TYPE:COUNT:INIT     a buffer of COUNT elements, passed "
             "by address\n"
             "  NAME:TYPE[COUNT]:INIT    (the same);\n"
             "                           INIT is zero, random[:seed=N], "
             "iota, fill=V or file=PATH"),
    cl::cat(runCat));
static cl::list<std::string> texrefOpts(
    "texref",
    cl::desc("NAME:TYPE[W[xH[xD]]]:INIT[,OPTION...]: bind the module's "
             "texture reference NAME (a PTX .texref) to a texture over a "
             "CUDA array of TYPE (u8..u32, s8..s32, f16, f32; TYPExN for N "
             "= 2 or 4 channels) filled as a buffer's INIT; OPTIONs: "
             "filter=point|linear, address=wrap|clamp|mirror|border (every "
             "dimension), border=V (every channel), normalized (normalized "
             "coordinates), read=float (8- and 16-bit integers read as "
             "normalized floats), srgb; levels=N makes a mipmapped array "
             "of N levels (INIT fills them all, one after the other), "
             "sampled with mipfilter=point|linear, lodbias=V, minlod=V, "
             "maxlod=V (the level-of-detail clamps; 0 by default)"),
    cl::cat(runCat));
static cl::list<std::string> surfrefOpts(
    "surfref",
    cl::desc("NAME:TYPE[W[xH[xD]]]:INIT: bind the module's surface "
             "reference NAME (a PTX .surfref) to a surface over a CUDA "
             "array (TYPE and INIT as for --texref); the array is printed "
             "after the launch like a buffer"),
    cl::cat(runCat));
static cl::list<std::string>
    printOpts("print",
              cl::desc("Print this buffer after the launch (default: all)"),
              cl::cat(runCat));
static cl::list<std::string>
    saveOpts("save", cl::desc("NAME=PATH: write the buffer's bytes to PATH"),
             cl::cat(runCat));
static cl::opt<std::string>
    saveDir("save-all",
            cl::desc("DIR: write every buffer's bytes to DIR/NAME.bin"),
            cl::cat(runCat));
static cl::opt<unsigned> printLimit("print-limit", cl::init(32),
                                    cl::desc("Elements printed per buffer (0: "
                                             "all)"),
                                    cl::cat(runCat));
static cl::opt<unsigned> workers("workers", cl::init(0),
                                 cl::desc("CPU worker threads (0: one per "
                                          "core)"),
                                 cl::cat(runCat));
static cl::opt<bool>
    fibers("fibers",
           cl::desc("CPU backend: run kernels that synchronise as fibers, also "
                    "where the compiler split them into regions"),
           cl::cat(runCat));
static cl::opt<bool> warpFunctions(
    "warp-functions", cl::init(true),
    cl::desc("CPU backend: run whole warps through a kernel's regions at once "
             "where the compiler built a warp function (false: thread by "
             "thread, e.g. to compare the two)"),
    cl::cat(runCat));
static cl::opt<unsigned> repeat("repeat", cl::init(1),
                                cl::desc("Launch the kernel N times"),
                                cl::cat(runCat));
static cl::opt<bool> timing("time",
                            cl::desc("Print compile and load times and the "
                                     "median time of a launch, and of its "
                                     "kernel where the device times it (to "
                                     "stderr)"),
                            cl::cat(runCat));
static cl::opt<std::string>
    passesOpt("passes",
              cl::desc("Wooly passes to run before lowering, e.g. "
                       "wooly-constrain or wooly-slice,wooly-isolate; the "
                       "parameters they append are filled at launch (the "
                       "virtual grid is --grid, the slice the whole grid, "
                       "the isolation region the hull of the buffers)"),
              cl::value_desc("pipeline"), cl::cat(runCat));
static cl::opt<unsigned> physicalBlocks(
    "physical-blocks",
    cl::desc("With wooly-constrain/wooly-slice: physical blocks to run the "
             "grid on (default: as many as the grid has, at most 65535)"),
    cl::init(0), cl::cat(runCat));
static cl::opt<bool>
    cooperative("cooperative",
                cl::desc("A cooperative launch (cudaLaunchCooperativeKernel): "
                         "all blocks at once, grid.sync() allowed"),
                cl::cat(runCat));
static cl::opt<bool> noChecks("no-bounds-checks",
                              cl::desc("Compile without memory-access checks"),
                              cl::cat(runCat));

namespace {
struct ElemType {
  char kind; // 'u', 's', 'f', 'b'
  unsigned bytes;
};

llvm::Expected<ElemType> parseType(StringRef t) {
  ElemType e{t.empty() ? '?' : t[0], 0};
  unsigned bits;
  if (t.size() < 2 || !StringRef("usfb").contains(e.kind) ||
      t.drop_front().getAsInteger(10, bits) ||
      !(bits == 8 || bits == 16 || bits == 32 || bits == 64) ||
      (e.kind == 'f' && bits == 8))
    return llvm::createStringError("unknown element type '" + t +
                                   "' (u8..u64, s8..s64, b8..b64, f16, f32, "
                                   "f64)");
  e.bytes = bits / 8;
  return e;
}

/// Encodes `text` as an element of type `e` into `out` (little-endian).
/// f16 goes through f32 (the host's conversion) and is then rounded to
/// nearest even.
bool encode(ElemType e, StringRef text, uint8_t *out) {
  uint64_t bits = 0;
  if (e.kind == 'f') {
    double d;
    if (text.getAsDouble(d))
      return false;
    if (e.bytes == 8) {
      bits = llvm::bit_cast<uint64_t>(d);
    } else {
      llvm::APFloat v(static_cast<float>(d));
      bool losesInfo;
      if (e.bytes == 2)
        v.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven,
                  &losesInfo);
      bits = v.bitcastToAPInt().getZExtValue();
    }
  } else {
    int64_t s;
    uint64_t u;
    if (!text.getAsInteger(0, u))
      bits = u;
    else if (!text.getAsInteger(0, s))
      bits = uint64_t(s);
    else
      return false;
  }
  std::memcpy(out, &bits, e.bytes);
  return true;
}

std::string formatElem(ElemType e, const uint8_t *p) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, e.bytes);
  if (e.kind == 'f' && e.bytes == 4) {
    float f = llvm::bit_cast<float>(uint32_t(bits));
    char buf[64];
    snprintf(buf, sizeof buf, "%.9g", double(f));
    return buf;
  }
  if (e.kind == 'f' && e.bytes == 8) {
    double d = llvm::bit_cast<double>(bits);
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", d);
    return buf;
  }
  if (e.kind == 's') {
    int64_t v = int64_t(bits << (64 - 8 * e.bytes)) >> (64 - 8 * e.bytes);
    return std::to_string(v);
  }
  if (e.kind == 'u')
    return std::to_string(bits);
  return "0x" + llvm::utohexstr(bits);
}

/// One `--arg`.
struct Arg {
  std::string name;
  ElemType type;
  bool buffer = false;
  uint64_t count = 0;
  std::vector<uint8_t> bytes; // Scalar value or initial buffer contents.
  uint64_t device = 0;
};

llvm::Expected<Arg> parseArg(StringRef spec) {
  Arg a;
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError("--arg=" + spec + ": " + why);
  };
  auto [name, rest] = spec.split(':');
  auto [typeText, init] = rest.split(':');
  if (name.empty() || typeText.empty())
    return fail("expected NAME:TYPE:VALUE, NAME:TYPE:COUNT:INIT or "
                "NAME:TYPE[COUNT]:INIT");
  a.name = name.str();
  StringRef base = typeText;
  if (!typeText.contains('[') && init.contains(':')) {
    // NAME:TYPE:COUNT:INIT (a scalar has a single field after the type).
    auto [countText, bufferInit] = init.split(':');
    if (countText.getAsInteger(0, a.count) || a.count == 0)
      return fail("bad element count '" + countText + "'");
    a.buffer = true;
    init = bufferInit;
  } else if (size_t lb = typeText.find('['); lb != StringRef::npos) {
    if (!typeText.ends_with("]"))
      return fail("missing ']'");
    base = typeText.take_front(lb);
    if (typeText.slice(lb + 1, typeText.size() - 1).getAsInteger(0, a.count) ||
        a.count == 0)
      return fail("bad element count");
    a.buffer = true;
  }
  auto t = parseType(base);
  if (!t)
    return fail(llvm::toString(t.takeError()));
  a.type = *t;
  if (!a.buffer) {
    a.bytes.resize(a.type.bytes);
    if (!encode(a.type, init, a.bytes.data()))
      return fail("bad value '" + init + "'");
    return a;
  }
  a.bytes.assign(a.count * a.type.bytes, 0);
  auto [mode, modeArg] = init.split(':');
  if (init.empty() || mode == "zero")
    return a;
  if (mode == "random") {
    uint64_t seed = 1;
    if (modeArg.consume_front("seed=") && modeArg.getAsInteger(0, seed))
      return fail("bad seed");
    std::mt19937_64 rng(seed);
    for (uint64_t i = 0; i < a.count; ++i) {
      uint8_t *p = a.bytes.data() + i * a.type.bytes;
      if (a.type.kind == 'f') {
        // Uniform in [-1, 1): finite values of every type.
        double d = double(rng() >> 11) / double(1ull << 53) * 2.0 - 1.0;
        encode(a.type, llvm::formatv("{0:e17}", d).str(), p);
      } else {
        uint64_t v = rng();
        std::memcpy(p, &v, a.type.bytes);
      }
    }
    return a;
  }
  if (mode == "iota") {
    for (uint64_t i = 0; i < a.count; ++i)
      encode(a.type, std::to_string(i), a.bytes.data() + i * a.type.bytes);
    return a;
  }
  if (mode.consume_front("fill=")) {
    for (uint64_t i = 0; i < a.count; ++i)
      if (!encode(a.type, mode, a.bytes.data() + i * a.type.bytes))
        return fail("bad fill value");
    return a;
  }
  if (mode.consume_front("file=")) {
    auto buf = llvm::MemoryBuffer::getFile(mode);
    if (!buf)
      return fail("cannot read '" + mode + "': " + buf.getError().message());
    size_t n = std::min<size_t>((*buf)->getBufferSize(), a.bytes.size());
    std::memcpy(a.bytes.data(), (*buf)->getBufferStart(), n);
    return a;
  }
  return fail("unknown initialiser '" + init +
              "' (zero, random[:seed=N], iota, fill=V, file=PATH)");
}

/// One `--texref` or `--surfref`: a CUDA array and the object bound to
/// the reference.
struct Reference {
  std::string name;
  bool surface = false;
  Arg texels; // the array's contents, as a buffer
  ResourceDesc resource;
  TextureDesc texture;
};

llvm::Expected<Reference> parseReference(StringRef spec, bool surface) {
  Reference r;
  r.surface = surface;
  StringRef flag = surface ? "--surfref=" : "--texref=";
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(flag + spec + ": " + why);
  };
  auto [name, rest] = spec.split(':');
  auto [typeText, tail] = rest.split(':');
  size_t lb = typeText.find('[');
  if (name.empty() || lb == StringRef::npos || !typeText.ends_with("]"))
    return fail("expected NAME:TYPE[W[xH[xD]]]:INIT[,OPTION...]");
  auto [init, options] = tail.split(',');
  // The element type and the number of channels.
  StringRef base = typeText.take_front(lb);
  unsigned channels = 1;
  if (size_t x = base.find('x'); x != StringRef::npos) {
    if (base.drop_front(x + 1).getAsInteger(10, channels) ||
        (channels != 1 && channels != 2 && channels != 4))
      return fail("1, 2 or 4 channels");
    base = base.take_front(x);
  }
  auto t = parseType(base);
  if (!t)
    return fail(llvm::toString(t.takeError()));
  if (t->bytes == 8 || t->kind == 'b')
    return fail("texel channels are u8..u32, s8..s32, f16 or f32");
  // The extents.
  llvm::SmallVector<StringRef, 3> dims;
  typeText.slice(lb + 1, typeText.size() - 1).split(dims, 'x');
  uint64_t extent[3] = {0, 0, 0};
  if (dims.empty() || dims.size() > 3)
    return fail("expected extents W, WxH or WxHxD");
  for (auto [i, d] : llvm::enumerate(dims))
    if (d.getAsInteger(0, extent[i]) || extent[i] == 0)
      return fail("bad extent '" + d + "'");
  ResourceDesc &res = r.resource;
  res.kind = ResourceDesc::Kind::Array;
  res.width = extent[0];
  res.height = extent[1];
  res.depth = extent[2];
  for (unsigned c = 0; c < channels; ++c)
    res.format.bits[c] = int(t->bytes * 8);
  res.format.kind = t->kind == 'f'   ? ChannelKind::Float
                    : t->kind == 's' ? ChannelKind::Signed
                                     : ChannelKind::Unsigned;
  if (const char *why = channelFormatError(res.format))
    return fail(why);
  llvm::SmallVector<StringRef, 4> opts;
  if (!options.empty())
    options.split(opts, ',');
  if (surface && !opts.empty())
    return fail("a surface takes no options");
  // `levels=N` makes a mipmapped array: its levels' texels one after the
  // other, all filled by INIT.
  for (StringRef o : opts)
    if (o.consume_front("levels=")) {
      res.kind = ResourceDesc::Kind::MipmappedArray;
      if (o.getAsInteger(0, res.levels) || res.levels == 0 ||
          res.levels > mipLevelLimit(res))
        return fail("levels=N takes 1 to 1 + log2 of the largest extent");
    }
  uint64_t texels =
      res.kind == ResourceDesc::Kind::MipmappedArray
          ? mipLevelOffset(res, res.levels) / res.format.elementBytes()
          : extent[0] * std::max<uint64_t>(extent[1], 1) *
                std::max<uint64_t>(extent[2], 1);
  auto filled = parseArg(
      llvm::formatv("{0}:{1}[{2}]:{3}", name, base, texels * channels, init)
          .str());
  if (!filled)
    return fail(llvm::toString(filled.takeError()));
  r.name = name.str();
  r.texels = std::move(*filled);
  // The texture's state.
  TextureDesc &d = r.texture;
  for (StringRef o : opts) {
    auto [key, value] = o.split('=');
    double v;
    if (key == "levels") {
      continue;
    } else if (key == "mipfilter" && (value == "point" || value == "linear")) {
      d.mipmapFilterMode =
          value == "point" ? FilterMode::Point : FilterMode::Linear;
    } else if ((key == "lodbias" || key == "minlod" || key == "maxlod") &&
               !value.getAsDouble(v)) {
      (key == "lodbias"  ? d.mipmapLevelBias
       : key == "minlod" ? d.minMipmapLevelClamp
                         : d.maxMipmapLevelClamp) = float(v);
    } else if (key == "filter" && (value == "point" || value == "linear")) {
      d.filterMode = value == "point" ? FilterMode::Point : FilterMode::Linear;
    } else if (key == "address") {
      std::optional<AddressMode> m =
          value == "wrap"     ? std::optional(AddressMode::Wrap)
          : value == "clamp"  ? std::optional(AddressMode::Clamp)
          : value == "mirror" ? std::optional(AddressMode::Mirror)
          : value == "border" ? std::optional(AddressMode::Border)
                              : std::nullopt;
      if (!m)
        return fail("unknown address mode '" + value + "'");
      for (AddressMode &a : d.addressMode)
        a = *m;
    } else if (key == "border") {
      double v;
      if (value.getAsDouble(v))
        return fail("bad border value '" + value + "'");
      for (float &c : d.borderColor)
        c = float(v);
    } else if (o == "normalized") {
      d.normalizedCoords = true;
    } else if (o == "read=float") {
      d.readMode = ReadMode::NormalizedFloat;
    } else if (o == "srgb") {
      d.sRGB = true;
    } else {
      return fail("unknown option '" + o + "'");
    }
  }
  return r;
}

bool parseDims(StringRef text, std::array<uint32_t, 3> &dims) {
  llvm::SmallVector<StringRef> parts;
  text.split(parts, ',');
  if (parts.empty() || parts.size() > 3)
    return false;
  dims = {1, 1, 1};
  for (auto [i, p] : llvm::enumerate(parts))
    if (p.trim().getAsInteger(0, dims[i]))
      return false;
  return true;
}

int fail(const llvm::Twine &msg) {
  llvm::WithColor::error(llvm::errs(), "wooly-run") << msg << '\n';
  return 1;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(runCat);
  cl::ParseCommandLineOptions(
      argc, argv,
      "wooly-run: compile a PTX or Wooly file and run one of its kernels\n\n"
      "Buffers are allocated in device memory and passed by address; "
      "scalars by value,\nin the order of the --arg options (which must "
      "match the kernel's parameters).\nAfter the launch the buffers are "
      "printed (or saved with --save).\n");

  if (!llvm::is_contained(backendNames(), StringRef(backend))) {
    std::string known;
    llvm::ArrayRef<StringRef> names = backendNames();
    for (auto [i, n] : llvm::enumerate(names)) {
      if (i)
        known += i + 1 == names.size() ? " and " : ", ";
      known += "'" + n.str() + "'";
    }
    return fail("backend '" + backend + "' is not supported yet (only " +
                known + " are)");
  }
  auto target = Target::parse(targetOpt);
  if (!target)
    return fail(llvm::toString(target.takeError()));
  if (target->kind != Target::Kind::Host &&
      !(backend == "cuda" && target->kind == Target::Kind::NVPTX))
    return fail("--target=" + targetOpt + " cannot run on --backend=" +
                backend + " (cpu runs host; cuda runs host or sm_XX)");
  if (backendRunsOriginalPTX(backend) && target->kind == Target::Kind::Host &&
      StringRef(inputFile).ends_with(".mlir"))
    return fail("--backend=" + backend +
                " runs the original PTX: give a .ptx file, or compile the "
                "Wooly file with --target=sm_XX");
  auto buf = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!buf)
    return fail("cannot read '" + inputFile + "': " + buf.getError().message());
  CompileInput input;
  input.text = (*buf)->getBuffer().str();
  input.name = inputFile;
  input.kind = StringRef(inputFile).ends_with(".mlir")
                   ? CompileInput::Kind::MLIR
                   : CompileInput::Kind::PTX;
  CompileOptions options;
  options.boundsChecks = !noChecks;
  options.passes = passesOpt;
  // Only the kernel launched is compiled (and transformed by the passes).
  if (!kernelName.empty())
    options.kernels = std::vector<std::string>{kernelName};

  auto t0 = std::chrono::steady_clock::now();
  auto compiled = compile(input, *target, options);
  if (!compiled) {
    llvm::errs() << llvm::toString(compiled.takeError()) << '\n';
    return 1;
  }
  auto t1 = std::chrono::steady_clock::now();
  auto module = std::make_shared<const CompiledModule>(std::move(*compiled));

  std::string kernel = kernelName;
  if (kernel.empty()) {
    if (module->kernels.size() != 1)
      return fail(llvm::formatv("the module has {0} kernels; choose one with "
                                "--kernel",
                                module->kernels.size()));
    kernel = module->kernels[0].name;
  }
  const KernelInfo *info = module->findKernel(kernel);
  if (!info)
    return fail("no kernel named '" + kernel + "' in " + inputFile);

  std::vector<Arg> args;
  for (const std::string &spec : argOpts) {
    auto a = parseArg(spec);
    if (!a)
      return fail(llvm::toString(a.takeError()));
    args.push_back(std::move(*a));
  }
  // Parameters a pass appended are filled at launch, not by --arg.
  size_t numUser = llvm::count_if(
      info->paramRoles, [](const std::string &r) { return r.empty(); });
  if (args.size() != numUser)
    return fail(llvm::formatv("kernel '{0}' takes {1} parameters, {2} --arg "
                              "given",
                              kernel, numUser, args.size()));

  // The backend gets both the compiled module and the source text: the cpu
  // backend runs the former, the cuda backend the former when it is PTX
  // (--target=sm_XX), else the original PTX with the parameter layout of
  // the host compilation.
  BackendOptions backendOptions;
  backendOptions.cpuWorkers = workers;
  backendOptions.cpuRegions = !fibers;
  backendOptions.cpuWarps = warpFunctions;
  auto created = createBackend(backend, backendOptions);
  if (!created)
    return fail(llvm::toString(created.takeError()));
  Backend &device = **created;
  StringRef ptxText =
      input.kind == CompileInput::Kind::PTX ? StringRef(input.text) : "";
  auto loaded = device.loadModule(module, ptxText);
  if (!loaded)
    return fail(llvm::toString(loaded.takeError()));
  auto t2 = std::chrono::steady_clock::now();

  std::vector<uint8_t> params(userParamBufferSize(*info), 0);
  for (auto [i, a] : llvm::enumerate(args)) {
    uint64_t size = info->paramSizes[i];
    const uint8_t *src = a.bytes.data();
    uint64_t n = a.bytes.size();
    if (a.buffer) {
      auto addr = device.allocate(a.bytes.size());
      if (!addr)
        return fail(llvm::toString(addr.takeError()));
      a.device = *addr;
      if (auto e =
              device.copyToDevice(a.device, a.bytes.data(), a.bytes.size()))
        return fail(llvm::toString(std::move(e)));
      src = reinterpret_cast<const uint8_t *>(&a.device);
      n = 8;
    }
    if (n != size)
      return fail(llvm::formatv("--arg {0} has {1} bytes, parameter {2} of "
                                "'{3}' has {4}",
                                a.name, n, i, kernel, size));
    std::memcpy(params.data() + info->paramOffsets[i], src, n);
  }

  // Texture and surface references: a CUDA array each, an object over it,
  // its handle written into the reference's module variable.
  std::vector<Reference> refs;
  for (auto [specs, surface] :
       {std::pair(&texrefOpts, false), std::pair(&surfrefOpts, true)})
    for (const std::string &spec : *specs) {
      auto r = parseReference(spec, surface);
      if (!r)
        return fail(llvm::toString(r.takeError()));
      refs.push_back(std::move(*r));
    }
  for (Reference &r : refs) {
    Arg &a = r.texels;
    auto addr = device.allocate(a.bytes.size());
    if (!addr)
      return fail(llvm::toString(addr.takeError()));
    a.device = r.resource.address = *addr;
    if (auto e = device.copyToDevice(a.device, a.bytes.data(), a.bytes.size()))
      return fail(llvm::toString(std::move(e)));
    auto handle = r.surface ? device.createSurfaceObject(r.resource)
                            : device.createTextureObject(r.resource, r.texture);
    if (!handle)
      return fail(r.name + ": " + llvm::toString(handle.takeError()));
    if (auto e = device.bindReference(*loaded, r.name, *handle))
      return fail(r.name + ": " + llvm::toString(std::move(e)));
  }

  LaunchConfig config;
  if (!parseDims(gridOpt, config.grid))
    return fail("bad --grid '" + gridOpt + "'");
  if (!parseDims(blockOpt, config.block))
    return fail("bad --block '" + blockOpt + "'");
  config.dynamicSharedBytes = sharedOpt;
  config.cooperative = cooperative;
  LaunchOptions launchOptions;
  launchOptions.physicalBlocks = physicalBlocks;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (Arg &a : args)
    if (a.buffer) {
      lo = std::min(lo, a.device);
      hi = std::max(hi, a.device + a.bytes.size());
    }
  if (lo < hi)
    launchOptions.isolateRegion = {lo, hi};
  // A contained kernel (wooly-contain) gets a zeroed status record: a trap,
  // failed assertion or misaligned access it records is the launch's error.
  if (llvm::is_contained(info->paramRoles, "launch_status")) {
    auto record = device.allocate(kContainRecordBytes);
    if (!record)
      return fail(llvm::toString(record.takeError()));
    if (auto e = device.memset(*record, 0, kContainRecordBytes))
      return fail(llvm::toString(std::move(e)));
    launchOptions.statusRecord = *record;
  }

  // Every launch is synchronous, so its wall time is the kernel's time
  // plus the launch overhead; the median over --repeat launches is printed.
  // A backend that times its kernels itself (cuda: events) adds that.
  std::vector<double> launchMs, kernelMs;
  for (unsigned r = 0; r < std::max(1u, unsigned(repeat)); ++r) {
    auto t3 = std::chrono::steady_clock::now();
    auto ran =
        launchKernel(device, *loaded, *info, config, params, launchOptions);
    if (!ran)
      return fail(llvm::toString(ran.takeError()));
    launchMs.push_back(std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - t3)
                           .count());
    if (std::optional<double> k = device.lastKernelMs())
      kernelMs.push_back(*k);
  }

  // The first fault of any launch stays in the record (later launches'
  // threads see it and exit): read once, outside the timed launches.
  if (launchOptions.statusRecord)
    if (auto e = containStatusError(device, kernel, launchOptions.statusRecord))
      return fail(llvm::toString(std::move(e)));
  for (Arg &a : args) {
    if (!a.buffer)
      continue;
    if (auto e =
            device.copyFromDevice(a.bytes.data(), a.device, a.bytes.size()))
      return fail(llvm::toString(std::move(e)));
  }
  // A surface's array is printed and saved like a buffer.
  for (Reference &r : refs)
    if (r.surface) {
      if (auto e = device.copyFromDevice(r.texels.bytes.data(), r.texels.device,
                                         r.texels.bytes.size()))
        return fail(llvm::toString(std::move(e)));
      args.push_back(std::move(r.texels));
    }
  if (!saveDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(saveDir))
      return fail("cannot create '" + saveDir + "': " + ec.message());
    for (Arg &a : args)
      if (a.buffer)
        saveOpts.push_back(a.name + "=" + saveDir + "/" + a.name + ".bin");
  }
  for (const std::string &s : saveOpts) {
    StringRef name = StringRef(s).split('=').first;
    StringRef path = StringRef(s).split('=').second;
    auto it = llvm::find_if(args, [&](const Arg &a) { return a.name == name; });
    if (it == args.end() || !it->buffer)
      return fail("--save: no buffer named '" + name + "'");
    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec);
    if (ec)
      return fail("cannot write '" + path + "': " + ec.message());
    out.write(reinterpret_cast<const char *>(it->bytes.data()),
              it->bytes.size());
  }
  for (const Arg &a : args) {
    if (!a.buffer)
      continue;
    if (!printOpts.empty() && !llvm::is_contained(printOpts, a.name))
      continue;
    llvm::outs() << a.name << ':';
    uint64_t n = printLimit ? std::min<uint64_t>(printLimit, a.count) : a.count;
    for (uint64_t i = 0; i < n; ++i)
      llvm::outs() << ' '
                   << formatElem(a.type, a.bytes.data() + i * a.type.bytes);
    if (n < a.count)
      llvm::outs() << " ... (" << a.count << " elements)";
    llvm::outs() << '\n';
  }
  llvm::outs().flush();
  if (timing) {
    using ms = std::chrono::duration<double, std::milli>;
    llvm::sort(launchMs);
    llvm::errs() << llvm::formatv(
        "compile {0:f2} ms, load {1:f2} ms, run {2:f3} ms per launch (median "
        "of {3})",
        ms(t1 - t0).count(), ms(t2 - t1).count(), launchMs[launchMs.size() / 2],
        launchMs.size());
    if (kernelMs.size() == launchMs.size()) {
      llvm::sort(kernelMs);
      llvm::errs() << llvm::formatv(", kernel {0:f4} ms (median, timed by "
                                    "the device)",
                                    kernelMs[kernelMs.size() / 2]);
    }
    llvm::errs() << '\n';
  }
  return 0;
}
