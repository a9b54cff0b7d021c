/* check_kernels_quant_elem.c - hand-computed unit tests for the 8-bit (uint8 / int8) forms of the
 * elementwise, shape and activation kernels (issue 9): ADD, SUB, MUL (different input scales,
 * zero points != 0, broadcast constants, fused activation clamps, saturation), CONCATENATION
 * (uint8 inputs requantized to the output's parameters), PAD (zero-point fill), RESIZE_BILINEAR
 * (uint8 float path, int8 10-bit path, ties), RESIZE_NEAREST_NEIGHBOR, SOFTMAX and LOGISTIC
 * (TFLite's table formulas), RELU6, QUANTIZE (float -> int8 in both of TFLite's roundings,
 * uint8 -> int8, int8 -> int8 rescale), DEQUANTIZE, and the prepare errors a bad model gets.
 *
 * Where scales are powers of two the fixed-point results are exact and the expected codes are the
 * real-valued results rounded half away from zero; elsewhere the expected codes were worked out
 * with TFLite's integer formulas (QuantizeMultiplier, SaturatingRoundingDoublingHighMul,
 * RoundingDivideByPOT) and every one is also checked to be within one output step of the real
 * value. */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_kernels.h"
#include "kernels/ar_parallel.h"
#include "kernels/ar_quant.h"

/* ---- helpers ---- */

/* Per-tensor quantization that lives as long as the test (static storage per slot). */
typedef struct { ar_quant_t q; float s; int64_t z; } qp_t;
static qp_t g_qp[32];
static int g_nqp;

static const ar_quant_t *qp(float scale, int64_t zp) {
  ck_assert_int_lt(g_nqp, 32);
  qp_t *p = &g_qp[g_nqp++];
  p->s = scale; p->z = zp;
  p->q.n = 1; p->q.quantized_dimension = 0; p->q.scale = &p->s; p->q.zero_point = &p->z;
  return &p->q;
}

static ar_tview_t tv(ar_dtype_t dt, void *data, const ar_quant_t *q, int rank, ...) {
  ar_tview_t t;
  memset(&t, 0, sizeof t);
  t.dtype = dt; t.data = data; t.rank = rank; t.quant = q;
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
  n.op = op; n.index = 5; n.version = 2; n.options = opts;
  n.n_inputs = n_in; n.n_outputs = 1;
  n.inputs = in;
  n.outputs = out;
  n.threads = 1;
  return n;
}
#define mk(op, opts, n_in, in, out) mk_((op), (opts), (n_in), (in), (ar_tview_t *[1]){(out)})

static char g_msg[AR_MSG_BYTES];

/* prepare + init + eval as the interpreter does (state and scratch from the heap here) at 1, 2
 * and 3 threads (prepare sizes per-thread scratch, a pool of 3 takes the chunks): every thread
 * count must give the bytes of one thread (an output that is also an input runs once). Returns
 * prepare's rc. */
static int run(ar_node_t *n) {
  const ar_kernel_t *k = ar_kernel_for(n->op);
  ck_assert_ptr_nonnull(k);
  bool in_place = false;
  for (int i = 0; i < n->n_inputs; i++) in_place |= n->inputs[i] && n->inputs[i]->data == n->outputs[0]->data;
  ar_threadpool_t *pool = NULL;
  ck_assert_int_eq(ar_threadpool_new(3, &pool, g_msg, sizeof g_msg), 0);
  const size_t out_bytes = (size_t)n->outputs[0]->bytes;
  uint8_t *first = malloc(out_bytes ? out_bytes : 1);
  int rc = 0;
  for (int32_t threads = 1; threads <= (in_place ? 1 : 3) && rc == 0; threads++) {
    n->threads = threads;
    n->pool = threads > 1 ? pool : NULL;
    g_msg[0] = '\0';
    rc = k->prepare(n, g_msg, sizeof g_msg);
    if (rc) break;
    n->state = n->state_bytes ? malloc(n->state_bytes) : NULL;
    n->scratch = n->scratch_bytes ? malloc(n->scratch_bytes) : NULL;
    if (k->init) k->init(n);
    if (!in_place) memset(n->outputs[0]->data, 0x3c, out_bytes);
    k->eval(n);
    free(n->state);
    free(n->scratch);
    n->state = NULL;
    n->scratch = NULL;
    if (threads == 1) memcpy(first, n->outputs[0]->data, out_bytes);
    else
      ck_assert_msg(memcmp(first, n->outputs[0]->data, out_bytes) == 0, "%s: %d threads differ from 1",
                    ar_op_name(n->op), (int)threads);
  }
  n->threads = 1;
  n->pool = NULL;
  free(first);
  ar_threadpool_free(pool);
  return rc;
}

static void run_ok(ar_op_t op, const ar_options_t *o, int n_in, ar_tview_t **in, ar_tview_t *out) {
  ar_node_t n = mk(op, o, n_in, in, out);
  int rc = run(&n);
  ck_assert_msg(rc == 0, "%s: %s", ar_op_name(op), g_msg);
}

static void expect_i8(const int8_t *got, const int *want, int n) {
  for (int i = 0; i < n; i++) ck_assert_msg(got[i] == want[i], "element %d: got %d want %d", i, got[i], want[i]);
}
static void expect_u8(const uint8_t *got, const int *want, int n) {
  for (int i = 0; i < n; i++) ck_assert_msg(got[i] == want[i], "element %d: got %d want %d", i, got[i], want[i]);
}

/* |scale (q - zp) - real| <= scale: the code is one of the two nearest to the real value, or
 * saturated at the type's bound beyond it. */
static void expect_near_real(const int8_t *got, const double *real_codes, int n) {
  for (int i = 0; i < n; i++) {
    double r = real_codes[i] < -128 ? -128 : real_codes[i] > 127 ? 127 : real_codes[i];
    ck_assert_msg(fabs((double)got[i] - r) <= 1.0, "element %d: %d vs real %.4f", i, got[i], real_codes[i]);
  }
}

static void setup(void) { g_nqp = 0; }

/* ---- ADD / SUB / MUL ---- */

START_TEST(add_uint8_pot_scales_broadcast_ties_and_relu) {
  /* a: s 0.5 z 10 [1,2,2]; b: s 0.25 z 20 [2] (broadcast); out: s 1 z 5. Real: (a-10)/2 +
   * (b-20)/4, rounded half away from zero (power-of-two scales: the fixed point is exact). */
  uint8_t a[4] = {13, 11, 10, 9}, b[2] = {23, 21}, o[4];
  ar_tview_t ta = tv(AR_DTYPE_UINT8, a, qp(0.5f, 10), 3, 1, 2, 2);
  ar_tview_t tb = tv(AR_DTYPE_UINT8, b, qp(0.25f, 20), 1, 2);
  ar_tview_t to = tv(AR_DTYPE_UINT8, o, qp(1.0f, 5), 3, 1, 2, 2);
  ar_tview_t *in[2] = {&ta, &tb};
  run_ok(AR_OP_ADD, NULL, 2, in, &to);
  /* 1.5+0.75=2.25 -> 2; 0.5+0.25=0.75 -> 1; 0+0.75 -> 1; -0.5+0.25=-0.25 -> 0 */
  expect_u8(o, (int[]){7, 6, 6, 5}, 4);
  uint8_t b2[2] = {18, 19};
  tb.data = b2;
  run_ok(AR_OP_ADD, NULL, 2, in, &to);
  /* 1.5-0.5=1 -> 6; 0.5-0.25=0.25 -> 5; 0-0.5=-0.5 -> -1 (tie away from zero) -> 4;
   * -0.5-0.25=-0.75 -> -1 -> 4 */
  expect_u8(o, (int[]){6, 5, 4, 4}, 4);
  ar_options_t relu = {.elementwise = {AR_ACT_RELU}};
  run_ok(AR_OP_ADD, &relu, 2, in, &to);
  expect_u8(o, (int[]){6, 5, 5, 5}, 4);   /* RELU clamps at the zero point 5 */
}
END_TEST

