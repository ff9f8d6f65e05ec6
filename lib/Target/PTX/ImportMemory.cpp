//===- ImportMemory.cpp - PTX memory instructions ---------------*- C++ -*-===//
//
// ld/ldu/st (parameters are values: their loads and stores are byte
// extractions and insertions), atom/red, membar/fence, cvta/isspacep,
// cp.async, prefetch and createpolicy.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::ptx;
using llvm::StringRef;
using OK = Operand::Kind;

LogicalResult Importer::emitParamAccess(Instruction &inst, bool isLoad,
                                        VarInfo *param, int64_t offset,
                                        PtxType ty, int vec) {
  const Operand &data = inst.operands[isLoad ? 0 : 1];
  uint64_t elemBytes = std::max<uint64_t>(widthOf(ty.type) / 8, 1);
  uint64_t totalBytes = widthOf(param->type) / 8;
  uint64_t elemBits = widthOf(ty.type);
  uint64_t total = widthOf(param->type);
  // Checked without overflow: offsets come straight from the input.
  if (offset < 0 || static_cast<uint64_t>(offset) > totalBytes ||
      (totalBytes - offset) / elemBytes < static_cast<uint64_t>(vec))
    return error(inst.loc,
                 "access outside parameter of " + Twine(totalBytes) + " bytes");
  auto elemOperand = [&](int i) -> const Operand & {
    return vec > 1 ? data.elems[i] : data;
  };
  if (vec > 1 && (data.kind != OK::Vector ||
                  data.elems.size() != static_cast<size_t>(vec)))
    return error(data.loc, "expected a vector of " + Twine(vec) + " values");
  for (int i = 0; i < vec; ++i) {
    int64_t off = offset + i * (elemBits / 8);
    bool direct = off == 0 && elemBits == total;
    // A store of the whole parameter does not read its old value.
    Value whole =
        isLoad || !direct ? ssa->readVariable(param->id, cur) : Value();
    if (isLoad) {
      Value v = direct ? bitcast(whole, ty.type)
                       : checked(make<ExtractBytesOp>(ty.type, whole, off));
      if (!v || failed(write(elemOperand(i), v, ty.isSigned)))
        return failure();
    } else {
      Value v = read(elemOperand(i), ty.type);
      if (!v)
        return failure();
      Value updated = direct ? bitcast(v, param->type)
                             : checked(make<InsertBytesOp>(v, whole, off));
      if (!updated)
        return failure();
      ssa->writeVariable(param->id, cur, updated);
    }
  }
  return success();
}

