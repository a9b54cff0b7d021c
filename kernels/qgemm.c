/* qgemm.c - the 8-bit GEMM + requantization under quantized CONV_2D / FULLY_CONNECTED
 * (kernels/qgemm.h has the arithmetic and the packed layout).
 *
 * Implementations of the same integers, picked at run time: portable C; on x86-64 AVX2 (int16
 * vpmaddwd on sign-/zero-extended bytes) and AVX-512 VNNI (vpdpbusd, 16 channels x 4 taps per
 * instruction); on arm64 the smull/smlal tile of kernels/gemm_qs8_2x16c4_neon.c and, where
 * getauxval(AT_HWCAP) has ASIMDDP, the sdot tile of kernels/gemm_qs8_4x16c4_neondot.c, both with
 * the ASIMD store below. Each computes a tile of rows x channels into int32 accumulators, then one shared
 * store adds the folded bias (and the per-row zero-point term), rescales with TFLite's fixed-point
 * multiplier, adds the output zero point, clamps and writes bytes.
 */
#include "kernels/qgemm.h"

#include <string.h>

#include "kernels/ar_quant.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang_analyzer__)
#define AR_QGEMM_X86 1
#include <immintrin.h>
#define AR_TARGET_QAVX2 __attribute__((target("avx2")))
#define AR_TARGET_QVNNI __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vnni")))
#else
#define AR_QGEMM_X86 0
#endif

#if defined(__aarch64__)
#include <arm_neon.h>
#include <sys/auxv.h>

#include "kernels/gemm_qs8_neon.h"
#include "kernels/requant_neon.h"
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1ul << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1ul << 20)
#endif
#endif

#define QG_ALWAYS_INLINE inline __attribute__((always_inline))
/* Largest tile a kernel computes before the store: rows x channels. */
#define QG_MAX_ROWS 6
#define QG_MAX_COLS 64
#if defined(__aarch64__)
_Static_assert(QG_MAX_ROWS == AR_QGEMM_TILE_ROWS && QG_MAX_COLS == AR_QGEMM_TILE_COLS,
               "kernels/gemm_qs8_neon.h's tile = this file's");
#endif

size_t ar_qgemm_packed_bytes(const ar_qgemm_t *g) {
  return (size_t)g->n_blocks * (size_t)g->k_groups * 64u;
}

void ar_qgemm_pack(ar_qgemm_t *g, const uint8_t *w, bool w_unsigned, const int64_t *w_zp,
                   int32_t w_zp_n, const int32_t *bias, int32_t in_zero_point, uint8_t *packed,
                   int32_t *bias_out) {
  const int32_t n = g->n, k = g->k;
  const int32_t za = g->a_xor ? in_zero_point + 128 : in_zero_point;   /* za' */
  /* the kernels' S is sum a'w' (x86) or sum (a' - 128)w' (arm64): colsum's coefficient */
  const int32_t za_col = AR_QGEMM_A_SIGNED ? za - 128 : za;
  bool has_min = false;
  memset(packed, 0, ar_qgemm_packed_bytes(g));
  for (int32_t o = 0; o < n; o++) {
    const int32_t b = o / 16, c = o % 16;
    int64_t colsum = 0;
    for (int32_t i = 0; i < k; i++) {
      int32_t v = w_unsigned ? (int32_t)w[(size_t)o * k + i] - 128 : (int32_t)(int8_t)w[(size_t)o * k + i];
      colsum += v;
      has_min |= v == -128;
      packed[((size_t)b * g->k_groups + (size_t)(i / 4)) * 64u + (size_t)c * 4u + (size_t)(i % 4)] =
          (uint8_t)(int8_t)v;
    }
    int64_t zw = w_zp ? w_zp[w_zp_n > 1 ? o : 0] : 0;
    if (w_unsigned) zw -= 128;
    int64_t folded = (bias ? bias[o] : 0) - (int64_t)za_col * colsum + (int64_t)k * za * zw;
    bias_out[o] = (int32_t)(uint32_t)(uint64_t)folded;   /* wraps like TFLite's int32 sum */
  }
  for (int32_t o = n; o < g->n_blocks * 16; o++) bias_out[o] = 0;
  int64_t zw_row = w_zp ? w_zp[0] : 0;
  g->zw_row = (int32_t)(w_unsigned ? zw_row - 128 : zw_row);
  g->w_has_min = has_min;
}

/* ---- The store: bias, zero-point row term, rescale, clamp, bytes. ---- */

static QG_ALWAYS_INLINE int32_t qg_rescale(int32_t x, int32_t m, int32_t shift, bool up) {
  return up ? ar_mbqm_up(x, m, shift) : ar_mbqm(x, m, shift);
}

/* acc: rows x QG_MAX_COLS int32 (row stride QG_MAX_COLS), channels [n0, n0 + cols). */
static QG_ALWAYS_INLINE void qg_store(const ar_qgemm_t *g, const int32_t *acc, int rows,
                                      const int32_t *row_add, int32_t n0, int cols,
                                      const int32_t *bias, const int32_t *mult,
                                      const int32_t *shift, uint8_t *out, size_t ldo) {
  const int32_t zo = g->out_zero_point, lo = g->lo, hi = g->hi;
  for (int r = 0; r < rows; r++) {
    uint8_t *o = out + (size_t)r * ldo + n0;
    const int32_t ra = row_add ? row_add[r] : 0;
    for (int c = 0; c < cols; c++) {
      const int32_t n = n0 + c;
      int32_t v = (int32_t)((uint32_t)acc[r * QG_MAX_COLS + c] + (uint32_t)bias[n] + (uint32_t)ra);
      v = qg_rescale(v, mult[n], shift[n], g->round_up) + zo;
      v = v < lo ? lo : v;
      v = v > hi ? hi : v;
      o[c] = (uint8_t)v;
    }
  }
}

