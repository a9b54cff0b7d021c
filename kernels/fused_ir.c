/* fused_ir.c - an inverted residual's expansion 1x1 CONV_2D run inside the DEPTHWISE_CONV_2D that
 * alone reads its output (node->fused; the interpreter picks the pairs, interp/ar_interp.c).
 *
 * Unfused, the expansion conv writes its whole output (e.g. [112,112,64] float: 3.2 MB) and the
 * depthwise reads it back from L3 or DRAM; both are memory-bound there. Fused, each thread takes
 * a contiguous run of the depthwise's output rows (split by thread count) and walks it in bands
 * of AR_FIR_BAND_BYTES of conv rows: for each band it computes the conv rows the band's taps read
 * that its window (a slot of this node's scratch) does not hold yet, keeping the rows the
 * previous band shares with it (moved to the window's front), then runs the depthwise rows of
 * the band on the window (ar__dw_rows, addressed as if the whole map were there). The conv's
 * output tensor has no bytes at all (the interpreter elides it from the plan).
 *
 * Bit-identical to the unfused pair: each conv output is computed by arenad's own GEMM
 * (kernels/sgemm.h: sgemm512 on AVX-512F, sgemm256 on AVX2 + FMA + F16C, the same bits), one FMA
 * chain in k order from 0, then the bias, whatever rows a call holds, as the unfused conv's product is on
 * the same CPU (gemm.c sends products of 4 rows or more there); a row computed twice (the halo
 * at the start of a thread's run) has the same bits both times; each depthwise output is
 * computed by the same code as dw_eval's. Without the own GEMM at eval (a test lowering the ISA
 * to portable after prepare; the interpreter fuses only where it runs) or for a product of fewer
 * than 4 rows, the band products go to OpenBLAS as the unfused conv would (values within
 * rounding of it). Never allocates.
 *
 * Scratch: [depthwise's own (fp16 widening) | conv bias widened from fp16 | conv filter widened
 * from fp16 (OpenBLAS fallback) | one window per thread].
 */
#include "kernels/ar_kernel_impl.h"

#include <stdint.h>
#include <string.h>

#include "common/ar_util.h"
#include "common/ar_error.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_parallel.h"
#include "kernels/conv_util.h"
#include "kernels/gemm.h"
#include "kernels/sgemm.h"

/* Bytes of conv rows a band's window aims at (each core's L2 is 1-2 MB on the machines measured;
 * the window, the conv's input rows and the depthwise's output rows of a band stay in it). */
#define AR_FIR_BAND_BYTES (768u * 1024u)

typedef struct fir_geom {
  int32_t n, h, w, cin, cexp;       /* conv input [N,H,W,Cin], output [N,H,W,Cexp] */
  int32_t oh, sh, pt, kh, dh;       /* depthwise rows */
  int32_t band, cap;                /* depthwise output rows per band, window rows */
  uint64_t bias_off, filt_off, win_off, win_bytes, total;
} fir_geom_t;

static void fir_geometry(const ar_node_t *node, fir_geom_t *g) {
  const ar_node_t *conv = node->fused;
  const ar_tview_t *x = conv->inputs[0], *f = conv->inputs[1];
  const ar_tview_t *cb = conv->n_inputs > 2 ? conv->inputs[2] : NULL;
  const ar_depthwise_options_t *o = &node->options->depthwise;
  g->n = x->dims[0]; g->h = x->dims[1]; g->w = x->dims[2]; g->cin = x->dims[3];
  g->cexp = f->dims[0];
  g->kh = node->inputs[1]->dims[1];
  g->sh = o->stride_h; g->dh = o->dilation_h;
  g->oh = ar_compute_padding(o->padding, g->h, g->kh, g->sh, g->dh, &g->pt);
  const uint64_t row = (uint64_t)g->w * (uint64_t)g->cexp * sizeof(float);
  const int32_t reach = (g->kh - 1) * g->dh + 1;
  g->band = 1;
  while (g->band < g->oh &&
         (uint64_t)((g->band) * g->sh + reach) * row <= AR_FIR_BAND_BYTES)
    g->band++;
  g->cap = AR_MIN((g->band - 1) * g->sh + reach, g->h);
  g->bias_off = ar_align_up(ar__dw_scratch_bytes(node), 64);
  g->filt_off = g->bias_off +
                (cb && cb->dtype == AR_DTYPE_FLOAT16 ? ar_align_up((uint64_t)g->cexp * sizeof(float), 64) : 0);
  g->win_off = g->filt_off + (f->dtype == AR_DTYPE_FLOAT16
                                  ? ar_align_up((uint64_t)g->cexp * g->cin * sizeof(float), 64) : 0);
  g->win_bytes = ar_align_up((uint64_t)g->cap * row, 64);
  g->total = g->win_off + (uint64_t)ar_parallel_threads(node) * g->win_bytes;
}

