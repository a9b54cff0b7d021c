/* depthwise.c - TFLite DEPTHWISE_CONV_2D, float32 (uint8 / int8: kernels/qdepthwise.c, reached
 * from here after the shared shape checks).
 *
 * Input [N,H,W,C] (NHWC), filter [1,KH,KW,C*M] with depth multiplier M, optional bias [C*M],
 * output [N,OH,OW,C*M]; output channel c*M+m reads input channel c (TFLite's layout). Padding,
 * stride, dilation and the fused activation follow TFLite (SAME: odd pad at the bottom/right).
 *
 * Speed: in NHWC the channels of one pixel are contiguous, so the channel loop is innermost and
 * vectorizes. Output pixels whose taps all fall inside the input (the interior) run a loop with no
 * bounds checks that keeps 4 pixels x 8 channels of accumulators in registers across all taps; 3x3
 * and 5x5 with stride 1 or 2 are specialised so the tap loops unroll. On the top/bottom border rows
 * the same loop runs over the filter rows that fall inside the input. Left/right border pixels
 * (and M > 1) take a checked path that skips the out-of-bounds taps (zero padding). The whole loop nest is compiled for the
 * baseline ISA and for AVX2+FMA and picked at run time; multiplier 1 on AVX-512F CPUs has its own
 * path (below: 16-channel blocks, whole-row register tiles, float16 weights widened per block).
 * Every output is computed from its own taps in the same order whatever rows (and channels) a
 * chunk holds, so the output rows are split by thread count on the node's pool
 * (ar_parallel_for_split): bit-identical for every thread count. On a map of fewer pixels than
 * channels (7x7 and 14x14 layers of 240+ channels) the AVX-512F path splits channel blocks
 * instead, as the expansion conv that wrote the input split its columns (kernels/gemm.c), so that
 * each thread reads what its core wrote; except a 3x3 filter on a map of AR_DW_ROWS_MIN_PIXELS or
 * more (14x14), which splits rows and has the conv before it split rows too (ar_node_t.split_rows,
 * set by the interpreter from ar_kernel_dw_splits_rows): channel halves interleave within every
 * pixel, and both cores then write lines next to each other's, while a row split costs one halo
 * row (hand_landmark_full, per-op mins at 2 threads: conv 14x14x480 + 3x3 depthwise + projection
 * conv 157 -> 134 us).
 */
#include "kernels/ar_kernel_impl.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_parallel.h"
#include "kernels/conv_util.h"
#include "kernels/qwide.h"

/* Multiply-adds below which a run of channel blocks is not split further. */
#define AR_DW_MIN_CHUNK_MACS (64 * 1024)
/* The same for a band of output rows: lower, since a row split follows the rows the producer (a
 * row-split ADD, conv or pool) wrote on each core, and an unsplit one reads the other core's half
 * (face_detection_short_range, 2 threads, medians: 16x16x42 stride 2 from 13.5-13.9 to 6.1-6.3
 * us, 8x8x88 from 9.6-10.3 to 4.6; 1 thread 9.0-9.3). */
#define AR_DW_MIN_ROW_MACS (16 * 1024)

typedef struct {
  int32_t n, h, w, c, mult, oc;   /* input, multiplier, output channels = c * mult */
  int32_t kh, kw, oh, ow;
  int32_t sh, sw, dh, dw, pt, pl;
  int64_t row0, row1;             /* the band of output rows (over N*OH) to compute */
} dw_geom_t;

static void dw_geometry(const ar_node_t *node, dw_geom_t *g) {
  const ar_depthwise_options_t *o = &node->options->depthwise;
  const ar_tview_t *in = node->inputs[0], *f = node->inputs[1];
  g->n = in->dims[0]; g->h = in->dims[1]; g->w = in->dims[2]; g->c = in->dims[3];
  g->kh = f->dims[1]; g->kw = f->dims[2]; g->oc = f->dims[3];
  g->mult = g->c > 0 ? g->oc / g->c : 0;
  g->sh = o->stride_h; g->sw = o->stride_w; g->dh = o->dilation_h; g->dw = o->dilation_w;
  g->oh = ar_compute_padding(o->padding, g->h, g->kh, g->sh, g->dh, &g->pt);
  g->ow = ar_compute_padding(o->padding, g->w, g->kw, g->sw, g->dw, &g->pl);
  const int32_t *fp = node->folded_pad;
  if (fp[0] | fp[1] | fp[2] | fp[3]) {
    /* A folded PAD (VALID only): the output of VALID over the padded size; its zero rows and
     * columns are the taps the loops already skip outside [0, H) x [0, W). */
    int32_t unused;
    g->oh = ar_compute_padding(AR_PADDING_VALID, g->h + fp[0] + fp[1], g->kh, g->sh, g->dh, &unused);
    g->ow = ar_compute_padding(AR_PADDING_VALID, g->w + fp[2] + fp[3], g->kw, g->sw, g->dw, &unused);
    g->pt = fp[0];
    g->pl = fp[2];
  }
  g->row0 = 0;
  g->row1 = (int64_t)g->n * g->oh;
}

static int dw_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  const char *name = "DEPTHWISE_CONV_2D";
  int idx = node->index;
  char s1[96], s2[96];
  /* uint8 / int8 tensors go to kernels/qdepthwise.c after the shared shape checks below. */
  const bool wide = node->n_inputs >= 2 && ar__qw_takes(node);   /* int16x8 / hybrid: qwide.h */
  const bool quant = !wide && node->n_inputs >= 1 && node->inputs[0] &&
                     node->inputs[0]->dtype != AR_DTYPE_FLOAT32;
  /* Fused expansion conv (kernels/fused_ir.c): prepared first, it sizes this node's input. */
  if (node->fused) {
    node->fused->infer_shapes = node->infer_shapes;
    int frc = ar_kernel_conv_2d.prepare(node->fused, msg, msg_bytes);
    node->fused->infer_shapes = false;
    if (frc != 0) return frc;
  }
  int rc = quant ? ar__qdw_check_io(node, msg, msg_bytes)
           : wide ? ar__qw_check_io(node, msg, msg_bytes)
                 : ar__conv_check_io_w(node, name, true, msg, msg_bytes);
  if (rc != 0) return rc;
  const ar_tview_t *in = node->inputs[0], *f = node->inputs[1];
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  const ar_tview_t *out = node->outputs[0];
  const ar_depthwise_options_t *o = &node->options->depthwise;
  if (in->rank != 4 || f->rank != 4 || f->dims[0] != 1)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "input %s must be rank 4 (NHWC) and filter "
                   "%s must be [1,KH,KW,C*M]", idx, name, ar__shape_str(s1, sizeof s1, in),
                   ar__shape_str(s2, sizeof s2, f));
  for (int i = 0; i < 4; i++)
    if (in->dims[i] <= 0 || f->dims[i] <= 0)
      return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "empty input %s or filter %s", idx, name,
                     ar__shape_str(s1, sizeof s1, in), ar__shape_str(s2, sizeof s2, f));
  /* TFLite: filter channels = input channels * depth_multiplier (a 0 multiplier in old files is
   * inferred from the shapes). */
  if (f->dims[3] % in->dims[3] != 0 ||
      (o->depth_multiplier != 0 && (int64_t)o->depth_multiplier * in->dims[3] != f->dims[3]))
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "filter shape %s does not match input "
                   "channels %d with depth_multiplier %d", idx, name,
                   ar__shape_str(s1, sizeof s1, f), (int)in->dims[3], (int)o->depth_multiplier);
  if (bias && (bias->rank != 1 || bias->dims[0] != f->dims[3]))
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "bias shape %s does not match %d output "
                   "channels", idx, name, ar__shape_str(s1, sizeof s1, bias), (int)f->dims[3]);
  if (o->stride_h < 1 || o->stride_w < 1 || o->dilation_h < 1 || o->dilation_w < 1 ||
      (o->padding != AR_PADDING_SAME && o->padding != AR_PADDING_VALID) ||
      !ar__activation_valid(o->activation))
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "invalid options: stride %dx%d, "
                   "dilation %dx%d, padding %d, activation %d", idx, name, (int)o->stride_h,
                   (int)o->stride_w, (int)o->dilation_h, (int)o->dilation_w, (int)o->padding,
                   (int)o->activation);
  rc = ar__check_window(node, f->dims[1], f->dims[2], o->stride_h, o->stride_w, o->dilation_h, o->dilation_w, msg,
                        msg_bytes);
  if (rc != 0) return rc;
  dw_geom_t g;
  dw_geometry(node, &g);
  if (g.oh <= 0 || g.ow <= 0)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "filter %s is larger than input %s under "
                   "VALID padding", idx, name, ar__shape_str(s1, sizeof s1, f),
                   ar__shape_str(s2, sizeof s2, in));
  int32_t want[4] = {g.n, g.oh, g.ow, g.oc};
  if (node->infer_shapes) ar_k_set_output_shape(node, 0, 4, want);
  if (out->rank != 4 || memcmp(out->dims, want, sizeof want) != 0)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "output shape %s, expected [%d,%d,%d,%d]",
                   idx, name, ar__shape_str(s1, sizeof s1, out), (int)want[0], (int)want[1],
                   (int)want[2], (int)want[3]);
  /* Float16 filter / bias (read as stored, ar__depthwise_reads_f16): the AVX-512F path widens
   * each 16-channel block's taps as it lays them out; the others widen the whole filter and bias
   * into scratch at each eval (a few KB). */
  const size_t taps = (size_t)g.kh * g.kw;
  node->scratch_bytes = 0;
  if (!quant && (f->dtype == AR_DTYPE_FLOAT16 || (bias && bias->dtype == AR_DTYPE_FLOAT16)))
    node->scratch_bytes = (taps + 1) * (size_t)g.oc * sizeof(float);
  node->state_bytes = 0;
  if (quant) return ar__qdw_prepare(node, msg, msg_bytes);
  if (wide) return ar__qw_prepare(node, msg, msg_bytes);
  if (node->fused) return ar__fused_ir_prepare(node, msg, msg_bytes);
  return 0;
}

