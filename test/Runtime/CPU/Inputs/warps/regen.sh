#!/usr/bin/env bash
# Regenerates warps.sm_80.ptx from warps.cu.
# Usage: ./regen.sh            (NVCC=/path/to/nvcc to override the compiler)
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
"$NVCC" -ptx -arch=sm_80 -O3 warps.cu -o warps.sm_80.ptx