#if defined(__aarch64__)
/* Sum of n bytes (n a multiple of 4): uadalp 16 at a time into u16 lanes (128 vectors at most
 * before a lane could pass 65535), then 8 and 4. */
static uint32_t qg_bytes_sum_neon(const uint8_t *a, int32_t n) {
  uint32_t s = 0;
  int32_t v16 = n / 16;
  while (v16 > 0) {
    const int32_t c = v16 < 128 ? v16 : 128;
    uint16x8_t t = vdupq_n_u16(0);
    for (int32_t j = 0; j < c; j++, a += 16) t = vpadalq_u8(t, vld1q_u8(a));
    s += vaddlvq_u16(t);
    v16 -= c;
  }
  if (n & 8) { s += vaddlv_u8(vld1_u8(a)); a += 8; }
  if (n & 4) s += (uint32_t)a[0] + a[1] + a[2] + a[3];
  return s;
}
#endif

/* -zw' * sum_k (a[r][k] ^ a_xor) for each row of a tile (legacy uint8 weights); the rows are
 * nseg segments of K / nseg bytes, segment q of row r at rowp[q * QG_MAX_ROWS + r]. */
static void qg_row_terms(const ar_qgemm_t *g, const uint8_t *const *rowp, int nseg, int rows,
                         int32_t *row_add) {
  const int32_t seg_bytes = g->k / nseg;
  for (int r = 0; r < rows; r++) {
    int32_t s = 0;
    for (int q = 0; q < nseg; q++) {
      const uint8_t *a = rowp[q * QG_MAX_ROWS + r];
#if defined(__aarch64__)
      /* (uint8 activations: the only ones beside uint8 weights) */
      if (!g->a_xor && seg_bytes % 4 == 0) {
        s += (int32_t)qg_bytes_sum_neon(a, seg_bytes);
        continue;
      }
#endif
      if (g->a_xor)
        for (int32_t i = 0; i < seg_bytes; i++) s += (int32_t)(a[i] ^ 0x80u);
      else
        for (int32_t i = 0; i < seg_bytes; i++) s += (int32_t)a[i];
    }
    row_add[r] = -g->zw_row * s;
  }
}

/* ---- Portable C. ---- */

static void qg_tile_portable(const ar_qgemm_t *g, const uint8_t *packed, const uint8_t *const *rowp,
                             int nseg, int rows, int32_t b0, int nb, int32_t *acc) {
  const uint32_t x = g->a_xor ^ (AR_QGEMM_A_SIGNED ? 0x80u : 0u);
  /* a' (0..255) or, AR_QGEMM_A_SIGNED, a' - 128 = (int8_t)(a' ^ 0x80) */
#define QG_A(i) (AR_QGEMM_A_SIGNED ? (int32_t)(int8_t)(a[i] ^ x) : (int32_t)(a[i] ^ x))
  const int32_t sg = g->k_groups / nseg;
  for (int r = 0; r < rows; r++) {
    for (int v = 0; v < nb; v++) {
      int32_t s[16] = {0};
      const uint8_t *p = packed + (size_t)(b0 + v) * g->k_groups * 64u;
      for (int q = 0; q < nseg; q++) {
        const uint8_t *a = rowp[q * QG_MAX_ROWS + r];
        for (int32_t kg = 0; kg < sg; kg++, p += 64) {
          const int32_t a0 = QG_A(4 * kg), a1 = QG_A(4 * kg + 1);
          const int32_t a2 = QG_A(4 * kg + 2), a3 = QG_A(4 * kg + 3);
          for (int c = 0; c < 16; c++)
            s[c] += a0 * (int8_t)p[4 * c] + a1 * (int8_t)p[4 * c + 1] + a2 * (int8_t)p[4 * c + 2] +
                    a3 * (int8_t)p[4 * c + 3];
        }
      }
      memcpy(acc + r * QG_MAX_COLS + 16 * v, s, sizeof s);
    }
  }
#undef QG_A
}

/* ---- AVX2: bytes widened to int16, vpmaddwd. ---- */
#if AR_QGEMM_X86
#define QG_AVX2_ROWS 3
AR_TARGET_QAVX2 static void qg_tile_avx2(const ar_qgemm_t *g, const uint8_t *packed,
                                         const uint8_t *const *rowp, int nseg, int rows, int32_t b0,
                                         int nb, int32_t *acc) {
  const uint32_t xr = g->a_xor ? 0x80808080u : 0u;
  const int32_t sg = g->k_groups / nseg;
  for (int v = 0; v < nb; v++) {
    const uint8_t *pb = packed + (size_t)(b0 + v) * g->k_groups * 64u;
    for (int r0 = 0; r0 < rows; r0 += QG_AVX2_ROWS) {
      /* named accumulators [row][4-channel piece] (an array of them stayed in memory) */
      __m256i s00 = _mm256_setzero_si256(), s01 = s00, s02 = s00, s03 = s00;
      __m256i s10 = s00, s11 = s00, s12 = s00, s13 = s00, s20 = s00, s21 = s00, s22 = s00, s23 = s00;
      const uint8_t *p = pb;
      for (int q = 0; q < nseg; q++) {
      const uint8_t *const *rq = rowp + q * QG_MAX_ROWS;
      const uint8_t *a0p = rq[r0];
      const uint8_t *a1p = rq[r0 + 1 < rows ? r0 + 1 : r0];
      const uint8_t *a2p = rq[r0 + 2 < rows ? r0 + 2 : r0];
      for (int32_t kg = 0; kg < sg; kg++, p += 64) {
        uint32_t u0, u1, u2;
        memcpy(&u0, a0p + 4 * kg, 4);
        memcpy(&u1, a1p + 4 * kg, 4);
        memcpy(&u2, a2p + 4 * kg, 4);
        /* 4 activation bytes -> 4 int16, repeated in every 64-bit lane. */
        const __m256i x0 = _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128((int)(u0 ^ xr))));
        const __m256i x1 = _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128((int)(u1 ^ xr))));
        const __m256i x2 = _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128((int)(u2 ^ xr))));
        /* 4 channels x 4 taps as int16; madd gives [c0 taps01, c0 taps23, c1 ..] */
