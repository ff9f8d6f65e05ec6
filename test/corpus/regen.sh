#!/usr/bin/env bash
# Regenerate all PTX files in this directory from the .cu sources.
# Usage: ./regen.sh            (NVCC=/path/to/nvcc to override the compiler)
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}

for cu in *.cu; do
  X=${cu%.cu}
  "$NVCC" -ptx -arch=sm_80 -O3 "$X.cu" -o "$X.sm_80.ptx"
  "$NVCC" -ptx -arch=sm_90 -O3 "$X.cu" -o "$X.sm_90.ptx"
  # PTX for a newer GPU than Wooly compiles for (`.target sm_120`), which
  # Wooly retargets to sm_90/sm_80.
  "$NVCC" -ptx -arch=compute_120 -O3 "$X.cu" -o "$X.sm_120.ptx"
done

# Fast-math variants (expf/rsqrtf/div lowered to approximate instructions, FTZ).
for X in softmax layernorm; do
  "$NVCC" -ptx -arch=sm_80 -O3 --use_fast_math "$X.cu" -o "${X}_fastmath.sm_80.ptx"
  "$NVCC" -ptx -arch=sm_90 -O3 --use_fast_math "$X.cu" -o "${X}_fastmath.sm_90.ptx"
  "$NVCC" -ptx -arch=compute_120 -O3 --use_fast_math "$X.cu" -o "${X}_fastmath.sm_120.ptx"
done
