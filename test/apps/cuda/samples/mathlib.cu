//===- mathlib.cu - A CUDA-samples-style program --------------------------===//
//
// CUDA math library functions against the host's libm, within the maximum
// ulp errors the CUDA Programming Guide documents (0 where it says the
// function is correctly rounded), in float and double, over a sweep that
// includes zeros, negatives, large arguments and denormal-adjacent values.
// Written for Wooly; checks its results against the host and prints PASS
// (exit 0) or FAIL (exit 1).
//
//===----------------------------------------------------------------------===//

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>
#define APP_NAME "sample_mathlib"
#include "../CudaApp.h"

#define FLOAT_FUNCS(X)                                                         \
  X(sinf, 2)                                                                   \
  X(cosf, 2)                                                                   \
  X(tanf, 4)                                                                   \
  X(expf, 2) X(exp2f, 2) X(exp10f, 2) X(expm1f, 1) X(logf, 1) X(log2f, 1)      \
      X(log10f, 2) X(log1pf, 1) X(sqrtf, 0) X(rsqrtf, 2) X(cbrtf, 1)           \
          X(rcbrtf, 1) X(sinhf, 3) X(coshf, 2) X(tanhf, 2) X(asinf, 2)         \
              X(acosf, 2) X(atanf, 2) X(asinhf, 3) X(acoshf, 4) X(atanhf, 3)   \
                  X(erff, 2) X(erfcf, 4) X(tgammaf, 5) X(lgammaf, 6)           \
                      X(floorf, 0) X(ceilf, 0) X(roundf, 0) X(truncf, 0)       \
                          X(logbf, 0) X(sinpif, 1) X(cospif, 1) X(j0f, 9)      \
                              X(y0f, 9) X(erfinvf, 2) X(normcdff, 5)

#define DOUBLE_FUNCS(X)                                                        \
  X(sin, 2)                                                                    \
  X(cos, 2)                                                                    \
  X(tan, 2)                                                                    \
  X(exp, 1) X(exp2, 1) X(exp10, 1) X(expm1, 1) X(log, 1) X(log2, 1)            \
      X(log10, 1) X(log1p, 1) X(sqrt, 0) X(rsqrt, 1) X(cbrt, 1) X(sinh, 2)     \
          X(cosh, 1) X(tanh, 1) X(asin, 2) X(acos, 2) X(atan, 2) X(asinh, 3)   \
              X(acosh, 3) X(atanh, 2) X(erf, 2) X(erfc, 5) X(tgamma, 10)       \
                  X(lgamma, 4) X(floor, 0) X(round, 0) X(sinpi, 1)             \
                      X(erfinv, 5)

#define COUNT(name, ulp) +1
constexpr int NF = 0 FLOAT_FUNCS(COUNT);
constexpr int ND = 0 DOUBLE_FUNCS(COUNT);
constexpr int M = 512;

__global__ void floatKernel(const float *x, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  int k = 0;
#define CALL(name, ulp) out[(k++) * M + i] = name(v);
  FLOAT_FUNCS(CALL)
#undef CALL
}

__global__ void doubleKernel(const double *x, double *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double v = x[i];
  int k = 0;
#define CALL(name, ulp) out[(k++) * M + i] = name(v);
  DOUBLE_FUNCS(CALL)
#undef CALL
}

__global__ void twoArg(const float *x, const double *y, float *fo,
                       double *dout) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float a = x[i], b = x[(i * 7 + 3) % M];
  double c = y[i], d = y[(i * 7 + 3) % M];
  fo[0 * M + i] = atan2f(a, b);
  fo[1 * M + i] = powf(fabsf(a), b * 0.25f);
  fo[2 * M + i] = hypotf(a, b);
  fo[3 * M + i] = fmodf(a, b);
  fo[4 * M + i] = remainderf(a, b);
  fo[5 * M + i] = fdimf(a, b);
  int e = 0;
  fo[6 * M + i] = frexpf(a, &e) + float(e);
  fo[7 * M + i] = ldexpf(a, i % 40 - 20);
  fo[8 * M + i] = nextafterf(a, b);
  fo[9 * M + i] = fmaf(a, b, a);
  dout[0 * M + i] = atan2(c, d);
  dout[1 * M + i] = pow(fabs(c), d * 0.25);
  dout[2 * M + i] = hypot(c, d);
  dout[3 * M + i] = fmod(c, d);
  dout[4 * M + i] = remainder(c, d);
  int q = 0;
  dout[5 * M + i] = remquo(c, d, &q) + double(q & 7);
  dout[6 * M + i] = scalbn(c, i % 60 - 30);
  dout[7 * M + i] = copysign(c, d);
  dout[8 * M + i] = fma(c, d, c);
  dout[9 * M + i] = double(ilogb(c == 0 ? 1.0 : c));
}

