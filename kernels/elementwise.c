/* elementwise.c - TFLite ADD, MUL, PRELU (binary, NumPy broadcasting) and RELU, RELU6, LOGISTIC,
 * HARD_SWISH (unary), float32.
 *
 * Binary ops follow TFLite's broadcasting rules (shapes right-aligned, each dim equal or 1, up to
 * rank 6 as BroadcastBinaryFunction6DSlow). prepare collapses the broadcast into at most 6 runs of
 * dims with the same "varies / repeats" pattern per input, so the common cases become flat loops:
 * equal shapes -> one contiguous loop; [1,H,W,C] * [1,1,1,C] -> H*W rows of a C-long loop against
 * the same C values; a scalar -> one loop against a constant. The innermost loop always has input
 * strides 0 or 1, so GCC vectorizes it.
 *
 * In-place: the planner may hand an output the bytes of one input of the same (full) shape. Every
 * loop here reads out[i]'s operands before writing out[i] and touches no other output index, so
 * out == in gives the result of separate buffers.
 */
#include <math.h>
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_qparams.h"
#include "kernels/conv_util.h"
#include "kernels/ar_parallel.h"

#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>
#endif

#define AR_BCAST_MAX_RANK 6
/* A repeated row of at most this many elements is copied into a stack buffer of
 * AR_BIN_REP_FLOATS floats, so one flat loop covers many rows (binary_span_body). */
#define AR_BIN_REP_ROW_MAX 128
#define AR_BIN_REP_FLOATS 1024

enum { BIN_ADD, BIN_MUL, BIN_PRELU };

typedef struct {
  int op;
  float lo, hi;           /* fused activation clamp */
  bool post_act;          /* TANH / SIGN_BIT applied after the loop */
  ar_activation_t act;
  int64_t n;              /* output elements */
  int32_t rank;           /* collapsed rank, >= 1 */
  int64_t dims[AR_BCAST_MAX_RANK];
  int64_t sa[AR_BCAST_MAX_RANK], sb[AR_BCAST_MAX_RANK];  /* element strides, 0 = repeated */
  /* Rank 2 with a short row repeated against a contiguous operand ([1,H,W,C] * [C]): 1 when b
   * is the row, 2 when a is; 0 otherwise (binary_span_body). */
  int rowrep;
  /* ADD with a folded channel PAD (node->folded_pad_channels): input cpad_slot holds cfull - cpad
   * channels per pixel, the other input and the output cfull; 0 otherwise (cpad_span). */
  int32_t cpad, cpad_slot;
  int64_t cfull;
} binary_state_t;

/* Infer the broadcast output shape and the collapsed loop nest. */
static int binary_plan(const ar_node_t *node, int op, binary_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *a = node->inputs[0], *b = node->inputs[1], *o = node->outputs[0];
  /* A folded channel PAD: its input stands for the padded tensor, of the other input's shape. */
  ar_tview_t padded;
  const int32_t cpad = op == BIN_ADD ? node->folded_pad_channels : 0, cs = node->folded_pad_slot;
  if (cpad > 0) {
    const ar_tview_t *x = cs == 0 ? a : b, *y = cs == 0 ? b : a;
    if (cs < 0 || cs > 1 || x->rank != 4 || y->rank != 4 || (int64_t)x->dims[3] + cpad != y->dims[3] ||
        memcmp(x->dims, y->dims, 3 * sizeof(int32_t)) != 0) {
      char s1[96], s2[96];
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input %d %s with %d folded zero channels does not "
                      "match input %d %s", (int)cs, ar_k_dims_str(s1, sizeof s1, x->rank, x->dims), (int)cpad,
                      (int)(1 - cs), ar_k_dims_str(s2, sizeof s2, y->rank, y->dims));
    }
    padded = *x;
    padded.dims[3] = y->dims[3];
    padded.bytes = y->bytes;
    if (cs == 0) a = &padded;
    else b = &padded;
  }
  if ((rc = ar_k_check_dtype(node, a, "input 0", AR_DTYPE_FLOAT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, b, "input 1", AR_DTYPE_FLOAT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, o, "output 0", AR_DTYPE_FLOAT32, msg, msg_bytes)))
    return rc;
  memset(st, 0, sizeof *st);
  st->op = op;
  if (cpad > 0) {
    st->cpad = cpad;
    st->cpad_slot = cs;
    st->cfull = o->dims[3];
  }
  st->act = AR_ACT_NONE;
  if (op != BIN_PRELU && node->options) st->act = node->options->elementwise.activation;
  if ((rc = ar_k_activation(node, st->act, &st->lo, &st->hi, &st->post_act, msg, msg_bytes)))
    return rc;

  int32_t r = AR_MAX(a->rank, b->rank);
  if (r > AR_BCAST_MAX_RANK)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "broadcast of rank %d (max %d)", (int)r,
                    AR_BCAST_MAX_RANK);
  int32_t od[AR_BCAST_MAX_RANK], ad[AR_BCAST_MAX_RANK], bd[AR_BCAST_MAX_RANK];
  for (int32_t i = 0; i < r; i++) {
    int32_t ia = i - (r - a->rank), ib = i - (r - b->rank);
    ad[i] = ia >= 0 ? a->dims[ia] : 1;
    bd[i] = ib >= 0 ? b->dims[ib] : 1;
    if (ad[i] != bd[i] && ad[i] != 1 && bd[i] != 1) {
      char s1[96], s2[96];
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input shapes %s and %s do not broadcast",
                      ar_k_dims_str(s1, sizeof s1, a->rank, a->dims),
                      ar_k_dims_str(s2, sizeof s2, b->rank, b->dims));
    }
    od[i] = ad[i] == 1 ? bd[i] : ad[i];
  }
  if ((rc = ar_k_check_output_shape(node, r, od, msg, msg_bytes))) return rc;

  /* Collapse: drop size-1 output dims, merge neighbours with the same (a varies, b varies). */
  int32_t nr = 0;
  bool fa[AR_BCAST_MAX_RANK], fb[AR_BCAST_MAX_RANK];
  st->n = 1;
  for (int32_t i = 0; i < r; i++) {
    st->n *= od[i];
    if (od[i] == 1) continue;
    bool va = ad[i] != 1, vb = bd[i] != 1;
    if (nr > 0 && fa[nr - 1] == va && fb[nr - 1] == vb) {
      st->dims[nr - 1] *= od[i];
    } else {
      fa[nr] = va; fb[nr] = vb; st->dims[nr] = od[i]; nr++;
    }
  }
  if (nr == 0) { st->dims[0] = 1; fa[0] = fb[0] = true; nr = 1; }
  st->rank = nr;
  int64_t ea = 1, eb = 1;
  for (int32_t i = nr - 1; i >= 0; i--) {
    st->sa[i] = fa[i] ? ea : 0;
    st->sb[i] = fb[i] ? eb : 0;
    if (fa[i]) ea *= st->dims[i];
    if (fb[i]) eb *= st->dims[i];
  }
  if (nr == 2 && st->dims[1] <= AR_BIN_REP_ROW_MAX && st->sa[1] == 1 && st->sb[1] == 1)
    st->rowrep = st->sb[0] == 0 && st->sa[0] == st->dims[1] ? 1 : st->sa[0] == 0 && st->sb[0] == st->dims[1] ? 2 : 0;
  return 0;
}

