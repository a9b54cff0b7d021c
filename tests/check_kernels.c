/* check_kernels.c - unit tests for the non-convolution kernels and the op -> kernel registry:
 * hand-computed values per kernel (broadcasting, fused activations, pools with out-of-bounds taps,
 * bilinear resize under each coordinate rule, padding, concatenation, depth-to-space order, MEAN,
 * float16 conversion, densify of CSR and block-sparse constants), prepare errors with their
 * messages, and in-place safety (output over input gives the separate-buffer result). */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "kernels/ar_isa.h"
#include "kernels/ar_kernels.h"
#include "kernels/ar_parallel.h"

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

static ar_tview_t cst(ar_dtype_t dt, void *data, int rank, ...) {
  ar_tview_t t;
  memset(&t, 0, sizeof t);
  t.dtype = dt; t.data = data; t.rank = rank; t.is_constant = true;
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
static ar_node_t node1_(ar_op_t op, const ar_options_t *opts, int n_in, ar_tview_t **in, ar_tview_t **out) {
  ar_node_t n;
  memset(&n, 0, sizeof n);
  n.op = op; n.index = 7; n.version = 1; n.options = opts;
  n.n_inputs = n_in; n.n_outputs = 1;
  n.inputs = in;
  n.outputs = out;
  n.threads = 1;
  return n;
}
#define node1(op, opts, n_in, in, out) node1_((op), (opts), (n_in), (in), (ar_tview_t *[1]){(out)})

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

static void expect_floats(const float *got, const float *want, int n, float tol) {
  for (int i = 0; i < n; i++)
    ck_assert_msg(fabsf(got[i] - want[i]) <= tol, "element %d: got %.9g want %.9g", i, got[i], want[i]);
}

/* ---- registry ---- */

START_TEST(registry_covers_every_op) {
  for (int op = AR_OP_INVALID + 1; op < AR_OP_COUNT; op++) {
    const ar_kernel_t *k = ar_kernel_for((ar_op_t)op);
    /* Control flow is the interpreter's (child interpreters run the subgraphs), not a kernel's. */
    if (op == AR_OP_WHILE || op == AR_OP_IF || op == AR_OP_CALL_ONCE) {
      ck_assert_msg(k == NULL, "%s has a kernel: the interpreter runs it", ar_op_name((ar_op_t)op));
      continue;
    }
    ck_assert_msg(k != NULL, "no kernel for %s", ar_op_name((ar_op_t)op));
    ck_assert_ptr_nonnull(k->prepare);
    ck_assert_ptr_nonnull(k->eval);
  }
  ck_assert_ptr_null(ar_kernel_for(AR_OP_INVALID));
  ck_assert_ptr_null(ar_kernel_for(AR_OP_COUNT));
  ck_assert_str_eq(ar_kernel_for(AR_OP_PAD)->name, "PAD");
  ck_assert_str_eq(ar_kernel_for(AR_OP_MEAN)->name, "MEAN");
}
END_TEST

/* ---- ADD / MUL / PRELU ---- */

START_TEST(add_equal_shapes_fused_relu) {
  float a[4] = {1, -2, 3, -4}, b[4] = {1, 3, -1, 1}, o[4];
  ar_tview_t ta = tv(AR_DTYPE_FLOAT32, a, 4, 1, 2, 2, 1), tb = tv(AR_DTYPE_FLOAT32, b, 4, 1, 2, 2, 1);
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 4, 1, 2, 2, 1);
  ar_tview_t *in[] = {&ta, &tb};
  ar_options_t opt = {.elementwise = {.activation = AR_ACT_RELU}};
  ar_node_t n = node1(AR_OP_ADD, &opt, 2, in, &to);
  ck_assert_int_eq(run(&n), 0);
  float want[4] = {2, 1, 2, 0};
  expect_floats(o, want, 4, 0);
}
END_TEST

START_TEST(add_fused_relu6_relu_n1_tanh) {
  float a[4] = {-3, 0.5f, 4, 10}, b[4] = {0, 0, 0, -2}, o[4];
  ar_tview_t ta = tv(AR_DTYPE_FLOAT32, a, 1, 4), tb = tv(AR_DTYPE_FLOAT32, b, 1, 4);
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 1, 4);
  ar_tview_t *in[] = {&ta, &tb};
  ar_options_t opt = {.elementwise = {.activation = AR_ACT_RELU6}};
  ar_node_t n = node1(AR_OP_ADD, &opt, 2, in, &to);
  ck_assert_int_eq(run(&n), 0);
  float w6[4] = {0, 0.5f, 4, 6};
  expect_floats(o, w6, 4, 0);
  opt.elementwise.activation = AR_ACT_RELU_N1_TO_1;
  ck_assert_int_eq(run(&n), 0);
  float w1[4] = {-1, 0.5f, 1, 1};
  expect_floats(o, w1, 4, 0);
  opt.elementwise.activation = AR_ACT_TANH;
  ck_assert_int_eq(run(&n), 0);
  float wt[4] = {tanhf(-3), tanhf(0.5f), tanhf(4), tanhf(8)};
  expect_floats(o, wt, 4, 1e-7f);
}
END_TEST

START_TEST(mul_broadcast_channel) {
  /* [1,4,4,2] * [1,1,1,2]: the MediaPipe squeeze-excite pattern. */
  float a[32], b[2] = {2, -1}, o[32], want[32];
  for (int i = 0; i < 32; i++) { a[i] = (float)i; want[i] = (float)i * (i % 2 ? -1.0f : 2.0f); }
  ar_tview_t ta = tv(AR_DTYPE_FLOAT32, a, 4, 1, 4, 4, 2), tb = tv(AR_DTYPE_FLOAT32, b, 4, 1, 1, 1, 2);
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 4, 1, 4, 4, 2);
  ar_tview_t *in[] = {&ta, &tb};
  ar_options_t opt = {.elementwise = {.activation = AR_ACT_NONE}};
  ar_node_t n = node1(AR_OP_MUL, &opt, 2, in, &to);
  ck_assert_int_eq(run(&n), 0);
  expect_floats(o, want, 32, 0);
  /* and with the broadcast operand first */
  ar_tview_t *in2[] = {&tb, &ta};
  n = node1(AR_OP_MUL, &opt, 2, in2, &to);
  memset(o, 0, sizeof o);
  ck_assert_int_eq(run(&n), 0);
  expect_floats(o, want, 32, 0);
}
END_TEST

START_TEST(add_scalar_both_sides) {
  float a[6] = {1, 2, 3, 4, 5, 6}, s = 10, o[6];
  ar_tview_t ta = tv(AR_DTYPE_FLOAT32, a, 2, 2, 3), ts = tv(AR_DTYPE_FLOAT32, &s, 0);
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 2, 2, 3);
  ar_tview_t *in[] = {&ta, &ts};
  ar_options_t opt = {.elementwise = {.activation = AR_ACT_NONE}};
  ar_node_t n = node1(AR_OP_ADD, &opt, 2, in, &to);
  ck_assert_int_eq(run(&n), 0);
  float want[6] = {11, 12, 13, 14, 15, 16};
  expect_floats(o, want, 6, 0);
  ar_tview_t ts1 = tv(AR_DTYPE_FLOAT32, &s, 1, 1);    /* [1] first: a rank-1 "scalar" */
  ar_tview_t *in2[] = {&ts1, &ta};
  n = node1(AR_OP_MUL, &opt, 2, in2, &to);
  ck_assert_int_eq(run(&n), 0);
  float want2[6] = {10, 20, 30, 40, 50, 60};
  expect_floats(o, want2, 6, 0);
}
END_TEST

START_TEST(add_general_broadcast_both_sides) {
  /* [2,1,3] + [2,1] -> [2,2,3]: out[i][j][k] = a[i][k] + b[j]. */
  float a[6] = {1, 2, 3, 4, 5, 6}, b[2] = {100, 200}, o[12];
  ar_tview_t ta = tv(AR_DTYPE_FLOAT32, a, 3, 2, 1, 3), tb = tv(AR_DTYPE_FLOAT32, b, 2, 2, 1);
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 3, 2, 2, 3);
  ar_tview_t *in[] = {&ta, &tb};
  ar_options_t opt = {.elementwise = {.activation = AR_ACT_NONE}};
  ar_node_t n = node1(AR_OP_ADD, &opt, 2, in, &to);
  ck_assert_int_eq(run(&n), 0);
  float want[12] = {101, 102, 103, 201, 202, 203, 104, 105, 106, 204, 205, 206};
  expect_floats(o, want, 12, 0);
}
END_TEST

