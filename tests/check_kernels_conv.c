/* check_kernels_conv.c - the convolution-family kernels (CONV_2D, DEPTHWISE_CONV_2D, MediaPipe
 * Convolution2DTransposeBias, builtin TRANSPOSE_CONV, BATCH_MATMUL, FULLY_CONNECTED) and the shared kernel helpers (padding, fused
 * activations, float16 conversion).
 * The inverted-residual fusion (kernels/fused_ir.c) against the two kernels run apart.
 *
 * Two kinds of evidence: small cases whose outputs were computed by hand from the TFLite
 * definitions (SAME padding with the odd pixel at the bottom/right, strides, dilation, depth
 * multiplier channel order, transpose-conv scatter), and randomized comparisons of each optimized
 * path (im2col tiles, 1x1 GEMM, GEMV, depthwise 3x3/5x5 interiors and borders) against naive
 * reference loops written here straight from the TFLite / MediaPipe definitions. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "kernels/ar_isa.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_kernels.h"
#include "kernels/ar_parallel.h"
#include "kernels/sgemm.h"

/* ---------- harness ---------- */

typedef struct {
  ar_tview_t t[4];     /* inputs 0..2, output = t[3] */
  ar_tview_t *io[4];   /* node.inputs (3), node.outputs (1) */
  ar_options_t opt;
  ar_node_t node;
} tnode_t;

static void tview_set(ar_tview_t *t, float *data, int32_t rank, const int32_t *dims, bool constant) {
  memset(t, 0, sizeof *t);
  t->data = data;
  t->dtype = AR_DTYPE_FLOAT32;
  t->rank = rank;
  uint64_t n = 1;
  for (int32_t i = 0; i < rank; i++) { t->dims[i] = dims[i]; n *= (uint64_t)dims[i]; }
  t->bytes = n * sizeof(float);
  t->is_constant = constant;
}

/* A node with input, filter/weights, optional bias (bias == NULL and bias_rank 0 -> omitted). */
static void tnode_init(tnode_t *tn, ar_op_t op, float *in, int32_t in_rank, const int32_t *in_dims,
                       float *w, int32_t w_rank, const int32_t *w_dims, float *bias, int32_t bias_n,
                       float *out, int32_t out_rank, const int32_t *out_dims) {
  memset(tn, 0, sizeof *tn);
  tview_set(&tn->t[0], in, in_rank, in_dims, false);
  tview_set(&tn->t[1], w, w_rank, w_dims, true);
  tview_set(&tn->t[3], out, out_rank, out_dims, false);
  tn->node.op = op;
  tn->node.index = 7;
  tn->node.version = 1;
  tn->node.options = &tn->opt;
  tn->node.n_inputs = 3;
  tn->node.n_outputs = 1;
  tn->node.inputs = tn->io;
  tn->node.outputs = tn->io + 3;
  tn->node.inputs[0] = &tn->t[0];
  tn->node.inputs[1] = &tn->t[1];
  if (bias) {
    tview_set(&tn->t[2], bias, 1, &bias_n, true);
    tn->node.inputs[2] = &tn->t[2];
  }
  tn->node.outputs[0] = &tn->t[3];
  tn->node.threads = 1;
}

/* prepare (must succeed), then scratch/state from the heap, init, eval. */
static void tnode_run(tnode_t *tn, const ar_kernel_t *k) {
  char msg[AR_MSG_BYTES] = "";
  int rc = k->prepare(&tn->node, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s prepare: %s (%s)", k->name, ar_err_name(rc), msg);
  /* Poison the scratch so a kernel that reads scratch it did not write shows up. */
  tn->node.scratch = tn->node.scratch_bytes ? malloc(tn->node.scratch_bytes) : NULL;
  if (tn->node.scratch) memset(tn->node.scratch, 0xff, tn->node.scratch_bytes);
  tn->node.state = tn->node.state_bytes ? malloc(tn->node.state_bytes) : NULL;
  if (k->init) k->init(&tn->node);
  k->eval(&tn->node);
  free(tn->node.scratch);
  free(tn->node.state);
  tn->node.scratch = tn->node.state = NULL;
}

static int tnode_prepare_err(tnode_t *tn, const ar_kernel_t *k, char *msg, size_t n) {
  msg[0] = '\0';
  return k->prepare(&tn->node, msg, n);
}

static void assert_close(const float *got, const float *want, size_t n, float tol, const char *what) {
  for (size_t i = 0; i < n; i++) {
    float scale = fabsf(want[i]) > 1.0f ? fabsf(want[i]) : 1.0f;
    ck_assert_msg(fabsf(got[i] - want[i]) <= tol * scale, "%s: element %zu is %.7g, want %.7g", what,
                  i, (double)got[i], (double)want[i]);
  }
}

static float *iota(size_t n, float start) {
  float *p = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) p[i] = start + (float)i;
  return p;
}
static float *filled(size_t n, float v) {
  float *p = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) p[i] = v;
  return p;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float frand(void) {   /* uniform in [-1, 1), deterministic (xorshift64*) */
  rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
  uint64_t r = rng_state * 2685821657736338717ull;
  return (float)((r >> 40) * (1.0 / 8388608.0)) - 1.0f;
}
static float *randv(size_t n) {
  float *p = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) p[i] = frand();
  return p;
}

/* Run the node on every float ISA level this CPU has (kernels/ar_isa.h): each level's output
 * within `tol` of `want`, and the AVX-512F output bit-identical to the AVX2 one (both add every
 * output's terms in the same order with FMA; the portable build has no FMA, hence the tolerance).
 * Leaves the automatic level in force and the best level's output in `out`. */
static void run_every_isa_x(tnode_t *tn, const ar_kernel_t *k, float *out, const float *want,
                            size_t nout, float tol, const char *what, bool same_order) {
  const int best = ar__f32_set_isa(-1);
  float *avx2 = malloc(nout * sizeof(float));
  char msg[200];
  for (int l = AR_ISA_PORTABLE; l <= best; l++) {
    ck_assert_int_eq(ar__f32_set_isa(l), l);
    memset(out, 0xff, nout * sizeof(float));
    tnode_run(tn, k);
    snprintf(msg, sizeof msg, "%s [%s]", what, ar_isa_name(l));
    assert_close(out, want, nout, tol, msg);
    if (l == AR_ISA_AVX2) memcpy(avx2, out, nout * sizeof(float));
    if (l == AR_ISA_AVX512 && same_order)
      for (size_t i = 0; i < nout; i++)
        ck_assert_msg(memcmp(&out[i], &avx2[i], sizeof(float)) == 0,
                      "%s: avx512f element %zu is %.9g, avx2 %.9g", what, i, (double)out[i],
                      (double)avx2[i]);
  }
  ar__f32_set_isa(-1);
  free(avx2);
}
static void run_every_isa(tnode_t *tn, const ar_kernel_t *k, float *out, const float *want,
                          size_t nout, float tol, const char *what) {
  run_every_isa_x(tn, k, out, want, nout, tol, what, true);
}

/* ---------- naive references, from the TFLite / MediaPipe definitions ---------- */

/* TFLite padding.h, written independently of ar_compute_padding. */
static int ref_out_size(int in, int k, int s, int d, bool same) {
  int eff = (k - 1) * d + 1;
  return same ? (in + s - 1) / s : (in - eff + s) / s;
}
static int ref_pad(int in, int k, int s, int d, int out) {
  int total = (out - 1) * s + (k - 1) * d + 1 - in;
  return total > 0 ? total / 2 : 0;
}
static float ref_act(float v, ar_activation_t act) {
  switch (act) {
  case AR_ACT_RELU: return v < 0 ? 0 : v;
  case AR_ACT_RELU6: return v < 0 ? 0 : v > 6 ? 6 : v;
  case AR_ACT_RELU_N1_TO_1: return v < -1 ? -1 : v > 1 ? 1 : v;
  case AR_ACT_TANH: return tanhf(v);
  case AR_ACT_SIGN_BIT: return signbit(v) ? 1.0f : 0.0f;
  default: return v;
  }
}

typedef struct {
  int n, h, w, c, o, kh, kw, sh, sw, dh, dw, mult;
  bool same, bias;
  ar_activation_t act;
} cfg_t;

static void ref_conv(const cfg_t *c, const float *in, const float *f, const float *b, float *out,
                     int oh, int ow) {
  int pt = ref_pad(c->h, c->kh, c->sh, c->dh, oh), pl = ref_pad(c->w, c->kw, c->sw, c->dw, ow);
  for (int n = 0; n < c->n; n++)
    for (int y = 0; y < oh; y++)
      for (int x = 0; x < ow; x++)
        for (int o = 0; o < c->o; o++) {
          double acc = b ? b[o] : 0.0;
          for (int ky = 0; ky < c->kh; ky++)
            for (int kx = 0; kx < c->kw; kx++) {
              int iy = y * c->sh - pt + ky * c->dh, ix = x * c->sw - pl + kx * c->dw;
              if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) continue;
              for (int i = 0; i < c->c; i++)
                acc += (double)in[((n * c->h + iy) * c->w + ix) * c->c + i] *
                       f[((o * c->kh + ky) * c->kw + kx) * c->c + i];
            }
          out[((n * oh + y) * ow + x) * c->o + o] = ref_act((float)acc, c->act);
        }
}

static void ref_dw(const cfg_t *c, const float *in, const float *f, const float *b, float *out,
                   int oh, int ow) {
  int pt = ref_pad(c->h, c->kh, c->sh, c->dh, oh), pl = ref_pad(c->w, c->kw, c->sw, c->dw, ow);
  int oc = c->c * c->mult;
  for (int n = 0; n < c->n; n++)
    for (int y = 0; y < oh; y++)
      for (int x = 0; x < ow; x++)
        for (int ic = 0; ic < c->c; ic++)
          for (int m = 0; m < c->mult; m++) {
            int o = ic * c->mult + m;
            double acc = b ? b[o] : 0.0;
            for (int ky = 0; ky < c->kh; ky++)
              for (int kx = 0; kx < c->kw; kx++) {
                int iy = y * c->sh - pt + ky * c->dh, ix = x * c->sw - pl + kx * c->dw;
                if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) continue;
                acc += (double)in[((n * c->h + iy) * c->w + ix) * c->c + ic] *
                       f[(ky * c->kw + kx) * oc + o];
              }
            out[((n * oh + y) * ow + x) * oc + o] = ref_act((float)acc, c->act);
          }
}

/* MediaPipe transpose_conv_bias.cc: bias, then scatter every input pixel through the filter. */
static void ref_tconv(const cfg_t *c, const float *in, const float *f, const float *b, float *out,
                      int oh, int ow, int pt, int pl) {
  for (int n = 0; n < c->n; n++) {
    for (int i = 0; i < oh * ow; i++)
      for (int o = 0; o < c->o; o++) out[(n * oh * ow + i) * c->o + o] = b[o];
    for (int iy = 0; iy < c->h; iy++)
      for (int ix = 0; ix < c->w; ix++)
        for (int i = 0; i < c->c; i++)
          for (int ky = 0; ky < c->kh; ky++)
            for (int kx = 0; kx < c->kw; kx++)
              for (int o = 0; o < c->o; o++) {
                int y = iy * c->sh - pt + ky, x = ix * c->sw - pl + kx;
                if (y < 0 || y >= oh || x < 0 || x >= ow) continue;
                out[((n * oh + y) * ow + x) * c->o + o] +=
                    in[((n * c->h + iy) * c->w + ix) * c->c + i] *
                    f[((o * c->kh + ky) * c->kw + kx) * c->c + i];
              }
  }
}

/* ---------- shared helpers ---------- */

START_TEST(padding_same_puts_odd_pixel_last) {
  int32_t pad = -1;
  /* in 4, k 3, s 2: out 2, total (2-1)*2+3-4 = 1 -> 0 before, 1 after. */
  ck_assert_int_eq(ar_compute_padding(AR_PADDING_SAME, 4, 3, 2, 1, &pad), 2);
  ck_assert_int_eq(pad, 0);
  /* in 5, k 3, s 2: out 3, total 2 -> 1 before. */
  ck_assert_int_eq(ar_compute_padding(AR_PADDING_SAME, 5, 3, 2, 1, &pad), 3);
  ck_assert_int_eq(pad, 1);
  /* in 5, k 2, s 2: out 3, total 1 -> 0 before. */
  ck_assert_int_eq(ar_compute_padding(AR_PADDING_SAME, 5, 2, 2, 1, &pad), 3);
  ck_assert_int_eq(pad, 0);
  /* in 6, k 1, s 2: total (3-1)*2+1-6 = -1 clamps to 0. */
  ck_assert_int_eq(ar_compute_padding(AR_PADDING_SAME, 6, 1, 2, 1, &pad), 3);
  ck_assert_int_eq(pad, 0);
  /* dilation 2: k 3 spans 5; in 7 s 1: total 4 -> 2 before. */
  ck_assert_int_eq(ar_compute_padding(AR_PADDING_SAME, 7, 3, 1, 2, &pad), 7);
  ck_assert_int_eq(pad, 2);
  /* VALID: (in - eff + s) / s, no padding. */
  ck_assert_int_eq(ar_compute_padding(AR_PADDING_VALID, 7, 3, 2, 1, &pad), 3);
  ck_assert_int_eq(pad, 0);
  ck_assert_int_eq(ar_compute_padding(AR_PADDING_VALID, 8, 3, 2, 1, &pad), 3);
  ck_assert_int_eq(ar_compute_padding(AR_PADDING_VALID, 7, 3, 1, 3, &pad), 1);
  ck_assert_int_eq(ar_compute_padding(AR_PADDING_VALID, 2, 3, 1, 1, &pad), 0);
}
END_TEST

