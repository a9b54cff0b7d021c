/* ar_quant.h - fixed-point arithmetic of TFLite's integer kernels, shared by every quantized kernel.
 *
 * Affine quantization: real = scale * (q - zero_point). A kernel whose output scale differs from the
 * scale of its int32 accumulator rescales with a real multiplier M = s_acc / s_out, held as an int32
 * Q31 multiplier m in [2^30, 2^31) and a power-of-two exponent e (M ~= m * 2^(e - 31)), exactly as
 * TFLite's QuantizeMultiplier (tensorflow/lite/kernels/internal/quantization_util.cc) makes them.
 *
 * Two roundings of the rescale exist in TFLite and both are needed to match it byte for byte
 * (../shared/golden_q/NOTES.md):
 *   ar_mbqm       TFLite's MultiplyByQuantizedMultiplier (reference kernels, gemmlowp output stages,
 *                 every legacy uint8 kernel, ADD/SUB/MUL/CONCATENATION/...): a saturating rounding
 *                 doubling high multiply (gemmlowp's nudge makes its ties go toward +infinity:
 *                 -0.5 -> 0, +0.5 -> 1), then a rounding right shift (ties away from zero).
 *   ar_mbqm_up    the builtin int8 CONV_2D (ruy's AVX2 kernel) / DEPTHWISE_CONV_2D (NEON path) and the
 *                 optimized int8 MEAN: the same two steps, each rounding ties toward +infinity.
 * They differ only on negative exact ties (1 LSB).
 */
#ifndef AR_QUANT_H
#define AR_QUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "loader/ar_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* TFLite QuantizeMultiplier: real_multiplier (>= 0, finite) -> (*m, *shift) with
 * real ~= m * 2^(shift - 31), m in [2^30, 2^31) or 0. Frexp, then round(q * 2^31) half away from
 * zero; q rounding up to 2^31 halves it and bumps the shift; shift < -31 gives (0, 0); shift > 30
 * saturates to (2^31 - 1, 30). real_multiplier 0 gives (0, 0). */
void ar_quantize_multiplier(double real_multiplier, int32_t *m, int *shift);

/* gemmlowp SaturatingRoundingDoublingHighMul: a * b / 2^31 rounded to nearest as gemmlowp does it
 * ((ab + nudge) / 2^31 truncated, nudge 2^30 or 1 - 2^30), which sends ties toward +infinity
 * (-1.5 -> -1, 1.5 -> 2; tests/check_quant.c), saturating the one overflow case
 * a == b == INT32_MIN to INT32_MAX. */
static inline int32_t ar_srdhm(int32_t a, int32_t b) {
  if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
  int64_t ab = (int64_t)a * (int64_t)b;
  int64_t nudge = ab >= 0 ? (1ll << 30) : (1 - (1ll << 30));
  return (int32_t)((ab + nudge) / (1ll << 31));   /* C division truncates toward zero */
}

/* gemmlowp RoundingDivideByPOT: x / 2^exponent rounded to nearest, ties away from zero;
 * exponent in [0, 31]. */
static inline int32_t ar_rdivpot(int32_t x, int exponent) {
  int32_t mask = (int32_t)((1ll << exponent) - 1);
  int32_t remainder = x & mask;
  int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* TFLite MultiplyByQuantizedMultiplier (double rounding, ties away from zero): x * m * 2^(shift-31).
 * The left shift (shift > 0) wraps like TFLite's int32 multiply does for out-of-range accumulators
 * (never in valid models). */
static inline int32_t ar_mbqm(int32_t x, int32_t m, int shift) {
  int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
  return ar_rdivpot(ar_srdhm((int32_t)((uint32_t)x << left), m), right);
}

/* The builtin int8 CONV_2D / DEPTHWISE_CONV_2D / MEAN rescale: v = ((x << max(shift,0)) * m + 2^30)
 * >> 31, then (v + 2^(r-1)) >> r with r = max(-shift, 0); arithmetic shifts, both roundings half up
 * (toward +infinity). Computed in 64 bits, so it never saturates for accumulators a valid model
 * gives; beyond that (|x << shift| * m >= 2^63) the product wraps modulo 2^64, defined behaviour
 * and what the SIMD paths compute. */
static inline int32_t ar_mbqm_up(int32_t x, int32_t m, int shift) {
  int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
  int64_t xl = (int64_t)x * ((int64_t)1 << left);   /* |xl| < 2^62: no overflow */
  int64_t v = (int64_t)((uint64_t)xl * (uint64_t)(int64_t)m + (1ull << 30)) >> 31;
  if (right > 0) v = (v + (1ll << (right - 1))) >> right;
  return (int32_t)v;
}

/* TFLite CalculateActivationRangeQuantized: the [*lo, *hi] clamp of a fused activation in the
 * quantized domain of an output of `dtype` (UINT8, INT8, INT16, INT32) with `scale` and
 * `zero_point`: NONE = the type's range; RELU = [zp + round(0/s), max]; RELU6 = [.., zp + round(6/s)];
 * RELU_N1_TO_1 = [zp + round(-1/s), zp + round(1/s)], each intersected with the type's range
 * (round = half away from zero, of the float32 quotient). Returns 0, or AR_EUNSUPPORTED for another
 * activation (TANH, SIGN_BIT) or dtype. */
int ar_quant_activation_range(ar_activation_t act, ar_dtype_t dtype, float scale, int64_t zero_point,
                              int32_t *lo, int32_t *hi);

/* The [lo, hi] range of an integer dtype (UINT8, INT8, INT16, INT32); 0 or AR_EUNSUPPORTED. */
int ar_quant_type_range(ar_dtype_t dtype, int32_t *lo, int32_t *hi);

/* The real multiplier of a convolution-family output rescale, s_in * s_w / s_out, computed the way
 * TFLite computes it for QuantizeMultiplier:
 *   float_product = true:  double(float32(s_in * s_w)) / double(s_out) - GetQuantizedConvolution-
 *                          Multipler (kernel_util.cc): legacy uint8 CONV_2D / DEPTHWISE_CONV_2D and
 *                          every per-tensor FULLY_CONNECTED (uint8 or int8);
 *   float_product = false: double(s_in) * double(s_w) / double(s_out) - PopulateConvolution-
 *                          QuantizationParams' per-channel loop: int8 CONV_2D / DEPTHWISE_CONV_2D
 *                          (per-channel or per-tensor filters) and per-channel FULLY_CONNECTED.
 * The two differ in the last bits of the product often enough to change the Q31 multiplier
 * (e.g. 0.0075838477 * 0.0425242521 / 0.3842495680: m 1845621833 vs 1845621851) and so output bytes:
 * with the double product for uint8 CONV_2D, three legacy models of ../shared/models_q miss their
 * goldens by up to 4 LSB. (added by kernels/qdepthwise.c) */
double ar_quant_conv_multiplier(float s_in, float s_w, float s_out, bool float_product);

#ifdef __cplusplus
}
#endif
#endif /* AR_QUANT_H */
