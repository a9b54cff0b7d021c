/* gemm_f32_8x8_neon.c - C = act(A x B^T + bias) on aarch64 Advanced SIMD: 8 x 8 micro-tiles of
 * fmla by element, B packed (float16 widened while packing), bias and clamp in the epilogue
 * (kernels/gemm_f32_neon.h states the order of operations).
 *
 * Blocking: rows of C in chunks of MC, columns in panels of 8 (two q registers), K in chunks of
 * KC. Each (row chunk, panel, K chunk) packs its panel of B k-major, 8 floats per k (4 x 4
 * register transposes, zeros past N) into 8 KB on the stack, a quarter of the Cortex-A72 / A76
 * L1D. A tile is 8 rows x 8 columns in 16 accumulators; A is read in place, one q register of 4
 * consecutive k per row (8 registers), and each of those lanes multiplies the two vectors of the
 * packed panel at that k: per 4 k, 8 loads of A, 2 four-register loads of B and 64 fmla (0.29
 * instructions per multiply-add before loop overhead), 16 + 8 + 4 of the 32 vector registers.
 * Packing A instead (a 12 x 8 or 8 x 12 tile with A as 2-3 vectors per k) saves about one load
 * per 12 fmla but costs about one instruction per element of A each time it is packed; on the
 * 16..128-channel 1x1 layers of the float models that is a wash, and the 8-column panel keeps no
 * dead lanes on their power-of-two channel counts (a 12-column one computes 16 as 24).
 * The first K chunk starts from zero, later ones from C; the last adds the bias, applies the
 * clamp and stores. Rows past a multiple of 8 take one tile of their height (1..7); columns past
 * a multiple of 8 a panel whose lanes past N are computed on zeros and not stored. */
#include "kernels/gemm_f32_neon.h"

#include <string.h>

#include "common/ar_util.h"
#include "kernels/conv_util.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#define N8_MC 128
#define N8_KC 256
#define N8_NR 8
#define N8_INLINE static inline __attribute__((always_inline))

typedef struct {
  float bias[N8_NR];   /* the panel's bias, zeros past N (or all zeros) */
  int64_t nr;          /* columns inside N (1..8) */
  bool first, last, clamp;
  float lo, hi;
} n8_panel_t;

/* MR rows x 8 columns of C from `a` (MR rows, lda) and the packed panel (kc x 8). */
N8_INLINE void n8_tile(const float *a, int64_t lda, const float *bp, int64_t kc, float *c,
                       int64_t ldc, const n8_panel_t *p, const int MR) {
  float32x4_t acc[8][2];
  const bool full = p->nr == N8_NR;
  if (p->first) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = vdupq_n_f32(0.0f);
  } else {
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      if (full) {
        acc[i][0] = vld1q_f32(c + i * ldc);
        acc[i][1] = vld1q_f32(c + i * ldc + 4);
      } else {
        float t[N8_NR] = {0};
        memcpy(t, c + i * ldc, (size_t)p->nr * sizeof *t);
        acc[i][0] = vld1q_f32(t);
        acc[i][1] = vld1q_f32(t + 4);
      }
    }
  }
  int64_t kk = 0;
  for (; kk + 4 <= kc; kk += 4) {
    float32x4_t av[8];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) av[i] = vld1q_f32(a + i * lda + kk);
    const float32x4x4_t b01 = vld1q_f32_x4(bp + kk * N8_NR);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      acc[i][0] = vfmaq_laneq_f32(acc[i][0], b01.val[0], av[i], 0);
      acc[i][1] = vfmaq_laneq_f32(acc[i][1], b01.val[1], av[i], 0);
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      acc[i][0] = vfmaq_laneq_f32(acc[i][0], b01.val[2], av[i], 1);
      acc[i][1] = vfmaq_laneq_f32(acc[i][1], b01.val[3], av[i], 1);
    }
    const float32x4x4_t b23 = vld1q_f32_x4(bp + kk * N8_NR + 16);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      acc[i][0] = vfmaq_laneq_f32(acc[i][0], b23.val[0], av[i], 2);
      acc[i][1] = vfmaq_laneq_f32(acc[i][1], b23.val[1], av[i], 2);
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      acc[i][0] = vfmaq_laneq_f32(acc[i][0], b23.val[2], av[i], 3);
      acc[i][1] = vfmaq_laneq_f32(acc[i][1], b23.val[3], av[i], 3);
    }
  }
  for (; kk < kc; kk++) {
    const float32x4x2_t bv = vld1q_f32_x2(bp + kk * N8_NR);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      const float x = a[i * lda + kk];
      acc[i][0] = vfmaq_n_f32(acc[i][0], bv.val[0], x);
      acc[i][1] = vfmaq_n_f32(acc[i][1], bv.val[1], x);
    }
  }
  if (p->last) {
    const float32x4_t b0 = vld1q_f32(p->bias), b1 = vld1q_f32(p->bias + 4);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      acc[i][0] = vaddq_f32(acc[i][0], b0);
      acc[i][1] = vaddq_f32(acc[i][1], b1);
    }
    if (p->clamp) {   /* max with lo, then min with hi (the x86 kernels' order) */
      const float32x4_t lo = vdupq_n_f32(p->lo), hi = vdupq_n_f32(p->hi);
#pragma GCC unroll 8
      for (int i = 0; i < MR; i++) {
        acc[i][0] = vminq_f32(vmaxq_f32(acc[i][0], lo), hi);
        acc[i][1] = vminq_f32(vmaxq_f32(acc[i][1], lo), hi);
      }
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++) {
    if (full) {
      vst1q_f32(c + i * ldc, acc[i][0]);
      vst1q_f32(c + i * ldc + 4, acc[i][1]);
    } else {
      float t[N8_NR];
      vst1q_f32(t, acc[i][0]);
      vst1q_f32(t + 4, acc[i][1]);
      memcpy(c + i * ldc, t, (size_t)p->nr * sizeof *t);
    }
  }
}

