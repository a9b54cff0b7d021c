/* conv.c - TFLite CONV_2D, float32.
 *
 * Input [N,H,W,I] (NHWC), filter [O,KH,KW,I] (OHWI), optional bias [O], output [N,OH,OW,O].
 * TFLite semantics: SAME padding puts the odd row/column at the bottom/right and clamps negative
 * padding to 0; dilation spreads the taps; the fused activation is applied to sum + bias (every
 * path sums the taps from 0 and adds the bias after, as TFLite's builtin kernel does).
 *
 * Speed: a convolution is a GEMM once the input patches are laid out as rows (im2col):
 *   out[M = N*OH*OW, O] = patches[M, K = KH*KW*I] x filter[O, K]^T
 * and OHWI is already [O, K] row-major, so the filter is used in place (cblas Trans). A 1x1
 * stride-1 convolution needs no im2col: the input itself is [M, I] (kernels/gemm.c splits the
 * product over the pool). Otherwise im2col fills a planned scratch buffer in tiles of output
 * pixels (AR_CONV_TILE_BYTES, and at least AR_CONV_TILES tiles where the rows allow), which bounds
 * the scratch the planner has to place and keeps each patch tile in cache for the GEMM. Several
 * tiles: each is one chunk of the pool, im2col + GEMM on a scratch slot of its own (scratch =
 * one tile per thread the node may use); one tile: the rows are filled in parallel, then the
 * product is split like the 1x1 case. With at most 4 input channels (an image model's first
 * layer) and 16/24/32 outputs, K is too short for GEMM to pay off: init packs the filter as [K, O]
 * into state and a direct loop accumulates 4 pixels x O channels in vector registers (no im2col,
 * no scratch), bands of output rows in parallel. Every split is fixed by the shapes alone, so
 * the output is the same for every thread count.
 *
 * A 1x1 convolution with at most 8 output channels (a detector's heads) runs, wherever arenad's
 * own GEMM does (kernels/sgemm.h: AVX-512F, or AVX2 + FMA + F16C), a loop that puts 16 rows in a
 * zmm (8 in a ymm; the own GEMM would give each row 16 lanes of which 1..8 are used) with the own
 * GEMM's order of operations: the same bits (conv_small_n_range), rows split by runs per thread.
 *
 * A filter view that carries TFLite sparsity (a 1x1 filter the interpreter keeps as stored, see
 * ar_kernel_sparse_filter_check) goes to kernels/sparse_conv.c instead.
 *
 * Float16 weights as stored (ar_kernel_reads_f16: the interpreter elides the DEQUANTIZE that
 * would widen them at use): the own GEMM (kernels/sgemm.h) widens the filter while it packs B
 * (vcvtph2ps, exact); the few-input-channel loop widens it into its packed state at init; at the
 * portable level (and whenever the own GEMM is not the path) it is widened into the node's
 * scratch before the OpenBLAS product, as the DEQUANTIZE did. A float16 bias is widened into the
 * scratch (O floats) each eval. The fp32 values and the order of operations are those of the
 * widened path: the same bits.
 */
#include "kernels/ar_kernel_impl.h"

#include <cblas.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_parallel.h"
#include "kernels/conv_util.h"
#include "kernels/gemm.h"
#include "kernels/qconv.h"
#include "kernels/qwide.h"
#include "kernels/sgemm.h"
#include "kernels/sgemm256.h"
#include "kernels/sgemm512.h"
#include "kernels/sparse_conv.h"

/* Upper bound on one im2col tile; at least AR_CONV_TILE_MIN_PIXELS rows so GEMM stays efficient. */
#define AR_CONV_TILE_BYTES (512u * 1024u)
#define AR_CONV_TILE_MIN_PIXELS 64
/* The first layer of an image model has 3 input channels: K = KH*KW*3 is too short for GEMM to pay
 * off, so up to this many input channels (and 16/24/32 outputs) a direct loop runs instead. */
#define AR_CONV_FEW_IN_MAX 4
/* On aarch64 the direct loop's GCC vectors compile to about 5 instructions per multiply-add
 * (qemu insncount, face_detection_short_range's 5x5x3 -> 24 first layer: 43% of the invoke), where
 * im2col + the NEON GEMM (kernels/gemm_f32_8x8_neon.c) take about 0.5: the first layer goes the
 * im2col way there, at every float level (a compile-time choice, so prepare and eval agree). */
#if defined(__aarch64__)
#define AR_CONV_FEW_IN_LOOP 0
#else
#define AR_CONV_FEW_IN_LOOP 1
#endif
/* im2col tiles wanted (for the pool) when the rows allow tiles of AR_CONV_TILE_MIN_PIXELS. */
#define AR_CONV_TILES 8
/* Multiply-adds below which a band of direct-loop rows or im2col rows is not split further. */
#define AR_CONV_MIN_CHUNK_MACS (128 * 1024)

typedef struct {
  uint64_t bias, filter, col;   /* scratch offsets (bytes): widened fp16 bias, widened fp16
                                 * filter (OpenBLAS path), im2col tiles */
  int32_t n, h, w, ci;          /* input */
  int32_t co, kh, kw;           /* filter */
  int32_t oh, ow;               /* output */
  int32_t sh, sw, dh, dw;       /* strides, dilations */
  int32_t pt, pl;               /* leading padding (top, left) */
  int64_t m, k;                 /* GEMM: M = N*OH*OW rows, K = KH*KW*I */
  bool direct;                  /* 1x1 stride 1: the input is the GEMM's left matrix */
  bool few_in;                  /* few input channels: direct loop over packed weights, no GEMM */
  int64_t tile_pixels;          /* im2col rows per tile */
  int64_t n_tiles;
  int64_t row0, row1;           /* few_in: the band of output rows (over N*OH) to compute */
  bool clamp;                   /* few_in: a clamp activation applied at the store, */
  float lo, hi;                 /* as ar__activate does it (x < lo ? lo : x, then v > hi ? hi : v) */
} conv_geom_t;

