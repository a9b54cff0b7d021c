/* fully_connected.c - TFLite FULLY_CONNECTED, float32 (and uint8 -> int16).
 *
 * Inputs: input (any rank), weights [O, I], optional bias [O]; output [B, O] where B is the input
 * element count / I (keep_num_dims false: TFLite flattens the input to [B, I]), or the input shape
 * with its last dimension (which must be I) replaced by O (keep_num_dims true). Only the DEFAULT
 * weights format is supported. The fused activation is applied to product + bias: every path sums
 * the product from 0 and adds the bias after it, as TFLite's builtin kernel does (kernels/gemm.c).
 *
 * Speed: kernels/gemm.c. B = 1 (every FULLY_CONNECTED in the shipped models) on a CPU with
 * AVX-512F or AVX2 + FMA + F16C: arenad's own one-row product (kernels/sgemm.h, ar_sgemv_nt:
 * sgemm512.c or sgemm256.c, the same bits), which reads the weights once,
 * float16 ones as stored, output units split by thread count (each unit's sum is the same
 * whatever range holds it). B >= 4 there: arenad's own GEMM (ar_sgemm_nt, each sum one FMA chain
 * in k order from 0, then + bias: native TFLite's bits on YAMNet's [96,257] x [64,257]^T, where
 * OpenBLAS's order moved 12 of its 521 int8 scores). Otherwise OpenBLAS with beta = 0, the bias
 * added after: cblas_sgemv when B = 1, cblas_sgemm otherwise (weights used in place through
 * Trans, since [O, I] row-major is already W^T of the GEMM), in bands of output units or rows over the node's
 * pool when the product is large enough. Sparse weights kept as stored (TFLite sparsity,
 * ar_kernel_sparse_filter_check) go to kernels/sparse_conv.c.
 *
 * Float16 weights and bias as stored (ar_kernel_reads_f16: the interpreter elides the DEQUANTIZE
 * that widened them at use): the one-row product widens the weights as it reads them (exact);
 * the other paths widen them into the node's scratch at eval; the bias is widened into the
 * scratch. Either way the product runs on the same fp32 values as the widened path, in the same
 * order: the same bits, one operator less to run.
 */
#include "kernels/ar_kernel_impl.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_qparams.h"
#include "kernels/conv_util.h"
#include "kernels/gemm.h"
#include "kernels/sgemm.h"
#include "kernels/qconv.h"
#include "kernels/qwide.h"
#include "kernels/sparse_conv.h"

/* ---- uint8 input and weights, int16 output (TFLite's uint8 FULLY_CONNECTED with an int16 output:
 * output zero point 0). The rescale rounds as native TFLite 2.19's GEMM does, which depends on the
 * shape: one input row with at least 4 output units and 8 inputs takes its one-row kernel, whose
 * two roundings both go half up (ar_mbqm_up: -9716.64 gives -9716, as -19433 / 2 rounds up);
 * any other shape takes gemmlowp, ties away from zero (ar_mbqm: -9717). Found on the
 * fc_u8i16_ native goldens (1x40 -> 64, 1x8 -> 16, 1x21 -> 4 one way; 1x7 -> 16, 1x31 -> 2,
 * 6x24 -> 20 the other). acc = bias + sum (x - z_in)(w - z_w) in int32, rescaled by
 * QuantizeMultiplier(GetQuantizedConvolutionMultipler: float32(s_in * s_w) / s_out), clamped to the
 * fused activation's int16 range. Plain loops: no shipped model has this form. ---- */
typedef struct {
  int32_t z_in, z_w, mult, lo, hi;
  int shift;
  bool round_up;   /* one row, >= 4 units, >= 8 inputs: ar_mbqm_up; else ar_mbqm */
} fc_u8i16_state_t;

static bool fc_is_u8i16(const ar_node_t *node) {
  return node->inputs[0]->dtype == AR_DTYPE_UINT8 && node->outputs[0]->dtype == AR_DTYPE_INT16;
}

