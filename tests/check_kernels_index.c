/* check_kernels_index.c - unit tests for the shape and index kernels: STRIDED_SLICE (every mask,
 * negative strides, the offset form, int64 indices), SLICE, TRANSPOSE (up to rank 6, against a
 * naive loop), TILE, BROADCAST_TO, SPACE_TO_DEPTH, SPLIT, SPLIT_V, PACK, UNPACK, SQUEEZE,
 * EXPAND_DIMS, GATHER (axis, batch_dims), GATHER_ND, RESIZE_NEAREST_NEIGHBOR. Values are worked out by hand (or by an obvious nested loop) in each test; prepare
 * errors are checked with their messages, including the refusal of non-constant index operands. */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "kernels/ar_kernels.h"

/* ---- helpers ---- */

static ar_tview_t mk(bool is_const, ar_dtype_t dt, void *data, int rank, va_list ap) {
  ar_tview_t t;
  memset(&t, 0, sizeof t);
  t.dtype = dt; t.data = data; t.rank = rank; t.is_constant = is_const;
  uint64_t n = 1;
  for (int i = 0; i < rank; i++) { t.dims[i] = va_arg(ap, int); n *= (uint64_t)t.dims[i]; }
  t.bytes = n * ar_dtype_size(dt);
  return t;
}
static ar_tview_t tv(ar_dtype_t dt, void *data, int rank, ...) {
  va_list ap; va_start(ap, rank);
  ar_tview_t t = mk(false, dt, data, rank, ap);
  va_end(ap);
  return t;
}
static ar_tview_t cst(ar_dtype_t dt, void *data, int rank, ...) {
  va_list ap; va_start(ap, rank);
  ar_tview_t t = mk(true, dt, data, rank, ap);
  va_end(ap);
  return t;
}

static ar_node_t nodeN(ar_op_t op, const ar_options_t *opts, int n_in, ar_tview_t **in, int n_out,
                       ar_tview_t **out) {
  ar_node_t n;
  memset(&n, 0, sizeof n);
  n.op = op; n.index = 3; n.version = 1; n.options = opts;
  n.n_inputs = n_in; n.n_outputs = n_out;
  n.inputs = in;
  n.outputs = out;
  n.threads = 1;
  return n;
}
/* The node points at the caller's arrays (inputs; the output pointer in a compound literal of the
 * caller's block, which lives as long as the node declared there). */
#define node1(op, opts, n_in, in, out) nodeN((op), (opts), (n_in), (in), 1, (ar_tview_t *[1]){(out)})

static char g_msg[AR_MSG_BYTES];

/* prepare + init + eval, as the interpreter does; returns prepare's code. */
static int run(ar_node_t *n) {
  const ar_kernel_t *k = ar_kernel_for(n->op);
  ck_assert_ptr_nonnull(k);
  g_msg[0] = '\0';
  int rc = k->prepare(n, g_msg, sizeof g_msg);
  if (rc) return rc;
  n->state = n->state_bytes ? malloc(n->state_bytes) : NULL;
  if (k->init) k->init(n);
  k->eval(n);
  free(n->state);
  n->state = NULL;
  return 0;
}

static void expect_floats(const float *got, const float *want, int n) {
  for (int i = 0; i < n; i++)
    ck_assert_msg(got[i] == want[i], "element %d: got %.9g want %.9g", i, got[i], want[i]);
}

static void iota(float *x, int n) { for (int i = 0; i < n; i++) x[i] = (float)i; }

/* STRIDED_SLICE on `in` with int32 begin/end/strides of length k. */
static int strided(ar_tview_t *in, int k, const int32_t *b, const int32_t *e, const int32_t *s,
                   const ar_strided_slice_options_t *o, ar_tview_t *out) {
  ar_tview_t tb = cst(AR_DTYPE_INT32, (void *)b, 1, k), te = cst(AR_DTYPE_INT32, (void *)e, 1, k);
  ar_tview_t ts = cst(AR_DTYPE_INT32, (void *)s, 1, k);
  ar_tview_t *ins[] = {in, &tb, &te, &ts};
  ar_options_t opt = {.strided_slice = *o};
  ar_node_t n = node1(AR_OP_STRIDED_SLICE, &opt, 4, ins, out);
  return run(&n);
}

/* ---- STRIDED_SLICE ---- */

START_TEST(strided_slice_strides_2d) {
  float x[12], o[4];
  iota(x, 12);                                   /* [[0..3],[4..7],[8..11]] */
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 2, 3, 4), out = tv(AR_DTYPE_FLOAT32, o, 2, 2, 2);
  ar_strided_slice_options_t so = {0};
  int32_t b[] = {0, 1}, e[] = {3, 4}, s[] = {2, 2};   /* rows 0,2; cols 1,3 */
  ck_assert_int_eq(strided(&in, 2, b, e, s, &so, &out), 0);
  float want[] = {1, 3, 9, 11};
  expect_floats(o, want, 4);
}
END_TEST

