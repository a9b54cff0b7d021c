/* lstm_int.c - the integer UNIDIRECTIONAL_SEQUENCE_LSTM / LSTM of TFLite's builtin kernel, the
 * "8x8_16" form: int8 input, output and output state, int16 cell state, int8 weights, int32 gate
 * biases (kernels/lstm.h gives the 24-input layout; kernels/lstm.c hands a node whose input 0 is
 * not float32 to the three ar_k_lstm_int_* functions here).
 *
 * The arithmetic is TFLite's (lstm_eval.cc EvalInteger8x8_16 over its portable tensor_utils, which
 * the x86 build also runs), reproduced so that outputs match byte for byte:
 *   - prepare (TFLite's PopulateQuantizedLstmParams8x8_16): the gates are Q3.12 (scale 2^-12);
 *     input-to-gate scale = s_w * s_input / 2^-12 and recurrent-to-gate = s_w * s_output_state /
 *     2^-12, computed in float as TFLite does, then QuantizeMultiplier; the hidden scale
 *     2^-15 / s_hidden * 2^-15 with s_hidden, zp_hidden from intermediate 4; the cell state's
 *     scale must be 2^cell_scale with cell_scale <= -9; cell_clip / proj_clip quantized by the
 *     cell state's / output state's scale. Each gate's bias is folded with the zero points:
 *     input_bias[g] = bias[g] - zp_input * rowsum(W_input[g]), recurrent_bias[g] =
 *     -zp_output_state * rowsum(W_recurrent[g]), projection_bias += zp_hidden * rowsum(W_proj)
 *     (at init, kept in node->state).
 *   - a gate: int16 gate = sat16(mbqm(W_in . x + input_bias)) then += mbqm(W_rec . h +
 *     recurrent_bias) saturating, the peephole term sat16(gate + mbqm(w_c * c)), then gemmlowp's
 *     16-bit fixed-point logistic (Q3.12 in, Q0.15 out) or, for the cell gate, tanh.
 *   - the cell: c = rdiv(f * c, 2^15) + rdiv(i * g, 2^(30 + cell_scale)) saturating (CIFG:
 *     i = 32767 - f), clipped; the output: h = sat8(mbqm(o * tanh(c), hidden scale) + zp_hidden)
 *     (tanh with 15 + cell_scale integer bits), or with projection sat8(mbqm(W_proj . (that - zp)
 *     + projection_bias) + zp_output_state), clipped.
 * Layer normalization (inputs 20..23, int16 coefficients; TFLite's use_layer_norm): each gate's
 * scale before the norm is intermediate 0..3's (not Q3.12), so input-, recurrent- and peephole-to-
 * gate scales divide by it; the gate biases are not folded into the matmul but added after the
 * norm. Per batch row of a gate (portable ApplyLayerNorm): mean = sum * 1024 / n, variance =
 * (sum_sq * (2^20 / n) - mean^2) / 2^20 (or the guard max(1, (int)(10000 * s_coeff)) when < 1),
 * its inverse square root as a quantized multiplier (GetInvSqrtQuantizedMultiplierExp: gemmlowp
 * Q3.28 Newton-Raphson, 5 steps), then per element mbqm(1024 x - mean, inv_std) * coeff + bias
 * (int32, wrapping), divided by 1024 rounding half away from zero, and mbqm by s_coeff with 12
 * more bits of left shift (back to Q3.12) saturated to int16, before the gate's activation.
 */
#include <math.h>
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_qparams.h"
#include "kernels/ar_fx16.h"
#include "kernels/ar_quant.h"
#include "kernels/lstm.h"

/* ---- the parameters prepare works out ---- */

enum { G_IN = 0, G_FORGET = 1, G_CELL = 2, G_OUT = 3 };

