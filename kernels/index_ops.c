/* index_ops.c - TFLite's TOPK_V2, REVERSE_V2, SHAPE, FILL, RANGE, CUMSUM and ONE_HOT.
 *
 * Operands whose values decide the output shape (TOPK_V2's k, FILL's dims, RANGE's start / limit /
 * delta, ONE_HOT's depth) must be constants or values the interpreter knows at prepare
 * (ar_k_require_constant); so must the axes of REVERSE_V2 and CUMSUM, checked at prepare so an eval
 * never meets a bad one. Values are TFLite's:
 * - TOPK_V2: the k largest of each last-axis row, largest first, equal values in index order;
 *   values float32, int32, int64, uint8, int8, int16; k and the indices int32 or int16.
 * - REVERSE_V2: any number of distinct axes (negative ones count from the end), any dtype of 1, 2,
 *   4 or 8 bytes (float32, int32, int64, uint8, int8, int16, bool).
 * - SHAPE: the input's dims as int32 or int64 (ShapeOptions.out_type, matching the output).
 * - FILL: dims int32 / int64 (rank 1, each >= 0), value a scalar of the output's dtype (float32,
 *   int32, int64, int8, int16, bool, float16).
 * - RANGE: start, start + delta, ... (accumulated, as TFLite does) while short of limit; int32,
 *   int64 or float32 scalars; size ceil(|limit - start| / |delta|) (integer: rounded up in integer
 *   arithmetic).
 * - CUMSUM: running sums along one axis (int32 scalar), exclusive and reverse as CumsumOptions
 *   say; float32, int32, int64 (integer sums wrap).
 * - ONE_HOT: indices int32 / int64, depth int32 scalar (>= 0), on / off scalars of the output's
 *   dtype (float32, int32, int64, int8, uint8, bool: TFLite 2.19 fails an int16 one at invoke), the
 *   new axis at OneHotOptions.axis (-1 = last).
 */
#include <math.h>
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

static const char *tn_of(const ar_tview_t *t, char *buf, size_t n) { return ar_k_tname(t, buf, n); }

/* Copy one element of `es` bytes. */
static inline void copy_elem(char *dst, const char *src, size_t es) {
  switch (es) {
  case 1: *dst = *src; break;
  case 2: memcpy(dst, src, 2); break;
  case 4: memcpy(dst, src, 4); break;
  default: memcpy(dst, src, 8); break;
  }
}

/* A scalar (rank 0, or a single element of any rank where TFLite allows it) read as int64. */
static int64_t int_scalar(const ar_tview_t *t) {
  switch (t->dtype) {
  case AR_DTYPE_INT16: { int16_t v; memcpy(&v, t->data, 2); return v; }
  case AR_DTYPE_INT64: { int64_t v; memcpy(&v, t->data, 8); return v; }
  default: { int32_t v; memcpy(&v, t->data, 4); return v; }
  }
}

/* ---- TOPK_V2 ---- */

typedef struct { int32_t k; } topk_state_t;

static bool topk_dtype(ar_dtype_t t) {
  return t == AR_DTYPE_FLOAT32 || t == AR_DTYPE_INT32 || t == AR_DTYPE_INT64 || t == AR_DTYPE_UINT8 ||
         t == AR_DTYPE_INT8 || t == AR_DTYPE_INT16;
}

