/* lstm.c - TFLite UNIDIRECTIONAL_SEQUENCE_LSTM and LSTM (full kernel), float32; the layout shared
 * with the integer kernels (ar_lstm_parse, kernels/lstm.h).
 *
 * Semantics source: TFLite UNIDIRECTIONAL_SEQUENCE_LSTM / LSTM, float (lstm_eval.cc EvalFloat and
 * LstmStepFloat). Per step, per batch row: each gate = bias + W_in * x + W_rec * h (+ peephole
 * .* c), with layer norm normalize(sum without bias) * coefficients + bias; input, forget and
 * output gates sigmoid, the cell gate the fused activation; c = f .* c + i .* g (CIFG: i = 1 - f),
 * clipped to +-cell_clip; the output gate sees the new c; h = o .* act(c), then projection
 * (+ bias, clipped to +-proj_clip) when given; the output row is h. Time-major ([time, batch, ..],
 * and the one-step LSTM) runs each step over every batch row; batch-major runs each batch row
 * through the whole sequence in turn, as TFLite does. Output state (input 18) and cell state
 * (input 19) are variable tensors updated in place, so the next invoke continues from them. The
 * four gates and the projection row live in planned scratch; eval allocates nothing.
 * TFLite quirks kept, both with activation NONE only: act(c) is never written, so h = o .* (cell
 * gate); and a cell gate whose step input is all zeros stays at its starting value (bias, or 0
 * with layer norm).
 * Hybrid forms (float input, integer weights) are refused; integer inputs go to the hook. */
#include <math.h>
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
  ar_k_state_follows_batch(node, AR_LSTM_OUTPUT_STATE, nb);
  ar_k_state_follows_batch(node, AR_LSTM_CELL_STATE, nb);
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

/* ---------------------------------------------------------------- float32 (TFLite lstm_eval.cc) */

/* What eval needs besides the views (node state, written at init). */
typedef struct {
  int32_t n_batch, max_time, n_input, n_cell, n_output;
  bool time_major, cifg, peephole, projection, projection_bias, layer_norm;
  ar_activation_t activation;
  float cell_clip, proj_clip;
} lstm_f32_t;

static void lstm_f32_of(const ar_lstm_t *l, lstm_f32_t *s) {
  memset(s, 0, sizeof *s);
  s->n_batch = l->n_batch, s->max_time = l->max_time, s->n_input = l->n_input;
  s->n_cell = l->n_cell, s->n_output = l->n_output;
  s->time_major = !l->sequence || l->time_major;
  s->cifg = l->cifg, s->peephole = l->peephole, s->projection = l->projection;
  s->projection_bias = l->projection_bias, s->layer_norm = l->layer_norm;
  s->activation = l->activation, s->cell_clip = l->cell_clip, s->proj_clip = l->proj_clip;
}

static int lstm_f32_prepare(ar_node_t *node, const ar_lstm_t *l, char *msg, size_t msg_bytes) {
  for (int32_t i = 0; i < AR_LSTM_MAX_INPUTS; i++) {
    const ar_tview_t *t = l->t[i];
    if (t && t->dtype != AR_DTYPE_FLOAT32)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s (input %d) is %s with a FLOAT32 input%s",
                      input_names[i], (int)i, ar_dtype_name(t->dtype),
                      t->dtype == AR_DTYPE_INT8 || t->dtype == AR_DTYPE_UINT8
                          ? " (hybrid LSTM, integer weights with float activations, is not supported)" : "");
  }
  if (l->output->dtype != AR_DTYPE_FLOAT32)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "output is %s with a FLOAT32 input",
                    ar_dtype_name(l->output->dtype));
  /* Scratch: the four gates of one step ([batch, n_cell] each; batch-major runs one batch row at a
   * time in the same bytes) and the accumulation row the output's projection starts from. */
  const uint64_t gates = 4ull * (uint64_t)l->n_batch * (uint64_t)l->n_cell;
  node->scratch_bytes = (gates + (uint64_t)l->n_batch * (uint64_t)l->n_output) * sizeof(float);
  node->state_bytes = sizeof(lstm_f32_t);
  return 0;
}

