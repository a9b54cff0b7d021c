/* lstm.c - TFLite UNIDIRECTIONAL_SEQUENCE_LSTM and LSTM: the layout shared with the integer
 * kernels (ar_lstm_parse, kernels/lstm.h). */
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/lstm.h"

static const char *const input_names[AR_LSTM_MAX_INPUTS] = {
    "input", "input_to_input_weights", "input_to_forget_weights", "input_to_cell_weights",
    "input_to_output_weights", "recurrent_to_input_weights", "recurrent_to_forget_weights",
    "recurrent_to_cell_weights", "recurrent_to_output_weights", "cell_to_input_weights",
    "cell_to_forget_weights", "cell_to_output_weights", "input_gate_bias", "forget_gate_bias",
    "cell_gate_bias", "output_gate_bias", "projection_weights", "projection_bias", "output_state",
    "cell_state", "input_layer_norm_coefficients", "forget_layer_norm_coefficients",
    "cell_layer_norm_coefficients", "output_layer_norm_coefficients"};

const char *ar_lstm_input_name(int32_t i) {
  return i >= 0 && i < AR_LSTM_MAX_INPUTS ? input_names[i] : "input";
}

/* Input i present with exactly the shape (rank, d0, d1). */
static int need_shape(const ar_node_t *node, const ar_lstm_t *l, int32_t i, int32_t rank, int32_t d0,
                      int32_t d1, char *msg, size_t msg_bytes) {
  const ar_tview_t *t = l->t[i];
  const int32_t want[2] = {d0, d1};
  bool ok = t->rank == rank;
  for (int32_t d = 0; ok && d < rank; d++) ok = t->dims[d] == want[d];
  if (ok) return 0;
  char a[96], b[96];
  return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "%s (input %d) is %s, expected %s", input_names[i], (int)i,
                  ar_k_dims_str(a, sizeof a, t->rank, t->dims), ar_k_dims_str(b, sizeof b, rank, want));
}

/* Inputs that must be there whatever the variant. */
static const int32_t required[] = {
    AR_LSTM_INPUT, AR_LSTM_INPUT_TO_FORGET_W, AR_LSTM_INPUT_TO_CELL_W, AR_LSTM_INPUT_TO_OUTPUT_W,
    AR_LSTM_RECURRENT_TO_FORGET_W, AR_LSTM_RECURRENT_TO_CELL_W, AR_LSTM_RECURRENT_TO_OUTPUT_W,
    AR_LSTM_FORGET_GATE_BIAS, AR_LSTM_CELL_GATE_BIAS, AR_LSTM_OUTPUT_GATE_BIAS, AR_LSTM_OUTPUT_STATE,
    AR_LSTM_CELL_STATE};

