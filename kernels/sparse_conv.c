/* sparse_conv.c - CONV_2D 1x1 and FULLY_CONNECTED whose filter / weights are a sparse constant,
 * multiplied in their stored form.
 *
 * Pruned models (MediaPipe's pose_detection, face_detection_full_range_sparse) store 1x1 filters
 * with TFLite SparsityParameters and densify them with DENSIFY (-> DEQUANTIZE when the values are
 * float16). When the interpreter keeps weights as stored, it hands CONV_2D the sparse constant
 * itself as input 1 (dtype FLOAT16 or FLOAT32, dims the dense [O,1,1,I], data = the stored values,
 * bytes = their size, sparsity = the metadata) and this file runs the convolution on it: no dense
 * copy, no packed copy, no node state. FULLY_CONNECTED weights [O,I] in the same form run the same
 * loops, its input rows taking the place of pixels.
 *
 * Covered form (the one TFLite's converter writes for these filters; anything else is refused by
 * ar_kernel_sparse_filter_check and the interpreter densifies as before): traversal order the
 * identity, dims 0..2 DENSE (O / R, 1, 1), dim 3 (I / C) SPARSE_CSR (for [O,I]: dim 0 DENSE, dim 1
 * SPARSE_CSR), and at most one block dim: R output channels (block_map [0]) or C input channels
 * (block_map [3], or [1] for [O,I]), stored innermost (DENSE, size R or C). Group g (output channels g*R .. g*R+R-1) holds the entries j in
 * array_segments[g] .. array_segments[g+1]; entry j covers input channels array_indices[j]*C + t
 * (t < C), and its value for output row g*R + r, channel t is value j*R*C + r*C + t (DENSIFY's
 * visiting order). Index vectors stay uint8 / uint16 / int32 as stored.
 *
 * Arithmetic (NHWC): out[p, o] = act(bias[o] + sum over the stored entries of row o, in stored
 * order, of w * in[p, c]), each step one fused multiply-add (fmaf in the portable loop, vfmadd in
 * the AVX2 one, so both give the same bits). The dense kernels sum all I products in another
 * order; the results agree to float rounding (the goldens' tolerance), not bit for bit.
 *
 * Speed (XNNPACK's SpMM idea on an NHWC graph): pixels are taken AR_SPARSE_TILE at a time; the
 * tile's input is transposed into scratch as [I][T], so every stored weight multiplies T
 * contiguous floats (four AVX2 vectors) and the work is the stored entries only. Each output row
 * accumulates in registers; 8 rows at a time go back to NHWC through a small stack buffer, with the
 * fused activation. Float16 values are widened per row in chunks (F16C on x86 when the CPU has
 * it, picked at run time; exact portable conversion elsewhere), so nothing is widened ahead.
 * Tiles are split over the thread pool by thread count (ar_parallel_for_split_slots; a tile's
 * pixels are computed the same in any run), each thread transposing into a scratch slot of its own.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/ar_error.h"
#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/conv_util.h"
#include "kernels/ar_parallel.h"
#include "kernels/sparse_conv.h"
#include "kernels/sgemm.h"

#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>
#define AR_TARGET_SPARSE_AVX2 __attribute__((target("avx2,fma,f16c")))
#define AR_TARGET_SPARSE_AVX512 __attribute__((target("avx2,fma,f16c,avx512f")))
#endif

#define T AR_SPARSE_TILE
#define ROWS_MAX 16         /* output rows per transposed chunk (8, or a multiple of R up to 16) */
#define WBUF 2048           /* values widened per step */
#define BLOCK_MAX 16        /* largest R or C covered */

/* The sparse matrix [O, I] as stored, parsed from a view. */
typedef struct {
  int32_t o, i;             /* dense output / input channels */
  int32_t rb, cb;           /* block rows R, block cols C (1 when not blocked) */
  int32_t groups;           /* O / R */
  ar_index_vector_t seg, idx;
  const void *val;
  bool f16;
} spm_t;

/* ---------------------------------------------------------------- checks */

#define NOT_COVERED(...) ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "sparse filter: " __VA_ARGS__)

/* Parse the sparsity of `f` into `m`; with `check`, verify every segment and index against the
 * dense shape and the stored value count (model data is never trusted). AR_EUNSUPPORTED with the
 * reason when the form is not the covered one or the data are inconsistent. */
