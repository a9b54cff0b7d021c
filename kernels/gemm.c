/* gemm.c - the float GEMM of CONV_2D, FULLY_CONNECTED and the transpose convolutions, split over
 * output tiles on the node's thread pool (kernels/ar_parallel.h).
 *
 *   C[M,N] (row stride ldc) = bias[N] + A[M,K] (lda) x B[N,K]^T (ldb), then the fused activation
 *
 * OpenBLAS runs single-threaded inside each chunk. A chunk is a band of whole rows of C (when M >=
 * N) or of whole columns (otherwise): splitting the larger dimension means that the operand each
 * chunk has to pack again (B for row bands, A for column bands) is the smaller one. Bands are
 * multiples of AR_GEMM_ALIGN (OpenBLAS's micro-tiles stay whole), at most AR_GEMM_MAX_CHUNKS of
 * them and none below AR_GEMM_MIN_CHUNK_MACS, so a small product stays one call. The bands depend
 * on M, N, K only, never on the thread count, so the result is the same for every pool.
 * Within a band, rows go in tiles of about AR_GEMM_TILE_BYTES of C, so that the product's C and
 * the pass that adds the bias and applies the activation stay in cache. Every path adds the bias
 * after the whole product, as TFLite's builtin FULLY_CONNECTED and CONV_2D do (starting the sum
 * from the bias rounds differently: YAMNet's FULLY_CONNECTED after COMPLEX_ABS moved one int8
 * quantum that way). CONV_2D asks for arenad's own GEMM
 * (kernels/sgemm.h: sgemm512.c on AVX-512F, sgemm256.c on AVX2 + FMA + F16C; its elements do not
 * depend on the split) whatever its rows (so a float16 B, which only the own GEMM reads, takes
 * the same path as a float32 one), wherever the float ISA level has one: those products are split over
 * one run per thread (ar_parallel_for_runs; one call on one thread, as each call packs B again):
 * runs of rows, so that each thread writes the same fraction of the output as it did for the
 * operator before (what it wrote stays in its core's cache), or runs of columns when N > M (the
 * 1x1 layers of a 7x7 map: each thread then packs only its own panels of B) unless the caller
 * asks for rows (ar_gemm_nt_t.rows: the depthwise reading the output splits rows). A one-row product
 * asked for as such (gemv: FULLY_CONNECTED) runs the own one-row product (ar_sgemv_nt) there,
 * in runs of columns by thread count (it reads B once, as stored; OpenBLAS would need a widened
 * copy of a float16 B).
 */
#include "kernels/gemm.h"

#include <cblas.h>

#include "common/ar_util.h"
#include "kernels/ar_parallel.h"
#include "kernels/conv_util.h"
#include "kernels/sgemm.h"

#define AR_GEMM_ALIGN 16
#define AR_GEMM_MAX_CHUNKS 16
#define AR_GEMM_MIN_CHUNK_MACS (128 * 1024)
/* Own-GEMM products: row runs by thread count (ar_parallel_for_runs), none below this many
 * multiply-adds (a few microseconds against a hand-off of one or two), in multiples of 4 rows. */
#define AR_GEMM_SPLIT_MIN_MACS (64 * 1024)
#define AR_GEMM_SPLIT_ROWS 4
/* Column runs (N > M) in multiples of 16 (one cache line of C): on a 7x7 map (M = 49, N = 192 or
 * 1152) a row run would pack every panel of B again on each thread, about a fifth of the product
 * (bench/kernels --gemm --threads 2: 49 x 1152 x 192 from ~150 to ~125 us). */
#define AR_GEMM_SPLIT_COLS 16
/* Products of fewer rows (a 1x1 layer on a 1x1 map: squeeze-excite) go to OpenBLAS, whose sgemv
 * streams B once where the own GEMM would pack it (1 x 1152 x 192: ~25 against ~10 GFLOP/s); the rule
 * looks at the whole product's M, never at a band, so the bytes do not depend on the split. */
#define AR_GEMM_OWN_MIN_ROWS 4
#define AR_GEMM_TILE_BYTES (256 * 1024)
#define AR_GEMM_TILE_MIN_ROWS 256

typedef struct gemm_job {
  const ar_gemm_nt_t *g;
  bool split_n;
} gemm_job_t;

