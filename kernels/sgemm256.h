/* sgemm256.h - internal to the kernels layer: kernels/sgemm512.c's float GEMM, float16-B GEMM and
 * one-row product for CPUs with AVX2 + FMA + F16C and no AVX-512F (kernels/sgemm256.c), with
 * the SAME BITS as sgemm512 (kernels/sgemm512.h states the order of operations both keep).
 * Callers go through kernels/sgemm.h, which picks one of the two by the float ISA level.
 *
 *   C[M,N] (row stride ldc) = act(bias[N] (NULL: 0) + A[M,K] (row stride lda) x B[N,K]^T (ldb))
 *
 * Row-major, B as stored in an OHWI filter, all sizes in elements. Each output is the K terms in
 * ascending k from 0, one FMA each (fmaf), then + bias, then the clamp of a RELU / RELU6 / RELU_N1_TO_1
 * (max with lo, then min with hi), TANH / SIGN_BIT by ar_apply_activation afterwards: the value
 * of an element depends on its row of A and column of B only, never on the tiling or on how the
 * caller splits M or N, so any split gives identical bits, and they equal ar_sgemm512_nt's on a
 * CPU that has both. Never allocates (a 16 KB packed panel of B on the stack, or 64 KB for a
 * small B packed once). Only callable when ar_sgemm256_available(). */
#ifndef AR_SGEMM256_H
#define AR_SGEMM256_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/ar_kernels.h"
#include "kernels/conv_util.h"

/* True when this build has the AVX2 clones, the float ISA level in force (ar__f32_isa) is at
 * least AR_ISA_AVX2 and the CPU has F16C (every AVX2 CPU shipped has it; checked all the same).
 * True on AVX-512F CPUs as well (tests compare the two kernels there). */
bool ar_sgemm256_available(void);

/* C as above, B float32 [N, K] (row stride ldb). M, N <= 0: nothing; K = 0: act(bias). */
void ar_sgemm256_nt(const float *a, int64_t lda, const float *b, int64_t ldb, const float *bias,
                    float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, ar_activation_t act);

/* The same with B as float16 (IEEE binary16 bits, little-endian, any alignment), widened exactly
 * (vcvtph2ps) while B is packed: bit-identical to ar_sgemm256_nt on the widened B. */
void ar_sgemm256_nt_f16(const float *a, int64_t lda, const uint16_t *b, int64_t ldb,
                        const float *bias, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                        ar_activation_t act);

/* y[N] = act(bias[N] (NULL: 0) + x[K] . B[j, 0 .. K)) for the N rows of B (row stride ldb),
 * float32 (b) or float16 (b16, widened exactly; b is then ignored): sgemv512's order emulated
 * with two ymm as its 16 lanes. Each y[j] is 16 lane sums (lane l: k = l, l + 16, ..., one FMA
 * each in k order; a partial last block adds 0 x 0 in the lanes past K), the lanes added
 * pairwise (l + l+8, then + l+4, + l+2, + l+1), then the bias, then the activation: the bits of
 * ar_sgemv512_nt, independent of any split of N, the same for b and b16 holding the same values. */
void ar_sgemv256_nt(const float *x, const float *b, const uint16_t *b16, int64_t ldb,
                    const float *bias, float *y, int64_t n, int64_t k, ar_activation_t act);

#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>
/* In-register transpose of 8 rows of 8 floats: r[i][j] -> r[j][i]. */
AR_TARGET_AVX2 static inline __attribute__((always_inline)) void ar__tr8_256(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}
#endif

#endif /* AR_SGEMM256_H */
