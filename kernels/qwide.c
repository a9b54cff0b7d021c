/* qwide.c - int16x8 and hybrid (dynamic-range) CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED, the
 * arithmetic of TFLite's builtin kernels (kernels/qwide.h). Plain C loops, one thread: the reference
 * form, whose integers and float operations any faster path must reproduce bit for bit.
 *
 * State (init): int16x8 only, the per-channel Q31 multipliers and shifts [O] each.
 * Scratch (hybrid only): [ scale float[B] | zero point int32[B] | quantized input int8[B * size] ],
 * B = batches (N for the convolutions, rows for FULLY_CONNECTED).
 */
#include "kernels/qwide.h"

#include <math.h>
#include <string.h>

#include "common/ar_error.h"
#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_quant.h"
#include "kernels/conv_util.h"

bool ar__qw_takes(const ar_node_t *node) {
  if (node->op != AR_OP_CONV_2D && node->op != AR_OP_DEPTHWISE_CONV_2D &&
      node->op != AR_OP_FULLY_CONNECTED)
    return false;
  const ar_tview_t *in = node->n_inputs > 0 ? node->inputs[0] : NULL;
  const ar_tview_t *w = node->n_inputs > 1 ? node->inputs[1] : NULL;
  if (!in) return false;
  return in->dtype == AR_DTYPE_INT16 || (in->dtype == AR_DTYPE_FLOAT32 && w && w->dtype == AR_DTYPE_INT8);
}

static bool qw_hybrid(const ar_node_t *node) { return node->inputs[0]->dtype == AR_DTYPE_FLOAT32; }

/* The weights' output-channel axis and count. */
static int32_t qw_axis(const ar_node_t *node) { return node->op == AR_OP_DEPTHWISE_CONV_2D ? 3 : 0; }
static int32_t qw_channels(const ar_node_t *node) {
  const ar_tview_t *w = node->inputs[1];
  return w->dims[qw_axis(node)];
}

static const char *qw_wname(const ar_node_t *node) {
  return node->op == AR_OP_FULLY_CONNECTED ? "weights" : "filter";
}

/* Weight scale of output channel c (per-tensor: the one scale). */
static float qw_wscale(const ar_tview_t *w, int32_t c) { return w->quant->scale[w->quant->n > 1 ? c : 0]; }

/* Whether the weights have more than one distinct scale. */
static bool qw_scales_differ(const ar_tview_t *w) {
  for (int32_t i = 1; i < w->quant->n; i++)
    if (w->quant->scale[i] != w->quant->scale[0]) return true;
  return false;
}

static ar_activation_t qw_activation(const ar_node_t *node) {
  switch (node->op) {
  case AR_OP_CONV_2D: return node->options->conv2d.activation;
  case AR_OP_DEPTHWISE_CONV_2D: return node->options->depthwise.activation;
  default: return node->options->fully_connected.activation;
  }
}

int ar__qw_check_io(const ar_node_t *node, char *msg, size_t msg_bytes) {
  const char *wn = qw_wname(node);
  if (node->n_inputs < 2 || node->n_inputs > 3 || node->n_outputs != 1 || !node->inputs[0] ||
      !node->inputs[1] || !node->outputs[0] || !node->options)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "needs inputs (input, %s[, bias]) and one "
                    "output, got %d inputs and %d outputs", wn, node->n_inputs, node->n_outputs);
  const ar_tview_t *in = node->inputs[0], *w = node->inputs[1], *out = node->outputs[0];
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  const bool hybrid = qw_hybrid(node);
  const ar_dtype_t want_out = hybrid ? AR_DTYPE_FLOAT32 : AR_DTYPE_INT16;
  const ar_dtype_t want_bias = hybrid ? AR_DTYPE_FLOAT32 : AR_DTYPE_INT64;
  if (w->dtype != AR_DTYPE_INT8 || out->dtype != want_out || (bias && bias->dtype != want_bias))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s form needs INT8 %s, %s output and "
                    "%s bias (input %s, %s %s, output %s, bias %s)",
                    hybrid ? "hybrid (float input, int8 weights)" : "int16x8", wn,
                    ar_dtype_name(want_out), ar_dtype_name(want_bias), ar_dtype_name(in->dtype), wn,
                    ar_dtype_name(w->dtype), ar_dtype_name(out->dtype),
                    bias ? ar_dtype_name(bias->dtype) : "none");
  if (w->rank < 1 || (node->op == AR_OP_DEPTHWISE_CONV_2D && w->rank != 4))
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "%s has rank %d", wn, (int)w->rank);
  if (!w->quant || w->quant->n < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "%s (INT8) has no quantization parameters", wn);
  const int32_t axis = qw_axis(node), co = w->dims[axis];
  if (w->quant->n != 1 && (w->quant->n != co || w->quant->quantized_dimension != axis))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s has %d scales on axis %d; expected 1 "
                    "or one per output channel (%d) on axis %d", wn, (int)w->quant->n,
                    (int)w->quant->quantized_dimension, (int)co, (int)axis);
  for (int32_t c = 0; c < w->quant->n; c++)
    if (w->quant->zero_point[c] != 0)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s zero point %lld (channel %d) is "
                      "not 0 (TFLite's %s kernels take symmetric weights)", wn,
                      (long long)w->quant->zero_point[c], (int)c, hybrid ? "hybrid" : "int16x8");
  if (hybrid) return 0;
  const ar_tview_t *need[2] = {in, out};
  const char *names[2] = {"input 0", "output 0"};
  for (int i = 0; i < 2; i++) {
    const ar_quant_t *q = need[i]->quant;
    if (!q || q->n < 1)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "%s (INT16) has no quantization parameters",
                      names[i]);
    if (q->n != 1)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s must be quantized per tensor (it "
                      "has %d scales)", names[i], (int)q->n);
    if (q->zero_point[0] != 0)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s (INT16) zero point %lld is not 0 "
                      "(int16 activations are symmetric)", names[i], (long long)q->zero_point[0]);
  }
  return 0;
}

