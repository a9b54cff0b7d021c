/* sgemm256.c - C = act(bias + A x B^T) on AVX2 + FMA (+ F16C), sgemm512's bits
 * (kernels/sgemm256.h).
 *
 * Blocking as in sgemm512.c, for 16 ymm: rows of C in chunks of MC (the chunk's rows of A stay in
 * L2), columns in panels of 16 (two ymm), K in chunks of KC. For each (row chunk, panel, K chunk)
 * the panel of B is packed k-major into 16 floats per k on the stack (8 x 8 in-register
 * transposes, zero-padded past N; a float16 B widened by vcvtph2ps on the way), then 6 x 16 tiles
 * of C are computed in 12 ymm accumulators: per k, two panel loads, 6 broadcasts of A, 12 FMAs.
 * A row tail of 1..2 shares the last full tile (two tiles of 4 and 3..4 rows: a 1-row tile's two
 * accumulators would wait on the FMA latency at every k). The first K chunk starts from 0, later
 * ones from C; the last adds the bias, applies the clamp and stores. The first tile of a block prefetches
 * the next block of B into L2. A B of at most 64 KB with K <= 160 (the large-M 1x1 layers) is
 * packed once for all row chunks, as in sgemm512. Panel of KC = 256 k: 16 KB, half of Zen 3's
 * 32 KB L1D beside the rows of A in flight; MC = 240 rows of A: 240 KB of its 512 KB L2.
 *
 * Every element is its K terms in ascending k from 0, one FMA each, then + bias, whatever the
 * tile, chunk or panel it falls in: the bits of sgemm512 and of a scalar fmaf loop. */
#include "kernels/sgemm256.h"

#include <string.h>

#include "common/ar_util.h"
#include "kernels/conv_util.h"

#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>

#define S256_MC 240
#define S256_KC 256
#define S256_NR 16
#define S256_WHOLE_FLOATS (16 * 1024)   /* a whole packed B up to 64 KB (stack) */
#define S256_WHOLE_K 160
#define S256_TARGET __attribute__((target("avx2,fma,f16c")))
#define S256_INLINE S256_TARGET static inline __attribute__((always_inline))

typedef struct {
  const float *bias;        /* at the panel's first column, or NULL */
  __m256i m0, m1;           /* lanes of the two vectors inside N (all ones: full) */
  bool full;                /* all 16 columns inside N: plain loads and stores */
  bool first, last, clamp;
  float lo, hi;
  /* The block of B packed next (NULL: none), prefetched into L2 by this block's first tile: at
   * iteration kk, row kk % 16 of it, its (kk / 16)-th run of 16 k (pf_ld: row stride in bytes;
   * pf_run: bytes of 16 k). */
  const char *pf;
  int64_t pf_ld, pf_run;
} s256_panel_t;

S256_INLINE __m256i s256_lanes(int64_t n) {   /* lanes [0, n) of 8 set (n may be <= 0 or > 8) */
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int v = n < 0 ? 0 : n > 8 ? 8 : (int)n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(v), idx);
}

S256_INLINE __m256 s256_ld(const s256_panel_t *p, const float *q, const int h) {
  if (p->full) return _mm256_loadu_ps(q);
  return _mm256_maskload_ps(q, h ? p->m1 : p->m0);
}
S256_INLINE void s256_st(const s256_panel_t *p, float *q, __m256 v, const int h) {
  if (p->full) _mm256_storeu_ps(q, v);
  else _mm256_maskstore_ps(q, h ? p->m1 : p->m0, v);
}

