#!/usr/bin/env bash
# Links portable copies of the runtime tools (wooly-run, wooly-conformance,
# wooly-serve, wooly-pacing-bench): LLVM, MLIR and the C++ runtime linked in
# statically, so that they run on a GPU host that has the NVIDIA driver but
# no LLVM 22 (e.g. a lent GPU machine that gets only a copy of the working
# tree). The other shared libraries they need (ZeroMQ, Protobuf, yaml-cpp,
# ... and theirs) are copied into OUT_DIR/lib, with capture's
# libcudart.so.13, libcuda.so.1 (and libcublas.so.13, libcublasLt.so.13) into
# OUT_DIR/capture: run the tools with LD_LIBRARY_PATH=OUT_DIR/lib, and CUDA
# programs through capture with
# LD_LIBRARY_PATH=OUT_DIR/capture:OUT_DIR/lib (never the server: it needs
# the real libcuda.so.1). The regular build
# links libLLVM.so/libMLIR.so; this script reuses its object files and only
# repeats the final link, with the shared libraries replaced by LLVM's and
# MLIR's static archives (one linker group: the linker takes only what the
# tools use, and --gc-sections drops the rest).
#
# Usage: scripts/build-portable.sh [OUT_DIR]   (default: $BUILD_DIR/portable)
# Needs a configured and built $BUILD_DIR (default: build); prints each
# binary's size.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
OUT_DIR=$(realpath -m "${1:-$BUILD_DIR/portable}")
LLVM_LIB=/usr/lib/llvm-22/lib
# TOOLS="..." in the environment links other tools (e.g. the benchmarks
# wooly-cpu-bench, wooly-nvptx-bench, wooly-import-bench).
read -r -a TOOLS <<<"${TOOLS:-wooly-run wooly-conformance wooly-serve wooly-pacing-bench}"

ninja -C "$BUILD_DIR" "${TOOLS[@]/#/bin/}" wooly-capture >/dev/null
mkdir -p "$OUT_DIR/lib" "$OUT_DIR/capture"

# The static archives, without the ones that are test or tool support (they
# define symbols twice, e.g. gtest, or main()).
archives=()
for a in "$LLVM_LIB"/libMLIR*.a "$LLVM_LIB"/libLLVM*.a; do
  case "$(basename "$a")" in
  *Test* | *CAPI* | *Main.a | *Lsp* | *Reduce* | *TableGen* | *Exegesis* | \
    *Fuzz* | libLLVMgtest*) continue ;;
  esac
  archives+=("$a")
done

for tool in "${TOOLS[@]}"; do
  # The regular link command, with the shared libraries swapped for the
  # archive group.
  cmd=$(ninja -C "$BUILD_DIR" -t commands "bin/$tool" | tail -1)
  cmd=${cmd#*&& }
  cmd=${cmd%%&& :*}
  read -r -a words <<<"$cmd"
  link=()
  for w in "${words[@]}"; do
    case "$w" in
    */libMLIR.so* | */libLLVM.so* | -Wl,-rpath,*) ;;
    -o) link+=("$w") ;;
    bin/"$tool") link+=("$OUT_DIR/$tool") ;;
    *) link+=("$w") ;;
    esac
  done
  (cd "$BUILD_DIR" && "${link[@]}" -Wl,--start-group "${archives[@]}" \
    -Wl,--end-group -l:libz.a /usr/lib/x86_64-linux-gnu/libzstd.so.1 -lpthread -ldl -static-libstdc++ \
    -static-libgcc -Wl,--gc-sections -Wl,-s)
  echo "portable: $OUT_DIR/$tool ($(du -h "$OUT_DIR/$tool" | cut -f1))"
done

# The shared libraries left (not the C library's, the C++ runtime's or the
# driver's: the GPU host has its own).
copyDeps() {
  ldd "$1" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | \
      libstdc++.so* | libgcc_s.so* | libcuda.so* | libcudart.so* | libLLVM* | \
      libMLIR*) ;;
    *) cp -L -n "$lib" "$OUT_DIR/lib/" ;;
    esac
  done
}
for tool in "${TOOLS[@]}"; do
  copyDeps "$OUT_DIR/$tool"
done
for lib in "$BUILD_DIR"/capture/libcudart.so.13 "$BUILD_DIR"/capture/libcuda.so.1 \
  "$BUILD_DIR"/capture/libcublas.so.13 "$BUILD_DIR"/capture/libcublasLt.so.13; do
  [[ -f $lib ]] || continue # cuBLAS and cuBLASLt: built only where nvcc is
  cp -L "$lib" "$OUT_DIR/capture/"
  copyDeps "$lib"
done
echo "portable: $OUT_DIR/lib ($(du -sh "$OUT_DIR/lib" | cut -f1), $(ls "$OUT_DIR/lib" | wc -l) libraries)"
