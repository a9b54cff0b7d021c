/* pack.c - TFLite PACK, UNPACK, SPLIT, SPLIT_V, SQUEEZE and EXPAND_DIMS: ops that cut a tensor into
 * pieces along one axis, join pieces along a new axis, or only change the shape.
 *
 * Along an axis, a row-major tensor is `outer` blocks (product of the dims before the axis), each
 * the concatenation of its pieces' runs (piece size along the axis times the product of the dims
 * after it). SPLIT, SPLIT_V and UNPACK copy, per outer block, one run to each output; PACK copies
 * one run from each input. SQUEEZE and EXPAND_DIMS keep the bytes and copy them unless the output
 * already is the input. All move bytes: every dtype with a size works, outputs keep the input's.
 */
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

/* Node state: as many runs as the node has pieces (any count the model holds). */
typedef struct {
  int32_t n;                           /* pieces (outputs of a split, inputs of a pack) */
  int64_t outer;                       /* blocks */
  int64_t run[];                       /* n entries: bytes of piece k per block */
} pieces_state_t;

/* Checks the node; with `st` (node state of pieces_bytes), fills it too. */
typedef int (*pieces_plan_fn)(const ar_node_t *node, pieces_state_t *st, char *msg, size_t msg_bytes);

static uint64_t pieces_bytes(int32_t n) {
  return sizeof(pieces_state_t) + (uint64_t)(n > 0 ? n : 0) * sizeof(int64_t);
}
static int pieces_prepare(ar_node_t *node, int32_t n, pieces_plan_fn plan, char *msg, size_t msg_bytes) {
  node->state_bytes = pieces_bytes(n);
  return plan(node, NULL, msg, msg_bytes);
}
static void pieces_init(ar_node_t *node, int32_t n, pieces_plan_fn plan) {
  if (node->state && node->state_bytes >= pieces_bytes(n)) plan(node, node->state, NULL, 0);
}

/* Split: input 0 of the "data" operand at index `data`, one run per output per block. */
static void split_run(const ar_node_t *node, const void *data) {
  const pieces_state_t *st = node->state;
  const char *src = data;
  for (int64_t b = 0; b < st->outer; b++)
    for (int32_t k = 0; k < st->n; k++) {
      memcpy((char *)node->outputs[k]->data + b * st->run[k], src, (size_t)st->run[k]);
      src += st->run[k];
    }
}

/* Normalise an axis in [-rank, rank) (TFLite's rule for an existing axis). */
static int axis_in(const ar_node_t *node, int64_t axis, int32_t rank, int32_t *out, char *msg,
                   size_t msg_bytes) {
  if (axis < -rank || axis >= rank)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "axis %lld out of range for rank %d",
                    (long long)axis, (int)rank);
  *out = (int32_t)(axis < 0 ? axis + rank : axis);
  return 0;
}

/* The sizes of a split's pieces along the axis: `each` for every piece (SPLIT), or size_splits
 * `ts` with entry `minus` (-1 for none) taking `rest` (SPLIT_V). */
typedef struct { const ar_tview_t *ts; int64_t each, rest; int32_t minus; } split_sizes_t;

static int64_t split_size(const split_sizes_t *sz, int32_t k) {
  if (!sz->ts) return sz->each;
  return k == sz->minus ? sz->rest : ar_k_index_at(sz->ts, k);
}

/* Fill st->outer and the per-piece runs of a split of `in` along `axis` (st NULL: check only).
 * Checks every output's dtype and shape (the input's with piece k's size at the axis). */
static int split_common(const ar_node_t *node, const ar_tview_t *in, int32_t axis,
                        const split_sizes_t *sz, pieces_state_t *st, char *msg, size_t msg_bytes) {
  const size_t es = ar_dtype_size(in->dtype);
  int64_t inner = 1, outer = 1;
  for (int32_t d = 0; d < axis; d++) outer *= in->dims[d];
  for (int32_t d = axis + 1; d < in->rank; d++) inner *= in->dims[d];
  if (st) {
    st->outer = outer;
    st->n = node->n_outputs;
  }
  int32_t od[AR_MAX_RANK];
  memcpy(od, in->dims, sizeof od);
  for (int32_t k = 0; k < node->n_outputs; k++) {
    int rc;
    if ((rc = ar_k_check_same_dtype(node, in, k, msg, msg_bytes))) return rc;
    const int64_t size = split_size(sz, k);
    od[axis] = (int32_t)size;
    if ((rc = ar_k_check_output_shape_at(node, k, in->rank, od, msg, msg_bytes))) return rc;
    if (st) st->run[k] = size * inner * (int64_t)es;
  }
  return 0;
}

/* -------------------------------------------------------------------- SPLIT */

