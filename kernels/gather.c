/* gather.c - TFLite GATHER and GATHER_ND: copy slices of `params` chosen by an index tensor.
 *
 * The output shape depends only on the shapes (never on the index values), so the indices may be
 * a graph input. Index values are read at eval: TFLite fails the invoke on an out-of-range index;
 * an eval here cannot fail, so such a slice is written as zeros instead (documented divergence;
 * valid indices give TFLite's result bit for bit). Both ops move bytes: any params dtype with a
 * size works (float32, int32, int64, bool, ...); indices are int32 or int64.
 */
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

/* ------------------------------------------------------------------- GATHER */

typedef struct {
  int64_t batch, outer, coords, axis_size;
  int64_t inner_bytes;
} gather_state_t;

/* TFLite gather.cc: axis in [-rank, rank), batch_dims in [-indices rank, indices rank] and
 * <= axis, the first batch_dims dims of params and indices equal; output shape
 * params[:axis] + indices[batch_dims:] + params[axis+1:]. Laid out as
 * [batch][outer][coords][inner], output slice (b, o, c) = params slice (b, o, indices[b, c]). */
static int gather_plan(const ar_node_t *node, gather_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *p = node->inputs[0], *ix = node->inputs[1];
  memset(st, 0, sizeof *st);
  if ((rc = ar_k_check_same_dtype(node, p, 0, msg, msg_bytes)) ||
      (rc = ar_k_check_index_dtype(node, ix, "indices (input 1)", msg, msg_bytes)))
    return rc;
  int32_t axis = node->options ? node->options->gather.axis : 0;
  int32_t bd = node->options ? node->options->gather.batch_dims : 0;
  if (axis < 0) axis += p->rank;
  if (axis < 0 || axis >= p->rank)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "axis %d out of range for params rank %d",
                    (int)node->options->gather.axis, (int)p->rank);
  if (bd < 0) bd += ix->rank;
  if (bd < 0 || bd > ix->rank || bd > axis)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "batch_dims %d (indices rank %d, axis %d)",
                    (int)node->options->gather.batch_dims, (int)ix->rank, (int)axis);
  if (p->rank - 1 + ix->rank - bd > AR_MAX_RANK)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "output rank above %d", AR_MAX_RANK);
  int32_t od[AR_MAX_RANK], r = 0;
  st->batch = st->outer = st->coords = 1;
  int64_t inner = 1;
  for (int32_t d = 0; d < bd; d++) {
    if (p->dims[d] != ix->dims[d])
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "batch dim %d: params %d, indices %d", (int)d,
                      (int)p->dims[d], (int)ix->dims[d]);
    st->batch *= p->dims[d];
  }
  for (int32_t d = 0; d < axis; d++) od[r++] = p->dims[d];
  for (int32_t d = bd; d < axis; d++) st->outer *= p->dims[d];
  for (int32_t d = bd; d < ix->rank; d++) { od[r++] = ix->dims[d]; st->coords *= ix->dims[d]; }
  for (int32_t d = axis + 1; d < p->rank; d++) { od[r++] = p->dims[d]; inner *= p->dims[d]; }
  st->axis_size = p->dims[axis];
  st->inner_bytes = inner * (int64_t)ar_dtype_size(p->dtype);
  return ar_k_check_output_shape(node, r, od, msg, msg_bytes);
}

