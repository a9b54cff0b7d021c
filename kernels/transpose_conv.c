/* transpose_conv.c - MediaPipe's custom operator Convolution2DTransposeBias and TFLite's builtin
 * TRANSPOSE_CONV, float32: one scatter machinery, two ways to get the geometry.
 *
 * Inputs: input [N,H,W,I] (NHWC), weights [O,KH,KW,I] (OHWI), bias [O]; output [N,OH,OW,O].
 * Options (TfLiteTransposeConvParams in custom_options): padding, stride_w, stride_h.
 * Semantics follow mediapipe/util/tflite/operations/transpose_conv_bias.cc: every output pixel
 * starts at the bias, then each input pixel (iy, ix) scatters input . weights[o, ky, kx, :] into
 * output (iy*stride_h - pad_top + ky, ix*stride_w - pad_left + kx), dropping taps that fall
 * outside. Output size: stride*(in-1) + k - pad_total, where pad_total = 0 for VALID and
 * max(0, k - (in-1) % stride - 1) for SAME (so in*stride when k >= stride); pad_top/left =
 * pad_total / 2.
 *
 * Builtin TRANSPOSE_CONV (TFLite transpose_conv.cc): inputs (output_shape: constant int32 [4],
 * weights [O,KH,KW,I], input [N,H,W,I], optional bias [O]); TransposeConvOptions padding, strides
 * and (version 4) a fused activation. The output shape is output_shape itself; the padding is the
 * forward convolution's over that output (kernels/padding.h: total (ceil(OH/s)-1)*s + KH - OH for
 * SAME, 0 for VALID; top = total / 2); then the same scatter, bias (or 0) first, activation last.
 *
 * Speed: the per-pixel products are one GEMM, col[M = N*H*W, KH*KW*O] = input[M, I] x W'^T, where
 * init repacks the weights once into state as W' = [KH,KW,O,I] so a pixel's contributions to one
 * output position are contiguous in O; a col2im pass then adds them into the output. The GEMM
 * runs in tiles of input pixels through a planned scratch buffer. When KH*KW*O <= 8 (the shipped
 * models: 2x2 taps, one output channel) a pixel's products fit one vector and are computed by a
 * broadcast-multiply loop instead (no GEMM, no scratch); when the kernel equals the stride the
 * taps tile the output and col2im writes instead of accumulating.
 *
 * Threads: when the taps tile the output, input pixels write disjoint outputs, so bands of pixels
 * (the vector loop) or whole tiles (GEMM + col2im on a scratch slot per thread) run in parallel on
 * the node's pool; otherwise outputs accumulate from neighbouring pixels in pixel order, so only
 * each tile's GEMM is split (kernels/gemm.c) and col2im stays in order. All splits follow the
 * shapes alone: the output is the same for every thread count.
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
#include "kernels/sgemm512.h"

#define AR_TCONV_TILE_BYTES (256u * 1024u)
#define AR_TCONV_TILE_MIN_PIXELS 64
/* Up to this many columns (KH*KW*O) a pixel's products fit one 8-float vector: computing them with
 * a broadcast-multiply loop beats a GEMM whose N is that small. */
#define AR_TCONV_SMALL_COLS 8
/* Multiply-adds below which a band of input pixels of the vector loop is not split further. */
#define AR_TCONV_MIN_CHUNK_MACS (64 * 1024)

typedef float tconv_v8f __attribute__((vector_size(32), aligned(4), may_alias));

typedef struct {
  int32_t n, h, w, ci, co, kh, kw, sh, sw, oh, ow, pt, pl;
  int64_t m, cols;        /* GEMM rows (input pixels) and columns (KH*KW*O) */
  int64_t tile_pixels, n_tiles;
  int64_t m_begin;        /* the vector loop runs input pixels [m_begin, m) */
  bool small;             /* cols <= AR_TCONV_SMALL_COLS: per-pixel vector loop, no GEMM */
  bool tiles;             /* kernel == stride, no padding: each output written exactly once */
} tconv_geom_t;

/* MediaPipe's output size and leading padding along one axis. */
static int32_t tconv_axis(ar_padding_t padding, int32_t in, int32_t k, int32_t stride,
                          int32_t *pad_before) {
  int32_t total = 0;
  if (padding == AR_PADDING_SAME) {
    total = k - (in - 1) % stride - 1;
    if (total < 0) total = 0;
  }
  *pad_before = total / 2;
  return stride * (in - 1) + k - total;
}

