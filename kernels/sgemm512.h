/* sgemm512.h - internal to the kernels layer: the float GEMM with bias and fused activation on
 * AVX-512F (kernels/sgemm512.c), for the products OpenBLAS does poorly: the short-K, few-column
 * products of 1x1 convolutions (K = input channels 16..1152, N = output channels 16..1152).
 *
 *   C[M,N] (row stride ldc) = act(bias[N] (NULL: 0) + A[M,K] (row stride lda) x B[N,K]^T (ldb))
 *
 * Row-major, B as stored in an OHWI filter. Each output is the sum over k in ascending order from
 * 0, one FMA per term, then + bias (TFLite's builtin FULLY_CONNECTED and CONV_2D add the bias after
 * the product: starting from the bias rounds differently): the value of an element depends on its row of A and column of B only, never
 * on how the caller splits M or N into blocks, so any split (thread pool bands) gives identical
 * bits. Not the order OpenBLAS sums in: results differ from the cblas_sgemm path by rounding.
 * Never allocates (one 32 KB packed panel of B on the stack). Only callable when
 * ar_sgemm512_available() (AVX-512F build and CPU); act: any TFLite fused activation (clamps
 * applied in registers, TANH / SIGN_BIT by ar_apply_activation afterwards). */
#ifndef AR_SGEMM512_H
#define AR_SGEMM512_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/ar_kernels.h"
#include "kernels/conv_util.h"

bool ar_sgemm512_available(void);

void ar_sgemm512_nt(const float *a, int64_t lda, const float *b, int64_t ldb, const float *bias,
                    float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, ar_activation_t act);

/* The same with B as float16 (IEEE binary16 bits, little-endian, any alignment: fp16 weights as
 * the model stores them, ar_kernel_reads_f16), widened exactly while B is packed: the output is
 * bit-identical to ar_sgemm512_nt on the widened B. */
void ar_sgemm512_nt_f16(const float *a, int64_t lda, const uint16_t *b, int64_t ldb,
                        const float *bias, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                        ar_activation_t act);

/* y[N] = act(bias[N] (NULL: 0) + x[K] . B[j, 0 .. K)) for the N rows of B (row stride ldb), B as
 * float32 (b) or float16 (b16, widened exactly): the one-row product of FULLY_CONNECTED, reading
 * the weights once and as stored. Each y[j] is 16 lane sums over k (lane l: k = l, l + 16, ...,
 * one FMA each in k order), the lanes added pairwise, then the bias: its value depends on j's row
 * and x only, so any split of N gives the same bits, and b and b16 the same bits for the same
 * values. Only callable when ar_sgemm512_available(). Never allocates. */
void ar_sgemv512_nt(const float *x, const float *b, const uint16_t *b16, int64_t ldb,
                    const float *bias, float *y, int64_t n, int64_t k, ar_activation_t act);

#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>
/* In-register transpose of 16 rows of 16 floats: r[i][j] -> r[j][i]. */
AR_TARGET_AVX512 static inline __attribute__((always_inline)) void ar__tr16_512(__m512 r[16]) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++) {   /* r[4i+j], 128-bit lane L: rows 4i..4i+3 of column 4L+j */
    const __m512d t0 = _mm512_castps_pd(t[4 * i]), t1 = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d t2 = _mm512_castps_pd(t[4 * i + 2]), t3 = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
  __m512 o[16];
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    const __m512 x0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
    const __m512 x1 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
    const __m512 y0 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
    const __m512 y1 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
    o[j] = _mm512_shuffle_f32x4(x0, y0, 0x88);
    o[4 + j] = _mm512_shuffle_f32x4(x1, y1, 0x88);
    o[8 + j] = _mm512_shuffle_f32x4(x0, y0, 0xDD);
    o[12 + j] = _mm512_shuffle_f32x4(x1, y1, 0xDD);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) r[i] = o[i];
}

#endif

#endif /* AR_SGEMM512_H */