typedef struct lstmq {
  int32_t n_batch, max_time, n_input, n_cell, n_output;
  bool time_major, cifg, peephole, projection;
  int32_t cell_scale;                    /* the cell state's scale is 2^cell_scale */
  int16_t cell_clip;
  int8_t proj_clip;
  int32_t in_m[4], rec_m[4], cell_m[4];  /* per gate: input-, recurrent-, peephole-to-gate */
  int in_s[4], rec_s[4], cell_s[4];
  int32_t hidden_m, proj_m;
  int hidden_s, proj_s;
  int32_t hidden_zp, output_state_zp, input_zp;
  bool layer_norm;
  int32_t ln_m[4], ln_guard[4];          /* per gate: the coefficients' scale, the variance guard */
  int ln_s[4];
} lstmq_t;

/* node->state: lstmq_t, then int32 in_bias[4][n_cell], rec_bias[4][n_cell], proj_bias[n_output]. */
#define LSTMQ_HEAD ((sizeof(lstmq_t) + 15u) & ~(size_t)15u)

static int tensor_scale(const ar_node_t *node, const ar_tview_t *t, const char *what, float *scale, int32_t *zp,
                        char *msg, size_t msg_bytes) {
  int32_t unused;
  return ar_k_qparams(node, t, what, scale, zp ? zp : &unused, msg, msg_bytes);
}