/* The input, weights and (possibly NULL) bias views of either op. */
static void tconv_io(const ar_node_t *node, const ar_tview_t **in, const ar_tview_t **f,
                     const ar_tview_t **bias) {
  if (node->op == AR_OP_TRANSPOSE_CONV) {
    *in = node->inputs[2];
    *f = node->inputs[1];
    *bias = node->n_inputs > 3 ? node->inputs[3] : NULL;
  } else {
    *in = node->inputs[0];
    *f = node->inputs[1];
    *bias = node->inputs[2];
  }
}

static void tconv_geometry(const ar_node_t *node, tconv_geom_t *g) {
  const ar_transpose_conv_options_t *o = &node->options->transpose_conv;
  const ar_tview_t *in, *f, *bias;
  tconv_io(node, &in, &f, &bias);
  g->n = in->dims[0]; g->h = in->dims[1]; g->w = in->dims[2]; g->ci = in->dims[3];
  g->co = f->dims[0]; g->kh = f->dims[1]; g->kw = f->dims[2];
  g->sh = o->stride_h; g->sw = o->stride_w;
  if (node->op == AR_OP_TRANSPOSE_CONV) {
    /* TFLite: the output is output_shape; padding is the forward conv's over it. */
    g->oh = node->outputs[0]->dims[1];
    g->ow = node->outputs[0]->dims[2];
    ar_compute_padding(o->padding, g->oh, g->kh, g->sh, 1, &g->pt);
    ar_compute_padding(o->padding, g->ow, g->kw, g->sw, 1, &g->pl);
  } else {
    g->oh = tconv_axis(o->padding, g->h, g->kh, g->sh, &g->pt);
    g->ow = tconv_axis(o->padding, g->w, g->kw, g->sw, &g->pl);
  }
  g->m = (int64_t)g->n * g->h * g->w;
  g->cols = (int64_t)g->kh * g->kw * g->co;
  int64_t t = (int64_t)AR_TCONV_TILE_BYTES / (g->cols * (int64_t)sizeof(float));
  if (t < AR_TCONV_TILE_MIN_PIXELS) t = AR_TCONV_TILE_MIN_PIXELS;
  g->tile_pixels = g->m < t ? g->m : t;
  g->n_tiles = g->tile_pixels > 0 ? (g->m + g->tile_pixels - 1) / g->tile_pixels : 0;
  g->m_begin = 0;
  g->small = g->cols <= AR_TCONV_SMALL_COLS;
  g->tiles = g->kh == g->sh && g->kw == g->sw && g->pt == 0 && g->pl == 0 &&
             g->oh == g->h * g->sh && g->ow == g->w * g->sw && bias != NULL;
}

/* Scratch (GEMM tile) and state (repacked weights) of a validated node. */
static int tconv_buffers(ar_node_t *node, const char *name, char *msg, size_t msg_bytes) {
  tconv_geom_t g;
  tconv_geometry(node, &g);
  if (g.m > INT_MAX || g.cols > INT_MAX)
    return ar_errf(msg, msg_bytes, AR_EOVERFLOW, AR__OPFMT "GEMM of %lld x %lld is too large",
                   (int)node->index, name, (long long)g.m, (long long)g.cols);
  if (g.small) {
    node->scratch_bytes = 0;
    node->state_bytes = (uint64_t)g.ci * AR_TCONV_SMALL_COLS * sizeof(float);
  } else {
    /* Tiling taps: one GEMM tile per thread that may run at once; else the one tile. */
    const uint64_t slots = g.tiles ? (uint64_t)AR_MAX(AR_MIN((int64_t)ar_parallel_threads(node), g.n_tiles), 1) : 1;
    node->scratch_bytes = slots * (uint64_t)g.tile_pixels * (uint64_t)g.cols * sizeof(float);
    node->state_bytes = (uint64_t)g.cols * (uint64_t)g.ci * sizeof(float);
  }
  return 0;
}