/* One innermost run: n outputs, input strides (1|0, 1|0). Separate loops per stride pattern so
 * each is a plain vectorizable loop. `ivdep`: out may equal a or b (in-place), which is no
 * loop-carried dependence since out[i] only depends on index i; without the pragma GCC guards the
 * vector loop with overlap checks and, when they fail (in-place, or buffers it cannot tell apart),
 * falls back to a scalar loop with a branch per element. */
#define AR_IVDEP _Pragma("GCC ivdep")
#define AR_BIN_LOOPS(EXPR)                                                                   \
  do {                                                                                       \
    if (sa && sb) { AR_IVDEP for (int64_t i = 0; i < n; i++) { float x = a[i], y = b[i]; out[i] = ar_k_clamp(EXPR, lo, hi); } } \
    else if (sa)  { float y = b[0]; AR_IVDEP for (int64_t i = 0; i < n; i++) { float x = a[i]; out[i] = ar_k_clamp(EXPR, lo, hi); } } \
    else if (sb)  { float x = a[0]; AR_IVDEP for (int64_t i = 0; i < n; i++) { float y = b[i]; out[i] = ar_k_clamp(EXPR, lo, hi); } } \
    else          { float x = a[0], y = b[0]; float v = ar_k_clamp(EXPR, lo, hi); for (int64_t i = 0; i < n; i++) out[i] = v; } \
  } while (0)

/* x >= 0 ? x : alpha * x, written as pos + alpha * neg with pos/neg plain selects: GCC (under the
 * default -ftrapping-math) turns a select whose arm multiplies into a per-element branch, which
 * mispredicts on activations of random sign and is 10x slower; this form vectorizes. Equal to
 * TFLite's value for finite alpha (x + alpha*0 == x; NaN x stays NaN via neg); only -0 becomes +0. */
static inline float prelu1(float x, float alpha) {
  float pos = x >= 0.0f ? x : 0.0f;
  float neg = x >= 0.0f ? 0.0f : x;
  return pos + alpha * neg;
}

static AR_ALWAYS_INLINE void binary_run(int op, float *out, const float *a, int64_t sa,
                                        const float *b, int64_t sb, int64_t n, float lo, float hi) {
  switch (op) {
  case BIN_ADD: AR_BIN_LOOPS(x + y); break;
  case BIN_MUL: AR_BIN_LOOPS(x * y); break;
  /* PRELU (y is alpha): prelu1 selects the multiplier, not the product, so GCC vectorizes it. */
  default:      AR_BIN_LOOPS(prelu1(x, y)); break;
  }
}

/* Outputs [i0, i1) of the collapsed loop nest, in runs of at most st->dims[rank-1] outputs (a
 * run = one innermost loop; the first and last may be partial): the odometer over the outer dims
 * starts at i0's run, offsets into a and b kept incrementally. Compiled for the baseline, AVX2
 * and AVX-512F (the same expressions per element in each, so the same values: PRELU's alpha * neg
 * with neg = 0 or x rounds alike fused or not) and picked at run time by binary_span; a run is
 * often one pixel's channels (PRELU's alpha per channel), so the whole loop is cloned rather than
 * each run. Each output is computed the same way whichever range holds it. */