static void conv_geometry(const ar_node_t *node, conv_geom_t *g) {
  const ar_conv2d_options_t *o = &node->options->conv2d;
  const ar_tview_t *in = node->inputs[0], *f = node->inputs[1];
  g->n = in->dims[0]; g->h = in->dims[1]; g->w = in->dims[2]; g->ci = in->dims[3];
  g->co = f->dims[0]; g->kh = f->dims[1]; g->kw = f->dims[2];
  g->sh = o->stride_h; g->sw = o->stride_w; g->dh = o->dilation_h; g->dw = o->dilation_w;
  g->oh = ar_compute_padding(o->padding, g->h, g->kh, g->sh, g->dh, &g->pt);
  g->ow = ar_compute_padding(o->padding, g->w, g->kw, g->sw, g->dw, &g->pl);
  g->m = (int64_t)g->n * g->oh * g->ow;
  g->k = (int64_t)g->kh * g->kw * g->ci;
  g->direct = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1;
  g->few_in = AR_CONV_FEW_IN_LOOP && !g->direct && g->ci <= AR_CONV_FEW_IN_MAX &&
               (g->co == 16 || g->co == 24 || g->co == 32);
  int64_t t = (int64_t)AR_CONV_TILE_BYTES / (g->k * (int64_t)sizeof(float));
  int64_t share = (g->m + AR_CONV_TILES - 1) / AR_CONV_TILES;
  share = (share + 15) / 16 * 16;
  if (t > share) t = share;
  if (t < AR_CONV_TILE_MIN_PIXELS) t = AR_CONV_TILE_MIN_PIXELS;
  g->tile_pixels = g->m < t ? g->m : t;
  g->n_tiles = g->tile_pixels > 0 ? (g->m + g->tile_pixels - 1) / g->tile_pixels : 0;
  g->row0 = 0;
  g->row1 = (int64_t)g->n * g->oh;
  g->clamp = false;
  g->lo = g->hi = 0.0f;
  /* Scratch layout (the im2col part sized in prepare, which knows the thread count). */
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  g->bias = 0;
  g->filter = bias && bias->dtype == AR_DTYPE_FLOAT16
                  ? ar_align_up((uint64_t)g->co * sizeof(float), 64) : 0;
  g->col = g->filter + (f->dtype == AR_DTYPE_FLOAT16 && !g->few_in
                            ? ar_align_up((uint64_t)g->co * (uint64_t)g->k * sizeof(float), 64) : 0);
}

static int conv_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  const char *name = "CONV_2D";
  int idx = node->index;
  char s1[96], s2[96];
  /* A sparse filter kept as stored (the interpreter checked ar_kernel_sparse_filter_check). */
  if (node->n_inputs > 1 && node->inputs[1] && node->inputs[1]->sparsity)
    return ar__sparse_conv_prepare(node, msg, msg_bytes);
  const bool quantized = ar__q_is_quantized(node);
  const bool wide = ar__qw_takes(node);   /* int16x8 or hybrid (kernels/qwide.h) */
  int rc = quantized ? ar__qconv_check_io(node, name, msg, msg_bytes)
           : wide    ? ar__qw_check_io(node, msg, msg_bytes)
                     : ar__conv_check_io_w(node, name, true, msg, msg_bytes);
  if (rc != 0) return rc;
  const ar_tview_t *in = node->inputs[0], *f = node->inputs[1];
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  const ar_tview_t *out = node->outputs[0];
  const ar_conv2d_options_t *o = &node->options->conv2d;
  if (in->rank != 4 || f->rank != 4)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "input %s and filter %s must both be rank 4 "
                   "(NHWC, OHWI)", idx, name, ar__shape_str(s1, sizeof s1, in),
                   ar__shape_str(s2, sizeof s2, f));
  if (f->dims[3] != in->dims[3])
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "filter shape %s does not match input "
                   "channels %d", idx, name, ar__shape_str(s1, sizeof s1, f), (int)in->dims[3]);
  if (bias && (bias->rank != 1 || bias->dims[0] != f->dims[0]))
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "bias shape %s does not match %d output "
                   "channels", idx, name, ar__shape_str(s1, sizeof s1, bias), (int)f->dims[0]);
  if (o->stride_h < 1 || o->stride_w < 1 || o->dilation_h < 1 || o->dilation_w < 1 ||
      (o->padding != AR_PADDING_SAME && o->padding != AR_PADDING_VALID) ||
      !ar__activation_valid(o->activation))
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "invalid options: stride %dx%d, "
                   "dilation %dx%d, padding %d, activation %d", idx, name, (int)o->stride_h,
                   (int)o->stride_w, (int)o->dilation_h, (int)o->dilation_w, (int)o->padding,
                   (int)o->activation);
  for (int i = 0; i < 4; i++)
    if (in->dims[i] <= 0 || f->dims[i] <= 0)
      return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "empty input %s or filter %s", idx, name,
                     ar__shape_str(s1, sizeof s1, in), ar__shape_str(s2, sizeof s2, f));
  rc = ar__check_window(node, f->dims[1], f->dims[2], o->stride_h, o->stride_w, o->dilation_h, o->dilation_w, msg,
                        msg_bytes);
  if (rc != 0) return rc;
  conv_geom_t g;
  conv_geometry(node, &g);
  if (g.oh <= 0 || g.ow <= 0)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "filter %s with dilation %dx%d is larger "
                   "than input %s under VALID padding", idx, name, ar__shape_str(s1, sizeof s1, f),
                   (int)g.dh, (int)g.dw, ar__shape_str(s2, sizeof s2, in));
  int32_t want[4] = {g.n, g.oh, g.ow, g.co};
  if (node->infer_shapes) ar_k_set_output_shape(node, 0, 4, want);
  if (out->rank != 4 || memcmp(out->dims, want, sizeof want) != 0)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "output shape %s, expected [%d,%d,%d,%d]",
                   idx, name, ar__shape_str(s1, sizeof s1, out), (int)want[0], (int)want[1],
                   (int)want[2], (int)want[3]);
  if (quantized) return ar__qconv_prepare(node, msg, msg_bytes);
  if (wide) return ar__qw_prepare(node, msg, msg_bytes);
  /* cblas takes int sizes. */
  if (g.m > INT_MAX || g.k > INT_MAX || (int64_t)g.n * g.h * g.w * g.ci > INT_MAX)
    return ar_errf(msg, msg_bytes, AR_EOVERFLOW, AR__OPFMT "GEMM of %lld x %lld is too large", idx,
                   name, (long long)g.m, (long long)g.k);
  if (g.few_in) {
    node->scratch_bytes = g.col;   /* a widened fp16 bias, if any */
    node->state_bytes = (uint64_t)g.k * (uint64_t)g.co * sizeof(float);   /* [K, O] weights */
  } else {
    /* One tile per thread that may run at once (several tiles), else the one tile. */
    uint64_t slots = (uint64_t)AR_MIN((int64_t)ar_parallel_threads(node), g.n_tiles);
    node->scratch_bytes = g.col + (g.direct ? 0 : AR_MAX(slots, 1) * (uint64_t)g.tile_pixels *
                                                      (uint64_t)g.k * sizeof(float));
    node->state_bytes = 0;
  }
  return 0;
}

