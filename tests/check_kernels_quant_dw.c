/* check_kernels_quant_dw.c - the quantized (uint8 / int8) DEPTHWISE_CONV_2D, AVERAGE_POOL_2D,
 * MAX_POOL_2D and MEAN kernels.
 *
 * Expected values were computed by hand from TFLite's definitions (kernels/qdepthwise.c, pool.c and
 * reduce.c say which): integer sums with the zero points subtracted, taps outside the input
 * skipped, QuantizeMultiplier, then MultiplyByQuantizedMultiplier (uint8, ties away from zero, with
 * its double rounding: 3/8 -> 1) or the builtin int8 half-up rescale (-1.5 -> -1, where uint8 gives
 * -2), the output zero point and the activation clamp. The tie cases are chosen so that the two
 * roundings give different bytes. A randomized test holds every SIMD loop the CPU has (AVX2,
 * AVX-512 VNNI) to the portable loop and to a naive loop written here, byte for byte. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_kernels.h"
#include "kernels/ar_parallel.h"
#include "kernels/ar_quant.h"
#include "kernels/qgemm.h"

/* ---------- harness ---------- */

typedef struct {
  ar_quant_t q;
  float s[256];
  int64_t z[256];
} tq_t;

static const ar_quant_t *tq(tq_t *t, int32_t n, const float *s, const int64_t *z, int32_t qdim) {
  memset(t, 0, sizeof *t);
  for (int32_t i = 0; i < n; i++) { t->s[i] = s[i]; t->z[i] = z ? z[i] : 0; }
  t->q.n = n;
  t->q.quantized_dimension = qdim;
  t->q.scale = t->s;
  t->q.zero_point = t->z;
  return &t->q;
}
static const ar_quant_t *tq1(tq_t *t, float s, int64_t z) { return tq(t, 1, &s, &z, 0); }

typedef struct {
  ar_tview_t t[4];
  tq_t q[4];
  ar_options_t opt;
  ar_tview_t *io[4];   /* node.inputs (up to 3), node.outputs (1) */
  ar_node_t node;
} qnode_t;

static void tv(ar_tview_t *t, void *data, ar_dtype_t dt, int32_t rank, const int32_t *dims, bool constant,
               const ar_quant_t *q) {
  memset(t, 0, sizeof *t);
  t->data = data;
  t->dtype = dt;
  t->rank = rank;
  uint64_t n = 1;
  for (int32_t i = 0; i < rank; i++) { t->dims[i] = dims[i]; n *= (uint64_t)dims[i]; }
  t->bytes = n * ar_dtype_size(dt);
  t->is_constant = constant;
  t->quant = q;
}

/* Clears everything but the quantization records (the callers fill those in their arguments). */
static void qnode_clear(qnode_t *qn) {
  memset(qn->t, 0, sizeof qn->t);
  memset(&qn->opt, 0, sizeof qn->opt);
  memset(&qn->node, 0, sizeof qn->node);
}

static void qnode_base(qnode_t *qn, ar_op_t op, int n_in) {
  qn->node.op = op;
  qn->node.index = 5;
  qn->node.version = 1;
  qn->node.options = &qn->opt;
  qn->node.n_inputs = n_in;
  qn->node.n_outputs = 1;
  qn->node.inputs = qn->io;
  qn->node.outputs = qn->io + 3;
  for (int i = 0; i < n_in; i++) qn->node.inputs[i] = &qn->t[i];
  qn->node.outputs[0] = &qn->t[3];
  qn->node.threads = 1;
}

static int qnode_prepare(qnode_t *qn, const ar_kernel_t *k, char *msg, size_t n) {
  msg[0] = '\0';
  return k->prepare(&qn->node, msg, n);
}

/* Prepare, init and eval at 1, 2 and 3 threads (prepare sizes the per-thread scratch; a pool of 3
 * takes the chunks): the output bytes must not depend on the thread count. The output is left as
 * the last run wrote it. */
static void qnode_run(qnode_t *qn, const ar_kernel_t *k) {
  char msg[AR_MSG_BYTES] = "";
  ar_threadpool_t *pool = NULL;
  ck_assert_int_eq(ar_threadpool_new(3, &pool, msg, sizeof msg), 0);
  const size_t out_bytes = (size_t)qn->t[3].bytes;
  uint8_t *first = malloc(out_bytes ? out_bytes : 1);
  for (int32_t threads = 1; threads <= 3; threads++) {
    qn->node.threads = threads;
    qn->node.pool = threads > 1 ? pool : NULL;
    int rc = k->prepare(&qn->node, msg, sizeof msg);
    ck_assert_msg(rc == 0, "%s prepare: %s (%s)", k->name, ar_err_name(rc), msg);
    qn->node.scratch = qn->node.scratch_bytes ? malloc(qn->node.scratch_bytes) : NULL;
    if (qn->node.scratch) memset(qn->node.scratch, 0xa5, qn->node.scratch_bytes);
    qn->node.state = qn->node.state_bytes ? malloc(qn->node.state_bytes) : NULL;
    if (qn->node.state) memset(qn->node.state, 0x5a, qn->node.state_bytes);
    if (k->init) k->init(&qn->node);
    memset(qn->t[3].data, 0x3c, out_bytes);
    k->eval(&qn->node);
    free(qn->node.scratch);
    free(qn->node.state);
    qn->node.scratch = qn->node.state = NULL;
    if (threads == 1) memcpy(first, qn->t[3].data, out_bytes);
    else
      ck_assert_msg(memcmp(first, qn->t[3].data, out_bytes) == 0, "%s: %d threads differ from 1",
                    k->name, (int)threads);
  }
  qn->node.threads = 1;
  qn->node.pool = NULL;
  free(first);
  ar_threadpool_free(pool);
}

static void assert_u8(const uint8_t *got, const int *want, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(got[i] == want[i], "%s: element %zu is %d, want %d", what, i, (int)got[i], want[i]);
}
static void assert_i8(const int8_t *got, const int *want, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(got[i] == want[i], "%s: element %zu is %d, want %d", what, i, (int)got[i], want[i]);
}

