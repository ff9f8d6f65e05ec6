//===- AMDGPUTest.cpp - The gfxXXX targets of the compile API ---*- C++ -*-===//
//
// The AMDGPU backend (lib/Compiler/AMDGPU.cpp): target parsing, the cache key
// over chip and device-library options, ROCm device-library linking against
// a fake library directory written by the test (no /opt/rocm needed), the
// code object linked by ld.lld and the kernel metadata read from its note.
// Most tests start from hand-written LLVM IR, so that they test this
// backend alone; the last ones go through compile() and the ROCDL lowering
// (CompilerTest.cpp compiles PTX for gfx942 too).
//
//===----------------------------------------------------------------------===//

#include "TargetCodegen.h"
#include "Wooly/Compiler/Compiler.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <gtest/gtest.h>

using namespace wooly;
using namespace wooly::detail;

namespace {
Target gfx(llvm::StringRef chip) { return llvm::cantFail(Target::parse(chip)); }

/// `needle` occurs in `hay`.
::testing::AssertionResult contains(const std::string &hay,
                                    llvm::StringRef needle) {
  if (hay.find(needle.str()) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "'" << needle.str() << "' not in: " << hay;
}

/// A kernel that calls ocml's tanh and stores the result.
const char *kTanhKernel = R"(
define amdgpu_kernel void @k(ptr addrspace(1) %out, float %x) {
  %y = call float @__ocml_tanh_f32(float %x)
  store float %y, ptr addrspace(1) %out
  ret void
}
declare float @__ocml_tanh_f32(float)
)";

/// A kernel that calls no device library.
const char *kPlainKernel = R"(
define amdgpu_kernel void @plain(ptr addrspace(1) %out, i32 %v) {
  store i32 %v, ptr addrspace(1) %out
  ret void
}
)";

/// A fake ROCm device-library directory: ocml defines `__ocml_tanh_f32`
/// (calling into ockl and reading an oclc control variable, as the real one
/// does), ockl its helper, oclc_daz_opt_off the variable; the other control
/// libraries are empty modules. Removed with the object.
class FakeDeviceLibs {
public:
  FakeDeviceLibs() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("wooly-devlibs", dir));
    write("ocml.bc", R"(
@__oclc_daz_opt = external addrspace(4) constant i8
declare float @__ockl_helper(float)
define float @__ocml_tanh_f32(float %x) {
  %d = load i8, ptr addrspace(4) @__oclc_daz_opt
  %h = call float @__ockl_helper(float %x)
  %f = uitofp i8 %d to float
  %r = fadd float %h, %f
  ret float %r
}
define float @__ocml_unused_f32(float %x) {
  ret float %x
}
)");
    write("ockl.bc", R"(
define float @__ockl_helper(float %x) {
  %y = fmul float %x, 2.0
  ret float %y
}
)");
    for (const std::string &file : rocmDeviceLibFiles("gfx942"))
      if (llvm::StringRef(file).starts_with("oclc_"))
        write(file, file == "oclc_daz_opt_off.bc"
                        ? "@__oclc_daz_opt = linkonce_odr protected "
                          "addrspace(4) constant i8 0\n"
                        : "");
  }
  ~FakeDeviceLibs() { llvm::sys::fs::remove_directories(dir); }

  /// Writes the LLVM IR `ir` as bitcode to `file` in the directory.
  void write(llvm::StringRef file, llvm::StringRef ir) {
    llvm::LLVMContext ctx;
    llvm::SMDiagnostic diag;
    std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(ir, diag, ctx);
    ASSERT_TRUE(m) << diag.getMessage().str();
    std::error_code ec;
    llvm::raw_fd_ostream os(path(file), ec, llvm::sys::fs::OF_None);
    ASSERT_FALSE(ec) << ec.message();
    llvm::WriteBitcodeToFile(*m, os);
  }
  std::string path(llvm::StringRef file) const {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, file);
    return std::string(p);
  }

  llvm::SmallString<128> dir;
};

/// Parses `ir` into a module of `ctx`.
std::unique_ptr<llvm::Module> parse(const char *ir, llvm::LLVMContext &ctx) {
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(ir, diag, ctx);
  EXPECT_TRUE(m) << diag.getMessage().str();
  return m;
}