/* One im2col row: the KH*KW*I input values under output pixel (b, oy, ox), zeros outside. */
static void im2col_row(const conv_geom_t *g, const float *in, int32_t b, int32_t oy, int32_t ox,
                       float *row) {
  const size_t ci = (size_t)g->ci;
  const size_t span = (size_t)g->kw * ci;
  const int32_t iy0 = oy * g->sh - g->pt, ix0 = ox * g->sw - g->pl;
  const bool cols_inside = ix0 >= 0 && ix0 + (g->kw - 1) * g->dw < g->w;
  for (int32_t ky = 0; ky < g->kh; ky++, row += span) {
    const int32_t iy = iy0 + ky * g->dh;
    if (iy < 0 || iy >= g->h) { ar__zero_floats(row, span); continue; }
    const float *src = in + (((size_t)b * g->h + iy) * g->w) * ci;
    if (cols_inside && g->dw == 1) {   /* the whole filter row is one contiguous run */
      ar__copy_floats(row, src + (size_t)ix0 * ci, span);
      continue;
    }
    for (int32_t kx = 0; kx < g->kw; kx++) {
      const int32_t ix = ix0 + kx * g->dw;
      float *dst = row + (size_t)kx * ci;
      if (ix < 0 || ix >= g->w) ar__zero_floats(dst, ci);
      else ar__copy_floats(dst, src + (size_t)ix * ci, ci);
    }
  }
}

/* ---- Few input channels: direct convolution over weights packed [K, O] at init. ----
 * Each tap (ky, kx, c) broadcasts one input value and multiplies it into O/8 weight vectors; four
 * output pixels share every weight load and give 4 * O/8 independent FMA chains. */
typedef float conv_v8f __attribute__((vector_size(32), aligned(4), may_alias));
typedef int32_t conv_v8i __attribute__((vector_size(32)));

static void conv_init(ar_node_t *node) {
  if (node->inputs[1]->sparsity) return;
  if (ar__q_is_quantized(node)) { ar__qconv_init(node); return; }
  if (ar__qw_takes(node)) { ar__qw_init(node); return; }
  conv_geom_t g;
  conv_geometry(node, &g);
  if (!g.few_in) return;
  float *w = node->state;                   /* [K, O] */
  if (node->inputs[1]->dtype == AR_DTYPE_FLOAT16) {   /* as stored: widened here */
    const uint8_t *f = node->inputs[1]->data;
    for (int64_t o = 0; o < g.co; o++)
      for (int64_t k = 0; k < g.k; k++) {
        uint16_t h;
        memcpy(&h, f + (size_t)(o * g.k + k) * sizeof h, sizeof h);
        w[k * g.co + o] = ar_fp16_to_fp32(h);
      }
    return;
  }
  const float *f = node->inputs[1]->data;   /* [O, K] */
  for (int64_t o = 0; o < g.co; o++)
    for (int64_t k = 0; k < g.k; k++) w[k * g.co + o] = f[o * g.k + k];
}

/* P output pixels starting at (b, oy, ox0), NV vectors of 8 output channels, unclamped. With
 * `checked` the taps outside the input are skipped (zero padding); otherwise all are inside. */
static AR_ALWAYS_INLINE void conv_few_block(const conv_geom_t *g, const float *in, const float *w,
                                            const float *bias, float *o, int32_t b, int32_t oy,
                                            int32_t ox0, int P, int NV, bool checked) {
  conv_v8f acc[4][4];   /* [pixel][vector]; P <= 4, NV <= 4 */
  #pragma GCC unroll 4
  for (int p = 0; p < P; p++)
    #pragma GCC unroll 4
    for (int v = 0; v < NV; v++)
      acc[p][v] = (conv_v8f){0};
  const int32_t iy0 = oy * g->sh - g->pt;
  const int32_t ci = g->ci, co = g->co;
  for (int32_t ky = 0; ky < g->kh; ky++) {
    const int32_t iy = iy0 + ky * g->dh;
    if (checked && (iy < 0 || iy >= g->h)) continue;
    const float *irow = in + ((size_t)b * g->h + iy) * g->w * ci;
    for (int32_t kx = 0; kx < g->kw; kx++) {
      int32_t ix[4];
      #pragma GCC unroll 4
      for (int p = 0; p < P; p++) ix[p] = (ox0 + p) * g->sw - g->pl + kx * g->dw;
      if (checked && (ix[0] < 0 || ix[0] >= g->w)) continue;   /* P == 1 when checked */
      const float *wk = w + ((size_t)ky * g->kw + kx) * ci * co;
      for (int32_t c = 0; c < ci; c++) {
        conv_v8f wv[4];
        #pragma GCC unroll 4
        for (int v = 0; v < NV; v++) wv[v] = *(const conv_v8f *)(wk + (size_t)c * co + 8 * v);
        #pragma GCC unroll 4
        for (int p = 0; p < P; p++) {
          const float x = irow[(size_t)ix[p] * ci + c];
          #pragma GCC unroll 4
          for (int v = 0; v < NV; v++) acc[p][v] += x * wv[v];
        }
      }
    }
  }
  if (bias) {   /* after the whole sum, as TFLite adds it */
    #pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
      const conv_v8f bv = *(const conv_v8f *)(bias + 8 * v);
      #pragma GCC unroll 4
      for (int p = 0; p < P; p++) acc[p][v] = acc[p][v] + bv;
    }
  }
  if (g->clamp) {   /* ar__activate's clamp on the registers: the same values */
    const conv_v8f lo = {g->lo, g->lo, g->lo, g->lo, g->lo, g->lo, g->lo, g->lo};
    const conv_v8f hi = {g->hi, g->hi, g->hi, g->hi, g->hi, g->hi, g->hi, g->hi};
    #pragma GCC unroll 4
    for (int p = 0; p < P; p++)
      #pragma GCC unroll 4
      for (int v = 0; v < NV; v++) {
        conv_v8i m = acc[p][v] < lo;
        acc[p][v] = (conv_v8f)(((conv_v8i)lo & m) | ((conv_v8i)acc[p][v] & ~m));
        m = acc[p][v] > hi;
        acc[p][v] = (conv_v8f)(((conv_v8i)hi & m) | ((conv_v8i)acc[p][v] & ~m));
      }
  }
  #pragma GCC unroll 4
  for (int p = 0; p < P; p++)
    #pragma GCC unroll 4
    for (int v = 0; v < NV; v++) *(conv_v8f *)(o + (size_t)p * co + 8 * v) = acc[p][v];
}