START_TEST(add_shape_errors) {
  float a[6] = {0}, b[8] = {0}, o[8];
  ar_tview_t ta = tv(AR_DTYPE_FLOAT32, a, 3, 1, 2, 3), tb = tv(AR_DTYPE_FLOAT32, b, 3, 1, 2, 4);
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 3, 1, 2, 4);
  ar_tview_t *in[] = {&ta, &tb};
  ar_options_t opt = {.elementwise = {.activation = AR_ACT_NONE}};
  ar_node_t n = node1(AR_OP_ADD, &opt, 2, in, &to);
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  ck_assert_msg(strstr(g_msg, "operator 7 (ADD): input shapes [1,2,3] and [1,2,4] do not broadcast"),
                "%s", g_msg);
  /* a broadcastable pair whose stored output shape is wrong */
  ar_tview_t tb2 = tv(AR_DTYPE_FLOAT32, b, 1, 3);
  ar_tview_t *in2[] = {&ta, &tb2};
  n = node1(AR_OP_ADD, &opt, 2, in2, &to);
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  ck_assert_msg(strstr(g_msg, "operator 7 (ADD): output shape [1,2,4], inferred [1,2,3]"), "%s", g_msg);
  /* int32 input */
  ar_tview_t ti = tv(AR_DTYPE_INT32, b, 3, 1, 2, 3);
  ar_tview_t to3 = tv(AR_DTYPE_FLOAT32, o, 3, 1, 2, 3);
  ar_tview_t *in3[] = {&ta, &ti};
  n = node1(AR_OP_ADD, &opt, 2, in3, &to3);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "input 1 has dtype INT32"), "%s", g_msg);
}
END_TEST

START_TEST(prelu_broadcast_alpha) {
  /* [1,2,2,3] with alpha [1,1,3] (as the MediaPipe models store it). */
  float x[12] = {1, -1, -2, -3, 2, 0, 4, -4, -1, -0.5f, -6, 3}, al[3] = {0.1f, 0.2f, 0.5f}, o[12];
  ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x, 4, 1, 2, 2, 3), ta = tv(AR_DTYPE_FLOAT32, al, 3, 1, 1, 3);
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 4, 1, 2, 2, 3);
  ar_tview_t *in[] = {&tx, &ta};
  ar_options_t opt;
  memset(&opt, 0, sizeof opt);
  ar_node_t n = node1(AR_OP_PRELU, &opt, 2, in, &to);
  ck_assert_int_eq(run(&n), 0);
  float want[12] = {1, -0.2f, -1, -0.3f, 2, 0, 4, -0.8f, -0.5f, -0.05f, -1.2f, 3};
  expect_floats(o, want, 12, 1e-7f);
}
END_TEST

/* ---- unary ---- */

START_TEST(unary_values) {
  float x[6] = {-20, -4, -1, 0, 1, 20}, o[6];
  ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x, 2, 1, 6), to = tv(AR_DTYPE_FLOAT32, o, 2, 1, 6);
  ar_tview_t *in[] = {&tx};
  ar_options_t opt;
  memset(&opt, 0, sizeof opt);
  ar_node_t n = node1(AR_OP_RELU, &opt, 1, in, &to);
  ck_assert_int_eq(run(&n), 0);
  float wr[6] = {0, 0, 0, 0, 1, 20};
  expect_floats(o, wr, 6, 0);
  n.op = AR_OP_RELU6;
  ck_assert_int_eq(run(&n), 0);
  float w6[6] = {0, 0, 0, 0, 1, 6};
  expect_floats(o, w6, 6, 0);
  n.op = AR_OP_HARD_SWISH;
  ck_assert_int_eq(run(&n), 0);
  float wh[6] = {0, 0, -1.0f / 3.0f, 0, 4.0f / 6.0f, 20};
  expect_floats(o, wh, 6, 1e-7f);
  n.op = AR_OP_LOGISTIC;
  ck_assert_int_eq(run(&n), 0);
  /* 1/(1+e^20) = 2.0611536e-9; 1/(1+e^4) = 0.017986210; 1/(1+e) = 0.26894142 */
  float wl[6] = {2.0611536e-9f, 0.017986210f, 0.26894142f, 0.5f, 0.73105858f, 1.0f};
  for (int i = 0; i < 6; i++)
    ck_assert_msg(fabsf(o[i] - wl[i]) <= 2e-7f * fabsf(wl[i]) + 1e-12f, "logistic[%d] = %.9g", i, o[i]);
}
END_TEST

/* ---- every float ISA level gives the portable loop's bits ---- */

START_TEST(float_elementwise_every_isa) {
  /* Odd sizes (vector bodies plus tails at 4, 8 and 16 lanes), several broadcast patterns, in place
   * and not, fused clamps: each level's output == the portable loop's, bit for bit. */
  enum { H = 7, W = 9, C = 37, N = H * W * C };
  static float x[N], y[N], al[C], row[W * C], ref[N], got[N];
  for (int i = 0; i < N; i++) { x[i] = (float)((i * 37) % 101) / 7.0f - 7.0f; y[i] = (float)((i * 13) % 29) / 3.0f - 4.5f; }
  for (int i = 0; i < C; i++) al[i] = 0.05f * (float)(i + 1) - 0.3f;
  for (int i = 0; i < W * C; i++) row[i] = (float)(i % 17) - 8.0f;
  const int best = ar__f32_set_isa(-1);
  struct { ar_op_t op; int b; ar_activation_t act; } bin[] = {
    {AR_OP_ADD, 0, AR_ACT_NONE}, {AR_OP_ADD, 1, AR_ACT_RELU6}, {AR_OP_MUL, 1, AR_ACT_RELU},
    {AR_OP_MUL, 2, AR_ACT_RELU_N1_TO_1}, {AR_OP_PRELU, 1, AR_ACT_NONE}, {AR_OP_ADD, 3, AR_ACT_NONE},
    {AR_OP_MUL, 0, AR_ACT_NONE},
  };
  for (size_t c = 0; c < sizeof bin / sizeof bin[0]; c++) {
    ar_options_t opt = {.elementwise = {.activation = bin[c].act}};
    for (int l = AR_ISA_PORTABLE; l <= best; l++) {
      ck_assert_int_eq(ar__f32_set_isa(l), l);
      ar_tview_t ta = tv(AR_DTYPE_FLOAT32, x, 4, 1, H, W, C), tb;
      if (bin[c].b == 0) tb = tv(AR_DTYPE_FLOAT32, y, 4, 1, H, W, C);
      else if (bin[c].b == 1) tb = tv(AR_DTYPE_FLOAT32, al, 3, 1, 1, C);
      else if (bin[c].b == 2) tb = tv(AR_DTYPE_FLOAT32, row, 3, 1, W, C);   /* [1,W,C] over H */
      else tb = tv(AR_DTYPE_FLOAT32, y, 1, 1);                               /* scalar */
      ar_tview_t to = tv(AR_DTYPE_FLOAT32, l ? got : ref, 4, 1, H, W, C);
      ar_tview_t *in[] = {&ta, &tb};
      ar_node_t n = node1(bin[c].op, &opt, 2, in, &to);
      ck_assert_int_eq(run(&n), 0);
      if (l) ck_assert_msg(memcmp(ref, got, sizeof ref) == 0, "%s case %zu at %s differs from portable",
                           ar_op_name(bin[c].op), c, ar_isa_name(l));
    }
  }
  const ar_op_t un[] = {AR_OP_RELU, AR_OP_RELU6, AR_OP_HARD_SWISH};
  for (size_t u = 0; u < sizeof un / sizeof un[0]; u++)
    for (int l = AR_ISA_PORTABLE; l <= best; l++) {
      ck_assert_int_eq(ar__f32_set_isa(l), l);
      ar_options_t opt;
      memset(&opt, 0, sizeof opt);
      ar_tview_t ta = tv(AR_DTYPE_FLOAT32, x, 2, N - 3, 1), to = tv(AR_DTYPE_FLOAT32, l ? got : ref, 2, N - 3, 1);
      ar_tview_t *in[] = {&ta};
      ar_node_t n = node1(un[u], &opt, 1, in, &to);
      ck_assert_int_eq(run(&n), 0);
      if (l) ck_assert_msg(memcmp(ref, got, sizeof(float) * (N - 3)) == 0, "%s at %s differs from portable",
                           ar_op_name(un[u]), ar_isa_name(l));
    }
  /* LOGISTIC: the AVX-512 loop's polynomial exp against the portable loop's libm expf over a
   * dense sweep (and its saturation points, infinities, NaN): within 4 ulp. */
  enum { NL = 20011 };
  static float lx[NL], lref[NL], lgot[NL];
  for (int i = 0; i < NL; i++) lx[i] = -120.0f + 140.0f * (float)i / (float)(NL - 1);
  const float specials[] = {-INFINITY, INFINITY, NAN, -9.0f, -9.000001f, 16.619047f, 16.62f, 0.0f, -0.0f,
                            -87.5f, -103.0f, 1e-8f};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) lx[i * 997] = specials[i];
  for (int l = AR_ISA_PORTABLE; l <= best; l++) {
    ck_assert_int_eq(ar__f32_set_isa(l), l);
    ar_options_t opt;
    memset(&opt, 0, sizeof opt);
    ar_tview_t ta = tv(AR_DTYPE_FLOAT32, lx, 1, NL), to = tv(AR_DTYPE_FLOAT32, l ? lgot : lref, 1, NL);
    ar_tview_t *in[] = {&ta};
    ar_node_t n = node1(AR_OP_LOGISTIC, &opt, 1, in, &to);
    ck_assert_int_eq(run(&n), 0);
    if (!l) continue;
    for (int i = 0; i < NL; i++) {
      if (isnan(lref[i])) { ck_assert_msg(isnan(lgot[i]), "logistic(%g) = %g, want NaN", lx[i], lgot[i]); continue; }
      const float ulp = nextafterf(fabsf(lref[i]), INFINITY) - fabsf(lref[i]);
      const float tol = lref[i] == 0.0f ? 1e-44f : 4.0f * ulp;
      ck_assert_msg(fabsf(lgot[i] - lref[i]) <= tol, "logistic(%.9g) at %s = %.9g, libm path %.9g", lx[i],
                    ar_isa_name(l), lgot[i], lref[i]);
    }
  }
  ar__f32_set_isa(-1);
}
END_TEST