START_TEST(activations_follow_tflite) {
  float x[6] = {-7.0f, -0.5f, -0.0f, 0.25f, 3.0f, 9.0f};
  float y[6];
  const struct { ar_activation_t act; float want[6]; } cases[] = {
    {AR_ACT_NONE, {-7.0f, -0.5f, -0.0f, 0.25f, 3.0f, 9.0f}},
    {AR_ACT_RELU, {0.0f, 0.0f, 0.0f, 0.25f, 3.0f, 9.0f}},
    {AR_ACT_RELU_N1_TO_1, {-1.0f, -0.5f, 0.0f, 0.25f, 1.0f, 1.0f}},
    {AR_ACT_RELU6, {0.0f, 0.0f, 0.0f, 0.25f, 3.0f, 6.0f}},
    {AR_ACT_SIGN_BIT, {1.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0.0f}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    memcpy(y, x, sizeof x);
    ar_apply_activation(y, 6, cases[c].act);
    for (int i = 0; i < 6; i++)
      ck_assert_msg(y[i] == cases[c].want[i], "act %d elem %d: %g", cases[c].act, i, (double)y[i]);
  }
  memcpy(y, x, sizeof x);
  ar_apply_activation(y, 6, AR_ACT_TANH);
  ck_assert_float_eq_tol(y[1], -0.46211716f, 1e-6f);
  ck_assert_float_eq_tol(y[4], 0.99505475f, 1e-6f);
  ck_assert_float_eq_tol(y[0], -0.99999834f, 1e-6f);
}
END_TEST

START_TEST(fp16_conversion_is_exact) {
  ck_assert(ar_fp16_to_fp32(0x3c00) == 1.0f);
  ck_assert(ar_fp16_to_fp32(0xc000) == -2.0f);
  ck_assert(ar_fp16_to_fp32(0x3555) == 0.333251953125f);
  ck_assert(ar_fp16_to_fp32(0x7bff) == 65504.0f);
  ck_assert(ar_fp16_to_fp32(0x0400) == ldexpf(1.0f, -14));      /* smallest normal */
  ck_assert(ar_fp16_to_fp32(0x0001) == ldexpf(1.0f, -24));      /* smallest subnormal */
  ck_assert(ar_fp16_to_fp32(0x03ff) == ldexpf(1023.0f, -24));   /* largest subnormal */
  ck_assert(ar_fp16_to_fp32(0x8001) == -ldexpf(1.0f, -24));
  float z = ar_fp16_to_fp32(0x8000);
  ck_assert(z == 0.0f && signbit(z));
  ck_assert(isinf(ar_fp16_to_fp32(0x7c00)) && ar_fp16_to_fp32(0x7c00) > 0);
  ck_assert(isinf(ar_fp16_to_fp32(0xfc00)) && ar_fp16_to_fp32(0xfc00) < 0);
  ck_assert(isnan(ar_fp16_to_fp32(0x7e00)));
  ck_assert(isnan(ar_fp16_to_fp32(0x7c01)));
  /* Every finite half round-trips through a double computation of its value. */
  for (uint32_t h = 0; h < 0x10000; h++) {
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) continue;
    double v = e ? ldexp(1.0 + m / 1024.0, (int)e - 15) : ldexp(m / 1024.0, -14);
    if (h & 0x8000) v = -v;
    ck_assert_msg(ar_fp16_to_fp32((uint16_t)h) == (float)v, "half 0x%04x", h);
  }
}
END_TEST

/* The run conversion (F16C when the CPU has it) against the one-value oracle, bit for bit, on all
 * 65536 halves, from every byte offset 0..3 (weights sit unaligned in the mapping) and with run
 * lengths that leave every tail 0..15; NaNs only need to stay NaNs (F16C quiets signalling ones). */
static void fp16_runs_match(void) {
  enum { N = 0x10000 };
  unsigned char *src = malloc(2 * N + 8);
  float *got = malloc((N + 16) * sizeof(float));
  ck_assert(src && got);
  for (size_t off = 0; off < 4; off++) {
    for (uint32_t h = 0; h < N; h++) {
      uint16_t v = (uint16_t)h;
      memcpy(src + off + 2 * h, &v, 2);
    }
    for (size_t len = N - 15; len <= N; len += (off == 0 ? 1 : 5)) {
      got[len] = -7.0f;   /* a guard: nothing past the run is written */
      ar_fp16_to_fp32_n(src + off, got, len);
      ck_assert(got[len] == -7.0f);
      for (uint32_t h = len == N ? 0 : (uint32_t)len - 20; h < len; h++) {
        float want = ar_fp16_to_fp32((uint16_t)h);
        if (isnan(want)) {
          ck_assert_msg(isnan(got[h]), "half 0x%04x", h);
        } else {
          uint32_t a, b;
          memcpy(&a, &got[h], 4);
          memcpy(&b, &want, 4);
          ck_assert_msg(a == b, "half 0x%04x at offset %zu, run %zu: 0x%08x, want 0x%08x", h, off, len, a, b);
        }
      }
    }
  }
  free(src);
  free(got);
}

START_TEST(fp16_runs_match_one_value_conversion) {
  bool f16c = ar_fp16_force_portable(0);
  printf("fp16 runs: %s path\n", f16c ? "F16C" : "portable");
  fp16_runs_match();
  ar_fp16_force_portable(1);
  fp16_runs_match();
  ar_fp16_force_portable(0);
}
END_TEST

/* ---------- CONV_2D ---------- */

/* fp16 weights read as stored vs the same node on widened fp32 weights: t16 (float16 filter and
 * bias) is prepared once at the best level, then evaluated at each level down to portable (the
 * ISA may change between prepare and eval) next to t32 at the same level; every output element
 * must be the same bytes. `what` names the case in a failure. */
static void fp16_vs_widened(const ar_kernel_t *k, tnode_t *t16, tnode_t *t32, float *out16,
                            float *out32, size_t nout, int best, const char *what) {
  char msg[AR_MSG_BYTES] = "";
  ck_assert_msg(k->prepare(&t16->node, msg, sizeof msg) == 0, "%s: %s", what, msg);
  t16->node.scratch = t16->node.scratch_bytes ? malloc(t16->node.scratch_bytes) : NULL;
  t16->node.state = t16->node.state_bytes ? malloc(t16->node.state_bytes) : NULL;
  if (t16->node.scratch) memset(t16->node.scratch, 0xff, t16->node.scratch_bytes);
  if (k->init) k->init(&t16->node);
  for (int l = best; l >= AR_ISA_PORTABLE; l--) {
    ck_assert_int_eq(ar__f32_set_isa(l), l);
    memset(out32, 0xff, nout * sizeof(float));
    memset(out16, 0xee, nout * sizeof(float));
    tnode_run(t32, k);
    k->eval(&t16->node);
    for (size_t i = 0; i < nout; i++)
      ck_assert_msg(memcmp(&out16[i], &out32[i], sizeof(float)) == 0,
                    "%s [%s]: element %zu is %.9g with fp16 weights, %.9g widened", what,
                    ar_isa_name(l), i, (double)out16[i], (double)out32[i]);
  }
  ar__f32_set_isa(-1);
  free(t16->node.scratch);
  free(t16->node.state);
  t16->node.scratch = t16->node.state = NULL;
}

/* The filter of `tn` (tensor 1) as `nf` float16 values, as stored. */
static void conv_use_fp16_filter(tnode_t *tn, uint16_t *f16, size_t nf) {
  tn->t[1].dtype = AR_DTYPE_FLOAT16;
  tn->t[1].data = f16;
  tn->t[1].bytes = nf * 2;
}

/* Run CONV_2D on `tn` at `threads` threads (1: no pool; 2, 3: pools[0], pools[1]) into `out`
 * (nout floats, filled with 0xee bytes first so that an unwritten element shows). */
static void conv_run_threads(tnode_t *tn, int32_t threads, ar_threadpool_t *pools[2], float *out, size_t nout) {
  ar_threadpool_t *pool = threads > 1 ? pools[threads - 2] : NULL;
  tn->node.threads = threads;
  tn->node.pool = pool;
  memset(out, 0xee, nout * sizeof(float));
  ar_threadpool_enter(pool);
  tnode_run(tn, &ar_kernel_conv_2d);
  ar_threadpool_leave(pool);
}

static void conv_opts(tnode_t *tn, ar_padding_t pad, int sh, int sw, int dh, int dw,
                      ar_activation_t act) {
  tn->opt.conv2d = (ar_conv2d_options_t){.padding = pad, .stride_h = sh, .stride_w = sw,
                                         .dilation_h = dh, .dilation_w = dw, .activation = act};
}

/* 4x4 input 1..16, 3x3 all-ones filter: each output is the sum of the in-bounds neighbourhood. */
START_TEST(conv_same_even_stride1) {
  float *in = iota(16, 1), *f = filled(9, 1), out[16];
  int32_t di[4] = {1, 4, 4, 1}, df[4] = {1, 3, 3, 1}, dout[4] = {1, 4, 4, 1};
  tnode_t tn;
  tnode_init(&tn, AR_OP_CONV_2D, in, 4, di, f, 4, df, NULL, 0, out, 4, dout);
  conv_opts(&tn, AR_PADDING_SAME, 1, 1, 1, 1, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_conv_2d);
  const float want[16] = {14, 24, 30, 22, 33, 54, 63, 45, 57, 90, 99, 69, 46, 72, 78, 54};
  assert_close(out, want, 16, 0, "conv SAME 4x4 s1");
  free(in); free(f);
}
END_TEST

/* Even input, stride 2: total padding 1 goes to the bottom/right, so output (0,0) covers rows and
 * columns 0..2 (54), not -1..1 (14). */
START_TEST(conv_same_even_stride2_pads_bottom_right) {
  float *in = iota(16, 1), *f = filled(9, 1), out[4];
  int32_t di[4] = {1, 4, 4, 1}, df[4] = {1, 3, 3, 1}, dout[4] = {1, 2, 2, 1};
  tnode_t tn;
  tnode_init(&tn, AR_OP_CONV_2D, in, 4, di, f, 4, df, NULL, 0, out, 4, dout);
  conv_opts(&tn, AR_PADDING_SAME, 2, 2, 1, 1, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_conv_2d);
  const float want[4] = {54, 45, 72, 54};
  assert_close(out, want, 4, 0, "conv SAME 4x4 s2");
  free(in); free(f);
}
END_TEST

/* Odd input 5x5 (1..25), stride 2: 3x3 pads 1 on each side; 2x2 pads 0 before, 1 after. */
START_TEST(conv_same_odd_stride2) {
  float *in = iota(25, 1), *f = filled(9, 1), out[9];
  int32_t di[4] = {1, 5, 5, 1}, df[4] = {1, 3, 3, 1}, dout[4] = {1, 3, 3, 1};
  tnode_t tn;
  tnode_init(&tn, AR_OP_CONV_2D, in, 4, di, f, 4, df, NULL, 0, out, 4, dout);
  conv_opts(&tn, AR_PADDING_SAME, 2, 2, 1, 1, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_conv_2d);
  const float want[9] = {16, 33, 28, 69, 117, 87, 76, 123, 88};
  assert_close(out, want, 9, 0, "conv SAME 5x5 s2 k3");

  int32_t df2[4] = {1, 2, 2, 1};
  tnode_init(&tn, AR_OP_CONV_2D, in, 4, di, f, 4, df2, NULL, 0, out, 4, dout);
  conv_opts(&tn, AR_PADDING_SAME, 2, 2, 1, 1, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_conv_2d);
  const float want2[9] = {16, 24, 15, 56, 64, 35, 43, 47, 25};
  assert_close(out, want2, 9, 0, "conv SAME 5x5 s2 k2");
  free(in); free(f);
}
END_TEST

/* 2x2 all-ones filter, dilation 2, VALID on 5x5: out(y,x) = in(y,x)+in(y,x+2)+in(y+2,x)+in(y+2,x+2). */
START_TEST(conv_dilation) {
  float *in = iota(25, 1), *f = filled(4, 1), out[9];
  int32_t di[4] = {1, 5, 5, 1}, df[4] = {1, 2, 2, 1}, dout[4] = {1, 3, 3, 1};
  tnode_t tn;
  tnode_init(&tn, AR_OP_CONV_2D, in, 4, di, f, 4, df, NULL, 0, out, 4, dout);
  conv_opts(&tn, AR_PADDING_VALID, 1, 1, 2, 2, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_conv_2d);
  const float want[9] = {28, 32, 36, 48, 52, 56, 68, 72, 76};
  assert_close(out, want, 9, 0, "conv dilation 2");
  free(in); free(f);
}
END_TEST

/* 1x1 (direct GEMM path), two pixels, three output channels, bias, RELU6. */
START_TEST(conv_1x1_bias_relu6) {
  float in[4] = {1, 2, 3, -4};
  float f[6] = {1, 1, 1, -1, 2, 3};
  float b[3] = {0.5f, -1, 0};
  float out[6];
  int32_t di[4] = {1, 2, 1, 2}, df[4] = {3, 1, 1, 2}, dout[4] = {1, 2, 1, 3};
  tnode_t tn;
  tnode_init(&tn, AR_OP_CONV_2D, in, 4, di, f, 4, df, b, 3, out, 4, dout);
  conv_opts(&tn, AR_PADDING_SAME, 1, 1, 1, 1, AR_ACT_RELU6);
  tnode_run(&tn, &ar_kernel_conv_2d);
  ck_assert_uint_eq(tn.node.scratch_bytes, 0);   /* no im2col for 1x1 stride 1 */
  const float want[6] = {3.5f, 0, 6, 0, 6, 0};
  assert_close(out, want, 6, 0, "conv 1x1 RELU6");
  /* Same through RELU: the 8 is kept. */
  conv_opts(&tn, AR_PADDING_SAME, 1, 1, 1, 1, AR_ACT_RELU);
  tnode_run(&tn, &ar_kernel_conv_2d);
  const float want2[6] = {3.5f, 0, 8, 0, 6, 0};
  assert_close(out, want2, 6, 0, "conv 1x1 RELU");
}
END_TEST

static void conv_random_case(const cfg_t *c) {
  int oh = ref_out_size(c->h, c->kh, c->sh, c->dh, c->same);
  int ow = ref_out_size(c->w, c->kw, c->sw, c->dw, c->same);
  size_t nin = (size_t)c->n * c->h * c->w * c->c, nf = (size_t)c->o * c->kh * c->kw * c->c;
  size_t nout = (size_t)c->n * oh * ow * c->o;
  float *in = randv(nin), *f = randv(nf), *b = c->bias ? randv((size_t)c->o) : NULL;
  float *out = malloc(nout * sizeof(float)), *want = malloc(nout * sizeof(float));
  int32_t di[4] = {c->n, c->h, c->w, c->c}, df[4] = {c->o, c->kh, c->kw, c->c};
  int32_t dout[4] = {c->n, oh, ow, c->o};
  tnode_t tn;
  tnode_init(&tn, AR_OP_CONV_2D, in, 4, di, f, 4, df, b, c->o, out, 4, dout);
  conv_opts(&tn, c->same ? AR_PADDING_SAME : AR_PADDING_VALID, c->sh, c->sw, c->dh, c->dw, c->act);
  ref_conv(c, in, f, b, want, oh, ow);
  char what[160];
  snprintf(what, sizeof what, "conv n%d %dx%dx%d -> %d k%dx%d s%dx%d d%dx%d %s act %d", c->n, c->h,
           c->w, c->c, c->o, c->kh, c->kw, c->sh, c->sw, c->dh, c->dw, c->same ? "SAME" : "VALID",
           c->act);
  /* The few-input-channel loop sums in the same order on AVX2 and AVX-512; the GEMM paths are
   * checked within tolerance here (OpenBLAS, or arenad's own GEMM on both levels: check_isa tests
   * that one exactly, AVX2 against AVX-512F). */
  const bool few = c->c <= 4 && (c->o == 16 || c->o == 24 || c->o == 32) &&
                   !(c->kh == 1 && c->kw == 1 && c->sh == 1 && c->sw == 1);
  run_every_isa_x(&tn, &ar_kernel_conv_2d, out, want, nout, 2e-5f, what, few);
  free(in); free(f); free(b); free(out); free(want);
}

