/* check_kernels_math.c - hand-computed unit tests for the math kernels added for issue 10:
 * binary.c (SUB, DIV, FLOOR_DIV, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, POW, comparisons,
 * SELECT_V2, integer ADD/MUL; N-d broadcasting up to rank 6 against a naive loop), unary.c
 * (ABS ... RELU_0_TO_1, CAST), reduce.c (SUM, REDUCE_MAX/MIN/PROD, ARG_MAX/MIN) and softmax.c
 * (SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION), with the prepare errors a bad model gets. The
 * single-operator LiteRT goldens (check_ops_golden) cover the same kernels on generated models. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "kernels/ar_kernels.h"

/* ---- helpers ---- */

static ar_tview_t tv(ar_dtype_t dt, void *data, int rank, ...) {
  ar_tview_t t;
  memset(&t, 0, sizeof t);
  t.dtype = dt; t.data = data; t.rank = rank;
  va_list ap;
  va_start(ap, rank);
  uint64_t n = 1;
  for (int i = 0; i < rank; i++) { t.dims[i] = va_arg(ap, int); n *= (uint64_t)t.dims[i]; }
  va_end(ap);
  t.bytes = n * ar_dtype_size(dt);
  return t;
}

/* The node points at the caller's arrays (inputs; the output pointer in a compound literal of the
 * caller's block, which lives as long as the node declared there). */
static ar_node_t mk_(ar_op_t op, const ar_options_t *opts, int n_in, ar_tview_t **in, ar_tview_t **out) {
  ar_node_t n;
  memset(&n, 0, sizeof n);
  n.op = op; n.index = 3; n.version = 1; n.options = opts;
  n.n_inputs = n_in; n.n_outputs = 1;
  n.inputs = in;
  n.outputs = out;
  n.threads = 1;
  return n;
}
#define mk(op, opts, n_in, in, out) mk_((op), (opts), (n_in), (in), (ar_tview_t *[1]){(out)})

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

/* Run a 2-input op on (a, b) into out; asserts prepare succeeded. */
static void run2(ar_op_t op, const ar_options_t *o, ar_tview_t a, ar_tview_t b, ar_tview_t *out) {
  ar_tview_t *in[2] = {&a, &b};
  ar_node_t n = mk(op, o, 2, in, out);
  int rc = run(&n);
  ck_assert_msg(rc == 0, "%s: %s", ar_op_name(op), g_msg);
}

static void expect_floats(const float *got, const float *want, int n, float tol) {
  for (int i = 0; i < n; i++)
    ck_assert_msg(fabsf(got[i] - want[i]) <= tol || (isnan(got[i]) && isnan(want[i])),
                  "element %d: got %.9g want %.9g", i, got[i], want[i]);
}

/* ---- binary arithmetic ---- */

START_TEST(sub_div_broadcast_and_activation) {
  float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {0.5f, -1, 4}, o[6];
  ar_tview_t out = tv(AR_DTYPE_FLOAT32, o, 2, 2, 3);
  run2(AR_OP_SUB, NULL, tv(AR_DTYPE_FLOAT32, a, 2, 2, 3), tv(AR_DTYPE_FLOAT32, b, 1, 3), &out);
  expect_floats(o, (float[]){0.5f, 3, -1, 3.5f, 6, 2}, 6, 0);
  ar_options_t relu6 = {.elementwise = {AR_ACT_RELU6}};
  run2(AR_OP_DIV, &relu6, tv(AR_DTYPE_FLOAT32, a, 2, 2, 3), tv(AR_DTYPE_FLOAT32, b, 1, 3), &out);
  expect_floats(o, (float[]){2, 0, 0.75f, 6, 0, 1.5f}, 6, 1e-7f);
  ar_options_t relu = {.elementwise = {AR_ACT_RELU}};
  run2(AR_OP_SUB, &relu, tv(AR_DTYPE_FLOAT32, b, 1, 3), tv(AR_DTYPE_FLOAT32, a, 2, 2, 3), &out);
  expect_floats(o, (float[]){0, 0, 1, 0, 0, 0}, 6, 0);
}
END_TEST

START_TEST(floor_div_rounds_down) {
  float a[6] = {7, -7, 7.5f, -0.5f, 6, 1}, b[6] = {-2, 2, 2, 4, 3, 0.1f}, o[6];
  ar_tview_t out = tv(AR_DTYPE_FLOAT32, o, 1, 6);
  run2(AR_OP_FLOOR_DIV, NULL, tv(AR_DTYPE_FLOAT32, a, 1, 6), tv(AR_DTYPE_FLOAT32, b, 1, 6), &out);
  /* 1 / 0.1f is 9.99999985 in double: floor 9 (a float quotient would round to 10). */
  expect_floats(o, (float[]){-4, -4, 3, -1, 2, 9}, 6, 0);
  int32_t ia[6] = {-7, 7, 6, -6, 5, INT32_MIN}, ib[6] = {2, -2, 3, -4, 0, -1}, io[6];
  ar_tview_t iout = tv(AR_DTYPE_INT32, io, 1, 6);
  run2(AR_OP_FLOOR_DIV, NULL, tv(AR_DTYPE_INT32, ia, 1, 6), tv(AR_DTYPE_INT32, ib, 1, 6), &iout);
  int32_t want[6] = {-4, -4, 2, 1, 0, INT32_MIN};   /* x / 0 -> 0; INT_MIN / -1 wraps */
  for (int i = 0; i < 6; i++) ck_assert_int_eq(io[i], want[i]);
  run2(AR_OP_DIV, NULL, tv(AR_DTYPE_INT32, ia, 1, 6), tv(AR_DTYPE_INT32, ib, 1, 6), &iout);
  int32_t want_div[6] = {-3, -3, 2, 1, 0, INT32_MIN};   /* truncating */
  for (int i = 0; i < 6; i++) ck_assert_int_eq(io[i], want_div[i]);
}
END_TEST

