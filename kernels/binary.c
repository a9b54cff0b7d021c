/* binary.c - TFLite's broadcasting binary and ternary operators for every dtype they take:
 * SUB, DIV, FLOOR_DIV, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, POW, the comparisons EQUAL,
 * NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL (bool outputs), SELECT_V2, and the int32 /
 * int64 forms of ADD and MUL (their float32 form is the vectorized path in elementwise.c).
 *
 * Broadcasting is NumPy's (TFLite BroadcastShapes: shapes right-aligned, each dim equal or 1), up
 * to rank 6 like TFLite's 6-D slow path, for 2 or 3 inputs. prepare collapses the output shape
 * into runs of dims where every input either varies or repeats together (ar_nbcast_plan), so eval
 * walks an odometer over the outer runs and calls one flat loop per innermost run, in which every
 * input has stride 1 or 0. An innermost run shorter than 64 elements against a repeated row (an
 * image minus a per-channel constant: [1,H,W,3] - [3]) is tiled: rows are taken ~1024 elements at
 * a time, the repeated row copied that many times into scratch, so the flat loop stays long.
 * Eval cuts the walk into units (runs, pieces of a long run, groups of tiled rows) shared out over
 * the thread pool, each thread with its own tile copies; every output element is computed alone, so
 * the result does not depend on the thread count.
 *
 * Integer arithmetic wraps (computed in unsigned, as the two's-complement result TFLite's C++
 * gives in practice) so that no request data can hit undefined behaviour; integer division by zero
 * (an invoke error in TFLite) gives 0, and INT_MIN / -1 wraps, so a daemon never traps on data.
 * Integer POW with a negative exponent (also an invoke error in TFLite) gives 0.
 */
#include <math.h>
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_qparams.h"
#include "kernels/conv_util.h"
#include "kernels/ar_parallel.h"

#define NB_MAX_RANK 6
#define NB_MAX_IN 3

enum nb_op {
  NB_ADD, NB_SUB, NB_MUL, NB_DIV, NB_FLOOR_DIV, NB_MAXIMUM, NB_MINIMUM, NB_SQDIFF, NB_POW,
  NB_EQUAL, NB_NOT_EQUAL, NB_LESS, NB_LESS_EQUAL, NB_GREATER, NB_GREATER_EQUAL, NB_SELECT,
};

typedef struct {
  int32_t n_in;
  int64_t n;                          /* output elements */
  int32_t rank;                       /* collapsed rank, >= 1 */
  int64_t dims[NB_MAX_RANK];
  int64_t st[NB_MAX_IN][NB_MAX_RANK]; /* element strides per input, 0 = repeated */
  /* Short innermost runs (e.g. [1,192,192,3] - [3], a run of 3 per pixel): tile > 0 rows of the
   * last two dims go to one flat loop, the inputs that repeat one row along dim rank-2 (rowrep)
   * read tile copies of it, made in scratch at each outer position. 0: one loop per run. */
  int64_t tile;
  bool rowrep[NB_MAX_IN];
} nb_bcast_t;

/* ADD / SUB / MUL on uint8 / int8 (TFLite's quantized kernels, add.cc / sub.cc / mul.cc):
 * ADD and SUB rescale both inputs to a common 2^left_shift-scaled domain (multipliers
 * s_i / (2 max(s1, s2)), each < 1), add or subtract, and rescale by 2 max(s1, s2) / (2^20 s_out);
 * MUL rescales the product of the offset inputs by s1 s2 / s_out. */
typedef struct {
  int32_t off1, off2, out_off;        /* -z1, -z2, z_out */
  int32_t m1, m2, mo;                 /* Q31 multipliers */
  int s1, s2, so;                     /* their exponents (<= 0 for ADD/SUB) */
  int left_shift;                     /* 20 (8-bit ADD/SUB), 15 (int16) */
  int32_t lo, hi;                     /* fused activation clamp in the output's codes */
} nb_quant_t;

typedef struct {
  int op;
  ar_dtype_t dtype;                   /* dtype of the operands (x, y for SELECT_V2) */
  bool quantized;                     /* uint8/int8 ADD, SUB, MUL: q below */
  nb_quant_t q;
  float lo, hi;                       /* float fused activation clamp */
  int64_t ilo, ihi;                   /* integer fused activation clamp */
  bool post_act;
  ar_activation_t act;
  nb_bcast_t bc;
} nb_state_t;

/* Runs shorter than this are tiled (nb_bcast_t.tile) into flat loops of about NB_TILE_ELEMS. */
#define NB_TILE_RUN 64
#define NB_TILE_ELEMS 1024

/* Decide the tiling of the last two collapsed dims: every input either walks both (stride 1 and
 * the run length), repeats a row (stride 1 and 0) or stays on one element (0 and 0). */
static void nb_plan_tile(nb_bcast_t *bc) {
  bc->tile = 0;
  if (bc->rank < 2) return;
  const int32_t l = bc->rank - 1;
  const int64_t inner = bc->dims[l];
  if (inner >= NB_TILE_RUN) return;
  bool any_row = false;
  for (int k = 0; k < bc->n_in; k++) {
    const int64_t a = bc->st[k][l], b = bc->st[k][l - 1];
    bc->rowrep[k] = a == 1 && b == 0;
    any_row |= bc->rowrep[k];
    if (!(a == 1 && b == inner) && !bc->rowrep[k] && !(a == 0 && b == 0)) return;
  }
  if (!any_row) return;
  int64_t t = NB_TILE_ELEMS / inner;
  bc->tile = t < bc->dims[l - 1] ? t : bc->dims[l - 1];
}

/* Broadcast the inputs [first, first + n_in) of node into the output shape (od, *orank) and the
 * collapsed loop nest. */
static int nb_plan_shape(const ar_node_t *node, int first, int n_in, nb_bcast_t *bc, int32_t *od,
                         int32_t *orank, char *msg, size_t msg_bytes) {
  const ar_tview_t *in[NB_MAX_IN];
  int32_t r = 0;
  for (int k = 0; k < n_in; k++) {
    in[k] = node->inputs[first + k];
    r = AR_MAX(r, in[k]->rank);
  }
  if (r > NB_MAX_RANK)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "broadcast of rank %d (max %d)", (int)r,
                    NB_MAX_RANK);
  int32_t d[NB_MAX_IN][NB_MAX_RANK];
  for (int32_t i = 0; i < r; i++) {
    od[i] = 1;
    for (int k = 0; k < n_in; k++) {
      int32_t ik = i - (r - in[k]->rank);
      d[k][i] = ik >= 0 ? in[k]->dims[ik] : 1;
      if (d[k][i] == od[i] || d[k][i] == 1) continue;
      if (od[i] != 1) {
        char s1[96], s2[96];
        return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input %d shape %s does not broadcast "
                        "against input %d shape %s", first + k,
                        ar_k_dims_str(s1, sizeof s1, in[k]->rank, in[k]->dims), first,
                        ar_k_dims_str(s2, sizeof s2, in[0]->rank, in[0]->dims));
      }
      od[i] = d[k][i];
    }
  }
  *orank = r;
  memset(bc, 0, sizeof *bc);
  bc->n_in = n_in;
  bool f[NB_MAX_IN][NB_MAX_RANK];
  int32_t nr = 0;
  bc->n = 1;
  for (int32_t i = 0; i < r; i++) {
    bc->n *= od[i];
    if (od[i] == 1) continue;
    bool v[NB_MAX_IN], same = nr > 0;
    for (int k = 0; k < n_in; k++) {
      v[k] = d[k][i] != 1;
      if (nr > 0 && f[k][nr - 1] != v[k]) same = false;
    }
    if (same) {
      bc->dims[nr - 1] *= od[i];
    } else {
      for (int k = 0; k < n_in; k++) f[k][nr] = v[k];
      bc->dims[nr++] = od[i];
    }
  }
  if (nr == 0) {
    bc->dims[0] = 1;
    for (int k = 0; k < n_in; k++) f[k][0] = true;
    nr = 1;
  }
  bc->rank = nr;
  for (int k = 0; k < n_in; k++) {
    int64_t e = 1;
    for (int32_t i = nr - 1; i >= 0; i--) {
      bc->st[k][i] = f[k][i] ? e : 0;
      if (f[k][i]) e *= bc->dims[i];
    }
  }
  nb_plan_tile(bc);
  return 0;
}