/* DEPTHWISE node: input [in_dims], filter [f_dims] (constant), bias [oc] (constant, may be NULL). */
static void dw_node(qnode_t *qn, ar_dtype_t dt, void *in, const int32_t *in_dims, const ar_quant_t *qi,
                    void *f, const int32_t *f_dims, const ar_quant_t *qf, int32_t *bias,
                    const ar_quant_t *qb, void *out, const int32_t *out_dims, const ar_quant_t *qo) {
  qnode_clear(qn);
  tv(&qn->t[0], in, dt, 4, in_dims, false, qi);
  tv(&qn->t[1], f, dt, 4, f_dims, true, qf);
  if (bias) tv(&qn->t[2], bias, AR_DTYPE_INT32, 1, &f_dims[3], true, qb);
  tv(&qn->t[3], out, dt, 4, out_dims, false, qo);
  qnode_base(qn, AR_OP_DEPTHWISE_CONV_2D, 3);
  if (!bias) qn->node.inputs[2] = NULL;
  qn->opt.depthwise.padding = AR_PADDING_SAME;
  qn->opt.depthwise.stride_w = qn->opt.depthwise.stride_h = 1;
  qn->opt.depthwise.dilation_w = qn->opt.depthwise.dilation_h = 1;
  qn->opt.depthwise.depth_multiplier = out_dims[3] / in_dims[3];
  qn->opt.depthwise.activation = AR_ACT_NONE;
}

/* ---------- DEPTHWISE_CONV_2D: hand-computed cases ---------- */

/* uint8, weight zero point 100, 2x2 SAME stride 1 (the odd padding row/column at the bottom/right,
 * skipped), per-tensor multiplier 0.5*0.25/1 = 0.125 (m = 2^30, shift -2: TFLite's double rounding).
 * out(0,0,c0) = -12 + (130-128)*4 + (128-128)*0 + (255-128)*(-10) + (128-128)*3 = -1274 -> -159.25
 * -> -159 + 128 = -31 -> 0; out(2,2,c1): only tap (0,0) in bounds: 7 + (129-128)*(-4) = 3 ->
 * round(1.5) = 2 -> round(0.5) = 1 -> 129 (not 128: the double rounding). */
START_TEST(qdw_u8_same_weight_zp) {
  uint8_t x[18] = {130, 120, 128, 140, 100, 200, 255, 0, 128, 128, 131, 125, 90, 180, 140, 110, 128, 129};
  uint8_t w[8] = {104, 96, 100, 110, 90, 101, 103, 100};
  int32_t bias[2] = {-12, 7};
  uint8_t out[18];
  const int32_t id[4] = {1, 3, 3, 2}, fd[4] = {1, 2, 2, 2}, od[4] = {1, 3, 3, 2};
  qnode_t qn;
  dw_node(&qn, AR_DTYPE_UINT8, x, id, tq1(&qn.q[0], 0.5f, 128), w, fd, tq1(&qn.q[1], 0.25f, 100), bias,
          tq1(&qn.q[2], 0.125f, 0), out, od, tq1(&qn.q[3], 1.0f, 128));
  for (int isa = 0; isa <= 2; isa++) {
    if (ar__qdw_set_isa(isa) != isa) continue;
    memset(out, 0xee, sizeof out);
    qnode_run(&qn, &ar_kernel_depthwise_conv_2d);
    const int want[18] = {0, 132, 128, 213, 109, 92, 242, 200, 111, 123, 128, 131, 107, 80, 133, 139, 126, 129};
    assert_u8(out, want, 18, "uint8 2x2 SAME");
  }
  ar__qdw_set_isa(-1);
}
END_TEST

/* int8, depth multiplier 2, per-channel scales {0.5, 0.25, 1, 0.125}, 3x3 SAME stride 2, input zero
 * point -5, output scale 4 (multipliers 0.0625 .. 0.015625), zero point -20; output channel c*2+m
 * reads input channel c; w[i] = (37 i mod 21) - 10. out(0,0,0): the 4 in-bounds taps are input
 * (0,0), (0,1), (1,0), (1,1) under filter taps (1,1), (1,2), (2,1), (2,2):
 * 100 + 0*(-6) + 25*(-5) + 12*(-3) + (-123)*(-2) = 185 -> 185/16 = 11.56 -> 12 - 20 = -8. */
START_TEST(qdw_i8_per_channel_mult2_stride2) {
  int8_t x[18] = {-5, 10, 20, -30, 0, 5, 7, -8, -128, 127, 3, 3, 50, -50, -5, -5, 1, 2};
  int8_t w[36];
  for (int i = 0; i < 36; i++) w[i] = (int8_t)(((i * 37) % 21) - 10);
  int32_t bias[4] = {100, -50, 3, 0};
  int8_t out[16];
  const int32_t id[4] = {1, 3, 3, 2}, fd[4] = {1, 3, 3, 4}, od[4] = {1, 2, 2, 4};
  const float fs[4] = {0.5f, 0.25f, 1.0f, 0.125f}, bs[4] = {0.25f, 0.125f, 0.5f, 0.0625f};
  qnode_t qn;
  dw_node(&qn, AR_DTYPE_INT8, x, id, tq1(&qn.q[0], 0.5f, -5), w, fd, tq(&qn.q[1], 4, fs, NULL, 3), bias,
          tq(&qn.q[2], 4, bs, NULL, 0), out, od, tq1(&qn.q[3], 4.0f, -20));
  qn.opt.depthwise.stride_w = qn.opt.depthwise.stride_h = 2;
  for (int isa = 0; isa <= 2; isa++) {
    if (ar__qdw_set_isa(isa) != isa) continue;
    memset(out, 0x11, sizeof out);
    qnode_run(&qn, &ar_kernel_depthwise_conv_2d);
    const int want[16] = {-8, -5, 117, -12, 3, 20, 98, -15, 20, -32, 1, -24, 56, -41, 3, -29};
    assert_i8(out, want, 16, "int8 multiplier 2 stride 2");
  }
  ar__qdw_set_isa(-1);
}
END_TEST

/* uint8, 3x3 with dilation 2 on 5x5 (SAME: 2 padding rows/cols each side), RELU6 with output scale
 * 2 and zero point 7 -> clamp [7, 10]; multiplier float(0.02*0.01)/2. */
