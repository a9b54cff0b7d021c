/* common.c - helpers every kernel shares: TFLite padding arithmetic, fused activations and the
 * float16 -> float32 conversion DEQUANTIZE relies on (one value, or a run of them with F16C when
 * the CPU has it). Pure functions; the only state is the cached F16C choice. */
#include "kernels/ar_kernels.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang_analyzer__)
#define AR_HAVE_F16C_CLONE 1
#include <immintrin.h>
#else
#define AR_HAVE_F16C_CLONE 0
#endif

int32_t ar_compute_padding(ar_padding_t padding, int32_t in, int32_t filter, int32_t stride,
                           int32_t dilation, int32_t *pad_before) {
  /* TFLite kernels/padding.h: the dilated filter spans (filter-1)*dilation+1 input pixels. */
  int64_t eff = (int64_t)(filter - 1) * dilation + 1;
  int64_t out;
  if (stride <= 0 || dilation <= 0 || filter <= 0 || in < 0) {
    if (pad_before) *pad_before = 0;
    return 0;
  }
  if (padding == AR_PADDING_SAME)
    out = ((int64_t)in + stride - 1) / stride;
  else
    out = in >= eff ? ((int64_t)in - eff + stride) / stride : 0;
  int64_t total = out > 0 ? (out - 1) * stride + eff - in : 0;
  if (total < 0 || padding != AR_PADDING_SAME) total = 0;   /* negative padding clamps to 0 */
  /* The odd pixel of an odd total goes to the bottom/right, as TFLite's ComputePaddingWithOffset. */
  if (pad_before) *pad_before = (int32_t)(total / 2);
  return (int32_t)out;
}

void ar_apply_activation(float *x, size_t n, ar_activation_t act) {
  switch (act) {
  case AR_ACT_NONE:
    return;
  case AR_ACT_RELU:
    for (size_t i = 0; i < n; i++) x[i] = x[i] < 0.0f ? 0.0f : x[i];
    return;
  case AR_ACT_RELU_N1_TO_1:
    for (size_t i = 0; i < n; i++) {
      float v = x[i] < -1.0f ? -1.0f : x[i];
      x[i] = v > 1.0f ? 1.0f : v;
    }
    return;
  case AR_ACT_RELU6:
    for (size_t i = 0; i < n; i++) {
      float v = x[i] < 0.0f ? 0.0f : x[i];
      x[i] = v > 6.0f ? 6.0f : v;
    }
    return;
  case AR_ACT_TANH:
    for (size_t i = 0; i < n; i++) x[i] = tanhf(x[i]);
    return;
  case AR_ACT_SIGN_BIT:
    /* TFLite tensor_utils ApplySignbitToVector: 1 where the sign bit is set (incl. -0.0), else 0. */
    for (size_t i = 0; i < n; i++) x[i] = signbit(x[i]) ? 1.0f : 0.0f;
    return;
  }
}

int64_t ar_index_vector_at(const ar_index_vector_t *v, int64_t i) {
  const unsigned char *p = (const unsigned char *)v->data;
  switch (v->type) {
  case AR_IDX_UINT8: return p[i];
  case AR_IDX_UINT16: { uint16_t x; memcpy(&x, p + 2 * i, 2); return x; }
  case AR_IDX_INT32: { int32_t x; memcpy(&x, p + 4 * i, 4); return x; }
  default: return -1;
  }
}

float ar_fp16_to_fp32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);          /* inf, NaN (payload kept) */
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  /* normal: rebias 15 -> 127 */
  } else if (mant == 0) {
    bits = sign;                                        /* +-0 */
  } else {
    /* Subnormal half: value = mant * 2^-24; normalise into a float32 normal. */
    uint32_t e = 113;   /* 127 - 15 + 1 */
    while (!(mant & 0x400u)) { mant <<= 1; e--; }
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static void fp16_widen_portable(const unsigned char *src, float *dst, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint16_t h;
    memcpy(&h, src + 2 * i, sizeof h);
    dst[i] = ar_fp16_to_fp32(h);
  }
}

#if AR_HAVE_F16C_CLONE
/* 16 values per iteration (two vcvtph2ps), unaligned loads and stores; the tail goes portable. */
__attribute__((target("avx,f16c"))) static void fp16_widen_f16c(const unsigned char *src, float *dst,
                                                                  size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i));
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i + 16));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(a));
    _mm256_storeu_ps(dst + i + 8, _mm256_cvtph_ps(b));
  }
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i))));
  fp16_widen_portable(src + 2 * i, dst + i, n - i);
}
#endif

static int fp16_forced_portable;   /* tests only */

static bool fp16_has_f16c(void) {
#if AR_HAVE_F16C_CLONE
  /* Cached: __builtin_cpu_supports reads a table filled at start-up, but this is the invoke path. */
  static int has = -1;   /* relaxed atomics: invokes on several threads may ask first */
  int h = __atomic_load_n(&has, __ATOMIC_RELAXED);
  if (h < 0) {
    h = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
    __atomic_store_n(&has, h, __ATOMIC_RELAXED);
  }
  return h;
#else
  return false;
#endif
}

bool ar_fp16_force_portable(int on) {
  fp16_forced_portable = on;
  return fp16_has_f16c();
}

void ar_fp16_to_fp32_n(const void *src, float *dst, size_t n) {
#if AR_HAVE_F16C_CLONE
  if (!fp16_forced_portable && fp16_has_f16c()) {
    fp16_widen_f16c(src, dst, n);
    return;
  }
#endif
  fp16_widen_portable(src, dst, n);
}
