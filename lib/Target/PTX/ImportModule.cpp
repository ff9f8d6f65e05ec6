//===- ImportModule.cpp - PTX variables and functions -----------*- C++ -*-===//
//
// Module-scope and function-scope variables (`wooly.global`), function
// declarations and definitions (`wooly.func`), the set-up of a function body
// (parameters, results) and the module's attributes.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "llvm/ADT/ScopeExit.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::ptx;
using llvm::StringRef;
using OK = Operand::Kind;

//===----------------------------------------------------------------------===//
// Module level
//===----------------------------------------------------------------------===//

LogicalResult Importer::importGlobal(const VarDecl &d, StringRef name) {
  auto space = llvm::StringSwitch<std::optional<StateSpace>>(d.space)
                   .Case("global", StateSpace::global)
                   .Case("shared", StateSpace::shared)
                   .Case("const", StateSpace::constant)
                   .Case("local", StateSpace::local)
                   .Default(std::nullopt);
  if (!space)
    return error(d.loc,
                 "unsupported state space '." + d.space + "' for a variable");
  if (d.type == "samplerref")
    return error(d.loc, "independent texture mode ('.samplerref' variables) "
                        "is not supported yet; texture references in "
                        "unified mode and texture objects are");
  if (d.type == "texref" || d.type == "surfref")
    return importTexref(d, name);
  auto t = ptxType(d.type);
  if (!t || d.type == "pred")
    return error(d.loc, "unsupported variable type '." + d.type + "'");
  if (d.rangeCount >= 0)
    return error(d.loc, "register ranges are only valid for .reg");
  if (globals.count(name) || funcs.count(name))
    return error(d.loc, "redefinition of '" + name + "'");
  int64_t count = d.arraySize < 0 ? 1 : d.arraySize;
  count *= d.vecWidth;
  Type elem = t->type;
  if (isa<VectorType>(elem)) // f16x2 storage
    elem = intType(32);
  int64_t align = d.align ? d.align : std::max<int64_t>(widthOf(elem) / 8, 1);
  Attribute init;
  bool hasAddresses = llvm::any_of(
      d.init, [](const Operand &o) { return o.kind == OK::Symbol; });
  if (d.hasInit && hasAddresses) {
    if (!elem.isInteger(64) && !elem.isInteger(32))
      return error(d.loc, "address initializers need a .u32/.u64 variable");
    if (d.init.size() > static_cast<size_t>(std::max<int64_t>(count, 1)))
      return error(d.loc, "too many initializers for '" + name + "'");
    SmallVector<Attribute> values;
    for (const Operand &o : d.init)
      values.push_back(
          o.kind == OK::Symbol
              ? Attribute(FlatSymbolRefAttr::get(ctx, o.name))
              : Attribute(b.getIntegerAttr(
                    elem,
                    o.kind == OK::Imm ? o.imm : static_cast<int64_t>(o.bits))));
    init = b.getArrayAttr(values);
  } else if (d.hasInit) {
    if (d.init.size() > static_cast<size_t>(std::max<int64_t>(count, 1)))
      return error(d.loc, "too many initializers for '" + name + "'");
    auto vt =
        RankedTensorType::get({static_cast<int64_t>(d.init.size())}, elem);
    SmallVector<Attribute> values;
    for (const Operand &o : d.init) {
      if (auto ft = dyn_cast<FloatType>(elem)) {
        double v = o.kind == OK::Imm ? static_cast<double>(o.imm)
                   : o.isDouble      ? llvm::bit_cast<double>(o.bits)
                                : static_cast<double>(llvm::bit_cast<float>(
                                      static_cast<uint32_t>(o.bits)));
        if (o.kind == OK::FImm && !o.isDouble && ft.isF32()) {
          values.push_back(
              b.getFloatAttr(ft, llvm::APFloat(llvm::APFloat::IEEEsingle(),
                                               llvm::APInt(32, o.bits))));
          continue;
        }
        if (o.kind == OK::FImm && o.isDouble && ft.isF64()) {
          values.push_back(
              b.getFloatAttr(ft, llvm::APFloat(llvm::APFloat::IEEEdouble(),
                                               llvm::APInt(64, o.bits))));
          continue;
        }
        values.push_back(b.getFloatAttr(ft, v));
      } else {
        int64_t v = o.kind == OK::Imm ? o.imm : static_cast<int64_t>(o.bits);
        values.push_back(b.getIntegerAttr(elem, v));
      }
    }
    init = DenseElementsAttr::get(vt, values);
  }
  // Function-scope variables go right before their function.
  if (func && func->getParentOp() == module.getOperation() && ssa)
    b.setInsertionPoint(func);
  else
    b.setInsertionPointToEnd(module.getBody());
  LinkageAttr linkage;
  if (!d.linkage.empty())
    if (auto l = symbolizeLinkage(d.linkage))
      linkage = LinkageAttr::get(ctx, *l);
  // A managed variable is written by the host too (the CUDA runtime keeps
  // the process's copy and the device's coherent): visible, so that no
  // lowering folds its loads to its initializer.
  if (d.managed && !linkage)
    linkage = LinkageAttr::get(ctx, Linkage::visible);
  auto g = GlobalOp::create(b, loc(d.loc), b.getStringAttr(name),
                            StateSpaceAttr::get(ctx, *space),
                            TypeAttr::get(elem), b.getI64IntegerAttr(count),
                            b.getI64IntegerAttr(align), linkage, init);
  if (d.managed)
    g->setAttr("wooly.managed", b.getUnitAttr());
  globals[name] = g;
  if (hasAddresses)
    addressInitializers.push_back(g);
  return success();
}