#define QG_AVX2_PIECE(j)                                                                         \
        do {                                                                                     \
          const __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(p + 16 * j))); \
          s0##j = _mm256_add_epi32(s0##j, _mm256_madd_epi16(x0, w));                             \
          s1##j = _mm256_add_epi32(s1##j, _mm256_madd_epi16(x1, w));                             \
          s2##j = _mm256_add_epi32(s2##j, _mm256_madd_epi16(x2, w));                             \
        } while (0)
        QG_AVX2_PIECE(0); QG_AVX2_PIECE(1); QG_AVX2_PIECE(2); QG_AVX2_PIECE(3);
#undef QG_AVX2_PIECE
      }
      }
      const __m256i s[QG_AVX2_ROWS][4] = {{s00, s01, s02, s03}, {s10, s11, s12, s13},
                                          {s20, s21, s22, s23}};
      for (int r = 0; r < QG_AVX2_ROWS && r0 + r < rows; r++) {
        /* hadd pairs: [c0 c1 c4 c5 | c2 c3 c6 c7] -> permute 64-bit lanes 0,2,1,3. */
        __m256i lo8 = _mm256_permute4x64_epi64(_mm256_hadd_epi32(s[r][0], s[r][1]), 0xD8);
        __m256i hi8 = _mm256_permute4x64_epi64(_mm256_hadd_epi32(s[r][2], s[r][3]), 0xD8);
        int32_t *dst = acc + (r0 + r) * QG_MAX_COLS + 16 * v;
        _mm256_storeu_si256((__m256i *)dst, lo8);
        _mm256_storeu_si256((__m256i *)(dst + 8), hi8);
      }
    }
  }
}

/* ---- AVX-512 VNNI: vpdpbusd, rows x nb blocks of 16 channels in zmm accumulators. ---- */
AR_TARGET_QVNNI static QG_ALWAYS_INLINE __m512i qg_bcast(const uint8_t *p, uint32_t xr) {
  uint32_t u;
  memcpy(&u, p, 4);
  return _mm512_set1_epi32((int)(u ^ xr));
}

/* 6 rows x NB blocks of 16 channels. Accumulators are named variables, not an array: GCC kept an
 * array of 24 zmm in memory as well as in registers and stored it every iteration. */