START_TEST(qdw_u8_dilation2_relu6) {
  uint8_t x[25], w[9], out[25];
  for (int i = 0; i < 25; i++) x[i] = (uint8_t)((i * 53) % 256);
  for (int i = 0; i < 9; i++) w[i] = (uint8_t)((i * 29) % 256);
  int32_t bias[1] = {500};
  const int32_t id[4] = {1, 5, 5, 1}, fd[4] = {1, 3, 3, 1}, od[4] = {1, 5, 5, 1};
  qnode_t qn;
  dw_node(&qn, AR_DTYPE_UINT8, x, id, tq1(&qn.q[0], 0.02f, 3), w, fd, tq1(&qn.q[1], 0.01f, 128), bias,
          tq1(&qn.q[2], 0.0002f, 0), out, od, tq1(&qn.q[3], 2.0f, 7));
  qn.opt.depthwise.dilation_w = qn.opt.depthwise.dilation_h = 2;
  qn.opt.depthwise.activation = AR_ACT_RELU6;
  qnode_run(&qn, &ar_kernel_depthwise_conv_2d);
  const int want[25] = {9, 10, 10, 8, 9, 9, 10, 10, 8, 9, 8, 8, 9, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};
  assert_u8(out, want, 25, "uint8 dilation 2 RELU6");
}
END_TEST

/* The exact tie that tells the roundings apart: acc = -12 and +12 with multiplier 0.125.
 * int8 (half up): -1.5 -> -1, 1.5 -> 2; uint8 (away from zero): -1.5 -> -2, 1.5 -> 2. */
START_TEST(qdw_rounding_ties) {
  const int32_t id[4] = {1, 1, 1, 2}, fd[4] = {1, 1, 1, 2}, od[4] = {1, 1, 1, 2};
  qnode_t qn;
  int8_t xi[2] = {-8, -8}, wi[2] = {4, -4}, oi[2];
  dw_node(&qn, AR_DTYPE_INT8, xi, id, tq1(&qn.q[0], 0.5f, -5), wi, fd, tq1(&qn.q[1], 0.25f, 0), NULL,
          NULL, oi, od, tq1(&qn.q[3], 1.0f, 0));
  qnode_run(&qn, &ar_kernel_depthwise_conv_2d);
  const int want_i[2] = {-1, 2};
  assert_i8(oi, want_i, 2, "int8 ties (half up)");
  uint8_t xu[2] = {125, 125}, wu[2] = {104, 96}, ou[2];
  dw_node(&qn, AR_DTYPE_UINT8, xu, id, tq1(&qn.q[0], 0.5f, 128), wu, fd, tq1(&qn.q[1], 0.25f, 100), NULL,
          NULL, ou, od, tq1(&qn.q[3], 1.0f, 10));
  qnode_run(&qn, &ar_kernel_depthwise_conv_2d);
  const int want_u[2] = {8, 12};
  assert_u8(ou, want_u, 2, "uint8 ties (away from zero)");
}
END_TEST

/* TFLite's two ways to form the multiplier give different Q31 multipliers for these scales:
 * float32 product (uint8 conv/depthwise, per-tensor FC) m = 1845621833, double m = 1845621851. */
START_TEST(qdw_conv_multiplier_float_product) {
  const float si = 0.007583847735077143f, sw = 0.04252425208687782f, so = 0.38424956798553467f;
  int32_t m; int sh;
  ar_quantize_multiplier(ar_quant_conv_multiplier(si, sw, so, true), &m, &sh);
  ck_assert_int_eq(m, 1845621833);
  ck_assert_int_eq(sh, -10);
  ar_quantize_multiplier(ar_quant_conv_multiplier(si, sw, so, false), &m, &sh);
  ck_assert_int_eq(m, 1845621851);
  ck_assert_int_eq(sh, -10);
}
END_TEST

START_TEST(qdw_prepare_errors) {
  const int32_t id[4] = {1, 3, 3, 2}, fd[4] = {1, 2, 2, 2}, od[4] = {1, 3, 3, 2};
  uint8_t x[18] = {0}, w[8] = {0}, out[18];
  int32_t bias[2] = {0, 0};
  char msg[AR_MSG_BYTES];
  qnode_t qn;
  /* bias scale 0.2 where input * filter scale is 0.125 (|diff| / output scale = 0.075 > 0.02) */
  dw_node(&qn, AR_DTYPE_UINT8, x, id, tq1(&qn.q[0], 0.5f, 128), w, fd, tq1(&qn.q[1], 0.25f, 100), bias,
          tq1(&qn.q[2], 0.2f, 0), out, od, tq1(&qn.q[3], 1.0f, 128));
  qn.t[2].name = "conv_dw_3/bias";
  ck_assert_int_eq(qnode_prepare(&qn, &ar_kernel_depthwise_conv_2d, msg, sizeof msg), AR_EINVAL);
  ck_assert_msg(strstr(msg, "bias (input 2) (tensor conv_dw_3/bias)") && strstr(msg, "operator 5"),
                "%s", msg);
  /* within TFLite's tolerance: accepted */
  qn.q[2].s[0] = 0.13f;
  ck_assert_int_eq(qnode_prepare(&qn, &ar_kernel_depthwise_conv_2d, msg, sizeof msg), 0);
  /* no quantization on the output */
  qn.t[3].quant = NULL;
  ck_assert_int_eq(qnode_prepare(&qn, &ar_kernel_depthwise_conv_2d, msg, sizeof msg), AR_EINVAL);
  ck_assert_msg(strstr(msg, "output 0 needs per-tensor"), "%s", msg);
  /* int8 filter with a non-zero zero point */
  int8_t xi[18] = {0}, wi[8] = {0}, oi[18];
  dw_node(&qn, AR_DTYPE_INT8, xi, id, tq1(&qn.q[0], 0.5f, 0), wi, fd, tq1(&qn.q[1], 0.25f, 3), NULL,
          NULL, oi, od, tq1(&qn.q[3], 1.0f, 0));
  ck_assert_int_eq(qnode_prepare(&qn, &ar_kernel_depthwise_conv_2d, msg, sizeof msg), AR_EINVAL);
  ck_assert_msg(strstr(msg, "symmetric"), "%s", msg);
  /* per-channel scales of the wrong count */
  const float fs[3] = {0.1f, 0.2f, 0.3f};
  dw_node(&qn, AR_DTYPE_INT8, xi, id, tq1(&qn.q[0], 0.5f, 0), wi, fd, tq(&qn.q[1], 3, fs, NULL, 3), NULL,
          NULL, oi, od, tq1(&qn.q[3], 1.0f, 0));
  ck_assert_int_eq(qnode_prepare(&qn, &ar_kernel_depthwise_conv_2d, msg, sizeof msg), AR_EINVAL);
  /* mixed dtypes: int8 input, uint8 filter */
  dw_node(&qn, AR_DTYPE_INT8, xi, id, tq1(&qn.q[0], 0.5f, 0), w, fd, tq1(&qn.q[1], 0.25f, 0), NULL,
          NULL, oi, od, tq1(&qn.q[3], 1.0f, 0));
  qn.t[1].dtype = AR_DTYPE_UINT8;
  ck_assert_int_eq(qnode_prepare(&qn, &ar_kernel_depthwise_conv_2d, msg, sizeof msg), AR_EUNSUPPORTED);
  /* TANH has no quantized form here */
  dw_node(&qn, AR_DTYPE_INT8, xi, id, tq1(&qn.q[0], 0.5f, 0), wi, fd, tq1(&qn.q[1], 0.25f, 0), NULL,
          NULL, oi, od, tq1(&qn.q[3], 1.0f, 0));
  qn.opt.depthwise.activation = AR_ACT_TANH;
  ck_assert_int_eq(qnode_prepare(&qn, &ar_kernel_depthwise_conv_2d, msg, sizeof msg), AR_EUNSUPPORTED);
}
END_TEST

