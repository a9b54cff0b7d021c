/* qconv.c - quantized CONV_2D and FULLY_CONNECTED (int8 and uint8), TFLite's builtin-kernel
 * arithmetic (kernels/qconv.h), on the integer GEMM of kernels/qgemm.h.
 *
 * CONV_2D is a GEMM with M = N*OH*OW output pixels, K = KH*KW*I taps and the OHWI filter as the
 * [O, K] right-hand matrix. A 1x1 stride-1 convolution reads the input itself as A (no copy). When
 * a filter row's taps are KW*I contiguous input bytes, a multiple of 4 (every 3x3 layer with I % 4
 * == 0), each A row is given to the GEMM as KH segments read in place (ar_qgemm_run_segments): a
 * filter row above or below the image reads a row of the input zero point, and only a segment that
 * crosses the left or right border is copied (with zero-point taps) into scratch. Otherwise the
 * input patches are laid out (im2col, padding taps = the input zero point) into a planned scratch
 * tile of rows, so the scratch stays bounded and in cache. FULLY_CONNECTED reads
 * its input rows in place (or copies them when I is not a multiple of 4, which the GEMM needs to
 * read whole groups of 4 bytes).
 *
 * Persistent state, written once by init (64-byte aligned pieces):
 *   [ qstate_t | bias' int32[NB*16] | multiplier int32[NB*16] | shift int32[NB*16] | packed B ]
 */
#include "kernels/qconv.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/ar_error.h"
#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_quant.h"
#include "kernels/conv_util.h"
#include "kernels/qgemm.h"
#include "kernels/ar_parallel.h"

/* Upper bound of one im2col tile (bytes); tiles hold a multiple of 6 rows (the GEMM's row block).
 * A layer is cut into at least QC_MIN_TILES tiles where that leaves QC_TILE_MIN_ROWS rows each, so
 * that the pool has tiles to share out. */
#define QC_TILE_BYTES (96u * 1024u)
#define QC_TILE_MIN_ROWS 24
#define QC_PAR_MIN_ROWS 12
#define QC_MIN_TILES 8
/* The least work (multiply-adds) worth a chunk of its own on the pool. */
#define QC_CHUNK_MACS (256 * 1024)

/* TFLite's cpu_backend_gemm sends every int8 GEMM to ruy on x86 (uint8 ones to gemmlowp), so the
 * builtin int8 FULLY_CONNECTED rounds like the int8 CONV_2D: ties toward +inf. */
#define QC_FC_INT8_ROUND_UP true

typedef struct {
  ar_qgemm_t g;
  uint8_t in_zero_byte;       /* the input zero point as stored bytes (padding taps) */
  uint32_t off_bias, off_mult, off_shift, off_packed;   /* byte offsets from the state's start */
} qstate_t;

static uint64_t qc_align(uint64_t x) { return (x + 63u) & ~(uint64_t)63u; }

static uint64_t qc_state_bytes(int32_t n, int32_t k) {
  ar_qgemm_t g = {.n = n, .k = k, .k_groups = (k + 3) / 4, .n_blocks = (n + 15) / 16};
  uint64_t per = qc_align((uint64_t)g.n_blocks * 16u * sizeof(int32_t));
  return qc_align(sizeof(qstate_t)) + 3u * per + qc_align(ar_qgemm_packed_bytes(&g));
}

bool ar__q_is_quantized(const ar_node_t *node) {
  const ar_tview_t *in = node->n_inputs > 0 ? node->inputs[0] : NULL;
  return in && (in->dtype == AR_DTYPE_INT8 || in->dtype == AR_DTYPE_UINT8);
}