#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>

/* AVX-512F interior of the few-input-channel loop: P pixels x the 16/24/32 output channels in
 * one or two zmm vectors (24: the second one masked to 8 lanes), twice the pixels per weight load
 * of the AVX2 block. Taps in the same (ky, kx, c) order from 0 with FMA, then the bias, as
 * conv_few_block, so the outputs are bit-identical to the AVX2 clone's. */
#define CONV512_INLINE AR_TARGET_AVX512 static inline __attribute__((always_inline))
CONV512_INLINE void conv512_block(const conv_geom_t *g, const float *in, const float *w,
                                  const float *bias, float *o, int32_t b, int32_t oy, int32_t ox0,
                                  const int P, const int NV, __mmask16 mlast) {
  __m512 acc[8][2];
#pragma GCC unroll 8
  for (int p = 0; p < P; p++) { acc[p][0] = _mm512_setzero_ps(); acc[p][1] = _mm512_setzero_ps(); }
  const int32_t iy0 = oy * g->sh - g->pt;
  const int32_t ci = g->ci, co = g->co;
  const size_t xs = (size_t)g->sw * ci;
  for (int32_t ky = 0; ky < g->kh; ky++) {
    const float *irow = in + ((size_t)b * g->h + iy0 + ky * g->dh) * g->w * ci;
    for (int32_t kx = 0; kx < g->kw; kx++) {
      const float *ip = irow + (size_t)(ox0 * g->sw - g->pl + kx * g->dw) * ci;
      const float *wk = w + ((size_t)ky * g->kw + kx) * ci * co;
      for (int32_t c = 0; c < ci; c++) {
        const __m512 w0 = _mm512_maskz_loadu_ps(NV == 1 ? mlast : (__mmask16)0xffff, wk + (size_t)c * co);
        const __m512 w1 = NV == 2 ? _mm512_maskz_loadu_ps(mlast, wk + (size_t)c * co + 16) : w0;
#pragma GCC unroll 8
        for (int p = 0; p < P; p++) {
          const __m512 x = _mm512_set1_ps(ip[(size_t)p * xs + c]);
          acc[p][0] = _mm512_fmadd_ps(x, w0, acc[p][0]);
          if (NV == 2) acc[p][1] = _mm512_fmadd_ps(x, w1, acc[p][1]);
        }
      }
    }
  }
  if (bias) {   /* after the whole sum, as conv_few_block */
    const __m512 b0 = _mm512_maskz_loadu_ps(NV == 1 ? mlast : (__mmask16)0xffff, bias);
    const __m512 b1 = NV == 2 ? _mm512_maskz_loadu_ps(mlast, bias + 16) : b0;
#pragma GCC unroll 8
    for (int p = 0; p < P; p++) {
      acc[p][0] = _mm512_add_ps(acc[p][0], b0);
      if (NV == 2) acc[p][1] = _mm512_add_ps(acc[p][1], b1);
    }
  }
  if (g->clamp) {   /* max(lo, x) then min(hi, v): x < lo ? lo : x, v > hi ? hi : v (NaN kept) */
    const __m512 lo = _mm512_set1_ps(g->lo), hi = _mm512_set1_ps(g->hi);
#pragma GCC unroll 8
    for (int p = 0; p < P; p++) {
      acc[p][0] = _mm512_min_ps(hi, _mm512_max_ps(lo, acc[p][0]));
      if (NV == 2) acc[p][1] = _mm512_min_ps(hi, _mm512_max_ps(lo, acc[p][1]));
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < P; p++) {
    _mm512_mask_storeu_ps(o + (size_t)p * co, NV == 1 ? mlast : (__mmask16)0xffff, acc[p][0]);
    if (NV == 2) _mm512_mask_storeu_ps(o + (size_t)p * co + 16, mlast, acc[p][1]);
  }
}

/* Channel-major form for 16 output pixels at a time (KW*I <= 16, no horizontal dilation): each
 * filter row's taps under the 16 pixels are one contiguous run per pixel, so 16 masked loads and a
 * 16 x 16 in-register transpose give X[k] = tap k of the 16 pixels; then per group of 16 output
 * channels 16 accumulators (one channel of 16 pixels each) take one FMA per tap with the weight
 * broadcast from the packed [K, O] filter - every lane useful for 16, 24 or 32 outputs - and a
 * transpose turns them back into pixel-major rows. Terms in (ky, kx, c) order from 0 with FMA,
 * then the bias, as conv_few_block: the same bits. */
/* Output channels o0 .. o0+NO of the 16 pixels from X[K][16] (NO = 16 or 8, a constant). */
CONV512_INLINE void conv512_cm_group(const conv_geom_t *g, const float *X, int32_t K,
                                     const float *w, int32_t co, int32_t o0, const float *bias,
                                     float *o, int32_t np, const int NO) {
  __m512 acc[16];
#pragma GCC unroll 16
  for (int q = 0; q < 16; q++)
    acc[q] = _mm512_setzero_ps();
  for (int32_t k = 0; k < K; k++) {
    const __m512 x = _mm512_load_ps(X + (size_t)k * 16);
    const float *wk = w + (size_t)k * co + o0;
#pragma GCC unroll 16
    for (int q = 0; q < NO; q++) acc[q] = _mm512_fmadd_ps(x, _mm512_set1_ps(wk[q]), acc[q]);
  }
  if (bias) {
#pragma GCC unroll 16
    for (int q = 0; q < NO; q++) acc[q] = _mm512_add_ps(acc[q], _mm512_set1_ps(bias[o0 + q]));
  }
  if (g->clamp) {   /* as conv512_block: the same values as ar__activate */
    const __m512 lo = _mm512_set1_ps(g->lo), hi = _mm512_set1_ps(g->hi);
#pragma GCC unroll 16
    for (int q = 0; q < NO; q++) acc[q] = _mm512_min_ps(hi, _mm512_max_ps(lo, acc[q]));
  }
  ar__tr16_512(acc);   /* acc[p] = channels o0 .. o0+15 of pixel p */
  const __mmask16 mo = (__mmask16)((1u << NO) - 1u);
  for (int32_t p = 0; p < np; p++) _mm512_mask_storeu_ps(o + (size_t)p * co + o0, mo, acc[p]);
}

AR_TARGET_AVX512 static void conv512_cm_block(const conv_geom_t *g, const float *in,
                                              const float *w, const float *bias, float *o,
                                              int32_t b, int32_t oy, int32_t ox0, int32_t np) {
  const int32_t ci = g->ci, co = g->co, run = g->kw * ci, K = g->kh * run;
  float X[5 * 16 * 16] __attribute__((aligned(64)));   /* [K][16 pixels], K <= 5 rows x 16 */
  const __mmask16 mr = (__mmask16)((1u << run) - 1u);
  const int32_t iy0 = oy * g->sh - g->pt;
  for (int32_t ky = 0; ky < g->kh; ky++) {
    const float *irow = in + ((size_t)b * g->h + iy0 + ky * g->dh) * g->w * ci;
    __m512 r[16];
#pragma GCC unroll 16
    for (int p = 0; p < 16; p++)
      r[p] = p < np ? _mm512_maskz_loadu_ps(mr, irow + (size_t)((ox0 + p) * g->sw - g->pl) * ci)
                    : _mm512_setzero_ps();
    ar__tr16_512(r);
    for (int32_t j = 0; j < run; j++) _mm512_store_ps(X + (size_t)(ky * run + j) * 16, r[j]);
  }
  for (int32_t o0 = 0; o0 < co; o0 += 16) {
    if (co - o0 >= 16) conv512_cm_group(g, X, K, w, co, o0, bias, o, np, 16);
    else conv512_cm_group(g, X, K, w, co, o0, bias, o, np, 8);   /* 24 outputs: the last 8 */
  }
}

/* Output columns [ox, ox_hi) of row (b, oy), every tap inside the input. */
AR_TARGET_AVX512 __attribute__((noinline)) static void
conv512_interior(const conv_geom_t *g, const float *in, const float *w, const float *bias,
                 float *orow, int32_t b, int32_t oy, int32_t ox, int32_t ox_hi) {
  if (g->dw == 1 && g->kw * g->ci <= 16 && g->kh <= 5) {
    for (; ox < ox_hi; ox += 16)
      conv512_cm_block(g, in, w, bias, orow + (size_t)ox * g->co, b, oy, ox, AR_MIN(16, ox_hi - ox));
    return;
  }
  const int NV = g->co > 16 ? 2 : 1;
  const __mmask16 mlast = g->co == 24 ? (__mmask16)0xff : (__mmask16)0xffff;
  const size_t co = (size_t)g->co;
  if (NV == 1) {
    for (; ox + 8 <= ox_hi; ox += 8) conv512_block(g, in, w, bias, orow + ox * co, b, oy, ox, 8, 1, mlast);
    for (; ox < ox_hi; ox++) conv512_block(g, in, w, bias, orow + ox * co, b, oy, ox, 1, 1, mlast);
  } else {
    for (; ox + 8 <= ox_hi; ox += 8) conv512_block(g, in, w, bias, orow + ox * co, b, oy, ox, 8, 2, mlast);
    for (; ox < ox_hi; ox++) conv512_block(g, in, w, bias, orow + ox * co, b, oy, ox, 1, 2, mlast);
  }
}
#endif

static AR_ALWAYS_INLINE void conv_few_rows(const conv_geom_t *g, const float *in, const float *w,
                                           const float *bias, float *out, int NV, bool z512) {
  /* Columns whose taps are all inside: ox*sw - pl >= 0 and ox*sw - pl + (kw-1)*dw <= w-1. */
  int32_t ox_lo = (g->pl + g->sw - 1) / g->sw;
  int32_t last = g->w - 1 - (g->kw - 1) * g->dw + g->pl;
  int32_t ox_hi = last >= 0 ? last / g->sw + 1 : 0;
  if (ox_hi > g->ow) ox_hi = g->ow;
  if (ox_lo > ox_hi) ox_lo = ox_hi;
  const int P = NV <= 3 ? 4 : 3;   /* P * NV accumulators + NV weights fit 16 vector registers */
  /* Rows [row0, row1) of N*OH: image b from its first row in the band to its last. */
  const int32_t b0 = (int32_t)(g->row0 / g->oh), b1 = (int32_t)((g->row1 + g->oh - 1) / g->oh);
  for (int32_t b = b0; b < b1; b++)
    for (int32_t oy = b == b0 ? (int32_t)(g->row0 % g->oh) : 0,
                 oy_end = (int32_t)AR_MIN((int64_t)g->oh, g->row1 - (int64_t)b * g->oh);
         oy < oy_end; oy++) {
      float *orow = out + (((size_t)b * g->oh + oy) * g->ow) * g->co;
      const int32_t iy0 = oy * g->sh - g->pt;
      const bool rows_inside = iy0 >= 0 && iy0 + (g->kh - 1) * g->dh < g->h;
      int32_t ox = 0;
      if (rows_inside) {
        for (; ox < ox_lo; ox++)
          conv_few_block(g, in, w, bias, orow + (size_t)ox * g->co, b, oy, ox, 1, NV, true);
#if AR_HAVE_AVX2_CLONE
        if (z512) {
          conv512_interior(g, in, w, bias, orow, b, oy, ox, ox_hi);
          ox = ox_hi;
        }
#else
        (void)z512;
#endif
        for (; ox + P <= ox_hi; ox += P)
          conv_few_block(g, in, w, bias, orow + (size_t)ox * g->co, b, oy, ox, P, NV, false);
        for (; ox < ox_hi; ox++)
          conv_few_block(g, in, w, bias, orow + (size_t)ox * g->co, b, oy, ox, 1, NV, false);
      }
      for (; ox < g->ow; ox++)
        conv_few_block(g, in, w, bias, orow + (size_t)ox * g->co, b, oy, ox, 1, NV, true);
    }
}

static AR_ALWAYS_INLINE void conv_few_body(const conv_geom_t *g, const float *in, const float *w,
                                           const float *bias, float *out, bool z512) {
  if (g->co == 16) conv_few_rows(g, in, w, bias, out, 2, z512);
  else if (g->co == 24) conv_few_rows(g, in, w, bias, out, 3, z512);
  else conv_few_rows(g, in, w, bias, out, 4, z512);
}

static void conv_few_base(const conv_geom_t *g, const float *in, const float *w, const float *bias,
                          float *out) {
  conv_few_body(g, in, w, bias, out, false);
}
#if AR_HAVE_AVX2_CLONE
AR_TARGET_AVX2 static void conv_few_avx2(const conv_geom_t *g, const float *in, const float *w,
                                         const float *bias, float *out) {
  conv_few_body(g, in, w, bias, out, false);
}
AR_TARGET_AVX512 static void conv_few_avx512(const conv_geom_t *g, const float *in, const float *w,
                                             const float *bias, float *out) {
  conv_few_body(g, in, w, bias, out, true);
}
#endif

/* What the range functions below share. */
typedef struct conv_run {
  const ar_node_t *node;
  const conv_geom_t *g;
  const float *in, *filter, *bias;
  const uint16_t *filter16;   /* fp16 filter as stored, read by the own GEMM (filter NULL), or NULL */
  float *col;                 /* im2col tiles in the scratch */
  float *out;
  ar_activation_t act;
} conv_run_t;

/* ---- 1x1 convolutions with few output channels (a detector's heads: the scores of 1, 2 or 6
 * anchors per pixel of a 48x48, 16x16 or 8x8 map) ----
 * The own GEMM gives every row of A its own vector of output channels, so N = 1 costs as much as
 * N = 16 (sgemm512, 48x48x48 -> 1: 28 us, 8 GFLOP/s). Here rows share a vector instead: 16 x 16
 * blocks of A are transposed in registers on AVX-512F (X[k] = column k of the 16 rows), 8 x 8
 * blocks on AVX2 (two blocks of 8 rows side by side when N <= 6, so that 2N accumulators hide the
 * FMA latency), and each of the N accumulators (one output channel of those rows) takes one FMA
 * per k with the weight broadcast. Each output is the terms in ascending k from 0, one FMA each,
 * then + bias, with the own GEMM's clamp, so the bits are the own GEMM's (which takes these products
 * everywhere else: OpenBLAS paths, fusion). */
#define CONV_SMALL_N_MAX 8
#define CONV_SMALL_N_FLOATS 4096   /* N * K weights, widened from float16 on the stack */
/* Row runs per thread of at least this many rows x K (a few microseconds of work). */
#define CONV_SMALL_N_MIN_WORK (8 * 1024)

#if AR_HAVE_AVX2_CLONE
/* np (1..16) rows of C (N columns, row stride ldc) from np rows of A (lda) and w [N, K]. */
CONV512_INLINE void conv512_small_n_block(const float *a, int64_t lda, const float *w, int64_t k,
                                          const float *bias, float *c, int64_t ldc, int64_t np,
                                          bool clamp, float lo, float hi, const int N) {
  __m512 acc[16];
#pragma GCC unroll 16
  for (int q = 0; q < 16; q++)
    acc[q] = _mm512_setzero_ps();
  for (int64_t kb = 0; kb < k; kb += 16) {
    const int64_t kn = AR_MIN((int64_t)16, k - kb);
    const __mmask16 mk = kn >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << kn) - 1u);
    __m512 r[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
      r[i] = i < np ? _mm512_maskz_loadu_ps(mk, a + i * lda + kb) : _mm512_setzero_ps();
    ar__tr16_512(r);   /* r[j] = A[0..15][kb + j] */
    for (int64_t j = 0; j < kn; j++) {
      const float *wk = w + kb + j;
#pragma GCC unroll 8
      for (int q = 0; q < N; q++) acc[q] = _mm512_fmadd_ps(r[j], _mm512_set1_ps(wk[q * k]), acc[q]);
    }
  }
  if (bias) {   /* after the whole sum, as the own GEMM */
#pragma GCC unroll 8
    for (int q = 0; q < N; q++) acc[q] = _mm512_add_ps(acc[q], _mm512_set1_ps(bias[q]));
  }
  if (clamp) {   /* sgemm512's order: max with lo, then min with hi */
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
#pragma GCC unroll 8
    for (int q = 0; q < N; q++) acc[q] = _mm512_min_ps(_mm512_max_ps(acc[q], vlo), vhi);
  }
  ar__tr16_512(acc);   /* acc[p] = the N outputs of row p */
  const __mmask16 mo = (__mmask16)((1u << N) - 1u);
  for (int64_t p = 0; p < np; p++) _mm512_mask_storeu_ps(c + p * ldc, mo, acc[p]);
}