#define QG_VNNI_ROW(r)                                                                           \
  do {                                                                                           \
    const __m512i x = qg_bcast(a##r + 4 * kg, xr);                                               \
    c##r##0 = _mm512_dpbusd_epi32(c##r##0, x, w0);                                               \
    if (QG_NB > 1) c##r##1 = _mm512_dpbusd_epi32(c##r##1, x, w1);                                   \
    if (QG_NB > 2) c##r##2 = _mm512_dpbusd_epi32(c##r##2, x, w2);                                   \
    if (QG_NB > 3) c##r##3 = _mm512_dpbusd_epi32(c##r##3, x, w3);                                   \
  } while (0)
#define QG_VNNI_OUT(r)                                                                           \
  do {                                                                                           \
    _mm512_storeu_si512((void *)(acc + r * QG_MAX_COLS), c##r##0);                               \
    if (QG_NB > 1) _mm512_storeu_si512((void *)(acc + r * QG_MAX_COLS + 16), c##r##1);              \
    if (QG_NB > 2) _mm512_storeu_si512((void *)(acc + r * QG_MAX_COLS + 32), c##r##2);              \
    if (QG_NB > 3) _mm512_storeu_si512((void *)(acc + r * QG_MAX_COLS + 48), c##r##3);              \
  } while (0)
#define QG_VNNI_TILE(NB)                                                                         \
  AR_TARGET_QVNNI static void qg_vnni_6_##NB(const uint8_t *packed, size_t bstride, int nseg,    \
                                             int32_t sg, const uint8_t *const *rowp,             \
                                             uint32_t xr, int32_t *acc) {                        \
    enum { QG_NB = NB };                                                                         \
    const __m512i z = _mm512_setzero_si512();                                                    \
    __m512i c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z;              \
    __m512i c20 = z, c21 = z, c22 = z, c23 = z, c30 = z, c31 = z, c32 = z, c33 = z;              \
    __m512i c40 = z, c41 = z, c42 = z, c43 = z, c50 = z, c51 = z, c52 = z, c53 = z;              \
    const uint8_t *p = packed;                                                                   \
    for (int q = 0; q < nseg; q++) {                                                             \
    const uint8_t *const *rq = rowp + q * QG_MAX_ROWS;                                           \
    const uint8_t *a0 = rq[0], *a1 = rq[1], *a2 = rq[2], *a3 = rq[3], *a4 = rq[4], *a5 = rq[5];  \
    for (int32_t kg = 0; kg < sg; kg++, p += 64) {                                               \
      const __m512i w0 = _mm512_loadu_si512((const void *)p);                                    \
      const __m512i w1 = NB > 1 ? _mm512_loadu_si512((const void *)(p + bstride)) : z;           \
      const __m512i w2 = NB > 2 ? _mm512_loadu_si512((const void *)(p + 2 * bstride)) : z;       \
      const __m512i w3 = NB > 3 ? _mm512_loadu_si512((const void *)(p + 3 * bstride)) : z;       \
      QG_VNNI_ROW(0); QG_VNNI_ROW(1); QG_VNNI_ROW(2);                                            \
      QG_VNNI_ROW(3); QG_VNNI_ROW(4); QG_VNNI_ROW(5);                                            \
    }                                                                                            \
    }                                                                                            \
    QG_VNNI_OUT(0); QG_VNNI_OUT(1); QG_VNNI_OUT(2);                                              \
    QG_VNNI_OUT(3); QG_VNNI_OUT(4); QG_VNNI_OUT(5);                                              \
  }
QG_VNNI_TILE(4)
QG_VNNI_TILE(3)
QG_VNNI_TILE(2)
QG_VNNI_TILE(1)
#undef QG_VNNI_TILE
#undef QG_VNNI_ROW
#undef QG_VNNI_OUT

/* One row (a FULLY_CONNECTED on one input row, the last row of a layer): each block's sum in four
 * accumulators over alternate groups, added at the end (the same int32 sum, wrapping alike), so
 * that four vpdpbusd are in flight instead of one chain - where the 6-row tile would compute the
 * row six times over. */
AR_TARGET_QVNNI static void qg_vnni_row1(const uint8_t *packed, size_t bstride, int nseg, int32_t sg,
                                         const uint8_t *const *rowp, uint32_t xr, int nb, int32_t *acc) {
  for (int v = 0; v < nb; v++) {
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    for (int q = 0; q < nseg; q++) {
      const uint8_t *a = rowp[q * QG_MAX_ROWS];
      const uint8_t *p = packed + (size_t)v * bstride + (size_t)q * (size_t)sg * 64u;
      int32_t kg = 0;
      for (; kg + 4 <= sg; kg += 4, p += 256) {
        s0 = _mm512_dpbusd_epi32(s0, qg_bcast(a + 4 * kg, xr), _mm512_loadu_si512((const void *)p));
        s1 = _mm512_dpbusd_epi32(s1, qg_bcast(a + 4 * kg + 4, xr), _mm512_loadu_si512((const void *)(p + 64)));
        s2 = _mm512_dpbusd_epi32(s2, qg_bcast(a + 4 * kg + 8, xr), _mm512_loadu_si512((const void *)(p + 128)));
        s3 = _mm512_dpbusd_epi32(s3, qg_bcast(a + 4 * kg + 12, xr), _mm512_loadu_si512((const void *)(p + 192)));
      }
      for (; kg < sg; kg++, p += 64)
        s0 = _mm512_dpbusd_epi32(s0, qg_bcast(a + 4 * kg, xr), _mm512_loadu_si512((const void *)p));
    }
    const __m512i sum = _mm512_add_epi32(_mm512_add_epi32(s0, s1), _mm512_add_epi32(s2, s3));
    _mm512_storeu_si512((void *)(acc + 16 * v), sum);
  }
}

static void qg_tile_vnni(const ar_qgemm_t *g, const uint8_t *packed, const uint8_t *const *rowp,
                         int nseg, int rows, int32_t b0, int nb, int32_t *acc) {
  /* rowp has QG_MAX_ROWS entries per segment, the spare ones repeat the last row */
  const uint32_t xr = g->a_xor ? 0x80808080u : 0u;
  const size_t bstride = (size_t)g->k_groups * 64u;
  const uint8_t *p = packed + (size_t)b0 * bstride;
  const int32_t sg = g->k_groups / nseg;
  if (rows == 1) { qg_vnni_row1(p, bstride, nseg, sg, rowp, xr, nb, acc); return; }
  switch (nb) {
    case 4: qg_vnni_6_4(p, bstride, nseg, sg, rowp, xr, acc); break;
    case 3: qg_vnni_6_3(p, bstride, nseg, sg, rowp, xr, acc); break;
    case 2: qg_vnni_6_2(p, bstride, nseg, sg, rowp, xr, acc); break;
    default: qg_vnni_6_1(p, bstride, nseg, sg, rowp, xr, acc); break;
  }
}
#endif /* AR_QGEMM_X86 */

/* ---- Vector stores: the same rescale, 8 or 16 channels at a time. ----
 * Both roundings share the first step: gemmlowp's SaturatingRoundingDoublingHighMul equals
 * floor((x*m + 2^30) / 2^31) (its saturating case needs m = INT32_MIN, never a Q31 multiplier),
 * which is also the half-up kernel's first step. The second, x / 2^r, is
 * (v >> r) + (rem > (mask >> 1) + (away && v < 0)) with rem = v & mask, mask = 2^r - 1: ties go up,
 * or away from zero for ar_mbqm, without the overflow of adding 2^(r-1) first. The AVX2 store forms
 * the product from x << max(shift, 0) in 32 bits, and a vector where that shift overflows (never
 * in a real model) goes to the scalar store, whose 64-bit ar_mbqm_up does not wrap; the AVX-512
 * store shifts as each rounding does (ar_mbqm: x in 32 bits, wrapping; ar_mbqm_up: the 64-bit
 * product), so it needs no such check. */
#if AR_QGEMM_X86
AR_TARGET_QVNNI static QG_ALWAYS_INLINE void qg_store_avx512_body(
    const ar_qgemm_t *g, const int32_t *acc, int rows, const int32_t *row_add, int32_t n0, int cols,
    const int32_t *bias, const int32_t *mult, const int32_t *shift, uint8_t *out, size_t ldo,
    const bool round_up) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i c30 = _mm512_set1_epi64(1ll << 30), c31 = _mm512_set1_epi64(1ll << 31);
  const __m512i minus_c30 = _mm512_set1_epi64(-(1ll << 30)), c31_shift = _mm512_set1_epi64(31);
  const __m512i low32 = _mm512_set1_epi64(0xFFFFFFFFll);
  const __m512i zo = _mm512_set1_epi32(g->out_zero_point);
  const __m512i lo = _mm512_set1_epi32(g->lo), hi = _mm512_set1_epi32(g->hi);
  for (int c = 0; c < cols; c += 16) {
    const int nc = cols - c < 16 ? cols - c : 16;
    const __mmask16 keep = (__mmask16)((1u << nc) - 1u);
    const int32_t n = n0 + c;
    const __m512i b = _mm512_loadu_si512((const void *)(bias + n));
    const __m512i m = _mm512_loadu_si512((const void *)(mult + n));
    const __m512i sh = _mm512_loadu_si512((const void *)(shift + n));
    const __m512i left = _mm512_max_epi32(sh, zero), right = _mm512_max_epi32(_mm512_sub_epi32(zero, sh), zero);
    const __m512i m_odd = _mm512_srli_epi64(m, 32);
    const __m512i l_e = _mm512_and_si512(left, low32), l_o = _mm512_srli_epi64(left, 32);
    const bool any_left = _mm512_mask_cmpgt_epi32_mask(keep, left, zero) != 0;
    /* Both roundings as one 64-bit arithmetic shift (floor(floor(a) / n) = floor(a / n)):
     * half up: (p + 2^30 + 2^(30+r)) >> (31 + r), r > 0 (2^30 alone when r = 0);
     * ar_mbqm: the same, less 2^31 where r > 0 and v = floor((p + 2^30) / 2^31) < 0, i.e.
     * p < -2^30 (the shift's negative ties then go down, away from zero). Even and odd channels
     * live in the even and odd 32-bit halves of 64-bit lanes. */
    const __m512i r_e = _mm512_and_si512(right, low32), r_o = _mm512_srli_epi64(right, 32);
    const __mmask8 rpos_e = _mm512_cmpgt_epi64_mask(r_e, zero), rpos_o = _mm512_cmpgt_epi64_mask(r_o, zero);
    const __m512i rc_e = _mm512_add_epi64(c30, _mm512_maskz_mov_epi64(rpos_e, _mm512_sllv_epi64(c30, r_e)));
    const __m512i rc_o = _mm512_add_epi64(c30, _mm512_maskz_mov_epi64(rpos_o, _mm512_sllv_epi64(c30, r_o)));
    const __m512i sh_e = _mm512_add_epi64(r_e, c31_shift), sh_o = _mm512_add_epi64(r_o, c31_shift);
    for (int r = 0; r < rows; r++) {
      __m512i x = _mm512_add_epi32(_mm512_loadu_si512((const void *)(acc + r * QG_MAX_COLS + c)), b);
      if (row_add) x = _mm512_add_epi32(x, _mm512_set1_epi32(row_add[r]));
      /* the left shift: ar_mbqm's wraps in 32 bits, ar_mbqm_up's is exact in 64 */
      const __m512i xs = any_left && !round_up ? _mm512_sllv_epi32(x, left) : x;
      __m512i pe = _mm512_mul_epi32(xs, m);
      __m512i po = _mm512_mul_epi32(_mm512_srli_epi64(xs, 32), m_odd);
      if (any_left && round_up) {
        pe = _mm512_sllv_epi64(pe, l_e);
        po = _mm512_sllv_epi64(po, l_o);
      }
      __m512i te = _mm512_add_epi64(pe, rc_e), to = _mm512_add_epi64(po, rc_o);
      if (!round_up) {
        te = _mm512_mask_sub_epi64(te, _mm512_cmplt_epi64_mask(pe, minus_c30) & rpos_e, te, c31);
        to = _mm512_mask_sub_epi64(to, _mm512_cmplt_epi64_mask(po, minus_c30) & rpos_o, to, c31);
      }
      const __m512i qe = _mm512_srav_epi64(te, sh_e), qo = _mm512_srav_epi64(to, sh_o);
      __m512i q = _mm512_mask_blend_epi32(0xAAAA, qe, _mm512_slli_epi64(qo, 32));
      q = _mm512_add_epi32(q, zo);
      q = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
      _mm_mask_storeu_epi8(out + (size_t)r * ldo + n, keep, _mm512_cvtepi32_epi8(q));
    }
  }
}

AR_TARGET_QVNNI static void qg_store_avx512(const ar_qgemm_t *g, const int32_t *acc, int rows,
                                            const int32_t *row_add, int32_t n0, int cols,
                                            const int32_t *bias, const int32_t *mult,
                                            const int32_t *shift, uint8_t *out, size_t ldo) {
  if (g->round_up) qg_store_avx512_body(g, acc, rows, row_add, n0, cols, bias, mult, shift, out, ldo, true);
  else qg_store_avx512_body(g, acc, rows, row_add, n0, cols, bias, mult, shift, out, ldo, false);
}

AR_TARGET_QAVX2 static void qg_store_avx2(const ar_qgemm_t *g, const int32_t *acc, int rows,
                                          const int32_t *row_add, int32_t n0, int cols,
                                          const int32_t *bias, const int32_t *mult,
                                          const int32_t *shift, uint8_t *out, size_t ldo) {
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
  const __m256i nudge = _mm256_set1_epi64x(1ll << 30);
  const __m256i zo = _mm256_set1_epi32(g->out_zero_point);
  const __m256i lo = _mm256_set1_epi32(g->lo), hi = _mm256_set1_epi32(g->hi);
  const __m256i away = _mm256_set1_epi32(g->round_up ? 0 : -1);
  int c = 0;
  for (; c + 8 <= cols; c += 8) {
    const int32_t n = n0 + c;
    const __m256i b = _mm256_loadu_si256((const __m256i *)(bias + n));
    const __m256i m = _mm256_loadu_si256((const __m256i *)(mult + n));
    const __m256i sh = _mm256_loadu_si256((const __m256i *)(shift + n));
    const __m256i left = _mm256_max_epi32(sh, zero), right = _mm256_max_epi32(_mm256_sub_epi32(zero, sh), zero);
    const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, right), one);
    const __m256i thr0 = _mm256_srli_epi32(mask, 1);
    const __m256i m_odd = _mm256_srli_epi64(m, 32);
    for (int r = 0; r < rows; r++) {
      __m256i x = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(acc + r * QG_MAX_COLS + c)), b);
      if (row_add) x = _mm256_add_epi32(x, _mm256_set1_epi32(row_add[r]));
      const __m256i xs = _mm256_sllv_epi32(x, left);
      if (_mm256_movemask_epi8(_mm256_cmpeq_epi32(_mm256_srav_epi32(xs, left), x)) != -1) {
        qg_store(g, acc + r * QG_MAX_COLS + c, 1, row_add ? row_add + r : NULL, n, 8, bias, mult,
                 shift, out + (size_t)r * ldo, ldo);
        continue;
      }
      const __m256i pe = _mm256_add_epi64(_mm256_mul_epi32(xs, m), nudge);
      const __m256i po = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(xs, 32), m_odd), nudge);
      const __m256i v = _mm256_blend_epi32(_mm256_srli_epi64(pe, 31), _mm256_slli_epi64(po, 1), 0xAA);
      const __m256i thr = _mm256_sub_epi32(thr0, _mm256_and_si256(_mm256_cmpgt_epi32(zero, v), away));
      __m256i q = _mm256_srav_epi32(v, right);
      q = _mm256_sub_epi32(q, _mm256_cmpgt_epi32(_mm256_and_si256(v, mask), thr));
      q = _mm256_add_epi32(q, zo);
      q = _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
      /* byte 0 of each int32, lanes 0-3 and 4-7 joined */
      const __m256i sel = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                           0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
      const __m256i bytes = _mm256_shuffle_epi8(q, sel);
      const uint32_t w0 = (uint32_t)_mm256_extract_epi32(bytes, 0), w1 = (uint32_t)_mm256_extract_epi32(bytes, 4);
      memcpy(out + (size_t)r * ldo + n, &w0, 4);
      memcpy(out + (size_t)r * ldo + n + 4, &w1, 4);
    }
  }
  if (c < cols)
    qg_store(g, acc + c, rows, row_add, n0 + c, cols - c, bias, mult, shift, out, ldo);
}
#endif

