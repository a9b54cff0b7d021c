/* qact.c - the uint8 / int8 forms of LEAKY_RELU, HARD_SWISH (issue 28) and PRELU (below). The
 * first two are 256-entry tables: each output byte is a function of its input byte alone, so the
 * table is made once (init) with TFLite's builtin integer arithmetic for every code and eval is a
 * byte lookup (ar__lut8_node).
 *
 * LEAKY_RELU (activations.cc LeakyReluPrepare, reference QuantizeLeakyRelu): with x = q - z_in,
 *   out = z_out + MultiplyByQuantizedMultiplier(x, s_in / s_out) for x >= 0, and
 *   z_out + MultiplyByQuantizedMultiplier(x, s_in * alpha / s_out) below, clamped to the type; the
 *   multipliers are computed in float32 as TFLite does. A negative alpha is refused (TFLite would
 *   take its sign into the multiplier; no converter writes one for a quantized model).
 * HARD_SWISH (activations.cc HardSwishPrepare, reference HardSwish): 16-bit fixed point - the input
 *   on a "high-resolution" scale s_in / 128, a relu-ish factor in [0, 1] from the input on the
 *   scale 3 / 32768 with saturating shifts, multiplied into the input on the output scale by a
 *   doubling high multiply that truncates, then a rounding right shift; both multipliers are
 *   QuantizeMultiplier's 32-bit ones rounded to 16 bits. TFLite requires s_in / (128 s_out) <= 1
 *   (an output shift that is a right shift) and so does this kernel.
 */
#include <limits.h>
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_qparams.h"

typedef struct { uint8_t table[256]; } qact_state_t;

/* TFLite DownScaleInt32ToInt16Multiplier: the top 16 bits of a Q31 multiplier, rounded. */
static int16_t down_to_i16(int32_t m) {
  if (m >= INT32_MAX - (1 << 15)) return INT16_MAX;
  return (int16_t)((m + (1 << 15)) >> 16);
}

/* gemmlowp SaturatingRoundingDoublingHighMul on int16. */
static int16_t srdhm16(int16_t a, int16_t b) {
  if (a == INT16_MIN && b == INT16_MIN) return INT16_MAX;
  const int32_t ab = (int32_t)a * (int32_t)b;
  const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return (int16_t)((ab + nudge) / (1 << 15));
}

/* TFLite SaturatingDoublingHighMul (truncating) on int16. */
static int16_t sdhm16(int16_t a, int16_t b) {
  if (a == INT16_MIN && b == INT16_MIN) return INT16_MAX;
  return (int16_t)(((int32_t)a * (int32_t)b) / (1 << 15));
}

/* gemmlowp RoundingDivideByPOT on int16 values. */
static int16_t rdivpot16(int16_t x, int e) {
  const int32_t mask = (1 << e) - 1, rem = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (int16_t)((x >> e) + (rem > threshold ? 1 : 0));
}

static int16_t sat_lshift16(int16_t v, int amount) {
  int64_t r = (int64_t)v * ((int64_t)1 << amount);
  if (r > INT16_MAX) r = INT16_MAX;
  if (r < INT16_MIN) r = INT16_MIN;
  return (int16_t)r;
}