/* Dtypes and quantization parameters shared by both ops. `what_w` = "filter" / "weights". */
static int qc_check_operands(const ar_node_t *node, const char *name, const char *what_w, char *msg,
                             size_t msg_bytes) {
  const int idx = node->index;
  const ar_tview_t *in = node->inputs[0], *w = node->inputs[1], *out = node->outputs[0];
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  if (w->dtype != in->dtype || out->dtype != in->dtype || (bias && bias->dtype != AR_DTYPE_INT32))
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "quantized form needs input, %s and "
                   "output of one type (INT8 or UINT8) and an INT32 bias (input %s, %s %s, output "
                   "%s, bias %s)", idx, name, what_w, ar_dtype_name(in->dtype), what_w,
                   ar_dtype_name(w->dtype), ar_dtype_name(out->dtype),
                   bias ? ar_dtype_name(bias->dtype) : "none");
  const ar_tview_t *need[3] = {in, w, out};
  const char *names[3] = {"input 0 (input)", what_w, "output 0"};
  for (int i = 0; i < 3; i++)
    if (!need[i]->quant || need[i]->quant->n < 1)
      return ar_errf(msg, msg_bytes, AR_EINVAL, AR__OPFMT "%s (%s) has no quantization parameters",
                     idx, name, names[i], ar_dtype_name(need[i]->dtype));
  if (in->quant->n != 1 || out->quant->n != 1)
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "input and output must be quantized "
                   "per tensor (input has %d scales, output %d)", idx, name, (int)in->quant->n,
                   (int)out->quant->n);
  if (!w->is_constant || !w->data || (bias && (!bias->is_constant || !bias->data)))
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "quantized %s and bias must be "
                   "constants (they are packed once at init)", idx, name, what_w);
  const ar_quant_t *wq = w->quant;
  const int32_t co = w->dims[0];
  if (wq->n != 1 && (wq->n != co || wq->quantized_dimension != 0))
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "%s has %d scales on axis %d; "
                   "expected 1 or one per output channel (%d) on axis 0", idx, name, what_w,
                   (int)wq->n, (int)wq->quantized_dimension, (int)co);
  if (wq->n > 1)
    for (int32_t c = 0; c < wq->n; c++)
      if (wq->zero_point[c] != 0)
        return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "per-channel %s zero point %lld "
                       "(channel %d) is not 0", idx, name, what_w, (long long)wq->zero_point[c],
                       (int)c);
  if (bias && bias->quant) {
    const ar_quant_t *bq = bias->quant;
    if (bq->n != 1 && bq->n != co)
      return ar_errf(msg, msg_bytes, AR_EINVAL, AR__OPFMT "input 2 (bias) has %d scales for %d "
                     "output channels", idx, name, (int)bq->n, (int)co);
    /* TFLite GetQuantizedConvolutionMultipler: |s_in*s_w - s_bias| / s_out <= 0.02. */
    const double s_out = out->quant->scale[0];
    for (int32_t c = 0; c < co; c++) {
      const double prod = (double)(in->quant->scale[0] * wq->scale[wq->n > 1 ? c : 0]);
      const double sb = bq->scale[bq->n > 1 ? c : 0];
      if (!(fabs(prod - sb) / s_out <= 0.02))
        return ar_errf(msg, msg_bytes, AR_EINVAL, AR__OPFMT "input 2 (bias) scale %g (channel %d) "
                       "is not input scale * %s scale = %g", idx, name, sb, (int)c, what_w, prod);
    }
  }
  return 0;
}

static int qc_check_activation(const ar_node_t *node, const char *name, ar_activation_t act,
                               char *msg, size_t msg_bytes) {
  const ar_tview_t *out = node->outputs[0];
  int32_t lo, hi;
  if (ar_quant_activation_range(act, out->dtype, out->quant->scale[0], out->quant->zero_point[0],
                                &lo, &hi) != 0)
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "fused activation %d is not "
                   "supported on %s outputs", node->index, name, (int)act,
                   ar_dtype_name(out->dtype));
  return 0;
}

