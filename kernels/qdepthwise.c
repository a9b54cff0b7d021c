/* qdepthwise.c - TFLite DEPTHWISE_CONV_2D on uint8 and int8 tensors (reached from depthwise.c).
 *
 * Semantics (TFLite's builtin kernels, ../shared/golden_q/NOTES.md):
 *   acc[c*M+m] = bias[c*M+m] + sum over in-bounds taps of (x[c] - z_in) * (w[c*M+m] - z_w)
 * (a tap outside the input is skipped, i.e. it contributes as the input zero point would), then
 *   uint8 (legacy, asymmetric per-tensor weights, z_w may be != 0): TFLite
 *          MultiplyByQuantizedMultiplier (ar_mbqm, ties away from zero) with the multiplier
 *          QuantizeMultiplier(double(float(s_in * s_w)) / s_out) (GetQuantizedConvolutionMultipler);
 *   int8   (symmetric weights, per-channel or per-tensor scales, z_w == 0): the builtin kernel's
 *          half-up rescale (ar_mbqm_up) with QuantizeMultiplier(double(s_in) * s_w[c] / s_out);
 * then + z_out and the clamp of the fused activation in the quantized domain
 * (ar_quant_activation_range). The bias scale must equal s_in * s_w[c] within TFLite's tolerance
 * (|s_in*s_w - s_bias| / s_out <= 0.02, TFLite's check for uint8; applied to int8 per channel too).
 *
 * Layout: the filter is repacked once at init into the persistent state as int16 (w - z_w), in
 * two orders: [tap][channel] for the portable loop, and tap pairs interleaved per channel
 * ([pair][channel][2]) for the SIMD loops, which multiply-add two taps of 16 channels at once
 * (x - z_in and w - z_w both fit in int16, so vpmaddwd / vpdpwssd are exact). Eval keeps one row of
 * int32 accumulators in scratch (OW * OC * 4 bytes), then rescales the row; no heap. Output rows are
 * shared out over the thread pool (ar_parallel_for_slots), each thread on a scratch slot of its own.
 *
 * Speed: with depth multiplier 1 every pixel runs an AVX2 loop (vpmaddwd) or, where the CPU has
 * AVX-512 VNNI, a 512-bit vpdpwssd loop, picked at run time. The loops read each tap through a
 * per-row table of pointers (XNNPACK's indirection buffer, built here one row at a time in
 * scratch): a tap outside the input points to C bytes of the input zero point, which add 0, so
 * border pixels take the same loop as interior ones. The row is then rescaled 8 channels per
 * vector, multipliers >= 1 (left shifts) included. Depth multipliers > 1 and CPUs without AVX2 take
 * the portable loop, the reference the others are tested against: all paths give identical int32
 * sums and the same rescale, so the results are equal bit for bit (tests/check_kernels_quant_dw.c).
 *
 * One input channel (C == 1, any depth multiplier M: TFLM's micro_speech and person_detect stems)
 * is an ordinary convolution with I = 1 and O = M, so it runs as one: each output pixel's KH*KW
 * taps are laid out as a GEMM row (im2col, taps outside the input = the input zero point, which
 * adds 0 as TFLite's skipped tap does) in a tile of scratch, and the integer GEMM of
 * kernels/qgemm.h (vpdpbusd on AVX-512 VNNI, 4 taps x 16 channels per instruction) multiplies the
 * tile by the filter, packed once at init as the [M, KH*KW] right-hand matrix, and rescales as it
 * stores - the same int32 sums, the same multipliers and the same rounding (ar_mbqm_up for int8,
 * ar_mbqm for uint8), so the same bytes as the per-pixel loop, which stays the reference when the
 * portable loop is forced (ar__qdw_set_isa(0)).
 */
#include "kernels/ar_kernel_impl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_quant.h"
#include "kernels/conv_util.h"
#include "kernels/ar_parallel.h"
#include "kernels/qgemm.h"

#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>
#define QDW_TARGET_VNNI __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni")))
#endif
/* arm64: level 1 is the ASIMD loop (every arm64 Linux CPU has ASIMD) and rescale. */
#if defined(__aarch64__) && !defined(__clang_analyzer__)
#define QDW_NEON 1
#include <arm_neon.h>

#include "kernels/requant_neon.h"
#else
#define QDW_NEON 0
#endif
/* The tap pointer table of the SIMD loops (x86 and arm64). */
#define QDW_PTRS (AR_HAVE_AVX2_CLONE || QDW_NEON)

typedef struct {
  int32_t n, h, w, c, mult, oc;
  int32_t kh, kw, oh, ow, sh, sw, dh, dw, pt, pl;
  int32_t ntaps, npairs;
  int32_t in_zp, out_zp, act_lo, act_hi;
  bool is_int8;
  bool vec_rq;                 /* every channel's shift <= 0: the vector rescale applies */
  bool gemm;                   /* C == 1: the convolution route through kernels/qgemm.h */
  int32_t kp;                  /* GEMM depth KH*KW rounded up to 4 (the im2col row's bytes) */
  int32_t tile_oy;             /* output rows per im2col tile */
  int32_t hp, wp;              /* the padded input image's rows and columns (qdw_pad_input) */
  uint64_t pad_bytes;          /* scratch ahead of the slots for it (64-aligned) */
  ar_qgemm_t qg;               /* the GEMM's parameters (filled by init) */
  /* byte offsets of the arrays that follow the header in node->state */
  uint64_t off_mult, off_shift, off_bias, off_taps, off_w, off_wp, off_rq;
  uint64_t off_gbias, off_gmult, off_gshift, off_packed, off_wt;   /* GEMM route only */
  bool grp;                    /* stride 1, multiplier 1, C in {2, 4, 8, 16}: 32 / C pixels per pass */
  bool flat_rq;                /* OC in {2, 4, 8}: the rescale runs over a row as 16-lane vectors */
  bool c1x;                    /* GEMM route with OC in {4, 8}, dilation 1 along W and no weight
                                * zero-point row term: on AVX-512 VNNI, 16 / OC pixels per vector
                                * straight from the padded input (qdw_c1_vnni) */
  int32_t kw4, c1_groups;      /* c1x: KW rounded up to 4; KH * KW4 / 4 tap groups */
  uint64_t off_b16, off_bias16;   /* c1x: B over 16 lanes (lane j channel j % OC), bias likewise */
  uint64_t off_wpx, off_biasx, off_rqx;   /* grp: weights and bias over 32 lanes; flat_rq: m, r, l x 16 */
  uint64_t bytes;
} qdw_state_t;

static int qdw_isa_forced = -1;

int ar__qdw_set_isa(int isa) {
  int best = QDW_NEON;
#if AR_HAVE_AVX2_CLONE
  if (__builtin_cpu_supports("avx2")) best = 1;
  if (best && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
    best = 2;
#endif
  if (isa < 0) { qdw_isa_forced = -1; return best; }
  if (isa > best) return -1;
  qdw_isa_forced = isa;
  return isa;
}

static int qdw_isa(void) {
  static int best = -1;   /* relaxed atomics: invokes on several threads may ask first */
  if (qdw_isa_forced >= 0) return qdw_isa_forced;
  int cached = __atomic_load_n(&best, __ATOMIC_RELAXED);
  if (cached < 0) {
    int b = QDW_NEON;
#if AR_HAVE_AVX2_CLONE
    if (__builtin_cpu_supports("avx2")) b = 1;
    if (b && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
      b = 2;
#endif
    __atomic_store_n(&best, cached = b, __ATOMIC_RELAXED);
  }
  return cached;
}

static uint64_t align64(uint64_t x) { return (x + 63u) & ~(uint64_t)63u; }

/* The least work (multiply-adds) worth a chunk of output rows of its own on the pool. */
#define QDW_CHUNK_MACS (128 * 1024)
/* Bytes of one im2col tile of the GEMM route (whole output rows; at least one), kept in L1. */
#define QDW_TILE_BYTES (16 * 1024)

/* Geometry and array offsets (everything but the packed data). */
static void qdw_geometry(const ar_node_t *node, qdw_state_t *g) {
  const ar_depthwise_options_t *o = &node->options->depthwise;
  const ar_tview_t *in = node->inputs[0], *f = node->inputs[1];
  memset(g, 0, sizeof *g);
  g->n = in->dims[0]; g->h = in->dims[1]; g->w = in->dims[2]; g->c = in->dims[3];
  g->kh = f->dims[1]; g->kw = f->dims[2]; g->oc = f->dims[3];
  g->mult = g->c > 0 ? g->oc / g->c : 0;
  g->sh = o->stride_h; g->sw = o->stride_w; g->dh = o->dilation_h; g->dw = o->dilation_w;
  g->oh = ar_compute_padding(o->padding, g->h, g->kh, g->sh, g->dh, &g->pt);
  g->ow = ar_compute_padding(o->padding, g->w, g->kw, g->sw, g->dw, &g->pl);
  g->ntaps = g->kh * g->kw;
  g->npairs = (g->ntaps + 1) / 2;
  g->is_int8 = in->dtype == AR_DTYPE_INT8;
  uint64_t at = align64(sizeof *g), oc = (uint64_t)g->oc;
  g->off_mult = at; at = align64(at + oc * 4);
  g->off_shift = at; at = align64(at + oc * 4);
  g->off_bias = at; at = align64(at + oc * 4);
  g->off_taps = at; at = align64(at + (uint64_t)g->npairs * 2 * 8);
  g->off_w = at; at = align64(at + (uint64_t)g->ntaps * oc * 2);
  g->off_wp = at; at = align64(at + (uint64_t)g->npairs * oc * 4);
  g->off_rq = at; at = align64(at + oc * 4 * 4);   /* right shift, rounding term, threshold, left shift */
  g->grp = g->mult == 1 && g->sw == 1 && g->c >= 2 && g->c < 32 && 32 % g->c == 0;
  g->flat_rq = g->oc >= 2 && g->oc < 16 && 16 % g->oc == 0;
  if (g->grp) {
    g->off_wpx = at; at = align64(at + (uint64_t)g->npairs * 32u * 2u * 2u);
    g->off_biasx = at; at = align64(at + 32u * 4u);
  }
  if (g->flat_rq) { g->off_rqx = at; at = align64(at + 3u * 16u * 4u); }
  g->gemm = g->c == 1 && g->oc > 0 && g->ntaps > 0;
  if (g->gemm) {
    g->kp = (g->ntaps + 3) / 4 * 4;
    const int64_t row_bytes = (int64_t)g->ow * g->kp;
    g->tile_oy = row_bytes > 0 && row_bytes < QDW_TILE_BYTES ? (int32_t)(QDW_TILE_BYTES / row_bytes) : 1;
    /* the frame holds every tap of every pixel, and the 8-byte moves from a filter row's first */
    g->kw4 = (g->kw + 3) / 4 * 4;   /* c1x reads KW4 bytes from a filter row's first tap */
    const int32_t need_w = (g->ow - 1) * g->sw + AR_MAX(AR_MAX((g->kw - 1) * g->dw + 1, 8), g->kw4);
    const int32_t need_h = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
    g->wp = AR_MAX(need_w, g->pl + g->w);
    g->hp = AR_MAX(need_h, g->pt + g->h);
    g->pad_bytes = align64((uint64_t)g->n * (uint64_t)g->hp * (uint64_t)g->wp);
    g->qg.n = g->oc;
    g->qg.k = g->ntaps;
    g->qg.k_groups = g->kp / 4;
    g->qg.n_blocks = (g->oc + 15) / 16;
    const uint64_t per = (uint64_t)g->qg.n_blocks * 16u * 4u;
    g->off_gbias = at; at = align64(at + per);
    g->off_gmult = at; at = align64(at + per);
    g->off_gshift = at; at = align64(at + per);
    g->off_packed = at; at = align64(at + ar_qgemm_packed_bytes(&g->qg));
    g->off_wt = at; at = align64(at + oc * (uint64_t)g->ntaps);   /* the filter as [M][KH*KW] */
    /* init clears c1x for legacy uint8 weights (zw_row) */
    g->c1x = (g->oc == 4 || g->oc == 8) && g->dw == 1;
    g->c1_groups = g->kh * (g->kw4 / 4);
    if (g->c1x) {
      g->off_b16 = at; at = align64(at + (uint64_t)g->c1_groups * 64u);
      g->off_bias16 = at; at = align64(at + 16u * 4u);
    }
  }
  g->bytes = at;
}

/* One scratch slot (one per thread that may run at once): one row of int32
 * accumulators (OW * OC), then the row's tap pointers (OW * 2 * npairs), then C bytes of the input
 * zero point (what a tap outside the input points to), each 64-aligned. */
static uint64_t qdw_slot_bytes(const qdw_state_t *g) {
  const uint64_t loop = align64((uint64_t)g->ow * (uint64_t)g->oc * sizeof(int32_t)) +
                        align64((uint64_t)g->ow * 2u * (uint64_t)g->npairs * sizeof(void *)) +
                        align64((uint64_t)g->c);
  /* the GEMM route's im2col tile (the per-pixel loop may still be forced on the same node) */
  const uint64_t tile = g->gemm ? align64((uint64_t)g->tile_oy * (uint64_t)g->ow * (uint64_t)g->kp + 8u) : 0;
  return loop > tile ? loop : tile;
}


int ar__qdw_check_io(const ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 3, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  if (!node->options) return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "missing DepthwiseConv2DOptions");
  const ar_tview_t *in = node->inputs[0], *f = node->inputs[1], *out = node->outputs[0];
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  ar_dtype_t t = in->dtype;
  if (t != AR_DTYPE_UINT8 && t != AR_DTYPE_INT8)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input has dtype %s (float32, uint8 or int8)",
                    ar_dtype_name(t));
  if ((rc = ar_k_check_dtype(node, f, "filter (input 1)", t, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, out, "output 0", t, msg, msg_bytes)) ||
      (bias && (rc = ar_k_check_dtype(node, bias, "bias (input 2)", AR_DTYPE_INT32, msg, msg_bytes))))
    return rc;
  if (!f->is_constant || (bias && !bias->is_constant))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "quantized filter and bias must be constants");
  return 0;
}