int ar_lstm_parse(const ar_node_t *node, ar_lstm_t *l, char *msg, size_t msg_bytes) {
  memset(l, 0, sizeof *l);
  if (node->op != AR_OP_LSTM && node->op != AR_OP_UNIDIRECTIONAL_SEQUENCE_LSTM)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "not an LSTM operator");
  if ((node->n_inputs != AR_LSTM_MIN_INPUTS && node->n_inputs != AR_LSTM_MAX_INPUTS) || node->n_outputs != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "has %d inputs and %d outputs, expected %d or %d inputs "
                    "and 1 output", (int)node->n_inputs, (int)node->n_outputs, AR_LSTM_MIN_INPUTS,
                    AR_LSTM_MAX_INPUTS);
  for (int32_t i = 0; i < node->n_inputs; i++) l->t[i] = node->inputs[i];
  l->output = node->outputs[0];
  if (!l->output) return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "output 0 is missing");
  for (size_t k = 0; k < sizeof required / sizeof required[0]; k++)
    if (!l->t[required[k]])
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "%s (input %d) is missing", input_names[required[k]],
                      (int)required[k]);
  l->sequence = node->op == AR_OP_UNIDIRECTIONAL_SEQUENCE_LSTM;
  const ar_lstm_options_t *o = node->options ? &node->options->lstm : NULL;
  l->activation = o ? o->activation : AR_ACT_NONE;
  l->cell_clip = o ? o->cell_clip : 0.0f;
  l->proj_clip = o ? o->proj_clip : 0.0f;
  l->time_major = l->sequence && o && o->time_major;
  if (!l->sequence && o && o->kernel_type != 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "kernel_type %d (BASIC) is not supported, only the "
                    "full kernel", (int)o->kernel_type);
  if (l->sequence && o && o->diagonal_recurrent_tensors)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "diagonal_recurrent_tensors is not supported");
  if (l->activation == AR_ACT_RELU_N1_TO_1)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "fused activation RELU_N1_TO_1 (TFLite's LSTM "
                    "has no such cell activation)");
  l->dtype = l->t[AR_LSTM_INPUT]->dtype;
  l->n_intermediates = node->n_intermediates;
  l->intermediates = node->intermediates;

  /* Which variant: the optional inputs that go together. */
  l->cifg = !l->t[AR_LSTM_INPUT_TO_INPUT_W];
  if (l->cifg) {
    static const int32_t gone[] = {AR_LSTM_RECURRENT_TO_INPUT_W, AR_LSTM_CELL_TO_INPUT_W,
                                   AR_LSTM_INPUT_GATE_BIAS, AR_LSTM_INPUT_LN};
    for (size_t k = 0; k < sizeof gone / sizeof gone[0]; k++)
      if (l->t[gone[k]])
        return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "%s (input %d) is given but input_to_input_weights "
                        "is not (CIFG: no input gate)", input_names[gone[k]], (int)gone[k]);
  } else {
    static const int32_t need[] = {AR_LSTM_RECURRENT_TO_INPUT_W, AR_LSTM_INPUT_GATE_BIAS};
    for (size_t k = 0; k < sizeof need / sizeof need[0]; k++)
      if (!l->t[need[k]])
        return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "%s (input %d) is missing while "
                        "input_to_input_weights is given", input_names[need[k]], (int)need[k]);
  }
  const bool cf = l->t[AR_LSTM_CELL_TO_FORGET_W] != NULL, co = l->t[AR_LSTM_CELL_TO_OUTPUT_W] != NULL;
  const bool ci = l->t[AR_LSTM_CELL_TO_INPUT_W] != NULL;
  if (cf != co || (!l->cifg && ci != cf))
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "peephole weights: cell_to_input %s, cell_to_forget %s, "
                    "cell_to_output %s (all or none; without input gate, forget and output)",
                    ci ? "given" : "absent", cf ? "given" : "absent", co ? "given" : "absent");
  l->peephole = cf;
  l->projection = l->t[AR_LSTM_PROJECTION_W] != NULL;
  l->projection_bias = l->t[AR_LSTM_PROJECTION_BIAS] != NULL;
  if (l->projection_bias && !l->projection)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "projection_bias (input 17) without projection_weights");
  const bool lf = l->t[AR_LSTM_FORGET_LN] != NULL, lc = l->t[AR_LSTM_CELL_LN] != NULL;
  const bool lo = l->t[AR_LSTM_OUTPUT_LN] != NULL, li = l->t[AR_LSTM_INPUT_LN] != NULL;
  if (lf != lc || lf != lo || (!l->cifg && li != lf))
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "layer-norm coefficients: input %s, forget %s, cell %s, "
                    "output %s (all or none; without input, the other three)", li ? "given" : "absent",
                    lf ? "given" : "absent", lc ? "given" : "absent", lo ? "given" : "absent");
  l->layer_norm = lf;

  /* Sizes. */
  const ar_tview_t *in = l->t[AR_LSTM_INPUT];
  char a[96];
  if (l->sequence) {
    if (in->rank != 3)
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input is %s, expected rank 3 ([%s, n_input])",
                      ar_k_dims_str(a, sizeof a, in->rank, in->dims),
                      l->time_major ? "max_time, batch" : "batch, max_time");
    l->max_time = in->dims[l->time_major ? 0 : 1];
    l->n_batch = in->dims[l->time_major ? 1 : 0];
    l->n_input = in->dims[2];
  } else {
    if (in->rank != 2)
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input is %s, expected rank 2 ([batch, n_input])",
                      ar_k_dims_str(a, sizeof a, in->rank, in->dims));
    l->max_time = 1;
    l->n_batch = in->dims[0];
    l->n_input = in->dims[1];
  }
  const ar_tview_t *w = l->t[AR_LSTM_INPUT_TO_OUTPUT_W], *r = l->t[AR_LSTM_RECURRENT_TO_OUTPUT_W];
  if (w->rank != 2 || r->rank != 2)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input_to_output_weights and recurrent_to_output_weights "
                    "must be rank 2 (are rank %d, %d)", (int)w->rank, (int)r->rank);
  l->n_cell = w->dims[0];
  l->n_output = r->dims[1];
  const int32_t nb = l->n_batch, ni = l->n_input, nc = l->n_cell, no = l->n_output;
  int rc;
  for (int32_t i = AR_LSTM_INPUT_TO_INPUT_W; i <= AR_LSTM_INPUT_TO_OUTPUT_W; i++)
    if (l->t[i] && (rc = need_shape(node, l, i, 2, nc, ni, msg, msg_bytes))) return rc;
  for (int32_t i = AR_LSTM_RECURRENT_TO_INPUT_W; i <= AR_LSTM_RECURRENT_TO_OUTPUT_W; i++)
    if (l->t[i] && (rc = need_shape(node, l, i, 2, nc, no, msg, msg_bytes))) return rc;
  for (int32_t i = AR_LSTM_CELL_TO_INPUT_W; i <= AR_LSTM_OUTPUT_GATE_BIAS; i++)
    if (l->t[i] && (rc = need_shape(node, l, i, 1, nc, 0, msg, msg_bytes))) return rc;
  for (int32_t i = AR_LSTM_INPUT_LN; i <= AR_LSTM_OUTPUT_LN; i++)
    if (l->t[i] && (rc = need_shape(node, l, i, 1, nc, 0, msg, msg_bytes))) return rc;
  if (l->projection) {
    if ((rc = need_shape(node, l, AR_LSTM_PROJECTION_W, 2, no, nc, msg, msg_bytes))) return rc;
    if (l->projection_bias && (rc = need_shape(node, l, AR_LSTM_PROJECTION_BIAS, 1, no, 0, msg, msg_bytes)))
      return rc;
  } else if (no != nc) {
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "n_output %d differs from n_cell %d without "
                    "projection_weights", (int)no, (int)nc);
  }
  if ((rc = need_shape(node, l, AR_LSTM_OUTPUT_STATE, 2, nb, no, msg, msg_bytes)) ||
      (rc = need_shape(node, l, AR_LSTM_CELL_STATE, 2, nb, nc, msg, msg_bytes)))
    return rc;
  if (l->t[AR_LSTM_OUTPUT_STATE]->is_constant || l->t[AR_LSTM_CELL_STATE]->is_constant)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "output_state and cell_state must be variable tensors, "
                    "not constants");
  int32_t od[3];
  if (l->sequence) {
    od[0] = in->dims[0];
    od[1] = in->dims[1];
    od[2] = no;
    return ar_k_check_output_shape(node, 3, od, msg, msg_bytes);
  }
  od[0] = nb;
  od[1] = no;
  return ar_k_check_output_shape(node, 2, od, msg, msg_bytes);
}

