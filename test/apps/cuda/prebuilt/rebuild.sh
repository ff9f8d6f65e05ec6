#!/usr/bin/env bash
# Rebuilds the prebuilt copies of two CUDA test programs, for machines without
# the CUDA toolkit: nvcc's default architecture, the shared runtime, -O2,
# stripped. Run it after changing vector_add.cu, reduce.cu or CudaApp.h, and
# update README.md here if the nvcc version changed. NVCC overrides the
# compiler (default: /usr/local/cuda/bin/nvcc).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
"$NVCC" --version | tail -n 2
for app in vector_add reduce; do
  (set -x; "$NVCC" -O2 -cudart shared "$app.cu" -o "prebuilt/$app")
  (set -x; strip "prebuilt/$app")
done
ls -l prebuilt/vector_add prebuilt/reduce