static int tconv_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  const char *name = "Convolution2DTransposeBias";
  int idx = node->index;
  char s1[96], s2[96];
  if (node->n_inputs != 3 || node->n_outputs != 1 || !node->inputs[0] || !node->inputs[1] ||
      !node->inputs[2] || !node->outputs[0] || !node->options)
    return ar_errf(msg, msg_bytes, AR_EINVAL, AR__OPFMT "needs inputs (input, weights, bias) and one "
                   "output, got %d inputs and %d outputs", idx, name, node->n_inputs, node->n_outputs);
  const ar_tview_t *in = node->inputs[0], *f = node->inputs[1], *bias = node->inputs[2];
  const ar_tview_t *out = node->outputs[0];
  const ar_transpose_conv_options_t *o = &node->options->transpose_conv;
  if (in->dtype != AR_DTYPE_FLOAT32 || f->dtype != AR_DTYPE_FLOAT32 ||
      bias->dtype != AR_DTYPE_FLOAT32 || out->dtype != AR_DTYPE_FLOAT32)
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "only float32 input/weights/bias/output "
                   "are supported (input %s, weights %s, output %s)", idx, name,
                   ar_dtype_name(in->dtype), ar_dtype_name(f->dtype), ar_dtype_name(out->dtype));
  if (in->rank != 4 || f->rank != 4 || bias->rank != 1)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "input %s and weights %s must be rank 4, "
                   "bias rank 1", idx, name, ar__shape_str(s1, sizeof s1, in),
                   ar__shape_str(s2, sizeof s2, f));
  for (int i = 0; i < 4; i++)
    if (in->dims[i] <= 0 || f->dims[i] <= 0)
      return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "empty input %s or weights %s", idx, name,
                     ar__shape_str(s1, sizeof s1, in), ar__shape_str(s2, sizeof s2, f));
  if (f->dims[3] != in->dims[3])
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "weights shape %s does not match input "
                   "channels %d", idx, name, ar__shape_str(s1, sizeof s1, f), (int)in->dims[3]);
  if (bias->dims[0] != f->dims[0])
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "bias shape %s does not match %d output "
                   "channels", idx, name, ar__shape_str(s1, sizeof s1, bias), (int)f->dims[0]);
  if (o->stride_h < 1 || o->stride_w < 1 ||
      (o->padding != AR_PADDING_SAME && o->padding != AR_PADDING_VALID))
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "invalid options: stride %dx%d, "
                   "padding %d", idx, name, (int)o->stride_h, (int)o->stride_w, (int)o->padding);
  int wrc = ar__check_window(node, f->dims[1], f->dims[2], o->stride_h, o->stride_w, 1, 1, msg, msg_bytes);
  if (wrc != 0) return wrc;
  if (!f->is_constant)
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "weights must be constant (they are "
                   "repacked once at init)", idx, name);
  tconv_geom_t g;
  tconv_geometry(node, &g);
  int32_t want[4] = {g.n, g.oh, g.ow, g.co};
  if (node->infer_shapes) ar_k_set_output_shape(node, 0, 4, want);
  if (out->rank != 4 || memcmp(out->dims, want, sizeof want) != 0)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "output shape %s, expected [%d,%d,%d,%d]",
                   idx, name, ar__shape_str(s1, sizeof s1, out), (int)want[0], (int)want[1],
                   (int)want[2], (int)want[3]);
  return tconv_buffers(node, name, msg, msg_bytes);
}