static int fc_u8i16_plan(const ar_node_t *node, fc_u8i16_state_t *st, char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0], *wt = node->inputs[1], *out = node->outputs[0];
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  int rc;
  if ((rc = ar_k_check_dtype(node, wt, "weights (input 1)", AR_DTYPE_UINT8, msg, msg_bytes)) ||
      (bias && (rc = ar_k_check_dtype(node, bias, "bias (input 2)", AR_DTYPE_INT32, msg, msg_bytes))))
    return rc;
  float s_in = 0, s_w = 0, s_out = 0;
  int32_t z_out = 0;
  if ((rc = ar_k_qparams(node, in, "input 0", &s_in, &st->z_in, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, wt, "weights (input 1)", &s_w, &st->z_w, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, out, "output 0", &s_out, &z_out, msg, msg_bytes)))
    return rc;
  if (z_out != 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "an int16 output of a uint8 FULLY_CONNECTED needs "
                    "zero point 0 (it has %d), as TFLite's kernel assumes", (int)z_out);
  ar_quantize_multiplier(ar_quant_conv_multiplier(s_in, s_w, s_out, true), &st->mult, &st->shift);
  const int64_t depth = wt->dims[1], units = wt->dims[0];
  st->round_up = ar_k_elements(in) / depth == 1 && units >= 4 && depth >= 8;
  return ar_quant_activation_range(node->options->fully_connected.activation, AR_DTYPE_INT16, s_out, 0,
                                   &st->lo, &st->hi);
}