/* ---- ASIMD store: 16 (then 8) channels per step, kernels/requant_neon.h's exact rescales, then the zero
 * point and the clamp on saturated int16 / bytes (lo and hi lie inside the byte type, so
 * saturating first and clamping after gives the clamp of the exact value). ---- */
#if defined(__aarch64__)
/* 4 lanes of the rescale; false when an ar_mbqm_up left shift overflowed (the caller goes scalar). */
static QG_ALWAYS_INLINE bool qg_rq4_neon(int32x4_t x, int32x4_t m, int32x4_t l, int32x4_t r,
                                         bool any_left, bool round_up, int32x4_t *q) {
  if (round_up) {
    if (any_left) {
      if (!ar_neon_shl_exact(x, l)) return false;
      *q = ar_neon_mbqm_up(x, m, l, r);
    } else {
      *q = ar_neon_mbqm_up_r(x, m, r);
    }
  } else {
    *q = ar_neon_mbqm(x, m, l, r);
  }
  return true;
}

static QG_ALWAYS_INLINE void qg_store_neon_body(const ar_qgemm_t *g, const int32_t *acc, int rows,
                                                const int32_t *row_add, int32_t n0, int cols,
                                                const int32_t *bias, const int32_t *mult,
                                                const int32_t *shift, uint8_t *out, size_t ldo,
                                                const bool round_up, const bool s8) {
  const int16x8_t zo = vdupq_n_s16((int16_t)g->out_zero_point);
  const int8x16_t lo_s = vdupq_n_s8((int8_t)g->lo), hi_s = vdupq_n_s8((int8_t)g->hi);
  const uint8x16_t lo_u = vdupq_n_u8((uint8_t)g->lo), hi_u = vdupq_n_u8((uint8_t)g->hi);
  int c = 0;
  /* 16 channels per step: one byte vector per row */
  for (; c + 16 <= cols; c += 16) {
    const int32_t n = n0 + c;
    int32x4_t b[4], m[4], l[4], r[4];
    int32x4_t lmax = vdupq_n_s32(0);
    for (int j = 0; j < 4; j++) {
      b[j] = vld1q_s32(bias + n + 4 * j);
      m[j] = vld1q_s32(mult + n + 4 * j);
      const int32x4_t sh = vld1q_s32(shift + n + 4 * j);
      l[j] = ar_neon_left(sh);
      r[j] = ar_neon_rneg(sh);
      lmax = vmaxq_s32(lmax, l[j]);
    }
    const bool any_left = vmaxvq_s32(lmax) > 0;
    for (int rr = 0; rr < rows; rr++) {
      const int32_t *a = acc + rr * QG_MAX_COLS + c;
      const int32x4_t ra = vdupq_n_s32(row_add ? row_add[rr] : 0);
      int32x4_t q[4];
      bool ok = true;
      for (int j = 0; j < 4; j++) {
        int32x4_t x = vaddq_s32(vld1q_s32(a + 4 * j), b[j]);
        if (row_add) x = vaddq_s32(x, ra);
        ok &= qg_rq4_neon(x, m[j], l[j], r[j], any_left, round_up, &q[j]);
      }
      if (!ok) {
        qg_store(g, a, 1, row_add ? row_add + rr : NULL, n, 16, bias, mult, shift,
                 out + (size_t)rr * ldo, ldo);
        continue;
      }
      const int16x8_t h0 = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(q[0]), q[1]), zo);
      const int16x8_t h1 = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(q[2]), q[3]), zo);
      uint8_t *o = out + (size_t)rr * ldo + n;
      if (s8) vst1q_s8((int8_t *)o, vminq_s8(vmaxq_s8(vqmovn_high_s16(vqmovn_s16(h0), h1), lo_s), hi_s));
      else vst1q_u8(o, vminq_u8(vmaxq_u8(vqmovun_high_s16(vqmovun_s16(h0), h1), lo_u), hi_u));
    }
  }
  for (; c + 8 <= cols; c += 8) {
    const int32_t n = n0 + c;
    const int32x4_t b0 = vld1q_s32(bias + n), b1 = vld1q_s32(bias + n + 4);
    const int32x4_t m0 = vld1q_s32(mult + n), m1 = vld1q_s32(mult + n + 4);
    const int32x4_t s0 = vld1q_s32(shift + n), s1 = vld1q_s32(shift + n + 4);
    const int32x4_t l0 = ar_neon_left(s0), l1 = ar_neon_left(s1);
    const int32x4_t r0 = ar_neon_rneg(s0), r1 = ar_neon_rneg(s1);
    const bool any_left = vmaxvq_s32(vmaxq_s32(l0, l1)) > 0;
    for (int rr = 0; rr < rows; rr++) {
      int32x4_t x0 = vaddq_s32(vld1q_s32(acc + rr * QG_MAX_COLS + c), b0);
      int32x4_t x1 = vaddq_s32(vld1q_s32(acc + rr * QG_MAX_COLS + c + 4), b1);
      if (row_add) {
        x0 = vaddq_s32(x0, vdupq_n_s32(row_add[rr]));
        x1 = vaddq_s32(x1, vdupq_n_s32(row_add[rr]));
      }
      int32x4_t q0, q1;
      if (!qg_rq4_neon(x0, m0, l0, r0, any_left, round_up, &q0) ||
          !qg_rq4_neon(x1, m1, l1, r1, any_left, round_up, &q1)) {
        qg_store(g, acc + rr * QG_MAX_COLS + c, 1, row_add ? row_add + rr : NULL, n, 8, bias,
                 mult, shift, out + (size_t)rr * ldo, ldo);
        continue;
      }
      const int16x8_t h = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(q0), q1), zo);
      uint8_t *o = out + (size_t)rr * ldo + n;
      if (s8) vst1_s8((int8_t *)o, vmin_s8(vmax_s8(vqmovn_s16(h), vget_low_s8(lo_s)), vget_low_s8(hi_s)));
      else vst1_u8(o, vmin_u8(vmax_u8(vqmovun_s16(h), vget_low_u8(lo_u)), vget_low_u8(hi_u)));
    }
  }
  if (c < cols)
    qg_store(g, acc + c, rows, row_add, n0 + c, cols - c, bias, mult, shift, out, ldo);
}

