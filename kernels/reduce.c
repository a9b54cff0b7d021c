/* reduce.c - TFLite MEAN (float32; uint8 / int8 / int16 over any axes; int32, int64); SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD (float32, int32,
 * int64; MAX/MIN also uint8, int8); ARG_MAX, ARG_MIN (float32, int32, uint8, int8 in; int32 or
 * int64 indices out).
 *
 * Axes come from input 1 (constant int32, any shape; negative axes count from the end, repeats are
 * ignored, as TFLite's reduce.cc). keep_dims keeps reduced dims as 1, else they are removed. The
 * sum runs in float in input order and is divided by the reduced element count, as TFLite's
 * reference Mean. Axes {1,2} of a rank-4 NHWC tensor (global average pooling) take a fast path:
 * a contiguous C-long accumulation per pixel (in registers at AVX-512F), channels split by thread
 * count. Other axis sets use the output itself as the accumulator with an odometer over the input,
 * so there is no scratch either way.
 *
 * Quantized MEAN (uint8 / int8) follows TFLite's builtin kernel, whose optimized path takes a
 * rank-4 input reduced over exactly axes {1,2} with keep_dims (global average pooling, the only
 * form the models use): per channel the int32 sum of the raw codes
 * over H*W, rescaled with QuantizeMultiplier(float32 s_in / (float32(H*W) * s_out)), plus
 * bias = z_out - round_away(float32(z_in * s_in / s_out)) (the zero point folded in float), clamped
 * to the type's range. The builtin kernel rescales whole blocks of 16 channels with its vector code,
 * which rounds half up (ar_mbqm_up), and the last C % 16 channels with the scalar
 * MultiplyByQuantizedMultiplier (ar_mbqm, ties away from zero); so does this one
 * (../shared/golden_q/NOTES.md). Any other axes, or no keep_dims, take TFLite's reference integer
 * mean (QuantizedMeanOrSum): the int32 sum of the codes per output, minus z_in * n, rescaled by
 * QuantizeMultiplier(double s_in / double s_out) with 1/n folded into the multiplier (shifted left by
 * min(floor(log2 n), 32, 31 + shift), divided by n) and z_out added, clamped; no axes copies the codes.
 * int16 MEAN (zero points 0, as TFLite requires) takes that reference integer mean on every axis
 * set (TFLite's {1,2} keep_dims form, reference_integer_ops::Mean, is the same arithmetic).
 * int32 / int64 MEAN: TFLite's reference Mean<T, int64>: int64 sums (wrapping), divided by n with
 * C's truncation toward zero, cast to T; an empty input gives 0.
 */
#include <float.h>
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_quant.h"
#include "kernels/ar_parallel.h"
#include "kernels/conv_util.h"

#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>
#endif

/* The least work (input elements read) worth a chunk of outputs of its own on the thread pool. */
#define REDUCE_CHUNK_ELEMS (32 * 1024)

#define AR_MEAN_MAX_RANK AR_MAX_RANK

typedef struct {
  bool global_hw;              /* rank-4 input, axes {1,2} */
  int32_t rank;                /* input rank (general path) */
  int64_t dims[AR_MEAN_MAX_RANK];
  int64_t ostride[AR_MEAN_MAX_RANK];   /* output element stride per input dim; 0 when reduced */
  int64_t n_in, n_out;
  float count;                 /* input elements per output element */
  ar_dtype_t dtype;            /* MEAN: FLOAT32, UINT8, INT8, INT16, INT32 or INT64 */
  int32_t qmult, qshift, qbias, qlo, qhi;   /* quantized MEAN: rescale, folded zero points, range */
  /* Quantized MEAN over any other axes (issue 28; TFLite's reference QuantizedMeanOrSum): int32 sums
   * of the raw codes in scratch, then MultiplyByQuantizedMultiplier(sum - z_in * n, m', e') + z_out
   * with (m', e') the input/output rescale with 1/n folded in as TFLite folds it. */
  bool qgeneral;
  bool qcopy;                  /* no axes: TFLite copies the codes */
  int32_t gz_in, gz_out, gmult, gshift;
  int64_t gcount;              /* input elements per output element */
} mean_state_t;

/* Axes, keep_dims and the output shape (any input dtype); fills the shape walk of *st. */
static int mean_shape(const ar_node_t *node, mean_state_t *st, char *msg, size_t msg_bytes) {
  int rc;
  const ar_tview_t *in = node->inputs[0], *axes = node->inputs[1];
  if ((rc = ar_k_check_dtype(node, axes, "axes (input 1)", AR_DTYPE_INT32, msg, msg_bytes)))
    return rc;
  if (!axes->is_constant || !axes->data)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED,
                    "axes (input 1) is not a constant (dynamic output shapes are not supported)");
  const int32_t rank = in->rank;
  bool reduced[AR_MAX_RANK] = {false};
  int64_t n_axes = ar_k_elements(axes);
  for (int64_t i = 0; i < n_axes; i++) {
    int32_t a;
    memcpy(&a, (const char *)axes->data + i * sizeof(int32_t), sizeof a);
    int32_t k = a < 0 ? a + rank : a;
    if (k < 0 || k >= rank)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "axis %d out of range for rank %d", (int)a, (int)rank);
    reduced[k] = true;
  }
  bool keep = node->options ? node->options->reducer.keep_dims : false;
  int32_t od[AR_MAX_RANK] = {0}, orank = 0;
  memset(st, 0, sizeof *st);
  st->rank = rank;
  st->n_in = 1; st->n_out = 1;
  for (int32_t d = 0; d < rank; d++) {
    st->dims[d] = in->dims[d];
    st->n_in *= in->dims[d];
    if (!reduced[d]) { od[orank++] = in->dims[d]; st->n_out *= in->dims[d]; }
    else if (keep) od[orank++] = 1;
  }
  if ((rc = ar_k_check_output_shape(node, orank, od, msg, msg_bytes))) return rc;
  int64_t s = 1;
  for (int32_t d = rank - 1; d >= 0; d--) {
    st->ostride[d] = reduced[d] ? 0 : s;
    if (!reduced[d]) s *= in->dims[d];
  }
  st->count = st->n_out > 0 ? (float)(st->n_in / st->n_out) : 1.0f;
  st->global_hw = rank == 4 && !reduced[0] && reduced[1] && reduced[2] && !reduced[3];
  return 0;
}

