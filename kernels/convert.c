/* convert.c - TFLite DEQUANTIZE (float16 / uint8 / int8 -> float32), QUANTIZE (float32 -> uint8 /
 * int8, and uint8 / int8 -> uint8 / int8 requantization) and DENSIFY (sparse constant -> dense).
 *
 * DEQUANTIZE of a constant and DENSIFY run once, when the interpreter folds constants at place
 * time, except a float16 DEQUANTIZE with weights kept as stored, which runs at every invoke right
 * before its reader (vcvtph2ps when the CPU has F16C); DEQUANTIZE of an activation (uint8 / int8)
 * and QUANTIZE run at every invoke. All are ordinary kernels: prepare checks, eval computes.
 *
 * 8-bit semantics (TFLite dequantize.cc / quantize.cc, builtin kernels):
 *   DEQUANTIZE  out = (float)(scale * (q - zero_point)), the product in double.
 *   QUANTIZE    float32 -> 8-bit: optimized AffineQuantize: elements in whole groups of 8 (its
 *               vector loop) are q = round_half_even(x * (float)(1 / scale)) + zero_point, the rest
 *               q = round_half_away(x / (double)scale) + zero_point, both clamped to the type.
 *               8-bit -> 8-bit: Requantize, q = MultiplyByQuantizedMultiplier(q_in - z_in,
 *               QuantizeMultiplier(s_in / s_out)) + z_out, clamped. DENSIFY implements TFLite's sparse tensor format
 * (SparsityParameters; see TFLite's FormatConverter::SparseToDense):
 *   - the dense shape has n dims; block_map (k entries) names the dims that are split into blocks;
 *     the "expanded" tensor has n + k dims: dims 0..n-1 count blocks (dense[d] / block_size for a
 *     blocked d), dims n..n+k-1 index inside a block;
 *   - traversal_order (n + k entries) is the storage order of the expanded dims; dim_metadata[l]
 *     describes level l of that traversal: DENSE (dense_size entries) or SPARSE_CSR (entries of
 *     position p are array_indices[array_segments[p] .. array_segments[p+1]); the position of a
 *     child is the parent position * size + i for DENSE, the index into array_indices for CSR);
 *   - the stored values are visited in that order; the block size of block j is the dense_size of
 *     the level that traverses expanded dim n + j.
 * prepare walks the whole structure once and checks every segment and index (model data is never
 * trusted), so eval's walk runs blindly. Index vectors may be uint8, uint16 or int32.
 */
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_qparams.h"
#include "kernels/conv_util.h"
#include "kernels/ar_parallel.h"

/* The least elements worth a chunk of their own on the thread pool (each element converts alone,
 * so any split gives the same values); chunks start at multiples of 64 elements. */
#define CONVERT_CHUNK_ELEMS (32 * 1024)

#if AR_HAVE_AVX2_CLONE
#include <immintrin.h>
#endif

/* --------------------------------------------------------------- DEQUANTIZE */

typedef struct {
  ar_dtype_t in, out;
  float scale;              /* DEQUANTIZE: input scale; QUANTIZE from float: output scale */
  int32_t in_zp, out_zp;
  int32_t m;                /* requantize multiplier */
  int shift;
  float deq[256];           /* DEQUANTIZE of 8-bit: the value per input byte */
  uint8_t req[256];         /* QUANTIZE 8-bit -> 8-bit: the output byte per input byte */
} convert_state_t;

static int dequantize_plan(const ar_node_t *node, convert_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  memset(st, 0, sizeof *st);
  st->in = in->dtype;
  st->out = AR_DTYPE_FLOAT32;
  if (in->dtype != AR_DTYPE_FLOAT16 && !ar_k_is_q8(in->dtype) && in->dtype != AR_DTYPE_INT16)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED,
                    "input dtype %s (FLOAT16, UINT8, INT8 or INT16 -> FLOAT32 are implemented)",
                    ar_dtype_name(in->dtype));
  if ((rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_FLOAT32, msg, msg_bytes)))
    return rc;
  if (in->dtype == AR_DTYPE_INT16 &&
      (rc = ar_k_qparams(node, in, "input 0", &st->scale, &st->in_zp, msg, msg_bytes)))
    return rc;
  if (ar_k_is_q8(in->dtype)) {
    if ((rc = ar_k_qparams(node, in, "input 0", &st->scale, &st->in_zp, msg, msg_bytes))) return rc;
    for (int v = 0; v < 256; v++) {
      const int32_t q = in->dtype == AR_DTYPE_INT8 ? (int32_t)(int8_t)v : v;
      st->deq[v] = (float)((double)st->scale * (double)(q - st->in_zp));
    }
  }
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