static int topk_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 2, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *kt = node->inputs[1];
  const ar_tview_t *ov = node->outputs[0], *oi = node->outputs[1];
  char tn[96];
  if (!topk_dtype(in->dtype))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0%s has dtype %s (float32, int32, "
                    "int64, uint8, int8 or int16)", tn_of(in, tn, sizeof tn), ar_dtype_name(in->dtype));
  if (in->rank < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 0 is a scalar (needs rank 1 or more)");
  if (kt->dtype != AR_DTYPE_INT32 && kt->dtype != AR_DTYPE_INT16)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 1 (k) has dtype %s, expected INT32 "
                    "or INT16", ar_dtype_name(kt->dtype));
  if (ar_k_elements(kt) != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 1 (k) has %lld elements, expected 1",
                    (long long)ar_k_elements(kt));
  if ((rc = ar_k_require_constant(node, kt, "input 1 (k)", msg, msg_bytes))) return rc;
  if ((rc = ar_k_check_dtype(node, ov, "output 0", in->dtype, msg, msg_bytes))) return rc;
  if (oi->dtype != AR_DTYPE_INT32 && oi->dtype != AR_DTYPE_INT16)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "output 1 (indices) has dtype %s, expected "
                    "INT32 or INT16", ar_dtype_name(oi->dtype));
  const int64_t k = int_scalar(kt), row = in->dims[in->rank - 1];
  if (k < 0 || k > row)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "k is %lld, outside [0, %lld] (the last dimension)",
                    (long long)k, (long long)row);
  if (oi->dtype == AR_DTYPE_INT16 && row > 32768)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "int16 indices cannot address a row of %lld",
                    (long long)row);
  int32_t dims[AR_MAX_RANK];
  memcpy(dims, in->dims, sizeof dims);
  dims[in->rank - 1] = (int32_t)k;
  if ((rc = ar_k_check_output_shape(node, in->rank, dims, msg, msg_bytes)) ||
      (rc = ar_k_check_output_shape_at(node, 1, in->rank, dims, msg, msg_bytes)))
    return rc;
  node->scratch_bytes = (uint64_t)(k ? k : 1) * sizeof(int32_t);
  node->state_bytes = sizeof(topk_state_t);
  return 0;
}

static void topk_init(ar_node_t *node) {
  topk_state_t st = {(int32_t)int_scalar(node->inputs[1])};
  ar_k_store_state(node, &st, sizeof st);
}

/* The k largest of each row of n values of type T, into the outputs (idx: k int32 of scratch). */
#define TOPK_ROWS(T)                                                                               \
  do {                                                                                             \
    const T *src = (const T *)in->data;                                                            \
    T *dst = (T *)ov->data;                                                                        \
    for (int64_t r = 0; r < rows; r++) {                                                           \
      const T *v = src + r * n;                                                                    \
      int32_t cnt = 0;                                                                             \
      for (int32_t i = 0; i < n; i++) {                                                            \
        /* idx[0..cnt) sorted: larger value first, equal values by index (i is the largest so     \
         * far, so it goes after its equals). */                                                   \
        if (cnt == k && !(v[i] > v[idx[cnt - 1]])) continue;                                       \
        int32_t at = cnt < k ? cnt : k - 1;                                                        \
        while (at > 0 && v[i] > v[idx[at - 1]]) { idx[at] = idx[at - 1]; at--; }                   \
        idx[at] = i;                                                                               \
        if (cnt < k) cnt++;                                                                        \
      }                                                                                            \
      for (int32_t j = 0; j < k; j++) {                                                            \
        dst[r * k + j] = v[idx[j]];                                                                \
        if (i16) ((int16_t *)oi->data)[r * k + j] = (int16_t)idx[j];                               \
        else ((int32_t *)oi->data)[r * k + j] = idx[j];                                            \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static void topk_eval(const ar_node_t *node) {
  const ar_tview_t *in = node->inputs[0], *ov = node->outputs[0], *oi = node->outputs[1];
  const int32_t k = ((const topk_state_t *)node->state)->k;
  const int32_t n = in->dims[in->rank - 1];
  if (k == 0 || n == 0) return;
  const int64_t rows = ar_k_elements(in) / n;
  int32_t *idx = node->scratch;
  const bool i16 = oi->dtype == AR_DTYPE_INT16;
  switch (in->dtype) {
  case AR_DTYPE_FLOAT32: TOPK_ROWS(float); break;
  case AR_DTYPE_INT32: TOPK_ROWS(int32_t); break;
  case AR_DTYPE_INT64: TOPK_ROWS(int64_t); break;
  case AR_DTYPE_UINT8: TOPK_ROWS(uint8_t); break;
  case AR_DTYPE_INT8: TOPK_ROWS(int8_t); break;
  default: TOPK_ROWS(int16_t); break;
  }
}

/* ---- REVERSE_V2 ---- */

typedef struct { uint8_t flip[AR_MAX_RANK]; } reverse_state_t;

static int reverse_axes(const ar_node_t *node, reverse_state_t *st, char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0], *ax = node->inputs[1];
  memset(st, 0, sizeof *st);
  const int64_t na = ar_k_elements(ax);
  for (int64_t i = 0; i < na; i++) {
    int64_t a = ar_k_index_at(ax, i);
    if (a < -in->rank || a >= in->rank)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "axis %lld is outside [%d, %d)", (long long)a,
                      -(int)in->rank, (int)in->rank);
    if (a < 0) a += in->rank;
    if (st->flip[a])
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "axis %lld is given twice", (long long)a);
    st->flip[a] = 1;
  }
  return 0;
}