START_TEST(strided_slice_negative_strides_and_masks) {
  float x[6], o[6];
  iota(x, 6);
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 1, 6), out = tv(AR_DTYPE_FLOAT32, o, 1, 3);
  ar_strided_slice_options_t so = {0};
  int32_t b[] = {-1}, e[] = {0}, s[] = {-2};           /* x[-1:0:-2] = 5, 3, 1 */
  ck_assert_int_eq(strided(&in, 1, b, e, s, &so, &out), 0);
  float w1[] = {5, 3, 1};
  expect_floats(o, w1, 3);
  /* x[::-1] through begin_mask | end_mask: the bounds given are ignored. */
  so.begin_mask = 1; so.end_mask = 1;
  int32_t b2[] = {2}, e2[] = {3}, s2[] = {-1};
  out = tv(AR_DTYPE_FLOAT32, o, 1, 6);
  ck_assert_int_eq(strided(&in, 1, b2, e2, s2, &so, &out), 0);
  float w2[] = {5, 4, 3, 2, 1, 0};
  expect_floats(o, w2, 6);
  /* x[4:1:-1] = 4, 3, 2; out-of-range begin clamps: x[100:1:-1] = 5, 4, 3, 2. */
  so.begin_mask = so.end_mask = 0;
  int32_t b3[] = {100}, e3[] = {1};
  out = tv(AR_DTYPE_FLOAT32, o, 1, 4);
  ck_assert_int_eq(strided(&in, 1, b3, e3, s2, &so, &out), 0);
  float w3[] = {5, 4, 3, 2};
  expect_floats(o, w3, 4);
  /* Empty result: x[1:4:-1] has no element; output shape [0]. */
  int32_t b4[] = {1}, e4[] = {4};
  out = tv(AR_DTYPE_FLOAT32, o, 1, 0);
  ck_assert_int_eq(strided(&in, 1, b4, e4, s2, &so, &out), 0);
}
END_TEST

START_TEST(strided_slice_shrink_axis) {
  float x[6], o[3];
  iota(x, 6);                                    /* [[0,1,2],[3,4,5]] */
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 2, 2, 3), out = tv(AR_DTYPE_FLOAT32, o, 1, 3);
  ar_strided_slice_options_t so = {.shrink_axis_mask = 1};
  int32_t b[] = {-1, 0}, e[] = {0, 3}, s[] = {1, 1};  /* x[-1] = row 1; end ignored when shrinking */
  ck_assert_int_eq(strided(&in, 2, b, e, s, &so, &out), 0);
  float w[] = {3, 4, 5};
  expect_floats(o, w, 3);
  /* x[:, 2] -> [2, 5] */
  so.shrink_axis_mask = 2; so.begin_mask = 1; so.end_mask = 1;
  int32_t b2[] = {0, 2}, e2[] = {0, 3};
  out = tv(AR_DTYPE_FLOAT32, o, 1, 2);
  ck_assert_int_eq(strided(&in, 2, b2, e2, s, &so, &out), 0);
  float w2[] = {2, 5};
  expect_floats(o, w2, 2);
  /* A shrink index out of range is an error. */
  int32_t b3[] = {0, 3};
  ck_assert_int_eq(strided(&in, 2, b3, e2, s, &so, &out), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(g_msg, "shrink axis 1"));
}
END_TEST

