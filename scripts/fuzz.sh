#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (fuzz/README.md) in their own build
# folder (clang-22, ASan + UBSan + assertions, -O1) and runs them:
#
#   scripts/fuzz.sh --ci [TARGET...]       each target for a bounded number
#                                          of inputs from fuzz/corpus (CI)
#   scripts/fuzz.sh --campaign SECONDS [--jobs N] [TARGET...]
#                                          a long campaign per target, N
#                                          fuzzer processes each (default 1)
#
# TARGET is ptx, fatbin or protocol (default: all three). The CI run starts
# from the committed corpus and regressions alone, with a fixed seed; a
# campaign keeps the inputs it finds in $FUZZ_BUILD_DIR/campaign/TARGET/corpus,
# so the next campaign goes on from there. Crash files go to
# $FUZZ_BUILD_DIR/<ci|campaign>/TARGET/crashes; a crash fixed goes to
# fuzz/regressions/TARGET (fuzz/README.md). Prints a table per target
# (inputs run, exec/s, libFuzzer's final cov: and ft:, crash files) and
# exits non-zero on a crash. Honors FUZZ_BUILD_DIR (default build-fuzz) and
# JOBS (build jobs; default: ninja's).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

mode='' seconds=0 jobs=1 targets=()
while (($#)); do
  case "$1" in
  --ci) mode=ci ;;
  --campaign)
    mode=campaign
    seconds=${2:-}
    shift || true
    [[ "$seconds" =~ ^[0-9]+$ ]] || usage
    ;;
  --jobs)
    jobs=${2:-}
    shift || true
    [[ "$jobs" =~ ^[1-9][0-9]*$ ]] || usage
    ;;
  ptx | fatbin | protocol) targets+=("$1") ;;
  *) usage ;;
  esac
  shift
done
[[ -n "$mode" ]] || usage
((${#targets[@]})) || targets=(ptx fatbin protocol)

FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
bash scripts/install-deps.sh

if [[ ! -f "$FUZZ_BUILD_DIR/build.ninja" ]]; then
  echo "fuzz: configuring $FUZZ_BUILD_DIR"
  CC=clang-22 CXX=clang++-22 cmake -G Ninja -S . -B "$FUZZ_BUILD_DIR" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DMLIR_LINK_MLIR_DYLIB=ON \
    -DLLVM_USE_LINKER=lld \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
    -DWOOLY_BUILD_FUZZERS=ON \
    -DWOOLY_BUILD_TESTS=OFF >/dev/null
fi

echo "fuzz: building ${targets[*]} in $FUZZ_BUILD_DIR${JOBS:+ with $JOBS jobs}"
export NINJA_STATUS=${NINJA_STATUS:-"[%f/%t %p %es] "}
ninja -C "$FUZZ_BUILD_DIR" ${JOBS:+-j "$JOBS"} "${targets[@]/#/wooly-fuzz-}"
FUZZ_BUILD_DIR=$(cd "$FUZZ_BUILD_DIR" && pwd)

# Per target: inputs for --ci (about 20 to 90 s each on one core), the
# longest input, and libFuzzer options. The protocol target runs a server on
# other threads, whose allocations libFuzzer's leak check would take for the
# input's: leaks are not checked there.
declare -A ciRuns=([ptx]=300000 [fatbin]=2000000 [protocol]=40000)
declare -A maxLen=([ptx]=16384 [fatbin]=16384 [protocol]=8192)
declare -A extra=([ptx]="-dict=$PWD/fuzz/ptx.dict" [fatbin]=""
  [protocol]="-detect_leaks=0 -rss_limit_mb=4096")

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
symbolizer=/usr/lib/llvm-22/bin/llvm-symbolizer
[[ -x "$symbolizer" ]] && export ASAN_SYMBOLIZER_PATH=$symbolizer

work="$FUZZ_BUILD_DIR/$mode"
failed=0
summary=()
for t in "${targets[@]}"; do
  dir="$work/$t"
  if [[ "$mode" == ci ]]; then
    rm -rf "$dir"
  elif [[ -d "$dir/crashes" && -n "$(ls -A "$dir/crashes")" ]]; then
    # A previous campaign's crash files stay, set aside.
    mv "$dir/crashes" "$dir/crashes.$(date +%Y%m%d-%H%M%S)"
  fi
  mkdir -p "$dir/corpus" "$dir/crashes"
  rm -f "$dir"/fuzz-*.log
  bin="$FUZZ_BUILD_DIR/bin/wooly-fuzz-$t"
  # New inputs go to the first corpus folder; the committed corpus and the
  # regressions are read only.
  read -ra more <<<"${extra[$t]}"
  args=(-max_len="${maxLen[$t]}" -timeout=30 -print_final_stats=1
    -artifact_prefix="$dir/crashes/" "${more[@]}"
    "$dir/corpus" "$PWD/fuzz/corpus/$t" "$PWD/fuzz/regressions/$t")
  if [[ "$mode" == ci ]]; then
    # A fixed seed: the same code runs the same inputs (but for the
    # protocol target's thread timing), so a failure reproduces.
    args=(-runs="${ciRuns[$t]}" -seed=1 -max_total_time=120 "${args[@]}")
    echo "fuzz: $t: ${ciRuns[$t]} inputs from fuzz/corpus/$t"
  else
    args=(-max_total_time="$seconds" "${args[@]}")
    ((jobs == 1)) || args=(-jobs="$jobs" -workers="$jobs" "${args[@]}")
    echo "fuzz: $t: ${seconds} s, $jobs job(s); new inputs in $dir/corpus," \
      "crash files in $dir/crashes, log in $dir/fuzz-*.log"
  fi
  # With -jobs, libFuzzer writes fuzz-N.log itself (in the current folder).
  rc=0
  if ((jobs == 1)) || [[ "$mode" == ci ]]; then
    (cd "$dir" && "$bin" "${args[@]}" >fuzz-0.log 2>&1) || rc=$?
  else
    (cd "$dir" && "$bin" "${args[@]}" >/dev/null 2>&1) || rc=$?
  fi

  # The figures: runs and exec/s summed over the jobs, the largest cov/ft
  # (libFuzzer's last status line of each job).
  runs=0 rate=0 cov=0 ft=0
  for log in "$dir"/fuzz-*.log; do
    [[ -f "$log" ]] || continue
    r=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    e=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    c=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
    f=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
    runs=$((runs + ${r:-0})) rate=$((rate + ${e:-0}))
    cov=$((${c:-0} > cov ? ${c:-0} : cov)) ft=$((${f:-0} > ft ? ${f:-0} : ft))
  done
  # crash-, leak-, timeout- and oom- files (slow-unit- ones are no failure).
  crashes=$(find "$dir/crashes" -type f ! -name 'slow-unit-*' | wc -l)
  if ((rc != 0 || crashes != 0)); then
    failed=1
    echo "fuzz: $t FAILED (exit $rc); crash files in $dir/crashes:" >&2
    find "$dir/crashes" -type f ! -name 'slow-unit-*' -printf '  %p\n' >&2
    echo "fuzz: the end of its log ($dir/fuzz-*.log):" >&2
    tail -n 40 "$dir"/fuzz-*.log | sed 's/^/  /' >&2
  fi
  summary+=("$(printf '%-10s %10s %8s %8s %8s %8s' "$t" "$runs" "$rate" \
    "$cov" "$ft" "$crashes")")
done

printf '\n%-10s %10s %8s %8s %8s %8s\n' target inputs exec/s cov ft crashes
printf '%s\n' "${summary[@]}"
exit $failed