static bool dtype_in(ar_dtype_t t, const ar_dtype_t *set, int n) {
  for (int i = 0; i < n; i++)
    if (set[i] == t) return true;
  return false;
}

static int nb_op_of(ar_op_t op) {
  switch (op) {
  case AR_OP_ADD: return NB_ADD;
  case AR_OP_SUB: return NB_SUB;
  case AR_OP_MUL: return NB_MUL;
  case AR_OP_DIV: return NB_DIV;
  case AR_OP_FLOOR_DIV: return NB_FLOOR_DIV;
  case AR_OP_MAXIMUM: return NB_MAXIMUM;
  case AR_OP_MINIMUM: return NB_MINIMUM;
  case AR_OP_SQUARED_DIFFERENCE: return NB_SQDIFF;
  case AR_OP_POW: return NB_POW;
  case AR_OP_EQUAL: return NB_EQUAL;
  case AR_OP_NOT_EQUAL: return NB_NOT_EQUAL;
  case AR_OP_LESS: return NB_LESS;
  case AR_OP_LESS_EQUAL: return NB_LESS_EQUAL;
  case AR_OP_GREATER: return NB_GREATER;
  case AR_OP_GREATER_EQUAL: return NB_GREATER_EQUAL;
  default: return NB_SELECT;
  }
}

/* TFLite's uint8 / int8 comparisons and its int16 EQUAL / NOT_EQUAL (comparisons.cc
 * ComparisonQuantized): each input offset by its zero point, shifted left 8 and rescaled by its
 * own scale (QuantizeMultiplierSmallerThanOneExp: a scale below 1), then compared. (TFLite 2.19's
 * int16 LESS, LESS_EQUAL, GREATER, GREATER_EQUAL compare the codes.) q: off1/off2, m1/s1, m2/s2. */
static int nb_plan_cmpq(const ar_node_t *node, nb_state_t *st, char *msg, size_t msg_bytes) {
  const ar_tview_t *x = node->inputs[0], *y = node->inputs[1];
  float sx = 0, sy = 0;
  int32_t zx = 0, zy = 0;
  int rc;
  if ((rc = ar_k_qparams(node, x, "input 0", &sx, &zx, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, y, "input 1", &sy, &zy, msg, msg_bytes)))
    return rc;
  if (!(sx < 1.0f && sy < 1.0f))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input scales %g, %g: TFLite's quantized "
                    "comparison rescales by scales below 1", (double)sx, (double)sy);
  nb_quant_t *q = &st->q;
  st->quantized = true;
  q->off1 = -zx;
  q->off2 = -zy;
  ar_quantize_multiplier((double)sx, &q->m1, &q->s1);
  ar_quantize_multiplier((double)sy, &q->m2, &q->s2);
  return 0;
}

/* TFLite's Prepare of quantized ADD / SUB (PrepareGeneralSubOp: left shift 20 for 8 bits, input
 * multipliers s_i / (2 max), output multiplier 2 max / (2^20 s_out), each through
 * QuantizeMultiplierSmallerThanOneExp) and MUL (s1 s2 / s_out through QuantizeMultiplier), with
 * the fused activation clamped in the output's quantized domain. MUL's s1 s2 / s_out is formed in
 * float32 as TFLite does; ADD/SUB's ratios in double (2 max(s1, s2) is exact either way). */
static int nb_plan_quant(const ar_node_t *node, nb_state_t *st, char *msg, size_t msg_bytes) {
  const ar_tview_t *x = node->inputs[0], *y = node->inputs[1], *o = node->outputs[0];
  float sx = 0, sy = 0, so = 0;
  int32_t zx = 0, zy = 0, zo = 0;
  int rc;
  if ((rc = ar_k_qparams(node, x, "input 0", &sx, &zx, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, y, "input 1", &sy, &zy, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, o, "output 0", &so, &zo, msg, msg_bytes)))
    return rc;
  nb_quant_t *q = &st->q;
  st->quantized = true;
  q->off1 = -zx; q->off2 = -zy; q->out_off = zo;
  if (ar_quant_activation_range(st->act, o->dtype, so, zo, &q->lo, &q->hi))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "fused activation %d on %s operands",
                    (int)st->act, ar_dtype_name(x->dtype));
  if (x->dtype == AR_DTYPE_INT16) {
    /* int16x8 models: symmetric int16 (TFLite checks every zero point is 0); ADD / SUB take the
     * general path of the 8-bit kernels with a left shift of 15 unless pot_scale_int16 asks for
     * the power-of-two path, which only applies when every scale is a power of two. */
    if (zx != 0 || zy != 0 || zo != 0)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "int16 zero points must be 0 (inputs %d, "
                      "%d, output %d)", (int)zx, (int)zy, (int)zo);
    if (st->op != NB_MUL && node->options && node->options->elementwise.pot_scale_int16) {
      int e;
      const bool pot = frexpf(sx, &e) == 0.5f && frexpf(sy, &e) == 0.5f && frexpf(so, &e) == 0.5f;
      if (pot)
        return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "the power-of-two int16 path "
                        "(pot_scale_int16 with scales %g, %g, %g) is not implemented; the general "
                        "one (pot_scale_int16 false) is", (double)sx, (double)sy, (double)so);
    }
  }
  if (st->op == NB_MUL) {
    /* TFLite mul.cc: input1 scale * input2 scale / output scale in float32, then widened. */
    const float real = sx * sy / so;
    ar_quantize_multiplier((double)real, &q->mo, &q->so);
    return 0;
  }
  q->left_shift = x->dtype == AR_DTYPE_INT16 ? 15 : 20;
  const double twice_max = 2.0 * (double)(sx > sy ? sx : sy);
  ar_quantize_multiplier((double)sx / twice_max, &q->m1, &q->s1);
  ar_quantize_multiplier((double)sy / twice_max, &q->m2, &q->s2);
  ar_quantize_multiplier(twice_max / ((double)(1 << q->left_shift) * (double)so), &q->mo, &q->so);
  if (q->s1 > 0 || q->s2 > 0 || q->so > 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "output scale %g is too small for input "
                    "scales %g and %g (rescale multiplier >= 1)", (double)so, (double)sx, (double)sy);
  return 0;
}

