#!/usr/bin/env bash
# Compares the functions Wooly's drop-ins export with NVIDIA's libraries
# (libcudart, libcuda, and libcublas where nvcc built Wooly's):
# how many NVIDIA exports Wooly implements, how many are stubs (they return
# cudaErrorNotSupported / CUDA_ERROR_NOT_SUPPORTED /
# CUBLAS_STATUS_NOT_SUPPORTED and log their name once),
# and any NVIDIA export Wooly lacks (a program could fail to load: must be
# none). NVIDIA's lists come from the CUDA toolkit when it is installed
# (CUDA_HOME, default /usr/local/cuda), else from capture/*Exports.def.
# Usage: bash scripts/capture-coverage.sh [build-dir]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build}
cuda=${CUDA_HOME:-/usr/local/cuda}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

exports() { # library -> "TYPE NAME" lines of its defined dynamic functions
  nm -D --defined-only "$1" | awk '$2 ~ /^[TW]$/ {sub(/@.*/, "", $3); print $2, $3}' | sort -u -k2
}

report() { # title, ours, nvidia-list-file
  local title=$1 ours=$2 theirs=$3
  exports "$ours" >"$tmp/ours"
  awk '{print $2}' "$tmp/ours" | sort -u >"$tmp/ours.names"
  local total implemented stubs missing
  total=$(wc -l <"$theirs")
  implemented=$(awk '$1 == "T" {print $2}' "$tmp/ours" | sort -u | comm -12 - "$theirs" | wc -l)
  stubs=$(awk '$1 == "W" {print $2}' "$tmp/ours" | sort -u | comm -12 - "$theirs" | wc -l)
  missing=$(comm -13 "$tmp/ours.names" "$theirs" | wc -l)
  printf '%-16s %8s %12s %8s %8s\n' "$title" "$total" "$implemented" "$stubs" "$missing"
  if ((missing > 0)); then
    echo "  missing: $(comm -13 "$tmp/ours.names" "$theirs" | tr '\n' ' ')"
  fi
}

if [[ -f "$cuda/lib64/libcudart.so.13" ]]; then
  exports "$cuda/lib64/libcudart.so.13" | awk '{print $2}' | sort -u >"$tmp/cudart"
  src_rt="$cuda/lib64/libcudart.so.13"
else
  sed -n 's/^WOOLY_CUDART(\(.*\))$/\1/p' capture/CudartExports.def | sort -u >"$tmp/cudart"
  src_rt="capture/CudartExports.def"
fi
if [[ -f "$cuda/lib64/stubs/libcuda.so" ]]; then
  exports "$cuda/lib64/stubs/libcuda.so" | awk '{print $2}' | sort -u >"$tmp/cuda"
  src_drv="$cuda/lib64/stubs/libcuda.so"
else
  sed -n 's/^WOOLY_CU(\(.*\))$/\1/p' capture/CuExports.def | sort -u >"$tmp/cuda"
  src_drv="capture/CuExports.def"
fi

echo "NVIDIA's exports: $src_rt, $src_drv"
printf '%-16s %8s %12s %8s %8s\n' library nvidia implemented stubs missing
report libcudart.so.13 "$build/capture/libcudart.so.13" "$tmp/cudart"
report libcuda.so.1 "$build/capture/libcuda.so.1" "$tmp/cuda"
# The cuBLAS drop-ins, where nvcc built them: LIBRARY DEF-FILE MACRO.
for blas in "libcublas.so.13 CublasExports.def WOOLY_CUBLAS" \
  "libcublasLt.so.13 CublasLtExports.def WOOLY_CUBLASLT"; do
  read -r lib def macro <<<"$blas"
  [[ -f "$build/capture/$lib" ]] || continue
  if [[ -f "$cuda/lib64/$lib" ]]; then
    exports "$cuda/lib64/$lib" | awk '{print $2}' | sort -u >"$tmp/$lib"
  else
    sed -n "s/^$macro(\(.*\))\$/\1/p" "capture/blas/$def" | sort -u >"$tmp/$lib"
  fi
  report "$lib" "$build/capture/$lib" "$tmp/$lib"
done