/// Compiles the LLVM IR `ir` whose only kernel is `symbol` with the AMDGPU
/// backend for gfx942 and `options`.
llvm::Expected<CompiledModule> compileIR(const char *ir, llvm::StringRef symbol,
                                         const CompileOptions &options) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = parse(ir, ctx);
  if (!m)
    return llvm::createStringError("bad test IR");
  auto codegen = createTargetCodegen(gfx("gfx942"), options);
  if (!codegen)
    return codegen.takeError();
  auto tm = (*codegen)->createTargetMachine();
  if (!tm)
    return tm.takeError();
  CompiledModule out;
  KernelInfo k;
  k.name = k.symbol = symbol.str();
  out.kernels.push_back(k);
  if (llvm::Error e = compileLLVMModule(**codegen, **tm, *m, 2, out))
    return std::move(e);
  return out;
}

TEST(AMDGPUTarget, ParsesAndChecksTheChip) {
  for (const char *chip : {"gfx90a", "gfx942"}) {
    Target t = gfx(chip);
    EXPECT_EQ(t.kind, Target::Kind::AMDGCN);
    EXPECT_EQ(t.str(), chip);
  }
  // A chip the ROCDL lowering does not target is refused before any work.
  auto m = compile({CompileInput::Kind::PTX, "", "x.ptx"}, gfx("gfx1100"), {});
  ASSERT_FALSE(bool(m));
  EXPECT_TRUE(contains(llvm::toString(m.takeError()),
                       "target 'gfx1100' is not supported"));
}

TEST(AMDGPUCacheKey, CoversChipDeviceLibsAndLinker) {
  CompileInput in{CompileInput::Kind::PTX, ".version 8.0", "k.ptx"};
  std::string base = cacheKey(in, gfx("gfx942"), {});
  EXPECT_NE(base, cacheKey(in, gfx("gfx90a"), {}));
  FakeDeviceLibs libs;
  CompileOptions withLibs;
  withLibs.rocmDeviceLibs = libs.dir.str().str();
  std::string keyed = cacheKey(in, gfx("gfx942"), withLibs);
  EXPECT_NE(base, keyed);
  EXPECT_EQ(keyed, cacheKey(in, gfx("gfx942"), withLibs));
  // A library file that changes (here: its size) changes the key.
  libs.write("ocml.bc", "define float @__ocml_tanh_f32(float %x) {\n"
                        "  ret float %x\n}\n");
  EXPECT_NE(keyed, cacheKey(in, gfx("gfx942"), withLibs));
  CompileOptions withLld;
  withLld.lldPath = "/usr/bin/ld.lld";
  EXPECT_NE(base, cacheKey(in, gfx("gfx942"), withLld));
  // Options only the AMDGPU backend reads leave other targets' keys alone.
  Target sm90 = llvm::cantFail(Target::parse("sm_90"));
  EXPECT_EQ(cacheKey(in, sm90, {}), cacheKey(in, sm90, withLibs));
}

TEST(ROCmDeviceLibs, NotNeededWithoutCalls) {
  llvm::LLVMContext ctx;
  auto m = parse(kPlainKernel, ctx);
  ASSERT_TRUE(m);
  // No directory, and none needed.
  EXPECT_FALSE(bool(linkROCmDeviceLibs(*m, "gfx942", "")));
}

TEST(ROCmDeviceLibs, MissingDirectoryNamesTheFunctions) {
  llvm::LLVMContext ctx;
  auto m = parse(kTanhKernel, ctx);
  ASSERT_TRUE(m);
  llvm::Error e = linkROCmDeviceLibs(*m, "gfx942", "");
  ASSERT_TRUE(bool(e));
  EXPECT_TRUE(contains(
      llvm::toString(std::move(e)),
      "kernel needs the ROCm device library (ocml: __ocml_tanh_f32): pass "
      "--rocm-device-libs=DIR (e.g. /opt/rocm/amdgcn/bitcode)"));
}

TEST(ROCmDeviceLibs, LinksWhatIsNeededAndInternalizesIt) {
  FakeDeviceLibs libs;
  llvm::LLVMContext ctx;
  auto m = parse(kTanhKernel, ctx);
  ASSERT_TRUE(m);
  m->setTargetTriple(llvm::Triple("amdgcn-amd-amdhsa"));
  ASSERT_FALSE(bool(linkROCmDeviceLibs(*m, "gfx942", libs.dir)));
  // ocml's function and, through it, ockl's and oclc's are defined now,
  // and internal; what was not needed was not linked.
  llvm::Function *tanh = m->getFunction("__ocml_tanh_f32");
  ASSERT_TRUE(tanh);
  EXPECT_FALSE(tanh->isDeclaration());
  EXPECT_TRUE(tanh->hasLocalLinkage());
  ASSERT_TRUE(m->getFunction("__ockl_helper"));
  EXPECT_FALSE(m->getFunction("__ockl_helper")->isDeclaration());
  ASSERT_TRUE(m->getNamedGlobal("__oclc_daz_opt"));
  EXPECT_FALSE(m->getNamedGlobal("__oclc_daz_opt")->isDeclaration());
  EXPECT_FALSE(m->getFunction("__ocml_unused_f32"));
  // The kernel stays visible.
  EXPECT_FALSE(m->getFunction("k")->hasLocalLinkage());
}