/* Fill the state: parameters, per-channel multipliers, packed weights with the folded bias. */
static void qc_init_state(ar_node_t *node, int32_t n, int32_t k, ar_activation_t act, bool round_up,
                          bool float_product) {
  const ar_tview_t *in = node->inputs[0], *w = node->inputs[1], *out = node->outputs[0];
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  uint8_t *base = node->state;
  qstate_t st;
  memset(&st, 0, sizeof st);
  ar_qgemm_t *g = &st.g;
  g->n = n;
  g->k = k;
  g->k_groups = (k + 3) / 4;
  g->n_blocks = (n + 15) / 16;
  const bool is_u8 = in->dtype == AR_DTYPE_UINT8;
  g->a_xor = is_u8 ? 0 : 0x80;
  const int32_t zin = (int32_t)in->quant->zero_point[0];
  g->out_zero_point = (int32_t)out->quant->zero_point[0];
  ar_quant_activation_range(act, out->dtype, out->quant->scale[0], out->quant->zero_point[0], &g->lo,
                            &g->hi);
  g->round_up = round_up;
  st.in_zero_byte = (uint8_t)zin;
  const uint64_t per = qc_align((uint64_t)g->n_blocks * 16u * sizeof(int32_t));
  st.off_bias = (uint32_t)qc_align(sizeof(qstate_t));
  st.off_mult = st.off_bias + (uint32_t)per;
  st.off_shift = st.off_mult + (uint32_t)per;
  st.off_packed = st.off_shift + (uint32_t)per;
  int32_t *mult = (int32_t *)(base + st.off_mult), *shift = (int32_t *)(base + st.off_shift);
  const ar_quant_t *wq = w->quant;
  for (int32_t c = 0; c < g->n_blocks * 16; c++) {
    if (c >= n) { mult[c] = 0; shift[c] = 0; continue; }
    int sh = 0;
    ar_quantize_multiplier(ar_quant_conv_multiplier(in->quant->scale[0],
                                                    wq->scale[wq->n > 1 ? c : 0],
                                                    out->quant->scale[0], float_product),
                           &mult[c], &sh);
    shift[c] = sh;
  }
  ar_qgemm_pack(g, w->data, is_u8, wq->zero_point, wq->n, bias ? bias->data : NULL, zin,
                base + st.off_packed, (int32_t *)(base + st.off_bias));
  memcpy(base, &st, sizeof st);
}

static void qc_run(const qstate_t *st, const uint8_t *base, const uint8_t *a, size_t lda,
                   int64_t rows, uint8_t *out, size_t ldo) {
  ar_qgemm_run(&st->g, base + st->off_packed, (const int32_t *)(base + st->off_bias),
               (const int32_t *)(base + st->off_mult), (const int32_t *)(base + st->off_shift), a,
               lda, rows, out, ldo);
}

/* ---------------- CONV_2D ---------------- */

typedef struct {
  int32_t n, h, w, ci, co, kh, kw, oh, ow, sh, sw, dh, dw, pt, pl;
  int64_t m, k, kp;           /* GEMM rows, depth, depth rounded up to 4 */
  bool direct;                /* 1x1 stride 1 with I % 4 == 0: the input is A */
  bool segments;              /* KW*I % 4 == 0, no horizontal dilation: rows as KH segments */
  int64_t tile_rows;          /* im2col rows per tile */
  int64_t n_tiles;
} qgeom_t;

static void qconv_geometry(const ar_node_t *node, qgeom_t *g) {
  const ar_conv2d_options_t *o = &node->options->conv2d;
  const ar_tview_t *in = node->inputs[0], *f = node->inputs[1];
  g->n = in->dims[0]; g->h = in->dims[1]; g->w = in->dims[2]; g->ci = in->dims[3];
  g->co = f->dims[0]; g->kh = f->dims[1]; g->kw = f->dims[2];
  g->sh = o->stride_h; g->sw = o->stride_w; g->dh = o->dilation_h; g->dw = o->dilation_w;
  g->oh = ar_compute_padding(o->padding, g->h, g->kh, g->sh, g->dh, &g->pt);
  g->ow = ar_compute_padding(o->padding, g->w, g->kw, g->sw, g->dw, &g->pl);
  g->m = (int64_t)g->n * g->oh * g->ow;
  g->k = (int64_t)g->kh * g->kw * g->ci;
  g->kp = (g->k + 3) / 4 * 4;
  g->direct = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ci % 4 == 0;
  g->segments = !g->direct && g->dw == 1 && ((int64_t)g->kw * g->ci) % 4 == 0 &&
                g->kh <= AR_QGEMM_MAX_SEGS;
  int64_t t = (int64_t)QC_TILE_BYTES / g->kp;
  if (t < QC_TILE_MIN_ROWS) t = QC_TILE_MIN_ROWS;
  t -= t % 6;
  int64_t tp = (g->m + QC_MIN_TILES - 1) / QC_MIN_TILES;
  tp = (tp + 5) / 6 * 6;
  if (tp < QC_PAR_MIN_ROWS) tp = QC_PAR_MIN_ROWS;
  if (tp < t) t = tp;
  g->tile_rows = g->m < t ? g->m : t;
  g->n_tiles = g->m > 0 ? (g->m + g->tile_rows - 1) / g->tile_rows : 0;
}