static int mean_plan(const ar_node_t *node, mean_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *out = node->outputs[0];
  const ar_dtype_t dt = in->dtype;
  if (dt != AR_DTYPE_FLOAT32 && dt != AR_DTYPE_UINT8 && dt != AR_DTYPE_INT8 && dt != AR_DTYPE_INT16 &&
      dt != AR_DTYPE_INT32 && dt != AR_DTYPE_INT64)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0 has dtype %s (float32, uint8, "
                    "int8, int16, int32 or int64)", ar_dtype_name(dt));
  if ((rc = ar_k_check_dtype(node, out, "output 0", dt, msg, msg_bytes))) return rc;
  if ((rc = mean_shape(node, st, msg, msg_bytes))) return rc;
  st->dtype = dt;
  if (dt == AR_DTYPE_FLOAT32) return 0;
  if (dt == AR_DTYPE_INT32 || dt == AR_DTYPE_INT64) {   /* plain integers: int64 sums, truncated / n */
    st->qgeneral = true;
    st->gcount = st->n_out > 0 ? st->n_in / st->n_out : 0;
    return 0;
  }
  const ar_quant_t *qi = in->quant, *qo = out->quant;
  if (!qi || qi->n != 1 || !qo || qo->n != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "%s input 0 and output 0 need per-tensor "
                    "quantization", ar_dtype_name(dt));
  if (dt == AR_DTYPE_INT16 && (qi->zero_point[0] != 0 || qo->zero_point[0] != 0))
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "int16 input 0 and output 0 need zero point 0 "
                    "(input %lld, output %lld), as TFLite requires", (long long)qi->zero_point[0],
                    (long long)qo->zero_point[0]);
  bool keep = node->options ? node->options->reducer.keep_dims : false;
  if (dt == AR_DTYPE_INT16 || !st->global_hw || !keep || ar_k_elements(node->inputs[1]) != 2) {
    /* Not the optimized form: TFLite's reference integer mean. */
    st->qgeneral = true;
    st->qcopy = ar_k_elements(node->inputs[1]) == 0;
    st->gz_in = (int32_t)qi->zero_point[0];
    st->gz_out = (int32_t)qo->zero_point[0];
    st->gcount = st->n_out > 0 ? st->n_in / st->n_out : 0;
    int32_t m;
    int e;
    ar_quantize_multiplier((double)qi->scale[0] / (double)qo->scale[0], &m, &e);
    if (st->gcount > 0) {
      int sh = 63 - __builtin_clzll((unsigned long long)st->gcount);
      if (sh > 32) sh = 32;
      if (sh > 31 + e) sh = 31 + e;
      m = (int32_t)(((int64_t)m * ((int64_t)1 << sh)) / st->gcount);
      e -= sh;
    }
    st->gmult = m;
    st->gshift = e;
    return ar_quant_type_range(dt, &st->qlo, &st->qhi);
  }
  const float s_in = qi->scale[0], s_out = qo->scale[0];
  const int32_t z_in = (int32_t)qi->zero_point[0], z_out = (int32_t)qo->zero_point[0];
  const float n = (float)(st->dims[1] * st->dims[2]);
  float t = (float)z_in * s_in / s_out;
  t = t > 0 ? t + 0.5f : t - 0.5f;
  st->qbias = z_out - (int32_t)t;
  const float real = s_in / (n * s_out);
  int sh;
  ar_quantize_multiplier((double)real, &st->qmult, &sh);
  st->qshift = sh;
  return ar_quant_type_range(dt, &st->qlo, &st->qhi);
}

static int mean_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  mean_state_t st;
  node->state_bytes = sizeof st;
  int rc = mean_plan(node, &st, msg, msg_bytes);
  node->scratch_bytes = rc == 0 && st.global_hw && st.dtype == AR_DTYPE_FLOAT32
                            ? ar__gsum_scratch_bytes(st.dims[0], st.dims[1] * st.dims[2], st.dims[3])
                            : 0;
  if (rc == 0 && st.qgeneral)
    node->scratch_bytes = (uint64_t)(st.n_out > 0 ? st.n_out : 1) *
                          (st.dtype == AR_DTYPE_INT32 || st.dtype == AR_DTYPE_INT64 ? sizeof(uint64_t)
                                                                                     : sizeof(int32_t));
  return rc;
}