/// How many representable values of F lie between a and b (0 for two NaNs,
/// INT64_MAX where only one is NaN or infinite). I: the integer of F's size.
template <typename F, typename I> static int64_t ulpDistance(F a, F b) {
  if (std::isnan(a) && std::isnan(b))
    return 0;
  if (a == b)
    return 0;
  if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b))
    return INT64_MAX;
  I ia, ib;
  std::memcpy(&ia, &a, sizeof(F));
  std::memcpy(&ib, &b, sizeof(F));
  // Sign-magnitude to a monotonic integer line.
  __int128 la = ia < 0 ? __int128(std::numeric_limits<I>::min()) - ia : ia;
  __int128 lb = ib < 0 ? __int128(std::numeric_limits<I>::min()) - ib : ib;
  __int128 d = la > lb ? la - lb : lb - la;
  return d > INT64_MAX ? INT64_MAX : int64_t(d);
}
static int64_t ulpDiff(double a, double b) {
  return ulpDistance<double, int64_t>(a, b);
}
static int64_t ulpDiffF(float a, float b) {
  return ulpDistance<float, int32_t>(a, b);
}

static double hostErfinv(double y) {
  // Newton on erf from a rough start; fine for |y| < 1.
  if (y <= -1)
    return y == -1 ? -INFINITY : NAN;
  if (y >= 1)
    return y == 1 ? INFINITY : NAN;
  double x = 0;
  for (int k = 0; k < 100; ++k) {
    double fx = std::erf(x) - y;
    x -= fx / (2 / std::sqrt(M_PI) * std::exp(-x * x));
  }
  return x;
}
// sin(pi x) and cos(pi x) after an exact reduction of x to [-1, 1]: exact
// zeros at integers (sin) and half-integers (cos), as CUDA's sinpi/cospi.
static double sinpiRef(double x) {
  if (x == std::trunc(x))
    return std::copysign(0.0, x);
  long double r = std::fmod((long double)x, 2.0L);
  return double(sinl(3.14159265358979323846264338327950288L * r));
}
static double cospiRef(double x) {
  long double r = std::fmod(std::fabs((long double)x), 2.0L);
  if (r == 0.5L || r == 1.5L)
    return 0.0;
  return double(cosl(3.14159265358979323846264338327950288L * r));
}

