/* check_quant.c - TFLite's fixed-point arithmetic (kernels/ar_quant.h) and the quantized CONV_2D /
 * FULLY_CONNECTED kernels (kernels/qconv.c on kernels/qgemm.c).
 *
 * Evidence: values computed by hand from the definitions (QuantizeMultiplier's frexp + rounding,
 * gemmlowp's SaturatingRoundingDoublingHighMul and RoundingDivideByPOT, the builtin int8 conv's
 * half-up rescale; small convolutions and FC layers worked through on paper in the comments), and
 * randomized comparisons of every GEMM path this CPU supports (portable C, AVX2, AVX-512 VNNI)
 * against a naive int64 reference written here from the TFLite definition:
 *   out = clamp(rescale(sum (x - z_in)(w - z_w) + bias) + z_out), padding taps contribute 0. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_kernels.h"
#include "kernels/ar_parallel.h"
#include "kernels/ar_fx16.h"
#include "kernels/ar_lut16.h"
#include "kernels/ar_quant.h"
#include "kernels/qgemm.h"
#include "kernels/qwide.h"

/* ---------- fixed-point helpers ---------- */

START_TEST(quantize_multiplier_hand_values) {
  int32_t m;
  int sh;
  ar_quantize_multiplier(0.5, &m, &sh);           /* 0.5 = 0.5 * 2^0 */
  ck_assert_int_eq(m, 1 << 30); ck_assert_int_eq(sh, 0);
  ar_quantize_multiplier(1.0, &m, &sh);           /* 0.5 * 2^1 */
  ck_assert_int_eq(m, 1 << 30); ck_assert_int_eq(sh, 1);
  ar_quantize_multiplier(0.75, &m, &sh);          /* 0.75 * 2^31 */
  ck_assert_int_eq(m, 1610612736); ck_assert_int_eq(sh, 0);
  ar_quantize_multiplier(0.1, &m, &sh);           /* 0.8 * 2^-3; 0.8 * 2^31 = 1717986918.4 */
  ck_assert_int_eq(m, 1717986918); ck_assert_int_eq(sh, -3);
  ar_quantize_multiplier(3.0, &m, &sh);           /* 0.75 * 2^2 */
  ck_assert_int_eq(m, 1610612736); ck_assert_int_eq(sh, 2);
  /* q = 1 - 2^-33: q * 2^31 = 2^31 - 0.25 rounds to 2^31, which halves and bumps the shift. */
  ar_quantize_multiplier((1.0 - 0x1p-33) * 0x1p-2, &m, &sh);
  ck_assert_int_eq(m, 1 << 30); ck_assert_int_eq(sh, -1);
  ar_quantize_multiplier(0.0, &m, &sh);
  ck_assert_int_eq(m, 0); ck_assert_int_eq(sh, 0);
  ar_quantize_multiplier(0x1p-40, &m, &sh);       /* exponent -39 < -31: flushed to zero */
  ck_assert_int_eq(m, 0); ck_assert_int_eq(sh, 0);
  ar_quantize_multiplier(0x1p40, &m, &sh);        /* exponent 41 > 30: saturated */
  ck_assert_int_eq(m, INT32_MAX); ck_assert_int_eq(sh, 30);
}
END_TEST

START_TEST(srdhm_and_rdivpot_hand_values) {
  /* srdhm(a, b) = round(a * b / 2^31): (ab + nudge) / 2^31 truncated, nudge 2^30 or 1 - 2^30. */
  ck_assert_int_eq(ar_srdhm(1 << 30, 1 << 30), 1 << 29);
  ck_assert_int_eq(ar_srdhm(1, 1 << 30), 1);        /* +0.5 -> 1 */
  ck_assert_int_eq(ar_srdhm(3, 1 << 30), 2);        /* +1.5 -> 2 */
  ck_assert_int_eq(ar_srdhm(-1, 1 << 30), 0);       /* -0.5: (-2^31 + 1) / 2^31 truncates to 0 */
  ck_assert_int_eq(ar_srdhm(-3, 1 << 30), -1);      /* -1.5 -> -1: gemmlowp's ties go up */
  ck_assert_int_eq(ar_srdhm(-5, 1 << 29), -1);      /* -1.25 -> -1 */
  ck_assert_int_eq(ar_srdhm(-7, 1 << 29), -2);      /* -1.75 -> -2 */
  ck_assert_int_eq(ar_srdhm(INT32_MIN, INT32_MIN), INT32_MAX);   /* the one overflow saturates */
  ck_assert_int_eq(ar_srdhm(INT32_MIN, INT32_MAX), -INT32_MAX);  /* -(2^31 - 1), no overflow */
  /* rdivpot: x / 2^e, ties away from zero. */
  ck_assert_int_eq(ar_rdivpot(5, 1), 3);            /* 2.5 -> 3 */
  ck_assert_int_eq(ar_rdivpot(-5, 1), -3);          /* -2.5 -> -3 */
  ck_assert_int_eq(ar_rdivpot(-6, 2), -2);          /* -1.5 -> -2 */
  ck_assert_int_eq(ar_rdivpot(-7, 2), -2);          /* -1.75 -> -2 */
  ck_assert_int_eq(ar_rdivpot(-5, 2), -1);          /* -1.25 -> -1 */
  ck_assert_int_eq(ar_rdivpot(7, 0), 7);
  ck_assert_int_eq(ar_rdivpot(INT32_MIN, 31), -1);
}
END_TEST

START_TEST(rescale_both_roundings_hand_values) {
  const int32_t half = 1 << 30, three_q = 1610612736;   /* 0.5, 0.75 in Q31 */
  /* x * 0.25 (m = 0.5, shift -1): exact, positive tie, negative tie. */
  ck_assert_int_eq(ar_mbqm(-8, half, -1), -2);
  ck_assert_int_eq(ar_mbqm_up(-8, half, -1), -2);
  ck_assert_int_eq(ar_mbqm(6, half, -1), 2);        /* 1.5 -> 2 */
  ck_assert_int_eq(ar_mbqm_up(6, half, -1), 2);
  ck_assert_int_eq(ar_mbqm(-6, half, -1), -2);      /* -1.5 -> -2 away from zero */
  ck_assert_int_eq(ar_mbqm_up(-6, half, -1), -1);   /* -1.5 -> -1 toward +inf */
  /* -1.75: the Q31 step makes -3.5, a tie: both round it up to -3; the shift's -1.5 is a tie
   * again, away from zero -2, up -1 (the builtin int8 kernels' double rounding). */
  ck_assert_int_eq(ar_mbqm(-7, half, -1), -2);
  ck_assert_int_eq(ar_mbqm_up(-7, half, -1), -1);
  ck_assert_int_eq(ar_mbqm(-10, half, -2), -1);     /* -1.25 */
  ck_assert_int_eq(ar_mbqm_up(-10, half, -2), -1);
  ck_assert_int_eq(ar_mbqm(-12, half, -2), -2);     /* -1.5 tie over a shift of 2 */
  ck_assert_int_eq(ar_mbqm_up(-12, half, -2), -1);
  /* Positive shifts: x * 2^shift first, then the Q31 multiply. */
  ck_assert_int_eq(ar_mbqm(3, half, 2), 6);
  ck_assert_int_eq(ar_mbqm_up(3, half, 2), 6);
  ck_assert_int_eq(ar_mbqm(5, three_q, 1), 8);      /* 7.5 -> 8 */
  ck_assert_int_eq(ar_mbqm_up(5, three_q, 1), 8);
  ck_assert_int_eq(ar_mbqm(-5, three_q, 1), -7);    /* -7.5: the Q31 step rounds ties up in both */
  ck_assert_int_eq(ar_mbqm_up(-5, three_q, 1), -7);
  /* shift 0, a tie in the Q31 step only. */
  ck_assert_int_eq(ar_mbqm(-3, half, 0), -1);
  ck_assert_int_eq(ar_mbqm_up(-3, half, 0), -1);
  /* Large accumulators: no saturation in the 64-bit form, the srdhm form saturates only at
   * INT32_MIN * INT32_MIN. */
  ck_assert_int_eq(ar_mbqm(INT32_MAX, INT32_MAX, 0), INT32_MAX - 1);
  ck_assert_int_eq(ar_mbqm_up(INT32_MAX, INT32_MAX, 0), INT32_MAX - 1);
  ck_assert_int_eq(ar_mbqm(INT32_MIN, half, -31), -1);   /* -2^30 / 2^31 = -0.5 -> -1 away */
  ck_assert_int_eq(ar_mbqm_up(INT32_MIN, half, -31), 0); /* -0.5 -> 0 up */
}
END_TEST

