/* sgemm512.c - C = act(bias + A x B^T) on AVX-512F (kernels/sgemm512.h).
 *
 * Blocking: rows of C in chunks of MC (the chunk's rows of A stay in L2), columns in panels of 32
 * (two zmm), K in chunks of KC. For each (row chunk, panel, K chunk) the panel of B is packed
 * k-major into 32 floats per k on the stack (zero-padded past N; a float16 B widened on the way),
 * then 12 x 32 tiles of C are computed in 24 zmm accumulators: per k, two panel loads, 12
 * broadcasts of A, 24 FMAs. A row tail of 1..3 shares the last full tile (two tiles of 6..8 rows:
 * a 1-row tile's NV accumulators would wait on the FMA latency at every k; +5 % on M = 49). The
 * first K chunk starts from 0, later ones from C; the last adds the bias (after the whole sum, as
 * TFLite's builtin FULLY_CONNECTED and CONV_2D do), applies the clamp and stores.
 * While the first tile of a block runs it prefetches the next block's rows of B into L2 (a model's
 * weights come from L3 at every invoke; 49 x 1152 x 192 with B cold: ~5-10 % faster). 
 * A B of at most 64 KB with K <= 160 (the large-M 1x1 layers: 3136 x 144 x 24, 12544 x 16 x 24,
 * 784 x 240 x 40) is packed once for all row chunks (6-16 % of those products went into packing
 * the same B again per chunk of MC rows; with K = 240, 784 x 40 x 240, the per-chunk panel kept
 * in L1 is faster). */
#include "kernels/sgemm512.h"

#include <string.h>

#include "common/ar_util.h"
#include "kernels/conv_util.h"

#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>

#define S512_MC 240
#define S512_KC 256
#define S512_NR 32
#define S512_WHOLE_FLOATS (16 * 1024)   /* a whole packed B up to 64 KB (stack) */
#define S512_WHOLE_K 160                 /* and panels of at most 20 KB (the panel in use stays in L1) */
#define S512_INLINE AR_TARGET_AVX512 static inline __attribute__((always_inline))

typedef struct {
  const float *bias;        /* at the panel's first column, or NULL */
  __mmask16 m0, m1;         /* lanes of the two vectors inside N */
  bool first, last, clamp;
  float lo, hi;
  /* The block of B packed next (NULL: none), prefetched into L2 by this block's first tile: at
   * iteration kk, row kk % 32 of it, its (kk / 32)-th run of 32 k. pf_ld: its row stride in
   * bytes; pf_two: float32 rows (two cache lines per 32 k, one for float16). */
  const char *pf;
  int64_t pf_ld;
  bool pf_two;
} s512_panel_t;

/* MR rows x NV vectors of C from `a` (MR rows, lda) and the packed panel (kc x 32). */
S512_INLINE void s512_tile(const float *a, int64_t lda, const float *bp, int64_t kc, float *c,
                           int64_t ldc, const s512_panel_t *p, const int MR, const int NV) {
  __m512 acc[12][2];
  if (p->first) {
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) { acc[i][0] = _mm512_setzero_ps(); acc[i][1] = _mm512_setzero_ps(); }
  } else {
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
      acc[i][0] = _mm512_maskz_loadu_ps(p->m0, c + i * ldc);
      acc[i][1] = NV == 2 ? _mm512_maskz_loadu_ps(p->m1, c + i * ldc + 16) : _mm512_setzero_ps();
    }
  }
  for (int64_t kk = 0; kk < kc; kk++) {
    if (p->pf) {   /* iteration kk: row kk % 32 of the next panel, its (kk / 32)-th 32 k */
      const char *q = p->pf + (kk & 31) * p->pf_ld + (kk >> 5) * (p->pf_two ? 128 : 64);
      _mm_prefetch(q, _MM_HINT_T1);
      if (p->pf_two) _mm_prefetch(q + 64, _MM_HINT_T1);
    }
    const __m512 w0 = _mm512_loadu_ps(bp + kk * S512_NR);
    const __m512 w1 = NV == 2 ? _mm512_loadu_ps(bp + kk * S512_NR + 16) : w0;
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
      const __m512 x = _mm512_set1_ps(a[i * lda + kk]);
      acc[i][0] = _mm512_fmadd_ps(x, w0, acc[i][0]);
      if (NV == 2) acc[i][1] = _mm512_fmadd_ps(x, w1, acc[i][1]);
    }
  }
  if (p->last && p->bias) {   /* after the whole sum, as TFLite adds it */
    const __m512 b0 = _mm512_maskz_loadu_ps(p->m0, p->bias);
    const __m512 b1 = NV == 2 ? _mm512_maskz_loadu_ps(p->m1, p->bias + 16) : b0;
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
      acc[i][0] = _mm512_add_ps(acc[i][0], b0);
      if (NV == 2) acc[i][1] = _mm512_add_ps(acc[i][1], b1);
    }
  }
  if (p->last && p->clamp) {
    const __m512 lo = _mm512_set1_ps(p->lo), hi = _mm512_set1_ps(p->hi);
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
      acc[i][0] = _mm512_min_ps(_mm512_max_ps(acc[i][0], lo), hi);
      if (NV == 2) acc[i][1] = _mm512_min_ps(_mm512_max_ps(acc[i][1], lo), hi);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < MR; i++) {
    _mm512_mask_storeu_ps(c + i * ldc, p->m0, acc[i][0]);
    if (NV == 2) _mm512_mask_storeu_ps(c + i * ldc + 16, p->m1, acc[i][1]);
  }
}