/* Quantization checks and multipliers (also used by init to fill the state). */
static int qdw_quant(const ar_node_t *node, const qdw_state_t *g, int32_t *mult, int32_t *shift,
                     char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0], *f = node->inputs[1], *out = node->outputs[0];
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  const ar_quant_t *qi = in->quant, *qf = f->quant, *qo = out->quant;
  char tn[128];
  if (!qi || qi->n != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "input 0%s needs per-tensor quantization",
                    ar_k_tname(in, tn, sizeof tn));
  if (!qo || qo->n != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "output 0%s needs per-tensor quantization",
                    ar_k_tname(out, tn, sizeof tn));
  if (!qf || (qf->n != 1 && qf->n != g->oc))
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "filter (input 1)%s needs per-tensor or %d "
                    "per-channel scales, has %d", ar_k_tname(f, tn, sizeof tn), (int)g->oc,
                    qf ? (int)qf->n : 0);
  if (qf->n > 1 && (qf->quantized_dimension != 3 || g->is_int8 == false))
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "filter (input 1)%s per-channel quantization "
                    "must be int8 along dimension 3 (dtype %s, dimension %d)",
                    ar_k_tname(f, tn, sizeof tn), ar_dtype_name(f->dtype), (int)qf->quantized_dimension);
  if (g->is_int8)
    for (int32_t i = 0; i < qf->n; i++)
      if (qf->zero_point[i] != 0)
        return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "int8 filter (input 1)%s must be symmetric: "
                        "zero point %lld on channel %d", ar_k_tname(f, tn, sizeof tn),
                        (long long)qf->zero_point[i], (int)i);
  const float s_in = qi->scale[0], s_out = qo->scale[0];
  const ar_quant_t *qb = bias ? bias->quant : NULL;
  for (int32_t c = 0; c < g->oc; c++) {
    const float s_w = qf->scale[qf->n > 1 ? c : 0];
    /* uint8: TFLite's float32 product; int8: its per-channel double product (ar_quant.h). */
    const double real = ar_quant_conv_multiplier(s_in, s_w, s_out, !g->is_int8);
    const double prod = (double)s_in * (double)s_w;   /* for the bias check, as TFLite's */
    if (qb && qb->n >= 1) {
      double s_b = qb->scale[qb->n > 1 && c < qb->n ? c : 0];
      if (fabs(prod - s_b) / (double)s_out > 0.02)
        return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "bias (input 2)%s scale %g on channel %d "
                        "is not input scale * filter scale = %g", ar_k_tname(bias, tn, sizeof tn),
                        s_b, (int)c, prod);
    }
    int32_t m; int s;
    ar_quantize_multiplier(real, &m, &s);
    if (mult) { mult[c] = m; shift[c] = s; }
  }
  return 0;
}

int ar__qdw_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  qdw_state_t g;
  qdw_geometry(node, &g);
  const ar_tview_t *out = node->outputs[0];
  int rc = qdw_quant(node, &g, NULL, NULL, msg, msg_bytes);
  if (rc) return rc;
  int32_t lo, hi;
  if (ar_quant_activation_range(node->options->depthwise.activation, out->dtype, out->quant->scale[0],
                                out->quant->zero_point[0], &lo, &hi))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "fused activation %d is not supported on "
                    "quantized tensors", (int)node->options->depthwise.activation);
  node->state_bytes = g.bytes;
  const int64_t rows = (int64_t)g.n * g.oh;
  const int64_t slots = AR_MIN(rows, (int64_t)ar_parallel_threads(node));
  node->scratch_bytes = 64 + g.pad_bytes + (uint64_t)(slots > 0 ? slots : 1) * qdw_slot_bytes(&g);
  return 0;
}

