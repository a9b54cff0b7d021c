/* logical.c - TFLite's boolean operators LOGICAL_AND, LOGICAL_OR (NumPy broadcasting), LOGICAL_NOT,
 * and SELECT (version 1 of the operator; SELECT_V2, which broadcasts, is kernels/binary.c).
 *
 * LOGICAL_AND / LOGICAL_OR: two bool tensors, output bool of the broadcast shape (each dimension
 * equal or 1, aligned at the last one; TFLite's kernel stops at rank 4 when it has to broadcast,
 * this one takes any rank up to AR_MAX_RANK). A bool byte other than 0 counts as true and the
 * output is always 0 or 1.
 *
 * SELECT: out = cond ? x : y with x, y of one dtype (float32, int32, int64, uint8, int8, int16,
 * bool) and shape, and the condition either of that same shape (element by element), a scalar
 * (picks all of x or all of y), or of rank 1 and x's first dimension (picks whole slices
 * x[i, ...] or y[i, ...]), as TFLite's select.cc for kVersionOne.
 */
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

/* ---- broadcasting ---- */

/* The broadcast shape of a and b into (rank, dims); 0 or AR_ESHAPE naming both shapes. */
static int bcast_shape(const ar_node_t *node, const ar_tview_t *a, const ar_tview_t *b, int32_t *rank,
                       int32_t *dims, char *msg, size_t msg_bytes) {
  const int32_t r = a->rank > b->rank ? a->rank : b->rank;
  for (int32_t i = 0; i < r; i++) {
    const int32_t ia = i - (r - a->rank), ib = i - (r - b->rank);
    const int32_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char x[96], y[96];
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input shapes %s and %s do not broadcast",
                      ar_k_dims_str(x, sizeof x, a->rank, a->dims), ar_k_dims_str(y, sizeof y, b->rank, b->dims));
    }
    dims[i] = da == 1 ? db : da;
  }
  *rank = r;
  return 0;
}

/* Element strides of `t` as seen from an output of rank r: 0 along the dimensions it broadcasts. */
static void bcast_strides(const ar_tview_t *t, int32_t r, int64_t *stride) {
  int64_t s = 1;
  for (int32_t i = r - 1; i >= 0; i--) {
    const int32_t it = i - (r - t->rank);
    const int32_t d = it >= 0 ? t->dims[it] : 1;
    stride[i] = d == 1 ? 0 : s;
    s *= d;
  }
}

/* ---- LOGICAL_AND / LOGICAL_OR ---- */

static int logical_binary_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *a = node->inputs[0], *b = node->inputs[1];
  if ((rc = ar_k_check_dtype(node, a, "input 0", AR_DTYPE_BOOL, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, b, "input 1", AR_DTYPE_BOOL, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_BOOL, msg, msg_bytes)))
    return rc;
  int32_t rank = 0, dims[AR_MAX_RANK] = {0};
  if ((rc = bcast_shape(node, a, b, &rank, dims, msg, msg_bytes))) return rc;
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, rank, dims, msg, msg_bytes);
}

static void logical_binary_eval(const ar_node_t *node) {
  const ar_tview_t *a = node->inputs[0], *b = node->inputs[1], *o = node->outputs[0];
  const uint8_t *pa = a->data, *pb = b->data;
  uint8_t *po = o->data;
  const bool is_and = node->op == AR_OP_LOGICAL_AND;
  const int64_t n = ar_k_elements(o);
  if (n == 0) return;
  if (ar_k_elements(a) == n && ar_k_elements(b) == n) {   /* same shape */
    if (is_and)
      for (int64_t i = 0; i < n; i++) po[i] = (uint8_t)((pa[i] != 0) & (pb[i] != 0));
    else
      for (int64_t i = 0; i < n; i++) po[i] = (uint8_t)((pa[i] != 0) | (pb[i] != 0));
    return;
  }
  const int32_t r = o->rank;
  int64_t sa[AR_MAX_RANK], sb[AR_MAX_RANK];
  int32_t idx[AR_MAX_RANK] = {0};
  bcast_strides(a, r, sa);
  bcast_strides(b, r, sb);
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < n; i++) {
    const bool x = pa[oa] != 0, y = pb[ob] != 0;
    po[i] = (uint8_t)(is_and ? (x && y) : (x || y));
    for (int32_t d = r - 1; d >= 0; d--) {   /* odometer over the output's index */
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < o->dims[d]) break;
      oa -= sa[d] * o->dims[d];
      ob -= sb[d] * o->dims[d];
      idx[d] = 0;
    }
  }
}

/* ---- LOGICAL_NOT ---- */

static int logical_not_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  if ((rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_BOOL, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_BOOL, msg, msg_bytes)))
    return rc;
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

static void logical_not_eval(const ar_node_t *node) {
  const uint8_t *in = node->inputs[0]->data;
  uint8_t *out = node->outputs[0]->data;
  const int64_t n = ar_k_elements(node->inputs[0]);
  for (int64_t i = 0; i < n; i++) out[i] = (uint8_t)(in[i] == 0);
}

/* ---- SELECT (v1) ---- */

static bool select_dtype(ar_dtype_t t) {
  switch (t) {
  case AR_DTYPE_FLOAT32: case AR_DTYPE_INT32: case AR_DTYPE_INT64: case AR_DTYPE_UINT8:
  case AR_DTYPE_INT8: case AR_DTYPE_INT16: case AR_DTYPE_BOOL:
    return true;
  default:
    return false;
  }
}