static void lstm_f32_init(ar_node_t *node) {
  ar_lstm_t l;
  if (ar_lstm_parse(node, &l, NULL, 0) != 0 || !node->state || node->state_bytes < sizeof(lstm_f32_t)) return;
  lstm_f32_of(&l, node->state);
}

static const float *fdata(const ar_node_t *node, int32_t i) {
  return i < node->n_inputs && node->inputs[i] ? (const float *)node->inputs[i]->data : NULL;
}

/* acc[b][r] += sum_k w[r][k] * x[b][k] (x rows `stride` floats apart). */
static void matvec_acc(const float *restrict w, int32_t rows, int32_t cols, const float *restrict x,
                       int32_t n_batch, int64_t x_stride, float *restrict acc) {
  for (int32_t b = 0; b < n_batch; b++) {
    const float *xb = x + b * x_stride;
    float *ab = acc + (int64_t)b * rows;
    for (int32_t r = 0; r < rows; r++) {
      const float *wr = w + (int64_t)r * cols;
      float sum = 0.0f;
      for (int32_t k = 0; k < cols; k++) sum += wr[k] * xb[k];
      ab[r] += sum;
    }
  }
}

static void sigmoid_vec(float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) x[i] = 1.0f / (1.0f + expf(-x[i]));
}

/* One gate of one step (TFLite CalculateLstmGateFloat): bias (0 with layer norm) + W_in * input +
 * W_rec * output_state (+ peephole .* cell_state), then layer norm (normalize, * coefficients,
 * + bias), then the activation (sigmoid when `sigmoid`, else the cell activation, NONE leaving
 * the values as they are). TFLite, with an all-zero input, skips the input product and ends the
 * sum in a second buffer that an activation NONE never copies back: the gate is then its
 * starting value (bias or 0) - kept, so that the cell gate of an activation-NONE LSTM matches. */
static void gate_f32(const lstm_f32_t *s, int32_t nb, const float *x, int64_t x_stride, bool x_zero,
                     const float *h, const float *c, const float *w_in, const float *w_rec,
                     const float *peep, const float *ln, const float *bias, bool sigmoid, float *gate) {
  const int32_t nc = s->n_cell;
  const int64_t n = (int64_t)nb * nc;
  for (int32_t b = 0; b < nb; b++)
    for (int32_t i = 0; i < nc; i++) gate[(int64_t)b * nc + i] = ln ? 0.0f : bias[i];
  if (x_zero && !sigmoid && s->activation == AR_ACT_NONE) return;
  if (!x_zero) matvec_acc(w_in, nc, s->n_input, x, nb, x_stride, gate);
  matvec_acc(w_rec, nc, s->n_output, h, nb, s->n_output, gate);
  if (peep)
    for (int64_t j = 0; j < n; j++) gate[j] += peep[j % nc] * c[j];
  if (ln) {
    for (int32_t b = 0; b < nb; b++) {
      float *g = gate + (int64_t)b * nc;
      float sum = 0.0f, sum_sq = 0.0f;
      for (int32_t i = 0; i < nc; i++) sum += g[i], sum_sq += g[i] * g[i];
      const float mean = sum / (float)nc, var = sum_sq / (float)nc - mean * mean;
      const float inv = var == 0.0f ? 1.0f / sqrtf(1e-8f) : 1.0f / sqrtf(var);
      for (int32_t i = 0; i < nc; i++) g[i] = (g[i] - mean) * inv * ln[i] + bias[i];
    }
  }
  if (sigmoid) sigmoid_vec(gate, n);
  else ar_apply_activation(gate, (size_t)n, s->activation);
}

static void clip_vec(float *x, int64_t n, float clip) {
  for (int64_t i = 0; i < n; i++) x[i] = x[i] > clip ? clip : x[i] < -clip ? -clip : x[i];
}

/* One step over nb batch rows (TFLite LstmStepFloat): x [nb, n_input] rows x_stride apart, h the
 * output state [nb, n_output], c the cell state [nb, n_cell], out rows out_stride apart. */
