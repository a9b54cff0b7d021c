/* resize.c - TFLite RESIZE_BILINEAR (float32 NHWC) and RESIZE_NEAREST_NEIGHBOR (any dtype, NHWC;
 * its rule is with its kernel at the end of the file).
 *
 * The output size comes from input 1 (constant int32 [2] = {new_height, new_width}). The mapping
 * follows TFLite's reference (resize_bilinear.h ComputeInterpolationValues) for every op version:
 *   scale = align_corners && out > 1 ? (in - 1) / (out - 1) : in / out
 *   src   = half_pixel_centers ? (dst + 0.5) * scale - 0.5 : dst * scale
 *   lower = max(floor(src), 0), upper = min(ceil(src), in - 1), weight = src - lower
 * and align_corners with half_pixel_centers together is an error, as in TFLite. The per-row and
 * per-column (lower, upper, weight) triples are computed once at init into the node state, so eval
 * is a blend of four input pixels per output pixel with the channel loop innermost.
 *
 * 8-bit RESIZE_BILINEAR follows the paths of TFLite's builtin kernel (resize_bilinear.cc):
 *   uint8  optimized ResizeBilinearGenericSmallChannel: the float taps above, the weights
 *          (1 - fy)(1 - fx), (1 - fy) fx, fy (1 - fx), fy fx in float32, out = (uint8)(v00 w00 +
 *          v01 w01 + v10 w10 + v11 w11 + 0.5f), the sum contracted into fused multiply-adds as
 *          gcc does on x86-64 with FMA (it only matters when the products are inexact);
 *   int8   ResizeBilinearInteger: 10-bit fixed point, scale_10 = (1024 in + out / 2) / out (or
 *          (1024 (in - 1) + (out - 1) / 2) / (out - 1) with align_corners), src_10 = dst scale_10
 *          (+ scale_10 / 2 - 512 with half_pixel_centers), lower = max(src_10 / 1024, 0), upper =
 *          min((src_10 + 1023) / 1024, in - 1) (C division), weights from src_10 - 1024 lower; the
 *          int64 sum of the four products (2^20 scale) is divided by 2^20 rounding half away from
 *          zero.
 * Both need input and output quantization to be equal (TFLite does not rescale either).
 */
#include <math.h>
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_qparams.h"
#include "kernels/conv_util.h"
#include "kernels/ar_parallel.h"

/* The least work (output elements) worth a run of output rows of its own on another thread. Rows
 * are split by thread count (ar_parallel_for_split): each output element depends on its taps
 * alone, and a thread computes the same fraction of the output as for the operator before. */
#define RESIZE_CHUNK_ELEMS (8 * 1024)

typedef struct { int32_t lo, hi; float w; int32_t ilo, ihi, iw; } resize_tap_t;   /* iw: 10-bit */

typedef struct {
  int32_t b, h, w, c, oh, ow;
  bool align_corners, half_pixel_centers;
  ar_dtype_t dtype;
  /* followed by resize_tap_t ytaps[oh], xtaps[ow] */
} resize_state_t;