/* TFLite split.cc: inputs (axis: int32 scalar, input); num_splits equal pieces along the axis. */
static int split_plan(const ar_node_t *node, pieces_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, node->n_outputs, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *ta = node->inputs[0], *in = node->inputs[1];
  if ((rc = ar_k_check_index_dtype(node, ta, "axis (input 0)", msg, msg_bytes))) return rc;
  if (ar_k_elements(ta) != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "axis (input 0) must hold one value");
  if ((rc = ar_k_require_constant(node, ta, "axis (input 0)", msg, msg_bytes))) return rc;
  if (ar_dtype_size(in->dtype) == 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input dtype %s", ar_dtype_name(in->dtype));
  int32_t axis;
  if ((rc = axis_in(node, ar_k_index_at(ta, 0), in->rank, &axis, msg, msg_bytes))) return rc;
  const int32_t ns = node->options ? node->options->split.num_splits : 0;
  if (ns != node->n_outputs || ns < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "num_splits %d but %d outputs", (int)ns,
                    (int)node->n_outputs);
  if (in->dims[axis] % ns)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "dim %d (%d) is not a multiple of num_splits %d",
                    (int)axis, (int)in->dims[axis], (int)ns);
  const split_sizes_t sz = {.ts = NULL, .each = in->dims[axis] / ns, .minus = -1};
  return split_common(node, in, axis, &sz, st, msg, msg_bytes);
}

static int split_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  return pieces_prepare(node, node->n_outputs, split_plan, msg, msg_bytes);
}
static void split_init(ar_node_t *node) { pieces_init(node, node->n_outputs, split_plan); }
static void split_eval(const ar_node_t *node) { split_run(node, node->inputs[1]->data); }

/* TFLite SPLIT (builtin 49): constant axis, equal pieces. */
static const ar_kernel_form_t split_forms[] = {
  AR_KF_DATA(1, 4),
};
const ar_kernel_t ar_kernel_split = { "SPLIT", split_prepare, split_init, split_eval,
  AR_KSUPPORT(split_forms, 1, -1) };

/* ------------------------------------------------------------------ SPLIT_V */

/* TFLite split_v.cc: inputs (input, size_splits: int vector, axis: int32 scalar); at most one
 * size is -1 and takes what the others leave. */
static int splitv_plan(const ar_node_t *node, pieces_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 3, 3, 3, node->n_outputs, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *ts = node->inputs[1], *ta = node->inputs[2];
  if ((rc = ar_k_check_index_dtype(node, ts, "size_splits (input 1)", msg, msg_bytes)) ||
      (rc = ar_k_check_index_dtype(node, ta, "axis (input 2)", msg, msg_bytes)))
    return rc;
  if (ar_k_elements(ta) != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "axis (input 2) must hold one value");
  if (ts->rank != 1 || ts->dims[0] != node->n_outputs)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "size_splits must be a vector of %d entries",
                    (int)node->n_outputs);
  if ((rc = ar_k_require_constant(node, ta, "axis (input 2)", msg, msg_bytes)) ||
      (rc = ar_k_require_constant(node, ts, "size_splits (input 1)", msg, msg_bytes)))
    return rc;
  if (ar_dtype_size(in->dtype) == 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input dtype %s", ar_dtype_name(in->dtype));
  int32_t axis;
  if ((rc = axis_in(node, ar_k_index_at(ta, 0), in->rank, &axis, msg, msg_bytes))) return rc;
  int64_t sum = 0;
  split_sizes_t sz = {.ts = ts, .minus = -1};
  for (int32_t k = 0; k < node->n_outputs; k++) {
    const int64_t size = ar_k_index_at(ts, k);
    if (size == -1 && sz.minus < 0) { sz.minus = k; continue; }
    if (size < 0)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "size_splits[%d] = %lld", (int)k, (long long)size);
    sum += size;
  }
  if (sz.minus >= 0) {
    sz.rest = in->dims[axis] - sum;
    sum = in->dims[axis];
  }
  if (sum != in->dims[axis] || (sz.minus >= 0 && sz.rest < 0))
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "size_splits add up to %lld, dim %d is %d",
                    (long long)sum, (int)axis, (int)in->dims[axis]);
  return split_common(node, in, axis, &sz, st, msg, msg_bytes);
}

static int splitv_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  return pieces_prepare(node, node->n_outputs, splitv_plan, msg, msg_bytes);
}
static void splitv_init(ar_node_t *node) { pieces_init(node, node->n_outputs, splitv_plan); }
static void splitv_eval(const ar_node_t *node) { split_run(node, node->inputs[0]->data); }

