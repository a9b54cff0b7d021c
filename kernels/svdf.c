/* svdf.c - TFLite SVDF (singular value decomposition filter, the keyword-spotting layer), float32.
 *
 * Inputs (TFLite svdf.cc): 0 input [batch, input_size]; 1 weights_feature [num_filters,
 * input_size]; 2 weights_time [num_filters, memory_size]; 3 bias [num_units] (optional);
 * 4 activation_state [batch, memory_size * num_filters], a variable tensor (the model's state,
 * persistent across invokes; TFLite resets it to 0). Output 0 [batch, num_units], num_units =
 * num_filters / rank.
 *
 * One invoke (TFLite reference EvalFloatSVDF): the state is shifted left by one element over the
 * whole buffer; the newest column of each filter (element memory_size - 1 of its row) gets
 * dot(input[b], weights_feature[f]); scratch[b][f] = dot(state[b][f][:], weights_time[f][:]);
 * output[b][u] = bias[u] + sum over the rank filters u*rank .. u*rank+rank-1 of scratch; then
 * the fused activation. The int8 form (integer state of int16) is not implemented yet: prepare
 * refuses it naming the dtype.
 */
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

typedef struct svdf_shape {
  int32_t batch, input_size, num_filters, memory_size, num_units, rank;
} svdf_shape_t;

static int svdf_shape(const ar_node_t *node, svdf_shape_t *s, char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0], *wf = node->inputs[1], *wt = node->inputs[2], *st = node->inputs[4];
  const ar_tview_t *bias = node->inputs[3];
  if (in->rank != 2 || wf->rank != 2 || wt->rank != 2 || st->rank != 2)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input, weights_feature, weights_time and state must be "
                    "rank 2 (have %d, %d, %d, %d)", (int)in->rank, (int)wf->rank, (int)wt->rank, (int)st->rank);
  s->batch = in->dims[0];
  s->input_size = in->dims[1];
  s->num_filters = wf->dims[0];
  s->memory_size = wt->dims[1];
  s->rank = node->options->svdf.rank;
  if (wf->dims[1] != s->input_size)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "weights_feature has %d columns, the input %d features",
                    (int)wf->dims[1], (int)s->input_size);
  if (wt->dims[0] != s->num_filters)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "weights_time has %d rows, weights_feature %d filters",
                    (int)wt->dims[0], (int)s->num_filters);
  if (s->rank < 1 || s->num_filters % s->rank != 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "%d filters are not a multiple of rank %d",
                    (int)s->num_filters, (int)s->rank);
  s->num_units = s->num_filters / s->rank;
  if (bias && (bias->rank != 1 || bias->dims[0] != s->num_units))
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "bias must be [%d] (num_units)", (int)s->num_units);
  if (st->dims[0] != s->batch || (int64_t)st->dims[1] != (int64_t)s->memory_size * s->num_filters)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "state shape [%d,%d], expected [%d,%d] (batch, memory_size "
                    "* num_filters)", (int)st->dims[0], (int)st->dims[1], (int)s->batch,
                    (int)(s->memory_size * s->num_filters));
  return 0;
}

static int svdf_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 5, 5, 3, 1, msg, msg_bytes);
  if (rc) return rc;
  if (!node->inputs[4]) return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "input 4 (the state) is missing");
  static const char *const what[5] = {"input 0", "weights_feature", "weights_time", "bias", "state"};
  for (int i = 0; i < 5; i++)
    if (node->inputs[i] && (rc = ar_k_check_dtype(node, node->inputs[i], what[i], AR_DTYPE_FLOAT32, msg, msg_bytes)))
      return rc;
  if ((rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_FLOAT32, msg, msg_bytes))) return rc;
  svdf_shape_t s;
  if ((rc = svdf_shape(node, &s, msg, msg_bytes))) return rc;
  float lo, hi;
  bool post;
  if ((rc = ar_k_activation(node, node->options->svdf.activation, &lo, &hi, &post, msg, msg_bytes))) return rc;
  const int32_t od[2] = {s.batch, s.num_units};
  if ((rc = ar_k_check_output_shape(node, 2, od, msg, msg_bytes))) return rc;
  node->scratch_bytes = (uint64_t)s.batch * (uint64_t)s.num_filters * sizeof(float);
  return 0;
}

static void svdf_eval(const ar_node_t *node) {
  svdf_shape_t s;
  char unused[8];
  (void)svdf_shape(node, &s, unused, sizeof unused);   /* checked at prepare */
  const float *in = node->inputs[0]->data, *wf = node->inputs[1]->data, *wt = node->inputs[2]->data;
  const float *bias = node->inputs[3] ? node->inputs[3]->data : NULL;
  float *state = node->inputs[4]->data, *out = node->outputs[0]->data, *scratch = node->scratch;
  const int64_t m = s.memory_size, nf = s.num_filters;
  const int64_t total = (int64_t)s.batch * nf * m;
  if (total > 1) memmove(state, state + 1, (size_t)(total - 1) * sizeof(float));
  for (int32_t b = 0; b < s.batch; b++) {
    const float *x = in + (int64_t)b * s.input_size;
    float *sb = state + (int64_t)b * nf * m;
    for (int64_t f = 0; f < nf; f++) {
      const float *w = wf + f * s.input_size;
      float acc = 0.0f;
      for (int32_t i = 0; i < s.input_size; i++) acc += w[i] * x[i];
      sb[f * m + m - 1] = acc;
    }
    for (int64_t f = 0; f < nf; f++) {
      const float *row = sb + f * m, *w = wt + f * m;
      float acc = 0.0f;
      for (int64_t t = 0; t < m; t++) acc += row[t] * w[t];
      scratch[(int64_t)b * nf + f] = acc;
    }
    float *o = out + (int64_t)b * s.num_units;
    for (int32_t u = 0; u < s.num_units; u++) {
      float sum = 0.0f;
      for (int32_t r = 0; r < s.rank; r++) sum += scratch[(int64_t)b * nf + (int64_t)u * s.rank + r];
      o[u] = (bias ? bias[u] : 0.0f) + sum;
    }
  }
  float lo, hi;
  bool post;
  (void)ar_k_activation(node, node->options->svdf.activation, &lo, &hi, &post, unused, sizeof unused);
  const int64_t n = (int64_t)s.batch * s.num_units;
  if (post) {
    ar_apply_activation(out, (size_t)n, node->options->svdf.activation);
  } else {
    for (int64_t i = 0; i < n; i++) out[i] = ar_k_clamp(out[i], lo, hi);
  }
}

static const ar_kernel_form_t svdf_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
};
const ar_kernel_t ar_kernel_svdf = {"SVDF", svdf_prepare, NULL, svdf_eval,
  AR_KSUPPORT(svdf_forms, 0, 1) };
