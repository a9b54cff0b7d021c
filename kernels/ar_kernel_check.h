/* ar_kernel_check.h - internal to the kernels layer: the small checks every kernel's prepare
 * repeats (arity, dtype, the stored output shape against the inferred one) and the fused
 * activation range the elementwise kernels apply inline. Header-only; every error message names
 * the operator as "operator <index> (<OP>): ...". */
#ifndef AR_KERNEL_CHECK_H
#define AR_KERNEL_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/ar_error.h"
#include "kernels/ar_kernels.h"

/* ar_errf with the "operator %d (NAME): " prefix. */
#define AR_K_ERR(node, msg, msg_bytes, err, fmt, ...)                                     \
  ar_errf((msg), (msg_bytes), (err), "operator %d (%s): " fmt, (int)(node)->index,        \
          ar_op_name((node)->op), ##__VA_ARGS__)

/* "[1,2,3]" into buf (truncating); returns buf. */
static inline const char *ar_k_dims_str(char *buf, size_t n, int32_t rank, const int32_t *dims) {
  size_t at = 0;
  if (n == 0) return buf;
  buf[0] = '\0';
  at += (size_t)snprintf(buf, n, "[");
  for (int32_t i = 0; i < rank && at < n; i++)
    at += (size_t)snprintf(buf + at, n - at, i ? ",%d" : "%d", (int)dims[i]);
  if (at < n) snprintf(buf + at, n - at, "]");
  return buf;
}

/* Element count of a view (1 for rank 0). */
static inline int64_t ar_k_elements(const ar_tview_t *t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) n *= t->dims[i];
  return n;
}

/* The node has between min_in and max_in inputs, inputs [0, req_in) present, and exactly n_out
 * outputs, all present. */
static inline int ar_k_check_arity(const ar_node_t *node, int min_in, int max_in, int req_in,
                                   int n_out, char *msg, size_t msg_bytes) {
  if (node->n_inputs < min_in || node->n_inputs > max_in)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "has %d inputs, expected %d..%d",
                    (int)node->n_inputs, min_in, max_in);
  if (node->n_outputs != n_out)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "has %d outputs, expected %d",
                    (int)node->n_outputs, n_out);
  for (int i = 0; i < req_in; i++)
    if (!node->inputs[i])
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "input %d is missing", i);
  for (int i = 0; i < n_out; i++)
    if (!node->outputs[i])
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "output %d is missing", i);
  return 0;
}

/* " (tensor NAME)" for a view that carries its tensor's name, else "" (for messages). */
static inline const char *ar_k_tname(const ar_tview_t *t, char *buf, size_t n) {
  if (!t || !t->name || !t->name[0]) return "";
  snprintf(buf, n, " (tensor %s)", t->name);
  return buf;
}

/* `t` (named `what`, e.g. "input 0") has dtype `want`; the message names the tensor when known:
 * "input 0 (tensor x) has dtype INT8, expected FLOAT32". */
static inline int ar_k_check_dtype(const ar_node_t *node, const ar_tview_t *t, const char *what,
                                   ar_dtype_t want, char *msg, size_t msg_bytes) {
  char tn[96];
  if (t->dtype != want)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s%s has dtype %s, expected %s", what,
                    ar_k_tname(t, tn, sizeof tn), ar_dtype_name(t->dtype), ar_dtype_name(want));
  return 0;
}

/* Give output `i` the inferred (rank, dims) and the byte size that goes with its dtype. */
static inline void ar_k_set_output_shape(const ar_node_t *node, int i, int32_t rank, const int32_t *dims) {
  ar_tview_t *o = node->outputs[i];
  uint64_t n = 1;
  o->rank = rank;
  for (int32_t d = 0; d < rank; d++) {
    o->dims[d] = dims[d];
    n *= (uint64_t)(dims[d] > 0 ? dims[d] : 0);
  }
  o->bytes = n * ar_dtype_size(o->dtype);
}

/* A recurrent op's state input `i` (a variable tensor with one row per batch row: RNN's hidden
 * state, SVDF's activation state, LSTM's output and cell state) follows the batch of the op's
 * input: with node->infer_shapes (a re-prepare after an input resize) its dim 0 becomes `batch`.
 * arenad's rule (TFLite's prepare refuses such a resize unless the caller also resizes the
 * variable with ResizeInputTensor): the interpreter lays the state slot out again at the next
 * place, resets that piece and keeps the others (interp/ar_state.c, ar_interp_state_note). */
static inline void ar_k_state_follows_batch(const ar_node_t *node, int i, int32_t batch) {
  ar_tview_t *s = i < node->n_inputs ? node->inputs[i] : NULL;
  if (!node->infer_shapes || !s || s->is_constant || s->rank < 1 || batch < 1 || s->dims[0] == batch) return;
  uint64_t n = (uint64_t)batch;
  for (int32_t d = 1; d < s->rank; d++) n *= (uint64_t)(s->dims[d] > 0 ? s->dims[d] : 0);
  s->dims[0] = batch;
  s->bytes = n * ar_dtype_size(s->dtype);
}

/* The stored shape of output 0 equals the inferred (rank, dims); with node->infer_shapes (a
 * re-prepare after an input resize) the inferred shape is written into output 0 instead. */
static inline int ar_k_check_output_shape(const ar_node_t *node, int32_t rank,
                                          const int32_t *dims, char *msg, size_t msg_bytes) {
  if (node->infer_shapes && !node->outputs[0]->is_constant) ar_k_set_output_shape(node, 0, rank, dims);
  const ar_tview_t *o = node->outputs[0];
  bool same = o->rank == rank;
  for (int32_t i = 0; same && i < rank; i++) same = o->dims[i] == dims[i];
  if (!same) {
    char a[96], b[96];
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "output shape %s, inferred %s",
                    ar_k_dims_str(a, sizeof a, o->rank, o->dims), ar_k_dims_str(b, sizeof b, rank, dims));
  }
  return 0;
}