/// The error of linking kTanhKernel's libraries from a fake directory
/// without `file`.
std::string errorWithout(llvm::StringRef file, std::string &path) {
  FakeDeviceLibs libs;
  path = libs.path(file);
  EXPECT_FALSE(llvm::sys::fs::remove(path));
  llvm::LLVMContext ctx;
  auto m = parse(kTanhKernel, ctx);
  if (!m)
    return "";
  llvm::Error e = linkROCmDeviceLibs(*m, "gfx942", libs.dir);
  return e ? llvm::toString(std::move(e)) : "";
}

TEST(ROCmDeviceLibs, MissingFilesAreNamed) {
  std::string path;
  EXPECT_TRUE(contains(errorWithout("oclc_isa_version_942.bc", path),
                       "has no oclc_isa_version_942.bc"));
  EXPECT_TRUE(
      contains(errorWithout("ocml.bc", path), path + " does not exist"));
}

TEST(AMDGPUBackend, CodeObjectWithMetadataFromTheNote) {
  auto m = compileIR(kPlainKernel, "plain", {});
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  // An ELF shared object with the kernel and its descriptor.
  ASSERT_GT(m->binary.size(), 64u);
  EXPECT_EQ(m->binary.substr(0, 4), "\x7f"
                                    "ELF");
  EXPECT_TRUE(contains(m->binary, "plain.kd"));
  EXPECT_TRUE(contains(m->binary, "amdhsa.kernels"));
  // What the backend allocated, from the AMDGPU metadata note.
  const KernelInfo &k = m->kernels[0];
  EXPECT_GT(k.registers, 0u);
  EXPECT_GT(k.scalarRegisters, 0u);
  EXPECT_EQ(k.spills, 0u);
  EXPECT_EQ(k.privateBytes, 0u);
  EXPECT_EQ(k.staticSharedBytes, 0u);
  // The metadata survives serialisation.
  CompiledModule copy = *m;
  auto back = CompiledModule::deserialize(copy.serialize());
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->kernels[0].registers, k.registers);
  EXPECT_EQ(back->kernels[0].scalarRegisters, k.scalarRegisters);
}

TEST(AMDGPUBackend, SharedAndPrivateSegmentsAreReported) {
  // 256 bytes of LDS and a dynamically indexed private array.
  auto m = compileIR(R"(
@lds = internal addrspace(3) global [64 x i32] poison
define amdgpu_kernel void @seg(ptr addrspace(1) %out, i32 %i) {
  %priv = alloca [16 x i32], align 4, addrspace(5)
  %pp = getelementptr [16 x i32], ptr addrspace(5) %priv, i32 0, i32 %i
  store volatile i32 %i, ptr addrspace(5) %pp
  %pq = getelementptr [16 x i32], ptr addrspace(5) %priv, i32 0, i32 3
  %v = load volatile i32, ptr addrspace(5) %pq
  %lp = getelementptr [64 x i32], ptr addrspace(3) @lds, i32 0, i32 %i
  store volatile i32 %v, ptr addrspace(3) %lp
  %w = load volatile i32, ptr addrspace(3) @lds
  store i32 %w, ptr addrspace(1) %out
  ret void
}
)",
                     "seg", {});
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->kernels[0].staticSharedBytes, 256u);
  EXPECT_GE(m->kernels[0].privateBytes, 64u);
}

TEST(AMDGPUBackend, LinksDeviceLibsOnlyWhenGiven) {
  // Without a directory the call is refused with the clear error...
  auto bad = compileIR(kTanhKernel, "k", {});
  ASSERT_FALSE(bool(bad));
  EXPECT_TRUE(
      contains(llvm::toString(bad.takeError()), "pass --rocm-device-libs=DIR"));
  // ... with one, the library is linked in and nothing of it is exported.
  FakeDeviceLibs libs;
  CompileOptions options;
  options.rocmDeviceLibs = libs.dir.str().str();
  auto m = compileIR(kTanhKernel, "k", options);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_TRUE(contains(m->binary, "k.kd"));
  EXPECT_EQ(m->binary.find("__ocml_tanh_f32"), std::string::npos);
}

