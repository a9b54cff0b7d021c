/* gemm_qs8_4x16c4_neondot.c - the 8-bit GEMM's tile on arm64 with the dot-product extension
 * (ARMv8.2 ASIMDDP: Cortex-A55, A76 and later), picked at run time by kernels/qgemm.c from
 * getauxval(AT_HWCAP); this file alone is compiled for +dotprod (the pragma below), so nothing of it
 * runs on a CPU without it. kernels/gemm_qs8_neon.h has the contract.
 *
 * One packed group is 16 channels x 4 taps, channel-major (kernels/qgemm.h), which is exactly what
 * `sdot vd.4s, vn.16b, vm.4b[j]` wants: four sdot on the group's four 16-byte quarters add the
 * 4 taps of 16 channels times the 4 activation bytes in lane j of vm. Sixteen bytes of a row (4
 * groups) are loaded at once and their lanes used in turn; 4 rows x 16 channels keep 16
 * accumulators, 4 weight and 4 activation registers.
 */
#if defined(__aarch64__)
#pragma GCC target("arch=armv8.2-a+dotprod")

#include "kernels/gemm_qs8_neon.h"

#include <arm_neon.h>

#define DOT_ALWAYS_INLINE inline __attribute__((always_inline))
/* GCC's scheduler before register allocation hoists all 16 weight loads of the unrolled loop and
 * spills accumulators to make room; without it the loop keeps them in registers. */
#pragma GCC optimize("no-schedule-insns")

/* R (1, 2 or 4) rows from rowp[.. + r0], one block of 16 channels at pb; `flip`: uint8
 * activations (a_s = a ^ 0x80; int8 ones are a_s already). */
static DOT_ALWAYS_INLINE void dot_rows(const uint8_t *pb, const uint8_t *const *rowp, int r0,
                                       int nseg, int32_t sg, int8x16_t xm, int32_t *acc,
                                       const int R, const bool flip) {
  int32x4_t c[4][4];
  for (int r = 0; r < R; r++)
    for (int i = 0; i < 4; i++) c[r][i] = vdupq_n_s32(0);
  const int8_t *p = (const int8_t *)pb;
  for (int q = 0; q < nseg; q++) {
    const int8_t *a[4];
    for (int r = 0; r < R; r++) a[r] = (const int8_t *)rowp[q * AR_QGEMM_TILE_ROWS + r0 + r];
    int32_t kg = 0;
    for (; kg + 4 <= sg; kg += 4, p += 256) {
      int8x16_t x[4];
      for (int r = 0; r < R; r++) {
        x[r] = vld1q_s8(a[r] + 4 * kg);
        if (flip) x[r] = veorq_s8(x[r], xm);
      }
#define DOT_STEP(j)                                                                     \
      do {                                                                              \
        const int8x16_t w0 = vld1q_s8(p + 64 * (j)), w1 = vld1q_s8(p + 64 * (j) + 16);  \
        const int8x16_t w2 = vld1q_s8(p + 64 * (j) + 32), w3 = vld1q_s8(p + 64 * (j) + 48); \
        for (int r = 0; r < R; r++) {                                                   \
          c[r][0] = vdotq_laneq_s32(c[r][0], w0, x[r], j);                              \
          c[r][1] = vdotq_laneq_s32(c[r][1], w1, x[r], j);                              \
          c[r][2] = vdotq_laneq_s32(c[r][2], w2, x[r], j);                              \
          c[r][3] = vdotq_laneq_s32(c[r][3], w3, x[r], j);                              \
        }                                                                               \
      } while (0)
      DOT_STEP(0);
      DOT_STEP(1);
      DOT_STEP(2);
      DOT_STEP(3);
    }
    for (; kg < sg; kg++, p += 64) {
      int8x16_t x[4];
      for (int r = 0; r < R; r++) {
        uint32_t u;
        __builtin_memcpy(&u, a[r] + 4 * kg, 4);
        x[r] = vreinterpretq_s8_u32(vdupq_n_u32(u));
        if (flip) x[r] = veorq_s8(x[r], xm);
      }
      DOT_STEP(0);
    }
#undef DOT_STEP
  }
  for (int r = 0; r < R; r++)
    for (int i = 0; i < 4; i++) vst1q_s32(acc + (r0 + r) * AR_QGEMM_TILE_COLS + 4 * i, c[r][i]);
}

#define DOT_VARIANT(R, F)                                                                       \
  static void dot_rows##R##_##F(const uint8_t *pb, const uint8_t *const *rowp, int r0, int nseg,  \
                                int32_t sg, int8x16_t xm, int32_t *acc) {                         \
    dot_rows(pb, rowp, r0, nseg, sg, xm, acc, R, F);                                              \
  }
DOT_VARIANT(4, 0)
DOT_VARIANT(2, 0)
DOT_VARIANT(1, 0)
DOT_VARIANT(4, 1)
DOT_VARIANT(2, 1)
DOT_VARIANT(1, 1)
#undef DOT_VARIANT

void ar__gemm_qs8_4x16c4_neondot(const ar_qgemm_t *g, const uint8_t *packed,
                                 const uint8_t *const *rowp, int nseg, int rows, int32_t b0, int nb,
                                 int32_t *acc) {
  /* a_s = a ^ a_xor ^ 0x80: the stored byte itself for int8 activations */
  const int8x16_t xm = vdupq_n_s8((int8_t)(g->a_xor ^ 0x80u));
  const size_t bstride = (size_t)g->k_groups * 64u;
  const int32_t sg = g->k_groups / nseg;
  for (int v = 0; v < nb; v++) {
    const uint8_t *pb = packed + (size_t)(b0 + v) * bstride;
    int32_t *av = acc + 16 * v;
    int r0 = 0;
    if (g->a_xor) {   /* int8 */
      for (; rows - r0 >= 3; r0 += 4) dot_rows4_0(pb, rowp, r0, nseg, sg, xm, av);
      if (rows - r0 == 2) dot_rows2_0(pb, rowp, r0, nseg, sg, xm, av);
      else if (rows - r0 == 1) dot_rows1_0(pb, rowp, r0, nseg, sg, xm, av);
    } else {
      for (; rows - r0 >= 3; r0 += 4) dot_rows4_1(pb, rowp, r0, nseg, sg, xm, av);
      if (rows - r0 == 2) dot_rows2_1(pb, rowp, r0, nseg, sg, xm, av);
      else if (rows - r0 == 1) dot_rows1_1(pb, rowp, r0, nseg, sg, xm, av);
    }
  }
}
#endif /* __aarch64__ */
