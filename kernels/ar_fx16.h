/* ar_fx16.h - gemmlowp's 16-bit fixed-point arithmetic (Q(k).(15-k): raw int16, k integer bits),
 * scalar, as TFLite's int16 kernels use it: the doubling high multiply with gemmlowp's rounding, the
 * rounding / saturating power-of-two scalings, exp on negative values, 1 / (1 + x), and the
 * logistic and tanh built from them (Q(k) in, Q0.15 out); and, on int32, the saturating left
 * shift and TFLite's GetInvSqrtQuantizedMultiplierExp (Q3.28 Newton-Raphson). Shared by the
 * integer LSTM (kernels/lstm_int.c: its gates, its layer norm) and the int16 LOGISTIC / TANH on
 * power-of-two input scales and the int8 RSQRT (kernels/qact.c); TFLite's SSE4 int16 lanes
 * (vpmulhrsw, saturating adds) give the same values as the scalar code here.
 */
#ifndef AR_FX16_H
#define AR_FX16_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/ar_quant.h"

static inline int16_t ar_fx16_srdhm(int16_t a, int16_t b) {
  if (a == INT16_MIN && b == INT16_MIN) return INT16_MAX;
  int32_t ab = (int32_t)a * (int32_t)b;
  int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return (int16_t)((ab + nudge) / (1 << 15));
}

static inline int16_t ar_fx16_rdivpot(int16_t x, int e) { return (int16_t)ar_rdivpot(x, e); }

/* x * 2^e, saturating for e > 0, rounding for e < 0. */
static inline int16_t ar_fx16_mulpot(int16_t x, int e) {
  if (e == 0) return x;
  if (e < 0) return ar_fx16_rdivpot(x, -e);
  const int32_t threshold = (1 << (15 - e)) - 1;
  if (x > threshold) return INT16_MAX;
  if (x < -threshold) return INT16_MIN;
  return (int16_t)(x * (1 << e));
}

/* A 32-bit fixed-point constant (gemmlowp writes them so) rounded to 16 bits. */
static inline int16_t ar_fx16_const(int32_t c32) { return (int16_t)ar_rdivpot(c32, 16); }

static inline int16_t ar_fx16_add(int32_t a, int32_t b) { return (int16_t)(a + b); }   /* wraps */
static inline int16_t ar_fx16_sat_add(int16_t a, int16_t b) {
  int32_t s = (int32_t)a + b;
  return (int16_t)(s > INT16_MAX ? INT16_MAX : s < INT16_MIN ? INT16_MIN : s);
}

/* exp(a) for a in [-1/4, 0), Q0.15. */
static inline int16_t ar_fx16_exp_quarter(int16_t a) {
  const int16_t constant_term = ar_fx16_const(1895147668), one_third = ar_fx16_const(715827883);
  int16_t x = ar_fx16_add(a, 1 << 12);                  /* a + 1/8 */
  int16_t x2 = ar_fx16_srdhm(x, x), x3 = ar_fx16_srdhm(x2, x), x4 = ar_fx16_srdhm(x2, x2);
  int16_t x4_4 = ar_fx16_mulpot(x4, -2);
  int16_t poly = ar_fx16_mulpot(ar_fx16_add(ar_fx16_srdhm(ar_fx16_add(x4_4, x3), one_third), x2), -1);
  return ar_fx16_sat_add(constant_term, ar_fx16_srdhm(constant_term, ar_fx16_add(x, poly)));
}