/* The rows of one (row chunk, panel, K chunk) block: tiles of 8, then one of the rest (1..7).
 * Out of line: one copy of the tiles for the float32 and float16 paths. */
__attribute__((noinline, optimize("no-schedule-insns"))) static void n8_rows(const float *a, int64_t lda, const float *bp,
                                              int64_t kc, float *c, int64_t ldc, int64_t mr,
                                              const n8_panel_t *p) {
  int64_t i = 0;
  for (; i + 8 <= mr; i += 8) n8_tile(a + i * lda, lda, bp, kc, c + i * ldc, ldc, p, 8);
  a += i * lda;
  c += i * ldc;
  switch (mr - i) {
#define N8_TAIL(R) case R: n8_tile(a, lda, bp, kc, c, ldc, p, R); break;
  N8_TAIL(1) N8_TAIL(2) N8_TAIL(3) N8_TAIL(4) N8_TAIL(5) N8_TAIL(6) N8_TAIL(7)
#undef N8_TAIL
  default: break;
  }
}

/* Row j (of the 8 of a panel) of B at k, 4 values widened to float (zeros past kn and past nr). */
N8_INLINE float32x4_t n8_load_b(const void *b, int64_t ldb, int64_t nr, int64_t j, int64_t k,
                                int64_t kn, const bool F16) {
  if (j >= nr) return vdupq_n_f32(0.0f);
  if (F16) {
    const uint16_t *q = (const uint16_t *)b + j * ldb + k;
    uint16x4_t h;
    if (kn >= 4) {
      h = vld1_u16(q);
    } else {
      uint16_t t[4] = {0};
      memcpy(t, q, (size_t)kn * sizeof *t);
      h = vld1_u16(t);
    }
    return vcvt_f32_f16(vreinterpret_f16_u16(h));
  }
  const float *q = (const float *)b + j * ldb + k;
  if (kn >= 4) return vld1q_f32(q);
  float t[4] = {0};
  memcpy(t, q, (size_t)kn * sizeof *t);
  return vld1q_f32(t);
}

/* Pack B[0 .. nr, 0 .. kc) (rows of ldb elements; F16: float16 widened) k-major into bp: 8 floats
 * per k, zeros past nr. */