static int gather_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  gather_state_t st;
  node->state_bytes = sizeof st;
  return gather_plan(node, &st, msg, msg_bytes);
}
static void gather_init(ar_node_t *node) {
  gather_state_t st;
  if (gather_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

static void gather_eval(const ar_node_t *node) {
  const gather_state_t *st = node->state;
  const ar_tview_t *ix = node->inputs[1];
  const char *p = node->inputs[0]->data;
  char *out = node->outputs[0]->data;
  const size_t ib = (size_t)st->inner_bytes;
  for (int64_t b = 0; b < st->batch; b++)
    for (int64_t o = 0; o < st->outer; o++) {
      const char *src = p + ((b * st->outer + o) * st->axis_size) * st->inner_bytes;
      for (int64_t c = 0; c < st->coords; c++, out += ib) {
        int64_t i = ar_k_index_at(ix, b * st->coords + c);
        if (i >= 0 && i < st->axis_size) memcpy(out, src + i * st->inner_bytes, ib);
        else memset(out, 0, ib);
      }
    }
}

/* TFLite GATHER (builtin 36): axis and batch_dims options (negative count from the end). */
static const ar_kernel_form_t gather_forms[] = {
  AR_KF_DATA(1, 7),
};
const ar_kernel_t ar_kernel_gather = { "GATHER", gather_prepare, gather_init, gather_eval,
  AR_KSUPPORT(gather_forms, 0, -1) };

/* ---------------------------------------------------------------- GATHER_ND */

typedef struct {
  int32_t depth;                       /* K = indices.dims[-1] */
  int64_t n;                           /* index tuples */
  int64_t slice_bytes;                 /* bytes of params[K:] */
  int64_t dims[AR_MAX_RANK];           /* params dims[0:K] */
  int64_t stride[AR_MAX_RANK];         /* in slices */
} gather_nd_state_t;

/* TFLite gather_nd.cc: indices [..., K] with 1 <= K <= params rank; output shape
 * indices[:-1] + params[K:]; tuple j selects params[idx_0, ..., idx_{K-1}, ...]. */
static int gather_nd_plan(const ar_node_t *node, gather_nd_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *p = node->inputs[0], *ix = node->inputs[1];
  memset(st, 0, sizeof *st);
  if ((rc = ar_k_check_same_dtype(node, p, 0, msg, msg_bytes)) ||
      (rc = ar_k_check_index_dtype(node, ix, "indices (input 1)", msg, msg_bytes)))
    return rc;
  if (ix->rank < 1 || p->rank < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "params and indices must have rank >= 1");
  const int32_t k = ix->dims[ix->rank - 1];
  if (k < 1 || k > p->rank)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "index depth %d must be in 1..params rank %d",
                    (int)k, (int)p->rank);
  if (ix->rank - 1 + p->rank - k > AR_MAX_RANK)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "output rank above %d", AR_MAX_RANK);
  int32_t od[AR_MAX_RANK], r = 0;
  st->depth = k;
  st->n = 1;
  for (int32_t d = 0; d < ix->rank - 1; d++) { od[r++] = ix->dims[d]; st->n *= ix->dims[d]; }
  int64_t slice = 1;
  for (int32_t d = k; d < p->rank; d++) { od[r++] = p->dims[d]; slice *= p->dims[d]; }
  st->slice_bytes = slice * (int64_t)ar_dtype_size(p->dtype);
  int64_t s = 1;
  for (int32_t d = k - 1; d >= 0; d--) { st->dims[d] = p->dims[d]; st->stride[d] = s; s *= p->dims[d]; }
  return ar_k_check_output_shape(node, r, od, msg, msg_bytes);
}

static int gather_nd_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  gather_nd_state_t st;
  node->state_bytes = sizeof st;
  return gather_nd_plan(node, &st, msg, msg_bytes);
}
static void gather_nd_init(ar_node_t *node) {
  gather_nd_state_t st;
  if (gather_nd_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

static void gather_nd_eval(const ar_node_t *node) {
  const gather_nd_state_t *st = node->state;
  const ar_tview_t *ix = node->inputs[1];
  const char *p = node->inputs[0]->data;
  char *out = node->outputs[0]->data;
  const size_t sb = (size_t)st->slice_bytes;
  for (int64_t j = 0; j < st->n; j++, out += sb) {
    int64_t off = 0;
    bool ok = true;
    for (int32_t d = 0; d < st->depth; d++) {
      int64_t i = ar_k_index_at(ix, j * st->depth + d);
      if (i < 0 || i >= st->dims[d]) { ok = false; break; }
      off += i * st->stride[d];
    }
    if (ok) memcpy(out, p + off * st->slice_bytes, sb);
    else memset(out, 0, sb);
  }
}

/* TFLite GATHER_ND (builtin 107). */
static const ar_kernel_form_t gather_nd_forms[] = {
  AR_KF_DATA(1, 4),
};
const ar_kernel_t ar_kernel_gather_nd = { "GATHER_ND", gather_nd_prepare, gather_nd_init, gather_nd_eval,
  AR_KSUPPORT(gather_nd_forms, 0, -1) };