uint64_t ar__dw_scratch_bytes(const ar_node_t *node) {
  const ar_tview_t *f = node->inputs[1], *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  if (f->dtype != AR_DTYPE_FLOAT16 && !(bias && bias->dtype == AR_DTYPE_FLOAT16)) return 0;
  return ((uint64_t)f->dims[1] * (uint64_t)f->dims[2] + 1) * (uint64_t)f->dims[3] * sizeof(float);
}

bool ar__depthwise_reads_f16(const ar_node_t *node, int32_t input) {
  return ar__conv_reads_f16(node, input);
}

static void dw_init(ar_node_t *node) {
  if (ar__qw_takes(node)) ar__qw_init(node);
  else if (node->inputs[0]->dtype != AR_DTYPE_FLOAT32) ar__qdw_init(node);
}

/* Unaligned float vectors (GCC vector extension): 8 lanes become one ymm register in the AVX2
 * clone and two xmm registers in the baseline build. may_alias: they read float arrays. */
typedef float dw_v8f __attribute__((vector_size(32), aligned(4), may_alias));
typedef float dw_v4f __attribute__((vector_size(16), aligned(4), may_alias));

/* One output pixel with bounds checks: any multiplier, taps outside the input skipped (TFLite's
 * zero padding). Writes bias + sum, unclamped. */
static AR_ALWAYS_INLINE void dw_pixel_checked(const dw_geom_t *g, const float *in, const float *wt,
                                              const float *bias, float *o, int32_t b, int32_t oy,
                                              int32_t ox) {
  const int32_t oc = g->oc, c = g->c, mult = g->mult;
  if (bias) memcpy(o, bias, (size_t)oc * sizeof(float));
  else memset(o, 0, (size_t)oc * sizeof(float));
  const int32_t iy0 = oy * g->sh - g->pt, ix0 = ox * g->sw - g->pl;
  for (int32_t ky = 0; ky < g->kh; ky++) {
    const int32_t iy = iy0 + ky * g->dh;
    if (iy < 0 || iy >= g->h) continue;
    for (int32_t kx = 0; kx < g->kw; kx++) {
      const int32_t ix = ix0 + kx * g->dw;
      if (ix < 0 || ix >= g->w) continue;
      const float *ip = in + (((size_t)b * g->h + iy) * g->w + ix) * (size_t)c;
      const float *wp = wt + ((size_t)ky * g->kw + kx) * (size_t)oc;
      if (mult == 1) {
        for (int32_t j = 0; j < oc; j++) o[j] += ip[j] * wp[j];
      } else {
        for (int32_t ci = 0; ci < c; ci++)
          for (int32_t m = 0; m < mult; m++)
            o[ci * mult + m] += ip[ci] * wp[ci * mult + m];
      }
    }
  }
}

/* `npix` consecutive interior output pixels of one row, multiplier 1, unclamped. `ip0` points at
 * input [b, iy0, ix0, 0] of the first pixel; every tap is inside the input. Four pixels at a time
 * share each weight vector load; KH, KW, SW, DH, DW are compile-time constants in the specialised
 * calls below, so the tap loops unroll and the accumulators stay in registers. */