/* Builtin TRANSPOSE_CONV: arity, dtypes, shapes against output_shape, activation. */
static int tconv_builtin_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 3, 4, 3, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *os = node->inputs[0], *in, *f, *bias, *out = node->outputs[0];
  tconv_io(node, &in, &f, &bias);
  if ((rc = ar_k_check_dtype(node, in, "input (input 2)", AR_DTYPE_FLOAT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, f, "weights (input 1)", AR_DTYPE_FLOAT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, out, "output 0", AR_DTYPE_FLOAT32, msg, msg_bytes)) ||
      (bias && (rc = ar_k_check_dtype(node, bias, "bias (input 3)", AR_DTYPE_FLOAT32, msg, msg_bytes))) ||
      (rc = ar_k_check_dtype(node, os, "output_shape (input 0)", AR_DTYPE_INT32, msg, msg_bytes)))
    return rc;
  if (in->rank != 4 || f->rank != 4 || (bias && (bias->rank != 1 || bias->dims[0] != f->dims[0])))
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input and weights must be rank 4 and bias [%d]",
                    (int)(f->rank ? f->dims[0] : 0));
  for (int i = 0; i < 4; i++)
    if (in->dims[i] <= 0 || f->dims[i] <= 0)
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "empty input or weights");
  if (f->dims[3] != in->dims[3])
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "weights have %d input channels, input has %d",
                    (int)f->dims[3], (int)in->dims[3]);
  if (os->rank != 1 || os->dims[0] != 4)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "output_shape (input 0) must have shape [4]");
  if ((rc = ar_k_require_constant(node, os, "output_shape (input 0)", msg, msg_bytes))) return rc;
  if (!f->is_constant)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "weights must be constant (they are "
                    "repacked once at init)");
  const ar_transpose_conv_options_t *o = node->options ? &node->options->transpose_conv : NULL;
  if (!o || o->stride_h < 1 || o->stride_w < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "strides must be >= 1");
  if ((rc = ar__check_window(node, f->dims[1], f->dims[2], o->stride_h, o->stride_w, 1, 1, msg, msg_bytes))) return rc;
  float lo, hi;
  bool post;
  if ((rc = ar_k_activation(node, o->activation, &lo, &hi, &post, msg, msg_bytes))) return rc;
  int32_t want[4];
  memcpy(want, os->data, sizeof want);
  if (want[0] != in->dims[0] || want[3] != f->dims[0] || want[1] < 1 || want[2] < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "output_shape [%d,%d,%d,%d] does not fit batch %d "
                    "and %d output channels", (int)want[0], (int)want[1], (int)want[2], (int)want[3],
                    (int)in->dims[0], (int)f->dims[0]);
  if ((rc = ar_k_check_output_shape(node, 4, want, msg, msg_bytes))) return rc;
  return tconv_buffers(node, "TRANSPOSE_CONV", msg, msg_bytes);
}

/* Repack the OHWI weights once. GEMM path: HWOI = [cols, I], so col[m] holds, for each tap
 * (ky, kx), the O contributions side by side. Small path: [I, 8], column j = (ky*KW + kx)*O + o,
 * zero-padded, so one pixel's products are sum_i x[i] * row_i. */
static void tconv_init(ar_node_t *node) {
  const ar_tview_t *f = node->inputs[1];
  const float *src = f->data;
  float *dst = node->state;
  const int32_t co = f->dims[0], kh = f->dims[1], kw = f->dims[2], ci = f->dims[3];
  const bool small = (int64_t)kh * kw * co <= AR_TCONV_SMALL_COLS;
  if (small) memset(dst, 0, (size_t)ci * AR_TCONV_SMALL_COLS * sizeof(float));
  for (int32_t o = 0; o < co; o++)
    for (int32_t ky = 0; ky < kh; ky++)
      for (int32_t kx = 0; kx < kw; kx++) {
        const size_t j = ((size_t)ky * kw + kx) * co + o;
        const float *w = src + (((size_t)o * kh + ky) * kw + kx) * ci;
        if (small)
          for (int32_t i = 0; i < ci; i++) dst[(size_t)i * AR_TCONV_SMALL_COLS + j] = w[i];
        else
          memcpy(dst + j * ci, w, (size_t)ci * sizeof(float));
      }
}

/* Add one input pixel's products c[(ky*KW + kx)*O + o] into the output (MediaPipe's scatter). */
static AR_ALWAYS_INLINE void tconv_scatter(const tconv_geom_t *g, const float *c, const float *bias,
                                           float *out, int32_t b, int32_t iy, int32_t ix) {
  const int32_t co = g->co;
  if (g->tiles) {   /* exact tiling: write bias + products, no accumulation, no bounds checks */
    const size_t run = (size_t)g->kw * co;
    for (int32_t ky = 0; ky < g->kh; ky++) {
      float *dst = out + (((size_t)b * g->oh + (size_t)iy * g->sh + ky) * g->ow +
                          (size_t)ix * g->sw) * co;
      const float *srcv = c + (size_t)ky * run;
      if (co == 1)
        for (size_t j = 0; j < run; j++) dst[j] = srcv[j] + bias[0];
      else
        for (size_t j = 0; j < run; j++) dst[j] = srcv[j] + bias[j % (size_t)co];
    }
    return;
  }
  for (int32_t ky = 0; ky < g->kh; ky++) {
    const int32_t oy = iy * g->sh - g->pt + ky;
    if (oy < 0 || oy >= g->oh) continue;
    float *orow = out + ((size_t)b * g->oh + oy) * g->ow * co;
    for (int32_t kx = 0; kx < g->kw; kx++) {
      const int32_t ox = ix * g->sw - g->pl + kx;
      if (ox < 0 || ox >= g->ow) continue;
      float *dst = orow + (size_t)ox * co;
      const float *srcv = c + ((size_t)ky * g->kw + kx) * co;
      for (int32_t o = 0; o < co; o++) dst[o] += srcv[o];
    }
  }
}