bool ar_kernel_fuse_ir_check(const ar_node_t *conv, const ar_node_t *dw) {
  if (!conv || !dw || conv->op != AR_OP_CONV_2D || dw->op != AR_OP_DEPTHWISE_CONV_2D ||
      conv->n_inputs < 2 || conv->n_outputs != 1 || dw->n_inputs < 2 || dw->n_outputs != 1 ||
      !conv->options || !dw->options)
    return false;
  const ar_tview_t *x = conv->inputs[0], *f = conv->inputs[1], *t = conv->outputs[0];
  const ar_tview_t *cb = conv->n_inputs > 2 ? conv->inputs[2] : NULL;
  const ar_tview_t *df = dw->inputs[1], *db = dw->n_inputs > 2 ? dw->inputs[2] : NULL;
  if (!x || !f || !t || dw->inputs[0] != t || !df || !dw->outputs[0]) return false;
  const ar_conv2d_options_t *o = &conv->options->conv2d;
  if (x->dtype != AR_DTYPE_FLOAT32 || t->dtype != AR_DTYPE_FLOAT32 ||
      dw->outputs[0]->dtype != AR_DTYPE_FLOAT32 || x->rank != 4 || t->rank != 4 || f->rank != 4)
    return false;
  if (f->sparsity || !f->is_constant || (f->dtype != AR_DTYPE_FLOAT32 && f->dtype != AR_DTYPE_FLOAT16) ||
      f->dims[1] != 1 || f->dims[2] != 1 || f->dims[3] != x->dims[3])
    return false;
  if (cb && (!cb->is_constant || (cb->dtype != AR_DTYPE_FLOAT32 && cb->dtype != AR_DTYPE_FLOAT16)))
    return false;
  if (o->stride_h != 1 || o->stride_w != 1 || !ar__activation_valid(o->activation)) return false;
  if (!df->is_constant || (df->dtype != AR_DTYPE_FLOAT32 && df->dtype != AR_DTYPE_FLOAT16) ||
      df->rank != 4 || df->dims[1] < 1)
    return false;
  if (db && (!db->is_constant || (db->dtype != AR_DTYPE_FLOAT32 && db->dtype != AR_DTYPE_FLOAT16)))
    return false;
  return ar_sgemm_own_available();
}

int ar__fused_ir_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  fir_geom_t g;
  fir_geometry(node, &g);
  if (g.cap < 1 || (int64_t)g.n * g.h * g.w > INT32_MAX)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "fused expansion conv of %d rows", node->index,
                   "DEPTHWISE_CONV_2D", (int)g.h);
  node->scratch_bytes = g.total;
  return 0;
}

typedef struct fir_run {
  const ar_node_t *node;
  const fir_geom_t *g;
  const float *x, *filter, *bias, *wide;
  const uint16_t *filter16;   /* fp16 filter as stored (the own GEMM widens it while packing) */
  bool own;                   /* the own GEMM (else OpenBLAS through gemm.c) */
  ar_activation_t act;
  float *win;                 /* slot 0's window */
} fir_run_t;

/* Conv rows [y0, y1) of image b into dst (row-major, Cexp floats per pixel). */
static void fir_conv_rows(const fir_run_t *c, int32_t b, int32_t y0, int32_t y1, float *dst) {
  const fir_geom_t *g = c->g;
  const float *a = c->x + ((size_t)b * g->h + (size_t)y0) * g->w * g->cin;
  const int64_t m = (int64_t)(y1 - y0) * g->w;
  if (c->own) {
    if (c->filter16)
      ar_sgemm_nt_f16(a, g->cin, c->filter16, g->cin, c->bias, dst, g->cexp, m, g->cexp, g->cin, c->act);
    else
      ar_sgemm_nt(a, g->cin, c->filter, g->cin, c->bias, dst, g->cexp, m, g->cexp, g->cin, c->act);
    return;
  }
  const ar_gemm_nt_t gm = {.a = a, .b = c->filter, .bias = c->bias, .c = dst, .m = m, .n = g->cexp,
                           .k = g->cin, .lda = g->cin, .ldb = g->cin, .ldc = g->cexp, .act = c->act,
                           .own = false};
  ar_gemm_nt(NULL, &gm);
}

