#!/usr/bin/env bash
# Regenerate the PTX of this directory from llmc.cu (sm_90, as nvcc -O3
# writes it). Usage: ./regen.sh   (NVCC=/path/to/nvcc to override)
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
"$NVCC" -ptx -arch=sm_90 -O3 llmc.cu -o llmc.sm_90.ptx
