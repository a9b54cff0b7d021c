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
 * the fused activation.
 *
 * Four forms, told apart by the dtypes (TFLite op versions 1-4):
 *   float    everything float32 (v1).
 *   hybrid   float32 input, bias, state and output; int8 weights_feature and weights_time with
 *            per-tensor scales (v2, v4 with asymmetric_quantize_inputs). TFLite's EvalHybridSVDF:
 *            each batch row of the input is quantized to int8 (symmetric: scale max|x| / 127; or
 *            asymmetric over [min(x, 0), max(x, 0)] with a nudged zero point), the feature product
 *            is an int32 dot product (less zero point * row sum) times input scale * weights scale,
 *            and the time product runs in float over weights_time dequantized once (at init).
 *   int16    int8 input and weights_feature, int16 weights_time and state, int32 bias, int8 output
 *            (v3): TFLite's builtin EvalIntegerSVDF. The newest state column is
 *            clamp_int16(mbqm(dot(weights_feature, input - input_zp), s_in * s_wf / s_state));
 *            the output is clamp_int8(mbqm(sum over rank of dot(weights_time, state) + bias,
 *            s_state * s_wt / s_out) + out_zp). The state's zero point is taken as 0 (TFLite's
 *            kernel assumes a symmetric state and ignores it).
 *   int8     as int16 but weights_time and state int8, the state's zero point added to the newest
 *            column before the clamp to int8 and subtracted in the time product: TFLite Micro's
 *            EvalIntegerSvdfReference<int8_t> (the TFLM keyword model; TFLite's builtin reads such
 *            a state as int16 and crashes on it).
 * The integer forms apply no activation beyond the rescale's clamp, as TFLite's kernels do: TFLite
 * requires RELU there yet never clamps at the output zero point (models put it at -128); arenad
 * takes RELU and NONE (the rescale is exactly NONE) and refuses the others.
 */
#include <math.h>
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_qparams.h"
#include "kernels/ar_quant.h"

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
  ar_k_state_follows_batch(node, 4, s->batch);
  if (st->dims[0] != s->batch || (int64_t)st->dims[1] != (int64_t)s->memory_size * s->num_filters)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "state shape [%d,%d], expected [%d,%d] (batch, memory_size "
                    "* num_filters)", (int)st->dims[0], (int)st->dims[1], (int)s->batch,
                    (int)(s->memory_size * s->num_filters));
  return 0;
}

typedef enum { SVDF_FLOAT, SVDF_HYBRID, SVDF_INT16, SVDF_INT8 } svdf_form_t;

/* What prepare works out and init keeps in node->state: the form, the integer rescales (m, shift)
 * and zero points; for the hybrid form, followed by weights_time dequantized (num_filters *
 * memory_size floats) and the row sums of weights_feature (num_filters int32). */
typedef struct svdf_state {
  svdf_form_t form;
  int32_t m1, m2;
  int s1, s2;
  int32_t in_zp, state_zp, out_zp;
  float wf_scale;
} svdf_state_t;

#define SVDF_STATE_HEAD ((sizeof(svdf_state_t) + 15u) & ~(size_t)15u)

