/* sgemm512.h - internal to the kernels layer: the float GEMM with bias and fused activation on
 * AVX-512F (kernels/sgemm512.c), for the products OpenBLAS does poorly: the short-K, few-column
 * products of 1x1 convolutions (K = input channels 16..1152, N = output channels 16..1152).
 *
 *   C[M,N] (row stride ldc) = act(bias[N] (NULL: 0) + A[M,K] (row stride lda) x B[N,K]^T (ldb))
 *
 * Row-major, B as stored in an OHWI filter. Each output is bias + sum over k in ascending order,
 * one FMA per term: the value of an element depends on its row of A and column of B only, never
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

bool ar_sgemm512_available(void);

void ar_sgemm512_nt(const float *a, int64_t lda, const float *b, int64_t ldb, const float *bias,
                    float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, ar_activation_t act);

#endif /* AR_SGEMM512_H */