/* kernels/ar_fx16.h: gemmlowp's 16-bit fixed point and the inverse square root multiplier. */
START_TEST(fx16_hand_values) {
  /* doubling high multiply: 0.5 * 0.5 = 0.25; the one overflow saturates */
  ck_assert_int_eq(ar_fx16_srdhm(16384, 16384), 8192);
  ck_assert_int_eq(ar_fx16_srdhm(INT16_MIN, INT16_MIN), INT16_MAX);
  /* power-of-two scaling: saturating up, rounding half away from zero down */
  ck_assert_int_eq(ar_fx16_mulpot(20000, 1), INT16_MAX);
  ck_assert_int_eq(ar_fx16_mulpot(-20000, 1), INT16_MIN);
  ck_assert_int_eq(ar_fx16_mulpot(3, -1), 2);
  ck_assert_int_eq(ar_fx16_mulpot(-3, -1), -2);
  /* logistic / tanh on Q3.12 -> Q0.15: 0 -> 0.5 / 0, the mirror images, and 1.0 (4096) against
   * sigmoid(1) = 0.731059 (23955.5 / 32768) within 3 LSB and tanh(1) = 0.761594 (24956.2) within
   * 8 (gemmlowp's 16-bit tanh gives 24948 there; the native goldens pin every code) */
  ck_assert_int_eq(ar_fx16_logistic(0, 3), 16384);
  ck_assert_int_eq(ar_fx16_tanh(0, 3), 0);
  ck_assert_int_le(abs(ar_fx16_logistic(4096, 3) - 23955), 3);
  ck_assert_int_le(abs(ar_fx16_tanh(4096, 3) - 24956), 8);
  const int16_t xs[] = {1, 100, 4096, 12345, 32767};
  for (int i = 0; i < 5; i++) {
    ck_assert_int_eq(ar_fx16_logistic(xs[i], 3) + ar_fx16_logistic((int16_t)-xs[i], 3), INT16_MAX);
    ck_assert_int_eq(ar_fx16_tanh((int16_t)-xs[i], 3), -ar_fx16_tanh(xs[i], 3));
  }
  /* 1 / sqrt(v) as (multiplier, shift): v = 4 -> 0.5, v = 100 -> 0.1 (2^20 scaled, within 2) */
  int32_t m;
  int sh;
  ar_inv_sqrt_multiplier(4, &m, &sh);
  ck_assert_int_le(abs(ar_mbqm(1 << 20, m, sh) - 524288), 2);
  ar_inv_sqrt_multiplier(100, &m, &sh);
  ck_assert_int_le(abs(ar_mbqm(1 << 20, m, sh) - 104858), 2);
  ar_inv_sqrt_multiplier(1, &m, &sh);
  ck_assert_int_eq(m, INT32_MAX);
  ck_assert_int_eq(sh, 0);
}
END_TEST

static double lut16_identity(double x) { return x; }

/* kernels/ar_lut16.h: the 9-bit entry, 7-bit interpolation rounding half up. */
START_TEST(lut16_lookup_hand_values) {
  static int16_t lut[513];
  /* identity (the last segment ends at 32767, not 32768: one short at its top) */
  for (int i = 0; i <= 512; i++) lut[i] = (int16_t)(i == 512 ? 32767 : (i - 256) * 128);
  for (int32_t v = -32768; v < 32640; v++) ck_assert_int_eq(ar_lut16_lookup(lut, (int16_t)v), v);
  for (int32_t v = 32640; v <= 32767; v++) ck_assert_int_le(v - ar_lut16_lookup(lut, (int16_t)v), 1);
  /* entry 256 + 0 (codes 0..127) rising 0 -> 1: offset 63 rounds down, 64 (a tie) up */
  lut[256] = 0;
  lut[257] = 1;
  ck_assert_int_eq(ar_lut16_lookup(lut, 63), 0);
  ck_assert_int_eq(ar_lut16_lookup(lut, 64), 1);
  /* falling 1 -> 0: the tie at 64 rounds up (stays 1), 65 goes down */
  lut[256] = 1;
  lut[257] = 0;
  ck_assert_int_eq(ar_lut16_lookup(lut, 64), 1);
  ck_assert_int_eq(ar_lut16_lookup(lut, 65), 0);
  /* a table of f(x) = x on equal input and output ranges: entry i within 1 of (i - 256) * 128
   * (the output step is 65536 / 65535 of the input's), the ends clamped to int16, and reading it
   * back gives every code within 2 */
  static int16_t id[513];
  ar_lut16_fill_double(lut16_identity, 1.0 / 256, 0, 1.0 / 256, 0, id);
  ck_assert_int_eq(id[0], -32768);
  ck_assert_int_eq(id[512], 32767);
  for (int i = 1; i < 512; i++) ck_assert_int_le(abs(id[i] - (i - 256) * 128), 1);
  for (int32_t v = -32768; v <= 32767; v++) ck_assert_int_le(abs(ar_lut16_lookup(id, (int16_t)v) - v), 2);
}
END_TEST

START_TEST(activation_ranges_hand_values) {
  int32_t lo, hi;
  ck_assert_int_eq(ar_quant_activation_range(AR_ACT_RELU6, AR_DTYPE_INT8, 0.05f, -10, &lo, &hi), 0);
  ck_assert_int_eq(lo, -10); ck_assert_int_eq(hi, 110);          /* -10 + round(6 / 0.05) */
  ck_assert_int_eq(ar_quant_activation_range(AR_ACT_RELU, AR_DTYPE_INT8, 0.05f, -10, &lo, &hi), 0);
  ck_assert_int_eq(lo, -10); ck_assert_int_eq(hi, 127);
  ck_assert_int_eq(ar_quant_activation_range(AR_ACT_NONE, AR_DTYPE_INT8, 0.05f, -10, &lo, &hi), 0);
  ck_assert_int_eq(lo, -128); ck_assert_int_eq(hi, 127);
  ck_assert_int_eq(ar_quant_activation_range(AR_ACT_RELU_N1_TO_1, AR_DTYPE_INT8, 0.05f, -10, &lo,
                                             &hi), 0);
  ck_assert_int_eq(lo, -30); ck_assert_int_eq(hi, 10);
  /* uint8 MobileNet style: scale 6/255 leaves RELU6 at the type's top. */
  ck_assert_int_eq(ar_quant_activation_range(AR_ACT_RELU6, AR_DTYPE_UINT8, 0.023529412f, 0, &lo,
                                             &hi), 0);
  ck_assert_int_eq(lo, 0); ck_assert_int_eq(hi, 255);
  ck_assert_int_eq(ar_quant_activation_range(AR_ACT_TANH, AR_DTYPE_UINT8, 0.1f, 0, &lo, &hi),
                   AR_EUNSUPPORTED);
}
END_TEST

/* ---------- quantized node harness ---------- */

typedef struct {
  ar_tview_t t[4];             /* input, filter/weights, bias, output */
  ar_quant_t q[4];
  float scale[4][256];
  int64_t zp[4][256];
  ar_options_t opt;
  ar_tview_t *io[4];           /* node.inputs (up to 3), node.outputs (1) */
  ar_node_t node;
} qnode_t;

static void qview(qnode_t *qn, int i, void *data, ar_dtype_t dt, int32_t rank, const int32_t *dims,
                  int32_t nq, const float *scales, const int64_t *zps) {
  ar_tview_t *t = &qn->t[i];
  memset(t, 0, sizeof *t);
  t->data = data;
  t->dtype = dt;
  t->rank = rank;
  uint64_t n = 1;
  for (int32_t d = 0; d < rank; d++) { t->dims[d] = dims[d]; n *= (uint64_t)dims[d]; }
  t->bytes = n * ar_dtype_size(dt);
  t->is_constant = i == 1 || i == 2;
  if (nq > 0) {
    memcpy(qn->scale[i], scales, sizeof(float) * (size_t)nq);
    if (zps) memcpy(qn->zp[i], zps, sizeof(int64_t) * (size_t)nq);
    else memset(qn->zp[i], 0, sizeof(int64_t) * (size_t)nq);
    qn->q[i] = (ar_quant_t){.n = nq, .quantized_dimension = 0, .scale = qn->scale[i],
                            .zero_point = qn->zp[i]};
    t->quant = &qn->q[i];
  }
}

