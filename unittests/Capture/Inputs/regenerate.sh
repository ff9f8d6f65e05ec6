#!/usr/bin/env bash
# Regenerates the fatbin reader's test inputs from kernels.cu with the CUDA 13
# toolkit (no GPU or driver needed). See README.md for what each file is.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

CUDA=${CUDA:-/usr/local/cuda}
NVCC="$CUDA/bin/nvcc"
FATBINARY="$CUDA/bin/fatbinary"
ARCH=sm_75

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$NVCC" --version | tail -2

# The PTX that nvcc puts in the fatbins below (fatbinary drops its comments
# and blank runs; FatbinTest.cpp does the same before comparing).
"$NVCC" -ptx -arch=$ARCH kernels.cu -o kernels.ptx

# One fatbin per compression mode: ELF sm_75 + PTX compute_75.
"$NVCC" -fatbin -arch=$ARCH kernels.cu -o kernels.default.fatbin
"$NVCC" -fatbin -arch=$ARCH -compress-mode=speed kernels.cu -o kernels.speed.fatbin
"$NVCC" -fatbin -arch=$ARCH -compress-mode=size kernels.cu -o kernels.size.fatbin
"$NVCC" -fatbin -arch=$ARCH -compress-mode=none kernels.cu -o kernels.none.fatbin

# -rdc: the per-object fatbin (relocatable ELF + PTX) that a version-2 wrapper
# lists in filename_or_fatbins, and the device-linked fatbin (ELF only) that
# is its data.
"$NVCC" -fatbin -arch=$ARCH -rdc=true kernels.cu -o kernels.rdc.fatbin
"$NVCC" -c -arch=$ARCH -rdc=true kernels.cu -o "$tmp/kernels.o"
"$NVCC" -dlink -fatbin -arch=$ARCH "$tmp/kernels.o" -o kernels.linked.fatbin

# Entries with an identifier and recorded ptxas options (PTX first).
"$NVCC" -cubin -arch=$ARCH kernels.cu -o "$tmp/kernels.cubin"
"$FATBINARY" --create=kernels.ident.fatbin -64 --ident=myident.cu \
  --cmdline="-O3 -v" --image3=kind=ptx,sm=75,file=kernels.ptx \
  --image3=kind=elf,sm=75,file="$tmp/kernels.cubin"

# LTO IR only (entry kind 8).
"$NVCC" -fatbin -gencode arch=compute_75,code=lto_75 kernels.cu \
  -o kernels.lto.fatbin

ls -l kernels.ptx ./*.fatbin
