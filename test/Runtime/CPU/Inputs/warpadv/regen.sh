#!/usr/bin/env bash
# Regenerates warpadv.sm_80.ptx from warpadv.cu.
# Usage: ./regen.sh            (NVCC=/path/to/nvcc to override the compiler)
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
"$NVCC" -ptx -arch=sm_80 -O3 warpadv.cu -o warpadv.sm_80.ptx