START_TEST(conv_random_vs_naive) {
  const cfg_t cases[] = {
    /* n  h   w   c   o  kh kw sh sw dh dw m  same  bias  act */
    {1, 16, 16, 8, 12, 1, 1, 1, 1, 1, 1, 1, true, true, AR_ACT_NONE},      /* 1x1 GEMM */
    {1, 1, 1, 96, 24, 1, 1, 1, 1, 1, 1, 1, false, true, AR_ACT_RELU},      /* 1x1 GEMV */
    {2, 7, 5, 16, 9, 1, 1, 1, 1, 1, 1, 1, true, false, AR_ACT_RELU6},      /* batch 2 */
    {1, 17, 16, 3, 16, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},      /* first-layer style */
    {1, 20, 20, 64, 8, 3, 3, 1, 1, 1, 1, 1, true, true, AR_ACT_RELU6},     /* several im2col tiles */
    {1, 13, 11, 5, 7, 5, 5, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},       /* 5x5 s2 odd */
    {1, 12, 12, 4, 6, 3, 3, 2, 2, 1, 1, 1, false, true, AR_ACT_RELU},      /* VALID s2 */
    {1, 9, 10, 3, 5, 3, 3, 1, 1, 2, 3, 1, true, true, AR_ACT_NONE},        /* dilation SAME */
    {2, 9, 8, 6, 4, 3, 2, 2, 1, 1, 1, 1, true, false, AR_ACT_RELU_N1_TO_1},/* non-square */
    {1, 8, 8, 10, 6, 1, 1, 2, 2, 1, 1, 1, true, true, AR_ACT_TANH},        /* 1x1 stride 2 */
    {1, 64, 64, 16, 16, 3, 3, 1, 1, 1, 1, 1, true, true, AR_ACT_NONE},     /* many tiles */
    /* Few input channels (direct loop over packed weights): 16/24/32 outputs, borders, blocks. */
    {2, 11, 13, 3, 24, 5, 5, 2, 2, 1, 1, 1, true, true, AR_ACT_RELU6},
    {1, 15, 14, 4, 32, 3, 3, 1, 1, 1, 1, 1, false, false, AR_ACT_NONE},
    {1, 10, 9, 1, 16, 3, 3, 2, 1, 2, 2, 1, true, true, AR_ACT_RELU},
    {1, 9, 9, 2, 32, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_TANH},
    {1, 33, 40, 3, 16, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},
    /* AVX-512 few-input blocks: 8-pixel runs and their tails, 16 and 32 outputs. */
    {1, 21, 45, 3, 32, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_RELU6},
    {2, 13, 37, 4, 16, 5, 5, 1, 1, 1, 1, 1, true, false, AR_ACT_NONE},
    {1, 19, 30, 2, 32, 3, 3, 1, 2, 1, 2, 1, false, true, AR_ACT_NONE},
    /* Channel-major 16-pixel blocks (KW*I <= 16): 24 outputs, 17/33-wide rows, 5x5 x 3. */
    {1, 23, 35, 3, 24, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_RELU6},
    {1, 9, 41, 3, 24, 5, 5, 1, 1, 1, 1, 1, true, false, AR_ACT_NONE},
    {1, 11, 50, 4, 16, 3, 3, 2, 2, 2, 1, 1, true, true, AR_ACT_NONE},
    {1, 14, 19, 3, 16, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_RELU_N1_TO_1},   /* clamp at the store */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) conv_random_case(&cases[i]);
}
END_TEST

/* A random float16 bit pattern of a weight: normals in about [-2, 2], every 13th a subnormal, the
 * odd signed zero. */
static uint16_t rand_f16_bits(size_t i) {
  const uint16_t sign = frand() < 0 ? 0x8000 : 0;
  if (i % 29 == 5) return sign;
  if (i % 13 == 3) return (uint16_t)(sign | (1 + (uint16_t)((frand() + 1.0f) * 511.0f)));   /* subnormal */
  const uint16_t exp = (uint16_t)(8 + (int)((frand() + 1.0f) * 4.0f));   /* 2^-7 .. 2^1 */
  return (uint16_t)(sign | (uint16_t)(exp << 10) | (uint16_t)((frand() + 1.0f) * 511.0f));
}

/* Stored weights: CONV_2D reading its filter and bias as float16 (the interpreter elides their
 * DEQUANTIZE, ar_kernel_reads_f16) gives exactly the bytes of the same node on the widened float32
 * weights, on every float ISA level - including a level forced after prepare (the OpenBLAS path
 * widens into the scratch prepare reserved, the own GEMM (kernels/sgemm.h) widens while packing,
 * the few-input loop in its init) - on the GEMM, im2col-tile, GEMV, odd-K and few-input-channel paths. */
START_TEST(conv_fp16_weights_bit_identical) {
  const cfg_t cases[] = {
    /* n  h   w   c   o  kh kw sh sw dh dw m  same  bias  act */
    {1, 16, 16, 8, 12, 1, 1, 1, 1, 1, 1, 1, true, true, AR_ACT_NONE},      /* 1x1 GEMM */
    {1, 1, 1, 96, 24, 1, 1, 1, 1, 1, 1, 1, false, true, AR_ACT_RELU},      /* one row */
    {1, 2, 1, 37, 40, 1, 1, 1, 1, 1, 1, 1, false, true, AR_ACT_RELU6},     /* 2 rows, odd K */
    {1, 20, 20, 64, 8, 3, 3, 1, 1, 1, 1, 1, true, true, AR_ACT_RELU6},     /* im2col tiles */
    {1, 13, 11, 5, 7, 5, 5, 2, 2, 1, 1, 1, true, false, AR_ACT_NONE},      /* one tile, no bias */
    {1, 9, 9, 300, 33, 1, 1, 1, 1, 1, 1, 1, true, true, AR_ACT_TANH},      /* K past one chunk */
    {1, 8, 8, 10, 6, 1, 1, 2, 2, 1, 1, 1, true, true, AR_ACT_RELU},        /* 1x1 stride 2 */
    {2, 11, 13, 3, 24, 5, 5, 2, 2, 1, 1, 1, true, true, AR_ACT_RELU6},     /* few input channels */
    {1, 21, 45, 3, 32, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},
  };
  const int best = ar__f32_set_isa(-1);
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const cfg_t *c = &cases[ci];
    int oh = ref_out_size(c->h, c->kh, c->sh, c->dh, c->same);
    int ow = ref_out_size(c->w, c->kw, c->sw, c->dw, c->same);
    size_t nin = (size_t)c->n * c->h * c->w * c->c, nf = (size_t)c->o * c->kh * c->kw * c->c;
    size_t nout = (size_t)c->n * oh * ow * c->o;
    float *in = randv(nin), *f = malloc(nf * sizeof(float)), *b = malloc((size_t)c->o * sizeof(float));
    uint16_t *f16 = malloc(nf * sizeof *f16 + 2), *b16 = malloc((size_t)c->o * sizeof *b16 + 2);
    /* The fp16 views sit at an odd 2-byte offset, as weights may in the model's mapping. */
    uint16_t *f16u = (uint16_t *)(void *)((char *)f16 + 2), *b16u = (uint16_t *)(void *)((char *)b16 + 2);
    for (size_t i = 0; i < nf; i++) {
      const uint16_t h = rand_f16_bits(i);
      memcpy(&f16u[i], &h, sizeof h);
      f[i] = ar_fp16_to_fp32(h);
    }
    for (int i = 0; i < c->o; i++) {
      const uint16_t h = rand_f16_bits((size_t)i + 1);
      memcpy(&b16u[i], &h, sizeof h);
      b[i] = ar_fp16_to_fp32(h);
    }
    float *out32 = malloc(nout * sizeof(float)), *out16 = malloc(nout * sizeof(float));
    int32_t di[4] = {c->n, c->h, c->w, c->c}, df[4] = {c->o, c->kh, c->kw, c->c};
    int32_t dout[4] = {c->n, oh, ow, c->o};
    tnode_t t32, t16;
    tnode_init(&t32, AR_OP_CONV_2D, in, 4, di, f, 4, df, c->bias ? b : NULL, c->o, out32, 4, dout);
    tnode_init(&t16, AR_OP_CONV_2D, in, 4, di, f, 4, df, c->bias ? b : NULL, c->o, out16, 4, dout);
    conv_opts(&t32, c->same ? AR_PADDING_SAME : AR_PADDING_VALID, c->sh, c->sw, c->dh, c->dw, c->act);
    conv_opts(&t16, c->same ? AR_PADDING_SAME : AR_PADDING_VALID, c->sh, c->sw, c->dh, c->dw, c->act);
    /* What the interpreter asks before it hands fp16 over. */
    ck_assert(ar_kernel_reads_f16(&t32.node, 1));
    ck_assert(ar_kernel_reads_f16(&t32.node, 2) == c->bias);
    ck_assert(!ar_kernel_reads_f16(&t32.node, 0));
    t16.t[1].dtype = AR_DTYPE_FLOAT16;
    t16.t[1].data = f16u;
    t16.t[1].bytes = nf * 2;
    if (c->bias) {
      t16.t[2].dtype = AR_DTYPE_FLOAT16;
      t16.t[2].data = b16u;
      t16.t[2].bytes = (size_t)c->o * 2;
    }
    char what[160];
    snprintf(what, sizeof what, "conv fp16 n%d %dx%dx%d -> %d k%dx%d s%dx%d %s act %d", c->n, c->h,
             c->w, c->c, c->o, c->kh, c->kw, c->sh, c->sw, c->same ? "SAME" : "VALID", c->act);
    /* Prepared once at the best level, then evaluated at each level (the ISA may change between
     * prepare and eval); the fp32 node runs the same level each time. */
    fp16_vs_widened(&ar_kernel_conv_2d, &t16, &t32, out16, out32, nout, best, what);
    free(in); free(f); free(b); free(f16); free(b16); free(out32); free(out16);
  }
}
END_TEST

/* CONV_2D's own-GEMM products (kernels/sgemm.h) split by thread count (kernels/gemm.c): runs of
 * columns when N > M (a 7x7 map: each thread packs only its panels of B), runs of rows
 * otherwise; 2 and 3 threads give exactly the bytes of one thread, fp32 and fp16 filters, on
 * splits that cut a 16- or 32-column panel, N not a multiple of 16, K past one 256-chunk, and the
 * one-tile im2col path. */
START_TEST(conv_split_bit_identical) {
  const cfg_t cases[] = {
    /* n  h   w   c    o  kh kw sh sw dh dw m  same  bias  act */
    {1, 7, 7, 40, 150, 1, 1, 1, 1, 1, 1, 1, true, true, AR_ACT_RELU6},   /* columns: 49 x 150 */
    {1, 7, 7, 300, 200, 1, 1, 1, 1, 1, 1, 1, true, true, AR_ACT_NONE},   /* columns, K > 256 */
    {1, 7, 7, 150, 40, 1, 1, 1, 1, 1, 1, 1, true, false, AR_ACT_RELU},   /* rows: 49 x 40 */
    {1, 14, 9, 24, 100, 1, 1, 1, 1, 1, 1, 1, true, true, AR_ACT_TANH},   /* rows: 126 x 100 */
    {1, 6, 6, 8, 100, 3, 3, 1, 1, 1, 1, 1, true, true, AR_ACT_RELU6},    /* im2col, one tile */
  };
  char msg[AR_MSG_BYTES] = "";
  ar_threadpool_t *pools[2] = {NULL, NULL};
  ck_assert_int_eq(ar_threadpool_new(2, &pools[0], msg, sizeof msg), 0);
  ck_assert_int_eq(ar_threadpool_new(3, &pools[1], msg, sizeof msg), 0);
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const cfg_t *c = &cases[ci];
    int oh = ref_out_size(c->h, c->kh, c->sh, c->dh, c->same);
    int ow = ref_out_size(c->w, c->kw, c->sw, c->dw, c->same);
    size_t nin = (size_t)c->n * c->h * c->w * c->c, nf = (size_t)c->o * c->kh * c->kw * c->c;
    size_t nout = (size_t)c->n * oh * ow * c->o;
    float *in = randv(nin), *f = malloc(nf * sizeof(float)), *b = randv((size_t)c->o);
    uint16_t *f16 = malloc(nf * sizeof *f16);
    for (size_t i = 0; i < nf; i++) {
      f16[i] = rand_f16_bits(i);
      f[i] = ar_fp16_to_fp32(f16[i]);
    }
    float *out = malloc(nout * sizeof(float)), *one = malloc(nout * sizeof(float));
    int32_t di[4] = {c->n, c->h, c->w, c->c}, df[4] = {c->o, c->kh, c->kw, c->c};
    int32_t dout[4] = {c->n, oh, ow, c->o};
    for (int half = 0; half < 2; half++) {
      tnode_t tn;
      tnode_init(&tn, AR_OP_CONV_2D, in, 4, di, f, 4, df, c->bias ? b : NULL, c->o, out, 4, dout);
      conv_opts(&tn, c->same ? AR_PADDING_SAME : AR_PADDING_VALID, c->sh, c->sw, c->dh, c->dw,
                c->act);
      if (half) conv_use_fp16_filter(&tn, f16, nf);
      for (int32_t threads = 1; threads <= 3; threads++) {
        conv_run_threads(&tn, threads, pools, out, nout);
        if (threads == 1 && !half) memcpy(one, out, nout * sizeof(float));
        else
          ck_assert_msg(memcmp(one, out, nout * sizeof(float)) == 0,
                        "conv %dx%dx%d -> %d k%d %s: %d threads differ from 1 thread fp32", c->h,
                        c->w, c->c, c->o, c->kh, half ? "fp16" : "fp32", (int)threads);
      }
    }
    free(in); free(f); free(b); free(f16); free(out); free(one);
  }
  ar_threadpool_free(pools[0]);
  ar_threadpool_free(pools[1]);
}
END_TEST

