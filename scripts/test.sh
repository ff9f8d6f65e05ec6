#!/usr/bin/env bash
# Builds Wooly, then runs every test: the lit suite (FileCheck tests and the
# GoogleTest binaries through test/Unit) and ctest, then the bounded fuzz run
# (scripts/fuzz.sh --ci, in its own build folder) and a short soak of the
# server built there, with AddressSanitizer, so that LeakSanitizer checks it
# at exit (WOOLY_SKIP_FUZZ=1 skips both). Exits non-zero on any failure.
# Tests that need a GPU (REQUIRES: cuda) are reported as unsupported on
# machines without one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
bash scripts/build.sh
ninja -C "$BUILD_DIR" ${JOBS:+-j "$JOBS"} check-wooly
if [[ "${WOOLY_SKIP_FUZZ:-0}" != 1 ]]; then
  bash scripts/fuzz.sh --ci
  FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
  ninja -C "$FUZZ_BUILD_DIR" ${JOBS:+-j "$JOBS"} bin/wooly-serve
  echo "soak: 16 tenants for 20 s against wooly-serve built with ASan (LeakSanitizer at exit)"
  python3 test/apps/soak.py --serve "$FUZZ_BUILD_DIR/bin/wooly-serve" \
    --bin "$BUILD_DIR/bin" --ptx test/corpus/elementwise.sm_90.ptx \
    --tenants 16 --seconds 20 --rss-slack 512
fi