AR_TARGET_AVX512 static void conv512_small_n_rows(const float *a, int64_t lda, const float *w,
                                                  int64_t n, int64_t k, const float *bias,
                                                  float *c, int64_t ldc, int64_t m, bool clamp,
                                                  float lo, float hi) {
  for (int64_t r = 0; r < m; r += 16) {
    const int64_t np = AR_MIN((int64_t)16, m - r);
    const float *ar = a + r * lda;
    float *cr = c + r * ldc;
    switch (n) {
#define CONV_SMALL_N_CASE(NN) \
    case NN: conv512_small_n_block(ar, lda, w, k, bias, cr, ldc, np, clamp, lo, hi, NN); break;
    CONV_SMALL_N_CASE(1) CONV_SMALL_N_CASE(2) CONV_SMALL_N_CASE(3) CONV_SMALL_N_CASE(4)
    CONV_SMALL_N_CASE(5) CONV_SMALL_N_CASE(6) CONV_SMALL_N_CASE(7) CONV_SMALL_N_CASE(8)
#undef CONV_SMALL_N_CASE
    default: break;
    }
  }
}

#define CONV256_INLINE AR_TARGET_AVX2 static inline __attribute__((always_inline))
/* np (1..8H) rows of C (N columns, row stride ldc) from np rows of A (lda) and w [N, K]: H blocks
 * of 8 rows, each row one lane of a ymm per output channel. */