/* Only the 8-bit forms keep state (their 256-entry table); float16 needs none. */
static int dequantize_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  convert_state_t st;
  int rc = dequantize_plan(node, &st, msg, msg_bytes);
  node->state_bytes = rc == 0 && ar_k_is_q8(node->inputs[0]->dtype) ? sizeof st : 0;
  return rc;
}

static void dequantize_init(ar_node_t *node) {
  convert_state_t st;
  if (node->state_bytes && dequantize_plan(node, &st, NULL, 0) == 0)
    ar_k_store_state(node, &st, sizeof st);
}

/* Elements [i0, i1) of DEQUANTIZE. */
static void dequantize_range(void *ctx, int64_t i0, int64_t i1) {
  const ar_node_t *node = ctx;
  const unsigned char *in = node->inputs[0]->data;   /* may sit unaligned inside the model file */
  float *out = node->outputs[0]->data;
  const convert_state_t *st = node->state;
  /* A constant folded at place time may run before init stored the state: read the dtype. */
  const ar_dtype_t dt = node->inputs[0]->dtype;
  if (dt == AR_DTYPE_UINT8 || dt == AR_DTYPE_INT8) {
    if (st && node->state_bytes >= sizeof *st && st->in == dt) {
      for (int64_t i = i0; i < i1; i++) out[i] = st->deq[in[i]];
      return;
    }
    float scale = 0;
    int32_t zp = 0;
    if (node->inputs[0]->quant) {
      scale = node->inputs[0]->quant->scale[0]; zp = (int32_t)node->inputs[0]->quant->zero_point[0];
    }
    const double s = scale;
    if (dt == AR_DTYPE_UINT8)
      for (int64_t i = i0; i < i1; i++) out[i] = (float)(s * (double)((int32_t)in[i] - zp));
    else
      for (int64_t i = i0; i < i1; i++) out[i] = (float)(s * (double)((int32_t)(int8_t)in[i] - zp));
    return;
  }
  if (dt == AR_DTYPE_INT16) {   /* TFLite's reference Dequantize: float(double(scale) * (q - zp)) */
    const double s = node->inputs[0]->quant->scale[0];
    const int32_t zp = (int32_t)node->inputs[0]->quant->zero_point[0];
    for (int64_t i = i0; i < i1; i++) {
      int16_t q;
      memcpy(&q, in + 2 * i, sizeof q);
      out[i] = (float)(s * (double)((int32_t)q - zp));
    }
    return;
  }
  ar_fp16_to_fp32_n(in + 2 * i0, out + i0, (size_t)(i1 - i0));   /* float16: the at-use widening */
}

static void dequantize_eval(const ar_node_t *node) {
  const int64_t n = ar_k_elements(node->inputs[0]);
  ar_parallel_for(node, n, ar_parallel_grain(n, 1, CONVERT_CHUNK_ELEMS, 64), dequantize_range,
                  (void *)node);
}

/* TFLite DEQUANTIZE (builtin 6): float16 -> float32 (exact, incl. subnormals, inf, NaN, -0), and
 * uint8 / int8 -> float32 (scale (q - zero_point)). */
static const ar_kernel_form_t dequantize_forms[] = {
  AR_KF(1, 4, FLOAT16, FLOAT32),
  AR_KF(1, 4, UINT8, FLOAT32),
  AR_KF(1, 4, INT8, FLOAT32),
  AR_KF(1, 4, INT16, FLOAT32),
};
const ar_kernel_t ar_kernel_dequantize = { "DEQUANTIZE", dequantize_prepare, dequantize_init,
                                           dequantize_eval,
  AR_KSUPPORT(dequantize_forms, 0, -1) };

/* ---------------------------------------------------------------- QUANTIZE */

