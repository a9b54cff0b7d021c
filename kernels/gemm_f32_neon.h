/* gemm_f32_neon.h - internal to the kernels layer: arenad's own float GEMM, float16-B GEMM and
 * one-row product on aarch64 Advanced SIMD (kernels/gemm_f32_8x8_neon.c), the arm64 counterpart of
 * sgemm256 / sgemm512 behind kernels/sgemm.h (which picks it when the float ISA level in force is
 * AR_ISA_NEON).
 *
 *   C[M,N] (row stride ldc) = act(A[M,K] (row stride lda) x B[N,K]^T (ldb) + bias[N] (NULL: 0))
 *
 * Row-major, B as stored in an OHWI filter ([O, K]), all sizes in elements. Each output is the K
 * terms in ascending k, one fused multiply-add each starting from 0, THEN the bias added (one
 * rounding), then the clamp of a RELU / RELU6 / RELU_N1_TO_1 (max with lo, then min with hi);
 * TANH / SIGN_BIT by ar_apply_activation afterwards. The bias comes after the sum (TFLite's
 * reference order), unlike the x86 kernels, which start the sum from it: NEON and x86 results
 * differ in the last bits (the float rule), NEON and NEON never do - the value of an element
 * depends on its row of A and column of B only, never on the tiling or on how the caller splits
 * M or N. Never allocates (an 8 KB packed panel of B on the stack). Only callable when
 * ar_sgemm_neon_available(). */
#ifndef AR_GEMM_F32_NEON_H
#define AR_GEMM_F32_NEON_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/ar_kernels.h"

/* True on aarch64 builds when the float ISA level in force (ar__f32_isa) is AR_ISA_NEON; false
 * everywhere else (x86 builds compile none of this). */
bool ar_sgemm_neon_available(void);

/* C as above, B float32 [N, K] (row stride ldb). M, N <= 0: nothing; K = 0: act(bias). */
void ar_sgemm_neon_nt(const float *a, int64_t lda, const float *b, int64_t ldb, const float *bias,
                      float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, ar_activation_t act);

/* The same with B as float16 (IEEE binary16 bits, little-endian, any alignment), widened exactly
 * (fcvtl) while B is packed: bit-identical to ar_sgemm_neon_nt on the widened B. */
void ar_sgemm_neon_nt_f16(const float *a, int64_t lda, const uint16_t *b, int64_t ldb,
                          const float *bias, float *c, int64_t ldc, int64_t m, int64_t n,
                          int64_t k, ar_activation_t act);

/* y[N] = act(x[K] . B[j, 0 .. K) + bias[N] (NULL: 0)) for the N rows of B (row stride ldb),
 * float32 (b) or float16 (b16, widened exactly; b is then ignored). Each y[j]: 8 lane sums (lane
 * l: k = l, l + 8, ... below K rounded down to 8, one FMA each in k order), added as
 * h_l = l + (l + 4), then (h0 + h1) + (h2 + h3); then the K % 8 last terms by one FMA each, then
 * the bias, then the activation: independent of any split of N, the same for b and b16 holding
 * the same values. */
void ar_sgemv_neon_nt(const float *x, const float *b, const uint16_t *b16, int64_t ldb,
                      const float *bias, float *y, int64_t n, int64_t k, ar_activation_t act);

#endif /* AR_GEMM_F32_NEON_H */