/* ---------- DEPTHWISE_CONV_2D: every SIMD loop == portable loop == naive loop ---------- */

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint32_t rnd(void) {
  rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}

/* Naive TFLite depthwise, straight from the definition. */
static void naive_dw(bool s8, const uint8_t *x, const int32_t *id, int32_t zin, const uint8_t *w,
                     const int32_t *fd, int32_t zw, const int32_t *bias, const int32_t *m, const int *sh,
                     int32_t zout, int32_t lo, int32_t hi, int32_t stride, int32_t dil, bool same,
                     uint8_t *out, int32_t oh, int32_t ow) {
  const int32_t H = id[1], W = id[2], C = id[3], KH = fd[1], KW = fd[2], OC = fd[3], M = OC / C;
  int32_t pt = 0, pl = 0;
  if (same) {
    int32_t th = (oh - 1) * stride + (KH - 1) * dil + 1 - H, tw = (ow - 1) * stride + (KW - 1) * dil + 1 - W;
    pt = th > 0 ? th / 2 : 0;
    pl = tw > 0 ? tw / 2 : 0;
  }
  for (int32_t oy = 0; oy < oh; oy++)
    for (int32_t ox = 0; ox < ow; ox++)
      for (int32_t oc = 0; oc < OC; oc++) {
        int32_t acc = bias[oc];
        for (int32_t ky = 0; ky < KH; ky++)
          for (int32_t kx = 0; kx < KW; kx++) {
            int32_t iy = oy * stride - pt + ky * dil, ix = ox * stride - pl + kx * dil;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
            const uint8_t xb = x[((size_t)iy * W + ix) * C + oc / M], wb = w[((size_t)ky * KW + kx) * OC + oc];
            int32_t xv = s8 ? (int8_t)xb : xb, wv = s8 ? (int8_t)wb : wb;
            acc += (xv - zin) * (wv - zw);
          }
        int32_t v = s8 ? ar_mbqm_up(acc, m[oc], sh[oc]) : ar_mbqm(acc, m[oc], sh[oc]);
        v += zout;
        v = v < lo ? lo : v > hi ? hi : v;
        out[((size_t)oy * ow + ox) * OC + oc] = (uint8_t)v;
      }
}