LogicalResult Importer::emitLdSt(Instruction &inst, Opcode op) {
  bool isLoad = op != Opcode::St;
  auto t = instrType(inst);
  if (!t)
    return error(inst.loc, "'" + inst.opcode + "' needs a type");
  // `.L2::cache_hint` adds a cache-policy operand: a performance hint that
  // is kept as the `wooly.hints` attribute, not as a value.
  size_t want = inst.has("L2::cache_hint") ? 3 : 2;
  if (inst.operands.size() != want)
    return expectOperands(inst, want);
  int vec = 1;
  for (StringRef m : inst.mods)
    if (m == "v2" || m == "v4" || m == "v8")
      vec = m[1] - '0';
  StateSpace space = spaceOf(inst).value_or(StateSpace::generic);
  const Operand &addrOp = inst.operands[isLoad ? 1 : 0];
  if (addrOp.kind != OK::Address)
    return error(addrOp.loc, "expected an address operand '[...]'");
  // Parameters are values in Wooly IR.
  VarInfo *named = addrOp.name.empty() ? nullptr : lookup(addrOp.name);
  if (named && named->isParam && addrOp.elems.empty())
    return emitParamAccess(inst, isLoad, named, addrOp.imm, *t, vec);
  if (space == StateSpace::param && !isLoad)
    return error(inst.loc, "stores to parameters through addresses are not "
                           "supported yet");
  if (space == StateSpace::constant && !isLoad)
    return error(inst.loc, "'st.const': the const space is read-only");
  Type at;
  Value addr = address(addrOp, at, space);
  if (!addr)
    return failure();

  CacheOpAttr cache;
  MemOrderAttr sem;
  MemScopeAttr scope;
  bool isVolatile = false;
  SmallVector<Attribute> hints;
  for (StringRef m : inst.mods) {
    if (auto c = symbolizeCacheOp(m))
      cache = enumAttr<CacheOpAttr>(*c);
    else if (m == "volatile")
      isVolatile = true;
    else if (m == "relaxed" || m == "acquire" || m == "release" || m == "weak")
      sem = enumAttr<MemOrderAttr>(*symbolizeMemOrder(m));
    else if (auto s = symbolizeMemScope(m))
      scope = enumAttr<MemScopeAttr>(*s);
    else if (m.starts_with("L1::") || m.starts_with("L2::"))
      hints.push_back(b.getStringAttr(m));
  }
  if (op == Opcode::Ldu)
    cache = enumAttr<CacheOpAttr>(CacheOp::nc);
  if (sem && sem.getValue() == MemOrder::weak) {
    sem = {};
    scope = {};
  }
  if (scope && !sem)
    return error(inst.loc, "a scope needs '.relaxed', '.acquire' or "
                           "'.release'");

  if (auto v = expandVector(inst.operands[isLoad ? 0 : 1]))
    inst.operands[isLoad ? 0 : 1] = *v;
  const Operand &data = inst.operands[isLoad ? 0 : 1];
  if (vec > 1 && (data.kind != OK::Vector ||
                  data.elems.size() != static_cast<size_t>(vec)))
    return error(data.loc, "expected a vector of " + Twine(vec) + " values");
  Type elemType = t->type;
  Operation *memOp;
  if (isLoad) {
    SmallVector<Type> types(vec, elemType);
    auto ld = make<LoadOp>(types, enumAttr<StateSpaceAttr>(space), addr, cache,
                           volatileAttr(isVolatile), sem, scope);
    memOp = ld;
    for (int i = 0; i < vec; ++i)
      if (failed(write(vec > 1 ? data.elems[i] : data, ld.getResult(i),
                       t->isSigned)))
        return failure();
  } else {
    SmallVector<Value> values;
    for (int i = 0; i < vec; ++i) {
      Value v = read(vec > 1 ? data.elems[i] : data, elemType);
      if (!v)
        return failure();
      values.push_back(v);
    }
    memOp = make<StoreOp>(enumAttr<StateSpaceAttr>(space), addr, values, cache,
                          volatileAttr(isVolatile), sem, scope);
  }
  if (!hints.empty())
    memOp->setAttr("wooly.hints", b.getArrayAttr(hints));
  return success();
}

std::optional<AtomicOp> Importer::atomicOpOf(StringRef m, const PtxType &t) {
  if (m == "add")
    return t.isFloat ? AtomicOp::fadd : AtomicOp::add;
  if (m == "min")
    return t.isFloat    ? AtomicOp::fmin
           : t.isSigned ? AtomicOp::smin
                        : AtomicOp::umin;
  if (m == "max")
    return t.isFloat    ? AtomicOp::fmax
           : t.isSigned ? AtomicOp::smax
                        : AtomicOp::umax;
  if (m == "inc" || m == "dec" || m == "exch" || m == "cas" || m == "and" ||
      m == "or" || m == "xor")
    return symbolizeAtomicOp(m);
  return std::nullopt;
}