/* Rows [r0, r1) x columns [c0, c1) of C. */
static void gemm_block(const ar_gemm_nt_t *g, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const int64_t nc = c1 - c0;
  if (g->b16) {   /* the caller checked ar_sgemm_own_available() */
    ar_sgemm_nt_f16(g->a + r0 * g->lda, g->lda, g->b16 + c0 * g->ldb, g->ldb,
                    g->bias ? g->bias + c0 : NULL, g->c + r0 * g->ldc + c0, g->ldc, r1 - r0, nc,
                    g->k, g->act);
    return;
  }
  if (g->own && g->m >= AR_GEMM_OWN_MIN_ROWS && ar_sgemm_own_available()) {
    ar_sgemm_nt(g->a + r0 * g->lda, g->lda, g->b + c0 * g->ldb, g->ldb, g->bias ? g->bias + c0 : NULL,
                g->c + r0 * g->ldc + c0, g->ldc, r1 - r0, nc, g->k, g->act);
    return;
  }
  int64_t tile = AR_GEMM_TILE_BYTES / (nc * (int64_t)sizeof(float));
  if (tile < AR_GEMM_TILE_MIN_ROWS) tile = AR_GEMM_TILE_MIN_ROWS;
  for (int64_t m0 = r0; m0 < r1; m0 += tile) {
    const int64_t tm = AR_MIN(tile, r1 - m0);
    float *dst = g->c + m0 * g->ldc + c0;
    /* beta = 0: the product from 0, the bias added after it (TFLite's order), with the
     * activation, while the tile is in cache */
    if (tm == 1)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)nc, (int)g->k, 1.0f, g->b + c0 * g->ldb, (int)g->ldb,
                  g->a + m0 * g->lda, 1, 0.0f, dst, 1);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)tm, (int)nc, (int)g->k, 1.0f,
                  g->a + m0 * g->lda, (int)g->lda, g->b + c0 * g->ldb, (int)g->ldb, 0.0f, dst,
                  (int)g->ldc);
    const float *bias = g->bias ? g->bias + c0 : NULL;
    if (nc == g->ldc) {
      ar__add_bias_rows(dst, (size_t)tm, (size_t)nc, bias);
      ar__activate(dst, (size_t)(tm * nc), g->act);
    } else {
      for (int64_t r = 0; r < tm; r++) {
        ar__add_bias_rows(dst + r * g->ldc, 1, (size_t)nc, bias);
        ar__activate(dst + r * g->ldc, (size_t)nc, g->act);
      }
    }
  }
}

static void gemm_range(void *ctx, int64_t b, int64_t e) {
  const gemm_job_t *j = ctx;
  if (j->split_n) gemm_block(j->g, 0, j->g->m, b, e);
  else gemm_block(j->g, b, e, 0, j->g->n);
}

/* Columns [c0, c1) of a one-row product (gemv). */
static void gemv_range(void *ctx, int64_t c0, int64_t c1) {
  const ar_gemm_nt_t *g = ((const gemm_job_t *)ctx)->g;
  ar_sgemv_nt(g->a, g->b ? g->b + c0 * g->ldb : NULL, g->b16 ? g->b16 + c0 * g->ldb : NULL, g->ldb,
              g->bias ? g->bias + c0 : NULL, g->c + c0, c1 - c0, g->k, g->act);
}

int64_t ar_gemm_nt_grain(int64_t m, int64_t n, int64_t k, bool *split_n) {
  const bool sn = n > m;
  const int64_t d = sn ? n : m, other = sn ? m : n;
  int64_t chunks = d / AR_GEMM_ALIGN;
  const int64_t by_cost = other * k * d / AR_GEMM_MIN_CHUNK_MACS;
  if (chunks > by_cost) chunks = by_cost;
  if (chunks > AR_GEMM_MAX_CHUNKS) chunks = AR_GEMM_MAX_CHUNKS;
  if (chunks < 1) chunks = 1;
  int64_t grain = (d + chunks - 1) / chunks;
  grain = (grain + AR_GEMM_ALIGN - 1) / AR_GEMM_ALIGN * AR_GEMM_ALIGN;
  if (grain > d) grain = d;
  if (split_n) *split_n = sn;
  return grain < 1 ? 1 : grain;
}

void ar_gemm_nt(const ar_node_t *node, const ar_gemm_nt_t *g) {
  if (g->m <= 0 || g->n <= 0) return;
  gemm_job_t j = {.g = g};
  if (g->gemv && g->m == 1 && ar_sgemm_own_available()) {
    const int64_t k = g->k > 0 ? g->k : 1;
    ar_parallel_for_runs(node, g->n, AR_GEMM_SPLIT_COLS, (AR_GEMM_SPLIT_MIN_MACS + k - 1) / k,
                         gemv_range, &j);
    return;
  }
  if (g->b16 || (g->own && g->m >= AR_GEMM_OWN_MIN_ROWS && ar_sgemm_own_available())) {
    /* The own GEMM: every element one FMA chain in k order, so the bytes do not depend on the split:
     * one run per thread (one call on one thread), none below AR_GEMM_SPLIT_MIN_MACS. Runs of
     * columns when there are more columns than rows (each thread packs only its own panels of
     * B), else runs of rows (which keeps the rows of A and C on the thread that had them in the
     * operator before). */
    if (g->n > g->m && !g->rows) {
      const int64_t mk = g->m * g->k > 0 ? g->m * g->k : 1;
      j.split_n = true;
      ar_parallel_for_runs(node, g->n, AR_GEMM_SPLIT_COLS, (AR_GEMM_SPLIT_MIN_MACS + mk - 1) / mk,
                           gemm_range, &j);
      return;
    }
    const int64_t nk = g->n * g->k > 0 ? g->n * g->k : 1;
    ar_parallel_for_runs(node, g->m, AR_GEMM_SPLIT_ROWS, (AR_GEMM_SPLIT_MIN_MACS + nk - 1) / nk,
                         gemm_range, &j);
    return;
  }
  const int64_t grain = ar_gemm_nt_grain(g->m, g->n, g->k, &j.split_n);
  ar_parallel_for(node, j.split_n ? g->n : g->m, grain, gemm_range, &j);
}