START_TEST(qdw_simd_equals_portable) {
  /* pow2: power-of-two multipliers (2^-3 .. 2^-6), so that a good share of the sums are exact ties
   * of the rescale (the vector rescale's tie handling is held to ar_mbqm / ar_mbqm_up).
   * big: a small output scale, so that some channels' multipliers are >= 1 (left shifts, as in
   * MoveNet) beside channels that shift right; small weights keep most outputs unsaturated. */
  static const struct { int32_t h, w, c, m, k1, k2, stride, dil; bool same, pow2, big; } cs[] = {
    {9, 11, 16, 1, 3, 3, 1, 1, true, false, false}, {10, 9, 32, 1, 3, 3, 2, 1, true, false, false}, {7, 8, 40, 1, 3, 3, 1, 2, true, false, false},
    {8, 8, 24, 1, 5, 5, 1, 1, true, false, false}, {6, 13, 8, 1, 2, 2, 1, 1, false, false, false}, {12, 9, 3, 1, 3, 3, 1, 1, true, false, false},
    {11, 10, 64, 1, 3, 3, 2, 1, false, false, false}, {9, 9, 19, 1, 3, 3, 1, 1, true, false, false}, {14, 12, 1, 8, 10, 8, 2, 1, true, false, false},
    {7, 7, 8, 2, 3, 3, 2, 1, true, false, false}, {13, 17, 48, 1, 3, 3, 1, 1, true, false, false},
    {6, 9, 32, 1, 1, 1, 1, 1, true, true, false}, {8, 7, 40, 1, 3, 3, 1, 1, true, true, false},
    {5, 6, 16, 1, 2, 3, 2, 1, false, true, false},
    {9, 11, 40, 1, 3, 3, 1, 1, true, false, true}, {7, 6, 21, 1, 3, 3, 2, 1, true, false, true},
    {5, 4, 35, 1, 3, 3, 1, 1, true, false, true}, {3, 2, 48, 1, 3, 3, 1, 1, true, false, true},
    {2, 3, 8, 1, 3, 3, 1, 2, true, false, false}, {1, 1, 24, 1, 3, 3, 1, 1, true, false, true},
    {6, 7, 33, 1, 5, 5, 2, 1, true, false, true}, {4, 5, 144, 1, 3, 3, 1, 1, true, false, true},
    /* big enough for the thread pool to take several chunks of rows */
    {45, 33, 21, 1, 3, 3, 1, 1, true, false, false}, {61, 47, 13, 1, 3, 3, 2, 1, true, false, false},
    {40, 38, 16, 2, 3, 3, 1, 1, false, false, false},
    /* one input channel: the GEMM route (person_detect's 3x3 stride-2 stem, micro_speech's 10x8,
     * more than 16 output channels, multiplier 1, dilation, VALID, left-shift multipliers) */
    {26, 25, 1, 8, 3, 3, 2, 1, true, false, false}, {49, 40, 1, 8, 10, 8, 2, 1, true, false, false},
    {11, 13, 1, 20, 3, 3, 1, 1, true, false, false}, {9, 10, 1, 1, 3, 3, 1, 1, true, false, false},
    {12, 11, 1, 8, 3, 3, 1, 2, true, false, false}, {10, 12, 1, 6, 5, 3, 2, 1, false, false, false},
    {13, 9, 1, 16, 3, 3, 1, 1, true, true, false}, {9, 11, 1, 8, 3, 3, 2, 1, true, false, true},
    {3, 2, 1, 8, 10, 8, 1, 1, true, false, false}, {17, 15, 1, 4, 3, 3, 2, 1, true, false, false},
    {10, 11, 1, 4, 3, 5, 1, 1, true, true, false}, {13, 9, 1, 8, 3, 3, 1, 1, false, false, true},
    /* stride 1, multiplier 1, C in {2, 4, 8, 16}: 32 / C pixels per pass and, below 16 channels,
     * the rescale over 16-lane runs of a row (person_detect's 48x48x8 layer, ties, left shifts) */
    {13, 29, 8, 1, 3, 3, 1, 1, true, false, false}, {11, 17, 4, 1, 5, 5, 1, 1, true, false, false},
    {9, 23, 2, 1, 3, 3, 1, 2, true, false, false}, {10, 21, 16, 1, 3, 3, 1, 1, false, false, false},
    {12, 19, 8, 1, 3, 3, 1, 1, true, true, false}, {8, 27, 8, 1, 3, 3, 1, 1, true, false, true},
    {7, 9, 4, 1, 2, 2, 1, 1, true, true, false}, {5, 35, 16, 1, 3, 3, 1, 1, true, false, true},
  };
  int best = ar__qdw_set_isa(-1);
  for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++)
    for (int t = 0; t < 2; t++) {
      const bool s8 = t == 1;
      const ar_dtype_t dt = s8 ? AR_DTYPE_INT8 : AR_DTYPE_UINT8;
      const int32_t oc = cs[ci].c * cs[ci].m, s = cs[ci].stride, d = cs[ci].dil;
      const int32_t id[4] = {1, cs[ci].h, cs[ci].w, cs[ci].c}, fd[4] = {1, cs[ci].k1, cs[ci].k2, oc};
      int32_t oh, ow;
      if (cs[ci].same) { oh = (cs[ci].h + s - 1) / s; ow = (cs[ci].w + s - 1) / s; }
      else { oh = (cs[ci].h - (cs[ci].k1 - 1) * d - 1) / s + 1; ow = (cs[ci].w - (cs[ci].k2 - 1) * d - 1) / s + 1; }
      const int32_t od[4] = {1, oh, ow, oc};
      size_t nx = (size_t)cs[ci].h * cs[ci].w * cs[ci].c, nw = (size_t)cs[ci].k1 * cs[ci].k2 * oc,
             no = (size_t)oh * ow * oc;
      uint8_t *x = malloc(nx), *w = malloc(nw), *want = malloc(no), *got = malloc(no);
      int32_t *bias = malloc((size_t)oc * 4), *mul = malloc((size_t)oc * 4);
      int *sh = malloc((size_t)oc * sizeof(int));
      for (size_t i = 0; i < nx; i++) x[i] = (uint8_t)rnd();
      for (size_t i = 0; i < nw; i++) w[i] = (uint8_t)rnd();
      for (int32_t i = 0; i < oc; i++) bias[i] = (int32_t)(rnd() % 20001) - 10000;
      if (cs[ci].pow2 || cs[ci].big)   /* small weights and bias: outputs stay inside the type's range */
        for (size_t i = 0; i < nw; i++) w[i] = (uint8_t)(s8 ? (uint8_t)(int8_t)((int)(rnd() % 9) - 4) : 100 + rnd() % 9);
      float fs[256], bs[256];
      const bool p2 = cs[ci].pow2, big = cs[ci].big;
      const float s_in = p2 ? 0.5f : 0.02f, s_out = p2 ? 1.0f : big ? 0.0004f : s8 ? 0.5f : 0.3f;
      const int32_t zin = s8 ? (int32_t)(rnd() % 256) - 128 : (int32_t)(rnd() % 256);
      if (big)   /* inputs near the zero point: sums small enough not to saturate every output */
        for (size_t i = 0; i < nx; i++) {
          int32_t v = zin + (int32_t)(rnd() % 21) - 10, lo8 = s8 ? -128 : 0;
          v = v < lo8 ? lo8 : v > lo8 + 255 ? lo8 + 255 : v;
          x[i] = (uint8_t)v;
        }
      const int32_t zw = s8 ? 0 : p2 || big ? 104 : (int32_t)(rnd() % 200) + 28, zout = s8 ? -7 : 131;
      if (p2 || big) for (int32_t i = 0; i < oc; i++) bias[i] = (int32_t)(rnd() % 41) - 20;
      int nleft = 0;
      for (int32_t i = 0; i < oc; i++) {
        fs[i] = big ? (s8 || i == 0 ? 0.0005f * (float)(1 + rnd() % 160) : fs[0]) : p2 ? ldexpf(1.0f, -2 - (int)(s8 ? i % 4 : 1)) : s8 ? 0.001f * (float)(1 + rnd() % 50) : 0.013f;
        bs[i] = s_in * fs[i];
        double real = s8 ? (double)s_in * fs[i] / s_out : (double)(float)(s_in * fs[i]) / s_out;
        ar_quantize_multiplier(real, &mul[i], &sh[i]);
        nleft += sh[i] > 0;
      }
      if (big && s8) ck_assert_msg(nleft > 0 && nleft < oc, "case %zu: %d of %d channels shift left", ci, nleft, oc);
      const ar_activation_t act = ci % 3 == 0 ? AR_ACT_RELU6 : ci % 3 == 1 ? AR_ACT_NONE : AR_ACT_RELU;
      int32_t lo, hi;
      ck_assert_int_eq(ar_quant_activation_range(act, dt, s_out, zout, &lo, &hi), 0);
      naive_dw(s8, x, id, zin, w, fd, zw, bias, mul, sh, zout, lo, hi, s, d, cs[ci].same, want, oh, ow);
      /* one input channel: every GEMM path under the GEMM route (any isa but the forced portable loop) */
      static const ar_qgemm_path_t qpaths[] = {AR_QGEMM_PORTABLE, AR_QGEMM_AVX2, AR_QGEMM_AVX512VNNI};
      for (int run = 0; run <= best + (cs[ci].c == 1 ? 3 : 0); run++) {
        /* past the isa runs: the GEMM route through kernels/qgemm.h on each path it can force (the
         * AVX2 loop forced, else automatic; with AVX-512 VNNI, isa 2 runs the route's own kernel) */
        const int isa = run <= best ? run : best >= 1 ? 1 : -1;
        const ar_qgemm_path_t qp = run <= best ? AR_QGEMM_AUTO : qpaths[run - best - 1];
        if (!ar_qgemm_path_supported(qp)) continue;
        ar_qgemm_force_path(qp);
        ck_assert_int_eq(ar__qdw_set_isa(isa), isa < 0 ? best : isa);
        qnode_t qn;
        dw_node(&qn, dt, x, id, tq1(&qn.q[0], s_in, zin), w, fd,
                s8 ? tq(&qn.q[1], oc, fs, NULL, 3) : tq1(&qn.q[1], fs[0], zw), bias,
                s8 ? tq(&qn.q[2], oc, bs, NULL, 0) : tq1(&qn.q[2], bs[0], 0), got, od,
                tq1(&qn.q[3], s_out, zout));
        qn.opt.depthwise.stride_w = qn.opt.depthwise.stride_h = s;
        qn.opt.depthwise.dilation_w = qn.opt.depthwise.dilation_h = d;
        qn.opt.depthwise.padding = cs[ci].same ? AR_PADDING_SAME : AR_PADDING_VALID;
        qn.opt.depthwise.activation = act;
        memset(got, 0xcc, no);
        qnode_run(&qn, &ar_kernel_depthwise_conv_2d);
        for (size_t i = 0; i < no; i++)
          ck_assert_msg(got[i] == want[i], "case %zu %s isa %d gemm %s: element %zu is %d, want %d", ci,
                        s8 ? "int8" : "uint8", isa, ar_qgemm_path_name(qp), i, (int)got[i], (int)want[i]);
      }
      ar_qgemm_force_path(AR_QGEMM_AUTO);
      ar__qdw_set_isa(-1);
      free(x); free(w); free(want); free(got); free(bias); free(mul); free(sh);
    }
}
END_TEST