/* MR rows x NV vectors of C from `a` (MR rows, lda) and the packed panel (kc x 16). */
S256_INLINE void s256_tile(const float *a, int64_t lda, const float *bp, int64_t kc, float *c,
                           int64_t ldc, const s256_panel_t *p, const int MR, const int NV) {
  __m256 acc[6][2];
  if (p->first) {
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) { acc[i][0] = _mm256_setzero_ps(); acc[i][1] = _mm256_setzero_ps(); }
  } else {
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
      acc[i][0] = s256_ld(p, c + i * ldc, 0);
      acc[i][1] = NV == 2 ? s256_ld(p, c + i * ldc + 8, 1) : _mm256_setzero_ps();
    }
  }
  for (int64_t kk = 0; kk < kc; kk++) {
    if (p->pf) _mm_prefetch(p->pf + (kk & 15) * p->pf_ld + (kk >> 4) * p->pf_run, _MM_HINT_T1);
    const __m256 w0 = _mm256_load_ps(bp + kk * S256_NR);
    const __m256 w1 = NV == 2 ? _mm256_load_ps(bp + kk * S256_NR + 8) : w0;
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
      const __m256 x = _mm256_broadcast_ss(a + i * lda + kk);
      acc[i][0] = _mm256_fmadd_ps(x, w0, acc[i][0]);
      if (NV == 2) acc[i][1] = _mm256_fmadd_ps(x, w1, acc[i][1]);
    }
  }
  if (p->last && p->bias) {   /* after the whole sum, as TFLite adds it */
    const __m256 b0 = s256_ld(p, p->bias, 0);
    const __m256 b1 = NV == 2 ? s256_ld(p, p->bias + 8, 1) : b0;
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
      acc[i][0] = _mm256_add_ps(acc[i][0], b0);
      if (NV == 2) acc[i][1] = _mm256_add_ps(acc[i][1], b1);
    }
  }
  if (p->last && p->clamp) {   /* sgemm512's order: max with lo, then min with hi */
    const __m256 lo = _mm256_set1_ps(p->lo), hi = _mm256_set1_ps(p->hi);
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
      acc[i][0] = _mm256_min_ps(_mm256_max_ps(acc[i][0], lo), hi);
      if (NV == 2) acc[i][1] = _mm256_min_ps(_mm256_max_ps(acc[i][1], lo), hi);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < MR; i++) {
    s256_st(p, c + i * ldc, acc[i][0], 0);
    if (NV == 2) s256_st(p, c + i * ldc + 8, acc[i][1], 1);
  }
}

S256_INLINE void s256_rows(const float *a, int64_t lda, const float *bp, int64_t kc, float *c,
                           int64_t ldc, int64_t mr, const s256_panel_t *p, const int NV) {
  /* A tail of 1..2 rows after full tiles is shared with the last one (13 rows: 6, 4, 3 rather
   * than 6, 6, 1). */
  int64_t full = mr / 6, tail = mr % 6, split = 0;
  if (full > 0 && tail > 0 && tail < 3) {
    full--;
    split = 6 + tail;
  }
  int64_t i = 0;
  s256_panel_t rest = *p;   /* the tiles after the first prefetch nothing */
  rest.pf = NULL;
  if (full > 0) {
    s256_tile(a, lda, bp, kc, c, ldc, p, 6, NV);
    i = 6;
    p = &rest;
  }
  for (; i < full * 6; i += 6) s256_tile(a + i * lda, lda, bp, kc, c + i * ldc, ldc, p, 6, NV);
  a += i * lda;
  c += i * ldc;
  int64_t left = mr - i;
  if (split) {   /* 7..8 rows: a tile of 4, then 3..4 */
    s256_tile(a, lda, bp, kc, c, ldc, p, 4, NV);
    a += 4 * lda;
    c += 4 * ldc;
    left -= 4;
  }
  switch (left) {   /* the rows left (1..5): one tile of that height */
#define S256_TAIL(R) case R: s256_tile(a, lda, bp, kc, c, ldc, p, R, NV); break;
  S256_TAIL(1) S256_TAIL(2) S256_TAIL(3) S256_TAIL(4) S256_TAIL(5)
#undef S256_TAIL
  default: break;
  }
}

/* The rows of one (row chunk, panel, K chunk) block, out of line, the one copy of the tiles that
 * every path of s256_run calls: with the tiles inlined into each path, GCC 12 compiled the
 * packed-once path's copy about 1.7x slower than the other's (bench/kernels --gemm on Zen 3:
 * 3136 x 144 x 24 at 43 against 80 GFLOP/s, 12544 x 64 x 16 43 against 71). */
