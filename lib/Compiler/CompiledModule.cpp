//===- CompiledModule.cpp - Targets and compiled modules --------*- C++ -*-===//
//
// Parsing and printing a Target, and a CompiledModule's kernel lookup and
// byte form (a JSON header line, then the binary). Part of the small
// WoolyCompiledModule library: LLVM Support and TargetParser only, no MLIR,
// so that the runtimes do not link the compiler.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Compiler/CompiledModule.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

using namespace wooly;
using llvm::Expected;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Target
//===----------------------------------------------------------------------===//

Expected<Target> Target::parse(StringRef text) {
  Target t;
  unsigned n;
  if (text == "host" || text == "cpu") {
    t.kind = Kind::Host;
    t.chip = llvm::sys::getHostCPUName().str();
    return t;
  }
  if (text.starts_with("sm_") && !text.drop_front(3).getAsInteger(10, n)) {
    t.kind = Kind::NVPTX;
    t.chip = text.str();
    return t;
  }
  if (text.starts_with("gfx") && text.size() > 3) {
    t.kind = Kind::AMDGCN;
    t.chip = text.str();
    return t;
  }
  return llvm::createStringError("unknown target '" + text +
                                 "' (expected host, sm_XX or gfxXXX)");
}

std::string Target::str() const { return kind == Kind::Host ? "host" : chip; }

//===----------------------------------------------------------------------===//
// CompiledModule
//===----------------------------------------------------------------------===//

const KernelInfo *CompiledModule::findKernel(StringRef name) const {
  for (const KernelInfo &k : kernels)
    if (k.name == name)
      return &k;
  return nullptr;
}