static void qg_store_neon(const ar_qgemm_t *g, const int32_t *acc, int rows, const int32_t *row_add,
                          int32_t n0, int cols, const int32_t *bias, const int32_t *mult,
                          const int32_t *shift, uint8_t *out, size_t ldo) {
  /* int8 output bytes when the clamp reaches below 0. Not a_xor: a caller may hand the GEMM int8
   * activations already flipped to unsigned (a_xor 0; the one-channel depthwise route) and still
   * want int8 outputs. A clamp inside [0, 127] gives the same bytes either way. */
  const bool s8 = g->lo < 0;
  if (g->round_up) {
    if (s8) qg_store_neon_body(g, acc, rows, row_add, n0, cols, bias, mult, shift, out, ldo, true, true);
    else qg_store_neon_body(g, acc, rows, row_add, n0, cols, bias, mult, shift, out, ldo, true, false);
  } else {
    if (s8) qg_store_neon_body(g, acc, rows, row_add, n0, cols, bias, mult, shift, out, ldo, false, true);
    else qg_store_neon_body(g, acc, rows, row_add, n0, cols, bias, mult, shift, out, ldo, false, false);
  }
}

static unsigned long qg_hwcap(void) {
  static unsigned long cap = 0, known = 0;   /* relaxed: every thread computes the same value */
  if (!__atomic_load_n(&known, __ATOMIC_RELAXED)) {
    __atomic_store_n(&cap, getauxval(AT_HWCAP), __ATOMIC_RELAXED);
    __atomic_store_n(&known, 1, __ATOMIC_RELAXED);
  }
  return __atomic_load_n(&cap, __ATOMIC_RELAXED);
}
#endif