CONV256_INLINE void conv256_small_n_block(const float *a, int64_t lda, const float *w, int64_t k,
                                          const float *bias, float *c, int64_t ldc, int64_t np,
                                          bool clamp, float lo, float hi, const int N, const int H) {
  __m256 acc[2][8];
#pragma GCC unroll 8
  for (int q = 0; q < 8; q++) {
    acc[0][q] = _mm256_setzero_ps();
    acc[1][q] = acc[0][q];
  }
  float xt[2][8][8] __attribute__((aligned(32)));   /* xt[h][j] = A[8h .. 8h+7][kb + j] */
  for (int64_t kb = 0; kb < k; kb += 8) {
    const int64_t kn = AR_MIN((int64_t)8, k - kb);
    const __m256i mk = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)kn),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int h = 0; h < H; h++) {
      __m256 r[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; i++) {
        const float *q = a + (8 * h + i) * lda + kb;
        r[i] = 8 * h + i >= np ? _mm256_setzero_ps()
               : kn >= 8 ? _mm256_loadu_ps(q) : _mm256_maskload_ps(q, mk);
      }
      ar__tr8_256(r);
#pragma GCC unroll 8
      for (int j = 0; j < 8; j++) _mm256_store_ps(xt[h][j], r[j]);
    }
    for (int64_t j = 0; j < kn; j++) {
      const __m256 x0 = _mm256_load_ps(xt[0][j]);
      const __m256 x1 = H == 2 ? _mm256_load_ps(xt[1][j]) : x0;
      const float *wk = w + kb + j;
#pragma GCC unroll 8
      for (int q = 0; q < N; q++) {
        const __m256 wq = _mm256_set1_ps(wk[q * k]);
        acc[0][q] = _mm256_fmadd_ps(x0, wq, acc[0][q]);
        if (H == 2) acc[1][q] = _mm256_fmadd_ps(x1, wq, acc[1][q]);
      }
    }
  }
  float o[2][8][8] __attribute__((aligned(32)));   /* o[h][q][i]: channel q of row 8h + i */
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  for (int h = 0; h < H; h++) {
#pragma GCC unroll 8
    for (int q = 0; q < N; q++) {   /* the own GEMM's order: max with lo, then min with hi */
      const __m256 s = bias ? _mm256_add_ps(acc[h][q], _mm256_set1_ps(bias[q])) : acc[h][q];
      const __m256 v = clamp ? _mm256_min_ps(_mm256_max_ps(s, vlo), vhi) : s;
      _mm256_store_ps(o[h][q], v);
    }
  }
  for (int64_t p = 0; p < np; p++)
    for (int q = 0; q < N; q++) c[p * ldc + q] = o[p / 8][q][p % 8];
}