static int quantize_plan(const ar_node_t *node, convert_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  memset(st, 0, sizeof *st);
  st->in = in->dtype;
  st->out = o->dtype;
  /* TFLite's pairs: float32 -> uint8 / int8 / int16; uint8 -> uint8 / int8; int8 -> uint8 / int8
   * / int16; int16 -> int8 / int16 / int32 (the wide ones: kernels/qwide.h's models; int16 -> int32
   * is TFLite's form for applications that read int32 outputs; TFLite 2.19 refuses int8 -> int32
   * at prepare, and so does this kernel). */
  const bool wide = (in->dtype == AR_DTYPE_FLOAT32 && o->dtype == AR_DTYPE_INT16) ||
                    (in->dtype == AR_DTYPE_INT8 && o->dtype == AR_DTYPE_INT16) ||
                    (in->dtype == AR_DTYPE_INT16 && (o->dtype == AR_DTYPE_INT8 || o->dtype == AR_DTYPE_INT16 ||
                                                     o->dtype == AR_DTYPE_INT32));
  if (!ar_k_is_q8(o->dtype) && !wide)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s -> %s (float32 -> uint8 / int8 / int16, "
                    "int8 -> int16, int16 -> int8 / int16 / int32 and 8-bit -> 8-bit are "
                    "implemented)", ar_dtype_name(in->dtype), ar_dtype_name(o->dtype));
  float so = 0;
  if ((rc = ar_k_qparams(node, o, "output 0", &so, &st->out_zp, msg, msg_bytes))) return rc;
  if (wide) {
    if (in->dtype == AR_DTYPE_FLOAT32) {
      st->scale = so;
    } else {
      float si = 0;
      if ((rc = ar_k_qparams(node, in, "input 0", &si, &st->in_zp, msg, msg_bytes))) return rc;
      ar_quantize_multiplier((double)si / (double)so, &st->m, &st->shift);
    }
  } else if (in->dtype == AR_DTYPE_FLOAT32) {
    st->scale = so;
  } else if (ar_k_is_q8(in->dtype)) {
    float si = 0;
    if ((rc = ar_k_qparams(node, in, "input 0", &si, &st->in_zp, msg, msg_bytes))) return rc;
    ar_quantize_multiplier((double)si / (double)so, &st->m, &st->shift);
    const int32_t lo = o->dtype == AR_DTYPE_INT8 ? -128 : 0, hi = o->dtype == AR_DTYPE_INT8 ? 127 : 255;
    for (int v = 0; v < 256; v++) {
      const int32_t q = in->dtype == AR_DTYPE_INT8 ? (int32_t)(int8_t)v : v;
      int32_t r = ar_mbqm(q - st->in_zp, st->m, st->shift) + st->out_zp;
      st->req[v] = (uint8_t)(r < lo ? lo : r > hi ? hi : r);   /* the code's byte */
    }
  } else {
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input dtype %s (FLOAT32, UINT8 or INT8 "
                    "are implemented)", ar_dtype_name(in->dtype));
  }
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

static int quantize_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  convert_state_t st;
  node->state_bytes = sizeof st;
  return quantize_plan(node, &st, msg, msg_bytes);
}

static void quantize_init(ar_node_t *node) {
  convert_state_t st;
  if (quantize_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

/* float32 -> 8-bit, the whole groups of 8: (int32)nearbyintf(x * (1/scale)) + z, clamped. The AVX2
 * loop's vcvtps2dq rounds half to even in the default rounding mode as nearbyintf does, and its
 * products are the same single multiplications, so both loops give the same bytes. */
static int quantize_forced = -1;

int ar__quantize_set_isa(int isa) {
  const int best = ar__cpu_has_avx2_fma() ? 1 : 0;
  if (isa < 0) { quantize_forced = -1; return best; }
  if (isa > best) return -1;
  quantize_forced = isa;
  return isa;
}

static void quantize_f32_base(const float *x, void *out, int64_t n8, float inv, int32_t zp, bool s8) {
  for (int64_t i = 0; i < n8; i++) ar_k_store_q8(out, i, s8, (int32_t)nearbyintf(x[i] * inv) + zp);
}

#if AR_HAVE_AVX2_CLONE
AR_TARGET_AVX2 static void quantize_f32_avx2(const float *x, void *out, int64_t n8, float inv, int32_t zp,
                                             bool s8) {
  const __m256 vi = _mm256_set1_ps(inv);
  const __m256i z = _mm256_set1_epi32(zp), lo = _mm256_set1_epi32(s8 ? -128 : 0),
                hi = _mm256_set1_epi32(s8 ? 127 : 255);
  uint8_t *o = out;
  for (int64_t i = 0; i < n8; i += 8) {
    __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), vi));
    q = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(q, z), lo), hi);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64((__m128i *)(void *)(o + i), s8 ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w));
  }
}
#endif