/* ---------------- geometry ---------------- */

typedef struct {
  int32_t n, h, w, ci, co, kh, kw, oh, ow, sh, sw, dh, dw, pt, pl, mult;
} qw_geom_t;

static void qw_geometry(const ar_node_t *node, qw_geom_t *g) {
  const ar_tview_t *in = node->inputs[0], *f = node->inputs[1];
  memset(g, 0, sizeof *g);
  if (node->op == AR_OP_FULLY_CONNECTED) {
    g->ci = f->dims[1];
    g->co = f->dims[0];
    g->n = (int32_t)(ar_k_elements(in) / (g->ci > 0 ? g->ci : 1));
    return;
  }
  ar_padding_t pad;
  if (node->op == AR_OP_CONV_2D) {
    const ar_conv2d_options_t *o = &node->options->conv2d;
    pad = o->padding;
    g->sh = o->stride_h; g->sw = o->stride_w; g->dh = o->dilation_h; g->dw = o->dilation_w;
    g->co = f->dims[0];
    g->mult = 1;
  } else {
    const ar_depthwise_options_t *o = &node->options->depthwise;
    pad = o->padding;
    g->sh = o->stride_h; g->sw = o->stride_w; g->dh = o->dilation_h; g->dw = o->dilation_w;
    g->co = f->dims[3];
    g->mult = in->dims[3] > 0 ? f->dims[3] / in->dims[3] : 1;
  }
  g->n = in->dims[0]; g->h = in->dims[1]; g->w = in->dims[2]; g->ci = in->dims[3];
  g->kh = f->dims[1]; g->kw = f->dims[2];
  g->oh = ar_compute_padding(pad, g->h, g->kh, g->sh, g->dh, &g->pt);
  g->ow = ar_compute_padding(pad, g->w, g->kw, g->sw, g->dw, &g->pl);
}

/* ---------------- prepare / init ---------------- */

static uint64_t qw_align(uint64_t x) { return (x + 63u) & ~(uint64_t)63u; }

/* Hybrid scratch: offsets of the zero points and the quantized input. */
static void qw_scratch_layout(const qw_geom_t *g, int64_t in_elems, uint64_t *off_zp, uint64_t *off_q,
                              uint64_t *total) {
  *off_zp = qw_align((uint64_t)g->n * sizeof(float));
  *off_q = *off_zp + qw_align((uint64_t)g->n * sizeof(int32_t));
  *total = *off_q + (uint64_t)in_elems;
}