static int nb_plan(const ar_node_t *node, nb_state_t *st, char *msg, size_t msg_bytes) {
  const int op = nb_op_of(node->op);
  const bool select = op == NB_SELECT;
  const bool compare = op >= NB_EQUAL && op <= NB_GREATER_EQUAL;
  int n_in = select ? 3 : 2, first = select ? 1 : 0;
  int rc = ar_k_check_arity(node, n_in, n_in, n_in, 1, msg, msg_bytes);
  if (rc) return rc;
  memset(st, 0, sizeof *st);
  st->op = op;
  const ar_tview_t *x = node->inputs[first], *y = node->inputs[first + 1], *o = node->outputs[0];
  st->dtype = x->dtype;

  /* The dtypes TFLite's builtin kernel accepts for each op (float and integer paths only). */
  static const ar_dtype_t iIq[] = {AR_DTYPE_INT32, AR_DTYPE_INT64, AR_DTYPE_UINT8, AR_DTYPE_INT8,
                                   AR_DTYPE_INT16};
  static const ar_dtype_t fiIq[] = {AR_DTYPE_FLOAT32, AR_DTYPE_INT32, AR_DTYPE_INT64, AR_DTYPE_UINT8,
                                    AR_DTYPE_INT8, AR_DTYPE_INT16};
  static const ar_dtype_t fi[] = {AR_DTYPE_FLOAT32, AR_DTYPE_INT32};
  static const ar_dtype_t minmax[] = {AR_DTYPE_FLOAT32, AR_DTYPE_INT32, AR_DTYPE_INT64,
                                      AR_DTYPE_UINT8, AR_DTYPE_INT8, AR_DTYPE_INT16};
  /* uint8 / int8 comparisons (and int16 EQUAL / NOT_EQUAL) compare rescaled values (nb_plan_cmpq);
   * the other int16 ones the codes. */
  static const ar_dtype_t cmp[] = {AR_DTYPE_FLOAT32, AR_DTYPE_INT32, AR_DTYPE_INT64,
                                   AR_DTYPE_UINT8, AR_DTYPE_INT8, AR_DTYPE_INT16};
  static const ar_dtype_t eq[] = {AR_DTYPE_FLOAT32, AR_DTYPE_INT32, AR_DTYPE_INT64, AR_DTYPE_BOOL,
                                  AR_DTYPE_UINT8, AR_DTYPE_INT8, AR_DTYPE_INT16};
  static const ar_dtype_t sel[] = {AR_DTYPE_FLOAT32, AR_DTYPE_INT32, AR_DTYPE_INT64,
                                   AR_DTYPE_UINT8, AR_DTYPE_INT8, AR_DTYPE_INT16, AR_DTYPE_BOOL};
  const ar_dtype_t *set;
  int nset;
  switch (op) {
  case NB_ADD: case NB_MUL: set = iIq; nset = 5; break;   /* float32: elementwise.c */
  case NB_SUB: set = fiIq; nset = 6; break;
  case NB_DIV: case NB_FLOOR_DIV: case NB_SQDIFF: case NB_POW: set = fi; nset = 2; break;
  case NB_MAXIMUM: case NB_MINIMUM: set = minmax; nset = 6; break;
  case NB_LESS: case NB_LESS_EQUAL: case NB_GREATER: case NB_GREATER_EQUAL: set = cmp; nset = 6; break;
  case NB_EQUAL: case NB_NOT_EQUAL: set = eq; nset = 7; break;
  default: set = sel; nset = 7; break;                   /* SELECT_V2 */
  }
  if (!dtype_in(x->dtype, set, nset))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input %d has dtype %s, which this "
                    "operator does not take", first, ar_dtype_name(x->dtype));
  char what[32];
  snprintf(what, sizeof what, "input %d", first + 1);
  if ((rc = ar_k_check_dtype(node, y, what, x->dtype, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, o, "output 0", compare ? AR_DTYPE_BOOL : x->dtype, msg, msg_bytes)))
    return rc;
  if (select && (rc = ar_k_check_dtype(node, node->inputs[0], "condition (input 0)", AR_DTYPE_BOOL,
                                       msg, msg_bytes)))
    return rc;

  st->act = AR_ACT_NONE;
  if ((op == NB_ADD || op == NB_SUB || op == NB_MUL || op == NB_DIV) && node->options)
    st->act = node->options->elementwise.activation;
  if ((rc = ar_k_activation(node, st->act, &st->lo, &st->hi, &st->post_act, msg, msg_bytes)))
    return rc;
  st->ilo = INT64_MIN;
  st->ihi = INT64_MAX;
  if ((ar_k_is_q8(x->dtype) || x->dtype == AR_DTYPE_INT16) && (op == NB_ADD || op == NB_SUB || op == NB_MUL)) {
    if ((rc = nb_plan_quant(node, st, msg, msg_bytes))) return rc;
  } else if ((ar_k_is_q8(x->dtype) || (x->dtype == AR_DTYPE_INT16 && (op == NB_EQUAL || op == NB_NOT_EQUAL))) &&
             compare) {
    if ((rc = nb_plan_cmpq(node, st, msg, msg_bytes))) return rc;
  } else if (x->dtype != AR_DTYPE_FLOAT32 && st->act != AR_ACT_NONE) {
    if (st->post_act)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "fused activation %d on %s operands",
                      (int)st->act, ar_dtype_name(x->dtype));
    st->ilo = (int64_t)st->lo;
    if (isfinite(st->hi)) st->ihi = (int64_t)st->hi;
  }

  int32_t od[NB_MAX_RANK], orank;
  if (select) {
    /* SELECT_V2 broadcasts condition, x and y together. */
    if ((rc = nb_plan_shape(node, 0, 3, &st->bc, od, &orank, msg, msg_bytes))) return rc;
  } else if ((rc = nb_plan_shape(node, 0, 2, &st->bc, od, &orank, msg, msg_bytes))) {
    return rc;
  }
  return ar_k_check_output_shape(node, orank, od, msg, msg_bytes);
}

/* ---- Inner loops: n outputs, each input with stride s[k] (0 or 1). ---- */

#define NB_IVDEP _Pragma("GCC ivdep")
/* One loop per stride pattern so each is a plain loop the compiler can vectorize. */
#define NB_LOOP2(TI, TO, EXPR)                                                               \
  do {                                                                                       \
    const TI *a = in[0], *b = in[1];                                                         \
    TO *o = out;                                                                             \
    if (s[0] && s[1]) { NB_IVDEP for (int64_t i = 0; i < n; i++) { TI x = a[i], y = b[i]; o[i] = (EXPR); } } \
    else if (s[0])    { TI y = b[0]; NB_IVDEP for (int64_t i = 0; i < n; i++) { TI x = a[i]; o[i] = (EXPR); } } \
    else if (s[1])    { TI x = a[0]; NB_IVDEP for (int64_t i = 0; i < n; i++) { TI y = b[i]; o[i] = (EXPR); } } \
    else              { TI x = a[0], y = b[0]; TO v = (EXPR); for (int64_t i = 0; i < n; i++) o[i] = v; } \
  } while (0)

static inline float f_clamp(float v, float lo, float hi) { return ar_k_clamp(v, lo, hi); }
static inline int64_t i_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Wrapping integer arithmetic (unsigned, then back) and guarded division. */
#define WRAP_ADD(T, UT, x, y) ((T)((UT)(x) + (UT)(y)))
#define WRAP_SUB(T, UT, x, y) ((T)((UT)(x) - (UT)(y)))
#define WRAP_MUL(T, UT, x, y) ((T)((UT)(x) * (UT)(y)))

static inline int32_t div_i32(int32_t x, int32_t y) {
  if (y == 0) return 0;
  if (y == -1) return WRAP_SUB(int32_t, uint32_t, 0, x);
  return x / y;
}
static inline int32_t floor_div_i32(int32_t x, int32_t y) {
  if (y == 0) return 0;
  if (y == -1) return WRAP_SUB(int32_t, uint32_t, 0, x);
  int32_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
  return q;
}
/* TFLite FLOOR_DIV on floats: floor of the quotient computed in double. */
static inline float floor_div_f32(float x, float y) { return (float)floor((double)x / (double)y); }
/* TFLite POW on int32: repeated squaring, wrapping; negative exponent -> 0 (TFLite: invoke error). */
static inline int32_t pow_i32(int32_t x, int32_t y) {
  if (y < 0) return 0;
  uint32_t r = 1, base = (uint32_t)x;
  while (y) {
    if (y & 1) r *= base;
    base *= base;
    y >>= 1;
  }
  return (int32_t)r;
}

#define CMP_CASES(TI)                                                                       \
  case NB_EQUAL:         NB_LOOP2(TI, bool, x == y); return;                                \
  case NB_NOT_EQUAL:     NB_LOOP2(TI, bool, x != y); return;                                \
  case NB_LESS:          NB_LOOP2(TI, bool, x < y); return;                                 \
  case NB_LESS_EQUAL:    NB_LOOP2(TI, bool, x <= y); return;                                \
  case NB_GREATER:       NB_LOOP2(TI, bool, x > y); return;                                 \
  case NB_GREATER_EQUAL: NB_LOOP2(TI, bool, x >= y); return;                                \
  case NB_MAXIMUM:       NB_LOOP2(TI, TI, x > y ? x : y); return;                           \
  case NB_MINIMUM:       NB_LOOP2(TI, TI, x < y ? x : y); return;

