/* rnn.c - TFLite UNIDIRECTIONAL_SEQUENCE_RNN and RNN (the basic fully-connected recurrent cell),
 * float32.
 *
 * Semantics source: TFLite UNIDIRECTIONAL_SEQUENCE_RNN / RNN, float (basic_rnn.cc,
 * unidirectional_sequence_rnn.cc, kernel_utils.cc RnnBatchStep). Inputs: 0 input (RNN
 * [batch, input_size]; the sequence op [max_time, batch, input_size] when time_major, else
 * [batch, max_time, input_size]), 1 input weights [num_units, input_size], 2 recurrent weights
 * [num_units, num_units], 3 bias [num_units], 4 hidden state [batch, num_units], a VARIABLE
 * tensor updated in place (the next invoke continues from it). Output 0: the input's leading dims
 * with num_units last. One step, per batch row: out = act(bias + W * x + R * h); h = out. A
 * time-major sequence runs each step over every batch row; batch-major runs each batch row through
 * the whole sequence in turn, as TFLite does. Nothing is allocated at eval (no scratch: the sum
 * builds in the output row). Hybrid forms (integer weights) are refused.
 */
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

typedef struct {
  int32_t n_batch, max_time, n_input, n_units;
  bool time_major;
  ar_activation_t activation;
} rnn_state_t;

static const char *const rnn_names[5] = {"input", "input_weights", "recurrent_weights", "bias", "hidden_state"};

static int rnn_plan(const ar_node_t *node, rnn_state_t *s, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 5, 5, 5, 1, msg, msg_bytes);
  if (rc) return rc;
  for (int i = 0; i < 5; i++)
    if ((rc = ar_k_check_dtype(node, node->inputs[i], rnn_names[i], AR_DTYPE_FLOAT32, msg, msg_bytes))) return rc;
  if ((rc = ar_k_check_dtype(node, node->outputs[0], "output", AR_DTYPE_FLOAT32, msg, msg_bytes))) return rc;
  const bool seq = node->op == AR_OP_UNIDIRECTIONAL_SEQUENCE_RNN;
  const ar_rnn_options_t *o = node->options ? &node->options->rnn : NULL;
  memset(s, 0, sizeof *s);
  s->activation = o ? o->activation : AR_ACT_NONE;
  s->time_major = !seq || (o && o->time_major);
  const ar_tview_t *in = node->inputs[0], *w = node->inputs[1], *r = node->inputs[2], *b = node->inputs[3];
  const ar_tview_t *h = node->inputs[4];
  char a[96];
  if (in->rank != (seq ? 3 : 2))
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input is %s, expected rank %d", ar_k_dims_str(a, sizeof a,
                    in->rank, in->dims), seq ? 3 : 2);
  s->max_time = seq ? in->dims[s->time_major ? 0 : 1] : 1;
  s->n_batch = seq ? in->dims[s->time_major ? 1 : 0] : in->dims[0];
  s->n_input = in->dims[in->rank - 1];
  if (w->rank != 2 || w->dims[1] != s->n_input)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input_weights is %s, expected [num_units, %d]",
                    ar_k_dims_str(a, sizeof a, w->rank, w->dims), (int)s->n_input);
  s->n_units = w->dims[0];
  const int32_t nu = s->n_units;
  if (r->rank != 2 || r->dims[0] != nu || r->dims[1] != nu)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "recurrent_weights is %s, expected [%d,%d]",
                    ar_k_dims_str(a, sizeof a, r->rank, r->dims), (int)nu, (int)nu);
  if (b->rank != 1 || b->dims[0] != nu)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "bias is %s, expected [%d]", ar_k_dims_str(a, sizeof a,
                    b->rank, b->dims), (int)nu);
  ar_k_state_follows_batch(node, 4, s->n_batch);
  if (h->rank != 2 || h->dims[0] != s->n_batch || h->dims[1] != nu)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "hidden_state is %s, expected [%d,%d]",
                    ar_k_dims_str(a, sizeof a, h->rank, h->dims), (int)s->n_batch, (int)nu);
  if (h->is_constant)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "hidden_state must be a variable tensor, not a constant");
  int32_t od[3] = {in->dims[0], in->dims[1], nu};
  if (!seq) od[1] = nu;
  return ar_k_check_output_shape(node, seq ? 3 : 2, od, msg, msg_bytes);
}

static int rnn_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  rnn_state_t s;
  node->state_bytes = sizeof s;
  node->scratch_bytes = 0;
  return rnn_plan(node, &s, msg, msg_bytes);
}

static void rnn_init(ar_node_t *node) {
  rnn_state_t s;
  if (rnn_plan(node, &s, NULL, 0) == 0) ar_k_store_state(node, &s, sizeof s);
}

/* One step over nb batch rows: out rows (nu floats) = act(bias + W x + R h), h = out. */
static void rnn_step(const ar_node_t *node, const rnn_state_t *s, int32_t nb, const float *x, float *h, float *out) {
  const float *w = node->inputs[1]->data, *r = node->inputs[2]->data, *bias = node->inputs[3]->data;
  const int32_t ni = s->n_input, nu = s->n_units;
  for (int32_t b = 0; b < nb; b++) {
    const float *xb = x + (int64_t)b * ni, *hb = h + (int64_t)b * nu;
    float *ob = out + (int64_t)b * nu;
    for (int32_t u = 0; u < nu; u++) {
      const float *wu = w + (int64_t)u * ni, *ru = r + (int64_t)u * nu;
      float sx = 0.0f, sh = 0.0f;
      for (int32_t k = 0; k < ni; k++) sx += wu[k] * xb[k];
      for (int32_t k = 0; k < nu; k++) sh += ru[k] * hb[k];
      ob[u] = bias[u] + sx + sh;   /* TFLite: bias, += W x, += R h */
    }
  }
  ar_apply_activation(out, (size_t)nb * (size_t)nu, s->activation);
  memcpy(h, out, (size_t)nb * (size_t)nu * sizeof(float));
}

static void rnn_eval(const ar_node_t *node) {
  const rnn_state_t *s = node->state;
  const float *x = node->inputs[0]->data;
  float *h = node->inputs[4]->data, *out = node->outputs[0]->data;
  const int32_t nb = s->n_batch, ni = s->n_input, nu = s->n_units;
  if (s->time_major) {
    for (int32_t t = 0; t < s->max_time; t++)
      rnn_step(node, s, nb, x + (int64_t)t * nb * ni, h, out + (int64_t)t * nb * nu);
    return;
  }
  for (int32_t b = 0; b < nb; b++)
    for (int32_t t = 0; t < s->max_time; t++) {
      const int64_t row = (int64_t)b * s->max_time + t;
      rnn_step(node, s, 1, x + row * ni, h + (int64_t)b * nu, out + row * nu);
    }
}

/* TFLite UNIDIRECTIONAL_SEQUENCE_RNN (builtin 35) and RNN (builtin 24), float32. */
static const ar_kernel_form_t rnn_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32),
};
const ar_kernel_t ar_kernel_unidirectional_sequence_rnn = {"UNIDIRECTIONAL_SEQUENCE_RNN", rnn_prepare, rnn_init,
                                                           rnn_eval, AR_KSUPPORT(rnn_forms, 0, 1)};
const ar_kernel_t ar_kernel_rnn = {"RNN", rnn_prepare, rnn_init, rnn_eval, AR_KSUPPORT(rnn_forms, 0, 1)};