static AR_ALWAYS_INLINE void binary_span_body(const binary_state_t *st, const float *a,
                                              const float *b, float *out, int64_t i0, int64_t i1) {
  if (st->rowrep) {
    /* [rows, inner] against one repeated row: the row copied k + 1 times, then flat loops of
     * k * inner elements, each starting at its phase in the copies (a per-row loop of 16 floats
     * cost more in call and set-up than in arithmetic). The same x op y per element. */
    const int64_t inner = st->dims[1], k = AR_BIN_REP_FLOATS / inner - 1, len = k * inner;
    float rep[AR_BIN_REP_FLOATS] __attribute__((aligned(64)));
    const float *row = st->rowrep == 1 ? b : a;
    const int64_t fill = AR_MIN(len, i1 - i0) + inner;
    for (int64_t j = 0; j < fill; j += inner) memcpy(rep + j, row, (size_t)inner * sizeof(float));
    for (int64_t i = i0; i < i1; i += len) {
      const int64_t m = AR_MIN(len, i1 - i);
      const float *r = rep + i % inner;
      if (st->rowrep == 1) binary_run(st->op, out + i, a + i, 1, r, 1, m, st->lo, st->hi);
      else binary_run(st->op, out + i, r, 1, b + i, 1, m, st->lo, st->hi);
    }
    return;
  }
  const int32_t last = st->rank - 1;
  const int64_t inner = st->dims[last];
  const int64_t r0 = i0 / inner;
  int64_t idx[AR_BCAST_MAX_RANK] = {0};
  int64_t oa = 0, ob = 0, q = r0;
  for (int32_t d = last - 1; d >= 0; d--) {
    idx[d] = q % st->dims[d];
    q /= st->dims[d];
    oa += idx[d] * st->sa[d];
    ob += idx[d] * st->sb[d];
  }
  const int64_t sa = st->sa[last], sb = st->sb[last];
  for (int64_t r = r0, lo = i0 - r0 * inner;; r++, lo = 0) {
    const int64_t hi = AR_MIN(inner, i1 - r * inner);
    binary_run(st->op, out + r * inner + lo, a + oa + lo * sa, sa, b + ob + lo * sb, sb, hi - lo,
               st->lo, st->hi);
    if (hi < inner || (r + 1) * inner >= i1) break;
    for (int32_t d = last - 1; d >= 0; d--) {
      oa += st->sa[d]; ob += st->sb[d];
      if (++idx[d] < st->dims[d]) break;
      oa -= st->sa[d] * st->dims[d]; ob -= st->sb[d] * st->dims[d];
      idx[d] = 0;
    }
  }
}
static void binary_span_base(const binary_state_t *st, const float *a, const float *b, float *out,
                             int64_t i0, int64_t i1) {
  binary_span_body(st, a, b, out, i0, i1);
}
#if AR_HAVE_AVX2_CLONE
AR_TARGET_AVX2 static void binary_span_avx2(const binary_state_t *st, const float *a,
                                            const float *b, float *out, int64_t i0, int64_t i1) {
  binary_span_body(st, a, b, out, i0, i1);
}
AR_TARGET_AVX512 static void binary_span_avx512(const binary_state_t *st, const float *a,
                                                const float *b, float *out, int64_t i0, int64_t i1) {
  binary_span_body(st, a, b, out, i0, i1);
}
#endif
static void binary_span(const binary_state_t *st, const float *a, const float *b, float *out,
                        int64_t i0, int64_t i1) {
#if AR_HAVE_AVX2_CLONE
  const int isa = ar__f32_isa();
  if (isa >= AR_ISA_AVX512) { binary_span_avx512(st, a, b, out, i0, i1); return; }
  if (isa >= AR_ISA_AVX2) { binary_span_avx2(st, a, b, out, i0, i1); return; }
#endif
  binary_span_base(st, a, b, out, i0, i1);
}

/* ADD with a folded channel PAD: pixels [p0, p1), the full operand `a` (cfull channels a pixel)
 * plus `x` (cfull - cpad channels) and 0.0f for the rest, the sum clamped - per element the
 * same expression binary_run gives the padded tensor (float addition commutes bit for bit). */
static AR_ALWAYS_INLINE void cpad_span_body(const binary_state_t *st, const float *a, const float *x,
                                            float *out, int64_t p0, int64_t p1) {
  const int64_t c2 = st->cfull, c1 = c2 - st->cpad;
  const float lo = st->lo, hi = st->hi;
  for (int64_t p = p0; p < p1; p++) {
    const float *ap = a + p * c2, *xp = x + p * c1;
    float *op = out + p * c2;
    AR_IVDEP for (int64_t c = 0; c < c1; c++) op[c] = ar_k_clamp(ap[c] + xp[c], lo, hi);
    AR_IVDEP for (int64_t c = c1; c < c2; c++) op[c] = ar_k_clamp(ap[c] + 0.0f, lo, hi);
  }
}
static void cpad_span_base(const binary_state_t *st, const float *a, const float *x, float *out,
                           int64_t p0, int64_t p1) {
  cpad_span_body(st, a, x, out, p0, p1);
}
#if AR_HAVE_AVX2_CLONE
AR_TARGET_AVX2 static void cpad_span_avx2(const binary_state_t *st, const float *a, const float *x,
                                          float *out, int64_t p0, int64_t p1) {
  cpad_span_body(st, a, x, out, p0, p1);
}
AR_TARGET_AVX512 static void cpad_span_avx512(const binary_state_t *st, const float *a, const float *x,
                                              float *out, int64_t p0, int64_t p1) {
  cpad_span_body(st, a, x, out, p0, p1);
}
#endif
static void cpad_span(const binary_state_t *st, const float *a, const float *x, float *out, int64_t p0,
                      int64_t p1) {
#if AR_HAVE_AVX2_CLONE
  const int isa = ar__f32_isa();
  if (isa >= AR_ISA_AVX512) { cpad_span_avx512(st, a, x, out, p0, p1); return; }
  if (isa >= AR_ISA_AVX2) { cpad_span_avx2(st, a, x, out, p0, p1); return; }
#endif
  cpad_span_base(st, a, x, out, p0, p1);
}

/* ADD and MUL on int32 / int64 operands and on quantized uint8 / int8 run binary.c's generic
 * broadcast (integer clamp / TFLite's fixed-point rescale); float32 stays on the vectorized path
 * here. */
static bool int_operands(const ar_node_t *node) {
  return node->n_inputs >= 1 && node->inputs[0] && node->inputs[0]->dtype != AR_DTYPE_FLOAT32;
}