/* 1x1 CONV_2D with 1..8 output channels (a detector's heads) runs kernels/conv.c's rows-per-
 * vector loop wherever the own GEMM runs (16 rows per zmm on AVX-512F, 8 per ymm on AVX2, two
 * blocks of 8 when N <= 6): every output is its terms in ascending k from 0 with one FMA each,
 * then + bias, and the own GEMM's clamp, i.e. exactly the own GEMM's bits (a scalar fmaf chain
 * here), at every level the CPU has from AVX2 up; fp32 and fp16 filters, 1, 2 and 3 threads,
 * row tails of 1..15, K not a multiple of 8 or 16, no bias, TANH after. At the portable level OpenBLAS, within
 * rounding. On aarch64 the NEON GEMM itself takes them, in the same order. */
START_TEST(conv_few_outputs_exact) {
  const struct { int h, w, c, o; bool bias; ar_activation_t act; } cases[] = {
    {48, 48, 48, 1, true, AR_ACT_NONE}, {16, 16, 88, 2, true, AR_ACT_RELU},
    {8, 8, 96, 6, true, AR_ACT_RELU6},  {3, 7, 37, 3, false, AR_ACT_NONE},
    {5, 5, 17, 8, true, AR_ACT_TANH},   {2, 2, 300, 5, true, AR_ACT_RELU_N1_TO_1},
    {1, 17, 16, 7, true, AR_ACT_RELU},  {13, 11, 1, 4, true, AR_ACT_NONE},
    {3, 9, 9, 5, false, AR_ACT_RELU6},  {5, 3, 23, 8, false, AR_ACT_RELU},   /* 27 rows, 15 rows */
  };
  const int best = ar__f32_set_isa(-1);
  char msg[AR_MSG_BYTES] = "";
  ar_threadpool_t *pools[2] = {NULL, NULL};
  ck_assert_int_eq(ar_threadpool_new(2, &pools[0], msg, sizeof msg), 0);
  ck_assert_int_eq(ar_threadpool_new(3, &pools[1], msg, sizeof msg), 0);
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const int h = cases[ci].h, w = cases[ci].w, c = cases[ci].c, o = cases[ci].o;
    const size_t m = (size_t)h * w, nin = m * c, nf = (size_t)o * c, nout = m * o;
    float *in = randv(nin), *f = malloc(nf * sizeof(float)), *b = randv((size_t)o);
    uint16_t *f16 = malloc(nf * sizeof *f16);
    for (size_t i = 0; i < nf; i++) {
      f16[i] = rand_f16_bits(i);
      f[i] = ar_fp16_to_fp32(f16[i]);
    }
    float *out = malloc(nout * sizeof(float)), *want = malloc(nout * sizeof(float));
    for (size_t p = 0; p < m; p++)
      for (int q = 0; q < o; q++) {
        float acc = 0.0f;
        for (int k = 0; k < c; k++) acc = fmaf(in[p * c + k], f[(size_t)q * c + k], acc);
        want[p * o + q] = cases[ci].bias ? acc + b[q] : acc;
        ar_apply_activation(&want[p * o + q], 1, cases[ci].act);
      }
    int32_t di[4] = {1, h, w, c}, df[4] = {o, 1, 1, c}, dout[4] = {1, h, w, o};
    for (int half = 0; half < 2; half++) {
      tnode_t tn;
      tnode_init(&tn, AR_OP_CONV_2D, in, 4, di, f, 4, df, cases[ci].bias ? b : NULL, o, out, 4, dout);
      conv_opts(&tn, AR_PADDING_SAME, 1, 1, 1, 1, cases[ci].act);
      if (half) conv_use_fp16_filter(&tn, f16, nf);
      for (int l = best; l >= AR_ISA_PORTABLE; l--) {
        ck_assert_int_eq(ar__f32_set_isa(l), l);
        for (int32_t threads = 1; threads <= 3; threads++) {
          conv_run_threads(&tn, threads, pools, out, nout);
          snprintf(msg, sizeof msg, "conv %dx%dx%d -> %d %s, %d threads [%s]", h, w, c, o,
                   half ? "fp16" : "fp32", (int)threads, ar_isa_name(l));
          if (!ar_sgemm_own_available()) {
            assert_close(out, want, nout, 1e-5f, msg);
            continue;
          }
          for (size_t i = 0; i < nout; i++)
            ck_assert_msg(memcmp(&out[i], &want[i], sizeof(float)) == 0, "%s: element %zu is %.9g, "
                          "want %.9g", msg, i, (double)out[i], (double)want[i]);
        }
      }
      ar__f32_set_isa(-1);
    }
    free(in); free(f); free(b); free(f16); free(out); free(want);
  }
  ar_threadpool_free(pools[0]);
  ar_threadpool_free(pools[1]);
}
END_TEST

START_TEST(conv_prepare_errors) {
  float in[48] = {0}, f[288] = {0}, out[512] = {0};
  char msg[AR_MSG_BYTES];
  tnode_t tn;
  int32_t di[4] = {1, 4, 4, 3}, df[4] = {8, 3, 3, 4}, dout[4] = {1, 2, 2, 8};
  tnode_init(&tn, AR_OP_CONV_2D, in, 4, di, f, 4, df, NULL, 0, out, 4, dout);
  conv_opts(&tn, AR_PADDING_SAME, 2, 2, 1, 1, AR_ACT_NONE);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_conv_2d, msg, sizeof msg), AR_ESHAPE);
  ck_assert_str_eq(msg, "operator 7 (CONV_2D): filter shape [8,3,3,4] does not match input channels 3");

  int32_t df2[4] = {8, 3, 3, 3}, dbad[4] = {1, 4, 4, 8};
  tnode_init(&tn, AR_OP_CONV_2D, in, 4, di, f, 4, df2, NULL, 0, out, 4, dbad);
  conv_opts(&tn, AR_PADDING_SAME, 2, 2, 1, 1, AR_ACT_NONE);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_conv_2d, msg, sizeof msg), AR_ESHAPE);
  ck_assert_str_eq(msg, "operator 7 (CONV_2D): output shape [1,4,4,8], expected [1,2,2,8]");

  /* A dilation whose window spans 2^31 pixels (SAME padding: the geometry alone would pass) is
   * refused at prepare, before the kernel's int32 pixel offsets could overflow. */
  tnode_init(&tn, AR_OP_CONV_2D, in, 4, di, f, 4, df2, NULL, 0, out, 4, dout);
  conv_opts(&tn, AR_PADDING_SAME, 2, 2, 1 << 30, 1, AR_ACT_NONE);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_conv_2d, msg, sizeof msg), AR_EUNSUPPORTED);
  ck_assert_str_eq(msg, "operator 7 (CONV_2D): filter 3x3 with dilation 1073741824x1 spans 2147483649x3 input "
                        "pixels, stride 2x2: above the supported 65536 pixels per dimension (or 1048576 taps)");
  conv_opts(&tn, AR_PADDING_SAME, 1 << 20, 2, 1, 1, AR_ACT_NONE);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_conv_2d, msg, sizeof msg), AR_EUNSUPPORTED);

  /* The same node with the right output shape prepares, with an im2col scratch of 4 pixels x 27. */
  tnode_init(&tn, AR_OP_CONV_2D, in, 4, di, f, 4, df2, NULL, 0, out, 4, dout);
  conv_opts(&tn, AR_PADDING_SAME, 2, 2, 1, 1, AR_ACT_NONE);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_conv_2d, msg, sizeof msg), 0);
  ck_assert_uint_eq(tn.node.scratch_bytes, 4 * 27 * sizeof(float));

  /* 3 input channels and 16 outputs: the direct path, weights packed in state, no im2col
   * (aarch64: im2col + the NEON GEMM, kernels/conv.c AR_CONV_FEW_IN_LOOP). */
  int32_t df16[4] = {16, 3, 3, 3}, dout16[4] = {1, 2, 2, 16};
  tnode_t tn16;
  tnode_init(&tn16, AR_OP_CONV_2D, in, 4, di, f, 4, df16, NULL, 0, out, 4, dout16);
  conv_opts(&tn16, AR_PADDING_SAME, 2, 2, 1, 1, AR_ACT_NONE);
  ck_assert_int_eq(tnode_prepare_err(&tn16, &ar_kernel_conv_2d, msg, sizeof msg), 0);
#if defined(__aarch64__)
  ck_assert_uint_eq(tn16.node.scratch_bytes, 4 * 27 * sizeof(float));
  ck_assert_uint_eq(tn16.node.state_bytes, 0);
#else
  ck_assert_uint_eq(tn16.node.scratch_bytes, 0);
  ck_assert_uint_eq(tn16.node.state_bytes, 27 * 16 * sizeof(float));
#endif

  tn.t[0].dtype = AR_DTYPE_FLOAT16;
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_conv_2d, msg, sizeof msg), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(msg, "operator 7 (CONV_2D): only float32") == msg, "%s", msg);
  tn.t[0].dtype = AR_DTYPE_FLOAT32;

  float b[5] = {0};
  int32_t nb = 5;
  tview_set(&tn.t[2], b, 1, &nb, true);
  tn.node.inputs[2] = &tn.t[2];
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_conv_2d, msg, sizeof msg), AR_ESHAPE);
  ck_assert_str_eq(msg, "operator 7 (CONV_2D): bias shape [5] does not match 8 output channels");
  tn.node.inputs[2] = NULL;

  conv_opts(&tn, AR_PADDING_SAME, 0, 2, 1, 1, AR_ACT_NONE);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_conv_2d, msg, sizeof msg), AR_EUNSUPPORTED);
}
END_TEST

/* ---------- DEPTHWISE_CONV_2D ---------- */

static void dw_opts(tnode_t *tn, ar_padding_t pad, int sh, int sw, int dh, int dw, int mult,
                    ar_activation_t act) {
  tn->opt.depthwise = (ar_depthwise_options_t){.padding = pad, .stride_h = sh, .stride_w = sw,
                                               .dilation_h = dh, .dilation_w = dw,
                                               .depth_multiplier = mult, .activation = act};
}

/* Two channels: channel 0 = 1..16 with weights 1, channel 1 = -(1..16) with weights 2; bias 1, -1. */
START_TEST(dw_3x3_same_even) {
  float in[32], f[18], b[2] = {1, -1}, out[32];
  for (int i = 0; i < 16; i++) { in[2 * i] = (float)(i + 1); in[2 * i + 1] = -(float)(i + 1); }
  for (int i = 0; i < 9; i++) { f[2 * i] = 1; f[2 * i + 1] = 2; }
  int32_t di[4] = {1, 4, 4, 2}, df[4] = {1, 3, 3, 2}, dout[4] = {1, 4, 4, 2};
  tnode_t tn;
  tnode_init(&tn, AR_OP_DEPTHWISE_CONV_2D, in, 4, di, f, 4, df, b, 2, out, 4, dout);
  dw_opts(&tn, AR_PADDING_SAME, 1, 1, 1, 1, 1, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_depthwise_conv_2d);
  const float sums[16] = {14, 24, 30, 22, 33, 54, 63, 45, 57, 90, 99, 69, 46, 72, 78, 54};
  float want[32];
  for (int i = 0; i < 16; i++) { want[2 * i] = sums[i] + 1; want[2 * i + 1] = -2 * sums[i] - 1; }
  assert_close(out, want, 32, 0, "dw 3x3 SAME 4x4");
}
END_TEST

START_TEST(dw_stride2_same_odd_and_even) {
  float *in16 = iota(16, 1), *in25 = iota(25, 1), *f = filled(9, 1), out[9];
  int32_t di[4] = {1, 4, 4, 1}, df[4] = {1, 3, 3, 1}, dout[4] = {1, 2, 2, 1};
  tnode_t tn;
  tnode_init(&tn, AR_OP_DEPTHWISE_CONV_2D, in16, 4, di, f, 4, df, NULL, 0, out, 4, dout);
  dw_opts(&tn, AR_PADDING_SAME, 2, 2, 1, 1, 1, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_depthwise_conv_2d);
  const float want_even[4] = {54, 45, 72, 54};
  assert_close(out, want_even, 4, 0, "dw SAME 4x4 s2");

  int32_t di5[4] = {1, 5, 5, 1}, dout5[4] = {1, 3, 3, 1};
  tnode_init(&tn, AR_OP_DEPTHWISE_CONV_2D, in25, 4, di5, f, 4, df, NULL, 0, out, 4, dout5);
  dw_opts(&tn, AR_PADDING_SAME, 2, 2, 1, 1, 1, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_depthwise_conv_2d);
  const float want_odd[9] = {16, 33, 28, 69, 117, 87, 76, 123, 88};
  assert_close(out, want_odd, 9, 0, "dw SAME 5x5 s2");
  free(in16); free(in25); free(f);
}
END_TEST

/* 5x5 all-ones on 5x5 (1..25), SAME stride 1: the centre sees everything (325); the corner sees
 * rows/cols 0..2 (63); RELU6 clamps both to 6 in a second run. */
START_TEST(dw_5x5_same) {
  float *in = iota(25, 1), *f = filled(25, 1), out[25];
  int32_t di[4] = {1, 5, 5, 1}, df[4] = {1, 5, 5, 1}, dout[4] = {1, 5, 5, 1};
  tnode_t tn;
  tnode_init(&tn, AR_OP_DEPTHWISE_CONV_2D, in, 4, di, f, 4, df, NULL, 0, out, 4, dout);
  dw_opts(&tn, AR_PADDING_SAME, 1, 1, 1, 1, 1, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_depthwise_conv_2d);
  ck_assert_float_eq(out[12], 325);
  ck_assert_float_eq(out[0], 63);
  ck_assert_float_eq(out[24], 13 + 14 + 15 + 18 + 19 + 20 + 23 + 24 + 25);
  ck_assert_float_eq(out[2], 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11 + 12 + 13 + 14 + 15);
  dw_opts(&tn, AR_PADDING_SAME, 1, 1, 1, 1, 1, AR_ACT_RELU6);
  tnode_run(&tn, &ar_kernel_depthwise_conv_2d);
  for (int i = 0; i < 25; i++) ck_assert_float_eq(out[i], 6);
  free(in); free(f);
}
END_TEST