START_TEST(add_sub_int8_general_scales_broadcast) {
  /* MoveNet's first residual ADD parameters; b [3] broadcast over a [2,3]. */
  int8_t a[6] = {-128, -20, 0, 12, 50, 127}, b[3] = {-5, 100, -128}, o[6];
  ar_tview_t ta = tv(AR_DTYPE_INT8, a, qp(0.0393688492f, 12), 2, 2, 3);
  ar_tview_t tb = tv(AR_DTYPE_INT8, b, qp(0.03740035f, -5), 1, 3);
  ar_tview_t to = tv(AR_DTYPE_INT8, o, qp(0.0410074405f, 7), 2, 2, 3);
  ar_tview_t *in[2] = {&ta, &tb};
  run_ok(AR_OP_ADD, NULL, 2, in, &to);
  expect_i8(o, (int[]){-127, 72, -117, 7, 127, 5}, 6);
  expect_near_real(o, (double[]){-127.4058, 72.0427, -116.7012, 7.0, 139.2456, 5.2241}, 6);
  run_ok(AR_OP_SUB, NULL, 2, in, &to);
  expect_i8(o, (int[]){-127, -119, 108, 7, -52, 127}, 6);
  expect_near_real(o, (double[]){-127.4058, -119.4853, 107.6602, 7.0, -52.2824, 229.5855}, 6);
}
END_TEST

START_TEST(mul_int8_and_uint8) {
  /* YOLO's SiLU product x * sigmoid(x): s 0.409804344 z 1 times s 1/256 z -128 -> s 0.203840986
   * z -127; here against a broadcast scalar per row of an [2,3] by [3]. */
  int8_t a[6] = {-128, -20, 0, 12, 50, 127}, b[6] = {-128, -1, 50, 127, 0, -64}, o[6];
  ar_tview_t ta = tv(AR_DTYPE_INT8, a, qp(0.409804344f, 1), 1, 6);
  ar_tview_t tb = tv(AR_DTYPE_INT8, b, qp(0.00390625f, -128), 1, 6);
  ar_tview_t to = tv(AR_DTYPE_INT8, o, qp(0.203840986f, -127), 1, 6);
  ar_tview_t *in[2] = {&ta, &tb};
  run_ok(AR_OP_MUL, NULL, 2, in, &to);
  expect_i8(o, (int[]){-127, -128, -128, -105, -78, -64}, 6);
  expect_near_real(o, (double[]){-127.0, -147.9444, -128.3979, -104.9719, -77.7449, -63.6720}, 6);

  /* The multiplier s1 s2 / s_out is formed in float32 (TFLite's mul.cc): with these scales the
   * float32 value gives (-117)(-31) = 3627 -> 43 (real 43.49) where the multiplier formed in
   * double would give 44 through the two roundings of MultiplyByQuantizedMultiplier. */
  int8_t fa[1] = {-117}, fb[1] = {-31}, fo[1];
  ar_tview_t tfa = tv(AR_DTYPE_INT8, fa, qp(0.39855867624282837f, 0), 1, 1);
  ar_tview_t tfb = tv(AR_DTYPE_INT8, fb, qp(0.005612049251794815f, 0), 1, 1);
  ar_tview_t tfo = tv(AR_DTYPE_INT8, fo, qp(0.18653057515621185f, 0), 1, 1);
  ar_tview_t *inf[2] = {&tfa, &tfb};
  run_ok(AR_OP_MUL, NULL, 2, inf, &tfo);
  ck_assert_int_eq(fo[0], 43);

  /* uint8, multiplier exactly 1 (0.5 * 0.25 / 0.125): out = (a - 3)(b - 2) + 1, saturating. */
  uint8_t ua[4] = {5, 13, 3, 0}, ub[1] = {4}, uo[4];
  ar_tview_t ta8 = tv(AR_DTYPE_UINT8, ua, qp(0.5f, 3), 1, 4);
  ar_tview_t tb8 = tv(AR_DTYPE_UINT8, ub, qp(0.25f, 2), 0);
  ar_tview_t to8 = tv(AR_DTYPE_UINT8, uo, qp(0.125f, 1), 1, 4);
  ar_tview_t *in8[2] = {&ta8, &tb8};
  run_ok(AR_OP_MUL, NULL, 2, in8, &to8);
  expect_u8(uo, (int[]){5, 21, 1, 0}, 4);   /* 2*2+1, 10*2+1, 0+1, -3*2+1 = -5 -> 0 */
  ar_options_t relu6 = {.elementwise = {AR_ACT_RELU6}};
  run_ok(AR_OP_MUL, &relu6, 2, in8, &to8);
  expect_u8(uo, (int[]){5, 21, 1, 1}, 4);   /* RELU6: [z, z + 6/0.125] = [1, 49] */
  ua[1] = 40;
  run_ok(AR_OP_MUL, &relu6, 2, in8, &to8);
  ck_assert_int_eq(uo[1], 49);               /* 37*2+1 = 75 -> 49 */
}
END_TEST

START_TEST(binary_q_prepare_errors) {
  int8_t a[2] = {0}, o[2];
  ar_tview_t ta = tv(AR_DTYPE_INT8, a, qp(0.5f, 0), 1, 2);
  ar_tview_t tb = tv(AR_DTYPE_INT8, a, NULL, 1, 2);
  ar_tview_t to = tv(AR_DTYPE_INT8, o, qp(0.5f, 0), 1, 2);
  ar_tview_t *in[2] = {&ta, &tb};
  ar_node_t n = mk(AR_OP_ADD, NULL, 2, in, &to);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "input 1") && strstr(g_msg, "no quantization"), "%s", g_msg);
  uint8_t ub[2] = {0};
  ar_tview_t tu = tv(AR_DTYPE_UINT8, ub, qp(0.5f, 0), 1, 2);
  in[1] = &tu;
  n = mk(AR_OP_SUB, NULL, 2, in, &to);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "UINT8"), "%s", g_msg);
  ar_options_t tanh = {.elementwise = {AR_ACT_TANH}};
  in[1] = &ta;
  n = mk(AR_OP_MUL, &tanh, 2, in, &to);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
}
END_TEST

/* TFLite's scalar formulas (reference_ops AddElementwise / SubElementwise / MulElementwise), written
 * out here with ar_mbqm, for the long-vector comparison below. */
static int32_t ref_q(ar_op_t op, int32_t x, int32_t y, float sx, int32_t zx, float sy, int32_t zy,
                     float so, int32_t zo, int32_t lo, int32_t hi) {
  int32_t m, r;
  int sh;
  if (op == AR_OP_MUL) {
    const float real = sx * sy / so;   /* float32, as TFLite's mul.cc */
    ar_quantize_multiplier((double)real, &m, &sh);
    r = ar_mbqm((x - zx) * (y - zy), m, sh) + zo;
  } else {
    const double tm = 2.0 * (double)(sx > sy ? sx : sy);
    int32_t m1, m2;
    int s1, s2;
    ar_quantize_multiplier(sx / tm, &m1, &s1);
    ar_quantize_multiplier(sy / tm, &m2, &s2);
    ar_quantize_multiplier(tm / ((double)(1 << 20) * so), &m, &sh);
    const int32_t a = ar_mbqm((x - zx) * (1 << 20), m1, s1), b = ar_mbqm((y - zy) * (1 << 20), m2, s2);
    r = ar_mbqm(op == AR_OP_ADD ? a + b : a - b, m, sh) + zo;
  }
  return r < lo ? lo : r > hi ? hi : r;
}