/* ---- in-place safety ---- */

START_TEST(in_place_matches_separate_buffers) {
  enum { N = 1 * 5 * 3 * 7 };
  float x[N], y[N], al[7], sep[N], inpl[N];
  for (int i = 0; i < N; i++) { x[i] = (float)((i * 37) % 23) - 11.5f; y[i] = (float)((i * 11) % 7) - 3; }
  for (int c = 0; c < 7; c++) al[c] = 0.1f * (float)(c + 1);
  ar_options_t opt = {.elementwise = {.activation = AR_ACT_RELU6}};
  const ar_op_t unary[] = {AR_OP_RELU, AR_OP_RELU6, AR_OP_LOGISTIC, AR_OP_HARD_SWISH};
  for (size_t u = 0; u < sizeof unary / sizeof unary[0]; u++) {
    ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x, 4, 1, 5, 3, 7), to = tv(AR_DTYPE_FLOAT32, sep, 4, 1, 5, 3, 7);
    ar_tview_t *in[] = {&tx};
    ar_node_t n = node1(unary[u], &opt, 1, in, &to);
    ck_assert_int_eq(run(&n), 0);
    memcpy(inpl, x, sizeof x);
    ar_tview_t ti = tv(AR_DTYPE_FLOAT32, inpl, 4, 1, 5, 3, 7);
    ar_tview_t *in2[] = {&ti};
    n = node1(unary[u], &opt, 1, in2, &ti);
    ck_assert_int_eq(run(&n), 0);
    ck_assert_msg(memcmp(sep, inpl, sizeof sep) == 0, "%s in place differs", ar_op_name(unary[u]));
  }
  /* ADD equal shapes, out over input 0 and over input 1; MUL channel broadcast, out over input 0;
   * PRELU, out over x. */
  struct { ar_op_t op; int bshape; int alias; } cases[] = {
    {AR_OP_ADD, 0, 0}, {AR_OP_ADD, 0, 1}, {AR_OP_MUL, 1, 0}, {AR_OP_PRELU, 1, 0}, {AR_OP_ADD, 1, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ar_tview_t ta = tv(AR_DTYPE_FLOAT32, x, 4, 1, 5, 3, 7);
    ar_tview_t tb = cases[c].bshape ? tv(AR_DTYPE_FLOAT32, al, 4, 1, 1, 1, 7) : tv(AR_DTYPE_FLOAT32, y, 4, 1, 5, 3, 7);
    ar_tview_t to = tv(AR_DTYPE_FLOAT32, sep, 4, 1, 5, 3, 7);
    ar_tview_t *in[] = {&ta, &tb};
    ar_node_t n = node1(cases[c].op, &opt, 2, in, &to);
    ck_assert_int_eq(run(&n), 0);
    float abuf[N], bbuf[N];
    memcpy(abuf, x, sizeof x);
    memcpy(bbuf, y, sizeof y);
    ar_tview_t ta2 = tv(AR_DTYPE_FLOAT32, abuf, 4, 1, 5, 3, 7);
    ar_tview_t tb2 = cases[c].bshape ? tb : tv(AR_DTYPE_FLOAT32, bbuf, 4, 1, 5, 3, 7);
    ar_tview_t *in2[] = {&ta2, &tb2};
    n = node1(cases[c].op, &opt, 2, in2, cases[c].alias ? &tb2 : &ta2);
    ck_assert_int_eq(run(&n), 0);
    const float *got = cases[c].alias ? bbuf : abuf;
    ck_assert_msg(memcmp(sep, got, sizeof sep) == 0, "case %zu (%s) in place differs", c,
                  ar_op_name(cases[c].op));
  }
}
END_TEST

/* ---- pools ---- */

static ar_options_t pool_opts(ar_padding_t pad, int fh, int fw, int sh, int sw, ar_activation_t act) {
  ar_options_t o;
  memset(&o, 0, sizeof o);
  o.pool2d.padding = pad; o.pool2d.filter_h = fh; o.pool2d.filter_w = fw;
  o.pool2d.stride_h = sh; o.pool2d.stride_w = sw; o.pool2d.activation = act;
  return o;
}

START_TEST(max_pool_same_odd_ignores_out_of_bounds) {
  /* 3x3 input, 2x2 filter, stride 2, SAME: out 2x2, total padding 1 goes to the bottom/right. With
   * all-negative inputs a zero-padded tap would win; TFLite ignores those taps. */
  float x[9] = {-1, -2, -3, -4, -5, -6, -7, -8, -9}, o[4];
  ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x, 4, 1, 3, 3, 1), to = tv(AR_DTYPE_FLOAT32, o, 4, 1, 2, 2, 1);
  ar_tview_t *in[] = {&tx};
  ar_options_t opt = pool_opts(AR_PADDING_SAME, 2, 2, 2, 2, AR_ACT_NONE);
  ar_node_t n = node1(AR_OP_MAX_POOL_2D, &opt, 1, in, &to);
  ck_assert_int_eq(run(&n), 0);
  float want[4] = {-1, -3, -7, -9};
  expect_floats(o, want, 4, 0);
  /* even size, VALID, 2 channels, fused RELU */
  float x2[32], o2[8];
  for (int i = 0; i < 32; i++) x2[i] = (float)(i % 2 ? -i : i);
  ar_tview_t tx2 = tv(AR_DTYPE_FLOAT32, x2, 4, 1, 4, 4, 2), to2 = tv(AR_DTYPE_FLOAT32, o2, 4, 1, 2, 2, 2);
  ar_tview_t *in2[] = {&tx2};
  opt = pool_opts(AR_PADDING_VALID, 2, 2, 2, 2, AR_ACT_RELU);
  n = node1(AR_OP_MAX_POOL_2D, &opt, 1, in2, &to2);
  ck_assert_int_eq(run(&n), 0);
  /* pixel p (row-major 4x4) channel 0 holds 2p, channel 1 holds -(2p+1) -> max -(2*min p + 1) */
  float want2[8] = {10, 0, 14, 0, 26, 0, 30, 0};
  expect_floats(o2, want2, 8, 0);
}
END_TEST

