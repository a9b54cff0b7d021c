/* pool.c - TFLite MAX_POOL_2D and AVERAGE_POOL_2D, float32, uint8 and int8 NHWC.
 *
 * TFLite rules: output size and leading padding from kernels/padding.h (ar_compute_padding; SAME
 * puts the odd row/column at the bottom/right), taps falling outside the input are ignored (max over
 * the in-bounds taps; average divides by the number of in-bounds taps, not the filter area), then
 * the fused activation. The channel loop is innermost and contiguous; each output pixel's C values
 * serve as the accumulator (at AVX-512F, registers: 64 channels at a time over all taps), so there
 * is no scratch.
 *
 * Quantized (uint8 / int8; input and output share scale and zero point, as TFLite's pooling
 * requires, so the codes are pooled directly): the average is the int32 sum of the in-bounds codes
 * divided by their count n with TFLite's builtin rounding - uint8 (sum + n/2) / n, int8 half away
 * from zero ((sum + n/2) / n when sum > 0, else (sum - n/2) / n, C division truncating); then the
 * fused activation as a clamp in the quantized domain (ar_quant_activation_range). The int32 sums
 * use a per-pixel accumulator row in scratch (C * 4 bytes, one per thread).
 *
 * Output rows are shared out over the thread pool, one run of rows per thread
 * (ar_parallel_for_split); every output pixel is computed from its taps alone, so the bytes do not
 * depend on the thread count or the split.
 */
#include <float.h>
#include <math.h>
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

/* The least work (taps x channels) worth a run of output rows of its own on another thread: a few
 * microseconds, against a hand-off of one or two. */
#define POOL_SPLIT_MIN_WORK (4 * 1024)

typedef struct {
  int32_t b, h, w, c, oh, ow;
  int32_t fh, fw, sh, sw, pad_t, pad_l;
  float lo, hi;
  bool post_act;
  ar_activation_t act;
  ar_dtype_t dtype;            /* FLOAT32, UINT8 or INT8 */
  int32_t qlo, qhi;            /* quantized: the activation clamp on codes */
} pool_state_t;

static int pool_plan(const ar_node_t *node, pool_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *out = node->outputs[0];
  const ar_dtype_t dt = in->dtype;
  if (dt != AR_DTYPE_FLOAT32 && dt != AR_DTYPE_UINT8 && dt != AR_DTYPE_INT8)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0 has dtype %s (float32, uint8 "
                    "or int8)", ar_dtype_name(dt));
  if ((rc = ar_k_check_dtype(node, out, "output 0", dt, msg, msg_bytes))) return rc;
  if (dt != AR_DTYPE_FLOAT32) {
    const ar_quant_t *qi = in->quant, *qo = out->quant;
    if (!qi || qi->n != 1 || !qo || qo->n != 1)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "%s input 0 and output 0 need per-tensor "
                      "quantization", ar_dtype_name(dt));
    if (fabsf(qi->scale[0] - qo->scale[0]) > 1.0e-6f || qi->zero_point[0] != qo->zero_point[0])
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "output 0 quantization (scale %g, zero point "
                      "%lld) differs from input 0 (scale %g, zero point %lld)",
                      (double)qo->scale[0], (long long)qo->zero_point[0], (double)qi->scale[0],
                      (long long)qi->zero_point[0]);
  }
  if (in->rank != 4)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input rank %d, expected 4 (NHWC)", (int)in->rank);
  if (!node->options)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "missing Pool2DOptions");
  const ar_pool2d_options_t *p = &node->options->pool2d;
  if (p->stride_h <= 0 || p->stride_w <= 0 || p->filter_h <= 0 || p->filter_w <= 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "stride %dx%d, filter %dx%d must be positive",
                    (int)p->stride_h, (int)p->stride_w, (int)p->filter_h, (int)p->filter_w);
  if (p->padding != AR_PADDING_SAME && p->padding != AR_PADDING_VALID)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "padding %d", (int)p->padding);
  int wrc = ar__check_window(node, p->filter_h, p->filter_w, p->stride_h, p->stride_w, 1, 1, msg, msg_bytes);
  if (wrc != 0) return wrc;
  memset(st, 0, sizeof *st);
  st->act = p->activation;
  st->dtype = dt;
  if (dt == AR_DTYPE_FLOAT32) {
    if ((rc = ar_k_activation(node, st->act, &st->lo, &st->hi, &st->post_act, msg, msg_bytes)))
      return rc;
  } else if (ar_quant_activation_range(st->act, dt, out->quant->scale[0], out->quant->zero_point[0],
                                       &st->qlo, &st->qhi)) {
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "fused activation %d is not supported "
                    "on %s tensors", (int)st->act, ar_dtype_name(dt));
  }
  st->b = in->dims[0]; st->h = in->dims[1]; st->w = in->dims[2]; st->c = in->dims[3];
  st->fh = p->filter_h; st->fw = p->filter_w; st->sh = p->stride_h; st->sw = p->stride_w;
  st->oh = ar_compute_padding(p->padding, st->h, st->fh, st->sh, 1, &st->pad_t);
  st->ow = ar_compute_padding(p->padding, st->w, st->fw, st->sw, 1, &st->pad_l);
  if (st->oh <= 0 || st->ow <= 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "filter %dx%d with VALID padding leaves no output "
                    "for input %dx%d", (int)st->fh, (int)st->fw, (int)st->h, (int)st->w);
  int32_t od[4] = { st->b, st->oh, st->ow, st->c };
  return ar_k_check_output_shape(node, 4, od, msg, msg_bytes);
}