void ar__qdw_init(ar_node_t *node) {
  qdw_state_t g;
  qdw_geometry(node, &g);
  if (!node->state || node->state_bytes < g.bytes) return;
  uint8_t *base = node->state;
  int32_t *mult = (int32_t *)(base + g.off_mult), *shift = (int32_t *)(base + g.off_shift);
  int32_t *bias = (int32_t *)(base + g.off_bias);
  int64_t *taps = (int64_t *)(base + g.off_taps);
  int16_t *w = (int16_t *)(base + g.off_w), *wp = (int16_t *)(base + g.off_wp);
  if (qdw_quant(node, &g, mult, shift, NULL, 0) != 0) return;
  const ar_tview_t *in = node->inputs[0], *f = node->inputs[1], *out = node->outputs[0];
  const ar_tview_t *bt = node->n_inputs > 2 ? node->inputs[2] : NULL;
  g.in_zp = (int32_t)in->quant->zero_point[0];
  g.out_zp = (int32_t)out->quant->zero_point[0];
  ar_quant_activation_range(node->options->depthwise.activation, out->dtype, out->quant->scale[0],
                            out->quant->zero_point[0], &g.act_lo, &g.act_hi);
  const int32_t oc = g.oc;
  if (bt && bt->data) memcpy(bias, bt->data, (size_t)oc * sizeof(int32_t));
  else memset(bias, 0, (size_t)oc * sizeof(int32_t));
  const ar_quant_t *qf = f->quant;
  for (int32_t k = 0; k < g.ntaps; k++)
    for (int32_t c = 0; c < oc; c++) {
      size_t i = (size_t)k * oc + c;
      int32_t v = g.is_int8 ? (int32_t)((const int8_t *)f->data)[i] : (int32_t)((const uint8_t *)f->data)[i];
      int32_t zw = g.is_int8 ? 0 : (int32_t)qf->zero_point[0];
      w[i] = (int16_t)(v - zw);
    }
  for (int32_t p = 0; p < g.npairs; p++) {
    for (int j = 0; j < 2; j++) {
      int32_t k = 2 * p + j;
      int32_t kk = k < g.ntaps ? k : 2 * p;          /* odd tap count: the last pair repeats a tap */
      taps[2 * p + j] = ((int64_t)(kk / g.kw) * g.dh * g.w + (int64_t)(kk % g.kw) * g.dw) * g.c;
      for (int32_t c = 0; c < oc; c++)
        wp[((size_t)p * oc + c) * 2 + j] = k < g.ntaps ? w[(size_t)k * oc + c] : 0;   /* weight 0 */
    }
  }
  /* The vector rescale's per-channel terms: left shift l (multipliers >= 1) and right shift r, one
   * of them 0; int8 (half up) adds 2^(r-1) before the arithmetic shift; uint8 (TFLite
   * RoundingDivideByPOT) compares the remainder (mask 2^r - 1) with the threshold mask/2 (+1 for
   * negatives). */
  int32_t *rq_r = (int32_t *)(base + g.off_rq), *rq_a = rq_r + oc, *rq_b = rq_a + oc, *rq_l = rq_b + oc;
  g.vec_rq = true;
  for (int32_t c = 0; c < oc; c++) {
    const int32_t r = shift[c] > 0 ? 0 : -shift[c];
    if (shift[c] > 31 || r > 31) g.vec_rq = false;
    rq_r[c] = r > 31 ? 31 : r;
    rq_l[c] = shift[c] > 0 && shift[c] <= 31 ? shift[c] : 0;
    if (g.is_int8) {
      rq_a[c] = r > 0 && r <= 31 ? (int32_t)(1u << (r - 1)) : 0;
      rq_b[c] = 0;
    } else {
      rq_a[c] = r > 0 && r <= 31 ? (int32_t)((1ll << r) - 1) : 0;
      rq_b[c] = rq_a[c] >> 1;
    }
  }
  /* Lane j of a pass over 32 / C pixels (grp) or of a 16-lane rescale vector (flat_rq) holds
   * channel j % C. */
  if (g.grp) {
    int16_t *wpx = (int16_t *)(base + g.off_wpx);
    int32_t *bx = (int32_t *)(base + g.off_biasx);
    for (int32_t j = 0; j < 32; j++) bx[j] = bias[j % oc];
    for (int32_t p = 0; p < g.npairs; p++)
      for (int32_t j = 0; j < 32; j++)
        for (int q = 0; q < 2; q++) wpx[((size_t)p * 32 + j) * 2 + q] = wp[((size_t)p * oc + j % oc) * 2 + q];
  }
  if (g.flat_rq) {
    int32_t *rx = (int32_t *)(base + g.off_rqx);
    for (int32_t j = 0; j < 16; j++) {
      rx[j] = mult[j % oc];
      rx[16 + j] = rq_r[j % oc];
      rx[32 + j] = rq_l[j % oc];
    }
  }
  if (g.gemm) {
    /* The filter [1, KH, KW, M] is the GEMM's B transposed: B[m][k] = filter[k][m]. */
    uint8_t *wt = base + g.off_wt;
    const uint8_t *fd = f->data;
    for (int32_t k = 0; k < g.ntaps; k++)
      for (int32_t c = 0; c < oc; c++) wt[(size_t)c * g.ntaps + k] = fd[(size_t)k * oc + c];
    /* int8 inputs are flipped to unsigned (x + 128) once, as qdw_pad_input copies them, so the
     * GEMM reads them as they are (a_xor 0) with the zero point za' = z_in + 128 */
    g.qg.a_xor = 0;
    g.qg.out_zero_point = g.out_zp;
    g.qg.lo = g.act_lo;
    g.qg.hi = g.act_hi;
    g.qg.round_up = g.is_int8;   /* ar_mbqm_up for int8, ar_mbqm for uint8, as qdw_requant */
    const int32_t padded = g.qg.n_blocks * 16;
    int32_t *gm = (int32_t *)(base + g.off_gmult), *gs = (int32_t *)(base + g.off_gshift);
    for (int32_t c = 0; c < padded; c++) {
      gm[c] = c < oc ? mult[c] : 0;
      gs[c] = c < oc ? shift[c] : 0;
    }
    int32_t *gb = (int32_t *)(base + g.off_gbias);
    ar_qgemm_pack(&g.qg, wt, !g.is_int8, qf->zero_point, 1, bt && bt->data ? bt->data : NULL,
                  g.is_int8 ? g.in_zp + 128 : g.in_zp, base + g.off_packed, gb);
    if (g.qg.zw_row != 0) g.c1x = false;
    if (g.c1x) {
      /* B and the folded bias again: lane j of a 16-lane vector = channel j % OC; group (ky, q)
       * holds taps (ky, 4q .. 4q + 3), weight 0 past KW (those bytes are the next columns) */
      uint8_t *b16 = base + g.off_b16;
      int32_t *bias16 = (int32_t *)(base + g.off_bias16);
      const int32_t gpr = g.kw4 / 4;
      memset(b16, 0, (size_t)g.c1_groups * 64u);
      for (int32_t j = 0; j < 16; j++) {
        const int32_t ch = j % oc;
        bias16[j] = gb[ch];
        for (int32_t ky = 0; ky < g.kh; ky++)
          for (int32_t kx = 0; kx < g.kw; kx++) {
            const uint8_t v = wt[(size_t)ch * g.ntaps + (size_t)ky * g.kw + kx];
            const size_t grp = (size_t)ky * gpr + (size_t)kx / 4;
            b16[grp * 64u + (size_t)j * 4u + (size_t)(kx % 4)] = g.is_int8 ? v : (uint8_t)(v - 128u);
          }
      }
    }
  }
  memcpy(base, &g, sizeof g);
}

/* ---- the loops ---- */

static AR_ALWAYS_INLINE int32_t qdw_ld(const uint8_t *p, bool s8) {
  return s8 ? (int32_t)(int8_t)*p : (int32_t)*p;
}

/* Output pixels [ox0, ox1) of row oy, taps checked against the input bounds. */
static AR_ALWAYS_INLINE void qdw_checked(const qdw_state_t *g, const uint8_t *in_b, const int16_t *w,
                                         const int32_t *bias, int32_t *acc, int32_t oy, int32_t ox0,
                                         int32_t ox1, bool s8) {
  const int32_t oc = g->oc, c = g->c, mult = g->mult, zp = g->in_zp;
  const int32_t iy0 = oy * g->sh - g->pt;
  for (int32_t ox = ox0; ox < ox1; ox++) {
    int32_t *restrict a = acc + (size_t)ox * oc;
    for (int32_t j = 0; j < oc; j++) a[j] = bias[j];
    const int32_t ix0 = ox * g->sw - g->pl;
    for (int32_t ky = 0; ky < g->kh; ky++) {
      const int32_t iy = iy0 + ky * g->dh;
      if (iy < 0 || iy >= g->h) continue;
      for (int32_t kx = 0; kx < g->kw; kx++) {
        const int32_t ix = ix0 + kx * g->dw;
        if (ix < 0 || ix >= g->w) continue;
        const uint8_t *restrict ip = in_b + ((size_t)iy * g->w + ix) * (size_t)c;
        const int16_t *restrict wk = w + ((size_t)ky * g->kw + kx) * (size_t)oc;
        if (mult == 1) {
          for (int32_t j = 0; j < oc; j++) a[j] += (qdw_ld(ip + j, s8) - zp) * (int32_t)wk[j];
        } else {
          for (int32_t ci = 0; ci < c; ci++) {
            const int32_t x = qdw_ld(ip + ci, s8) - zp;
            for (int32_t m = 0; m < mult; m++) a[ci * mult + m] += x * (int32_t)wk[ci * mult + m];
          }
        }
      }
    }
  }
}

/* Rescale one row of accumulators into the output. With g->vec_rq (every shift in [-31, 31]) the
 * same branch-free arithmetic as the AVX2 rescale (qdw_rq8): int8 ((x * m) << l + 2^30) >> 31 in
 * 64 bits (ar_mbqm_up), uint8 ((x << l in 32 bits) * m + 2^30) >> 31 (ar_mbqm), then the
 * per-channel right shift, half up (int8) or away from zero (uint8). */
static AR_ALWAYS_INLINE void qdw_requant(const qdw_state_t *g, const int32_t *acc, uint8_t *o,
                                         const int32_t *mult, const int32_t *shift, bool s8) {
  const int32_t oc = g->oc, zp = g->out_zp, lo = g->act_lo, hi = g->act_hi;
  if (g->vec_rq) {
    const int32_t *rr = (const int32_t *)((const uint8_t *)g + g->off_rq), *ra = rr + oc, *rb = ra + oc,
                  *rl = rb + oc;
    for (int32_t ox = 0; ox < g->ow; ox++, acc += oc, o += oc)
      for (int32_t c = 0; c < oc; c++) {
        int32_t v;
        if (s8)
          v = (int32_t)(((int64_t)(((uint64_t)((int64_t)acc[c] * mult[c])) << rl[c]) + (1ll << 30)) >> 31);
        else
          v = (int32_t)(((int64_t)(int32_t)((uint32_t)acc[c] << rl[c]) * mult[c] + (1ll << 30)) >> 31);
        if (s8) v = (v + ra[c]) >> rr[c];
        else v = (v >> rr[c]) + ((v & ra[c]) > rb[c] - (v >> 31));
        v += zp;
        v = v < lo ? lo : v > hi ? hi : v;
        o[c] = (uint8_t)v;
      }
    return;
  }
  for (int32_t ox = 0; ox < g->ow; ox++, acc += oc, o += oc)
    for (int32_t c = 0; c < oc; c++) {
      int32_t v = s8 ? ar_mbqm_up(acc[c], mult[c], shift[c]) : ar_mbqm(acc[c], mult[c], shift[c]);
      v += zp;
      v = v < lo ? lo : v > hi ? hi : v;
      o[c] = s8 ? (uint8_t)(int8_t)v : (uint8_t)v;
    }
}

#if QDW_PTRS
/* The tap pointer table of output row oy (depth multiplier 1), read by the SIMD loops: tap k of
 * pixel ox at tp[ox * 2 * npairs + k]. A tap outside the input points to zbuf (C bytes of the input
 * zero point, so it adds (z_in - z_in) * w = 0, as TFLite's skipped tap does), and so does the pad
 * tap of an odd tap count (weight 0). Interior pixels take the precomputed offsets. */
static AR_ALWAYS_INLINE void qdw_row_ptrs(const qdw_state_t *g, const uint8_t *in_b, const uint8_t *zbuf,
                                          const int64_t *taps, int32_t oy, int32_t ox_lo, int32_t ox_hi,
                                          const uint8_t **tp, bool borders_only) {
  const int32_t np2 = 2 * g->npairs, c = g->c;
  const int32_t iy0 = oy * g->sh - g->pt;
  const bool row_in = iy0 >= 0 && iy0 + (g->kh - 1) * g->dh <= g->h - 1;
  for (int32_t ox = 0; ox < g->ow; ox++) {
    const uint8_t **t = tp + (size_t)ox * np2;
    const int32_t ix0 = ox * g->sw - g->pl;
    if (row_in && ox >= ox_lo && ox < ox_hi) {
      if (borders_only) continue;   /* the caller reads these pixels' taps as offsets */
      const uint8_t *ip = in_b + ((ptrdiff_t)iy0 * g->w + ix0) * c;
      for (int32_t k = 0; k < np2; k++) t[k] = ip + taps[k];
      continue;
    }
    int32_t k = 0;
    for (int32_t ky = 0; ky < g->kh; ky++) {
      const int32_t iy = iy0 + ky * g->dh;
      const bool yin = iy >= 0 && iy < g->h;
      for (int32_t kx = 0; kx < g->kw; kx++, k++) {
        const int32_t ix = ix0 + kx * g->dw;
        t[k] = yin && ix >= 0 && ix < g->w ? in_b + ((size_t)iy * g->w + ix) * c : zbuf;
      }
    }
    for (; k < np2; k++) t[k] = zbuf;
  }
}

