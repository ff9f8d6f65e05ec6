//===- ImportTexture.cpp - PTX texture and surface instructions -*- C++ -*-===//
//
// tex, tld4, txq, suld, sust, sured and suq on texture and surface objects
// (64-bit handles in registers) and on module-scope `.texref`/`.surfref`
// (unified mode), whose handle is loaded from the module variable the
// importer makes of them (importTexref). `.samplerref` and the independent
// sampler mode are located "not supported yet" errors.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::ptx;
using llvm::StringRef;
using OK = Operand::Kind;

namespace {
/// The geometry modifier of `inst`, if it has one.
std::optional<TexGeometry> geometryOf(const Instruction &inst) {
  for (StringRef m : inst.mods) {
    if (m == "1d")
      return TexGeometry::dim1;
    if (m == "2d")
      return TexGeometry::dim2;
    if (m == "3d")
      return TexGeometry::dim3;
    if (auto g = symbolizeTexGeometry(m))
      return g;
  }
  return std::nullopt;
}

/// How many coordinates the coordinate vector of `g` holds: the layer
/// first for layered geometries, and 3D and cube coordinates padded to 4.
unsigned coordVectorSize(TexGeometry g) {
  switch (g) {
  case TexGeometry::dim1:
    return 1;
  case TexGeometry::dim2:
  case TexGeometry::a1d:
    return 2;
  default:
    return 4;
  }
}

/// The out-of-range mode of a surface instruction (`.trap` by default).
SurfClamp clampOf(const Instruction &inst) {
  if (inst.has("clamp"))
    return SurfClamp::clamp;
  if (inst.has("zero"))
    return SurfClamp::zero;
  return SurfClamp::trap;
}

/// The vector width of `inst` (1 without `.v2`/`.v4`).
unsigned vectorWidth(const Instruction &inst) {
  return inst.has("v4") ? 4 : inst.has("v2") ? 2 : 1;
}
} // namespace

