/* segment_ops.c - TFLite's EMBEDDING_LOOKUP and SEGMENT_SUM (issue 28).
 *
 * EMBEDDING_LOOKUP: ids int32 [N] (input 0), table [R, ...] (input 1); output [N, ...] row ids[i]
 * of the table. Same dtype in and out (float32, int32, int64, uint8, int8, int16, bool: rows are
 * copied), or the hybrid form TFLite's kernel has for int8 / uint8 tables with a float32 output:
 * out = code * scale, the scale per tensor or per row (per-axis quantization along axis 0), in
 * double as TFLite computes it (its uint8 table is read as int8 codes, and so is this one). The ids
 * are read at eval, so they may be a graph input: TFLite fails the invoke on an id outside [0, R);
 * an eval here cannot fail, so such a row is written as zeros (as kernels/gather.c does).
 * SEGMENT_SUM: data [N, ...] float32 or int32, segment_ids int32 [N] constant (their values set the
 * output's first dimension, max id + 1), starting at 0, each equal to the one before or one more, as
 * TFLite 2.19's kernel requires; output row s is the sum, in order, of the data rows whose id is s
 * (int32 sums wrap).
 */
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

/* ---- EMBEDDING_LOOKUP ---- */

static bool row_dtype(ar_dtype_t t) {
  return t == AR_DTYPE_FLOAT32 || t == AR_DTYPE_INT32 || t == AR_DTYPE_INT64 || t == AR_DTYPE_UINT8 ||
         t == AR_DTYPE_INT8 || t == AR_DTYPE_INT16 || t == AR_DTYPE_BOOL;
}

static int embedding_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *ids = node->inputs[0], *tab = node->inputs[1], *o = node->outputs[0];
  char tn[96];
  if ((rc = ar_k_check_dtype(node, ids, "input 0 (ids)", AR_DTYPE_INT32, msg, msg_bytes))) return rc;
  if (ids->rank != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 0 (ids) has rank %d, expected 1", (int)ids->rank);
  if (tab->rank < 2)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 1 (table) has rank %d, expected 2 or more",
                    (int)tab->rank);
  if (!row_dtype(tab->dtype))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 1 (table)%s has dtype %s",
                    ar_k_tname(tab, tn, sizeof tn), ar_dtype_name(tab->dtype));
  const bool hybrid = o->dtype == AR_DTYPE_FLOAT32 &&
                      (tab->dtype == AR_DTYPE_INT8 || tab->dtype == AR_DTYPE_UINT8);
  if (!hybrid && (rc = ar_k_check_dtype(node, o, "output 0", tab->dtype, msg, msg_bytes))) return rc;
  if (hybrid) {
    const ar_quant_t *q = tab->quant;
    if (!q || q->n < 1 || (q->n > 1 && (q->n != tab->dims[0] || q->quantized_dimension != 0)))
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 1 (table) needs a scale per tensor or "
                      "per row (axis 0) for a float32 output");
  }
  int32_t dims[AR_MAX_RANK];
  memcpy(dims, tab->dims, sizeof dims);
  dims[0] = ids->dims[0];
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, tab->rank, dims, msg, msg_bytes);
}

static void embedding_eval(const ar_node_t *node) {
  const ar_tview_t *ids = node->inputs[0], *tab = node->inputs[1], *o = node->outputs[0];
  const int64_t n = ids->dims[0], rows = tab->dims[0];
  const int64_t cols = rows > 0 ? ar_k_elements(tab) / rows : 0;
  const int32_t *id = ids->data;
  if (o->dtype == AR_DTYPE_FLOAT32 && tab->dtype != AR_DTYPE_FLOAT32) {   /* hybrid */
    const int8_t *codes = tab->data;
    float *out = o->data;
    for (int64_t i = 0; i < n; i++) {
      const int64_t r = id[i];
      if (r < 0 || r >= rows) { memset(out + i * cols, 0, (size_t)cols * sizeof(float)); continue; }
      const double scale = tab->quant->n > 1 ? (double)tab->quant->scale[r] : (double)tab->quant->scale[0];
      for (int64_t j = 0; j < cols; j++) out[i * cols + j] = (float)(codes[r * cols + j] * scale);
    }
    return;
  }
  const size_t row = (size_t)cols * ar_dtype_size(tab->dtype);
  char *dst = o->data;
  const char *src = tab->data;
  for (int64_t i = 0; i < n; i++) {
    const int64_t r = id[i];
    if (r < 0 || r >= rows) memset(dst + (size_t)i * row, 0, row);
    else memcpy(dst + (size_t)i * row, src + (size_t)r * row, row);
  }
}

