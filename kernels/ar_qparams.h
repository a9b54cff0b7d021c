/* ar_qparams.h - internal to the kernels layer: reading a tensor's per-tensor quantization in a
 * kernel's prepare (the 8-bit elementwise, shape and activation kernels: binary.c, elementwise.c,
 * shape_ops.c, resize.c, softmax.c, convert.c). Header-only. */
#ifndef AR_QPARAMS_H
#define AR_QPARAMS_H

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_quant.h"

/* An 8-bit quantized dtype (what TFLite's builtin kernels take as "quantized"). */
static inline bool ar_k_is_q8(ar_dtype_t t) { return t == AR_DTYPE_UINT8 || t == AR_DTYPE_INT8; }

/* `t` (named `what`) carries per-tensor quantization: *scale (finite, > 0: the loader checked it)
 * and *zero_point. A tensor without quantization or with per-axis parameters is refused
 * (AR_EUNSUPPORTED), naming it. */
static inline int ar_k_qparams(const ar_node_t *node, const ar_tview_t *t, const char *what,
                               float *scale, int32_t *zero_point, char *msg, size_t msg_bytes) {
  if (!t->quant || t->quant->n < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s (%s) has no quantization parameters",
                    what, ar_dtype_name(t->dtype));
  if (t->quant->n != 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s has per-axis quantization (%d scales); "
                    "this operator takes per-tensor parameters", what, (int)t->quant->n);
  *scale = t->quant->scale[0];
  *zero_point = (int32_t)t->quant->zero_point[0];
  return 0;
}

/* Saturate to the range of an 8-bit dtype's element and store it. */
static inline void ar_k_store_q8(void *out, int64_t i, bool is_signed, int32_t v) {
  if (is_signed) ((int8_t *)out)[i] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
  else ((uint8_t *)out)[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

#endif /* AR_QPARAMS_H */
