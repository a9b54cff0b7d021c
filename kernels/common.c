/* common.c - helpers every kernel shares: TFLite padding arithmetic, fused activations and the
 * float16 -> float32 conversion DEQUANTIZE folding relies on. Pure functions, no state. */
#include "kernels/ar_kernels.h"

#include <math.h>
#include <string.h>

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