static void qnode_wire(qnode_t *qn, ar_op_t op, bool has_bias) {
  qn->node.op = op;
  qn->node.index = 5;
  qn->node.version = 3;
  qn->node.options = &qn->opt;
  qn->node.n_inputs = has_bias ? 3 : 2;
  qn->node.n_outputs = 1;
  qn->node.inputs = qn->io;
  qn->node.outputs = qn->io + 3;
  qn->node.inputs[0] = &qn->t[0];
  qn->node.inputs[1] = &qn->t[1];
  qn->node.inputs[2] = has_bias ? &qn->t[2] : NULL;
  qn->node.outputs[0] = &qn->t[3];
  qn->node.threads = 1;
}

static int qnode_run(qnode_t *qn, const ar_kernel_t *k, char *msg, size_t n) {
  int rc = k->prepare(&qn->node, msg, n);
  if (rc != 0) return rc;
  qn->node.scratch = qn->node.scratch_bytes ? malloc(qn->node.scratch_bytes) : NULL;
  if (qn->node.scratch) memset(qn->node.scratch, 0xa5, qn->node.scratch_bytes);
  qn->node.state = qn->node.state_bytes ? aligned_alloc(64, (qn->node.state_bytes + 63) / 64 * 64)
                                        : NULL;
  if (k->init) k->init(&qn->node);
  k->eval(&qn->node);
  free(qn->node.scratch);
  free(qn->node.state);
  qn->node.scratch = qn->node.state = NULL;
  return 0;
}

static const ar_qgemm_path_t all_paths[] = {AR_QGEMM_PORTABLE, AR_QGEMM_AVX2, AR_QGEMM_AVX512VNNI,
                                             AR_QGEMM_NEON, AR_QGEMM_NEONDOT};
#define N_PATHS 5

/* Run on every supported path, at 1, 2 and 3 threads (a pool of 3: the work is cut into the same
 * chunks whichever threads take them, the scratch per thread); each must give `want`. */
static void qnode_expect(qnode_t *qn, const ar_kernel_t *k, const uint8_t *want, size_t n,
                         const char *what) {
  char msg[AR_MSG_BYTES] = "";
  ar_threadpool_t *pool = NULL;
  ck_assert_int_eq(ar_threadpool_new(3, &pool, msg, sizeof msg), 0);
  for (int p = 0; p < N_PATHS; p++) {
    if (!ar_qgemm_path_supported(all_paths[p])) continue;
    ar_qgemm_force_path(all_paths[p]);
    for (int32_t threads = 1; threads <= 3; threads++) {
      qn->node.threads = threads;
      qn->node.pool = threads > 1 ? pool : NULL;
      memset(qn->t[3].data, 0x5a, n);
      int rc = qnode_run(qn, k, msg, sizeof msg);
      ck_assert_msg(rc == 0, "%s: prepare %s (%s)", what, ar_err_name(rc), msg);
      const uint8_t *got = qn->t[3].data;
      for (size_t i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "%s on %s, %d threads: element %zu is %d, want %d", what,
                      ar_qgemm_path_name(all_paths[p]), (int)threads, i, (int)got[i], (int)want[i]);
    }
  }
  qn->node.threads = 1;
  qn->node.pool = NULL;
  ar_qgemm_force_path(AR_QGEMM_AUTO);
  ar_threadpool_free(pool);
}

/* ---------- CONV_2D, hand-computed ---------- */

/* uint8, SAME padding (the odd row/column at the bottom/right), pads read the input zero point.
 * x - z_in = [0 2; 4 6] (q = 5, 7, 9, 11, z_in 5, s_in 1); w - z_w = [2 0; -2 4] (z_w 100, s_w 0.5);
 * bias 3 (s 0.5); s_out 1, z_out 10: multiplier 0.5.
 *   (0,0): 0*2 + 2*0 + 4*-2 + 6*4 = 16, +3 = 19 -> 9.5 -> 10 -> 20
 *   (0,1): 2*2 + 6*-2 = -8, +3 = -5 -> -2.5 -> -2 (gemmlowp's Q31 step rounds ties up) -> 8
 *   (1,0): 4*2 + 6*0 = 8, +3 = 11 -> 5.5 -> 6 -> 16
 *   (1,1): 6*2 = 12, +3 = 15 -> 7.5 -> 8 -> 18
 * RELU6 clamps to [10 + 0, 10 + 6] = [10, 16]. */
START_TEST(qconv_uint8_same_padding_zero_point) {
  static uint8_t in[4] = {5, 7, 9, 11}, w[4] = {102, 100, 98, 104}, out[4];
  static int32_t bias[1] = {3};
  qnode_t *qn = calloc(1, sizeof *qn);
  const int32_t di[4] = {1, 2, 2, 1}, dw[4] = {1, 2, 2, 1}, db[1] = {1};
  const float s1 = 1.0f, sw = 0.5f;
  const int64_t zin = 5, zw = 100, zo = 10;
  qview(qn, 0, in, AR_DTYPE_UINT8, 4, di, 1, &s1, &zin);
  qview(qn, 1, w, AR_DTYPE_UINT8, 4, dw, 1, &sw, &zw);
  qview(qn, 2, bias, AR_DTYPE_INT32, 1, db, 1, &sw, NULL);
  qview(qn, 3, out, AR_DTYPE_UINT8, 4, di, 1, &s1, &zo);
  qn->opt.conv2d = (ar_conv2d_options_t){.padding = AR_PADDING_SAME, .stride_w = 1, .stride_h = 1,
                                         .activation = AR_ACT_NONE, .dilation_w = 1, .dilation_h = 1};
  qnode_wire(qn, AR_OP_CONV_2D, true);
  const uint8_t want[4] = {20, 8, 16, 18};
  qnode_expect(qn, &ar_kernel_conv_2d, want, 4, "uint8 SAME");
  qn->opt.conv2d.activation = AR_ACT_RELU6;
  const uint8_t want6[4] = {16, 10, 16, 16};
  qnode_expect(qn, &ar_kernel_conv_2d, want6, 4, "uint8 SAME relu6");
  free(qn);
}
END_TEST

/* int8, per-channel scales, a negative exact tie: x - z_in = [-2, 5] (q = -3, 4, z_in -1, s_in 1).
 * Channel 0: w = [1, 1] (s 0.5), bias 0: 3 * 0.5 = 1.5 -> 2.
 * Channel 1: w = [2, -1] (s 0.25), bias 3: -9 + 3 = -6, * 0.25 = -1.5 -> -1 (ties toward +inf, the
 * builtin int8 kernel; the reference kernel would give -2). */
START_TEST(qconv_int8_per_channel_negative_tie) {
  static int8_t in[2] = {-3, 4}, w[4] = {1, 1, 2, -1}, out[2];
  static int32_t bias[2] = {0, 3};
  qnode_t *qn = calloc(1, sizeof *qn);
  const int32_t di[4] = {1, 1, 1, 2}, dw[4] = {2, 1, 1, 2}, db[1] = {2}, dout[4] = {1, 1, 1, 2};
  const float s1 = 1.0f, sw[2] = {0.5f, 0.25f};
  const int64_t zin = -1, zo = 0;
  qview(qn, 0, in, AR_DTYPE_INT8, 4, di, 1, &s1, &zin);
  qview(qn, 1, w, AR_DTYPE_INT8, 4, dw, 2, sw, NULL);
  qview(qn, 2, bias, AR_DTYPE_INT32, 1, db, 2, sw, NULL);
  qview(qn, 3, out, AR_DTYPE_INT8, 4, dout, 1, &s1, &zo);
  qn->opt.conv2d = (ar_conv2d_options_t){.padding = AR_PADDING_VALID, .stride_w = 1, .stride_h = 1,
                                         .activation = AR_ACT_NONE, .dilation_w = 1, .dilation_h = 1};
  qnode_wire(qn, AR_OP_CONV_2D, true);
  const int8_t want[2] = {2, -1};
  qnode_expect(qn, &ar_kernel_conv_2d, (const uint8_t *)want, 2, "int8 per-channel");
  free(qn);
}
END_TEST