static void mean_init(ar_node_t *node) {
  mean_state_t st;
  if (mean_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

/* Quantized MEAN over H, W (keep_dims) of codes of type T: channels [c0, c1) of every image, in
 * blocks of QMEAN_BLOCK channels whose int32 sums stay on the stack while the pixels stream by
 * (a contiguous, vectorizable add per pixel). Integer sums are exact, so any channel cut gives the
 * same bytes; the rescale of channel c depends on c alone (below C - C % 16: ar_mbqm_up). */
#define QMEAN_BLOCK 128
#define QMEAN_RANGE(NAME, T)                                                                  \
  static void NAME(void *ctx, int64_t c0, int64_t c1) {                                      \
    const ar_node_t *node = ctx;                                                             \
    const mean_state_t *st = node->state;                                                    \
    const T *in = node->inputs[0]->data;                                                     \
    T *out = node->outputs[0]->data;                                                         \
    const int64_t B = st->dims[0], HW = st->dims[1] * st->dims[2], C = st->dims[3];          \
    const int64_t C16 = C - C % 16;                                                          \
    int32_t acc[QMEAN_BLOCK];                                                                \
    for (int64_t b = 0; b < B; b++)                                                          \
      for (int64_t cb = c0; cb < c1; cb += QMEAN_BLOCK) {                                    \
        const int64_t nc = AR_MIN((int64_t)QMEAN_BLOCK, c1 - cb);                            \
        for (int64_t j = 0; j < nc; j++) acc[j] = 0;                                         \
        const T *p = in + b * HW * C + cb;                                                   \
        for (int64_t i = 0; i < HW; i++, p += C)                                             \
          for (int64_t j = 0; j < nc; j++) acc[j] += p[j];                                   \
        for (int64_t j = 0; j < nc; j++) {                                                   \
          const int64_t c = cb + j;                                                          \
          int32_t v = c < C16 ? ar_mbqm_up(acc[j], st->qmult, st->qshift)                    \
                              : ar_mbqm(acc[j], st->qmult, st->qshift);                      \
          v += st->qbias;                                                                    \
          v = v < st->qlo ? st->qlo : v > st->qhi ? st->qhi : v;                             \
          out[b * C + c] = (T)v;                                                             \
        }                                                                                    \
      }                                                                                      \
  }
QMEAN_RANGE(qmean_u8_range, uint8_t)
QMEAN_RANGE(qmean_i8_range, int8_t)

/* Channels split by thread count at multiples of 16, none with fewer than REDUCE_CHUNK_ELEMS
 * codes to sum. */
static void qmean_eval(const ar_node_t *node, ar_range_fn fn) {
  const mean_state_t *st = node->state;
  const int64_t B = st->dims[0], HW = st->dims[1] * st->dims[2], C = st->dims[3];
  if (B <= 0 || C <= 0) return;
  const int64_t per = AR_MAX((int64_t)1, B * HW);
  ar_parallel_for_split(node, C, 16, (REDUCE_CHUNK_ELEMS + per - 1) / per, fn, (void *)node);
}

/* Sums of channels [c0, c1) over `npix` pixels of `c` channels from `in`, from 0 in pixel order,
 * into out[c0 .. c1). With AVX-512F up to 64 channels at a time stay in registers over all pixels
 * (the portable loop keeps the sums in memory: a store and reload per pixel); lane by lane the
 * same additions in the same order, so the same bits on every path and for any channel range. */
#if AR_HAVE_AVX2_CLONE
AR_TARGET_AVX512 static void sum_px_avx512(const float *in, int64_t npix, int64_t c, int64_t c0,
                                           int64_t c1, float *out) {
  for (int64_t cb = c0; cb < c1; cb += 64) {
    __mmask16 m[4];
    __m512 acc[4];
    for (int j = 0; j < 4; j++) {
      const int64_t left = c1 - cb - 16 * j;
      m[j] = left >= 16 ? (__mmask16)0xffff : left > 0 ? (__mmask16)((1u << left) - 1u) : 0;
      acc[j] = _mm512_setzero_ps();
    }
    const float *src = in + cb;
    if (m[3] == 0xffff)
      for (int64_t p = 0; p < npix; p++, src += c)
        for (int j = 0; j < 4; j++) acc[j] = _mm512_add_ps(acc[j], _mm512_loadu_ps(src + 16 * j));
    else if (m[1] == 0 && m[0] == 0xffff)
      for (int64_t p = 0; p < npix; p++, src += c) acc[0] = _mm512_add_ps(acc[0], _mm512_loadu_ps(src));
    else
      for (int64_t p = 0; p < npix; p++, src += c)
        for (int j = 0; j < 4; j++)
          if (m[j]) acc[j] = _mm512_add_ps(acc[j], _mm512_maskz_loadu_ps(m[j], src + 16 * j));
    for (int j = 0; j < 4; j++)
      if (m[j]) _mm512_mask_storeu_ps(out + cb + 16 * j, m[j], acc[j]);
  }
}
#endif

static void sum_px(const float *in, int64_t npix, int64_t c, int64_t c0, int64_t c1, float *out) {
#if AR_HAVE_AVX2_CLONE
  if (ar__f32_isa() >= AR_ISA_AVX512) { sum_px_avx512(in, npix, c, c0, c1, out); return; }
#endif
  for (int64_t k = c0; k < c1; k++) out[k] = 0.0f;
  const float *src = in;
  for (int64_t p = 0; p < npix; p++, src += c)
    for (int64_t k = c0; k < c1; k++) out[k] += src[k];
}

typedef struct {
  const float *in;
  int64_t images, hw, c, blocks;
  float *dst;                  /* one block: the sums themselves; else the partial sums */
} gsum_ctx_t;

/* Units [u0, u1): unit u = block u % blocks of image u / blocks. */
static void gsum_units(void *ctx, int64_t u0, int64_t u1) {
  const gsum_ctx_t *g = ctx;
  for (int64_t u = u0; u < u1; u++) {
    const int64_t b = u / g->blocks, p0 = (u % g->blocks) * AR_GSUM_BLOCK;
    const int64_t np = AR_MIN(AR_GSUM_BLOCK, g->hw - p0);
    sum_px(g->in + (b * g->hw + p0) * g->c, np, g->c, 0, g->c, g->dst + u * g->c);
  }
}

/* One block per image: channels [c0, c1) of every image (split by thread count). */
static void gsum_channels(void *ctx, int64_t c0, int64_t c1) {
  const gsum_ctx_t *g = ctx;
  for (int64_t b = 0; b < g->images; b++)
    sum_px(g->in + b * g->hw * g->c, g->hw, g->c, c0, c1, g->dst + b * g->c);
}

uint64_t ar__gsum_scratch_bytes(int64_t b, int64_t hw, int64_t c) {
  const int64_t blocks = (hw + AR_GSUM_BLOCK - 1) / AR_GSUM_BLOCK;
  return blocks > 1 ? (uint64_t)b * (uint64_t)blocks * (uint64_t)c * sizeof(float) : 0;
}

void ar__gsum(const ar_node_t *node, const float *in, int64_t b, int64_t hw, int64_t c, float *partial,
              float *out) {
  const int64_t blocks = (hw + AR_GSUM_BLOCK - 1) / AR_GSUM_BLOCK;
  if (b <= 0 || c <= 0) return;
  if (blocks <= 1) {
    /* channels split by thread count at multiples of 16 (a channel's sum does not depend on the cut) */
    gsum_ctx_t g = {in, b, hw, c, 1, out};
    ar_parallel_for_split(node, c, 16, (REDUCE_CHUNK_ELEMS + b * hw - 1) / (b * hw), gsum_channels, &g);
    return;
  }
  gsum_ctx_t g = {in, b, hw, c, blocks, partial};
  const int64_t units = b * blocks;
  ar_parallel_for(node, units, ar_parallel_grain(units, AR_GSUM_BLOCK * c, REDUCE_CHUNK_ELEMS, 1), gsum_units, &g);
  for (int64_t i = 0; i < b; i++) {
    const float *p = partial + i * blocks * c;
    float *o = out + i * c;
    for (int64_t k = 0; k < c; k++) o[k] = p[k];
    for (int64_t j = 1; j < blocks; j++)
      for (int64_t k = 0; k < c; k++) o[k] += p[j * c + k];
  }
}

/* Sums of the codes of type T into ACC sum[n_out] (zeroed here) with the float path's odometer;
 * ACC uint64_t for int32 / int64 input: TFLite's int64 sums, wrapping. */
#define MEAN_SUMS(NAME, T, ACC)                                                               \
  static void NAME(const mean_state_t *st, const T *in, ACC *sum) {                           \
    for (int64_t j = 0; j < st->n_out; j++) sum[j] = 0;                                      \
    if (st->rank == 0) { sum[0] = (ACC)in[0]; return; }                                      \
    if (st->n_in <= 0) return;                                                               \
    const int32_t last = st->rank - 1;                                                       \
    const int64_t inner = st->dims[last], os = st->ostride[last];                            \
    int64_t idx[AR_MEAN_MAX_RANK] = {0}, off = 0, at = 0;                                    \
    for (int64_t done = 0; done < st->n_in; done += inner, at += inner) {                    \
      if (os) {                                                                              \
        for (int64_t c = 0; c < inner; c++) sum[off + c] += (ACC)in[at + c];                 \
      } else {                                                                               \
        ACC acc = sum[off];                                                                  \
        for (int64_t c = 0; c < inner; c++) acc += (ACC)in[at + c];                          \
        sum[off] = acc;                                                                      \
      }                                                                                      \
      for (int32_t d = last - 1; d >= 0; d--) {                                              \
        off += st->ostride[d];                                                               \
        if (++idx[d] < st->dims[d]) break;                                                   \
        off -= st->ostride[d] * st->dims[d];                                                 \
        idx[d] = 0;                                                                          \
      }                                                                                      \
    }                                                                                        \
  }
MEAN_SUMS(mean_sums_u8, uint8_t, int32_t)
MEAN_SUMS(mean_sums_i8, int8_t, int32_t)
MEAN_SUMS(mean_sums_i16, int16_t, int32_t)
MEAN_SUMS(mean_sums_i32, int32_t, uint64_t)
MEAN_SUMS(mean_sums_i64, int64_t, uint64_t)

/* Quantized MEAN over any axes (mean_state_t.qgeneral): int32 sums of the codes into scratch, then
 * the rescale; int32 / int64 MEAN: int64 sums, divided by n truncating toward zero (TFLite's
 * reference Mean<T, int64>). */
static void qmean_general_eval(const ar_node_t *node) {
  const mean_state_t *st = node->state;
  const void *inp = node->inputs[0]->data;
  void *outp = node->outputs[0]->data;
  if (st->dtype == AR_DTYPE_INT32 || st->dtype == AR_DTYPE_INT64) {
    uint64_t *sum = node->scratch;
    if (st->dtype == AR_DTYPE_INT32) mean_sums_i32(st, inp, sum);
    else mean_sums_i64(st, inp, sum);
    for (int64_t j = 0; j < st->n_out; j++) {
      /* an empty reduction: TFLite writes T's quiet NaN, 0 for an integer */
      const int64_t v = st->gcount > 0 ? (int64_t)sum[j] / st->gcount : 0;
      if (st->dtype == AR_DTYPE_INT32) ((int32_t *)outp)[j] = (int32_t)(uint32_t)(uint64_t)v;
      else ((int64_t *)outp)[j] = v;
    }
    return;
  }
  const size_t es = ar_dtype_size(st->dtype);
  if (st->qcopy) {
    if (outp != inp) memmove(outp, inp, (size_t)st->n_in * es);
    return;
  }
  int32_t *sum = node->scratch;
  if (st->dtype == AR_DTYPE_INT8) mean_sums_i8(st, inp, sum);
  else if (st->dtype == AR_DTYPE_UINT8) mean_sums_u8(st, inp, sum);
  else mean_sums_i16(st, inp, sum);
  for (int64_t j = 0; j < st->n_out; j++) {
    int32_t v = 0;   /* an empty reduction: TFLite leaves the codes 0 */
    if (st->gcount > 0) {
      const int32_t shifted = (int32_t)((uint32_t)sum[j] - (uint32_t)(st->gz_in * (int32_t)st->gcount));
      v = ar_mbqm(shifted, st->gmult, st->gshift) + st->gz_out;
      v = v < st->qlo ? st->qlo : v > st->qhi ? st->qhi : v;
    }
    if (st->dtype == AR_DTYPE_INT8) ((int8_t *)outp)[j] = (int8_t)v;
    else if (st->dtype == AR_DTYPE_UINT8) ((uint8_t *)outp)[j] = (uint8_t)v;
    else ((int16_t *)outp)[j] = (int16_t)v;
  }
}

static void mean_eval(const ar_node_t *node) {
  const mean_state_t *st = node->state;
  if (st->qgeneral) { qmean_general_eval(node); return; }
  if (st->dtype == AR_DTYPE_UINT8) { qmean_eval(node, qmean_u8_range); return; }
  if (st->dtype == AR_DTYPE_INT8) { qmean_eval(node, qmean_i8_range); return; }
  const float *in = node->inputs[0]->data;
  float *out = node->outputs[0]->data;
  const float count = st->count;
  if (st->n_out == 0) return;
  if (st->global_hw) {
    const int64_t B = st->dims[0], HW = st->dims[1] * st->dims[2], C = st->dims[3];
    ar__gsum(node, in, B, HW, C, node->scratch, out);
    for (int64_t j = 0; j < B * C; j++) out[j] /= count;
    return;
  }
  for (int64_t j = 0; j < st->n_out; j++) out[j] = 0.0f;
  if (st->rank > 0 && st->n_in > 0) {
    const int32_t last = st->rank - 1;
    const int64_t inner = st->dims[last], os = st->ostride[last];
    int64_t idx[AR_MEAN_MAX_RANK] = {0}, off = 0;
    for (int64_t done = 0; done < st->n_in; done += inner, in += inner) {
      if (os) { float *o = out + off; for (int64_t c = 0; c < inner; c++) o[c] += in[c]; }
      else { float acc = out[off]; for (int64_t c = 0; c < inner; c++) acc += in[c]; out[off] = acc; }
      for (int32_t d = last - 1; d >= 0; d--) {
        off += st->ostride[d];
        if (++idx[d] < st->dims[d]) break;
        off -= st->ostride[d] * st->dims[d];
        idx[d] = 0;
      }
    }
  } else if (st->rank == 0) {
    out[0] = in[0];
  }
  for (int64_t j = 0; j < st->n_out; j++) out[j] /= count;
}

/* TFLite MEAN (builtin 40): mean over constant axes, keep_dims honoured. */
static const ar_kernel_form_t mean_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32),   /* TFLite marks int8 with 2 and int16 with 3; its kernel, like */
  AR_KF(1, 3, UINT8, UINT8),       /* this one, takes every dtype at every version */
  AR_KF(1, 3, INT8, INT8),
  AR_KF(1, 3, INT16, INT16),
  AR_KF(1, 3, INT32, INT32),
  AR_KF(1, 3, INT64, INT64),
};
const ar_kernel_t ar_kernel_mean = { "MEAN", mean_prepare, mean_init, mean_eval,
  AR_KSUPPORT(mean_forms, 0, -1) };

