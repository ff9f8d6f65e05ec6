#!/usr/bin/env bash
# Installs the Debian 12 packages that Wooly needs, only those not installed yet.
# Runs as root, or through sudo otherwise. Idempotent: does nothing (and does
# not touch the network) when everything is present. WOOLY_SKIP_DEPS=1 skips it.
set -euo pipefail

packages=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 lld-22
  libclang-rt-22-dev
  cmake ninja-build ccache pkg-config python3 git
  libzmq3-dev cppzmq-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libbenchmark-dev
  libyaml-cpp-dev libcpp-httplib-dev libsodium-dev prometheus
  libzstd-dev liblz4-dev
)

if [[ "${WOOLY_SKIP_DEPS:-0}" == 1 ]]; then
  exit 0
fi

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
  echo "install-deps: not a Debian system; install these yourself: ${packages[*]}" >&2
  exit 0
fi

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=()
if ((EUID != 0)); then
  if ! command -v sudo >/dev/null; then
    echo "install-deps: missing packages (${missing[*]}); run as root or install sudo" >&2
    exit 1
  fi
  sudo=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