/* Float passes split over the node's pool with ar_parallel_for_split (every output element is
 * computed the same way whichever piece holds it): pieces start at multiples of AR_ELEM_ALIGN
 * elements (whole cache lines, and the same vector / scalar-tail split of each element as one
 * pass over the whole tensor), none smaller than AR_ELEM_MIN_PART elements (about a microsecond
 * of work against the pool's hand-off of about half of one). */
#define AR_ELEM_ALIGN 64
#define AR_ELEM_MIN_PART 4096

typedef struct binary_job {
  const binary_state_t *st;
  const float *a, *b;
  float *out;
} binary_job_t;

/* Outputs [i0, i1), then their post activation. */
static void binary_range(void *ctx, int64_t i0, int64_t i1) {
  const binary_job_t *j = ctx;
  binary_span(j->st, j->a, j->b, j->out, i0, i1);
  if (j->st->post_act) ar_apply_activation(j->out + i0, (size_t)(i1 - i0), j->st->act);
}

/* Pixels [p0, p1) of an ADD with a folded channel PAD (a: the full operand, b: the PAD's input). */
static void cpad_range(void *ctx, int64_t p0, int64_t p1) {
  const binary_job_t *j = ctx;
  cpad_span(j->st, j->a, j->b, j->out, p0, p1);
  if (j->st->post_act)
    ar_apply_activation(j->out + p0 * j->st->cfull, (size_t)((p1 - p0) * j->st->cfull), j->st->act);
}

static void binary_eval(const ar_node_t *node) {
  if (node->op != AR_OP_PRELU && int_operands(node)) { ar__nb_eval(node); return; }
  const binary_state_t *st = node->state;
  if (st->n == 0) return;
  if (st->cpad > 0) {
    const int32_t s = st->cpad_slot;
    binary_job_t j = {.st = st, .a = node->inputs[1 - s]->data, .b = node->inputs[s]->data,
                      .out = node->outputs[0]->data};
    ar_parallel_for_split(node, st->n / st->cfull, 1, AR_MAX(1, AR_ELEM_MIN_PART / st->cfull), cpad_range, &j);
    return;
  }
  binary_job_t j = {.st = st, .a = node->inputs[0]->data, .b = node->inputs[1]->data,
                    .out = node->outputs[0]->data};
  ar_parallel_for_split(node, st->n, AR_ELEM_ALIGN, AR_ELEM_MIN_PART, binary_range, &j);
}