N8_INLINE void n8_pack(const void *b, int64_t ldb, int64_t nr, int64_t kc, float *bp,
                       const bool F16) {
  for (int64_t kb = 0; kb < kc; kb += 4) {
    const int64_t kn = AR_MIN((int64_t)4, kc - kb);
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
      const float32x4_t r0 = n8_load_b(b, ldb, nr, 4 * h, kb, kn, F16);
      const float32x4_t r1 = n8_load_b(b, ldb, nr, 4 * h + 1, kb, kn, F16);
      const float32x4_t r2 = n8_load_b(b, ldb, nr, 4 * h + 2, kb, kn, F16);
      const float32x4_t r3 = n8_load_b(b, ldb, nr, 4 * h + 3, kb, kn, F16);
      const float32x4_t t0 = vtrn1q_f32(r0, r1), t1 = vtrn2q_f32(r0, r1);
      const float32x4_t t2 = vtrn1q_f32(r2, r3), t3 = vtrn2q_f32(r2, r3);
      float32x4_t col[4];
      col[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
      col[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
      col[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
      col[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
      for (int64_t kk = 0; kk < kn; kk++) vst1q_f32(bp + (kb + kk) * N8_NR + 4 * h, col[kk]);
    }
  }
}

N8_INLINE void n8_run(const float *a, int64_t lda, const void *b, int64_t ldb, const float *bias,
                      float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, bool clamp,
                      float lo, float hi, const bool F16) {
  const size_t esz = F16 ? sizeof(uint16_t) : sizeof(float);
  float bp[N8_KC * N8_NR] __attribute__((aligned(64)));
  for (int64_t m0 = 0; m0 < m; m0 += N8_MC) {
    const int64_t mr = AR_MIN((int64_t)N8_MC, m - m0);
    for (int64_t n0 = 0; n0 < n; n0 += N8_NR) {
      n8_panel_t p = {.nr = AR_MIN((int64_t)N8_NR, n - n0), .clamp = clamp, .lo = lo, .hi = hi};
      memset(p.bias, 0, sizeof p.bias);
      if (bias) memcpy(p.bias, bias + n0, (size_t)p.nr * sizeof *bias);
      for (int64_t k0 = 0; k0 < k; k0 += N8_KC) {
        const int64_t kc = AR_MIN((int64_t)N8_KC, k - k0);
        n8_pack((const char *)b + (size_t)(n0 * ldb + k0) * esz, ldb, p.nr, kc, bp, F16);
        p.first = k0 == 0;
        p.last = k0 + kc == k;
        n8_rows(a + m0 * lda + k0, lda, bp, kc, c + m0 * ldc + n0, ldc, mr, &p);
      }
      if (k <= 0) {   /* no terms: bias (or 0), activation */
        p.first = p.last = true;
        n8_rows(a, lda, bp, 0, c + m0 * ldc + n0, ldc, mr, &p);
      }
    }
  }
}

static void n8_run_f32(const float *a, int64_t lda, const float *b, int64_t ldb, const float *bias,
                       float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, bool clamp,
                       float lo, float hi) {
  n8_run(a, lda, b, ldb, bias, c, ldc, m, n, k, clamp, lo, hi, false);
}
static void n8_run_f16(const float *a, int64_t lda, const uint16_t *b, int64_t ldb,
                       const float *bias, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                       bool clamp, float lo, float hi) {
  n8_run(a, lda, b, ldb, bias, c, ldc, m, n, k, clamp, lo, hi, true);
}

/* 8 values of row q of B from k (float32, or float16 widened). */
N8_INLINE void n8_gemv_load(const void *b, int64_t k, float32x4_t *lo, float32x4_t *hi,
                            const bool F16) {
  if (F16) {
    const uint16x8_t h = vld1q_u16((const uint16_t *)b + k);
    *lo = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h)));
    *hi = vcvt_high_f32_f16(vreinterpretq_f16_u16(h));
    return;
  }
  *lo = vld1q_f32((const float *)b + k);
  *hi = vld1q_f32((const float *)b + k + 4);
}

N8_INLINE float n8_gemv_b(const void *b, int64_t k, const bool F16) {
  if (F16) {
    uint16_t t[4] = {((const uint16_t *)b)[k], 0, 0, 0};
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(t))), 0);
  }
  return ((const float *)b)[k];
}