#define S256_NOINLINE __attribute__((noinline)) S256_TARGET static
S256_NOINLINE void s256_rows1(const float *a, int64_t lda, const float *bp, int64_t kc, float *c,
                              int64_t ldc, int64_t mr, const s256_panel_t *p) {
  s256_rows(a, lda, bp, kc, c, ldc, mr, p, 1);
}
S256_NOINLINE void s256_rows2(const float *a, int64_t lda, const float *bp, int64_t kc, float *c,
                              int64_t ldc, int64_t mr, const s256_panel_t *p) {
  s256_rows(a, lda, bp, kc, c, ldc, mr, p, 2);
}

/* kn (0..8) float16 values at p widened (vcvtph2ps: exact), zeros past kn. */
S256_INLINE __m256 s256_load_f16(const uint16_t *p, int64_t kn) {
  if (kn >= 8) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
  uint16_t t[8] = {0};
  if (kn > 0) memcpy(t, p, (size_t)kn * sizeof *t);
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)t));
}

/* Pack B[0 .. nr, 0 .. kc) (rows of ldb elements, float32 or with F16 float16 widened on the
 * way) k-major into bp (16 floats per k, zeros past nr; the second 8 only when nr > 8, the only
 * case that reads them), 8 x 8 blocks at a time. */
S256_INLINE void s256_pack(const void *b, int64_t ldb, int64_t nr, int64_t kc, float *bp,
                           const bool F16) {
  for (int64_t kb = 0; kb < kc; kb += 8) {
    const int64_t kn = AR_MIN((int64_t)8, kc - kb);
    const __m256i mk = s256_lanes(kn);
    for (int64_t h = 0; h < (nr > 8 ? 2 : 1); h++) {
      __m256 r[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; i++)
        r[i] = 8 * h + i >= nr ? _mm256_setzero_ps()
               : F16 ? s256_load_f16((const uint16_t *)b + (8 * h + i) * ldb + kb, kn)
               : kn >= 8 ? _mm256_loadu_ps((const float *)b + (8 * h + i) * ldb + kb)
                         : _mm256_maskload_ps((const float *)b + (8 * h + i) * ldb + kb, mk);
      ar__tr8_256(r);
      for (int64_t kk = 0; kk < kn; kk++) _mm256_store_ps(bp + (kb + kk) * S256_NR + 8 * h, r[kk]);
    }
  }
}

S256_INLINE void s256_panel_cols(s256_panel_t *p, int64_t nr) {
  p->full = nr >= 16;
  p->m0 = s256_lanes(nr);
  p->m1 = s256_lanes(nr - 8);
}