int ar__qw_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0], *out = node->outputs[0], *w = node->inputs[1];
  const ar_activation_t act = qw_activation(node);
  qw_geom_t g;
  qw_geometry(node, &g);
  if (node->op == AR_OP_DEPTHWISE_CONV_2D && node->folded_pad[0] | node->folded_pad[1] |
      node->folded_pad[2] | node->folded_pad[3])
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "a folded PAD on a quantized depthwise");
  if (qw_hybrid(node)) {
    if (act != AR_ACT_NONE && act != AR_ACT_RELU && act != AR_ACT_RELU6 && act != AR_ACT_RELU_N1_TO_1)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "fused activation %d is not supported "
                      "in the hybrid form", (int)act);
    uint64_t off_zp, off_q, total;
    qw_scratch_layout(&g, ar_k_elements(in), &off_zp, &off_q, &total);
    node->scratch_bytes = total;
    node->state_bytes = 0;
    return 0;
  }
  int32_t lo, hi;
  if (ar_quant_activation_range(act, AR_DTYPE_INT16, out->quant->scale[0], 0, &lo, &hi) != 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "fused activation %d is not supported "
                    "on INT16 outputs", (int)act);
  /* The int64 rescale shifts right by 15 - shift: shift <= 14 (TFLite asserts <= 7 in debug builds
   * only and computes the same above it). */
  for (int32_t c = 0; c < g.co; c++) {
    int32_t m;
    int sh;
    const bool per_tensor_fc = node->op == AR_OP_FULLY_CONNECTED && w->quant->n == 1;
    ar_quantize_multiplier(ar_quant_conv_multiplier(in->quant->scale[0], qw_wscale(w, c),
                                                    out->quant->scale[0], per_tensor_fc),
                           &m, &sh);
    if (sh > 14)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "output rescale of channel %d is too "
                      "large (input scale x %s scale / output scale >= 2^14)", (int)c, qw_wname(node));
  }
  node->scratch_bytes = 0;
  node->state_bytes = 2u * (uint64_t)g.co * sizeof(int32_t);
  return 0;
}

void ar__qw_init(ar_node_t *node) {
  if (qw_hybrid(node)) return;
  const ar_tview_t *in = node->inputs[0], *out = node->outputs[0], *w = node->inputs[1];
  const int32_t co = qw_channels(node);
  int32_t *mult = node->state, *shift = mult + co;
  /* FULLY_CONNECTED with one weight scale forms s_in * s_w in float32 (GetQuantizedConvolution-
   * Multipler); the per-channel forms in double (kernels/ar_quant.h). */
  const bool float_product = node->op == AR_OP_FULLY_CONNECTED && w->quant->n == 1;
  for (int32_t c = 0; c < co; c++) {
    int sh = 0;
    ar_quantize_multiplier(ar_quant_conv_multiplier(in->quant->scale[0], qw_wscale(w, c),
                                                    out->quant->scale[0], float_product),
                           &mult[c], &sh);
    shift[c] = sh;
  }
}

/* ---------------- input quantization (hybrid) ---------------- */

float ar__qw_quantize_symmetric(const float *x, int64_t n, int8_t *q) {
  float mn = n > 0 ? x[0] : 0.0f, mx = mn;
  for (int64_t i = 1; i < n; i++) {
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
  }
  const float r = fmaxf(fabsf(mn), fabsf(mx));
  if (r == 0.0f) {
    memset(q, 0, (size_t)n);
    return 1.0f;
  }
  const float inv = 127.0f / r;
  for (int64_t i = 0; i < n; i++) {
    int32_t v = (int32_t)roundf(x[i] * inv);
    q[i] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v);
  }
  return r / 127.0f;
}

float ar__qw_quantize_asymmetric(const float *x, int64_t n, int8_t *q, int32_t *zp) {
  float mn = n > 0 ? x[0] : 0.0f, mx = mn;
  for (int64_t i = 1; i < n; i++) {
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
  }
  const double rmin = mn < 0.0f ? (double)mn : 0.0, rmax = mx > 0.0f ? (double)mx : 0.0;
  if (rmin == rmax) {
    memset(q, 0, (size_t)n);
    *zp = 0;
    return 1.0f;
  }
  const double qmin = -128.0, qmax = 127.0;
  const double scale = (rmax - rmin) / (qmax - qmin);
  const double zp_from_min = qmin - rmin / scale, zp_from_max = qmax - rmax / scale;
  const double err_min = fabs(qmin) + fabs(rmin / scale), err_max = fabs(qmax) + fabs(rmax / scale);
  const double zpd = err_min < err_max ? zp_from_min : zp_from_max;
  int32_t z;
  if (zpd <= qmin) z = -128;
  else if (zpd >= qmax) z = 127;
  else z = (int32_t)(int8_t)round(zpd);
  const float s = (float)scale;
  const float inv = (float)(1.0 / (double)s);
  for (int64_t i = 0; i < n; i++) {
    /* round(x * inv) + zp: a tie rounds away from zero before the zero point is added, which is
     * what native TFLite 2.19 gives (tools/ops/cases/qwide.py fc_hyb_2x5_3_zero_row: x = 0.5 with
     * x * inv = 42.5 and zp -43 is 0, where round(zp + x * inv) would be -1) */
    int32_t v = (int32_t)roundf(x[i] * inv) + z;
    q[i] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
  }
  *zp = z;
  return s;
}