static AR_ALWAYS_INLINE void dw_interior(const float *ip0, size_t row_stride, const float *wt,
                                         const float *bias, float *o, int32_t npix, int32_t C,
                                         int32_t KH, int32_t KW, int32_t SW, int32_t DH,
                                         int32_t DW) {
  const size_t xs = (size_t)SW * C;   /* input step between neighbouring output pixels */
  int32_t p = 0;
  for (; p + 4 <= npix; p += 4) {
    const float *ip = ip0 + (size_t)p * xs;
    float *op = o + (size_t)p * C;
    int32_t c = 0;
    for (; c + 8 <= C; c += 8) {
      dw_v8f a0 = bias ? *(const dw_v8f *)(bias + c) : (dw_v8f){0};
      dw_v8f a1 = a0, a2 = a0, a3 = a0;
#pragma GCC unroll 5
      for (int32_t ky = 0; ky < KH; ky++) {
#pragma GCC unroll 5
        for (int32_t kx = 0; kx < KW; kx++) {
          const float *q = ip + (size_t)ky * DH * row_stride + (size_t)kx * DW * C + c;
          const dw_v8f w = *(const dw_v8f *)(wt + (size_t)(ky * KW + kx) * C + c);
          a0 += *(const dw_v8f *)q * w;
          a1 += *(const dw_v8f *)(q + xs) * w;
          a2 += *(const dw_v8f *)(q + 2 * xs) * w;
          a3 += *(const dw_v8f *)(q + 3 * xs) * w;
        }
      }
      *(dw_v8f *)(op + c) = a0;
      *(dw_v8f *)(op + C + c) = a1;
      *(dw_v8f *)(op + 2 * C + c) = a2;
      *(dw_v8f *)(op + 3 * C + c) = a3;
    }
    for (; c + 4 <= C; c += 4) {
      dw_v4f a0 = bias ? *(const dw_v4f *)(bias + c) : (dw_v4f){0};
      dw_v4f a1 = a0, a2 = a0, a3 = a0;
#pragma GCC unroll 5
      for (int32_t ky = 0; ky < KH; ky++) {
#pragma GCC unroll 5
        for (int32_t kx = 0; kx < KW; kx++) {
          const float *q = ip + (size_t)ky * DH * row_stride + (size_t)kx * DW * C + c;
          const dw_v4f w = *(const dw_v4f *)(wt + (size_t)(ky * KW + kx) * C + c);
          a0 += *(const dw_v4f *)q * w;
          a1 += *(const dw_v4f *)(q + xs) * w;
          a2 += *(const dw_v4f *)(q + 2 * xs) * w;
          a3 += *(const dw_v4f *)(q + 3 * xs) * w;
        }
      }
      *(dw_v4f *)(op + c) = a0;
      *(dw_v4f *)(op + C + c) = a1;
      *(dw_v4f *)(op + 2 * C + c) = a2;
      *(dw_v4f *)(op + 3 * C + c) = a3;
    }
    for (; c < C; c++)
      for (int32_t k = 0; k < 4; k++) {
        float acc = bias ? bias[c] : 0.0f;
        for (int32_t ky = 0; ky < KH; ky++)
          for (int32_t kx = 0; kx < KW; kx++)
            acc += ip[k * xs + (size_t)ky * DH * row_stride + (size_t)kx * DW * C + c] *
                   wt[(size_t)(ky * KW + kx) * C + c];
        op[(size_t)k * C + c] = acc;
      }
  }
  for (; p < npix; p++) {
    const float *ip = ip0 + (size_t)p * xs;
    float *op = o + (size_t)p * C;
    int32_t c = 0;
    for (; c + 8 <= C; c += 8) {
      dw_v8f a0 = bias ? *(const dw_v8f *)(bias + c) : (dw_v8f){0};
#pragma GCC unroll 5
      for (int32_t ky = 0; ky < KH; ky++) {
#pragma GCC unroll 5
        for (int32_t kx = 0; kx < KW; kx++)
          a0 += *(const dw_v8f *)(ip + (size_t)ky * DH * row_stride + (size_t)kx * DW * C + c) *
                *(const dw_v8f *)(wt + (size_t)(ky * KW + kx) * C + c);
      }
      *(dw_v8f *)(op + c) = a0;
    }
    for (; c < C; c++) {
      float acc = bias ? bias[c] : 0.0f;
      for (int32_t ky = 0; ky < KH; ky++)
        for (int32_t kx = 0; kx < KW; kx++)
          acc += ip[(size_t)ky * DH * row_stride + (size_t)kx * DW * C + c] *
                 wt[(size_t)(ky * KW + kx) * C + c];
      op[c] = acc;
    }
  }
}

#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>

/* ---- AVX-512F path (multiplier 1, filters up to DW512_MAX_TAPS taps) ----
 *
 * Channels go in 16-channel blocks (a lane mask for the channel tail, so any C). The taps (and
 * bias) of a group of blocks are first laid out tap-major in a 64-byte aligned stack array
 * (widened from float16 there when the weights are stored as float16: the at-use DEQUANTIZE is
 * elided), then each output row of a band runs tile by tile over the group's blocks. A tile is P
 * output pixels (8, else 4, else 1) of one block in registers: with compile-time KW and SW
 * (dilation 1) it slides along the input row, each input column of a filter row loaded once for
 * every (pixel, tap) pair that reads it. Tiles cover the whole row, the last one moved back to
 * end at OW; border tiles skip the input columns outside the image (TFLite's zero padding), so
 * no pixel takes a one-at-a-time path; top/bottom rows use the filter rows inside the input.
 * Other widths, strides and dilations run a run-time tile (4 pixels, one load per FMA) on the
 * interior and one-pixel register loops on the borders. The clamp of RELU/RELU6/RELU_N1_TO_1 is
 * applied in registers before the store.
 *
 * Summation order: each output adds its inside taps in (ky, kx) order onto the bias, one FMA per
 * tap, exactly as the AVX2 clone of dw_body does (dw_interior / dw_pixel_checked compile to FMA
 * there), so the AVX2 and AVX-512F paths give identical bits, and every output is computed the
 * same way whatever the band / block split: any partition over the pool is bit-identical. */
#define DW512_INLINE AR_TARGET_AVX512 static inline __attribute__((always_inline))
#define DW512_PMAX 8
#define DW512_MAX_TAPS 49
/* Laid-out taps of a group of channel blocks (16 KB of stack), at most DW512_GROUP_MAX blocks. */
#define DW512_WB_FLOATS 4096
#define DW512_GROUP_MAX 32
/* Operators with fewer output rows than this split each row's channels too. */
#define DW512_SPLIT_ROWS 16
/* Output rows per pass of a group of 4 channel blocks (their input rows stay in L1/L2). */
#define DW512_BAND 8

/* Lanes [0, n) of a 16-lane mask (n in 1..16). */
DW512_INLINE __mmask16 dw512_mask(int32_t n) {
  return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

/* `taps` rows of 16 floats (tap-major, lanes >= n zero) from channels [c, c+n) of a [taps, C]
 * weight array stored as float32 or float16 (any alignment). */
DW512_INLINE void dw512_load_block(const void *w, bool f16, int32_t C, int32_t c, int32_t n,
                                   int32_t taps, float *wb) {
  const __mmask16 m = dw512_mask(n);
  for (int32_t t = 0; t < taps; t++) {
    __m512 v;
    if (!f16) {
      v = _mm512_maskz_loadu_ps(m, (const float *)w + (size_t)t * C + c);
    } else {
      const uint16_t *h = (const uint16_t *)w + (size_t)t * C + c;
      __m256i x;
      if (n == 16) {
        x = _mm256_loadu_si256((const __m256i *)h);
      } else {
        uint16_t tmp[16] = {0};
        memcpy(tmp, h, (size_t)n * sizeof(uint16_t));
        x = _mm256_loadu_si256((const __m256i *)tmp);
      }
      v = _mm512_cvtph_ps(x);   /* exact, the same values as ar_fp16_to_fp32 */
    }
    _mm512_store_ps(wb + (size_t)t * 16, v);
  }
}

DW512_INLINE void dw512_store(float *o, __mmask16 m, __m512 v, bool clamp, __m512 lo, __m512 hi) {
  /* max(lo, v) then min(hi, .): v < lo ? lo : v, then > hi ? hi : ., as dw_clamp_row (NaN kept). */
  if (clamp) v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
  _mm512_mask_storeu_ps(o, m, v);
}

/* P consecutive pixels of a row, compile-time KW, SW (dilation 1; KH, DH at run time): the tile
 * slides along the input row, each input column of a filter row loaded once and used by every
 * (pixel, tap) pair that reads it. row: input row of the first filter row used, at the block's
 * first channel; ix0: input column of the first pixel's first tap (may be < 0); with CHK the
 * columns outside [0, W) are skipped (TFLite's zero padding), otherwise all are inside. wb:
 * tap-major block weights of the first filter row used. */
DW512_INLINE void dw512_tile(const float *row, size_t rs, int32_t ix0, int32_t W, const float *wb,
                             __m512 b, float *op, int32_t C, __mmask16 m, int32_t KH,
                             const int32_t KW, const int32_t SW, const int32_t DH, const int P,
                             const bool CHK, bool clamp, __m512 lo, __m512 hi) {
  __m512 acc[DW512_PMAX];
#pragma GCC unroll 8
  for (int p = 0; p < P; p++) acc[p] = b;
  const int ncol = SW * (P - 1) + KW;
  const int32_t jlo = CHK && ix0 < 0 ? -ix0 : 0, jhi = CHK && W - ix0 < ncol ? W - ix0 : ncol;
  for (int32_t ky = 0; ky < KH; ky++) {
    const float *r = row + (size_t)ky * DH * rs;
    const float *wr = wb + (size_t)ky * KW * 16;
    __m512 w[7];
#pragma GCC unroll 7
    for (int kx = 0; kx < KW; kx++) w[kx] = _mm512_load_ps(wr + (size_t)kx * 16);
#pragma GCC unroll 32
    for (int j = 0; j < ncol; j++) {
      if (CHK && (j < jlo || j >= jhi)) continue;
      const __m512 x = _mm512_maskz_loadu_ps(m, r + (ptrdiff_t)(ix0 + j) * C);
#pragma GCC unroll 7
      for (int kx = 0; kx < KW; kx++) {
        const int d = j - kx;
        if (d >= 0 && d % SW == 0 && d / SW < P) acc[d / SW] = _mm512_fmadd_ps(x, w[kx], acc[d / SW]);
      }
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < P; p++) dw512_store(op + (size_t)p * C, m, acc[p], clamp, lo, hi);
}

/* P interior pixels, geometry at run time: taps in (ky, kx) order, one input load per FMA. */
DW512_INLINE void dw512_tile_rt(const float *ip, size_t rs, const float *wb, __m512 b, float *op,
                                int32_t C, __mmask16 m, int32_t KH, int32_t KW, int32_t SW,
                                int32_t DH, int32_t DW, const int P, bool clamp, __m512 lo,
                                __m512 hi) {
  __m512 acc[4];
#pragma GCC unroll 4
  for (int p = 0; p < P; p++) acc[p] = b;
  for (int32_t ky = 0; ky < KH; ky++)
    for (int32_t kx = 0; kx < KW; kx++) {
      const float *q = ip + (size_t)ky * DH * rs + (size_t)kx * DW * C;
      const __m512 w = _mm512_load_ps(wb + (size_t)(ky * KW + kx) * 16);
#pragma GCC unroll 4
      for (int p = 0; p < P; p++)
        acc[p] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + (size_t)p * SW * C), w, acc[p]);
    }
#pragma GCC unroll 4
  for (int p = 0; p < P; p++) dw512_store(op + (size_t)p * C, m, acc[p], clamp, lo, hi);
}