/* Depth multiplier 2: output channel c*2+m reads input channel c. */
START_TEST(dw_depth_multiplier_2) {
  float in[2] = {3, 5}, f[4] = {1, 2, 3, 4}, b[4] = {0, 0, 0, 0.5f}, out[4];
  int32_t di[4] = {1, 1, 1, 2}, df[4] = {1, 1, 1, 4}, dout[4] = {1, 1, 1, 4};
  tnode_t tn;
  tnode_init(&tn, AR_OP_DEPTHWISE_CONV_2D, in, 4, di, f, 4, df, b, 4, out, 4, dout);
  dw_opts(&tn, AR_PADDING_VALID, 1, 1, 1, 1, 2, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_depthwise_conv_2d);
  const float want[4] = {3, 6, 15, 20.5f};
  assert_close(out, want, 4, 0, "dw multiplier 2 order");

  /* 2x2 input [1,2;3,4], one channel, multiplier 2, 2x2 VALID: m0 all ones, m1 = (1,0,0,-1). */
  float in2[4] = {1, 2, 3, 4}, f2[8] = {1, 1, 1, 0, 1, 0, 1, -1}, b2[2] = {1, 2}, out2[2];
  int32_t di2[4] = {1, 2, 2, 1}, df2[4] = {1, 2, 2, 2}, dout2[4] = {1, 1, 1, 2};
  tnode_init(&tn, AR_OP_DEPTHWISE_CONV_2D, in2, 4, di2, f2, 4, df2, b2, 2, out2, 4, dout2);
  dw_opts(&tn, AR_PADDING_VALID, 1, 1, 1, 1, 2, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_depthwise_conv_2d);
  const float want2[2] = {11, -1};
  assert_close(out2, want2, 2, 0, "dw multiplier 2 taps");
}
END_TEST

static void dw_random_case(const cfg_t *c) {
  int oh = ref_out_size(c->h, c->kh, c->sh, c->dh, c->same);
  int ow = ref_out_size(c->w, c->kw, c->sw, c->dw, c->same);
  int oc = c->c * c->mult;
  size_t nin = (size_t)c->n * c->h * c->w * c->c, nf = (size_t)c->kh * c->kw * oc;
  size_t nout = (size_t)c->n * oh * ow * oc;
  float *in = randv(nin), *f = randv(nf), *b = c->bias ? randv((size_t)oc) : NULL;
  float *out = malloc(nout * sizeof(float)), *want = malloc(nout * sizeof(float));
  int32_t di[4] = {c->n, c->h, c->w, c->c}, df[4] = {1, c->kh, c->kw, oc};
  int32_t dout[4] = {c->n, oh, ow, oc};
  tnode_t tn;
  tnode_init(&tn, AR_OP_DEPTHWISE_CONV_2D, in, 4, di, f, 4, df, b, oc, out, 4, dout);
  dw_opts(&tn, c->same ? AR_PADDING_SAME : AR_PADDING_VALID, c->sh, c->sw, c->dh, c->dw, c->mult,
          c->act);
  ref_dw(c, in, f, b, want, oh, ow);
  char what[160];
  snprintf(what, sizeof what, "dw n%d %dx%dx%d m%d k%dx%d s%dx%d d%dx%d %s act %d", c->n, c->h, c->w,
           c->c, c->mult, c->kh, c->kw, c->sh, c->sw, c->dh, c->dw, c->same ? "SAME" : "VALID",
           c->act);
  run_every_isa(&tn, &ar_kernel_depthwise_conv_2d, out, want, nout, 2e-6f, what);
  free(in); free(f); free(b); free(out); free(want);
}

START_TEST(dw_random_vs_naive) {
  static const int chans[] = {1, 3, 8, 16, 21, 35, 64};
  static const int kernels[] = {3, 5};
  for (size_t ci = 0; ci < sizeof chans / sizeof chans[0]; ci++)
    for (int ki = 0; ki < 2; ki++)
      for (int s = 1; s <= 2; s++)
        for (int same = 0; same <= 1; same++) {
          cfg_t c = {.n = 1, .h = 11 + s, .w = 10 + same, .c = chans[ci], .o = chans[ci],
                     .kh = kernels[ki], .kw = kernels[ki], .sh = s, .sw = s, .dh = 1, .dw = 1,
                     .mult = 1, .same = same, .bias = (ci & 1) == 0,
                     .act = (ci % 3 == 0) ? AR_ACT_RELU6 : AR_ACT_NONE};
          dw_random_case(&c);
        }
  const cfg_t odd[] = {
    /* n  h   w   c  o  kh kw sh sw dh dw m  same  bias  act */
    {2, 9, 7, 5, 5, 3, 3, 1, 1, 2, 2, 1, true, true, AR_ACT_RELU},     /* dilation (generic) */
    {1, 8, 9, 3, 6, 3, 3, 2, 2, 1, 1, 2, true, true, AR_ACT_NONE},     /* multiplier 2 */
    {1, 6, 6, 4, 12, 3, 3, 1, 1, 1, 1, 3, false, false, AR_ACT_RELU6}, /* multiplier 3 VALID */
    {1, 10, 12, 24, 24, 3, 5, 2, 1, 1, 1, 1, true, true, AR_ACT_NONE},  /* 3x5, mixed strides */
    {1, 4, 4, 16, 16, 5, 5, 1, 1, 1, 1, 1, true, true, AR_ACT_NONE},   /* no interior at all */
    {1, 33, 33, 72, 72, 5, 5, 2, 2, 1, 1, 1, true, true, AR_ACT_RELU6},/* model-sized */
    {1, 5, 5, 20, 20, 2, 2, 1, 1, 1, 1, 1, false, true, AR_ACT_TANH},  /* 2x2 generic interior */
    /* AVX-512 tiles: 8/4/1-pixel tiles, 16-lane channel masks, the >= 192-channel order. */
    {1, 23, 29, 17, 17, 3, 3, 1, 1, 1, 1, 1, true, true, AR_ACT_RELU6},
    {1, 19, 27, 33, 33, 3, 3, 2, 2, 1, 1, 1, true, false, AR_ACT_NONE},
    {1, 14, 21, 200, 200, 5, 5, 1, 1, 1, 1, 1, true, true, AR_ACT_RELU6},
    {1, 17, 25, 193, 193, 5, 5, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},
    {1, 9, 30, 48, 48, 3, 3, 1, 1, 1, 1, 1, false, true, AR_ACT_RELU},
    {1, 12, 26, 31, 31, 3, 3, 1, 2, 2, 2, 1, true, true, AR_ACT_NONE},  /* dilation: run-time tile */
    {1, 11, 23, 40, 40, 5, 3, 2, 1, 1, 1, 1, true, true, AR_ACT_NONE},  /* 5x3 */
    {2, 8, 13, 7, 7, 2, 4, 1, 3, 1, 1, 1, false, true, AR_ACT_NONE},    /* 2x4 s3: run-time tile */
    /* Fewer input pixels than channels: split by channel blocks (AVX-512F), a partial last one. */
    {1, 7, 7, 72, 72, 5, 5, 1, 1, 1, 1, 1, true, true, AR_ACT_RELU6},
    {2, 4, 5, 50, 50, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},
  };
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) dw_random_case(&odd[i]);
}
END_TEST

/* Stored weights: DEPTHWISE_CONV_2D reading its filter and bias as float16 (the interpreter elides
 * their DEQUANTIZE, ar_kernel_reads_f16) gives exactly the bytes of the same node on the widened
 * float32 weights, on every float ISA level, including a level forced after prepare (the AVX-512F
 * path widens each channel block's taps, the others widen into the scratch prepare reserved):
 * sliding tiles, border tiles, channel tails, run-time tiles, multiplier 2, no bias. */
START_TEST(dw_fp16_weights_bit_identical) {
  const cfg_t cases[] = {
    /* n  h   w   c   o  kh kw sh sw dh dw m  same  bias  act */
    {1, 12, 13, 24, 24, 3, 3, 1, 1, 1, 1, 1, true, true, AR_ACT_RELU6},
    {1, 15, 17, 37, 37, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},
    {1, 9, 9, 70, 70, 5, 5, 1, 1, 1, 1, 1, true, false, AR_ACT_RELU},
    {2, 7, 7, 33, 33, 5, 5, 2, 2, 1, 1, 1, true, true, AR_ACT_TANH},
    {1, 3, 2, 16, 16, 5, 5, 1, 1, 1, 1, 1, true, true, AR_ACT_NONE},     /* narrower than a tile */
    {1, 10, 11, 20, 20, 3, 3, 1, 1, 2, 2, 1, true, true, AR_ACT_RELU6},  /* dilation: run-time tile */
    {1, 8, 9, 3, 6, 3, 3, 2, 2, 1, 1, 2, true, true, AR_ACT_NONE},       /* multiplier 2 */
  };
  const int best = ar__f32_set_isa(-1);
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const cfg_t *c = &cases[ci];
    int oh = ref_out_size(c->h, c->kh, c->sh, c->dh, c->same);
    int ow = ref_out_size(c->w, c->kw, c->sw, c->dw, c->same);
    const int oc = c->c * c->mult;
    size_t nin = (size_t)c->n * c->h * c->w * c->c, nf = (size_t)c->kh * c->kw * oc;
    size_t nout = (size_t)c->n * oh * ow * oc;
    float *in = randv(nin), *f = malloc(nf * sizeof(float)), *b = malloc((size_t)oc * sizeof(float));
    uint16_t *f16 = malloc(nf * sizeof *f16 + 2), *b16 = malloc((size_t)oc * sizeof *b16 + 2);
    /* The fp16 views sit at an odd 2-byte offset, as weights may in the model's mapping. */
    uint16_t *f16u = (uint16_t *)(void *)((char *)f16 + 2), *b16u = (uint16_t *)(void *)((char *)b16 + 2);
    for (size_t i = 0; i < nf; i++) {
      const uint16_t h = rand_f16_bits(i);
      memcpy(&f16u[i], &h, sizeof h);
      f[i] = ar_fp16_to_fp32(h);
    }
    for (int i = 0; i < oc; i++) {
      const uint16_t h = rand_f16_bits((size_t)i + 1);
      memcpy(&b16u[i], &h, sizeof h);
      b[i] = ar_fp16_to_fp32(h);
    }
    float *out32 = malloc(nout * sizeof(float)), *out16 = malloc(nout * sizeof(float));
    int32_t di[4] = {c->n, c->h, c->w, c->c}, df[4] = {1, c->kh, c->kw, oc};
    int32_t dout[4] = {c->n, oh, ow, oc};
    tnode_t t32, t16;
    tnode_init(&t32, AR_OP_DEPTHWISE_CONV_2D, in, 4, di, f, 4, df, c->bias ? b : NULL, oc, out32, 4, dout);
    tnode_init(&t16, AR_OP_DEPTHWISE_CONV_2D, in, 4, di, f, 4, df, c->bias ? b : NULL, oc, out16, 4, dout);
    const ar_padding_t pad = c->same ? AR_PADDING_SAME : AR_PADDING_VALID;
    dw_opts(&t32, pad, c->sh, c->sw, c->dh, c->dw, c->mult, c->act);
    dw_opts(&t16, pad, c->sh, c->sw, c->dh, c->dw, c->mult, c->act);
    /* What the interpreter asks before it hands fp16 over. */
    ck_assert(ar_kernel_reads_f16(&t32.node, 1));
    ck_assert(ar_kernel_reads_f16(&t32.node, 2) == c->bias);
    ck_assert(!ar_kernel_reads_f16(&t32.node, 0));
    t16.t[1].dtype = AR_DTYPE_FLOAT16;
    t16.t[1].data = f16u;
    t16.t[1].bytes = nf * 2;
    if (c->bias) {
      t16.t[2].dtype = AR_DTYPE_FLOAT16;
      t16.t[2].data = b16u;
      t16.t[2].bytes = (size_t)oc * 2;
    }
    char what[160];
    snprintf(what, sizeof what, "dw fp16 n%d %dx%dx%d m%d k%dx%d s%dx%d d%dx%d %s act %d", c->n,
             c->h, c->w, c->c, c->mult, c->kh, c->kw, c->sh, c->sw, c->dh, c->dw,
             c->same ? "SAME" : "VALID", c->act);
    fp16_vs_widened(&ar_kernel_depthwise_conv_2d, &t16, &t32, out16, out32, nout, best, what);
    free(in); free(f); free(b); free(f16); free(b16); free(out32); free(out16);
  }
}
END_TEST

/* The rows (or, on a map of fewer pixels than channels, the channel blocks) are split by thread
 * count (ar_parallel_for_split): 2 and 3 threads give exactly the bytes of one thread, at every
 * float ISA level, on shapes whose rows split unevenly. */
START_TEST(dw_split_bit_identical) {
  const cfg_t cases[] = {
    /* n  h   w   c   o  kh kw sh sw dh dw m  same  bias  act */
    {1, 41, 23, 40, 40, 3, 3, 1, 1, 1, 1, 1, true, true, AR_ACT_RELU6},
    {2, 29, 31, 72, 72, 5, 5, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},
    {1, 7, 7, 600, 600, 5, 5, 1, 1, 1, 1, 1, true, true, AR_ACT_RELU},
    {1, 30, 17, 21, 42, 3, 3, 1, 1, 1, 1, 2, true, true, AR_ACT_NONE},   /* multiplier 2 */
    /* Fewer input pixels than channels (channel blocks split), batch 2, 2 and 3 blocks. */
    {2, 5, 4, 56, 56, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_RELU6},
    {1, 3, 3, 20, 20, 3, 3, 1, 1, 1, 1, 1, true, false, AR_ACT_NONE},
  };
  char msg[AR_MSG_BYTES] = "";
  ar_threadpool_t *pools[2] = {NULL, NULL};
  ck_assert_int_eq(ar_threadpool_new(2, &pools[0], msg, sizeof msg), 0);
  ck_assert_int_eq(ar_threadpool_new(3, &pools[1], msg, sizeof msg), 0);
  const int best = ar__f32_set_isa(-1);
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const cfg_t *c = &cases[ci];
    int oh = ref_out_size(c->h, c->kh, c->sh, c->dh, c->same);
    int ow = ref_out_size(c->w, c->kw, c->sw, c->dw, c->same);
    const int oc = c->c * c->mult;
    size_t nin = (size_t)c->n * c->h * c->w * c->c, nf = (size_t)c->kh * c->kw * oc;
    size_t nout = (size_t)c->n * oh * ow * oc;
    float *in = randv(nin), *f = randv(nf), *b = randv((size_t)oc);
    float *out = malloc(nout * sizeof(float)), *one = malloc(nout * sizeof(float));
    int32_t di[4] = {c->n, c->h, c->w, c->c}, df[4] = {1, c->kh, c->kw, oc};
    int32_t dout[4] = {c->n, oh, ow, oc};
    tnode_t tn;
    tnode_init(&tn, AR_OP_DEPTHWISE_CONV_2D, in, 4, di, f, 4, df, b, oc, out, 4, dout);
    dw_opts(&tn, c->same ? AR_PADDING_SAME : AR_PADDING_VALID, c->sh, c->sw, c->dh, c->dw,
            c->mult, c->act);
    for (int l = best; l >= AR_ISA_PORTABLE; l--) {
      ck_assert_int_eq(ar__f32_set_isa(l), l);
      for (int32_t threads = 1; threads <= 3; threads++) {
        ar_threadpool_t *pool = threads > 1 ? pools[threads - 2] : NULL;
        tn.node.threads = threads;
        tn.node.pool = pool;
        memset(out, 0xee, nout * sizeof(float));
        ar_threadpool_enter(pool);
        tnode_run(&tn, &ar_kernel_depthwise_conv_2d);
        ar_threadpool_leave(pool);
        if (threads == 1) memcpy(one, out, nout * sizeof(float));
        else
          ck_assert_msg(memcmp(one, out, nout * sizeof(float)) == 0,
                        "dw %dx%dx%d k%d s%d [%s]: %d threads differ from 1", c->h, c->w, c->c,
                        c->kh, c->sh, ar_isa_name(l), (int)threads);
      }
    }
    tn.node.threads = 1;
    tn.node.pool = NULL;
    ar__f32_set_isa(-1);
    free(in); free(f); free(b); free(out); free(one);
  }
  ar_threadpool_free(pools[0]);
  ar_threadpool_free(pools[1]);
}
END_TEST