// A texture or surface reference is a module variable holding the handle of
// the texture or surface object the host binds to it (cuTexRefSetArray,
// cuSurfRefSetArray, wooly-run --texref): every texture and surface
// instruction naming it loads the handle, then takes the object path. In
// unified mode (the default) the reference carries the sampler state too,
// as an object does.
LogicalResult Importer::importTexref(const VarDecl &d, StringRef name) {
  if (d.space != "global")
    return error(d.loc, "a '." + d.type + "' is declared in '.global'");
  if (llvm::is_contained(ast.targets, "texmode_independent"))
    return error(d.loc, "texture references in independent mode "
                        "('.target texmode_independent') are not supported "
                        "yet; in unified mode they are");
  if (d.arraySize >= 0 || d.vecWidth > 1 || d.rangeCount >= 0)
    return error(d.loc, "arrays of '." + d.type + "' are not supported yet");
  if (d.hasInit)
    return error(d.loc, "initializers of '." + d.type +
                            "' variables are not supported yet");
  if (globals.count(name) || funcs.count(name))
    return error(d.loc, "redefinition of '" + name + "'");
  b.setInsertionPointToEnd(module.getBody());
  // The host writes the handle: the variable is visible even without
  // `.visible` (else a GPU lowering may fold its loads to the zero it
  // starts as).
  LinkageAttr linkage = LinkageAttr::get(ctx, Linkage::visible);
  if (!d.linkage.empty())
    if (auto l = symbolizeLinkage(d.linkage))
      linkage = LinkageAttr::get(ctx, *l);
  auto g = GlobalOp::create(b, loc(d.loc), b.getStringAttr(name),
                            StateSpaceAttr::get(ctx, StateSpace::global),
                            TypeAttr::get(intType(64)), b.getI64IntegerAttr(1),
                            b.getI64IntegerAttr(8), linkage, Attribute());
  g->setAttr("wooly.texref", b.getStringAttr(d.type));
  globals[name] = g;
  texrefs[name] = d.type == "surfref";
  return success();
}

Value Importer::loadTexref(StringRef sym) {
  Type i64 = intType(64);
  Value a = AddressOfOp::create(b, curLoc, addrType(),
                                FlatSymbolRefAttr::get(ctx, sym));
  auto ld =
      LoadOp::create(b, curLoc, TypeRange{i64}, StateSpace::global, a,
                     CacheOpAttr(), false, MemOrderAttr(), MemScopeAttr());
  return ld.getResult(0);
}