START_TEST(binary_q_long_vectors_match_formula) {
  /* 1003 elements (vector loop + a 3-element tail), every stride pattern, both types, scales
   * whose ratios make every rounding step matter (the last set: a MUL multiplier > 1, a left
   * shift), on every loop the CPU has (portable, AVX2, AVX-512). */
  enum { N = 1003 };
  static uint8_t a[N], b[N], o[N];
  uint32_t seed = 12345;
  for (int i = 0; i < N; i++) {
    seed = seed * 1103515245u + 12345u; a[i] = (uint8_t)(seed >> 16);
    seed = seed * 1103515245u + 12345u; b[i] = (uint8_t)(seed >> 16);
  }
  const ar_op_t ops[3] = {AR_OP_ADD, AR_OP_SUB, AR_OP_MUL};
  const float sc[4][3] = {{0.0393688492f, 0.03740035f, 0.0410074405f},
                          {0.409804344f, 0.00390625f, 0.203840986f},
                          {0.0031f, 0.21f, 0.0007f},
                          {0.05f, 0.07f, 0.0011f}};
  const int32_t zp[4][3] = {{12, -5, 7}, {1, -128, -127}, {-100, 3, 50}, {2, -1, 0}};
  const int best = ar__q8_set_isa(-1);
  for (int isa = 0; isa <= best; isa++)
  for (int dt = 0; dt < 2; dt++)
    for (int k = 0; k < 3; k++)
      for (int p = 0; p < 4; p++)
        for (int pattern = 0; pattern < 3; pattern++) {   /* [N]x[N], [N]x[], []x[N] */
          ck_assert_int_eq(ar__q8_set_isa(isa), isa);
          const bool is8 = dt == 1;
          const ar_dtype_t t = is8 ? AR_DTYPE_INT8 : AR_DTYPE_UINT8;
          const int32_t off = is8 ? 0 : 128;   /* uint8 zero points shifted into range */
          const int32_t zx = zp[p][0] + off, zy = zp[p][1] + off, zo = zp[p][2] + off;
          ar_tview_t ta = pattern == 2 ? tv(t, a, qp(sc[p][0], zx), 0) : tv(t, a, qp(sc[p][0], zx), 1, N);
          ar_tview_t tb = pattern == 1 ? tv(t, b, qp(sc[p][1], zy), 0) : tv(t, b, qp(sc[p][1], zy), 1, N);
          ar_tview_t to = tv(t, o, qp(sc[p][2], zo), 1, N);
          ar_tview_t *in[2] = {&ta, &tb};
          run_ok(ops[k], NULL, 2, in, &to);
          for (int i = 0; i < N; i++) {
            const int32_t x = is8 ? (int8_t)a[pattern == 2 ? 0 : i] : a[pattern == 2 ? 0 : i];
            const int32_t y = is8 ? (int8_t)b[pattern == 1 ? 0 : i] : b[pattern == 1 ? 0 : i];
            const int32_t want = ref_q(ops[k], x, y, sc[p][0], zx, sc[p][1], zy, sc[p][2], zo,
                                       is8 ? -128 : 0, is8 ? 127 : 255);
            const int32_t got = is8 ? (int8_t)o[i] : o[i];
            ck_assert_msg(got == want, "isa %d %s %s params %d pattern %d element %d: got %d want %d",
                          isa, ar_op_name(ops[k]), ar_dtype_name(t), p, pattern, i, got, want);
          }
          g_nqp = 0;
        }
  ar__q8_set_isa(-1);
}
END_TEST

START_TEST(binary_q_short_runs_tiled) {
  /* Short innermost runs with a repeated row (MoveNet's [1,192,192,3] - [1,1,1,3]): the kernel
   * tiles the rows into long flat loops (scratch copies of the repeated row); every element is
   * held to the formula, through tile boundaries (1024 / C rows per loop), leftover rows, outer
   * dims and a broadcast operand in either position. */
  static const struct { int32_t d0, d1, c; bool y_outer, swap; } cs[] = {
    {1, 700, 3, false, false}, {2, 450, 5, true, false}, {3, 37, 7, false, true},
    {1, 1, 3, false, false}, {2, 205, 63, true, true},
  };
  static uint8_t a[2 * 450 * 63 + 3 * 700 * 3], b[2 * 63], o[2 * 450 * 63 + 3 * 700 * 3];
  uint32_t seed = 777;
  for (size_t i = 0; i < sizeof a; i++) { seed = seed * 1103515245u + 12345u; a[i] = (uint8_t)(seed >> 16); }
  for (size_t i = 0; i < sizeof b; i++) { seed = seed * 1103515245u + 12345u; b[i] = (uint8_t)(seed >> 16); }
  const ar_op_t ops[3] = {AR_OP_ADD, AR_OP_SUB, AR_OP_MUL};
  const int best = ar__q8_set_isa(-1);
  for (int isa = 0; isa <= best; isa++)
  for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++)
    for (int dt = 0; dt < 2; dt++)
      for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(ar__q8_set_isa(isa), isa);
        const bool is8 = dt == 1;
        const ar_dtype_t t = is8 ? AR_DTYPE_INT8 : AR_DTYPE_UINT8;
        const int32_t off = is8 ? 0 : 128, d0 = cs[ci].d0, d1 = cs[ci].d1, c = cs[ci].c;
        const int32_t zx = 3 + off, zy = -9 + off, zo = 5 + off;
        const float sx = 0.0393688492f, sy = 0.0137f, so = 0.0410074405f;
        /* x [d0, d1, c]; y [d0, 1, c] (y_outer) or [c] */
        ar_tview_t tx = tv(t, a, qp(sx, zx), 3, d0, d1, c);
        ar_tview_t ty = cs[ci].y_outer ? tv(t, b, qp(sy, zy), 3, d0, 1, c) : tv(t, b, qp(sy, zy), 1, c);
        ar_tview_t to = tv(t, o, qp(so, zo), 3, d0, d1, c);
        ar_tview_t *in[2] = {&tx, &ty};
        if (cs[ci].swap) { in[0] = &ty; in[1] = &tx; }
        memset(o, 0xcc, sizeof o);
        run_ok(ops[k], NULL, 2, in, &to);
        for (int32_t i0 = 0; i0 < d0; i0++)
          for (int32_t i1 = 0; i1 < d1; i1++)
            for (int32_t i2 = 0; i2 < c; i2++) {
              const size_t ix = ((size_t)i0 * d1 + i1) * c + i2, iy = (cs[ci].y_outer ? (size_t)i0 * c : 0) + i2;
              const int32_t x = is8 ? (int8_t)a[ix] : a[ix], y = is8 ? (int8_t)b[iy] : b[iy];
              const int32_t want = cs[ci].swap
                  ? ref_q(ops[k], y, x, sy, zy, sx, zx, so, zo, is8 ? -128 : 0, is8 ? 127 : 255)
                  : ref_q(ops[k], x, y, sx, zx, sy, zy, so, zo, is8 ? -128 : 0, is8 ? 127 : 255);
              const int32_t got = is8 ? (int8_t)o[ix] : o[ix];
              ck_assert_msg(got == want, "isa %d case %zu %s %s element %zu: got %d want %d", isa, ci,
                            ar_op_name(ops[k]), ar_dtype_name(t), ix, got, want);
            }
        g_nqp = 0;
      }
  ar__q8_set_isa(-1);
}
END_TEST

/* ---- CONCATENATION, PAD ---- */