AR_TARGET_AVX2 static void conv256_small_n_rows(const float *a, int64_t lda, const float *w,
                                                int64_t n, int64_t k, const float *bias,
                                                float *c, int64_t ldc, int64_t m, bool clamp,
                                                float lo, float hi) {
  const int64_t step = n <= 6 ? 16 : 8;
  for (int64_t r = 0; r < m; r += step) {
    const int64_t np = AR_MIN(step, m - r);
    const float *ar = a + r * lda;
    float *cr = c + r * ldc;
    switch (n) {
#define CONV_SMALL_N_CASE(NN, HH) \
    case NN: conv256_small_n_block(ar, lda, w, k, bias, cr, ldc, np, clamp, lo, hi, NN, HH); break;
    CONV_SMALL_N_CASE(1, 2) CONV_SMALL_N_CASE(2, 2) CONV_SMALL_N_CASE(3, 2) CONV_SMALL_N_CASE(4, 2)
    CONV_SMALL_N_CASE(5, 2) CONV_SMALL_N_CASE(6, 2) CONV_SMALL_N_CASE(7, 1) CONV_SMALL_N_CASE(8, 1)
#undef CONV_SMALL_N_CASE
    default: break;
    }
  }
}
#endif

/* Output rows [r0, r1) of a 1x1 convolution with at most CONV_SMALL_N_MAX output channels. */
static void conv_small_n_range(void *ctx, int64_t r0, int64_t r1) {
#if AR_HAVE_AVX2_CLONE
  const conv_run_t *c = ctx;
  const conv_geom_t *g = c->g;
  float wide[CONV_SMALL_N_FLOATS] __attribute__((aligned(64)));
  const float *w = c->filter;
  if (c->filter16) {
    ar_fp16_to_fp32_n(c->filter16, wide, (size_t)g->co * (size_t)g->k);
    w = wide;
  }
  float lo, hi;
  ar__act_range(c->act, &lo, &hi);
  const bool clamp = ar__act_is_clamp(c->act);
  float *out = c->out + r0 * g->co;
  if (ar_sgemm512_available())
    conv512_small_n_rows(c->in + r0 * g->k, g->k, w, g->co, g->k, c->bias, out, g->co, r1 - r0,
                         clamp, lo, hi);
  else
    conv256_small_n_rows(c->in + r0 * g->k, g->k, w, g->co, g->k, c->bias, out, g->co, r1 - r0,
                         clamp, lo, hi);
  if (c->act != AR_ACT_NONE && !clamp)   /* TANH, SIGN_BIT: after the product, as the own GEMM */
    ar_apply_activation(out, (size_t)(r1 - r0) * (size_t)g->co, c->act);
#else
  (void)ctx; (void)r0; (void)r1;
#endif
}

/* The few-output-channel path takes the products the own GEMM would: its ISA levels, M >= 4. */
static bool conv_small_n(const conv_geom_t *g) {
  return AR_HAVE_AVX2_CLONE && g->direct && g->co <= CONV_SMALL_N_MAX && g->m >= 4 &&
         g->co * g->k <= CONV_SMALL_N_FLOATS && ar_sgemm_own_available();
}

/* Few input channels: output rows [r0, r1) of N*OH, then their activation. */
static void conv_few_range(void *ctx, int64_t r0, int64_t r1) {
  const conv_run_t *c = ctx;
  conv_geom_t g = *c->g;
  g.row0 = r0;
  g.row1 = r1;
  g.clamp = ar__act_is_clamp(c->act);
  ar__act_range(c->act, &g.lo, &g.hi);
#if AR_HAVE_AVX2_CLONE
  if (ar__f32_isa() >= AR_ISA_AVX512) conv_few_avx512(&g, c->in, c->node->state, c->bias, c->out);
  else if (ar__f32_isa() >= AR_ISA_AVX2) conv_few_avx2(&g, c->in, c->node->state, c->bias, c->out);
  else
#endif
    conv_few_base(&g, c->in, c->node->state, c->bias, c->out);
  const size_t row = (size_t)g.ow * (size_t)g.co;
  if (!g.clamp) ar__activate(c->out + (size_t)r0 * row, (size_t)(r1 - r0) * row, c->act);
}

/* im2col rows [m0, m1) of the patch matrix, into `col` (row m0 first). */
static void im2col_rows(const conv_geom_t *g, const float *in, int64_t m0, int64_t m1, float *col) {
  const int64_t per_image = (int64_t)g->oh * g->ow;
  int32_t b = (int32_t)(m0 / per_image);
  int64_t rem = m0 % per_image;
  int32_t oy = (int32_t)(rem / g->ow), ox = (int32_t)(rem % g->ow);
  for (int64_t r = m0; r < m1; r++, col += g->k) {
    im2col_row(g, in, b, oy, ox, col);
    if (++ox == g->ow) { ox = 0; if (++oy == g->oh) { oy = 0; b++; } }
  }
}