std::optional<Type> Importer::paramType(const VarDecl &d) {
  auto t = ptxType(d.type);
  if (!t)
    return std::nullopt;
  if (d.arraySize >= 0 || d.vecWidth > 1) {
    int64_t n =
        std::max<int64_t>(d.arraySize, 1) * d.vecWidth * (widthOf(t->type) / 8);
    // PTX limits parameter space to a few KiB; 1 MiB bounds hostile input.
    if (n <= 0 || n > kMaxParamBytes)
      return std::nullopt;
    return VectorType::get({n}, intType(8));
  }
  return t->type;
}

DictionaryAttr Importer::paramAttrs(const VarDecl &d) {
  if (!nameKey) {
    nameKey = b.getStringAttr("wooly.name");
    typeKey = b.getStringAttr("wooly.type");
    alignKey = b.getStringAttr("wooly.align");
    ptrSpaceKey = b.getStringAttr("wooly.ptr_space");
    ptrAlignKey = b.getStringAttr("wooly.ptr_align");
  }
  StringAttr &typeName = paramTypeNames[d.type];
  if (!typeName)
    typeName = b.getStringAttr(d.type);
  SmallVector<NamedAttribute> attrs;
  attrs.emplace_back(nameKey, b.getStringAttr(d.name));
  attrs.emplace_back(typeKey, typeName);
  if (d.align)
    attrs.emplace_back(alignKey, b.getI64IntegerAttr(d.align));
  if (!d.ptrSpace.empty())
    attrs.emplace_back(ptrSpaceKey, b.getStringAttr(d.ptrSpace));
  if (d.ptrAlign)
    attrs.emplace_back(ptrAlignKey, b.getI64IntegerAttr(d.ptrAlign));
  return b.getDictionaryAttr(attrs);
}

LogicalResult Importer::declareFunction(Function &f) {
  SmallVector<Type> args, results;
  SmallVector<Attribute> argAttrs, resAttrs;
  for (auto &p : f.params) {
    if (p.type == "texref" || p.type == "surfref" || p.type == "samplerref")
      return error(p.loc, "texture, sampler and surface references as "
                          "parameters ('.param ." +
                              p.type +
                              "') are not supported yet; module-scope "
                              "'.global .texref'/'.surfref' are");
    auto t = paramType(p);
    if (!t)
      return error(p.loc, "unsupported parameter type '." + p.type + "'");
    args.push_back(*t);
    argAttrs.push_back(paramAttrs(p));
  }
  for (auto &p : f.results) {
    auto t = paramType(p);
    if (!t)
      return error(p.loc, "unsupported return type '." + p.type + "'");
    results.push_back(*t);
    resAttrs.push_back(paramAttrs(p));
  }
  auto type = b.getFunctionType(args, results);
  auto it = funcs.find(f.name);
  if (it != funcs.end()) {
    // A prototype followed by its definition: the signatures must agree.
    FuncOp existing = it->second;
    if (existing.getFunctionType() != type ||
        existing.getKernel() != f.isKernel)
      return error(f.loc,
                   "'" + f.name + "' redeclared with a different signature");
    if (f.hasBody && !definedFuncs.insert(f.name).second)
      return error(f.loc, "redefinition of '" + f.name + "'");
    if (f.hasBody) {
      // The definition after a prototype: it is no longer a declaration.
      existing.setPublic();
      if (!f.linkage.empty())
        existing.setLinkage(f.linkage);
    }
    return success();
  }
  if (globals.count(f.name))
    return error(f.loc, "redefinition of '" + f.name + "'");
  b.setInsertionPointToEnd(module.getBody());
  auto fn = FuncOp::create(b, loc(f.loc), f.name, type);
  fn.setArgAttrsAttr(b.getArrayAttr(argAttrs));
  if (!resAttrs.empty())
    fn.setResAttrsAttr(b.getArrayAttr(resAttrs));
  if (f.isKernel)
    fn.setKernel(true);
  if (!f.linkage.empty())
    fn.setLinkage(f.linkage);
  auto dims = [&](const std::vector<int64_t> &v) {
    SmallVector<int32_t> d(v.begin(), v.end());
    return b.getDenseI32ArrayAttr(d);
  };
  if (!f.maxntid.empty())
    fn.setMaxntidAttr(dims(f.maxntid));
  if (!f.reqntid.empty())
    fn.setReqntidAttr(dims(f.reqntid));
  if (f.minnctapersm)
    fn.setMinnctapersmAttr(b.getI32IntegerAttr(*f.minnctapersm));
  if (f.maxnreg)
    fn.setMaxnregAttr(b.getI32IntegerAttr(*f.maxnreg));
  if (f.noreturn)
    fn.setNoreturn(true);
  if (!f.hasBody)
    fn.setPrivate();
  funcs[f.name] = fn;
  if (f.hasBody)
    definedFuncs.insert(f.name);
  return success();
}

