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

} // namespace mlir::wooly

#endif // WOOLY_INITALLPASSES_H