START_TEST(maximum_minimum_nan_and_ints) {
  float a[3] = {NAN, 1, -2}, b[3] = {1, NAN, -3}, o[3];
  ar_tview_t out = tv(AR_DTYPE_FLOAT32, o, 1, 3);
  run2(AR_OP_MAXIMUM, NULL, tv(AR_DTYPE_FLOAT32, a, 1, 3), tv(AR_DTYPE_FLOAT32, b, 1, 3), &out);
  /* x > y ? x : y: a NaN x yields y, a NaN y yields NaN (TFLite's MaximumOp). */
  expect_floats(o, (float[]){1, NAN, -2}, 3, 0);
  run2(AR_OP_MINIMUM, NULL, tv(AR_DTYPE_FLOAT32, a, 1, 3), tv(AR_DTYPE_FLOAT32, b, 1, 3), &out);
  expect_floats(o, (float[]){1, NAN, -3}, 3, 0);
  int64_t la[4] = {5, -5, 7, INT64_MIN}, lb[1] = {0}, lo[4];
  ar_tview_t lout = tv(AR_DTYPE_INT64, lo, 1, 4);
  run2(AR_OP_MINIMUM, NULL, tv(AR_DTYPE_INT64, la, 1, 4), tv(AR_DTYPE_INT64, lb, 0), &lout);
  ck_assert(lo[0] == 0 && lo[1] == -5 && lo[2] == 0 && lo[3] == INT64_MIN);
  uint8_t ua[2] = {200, 3}, ub[2] = {100, 250}, uo[2];
  ar_tview_t uout = tv(AR_DTYPE_UINT8, uo, 1, 2);
  run2(AR_OP_MAXIMUM, NULL, tv(AR_DTYPE_UINT8, ua, 1, 2), tv(AR_DTYPE_UINT8, ub, 1, 2), &uout);
  ck_assert(uo[0] == 200 && uo[1] == 250);
}
END_TEST

START_TEST(squared_difference_and_pow) {
  float a[4] = {1, -2, 3, 0.5f}, b[4] = {4, 1, 3, -1}, o[4];
  ar_tview_t out = tv(AR_DTYPE_FLOAT32, o, 1, 4);
  run2(AR_OP_SQUARED_DIFFERENCE, NULL, tv(AR_DTYPE_FLOAT32, a, 1, 4), tv(AR_DTYPE_FLOAT32, b, 1, 4), &out);
  expect_floats(o, (float[]){9, 9, 0, 2.25f}, 4, 0);
  float pa[4] = {2, 4, 9, 0.5f}, pb[4] = {3, 0.5f, -0.5f, -2};
  run2(AR_OP_POW, NULL, tv(AR_DTYPE_FLOAT32, pa, 1, 4), tv(AR_DTYPE_FLOAT32, pb, 1, 4), &out);
  expect_floats(o, (float[]){8, 2, 1.0f / 3, 4}, 4, 1e-6f);
  int32_t ia[5] = {2, -3, 5, 7, 2}, ib[5] = {10, 3, 0, -1, 31}, io[5];
  ar_tview_t iout = tv(AR_DTYPE_INT32, io, 1, 5);
  run2(AR_OP_POW, NULL, tv(AR_DTYPE_INT32, ia, 1, 5), tv(AR_DTYPE_INT32, ib, 1, 5), &iout);
  int32_t want[5] = {1024, -27, 1, 0, INT32_MIN};   /* negative exponent -> 0; 2^31 wraps */
  for (int i = 0; i < 5; i++) ck_assert_int_eq(io[i], want[i]);
  run2(AR_OP_SQUARED_DIFFERENCE, NULL, tv(AR_DTYPE_INT32, ia, 1, 5), tv(AR_DTYPE_INT32, ib, 1, 5), &iout);
  int32_t want_sq[5] = {64, 36, 25, 64, 841};
  for (int i = 0; i < 5; i++) ck_assert_int_eq(io[i], want_sq[i]);
}
END_TEST

