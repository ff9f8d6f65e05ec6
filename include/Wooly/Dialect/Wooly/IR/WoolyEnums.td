//===- WoolyEnums.td - Wooly enumerations ------------------*- tablegen -*-===//
//
// The PTX modifiers that Wooly ops carry, as enums printed by name.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_ENUMS_TD
#define WOOLY_ENUMS_TD

include "mlir/IR/EnumAttr.td"

class Wooly_I32Enum<string name, string summary, list<I32EnumAttrCase> cases>
    : I32EnumAttr<name, summary, cases> {
  let cppNamespace = "::mlir::wooly";
}

def Wooly_StateSpace : Wooly_I32Enum<"StateSpace", "PTX state space", [
  I32EnumAttrCase<"generic", 0>, I32EnumAttrCase<"global", 1>,
  I32EnumAttrCase<"shared", 3>, I32EnumAttrCase<"constant", 4, "const">,
  I32EnumAttrCase<"local", 5>, I32EnumAttrCase<"param", 6>,
  I32EnumAttrCase<"shared_cluster", 7>]>;

def Wooly_CacheOp : Wooly_I32Enum<"CacheOp", "PTX cache operator", [
  I32EnumAttrCase<"ca", 0>, I32EnumAttrCase<"cg", 1>, I32EnumAttrCase<"cs", 2>,
  I32EnumAttrCase<"lu", 3>, I32EnumAttrCase<"cv", 4>, I32EnumAttrCase<"wb", 5>,
  I32EnumAttrCase<"wt", 6>, I32EnumAttrCase<"nc", 7>]>;

def Wooly_MemOrder : Wooly_I32Enum<"MemOrder", "PTX memory-ordering semantics", [
  I32EnumAttrCase<"weak", 0>, I32EnumAttrCase<"relaxed", 1>,
  I32EnumAttrCase<"acquire", 2>, I32EnumAttrCase<"release", 3>,
  I32EnumAttrCase<"acq_rel", 4>, I32EnumAttrCase<"sc", 5>]>;

def Wooly_MemScope : Wooly_I32Enum<"MemScope", "PTX memory scope", [
  I32EnumAttrCase<"cta", 0>, I32EnumAttrCase<"cluster", 1>,
  I32EnumAttrCase<"gpu", 2>, I32EnumAttrCase<"sys", 3>]>;

def Wooly_AtomicOp : Wooly_I32Enum<"AtomicOp", "atomic read-modify-write operation", [
  I32EnumAttrCase<"add", 0>, I32EnumAttrCase<"fadd", 1>,
  I32EnumAttrCase<"umin", 2>, I32EnumAttrCase<"smin", 3>, I32EnumAttrCase<"fmin", 4>,
  I32EnumAttrCase<"umax", 5>, I32EnumAttrCase<"smax", 6>, I32EnumAttrCase<"fmax", 7>,
  I32EnumAttrCase<"inc", 8>, I32EnumAttrCase<"dec", 9>, I32EnumAttrCase<"and_", 10, "and">,
  I32EnumAttrCase<"or_", 11, "or">, I32EnumAttrCase<"xor_", 12, "xor">,
  I32EnumAttrCase<"exch", 13>, I32EnumAttrCase<"cas", 14>]>;

def Wooly_RoundingMode : Wooly_I32Enum<"RoundingMode", "PTX rounding modifier", [
  I32EnumAttrCase<"rn", 0>, I32EnumAttrCase<"rz", 1>, I32EnumAttrCase<"rm", 2>,
  I32EnumAttrCase<"rp", 3>, I32EnumAttrCase<"rna", 4>, I32EnumAttrCase<"rs", 5>,
  I32EnumAttrCase<"rni", 8>, I32EnumAttrCase<"rzi", 9>, I32EnumAttrCase<"rmi", 10>,
  I32EnumAttrCase<"rpi", 11>]>;

def Wooly_SpecialReg : Wooly_I32Enum<"SpecialReg", "PTX special register", [
  I32EnumAttrCase<"tid", 0>, I32EnumAttrCase<"ntid", 1>, I32EnumAttrCase<"ctaid", 2>,
  I32EnumAttrCase<"nctaid", 3>, I32EnumAttrCase<"laneid", 4>, I32EnumAttrCase<"warpid", 5>,
  I32EnumAttrCase<"nwarpid", 6>, I32EnumAttrCase<"smid", 7>, I32EnumAttrCase<"nsmid", 8>,
  I32EnumAttrCase<"gridid", 9>, I32EnumAttrCase<"clock", 10>, I32EnumAttrCase<"clock64", 11>,
  I32EnumAttrCase<"globaltimer", 12>, I32EnumAttrCase<"lanemask_eq", 13>,
  I32EnumAttrCase<"lanemask_le", 14>, I32EnumAttrCase<"lanemask_lt", 15>,
  I32EnumAttrCase<"lanemask_ge", 16>, I32EnumAttrCase<"lanemask_gt", 17>,
  I32EnumAttrCase<"dynamic_smem_size", 18>, I32EnumAttrCase<"total_smem_size", 19>,
  I32EnumAttrCase<"warpsize", 20>, I32EnumAttrCase<"clusterid", 21>,
  I32EnumAttrCase<"nclusterid", 22>, I32EnumAttrCase<"cluster_ctaid", 23>,
  I32EnumAttrCase<"cluster_nctaid", 24>, I32EnumAttrCase<"cluster_ctarank", 25>,
  I32EnumAttrCase<"cluster_nctarank", 26>, I32EnumAttrCase<"globaltimer_lo", 27>,
  I32EnumAttrCase<"globaltimer_hi", 28>,
  I32EnumAttrCase<"reserved_smem_offset_begin", 29>,
  I32EnumAttrCase<"reserved_smem_offset_end", 30>,
  I32EnumAttrCase<"reserved_smem_offset_cap", 31>,
  I32EnumAttrCase<"reserved_smem_offset_0", 32>,
  I32EnumAttrCase<"reserved_smem_offset_1", 33>]>;