S256_INLINE void s256_run(const float *a, int64_t lda, const void *b, int64_t ldb,
                          const float *bias, float *c, int64_t ldc, int64_t m, int64_t n,
                          int64_t k, bool clamp, float lo, float hi, const bool F16) {
  const size_t esz = F16 ? sizeof(uint16_t) : sizeof(float);
  /* A small B with K in one chunk (the large-M, few-channel 1x1 layers) is packed once, all its
   * panels, and serves every row chunk; otherwise each (row chunk, panel, K chunk) packs its own. */
  const int64_t panels = (n + S256_NR - 1) / S256_NR;
  if (m > S256_MC && k > 0 && k <= S256_WHOLE_K && panels * k * S256_NR <= S256_WHOLE_FLOATS) {
    float bw[S256_WHOLE_FLOATS] __attribute__((aligned(64)));
    for (int64_t n0 = 0; n0 < n; n0 += S256_NR)
      s256_pack((const char *)b + (size_t)(n0 * ldb) * esz, ldb, AR_MIN((int64_t)S256_NR, n - n0), k,
                bw + (n0 / S256_NR) * k * S256_NR, F16);
    for (int64_t m0 = 0; m0 < m; m0 += S256_MC) {
      const int64_t mr = AR_MIN((int64_t)S256_MC, m - m0);
      for (int64_t n0 = 0; n0 < n; n0 += S256_NR) {
        const int64_t nr = AR_MIN((int64_t)S256_NR, n - n0);
        s256_panel_t p = {.bias = bias ? bias + n0 : NULL, .clamp = clamp, .lo = lo, .hi = hi,
                          .first = true, .last = true};
        s256_panel_cols(&p, nr);
        const float *bp = bw + (n0 / S256_NR) * k * S256_NR;
        if (nr > 8) s256_rows2(a + m0 * lda, lda, bp, k, c + m0 * ldc + n0, ldc, mr, &p);
        else s256_rows1(a + m0 * lda, lda, bp, k, c + m0 * ldc + n0, ldc, mr, &p);
      }
    }
    return;
  }
  float bp[S256_KC * S256_NR] __attribute__((aligned(64)));
  for (int64_t m0 = 0; m0 < m; m0 += S256_MC) {
    const int64_t mr = AR_MIN((int64_t)S256_MC, m - m0);
    for (int64_t n0 = 0; n0 < n; n0 += S256_NR) {
      const int64_t nr = AR_MIN((int64_t)S256_NR, n - n0);
      s256_panel_t p = {.bias = bias ? bias + n0 : NULL, .clamp = clamp, .lo = lo, .hi = hi};
      s256_panel_cols(&p, nr);
      for (int64_t k0 = 0; k0 < k; k0 += S256_KC) {
        const int64_t kc = AR_MIN((int64_t)S256_KC, k - k0);
        s256_pack((const char *)b + (size_t)(n0 * ldb + k0) * esz, ldb, nr, kc, bp, F16);
        p.first = k0 == 0;
        p.last = k0 + kc == k;
        /* The next block of B (next K chunk, else the next panel) is prefetched meanwhile. */
        const int64_t nk0 = k0 + kc < k ? k0 + kc : 0, nn0 = k0 + kc < k ? n0 : n0 + S256_NR;
        p.pf = nn0 < n ? (const char *)b + (size_t)(nn0 * ldb + nk0) * esz : NULL;
        p.pf_ld = ldb * (int64_t)esz;
        p.pf_run = 16 * (int64_t)esz;
        const float *ab = a + m0 * lda + k0;
        float *cb = c + m0 * ldc + n0;
        if (nr > 8) s256_rows2(ab, lda, bp, kc, cb, ldc, mr, &p);
        else s256_rows1(ab, lda, bp, kc, cb, ldc, mr, &p);
      }
      if (k == 0) {   /* no terms: bias (or 0), activation */
        p.first = p.last = true;
        p.pf = NULL;
        if (nr > 8) s256_rows2(a, lda, bp, 0, c + m0 * ldc + n0, ldc, mr, &p);
        else s256_rows1(a, lda, bp, 0, c + m0 * ldc + n0, ldc, mr, &p);
      }
    }
  }
}

S256_TARGET static void s256_run_f32(const float *a, int64_t lda, const float *b, int64_t ldb,
                                     const float *bias, float *c, int64_t ldc, int64_t m,
                                     int64_t n, int64_t k, bool clamp, float lo, float hi) {
  s256_run(a, lda, b, ldb, bias, c, ldc, m, n, k, clamp, lo, hi, false);
}
S256_TARGET static void s256_run_f16(const float *a, int64_t lda, const uint16_t *b, int64_t ldb,
                                     const float *bias, float *c, int64_t ldc, int64_t m,
                                     int64_t n, int64_t k, bool clamp, float lo, float hi) {
  s256_run(a, lda, b, ldb, bias, c, ldc, m, n, k, clamp, lo, hi, true);
}

/* The one-row product: sgemv512's 16 lanes as two ymm, lo (lanes 0..7) and hi (8..15). The lanes
 * past K of a partial last block of 16 take 0 x 0 (x and B both loaded as zeros), as sgemv512's
 * masked loads give. Four rows at a time share the loads of x. */
S256_INLINE void s256_gemv_load(const void *b, int64_t i, int64_t kn, __m256i ml, __m256i mh,
                                __m256 *lo, __m256 *hi, const bool F16) {
  if (F16) {
    const uint16_t *q = (const uint16_t *)b + i;
    if (kn >= 16) {
      *lo = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)q));
      *hi = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(q + 8)));
      return;
    }
    uint16_t t[16] = {0};
    memcpy(t, q, (size_t)kn * sizeof *t);
    *lo = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)t));
    *hi = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(t + 8)));
    return;
  }
  const float *q = (const float *)b + i;
  if (kn >= 16) {
    *lo = _mm256_loadu_ps(q);
    *hi = _mm256_loadu_ps(q + 8);
    return;
  }
  *lo = _mm256_maskload_ps(q, ml);
  *hi = _mm256_maskload_ps(q + 8, mh);
}