S512_INLINE void s512_rows(const float *a, int64_t lda, const float *bp, int64_t kc, float *c,
                           int64_t ldc, int64_t mr, const s512_panel_t *p, const int NV) {
  /* A tail of 1..3 rows after full tiles is shared with the last one (49 rows: 12, 12, 12, 7, 6
   * rather than four 12s and a 1-row tile, whose NV accumulators would wait on the FMA latency at
   * every k). */
  int64_t full = mr / 12, tail = mr % 12, split = 0;
  if (full > 0 && tail > 0 && tail < 4) {
    full--;
    split = 12 + tail;
  }
  int64_t i = 0;
  s512_panel_t rest = *p;   /* the tiles after the first prefetch nothing */
  rest.pf = NULL;
  if (full > 0) {
    s512_tile(a, lda, bp, kc, c, ldc, p, 12, NV);
    i = 12;
    p = &rest;
  }
  for (; i < full * 12; i += 12) s512_tile(a + i * lda, lda, bp, kc, c + i * ldc, ldc, p, 12, NV);
  a += i * lda;
  c += i * ldc;
  int64_t left = mr - i;
  if (split) {   /* 13..15 rows: two tiles of 7 / 6..8 rows */
    const int64_t r0 = (split + 1) / 2;
    switch (r0) {
#define S512_TAIL(R) case R: s512_tile(a, lda, bp, kc, c, ldc, p, R, NV); break;
    S512_TAIL(7) S512_TAIL(8)
    default: break;
    }
    a += r0 * lda;
    c += r0 * ldc;
    left -= r0;
  }
  /* The rows left (1..11): one tile of that height (each broadcast still feeds NV FMAs). */
  switch (left) {
  S512_TAIL(1) S512_TAIL(2) S512_TAIL(3) S512_TAIL(4) S512_TAIL(5) S512_TAIL(6)
  S512_TAIL(7) S512_TAIL(8) S512_TAIL(9) S512_TAIL(10) S512_TAIL(11)
#undef S512_TAIL
  default: break;
  }
}

/* kn (1..16) float16 values at p widened (vcvtph2ps: exact), zeros past kn. */
S512_INLINE __m512 s512_load_f16(const uint16_t *p, int64_t kn) {
  if (kn >= 16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
  uint16_t t[16] = {0};
  memcpy(t, p, (size_t)kn * sizeof *t);
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)t));
}

/* Pack B[0 .. nr, 0 .. kc) (rows of ldb elements, float32 or with F16 float16 widened on the
 * way) k-major into bp (32 floats per k, zeros past nr; the second 16 only when nr > 16, the only
 * case that reads them), 16 x 16 blocks at a time. */