LogicalResult Importer::emitAtom(Instruction &inst, Opcode op) {
  bool isRed = op == Opcode::Red;
  auto t = instrType(inst);
  if (!t)
    return error(inst.loc, "'" + inst.opcode + "' needs a type");
  int vec = 1;
  for (StringRef m : inst.mods)
    if (m == "v2" || m == "v4" || m == "v8")
      vec = m[1] - '0';
  bool packed = isa<VectorType>(t->type);
  // .min/.max on vectors of .f16/.bf16 (packed or not) are element-wise
  // too (sm_90).
  bool halfMinMax =
      vec > 1 && (inst.has("min") || inst.has("max")) &&
      isa<Float16Type, BFloat16Type>(getElementTypeOrSelf(t->type));
  if ((vec > 1 || packed) && (!t->isFloat || !(inst.has("add") || halfMinMax)))
    return error(inst.loc, "vector or packed atomics other than 'add' on "
                           "floats and 'min'/'max' on vectors of halves are "
                           "not supported yet");
  if (widthOf(t->type) > 64)
    return error(inst.loc, "atomics on '." + stringifyScalarType(t->scalar) +
                               "' are not supported yet");
  StateSpace space = spaceOf(inst).value_or(StateSpace::generic);
  MemOrderAttr sem;
  MemScopeAttr scope;
  std::optional<AtomicOp> kind;
  for (StringRef m : inst.mods) {
    if (m == "relaxed" || m == "acquire" || m == "release" || m == "acq_rel")
      sem = enumAttr<MemOrderAttr>(*symbolizeMemOrder(m));
    else if (auto s = symbolizeMemScope(m))
      scope = enumAttr<MemScopeAttr>(*s);
    else if (auto k = atomicOpOf(m, *t))
      kind = k;
  }
  if (!kind)
    return error(inst.loc, "'" + inst.opcode + "' needs an operation");
  if (scope && !sem)
    sem = enumAttr<MemOrderAttr>(MemOrder::relaxed);
  size_t nvals = *kind == AtomicOp::cas ? 2 : 1;
  size_t want = (isRed ? 1 : 2) + nvals;
  // An optional trailing cache-policy operand (.L2::cache_hint).
  if (inst.operands.size() == want + 1 && inst.has("L2::cache_hint"))
    inst.operands.pop_back();
  if (failed(expectOperands(inst, want)))
    return failure();
  Type at;
  Value addr = address(inst.operands[isRed ? 0 : 1], at,
                       spaceOf(inst).value_or(StateSpace::generic));
  if (!addr)
    return failure();
  if (vec > 1 || packed)
    return emitElementwiseAtom(inst, *t, vec, space, *kind, addr, sem, scope);
  SmallVector<Value, 2> vals;
  for (size_t i = isRed ? 1 : 2; i < want; ++i) {
    Value v = read(inst.operands[i], t->type);
    if (!v)
      return failure();
    vals.push_back(v);
  }
  // The op checks which operations each type allows.
  if (isRed) {
    auto red = make<RedOp>(space, *kind, addr, vals[0], sem, scope);
    return mlir::verify(red, /*verifyRecursively=*/false);
  }
  Value r =
      checked(make<AtomOp>(t->type, space, *kind, addr, vals, sem, scope));
  return r ? write(inst.operands[0], r, t->isSigned) : failure();
}