/* Depthwise output rows [r0, r1) of N*OH, band by band, on slot `slot`'s window. */
static void fir_range(void *ctx, int32_t slot, int64_t r0, int64_t r1) {
  const fir_run_t *c = ctx;
  const fir_geom_t *g = c->g;
  const size_t row = (size_t)g->w * (size_t)g->cexp;
  float *win = (float *)(void *)((uint8_t *)c->win + (size_t)slot * g->win_bytes);
  int32_t wb = -1, wlo = 0, whi = 0;   /* the window holds conv rows [wlo, whi) of image wb */
  for (int64_t r = r0; r < r1;) {
    const int32_t b = (int32_t)(r / g->oh), oy0 = (int32_t)(r % g->oh);
    const int64_t r_end = AR_MIN(AR_MIN(r1, r + g->band), (int64_t)(b + 1) * g->oh);
    const int32_t oy1 = oy0 + (int32_t)(r_end - r);
    int32_t lo = oy0 * g->sh - g->pt, hi = (oy1 - 1) * g->sh - g->pt + (g->kh - 1) * g->dh + 1;
    if (lo < 0) lo = 0;
    if (hi > g->h) hi = g->h;
    if (hi < lo) hi = lo;
    if (b != wb || lo < wlo || lo >= whi) {
      wb = b;
      wlo = whi = lo;
    } else if (lo > wlo) {   /* keep the rows this band shares with the previous one */
      memmove(win, win + (size_t)(lo - wlo) * row, (size_t)(whi - lo) * row * sizeof(float));
      wlo = lo;
    }
    if (hi > whi) {
      fir_conv_rows(c, b, whi, hi, win + (size_t)(whi - wlo) * row);
      whi = hi;
    }
    /* The depthwise addresses row (b, iy) at in + (b*H + iy) * row: point `in` that far before
     * the window's first row (only rows [lo, hi) are read). */
    const float *in = (const float *)(uintptr_t)((uintptr_t)win -
                                                 ((size_t)b * g->h + (size_t)wlo) * row * sizeof(float));
    ar__dw_rows(c->node, in, c->wide, r, r_end);
    r = r_end;
  }
}

void ar__fused_ir_eval(const ar_node_t *node) {
  const ar_node_t *conv = node->fused;
  fir_geom_t g;
  fir_geometry(node, &g);
  const ar_tview_t *f = conv->inputs[1], *cb = conv->n_inputs > 2 ? conv->inputs[2] : NULL;
  uint8_t *s = node->scratch;
  fir_run_t c = {.node = node, .g = &g, .x = conv->inputs[0]->data, .wide = (const float *)(void *)s,
                 .act = conv->options->conv2d.activation,
                 .win = (float *)(void *)(s + g.win_off)};
  /* The rule of gemm.c for the unfused conv: the own GEMM for a product of 4 rows or more. */
  c.own = ar_sgemm_own_available() && (int64_t)g.n * g.h * g.w >= 4;
  ar__dw_widen(node, (float *)(void *)s);
  c.bias = cb ? cb->data : NULL;
  if (cb && cb->dtype == AR_DTYPE_FLOAT16) {
    float *bw = (float *)(void *)(s + g.bias_off);
    ar_fp16_to_fp32_n(cb->data, bw, (size_t)g.cexp);
    c.bias = bw;
  }
  c.filter = f->data;
  if (f->dtype == AR_DTYPE_FLOAT16) {
    if (c.own) {
      c.filter16 = f->data;
      c.filter = NULL;
    } else {
      float *fw = (float *)(void *)(s + g.filt_off);
      ar_fp16_to_fp32_n(f->data, fw, (size_t)g.cexp * (size_t)g.cin);
      c.filter = fw;
    }
  }
  /* One run of rows per thread (each run pays a halo of conv rows at its start): parts of at
   * least half a thread's share, so that no run is cut into pieces. */
  const int64_t rows = (int64_t)g.n * g.oh;
  const int32_t threads = ar_parallel_threads(node);
  const int64_t min_part = (rows + 2 * threads - 1) / (2 * threads);
  ar_parallel_for_split_slots(node, rows, 1, min_part, threads, fir_range, &c);
}