/* ---- SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD ----
 * Same axes and keep_dims rules as MEAN. The output is the accumulator: set to the identity
 * (0; the type's lowest value for MAX, as TFLite's std::numeric_limits<T>::lowest(), so -FLT_MAX
 * for an empty float reduction; the highest for MIN; 1), then every input element is folded into
 * its output element in input order (the order of TFLite's reference reducer). Integer SUM and
 * PROD wrap. */

enum { RED_SUM, RED_MAX, RED_MIN, RED_PROD };

typedef struct {
  int kind;
  ar_dtype_t dtype;
  mean_state_t m;              /* shape walk shared with MEAN (count unused) */
} reduce_state_t;

static int reduce_kind(ar_op_t op) {
  switch (op) {
  case AR_OP_REDUCE_MAX: return RED_MAX;
  case AR_OP_REDUCE_MIN: return RED_MIN;
  case AR_OP_REDUCE_PROD: return RED_PROD;
  default: return RED_SUM;
  }
}

static int reduce_plan(const ar_node_t *node, reduce_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  memset(st, 0, sizeof *st);
  st->kind = reduce_kind(node->op);
  st->dtype = in->dtype;
  bool ok = in->dtype == AR_DTYPE_FLOAT32 || in->dtype == AR_DTYPE_INT32 || in->dtype == AR_DTYPE_INT64;
  if ((st->kind == RED_MAX || st->kind == RED_MIN) &&
      (in->dtype == AR_DTYPE_UINT8 || in->dtype == AR_DTYPE_INT8))
    ok = true;
  if (!ok)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0 has dtype %s, which this "
                    "operator does not take", ar_dtype_name(in->dtype));
  if ((rc = ar_k_check_dtype(node, node->outputs[0], "output 0", in->dtype, msg, msg_bytes)))
    return rc;
  return mean_shape(node, &st->m, msg, msg_bytes);
}