START_TEST(dw_prepare_errors) {
  float in[48] = {0}, f[90] = {0}, out[512] = {0};
  char msg[AR_MSG_BYTES];
  tnode_t tn;
  int32_t di[4] = {1, 4, 4, 3}, df[4] = {1, 3, 3, 10}, dout[4] = {1, 4, 4, 10};
  tnode_init(&tn, AR_OP_DEPTHWISE_CONV_2D, in, 4, di, f, 4, df, NULL, 0, out, 4, dout);
  dw_opts(&tn, AR_PADDING_SAME, 1, 1, 1, 1, 0, AR_ACT_NONE);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_depthwise_conv_2d, msg, sizeof msg), AR_ESHAPE);
  ck_assert_str_eq(msg, "operator 7 (DEPTHWISE_CONV_2D): filter shape [1,3,3,10] does not match "
                        "input channels 3 with depth_multiplier 0");
  {
    int32_t df9[4] = {1, 3, 3, 9}, dout9[4] = {1, 4, 4, 9};
    tnode_t tw;
    tnode_init(&tw, AR_OP_DEPTHWISE_CONV_2D, in, 4, di, f, 4, df9, NULL, 0, out, 4, dout9);
    dw_opts(&tw, AR_PADDING_SAME, 1, 1, 1, 1 << 30, 3, AR_ACT_NONE);
    ck_assert_int_eq(tnode_prepare_err(&tw, &ar_kernel_depthwise_conv_2d, msg, sizeof msg), AR_EUNSUPPORTED);
    ck_assert_msg(strstr(msg, "spans 3x2147483649 input pixels") != NULL, "%s", msg);
  }

  int32_t df2[4] = {1, 3, 3, 6}, dout2[4] = {1, 4, 4, 6};
  tnode_init(&tn, AR_OP_DEPTHWISE_CONV_2D, in, 4, di, f, 4, df2, NULL, 0, out, 4, dout2);
  dw_opts(&tn, AR_PADDING_SAME, 1, 1, 1, 1, 3, AR_ACT_NONE);   /* 3 * 3 != 6 */
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_depthwise_conv_2d, msg, sizeof msg), AR_ESHAPE);
  dw_opts(&tn, AR_PADDING_SAME, 1, 1, 1, 1, 2, AR_ACT_NONE);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_depthwise_conv_2d, msg, sizeof msg), 0);
  dw_opts(&tn, AR_PADDING_VALID, 1, 1, 1, 1, 2, AR_ACT_NONE);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_depthwise_conv_2d, msg, sizeof msg), AR_ESHAPE);
  ck_assert_str_eq(msg, "operator 7 (DEPTHWISE_CONV_2D): output shape [1,4,4,6], expected [1,2,2,6]");
}
END_TEST

/* ---------- Convolution2DTransposeBias ---------- */

static void tconv_opts(tnode_t *tn, ar_padding_t pad, int sh, int sw) {
  tn->opt.transpose_conv = (ar_transpose_conv_options_t){.padding = pad, .stride_h = sh,
                                                         .stride_w = sw};
}

/* input [1,2;3,4], weights [1,2;3,4], bias 0.5, stride 2 SAME (k = stride: no overlap, out 4x4):
 * out(2iy+ky, 2ix+kx) = in(iy,ix) * w(ky,kx) + 0.5. */
START_TEST(tconv_stride2_same) {
  float in[4] = {1, 2, 3, 4}, w[4] = {1, 2, 3, 4}, b[1] = {0.5f}, out[16];
  int32_t di[4] = {1, 2, 2, 1}, dw[4] = {1, 2, 2, 1}, dout[4] = {1, 4, 4, 1};
  tnode_t tn;
  tnode_init(&tn, AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS, in, 4, di, w, 4, dw, b, 1, out, 4, dout);
  tconv_opts(&tn, AR_PADDING_SAME, 2, 2);
  tnode_run(&tn, &ar_kernel_transpose_conv_bias);
  const float want[16] = {1.5f, 2.5f, 2.5f, 4.5f, 3.5f, 4.5f, 6.5f, 8.5f,
                          3.5f, 6.5f, 4.5f, 8.5f, 9.5f, 12.5f, 12.5f, 16.5f};
  assert_close(out, want, 16, 0, "tconv s2 SAME");
}
END_TEST

/* Overlapping taps, stride 1: VALID gives 3x3 (a full 2-D convolution of in with w); SAME
 * (pad_total 1, 0 before) keeps the top-left 2x2 of it. */
START_TEST(tconv_stride1_overlap) {
  float in[4] = {1, 2, 3, 4}, w[4] = {1, 2, 3, 4}, b[1] = {0}, out[9];
  int32_t di[4] = {1, 2, 2, 1}, dw[4] = {1, 2, 2, 1}, dout[4] = {1, 3, 3, 1};
  tnode_t tn;
  tnode_init(&tn, AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS, in, 4, di, w, 4, dw, b, 1, out, 4, dout);
  tconv_opts(&tn, AR_PADDING_VALID, 1, 1);
  tnode_run(&tn, &ar_kernel_transpose_conv_bias);
  const float want[9] = {1, 4, 4, 6, 20, 16, 9, 24, 16};
  assert_close(out, want, 9, 0, "tconv s1 VALID");

  int32_t dout2[4] = {1, 2, 2, 1};
  tnode_init(&tn, AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS, in, 4, di, w, 4, dw, b, 1, out, 4, dout2);
  tconv_opts(&tn, AR_PADDING_SAME, 1, 1);
  tnode_run(&tn, &ar_kernel_transpose_conv_bias);
  const float want2[4] = {1, 4, 6, 20};
  assert_close(out, want2, 4, 0, "tconv s1 SAME");

  /* MediaPipe's SAME size rule: 3x3 input, 2x2 kernel, stride 2 gives 2*2+2-1 = 5, not 6; the
   * dropped row/column is at the bottom/right (pad before = 1/2 = 0). */
  float in3[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, out3[25];
  int32_t di3[4] = {1, 3, 3, 1}, dout3[4] = {1, 5, 5, 1};
  tnode_init(&tn, AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS, in3, 4, di3, w, 4, dw, b, 1, out3, 4, dout3);
  tconv_opts(&tn, AR_PADDING_SAME, 2, 2);
  tnode_run(&tn, &ar_kernel_transpose_conv_bias);
  const float want3[25] = {1, 2, 2, 4, 3, 3, 4, 6, 8, 9, 4, 8, 5, 10, 6,
                           12, 16, 15, 20, 18, 7, 14, 8, 16, 9};
  assert_close(out3, want3, 25, 0, "tconv 3x3 s2 SAME");
}
END_TEST

static void tconv_random_case(const cfg_t *c) {
  /* MediaPipe output size and padding, computed here from the definition. */
  int tot_h = 0, tot_w = 0;
  if (c->same) {
    tot_h = c->kh - (c->h - 1) % c->sh - 1; if (tot_h < 0) tot_h = 0;
    tot_w = c->kw - (c->w - 1) % c->sw - 1; if (tot_w < 0) tot_w = 0;
  }
  int oh = c->sh * (c->h - 1) + c->kh - tot_h, ow = c->sw * (c->w - 1) + c->kw - tot_w;
  size_t nin = (size_t)c->n * c->h * c->w * c->c, nf = (size_t)c->o * c->kh * c->kw * c->c;
  size_t nout = (size_t)c->n * oh * ow * c->o;
  float *in = randv(nin), *f = randv(nf), *b = randv((size_t)c->o);
  float *out = malloc(nout * sizeof(float)), *want = malloc(nout * sizeof(float));
  int32_t di[4] = {c->n, c->h, c->w, c->c}, df[4] = {c->o, c->kh, c->kw, c->c};
  int32_t dout[4] = {c->n, oh, ow, c->o};
  tnode_t tn;
  tnode_init(&tn, AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS, in, 4, di, f, 4, df, b, c->o, out, 4, dout);
  tconv_opts(&tn, c->same ? AR_PADDING_SAME : AR_PADDING_VALID, c->sh, c->sw);
  ref_tconv(c, in, f, b, want, oh, ow, tot_h / 2, tot_w / 2);
  char what[160];
  snprintf(what, sizeof what, "tconv n%d %dx%dx%d -> %d k%dx%d s%dx%d %s", c->n, c->h, c->w, c->c,
           c->o, c->kh, c->kw, c->sh, c->sw, c->same ? "SAME" : "VALID");
  run_every_isa(&tn, &ar_kernel_transpose_conv_bias, out, want, nout, 2e-5f, what);
  free(in); free(f); free(b); free(out); free(want);
}

START_TEST(tconv_random_vs_naive) {
  const cfg_t cases[] = {
    /* n  h   w   c   o  kh kw sh sw */
    {1, 32, 32, 16, 1, 2, 2, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},    /* selfie-style */
    {2, 5, 7, 6, 3, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},      /* overlap, odd pad */
    {1, 6, 5, 4, 5, 4, 4, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},
    {1, 4, 6, 3, 2, 3, 2, 1, 3, 1, 1, 1, false, true, AR_ACT_NONE},
    {1, 90, 90, 8, 2, 2, 2, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},    /* vector path + tail */
    {1, 6, 8, 5, 4, 2, 2, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},      /* GEMM, exact tiling */
    {1, 7, 9, 3, 1, 2, 2, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},      /* odd SAME: 13x17 */
    {1, 70, 70, 12, 9, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},   /* GEMM, several tiles */
    /* AVX-512 tiling path: 16-pixel runs and row tails, channel blocks and their tails. */
    {2, 5, 37, 16, 1, 2, 2, 2, 2, 1, 1, 1, false, true, AR_ACT_NONE},
    {1, 6, 40, 16, 1, 2, 2, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},
    {1, 4, 21, 37, 2, 2, 2, 2, 2, 1, 1, 1, false, true, AR_ACT_NONE},
    {1, 6, 17, 5, 3, 1, 1, 1, 1, 1, 1, 1, true, true, AR_ACT_NONE},
    {1, 3, 33, 19, 4, 2, 1, 2, 1, 1, 1, 1, false, true, AR_ACT_NONE},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) tconv_random_case(&cases[i]);
}
END_TEST

START_TEST(tconv_prepare_errors) {
  float in[64] = {0}, w[64] = {0}, b[2] = {0}, out[256] = {0};
  char msg[AR_MSG_BYTES];
  tnode_t tn;
  int32_t di[4] = {1, 4, 4, 4}, dw[4] = {1, 2, 2, 4}, dout[4] = {1, 4, 4, 1};
  tnode_init(&tn, AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS, in, 4, di, w, 4, dw, b, 1, out, 4, dout);
  tconv_opts(&tn, AR_PADDING_SAME, 2, 2);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_transpose_conv_bias, msg, sizeof msg), AR_ESHAPE);
  ck_assert_str_eq(msg, "operator 7 (Convolution2DTransposeBias): output shape [1,4,4,1], "
                        "expected [1,8,8,1]");
  int32_t dw2[4] = {1, 2, 2, 3};
  tnode_init(&tn, AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS, in, 4, di, w, 4, dw2, b, 1, out, 4, dout);
  tconv_opts(&tn, AR_PADDING_SAME, 2, 2);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_transpose_conv_bias, msg, sizeof msg), AR_ESHAPE);
  ck_assert_str_eq(msg, "operator 7 (Convolution2DTransposeBias): weights shape [1,2,2,3] does not "
                        "match input channels 4");
  tnode_init(&tn, AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS, in, 4, di, w, 4, dw, b, 2, out, 4, dout);
  tconv_opts(&tn, AR_PADDING_SAME, 2, 2);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_transpose_conv_bias, msg, sizeof msg), AR_ESHAPE);
  ck_assert_str_eq(msg, "operator 7 (Convolution2DTransposeBias): bias shape [2] does not match 1 "
                        "output channels");
}
END_TEST


/* ---------- builtin TRANSPOSE_CONV ---------- */

/* Inputs (output_shape, weights, input, optional bias), TFLite's order. */
typedef struct {
  ar_tview_t os, w, in, b, out;
  ar_tview_t *io[5];   /* node.inputs (4), node.outputs (1) */
  int32_t shape[4];
  ar_options_t opt;
  ar_node_t node;
} btconv_t;

static void btconv_init(btconv_t *t, float *in, const int32_t *di, float *w, const int32_t *dw,
                        float *b, float *out, const int32_t *dout, ar_padding_t pad, int sh, int sw,
                        ar_activation_t act) {
  memset(t, 0, sizeof *t);
  memcpy(t->shape, dout, sizeof t->shape);
  memset(&t->os, 0, sizeof t->os);
  t->os.dtype = AR_DTYPE_INT32; t->os.rank = 1; t->os.dims[0] = 4; t->os.bytes = 16;
  t->os.data = t->shape; t->os.is_constant = true;
  tview_set(&t->w, w, 4, dw, true);
  tview_set(&t->in, in, 4, di, false);
  tview_set(&t->out, out, 4, dout, false);
  t->opt.transpose_conv = (ar_transpose_conv_options_t){pad, sw, sh, act};
  t->node.op = AR_OP_TRANSPOSE_CONV;
  t->node.index = 7;
  t->node.version = 4;
  t->node.options = &t->opt;
  t->node.n_inputs = b ? 4 : 3;
  t->node.n_outputs = 1;
  t->node.inputs = t->io;
  t->node.outputs = t->io + 4;
  t->node.inputs[0] = &t->os;
  t->node.inputs[1] = &t->w;
  t->node.inputs[2] = &t->in;
  if (b) {
    int32_t bn = dw[0];
    tview_set(&t->b, b, 1, &bn, true);
    t->node.inputs[3] = &t->b;
  }
  t->node.outputs[0] = &t->out;
  t->node.threads = 1;
}