/* Scalar channels [c0, oc) of npix pixels read through the tap pointer table (SIMD tails). */
static AR_ALWAYS_INLINE void qdw_ptr_tail(const qdw_state_t *g, const uint8_t *const *tp,
                                          const int16_t *w, const int32_t *bias, int32_t *acc,
                                          int32_t npix, int32_t c0, bool s8) {
  const int32_t oc = g->oc, zp = g->in_zp, np2 = 2 * g->npairs;
  for (int32_t p = 0; p < npix; p++) {
    const uint8_t *const *t = tp + (size_t)p * np2;
    int32_t *a = acc + (size_t)p * oc;
    for (int32_t c = c0; c < oc; c++) {
      int32_t s = bias[c];
      for (int32_t k = 0; k < g->ntaps; k++)
        s += (qdw_ld(t[k] + c, s8) - zp) * (int32_t)w[(size_t)k * oc + c];
      a[c] = s;
    }
  }
}
#endif

#if AR_HAVE_AVX2_CLONE
/* AVX2: npix pixels whose taps are read through the pointer table tp; multiplier 1. */
AR_TARGET_AVX2 static AR_ALWAYS_INLINE void qdw_ptr_avx2_t(const qdw_state_t *g, const uint8_t *const *tp,
                                                 const int16_t *wp,
                                                 const int32_t *bias, int32_t *acc, int32_t npix,
                                                 bool s8) {
  const int32_t oc = g->oc, np = g->npairs, np2 = 2 * np;
  const __m256i zp = _mm256_set1_epi16((int16_t)g->in_zp);
  for (int32_t p = 0; p < npix; p++) {
    const uint8_t *const *tq = tp + (size_t)p * np2;
    int32_t *a = acc + (size_t)p * oc;
    int32_t c = 0;
    for (; c + 16 <= oc; c += 16) {
      __m256i a0 = _mm256_loadu_si256((const __m256i *)(bias + c));
      __m256i a1 = _mm256_loadu_si256((const __m256i *)(bias + c + 8));
      for (int32_t t = 0; t < np; t++) {
        const __m128i xa = _mm_loadu_si128((const __m128i *)(tq[2 * t] + c));
        const __m128i xb = _mm_loadu_si128((const __m128i *)(tq[2 * t + 1] + c));
        const __m128i l8 = _mm_unpacklo_epi8(xa, xb), h8 = _mm_unpackhi_epi8(xa, xb);
        __m256i l = s8 ? _mm256_cvtepi8_epi16(l8) : _mm256_cvtepu8_epi16(l8);
        __m256i h = s8 ? _mm256_cvtepi8_epi16(h8) : _mm256_cvtepu8_epi16(h8);
        l = _mm256_sub_epi16(l, zp);
        h = _mm256_sub_epi16(h, zp);
        const int16_t *wq = wp + ((size_t)t * oc + c) * 2;
        a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(l, _mm256_loadu_si256((const __m256i *)wq)));
        a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(h, _mm256_loadu_si256((const __m256i *)(wq + 16))));
      }
      _mm256_storeu_si256((__m256i *)(a + c), a0);
      _mm256_storeu_si256((__m256i *)(a + c + 8), a1);
    }
    for (; c + 8 <= oc; c += 8) {
      __m256i a0 = _mm256_loadu_si256((const __m256i *)(bias + c));
      for (int32_t t = 0; t < np; t++) {
        const __m128i xa = _mm_loadl_epi64((const __m128i *)(tq[2 * t] + c));
        const __m128i xb = _mm_loadl_epi64((const __m128i *)(tq[2 * t + 1] + c));
        const __m128i l8 = _mm_unpacklo_epi8(xa, xb);
        __m256i l = s8 ? _mm256_cvtepi8_epi16(l8) : _mm256_cvtepu8_epi16(l8);
        l = _mm256_sub_epi16(l, zp);
        const int16_t *wq = wp + ((size_t)t * oc + c) * 2;
        a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(l, _mm256_loadu_si256((const __m256i *)wq)));
      }
      _mm256_storeu_si256((__m256i *)(a + c), a0);
    }
    if (c < oc) {
      const int16_t *w = (const int16_t *)((const uint8_t *)g + g->off_w);
      qdw_ptr_tail(g, tq, w, bias, a, 1, c, s8);
    }
  }
}

/* 8 lanes of the rescale (g->vec_rq): the 64-bit products x * m of the even and odd lanes (x
 * shifted left by l first for uint8 as ar_mbqm does in 32 bits, the product shifted left by l for
 * int8 as ar_mbqm_up does in 64 bits), + 2^30, >> 31 (the low 32 bits of a logical shift equal the arithmetic one because the
 * result fits in int32; gemmlowp's SaturatingRoundingDoublingHighMul rounds its ties up too, so
 * both types share this step); then uint8 rounds the right shift away from zero (TFLite
 * RoundingDivideByPOT), int8 adds 2^(r-1) and shifts. Equal to ar_mbqm / ar_mbqm_up for |x| < 2^30 (every real
 * accumulator; the portable loop is the reference above that). */
AR_TARGET_AVX2 static AR_ALWAYS_INLINE __m256i qdw_rq8(__m256i x, const int32_t *m, const int32_t *r,
                                                       const int32_t *a, const int32_t *b,
                                                       const int32_t *l, bool s8) {
  const __m256i mv = _mm256_loadu_si256((const __m256i *)m);
  const __m256i lv = _mm256_loadu_si256((const __m256i *)l);
  const __m256i c30 = _mm256_set1_epi64x(1ll << 30);
  if (!s8) x = _mm256_sllv_epi32(x, lv);            /* uint8: x << l wraps in 32 bits (ar_mbqm) */
  __m256i pe = _mm256_mul_epi32(x, mv);
  __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(mv, 32));
  if (s8) {                                          /* int8: the 64-bit product << l (ar_mbqm_up) */
    pe = _mm256_sllv_epi64(pe, _mm256_and_si256(lv, _mm256_set1_epi64x(0xffffffff)));
    po = _mm256_sllv_epi64(po, _mm256_srli_epi64(lv, 32));
  }
  __m256i he = _mm256_srli_epi64(_mm256_add_epi64(pe, c30), 31);
  __m256i ho = _mm256_srli_epi64(_mm256_add_epi64(po, c30), 31);
  __m256i v = _mm256_blend_epi32(he, _mm256_slli_epi64(ho, 32), 0xAA);
  const __m256i rv = _mm256_loadu_si256((const __m256i *)r);
  const __m256i av = _mm256_loadu_si256((const __m256i *)a);
  if (s8) return _mm256_srav_epi32(_mm256_add_epi32(v, av), rv);
  const __m256i bv = _mm256_loadu_si256((const __m256i *)b);
  const __m256i rem = _mm256_and_si256(v, av);
  const __m256i thr = _mm256_sub_epi32(bv, _mm256_srai_epi32(v, 31));   /* +1 when v < 0 */
  return _mm256_sub_epi32(_mm256_srav_epi32(v, rv), _mm256_cmpgt_epi32(rem, thr));
}

/* Rescale one row of accumulators (vector rescale; needs g->vec_rq). */
AR_TARGET_AVX2 static void qdw_requant_avx2(const qdw_state_t *g, const int32_t *acc, uint8_t *o,
                                            const int32_t *mult, const int32_t *shift) {
  const bool s8 = g->is_int8;
  const int32_t oc = g->oc;
  const int32_t *rr = (const int32_t *)((const uint8_t *)g + g->off_rq), *ra = rr + oc, *rb = ra + oc,
                *rl = rb + oc;
  const __m256i zp = _mm256_set1_epi32(g->out_zp), lo = _mm256_set1_epi32(g->act_lo),
                hi = _mm256_set1_epi32(g->act_hi);
  for (int32_t ox = 0; ox < g->ow; ox++, acc += oc, o += oc) {
    int32_t c = 0;
    for (; c + 16 <= oc; c += 16) {
      const __m256i x0 = _mm256_loadu_si256((const __m256i *)(acc + c));
      const __m256i x1 = _mm256_loadu_si256((const __m256i *)(acc + c + 8));
      __m256i v0 = s8 ? qdw_rq8(x0, mult + c, rr + c, ra + c, rb + c, rl + c, true)
                      : qdw_rq8(x0, mult + c, rr + c, ra + c, rb + c, rl + c, false);
      __m256i v1 = s8 ? qdw_rq8(x1, mult + c + 8, rr + c + 8, ra + c + 8, rb + c + 8, rl + c + 8, true)
                      : qdw_rq8(x1, mult + c + 8, rr + c + 8, ra + c + 8, rb + c + 8, rl + c + 8, false);
      v0 = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(v0, zp), lo), hi);
      v1 = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(v1, zp), lo), hi);
      __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(v0, v1), 0xD8);   /* 16 x int16 */
      __m256i b8 = s8 ? _mm256_packs_epi16(w, w) : _mm256_packus_epi16(w, w);
      b8 = _mm256_permute4x64_epi64(b8, 0xD8);
      _mm_storeu_si128((__m128i *)(o + c), _mm256_castsi256_si128(b8));
    }
    for (; c < oc; c++) {
      int32_t v = s8 ? ar_mbqm_up(acc[c], mult[c], shift[c]) : ar_mbqm(acc[c], mult[c], shift[c]);
      v += g->out_zp;
      v = v < g->act_lo ? g->act_lo : v > g->act_hi ? g->act_hi : v;
      o[c] = s8 ? (uint8_t)(int8_t)v : (uint8_t)v;
    }
  }
}

AR_TARGET_AVX2 static void qdw_ptr_avx2(const qdw_state_t *g, const uint8_t *const *tp, const int16_t *wp,
                                        const int32_t *bias, int32_t *acc, int32_t npix) {
  if (g->is_int8) qdw_ptr_avx2_t(g, tp, wp, bias, acc, npix, true);
  else qdw_ptr_avx2_t(g, tp, wp, bias, acc, npix, false);
}

/* AVX-512 VNNI: 16 channels per zmm, vpdpwssd multiply-adds a tap pair into the accumulator. */
/* Tap k of pixel p: from the pointer table tp, or (direct: a pixel of a row inside the input) at
 * offset taps[k] from the pixel's first tap ip0 + p * pstep. */
#define QDW_TAP(p, k) (direct ? ip0 + (ptrdiff_t)(p) * pstep + taps[k] : tp[(size_t)(p) * np2 + (size_t)(k)])