static bool same_dims(const ar_tview_t *a, const ar_tview_t *b) {
  if (a->rank != b->rank) return false;
  for (int32_t i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

static int select_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 3, 3, 3, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *c = node->inputs[0], *x = node->inputs[1], *y = node->inputs[2];
  char tn[96], a[96], b[96];
  if ((rc = ar_k_check_dtype(node, c, "input 0 (condition)", AR_DTYPE_BOOL, msg, msg_bytes))) return rc;
  if (!select_dtype(x->dtype))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 1%s has dtype %s (float32, int32, "
                    "int64, uint8, int8, int16 or bool)", ar_k_tname(x, tn, sizeof tn), ar_dtype_name(x->dtype));
  if ((rc = ar_k_check_dtype(node, y, "input 2", x->dtype, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", x->dtype, msg, msg_bytes)))
    return rc;
  if (!same_dims(x, y))
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "inputs 1 and 2 have shapes %s and %s (SELECT "
                    "needs one shape; SELECT_V2 broadcasts)", ar_k_dims_str(a, sizeof a, x->rank, x->dims),
                    ar_k_dims_str(b, sizeof b, y->rank, y->dims));
  const bool low_rank = c->rank == 0 || (c->rank == 1 && x->rank >= 1 && c->dims[0] == x->dims[0]);
  if (!same_dims(c, x) && !low_rank)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "condition shape %s is neither the inputs' %s, a "
                    "scalar, nor [%d] (their first dimension)", ar_k_dims_str(a, sizeof a, c->rank, c->dims),
                    ar_k_dims_str(b, sizeof b, x->rank, x->dims), x->rank ? (int)x->dims[0] : 0);
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, x->rank, x->dims, msg, msg_bytes);
}

static void select_eval(const ar_node_t *node) {
  const ar_tview_t *c = node->inputs[0], *x = node->inputs[1];
  const uint8_t *pc = c->data;
  const char *px = x->data, *py = node->inputs[2]->data;
  char *po = node->outputs[0]->data;
  const size_t es = ar_dtype_size(x->dtype);
  const int64_t n = ar_k_elements(x);
  if (n == 0) return;
  /* outer slices of `inner` elements, one condition byte each (same shape: inner = 1). */
  const int64_t outer = ar_k_elements(c);
  const int64_t inner = outer ? n / outer : 0;
  if (inner == 1) {
    switch (es) {
    case 1: for (int64_t i = 0; i < n; i++) po[i] = pc[i] ? px[i] : py[i]; break;
    case 2: {
      const int16_t *sx = (const int16_t *)px, *sy = (const int16_t *)py;
      int16_t *so = (int16_t *)po;
      for (int64_t i = 0; i < n; i++) so[i] = pc[i] ? sx[i] : sy[i];
      break;
    }
    case 4: {
      const int32_t *sx = (const int32_t *)px, *sy = (const int32_t *)py;
      int32_t *so = (int32_t *)po;
      for (int64_t i = 0; i < n; i++) so[i] = pc[i] ? sx[i] : sy[i];
      break;
    }
    default: {
      const int64_t *sx = (const int64_t *)px, *sy = (const int64_t *)py;
      int64_t *so = (int64_t *)po;
      for (int64_t i = 0; i < n; i++) so[i] = pc[i] ? sx[i] : sy[i];
      break;
    }
    }
    return;
  }
  const size_t row = (size_t)inner * es;
  for (int64_t i = 0; i < outer; i++) {
    const char *src = (pc[i] ? px : py) + (size_t)i * row;
    if (po + (size_t)i * row != src) memmove(po + (size_t)i * row, src, row);
  }
}

static const ar_kernel_form_t bool_forms[] = { AR_KF(1, 1, BOOL, BOOL) };
/* SELECT: the values' dtype (input 1); version 2 marks int8, 3 rank 5 (any dtype runs at any). */
static const ar_kernel_form_t select_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32), AR_KF(1, 3, INT32, INT32), AR_KF(1, 3, INT64, INT64),
  AR_KF(1, 3, UINT8, UINT8), AR_KF(1, 3, INT8, INT8), AR_KF(1, 3, INT16, INT16), AR_KF(1, 3, BOOL, BOOL),
};

/* TFLite LOGICAL_AND (builtin 86), LOGICAL_OR (84): bool, broadcasting; LOGICAL_NOT (87). */
const ar_kernel_t ar_kernel_logical_and = { "LOGICAL_AND", logical_binary_prepare, NULL, logical_binary_eval,
                                            AR_KSUPPORT(bool_forms, 0, -1) };
const ar_kernel_t ar_kernel_logical_or = { "LOGICAL_OR", logical_binary_prepare, NULL, logical_binary_eval,
                                           AR_KSUPPORT(bool_forms, 0, -1) };
const ar_kernel_t ar_kernel_logical_not = { "LOGICAL_NOT", logical_not_prepare, NULL, logical_not_eval,
                                            AR_KSUPPORT(bool_forms, 0, -1) };
/* TFLite SELECT (builtin 64): cond same shape, scalar, or rank 1 over x's first dimension. */
const ar_kernel_t ar_kernel_select = { "SELECT", select_prepare, NULL, select_eval,
                                       AR_KSUPPORT(select_forms, 1, -1) };