/* A float AVERAGE_POOL_2D whose one output pixel averages the whole image (global average
 * pooling): its sums go through ar__gsum (blocks of pixels shared out over the pool; one block,
 * up to AR_GSUM_BLOCK pixels, sums in tap order exactly as the windowed loop). */
static bool pool_global_avg(const ar_node_t *node, const pool_state_t *st) {
  return node->op == AR_OP_AVERAGE_POOL_2D && st->dtype == AR_DTYPE_FLOAT32 && st->oh == 1 &&
         st->ow == 1 && st->pad_t == 0 && st->pad_l == 0 && st->fh >= st->h && st->fw >= st->w;
}

static int pool_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  pool_state_t st;
  node->state_bytes = sizeof st;
  int rc = pool_plan(node, &st, msg, msg_bytes);
  if (rc) return rc;
  if (st.dtype != AR_DTYPE_FLOAT32)
    node->scratch_bytes = (uint64_t)ar_parallel_threads(node) * (uint64_t)st.c * sizeof(int32_t);
  else if (pool_global_avg(node, &st))
    node->scratch_bytes = ar__gsum_scratch_bytes(st.b, (int64_t)st.h * st.w, st.c);
  else
    node->scratch_bytes = 0;
  return 0;
}

/* Quantized pooling of codes of type T (uint8_t / int8_t) for output rows [q0, q1) (row q: image
 * q / OH, row q % OH), accumulating in `acc` (C int32); S8 selects int8's rounding. */
