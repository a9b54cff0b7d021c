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
 * clamped to the type.
 */
#include <math.h>
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_qparams.h"

typedef struct {
  bool is_signed;
  float out_scale;
  int32_t out_zp;
  float table[256];
} softmax_q_t;

static int softmax_q_plan(ar_node_t *node, softmax_q_t *st, char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  int rc;
  float si = 0, so = 0;
  int32_t zi = 0, zo = 0;
  if ((rc = ar_k_check_dtype(node, o, "output 0", in->dtype, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, in, "input 0", &si, &zi, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, o, "output 0", &so, &zo, msg, msg_bytes)))
    return rc;
  if (in->rank < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 0 is a scalar (rank >= 1 needed)");
  memset(st, 0, sizeof *st);
  st->is_signed = in->dtype == AR_DTYPE_INT8;
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

static void softmax_q_eval(const ar_node_t *node) {
  const softmax_q_t *st = node->state;
  const ar_tview_t *t = node->inputs[0];
  const int64_t depth = t->dims[t->rank - 1];
  const int64_t outer = depth > 0 ? ar_k_elements(t) / depth : 0;
  const uint8_t *in = t->data;
  uint8_t *out = node->outputs[0]->data;
  const int32_t tmin = st->is_signed ? -128 : 0, tmax = st->is_signed ? 127 : 255;
  for (int64_t r = 0; r < outer; r++, in += depth, out += depth) {
    /* Codes as integers; idx(q) = 255 - max + q is in [0, 255] for every q <= max. */
    int32_t mx = tmin;
    for (int64_t c = 0; c < depth; c++) {
      const int32_t q = st->is_signed ? (int32_t)(int8_t)in[c] : (int32_t)in[c];
      mx = q > mx ? q : mx;
    }
    const float *tab = st->table + (255 - mx);
    float sum = 0.0f;
    for (int64_t c = 0; c < depth; c++)
      sum += tab[st->is_signed ? (int32_t)(int8_t)in[c] : (int32_t)in[c]];
    const float inv = 1.0f / (sum * st->out_scale);
    for (int64_t c = 0; c < depth; c++) {
      const float p = tab[st->is_signed ? (int32_t)(int8_t)in[c] : (int32_t)in[c]] * inv;
      /* p >= 0: roundf(p) (half away from zero) is the truncation plus one when the exact
       * remainder p - trunc(p) is >= 0.5. */
      int32_t v;
      if (!(p < 1.0e9f)) {   /* only with odd output scales: saturates below */
        v = tmax;
      } else if (st->is_signed) {
        const int32_t tr = (int32_t)p;
        v = tr + (p - (float)tr >= 0.5f ? 1 : 0) + st->out_zp;
      } else {
        v = (int32_t)(p + 0.5f);
      }
      v = v < tmin ? tmin : v > tmax ? tmax : v;
      out[c] = (uint8_t)v;
    }
  }
}

static int lastaxis_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  node->state_bytes = 0;
  if (node->op == AR_OP_SOFTMAX && ar_k_is_q8(in->dtype)) {
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

static void softmax_eval(const ar_node_t *node) {
  if (node->state_bytes) { softmax_q_eval(node); return; }
  const float *in = node->inputs[0]->data;
  float *out = node->outputs[0]->data;
  const float beta = node->options ? node->options->softmax.beta : 0.0f;
  int64_t outer, depth;
  rows(node, &outer, &depth);
  for (int64_t r = 0; r < outer; r++, in += depth, out += depth) {
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

/* TFLite SOFTMAX (builtin 25): exp(beta (x - max)) / sum over the last axis; float32, and uint8 /
 * int8 through TFLite's float lookup table. */
const ar_kernel_t ar_kernel_softmax = { "SOFTMAX", lastaxis_prepare, softmax_q_init, softmax_eval };
/* TFLite LOG_SOFTMAX (builtin 50): x - max - log(sum exp(x - max)) over the last axis. */
const ar_kernel_t ar_kernel_log_softmax = { "LOG_SOFTMAX", lastaxis_prepare, NULL, log_softmax_eval };
/* TFLite L2_NORMALIZATION (builtin 11): x / max(||x||_2, 1e-6) over the last axis. */
const ar_kernel_t ar_kernel_l2_normalization = { "L2_NORMALIZATION", lastaxis_prepare, NULL,
                                                 l2_normalization_eval };