static int svdf_form(const ar_node_t *node, svdf_form_t *form, char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0], *wf = node->inputs[1], *wt = node->inputs[2];
  const ar_tview_t *st = node->inputs[4];
  ar_dtype_t want_in, want_wt, want_bias, want_state, want_out;
  if (in->dtype == AR_DTYPE_FLOAT32 && wf->dtype == AR_DTYPE_FLOAT32) {
    *form = SVDF_FLOAT;
    want_in = want_wt = want_bias = want_state = want_out = AR_DTYPE_FLOAT32;
  } else if (in->dtype == AR_DTYPE_FLOAT32 && wf->dtype == AR_DTYPE_INT8) {
    *form = SVDF_HYBRID;
    want_in = want_bias = want_state = want_out = AR_DTYPE_FLOAT32;
    want_wt = AR_DTYPE_INT8;
  } else if (in->dtype == AR_DTYPE_INT8 && wf->dtype == AR_DTYPE_INT8) {
    *form = st->dtype == AR_DTYPE_INT8 ? SVDF_INT8 : SVDF_INT16;
    want_in = want_out = AR_DTYPE_INT8;
    want_wt = want_state = *form == SVDF_INT8 ? AR_DTYPE_INT8 : AR_DTYPE_INT16;
    want_bias = AR_DTYPE_INT32;
  } else {
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input %s with weights_feature %s: SVDF takes "
                    "float32 with float32 (float), float32 with int8 (hybrid) or int8 with int8 (integer)",
                    ar_dtype_name(in->dtype), ar_dtype_name(wf->dtype));
  }
  int rc;
  if ((rc = ar_k_check_dtype(node, in, "input 0", want_in, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, wt, "weights_time", want_wt, msg, msg_bytes)) ||
      (node->inputs[3] && (rc = ar_k_check_dtype(node, node->inputs[3], "bias", want_bias, msg, msg_bytes))) ||
      (rc = ar_k_check_dtype(node, st, "state", want_state, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", want_out, msg, msg_bytes)))
    return rc;
  return 0;
}

/* The form and the integer parameters (per-tensor quantization everywhere it is read). */
static int svdf_plan(const ar_node_t *node, svdf_state_t *p, char *msg, size_t msg_bytes) {
  memset(p, 0, sizeof *p);
  int rc = svdf_form(node, &p->form, msg, msg_bytes);
  if (rc || p->form == SVDF_FLOAT) return rc;
  const ar_tview_t *in = node->inputs[0], *wf = node->inputs[1], *wt = node->inputs[2];
  const ar_tview_t *st = node->inputs[4], *out = node->outputs[0];
  float s_in = 1, s_wf = 1, s_wt = 1, s_st = 1, s_out = 1;
  int32_t zp_unused;
  if ((rc = ar_k_qparams(node, wf, "weights_feature", &s_wf, &zp_unused, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, wt, "weights_time", &s_wt, &zp_unused, msg, msg_bytes)))
    return rc;
  p->wf_scale = s_wf;
  if (p->form == SVDF_HYBRID) return 0;
  if ((rc = ar_k_qparams(node, in, "input 0", &s_in, &p->in_zp, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, st, "state", &s_st, &p->state_zp, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, out, "output 0", &s_out, &p->out_zp, msg, msg_bytes)))
    return rc;
  if (p->form == SVDF_INT16) p->state_zp = 0;
  const ar_activation_t act = node->options->svdf.activation;
  if (act != AR_ACT_NONE && act != AR_ACT_RELU)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "fused activation %d with integer SVDF (TFLite's "
                    "integer kernel takes RELU and applies it as the output's clamp; NONE and RELU are taken)",
                    (int)act);
  /* TFLite computes both effective scales in double from the float scales. */
  ar_quantize_multiplier((double)s_in * (double)s_wf / (double)s_st, &p->m1, &p->s1);
  ar_quantize_multiplier((double)s_st * (double)s_wt / (double)s_out, &p->m2, &p->s2);
  return 0;
}

static int svdf_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 5, 5, 3, 1, msg, msg_bytes);
  if (rc) return rc;
  if (!node->inputs[4]) return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "input 4 (the state) is missing");
  svdf_state_t p;
  if ((rc = svdf_plan(node, &p, msg, msg_bytes))) return rc;
  svdf_shape_t s;
  if ((rc = svdf_shape(node, &s, msg, msg_bytes))) return rc;
  float lo, hi;
  bool post;
  if ((rc = ar_k_activation(node, node->options->svdf.activation, &lo, &hi, &post, msg, msg_bytes))) return rc;
  const int32_t od[2] = {s.batch, s.num_units};
  if ((rc = ar_k_check_output_shape(node, 2, od, msg, msg_bytes))) return rc;
  const uint64_t bf = (uint64_t)s.batch * (uint64_t)s.num_filters;
  switch (p.form) {
  case SVDF_FLOAT:
    node->scratch_bytes = bf * sizeof(float);
    node->state_bytes = sizeof p;
    break;
  case SVDF_HYBRID:
    /* scratch: the feature products (float) then the quantized input rows (int8) */
    node->scratch_bytes = bf * sizeof(float) + (uint64_t)s.batch * (uint64_t)s.input_size;
    node->state_bytes = SVDF_STATE_HEAD + (uint64_t)s.num_filters * (uint64_t)s.memory_size * sizeof(float) +
                        (uint64_t)s.num_filters * sizeof(int32_t);
    if (!node->inputs[1]->is_constant || !node->inputs[2]->is_constant)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "hybrid SVDF needs constant weights_feature and "
                      "weights_time (they are dequantized once)");
    break;
  case SVDF_INT16:
  case SVDF_INT8:
    node->scratch_bytes = bf * sizeof(int32_t);
    node->state_bytes = sizeof p;
    break;
  }
  return 0;
}