/* sgemv512's reduction of its 16 lanes (s512_hsum): lanes l + l+8, then + l+4, + l+2, + l+1. */
S256_INLINE float s256_hsum(__m256 lo, __m256 hi) {
  const __m256 h = _mm256_add_ps(lo, hi);
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
  const __m128 o = _mm_add_ss(d, _mm_movehdup_ps(d));
  return _mm_cvtss_f32(o);
}

S256_INLINE void s256_gemv(const float *x, const void *b, int64_t ldb, const float *bias, float *y,
                           int64_t n, int64_t k, const bool F16) {
  const size_t esz = F16 ? sizeof(uint16_t) : sizeof(float);
  const int64_t kfull = k / 16 * 16, kt = k - kfull;
  const __m256i ml = s256_lanes(kt), mh = s256_lanes(kt - 8);
  __m256 xtl = _mm256_setzero_ps(), xth = xtl;
  if (kt) {
    xtl = _mm256_maskload_ps(x + kfull, ml);
    xth = _mm256_maskload_ps(x + kfull + 8, mh);
  }
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const char *b0 = (const char *)b + (size_t)(j * ldb) * esz;
    const size_t rs = (size_t)ldb * esz;
    __m256 a0l = _mm256_setzero_ps(), a0h = a0l, a1l = a0l, a1h = a0l, a2l = a0l, a2h = a0l,
           a3l = a0l, a3h = a0l, wl, wh;
    for (int64_t i = 0; i < kfull; i += 16) {
      const __m256 xl = _mm256_loadu_ps(x + i), xh = _mm256_loadu_ps(x + i + 8);
      s256_gemv_load(b0, i, 16, ml, mh, &wl, &wh, F16);
      a0l = _mm256_fmadd_ps(xl, wl, a0l); a0h = _mm256_fmadd_ps(xh, wh, a0h);
      s256_gemv_load(b0 + rs, i, 16, ml, mh, &wl, &wh, F16);
      a1l = _mm256_fmadd_ps(xl, wl, a1l); a1h = _mm256_fmadd_ps(xh, wh, a1h);
      s256_gemv_load(b0 + 2 * rs, i, 16, ml, mh, &wl, &wh, F16);
      a2l = _mm256_fmadd_ps(xl, wl, a2l); a2h = _mm256_fmadd_ps(xh, wh, a2h);
      s256_gemv_load(b0 + 3 * rs, i, 16, ml, mh, &wl, &wh, F16);
      a3l = _mm256_fmadd_ps(xl, wl, a3l); a3h = _mm256_fmadd_ps(xh, wh, a3h);
    }
    if (kt) {
      s256_gemv_load(b0, kfull, kt, ml, mh, &wl, &wh, F16);
      a0l = _mm256_fmadd_ps(xtl, wl, a0l); a0h = _mm256_fmadd_ps(xth, wh, a0h);
      s256_gemv_load(b0 + rs, kfull, kt, ml, mh, &wl, &wh, F16);
      a1l = _mm256_fmadd_ps(xtl, wl, a1l); a1h = _mm256_fmadd_ps(xth, wh, a1h);
      s256_gemv_load(b0 + 2 * rs, kfull, kt, ml, mh, &wl, &wh, F16);
      a2l = _mm256_fmadd_ps(xtl, wl, a2l); a2h = _mm256_fmadd_ps(xth, wh, a2h);
      s256_gemv_load(b0 + 3 * rs, kfull, kt, ml, mh, &wl, &wh, F16);
      a3l = _mm256_fmadd_ps(xtl, wl, a3l); a3h = _mm256_fmadd_ps(xth, wh, a3h);
    }
    y[j] = (bias ? bias[j] : 0.0f) + s256_hsum(a0l, a0h);
    y[j + 1] = (bias ? bias[j + 1] : 0.0f) + s256_hsum(a1l, a1h);
    y[j + 2] = (bias ? bias[j + 2] : 0.0f) + s256_hsum(a2l, a2h);
    y[j + 3] = (bias ? bias[j + 3] : 0.0f) + s256_hsum(a3l, a3h);
  }
  for (; j < n; j++) {
    const char *b0 = (const char *)b + (size_t)(j * ldb) * esz;
    __m256 al = _mm256_setzero_ps(), ah = al, wl, wh;
    for (int64_t i = 0; i < kfull; i += 16) {
      s256_gemv_load(b0, i, 16, ml, mh, &wl, &wh, F16);
      al = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), wl, al);
      ah = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), wh, ah);
    }
    if (kt) {
      s256_gemv_load(b0, kfull, kt, ml, mh, &wl, &wh, F16);
      al = _mm256_fmadd_ps(xtl, wl, al);
      ah = _mm256_fmadd_ps(xth, wh, ah);
    }
    y[j] = (bias ? bias[j] : 0.0f) + s256_hsum(al, ah);
  }
}