/* ---- Dispatch. ---- */

typedef void (*qg_store_fn)(const ar_qgemm_t *, const int32_t *, int, const int32_t *, int32_t, int,
                            const int32_t *, const int32_t *, const int32_t *, uint8_t *, size_t);

static void qg_store_portable(const ar_qgemm_t *g, const int32_t *acc, int rows,
                              const int32_t *row_add, int32_t n0, int cols, const int32_t *bias,
                              const int32_t *mult, const int32_t *shift, uint8_t *out, size_t ldo) {
  qg_store(g, acc, rows, row_add, n0, cols, bias, mult, shift, out, ldo);
}

typedef void (*qg_tile_fn)(const ar_qgemm_t *, const uint8_t *, const uint8_t *const *, int, int,
                           int32_t, int, int32_t *);

static ar_qgemm_path_t qg_forced = AR_QGEMM_AUTO;

bool ar_qgemm_path_supported(ar_qgemm_path_t path) {
  switch (path) {
    case AR_QGEMM_AUTO: case AR_QGEMM_PORTABLE: return true;
#if AR_QGEMM_X86
    case AR_QGEMM_AVX2: return __builtin_cpu_supports("avx2");
    case AR_QGEMM_AVX512VNNI:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512vnni");
#endif
#if defined(__aarch64__)
    case AR_QGEMM_NEON: return (qg_hwcap() & HWCAP_ASIMD) != 0;
    case AR_QGEMM_NEONDOT: return (qg_hwcap() & (HWCAP_ASIMD | HWCAP_ASIMDDP)) == (HWCAP_ASIMD | HWCAP_ASIMDDP);
#endif
    default: return false;
  }
}