static int lstmq_plan(const ar_node_t *node, const ar_lstm_t *l, lstmq_t *p, char *msg, size_t msg_bytes) {
  memset(p, 0, sizeof *p);
  int rc;
  for (int32_t i = 0; i < AR_LSTM_MAX_INPUTS; i++) {
    const ar_tview_t *t = l->t[i];
    if (!t || i == AR_LSTM_INPUT) continue;
    ar_dtype_t want = AR_DTYPE_INT8;
    if (i >= AR_LSTM_CELL_TO_INPUT_W && i <= AR_LSTM_CELL_TO_OUTPUT_W) want = AR_DTYPE_INT16;
    else if ((i >= AR_LSTM_INPUT_GATE_BIAS && i <= AR_LSTM_OUTPUT_GATE_BIAS) || i == AR_LSTM_PROJECTION_BIAS)
      want = AR_DTYPE_INT32;
    else if (i == AR_LSTM_CELL_STATE) want = AR_DTYPE_INT16;
    else if (i >= AR_LSTM_INPUT_LN && i <= AR_LSTM_OUTPUT_LN) want = AR_DTYPE_INT16;
    if ((rc = ar_k_check_dtype(node, t, ar_lstm_input_name(i), want, msg, msg_bytes))) return rc;
    if (i != AR_LSTM_OUTPUT_STATE && i != AR_LSTM_CELL_STATE && !t->is_constant)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s (input %d) must be a constant in the integer "
                      "LSTM (its zero-point terms are folded at load)", ar_lstm_input_name(i), (int)i);
  }
  if ((rc = ar_k_check_dtype(node, l->t[AR_LSTM_INPUT], "input 0", AR_DTYPE_INT8, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, l->output, "output 0", AR_DTYPE_INT8, msg, msg_bytes)))
    return rc;
  if (l->n_intermediates != 5 || !l->intermediates || !l->intermediates[4])
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "integer LSTM needs 5 intermediate tensors (the hidden "
                    "state's scale is intermediate 4); it has %d", (int)l->n_intermediates);
  if (l->peephole && l->n_output != l->n_cell)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "integer LSTM with peephole and projection to %d "
                    "outputs from %d cells (TFLite's kernel reads n_output peephole weights per batch)",
                    (int)l->n_output, (int)l->n_cell);
  p->n_batch = l->n_batch;
  p->max_time = l->max_time;
  p->n_input = l->n_input;
  p->n_cell = l->n_cell;
  p->n_output = l->n_output;
  p->time_major = l->time_major;
  p->cifg = l->cifg;
  p->peephole = l->peephole;
  p->projection = l->projection;
  p->layer_norm = l->layer_norm;

  float s_in = 1, s_os = 1, s_cs = 1, s_hidden = 1, s_out = 1;
  int32_t zp_cs, zp_out;
  if ((rc = tensor_scale(node, l->t[AR_LSTM_INPUT], "input 0", &s_in, &p->input_zp, msg, msg_bytes)) ||
      (rc = tensor_scale(node, l->t[AR_LSTM_OUTPUT_STATE], "output_state", &s_os, &p->output_state_zp, msg,
                         msg_bytes)) ||
      (rc = tensor_scale(node, l->t[AR_LSTM_CELL_STATE], "cell_state", &s_cs, &zp_cs, msg, msg_bytes)) ||
      (rc = tensor_scale(node, l->intermediates[4], "intermediate 4 (the hidden state)", &s_hidden, &p->hidden_zp,
                         msg, msg_bytes)) ||
      (rc = tensor_scale(node, l->output, "output 0", &s_out, &zp_out, msg, msg_bytes)))
    return rc;
  /* TFLite's CheckedLog2: the cell state's scale is a power of two (to 1e-3 in log2). */
  const float log2_cs = logf(s_cs) * (1.0f / logf(2.0f));
  const float log2_rounded = roundf(log2_cs);
  p->cell_scale = (int32_t)log2_rounded;
  if (fabsf(log2_cs - log2_rounded) >= 1e-3f || p->cell_scale > -9)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "cell_state scale %g is not a power of two at most "
                    "2^-9 (TFLite's integer LSTM needs one)", (double)s_cs);

  /* The gates' scale: Q3.12 without layer norm, intermediate 0..3's with it. Float arithmetic, as
   * TFLite's prepare. */
  float gate_scales[4] = {1.0f / 4096.0f, 1.0f / 4096.0f, 1.0f / 4096.0f, 1.0f / 4096.0f};
  static const int ln_i[4] = {AR_LSTM_INPUT_LN, AR_LSTM_FORGET_LN, AR_LSTM_CELL_LN, AR_LSTM_OUTPUT_LN};
  static const int bias_i[4] = {AR_LSTM_INPUT_GATE_BIAS, AR_LSTM_FORGET_GATE_BIAS, AR_LSTM_CELL_GATE_BIAS,
                                AR_LSTM_OUTPUT_GATE_BIAS};
  static const char *const inter_name[4] = {"intermediate 0 (the input gate before layer norm)",
                                            "intermediate 1 (the forget gate before layer norm)",
                                            "intermediate 2 (the cell gate before layer norm)",
                                            "intermediate 3 (the output gate before layer norm)"};
  if (p->layer_norm)
    for (int g = 0; g < 4; g++) {
      if (g == G_IN && p->cifg) continue;
      if (!l->intermediates[g])
        return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "integer LSTM with layer normalization needs %s",
                        inter_name[g]);
      if (!l->t[bias_i[g]])
        return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "integer LSTM with layer normalization needs %s "
                        "(input %d, added after the norm)", ar_lstm_input_name(bias_i[g]), (int)bias_i[g]);
      float s_ln = 1;
      if ((rc = tensor_scale(node, l->intermediates[g], inter_name[g], &gate_scales[g], NULL, msg, msg_bytes)) ||
          (rc = tensor_scale(node, l->t[ln_i[g]], ar_lstm_input_name(ln_i[g]), &s_ln, NULL, msg, msg_bytes)))
        return rc;
      ar_quantize_multiplier((double)s_ln, &p->ln_m[g], &p->ln_s[g]);
      const int32_t guard = (int32_t)(10000.0f * s_ln);
      p->ln_guard[g] = guard > 1 ? guard : 1;
    }
  static const int in_w[4] = {AR_LSTM_INPUT_TO_INPUT_W, AR_LSTM_INPUT_TO_FORGET_W, AR_LSTM_INPUT_TO_CELL_W,
                              AR_LSTM_INPUT_TO_OUTPUT_W};
  static const int rec_w[4] = {AR_LSTM_RECURRENT_TO_INPUT_W, AR_LSTM_RECURRENT_TO_FORGET_W,
                               AR_LSTM_RECURRENT_TO_CELL_W, AR_LSTM_RECURRENT_TO_OUTPUT_W};
  static const int cell_w[4] = {AR_LSTM_CELL_TO_INPUT_W, AR_LSTM_CELL_TO_FORGET_W, -1, AR_LSTM_CELL_TO_OUTPUT_W};
  for (int g = 0; g < 4; g++) {
    if (g == G_IN && p->cifg) continue;
    float s_wi = 1, s_wr = 1;
    if ((rc = tensor_scale(node, l->t[in_w[g]], ar_lstm_input_name(in_w[g]), &s_wi, NULL, msg, msg_bytes)) ||
        (rc = tensor_scale(node, l->t[rec_w[g]], ar_lstm_input_name(rec_w[g]), &s_wr, NULL, msg, msg_bytes)))
      return rc;
    const float gate_scale = gate_scales[g];
    const float e_in = s_wi * s_in / gate_scale, e_rec = s_wr * s_os / gate_scale;
    ar_quantize_multiplier((double)e_in, &p->in_m[g], &p->in_s[g]);
    ar_quantize_multiplier((double)e_rec, &p->rec_m[g], &p->rec_s[g]);
    if (p->peephole && cell_w[g] >= 0) {
      float s_wc = 1;
      if ((rc = tensor_scale(node, l->t[cell_w[g]], ar_lstm_input_name(cell_w[g]), &s_wc, NULL, msg, msg_bytes)))
        return rc;
      /* std::pow(2, int) is a double in TFLite: the quotient is taken in double, then stored to a
       * float (exact either way when the gate scale is 2^-12). */
      const float e_cell = (float)(ldexp(1.0, (int)p->cell_scale) * (double)s_wc / (double)gate_scale);
      ar_quantize_multiplier((double)e_cell, &p->cell_m[g], &p->cell_s[g]);
    }
  }
  const float e_hidden = (float)(pow(2.0, -15) / (double)s_hidden * pow(2.0, -15));
  ar_quantize_multiplier((double)e_hidden, &p->hidden_m, &p->hidden_s);
  if (p->projection) {
    float s_proj = 1;
    if ((rc = tensor_scale(node, l->t[AR_LSTM_PROJECTION_W], "projection_weights", &s_proj, NULL, msg, msg_bytes)))
      return rc;
    const float e_proj = s_proj * s_hidden / s_os;
    ar_quantize_multiplier((double)e_proj, &p->proj_m, &p->proj_s);
  }
  if (l->cell_clip > 0.0f) {
    float c = fminf(fmaxf(l->cell_clip / s_cs, -32768.0f), 32767.0f);
    p->cell_clip = (int16_t)c;
  }
  if (l->proj_clip > 0.0f && p->projection) {
    float c = fminf(fmaxf(l->proj_clip / s_os, -128.0f), 127.0f);
    p->proj_clip = (int8_t)c;
  }
  return 0;
}