/* ---- SEGMENT_SUM ---- */

static int segment_sum_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *data = node->inputs[0], *seg = node->inputs[1];
  char tn[96];
  if (data->dtype != AR_DTYPE_FLOAT32 && data->dtype != AR_DTYPE_INT32)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0%s has dtype %s (float32 or int32)",
                    ar_k_tname(data, tn, sizeof tn), ar_dtype_name(data->dtype));
  if ((rc = ar_k_check_dtype(node, node->outputs[0], "output 0", data->dtype, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, seg, "input 1 (segment_ids)", AR_DTYPE_INT32, msg, msg_bytes)))
    return rc;
  if (data->rank < 1 || seg->rank != 1 || seg->dims[0] != data->dims[0])
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "segment_ids must be one id per row of input 0 (%d rows)",
                    data->rank >= 1 ? (int)data->dims[0] : 0);
  if ((rc = ar_k_require_constant(node, seg, "input 1 (segment_ids)", msg, msg_bytes))) return rc;
  const int32_t *s = seg->data;
  int32_t max = -1;
  for (int32_t i = 0; i < seg->dims[0]; i++) {
    if ((i == 0 && s[i] != 0) || (i > 0 && s[i] != s[i - 1] && s[i] != s[i - 1] + 1))
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "segment_ids[%d] = %d: ids must start at 0, each equal "
                      "to the one before or one more (TFLite 2.19's segment_sum)", (int)i, (int)s[i]);
    max = s[i];
  }
  int32_t dims[AR_MAX_RANK];
  memcpy(dims, data->dims, sizeof dims);
  dims[0] = max + 1;
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, data->rank, dims, msg, msg_bytes);
}

static void segment_sum_eval(const ar_node_t *node) {
  const ar_tview_t *data = node->inputs[0], *seg = node->inputs[1], *o = node->outputs[0];
  const int64_t n = data->dims[0], out_rows = o->dims[0];
  const int64_t cols = n > 0 ? ar_k_elements(data) / n : 0;
  const int32_t *s = seg->data;
  memset(o->data, 0, (size_t)(out_rows * cols) * 4);   /* 0.0f and 0 are zero bytes */
  if (data->dtype == AR_DTYPE_FLOAT32) {
    const float *in = data->data;
    float *out = o->data;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < cols; j++) out[s[i] * cols + j] += in[i * cols + j];
  } else {
    const int32_t *in = data->data;
    int32_t *out = o->data;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < cols; j++)
        out[s[i] * cols + j] = (int32_t)((uint32_t)out[s[i] * cols + j] + (uint32_t)in[i * cols + j]);
  }
}

static const ar_kernel_form_t embedding_forms[] = {   /* the table's dtype (input 1) */
  AR_KF(1, 3, FLOAT32, FLOAT32), AR_KF(1, 3, INT32, INT32), AR_KF(1, 3, INT64, INT64),
  AR_KF(1, 3, UINT8, UINT8), AR_KF(1, 3, INT8, INT8), AR_KF(1, 3, INT16, INT16), AR_KF(1, 3, BOOL, BOOL),
  AR_KF(1, 3, UINT8, FLOAT32), AR_KF(1, 3, INT8, FLOAT32),
};
static const ar_kernel_form_t segment_sum_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32), AR_KF(1, 1, INT32, INT32),
};

/* TFLite EMBEDDING_LOOKUP (builtin 7), SEGMENT_SUM (125). */
const ar_kernel_t ar_kernel_embedding_lookup = { "EMBEDDING_LOOKUP", embedding_prepare, NULL, embedding_eval,
                                                 AR_KSUPPORT(embedding_forms, 1, -1) };
const ar_kernel_t ar_kernel_segment_sum = { "SEGMENT_SUM", segment_sum_prepare, NULL, segment_sum_eval,
                                            AR_KSUPPORT(segment_sum_forms, 0, -1) };
