; A stand-in for ROCm's oclc_daz_opt_off.bc.
@__oclc_daz_opt = linkonce_odr protected addrspace(4) constant i8 0