ar_qgemm_path_t ar_qgemm_best_path(void) {
  if (ar_qgemm_path_supported(AR_QGEMM_AVX512VNNI)) return AR_QGEMM_AVX512VNNI;
  if (ar_qgemm_path_supported(AR_QGEMM_AVX2)) return AR_QGEMM_AVX2;
  if (ar_qgemm_path_supported(AR_QGEMM_NEONDOT)) return AR_QGEMM_NEONDOT;
  if (ar_qgemm_path_supported(AR_QGEMM_NEON)) return AR_QGEMM_NEON;
  return AR_QGEMM_PORTABLE;
}

void ar_qgemm_force_path(ar_qgemm_path_t path) {
  qg_forced = ar_qgemm_path_supported(path) ? path : AR_QGEMM_AUTO;
}

const char *ar_qgemm_path_name(ar_qgemm_path_t path) {
  if (path == AR_QGEMM_AUTO) path = qg_forced != AR_QGEMM_AUTO ? qg_forced : ar_qgemm_best_path();
  switch (path) {
    case AR_QGEMM_AVX2: return "avx2";
    case AR_QGEMM_AVX512VNNI: return "avx512vnni";
    case AR_QGEMM_NEON: return "neon";
    case AR_QGEMM_NEONDOT: return "neondot";
    default: return "portable";
  }
}

void ar_qgemm_run_segments(const ar_qgemm_t *g, const uint8_t *packed, const int32_t *bias,
                           const int32_t *mult, const int32_t *shift, const uint8_t *const *seg,
                           int nseg, int64_t rows, uint8_t *out, size_t ldo) {
  ar_qgemm_path_t path = qg_forced != AR_QGEMM_AUTO ? qg_forced : ar_qgemm_best_path();
  qg_tile_fn tile = qg_tile_portable;
  qg_store_fn store = qg_store_portable;
  int mr = QG_MAX_ROWS, max_nb = QG_MAX_COLS / 16;
#if AR_QGEMM_X86
  if (path == AR_QGEMM_AVX512VNNI) { tile = qg_tile_vnni; store = qg_store_avx512; }
  else if (path == AR_QGEMM_AVX2) { tile = qg_tile_avx2; store = qg_store_avx2; }
#elif defined(__aarch64__)
  if (path == AR_QGEMM_NEONDOT) { tile = ar__gemm_qs8_4x16c4_neondot; store = qg_store_neon; }
  else if (path == AR_QGEMM_NEON) { tile = ar__gemm_qs8_2x16c4_neon; store = qg_store_neon; }
#else
  (void)path;
#endif
  int32_t acc[QG_MAX_ROWS * QG_MAX_COLS];
  int32_t row_add[QG_MAX_ROWS];
  const uint8_t *rowp[AR_QGEMM_MAX_SEGS * QG_MAX_ROWS];
  for (int64_t m0 = 0; m0 < rows; m0 += mr) {
    const int rr = (int)(rows - m0 < mr ? rows - m0 : mr);
    for (int q = 0; q < nseg; q++)
      for (int r = 0; r < QG_MAX_ROWS; r++)
        rowp[q * QG_MAX_ROWS + r] = seg[(size_t)(m0 + (r < rr ? r : rr - 1)) * (size_t)nseg + (size_t)q];
    if (g->zw_row) qg_row_terms(g, rowp, nseg, rr, row_add);
    uint8_t *o = out + (size_t)m0 * ldo;
    for (int32_t b0 = 0; b0 < g->n_blocks; b0 += max_nb) {
      const int nb = (int)(g->n_blocks - b0 < max_nb ? g->n_blocks - b0 : max_nb);
      tile(g, packed, rowp, nseg, rr, b0, nb, acc);
      const int32_t n0 = b0 * 16;
      const int cols = (int)(g->n - n0 < nb * 16 ? g->n - n0 : nb * 16);
      store(g, acc, rr, g->zw_row ? row_add : NULL, n0, cols, bias, mult, shift, o, ldo);
    }
  }
}

void ar_qgemm_run(const ar_qgemm_t *g, const uint8_t *packed, const int32_t *bias,
                  const int32_t *mult, const int32_t *shift, const uint8_t *a, size_t lda,
                  int64_t rows, uint8_t *out, size_t ldo) {
  /* one segment per row, in blocks of QG_MAX_ROWS rows */
  const uint8_t *seg[QG_MAX_ROWS];
  for (int64_t m0 = 0; m0 < rows; m0 += QG_MAX_ROWS) {
    const int rr = (int)(rows - m0 < QG_MAX_ROWS ? rows - m0 : QG_MAX_ROWS);
    for (int r = 0; r < rr; r++) seg[r] = a + (size_t)(m0 + r) * lda;
    ar_qgemm_run_segments(g, packed, bias, mult, shift, seg, 1, rr, out + (size_t)m0 * ldo, ldo);
  }
}