static uint64_t lstmq_state_bytes(const lstmq_t *p) {
  return LSTMQ_HEAD + (8u * (uint64_t)p->n_cell + (uint64_t)p->n_output) * sizeof(int32_t);
}

int ar_k_lstm_int_prepare(ar_node_t *node, const ar_lstm_t *l, char *msg, size_t msg_bytes) {
  lstmq_t p;
  int rc = lstmq_plan(node, l, &p, msg, msg_bytes);
  if (rc) return rc;
  node->state_bytes = lstmq_state_bytes(&p);
  /* Scratch: four int16 gates, the int16 tanh of the cell, the int8 hidden state (projection),
   * each batch * n_cell. */
  const uint64_t bc = (uint64_t)p.n_batch * (uint64_t)p.n_cell;
  node->scratch_bytes = 5u * bc * sizeof(int16_t) + ((bc + 15u) & ~(uint64_t)15u);
  return 0;
}

/* bias[r] (or 0) + zp * rowsum(w[r]) for each of `rows` rows of `cols` int8 weights. */
static void fold_bias(int32_t *out, const int32_t *bias, const int8_t *w, int32_t rows, int32_t cols, int32_t zp) {
  for (int32_t r = 0; r < rows; r++) {
    uint32_t v = bias ? (uint32_t)bias[r] : 0u;
    if (zp != 0) {
      int32_t sum = 0;
      for (int32_t c = 0; c < cols; c++) sum += w[(int64_t)r * cols + c];
      v += (uint32_t)sum * (uint32_t)zp;
    }
    out[r] = (int32_t)v;
  }
}

