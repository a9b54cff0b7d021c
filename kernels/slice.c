/* slice.c - TFLite STRIDED_SLICE, SLICE, TRANSPOSE, TILE, BROADCAST_TO and SPACE_TO_DEPTH: ops that
 * only move elements, each described at prepare as one strided copy (kernels/strided.h) and run
 * at eval by ar__strided_copy. They move bytes, so every dtype with a size works (float32, int32,
 * int64, bool, ...); the output dtype must equal the input's.
 *
 * Index operands (begin/end/strides, begin/size, perm, multiples, shape) decide the output shape,
 * so they must be constants: a graph-input operand is refused at prepare through
 * ar_k_require_constant (kernels/ar_kernel_check.h). The plan is computed twice, at prepare (to
 * validate and size the state) and at init (to store it), from the same constant data.
 */
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/strided.h"

typedef int (*copy_plan_fn)(const ar_node_t *node, ar__strided_t *cp, char *msg, size_t msg_bytes);

/* Shared prepare/init/eval around a plan function. */
static int copy_prepare(ar_node_t *node, copy_plan_fn plan, char *msg, size_t msg_bytes) {
  ar__strided_t cp;
  node->state_bytes = sizeof cp;
  return plan(node, &cp, msg, msg_bytes);
}
static void copy_init(ar_node_t *node, copy_plan_fn plan) {
  ar__strided_t cp;
  if (plan(node, &cp, NULL, 0) == 0) ar_k_store_state(node, &cp, sizeof cp);
}
static void copy_eval(const ar_node_t *node) {
  ar__strided_copy_node(node, node->state, node->inputs[0]->data, node->outputs[0]->data);
}

/* An index operand: int32/int64, rank 1 of `len` entries (len < 0: any length up to
 * AR_MAX_RANK), constant. */
static int index_operand(const ar_node_t *node, int i, const char *what, int64_t len,
                         char *msg, size_t msg_bytes) {
  const ar_tview_t *t = node->inputs[i];
  int rc;
  char label[48];
  snprintf(label, sizeof label, "%s (input %d)", what, i);
  if ((rc = ar_k_check_index_dtype(node, t, label, msg, msg_bytes))) return rc;
  if (t->rank != 1 || (len >= 0 && t->dims[0] != len) || (len < 0 && t->dims[0] > AR_MAX_RANK))
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "%s must be a vector of %lld entries, has rank "
                    "%d and %d entries", label, (long long)(len >= 0 ? len : AR_MAX_RANK), (int)t->rank,
                    (int)(t->rank ? t->dims[0] : 1));
  return ar_k_require_constant(node, t, label, msg, msg_bytes);
}

/* ------------------------------------------------------------ STRIDED_SLICE */

/* TFLite strided_slice.cc: expand the ellipsis and new axes into an "effective" input of rank
 * input rank + new axes, then per effective dim (StridedSliceStartForAxis/EndForAxis):
 *   start = begin (+ dim if < 0), clamped to [0, dim] (stride > 0) or [-1, dim-1] (stride < 0);
 *           begin_mask: 0 or dim-1
 *   end   = shrink ? start + 1 : end (+ start with `offset`) (+ dim if < 0), clamped likewise;
 *           end_mask: dim or -1
 *   size  = max(ceil((end - start) / stride), 0); shrunk dims are dropped from the output. */