START_TEST(integer_add_mul_sub_wrap_and_clamp) {
  int32_t a[3] = {INT32_MAX, -4, 10}, b[1] = {1}, o[3];
  ar_tview_t out = tv(AR_DTYPE_INT32, o, 1, 3);
  run2(AR_OP_ADD, NULL, tv(AR_DTYPE_INT32, a, 1, 3), tv(AR_DTYPE_INT32, b, 1, 1), &out);
  ck_assert(o[0] == INT32_MIN && o[1] == -3 && o[2] == 11);
  ar_options_t relu6 = {.elementwise = {AR_ACT_RELU6}};
  run2(AR_OP_MUL, &relu6, tv(AR_DTYPE_INT32, a, 1, 3), tv(AR_DTYPE_INT32, b, 1, 1), &out);
  ck_assert(o[0] == 6 && o[1] == 0 && o[2] == 6);
  int64_t la[2] = {INT64_MIN, 5}, lb[2] = {1, 7}, lo[2];
  ar_tview_t lout = tv(AR_DTYPE_INT64, lo, 1, 2);
  run2(AR_OP_SUB, NULL, tv(AR_DTYPE_INT64, la, 1, 2), tv(AR_DTYPE_INT64, lb, 1, 2), &lout);
  ck_assert(lo[0] == INT64_MAX && lo[1] == -2);
  run2(AR_OP_MUL, NULL, tv(AR_DTYPE_INT64, la + 1, 1, 1), tv(AR_DTYPE_INT64, lb, 1, 2), &lout);
  ck_assert(lo[0] == 5 && lo[1] == 35);
}
END_TEST

/* Rank-6 broadcast with every input pattern against a naive index computation. */
START_TEST(sub_rank6_broadcast_matches_naive) {
  const int ad[6] = {2, 1, 3, 1, 2, 3}, bd[6] = {1, 2, 1, 2, 1, 3};
  float a[36], b[12], o[144];
  for (int i = 0; i < 36; i++) a[i] = (float)i * 0.5f;
  for (int i = 0; i < 12; i++) b[i] = (float)(i * i) - 3.0f;
  ar_tview_t out = tv(AR_DTYPE_FLOAT32, o, 6, 2, 2, 3, 2, 2, 3);
  run2(AR_OP_SUB, NULL, tv(AR_DTYPE_FLOAT32, a, 6, 2, 1, 3, 1, 2, 3),
       tv(AR_DTYPE_FLOAT32, b, 6, 1, 2, 1, 2, 1, 3), &out);
  int idx[6], k = 0;
  for (idx[0] = 0; idx[0] < 2; idx[0]++) for (idx[1] = 0; idx[1] < 2; idx[1]++)
  for (idx[2] = 0; idx[2] < 3; idx[2]++) for (idx[3] = 0; idx[3] < 2; idx[3]++)
  for (idx[4] = 0; idx[4] < 2; idx[4]++) for (idx[5] = 0; idx[5] < 3; idx[5]++, k++) {
    int ia = 0, ib = 0;
    for (int d = 0; d < 6; d++) {
      ia = ia * ad[d] + (ad[d] == 1 ? 0 : idx[d]);
      ib = ib * bd[d] + (bd[d] == 1 ? 0 : idx[d]);
    }
    ck_assert_msg(o[k] == a[ia] - b[ib], "element %d: %g vs %g", k, o[k], a[ia] - b[ib]);
  }
  ck_assert_int_eq(k, 144);
}
END_TEST

/* ---- comparisons, SELECT_V2 ---- */

