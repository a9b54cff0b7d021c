/* shape_ops.c - TFLite RESHAPE, PAD, CONCATENATION and DEPTH_TO_SPACE: data movement only.
 *
 * RESHAPE copies the bytes unless the planner placed the output over the input (same pointer).
 * PAD fills around a copy (0, or the output zero point for uint8 / int8); prepare folds unpadded
 * inner dims into their outer neighbour so channel padding becomes "copy C, fill k" per pixel and
 * spatial padding "fill rows, then per row fill / copy W*C / fill". CONCATENATION copies, for each
 * outer index, one contiguous run per input (a uint8 input with other quantization than the
 * output's goes through its requantization table instead).
 * DEPTH_TO_SPACE moves C_out-long runs in TFLite's NHWC order. None of these is in-place safe
 * (except RESHAPE, which is a no-op then); the planner must not alias them.
 */
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_parallel.h"
#include "kernels/ar_qparams.h"
#include "kernels/conv_util.h"

#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>
#endif

/* ------------------------------------------------------------------ RESHAPE */

/* TFLite reshape.cc: the shape comes from input 1 when it is an int32 vector, else from
 * ReshapeOptions.new_shape (a legacy [0] meaning a scalar); one dim may be -1 (inferred). A
 * non-constant shape tensor leaves the stored output shape as the only source, unless the
 * interpreter knows its value (value_known: a graph input, re-prepared when it changes). */
static int reshape_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 2, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  const ar_tview_t *shape = node->n_inputs == 2 ? node->inputs[1] : NULL;
  node->state_bytes = 0;
  if (o->dtype != in->dtype)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "output dtype %s differs from input dtype %s",
                    ar_dtype_name(o->dtype), ar_dtype_name(in->dtype));
  int32_t rank = 0, dims[AR_MAX_RANK];
  bool have = false;
  if (shape && shape->rank == 1 && shape->dtype == AR_DTYPE_INT32) {
    if ((shape->is_constant || shape->value_known) && shape->data) {
      if (shape->dims[0] > AR_MAX_RANK)
        return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "shape has %d dims (max %d)",
                        (int)shape->dims[0], AR_MAX_RANK);
      rank = shape->dims[0];
      memcpy(dims, shape->data, (size_t)rank * sizeof(int32_t));
      have = true;
    }
  } else if (node->options && node->options->reshape.has_new_shape) {
    const ar_reshape_options_t *r = &node->options->reshape;
    if (r->rank < 0 || r->rank > AR_MAX_RANK)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "new_shape has %d dims", (int)r->rank);
    rank = r->rank;
    memcpy(dims, r->new_shape, (size_t)rank * sizeof(int32_t));
    if (rank == 1 && dims[0] == 0) rank = 0;   /* legacy scalar */
    have = true;
  }
  if (!have) {
    rank = o->rank;
    memcpy(dims, o->dims, (size_t)rank * sizeof(int32_t));
  }
  int64_t known = 1;
  int32_t infer = -1;
  for (int32_t i = 0; i < rank; i++) {
    if (dims[i] == -1) {
      if (infer >= 0)
        return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "shape has more than one -1");
      infer = i;
    } else if (dims[i] < 0) {
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "shape dim %d is %d", (int)i, (int)dims[i]);
    } else {
      known *= dims[i];
    }
  }
  int64_t n = ar_k_elements(in);
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "cannot infer the -1 dim: %lld elements, "
                      "known dims give %lld", (long long)n, (long long)known);
    dims[infer] = (int32_t)(n / known);
    known = n;
  }
  if (known != n) {
    char a[96], b[96];
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "cannot reshape %s (%lld elements) to %s",
                    ar_k_dims_str(a, sizeof a, in->rank, in->dims), (long long)n,
                    ar_k_dims_str(b, sizeof b, rank, dims));
  }
  return ar_k_check_output_shape(node, rank, dims, msg, msg_bytes);
}

static void reshape_eval(const ar_node_t *node) {
  const ar_tview_t *in = node->inputs[0];
  void *out = node->outputs[0]->data;
  /* The planner may give the output the input's bytes (in-place): then there is nothing to do. */
  if (out != in->data) memmove(out, in->data, (size_t)in->bytes);
}