/* ---------- AVERAGE_POOL_2D / MAX_POOL_2D ---------- */

static void pool_node(qnode_t *qn, ar_op_t op, ar_dtype_t dt, void *in, const int32_t *id, void *out,
                      const int32_t *od, float scale, int64_t zp, int32_t f, int32_t s, ar_padding_t pad,
                      ar_activation_t act) {
  qnode_clear(qn);
  tv(&qn->t[0], in, dt, 4, id, false, tq1(&qn->q[0], scale, zp));
  tv(&qn->t[3], out, dt, 4, od, false, tq1(&qn->q[3], scale, zp));
  qnode_base(qn, op, 1);
  qn->opt.pool2d.padding = pad;
  qn->opt.pool2d.stride_w = qn->opt.pool2d.stride_h = s;
  qn->opt.pool2d.filter_w = qn->opt.pool2d.filter_h = f;
  qn->opt.pool2d.activation = act;
}

/* uint8 2x2 stride 2 SAME on 3x3: windows of 4, 2, 2, 1 in-bounds taps (the padding is not counted):
 * (1+2+4+5+2)/4 = 3, (3+7+1)/2 = 5, (9+10+1)/2 = 10 (9.5 rounds up), 200; with RELU6 at scale 0.1,
 * zero point 5: clamp [5, 65]. */
START_TEST(qpool_avg_u8_count_and_round) {
  uint8_t x[9] = {1, 2, 3, 4, 5, 7, 9, 10, 200}, out[4];
  const int32_t id[4] = {1, 3, 3, 1}, od[4] = {1, 2, 2, 1};
  qnode_t qn;
  pool_node(&qn, AR_OP_AVERAGE_POOL_2D, AR_DTYPE_UINT8, x, id, out, od, 0.1f, 5, 2, 2, AR_PADDING_SAME, AR_ACT_NONE);
  qnode_run(&qn, &ar_kernel_average_pool_2d);
  const int want[4] = {3, 5, 10, 200};
  assert_u8(out, want, 4, "uint8 avg");
  qn.opt.pool2d.activation = AR_ACT_RELU6;
  qnode_run(&qn, &ar_kernel_average_pool_2d);
  const int want6[4] = {5, 5, 10, 65};
  assert_u8(out, want6, 4, "uint8 avg RELU6");
}
END_TEST

/* int8 rounds half away from zero: sums -10, 6, -6 over 4 taps -> -3, 2, -2 (uint8's (sum + 2) / 4
 * would give -2 and -1 for the negative ones). */
START_TEST(qpool_avg_i8_ties) {
  int8_t x[12] = {-3, 1, -1, -3, 2, -2, -2, 1, -1, -2, 2, -2}, out[3];
  const int32_t id[4] = {1, 2, 2, 3}, od[4] = {1, 1, 1, 3};
  qnode_t qn;
  pool_node(&qn, AR_OP_AVERAGE_POOL_2D, AR_DTYPE_INT8, x, id, out, od, 1.0f, 0, 2, 1, AR_PADDING_VALID, AR_ACT_NONE);
  qnode_run(&qn, &ar_kernel_average_pool_2d);
  const int want[3] = {-3, 2, -2};
  assert_i8(out, want, 3, "int8 avg ties");
}
END_TEST

/* int8 3x3 stride 1 SAME max over in-bounds taps, RELU at scale 0.5 / zero point -10 -> >= -10. */
START_TEST(qpool_max_i8_same_relu) {
  int8_t x[18] = {-128, 5, -50, -5, -20, 8, -100, -8, -128, 1, -5, -100, -90, 3, -70, -3, -60, 0};
  int8_t out[18];
  const int32_t id[4] = {1, 3, 3, 2}, od[4] = {1, 3, 3, 2};
  qnode_t qn;
  pool_node(&qn, AR_OP_MAX_POOL_2D, AR_DTYPE_INT8, x, id, out, od, 0.5f, -10, 3, 1, AR_PADDING_SAME, AR_ACT_RELU);
  qnode_run(&qn, &ar_kernel_max_pool_2d);
  const int want[18] = {-10, 5, -5, 8, -5, 8, -10, 5, -5, 8, -5, 8, -10, 3, -5, 3, -5, 1};
  assert_i8(out, want, 18, "int8 max");
  uint8_t xu[4] = {10, 250, 3, 7}, ou[1];
  const int32_t idu[4] = {1, 2, 2, 1}, odu[4] = {1, 1, 1, 1};
  pool_node(&qn, AR_OP_MAX_POOL_2D, AR_DTYPE_UINT8, xu, idu, ou, odu, 0.1f, 0, 2, 1, AR_PADDING_VALID, AR_ACT_RELU6);
  qnode_run(&qn, &ar_kernel_max_pool_2d);
  const int wantu[1] = {60};
  assert_u8(ou, wantu, 1, "uint8 max RELU6");
}
END_TEST

