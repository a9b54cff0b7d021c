/* softmax.c - TFLite SOFTMAX, LOG_SOFTMAX and L2_NORMALIZATION, float32, over the last axis.
 *
 * The input is read as [outer, depth] with depth = the last dim (any rank >= 1). Per row, as the
 * reference kernels: SOFTMAX exp(beta (x - max)) / sum; LOG_SOFTMAX (x - max) - log(sum exp(x -
 * max)); L2_NORMALIZATION x / max(sqrt(sum x^2), 1e-6), then the fused activation. Each row is
 * read completely before its outputs are written, so an output may share its input's bytes.
 *
 * SOFTMAX on uint8 / int8 is TFLite's builtin (optimized) kernel: a 256-entry float table made at
 * init, table[255 - k] = expf(-s_in * beta * k) (PopulateSoftmaxLookupTable); per row, with max the
 * row's largest code, sum = the float sum, in order, of table[255 - max + q]; each output is
 * p = table[255 - max + q] * (1 / (sum * s_out)), stored as (int32)(p + 0.5f) for uint8 (the zero
 * point is not added: TFLite's x86 QuantizeSoftmaxOutput<uint8_t>) and roundf(p) + z_out for int8,
 * clamped to the type. With an int16 output (int8 / uint8 input) the same probability p is stored as
 * roundf(p) + z_out, clamped to int16 (TFLite's QuantizeSoftmaxOutput<int16_t>).
 *
 * SOFTMAX int16 -> int16 (zero points 0, output scale 2^-15 within 0.1%, ranks 1-4 as TFLite's
 * builtin kernel takes; reference SoftmaxInt16): two 513-entry int16 tables made at init as
 * TFLite's LUTPopulate<int16_t> makes them in double (512 samples of the function, each corrected
 * by half the rounded error of linear interpolation at the midpoint, plus the end point): exp(x)
 * over [-10, 0] and 1 / (1 + x) over [0, 1], both scaled to [-1, 1] = [-32768, 32767] and read
 * with 7 bits of linear interpolation. Per row: d = mbqm(q - max, s_in * beta / (10 / 65535))
 * maps the row onto [-65535, 0], e = exp_table(sat16(d + 32767)) (Q0.15), sum = sum of e; the
 * sum normalized by its leading zeros to [1, 2) in Q1.14 (rounded), 1 / sum = inv_table(that -
 * 98304), each output (e * (1 / sum) + round) >> (31 - leading zeros), clamped to [0, 32767].
 * The exponentials are recomputed for the outputs (not cached in them), so an output may still
 * share its input's bytes.
 */
#include <math.h>
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_lut16.h"
#include "kernels/ar_qparams.h"
#include "kernels/ar_parallel.h"

/* The least work (elements) worth a chunk of rows of its own on the thread pool. Rows are
 * independent (each sums in its own order), so any split gives the same bytes. */
#define SMX_CHUNK_ELEMS (8 * 1024)

typedef struct {
  bool is_signed;
  bool int16_in;             /* int16 -> int16: the two int16 tables below */
  bool int16_out;            /* int8 / uint8 -> int16 */
  float out_scale;
  int32_t out_zp;
  int32_t mult;              /* int16: the input rescale onto [-65535, 0] */
  int shift;
  float table[256];
  int16_t exp_lut[513], inv_lut[513];
} softmax_q_t;

static double lut_exp(double x) { return exp(x); }
static double lut_inv(double x) { return 1.0 / (1.0 + x); }