/* Bytes of one scratch slot (one tile's rows), and the slots' count, of a node with geometry g. */
static uint64_t qconv_slot_bytes(const qgeom_t *g) {
  if (g->segments)   /* segment pointers, a zero-point filter row, then the border copies */
    return qc_align((uint64_t)g->tile_rows * (uint64_t)g->kh * sizeof(void *)) +
           qc_align((uint64_t)g->kw * (uint64_t)g->ci) + qc_align((uint64_t)g->tile_rows * (uint64_t)g->k);
  return qc_align((uint64_t)g->tile_rows * (uint64_t)g->kp);
}

int ar__qconv_check_io(const ar_node_t *node, const char *name, char *msg, size_t msg_bytes) {
  const int idx = node->index;
  if (node->n_inputs < 2 || node->n_inputs > 3 || node->n_outputs != 1 || !node->inputs[0] ||
      !node->inputs[1] || !node->outputs[0] || !node->options)
    return ar_errf(msg, msg_bytes, AR_EINVAL, AR__OPFMT "needs inputs (input, filter[, bias]) "
                   "and one output, got %d inputs and %d outputs", idx, name, node->n_inputs,
                   node->n_outputs);
  if (node->inputs[1]->rank < 1)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "filter must have rank 4", idx, name);
  return qc_check_operands(node, name, "filter", msg, msg_bytes);
}

int ar__qconv_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  const char *name = "CONV_2D";
  int rc = qc_check_activation(node, name, node->options->conv2d.activation, msg, msg_bytes);
  if (rc != 0) return rc;
  qgeom_t g;
  qconv_geometry(node, &g);
  if (g.k > INT32_MAX / 2 || g.co > INT32_MAX / 2)
    return ar_errf(msg, msg_bytes, AR_EOVERFLOW, AR__OPFMT "filter depth %lld is too large",
                   node->index, name, (long long)g.k);
  /* one tile per thread that may run at once (ar_parallel_for_slots), from a 64-aligned start */
  const int64_t slots = AR_MIN((int64_t)ar_parallel_threads(node), g.n_tiles);
  node->scratch_bytes = g.direct ? 0 : 64 + (uint64_t)slots * qconv_slot_bytes(&g);
  node->state_bytes = qc_state_bytes(g.co, (int32_t)g.k);
  return 0;
}

void ar__qconv_init(ar_node_t *node) {
  qgeom_t g;
  qconv_geometry(node, &g);
  /* uint8 CONV_2D rescales with the legacy per-tensor multiplier (float32 product s_in * s_w),
   * int8 with PopulateConvolutionQuantizationParams' per-channel ones (double product). */
  const bool is_i8 = node->inputs[0]->dtype == AR_DTYPE_INT8;
  qc_init_state(node, g.co, (int32_t)g.k, node->options->conv2d.activation, is_i8, !is_i8);
}

/* memcpy for the short runs of im2col (a 3x3 stem over 3 channels copies 9 bytes at a time):
 * 4..32 bytes as two overlapping fixed-size moves, which the compiler inlines, instead of a call. */
static inline void qc_copy(uint8_t *dst, const uint8_t *src, size_t n) {
  if (n >= 4 && n <= 8) {
    uint32_t a, b;
    memcpy(&a, src, 4); memcpy(&b, src + n - 4, 4);
    memcpy(dst, &a, 4); memcpy(dst + n - 4, &b, 4);
  } else if (n > 8 && n <= 16) {
    uint64_t a, b;
    memcpy(&a, src, 8); memcpy(&b, src + n - 8, 8);
    memcpy(dst, &a, 8); memcpy(dst + n - 8, &b, 8);
  } else if (n > 16 && n <= 32) {
    uint64_t a[2], b[2];
    memcpy(a, src, 16); memcpy(b, src + n - 16, 16);
    memcpy(dst, a, 16); memcpy(dst + n - 16, b, 16);
  } else {
    memcpy(dst, src, n);
  }
}

/* One im2col row (K bytes, then zeros up to kp): the taps under output pixel (b, oy, ox), the
 * input zero point outside the image. */