/* The table of `node` (q8 LEAKY_RELU or HARD_SWISH) into st; 0 or an error naming what is wrong. */
static int qact_plan(const ar_node_t *node, qact_state_t *st, char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  int rc;
  if ((rc = ar_k_check_dtype(node, o, "output 0", in->dtype, msg, msg_bytes))) return rc;
  float si = 0, so = 0;
  int32_t zi = 0, zo = 0;
  if ((rc = ar_k_qparams(node, in, "input 0", &si, &zi, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, o, "output 0", &so, &zo, msg, msg_bytes)))
    return rc;
  const bool is_signed = in->dtype == AR_DTYPE_INT8;
  const int32_t tmin = is_signed ? -128 : 0, tmax = is_signed ? 127 : 255;
  if (node->op == AR_OP_LEAKY_RELU) {
    const float alpha = node->options ? node->options->leaky_relu.alpha : 0.0f;
    if (!(alpha >= 0.0f))
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "alpha %g: a quantized LEAKY_RELU takes "
                      "alpha >= 0", (double)alpha);
    int32_t m_id, m_a;
    int sh_id, sh_a;
    const float real_alpha = si * alpha / so, real_id = si / so;
    ar_quantize_multiplier((double)real_alpha, &m_a, &sh_a);
    ar_quantize_multiplier((double)real_id, &m_id, &sh_id);
    for (int32_t q = tmin; q <= tmax; q++) {
      const int32_t x = q - zi;
      int32_t v = zo + (x >= 0 ? ar_mbqm(x, m_id, sh_id) : ar_mbqm(x, m_a, sh_a));
      v = v < tmin ? tmin : v > tmax ? tmax : v;
      st->table[(uint8_t)q] = (uint8_t)v;
    }
    return 0;
  }
  /* HARD_SWISH */
  const float hires = (1.0f / 128.0f) * si;
  const float out_mult = hires / so, reluish_mult = hires / (3.0f / 32768.0f);
  int32_t m32;
  int out_exp, rel_exp;
  ar_quantize_multiplier((double)out_mult, &m32, &out_exp);
  const int16_t out_m16 = down_to_i16(m32);
  if (out_exp > 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input scale %g over 128 x output scale %g "
                    "exceeds 1 (TFLite's quantized HARD_SWISH needs it at most 1)", (double)si, (double)so);
  ar_quantize_multiplier((double)reluish_mult, &m32, &rel_exp);
  const int16_t rel_m16 = down_to_i16(m32);
  for (int32_t q = tmin; q <= tmax; q++) {
    const int16_t x = (int16_t)(q - zi);
    const int16_t hi_in = (int16_t)(x * (1 << 7));
    const int16_t pre_out = srdhm16(hi_in, out_m16);
    int16_t r = hi_in;
    if (rel_exp > 0) r = sat_lshift16(r, rel_exp - 1);
    r = srdhm16(r, rel_m16);
    if (rel_exp > 0) r = sat_lshift16(r, 1);
    if (rel_exp < 0) r = rdivpot16(r, -rel_exp);
    r = (int16_t)((r + (1 << 15)) >> 1);
    const int16_t pre = sdhm16(r, pre_out);
    int32_t v = (int32_t)rdivpot16(pre, -out_exp) + zo;
    v = v < tmin ? tmin : v > tmax ? tmax : v;
    st->table[(uint8_t)q] = (uint8_t)v;
  }
  return 0;
}

int ar__qact_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  qact_state_t st;
  if ((rc = qact_plan(node, &st, msg, msg_bytes))) return rc;
  node->state_bytes = sizeof(qact_state_t);
  node->scratch_bytes = 0;
  const ar_tview_t *in = node->inputs[0];
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

void ar__qact_init(ar_node_t *node) {
  qact_state_t st;
  char msg[8];
  if (qact_plan(node, &st, msg, sizeof msg) == 0) ar_k_store_state(node, &st, sizeof st);
}

void ar__qact_eval(const ar_node_t *node) {
  const qact_state_t *st = node->state;
  ar__lut8_node(node, st->table, node->inputs[0]->data, node->outputs[0]->data, ar_k_elements(node->inputs[0]));
}

/* ---- PRELU, uint8 / int8 (prelu.cc Prepare, reference BroadcastPrelu4DSlow / Prelu) ----
 * x = q - z_in; x >= 0: MultiplyByQuantizedMultiplier(x, s_in / s_out); else with a = alpha code -
 * z_alpha: MultiplyByQuantizedMultiplier(x * a, s_in * s_alpha / s_out); + z_out, clamped. The
 * input and alpha broadcast against each other (NumPy rules; TFLite's kernel stops at rank 4). */

typedef struct {
  int32_t in_zp, alpha_zp, out_zp, m1, m2;
  int sh1, sh2;
  bool is_signed;
  int32_t rank;
  int32_t dims[AR_MAX_RANK];
  int64_t s_in[AR_MAX_RANK], s_alpha[AR_MAX_RANK];
} qprelu_state_t;

static void bstrides(const ar_tview_t *t, int32_t r, int64_t *stride) {
  int64_t s = 1;
  for (int32_t i = r - 1; i >= 0; i--) {
    const int32_t it = i - (r - t->rank);
    const int32_t d = it >= 0 ? t->dims[it] : 1;
    stride[i] = d == 1 ? 0 : s;
    s *= d;
  }
}