START_TEST(comparisons_bool_outputs) {
  float a[4] = {1, 2, 3, NAN}, b[1] = {2};
  bool o[4];
  ar_tview_t out = tv(AR_DTYPE_BOOL, o, 1, 4);
  const struct { ar_op_t op; bool want[4]; } cases[] = {
    {AR_OP_EQUAL, {0, 1, 0, 0}}, {AR_OP_NOT_EQUAL, {1, 0, 1, 1}}, {AR_OP_LESS, {1, 0, 0, 0}},
    {AR_OP_LESS_EQUAL, {1, 1, 0, 0}}, {AR_OP_GREATER, {0, 0, 1, 0}}, {AR_OP_GREATER_EQUAL, {0, 1, 1, 0}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    memset(o, 0x55, sizeof o);
    run2(cases[c].op, NULL, tv(AR_DTYPE_FLOAT32, a, 1, 4), tv(AR_DTYPE_FLOAT32, b, 0), &out);
    for (int i = 0; i < 4; i++) {
      uint8_t byte;
      memcpy(&byte, &o[i], 1);
      ck_assert_msg(byte == (uint8_t)cases[c].want[i], "%s element %d: byte %u", ar_op_name(cases[c].op),
                    i, byte);
    }
  }
  int64_t la[3] = {-1, 0, 1}, lb[3] = {0, 0, 0};
  bool lo[3];
  ar_tview_t lout = tv(AR_DTYPE_BOOL, lo, 1, 3);
  run2(AR_OP_GREATER_EQUAL, NULL, tv(AR_DTYPE_INT64, la, 1, 3), tv(AR_DTYPE_INT64, lb, 1, 3), &lout);
  ck_assert(!lo[0] && lo[1] && lo[2]);
  bool ba[4] = {true, false, true, false}, bb[2] = {true, false}, bo[4];
  ar_tview_t bout = tv(AR_DTYPE_BOOL, bo, 2, 2, 2);
  run2(AR_OP_EQUAL, NULL, tv(AR_DTYPE_BOOL, ba, 2, 2, 2), tv(AR_DTYPE_BOOL, bb, 1, 2), &bout);
  ck_assert(bo[0] && bo[1] && bo[2] && bo[3]);
}
END_TEST

START_TEST(select_v2_broadcasts_three_ways) {
  bool c[2] = {true, false};                       /* [2,1] */
  float x[3] = {1, 2, 3};                          /* [3] */
  float y[1] = {-1};                               /* [] */
  float o[6];
  ar_tview_t tc = tv(AR_DTYPE_BOOL, c, 2, 2, 1), tx = tv(AR_DTYPE_FLOAT32, x, 1, 3),
             ty = tv(AR_DTYPE_FLOAT32, y, 0), out = tv(AR_DTYPE_FLOAT32, o, 2, 2, 3);
  ar_tview_t *in[3] = {&tc, &tx, &ty};
  ar_node_t n = mk(AR_OP_SELECT_V2, NULL, 3, in, &out);
  ck_assert_int_eq(run(&n), 0);
  expect_floats(o, (float[]){1, 2, 3, -1, -1, -1}, 6, 0);
  int64_t lx[2] = {10, 20}, ly[2] = {-10, -20}, lo[4];
  bool c4[4] = {false, true, true, false};
  ar_tview_t tc4 = tv(AR_DTYPE_BOOL, c4, 2, 2, 2), tlx = tv(AR_DTYPE_INT64, lx, 1, 2),
             tly = tv(AR_DTYPE_INT64, ly, 1, 2), lout = tv(AR_DTYPE_INT64, lo, 2, 2, 2);
  ar_tview_t *lin[3] = {&tc4, &tlx, &tly};
  n = mk(AR_OP_SELECT_V2, NULL, 3, lin, &lout);
  ck_assert_int_eq(run(&n), 0);
  ck_assert(lo[0] == -10 && lo[1] == 20 && lo[2] == 10 && lo[3] == -20);
}
END_TEST

START_TEST(binary_prepare_errors) {
  float a[6], o[6];
  bool bo[6];
  ar_tview_t out = tv(AR_DTYPE_FLOAT32, o, 2, 2, 3);
  ar_tview_t x = tv(AR_DTYPE_FLOAT32, a, 2, 2, 3), y = tv(AR_DTYPE_FLOAT32, a, 1, 2);
  ar_tview_t *in[2] = {&x, &y};
  ar_node_t n = mk(AR_OP_SUB, NULL, 2, in, &out);
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  ck_assert_msg(strstr(g_msg, "operator 3 (SUB)") && strstr(g_msg, "[2]") && strstr(g_msg, "[2,3]"), "%s", g_msg);
  /* comparison into a float output */
  y = tv(AR_DTYPE_FLOAT32, a, 1, 3);
  n = mk(AR_OP_LESS, NULL, 2, in, &out);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "output 0 has dtype FLOAT32, expected BOOL"), "%s", g_msg);
  /* DIV on bool operands */
  ar_tview_t bx = tv(AR_DTYPE_BOOL, bo, 2, 2, 3), by = tv(AR_DTYPE_BOOL, bo, 2, 2, 3),
             bout = tv(AR_DTYPE_BOOL, bo, 2, 2, 3);
  ar_tview_t *bin[2] = {&bx, &by};
  n = mk(AR_OP_DIV, NULL, 2, bin, &bout);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "BOOL"), "%s", g_msg);
  /* mixed operand dtypes */
  int32_t ia[3];
  ar_tview_t iy = tv(AR_DTYPE_INT32, ia, 1, 3);
  ar_tview_t *mix[2] = {&x, &iy};
  n = mk(AR_OP_MAXIMUM, NULL, 2, mix, &out);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "input 1 has dtype INT32, expected FLOAT32"), "%s", g_msg);
  /* rank 7 */
  float big[1], bigo[1];
  ar_tview_t r7 = tv(AR_DTYPE_FLOAT32, big, 7, 1, 1, 1, 1, 1, 1, 1), r7o = tv(AR_DTYPE_FLOAT32, bigo, 7, 1, 1, 1, 1, 1, 1, 1);
  ar_tview_t *r7in[2] = {&r7, &r7};
  n = mk(AR_OP_POW, NULL, 2, r7in, &r7o);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  /* wrong stored output shape */
  ar_tview_t wrong = tv(AR_DTYPE_FLOAT32, o, 2, 3, 2);
  n = mk(AR_OP_SUB, NULL, 2, in, &wrong);
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  ck_assert_msg(strstr(g_msg, "output shape [3,2], inferred [2,3]"), "%s", g_msg);
}
END_TEST

/* ---- unary ---- */

static void run1(ar_op_t op, const ar_options_t *opt, ar_tview_t in, ar_tview_t *out) {
  ar_tview_t *ins[1] = {&in};
  ar_node_t n = mk(op, opt, 1, ins, out);
  int rc = run(&n);
  ck_assert_msg(rc == 0, "%s: %s", ar_op_name(op), g_msg);
}