START_TEST(strided_slice_ellipsis_and_new_axis) {
  float x[24], o[24];
  iota(x, 24);                                   /* shape [2,3,4], x[i,j,k] = 12i + 4j + k */
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 3, 2, 3, 4), out = tv(AR_DTYPE_FLOAT32, o, 2, 2, 3);
  /* x[..., 1]: ellipsis covers dims 0 and 1, spec 1 shrinks dim 2. */
  ar_strided_slice_options_t so = {.ellipsis_mask = 1, .shrink_axis_mask = 2};
  int32_t b[] = {0, 1}, e[] = {0, 2}, s[] = {1, 1};
  ck_assert_int_eq(strided(&in, 2, b, e, s, &so, &out), 0);
  float w[] = {1, 5, 9, 13, 17, 21};
  expect_floats(o, w, 6);
  /* x[1, ..., ::2]: shrink dim 0, ellipsis dim 1, stride 2 on dim 2 -> [3,2]. */
  ar_strided_slice_options_t so2 = {.ellipsis_mask = 2, .shrink_axis_mask = 1, .begin_mask = 4,
                                    .end_mask = 4};
  int32_t b2[] = {1, 0, 0}, e2[] = {2, 0, 0}, s2[] = {1, 1, 2};
  out = tv(AR_DTYPE_FLOAT32, o, 2, 3, 2);
  ck_assert_int_eq(strided(&in, 3, b2, e2, s2, &so2, &out), 0);
  float w2[] = {12, 14, 16, 18, 20, 22};
  expect_floats(o, w2, 6);
  /* x[newaxis, 0:1]: new dim of 1 in front, dim 0 sliced to 1, the others whole -> [1,1,3,4]. */
  ar_strided_slice_options_t so3 = {.new_axis_mask = 1};
  int32_t b3[] = {0, 0}, e3[] = {0, 1}, s3[] = {1, 1};
  out = tv(AR_DTYPE_FLOAT32, o, 4, 1, 1, 3, 4);
  ck_assert_int_eq(strided(&in, 2, b3, e3, s3, &so3, &out), 0);
  float w3[12];
  iota(w3, 12);
  expect_floats(o, w3, 12);
  /* x[:, newaxis, 2] -> [2,1,4]: begin_mask on spec 0, new axis spec 1, shrink spec 2 (dim 1). */
  ar_strided_slice_options_t so4 = {.begin_mask = 1, .end_mask = 1, .new_axis_mask = 2,
                                    .shrink_axis_mask = 4};
  int32_t b4[] = {0, 0, 2}, e4[] = {0, 0, 3}, s4[] = {1, 1, 1};
  out = tv(AR_DTYPE_FLOAT32, o, 3, 2, 1, 4);
  ck_assert_int_eq(strided(&in, 3, b4, e4, s4, &so4, &out), 0);
  float w4[] = {8, 9, 10, 11, 20, 21, 22, 23};
  expect_floats(o, w4, 8);
  /* Two ellipsis bits are an error. */
  ar_strided_slice_options_t bad = {.ellipsis_mask = 3};
  ck_assert_int_eq(strided(&in, 2, b, e, s, &bad, &out), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(g_msg, "ellipsis_mask"));
}
END_TEST

START_TEST(strided_slice_offset_int64_and_ints) {
  int32_t x[10], o[3];
  for (int i = 0; i < 10; i++) x[i] = 100 + i;
  ar_tview_t in = tv(AR_DTYPE_INT32, x, 1, 10), out = tv(AR_DTYPE_INT32, o, 1, 3);
  int64_t b[] = {2}, e[] = {3}, s[] = {1};   /* offset: end = begin + 3 -> x[2:5] */
  ar_tview_t tb = cst(AR_DTYPE_INT64, b, 1, 1), te = cst(AR_DTYPE_INT64, e, 1, 1);
  ar_tview_t ts = cst(AR_DTYPE_INT64, s, 1, 1);
  ar_tview_t *ins[] = {&in, &tb, &te, &ts};
  ar_options_t opt = {.strided_slice = {.offset = true}};
  ar_node_t n = node1(AR_OP_STRIDED_SLICE, &opt, 4, ins, &out);
  ck_assert_int_eq(run(&n), 0);
  ck_assert_int_eq(o[0], 102); ck_assert_int_eq(o[1], 103); ck_assert_int_eq(o[2], 104);
  /* Without offset, x[2:3] has one element: the stored shape [3] is refused. */
  opt.strided_slice.offset = false;
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  ck_assert_ptr_nonnull(strstr(g_msg, "inferred [1]"));
}
END_TEST

START_TEST(strided_slice_refuses_non_constant_begin) {
  float x[4], o[2];
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 1, 4), out = tv(AR_DTYPE_FLOAT32, o, 1, 2);
  int32_t b[] = {0}, e[] = {2}, s[] = {1};
  ar_tview_t tb = tv(AR_DTYPE_INT32, b, 1, 1);   /* a graph input: values unknown at prepare */
  ar_tview_t te = cst(AR_DTYPE_INT32, e, 1, 1), ts = cst(AR_DTYPE_INT32, s, 1, 1);
  ar_tview_t *ins[] = {&in, &tb, &te, &ts};
  ar_options_t opt = {.strided_slice = {0}};
  ar_node_t n = node1(AR_OP_STRIDED_SLICE, &opt, 4, ins, &out);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_str_eq(g_msg, "operator 3 (STRIDED_SLICE): begin (input 1) is not a constant (its values "
                          "decide the output shape and are known only at invoke, not computed from shapes and "
                          "constants at prepare; dynamic shapes are not supported)");
  /* A graph input whose value the interpreter knows (value_known) is used like a constant. */
  tb.value_known = true;
  ck_assert_int_eq(run(&n), 0);
  tb.value_known = false;
  /* A zero stride is an error. */
  tb.is_constant = true;
  s[0] = 0;
  ck_assert_int_eq(run(&n), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(g_msg, "stride"));
}
END_TEST

/* ---- SLICE ---- */