static void run_f32(const nb_state_t *st, void *out, const void *const *in, const int64_t *s, int64_t n) {
  const float lo = st->lo, hi = st->hi;
  switch (st->op) {
  case NB_SUB:       NB_LOOP2(float, float, f_clamp(x - y, lo, hi)); return;
  case NB_DIV:       NB_LOOP2(float, float, f_clamp(x / y, lo, hi)); return;
  case NB_FLOOR_DIV: NB_LOOP2(float, float, floor_div_f32(x, y)); return;
  case NB_SQDIFF:    NB_LOOP2(float, float, (x - y) * (x - y)); return;
  case NB_POW:       NB_LOOP2(float, float, powf(x, y)); return;
  CMP_CASES(float)
  default: return;
  }
}

static void run_i32(const nb_state_t *st, void *out, const void *const *in, const int64_t *s, int64_t n) {
  const int64_t lo = st->ilo, hi = st->ihi;
  switch (st->op) {
  case NB_ADD:       NB_LOOP2(int32_t, int32_t, (int32_t)i_clamp(WRAP_ADD(int32_t, uint32_t, x, y), lo, hi)); return;
  case NB_SUB:       NB_LOOP2(int32_t, int32_t, (int32_t)i_clamp(WRAP_SUB(int32_t, uint32_t, x, y), lo, hi)); return;
  case NB_MUL:       NB_LOOP2(int32_t, int32_t, (int32_t)i_clamp(WRAP_MUL(int32_t, uint32_t, x, y), lo, hi)); return;
  case NB_DIV:       NB_LOOP2(int32_t, int32_t, (int32_t)i_clamp(div_i32(x, y), lo, hi)); return;
  case NB_FLOOR_DIV: NB_LOOP2(int32_t, int32_t, floor_div_i32(x, y)); return;
  case NB_SQDIFF:    NB_LOOP2(int32_t, int32_t, WRAP_MUL(int32_t, uint32_t, WRAP_SUB(int32_t, uint32_t, x, y),
                                                         WRAP_SUB(int32_t, uint32_t, x, y))); return;
  case NB_POW:       NB_LOOP2(int32_t, int32_t, pow_i32(x, y)); return;
  CMP_CASES(int32_t)
  default: return;
  }
}

static void run_i64(const nb_state_t *st, void *out, const void *const *in, const int64_t *s, int64_t n) {
  const int64_t lo = st->ilo, hi = st->ihi;
  switch (st->op) {
  case NB_ADD: NB_LOOP2(int64_t, int64_t, i_clamp(WRAP_ADD(int64_t, uint64_t, x, y), lo, hi)); return;
  case NB_SUB: NB_LOOP2(int64_t, int64_t, i_clamp(WRAP_SUB(int64_t, uint64_t, x, y), lo, hi)); return;
  case NB_MUL: NB_LOOP2(int64_t, int64_t, i_clamp(WRAP_MUL(int64_t, uint64_t, x, y), lo, hi)); return;
  CMP_CASES(int64_t)
  default: return;
  }
}

/* The fixed-point rescale of the quantized ADD / SUB / MUL in a branch-free form the compiler
 * vectorizes: TFLite's MultiplyByQuantizedMultiplier(v, m, shift) with m > 0 is
 *   hi = (v 2^left m + 2^30) >> 31      (SaturatingRoundingDoublingHighMul: it rounds ties up,
 *                                        and never saturates for m > 0)
 *   out = RoundingDivideByPOT(hi, right) (ties away from zero)
 * with left = max(shift, 0), right = max(-shift, 0); the same bits as ar_mbqm. */
static AR_ALWAYS_INLINE int32_t q_rescale(int32_t v, int32_t m, int left, int right) {
  const int32_t hi = (int32_t)(((int64_t)v * ((int64_t)1 << left) * m + (1ll << 30)) >> 31);
  const int32_t mask = (int32_t)((1u << right) - 1u);
  const int32_t th = (mask >> 1) + (hi < 0 ? 1 : 0);
  return (hi >> right) + ((hi & mask) > th ? 1 : 0);
}

/* One output code of quantized ADD (sign 1) / SUB (sign -1): TFLite's AddElementwise /
 * SubElementwise (inputs scaled by 2^left_shift and their multipliers, summed, rescaled). */
static AR_ALWAYS_INLINE int32_t q_addsub(const nb_quant_t *q, int32_t x, int32_t y, int sign) {
  const int32_t a = q_rescale((x + q->off1) * (1 << q->left_shift), q->m1, 0, -q->s1);
  const int32_t b = q_rescale((y + q->off2) * (1 << q->left_shift), q->m2, 0, -q->s2);
  const int32_t r = q_rescale(a + sign * b, q->mo, 0, -q->so) + q->out_off;
  return r < q->lo ? q->lo : r > q->hi ? q->hi : r;
}
/* Quantized MUL: TFLite's MulElementwise (MultiplyByQuantizedMultiplier of the product). */
static AR_ALWAYS_INLINE int32_t q_mul(const nb_quant_t *q, int32_t x, int32_t y) {
  const int32_t l = q->so > 0 ? q->so : 0, r = q->so > 0 ? 0 : -q->so;
  const int32_t v = q_rescale((x + q->off1) * (y + q->off2), q->mo, l, r) + q->out_off;
  return v < q->lo ? q->lo : v > q->hi ? q->hi : v;
}

/* The 8-bit ADD / SUB / MUL loops, compiled for the baseline and (x86-64) for AVX2 and AVX-512,
 * picked at run time (ar__q8_set_isa lets tests pick). */
#define Q8_LOOPS(T)                                                                          \
  do {                                                                                       \
    switch (st->op) {                                                                        \
    case NB_ADD: NB_LOOP2(T, T, (T)q_addsub(q, x, y, 1)); return;                            \
    case NB_SUB: NB_LOOP2(T, T, (T)q_addsub(q, x, y, -1)); return;                           \
    default:     NB_LOOP2(T, T, (T)q_mul(q, x, y)); return;                                  \
    }                                                                                        \
  } while (0)

static void q8_u8(const nb_state_t *st, void *out, const void *const *in, const int64_t *s, int64_t n) {
  const nb_quant_t *q = &st->q;
  Q8_LOOPS(uint8_t);
}
static void q8_i8(const nb_state_t *st, void *out, const void *const *in, const int64_t *s, int64_t n) {
  const nb_quant_t *q = &st->q;
  Q8_LOOPS(int8_t);
}
#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>

/* 8 lanes of q_rescale(v, m, 0, right): the even and odd 32-bit lanes multiplied into 64 bits
 * (vpmuldq), + 2^30, bits 31..62 taken back; then RoundingDivideByPOT. */
AR_TARGET_AVX2 static AR_ALWAYS_INLINE __m256i q_rescale8(__m256i v, __m256i m, int right) {
  const __m256i b30 = _mm256_set1_epi64x(1ll << 30);
  __m256i even = _mm256_add_epi64(_mm256_mul_epi32(v, m), b30);
  __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(v, 32), m), b30);
  const __m256i hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
  const __m256i mask = _mm256_set1_epi32((int32_t)((1u << right) - 1u));
  const __m256i rem = _mm256_and_si256(hi, mask);
  const __m256i th = _mm256_add_epi32(_mm256_srli_epi32(mask, 1), _mm256_srli_epi32(hi, 31));
  const __m256i r = _mm256_sra_epi32(hi, _mm_cvtsi32_si128(right));
  return _mm256_sub_epi32(r, _mm256_cmpgt_epi32(rem, th));
}