TEST(AMDGPUBackend, UnresolvedCallsAreRefusedClearly) {
  auto m = compileIR(R"(
declare void @elsewhere()
define amdgpu_kernel void @calls() {
  call void @elsewhere()
  ret void
}
)",
                     "calls", {});
  ASSERT_FALSE(bool(m));
  EXPECT_TRUE(contains(llvm::toString(m.takeError()),
                       "function 'elsewhere' is called but defined in no "
                       "module linked here"));
}

TEST(AMDGPUBackend, MissingLinkerIsAClearError) {
  CompileOptions options;
  options.lldPath = "/nonexistent/ld.lld";
  auto m = compileIR(kPlainKernel, "plain", options);
  ASSERT_FALSE(bool(m));
  EXPECT_TRUE(contains(llvm::toString(m.takeError()),
                       "the linker '/nonexistent/ld.lld'"));
}

TEST(AMDGPUMetadata, RejectsWhatIsNoCodeObject) {
  std::vector<KernelInfo> kernels(1);
  llvm::Error e = readAMDGPUKernelMetadata("not an ELF file", kernels);
  ASSERT_TRUE(bool(e));
  EXPECT_TRUE(contains(llvm::toString(std::move(e)),
                       "cannot read the AMDGPU code object's metadata"));
}

//===----------------------------------------------------------------------===//
// Through compile() and convert-wooly-to-rocdl
//===----------------------------------------------------------------------===//

/// Compiles `in`, whose only kernel `symbol` calls ocml's tanh, for `chip`:
/// without a device-library directory it must fail with the error that
/// names the function (prefixed by the input's name), with a fake one it
/// must give a code object with the kernel's descriptor.
void checkNeedsOcml(const CompileInput &in, llvm::StringRef chip,
                    llvm::StringRef symbol) {
  auto m = compile(in, gfx(chip), {});
  ASSERT_FALSE(bool(m));
  std::string err = llvm::toString(m.takeError());
  EXPECT_TRUE(contains(err, in.name + ": kernel needs the ROCm device library "
                                      "(ocml: __ocml_tanh_f32): pass "
                                      "--rocm-device-libs=DIR (e.g. "
                                      "/opt/rocm/amdgcn/bitcode)"));
  FakeDeviceLibs libs;
  // Each chip links its own ISA control library.
  libs.write(("oclc_isa_version_" + chip.drop_front(3) + ".bc").str(), "");
  CompileOptions options;
  options.rocmDeviceLibs = libs.dir.str().str();
  auto ok = compile(in, gfx(chip), options);
  ASSERT_TRUE(bool(ok)) << llvm::toString(ok.takeError());
  ASSERT_EQ(ok->kernels.size(), 1u);
  EXPECT_GT(ok->kernels[0].registers, 0u);
  EXPECT_TRUE(contains(ok->binary, (symbol + ".kd").str()));
}

TEST(AMDGPUCompile, DeviceLibraryCallsNeedTheDirectory) {
  // Wooly IR already lowered by hand: a kernel that calls ocml's tanh, with
  // the attributes the lowering leaves for the compile API.
  checkNeedsOcml({CompileInput::Kind::MLIR, R"(
module {
  llvm.func @__ocml_tanh_f32(f32) -> f32
  llvm.func @k(%out: !llvm.ptr<1>, %x: f32) attributes {
      rocdl.kernel, wooly.kernel = "k",
      wooly.param_offsets = array<i64: 0, 8>,
      wooly.param_sizes = array<i64: 8, 4>} {
    %y = llvm.call @__ocml_tanh_f32(%x) : (f32) -> f32
    llvm.store %y, %out : f32, !llvm.ptr<1>
    llvm.return
  }
}
)",
                  "tanh.mlir"},
                 "gfx942", "k");
}

TEST(AMDGPUCompile, PTXTanhNeedsOcml) {
  // The lowering maps `tanh.approx.f32` to ocml's `__ocml_tanh_f32`.
  checkNeedsOcml({CompileInput::Kind::PTX, R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry t(.param .u64 p, .param .f32 x)
{
  .reg .b64 %rd<2>;
  .reg .f32 %f<3>;
  ld.param.u64 %rd1, [p];
  ld.param.f32 %f1, [x];
  tanh.approx.f32 %f2, %f1;
  st.global.f32 [%rd1], %f2;
  ret;
}
)",
                  "t.ptx"},
                 "gfx90a", "t");
}
} // namespace