static void fc_u8i16_init(ar_node_t *node) {
  fc_u8i16_state_t st;
  if (fc_u8i16_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

static void fc_u8i16_eval(const ar_node_t *node) {
  const fc_u8i16_state_t *st = node->state;
  const ar_tview_t *wt = node->inputs[1];
  const int32_t units = wt->dims[0], depth = wt->dims[1];
  const int64_t batch = ar_k_elements(node->inputs[0]) / depth;
  const uint8_t *x = node->inputs[0]->data, *w = wt->data;
  const int32_t *bias = node->n_inputs > 2 && node->inputs[2] ? node->inputs[2]->data : NULL;
  int16_t *y = node->outputs[0]->data;
  for (int64_t b = 0; b < batch; b++)
    for (int32_t o = 0; o < units; o++) {
      const uint8_t *xr = x + b * depth, *wr = w + (int64_t)o * depth;
      int32_t acc = bias ? bias[o] : 0;
      for (int32_t d = 0; d < depth; d++) acc += ((int32_t)xr[d] - st->z_in) * ((int32_t)wr[d] - st->z_w);
      int32_t v = st->round_up ? ar_mbqm_up(acc, st->mult, st->shift) : ar_mbqm(acc, st->mult, st->shift);
      v = v < st->lo ? st->lo : v > st->hi ? st->hi : v;
      y[b * units + o] = (int16_t)v;
    }
}

static int fc_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  const char *name = "FULLY_CONNECTED";
  int idx = node->index;
  char s1[96], s2[96];
  if (node->n_inputs < 2 || node->n_inputs > 3 || node->n_outputs != 1 || !node->inputs[0] ||
      !node->inputs[1] || !node->outputs[0] || !node->options)
    return ar_errf(msg, msg_bytes, AR_EINVAL, AR__OPFMT "needs inputs (input, weights[, bias]) and "
                   "one output, got %d inputs and %d outputs", idx, name, node->n_inputs,
                   node->n_outputs);
  const ar_tview_t *in = node->inputs[0], *wt = node->inputs[1];
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  const ar_tview_t *out = node->outputs[0];
  const ar_fully_connected_options_t *o = &node->options->fully_connected;
  const bool quantized = ar__q_is_quantized(node);
  const bool wide = ar__qw_takes(node);   /* int16x8 or hybrid (kernels/qwide.h) */
  if (wide) {
    int wrc = ar__qw_check_io(node, msg, msg_bytes);
    if (wrc != 0) return wrc;
  }
  const bool sparse = !quantized && !wide && wt->sparsity != NULL;   /* weights as stored (sparse_conv.c) */
  /* fp16 weights / bias as stored (a constant, dense weights) */
  const bool w16 = !sparse && wt->dtype == AR_DTYPE_FLOAT16 && wt->is_constant;
  const bool b16 = bias && bias->dtype == AR_DTYPE_FLOAT16 && bias->is_constant;
  if (!quantized && !wide && (in->dtype != AR_DTYPE_FLOAT32 || (wt->dtype != AR_DTYPE_FLOAT32 && !sparse && !w16) ||
      out->dtype != AR_DTYPE_FLOAT32 || (bias && bias->dtype != AR_DTYPE_FLOAT32 && !b16)))
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "only float32 or quantized int8/uint8 input/weights/bias/output "
                   "are supported (input %s, weights %s, output %s)", idx, name,
                   ar_dtype_name(in->dtype), ar_dtype_name(wt->dtype), ar_dtype_name(out->dtype));
  if (o->weights_format != 0 || !ar__activation_valid(o->activation))
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "unsupported options: weights_format "
                   "%d (only DEFAULT), activation %d", idx, name, (int)o->weights_format,
                   (int)o->activation);
  if (wt->rank != 2 || wt->dims[0] <= 0 || wt->dims[1] <= 0)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "weights shape %s must be [O, I]", idx, name,
                   ar__shape_str(s1, sizeof s1, wt));
  const int32_t units = wt->dims[0], depth = wt->dims[1];
  if (bias && (bias->rank != 1 || bias->dims[0] != units))
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "bias shape %s does not match %d output "
                   "units", idx, name, ar__shape_str(s1, sizeof s1, bias), (int)units);
  if (in->rank < 1)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "input must have rank >= 1", idx, name);
  uint64_t elems = 1;
  for (int32_t i = 0; i < in->rank; i++) elems *= (uint64_t)in->dims[i];
  if (elems == 0 || elems % (uint64_t)depth != 0)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "input %s (%llu elements) is not a whole "
                   "number of rows of weights %s", idx, name, ar__shape_str(s1, sizeof s1, in),
                   (unsigned long long)elems, ar__shape_str(s2, sizeof s2, wt));
  const uint64_t batch = elems / (uint64_t)depth;
  if (batch > INT_MAX)
    return ar_errf(msg, msg_bytes, AR_EOVERFLOW, AR__OPFMT "batch %llu is too large", idx, name,
                   (unsigned long long)batch);
  int32_t want[AR_MAX_RANK];
  int32_t want_rank;
  if (o->keep_num_dims) {
    if (in->dims[in->rank - 1] != depth)
      return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "keep_num_dims needs the input's last "
                     "dimension (%s) to equal the weights' input size %d", idx, name,
                     ar__shape_str(s1, sizeof s1, in), (int)depth);
    want_rank = in->rank;
    memcpy(want, in->dims, sizeof(int32_t) * (size_t)in->rank);
    want[want_rank - 1] = units;
  } else {
    want_rank = 2;
    want[0] = (int32_t)batch;
    want[1] = units;
  }
  if (node->infer_shapes) ar_k_set_output_shape(node, 0, want_rank, want);
  if (out->rank != want_rank || memcmp(out->dims, want, sizeof(int32_t) * (size_t)want_rank) != 0) {
    ar_tview_t w = {.rank = want_rank};
    memcpy(w.dims, want, sizeof(int32_t) * (size_t)want_rank);
    return ar_errf(msg, msg_bytes, AR_ESHAPE, AR__OPFMT "output shape %s, expected %s", idx, name,
                   ar__shape_str(s1, sizeof s1, out), ar__shape_str(s2, sizeof s2, &w));
  }
  if (fc_is_u8i16(node)) {
    node->state_bytes = sizeof(fc_u8i16_state_t);
    node->scratch_bytes = 0;
    fc_u8i16_state_t st;
    return fc_u8i16_plan(node, &st, msg, msg_bytes);
  }
  if (quantized) return ar__qfc_prepare(node, msg, msg_bytes);
  if (wide) return ar__qw_prepare(node, msg, msg_bytes);
  if (sparse) {
    if (b16)
      return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "a float16 bias with sparse weights",
                     idx, name);
    return ar__sparse_fc_prepare(node, msg, msg_bytes);
  }
  /* Scratch: the widened fp16 weights [O, I], then the widened fp16 bias [O]. */
  node->scratch_bytes = (w16 ? ar_align_up((uint64_t)units * (uint64_t)depth * sizeof(float), 64) : 0) +
                        (b16 ? (uint64_t)units * sizeof(float) : 0);
  node->state_bytes = 0;
  return 0;
}

