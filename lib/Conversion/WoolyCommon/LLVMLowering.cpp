//===- LLVMLowering.cpp - Shared by the LLVM-based lowerings ---*- C++ -*-===//

#include "LLVMLowering.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::wooly;

uint64_t common::byteSize(Type t) {
  if (auto v = dyn_cast<VectorType>(t))
    return v.getNumElements() * byteSize(v.getElementType());
  unsigned bits = t.getIntOrFloatBitWidth();
  return bits == 1 ? 1 : (bits + 7) / 8;
}

LLVM::AtomicOrdering common::ordering(std::optional<MemOrder> sem) {
  if (!sem)
    return LLVM::AtomicOrdering::monotonic;
  switch (*sem) {
  case MemOrder::weak:
  case MemOrder::relaxed:
    return LLVM::AtomicOrdering::monotonic;
  case MemOrder::acquire:
    return LLVM::AtomicOrdering::acquire;
  case MemOrder::release:
    return LLVM::AtomicOrdering::release;
  case MemOrder::acq_rel:
    return LLVM::AtomicOrdering::acq_rel;
  case MemOrder::sc:
    return LLVM::AtomicOrdering::seq_cst;
  }
  return LLVM::AtomicOrdering::seq_cst;
}

LLVM::AtomicBinOp common::atomicBinOp(AtomicOp op) {
  switch (op) {
  case AtomicOp::add:
    return LLVM::AtomicBinOp::add;
  case AtomicOp::fadd:
    return LLVM::AtomicBinOp::fadd;
  case AtomicOp::umin:
    return LLVM::AtomicBinOp::umin;
  case AtomicOp::smin:
    return LLVM::AtomicBinOp::min;
  case AtomicOp::fmin:
    return LLVM::AtomicBinOp::fmin;
  case AtomicOp::umax:
    return LLVM::AtomicBinOp::umax;
  case AtomicOp::smax:
    return LLVM::AtomicBinOp::max;
  case AtomicOp::fmax:
    return LLVM::AtomicBinOp::fmax;
  case AtomicOp::inc:
    return LLVM::AtomicBinOp::uinc_wrap;
  case AtomicOp::dec:
    return LLVM::AtomicBinOp::udec_wrap;
  case AtomicOp::and_:
    return LLVM::AtomicBinOp::_and;
  case AtomicOp::or_:
    return LLVM::AtomicBinOp::_or;
  case AtomicOp::xor_:
    return LLVM::AtomicBinOp::_xor;
  case AtomicOp::exch:
  case AtomicOp::cas:
    return LLVM::AtomicBinOp::xchg;
  }
  return LLVM::AtomicBinOp::xchg;
}

Attribute common::denseInitializer(GlobalOp g, uint64_t count) {
  auto el = dyn_cast_or_null<DenseElementsAttr>(g.getInitAttr());
  if (!el)
    return {};
  Type et = el.getElementType();
  auto shape = RankedTensorType::get({int64_t(count)}, et);
  // A list shorter than the variable (`{1.0}` for `f32 a[4]`) is padded.
  if (uint64_t(el.getNumElements()) == count)
    return el.reshape(shape);
  SmallVector<Attribute> values(el.getValues<Attribute>());
  values.resize(std::min<uint64_t>(values.size(), count));
  Builder b(g.getContext());
  Attribute zero = isa<FloatType>(et) ? Attribute(b.getFloatAttr(et, 0.0))
                                      : Attribute(b.getIntegerAttr(et, 0));
  values.resize(count, zero);
  return DenseElementsAttr::get(shape, values);
}

void common::replaceWithCallResults(ConversionPatternRewriter &rw,
                                    Operation *op, LLVM::CallOp call) {
  if (op->getNumResults() <= 1) {
    rw.replaceOp(op, call.getResults());
    return;
  }
  SmallVector<Value> results;
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    results.push_back(
        LLVM::ExtractValueOp::create(rw, op->getLoc(), call.getResult(), i));
  rw.replaceOp(op, results);
}
