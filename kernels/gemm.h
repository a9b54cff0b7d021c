/* gemm.h - internal to the kernels layer: the float GEMM with bias and fused activation that
 * CONV_2D, FULLY_CONNECTED and the transpose convolutions share, split over the node's pool
 * (kernels/gemm.c). */
#ifndef AR_GEMM_H
#define AR_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/ar_kernels.h"

/* C[M,N] (row stride ldc) = bias[N] (NULL: 0) + A[M,K] (row stride lda) x B[N,K]^T (row stride
 * ldb), then `act` (TFLite fused activation) on C. Row-major; sizes must fit an int (cblas). */
typedef struct ar_gemm_nt {
  const float *a, *b, *bias;
  float *c;
  int64_t m, n, k, lda, ldb, ldc;
  ar_activation_t act;
  bool own;      /* every band through arenad's own GEMM (kernels/sgemm.h: AVX-512F or AVX2 +
                  * FMA + F16C) when ar_sgemm_own_available() and M >= 4 (CONV_2D's and
                  * FULLY_CONNECTED's products), else OpenBLAS */
  const uint16_t *b16;   /* instead of b: B as float16 (weights as stored), only with own,
                          * M >= 4 and ar_sgemm_own_available() (widened while packed, same
                          * result as b); or with gemv */
  bool gemv;     /* a product of one row (M = 1: FULLY_CONNECTED) through ar_sgemv_nt when
                  * ar_sgemm_own_available() (weights read once, as stored), columns split by
                  * thread count */
  bool rows;     /* own GEMM: runs of rows even when N > M (ar_node_t.split_rows) */
} ar_gemm_nt_t;

/* Run it on node->pool (inline without one): OpenBLAS in bands of rows or columns fixed by M, N,
 * K; the own GEMM in one run of rows (of columns when N > M) per thread, whose elements do not depend
 * on the cut (see gemm.c). Either way the result is bit-identical for every thread count. Never
 * allocates. */
void ar_gemm_nt(const ar_node_t *node, const ar_gemm_nt_t *g);

/* The band width ar_gemm_nt uses for an M x N x K product, and whether it bands columns (N). */
int64_t ar_gemm_nt_grain(int64_t m, int64_t n, int64_t k, bool *split_n);

#endif /* AR_GEMM_H */