static int spm_parse(const ar_node_t *node, const ar_tview_t *f, spm_t *m, bool check, char *msg,
                     size_t msg_bytes) {
  const int idx = node->index;
  const char *name = ar_op_name(node->op);
  const ar_sparsity_t *sp = f->sparsity;
  memset(m, 0, sizeof *m);
  if (!sp || !f->data || !f->is_constant) return NOT_COVERED("not a sparse constant", idx, name);
  if (f->dtype != AR_DTYPE_FLOAT16 && f->dtype != AR_DTYPE_FLOAT32)
    return NOT_COVERED("values are %s (FLOAT16 or FLOAT32 are covered)", idx, name,
                       ar_dtype_name(f->dtype));
  const int32_t n = f->rank;
  if (!((n == 4 && f->dims[1] == 1 && f->dims[2] == 1) || n == 2) || f->dims[0] < 1 || f->dims[n - 1] < 1)
    return NOT_COVERED("shape is not [O,1,1,I] (a 1x1 filter) or [O,I]", idx, name);
  const int32_t k = sp->n_block_map, levels = n + k;
  if (k > 1 || sp->n_traversal_order != levels || sp->n_dim_metadata != levels)
    return NOT_COVERED("%d block dims, %d traversal dims, %d dim_metadata (at most one block dim, "
                       "one level per expanded dim)", idx, name, (int)k, (int)sp->n_traversal_order,
                       (int)sp->n_dim_metadata);
  for (int32_t l = 0; l < levels; l++)
    if (sp->traversal_order[l] != l)
      return NOT_COVERED("traversal_order is not the identity", idx, name);
  m->o = f->dims[0];
  m->i = f->dims[n - 1];
  m->rb = m->cb = 1;
  if (k == 1) {
    const ar_dim_metadata_t *bm = &sp->dim_metadata[n];
    int32_t bs = bm->dense_size;
    if (bm->format != AR_DIM_DENSE || bs < 1 || bs > BLOCK_MAX)
      return NOT_COVERED("block level is not DENSE with a size of 1..%d", idx, name, BLOCK_MAX);
    if (sp->block_map[0] == 0 && m->o % bs == 0) m->rb = bs;
    else if (sp->block_map[0] == n - 1 && m->i % bs == 0) m->cb = bs;
    else return NOT_COVERED("block_map [%d] with block size %d on %d output and %d input channels",
                            idx, name, (int)sp->block_map[0], (int)bs, (int)m->o, (int)m->i);
  }
  m->groups = m->o / m->rb;
  for (int32_t l = 0; l < n - 1; l++) {
    const int32_t want = l == 0 ? m->groups : 1;
    if (sp->dim_metadata[l].format != AR_DIM_DENSE || sp->dim_metadata[l].dense_size != want)
      return NOT_COVERED("level %d is not DENSE of size %d", idx, name, (int)l, (int)want);
  }
  const ar_dim_metadata_t *csr = &sp->dim_metadata[n - 1];
  if (csr->format != AR_DIM_SPARSE_CSR)
    return NOT_COVERED("input channels are not SPARSE_CSR", idx, name);
  m->seg = csr->array_segments;
  m->idx = csr->array_indices;
  m->val = f->data;
  m->f16 = f->dtype == AR_DTYPE_FLOAT16;
  if (!check) return 0;
  const ar_index_vector_t *v[2] = {&m->seg, &m->idx};
  for (int q = 0; q < 2; q++)
    if (v[q]->type < AR_IDX_INT32 || v[q]->type > AR_IDX_UINT8 || (v[q]->length && !v[q]->data))
      return NOT_COVERED("%s vector is missing or untyped", idx, name, q ? "array_indices" : "array_segments");
  if ((int64_t)m->seg.length < (int64_t)m->groups + 1)
    return NOT_COVERED("array_segments has %u entries for %d groups", idx, name,
                       (unsigned)m->seg.length, (int)m->groups);
  if (ar_index_vector_at(&m->seg, 0) != 0) return NOT_COVERED("array_segments[0] is not 0", idx, name);
  const int32_t ncols = m->i / m->cb;
  for (int32_t g = 0; g < m->groups; g++) {
    int64_t s0 = ar_index_vector_at(&m->seg, g), s1 = ar_index_vector_at(&m->seg, g + 1);
    if (s1 < s0 || s1 > (int64_t)m->idx.length)
      return NOT_COVERED("array_segments[%d..%d] = %lld..%lld out of order or beyond %u indices", idx,
                         name, (int)g, (int)g + 1, (long long)s0, (long long)s1, (unsigned)m->idx.length);
    int64_t prev = -1;
    for (int64_t j = s0; j < s1; j++) {
      int64_t c = ar_index_vector_at(&m->idx, j);
      /* Strictly increasing: no duplicate, so summing entries equals densifying them. */
      if (c <= prev || c >= ncols)
        return NOT_COVERED("array_indices[%lld] = %lld is not increasing within [0,%d)", idx, name,
                           (long long)j, (long long)c, (int)ncols);
      prev = c;
    }
  }
  uint64_t values = (uint64_t)ar_index_vector_at(&m->seg, m->groups) * (uint64_t)m->rb * (uint64_t)m->cb;
  if (values * (m->f16 ? 2u : 4u) > f->bytes)
    return NOT_COVERED("%llu stored values, the buffer holds %llu bytes", idx, name,
                       (unsigned long long)values, (unsigned long long)f->bytes);
  return 0;
}

/* Shape, dtype and option checks of a CONV_2D node with a sparse filter (input 1). */
static int check_node(const ar_node_t *node, spm_t *m, char *msg, size_t msg_bytes) {
  const int idx = node->index;
  const char *name = ar_op_name(node->op);
  char s1[96], s2[96];
  if (node->n_inputs < 2 || node->n_inputs > 3 || node->n_outputs != 1 || !node->inputs[0] ||
      !node->inputs[1] || !node->outputs[0] || !node->options)
    return ar_errf(msg, msg_bytes, AR_EINVAL, AR__OPFMT "needs inputs (input, filter[, bias]) and one "
                   "output, got %d inputs and %d outputs", idx, name, node->n_inputs, node->n_outputs);
  const ar_tview_t *in = node->inputs[0], *f = node->inputs[1], *out = node->outputs[0];
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  int rc = spm_parse(node, f, m, true, msg, msg_bytes);
  if (rc) return rc;
  if (in->dtype != AR_DTYPE_FLOAT32 || out->dtype != AR_DTYPE_FLOAT32 ||
      (bias && bias->dtype != AR_DTYPE_FLOAT32))
    return NOT_COVERED("input %s, output %s (float32 is covered)", idx, name, ar_dtype_name(in->dtype),
                       ar_dtype_name(out->dtype));
  if (in->rank != 4 || in->dims[3] != m->i)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "input %s does not match filter %s", idx, name,
                   ar__shape_str(s1, sizeof s1, in), ar__shape_str(s2, sizeof s2, f));
  for (int d = 0; d < 4; d++)
    if (in->dims[d] < 1)
      return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "empty input %s", idx, name,
                     ar__shape_str(s1, sizeof s1, in));
  if (bias && (bias->rank != 1 || bias->dims[0] != m->o))
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "bias shape %s does not match %d output "
                   "channels", idx, name, ar__shape_str(s1, sizeof s1, bias), (int)m->o);
  const ar_conv2d_options_t *o = &node->options->conv2d;
  if (o->stride_h < 1 || o->stride_w < 1 || o->dilation_h < 1 || o->dilation_w < 1 ||
      (o->padding != AR_PADDING_SAME && o->padding != AR_PADDING_VALID) ||
      !ar__activation_valid(o->activation))
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "invalid options: stride %dx%d, "
                   "dilation %dx%d, padding %d, activation %d", idx, name, (int)o->stride_h,
                   (int)o->stride_w, (int)o->dilation_h, (int)o->dilation_w, (int)o->padding,
                   (int)o->activation);
  int wrc = ar__check_window(node, 1, 1, o->stride_h, o->stride_w, 1, 1, msg, msg_bytes);
  if (wrc != 0) return wrc;
  /* A 1x1 filter never pads: SAME gives ceil(in / stride) outputs, VALID the same. */
  int32_t pt, pl;
  int32_t oh = ar_compute_padding(o->padding, in->dims[1], 1, o->stride_h, 1, &pt);
  int32_t ow = ar_compute_padding(o->padding, in->dims[2], 1, o->stride_w, 1, &pl);
  int32_t want[4] = {in->dims[0], oh, ow, m->o};
  if (node->infer_shapes) ar_k_set_output_shape(node, 0, 4, want);
  if (out->rank != 4 || memcmp(out->dims, want, sizeof want) != 0)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "output shape %s, expected [%d,%d,%d,%d]", idx,
                   name, ar__shape_str(s1, sizeof s1, out), (int)want[0], (int)want[1], (int)want[2],
                   (int)want[3]);
  if ((int64_t)in->dims[0] * in->dims[1] * in->dims[2] * in->dims[3] > INT32_MAX ||
      (int64_t)want[0] * oh * ow * m->o > INT32_MAX)
    return ar_errf(msg, msg_bytes, AR_EOVERFLOW, AR__OPFMT "more than 2^31 - 1 elements", idx, name);
  return 0;
}