/* 8 codes of ADD / SUB / MUL from 8 widened x and y values (before the offsets). */
AR_TARGET_AVX2 static AR_ALWAYS_INLINE __m256i q8_op8(const nb_quant_t *q, int op, __m256i x, __m256i y) {
  x = _mm256_add_epi32(x, _mm256_set1_epi32(q->off1));
  y = _mm256_add_epi32(y, _mm256_set1_epi32(q->off2));
  __m256i r;
  if (op == NB_MUL) {
    const int l = q->so > 0 ? q->so : 0, rr = q->so > 0 ? 0 : -q->so;
    __m256i p = _mm256_mullo_epi32(x, y);
    p = _mm256_sll_epi32(p, _mm_cvtsi32_si128(l));
    r = q_rescale8(p, _mm256_set1_epi32(q->mo), rr);
  } else {
    const __m128i ls = _mm_cvtsi32_si128(q->left_shift);
    const __m256i a = q_rescale8(_mm256_sll_epi32(x, ls), _mm256_set1_epi32(q->m1), -q->s1);
    const __m256i b = q_rescale8(_mm256_sll_epi32(y, ls), _mm256_set1_epi32(q->m2), -q->s2);
    const __m256i sum = op == NB_ADD ? _mm256_add_epi32(a, b) : _mm256_sub_epi32(a, b);
    r = q_rescale8(sum, _mm256_set1_epi32(q->mo), -q->so);
  }
  r = _mm256_add_epi32(r, _mm256_set1_epi32(q->out_off));
  r = _mm256_max_epi32(r, _mm256_set1_epi32(q->lo));
  return _mm256_min_epi32(r, _mm256_set1_epi32(q->hi));
}

/* Store 8 clamped codes (already in the type's range) as bytes: the low byte of each 32-bit lane
 * (the two's-complement code for int8, the value for uint8). */
AR_TARGET_AVX2 static AR_ALWAYS_INLINE void q8_store8(void *dst, __m256i r) {
  const __m256i sh = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                      0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i b = _mm256_shuffle_epi8(r, sh);
  const int32_t w0 = _mm_cvtsi128_si32(_mm256_castsi256_si128(b));
  const int32_t w1 = _mm_cvtsi128_si32(_mm256_extracti128_si256(b, 1));
  memcpy(dst, &w0, 4);
  memcpy((char *)dst + 4, &w1, 4);
}

#define Q8_AVX2_LOAD(T, p)                                                                   \
  (sizeof(T) == 1 && (T)-1 < 0 ? _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(p))) \
                               : _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(p))))

/* AVX2: 8 elements per step for every stride pattern, the scalar code for the tail. The
 * parameters are copied to a local first: the byte stores may alias the state, and GCC would
 * reload them and rebuild every constant vector at each step. */
#define Q8_AVX2_BODY(T)                                                                      \
  do {                                                                                       \
    const nb_quant_t qc = st->q;                                                             \
    const nb_quant_t *q = &qc;                                                               \
    const T *a = in[0], *b = in[1];                                                          \
    T *o = out;                                                                              \
    const int op = st->op;                                                                   \
    int64_t i = 0;                                                                           \
    const __m256i xa = _mm256_set1_epi32((int32_t)a[0]), yb = _mm256_set1_epi32((int32_t)b[0]); \
    for (; i + 8 <= n; i += 8) {                                                             \
      const __m256i x = s[0] ? Q8_AVX2_LOAD(T, a + i) : xa;                                  \
      const __m256i y = s[1] ? Q8_AVX2_LOAD(T, b + i) : yb;                                  \
      q8_store8(o + i, q8_op8(q, op, x, y));                                                 \
    }                                                                                        \
    for (; i < n; i++) {                                                                     \
      const int32_t x = a[s[0] ? i : 0], y = b[s[1] ? i : 0];                                \
      o[i] = (T)(op == NB_MUL ? q_mul(q, x, y) : q_addsub(q, x, y, op == NB_ADD ? 1 : -1));  \
    }                                                                                        \
  } while (0)

AR_TARGET_AVX2 static void q8_u8_avx2(const nb_state_t *st, void *out, const void *const *in,
                                      const int64_t *s, int64_t n) {
  Q8_AVX2_BODY(uint8_t);
}
AR_TARGET_AVX2 static void q8_i8_avx2(const nb_state_t *st, void *out, const void *const *in,
                                      const int64_t *s, int64_t n) {
  Q8_AVX2_BODY(int8_t);
}

/* AVX-512 (F, BW, VL): 16 lanes per step and masked loads / stores for the tail. */
#define Q8_TARGET_512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl")))

/* One rescale's loop constants: multiplier, 64-bit rounding term, shift count, whether r > 0. */
typedef struct {
  __m512i m, k;
  __m128i cnt;
  bool away;
} q8_rs16_t;

/* The node's constants in registers (the byte stores in the loop may alias the state, so the
 * compiler would reload every field of it at each step). */
typedef struct {
  __m512i off1, off2, zo, lo, hi;
  __m128i ls;                          /* ADD/SUB: left_shift; MUL: max(shift, 0) */
  bool mul_left;
  q8_rs16_t r1, r2, ro;
} q8_512_t;

Q8_TARGET_512 static AR_ALWAYS_INLINE q8_rs16_t q8_rs16(int32_t m, int right) {
  q8_rs16_t r;
  r.m = _mm512_set1_epi32(m);
  r.k = _mm512_set1_epi64((1ll << 30) + (right > 0 ? (1ll << (30 + right)) : 0));
  r.cnt = _mm_cvtsi32_si128(31 + right);
  r.away = right > 0;
  return r;
}

/* 16 lanes of q_rescale(v, m, 0, right) as one 64-bit arithmetic shift per lane (floor(floor(a) /
 * b) = floor(a / b)): (v m + 2^30 + 2^(30+r) - [v m < -2^30] 2^31) >> (31 + r) for r > 0 (the
 * bracket sends the shift's negative ties away from zero, as RoundingDivideByPOT), (v m + 2^30)
 * >> 31 for r = 0. Even and odd lanes go through vpmuldq separately. */
Q8_TARGET_512 static AR_ALWAYS_INLINE __m512i q_rescale16(__m512i v, const q8_rs16_t *c) {
  const __m512i pe = _mm512_mul_epi32(v, c->m), po = _mm512_mul_epi32(_mm512_srli_epi64(v, 32), c->m);
  __m512i te = _mm512_add_epi64(pe, c->k), to = _mm512_add_epi64(po, c->k);
  if (c->away) {
    const __m512i lim = _mm512_set1_epi64(-(1ll << 30)), c31 = _mm512_set1_epi64(1ll << 31);
    te = _mm512_mask_sub_epi64(te, _mm512_cmplt_epi64_mask(pe, lim), te, c31);
    to = _mm512_mask_sub_epi64(to, _mm512_cmplt_epi64_mask(po, lim), to, c31);
  }
  const __m512i qe = _mm512_sra_epi64(te, c->cnt), qo = _mm512_sra_epi64(to, c->cnt);
  return _mm512_mask_blend_epi32(0xAAAA, qe, _mm512_slli_epi64(qo, 32));
}

/* 16 codes of ADD / SUB / MUL from 16 widened x and y values (before the offsets); as q8_op8. */
Q8_TARGET_512 static AR_ALWAYS_INLINE __m512i q8_op16(const q8_512_t *c, int op, __m512i x, __m512i y) {
  x = _mm512_add_epi32(x, c->off1);
  y = _mm512_add_epi32(y, c->off2);
  __m512i r;
  if (op == NB_MUL) {
    __m512i p = _mm512_mullo_epi32(x, y);
    if (c->mul_left) p = _mm512_sll_epi32(p, c->ls);
    r = q_rescale16(p, &c->ro);
  } else {
    const __m512i a = q_rescale16(_mm512_sll_epi32(x, c->ls), &c->r1);
    const __m512i b = q_rescale16(_mm512_sll_epi32(y, c->ls), &c->r2);
    r = q_rescale16(op == NB_ADD ? _mm512_add_epi32(a, b) : _mm512_sub_epi32(a, b), &c->ro);
  }
  r = _mm512_add_epi32(r, c->zo);
  r = _mm512_max_epi32(r, c->lo);
  return _mm512_min_epi32(r, c->hi);
}

#define Q8_512_LOAD(T, k, p)                                                                 \
  (sizeof(T) == 1 && (T)-1 < 0 ? _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8((k), (const void *)(p))) \
                               : _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8((k), (const void *)(p))))

/* 16 elements per step for every stride pattern; the last step masked. The clamped codes are in
 * the type's range, so vpmovdb's truncation stores them exactly. */