START_TEST(concat_uint8_requantizes) {
  /* Output s 1 z 128. Input 0 (s 0.5 z 100) is requantized: round(0.5 q - 50) + 128 (ties away);
   * input 1 shares the output's parameters and is copied; axis 1 of [2,x]. */
  uint8_t a[6] = {101, 99, 100, 255, 0, 1}, b[2] = {7, 250}, o[8];
  ar_tview_t ta = tv(AR_DTYPE_UINT8, a, qp(0.5f, 100), 2, 2, 3);
  ar_tview_t tb = tv(AR_DTYPE_UINT8, b, qp(1.0f, 128), 2, 2, 1);
  ar_tview_t to = tv(AR_DTYPE_UINT8, o, qp(1.0f, 128), 2, 2, 4);
  ar_tview_t *in[2] = {&ta, &tb};
  ar_options_t ax = {.concatenation = {1, AR_ACT_NONE}};
  run_ok(AR_OP_CONCATENATION, &ax, 2, in, &to);
  /* 0.5 -> 1 -> 129; -0.5 -> -1 -> 127; 0 -> 128 | 7; 77.5 -> 78 -> 206; -50 -> 78;
   * -49.5 -> -50 -> 78 | 250 */
  expect_u8(o, (int[]){129, 127, 128, 7, 206, 78, 78, 250}, 8);

  /* int8 inputs must share the output's parameters (TFLite); same parameters just copy. */
  int8_t c[2] = {-3, 4}, d[2] = {5, -6}, e[4];
  ar_tview_t tc = tv(AR_DTYPE_INT8, c, qp(0.25f, -1), 1, 2);
  ar_tview_t td = tv(AR_DTYPE_INT8, d, qp(0.25f, -1), 1, 2);
  ar_tview_t te = tv(AR_DTYPE_INT8, e, qp(0.25f, -1), 1, 4);
  ar_tview_t *in2[2] = {&tc, &td};
  ar_options_t ax0 = {.concatenation = {-1, AR_ACT_NONE}};
  run_ok(AR_OP_CONCATENATION, &ax0, 2, in2, &te);
  expect_i8(e, (int[]){-3, 4, 5, -6}, 4);
  td.quant = qp(0.5f, -1);
  ar_node_t n = mk(AR_OP_CONCATENATION, &ax0, 2, in2, &te);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "input 1"), "%s", g_msg);

  /* int32 (MoveNet's keypoint indices) are plain copies. */
  int32_t ia[3] = {1, 2, 3}, ib[1] = {-4}, io[4];
  ar_tview_t tia = tv(AR_DTYPE_INT32, ia, NULL, 2, 1, 3), tib = tv(AR_DTYPE_INT32, ib, NULL, 2, 1, 1);
  ar_tview_t tio = tv(AR_DTYPE_INT32, io, NULL, 2, 1, 4);
  ar_tview_t *in3[2] = {&tia, &tib};
  ar_options_t ax1 = {.concatenation = {1, AR_ACT_NONE}};
  run_ok(AR_OP_CONCATENATION, &ax1, 2, in3, &tio);
  ck_assert(io[0] == 1 && io[1] == 2 && io[2] == 3 && io[3] == -4);
}
END_TEST

START_TEST(pad_int8_fills_zero_point) {
  int8_t x[4] = {1, 2, 3, 4}, o[16];
  int32_t pads[8] = {0, 0, 1, 1, 1, 1, 0, 0};
  ar_tview_t tx = tv(AR_DTYPE_INT8, x, qp(0.1f, -5), 4, 1, 2, 2, 1);
  ar_tview_t tp = tv(AR_DTYPE_INT32, pads, NULL, 2, 4, 2);
  tp.is_constant = true;
  ar_tview_t to = tv(AR_DTYPE_INT8, o, qp(0.1f, -5), 4, 1, 4, 4, 1);
  ar_tview_t *in[2] = {&tx, &tp};
  run_ok(AR_OP_PAD, NULL, 2, in, &to);
  expect_i8(o, (int[]){-5, -5, -5, -5,  -5, 1, 2, -5,  -5, 3, 4, -5,  -5, -5, -5, -5}, 16);
  uint8_t ux[2] = {9, 8}, uo[4];
  int32_t upads[2] = {1, 1};
  ar_tview_t tux = tv(AR_DTYPE_UINT8, ux, qp(0.1f, 200), 1, 2);
  ar_tview_t tup = tv(AR_DTYPE_INT32, upads, NULL, 2, 1, 2);
  tup.is_constant = true;
  ar_tview_t tuo = tv(AR_DTYPE_UINT8, uo, qp(0.1f, 200), 1, 4);
  ar_tview_t *uin[2] = {&tux, &tup};
  run_ok(AR_OP_PAD, NULL, 2, uin, &tuo);
  expect_u8(uo, (int[]){200, 9, 8, 200}, 4);
}
END_TEST

/* ---- RESIZE ---- */

START_TEST(resize_bilinear_int8_half_pixel_ties) {
  /* [1,2,2,1] -> [1,4,4,1], half_pixel_centers: scale_10 = 512; rows/cols map to (lower, upper,
   * weight/1024) = (0,0,-256) (0,1,256) (0,1,768) (1,1,256). out[1][1] = 0.75*0.75*10 +
   * 0.25*0.75*30 + 0.75*0.25*20 + 0.25*0.25*40 = 17.5 -> 18 (half away from zero). */
  int8_t x[4] = {10, 20, 30, 40}, o[16];
  int32_t size[2] = {4, 4};
  ar_tview_t tx = tv(AR_DTYPE_INT8, x, qp(0.5f, 3), 4, 1, 2, 2, 1);
  ar_tview_t ts = tv(AR_DTYPE_INT32, size, NULL, 1, 2);
  ts.is_constant = true;
  ar_tview_t to = tv(AR_DTYPE_INT8, o, qp(0.5f, 3), 4, 1, 4, 4, 1);
  ar_tview_t *in[2] = {&tx, &ts};
  ar_options_t hp = {.resize_bilinear = {false, true}};
  run_ok(AR_OP_RESIZE_BILINEAR, &hp, 2, in, &to);
  /* row 0 = input row 0 blended by columns: 10, 12.5->13, 17.5->18, 20 */
  expect_i8(o, (int[]){10, 13, 18, 20,  15, 18, 23, 25,  25, 28, 33, 35,  30, 33, 38, 40}, 16);
  int8_t xn[4] = {-10, -20, -30, -40};
  tx.data = xn;
  run_ok(AR_OP_RESIZE_BILINEAR, &hp, 2, in, &to);
  ck_assert_int_eq(o[5], -18);   /* -17.5 -> -18 */
  ck_assert_int_eq(o[1], -13);   /* -12.5 -> -13 */
}
END_TEST

START_TEST(resize_bilinear_uint8_align_corners) {
  /* [1,1,2,1] -> [1,1,3,1], align_corners: x = 0, 0.5, 1; (uint8)(v + 0.5f) truncates. */
  uint8_t x[2] = {0, 3}, o[3];
  int32_t size[2] = {1, 3};
  ar_tview_t tx = tv(AR_DTYPE_UINT8, x, qp(0.1f, 0), 4, 1, 1, 2, 1);
  ar_tview_t ts = tv(AR_DTYPE_INT32, size, NULL, 1, 2);
  ts.is_constant = true;
  ar_tview_t to = tv(AR_DTYPE_UINT8, o, qp(0.1f, 0), 4, 1, 1, 3, 1);
  ar_tview_t *in[2] = {&tx, &ts};
  ar_options_t ac = {.resize_bilinear = {true, false}};
  run_ok(AR_OP_RESIZE_BILINEAR, &ac, 2, in, &to);
  expect_u8(o, (int[]){0, 2, 3}, 3);   /* 1.5 + 0.5 -> 2 */
  x[1] = 255;
  run_ok(AR_OP_RESIZE_BILINEAR, &ac, 2, in, &to);
  expect_u8(o, (int[]){0, 128, 255}, 3);
  to.quant = qp(0.2f, 0);   /* TFLite does not rescale: different output parameters refused */
  ar_node_t n = mk(AR_OP_RESIZE_BILINEAR, &ac, 2, in, &to);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
}
END_TEST