START_TEST(slice_begin_size_minus_one) {
  float x[12], o[6];
  iota(x, 12);
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 2, 3, 4), out = tv(AR_DTYPE_FLOAT32, o, 2, 2, 3);
  int32_t b[] = {1, 1}, sz[] = {2, -1};
  ar_tview_t tb = cst(AR_DTYPE_INT32, b, 1, 2), ts = cst(AR_DTYPE_INT32, sz, 1, 2);
  ar_tview_t *ins[] = {&in, &tb, &ts};
  ar_node_t n = node1(AR_OP_SLICE, NULL, 3, ins, &out);
  ck_assert_int_eq(run(&n), 0);
  float w[] = {5, 6, 7, 9, 10, 11};
  expect_floats(o, w, 6);
  sz[0] = 3;   /* 1 + 3 > 3 */
  ck_assert_int_eq(run(&n), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(g_msg, "dim 0: begin 1 size 3 out of range"));
}
END_TEST

/* ---- TRANSPOSE ---- */

START_TEST(transpose_2d_and_nhwc_to_nchw) {
  float x[24], o[24];
  iota(x, 6);
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 2, 2, 3), out = tv(AR_DTYPE_FLOAT32, o, 2, 3, 2);
  int32_t p[] = {1, 0};
  ar_tview_t tp = cst(AR_DTYPE_INT32, p, 1, 2);
  ar_tview_t *ins[] = {&in, &tp};
  ar_node_t n = node1(AR_OP_TRANSPOSE, NULL, 2, ins, &out);
  ck_assert_int_eq(run(&n), 0);
  float w[] = {0, 3, 1, 4, 2, 5};
  expect_floats(o, w, 6);
  /* NHWC [1,2,3,4] -> NCHW [1,4,2,3]: o[c][h][w] = x[h][w][c] = 12h + 4w + c. */
  iota(x, 24);
  in = tv(AR_DTYPE_FLOAT32, x, 4, 1, 2, 3, 4);
  out = tv(AR_DTYPE_FLOAT32, o, 4, 1, 4, 2, 3);
  int32_t p4[] = {0, 3, 1, 2};
  tp = cst(AR_DTYPE_INT32, p4, 1, 4);
  ck_assert_int_eq(run(&n), 0);
  for (int c = 0; c < 4; c++)
    for (int h = 0; h < 2; h++)
      for (int w2 = 0; w2 < 3; w2++)
        ck_assert_float_eq(o[(c * 2 + h) * 3 + w2], (float)(12 * h + 4 * w2 + c));
  /* Not a permutation. */
  int32_t bad[] = {0, 1, 1, 2};
  tp = cst(AR_DTYPE_INT32, bad, 1, 4);
  ck_assert_int_eq(run(&n), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(g_msg, "perm[2] = 1 is not a permutation"));
}
END_TEST

START_TEST(transpose_rank6_against_naive) {
  enum { A = 2, B = 3, C = 1, D = 2, E = 3, F = 2, N = A * B * C * D * E * F };
  static float x[N], o[N];
  iota(x, N);
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 6, A, B, C, D, E, F);
  int32_t p[] = {5, 3, 0, 4, 2, 1};   /* output dims F, D, A, E, C, B */
  ar_tview_t out = tv(AR_DTYPE_FLOAT32, o, 6, F, D, A, E, C, B);
  ar_tview_t tp = cst(AR_DTYPE_INT32, p, 1, 6);
  ar_tview_t *ins[] = {&in, &tp};
  ar_node_t n = node1(AR_OP_TRANSPOSE, NULL, 2, ins, &out);
  ck_assert_int_eq(run(&n), 0);
  int k = 0;
  for (int f = 0; f < F; f++) for (int d = 0; d < D; d++) for (int a = 0; a < A; a++)
    for (int e = 0; e < E; e++) for (int c = 0; c < C; c++) for (int b = 0; b < B; b++) {
      int src = ((((a * B + b) * C + c) * D + d) * E + e) * F + f;
      ck_assert_msg(o[k] == x[src], "element %d: got %g want %g", k, o[k], x[src]);
      k++;
    }
  /* Rank 7 is refused (TFLite's limit is 6). */
  ar_tview_t in7 = tv(AR_DTYPE_FLOAT32, x, 7, 1, A, B, C, D, E, F);
  n.inputs[0] = &in7;
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
}
END_TEST

/* ---- TILE / BROADCAST_TO ---- */