/* Shapes big enough for the pool to take several chunks of rows: each thread count gives the bytes
 * of one thread (qnode_run), which the hand-computed cases above pin. */
START_TEST(qpool_threads_same_bytes) {
  static const struct { int32_t b, h, w, c, f, s; ar_padding_t pad; } cs[] = {
    {1, 61, 47, 13, 3, 1, AR_PADDING_SAME}, {2, 40, 33, 7, 2, 2, AR_PADDING_VALID},
    {1, 37, 29, 24, 5, 2, AR_PADDING_SAME},
  };
  for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++)
    for (int t = 0; t < 4; t++) {
      const ar_dtype_t dt = t & 1 ? AR_DTYPE_INT8 : AR_DTYPE_UINT8;
      const ar_op_t op = t & 2 ? AR_OP_MAX_POOL_2D : AR_OP_AVERAGE_POOL_2D;
      const int32_t s = cs[ci].s, f = cs[ci].f;
      const int32_t oh = cs[ci].pad == AR_PADDING_SAME ? (cs[ci].h + s - 1) / s : (cs[ci].h - f) / s + 1;
      const int32_t ow = cs[ci].pad == AR_PADDING_SAME ? (cs[ci].w + s - 1) / s : (cs[ci].w - f) / s + 1;
      const int32_t id[4] = {cs[ci].b, cs[ci].h, cs[ci].w, cs[ci].c}, od[4] = {cs[ci].b, oh, ow, cs[ci].c};
      const size_t nx = (size_t)id[0] * id[1] * id[2] * id[3], no = (size_t)od[0] * oh * ow * od[3];
      uint8_t *x = malloc(nx), *out = malloc(no);
      for (size_t i = 0; i < nx; i++) x[i] = (uint8_t)rnd();
      qnode_t qn;
      pool_node(&qn, op, dt, x, id, out, od, 0.05f, dt == AR_DTYPE_INT8 ? -3 : 120, f, s, cs[ci].pad,
                ci == 1 ? AR_ACT_RELU6 : AR_ACT_NONE);
      qnode_run(&qn, op == AR_OP_MAX_POOL_2D ? &ar_kernel_max_pool_2d : &ar_kernel_average_pool_2d);
      free(x); free(out);
    }
}
END_TEST

START_TEST(qpool_prepare_errors) {
  uint8_t x[9] = {0}, out[4];
  const int32_t id[4] = {1, 3, 3, 1}, od[4] = {1, 2, 2, 1};
  char msg[AR_MSG_BYTES];
  qnode_t qn;
  pool_node(&qn, AR_OP_AVERAGE_POOL_2D, AR_DTYPE_UINT8, x, id, out, od, 0.1f, 5, 2, 2, AR_PADDING_SAME, AR_ACT_NONE);
  qn.q[3].s[0] = 0.2f;
  ck_assert_int_eq(qnode_prepare(&qn, &ar_kernel_average_pool_2d, msg, sizeof msg), AR_EINVAL);
  ck_assert_msg(strstr(msg, "output 0 quantization"), "%s", msg);
  pool_node(&qn, AR_OP_MAX_POOL_2D, AR_DTYPE_UINT8, x, id, out, od, 0.1f, 5, 2, 2, AR_PADDING_SAME, AR_ACT_NONE);
  qn.t[3].dtype = AR_DTYPE_INT8;
  ck_assert_int_eq(qnode_prepare(&qn, &ar_kernel_max_pool_2d, msg, sizeof msg), AR_EUNSUPPORTED);
}
END_TEST

/* ---------- MEAN ---------- */

static void mean_node(qnode_t *qn, ar_dtype_t dt, void *in, const int32_t *id, const ar_quant_t *qi,
                      int32_t *axes, int32_t n_axes, void *out, const int32_t *od, const ar_quant_t *qo,
                      bool keep) {
  qnode_clear(qn);
  tv(&qn->t[0], in, dt, 4, id, false, qi);
  tv(&qn->t[1], axes, AR_DTYPE_INT32, 1, &n_axes, true, NULL);
  tv(&qn->t[3], out, dt, 4, od, false, qo);
  qnode_base(qn, AR_OP_MEAN, 2);
  qn->opt.reducer.keep_dims = keep;
}

/* int8 [1,2,2,17], s_in = s_out = 0.5, z_in = -3, z_out = 5: multiplier 1/4 (2^30, -1), bias
 * 5 - round(-3) = 8. Channel sums -6, 6, -2, -3, 3, 0, 100, -100, 508, -512, 7, -7, 1, -1, 2, 5 (the
 * first 16: TFLite's vector block, half up) and -6 (the 17th: scalar tail, away from zero):
 * -6/4 = -1.5 -> -1 (block) but -2 (tail); -2/4 -> 0; -3/4 -> 0 (the double half-up rounding). */
START_TEST(qmean_i8_block_and_tail) {
  static const int8_t x[68] = {
    -1, 1, 0, 0, 0, 0, 25, -25, 127, -128, 1, -1, 0, 0, 0, 1, -1,
    -1, 1, 0, 0, 0, 0, 25, -25, 127, -128, 1, -1, 0, 0, 0, 1, -1,
    -1, 1, 0, 0, 0, 0, 25, -25, 127, -128, 1, -1, 0, 0, 0, 1, -1,
    -3, 3, -2, -3, 3, 0, 25, -25, 127, -128, 4, -4, 1, -1, 2, 2, -3};
  int8_t out[17];
  int32_t axes[2] = {1, 2};
  const int32_t id[4] = {1, 2, 2, 17}, od[4] = {1, 1, 1, 17};
  qnode_t qn;
  mean_node(&qn, AR_DTYPE_INT8, (void *)x, id, tq1(&qn.q[0], 0.5f, -3), axes, 2, out, od,
            tq1(&qn.q[3], 0.5f, 5), true);
  qnode_run(&qn, &ar_kernel_mean);
  const int want[17] = {7, 10, 8, 8, 9, 8, 33, -17, 127, -120, 10, 7, 9, 8, 9, 10, 6};
  assert_i8(out, want, 17, "int8 MEAN");
}
END_TEST