/* One output pixel over the taps inside the input (filter rows [ky_lo, ky_hi), columns found
 * here). inb: image b's input at the block's first channel; wb: the whole block's taps. */
DW512_INLINE void dw512_pixel(const dw_geom_t *g, const float *inb, const float *wb, __m512 b,
                              float *op, __mmask16 m, int32_t iy0, int32_t ky_lo, int32_t ky_hi,
                              int32_t ox, bool clamp, __m512 lo, __m512 hi) {
  const int32_t C = g->c, ix0 = ox * g->sw - g->pl;
  int32_t kx_lo = 0, kx_hi = g->kw;
  while (kx_lo < g->kw && ix0 + kx_lo * g->dw < 0) kx_lo++;
  while (kx_hi > kx_lo && ix0 + (kx_hi - 1) * g->dw >= g->w) kx_hi--;
  __m512 acc = b;
  for (int32_t ky = ky_lo; ky < ky_hi; ky++) {
    const float *row = inb + (size_t)(iy0 + ky * g->dh) * g->w * C;
    for (int32_t kx = kx_lo; kx < kx_hi; kx++)
      acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, row + (size_t)(ix0 + kx * g->dw) * C),
                            _mm512_load_ps(wb + (size_t)(ky * g->kw + kx) * 16), acc);
  }
  dw512_store(op, m, acc, clamp, lo, hi);
}

#define DW512_TILES_RT(P_)                                                                     \
  for (; p + (P_) <= np; p += (P_))                                                            \
    dw512_tile_rt(ip0 + (size_t)p * g->sw * C, rs, w0, bv, o + (size_t)p * C, C, m, kh, g->kw, \
                  g->sw, g->dh, g->dw, P_, clamp, lo, hi);

/* The tile of P (8 when the row has 8 pixels, else 4, else 1) pixels at x0 of one output row,
 * checked when some of its columns fall outside the input. */
DW512_INLINE void dw512_tile_at(const dw_geom_t *g, const float *row, size_t rs, int32_t x0,
                                const float *w0, __m512 bv, float *orow, __mmask16 m, int32_t kh,
                                const int32_t KW, const int32_t SW, bool clamp, __m512 lo,
                                __m512 hi) {
  const int32_t C = g->c, ix0 = x0 * SW - g->pl;
  if (g->ow >= 8) {
    if (ix0 >= 0 && ix0 + SW * 7 + KW <= g->w)
      dw512_tile(row, rs, ix0, g->w, w0, bv, orow + (size_t)x0 * C, C, m, kh, KW, SW, g->dh, 8, false, clamp, lo, hi);
    else
      dw512_tile(row, rs, ix0, g->w, w0, bv, orow + (size_t)x0 * C, C, m, kh, KW, SW, g->dh, 8, true, clamp, lo, hi);
  } else if (g->ow >= 4) {
    dw512_tile(row, rs, ix0, g->w, w0, bv, orow + (size_t)x0 * C, C, m, kh, KW, SW, g->dh, 4, true, clamp, lo, hi);
  } else {
    dw512_tile(row, rs, ix0, g->w, w0, bv, orow + (size_t)x0 * C, C, m, kh, KW, SW, g->dh, 1, true, clamp, lo, hi);
  }
}

/* Filter rows [*ky_lo, *ky_hi) of output row oy fall inside the input; returns iy0. */
static AR_ALWAYS_INLINE int32_t dw_rows_inside(const dw_geom_t *g, int32_t oy, int32_t *ky_lo,
                                               int32_t *ky_hi) {
  const int32_t iy0 = oy * g->sh - g->pt;
  int32_t lo = 0, hi = g->kh;
  while (lo < g->kh && iy0 + lo * g->dh < 0) lo++;
  while (hi > lo && iy0 + (hi - 1) * g->dh >= g->h) hi--;
  *ky_lo = lo;
  *ky_hi = hi;
  return iy0;
}

/* One output row of one channel block with the run-time geometry (KW == 0 below): border pixels
 * one at a time, interior pixels in tiles of 4. */
DW512_INLINE void dw512_row_rt(const dw_geom_t *g, const float *inb, const float *wb, __m512 bv,
                               float *orow, __mmask16 m, int32_t oy, int32_t ox_lo, int32_t ox_hi,
                               bool clamp, __m512 lo, __m512 hi) {
  const int32_t C = g->c;
  const size_t rs = (size_t)g->w * C;
  int32_t ky_lo, ky_hi;
  const int32_t iy0 = dw_rows_inside(g, oy, &ky_lo, &ky_hi);
  if (ky_hi <= ky_lo || ox_hi <= ox_lo) {
    for (int32_t ox = 0; ox < g->ow; ox++)
      dw512_pixel(g, inb, wb, bv, orow + (size_t)ox * C, m, iy0, ky_lo, ky_hi, ox, clamp, lo, hi);
    return;
  }
  for (int32_t ox = 0; ox < ox_lo; ox++)
    dw512_pixel(g, inb, wb, bv, orow + (size_t)ox * C, m, iy0, ky_lo, ky_hi, ox, clamp, lo, hi);
  const float *ip0 = inb + ((size_t)(iy0 + ky_lo * g->dh) * g->w + (size_t)(ox_lo * g->sw - g->pl)) * C;
  const float *w0 = wb + (size_t)ky_lo * g->kw * 16;
  const int32_t kh = ky_hi - ky_lo, np = ox_hi - ox_lo;
  float *o = orow + (size_t)ox_lo * C;
  int32_t p = 0;
  DW512_TILES_RT(4)
  DW512_TILES_RT(1)
  for (int32_t ox = ox_hi; ox < g->ow; ox++)
    dw512_pixel(g, inb, wb, bv, orow + (size_t)ox * C, m, iy0, ky_lo, ky_hi, ox, clamp, lo, hi);
}

