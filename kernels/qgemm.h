/* qgemm.h - internal to the kernels layer: the 8-bit integer GEMM under the quantized CONV_2D and
 * FULLY_CONNECTED (kernels/qconv.c), with TFLite's requantization fused into the store.
 *
 * It computes, for rows m of A (activations, one row = one output pixel's patch or one FC input
 * row) and output channels n of B (weights, [N, K] as TFLite stores OHWI / [O, I]):
 *
 *   acc[m][n] = sum_k (a[m][k] - za) * (w[n][k] - zw[n]) + bias[n]        (int32, TFLite's acc)
 *   out[m][n] = clamp(rescale(acc, mult[n], shift[n]) + z_out, lo, hi)    (int8 or uint8 bytes)
 *
 * in one representation for both TFLite schemes: A as unsigned bytes (int8 activations are
 * flipped by a_xor = 0x80, i.e. a + 128), B as signed bytes (uint8 weights are stored as w - 128).
 * Then sum (a'-za')(w'-zw') = S - za'*colsum(w') - zw'*rowsum(a') + K*za'*zw' with S = sum a'*w'
 * the plain u8 x s8 product the CPU is good at; the terms that do not depend on the input are
 * folded into the packed bias at init (ar_qgemm_pack), the zw'*rowsum(a') term (legacy uint8
 * weights with a non-zero zero point only, per-tensor) is computed per row at run time.
 *
 * Packed B ("panel" layout, made once at init into persistent state): blocks of 16 output
 * channels, each a run of ceil(K/4) groups of 64 bytes: byte [c*4 + j] of group g of block b is
 * w'[16b + c][4g + j], zero past N or K. The x86 kernels read one group per vector: AVX-512 VNNI
 * vpdpbusd takes all 64 bytes at once (16 channels x 4 taps), AVX2 sign-extends 16 bytes at a time
 * to int16 and uses vpmaddwd (vpmaddubsw would saturate int16: 255*127*2 > 32767, so it cannot be
 * exact for every weight). All paths compute the same integers; the requantization is scalar
 * ar_mbqm / ar_mbqm_up (kernels/ar_quant.h), or its exact vector form.
 *
 * arm64 has no u8 x s8 dot product before i8mm, so there every path (portable included) takes A as
 * signed bytes a' - 128 (a no-op on int8 activations: the stored byte) and sdot / smull multiply
 * s8 x s8; the pack folds +128 * colsum(w') into the bias for it (AR_QGEMM_A_SIGNED), so the int32
 * accumulators, and every output byte, are the same as on x86. The NEON kernels read the packed
 * groups as they are: sdot's 4-byte lanes are the 4 taps of one channel.
 */
#ifndef AR_QGEMM_H
#define AR_QGEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Which implementation runs: AR_QGEMM_AUTO picks the best the CPU supports (x86-64: AVX-512 VNNI,
 * else AVX2; arm64: sdot where HWCAP has ASIMDDP, else the smull/smlal one; else portable C). */
typedef enum {
  AR_QGEMM_AUTO = 0,
  AR_QGEMM_PORTABLE,
  AR_QGEMM_AVX2,
  AR_QGEMM_AVX512VNNI,
  AR_QGEMM_NEON,      /* arm64 ASIMD: smull + smlal + sadalp (kernels/gemm_qs8_2x16c4_neon.c) */
  AR_QGEMM_NEONDOT,   /* arm64 ASIMD + dot product: sdot (kernels/gemm_qs8_4x16c4_neondot.c) */
} ar_qgemm_path_t;

/* Everything ar_qgemm_run needs besides the operands, computed at prepare/init. */
typedef struct {
  int32_t n, k;            /* output channels, depth */
  int32_t k_groups;        /* ceil(k / 4) */
  int32_t n_blocks;        /* ceil(n / 16) */
  uint8_t a_xor;           /* 0x80 for int8 activations, 0 for uint8 */
  int32_t zw_row;          /* zw' (per-tensor, in B's signed representation); when non-zero the run
                            * subtracts zw' * rowsum(a') from every row (needs the raw A rows) */
  int32_t out_zero_point;
  int32_t lo, hi;          /* clamp of the fused activation, in the output type's range */
  bool round_up;           /* ar_mbqm_up (builtin int8 CONV_2D) instead of ar_mbqm */
  bool w_has_min;          /* packed B holds a -128 (set by ar_qgemm_pack): two s8 x s8 products
                            * can then reach 2 * 16384, past int16, so the NEON kernel does not
                            * pair them in one int16 lane */
} ar_qgemm_t;

