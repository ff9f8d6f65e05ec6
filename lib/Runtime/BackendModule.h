//===- BackendModule.h - A module loaded into a Backend ---------*- C++ -*-===//
//
// The base of every backend's module handle (private to lib/Runtime).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_LIB_RUNTIME_BACKENDMODULE_H
#define WOOLY_LIB_RUNTIME_BACKENDMODULE_H

#include "Wooly/Compiler/CompiledModule.h"

#include <memory>

namespace wooly {

/// A loaded module: the backend's own handle and the compiled module.
class BackendModule {
public:
  explicit BackendModule(std::shared_ptr<const CompiledModule> compiled)
      : compiled(std::move(compiled)) {}
  virtual ~BackendModule() = default;

  /// The module compiled for `host` (null for a cuda module loaded
  /// without one).
  std::shared_ptr<const CompiledModule> compiled;
};

} // namespace wooly

#endif // WOOLY_LIB_RUNTIME_BACKENDMODULE_H
