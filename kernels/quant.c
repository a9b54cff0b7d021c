/* quant.c - TFLite's quantized-multiplier and activation-range helpers (kernels/ar_quant.h). */
#include "kernels/ar_quant.h"

#include <math.h>

#include "common/ar_error.h"

void ar_quantize_multiplier(double real_multiplier, int32_t *m, int *shift) {
  if (!(real_multiplier > 0.0) || !isfinite(real_multiplier)) {
    *m = 0;
    *shift = 0;
    return;
  }
  int e = 0;
  double q = frexp(real_multiplier, &e);          /* q in [0.5, 1) */
  int64_t q_fixed = (int64_t)round(q * (double)(1ll << 31));
  if (q_fixed == (1ll << 31)) {
    q_fixed /= 2;
    e++;
  }
  if (e < -31) {
    e = 0;
    q_fixed = 0;
  }
  if (e > 30) {
    e = 30;
    q_fixed = (1ll << 31) - 1;
  }
  *m = (int32_t)q_fixed;
  *shift = e;
}

int ar_quant_type_range(ar_dtype_t dtype, int32_t *lo, int32_t *hi) {
  switch (dtype) {
    case AR_DTYPE_UINT8: *lo = 0; *hi = UINT8_MAX; return 0;
    case AR_DTYPE_INT8: *lo = INT8_MIN; *hi = INT8_MAX; return 0;
    case AR_DTYPE_INT16: *lo = INT16_MIN; *hi = INT16_MAX; return 0;
    case AR_DTYPE_INT32: *lo = INT32_MIN; *hi = INT32_MAX; return 0;
    default: return AR_EUNSUPPORTED;
  }
}

/* zero_point + round(f / scale), the division and the rounding in float32 as TFLite does them. */
static int64_t quantize_f(float f, float scale, int64_t zero_point) {
  return zero_point + (int64_t)roundf(f / scale);
}

int ar_quant_activation_range(ar_activation_t act, ar_dtype_t dtype, float scale, int64_t zero_point,
                              int32_t *lo, int32_t *hi) {
  int32_t qmin, qmax;
  if (ar_quant_type_range(dtype, &qmin, &qmax)) return AR_EUNSUPPORTED;
  int64_t a = qmin, b = qmax;
  switch (act) {
    case AR_ACT_NONE: break;
    case AR_ACT_RELU: a = quantize_f(0.0f, scale, zero_point); break;
    case AR_ACT_RELU6:
      a = quantize_f(0.0f, scale, zero_point);
      b = quantize_f(6.0f, scale, zero_point);
      break;
    case AR_ACT_RELU_N1_TO_1:
      a = quantize_f(-1.0f, scale, zero_point);
      b = quantize_f(1.0f, scale, zero_point);
      break;
    default: return AR_EUNSUPPORTED;
  }
  *lo = (int32_t)(a > qmin ? a : qmin);
  *hi = (int32_t)(b < qmax ? b : qmax);
  return 0;
}

double ar_quant_conv_multiplier(float s_in, float s_w, float s_out, bool float_product) {
  if (float_product) {
    const float prod = s_in * s_w;   /* float32 product, as TFLite's static_cast<double>(a * b) */
    return (double)prod / (double)s_out;
  }
  return (double)s_in * (double)s_w / (double)s_out;
}