int ar_kernel_sparse_filter_check(const ar_node_t *node, char *msg, size_t msg_bytes) {
  if (node->op != AR_OP_CONV_2D && node->op != AR_OP_FULLY_CONNECTED)
    return NOT_COVERED("%s is not covered (CONV_2D 1x1, FULLY_CONNECTED)", node->index,
                       ar_op_name(node->op), ar_op_name(node->op));
  if (node->n_inputs < 2 || !node->inputs[1] || !node->inputs[1]->sparsity)
    return NOT_COVERED("input 1 is not a sparse constant", node->index, ar_op_name(node->op));
  /* The op's own prepare on a copy: its shape rules, then (the filter being sparse) ours. */
  ar_node_t copy = *node;
  copy.infer_shapes = false;
  return ar_kernel_for(node->op)->prepare(&copy, msg, msg_bytes);
}

/* ---------------------------------------------------------------- expanded path choice */

/* The largest dense [I][O] copy an eval expands a filter into (scratch, shared by the threads). */
#define DENSE_MAX_BYTES (256 * 1024)
/* Expanded when the rows are short (at most DENSE_MAX_IN input channels, so a few stored entries
 * a row on a pruned filter), at least 1/DENSE_MIN_DENSITY of the filter is stored, there are at
 * least DENSE_MIN_OUT output channels (a vector of them) and DENSE_MIN_PIXELS output pixels (the
 * expansion, done at each eval, is paid back). Measured on face_detection_full_range_sparse (about
 * 30 % stored) at one thread: [96,96,8] -> 32 0.23 -> 0.11 ms, [48,48,16] -> 64 0.12-0.14 -> 0.08,
 * [48,48,24] -> 48 0.12 -> 0.08; with 64 or more input channels, or 6x6 and 12x12 maps, the
 * entry-by-entry loop is as fast or faster (its multiply-adds are the stored ones only). */
#if defined(__aarch64__)
#define SPARSE_DENSE_NEON 1
#else
#define SPARSE_DENSE_NEON 0
#endif
#define DENSE_MAX_IN 48
#define DENSE_MIN_DENSITY 8
#define DENSE_MIN_OUT 16
#define DENSE_MIN_PIXELS 256

static int sparse_dense_forced = -1;

int ar__sparse_set_dense(int mode) {
  sparse_dense_forced = mode < 0 ? -1 : mode > 0;
  return sparse_dense_forced;
}

/* Whether an eval of `pixels` output pixels (all images) runs the expanded path; a function of the
 * shapes and the stored count alone (never of the thread count or the ISA). */
static bool dense_pick(const spm_t *m, int64_t pixels) {
  const uint64_t dense = (uint64_t)m->o * (uint64_t)m->i;
  if (sparse_dense_forced == 0 || dense * sizeof(float) > DENSE_MAX_BYTES) return false;
  if (sparse_dense_forced == 1) return true;
#if SPARSE_DENSE_NEON
  /* aarch64: the expanded filter goes through the NEON GEMM, 0.3-0.4 instructions per (dense)
   * multiply-add, where the entry-by-entry loop (portable there) takes several per stored one
   * (qemu instruction profile, face_detection_full_range_sparse: sparse_tiles + sparse_portable
   * 133M per invoke against XNNPACK's 47M for the whole model): any filter that fits, on 16
   * pixels or more. */
  return pixels >= 16;
#endif
  const uint64_t stored = (uint64_t)ar_index_vector_at(&m->seg, m->groups) * (uint64_t)(m->rb * m->cb);
  return m->i <= DENSE_MAX_IN && m->o >= DENSE_MIN_OUT && pixels >= DENSE_MIN_PIXELS &&
         stored * DENSE_MIN_DENSITY >= dense;
}

/* Scratch of either path: per-thread transposed tiles, or the one expanded filter. */
static uint64_t scratch_for(const ar_node_t *node, const spm_t *m, int64_t pixels) {
  if (dense_pick(m, pixels)) return (uint64_t)m->o * (uint64_t)m->i * sizeof(float);
  return (uint64_t)ar_parallel_threads(node) * (uint64_t)m->i * T * sizeof(float);
}

int ar__sparse_fc_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  spm_t m;
  int rc = spm_parse(node, node->inputs[1], &m, true, msg, msg_bytes);
  if (rc) return rc;
  if (node->inputs[1]->rank != 2)
    return NOT_COVERED("FULLY_CONNECTED weights must be [O,I]", node->index, ar_op_name(node->op));
  const ar_tview_t *in = node->inputs[0];
  int64_t elems = 1;
  for (int32_t d = 0; d < in->rank; d++) elems *= in->dims[d];
  node->state_bytes = 0;
  node->scratch_bytes = scratch_for(node, &m, elems / m.i);
  return 0;
}

int ar__sparse_conv_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  spm_t m;
  int rc = check_node(node, &m, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *out = node->outputs[0];
  node->state_bytes = 0;
  node->scratch_bytes = scratch_for(node, &m, (int64_t)out->dims[0] * out->dims[1] * out->dims[2]);
  return 0;
}

/* ---------------------------------------------------------------- ISA choice */

static int sparse_isa_forced = -1;

static int sparse_isa_best(void) {
#if AR_HAVE_AVX2_CLONE
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c"))
    return __builtin_cpu_supports("avx512f") ? 2 : 1;
#endif
  return 0;
}

int ar__sparse_set_isa(int isa) {
  int best = sparse_isa_best();
  if (isa < 0) { sparse_isa_forced = -1; return best; }
  if (isa > best) return -1;
  sparse_isa_forced = isa;
  return isa;
}

static int sparse_isa(void) {
  static int best = -1;   /* relaxed atomics: invokes on several threads may ask first */
  if (sparse_isa_forced >= 0) return sparse_isa_forced;
  int b = __atomic_load_n(&best, __ATOMIC_RELAXED);
  if (b < 0) __atomic_store_n(&best, b = sparse_isa_best(), __ATOMIC_RELAXED);
  return b;
}

/* ---------------------------------------------------------------- shared pieces */

typedef struct {
  const float *in;          /* image b's input */
  int32_t w, ci, sh, sw;    /* input width, channels, strides */
  int32_t ow;               /* output width */
} pix_t;

/* Transpose `np` output pixels starting at flat output pixel q0 (of one image) into xt[c*T + p]
 * (p < T; lanes np..T-1 are zero so the accumulators never see stale scratch). */
static AR_ALWAYS_INLINE void tile_in(const pix_t *px, int64_t q0, int32_t np, float *restrict xt) {
  const int32_t ci = px->ci;
  for (int32_t p = 0; p < np; p++) {
    int64_t q = q0 + p;
    int64_t oy = q / px->ow, ox = q - oy * px->ow;
    const float *src = px->in + ((oy * px->sh) * (int64_t)px->w + ox * px->sw) * ci;
    for (int32_t c = 0; c < ci; c++) xt[(int64_t)c * T + p] = src[c];
  }
  if (np < T)
    for (int32_t c = 0; c < ci; c++)
      for (int32_t p = np; p < T; p++) xt[(int64_t)c * T + p] = 0.0f;
}