static void btconv_run(btconv_t *t) {
  tnode_t tn;   /* reuse tnode_run's scratch/state handling through a copy of the node */
  memset(&tn, 0, sizeof tn);
  tn.node = t->node;
  tnode_run(&tn, &ar_kernel_transpose_conv);
}

/* input [1,2;3,4], weights [1,2;3,4], stride 2 VALID, output 4x4: the taps tile the output,
 * out(2iy+ky, 2ix+kx) = in(iy,ix) * w(ky,kx) (+ bias 0.5 in the second run); then the same with
 * SAME padding and a 3x3 kernel of ones into 4x4 (forward-conv padding over the 4x4 output:
 * total (2-1)*2 + 3 - 4 = 1, top 0): rows/cols 0..2 from input 0, 2..4 from input 1, 4 dropped. */
START_TEST(tconv_builtin_hand_computed) {
  float in[4] = {1, 2, 3, 4}, w[4] = {1, 2, 3, 4}, b[1] = {0.5f}, out[16];
  int32_t di[4] = {1, 2, 2, 1}, dw[4] = {1, 2, 2, 1}, dout[4] = {1, 4, 4, 1};
  btconv_t t;
  btconv_init(&t, in, di, w, dw, NULL, out, dout, AR_PADDING_VALID, 2, 2, AR_ACT_NONE);
  btconv_run(&t);
  const float want[16] = {1, 2, 2, 4, 3, 4, 6, 8, 3, 6, 4, 8, 9, 12, 12, 16};
  assert_close(out, want, 16, 0, "TRANSPOSE_CONV s2 VALID no bias");
  btconv_init(&t, in, di, w, dw, b, out, dout, AR_PADDING_VALID, 2, 2, AR_ACT_NONE);
  btconv_run(&t);
  for (int i = 0; i < 16; i++) ck_assert_float_eq(out[i], want[i] + 0.5f);

  float w9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  int32_t dw9[4] = {1, 3, 3, 1};
  btconv_init(&t, in, di, w9, dw9, NULL, out, dout, AR_PADDING_SAME, 2, 2, AR_ACT_NONE);
  btconv_run(&t);
  const float want2[16] = {1, 1, 3, 2, 1, 1, 3, 2, 4, 4, 10, 6, 3, 3, 7, 4};
  assert_close(out, want2, 16, 0, "TRANSPOSE_CONV 3x3 s2 SAME");
  /* Fused RELU6 (version 4): every value above 6 clamps. */
  btconv_init(&t, in, di, w9, dw9, NULL, out, dout, AR_PADDING_SAME, 2, 2, AR_ACT_RELU6);
  btconv_run(&t);
  for (int i = 0; i < 16; i++) ck_assert_float_eq(out[i], want2[i] > 6 ? 6 : want2[i]);
}
END_TEST

START_TEST(tconv_builtin_random_vs_naive) {
  const cfg_t cases[] = {
    /* n  h   w   c   o  kh kw sh sw  (dh dw mult) same bias act */
    {1, 5, 7, 6, 3, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},
    {2, 4, 6, 3, 2, 3, 2, 1, 3, 1, 1, 1, false, false, AR_ACT_RELU},
    {1, 6, 8, 5, 4, 2, 2, 2, 2, 1, 1, 1, true, true, AR_ACT_NONE},    /* exact tiling */
    {1, 6, 8, 5, 4, 2, 2, 2, 2, 1, 1, 1, true, false, AR_ACT_NONE},   /* tiling, no bias */
    {1, 30, 30, 12, 9, 3, 3, 2, 2, 1, 1, 1, true, true, AR_ACT_RELU6},
    {1, 9, 9, 4, 1, 4, 4, 3, 3, 1, 1, 1, false, true, AR_ACT_NONE},
    {1, 3, 3, 4, 2, 3, 3, 2, 2, 1, 1, 1, false, false, AR_ACT_NONE},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const cfg_t *c = &cases[k];
    /* TFLite models pick the output size; the usual choice is in*s (SAME), (in-1)*s + k (VALID). */
    int oh = c->same ? c->h * c->sh : (c->h - 1) * c->sh + c->kh;
    int ow = c->same ? c->w * c->sw : (c->w - 1) * c->sw + c->kw;
    int pt = c->same ? ref_pad(oh, c->kh, c->sh, 1, ref_out_size(oh, c->kh, c->sh, 1, true)) : 0;
    int pl = c->same ? ref_pad(ow, c->kw, c->sw, 1, ref_out_size(ow, c->kw, c->sw, 1, true)) : 0;
    size_t nin = (size_t)c->n * c->h * c->w * c->c, nf = (size_t)c->o * c->kh * c->kw * c->c;
    size_t nout = (size_t)c->n * oh * ow * c->o;
    float *in = randv(nin), *f = randv(nf), *b = c->bias ? randv((size_t)c->o) : filled((size_t)c->o, 0);
    float *out = malloc(nout * sizeof(float)), *want = malloc(nout * sizeof(float));
    int32_t di[4] = {c->n, c->h, c->w, c->c}, df[4] = {c->o, c->kh, c->kw, c->c};
    int32_t dout[4] = {c->n, oh, ow, c->o};
    btconv_t t;
    btconv_init(&t, in, di, f, df, c->bias ? b : NULL, out, dout,
                c->same ? AR_PADDING_SAME : AR_PADDING_VALID, c->sh, c->sw, c->act);
    btconv_run(&t);
    ref_tconv(c, in, f, b, want, oh, ow, pt, pl);
    for (size_t i = 0; i < nout; i++) want[i] = ref_act(want[i], c->act);
    char what[160];
    snprintf(what, sizeof what, "TRANSPOSE_CONV case %zu", k);
    assert_close(out, want, nout, 2e-5f, what);
    free(in); free(f); free(b); free(out); free(want);
  }
}
END_TEST

START_TEST(tconv_builtin_prepare_errors) {
  float in[16] = {0}, w[16] = {0}, out[64] = {0};
  char msg[AR_MSG_BYTES];
  int32_t di[4] = {1, 2, 2, 1}, dw[4] = {1, 2, 2, 1}, dout[4] = {1, 4, 4, 1};
  btconv_t t;
  btconv_init(&t, in, di, w, dw, NULL, out, dout, AR_PADDING_VALID, 2, 2, AR_ACT_NONE);
  t.shape[3] = 2;   /* output_shape says 2 channels, weights have 1 */
  ck_assert_int_eq(ar_kernel_transpose_conv.prepare(&t.node, msg, sizeof msg), AR_ESHAPE);
  ck_assert_ptr_nonnull(strstr(msg, "output_shape [1,4,4,2] does not fit"));
  t.shape[3] = 1;
  t.os.is_constant = false;
  ck_assert_int_eq(ar_kernel_transpose_conv.prepare(&t.node, msg, sizeof msg), AR_EUNSUPPORTED);
  ck_assert_str_eq(msg, "operator 7 (TRANSPOSE_CONV): output_shape (input 0) is not a constant (its "
                        "values decide the output shape and are known only at invoke, not computed from shapes "
                        "and constants at prepare; dynamic shapes are not supported)");
}
END_TEST

/* ---------- BATCH_MATMUL ---------- */

static int bmm(float *a, int ar, const int32_t *da, float *b, int br, const int32_t *db, float *c,
               int cr, const int32_t *dc, bool adj_x, bool adj_y, char *msg) {
  ar_tview_t ta, tb, tc;
  tview_set(&ta, a, ar, da, false);
  tview_set(&tb, b, br, db, true);
  tview_set(&tc, c, cr, dc, false);
  tnode_t tn;
  memset(&tn, 0, sizeof tn);
  tn.opt.batch_matmul = (ar_batch_matmul_options_t){.adj_x = adj_x, .adj_y = adj_y};
  tn.node.op = AR_OP_BATCH_MATMUL;
  tn.node.index = 7;
  tn.node.options = &tn.opt;
  tn.node.n_inputs = 2;
  tn.node.n_outputs = 1;
  tn.node.inputs = tn.io;
  tn.node.outputs = tn.io + 3;
  tn.node.inputs[0] = &ta;
  tn.node.inputs[1] = &tb;
  tn.node.outputs[0] = &tc;
  tn.node.threads = 1;
  if (msg) return ar_kernel_batch_matmul.prepare(&tn.node, msg, AR_MSG_BYTES);
  tnode_run(&tn, &ar_kernel_batch_matmul);
  return 0;
}

/* [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]]; the same through adj_x
 * (lhs stored transposed) and adj_y (rhs stored transposed). */
START_TEST(batch_matmul_hand_and_adjoints) {
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12}, c[4];
  float at[6] = {1, 4, 2, 5, 3, 6}, bt[6] = {7, 9, 11, 8, 10, 12};
  int32_t d23[2] = {2, 3}, d32[2] = {3, 2}, d22[2] = {2, 2};
  const float want[4] = {58, 64, 139, 154};
  bmm(a, 2, d23, b, 2, d32, c, 2, d22, false, false, NULL);
  assert_close(c, want, 4, 0, "matmul");
  bmm(at, 2, d32, b, 2, d32, c, 2, d22, true, false, NULL);
  assert_close(c, want, 4, 0, "adj_x");
  bmm(a, 2, d23, bt, 2, d23, c, 2, d22, false, true, NULL);
  assert_close(c, want, 4, 0, "adj_y");
  bmm(at, 2, d32, bt, 2, d23, c, 2, d22, true, true, NULL);
  assert_close(c, want, 4, 0, "adj_x adj_y");
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(bmm(a, 2, d23, b, 2, d23, c, 2, d22, false, false, msg), AR_ESHAPE);
  ck_assert_ptr_nonnull(strstr(msg, "disagree on the contracted dim (3 vs 2)"));
}
END_TEST

/* lhs [2,1,3,4] x rhs [3,4,5] -> [2,3,3,5]: lhs broadcasts over rhs's batch of 3, rhs over lhs's
 * batch of 2; compared with a naive triple loop. */
START_TEST(batch_matmul_broadcast_vs_naive) {
  int32_t da[4] = {2, 1, 3, 4}, db[3] = {3, 4, 5}, dc[4] = {2, 3, 3, 5};
  float *a = randv(2 * 3 * 4), *b = randv(3 * 4 * 5), c[2 * 3 * 3 * 5], want[2 * 3 * 3 * 5];
  bmm(a, 4, da, b, 3, db, c, 4, dc, false, false, NULL);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int m = 0; m < 3; m++)
        for (int n = 0; n < 5; n++) {
          double acc = 0;
          for (int k = 0; k < 4; k++) acc += (double)a[(i * 3 + m) * 4 + k] * b[(j * 4 + k) * 5 + n];
          want[((i * 3 + j) * 3 + m) * 5 + n] = (float)acc;
        }
  assert_close(c, want, 2 * 3 * 3 * 5, 1e-5f, "broadcast batch matmul");
  free(a); free(b);
}
END_TEST

/* ---------- FULLY_CONNECTED ---------- */

static void fc_opts(tnode_t *tn, bool keep, ar_activation_t act) {
  tn->opt.fully_connected = (ar_fully_connected_options_t){.activation = act, .keep_num_dims = keep};
}

/* x = (1,2,3), W = [[1,0,-1],[2,1,0]]: W x = (-2, 4); with bias (0.5,-4): (-1.5, 0). */
START_TEST(fc_bias_and_no_bias) {
  float x[3] = {1, 2, 3}, w[6] = {1, 0, -1, 2, 1, 0}, b[2] = {0.5f, -4}, out[2];
  int32_t dx[2] = {1, 3}, dw[2] = {2, 3}, dout[2] = {1, 2};
  tnode_t tn;
  tnode_init(&tn, AR_OP_FULLY_CONNECTED, x, 2, dx, w, 2, dw, b, 2, out, 2, dout);
  fc_opts(&tn, false, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_fully_connected);
  const float want[2] = {-1.5f, 0};
  assert_close(out, want, 2, 0, "fc bias");

  tnode_init(&tn, AR_OP_FULLY_CONNECTED, x, 2, dx, w, 2, dw, NULL, 0, out, 2, dout);
  tn.node.n_inputs = 2;   /* bias absent altogether, as in a 2-input operator */
  fc_opts(&tn, false, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_fully_connected);
  const float want2[2] = {-2, 4};
  assert_close(out, want2, 2, 0, "fc no bias");

  tnode_init(&tn, AR_OP_FULLY_CONNECTED, x, 2, dx, w, 2, dw, NULL, 0, out, 2, dout);
  fc_opts(&tn, false, AR_ACT_RELU);
  tnode_run(&tn, &ar_kernel_fully_connected);
  const float want3[2] = {0, 4};
  assert_close(out, want3, 2, 0, "fc relu");
}
END_TEST

/* Input [2,1,3]: keep_num_dims true -> [2,1,2]; false -> flattened [2,2]. Same values. */
START_TEST(fc_keep_num_dims) {
  float x[6] = {1, 2, 3, -1, 0, 1}, w[6] = {1, 0, -1, 2, 1, 0}, out[4];
  const float want[4] = {-2, 4, -2, -2};
  int32_t dx[3] = {2, 1, 3}, dw[2] = {2, 3}, dkeep[3] = {2, 1, 2}, dflat[2] = {2, 2};
  char msg[AR_MSG_BYTES];
  tnode_t tn;
  tnode_init(&tn, AR_OP_FULLY_CONNECTED, x, 3, dx, w, 2, dw, NULL, 0, out, 3, dkeep);
  fc_opts(&tn, true, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_fully_connected);
  assert_close(out, want, 4, 0, "fc keep_num_dims");
  tnode_init(&tn, AR_OP_FULLY_CONNECTED, x, 3, dx, w, 2, dw, NULL, 0, out, 2, dflat);
  fc_opts(&tn, false, AR_ACT_NONE);
  tnode_run(&tn, &ar_kernel_fully_connected);
  assert_close(out, want, 4, 0, "fc flattened");
  /* Swapped expectations are rejected with the inferred shape. */
  tnode_init(&tn, AR_OP_FULLY_CONNECTED, x, 3, dx, w, 2, dw, NULL, 0, out, 2, dflat);
  fc_opts(&tn, true, AR_ACT_NONE);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_fully_connected, msg, sizeof msg), AR_ESHAPE);
  ck_assert_str_eq(msg, "operator 7 (FULLY_CONNECTED): output shape [2,2], expected [2,1,2]");
  tnode_init(&tn, AR_OP_FULLY_CONNECTED, x, 3, dx, w, 2, dw, NULL, 0, out, 3, dkeep);
  fc_opts(&tn, false, AR_ACT_NONE);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_fully_connected, msg, sizeof msg), AR_ESHAPE);
  ck_assert_str_eq(msg, "operator 7 (FULLY_CONNECTED): output shape [2,1,2], expected [2,2]");
  /* 4 input values per row do not divide 6 elements. */
  int32_t dw4[2] = {2, 4}, dout4[2] = {1, 2};
  tnode_init(&tn, AR_OP_FULLY_CONNECTED, x, 3, dx, w, 2, dw4, NULL, 0, out, 2, dout4);
  fc_opts(&tn, false, AR_ACT_NONE);
  ck_assert_int_eq(tnode_prepare_err(&tn, &ar_kernel_fully_connected, msg, sizeof msg), AR_ESHAPE);
}
END_TEST