static int resize_plan(const ar_node_t *node, resize_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *size = node->inputs[1];
  if (in->dtype != AR_DTYPE_FLOAT32 && !ar_k_is_q8(in->dtype))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0 has dtype %s, expected FLOAT32, "
                    "UINT8 or INT8", ar_dtype_name(in->dtype));
  if ((rc = ar_k_check_dtype(node, node->outputs[0], "output 0", in->dtype, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, size, "size (input 1)", AR_DTYPE_INT32, msg, msg_bytes)))
    return rc;
  if (ar_k_is_q8(in->dtype)) {
    float si = 0, so = 0;
    int32_t zi = 0, zo = 0;
    if ((rc = ar_k_qparams(node, in, "input 0", &si, &zi, msg, msg_bytes)) ||
        (rc = ar_k_qparams(node, node->outputs[0], "output 0", &so, &zo, msg, msg_bytes)))
      return rc;
    if (si != so || zi != zo)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input quantization (scale %g, zero "
                      "point %d) differs from the output's (scale %g, zero point %d)", (double)si,
                      (int)zi, (double)so, (int)zo);
  }
  if (in->rank != 4)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input rank %d, expected 4 (NHWC)", (int)in->rank);
  if (size->rank != 1 || size->dims[0] != 2)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "size (input 1) must have shape [2]");
  if (!size->is_constant || !size->data)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED,
                    "size (input 1) is not a constant (dynamic output shapes are not supported)");
  memset(st, 0, sizeof *st);
  st->dtype = in->dtype;
  if (node->options) {
    st->align_corners = node->options->resize_bilinear.align_corners;
    st->half_pixel_centers = node->options->resize_bilinear.half_pixel_centers;
  }
  if (st->align_corners && st->half_pixel_centers)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL,
                    "align_corners and half_pixel_centers are both set (TFLite forbids it)");
  int32_t sz[2];
  memcpy(sz, size->data, sizeof sz);
  if (sz[0] <= 0 || sz[1] <= 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "size [%d,%d] must be positive", (int)sz[0], (int)sz[1]);
  st->b = in->dims[0]; st->h = in->dims[1]; st->w = in->dims[2]; st->c = in->dims[3];
  st->oh = sz[0]; st->ow = sz[1];
  if (st->h <= 0 || st->w <= 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "empty input %dx%d", (int)st->h, (int)st->w);
  int32_t od[4] = { st->b, st->oh, st->ow, st->c };
  return ar_k_check_output_shape(node, 4, od, msg, msg_bytes);
}

static uint64_t resize_state_bytes(const resize_state_t *st) {
  return sizeof *st + ((uint64_t)st->oh + (uint64_t)st->ow) * sizeof(resize_tap_t);
}

static int resize_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  resize_state_t st;
  int rc = resize_plan(node, &st, msg, msg_bytes);
  node->state_bytes = rc ? sizeof st : resize_state_bytes(&st);
  return rc;
}

static void resize_taps(resize_tap_t *t, int32_t out, int32_t in, bool align, bool half) {
  float scale = (align && out > 1) ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
  for (int32_t i = 0; i < out; i++) {
    float src = half ? ((float)i + 0.5f) * scale - 0.5f : (float)i * scale;
    int32_t lo = (int32_t)floorf(src), hi = (int32_t)ceilf(src);
    lo = AR_MAX(lo, 0);
    hi = AR_MIN(hi, in - 1);
    t[i].lo = lo; t[i].hi = hi; t[i].w = src - (float)lo;
  }
  /* TFLite ResizeBilinearInteger's 10-bit taps (int8). */
  const int32_t scale_10 = (align && out > 1) ? ((1 << 10) * (in - 1) + (out - 1) / 2) / (out - 1)
                                              : ((1 << 10) * in + out / 2) / out;
  for (int32_t i = 0; i < out; i++) {
    const int32_t src = half ? i * scale_10 + scale_10 / 2 - (1 << 9) : i * scale_10;
    const int32_t lo = AR_MAX(src / (1 << 10), 0);
    const int32_t hi = AR_MIN((src + (1 << 10) - 1) / (1 << 10), in - 1);
    t[i].ilo = lo; t[i].ihi = hi; t[i].iw = src - (1 << 10) * lo;
  }
}

static void resize_init(ar_node_t *node) {
  resize_state_t st;
  if (resize_plan(node, &st, NULL, 0) != 0 || !node->state || node->state_bytes < resize_state_bytes(&st))
    return;
  memcpy(node->state, &st, sizeof st);
  resize_tap_t *ytaps = (resize_tap_t *)((char *)node->state + sizeof st);
  resize_taps(ytaps, st.oh, st.h, st.align_corners, st.half_pixel_centers);
  resize_taps(ytaps + st.oh, st.ow, st.w, st.align_corners, st.half_pixel_centers);
}

/* The uint8 blend of output rows [q0, q1) (row q: image q / OH, row q % OH), portable (fmaf from
 * libm); the AVX2+FMA form below gives the same bits. */