/* ot[r*T + p] (rows r < nr) -> out[p*O + r] for p < np, with the fused activation. */
static AR_ALWAYS_INLINE void tile_out(float *restrict ot, int32_t nr, int32_t np, float *restrict out,
                                      int32_t o, ar_activation_t act) {
  if (act != AR_ACT_NONE) ar__activate(ot, (size_t)nr * T, act);
  for (int32_t p = 0; p < np; p++)
    for (int32_t r = 0; r < nr; r++) out[(int64_t)p * o + r] = ot[r * T + p];
}

/* ---------------------------------------------------------------- portable */

static void widen_portable(const spm_t *m, int64_t v0, int64_t n, float *restrict w) {
  if (m->f16) {
    const uint16_t *h = (const uint16_t *)m->val + v0;
    for (int64_t i = 0; i < n; i++) w[i] = ar_fp16_to_fp32(h[i]);
  } else {
    memcpy(w, (const float *)m->val + v0, (size_t)n * sizeof(float));
  }
}

/* acc[0..T) += sum over entries j in [e0, e1) of w[(j - e0)*R*C + r*C + t] * xt[(idx[j]*C + t)*T + ..] */
static void row_portable(const spm_t *m, const float *restrict xt, int64_t e0, int64_t e1,
                         const float *restrict w, int32_t r, float *restrict acc) {
  const int32_t rc = m->rb * m->cb, cb = m->cb;
  for (int64_t j = e0; j < e1; j++) {
    int64_t c0 = ar_index_vector_at(&m->idx, j) * cb;
    const float *wj = w + (j - e0) * rc + r * cb;
    for (int32_t t = 0; t < cb; t++) {
      const float wv = wj[t];
      const float *x = xt + (c0 + t) * T;
      for (int32_t p = 0; p < T; p++) acc[p] = fmaf(wv, x[p], acc[p]);
    }
  }
}

/* The whole convolution of one image's `npix` output pixels, portable loops. */
static void sparse_portable(const spm_t *m, const pix_t *px, int64_t qbeg, int64_t npix,
                            const float *bias, ar_activation_t act, float *xt, float *out) {
  float ot[ROWS_MAX * T] __attribute__((aligned(64)));
  float w[WBUF];
  const int32_t rb = m->rb, rc = m->rb * m->cb;
  const int32_t rows_chunk = rb <= 8 ? (8 / rb) * rb : rb;
  const int64_t ech = WBUF / rc;   /* entries widened per step */
  for (int64_t q0 = qbeg; q0 < npix; q0 += T) {
    int32_t np = npix - q0 < T ? (int32_t)(npix - q0) : T;
    tile_in(px, q0, np, xt);
    for (int32_t r0 = 0; r0 < m->o; r0 += rows_chunk) {
      int32_t nr = m->o - r0 < rows_chunk ? m->o - r0 : rows_chunk;
      for (int32_t r = 0; r < nr; r++)
        for (int32_t p = 0; p < T; p++) ot[r * T + p] = bias ? bias[r0 + r] : 0.0f;
      for (int32_t g = r0 / rb; g < (r0 + nr) / rb; g++) {
        int64_t s0 = ar_index_vector_at(&m->seg, g), s1 = ar_index_vector_at(&m->seg, g + 1);
        for (int64_t e0 = s0; e0 < s1; e0 += ech) {
          int64_t e1 = s1 - e0 < ech ? s1 : e0 + ech;
          widen_portable(m, e0 * rc, (e1 - e0) * rc, w);
          for (int32_t r = 0; r < rb; r++)
            row_portable(m, xt, e0, e1, w, r, ot + (g * rb + r - r0) * T);
        }
      }
      tile_out(ot, nr, np, out + q0 * m->o + r0, m->o, act);
    }
  }
}

/* ---------------------------------------------------------------- AVX2 + FMA + F16C */

#if AR_HAVE_AVX2_CLONE
AR_TARGET_SPARSE_AVX2 static void widen_avx2(const spm_t *m, int64_t v0, int64_t n, float *restrict w) {
  if (!m->f16) {
    memcpy(w, (const float *)m->val + v0, (size_t)n * sizeof(float));
    return;
  }
  const uint16_t *h = (const uint16_t *)m->val + v0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(w + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
  for (; i < n; i++) w[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h[i])));
}

/* One row, unblocked (R = C = 1), indices of type IT: four 8-float accumulators, one broadcast
 * weight and four FMAs per stored entry. */
#define SPARSE_ROW1(NAME, IT)                                                                    \
  AR_TARGET_SPARSE_AVX2 static void NAME(const float *restrict xt, const IT *restrict ix,       \
                                         int64_t n, const float *restrict w, float *restrict acc) { \
    __m256 a0 = _mm256_loadu_ps(acc), a1 = _mm256_loadu_ps(acc + 8);                            \
    __m256 a2 = _mm256_loadu_ps(acc + 16), a3 = _mm256_loadu_ps(acc + 24);                      \
    for (int64_t j = 0; j < n; j++) {                                                            \
      const float *x = xt + (int64_t)ix[j] * T;                                                  \
      const __m256 wv = _mm256_broadcast_ss(w + j);                                              \
      a0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x), a0);                                          \
      a1 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + 8), a1);                                      \
      a2 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + 16), a2);                                     \
      a3 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + 24), a3);                                     \
    }                                                                                            \
    _mm256_storeu_ps(acc, a0); _mm256_storeu_ps(acc + 8, a1);                                    \
    _mm256_storeu_ps(acc + 16, a2); _mm256_storeu_ps(acc + 24, a3);                              \
  }
SPARSE_ROW1(row1_u8_avx2, uint8_t)
SPARSE_ROW1(row1_u16_avx2, uint16_t)
SPARSE_ROW1(row1_i32_avx2, int32_t)

/* Any block shape: per entry, C input channels with weights w[(j - e0)*R*C + r*C + t]. */
AR_TARGET_SPARSE_AVX2 static void rowb_avx2(const spm_t *m, const float *restrict xt, int64_t e0,
                                            int64_t e1, const float *restrict w, int32_t r,
                                            float *restrict acc) {
  const int32_t rc = m->rb * m->cb, cb = m->cb;
  __m256 a0 = _mm256_loadu_ps(acc), a1 = _mm256_loadu_ps(acc + 8);
  __m256 a2 = _mm256_loadu_ps(acc + 16), a3 = _mm256_loadu_ps(acc + 24);
  for (int64_t j = e0; j < e1; j++) {
    int64_t c0 = ar_index_vector_at(&m->idx, j) * cb;
    const float *wj = w + (j - e0) * rc + r * cb;
    for (int32_t t = 0; t < cb; t++) {
      const float *x = xt + (c0 + t) * T;
      const __m256 wv = _mm256_broadcast_ss(wj + t);
      a0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x), a0);
      a1 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + 8), a1);
      a2 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + 16), a2);
      a3 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + 24), a3);
    }
  }
  _mm256_storeu_ps(acc, a0); _mm256_storeu_ps(acc + 8, a1);
  _mm256_storeu_ps(acc + 16, a2); _mm256_storeu_ps(acc + 24, a3);
}

