//===- PtxLink.h - Linking the PTX of -rdc programs -------------*- C++ -*-===//
//
// A program built with `nvcc -rdc=true` carries one PTX module per object
// file; a kernel in one may call a `__device__` function or use a variable
// defined in another (`.extern` declarations). `linkPtx` joins them into one
// module, as a device linker would:
//
//  - one header: the highest `.version`, the first module's `.target`;
//  - an `.extern` declaration of a symbol that another module defines is
//    dropped (the definition serves it); others (e.g. `vprintf`) stay once;
//  - a module-local symbol (no `.visible`/`.weak`/`.extern`: `$str`,
//    `__unnamed_1`, file-static functions) whose name another module also
//    uses is renamed in its module, so each keeps its own;
//  - a symbol defined `.visible` in two modules is an error ("multiple
//    definition"), as for the host linker; `.weak` definitions keep the
//    first.
//
// Plain C++ (no LLVM): it runs in the capture libraries, in user processes.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_CAPTURE_PTXLINK_H
#define WOOLY_CAPTURE_PTXLINK_H

#include <string>
#include <vector>

namespace wooly::capture {

/// Links `modules` (PTX texts) into `out`. On malformed input (unbalanced
/// braces, a declaration without a name, conflicting definitions) returns
/// false and says why in `error`, naming the module (0-based) and line.
bool linkPtx(const std::vector<std::string> &modules, std::string &out,
             std::string &error);

} // namespace wooly::capture

#endif // WOOLY_CAPTURE_PTXLINK_H
