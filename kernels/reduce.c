/* reduce.c - TFLite MEAN, float32.
 *
 * Axes come from input 1 (constant int32, any shape; negative axes count from the end, repeats are
 * ignored, as TFLite's reduce.cc). keep_dims keeps reduced dims as 1, else they are removed. The
 * sum runs in float in input order and is divided by the reduced element count, as TFLite's
 * reference Mean. Axes {1,2} of a rank-4 NHWC tensor (global average pooling) take a fast path:
 * a contiguous C-long accumulation per pixel. Other axis sets use the output itself as the
 * accumulator with an odometer over the input, so there is no scratch either way.
 */
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

#define AR_MEAN_MAX_RANK AR_MAX_RANK

typedef struct {
  bool global_hw;              /* rank-4 input, axes {1,2} */
  int32_t rank;                /* input rank (general path) */
  int64_t dims[AR_MEAN_MAX_RANK];
  int64_t ostride[AR_MEAN_MAX_RANK];   /* output element stride per input dim; 0 when reduced */
  int64_t n_in, n_out;
  float count;                 /* input elements per output element */
} mean_state_t;

static int mean_plan(const ar_node_t *node, mean_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *axes = node->inputs[1];
  if ((rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_FLOAT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_FLOAT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, axes, "axes (input 1)", AR_DTYPE_INT32, msg, msg_bytes)))
    return rc;
  if (!axes->is_constant || !axes->data)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED,
                    "axes (input 1) is not a constant (dynamic output shapes are not supported)");
  const int32_t rank = in->rank;
  bool reduced[AR_MAX_RANK] = {false};
  int64_t n_axes = ar_k_elements(axes);
  for (int64_t i = 0; i < n_axes; i++) {
    int32_t a;
    memcpy(&a, (const char *)axes->data + i * sizeof(int32_t), sizeof a);
    int32_t k = a < 0 ? a + rank : a;
    if (k < 0 || k >= rank)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "axis %d out of range for rank %d", (int)a, (int)rank);
    reduced[k] = true;
  }
  bool keep = node->options ? node->options->reducer.keep_dims : false;
  int32_t od[AR_MAX_RANK], orank = 0;
  memset(st, 0, sizeof *st);
  st->rank = rank;
  st->n_in = 1; st->n_out = 1;
  for (int32_t d = 0; d < rank; d++) {
    st->dims[d] = in->dims[d];
    st->n_in *= in->dims[d];
    if (!reduced[d]) { od[orank++] = in->dims[d]; st->n_out *= in->dims[d]; }
    else if (keep) od[orank++] = 1;
  }
  if ((rc = ar_k_check_output_shape(node, orank, od, msg, msg_bytes))) return rc;
  int64_t s = 1;
  for (int32_t d = rank - 1; d >= 0; d--) {
    st->ostride[d] = reduced[d] ? 0 : s;
    if (!reduced[d]) s *= in->dims[d];
  }
  st->count = st->n_out > 0 ? (float)(st->n_in / st->n_out) : 1.0f;
  st->global_hw = rank == 4 && !reduced[0] && reduced[1] && reduced[2] && !reduced[3];
  return 0;
}

static int mean_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  mean_state_t st;
  node->state_bytes = sizeof st;
  return mean_plan(node, &st, msg, msg_bytes);
}

static void mean_init(ar_node_t *node) {
  mean_state_t st;
  if (mean_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

static void mean_eval(const ar_node_t *node) {
  const mean_state_t *st = node->state;
  const float *in = node->inputs[0]->data;
  float *out = node->outputs[0]->data;
  const float count = st->count;
  if (st->n_out == 0) return;
  for (int64_t j = 0; j < st->n_out; j++) out[j] = 0.0f;
  if (st->global_hw) {
    const int64_t B = st->dims[0], HW = st->dims[1] * st->dims[2], C = st->dims[3];
    for (int64_t b = 0; b < B; b++) {
      float *o = out + b * C;
      const float *src = in + b * HW * C;
      for (int64_t p = 0; p < HW; p++, src += C)
        for (int64_t c = 0; c < C; c++) o[c] += src[c];
    }
  } else if (st->rank > 0 && st->n_in > 0) {
    const int32_t last = st->rank - 1;
    const int64_t inner = st->dims[last], os = st->ostride[last];
    int64_t idx[AR_MEAN_MAX_RANK] = {0}, off = 0;
    for (int64_t done = 0; done < st->n_in; done += inner, in += inner) {
      if (os) { float *o = out + off; for (int64_t c = 0; c < inner; c++) o[c] += in[c]; }
      else { float acc = out[off]; for (int64_t c = 0; c < inner; c++) acc += in[c]; out[off] = acc; }
      for (int32_t d = last - 1; d >= 0; d--) {
        off += st->ostride[d];
        if (++idx[d] < st->dims[d]) break;
        off -= st->ostride[d] * st->dims[d];
        idx[d] = 0;
      }
    }
  } else if (st->rank == 0) {
    out[0] = in[0];
  }
  for (int64_t j = 0; j < st->n_out; j++) out[j] /= count;
}

/* TFLite MEAN (builtin 40): mean over constant axes, keep_dims honoured. */
const ar_kernel_t ar_kernel_mean = { "MEAN", mean_prepare, mean_init, mean_eval };