#define Q8_512_LOOP(T, OP)                                                                   \
  for (int64_t i = 0; i < n; i += 16) {                                                      \
    const __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u); \
    const __m512i x = s[0] ? Q8_512_LOAD(T, k, a + i) : xa;                                  \
    const __m512i y = s[1] ? Q8_512_LOAD(T, k, b + i) : yb;                                  \
    _mm512_mask_cvtepi32_storeu_epi8(o + i, k, q8_op16(&c, OP, x, y));                       \
  }
#define Q8_512_BODY(T)                                                                       \
  do {                                                                                       \
    const nb_quant_t *q = &st->q;                                                            \
    const T *a = in[0], *b = in[1];                                                          \
    T *o = out;                                                                              \
    q8_512_t c;                                                                              \
    c.off1 = _mm512_set1_epi32(q->off1); c.off2 = _mm512_set1_epi32(q->off2);                \
    c.zo = _mm512_set1_epi32(q->out_off);                                                    \
    c.lo = _mm512_set1_epi32(q->lo); c.hi = _mm512_set1_epi32(q->hi);                        \
    if (st->op == NB_MUL) {                                                                  \
      c.mul_left = q->so > 0;                                                                \
      c.ls = _mm_cvtsi32_si128(q->so > 0 ? q->so : 0);                                       \
      c.ro = q8_rs16(q->mo, q->so > 0 ? 0 : -q->so);                                         \
      c.r1 = c.r2 = c.ro;                                                                    \
    } else {                                                                                 \
      c.mul_left = false;                                                                    \
      c.ls = _mm_cvtsi32_si128(q->left_shift);                                               \
      c.r1 = q8_rs16(q->m1, -q->s1); c.r2 = q8_rs16(q->m2, -q->s2);                          \
      c.ro = q8_rs16(q->mo, -q->so);                                                         \
    }                                                                                        \
    const __m512i xa = _mm512_set1_epi32((int32_t)a[0]), yb = _mm512_set1_epi32((int32_t)b[0]); \
    if (st->op == NB_MUL) { Q8_512_LOOP(T, NB_MUL) }                                         \
    else if (st->op == NB_ADD) { Q8_512_LOOP(T, NB_ADD) }                                    \
    else { Q8_512_LOOP(T, NB_SUB) }                                                          \
  } while (0)

Q8_TARGET_512 static void q8_u8_512(const nb_state_t *st, void *out, const void *const *in,
                                    const int64_t *s, int64_t n) {
  Q8_512_BODY(uint8_t);
}
Q8_TARGET_512 static void q8_i8_512(const nb_state_t *st, void *out, const void *const *in,
                                    const int64_t *s, int64_t n) {
  Q8_512_BODY(int8_t);
}
#endif

static int q8_forced = -1;

