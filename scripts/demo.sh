#!/usr/bin/env bash
# Builds Wooly, imports a sample CUDA kernel's PTX (nvcc output, from
# test/corpus) into Wooly IR, prints the IR and checks it with wooly-opt, then
# compiles the module for the host and runs its block reduction on the
# embedded CPU backend (wooly-run) and checks the sums.
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

if [[ $# -eq 0 ]]; then
  # 1000 ones summed by 4 blocks of 256 threads (shared memory, barriers and
  # warp shuffles): 256 256 256 232.
  echo "demo: wooly-run $ptx --kernel=block_sum_i32 (CPU backend)"
  result=$("$BUILD_DIR/bin/wooly-run" "$ptx" --kernel=block_sum_i32 \
    --grid=4 --block=256 --arg=n:s32:1000 --arg=in:s32[1000]:fill=1 \
    --arg=out:s32[4]:zero --print=out --time)
  echo "$result"
  if [[ "$result" != "out: 256 256 256 232" ]]; then
    echo "demo: unexpected result from the CPU backend" >&2
    exit 1
  fi
  echo "demo: block_sum_i32 ran on the CPU backend and gave the expected sums"
fi
