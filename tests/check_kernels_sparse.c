/* check_kernels_sparse.c - CONV_2D 1x1 and FULLY_CONNECTED with a sparse filter / weights read in
 * their stored form (kernels/sparse_conv.c, ar_kernel_sparse_filter_check).
 *
 * Sparse filters are generated here in TFLite's format (SparsityParameters: identity traversal,
 * dims 0..2 DENSE, input channels SPARSE_CSR, optionally one block dim of output or input
 * channels) with odd sizes, empty rows, every index type and float16 / float32 values. Evidence:
 *   - the DENSIFY kernel turns each generated tensor into the dense filter the generator meant
 *     (so the generator speaks TFLite's format, as DENSIFY reads it);
 *   - the sparse convolution matches a naive double-precision 1x1 convolution of that dense filter
 *     and the dense CONV_2D kernel, to float rounding;
 *   - every loop the CPU has (portable, AVX2+FMA+F16C) gives the same bits as the portable one;
 *   - forms outside the covered one, and inconsistent segments / indices / value counts, are
 *     refused with AR_EUNSUPPORTED and a message saying why. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "interp/ar_interp.h"
#include "kernels/ar_kernels.h"
#include "kernels/sparse_conv.h"
#include "tests/ar_test_model.h"

/* aarch64: kernels/sparse_conv.c expands every filter that fits and multiplies it with the NEON
 * GEMM (kernels/sgemm.h), whose order differs from the entry-by-entry loop's by rounding. */
#if defined(__aarch64__)
#define SPARSE_EXPANDED_IS_GEMM 1
#else
#define SPARSE_EXPANDED_IS_GEMM 0
#endif

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint32_t urand(void) {   /* xorshift64*, deterministic */
  rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}
static float frand(void) { return (float)(urand() >> 8) * (1.0f / 8388608.0f) - 1.0f; }

/* A random float16 with magnitude in about [2^-6, 2): exact in float32. */
static uint16_t hrand(void) {
  uint16_t sign = (uint16_t)((urand() & 1u) << 15);
  uint16_t exp = (uint16_t)(9 + urand() % 7);
  uint16_t mant = (uint16_t)(urand() & 0x3ffu);
  return (uint16_t)(sign | (exp << 10) | mant);
}

/* ---------- a generated sparse filter [O,1,1,I] ---------- */

typedef struct {
  int32_t o, i, rb, cb;        /* block rows R (block_map [0]) or cols C (block_map [3]) */
  ar_dtype_t dtype;            /* FLOAT16 or FLOAT32 values */
  ar_index_type_t ity;         /* type of array_indices */
  ar_index_type_t sty;         /* type of array_segments: ity, or wider when the entries need it */
  float *dense;                /* [O, I], what the stored form means */
  void *values;                /* stored values */
  uint64_t n_values;
  void *seg, *idx;             /* index vectors, in ity */
  uint32_t n_seg, n_idx;
  ar_sparsity_t sp;
  ar_tview_t view;
} sparse_t;

static void ivec_put(void *v, ar_index_type_t t, uint32_t i, uint32_t x) {
  if (t == AR_IDX_UINT8) ((uint8_t *)v)[i] = (uint8_t)x;
  else if (t == AR_IDX_UINT16) ((uint16_t *)v)[i] = (uint16_t)x;
  else ((int32_t *)v)[i] = (int32_t)x;
}

/* density in percent of blocks kept; every third group empty when `empty_rows`. */
static void sparse_make(sparse_t *s, int32_t o, int32_t i, int32_t rb, int32_t cb, ar_dtype_t dt,
                        ar_index_type_t ity, int density, bool empty_rows) {
  memset(s, 0, sizeof *s);
  s->o = o; s->i = i; s->rb = rb; s->cb = cb; s->dtype = dt; s->ity = ity;
  const int32_t groups = o / rb, ncols = i / cb;
  s->dense = calloc((size_t)o * i, sizeof(float));
  uint64_t max_e = (uint64_t)groups * ncols;
  s->seg = calloc(groups + 1, 4);
  s->idx = calloc(max_e ? max_e : 1, 4);
  s->values = calloc(max_e * rb * cb + 1, 4);
  s->sty = max_e < 256 ? ity : (max_e < 65536 && ity != AR_IDX_INT32) ? AR_IDX_UINT16 : AR_IDX_INT32;
  uint32_t e = 0;
  ivec_put(s->seg, s->sty, 0, 0);
  for (int32_t g = 0; g < groups; g++) {
    bool empty = empty_rows && g % 3 == 1;
    for (int32_t c = 0; c < ncols && !empty; c++) {
      if ((int)(urand() % 100) >= density) continue;
      ivec_put(s->idx, ity, e, (uint32_t)c);
      for (int32_t r = 0; r < rb; r++)
        for (int32_t t = 0; t < cb; t++) {
          uint64_t v = (uint64_t)e * rb * cb + (uint64_t)r * cb + t;
          float f;
          if (dt == AR_DTYPE_FLOAT16) {
            uint16_t h = hrand();
            ((uint16_t *)s->values)[v] = h;
            f = ar_fp16_to_fp32(h);
          } else {
            f = frand();
            ((float *)s->values)[v] = f;
          }
          s->dense[(int64_t)(g * rb + r) * i + c * cb + t] = f;
        }
      e++;
    }
    ivec_put(s->seg, s->sty, (uint32_t)g + 1, e);
  }
  s->n_seg = (uint32_t)groups + 1;
  s->n_idx = e;
  s->n_values = (uint64_t)e * rb * cb;
  const int32_t k = (rb > 1 || cb > 1) ? 1 : 0;
  s->sp.n_traversal_order = 4 + k;
  for (int32_t l = 0; l < 4 + k; l++) s->sp.traversal_order[l] = l;
  s->sp.n_block_map = k;
  if (k) s->sp.block_map[0] = rb > 1 ? 0 : 3;
  s->sp.n_dim_metadata = 4 + k;
  s->sp.dim_metadata[0] = (ar_dim_metadata_t){.format = AR_DIM_DENSE, .dense_size = groups};
  s->sp.dim_metadata[1] = (ar_dim_metadata_t){.format = AR_DIM_DENSE, .dense_size = 1};
  s->sp.dim_metadata[2] = (ar_dim_metadata_t){.format = AR_DIM_DENSE, .dense_size = 1};
  s->sp.dim_metadata[3] = (ar_dim_metadata_t){
    .format = AR_DIM_SPARSE_CSR,
    .array_segments = {s->sty, s->n_seg, s->seg},
    .array_indices = {ity, s->n_idx, s->idx}};
  if (k) s->sp.dim_metadata[4] = (ar_dim_metadata_t){.format = AR_DIM_DENSE, .dense_size = rb > 1 ? rb : cb};
  ar_tview_t *v = &s->view;
  v->data = s->values;
  v->dtype = dt;
  v->rank = 4;
  v->dims[0] = o; v->dims[1] = 1; v->dims[2] = 1; v->dims[3] = i;
  v->bytes = s->n_values * ar_dtype_size(dt);
  v->is_constant = true;
  v->sparsity = &s->sp;
  v->name = "sparse_filter";
}