START_TEST(avg_pool_counts_in_bounds_taps) {
  /* 3x3 filter stride 1 SAME on 3x3: corners average 4 taps, edges 6, the centre 9. */
  float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, o[9];
  ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x, 4, 1, 3, 3, 1), to = tv(AR_DTYPE_FLOAT32, o, 4, 1, 3, 3, 1);
  ar_tview_t *in[] = {&tx};
  ar_options_t opt = pool_opts(AR_PADDING_SAME, 3, 3, 1, 1, AR_ACT_NONE);
  ar_node_t n = node1(AR_OP_AVERAGE_POOL_2D, &opt, 1, in, &to);
  ck_assert_int_eq(run(&n), 0);
  float want[9] = {3, 3.5f, 4, 4.5f, 5, 5.5f, 6, 6.5f, 7};
  expect_floats(o, want, 9, 1e-6f);
}
END_TEST

START_TEST(avg_pool_global) {
  /* VALID pool covering the whole 2x2 image = global average pooling (the selfie model's 16x16). */
  float x[8] = {1, 10, 2, 20, 3, 30, 6, 60}, o[2];
  ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x, 4, 1, 2, 2, 2), to = tv(AR_DTYPE_FLOAT32, o, 4, 1, 1, 1, 2);
  ar_tview_t *in[] = {&tx};
  ar_options_t opt = pool_opts(AR_PADDING_VALID, 2, 2, 2, 2, AR_ACT_NONE);
  ar_node_t n = node1(AR_OP_AVERAGE_POOL_2D, &opt, 1, in, &to);
  ck_assert_int_eq(run(&n), 0);
  float want[2] = {3, 30};
  expect_floats(o, want, 2, 0);
}
END_TEST

START_TEST(pool_prepare_errors) {
  float x[9], o[4];
  ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x, 3, 3, 3, 1), to = tv(AR_DTYPE_FLOAT32, o, 4, 1, 2, 2, 1);
  ar_tview_t *in[] = {&tx};
  ar_options_t opt = pool_opts(AR_PADDING_SAME, 2, 2, 2, 2, AR_ACT_NONE);
  ar_node_t n = node1(AR_OP_MAX_POOL_2D, &opt, 1, in, &to);
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  ck_assert_msg(strstr(g_msg, "operator 7 (MAX_POOL_2D): input rank 3, expected 4"), "%s", g_msg);
  ar_tview_t tx4 = tv(AR_DTYPE_FLOAT32, x, 4, 1, 3, 3, 1), to3 = tv(AR_DTYPE_FLOAT32, o, 4, 1, 1, 1, 1);
  ar_tview_t *in4[] = {&tx4};
  n = node1(AR_OP_AVERAGE_POOL_2D, &opt, 1, in4, &to3);   /* SAME gives 2x2, stored 1x1 */
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  ck_assert_msg(strstr(g_msg, "operator 7 (AVERAGE_POOL_2D): output shape [1,1,1,1], inferred [1,2,2,1]"),
                "%s", g_msg);
  opt.pool2d.stride_w = 0;
  n = node1(AR_OP_AVERAGE_POOL_2D, &opt, 1, in4, &to3);
  ck_assert_int_eq(run(&n), AR_EINVAL);
  /* A 2^30-pixel filter (SAME: the output shape alone would pass) is refused at prepare, before
   * the work estimate ow * fh * fw * c overflowed int64. */
  ar_tview_t to4 = tv(AR_DTYPE_FLOAT32, o, 4, 1, 3, 3, 1);
  opt = pool_opts(AR_PADDING_SAME, 1 << 30, 1 << 30, 1, 1, AR_ACT_NONE);
  n = node1(AR_OP_MAX_POOL_2D, &opt, 1, in4, &to4);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "operator 7 (MAX_POOL_2D): filter 1073741824x1073741824 with dilation 1x1"), "%s",
                g_msg);
}
END_TEST

/* ---- resize bilinear ---- */

static int resize(float *in, int ih, int iw, float *out, int oh, int ow, bool align, bool half) {
  static int32_t size[2];
  size[0] = oh; size[1] = ow;
  ar_tview_t tx = tv(AR_DTYPE_FLOAT32, in, 4, 1, ih, iw, 1);
  ar_tview_t ts = cst(AR_DTYPE_INT32, size, 1, 2);
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, out, 4, 1, oh, ow, 1);
  ar_tview_t *ins[] = {&tx, &ts};
  ar_options_t opt;
  memset(&opt, 0, sizeof opt);
  opt.resize_bilinear.align_corners = align;
  opt.resize_bilinear.half_pixel_centers = half;
  ar_node_t n = node1(AR_OP_RESIZE_BILINEAR, &opt, 2, ins, &to);
  return run(&n);
}

START_TEST(resize_bilinear_three_rules) {
  /* in(y, x) = 2y + x on 2x2; bilinear is exact on a linear ramp, so out(y, x) = 2*Y[y] + X[x]
   * where X, Y are the clamped source coordinates of each rule. */
  float x[4] = {0, 1, 2, 3}, o[16];
  /* half_pixel_centers 2->4: src = (i+0.5)/2-0.5 = -0.25, 0.25, 0.75, 1.25 -> clamped 0,.25,.75,1 */
  ck_assert_int_eq(resize(x, 2, 2, o, 4, 4, false, true), 0);
  float hp[4] = {0, 0.25f, 0.75f, 1};
  for (int y = 0; y < 4; y++)
    for (int xx = 0; xx < 4; xx++)
      ck_assert_msg(fabsf(o[y * 4 + xx] - (2 * hp[y] + hp[xx])) < 1e-6f, "half (%d,%d) = %g", y, xx, o[y * 4 + xx]);
  /* align_corners 2->3: scale (2-1)/(3-1) = 0.5 -> 0, 0.5, 1 */
  ck_assert_int_eq(resize(x, 2, 2, o, 3, 3, true, false), 0);
  float ac[3] = {0, 0.5f, 1};
  for (int y = 0; y < 3; y++)
    for (int xx = 0; xx < 3; xx++)
      ck_assert_msg(fabsf(o[y * 3 + xx] - (2 * ac[y] + ac[xx])) < 1e-6f, "align (%d,%d) = %g", y, xx, o[y * 3 + xx]);
  /* neither 2->4: src = i/2 = 0, .5, 1, 1.5 -> the last clamps to the edge: 0, .5, 1, 1 */
  ck_assert_int_eq(resize(x, 2, 2, o, 4, 4, false, false), 0);
  float nn[4] = {0, 0.5f, 1, 1};
  for (int y = 0; y < 4; y++)
    for (int xx = 0; xx < 4; xx++)
      ck_assert_msg(fabsf(o[y * 4 + xx] - (2 * nn[y] + nn[xx])) < 1e-6f, "plain (%d,%d) = %g", y, xx, o[y * 4 + xx]);
  /* a non-linear input, half_pixel_centers 1x3 -> 1x2 (downscale 1.5): src = 0.25, 1.75 */
  float r[3] = {1, 5, 2}, o2[2];
  ck_assert_int_eq(resize(r, 1, 3, o2, 1, 2, false, true), 0);
  float want2[2] = {1 * 0.75f + 5 * 0.25f, 5 * 0.25f + 2 * 0.75f};
  expect_floats(o2, want2, 2, 1e-6f);
}
END_TEST

START_TEST(resize_bilinear_errors) {
  float x[4] = {0}, o[16];
  ck_assert_int_eq(resize(x, 2, 2, o, 4, 4, true, true), AR_EINVAL);
  ck_assert_msg(strstr(g_msg, "operator 7 (RESIZE_BILINEAR): align_corners and half_pixel_centers are both set"),
                "%s", g_msg);
  /* stored output disagrees with the size tensor */
  static int32_t size[2] = {3, 3};
  ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x, 4, 1, 2, 2, 1), ts = cst(AR_DTYPE_INT32, size, 1, 2);
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 4, 1, 4, 4, 1);
  ar_tview_t *ins[] = {&tx, &ts};
  ar_options_t opt;
  memset(&opt, 0, sizeof opt);
  ar_node_t n = node1(AR_OP_RESIZE_BILINEAR, &opt, 2, ins, &to);
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  ck_assert_msg(strstr(g_msg, "output shape [1,4,4,1], inferred [1,3,3,1]"), "%s", g_msg);
  ts.is_constant = false;
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
}
END_TEST

/* ---- PAD ---- */

static int pad(float *in, ar_tview_t tin, int32_t *pads, float *out, ar_tview_t tout) {
  (void)in; (void)out;
  ar_tview_t tp = cst(AR_DTYPE_INT32, pads, 2, tin.rank, 2);
  ar_tview_t *ins[] = {&tin, &tp};
  ar_options_t opt;
  memset(&opt, 0, sizeof opt);
  ar_node_t n = node1(AR_OP_PAD, &opt, 2, ins, &tout);
  return run(&n);
}