/* Channel blocks [cb0, cb1) x output rows [r0, r1) of N*OH. KW/SW: the compile-time filter width
 * and horizontal stride of the sliding tile (dilation 1), or 0 for the run-time tile. Blocks go
 * in groups whose laid-out taps fit DW512_WB_FLOATS (28 blocks of 3x3, 10 of 5x5), through bands
 * of DW512_BAND rows; each row runs tile by tile over all the group's blocks, which reads the
 * input rows front to back. The run-time tile goes block by block. */
DW512_INLINE void dw512_chunk_t(const dw_geom_t *g, const float *in, const void *wt,
                                const void *bias, bool f16, float *out, bool clamp, float flo,
                                float fhi, int64_t r0, int64_t r1, int32_t cb0, int32_t cb1,
                                const int32_t KW, const int32_t SW) {
  const int32_t C = g->c, taps = g->kh * g->kw;
  const size_t rs = (size_t)g->w * C;
  const __m512 lo = _mm512_set1_ps(flo), hi = _mm512_set1_ps(fhi);
  /* Interior columns: ox*sw - pl >= 0 and ox*sw - pl + (kw-1)*dw <= w-1. */
  int32_t ox_lo = (g->pl + g->sw - 1) / g->sw;
  const int32_t last = g->w - 1 - (g->kw - 1) * g->dw + g->pl;
  int32_t ox_hi = last >= 0 ? last / g->sw + 1 : 0;
  if (ox_hi > g->ow) ox_hi = g->ow;
  if (ox_lo > ox_hi) ox_lo = ox_hi;
  const int32_t P = g->ow >= 8 ? 8 : g->ow >= 4 ? 4 : 1;
  const bool by_block = KW == 0;
  const int32_t gmax = AR_MIN(DW512_GROUP_MAX, DW512_WB_FLOATS / (taps * 16));
  float wbuf[DW512_WB_FLOATS] __attribute__((aligned(64)));
  __m512 bv[DW512_GROUP_MAX];
  __mmask16 mk[DW512_GROUP_MAX];
  for (int64_t rb = r0; rb < r1; rb += DW512_BAND)
  for (int32_t sg = cb0; sg < cb1; sg += gmax) {
    const int32_t nb = AR_MIN(gmax, cb1 - sg);
    for (int32_t i = 0; i < nb; i++) {
      const int32_t c = (sg + i) * 16, n = C - c < 16 ? C - c : 16;
      mk[i] = dw512_mask(n);
      dw512_load_block(wt, f16, C, c, n, taps, wbuf + (size_t)i * taps * 16);
      bv[i] = _mm512_setzero_ps();
      if (bias) {
        float bb[16] __attribute__((aligned(64)));
        dw512_load_block(bias, f16, C, c, n, 1, bb);
        bv[i] = _mm512_load_ps(bb);
      }
    }
    for (int32_t i = 0; i < (by_block ? nb : 1); i++)
      for (int64_t r = rb; r < AR_MIN(r1, rb + DW512_BAND); r++) {
        const int32_t b = (int32_t)(r / g->oh), oy = (int32_t)(r % g->oh);
        const float *inb = in + (size_t)b * g->h * rs;
        float *orow = out + (size_t)r * g->ow * C;
        if (KW == 0) {
          const int32_t c = (sg + i) * 16;
          dw512_row_rt(g, inb + c, wbuf + (size_t)i * taps * 16, bv[i], orow + c, mk[i], oy, ox_lo, ox_hi,
                       clamp, lo, hi);
          continue;
        }
        int32_t ky_lo, ky_hi;
        const int32_t iy0 = dw_rows_inside(g, oy, &ky_lo, &ky_hi);
        const int32_t i0 = by_block ? i : 0, i1 = by_block ? i + 1 : nb;
        if (ky_hi <= ky_lo) {   /* no filter row inside the input: bias only */
          for (int32_t k = i0; k < i1; k++)
            for (int32_t ox = 0; ox < g->ow; ox++)
              dw512_store(orow + (size_t)ox * C + (sg + k) * 16, mk[k], bv[k], clamp, lo, hi);
          continue;
        }
        /* Tiles of P pixels over the whole row, the last one moved back to end at ow (it
         * recomputes a few pixels, with the same bits). */
        const float *row = inb + (size_t)(iy0 + ky_lo * g->dh) * rs;
        const int32_t kh = ky_hi - ky_lo;
        for (int32_t ox = 0; ox < g->ow; ox += P) {
          const int32_t x0 = ox + P <= g->ow ? ox : g->ow - P;
          for (int32_t k = i0; k < i1; k++) {
            const int32_t c = (sg + k) * 16;
            dw512_tile_at(g, row + c, rs, x0, wbuf + ((size_t)k * taps + (size_t)ky_lo * KW) * 16, bv[k], orow + c,
                          mk[k], kh, KW, SW, clamp, lo, hi);
          }
        }
      }
  }
}
#undef DW512_TILES_RT

/* dw512_chunk_t with the filter width and stride of the shipped models compiled in. Not inlined:
 * the baseline and AVX2 bodies call nothing compiled for AVX-512. */
AR_TARGET_AVX512 __attribute__((noinline)) static void
dw512_chunk(const dw_geom_t *g, const float *in, const void *wt, const void *bias, bool f16,
            float *out, bool clamp, float lo, float hi, int64_t r0, int64_t r1, int32_t cb0,
            int32_t cb1) {
  const bool d1 = g->dw == 1;
  if (d1 && g->kw == 3 && g->sw == 1)
    dw512_chunk_t(g, in, wt, bias, f16, out, clamp, lo, hi, r0, r1, cb0, cb1, 3, 1);
  else if (d1 && g->kw == 3 && g->sw == 2)
    dw512_chunk_t(g, in, wt, bias, f16, out, clamp, lo, hi, r0, r1, cb0, cb1, 3, 2);
  else if (d1 && g->kw == 5 && g->sw == 1)
    dw512_chunk_t(g, in, wt, bias, f16, out, clamp, lo, hi, r0, r1, cb0, cb1, 5, 1);
  else if (d1 && g->kw == 5 && g->sw == 2)
    dw512_chunk_t(g, in, wt, bias, f16, out, clamp, lo, hi, r0, r1, cb0, cb1, 5, 2);
  else
    dw512_chunk_t(g, in, wt, bias, f16, out, clamp, lo, hi, r0, r1, cb0, cb1, 0, 0);
}
#endif

#if defined(__aarch64__)
#include <arm_neon.h>
/* aarch64, float level AR_ISA_NEON: the interior of a whole K x K filter (K = 3 or 5, stride SW,
 * multiplier 1, dilation 1). dw_interior's GCC vectors compile there to about 2.7 instructions per
 * multiply-add (the 4-pixel x 8-channel tile of 5x5 taps spills addresses and accumulators: qemu
 * instruction profile of face_detection_short_range); here each block of 4 channels keeps its
 * K*K weight vectors in registers across the run of pixels and P pixels (4 for 3x3, 2 for 5x5:
 * K*K + 2P + P of the 32 vector registers) take one load and one fmla per tap. Each output is
 * the bias, then its taps in (ky, kx) order with one fused multiply-add each: dw_interior's
 * values (GCC contracts its `a += x * w` into fmla), so the portable level gives the same bits. */