/* TFLite RESHAPE (builtin 22): same elements, new shape. */
static const ar_kernel_form_t reshape_forms[] = {
  AR_KF_DATA(1, 1),
};
const ar_kernel_t ar_kernel_reshape = { "RESHAPE", reshape_prepare, NULL, reshape_eval,
  AR_KSUPPORT(reshape_forms, 0, -1) };

/* ---------------------------------------------------------------------- PAD */

#define AR_PAD_MAX_RANK 4

typedef struct {
  int32_t rank;                          /* after folding, >= 1 */
  int64_t in[AR_PAD_MAX_RANK], before[AR_PAD_MAX_RANK], after[AR_PAD_MAX_RANK];
  size_t es;                             /* element bytes: 4 (float32, int32 fill 0) or 1 */
  uint8_t fill;                          /* 1-byte elements: the output zero point's byte */
} pad_state_t;

static int pad_plan(const ar_node_t *node, pad_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *pads = node->inputs[1];
  if (in->dtype != AR_DTYPE_FLOAT32 && in->dtype != AR_DTYPE_INT32 && !ar_k_is_q8(in->dtype))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0 has dtype %s, expected FLOAT32, "
                    "INT32, UINT8 or INT8", ar_dtype_name(in->dtype));
  if ((rc = ar_k_check_dtype(node, node->outputs[0], "output 0", in->dtype, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, pads, "paddings (input 1)", AR_DTYPE_INT32, msg, msg_bytes)))
    return rc;
  size_t es = ar_dtype_size(in->dtype);
  uint8_t fill = 0;
  if (ar_k_is_q8(in->dtype)) {
    /* TFLite pad.cc: without constant_values the pad value is the output's zero point. */
    float so = 0, si = 0;
    int32_t zo = 0, zi = 0;
    if ((rc = ar_k_qparams(node, node->outputs[0], "output 0", &so, &zo, msg, msg_bytes)) ||
        (rc = ar_k_qparams(node, in, "input 0", &si, &zi, msg, msg_bytes)))
      return rc;
    if (si != so || zi != zo)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input quantization (scale %g, zero "
                      "point %d) differs from the output's (scale %g, zero point %d)", (double)si,
                      (int)zi, (double)so, (int)zo);
    fill = (uint8_t)zo;
  }
  if (in->rank < 1 || in->rank > AR_PAD_MAX_RANK)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input rank %d (supported 1..%d)",
                    (int)in->rank, AR_PAD_MAX_RANK);
  if (pads->rank != 2 || pads->dims[0] != in->rank || pads->dims[1] != 2)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "paddings must have shape [%d,2]", (int)in->rank);
  if (!pads->is_constant && !pads->value_known) {
    /* Paddings from a graph input: the value comes before the invoke that needs it
     * (ar_interp_set_shape_input, then a re-prepare); until then the stored shape stands. */
    memset(st, 0, sizeof *st);
    st->es = es;
    st->fill = fill;
    return 0;
  }
  if (!pads->data)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "paddings (input 1) has no data");
  int32_t p[2 * AR_PAD_MAX_RANK], od[AR_PAD_MAX_RANK];
  memcpy(p, pads->data, (size_t)in->rank * 2 * sizeof(int32_t));
  for (int32_t i = 0; i < in->rank; i++) {
    if (p[2 * i] < 0 || p[2 * i + 1] < 0)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "negative padding [%d,%d] on dim %d",
                      (int)p[2 * i], (int)p[2 * i + 1], (int)i);
    od[i] = in->dims[i] + p[2 * i] + p[2 * i + 1];
  }
  if ((rc = ar_k_check_output_shape(node, in->rank, od, msg, msg_bytes))) return rc;

  /* Fold from the inside out: unpadded dims inside a padded dim merge into it (its size and
   * padding scale by their product; in and out lay them out identically); unpadded dims outside
   * the outermost padded dim become one plain outer loop. */
  memset(st, 0, sizeof *st);
  int32_t r = 0;
  int64_t fold = 1;
  int64_t tin[AR_PAD_MAX_RANK], tb[AR_PAD_MAX_RANK], ta[AR_PAD_MAX_RANK];   /* innermost first */
  for (int32_t i = in->rank - 1; i >= 0; i--) {
    if (p[2 * i] == 0 && p[2 * i + 1] == 0) { fold *= in->dims[i]; continue; }
    tin[r] = (int64_t)in->dims[i] * fold; tb[r] = (int64_t)p[2 * i] * fold;
    ta[r] = (int64_t)p[2 * i + 1] * fold;
    r++;
    fold = 1;
  }
  if (fold != 1 || r == 0) { tin[r] = fold; tb[r] = 0; ta[r] = 0; r++; }
  st->rank = r;
  st->es = es;
  st->fill = fill;
  for (int32_t i = 0; i < r; i++) {   /* tin[] was built innermost first */
    st->in[i] = tin[r - 1 - i]; st->before[i] = tb[r - 1 - i]; st->after[i] = ta[r - 1 - i];
  }
  return 0;
}