START_TEST(unary_float_values) {
  float x[5] = {-2, -0.5f, 0, 1, 4}, o[5];
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 1, 5), out = tv(AR_DTYPE_FLOAT32, o, 1, 5);
  run1(AR_OP_ABS, NULL, in, &out);
  expect_floats(o, (float[]){2, 0.5f, 0, 1, 4}, 5, 0);
  run1(AR_OP_NEG, NULL, in, &out);
  expect_floats(o, (float[]){2, 0.5f, 0, -1, -4}, 5, 0);
  run1(AR_OP_RELU_N1_TO_1, NULL, in, &out);
  expect_floats(o, (float[]){-1, -0.5f, 0, 1, 1}, 5, 0);
  run1(AR_OP_RELU_0_TO_1, NULL, in, &out);
  expect_floats(o, (float[]){0, 0, 0, 1, 1}, 5, 0);
  run1(AR_OP_ELU, NULL, in, &out);
  expect_floats(o, (float[]){-0.86466472f, -0.39346934f, 0, 1, 4}, 5, 1e-6f);
  run1(AR_OP_TANH, NULL, in, &out);
  expect_floats(o, (float[]){-0.96402758f, -0.46211716f, 0, 0.76159416f, 0.99932930f}, 5, 1e-6f);
  run1(AR_OP_EXP, NULL, in, &out);
  expect_floats(o, (float[]){0.13533528f, 0.60653066f, 1, 2.71828183f, 54.5981500f}, 5, 1e-5f);
  ar_options_t leaky = {.leaky_relu = {0.1f}};
  run1(AR_OP_LEAKY_RELU, &leaky, in, &out);
  expect_floats(o, (float[]){-0.2f, -0.05f, 0, 1, 4}, 5, 1e-7f);
  ar_options_t exact = {.gelu = {false}}, approx = {.gelu = {true}};
  run1(AR_OP_GELU, &exact, in, &out);
  expect_floats(o, (float[]){-0.04550026f, -0.15426877f, 0, 0.84134475f, 3.99987335f}, 5, 1e-6f);
  run1(AR_OP_GELU, &approx, in, &out);
  expect_floats(o, (float[]){-0.04540231f, -0.15428599f, 0, 0.84119199f, 3.99992964f}, 5, 1e-6f);
  float p[4] = {0.25f, 1, 4, 100}, po[4];
  ar_tview_t pin = tv(AR_DTYPE_FLOAT32, p, 2, 2, 2), pout = tv(AR_DTYPE_FLOAT32, po, 2, 2, 2);
  run1(AR_OP_SQRT, NULL, pin, &pout);
  expect_floats(po, (float[]){0.5f, 1, 2, 10}, 4, 0);
  run1(AR_OP_RSQRT, NULL, pin, &pout);
  expect_floats(po, (float[]){2, 1, 0.5f, 0.1f}, 4, 1e-7f);
  run1(AR_OP_LOG, NULL, pin, &pout);
  expect_floats(po, (float[]){-1.38629436f, 0, 1.38629436f, 4.60517019f}, 4, 1e-6f);
}
END_TEST

START_TEST(unary_integer_forms_and_errors) {
  int32_t x[3] = {-5, INT32_MIN, 7}, o[3];
  ar_tview_t in = tv(AR_DTYPE_INT32, x, 1, 3), out = tv(AR_DTYPE_INT32, o, 1, 3);
  run1(AR_OP_ABS, NULL, in, &out);
  ck_assert(o[0] == 5 && o[1] == INT32_MIN && o[2] == 7);
  run1(AR_OP_NEG, NULL, in, &out);
  ck_assert(o[0] == 5 && o[1] == INT32_MIN && o[2] == -7);
  int64_t lx[2] = {-(1LL << 40), 3}, lo[2];
  ar_tview_t lout = tv(AR_DTYPE_INT64, lo, 1, 2);
  run1(AR_OP_NEG, NULL, tv(AR_DTYPE_INT64, lx, 1, 2), &lout);
  ck_assert(lo[0] == (1LL << 40) && lo[1] == -3);
  /* SQRT has no integer form; ABS has no int64 form. */
  ar_tview_t *ins[1] = {&in};
  ar_node_t n = mk(AR_OP_SQRT, NULL, 1, ins, &out);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "operator 3 (SQRT): input 0 has dtype INT32"), "%s", g_msg);
  ar_tview_t lin = tv(AR_DTYPE_INT64, lx, 1, 2);
  ins[0] = &lin;
  n = mk(AR_OP_ABS, NULL, 1, ins, &lout);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  float f[3], fo[2];
  ar_tview_t fin = tv(AR_DTYPE_FLOAT32, f, 1, 3), fout = tv(AR_DTYPE_FLOAT32, fo, 1, 2);
  ins[0] = &fin;
  n = mk(AR_OP_EXP, NULL, 1, ins, &fout);
  ck_assert_int_eq(run(&n), AR_ESHAPE);
}
END_TEST

