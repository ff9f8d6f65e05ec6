#!/bin/sh
# fake-device-libs.sh LLVM_AS DIR: writes a stand-in for ROCm's device-library
# directory (amdgcn/bitcode) to DIR for gfx942: ocml.bc defines
# __ocml_tanh_f32 (Inputs/fake-ocml.ll), oclc_daz_opt_off.bc the control
# variable it reads, and the other oclc control libraries the compile API
# links are empty modules. Enough to compile and link, not to run.
set -e
as="$1"
dir="$2"
inputs="$(dirname "$0")"
mkdir -p "$dir"
"$as" "$inputs/fake-ocml.ll" -o "$dir/ocml.bc"
"$as" "$inputs/fake-oclc-daz-opt-off.ll" -o "$dir/oclc_daz_opt_off.bc"
for lib in isa_version_942 abi_version_500 unsafe_math_off finite_only_off \
           correctly_rounded_sqrt_on; do
  "$as" /dev/null -o "$dir/oclc_$lib.bc"
done