/* The AVX2 uint8 blend against the portable one, byte for byte: channel counts below, at and past
 * one vector (odd ones: the last vector of a pixel spills into the next pixel or stops at the row's
 * end), both coordinate rules, up- and down-sampling, batches. */
START_TEST(resize_bilinear_uint8_avx2_equals_portable) {
  const int best = ar__resize_set_isa(-1);
  static const struct { int32_t b, h, w, c, oh, ow; bool ac, hp; } cs[] = {
    {1, 33, 33, 21, 131, 129, false, true}, {2, 7, 9, 3, 20, 17, false, false},
    {1, 5, 6, 8, 11, 13, true, false}, {1, 9, 7, 1, 4, 3, false, true}, {1, 4, 5, 17, 9, 10, false, true},
  };
  for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
    const size_t nx = (size_t)cs[ci].b * cs[ci].h * cs[ci].w * cs[ci].c;
    const size_t no = (size_t)cs[ci].b * cs[ci].oh * cs[ci].ow * cs[ci].c;
    uint8_t *x = malloc(nx), *want = malloc(no), *got = malloc(no);
    uint32_t seed = 99 + (uint32_t)ci;
    for (size_t i = 0; i < nx; i++) { seed = seed * 1103515245u + 12345u; x[i] = (uint8_t)(seed >> 16); }
    int32_t size[2] = {cs[ci].oh, cs[ci].ow};
    ar_tview_t tx = tv(AR_DTYPE_UINT8, x, qp(0.1f, 0), 4, cs[ci].b, cs[ci].h, cs[ci].w, cs[ci].c);
    ar_tview_t ts = tv(AR_DTYPE_INT32, size, NULL, 1, 2);
    ts.is_constant = true;
    ar_tview_t to = tv(AR_DTYPE_UINT8, want, qp(0.1f, 0), 4, cs[ci].b, cs[ci].oh, cs[ci].ow, cs[ci].c);
    ar_tview_t *in[2] = {&tx, &ts};
    ar_options_t o = {.resize_bilinear = {cs[ci].ac, cs[ci].hp}};
    ck_assert_int_eq(ar__resize_set_isa(0), 0);
    run_ok(AR_OP_RESIZE_BILINEAR, &o, 2, in, &to);
    for (int isa = 1; isa <= best; isa++) {
      ck_assert_int_eq(ar__resize_set_isa(isa), isa);
      to.data = got;
      run_ok(AR_OP_RESIZE_BILINEAR, &o, 2, in, &to);
      for (size_t i = 0; i < no; i++)
        ck_assert_msg(got[i] == want[i], "case %zu isa %d: byte %zu is %d, want %d", ci, isa, i, got[i], want[i]);
    }
    ar__resize_set_isa(-1);
    free(x); free(want); free(got);
    g_nqp = 0;
  }
}
END_TEST

/* ARG_MAX / ARG_MIN over 8-bit rows of 2..32 codes (the AVX2 loop) against a naive first-extreme
 * scan and the portable loop: few distinct codes (ties everywhere), both types, int32 and int64
 * indices, a row count whose last rows end at the buffer's end. */
START_TEST(arg_max_min_8bit_rows) {
  static const int32_t sizes[] = {2, 5, 16, 21, 31, 32, 33};
  const int best = ar__argmax_set_isa(-1);
  enum { ROWS = 1001 };
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
    for (int t = 0; t < 8; t++) {
      const int32_t n = sizes[si];
      const bool s8 = t & 1, is_max = t & 2, o64 = t & 4;
      uint8_t *x = malloc((size_t)ROWS * n);
      int64_t want[ROWS];
      uint32_t seed = 5 + (uint32_t)(si * 8 + t);
      for (int64_t i = 0; i < (int64_t)ROWS * n; i++) {
        seed = seed * 1103515245u + 12345u;
        const int v = (int)(seed >> 16) % 5;   /* 5 codes near each end of the range */
        x[i] = (uint8_t)(s8 ? (v < 3 ? -128 + v : 125 + v - 3) : (v < 3 ? v : 253 + v - 3));
      }
      for (int r = 0; r < ROWS; r++) {
        int64_t k = 0;
        for (int64_t j = 1; j < n; j++) {
          const int a = s8 ? (int8_t)x[r * n + j] : x[r * n + j], b = s8 ? (int8_t)x[r * n + k] : x[r * n + k];
          if (is_max ? a > b : a < b) k = j;
        }
        want[r] = k;
      }
      int32_t axis = 1;
      int64_t got64[ROWS];
      ar_tview_t tx = tv(s8 ? AR_DTYPE_INT8 : AR_DTYPE_UINT8, x, qp(0.1f, 0), 2, ROWS, n);
      ar_tview_t ta = tv(AR_DTYPE_INT32, &axis, NULL, 1, 1);
      ta.is_constant = true;
      ar_tview_t to = tv(o64 ? AR_DTYPE_INT64 : AR_DTYPE_INT32, got64, NULL, 1, ROWS);
      ar_tview_t *in[2] = {&tx, &ta};
      ar_options_t o;
      memset(&o, 0, sizeof o);
      o.arg.output_type = o64 ? AR_DTYPE_INT64 : AR_DTYPE_INT32;
      for (int isa = 0; isa <= best; isa++) {
        ck_assert_int_eq(ar__argmax_set_isa(isa), isa);
        run_ok(is_max ? AR_OP_ARG_MAX : AR_OP_ARG_MIN, &o, 2, in, &to);
        for (int r = 0; r < ROWS; r++) {
          const int64_t g = o64 ? got64[r] : ((int32_t *)(void *)got64)[r];
          ck_assert_msg(g == want[r], "n %d %s %s isa %d row %d: %lld, want %lld", (int)n, s8 ? "int8" : "uint8",
                        is_max ? "max" : "min", isa, r, (long long)g, (long long)want[r]);
        }
      }
      ar__argmax_set_isa(-1);
      free(x);
      g_nqp = 0;
    }
}
END_TEST

START_TEST(resize_nearest_int8) {
  int8_t x[4] = {-1, 2, -3, 4}, o[16];
  int32_t size[2] = {4, 4};
  ar_tview_t tx = tv(AR_DTYPE_INT8, x, qp(0.1f, -121), 4, 1, 2, 2, 1);
  ar_tview_t ts = tv(AR_DTYPE_INT32, size, NULL, 1, 2);
  ts.is_constant = true;
  ar_tview_t to = tv(AR_DTYPE_INT8, o, qp(0.1f, -121), 4, 1, 4, 4, 1);
  ar_tview_t *in[2] = {&tx, &ts};
  ar_options_t hp = {.resize_nearest = {false, true}};
  run_ok(AR_OP_RESIZE_NEAREST_NEIGHBOR, &hp, 2, in, &to);
  expect_i8(o, (int[]){-1, -1, 2, 2,  -1, -1, 2, 2,  -3, -3, 4, 4,  -3, -3, 4, 4}, 16);
}
END_TEST

/* ---- SOFTMAX, LOGISTIC, RELU6 ---- */

START_TEST(softmax_uint8_int8_table) {
  /* Input scale 0.5, beta 1: table entries exp(-0.5 k) for k = max - q = 4, 2, 0, 0:
   * 0.13533528, 0.36787945, 1, 1; sum 2.50321484; p = 256 t / sum = 13.84, 37.62, 102.27, 102.27
   * -> uint8 (int)(p + 0.5) = 14, 38, 102, 102 (zero point not added); int8 round(p) - 128. */
  uint8_t x[4] = {0, 2, 4, 4}, o[4];
  ar_tview_t tx = tv(AR_DTYPE_UINT8, x, qp(0.5f, 77), 2, 1, 4);
  ar_tview_t to = tv(AR_DTYPE_UINT8, o, qp(1.0f / 256, 0), 2, 1, 4);
  ar_tview_t *in[1] = {&tx};
  ar_options_t beta = {.softmax = {1.0f}};
  run_ok(AR_OP_SOFTMAX, &beta, 1, in, &to);
  expect_u8(o, (int[]){14, 38, 102, 102}, 4);
  int8_t xi[8] = {-128, -126, -124, -124,  100, 100, 100, 100}, oi[8];
  ar_tview_t txi = tv(AR_DTYPE_INT8, xi, qp(0.5f, -3), 2, 2, 4);
  ar_tview_t toi = tv(AR_DTYPE_INT8, oi, qp(1.0f / 256, -128), 2, 2, 4);
  ar_tview_t *ini[1] = {&txi};
  run_ok(AR_OP_SOFTMAX, &beta, 1, ini, &toi);
  expect_i8(oi, (int[]){-114, -90, -26, -26,  -64, -64, -64, -64}, 8);   /* row 2: 64 each */
}
END_TEST