/* In-register transpose of 8 rows of 8 floats. */
AR_TARGET_SPARSE_AVX2 static inline void tr8x8(__m256 r[8]) {
  __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
  __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
  __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
  __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20); r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20); r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31); r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31); r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* tile_in with 8x8 transposes. Lanes np..T-1 repeat the last pixel (finite input values whose
 * outputs are never stored), so no lane reads stale scratch. */
AR_TARGET_SPARSE_AVX2 static void tile_in_avx2(const pix_t *px, int64_t q0, int32_t np,
                                               float *restrict xt) {
  const float *src[T];
  const int32_t ci = px->ci;
  int64_t oy = q0 / px->ow, ox = q0 - oy * px->ow;
  for (int32_t p = 0; p < np; p++) {
    src[p] = px->in + ((oy * px->sh) * (int64_t)px->w + ox * px->sw) * ci;
    if (++ox == px->ow) { ox = 0; oy++; }
  }
  for (int32_t p = np; p < T; p++) src[p] = src[np - 1];
  const int32_t c8 = ci & ~7;
  for (int32_t pb = 0; pb < T; pb += 8) {
    const float *const *sp = src + pb;
    for (int32_t c0 = 0; c0 < c8; c0 += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(sp[i] + c0);
      tr8x8(r);
      for (int i = 0; i < 8; i++) _mm256_storeu_ps(xt + (int64_t)(c0 + i) * T + pb, r[i]);
    }
    for (int32_t c = c8; c < ci; c++)
      for (int i = 0; i < 8; i++) xt[(int64_t)c * T + pb + i] = sp[i][c];
  }
}

/* tile_out with 8x8 transposes when the chunk has 8 rows. */
AR_TARGET_SPARSE_AVX2 static void tile_out_avx2(float *restrict ot, int32_t nr, int32_t np,
                                                float *restrict out, int32_t o, ar_activation_t act) {
  if (act != AR_ACT_NONE) ar__activate(ot, (size_t)nr * T, act);
  int32_t p = 0;
  if (nr == 8)
    for (; p + 8 <= np; p += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; i++) r[i] = _mm256_load_ps(ot + i * T + p);
      tr8x8(r);
      for (int i = 0; i < 8; i++) _mm256_storeu_ps(out + (int64_t)(p + i) * o, r[i]);
    }
  for (; p < np; p++)
    for (int32_t r = 0; r < nr; r++) out[(int64_t)p * o + r] = ot[r * T + p];
}

/* Entries [e0, e1) of group g (weights from wv) into the rows' accumulators in ot. */
AR_TARGET_SPARSE_AVX2 static inline void group_avx2(const spm_t *m, const float *restrict xt, int32_t g,
                                                    int64_t e0, int64_t e1, const float *restrict wv,
                                                    int32_t r0, float *restrict ot) {
  if (m->rb * m->cb == 1) {
    float *acc = ot + (g - r0) * T;
    switch (m->idx.type) {
    case AR_IDX_UINT8: row1_u8_avx2(xt, (const uint8_t *)m->idx.data + e0, e1 - e0, wv, acc); break;
    case AR_IDX_UINT16: row1_u16_avx2(xt, (const uint16_t *)m->idx.data + e0, e1 - e0, wv, acc); break;
    default: row1_i32_avx2(xt, (const int32_t *)m->idx.data + e0, e1 - e0, wv, acc); break;
    }
    return;
  }
  for (int32_t r = 0; r < m->rb; r++) rowb_avx2(m, xt, e0, e1, wv, r, ot + (g * m->rb + r - r0) * T);
}

/* Accumulate groups [g0, g1) (first row r0) into ot, widening the chunk's values in one step when
 * they fit in WBUF, else WBUF at a time per group. */
AR_TARGET_SPARSE_AVX2 static void chunk_avx2(const spm_t *m, const float *restrict xt, int32_t g0,
                                             int32_t g1, int32_t r0, float *restrict ot,
                                             float *restrict w) {
  const int32_t rc = m->rb * m->cb;
  const int64_t lo = ar_index_vector_at(&m->seg, g0), hi = ar_index_vector_at(&m->seg, g1);
  if ((hi - lo) * rc <= WBUF) {
    widen_avx2(m, lo * rc, (hi - lo) * rc, w);
    for (int32_t g = g0; g < g1; g++) {
      int64_t s0 = ar_index_vector_at(&m->seg, g), s1 = ar_index_vector_at(&m->seg, g + 1);
      group_avx2(m, xt, g, s0, s1, w + (s0 - lo) * rc, r0, ot);
    }
    return;
  }
  const int64_t ech = WBUF / rc;
  for (int32_t g = g0; g < g1; g++) {
    int64_t s0 = ar_index_vector_at(&m->seg, g), s1 = ar_index_vector_at(&m->seg, g + 1);
    for (int64_t e0 = s0; e0 < s1; e0 += ech) {
      int64_t e1 = s1 - e0 < ech ? s1 : e0 + ech;
      widen_avx2(m, e0 * rc, (e1 - e0) * rc, w);
      group_avx2(m, xt, g, e0, e1, w, r0, ot);
    }
  }
}

AR_TARGET_SPARSE_AVX2 static void sparse_avx2(const spm_t *m, const pix_t *px, int64_t qbeg,
                                              int64_t npix, const float *bias, ar_activation_t act,
                                              float *xt, float *out) {
  float ot[ROWS_MAX * T] __attribute__((aligned(64)));
  float w[WBUF] __attribute__((aligned(64)));
  const int32_t rb = m->rb;
  const int32_t rows_chunk = rb <= 8 ? (8 / rb) * rb : rb;
  for (int64_t q0 = qbeg; q0 < npix; q0 += T) {
    int32_t np = npix - q0 < T ? (int32_t)(npix - q0) : T;
    tile_in_avx2(px, q0, np, xt);
    for (int32_t r0 = 0; r0 < m->o; r0 += rows_chunk) {
      int32_t nr = m->o - r0 < rows_chunk ? m->o - r0 : rows_chunk;
      for (int32_t r = 0; r < nr; r++) {
        __m256 b = _mm256_set1_ps(bias ? bias[r0 + r] : 0.0f);
        for (int32_t p = 0; p < T; p += 8) _mm256_store_ps(ot + r * T + p, b);
      }
      chunk_avx2(m, xt, r0 / rb, (r0 + nr) / rb, r0, ot, w);
      tile_out_avx2(ot, nr, np, out + q0 * m->o + r0, m->o, act);
    }
  }
}

/* ---------------------------------------------------------------- AVX-512F rows
 * A tile row (T = 32 pixels) is two 16-float accumulators; one row alone is latency-bound (each
 * entry's FMA waits for the one before, 4 cycles), so unblocked rows go four at a time, entry j of
 * each in turn (8 independent chains), and each row's longer tail alone. Every row still sums its
 * own entries in stored order, one fused multiply-add each: the same bits as the other loops. */