static int reverse_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *ax = node->inputs[1];
  const size_t es = ar_dtype_size(in->dtype);
  if (es != 1 && es != 2 && es != 4 && es != 8)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input dtype %s is not supported",
                    ar_dtype_name(in->dtype));
  if ((rc = ar_k_check_same_dtype(node, in, 0, msg, msg_bytes))) return rc;
  if ((rc = ar_k_check_index_dtype(node, ax, "input 1 (axis)", msg, msg_bytes))) return rc;
  if (ax->rank != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 1 (axis) has rank %d, expected 1", (int)ax->rank);
  if (!(ax->is_constant || ax->value_known) || !ax->data)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 1 (axis) is not a constant");
  reverse_state_t st;
  if ((rc = reverse_axes(node, &st, msg, msg_bytes))) return rc;
  node->state_bytes = sizeof(reverse_state_t);
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

static void reverse_init(ar_node_t *node) {
  reverse_state_t st;
  char msg[8];
  if (reverse_axes(node, &st, msg, sizeof msg) == 0) ar_k_store_state(node, &st, sizeof st);
}

static void reverse_eval(const ar_node_t *node) {
  const ar_tview_t *in = node->inputs[0];
  const reverse_state_t *st = node->state;
  const size_t es = ar_dtype_size(in->dtype);
  const int64_t n = ar_k_elements(in);
  if (n == 0) return;
  /* The dimensions after the last reversed one are one contiguous block. */
  int32_t last = -1;
  for (int32_t d = 0; d < in->rank; d++)
    if (st->flip[d] && in->dims[d] > 1) last = d;
  const char *src = in->data;
  char *dst = node->outputs[0]->data;
  if (last < 0) {
    if (dst != src) memmove(dst, src, (size_t)n * es);
    return;
  }
  int64_t stride[AR_MAX_RANK];
  ar_k_strides(in, stride);
  const size_t block = (size_t)stride[last] * es;
  const int64_t blocks = n / stride[last];
  int32_t idx[AR_MAX_RANK] = {0};
  /* dst block b (row-major index over dims[0..last]) comes from the source block with the flipped
   * coordinates. */
  for (int64_t b = 0; b < blocks; b++) {
    int64_t off = 0;
    for (int32_t d = 0; d <= last; d++) {
      const int64_t c = st->flip[d] ? in->dims[d] - 1 - idx[d] : idx[d];
      off += c * stride[d];
    }
    if (block == es) copy_elem(dst + (size_t)b * es, src + (size_t)off * es, es);
    else memcpy(dst + (size_t)b * block, src + (size_t)off * es, block);
    for (int32_t d = last; d >= 0; d--) {
      if (++idx[d] < in->dims[d]) break;
      idx[d] = 0;
    }
  }
}

/* ---- SHAPE ---- */

static int shape_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *o = node->outputs[0];
  if (o->dtype != AR_DTYPE_INT32 && o->dtype != AR_DTYPE_INT64)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "output 0 has dtype %s, expected INT32 or INT64",
                    ar_dtype_name(o->dtype));
  if (node->options && node->options->shape.present && node->options->shape.out_type != o->dtype)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "ShapeOptions.out_type is %s, the output is %s",
                    ar_dtype_name(node->options->shape.out_type), ar_dtype_name(o->dtype));
  const int32_t dims[1] = {node->inputs[0]->rank};
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, 1, dims, msg, msg_bytes);
}

