/* qconv.h - internal to the kernels layer: the quantized (int8 / uint8) forms of CONV_2D and
 * FULLY_CONNECTED, reached from kernels/conv.c and kernels/fully_connected.c when input 0 is
 * INT8 or UINT8. The float kernels do the shape checks shared by both forms, then hand over.
 *
 * Semantics: TFLite's builtin kernels (TFLite 2.19, x86-64), which the goldens in
 * ../shared/golden_q are made of:
 *   acc = sum (x - z_in) * (w - z_w[c]) + bias[c]   (int32; padding taps read x = z_in)
 *   out = clamp(rescale(acc, QuantizeMultiplier(s_in * s_w[c] / s_out)) + z_out, act_lo, act_hi)
 * with s_in * s_w formed as TFLite does (ar_quant_conv_multiplier: float32 product for uint8
 * CONV_2D and per-tensor FULLY_CONNECTED, double for int8 CONV_2D and per-channel FC);
 * rescale = ar_mbqm_up (ties toward +inf) for int8 CONV_2D and FULLY_CONNECTED (TFLite sends int8
 * GEMMs to ruy on x86), ar_mbqm (ties away from zero) for uint8 (gemmlowp); the fused activation
 * is the clamp ar_quant_activation_range gives. uint8: legacy asymmetric per-tensor weights (any zero point);
 * int8: per-tensor or per-output-channel weights (axis 0) with zero point 0, or per-tensor with
 * any zero point. The bias (int32, optional) must have scale s_in * s_w[c] within TFLite's
 * tolerance |s_in*s_w - s_bias| <= 0.02 * s_out.
 * Weights and bias must be constants: init packs them once into persistent state
 * (kernels/qgemm.h), with the input-zero-point term folded into the bias; eval allocates nothing.
 */
#ifndef AR_QCONV_H
#define AR_QCONV_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/ar_kernels.h"

/* Input 0 is INT8 or UINT8: the node takes the quantized path. */
bool ar__q_is_quantized(const ar_node_t *node);

/* CONV_2D: arity, dtypes and quantization parameters (before the shared shape checks); returns 0,
 * AR_EINVAL or AR_EUNSUPPORTED with "operator N (CONV_2D): ..." naming the operand. */
int ar__qconv_check_io(const ar_node_t *node, const char *name, char *msg, size_t msg_bytes);
/* CONV_2D, after the shape checks: bias scales, activation, scratch and state sizes. */
int ar__qconv_prepare(ar_node_t *node, char *msg, size_t msg_bytes);
void ar__qconv_init(ar_node_t *node);
void ar__qconv_eval(const ar_node_t *node);

/* FULLY_CONNECTED, after fc_prepare's shape checks (weights [O, I], output shape): dtypes,
 * quantization parameters, bias scales, activation, scratch and state sizes. */
int ar__qfc_prepare(ar_node_t *node, char *msg, size_t msg_bytes);
void ar__qfc_init(ar_node_t *node);
void ar__qfc_eval(const ar_node_t *node);

#endif /* AR_QCONV_H */