#define SPARSE_ROWS4_512(NAME, IT)                                                               \
  AR_TARGET_SPARSE_AVX512 static void NAME(const float *restrict xt, const IT *restrict ix,     \
                                           const int64_t *e, const float *restrict w,           \
                                           float *restrict acc) {                               \
    __m512 a[4][2];                                                                              \
    int64_t n[4], mn = INT64_MAX;                                                                \
    for (int r = 0; r < 4; r++) {                                                                \
      a[r][0] = _mm512_load_ps(acc + r * T);                                                     \
      a[r][1] = _mm512_load_ps(acc + r * T + 16);                                                \
      n[r] = e[r + 1] - e[r];                                                                    \
      mn = n[r] < mn ? n[r] : mn;                                                                \
    }                                                                                            \
    for (int64_t j = 0; j < mn; j++)                                                             \
      _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {                                      \
        const float *x = xt + (int64_t)ix[e[r] + j] * T;                                         \
        const __m512 wv = _mm512_set1_ps(w[e[r] + j]);                                           \
        a[r][0] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x), a[r][0]);                              \
        a[r][1] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + 16), a[r][1]);                         \
      }                                                                                          \
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {                                        \
      for (int64_t j = mn; j < n[r]; j++) {                                                      \
        const float *x = xt + (int64_t)ix[e[r] + j] * T;                                         \
        const __m512 wv = _mm512_set1_ps(w[e[r] + j]);                                           \
        a[r][0] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x), a[r][0]);                              \
        a[r][1] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + 16), a[r][1]);                         \
      }                                                                                          \
      _mm512_store_ps(acc + r * T, a[r][0]);                                                     \
      _mm512_store_ps(acc + r * T + 16, a[r][1]);                                                \
    }                                                                                            \
  }
SPARSE_ROWS4_512(rows4_u8_avx512, uint8_t)
SPARSE_ROWS4_512(rows4_u16_avx512, uint16_t)
SPARSE_ROWS4_512(rows4_i32_avx512, int32_t)

/* chunk_avx2 with unblocked rows four at a time (entries relative to the widened values w, whose
 * first is entry lo). */
AR_TARGET_SPARSE_AVX512 static void chunk_avx512(const spm_t *m, const float *restrict xt, int32_t g0,
                                                 int32_t g1, int32_t r0, float *restrict ot,
                                                 float *restrict w) {
  const int64_t lo = ar_index_vector_at(&m->seg, g0), hi = ar_index_vector_at(&m->seg, g1);
  if (m->rb * m->cb != 1 || hi - lo > WBUF) {
    chunk_avx2(m, xt, g0, g1, r0, ot, w);
    return;
  }
  widen_avx2(m, lo, hi - lo, w);
  int32_t g = g0;
  for (; g + 4 <= g1; g += 4) {
    int64_t e[5];
    for (int r = 0; r <= 4; r++) e[r] = ar_index_vector_at(&m->seg, g + r) - lo;
    float *acc = ot + (g - r0) * T;
    switch (m->idx.type) {
    case AR_IDX_UINT8: rows4_u8_avx512(xt, (const uint8_t *)m->idx.data + lo, e, w, acc); break;
    case AR_IDX_UINT16: rows4_u16_avx512(xt, (const uint16_t *)m->idx.data + lo, e, w, acc); break;
    default: rows4_i32_avx512(xt, (const int32_t *)m->idx.data + lo, e, w, acc); break;
    }
  }
  for (; g < g1; g++) {
    const int64_t s0 = ar_index_vector_at(&m->seg, g), s1 = ar_index_vector_at(&m->seg, g + 1);
    group_avx2(m, xt, g, s0, s1, w + (s0 - lo), r0, ot);
  }
}

AR_TARGET_SPARSE_AVX512 static void sparse_avx512(const spm_t *m, const pix_t *px, int64_t qbeg,
                                                  int64_t npix, const float *bias, ar_activation_t act,
                                                  float *xt, float *out) {
  float ot[ROWS_MAX * T] __attribute__((aligned(64)));
  float w[WBUF] __attribute__((aligned(64)));
  const int32_t rb = m->rb;
  const int32_t rows_chunk = rb <= 8 ? (8 / rb) * rb : rb;
  for (int64_t q0 = qbeg; q0 < npix; q0 += T) {
    int32_t np = npix - q0 < T ? (int32_t)(npix - q0) : T;
    tile_in_avx2(px, q0, np, xt);
    for (int32_t r0 = 0; r0 < m->o; r0 += rows_chunk) {
      int32_t nr = m->o - r0 < rows_chunk ? m->o - r0 : rows_chunk;
      for (int32_t r = 0; r < nr; r++) {
        const __m512 b = _mm512_set1_ps(bias ? bias[r0 + r] : 0.0f);
        _mm512_store_ps(ot + r * T, b);
        _mm512_store_ps(ot + r * T + 16, b);
      }
      chunk_avx512(m, xt, r0 / rb, (r0 + nr) / rb, r0, ot, w);
      tile_out_avx2(ot, nr, np, out + q0 * m->o + r0, m->o, act);
    }
  }
}
#endif

/* ---------------------------------------------------------------- expanded path
 *
 * A filter with a good share of its values stored, on many pixels, runs faster as a dense 1x1
 * convolution than entry by entry (the face detector's [32,1,1,8] and [64,1,1,16] filters hold about
 * 30 % of their values: 2-5 entries per row, where the per-row set-up and the two transposes cost
 * more than the multiply-adds). The eval expands the stored values into wt = [I][O] (zeros
 * elsewhere) in its scratch, once, on the calling thread; then every output pixel is
 *   out[p, o] = act(bias[o] + sum over c = 0 .. I-1, in order, of in[p, c] * wt[c, o])
 * one fused multiply-add per input channel, straight from NHWC input to NHWC output. The zeros
 * add exactly nothing to a finite sum (only the sign of a zero sum, or an inf / NaN input, can
 * tell the two paths apart), and the choice depends on the shapes alone, so the bytes are the same
 * for every thread count and ISA level. */

/* Element (input channel c, output channel k) of the dense filter: wt = [I][O], or on aarch64
 * [O][I] (B of the NEON GEMM, kernels/sgemm.h); ni = I, no = O. */
#if SPARSE_DENSE_NEON
#define DENSE_AT(c, k, ni, no) ((int64_t)(k) * (ni) + (c))
#else
#define DENSE_AT(c, k, ni, no) ((int64_t)(c) * (no) + (k))
#endif