static int pad_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  pad_state_t st;
  node->state_bytes = sizeof st;
  return pad_plan(node, &st, msg, msg_bytes);
}

static void pad_init(ar_node_t *node) {
  pad_state_t st;
  if (pad_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

/* `n` elements of fill: 0 for 4-byte elements, the zero point's byte for 1-byte ones. */
static inline void pad_fill(char *p, int64_t n, const pad_state_t *st) {
  memset(p, st->es == 1 ? st->fill : 0, (size_t)n * st->es);
}

/* A padded row of 4-byte elements: b zeros, irow elements copied from `in`, a zeros. AVX-512F:
 * in 16-element masked moves (a pixel's channels are a few dozen elements, where a libc call
 * each costs more than the copy); elsewhere memcpy / memset. */
#if AR_HAVE_AVX2_CLONE
AR_TARGET_AVX512 static void pad_row4_avx512(uint32_t *out, const uint32_t *in, int64_t b,
                                             int64_t irow, int64_t a) {
  const __m512i z = _mm512_setzero_si512();
  int64_t k = 0;
  for (; k + 16 <= b; k += 16) _mm512_storeu_si512(out + k, z);
  if (k < b) _mm512_mask_storeu_epi32(out + k, (__mmask16)((1u << (b - k)) - 1), z);
  out += b;
  for (k = 0; k + 16 <= irow; k += 16) _mm512_storeu_si512(out + k, _mm512_loadu_si512(in + k));
  if (k < irow) {
    const __mmask16 m = (__mmask16)((1u << (irow - k)) - 1);
    _mm512_mask_storeu_epi32(out + k, m, _mm512_maskz_loadu_epi32(m, in + k));
  }
  out += irow;
  for (k = 0; k + 16 <= a; k += 16) _mm512_storeu_si512(out + k, z);
  if (k < a) _mm512_mask_storeu_epi32(out + k, (__mmask16)((1u << (a - k)) - 1), z);
}
#endif

typedef struct {
  const pad_state_t *st;
  const char *in;
  char *out;
  int64_t od[AR_PAD_MAX_RANK], istride[AR_PAD_MAX_RANK];
  bool avx512;   /* 4-byte elements, AVX-512F: pad_row4_avx512 */
} pad_job_t;

/* Output rows [r0, r1) (a row: the innermost folded dim, before + in + after elements). */
static void pad_rows(void *ctx, int64_t r0, int64_t r1) {
  const pad_job_t *j = ctx;
  const pad_state_t *st = j->st;
  const int64_t es = (int64_t)st->es;
  const int32_t last = st->rank - 1;
  const int64_t orow = j->od[last], irow = st->in[last], b = st->before[last], a = st->after[last];
  int64_t idx[AR_PAD_MAX_RANK] = {0}, q = r0;
  for (int32_t d = last - 1; d >= 0; d--) {
    idx[d] = q % j->od[d];
    q /= j->od[d];
  }
  char *out = j->out + r0 * orow * es;
  for (int64_t row = r0; row < r1; row++, out += orow * es) {
    bool inside = true;
    int64_t off = 0;
    for (int32_t d = 0; d < last; d++) {
      int64_t k = idx[d] - st->before[d];
      if (k < 0 || k >= st->in[d]) { inside = false; break; }
      off += k * j->istride[d];
    }
    if (!inside) {
      pad_fill(out, orow, st);
#if AR_HAVE_AVX2_CLONE
    } else if (j->avx512) {
      pad_row4_avx512((uint32_t *)(void *)out, (const uint32_t *)(const void *)(j->in + off * es), b,
                      irow, a);
#endif
    } else {
      pad_fill(out, b, st);
      memcpy(out + b * es, j->in + off * es, (size_t)(irow * es));
      pad_fill(out + (b + irow) * es, a, st);
    }
    for (int32_t d = last - 1; d >= 0; d--) {
      if (++idx[d] < j->od[d]) break;
      idx[d] = 0;
    }
  }
}

/* Rows are split over the pool (a copy is the same whatever the split), in runs of at least
 * PAD_SPLIT_MIN_BYTES of output. */
#define PAD_SPLIT_MIN_BYTES (16 * 1024)

static void pad_eval(const ar_node_t *node) {
  const pad_state_t *st = node->state;
  pad_job_t j = {.st = st, .in = node->inputs[0]->data, .out = node->outputs[0]->data};
  const int32_t r = st->rank, last = r - 1;
  if (r < 1) return;   /* paddings not known yet (pad_plan): nothing planned */
  int64_t rows = 1, s = 1;
  for (int32_t i = r - 1; i >= 0; i--) {
    j.od[i] = st->in[i] + st->before[i] + st->after[i];
    j.istride[i] = s;
    s *= st->in[i];
    if (i < last) rows *= j.od[i];
  }
  const int64_t row_bytes = j.od[last] * (int64_t)st->es;
#if AR_HAVE_AVX2_CLONE
  j.avx512 = st->es == 4 && ar__f32_isa() >= AR_ISA_AVX512;
#endif
  if (rows <= 0 || row_bytes <= 0) return;
  ar_parallel_for_split(node, rows, 1, ar_parallel_grain(rows, row_bytes, PAD_SPLIT_MIN_BYTES, 1),
                        pad_rows, &j);
}

bool ar_kernel_pad_fold_check(const ar_node_t *pad, const ar_node_t *reader, int32_t slot, int32_t pads_out[4]) {
  if (pad->op != AR_OP_PAD || pad->n_inputs != 2 || pad->n_outputs != 1 || reader->n_inputs < 2 ||
      slot < 0 || slot >= reader->n_inputs || !reader->options)
    return false;
  const ar_tview_t *in = pad->inputs[0], *pads = pad->inputs[1], *out = pad->outputs[0];
  if (!in || !pads || !out || reader->inputs[slot] != out || in->dtype != AR_DTYPE_FLOAT32 ||
      out->dtype != AR_DTYPE_FLOAT32 || in->rank != 4 || out->rank != 4)
    return false;
  if (!pads->is_constant || !pads->data || pads->dtype != AR_DTYPE_INT32 || pads->rank != 2 ||
      pads->dims[0] != 4 || pads->dims[1] != 2)
    return false;
  int32_t p[8];
  memcpy(p, pads->data, sizeof p);
  for (int i = 0; i < 4; i++)
    if (in->dims[i] + p[2 * i] + p[2 * i + 1] != out->dims[i]) return false;
  if (reader->op == AR_OP_DEPTHWISE_CONV_2D) {
    const ar_tview_t *f = reader->inputs[1];
    const ar_depthwise_options_t *o = &reader->options->depthwise;
    if (slot != 0 || !f || f->rank != 4 || f->dtype == AR_DTYPE_INT8 ||   /* hybrid: qwide.h */
        o->padding != AR_PADDING_VALID || o->dilation_h < 1 ||
        o->dilation_w < 1)
      return false;
    if (p[0] != 0 || p[1] != 0 || p[6] != 0 || p[7] != 0) return false;
    const int64_t eh = (int64_t)(f->dims[1] - 1) * o->dilation_h, ew = (int64_t)(f->dims[2] - 1) * o->dilation_w;
    for (int i = 2; i < 6; i++)
      if (p[i] < 0 || p[i] > (i < 4 ? eh : ew)) return false;
    if (!(p[2] | p[3] | p[4] | p[5])) return false;
    for (int i = 0; i < 4; i++) pads_out[i] = p[2 + i];
    return true;
  }
  if (reader->op == AR_OP_ADD) {
    const ar_tview_t *other = reader->inputs[1 - slot], *o = reader->n_outputs == 1 ? reader->outputs[0] : NULL;
    if (reader->n_inputs != 2 || !other || !o || other == out || other->dtype != AR_DTYPE_FLOAT32 ||
        o->dtype != AR_DTYPE_FLOAT32 || other->rank != 4 || o->rank != 4 ||
        memcmp(other->dims, out->dims, 4 * sizeof(int32_t)) != 0 || memcmp(o->dims, out->dims, 4 * sizeof(int32_t)) != 0)
      return false;
    for (int i = 0; i < 7; i++)
      if (p[i] != 0) return false;
    if (p[7] <= 0) return false;
    pads_out[0] = p[7];
    pads_out[1] = pads_out[2] = pads_out[3] = 0;
    return true;
  }
  return false;
}

/* TFLite PAD (builtin 34): constant int32 paddings [rank,2] (before, after), rank <= 4; float32 /
 * int32 filled with 0, uint8 / int8 with the output's zero point. */
static const ar_kernel_form_t pad_forms[] = {
  AR_KF(1, 2, FLOAT32, FLOAT32),
  AR_KF(1, 2, INT32, INT32),
  AR_KF(1, 2, UINT8, UINT8),
  AR_KF(1, 2, INT8, INT8),
};
const ar_kernel_t ar_kernel_pad = { "PAD", pad_prepare, pad_init, pad_eval,
  AR_KSUPPORT(pad_forms, 0, -1) };

/* ------------------------------------------------------------ CONCATENATION */

/* Any element type; a fused activation only on float32. On uint8, an input whose scale or zero
 * point differs from the output's is requantized as TFLite's ConcatenationWithScaling does it:
 * out = clamp((int32)round(q * scale + bias) + z_out, 0, 255) with scale = s_in * (1 / s_out) and
 * bias = -z_in * scale in float32; q * scale + bias is one fused multiply-add (fmaf), as the
 * x86-64 -march=haswell build of TFLite contracts it; the result depends on the input byte only,
 * so prepare tabulates it (256 entries per requantized input, node state) and eval looks it up.
 * int8 inputs must share the output's parameters (TFLite refuses others at prepare). */
/* Node state: the header, then per input its run (elements per outer index) and the index of its
 * requantization table (-1: copied as is), then the tables of 256 bytes each; any number of inputs. */
typedef struct {
  int32_t n_inputs;
  int32_t n_tables;                    /* uint8 inputs rescaled to the output's parameters */
  int64_t outer;                       /* product of dims before the axis */
  int64_t n;                           /* output elements */
  size_t es;                           /* element bytes */
  float lo, hi;
  bool post_act;
  ar_activation_t act;
  int64_t run[];                       /* n_inputs entries, then int32_t table_of[n_inputs], then
                                        * n_tables x 256 output bytes per input byte */
} concat_state_t;

static int32_t *concat_table_of(const concat_state_t *st) { return (int32_t *)(st->run + st->n_inputs); }
static uint8_t *concat_tables(const concat_state_t *st) {
  return (uint8_t *)(concat_table_of(st) + st->n_inputs);
}
static uint64_t concat_bytes(int32_t n_inputs, int32_t n_tables) {
  return sizeof(concat_state_t) + (uint64_t)n_inputs * (sizeof(int64_t) + sizeof(int32_t)) +
         (uint64_t)n_tables * 256;
}

/* TFLite ConcatenationWithScaling for one uint8 input byte. */
static uint8_t concat_requant1(uint8_t q, float scale, float bias, int32_t zp) {
  int32_t v = (int32_t)roundf(fmaf((float)q, scale, bias)) + zp;
  return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Checks the node and sets *bytes to the state it needs; with `st` (node state of that size) fills
 * it too. */
static int concat_plan(const ar_node_t *node, concat_state_t *st, uint64_t *bytes, char *msg,
                       size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, INT32_MAX, node->n_inputs, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *t0 = node->inputs[0], *o = node->outputs[0];
  concat_state_t h;
  memset(&h, 0, sizeof h);
  const bool is_float = o->dtype == AR_DTYPE_FLOAT32;
  if ((rc = ar_k_check_same_dtype(node, t0, 0, msg, msg_bytes))) return rc;
  h.es = ar_dtype_size(o->dtype);
  int32_t axis = node->options ? node->options->concatenation.axis : 0;
  h.act = node->options ? node->options->concatenation.activation : AR_ACT_NONE;
  if (!is_float && h.act != AR_ACT_NONE)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "fused activation %d on %s operands",
                    (int)h.act, ar_dtype_name(o->dtype));
  if ((rc = ar_k_activation(node, h.act, &h.lo, &h.hi, &h.post_act, msg, msg_bytes))) return rc;
  float so = 0;
  int32_t zo = 0;
  const bool q8 = ar_k_is_q8(o->dtype);
  if (q8 && (rc = ar_k_qparams(node, o, "output 0", &so, &zo, msg, msg_bytes))) return rc;
  int32_t rank = t0->rank;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "axis %d out of range for rank %d",
                    (int)(node->options ? node->options->concatenation.axis : 0), (int)rank);
  int32_t od[AR_MAX_RANK];
  memcpy(od, t0->dims, (size_t)rank * sizeof(int32_t));
  od[axis] = 0;
  int64_t inner = 1;
  h.outer = 1;
  for (int32_t d = 0; d < axis; d++) h.outer *= t0->dims[d];
  for (int32_t d = axis + 1; d < rank; d++) inner *= t0->dims[d];
  h.n_inputs = node->n_inputs;
  if (st) {
    *st = h;   /* n_tables counted again below */
    st->n_tables = 0;
  }
  const float inv_out = q8 ? 1.0f / so : 0.0f;
  for (int32_t i = 0; i < node->n_inputs; i++) {
    const ar_tview_t *t = node->inputs[i];
    char what[32];
    snprintf(what, sizeof what, "input %d", (int)i);
    if ((rc = ar_k_check_dtype(node, t, what, o->dtype, msg, msg_bytes))) return rc;
    bool ok = t->rank == rank;
    for (int32_t d = 0; ok && d < rank; d++) ok = d == axis || t->dims[d] == t0->dims[d];
    if (!ok) {
      char a[96], b[96];
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input %d shape %s does not match input 0 "
                      "shape %s outside axis %d", (int)i, ar_k_dims_str(a, sizeof a, t->rank, t->dims),
                      ar_k_dims_str(b, sizeof b, rank, t0->dims), (int)axis);
    }
    int32_t table = -1;
    if (q8) {
      float si = 0;
      int32_t zi = 0;
      if ((rc = ar_k_qparams(node, t, what, &si, &zi, msg, msg_bytes))) return rc;
      if (si != so || zi != zo) {
        if (o->dtype == AR_DTYPE_INT8)
          return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "int8 %s quantization (scale %g, "
                          "zero point %d) differs from the output's (scale %g, zero point %d)", what,
                          (double)si, (int)zi, (double)so, (int)zo);
        table = h.n_tables++;
        if (st) {
          uint8_t *tab = concat_tables(st) + (size_t)table * 256;
          const float scale = si * inv_out, bias = -(float)zi * scale;
          for (int v = 0; v < 256; v++) tab[v] = concat_requant1((uint8_t)v, scale, bias, zo);
          st->n_tables = h.n_tables;
        }
      }
    }
    od[axis] += t->dims[axis];
    if (st) {
      st->run[i] = (int64_t)t->dims[axis] * inner;
      concat_table_of(st)[i] = table;
    }
  }
  h.n = h.outer * od[axis] * inner;
  if (st) st->n = h.n;
  *bytes = concat_bytes(h.n_inputs, h.n_tables);
  return ar_k_check_output_shape(node, rank, od, msg, msg_bytes);
}