#define RESIZE_U8_BODY                                                                       \
  const int64_t C = st->c, row = (int64_t)st->w * C;                                         \
  out += q0 * st->ow * C;                                                                    \
  for (int64_t q = q0; q < q1; q++) {                                                        \
    const int32_t b = (int32_t)(q / st->oh), oy = (int32_t)(q % st->oh);                     \
    const uint8_t *inb = in + (int64_t)b * st->h * row;                                      \
    const uint8_t *r0 = inb + yt[oy].lo * row, *r1 = inb + yt[oy].hi * row;                  \
    const float fy = yt[oy].w;                                                               \
    for (int32_t ox = 0; ox < st->ow; ox++, out += C) {                                      \
      const float fx = xt[ox].w;                                                             \
      const uint8_t *p00 = r0 + xt[ox].lo * C, *p01 = r0 + xt[ox].hi * C;                    \
      const uint8_t *p10 = r1 + xt[ox].lo * C, *p11 = r1 + xt[ox].hi * C;                    \
      const float w00 = (1.0f - fy) * (1.0f - fx), w01 = (1.0f - fy) * fx;                   \
      const float w10 = fy * (1.0f - fx), w11 = fy * fx;                                     \
      for (int64_t c = 0; c < C; c++) {                                                      \
        float acc = fmaf((float)p00[c], w00, (float)p01[c] * w01);                           \
        acc = fmaf((float)p10[c], w10, acc);                                                 \
        acc = fmaf((float)p11[c], w11, acc);                                                 \
        out[c] = (uint8_t)(int32_t)(acc + 0.5f);                                             \
      }                                                                                      \
    }                                                                                        \
  }

#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>

/* 8 codes at p as floats; fewer than 8 left before `end`: the rest read as 0 (never stored). */
AR_TARGET_AVX2 static inline __m256 rz_load8(const uint8_t *p, const uint8_t *end) {
  uint64_t v = 0;
  if (end - p >= 8) memcpy(&v, p, 8);
  else memcpy(&v, p, (size_t)(end - p));
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)v)));
}

/* The same blend 8 channels per vector: the same float products and fused multiply-adds in the
 * same order as the scalar body (vfmadd is fmaf), then (int32)(acc + 0.5f) truncated to its low
 * byte as the cast does. A pixel's last vector may reach past its channels: it is read up to the
 * input's end (padded with zeros) and stored whole only where the bytes past it are this row's
 * next pixels (rewritten right after by this thread), else just the pixel's own bytes. */
AR_TARGET_AVX2 static void resize_eval_u8_avx2(const resize_state_t *st, const resize_tap_t *yt,
                                               const resize_tap_t *xt, const uint8_t *in,
                                               uint8_t *out, int64_t q0, int64_t q1) {
  const int64_t C = st->c, row = (int64_t)st->w * C;
  const uint8_t *in_end = in + (int64_t)st->b * st->h * row;
  const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
  const __m256i low = _mm256_set1_epi32(0xFF);
  out += q0 * st->ow * C;
  for (int64_t q = q0; q < q1; q++) {
    const int32_t b = (int32_t)(q / st->oh), oy = (int32_t)(q % st->oh);
    const uint8_t *inb = in + (int64_t)b * st->h * row;
    const uint8_t *r0 = inb + yt[oy].lo * row, *r1 = inb + yt[oy].hi * row;
    const __m256 fy = _mm256_set1_ps(yt[oy].w), gy = _mm256_sub_ps(one, fy);
    const uint8_t *const row_end = out + st->ow * C;   /* this output row's end */
    for (int32_t ox = 0; ox < st->ow; ox++, out += C) {
      const __m256 fx = _mm256_set1_ps(xt[ox].w), gx = _mm256_sub_ps(one, fx);
      const __m256 w00 = _mm256_mul_ps(gy, gx), w01 = _mm256_mul_ps(gy, fx);
      const __m256 w10 = _mm256_mul_ps(fy, gx), w11 = _mm256_mul_ps(fy, fx);
      const uint8_t *p00 = r0 + xt[ox].lo * C, *p01 = r0 + xt[ox].hi * C;
      const uint8_t *p10 = r1 + xt[ox].lo * C, *p11 = r1 + xt[ox].hi * C;
      for (int64_t c = 0; c < C; c += 8) {
        __m256 acc = _mm256_fmadd_ps(rz_load8(p00 + c, in_end), w00,
                                     _mm256_mul_ps(rz_load8(p01 + c, in_end), w01));
        acc = _mm256_fmadd_ps(rz_load8(p10 + c, in_end), w10, acc);
        acc = _mm256_fmadd_ps(rz_load8(p11 + c, in_end), w11, acc);
        __m256i v = _mm256_and_si256(_mm256_cvttps_epi32(_mm256_add_ps(acc, half)), low);
        const __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        const uint64_t bytes = (uint64_t)_mm_cvtsi128_si64(_mm_packus_epi16(w16, w16));
        if (c + 8 <= C || out + c + 8 <= row_end) memcpy(out + c, &bytes, 8);
        else memcpy(out + c, &bytes, (size_t)(C - c));
      }
    }
  }
}
#endif