bool Importer::onFunction(Function &f) {
  if (failed(declareFunction(f)))
    return false;
  if (!f.hasBody)
    return true;
  if (failed(importBody(f)))
    return false;
  // The function is valid by construction (PTXImportOptions::verify); where
  // asked, check that while its IR is still in cache. Symbol uses are
  // checked once the whole module is read (run()).
  return !options.verify ||
         succeeded(verify(funcs.lookup(f.name), /*verifyRecursively=*/true));
}

OwningOpRef<ModuleOp> Importer::run() {
  ctx->loadDialect<WoolyDialect, arith::ArithDialect, math::MathDialect,
                   cf::ControlFlowDialect>();
  OwningOpRef<ModuleOp> owned = ModuleOp::create(loc(nullptr));
  module = *owned;
  const llvm::MemoryBuffer *buf = sm.getMemoryBuffer(sm.getMainFileID());
  bool parsed = ptx::parseModule(
      buf->getBuffer(), ast,
      [&](const char *p, const Twine &msg) { (void)error(p, msg); }, this);
  if (!parsed)
    return nullptr;
  module->setAttr("wooly.ptx_version", b.getStringAttr(ast.version));
  SmallVector<Attribute> targets;
  for (auto &t : ast.targets)
    targets.push_back(b.getStringAttr(t));
  module->setAttr("wooly.target", b.getArrayAttr(targets));
  module->setAttr("wooly.address_size", b.getI32IntegerAttr(ast.addressSize));
  // Symbol uses: calls and address-of operands are built from symbols the
  // importer has already resolved, with the callee's signature; names are
  // unique (redefinitions are errors). An initializer may name a symbol
  // declared later, so those are checked once the whole module is read.
  if (options.verify) {
    if (failed(verify(module, /*verifyRecursively=*/false)))
      return nullptr;
  } else {
    SymbolTableCollection symbols;
    for (GlobalOp g : addressInitializers)
      if (failed(g.verifySymbolUses(symbols)))
        return nullptr;
  }
  return owned;
}