/* ---------- FULLY_CONNECTED, hand-computed ---------- */

/* uint8: x - z_in = [0, 2, 4, 6] (z_in 5, s 1), unit 0: w - z_w = [2, 0, -2, 4], bias 3; unit 1:
 * w - z_w = [0, -3, 0, 0], bias 0; s_w 0.5, s_out 2 -> multiplier 0.25, z_out 10.
 *   unit 0: 16 + 3 = 19 -> 4.75 -> 5 -> 15
 *   unit 1: -6 -> -1.5 -> -2 (uint8 kernels round the shift's ties away from zero) -> 8 */
START_TEST(qfc_uint8_hand) {
  static uint8_t in[4] = {5, 7, 9, 11}, w[8] = {102, 100, 98, 104, 100, 97, 100, 100}, out[2];
  static int32_t bias[2] = {3, 0};
  qnode_t *qn = calloc(1, sizeof *qn);
  const int32_t di[2] = {1, 4}, dw[2] = {2, 4}, db[1] = {2}, dout[2] = {1, 2};
  const float s1 = 1.0f, sw = 0.5f, so = 2.0f;
  const int64_t zin = 5, zw = 100, zo = 10;
  qview(qn, 0, in, AR_DTYPE_UINT8, 2, di, 1, &s1, &zin);
  qview(qn, 1, w, AR_DTYPE_UINT8, 2, dw, 1, &sw, &zw);
  qview(qn, 2, bias, AR_DTYPE_INT32, 1, db, 1, &sw, NULL);
  qview(qn, 3, out, AR_DTYPE_UINT8, 2, dout, 1, &so, &zo);
  qn->opt.fully_connected.activation = AR_ACT_NONE;
  qnode_wire(qn, AR_OP_FULLY_CONNECTED, true);
  const uint8_t want[2] = {15, 8};
  qnode_expect(qn, &ar_kernel_fully_connected, want, 2, "uint8 FC");
  free(qn);
}
END_TEST

/* int8, per-tensor weights (s 0.25), depth 2 (not a multiple of 4: the rows are copied):
 * x - z_in = [-2, 5]; unit 0: w = [2, 2] -> 6 * 0.25 = 1.5 -> 2; unit 1: w = [2, -1], bias 3:
 * -6 * 0.25 = -1.5 -> -1 (ties toward +inf: TFLite sends int8 GEMMs to ruy). RELU clamps at
 * z_out = 0; a second batch row x - z_in = [0, 0] gives bias only: [0, 0.75 -> 1]. */
START_TEST(qfc_int8_hand_and_relu) {
  static int8_t in[4] = {-3, 4, -1, -1}, w[4] = {2, 2, 2, -1}, out[4];
  static int32_t bias[2] = {0, 3};
  qnode_t *qn = calloc(1, sizeof *qn);
  const int32_t di[2] = {2, 2}, dw[2] = {2, 2}, db[1] = {2}, dout[2] = {2, 2};
  const float s1 = 1.0f, sw = 0.25f;
  const int64_t zin = -1, zo = 0;
  qview(qn, 0, in, AR_DTYPE_INT8, 2, di, 1, &s1, &zin);
  qview(qn, 1, w, AR_DTYPE_INT8, 2, dw, 1, &sw, NULL);
  qview(qn, 2, bias, AR_DTYPE_INT32, 1, db, 1, &sw, NULL);
  qview(qn, 3, out, AR_DTYPE_INT8, 2, dout, 1, &s1, &zo);
  qn->opt.fully_connected.activation = AR_ACT_NONE;
  qnode_wire(qn, AR_OP_FULLY_CONNECTED, true);
  const int8_t want[4] = {2, -1, 0, 1};
  qnode_expect(qn, &ar_kernel_fully_connected, (const uint8_t *)want, 4, "int8 FC");
  qn->opt.fully_connected.activation = AR_ACT_RELU;
  const int8_t want_relu[4] = {2, 0, 0, 1};
  qnode_expect(qn, &ar_kernel_fully_connected, (const uint8_t *)want_relu, 4, "int8 FC relu");
  free(qn);
}
END_TEST

/* ---------- int16x8 and hybrid (kernels/qwide.c), hand-computed ---------- */

/* TFLite's int64 rescale: m' = (m + 2^15) >> 16, then (x m' + 2^(14 - shift)) >> (15 - shift). */
START_TEST(mbqm64_hand_values) {
  const int32_t half = 1 << 30;                     /* 0.5 in Q31: m' = 16384 */
  ck_assert_int_eq(ar_mbqm64(3, half, 0), 2);       /* 1.5 -> 2 */
  ck_assert_int_eq(ar_mbqm64(-3, half, 0), -1);     /* -1.5 -> -1: one rounding, ties up */
  ck_assert_int_eq(ar_mbqm64(5, half, -1), 1);      /* 1.25 -> 1 */
  ck_assert_int_eq(ar_mbqm64(-298, half, -1), -74); /* -74.5 -> -74 (ar_mbqm: -75) */
  ck_assert_int_eq(ar_mbqm(-298, half, -1), -75);
  ck_assert_int_eq(ar_mbqm64(3ll << 32, half, -8), 3 << 23);   /* an accumulator past int32 */
  ck_assert_int_eq(ar_mbqm64(1 << 15, 0x7FFF0000, 0), 32767);  /* m' saturates at 0x7FFF */
  ck_assert_int_eq(ar_mbqm64(1000, half, 7), 64000);           /* the largest left shift */
}
END_TEST

/* int16x8 CONV_2D, one 2x2 VALID window, per-channel weights (s_in 1, s_out 1):
 *   x = [100, -200, 300, -196]
 *   channel 0: w = [1, 2, 3, 4] (s 0.5), bias 10: 100 - 400 + 900 - 784 + 10 = -174 -> -87
 *   channel 1: w = [-1, 0, 0, 1] (s 0.5 * 0.5), bias -2: -100 - 196 - 2 = -298 -> -74.5 -> -74
 * RELU clamps both to 0; an output scale of 2^-9 (multipliers 256, 128) saturates both at -32768. */