START_TEST(pad_channel_and_spatial) {
  float x[4] = {1, 2, 3, 4}, o[16];
  int32_t pc[8] = {0, 0, 0, 0, 0, 0, 0, 2};   /* [1,1,2,2] -> channels 2 -> 4 */
  ck_assert_int_eq(pad(x, tv(AR_DTYPE_FLOAT32, x, 4, 1, 1, 2, 2), pc, o, tv(AR_DTYPE_FLOAT32, o, 4, 1, 1, 2, 4)), 0);
  float wc[8] = {1, 2, 0, 0, 3, 4, 0, 0};
  expect_floats(o, wc, 8, 0);
  int32_t ps[8] = {0, 0, 1, 1, 1, 1, 0, 0};   /* [1,2,2,1] -> [1,4,4,1] */
  for (int i = 0; i < 16; i++) o[i] = -1;
  ck_assert_int_eq(pad(x, tv(AR_DTYPE_FLOAT32, x, 4, 1, 2, 2, 1), ps, o, tv(AR_DTYPE_FLOAT32, o, 4, 1, 4, 4, 1)), 0);
  float ws[16] = {0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0};
  expect_floats(o, ws, 16, 0);
}
END_TEST

START_TEST(pad_mixed_rank3_against_naive) {
  /* [2,1,3] padded [[1,0],[0,2],[2,1]] -> [3,3,6]; compare with the index definition. */
  float x[6] = {1, 2, 3, 4, 5, 6}, o[54];
  int32_t p[6] = {1, 0, 0, 2, 2, 1};
  ck_assert_int_eq(pad(x, tv(AR_DTYPE_FLOAT32, x, 3, 2, 1, 3), p, o, tv(AR_DTYPE_FLOAT32, o, 3, 3, 3, 6)), 0);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 6; k++) {
        int a = i - 1, b = j, c = k - 2;
        float want = (a >= 0 && a < 2 && b < 1 && c >= 0 && c < 3) ? x[a * 3 + c] : 0.0f;
        ck_assert_msg(o[(i * 3 + j) * 6 + k] == want, "(%d,%d,%d)", i, j, k);
      }
}
END_TEST

START_TEST(pad_errors) {
  float x[4] = {0}, o[16];
  int32_t neg[8] = {0, 0, -1, 1, 0, 0, 0, 0};
  ck_assert_int_eq(pad(x, tv(AR_DTYPE_FLOAT32, x, 4, 1, 2, 2, 1), neg, o, tv(AR_DTYPE_FLOAT32, o, 4, 1, 2, 2, 1)), AR_EINVAL);
  ck_assert_msg(strstr(g_msg, "operator 7 (PAD): negative padding"), "%s", g_msg);
  int32_t ps[8] = {0, 0, 1, 1, 1, 1, 0, 0};
  ck_assert_int_eq(pad(x, tv(AR_DTYPE_FLOAT32, x, 4, 1, 2, 2, 1), ps, o, tv(AR_DTYPE_FLOAT32, o, 4, 1, 3, 3, 1)), AR_ESHAPE);
  ck_assert_msg(strstr(g_msg, "operator 7 (PAD): output shape [1,3,3,1], inferred [1,4,4,1]"), "%s", g_msg);
}
END_TEST

/* ---- CONCATENATION ---- */

START_TEST(concat_axis1_and_axis3) {
  float a[2] = {1, 2}, b[4] = {3, 4, 5, 6}, o[6];
  ar_tview_t ta = tv(AR_DTYPE_FLOAT32, a, 3, 1, 1, 2), tb = tv(AR_DTYPE_FLOAT32, b, 3, 1, 2, 2);
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 3, 1, 3, 2);
  ar_tview_t *in[] = {&ta, &tb};
  ar_options_t opt;
  memset(&opt, 0, sizeof opt);
  opt.concatenation.axis = 1;
  ar_node_t n = node1(AR_OP_CONCATENATION, &opt, 2, in, &to);
  ck_assert_int_eq(run(&n), 0);
  float w1[6] = {1, 2, 3, 4, 5, 6};
  expect_floats(o, w1, 6, 0);
  /* channels: [1,2,1,1] ++ [1,2,1,2] on axis 3 (given as -1), fused RELU */
  float c[2] = {-1, 2}, d[4] = {10, -20, 30, 40}, o2[6];
  ar_tview_t tc = tv(AR_DTYPE_FLOAT32, c, 4, 1, 2, 1, 1), td = tv(AR_DTYPE_FLOAT32, d, 4, 1, 2, 1, 2);
  ar_tview_t to2 = tv(AR_DTYPE_FLOAT32, o2, 4, 1, 2, 1, 3);
  ar_tview_t *in2[] = {&tc, &td};
  opt.concatenation.axis = -1;
  opt.concatenation.activation = AR_ACT_RELU;
  n = node1(AR_OP_CONCATENATION, &opt, 2, in2, &to2);
  ck_assert_int_eq(run(&n), 0);
  float w2[6] = {0, 10, 0, 2, 30, 40};
  expect_floats(o2, w2, 6, 0);
  /* mismatch outside the axis */
  ar_tview_t tbad = tv(AR_DTYPE_FLOAT32, d, 4, 1, 1, 2, 2);
  ar_tview_t *in3[] = {&tc, &tbad};
  n = node1(AR_OP_CONCATENATION, &opt, 2, in3, &to2);
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  ck_assert_msg(strstr(g_msg, "operator 7 (CONCATENATION): input 1 shape [1,1,2,2] does not match"), "%s", g_msg);
}
END_TEST

/* ---- DEPTH_TO_SPACE ---- */

START_TEST(depth_to_space_order) {
  /* [1,1,2,4] bs 2 -> [1,2,4,1]: out[0, dy, 2w+dx, 0] = in[0, 0, w, 2dy+dx]. */
  float x[8] = {0, 1, 2, 3, 4, 5, 6, 7}, o[8];
  ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x, 4, 1, 1, 2, 4), to = tv(AR_DTYPE_FLOAT32, o, 4, 1, 2, 4, 1);
  ar_tview_t *in[] = {&tx};
  ar_options_t opt;
  memset(&opt, 0, sizeof opt);
  opt.depth_to_space.block_size = 2;
  ar_node_t n = node1(AR_OP_DEPTH_TO_SPACE, &opt, 1, in, &to);
  ck_assert_int_eq(run(&n), 0);
  float want[8] = {0, 1, 4, 5, 2, 3, 6, 7};
  expect_floats(o, want, 8, 0);
  /* [1,2,1,8] bs 2 -> [1,4,2,2]: C_out = 2 keeps channel pairs together */
  float x2[16], o2[16];
  for (int i = 0; i < 16; i++) x2[i] = (float)i;
  ar_tview_t tx2 = tv(AR_DTYPE_FLOAT32, x2, 4, 1, 2, 1, 8), to2 = tv(AR_DTYPE_FLOAT32, o2, 4, 1, 4, 2, 2);
  ar_tview_t *in2[] = {&tx2};
  n = node1(AR_OP_DEPTH_TO_SPACE, &opt, 1, in2, &to2);
  ck_assert_int_eq(run(&n), 0);
  for (int h = 0; h < 2; h++)
    for (int dy = 0; dy < 2; dy++)
      for (int dx = 0; dx < 2; dx++)
        for (int c = 0; c < 2; c++)
          ck_assert(o2[((h * 2 + dy) * 2 + dx) * 2 + c] == x2[h * 8 + (dy * 2 + dx) * 2 + c]);
  /* channels not divisible by bs^2 */
  ar_tview_t tx3 = tv(AR_DTYPE_FLOAT32, x2, 4, 1, 2, 1, 6);
  ar_tview_t *in3[] = {&tx3};
  n = node1(AR_OP_DEPTH_TO_SPACE, &opt, 1, in3, &to2);
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  ck_assert_msg(strstr(g_msg, "operator 7 (DEPTH_TO_SPACE): input channels 6"), "%s", g_msg);
}
END_TEST

/* ---- MEAN ---- */

static int mean(ar_tview_t tin, int32_t *axes, int n_axes, bool keep, ar_tview_t tout) {
  ar_tview_t ta = cst(AR_DTYPE_INT32, axes, 1, n_axes);
  ar_tview_t *ins[] = {&tin, &ta};
  ar_options_t opt;
  memset(&opt, 0, sizeof opt);
  opt.reducer.keep_dims = keep;
  ar_node_t n = node1(AR_OP_MEAN, &opt, 2, ins, &tout);
  return run(&n);
}