START_TEST(softmax_rows_in_groups_of_four) {
  /* 11 rows of 16 codes (two groups of four rows and a tail of three; YOLOv8n's softmax is
   * [1,4,3549,16]), both types, in place too: every row equals the straight per-row formula
   * (TFLite's table, the float sum in order, p = t / (sum s_out), rounded as the kernel comments). */
  enum { R = 11, D = 16 };
  static uint8_t x[R * D], o[R * D], inpl[R * D];
  uint32_t seed = 4242;
  for (int i = 0; i < R * D; i++) { seed = seed * 1103515245u + 12345u; x[i] = (uint8_t)(seed >> 16); }
  const float s_in = 0.07f, beta = 1.0f;
  float table[256];
  for (int k = 0; k < 256; k++) table[255 - k] = expf(-s_in * beta * (float)k);
  for (int dt = 0; dt < 2; dt++) {
    const bool s8 = dt == 1;
    const ar_dtype_t t = s8 ? AR_DTYPE_INT8 : AR_DTYPE_UINT8;
    const int32_t zo = s8 ? -128 : 0, tmin = s8 ? -128 : 0, tmax = s8 ? 127 : 255;
    ar_tview_t tx = tv(t, x, qp(s_in, s8 ? 5 : 133), 2, R, D);
    ar_tview_t to = tv(t, o, qp(1.0f / 256, zo), 2, R, D);
    ar_tview_t *in[1] = {&tx};
    ar_options_t opt = {.softmax = {beta}};
    run_ok(AR_OP_SOFTMAX, &opt, 1, in, &to);
    memcpy(inpl, x, sizeof inpl);
    ar_tview_t tpi = tv(t, inpl, qp(s_in, s8 ? 5 : 133), 2, R, D);
    ar_tview_t tpo = tv(t, inpl, qp(1.0f / 256, zo), 2, R, D);
    ar_tview_t *inp[1] = {&tpi};
    run_ok(AR_OP_SOFTMAX, &opt, 1, inp, &tpo);
    for (int r = 0; r < R; r++) {
      int32_t mx = tmin;
      for (int c = 0; c < D; c++) {
        const int32_t q = s8 ? (int8_t)x[r * D + c] : x[r * D + c];
        mx = q > mx ? q : mx;
      }
      float sum = 0.0f;
      for (int c = 0; c < D; c++) sum += table[255 - mx + (s8 ? (int8_t)x[r * D + c] : x[r * D + c])];
      const float inv = 1.0f / (sum * (1.0f / 256));
      for (int c = 0; c < D; c++) {
        const float p = table[255 - mx + (s8 ? (int8_t)x[r * D + c] : x[r * D + c])] * inv;
        int32_t v = s8 ? (int32_t)roundf(p) + zo : (int32_t)(p + 0.5f);
        v = v < tmin ? tmin : v > tmax ? tmax : v;
        const int32_t got = s8 ? (int8_t)o[r * D + c] : o[r * D + c];
        const int32_t got_inpl = s8 ? (int8_t)inpl[r * D + c] : inpl[r * D + c];
        ck_assert_msg(got == v && got_inpl == v, "%s row %d col %d: got %d (in place %d) want %d",
                      s8 ? "int8" : "uint8", r, c, got, got_inpl, v);
      }
    }
    g_nqp = 0;
  }
}
END_TEST

START_TEST(logistic_uint8_int8_table) {
  /* Input s 0.1: x = 0, 1, -1, 12.7, -12.8, 0.1 -> 256 sigmoid(x) = 128, 187.15, 68.85, 256.0,
   * 0.0007, 134.4 -> rounded, clamped to the type. */
  uint8_t x[6] = {128, 138, 118, 255, 0, 129}, o[6];
  ar_tview_t tx = tv(AR_DTYPE_UINT8, x, qp(0.1f, 128), 1, 6);
  ar_tview_t to = tv(AR_DTYPE_UINT8, o, qp(1.0f / 256, 0), 1, 6);
  ar_tview_t *in[1] = {&tx};
  run_ok(AR_OP_LOGISTIC, NULL, 1, in, &to);
  expect_u8(o, (int[]){128, 187, 69, 255, 0, 134}, 6);
  int8_t xi[6] = {0, 10, -10, 127, -128, 1}, oi[6];
  ar_tview_t txi = tv(AR_DTYPE_INT8, xi, qp(0.1f, 0), 1, 6);
  ar_tview_t toi = tv(AR_DTYPE_INT8, oi, qp(1.0f / 256, -128), 1, 6);
  ar_tview_t *ini[1] = {&txi};
  run_ok(AR_OP_LOGISTIC, NULL, 1, ini, &toi);
  expect_i8(oi, (int[]){0, 59, -59, 127, -128, 6}, 6);
  toi.quant = qp(1.0f / 128, -128);   /* TFLite requires scale 1/256 */
  ar_node_t n = mk(AR_OP_LOGISTIC, NULL, 1, ini, &toi);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
}
END_TEST

START_TEST(lut8_every_path_equals_table) {
  /* The byte-table loop of the quantized RELU / RELU6 / LOGISTIC (ar__lut8): every path (portable,
   * AVX-512 VBMI where the CPU has it) gives table[x] for every byte value, at lengths around the
   * 64-byte block (tails of 1 to 63 bytes), at unaligned addresses, in place, and writes nothing
   * past the end. */
  static uint8_t table[256], in[1200], out[1200], inpl[1200];
  for (int i = 0; i < 256; i++) table[i] = (uint8_t)((i * 97 + 13) ^ (i >> 3));
  for (int i = 0; i < 1200; i++) in[i] = (uint8_t)(i * 131 + 7);
  static const int64_t lens[] = {0, 1, 2, 63, 64, 65, 127, 128, 129, 255, 256, 1000, 1100};
  const int best = ar__lut8_set_isa(-1);
  for (int isa = 0; isa <= best; isa++) {
    ck_assert_int_eq(ar__lut8_set_isa(isa), isa);
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
      for (int off = 0; off < 4; off += 3) {
        const int64_t n = lens[li];
        memset(out, 0xcc, sizeof out);
        ar__lut8(table, in + off, out + off, n);
        memcpy(inpl, in, sizeof inpl);
        ar__lut8(table, inpl + off, inpl + off, n);
        for (int64_t i = 0; i < (int64_t)sizeof out; i++) {
          const bool inside = i >= off && i < off + n;
          ck_assert_msg(out[i] == (inside ? table[in[i]] : 0xcc), "isa %d n %lld off %d: byte %lld is %d",
                        isa, (long long)n, off, (long long)i, (int)out[i]);
          ck_assert_msg(inpl[i] == (inside ? table[in[i]] : in[i]), "isa %d n %lld off %d in place: byte %lld",
                        isa, (long long)n, off, (long long)i);
        }
      }
  }
  ar__lut8_set_isa(-1);
}
END_TEST