int main() {
  std::vector<float> xf(M);
  std::vector<double> xd(M);
  for (int i = 0; i < M; ++i) {
    double t = (i - M / 2) / double(M / 2); // [-1, 1)
    double v = i % 4 == 0   ? t
               : i % 4 == 1 ? t * 20.0
               : i % 4 == 2 ? std::ldexp(t, 40)
                            : std::ldexp(t, -30);
    if (i == 1)
      v = 0.0;
    if (i == 2)
      v = -0.0;
    if (i == 3)
      v = 1.0;
    if (i == 5)
      v = 0.5;
    xf[i] = float(v);
    xd[i] = v;
  }
  float *dxf, *dof, *dtf;
  double *dxd, *dod, *dtd;
  CHECK(cudaMalloc(&dxf, M * 4));
  CHECK(cudaMalloc(&dxd, M * 8));
  CHECK(cudaMalloc(&dof, NF * M * 4));
  CHECK(cudaMalloc(&dod, ND * M * 8));
  CHECK(cudaMalloc(&dtf, 10 * M * 4));
  CHECK(cudaMalloc(&dtd, 10 * M * 8));
  CHECK(cudaMemcpy(dxf, xf.data(), M * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dxd, xd.data(), M * 8, cudaMemcpyHostToDevice));
  floatKernel<<<M / 128, 128>>>(dxf, dof);
  doubleKernel<<<M / 128, 128>>>(dxd, dod);
  twoArg<<<M / 128, 128>>>(dxf, dxd, dtf, dtd);
  CHECK(cudaGetLastError());
  std::vector<float> of(NF * M), tf(10 * M);
  std::vector<double> od(ND * M), td(10 * M);
  CHECK(cudaMemcpy(of.data(), dof, NF * M * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(od.data(), dod, ND * M * 8, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(tf.data(), dtf, 10 * M * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(td.data(), dtd, 10 * M * 8, cudaMemcpyDeviceToHost));
  int bad = 0;
  auto report = [&](const char *name, int i, double x, double got, double want,
                    int64_t ulps, int64_t limit) {
    if (bad++ < 25)
      std::printf("%s(%.17g) = %.17g, host %.17g (%lld ulp > %lld)\n", name, x,
                  got, want, (long long)ulps, (long long)limit);
  };
  // Host references in long double, rounded to the type.
  auto refF = [](const char *n, float v) -> double {
    long double x = v;
#define R(name, expr)                                                          \
  if (!std::strcmp(n, #name))                                                  \
    return double(float(expr));
    R(sinf, sinl(x))
    R(cosf, cosl(x))
    R(tanf, tanl(x))
    R(expf, expl(x)) R(exp2f, exp2l(x)) R(exp10f, powl(10.0L, x))
        R(expm1f, expm1l(x)) R(logf, logl(x)) R(log2f, log2l(x)) R(
            log10f, log10l(x)) R(log1pf, log1pl(x)) R(sqrtf, sqrtl(x))
            R(rsqrtf, 1.0L / sqrtl(x)) R(cbrtf, cbrtl(x)) R(
                rcbrtf, 1.0L / cbrtl(x)) R(sinhf, sinhl(x)) R(coshf, coshl(x))
                R(tanhf, tanhl(x)) R(asinf, asinl(x)) R(acosf, acosl(x)) R(
                    atanf, atanl(x)) R(asinhf, asinhl(x)) R(acoshf, acoshl(x))
                    R(atanhf, atanhl(x)) R(erff, erfl(x)) R(erfcf, erfcl(x))
                        R(tgammaf, tgammal(x)) R(lgammaf, lgammal(x)) R(
                            floorf, floorl(x)) R(ceilf, ceill(x))
                            R(roundf, roundl(x)) R(truncf, truncl(x)) R(
                                logbf, logbl(x)) R(sinpif, sinpiRef(double(x)))
                                R(cospif, cospiRef(double(x)))
                                    R(j0f, j0(double(x))) R(y0f, y0(double(x)))
                                        R(erfinvf, hostErfinv(double(x)))
                                            R(normcdff,
                                              0.5L * erfcl(-x / sqrtl(2.0L)))
#undef R
                                                return NAN;
  };
  auto refD = [](const char *n, double v) -> double {
    long double x = v;
#define R(name, expr)                                                          \
  if (!std::strcmp(n, #name))                                                  \
    return double(expr);
    R(sin, sinl(x))
    R(cos, cosl(x))
    R(tan, tanl(x))
    R(exp, expl(x)) R(exp2, exp2l(x)) R(exp10, powl(10.0L, x))
        R(expm1, expm1l(x)) R(log, logl(x)) R(log2, log2l(x))
            R(log10, log10l(x)) R(log1p, log1pl(x)) R(sqrt, sqrtl(x))
                R(rsqrt, 1.0L / sqrtl(x)) R(cbrt, cbrtl(x)) R(sinh, sinhl(x))
                    R(cosh, coshl(x)) R(tanh, tanhl(x)) R(asin, asinl(x))
                        R(acos, acosl(x)) R(atan, atanl(x)) R(asinh, asinhl(x))
                            R(acosh, acoshl(x)) R(atanh, atanhl(x))
                                R(erf, erfl(x)) R(erfc, erfcl(x))
                                    R(tgamma, tgammal(x)) R(lgamma, lgammal(x))
                                        R(floor, floorl(x)) R(round, roundl(x))
                                            R(sinpi, sinpiRef(v))
                                                R(erfinv, hostErfinv(v))
#undef R
                                                    return NAN;
  };
  {
    int k = 0;
#define CHECKF(name, ulp)                                                      \
  for (int i = 0; i < M; ++i) {                                                \
    float x = xf[i];                                                           \
    if (std::fabs(x) > 1e5f &&                                                 \
        (!std::strcmp(#name, "sinf") || !std::strcmp(#name, "cosf") ||         \
         !std::strcmp(#name, "tanf") || !std::strcmp(#name, "sinpif") ||       \
         !std::strcmp(#name, "cospif")))                                       \
      continue;                                                                \
    if (!std::strcmp(#name, "lgammaf") && x <= 0)                              \
      continue;                                                                \
    if (!std::strcmp(#name, "tgammaf") && x < 0)                               \
      continue;                                                                \
    if ((!std::strcmp(#name, "j0f") || !std::strcmp(#name, "y0f")) &&          \
        std::fabs(x) > 8)                                                      \
      continue;                                                                \
    float got = of[k * M + i];                                                 \
    double want = refF(#name, x);                                              \
    int64_t d = ulpDiffF(got, float(want));                                    \
    if (d > (ulp))                                                             \
      report(#name, i, x, got, want, d, ulp);                                  \
  }                                                                            \
  ++k;
    FLOAT_FUNCS(CHECKF)
#undef CHECKF
  }
  {
    int k = 0;
#define CHECKD(name, ulp)                                                      \
  for (int i = 0; i < M; ++i) {                                                \
    double x = xd[i];                                                          \
    if (std::fabs(x) > 1e5 &&                                                  \
        (!std::strcmp(#name, "sin") || !std::strcmp(#name, "cos") ||           \
         !std::strcmp(#name, "tan") || !std::strcmp(#name, "sinpi")))          \
      continue;                                                                \
    if (!std::strcmp(#name, "lgamma") && x <= 0)                               \
      continue;                                                                \
    if (!std::strcmp(#name, "tgamma") && x < 0)                                \
      continue;                                                                \
    double got = od[k * M + i];                                                \
    double want = refD(#name, x);                                              \
    int64_t d = ulpDiff(got, want);                                            \
    if (d > (ulp))                                                             \
      report(#name, i, x, got, want, d, ulp);                                  \
  }                                                                            \
  ++k;
    DOUBLE_FUNCS(CHECKD)
#undef CHECKD
  }
  for (int i = 0; i < M; ++i) {
    float a = xf[i], b = xf[(i * 7 + 3) % M];
    double c = xd[i], d = xd[(i * 7 + 3) % M];
    int e = 0;
    float fr = std::frexp(a, &e) + float(e);
    int q = 0;
    double rq = std::remquo(c, d, &q) + double(q & 7);
    struct {
      const char *n;
      double got, want;
      int64_t ulp;
      bool isF;
    } t[] = {
        {"atan2f", tf[0 * M + i],
         double(float(std::atan2((long double)a, (long double)b))), 3, true},
        {"powf", tf[1 * M + i],
         double(
             float(powl(std::fabs((long double)a), (long double)(b * 0.25f)))),
         4, true},
        {"hypotf", tf[2 * M + i], double(float(hypotl(a, b))), 3, true},
        {"fmodf", tf[3 * M + i], std::fmod(a, b), 0, true},
        {"remainderf", tf[4 * M + i], std::remainder(a, b), 0, true},
        {"fdimf", tf[5 * M + i], std::fdim(a, b), 0, true},
        {"frexpf", tf[6 * M + i], fr, 0, true},
        {"ldexpf", tf[7 * M + i], std::ldexp(a, i % 40 - 20), 0, true},
        {"nextafterf", tf[8 * M + i], std::nextafter(a, b), 0, true},
        {"fmaf", tf[9 * M + i], std::fma(a, b, a), 0, true},
        {"atan2", td[0 * M + i], double(atan2l(c, d)), 2, false},
        {"pow", td[1 * M + i], double(powl(fabsl(c), (long double)(d * 0.25))),
         2, false},
        {"hypot", td[2 * M + i], double(hypotl(c, d)), 2, false},
        {"fmod", td[3 * M + i], std::fmod(c, d), 0, false},
        {"remainder", td[4 * M + i], std::remainder(c, d), 0, false},
        {"remquo", td[5 * M + i], rq, 0, false},
        {"scalbn", td[6 * M + i], std::scalbn(c, i % 60 - 30), 0, false},
        {"copysign", td[7 * M + i], std::copysign(c, d), 0, false},
        {"fma", td[8 * M + i], std::fma(c, d, c), 0, false},
        {"ilogb", td[9 * M + i], double(std::ilogb(c == 0 ? 1.0 : c)), 0,
         false},
    };
    for (auto &r : t) {
      int64_t u = r.isF ? ulpDiffF(float(r.got), float(r.want))
                        : ulpDiff(r.got, r.want);
      if (u > r.ulp)
        report(r.n, i, r.isF ? double(a) : c, r.got, r.want, u, r.ulp);
    }
  }
  std::printf("mathlib: %d float and %d double functions on %d arguments, %d "
              "out of bounds\n",
              NF, ND, M, bad);
  EXPECT(bad == 0, "%d results out of their documented ulp bounds", bad);
  app::pass();
  return 0;
}