START_TEST(cast_static_cast_rules) {
  float f[6] = {-2.7f, 2.7f, 0, NAN, 200.9f, -0.0f};
  int32_t i32[6];
  ar_tview_t fin = tv(AR_DTYPE_FLOAT32, f, 1, 6);
  ar_tview_t o32 = tv(AR_DTYPE_INT32, i32, 1, 6);
  run1(AR_OP_CAST, NULL, fin, &o32);
  int32_t want[6] = {-2, 2, 0, 0, 200, 0};
  for (int i = 0; i < 6; i++) ck_assert_int_eq(i32[i], want[i]);
  uint8_t u8[6];
  ar_tview_t ou8 = tv(AR_DTYPE_UINT8, u8, 1, 6);
  run1(AR_OP_CAST, NULL, fin, &ou8);
  ck_assert(u8[1] == 2 && u8[4] == 200 && u8[0] == 254);   /* -2 wraps like the int64 path */
  bool b[6];
  ar_tview_t ob = tv(AR_DTYPE_BOOL, b, 1, 6);
  run1(AR_OP_CAST, NULL, fin, &ob);
  ck_assert(b[0] && b[1] && !b[2] && b[3] && b[4] && !b[5]);   /* NaN != 0 is true */
  float back[6];
  ar_tview_t of = tv(AR_DTYPE_FLOAT32, back, 1, 6);
  run1(AR_OP_CAST, NULL, ob, &of);
  expect_floats(back, (float[]){1, 1, 0, 1, 1, 0}, 6, 0);
  int64_t l[3] = {(1LL << 32) + 5, -1, 300};
  ar_tview_t lin = tv(AR_DTYPE_INT64, l, 1, 3);
  ar_tview_t o3 = tv(AR_DTYPE_INT32, i32, 1, 3);
  run1(AR_OP_CAST, NULL, lin, &o3);
  ck_assert(i32[0] == 5 && i32[1] == -1 && i32[2] == 300);
  ar_tview_t u3 = tv(AR_DTYPE_UINT8, u8, 1, 3);
  run1(AR_OP_CAST, NULL, lin, &u3);
  ck_assert(u8[0] == 5 && u8[1] == 255 && u8[2] == 44);
  /* float16 / string are refused */
  uint16_t h[3];
  ar_tview_t hout = tv(AR_DTYPE_FLOAT16, h, 1, 3);
  ar_tview_t *ins[1] = {&lin};
  ar_node_t n = mk(AR_OP_CAST, NULL, 1, ins, &hout);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "cast from INT64 to FLOAT16"), "%s", g_msg);
}
END_TEST

/* ---- reductions ---- */

static int reduce_run(ar_op_t op, bool keep, ar_tview_t in, const int32_t *axes, int n_axes, ar_tview_t *out) {
  ar_tview_t ax = tv(AR_DTYPE_INT32, (void *)axes, 1, n_axes);
  ax.is_constant = true;
  ar_options_t o = {.reducer = {keep}};
  ar_tview_t *ins[2] = {&in, &ax};
  ar_node_t n = mk(op, &o, 2, ins, out);
  return run(&n);
}

START_TEST(reduce_sum_max_min_prod) {
  float x[6] = {1, -2, 3, 4, 5, -6}, o[3];
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 2, 2, 3);
  ar_tview_t o2 = tv(AR_DTYPE_FLOAT32, o, 1, 2), o3k = tv(AR_DTYPE_FLOAT32, o, 2, 1, 3);
  ck_assert_int_eq(reduce_run(AR_OP_SUM, false, in, (int32_t[]){-1}, 1, &o2), 0);
  expect_floats(o, (float[]){2, 3}, 2, 0);
  ck_assert_int_eq(reduce_run(AR_OP_REDUCE_MAX, true, in, (int32_t[]){0}, 1, &o3k), 0);
  expect_floats(o, (float[]){4, 5, 3}, 3, 0);
  ck_assert_int_eq(reduce_run(AR_OP_REDUCE_MIN, false, in, (int32_t[]){1}, 1, &o2), 0);
  expect_floats(o, (float[]){-2, -6}, 2, 0);
  ck_assert_int_eq(reduce_run(AR_OP_REDUCE_PROD, true, in, (int32_t[]){0}, 1, &o3k), 0);
  expect_floats(o, (float[]){4, -10, -18}, 3, 0);
  ar_tview_t scalar = tv(AR_DTYPE_FLOAT32, o, 0);
  /* repeated and negative axes name the same dims once */
  ck_assert_int_eq(reduce_run(AR_OP_SUM, false, in, (int32_t[]){0, 1, -1}, 3, &scalar), 0);
  expect_floats(o, (float[]){5}, 1, 0);
  /* empty reduction: the identities (REDUCE_MAX starts at -FLT_MAX, as numeric_limits::lowest) */
  float none[1];
  ar_tview_t empty = tv(AR_DTYPE_FLOAT32, none, 2, 2, 0);
  ck_assert_int_eq(reduce_run(AR_OP_REDUCE_MAX, false, empty, (int32_t[]){1}, 1, &o2), 0);
  expect_floats(o, (float[]){-FLT_MAX, -FLT_MAX}, 2, 0);
  ck_assert_int_eq(reduce_run(AR_OP_REDUCE_PROD, false, empty, (int32_t[]){1}, 1, &o2), 0);
  expect_floats(o, (float[]){1, 1}, 2, 0);
  int32_t ix[6] = {INT32_MAX, 1, 0, 3, 4, 5}, io[2];
  ar_tview_t iout = tv(AR_DTYPE_INT32, io, 1, 2);
  ck_assert_int_eq(reduce_run(AR_OP_SUM, false, tv(AR_DTYPE_INT32, ix, 2, 2, 3), (int32_t[]){1}, 1, &iout), 0);
  ck_assert(io[0] == INT32_MIN && io[1] == 12);   /* wraps */
  /* errors: bool input, axis out of range, wrong output shape */
  bool bx[6];
  ar_tview_t bout = tv(AR_DTYPE_BOOL, bx, 1, 2);
  ck_assert_int_eq(reduce_run(AR_OP_SUM, false, tv(AR_DTYPE_BOOL, bx, 2, 2, 3), (int32_t[]){1}, 1, &bout), AR_EUNSUPPORTED);
  ck_assert_int_eq(reduce_run(AR_OP_REDUCE_MAX, false, in, (int32_t[]){2}, 1, &o2), AR_EINVAL);
  ck_assert_msg(strstr(g_msg, "axis 2 out of range for rank 2"), "%s", g_msg);
  ck_assert_int_eq(reduce_run(AR_OP_REDUCE_MIN, true, in, (int32_t[]){1}, 1, &o2), AR_ESHAPE);
}
END_TEST