START_TEST(tile_1d_2d_and_int64_multiples) {
  float x[4] = {1, 2, 3, 4}, o[16];
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 1, 2), out = tv(AR_DTYPE_FLOAT32, o, 1, 6);
  int32_t m[] = {3};
  ar_tview_t tm = cst(AR_DTYPE_INT32, m, 1, 1);
  ar_tview_t *ins[] = {&in, &tm};
  ar_node_t n = node1(AR_OP_TILE, NULL, 2, ins, &out);
  ck_assert_int_eq(run(&n), 0);
  float w[] = {1, 2, 1, 2, 1, 2};
  expect_floats(o, w, 6);
  /* [[1,2],[3,4]] tiled (2,2) -> 4x4. */
  in = tv(AR_DTYPE_FLOAT32, x, 2, 2, 2);
  out = tv(AR_DTYPE_FLOAT32, o, 2, 4, 4);
  int64_t m2[] = {2, 2};
  tm = cst(AR_DTYPE_INT64, m2, 1, 2);
  ck_assert_int_eq(run(&n), 0);
  float w2[] = {1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4};
  expect_floats(o, w2, 16);
}
END_TEST

START_TEST(broadcast_to_rows_cols_and_bool) {
  float x[3] = {1, 2, 3}, o[6];
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 1, 3), out = tv(AR_DTYPE_FLOAT32, o, 2, 2, 3);
  int32_t sh[] = {2, 3};
  ar_tview_t ts = cst(AR_DTYPE_INT32, sh, 1, 2);
  ar_tview_t *ins[] = {&in, &ts};
  ar_node_t n = node1(AR_OP_BROADCAST_TO, NULL, 2, ins, &out);
  ck_assert_int_eq(run(&n), 0);
  float w[] = {1, 2, 3, 1, 2, 3};
  expect_floats(o, w, 6);
  in = tv(AR_DTYPE_FLOAT32, x, 2, 2, 1);   /* column [1,2] */
  ck_assert_int_eq(run(&n), 0);
  float w2[] = {1, 1, 1, 2, 2, 2};
  expect_floats(o, w2, 6);
  bool bx[2] = {true, false}, bo[6];
  ar_tview_t bin = tv(AR_DTYPE_BOOL, bx, 2, 2, 1), bout = tv(AR_DTYPE_BOOL, bo, 2, 2, 3);
  n.inputs[0] = &bin;
  n.outputs[0] = &bout;
  ck_assert_int_eq(run(&n), 0);
  for (int i = 0; i < 6; i++) ck_assert(bo[i] == (i < 3));
  /* [3] cannot go to [2,2]. */
  in = tv(AR_DTYPE_FLOAT32, x, 1, 3);
  n.inputs[0] = &in;
  int32_t sh2[] = {2, 2};
  ts = cst(AR_DTYPE_INT32, sh2, 1, 2);
  out = tv(AR_DTYPE_FLOAT32, o, 2, 2, 2);
  n.outputs[0] = &out;
  ck_assert_int_eq(run(&n), AR_ESHAPE);
}
END_TEST

/* ---- SPACE_TO_DEPTH ---- */

START_TEST(space_to_depth_order) {
  /* TensorFlow's documented 4x4 example, block 2. */
  float x[16] = {1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16}, o[16];
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 4, 1, 4, 4, 1), out = tv(AR_DTYPE_FLOAT32, o, 4, 1, 2, 2, 4);
  ar_tview_t *ins[] = {&in};
  ar_options_t opt = {.space_to_depth = {.block_size = 2}};
  ar_node_t n = node1(AR_OP_SPACE_TO_DEPTH, &opt, 1, ins, &out);
  ck_assert_int_eq(run(&n), 0);
  float w[16];
  for (int i = 0; i < 16; i++) w[i] = (float)(i + 1);
  expect_floats(o, w, 16);
  /* Two channels: output channel order is (dy, dx, c). */
  float y[8] = {1, 2, 3, 4, 5, 6, 7, 8};   /* [1,2,2,2]: pixel (h,w) holds (c0,c1) */
  in = tv(AR_DTYPE_FLOAT32, y, 4, 1, 2, 2, 2);
  out = tv(AR_DTYPE_FLOAT32, o, 4, 1, 1, 1, 8);
  ck_assert_int_eq(run(&n), 0);
  expect_floats(o, y, 8);
  opt.space_to_depth.block_size = 3;
  ck_assert_int_eq(run(&n), AR_ESHAPE);
}
END_TEST

/* ---- SPLIT / SPLIT_V / UNPACK / PACK ---- */