/* Rows [0, n) of y: 4 rows at a time share the loads of x. */
N8_INLINE void n8_gemv(const float *x, const void *b, int64_t ldb, const float *bias, float *y,
                       int64_t n, int64_t k, const bool F16) {
  const size_t esz = F16 ? sizeof(uint16_t) : sizeof(float);
  const size_t rs = (size_t)ldb * esz;
  const int64_t k8 = k / 8 * 8;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const char *b0 = (const char *)b + (size_t)j * rs;
    float32x4_t acc[4][2], w0, w1;
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) acc[q][0] = acc[q][1] = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < k8; i += 8) {
      const float32x4_t x0 = vld1q_f32(x + i), x1 = vld1q_f32(x + i + 4);
#pragma GCC unroll 4
      for (int q = 0; q < 4; q++) {
        n8_gemv_load(b0 + q * rs, i, &w0, &w1, F16);
        acc[q][0] = vfmaq_f32(acc[q][0], x0, w0);
        acc[q][1] = vfmaq_f32(acc[q][1], x1, w1);
      }
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
      float s = vaddvq_f32(vaddq_f32(acc[q][0], acc[q][1]));
      for (int64_t i = k8; i < k; i++) s = __builtin_fmaf(x[i], n8_gemv_b(b0 + q * rs, i, F16), s);
      y[j + q] = s + (bias ? bias[j + q] : 0.0f);
    }
  }
  for (; j < n; j++) {
    const char *b0 = (const char *)b + (size_t)j * rs;
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, w0, w1;
    for (int64_t i = 0; i < k8; i += 8) {
      n8_gemv_load(b0, i, &w0, &w1, F16);
      a0 = vfmaq_f32(a0, vld1q_f32(x + i), w0);
      a1 = vfmaq_f32(a1, vld1q_f32(x + i + 4), w1);
    }
    float s = vaddvq_f32(vaddq_f32(a0, a1));
    for (int64_t i = k8; i < k; i++) s = __builtin_fmaf(x[i], n8_gemv_b(b0, i, F16), s);
    y[j] = s + (bias ? bias[j] : 0.0f);
  }
}

static void n8_gemv_f32(const float *x, const float *b, int64_t ldb, const float *bias, float *y,
                        int64_t n, int64_t k) {
  n8_gemv(x, b, ldb, bias, y, n, k, false);
}
static void n8_gemv_f16(const float *x, const uint16_t *b, int64_t ldb, const float *bias,
                        float *y, int64_t n, int64_t k) {
  n8_gemv(x, b, ldb, bias, y, n, k, true);
}

/* An activation the micro-kernel does not fuse (anything but a clamp), over the m x n result. */
static void n8_activation_rows(float *c, int64_t ldc, int64_t m, int64_t n, ar_activation_t act) {
  if (act != AR_ACT_NONE && !ar__act_is_clamp(act))
    for (int64_t i = 0; i < m; i++) ar_apply_activation(c + i * ldc, (size_t)n, act);
}
#endif

bool ar_sgemm_neon_available(void) {
#if defined(__aarch64__)
  return ar__f32_isa() >= AR_ISA_NEON;
#else
  return false;
#endif
}

void ar_sgemm_neon_nt(const float *a, int64_t lda, const float *b, int64_t ldb, const float *bias,
                      float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, ar_activation_t act) {
#if defined(__aarch64__)
  if (m <= 0 || n <= 0) return;
  float lo, hi;
  ar__act_range(act, &lo, &hi);
  n8_run_f32(a, lda, b, ldb, bias, c, ldc, m, n, k, ar__act_is_clamp(act), lo, hi);
  n8_activation_rows(c, ldc, m, n, act);
#else
  (void)a; (void)lda; (void)b; (void)ldb; (void)bias; (void)c; (void)ldc; (void)m; (void)n;
  (void)k; (void)act;
#endif
}

void ar_sgemm_neon_nt_f16(const float *a, int64_t lda, const uint16_t *b, int64_t ldb,
                          const float *bias, float *c, int64_t ldc, int64_t m, int64_t n,
                          int64_t k, ar_activation_t act) {
#if defined(__aarch64__)
  if (m <= 0 || n <= 0) return;
  float lo, hi;
  ar__act_range(act, &lo, &hi);
  n8_run_f16(a, lda, b, ldb, bias, c, ldc, m, n, k, ar__act_is_clamp(act), lo, hi);
  n8_activation_rows(c, ldc, m, n, act);
#else
  (void)a; (void)lda; (void)b; (void)ldb; (void)bias; (void)c; (void)ldc; (void)m; (void)n;
  (void)k; (void)act;
#endif
}

void ar_sgemv_neon_nt(const float *x, const float *b, const uint16_t *b16, int64_t ldb,
                      const float *bias, float *y, int64_t n, int64_t k, ar_activation_t act) {
#if defined(__aarch64__)
  if (n <= 0) return;
  if (b16) n8_gemv_f16(x, b16, ldb, bias, y, n, k);
  else n8_gemv_f32(x, b, ldb, bias, y, n, k);
  ar__activate(y, (size_t)n, act);
#else
  (void)x; (void)b; (void)b16; (void)ldb; (void)bias; (void)y; (void)n; (void)k; (void)act;
#endif
}