bool ar__fully_connected_reads_f16(const ar_node_t *node, int32_t input) {
  if ((input != 1 && input != 2) || input >= node->n_inputs || !node->inputs[0] ||
      !node->inputs[1] || !node->inputs[input])
    return false;
  return node->inputs[0]->dtype == AR_DTYPE_FLOAT32 && !node->inputs[1]->sparsity &&
         node->inputs[1]->dtype != AR_DTYPE_INT8 &&   /* hybrid: kernels/qwide.h */
         node->inputs[input]->dtype == AR_DTYPE_FLOAT32;
}

static void fc_init(ar_node_t *node) {
  if (fc_is_u8i16(node)) fc_u8i16_init(node);
  else if (ar__q_is_quantized(node)) ar__qfc_init(node);
  else if (ar__qw_takes(node)) ar__qw_init(node);
}

static void fc_eval(const ar_node_t *node) {
  if (fc_is_u8i16(node)) { fc_u8i16_eval(node); return; }
  if (ar__q_is_quantized(node)) { ar__qfc_eval(node); return; }
  if (ar__qw_takes(node)) { ar__qw_eval(node); return; }
  if (node->inputs[1]->sparsity) { ar__sparse_fc_eval(node); return; }
  const ar_tview_t *in_t = node->inputs[0], *wt_t = node->inputs[1];
  const ar_tview_t *bias_t = node->n_inputs > 2 ? node->inputs[2] : NULL;
  const int units = wt_t->dims[0], depth = wt_t->dims[1];
  uint64_t elems = 1;
  for (int32_t i = 0; i < in_t->rank; i++) elems *= (uint64_t)in_t->dims[i];
  const int batch = (int)(elems / (uint64_t)depth);
  const float *w = wt_t->data, *bias = bias_t ? bias_t->data : NULL;
  uint8_t *scratch = node->scratch;
  const bool gemv = batch == 1 && ar_sgemm_own_available();
  const uint16_t *w16 = NULL;
  if (wt_t->dtype == AR_DTYPE_FLOAT16 && gemv) {   /* as stored: read by ar_sgemv_nt */
    w16 = wt_t->data;
    w = NULL;
  } else if (wt_t->dtype == AR_DTYPE_FLOAT16) {   /* as stored: widened into the scratch */
    float *w32 = (float *)(void *)scratch;
    ar_fp16_to_fp32_n(wt_t->data, w32, (size_t)units * (size_t)depth);
    w = w32;
    scratch += ar_align_up((uint64_t)units * (uint64_t)depth * sizeof(float), 64);
  }
  if (bias_t && bias_t->dtype == AR_DTYPE_FLOAT16) {
    float *b32 = (float *)(void *)scratch;
    ar_fp16_to_fp32_n(bias_t->data, b32, (size_t)units);
    bias = b32;
  }
  const ar_gemm_nt_t g = {.a = in_t->data, .b = w, .b16 = w16, .gemv = gemv, .own = true, .bias = bias,
                          .c = node->outputs[0]->data, .m = batch, .n = units, .k = depth,
                          .lda = depth, .ldb = depth, .ldc = units,
                          .act = node->options->fully_connected.activation};
  ar_gemm_nt(node, &g);
}

static const ar_kernel_form_t fully_connected_forms[] = {
  AR_KF(1, 8, FLOAT32, FLOAT32),          /* 8: sparse weights */
  AR_KF(1, 6, UINT8, UINT8),
  AR_KF(1, 6, UINT8, INT16),              /* int16 output (TFLite's uint8 kernel) */
  AR_KF(1, 6, INT8, INT8),
  AR_KFW(3, 9, FLOAT32, INT8, FLOAT32),   /* hybrid, asymmetric inputs from v9 (kernels/qwide.h) */
  AR_KFW(7, 9, INT16, INT8, INT16),       /* int16x8 */
};
const ar_kernel_t ar_kernel_fully_connected = {
  .name = "FULLY_CONNECTED",
  .prepare = fc_prepare,
  .init = fc_init,
  .eval = fc_eval,
  .support = AR_KSUPPORT(fully_connected_forms, 0, 1),
};
