#!/usr/bin/env bash
# Builds Wooly, then runs every test: the lit suite (FileCheck tests and the
# GoogleTest binaries through test/Unit) and ctest. Exits non-zero on any
# failure. Tests that need a GPU (REQUIRES: cuda) are reported as unsupported
# on machines without one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
bash scripts/build.sh
ninja -C "$BUILD_DIR" ${JOBS:+-j "$JOBS"} check-wooly
