// RUN: not wooly-translate --target=gfx942 %s -o %t.none 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: rm -rf %t.libs && sh %S/Inputs/fake-device-libs.sh llvm-as %t.libs
// RUN: wooly-translate --target=gfx942 --rocm-device-libs=%t.libs %s -o %t.hsaco
// RUN: llvm-readelf -s %t.hsaco | FileCheck %s
// RUN: env WOOLY_ROCM_DEVICE_LIBS=%t.libs wooly-translate --target=gfx942 %s -o %t.env.hsaco
// RUN: llvm-readelf -s %t.env.hsaco | FileCheck %s
// RUN: rm %t.libs/oclc_isa_version_942.bc
// RUN: not wooly-translate --target=gfx942 --rocm-device-libs=%t.libs %s -o %t.bad 2>&1 | FileCheck %s --check-prefix=NO-ISA
// REQUIRES: ld.lld

// A kernel that calls ROCm's device library (ocml) needs its directory; the
// library is linked in and internalized, so the code object exports only the
// kernel. The input is already lowered by hand (with the attributes the
// lowering leaves for the compile API), so the test does not depend on
// which PTX instructions the lowering maps to ocml.

// MISSING: device-libs.mlir: kernel needs the ROCm device library (ocml: __ocml_tanh_f32): pass --rocm-device-libs=DIR (e.g. /opt/rocm/amdgcn/bitcode)

// CHECK: k.kd
// CHECK-NOT: __ocml_tanh_f32

// NO-ISA: has no oclc_isa_version_942.bc

module {
  llvm.func @__ocml_tanh_f32(f32) -> f32
  llvm.func @k(%out: !llvm.ptr<1>, %x: f32) attributes {
      rocdl.kernel, wooly.kernel = "k",
      wooly.param_offsets = array<i64: 0, 8>,
      wooly.param_sizes = array<i64: 8, 4>} {
    %y = llvm.call @__ocml_tanh_f32(%x) : (f32) -> f32
    llvm.store %y, %out : f32, !llvm.ptr<1>
    llvm.return
  }
}