/* ---------------- int16x8 ---------------- */

static void qw16_clamp_store(int16_t *o, int32_t v, int32_t lo, int32_t hi) {
  v = v < lo ? lo : v;
  v = v > hi ? hi : v;
  *o = (int16_t)v;
}

static void qw16_eval(const ar_node_t *node) {
  const ar_tview_t *out_t = node->outputs[0];
  const int16_t *in = node->inputs[0]->data;
  const int8_t *f = node->inputs[1]->data;
  const int64_t *bias = node->n_inputs > 2 && node->inputs[2] ? node->inputs[2]->data : NULL;
  int16_t *out = out_t->data;
  qw_geom_t g;
  qw_geometry(node, &g);
  const int32_t *mult = node->state, *shift = mult + g.co;
  int32_t lo, hi;
  ar_quant_activation_range(qw_activation(node), AR_DTYPE_INT16, out_t->quant->scale[0], 0, &lo, &hi);
  if (node->op == AR_OP_FULLY_CONNECTED) {
    for (int32_t b = 0; b < g.n; b++)
      for (int32_t o = 0; o < g.co; o++) {
        int64_t acc = 0;
        const int16_t *x = in + (size_t)b * g.ci;
        const int8_t *wr = f + (size_t)o * g.ci;
        for (int32_t k = 0; k < g.ci; k++) acc += (int64_t)((int32_t)wr[k] * (int32_t)x[k]);
        if (bias) acc += bias[o];
        qw16_clamp_store(out + (size_t)b * g.co + o, ar_mbqm64(acc, mult[o], shift[o]), lo, hi);
      }
    return;
  }
  const bool dw = node->op == AR_OP_DEPTHWISE_CONV_2D;
  for (int32_t b = 0; b < g.n; b++)
    for (int32_t oy = 0; oy < g.oh; oy++)
      for (int32_t ox = 0; ox < g.ow; ox++) {
        const int32_t iy0 = oy * g.sh - g.pt, ix0 = ox * g.sw - g.pl;
        int16_t *o = out + (((size_t)b * g.oh + oy) * g.ow + ox) * g.co;
        for (int32_t c = 0; c < g.co; c++) {
          int64_t acc = 0;
          for (int32_t ky = 0; ky < g.kh; ky++) {
            const int32_t iy = iy0 + ky * g.dh;
            if (iy < 0 || iy >= g.h) continue;
            for (int32_t kx = 0; kx < g.kw; kx++) {
              const int32_t ix = ix0 + kx * g.dw;
              if (ix < 0 || ix >= g.w) continue;
              const int16_t *x = in + (((size_t)b * g.h + iy) * g.w + ix) * g.ci;
              if (dw) {
                acc += (int64_t)((int32_t)f[((size_t)ky * g.kw + kx) * g.co + c] *
                                 (int32_t)x[c / g.mult]);
              } else {
                const int8_t *wr = f + (((size_t)c * g.kh + ky) * g.kw + kx) * g.ci;
                for (int32_t i = 0; i < g.ci; i++) acc += (int64_t)((int32_t)wr[i] * (int32_t)x[i]);
              }
            }
          }
          if (bias) acc += bias[c];
          qw16_clamp_store(o + c, ar_mbqm64(acc, mult[c], shift[c]), lo, hi);
        }
      }
}

/* ---------------- hybrid ---------------- */

static void qw_float_range(ar_activation_t act, float *lo, float *hi) {
  *lo = -INFINITY;
  *hi = INFINITY;
  if (act == AR_ACT_RELU) *lo = 0.0f;
  else if (act == AR_ACT_RELU6) { *lo = 0.0f; *hi = 6.0f; }
  else if (act == AR_ACT_RELU_N1_TO_1) { *lo = -1.0f; *hi = 1.0f; }
}

static float qw_clampf(float v, float lo, float hi) {
  v = v < lo ? lo : v;   /* std::max(v, lo) keeps v when it is NaN */
  return v > hi ? hi : v;
}