/* TFLite SPLIT_V (builtin 102): constant size_splits (one -1 allowed) and axis. */
static const ar_kernel_form_t split_v_forms[] = {
  AR_KF_DATA(1, 2),
};
const ar_kernel_t ar_kernel_split_v = { "SPLIT_V", splitv_prepare, splitv_init, splitv_eval,
  AR_KSUPPORT(split_v_forms, 0, -1) };

/* ------------------------------------------------------------------- UNPACK */

/* TFLite unpack.cc: `num` outputs, each the input without dim `axis` (in [-rank, rank)). */
static int unpack_plan(const ar_node_t *node, pieces_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, node->n_outputs, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  if (ar_dtype_size(in->dtype) == 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input dtype %s", ar_dtype_name(in->dtype));
  int32_t axis;
  if ((rc = axis_in(node, node->options ? node->options->pack.axis : 0, in->rank, &axis, msg, msg_bytes)))
    return rc;
  const int32_t num = node->options ? node->options->pack.count : 0;
  if (num != in->dims[axis] || num != node->n_outputs)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "num %d, dim %d is %d, %d outputs", (int)num,
                    (int)axis, (int)in->dims[axis], (int)node->n_outputs);
  int64_t inner = 1, outer = 1;
  for (int32_t d = 0; d < axis; d++) outer *= in->dims[d];
  for (int32_t d = axis + 1; d < in->rank; d++) inner *= in->dims[d];
  if (st) {
    st->outer = outer;
    st->n = num;
  }
  int32_t od[AR_MAX_RANK], r = 0;
  for (int32_t d = 0; d < in->rank; d++)
    if (d != axis) od[r++] = in->dims[d];
  for (int32_t k = 0; k < num; k++) {
    if ((rc = ar_k_check_same_dtype(node, in, k, msg, msg_bytes)) ||
        (rc = ar_k_check_output_shape_at(node, k, r, od, msg, msg_bytes)))
      return rc;
    if (st) st->run[k] = inner * (int64_t)ar_dtype_size(in->dtype);
  }
  return 0;
}

static int unpack_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  return pieces_prepare(node, node->n_outputs, unpack_plan, msg, msg_bytes);
}
static void unpack_init(ar_node_t *node) { pieces_init(node, node->n_outputs, unpack_plan); }
static void unpack_eval(const ar_node_t *node) { split_run(node, node->inputs[0]->data); }

/* TFLite UNPACK (builtin 88). */
static const ar_kernel_form_t unpack_forms[] = {
  AR_KF_DATA(1, 4),
};
const ar_kernel_t ar_kernel_unpack = { "UNPACK", unpack_prepare, unpack_init, unpack_eval,
  AR_KSUPPORT(unpack_forms, 0, -1) };

/* --------------------------------------------------------------------- PACK */

/* TFLite pack.cc: values_count inputs of one shape, stacked along a new axis in [-(rank+1), rank]. */
static int pack_plan(const ar_node_t *node, pieces_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, INT32_MAX, node->n_inputs, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *t0 = node->inputs[0];
  const int32_t n = node->n_inputs, count = node->options ? node->options->pack.count : 0;
  if (count != n)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "values_count %d but %d inputs", (int)count, (int)n);
  if ((rc = ar_k_check_same_dtype(node, t0, 0, msg, msg_bytes))) return rc;
  if (t0->rank + 1 > AR_MAX_RANK)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input rank %d", (int)t0->rank);
  int32_t axis;
  if ((rc = axis_in(node, node->options->pack.axis, t0->rank + 1, &axis, msg, msg_bytes))) return rc;
  for (int32_t i = 1; i < n; i++) {
    const ar_tview_t *t = node->inputs[i];
    if (t->dtype != t0->dtype || t->rank != t0->rank ||
        memcmp(t->dims, t0->dims, (size_t)t0->rank * sizeof(int32_t)) != 0) {
      char a[96], b[96];
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input %d (%s %s) differs from input 0 (%s %s)",
                      (int)i, ar_dtype_name(t->dtype), ar_k_dims_str(a, sizeof a, t->rank, t->dims),
                      ar_dtype_name(t0->dtype), ar_k_dims_str(b, sizeof b, t0->rank, t0->dims));
    }
  }
  int64_t inner = 1, outer = 1;
  int32_t od[AR_MAX_RANK], r = 0;
  for (int32_t d = 0; d < axis; d++) { outer *= t0->dims[d]; od[r++] = t0->dims[d]; }
  od[r++] = n;
  for (int32_t d = axis; d < t0->rank; d++) { inner *= t0->dims[d]; od[r++] = t0->dims[d]; }
  if (st) {
    st->outer = outer;
    st->n = n;
    for (int32_t i = 0; i < n; i++) st->run[i] = inner * (int64_t)ar_dtype_size(t0->dtype);
  }
  return ar_k_check_output_shape(node, r, od, msg, msg_bytes);
}