S256_TARGET static void s256_gemv_f32(const float *x, const float *b, int64_t ldb,
                                      const float *bias, float *y, int64_t n, int64_t k) {
  s256_gemv(x, b, ldb, bias, y, n, k, false);
}
S256_TARGET static void s256_gemv_f16(const float *x, const uint16_t *b, int64_t ldb,
                                      const float *bias, float *y, int64_t n, int64_t k) {
  s256_gemv(x, b, ldb, bias, y, n, k, true);
}

/* An activation the micro-kernel does not fuse (anything but a clamp), over the m x n result. */
static void s256_activation_rows(float *c, int64_t ldc, int64_t m, int64_t n, ar_activation_t act) {
  if (act != AR_ACT_NONE && !ar__act_is_clamp(act))
    for (int64_t i = 0; i < m; i++) ar_apply_activation(c + i * ldc, (size_t)n, act);
}
#endif

bool ar_sgemm256_available(void) {
#if AR_HAVE_AVX2_CLONE
  /* Cached: the CPU's F16C bit does not change (relaxed atomics: invokes on several threads may
   * ask first). */
  static int f16c = -1;
  int h = __atomic_load_n(&f16c, __ATOMIC_RELAXED);
  if (h < 0) {
    __builtin_cpu_init();
    h = __builtin_cpu_supports("f16c") ? 1 : 0;
    __atomic_store_n(&f16c, h, __ATOMIC_RELAXED);
  }
  return h && ar__f32_isa() >= AR_ISA_AVX2;
#else
  return false;
#endif
}

void ar_sgemm256_nt(const float *a, int64_t lda, const float *b, int64_t ldb, const float *bias,
                    float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, ar_activation_t act) {
#if AR_HAVE_AVX2_CLONE
  if (m <= 0 || n <= 0) return;
  float lo, hi;
  ar__act_range(act, &lo, &hi);
  s256_run_f32(a, lda, b, ldb, bias, c, ldc, m, n, k, ar__act_is_clamp(act), lo, hi);
  s256_activation_rows(c, ldc, m, n, act);
#else
  (void)a; (void)lda; (void)b; (void)ldb; (void)bias; (void)c; (void)ldc; (void)m; (void)n;
  (void)k; (void)act;
#endif
}

void ar_sgemm256_nt_f16(const float *a, int64_t lda, const uint16_t *b, int64_t ldb,
                        const float *bias, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                        ar_activation_t act) {
#if AR_HAVE_AVX2_CLONE
  if (m <= 0 || n <= 0) return;
  float lo, hi;
  ar__act_range(act, &lo, &hi);
  s256_run_f16(a, lda, b, ldb, bias, c, ldc, m, n, k, ar__act_is_clamp(act), lo, hi);
  s256_activation_rows(c, ldc, m, n, act);
#else
  (void)a; (void)lda; (void)b; (void)ldb; (void)bias; (void)c; (void)ldc; (void)m; (void)n;
  (void)k; (void)act;
#endif
}

void ar_sgemv256_nt(const float *x, const float *b, const uint16_t *b16, int64_t ldb,
                    const float *bias, float *y, int64_t n, int64_t k, ar_activation_t act) {
#if AR_HAVE_AVX2_CLONE
  if (n <= 0) return;
  if (b16) s256_gemv_f16(x, b16, ldb, bias, y, n, k);
  else s256_gemv_f32(x, b, ldb, bias, y, n, k);
  ar__activate(y, (size_t)n, act);
#else
  (void)x; (void)b; (void)b16; (void)ldb; (void)bias; (void)y; (void)n; (void)k; (void)act;
#endif
}