static AR_ALWAYS_INLINE void tconv_small_body(const tconv_geom_t *g, const float *in,
                                              const float *w8, const float *bias, float *out) {
  const int64_t per_image = (int64_t)g->h * g->w;
  int32_t b = (int32_t)(g->m_begin / per_image);
  int32_t iy = (int32_t)(g->m_begin % per_image / g->w), ix = (int32_t)(g->m_begin % g->w);
  const int32_t ci = g->ci;
  int64_t m = g->m_begin;
  /* Eight pixels at a time: eight independent FMA chains hide the FMA latency that one
   * accumulator per pixel would expose. */
  for (; m + 8 <= g->m; m += 8) {
    const float *x = in + m * ci;
    tconv_v8f acc[8];
    for (int p = 0; p < 8; p++) acc[p] = (tconv_v8f){0};
    for (int32_t i = 0; i < ci; i++) {
      const tconv_v8f w = *(const tconv_v8f *)(w8 + (size_t)i * AR_TCONV_SMALL_COLS);
      for (int p = 0; p < 8; p++) acc[p] += x[(size_t)p * ci + i] * w;
    }
    for (int p = 0; p < 8; p++) {
      float c[AR_TCONV_SMALL_COLS];
      memcpy(c, &acc[p], sizeof c);
      tconv_scatter(g, c, bias, out, b, iy, ix);
      if (++ix == g->w) { ix = 0; if (++iy == g->h) { iy = 0; b++; } }
    }
  }
  for (; m < g->m; m++) {
    const float *x = in + m * ci;
    tconv_v8f acc = {0};
    for (int32_t i = 0; i < ci; i++)
      acc += x[i] * *(const tconv_v8f *)(w8 + (size_t)i * AR_TCONV_SMALL_COLS);
    float c[AR_TCONV_SMALL_COLS];
    memcpy(c, &acc, sizeof c);
    tconv_scatter(g, c, bias, out, b, iy, ix);
    if (++ix == g->w) { ix = 0; if (++iy == g->h) { iy = 0; b++; } }
  }
}

static void tconv_small_base(const tconv_geom_t *g, const float *in, const float *w8,
                             const float *bias, float *out) {
  tconv_small_body(g, in, w8, bias, out);
}
#if AR_HAVE_AVX2_CLONE
AR_TARGET_AVX2 static void tconv_small_avx2(const tconv_geom_t *g, const float *in,
                                            const float *w8, const float *bias, float *out) {
  tconv_small_body(g, in, w8, bias, out);
}
#endif

#if AR_HAVE_AVX2_CLONE
/* AVX-512F form of the small path when the taps tile the output (kernel == stride, no padding):
 * 16 input pixels of one row at a time, their channels transposed in registers (16 x 16 blocks)
 * so each zmm holds one channel of 16 pixels; then each of the <= 8 columns (ky, kx, o) is one
 * 16-pixel FMA chain over the channels with the weight broadcast, all lanes useful (the AVX2
 * loop fills 4..8 of 8 lanes). Same terms in the same order (0, then channel by channel with
 * FMA, then + bias) as tconv_small_body, so the same bits. */
