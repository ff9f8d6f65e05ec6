#!/usr/bin/env bash
# Regenerates the PTX of the benchmark's own kernels from cpu-bench.cu and
# scan-breakdown.cu (bench/scan-breakdown.sh).
# Usage: ./regen.sh            (NVCC=/path/to/nvcc to override the compiler)
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
"$NVCC" -ptx -arch=sm_80 -O3 cpu-bench.cu -o cpu-bench.sm_80.ptx
"$NVCC" -ptx -arch=sm_80 -O3 scan-breakdown.cu -o scan-breakdown.sm_80.ptx