def Wooly_Dim : Wooly_I32Enum<"Dim", "grid/block dimension", [
  I32EnumAttrCase<"x", 0>, I32EnumAttrCase<"y", 1>, I32EnumAttrCase<"z", 2>]>;

def Wooly_ShflMode : Wooly_I32Enum<"ShflMode", "shfl.sync mode", [
  I32EnumAttrCase<"up", 0>, I32EnumAttrCase<"down", 1>, I32EnumAttrCase<"bfly", 2>,
  I32EnumAttrCase<"idx", 3>]>;

def Wooly_VoteMode : Wooly_I32Enum<"VoteMode", "vote.sync mode", [
  I32EnumAttrCase<"all", 0>, I32EnumAttrCase<"any", 1>, I32EnumAttrCase<"uni", 2>,
  I32EnumAttrCase<"ballot", 3>]>;

def Wooly_MatchMode : Wooly_I32Enum<"MatchMode", "match.sync mode", [
  I32EnumAttrCase<"any", 0>, I32EnumAttrCase<"all", 1>]>;

def Wooly_ReduxKind : Wooly_I32Enum<"ReduxKind", "redux.sync / bar.red operation", [
  I32EnumAttrCase<"add", 0>, I32EnumAttrCase<"umin", 1>, I32EnumAttrCase<"smin", 2>,
  I32EnumAttrCase<"umax", 3>, I32EnumAttrCase<"smax", 4>,
  I32EnumAttrCase<"and_", 5, "and">, I32EnumAttrCase<"or_", 6, "or">,
  I32EnumAttrCase<"xor_", 7, "xor">, I32EnumAttrCase<"popc", 8>]>;

def Wooly_Signedness : Wooly_I32Enum<"Signedness", "integer interpretation", [
  I32EnumAttrCase<"u", 0>, I32EnumAttrCase<"s", 1>]>;

def Wooly_ApproxFn : Wooly_I32Enum<"ApproxFn", "approximate transcendental", [
  I32EnumAttrCase<"sin", 0>, I32EnumAttrCase<"cos", 1>, I32EnumAttrCase<"lg2", 2>,
  I32EnumAttrCase<"ex2", 3>, I32EnumAttrCase<"rsqrt", 4>, I32EnumAttrCase<"tanh", 5>]>;

def Wooly_PrmtMode : Wooly_I32Enum<"PrmtMode", "prmt byte-permute mode", [
  I32EnumAttrCase<"generic", 0>, I32EnumAttrCase<"f4e", 1>, I32EnumAttrCase<"b4e", 2>,
  I32EnumAttrCase<"rc8", 3>, I32EnumAttrCase<"ecl", 4>, I32EnumAttrCase<"ecr", 5>,
  I32EnumAttrCase<"rc16", 6>]>;

def Wooly_ShiftWrap : Wooly_I32Enum<"ShiftWrap", "shift amount handling", [
  I32EnumAttrCase<"clamp", 0>, I32EnumAttrCase<"wrap", 1>]>;

def Wooly_ShiftDir : Wooly_I32Enum<"ShiftDir", "funnel-shift direction", [
  I32EnumAttrCase<"l", 0>, I32EnumAttrCase<"r", 1>]>;

def Wooly_HalfSel : Wooly_I32Enum<"HalfSel", "which half of a product", [
  I32EnumAttrCase<"lo", 0>, I32EnumAttrCase<"hi", 1>]>;

def Wooly_CvtaDir : Wooly_I32Enum<"CvtaDir", "cvta direction", [
  I32EnumAttrCase<"to_generic", 0>, I32EnumAttrCase<"from_generic", 1>]>;

def Wooly_Layout : Wooly_I32Enum<"Layout", "matrix fragment layout", [
  I32EnumAttrCase<"row", 0>, I32EnumAttrCase<"col", 1>]>;

def Wooly_MatrixRole : Wooly_I32Enum<"MatrixRole", "wmma fragment role", [
  I32EnumAttrCase<"a", 0>, I32EnumAttrCase<"b", 1>, I32EnumAttrCase<"c", 2>,
  I32EnumAttrCase<"d", 3>]>;