START_TEST(mean_global_keep_dims) {
  float x[12] = {1, 10, 2, 20, 3, 30, 4, 40, 5, 50, 6, 60}, o[2];   /* [1,3,2,2] */
  int32_t ax[2] = {1, 2};
  ck_assert_int_eq(mean(tv(AR_DTYPE_FLOAT32, x, 4, 1, 3, 2, 2), ax, 2, true, tv(AR_DTYPE_FLOAT32, o, 4, 1, 1, 1, 2)), 0);
  float want[2] = {3.5f, 35};
  expect_floats(o, want, 2, 1e-6f);
  int32_t axn[2] = {-2, 1};   /* same axes, negative and reordered */
  memset(o, 0, sizeof o);
  ck_assert_int_eq(mean(tv(AR_DTYPE_FLOAT32, x, 4, 1, 3, 2, 2), axn, 2, false, tv(AR_DTYPE_FLOAT32, o, 2, 1, 2)), 0);
  expect_floats(o, want, 2, 1e-6f);
  /* wrong stored shape for keep_dims=false */
  ck_assert_int_eq(mean(tv(AR_DTYPE_FLOAT32, x, 4, 1, 3, 2, 2), ax, 2, false, tv(AR_DTYPE_FLOAT32, o, 4, 1, 1, 1, 2)), AR_ESHAPE);
  ck_assert_msg(strstr(g_msg, "operator 7 (MEAN): output shape [1,1,1,2], inferred [1,2]"), "%s", g_msg);
}
END_TEST

START_TEST(mean_general_axes) {
  float x[6] = {1, 2, 3, 4, 5, 9}, o[3];   /* [2,3] */
  int32_t a1[1] = {1};
  ck_assert_int_eq(mean(tv(AR_DTYPE_FLOAT32, x, 2, 2, 3), a1, 1, false, tv(AR_DTYPE_FLOAT32, o, 1, 2)), 0);
  float w1[2] = {2, 6};
  expect_floats(o, w1, 2, 1e-6f);
  int32_t a0[1] = {0};
  ck_assert_int_eq(mean(tv(AR_DTYPE_FLOAT32, x, 2, 2, 3), a0, 1, true, tv(AR_DTYPE_FLOAT32, o, 2, 1, 3)), 0);
  float w0[3] = {2.5f, 3.5f, 6};
  expect_floats(o, w0, 3, 1e-6f);
  int32_t bad[1] = {2};
  ck_assert_int_eq(mean(tv(AR_DTYPE_FLOAT32, x, 2, 2, 3), bad, 1, true, tv(AR_DTYPE_FLOAT32, o, 2, 1, 3)), AR_EINVAL);
  ck_assert_msg(strstr(g_msg, "axis 2 out of range for rank 2"), "%s", g_msg);
}
END_TEST

/* ---- reductions and broadcast rows: every ISA level and thread count gives the portable bits ---- */

/* prepare + init + eval with the node on `pool` (NULL: inline) and `threads`, with the scratch
 * prepare asks for (NaN-poisoned). */
static int run_on(ar_node_t *n, ar_threadpool_t *pool, int32_t threads) {
  const ar_kernel_t *k = ar_kernel_for(n->op);
  n->pool = pool;
  n->threads = threads;
  g_msg[0] = '\0';
  int rc = k->prepare(n, g_msg, sizeof g_msg);
  if (rc) return rc;
  n->state = n->state_bytes ? malloc(n->state_bytes) : NULL;
  n->scratch = n->scratch_bytes ? malloc(n->scratch_bytes) : NULL;
  if (n->scratch) memset(n->scratch, 0xff, n->scratch_bytes);
  if (k->init) k->init(n);
  k->eval(n);
  free(n->state);
  free(n->scratch);
  n->state = n->scratch = NULL;
  n->pool = NULL;
  return 0;
}

START_TEST(pool_mean_mul_every_isa_and_thread_count) {
  /* MEAN over H, W and global / windowed AVERAGE_POOL_2D and MAX_POOL_2D keep their sums, maxima
   * and clamps in registers at AVX-512F (64 channels at a time: 37, 80 and 144 channels give full
   * blocks and tails), and MEAN splits its channels by thread count; MUL of [1,H,W,C] by [C]
   * repeats the row in flat loops whose split (at 2 and 3 threads) starts mid-row. Each must give
   * the portable loop's bytes; NaN and -inf inputs included. */
  enum { CMAX = 144, N = 33 * 32 * CMAX };
  static float x[N], ref[N], got[N];
  for (int i = 0; i < N; i++) x[i] = (float)((i * 7919) % 1009) / 37.0f - 13.0f;
  x[5] = NAN; x[700] = -INFINITY; x[4001] = NAN;
  char msg[AR_MSG_BYTES];
  ar_threadpool_t *pool = NULL;
  ck_assert_int_eq(ar_threadpool_new(3, &pool, msg, sizeof msg), 0);
  const int best = ar__f32_set_isa(-1);
  const int chans[] = {37, 80, CMAX};
  /* 11x13: one block of pixels; 33x32: two (AR_GSUM_BLOCK = 1024), summed apart, then added */
  const int hws[][2] = {{11, 13}, {33, 32}};
  for (size_t hi = 0; hi < 2; hi++)
  for (size_t ci = 0; ci < sizeof chans / sizeof chans[0]; ci++) {
    const int C = chans[ci], H = hws[hi][0], W = hws[hi][1];
    struct { ar_op_t op; int fh, fw, s; ar_padding_t pad; ar_activation_t act; int oh, ow; } pc[] = {
      {AR_OP_AVERAGE_POOL_2D, H, W, 1, AR_PADDING_VALID, AR_ACT_NONE, 1, 1},
      {AR_OP_AVERAGE_POOL_2D, 3, 3, 2, AR_PADDING_SAME, AR_ACT_RELU6, (H + 1) / 2, (W + 1) / 2},
      {AR_OP_MAX_POOL_2D, 3, 2, 2, AR_PADDING_SAME, AR_ACT_NONE, (H + 1) / 2, (W + 1) / 2},
      {AR_OP_MAX_POOL_2D, H, W, 1, AR_PADDING_VALID, AR_ACT_RELU_N1_TO_1, 1, 1},
      {AR_OP_MEAN, 0, 0, 0, AR_PADDING_VALID, AR_ACT_NONE, 1, 1},
    };
    for (size_t k = 0; k < sizeof pc / sizeof pc[0]; k++)
      for (int l = AR_ISA_PORTABLE; l <= best; l++)
        for (int32_t t = 1; t <= 3; t++) {
          if (l == AR_ISA_PORTABLE && t > 1) continue;
          ck_assert_int_eq(ar__f32_set_isa(l), l);
          float *o = l == AR_ISA_PORTABLE ? ref : got;
          const size_t bytes = sizeof(float) * (size_t)pc[k].oh * pc[k].ow * C;
          memset(o, 0x7f, bytes);
          ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x, 4, 1, H, W, C);
          ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 4, 1, pc[k].oh, pc[k].ow, C);
          int32_t ax[2] = {1, 2};
          ar_tview_t ta = cst(AR_DTYPE_INT32, ax, 1, 2);
          ar_tview_t *in[] = {&tx, &ta};
          ar_options_t opt;
          if (pc[k].op == AR_OP_MEAN) {
            memset(&opt, 0, sizeof opt);
            opt.reducer.keep_dims = true;
          } else {
            opt = pool_opts(pc[k].pad, pc[k].fh, pc[k].fw, pc[k].s, pc[k].s, pc[k].act);
          }
          ar_node_t n = node1(pc[k].op, &opt, pc[k].op == AR_OP_MEAN ? 2 : 1, in, &to);
          ck_assert_int_eq(run_on(&n, t > 1 ? pool : NULL, t), 0);
          if (l != AR_ISA_PORTABLE)
            ck_assert_msg(memcmp(ref, got, bytes) == 0, "%s case %zu, %dx%dx%d, at %s on %d threads "
                          "differs from portable", ar_op_name(pc[k].op), k, H, W, C, ar_isa_name(l), (int)t);
          if (l != AR_ISA_PORTABLE || (pc[k].op != AR_OP_MEAN && k != 0)) continue;
          /* the documented order: per block of 1024 pixels a sum from 0, the block sums in order */
          for (int c = 0; c < C; c++) {
            float total = 0.0f;
            for (int p0 = 0; p0 < H * W; p0 += 1024) {
              float part = 0.0f;
              for (int p = p0; p < H * W && p < p0 + 1024; p++) part += x[(size_t)p * C + c];
              total = p0 == 0 ? part : total + part;
            }
            const float want = total / (float)(H * W);
            ck_assert_msg(memcmp(&o[c], &want, sizeof want) == 0 || (isnan(want) && isnan(o[c])),
                          "%s %dx%dx%d channel %d: %.9g, blocked sum gives %.9g", ar_op_name(pc[k].op),
                          H, W, C, c, o[c], want);
          }
        }
  }
  /* MUL [1,30,37,37] x [37] (41070 elements: split at multiples of 64, mid-row), and x [1,1,1,37]
   * on the left (the repeated row as input 0) */
  enum { MH = 30, MW = 37, MC = 37, MN = MH * MW * MC };
  ck_assert_int_le(MN + 9000, N);
  for (int side = 0; side < 2; side++)
    for (int l = AR_ISA_PORTABLE; l <= best; l++)
      for (int32_t t = 1; t <= 3; t++) {
        if (l == AR_ISA_PORTABLE && t > 1) continue;
        ck_assert_int_eq(ar__f32_set_isa(l), l);
        float *o = l == AR_ISA_PORTABLE ? ref : got;
        ar_options_t opt = {.elementwise = {.activation = AR_ACT_RELU6}};
        ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x + 3, 4, 1, MH, MW, MC);
        ar_tview_t tr = side ? tv(AR_DTYPE_FLOAT32, x + 9000, 4, 1, 1, 1, MC) : tv(AR_DTYPE_FLOAT32, x + 9000, 1, MC);
        ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 4, 1, MH, MW, MC);
        ar_tview_t *in[] = {side ? &tr : &tx, side ? &tx : &tr};
        ar_node_t n = node1(AR_OP_MUL, &opt, 2, in, &to);
        ck_assert_int_eq(run_on(&n, t > 1 ? pool : NULL, t), 0);
        if (l != AR_ISA_PORTABLE)
          ck_assert_msg(memcmp(ref, got, sizeof(float) * MN) == 0, "MUL side %d at %s on %d threads "
                        "differs from portable", side, ar_isa_name(l), (int)t);
      }
  ar__f32_set_isa(-1);
  ar_threadpool_free(pool);
}
END_TEST