static void sparse_free(sparse_t *s) {
  free(s->dense); free(s->values); free(s->seg); free(s->idx);
}

/* ---------- nodes ---------- */

typedef struct {
  ar_tview_t in, w, bias, out;
  ar_tview_t *io[4];   /* node.inputs (up to 3), node.outputs (1) */
  ar_options_t opt;
  ar_node_t node;
} cnode_t;

static void fview(ar_tview_t *t, float *data, int32_t rank, const int32_t *dims, bool constant) {
  memset(t, 0, sizeof *t);
  t->data = data;
  t->dtype = AR_DTYPE_FLOAT32;
  t->rank = rank;
  uint64_t n = 1;
  for (int32_t d = 0; d < rank; d++) t->dims[d] = dims[d], n *= (uint64_t)dims[d];
  t->bytes = n * sizeof(float);
  t->is_constant = constant;
}

/* CONV_2D 1x1 over input [N,H,W,I] with filter view `w` (sparse or dense), bias [O] or NULL. */
static void cnode_init(cnode_t *c, float *in, const int32_t in_dims[4], const ar_tview_t *w,
                       float *bias, float *out, int32_t stride, ar_padding_t pad,
                       ar_activation_t act) {
  memset(c, 0, sizeof *c);
  fview(&c->in, in, 4, in_dims, false);
  c->w = *w;
  int32_t o = w->dims[0];
  int32_t oh = pad == AR_PADDING_SAME ? (in_dims[1] + stride - 1) / stride : (in_dims[1] - 1) / stride + 1;
  int32_t ow = pad == AR_PADDING_SAME ? (in_dims[2] + stride - 1) / stride : (in_dims[2] - 1) / stride + 1;
  int32_t od[4] = {in_dims[0], oh, ow, o};
  fview(&c->out, out, 4, od, false);
  c->opt.conv2d = (ar_conv2d_options_t){pad, stride, stride, act, 1, 1};
  c->node.op = AR_OP_CONV_2D;
  c->node.index = 14;
  c->node.version = 1;
  c->node.options = &c->opt;
  c->node.n_inputs = bias ? 3 : 2;
  c->node.n_outputs = 1;
  c->node.inputs = c->io;
  c->node.outputs = c->io + 3;
  c->node.inputs[0] = &c->in;
  c->node.inputs[1] = &c->w;
  if (bias) {
    fview(&c->bias, bias, 1, &o, true);
    c->node.inputs[2] = &c->bias;
  }
  c->node.outputs[0] = &c->out;
  c->node.threads = 1;
}

static void node_run(ar_node_t *nd) {
  const ar_kernel_t *k = ar_kernel_for(nd->op);
  char msg[AR_MSG_BYTES] = "";
  int rc = k->prepare(nd, msg, sizeof msg);
  ck_assert_msg(rc == 0, "prepare: %s (%s)", ar_err_name(rc), msg);
  nd->scratch = nd->scratch_bytes ? malloc(nd->scratch_bytes) : NULL;
  if (nd->scratch) memset(nd->scratch, 0xff, nd->scratch_bytes);   /* NaN poison */
  nd->state = nd->state_bytes ? malloc(nd->state_bytes) : NULL;
  if (k->init) k->init(nd);
  k->eval(nd);
  free(nd->scratch);
  free(nd->state);
  nd->scratch = nd->state = NULL;
}

static float act_ref(double x, ar_activation_t act) {
  switch (act) {
  case AR_ACT_RELU: return (float)(x < 0 ? 0 : x);
  case AR_ACT_RELU6: return (float)(x < 0 ? 0 : x > 6 ? 6 : x);
  case AR_ACT_RELU_N1_TO_1: return (float)(x < -1 ? -1 : x > 1 ? 1 : x);
  case AR_ACT_TANH: return tanhf((float)x);
  default: return (float)x;
  }
}

/* ---------- one case: sparse vs naive vs dense kernel, every ISA vs portable ---------- */

typedef struct {
  int32_t n, h, w, i, o, rb, cb, stride, density;
  ar_padding_t pad;
  ar_dtype_t dt;
  ar_index_type_t ity;
  ar_activation_t act;
  bool bias, empty_rows;
} scase_t;

