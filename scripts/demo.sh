#!/usr/bin/env bash
# Builds Wooly, imports a sample CUDA kernel's PTX (nvcc output, from
# test/corpus) into Wooly IR, prints the IR and checks it with wooly-opt.
# Usage: bash scripts/demo.sh [file.ptx]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
ptx=${1:-test/corpus/reduction.sm_90.ptx}
bash scripts/build.sh

out="$BUILD_DIR/demo/$(basename "${ptx%.ptx}").mlir"
mkdir -p "$(dirname "$out")"

echo "demo: wooly-translate --import-ptx $ptx"
"$BUILD_DIR/bin/wooly-translate" --import-ptx "$ptx" -o "$out"
cat "$out"

# Parse and verify the printed IR again, as any later tool would.
"$BUILD_DIR/bin/wooly-opt" "$out" -o /dev/null

kernels=$(grep -c '^[[:space:]]*\.\(visible \)\?\.entry' "$ptx" || true)
funcs=$(grep -c 'wooly\.func @' "$out" || true)
echo "demo: $ptx ($kernels kernels) -> $out ($funcs wooly.func, $(wc -l <"$out") lines); wooly-opt verified it"
