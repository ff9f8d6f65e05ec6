//===- Merge.cpp - One module from kernels of several modules ---*- C++ -*-===//
//
// `mergeForCoalescing` (Compiler.h): the input of a fused kernel whose parts
// come from different modules (different tenants). Each distinct module is
// imported once, keeps the kernels asked for, and has every symbol it
// defines renamed apart (`m<i>_<name>`) before its operations move into one
// module; external declarations (vprintf, __assertfail, ...) keep their
// names, once. The result is printed as Wooly IR, so that compiling it
// through the compile cache caches the fused kernel by its kernel set.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Compiler/Compiler.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/InitAllDialects.h"
#include "Wooly/Target/PTX/PTXImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace wooly;
using llvm::StringRef;

llvm::Expected<MergedModule>
wooly::mergeForCoalescing(llvm::ArrayRef<CoalesceSource> sources) {
  if (sources.empty())
    return llvm::createStringError("mergeForCoalescing: no kernels");
  mlir::DialectRegistry registry;
  mlir::wooly::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry, mlir::MLIRContext::Threading::DISABLED);
  ctx.loadAllAvailableDialects();
  std::string diags;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      diags += d.str() + "\n";
    return mlir::success();
  });

  // The distinct modules (by text), in first-appearance order, and the
  // kernels each must keep.
  std::vector<const CoalesceSource *> modules;
  llvm::StringMap<unsigned> moduleOf;
  std::vector<llvm::StringSet<>> keep;
  std::vector<unsigned> partModule;
  for (const CoalesceSource &s : sources) {
    auto [it, inserted] = moduleOf.try_emplace(s.ptx, modules.size());
    if (inserted) {
      modules.push_back(&s);
      keep.emplace_back();
    }
    keep[it->second].insert(s.kernel);
    partModule.push_back(it->second);
  }

  mlir::OpBuilder b(&ctx);
  mlir::OwningOpRef<mlir::ModuleOp> merged =
      mlir::ModuleOp::create(b.getUnknownLoc());
  llvm::StringSet<> declared;
  std::optional<int64_t> addressSize;
  for (unsigned i = 0; i < modules.size(); ++i) {
    const CoalesceSource &src = *modules[i];
    mlir::OwningOpRef<mlir::ModuleOp> m =
        mlir::wooly::importPTX(src.ptx, src.name, &ctx);
    if (!m)
      return llvm::createStringError(
          src.name + ": cannot import: " + StringRef(diags).rtrim());
    // Every part of one address size: a 32-bit module's pointers are not
    // a 64-bit one's.
    auto as = (*m)->getAttrOfType<mlir::IntegerAttr>("wooly.address_size");
    int64_t size = as ? as.getInt() : 64;
    if (addressSize && *addressSize != size)
      return llvm::createStringError(
          src.name + ": .address_size " + std::to_string(size) +
          " differs from the other parts' " + std::to_string(*addressSize));
    if (!addressSize) {
      addressSize = size;
      for (mlir::NamedAttribute a : (*m)->getAttrs())
        if (a.getName().strref().starts_with("wooly."))
          (*merged)->setAttr(a.getName(), a.getValue());
    }

    llvm::StringSet<> found;
    for (mlir::Operation &op :
         llvm::make_early_inc_range(m->getBody()->getOperations())) {
      if (auto fn = llvm::dyn_cast<mlir::wooly::FuncOp>(op)) {
        if (!fn.getKernel())
          continue;
        if (keep[i].contains(fn.getSymName()))
          found.insert(fn.getSymName());
        else
          fn.erase();
      } else if (auto g = llvm::dyn_cast<mlir::wooly::GlobalOp>(op)) {
        // Each tenant's module has its own instance of its variables (and
        // the host reads and writes them); a merged module cannot share it.
        using mlir::wooly::StateSpace;
        if (g.getSpace() == StateSpace::global ||
            g.getSpace() == StateSpace::constant)
          return llvm::createStringError(
              src.name + ": module variable '" + g.getSymName() +
              "': kernels of modules with .global or .const variables are "
              "not coalesced");
      }
    }
    for (const auto &k : keep[i])
      if (!found.contains(k.getKey()))
        return llvm::createStringError(src.name + ": no kernel named '" +
                                       k.getKey() + "'");

    // Rename what the module defines; external declarations keep their
    // names and come once.
    mlir::SymbolTable table(*m);
    std::string prefix = "m" + std::to_string(i) + "_";
    std::vector<mlir::Operation *> symbols;
    for (mlir::Operation &op : m->getBody()->getOperations())
      if (op.getAttrOfType<mlir::StringAttr>(
              mlir::SymbolTable::getSymbolAttrName()))
        symbols.push_back(&op);
    for (mlir::Operation *op : symbols) {
      StringRef name = mlir::SymbolTable::getSymbolName(op).getValue();
      auto fn = llvm::dyn_cast<mlir::wooly::FuncOp>(op);
      if (fn && fn.isDeclaration())
        continue;
      if (mlir::failed(table.rename(op, b.getStringAttr(prefix + name.str()))))
        return llvm::createStringError(src.name + ": cannot rename '" + name +
                                       "'");
    }
    for (mlir::Operation &op :
         llvm::make_early_inc_range(m->getBody()->getOperations())) {
      auto fn = llvm::dyn_cast<mlir::wooly::FuncOp>(op);
      if (fn && fn.isDeclaration() && !declared.insert(fn.getSymName()).second)
        continue; // declared by an earlier module
      op.moveBefore(merged->getBody(), merged->getBody()->end());
    }
  }

  MergedModule out;
  for (size_t p = 0; p < sources.size(); ++p)
    out.kernels.push_back("m" + std::to_string(partModule[p]) + "_" +
                          sources[p].kernel);
  llvm::raw_string_ostream os(out.mlir);
  merged->print(os);
  return out;
}