/* ---- RESHAPE ---- */

START_TEST(reshape_copy_in_place_and_errors) {
  float x[6] = {1, 2, 3, 4, 5, 6}, o[6] = {0};
  int32_t shape[2] = {-1, 2};
  ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x, 2, 2, 3), ts = cst(AR_DTYPE_INT32, shape, 1, 2);
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 2, 3, 2);
  ar_tview_t *in[] = {&tx, &ts};
  ar_options_t opt;
  memset(&opt, 0, sizeof opt);
  ar_node_t n = node1(AR_OP_RESHAPE, &opt, 2, in, &to);
  ck_assert_int_eq(run(&n), 0);
  expect_floats(o, x, 6, 0);
  ar_tview_t to_same = tv(AR_DTYPE_FLOAT32, x, 2, 3, 2);   /* planner aliased: same bytes */
  n = node1(AR_OP_RESHAPE, &opt, 2, in, &to_same);
  ck_assert_int_eq(run(&n), 0);
  float w[6] = {1, 2, 3, 4, 5, 6};
  expect_floats(x, w, 6, 0);
  /* options-only form (no shape tensor) */
  opt.reshape.has_new_shape = true; opt.reshape.rank = 1; opt.reshape.new_shape[0] = 6;
  ar_tview_t to6 = tv(AR_DTYPE_FLOAT32, o, 1, 6);
  n = node1(AR_OP_RESHAPE, &opt, 1, in, &to6);
  ck_assert_int_eq(run(&n), 0);
  int32_t bad[2] = {4, 2};
  ar_tview_t tbad = cst(AR_DTYPE_INT32, bad, 1, 2);
  ar_tview_t *in2[] = {&tx, &tbad};
  ar_tview_t to42 = tv(AR_DTYPE_FLOAT32, o, 2, 4, 2);
  n = node1(AR_OP_RESHAPE, &opt, 2, in2, &to42);
  ck_assert_int_eq(run(&n), AR_ESHAPE);
  ck_assert_msg(strstr(g_msg, "operator 7 (RESHAPE): cannot reshape [2,3] (6 elements) to [4,2]"), "%s", g_msg);
}
END_TEST

/* ---- DEQUANTIZE ---- */

START_TEST(dequantize_fp16) {
  uint16_t h[10] = {0x3C00, 0xC000, 0x0001, 0x03FF, 0x7C00, 0xFC00, 0x7E00, 0x8000, 0x7BFF, 0x3555};
  float o[10];
  ar_tview_t th = cst(AR_DTYPE_FLOAT16, h, 1, 10), to = tv(AR_DTYPE_FLOAT32, o, 1, 10);
  ar_tview_t *in[] = {&th};
  ar_options_t opt;
  memset(&opt, 0, sizeof opt);
  ar_node_t n = node1(AR_OP_DEQUANTIZE, &opt, 1, in, &to);
  ck_assert_int_eq(run(&n), 0);
  ck_assert(o[0] == 1.0f);
  ck_assert(o[1] == -2.0f);
  ck_assert(o[2] == ldexpf(1.0f, -24));              /* smallest subnormal */
  ck_assert(o[3] == ldexpf(1023.0f, -24));           /* largest subnormal */
  ck_assert(isinf(o[4]) && o[4] > 0);
  ck_assert(isinf(o[5]) && o[5] < 0);
  ck_assert(isnan(o[6]));
  ck_assert(o[7] == 0.0f && signbit(o[7]));          /* -0 keeps its sign */
  ck_assert(o[8] == 65504.0f);
  ck_assert(o[9] == 0.333251953125f);
  /* float16, uint8, int8 and int16 inputs are implemented (the integer ones need quantization
   * parameters: tests/check_kernels_quant_elem.c, tests/golden/ops/dequantize_int16_4x5) */
  ar_tview_t ti = cst(AR_DTYPE_INT32, h, 1, 10);
  ar_tview_t *in2[] = {&ti};
  n = node1(AR_OP_DEQUANTIZE, &opt, 1, in2, &to);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "operator 7 (DEQUANTIZE): input dtype INT32"), "%s", g_msg);
  ar_tview_t ti8 = cst(AR_DTYPE_INT8, h, 1, 10);
  ar_tview_t *in3[] = {&ti8};
  n = node1(AR_OP_DEQUANTIZE, &opt, 1, in3, &to);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "has no quantization parameters"), "%s", g_msg);
}
END_TEST

/* ---- DENSIFY ---- */

static ar_index_vector_t iv(ar_index_type_t t, uint32_t len, const void *data) {
  ar_index_vector_t v = {t, len, data};
  return v;
}

static int densify(ar_tview_t *tin, ar_tview_t *tout) {
  ar_tview_t *in[] = {tin};
  ar_options_t opt;
  memset(&opt, 0, sizeof opt);
  ar_node_t n = node1(AR_OP_DENSIFY, &opt, 1, in, tout);
  return run(&n);
}

