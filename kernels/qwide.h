/* qwide.h - internal to the kernels layer: CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED in the
 * two quantization schemes besides 8-bit that TFLite's converter emits, reached from kernels/conv.c,
 * depthwise.c and fully_connected.c after their shared shape checks (kernels/qwide.c):
 *
 * int16x8 (input 0 INT16): int16 activations (per-tensor, zero point 0), int8 weights (per-tensor
 *   or per-channel, zero point 0), INT64 bias (optional). TFLite 2.19's builtin kernels run these
 *   in reference_integer_ops (ConvPerChannel, DepthwiseConvPerChannel, FullyConnected with an int64
 *   bias): acc = sum x * w + bias in int64, then MultiplyByQuantizedMultiplier's int64 form
 *   (ar_mbqm64: the multiplier rounded to 16 bits, one rounding half up), clamp to the fused
 *   activation's int16 range.
 *
 * hybrid (input 0 FLOAT32, weights INT8; "dynamic range" quantization): each batch of the input
 *   is quantized to int8 at every invoke - symmetric (scale max|x|/127, zero point 0) or asymmetric
 *   ([min(x,0), max(x,0)] onto [-128, 127] with a nudged zero point) as TFLite's
 *   tensor_utils::{Symmetric,Asymmetric}QuantizeFloats do - the int8 product is summed in int32
 *   and scaled back to float, in the order of operations of the builtin kernels on x86-64:
 *     CONV_2D, one weight scale (HybridConv):       acc * (s_in * s_w)  + bias          symmetric
 *     CONV_2D, per-channel scales (HybridConvPerChannel): acc * (s_w[c] * s_in) + bias  asymmetric
 *     DEPTHWISE_CONV_2D (DepthwiseConvHybridGeneral):  (acc * s_in) * s_w[c]  + bias    asymmetric
 *     FULLY_CONNECTED (MatrixBatchVectorMultiplyAccumulate): bias + acc * scale,         the
 *       scale s_in * s_w (one scale) or s_w[c] * s_in (per channel); symmetric unless the options
 *       say asymmetric_quantize_inputs
 *   with acc = sum (q - zp) * w over the taps inside the input, then the fused activation as a
 *   float clamp. The quantized input, its scales and zero points live in the node's scratch.
 */
#ifndef AR_QWIDE_H
#define AR_QWIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/ar_kernels.h"

/* The node (CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED) takes one of the forms above: input 0
 * INT16, or input 0 FLOAT32 with input 1 INT8. */
bool ar__qw_takes(const ar_node_t *node);

/* Arity, dtypes and quantization parameters (before the op's shape checks); 0, AR_EINVAL or
 * AR_EUNSUPPORTED with "operator N (OP): ..." naming the operand. */
int ar__qw_check_io(const ar_node_t *node, char *msg, size_t msg_bytes);
/* After the op's shape checks: the activation, scratch and state sizes. */
int ar__qw_prepare(ar_node_t *node, char *msg, size_t msg_bytes);
void ar__qw_init(ar_node_t *node);
void ar__qw_eval(const ar_node_t *node);

/* TFLite's MultiplyByQuantizedMultiplier for an int64 accumulator (the int16x8 kernels):
 * m' = m < 0x7FFF0000 ? (m + 2^15) >> 16 : 0x7FFF, then (x * m' + 2^(14 - shift)) >> (15 - shift)
 * (arithmetic shift: one rounding, ties toward +infinity). shift in [-31, 14], |x| < 2^47. */
static inline int32_t ar_mbqm64(int64_t x, int32_t m, int shift) {
  const int64_t rm = m < 0x7FFF0000 ? (int64_t)((m + (1 << 15)) >> 16) : 0x7FFF;
  const int total = 15 - shift;
  const int64_t v = (int64_t)((uint64_t)x * (uint64_t)rm + (1ull << (total - 1)));
  return (int32_t)(v >> total);
}

/* TFLite's tensor_utils::SymmetricQuantizeFloats: q[i] = clamp(round(x[i] * (127 / r)), -127, 127)
 * with r = max(|min x|, |max x|) (q = 0, scale 1 when r == 0); returns the scale r / 127. */
float ar__qw_quantize_symmetric(const float *x, int64_t n, int8_t *q);
/* TFLite's tensor_utils::AsymmetricQuantizeFloats: [min(x, 0), max(x, 0)] onto [-128, 127] with
 * the nudged zero point *zp; returns the scale (1 with zp 0 and q = 0 when the range is empty). */
float ar__qw_quantize_asymmetric(const float *x, int64_t n, int8_t *q, int32_t *zp);

#endif /* AR_QWIDE_H */