S512_INLINE void s512_pack(const void *b, int64_t ldb, int64_t nr, int64_t kc, float *bp,
                           const bool F16) {
  for (int64_t kb = 0; kb < kc; kb += 16) {
    const int64_t kn = AR_MIN((int64_t)16, kc - kb);
    const __mmask16 mk = kn >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << kn) - 1u);
    for (int64_t h = 0; h < (nr > 16 ? 2 : 1); h++) {
      __m512 r[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; i++)
        r[i] = 16 * h + i >= nr ? _mm512_setzero_ps()
               : F16 ? s512_load_f16((const uint16_t *)b + (16 * h + i) * ldb + kb, kn)
                     : _mm512_maskz_loadu_ps(mk, (const float *)b + (16 * h + i) * ldb + kb);
      ar__tr16_512(r);
      for (int64_t kk = 0; kk < kn; kk++) _mm512_store_ps(bp + (kb + kk) * S512_NR + 16 * h, r[kk]);
    }
  }
}

S512_INLINE void s512_run(const float *a, int64_t lda, const void *b, int64_t ldb,
                          const float *bias, float *c, int64_t ldc, int64_t m, int64_t n,
                          int64_t k, bool clamp, float lo, float hi, const bool F16) {
  const size_t esz = F16 ? sizeof(uint16_t) : sizeof(float);
  /* A small B with K in one chunk (the large-M, few-channel 1x1 layers) is packed once, all its
   * panels, and serves every row chunk; otherwise each (row chunk, panel, K chunk) packs its own. */
  const int64_t panels = (n + S512_NR - 1) / S512_NR;
  if (m > S512_MC && k > 0 && k <= S512_WHOLE_K && panels * k * S512_NR <= S512_WHOLE_FLOATS) {
    float bw[S512_WHOLE_FLOATS] __attribute__((aligned(64)));
    for (int64_t n0 = 0; n0 < n; n0 += S512_NR)
      s512_pack((const char *)b + (size_t)(n0 * ldb) * esz, ldb, AR_MIN((int64_t)S512_NR, n - n0), k,
                bw + (n0 / S512_NR) * k * S512_NR, F16);
    for (int64_t m0 = 0; m0 < m; m0 += S512_MC) {
      const int64_t mr = AR_MIN((int64_t)S512_MC, m - m0);
      for (int64_t n0 = 0; n0 < n; n0 += S512_NR) {
        const int64_t nr = AR_MIN((int64_t)S512_NR, n - n0);
        s512_panel_t p = {.bias = bias ? bias + n0 : NULL, .clamp = clamp, .lo = lo, .hi = hi,
                          .first = true, .last = true};
        p.m0 = nr >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nr) - 1u);
        p.m1 = nr >= 32 ? (__mmask16)0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1u) : 0;
        const float *bp = bw + (n0 / S512_NR) * k * S512_NR;
        if (nr > 16) s512_rows(a + m0 * lda, lda, bp, k, c + m0 * ldc + n0, ldc, mr, &p, 2);
        else s512_rows(a + m0 * lda, lda, bp, k, c + m0 * ldc + n0, ldc, mr, &p, 1);
      }
    }
    return;
  }
  float bp[S512_KC * S512_NR] __attribute__((aligned(64)));
  for (int64_t m0 = 0; m0 < m; m0 += S512_MC) {
    const int64_t mr = AR_MIN((int64_t)S512_MC, m - m0);
    for (int64_t n0 = 0; n0 < n; n0 += S512_NR) {
      const int64_t nr = AR_MIN((int64_t)S512_NR, n - n0);
      s512_panel_t p = {.bias = bias ? bias + n0 : NULL, .clamp = clamp, .lo = lo, .hi = hi};
      p.m0 = nr >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nr) - 1u);
      p.m1 = nr >= 32 ? (__mmask16)0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1u) : 0;
      for (int64_t k0 = 0; k0 < k; k0 += S512_KC) {
        const int64_t kc = AR_MIN((int64_t)S512_KC, k - k0);
        s512_pack((const char *)b + (size_t)(n0 * ldb + k0) * esz, ldb, nr, kc, bp, F16);
        p.first = k0 == 0;
        p.last = k0 + kc == k;
        /* The next block of B (next K chunk, else the next panel) is prefetched meanwhile: a
         * model's weights come from L3 at every invoke, and the pack would wait for each line. */
        const int64_t nk0 = k0 + kc < k ? k0 + kc : 0, nn0 = k0 + kc < k ? n0 : n0 + S512_NR;
        p.pf = nn0 < n ? (const char *)b + (size_t)(nn0 * ldb + nk0) * esz : NULL;
        p.pf_ld = ldb * (int64_t)esz;
        p.pf_two = !F16;
        const float *ab = a + m0 * lda + k0;
        float *cb = c + m0 * ldc + n0;
        if (nr > 16) s512_rows(ab, lda, bp, kc, cb, ldc, mr, &p, 2);
        else s512_rows(ab, lda, bp, kc, cb, ldc, mr, &p, 1);
      }
      if (k == 0) {   /* no terms: bias (or 0), activation */
        p.first = p.last = true;
        s512_rows(a, lda, bp, 0, c + m0 * ldc + n0, ldc, mr, &p, nr > 16 ? 2 : 1);
      }
    }
  }
}