START_TEST(q16_conv_hand) {
  static int16_t in[4] = {100, -200, 300, -196}, out[2];
  static int8_t w[8] = {1, 2, 3, 4, -1, 0, 0, 1};
  static int64_t bias[2] = {10, -2};
  qnode_t *qn = calloc(1, sizeof *qn);
  const int32_t di[4] = {1, 2, 2, 1}, dw[4] = {2, 2, 2, 1}, db[1] = {2}, dout[4] = {1, 1, 1, 2};
  const float s1 = 1.0f, sw[2] = {0.5f, 0.25f}, tiny = 0x1p-9f;
  qview(qn, 0, in, AR_DTYPE_INT16, 4, di, 1, &s1, NULL);
  qview(qn, 1, w, AR_DTYPE_INT8, 4, dw, 2, sw, NULL);
  qview(qn, 2, bias, AR_DTYPE_INT64, 1, db, 2, sw, NULL);
  qview(qn, 3, out, AR_DTYPE_INT16, 4, dout, 1, &s1, NULL);
  qn->opt.conv2d = (ar_conv2d_options_t){.padding = AR_PADDING_VALID, .stride_w = 1, .stride_h = 1,
                                         .activation = AR_ACT_NONE, .dilation_w = 1, .dilation_h = 1};
  qnode_wire(qn, AR_OP_CONV_2D, true);
  char msg[AR_MSG_BYTES] = "";
  ck_assert_msg(qnode_run(qn, &ar_kernel_conv_2d, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(out[0], -87);
  ck_assert_int_eq(out[1], -74);
  qn->opt.conv2d.activation = AR_ACT_RELU;
  ck_assert_msg(qnode_run(qn, &ar_kernel_conv_2d, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(out[0], 0);
  ck_assert_int_eq(out[1], 0);
  qn->opt.conv2d.activation = AR_ACT_NONE;
  qview(qn, 3, out, AR_DTYPE_INT16, 4, dout, 1, &tiny, NULL);
  ck_assert_msg(qnode_run(qn, &ar_kernel_conv_2d, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(out[0], -32768);                 /* -174 * 256 */
  ck_assert_int_eq(out[1], -32768);
  /* A non-zero int16 zero point is refused, naming the operand. */
  const int64_t zp = 3;
  qview(qn, 0, in, AR_DTYPE_INT16, 4, di, 1, &s1, &zp);
  ck_assert_int_eq(qnode_run(qn, &ar_kernel_conv_2d, msg, sizeof msg), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(msg, "operator 5 (CONV_2D): input 0 (INT16) zero point 3 is not 0"), "%s", msg);
  /* An INT32 bias is not the int16x8 form. */
  qview(qn, 0, in, AR_DTYPE_INT16, 4, di, 1, &s1, NULL);
  qn->t[2].dtype = AR_DTYPE_INT32;
  ck_assert_int_eq(qnode_run(qn, &ar_kernel_conv_2d, msg, sizeof msg), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(msg, "int16x8 form needs INT8 filter, INT16 output and INT64 bias"), "%s", msg);
  free(qn);
}
END_TEST

/* int16x8 FULLY_CONNECTED (s_in 0.5, s_w 0.25, s_out 0.5: multiplier 0.25), x = [1000, -2000]:
 *   unit 0: w = [3, 1], bias 2: 3000 - 2000 + 2 = 1002 -> 250.5 -> 251
 *   unit 1: w = [-1, 0], bias -2: -1002 -> -250.5 -> -250 (ties toward +infinity)
 * and a depthwise 1x1 with multiplier 2 on the same scales: x * [2, -3] + [1, 0] = [2001, -3000]
 * -> [500.25 -> 500, -750]. */
START_TEST(q16_fc_and_depthwise_hand) {
  static int16_t in[2] = {1000, -2000}, out[4];
  static int8_t w[4] = {3, 1, -1, 0}, wd[2] = {2, -3};
  static int64_t bias[2] = {2, -2}, bd[2] = {1, 0};
  qnode_t *qn = calloc(1, sizeof *qn);
  const int32_t di[2] = {1, 2}, dw[2] = {2, 2}, db[1] = {2}, dout[2] = {1, 2};
  const float si = 0.5f, sw = 0.25f, sb = 0.125f;
  qview(qn, 0, in, AR_DTYPE_INT16, 2, di, 1, &si, NULL);
  qview(qn, 1, w, AR_DTYPE_INT8, 2, dw, 1, &sw, NULL);
  qview(qn, 2, bias, AR_DTYPE_INT64, 1, db, 1, &sb, NULL);
  qview(qn, 3, out, AR_DTYPE_INT16, 2, dout, 1, &si, NULL);
  qn->opt.fully_connected.activation = AR_ACT_NONE;
  qnode_wire(qn, AR_OP_FULLY_CONNECTED, true);
  char msg[AR_MSG_BYTES] = "";
  ck_assert_msg(qnode_run(qn, &ar_kernel_fully_connected, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(out[0], 251);
  ck_assert_int_eq(out[1], -250);

  static int16_t in1[1] = {1000};
  const int32_t d1[4] = {1, 1, 1, 1}, dwf[4] = {1, 1, 1, 2}, dout2[4] = {1, 1, 1, 2};
  qview(qn, 0, in1, AR_DTYPE_INT16, 4, d1, 1, &si, NULL);
  qview(qn, 1, wd, AR_DTYPE_INT8, 4, dwf, 1, &sw, NULL);
  qview(qn, 2, bd, AR_DTYPE_INT64, 1, db, 1, &sb, NULL);
  qview(qn, 3, out, AR_DTYPE_INT16, 4, dout2, 1, &si, NULL);
  qn->opt.depthwise = (ar_depthwise_options_t){.padding = AR_PADDING_SAME, .stride_w = 1, .stride_h = 1,
                                               .depth_multiplier = 2, .activation = AR_ACT_NONE,
                                               .dilation_w = 1, .dilation_h = 1};
  qnode_wire(qn, AR_OP_DEPTHWISE_CONV_2D, true);
  ck_assert_msg(qnode_run(qn, &ar_kernel_depthwise_conv_2d, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(out[0], 500);
  ck_assert_int_eq(out[1], -750);
  free(qn);
}
END_TEST

/* The on-the-fly input quantization of the hybrid kernels. */
START_TEST(hybrid_input_quantization_hand) {
  int8_t q[5];
  int32_t zp = 99;
  /* symmetric: r = 1, q = round(x * 127): 63.5 -> 64 away from zero */
  const float xs[4] = {1.0f, -0.5f, 0.25f, 0.0f};
  ck_assert_float_eq(ar__qw_quantize_symmetric(xs, 4, q), 1.0f / 127.0f);
  ck_assert_int_eq(q[0], 127); ck_assert_int_eq(q[1], -64); ck_assert_int_eq(q[2], 32);
  ck_assert_int_eq(q[3], 0);
  /* asymmetric over [-1, 2]: scale 3/255, zero point -128 + 85 = -43; q = round(x * 85) - 43,
   * the tie 42.5 rounding to 43 before the zero point (0, not -1), 170 - 43 = 127 */
  const float xa[5] = {0.5f, -1.0f, 0.25f, 2.0f, -0.75f};
  ck_assert_float_eq(ar__qw_quantize_asymmetric(xa, 5, q, &zp), (float)(3.0 / 255.0));
  ck_assert_int_eq(zp, -43);
  const int8_t want[5] = {0, -128, -22, 127, -107};
  for (int i = 0; i < 5; i++) ck_assert_int_eq(q[i], want[i]);
  /* all positive: the range starts at 0, zero point -128 */
  const float xp[2] = {1.0f, 3.0f};
  ar__qw_quantize_asymmetric(xp, 2, q, &zp);
  ck_assert_int_eq(zp, -128);
  ck_assert_int_eq(q[0], -43); ck_assert_int_eq(q[1], 127);
  /* all zero: scale 1, zero point 0, q 0 */
  const float xz[3] = {0.0f, 0.0f, 0.0f};
  memset(q, 7, sizeof q);
  ck_assert_float_eq(ar__qw_quantize_asymmetric(xz, 3, q, &zp), 1.0f);
  ck_assert_int_eq(zp, 0);
  ck_assert_int_eq(q[0], 0); ck_assert_int_eq(q[2], 0);
  ck_assert_float_eq(ar__qw_quantize_symmetric(xz, 3, q), 1.0f);
}
END_TEST

/* Hybrid FULLY_CONNECTED: x = [1, -0.5, 0.25, 0] quantizes to [127, -64, 32, 0] (s 1/127);
 * unit 0: w = [1, 2, 4, 8] (s 0.5): 127 - 128 + 128 = 127 -> 127 * (0.5 / 127) = 0.5, + 0.25 bias
 * = 0.75; unit 1: w = [-1, 0, 0, 0]: -127 -> -0.5, + 0.25 = -0.25, RELU -> 0. Asymmetric over
 * [-0.5, 1] (s 1.5/255, zero point -128 + 85 = -43): q - zp = [170, -85, 43, 0], unit 0: 170 - 170
 * + 172 = 172 -> 0.5059 + 0.25. A hybrid CONV_2D 1x1 (one weight scale: symmetric) on the same
 * row gives the symmetric numbers. */
START_TEST(hybrid_fc_and_conv_hand) {
  static float in[4] = {1.0f, -0.5f, 0.25f, 0.0f}, bias[2] = {0.25f, 0.25f}, out[2];
  static int8_t w[8] = {1, 2, 4, 8, -1, 0, 0, 0};
  qnode_t *qn = calloc(1, sizeof *qn);
  const int32_t di[2] = {1, 4}, dw[2] = {2, 4}, db[1] = {2}, dout[2] = {1, 2};
  const float sw = 0.5f;
  qview(qn, 0, in, AR_DTYPE_FLOAT32, 2, di, 0, NULL, NULL);
  qview(qn, 1, w, AR_DTYPE_INT8, 2, dw, 1, &sw, NULL);
  qview(qn, 2, bias, AR_DTYPE_FLOAT32, 1, db, 0, NULL, NULL);
  qview(qn, 3, out, AR_DTYPE_FLOAT32, 2, dout, 0, NULL, NULL);
  qn->opt.fully_connected.activation = AR_ACT_NONE;
  qnode_wire(qn, AR_OP_FULLY_CONNECTED, true);
  char msg[AR_MSG_BYTES] = "";
  ck_assert_msg(qnode_run(qn, &ar_kernel_fully_connected, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_float_eq_tol(out[0], 0.75f, 1e-6f);
  ck_assert_float_eq_tol(out[1], -0.25f, 1e-6f);
  ck_assert_uint_eq(qn->node.scratch_bytes, 64 + 64 + 4);   /* scale, zero point, 4 int8 */
  qn->opt.fully_connected.activation = AR_ACT_RELU;
  qn->opt.fully_connected.asymmetric_quantize_inputs = true;
  ck_assert_msg(qnode_run(qn, &ar_kernel_fully_connected, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_float_eq_tol(out[0], 172.0f * (0.5f * (float)(1.5 / 255.0)) + 0.25f, 1e-6f);
  ck_assert_float_eq(out[1], 0.0f);

  const int32_t di4[4] = {1, 1, 1, 4}, dw4[4] = {2, 1, 1, 4}, dout4[4] = {1, 1, 1, 2};
  qview(qn, 0, in, AR_DTYPE_FLOAT32, 4, di4, 0, NULL, NULL);
  qview(qn, 1, w, AR_DTYPE_INT8, 4, dw4, 1, &sw, NULL);
  qview(qn, 3, out, AR_DTYPE_FLOAT32, 4, dout4, 0, NULL, NULL);
  qn->opt.conv2d = (ar_conv2d_options_t){.padding = AR_PADDING_SAME, .stride_w = 1, .stride_h = 1,
                                         .activation = AR_ACT_NONE, .dilation_w = 1, .dilation_h = 1};
  qnode_wire(qn, AR_OP_CONV_2D, true);
  ck_assert_msg(qnode_run(qn, &ar_kernel_conv_2d, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_float_eq_tol(out[0], 0.75f, 1e-6f);
  ck_assert_float_eq_tol(out[1], -0.25f, 1e-6f);
  /* weights with a zero point are refused */
  const int64_t zw = 1;
  qview(qn, 1, w, AR_DTYPE_INT8, 4, dw4, 1, &sw, &zw);
  ck_assert_int_eq(qnode_run(qn, &ar_kernel_conv_2d, msg, sizeof msg), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(msg, "operator 5 (CONV_2D): filter zero point 1 (channel 0) is not 0"), "%s", msg);
  free(qn);
}
END_TEST

/* ---------- prepare errors ---------- */

START_TEST(qconv_prepare_errors) {
  static uint8_t in[4], w[4], out[4];
  static int32_t bias[1];
  qnode_t *qn = calloc(1, sizeof *qn);
  const int32_t di[4] = {1, 2, 2, 1}, dw[4] = {1, 2, 2, 1}, db[1] = {1};
  const float s1 = 1.0f, sw = 0.5f, bad = 0.6f;
  const int64_t z = 0;
  qview(qn, 0, in, AR_DTYPE_UINT8, 4, di, 1, &s1, &z);
  qview(qn, 1, w, AR_DTYPE_UINT8, 4, dw, 1, &sw, &z);
  qview(qn, 2, bias, AR_DTYPE_INT32, 1, db, 1, &bad, NULL);   /* 0.6 vs 1 * 0.5: off by 0.1 */
  qview(qn, 3, out, AR_DTYPE_UINT8, 4, di, 1, &s1, &z);
  qn->opt.conv2d = (ar_conv2d_options_t){.padding = AR_PADDING_SAME, .stride_w = 1, .stride_h = 1,
                                         .activation = AR_ACT_NONE, .dilation_w = 1, .dilation_h = 1};
  qnode_wire(qn, AR_OP_CONV_2D, true);
  char msg[AR_MSG_BYTES] = "";
  ck_assert_int_eq(ar_kernel_conv_2d.prepare(&qn->node, msg, sizeof msg), AR_EINVAL);
  ck_assert_msg(strstr(msg, "input 2 (bias) scale") != NULL, "%s", msg);
  /* Within TFLite's tolerance (0.02 * s_out) is accepted. */
  const float close = 0.51f;
  qview(qn, 2, bias, AR_DTYPE_INT32, 1, db, 1, &close, NULL);
  ck_assert_int_eq(ar_kernel_conv_2d.prepare(&qn->node, msg, sizeof msg), 0);
  /* No quantization on the output. */
  qn->t[3].quant = NULL;
  ck_assert_int_eq(ar_kernel_conv_2d.prepare(&qn->node, msg, sizeof msg), AR_EINVAL);
  ck_assert_msg(strstr(msg, "output 0") != NULL, "%s", msg);
  qn->t[3].quant = &qn->q[3];
  /* Mixed types. */
  qn->t[1].dtype = AR_DTYPE_INT8;
  ck_assert_int_eq(ar_kernel_conv_2d.prepare(&qn->node, msg, sizeof msg), AR_EUNSUPPORTED);
  qn->t[1].dtype = AR_DTYPE_UINT8;
  /* TANH cannot be a quantized clamp. */
  qn->opt.conv2d.activation = AR_ACT_TANH;
  ck_assert_int_eq(ar_kernel_conv_2d.prepare(&qn->node, msg, sizeof msg), AR_EUNSUPPORTED);
  free(qn);
}
END_TEST

/* ---------- randomized: every path against a naive reference ---------- */

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint32_t rnd(void) {
  rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}

typedef struct {
  int n, h, w, ci, co, kh, kw, sh, sw, dh, dw;
  ar_padding_t pad;
  ar_activation_t act;
  bool u8, per_channel;
} qcase_t;

static int ref_out(int in, int k, int s, int d, ar_padding_t p, int *before) {
  int eff = (k - 1) * d + 1;
  int o = p == AR_PADDING_SAME ? (in + s - 1) / s : (in - eff + s) / s;
  int total = (o - 1) * s + eff - in;
  *before = p == AR_PADDING_SAME && total > 0 ? total / 2 : 0;
  return o;
}

/* The random cases' variants: weights without the byte that is -128 in the GEMM's signed form
 * (int8 -128, uint8 0: TFLite's symmetric int8 weights, where the NEON smlal kernel pairs two
 * products in int16), and zero points at the ends of their type's range. */
static bool g_sym_weights, g_extreme_zp;

static uint8_t rnd_weight(bool u8) {
  uint8_t v = (uint8_t)rnd();
  if (g_sym_weights && v == (u8 ? 0x00 : 0x80)) v++;
  return v;
}

static int64_t rnd_zero_point(bool u8) {
  if (g_extreme_zp) return (rnd() & 1) ? (u8 ? 255 : 127) : (u8 ? 0 : -128);
  return u8 ? (int64_t)(rnd() % 256) : (int64_t)(rnd() % 256) - 128;
}

static void run_conv_case(const qcase_t *c) {
  int pt, pl;
  const int oh = ref_out(c->h, c->kh, c->sh, c->dh, c->pad, &pt);
  const int ow = ref_out(c->w, c->kw, c->sw, c->dw, c->pad, &pl);
  const size_t n_in = (size_t)c->n * c->h * c->w * c->ci, k = (size_t)c->kh * c->kw * c->ci;
  const size_t n_w = (size_t)c->co * k, n_out = (size_t)c->n * oh * ow * c->co;
  uint8_t *in = malloc(n_in), *w = malloc(n_w), *out = malloc(n_out), *want = malloc(n_out);
  int32_t *bias = malloc(sizeof(int32_t) * (size_t)c->co);
  for (size_t i = 0; i < n_in; i++) in[i] = (uint8_t)rnd();
  for (size_t i = 0; i < n_w; i++) w[i] = rnd_weight(c->u8);
  for (int i = 0; i < c->co; i++) bias[i] = (int32_t)(rnd() % 20001) - 10000;
  qnode_t *qn = calloc(1, sizeof *qn);
  const ar_dtype_t dt = c->u8 ? AR_DTYPE_UINT8 : AR_DTYPE_INT8;
  const float s_in = 0.02f + (float)(rnd() % 100) * 1e-3f, s_out = 0.05f + (float)(rnd() % 100) * 0.01f;
  const int64_t z_in = rnd_zero_point(c->u8);
  const int64_t z_out = rnd_zero_point(c->u8);
  float sw[256], sb[256];
  int64_t zw[256];
  const int nq = c->per_channel ? c->co : 1;
  for (int i = 0; i < nq; i++) {
    sw[i] = 0.001f + (float)(rnd() % 1000) * 1e-5f;
    zw[i] = c->u8 ? (g_extreme_zp ? (i & 1 ? 255 : 0) : 28 + (int64_t)(rnd() % 201)) : 0;
    sb[i] = s_in * sw[i];
  }
  const int32_t di[4] = {c->n, c->h, c->w, c->ci}, dwt[4] = {c->co, c->kh, c->kw, c->ci};
  const int32_t db[1] = {c->co}, dout[4] = {c->n, oh, ow, c->co};
  qview(qn, 0, in, dt, 4, di, 1, &s_in, &z_in);
  qview(qn, 1, w, dt, 4, dwt, nq, sw, zw);
  qview(qn, 2, bias, AR_DTYPE_INT32, 1, db, nq, sb, NULL);
  qview(qn, 3, out, dt, 4, dout, 1, &s_out, &z_out);
  qn->opt.conv2d = (ar_conv2d_options_t){.padding = c->pad, .stride_w = c->sw, .stride_h = c->sh,
                                         .activation = c->act, .dilation_w = c->dw,
                                         .dilation_h = c->dh};
  qnode_wire(qn, AR_OP_CONV_2D, true);
  int32_t lo, hi;
  ar_quant_activation_range(c->act, dt, s_out, z_out, &lo, &hi);
  for (int b = 0; b < c->n; b++)
    for (int oy = 0; oy < oh; oy++)
      for (int ox = 0; ox < ow; ox++)
        for (int o = 0; o < c->co; o++) {
          int64_t acc = bias[o];
          for (int ky = 0; ky < c->kh; ky++)
            for (int kx = 0; kx < c->kw; kx++) {
              int iy = oy * c->sh - pt + ky * c->dh, ix = ox * c->sw - pl + kx * c->dw;
              if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) continue;
              for (int i = 0; i < c->ci; i++) {
                size_t xi = (((size_t)b * c->h + iy) * c->w + ix) * c->ci + i;
                size_t wi = (((size_t)o * c->kh + ky) * c->kw + kx) * c->ci + i;
                int32_t x = c->u8 ? in[xi] : (int8_t)in[xi];
                int32_t wv = c->u8 ? w[wi] : (int8_t)w[wi];
                acc += (int64_t)(x - z_in) * (wv - zw[c->per_channel ? o : 0]);
              }
            }
          int32_t m;
          int sh;
          ar_quantize_multiplier(ar_quant_conv_multiplier(s_in, sw[c->per_channel ? o : 0], s_out,
                                                          c->u8), &m, &sh);
          int32_t v = c->u8 ? ar_mbqm((int32_t)acc, m, sh) : ar_mbqm_up((int32_t)acc, m, sh);
          v += (int32_t)z_out;
          v = v < lo ? lo : v > hi ? hi : v;
          want[(((size_t)b * oh + oy) * ow + ox) * c->co + o] = (uint8_t)v;
        }
  char what[160];
  snprintf(what, sizeof what, "conv %s n%d %dx%dx%d -> %d k%dx%d s%d,%d d%d,%d %s%s",
           c->u8 ? "uint8" : "int8", c->n, c->h, c->w, c->ci, c->co, c->kh, c->kw, c->sh, c->sw,
           c->dh, c->dw, c->pad == AR_PADDING_SAME ? "SAME" : "VALID",
           c->per_channel ? " per-channel" : "");
  qnode_expect(qn, &ar_kernel_conv_2d, want, n_out, what);
  free(qn); free(in); free(w); free(out); free(want); free(bias);
}

static const qcase_t conv_cases[] = {
    /* n  h   w  ci  co kh kw sh sw dh dw pad               act            u8     per_channel */
    {1, 9, 7, 3, 16, 3, 3, 2, 2, 1, 1, AR_PADDING_SAME, AR_ACT_RELU6, false, true},    /* stem */
    {1, 9, 7, 3, 32, 3, 3, 2, 2, 1, 1, AR_PADDING_SAME, AR_ACT_RELU6, true, false},
    {1, 6, 5, 8, 20, 1, 1, 1, 1, 1, 1, AR_PADDING_SAME, AR_ACT_NONE, false, true},     /* 1x1 direct */
    {2, 6, 5, 16, 70, 1, 1, 1, 1, 1, 1, AR_PADDING_VALID, AR_ACT_NONE, true, false},   /* 5 blocks */
    {1, 5, 6, 12, 24, 1, 1, 2, 2, 1, 1, AR_PADDING_SAME, AR_ACT_RELU, false, true},    /* 1x1 s2 */
    {1, 7, 8, 5, 9, 3, 2, 1, 1, 2, 2, AR_PADDING_SAME, AR_ACT_NONE, false, false},     /* dilation */
    {1, 7, 8, 5, 9, 3, 2, 1, 2, 2, 1, AR_PADDING_VALID, AR_ACT_RELU_N1_TO_1, true, false},
    {1, 4, 4, 6, 130, 3, 3, 1, 1, 1, 1, AR_PADDING_SAME, AR_ACT_NONE, false, true},    /* 9 blocks */
    {1, 3, 3, 7, 3, 1, 1, 1, 1, 1, 1, AR_PADDING_VALID, AR_ACT_NONE, true, false},     /* 1x1, I%4 */
    {1, 13, 11, 40, 33, 3, 3, 1, 1, 1, 1, AR_PADDING_SAME, AR_ACT_RELU6, true, false}, /* tiles */
    /* rows as KH segments read in place (KW*I % 4 == 0): borders, strides, vertical dilation,
     * batches, images smaller than the filter, several tiles of rows */
    {2, 9, 10, 16, 40, 3, 3, 1, 1, 1, 1, AR_PADDING_SAME, AR_ACT_NONE, false, true},
    {1, 11, 9, 8, 24, 3, 3, 2, 2, 1, 1, AR_PADDING_SAME, AR_ACT_RELU6, false, true},
    {1, 9, 9, 4, 20, 3, 3, 1, 1, 2, 1, AR_PADDING_SAME, AR_ACT_NONE, true, false},
    {1, 8, 7, 12, 17, 3, 3, 1, 1, 1, 1, AR_PADDING_VALID, AR_ACT_RELU, true, false},
    {1, 7, 6, 4, 16, 5, 5, 1, 1, 1, 1, AR_PADDING_SAME, AR_ACT_NONE, false, true},
    {1, 6, 7, 3, 8, 2, 4, 1, 2, 1, 1, AR_PADDING_SAME, AR_ACT_NONE, false, false},
    {2, 2, 3, 8, 18, 3, 3, 1, 1, 1, 1, AR_PADDING_SAME, AR_ACT_NONE, true, false},
    {1, 30, 25, 64, 20, 3, 3, 1, 1, 1, 1, AR_PADDING_SAME, AR_ACT_RELU6, false, true},
    /* big enough to be cut over the thread pool: 1x1 rows, im2col tiles, segment tiles */
    {1, 41, 37, 32, 24, 1, 1, 1, 1, 1, 1, AR_PADDING_SAME, AR_ACT_NONE, true, false},
    {1, 41, 41, 7, 45, 3, 3, 2, 2, 1, 1, AR_PADDING_SAME, AR_ACT_RELU6, false, true},
    {2, 23, 19, 24, 37, 3, 3, 1, 1, 1, 1, AR_PADDING_VALID, AR_ACT_NONE, true, false},
    /* 1..7 rows (the NEON tiles' 4/2/1-row and 2/1-row splits), K of 1..3 groups per segment */
    {1, 1, 7, 4, 17, 1, 1, 1, 1, 1, 1, AR_PADDING_VALID, AR_ACT_NONE, false, true},
    {1, 1, 5, 12, 33, 1, 1, 1, 1, 1, 1, AR_PADDING_VALID, AR_ACT_NONE, true, false},
    {1, 3, 1, 8, 64, 3, 1, 1, 1, 1, 1, AR_PADDING_SAME, AR_ACT_RELU, false, true},
};

START_TEST(qconv_random_vs_naive_all_paths) {
  for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) run_conv_case(&conv_cases[i]);
}
END_TEST

static void run_fc_case_big(int batch, int depth, int units, bool u8, ar_activation_t act,
                            bool has_bias, int32_t bias_range, float s_out);
static void run_fc_case(int batch, int depth, int units, bool u8, ar_activation_t act,
                        bool has_bias) {
  run_fc_case_big(batch, depth, units, u8, act, has_bias, 20000, 0.3f);
}

/* bias in [-bias_range, bias_range]; s_out sets the multiplier 0.03 * 0.004 / s_out. */
static void run_fc_case_big(int batch, int depth, int units, bool u8, ar_activation_t act,
                            bool has_bias, int32_t bias_range, float s_out) {
  const size_t n_in = (size_t)batch * depth, n_w = (size_t)units * depth;
  const size_t n_out = (size_t)batch * units;
  uint8_t *in = malloc(n_in), *w = malloc(n_w), *out = malloc(n_out), *want = malloc(n_out);
  int32_t *bias = malloc(sizeof(int32_t) * (size_t)units);
  for (size_t i = 0; i < n_in; i++) in[i] = (uint8_t)rnd();
  for (size_t i = 0; i < n_w; i++) w[i] = rnd_weight(u8);
  for (int i = 0; i < units; i++)
    bias[i] = has_bias ? (int32_t)((int64_t)(rnd() % (2u * (uint32_t)bias_range + 1u)) - bias_range) : 0;
  qnode_t *qn = calloc(1, sizeof *qn);
  const ar_dtype_t dt = u8 ? AR_DTYPE_UINT8 : AR_DTYPE_INT8;
  const float s_in = 0.03f, sw = 0.004f, sb = s_in * sw;
  const int64_t z_in = g_extreme_zp ? rnd_zero_point(u8) : u8 ? 131 : -7;
  const int64_t z_out = g_extreme_zp ? rnd_zero_point(u8) : u8 ? 90 : 12;
  const int64_t zw = u8 ? (g_extreme_zp ? 255 : 117) : 0;
  const int32_t di[2] = {batch, depth}, dwt[2] = {units, depth}, db[1] = {units};
  const int32_t dout[2] = {batch, units};
  qview(qn, 0, in, dt, 2, di, 1, &s_in, &z_in);
  qview(qn, 1, w, dt, 2, dwt, 1, &sw, &zw);
  qview(qn, 2, bias, AR_DTYPE_INT32, 1, db, 1, &sb, NULL);
  qview(qn, 3, out, dt, 2, dout, 1, &s_out, &z_out);
  qn->opt.fully_connected.activation = act;
  qnode_wire(qn, AR_OP_FULLY_CONNECTED, has_bias);
  int32_t lo, hi, m;
  int sh;
  ar_quant_activation_range(act, dt, s_out, z_out, &lo, &hi);
  ar_quantize_multiplier(ar_quant_conv_multiplier(s_in, sw, s_out, true), &m, &sh);
  for (int b = 0; b < batch; b++)
    for (int o = 0; o < units; o++) {
      int64_t acc = bias[o];
      for (int i = 0; i < depth; i++) {
        int32_t x = u8 ? in[(size_t)b * depth + i] : (int8_t)in[(size_t)b * depth + i];
        int32_t wv = u8 ? w[(size_t)o * depth + i] : (int8_t)w[(size_t)o * depth + i];
        acc += (int64_t)(x - z_in) * (wv - zw);
      }
      int32_t v = u8 ? ar_mbqm((int32_t)acc, m, sh) : ar_mbqm_up((int32_t)acc, m, sh);
      v += (int32_t)z_out;
      v = v < lo ? lo : v > hi ? hi : v;
      want[(size_t)b * units + o] = (uint8_t)v;
    }
  char what[96];
  snprintf(what, sizeof what, "fc %s %dx%d -> %d%s", u8 ? "uint8" : "int8", batch, depth, units,
           has_bias ? "" : " no bias");
  qnode_expect(qn, &ar_kernel_fully_connected, want, n_out, what);
  free(qn); free(in); free(w); free(out); free(want); free(bias);
}

static void run_fc_cases(void) {
  run_fc_case(1, 16, 16, false, AR_ACT_RELU, true);     /* hello_world's middle layer */
  run_fc_case(3, 10, 37, false, AR_ACT_NONE, true);     /* depth not a multiple of 4 */
  run_fc_case(1, 1024, 1001, true, AR_ACT_NONE, true);  /* a classifier head (channel blocks) */
  run_fc_case(3, 1022, 333, false, AR_ACT_NONE, true);  /* channel blocks, depth % 4 copy */
  run_fc_case(67, 256, 40, false, AR_ACT_RELU, true);   /* row blocks */
  run_fc_case(7, 64, 65, true, AR_ACT_RELU6, false);
  run_fc_case(2, 1, 16, false, AR_ACT_NONE, true);
  run_fc_case(1, 4000, 4, false, AR_ACT_NONE, true);    /* micro_speech's head: one row, 1000 groups */
  run_fc_case(1, 37, 70, true, AR_ACT_RELU, true);      /* one uint8 row, 5 blocks, depth % 4 */
  /* Multiplier 4.8 (shift 3) with accumulators near 2^30: x << 3 overflows int32, which the
   * vector stores hand to the scalar one (64-bit ar_mbqm_up, TFLite's wrapping int32 ar_mbqm). */
  run_fc_case_big(3, 32, 40, false, AR_ACT_NONE, true, 1 << 30, 0.000025f);
  run_fc_case_big(3, 32, 40, true, AR_ACT_NONE, true, 1 << 30, 0.000025f);
  /* Multiplier just below 1 with large accumulators: the 2^31-scale rounding steps. */
  run_fc_case_big(2, 48, 33, false, AR_ACT_NONE, true, 1 << 28, 0.000121f);
}

START_TEST(qfc_random_vs_naive_all_paths) { run_fc_cases(); }
END_TEST

/* Every random CONV_2D / FULLY_CONNECTED case again with weights that never hold the signed -128
 * (the NEON smlal kernel's paired int16 products), then also with zero points at the ends of
 * their range (z_in, z_out -128/127 or 0/255, uint8 z_w 0/255): each path == the naive sums. */
START_TEST(qconv_qfc_symmetric_weights_extreme_zero_points_all_paths) {
  for (int extreme = 0; extreme <= 1; extreme++) {
    g_sym_weights = true;
    g_extreme_zp = extreme;
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) run_conv_case(&conv_cases[i]);
    run_fc_cases();
  }
  g_sym_weights = g_extreme_zp = false;
}
END_TEST

static Suite *quant_suite(void) {
  Suite *s = suite_create("quant");
  TCase *tc = tcase_create("fixed_point");
  tcase_add_test(tc, quantize_multiplier_hand_values);
  tcase_add_test(tc, srdhm_and_rdivpot_hand_values);
  tcase_add_test(tc, rescale_both_roundings_hand_values);
  tcase_add_test(tc, activation_ranges_hand_values);
  tcase_add_test(tc, fx16_hand_values);
  tcase_add_test(tc, lut16_lookup_hand_values);
  suite_add_tcase(s, tc);
  tc = tcase_create("conv_fc");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, qconv_uint8_same_padding_zero_point);
  tcase_add_test(tc, qconv_int8_per_channel_negative_tie);
  tcase_add_test(tc, qfc_uint8_hand);
  tcase_add_test(tc, qfc_int8_hand_and_relu);
  tcase_add_test(tc, qconv_prepare_errors);
  tcase_add_test(tc, qconv_random_vs_naive_all_paths);
  tcase_add_test(tc, qfc_random_vs_naive_all_paths);
  tcase_add_test(tc, qconv_qfc_symmetric_weights_extreme_zero_points_all_paths);
  suite_add_tcase(s, tc);
  tc = tcase_create("wide");
  tcase_add_test(tc, mbqm64_hand_values);
  tcase_add_test(tc, q16_conv_hand);
  tcase_add_test(tc, q16_fc_and_depthwise_hand);
  tcase_add_test(tc, hybrid_input_quantization_hand);
  tcase_add_test(tc, hybrid_fc_and_conv_hand);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  printf("quantized GEMM paths on this CPU:");
  for (int p = 0; p < N_PATHS; p++)
    if (ar_qgemm_path_supported(all_paths[p])) printf(" %s", ar_qgemm_path_name(all_paths[p]));
  printf("\n");
  SRunner *sr = srunner_create(quant_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