/* Elements [i0, i1) of a float32 QUANTIZE; i0 is a multiple of 8, so the groups of 8 of TFLite's
 * vector loop and its scalar tail fall where they fall in one pass over all n. */
static void quantize_range(void *ctx, int64_t i0, int64_t i1) {
  const ar_node_t *node = ctx;
  const convert_state_t *st = node->state;
  const int64_t n = ar_k_elements(node->inputs[0]);
  const bool out_signed = st->out == AR_DTYPE_INT8;
  uint8_t *out = node->outputs[0]->data;
  const float *x = node->inputs[0]->data;
  const double scale = st->scale;
  const float inv = (float)(1.0 / scale);
  const int64_t n8 = n / 8 * 8, e8 = i1 < n8 ? i1 : n8;
  /* whole groups of 8 (TFLite's vector loop): multiply by the reciprocal, round half to even */
  static int best_cached = -1;   /* relaxed atomics: invokes on several threads may ask first */
  int best = __atomic_load_n(&best_cached, __ATOMIC_RELAXED);
  if (best < 0) __atomic_store_n(&best_cached, best = ar__cpu_has_avx2_fma() ? 1 : 0, __ATOMIC_RELAXED);
  if (e8 > i0) {
#if AR_HAVE_AVX2_CLONE
    if ((quantize_forced >= 0 ? quantize_forced : best) == 1)
      quantize_f32_avx2(x + i0, out + i0, e8 - i0, inv, st->out_zp, out_signed);
    else
#endif
      quantize_f32_base(x + i0, out + i0, e8 - i0, inv, st->out_zp, out_signed);
  }
  for (int64_t i = e8 > i0 ? e8 : i0; i < i1; i++)
    ar_k_store_q8(out, i, out_signed, (int32_t)round((double)x[i] / scale) + st->out_zp);
}

/* The int16 forms, one plain loop: float32 -> int16 as the 8-bit QUANTIZE rounds (TFLite's
 * AffineQuantize: whole groups of 8 as (int)nearbyintf(x * (1/scale)), ties to even, the tail as
 * round(x / scale) in double, ties away from zero - quantize_f32_int16_ties: 0.25 / 0.5 is 0 in a
 * group), and the integer requantizations as MultiplyByQuantizedMultiplier(q - z_in) + z_out,
 * clamped to the output type (TFLite's Requantize). */
static void quantize_wide_eval(const ar_node_t *node) {
  const convert_state_t *st = node->state;
  const int64_t n = ar_k_elements(node->inputs[0]);
  int32_t lo, hi;
  ar_quant_type_range(st->out, &lo, &hi);
  const void *in = node->inputs[0]->data;
  void *out = node->outputs[0]->data;
  const int64_t n8 = n / 8 * 8;
  const float inv = (float)(1.0 / (double)st->scale);
  for (int64_t i = 0; i < n; i++) {
    int32_t v;
    if (st->in == AR_DTYPE_FLOAT32) {
      const float x = ((const float *)in)[i];
      const double r = i < n8 ? (double)nearbyintf(x * inv) : round((double)x / (double)st->scale);
      v = r < (double)INT32_MIN ? INT32_MIN : r > (double)INT32_MAX ? INT32_MAX : (int32_t)r;
      v = (int32_t)((int64_t)v + st->out_zp < INT32_MIN ? INT32_MIN
                   : (int64_t)v + st->out_zp > INT32_MAX ? INT32_MAX : v + st->out_zp);
    } else {
      const int32_t q = st->in == AR_DTYPE_INT8 ? ((const int8_t *)in)[i] : ((const int16_t *)in)[i];
      /* + z_out in int32 as TFLite adds it (wrapping; only an int32 output can reach that) */
      v = (int32_t)((uint32_t)ar_mbqm(q - st->in_zp, st->m, st->shift) + (uint32_t)st->out_zp);
    }
    v = v < lo ? lo : v > hi ? hi : v;
    if (st->out == AR_DTYPE_INT8) ((int8_t *)out)[i] = (int8_t)v;
    else if (st->out == AR_DTYPE_INT32) ((int32_t *)out)[i] = v;
    else ((int16_t *)out)[i] = (int16_t)v;
  }
}