static void svdf_init(ar_node_t *node) {
  svdf_state_t p;
  if (svdf_plan(node, &p, NULL, 0) != 0) return;
  if (p.form != SVDF_HYBRID) {
    ar_k_store_state(node, &p, sizeof p);
    return;
  }
  svdf_shape_t s;
  char unused[8];
  if (svdf_shape(node, &s, unused, sizeof unused) != 0 || !node->state) return;
  const uint64_t nwt = (uint64_t)s.num_filters * (uint64_t)s.memory_size;
  if (node->state_bytes < SVDF_STATE_HEAD + nwt * sizeof(float) + (uint64_t)s.num_filters * sizeof(int32_t)) return;
  memcpy(node->state, &p, sizeof p);
  float *wtf = (float *)((uint8_t *)node->state + SVDF_STATE_HEAD);
  int32_t *row_sums = (int32_t *)(wtf + nwt);
  const int8_t *wt = node->inputs[2]->data, *wf = node->inputs[1]->data;
  float s_wt = node->inputs[2]->quant->scale[0];
  for (uint64_t i = 0; i < nwt; i++) wtf[i] = (float)wt[i] * s_wt;
  for (int32_t f = 0; f < s.num_filters; f++) {
    int32_t sum = 0;
    for (int32_t i = 0; i < s.input_size; i++) sum += wf[(int64_t)f * s.input_size + i];
    row_sums[f] = sum;
  }
}

/* The time product, rank reduction, bias and activation of the float and hybrid forms over the
 * state (already holding this step's newest column); scratch holds batch * num_filters floats. */
static void svdf_time_float(const ar_node_t *node, const svdf_shape_t *s, const float *wt, const float *state,
                            float *scratch) {
  const float *bias = node->inputs[3] ? node->inputs[3]->data : NULL;
  float *out = node->outputs[0]->data;
  const int64_t m = s->memory_size, nf = s->num_filters;
  for (int32_t b = 0; b < s->batch; b++) {
    const float *sb = state + (int64_t)b * nf * m;
    for (int64_t f = 0; f < nf; f++) {
      const float *row = sb + f * m, *w = wt + f * m;
      float acc = 0.0f;
      for (int64_t t = 0; t < m; t++) acc += row[t] * w[t];
      scratch[(int64_t)b * nf + f] = acc;
    }
    float *o = out + (int64_t)b * s->num_units;
    for (int32_t u = 0; u < s->num_units; u++) {
      float sum = 0.0f;
      for (int32_t r = 0; r < s->rank; r++) sum += scratch[(int64_t)b * nf + (int64_t)u * s->rank + r];
      o[u] = (bias ? bias[u] : 0.0f) + sum;
    }
  }
  float lo, hi;
  bool post;
  char unused[8];
  (void)ar_k_activation(node, node->options->svdf.activation, &lo, &hi, &post, unused, sizeof unused);
  const int64_t n = (int64_t)s->batch * s->num_units;
  if (post) {
    ar_apply_activation(out, (size_t)n, node->options->svdf.activation);
  } else {
    for (int64_t i = 0; i < n; i++) out[i] = ar_k_clamp(out[i], lo, hi);
  }
}

static void svdf_eval_float(const ar_node_t *node, const svdf_shape_t *s) {
  const float *in = node->inputs[0]->data, *wf = node->inputs[1]->data, *wt = node->inputs[2]->data;
  float *state = node->inputs[4]->data;
  const int64_t m = s->memory_size, nf = s->num_filters;
  const int64_t total = (int64_t)s->batch * nf * m;
  if (total > 1) memmove(state, state + 1, (size_t)(total - 1) * sizeof(float));
  for (int32_t b = 0; b < s->batch; b++) {
    const float *x = in + (int64_t)b * s->input_size;
    float *sb = state + (int64_t)b * nf * m;
    for (int64_t f = 0; f < nf; f++) {
      const float *w = wf + f * s->input_size;
      float acc = 0.0f;
      for (int32_t i = 0; i < s->input_size; i++) acc += w[i] * x[i];
      sb[f * m + m - 1] = acc;
    }
  }
  svdf_time_float(node, s, wt, state, node->scratch);
}