static int concat_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  uint64_t bytes = 0;
  int rc = concat_plan(node, NULL, &bytes, msg, msg_bytes);
  node->state_bytes = bytes;
  return rc;
}

static void concat_init(ar_node_t *node) {
  uint64_t bytes = 0;
  if (!node->state || concat_plan(node, NULL, &bytes, NULL, 0) != 0 || bytes > node->state_bytes) return;
  concat_plan(node, node->state, &bytes, NULL, 0);
}


static void concat_eval(const ar_node_t *node) {
  const concat_state_t *st = node->state;
  const size_t es = st->es;
  const int32_t *table_of = concat_table_of(st);
  const uint8_t *tables = concat_tables(st);
  char *out = node->outputs[0]->data, *o = out;
  for (int64_t k = 0; k < st->outer; k++) {
    for (int32_t i = 0; i < st->n_inputs; i++) {
      const char *src = (const char *)node->inputs[i]->data + k * st->run[i] * (int64_t)es;
      if (table_of[i] >= 0) {
        const uint8_t *tab = tables + (size_t)table_of[i] * 256, *u = (const uint8_t *)src;
        uint8_t *d = (uint8_t *)o;
        for (int64_t j = 0; j < st->run[i]; j++) d[j] = tab[u[j]];
      } else {
        memcpy(o, src, (size_t)st->run[i] * es);
      }
      o += st->run[i] * (int64_t)es;
    }
  }
  if (es != sizeof(float) || node->outputs[0]->dtype != AR_DTYPE_FLOAT32) return;
  float *fo = (float *)out;
  if (st->lo != -INFINITY || st->hi != INFINITY)
    for (int64_t j = 0; j < st->n; j++) fo[j] = ar_k_clamp(fo[j], st->lo, st->hi);
  if (st->post_act) ar_apply_activation(fo, (size_t)st->n, st->act);
}