void ar_k_lstm_int_init(ar_node_t *node) {
  ar_lstm_t l;
  char unused[8];
  if (ar_lstm_parse(node, &l, unused, sizeof unused) != 0) return;
  lstmq_t p;
  if (lstmq_plan(node, &l, &p, unused, sizeof unused) != 0) return;
  if (!node->state || node->state_bytes < lstmq_state_bytes(&p)) return;
  memcpy(node->state, &p, sizeof p);
  int32_t *in_bias = (int32_t *)((uint8_t *)node->state + LSTMQ_HEAD);
  int32_t *rec_bias = in_bias + 4 * (int64_t)p.n_cell, *proj_bias = rec_bias + 4 * (int64_t)p.n_cell;
  static const int in_w[4] = {AR_LSTM_INPUT_TO_INPUT_W, AR_LSTM_INPUT_TO_FORGET_W, AR_LSTM_INPUT_TO_CELL_W,
                              AR_LSTM_INPUT_TO_OUTPUT_W};
  static const int rec_w[4] = {AR_LSTM_RECURRENT_TO_INPUT_W, AR_LSTM_RECURRENT_TO_FORGET_W,
                               AR_LSTM_RECURRENT_TO_CELL_W, AR_LSTM_RECURRENT_TO_OUTPUT_W};
  static const int bias_i[4] = {AR_LSTM_INPUT_GATE_BIAS, AR_LSTM_FORGET_GATE_BIAS, AR_LSTM_CELL_GATE_BIAS,
                                AR_LSTM_OUTPUT_GATE_BIAS};
  for (int g = 0; g < 4; g++) {
    int32_t *ib = in_bias + g * (int64_t)p.n_cell, *rb = rec_bias + g * (int64_t)p.n_cell;
    if (g == G_IN && p.cifg) {
      memset(ib, 0, (size_t)p.n_cell * sizeof(int32_t));
      memset(rb, 0, (size_t)p.n_cell * sizeof(int32_t));
      continue;
    }
    /* With layer norm the bias is added after the norm, not folded here. */
    const ar_tview_t *b = p.layer_norm ? NULL : l.t[bias_i[g]];
    fold_bias(ib, b ? b->data : NULL, l.t[in_w[g]]->data, p.n_cell, p.n_input, -p.input_zp);
    fold_bias(rb, NULL, l.t[rec_w[g]]->data, p.n_cell, p.n_output, -p.output_state_zp);
  }
  if (p.projection) {
    const ar_tview_t *pb = l.t[AR_LSTM_PROJECTION_BIAS];
    fold_bias(proj_bias, pb ? pb->data : NULL, l.t[AR_LSTM_PROJECTION_W]->data, p.n_output, p.n_cell, p.hidden_zp);
  }
}

/* TFLite's MatrixBatchVectorMultiplyAccumulate of the integer LSTM: out[b][r] = sat(mbqm(bias[r] +
 * W[r] . x[b]) + zp + out[b][r]) to int16 (gates) or int8 (projection). */
