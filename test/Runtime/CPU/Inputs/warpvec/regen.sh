#!/usr/bin/env bash
# Regenerates warpvec.sm_80.ptx from warpvec.cu.
# Usage: ./regen.sh            (NVCC=/path/to/nvcc to override the compiler)
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
"$NVCC" -ptx -arch=sm_80 -O3 warpvec.cu -o warpvec.sm_80.ptx