START_TEST(relu6_uint8_rescales) {
  /* in s 0.1 z 10 -> out s 0.05 z 0: multiplier 2; clamp [0, round(6 / 0.05) = 120]. */
  uint8_t x[4] = {5, 40, 80, 10}, o[4];
  ar_tview_t tx = tv(AR_DTYPE_UINT8, x, qp(0.1f, 10), 1, 4);
  ar_tview_t to = tv(AR_DTYPE_UINT8, o, qp(0.05f, 0), 1, 4);
  ar_tview_t *in[1] = {&tx};
  run_ok(AR_OP_RELU6, NULL, 1, in, &to);
  expect_u8(o, (int[]){0, 60, 120, 0}, 4);
  run_ok(AR_OP_RELU, NULL, 1, in, &to);
  expect_u8(o, (int[]){0, 60, 140, 0}, 4);
}
END_TEST

/* ---- QUANTIZE, DEQUANTIZE ---- */

START_TEST(quantize_float_to_int8_both_roundings) {
  /* s 0.5 z -1. TFLite's optimized AffineQuantize: elements in whole groups of 8 multiply by
   * 1/scale and round half to even; the tail divides and rounds half away from zero. 0.25 / 0.5 =
   * 0.5 is a tie: 0 in the first group (-> -1), 1 in the tail (-> 0). */
  float x[9] = {0.25f, 0.75f, -0.25f, 1.0f, 100.0f, -100.0f, 63.9f, 0.0f, 0.25f};
  int8_t o[9];
  ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x, NULL, 1, 9);
  ar_tview_t to = tv(AR_DTYPE_INT8, o, qp(0.5f, -1), 1, 9);
  ar_tview_t *in[1] = {&tx};
  run_ok(AR_OP_QUANTIZE, NULL, 1, in, &to);
  /* 0.5->0, 1.5->2, -0.5->0, 2, 200 sat, -200 sat, 127.8->128 sat, 0 | 0.5 -> 1 (tail) */
  expect_i8(o, (int[]){-1, 1, -1, 1, 127, -128, 127, -1, 0}, 9);
}
END_TEST

START_TEST(quantize_float_every_path_long) {
  /* 1003 floats (125 groups of 8 and a tail of 3), ties of the rounding among them, values past
   * both ends of the type, both output types, on every loop the CPU has (portable, AVX2): each
   * group element is nearbyintf(x * (1/s)) + z clamped, each tail element round(x / s) + z. */
  enum { N = 1003 };
  static float x[N];
  static uint8_t o[N];
  uint32_t seed = 99;
  const float s = 0.25f;
  for (int i = 0; i < N; i++) {
    seed = seed * 1103515245u + 12345u;
    const int k = (int)(seed >> 16) % 1200 - 600;
    x[i] = i % 3 == 0 ? ((float)k + 0.5f) * s : (float)k * 0.0371f;   /* every third a tie */
  }
  const int best = ar__quantize_set_isa(-1);
  for (int isa = 0; isa <= best; isa++)
    for (int dt = 0; dt < 2; dt++) {
      ck_assert_int_eq(ar__quantize_set_isa(isa), isa);
      const bool s8 = dt == 1;
      const int32_t z = s8 ? -3 : 120, lo = s8 ? -128 : 0, hi = s8 ? 127 : 255;
      ar_tview_t tx = tv(AR_DTYPE_FLOAT32, x, NULL, 1, N);
      ar_tview_t to = tv(s8 ? AR_DTYPE_INT8 : AR_DTYPE_UINT8, o, qp(s, z), 1, N);
      ar_tview_t *in[1] = {&tx};
      run_ok(AR_OP_QUANTIZE, NULL, 1, in, &to);
      for (int i = 0; i < N; i++) {
        int32_t want = i < N / 8 * 8 ? (int32_t)nearbyintf(x[i] * (1.0f / s)) + z
                                     : (int32_t)round((double)x[i] / (double)s) + z;
        want = want < lo ? lo : want > hi ? hi : want;
        const int32_t got = s8 ? (int8_t)o[i] : o[i];
        ck_assert_msg(got == want, "isa %d %s element %d (%g): got %d want %d", isa, s8 ? "int8" : "uint8",
                      i, (double)x[i], got, want);
      }
      g_nqp = 0;
    }
  ar__quantize_set_isa(-1);
}
END_TEST

START_TEST(quantize_requantize_8bit) {
  /* uint8 (s 1/127.5 z 127) -> int8 (same scale, z -1): q - 128 (tf2 MobileNet v2's input). */
  uint8_t u[4] = {0, 127, 128, 255};
  int8_t o[4];
  ar_tview_t tu = tv(AR_DTYPE_UINT8, u, qp(0.00784313772f, 127), 1, 4);
  ar_tview_t to = tv(AR_DTYPE_INT8, o, qp(0.00784313772f, -1), 1, 4);
  ar_tview_t *in[1] = {&tu};
  run_ok(AR_OP_QUANTIZE, NULL, 1, in, &to);
  expect_i8(o, (int[]){-128, -1, 0, 127}, 4);
  /* int8 s 0.5 z 3 -> int8 s 0.25 z -2: multiplier exactly 2: 2 (q - 3) - 2, saturating. */
  int8_t a[4] = {3, 10, -60, 100}, b[4];
  ar_tview_t ta = tv(AR_DTYPE_INT8, a, qp(0.5f, 3), 1, 4);
  ar_tview_t tb = tv(AR_DTYPE_INT8, b, qp(0.25f, -2), 1, 4);
  ar_tview_t *in2[1] = {&ta};
  run_ok(AR_OP_QUANTIZE, NULL, 1, in2, &tb);
  expect_i8(b, (int[]){-2, 12, -128, 127}, 4);
  /* int8 -> uint8 at s 3x: MultiplyByQuantizedMultiplier(q - 3, 1/3) + 128. 1/3 is m = 1431655765
   * (0.6667 * 2^31), shift -1, and TFLite rounds twice: 7 -> round(4.667) = 5 -> 5 / 2 = 2.5 -> 3
   * (the real 2.33 would give 2); 97 -> 64.667 -> 65 -> 32.5 -> 33; -63 -> -42 -> -21. */
  uint8_t c[4];
  ar_tview_t tc = tv(AR_DTYPE_UINT8, c, qp(1.5f, 128), 1, 4);
  ar_tview_t *in3[1] = {&ta};
  run_ok(AR_OP_QUANTIZE, NULL, 1, in3, &tc);
  expect_u8(c, (int[]){128, 131, 107, 161}, 4);
}
END_TEST

START_TEST(dequantize_int8_uint8) {
  int8_t a[3] = {-3, 5, -128};
  uint8_t b[3] = {0, 128, 255};
  float o[3];
  ar_tview_t ta = tv(AR_DTYPE_INT8, a, qp(0.5f, -3), 1, 3);
  ar_tview_t to = tv(AR_DTYPE_FLOAT32, o, NULL, 1, 3);
  ar_tview_t *in[1] = {&ta};
  run_ok(AR_OP_DEQUANTIZE, NULL, 1, in, &to);
  ck_assert(o[0] == 0.0f && o[1] == 4.0f && o[2] == -62.5f);
  ar_tview_t tb = tv(AR_DTYPE_UINT8, b, qp(0.00390625f, 128), 1, 3);
  in[0] = &tb;
  run_ok(AR_OP_DEQUANTIZE, NULL, 1, in, &to);
  ck_assert(o[0] == -0.5f && o[1] == 0.0f && o[2] == 0.49609375f);
  ar_tview_t tn = tv(AR_DTYPE_INT8, a, NULL, 1, 3);
  in[0] = &tn;
  ar_node_t n = mk(AR_OP_DEQUANTIZE, NULL, 1, in, &to);
  ck_assert_int_eq(run(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "no quantization"), "%s", g_msg);
}
END_TEST