static void step_f32(const ar_node_t *node, const lstm_f32_t *s, int32_t nb, const float *x, int64_t x_stride,
                     float *h, float *c, float *out, int64_t out_stride, float *scratch) {
  const int32_t nc = s->n_cell, no = s->n_output;
  const int64_t n = (int64_t)nb * nc;
  float *ig = scratch, *fg = ig + n, *cg = fg + n, *og = cg + n, *proj = og + n;
  bool x_zero = true;
  for (int32_t b = 0; b < nb && x_zero; b++)
    for (int32_t k = 0; k < s->n_input && x_zero; k++) x_zero = x[b * x_stride + k] == 0.0f;
  const float *ln_i = NULL, *ln_f = NULL, *ln_c = NULL, *ln_o = NULL;
  if (s->layer_norm) {
    ln_i = fdata(node, AR_LSTM_INPUT_LN), ln_f = fdata(node, AR_LSTM_FORGET_LN);
    ln_c = fdata(node, AR_LSTM_CELL_LN), ln_o = fdata(node, AR_LSTM_OUTPUT_LN);
  }
  if (!s->cifg)
    gate_f32(s, nb, x, x_stride, x_zero, h, c, fdata(node, AR_LSTM_INPUT_TO_INPUT_W),
             fdata(node, AR_LSTM_RECURRENT_TO_INPUT_W), s->peephole ? fdata(node, AR_LSTM_CELL_TO_INPUT_W) : NULL,
             ln_i, fdata(node, AR_LSTM_INPUT_GATE_BIAS), true, ig);
  gate_f32(s, nb, x, x_stride, x_zero, h, c, fdata(node, AR_LSTM_INPUT_TO_FORGET_W),
           fdata(node, AR_LSTM_RECURRENT_TO_FORGET_W), s->peephole ? fdata(node, AR_LSTM_CELL_TO_FORGET_W) : NULL,
           ln_f, fdata(node, AR_LSTM_FORGET_GATE_BIAS), true, fg);
  gate_f32(s, nb, x, x_stride, x_zero, h, c, fdata(node, AR_LSTM_INPUT_TO_CELL_W),
           fdata(node, AR_LSTM_RECURRENT_TO_CELL_W), NULL, ln_c, fdata(node, AR_LSTM_CELL_GATE_BIAS), false, cg);
  /* Cell: c = f .* c + i .* g (CIFG: i = 1 - f), then the clip. */
  for (int64_t j = 0; j < n; j++) {
    const float i_gate = s->cifg ? 1.0f - fg[j] : ig[j];
    c[j] = fg[j] * c[j] + cg[j] * i_gate;
  }
  if (s->cell_clip > 0.0f) clip_vec(c, n, s->cell_clip);
  gate_f32(s, nb, x, x_stride, x_zero, h, c, fdata(node, AR_LSTM_INPUT_TO_OUTPUT_W),
           fdata(node, AR_LSTM_RECURRENT_TO_OUTPUT_W), s->peephole ? fdata(node, AR_LSTM_CELL_TO_OUTPUT_W) : NULL,
           ln_o, fdata(node, AR_LSTM_OUTPUT_GATE_BIAS), true, og);
  /* Output: o .* act(c) into the cell gate's bytes (TFLite: with activation NONE nothing is
   * written there, so the product takes the cell gate itself), then the projection (+ bias, clip)
   * or that product as it is. */
  if (s->activation != AR_ACT_NONE) {
    memcpy(cg, c, (size_t)n * sizeof(float));
    ar_apply_activation(cg, (size_t)n, s->activation);
  }
  for (int64_t j = 0; j < n; j++) cg[j] *= og[j];
  if (s->projection) {
    const float *pb = s->projection_bias ? fdata(node, AR_LSTM_PROJECTION_BIAS) : NULL;
    for (int32_t b = 0; b < nb; b++)
      for (int32_t k = 0; k < no; k++) proj[(int64_t)b * no + k] = pb ? pb[k] : 0.0f;
    matvec_acc(fdata(node, AR_LSTM_PROJECTION_W), no, nc, cg, nb, nc, proj);
    if (s->proj_clip > 0.0f) clip_vec(proj, (int64_t)nb * no, s->proj_clip);
    memcpy(h, proj, (size_t)nb * (size_t)no * sizeof(float));
  } else {
    memcpy(h, cg, (size_t)nb * (size_t)no * sizeof(float));
  }
  for (int32_t b = 0; b < nb; b++) memcpy(out + b * out_stride, h + (int64_t)b * no, (size_t)no * sizeof(float));
}

