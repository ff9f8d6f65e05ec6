//===- WidenAccessChecks.h - Bounds checks hoisted out of loops -*- C++ -*-===//
//
// Internal to the compiler (TargetCodegen.cpp runs it for `host`).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_COMPILER_WIDENACCESSCHECKS_H
#define WOOLY_LIB_COMPILER_WIDENACCESSCHECKS_H

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

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
/// `i` if it is the slow path of a bounds check with a cache entry (a call
/// of `__wooly_rt_check`).
llvm::CallInst *accessCheckCall(llvm::Instruction &i);

/// After `loop` was cloned (`vmap`: originals to copies), makes the copy
/// feed the phis of `exits`, the loop's exit blocks, as the loop does.
void addClonedExitIncomings(const llvm::Loop &loop,
                            llvm::ValueToValueMapTy &vmap,
                            llvm::ArrayRef<llvm::BasicBlock *> exits);

/// Makes bounds-check slow path `call` one known not to be taken: the
/// branches to its block go straight on, and it becomes `unreachable`.
void makeCheckPass(llvm::CallInst *call);

struct WidenAccessChecksPass
    : public llvm::PassInfoMixin<WidenAccessChecksPass> {
  llvm::PreservedAnalyses run(llvm::Function &f,
                              llvm::FunctionAnalysisManager &fam);
};

} // namespace wooly::detail

#endif // WOOLY_LIB_COMPILER_WIDENACCESSCHECKS_H