/* 1 where the kernels multiply A as signed bytes (arm64, see above), 0 where as unsigned. */
#if defined(__aarch64__)
#define AR_QGEMM_A_SIGNED 1
#else
#define AR_QGEMM_A_SIGNED 0
#endif

/* Bytes of packed B for `g` (g->n_blocks * g->k_groups * 64). */
size_t ar_qgemm_packed_bytes(const ar_qgemm_t *g);

/* Pack weights w ([N, K] row-major int8 or uint8 bytes; `w_unsigned` for uint8, then stored as
 * w - 128) into `packed` (ar_qgemm_packed_bytes) and fold the constant terms into `bias_out`
 * (n_blocks*16 int32, past N zero): bias_out[n] = bias[n] (or 0 when bias is NULL)
 * - za' * colsum(w'[n]) + K * za' * zw'[n], where za' = in_zero_point ^ a_xor's offset (za + 128
 * for int8) and zw'[n] = weight_zero_point[n] in B's representation (w_zp[n or 0] - 128 for
 * uint8). `w_zp_n` is 1 (per-tensor) or N. With AR_QGEMM_A_SIGNED, za' - 128 stands for za' in the
 * colsum term. Sets g->zw_row and g->w_has_min. */
void ar_qgemm_pack(ar_qgemm_t *g, const uint8_t *w, bool w_unsigned, const int64_t *w_zp,
                   int32_t w_zp_n, const int32_t *bias, int32_t in_zero_point, uint8_t *packed,
                   int32_t *bias_out);

/* out[m][0..N) for m in [0, rows): A rows start at a + m*lda (K bytes each, readable up to
 * k_groups*4 bytes: callers whose K is not a multiple of 4 pass rows with that slack), output rows
 * at out + m*ldo. mult/shift: N entries (TFLite QuantizeMultiplier of s_in*s_w[n]/s_out). No heap
 * allocation. */
void ar_qgemm_run(const ar_qgemm_t *g, const uint8_t *packed, const int32_t *bias,
                  const int32_t *mult, const int32_t *shift, const uint8_t *a, size_t lda,
                  int64_t rows, uint8_t *out, size_t ldo);

/* Most segments a row of ar_qgemm_run_segments may have. */
#define AR_QGEMM_MAX_SEGS 16

/* ar_qgemm_run with each A row given as nseg (1..AR_QGEMM_MAX_SEGS) segments of K / nseg bytes,
 * K a multiple of 4 * nseg: segment q of row m starts at seg[m * nseg + q]. CONV_2D hands its
 * rows this way straight from the input (one segment per filter row, KW * I contiguous bytes),
 * instead of copying them into an im2col row first. Same integers as ar_qgemm_run. */
void ar_qgemm_run_segments(const ar_qgemm_t *g, const uint8_t *packed, const int32_t *bias,
                           const int32_t *mult, const int32_t *shift, const uint8_t *const *seg,
                           int nseg, int64_t rows, uint8_t *out, size_t ldo);

/* The path AR_QGEMM_AUTO resolves to on this CPU. */
ar_qgemm_path_t ar_qgemm_best_path(void);
/* Whether this build and CPU can run `path`. */
bool ar_qgemm_path_supported(ar_qgemm_path_t path);
/* Force a path for every later ar_qgemm_run in the process (tests, benchmarks); AUTO restores the
 * default. An unsupported path falls back to AUTO. Not thread-safe against concurrent runs. */
void ar_qgemm_force_path(ar_qgemm_path_t path);
/* "portable", "avx2", "avx512vnni", "neon", "neondot" (the path runs use now when `path` is AUTO). */
const char *ar_qgemm_path_name(ar_qgemm_path_t path);

#endif /* AR_QGEMM_H */