def Wooly_MbarrierUpdate : Wooly_I32Enum<"MbarrierUpdate", "mbarrier arrive / transaction operation", [
  I32EnumAttrCase<"arrive", 0>, I32EnumAttrCase<"arrive_drop", 1>,
  I32EnumAttrCase<"expect_tx", 2>, I32EnumAttrCase<"complete_tx", 3>,
  I32EnumAttrCase<"cp_async_arrive", 4>,
  I32EnumAttrCase<"cp_async_arrive_noinc", 5>]>;

def Wooly_Linkage : Wooly_I32Enum<"Linkage", "PTX linking directive", [
  I32EnumAttrCase<"internal", 0>, I32EnumAttrCase<"visible", 1>,
  I32EnumAttrCase<"extern_", 2, "extern">, I32EnumAttrCase<"weak", 3>,
  I32EnumAttrCase<"common", 4>]>;

def Wooly_ScalarType : Wooly_I32Enum<"ScalarType", "PTX fundamental type", [
  I32EnumAttrCase<"pred", 0>,
  I32EnumAttrCase<"b8", 1>, I32EnumAttrCase<"b16", 2>, I32EnumAttrCase<"b32", 3>,
  I32EnumAttrCase<"b64", 4>, I32EnumAttrCase<"b128", 5>,
  I32EnumAttrCase<"u8", 6>, I32EnumAttrCase<"u16", 7>, I32EnumAttrCase<"u32", 8>,
  I32EnumAttrCase<"u64", 9>,
  I32EnumAttrCase<"s8", 10>, I32EnumAttrCase<"s16", 11>, I32EnumAttrCase<"s32", 12>,
  I32EnumAttrCase<"s64", 13>,
  I32EnumAttrCase<"f16", 14>, I32EnumAttrCase<"f16x2", 15>, I32EnumAttrCase<"bf16", 16>,
  I32EnumAttrCase<"bf16x2", 17>, I32EnumAttrCase<"tf32", 18>, I32EnumAttrCase<"f32", 19>,
  I32EnumAttrCase<"f64", 20>, I32EnumAttrCase<"e4m3", 21>, I32EnumAttrCase<"e5m2", 22>,
  I32EnumAttrCase<"e4m3x2", 23>, I32EnumAttrCase<"e5m2x2", 24>,
  I32EnumAttrCase<"s4", 25>, I32EnumAttrCase<"u4", 26>, I32EnumAttrCase<"s8x4", 27>,
  I32EnumAttrCase<"u8x4", 28>, I32EnumAttrCase<"b1", 29>]>;

// The logical operation of single-bit mma/wmma (`.xor.popc`, `.and.popc`):
// D = C + popc(op(row of A, column of B)).
def Wooly_MmaBitOp : Wooly_I32Enum<"MmaBitOp", "single-bit mma operation", [
  I32EnumAttrCase<"xor_popc", 0, "xor">, I32EnumAttrCase<"and_popc", 1, "and">]>;

def Wooly_TexGeometry : Wooly_I32Enum<"TexGeometry", "texture or surface geometry", [
  I32EnumAttrCase<"dim1", 0>, I32EnumAttrCase<"dim2", 1>, I32EnumAttrCase<"dim3", 2>,
  I32EnumAttrCase<"a1d", 3>, I32EnumAttrCase<"a2d", 4>, I32EnumAttrCase<"cube", 5>,
  I32EnumAttrCase<"acube", 6>]>;

def Wooly_TexComponent : Wooly_I32Enum<"TexComponent", "tld4 gathered component", [
  I32EnumAttrCase<"r", 0>, I32EnumAttrCase<"g", 1>, I32EnumAttrCase<"b", 2>,
  I32EnumAttrCase<"a", 3>]>;

def Wooly_TexQuery : Wooly_I32Enum<"TexQuery", "txq/suq attribute", [
  I32EnumAttrCase<"width", 0>, I32EnumAttrCase<"height", 1>, I32EnumAttrCase<"depth", 2>,
  I32EnumAttrCase<"channel_data_type", 3>, I32EnumAttrCase<"channel_order", 4>,
  I32EnumAttrCase<"normalized_coords", 5>, I32EnumAttrCase<"filter_mode", 6>,
  I32EnumAttrCase<"addr_mode_0", 7>, I32EnumAttrCase<"addr_mode_1", 8>,
  I32EnumAttrCase<"addr_mode_2", 9>, I32EnumAttrCase<"array_size", 10>,
  I32EnumAttrCase<"num_mipmap_levels", 11>, I32EnumAttrCase<"num_samples", 12>]>;

def Wooly_SurfClamp : Wooly_I32Enum<"SurfClamp", "out-of-range surface access", [
  I32EnumAttrCase<"trap", 0>, I32EnumAttrCase<"clamp", 1>, I32EnumAttrCase<"zero", 2>]>;

#endif // WOOLY_ENUMS_TD