static AR_ALWAYS_INLINE void dw_interior_neon(const float *ip0, size_t row_stride, const float *wt,
                                              const float *bias, float *o, int32_t npix, int32_t C,
                                              const int K, const int SW) {
  const int P = K == 3 ? 4 : 2;
  const size_t xs = (size_t)SW * C;
  int32_t c = 0;
  for (; c + 4 <= C; c += 4) {
    float32x4_t w[25];
#pragma GCC unroll 25
    for (int t = 0; t < K * K; t++) w[t] = vld1q_f32(wt + (size_t)t * C + c);
    const float32x4_t bv = bias ? vld1q_f32(bias + c) : vdupq_n_f32(0.0f);
    const float *ip = ip0 + c;
    float *op = o + c;
    int32_t p = 0;
    for (; p + P <= npix; p += P, ip += P * xs, op += (size_t)P * C) {
      float32x4_t acc[4];
#pragma GCC unroll 4
      for (int q = 0; q < P; q++) acc[q] = bv;
#pragma GCC unroll 5
      for (int ky = 0; ky < K; ky++) {
        const float *r = ip + (size_t)ky * row_stride;
#pragma GCC unroll 5
        for (int kx = 0; kx < K; kx++)
#pragma GCC unroll 4
          for (int q = 0; q < P; q++)
            acc[q] = vfmaq_f32(acc[q], vld1q_f32(r + (size_t)q * xs + (size_t)kx * C), w[ky * K + kx]);
      }
#pragma GCC unroll 4
      for (int q = 0; q < P; q++) vst1q_f32(op + (size_t)q * C, acc[q]);
    }
    for (; p < npix; p++, ip += xs, op += C) {
      float32x4_t acc = bv;
#pragma GCC unroll 5
      for (int ky = 0; ky < K; ky++)
#pragma GCC unroll 5
        for (int kx = 0; kx < K; kx++)
          acc = vfmaq_f32(acc, vld1q_f32(ip + (size_t)ky * row_stride + (size_t)kx * C), w[ky * K + kx]);
      vst1q_f32(op, acc);
    }
  }
  for (; c < C; c++)   /* channels past a multiple of 4 */
    for (int32_t p = 0; p < npix; p++) {
      const float *ip = ip0 + (size_t)p * xs + c;
      float acc = bias ? bias[c] : 0.0f;
      for (int ky = 0; ky < K; ky++)
        for (int kx = 0; kx < K; kx++)
          acc = __builtin_fmaf(ip[(size_t)ky * row_stride + (size_t)kx * C], wt[(size_t)(ky * K + kx) * C + c], acc);
      o[(size_t)p * C + c] = acc;
    }
}
#endif

static AR_ALWAYS_INLINE void dw_clamp_row(float *x, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++) {
    float v = x[i] < lo ? lo : x[i];
    x[i] = v > hi ? hi : v;
  }
}

static AR_ALWAYS_INLINE void dw_body(const dw_geom_t *g, const float *in, const float *wt,
                                     const float *bias, float *out, bool clamp, float lo,
                                     float hi) {
  const int32_t C = g->oc;
  const size_t row_stride = (size_t)g->w * g->c;
  /* Interior columns: ox*sw - pl >= 0 and ox*sw - pl + (kw-1)*dw <= w-1. */
  int32_t ox_lo = (g->pl + g->sw - 1) / g->sw;
  int32_t last = g->w - 1 - (g->kw - 1) * g->dw + g->pl;
  int32_t ox_hi = last >= 0 ? last / g->sw + 1 : 0;
  if (ox_hi > g->ow) ox_hi = g->ow;
  if (ox_lo > ox_hi) ox_lo = ox_hi;
  const bool fast = g->mult == 1 && ox_hi > ox_lo;
  /* Which specialised interior loop applies (the vertical stride only moves iy0, so it does not
   * matter here): 1 = 3x3/s1, 2 = 3x3/s2, 3 = 5x5/s1, 4 = 5x5/s2, 0 = generic. */
  int spec = 0;
  if (g->dh == 1 && g->dw == 1 && g->kh == g->kw && (g->kh == 3 || g->kh == 5) &&
      (g->sw == 1 || g->sw == 2))
    spec = (g->kh == 3 ? 1 : 3) + (g->sw == 2);
#if defined(__aarch64__)
  const bool neon = ar__f32_isa() >= AR_ISA_NEON;
#endif
  /* Rows [row0, row1) of N*OH: image b from row y_begin(b) to y_end(b). */
  const int32_t b0 = (int32_t)(g->row0 / g->oh), b1 = (int32_t)((g->row1 + g->oh - 1) / g->oh);
  for (int32_t b = b0; b < b1; b++)
    for (int32_t oy = b == b0 ? (int32_t)(g->row0 % g->oh) : 0,
                 oy_end = (int32_t)AR_MIN((int64_t)g->oh, g->row1 - (int64_t)b * g->oh);
         oy < oy_end; oy++) {
      float *orow = out + (((size_t)b * g->oh + oy) * g->ow) * C;
      const int32_t iy0 = oy * g->sh - g->pt;
      /* Filter rows [ky_lo, ky_hi) fall inside the input; on the top and bottom border rows the
       * interior columns still run the vector loop, over those filter rows only. */
      int32_t ky_lo = 0, ky_hi = g->kh;
      while (ky_lo < g->kh && iy0 + ky_lo * g->dh < 0) ky_lo++;
      while (ky_hi > ky_lo && iy0 + (ky_hi - 1) * g->dh >= g->h) ky_hi--;
      if (!fast || ky_hi <= ky_lo) {
        for (int32_t ox = 0; ox < g->ow; ox++)
          dw_pixel_checked(g, in, wt, bias, orow + (size_t)ox * C, b, oy, ox);
      } else {
        for (int32_t ox = 0; ox < ox_lo; ox++)
          dw_pixel_checked(g, in, wt, bias, orow + (size_t)ox * C, b, oy, ox);
        const int32_t iy = iy0 + ky_lo * g->dh;
        const float *ip0 =
            in + (((size_t)b * g->h + iy) * g->w + (size_t)(ox_lo * g->sw - g->pl)) * C;
        const float *w0 = wt + (size_t)ky_lo * g->kw * C;
        const int32_t kh = ky_hi - ky_lo;
        float *o = orow + (size_t)ox_lo * C;
        const int32_t np = ox_hi - ox_lo;
        const bool full = kh == g->kh;
        int sp = spec;
#if defined(__aarch64__)
        if (neon && full && spec) {
          if (spec == 1) dw_interior_neon(ip0, row_stride, w0, bias, o, np, C, 3, 1);
          else if (spec == 2) dw_interior_neon(ip0, row_stride, w0, bias, o, np, C, 3, 2);
          else if (spec == 3) dw_interior_neon(ip0, row_stride, w0, bias, o, np, C, 5, 1);
          else dw_interior_neon(ip0, row_stride, w0, bias, o, np, C, 5, 2);
          sp = -1;   /* done */
        }
#endif
        switch (sp) {
        case -1:
          break;
        case 1:
          if (full) dw_interior(ip0, row_stride, w0, bias, o, np, C, 3, 3, 1, 1, 1);
          else dw_interior(ip0, row_stride, w0, bias, o, np, C, kh, 3, 1, 1, 1);
          break;
        case 2:
          if (full) dw_interior(ip0, row_stride, w0, bias, o, np, C, 3, 3, 2, 1, 1);
          else dw_interior(ip0, row_stride, w0, bias, o, np, C, kh, 3, 2, 1, 1);
          break;
        case 3:
          if (full) dw_interior(ip0, row_stride, w0, bias, o, np, C, 5, 5, 1, 1, 1);
          else dw_interior(ip0, row_stride, w0, bias, o, np, C, kh, 5, 1, 1, 1);
          break;
        case 4:
          if (full) dw_interior(ip0, row_stride, w0, bias, o, np, C, 5, 5, 2, 1, 1);
          else dw_interior(ip0, row_stride, w0, bias, o, np, C, kh, 5, 2, 1, 1);
          break;
        default:
          dw_interior(ip0, row_stride, w0, bias, o, np, C, kh, g->kw, g->sw, g->dh, g->dw);
          break;
        }
        for (int32_t ox = ox_hi; ox < g->ow; ox++)
          dw_pixel_checked(g, in, wt, bias, orow + (size_t)ox * C, b, oy, ox);
      }
      /* Clamp while the row is still in cache. */
      if (clamp) dw_clamp_row(orow, (size_t)g->ow * C, lo, hi);
    }
}