static void mbva16(const int8_t *x, const int32_t *bias, const int8_t *w, int32_t m, int s, int32_t nb, int32_t cols,
                   int32_t rows, int16_t *out) {
  for (int32_t b = 0; b < nb; b++)
    for (int32_t r = 0; r < rows; r++) {
      uint32_t acc = (uint32_t)bias[r];
      const int8_t *wr = w + (int64_t)r * cols, *xb = x + (int64_t)b * cols;
      for (int32_t c = 0; c < cols; c++) acc += (uint32_t)((int32_t)xb[c] * (int32_t)wr[c]);
      int32_t v = ar_mbqm((int32_t)acc, m, s) + out[(int64_t)b * rows + r];
      out[(int64_t)b * rows + r] = (int16_t)(v > INT16_MAX ? INT16_MAX : v < INT16_MIN ? INT16_MIN : v);
    }
}

static void mbva8(const int8_t *x, const int32_t *bias, const int8_t *w, int32_t m, int s, int32_t nb, int32_t cols,
                  int32_t rows, int32_t zp, int8_t *out) {
  for (int32_t b = 0; b < nb; b++)
    for (int32_t r = 0; r < rows; r++) {
      uint32_t acc = (uint32_t)bias[r];
      const int8_t *wr = w + (int64_t)r * cols, *xb = x + (int64_t)b * cols;
      for (int32_t c = 0; c < cols; c++) acc += (uint32_t)((int32_t)xb[c] * (int32_t)wr[c]);
      int32_t v = ar_mbqm((int32_t)acc, m, s) + zp + out[(int64_t)b * rows + r];
      out[(int64_t)b * rows + r] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
    }
}

/* TFLite's portable ApplyLayerNorm over nb rows of n int16 gate values, in place. */
static void layer_norm16(int16_t *gate, const int16_t *coeff, const int32_t *bias, int32_t m, int s, int32_t guard,
                         int32_t nb, int32_t n) {
  for (int32_t b = 0; b < nb; b++) {
    int16_t *row = gate + (int64_t)b * n;
    int64_t sum = 0, sum_sq = 0;
    for (int32_t j = 0; j < n; j++) {
      sum += row[j];
      sum_sq += (int32_t)row[j] * row[j];
    }
    const int32_t mean = (int32_t)(sum * 1024 / n);
    const int64_t variance = sum_sq * ((1 << 20) / n) - (int64_t)mean * mean;
    int32_t v = (int32_t)(variance / (1 << 20));
    if (v < 1) v = guard;
    int32_t inv_m;
    int inv_s;
    ar_inv_sqrt_multiplier(v, &inv_m, &inv_s);
    for (int32_t j = 0; j < n; j++) {
      const int32_t shifted = (int32_t)((uint32_t)row[j] * 1024u - (uint32_t)mean);
      const int32_t rescaled = ar_mbqm(shifted, inv_m, inv_s);
      /* int32 arithmetic in TFLite (wraps), widened afterwards. */
      const int64_t v3 = (int32_t)((uint32_t)rescaled * (uint32_t)(int32_t)coeff[j] + (uint32_t)bias[j]);
      const int32_t v4 = (int32_t)((v3 > 0 ? v3 + 512 : v3 - 512) / 1024);
      const int32_t v5 = ar_mbqm(v4, m, s + 12);
      row[j] = (int16_t)(v5 > INT16_MAX ? INT16_MAX : v5 < INT16_MIN ? INT16_MIN : v5);
    }
  }
}

typedef struct lstmq_run {
  const lstmq_t *p;
  const int8_t *w_in[4], *w_rec[4], *w_proj;
  const int16_t *w_cell[4], *ln_coeff[4];
  const int32_t *ln_bias[4];
  const int32_t *in_bias, *rec_bias, *proj_bias;
  int16_t *gate[4], *tanh_c;
  int8_t *hidden;
} lstmq_run_t;