std::string CompiledModule::serialize() const {
  llvm::json::Array ks, gs;
  for (const KernelInfo &k : kernels)
    ks.push_back(llvm::json::Object{
        {"name", k.name},
        {"symbol", k.symbol},
        {"blockSymbol", k.blockSymbol},
        {"paramOffsets", llvm::json::Array(k.paramOffsets)},
        {"paramSizes", llvm::json::Array(k.paramSizes)},
        {"paramBufferSize", k.paramBufferSize},
        {"paramRoles", llvm::json::Array(k.paramRoles)},
        {"needsFibers", k.needsFibers},
        {"fiberReason", k.fiberReason},
        {"regionSymbol", k.regionSymbol},
        {"regionFrameBytes", k.regionFrameBytes},
        {"warpSymbol", k.warpSymbol},
        {"maxntid", llvm::json::Array(k.maxntid)},
        {"readOnlyParams", llvm::json::Array(k.readOnlyParams)},
        {"writesUnknownMemory", k.writesUnknownMemory},
        {"staticSharedBytes", k.staticSharedBytes},
        {"registerEstimate", uint64_t(k.registerEstimate)},
        {"costHint", k.costHint},
        {"registers", uint64_t(k.registers)},
        {"scalarRegisters", uint64_t(k.scalarRegisters)},
        {"spills", uint64_t(k.spills)},
        {"privateBytes", k.privateBytes},
        {"reqntid", llvm::json::Array(k.reqntid)}});
  for (const GlobalInfo &g : globals)
    gs.push_back(llvm::json::Object{
        {"name", g.name}, {"symbol", g.symbol}, {"size", g.size}});
  llvm::json::Object header{{"target", target.str()},
                            {"chip", target.chip},
                            {"kernels", std::move(ks)},
                            {"globals", std::move(gs)},
                            {"staticSharedSize", staticSharedSize},
                            {"numAccessSites", numAccessSites},
                            {"key", key},
                            {"binarySize", uint64_t(binary.size())}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::json::Value(std::move(header)) << '\n' << binary;
  return out;
}

Expected<CompiledModule> CompiledModule::deserialize(StringRef bytes) {
  auto [head, rest] = bytes.split('\n');
  Expected<llvm::json::Value> v = llvm::json::parse(head);
  if (!v)
    return v.takeError();
  const llvm::json::Object *o = v->getAsObject();
  if (!o)
    return llvm::createStringError("compiled module: bad header");
  CompiledModule m;
  auto str = [&](const llvm::json::Object &obj, StringRef key) {
    return obj.getString(key).value_or("").str();
  };
  auto num = [&](const llvm::json::Object &obj, StringRef key) {
    return uint64_t(obj.getInteger(key).value_or(0));
  };
  auto nums = [&](const llvm::json::Object &obj, StringRef key) {
    std::vector<uint64_t> out;
    if (const llvm::json::Array *a = obj.getArray(key))
      for (const llvm::json::Value &e : *a)
        out.push_back(e.getAsInteger().value_or(0));
    return out;
  };
  Expected<Target> t = Target::parse(str(*o, "target"));
  if (!t)
    return t.takeError();
  m.target = *t;
  m.target.chip = str(*o, "chip");
  m.staticSharedSize = num(*o, "staticSharedSize");
  m.numAccessSites = num(*o, "numAccessSites");
  m.key = str(*o, "key");
  if (const llvm::json::Array *ks = o->getArray("kernels"))
    for (const llvm::json::Value &kv : *ks) {
      const llvm::json::Object *ko = kv.getAsObject();
      if (!ko)
        return llvm::createStringError("compiled module: bad kernel entry");
      KernelInfo k;
      k.name = str(*ko, "name");
      k.symbol = str(*ko, "symbol");
      k.blockSymbol = str(*ko, "blockSymbol");
      k.paramOffsets = nums(*ko, "paramOffsets");
      k.paramSizes = nums(*ko, "paramSizes");
      k.paramBufferSize = num(*ko, "paramBufferSize");
      if (const llvm::json::Array *roles = ko->getArray("paramRoles"))
        for (const llvm::json::Value &r : *roles)
          k.paramRoles.push_back(r.getAsString().value_or("").str());
      k.needsFibers = ko->getBoolean("needsFibers").value_or(true);
      k.fiberReason = str(*ko, "fiberReason");
      k.regionSymbol = str(*ko, "regionSymbol");
      k.regionFrameBytes = num(*ko, "regionFrameBytes");
      k.warpSymbol = str(*ko, "warpSymbol");
      if (const llvm::json::Array *ro = ko->getArray("readOnlyParams"))
        for (const llvm::json::Value &b : *ro)
          k.readOnlyParams.push_back(b.getAsBoolean().value_or(false));
      k.writesUnknownMemory =
          ko->getBoolean("writesUnknownMemory").value_or(true);
      k.staticSharedBytes = num(*ko, "staticSharedBytes");
      k.registerEstimate = unsigned(num(*ko, "registerEstimate"));
      k.costHint = num(*ko, "costHint");
      k.registers = unsigned(num(*ko, "registers"));
      k.scalarRegisters = unsigned(num(*ko, "scalarRegisters"));
      k.spills = unsigned(num(*ko, "spills"));
      k.privateBytes = num(*ko, "privateBytes");
      std::vector<uint64_t> mx = nums(*ko, "maxntid"),
                            rq = nums(*ko, "reqntid");
      for (unsigned i = 0; i < 3 && i < mx.size(); ++i)
        k.maxntid[i] = mx[i];
      for (unsigned i = 0; i < 3 && i < rq.size(); ++i)
        k.reqntid[i] = rq[i];
      m.kernels.push_back(std::move(k));
    }
  if (const llvm::json::Array *gs = o->getArray("globals"))
    for (const llvm::json::Value &gv : *gs)
      if (const llvm::json::Object *go = gv.getAsObject())
        m.globals.push_back(
            {str(*go, "name"), str(*go, "symbol"), num(*go, "size")});
  if (rest.size() != num(*o, "binarySize"))
    return llvm::createStringError("compiled module: truncated binary");
  m.binary = rest.str();
  return m;
}