LogicalResult Importer::importBody(Function &f) {
  func = funcs[f.name];
  auto makeUndef = [&](Type t) { return undefValue(t); };
  auto mayWrite = [&](Block *header, SSABuilder::Var var) {
    return loopMayWrite(header, var);
  };
  SSABuilder builder(makeUndef, mayWrite);
  ssa = &builder;
  varKeys.clear();
  loopOf.clear();
  loopWrites.clear();
  scopes.clear();
  scopes.emplace_back();
  forgetLookups();
  blockOf.clear();
  labelBlocks.clear();
  localSymbols.clear();
  expectedPreds.clear();
  retVars.clear();
  carryVar.reset();
  constants.clear();
  intConstants.clear();
  lastConstant = nullptr;
  pendingPragma = {};

  entry = func.addEntryBlock();
  cur = entry;
  b.setInsertionPointToEnd(entry);
  ssa->sealBlock(entry);
  curLoc = loc(f.loc);
  // `.reg .v2 .u32 x` parameters and results: one variable per component.
  auto declareVectorReg =
      [&](const VarDecl &p,
          SmallVectorImpl<SSABuilder::Var> &ids) -> LogicalResult {
    if (p.vecWidth > 4)
      return error(p.loc, "vector registers have at most 4 elements");
    auto pt = ptxType(p.type);
    VarInfo whole{0, pt->type, false, static_cast<unsigned>(p.vecWidth)};
    if (!scopes.back().vars.try_emplace(p.name, whole).second)
      return error(p.loc, "redeclaration of parameter '" + p.name + "'");
    for (int64_t k = 0; k < p.vecWidth; ++k) {
      auto id = newVar(pt->type, p.name);
      scopes.back().vars.try_emplace(vectorComponent(p.name, k),
                                     VarInfo{id, pt->type, false});
      ids.push_back(id);
    }
    return success();
  };
  vectorRets.clear();
  for (auto [i, p] : llvm::enumerate(f.params)) {
    Type t = entry->getArgument(i).getType();
    if (p.space == "reg" && p.vecWidth > 1) {
      SmallVector<SSABuilder::Var> ids;
      if (failed(declareVectorReg(p, ids)))
        return failure();
      Type et = ssa->getType(ids[0]);
      SmallVector<Type> parts(ids.size(), intType(widthOf(et)));
      auto split = make<UnpackOp>(
          parts, bitcast(entry->getArgument(i), intType(widthOf(t))));
      for (auto [k, id] : llvm::enumerate(ids))
        ssa->writeVariable(id, entry, coerce(split.getResult(k), et));
      continue;
    }
    auto id = newVar(t, p.name);
    VarInfo info{id, t, p.space == "param"};
    info.argIndex = static_cast<int>(i);
    if (!scopes.back().vars.try_emplace(p.name, info).second)
      return error(p.loc, "redeclaration of parameter '" + p.name + "'");
    ssa->writeVariable(id, entry, entry->getArgument(i));
  }
  for (auto [i, p] : llvm::enumerate(f.results)) {
    Type t = func.getResultTypes()[i];
    if (p.space == "reg" && p.vecWidth > 1) {
      SmallVector<SSABuilder::Var> ids;
      if (failed(declareVectorReg(p, ids)))
        return failure();
      vectorRets[i] = ids;
      retVars.push_back(0);
      continue;
    }
    auto id = newVar(t, p.name);
    if (!scopes.back()
             .vars.try_emplace(p.name, VarInfo{id, t, p.space == "param"})
             .second)
      return error(p.loc, "redeclaration of parameter '" + p.name + "'");
    retVars.push_back(id);
  }

  forgetLookups();
  LogicalResult result = resolveLabels(f);
  for (auto &s : f.body) {
    if (failed(result))
      break;
    result = emitStatement(s);
  }
  if (succeeded(result) && scopes.size() != 1)
    result = error(f.loc, "unbalanced '{' in body of '" + f.name + "'");
  if (succeeded(result) &&
      (cur->empty() || !cur->back().hasTrait<OpTrait::IsTerminator>())) {
    // Falling off the end of a body returns.
    Instruction ret;
    ret.opcode = "ret";
    ret.loc = f.loc;
    result = emitRet(ret);
  }
  // Blocks of labels never reached by emission (after a failure) are owned
  // here; drop their uses first.
  for (Block *blk : labelBlocks) {
    if (!blk->getParent()) {
      blk->dropAllUses();
      delete blk;
    }
  }
  if (succeeded(result))
    ssa->finalize(func.getBody());
  ssa = nullptr;
  return result;
}

