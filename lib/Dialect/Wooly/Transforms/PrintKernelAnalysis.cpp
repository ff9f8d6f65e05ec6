//===- PrintKernelAnalysis.cpp - Kernel analyses as remarks ----*- C++ -*-===//

#include "Wooly/Dialect/Wooly/Analysis/KernelAnalysis.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Dialect/Wooly/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

namespace mlir::wooly {
#define GEN_PASS_DEF_WOOLYPRINTKERNELANALYSIS
#include "Wooly/Dialect/Wooly/Transforms/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;

namespace {
struct WoolyPrintKernelAnalysisPass
    : wooly::impl::WoolyPrintKernelAnalysisBase<WoolyPrintKernelAnalysisPass> {
  using Base::Base;
  void runOnOperation() override {
    for (auto f : getOperation().getOps<FuncOp>()) {
      if (!f.getKernel())
        continue;
      KernelSummary s = analyzeKernel(f);
      std::string readOnly, written, escapes;
      for (size_t i = 0; i < s.params.size(); ++i) {
        const ParamUsage &p = s.params[i];
        auto add = [&](std::string &list) {
          list += (list.empty() ? "" : ",") + std::to_string(i);
        };
        if (p.isReadOnlyPointer())
          add(readOnly);
        if (p.written)
          add(written);
        if (p.escapes)
          add(escapes);
      }
      f.emitRemark() << "kernel '" << s.name << "': read-only pointers ["
                     << readOnly << "], written [" << written << "], escaping ["
                     << escapes << "], static shared " << s.staticSharedBytes
                     << " bytes, ~" << s.registerEstimate
                     << " registers, barriers "
                     << (s.usesBarriers ? "yes" : "no") << ", warp ops "
                     << (s.usesWarpCollectives ? "yes" : "no") << ", cost "
                     << s.costHint;
    }
  }
};
} // namespace