#define QPOOL_BODY(T, S8)                                                                     \
  do {                                                                                       \
    const T *in = node->inputs[0]->data;                                                     \
    const int64_t C = st->c;                                                                 \
    T *out = (T *)node->outputs[0]->data + q0 * st->ow * C;                                  \
    const int32_t lo = st->qlo, hi = st->qhi;                                                \
    for (int64_t q = q0; q < q1; q++) {                                                      \
      const int32_t b = (int32_t)(q / st->oh), oy = (int32_t)(q % st->oh);                   \
      const T *inb = in + (int64_t)b * st->h * st->w * C;                                    \
      int32_t y0 = oy * st->sh - st->pad_t;                                                  \
      int32_t fy0 = AR_MAX(0, -y0), fy1 = AR_MIN(st->fh, st->h - y0);                        \
      for (int32_t ox = 0; ox < st->ow; ox++, out += C) {                                    \
        int32_t x0 = ox * st->sw - st->pad_l;                                                \
        int32_t fx0 = AR_MAX(0, -x0), fx1 = AR_MIN(st->fw, st->w - x0);                      \
        if (is_max) { /* the max of codes is a code: pooled in place, bytes wide */          \
          for (int64_t c = 0; c < C; c++) out[c] = (T)(S8 ? INT8_MIN : 0);                   \
          for (int32_t fy = fy0; fy < fy1; fy++) {                                           \
            const T *row = inb + ((int64_t)(y0 + fy) * st->w + x0) * C;                      \
            for (int32_t fx = fx0; fx < fx1; fx++) {                                         \
              const T *px = row + (int64_t)fx * C;                                           \
              for (int64_t c = 0; c < C; c++) out[c] = px[c] > out[c] ? px[c] : out[c];      \
            }                                                                                \
          }                                                                                  \
          for (int64_t c = 0; c < C; c++)                                                    \
            out[c] = (T)(out[c] < lo ? lo : out[c] > hi ? hi : out[c]);                      \
          continue;                                                                          \
        }                                                                                    \
        for (int64_t c = 0; c < C; c++) acc[c] = 0;                                          \
        for (int32_t fy = fy0; fy < fy1; fy++) {                                             \
          const T *row = inb + ((int64_t)(y0 + fy) * st->w + x0) * C;                        \
          for (int32_t fx = fx0; fx < fx1; fx++) {                                           \
            const T *px = row + (int64_t)fx * C;                                             \
            for (int64_t c = 0; c < C; c++) acc[c] += px[c];                                 \
          }                                                                                  \
        }                                                                                    \
        const int32_t n = (fy1 - fy0) * (fx1 - fx0);                                         \
        for (int64_t c = 0; c < C; c++) {                                                    \
          int32_t v = acc[c];                                                                \
          if (n > 0) {                                                                       \
            if (S8) v = v > 0 ? (v + n / 2) / n : (v - n / 2) / n;                           \
            else v = (v + n / 2) / n;                                                        \
          }                                                                                  \
          v = v < lo ? lo : v > hi ? hi : v;                                                 \
          out[c] = (T)v;                                                                     \
        }                                                                                    \
      }                                                                                      \
    }                                                                                        \
  } while (0)

static void qpool_rows(const ar_node_t *node, const pool_state_t *st, bool is_max, int32_t *acc,
                       int64_t q0, int64_t q1) {
  if (st->dtype == AR_DTYPE_UINT8) QPOOL_BODY(uint8_t, false);
  else QPOOL_BODY(int8_t, true);
}