static int softmax16_plan(ar_node_t *node, softmax_q_t *st, float si, int32_t zi, float so, int32_t zo,
                          char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0];
  if (zi != 0 || zo != 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "int16 input / output zero points %d / %d: "
                    "TFLite's int16 SOFTMAX takes 0 for both", (int)zi, (int)zo);
  if (!(fabsf(so - 1.0f / 32768) <= 0.001f * 1.0f / 32768))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "output scale %g: TFLite's int16 SOFTMAX "
                    "writes scale 2^-15 (1/32768)", (double)so);
  if (in->rank > 4)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "int16 input of rank %d: TFLite's int16 "
                    "SOFTMAX takes ranks 1 to 4", (int)in->rank);
  const float beta = node->options ? node->options->softmax.beta : 0.0f;
  st->int16_in = true;
  ar_quantize_multiplier((double)(si * beta) / (10.0 / 65535.0), &st->mult, &st->shift);
  /* as TFLite: doubles, exp on [-10, 0] and 1 / (1 + x) on [0, 1], outputs on [-1, 1] */
  ar_lut16_fill_double(lut_exp, 10.0 / 65535, 32767, 2.0 / 65535, 0, st->exp_lut);
  ar_lut16_fill_double(lut_inv, 1.0 / 65535, -32768, 2.0 / 65535, 0, st->inv_lut);
  return 0;
}