static void resize_eval_u8_base(const resize_state_t *st, const resize_tap_t *yt,
                                const resize_tap_t *xt, const uint8_t *in, uint8_t *out, int64_t q0,
                                int64_t q1) {
  RESIZE_U8_BODY
}

static int resize_forced = -1;

int ar__resize_set_isa(int isa) {
  const int best = ar__cpu_has_avx2_fma() ? 1 : 0;
  if (isa < 0) { resize_forced = -1; return best; }
  if (isa > best) return -1;
  resize_forced = isa;
  return isa;
}

static void resize_eval_u8(const resize_state_t *st, const resize_tap_t *yt, const resize_tap_t *xt,
                           const uint8_t *in, uint8_t *out, int64_t q0, int64_t q1) {
#if AR_HAVE_AVX2_CLONE
  if (resize_forced != 0 && ar__cpu_has_avx2_fma()) {
    resize_eval_u8_avx2(st, yt, xt, in, out, q0, q1);
    return;
  }
#endif
  resize_eval_u8_base(st, yt, xt, in, out, q0, q1);
}

static void resize_eval_i8(const resize_state_t *st, const resize_tap_t *yt, const resize_tap_t *xt,
                           const int8_t *in, int8_t *out, int64_t q0, int64_t q1) {
  const int64_t C = st->c, row = (int64_t)st->w * C;
  out += q0 * st->ow * C;
  for (int64_t q = q0; q < q1; q++) {
    const int32_t b = (int32_t)(q / st->oh), oy = (int32_t)(q % st->oh);
    const int8_t *inb = in + (int64_t)b * st->h * row;
    const int8_t *r0 = inb + yt[oy].ilo * row, *r1 = inb + yt[oy].ihi * row;
    const int64_t wy1 = yt[oy].iw, wy0 = (1 << 10) - wy1;
    for (int32_t ox = 0; ox < st->ow; ox++, out += C) {
      const int64_t wx1 = xt[ox].iw, wx0 = (1 << 10) - wx1;
      const int8_t *p00 = r0 + xt[ox].ilo * C, *p01 = r0 + xt[ox].ihi * C;
      const int8_t *p10 = r1 + xt[ox].ilo * C, *p11 = r1 + xt[ox].ihi * C;
      const int64_t w00 = wy0 * wx0, w10 = wy1 * wx0, w01 = wy0 * wx1, w11 = wy1 * wx1;
      for (int64_t c = 0; c < C; c++) {
        const int64_t v = p00[c] * w00 + p10[c] * w10 + p01[c] * w01 + p11[c] * w11;
        const int64_t r = v > 0 ? (1 << 19) : -(1 << 19);
        out[c] = (int8_t)((v + r) / (1 << 20));
      }
    }
  }
}

static void resize_eval_f32(const resize_state_t *st, const resize_tap_t *yt, const resize_tap_t *xt,
                            const float *in, float *out, int64_t q0, int64_t q1) {
  const int64_t C = st->c, row = (int64_t)st->w * C;
  out += q0 * st->ow * C;
  for (int64_t q = q0; q < q1; q++) {
    const int32_t b = (int32_t)(q / st->oh), oy = (int32_t)(q % st->oh);
    const float *inb = in + (int64_t)b * st->h * row;
    const float *r0 = inb + yt[oy].lo * row, *r1 = inb + yt[oy].hi * row;
    const float fy = yt[oy].w;
    for (int32_t ox = 0; ox < st->ow; ox++, out += C) {
      const float fx = xt[ox].w;
      const float *p00 = r0 + xt[ox].lo * C, *p01 = r0 + xt[ox].hi * C;
      const float *p10 = r1 + xt[ox].lo * C, *p11 = r1 + xt[ox].hi * C;
      const float w00 = (1.0f - fy) * (1.0f - fx), w01 = (1.0f - fy) * fx;
      const float w10 = fy * (1.0f - fx), w11 = fy * fx;
      for (int64_t c = 0; c < C; c++)
        out[c] = p00[c] * w00 + p10[c] * w10 + p01[c] * w01 + p11[c] * w11;
    }
  }
}