static void quantize_eval(const ar_node_t *node) {
  const convert_state_t *st = node->state;
  const int64_t n = ar_k_elements(node->inputs[0]);
  if (!(ar_k_is_q8(st->out) && (st->in == AR_DTYPE_FLOAT32 || ar_k_is_q8(st->in)))) {
    quantize_wide_eval(node);
    return;
  }
  if (st->in != AR_DTYPE_FLOAT32) {   /* 8-bit -> 8-bit: the table made at prepare */
    ar__lut8_node(node, st->req, node->inputs[0]->data, node->outputs[0]->data, n);
    return;
  }
  ar_parallel_for(node, n, ar_parallel_grain(n, 1, CONVERT_CHUNK_ELEMS, 64), quantize_range, (void *)node);
}

/* TFLite QUANTIZE (builtin 114): float32 -> uint8 / int8 / int16, uint8 / int8 -> uint8 / int8,
 * int8 -> int16, int16 -> int8 / int16 / int32. */
static const ar_kernel_form_t quantize_forms[] = {
  AR_KF(1, 3, FLOAT32, UINT8),
  AR_KF(1, 3, UINT8, UINT8),
  AR_KF(1, 3, INT8, UINT8),
  AR_KF(1, 3, FLOAT32, INT8),
  AR_KF(1, 3, UINT8, INT8),
  AR_KF(1, 3, INT8, INT8),
  AR_KF(1, 3, FLOAT32, INT16),
  AR_KF(1, 3, INT8, INT16),
  AR_KF(1, 3, INT16, INT8),
  AR_KF(1, 3, INT16, INT16),
  AR_KF(1, 3, INT16, INT32),
};
const ar_kernel_t ar_kernel_quantize = { "QUANTIZE", quantize_prepare, quantize_init, quantize_eval,
  AR_KSUPPORT(quantize_forms, 0, -1) };

/* ------------------------------------------------------------------ DENSIFY */

#define AR_SP_MAX_LEVELS (2 * AR_MAX_RANK)

typedef struct {
  const ar_sparsity_t *sp;
  int32_t n;                                  /* dense rank */
  int32_t levels;                             /* n + k */
  int32_t dense[AR_MAX_RANK];                 /* dense shape */
  int32_t block_size[AR_MAX_RANK];            /* per dense dim; 1 when not blocked */
  int32_t level_dim[AR_SP_MAX_LEVELS];        /* expanded dim traversed at level l */
  int32_t level_size[AR_SP_MAX_LEVELS];       /* extent of that expanded dim */
  int32_t block_dim[AR_MAX_RANK];             /* dense dim -> its within-block expanded dim, or 0 */
  size_t elem;                                /* bytes per value */
  int64_t n_values;                           /* stored values available */
  /* walk state */
  int32_t eidx[AR_SP_MAX_LEVELS];             /* current index of each expanded dim */
  int64_t next_value;
  const unsigned char *src;
  unsigned char *dst;                         /* NULL while validating */
  char *msg; size_t msg_bytes; const ar_node_t *node;
} densify_walk_t;