static int qprelu_plan(const ar_node_t *node, qprelu_state_t *st, char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0], *al = node->inputs[1], *o = node->outputs[0];
  int rc;
  memset(st, 0, sizeof *st);
  if ((rc = ar_k_check_dtype(node, al, "input 1 (alpha)", in->dtype, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, o, "output 0", in->dtype, msg, msg_bytes)))
    return rc;
  float si = 0, sa = 0, so = 0;
  if ((rc = ar_k_qparams(node, in, "input 0", &si, &st->in_zp, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, al, "input 1 (alpha)", &sa, &st->alpha_zp, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, o, "output 0", &so, &st->out_zp, msg, msg_bytes)))
    return rc;
  st->is_signed = in->dtype == AR_DTYPE_INT8;
  const float r1 = si / so, r2 = si * sa / so;
  ar_quantize_multiplier((double)r1, &st->m1, &st->sh1);
  ar_quantize_multiplier((double)r2, &st->m2, &st->sh2);
  const int32_t r = in->rank > al->rank ? in->rank : al->rank;
  for (int32_t i = 0; i < r; i++) {
    const int32_t ii = i - (r - in->rank), ia = i - (r - al->rank);
    const int32_t di = ii >= 0 ? in->dims[ii] : 1, da = ia >= 0 ? al->dims[ia] : 1;
    if (di != da && di != 1 && da != 1) {
      char x[96], y[96];
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input shape %s and alpha shape %s do not broadcast",
                      ar_k_dims_str(x, sizeof x, in->rank, in->dims), ar_k_dims_str(y, sizeof y, al->rank, al->dims));
    }
    st->dims[i] = di == 1 ? da : di;
  }
  st->rank = r;
  bstrides(in, r, st->s_in);
  bstrides(al, r, st->s_alpha);
  return 0;
}

int ar__qprelu_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  qprelu_state_t st;
  if ((rc = qprelu_plan(node, &st, msg, msg_bytes))) return rc;
  node->state_bytes = sizeof(qprelu_state_t);
  node->scratch_bytes = 0;
  return ar_k_check_output_shape(node, st.rank, st.dims, msg, msg_bytes);
}

void ar__qprelu_init(ar_node_t *node) {
  qprelu_state_t st;
  char msg[8];
  if (qprelu_plan(node, &st, msg, sizeof msg) == 0) ar_k_store_state(node, &st, sizeof st);
}

void ar__qprelu_eval(const ar_node_t *node) {
  const qprelu_state_t *st = node->state;
  const ar_tview_t *o = node->outputs[0];
  const int64_t n = ar_k_elements(o);
  if (n == 0) return;
  const uint8_t *pu = node->inputs[0]->data, *au = node->inputs[1]->data;
  const int8_t *ps = node->inputs[0]->data, *as = node->inputs[1]->data;
  const int32_t tmin = st->is_signed ? -128 : 0, tmax = st->is_signed ? 127 : 255;
  int32_t idx[AR_MAX_RANK] = {0};
  int64_t oi = 0, oa = 0;
  for (int64_t i = 0; i < n; i++) {
    const int32_t x = (st->is_signed ? ps[oi] : pu[oi]) - st->in_zp;
    int32_t v;
    if (x >= 0) {
      v = ar_mbqm(x, st->m1, st->sh1);
    } else {
      const int32_t a = (st->is_signed ? as[oa] : au[oa]) - st->alpha_zp;
      v = ar_mbqm(x * a, st->m2, st->sh2);
    }
    v += st->out_zp;
    v = v < tmin ? tmin : v > tmax ? tmax : v;
    if (st->is_signed) ((int8_t *)o->data)[i] = (int8_t)v;
    else ((uint8_t *)o->data)[i] = (uint8_t)v;
    for (int32_t d = st->rank - 1; d >= 0; d--) {
      oi += st->s_in[d];
      oa += st->s_alpha[d];
      if (++idx[d] < st->dims[d]) break;
      oi -= st->s_in[d] * st->dims[d];
      oa -= st->s_alpha[d] * st->dims[d];
      idx[d] = 0;
    }
  }
}