/* ---------------------------------------------------------------- the kernels */

static int lstm_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  ar_lstm_t l;
  int rc = ar_lstm_parse(node, &l, msg, msg_bytes);
  if (rc) return rc;
  node->scratch_bytes = 0;
  node->state_bytes = 0;
#ifdef AR_HAVE_LSTM_INT
  if (l.dtype != AR_DTYPE_FLOAT32) return ar_k_lstm_int_prepare(node, &l, msg, msg_bytes);
#endif
  return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s input: no LSTM kernel yet",
                  ar_dtype_name(l.dtype));
}

static void lstm_init(ar_node_t *node) {
#ifdef AR_HAVE_LSTM_INT
  if (node->inputs[AR_LSTM_INPUT]->dtype != AR_DTYPE_FLOAT32) ar_k_lstm_int_init(node);
#else
  (void)node;
#endif
}

static void lstm_eval(const ar_node_t *node) {
#ifdef AR_HAVE_LSTM_INT
  if (node->inputs[AR_LSTM_INPUT]->dtype != AR_DTYPE_FLOAT32) ar_k_lstm_int_eval(node);
#else
  (void)node;
#endif
}

/* TFLite UNIDIRECTIONAL_SEQUENCE_LSTM (builtin 44) and LSTM (builtin 16, full kernel). */
static const ar_kernel_form_t lstm_forms[] = {
  AR_KF(1, 4, FLOAT32, FLOAT32),
};
const ar_kernel_t ar_kernel_unidirectional_sequence_lstm = {"UNIDIRECTIONAL_SEQUENCE_LSTM", lstm_prepare,
                                                            lstm_init, lstm_eval, AR_KSUPPORT(lstm_forms, 0, 2)};
const ar_kernel_t ar_kernel_lstm = {"LSTM", lstm_prepare, lstm_init, lstm_eval, AR_KSUPPORT(lstm_forms, 0, 2)};