/* wt = the dense filter (DENSE_AT's layout). */
static void dense_build(const spm_t *m, float *restrict wt) {
  float w[WBUF];
  const int32_t o = m->o, rb = m->rb, cb = m->cb, rc = rb * cb;
  const int64_t ech = WBUF / rc;
  memset(wt, 0, (size_t)o * (size_t)m->i * sizeof(float));
  for (int32_t g = 0; g < m->groups; g++) {
    const int64_t s0 = ar_index_vector_at(&m->seg, g), s1 = ar_index_vector_at(&m->seg, g + 1);
    for (int64_t e0 = s0; e0 < s1; e0 += ech) {
      const int64_t e1 = s1 - e0 < ech ? s1 : e0 + ech;
#if AR_HAVE_AVX2_CLONE
      if (sparse_isa() >= 1) widen_avx2(m, e0 * rc, (e1 - e0) * rc, w);
      else
#endif
        widen_portable(m, e0 * rc, (e1 - e0) * rc, w);
      for (int64_t j = e0; j < e1; j++) {
        const int64_t c0 = ar_index_vector_at(&m->idx, j) * cb;
        const float *wj = w + (j - e0) * rc;
        for (int32_t r = 0; r < rb; r++)
          for (int32_t t = 0; t < cb; t++) wt[DENSE_AT(c0 + t, (int64_t)g * rb + r, m->i, o)] = wj[r * cb + t];
      }
    }
  }
}

/* Input of output pixel q of one image. */
static AR_ALWAYS_INLINE const float *pix_src(const pix_t *px, int64_t q) {
  const int64_t oy = q / px->ow, ox = q - oy * px->ow;
  return px->in + ((oy * px->sh) * (int64_t)px->w + ox * px->sw) * px->ci;
}

/* Pixels [q0, q1) of one image, portable: each output row is its own accumulator, channel after
 * channel. */
static AR_ALWAYS_INLINE void dense_body(const float *restrict wt, int32_t o, const pix_t *px, int64_t q0,
                                        int64_t q1, const float *bias, ar_activation_t act,
                                        float *restrict out) {
  for (int64_t q = q0; q < q1; q++) {
    const float *x = pix_src(px, q);
    float *y = out + q * o;
    for (int32_t k = 0; k < o; k++) y[k] = bias ? bias[k] : 0.0f;
    for (int32_t c = 0; c < px->ci; c++) {
      const float xv = x[c];
      for (int32_t k = 0; k < o; k++) y[k] = fmaf(xv, wt[DENSE_AT(c, k, px->ci, o)], y[k]);
    }
    ar__activate(y, (size_t)o, act);
  }
}
static void dense_portable(const float *restrict wt, int32_t o, const pix_t *px, int64_t q0, int64_t q1,
                           const float *bias, ar_activation_t act, float *restrict out) {
  dense_body(wt, o, px, q0, q1, bias, act, out);
}

#if AR_HAVE_AVX2_CLONE
AR_TARGET_SPARSE_AVX2 static void dense_avx2(const float *restrict wt, int32_t o, const pix_t *px,
                                             int64_t q0, int64_t q1, const float *bias,
                                             ar_activation_t act, float *restrict out) {
  dense_body(wt, o, px, q0, q1, bias, act, out);
}

/* PB pixels x NV vectors of 16 output channels (from channel ob) in registers over all input
 * channels: per channel NV loads of wt, PB broadcasts, PB * NV FMAs. */
#define DENSE512(PB, NV)                                                                          \
  AR_TARGET_SPARSE_AVX512 static void dense512_##PB##x##NV(                                       \
      const float *restrict wt, int32_t o, int32_t ci, const float *const *src, int32_t ob,       \
      const __mmask16 *mk, const float *bias, float *const *dst) {                                \
    __m512 acc[PB][NV];                                                                           \
    _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                        \
      const __m512 b = bias ? _mm512_maskz_loadu_ps(mk[v], bias + ob + 16 * v) : _mm512_setzero_ps(); \
      _Pragma("GCC unroll 8") for (int p = 0; p < PB; p++) acc[p][v] = b;                         \
    }                                                                                             \
    const float *w = wt + ob;                                                                     \
    for (int32_t c = 0; c < ci; c++, w += o) {                                                    \
      __m512 wv[NV];                                                                              \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) wv[v] = _mm512_maskz_loadu_ps(mk[v], w + 16 * v); \
      _Pragma("GCC unroll 8") for (int p = 0; p < PB; p++) {                                      \
        const __m512 x = _mm512_set1_ps(src[p][c]);                                               \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[p][v] = _mm512_fmadd_ps(x, wv[v], acc[p][v]); \
      }                                                                                           \
    }                                                                                             \
    _Pragma("GCC unroll 8") for (int p = 0; p < PB; p++)                                          \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                        \
        _mm512_mask_storeu_ps(dst[p] + ob + 16 * v, mk[v], acc[p][v]);                            \
  }
DENSE512(8, 1)
DENSE512(8, 2)
DENSE512(4, 3)
DENSE512(4, 4)
DENSE512(1, 1)
DENSE512(1, 2)
DENSE512(1, 3)
DENSE512(1, 4)

typedef void (*dense512_fn)(const float *restrict, int32_t, int32_t, const float *const *, int32_t,
                            const __mmask16 *, const float *, float *const *);

/* Pixels [q0, q1) of one image: blocks of up to 64 pixels, within them blocks of 64 output
 * channels (the filter's columns stay in L1 over the block), within those 8 or 4 pixels at a time. */
AR_TARGET_SPARSE_AVX512 static void dense_avx512(const float *restrict wt, int32_t o, const pix_t *px,
                                                 int64_t q0, int64_t q1, const float *bias,
                                                 ar_activation_t act, float *restrict out) {
  static const dense512_fn full[5] = {NULL, dense512_8x1, dense512_8x2, dense512_4x3, dense512_4x4};
  static const dense512_fn one[5] = {NULL, dense512_1x1, dense512_1x2, dense512_1x3, dense512_1x4};
  const float *src[64];
  float *dst[64];
  for (int64_t qb = q0; qb < q1; qb += 64) {
    const int32_t np = q1 - qb < 64 ? (int32_t)(q1 - qb) : 64;
    for (int32_t p = 0; p < np; p++) {
      src[p] = pix_src(px, qb + p);
      dst[p] = out + (qb + p) * o;
    }
    for (int32_t ob = 0; ob < o; ob += 64) {
      __mmask16 mk[4];
      int nv = 0;
      for (int v = 0; v < 4; v++) {
        const int32_t left = o - ob - 16 * v;
        mk[v] = left >= 16 ? (__mmask16)0xffff : left > 0 ? (__mmask16)((1u << left) - 1u) : 0;
        if (left > 0) nv++;
      }
      const int32_t pb = nv <= 2 ? 8 : 4;
      int32_t p = 0;
      for (; p + pb <= np; p += pb) full[nv](wt, o, px->ci, src + p, ob, mk, bias, dst + p);
      for (; p < np; p++) one[nv](wt, o, px->ci, src + p, ob, mk, bias, dst + p);
    }
    ar__activate(out + qb * o, (size_t)np * (size_t)o, act);
  }
}
#endif

/* ---------------------------------------------------------------- eval */