static void qwh_eval(const ar_node_t *node) {
  const ar_tview_t *in_t = node->inputs[0], *w_t = node->inputs[1];
  const float *in = in_t->data;
  const int8_t *f = w_t->data;
  const float *bias = node->n_inputs > 2 && node->inputs[2] ? node->inputs[2]->data : NULL;
  float *out = node->outputs[0]->data;
  qw_geom_t g;
  qw_geometry(node, &g);
  const int64_t in_elems = ar_k_elements(in_t), size = g.n > 0 ? in_elems / g.n : 0;
  uint64_t off_zp, off_q, total;
  qw_scratch_layout(&g, in_elems, &off_zp, &off_q, &total);
  float *sf = node->scratch;
  int32_t *zp = (int32_t *)(void *)((uint8_t *)node->scratch + off_zp);
  int8_t *q = (int8_t *)node->scratch + off_q;
  float lo, hi;
  qw_float_range(qw_activation(node), &lo, &hi);
  const ar_quant_t *wq = w_t->quant;
  const bool per_channel = node->op == AR_OP_FULLY_CONNECTED ? wq->n > 1 : qw_scales_differ(w_t);
  bool asym;
  switch (node->op) {
  case AR_OP_CONV_2D: asym = per_channel; break;
  case AR_OP_DEPTHWISE_CONV_2D: asym = true; break;
  default: asym = node->options->fully_connected.asymmetric_quantize_inputs; break;
  }
  for (int32_t b = 0; b < g.n; b++) {
    if (asym) sf[b] = ar__qw_quantize_asymmetric(in + (size_t)b * size, size, q + (size_t)b * size, &zp[b]);
    else { sf[b] = ar__qw_quantize_symmetric(in + (size_t)b * size, size, q + (size_t)b * size); zp[b] = 0; }
    if (!per_channel && node->op != AR_OP_DEPTHWISE_CONV_2D) sf[b] *= wq->scale[0];
  }
  if (node->op == AR_OP_FULLY_CONNECTED) {
    for (int32_t b = 0; b < g.n; b++)
      for (int32_t o = 0; o < g.co; o++) {
        const int8_t *x = q + (size_t)b * g.ci, *wr = f + (size_t)o * g.ci;
        int32_t acc = 0;
        for (int32_t k = 0; k < g.ci; k++) acc += (int32_t)wr[k] * ((int32_t)x[k] - zp[b]);
        const float scale = per_channel ? wq->scale[o] * sf[b] : sf[b];
        /* result = bias; result += acc * scale: one FMA in TFLite's AVX2 build */
        const float r = fmaf((float)acc, scale, bias ? bias[o] : 0.0f);
        out[(size_t)b * g.co + o] = qw_clampf(r, lo, hi);
      }
    return;
  }
  const bool dw = node->op == AR_OP_DEPTHWISE_CONV_2D;
  for (int32_t b = 0; b < g.n; b++) {
    const int8_t *qb = q + (size_t)b * size;
    const int32_t z = zp[b];
    for (int32_t oy = 0; oy < g.oh; oy++)
      for (int32_t ox = 0; ox < g.ow; ox++) {
        const int32_t iy0 = oy * g.sh - g.pt, ix0 = ox * g.sw - g.pl;
        float *o = out + (((size_t)b * g.oh + oy) * g.ow + ox) * g.co;
        for (int32_t c = 0; c < g.co; c++) {
          int32_t acc = 0;
          for (int32_t ky = 0; ky < g.kh; ky++) {
            const int32_t iy = iy0 + ky * g.dh;
            if (iy < 0 || iy >= g.h) continue;
            for (int32_t kx = 0; kx < g.kw; kx++) {
              const int32_t ix = ix0 + kx * g.dw;
              if (ix < 0 || ix >= g.w) continue;
              const int8_t *x = qb + ((size_t)iy * g.w + ix) * g.ci;
              if (dw) {
                acc += (int32_t)f[((size_t)ky * g.kw + kx) * g.co + c] * ((int32_t)x[c / g.mult] - z);
              } else {
                const int8_t *wr = f + (((size_t)c * g.kh + ky) * g.kw + kx) * g.ci;
                for (int32_t i = 0; i < g.ci; i++) acc += (int32_t)wr[i] * ((int32_t)x[i] - z);
              }
            }
          }
          const float bc = bias ? bias[c] : 0.0f;
          float r;
          /* (acc * s_w[c]) * s_in + bias as one FMA: the order that matches native TFLite on 251 of
           * the 252 depthwise outputs of tools/ops/cases/qwide.py (the rest within 1 ulp) */
          if (dw) r = fmaf((float)acc * qw_wscale(w_t, c), sf[b], bc);
          else if (per_channel) r = fmaf((float)acc, wq->scale[c] * sf[b], bc);
          else r = (float)acc * sf[b] + bc;
          o[c] = qw_clampf(r, lo, hi);
        }
      }
  }
}

void ar__qw_eval(const ar_node_t *node) {
  if (qw_hybrid(node)) qwh_eval(node);
  else qw16_eval(node);
}