static int densify_level(densify_walk_t *w, int32_t level, int64_t pos) {
  if (level == w->levels) {
    if (!w->dst) {
      if (w->next_value >= w->n_values)
        return AR_K_ERR(w->node, w->msg, w->msg_bytes, AR_EMODEL,
                        "sparse structure visits more than the %lld stored values", (long long)w->n_values);
      w->next_value++;
      return 0;
    }
    int64_t flat = 0;
    for (int32_t d = 0; d < w->n; d++) {
      int64_t i = w->eidx[d];   /* block index (or plain index) */
      int32_t e = w->block_dim[d];
      if (e > 0) i = i * w->block_size[d] + w->eidx[e];   /* index inside the block */
      flat = flat * w->dense[d] + i;
    }
    memcpy(w->dst + flat * (int64_t)w->elem, w->src + w->next_value * (int64_t)w->elem, w->elem);
    w->next_value++;
    return 0;
  }
  if ((uint32_t)level >= AR_SP_MAX_LEVELS) return 0;   /* unreachable; keeps GCC's bounds analysis quiet */
  const ar_dim_metadata_t *m = &w->sp->dim_metadata[level];
  const int32_t dim = w->level_dim[level], size = w->level_size[level];
  int rc;
  if (m->format == AR_DIM_DENSE) {
    for (int32_t i = 0; i < size; i++) {
      w->eidx[dim] = i;
      if ((rc = densify_level(w, level + 1, pos * size + i))) return rc;
    }
    return 0;
  }
  const ar_index_vector_t *seg = &m->array_segments, *ind = &m->array_indices;
  if (!w->dst && (pos + 1 >= (int64_t)seg->length))
    return AR_K_ERR(w->node, w->msg, w->msg_bytes, AR_EMODEL,
                    "level %d: array_segments has %u entries, position %lld needs %lld", (int)level,
                    (unsigned)seg->length, (long long)pos, (long long)pos + 2);
  int64_t s0 = ar_index_vector_at(seg, pos), s1 = ar_index_vector_at(seg, pos + 1);
  if (!w->dst && (s0 < 0 || s1 < s0 || s1 > (int64_t)ind->length))
    return AR_K_ERR(w->node, w->msg, w->msg_bytes, AR_EMODEL,
                    "level %d: array_segments[%lld..%lld] = %lld..%lld out of order or beyond %u indices",
                    (int)level, (long long)pos, (long long)pos + 1, (long long)s0, (long long)s1,
                    (unsigned)ind->length);
  for (int64_t j = s0; j < s1; j++) {
    int64_t i = ar_index_vector_at(ind, j);
    if (!w->dst && (i < 0 || i >= size))
      return AR_K_ERR(w->node, w->msg, w->msg_bytes, AR_EMODEL,
                      "level %d: array_indices[%lld] = %lld outside [0,%d)", (int)level, (long long)j,
                      (long long)i, (int)size);
    w->eidx[dim] = (int32_t)i;
    if ((rc = densify_level(w, level + 1, j))) return rc;
  }
  return 0;
}

