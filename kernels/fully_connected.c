/* fully_connected.c - TFLite FULLY_CONNECTED, float32.
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
#include "kernels/conv_util.h"
#include "kernels/gemm.h"
#include "kernels/sgemm.h"
#include "kernels/qconv.h"
#include "kernels/qwide.h"
#include "kernels/sparse_conv.h"

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
  if (ar__q_is_quantized(node)) ar__qfc_init(node);
  else if (ar__qw_takes(node)) ar__qw_init(node);
}

static void fc_eval(const ar_node_t *node) {
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