static int add_prepare(ar_node_t *node, char *msg, size_t n) {
  if (int_operands(node)) return ar__nb_prepare(node, msg, n);
  binary_state_t st;
  int rc = binary_plan(node, BIN_ADD, &st, msg, n);
  node->state_bytes = sizeof st;
  return rc;
}
static int mul_prepare(ar_node_t *node, char *msg, size_t n) {
  if (int_operands(node)) return ar__nb_prepare(node, msg, n);
  binary_state_t st;
  int rc = binary_plan(node, BIN_MUL, &st, msg, n);
  node->state_bytes = sizeof st;
  return rc;
}
static bool prelu_q8(const ar_node_t *node) { return node->inputs[0] && ar_k_is_q8(node->inputs[0]->dtype); }
static int prelu_prepare(ar_node_t *node, char *msg, size_t n) {
  /* uint8 / int8: kernels/qact.c */
  if (node->n_inputs == 2 && node->inputs[1] && prelu_q8(node)) return ar__qprelu_prepare(node, msg, n);
  binary_state_t st;
  int rc = binary_plan(node, BIN_PRELU, &st, msg, n);
  node->state_bytes = sizeof st;
  return rc;
}
static void binary_init(ar_node_t *node) {
  if (node->op != AR_OP_PRELU && int_operands(node)) { ar__nb_init(node); return; }
  binary_state_t st;
  int op = node->op == AR_OP_ADD ? BIN_ADD : node->op == AR_OP_MUL ? BIN_MUL : BIN_PRELU;
  if (binary_plan(node, op, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

/* TFLite ADD (builtin 0): out = act(a + b), NumPy broadcasting; float32, int32, int64, uint8 /
 * int8 (quantized, binary.c). */
static const ar_kernel_form_t add_forms[] = {
  AR_KF(1, 4, FLOAT32, FLOAT32),
  AR_KF(1, 4, INT32, INT32),
  AR_KF(1, 4, INT64, INT64),
  AR_KF(1, 4, UINT8, UINT8),
  AR_KF(1, 4, INT8, INT8),
  AR_KF(1, 4, INT16, INT16),
};
const ar_kernel_t ar_kernel_add = { "ADD", add_prepare, binary_init, binary_eval,
  AR_KSUPPORT(add_forms, 0, -1) };
/* TFLite MUL (builtin 18): out = act(a * b), NumPy broadcasting; float32, int32, int64, uint8 /
 * int8 (quantized, binary.c). */
static const ar_kernel_form_t mul_forms[] = {
  AR_KF(1, 5, FLOAT32, FLOAT32),
  AR_KF(1, 5, INT32, INT32),
  AR_KF(1, 5, INT64, INT64),
  AR_KF(1, 5, UINT8, UINT8),
  AR_KF(1, 5, INT8, INT8),
  AR_KF(1, 5, INT16, INT16),
};
const ar_kernel_t ar_kernel_mul = { "MUL", mul_prepare, binary_init, binary_eval,
  AR_KSUPPORT(mul_forms, 0, -1) };
/* TFLite PRELU (builtin 54): out = x >= 0 ? x : alpha * x, alpha broadcast against x. */
static void prelu_init(ar_node_t *node) {
  if (prelu_q8(node)) ar__qprelu_init(node);
  else binary_init(node);
}
static void prelu_eval(const ar_node_t *node) {
  if (prelu_q8(node)) ar__qprelu_eval(node);
  else binary_eval(node);
}
static const ar_kernel_form_t prelu_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, UINT8, UINT8),
  AR_KF(1, 1, INT8, INT8),
};
const ar_kernel_t ar_kernel_prelu = { "PRELU", prelu_prepare, prelu_init, prelu_eval,
  AR_KSUPPORT(prelu_forms, 0, 1) };

/* ---- Unary ops: same shape in and out, out[i] depends on in[i] only. ----
 *
 * On uint8 / int8 (TFLite activations.cc):
 *   RELU, RELU6   ReluX (also on int16, per element): out = clamp(z_out +
 *                 MultiplyByQuantizedMultiplier(q - z_in, s_in / s_out),
 *                 lo, hi) with lo = max(type min, z_out + roundf(0 / s_out)), hi = type max (RELU) or
 *                 min(type max, z_out + roundf(6 / s_out)) (RELU6).
 *   LOGISTIC      a 256-entry table made at init exactly as TFLite's PopulateLookupTable (the builtin
 *                 kernel's path): dequantize in float32, 1 / (1 + expf(-x)), round(y * 256) + z_out,
 *                 clamped; output scale 1/256 and zero point 0 (uint8) / -128 (int8) required. */

typedef struct {
  bool quantized;
  bool is_signed;
  bool int16;                       /* RELU / RELU6 on int16: computed per element, no table */
  int32_t in_zp, out_zp, m;         /* RELU/RELU6 rescale */
  int shift;
  int32_t lo, hi;
  uint8_t table[256];               /* output byte per input byte (as unsigned index) */
} unary_q_t;

static int unary_plan(ar_node_t *node, unary_q_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  memset(st, 0, sizeof *st);
  if (ar_k_is_q8(in->dtype) && node->op != AR_OP_HARD_SWISH) {
    if ((rc = ar_k_check_dtype(node, o, "output 0", in->dtype, msg, msg_bytes))) return rc;
    float si = 0, so = 0;
    int32_t zi = 0, zo = 0;
    if ((rc = ar_k_qparams(node, in, "input 0", &si, &zi, msg, msg_bytes)) ||
        (rc = ar_k_qparams(node, o, "output 0", &so, &zo, msg, msg_bytes)))
      return rc;
    st->quantized = true;
    st->is_signed = in->dtype == AR_DTYPE_INT8;
    st->in_zp = zi; st->out_zp = zo;
    const int32_t tmin = st->is_signed ? -128 : 0, tmax = st->is_signed ? 127 : 255;
    if (node->op == AR_OP_LOGISTIC) {
      if (so != 1.0f / 256.0f || zo != tmin)
        return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "output quantization (scale %g, zero "
                        "point %d) must be scale 1/256, zero point %d", (double)so, (int)zo, (int)tmin);
      const float inv = 1.0f / so;
      for (int32_t v = tmin; v <= tmax; v++) {
        const float x = si * (float)(v - zi);
        const float y = 1.0f / (1.0f + expf(-x));
        const float r = roundf(y * inv);
        int32_t qv = (int32_t)(r + (float)zo);
        qv = qv < tmin ? tmin : qv > tmax ? tmax : qv;
        st->table[(uint8_t)v] = (uint8_t)qv;
      }
    } else {   /* RELU, RELU6 */
      /* TFLite ReluPrepare: s_in / s_out divided in float32, then widened. */
      ar_quantize_multiplier((double)(si / so), &st->m, &st->shift);
      int32_t lo = zo + (int32_t)roundf(0.0f / so);
      st->lo = lo > tmin ? lo : tmin;
      st->hi = tmax;
      if (node->op == AR_OP_RELU6) {
        int32_t hi = zo + (int32_t)roundf(6.0f / so);
        st->hi = hi < tmax ? hi : tmax;
      }
      for (int32_t v = tmin; v <= tmax; v++) {   /* a function of the input byte: tabulated */
        int32_t r = zo + ar_mbqm(v - zi, st->m, st->shift);
        r = r < st->lo ? st->lo : r > st->hi ? st->hi : r;
        st->table[(uint8_t)v] = (uint8_t)r;
      }
    }
  } else if (in->dtype == AR_DTYPE_INT16 && (node->op == AR_OP_RELU || node->op == AR_OP_RELU6)) {
    /* int16x8 models: TFLite's ReluX on int16 (the same rescale and clamp, per element) */
    if ((rc = ar_k_check_dtype(node, o, "output 0", AR_DTYPE_INT16, msg, msg_bytes))) return rc;
    float si = 0, so = 0;
    int32_t zi = 0, zo = 0;
    if ((rc = ar_k_qparams(node, in, "input 0", &si, &zi, msg, msg_bytes)) ||
        (rc = ar_k_qparams(node, o, "output 0", &so, &zo, msg, msg_bytes)))
      return rc;
    st->quantized = st->int16 = st->is_signed = true;
    st->in_zp = zi; st->out_zp = zo;
    ar_quantize_multiplier((double)(si / so), &st->m, &st->shift);
    const int32_t lo = zo + (int32_t)roundf(0.0f / so);
    st->lo = lo > INT16_MIN ? lo : INT16_MIN;
    st->hi = INT16_MAX;
    if (node->op == AR_OP_RELU6) {
      const int32_t hi = zo + (int32_t)roundf(6.0f / so);
      st->hi = hi < INT16_MAX ? hi : INT16_MAX;
    }
  } else if ((rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_FLOAT32, msg, msg_bytes)) ||
             (rc = ar_k_check_dtype(node, o, "output 0", AR_DTYPE_FLOAT32, msg, msg_bytes))) {
    return rc;
  }
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

static int unary_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  unary_q_t st;
  int rc = unary_plan(node, &st, msg, msg_bytes);
  node->state_bytes = rc == 0 && st.quantized ? sizeof st : 0;
  return rc;
}