static int arg_run(ar_op_t op, ar_dtype_t out_type, ar_tview_t in, ar_tview_t ax, ar_tview_t *out) {
  ax.is_constant = true;
  ar_options_t o = {.arg = {out_type}};
  ar_tview_t *ins[2] = {&in, &ax};
  ar_node_t n = mk(op, &o, 2, ins, out);
  return run(&n);
}

START_TEST(arg_max_min_first_index) {
  float x[8] = {1, 5, 5, 2, /* */ -1, -1, -3, -3};
  int32_t ax1[1] = {1}, axm1[1] = {-1}, io[4];
  int64_t ax0[1] = {0}, lo[4];
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 2, 2, 4);
  ar_tview_t i2 = tv(AR_DTYPE_INT32, io, 1, 2);
  ck_assert_int_eq(arg_run(AR_OP_ARG_MAX, AR_DTYPE_INT32, in, tv(AR_DTYPE_INT32, ax1, 1, 1), &i2), 0);
  ck_assert(io[0] == 1 && io[1] == 0);   /* ties keep the first index */
  ck_assert_int_eq(arg_run(AR_OP_ARG_MIN, AR_DTYPE_INT32, in, tv(AR_DTYPE_INT32, axm1, 1, 1), &i2), 0);
  ck_assert(io[0] == 0 && io[1] == 2);
  ar_tview_t l4 = tv(AR_DTYPE_INT64, lo, 1, 4);
  ck_assert_int_eq(arg_run(AR_OP_ARG_MIN, AR_DTYPE_INT64, in, tv(AR_DTYPE_INT64, ax0, 1, 1), &l4), 0);
  ck_assert(lo[0] == 1 && lo[1] == 1 && lo[2] == 1 && lo[3] == 1);
  uint8_t u[3] = {7, 9, 9};
  ar_tview_t i0 = tv(AR_DTYPE_INT32, io, 0);
  ck_assert_int_eq(arg_run(AR_OP_ARG_MAX, AR_DTYPE_INT32, tv(AR_DTYPE_UINT8, u, 1, 3),
                           tv(AR_DTYPE_INT64, ax0, 1, 1), &i0), 0);
  ck_assert_int_eq(io[0], 1);
  /* errors: output_type float32 (TFLite's default when options are absent), axis out of range */
  ar_tview_t f2 = tv(AR_DTYPE_FLOAT32, x, 1, 2);
  ck_assert_int_eq(arg_run(AR_OP_ARG_MAX, AR_DTYPE_FLOAT32, in, tv(AR_DTYPE_INT32, ax1, 1, 1), &f2), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "output_type is FLOAT32"), "%s", g_msg);
  int32_t ax5[1] = {5};
  ck_assert_int_eq(arg_run(AR_OP_ARG_MAX, AR_DTYPE_INT32, in, tv(AR_DTYPE_INT32, ax5, 1, 1), &i2), AR_EINVAL);
}
END_TEST


/* Quantized ARG_MAX as the models use it: DeepLab's uint8 [1,H,W,21] -> int64 [1,H,W] over the last
 * axis, MoveNet's int8 [1,2304,17] -> int32 [1,17] over axis 1. The raw codes are compared (the
 * scale is positive, so the order of the codes is the order of the real values); ties keep the
 * first index. Hand-made: pixel p's logits are 200 + (p * 7 + c * 5) % 23 over c < 21, whose
 * maximum (222) appears once per pixel, at c = (22 - 7p) * 14 mod 23 (14 = 5^-1 mod 23): 9, 3, 20,
 * 14, 8, 2 for p = 0..5. */
START_TEST(arg_max_quantized_models) {
  enum { P = 6, C = 21 };
  uint8_t u[P * C];
  for (int p = 0; p < P; p++)
    for (int c = 0; c < C; c++) u[p * C + c] = (uint8_t)((p * 7 + c * 5) % 23 + 200);
  int64_t lo[P], ax3[1] = {3};
  ar_tview_t out = tv(AR_DTYPE_INT64, lo, 3, 1, 2, 3);
  ck_assert_int_eq(arg_run(AR_OP_ARG_MAX, AR_DTYPE_INT64, tv(AR_DTYPE_UINT8, u, 4, 1, 2, 3, C),
                           tv(AR_DTYPE_INT64, ax3, 1, 1), &out), 0);
  for (int p = 0; p < P; p++) {
    int best = 0;
    for (int c = 1; c < C; c++)
      if (u[p * C + c] > u[p * C + best]) best = c;
    ck_assert_int_eq(lo[p], best);
  }
  ck_assert(lo[0] == 9 && lo[1] == 3 && lo[2] == 20 && lo[3] == 14 && lo[4] == 8 && lo[5] == 2);
  /* int8 across zero: -128 < -1 < 0 < 127; two maxima keep the first. */
  int8_t s[2 * 5] = {-128, -1, 0, 127, 127, /* */ -5, -7, -5, -128, -6};
  int32_t ax1[1] = {1}, io[2];
  ar_tview_t i2 = tv(AR_DTYPE_INT32, io, 2, 1, 2);
  ck_assert_int_eq(arg_run(AR_OP_ARG_MAX, AR_DTYPE_INT32, tv(AR_DTYPE_INT8, s, 3, 1, 5, 2),
                           tv(AR_DTYPE_INT32, ax1, 1, 1), &i2), 0);
  /* [1,5,2] over axis 1: column 0 = -128, 0, 127, -7, -128 -> 2; column 1 = -1, 127, -5, -5, -6 -> 1 */
  ck_assert_int_eq(io[0], 2);
  ck_assert_int_eq(io[1], 1);
  ar_tview_t l2 = tv(AR_DTYPE_INT64, lo, 2, 1, 2);
  ck_assert_int_eq(arg_run(AR_OP_ARG_MAX, AR_DTYPE_INT64, tv(AR_DTYPE_INT8, s, 3, 1, 2, 5),
                           tv(AR_DTYPE_INT32, (int32_t[]){-1}, 1, 1), &l2), 0);
  ck_assert(lo[0] == 3 && lo[1] == 0);
}
END_TEST