static void shape_eval(const ar_node_t *node) {
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  for (int32_t d = 0; d < in->rank; d++) {
    if (o->dtype == AR_DTYPE_INT64) ((int64_t *)o->data)[d] = in->dims[d];
    else ((int32_t *)o->data)[d] = in->dims[d];
  }
}

/* ---- FILL ---- */

static bool fill_dtype(ar_dtype_t t) {
  return t == AR_DTYPE_FLOAT32 || t == AR_DTYPE_INT32 || t == AR_DTYPE_INT64 || t == AR_DTYPE_INT8 ||
         t == AR_DTYPE_INT16 || t == AR_DTYPE_BOOL || t == AR_DTYPE_FLOAT16;
}

static int fill_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *dt = node->inputs[0], *v = node->inputs[1];
  char tn[96];
  if ((rc = ar_k_check_index_dtype(node, dt, "input 0 (dims)", msg, msg_bytes))) return rc;
  if (dt->rank != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 0 (dims) has rank %d, expected 1", (int)dt->rank);
  if (dt->dims[0] > AR_MAX_RANK)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 0 (dims) asks for rank %d (at most %d)",
                    (int)dt->dims[0], AR_MAX_RANK);
  if (!fill_dtype(v->dtype))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 1 (value)%s has dtype %s (float32, "
                    "int32, int64, int8, int16, bool or float16)", tn_of(v, tn, sizeof tn), ar_dtype_name(v->dtype));
  if (v->rank != 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 1 (value) has rank %d, expected a scalar",
                    (int)v->rank);
  if ((rc = ar_k_check_dtype(node, node->outputs[0], "output 0", v->dtype, msg, msg_bytes))) return rc;
  if ((rc = ar_k_require_constant(node, dt, "input 0 (dims)", msg, msg_bytes))) return rc;
  int32_t dims[AR_MAX_RANK];
  for (int32_t i = 0; i < dt->dims[0]; i++) {
    const int64_t d = ar_k_index_at(dt, i);
    if (d < 0 || d > INT32_MAX)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "dims[%d] is %lld", (int)i, (long long)d);
    dims[i] = (int32_t)d;
  }
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, dt->dims[0], dims, msg, msg_bytes);
}

static void fill_eval(const ar_node_t *node) {
  const ar_tview_t *v = node->inputs[1], *o = node->outputs[0];
  const size_t es = ar_dtype_size(o->dtype);
  const int64_t n = ar_k_elements(o);
  char *dst = o->data;
  if (es == 1) { memset(dst, *(const char *)v->data, (size_t)n); return; }
  for (int64_t i = 0; i < n; i++) copy_elem(dst + (size_t)i * es, v->data, es);
}

/* ---- RANGE ---- */