static void lstm_f32_eval(const ar_node_t *node) {
  const lstm_f32_t *s = node->state;
  const float *x = (const float *)node->inputs[AR_LSTM_INPUT]->data;
  float *h = node->inputs[AR_LSTM_OUTPUT_STATE]->data, *c = node->inputs[AR_LSTM_CELL_STATE]->data;
  float *out = node->outputs[0]->data;
  const int32_t nb = s->n_batch, ni = s->n_input, nc = s->n_cell, no = s->n_output;
  if (s->time_major) {   /* [time, batch, ...]: each step runs every batch row */
    for (int32_t t = 0; t < s->max_time; t++)
      step_f32(node, s, nb, x + (int64_t)t * nb * ni, ni, h, c, out + (int64_t)t * nb * no, no, node->scratch);
    return;
  }
  /* [batch, time, ...]: TFLite runs each batch row through the whole sequence in turn. */
  for (int32_t b = 0; b < nb; b++)
    for (int32_t t = 0; t < s->max_time; t++) {
      const int64_t row = (int64_t)b * s->max_time + t;
      step_f32(node, s, 1, x + row * ni, ni, h + (int64_t)b * no, c + (int64_t)b * nc, out + row * no, no,
               node->scratch);
    }
}

/* ---------------------------------------------------------------- the kernels */

static int lstm_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  ar_lstm_t l;
  int rc = ar_lstm_parse(node, &l, msg, msg_bytes);
  if (rc) return rc;
  node->scratch_bytes = 0;
  node->state_bytes = 0;
  if (l.dtype == AR_DTYPE_FLOAT32) return lstm_f32_prepare(node, &l, msg, msg_bytes);
#ifdef AR_HAVE_LSTM_INT
  return ar_k_lstm_int_prepare(node, &l, msg, msg_bytes);
#else
  return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s input: only the float32 LSTM is implemented",
                  ar_dtype_name(l.dtype));
#endif
}

static void lstm_init(ar_node_t *node) {
  if (node->inputs[AR_LSTM_INPUT]->dtype == AR_DTYPE_FLOAT32) {
    lstm_f32_init(node);
    return;
  }
#ifdef AR_HAVE_LSTM_INT
  ar_k_lstm_int_init(node);
#endif
}

static void lstm_eval(const ar_node_t *node) {
  if (node->inputs[AR_LSTM_INPUT]->dtype == AR_DTYPE_FLOAT32) {
    lstm_f32_eval(node);
    return;
  }
#ifdef AR_HAVE_LSTM_INT
  ar_k_lstm_int_eval(node);
#endif
}

/* TFLite UNIDIRECTIONAL_SEQUENCE_LSTM (builtin 44) and LSTM (builtin 16, full kernel). */
static const ar_kernel_form_t lstm_forms[] = {          /* LSTM: versions 1-4 */
  AR_KF(1, 4, FLOAT32, FLOAT32),
  AR_KF(1, 4, INT8, INT8),
};
static const ar_kernel_form_t seq_lstm_forms[] = {      /* UNIDIRECTIONAL_SEQUENCE_LSTM: 1-3 */
  AR_KF(1, 3, FLOAT32, FLOAT32),
  AR_KF(1, 3, INT8, INT8),
};
const ar_kernel_t ar_kernel_unidirectional_sequence_lstm = {"UNIDIRECTIONAL_SEQUENCE_LSTM", lstm_prepare,
                                                            lstm_init, lstm_eval, AR_KSUPPORT(seq_lstm_forms, 0, 2)};
const ar_kernel_t ar_kernel_lstm = {"LSTM", lstm_prepare, lstm_init, lstm_eval, AR_KSUPPORT(lstm_forms, 0, 2)};