static void unary_init(ar_node_t *node) {
  unary_q_t st;
  if (node->state_bytes && unary_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

/* ---- 256-entry byte tables: out[i] = table[in[i]] ----
 * The portable loop does one byte per load; with AVX-512 VBMI (picked at run time) vpermi2b looks
 * 64 bytes up at once in each 128-entry half of the table (4 zmm), bit 7 of the byte picks the half.
 * Both give the same bytes; out == in is fine (each block is read before it is written). */

static int lut8_forced = -1;

static int lut8_best(void) {
#if AR_HAVE_AVX2_CLONE
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vbmi") ? 1 : 0;
#else
  return 0;
#endif
}

int ar__lut8_set_isa(int isa) {
  const int best = lut8_best();
  if (isa < 0) { lut8_forced = -1; return best; }
  if (isa > best) return -1;
  lut8_forced = isa;
  return isa;
}

#if AR_HAVE_AVX2_CLONE
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void lut8_vbmi(const uint8_t *table, const uint8_t *in, uint8_t *out, int64_t n) {
  const __m512i t0 = _mm512_loadu_si512((const void *)table), t1 = _mm512_loadu_si512((const void *)(table + 64));
  const __m512i t2 = _mm512_loadu_si512((const void *)(table + 128)), t3 = _mm512_loadu_si512((const void *)(table + 192));
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i x = _mm512_loadu_si512((const void *)(in + i));
    const __m512i lo = _mm512_permutex2var_epi8(t0, x, t1), hi = _mm512_permutex2var_epi8(t2, x, t3);
    _mm512_storeu_si512((void *)(out + i), _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi));
  }
  if (i < n) {
    const __mmask64 k = (__mmask64)(~0ull >> (64 - (n - i)));   /* n - i in [1, 63] */
    const __m512i x = _mm512_maskz_loadu_epi8(k, in + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, x, t1), hi = _mm512_permutex2var_epi8(t2, x, t3);
    _mm512_mask_storeu_epi8(out + i, k, _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi));
  }
}
#endif

void ar__lut8(const uint8_t *table, const uint8_t *in, uint8_t *out, int64_t n) {
  static int best = -1;   /* relaxed atomics: invokes on several threads may ask first */
  int b = __atomic_load_n(&best, __ATOMIC_RELAXED);
  if (b < 0) __atomic_store_n(&best, b = lut8_best(), __ATOMIC_RELAXED);
  const int isa = lut8_forced >= 0 ? lut8_forced : b;
#if AR_HAVE_AVX2_CLONE
  if (isa == 1) { lut8_vbmi(table, in, out, n); return; }
#else
  (void)isa;
#endif
  for (int64_t i = 0; i < n; i++) out[i] = table[in[i]];
}

typedef struct {
  const uint8_t *table, *in;
  uint8_t *out;
} lut8_ctx_t;

static void lut8_range(void *ctx, int64_t i0, int64_t i1) {
  const lut8_ctx_t *c = ctx;
  ar__lut8(c->table, c->in + i0, c->out + i0, i1 - i0);
}

void ar__lut8_node(const ar_node_t *node, const uint8_t *table, const uint8_t *in, uint8_t *out,
                   int64_t n) {
  const lut8_ctx_t c = {table, in, out};
  ar_parallel_for(node, n, ar_parallel_grain(n, 1, AR_LUT8_CHUNK_BYTES, 64), lut8_range, (void *)&c);
}

/* The quantized forms; true when the node is one (state set at init). */
static bool unary_q_eval(const ar_node_t *node) {
  if (!node->state_bytes) return false;
  const unary_q_t *st = node->state;
  if (st->int16) {
    const int16_t *in = node->inputs[0]->data;
    int16_t *out = node->outputs[0]->data;
    const int64_t n = ar_k_elements(node->inputs[0]);
    for (int64_t i = 0; i < n; i++) {
      int32_t r = st->out_zp + ar_mbqm((int32_t)in[i] - st->in_zp, st->m, st->shift);
      out[i] = (int16_t)(r < st->lo ? st->lo : r > st->hi ? st->hi : r);
    }
    return true;
  }
  ar__lut8_node(node, st->table, node->inputs[0]->data, node->outputs[0]->data,
                ar_k_elements(node->inputs[0]));
  return true;
}

/* The float RELU / RELU6 / HARD_SWISH passes over elements [0, n), cloned for the baseline, AVX2
 * and AVX-512F like binary_span (per element, the same value on every path). */
enum { UN_RELU, UN_RELU6, UN_HARD_SWISH };
static AR_ALWAYS_INLINE void unary_f32_body(int op, const float *in, float *out, int64_t n) {
  switch (op) {
  case UN_RELU:
    AR_IVDEP for (int64_t i = 0; i < n; i++) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    break;
  case UN_RELU6:
    AR_IVDEP for (int64_t i = 0; i < n; i++) {
      float v = in[i] > 0.0f ? in[i] : 0.0f;
      out[i] = v < 6.0f ? v : 6.0f;
    }
    break;
  default:   /* TFLite HARD_SWISH: x * relu6(x + 3) / 6 */
    AR_IVDEP for (int64_t i = 0; i < n; i++) {
      float x = in[i];
      float r = x + 3.0f;
      r = r > 0.0f ? r : 0.0f;
      r = r < 6.0f ? r : 6.0f;
      out[i] = x * r / 6.0f;
    }
    break;
  }
}
static void unary_f32_base(int op, const float *in, float *out, int64_t n) {
  unary_f32_body(op, in, out, n);
}
#if AR_HAVE_AVX2_CLONE
AR_TARGET_AVX2 static void unary_f32_avx2(int op, const float *in, float *out, int64_t n) {
  unary_f32_body(op, in, out, n);
}
AR_TARGET_AVX512 static void unary_f32_avx512(int op, const float *in, float *out, int64_t n) {
  unary_f32_body(op, in, out, n);
}
#endif
static void unary_f32(int op, const float *in, float *out, int64_t n) {
#if AR_HAVE_AVX2_CLONE
  const int isa = ar__f32_isa();
  if (isa >= AR_ISA_AVX512) { unary_f32_avx512(op, in, out, n); return; }
  if (isa >= AR_ISA_AVX2) { unary_f32_avx2(op, in, out, n); return; }
#endif
  unary_f32_base(op, in, out, n);
}