/* TFLite CONCATENATION (builtin 2): any axis (negative counts from the end), any element type,
 * fused activation on float32, uint8 inputs requantized to the output's parameters. */
static const ar_kernel_form_t concatenation_forms[] = {
  AR_KF_DATA(1, 2),
};
const ar_kernel_t ar_kernel_concatenation = { "CONCATENATION", concat_prepare, concat_init, concat_eval,
  AR_KSUPPORT(concatenation_forms, 0, -1) };

/* ----------------------------------------------------------- DEPTH_TO_SPACE */

/* TFLite depth_to_space: output[b, h*bs + dy, w*bs + dx, c] = input[b, h, w, (dy*bs + dx)*C_out + c]
 * with C_out = C / bs^2. Any element size (the op moves bytes). */
static int d2s_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  node->state_bytes = 0;
  if (o->dtype != in->dtype || ar_dtype_size(in->dtype) == 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "dtypes %s -> %s",
                    ar_dtype_name(in->dtype), ar_dtype_name(o->dtype));
  if (in->rank != 4)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input rank %d, expected 4 (NHWC)", (int)in->rank);
  int32_t bs = node->options ? node->options->depth_to_space.block_size : 0;
  if (bs < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "block_size %d must be >= 1", (int)bs);
  if (in->dims[3] % (bs * bs) != 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input channels %d not divisible by "
                    "block_size^2 = %d", (int)in->dims[3], (int)(bs * bs));
  int32_t od[4] = { in->dims[0], in->dims[1] * bs, in->dims[2] * bs, in->dims[3] / (bs * bs) };
  return ar_k_check_output_shape(node, 4, od, msg, msg_bytes);
}

