//===- WidenAccessChecks.h - Bounds checks hoisted out of loops -*- C++ -*-===//
//
// Internal to the compiler (TargetCodegen.cpp runs it for `host`).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_COMPILER_WIDENACCESSCHECKS_H
#define WOOLY_LIB_COMPILER_WIDENACCESSCHECKS_H

#include "llvm/IR/PassManager.h"

namespace wooly::detail {

/// Versions loops of host code on their bounds checks: where the addresses
/// a checked access site (one `__wooly_rt_check` slow path, ABI.h) takes in
/// a loop are an affine function of the iteration, the loop's preheader
/// checks the first and the last of them against the site's cache entry,
/// and when every such site passes, runs a copy of the loop without those
/// sites' slow paths; otherwise the loop as it was, check by check, so an
/// out-of-bounds access fails exactly as before (same thread, same error).
/// Sound because every address of the progression lies between its ends,
/// and a range in a worker's site cache stays valid for the launch.
struct WidenAccessChecksPass
    : public llvm::PassInfoMixin<WidenAccessChecksPass> {
  llvm::PreservedAnalyses run(llvm::Function &f,
                              llvm::FunctionAnalysisManager &fam);
};

} // namespace wooly::detail

#endif // WOOLY_LIB_COMPILER_WIDENACCESSCHECKS_H