typedef struct unary_job {
  int op;   /* UN_*, or -1 for LOGISTIC */
  const float *in;
  float *out;
} unary_job_t;

static void logistic_pass(const float *in, float *out, int64_t n);

static void unary_range(void *ctx, int64_t i0, int64_t i1) {
  const unary_job_t *j = ctx;
  if (j->op < 0) logistic_pass(j->in + i0, j->out + i0, i1 - i0);
  else unary_f32(j->op, j->in + i0, j->out + i0, i1 - i0);
}

/* A float pass over the node's input 0 into output 0, split as the binary passes. */
static void unary_split(const ar_node_t *node, int op) {
  const unary_job_t j = {.op = op, .in = node->inputs[0]->data, .out = node->outputs[0]->data};
  const int64_t n = ar_k_elements(node->inputs[0]);
  ar_parallel_for_split(node, n, AR_ELEM_ALIGN, AR_ELEM_MIN_PART, unary_range, (void *)&j);
}

static void relu_eval(const ar_node_t *node) {
  if (node->input_activated && node->inputs[0]->data == node->outputs[0]->data) return;
  if (unary_q_eval(node)) return;
  unary_split(node, UN_RELU);
}

static void relu6_eval(const ar_node_t *node) {
  if (node->input_activated && node->inputs[0]->data == node->outputs[0]->data) return;
  if (unary_q_eval(node)) return;
  unary_split(node, UN_RELU6);
}

/* TFLite's float logistic saturates outside [-9, 16.62]: exp(x) below (1/(1+e^-x) == e^x to
 * float precision there) and exactly 1 above, which also keeps expf away from overflow. */
#define AR_LOGISTIC_UPPER 16.619047164916992188f
#define AR_LOGISTIC_LOWER (-9.0f)
static void logistic_scalar(const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float x = in[i];
    if (x > AR_LOGISTIC_UPPER) out[i] = 1.0f;
    else if (x < AR_LOGISTIC_LOWER) out[i] = expf(x);
    else out[i] = 1.0f / (1.0f + expf(-x));
  }
}

#if AR_HAVE_AVX2_CLONE
/* e^x for x in [-200, 88], 16 lanes: n = round(x log2 e), r = x - n ln 2 (ln 2 in two parts, Cody
 * and Waite), e^r by a degree-6 polynomial (Cephes expf's coefficients, about 1 ulp over
 * |r| <= ln2/2), scaled by 2^n. NaN stays NaN.
 *
 * A result below FLT_MIN (x < -87.34) is subnormal or 0; an FP instruction that produces (or reads)
 * one costs a microcode assist of some hundred cycles on Intel cores (FTZ / DAZ are off, the
 * values must stay), and a segmentation mask's background is mostly such lanes (LOGISTIC of
 * selfie_segmentation's [1,144,256,1] logits took 0.19 ms for 37K elements). So *norm gets
 * p * 2^n with n replaced by 0 in those lanes (normal, for arithmetic the caller throws away there)
 * and the returned value builds them with integer ops: p = M * 2^(ep - 23) with M its 24-bit
 * significand, and p * 2^n is the subnormal M * 2^(ep + n + 149) * 2^-149, i.e. M shifted right
 * by s = -(ep + n) - 126 with round-to-nearest-even - the bits vscalefps gives, without the assist. */
AR_TARGET_AVX512 static inline __attribute__((always_inline)) __m512 ar__exp512(__m512 x, __m512 *norm) {
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512 en = _mm512_add_ps(n, _mm512_getexp_ps(p));   /* floor(log2(p * 2^n)) */
  const __mmask16 sub = _mm512_cmp_ps_mask(en, _mm512_set1_ps(-126.0f), _CMP_LT_OQ);
  if (!sub) return *norm = _mm512_scalef_ps(p, n);
  *norm = _mm512_scalef_ps(p, _mm512_mask_mov_ps(n, sub, _mm512_setzero_ps()));
  /* s in [1, 25]: from 25 on every significand rounds to 0 */
  const __m512 sf = _mm512_min_ps(_mm512_sub_ps(_mm512_set1_ps(-126.0f), en), _mm512_set1_ps(25.0f));
  const __m512i s = _mm512_cvtps_epi32(sf);
  const __m512i m = _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(p), _mm512_set1_epi32(0x7fffff)),
                                    _mm512_set1_epi32(0x800000));
  __m512i q = _mm512_srlv_epi32(m, s);
  const __m512i rem = _mm512_sub_epi32(m, _mm512_sllv_epi32(q, s));
  const __m512i half = _mm512_sllv_epi32(_mm512_set1_epi32(1), _mm512_sub_epi32(s, _mm512_set1_epi32(1)));
  const __mmask16 up = _mm512_cmpgt_epi32_mask(rem, half) |
                       (_mm512_cmpeq_epi32_mask(rem, half) &
                        _mm512_test_epi32_mask(q, _mm512_set1_epi32(1)));
  q = _mm512_mask_add_epi32(q, up, q, _mm512_set1_epi32(1));
  return _mm512_mask_mov_ps(*norm, sub, _mm512_castsi512_ps(q));
}

/* TFLite's float logistic (the saturation of logistic_scalar) 16 lanes at a time; the values
 * differ from the libm expf path by at most a few ulp (check_kernels bounds it), so this level
 * is not bit-identical to the others here. */