static int q8_best(void) {
  int b = 0;
#if AR_HAVE_AVX2_CLONE
  if (ar__cpu_has_avx2_fma()) b = 1;
  if (b && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    b = 2;
#endif
  return b;
}

int ar__q8_set_isa(int isa) {
  const int best = q8_best();
  if (isa < 0) { q8_forced = -1; return best; }
  if (isa > best) return -1;
  q8_forced = isa;
  return isa;
}

static void q8_run(const nb_state_t *st, void *out, const void *const *in, const int64_t *s, int64_t n) {
#if AR_HAVE_AVX2_CLONE
  static int best = -1;   /* relaxed atomics: invokes on several threads may ask first */
  int b = __atomic_load_n(&best, __ATOMIC_RELAXED);
  if (b < 0) __atomic_store_n(&best, b = q8_best(), __ATOMIC_RELAXED);
  const int isa = q8_forced >= 0 ? q8_forced : b;
  if (isa == 2) {
    if (st->dtype == AR_DTYPE_INT8) q8_i8_512(st, out, in, s, n);
    else q8_u8_512(st, out, in, s, n);
    return;
  }
  if (isa == 1) {
    if (st->dtype == AR_DTYPE_INT8) q8_i8_avx2(st, out, in, s, n);
    else q8_u8_avx2(st, out, in, s, n);
    return;
  }
#endif
  if (st->dtype == AR_DTYPE_INT8) q8_i8(st, out, in, s, n);
  else q8_u8(st, out, in, s, n);
}

/* A uint8 / int8 comparison operand on the common scale (nb_plan_cmpq). */
static inline int32_t cmpq1(const nb_quant_t *q, int32_t x) { return ar_rdivpot(ar_srdhm((x + q->off1) * 256, q->m1), -q->s1); }
static inline int32_t cmpq2(const nb_quant_t *q, int32_t y) { return ar_rdivpot(ar_srdhm((y + q->off2) * 256, q->m2), -q->s2); }
#define CMPQ_CASES(TI)                                                                        \
  case NB_EQUAL:         NB_LOOP2(TI, bool, cmpq1(q, x) == cmpq2(q, y)); return;             \
  case NB_NOT_EQUAL:     NB_LOOP2(TI, bool, cmpq1(q, x) != cmpq2(q, y)); return;             \
  case NB_LESS:          NB_LOOP2(TI, bool, cmpq1(q, x) < cmpq2(q, y)); return;              \
  case NB_LESS_EQUAL:    NB_LOOP2(TI, bool, cmpq1(q, x) <= cmpq2(q, y)); return;             \
  case NB_GREATER:       NB_LOOP2(TI, bool, cmpq1(q, x) > cmpq2(q, y)); return;              \
  case NB_GREATER_EQUAL: NB_LOOP2(TI, bool, cmpq1(q, x) >= cmpq2(q, y)); return;

/* uint8 / int8: MAXIMUM, MINIMUM, the quantized comparisons and ADD, SUB, MUL (prepare refuses the
 * rest). */
static void run_u8(const nb_state_t *st, void *out, const void *const *in, const int64_t *s, int64_t n) {
  const nb_quant_t *q = &st->q;
  if (st->quantized) {
    switch (st->op) {
    CMPQ_CASES(uint8_t)
    default: q8_run(st, out, in, s, n); return;
    }
  }
  switch (st->op) {
  CMP_CASES(uint8_t)
  default: return;
  }
}
static void run_i8(const nb_state_t *st, void *out, const void *const *in, const int64_t *s, int64_t n) {
  const nb_quant_t *q = &st->q;
  if (st->quantized) {
    switch (st->op) {
    CMPQ_CASES(int8_t)
    default: q8_run(st, out, in, s, n); return;
    }
  }
  switch (st->op) {
  CMP_CASES(int8_t)
  default: return;
  }
}
/* int16: the quantized ADD, SUB, MUL of the int16x8 models, EQUAL / NOT_EQUAL on the scales (as
 * TFLite 2.19's, a16_equal_i16_6_scales), the other comparisons and MAXIMUM / MINIMUM on the codes
 * (prepare refuses the rest). */
static void run_i16(const nb_state_t *st, void *out, const void *const *in, const int64_t *s, int64_t n) {
  const nb_quant_t *q = &st->q;
  if (st->quantized && (st->op == NB_EQUAL || st->op == NB_NOT_EQUAL)) {
    switch (st->op) {
    CMPQ_CASES(int16_t)
    default: return;
    }
  }
  if (st->quantized) Q8_LOOPS(int16_t);
  switch (st->op) {
  CMP_CASES(int16_t)
  default: return;
  }
}
static void run_bool(const nb_state_t *st, void *out, const void *const *in, const int64_t *s, int64_t n) {
  switch (st->op) {
  case NB_EQUAL:     NB_LOOP2(bool, bool, x == y); return;
  case NB_NOT_EQUAL: NB_LOOP2(bool, bool, x != y); return;
  default: return;
  }
}

/* SELECT_V2: out = c ? x : y, copied as bytes of the element size. */
#define SEL_LOOP(T)                                                                          \
  do {                                                                                       \
    const bool *c = in[0];                                                                   \
    const T *x = in[1], *y = in[2];                                                          \
    T *o = out;                                                                              \
    for (int64_t i = 0; i < n; i++) o[i] = c[i * s[0]] ? x[i * s[1]] : y[i * s[2]];          \
  } while (0)

static void run_select(size_t es, void *out, const void *const *in, const int64_t *s, int64_t n) {
  switch (es) {
  case 1: SEL_LOOP(uint8_t); return;
  case 2: SEL_LOOP(uint16_t); return;
  case 4: SEL_LOOP(uint32_t); return;
  default: SEL_LOOP(uint64_t); return;
  }
}

/* Element size of input k (SELECT_V2's condition is bool). */
static size_t nb_es_in(const nb_state_t *st, int k) {
  return st->op == NB_SELECT && k == 0 ? 1 : ar_dtype_size(st->dtype);
}

/* One flat loop: n outputs, input k at p[k] with stride s[k] (0 or 1). */
static void nb_run(const nb_state_t *st, size_t es, void *o, const void *const *p, const int64_t *s,
                   int64_t n) {
  if (st->op == NB_SELECT) {
    run_select(es, o, p, s, n);
    return;
  }
  switch (st->dtype) {
  case AR_DTYPE_FLOAT32: run_f32(st, o, p, s, n); break;
  case AR_DTYPE_INT32: run_i32(st, o, p, s, n); break;
  case AR_DTYPE_INT64: run_i64(st, o, p, s, n); break;
  case AR_DTYPE_UINT8: run_u8(st, o, p, s, n); break;
  case AR_DTYPE_INT8: run_i8(st, o, p, s, n); break;
  case AR_DTYPE_INT16: run_i16(st, o, p, s, n); break;
  default: run_bool(st, o, p, s, n); break;
  }
}

/* Work units of an eval: each odometer step (one run, or with tiling the last two dims) is cut into
 * `parts` units - pieces of NB_PIECE elements of the run, or groups of `tile` rows - so that even a
 * single long run (two inputs of one shape) spreads over the thread pool. Every output element is
 * its own operation, so any cut gives the same values. */
#define NB_PIECE (16 * 1024)
/* The least elements worth a chunk of units of its own on the thread pool. */
#define NB_CHUNK_ELEMS (32 * 1024)

typedef struct {
  const nb_state_t *st;
  size_t es, es_in[NB_MAX_IN], es_out;
  const char *base[NB_MAX_IN];
  char *out;
  int32_t nd;                  /* odometer dims [0, nd) */
  int64_t step;                /* output elements per odometer step */
  int64_t inner, rows, tile;   /* tile > 0: rows of the last two dims in groups of tile */
  int64_t parts;               /* units per step */
  int64_t s_in[NB_MAX_IN];
  char *scratch;               /* slot s's tile copies at scratch + s * slot_bytes */
  uint64_t slot_bytes;
} nb_ctx_t;

/* Units [u0, u1) on slot `slot`'s scratch. */
static void nb_units(void *ctx, int32_t slot, int64_t u0, int64_t u1) {
  const nb_ctx_t *c = ctx;
  const nb_state_t *st = c->st;
  const nb_bcast_t *bc = &st->bc;
  const int n_in = bc->n_in;
  int64_t idx[NB_MAX_RANK] = {0}, off[NB_MAX_IN] = {0};
  int64_t rest = u0 / c->parts;
  for (int32_t d = c->nd - 1; d >= 0; d--) {
    idx[d] = rest % bc->dims[d];
    rest /= bc->dims[d];
    for (int k = 0; k < n_in; k++) off[k] += idx[d] * bc->st[k][d];
  }
  const void *q[NB_MAX_IN];
  int64_t copied = -1;         /* the step whose repeated rows the slot's scratch holds */
  for (int64_t u = u0; u < u1;) {
    const int64_t si = u / c->parts, part = u % c->parts;
    const void *p[NB_MAX_IN];
    for (int k = 0; k < n_in; k++) p[k] = c->base[k] + off[k] * (int64_t)c->es_in[k];
    char *o = c->out + si * c->step * (int64_t)c->es_out;
    if (c->tile == 0) {
      const int64_t j = part * NB_PIECE, len = AR_MIN(NB_PIECE, c->inner - j);
      for (int k = 0; k < n_in; k++) q[k] = (const char *)p[k] + j * c->s_in[k] * (int64_t)c->es_in[k];
      nb_run(st, c->es, o + j * (int64_t)c->es_out, q, c->s_in, len);
    } else {
      /* tile copies of each repeated row, then a group of tile rows */
      if (copied != si) {
        char *sp = c->scratch + (uint64_t)slot * c->slot_bytes;
        for (int k = 0; k < n_in; k++) {
          q[k] = p[k];
          if (!bc->rowrep[k]) continue;
          const size_t rb = (size_t)c->inner * c->es_in[k];
          for (int64_t r = 0; r < c->tile; r++) memcpy(sp + (size_t)r * rb, p[k], rb);
          q[k] = sp;
          sp += (size_t)c->tile * rb;
        }
        copied = si;
      }
      const int64_t j = part * c->tile;
      for (int k = 0; k < n_in; k++)
        if (!bc->rowrep[k] && c->s_in[k]) q[k] = (const char *)p[k] + j * c->inner * (int64_t)c->es_in[k];
      nb_run(st, c->es, o + j * c->inner * (int64_t)c->es_out, q, c->s_in,
             (c->rows - j < c->tile ? c->rows - j : c->tile) * c->inner);
    }
    if (++u % c->parts != 0) continue;
    for (int32_t d = c->nd - 1; d >= 0; d--) {
      for (int k = 0; k < n_in; k++) off[k] += bc->st[k][d];
      if (++idx[d] < bc->dims[d]) break;
      for (int k = 0; k < n_in; k++) off[k] -= bc->st[k][d] * bc->dims[d];
      idx[d] = 0;
    }
  }
  if (st->post_act && st->dtype == AR_DTYPE_FLOAT32) {
    /* the units' outputs are one contiguous range */
    const int64_t per = c->tile > 0 ? c->tile * c->inner : NB_PIECE;
    const int64_t e0 = (u0 / c->parts) * c->step + (u0 % c->parts) * per;
    const int64_t l = u1 - 1;
    const int64_t e1 = AR_MIN((l / c->parts) * c->step + (l % c->parts + 1) * per, (l / c->parts + 1) * c->step);
    ar_apply_activation((float *)(void *)c->out + e0, (size_t)(e1 - e0), st->act);
  }
}

/* A single run's elements are split by thread count at multiples of NB_SPLIT_ALIGN, none shorter
 * than NB_SPLIT_MIN_PART (about a microsecond of a quantized ADD). */
#define NB_SPLIT_ALIGN 64
#define NB_SPLIT_MIN_PART 4096

/* Elements [e0, e1) of an eval whose broadcast is one run (bc->rank == 1). */
static void nb_elems(void *ctx, int64_t e0, int64_t e1) {
  const nb_ctx_t *c = ctx;
  const nb_state_t *st = c->st;
  const void *q[NB_MAX_IN];
  for (int k = 0; k < st->bc.n_in; k++) q[k] = c->base[k] + e0 * c->s_in[k] * (int64_t)c->es_in[k];
  nb_run(st, c->es, c->out + e0 * (int64_t)c->es_out, q, c->s_in, e1 - e0);
  if (st->post_act && st->dtype == AR_DTYPE_FLOAT32)
    ar_apply_activation((float *)(void *)c->out + e0, (size_t)(e1 - e0), st->act);
}

/* Scratch bytes of one slot: the tile copies of the repeated rows. */
static uint64_t nb_slot_bytes(const nb_state_t *st) {
  uint64_t b = 0;
  if (st->bc.tile > 0)
    for (int k = 0; k < st->bc.n_in; k++)
      if (st->bc.rowrep[k]) b += (uint64_t)(st->bc.tile * st->bc.dims[st->bc.rank - 1]) * nb_es_in(st, k);
  return b;
}

static void nb_eval(const ar_node_t *node) {
  const nb_state_t *st = node->state;
  const nb_bcast_t *bc = &st->bc;
  if (bc->n == 0) return;
  nb_ctx_t c;
  const int n_in = bc->n_in;
  c.st = st;
  c.es = ar_dtype_size(st->dtype);
  for (int k = 0; k < NB_MAX_IN; k++) c.es_in[k] = nb_es_in(st, k);
  c.es_out = st->op >= NB_EQUAL && st->op <= NB_GREATER_EQUAL ? 1 : c.es;
  for (int k = 0; k < n_in; k++) c.base[k] = node->inputs[k]->data;
  c.out = node->outputs[0]->data;
  const int32_t last = bc->rank - 1;
  c.inner = bc->dims[last];
  c.tile = node->scratch ? bc->tile : 0;   /* a caller without scratch: one loop per run */
  /* The odometer walks dims [0, nd); each step is one run, or with tiling the last two dims. */
  c.nd = c.tile > 0 ? last - 1 : last;
  c.rows = c.tile > 0 ? bc->dims[last - 1] : 1;
  c.step = c.tile > 0 ? c.inner * c.rows : c.inner;
  c.parts = c.tile > 0 ? (c.rows + c.tile - 1) / c.tile : (c.inner + NB_PIECE - 1) / NB_PIECE;
  for (int k = 0; k < NB_MAX_IN; k++) c.s_in[k] = k < n_in ? bc->st[k][last] : 0;
  c.scratch = node->scratch;
  c.slot_bytes = nb_slot_bytes(st);
  if (bc->rank == 1) {
    /* One run (operands of one shape, or one of them a scalar): elements split by thread count
     * (every element is its own operation, so any cut gives the same values), so that each core
     * works on the part of the output the operator before this one wrote from it. */
    ar_parallel_for_split(node, bc->n, NB_SPLIT_ALIGN, NB_SPLIT_MIN_PART, nb_elems, &c);
    return;
  }
  const int32_t slots = c.tile > 0 && c.slot_bytes > 0 ? (int32_t)(node->scratch_bytes / c.slot_bytes) : 1;
  const int64_t units = bc->n / c.step * c.parts;
  ar_parallel_for_slots(node, units, ar_parallel_grain(units, AR_MAX(c.step / c.parts, 1), NB_CHUNK_ELEMS, 1),
                        slots, nb_units, &c);
}

int ar__nb_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  nb_state_t st;
  node->state_bytes = sizeof st;
  int rc = nb_plan(node, &st, msg, msg_bytes);
  if (rc) return rc;
  /* the tiled rows (nb_eval), one copy per thread */
  node->scratch_bytes = (uint64_t)ar_parallel_threads(node) * nb_slot_bytes(&st);
  return 0;
}