static int ss_plan(const ar_node_t *node, ar__strided_t *cp, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 4, 4, 4, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  if ((rc = ar_k_check_same_dtype(node, in, 0, msg, msg_bytes))) return rc;
  const int64_t n = node->inputs[1]->rank == 1 ? node->inputs[1]->dims[0] : -1;
  if ((rc = index_operand(node, 1, "begin", -1, msg, msg_bytes)) ||
      (rc = index_operand(node, 2, "end", n, msg, msg_bytes)) ||
      (rc = index_operand(node, 3, "strides", n, msg, msg_bytes)))
    return rc;
  const ar_tview_t *tb = node->inputs[1], *te = node->inputs[2], *ts = node->inputs[3];
  ar_strided_slice_options_t o = {0};
  if (node->options) o = node->options->strided_slice;
  if (o.ellipsis_mask & (o.ellipsis_mask - 1))
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "ellipsis_mask 0x%x has more than one bit set",
                    (unsigned)o.ellipsis_mask);
  const int32_t r = in->rank;
  int32_t num_add = 0;
  for (int64_t i = 0; i < n; i++)
    if (!(o.ellipsis_mask & (1 << i)) && (o.new_axis_mask & (1 << i))) num_add++;
  const int32_t eff = r + num_add;
  if (eff > AR_MAX_RANK)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input rank %d plus %d new axes exceeds %d",
                    (int)r, (int)num_add, AR_MAX_RANK);

  /* Which effective dims the ellipsis covers and which are new axes. */
  uint32_t eff_ell = 0, eff_new = 0;
  int32_t ell_start = eff, expanded = 0;
  for (int32_t i = 0; i < eff;) {
    if (o.ellipsis_mask & (1 << i)) {
      ell_start = i;
      int32_t end = (int32_t)AR_MIN((int64_t)i + 1 + num_add + r - n, (int64_t)eff);
      if (end < i + 1) end = i + 1;
      expanded = end - ell_start - 1;
      for (; i < end; i++) eff_ell |= 1u << i;
      continue;
    }
    if (i - expanded < 32 && (o.new_axis_mask & (1 << (i - expanded)))) eff_new |= 1u << i;
    i++;
  }

  int64_t istride[AR_MAX_RANK];
  ar_k_strides(in, istride);
  int64_t cdims[AR_MAX_RANK], cstride[AR_MAX_RANK], base = 0;
  int32_t od[AR_MAX_RANK], orank = 0, added_ell = 0, added_axes = 0;
  for (int32_t i = 0; i < eff; i++) {
    int64_t dim, st = 1, start, end, b = 0, e = 0, s = 1, is = 0;
    bool bmask = false, emask = false, shrink = false;
    if (eff_ell & (1u << i)) {
      added_ell = i - ell_start;
      bmask = emask = true;
      dim = in->dims[i - added_axes];
      is = istride[i - added_axes];
    } else if (eff_new & (1u << i)) {
      dim = 1; b = 0; e = 1;
      added_axes++;
    } else if (i >= n + expanded) {
      bmask = emask = true;
      dim = in->dims[i - added_axes];
      is = istride[i - added_axes];
    } else {
      const int32_t k = i - added_ell;
      b = ar_k_index_at(tb, k); e = ar_k_index_at(te, k); s = ar_k_index_at(ts, k);
      bmask = o.begin_mask & (1 << k);
      emask = o.end_mask & (1 << k);
      shrink = o.shrink_axis_mask & (1 << k);
      dim = in->dims[i - added_axes];
      is = istride[i - added_axes];
    }
    if (s == 0)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "stride %d is 0", (int)(i - added_ell));
    st = s;
    start = b < 0 ? b + dim : b;
    start = st > 0 ? AR_MAX(0, AR_MIN(start, dim)) : AR_MAX(-1, AR_MIN(start, dim - 1));
    if (bmask) start = st > 0 ? 0 : dim - 1;
    if (shrink) {
      if (start < 0 || start >= dim)
        return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "shrink axis %d: index %lld out of range "
                        "for dim %lld", (int)i, (long long)b, (long long)dim);
      end = start + 1;
    } else {
      end = o.offset ? e + start : e;
      if (end < 0) end += dim;
      end = st > 0 ? AR_MAX(0, AR_MIN(end, dim)) : AR_MAX(-1, AR_MIN(end, dim - 1));
      if (emask) end = st > 0 ? dim : -1;
    }
    int64_t size = st > 0 ? (end > start ? (end - start + st - 1) / st : 0)
                          : (start > end ? (start - end - st - 1) / -st : 0);
    cdims[i] = size;
    cstride[i] = st * is;
    if (size > 0) base += start * is;
    if (!shrink) od[orank++] = (int32_t)size;
  }
  if ((rc = ar_k_check_output_shape(node, orank, od, msg, msg_bytes))) return rc;
  ar__strided_init(cp, eff, cdims, cstride, base, ar_dtype_size(in->dtype));
  return 0;
}