QDW_TARGET_VNNI static AR_ALWAYS_INLINE void qdw_ptr_vnni_t(const qdw_state_t *g, const uint8_t *const *tp,
                                                 const int16_t *wp,
                                                 const int32_t *bias, int32_t *acc, int32_t npix,
                                                 bool s8, bool direct, const uint8_t *ip0,
                                                 const int64_t *taps, ptrdiff_t pstep) {
  const int32_t oc = g->oc, np = g->npairs, np2 = 2 * np;
  const __m512i zp = _mm512_set1_epi16((int16_t)g->in_zp);
  const __m256i zp8 = _mm256_set1_epi16((int16_t)g->in_zp);
  for (int32_t p = 0; p < npix; p++) {
    const uint8_t *const *tq = direct ? NULL : tp + (size_t)p * np2;   /* direct: oc % 8 == 0, no tail */
    int32_t *a = acc + (size_t)p * oc;
    int32_t c = 0;
    for (; c + 32 <= oc; c += 32) {
      __m512i a0 = _mm512_loadu_si512((const void *)(bias + c));
      __m512i a1 = _mm512_loadu_si512((const void *)(bias + c + 16));
      for (int32_t t = 0; t < np; t++) {
        const __m256i xa = _mm256_loadu_si256((const __m256i *)(QDW_TAP(p, 2 * t) + c));
        const __m256i xb = _mm256_loadu_si256((const __m256i *)(QDW_TAP(p, 2 * t + 1) + c));
        /* within each 128-bit lane: lo = channels 0-7 / 16-23, hi = 8-15 / 24-31 */
        const __m256i l8 = _mm256_unpacklo_epi8(xa, xb), h8 = _mm256_unpackhi_epi8(xa, xb);
        const __m256i q0 = _mm256_permute2x128_si256(l8, h8, 0x20);   /* channels 0-15 */
        const __m256i q1 = _mm256_permute2x128_si256(l8, h8, 0x31);   /* channels 16-31 */
        __m512i v0 = s8 ? _mm512_cvtepi8_epi16(q0) : _mm512_cvtepu8_epi16(q0);
        __m512i v1 = s8 ? _mm512_cvtepi8_epi16(q1) : _mm512_cvtepu8_epi16(q1);
        v0 = _mm512_sub_epi16(v0, zp);
        v1 = _mm512_sub_epi16(v1, zp);
        const int16_t *wq = wp + ((size_t)t * oc + c) * 2;
        a0 = _mm512_dpwssd_epi32(a0, v0, _mm512_loadu_si512((const void *)wq));
        a1 = _mm512_dpwssd_epi32(a1, v1, _mm512_loadu_si512((const void *)(wq + 32)));
      }
      _mm512_storeu_si512((void *)(a + c), a0);
      _mm512_storeu_si512((void *)(a + c + 16), a1);
    }
    for (; c + 16 <= oc; c += 16) {
      __m512i a0 = _mm512_loadu_si512((const void *)(bias + c));
      for (int32_t t = 0; t < np; t++) {
        const __m128i xa = _mm_loadu_si128((const __m128i *)(QDW_TAP(p, 2 * t) + c));
        const __m128i xb = _mm_loadu_si128((const __m128i *)(QDW_TAP(p, 2 * t + 1) + c));
        const __m256i q = _mm256_set_m128i(_mm_unpackhi_epi8(xa, xb), _mm_unpacklo_epi8(xa, xb));
        __m512i v = s8 ? _mm512_cvtepi8_epi16(q) : _mm512_cvtepu8_epi16(q);
        v = _mm512_sub_epi16(v, zp);
        const int16_t *wq = wp + ((size_t)t * oc + c) * 2;
        a0 = _mm512_dpwssd_epi32(a0, v, _mm512_loadu_si512((const void *)wq));
      }
      _mm512_storeu_si512((void *)(a + c), a0);
    }
    for (; c + 8 <= oc; c += 8) {
      __m256i a0 = _mm256_loadu_si256((const __m256i *)(bias + c));
      for (int32_t t = 0; t < np; t++) {
        const __m128i xa = _mm_loadl_epi64((const __m128i *)(QDW_TAP(p, 2 * t) + c));
        const __m128i xb = _mm_loadl_epi64((const __m128i *)(QDW_TAP(p, 2 * t + 1) + c));
        const __m128i l8 = _mm_unpacklo_epi8(xa, xb);
        __m256i l = s8 ? _mm256_cvtepi8_epi16(l8) : _mm256_cvtepu8_epi16(l8);
        l = _mm256_sub_epi16(l, zp8);
        const int16_t *wq = wp + ((size_t)t * oc + c) * 2;
        a0 = _mm256_dpwssd_epi32(a0, l, _mm256_loadu_si256((const __m256i *)wq));
      }
      _mm256_storeu_si256((__m256i *)(a + c), a0);
    }
    if (!direct && c < oc) {
      const int16_t *w = (const int16_t *)((const uint8_t *)g + g->off_w);
      qdw_ptr_tail(g, tq, w, bias, a, 1, c, s8);
    }
  }
}

/* Rescale one row of accumulators, 16 channels per zmm (needs g->vec_rq): channel blocks outer,
 * so each block's constants are made once per row; one 64-bit arithmetic shift per lane does both
 * rounding steps (floor(floor(a) / b) = floor(a / b)): int8 (ar_mbqm_up)
 * ((x m) << l + 2^30 + 2^(30+r)) >> (31 + r); uint8 (ar_mbqm) ((x << l) m + 2^30 + 2^(30+r)
 * - [(x << l) m < -2^30] 2^31) >> (31 + r), the bracket sending negative ties away from zero; the
 * 2^(30+r) term only where r > 0. The same bits as qdw_requant / qdw_rq8. */
/* The per-lane constants of the 512-bit rescale for one vector of channels (keep: its lanes). */
typedef struct {
  __m512i m, m_odd, l, l_e, l_o, k_e, k_o, n_e, n_o, zp, lo, hi;
  __mmask8 rpos_e, rpos_o;
} qdw_rq512_t;

QDW_TARGET_VNNI static AR_ALWAYS_INLINE void qdw_rq512_init(qdw_rq512_t *k, const qdw_state_t *g,
                                                            const int32_t *mult, const int32_t *rr,
                                                            const int32_t *rl, __mmask16 keep) {
  const __m512i zero = _mm512_setzero_si512(), low32 = _mm512_set1_epi64(0xFFFFFFFFll);
  const __m512i c30 = _mm512_set1_epi64(1ll << 30), c31s = _mm512_set1_epi64(31);
  k->m = _mm512_maskz_loadu_epi32(keep, mult);
  k->m_odd = _mm512_srli_epi64(k->m, 32);
  const __m512i r = _mm512_maskz_loadu_epi32(keep, rr);
  k->l = _mm512_maskz_loadu_epi32(keep, rl);
  const __m512i r_e = _mm512_and_si512(r, low32), r_o = _mm512_srli_epi64(r, 32);
  k->l_e = _mm512_and_si512(k->l, low32);
  k->l_o = _mm512_srli_epi64(k->l, 32);
  k->rpos_e = _mm512_cmpgt_epi64_mask(r_e, zero);
  k->rpos_o = _mm512_cmpgt_epi64_mask(r_o, zero);
  k->k_e = _mm512_add_epi64(c30, _mm512_maskz_mov_epi64(k->rpos_e, _mm512_sllv_epi64(c30, r_e)));
  k->k_o = _mm512_add_epi64(c30, _mm512_maskz_mov_epi64(k->rpos_o, _mm512_sllv_epi64(c30, r_o)));
  k->n_e = _mm512_add_epi64(r_e, c31s);
  k->n_o = _mm512_add_epi64(r_o, c31s);
  k->zp = _mm512_set1_epi32(g->out_zp);
  k->lo = _mm512_set1_epi32(g->act_lo);
  k->hi = _mm512_set1_epi32(g->act_hi);
}

/* 16 accumulators rescaled, + z_out, clamped (int32 lanes; see qdw_requant_512). */
QDW_TARGET_VNNI static AR_ALWAYS_INLINE __m512i qdw_rq512(const qdw_rq512_t *k, __m512i x, bool s8) {
  const __m512i c31 = _mm512_set1_epi64(1ll << 31), lim = _mm512_set1_epi64(-(1ll << 30));
  if (!s8) x = _mm512_sllv_epi32(x, k->l);
  __m512i pe = _mm512_mul_epi32(x, k->m), po = _mm512_mul_epi32(_mm512_srli_epi64(x, 32), k->m_odd);
  __m512i te, to;
  if (s8) {
    pe = _mm512_sllv_epi64(pe, k->l_e);
    po = _mm512_sllv_epi64(po, k->l_o);
    te = _mm512_add_epi64(pe, k->k_e);
    to = _mm512_add_epi64(po, k->k_o);
  } else {
    te = _mm512_add_epi64(pe, k->k_e);
    to = _mm512_add_epi64(po, k->k_o);
    te = _mm512_mask_sub_epi64(te, _mm512_cmplt_epi64_mask(pe, lim) & k->rpos_e, te, c31);
    to = _mm512_mask_sub_epi64(to, _mm512_cmplt_epi64_mask(po, lim) & k->rpos_o, to, c31);
  }
  const __m512i qe = _mm512_srav_epi64(te, k->n_e), qo = _mm512_srav_epi64(to, k->n_o);
  __m512i q = _mm512_mask_blend_epi32(0xAAAA, qe, _mm512_slli_epi64(qo, 32));
  return _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(q, k->zp), k->lo), k->hi);
}

QDW_TARGET_VNNI static void qdw_requant_512(const qdw_state_t *g, const int32_t *acc, uint8_t *o,
                                            const int32_t *mult) {
  const bool s8 = g->is_int8;
  /* flat_rq: the row as ceil(OW * OC / 16) "pixels" of 16 lanes, lane j channel j % OC */
  const bool flat = g->flat_rq;
  const int32_t oc = flat ? 16 : g->oc, total = g->ow * g->oc;
  const int32_t ow = flat ? (total + 15) / 16 : g->ow;
  const int32_t *rr = (const int32_t *)((const uint8_t *)g + g->off_rq), *rl = rr + 3 * g->oc;
  if (flat) {
    const int32_t *rx = (const int32_t *)((const uint8_t *)g + g->off_rqx);
    mult = rx; rr = rx + 16; rl = rx + 32;
  }
  for (int32_t c = 0; c < oc; c += 16) {
    const __mmask16 keep = oc - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (oc - c)) - 1u);
    qdw_rq512_t k;
    qdw_rq512_init(&k, g, mult + c, rr + c, rl + c, keep);
    for (int32_t ox = 0; ox < ow; ox++) {
      const __mmask16 keep_px = flat && total - ox * 16 < 16 ? (__mmask16)((1u << (total - ox * 16)) - 1u) : keep;
      const __m512i x = _mm512_maskz_loadu_epi32(keep_px, acc + (size_t)ox * oc + c);
      const __m512i q = s8 ? qdw_rq512(&k, x, true) : qdw_rq512(&k, x, false);
      _mm512_mask_cvtepi32_storeu_epi8(o + (size_t)ox * oc + c, keep_px, q);
    }
  }
}