void ar__nb_init(ar_node_t *node) {
  nb_state_t st;
  if (nb_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

void ar__nb_eval(const ar_node_t *node) { nb_eval(node); }

/* TFLite SUB (builtin 41): act(x - y); float32, int32, int64, quantized uint8 / int8. */
static const ar_kernel_form_t sub_forms[] = {
  AR_KF(1, 4, FLOAT32, FLOAT32),
  AR_KF(1, 4, INT32, INT32),
  AR_KF(1, 4, INT64, INT64),
  AR_KF(1, 4, UINT8, UINT8),
  AR_KF(1, 4, INT8, INT8),
  AR_KF(1, 4, INT16, INT16),
};
const ar_kernel_t ar_kernel_sub = { "SUB", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(sub_forms, 0, -1) };
/* TFLite DIV (builtin 42): act(x / y); float32, int32 (x / 0 -> 0). */
static const ar_kernel_form_t div_forms[] = {
  AR_KF(1, 2, FLOAT32, FLOAT32),
  AR_KF(1, 2, INT32, INT32),
};
const ar_kernel_t ar_kernel_div = { "DIV", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(div_forms, 0, -1) };
/* TFLite FLOOR_DIV (builtin 90): floor(x / y) (float: quotient in double); float32, int32. */
static const ar_kernel_form_t floor_div_forms[] = {
  AR_KF(1, 2, FLOAT32, FLOAT32),
  AR_KF(1, 2, INT32, INT32),
};
const ar_kernel_t ar_kernel_floor_div = { "FLOOR_DIV", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(floor_div_forms, 0, -1) };
/* TFLite MAXIMUM / MINIMUM (builtins 55, 57): x > y ? x : y / x < y ? x : y (NaN in x yields y). */
static const ar_kernel_form_t maximum_forms[] = {   /* MAXIMUM and MINIMUM */
  AR_KF(1, 4, FLOAT32, FLOAT32),
  AR_KF(1, 4, INT32, INT32),
  AR_KF(1, 4, INT64, INT64),
  AR_KF(1, 4, UINT8, UINT8),
  AR_KF(1, 4, INT8, INT8),
  AR_KF(1, 4, INT16, INT16),
};
const ar_kernel_t ar_kernel_maximum = { "MAXIMUM", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(maximum_forms, 0, -1) };
const ar_kernel_t ar_kernel_minimum = { "MINIMUM", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(maximum_forms, 0, -1) };
/* TFLite SQUARED_DIFFERENCE (builtin 99): (x - y)^2; float32, int32. */
static const ar_kernel_form_t squared_difference_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, INT32, INT32),
};
const ar_kernel_t ar_kernel_squared_difference = { "SQUARED_DIFFERENCE", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(squared_difference_forms, 0, -1) };
/* TFLite POW (builtin 78): powf(x, y); int32 by repeated squaring. */
static const ar_kernel_form_t pow_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, INT32, INT32),
};
const ar_kernel_t ar_kernel_pow = { "POW", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(pow_forms, 0, -1) };
/* TFLite comparisons (builtins 71, 72, 58, 63, 61, 62): bool outputs; EQUAL and NOT_EQUAL also
 * take bool operands; uint8 / int8 (and int16 EQUAL / NOT_EQUAL) compared on their scales, the
 * other int16 comparisons as codes. */
static const ar_kernel_form_t equality_forms[] = {   /* EQUAL, NOT_EQUAL */
  AR_KF(1, 2, FLOAT32, BOOL),
  AR_KF(1, 2, INT32, BOOL),
  AR_KF(1, 2, INT64, BOOL),
  AR_KF(1, 2, BOOL, BOOL),
  AR_KF(1, 2, UINT8, BOOL),
  AR_KF(1, 2, INT8, BOOL),
  AR_KF(1, 2, INT16, BOOL),
};
static const ar_kernel_form_t ordering_forms[] = {   /* LESS, LESS_EQUAL, GREATER, GREATER_EQUAL */
  AR_KF(1, 2, FLOAT32, BOOL),
  AR_KF(1, 2, INT32, BOOL),
  AR_KF(1, 2, INT64, BOOL),
  AR_KF(1, 2, UINT8, BOOL),
  AR_KF(1, 2, INT8, BOOL),
  AR_KF(1, 2, INT16, BOOL),
};
const ar_kernel_t ar_kernel_equal = { "EQUAL", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(equality_forms, 0, -1) };
const ar_kernel_t ar_kernel_not_equal = { "NOT_EQUAL", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(equality_forms, 0, -1) };
const ar_kernel_t ar_kernel_less = { "LESS", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(ordering_forms, 0, -1) };
const ar_kernel_t ar_kernel_less_equal = { "LESS_EQUAL", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(ordering_forms, 0, -1) };
const ar_kernel_t ar_kernel_greater = { "GREATER", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(ordering_forms, 0, -1) };
const ar_kernel_t ar_kernel_greater_equal = { "GREATER_EQUAL", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(ordering_forms, 0, -1) };
/* TFLite SELECT_V2 (builtin 123): condition ? x : y with condition, x, y broadcast together. */
static const ar_kernel_form_t select_v2_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, INT32, INT32),
  AR_KF(1, 1, INT64, INT64),
  AR_KF(1, 1, UINT8, UINT8),
  AR_KF(1, 1, INT8, INT8),
  AR_KF(1, 1, INT16, INT16),
  AR_KF(1, 1, BOOL, BOOL),
};
const ar_kernel_t ar_kernel_select_v2 = { "SELECT_V2", ar__nb_prepare, ar__nb_init, nb_eval,
  AR_KSUPPORT(select_v2_forms, 1, -1) };