static void d2s_eval(const ar_node_t *node) {
  const ar_tview_t *in = node->inputs[0];
  const int32_t bs = node->options->depth_to_space.block_size;
  const int64_t B = in->dims[0], H = in->dims[1], W = in->dims[2], C = in->dims[3];
  const size_t es = ar_dtype_size(in->dtype);
  const size_t run = (size_t)(C / (bs * bs)) * es;   /* bytes of one C_out run */
  const char *src = in->data;
  char *dst = node->outputs[0]->data;
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++)
      for (int32_t dy = 0; dy < bs; dy++)
        for (int64_t w = 0; w < W; w++) {
          const char *px = src + (((b * H + h) * W + w) * C) * (int64_t)es + (size_t)dy * bs * run;
          memcpy(dst, px, (size_t)bs * run);   /* dx = 0..bs-1 runs are adjacent in the input */
          dst += (size_t)bs * run;
        }
}

/* TFLite DEPTH_TO_SPACE (builtin 5): NHWC, TFLite's (dy, dx, c) channel order. */
static const ar_kernel_form_t depth_to_space_forms[] = {   /* version 2: int8 */
  AR_KF_DATA(1, 2),
};
const ar_kernel_t ar_kernel_depth_to_space = { "DEPTH_TO_SPACE", d2s_prepare, NULL, d2s_eval,
  AR_KSUPPORT(depth_to_space_forms, 0, -1) };