/* Pixels [qbeg, qend) (qbeg a multiple of T) of one "image" of pixels with I contiguous channels
 * each (a 1x1 conv or FC rows); xt is T * I floats of scratch. */
static void run(const spm_t *m, const pix_t *px, int64_t qbeg, int64_t qend, const float *bias,
                ar_activation_t act, float *xt, float *out) {
  const int isa = sparse_isa();
#if AR_HAVE_AVX2_CLONE
  if (isa >= 2) { sparse_avx512(m, px, qbeg, qend, bias, act, xt, out); return; }
  if (isa == 1) { sparse_avx2(m, px, qbeg, qend, bias, act, xt, out); return; }
#endif
  (void)isa;
  sparse_portable(m, px, qbeg, qend, bias, act, xt, out);
}

/* One eval, cut into tiles of T output pixels (rows): unit u is tile u % tiles of image u / tiles.
 * Each pixel's sums run over its row's stored entries in stored order whichever thread takes it,
 * so the output is the same for every thread count. */
typedef struct {
  spm_t m;
  pix_t px;                    /* image 0 */
  int64_t image_floats;        /* input floats per image */
  int64_t npix, tiles;         /* output pixels and tiles per image */
  const float *bias;
  ar_activation_t act;
  float *scratch;              /* slot s's transposed tile at scratch + s * I * T */
  float *out;
  bool dense;                  /* the expanded path: scratch holds wt = [I][O] */
} sparse_ctx_t;

/* Pixels [q0, q1) of one image on the expanded path. */
static void dense_run(const sparse_ctx_t *c, const pix_t *px, int64_t q0, int64_t q1, float *out) {
  const int isa = sparse_isa();
#if AR_HAVE_AVX2_CLONE
  if (isa == 2) { dense_avx512(c->scratch, c->m.o, px, q0, q1, c->bias, c->act, out); return; }
  if (isa == 1) { dense_avx2(c->scratch, c->m.o, px, q0, q1, c->bias, c->act, out); return; }
#endif
  (void)isa;
#if SPARSE_DENSE_NEON
  /* Unit strides: pixels [q0, q1) are consecutive rows of the input, A of the NEON GEMM (its
   * order: the terms, then the bias; within float rounding of the portable loop's). */
  if (px->sh == 1 && px->sw == 1 && px->w == px->ow && ar_sgemm_own_available()) {
    ar_sgemm_nt(px->in + q0 * px->ci, px->ci, c->scratch, px->ci, c->bias, out + q0 * c->m.o,
                c->m.o, q1 - q0, c->m.o, px->ci, c->act);
    return;
  }
#endif
  dense_portable(c->scratch, c->m.o, px, q0, q1, c->bias, c->act, out);
}

/* The least work (multiply-adds plus the tile's transposed floats) worth a run of tiles on another
 * core: about a microsecond. */
#define SPARSE_MIN_PART_WORK (32 * 1024)

static void sparse_tiles(void *ctx, int32_t slot, int64_t u0, int64_t u1) {
  const sparse_ctx_t *c = ctx;
  float *xt = c->scratch + (int64_t)slot * c->m.i * T;
  for (int64_t u = u0; u < u1;) {
    const int64_t b = u / c->tiles, t0 = u % c->tiles;
    const int64_t t1 = AR_MIN(c->tiles, t0 + (u1 - u));   /* this image's tiles in the range */
    pix_t px = c->px;
    px.in += b * c->image_floats;
    if (c->dense) dense_run(c, &px, t0 * T, AR_MIN(c->npix, t1 * T), c->out + b * c->npix * c->m.o);
    else run(&c->m, &px, t0 * T, AR_MIN(c->npix, t1 * T), c->bias, c->act, xt, c->out + b * c->npix * c->m.o);
    u += t1 - t0;
  }
}

static void sparse_par(const ar_node_t *node, sparse_ctx_t *c, int64_t images) {
  c->tiles = (c->npix + T - 1) / T;
  c->scratch = node->scratch;
  const int64_t units = images * c->tiles;
  const uint64_t dense_bytes = (uint64_t)c->m.o * (uint64_t)c->m.i * sizeof(float);
  c->dense = dense_pick(&c->m, images * c->npix) && node->scratch_bytes >= dense_bytes;
  if (c->dense) dense_build(&c->m, c->scratch);
  const int64_t stored = c->dense ? (int64_t)c->m.o * c->m.i
                                  : ar_index_vector_at(&c->m.seg, c->m.groups) * c->m.rb * c->m.cb;
  const int64_t tile_work = (stored + c->m.i + c->m.o) * T;
  /* The expanded path reads its one shared filter and needs no slot of its own; the entry-by-entry
   * loop gets as many participants as its scratch has transposed tiles. */
  const uint64_t slot_bytes = (uint64_t)c->m.i * T * sizeof(float);
  const int32_t slots = c->dense ? ar_parallel_threads(node)
                        : slot_bytes ? (int32_t)(node->scratch_bytes / slot_bytes) : 1;
  /* Tiles split by thread count: a tile's pixels come out the same whichever run holds it. */
  ar_parallel_for_split_slots(node, units, 1, (SPARSE_MIN_PART_WORK + tile_work - 1) / tile_work, slots,
                              sparse_tiles, c);
}

void ar__sparse_fc_eval(const ar_node_t *node) {
  sparse_ctx_t c;
  if (spm_parse(node, node->inputs[1], &c.m, false, NULL, 0) != 0) return;   /* checked at prepare */
  const ar_tview_t *in = node->inputs[0];
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  int64_t elems = 1;
  for (int32_t d = 0; d < in->rank; d++) elems *= in->dims[d];
  const int64_t rows = elems / c.m.i;
  c.px = (pix_t){(const float *)in->data, (int32_t)rows, c.m.i, 1, 1, (int32_t)rows};
  c.image_floats = 0;
  c.npix = rows;
  c.bias = bias ? (const float *)bias->data : NULL;
  c.act = node->options->fully_connected.activation;
  c.out = node->outputs[0]->data;
  sparse_par(node, &c, 1);
}

void ar__sparse_conv_eval(const ar_node_t *node) {
  sparse_ctx_t c;
  const ar_tview_t *in = node->inputs[0], *out = node->outputs[0];
  if (spm_parse(node, node->inputs[1], &c.m, false, NULL, 0) != 0) return;   /* checked at prepare */
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  const ar_conv2d_options_t *o = &node->options->conv2d;
  const int32_t n = in->dims[0], h = in->dims[1], w = in->dims[2], ci = in->dims[3];
  const int32_t oh = out->dims[1], ow = out->dims[2];
  c.px = (pix_t){(const float *)in->data, w, ci, o->stride_h, o->stride_w, ow};
  c.image_floats = (int64_t)h * w * ci;
  c.npix = (int64_t)oh * ow;
  c.bias = bias ? (const float *)bias->data : NULL;
  c.act = o->activation;
  c.out = out->data;
  sparse_par(node, &c, n);
}
