//===- Remote.h - A Backend that is a wooly-serve session -------*- C++ -*-===//

#ifndef WOOLY_LIB_RUNTIME_REMOTE_H
#define WOOLY_LIB_RUNTIME_REMOTE_H

#include "Wooly/Runtime/Backend.h"

namespace wooly {

/// The `remote` backend (see Remote.cpp): connects to wooly-serve and
/// opens a session.
llvm::Expected<std::unique_ptr<Backend>>
createRemoteBackend(const BackendOptions &options);

} // namespace wooly

#endif // WOOLY_LIB_RUNTIME_REMOTE_H