static void qconv_im2col_row(const qgeom_t *g, const uint8_t *in, uint8_t zero, int32_t b,
                             int32_t oy, int32_t ox, uint8_t *row) {
  const size_t ci = (size_t)g->ci, span = (size_t)g->kw * ci;
  const int32_t iy0 = oy * g->sh - g->pt, ix0 = ox * g->sw - g->pl;
  const bool cols_inside = ix0 >= 0 && ix0 + (g->kw - 1) * g->dw < g->w;
  uint8_t *dst = row;
  for (int32_t ky = 0; ky < g->kh; ky++, dst += span) {
    const int32_t iy = iy0 + ky * g->dh;
    if (iy < 0 || iy >= g->h) { memset(dst, zero, span); continue; }
    const uint8_t *src = in + (((size_t)b * g->h + iy) * g->w) * ci;
    if (cols_inside && g->dw == 1) { qc_copy(dst, src + (size_t)ix0 * ci, span); continue; }
    for (int32_t kx = 0; kx < g->kw; kx++) {
      const int32_t ix = ix0 + kx * g->dw;
      if (ix < 0 || ix >= g->w) memset(dst + (size_t)kx * ci, zero, ci);
      else qc_copy(dst + (size_t)kx * ci, src + (size_t)ix * ci, ci);
    }
  }
  for (int64_t i = g->k; i < g->kp; i++) row[i] = 0;
}

/* The KH segment pointers of the A row of output pixel (b, oy, ox): filter row ky reads KW*I
 * input bytes in place, `zrow` (KW*I bytes of the input zero point) above or below the image, or
 * its copy in `copy` (KH*KW*I bytes for this row) with zero-point taps where it crosses a side. */
static void qconv_segments_row(const qgeom_t *g, const uint8_t *in, uint8_t zero, const uint8_t *zrow,
                               int32_t b, int32_t oy, int32_t ox, const uint8_t **seg, uint8_t *copy) {
  const size_t ci = (size_t)g->ci, span = (size_t)g->kw * ci;
  const int32_t iy0 = oy * g->sh - g->pt, ix0 = ox * g->sw - g->pl;
  const bool cols_inside = ix0 >= 0 && ix0 + g->kw - 1 < g->w;
  for (int32_t ky = 0; ky < g->kh; ky++) {
    const int32_t iy = iy0 + ky * g->dh;
    if (iy < 0 || iy >= g->h) { seg[ky] = zrow; continue; }
    const uint8_t *src = in + (((size_t)b * g->h + iy) * g->w) * ci;
    if (cols_inside) { seg[ky] = src + (size_t)ix0 * ci; continue; }
    uint8_t *dst = copy + (size_t)ky * span;
    for (int32_t kx = 0; kx < g->kw; kx++) {
      const int32_t ix = ix0 + kx;
      if (ix < 0 || ix >= g->w) memset(dst + (size_t)kx * ci, zero, ci);
      else memcpy(dst + (size_t)kx * ci, src + (size_t)ix * ci, ci);
    }
    seg[ky] = dst;
  }
}

/* What the range functions of one CONV_2D / FULLY_CONNECTED eval share. */
typedef struct {
  const qstate_t *st;
  const uint8_t *base;        /* the state (packed weights and the per-channel arrays) */
  qgeom_t g;
  const uint8_t *a;           /* A rows (direct paths) or the input image (tiled paths) */
  size_t lda;
  int64_t rows;               /* GEMM rows */
  uint8_t *out;
  size_t ldo;
  uint8_t *slots;             /* scratch of slot 0; slot s at slots + s * slot_bytes */
  uint64_t slot_bytes;
} qconv_ctx_t;

/* Output rows in blocks of 6 (the GEMM's row block): blocks [b0, b1) of A straight to the GEMM. */
static void qc_rows(void *ctx, int64_t b0, int64_t b1) {
  const qconv_ctx_t *c = ctx;
  const int64_t m0 = b0 * 6, m1 = AR_MIN(b1 * 6, c->rows);
  qc_run(c->st, c->base, c->a + (size_t)m0 * c->lda, c->lda, m1 - m0, c->out + (size_t)m0 * c->ldo,
         c->ldo);
}

/* Output channels in blocks of 16 (few rows, e.g. FULLY_CONNECTED on one input row): the GEMM of
 * blocks [b0, b1) alone, on their slice of the packed weights and per-channel arrays. */