/* Shapes big enough for the thread pool to take several chunks (odd sizes, broadcasts that take
 * the tiled rows, single long runs): run() holds threads 2 and 3 to the bytes of one thread; the
 * cases above hold one thread to TFLite. */
START_TEST(threads_same_bytes_big_odd_shapes) {
  enum { N = 100003 };
  uint8_t *a = malloc(N), *b = malloc(N), *o = malloc(4 * (size_t)N + 1000000);
  float *f = malloc(sizeof(float) * N);
  uint32_t seed = 777;
  for (int i = 0; i < N; i++) {
    seed = seed * 1103515245u + 12345u; a[i] = (uint8_t)(seed >> 16);
    seed = seed * 1103515245u + 12345u; b[i] = (uint8_t)(seed >> 16);
    f[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 40.0f;
  }
  /* ADD uint8: [1,151,93,7] + [7] (short runs against a repeated row: the tiled path) */
  ar_tview_t ta = tv(AR_DTYPE_UINT8, a, qp(0.05f, 120), 4, 1, 151, 93, 7);
  ar_tview_t tb = tv(AR_DTYPE_UINT8, b, qp(0.03f, 100), 1, 7);
  ar_tview_t to = tv(AR_DTYPE_UINT8, o, qp(0.07f, 110), 4, 1, 151, 93, 7);
  ar_tview_t *in2[2] = {&ta, &tb};
  run_ok(AR_OP_ADD, NULL, 2, in2, &to);
  /* [3,61,67,7] + [3,1,1,7]: the repeated row changes from image to image (each thread's copy) */
  ta = tv(AR_DTYPE_UINT8, a, qp(0.05f, 120), 4, 3, 61, 67, 7);
  tb = tv(AR_DTYPE_UINT8, b, qp(0.03f, 100), 4, 3, 1, 1, 7);
  to = tv(AR_DTYPE_UINT8, o, qp(0.07f, 110), 4, 3, 61, 67, 7);
  run_ok(AR_OP_ADD, NULL, 2, in2, &to);
  /* SUB / MUL int8: one long run of N, and [3,211,157] x [3,1,157] */
  ar_tview_t ia = tv(AR_DTYPE_INT8, a, qp(0.05f, -3), 1, N), ib = tv(AR_DTYPE_INT8, b, qp(0.04f, 5), 1, N);
  ar_tview_t io = tv(AR_DTYPE_INT8, o, qp(0.06f, 2), 1, N);
  ar_tview_t *inl[2] = {&ia, &ib};
  run_ok(AR_OP_SUB, NULL, 2, inl, &io);
  run_ok(AR_OP_MUL, NULL, 2, inl, &io);
  ar_tview_t ra = tv(AR_DTYPE_INT8, a, qp(0.05f, -3), 3, 3, 211, 157), rb = tv(AR_DTYPE_INT8, b, qp(0.04f, 5), 3, 3, 1, 157);
  ar_tview_t ro = tv(AR_DTYPE_INT8, o, qp(0.002f, 0), 3, 3, 211, 157);
  ar_tview_t *inr[2] = {&ra, &rb};
  run_ok(AR_OP_MUL, NULL, 2, inr, &ro);
  /* SOFTMAX int8 rows of 16 (YOLOv8's), uint8 rows of 21 */
  ar_options_t sm = {.softmax = {.beta = 1.0f}};
  ar_tview_t sx = tv(AR_DTYPE_INT8, a, qp(0.1f, 3), 3, 1, 6249, 16), so = tv(AR_DTYPE_INT8, o, qp(1.0f / 256, -128), 3, 1, 6249, 16);
  ar_tview_t *in1[1] = {&sx};
  run_ok(AR_OP_SOFTMAX, &sm, 1, in1, &so);
  sx = tv(AR_DTYPE_UINT8, a, qp(0.07f, 128), 2, 4761, 21);
  so = tv(AR_DTYPE_UINT8, o, qp(1.0f / 256, 0), 2, 4761, 21);
  run_ok(AR_OP_SOFTMAX, &sm, 1, in1, &so);
  /* RESIZE_BILINEAR uint8 / int8 [1,33,33,21] -> [1,131,129,21] (DeepLab's), nearest */
  int32_t size[2] = {131, 129};
  ar_tview_t ts = tv(AR_DTYPE_INT32, size, NULL, 1, 2);
  ts.is_constant = true;
  ar_options_t hp = {.resize_bilinear = {false, true}};
  for (int k = 0; k < 2; k++) {
    const ar_dtype_t dt = k ? AR_DTYPE_INT8 : AR_DTYPE_UINT8;
    ar_tview_t rx = tv(dt, a, qp(0.1f, 3), 4, 1, 33, 33, 21), rz = tv(dt, o, qp(0.1f, 3), 4, 1, 131, 129, 21);
    ar_tview_t *ins[2] = {&rx, &ts};
    run_ok(AR_OP_RESIZE_BILINEAR, &hp, 2, ins, &rz);
    run_ok(AR_OP_RESIZE_NEAREST_NEIGHBOR, NULL, 2, ins, &rz);
  }
  /* LOGISTIC int8 (a byte table), QUANTIZE float -> int8 (odd N: the scalar tail), DEQUANTIZE */
  ar_tview_t lx = tv(AR_DTYPE_INT8, a, qp(0.1f, 0), 1, N), lo = tv(AR_DTYPE_INT8, o, qp(1.0f / 256, -128), 1, N);
  ar_tview_t *inq[1] = {&lx};
  run_ok(AR_OP_LOGISTIC, NULL, 1, inq, &lo);
  ar_tview_t fx = tv(AR_DTYPE_FLOAT32, f, NULL, 1, N), fq = tv(AR_DTYPE_INT8, o, qp(0.15f, 3), 1, N);
  inq[0] = &fx;
  run_ok(AR_OP_QUANTIZE, NULL, 1, inq, &fq);
  ar_tview_t dx = tv(AR_DTYPE_UINT8, a, qp(0.02f, 130), 1, N), dq = tv(AR_DTYPE_FLOAT32, o, NULL, 1, N);
  inq[0] = &dx;
  run_ok(AR_OP_DEQUANTIZE, NULL, 1, inq, &dq);
  free(a); free(b); free(o); free(f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("kernels_quant_elem");
  TCase *tc = tcase_create("quant_elem");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, add_uint8_pot_scales_broadcast_ties_and_relu);
  tcase_add_test(tc, threads_same_bytes_big_odd_shapes);
  tcase_add_test(tc, add_sub_int8_general_scales_broadcast);
  tcase_add_test(tc, mul_int8_and_uint8);
  tcase_add_test(tc, binary_q_prepare_errors);
  tcase_add_test(tc, binary_q_short_runs_tiled);
  tcase_add_test(tc, binary_q_long_vectors_match_formula);
  tcase_add_test(tc, concat_uint8_requantizes);
  tcase_add_test(tc, pad_int8_fills_zero_point);
  tcase_add_test(tc, resize_bilinear_int8_half_pixel_ties);
  tcase_add_test(tc, resize_bilinear_uint8_align_corners);
  tcase_add_test(tc, resize_nearest_int8);
  tcase_add_test(tc, arg_max_min_8bit_rows);
  tcase_add_test(tc, resize_bilinear_uint8_avx2_equals_portable);
  tcase_add_test(tc, softmax_uint8_int8_table);
  tcase_add_test(tc, softmax_rows_in_groups_of_four);
  tcase_add_test(tc, logistic_uint8_int8_table);
  tcase_add_test(tc, lut8_every_path_equals_table);
  tcase_add_test(tc, relu6_uint8_rescales);
  tcase_add_test(tc, quantize_float_to_int8_both_roundings);
  tcase_add_test(tc, quantize_float_every_path_long);
  tcase_add_test(tc, quantize_requantize_8bit);
  tcase_add_test(tc, dequantize_int8_uint8);
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
