; A stand-in for ROCm's ocml.bc: defines the one function the test kernel
; calls, reading an oclc control variable as the real library does.
@__oclc_daz_opt = external addrspace(4) constant i8

define float @__ocml_tanh_f32(float %x) {
  %d = load i8, ptr addrspace(4) @__oclc_daz_opt
  %f = uitofp i8 %d to float
  %r = fadd float %x, %f
  ret float %r
}