/* ---- softmax family ---- */

START_TEST(softmax_log_softmax_l2norm) {
  float x[6] = {1, 2, 3, 0, 0, 0}, o[6];
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 2, 2, 3), out = tv(AR_DTYPE_FLOAT32, o, 2, 2, 3);
  ar_options_t beta1 = {.softmax = {1.0f}}, beta0 = {.softmax = {0.0f}}, beta2 = {.softmax = {2.0f}};
  run1(AR_OP_SOFTMAX, &beta1, in, &out);
  expect_floats(o, (float[]){0.09003057f, 0.24472847f, 0.66524096f, 1.f / 3, 1.f / 3, 1.f / 3}, 6, 1e-6f);
  run1(AR_OP_SOFTMAX, &beta0, in, &out);
  expect_floats(o, (float[]){1.f / 3, 1.f / 3, 1.f / 3, 1.f / 3, 1.f / 3, 1.f / 3}, 6, 1e-6f);
  run1(AR_OP_SOFTMAX, &beta2, in, &out);
  expect_floats(o, (float[]){0.01587624f, 0.11731043f, 0.86681333f, 1.f / 3, 1.f / 3, 1.f / 3}, 6, 1e-6f);
  run1(AR_OP_LOG_SOFTMAX, NULL, in, &out);
  expect_floats(o, (float[]){-2.40760596f, -1.40760596f, -0.40760596f, -1.09861229f, -1.09861229f,
                             -1.09861229f}, 6, 1e-6f);
  float v[6] = {3, 4, 0, 0, 0, 0};
  ar_tview_t vin = tv(AR_DTYPE_FLOAT32, v, 2, 2, 3);
  run1(AR_OP_L2_NORMALIZATION, NULL, vin, &out);
  expect_floats(o, (float[]){0.6f, 0.8f, 0, 0, 0, 0}, 6, 1e-7f);   /* a zero row stays 0 */
  /* in place: the output over its input */
  run1(AR_OP_SOFTMAX, &beta1, in, &in);
  expect_floats(x, (float[]){0.09003057f, 0.24472847f, 0.66524096f, 1.f / 3, 1.f / 3, 1.f / 3}, 6, 1e-6f);
  /* a scalar has no last axis */
  float s[1], so[1];
  ar_tview_t sin = tv(AR_DTYPE_FLOAT32, s, 0), sout = tv(AR_DTYPE_FLOAT32, so, 0);
  ar_tview_t *ins[1] = {&sin};
  ar_node_t n = mk(AR_OP_LOG_SOFTMAX, NULL, 1, ins, &sout);
  ck_assert_int_eq(run(&n), AR_ESHAPE);
}
END_TEST

static Suite *math_suite(void) {
  Suite *s = suite_create("kernels_math");
  TCase *tc = tcase_create("binary");
  tcase_add_test(tc, sub_div_broadcast_and_activation);
  tcase_add_test(tc, floor_div_rounds_down);
  tcase_add_test(tc, maximum_minimum_nan_and_ints);
  tcase_add_test(tc, squared_difference_and_pow);
  tcase_add_test(tc, integer_add_mul_sub_wrap_and_clamp);
  tcase_add_test(tc, sub_rank6_broadcast_matches_naive);
  tcase_add_test(tc, comparisons_bool_outputs);
  tcase_add_test(tc, select_v2_broadcasts_three_ways);
  tcase_add_test(tc, binary_prepare_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("unary");
  tcase_add_test(tc, unary_float_values);
  tcase_add_test(tc, unary_integer_forms_and_errors);
  tcase_add_test(tc, cast_static_cast_rules);
  suite_add_tcase(s, tc);
  tc = tcase_create("reduce");
  tcase_add_test(tc, reduce_sum_max_min_prod);
  tcase_add_test(tc, arg_max_min_first_index);
  tcase_add_test(tc, arg_max_quantized_models);
  suite_add_tcase(s, tc);
  tc = tcase_create("softmax");
  tcase_add_test(tc, softmax_log_softmax_l2norm);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(math_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
