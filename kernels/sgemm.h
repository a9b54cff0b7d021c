/* sgemm.h - internal to the kernels layer: arenad's own float GEMM, float16-B GEMM and one-row
 * product, whichever ISA this CPU runs them on (kernels/sgemm.c picks, per call, by the float ISA
 * level in force, ar__f32_isa):
 *   AR_ISA_AVX512  kernels/sgemm512.c (AVX-512F: 12 x 32 tiles of zmm)
 *   AR_ISA_AVX2    kernels/sgemm256.c (AVX2 + FMA + F16C: 6 x 16 tiles of ymm)
 *   AR_ISA_NEON    kernels/gemm_f32_8x8_neon.c (aarch64 Advanced SIMD: 8 x 8 tiles; the same
 *                  order, the bias after the sum: kernels/gemm_f32_neon.h)
 *   AR_ISA_PORTABLE (or an AVX2 CPU without F16C): none - ar_sgemm_own_available() is false and
 *                  the callers take OpenBLAS (kernels/gemm.c) instead.
 * The kernels give the same bits (each element its K terms in ascending k from 0, one FMA each,
 * then + bias, then the clamp; the one-row product in 16 lane sums reduced pairwise: see sgemm512.h and
 * sgemm256.h), so the output of a node does not depend on which of them ran, only on whether the
 * own GEMM or OpenBLAS did (those differ by rounding). Shapes, strides and units as in
 * sgemm512.h: row-major, sizes and strides in elements, C[M,N] = act(bias[N] + A[M,K] x B[N,K]^T).
 * Never allocate. */
#ifndef AR_SGEMM_H
#define AR_SGEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/ar_kernels.h"

/* True when one of the kernels can run at the level in force (AVX-512F, AVX2 + FMA + F16C, NEON):
 * the functions below may only be called then. Re-read at every call (tests lower the level). */
bool ar_sgemm_own_available(void);

/* C[M,N] (ldc) = act(bias[N] (NULL: 0) + A[M,K] (lda) x B[N,K]^T (ldb)), B float32. */
void ar_sgemm_nt(const float *a, int64_t lda, const float *b, int64_t ldb, const float *bias,
                 float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, ar_activation_t act);

/* The same with B as float16 bits (any alignment), widened exactly while packed: the bits of
 * ar_sgemm_nt on the widened B. */
void ar_sgemm_nt_f16(const float *a, int64_t lda, const uint16_t *b, int64_t ldb, const float *bias,
                     float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, ar_activation_t act);

/* y[N] = act(bias[N] (NULL: 0) + x[K] . B[j, 0 .. K)), B float32 (b) or float16 (b16): the
 * one-row product of FULLY_CONNECTED (ar_sgemv512_nt's order). */
void ar_sgemv_nt(const float *x, const float *b, const uint16_t *b16, int64_t ldb, const float *bias,
                 float *y, int64_t n, int64_t k, ar_activation_t act);

#endif /* AR_SGEMM_H */