START_TEST(fc_random_vs_naive) {
  const int shapes[][3] = {{1, 1152, 63}, {1, 672, 1}, {5, 40, 17}, {16, 96, 32}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int batch = shapes[s][0], depth = shapes[s][1], units = shapes[s][2];
    float *x = randv((size_t)batch * depth), *w = randv((size_t)units * depth), *b = randv((size_t)units);
    float *out = malloc(sizeof(float) * batch * units), *want = malloc(sizeof(float) * batch * units);
    int32_t dx[2] = {batch, depth}, dw[2] = {units, depth}, dout[2] = {batch, units};
    tnode_t tn;
    tnode_init(&tn, AR_OP_FULLY_CONNECTED, x, 2, dx, w, 2, dw, b, units, out, 2, dout);
    fc_opts(&tn, false, AR_ACT_RELU6);
    tnode_run(&tn, &ar_kernel_fully_connected);
    for (int i = 0; i < batch; i++)
      for (int u = 0; u < units; u++) {
        double acc = b[u];
        for (int k = 0; k < depth; k++) acc += (double)x[i * depth + k] * w[u * depth + k];
        want[i * units + u] = ref_act((float)acc, AR_ACT_RELU6);
      }
    assert_close(out, want, (size_t)batch * units, 2e-5f, "fc random");
    free(x); free(w); free(b); free(out); free(want);
  }
}
END_TEST

/* FULLY_CONNECTED on fp16 weights and bias as stored (widened into its scratch): the bytes of the
 * same node on the widened fp32 tensors. */
START_TEST(fc_fp16_weights_bit_identical) {
  const int shapes[][3] = {{1, 1152, 63}, {1, 672, 1}, {5, 40, 17}, {16, 96, 32}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
    const int batch = shapes[sh][0], depth = shapes[sh][1], units = shapes[sh][2];
    const size_t nw = (size_t)units * depth;
    float *x = randv((size_t)batch * depth), *w = malloc(nw * sizeof(float)), *b = malloc(units * sizeof(float));
    uint16_t *w16 = malloc(nw * sizeof *w16), *b16 = malloc((size_t)units * sizeof *b16);
    for (size_t i = 0; i < nw; i++) w[i] = ar_fp16_to_fp32(w16[i] = rand_f16_bits(i));
    for (int i = 0; i < units; i++) b[i] = ar_fp16_to_fp32(b16[i] = rand_f16_bits((size_t)i + 7));
    float *o32 = malloc(sizeof(float) * batch * units), *o16 = malloc(sizeof(float) * batch * units);
    int32_t dx[2] = {batch, depth}, dw[2] = {units, depth}, dout[2] = {batch, units};
    tnode_t t32, t16;
    tnode_init(&t32, AR_OP_FULLY_CONNECTED, x, 2, dx, w, 2, dw, b, units, o32, 2, dout);
    tnode_init(&t16, AR_OP_FULLY_CONNECTED, x, 2, dx, w, 2, dw, b, units, o16, 2, dout);
    fc_opts(&t32, false, AR_ACT_RELU6);
    fc_opts(&t16, false, AR_ACT_RELU6);
    ck_assert(ar_kernel_reads_f16(&t32.node, 1) && ar_kernel_reads_f16(&t32.node, 2));
    ck_assert(!ar_kernel_reads_f16(&t32.node, 0));
    t16.t[1].dtype = t16.t[2].dtype = AR_DTYPE_FLOAT16;
    t16.t[1].data = w16;
    t16.t[1].bytes = nw * 2;
    t16.t[2].data = b16;
    t16.t[2].bytes = (size_t)units * 2;
    tnode_run(&t32, &ar_kernel_fully_connected);
    tnode_run(&t16, &ar_kernel_fully_connected);
    ck_assert_msg(memcmp(o16, o32, sizeof(float) * batch * units) == 0, "fc %d x %d -> %d: fp16 "
                  "weights give other bytes than the widened ones", batch, depth, units);
    free(x); free(w); free(b); free(w16); free(b16); free(o32); free(o16);
  }
}
END_TEST


/* ---------- inverted-residual fusion (kernels/fused_ir.c) ---------- */

typedef struct {
  int n, h, w, cin, cexp, kh, kw, sh, dh;
  bool same, f16;
  ar_activation_t conv_act, dw_act;
} fcfg_t;

/* An expansion 1x1 CONV_2D run inside its DEPTHWISE_CONV_2D (dw node->fused, the conv's output
 * without bytes) gives the bytes of the two kernels run one after the other, on odd shapes (batch
 * 2-3, rows not a multiple of any band, channels off the 16-lane blocks), strides 1 and 2, SAME
 * and VALID, dilation 2, fp16 weights as stored, clamp and non-clamp activations, maps of several
 * bands, with 1, 2 and 3 threads. Bit-identical on the best float ISA when it has arenad's own
 * GEMM (kernels/sgemm.h: AVX-512F or AVX2, as the interpreter requires: ar_kernel_fuse_ir_check);
 * at a level lowered after prepare, within rounding (the depthwise's clones, and OpenBLAS for the
 * bands at the portable level, as the unfused conv there). */
START_TEST(fused_ir_matches_unfused) {
  const fcfg_t cases[] = {
    /* n  h    w   cin cexp kh kw sh dh same   f16    conv act      dw act */
    {2, 13, 11, 5, 20, 3, 3, 1, 1, true, false, AR_ACT_RELU6, AR_ACT_NONE},
    {1, 17, 9, 3, 37, 5, 5, 2, 1, true, true, AR_ACT_RELU, AR_ACT_RELU6},
    {1, 20, 7, 8, 16, 3, 3, 2, 1, false, false, AR_ACT_NONE, AR_ACT_RELU},
    {1, 9, 12, 4, 33, 3, 3, 1, 2, true, false, AR_ACT_TANH, AR_ACT_NONE},
    {3, 6, 5, 16, 48, 3, 3, 2, 1, true, true, AR_ACT_RELU6, AR_ACT_RELU6},
    {1, 150, 30, 8, 96, 3, 3, 1, 1, true, true, AR_ACT_RELU6, AR_ACT_NONE},   /* several bands */
    {1, 161, 40, 16, 64, 5, 5, 2, 1, true, false, AR_ACT_RELU, AR_ACT_NONE},  /* several bands */
  };
  const int best = ar__f32_set_isa(-1);
  const bool own = ar_sgemm_own_available();   /* at the best level */
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const fcfg_t *c = &cases[ci];
    int32_t xd[4] = {c->n, c->h, c->w, c->cin}, fd[4] = {c->cexp, 1, 1, c->cin}, td[4] = {c->n, c->h, c->w, c->cexp};
    const int ext = (c->kh - 1) * c->dh + 1;
    const int oh = c->same ? (c->h + c->sh - 1) / c->sh : (c->h - ext) / c->sh + 1;
    const int ow = c->same ? (c->w + c->sh - 1) / c->sh : (c->w - ((c->kw - 1) * c->dh + 1)) / c->sh + 1;
    int32_t dfd[4] = {1, c->kh, c->kw, c->cexp}, od[4] = {c->n, oh, ow, c->cexp};
    const size_t nx = (size_t)c->n * c->h * c->w * c->cin, nt = (size_t)c->n * c->h * c->w * c->cexp;
    const size_t nf = (size_t)c->cexp * c->cin, ndf = (size_t)c->kh * c->kw * c->cexp, no = (size_t)c->n * oh * ow * c->cexp;
    float *x = randv(nx), *f = randv(nf), *b = randv((size_t)c->cexp), *df = randv(ndf), *db = randv((size_t)c->cexp);
    uint16_t *f16 = malloc(nf * 2), *b16 = malloc((size_t)c->cexp * 2);
    for (size_t i = 0; i < nf; i++) f16[i] = rand_f16_bits(i);
    for (int i = 0; i < c->cexp; i++) b16[i] = rand_f16_bits((size_t)i + 7);
    float *t = malloc(nt * sizeof(float)), *ref = malloc(no * sizeof(float)), *out = malloc(no * sizeof(float));
    for (int l = AR_ISA_PORTABLE; l <= best; l++)
      for (int threads = 1; threads <= 3; threads++) {
        ar_threadpool_t *pool = NULL;
        char msg[AR_MSG_BYTES] = "";
        ck_assert_int_eq(ar_threadpool_new(threads, &pool, msg, sizeof msg), 0);
        tnode_t conv, dw;
        tnode_init(&conv, AR_OP_CONV_2D, x, 4, xd, f, 4, fd, b, c->cexp, t, 4, td);
        conv_opts(&conv, c->same ? AR_PADDING_SAME : AR_PADDING_VALID, 1, 1, 1, 1, c->conv_act);
        if (c->f16) {   /* weights as stored */
          conv.t[1].dtype = conv.t[2].dtype = AR_DTYPE_FLOAT16;
          conv.t[1].data = f16;
          conv.t[1].bytes = nf * 2;
          conv.t[2].data = b16;
          conv.t[2].bytes = (size_t)c->cexp * 2;
        }
        tnode_init(&dw, AR_OP_DEPTHWISE_CONV_2D, t, 4, td, df, 4, dfd, db, c->cexp, out, 4, od);
        dw_opts(&dw, c->same ? AR_PADDING_SAME : AR_PADDING_VALID, c->sh, c->sh, c->dh, c->dh, 1, c->dw_act);
        dw.node.inputs[0] = &conv.t[3];   /* one view of the tensor between them */
        conv.node.pool = dw.node.pool = pool;
        conv.node.threads = dw.node.threads = threads;
        /* Unfused at the best level: the reference bytes. */
        ar__f32_set_isa(best);
        dw.t[3].data = ref;
        tnode_run(&conv, &ar_kernel_conv_2d);
        tnode_run(&dw, &ar_kernel_depthwise_conv_2d);
        /* Fused: the conv's output has no bytes. */
        ck_assert(ar_kernel_fuse_ir_check(&conv.node, &dw.node) == own);
        conv.t[3].data = NULL;
        dw.t[3].data = out;
        dw.node.fused = &conv.node;
        memset(out, 0xff, no * sizeof(float));
        char what[160];
        snprintf(what, sizeof what, "fused case %zu, %d thread(s) [%s]", ci, threads, ar_isa_name(l));
        /* prepare at the best level, eval at level l (a level lowered after prepare) */
        int rc = ar_kernel_depthwise_conv_2d.prepare(&dw.node, msg, sizeof msg);
        ck_assert_msg(rc == 0, "%s: prepare: %s", what, msg);
        ck_assert_uint_gt(dw.node.scratch_bytes, 0);
        dw.node.scratch = malloc(dw.node.scratch_bytes);
        memset(dw.node.scratch, 0xff, dw.node.scratch_bytes);
        ar__f32_set_isa(l);
        ar_kernel_depthwise_conv_2d.eval(&dw.node);
        free(dw.node.scratch);
        if (l == best && own) {
          for (size_t i = 0; i < no; i++)
            ck_assert_msg(memcmp(&out[i], &ref[i], sizeof(float)) == 0, "%s: element %zu is %.9g, unfused %.9g",
                          what, i, (double)out[i], (double)ref[i]);
        } else {
          assert_close(out, ref, no, 1e-4f, what);
        }
        ar__f32_set_isa(-1);
        ar_threadpool_free(pool);
      }
    free(x); free(f); free(b); free(df); free(db); free(f16); free(b16); free(t); free(ref); free(out);
  }
}
END_TEST

static Suite *kernels_conv_suite(void) {
  Suite *s = suite_create("kernels_conv");
  TCase *tc = tcase_create("common");
  tcase_add_test(tc, padding_same_puts_odd_pixel_last);
  tcase_add_test(tc, activations_follow_tflite);
  tcase_add_test(tc, fp16_conversion_is_exact);
  tcase_add_test(tc, fp16_runs_match_one_value_conversion);
  suite_add_tcase(s, tc);
  tc = tcase_create("conv_2d");
  tcase_add_test(tc, conv_same_even_stride1);
  tcase_add_test(tc, conv_same_even_stride2_pads_bottom_right);
  tcase_add_test(tc, conv_same_odd_stride2);
  tcase_add_test(tc, conv_dilation);
  tcase_add_test(tc, conv_1x1_bias_relu6);
  tcase_add_test(tc, conv_random_vs_naive);
  tcase_add_test(tc, conv_fp16_weights_bit_identical);
  tcase_add_test(tc, conv_split_bit_identical);
  tcase_add_test(tc, conv_few_outputs_exact);
  tcase_add_test(tc, conv_prepare_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("depthwise_conv_2d");
  tcase_add_test(tc, dw_3x3_same_even);
  tcase_add_test(tc, dw_stride2_same_odd_and_even);
  tcase_add_test(tc, dw_5x5_same);
  tcase_add_test(tc, dw_depth_multiplier_2);
  tcase_add_test(tc, dw_random_vs_naive);
  tcase_add_test(tc, dw_fp16_weights_bit_identical);
  tcase_add_test(tc, dw_split_bit_identical);
  tcase_add_test(tc, dw_prepare_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("transpose_conv_bias");
  tcase_add_test(tc, tconv_stride2_same);
  tcase_add_test(tc, tconv_stride1_overlap);
  tcase_add_test(tc, tconv_random_vs_naive);
  tcase_add_test(tc, tconv_prepare_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("transpose_conv_builtin");
  tcase_add_test(tc, tconv_builtin_hand_computed);
  tcase_add_test(tc, tconv_builtin_random_vs_naive);
  tcase_add_test(tc, tconv_builtin_prepare_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("batch_matmul");
  tcase_add_test(tc, batch_matmul_hand_and_adjoints);
  tcase_add_test(tc, batch_matmul_broadcast_vs_naive);
  suite_add_tcase(s, tc);
  tc = tcase_create("fused_ir");
  tcase_add_test(tc, fused_ir_matches_unfused);
  suite_add_tcase(s, tc);
  tc = tcase_create("fully_connected");
  tcase_add_test(tc, fc_bias_and_no_bias);
  tcase_add_test(tc, fc_keep_num_dims);
  tcase_add_test(tc, fc_random_vs_naive);
  tcase_add_test(tc, fc_fp16_weights_bit_identical);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(kernels_conv_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