AR_TARGET_AVX512 static void tconv_small_tiles_avx512(const tconv_geom_t *g, const float *in,
                                                      const float *w8, const float *bias,
                                                      float *out) {
  const int32_t ci = g->ci, co = g->co, cols = (int32_t)g->cols;
  const int32_t run = g->kw * co;   /* floats one input pixel writes per output row */
  /* Whole input rows [m_begin / W, m / W) of N*H (the pool's chunk; everything by default). */
  const int64_t row0 = g->m_begin / g->w, row1 = g->m / g->w;
  for (int64_t row = row0; row < row1; row++) {
      const int32_t b = (int32_t)(row / g->h), iy = (int32_t)(row % g->h);
      const float *irow = in + ((size_t)b * g->h + iy) * g->w * ci;
      for (int32_t ix0 = 0; ix0 < g->w; ix0 += 16) {
        const int32_t np = AR_MIN(16, g->w - ix0);
        __m512 acc[AR_TCONV_SMALL_COLS];
        for (int32_t j = 0; j < cols; j++) acc[j] = _mm512_setzero_ps();
        for (int32_t i0 = 0; i0 < ci; i0 += 16) {
          const int32_t ni = AR_MIN(16, ci - i0);
          const __mmask16 mi = ni >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << ni) - 1u);
          __m512 r[16];
#pragma GCC unroll 16
          for (int p = 0; p < 16; p++)
            r[p] = p < np ? _mm512_maskz_loadu_ps(mi, irow + (size_t)(ix0 + p) * ci + i0)
                          : _mm512_setzero_ps();
          ar__tr16_512(r);
          for (int32_t i = 0; i < ni; i++) {
            const float *wi = w8 + (size_t)(i0 + i) * AR_TCONV_SMALL_COLS;
            for (int32_t j = 0; j < cols; j++)
              acc[j] = _mm512_fmadd_ps(r[i], _mm512_set1_ps(wi[j]), acc[j]);
          }
        }
        float t[AR_TCONV_SMALL_COLS][16] __attribute__((aligned(64)));
        for (int32_t j = 0; j < cols; j++) {
          const __m512 bj = _mm512_set1_ps(bias ? bias[j % co] : 0.0f);
          _mm512_store_ps(t[j], bias ? _mm512_add_ps(acc[j], bj) : acc[j]);
        }
        for (int32_t ky = 0; ky < g->kh; ky++) {
          float *dst = out + (((size_t)b * g->oh + (size_t)iy * g->sh + ky) * g->ow +
                              (size_t)ix0 * g->sw) * co;
          const float (*tk)[16] = t + (size_t)ky * run;
          if (run == 2 && np == 16) {   /* interleave two vectors into 32 floats */
            const __m512 a0 = _mm512_load_ps(tk[0]), a1 = _mm512_load_ps(tk[1]);
            const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
            const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
            _mm512_storeu_ps(dst, _mm512_permutex2var_ps(a0, lo, a1));
            _mm512_storeu_ps(dst + 16, _mm512_permutex2var_ps(a0, hi, a1));
          } else {
            for (int32_t p = 0; p < np; p++)
              for (int32_t q = 0; q < run; q++) dst[(size_t)p * run + q] = tk[q][p];
          }
        }
      }
    }
}
#endif

typedef struct tconv_job {
  const ar_node_t *node;
  const tconv_geom_t *g;
  const float *in, *bias;
  float *out;
} tconv_job_t;

static void tconv_small(const tconv_geom_t *g, const float *in, const float *w8, const float *bias,
                        float *out) {
#if AR_HAVE_AVX2_CLONE
  if (ar__f32_isa() >= AR_ISA_AVX2) { tconv_small_avx2(g, in, w8, bias, out); return; }
#endif
  tconv_small_base(g, in, w8, bias, out);
}

#if AR_HAVE_AVX2_CLONE
/* The AVX-512F tiling loop over input rows [r0, r1) of N*H (disjoint outputs). */
static void tconv_small512_range(void *ctx, int64_t r0, int64_t r1) {
  const tconv_job_t *j = ctx;
  tconv_geom_t g = *j->g;
  g.m_begin = r0 * g.w;
  g.m = r1 * g.w;
  tconv_small_tiles_avx512(&g, j->in, j->node->state, j->bias, j->out);
}
#endif

/* Vector loop over input pixels [m0, m1) (tiling taps: disjoint outputs). */
static void tconv_small_range(void *ctx, int64_t m0, int64_t m1) {
  const tconv_job_t *j = ctx;
  tconv_geom_t g = *j->g;
  g.m_begin = m0;
  g.m = m1;
  tconv_small(&g, j->in, j->node->state, j->bias, j->out);
}

/* GEMM + col2im of input pixels [m0, m0 + tm) through `col`. */
static void tconv_tile(const tconv_job_t *j, int64_t m0, int64_t tm, float *col) {
  const tconv_geom_t *g = j->g;
  const int64_t per_image = (int64_t)g->h * g->w;
  int32_t b = (int32_t)(m0 / per_image);
  int64_t rem = m0 % per_image;
  int32_t iy = (int32_t)(rem / g->w), ix = (int32_t)(rem % g->w);
  for (int64_t r = 0; r < tm; r++) {
    tconv_scatter(g, col + r * g->cols, j->bias, j->out, b, iy, ix);
    if (++ix == g->w) { ix = 0; if (++iy == g->h) { iy = 0; b++; } }
  }
}