static int reduce_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  reduce_state_t st;
  node->state_bytes = sizeof st;
  return reduce_plan(node, &st, msg, msg_bytes);
}

static void reduce_init(ar_node_t *node) {
  reduce_state_t st;
  if (reduce_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

/* Fold the input into the output with ACC(acc, x); out was set to INIT. */
#define REDUCE_WALK(T, INIT, ACC)                                                            \
  do {                                                                                       \
    const T *in = node->inputs[0]->data;                                                     \
    T *out = node->outputs[0]->data;                                                         \
    for (int64_t j = 0; j < m->n_out; j++) out[j] = (INIT);                                  \
    if (m->rank == 0) { T acc = out[0], x = in[0]; out[0] = (ACC); break; }                  \
    if (m->n_in == 0) break;                                                                 \
    const int32_t last = m->rank - 1;                                                        \
    const int64_t inner = m->dims[last], os = m->ostride[last];                              \
    int64_t idx[AR_MEAN_MAX_RANK] = {0}, off = 0;                                            \
    for (int64_t done = 0; done < m->n_in; done += inner, in += inner) {                     \
      if (os) {                                                                              \
        T *o = out + off;                                                                    \
        for (int64_t c = 0; c < inner; c++) { T acc = o[c], x = in[c]; o[c] = (ACC); }       \
      } else {                                                                               \
        T acc = out[off];                                                                    \
        for (int64_t c = 0; c < inner; c++) { T x = in[c]; acc = (ACC); }                    \
        out[off] = acc;                                                                      \
      }                                                                                      \
      for (int32_t d = last - 1; d >= 0; d--) {                                              \
        off += m->ostride[d];                                                                \
        if (++idx[d] < m->dims[d]) break;                                                    \
        off -= m->ostride[d] * m->dims[d];                                                   \
        idx[d] = 0;                                                                          \
      }                                                                                      \
    }                                                                                        \
  } while (0)

#define REDUCE_KINDS(T, UT, LOWEST, HIGHEST)                                                 \
  switch (st->kind) {                                                                        \
  case RED_SUM: REDUCE_WALK(T, (T)0, (T)((UT)acc + (UT)x)); break;                           \
  case RED_MAX: REDUCE_WALK(T, LOWEST, x > acc ? x : acc); break;                            \
  case RED_MIN: REDUCE_WALK(T, HIGHEST, x < acc ? x : acc); break;                           \
  default: REDUCE_WALK(T, (T)1, (T)((UT)acc * (UT)x)); break;                                \
  }

static void reduce_eval(const ar_node_t *node) {
  const reduce_state_t *st = node->state;
  const mean_state_t *m = &st->m;
  if (m->n_out == 0) return;
  switch (st->dtype) {
  case AR_DTYPE_FLOAT32:
    switch (st->kind) {
    case RED_SUM: REDUCE_WALK(float, 0.0f, acc + x); break;
    case RED_MAX: REDUCE_WALK(float, -FLT_MAX, x > acc ? x : acc); break;
    case RED_MIN: REDUCE_WALK(float, FLT_MAX, x < acc ? x : acc); break;
    default: REDUCE_WALK(float, 1.0f, acc * x); break;
    }
    break;
  case AR_DTYPE_INT32: REDUCE_KINDS(int32_t, uint32_t, INT32_MIN, INT32_MAX) break;
  case AR_DTYPE_INT64: REDUCE_KINDS(int64_t, uint64_t, INT64_MIN, INT64_MAX) break;
  case AR_DTYPE_UINT8: REDUCE_KINDS(uint8_t, uint32_t, 0, UINT8_MAX) break;
  default: REDUCE_KINDS(int8_t, uint32_t, INT8_MIN, INT8_MAX) break;
  }
}

/* TFLite SUM (74), REDUCE_MAX (82), REDUCE_MIN (89), REDUCE_PROD (81) over constant axes. */
static const ar_kernel_form_t sum_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, INT32, INT32),
  AR_KF(1, 1, INT64, INT64),
};
const ar_kernel_t ar_kernel_sum = { "SUM", reduce_prepare, reduce_init, reduce_eval,
  AR_KSUPPORT(sum_forms, 0, -1) };