static int ss_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  return copy_prepare(node, ss_plan, msg, msg_bytes);
}
static void ss_init(ar_node_t *node) { copy_init(node, ss_plan); }

/* TFLite STRIDED_SLICE (builtin 45): all five masks, negative strides, the `offset` form; constant
 * begin/end/strides. */
static const ar_kernel_form_t strided_slice_forms[] = {
  AR_KF_DATA(1, 8),
};
const ar_kernel_t ar_kernel_strided_slice = { "STRIDED_SLICE", ss_prepare, ss_init, copy_eval,
  AR_KSUPPORT(strided_slice_forms, 0, -1) };

/* -------------------------------------------------------------------- SLICE */

/* TFLite slice.cc: begin[d] >= 0, size[d] = -1 means "to the end", begin + size <= dim. */
static int slice_plan(const ar_node_t *node, ar__strided_t *cp, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 3, 3, 3, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  if ((rc = ar_k_check_same_dtype(node, in, 0, msg, msg_bytes)) ||
      (rc = index_operand(node, 1, "begin", in->rank, msg, msg_bytes)) ||
      (rc = index_operand(node, 2, "size", in->rank, msg, msg_bytes)))
    return rc;
  int64_t istride[AR_MAX_RANK], dims[AR_MAX_RANK], base = 0;
  int32_t od[AR_MAX_RANK];
  ar_k_strides(in, istride);
  for (int32_t d = 0; d < in->rank; d++) {
    int64_t b = ar_k_index_at(node->inputs[1], d), s = ar_k_index_at(node->inputs[2], d);
    if (s == -1) s = in->dims[d] - b;
    if (b < 0 || s < 0 || b + s > in->dims[d])
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "dim %d: begin %lld size %lld out of range "
                      "for dim %d", (int)d, (long long)b, (long long)ar_k_index_at(node->inputs[2], d),
                      (int)in->dims[d]);
    dims[d] = s;
    od[d] = (int32_t)s;
    base += b * istride[d];
  }
  if ((rc = ar_k_check_output_shape(node, in->rank, od, msg, msg_bytes))) return rc;
  ar__strided_init(cp, in->rank, dims, istride, base, ar_dtype_size(in->dtype));
  return 0;
}

static int slice_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  return copy_prepare(node, slice_plan, msg, msg_bytes);
}
static void slice_init(ar_node_t *node) { copy_init(node, slice_plan); }

/* TFLite SLICE (builtin 65): constant begin and size (-1 = to the end). */
static const ar_kernel_form_t slice_forms[] = {
  AR_KF_DATA(1, 6),
};
const ar_kernel_t ar_kernel_slice = { "SLICE", slice_prepare, slice_init, copy_eval,
  AR_KSUPPORT(slice_forms, 0, -1) };

/* ---------------------------------------------------------------- TRANSPOSE */

#define AR_TRANSPOSE_MAX_RANK 6

/* TFLite transpose.cc: output dim d is input dim perm[d]; rank <= 6. */
static int transpose_plan(const ar_node_t *node, ar__strided_t *cp, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  if ((rc = ar_k_check_same_dtype(node, in, 0, msg, msg_bytes))) return rc;
  if (in->rank > AR_TRANSPOSE_MAX_RANK)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input rank %d (at most %d)", (int)in->rank,
                    AR_TRANSPOSE_MAX_RANK);
  if ((rc = index_operand(node, 1, "perm", in->rank, msg, msg_bytes))) return rc;
  int64_t istride[AR_MAX_RANK], dims[AR_MAX_RANK], st[AR_MAX_RANK];
  int32_t od[AR_MAX_RANK];
  bool seen[AR_MAX_RANK] = {false};
  ar_k_strides(in, istride);
  for (int32_t d = 0; d < in->rank; d++) {
    int64_t p = ar_k_index_at(node->inputs[1], d);
    if (p < 0 || p >= in->rank || seen[p])
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "perm[%d] = %lld is not a permutation of 0..%d",
                      (int)d, (long long)p, (int)in->rank - 1);
    seen[p] = true;
    dims[d] = in->dims[p];
    od[d] = in->dims[p];
    st[d] = istride[p];
  }
  if ((rc = ar_k_check_output_shape(node, in->rank, od, msg, msg_bytes))) return rc;
  ar__strided_init(cp, in->rank, dims, st, 0, ar_dtype_size(in->dtype));
  return 0;
}