static void qc_cols(void *ctx, int64_t b0, int64_t b1) {
  const qconv_ctx_t *c = ctx;
  const qstate_t *st = c->st;
  ar_qgemm_t g = st->g;
  const int32_t n0 = (int32_t)b0 * 16;
  g.n = (int32_t)AR_MIN((int64_t)st->g.n, b1 * 16) - n0;
  g.n_blocks = (int32_t)(b1 - b0);
  const size_t panel = (size_t)st->g.k_groups * 64u;
  ar_qgemm_run(&g, c->base + st->off_packed + (size_t)b0 * panel,
               (const int32_t *)(c->base + st->off_bias) + n0,
               (const int32_t *)(c->base + st->off_mult) + n0,
               (const int32_t *)(c->base + st->off_shift) + n0, c->a, c->lda, c->rows, c->out + n0,
               c->ldo);
}

/* The GEMM of c->rows rows of A in place, cut over the pool by rows (or, with fewer than 4 row
 * blocks, by output channels); every output byte is the same integer whichever way it is cut. */
static void qc_run_par(const ar_node_t *node, qconv_ctx_t *c) {
  const qstate_t *st = c->st;
  const int64_t nk = (int64_t)st->g.n * (int64_t)st->g.k;
  const int64_t row_blocks = (c->rows + 5) / 6;
  if (row_blocks >= 4 || st->g.n_blocks < 2)
    ar_parallel_for(node, row_blocks, ar_parallel_grain(row_blocks, 6 * nk, QC_CHUNK_MACS, 1), qc_rows, c);
  else
    ar_parallel_for(node, st->g.n_blocks,
                    ar_parallel_grain(st->g.n_blocks, c->rows * 16 * (int64_t)st->g.k, QC_CHUNK_MACS, 1),
                    qc_cols, c);
}

/* Tiles [t0, t1) of a CONV_2D whose A rows are KH segments read in place (see the file comment). */
static void qconv_seg_tiles(void *ctx, int32_t slot, int64_t t0, int64_t t1) {
  const qconv_ctx_t *c = ctx;
  const qgeom_t *g = &c->g;
  const qstate_t *st = c->st;
  uint8_t *mem = c->slots + (uint64_t)slot * c->slot_bytes;
  const uint8_t **seg = (const uint8_t **)mem;
  uint8_t *zrow = mem + qc_align((uint64_t)g->tile_rows * (uint64_t)g->kh * sizeof(void *));
  uint8_t *copy = zrow + qc_align((uint64_t)g->kw * (uint64_t)g->ci);
  memset(zrow, st->in_zero_byte, (size_t)g->kw * (size_t)g->ci);
  const int64_t per_image = (int64_t)g->oh * g->ow;
  for (int64_t t = t0; t < t1; t++) {
    const int64_t m0 = t * g->tile_rows, tm = AR_MIN(g->tile_rows, g->m - m0);
    int32_t b = (int32_t)(m0 / per_image);
    const int64_t rem = m0 % per_image;
    int32_t oy = (int32_t)(rem / g->ow), ox = (int32_t)(rem % g->ow);
    for (int64_t r = 0; r < tm; r++) {
      qconv_segments_row(g, c->a, st->in_zero_byte, zrow, b, oy, ox, seg + r * g->kh, copy + r * g->k);
      if (++ox == g->ow) { ox = 0; if (++oy == g->oh) { oy = 0; b++; } }
    }
    ar_qgemm_run_segments(&st->g, c->base + st->off_packed, (const int32_t *)(c->base + st->off_bias),
                          (const int32_t *)(c->base + st->off_mult),
                          (const int32_t *)(c->base + st->off_shift), seg, g->kh, tm,
                          c->out + m0 * g->co, (size_t)g->co);
  }
}