static const ar_kernel_form_t reduce_max_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, INT32, INT32),
  AR_KF(1, 1, INT64, INT64),
  AR_KF(1, 1, UINT8, UINT8),
  AR_KF(1, 1, INT8, INT8),
};
const ar_kernel_t ar_kernel_reduce_max = { "REDUCE_MAX", reduce_prepare, reduce_init, reduce_eval,
  AR_KSUPPORT(reduce_max_forms, 0, -1) };
static const ar_kernel_form_t reduce_min_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, INT32, INT32),
  AR_KF(1, 1, INT64, INT64),
  AR_KF(1, 1, UINT8, UINT8),
  AR_KF(1, 1, INT8, INT8),
};
const ar_kernel_t ar_kernel_reduce_min = { "REDUCE_MIN", reduce_prepare, reduce_init, reduce_eval,
  AR_KSUPPORT(reduce_min_forms, 0, -1) };
static const ar_kernel_form_t reduce_prod_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, INT32, INT32),
  AR_KF(1, 1, INT64, INT64),
};
const ar_kernel_t ar_kernel_reduce_prod = { "REDUCE_PROD", reduce_prepare, reduce_init, reduce_eval,
  AR_KSUPPORT(reduce_prod_forms, 0, -1) };

/* ---- ARG_MAX, ARG_MIN ----
 * Input 1 is the axis (constant int32 or int64 with one element, negative counts from the end);
 * the output drops that dim and holds the index of the first maximum (minimum) along it, as
 * TFLite's ArgMinMax: a later element replaces the best only when strictly greater (less), so ties
 * and NaNs after the first element keep the earlier index. Output dtype is the options'
 * output_type (int32 or int64). */

typedef struct {
  bool is_max;
  ar_dtype_t in_dtype, out_dtype;
  int64_t outer, axis_size, inner;
} arg_state_t;