/* c1x: output row oy of one image, straight from its padded copy pb (already unsigned): 16 / OC
 * pixels per vector, lane j = channel j % OC of pixel j / OC, so the 16 bytes a vector stores are
 * those pixels' outputs, contiguous. Tap group (ky, q) of a pixel is the 4 bytes from column
 * ox*SW + 4q of padded row oy*SH + ky*DH, broadcast to its lanes (vpdpbusd u8 x s8; the bytes past
 * KW meet weight 0). The sum is the GEMM's, bias folded the same way; then the rescale of
 * qdw_requant_512. */
QDW_TARGET_VNNI static AR_ALWAYS_INLINE void qdw_c1_vnni_t(const qdw_state_t *g, const uint8_t *pb, int32_t oy,
                                                           uint8_t *out, bool s8) {
  enum { U = 4, KH_MAX = 64 };   /* vectors in flight */
  const uint8_t *base = (const uint8_t *)g;
  const uint8_t *b16 = base + g->off_b16;
  const int32_t oc = g->oc, per = 16 / oc, gpr = g->kw4 / 4, sw = g->sw, ow = g->ow;
  const __m512i bias = _mm512_loadu_si512((const void *)(base + g->off_bias16));
  const int32_t *rx = (const int32_t *)(base + g->off_rqx);
  qdw_rq512_t k;
  qdw_rq512_init(&k, g, rx, rx + 16, rx + 32, 0xFFFF);
  const __mmask16 lane_rows[4] = {(__mmask16)((1u << oc) - 1u), (__mmask16)(((1u << oc) - 1u) << oc),
                                  (__mmask16)(((1u << oc) - 1u) << (2 * oc)),
                                  (__mmask16)(((1u << oc) - 1u) << (3 * oc))};
  const uint8_t *rows[KH_MAX];
  for (int32_t ky = 0; ky < g->kh; ky++) rows[ky] = pb + (size_t)(oy * g->sh + ky * g->dh) * g->wp;
  int32_t ox = 0;
  for (; ox + U * per <= ow; ox += U * per) {
    __m512i acc[U];
    for (int u = 0; u < U; u++) acc[u] = bias;
    const uint8_t *w = b16;
    for (int32_t ky = 0; ky < g->kh; ky++)
      for (int32_t q = 0; q < gpr; q++, w += 64) {
        const __m512i wv = _mm512_loadu_si512((const void *)w);
        const uint8_t *src = rows[ky] + (size_t)ox * sw + 4u * (size_t)q;
        for (int u = 0; u < U; u++) {
          uint32_t v;
          memcpy(&v, src + (size_t)(u * per) * sw, 4);
          __m512i x = _mm512_set1_epi32((int)v);
          for (int i = 1; i < per; i++) {
            memcpy(&v, src + (size_t)(u * per + i) * sw, 4);
            x = _mm512_mask_set1_epi32(x, lane_rows[i], (int)v);
          }
          acc[u] = _mm512_dpbusd_epi32(acc[u], x, wv);
        }
      }
    for (int u = 0; u < U; u++) {
      const __m512i o = s8 ? qdw_rq512(&k, acc[u], true) : qdw_rq512(&k, acc[u], false);
      _mm_storeu_si128((__m128i *)(out + (size_t)(ox + u * per) * oc), _mm512_cvtepi32_epi8(o));
    }
  }
  for (; ox < ow; ox += per) {   /* the last pixels, one vector at a time (missing pixels: lanes unused) */
    const int32_t np = AR_MIN(per, ow - ox);
    __m512i acc = bias;
    const uint8_t *w = b16;
    for (int32_t ky = 0; ky < g->kh; ky++)
      for (int32_t q = 0; q < gpr; q++, w += 64) {
        const uint8_t *src = rows[ky] + (size_t)ox * sw + 4u * (size_t)q;
        uint32_t v;
        memcpy(&v, src, 4);
        __m512i x = _mm512_set1_epi32((int)v);
        for (int i = 1; i < np; i++) {
          memcpy(&v, src + (size_t)i * sw, 4);
          x = _mm512_mask_set1_epi32(x, lane_rows[i], (int)v);
        }
        acc = _mm512_dpbusd_epi32(acc, x, _mm512_loadu_si512((const void *)w));
      }
    const __m512i o = s8 ? qdw_rq512(&k, acc, true) : qdw_rq512(&k, acc, false);
    _mm_mask_storeu_epi8(out + (size_t)ox * oc, (__mmask16)((1u << (np * oc)) - 1u), _mm512_cvtepi32_epi8(o));
  }
}

QDW_TARGET_VNNI static void qdw_c1_vnni(const qdw_state_t *g, const uint8_t *pb, int32_t oy, uint8_t *out) {
  if (g->is_int8) qdw_c1_vnni_t(g, pb, oy, out, true);
  else qdw_c1_vnni_t(g, pb, oy, out, false);
}

/* grp: pixels [ox0, ox1) of a row (inside the input horizontally, stride 1), 32 / C at a time: the
 * 32 bytes from a group's first pixel's tap hold that tap of all its pixels (the next pixel's is C
 * bytes on), or 32 bytes of zbuf above and below the image; lane j is channel j % C, with the
 * weights and bias laid out so at init. Pixels past the last whole group are left to the caller.
 * Returns the first pixel not done. */
QDW_TARGET_VNNI static AR_ALWAYS_INLINE int32_t qdw_grp_vnni_t(const qdw_state_t *g, const uint8_t *const *tp,
                                                              int32_t *acc, int32_t ox0, int32_t ox1,
                                                              bool s8, bool direct, const uint8_t *ip0,
                                                              const int64_t *taps, ptrdiff_t pstep) {
  const int32_t np = g->npairs, np2 = 2 * np, per = 32 / g->c;
  const int16_t *wpx = (const int16_t *)((const uint8_t *)g + g->off_wpx);
  const int32_t *bx = (const int32_t *)((const uint8_t *)g + g->off_biasx);
  const __m512i zp = _mm512_set1_epi16((int16_t)g->in_zp);
  const __m512i b0 = _mm512_loadu_si512((const void *)bx), b1 = _mm512_loadu_si512((const void *)(bx + 16));
  int32_t ox = ox0;
  for (; ox + per <= ox1; ox += per) {
    __m512i a0 = b0, a1 = b1;
    for (int32_t t = 0; t < np; t++) {
      const __m256i xa = _mm256_loadu_si256((const __m256i *)QDW_TAP(ox, 2 * t));
      const __m256i xb = _mm256_loadu_si256((const __m256i *)QDW_TAP(ox, 2 * t + 1));
      const __m256i l8 = _mm256_unpacklo_epi8(xa, xb), h8 = _mm256_unpackhi_epi8(xa, xb);
      const __m256i q0 = _mm256_permute2x128_si256(l8, h8, 0x20);   /* lanes 0-15 */
      const __m256i q1 = _mm256_permute2x128_si256(l8, h8, 0x31);   /* lanes 16-31 */
      __m512i v0 = s8 ? _mm512_cvtepi8_epi16(q0) : _mm512_cvtepu8_epi16(q0);
      __m512i v1 = s8 ? _mm512_cvtepi8_epi16(q1) : _mm512_cvtepu8_epi16(q1);
      v0 = _mm512_sub_epi16(v0, zp);
      v1 = _mm512_sub_epi16(v1, zp);
      const int16_t *wq = wpx + (size_t)t * 64;
      a0 = _mm512_dpwssd_epi32(a0, v0, _mm512_loadu_si512((const void *)wq));
      a1 = _mm512_dpwssd_epi32(a1, v1, _mm512_loadu_si512((const void *)(wq + 32)));
    }
    int32_t *a = acc + (size_t)ox * g->c;
    _mm512_storeu_si512((void *)a, a0);
    _mm512_storeu_si512((void *)(a + 16), a1);
  }
  return ox;
}

/* Every pixel of output row oy on AVX-512 VNNI. A row whose taps are all inside the input
 * vertically, with 8-channel blocks (or grp), reads its interior columns [ox_lo, ox_hi) at the
 * fixed tap offsets from each pixel's first tap, and only its border pixels through the pointer
 * table; other rows take the table for every pixel. grp rows run 32 / C interior pixels per pass.
 * The same sums whichever way a tap is found. */
QDW_TARGET_VNNI static AR_ALWAYS_INLINE void qdw_row_vnni_t(const qdw_state_t *g, const uint8_t *in_b,
                                                            const uint8_t *zbuf, const int64_t *taps,
                                                            int32_t oy, int32_t ox_lo, int32_t ox_hi,
                                                            const uint8_t **tp, const int16_t *wp,
                                                            const int32_t *bias, int32_t *acc, bool s8) {
  const int32_t np2 = 2 * g->npairs, oc = g->oc;
  const int32_t iy0 = oy * g->sh - g->pt;
  const bool row_in = iy0 >= 0 && iy0 + (g->kh - 1) * g->dh <= g->h - 1;
  const bool direct = row_in && (oc % 8 == 0 || g->grp) && ox_lo < ox_hi;
  qdw_row_ptrs(g, in_b, zbuf, taps, oy, ox_lo, ox_hi, tp, direct);
  if (!direct) {
    int32_t ox = 0;
    if (g->grp) {
      if (ox_lo > 0) qdw_ptr_vnni_t(g, tp, wp, bias, acc, ox_lo, s8, false, NULL, NULL, 0);
      ox = qdw_grp_vnni_t(g, tp, acc, ox_lo, ox_hi, s8, false, NULL, NULL, 0);
    }
    qdw_ptr_vnni_t(g, tp + (size_t)ox * np2, wp, bias, acc + (size_t)ox * oc, g->ow - ox, s8, false, NULL,
                   NULL, 0);
    return;
  }
  if (ox_lo > 0) qdw_ptr_vnni_t(g, tp, wp, bias, acc, ox_lo, s8, false, NULL, NULL, 0);
  const ptrdiff_t pstep = (ptrdiff_t)g->sw * g->c;
  /* pixel ox's first tap; QDW_TAP(p, k) of the kernels below counts p from ip0's pixel */
  const uint8_t *ip0 = in_b + ((ptrdiff_t)iy0 * g->w - g->pl) * g->c;
  int32_t ox = ox_lo;
  if (g->grp) ox = qdw_grp_vnni_t(g, NULL, acc, ox_lo, ox_hi, s8, true, ip0, taps, pstep);
  if (ox < ox_hi) {
    if (oc % 8 == 0)
      qdw_ptr_vnni_t(g, NULL, wp, bias, acc + (size_t)ox * oc, ox_hi - ox, s8, true, ip0 + ox * pstep, taps,
                     pstep);
    else   /* grp with C < 8 (C % 8 != 0): the last interior pixels through their table entries */
      for (int32_t x = ox; x < ox_hi; x++) {
        const uint8_t **t = tp + (size_t)x * np2;
        for (int32_t k = 0; k < np2; k++) t[k] = ip0 + x * pstep + taps[k];
        qdw_ptr_vnni_t(g, tp + (size_t)x * np2, wp, bias, acc + (size_t)x * oc, 1, s8, false, NULL, NULL, 0);
      }
  }
  if (ox_hi < g->ow)
    qdw_ptr_vnni_t(g, tp + (size_t)ox_hi * np2, wp, bias, acc + (size_t)ox_hi * oc, g->ow - ox_hi, s8, false,
                   NULL, NULL, 0);
}