static int transpose_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  return copy_prepare(node, transpose_plan, msg, msg_bytes);
}
static void transpose_init(ar_node_t *node) { copy_init(node, transpose_plan); }

/* TFLite TRANSPOSE (builtin 39): constant perm, rank <= 6. */
static const ar_kernel_form_t transpose_forms[] = {
  AR_KF_DATA(1, 6),
};
const ar_kernel_t ar_kernel_transpose = { "TRANSPOSE", transpose_prepare, transpose_init, copy_eval,
  AR_KSUPPORT(transpose_forms, 0, -1) };

/* --------------------------------------------------------------------- TILE */

/* TFLite tile.cc: output dim d = input dim d * multiples[d]. Row-major, output dim d of size
 * m*D is the pair (m, D): the copy has 2*rank dims, the m ones with input stride 0. */
static int tile_plan(const ar_node_t *node, ar__strided_t *cp, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  if ((rc = ar_k_check_same_dtype(node, in, 0, msg, msg_bytes)) ||
      (rc = index_operand(node, 1, "multiples", in->rank, msg, msg_bytes)))
    return rc;
  int64_t istride[AR_MAX_RANK], dims[2 * AR_MAX_RANK], st[2 * AR_MAX_RANK];
  int32_t od[AR_MAX_RANK];
  ar_k_strides(in, istride);
  for (int32_t d = 0; d < in->rank; d++) {
    int64_t m = ar_k_index_at(node->inputs[1], d);
    if (m < 0 || m * in->dims[d] > INT32_MAX)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "multiples[%d] = %lld", (int)d, (long long)m);
    dims[2 * d] = m; st[2 * d] = 0;
    dims[2 * d + 1] = in->dims[d]; st[2 * d + 1] = istride[d];
    od[d] = (int32_t)(m * in->dims[d]);
  }
  if ((rc = ar_k_check_output_shape(node, in->rank, od, msg, msg_bytes))) return rc;
  ar__strided_init(cp, 2 * in->rank, dims, st, 0, ar_dtype_size(in->dtype));
  return 0;
}

static int tile_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  return copy_prepare(node, tile_plan, msg, msg_bytes);
}
static void tile_init(ar_node_t *node) { copy_init(node, tile_plan); }

/* TFLite TILE (builtin 69): constant multiples. */
static const ar_kernel_form_t tile_forms[] = {
  AR_KF_DATA(1, 3),
};
const ar_kernel_t ar_kernel_tile = { "TILE", tile_prepare, tile_init, copy_eval,
  AR_KSUPPORT(tile_forms, 0, -1) };

/* ------------------------------------------------------------- BROADCAST_TO */

/* TFLite broadcast_to.cc: shapes aligned at the right; each input dim is 1 or equals the output
 * dim; output rank <= 8. */