/* Output rows [q0, q1) of all images: each output element depends on its taps alone, so the rows
 * can go to any thread in any grouping with the same bytes. */
static void resize_rows(void *ctx, int64_t q0, int64_t q1) {
  const ar_node_t *node = ctx;
  const resize_state_t *st = node->state;
  const resize_tap_t *yt = (const resize_tap_t *)((const char *)node->state + sizeof *st);
  const resize_tap_t *xt = yt + st->oh;
  if (st->dtype == AR_DTYPE_UINT8)
    resize_eval_u8(st, yt, xt, node->inputs[0]->data, node->outputs[0]->data, q0, q1);
  else if (st->dtype == AR_DTYPE_INT8)
    resize_eval_i8(st, yt, xt, node->inputs[0]->data, node->outputs[0]->data, q0, q1);
  else
    resize_eval_f32(st, yt, xt, node->inputs[0]->data, node->outputs[0]->data, q0, q1);
}

static void resize_eval(const ar_node_t *node) {
  const resize_state_t *st = node->state;
  const int64_t rows = (int64_t)st->b * st->oh;
  ar_parallel_for_split(node, rows, 1, ar_parallel_grain(rows, (int64_t)st->ow * st->c, RESIZE_CHUNK_ELEMS, 1),
                        resize_rows, (void *)node);
}

/* TFLite RESIZE_BILINEAR (builtin 23), versions 1-3: align_corners / half_pixel_centers honoured;
 * float32, uint8, int8. */
static const ar_kernel_form_t resize_bilinear_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32),
  AR_KF(1, 3, UINT8, UINT8),
  AR_KF(1, 3, INT8, INT8),
};
const ar_kernel_t ar_kernel_resize_bilinear = { "RESIZE_BILINEAR", resize_prepare, resize_init, resize_eval,
  AR_KSUPPORT(resize_bilinear_forms, 0, -1) };

/* -------------------------------------------------- RESIZE_NEAREST_NEIGHBOR */

/* TFLite reference resize_nearest_neighbor.h GetNearestNeighbor, per output row/column:
 *   scale = align_corners && out > 1 ? (in - 1) / (out - 1) : in / out   (float)
 *   src   = (dst + (half_pixel_centers ? 0.5 : 0)) * scale
 *   index = min(align_corners ? round(src) : floor(src), in - 1), and >= 0 with half_pixel_centers
 * (round = half away from zero). Both flags may be set together. The (oh + ow) source indices are
 * computed once at init; eval copies one pixel (C elements) per output pixel, so any dtype with a
 * size works. */
typedef struct {
  int32_t b, h, w, oh, ow;
  int64_t pixel_bytes;
  bool align_corners, half_pixel_centers;
  /* followed by int32_t ysrc[oh], xsrc[ow] */
} nn_state_t;

static int nn_plan(const ar_node_t *node, nn_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *size = node->inputs[1];
  if ((rc = ar_k_check_same_dtype(node, in, 0, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, size, "size (input 1)", AR_DTYPE_INT32, msg, msg_bytes)))
    return rc;
  if (in->rank != 4)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input rank %d, expected 4 (NHWC)", (int)in->rank);
  if (size->rank != 1 || size->dims[0] != 2)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "size (input 1) must have shape [2]");
  if ((rc = ar_k_require_constant(node, size, "size (input 1)", msg, msg_bytes))) return rc;
  memset(st, 0, sizeof *st);
  if (node->options) {
    st->align_corners = node->options->resize_nearest.align_corners;
    st->half_pixel_centers = node->options->resize_nearest.half_pixel_centers;
  }
  int32_t sz[2];
  memcpy(sz, size->data, sizeof sz);
  if (sz[0] <= 0 || sz[1] <= 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "size [%d,%d] must be positive", (int)sz[0], (int)sz[1]);
  st->b = in->dims[0]; st->h = in->dims[1]; st->w = in->dims[2];
  st->oh = sz[0]; st->ow = sz[1];
  st->pixel_bytes = (int64_t)in->dims[3] * (int64_t)ar_dtype_size(in->dtype);
  if (st->h <= 0 || st->w <= 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "empty input %dx%d", (int)st->h, (int)st->w);
  int32_t od[4] = { st->b, st->oh, st->ow, in->dims[3] };
  return ar_k_check_output_shape(node, 4, od, msg, msg_bytes);
}