static int arg_plan(const ar_node_t *node, arg_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *ax = node->inputs[1], *o = node->outputs[0];
  memset(st, 0, sizeof *st);
  st->is_max = node->op == AR_OP_ARG_MAX;
  st->in_dtype = in->dtype;
  if (in->dtype != AR_DTYPE_FLOAT32 && in->dtype != AR_DTYPE_INT32 && in->dtype != AR_DTYPE_UINT8 &&
      in->dtype != AR_DTYPE_INT8)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0 has dtype %s (float32, int32, "
                    "uint8, int8)", ar_dtype_name(in->dtype));
  ar_dtype_t want = node->options ? node->options->arg.output_type : AR_DTYPE_FLOAT32;
  if (want != AR_DTYPE_INT32 && want != AR_DTYPE_INT64)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "output_type is %s (int32 or int64)",
                    ar_dtype_name(want));
  if ((rc = ar_k_check_dtype(node, o, "output 0", want, msg, msg_bytes))) return rc;
  st->out_dtype = want;
  if (ax->dtype != AR_DTYPE_INT32 && ax->dtype != AR_DTYPE_INT64)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "axis (input 1) has dtype %s (int32 or int64)",
                    ar_dtype_name(ax->dtype));
  if (!ax->is_constant || !ax->data)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED,
                    "axis (input 1) is not a constant (dynamic output shapes are not supported)");
  if (ar_k_elements(ax) != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "axis (input 1) has %lld elements, expected 1",
                    (long long)ar_k_elements(ax));
  int64_t a;
  if (ax->dtype == AR_DTYPE_INT32) {
    int32_t v;
    memcpy(&v, ax->data, sizeof v);
    a = v;
  } else {
    memcpy(&a, ax->data, sizeof a);
  }
  if (a < 0) a += in->rank;
  if (a < 0 || a >= in->rank)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "axis %lld out of range for rank %d",
                    (long long)a, (int)in->rank);
  int32_t od[AR_MAX_RANK], orank = 0;
  st->outer = 1; st->inner = 1;
  for (int32_t d = 0; d < in->rank; d++) {
    if (d < a) st->outer *= in->dims[d];
    if (d > a) st->inner *= in->dims[d];
    if (d != a) od[orank++] = in->dims[d];
  }
  st->axis_size = in->dims[a];
  return ar_k_check_output_shape(node, orank, od, msg, msg_bytes);
}

static int arg_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  arg_state_t st;
  node->state_bytes = sizeof st;
  return arg_plan(node, &st, msg, msg_bytes);
}

static void arg_init(ar_node_t *node) {
  arg_state_t st;
  if (arg_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

/* Outputs j in [j0, j1) (j = o * inner + i). */
#define ARG_WALK(T)                                                                          \
  do {                                                                                       \
    const T *in = node->inputs[0]->data;                                                     \
    for (int64_t j = j0; j < j1; j++) {                                                      \
      const int64_t o = j / st->inner, i = j % st->inner;                                    \
      const T *p = in + o * st->axis_size * st->inner + i;                                   \
      int64_t best_k = 0;                                                                    \
      if (st->axis_size > 0) {                                                               \
        T best = p[0];                                                                       \
        for (int64_t k = 1; k < st->axis_size; k++) {                                        \
          T v = p[k * st->inner];                                                            \
          if (st->is_max ? v > best : v < best) { best = v; best_k = k; }                    \
        }                                                                                    \
      }                                                                                      \
      if (st->out_dtype == AR_DTYPE_INT32) ((int32_t *)out)[j] = (int32_t)best_k;            \
      else ((int64_t *)out)[j] = best_k;                                                     \
    }                                                                                        \
  } while (0)

/* Integer rows (inner == 1, DeepLab's class axis): the extreme value first (a branch-free pass the
 * compiler vectorizes), then the first index holding it - the same index as the strict-comparison
 * scan above, since integers have no NaN. Rows [j0, j1). */
#define ARG_ROWS(T, OT)                                                                      \
  do {                                                                                       \
    const T *in = node->inputs[0]->data;                                                     \
    OT *o_ = out;                                                                            \
    const int64_t n_ = st->axis_size;                                                        \
    for (int64_t o = j0; o < j1; o++) {                                                      \
      const T *p = in + o * n_;                                                              \
      T best = p[0];                                                                         \
      if (st->is_max)                                                                        \
        for (int64_t k = 1; k < n_; k++) best = p[k] > best ? p[k] : best;                   \
      else                                                                                   \
        for (int64_t k = 1; k < n_; k++) best = p[k] < best ? p[k] : best;                   \
      int64_t k = 0;                                                                         \
      while (p[k] != best) k++;                                                              \
      o_[o] = (OT)k;                                                                         \
    }                                                                                        \
  } while (0)

#if AR_HAVE_AVX2_CLONE
/* 8-bit rows of 2..32 codes (DeepLab's 21 classes per pixel), one 32-byte vector per row: lanes
 * past the row take the value that never wins (the type's lowest for ARG_MAX, highest for
 * ARG_MIN), the extreme is reduced across lanes, and the first lane equal to it is the index - the
 * first index holding the extreme, as the scalar rows. Rows [j0, j1). */
AR_TARGET_AVX2 static void arg_rows8_avx2(const arg_state_t *st, const uint8_t *in, const uint8_t *in_end,
                                          void *out, int64_t j0, int64_t j1) {
  const int64_t n = st->axis_size;
  const bool s8 = st->in_dtype == AR_DTYPE_INT8, o64 = st->out_dtype == AR_DTYPE_INT64;
  const __m256i lane = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
                                        19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
  const __m256i past = _mm256_cmpgt_epi8(lane, _mm256_set1_epi8((char)(n - 1)));   /* lanes >= n */
  /* in the unsigned order the never-winning code is 0 (max) or 255 (min); int8 compares after
   * flipping the sign bit, so the same codes serve both */
  const __m256i flip = _mm256_set1_epi8(s8 ? (char)0x80 : 0);
  const __m256i fill = _mm256_set1_epi8(st->is_max ? 0 : (char)0xFF);
  for (int64_t j = j0; j < j1; j++) {
    const uint8_t *p = in + j * n;
    __m256i v;
    if (in_end - p >= 32) {
      v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    } else {
      uint8_t tmp[32] = {0};
      memcpy(tmp, p, (size_t)n);
      v = _mm256_loadu_si256((const __m256i *)(const void *)tmp);
    }
    v = _mm256_blendv_epi8(_mm256_xor_si256(v, flip), fill, past);
#define ARG_EXT(a, b) (st->is_max ? _mm256_max_epu8((a), (b)) : _mm256_min_epu8((a), (b)))
    __m256i m = ARG_EXT(v, _mm256_permute2x128_si256(v, v, 1));   /* byte 0 ends up the extreme */
    m = ARG_EXT(m, _mm256_srli_si256(m, 8));
    m = ARG_EXT(m, _mm256_srli_si256(m, 4));
    m = ARG_EXT(m, _mm256_srli_si256(m, 2));
    m = ARG_EXT(m, _mm256_srli_si256(m, 1));
#undef ARG_EXT
    const __m256i best = _mm256_broadcastb_epi8(_mm256_castsi256_si128(m));
    const uint32_t hit = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, best));
    const int32_t k = __builtin_ctz(hit);   /* lane 0..n-1: the extreme is a real code */
    if (o64) ((int64_t *)out)[j] = k;
    else ((int32_t *)out)[j] = k;
  }
}
#endif