START_TEST(split_and_split_v) {
  float x[8], a[4], b[4];
  iota(x, 8);                                    /* [[0..3],[4..7]] */
  int32_t axis[] = {1};
  ar_tview_t ta = cst(AR_DTYPE_INT32, axis, 0), in = tv(AR_DTYPE_FLOAT32, x, 2, 2, 4);
  ar_tview_t oa = tv(AR_DTYPE_FLOAT32, a, 2, 2, 2), ob = tv(AR_DTYPE_FLOAT32, b, 2, 2, 2);
  ar_tview_t *ins[] = {&ta, &in}, *outs[] = {&oa, &ob};
  ar_options_t opt = {.split = {.num_splits = 2}};
  ar_node_t n = nodeN(AR_OP_SPLIT, &opt, 2, ins, 2, outs);
  ck_assert_int_eq(run(&n), 0);
  float wa[] = {0, 1, 4, 5}, wb[] = {2, 3, 6, 7};
  expect_floats(a, wa, 4);
  expect_floats(b, wb, 4);
  /* SPLIT_V of [2,3] along -1 into sizes (1, -1). */
  float y[6];
  iota(y, 6);
  ar_tview_t in2 = tv(AR_DTYPE_FLOAT32, y, 2, 2, 3);
  int32_t sizes[] = {1, -1}, ax2[] = {-1};
  ar_tview_t tsz = cst(AR_DTYPE_INT32, sizes, 1, 2), tax = cst(AR_DTYPE_INT32, ax2, 1, 1);
  oa = tv(AR_DTYPE_FLOAT32, a, 2, 2, 1);
  ob = tv(AR_DTYPE_FLOAT32, b, 2, 2, 2);
  ar_tview_t *ins2[] = {&in2, &tsz, &tax};
  n = nodeN(AR_OP_SPLIT_V, &opt, 3, ins2, 2, outs);
  ck_assert_int_eq(run(&n), 0);
  float wa2[] = {0, 3}, wb2[] = {1, 2, 4, 5};
  expect_floats(a, wa2, 2);
  expect_floats(b, wb2, 4);
  sizes[0] = 4;   /* 4 + (-1 -> -1) does not fit 3 */
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  /* Re-prepare after a resize (infer_shapes): every output gets its inferred shape written. */
  sizes[0] = 2;
  oa = tv(AR_DTYPE_FLOAT32, a, 1, 9);
  ob = tv(AR_DTYPE_FLOAT32, b, 1, 9);
  n.infer_shapes = true;
  ck_assert_int_eq(run(&n), 0);
  ck_assert_int_eq(oa.rank, 2); ck_assert_int_eq(oa.dims[0], 2); ck_assert_int_eq(oa.dims[1], 2);
  ck_assert_int_eq(ob.rank, 2); ck_assert_int_eq(ob.dims[1], 1); ck_assert_uint_eq(ob.bytes, 8);
  float wa3[] = {0, 1, 3, 4}, wb3[] = {2, 5};
  expect_floats(a, wa3, 4);
  expect_floats(b, wb3, 2);
}
END_TEST

START_TEST(unpack_and_pack_roundtrip) {
  float x[6], p[3][2], back[6];
  iota(x, 6);                                    /* [[0,1,2],[3,4,5]] */
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 2, 2, 3);
  ar_tview_t o0 = tv(AR_DTYPE_FLOAT32, p[0], 1, 2), o1 = tv(AR_DTYPE_FLOAT32, p[1], 1, 2);
  ar_tview_t o2 = tv(AR_DTYPE_FLOAT32, p[2], 1, 2);
  ar_tview_t *ins[] = {&in}, *outs[] = {&o0, &o1, &o2};
  ar_options_t opt = {.pack = {.count = 3, .axis = -1}};
  ar_node_t n = nodeN(AR_OP_UNPACK, &opt, 1, ins, 3, outs);
  ck_assert_int_eq(run(&n), 0);
  for (int k = 0; k < 3; k++) { ck_assert_float_eq(p[k][0], k); ck_assert_float_eq(p[k][1], 3 + k); }
  /* PACK the three columns back along axis 1 -> [2,3] equal to x. */
  ar_tview_t out = tv(AR_DTYPE_FLOAT32, back, 2, 2, 3);
  opt.pack.axis = 1;
  n = nodeN(AR_OP_PACK, &opt, 3, outs, 1, (ar_tview_t *[]){&out});
  ck_assert_int_eq(run(&n), 0);
  expect_floats(back, x, 6);
  /* Along axis 0 -> [3,2], the pieces one after the other. */
  out = tv(AR_DTYPE_FLOAT32, back, 2, 3, 2);
  opt.pack.axis = 0;
  ck_assert_int_eq(run(&n), 0);
  float w[] = {0, 3, 1, 4, 2, 5};
  expect_floats(back, w, 6);
  opt.pack.count = 2;
  ck_assert_int_eq(run(&n), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(g_msg, "values_count 2 but 3 inputs"));
}
END_TEST

/* ---- SQUEEZE / EXPAND_DIMS ---- */