/* Tiling taps: whole tiles [t0, t1), each GEMM inline on the slot's scratch, then its col2im. */
static void tconv_tiles_range(void *ctx, int32_t slot, int64_t t0, int64_t t1) {
  const tconv_job_t *j = ctx;
  const tconv_geom_t *g = j->g;
  float *col = (float *)j->node->scratch + (size_t)slot * (size_t)g->tile_pixels * (size_t)g->cols;
  for (int64_t t = t0; t < t1; t++) {
    const int64_t m0 = t * g->tile_pixels, tm = AR_MIN(g->tile_pixels, g->m - m0);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)tm, (int)g->cols, g->ci, 1.0f,
                j->in + m0 * g->ci, g->ci, j->node->state, g->ci, 0.0f, col, (int)g->cols);
    tconv_tile(j, m0, tm, col);
  }
}

static void tconv_run(const ar_node_t *node) {
  tconv_geom_t g;
  tconv_geometry(node, &g);
  const ar_tview_t *tin, *tf, *tb;
  tconv_io(node, &tin, &tf, &tb);
  tconv_job_t j = {.node = node, .g = &g, .in = tin->data, .bias = tb ? tb->data : NULL,
                   .out = node->outputs[0]->data};
  if (!g.tiles) ar__fill_bias_rows(j.out, (size_t)g.n * g.oh * g.ow, (size_t)g.co, j.bias);
  if (g.small) {
#if AR_HAVE_AVX2_CLONE
    if (ar__f32_isa() >= AR_ISA_AVX512 && g.tiles) {
      const int64_t rows = (int64_t)g.n * g.h;
      ar_parallel_for(node, rows, ar_parallel_grain(rows, (int64_t)g.w * g.ci * g.cols,
                                                    AR_TCONV_MIN_CHUNK_MACS, 1),
                      tconv_small512_range, &j);
      return;
    }
#endif
    if (g.tiles)
      ar_parallel_for(node, g.m, ar_parallel_grain(g.m, (int64_t)g.ci * AR_TCONV_SMALL_COLS,
                                                   AR_TCONV_MIN_CHUNK_MACS, 8),
                      tconv_small_range, &j);
    else
      tconv_small(&g, j.in, node->state, j.bias, j.out);
    return;
  }
  if (g.tiles) {
    const int32_t slots = (int32_t)AR_MIN((int64_t)ar_parallel_threads(node), g.n_tiles);
    ar_parallel_for_slots(node, g.n_tiles, 1, slots, tconv_tiles_range, &j);
    return;
  }
  float *col = node->scratch;
  for (int64_t m0 = 0; m0 < g.m; m0 += g.tile_pixels) {
    const int64_t tm = AR_MIN(g.tile_pixels, g.m - m0);
    const ar_gemm_nt_t gm = {.a = j.in + m0 * g.ci, .b = node->state, .c = col, .m = tm,
                             .n = g.cols, .k = g.ci, .lda = g.ci, .ldb = g.ci, .ldc = g.cols,
                             .act = AR_ACT_NONE};
    ar_gemm_nt(node, &gm);
    tconv_tile(&j, m0, tm, col);
  }
}

static void tconv_eval(const ar_node_t *node) { tconv_run(node); }

static void tconv_builtin_eval(const ar_node_t *node) {
  tconv_run(node);
  const ar_activation_t act = node->options->transpose_conv.activation;
  if (act != AR_ACT_NONE) {
    const ar_tview_t *o = node->outputs[0];
    ar__activate(o->data, (size_t)ar_k_elements(o), act);
  }
}

/* TFLite TRANSPOSE_CONV (builtin 67), float32, versions 1-5. */
static const ar_kernel_form_t transpose_conv_forms[] = {
  AR_KF(1, 5, FLOAT32, FLOAT32),
};
const ar_kernel_t ar_kernel_transpose_conv = {
  .name = "TRANSPOSE_CONV",
  .prepare = tconv_builtin_prepare,
  .init = tconv_init,
  .eval = tconv_builtin_eval,
  .support = AR_KSUPPORT(transpose_conv_forms, 2, 1),
};

static const ar_kernel_form_t transpose_conv_bias_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
};
const ar_kernel_t ar_kernel_transpose_conv_bias = {
  .name = "Convolution2DTransposeBias",
  .prepare = tconv_prepare,
  .init = tconv_init,
  .eval = tconv_eval,
  .support = AR_KSUPPORT(transpose_conv_bias_forms, 0, 1),
};
