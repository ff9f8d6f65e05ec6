#!/usr/bin/env bash
# Builds Wooly, then runs every test: the lit suite (FileCheck tests and the
# GoogleTest binaries through test/Unit) and ctest, then the bounded fuzz run
# (scripts/fuzz.sh --ci, in its own build folder; WOOLY_SKIP_FUZZ=1 skips
# it). Exits non-zero on any failure. Tests that need a GPU (REQUIRES: cuda)
# are reported as unsupported on machines without one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
bash scripts/build.sh
ninja -C "$BUILD_DIR" ${JOBS:+-j "$JOBS"} check-wooly
if [[ "${WOOLY_SKIP_FUZZ:-0}" != 1 ]]; then
  bash scripts/fuzz.sh --ci
fi