static void dw_run_base(const dw_geom_t *g, const float *in, const float *wt, const float *bias,
                        float *out, bool clamp, float lo, float hi) {
  dw_body(g, in, wt, bias, out, clamp, lo, hi);
}

#if AR_HAVE_AVX2_CLONE
AR_TARGET_AVX2 static void dw_run_avx2(const dw_geom_t *g, const float *in, const float *wt,
                                       const float *bias, float *out, bool clamp, float lo,
                                       float hi) {
  dw_body(g, in, wt, bias, out, clamp, lo, hi);
}
AR_TARGET_AVX512 static void dw_run_avx512(const dw_geom_t *g, const float *in, const float *wt,
                                           const float *bias, float *out, bool clamp, float lo,
                                           float hi) {
  dw_body(g, in, wt, bias, out, clamp, lo, hi);
}
#endif

typedef struct dw_run {
  const dw_geom_t *g;
  const float *in, *wt, *bias;
  float *out;
  bool clamp;
  float lo, hi;
  ar_activation_t act;
} dw_run_t;

/* Output rows [r0, r1) of N*OH (one chunk of the pool), with their activation. */
static void dw_range(void *ctx, int64_t r0, int64_t r1) {
  const dw_run_t *c = ctx;
  dw_geom_t g = *c->g;
  g.row0 = r0;
  g.row1 = r1;
#if AR_HAVE_AVX2_CLONE
  const int isa = ar__f32_isa();
  if (isa >= AR_ISA_AVX512) dw_run_avx512(&g, c->in, c->wt, c->bias, c->out, c->clamp, c->lo, c->hi);
  else if (isa >= AR_ISA_AVX2) dw_run_avx2(&g, c->in, c->wt, c->bias, c->out, c->clamp, c->lo, c->hi);
  else
#endif
    dw_run_base(&g, c->in, c->wt, c->bias, c->out, c->clamp, c->lo, c->hi);
  if (c->act == AR_ACT_TANH || c->act == AR_ACT_SIGN_BIT) {
    const size_t row = (size_t)g.ow * (size_t)g.oc;
    ar_apply_activation(c->out + (size_t)r0 * row, (size_t)(r1 - r0) * row, c->act);
  }
}

#if AR_HAVE_AVX2_CLONE
typedef struct dw512_run {
  const dw_geom_t *g;
  int32_t ngrp, gblk;   /* channel groups per row, blocks per group */
  const float *in;
  const void *wt, *bias;
  bool f16;
  float *out;
  bool clamp;
  float lo, hi;
  ar_activation_t act;
} dw512_run_t;

/* Rows [r0, r1) x channel blocks [cb0, cb1), with their activation. */
static void dw512_part(const dw512_run_t *c, int64_t r0, int64_t r1, int32_t cb0, int32_t cb1) {
  const dw_geom_t *g = c->g;
  dw512_chunk(g, c->in, c->wt, c->bias, c->f16, c->out, c->clamp, c->lo, c->hi, r0, r1, cb0, cb1);
  if (c->act == AR_ACT_TANH || c->act == AR_ACT_SIGN_BIT) {
    const int32_t ch0 = cb0 * 16, nch = AR_MIN(g->oc, cb1 * 16) - ch0;
    for (int64_t px = r0 * g->ow; px < r1 * g->ow; px++)
      ar_apply_activation(c->out + (size_t)px * g->oc + ch0, (size_t)nch, c->act);
  }
}

/* Indices [k0, k1) of rows x groups (index k: row k / ngrp, channel group k % ngrp; one group when
 * there are rows enough): whole rows in one call, partial rows group by group. */
static void dw512_range(void *ctx, int64_t k0, int64_t k1) {
  const dw512_run_t *c = ctx;
  const int32_t ng = c->ngrp, nblk = (c->g->oc + 15) / 16;
  for (int64_t k = k0; k < k1;) {
    const int64_t r = k / ng;
    const int32_t g0 = (int32_t)(k % ng);
    if (g0 == 0 && k + ng <= k1) {
      const int64_t nr = (k1 - k) / ng;
      dw512_part(c, r, r + nr, 0, nblk);
      k += nr * ng;
    } else {
      const int32_t g1 = (int32_t)AR_MIN((int64_t)ng, g0 + (k1 - k));
      dw512_part(c, r, r + 1, g0 * c->gblk, AR_MIN(nblk, g1 * c->gblk));
      k += g1 - g0;
    }
  }
}

/* Channel blocks [b0, b1) over every output row (dw_eval's channel split). */
static void dw512_blocks(void *ctx, int64_t b0, int64_t b1) {
  const dw512_run_t *c = ctx;
  dw512_part(c, 0, (int64_t)c->g->n * c->g->oh, (int32_t)b0, (int32_t)b1);
}
#endif

#if AR_HAVE_AVX2_CLONE
/* The AVX-512F path takes the node (dw_eval and ar__dw_rows agree on it). */
static bool dw_use512(const dw_geom_t *g, const ar_tview_t *f_t, const ar_tview_t *bias_t) {
  return ar__f32_isa() >= AR_ISA_AVX512 && g->mult == 1 && g->kh * g->kw <= DW512_MAX_TAPS &&
         (!bias_t || bias_t->dtype == f_t->dtype);
}

/* The AVX-512F path splits runs of channel blocks rather than rows (ar_kernel_dw_splits_rows). */
static bool dw512_splits_channels(const dw_geom_t *g) {
  const int64_t px = (int64_t)g->n * g->h * g->w;
  return px < g->oc && (g->oc + 15) / 16 >= 2 &&
         !(g->kh * g->kw <= 9 && px >= AR_DW_ROWS_MIN_PIXELS);
}
#endif

bool ar_kernel_dw_splits_rows(const ar_node_t *node) {
  if (!node || node->op != AR_OP_DEPTHWISE_CONV_2D || node->fused || node->n_inputs < 2 ||
      !node->options || !node->inputs[0] || !node->inputs[1] || !node->outputs[0] ||
      node->inputs[0]->dtype != AR_DTYPE_FLOAT32 || node->inputs[0]->rank != 4 ||
      node->inputs[1]->rank != 4)
    return false;
#if AR_HAVE_AVX2_CLONE
  dw_geom_t g;
  dw_geometry(node, &g);
  const ar_tview_t *bias_t = node->n_inputs > 2 ? node->inputs[2] : NULL;
  if (dw_use512(&g, node->inputs[1], bias_t)) return !dw512_splits_channels(&g);
#endif
  return true;
}

