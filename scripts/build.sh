#!/usr/bin/env bash
# Installs missing dependencies, configures the build once, and builds
# everything. Honors BUILD_DIR (default: build) and JOBS (default: ninja's).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
bash scripts/install-deps.sh

if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  echo "build: configuring $BUILD_DIR"
  CC=clang-22 CXX=clang++-22 cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DMLIR_LINK_MLIR_DYLIB=ON \
    -DLLVM_USE_LINKER=lld \
    -DCMAKE_BUILD_TYPE=Release >/dev/null
fi

echo "build: building $BUILD_DIR${JOBS:+ with $JOBS jobs}"
export NINJA_STATUS=${NINJA_STATUS:-"[%f/%t %p %es] "}
ninja -C "$BUILD_DIR" ${JOBS:+-j "$JOBS"}
