/* gemm_qs8_2x16c4_neon.c - the 8-bit GEMM's tile on arm64 with plain ASIMD (Cortex-A53/A72: no dot
 * product), picked at run time by kernels/qgemm.c. kernels/gemm_qs8_neon.h has the contract.
 *
 * A packed group's 16-byte quarter is 4 channels x 4 taps; the row's 4 activation bytes of that
 * group, repeated 4 times in a register (ld1r), line up with it, so `smull` gives 8 exact int16
 * products (channels 0-1 of the quarter, `smull2` channels 2-3) and `sadalp` adds them in pairs
 * into int32 lanes [c0 taps 0+1, c0 taps 2+3, c1 .., c1 ..]; a closing `addp` joins the halves.
 * When B holds no -128 (g->w_has_min false: every int8 model, whose weights TFLite keeps in
 * [-127, 127]) |a_s * w| <= 128 * 127, so `smlal` can add the next group's products into the same
 * int16 lanes first (2 * 16256 < 32768): 3 instructions per 32 multiply-adds instead of 4 per 16.
 * Otherwise each group goes to sadalp alone. 2 rows x 16 channels: 16 accumulators.
 */
#if defined(__aarch64__)
#include "kernels/gemm_qs8_neon.h"

#include <arm_neon.h>

#define MLAL_ALWAYS_INLINE inline __attribute__((always_inline))
/* GCC's scheduler before register allocation hoists every product of the unrolled loop and then
 * spills accumulators (5 of 16 reloaded and stored each iteration); without it the loop keeps
 * them all in registers. */
#pragma GCC optimize("no-schedule-insns")

/* The 4 bytes at p in every 32-bit lane (ld1r: arm64 loads need no alignment), as a_s. */
static MLAL_ALWAYS_INLINE int8x16_t mlal_dup4(const int8_t *p, int8x16_t xm, bool flip) {
  const int8x16_t x = vreinterpretq_s8_u32(vld1q_dup_u32((const uint32_t *)(const void *)p));
  return flip ? veorq_s8(x, xm) : x;
}

/* R (1 or 2) rows from rowp[.. + r0], one block of 16 channels at pb; `pair`: smlal two groups;
 * `flip`: uint8 activations (a_s = a ^ 0x80; int8 ones are a_s already). */
static MLAL_ALWAYS_INLINE void mlal_rows(const uint8_t *pb, const uint8_t *const *rowp, int r0,
                                         int nseg, int32_t sg, int8x16_t xm, int32_t *acc,
                                         const int R, const bool pair, const bool flip) {
  int32x4_t c[2][8];
  for (int r = 0; r < R; r++)
    for (int i = 0; i < 8; i++) c[r][i] = vdupq_n_s32(0);
  const int8_t *p = (const int8_t *)pb;
  for (int q = 0; q < nseg; q++) {
    const int8_t *a[2];
    for (int r = 0; r < R; r++) a[r] = (const int8_t *)rowp[q * AR_QGEMM_TILE_ROWS + r0 + r];
    int32_t kg = 0;
    if (pair) {
      for (; kg + 2 <= sg; kg += 2, p += 128) {
        int8x16_t x0[2], x1[2];
        for (int r = 0; r < R; r++) {
          x0[r] = mlal_dup4(a[r] + 4 * kg, xm, flip);
          x1[r] = mlal_dup4(a[r] + 4 * kg + 4, xm, flip);
        }
        for (int cq = 0; cq < 4; cq++) {
          const int8x16_t w0 = vld1q_s8(p + 16 * cq), w1 = vld1q_s8(p + 64 + 16 * cq);
          for (int r = 0; r < R; r++) {
            int16x8_t lo = vmull_s8(vget_low_s8(w0), vget_low_s8(x0[r]));
            int16x8_t hi = vmull_high_s8(w0, x0[r]);
            lo = vmlal_s8(lo, vget_low_s8(w1), vget_low_s8(x1[r]));
            hi = vmlal_high_s8(hi, w1, x1[r]);
            c[r][2 * cq] = vpadalq_s16(c[r][2 * cq], lo);
            c[r][2 * cq + 1] = vpadalq_s16(c[r][2 * cq + 1], hi);
          }
        }
      }
    }
    for (; kg < sg; kg++, p += 64) {
      int8x16_t x0[2];
      for (int r = 0; r < R; r++) x0[r] = mlal_dup4(a[r] + 4 * kg, xm, flip);
      for (int cq = 0; cq < 4; cq++) {
        const int8x16_t w0 = vld1q_s8(p + 16 * cq);
        for (int r = 0; r < R; r++) {
          c[r][2 * cq] = vpadalq_s16(c[r][2 * cq], vmull_s8(vget_low_s8(w0), vget_low_s8(x0[r])));
          c[r][2 * cq + 1] = vpadalq_s16(c[r][2 * cq + 1], vmull_high_s8(w0, x0[r]));
        }
      }
    }
  }
  for (int r = 0; r < R; r++)
    for (int cq = 0; cq < 4; cq++)
      vst1q_s32(acc + (r0 + r) * AR_QGEMM_TILE_COLS + 4 * cq,
                vpaddq_s32(c[r][2 * cq], c[r][2 * cq + 1]));
}

#define MLAL_VARIANT(R, P, F)                                                                   \
  static void mlal_rows##R##_##P##F(const uint8_t *pb, const uint8_t *const *rowp, int r0,        \
                                    int nseg, int32_t sg, int8x16_t xm, int32_t *acc) {           \
    mlal_rows(pb, rowp, r0, nseg, sg, xm, acc, R, P, F);                                          \
  }
MLAL_VARIANT(2, 1, 0)
MLAL_VARIANT(1, 1, 0)
MLAL_VARIANT(2, 0, 0)
MLAL_VARIANT(1, 0, 0)
MLAL_VARIANT(2, 1, 1)
MLAL_VARIANT(1, 1, 1)
MLAL_VARIANT(2, 0, 1)
MLAL_VARIANT(1, 0, 1)
#undef MLAL_VARIANT

typedef void (*mlal_fn)(const uint8_t *, const uint8_t *const *, int, int, int32_t, int8x16_t,
                        int32_t *);

void ar__gemm_qs8_2x16c4_neon(const ar_qgemm_t *g, const uint8_t *packed,
                              const uint8_t *const *rowp, int nseg, int rows, int32_t b0, int nb,
                              int32_t *acc) {
  const int8x16_t xm = vdupq_n_s8((int8_t)(g->a_xor ^ 0x80u));
  const size_t bstride = (size_t)g->k_groups * 64u;
  const int32_t sg = g->k_groups / nseg;
  const bool pair = !g->w_has_min, flip = !g->a_xor;
  const mlal_fn two = pair ? (flip ? mlal_rows2_11 : mlal_rows2_10) : (flip ? mlal_rows2_01 : mlal_rows2_00);
  const mlal_fn one = pair ? (flip ? mlal_rows1_11 : mlal_rows1_10) : (flip ? mlal_rows1_01 : mlal_rows1_00);
  for (int v = 0; v < nb; v++) {
    const uint8_t *pb = packed + (size_t)(b0 + v) * bstride;
    int32_t *av = acc + 16 * v;
    int r0 = 0;
    for (; r0 + 2 <= rows; r0 += 2) two(pb, rowp, r0, nseg, sg, xm, av);
    if (r0 < rows) one(pb, rowp, r0, nseg, sg, xm, av);
  }
}
#endif /* __aarch64__ */