static int bcast_plan(const ar_node_t *node, ar__strided_t *cp, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *shape = node->inputs[1];
  if ((rc = ar_k_check_same_dtype(node, in, 0, msg, msg_bytes)) ||
      (rc = index_operand(node, 1, "shape", -1, msg, msg_bytes)))
    return rc;
  const int32_t orank = shape->dims[0];
  if (orank < in->rank)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "shape has %d dims, fewer than the input's %d",
                    (int)orank, (int)in->rank);
  int64_t istride[AR_MAX_RANK], dims[AR_MAX_RANK], st[AR_MAX_RANK];
  int32_t od[AR_MAX_RANK];
  ar_k_strides(in, istride);
  for (int32_t d = 0; d < orank; d++) {
    int64_t v = ar_k_index_at(shape, d);
    if (v < 0 || v > INT32_MAX)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "shape[%d] = %lld", (int)d, (long long)v);
    int32_t id = d - (orank - in->rank);
    int64_t idim = id >= 0 ? in->dims[id] : 1;
    if (idim != 1 && idim != v) {
      char a[96];
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input shape %s cannot be broadcast to dim %d "
                      "= %lld", ar_k_dims_str(a, sizeof a, in->rank, in->dims), (int)d, (long long)v);
    }
    dims[d] = v;
    od[d] = (int32_t)v;
    st[d] = idim == 1 ? 0 : istride[id];
  }
  if ((rc = ar_k_check_output_shape(node, orank, od, msg, msg_bytes))) return rc;
  ar__strided_init(cp, orank, dims, st, 0, ar_dtype_size(in->dtype));
  return 0;
}

static int bcast_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  return copy_prepare(node, bcast_plan, msg, msg_bytes);
}
static void bcast_init(ar_node_t *node) { copy_init(node, bcast_plan); }

/* TFLite BROADCAST_TO (builtin 130): constant shape. */
static const ar_kernel_form_t broadcast_to_forms[] = {
  AR_KF_DATA(1, 3),
};
const ar_kernel_t ar_kernel_broadcast_to = { "BROADCAST_TO", bcast_prepare, bcast_init, copy_eval,
  AR_KSUPPORT(broadcast_to_forms, 0, -1) };

/* ----------------------------------------------------------- SPACE_TO_DEPTH */

/* TFLite space_to_depth: output[b, h, w, (dy*bs + dx)*C + c] = input[b, h*bs + dy, w*bs + dx, c],
 * i.e. output dims (B, H/bs, W/bs, dy, dx, C) read with input strides
 * (H*W*C, bs*W*C, bs*C, W*C, C, 1). */
static int s2d_plan(const ar_node_t *node, ar__strided_t *cp, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  if ((rc = ar_k_check_same_dtype(node, in, 0, msg, msg_bytes))) return rc;
  if (in->rank != 4)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input rank %d, expected 4 (NHWC)", (int)in->rank);
  const int64_t bs = node->options ? node->options->space_to_depth.block_size : 0;
  if (bs < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "block_size %d must be >= 1", (int)bs);
  const int64_t B = in->dims[0], H = in->dims[1], W = in->dims[2], C = in->dims[3];
  if (H % bs || W % bs)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input height %d and width %d must be multiples "
                    "of block_size %d", (int)H, (int)W, (int)bs);
  int32_t od[4] = { (int32_t)B, (int32_t)(H / bs), (int32_t)(W / bs), (int32_t)(C * bs * bs) };
  if ((rc = ar_k_check_output_shape(node, 4, od, msg, msg_bytes))) return rc;
  int64_t dims[6] = { B, H / bs, W / bs, bs, bs, C };
  int64_t st[6] = { H * W * C, bs * W * C, bs * C, W * C, C, 1 };
  ar__strided_init(cp, 6, dims, st, 0, ar_dtype_size(in->dtype));
  return 0;
}

static int s2d_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  return copy_prepare(node, s2d_plan, msg, msg_bytes);
}
static void s2d_init(ar_node_t *node) { copy_init(node, s2d_plan); }

/* TFLite SPACE_TO_DEPTH (builtin 26): NHWC, TFLite's (dy, dx, c) channel order. */
static const ar_kernel_form_t space_to_depth_forms[] = {
  AR_KF_DATA(1, 2),
};
const ar_kernel_t ar_kernel_space_to_depth = { "SPACE_TO_DEPTH", s2d_prepare, s2d_init, copy_eval,
  AR_KSUPPORT(space_to_depth_forms, 0, -1) };