QDW_TARGET_VNNI static void qdw_row_vnni(const qdw_state_t *g, const uint8_t *in_b, const uint8_t *zbuf,
                                         const int64_t *taps, int32_t oy, int32_t ox_lo, int32_t ox_hi,
                                         const uint8_t **tp, const int16_t *wp, const int32_t *bias,
                                         int32_t *acc) {
  if (g->is_int8) qdw_row_vnni_t(g, in_b, zbuf, taps, oy, ox_lo, ox_hi, tp, wp, bias, acc, true);
  else qdw_row_vnni_t(g, in_b, zbuf, taps, oy, ox_lo, ox_hi, tp, wp, bias, acc, false);
}

#endif

#if QDW_NEON
/* ASIMD: npix pixels through the pointer table tp, multiplier 1. Per tap and 16 channels: the
 * bytes less the input zero point as int16 (usubl / ssubl: [-255, 255], exact), smlal with the
 * [tap][channel] int16 weights (w - z_w) into 4 x 4 int32 accumulators that stay in registers over
 * the taps; the same int32 sums as the portable loop. */
static AR_ALWAYS_INLINE void qdw_ptr_neon_t(const qdw_state_t *g, const uint8_t *const *tp,
                                            const int16_t *w, const int32_t *bias, int32_t *acc,
                                            int32_t npix, bool s8) {
  const int32_t oc = g->oc, nt = g->ntaps, np2 = 2 * g->npairs;
  const int8x16_t zs = vdupq_n_s8((int8_t)g->in_zp);
  const uint8x16_t zu = vdupq_n_u8((uint8_t)g->in_zp);
  for (int32_t p = 0; p < npix; p++) {
    const uint8_t *const *tq = tp + (size_t)p * np2;
    int32_t *a = acc + (size_t)p * oc;
    int32_t c = 0;
    for (; c + 16 <= oc; c += 16) {
      int32x4_t a0 = vld1q_s32(bias + c), a1 = vld1q_s32(bias + c + 4);
      int32x4_t a2 = vld1q_s32(bias + c + 8), a3 = vld1q_s32(bias + c + 12);
      const int16_t *wk = w + c;
      for (int32_t k = 0; k < nt; k++, wk += oc) {
        int16x8_t xl, xh;
        if (s8) {
          const int8x16_t x = vld1q_s8((const int8_t *)tq[k] + c);
          xl = vsubl_s8(vget_low_s8(x), vget_low_s8(zs));
          xh = vsubl_high_s8(x, zs);
        } else {
          const uint8x16_t x = vld1q_u8(tq[k] + c);
          xl = vreinterpretq_s16_u16(vsubl_u8(vget_low_u8(x), vget_low_u8(zu)));
          xh = vreinterpretq_s16_u16(vsubl_high_u8(x, zu));
        }
        const int16x8_t w0 = vld1q_s16(wk), w1 = vld1q_s16(wk + 8);
        a0 = vmlal_s16(a0, vget_low_s16(xl), vget_low_s16(w0));
        a1 = vmlal_high_s16(a1, xl, w0);
        a2 = vmlal_s16(a2, vget_low_s16(xh), vget_low_s16(w1));
        a3 = vmlal_high_s16(a3, xh, w1);
      }
      vst1q_s32(a + c, a0);
      vst1q_s32(a + c + 4, a1);
      vst1q_s32(a + c + 8, a2);
      vst1q_s32(a + c + 12, a3);
    }
    for (; c + 8 <= oc; c += 8) {
      int32x4_t a0 = vld1q_s32(bias + c), a1 = vld1q_s32(bias + c + 4);
      const int16_t *wk = w + c;
      for (int32_t k = 0; k < nt; k++, wk += oc) {
        int16x8_t xl;
        if (s8) xl = vsubl_s8(vld1_s8((const int8_t *)tq[k] + c), vget_low_s8(zs));
        else xl = vreinterpretq_s16_u16(vsubl_u8(vld1_u8(tq[k] + c), vget_low_u8(zu)));
        const int16x8_t w0 = vld1q_s16(wk);
        a0 = vmlal_s16(a0, vget_low_s16(xl), vget_low_s16(w0));
        a1 = vmlal_high_s16(a1, xl, w0);
      }
      vst1q_s32(a + c, a0);
      vst1q_s32(a + c + 4, a1);
    }
    if (c < oc) qdw_ptr_tail(g, tq, w, bias, a, 1, c, s8);
  }
}

/* One channel of the rescale, scalar (the tails of qdw_requant_neon). */
static AR_ALWAYS_INLINE uint8_t qdw_rq1(const qdw_state_t *g, int32_t x, int32_t m, int32_t sh, bool s8) {
  int32_t v = (s8 ? ar_mbqm_up(x, m, sh) : ar_mbqm(x, m, sh)) + g->out_zp;
  v = v < g->act_lo ? g->act_lo : v > g->act_hi ? g->act_hi : v;
  return (uint8_t)v;
}

/* Rescale one row of accumulators, 8 channels per step (channel blocks outer, so each block's
 * constants are made once per row): kernels/requant_neon.h's exact ar_mbqm_up (int8) / ar_mbqm
 * (uint8), then the zero point and the clamp on saturated int16 / bytes. An int8 block whose
 * x << shift overflows (no valid model) takes the scalar 64-bit form. */
static AR_ALWAYS_INLINE void qdw_requant_neon_t(const qdw_state_t *g, const int32_t *acc, uint8_t *o,
                                                const int32_t *mult, const int32_t *shift, bool s8) {
  const int32_t oc = g->oc, ow = g->ow;
  const int16x8_t zo = vdupq_n_s16((int16_t)g->out_zp);
  const int8x8_t lo_s = vdup_n_s8((int8_t)g->act_lo), hi_s = vdup_n_s8((int8_t)g->act_hi);
  const uint8x8_t lo_u = vdup_n_u8((uint8_t)g->act_lo), hi_u = vdup_n_u8((uint8_t)g->act_hi);
  int32_t c = 0;
  for (; c + 8 <= oc; c += 8) {
    const int32x4_t m0 = vld1q_s32(mult + c), m1 = vld1q_s32(mult + c + 4);
    const int32x4_t s0 = vld1q_s32(shift + c), s1 = vld1q_s32(shift + c + 4);
    const int32x4_t l0 = ar_neon_left(s0), l1 = ar_neon_left(s1);
    const int32x4_t r0 = ar_neon_rneg(s0), r1 = ar_neon_rneg(s1);
    const bool any_left = vmaxvq_s32(vmaxq_s32(l0, l1)) > 0;
    for (int32_t ox = 0; ox < ow; ox++) {
      const int32_t *x = acc + (size_t)ox * oc + c;
      uint8_t *op = o + (size_t)ox * oc + c;
      const int32x4_t x0 = vld1q_s32(x), x1 = vld1q_s32(x + 4);
      int32x4_t q0, q1;
      if (s8) {
        if (any_left && (!ar_neon_shl_exact(x0, l0) || !ar_neon_shl_exact(x1, l1))) {
          for (int j = 0; j < 8; j++) op[j] = qdw_rq1(g, x[j], mult[c + j], shift[c + j], true);
          continue;
        }
        q0 = ar_neon_mbqm_up(x0, m0, l0, r0);
        q1 = ar_neon_mbqm_up(x1, m1, l1, r1);
      } else {
        q0 = ar_neon_mbqm(x0, m0, l0, r0);
        q1 = ar_neon_mbqm(x1, m1, l1, r1);
      }
      const int16x8_t h = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(q0), q1), zo);
      if (s8) vst1_s8((int8_t *)op, vmin_s8(vmax_s8(vqmovn_s16(h), lo_s), hi_s));
      else vst1_u8(op, vmin_u8(vmax_u8(vqmovun_s16(h), lo_u), hi_u));
    }
  }
  for (; c < oc; c++)
    for (int32_t ox = 0; ox < ow; ox++)
      o[(size_t)ox * oc + c] = qdw_rq1(g, acc[(size_t)ox * oc + c], mult[c], shift[c], s8);
}
#endif