/* One time step over nb batch rows: x [nb, n_input], h [nb, n_output] (int8, updated), c [nb,
 * n_cell] (int16, updated), out [nb, n_output]. */
static void lstmq_step(const lstmq_run_t *r, const int8_t *x, int32_t nb, int8_t *h, int16_t *c, int8_t *out) {
  const lstmq_t *p = r->p;
  const int32_t nc = p->n_cell, n = nb * nc;
  for (int g = 0; g < 4; g++) {
    if (g == G_IN && p->cifg) continue;
    if (g == G_OUT) {
      /* The cell update comes before the output gate (whose peephole reads the new cell). */
      int16_t *f = r->gate[G_FORGET], *cg = r->gate[G_CELL];
      for (int32_t i = 0; i < n; i++) c[i] = (int16_t)ar_rdivpot((int32_t)f[i] * c[i], 15);
      const int sh = 30 + p->cell_scale;
      for (int32_t i = 0; i < n; i++) {
        int16_t ig = p->cifg ? (int16_t)(INT16_MAX - f[i]) : r->gate[G_IN][i];
        int16_t prod = (int16_t)ar_rdivpot((int32_t)ig * cg[i], sh);
        int32_t sum = (int32_t)c[i] + prod;
        c[i] = (int16_t)(sum > INT16_MAX ? INT16_MAX : sum < INT16_MIN ? INT16_MIN : sum);
        if (p->cell_clip > 0) c[i] = c[i] > p->cell_clip ? p->cell_clip : c[i] < -p->cell_clip ? -p->cell_clip : c[i];
      }
    }
    int16_t *gate = r->gate[g];
    memset(gate, 0, (size_t)n * sizeof(int16_t));
    mbva16(x, r->in_bias + g * (int64_t)nc, r->w_in[g], p->in_m[g], p->in_s[g], nb, p->n_input, nc, gate);
    mbva16(h, r->rec_bias + g * (int64_t)nc, r->w_rec[g], p->rec_m[g], p->rec_s[g], nb, p->n_output, nc, gate);
    if (p->peephole && g != G_CELL)
      for (int32_t i = 0; i < n; i++) {
        int32_t v = ar_mbqm((int32_t)r->w_cell[g][i % nc] * c[i], p->cell_m[g], p->cell_s[g]) + gate[i];
        gate[i] = (int16_t)(v > INT16_MAX ? INT16_MAX : v < INT16_MIN ? INT16_MIN : v);
      }
    if (p->layer_norm)
      layer_norm16(gate, r->ln_coeff[g], r->ln_bias[g], p->ln_m[g], p->ln_s[g], p->ln_guard[g], nb, nc);
    if (g == G_CELL)
      for (int32_t i = 0; i < n; i++) gate[i] = ar_fx16_tanh(gate[i], 3);
    else
      for (int32_t i = 0; i < n; i++) gate[i] = ar_fx16_logistic(gate[i], 3);
  }
  const int16_t *o = r->gate[G_OUT];
  for (int32_t i = 0; i < n; i++) r->tanh_c[i] = ar_fx16_tanh(c[i], 15 + p->cell_scale);
  if (p->projection) {
    for (int32_t i = 0; i < n; i++) {
      int32_t v = ar_mbqm((int32_t)o[i] * r->tanh_c[i], p->hidden_m, p->hidden_s) - p->hidden_zp;
      r->hidden[i] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
    }
    memset(h, 0, (size_t)nb * (size_t)p->n_output);
    mbva8(r->hidden, r->proj_bias, r->w_proj, p->proj_m, p->proj_s, nb, nc, p->n_output, p->output_state_zp, h);
    if (p->proj_clip > 0)
      for (int32_t i = 0; i < nb * p->n_output; i++)
        h[i] = h[i] > p->proj_clip ? p->proj_clip : h[i] < -p->proj_clip ? (int8_t)-p->proj_clip : h[i];
  } else {
    for (int32_t i = 0; i < n; i++) {
      int32_t v = ar_mbqm((int32_t)o[i] * r->tanh_c[i], p->hidden_m, p->hidden_s) + p->hidden_zp;
      h[i] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
    }
  }
  memcpy(out, h, (size_t)nb * (size_t)p->n_output);
}