/* TFLite's SymmetricQuantizeFloats / AsymmetricQuantizeFloats of one row: q, *scale, *zp. */
static void svdf_quantize_row(const float *x, int32_t n, bool asymmetric, int8_t *q, float *scale, int32_t *zp) {
  float lo = n > 0 ? x[0] : 0.0f, hi = lo;
  for (int32_t i = 1; i < n; i++) {
    if (x[i] < lo) lo = x[i];
    if (x[i] > hi) hi = x[i];
  }
  *zp = 0;
  if (!asymmetric) {
    const float range = fmaxf(fabsf(lo), fabsf(hi));
    if (range == 0.0f) {
      memset(q, 0, (size_t)n);
      *scale = 1.0f;
      return;
    }
    *scale = range / 127.0f;
    const float inv = 127.0f / range;
    for (int32_t i = 0; i < n; i++) {
      int32_t v = (int32_t)roundf(inv * x[i]);
      q[i] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v);
    }
    return;
  }
  const double rmin = (double)fminf(0.0f, lo), rmax = (double)fmaxf(0.0f, hi);
  if (rmin == rmax) {
    memset(q, 0, (size_t)n);
    *scale = 1.0f;
    return;
  }
  const double qmin = -128.0, qmax = 127.0;
  const double sc = (rmax - rmin) / (qmax - qmin);
  const double zp_min = qmin - rmin / sc, zp_max = qmax - rmax / sc;
  const double err_min = fabs(qmin) + fabs(rmin / sc), err_max = fabs(qmax) + fabs(rmax / sc);
  const double zpd = err_min < err_max ? zp_min : zp_max;
  int32_t nz = zpd <= qmin ? -128 : zpd >= qmax ? 127 : (int8_t)round(zpd);
  *scale = (float)sc;
  *zp = nz;
  const float inv = (float)(1.0 / (double)*scale);
  for (int32_t i = 0; i < n; i++) {
    int32_t v = (int32_t)roundf((float)nz + x[i] * inv);
    q[i] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
  }
}

static void svdf_eval_hybrid(const ar_node_t *node, const svdf_shape_t *s) {
  const svdf_state_t *p = node->state;
  const float *wtf = (const float *)((const uint8_t *)node->state + SVDF_STATE_HEAD);
  const int32_t *row_sums = (const int32_t *)(wtf + (int64_t)s->num_filters * s->memory_size);
  const float *in = node->inputs[0]->data;
  const int8_t *wf = node->inputs[1]->data;
  float *state = node->inputs[4]->data, *scratch = node->scratch;
  const int64_t m = s->memory_size, nf = s->num_filters;
  int8_t *q = (int8_t *)(scratch + (int64_t)s->batch * nf);
  const bool asym = node->options->svdf.asymmetric_quantize_inputs;
  const int64_t total = (int64_t)s->batch * nf * m;
  if (total > 1) memmove(state, state + 1, (size_t)(total - 1) * sizeof(float));
  for (int32_t b = 0; b < s->batch; b++) {
    const float *x = in + (int64_t)b * s->input_size;
    int8_t *qb = q + (int64_t)b * s->input_size;
    float sf;
    int32_t zp;
    svdf_quantize_row(x, s->input_size, asym, qb, &sf, &zp);
    sf *= p->wf_scale;
    float *sb = state + (int64_t)b * nf * m;
    for (int64_t f = 0; f < nf; f++) {
      const int8_t *w = wf + f * s->input_size;
      int32_t dot = 0;
      for (int32_t i = 0; i < s->input_size; i++) dot += (int32_t)w[i] * (int32_t)qb[i];
      if (asym) dot -= zp * row_sums[f];
      sb[f * m + m - 1] = (float)dot * sf;
    }
  }
  svdf_time_float(node, s, wtf, state, scratch);
}