static void run_case(const scase_t *k) {
  sparse_t s;
  sparse_make(&s, k->o, k->i, k->rb, k->cb, k->dt, k->ity, k->density, k->empty_rows);

  /* The generator speaks DENSIFY's format. */
  {
    float *dd = malloc((size_t)k->o * k->i * 4 + 4);
    uint16_t *dh = malloc((size_t)k->o * k->i * 2 + 2);
    ar_tview_t out;
    memset(&out, 0, sizeof out);
    out.data = k->dt == AR_DTYPE_FLOAT16 ? (void *)dh : (void *)dd;
    out.dtype = k->dt;
    out.rank = 4;
    memcpy(out.dims, s.view.dims, sizeof out.dims);
    out.bytes = (uint64_t)k->o * k->i * ar_dtype_size(k->dt);
    ar_node_t dn;
    ar_tview_t *dn_io[2];
    memset(&dn, 0, sizeof dn);
    dn.inputs = dn_io;
    dn.outputs = dn_io + 1;
    dn.op = AR_OP_DENSIFY;
    dn.n_inputs = dn.n_outputs = 1;
    dn.inputs[0] = &s.view;
    dn.outputs[0] = &out;
    node_run(&dn);
    for (int64_t e = 0; e < (int64_t)k->o * k->i; e++) {
      float f = k->dt == AR_DTYPE_FLOAT16 ? ar_fp16_to_fp32(dh[e]) : dd[e];
      ck_assert_msg(f == s.dense[e], "densify element %lld: %g, generator meant %g", (long long)e,
                    (double)f, (double)s.dense[e]);
    }
    free(dd);
    free(dh);
  }

  const int32_t in_dims[4] = {k->n, k->h, k->w, k->i};
  const size_t nin = (size_t)k->n * k->h * k->w * k->i;
  float *in = malloc(nin * sizeof(float));
  for (size_t e = 0; e < nin; e++) in[e] = frand();
  float *bias = NULL;
  if (k->bias) {
    bias = malloc((size_t)k->o * sizeof(float));
    for (int32_t e = 0; e < k->o; e++) bias[e] = frand();
  }
  const int32_t oh = k->pad == AR_PADDING_SAME ? (k->h + k->stride - 1) / k->stride : (k->h - 1) / k->stride + 1;
  const int32_t ow = k->pad == AR_PADDING_SAME ? (k->w + k->stride - 1) / k->stride : (k->w - 1) / k->stride + 1;
  const size_t nout = (size_t)k->n * oh * ow * k->o;
  float *ref = malloc(nout * sizeof(float)), *got = malloc(nout * sizeof(float));
  float *dense_out = malloc(nout * sizeof(float)), *port = malloc(nout * sizeof(float));

  /* Naive, in double, from the dense filter. */
  for (int32_t b = 0; b < k->n; b++)
    for (int32_t y = 0; y < oh; y++)
      for (int32_t x = 0; x < ow; x++) {
        const float *px = in + (((size_t)b * k->h + (size_t)y * k->stride) * k->w + (size_t)x * k->stride) * k->i;
        for (int32_t o = 0; o < k->o; o++) {
          double acc = bias ? bias[o] : 0.0;
          for (int32_t c = 0; c < k->i; c++) acc += (double)s.dense[(size_t)o * k->i + c] * px[c];
          ref[(((size_t)b * oh + y) * ow + x) * k->o + o] = act_ref(acc, k->act);
        }
      }

  /* The dense CONV_2D kernel on the dense filter. */
  {
    ar_tview_t dw;
    int32_t wd[4] = {k->o, 1, 1, k->i};
    fview(&dw, s.dense, 4, wd, true);
    cnode_t c;
    cnode_init(&c, in, in_dims, &dw, bias, dense_out, k->stride, k->pad, k->act);
    node_run(&c.node);
  }

  char msg[AR_MSG_BYTES] = "";
  cnode_t c;
  cnode_init(&c, in, in_dims, &s.view, bias, got, k->stride, k->pad, k->act);
  int rc = ar_kernel_sparse_filter_check(&c.node, msg, sizeof msg);
  ck_assert_msg(rc == 0, "check: %s (%s)", ar_err_name(rc), msg);

  int best = ar__sparse_set_isa(-1);
  for (int mode = 0; mode <= 1; mode++)   /* entry by entry, then expanded (kernels/sparse_conv.c) */
  for (int isa = 0; isa <= best; isa++) {
    ck_assert_int_eq(ar__sparse_set_dense(mode), mode);
    ck_assert_int_eq(ar__sparse_set_isa(isa), isa);
    memset(got, 0xff, nout * sizeof(float));
    node_run(&c.node);
    ck_assert_uint_eq(c.node.state_bytes, 0);
    for (size_t e = 0; e < nout; e++) {
      float tol = 1e-5f * (fabsf(ref[e]) > 1.0f ? fabsf(ref[e]) : 1.0f) * (float)(k->i > 64 ? 4 : 1);
      ck_assert_msg(fabsf(got[e] - ref[e]) <= tol, "isa %d, case O %d I %d R %d C %d: element %zu is "
                    "%.8g, naive %.8g", isa, k->o, k->i, k->rb, k->cb, e, (double)got[e], (double)ref[e]);
      ck_assert_msg(fabsf(got[e] - dense_out[e]) <= 2 * tol, "isa %d: element %zu is %.8g, dense "
                    "kernel %.8g", isa, e, (double)got[e], (double)dense_out[e]);
    }
    /* finite data: the expanded path's zeros add nothing, so both paths give the same bits
     * (aarch64: the expanded path is the NEON GEMM, the sum before the bias: within the
     * tolerances above only) */
    if (isa == 0 && mode == 0) memcpy(port, got, nout * sizeof(float));
    else if (!SPARSE_EXPANDED_IS_GEMM || mode == 0)
      ck_assert_msg(memcmp(port, got, nout * sizeof(float)) == 0,
                    "isa %d, mode %d differs from the portable loop (O %d I %d R %d C %d)", isa, mode,
                    k->o, k->i, k->rb, k->cb);
  }
  ar__sparse_set_isa(-1);
  ar__sparse_set_dense(-1);
  free(in); free(bias); free(ref); free(got); free(dense_out); free(port);
  sparse_free(&s);
}