/// Declares the variables of a `.reg`, `.param` or state-space statement in
/// a function body.
LogicalResult Importer::declareVariables(Statement &s) {
  // The new names may hide others, or be names that lookup() did not find.
  forgetLookups();
  llvm::scope_exit forget([&] { forgetLookups(); });
  for (auto &d : s.decls) {
    if (d.space == "reg" || d.space == "param") {
      // Components are named .x to .w.
      if (d.vecWidth > 4)
        return error(d.loc,
                     "vector " +
                         Twine(d.space == "reg" ? "registers" : "parameters") +
                         " have at most 4 elements");
      auto t = d.space == "param" ? paramType(d) : std::optional<Type>();
      if (d.space == "reg") {
        auto pt = ptxType(d.type);
        if (!pt)
          return error(d.loc, "unsupported register type '." + d.type + "'");
        if (d.arraySize >= 0)
          return error(d.loc, "array registers are not supported yet");
        t = pt->type;
      }
      if (!t)
        return error(d.loc, "unsupported parameter type '." + d.type + "'");
      auto declare = [&](StringRef name) -> LogicalResult {
        auto id = newVar(*t, name);
        if (scopes.back().inRange(name) ||
            !scopes.back()
                 .vars.try_emplace(name, VarInfo{id, *t, d.space == "param"})
                 .second)
          return error(d.loc, "redeclaration of '" + name + "'");
        return success();
      };
      auto declareOne = [&](StringRef name) -> LogicalResult {
        if (d.vecWidth <= 1)
          return declare(name);
        VarInfo whole{0, *t, false, static_cast<unsigned>(d.vecWidth)};
        if (!scopes.back().vars.try_emplace(name, whole).second)
          return error(d.loc, "redeclaration of '" + name + "'");
        for (int64_t i = 0; i < d.vecWidth; ++i)
          if (failed(declare(vectorComponent(name, i))))
            return failure();
        return success();
      };
      if (d.rangeCount >= 0 && d.vecWidth <= 1 && d.space == "reg") {
        auto &ranges = scopes.back().ranges;
        if (llvm::any_of(ranges,
                         [&](const RegRange &r) { return r.prefix == d.name; }))
          return error(d.loc, "redeclaration of '" + d.name + "<...>'");
        // Longest prefix first (Scope::rangeOf()).
        auto pos = llvm::find_if(ranges, [&](const RegRange &r) {
          return r.prefix.size() < d.name.size();
        });
        // Room for the registers' entries up front: a range is usually as
        // large as what is used (nvcc), but may be far larger.
        size_t room =
            static_cast<size_t>(std::min<int64_t>(d.rangeCount, 4096));
        ranges.insert(pos, RegRange{d.name, d.rangeCount, *t,
                                    std::vector<VarInfo *>(room)});
        ssa->reserveVariables(room);
        varKeys.reserve(varKeys.size() + room);
      } else if (d.rangeCount >= 0) {
        // Vector and .param ranges are expanded eagerly: keep them small.
        if (d.rangeCount > kMaxEagerRange)
          return error(d.loc, "ranges of vector registers or parameters "
                              "are limited to " +
                                  Twine(kMaxEagerRange) + " names");
        for (int64_t i = 0; i < d.rangeCount; ++i) {
          // Names live as long as the module's buffer: intern them.
          StringRef n = names.save(d.name + Twine(i));
          if (failed(declareOne(n)))
            return failure();
        }
      } else if (failed(declareOne(d.name))) {
        return failure();
      }
      continue;
    }
    // Function-scope .local/.shared/.global/.const variables are module
    // symbols in Wooly IR, tagged with the function that declares them
    // (a `.local` one is per activation: lowering must give recursive
    // functions a frame of their own).
    // Their symbol is `function.name`: PTX names cannot contain '.', so it
    // never collides with a module-scope name, declared before or after.
    StringRef symName = names.save(func.getSymName() + "." + d.name);
    if (!localSymbols.try_emplace(d.name, symName).second)
      return error(d.loc, "redefinition of '" + d.name + "'");
    if (failed(importGlobal(d, symName)))
      return failure();
    globals[symName]->setAttr("wooly.function_scope",
                              FlatSymbolRefAttr::get(func.getSymNameAttr()));
    b.setInsertionPointToEnd(cur);
  }
  return success();
}