/* The element count of RANGE(start, limit, delta) of `dtype`; -1 with msg when they make none. */
static int range_count(const ar_node_t *node, int64_t *count, char *msg, size_t msg_bytes) {
  const ar_tview_t *s = node->inputs[0], *l = node->inputs[1], *d = node->inputs[2];
  if (s->dtype == AR_DTYPE_FLOAT32) {
    float fs, fl, fd;
    memcpy(&fs, s->data, 4); memcpy(&fl, l->data, 4); memcpy(&fd, d->data, 4);
    if (fd == 0.0f || !((fs >= fl && fd < 0) || (fs <= fl && fd > 0)))
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "start %g, limit %g, delta %g make no range "
                      "(delta must be nonzero and point from start to limit)", fs, fl, fd);
    const double c = ceil(fabs(((double)fl - fs) / fd));
    const float cf = ceilf(fabsf((fl - fs) / fd));   /* TFLite's float arithmetic */
    if (!(c <= (double)INT32_MAX) || !(cf <= 2147483647.0f))
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "the range has too many elements");
    *count = (int64_t)cf;
    return 0;
  }
  const int64_t is = int_scalar(s), il = int_scalar(l), id = int_scalar(d);
  if (id == 0 || !((is >= il && id < 0) || (is <= il && id > 0)))
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "start %lld, limit %lld, delta %lld make no range "
                    "(delta must be nonzero and point from start to limit)", (long long)is, (long long)il,
                    (long long)id);
  const uint64_t span = il > is ? (uint64_t)il - (uint64_t)is : (uint64_t)is - (uint64_t)il;
  const uint64_t step = id > 0 ? (uint64_t)id : 0 - (uint64_t)id;
  const uint64_t c = span / step + (span % step != 0);
  if (c > INT32_MAX)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "the range has %llu elements", (unsigned long long)c);
  *count = (int64_t)c;
  return 0;
}

static int range_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 3, 3, 3, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *s = node->inputs[0];
  static const char *const what[3] = {"input 0 (start)", "input 1 (limit)", "input 2 (delta)"};
  if (s->dtype != AR_DTYPE_INT32 && s->dtype != AR_DTYPE_INT64 && s->dtype != AR_DTYPE_FLOAT32)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0 (start) has dtype %s (int32, int64 "
                    "or float32)", ar_dtype_name(s->dtype));
  for (int i = 0; i < 3; i++) {
    const ar_tview_t *t = node->inputs[i];
    if ((rc = ar_k_check_dtype(node, t, what[i], s->dtype, msg, msg_bytes))) return rc;
    if (ar_k_elements(t) != 1)
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "%s has %lld elements, expected a scalar", what[i],
                      (long long)ar_k_elements(t));
    if ((rc = ar_k_require_constant(node, t, what[i], msg, msg_bytes))) return rc;
  }
  if ((rc = ar_k_check_dtype(node, node->outputs[0], "output 0", s->dtype, msg, msg_bytes))) return rc;
  int64_t count = 0;
  if ((rc = range_count(node, &count, msg, msg_bytes))) return rc;
  const int32_t dims[1] = {(int32_t)count};
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, 1, dims, msg, msg_bytes);
}

static void range_eval(const ar_node_t *node) {
  const ar_tview_t *o = node->outputs[0];
  const int64_t n = o->dims[0];
  if (o->dtype == AR_DTYPE_FLOAT32) {
    float v, d;
    memcpy(&v, node->inputs[0]->data, 4);
    memcpy(&d, node->inputs[2]->data, 4);
    float *out = o->data;
    for (int64_t i = 0; i < n; i++) { out[i] = v; v += d; }
  } else if (o->dtype == AR_DTYPE_INT64) {
    uint64_t v = (uint64_t)int_scalar(node->inputs[0]), d = (uint64_t)int_scalar(node->inputs[2]);
    int64_t *out = o->data;
    for (int64_t i = 0; i < n; i++) { out[i] = (int64_t)v; v += d; }
  } else {
    uint32_t v = (uint32_t)int_scalar(node->inputs[0]), d = (uint32_t)int_scalar(node->inputs[2]);
    int32_t *out = o->data;
    for (int64_t i = 0; i < n; i++) { out[i] = (int32_t)v; v += d; }
  }
}

/* ---- CUMSUM ---- */

typedef struct { int32_t axis; } cumsum_state_t;

static int cumsum_axis(const ar_node_t *node, int32_t *axis, char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0];
  int64_t a = ar_k_index_at(node->inputs[1], 0);
  if (a < -in->rank || a >= in->rank)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "axis %lld is outside [%d, %d)", (long long)a,
                    -(int)in->rank, (int)in->rank);
  *axis = (int32_t)(a < 0 ? a + in->rank : a);
  return 0;
}