void ar__dw_widen(const ar_node_t *node, float *wide) {
  const ar_tview_t *f_t = node->inputs[1], *bias_t = node->n_inputs > 2 ? node->inputs[2] : NULL;
  const size_t nw = (size_t)f_t->dims[1] * f_t->dims[2] * (size_t)f_t->dims[3];
  if (f_t->dtype == AR_DTYPE_FLOAT16) ar_fp16_to_fp32_n(f_t->data, wide, nw);
  if (bias_t && bias_t->dtype == AR_DTYPE_FLOAT16)
    ar_fp16_to_fp32_n(bias_t->data, wide + nw, (size_t)f_t->dims[3]);
}

void ar__dw_rows(const ar_node_t *node, const float *in, const float *wide, int64_t r0, int64_t r1) {
  const ar_tview_t *f_t = node->inputs[1], *bias_t = node->n_inputs > 2 ? node->inputs[2] : NULL;
  const ar_activation_t act = node->options->depthwise.activation;
  dw_geom_t g;
  dw_geometry(node, &g);
  float lo, hi;
  ar__act_range(act, &lo, &hi);
  const bool clamp = ar__act_is_clamp(act);
  float *out = node->outputs[0]->data;
#if AR_HAVE_AVX2_CLONE
  if (dw_use512(&g, f_t, bias_t)) {
    const dw512_run_t c = {.g = &g, .ngrp = 1, .gblk = (g.oc + 15) / 16, .in = in, .wt = f_t->data,
                           .bias = bias_t ? bias_t->data : NULL,
                           .f16 = f_t->dtype == AR_DTYPE_FLOAT16, .out = out, .clamp = clamp,
                           .lo = lo, .hi = hi, .act = act};
    dw512_part(&c, r0, r1, 0, (g.oc + 15) / 16);
    return;
  }
#endif
  const size_t nw = (size_t)g.kh * g.kw * (size_t)g.oc;
  const dw_run_t c = {.g = &g, .in = in,
                      .wt = f_t->dtype == AR_DTYPE_FLOAT16 ? wide : f_t->data,
                      .bias = !bias_t ? NULL : bias_t->dtype == AR_DTYPE_FLOAT16 ? wide + nw
                                                                                 : bias_t->data,
                      .out = out, .clamp = clamp, .lo = lo, .hi = hi, .act = act};
  dw_range((void *)&c, r0, r1);
}

static void dw_eval(const ar_node_t *node) {
  if (ar__qw_takes(node)) {
    ar__qw_eval(node);
    return;
  }
  if (node->inputs[0]->dtype != AR_DTYPE_FLOAT32) {
    ar__qdw_eval(node);
    return;
  }
  if (node->fused) {
    ar__fused_ir_eval(node);
    return;
  }
  const ar_tview_t *f_t = node->inputs[1], *bias_t = node->n_inputs > 2 ? node->inputs[2] : NULL;
  const ar_activation_t act = node->options->depthwise.activation;
  dw_geom_t g;
  dw_geometry(node, &g);
  float lo, hi;
  ar__act_range(act, &lo, &hi);
  const float *in = node->inputs[0]->data;
  float *out = node->outputs[0]->data;
  const bool clamp = ar__act_is_clamp(act);
  /* Every output pixel is computed from its own taps alone, in the same order whatever rows a
   * chunk holds, so the rows are split by thread count (ar_parallel_for_split: each thread takes
   * the same fraction of the rows as the operator before wrote, which stays in its cache), none
   * below AR_DW_MIN_ROW_MACS multiply-adds. */
  const int64_t rows = (int64_t)g.n * g.oh;
  const int64_t row_macs = AR_MAX((int64_t)1, (int64_t)g.ow * g.oc * g.kh * g.kw);
  const int64_t min_rows = (AR_DW_MIN_ROW_MACS + row_macs - 1) / row_macs;
#if AR_HAVE_AVX2_CLONE
  if (dw_use512(&g, f_t, bias_t)) {
    dw512_run_t c = {.g = &g, .in = in, .wt = f_t->data, .bias = bias_t ? bias_t->data : NULL,
                     .f16 = f_t->dtype == AR_DTYPE_FLOAT16, .out = out, .clamp = clamp, .lo = lo,
                     .hi = hi, .act = act};
    const int32_t nblk = (g.oc + 15) / 16;
    /* A map of fewer pixels than channels: its producer, a 1x1 expansion CONV_2D, split its
     * product by runs of columns (kernels/gemm.c: N > M), in multiples of 16 channels by thread
     * count; so runs of channel blocks by thread count here give each thread the channels it
     * wrote (the other core's lines cost ~0.2 us each to fetch). Not 3x3 filters on 14x14 and
     * larger maps (dw512_splits_channels). */
    if (dw512_splits_channels(&g)) {
      c.ngrp = nblk;
      c.gblk = 1;
      const int64_t blk_macs = AR_MAX((int64_t)1, rows * g.ow * 16 * g.kh * g.kw);
      ar_parallel_for_split(node, nblk, 1, (AR_DW_MIN_CHUNK_MACS + blk_macs - 1) / blk_macs, dw512_blocks, &c);
      return;
    }
    /* Fewer rows than DW512_SPLIT_ROWS: each row's channels in groups too (rows x groups, row
     * major, so a thread still takes a contiguous run of rows). */
    c.ngrp = rows < DW512_SPLIT_ROWS ? (int32_t)AR_MIN((int64_t)nblk, (DW512_SPLIT_ROWS + rows - 1) / rows) : 1;
    c.gblk = (nblk + c.ngrp - 1) / c.ngrp;
    c.ngrp = (nblk + c.gblk - 1) / c.gblk;
    const int64_t part_macs = AR_MAX((int64_t)1, row_macs / c.ngrp);
    ar_parallel_for_split(node, rows * c.ngrp, 1, (AR_DW_MIN_ROW_MACS + part_macs - 1) / part_macs,
                          dw512_range, &c);
    return;
  }
#endif
  /* Other paths read float32: float16 weights are widened into scratch first (same values). */
  float *wide = node->scratch;
  const size_t nw = (size_t)g.kh * g.kw * (size_t)g.oc;
  ar__dw_widen(node, wide);
  dw_run_t c = {.g = &g, .in = in,
                .wt = f_t->dtype == AR_DTYPE_FLOAT16 ? wide : f_t->data,
                .bias = !bias_t ? NULL : bias_t->dtype == AR_DTYPE_FLOAT16 ? wide + nw : bias_t->data,
                .out = out, .clamp = clamp, .lo = lo, .hi = hi, .act = act};
  ar_parallel_for_split(node, rows, 1, min_rows, dw_range, &c);
}

static const ar_kernel_form_t depthwise_conv_2d_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32),
  AR_KF(1, 3, UINT8, UINT8),
  AR_KF(1, 3, INT8, INT8),
  AR_KFW(4, 4, FLOAT32, INT8, FLOAT32),   /* hybrid (kernels/qwide.h) */
  AR_KFW(5, 5, INT16, INT8, INT16),       /* int16x8 */
  AR_KFW(6, 6, FLOAT32, INT8, FLOAT32),   /* hybrid with per-channel weights */
};
const ar_kernel_t ar_kernel_depthwise_conv_2d = {
  .name = "DEPTHWISE_CONV_2D",
  .prepare = dw_prepare,
  .init = dw_init,
  .eval = dw_eval,
  .support = AR_KSUPPORT(depthwise_conv_2d_forms, 0, 1),
};
