//===- LockstepLanes.h - A region loop run by lanes in lock step --------===//
//
// See LockstepLanes.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_COMPILER_LOCKSTEPLANES_H
#define WOOLY_LIB_COMPILER_LOCKSTEPLANES_H

#include "llvm/IR/PassManager.h"

namespace wooly::detail {

struct LockstepLanesPass : public llvm::PassInfoMixin<LockstepLanesPass> {
  llvm::PreservedAnalyses run(llvm::Function &f,
                              llvm::FunctionAnalysisManager &fam);
};

} // namespace wooly::detail

#endif // WOOLY_LIB_COMPILER_LOCKSTEPLANES_H