LogicalResult Importer::emitTexture(Instruction &inst, Opcode op) {
  Type f32 = b.getF32Type(), i32 = intType(32), i64 = intType(64);
  // The texture or surface object of `[handle, {...}]` (or `[handle]`): a
  // 64-bit register, or a module-scope `.texref`/`.surfref`.
  auto handleOf = [&](const Operand &a) -> Value {
    if (a.kind != OK::Address || a.name.empty() || a.imm) {
      (void)error(a.loc, "expected a texture or surface operand "
                         "'[handle, {coordinates}]'");
      return {};
    }
    if (!a.name.starts_with("%") && !lookup(a.name)) {
      StringRef sym = symbolName(a.name);
      if (texrefs.count(sym))
        return loadTexref(sym);
      (void)error(a.loc, "'" + a.name +
                             "' is neither a register holding a texture or "
                             "surface object nor a '.texref'/'.surfref'");
      return {};
    }
    Operand reg;
    reg.kind = OK::Reg;
    reg.name = a.name;
    reg.loc = a.loc;
    return read(reg, i64);
  };
  // The coordinate vector of `[handle, {...}]` of geometry `g`, read as
  // `ct`: the layer (a separate i32) and the coordinates.
  auto coordsOf = [&](const Operand &addr, TexGeometry g, Type ct, Value &layer,
                      SmallVectorImpl<Value> &coords) {
    if (addr.elems.size() != 1 || addr.elems[0].kind != OK::Vector) {
      (void)error(addr.loc, "expected coordinates '[handle, {...}]'");
      return false;
    }
    const Operand &vec = addr.elems[0];
    unsigned want = coordVectorSize(g);
    if (vec.elems.size() != want) {
      (void)error(vec.loc, "." + ptxGeometry(g) + " takes " + Twine(want) +
                               " coordinates, got " + Twine(vec.elems.size()));
      return false;
    }
    unsigned first = 0;
    if (isLayeredGeometry(g)) {
      layer = read(vec.elems[0], i32);
      if (!layer)
        return false;
      first = 1;
    }
    for (unsigned i = 0; i < texCoordCount(g); ++i) {
      Value v = read(vec.elems[first + i], ct);
      if (!v)
        return false;
      coords.push_back(v);
    }
    return true;
  };
  auto writeVec = [&](const Operand &d, ValueRange values) -> LogicalResult {
    if (d.kind != OK::Vector || d.elems.size() != values.size())
      return error(d.loc, "expected " + Twine(values.size()) +
                              " destination registers '{...}'");
    for (auto [e, v] : llvm::zip(d.elems, values))
      if (failed(write(e, v)))
        return failure();
    return success();
  };
  // tex's and tld4's result type from the destination's type modifier.
  auto texResult = [&](std::optional<PtxType> t, ScalarType &d) -> Type {
    if (!t || (t->scalar != ScalarType::f32 && t->scalar != ScalarType::s32 &&
               t->scalar != ScalarType::u32)) {
      (void)error(inst.loc, "'" + inst.opcode +
                                "' needs a result type .f32, .s32 or .u32 "
                                "(.f16 results are not supported yet)");
      return {};
    }
    d = t->scalar;
    return d == ScalarType::f32 ? f32 : i32;
  };

  switch (op) {
  case Opcode::Tex:
  case Opcode::Tld4: {
    std::optional<TexGeometry> g = geometryOf(inst);
    if (!g)
      return error(inst.loc, "'" + inst.opcode + "' needs a geometry");
    if (!inst.has("v4"))
      return error(inst.loc, "'" + inst.opcode + "' needs '.v4'");
    if (op == Opcode::Tld4 && g != TexGeometry::dim2 && g != TexGeometry::a2d &&
        g != TexGeometry::cube && g != TexGeometry::acube)
      return error(inst.loc, "tld4 takes a .2d, .a2d, .cube or .acube "
                             "texture, not '." +
                                 ptxGeometry(*g) + "'");
    size_t nops = inst.operands.size();
    bool level = inst.has("level"), grad = inst.has("grad");
    size_t want = 2 + (level ? 1 : 0) + (grad ? 2 : 0);
    if (nops > want)
      return error(inst.operands[want].loc,
                   "texel offsets and depth comparisons of '" + inst.opcode +
                       "' are not supported yet");
    if (failed(expectOperands(inst, want)))
      return failure();
    if (inst.operands[0].kind == OK::Pair)
      return error(inst.operands[0].loc,
                   "the predicate destination of '" + inst.opcode +
                       "' (resident texels) is not supported yet");
    ScalarType d;
    Type rt = texResult(instrType(inst, 0), d);
    if (!rt)
      return failure();
    std::optional<PtxType> c = instrType(inst, 1);
    if (!c || (c->scalar != ScalarType::f32 && c->scalar != ScalarType::s32))
      return error(inst.loc, "'" + inst.opcode +
                                 "' needs a coordinate type .f32 or .s32");
    if (op == Opcode::Tld4 && c->scalar != ScalarType::f32)
      return error(inst.loc, "tld4 takes .f32 coordinates");
    Type ct = c->scalar == ScalarType::f32 ? f32 : i32;
    Value handle = handleOf(inst.operands[1]);
    if (!handle)
      return failure();
    Value layer;
    SmallVector<Value, 4> coords;
    if (!coordsOf(inst.operands[1], *g, ct, layer, coords))
      return failure();
    SmallVector<Type, 4> results(4, rt);
    if (op == Opcode::Tld4) {
      TexComponent comp = inst.has("g")   ? TexComponent::g
                          : inst.has("b") ? TexComponent::b
                          : inst.has("a") ? TexComponent::a
                                          : TexComponent::r;
      auto t = make<Tld4Op>(results, comp, d, handle, layer, coords, *g);
      return writeVec(inst.operands[0], t.getResults());
    }
    Value lod;
    SmallVector<Value, 4> gx, gy;
    if (level && !(lod = read(inst.operands[2], f32)))
      return failure();
    if (grad) {
      for (unsigned k = 0; k < 2; ++k) {
        const Operand &v = inst.operands[2 + k];
        auto &out = k ? gy : gx;
        if (v.kind != OK::Vector || v.elems.size() < texCoordCount(*g))
          return error(v.loc, "expected a gradient vector of " +
                                  Twine(texCoordCount(*g)) + " elements");
        for (unsigned i = 0; i < texCoordCount(*g); ++i) {
          Value e = read(v.elems[i], f32);
          if (!e)
            return failure();
          out.push_back(e);
        }
      }
    }
    auto t = make<TexOp>(results, *g, d, c->scalar, handle, layer, coords, lod,
                         gx, gy);
    return writeVec(inst.operands[0], t.getResults());
  }
  case Opcode::Txq:
  case Opcode::Suq: {
    std::optional<TexQuery> q;
    for (StringRef m : inst.mods)
      if (auto k = symbolizeTexQuery(m))
        q = k;
    if (!q)
      return error(inst.loc, "'" + inst.opcode + "' needs a query");
    bool level = inst.has("level");
    if (failed(expectOperands(inst, level ? 3 : 2)))
      return failure();
    std::optional<PtxType> t = instrType(inst, 0);
    if (!t || t->scalar != ScalarType::b32)
      return error(inst.loc, "'" + inst.opcode + "' needs '.b32'");
    if (!inst.operands[1].elems.empty())
      return error(inst.operands[1].elems[0].loc,
                   "'" + inst.opcode + "' takes no coordinates");
    Value handle = handleOf(inst.operands[1]);
    if (!handle)
      return failure();
    Value lod;
    if (level && !(lod = read(inst.operands[2], i32)))
      return failure();
    Value r = make<TexQueryOp>(i32, *q, op == Opcode::Suq, handle, lod);
    return write(inst.operands[0], r);
  }
  default:
    break;
  }

  // Surfaces: suld, sust, sured.
  std::optional<TexGeometry> g = geometryOf(inst);
  if (!g)
    return error(inst.loc, "'" + inst.opcode + "' needs a geometry");
  if (*g == TexGeometry::cube || *g == TexGeometry::acube)
    return error(inst.loc, "'" + inst.opcode + "' takes no '." +
                               ptxGeometry(*g) + "' geometry");
  bool formatted = inst.has("p");
  if (!formatted && !inst.has("b"))
    return error(inst.loc, "'" + inst.opcode + "' needs '.b' or '.p'");
  std::optional<PtxType> t = instrType(inst, 0);
  if (!t)
    return error(inst.loc, "'" + inst.opcode + "' needs a type");
  SurfClamp clamp = clampOf(inst);
  unsigned vec = vectorWidth(inst);
  if (failed(expectOperands(inst, 2)))
    return failure();
  const Operand &addrOp = inst.operands[op == Opcode::Suld ? 1 : 0];
  Value handle = handleOf(addrOp);
  if (!handle)
    return failure();
  Value layer;
  SmallVector<Value, 4> coords;
  if (!coordsOf(addrOp, *g, i32, layer, coords))
    return failure();
  const Operand &data = inst.operands[op == Opcode::Suld ? 0 : 1];

  if (op == Opcode::Sured) {
    std::optional<AtomicOp> kind;
    bool isSigned = t->isSigned;
    if (inst.has("add"))
      kind = AtomicOp::add;
    else if (inst.has("min"))
      kind = isSigned ? AtomicOp::smin : AtomicOp::umin;
    else if (inst.has("max"))
      kind = isSigned ? AtomicOp::smax : AtomicOp::umax;
    else if (inst.has("and"))
      kind = AtomicOp::and_;
    else if (inst.has("or"))
      kind = AtomicOp::or_;
    if (!kind)
      return error(inst.loc, "sured needs an operation (add, min, max, and, "
                             "or)");
    if (formatted)
      return error(inst.loc, "sured.p is not supported yet");
    unsigned bits = widthOf(t->type);
    if ((bits != 32 && bits != 64) || t->isFloat)
      return error(inst.loc, "sured takes a 32- or 64-bit integer type");
    Value v = read(data, intType(bits));
    if (!v)
      return failure();
    make<SuredOp>(*kind, t->scalar, *g, clamp, handle, layer, coords, v);
    return success();
  }

  ScalarType st = t->scalar;
  if (st != ScalarType::b8 && st != ScalarType::b16 && st != ScalarType::b32 &&
      st != ScalarType::b64)
    return error(inst.loc,
                 "'" + inst.opcode + "' takes a type .b8, .b16, .b32 or .b64");
  if (formatted && st != ScalarType::b32)
    return error(inst.loc, "sust.p takes '.b32'");
  Type et = st == ScalarType::b64 ? i64 : i32;
  if (op == Opcode::Suld) {
    if (formatted)
      return error(inst.loc, "suld.p is not PTX");
    SmallVector<Type, 4> results(vec, et);
    auto ld = make<SuldOp>(results, *g, st, clamp, handle, layer, coords);
    if (vec == 1)
      return write(data, ld.getResult(0));
    return writeVec(data, ld.getResults());
  }
  SmallVector<Value, 4> values;
  if (vec == 1) {
    Value v =
        read(data.kind == OK::Vector && data.elems.size() == 1 ? data.elems[0]
                                                               : data,
             et);
    if (!v)
      return failure();
    values.push_back(v);
  } else {
    if (data.kind != OK::Vector || data.elems.size() != vec)
      return error(data.loc,
                   "expected " + Twine(vec) + " source registers '{...}'");
    for (const Operand &e : data.elems) {
      Value v = read(e, et);
      if (!v)
        return failure();
      values.push_back(v);
    }
  }
  make<SustOp>(*g, st, clamp, formatted, handle, layer, coords, values);
  return success();
}