/* Check the sparsity metadata and derive the walk's shapes. */
static int densify_setup(const ar_node_t *node, densify_walk_t *w, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  const ar_sparsity_t *sp = in->sparsity;
  memset(w, 0, sizeof *w);
  w->node = node; w->msg = msg; w->msg_bytes = msg_bytes; w->sp = sp;
  if (!sp)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "input 0 has no sparsity parameters");
  if (!in->is_constant || !in->data)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0 is not a constant");
  w->elem = ar_dtype_size(in->dtype);
  if (w->elem == 0 || o->dtype != in->dtype)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "dtypes %s -> %s",
                    ar_dtype_name(in->dtype), ar_dtype_name(o->dtype));
  if ((rc = ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes))) return rc;
  const int32_t n = in->rank, k = sp->n_block_map, levels = n + k;
  if (n < 1 || k < 0 || k > n || sp->n_traversal_order != levels || sp->n_dim_metadata != levels)
    return AR_K_ERR(node, msg, msg_bytes, AR_EMODEL, "sparsity of a rank-%d tensor with %d block dims "
                    "needs %d traversal_order and dim_metadata entries, has %d and %d", (int)n, (int)k,
                    (int)levels, (int)sp->n_traversal_order, (int)sp->n_dim_metadata);
  w->n = n; w->levels = levels;
  bool seen[AR_SP_MAX_LEVELS] = {false};
  for (int32_t l = 0; l < levels; l++) {
    int32_t d = sp->traversal_order[l];
    if (d < 0 || d >= levels || seen[d])
      return AR_K_ERR(node, msg, msg_bytes, AR_EMODEL, "traversal_order is not a permutation of 0..%d",
                      (int)levels - 1);
    seen[d] = true;
    w->level_dim[l] = d;
  }
  for (int32_t d = 0; d < n; d++) { w->dense[d] = in->dims[d]; w->block_size[d] = 1; w->block_dim[d] = 0; }
  bool blocked[AR_MAX_RANK] = {false};
  for (int32_t j = 0; j < k; j++) {
    int32_t d = sp->block_map[j];
    if (d < 0 || d >= n || blocked[d])
      return AR_K_ERR(node, msg, msg_bytes, AR_EMODEL, "block_map[%d] = %d is invalid", (int)j, (int)d);
    int32_t l = 0;
    while (w->level_dim[l] != n + j) l++;
    int32_t bs = sp->dim_metadata[l].dense_size;
    if (sp->dim_metadata[l].format != AR_DIM_DENSE || bs <= 0 || in->dims[d] % bs != 0)
      return AR_K_ERR(node, msg, msg_bytes, AR_EMODEL, "block size %d of dim %d (size %d) is invalid",
                      (int)bs, (int)d, (int)in->dims[d]);
    blocked[d] = true;
    w->block_size[d] = bs;
    w->block_dim[d] = n + j;
  }
  int32_t ext[AR_SP_MAX_LEVELS];
  for (int32_t d = 0; d < n; d++) ext[d] = in->dims[d] / w->block_size[d];
  for (int32_t j = 0; j < k; j++) ext[n + j] = w->block_size[sp->block_map[j]];
  for (int32_t l = 0; l < levels; l++) {
    const ar_dim_metadata_t *m = &sp->dim_metadata[l];
    w->level_size[l] = ext[w->level_dim[l]];
    if (m->format == AR_DIM_DENSE) {
      if (m->dense_size != w->level_size[l])
        return AR_K_ERR(node, msg, msg_bytes, AR_EMODEL, "level %d: dense_size %d, expected %d",
                        (int)l, (int)m->dense_size, (int)w->level_size[l]);
    } else if (m->format == AR_DIM_SPARSE_CSR) {
      const ar_index_vector_t *v[2] = { &m->array_segments, &m->array_indices };
      for (int q = 0; q < 2; q++)
        if (v[q]->type < AR_IDX_INT32 || v[q]->type > AR_IDX_UINT8 || (v[q]->length && !v[q]->data))
          return AR_K_ERR(node, msg, msg_bytes, AR_EMODEL, "level %d: %s vector is missing or untyped",
                          (int)l, q ? "array_indices" : "array_segments");
    } else {
      return AR_K_ERR(node, msg, msg_bytes, AR_EMODEL, "level %d: unknown format %d", (int)l, (int)m->format);
    }
  }
  /* The sparse view's data holds only the stored values; `bytes` must count those (the interpreter
   * passes the constant's buffer size), so the walk can never read past them. */
  w->n_values = (int64_t)(in->bytes / w->elem);
  return 0;
}

static int densify_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  densify_walk_t w;
  node->state_bytes = 0;
  int rc = densify_setup(node, &w, msg, msg_bytes);
  if (rc) return rc;
  /* Dry run: validates every segment and index and counts the stored values visited. */
  if ((rc = densify_level(&w, 0, 0))) return rc;
  return 0;
}

static void densify_eval(const ar_node_t *node) {
  densify_walk_t w;
  if (densify_setup(node, &w, NULL, 0) != 0) return;   /* cannot happen after a good prepare */
  memset(node->outputs[0]->data, 0, (size_t)node->outputs[0]->bytes);
  w.src = node->inputs[0]->data;
  w.dst = node->outputs[0]->data;
  (void)densify_level(&w, 0, 0);
}

/* TFLite DENSIFY (builtin 124): sparse constant (any traversal order, block map, DENSE/CSR levels,
 * uint8/uint16/int32 index vectors) -> dense tensor of the same dtype, zeros elsewhere. */
static const ar_kernel_form_t densify_forms[] = {
  AR_KF_DATA(1, 1),
};
const ar_kernel_t ar_kernel_densify = { "DENSIFY", densify_prepare, NULL, densify_eval,
  AR_KSUPPORT(densify_forms, 0, -1) };