/* uint8 [1,3,3,2], s_in 0.1, z_in 128, s_out 0.05, z_out 100: multiplier float(0.1/(9*0.05)),
 * bias 100 - round(128*0.1/0.05) = -156; sums 1133 and 1170 -> 96, 124. */
START_TEST(qmean_u8_hw) {
  uint8_t x[18], out[2];
  for (int i = 0; i < 18; i++) x[i] = (uint8_t)((i * 71 + 13) % 256);
  int32_t axes[2] = {2, 1};
  const int32_t id[4] = {1, 3, 3, 2}, od[4] = {1, 1, 1, 2};
  qnode_t qn;
  mean_node(&qn, AR_DTYPE_UINT8, x, id, tq1(&qn.q[0], 0.1f, 128), axes, 2, out, od,
            tq1(&qn.q[3], 0.05f, 100), true);
  qnode_run(&qn, &ar_kernel_mean);
  const int want[2] = {96, 124};
  assert_u8(out, want, 2, "uint8 MEAN");
}
END_TEST

/* int8 [1,16,16,404], even codes in [-6, 6], s_in 0.5, s_out 1/32, zero points 0: multiplier
 * 0.5 / (256 / 32) = 1/16 exactly (2^30 with a right shift of 3: the doubling high half of an even
 * sum halves it exactly, so only the shift rounds) and bias 0, so channel c is its code sum / 16
 * rounded half up for the 400 channels of whole 16-blocks and away from zero for the last 4. 404
 * channels cross the kernel's 128-channel accumulator blocks, and qnode_run compares 1, 2 and 3
 * threads (the channels split by thread count). */
START_TEST(qmean_i8_wide_threads) {
  enum { HW = 256, C = 404 };
  int8_t *x = malloc((size_t)HW * C), out[C];
  int32_t sum[C] = {0};
  for (int i = 0; i < HW; i++)
    for (int c = 0; c < C; c++) {
      x[i * C + c] = (int8_t)(2 * ((int)(rnd() % 7u) - 3));
      sum[c] += x[i * C + c];
    }
  int32_t axes[2] = {1, 2};
  const int32_t id[4] = {1, 16, 16, C}, od[4] = {1, 1, 1, C};
  qnode_t qn;
  mean_node(&qn, AR_DTYPE_INT8, x, id, tq1(&qn.q[0], 0.5f, 0), axes, 2, out, od,
            tq1(&qn.q[3], 1.0f / 32.0f, 0), true);
  qnode_run(&qn, &ar_kernel_mean);
  int want[C];
  for (int c = 0; c < C; c++) {
    const int32_t q = sum[c] >= 0 ? sum[c] / 16 : -(-sum[c] / 16), r = sum[c] - q * 16;   /* truncated */
    int32_t v = q;
    if (c < 400) { if (2 * r >= 16) v++; else if (2 * r < -16) v--; }          /* half up */
    else { if (2 * r >= 16) v++; else if (2 * r <= -16) v--; }                 /* away from zero */
    want[c] = v < -128 ? -128 : v > 127 ? 127 : v;
  }
  assert_i8(out, want, C, "int8 MEAN over 404 channels");
  free(x);
}
END_TEST

START_TEST(qmean_prepare_errors) {
  int8_t x[12] = {0}, out[6];
  int32_t axes[2] = {1, 2};
  char msg[AR_MSG_BYTES];
  const int32_t id[4] = {1, 2, 2, 3}, od1[4] = {1, 1, 2, 3};
  qnode_t qn;
  /* Other axes and no keep_dims run TFLite's reference integer mean since issue 28 (they were
   * refused; tests/golden/ops mean_*_native check the values). */
  mean_node(&qn, AR_DTYPE_INT8, x, id, tq1(&qn.q[0], 0.5f, 0), axes, 1, out, od1, tq1(&qn.q[3], 0.5f, 0), true);
  ck_assert_int_eq(qnode_prepare(&qn, &ar_kernel_mean, msg, sizeof msg), 0);
  const int32_t od2[4] = {1, 3, 1, 1};   /* the view builder reads four dims; rank 2 is set below */
  mean_node(&qn, AR_DTYPE_INT8, x, id, tq1(&qn.q[0], 0.5f, 0), axes, 2, out, od2, tq1(&qn.q[3], 0.5f, 0), false);
  qn.t[3].rank = 2;
  ck_assert_int_eq(qnode_prepare(&qn, &ar_kernel_mean, msg, sizeof msg), 0);
  const int32_t od3[4] = {1, 1, 1, 3};
  mean_node(&qn, AR_DTYPE_INT8, x, id, NULL, axes, 2, out, od3, tq1(&qn.q[3], 0.5f, 0), true);
  ck_assert_int_eq(qnode_prepare(&qn, &ar_kernel_mean, msg, sizeof msg), AR_EINVAL);
}
END_TEST

static Suite *quant_dw_suite(void) {
  Suite *s = suite_create("kernels_quant_dw");
  TCase *tc = tcase_create("depthwise");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, qdw_u8_same_weight_zp);
  tcase_add_test(tc, qdw_i8_per_channel_mult2_stride2);
  tcase_add_test(tc, qdw_u8_dilation2_relu6);
  tcase_add_test(tc, qdw_rounding_ties);
  tcase_add_test(tc, qdw_conv_multiplier_float_product);
  tcase_add_test(tc, qdw_prepare_errors);
  tcase_add_test(tc, qdw_simd_equals_portable);
  suite_add_tcase(s, tc);
  tc = tcase_create("pool");
  tcase_add_test(tc, qpool_avg_u8_count_and_round);
  tcase_add_test(tc, qpool_avg_i8_ties);
  tcase_add_test(tc, qpool_max_i8_same_relu);
  tcase_add_test(tc, qpool_prepare_errors);
  tcase_add_test(tc, qpool_threads_same_bytes);
  suite_add_tcase(s, tc);
  tc = tcase_create("mean");
  tcase_add_test(tc, qmean_i8_block_and_tail);
  tcase_add_test(tc, qmean_u8_hw);
  tcase_add_test(tc, qmean_i8_wide_threads);
  tcase_add_test(tc, qmean_prepare_errors);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(quant_dw_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