/* ---------- tests ---------- */

START_TEST(sparse_plain_odd_sizes) {
  /* Pixel counts below, at and around the 32-pixel tile; channel counts 1..300 (uint8 and
   * uint16 indices), empty rows, float16 and float32 values. */
  static const scase_t cases[] = {
    {1, 1, 1, 1, 1, 1, 1, 1, 100, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_NONE, true, false},
    {1, 5, 7, 24, 16, 1, 1, 1, 25, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_NONE, true, false},
    {1, 4, 8, 17, 13, 1, 1, 1, 40, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_RELU, true, true},
    {2, 3, 11, 33, 5, 1, 1, 1, 30, AR_PADDING_VALID, AR_DTYPE_FLOAT32, AR_IDX_UINT16, AR_ACT_RELU6, false, true},
    {1, 7, 7, 300, 40, 1, 1, 1, 25, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_UINT16, AR_ACT_NONE, true, false},
    {1, 9, 5, 64, 21, 1, 1, 1, 5, AR_PADDING_SAME, AR_DTYPE_FLOAT32, AR_IDX_INT32, AR_ACT_TANH, true, true},
    {1, 6, 6, 2000, 9, 1, 1, 1, 40, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_UINT16, AR_ACT_RELU_N1_TO_1, true, false},
    {1, 3, 3, 12, 7, 1, 1, 1, 0, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_RELU, true, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}
END_TEST

START_TEST(sparse_blocks) {
  /* Blocks of output channels (block_map [0]) and of input channels (block_map [3]). */
  static const scase_t cases[] = {
    {1, 5, 9, 24, 16, 4, 1, 1, 30, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_NONE, true, true},
    {1, 6, 7, 20, 18, 2, 1, 1, 50, AR_PADDING_SAME, AR_DTYPE_FLOAT32, AR_IDX_UINT16, AR_ACT_RELU, false, false},
    {1, 4, 9, 40, 11, 1, 4, 1, 35, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_RELU6, true, true},
    {2, 5, 5, 48, 10, 1, 16, 1, 50, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_INT32, AR_ACT_NONE, true, false},
    {1, 3, 13, 9, 48, 16, 1, 1, 60, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_NONE, true, true},
    {1, 3, 5, 9, 30, 3, 1, 1, 60, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_NONE, true, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}
END_TEST

START_TEST(sparse_strides) {
  static const scase_t cases[] = {
    {1, 9, 11, 24, 16, 1, 1, 2, 30, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_NONE, true, false},
    {2, 10, 7, 16, 24, 1, 1, 3, 30, AR_PADDING_VALID, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_RELU, true, true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}
END_TEST

/* pose_detection's layer shapes (28x28x144 -> 40 and 7x7x1152 -> 192), 75 % of entries pruned. */
START_TEST(sparse_model_shapes) {
  static const scase_t cases[] = {
    {1, 28, 28, 144, 40, 1, 1, 1, 25, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_NONE, true, false},
    {1, 7, 7, 1152, 192, 1, 1, 1, 25, AR_PADDING_SAME, AR_DTYPE_FLOAT16, AR_IDX_UINT16, AR_ACT_NONE, true, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}
END_TEST

/* A covered 16x12 filter (uint8 segments and indices), then one change at a time that takes it outside: each refused. */
START_TEST(sparse_refusals) {
  float in[2 * 2 * 12], out[2 * 2 * 16];
  const int32_t in_dims[4] = {1, 2, 2, 12};
  char msg[AR_MSG_BYTES];
  sparse_t s;
  cnode_t c;
#define REFUSED(what, needle)                                                                     \
  do {                                                                                            \
    msg[0] = '\0';                                                                                \
    int rc_ = ar_kernel_sparse_filter_check(&c.node, msg, sizeof msg);                           \
    ck_assert_msg(rc_ != 0, "%s: accepted", what);                                              \
    ck_assert_msg(strstr(msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, msg, needle); \
    ck_assert_msg(strstr(msg, "operator 14 (") == msg, "%s: message %s", what, msg);             \
    msg[0] = '\0';                                                                                \
    rc_ = ar_kernel_for(AR_OP_CONV_2D)->prepare(&c.node, msg, sizeof msg);                       \
    ck_assert_msg(rc_ != 0 && strstr(msg, needle), "%s: prepare gave '%s'", what, msg);          \
  } while (0)
#define FRESH()                                                                                   \
  do {                                                                                            \
    sparse_make(&s, 16, 12, 1, 1, AR_DTYPE_FLOAT16, AR_IDX_UINT8, 40, false);            \
    ck_assert_int_eq(s.sty, AR_IDX_UINT8);                     \
    cnode_init(&c, in, in_dims, &s.view, NULL, out, 1, AR_PADDING_SAME, AR_ACT_NONE);             \
    c.w.sparsity = &s.sp;                                                                         \
    ck_assert_int_eq(ar_kernel_sparse_filter_check(&c.node, msg, sizeof msg), 0);                 \
  } while (0)

  FRESH(); s.sp.traversal_order[1] = 2; s.sp.traversal_order[2] = 1;
  REFUSED("traversal", "traversal_order is not the identity"); sparse_free(&s);
  FRESH(); s.sp.dim_metadata[3].format = AR_DIM_DENSE;
  REFUSED("dense level 3", "not SPARSE_CSR"); sparse_free(&s);
  FRESH(); s.sp.dim_metadata[0].format = AR_DIM_SPARSE_CSR;
  REFUSED("sparse level 0", "level 0 is not DENSE"); sparse_free(&s);
  FRESH(); ((uint8_t *)s.seg)[0] = 1;
  REFUSED("segments start", "array_segments[0] is not 0"); sparse_free(&s);
  FRESH(); ((uint8_t *)s.seg)[16] = (uint8_t)(s.n_idx + 1);
  REFUSED("segments end", "beyond"); sparse_free(&s);
  FRESH(); ((uint8_t *)s.seg)[5] = (uint8_t)(((uint8_t *)s.seg)[4] - 1);
  REFUSED("segments order", "out of order"); sparse_free(&s);
  FRESH(); ((uint8_t *)s.idx)[0] = 12;
  REFUSED("index range", "is not increasing within [0,12)"); sparse_free(&s);
  FRESH(); ((uint8_t *)s.idx)[1] = ((uint8_t *)s.idx)[0];
  REFUSED("duplicate index", "is not increasing"); sparse_free(&s);
  FRESH(); c.w.bytes -= 2;
  REFUSED("short buffer", "stored values, the buffer holds"); sparse_free(&s);
  FRESH(); c.w.dtype = AR_DTYPE_INT8;
  REFUSED("int8 values", "values are INT8"); sparse_free(&s);
  FRESH(); c.w.dims[1] = c.w.dims[2] = 3;
  REFUSED("3x3 filter", "not [O,1,1,I]"); sparse_free(&s);
  FRESH(); s.sp.n_block_map = 2;
  REFUSED("two block dims", "at most one block dim"); sparse_free(&s);
  FRESH(); s.sp.dim_metadata[3].array_indices.type = AR_IDX_NONE;
  REFUSED("untyped indices", "array_indices vector is missing"); sparse_free(&s);
  FRESH(); c.node.op = AR_OP_DEPTHWISE_CONV_2D;
  ck_assert_int_eq(ar_kernel_sparse_filter_check(&c.node, msg, sizeof msg), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(msg, "DEPTHWISE_CONV_2D is not covered") != NULL, "%s", msg);
  c.node.op = AR_OP_FULLY_CONNECTED;   /* FC takes [O,I] weights only (its own shape rule) */
  memset(&c.opt, 0, sizeof c.opt);
  ck_assert_int_ne(ar_kernel_sparse_filter_check(&c.node, msg, sizeof msg), 0);
  ck_assert_msg(strstr(msg, "must be [O, I]") != NULL, "%s", msg);
  sparse_free(&s);
  FRESH(); c.in.dims[3] = 11;
  REFUSED("input channels", "does not match filter"); sparse_free(&s);
#undef REFUSED
#undef FRESH
}
END_TEST

/* A block on an input-channel count it does not divide, and on dim 1, are not covered. */
START_TEST(sparse_block_refusals) {
  float in[24], out[16];
  const int32_t in_dims[4] = {1, 1, 1, 24};
  char msg[AR_MSG_BYTES] = "";
  sparse_t s;
  cnode_t c;
  sparse_make(&s, 16, 24, 4, 1, AR_DTYPE_FLOAT16, AR_IDX_UINT8, 50, false);
  cnode_init(&c, in, in_dims, &s.view, NULL, out, 1, AR_PADDING_SAME, AR_ACT_NONE);
  ck_assert_int_eq(ar_kernel_sparse_filter_check(&c.node, msg, sizeof msg), 0);
  s.sp.block_map[0] = 1;
  ck_assert_int_eq(ar_kernel_sparse_filter_check(&c.node, msg, sizeof msg), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(msg, "block_map [1]") != NULL, "%s", msg);
  s.sp.block_map[0] = 0;
  s.sp.dim_metadata[4].dense_size = 32;
  ck_assert_int_eq(ar_kernel_sparse_filter_check(&c.node, msg, sizeof msg), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(msg, "block level") != NULL, "%s", msg);
  sparse_free(&s);
}
END_TEST

/* A batch of 3 with a resized input: the output shape is inferred like the dense kernel's. */
START_TEST(sparse_infer_shapes) {
  sparse_t s;
  sparse_make(&s, 8, 12, 1, 1, AR_DTYPE_FLOAT16, AR_IDX_UINT8, 50, false);
  float in[3 * 5 * 4 * 12], out[3 * 3 * 2 * 8];
  for (size_t e = 0; e < sizeof in / sizeof in[0]; e++) in[e] = frand();
  const int32_t in_dims[4] = {3, 5, 4, 12};
  cnode_t c;
  cnode_init(&c, in, in_dims, &s.view, NULL, out, 2, AR_PADDING_SAME, AR_ACT_NONE);
  c.out.rank = 0;
  c.node.infer_shapes = true;
  char msg[AR_MSG_BYTES] = "";
  int rc = ar_kernel_for(AR_OP_CONV_2D)->prepare(&c.node, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert_int_eq(c.out.rank, 4);
  ck_assert_int_eq(c.out.dims[0], 3);
  ck_assert_int_eq(c.out.dims[1], 3);
  ck_assert_int_eq(c.out.dims[2], 2);
  ck_assert_int_eq(c.out.dims[3], 8);
  /* 18 output pixels: entry by entry, a transposed tile of scratch per thread; the expanded path
   * (forced) holds the dense [12][8] filter instead (aarch64: expanded from 16 pixels, for the
   * NEON GEMM) */
  ck_assert_uint_eq(c.node.scratch_bytes, SPARSE_EXPANDED_IS_GEMM ? 12u * 8u * 4u : 12u * AR_SPARSE_TILE * 4u);
  ck_assert_int_eq(ar__sparse_set_dense(1), 1);
  ck_assert_int_eq(ar_kernel_for(AR_OP_CONV_2D)->prepare(&c.node, msg, sizeof msg), 0);
  ck_assert_uint_eq(c.node.scratch_bytes, 12u * 8u * 4u);
  ar__sparse_set_dense(-1);
  sparse_free(&s);
}
END_TEST

/* ---------- FULLY_CONNECTED: weights [O,I] in the same form ---------- */

/* The generated [O,1,1,I] filter re-described as [O,I] weights: level 0 DENSE, level 1 CSR, the
 * block level (if any) last; the same stored values and index vectors. */
static void sparse_to_fc(sparse_t *s) {
  const int32_t k = s->sp.n_block_map;
  ar_dim_metadata_t csr = s->sp.dim_metadata[3], blk = s->sp.dim_metadata[4];
  s->sp.n_traversal_order = s->sp.n_dim_metadata = 2 + k;
  for (int32_t l = 0; l < 2 + k; l++) s->sp.traversal_order[l] = l;
  if (k) s->sp.block_map[0] = s->rb > 1 ? 0 : 1;
  s->sp.dim_metadata[1] = csr;
  if (k) s->sp.dim_metadata[2] = blk;
  s->view.rank = 2;
  s->view.dims[1] = s->i;
  s->view.dims[2] = s->view.dims[3] = 0;
}

typedef struct {
  int32_t in_rank, in_dims[4];   /* the last dim is I when keep_num_dims */
  int32_t i, o, rb, cb, density;
  ar_dtype_t dt;
  ar_index_type_t ity;
  ar_activation_t act;
  bool bias, keep_num_dims;
} fcase_t;

static void run_fc_case(const fcase_t *k) {
  sparse_t s;
  sparse_make(&s, k->o, k->i, k->rb, k->cb, k->dt, k->ity, k->density, true);
  sparse_to_fc(&s);
  /* DENSIFY reads the [O,I] form as the generator meant it. */
  {
    float *dd = malloc((size_t)k->o * k->i * 4);
    uint16_t *dh = malloc((size_t)k->o * k->i * 2);
    ar_tview_t out;
    memset(&out, 0, sizeof out);
    out.data = k->dt == AR_DTYPE_FLOAT16 ? (void *)dh : (void *)dd;
    out.dtype = k->dt;
    out.rank = 2;
    out.dims[0] = k->o;
    out.dims[1] = k->i;
    out.bytes = (uint64_t)k->o * k->i * ar_dtype_size(k->dt);
    ar_node_t dn;
    ar_tview_t *dn_io[2];
    memset(&dn, 0, sizeof dn);
    dn.inputs = dn_io;
    dn.outputs = dn_io + 1;
    dn.op = AR_OP_DENSIFY;
    dn.n_inputs = dn.n_outputs = 1;
    dn.inputs[0] = &s.view;
    dn.outputs[0] = &out;
    node_run(&dn);
    for (int64_t e = 0; e < (int64_t)k->o * k->i; e++) {
      float f = k->dt == AR_DTYPE_FLOAT16 ? ar_fp16_to_fp32(dh[e]) : dd[e];
      ck_assert_msg(f == s.dense[e], "densify [O,I] element %lld", (long long)e);
    }
    free(dd);
    free(dh);
  }
  size_t nin = 1;
  for (int32_t d = 0; d < k->in_rank; d++) nin *= (size_t)k->in_dims[d];
  const size_t rows = nin / (size_t)k->i, nout = rows * (size_t)k->o;
  float *in = malloc(nin * 4), *bias = k->bias ? malloc((size_t)k->o * 4) : NULL;
  float *ref = malloc(nout * 4), *got = malloc(nout * 4), *dense_out = malloc(nout * 4),
        *port = malloc(nout * 4);
  for (size_t e = 0; e < nin; e++) in[e] = frand();
  for (int32_t e = 0; k->bias && e < k->o; e++) bias[e] = frand();
  for (size_t r = 0; r < rows; r++)
    for (int32_t o = 0; o < k->o; o++) {
      double acc = bias ? bias[o] : 0.0;
      for (int32_t c = 0; c < k->i; c++) acc += (double)s.dense[(size_t)o * k->i + c] * in[r * k->i + c];
      ref[r * k->o + o] = act_ref(acc, k->act);
    }
  int32_t od[4], orank;
  if (k->keep_num_dims) {
    orank = k->in_rank;
    memcpy(od, k->in_dims, sizeof od);
    od[orank - 1] = k->o;
  } else {
    orank = 2;
    od[0] = (int32_t)rows;
    od[1] = k->o;
  }
  ar_tview_t vin, vb, vout, vdense;
  ar_options_t opt;
  memset(&opt, 0, sizeof opt);
  opt.fully_connected.activation = k->act;
  opt.fully_connected.keep_num_dims = k->keep_num_dims;
  ar_node_t nd;
  ar_tview_t *nd_io[4];
  memset(&nd, 0, sizeof nd);
  nd.inputs = nd_io;
  nd.outputs = nd_io + 3;
  nd.op = AR_OP_FULLY_CONNECTED;
  nd.index = 9;
  nd.version = 1;
  nd.options = &opt;
  nd.n_inputs = k->bias ? 3 : 2;
  nd.n_outputs = 1;
  fview(&vin, in, k->in_rank, k->in_dims, false);
  const int32_t bd[1] = {k->o}, wd[2] = {k->o, k->i};
  if (k->bias) fview(&vb, bias, 1, bd, true);
  fview(&vdense, s.dense, 2, wd, true);
  nd.inputs[0] = &vin;
  nd.inputs[1] = &vdense;
  nd.inputs[2] = k->bias ? &vb : NULL;
  nd.outputs[0] = &vout;
  fview(&vout, dense_out, orank, od, false);
  node_run(&nd);                       /* the dense kernel */
  fview(&vout, got, orank, od, false);
  nd.inputs[1] = &s.view;
  char msg[AR_MSG_BYTES] = "";
  int rc = ar_kernel_sparse_filter_check(&nd, msg, sizeof msg);
  ck_assert_msg(rc == 0, "check: %s (%s)", ar_err_name(rc), msg);
  int best = ar__sparse_set_isa(-1);
  for (int mode = 0; mode <= 1; mode++)
  for (int isa = 0; isa <= best; isa++) {
    ck_assert_int_eq(ar__sparse_set_dense(mode), mode);
    ck_assert_int_eq(ar__sparse_set_isa(isa), isa);
    memset(got, 0xff, nout * 4);
    node_run(&nd);
    ck_assert_uint_eq(nd.state_bytes, 0);
    if (mode == 0 || (uint64_t)k->o * k->i * 4u > 256u * 1024u)
      ck_assert_uint_eq(nd.scratch_bytes, (uint64_t)k->i * AR_SPARSE_TILE * 4u);
    else
      ck_assert_uint_eq(nd.scratch_bytes, (uint64_t)k->o * k->i * 4u);
    for (size_t e = 0; e < nout; e++) {
      float tol = 1e-5f * (fabsf(ref[e]) > 1.0f ? fabsf(ref[e]) : 1.0f) * (float)(k->i > 64 ? 4 : 1);
      ck_assert_msg(fabsf(got[e] - ref[e]) <= tol, "FC isa %d, O %d I %d R %d C %d: element %zu is "
                    "%.8g, naive %.8g", isa, k->o, k->i, k->rb, k->cb, e, (double)got[e], (double)ref[e]);
      ck_assert_msg(fabsf(got[e] - dense_out[e]) <= 2 * tol, "FC isa %d: element %zu is %.8g, dense "
                    "kernel %.8g", isa, e, (double)got[e], (double)dense_out[e]);
    }
    if (isa == 0 && mode == 0) memcpy(port, got, nout * 4);
    else if (!SPARSE_EXPANDED_IS_GEMM || mode == 0) ck_assert_msg(memcmp(port, got, nout * 4) == 0, "FC isa %d, mode %d differs from the portable "
                       "loop", isa, mode);
  }
  ar__sparse_set_isa(-1);
  ar__sparse_set_dense(-1);
  free(in); free(bias); free(ref); free(got); free(dense_out); free(port);
  sparse_free(&s);
}

START_TEST(sparse_fully_connected) {
  /* One row (a classifier head), row counts around the 32-row tile, keep_num_dims, blocks. */
  static const fcase_t cases[] = {
    {2, {1, 96}, 96, 24, 1, 1, 30, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_NONE, true, false},
    {2, {33, 40}, 40, 17, 1, 1, 25, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_RELU, true, false},
    {3, {2, 35, 300}, 300, 10, 1, 1, 20, AR_DTYPE_FLOAT32, AR_IDX_UINT16, AR_ACT_RELU6, false, true},
    {2, {7, 64}, 64, 32, 4, 1, 40, AR_DTYPE_FLOAT16, AR_IDX_UINT8, AR_ACT_NONE, true, false},
    {4, {2, 2, 3, 48}, 48, 9, 1, 8, 50, AR_DTYPE_FLOAT16, AR_IDX_INT32, AR_ACT_TANH, true, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_fc_case(&cases[i]);
}
END_TEST

/* ---------- through the interpreter: a generated model ---------- */

/* x [1,4,5,12] -> CONV_2D 1x1 (filter DEQUANTIZE(DENSIFY(sparse fp16 [8,1,1,12])), bias) -> y1, and
 * x -> CONV_2D 3x3 SAME (filter DEQUANTIZE(DENSIFY(sparse fp16 [6,3,3,12])), no bias, RELU) -> y2.
 * With stored weights the 1x1 chain is elided (its conv reads the sparse constant) and the 3x3 one,
 * which the sparse kernel does not cover, keeps the dense path (DENSIFY folded, DEQUANTIZE at use);
 * with fp32 weights both are folded. Both modes match a naive convolution of the dense filters. */
START_TEST(sparse_interp_elides_covered_chain_only) {
  enum { H = 4, W = 5, C = 12, O1 = 8, O2 = 6 };
  sparse_t s1, s3;
  sparse_make(&s1, O1, C, 1, 1, AR_DTYPE_FLOAT16, AR_IDX_UINT8, 40, true);
  /* The 3x3 filter: levels D(6), D(3), D(3), CSR(12) over [6,3,3,12] (groups = 6 * 9 rows of 12). */
  sparse_make(&s3, O2 * 9, C, 1, 1, AR_DTYPE_FLOAT16, AR_IDX_UINT8, 40, false);
  s3.sp.dim_metadata[0].dense_size = O2;
  s3.sp.dim_metadata[1].dense_size = 3;
  s3.sp.dim_metadata[2].dense_size = 3;
  float bias1[O1];
  for (int i = 0; i < O1; i++) bias1[i] = frand();
  const ar_tm_tensor_t t[] = {
    {"x", AR_DTYPE_FLOAT32, 4, {1, H, W, C}, false, {0}, NULL},
    {"w1_sparse", AR_DTYPE_FLOAT16, 4, {O1, 1, 1, C}, false, {0}, s1.values},
    {"w1_dense16", AR_DTYPE_FLOAT16, 4, {O1, 1, 1, C}, false, {0}, NULL},
    {"w1", AR_DTYPE_FLOAT32, 4, {O1, 1, 1, C}, false, {0}, NULL},
    {"b1", AR_DTYPE_FLOAT32, 1, {O1}, false, {0}, bias1},
    {"y1", AR_DTYPE_FLOAT32, 4, {1, H, W, O1}, false, {0}, NULL},
    {"w2_sparse", AR_DTYPE_FLOAT16, 4, {O2, 3, 3, C}, false, {0}, s3.values},
    {"w2_dense16", AR_DTYPE_FLOAT16, 4, {O2, 3, 3, C}, false, {0}, NULL},
    {"w2", AR_DTYPE_FLOAT32, 4, {O2, 3, 3, C}, false, {0}, NULL},
    {"y2", AR_DTYPE_FLOAT32, 4, {1, H, W, O2}, false, {0}, NULL},
  };
  /* CONV_2D options (Conv2DOptions = union type 1): padding 0 (SAME), stride_w 1, stride_h 2,
   * fused_activation_function 3. */
  const ar_tm_op_t ops[] = {
    {124, 1, 1, {1}, {2}, 0, 0, {{0}}},                  /* DENSIFY */
    {6, 1, 1, {2}, {3}, 0, 0, {{0}}},                    /* DEQUANTIZE */
    {3, 3, 1, {0, 3, 4}, {5}, 1, 3, {{1, 4, 1}, {2, 4, 1}, {3, 1, AR_ACT_NONE}}},
    {124, 1, 1, {6}, {7}, 0, 0, {{0}}},
    {6, 1, 1, {7}, {8}, 0, 0, {{0}}},
    {3, 2, 1, {0, 8}, {9}, 1, 3, {{1, 4, 1}, {2, 4, 1}, {3, 1, AR_ACT_RELU}}},
  };
  const int32_t ins[] = {0}, outs[] = {5, 9};
  const ar_tm_sparse_t sp[] = {{1, &s1.sp, s1.n_values * 2}, {6, &s3.sp, s3.n_values * 2}};
  size_t bytes = 0;
  uint8_t *file = ar_tm_build_sparse(t, 10, ops, 6, ins, 1, outs, 2, NULL, 0, sp, 2, &bytes);
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  int rc = ar_model_load_buffer(file, bytes, &m, msg, sizeof msg);
  ck_assert_msg(rc == 0, "load: %s (%s)", ar_err_name(rc), msg);

  float x[H * W * C], y1[H * W * O1], y2[H * W * O2];
  for (int i = 0; i < H * W * C; i++) x[i] = frand();
  for (int y = 0; y < H; y++)
    for (int xx = 0; xx < W; xx++) {
      const float *px = x + (y * W + xx) * C;
      for (int o = 0; o < O1; o++) {
        double acc = bias1[o];
        for (int c = 0; c < C; c++) acc += (double)s1.dense[o * C + c] * px[c];
        y1[(y * W + xx) * O1 + o] = (float)acc;
      }
      for (int o = 0; o < O2; o++) {
        double acc = 0;
        for (int ky = 0; ky < 3; ky++)
          for (int kx = 0; kx < 3; kx++) {
            int iy = y + ky - 1, ix = xx + kx - 1;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
            for (int c = 0; c < C; c++)
              acc += (double)s3.dense[((o * 3 + ky) * 3 + kx) * C + c] * x[(iy * W + ix) * C + c];
          }
        y2[(y * W + xx) * O2 + o] = (float)(acc < 0 ? 0 : acc);
      }
    }

  for (int mode = 0; mode < 2; mode++) {
    ar_interp_options_t opt;
    ar_interp_options_default(&opt);
    opt.weights = mode == 0 ? AR_WEIGHTS_STORED : AR_WEIGHTS_FP32;
    ar_interp_t *in = NULL;
    rc = ar_interp_new(m, &opt, &in, msg, sizeof msg);
    ck_assert_msg(rc == 0, "interp_new: %s (%s)", ar_err_name(rc), msg);
    ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
    const bool stored = mode == 0;
    ck_assert_int_eq(ar_interp_op_elided(in, 0), stored);     /* the 1x1 chain */
    ck_assert_int_eq(ar_interp_op_elided(in, 1), stored);
    ck_assert(!ar_interp_op_elided(in, 3) && !ar_interp_op_elided(in, 4));   /* the 3x3 one */
    ck_assert(ar_interp_op_folded(in, 3));                    /* its DENSIFY, in both modes */
    ck_assert_int_eq(ar_interp_op_at_use(in, 4), stored);
    ck_assert_int_eq(ar_interp_node(in, 2)->inputs[1]->sparsity != NULL, stored);
    ck_assert(ar_interp_node(in, 5)->inputs[1]->sparsity == NULL);
    /* Stored: the covered filter costs nothing persistent; only the 3x3 one is densified (fp16). */
    if (stored) ck_assert_uint_lt(ar_interp_persistent_bytes(in), (uint64_t)O2 * 9 * C * 4);
    memcpy(ar_interp_input(in, 0)->data, x, sizeof x);
    ck_assert_int_eq(ar_interp_invoke(in), 0);
    const float *g1 = ar_interp_output(in, 0)->data, *g2 = ar_interp_output(in, 1)->data;
    for (int i = 0; i < H * W * O1; i++)
      ck_assert_msg(fabsf(g1[i] - y1[i]) <= 1e-5f * (1 + fabsf(y1[i])), "mode %d y1[%d] %g, naive %g",
                    mode, i, (double)g1[i], (double)y1[i]);
    for (int i = 0; i < H * W * O2; i++)
      ck_assert_msg(fabsf(g2[i] - y2[i]) <= 1e-5f * (1 + fabsf(y2[i])), "mode %d y2[%d] %g, naive %g",
                    mode, i, (double)g2[i], (double)y2[i]);
    ar_interp_free(in);
  }
  ar_model_free(m);
  free(file);
  sparse_free(&s1);
  sparse_free(&s3);
}
END_TEST

static Suite *sparse_suite(void) {
  Suite *s = suite_create("kernels_sparse");
  TCase *tc = tcase_create("sparse_conv");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, sparse_plain_odd_sizes);
  tcase_add_test(tc, sparse_blocks);
  tcase_add_test(tc, sparse_strides);
  tcase_add_test(tc, sparse_model_shapes);
  tcase_add_test(tc, sparse_refusals);
  tcase_add_test(tc, sparse_block_refusals);
  tcase_add_test(tc, sparse_infer_shapes);
  tcase_add_test(tc, sparse_fully_connected);
  tcase_add_test(tc, sparse_interp_elides_covered_chain_only);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(sparse_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
