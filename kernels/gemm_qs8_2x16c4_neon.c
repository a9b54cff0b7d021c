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

static MLAL_ALWAYS_INLINE int8x16_t mlal_dup4(const int8_t *p, int8x16_t xm) {
  uint32_t u;
  __builtin_memcpy(&u, p, 4);
  return veorq_s8(vreinterpretq_s8_u32(vdupq_n_u32(u)), xm);
}

/* R (1 or 2) rows from rowp[.. + r0], one block of 16 channels at pb; `pair`: smlal two groups. */
static MLAL_ALWAYS_INLINE void mlal_rows(const uint8_t *pb, const uint8_t *const *rowp, int r0,
                                         int nseg, int32_t sg, int8x16_t xm, int32_t *acc,
                                         const int R, const bool pair) {
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
          x0[r] = mlal_dup4(a[r] + 4 * kg, xm);
          x1[r] = mlal_dup4(a[r] + 4 * kg + 4, xm);
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
      for (int r = 0; r < R; r++) x0[r] = mlal_dup4(a[r] + 4 * kg, xm);
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

static void mlal_rows2_pair(const uint8_t *pb, const uint8_t *const *rowp, int r0, int nseg,
                            int32_t sg, int8x16_t xm, int32_t *acc) {
  mlal_rows(pb, rowp, r0, nseg, sg, xm, acc, 2, true);
}
static void mlal_rows1_pair(const uint8_t *pb, const uint8_t *const *rowp, int r0, int nseg,
                            int32_t sg, int8x16_t xm, int32_t *acc) {
  mlal_rows(pb, rowp, r0, nseg, sg, xm, acc, 1, true);
}
static void mlal_rows2(const uint8_t *pb, const uint8_t *const *rowp, int r0, int nseg, int32_t sg,
                       int8x16_t xm, int32_t *acc) {
  mlal_rows(pb, rowp, r0, nseg, sg, xm, acc, 2, false);
}
static void mlal_rows1(const uint8_t *pb, const uint8_t *const *rowp, int r0, int nseg, int32_t sg,
                       int8x16_t xm, int32_t *acc) {
  mlal_rows(pb, rowp, r0, nseg, sg, xm, acc, 1, false);
}

void ar__gemm_qs8_2x16c4_neon(const ar_qgemm_t *g, const uint8_t *packed,
                              const uint8_t *const *rowp, int nseg, int rows, int32_t b0, int nb,
                              int32_t *acc) {
  const int8x16_t xm = vdupq_n_s8((int8_t)(g->a_xor ^ 0x80u));
  const size_t bstride = (size_t)g->k_groups * 64u;
  const int32_t sg = g->k_groups / nseg;
  for (int v = 0; v < nb; v++) {
    const uint8_t *pb = packed + (size_t)(b0 + v) * bstride;
    int32_t *av = acc + 16 * v;
    int r0 = 0;
    if (!g->w_has_min) {
      for (; r0 + 2 <= rows; r0 += 2) mlal_rows2_pair(pb, rowp, r0, nseg, sg, xm, av);
      if (r0 < rows) mlal_rows1_pair(pb, rowp, r0, nseg, sg, xm, av);
    } else {
      for (; r0 + 2 <= rows; r0 += 2) mlal_rows2(pb, rowp, r0, nseg, sg, xm, av);
      if (r0 < rows) mlal_rows1(pb, rowp, r0, nseg, sg, xm, av);
    }
  }
}
#endif /* __aarch64__ */
