/* requant_neon.h - internal to the kernels layer: TFLite's two int32 -> int32 rescales
 * (kernels/ar_quant.h: ar_mbqm and ar_mbqm_up) on four ASIMD lanes, bit for bit.
 *
 * Both start with gemmlowp's SaturatingRoundingDoublingHighMul, which is `sqrdmulh`:
 * sat((2 x m + 2^31) >> 32) = floor((x m + 2^30) / 2^31), saturating only for x = m = INT32_MIN as
 * gemmlowp does. The right shift by r = max(-shift, 0):
 *   ar_mbqm_up  ties toward +infinity, (v + 2^(r-1)) >> r, which is `srshl` by -r;
 *   ar_mbqm     ties away from zero: srshl after subtracting 1 from negative v when r > 0 (only a
 *               negative tie moves, down; v = INT32_MIN saturates and still gives INT32_MIN >> r).
 * The left shift (shift > 0) is `sshl` in 32 bits: it wraps as ar_mbqm's does; ar_mbqm_up shifts
 * in 64 bits, so its callers check that x << left did not overflow (ar_neon_shl_exact), which a
 * valid model never does, and take the scalar form otherwise.
 */
#ifndef AR_REQUANT_NEON_H
#define AR_REQUANT_NEON_H

#if defined(__aarch64__)
#include <arm_neon.h>
#include <stdbool.h>

/* left = max(shift, 0), rneg = min(shift, 0) for each lane. */
static inline int32x4_t ar_neon_left(int32x4_t shift) { return vmaxq_s32(shift, vdupq_n_s32(0)); }
static inline int32x4_t ar_neon_rneg(int32x4_t shift) { return vminq_s32(shift, vdupq_n_s32(0)); }

/* ar_mbqm_up(x, m, shift) per lane, given x << left did not overflow. */
static inline int32x4_t ar_neon_mbqm_up(int32x4_t x, int32x4_t m, int32x4_t left, int32x4_t rneg) {
  return vrshlq_s32(vqrdmulhq_s32(vshlq_s32(x, left), m), rneg);
}

/* ar_mbqm_up for lanes whose shift is <= 0 (left 0). */
static inline int32x4_t ar_neon_mbqm_up_r(int32x4_t x, int32x4_t m, int32x4_t rneg) {
  return vrshlq_s32(vqrdmulhq_s32(x, m), rneg);
}

/* ar_mbqm(x, m, shift) per lane (the 32-bit wrapping left shift included). */
static inline int32x4_t ar_neon_mbqm(int32x4_t x, int32x4_t m, int32x4_t left, int32x4_t rneg) {
  int32x4_t v = vqrdmulhq_s32(vshlq_s32(x, left), m);
  v = vqaddq_s32(v, vshrq_n_s32(vandq_s32(v, rneg), 31));
  return vrshlq_s32(v, rneg);
}

/* Whether x << left keeps every lane's value (ar_mbqm_up's 64-bit shift equals the 32-bit one). */
static inline bool ar_neon_shl_exact(int32x4_t x, int32x4_t left) {
  const int32x4_t back = vshlq_s32(vshlq_s32(x, left), vnegq_s32(left));
  return vminvq_u32(vceqq_s32(back, x)) == 0xFFFFFFFFu;
}
#endif /* __aarch64__ */

#endif /* AR_REQUANT_NEON_H */