static int pack_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  return pieces_prepare(node, node->n_inputs, pack_plan, msg, msg_bytes);
}
static void pack_init(ar_node_t *node) { pieces_init(node, node->n_inputs, pack_plan); }
static void pack_eval(const ar_node_t *node) {
  const pieces_state_t *st = node->state;
  char *dst = node->outputs[0]->data;
  for (int64_t b = 0; b < st->outer; b++)
    for (int32_t k = 0; k < st->n; k++) {
      memcpy(dst, (const char *)node->inputs[k]->data + b * st->run[k], (size_t)st->run[k]);
      dst += st->run[k];
    }
}

/* TFLite PACK (builtin 83). */
static const ar_kernel_form_t pack_forms[] = {
  AR_KF_DATA(1, 4),
};
const ar_kernel_t ar_kernel_pack = { "PACK", pack_prepare, pack_init, pack_eval,
  AR_KSUPPORT(pack_forms, 0, -1) };

/* ------------------------------------------------------ SQUEEZE, EXPAND_DIMS */

static void same_bytes_eval(const ar_node_t *node) {
  const ar_tview_t *in = node->inputs[0];
  void *out = node->outputs[0]->data;
  if (out != in->data) memmove(out, in->data, (size_t)in->bytes);
}

/* TFLite squeeze.cc: drop the listed dims (negative counts from the end; each must be 1), or every
 * dim of size 1 when squeeze_dims is empty. */
static int squeeze_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  node->state_bytes = 0;
  if ((rc = ar_k_check_same_dtype(node, in, 0, msg, msg_bytes))) return rc;
  bool drop[AR_MAX_RANK] = {false};
  const ar_squeeze_options_t *o = node->options ? &node->options->squeeze : NULL;
  if (!o || o->n_dims == 0) {
    for (int32_t d = 0; d < in->rank; d++) drop[d] = in->dims[d] == 1;
  } else {
    for (int32_t i = 0; i < o->n_dims; i++) {
      int32_t d;
      if ((rc = axis_in(node, o->dims[i], in->rank, &d, msg, msg_bytes))) return rc;
      if (in->dims[d] != 1)
        return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "squeeze dim %d has size %d, not 1", (int)d,
                        (int)in->dims[d]);
      drop[d] = true;
    }
  }
  int32_t od[AR_MAX_RANK], r = 0;
  for (int32_t d = 0; d < in->rank; d++)
    if (!drop[d]) od[r++] = in->dims[d];
  return ar_k_check_output_shape(node, r, od, msg, msg_bytes);
}

/* TFLite SQUEEZE (builtin 43). */
static const ar_kernel_form_t squeeze_forms[] = {
  AR_KF_DATA(1, 2),
};
const ar_kernel_t ar_kernel_squeeze = { "SQUEEZE", squeeze_prepare, NULL, same_bytes_eval,
  AR_KSUPPORT(squeeze_forms, 0, -1) };

/* TFLite expand_dims.cc: inputs (input, axis: one int32/int64); a dim of 1 is inserted at axis in
 * [-(rank+1), rank]. */
static int expand_dims_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *ta = node->inputs[1];
  node->state_bytes = 0;
  if ((rc = ar_k_check_same_dtype(node, in, 0, msg, msg_bytes)) ||
      (rc = ar_k_check_index_dtype(node, ta, "axis (input 1)", msg, msg_bytes)))
    return rc;
  if (ar_k_elements(ta) != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "axis (input 1) must hold one value");
  if ((rc = ar_k_require_constant(node, ta, "axis (input 1)", msg, msg_bytes))) return rc;
  if (in->rank + 1 > AR_MAX_RANK)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input rank %d", (int)in->rank);
  int32_t axis;
  if ((rc = axis_in(node, ar_k_index_at(ta, 0), in->rank + 1, &axis, msg, msg_bytes))) return rc;
  int32_t od[AR_MAX_RANK], r = 0;
  for (int32_t d = 0; d < axis; d++) od[r++] = in->dims[d];
  od[r++] = 1;
  for (int32_t d = axis; d < in->rank; d++) od[r++] = in->dims[d];
  return ar_k_check_output_shape(node, r, od, msg, msg_bytes);
}

/* TFLite EXPAND_DIMS (builtin 70): constant axis. */
static const ar_kernel_form_t expand_dims_forms[] = {
  AR_KF_DATA(1, 1),
};
const ar_kernel_t ar_kernel_expand_dims = { "EXPAND_DIMS", expand_dims_prepare, NULL, same_bytes_eval,
  AR_KSUPPORT(expand_dims_forms, 0, -1) };
