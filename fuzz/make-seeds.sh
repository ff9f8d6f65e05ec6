#!/usr/bin/env bash
# Regenerates the seed corpus of the fuzz targets (fuzz/README.md):
#  - corpus/protocol: wooly-fuzz-seeds (make-seeds.cpp), built in BUILD_DIR
#    (default: build, which must be configured);
#  - corpus/fatbin: seeds/tiny.cu through nvcc -fatbin, one fatbin per
#    compression mode and arch mix, and two fatbins back to back (a
#    .nv_fatbin section); needs the CUDA toolkit (CUDA, default
#    /usr/local/cuda), but no GPU;
#  - corpus/ptx: a few small real PTX files of test/corpus and of ZLUDA's
#    conformance suite (../shared/conformance/zluda).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
CUDA=${CUDA:-/usr/local/cuda}
ZLUDA=../shared/conformance/zluda/ptx

ninja -C "$BUILD_DIR" wooly-fuzz-seeds
rm -rf fuzz/corpus/protocol
mkdir -p fuzz/corpus/protocol
"$BUILD_DIR/bin/wooly-fuzz-seeds" fuzz/corpus/protocol

out=fuzz/corpus/fatbin
rm -rf "$out"
mkdir -p "$out"
nvcc() { "$CUDA/bin/nvcc" -fatbin fuzz/seeds/tiny.cu "$@"; }
nvcc -arch=sm_75 -o "$out/sm75.fatbin"
nvcc -arch=sm_75 -Xfatbin -compress-all -o "$out/sm75-compress-all.fatbin"
nvcc -arch=sm_75 -compress-mode=speed -o "$out/sm75-lz4.fatbin"
nvcc -arch=sm_75 -compress-mode=none -o "$out/sm75-none.fatbin"
nvcc -arch=sm_75 -rdc=true -o "$out/sm75-rdc.fatbin"
nvcc -gencode arch=compute_75,code=compute_75 -compress-mode=none \
  -o "$out/ptx-only.fatbin"
nvcc -gencode arch=compute_75,code=compute_75 \
  -gencode arch=compute_90a,code=compute_90a \
  -gencode arch=compute_100f,code=compute_100f -o "$out/ptx-archs.fatbin"
cat "$out/sm75-none.fatbin" "$out/ptx-only.fatbin" >"$out/section.bin"

out=fuzz/corpus/ptx
rm -rf "$out"
mkdir -p "$out"
cp test/corpus/histogram.sm_80.ptx test/corpus/dynshared.sm_80.ptx \
  test/corpus/localmem.sm_80.ptx "$out/"
for t in call vector atom_add shfl_sync_down_b32_pred func_ptr cvt_pack; do
  cp "$ZLUDA/$t.ptx" "$out/zluda-$t.ptx"
done
du -sh fuzz/corpus/*