START_TEST(densify_csr_matrix) {
  /* 3x4 matrix, row-major CSR: row 0 = {1: 7, 3: 8}, row 1 empty, row 2 = {0: 9}. */
  static const uint8_t seg[4] = {0, 2, 2, 3}, idx[3] = {1, 3, 0};
  float vals[3] = {7, 8, 9}, o[12];
  ar_sparsity_t sp;
  memset(&sp, 0, sizeof sp);
  sp.n_traversal_order = 2; sp.traversal_order[0] = 0; sp.traversal_order[1] = 1;
  sp.n_dim_metadata = 2;
  sp.dim_metadata[0].format = AR_DIM_DENSE; sp.dim_metadata[0].dense_size = 3;
  sp.dim_metadata[1].format = AR_DIM_SPARSE_CSR;
  sp.dim_metadata[1].array_segments = iv(AR_IDX_UINT8, 4, seg);
  sp.dim_metadata[1].array_indices = iv(AR_IDX_UINT8, 3, idx);
  ar_tview_t tin = cst(AR_DTYPE_FLOAT32, vals, 2, 3, 4);
  tin.sparsity = &sp; tin.bytes = sizeof vals;
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 2, 3, 4);
  for (int i = 0; i < 12; i++) o[i] = -1;
  ck_assert_int_eq(densify(&tin, &to), 0);
  float want[12] = {0, 7, 0, 8, 0, 0, 0, 0, 9, 0, 0, 0};
  expect_floats(o, want, 12, 0);
  /* column-major storage (traversal_order [1,0]) of [[0,5,0],[6,0,7]], int32 / uint16 vectors,
   * float16 values as in the sparse MediaPipe model */
  static const int32_t seg2[4] = {0, 1, 2, 3};
  static const uint16_t idx2[3] = {1, 0, 1};
  uint16_t hv[3] = {0x4600, 0x4500, 0x4700};   /* 6, 5, 7 */
  uint16_t ho[6];
  ar_sparsity_t sp2;
  memset(&sp2, 0, sizeof sp2);
  sp2.n_traversal_order = 2; sp2.traversal_order[0] = 1; sp2.traversal_order[1] = 0;
  sp2.n_dim_metadata = 2;
  sp2.dim_metadata[0].format = AR_DIM_DENSE; sp2.dim_metadata[0].dense_size = 3;
  sp2.dim_metadata[1].format = AR_DIM_SPARSE_CSR;
  sp2.dim_metadata[1].array_segments = iv(AR_IDX_INT32, 4, seg2);
  sp2.dim_metadata[1].array_indices = iv(AR_IDX_UINT16, 3, idx2);
  ar_tview_t tin2 = cst(AR_DTYPE_FLOAT16, hv, 2, 2, 3);
  tin2.sparsity = &sp2; tin2.bytes = sizeof hv;
  ar_tview_t to2 = tv(AR_DTYPE_FLOAT16, ho, 2, 2, 3);
  ck_assert_int_eq(densify(&tin2, &to2), 0);
  uint16_t want2[6] = {0, 0x4500, 0, 0x4600, 0, 0x4700};
  ck_assert(memcmp(ho, want2, sizeof ho) == 0);
}
END_TEST

START_TEST(densify_block_sparse) {
  /* 4x4, dim 1 split into blocks of 2 (block_map [1]); expanded dims: 0 rows, 1 column blocks,
   * 2 within a block; traversal [0,1,2]; levels: DENSE 4, CSR over column blocks, DENSE 2.
   * row 0: block 1 = (1,2); row 1: none; row 2: blocks 0,1 = (3,4),(5,6); row 3: block 0 = (7,8). */
  static const uint8_t seg[5] = {0, 1, 1, 3, 4}, idx[4] = {1, 0, 1, 0};
  float vals[8] = {1, 2, 3, 4, 5, 6, 7, 8}, o[16];
  ar_sparsity_t sp;
  memset(&sp, 0, sizeof sp);
  sp.n_traversal_order = 3; sp.traversal_order[0] = 0; sp.traversal_order[1] = 1; sp.traversal_order[2] = 2;
  sp.n_block_map = 1; sp.block_map[0] = 1;
  sp.n_dim_metadata = 3;
  sp.dim_metadata[0].format = AR_DIM_DENSE; sp.dim_metadata[0].dense_size = 4;
  sp.dim_metadata[1].format = AR_DIM_SPARSE_CSR;
  sp.dim_metadata[1].array_segments = iv(AR_IDX_UINT8, 5, seg);
  sp.dim_metadata[1].array_indices = iv(AR_IDX_UINT8, 4, idx);
  sp.dim_metadata[2].format = AR_DIM_DENSE; sp.dim_metadata[2].dense_size = 2;
  ar_tview_t tin = cst(AR_DTYPE_FLOAT32, vals, 2, 4, 4);
  tin.sparsity = &sp; tin.bytes = sizeof vals;
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 2, 4, 4);
  ck_assert_int_eq(densify(&tin, &to), 0);
  float want[16] = {0, 0, 1, 2, 0, 0, 0, 0, 3, 4, 5, 6, 7, 8, 0, 0};
  expect_floats(o, want, 16, 0);
}
END_TEST

START_TEST(densify_rejects_bad_metadata) {
  static const uint8_t seg[4] = {0, 2, 2, 3}, idx[3] = {1, 4, 0};   /* 4 is outside 4 columns */
  float vals[3] = {7, 8, 9}, o[12];
  ar_sparsity_t sp;
  memset(&sp, 0, sizeof sp);
  sp.n_traversal_order = 2; sp.traversal_order[0] = 0; sp.traversal_order[1] = 1;
  sp.n_dim_metadata = 2;
  sp.dim_metadata[0].format = AR_DIM_DENSE; sp.dim_metadata[0].dense_size = 3;
  sp.dim_metadata[1].format = AR_DIM_SPARSE_CSR;
  sp.dim_metadata[1].array_segments = iv(AR_IDX_UINT8, 4, seg);
  sp.dim_metadata[1].array_indices = iv(AR_IDX_UINT8, 3, idx);
  ar_tview_t tin = cst(AR_DTYPE_FLOAT32, vals, 2, 3, 4);
  tin.sparsity = &sp; tin.bytes = sizeof vals;
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, 2, 3, 4);
  ck_assert_int_eq(densify(&tin, &to), AR_EMODEL);
  ck_assert_msg(strstr(g_msg, "operator 7 (DENSIFY): level 1: array_indices[1] = 4 outside [0,4)"), "%s", g_msg);
  /* more values visited than stored */
  static const uint8_t idx_ok[3] = {1, 3, 0};
  sp.dim_metadata[1].array_indices = iv(AR_IDX_UINT8, 3, idx_ok);
  tin.bytes = 2 * sizeof(float);
  ck_assert_int_eq(densify(&tin, &to), AR_EMODEL);
  ck_assert_msg(strstr(g_msg, "visits more than the 2 stored values"), "%s", g_msg);
  /* segments out of order */
  static const uint8_t seg_bad[4] = {0, 2, 1, 3};
  tin.bytes = sizeof vals;
  sp.dim_metadata[1].array_segments = iv(AR_IDX_UINT8, 4, seg_bad);
  ck_assert_int_eq(densify(&tin, &to), AR_EMODEL);
  /* dense_size disagreeing with the shape */
  sp.dim_metadata[1].array_segments = iv(AR_IDX_UINT8, 4, seg);
  sp.dim_metadata[0].dense_size = 2;
  ck_assert_int_eq(densify(&tin, &to), AR_EMODEL);
  ck_assert_msg(strstr(g_msg, "level 0: dense_size 2, expected 3"), "%s", g_msg);
}
END_TEST

static Suite *kernels_suite(void) {
  Suite *s = suite_create("kernels");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, registry_covers_every_op);
  tcase_add_test(tc, add_equal_shapes_fused_relu);
  tcase_add_test(tc, add_fused_relu6_relu_n1_tanh);
  tcase_add_test(tc, mul_broadcast_channel);
  tcase_add_test(tc, add_scalar_both_sides);
  tcase_add_test(tc, add_general_broadcast_both_sides);
  tcase_add_test(tc, add_shape_errors);
  tcase_add_test(tc, prelu_broadcast_alpha);
  tcase_add_test(tc, unary_values);
  tcase_add_test(tc, in_place_matches_separate_buffers);
  tcase_add_test(tc, float_elementwise_every_isa);
  tcase_add_test(tc, max_pool_same_odd_ignores_out_of_bounds);
  tcase_add_test(tc, avg_pool_counts_in_bounds_taps);
  tcase_add_test(tc, avg_pool_global);
  tcase_add_test(tc, pool_prepare_errors);
  tcase_add_test(tc, resize_bilinear_three_rules);
  tcase_add_test(tc, resize_bilinear_errors);
  tcase_add_test(tc, pad_channel_and_spatial);
  tcase_add_test(tc, pad_mixed_rank3_against_naive);
  tcase_add_test(tc, pad_errors);
  tcase_add_test(tc, concat_axis1_and_axis3);
  tcase_add_test(tc, depth_to_space_order);
  tcase_add_test(tc, mean_global_keep_dims);
  tcase_add_test(tc, mean_general_axes);
  tcase_add_test(tc, pool_mean_mul_every_isa_and_thread_count);
  tcase_add_test(tc, reshape_copy_in_place_and_errors);
  tcase_add_test(tc, dequantize_fp16);
  tcase_add_test(tc, densify_csr_matrix);
  tcase_add_test(tc, densify_block_sparse);
  tcase_add_test(tc, densify_rejects_bad_metadata);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(kernels_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