AR_TARGET_AVX512 static void s512_run_f32(const float *a, int64_t lda, const float *b, int64_t ldb,
                                          const float *bias, float *c, int64_t ldc, int64_t m,
                                          int64_t n, int64_t k, bool clamp, float lo, float hi) {
  s512_run(a, lda, b, ldb, bias, c, ldc, m, n, k, clamp, lo, hi, false);
}
AR_TARGET_AVX512 static void s512_run_f16(const float *a, int64_t lda, const uint16_t *b,
                                          int64_t ldb, const float *bias, float *c, int64_t ldc,
                                          int64_t m, int64_t n, int64_t k, bool clamp, float lo,
                                          float hi) {
  s512_run(a, lda, b, ldb, bias, c, ldc, m, n, k, clamp, lo, hi, true);
}
/* y[0 .. n) = bias + x . B[j, 0 .. k) for rows j of B (float32, or F16 float16 widened on the
 * way): per row, 16 lane sums over k (lane l takes k = l, l + 16, ... in order, one FMA each,
 * a masked tail), then the lanes added pairwise (8 + 8, 4 + 4, 2 + 2, 1 + 1), then the bias. Four
 * rows at a time share the loads of x. */
S512_INLINE __m512 s512_gemv_load(const void *b, int64_t i, __mmask16 m, const bool F16) {
  if (F16) {
    if (m == (__mmask16)0xffff)
      return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)((const uint16_t *)b + i)));
    return s512_load_f16((const uint16_t *)b + i, __builtin_popcount(m));
  }
  return _mm512_maskz_loadu_ps(m, (const float *)b + i);
}

S512_INLINE float s512_hsum(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                                  _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
  const __m128 o = _mm_add_ss(d, _mm_movehdup_ps(d));
  return _mm_cvtss_f32(o);
}

S512_INLINE void s512_gemv(const float *x, const void *b, int64_t ldb, const float *bias, float *y,
                           int64_t n, int64_t k, const bool F16) {
  const size_t esz = F16 ? sizeof(uint16_t) : sizeof(float);
  const int64_t kfull = k / 16 * 16;
  const __mmask16 mt = (__mmask16)((1u << (k - kfull)) - 1u);
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const char *b0 = (const char *)b + (size_t)(j * ldb) * esz;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < kfull; i += 16) {
      const __m512 xv = _mm512_loadu_ps(x + i);
      a0 = _mm512_fmadd_ps(xv, s512_gemv_load(b0, i, 0xffff, F16), a0);
      a1 = _mm512_fmadd_ps(xv, s512_gemv_load(b0 + (size_t)ldb * esz, i, 0xffff, F16), a1);
      a2 = _mm512_fmadd_ps(xv, s512_gemv_load(b0 + (size_t)(2 * ldb) * esz, i, 0xffff, F16), a2);
      a3 = _mm512_fmadd_ps(xv, s512_gemv_load(b0 + (size_t)(3 * ldb) * esz, i, 0xffff, F16), a3);
    }
    if (mt) {
      const __m512 xv = _mm512_maskz_loadu_ps(mt, x + kfull);
      a0 = _mm512_fmadd_ps(xv, s512_gemv_load(b0, kfull, mt, F16), a0);
      a1 = _mm512_fmadd_ps(xv, s512_gemv_load(b0 + (size_t)ldb * esz, kfull, mt, F16), a1);
      a2 = _mm512_fmadd_ps(xv, s512_gemv_load(b0 + (size_t)(2 * ldb) * esz, kfull, mt, F16), a2);
      a3 = _mm512_fmadd_ps(xv, s512_gemv_load(b0 + (size_t)(3 * ldb) * esz, kfull, mt, F16), a3);
    }
    y[j] = (bias ? bias[j] : 0.0f) + s512_hsum(a0);
    y[j + 1] = (bias ? bias[j + 1] : 0.0f) + s512_hsum(a1);
    y[j + 2] = (bias ? bias[j + 2] : 0.0f) + s512_hsum(a2);
    y[j + 3] = (bias ? bias[j + 3] : 0.0f) + s512_hsum(a3);
  }
  for (; j < n; j++) {
    const char *b0 = (const char *)b + (size_t)(j * ldb) * esz;
    __m512 a0 = _mm512_setzero_ps();
    for (int64_t i = 0; i < kfull; i += 16)
      a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), s512_gemv_load(b0, i, 0xffff, F16), a0);
    if (mt)
      a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mt, x + kfull), s512_gemv_load(b0, kfull, mt, F16), a0);
    y[j] = (bias ? bias[j] : 0.0f) + s512_hsum(a0);
  }
}