/* exp(a) for a <= 0 in Q(k), result Q0.15. */
static inline int16_t ar_fx16_exp_negative(int16_t a, int k) {
  const int frac = 15 - k;
  const int16_t quarter = (int16_t)(1 << (frac - 2));
  const int16_t mask = (int16_t)(quarter - 1);
  const int16_t amq = ar_fx16_add(a & mask, -quarter);
  int16_t result = ar_fx16_exp_quarter(ar_fx16_mulpot(amq, k));
  const int16_t remainder = ar_fx16_add(amq, -a);
  static const int32_t mult[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
  for (int e = -2; e <= 4; e++)
    if (k > e && (remainder & (1 << (frac + e)))) result = ar_fx16_srdhm(result, ar_fx16_const(mult[e + 2]));
  if (k > 5 && a < ar_fx16_const(-(1 << (36 - k)))) result = 0;
  if (a == 0) result = INT16_MAX;
  return result;
}

/* Newton-Raphson 1 / (1 + x) (or (1 - x) / (1 + x)) for x in (0, 1), Q0.15. */
static inline int16_t ar_fx16_nr_divide(int16_t a, bool one_minus) {
  int32_t s = (int32_t)a + INT16_MAX;
  int16_t half_denominator = (int16_t)((s + (s >= 0 ? 1 : -1)) / 2);
  const int16_t c48_17 = ar_fx16_const(1515870810), cneg32_17 = ar_fx16_const(-1010580540);
  int16_t x = ar_fx16_add(c48_17, ar_fx16_srdhm(half_denominator, cneg32_17));    /* Q2.13 */
  for (int i = 0; i < 3; i++) {
    int16_t hdx = ar_fx16_srdhm(half_denominator, x);
    int16_t one_minus_hdx = ar_fx16_add(1 << 13, -hdx);
    x = ar_fx16_add(x, ar_fx16_mulpot(ar_fx16_srdhm(x, one_minus_hdx), 2));
  }
  if (one_minus) return ar_fx16_mulpot(ar_fx16_add(x, -(1 << 13)), 2);
  return ar_fx16_mulpot(x, 1);   /* x / 2 as Q1.14, rescaled to Q0.15 */
}

/* gemmlowp::logistic on Q(k) -> Q0.15. */
static inline int16_t ar_fx16_logistic(int16_t a, int k) {
  if (a == 0) return ar_fx16_const(1 << 30);
  int16_t abs_a = a > 0 ? a : (int16_t)-a;
  int16_t pos = ar_fx16_nr_divide(ar_fx16_exp_negative((int16_t)-abs_a, k), false);
  return a > 0 ? pos : ar_fx16_add(INT16_MAX, -pos);
}

/* gemmlowp::tanh on Q(k) -> Q0.15. */
static inline int16_t ar_fx16_tanh(int16_t a, int k) {
  if (a == 0) return 0;
  int16_t n = a < 0 ? a : (int16_t)-a;
  int16_t t = ar_fx16_nr_divide(ar_fx16_exp_negative(n, k + 1), true);
  return a < 0 ? (int16_t)-t : t;
}

/* ---- 32-bit helpers of the same arithmetic ---- */

/* gemmlowp SaturatingRoundingMultiplyByPOT<e> for e > 0 on int32. */
static inline int32_t ar_sat_mulpot32(int32_t x, int e) {
  const int32_t threshold = (int32_t)((1u << (31 - e)) - 1u);
  if (x > threshold) return INT32_MAX;
  if (x < -threshold) return INT32_MIN;
  return (int32_t)((uint32_t)x << e);
}

/* TFLite's GetInvSqrtQuantizedMultiplierExp with reverse_shift -1: 1 / sqrt(v) as a multiplier
 * and a shift for ar_mbqm (the integer LSTM's layer norm, kernels/lstm_int.c; the int8 RSQRT,
 * kernels/qact.c). */
static inline void ar_inv_sqrt_multiplier(int32_t v, int32_t *m, int *shift) {
  if (v <= 1) {
    *m = INT32_MAX;
    *shift = 0;
    return;
  }
  int sh = 11;
  while (v >= (1 << 29)) {
    v /= 4;
    sh++;
  }
  const int pairs = (__builtin_clz((uint32_t)v) - 1) / 2 - 1;
  sh -= pairs;
  v = (int32_t)((uint32_t)v << (2 * pairs));
  /* Newton-Raphson on Q3.28 from x = 1: x = 1.5 x - (v / 2) x^3. */
  const int32_t half_v = ar_rdivpot(v >> 1, 1), three_halves = (1 << 28) + (1 << 27);
  int32_t x = 1 << 28;
  for (int i = 0; i < 5; i++) {
    const int32_t x3 = ar_sat_mulpot32(ar_srdhm(ar_srdhm(x, x), x), 6);
    const int32_t d = (int32_t)((uint32_t)ar_srdhm(three_halves, x) - (uint32_t)ar_srdhm(half_v, x3));
    x = ar_sat_mulpot32(d, 3);
  }
  x = ar_srdhm(x, 1518500250);   /* sqrt(2) / 2 in Q0.31 */
  if (sh < 0) {
    x = (int32_t)((uint32_t)x << -sh);
    sh = 0;
  }
  *m = x;
  *shift = -sh;
}

#endif /* AR_FX16_H */
