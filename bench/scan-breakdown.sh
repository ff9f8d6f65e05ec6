#!/usr/bin/env bash
# Where the time of wooly-cpu-bench's block scan goes on the CPU backend:
# the kernel (block_scan_loop_i32, bench/kernels/cpu-bench.cu) and two
# variants with less work per barrier round
# (bench/kernels/scan-breakdown.cu), each with bounds checks on and off, on
# one worker. Rounds alternate between the six runs (these machines are
# noisy); the table shows each run's median launch time over the rounds,
# and the time per warp and barrier round (blocks x warps x rounds).
#
# Usage: bench/scan-breakdown.sh [ROUNDS]   (default 3; WOOLY_RUN=path to
#   another wooly-run, e.g. build/portable/wooly-run)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUN=${WOOLY_RUN:-build/bin/wooly-run}
ROUNDS=${1:-3}
N=4194304 BLOCK=256
GRID=$((N / BLOCK))
# 8 warps, and the rounds: the load, log2(256) = 8 in the loop, the store.
WARP_ROUNDS=$((GRID * BLOCK / 32 * 10))
KERNELS=(block_scan_loop_i32 scan_copy scan_barriers)
declare -A times

launch() { # KERNEL [--no-bounds-checks]: prints the median launch in ms
  local ptx=bench/kernels/scan-breakdown.sm_80.ptx
  [[ $1 == block_scan_loop_i32 ]] && ptx=bench/kernels/cpu-bench.sm_80.ptx
  "$RUN" "$ptx" --kernel="$1" ${2:-} --workers=1 --grid=$GRID --block=$BLOCK \
    --arg=n:s32:$N --arg=in:s32[$N]:random:seed=5 --arg=out:s32[$N]:zero \
    --print=none --repeat=5 --time 2>&1 >/dev/null |
    sed -n 's/.*run \([0-9.]*\) ms per launch.*/\1/p'
}

for ((r = 0; r < ROUNDS; ++r)); do
  for k in "${KERNELS[@]}"; do
    for checks in on off; do
      flag=""
      [[ $checks == off ]] && flag=--no-bounds-checks
      t=$(launch "$k" $flag)
      [[ -n $t ]] || { echo "scan-breakdown: $k ($checks) did not run" >&2; exit 1; }
      times[$k/$checks]+="$t "
    done
  done
done

median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "block scan variants, $GRID blocks of $BLOCK threads, 1 worker, median of $ROUNDS rounds"
printf '%-20s %12s %12s %14s %14s\n' kernel "checks ms" "no checks ms" "ns/warp-round" "(no checks)"
for k in "${KERNELS[@]}"; do
  on=$(median "${times[$k/on]}")
  off=$(median "${times[$k/off]}")
  printf '%-20s %12.2f %12.2f %14.2f %14.2f\n' "$k" "$on" "$off" \
    "$(awk -v t="$on" -v w=$WARP_ROUNDS 'BEGIN {print t * 1e6 / w}')" \
    "$(awk -v t="$off" -v w=$WARP_ROUNDS 'BEGIN {print t * 1e6 / w}')"
done