static void pool_init(ar_node_t *node) {
  pool_state_t st;
  if (pool_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

#if AR_HAVE_AVX2_CLONE
/* One row of float output pixels with AVX-512F: 64 channels at a time held in registers over all
 * taps (the portable loop keeps them in the output: a store and reload per tap, which on a global
 * pool of 16K pixels is the whole cost), the channel masks set once per row (a call and the masks
 * per pixel were most of a 2x2 pool of 28 channels: [64,64,28] -> 32x32 took 23 us). Per lane the
 * same operations in the same order as the portable loop - max as px > acc ? px : acc (vmaxps
 * returns its second operand on a tie or NaN), sums from 0 in tap order, a division, the clamp
 * with NaN passing - so the same bits. */
AR_TARGET_AVX512 static void pool_row_avx512(const pool_state_t *st, const float *inb, int32_t y0,
                                             int32_t fy0, int32_t fy1, bool is_max, float *out) {
  const int64_t C = st->c;
  const __m512 lo = _mm512_set1_ps(st->lo), hi = _mm512_set1_ps(st->hi);
  for (int64_t cb = 0; cb < C; cb += 64) {
    __mmask16 m[4];
    for (int j = 0; j < 4; j++) {
      const int64_t left = C - cb - 16 * j;
      m[j] = left >= 16 ? (__mmask16)0xffff : left > 0 ? (__mmask16)((1u << left) - 1u) : 0;
    }
    float *o = out + cb;
    for (int32_t ox = 0; ox < st->ow; ox++, o += C) {
      const int32_t x0 = ox * st->sw - st->pad_l;
      const int32_t fx0 = AR_MAX(0, -x0), fx1 = AR_MIN(st->fw, st->w - x0);
      __m512 acc[4];
      for (int j = 0; j < 4; j++) acc[j] = _mm512_set1_ps(is_max ? -FLT_MAX : 0.0f);
      for (int32_t fy = fy0; fy < fy1; fy++) {
        const float *px = inb + ((int64_t)(y0 + fy) * st->w + x0 + fx0) * C + cb;
        for (int32_t fx = fx0; fx < fx1; fx++, px += C) {
          if (is_max) {
            for (int j = 0; j < 4; j++)
              if (m[j]) acc[j] = _mm512_max_ps(_mm512_maskz_loadu_ps(m[j], px + 16 * j), acc[j]);
          } else {
            for (int j = 0; j < 4; j++)
              if (m[j]) acc[j] = _mm512_add_ps(acc[j], _mm512_maskz_loadu_ps(m[j], px + 16 * j));
          }
        }
      }
      const int32_t count = (fy1 - fy0) * (fx1 - fx0);
      const __m512 fc = _mm512_set1_ps(count > 0 ? (float)count : 1.0f);
      for (int j = 0; j < 4; j++) {
        if (!m[j]) continue;
        __m512 v = is_max ? acc[j] : _mm512_div_ps(acc[j], fc);
        v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
        _mm512_mask_storeu_ps(o + 16 * j, m[j], v);
      }
    }
  }
}
#endif

/* Float32 pooling of output rows [q0, q1). */
static void pool_rows_f32(const ar_node_t *node, const pool_state_t *st, bool is_max, int64_t q0,
                          int64_t q1) {
  const float *in = node->inputs[0]->data;
  const int64_t C = st->c;
  float *out = (float *)node->outputs[0]->data + q0 * st->ow * C;
  float *const out0 = out;
  const float lo = st->lo, hi = st->hi;
#if AR_HAVE_AVX2_CLONE
  const bool avx512 = ar__f32_isa() >= AR_ISA_AVX512;
#endif
  for (int64_t q = q0; q < q1; q++) {
    const int32_t b = (int32_t)(q / st->oh), oy = (int32_t)(q % st->oh);
    const float *inb = in + (int64_t)b * st->h * st->w * C;
    int32_t y0 = oy * st->sh - st->pad_t;
    int32_t fy0 = AR_MAX(0, -y0), fy1 = AR_MIN(st->fh, st->h - y0);
#if AR_HAVE_AVX2_CLONE
    if (avx512) {
      pool_row_avx512(st, inb, y0, fy0, fy1, is_max, out);
      out += st->ow * C;
      continue;
    }
#endif
    for (int32_t ox = 0; ox < st->ow; ox++, out += C) {
      int32_t x0 = ox * st->sw - st->pad_l;
      int32_t fx0 = AR_MAX(0, -x0), fx1 = AR_MIN(st->fw, st->w - x0);
      float init = is_max ? -FLT_MAX : 0.0f;
      for (int64_t c = 0; c < C; c++) out[c] = init;
      for (int32_t fy = fy0; fy < fy1; fy++) {
        const float *row = inb + ((int64_t)(y0 + fy) * st->w + x0) * C;
        for (int32_t fx = fx0; fx < fx1; fx++) {
          const float *px = row + (int64_t)fx * C;
          if (is_max)
            for (int64_t c = 0; c < C; c++) out[c] = px[c] > out[c] ? px[c] : out[c];
          else
            for (int64_t c = 0; c < C; c++) out[c] += px[c];
        }
      }
      if (is_max) {
        for (int64_t c = 0; c < C; c++) out[c] = ar_k_clamp(out[c], lo, hi);
      } else {
        int32_t count = (fy1 - fy0) * (fx1 - fx0);
        /* Divide (not multiply by a reciprocal) as TFLite's reference does. */
        float fc = count > 0 ? (float)count : 1.0f;
        for (int64_t c = 0; c < C; c++) out[c] = ar_k_clamp(out[c] / fc, lo, hi);
      }
    }
  }
  if (st->post_act) ar_apply_activation(out0, (size_t)((q1 - q0) * st->ow * C), st->act);
}

typedef struct {
  const ar_node_t *node;
  bool is_max;
} pool_ctx_t;

static void pool_rows(void *ctx, int32_t slot, int64_t q0, int64_t q1) {
  const pool_ctx_t *c = ctx;
  const pool_state_t *st = c->node->state;
  if (st->dtype == AR_DTYPE_FLOAT32) pool_rows_f32(c->node, st, c->is_max, q0, q1);
  else qpool_rows(c->node, st, c->is_max, (int32_t *)c->node->scratch + (int64_t)slot * st->c, q0, q1);
}

static void pool_eval(const ar_node_t *node, bool is_max) {
  const pool_state_t *st = node->state;
  if (!is_max && pool_global_avg(node, st)) {
    float *out = node->outputs[0]->data;
    const int64_t n = (int64_t)st->b * st->c;
    ar__gsum(node, node->inputs[0]->data, st->b, (int64_t)st->h * st->w, st->c, node->scratch, out);
    /* Divide (not multiply by a reciprocal) as TFLite's reference does. */
    const float fc = (float)((int64_t)st->h * st->w);
    for (int64_t i = 0; i < n; i++) out[i] = ar_k_clamp(out[i] / fc, st->lo, st->hi);
    if (st->post_act) ar_apply_activation(out, (size_t)n, st->act);
    return;
  }
  const pool_ctx_t c = {node, is_max};
  const int64_t rows = (int64_t)st->b * st->oh;
  const int32_t slots = st->dtype == AR_DTYPE_FLOAT32 || st->c == 0
                            ? ar_parallel_threads(node)
                            : (int32_t)(node->scratch_bytes / ((uint64_t)st->c * sizeof(int32_t)));
  ar_parallel_for_split_slots(node, rows, 1,
                              ar_parallel_grain(rows, (int64_t)st->ow * st->fh * st->fw * st->c, POOL_SPLIT_MIN_WORK, 1),
                              slots, pool_rows, (void *)&c);
}

static void max_pool_eval(const ar_node_t *node) { pool_eval(node, true); }
static void avg_pool_eval(const ar_node_t *node) { pool_eval(node, false); }

/* TFLite MAX_POOL_2D (builtin 17): max over in-bounds taps, then fused activation. */
static const ar_kernel_form_t max_pool_2d_forms[] = {
  AR_KF(1, 2, FLOAT32, FLOAT32),
  AR_KF(1, 2, UINT8, UINT8),
  AR_KF(1, 2, INT8, INT8),
};
const ar_kernel_t ar_kernel_max_pool_2d = { "MAX_POOL_2D", pool_prepare, pool_init, max_pool_eval,
  AR_KSUPPORT(max_pool_2d_forms, 0, -1) };
/* TFLite AVERAGE_POOL_2D (builtin 1): mean over in-bounds taps, then fused activation. */
static const ar_kernel_form_t average_pool_2d_forms[] = {
  AR_KF(1, 2, FLOAT32, FLOAT32),
  AR_KF(1, 2, UINT8, UINT8),
  AR_KF(1, 2, INT8, INT8),
};
const ar_kernel_t ar_kernel_average_pool_2d = { "AVERAGE_POOL_2D", pool_prepare, pool_init, avg_pool_eval,
  AR_KSUPPORT(average_pool_2d_forms, 0, -1) };