/// `atom`/`red` `.add` on `.v2/.v4/.v8` floats or on `.f16x2/.bf16x2`
/// (also in vectors): PTX performs one atomic operation per element, with
/// no atomicity across the elements, so each element is a scalar atomic at
/// its own address (element `i` at `addr + i * size`), in order; a packed
/// register's low half is the element at the lower address.
LogicalResult Importer::emitElementwiseAtom(Instruction &inst, PtxType t,
                                            int vec, StateSpace space,
                                            AtomicOp kind, Value addr,
                                            MemOrderAttr sem,
                                            MemScopeAttr scope) {
  bool isRed = inst.opcode == "red";
  Operand &data = inst.operands[isRed ? 1 : 2];
  Operand *dest = isRed ? nullptr : &inst.operands[0];
  for (Operand *o : {&data, dest})
    if (o)
      if (auto v = expandVector(*o))
        *o = *v;
  for (Operand *o : {&data, dest})
    if (o && vec > 1 &&
        (o->kind != OK::Vector || o->elems.size() != static_cast<size_t>(vec)))
      return error(o->loc, "expected a vector of " + Twine(vec) + " values");
  auto packedTy = dyn_cast<VectorType>(t.type);
  Type elem = packedTy ? packedTy.getElementType() : t.type;
  unsigned lanes = packedTy ? packedTy.getNumElements() : 1;
  unsigned elemBits = widthOf(elem);
  Type laneInt = intType(elemBits), regInt = intType(elemBits * lanes);
  for (int i = 0; i < vec; ++i) {
    const Operand &in = vec > 1 ? data.elems[i] : data;
    // A packed register as an integer, its lanes cut out of it.
    Value v = read(in, packedTy ? regInt : t.type);
    if (!v)
      return failure();
    Value old = packedTy ? constInt(regInt, 0) : Value();
    for (unsigned j = 0; j < lanes; ++j) {
      Value x = v;
      if (packedTy) {
        Value bits = v;
        if (j)
          bits = make<arith::ShRUIOp>(bits, constInt(regInt, j * elemBits));
        bits = make<arith::TruncIOp>(laneInt, bits);
        x = make<arith::BitcastOp>(elem, bits);
      }
      int64_t offset = (int64_t(i) * lanes + j) * (elemBits / 8);
      Value at = addr;
      if (offset)
        at = make<arith::AddIOp>(addr, constInt(addr.getType(), offset));
      if (isRed) {
        make<RedOp>(space, kind, at, x, sem, scope);
        continue;
      }
      Value r = make<AtomOp>(elem, space, kind, at, ValueRange{x}, sem, scope);
      if (!packedTy) {
        old = r;
        continue;
      }
      Value bits = arith::ExtUIOp::create(b, curLoc, regInt,
                                          make<arith::BitcastOp>(laneInt, r));
      if (j)
        bits = make<arith::ShLIOp>(bits, constInt(regInt, j * elemBits));
      old = make<arith::OrIOp>(old, bits);
    }
    if (dest && failed(write(vec > 1 ? dest->elems[i] : *dest, old)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Fences
//===----------------------------------------------------------------------===//

LogicalResult Importer::emitFence(Instruction &inst, Opcode op) {
  if (op == Opcode::Fence && (inst.has("proxy") || inst.has("mbarrier_init"))) {
    // Kept as written: the fence between the generic and the async proxy
    // (bulk copies), or after mbarrier.init.
    std::string text = "fence";
    for (StringRef m : inst.mods)
      text += "." + m.str();
    make<AsyncFenceOp>(text);
    return success();
  }
  // The state spaces and `.async`/`.alias` belong to proxy fences only.
  if (op == Opcode::Fence &&
      (spaceOf(inst) || inst.has("async") || inst.has("alias")))
    return unsupported(inst);
  if (op == Opcode::Membar) {
    MemScope scope = inst.has("cta")   ? MemScope::cta
                     : inst.has("sys") ? MemScope::sys
                                       : MemScope::gpu;
    make<FenceOp>(MemOrder::sc, scope);
    return success();
  }
  // A fence without `.sem` is `.acq_rel` (PTX ISA, `fence`).
  MemOrder sem = inst.has("sc")        ? MemOrder::sc
                 : inst.has("acquire") ? MemOrder::acquire
                 : inst.has("release") ? MemOrder::release
                                       : MemOrder::acq_rel;
  std::optional<MemScope> scope;
  for (StringRef m : inst.mods)
    if (auto s = symbolizeMemScope(m))
      scope = s;
  if (!scope)
    return error(inst.loc, "'fence' needs a scope");
  make<FenceOp>(sem, *scope);
  return success();
}

//===----------------------------------------------------------------------===//
// Address spaces
//===----------------------------------------------------------------------===//

/// cvta.space.size d, a (to generic), cvta.to.space.size d, a (from
/// generic) and isspacep.space p, a.
LogicalResult Importer::emitCvta(Instruction &inst, Opcode op) {
  if (op == Opcode::Cvta) {
    auto t = instrType(inst);
    auto space = spaceOf(inst);
    if (!t || !space || failed(expectOperands(inst, 2)))
      return t && space ? failure()
                        : error(inst.loc, "'cvta' needs a space and a size");
    if (t->scalar != ScalarType::u32 && t->scalar != ScalarType::u64)
      return error(inst.loc, "'cvta' takes '.u32' or '.u64'");
    Value a = read(inst.operands[1], t->type);
    if (!a)
      return failure();
    auto dir = inst.has("to") ? CvtaDir::from_generic : CvtaDir::to_generic;
    Value r = make<CvtaOp>(t->type, enumAttr<CvtaDirAttr>(dir),
                           enumAttr<StateSpaceAttr>(*space), a);
    return write(inst.operands[0], r);
  }
  auto space = spaceOf(inst);
  if (!space || failed(expectOperands(inst, 2)))
    return space ? failure() : error(inst.loc, "'isspacep' needs a space");
  Value a = read(inst.operands[1], addrType());
  if (!a)
    return failure();
  return write(inst.operands[0], make<IsSpacePOp>(*space, a));
}

//===----------------------------------------------------------------------===//
// Asynchronous copies and cache control
//===----------------------------------------------------------------------===//

/// cp.async: the asynchronous copies of 4, 8 or 16 bytes from global to
/// shared memory and their commit and wait operations.
LogicalResult Importer::emitCpAsync(Instruction &inst, Opcode op) {
  if (inst.has("bulk") && (inst.mods[0] == "reduce" || inst.mods[0] == "async"))
    return emitBulkCopy(inst);
  if (inst.has("mbarrier") && inst.has("arrive") && !inst.has("bulk"))
    return emitCpAsyncArrive(inst);
  if (inst.mods.empty() || inst.mods[0] != "async" || inst.has("reduce") ||
      inst.has("shared::cluster") || inst.has("bulk_group") ||
      inst.has("read") || inst.has("mbarrier::complete_tx::bytes") ||
      instrType(inst))
    return unsupported(inst);
  Type i32 = intType(32);
  if (inst.has("commit_group")) {
    make<CpAsyncCommitOp>();
    return success();
  }
  if (inst.has("wait_all")) {
    make<CpAsyncCommitOp>();
    make<CpAsyncWaitOp>(0);
    return success();
  }
  if (inst.has("wait_group")) {
    if (failed(expectOperands(inst, 1)) || inst.operands[0].kind != OK::Imm)
      return error(inst.loc, "'cp.async.wait_group' needs an immediate");
    make<CpAsyncWaitOp>(inst.operands[0].imm);
    return success();
  }
  if (inst.has("L2::cache_hint") && inst.operands.size() >= 4)
    inst.operands.pop_back();
  if (inst.operands.size() < 3 || inst.operands.size() > 4)
    return error(inst.loc, "'cp.async' expects dst, src, size[, src-size]");
  Type dt, st;
  Value dst = address(inst.operands[0], dt);
  Value src = address(inst.operands[1], st);
  if (!dst || !src)
    return failure();
  if (inst.operands[2].kind != OK::Imm)
    return error(inst.operands[2].loc, "copy size must be an immediate");
  int64_t size = inst.operands[2].imm;
  if (size != 4 && size != 8 && size != 16)
    return error(inst.operands[2].loc, "copy size must be 4, 8 or 16");
  Value srcSize;
  if (inst.operands.size() == 4) {
    const Operand &last = inst.operands[3];
    VarInfo *lv = last.kind == OK::Reg || last.kind == OK::Symbol
                      ? lookup(last.name)
                      : nullptr;
    if (lv && lv->type.isInteger(1)) {
      // The ignore-src predicate: when true, nothing is read and the
      // whole destination is zero-filled (src-size 0).
      Value p = read(last, b.getI1Type());
      if (!p)
        return failure();
      srcSize = make<arith::SelectOp>(p, constInt(i32, 0), constInt(i32, size));
    } else if (!(srcSize = read(last, i32))) {
      return failure();
    }
  }
  CacheOpAttr cache =
      enumAttr<CacheOpAttr>(inst.has("cg") ? CacheOp::cg : CacheOp::ca);
  make<CpAsyncOp>(dst, coerce(src, intType(64)), b.getI32IntegerAttr(size),
                  srcSize, cache);
  return success();
}

LogicalResult Importer::emitPrefetch(Instruction &inst, Opcode op) {
  if (failed(expectOperands(inst, 1)))
    return failure();
  StateSpace space = spaceOf(inst).value_or(StateSpace::generic);
  StringRef level = inst.mods.empty() ? "L1" : inst.mods.back();
  Type at;
  Value addr = address(inst.operands[0], at);
  if (!addr)
    return failure();
  make<PrefetchOp>(space, b.getStringAttr(level), addr);
  return success();
}

LogicalResult Importer::emitCreatePolicy(Instruction &inst, Opcode op) {
  if (!inst.has("fractional") || inst.operands.empty() ||
      inst.operands.size() > 2)
    return unsupported(inst);
  SmallVector<StringRef, 2> prios;
  for (StringRef m : inst.mods)
    if (m.starts_with("L2::"))
      prios.push_back(m.drop_front(4));
  if (prios.empty())
    return error(inst.loc, "'createpolicy' needs an eviction priority");
  double fraction = 1.0;
  if (inst.operands.size() == 2) {
    const Operand &f = inst.operands[1];
    if (f.kind != OK::FImm)
      return error(f.loc, "fraction must be a float immediate");
    fraction = f.isDouble
                   ? llvm::bit_cast<double>(f.bits)
                   : llvm::bit_cast<float>(static_cast<uint32_t>(f.bits));
  }
  Value r = CreatePolicyOp::create(
      b, curLoc, intType(64), b.getStringAttr(prios[0]),
      b.getStringAttr(prios.size() > 1 ? prios[1] : "evict_unchanged"),
      b.getF32FloatAttr(fraction));
  return write(inst.operands[0], r);
}