/* int16 and int8 state: T is the state's and weights_time's element type. */
#define SVDF_INTEGER(NAME, T, TMIN, TMAX)                                                                 \
  static void NAME(const ar_node_t *node, const svdf_shape_t *s) {                                       \
    const svdf_state_t *p = node->state;                                                                  \
    const int8_t *in = node->inputs[0]->data, *wf = node->inputs[1]->data;                                \
    const T *wt = node->inputs[2]->data;                                                                  \
    const int32_t *bias = node->inputs[3] ? node->inputs[3]->data : NULL;                                 \
    T *state = node->inputs[4]->data;                                                                     \
    int8_t *out = node->outputs[0]->data;                                                                 \
    int32_t *scratch = node->scratch;                                                                     \
    const int64_t m = s->memory_size, nf = s->num_filters;                                                \
    const int64_t total = (int64_t)s->batch * nf * m;                                                     \
    if (total > 1) memmove(state, state + 1, (size_t)(total - 1) * sizeof(T));                            \
    for (int32_t b = 0; b < s->batch; b++) {                                                              \
      const int8_t *x = in + (int64_t)b * s->input_size;                                                  \
      T *sb = state + (int64_t)b * nf * m;                                                                \
      for (int64_t f = 0; f < nf; f++) {                                                                  \
        const int8_t *w = wf + f * s->input_size;                                                         \
        int32_t dot = 0;                                                                                  \
        for (int32_t i = 0; i < s->input_size; i++) dot += (int32_t)w[i] * ((int32_t)x[i] - p->in_zp);   \
        int32_t v = ar_mbqm(dot, p->m1, p->s1) + p->state_zp;                                             \
        sb[f * m + m - 1] = (T)(v < TMIN ? TMIN : v > TMAX ? TMAX : v);                                   \
      }                                                                                                   \
      for (int64_t f = 0; f < nf; f++) {                                                                  \
        const T *row = sb + f * m, *w = wt + f * m;                                                       \
        uint32_t acc = 0;   /* int32 arithmetic that wraps as TFLite's does */                           \
        for (int64_t t = 0; t < m; t++) acc += (uint32_t)((int32_t)w[t] * ((int32_t)row[t] - p->state_zp)); \
        scratch[(int64_t)b * nf + f] = (int32_t)acc;                                                      \
      }                                                                                                   \
      for (int32_t u = 0; u < s->num_units; u++) {                                                        \
        uint32_t acc = bias ? (uint32_t)bias[u] : 0u;                                                     \
        for (int32_t r = 0; r < s->rank; r++) acc += (uint32_t)scratch[(int64_t)b * nf + (int64_t)u * s->rank + r]; \
        int32_t v = ar_mbqm((int32_t)acc, p->m2, p->s2) + p->out_zp;                                      \
        out[(int64_t)b * s->num_units + u] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);               \
      }                                                                                                   \
    }                                                                                                     \
  }
SVDF_INTEGER(svdf_eval_int16, int16_t, INT16_MIN, INT16_MAX)
SVDF_INTEGER(svdf_eval_int8, int8_t, INT8_MIN, INT8_MAX)

static void svdf_eval(const ar_node_t *node) {
  svdf_shape_t s;
  char unused[8];
  (void)svdf_shape(node, &s, unused, sizeof unused);   /* checked at prepare */
  const svdf_state_t *p = node->state;
  switch (p->form) {
  case SVDF_FLOAT: svdf_eval_float(node, &s); break;
  case SVDF_HYBRID: svdf_eval_hybrid(node, &s); break;
  case SVDF_INT16: svdf_eval_int16(node, &s); break;
  case SVDF_INT8: svdf_eval_int8(node, &s); break;
  }
}

/* Forms by input and weights_feature dtype (prepare tells float, hybrid and integer apart by them,
 * not by the version: a file's version 1-4 is taken as stored). The integer forms' int16 / int8
 * state is told apart by the state's dtype. */
static const ar_kernel_form_t svdf_forms[] = {
  AR_KF(1, 4, FLOAT32, FLOAT32),
  AR_KFW(1, 4, FLOAT32, INT8, FLOAT32),
  AR_KF(1, 4, INT8, INT8),
};
const ar_kernel_t ar_kernel_svdf = {"SVDF", svdf_prepare, svdf_init, svdf_eval, AR_KSUPPORT(svdf_forms, 0, 1)};