START_TEST(squeeze_and_expand_dims) {
  float x[3] = {1, 2, 3}, o[3];
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 3, 1, 3, 1), out = tv(AR_DTYPE_FLOAT32, o, 1, 3);
  ar_tview_t *ins[] = {&in};
  ar_options_t opt = {.squeeze = {.n_dims = 0}};
  ar_node_t n = node1(AR_OP_SQUEEZE, &opt, 1, ins, &out);
  ck_assert_int_eq(run(&n), 0);
  expect_floats(o, x, 3);
  opt.squeeze.n_dims = 1; opt.squeeze.dims[0] = -1;
  out = tv(AR_DTYPE_FLOAT32, o, 2, 1, 3);
  ck_assert_int_eq(run(&n), 0);
  opt.squeeze.dims[0] = 1;
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  ck_assert_ptr_nonnull(strstr(g_msg, "squeeze dim 1 has size 3"));
  /* EXPAND_DIMS [3] at -1 -> [3,1]; at 0 -> [1,3]; at 2 is out of range. */
  in = tv(AR_DTYPE_FLOAT32, x, 1, 3);
  int32_t ax[] = {-1};
  ar_tview_t ta = cst(AR_DTYPE_INT32, ax, 1, 1);
  ar_tview_t *ins2[] = {&in, &ta};
  out = tv(AR_DTYPE_FLOAT32, o, 2, 3, 1);
  n = node1(AR_OP_EXPAND_DIMS, NULL, 2, ins2, &out);
  ck_assert_int_eq(run(&n), 0);
  expect_floats(o, x, 3);
  ax[0] = 0;
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  out = tv(AR_DTYPE_FLOAT32, o, 2, 1, 3);
  ck_assert_int_eq(run(&n), 0);
  ax[0] = 2;
  ck_assert_int_eq(run(&n), AR_EINVAL);
}
END_TEST


/* ---- GATHER / GATHER_ND ---- */

START_TEST(gather_axis0_axis1_and_int64) {
  float x[6], o[9];
  iota(x, 6);                                    /* [[0,1,2],[3,4,5]] */
  ar_tview_t p = tv(AR_DTYPE_FLOAT32, x, 2, 2, 3);
  int32_t ix[] = {1, 0, 1};
  ar_tview_t ti = tv(AR_DTYPE_INT32, ix, 1, 3);  /* indices may be a graph input */
  ar_tview_t out = tv(AR_DTYPE_FLOAT32, o, 2, 3, 3);
  ar_tview_t *ins[] = {&p, &ti};
  ar_options_t opt = {.gather = {.axis = 0}};
  ar_node_t n = node1(AR_OP_GATHER, &opt, 2, ins, &out);
  ck_assert_int_eq(run(&n), 0);
  float w[] = {3, 4, 5, 0, 1, 2, 3, 4, 5};
  expect_floats(o, w, 9);
  /* axis -1 with [2,2] int64 indices -> [2,2,2]. */
  int64_t ix2[] = {2, 0, 1, 1};
  ti = tv(AR_DTYPE_INT64, ix2, 2, 2, 2);
  out = tv(AR_DTYPE_FLOAT32, o, 3, 2, 2, 2);
  opt.gather.axis = -1;
  ck_assert_int_eq(run(&n), 0);
  float w2[] = {2, 0, 1, 1, 5, 3, 4, 4};
  expect_floats(o, w2, 8);
  /* An out-of-range index writes zeros (TFLite fails the invoke). */
  ix2[1] = 7;
  ck_assert_int_eq(run(&n), 0);
  float w3[] = {2, 0, 1, 1, 5, 0, 4, 4};
  expect_floats(o, w3, 8);
}
END_TEST

START_TEST(gather_batch_dims) {
  /* params [2,3], indices [2,2], batch_dims 1, axis 1: out[b][j] = params[b][idx[b][j]]. */
  float x[6], o[4];
  iota(x, 6);
  int32_t ix[] = {2, 0, 1, 1};
  ar_tview_t p = tv(AR_DTYPE_FLOAT32, x, 2, 2, 3), ti = tv(AR_DTYPE_INT32, ix, 2, 2, 2);
  ar_tview_t out = tv(AR_DTYPE_FLOAT32, o, 2, 2, 2);
  ar_tview_t *ins[] = {&p, &ti};
  ar_options_t opt = {.gather = {.axis = 1, .batch_dims = 1}};
  ar_node_t n = node1(AR_OP_GATHER, &opt, 2, ins, &out);
  ck_assert_int_eq(run(&n), 0);
  float w[] = {2, 0, 4, 4};
  expect_floats(o, w, 4);
  opt.gather.batch_dims = 2;   /* > axis */
  ck_assert_int_eq(run(&n), AR_EINVAL);
}
END_TEST