static int cumsum_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *ax = node->inputs[1];
  char tn[96];
  if (in->dtype != AR_DTYPE_FLOAT32 && in->dtype != AR_DTYPE_INT32 && in->dtype != AR_DTYPE_INT64)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0%s has dtype %s (float32, int32 or "
                    "int64)", tn_of(in, tn, sizeof tn), ar_dtype_name(in->dtype));
  if ((rc = ar_k_check_dtype(node, ax, "input 1 (axis)", AR_DTYPE_INT32, msg, msg_bytes))) return rc;
  if (ar_k_elements(ax) != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 1 (axis) has %lld elements, expected 1",
                    (long long)ar_k_elements(ax));
  if (!(ax->is_constant || ax->value_known) || !ax->data)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 1 (axis) is not a constant");
  if (in->rank < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 0 is a scalar (needs rank 1 or more)");
  int32_t axis = 0;
  if ((rc = cumsum_axis(node, &axis, msg, msg_bytes))) return rc;
  if ((rc = ar_k_check_dtype(node, node->outputs[0], "output 0", in->dtype, msg, msg_bytes))) return rc;
  node->state_bytes = sizeof(cumsum_state_t);
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

static void cumsum_init(ar_node_t *node) {
  cumsum_state_t st = {0};
  char msg[8];
  if (cumsum_axis(node, &st.axis, msg, sizeof msg) == 0) ar_k_store_state(node, &st, sizeof st);
}

#define CUMSUM_LOOP(T, ACC, ZERO)                                                                    \
  do {                                                                                               \
    const T *src = in->data;                                                                         \
    T *dst = node->outputs[0]->data;                                                                 \
    for (int64_t o = 0; o < outer; o++)                                                              \
      for (int64_t i = 0; i < inner; i++) {                                                          \
        ACC acc = ZERO;                                                                              \
        for (int64_t j = 0; j < len; j++) {                                                          \
          const int64_t a = reverse ? len - 1 - j : j;                                               \
          const int64_t at = (o * len + a) * inner + i;                                              \
          const T x = src[at];   /* read before the write: dst may be src */                        \
          if (exclusive) { dst[at] = (T)acc; acc += (ACC)x; }                                        \
          else { acc += (ACC)x; dst[at] = (T)acc; }                                                  \
        }                                                                                            \
      }                                                                                              \
  } while (0)

static void cumsum_eval(const ar_node_t *node) {
  const ar_tview_t *in = node->inputs[0];
  const int32_t axis = ((const cumsum_state_t *)node->state)->axis;
  const bool exclusive = node->options && node->options->cumsum.exclusive;
  const bool reverse = node->options && node->options->cumsum.reverse;
  int64_t outer = 1, inner = 1;
  for (int32_t d = 0; d < axis; d++) outer *= in->dims[d];
  for (int32_t d = axis + 1; d < in->rank; d++) inner *= in->dims[d];
  const int64_t len = in->dims[axis];
  switch (in->dtype) {
  case AR_DTYPE_FLOAT32: CUMSUM_LOOP(float, float, 0.0f); break;
  case AR_DTYPE_INT32: CUMSUM_LOOP(int32_t, uint32_t, 0u); break;
  default: CUMSUM_LOOP(int64_t, uint64_t, 0u); break;
  }
}

/* ---- ONE_HOT ---- */

typedef struct { int32_t axis, depth; } one_hot_state_t;

static bool one_hot_dtype(ar_dtype_t t) {
  return t == AR_DTYPE_FLOAT32 || t == AR_DTYPE_INT32 || t == AR_DTYPE_INT64 || t == AR_DTYPE_INT8 ||
         t == AR_DTYPE_UINT8 || t == AR_DTYPE_BOOL;
}

static int one_hot_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 4, 4, 4, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *ix = node->inputs[0], *dp = node->inputs[1], *on = node->inputs[2], *off = node->inputs[3];
  char tn[96];
  if ((rc = ar_k_check_index_dtype(node, ix, "input 0 (indices)", msg, msg_bytes))) return rc;
  if ((rc = ar_k_check_dtype(node, dp, "input 1 (depth)", AR_DTYPE_INT32, msg, msg_bytes))) return rc;
  if (ar_k_elements(dp) != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 1 (depth) has %lld elements, expected 1",
                    (long long)ar_k_elements(dp));
  if ((rc = ar_k_require_constant(node, dp, "input 1 (depth)", msg, msg_bytes))) return rc;
  if (!one_hot_dtype(on->dtype))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 2 (on_value)%s has dtype %s (float32, "
                    "int32, int64, int8, uint8 or bool)", tn_of(on, tn, sizeof tn), ar_dtype_name(on->dtype));
  if ((rc = ar_k_check_dtype(node, off, "input 3 (off_value)", on->dtype, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", on->dtype, msg, msg_bytes)))
    return rc;
  if (ar_k_elements(on) != 1 || ar_k_elements(off) != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "on_value and off_value must be scalars");
  if (ix->rank + 1 > AR_MAX_RANK)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "indices of rank %d give an output above rank %d",
                    (int)ix->rank, AR_MAX_RANK);
  const int64_t depth = int_scalar(dp);
  if (depth < 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "depth is %lld", (long long)depth);
  int32_t axis = node->options ? node->options->one_hot.axis : -1;
  if (axis < -1 || axis > ix->rank)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "OneHotOptions.axis is %d, outside [-1, %d]",
                    (int)axis, (int)ix->rank);
  if (axis == -1) axis = ix->rank;
  int32_t dims[AR_MAX_RANK];
  for (int32_t d = 0, s = 0; d <= ix->rank; d++) dims[d] = d == axis ? (int32_t)depth : ix->dims[s++];
  node->state_bytes = sizeof(one_hot_state_t);
  return ar_k_check_output_shape(node, ix->rank + 1, dims, msg, msg_bytes);
}

static void one_hot_init(ar_node_t *node) {
  const ar_tview_t *ix = node->inputs[0];
  int32_t axis = node->options ? node->options->one_hot.axis : -1;
  one_hot_state_t st = {axis == -1 ? ix->rank : axis, (int32_t)int_scalar(node->inputs[1])};
  ar_k_store_state(node, &st, sizeof st);
}

static void one_hot_eval(const ar_node_t *node) {
  const ar_tview_t *ix = node->inputs[0], *o = node->outputs[0];
  const one_hot_state_t *st = node->state;
  const size_t es = ar_dtype_size(o->dtype);
  int64_t prefix = 1, suffix = 1;
  for (int32_t d = 0; d < st->axis; d++) prefix *= ix->dims[d];
  for (int32_t d = st->axis; d < ix->rank; d++) suffix *= ix->dims[d];
  const char *on = node->inputs[2]->data, *off = node->inputs[3]->data;
  char *dst = o->data;
  int64_t at = 0;
  for (int64_t p = 0; p < prefix; p++)
    for (int64_t d = 0; d < st->depth; d++)
      for (int64_t s = 0; s < suffix; s++, at++)
        copy_elem(dst + (size_t)at * es, ar_k_index_at(ix, p * suffix + s) == d ? on : off, es);
}

/* Support lists (ar_kernels.h). TFLite's op_version.cc marks dtypes with versions (TOPK_V2 2 = int8,
 * 3 = int16 anywhere; REVERSE_V2 2 = bool, 3 = int8; FILL 2 = bool, 3 = int8 / int16; RANGE 2 =
 * int64), but its kernels, like these, take every dtype at every version. */
static const ar_kernel_form_t topk_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32), AR_KF(1, 3, INT32, INT32), AR_KF(1, 3, INT64, INT64),
  AR_KF(1, 3, UINT8, UINT8), AR_KF(1, 3, INT8, INT8), AR_KF(1, 3, INT16, INT16),
};
static const ar_kernel_form_t reverse_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32), AR_KF(1, 3, INT32, INT32), AR_KF(1, 3, INT64, INT64),
  AR_KF(1, 3, UINT8, UINT8), AR_KF(1, 3, INT16, INT16), AR_KF(1, 3, BOOL, BOOL), AR_KF(1, 3, INT8, INT8),
};
#define SHAPE_OF(in_) AR_KF(1, 1, in_, INT32), AR_KF(1, 1, in_, INT64)
static const ar_kernel_form_t shape_forms[] = {
  SHAPE_OF(FLOAT32), SHAPE_OF(INT32), SHAPE_OF(INT64), SHAPE_OF(UINT8), SHAPE_OF(INT8), SHAPE_OF(INT16),
  SHAPE_OF(BOOL), SHAPE_OF(FLOAT16),
};
static const ar_kernel_form_t fill_forms[] = {   /* the value's dtype (input 1) */
  AR_KF(1, 5, FLOAT32, FLOAT32), AR_KF(1, 5, INT32, INT32), AR_KF(1, 5, INT64, INT64),
  AR_KF(1, 5, BOOL, BOOL), AR_KF(1, 5, INT8, INT8), AR_KF(1, 5, INT16, INT16),
  AR_KF(1, 5, FLOAT16, FLOAT16),   /* 4: float16 (the bits copied) */
};
static const ar_kernel_form_t range_forms[] = {
  AR_KF(1, 2, INT32, INT32), AR_KF(1, 2, FLOAT32, FLOAT32), AR_KF(1, 2, INT64, INT64),
};
static const ar_kernel_form_t cumsum_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32), AR_KF(1, 1, INT32, INT32), AR_KF(1, 1, INT64, INT64),
};
/* indices (input 0) -> output (on / off values): every pair TFLite 2.19 runs */
#define ONE_HOT_OF(ix_) AR_KF(1, 1, ix_, FLOAT32), AR_KF(1, 1, ix_, INT32), AR_KF(1, 1, ix_, INT64), \
  AR_KF(1, 1, ix_, UINT8), AR_KF(1, 1, ix_, INT8), AR_KF(1, 1, ix_, BOOL)