/* Output rows [r0, r1) of all images (row r = image r / OH, output row r % OH). */
static AR_ALWAYS_INLINE void qdw_body(const qdw_state_t *g, const uint8_t *in, uint8_t *out,
                                      uint8_t *scratch, int isa, bool s8, int64_t r0, int64_t r1) {
  const uint8_t *base = (const uint8_t *)g;
  const int32_t *mult = (const int32_t *)(base + g->off_mult);
  const int32_t *shift = (const int32_t *)(base + g->off_shift);
  const int32_t *bias = (const int32_t *)(base + g->off_bias);
  const int16_t *w = (const int16_t *)(base + g->off_w);
  const int32_t oc = g->oc;
  int32_t *acc = (int32_t *)scratch;
#if QDW_PTRS
  const int64_t *taps = (const int64_t *)(base + g->off_taps);
  const int16_t *wp = (const int16_t *)(base + g->off_wp);
  const uint8_t **tp = (const uint8_t **)(scratch + align64((uint64_t)g->ow * (uint64_t)oc * sizeof(int32_t)));
  uint8_t *zbuf = (uint8_t *)tp + align64((uint64_t)g->ow * 2u * (uint64_t)g->npairs * sizeof(void *));
  /* Interior columns: every tap inside the input horizontally. */
  int32_t ox_lo = (g->pl + g->sw - 1) / g->sw;
  int32_t last = g->w - 1 - (g->kw - 1) * g->dw + g->pl;
  int32_t ox_hi = last >= 0 ? last / g->sw + 1 : 0;
  if (ox_hi > g->ow) ox_hi = g->ow;
  if (ox_lo > ox_hi) ox_lo = ox_hi;
  const bool simd = isa > 0 && g->mult == 1;
  if (simd) memset(zbuf, (uint8_t)g->in_zp, (size_t)AR_MAX(g->c, 32));   /* grp reads 32 */
#else
  const bool simd = false;
  (void)isa;
#endif
  for (int64_t r = r0; r < r1; r++) {
    const int32_t b = (int32_t)(r / g->oh), oy = (int32_t)(r % g->oh);
    const uint8_t *in_b = in + (size_t)b * g->h * g->w * g->c;
    uint8_t *orow = out + (((size_t)b * g->oh + oy) * g->ow) * oc;
    if (!simd) {
      qdw_checked(g, in_b, w, bias, acc, oy, 0, g->ow, s8);
    } else {
#if AR_HAVE_AVX2_CLONE
      if (isa == 2) {
        qdw_row_vnni(g, in_b, zbuf, taps, oy, ox_lo, ox_hi, tp, wp, bias, acc);
      } else {
        qdw_row_ptrs(g, in_b, zbuf, taps, oy, ox_lo, ox_hi, tp, false);
        qdw_ptr_avx2(g, tp, wp, bias, acc, g->ow);
      }
#elif QDW_NEON
      (void)wp;
      qdw_row_ptrs(g, in_b, zbuf, taps, oy, ox_lo, ox_hi, tp, false);
      qdw_ptr_neon_t(g, tp, w, bias, acc, g->ow, s8);
#endif
    }
#if AR_HAVE_AVX2_CLONE
    if (isa == 2 && g->vec_rq) qdw_requant_512(g, acc, orow, mult);
    else if (isa > 0 && g->vec_rq) qdw_requant_avx2(g, acc, orow, mult, shift);
    else
#elif QDW_NEON
    if (isa > 0 && g->vec_rq) qdw_requant_neon_t(g, acc, orow, mult, shift, s8);
    else
#endif
      qdw_requant(g, acc, orow, mult, shift, s8);
  }
}

static void qdw_run_base(const qdw_state_t *g, const uint8_t *in, uint8_t *out, uint8_t *scratch, int isa,
                         int64_t r0, int64_t r1) {
  if (g->is_int8) qdw_body(g, in, out, scratch, isa, true, r0, r1);
  else qdw_body(g, in, out, scratch, isa, false, r0, r1);
}

#if AR_HAVE_AVX2_CLONE
AR_TARGET_AVX2 static void qdw_run_avx2(const qdw_state_t *g, const uint8_t *in, uint8_t *out,
                                        uint8_t *scratch, int isa, int64_t r0, int64_t r1) {
  if (g->is_int8) qdw_body(g, in, out, scratch, isa, true, r0, r1);
  else qdw_body(g, in, out, scratch, isa, false, r0, r1);
}
#endif

/* The GEMM route's padded input: every image's one channel copied once per eval into a frame of
 * the input zero point, HP x WP bytes per image (state hp, wp), so that an output pixel's taps are
 * read without bounds checks: tap (ky, kx) of pixel (oy, ox) at row oy*SH + ky*DH, column
 * ox*SW + kx*DW of the frame, and 8 bytes from a filter row's first tap are inside it. */
static void qdw_pad_input(const qdw_state_t *g, const uint8_t *in, uint8_t *pad) {
  const size_t wp = (size_t)g->wp, w = (size_t)g->w;
  const uint8_t flip = g->is_int8 ? 0x80 : 0;   /* int8: stored as x + 128 (init's a_xor note) */
  const uint8_t zb = (uint8_t)((uint8_t)g->in_zp ^ flip);
  for (int32_t b = 0; b < g->n; b++) {
    uint8_t *pb = pad + (size_t)b * g->hp * wp;
    const uint8_t *ib = in + (size_t)b * g->h * w;
    memset(pb, zb, (size_t)g->pt * wp);
    for (int32_t y = 0; y < g->h; y++) {
      uint8_t *d = pb + (size_t)(g->pt + y) * wp;
      const uint8_t *src = ib + (size_t)y * w;
      memset(d, zb, (size_t)g->pl);
      if (!flip) {
        memcpy(d + g->pl, src, w);
      } else {   /* 8 bytes per step (the compiler does not vectorize the byte loop at -O2) */
        size_t x = 0;
        for (; x + 8 <= w; x += 8) {
          uint64_t v;
          memcpy(&v, src + x, 8);
          v ^= 0x8080808080808080ull;
          memcpy(d + (size_t)g->pl + x, &v, 8);
        }
        for (; x < w; x++) d[(size_t)g->pl + x] = src[x] ^ flip;
      }
      memset(d + g->pl + w, zb, wp - (size_t)g->pl - w);
    }
    memset(pb + (size_t)(g->pt + g->h) * wp, zb, (size_t)(g->hp - g->pt - g->h) * wp);
  }
}

/* The im2col rows (kp bytes each, zeros past KH*KW, where B is 0) of the OW pixels of output row
 * oy, read from the padded image pb. With dilation 1 and KW <= 8 each filter row is one 8-byte
 * move: it writes up to 7 bytes past the filter row's taps, which the next filter row, the zero
 * padding or the next pixel's row (built after it) overwrites; the tile has 8 bytes of slack for
 * the last. */
static void qdw_im2col_orow(const qdw_state_t *g, const uint8_t *pb, int32_t oy, uint8_t *row) {
  const size_t kp = (size_t)g->kp, kw = (size_t)g->kw, wp = (size_t)g->wp;
  const uint8_t *top = pb + (size_t)oy * g->sh * wp;
  const size_t dh = (size_t)g->dh * wp;
  const bool moves = g->dw == 1 && g->kw <= 8;
  for (int32_t ox = 0; ox < g->ow; ox++) {
    uint8_t *d = row + (size_t)ox * kp;
    const uint8_t *s = top + (size_t)ox * g->sw;
    if (moves) {
      for (int32_t ky = 0; ky < g->kh; ky++, d += kw, s += dh) {
        uint64_t v;
        memcpy(&v, s, 8);
        memcpy(d, &v, 8);
      }
    } else {
      for (int32_t ky = 0; ky < g->kh; ky++, d += kw, s += dh)
        for (int32_t kx = 0; kx < g->kw; kx++) d[kx] = s[(size_t)kx * g->dw];
    }
    for (int32_t i = g->ntaps; i < g->kp; i++) row[(size_t)ox * kp + (size_t)i] = 0;
  }
}

/* GEMM route: output rows [r0, r1) (row r = image r / OH, output row r % OH) from the padded
 * input, tile_oy rows at a time through an im2col tile in `col`. Output rows are contiguous, so a
 * tile is one GEMM of tile_oy * OW rows writing straight into the output. */
static void qdw_gemm_rows(const qdw_state_t *g, const uint8_t *pad, uint8_t *out, uint8_t *col,
                          int64_t r0, int64_t r1, bool c1x) {
  const uint8_t *base = (const uint8_t *)g;
  const size_t kp = (size_t)g->kp, oc = (size_t)g->oc;
#if AR_HAVE_AVX2_CLONE
  if (c1x) {   /* no im2col: the kernel reads the padded input */
    for (int64_t r = r0; r < r1; r++)
      qdw_c1_vnni(g, pad + (size_t)(r / g->oh) * g->hp * g->wp, (int32_t)(r % g->oh), out + (size_t)r * g->ow * oc);
    return;
  }
#else
  (void)c1x;
#endif
  for (int64_t t0 = r0; t0 < r1; t0 += g->tile_oy) {
    const int64_t t1 = AR_MIN(r1, t0 + g->tile_oy);
    uint8_t *row = col;
    for (int64_t r = t0; r < t1; r++, row += (size_t)g->ow * kp) {
      const int32_t b = (int32_t)(r / g->oh), oy = (int32_t)(r % g->oh);
      qdw_im2col_orow(g, pad + (size_t)b * g->hp * g->wp, oy, row);
    }
    ar_qgemm_run(&g->qg, base + g->off_packed, (const int32_t *)(base + g->off_gbias),
                 (const int32_t *)(base + g->off_gmult), (const int32_t *)(base + g->off_gshift), col,
                 kp, (t1 - t0) * g->ow, out + (size_t)t0 * g->ow * oc, oc);
  }
}

typedef struct {
  const qdw_state_t *g;
  const uint8_t *in;
  uint8_t *out;
  int isa;
  uint8_t *slots;              /* scratch of slot 0; slot s at slots + s * slot_bytes */
  uint64_t slot_bytes;
  const uint8_t *pad;          /* GEMM route: the padded input (qdw_pad_input) */
} qdw_ctx_t;

/* Output rows [r0, r1) on the scratch of their slot. */
static void qdw_rows(void *ctx, int32_t slot, int64_t r0, int64_t r1) {
  const qdw_ctx_t *c = ctx;
  uint8_t *scratch = c->slots + (uint64_t)slot * c->slot_bytes;
  if (c->isa < 0) { qdw_gemm_rows(c->g, c->pad, c->out, scratch, r0, r1, c->isa == -2); return; }
#if AR_HAVE_AVX2_CLONE
  if (c->isa > 0) qdw_run_avx2(c->g, c->in, c->out, scratch, c->isa, r0, r1);
  else
#endif
    qdw_run_base(c->g, c->in, c->out, scratch, c->isa, r0, r1);
}

void ar__qdw_eval(const ar_node_t *node) {
  qdw_ctx_t c;
  const qdw_state_t *g = node->state;
  c.g = g;
  c.in = node->inputs[0]->data;
  c.out = node->outputs[0]->data;
  /* -1: the GEMM route (kernels/qgemm.h); -2: its c1x form, on AVX-512 VNNI unless the AVX2 loop
   * is forced (which tests use to run the route on each GEMM path) */
  c.isa = qdw_isa();
  if (g->gemm && qdw_isa_forced != 0) c.isa = g->c1x && g->kh <= 64 && c.isa == 2 ? -2 : -1;
  c.slot_bytes = qdw_slot_bytes(g) > 0 ? qdw_slot_bytes(g) : 1;
  uint8_t *at = (uint8_t *)(((uintptr_t)node->scratch + 63u) & ~(uintptr_t)63u);
  c.pad = at;
  if (c.isa < 0) qdw_pad_input(g, c.in, at);   /* once, before the rows are shared out */
  c.slots = at + g->pad_bytes;
  const int32_t slots = (int32_t)((node->scratch_bytes - 64 - g->pad_bytes) / c.slot_bytes);
  const int64_t rows = (int64_t)g->n * g->oh;
  ar_parallel_for_slots(node, rows,
                        ar_parallel_grain(rows, (int64_t)g->ow * g->oc * g->ntaps, QDW_CHUNK_MACS, 1),
                        slots, qdw_rows, &c);
}