static int arg_isa_forced = -1;

int ar__argmax_set_isa(int isa) {
  const int best = ar__cpu_has_avx2_fma() ? 1 : 0;
  if (isa < 0) { arg_isa_forced = -1; return best; }
  if (isa > best) return -1;
  arg_isa_forced = isa;
  return isa;
}

/* Outputs [j0, j1): each is its own scan along the axis, so any split gives the same indices. */
static void arg_range(void *ctx, int64_t j0, int64_t j1) {
  const ar_node_t *node = ctx;
  const arg_state_t *st = node->state;
  void *out = node->outputs[0]->data;
#if AR_HAVE_AVX2_CLONE
  if (st->inner == 1 && st->axis_size >= 2 && st->axis_size <= 32 &&
      (st->in_dtype == AR_DTYPE_UINT8 || st->in_dtype == AR_DTYPE_INT8) && arg_isa_forced != 0 &&
      ar__cpu_has_avx2_fma()) {
    const uint8_t *in = node->inputs[0]->data;
    arg_rows8_avx2(st, in, in + st->outer * st->axis_size, out, j0, j1);
    return;
  }
#endif
  if (st->inner == 1 && st->axis_size > 0 && st->in_dtype != AR_DTYPE_FLOAT32) {
    bool o64 = st->out_dtype == AR_DTYPE_INT64;
    switch (st->in_dtype) {
    case AR_DTYPE_INT32: if (o64) ARG_ROWS(int32_t, int64_t); else ARG_ROWS(int32_t, int32_t); break;
    case AR_DTYPE_UINT8: if (o64) ARG_ROWS(uint8_t, int64_t); else ARG_ROWS(uint8_t, int32_t); break;
    default: if (o64) ARG_ROWS(int8_t, int64_t); else ARG_ROWS(int8_t, int32_t); break;
    }
    return;
  }
  switch (st->in_dtype) {
  case AR_DTYPE_FLOAT32: ARG_WALK(float); break;
  case AR_DTYPE_INT32: ARG_WALK(int32_t); break;
  case AR_DTYPE_UINT8: ARG_WALK(uint8_t); break;
  default: ARG_WALK(int8_t); break;
  }
}

static void arg_eval(const ar_node_t *node) {
  const arg_state_t *st = node->state;
  const int64_t n = st->outer * st->inner;
  ar_parallel_for(node, n, ar_parallel_grain(n, st->axis_size > 0 ? st->axis_size : 1, REDUCE_CHUNK_ELEMS, 1),
                  arg_range, (void *)node);
}

/* TFLite ARG_MAX (builtin 56), ARG_MIN (79). */
static const ar_kernel_form_t arg_max_forms[] = {
  AR_KF(1, 2, FLOAT32, INT32),
  AR_KF(1, 2, INT32, INT32),
  AR_KF(1, 2, UINT8, INT32),
  AR_KF(1, 2, INT8, INT32),
  AR_KF(1, 2, FLOAT32, INT64),
  AR_KF(1, 2, INT32, INT64),
  AR_KF(1, 2, UINT8, INT64),
  AR_KF(1, 2, INT8, INT64),
};
const ar_kernel_t ar_kernel_arg_max = { "ARG_MAX", arg_prepare, arg_init, arg_eval,
  AR_KSUPPORT(arg_max_forms, 0, -1) };
static const ar_kernel_form_t arg_min_forms[] = {
  AR_KF(1, 1, FLOAT32, INT32),
  AR_KF(1, 1, INT32, INT32),
  AR_KF(1, 1, UINT8, INT32),
  AR_KF(1, 1, INT8, INT32),
  AR_KF(1, 1, FLOAT32, INT64),
  AR_KF(1, 1, INT32, INT64),
  AR_KF(1, 1, UINT8, INT64),
  AR_KF(1, 1, INT8, INT64),
};
const ar_kernel_t ar_kernel_arg_min = { "ARG_MIN", arg_prepare, arg_init, arg_eval,
  AR_KSUPPORT(arg_min_forms, 0, -1) };