AR_TARGET_AVX512 static void s512_gemv_f32(const float *x, const float *b, int64_t ldb,
                                           const float *bias, float *y, int64_t n, int64_t k) {
  s512_gemv(x, b, ldb, bias, y, n, k, false);
}
AR_TARGET_AVX512 static void s512_gemv_f16(const float *x, const uint16_t *b, int64_t ldb, const float *bias, float *y, int64_t n,
              int64_t k) {
  s512_gemv(x, b, ldb, bias, y, n, k, true);
}
#endif

bool ar_sgemm512_available(void) {
#if AR_HAVE_AVX2_CLONE
  return ar__f32_isa() >= AR_ISA_AVX512;
#else
  return false;
#endif
}

#if AR_HAVE_AVX2_CLONE
/* An activation the micro-kernel does not fuse (anything but a clamp), over the m x n result. */
static void s512_activation_rows(float *c, int64_t ldc, int64_t m, int64_t n, ar_activation_t act) {
  if (act != AR_ACT_NONE && !ar__act_is_clamp(act))
    for (int64_t i = 0; i < m; i++) ar_apply_activation(c + i * ldc, (size_t)n, act);
}
#endif

void ar_sgemm512_nt(const float *a, int64_t lda, const float *b, int64_t ldb, const float *bias,
                    float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, ar_activation_t act) {
#if AR_HAVE_AVX2_CLONE
  if (m <= 0 || n <= 0) return;
  float lo, hi;
  ar__act_range(act, &lo, &hi);
  s512_run_f32(a, lda, b, ldb, bias, c, ldc, m, n, k, ar__act_is_clamp(act), lo, hi);
  s512_activation_rows(c, ldc, m, n, act);
#else
  (void)a; (void)lda; (void)b; (void)ldb; (void)bias; (void)c; (void)ldc; (void)m; (void)n;
  (void)k; (void)act;
#endif
}

void ar_sgemm512_nt_f16(const float *a, int64_t lda, const uint16_t *b, int64_t ldb,
                        const float *bias, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                        ar_activation_t act) {
#if AR_HAVE_AVX2_CLONE
  if (m <= 0 || n <= 0) return;
  float lo, hi;
  ar__act_range(act, &lo, &hi);
  s512_run_f16(a, lda, b, ldb, bias, c, ldc, m, n, k, ar__act_is_clamp(act), lo, hi);
  s512_activation_rows(c, ldc, m, n, act);
#else
  (void)a; (void)lda; (void)b; (void)ldb; (void)bias; (void)c; (void)ldc; (void)m; (void)n;
  (void)k; (void)act;
#endif
}

void ar_sgemv512_nt(const float *x, const float *b, const uint16_t *b16, int64_t ldb,
                    const float *bias, float *y, int64_t n, int64_t k, ar_activation_t act) {
#if AR_HAVE_AVX2_CLONE
  if (n <= 0) return;
  if (b16) s512_gemv_f16(x, b16, ldb, bias, y, n, k);
  else s512_gemv_f32(x, b, ldb, bias, y, n, k);
  ar__activate(y, (size_t)n, act);
#else
  (void)x; (void)b; (void)b16; (void)ldb; (void)bias; (void)y; (void)n; (void)k; (void)act;
#endif
}
