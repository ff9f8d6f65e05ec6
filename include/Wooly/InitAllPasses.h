//===- InitAllPasses.h - Register Wooly's passes -----------*- C++ -*-===//
//
// Registration of every pass Wooly tools offer on the command line.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_INITALLPASSES_H
#define WOOLY_INITALLPASSES_H

namespace mlir::wooly {

/// Registers the Wooly passes and the upstream passes useful on Wooly IR
/// (canonicalize, cse, ...) with the global pass registry.
void registerAllPasses();

/// Registers the translations of `wooly-translate` (`--import-ptx`).
void registerAllTranslations();

/// Hides the command-line options that libLLVM registers for its backends
/// (hundreds of them) from `--help`, keeping MLIR's `--mlir-*` options and
/// the tool's own (registered later). `--help-hidden` still lists all.
void hideBackendOptions();

} // namespace mlir::wooly

#endif // WOOLY_INITALLPASSES_H
