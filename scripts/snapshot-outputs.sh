#!/usr/bin/env bash
# Writes everything the compiler produces for the whole PTX corpus and the
# ZLUDA suite into one folder, so that a refactoring can be shown to change
# nothing: run it before and after, then `diff -r BEFORE AFTER`.
#
# For every PTX file of test/corpus and ../shared/conformance/zluda/ptx:
#   NAME.mlir     the imported Wooly IR (wooly-translate --import-ptx)
#   NAME.sm_90    the NVPTX it is recompiled to (--target=sm_90)
#   NAME.rocdl    the gfx942 lowering (LLVM and ROCDL dialects)
#   NAME.host     the host lowering (LLVM dialect)
#   NAME.err      the diagnostics of a step that failed (failures are part
#                 of the behaviour too)
# and the CPU backend's results:
#   cpu/LINE.bin  every buffer of each launch of bench/corpus-launches.txt
#                 (wooly-run --save-all), LINE its line number; launches
#                 marked order-dependent are left out
#   zluda-cpu.txt the ZLUDA suite's per-test results on the CPU backend
#                 (heap addresses in its messages replaced by 0xADDR)
#
# Usage: scripts/snapshot-outputs.sh OUT [BIN]   (BIN default: build/bin)
#   SNAPSHOT_CPU=0 skips the CPU runs (compiler outputs only).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: snapshot-outputs.sh OUT [BIN]}
bin=${2:-build/bin}
zluda=${ZLUDA:-../shared/conformance/zluda}
mkdir -p "$out/compile" "$out/cpu"

jobs=$(nproc)
compile_one() {
  local f=$1 out=$2 bin=$3 name
  name=$(basename "$(dirname "$f")")-$(basename "$f" .ptx)
  local o="$out/compile/$name"
  "$bin/wooly-translate" --import-ptx "$f" -o "$o.mlir" 2>"$o.err" || return 0
  "$bin/wooly-translate" --target=sm_90 "$f" -o "$o.sm_90" 2>>"$o.err"
  "$bin/wooly-opt" --wooly-expand-arith --wooly-lower-iteration-barrier \
    --convert-wooly-to-rocdl=chip=gfx942 "$o.mlir" -o "$o.rocdl" 2>>"$o.err"
  "$bin/wooly-opt" --wooly-expand-arith --convert-wooly-to-llvm "$o.mlir" \
    -o "$o.host" 2>>"$o.err"
  [[ -s "$o.err" ]] || rm -f "$o.err"
}
export -f compile_one
echo "snapshot: compiling $(ls test/corpus/*.ptx "$zluda"/ptx/*.ptx | wc -l) PTX files"
ls test/corpus/*.ptx "$zluda"/ptx/*.ptx |
  xargs -P "$jobs" -I{} bash -c 'compile_one "$@"' _ {} "$out" "$bin"
# Diagnostics name the input by path; keep them comparable between trees.
sed -i -e "s|$out/compile/||g" -e "s|$(pwd)/||g" "$out"/compile/*.err 2>/dev/null ||
  true

if [[ "${SNAPSHOT_CPU:-1}" == 1 ]]; then
  echo "snapshot: running bench/corpus-launches.txt on the CPU backend"
  n=0
  while read -r file kernel rest; do
    n=$((n + 1))
    [[ -z "$file" || "$file" == \#* ]] && continue
    # Kernels whose results depend on thread timing are not compared.
    [[ "$rest" == order-dependent* ]] && continue
    mkdir -p "$out/cpu/$n"
    # shellcheck disable=SC2086
    "$bin/wooly-run" "test/corpus/$file" --kernel="$kernel" $rest \
      --save-all="$out/cpu/$n" >/dev/null 2>"$out/cpu/$n.err" ||
      echo "line $n failed" >>"$out/cpu/failures.txt"
    [[ -s "$out/cpu/$n.err" ]] || rm -f "$out/cpu/$n.err"
  done <bench/corpus-launches.txt
  echo "snapshot: ZLUDA suite on the CPU backend"
  "$bin/wooly-conformance" "$zluda" 2>&1 |
    sed -E 's/0x[0-9a-f]{6,}/0xADDR/g' >"$out/zluda-cpu.txt"
fi
echo "snapshot: written to $out"
