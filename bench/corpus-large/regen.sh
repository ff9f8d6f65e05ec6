#!/usr/bin/env bash
# Regenerate every NAME.sm_90.ptx in this directory from NAME.cu.
# Usage: ./regen.sh            (NVCC=/path/to/nvcc to override the compiler)
# Files are compiled one at a time (each takes a few seconds).
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}

for cu in *.cu; do
  X=${cu%.cu}
  echo "nvcc $X.cu -> $X.sm_90.ptx"
  "$NVCC" -arch=sm_90 -ptx -O3 -o "$X.sm_90.ptx" "$X.cu"
done