/* Tiles [t0, t1) of a CONV_2D through im2col rows in the slot's scratch. */
static void qconv_im2col_tiles(void *ctx, int32_t slot, int64_t t0, int64_t t1) {
  const qconv_ctx_t *c = ctx;
  const qgeom_t *g = &c->g;
  uint8_t *col = c->slots + (uint64_t)slot * c->slot_bytes;
  const int64_t per_image = (int64_t)g->oh * g->ow;
  for (int64_t t = t0; t < t1; t++) {
    const int64_t m0 = t * g->tile_rows, tm = AR_MIN(g->tile_rows, g->m - m0);
    int32_t b = (int32_t)(m0 / per_image);
    const int64_t rem = m0 % per_image;
    int32_t oy = (int32_t)(rem / g->ow), ox = (int32_t)(rem % g->ow);
    for (int64_t r = 0; r < tm; r++) {
      qconv_im2col_row(g, c->a, c->st->in_zero_byte, b, oy, ox, col + r * g->kp);
      if (++ox == g->ow) { ox = 0; if (++oy == g->oh) { oy = 0; b++; } }
    }
    qc_run(c->st, c->base, col, (size_t)g->kp, tm, c->out + m0 * g->co, (size_t)g->co);
  }
}

void ar__qconv_eval(const ar_node_t *node) {
  qconv_ctx_t c;
  c.st = node->state;
  c.base = node->state;
  c.a = node->inputs[0]->data;
  c.out = node->outputs[0]->data;
  qconv_geometry(node, &c.g);
  const qgeom_t *g = &c.g;
  if (g->m == 0) return;
  if (g->direct) {
    c.lda = (size_t)g->ci;
    c.rows = g->m;
    c.ldo = (size_t)g->co;
    qc_run_par(node, &c);
    return;
  }
  /* the slots prepare planned (as many as its thread count allowed) */
  c.slot_bytes = qconv_slot_bytes(g);
  c.slots = (uint8_t *)(((uintptr_t)node->scratch + 63u) & ~(uintptr_t)63u);
  const int32_t slots = (int32_t)((node->scratch_bytes - 64) / c.slot_bytes);
  ar_parallel_for_slots(node, g->n_tiles,
                        ar_parallel_grain(g->n_tiles, g->tile_rows * (int64_t)g->co * g->k, QC_CHUNK_MACS, 1),
                        slots, g->segments ? qconv_seg_tiles : qconv_im2col_tiles, &c);
}

/* ---------------- FULLY_CONNECTED ---------------- */

int ar__qfc_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  const char *name = "FULLY_CONNECTED";
  int rc = qc_check_operands(node, name, "weights", msg, msg_bytes);
  if (rc == 0) rc = qc_check_activation(node, name, node->options->fully_connected.activation, msg,
                                        msg_bytes);
  if (rc != 0) return rc;
  const int32_t units = node->inputs[1]->dims[0], depth = node->inputs[1]->dims[1];
  const uint64_t batch = (uint64_t)ar_k_elements(node->inputs[0]) / (uint64_t)depth;
  node->scratch_bytes = depth % 4 ? batch * (uint64_t)((depth + 3) / 4 * 4) : 0;
  node->state_bytes = qc_state_bytes(units, depth);
  return 0;
}

void ar__qfc_init(ar_node_t *node) {
  const bool round_up = node->inputs[0]->dtype == AR_DTYPE_INT8 && QC_FC_INT8_ROUND_UP;
  /* Per-tensor FULLY_CONNECTED: GetQuantizedConvolutionMultipler's float32 product. */
  qc_init_state(node, node->inputs[1]->dims[0], node->inputs[1]->dims[1],
                node->options->fully_connected.activation, round_up,
                node->inputs[1]->quant->n == 1);
}

void ar__qfc_eval(const ar_node_t *node) {
  const int32_t units = node->inputs[1]->dims[0], depth = node->inputs[1]->dims[1];
  const int64_t batch = ar_k_elements(node->inputs[0]) / depth;
  const uint8_t *in = node->inputs[0]->data;
  qconv_ctx_t c;
  c.st = node->state;
  c.base = node->state;
  c.rows = batch;
  c.out = node->outputs[0]->data;
  c.ldo = (size_t)units;
  if (batch == 0) return;
  if (depth % 4 == 0) {
    c.a = in;
    c.lda = (size_t)depth;
    qc_run_par(node, &c);
    return;
  }
  const size_t dp = (size_t)(depth + 3) / 4 * 4;
  uint8_t *rows = node->scratch;
  for (int64_t b = 0; b < batch; b++) {
    memcpy(rows + (size_t)b * dp, in + (size_t)b * (size_t)depth, (size_t)depth);
    memset(rows + (size_t)b * dp + depth, 0, dp - (size_t)depth);
  }
  c.a = rows;
  c.lda = dp;
  qc_run_par(node, &c);
}