static uint64_t nn_state_bytes(const nn_state_t *st) {
  return sizeof *st + ((uint64_t)st->oh + (uint64_t)st->ow) * sizeof(int32_t);
}

static int nn_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  nn_state_t st;
  int rc = nn_plan(node, &st, msg, msg_bytes);
  node->state_bytes = rc ? sizeof st : nn_state_bytes(&st);
  return rc;
}

static void nn_index(int32_t *src, int32_t out, int32_t in, bool align, bool half) {
  const float scale = (align && out > 1) ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
  const float offset = half ? 0.5f : 0.0f;
  for (int32_t i = 0; i < out; i++) {
    const float v = ((float)i + offset) * scale;
    int32_t s = align ? (int32_t)roundf(v) : (int32_t)floorf(v);
    s = AR_MIN(s, in - 1);
    if (half) s = AR_MAX(s, 0);
    src[i] = s;
  }
}

static void nn_init(ar_node_t *node) {
  nn_state_t st;
  if (nn_plan(node, &st, NULL, 0) != 0 || !node->state || node->state_bytes < nn_state_bytes(&st))
    return;
  memcpy(node->state, &st, sizeof st);
  int32_t *ys = (int32_t *)(void *)((char *)node->state + sizeof st);
  nn_index(ys, st.oh, st.h, st.align_corners, st.half_pixel_centers);
  nn_index(ys + st.oh, st.ow, st.w, st.align_corners, st.half_pixel_centers);
}

/* Output rows [q0, q1) (row q: image q / OH, row q % OH). */
static void nn_rows(void *ctx, int64_t q0, int64_t q1) {
  const ar_node_t *node = ctx;
  const nn_state_t *st = node->state;
  const int32_t *ys = (const int32_t *)(const void *)((const char *)node->state + sizeof *st);
  const int32_t *xs = ys + st->oh;
  const char *in = node->inputs[0]->data;
  char *out = node->outputs[0]->data;
  const size_t pb = (size_t)st->pixel_bytes;
  const int64_t row = (int64_t)st->w * st->pixel_bytes;
  out += q0 * st->ow * st->pixel_bytes;
  for (int64_t q = q0; q < q1; q++) {
    const int32_t b = (int32_t)(q / st->oh), oy = (int32_t)(q % st->oh);
    const char *r = in + (int64_t)b * st->h * row + ys[oy] * row;
    for (int32_t ox = 0; ox < st->ow; ox++, out += pb) memcpy(out, r + xs[ox] * st->pixel_bytes, pb);
  }
}

static void nn_eval(const ar_node_t *node) {
  const nn_state_t *st = node->state;
  const int64_t rows = (int64_t)st->b * st->oh;
  ar_parallel_for_split(node, rows, 1,
                        ar_parallel_grain(rows, (int64_t)st->ow * st->pixel_bytes, 4 * RESIZE_CHUNK_ELEMS, 1),
                        nn_rows, (void *)node);
}

/* TFLite RESIZE_NEAREST_NEIGHBOR (builtin 97): constant int32 size, align_corners and
 * half_pixel_centers honoured. */
static const ar_kernel_form_t resize_nearest_neighbor_forms[] = {
  AR_KF_DATA(1, 4),
};
const ar_kernel_t ar_kernel_resize_nearest_neighbor = { "RESIZE_NEAREST_NEIGHBOR", nn_prepare, nn_init,
                                                        nn_eval,
  AR_KSUPPORT(resize_nearest_neighbor_forms, 0, -1) };