START_TEST(gather_nd_points_and_rows) {
  float x[12], o[6];
  iota(x, 12);                                   /* [3,4] */
  ar_tview_t p = tv(AR_DTYPE_FLOAT32, x, 2, 3, 4);
  int32_t ix[] = {2, 1, 0, 3};                   /* two points (2,1), (0,3) */
  ar_tview_t ti = tv(AR_DTYPE_INT32, ix, 2, 2, 2), out = tv(AR_DTYPE_FLOAT32, o, 1, 2);
  ar_tview_t *ins[] = {&p, &ti};
  ar_node_t n = node1(AR_OP_GATHER_ND, NULL, 2, ins, &out);
  ck_assert_int_eq(run(&n), 0);
  float w[] = {9, 3};
  expect_floats(o, w, 2);
  /* Depth 1 (indices [2,1]): whole rows 2 and 0 -> [2,4]. */
  float o2[8];
  int64_t ix2[] = {2, 0};
  ti = tv(AR_DTYPE_INT64, ix2, 2, 2, 1);
  out = tv(AR_DTYPE_FLOAT32, o2, 2, 2, 4);
  ck_assert_int_eq(run(&n), 0);
  float w2[] = {8, 9, 10, 11, 0, 1, 2, 3};
  expect_floats(o2, w2, 8);
  ti = tv(AR_DTYPE_INT32, ix, 2, 1, 3);          /* depth 3 > params rank 2 */
  ck_assert_int_eq(run(&n), AR_ESHAPE);
}
END_TEST

/* ---- RESIZE_NEAREST_NEIGHBOR ---- */

START_TEST(resize_nearest_three_rules) {
  /* 1x2x2x1 [[1,2],[3,4]] -> 3x3. Columns (and rows) map, per rule:
   *   plain:          floor(i * 2/3)            = 0, 0, 1
   *   align_corners:  round(i * 1/2)            = 0, 1, 1  (0.5 rounds away from zero)
   *   half_pixel:     floor((i + 0.5) * 2/3)    = 0, 1, 1 */
  float x[4] = {1, 2, 3, 4}, o[9];
  int32_t sz[] = {3, 3};
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 4, 1, 2, 2, 1), ts = cst(AR_DTYPE_INT32, sz, 1, 2);
  ar_tview_t out = tv(AR_DTYPE_FLOAT32, o, 4, 1, 3, 3, 1);
  ar_tview_t *ins[] = {&in, &ts};
  ar_options_t opt = {.resize_nearest = {false, false}};
  ar_node_t n = node1(AR_OP_RESIZE_NEAREST_NEIGHBOR, &opt, 2, ins, &out);
  ck_assert_int_eq(run(&n), 0);
  float w0[] = {1, 1, 2, 1, 1, 2, 3, 3, 4};
  expect_floats(o, w0, 9);
  opt.resize_nearest.align_corners = true;
  ck_assert_int_eq(run(&n), 0);
  float w1[] = {1, 2, 2, 3, 4, 4, 3, 4, 4};
  expect_floats(o, w1, 9);
  opt.resize_nearest.align_corners = false;
  opt.resize_nearest.half_pixel_centers = true;
  ck_assert_int_eq(run(&n), 0);
  expect_floats(o, w1, 9);
  /* Downscale 4 -> 2 with half pixel centers: floor((i + 0.5) * 2) = 1, 3. */
  float y[4] = {10, 11, 12, 13};
  int32_t sz2[] = {1, 2};
  in = tv(AR_DTYPE_FLOAT32, y, 4, 1, 1, 4, 1);
  ts = cst(AR_DTYPE_INT32, sz2, 1, 2);
  out = tv(AR_DTYPE_FLOAT32, o, 4, 1, 1, 2, 1);
  ck_assert_int_eq(run(&n), 0);
  float w2[] = {11, 13};
  expect_floats(o, w2, 2);
  /* A size from a graph input is refused. */
  ts.is_constant = false;
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(g_msg, "size (input 1) is not a constant"));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("kernels_index");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, strided_slice_strides_2d);
  tcase_add_test(tc, strided_slice_negative_strides_and_masks);
  tcase_add_test(tc, strided_slice_shrink_axis);
  tcase_add_test(tc, strided_slice_ellipsis_and_new_axis);
  tcase_add_test(tc, strided_slice_offset_int64_and_ints);
  tcase_add_test(tc, strided_slice_refuses_non_constant_begin);
  tcase_add_test(tc, slice_begin_size_minus_one);
  tcase_add_test(tc, transpose_2d_and_nhwc_to_nchw);
  tcase_add_test(tc, transpose_rank6_against_naive);
  tcase_add_test(tc, tile_1d_2d_and_int64_multiples);
  tcase_add_test(tc, broadcast_to_rows_cols_and_bool);
  tcase_add_test(tc, space_to_depth_order);
  tcase_add_test(tc, split_and_split_v);
  tcase_add_test(tc, unpack_and_pack_roundtrip);
  tcase_add_test(tc, squeeze_and_expand_dims);
  tcase_add_test(tc, gather_axis0_axis1_and_int64);
  tcase_add_test(tc, gather_batch_dims);
  tcase_add_test(tc, gather_nd_points_and_rows);
  tcase_add_test(tc, resize_nearest_three_rules);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
