//===- FloatHelpers.h - Float helpers of the CPU backend --------*- C++ -*-===//
//
// Functions that code produced by `wooly-expand-arith` calls where the host
// has no instruction with PTX's semantics: arithmetic with a directed
// rounding mode (`.rz`, `.rm`, `.rp`), conversions to f16/bf16/fp8 and from
// 64-bit integers with any rounding mode, and f16/bf16 fused multiply-add.
// Every result is correctly rounded (bit-exact with a GPU). NaN results are
// PTX's canonical NaN for the destination format.
//
// 16- and 8-bit floating-point values are passed and returned as the low
// bits of a uint32_t so that no caller depends on the C ABI's extension of
// narrow integers. Plain C++ without LLVM types: the runtime links it
// without LLVM, and the JIT binds each helper by name (forEachFloatHelper).
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_RUNTIME_CPU_FLOATHELPERS_H
#define WOOLY_RUNTIME_CPU_FLOATHELPERS_H

#include <cstddef>
#include <cstdint>

// The helpers, one X-macro line each: X(name, return type, parameter types).
// R(M) expands M once per directed rounding mode; RA(M) once per mode
// including round-to-nearest-even.
#define WOOLY_FLOAT_HELPERS_FOR_MODE(X, m)                                     \
  X(__wooly_fadd_##m##_f32, float, (float, float))                             \
  X(__wooly_fsub_##m##_f32, float, (float, float))                             \
  X(__wooly_fmul_##m##_f32, float, (float, float))                             \
  X(__wooly_fdiv_##m##_f32, float, (float, float))                             \
  X(__wooly_fma_##m##_f32, float, (float, float, float))                       \
  X(__wooly_fsqrt_##m##_f32, float, (float))                                   \
  X(__wooly_frcp_##m##_f32, float, (float))                                    \
  X(__wooly_fadd_##m##_f64, double, (double, double))                          \
  X(__wooly_fsub_##m##_f64, double, (double, double))                          \
  X(__wooly_fmul_##m##_f64, double, (double, double))                          \
  X(__wooly_fdiv_##m##_f64, double, (double, double))                          \
  X(__wooly_fma_##m##_f64, double, (double, double, double))                   \
  X(__wooly_fsqrt_##m##_f64, double, (double))                                 \
  X(__wooly_frcp_##m##_f64, double, (double))

#define WOOLY_FLOAT_HELPERS_ANY_MODE(X, m)                                     \
  X(__wooly_fma_##m##_f16, uint32_t, (uint32_t, uint32_t, uint32_t))           \
  X(__wooly_fma_##m##_bf16, uint32_t, (uint32_t, uint32_t, uint32_t))          \
  X(__wooly_cvt_f64_f32_##m, float, (double))                                  \
  X(__wooly_cvt_f64_f16_##m, uint32_t, (double))                               \
  X(__wooly_cvt_f64_bf16_##m, uint32_t, (double))                              \
  X(__wooly_cvt_s64_f16_##m, uint32_t, (int64_t))                              \
  X(__wooly_cvt_u64_f16_##m, uint32_t, (uint64_t))                             \
  X(__wooly_cvt_s64_bf16_##m, uint32_t, (int64_t))                             \
  X(__wooly_cvt_u64_bf16_##m, uint32_t, (uint64_t))                            \
  X(__wooly_cvt_s64_f32_##m, float, (int64_t))                                 \
  X(__wooly_cvt_u64_f32_##m, float, (uint64_t))                                \
  X(__wooly_cvt_s64_f64_##m, double, (int64_t))                                \
  X(__wooly_cvt_u64_f64_##m, double, (uint64_t))

#define WOOLY_FLOAT_HELPERS(X)                                                 \
  WOOLY_FLOAT_HELPERS_FOR_MODE(X, rz)                                          \
  WOOLY_FLOAT_HELPERS_FOR_MODE(X, rm)                                          \
  WOOLY_FLOAT_HELPERS_FOR_MODE(X, rp)                                          \
  WOOLY_FLOAT_HELPERS_ANY_MODE(X, rn)                                          \
  WOOLY_FLOAT_HELPERS_ANY_MODE(X, rz)                                          \
  WOOLY_FLOAT_HELPERS_ANY_MODE(X, rm)                                          \
  WOOLY_FLOAT_HELPERS_ANY_MODE(X, rp)                                          \
  X(__wooly_cvt_f64_e4m3_rn_satfinite, uint32_t, (double))                     \
  X(__wooly_cvt_f64_e5m2_rn_satfinite, uint32_t, (double))                     \
  X(__wooly_cvt_e4m3_f16, uint32_t, (uint32_t))                                \
  X(__wooly_cvt_e5m2_f16, uint32_t, (uint32_t))

extern "C" {
#define WOOLY_DECLARE_FLOAT_HELPER(name, ret, params) ret name params;
WOOLY_FLOAT_HELPERS(WOOLY_DECLARE_FLOAT_HELPER)
#undef WOOLY_DECLARE_FLOAT_HELPER
}

namespace wooly::cpu {

/// One runtime helper: its symbol name and its address.
struct FloatHelper {
  const char *name;
  void *address;
};

/// Returns the table of every float helper; `count` receives its length.
const FloatHelper *getFloatHelpers(size_t &count);

/// Calls `fn(name, address)` for every float helper, e.g. to bind them in a
/// JIT (`fn` may take `llvm::StringRef` for the name).
template <typename Fn> void forEachFloatHelper(Fn &&fn) {
  size_t count = 0;
  const FloatHelper *helpers = getFloatHelpers(count);
  for (size_t i = 0; i < count; ++i)
    fn(helpers[i].name, helpers[i].address);
}

} // namespace wooly::cpu

#endif // WOOLY_RUNTIME_CPU_FLOATHELPERS_H