void ar_k_lstm_int_eval(const ar_node_t *node) {
  const lstmq_t *p = node->state;
  const int32_t nc = p->n_cell, no = p->n_output, ni = p->n_input;
  lstmq_run_t r = {.p = p};
  r.in_bias = (const int32_t *)((const uint8_t *)node->state + LSTMQ_HEAD);
  r.rec_bias = r.in_bias + 4 * (int64_t)nc;
  r.proj_bias = r.rec_bias + 4 * (int64_t)nc;
  static const int in_w[4] = {AR_LSTM_INPUT_TO_INPUT_W, AR_LSTM_INPUT_TO_FORGET_W, AR_LSTM_INPUT_TO_CELL_W,
                              AR_LSTM_INPUT_TO_OUTPUT_W};
  static const int rec_w[4] = {AR_LSTM_RECURRENT_TO_INPUT_W, AR_LSTM_RECURRENT_TO_FORGET_W,
                               AR_LSTM_RECURRENT_TO_CELL_W, AR_LSTM_RECURRENT_TO_OUTPUT_W};
  static const int cell_w[4] = {AR_LSTM_CELL_TO_INPUT_W, AR_LSTM_CELL_TO_FORGET_W, -1, AR_LSTM_CELL_TO_OUTPUT_W};
  for (int g = 0; g < 4; g++) {
    if (g == G_IN && p->cifg) continue;
    r.w_in[g] = node->inputs[in_w[g]]->data;
    r.w_rec[g] = node->inputs[rec_w[g]]->data;
    if (p->peephole && cell_w[g] >= 0) r.w_cell[g] = node->inputs[cell_w[g]]->data;
    if (p->layer_norm) {
      static const int ln_i[4] = {AR_LSTM_INPUT_LN, AR_LSTM_FORGET_LN, AR_LSTM_CELL_LN, AR_LSTM_OUTPUT_LN};
      static const int bias_i[4] = {AR_LSTM_INPUT_GATE_BIAS, AR_LSTM_FORGET_GATE_BIAS, AR_LSTM_CELL_GATE_BIAS,
                                    AR_LSTM_OUTPUT_GATE_BIAS};
      r.ln_coeff[g] = node->inputs[ln_i[g]]->data;
      r.ln_bias[g] = node->inputs[bias_i[g]]->data;
    }
  }
  if (p->projection) r.w_proj = node->inputs[AR_LSTM_PROJECTION_W]->data;
  const int64_t bc = (int64_t)p->n_batch * nc;
  int16_t *s16 = node->scratch;
  for (int g = 0; g < 4; g++) r.gate[g] = s16 + g * bc;
  r.tanh_c = s16 + 4 * bc;
  r.hidden = (int8_t *)(s16 + 5 * bc);
  const int8_t *in = node->inputs[AR_LSTM_INPUT]->data;
  int8_t *h = node->inputs[AR_LSTM_OUTPUT_STATE]->data, *out = node->outputs[0]->data;
  int16_t *c = node->inputs[AR_LSTM_CELL_STATE]->data;
  if (p->time_major) {
    for (int32_t t = 0; t < p->max_time; t++)
      lstmq_step(&r, in + (int64_t)t * p->n_batch * ni, p->n_batch, h, c, out + (int64_t)t * p->n_batch * no);
  } else {
    for (int32_t b = 0; b < p->n_batch; b++)
      for (int32_t t = 0; t < p->max_time; t++) {
        const int64_t k = (int64_t)b * p->max_time + t;
        lstmq_step(&r, in + k * ni, 1, h + (int64_t)b * no, c + (int64_t)b * nc, out + k * no);
      }
  }
}
