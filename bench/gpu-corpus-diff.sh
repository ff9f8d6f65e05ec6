#!/usr/bin/env bash
# Runs every corpus launch of bench/corpus-launches.txt on an NVIDIA GPU
# twice: the ORIGINAL PTX (nvcc's, JIT-compiled by the driver) and the PTX
# that Wooly generates from it (PTX -> Wooly -> convert-wooly-to-nvvm ->
# NVPTX, `wooly-run --target=sm_90`). Compares every buffer after the
# launches bit for bit and prints a table of the median kernel times (CUDA
# events around each launch, so without the launch overhead) and their
# ratio.
#
# Usage: bench/gpu-corpus-diff.sh [LAUNCHES] [REPEAT]
#   WOOLY_RUN=path/to/wooly-run (default build/bin/wooly-run),
#   CORPUS=dir of the .ptx files (default test/corpus),
#   TARGET=sm_XX for the recompiled run (default sm_90).
# Exit status 1 when any launch fails or a deterministic kernel's outputs
# differ; kernels marked `order-dependent` may differ (reported, not failed).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

LAUNCHES=${1:-bench/corpus-launches.txt}
REPEAT=${2:-20}
WOOLY_RUN=${WOOLY_RUN:-build/bin/wooly-run}
CORPUS=${CORPUS:-test/corpus}
TARGET=${TARGET:-sm_90}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Median kernel time in microseconds from `wooly-run --time`'s stderr: the
# GPU's own (CUDA events), else the wall time of the synchronous launch.
launch_us() {
  local ms
  ms=$(sed -n 's/.*kernel \([0-9.]*\) ms (median.*/\1/p' "$1")
  [[ -z "$ms" ]] && ms=$(sed -n 's/.*run \([0-9.]*\) ms per launch.*/\1/p' "$1")
  awk -v ms="$ms" 'BEGIN { printf "%.1f", ms * 1000 }'
}

printf '%-42s %10s %10s %7s  %s\n' "file:kernel" "native us" "wooly us" "w/n" outputs
identical=0 differ=0 expected=0 failed=0
ratios=()
n=0
while read -r file kernel rest; do
  [[ -z "$file" || "$file" == \#* ]] && continue
  orderdep=0
  if [[ "$rest" == order-dependent* ]]; then
    orderdep=1
    rest=${rest#order-dependent}
  fi
  n=$((n + 1))
  label="${file%%.*}:$kernel"
  read -r -a opts <<<"$rest"
  ok=1
  for mode in native wooly; do
    target=host
    [[ $mode == wooly ]] && target=$TARGET
    if ! "$WOOLY_RUN" "$CORPUS/$file" --kernel="$kernel" --backend=cuda \
      --target="$target" "${opts[@]}" --repeat="$REPEAT" --time \
      --save-all="$work/$n.$mode" \
      >/dev/null 2>"$work/$n.$mode.err"; then
      ok=0
      echo "  $label ($mode): $(grep -m1 -i error "$work/$n.$mode.err")" \
        >>"$work/failures"
    fi
  done
  if ((!ok)); then
    failed=$((failed + 1))
    printf '%-42s %10s %10s %7s  %s\n' "$label" - - - "FAILED TO RUN"
    continue
  fi
  tn=$(launch_us "$work/$n.native.err")
  tw=$(launch_us "$work/$n.wooly.err")
  ratio=$(awk -v a="$tw" -v b="$tn" 'BEGIN { printf "%.2f", a / b }')
  ratios+=("$ratio")
  if diff -rq "$work/$n.native" "$work/$n.wooly" >/dev/null; then
    verdict="identical"
    identical=$((identical + 1))
  elif ((orderdep)); then
    verdict="differ (order-dependent kernel)"
    expected=$((expected + 1))
  else
    verdict="DIFFER: $(diff -rq "$work/$n.native" "$work/$n.wooly" |
      sed -n 's|.*/\([^/]*\)\.bin and .*|\1|p' | tr '\n' ' ')"
    differ=$((differ + 1))
  fi
  printf '%-42s %10s %10s %7s  %s\n' "$label" "$tn" "$tw" "$ratio" "$verdict"
done <"$LAUNCHES"

geomean=$(printf '%s\n' "${ratios[@]}" |
  awk '$1 > 0 { s += log($1); k++ } END { if (k) printf "%.2f", exp(s / k) }')
echo
echo "geomean wooly/native kernel time: ${geomean:-n/a} (${#ratios[@]} kernels, median of $REPEAT launches each)"
echo "$identical identical, $differ differ, $expected order-dependent differ, $failed failed to run"
[[ -f "$work/failures" ]] && cat "$work/failures"
((differ == 0 && failed == 0))