/* The stored shape of output `k` equals the inferred (rank, dims) (multi-output ops); with
 * node->infer_shapes the inferred shape is written into output `k` instead, as for output 0. */
static inline int ar_k_check_output_shape_at(const ar_node_t *node, int k, int32_t rank,
                                             const int32_t *dims, char *msg, size_t msg_bytes) {
  if (node->infer_shapes && !node->outputs[k]->is_constant) ar_k_set_output_shape(node, k, rank, dims);
  const ar_tview_t *o = node->outputs[k];
  bool same = o->rank == rank;
  for (int32_t i = 0; same && i < rank; i++) same = o->dims[i] == dims[i];
  if (!same) {
    char a[96], b[96];
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "output %d shape %s, inferred %s", k,
                    ar_k_dims_str(a, sizeof a, o->rank, o->dims), ar_k_dims_str(b, sizeof b, rank, dims));
  }
  return 0;
}

/* The one place kernels refuse an operand whose VALUES decide the output shape (TFLite makes the
 * output a dynamic tensor then: STRIDED_SLICE/SLICE begin/end/size, TILE multiples, BROADCAST_TO
 * shape, SPLIT axis, EXPAND_DIMS axis, TRANSPOSE perm, RESIZE_* size, TRANSPOSE_CONV output_shape).
 * Returns 0 when `t` is a constant whose data are readable at prepare, else AR_EUNSUPPORTED with
 * "<what> is not a constant (its values decide the output shape and are known only at invoke, ...)".
 * A value the interpreter knows at prepare (value_known) is accepted like a constant: a graph input
 * that sets a shape (it re-prepares when the value changes, ar_interp_set_shape_input) or a tensor
 * computed at prepare from input shapes and constants (SHAPE and what follows it,
 * interp/ar_prepval.c). */
static inline int ar_k_require_constant(const ar_node_t *node, const ar_tview_t *t, const char *what,
                                        char *msg, size_t msg_bytes) {
  if ((t->is_constant || t->value_known) && t->data) return 0;
  return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s is not a constant (its values decide "
                  "the output shape and are known only at invoke, not computed from shapes and constants "
                  "at prepare; dynamic shapes are not supported)", what);
}

/* `t` is an index tensor: int32 or int64. */
static inline int ar_k_check_index_dtype(const ar_node_t *node, const ar_tview_t *t, const char *what,
                                         char *msg, size_t msg_bytes) {
  if (t->dtype == AR_DTYPE_INT32 || t->dtype == AR_DTYPE_INT64) return 0;
  return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s has dtype %s, expected INT32 or INT64",
                  what, ar_dtype_name(t->dtype));
}

/* Element i of an int32 or int64 index tensor. */
static inline int64_t ar_k_index_at(const ar_tview_t *t, int64_t i) {
  if (t->dtype == AR_DTYPE_INT64) { int64_t v; memcpy(&v, (const char *)t->data + i * 8, 8); return v; }
  int32_t v;
  memcpy(&v, (const char *)t->data + i * 4, 4);
  return v;
}

/* Row-major element strides of a view. */
static inline void ar_k_strides(const ar_tview_t *t, int64_t *stride) {
  int64_t s = 1;
  for (int32_t d = t->rank - 1; d >= 0; d--) { stride[d] = s; s *= t->dims[d]; }
}

/* A data-movement op: output `k` has the dtype of `in` and that dtype has a byte size. */
static inline int ar_k_check_same_dtype(const ar_node_t *node, const ar_tview_t *in, int k,
                                        char *msg, size_t msg_bytes) {
  const ar_tview_t *o = node->outputs[k];
  if (ar_dtype_size(in->dtype) == 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input dtype %s is not supported",
                    ar_dtype_name(in->dtype));
  if (o->dtype != in->dtype)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "output %d dtype %s differs from input dtype %s",
                    k, ar_dtype_name(o->dtype), ar_dtype_name(in->dtype));
  return 0;
}

/* Fused activation as a clamp range (TFLite CalculateActivationRange): NONE -> (-inf, inf),
 * RELU -> [0, inf), RELU_N1_TO_1 -> [-1, 1], RELU6 -> [0, 6]. TANH and SIGN_BIT are not ranges:
 * *post is set and the kernel applies ar_apply_activation over its output afterwards. Returns
 * AR_EUNSUPPORTED for values outside TFLite's ActivationFunctionType. */
static inline int ar_k_activation(const ar_node_t *node, ar_activation_t act, float *lo, float *hi,
                                  bool *post, char *msg, size_t msg_bytes) {
  *lo = -INFINITY; *hi = INFINITY; *post = false;
  switch (act) {
  case AR_ACT_NONE: return 0;
  case AR_ACT_RELU: *lo = 0.0f; return 0;
  case AR_ACT_RELU_N1_TO_1: *lo = -1.0f; *hi = 1.0f; return 0;
  case AR_ACT_RELU6: *lo = 0.0f; *hi = 6.0f; return 0;
  case AR_ACT_TANH: case AR_ACT_SIGN_BIT: *post = true; return 0;
  }
  return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "fused activation %d is not supported",
                  (int)act);
}

/* Clamp written so the compiler turns it into vector min/max (NaN passes through). */
static inline float ar_k_clamp(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

/* Copy a prepared state struct into node->state at init (state_bytes bytes were planned). */
static inline void ar_k_store_state(ar_node_t *node, const void *st, size_t bytes) {
  if (node->state && bytes <= node->state_bytes) memcpy(node->state, st, bytes);
}

#endif /* AR_KERNEL_CHECK_H */
