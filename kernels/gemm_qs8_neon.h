/* gemm_qs8_neon.h - internal to kernels/qgemm.c: the arm64 micro-kernels of the 8-bit GEMM
 * (kernels/qgemm.h has the arithmetic and the packed layout), each in a file named like XNNPACK's
 * (operation, tile, ISA), so that one file can be built for the dot-product extension alone.
 *
 * A tile call computes int32 accumulators S[r][n] = sum_k a_s[r][k] * w'[n][k] for the `rows`
 * (1..AR_QGEMM_TILE_ROWS) rows of a row block and the `nb` blocks of 16 channels from block b0,
 * with a_s = (a ^ a_xor) - 128 (AR_QGEMM_A_SIGNED: sdot and smull multiply signed bytes). Row r's
 * segment q (K / nseg bytes, a multiple of 4) starts at rowp[q * AR_QGEMM_TILE_ROWS + r]; entries
 * past `rows` repeat the last row. acc row r, channel 16 * v + c lands at acc[r * AR_QGEMM_TILE_COLS
 * + 16 * v + c]. They read only the K / nseg bytes of each segment and never allocate.
 */
#ifndef AR_GEMM_QS8_NEON_H
#define AR_GEMM_QS8_NEON_H

#include <stdint.h>

#include "kernels/qgemm.h"

#define AR_QGEMM_TILE_ROWS 6    /* rows of a row block (rowp entries per segment) */
#define AR_QGEMM_TILE_COLS 64   /* channels of a tile: acc row stride, nb <= 4 */

#if defined(__aarch64__)
/* ASIMD only (Cortex-A53/A72): per 4 channels x 4 taps, smull of two groups' s8 products into
 * int16 (smlal adds the next group's when B holds no -128, g->w_has_min), then sadalp into int32. */
void ar__gemm_qs8_2x16c4_neon(const ar_qgemm_t *g, const uint8_t *packed,
                              const uint8_t *const *rowp, int nseg, int rows, int32_t b0, int nb,
                              int32_t *acc);
/* ASIMD + dot product (HWCAP_ASIMDDP, Cortex-A55/A76 and later): sdot by element, 4 rows x 16
 * channels of int32 accumulators. */
void ar__gemm_qs8_4x16c4_neondot(const ar_qgemm_t *g, const uint8_t *packed,
                                 const uint8_t *const *rowp, int nseg, int rows, int32_t b0, int nb,
                                 int32_t *acc);
#endif

#endif /* AR_GEMM_QS8_NEON_H */