static const ar_kernel_form_t one_hot_forms[] = { ONE_HOT_OF(INT32), ONE_HOT_OF(INT64) };

/* TFLite TOPK_V2 (builtin 48), REVERSE_V2 (105), SHAPE (77), FILL (94), RANGE (96), CUMSUM (128),
 * ONE_HOT (85). */
const ar_kernel_t ar_kernel_topk_v2 = { "TOPK_V2", topk_prepare, topk_init, topk_eval, AR_KSUPPORT(topk_forms, 0, -1) };
const ar_kernel_t ar_kernel_reverse_v2 = { "REVERSE_V2", reverse_prepare, reverse_init, reverse_eval,
                                           AR_KSUPPORT(reverse_forms, 0, -1) };
const ar_kernel_t ar_kernel_shape = { "SHAPE", shape_prepare, NULL, shape_eval, AR_KSUPPORT(shape_forms, 0, -1) };
const ar_kernel_t ar_kernel_fill = { "FILL", fill_prepare, NULL, fill_eval, AR_KSUPPORT(fill_forms, 1, -1) };
const ar_kernel_t ar_kernel_range = { "RANGE", range_prepare, NULL, range_eval, AR_KSUPPORT(range_forms, 0, -1) };
const ar_kernel_t ar_kernel_cumsum = { "CUMSUM", cumsum_prepare, cumsum_init, cumsum_eval,
                                       AR_KSUPPORT(cumsum_forms, 0, -1) };
const ar_kernel_t ar_kernel_one_hot = { "ONE_HOT", one_hot_prepare, one_hot_init, one_hot_eval,
                                        AR_KSUPPORT(one_hot_forms, 0, -1) };