AR_TARGET_AVX512 static void logistic_avx512(const float *in, float *out, int64_t n) {
  const __m512 up = _mm512_set1_ps(AR_LOGISTIC_UPPER), lo = _mm512_set1_ps(AR_LOGISTIC_LOWER);
  const __m512 one = _mm512_set1_ps(1.0f);
  int64_t i = 0;
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
    const __m512 x = _mm512_maskz_loadu_ps(m, in + i);
    const __mmask16 below = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
    const __mmask16 above = _mm512_cmp_ps_mask(x, up, _CMP_GT_OQ);
    /* e = exp(x) below the range (the result itself: subnormal or 0 far below, rounded like
     * expf), exp(-x) inside; -inf clamped to -200 (exp = 0) rather than NaN. The division reads
     * the normal stand-in (its lanes below the range are replaced by e). */
    __m512 t = _mm512_mask_sub_ps(x, (__mmask16)~below, _mm512_setzero_ps(), x);
    t = _mm512_max_ps(t, _mm512_set1_ps(-200.0f));
    __m512 en;
    const __m512 e = ar__exp512(t, &en);
    __m512 y = _mm512_div_ps(one, _mm512_add_ps(one, en));
    y = _mm512_mask_mov_ps(y, below, e);
    y = _mm512_mask_mov_ps(y, above, one);
    y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);   /* NaN in, NaN out */
    _mm512_mask_storeu_ps(out + i, m, y);
  }
}
#endif

static void logistic_pass(const float *in, float *out, int64_t n) {
#if AR_HAVE_AVX2_CLONE
  if (ar__f32_isa() >= AR_ISA_AVX512) { logistic_avx512(in, out, n); return; }
#endif
  logistic_scalar(in, out, n);
}

static void logistic_eval(const ar_node_t *node) {
  if (unary_q_eval(node)) return;
  unary_split(node, -1);
}

/* TFLite HARD_SWISH: x * relu6(x + 3) / 6. */
static void hard_swish_eval(const ar_node_t *node) { unary_split(node, UN_HARD_SWISH); }

/* TFLite RELU (builtin 19): max(0, x); float32, uint8 / int8 (rescaled, clamped). */
static const ar_kernel_form_t relu_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32),
  AR_KF(1, 3, UINT8, UINT8),
  AR_KF(1, 3, INT8, INT8),
  AR_KF(1, 3, INT16, INT16),
};
const ar_kernel_t ar_kernel_relu = { "RELU", unary_prepare, unary_init, relu_eval,
  AR_KSUPPORT(relu_forms, 0, -1) };
/* TFLite RELU6 (builtin 21): min(max(0, x), 6); float32, uint8 / int8 (rescaled, clamped). */
static const ar_kernel_form_t relu6_forms[] = {
  AR_KF(1, 2, FLOAT32, FLOAT32),
  AR_KF(1, 2, UINT8, UINT8),
  AR_KF(1, 2, INT8, INT8),
  AR_KF(1, 2, INT16, INT16),
};
const ar_kernel_t ar_kernel_relu6 = { "RELU6", unary_prepare, unary_init, relu6_eval,
  AR_KSUPPORT(relu6_forms, 0, -1) };
/* TFLite LOGISTIC (builtin 14): 1 / (1 + exp(-x)), saturated like TFLite's float kernel; uint8 /
 * int8 through TFLite's 256-entry lookup table (output scale 1/256). */
/* Its int16 form (TFLite's fixed-point or table path) is kernels/qact.c. */
static bool logistic_i16(const ar_node_t *node) { return node->inputs[0] && node->inputs[0]->dtype == AR_DTYPE_INT16; }
static int logistic_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  if (node->n_inputs >= 1 && logistic_i16(node)) return ar__qact_prepare(node, msg, msg_bytes);
  return unary_prepare(node, msg, msg_bytes);
}
static void logistic_init(ar_node_t *node) {
  if (logistic_i16(node)) ar__qact_init(node);
  else unary_init(node);
}
static void logistic_any_eval(const ar_node_t *node) {
  if (logistic_i16(node)) ar__qact_eval(node);
  else logistic_eval(node);
}
static const ar_kernel_form_t logistic_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32),
  AR_KF(1, 3, UINT8, UINT8),
  AR_KF(1, 3, INT8, INT8),
  AR_KF(1, 3, INT16, INT16),
};
const ar_kernel_t ar_kernel_logistic = { "LOGISTIC", logistic_prepare, logistic_init, logistic_any_eval,
  AR_KSUPPORT(logistic_forms, 0, -1) };
/* TFLite HARD_SWISH (builtin 117): x * relu6(x + 3) / 6. */
/* Its uint8 / int8 form is a byte table (kernels/qact.c). */
static bool hard_swish_q8(const ar_node_t *node) { return node->inputs[0] && ar_k_is_q8(node->inputs[0]->dtype); }
static int hard_swish_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  if (node->n_inputs >= 1 && hard_swish_q8(node)) return ar__qact_prepare(node, msg, msg_bytes);
  return unary_prepare(node, msg, msg_bytes);
}
static void hard_swish_init(ar_node_t *node) {
  if (hard_swish_q8(node)) ar__qact_init(node);
}
static void hard_swish_any_eval(const ar_node_t *node) {
  if (hard_swish_q8(node)) ar__qact_eval(node);
  else hard_swish_eval(node);
}
static const ar_kernel_form_t hard_swish_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, UINT8, UINT8),
  AR_KF(1, 1, INT8, INT8),
};
const ar_kernel_t ar_kernel_hard_swish = { "HARD_SWISH", hard_swish_prepare, hard_swish_init, hard_swish_any_eval,
  AR_KSUPPORT(hard_swish_forms, 0, -1) };