/* One tile of several: im2col of tiles [t0, t1) on the slot's scratch, each followed by its whole
 * GEMM (inline: the tiles are the split). */
static void conv_tile_range(void *ctx, int32_t slot, int64_t t0, int64_t t1) {
  const conv_run_t *c = ctx;
  const conv_geom_t *g = c->g;
  float *col = c->col + (size_t)slot * (size_t)g->tile_pixels * (size_t)g->k;
  for (int64_t t = t0; t < t1; t++) {
    const int64_t m0 = t * g->tile_pixels, tm = AR_MIN(g->tile_pixels, g->m - m0);
    im2col_rows(g, c->in, m0, m0 + tm, col);
    const ar_gemm_nt_t gm = {.a = col, .b = c->filter, .b16 = c->filter16, .bias = c->bias,
                             .c = c->out + m0 * g->co, .m = tm, .n = g->co, .k = g->k,
                             .lda = g->k, .ldb = g->k, .ldc = g->co, .act = c->act, .own = true};
    ar_gemm_nt(NULL, &gm);
  }
}

/* One tile only: rows [m0, m1) of the patch matrix into the scratch. */
static void conv_im2col_range(void *ctx, int64_t m0, int64_t m1) {
  const conv_run_t *c = ctx;
  im2col_rows(c->g, c->in, m0, m1, c->col + (size_t)m0 * (size_t)c->g->k);
}

static void conv_eval(const ar_node_t *node) {
  if (node->inputs[1]->sparsity) { ar__sparse_conv_eval(node); return; }
  if (ar__q_is_quantized(node)) { ar__qconv_eval(node); return; }
  if (ar__qw_takes(node)) { ar__qw_eval(node); return; }
  const ar_tview_t *bias_t = node->n_inputs > 2 ? node->inputs[2] : NULL;
  conv_geom_t g;
  conv_geometry(node, &g);
  conv_run_t c = {.node = node, .g = &g, .in = node->inputs[0]->data,
                  .filter = node->inputs[1]->data, .bias = bias_t ? bias_t->data : NULL,
                  .col = node->scratch ? (float *)(void *)((uint8_t *)node->scratch + g.col) : NULL,
                  .out = node->outputs[0]->data, .act = node->options->conv2d.activation};
  /* Weights as stored (float16): the bias widened into the scratch; the filter read by the own
   * GEMM as it is, else (OpenBLAS) widened into the scratch. The few-channel loop has it in state. */
  if (bias_t && bias_t->dtype == AR_DTYPE_FLOAT16) {
    float *b = (float *)(void *)((uint8_t *)node->scratch + g.bias);
    ar_fp16_to_fp32_n(bias_t->data, b, (size_t)g.co);
    c.bias = b;
  }
  if (!g.few_in && node->inputs[1]->dtype == AR_DTYPE_FLOAT16) {
    /* The own GEMM takes every product of 4 rows or more (kernels/gemm.c); a product below (M < 4,
     * or an im2col tile of 1..3 rows) runs on OpenBLAS with the widened filter, as fp32 weights do. */
    const int64_t last_tile = g.n_tiles > 1 ? g.m - (g.n_tiles - 1) * g.tile_pixels : g.m;
    if (ar_sgemm_own_available() && g.m >= 4 && (g.direct || last_tile >= 4)) {
      c.filter16 = node->inputs[1]->data;
      c.filter = NULL;
    } else {
      float *f = (float *)(void *)((uint8_t *)node->scratch + g.filter);
      ar_fp16_to_fp32_n(node->inputs[1]->data, f, (size_t)g.co * (size_t)g.k);
      c.filter = f;
    }
  }

  if (g.few_in) {
    const int64_t rows = (int64_t)g.n * g.oh;
    ar_parallel_for(node, rows, ar_parallel_grain(rows, (int64_t)g.ow * g.co * g.k,
                                                  AR_CONV_MIN_CHUNK_MACS, 1),
                    conv_few_range, &c);
    return;
  }
  if (conv_small_n(&g)) {
    ar_parallel_for_runs(node, g.m, 16, AR_MAX((int64_t)16, CONV_SMALL_N_MIN_WORK / g.k),
                         conv_small_n_range, &c);
    return;
  }
  if (g.direct) {
    const ar_gemm_nt_t gm = {.a = c.in, .b = c.filter, .b16 = c.filter16, .bias = c.bias,
                             .c = c.out, .m = g.m, .n = g.co, .k = g.k, .lda = g.k, .ldb = g.k,
                             .ldc = g.co, .act = c.act, .own = true, .rows = node->split_rows};
    ar_gemm_nt(node, &gm);
    return;
  }
  if (g.n_tiles > 1) {
    /* As many slots as prepare gave scratch for. */
    const int32_t slots = (int32_t)AR_MIN((int64_t)ar_parallel_threads(node), g.n_tiles);
    ar_parallel_for_slots(node, g.n_tiles, 1, slots, conv_tile_range, &c);
    return;
  }
  ar_parallel_for(node, g.m, ar_parallel_grain(g.m, g.k, AR_CONV_MIN_CHUNK_MACS / 4, 1),
                  conv_im2col_range, &c);
  const ar_gemm_nt_t gm = {.a = c.col, .b = c.filter, .b16 = c.filter16, .bias = c.bias,
                           .c = c.out, .m = g.m, .n = g.co, .k = g.k, .lda = g.k, .ldb = g.k,
                           .ldc = g.co, .act = c.act, .own = true};
  ar_gemm_nt(node, &gm);
}

static const ar_kernel_form_t conv_2d_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32),
  AR_KF(1, 3, UINT8, UINT8),
  AR_KF(1, 3, INT8, INT8),
  AR_KFW(2, 2, FLOAT32, INT8, FLOAT32),   /* hybrid (kernels/qwide.h) */
  AR_KFW(4, 4, INT16, INT8, INT16),       /* int16x8 */
  AR_KFW(5, 5, FLOAT32, INT8, FLOAT32),   /* hybrid with per-channel weights */
};
const ar_kernel_t ar_kernel_conv_2d = {
  .name = "CONV_2D",
  .prepare = conv_prepare,
  .init = conv_init,
  .eval = conv_eval,
  .support = AR_KSUPPORT(conv_2d_forms, 0, 1),
};

bool ar__conv_2d_reads_f16(const ar_node_t *node, int32_t input) {
  return ar__conv_reads_f16(node, input);
}