static int softmax_q_plan(ar_node_t *node, softmax_q_t *st, char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  int rc;
  float si = 0, so = 0;
  int32_t zi = 0, zo = 0;
  /* int8 / uint8 -> int16 too (TFLite's SoftmaxPrepare takes an int16 output of any 8-bit input) */
  if (!(ar_k_is_q8(in->dtype) && o->dtype == AR_DTYPE_INT16) &&
      (rc = ar_k_check_dtype(node, o, "output 0", in->dtype, msg, msg_bytes)))
    return rc;
  if ((rc = ar_k_qparams(node, in, "input 0", &si, &zi, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, o, "output 0", &so, &zo, msg, msg_bytes)))
    return rc;
  if (in->rank < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 0 is a scalar (rank >= 1 needed)");
  memset(st, 0, sizeof *st);
  if (in->dtype == AR_DTYPE_INT16) {
    if ((rc = softmax16_plan(node, st, si, zi, so, zo, msg, msg_bytes))) return rc;
    return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
  }
  st->is_signed = in->dtype == AR_DTYPE_INT8;
  st->int16_out = o->dtype == AR_DTYPE_INT16;
  st->out_scale = so;
  st->out_zp = zo;
  const float beta = node->options ? node->options->softmax.beta : 0.0f;
  const float scale = -si * beta;
  for (int32_t k = 0; k <= 255; k++) st->table[255 - k] = expf(scale * (float)k);
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

static void softmax_q_init(ar_node_t *node) {
  softmax_q_t st;
  if (node->state_bytes && softmax_q_plan(node, &st, NULL, 0) == 0)
    ar_k_store_state(node, &st, sizeof st);
}

static inline int32_t smx_code(const uint8_t *p, int64_t c, bool s8) {
  return s8 ? (int32_t)(int8_t)p[c] : (int32_t)p[c];
}

/* The table row of one input row: tab[q] = table[255 - max + q] for every code q <= max. */
static inline const float *smx_tab(const softmax_q_t *st, const uint8_t *in, int64_t depth, bool s8) {
  int32_t mx = s8 ? -128 : 0;
  for (int64_t c = 0; c < depth; c++) {
    const int32_t q = smx_code(in, c, s8);
    mx = q > mx ? q : mx;
  }
  return st->table + (255 - mx);
}

/* One row's outputs from its table row and float sum. */
static inline void smx_out(const softmax_q_t *st, const float *tab, float sum, const uint8_t *in,
                           uint8_t *out, int64_t depth, bool s8) {
  const int32_t tmin = s8 ? -128 : 0, tmax = s8 ? 127 : 255;
  const float inv = 1.0f / (sum * st->out_scale);
  for (int64_t c = 0; c < depth; c++) {
    const float p = tab[smx_code(in, c, s8)] * inv;
    /* p >= 0: roundf(p) (half away from zero) is the truncation plus one when the exact
     * remainder p - trunc(p) is >= 0.5. */
    int32_t v;
    if (!(p < 1.0e9f)) {   /* only with odd output scales: saturates below */
      v = tmax;
    } else if (s8) {
      const int32_t tr = (int32_t)p;
      v = tr + (p - (float)tr >= 0.5f ? 1 : 0) + st->out_zp;
    } else {
      v = (int32_t)(p + 0.5f);
    }
    v = v < tmin ? tmin : v > tmax ? tmax : v;
    out[c] = (uint8_t)v;
  }
}

/* Rows four at a time: each row's float sum is still added in order, but the four sums are
 * independent chains, so the adds overlap instead of waiting on each other (a row of 16 codes was
 * 16 dependent adds). Same sums, same bytes. */
static inline void softmax_q_rows(const softmax_q_t *st, const uint8_t *in, uint8_t *out, int64_t outer,
                                  int64_t depth, bool s8) {
  int64_t r = 0;
  for (; r + 4 <= outer; r += 4, in += 4 * depth, out += 4 * depth) {
    const uint8_t *i0 = in, *i1 = in + depth, *i2 = in + 2 * depth, *i3 = in + 3 * depth;
    const float *t0 = smx_tab(st, i0, depth, s8), *t1 = smx_tab(st, i1, depth, s8);
    const float *t2 = smx_tab(st, i2, depth, s8), *t3 = smx_tab(st, i3, depth, s8);
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    for (int64_t c = 0; c < depth; c++) {
      s0 += t0[smx_code(i0, c, s8)];
      s1 += t1[smx_code(i1, c, s8)];
      s2 += t2[smx_code(i2, c, s8)];
      s3 += t3[smx_code(i3, c, s8)];
    }
    smx_out(st, t0, s0, i0, out, depth, s8);
    smx_out(st, t1, s1, i1, out + depth, depth, s8);
    smx_out(st, t2, s2, i2, out + 2 * depth, depth, s8);
    smx_out(st, t3, s3, i3, out + 3 * depth, depth, s8);
  }
  for (; r < outer; r++, in += depth, out += depth) {
    const float *tab = smx_tab(st, in, depth, s8);
    float sum = 0.0f;
    for (int64_t c = 0; c < depth; c++) sum += tab[smx_code(in, c, s8)];
    smx_out(st, tab, sum, in, out, depth, s8);
  }
}

/* 8-bit rows into int16 outputs: the same float table and in-order sum, roundf(p) + z_out. */
static void softmax_q16out_rows(const softmax_q_t *st, const uint8_t *in, int16_t *out, int64_t outer,
                                int64_t depth) {
  const bool s8 = st->is_signed;
  for (int64_t r = 0; r < outer; r++, in += depth, out += depth) {
    const float *tab = smx_tab(st, in, depth, s8);
    float sum = 0.0f;
    for (int64_t c = 0; c < depth; c++) sum += tab[smx_code(in, c, s8)];
    const float inv = 1.0f / (sum * st->out_scale);
    for (int64_t c = 0; c < depth; c++) {
      const float p = tab[smx_code(in, c, s8)] * inv;
      int64_t v = p < 1.0e9f ? (int64_t)roundf(p) + st->out_zp : INT16_MAX;
      out[c] = (int16_t)(v < INT16_MIN ? INT16_MIN : v > INT16_MAX ? INT16_MAX : v);
    }
  }
}

/* exp(q - max) of one int16 code on the row's scale, Q0.15. */
static inline int16_t smx16_exp(const softmax_q_t *st, int16_t q, int16_t mx) {
  const int32_t d = ar_mbqm((int32_t)q - mx, st->mult, st->shift) + 32767;
  return ar_lut16_lookup(st->exp_lut, (int16_t)(d < -32768 ? -32768 : d > 32767 ? 32767 : d));
}

/* int16 rows (reference SoftmaxInt16). */
static void softmax16_rows(const softmax_q_t *st, const int16_t *in, int16_t *out, int64_t outer,
                           int64_t depth) {
  for (int64_t r = 0; r < outer; r++, in += depth, out += depth) {
    int16_t mx = INT16_MIN;
    for (int64_t c = 0; c < depth; c++) mx = in[c] > mx ? in[c] : mx;
    uint32_t sum = 0;   /* Q16.15; int32 arithmetic that wraps as TFLite's */
    for (int64_t c = 0; c < depth; c++) sum += (uint32_t)(int32_t)smx16_exp(st, in[c], mx);
    const int hp1 = sum ? __builtin_clz(sum) : 32;
    const int32_t shifted = (int32_t)((((int64_t)(int32_t)sum << (hp1 - 1)) + (1 << 13)) >> 14);
    int32_t sym = shifted - ((1 << 15) + (1 << 16));
    sym = sym < -32768 ? -32768 : sym > 32767 ? 32767 : sym;
    const int32_t recip = ar_lut16_lookup(st->inv_lut, (int16_t)sym);
    const int right = 31 - hp1;
    const int64_t rnd = (int64_t)1 << (right - 1);
    /* every e is read from the input before out[c] is written: in == out is fine */
    for (int64_t c = 0; c < depth; c++) {
      const int64_t e = smx16_exp(st, in[c], mx);
      int32_t v = (int32_t)((e * recip + rnd) >> right);
      out[c] = (int16_t)(v < 0 ? 0 : v > 32767 ? 32767 : v);
    }
  }
}

/* Rows [r0, r1) of the 8-bit SOFTMAX. */
static void softmax_q_range(void *ctx, int64_t r0, int64_t r1) {
  const ar_node_t *node = ctx;
  const softmax_q_t *st = node->state;
  const ar_tview_t *t = node->inputs[0];
  const int64_t depth = t->dims[t->rank - 1];
  if (st->int16_in) {
    softmax16_rows(st, (const int16_t *)t->data + r0 * depth, (int16_t *)node->outputs[0]->data + r0 * depth,
                   r1 - r0, depth);
    return;
  }
  const uint8_t *in = (const uint8_t *)t->data + r0 * depth;
  if (st->int16_out) {
    softmax_q16out_rows(st, in, (int16_t *)node->outputs[0]->data + r0 * depth, r1 - r0, depth);
    return;
  }
  uint8_t *out = (uint8_t *)node->outputs[0]->data + r0 * depth;
  if (st->is_signed) softmax_q_rows(st, in, out, r1 - r0, depth, true);
  else softmax_q_rows(st, in, out, r1 - r0, depth, false);
}

static void rows(const ar_node_t *node, int64_t *outer, int64_t *depth);

static void softmax_q_eval(const ar_node_t *node) {
  int64_t outer, depth;
  rows(node, &outer, &depth);
  ar_parallel_for(node, outer, ar_parallel_grain(outer, depth, SMX_CHUNK_ELEMS, 4), softmax_q_range,
                  (void *)node);
}

static int lastaxis_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  node->state_bytes = 0;
  if (node->op == AR_OP_SOFTMAX && (ar_k_is_q8(in->dtype) || in->dtype == AR_DTYPE_INT16)) {
    softmax_q_t st;
    if ((rc = softmax_q_plan(node, &st, msg, msg_bytes))) return rc;
    node->state_bytes = sizeof st;
    return 0;
  }
  if ((rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_FLOAT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_FLOAT32, msg, msg_bytes)))
    return rc;
  if (in->rank < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 0 is a scalar (rank >= 1 needed)");
  if (node->op == AR_OP_L2_NORMALIZATION && node->options) {
    float lo, hi;
    bool post;
    if ((rc = ar_k_activation(node, node->options->elementwise.activation, &lo, &hi, &post, msg, msg_bytes)))
      return rc;
  }
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

static void rows(const ar_node_t *node, int64_t *outer, int64_t *depth) {
  const ar_tview_t *in = node->inputs[0];
  *depth = in->dims[in->rank - 1];
  *outer = *depth > 0 ? ar_k_elements(in) / *depth : 0;
}

/* Rows [r0, r1) of the float32 SOFTMAX. */
static void softmax_f32_range(void *ctx, int64_t r0, int64_t r1) {
  const ar_node_t *node = ctx;
  int64_t outer, depth;
  rows(node, &outer, &depth);
  const float *in = (const float *)node->inputs[0]->data + r0 * depth;
  float *out = (float *)node->outputs[0]->data + r0 * depth;
  const float beta = node->options ? node->options->softmax.beta : 0.0f;
  for (int64_t r = r0; r < r1; r++, in += depth, out += depth) {
    float mx = in[0];
    for (int64_t c = 1; c < depth; c++) mx = in[c] > mx ? in[c] : mx;
    float sum = 0.0f;
    for (int64_t c = 0; c < depth; c++) {
      const float e = expf((in[c] - mx) * beta);
      out[c] = e;
      sum += e;
    }
    const float inv = 1.0f / sum;
    for (int64_t c = 0; c < depth; c++) out[c] *= inv;
  }
}

static void softmax_eval(const ar_node_t *node) {
  if (node->state_bytes) { softmax_q_eval(node); return; }
  int64_t outer, depth;
  rows(node, &outer, &depth);
  ar_parallel_for(node, outer, ar_parallel_grain(outer, depth * 8, SMX_CHUNK_ELEMS, 1), softmax_f32_range,
                  (void *)node);
}

static void log_softmax_eval(const ar_node_t *node) {
  const float *in = node->inputs[0]->data;
  float *out = node->outputs[0]->data;
  int64_t outer, depth;
  rows(node, &outer, &depth);
  for (int64_t r = 0; r < outer; r++, in += depth, out += depth) {
    float mx = in[0];
    for (int64_t c = 1; c < depth; c++) mx = in[c] > mx ? in[c] : mx;
    float sum = 0.0f;
    for (int64_t c = 0; c < depth; c++) sum += expf(in[c] - mx);
    const float log_sum = logf(sum);
    for (int64_t c = 0; c < depth; c++) out[c] = in[c] - mx - log_sum;
  }
}

static void l2_normalization_eval(const ar_node_t *node) {
  const float *in = node->inputs[0]->data;
  float *out = node->outputs[0]->data;
  int64_t outer, depth;
  rows(node, &outer, &depth);
  const ar_activation_t act = node->options ? node->options->elementwise.activation : AR_ACT_NONE;
  for (int64_t r = 0; r < outer; r++, in += depth, out += depth) {
    float sq = 0.0f;
    for (int64_t c = 0; c < depth; c++) sq += in[c] * in[c];
    float norm = sqrtf(sq);
    norm = norm > 1e-6f ? norm : 1e-6f;
    for (int64_t c = 0; c < depth; c++) out[c] = in[c] / norm;
  }
  if (act != AR_ACT_NONE && outer > 0)
    ar_apply_activation(node->outputs[0]->data, (size_t)(outer * depth), act);
}

/* TFLite SOFTMAX (builtin 25): exp(beta (x - max)) / sum over the last axis; float32, uint8 /
 * int8 (-> the same type or int16) through TFLite's float lookup table, int16 through its two int16
 * tables. */
static const ar_kernel_form_t softmax_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32),
  AR_KF(1, 3, UINT8, UINT8),
  AR_KF(1, 3, INT8, INT8),
  AR_KF(1, 3, UINT8, INT16),
  AR_KF(1, 3, INT8, INT16),
  AR_KF(1, 3, INT16, INT16),
};
const ar_kernel_t ar_kernel_softmax = { "SOFTMAX", lastaxis_prepare, softmax_q_init, softmax_eval,
  AR_KSUPPORT(softmax_forms, 0, -1) };
/* TFLite LOG_SOFTMAX (builtin 50): x - max - log(sum exp(x - max)) over the last axis. */
static const ar_kernel_form_t log_softmax_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
};
const ar_kernel_t ar_kernel_log_softmax = { "LOG_SOFTMAX", lastaxis_prepare, NULL, log_softmax_eval,
  AR_KSUPPORT(log_softmax_forms, 0, -1) };
/* TFLite L2_NORMALIZATION (builtin 11): x / max(||x||_2, 1e-6) over the last axis. */
static const ar_kernel_form_t l2_normalization_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
};
const ar_kernel_t ar_kernel_l2_normalization = { "L2_NORMALIZATION", lastaxis_prepare, NULL,
                                                 l2_normalization_eval,
  AR_KSUPPORT(l2_normalization_forms, 0, -1) };
