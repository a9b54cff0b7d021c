/* registry.c - ar_kernel_for(): the one map from ar_op_t (loader/ar_ops.h) to the kernel that
 * implements it. A switch rather than a table indexed by op so that adding an op to the X-macro
 * without a kernel shows up as NULL (the interpreter reports it at prepare), never as a wrong entry. */
#include <stdio.h>

#include "kernels/ar_kernel_impl.h"

const ar_kernel_t *ar_kernel_for(ar_op_t op) {
  switch (op) {
  case AR_OP_ADD: return &ar_kernel_add;
  case AR_OP_AVERAGE_POOL_2D: return &ar_kernel_average_pool_2d;
  case AR_OP_CONCATENATION: return &ar_kernel_concatenation;
  case AR_OP_CONV_2D: return &ar_kernel_conv_2d;
  case AR_OP_DEPTHWISE_CONV_2D: return &ar_kernel_depthwise_conv_2d;
  case AR_OP_DEPTH_TO_SPACE: return &ar_kernel_depth_to_space;
  case AR_OP_DEQUANTIZE: return &ar_kernel_dequantize;
  case AR_OP_QUANTIZE: return &ar_kernel_quantize;
  case AR_OP_FULLY_CONNECTED: return &ar_kernel_fully_connected;
  case AR_OP_LOGISTIC: return &ar_kernel_logistic;
  case AR_OP_MAX_POOL_2D: return &ar_kernel_max_pool_2d;
  case AR_OP_MUL: return &ar_kernel_mul;
  case AR_OP_RELU: return &ar_kernel_relu;
  case AR_OP_RELU6: return &ar_kernel_relu6;
  case AR_OP_RESHAPE: return &ar_kernel_reshape;
  case AR_OP_RESIZE_BILINEAR: return &ar_kernel_resize_bilinear;
  case AR_OP_PAD: return &ar_kernel_pad;
  case AR_OP_MEAN: return &ar_kernel_mean;
  case AR_OP_PRELU: return &ar_kernel_prelu;
  case AR_OP_HARD_SWISH: return &ar_kernel_hard_swish;
  case AR_OP_DENSIFY: return &ar_kernel_densify;
  case AR_OP_STRIDED_SLICE: return &ar_kernel_strided_slice;
  case AR_OP_SLICE: return &ar_kernel_slice;
  case AR_OP_TRANSPOSE: return &ar_kernel_transpose;
  case AR_OP_TILE: return &ar_kernel_tile;
  case AR_OP_BROADCAST_TO: return &ar_kernel_broadcast_to;
  case AR_OP_SPACE_TO_DEPTH: return &ar_kernel_space_to_depth;
  case AR_OP_PACK: return &ar_kernel_pack;
  case AR_OP_UNPACK: return &ar_kernel_unpack;
  case AR_OP_SPLIT: return &ar_kernel_split;
  case AR_OP_SPLIT_V: return &ar_kernel_split_v;
  case AR_OP_SQUEEZE: return &ar_kernel_squeeze;
  case AR_OP_EXPAND_DIMS: return &ar_kernel_expand_dims;
  case AR_OP_GATHER: return &ar_kernel_gather;
  case AR_OP_GATHER_ND: return &ar_kernel_gather_nd;
  case AR_OP_RESIZE_NEAREST_NEIGHBOR: return &ar_kernel_resize_nearest_neighbor;
  case AR_OP_TRANSPOSE_CONV: return &ar_kernel_transpose_conv;
  case AR_OP_BATCH_MATMUL: return &ar_kernel_batch_matmul;
  case AR_OP_DETECTION_POSTPROCESS: return &ar_kernel_detection_postprocess;
  case AR_OP_SUB: return &ar_kernel_sub;
  case AR_OP_DIV: return &ar_kernel_div;
  case AR_OP_FLOOR_DIV: return &ar_kernel_floor_div;
  case AR_OP_MAXIMUM: return &ar_kernel_maximum;
  case AR_OP_MINIMUM: return &ar_kernel_minimum;
  case AR_OP_SQUARED_DIFFERENCE: return &ar_kernel_squared_difference;
  case AR_OP_POW: return &ar_kernel_pow;
  case AR_OP_EQUAL: return &ar_kernel_equal;
  case AR_OP_NOT_EQUAL: return &ar_kernel_not_equal;
  case AR_OP_LESS: return &ar_kernel_less;
  case AR_OP_LESS_EQUAL: return &ar_kernel_less_equal;
  case AR_OP_GREATER: return &ar_kernel_greater;
  case AR_OP_GREATER_EQUAL: return &ar_kernel_greater_equal;
  case AR_OP_SELECT_V2: return &ar_kernel_select_v2;
  case AR_OP_ABS: return &ar_kernel_abs;
  case AR_OP_NEG: return &ar_kernel_neg;
  case AR_OP_SQRT: return &ar_kernel_sqrt;
  case AR_OP_RSQRT: return &ar_kernel_rsqrt;
  case AR_OP_EXP: return &ar_kernel_exp;
  case AR_OP_LOG: return &ar_kernel_log;
  case AR_OP_TANH: return &ar_kernel_tanh;
  case AR_OP_GELU: return &ar_kernel_gelu;
  case AR_OP_LEAKY_RELU: return &ar_kernel_leaky_relu;
  case AR_OP_ELU: return &ar_kernel_elu;
  case AR_OP_RELU_N1_TO_1: return &ar_kernel_relu_n1_to_1;
  case AR_OP_RELU_0_TO_1: return &ar_kernel_relu_0_to_1;
  case AR_OP_CAST: return &ar_kernel_cast;
  case AR_OP_SUM: return &ar_kernel_sum;
  case AR_OP_REDUCE_MAX: return &ar_kernel_reduce_max;
  case AR_OP_REDUCE_MIN: return &ar_kernel_reduce_min;
  case AR_OP_REDUCE_PROD: return &ar_kernel_reduce_prod;
  case AR_OP_ARG_MAX: return &ar_kernel_arg_max;
  case AR_OP_ARG_MIN: return &ar_kernel_arg_min;
  case AR_OP_SOFTMAX: return &ar_kernel_softmax;
  case AR_OP_SVDF: return &ar_kernel_svdf;
  case AR_OP_LSTM: return &ar_kernel_lstm;
  case AR_OP_RNN: return &ar_kernel_rnn;
  case AR_OP_UNIDIRECTIONAL_SEQUENCE_RNN: return &ar_kernel_unidirectional_sequence_rnn;
  case AR_OP_UNIDIRECTIONAL_SEQUENCE_LSTM: return &ar_kernel_unidirectional_sequence_lstm;
  case AR_OP_VAR_HANDLE: return &ar_kernel_var_handle;
  case AR_OP_READ_VARIABLE: return &ar_kernel_read_variable;
  case AR_OP_ASSIGN_VARIABLE: return &ar_kernel_assign_variable;
  case AR_OP_RFFT2D: return &ar_kernel_rfft2d;
  case AR_OP_COMPLEX_ABS: return &ar_kernel_complex_abs;
  case AR_OP_REAL: return &ar_kernel_real;
  case AR_OP_IMAG: return &ar_kernel_imag;
  case AR_OP_SIGNAL_WINDOW: return &ar_kernel_signal_window;
  case AR_OP_SIGNAL_FFT_AUTO_SCALE: return &ar_kernel_signal_fft_auto_scale;
  case AR_OP_SIGNAL_RFFT: return &ar_kernel_signal_rfft;
  case AR_OP_POSENET_DECODER: return &ar_kernel_posenet_decoder;
  case AR_OP_SIGNAL_ENERGY: return &ar_kernel_signal_energy;
  case AR_OP_SIGNAL_FILTER_BANK: return &ar_kernel_signal_filter_bank;
  case AR_OP_SIGNAL_FILTER_BANK_SQUARE_ROOT: return &ar_kernel_signal_filter_bank_square_root;
  case AR_OP_SIGNAL_FILTER_BANK_SPECTRAL_SUBTRACTION: return &ar_kernel_signal_filter_bank_spectral_subtraction;
  case AR_OP_SIGNAL_PCAN: return &ar_kernel_signal_pcan;
  case AR_OP_SIGNAL_FILTER_BANK_LOG: return &ar_kernel_signal_filter_bank_log;
  /* Run by the interpreter itself (child subgraphs, interp/ar_interp.c). */
  case AR_OP_WHILE: case AR_OP_IF: case AR_OP_CALL_ONCE: break;
  case AR_OP_LOG_SOFTMAX: return &ar_kernel_log_softmax;
  case AR_OP_L2_NORMALIZATION: return &ar_kernel_l2_normalization;
  /* issue 28: kernels/logical.c, math_ops.c, index_ops.c */
  case AR_OP_LOGICAL_AND: return &ar_kernel_logical_and;
  case AR_OP_LOGICAL_OR: return &ar_kernel_logical_or;
  case AR_OP_LOGICAL_NOT: return &ar_kernel_logical_not;
  case AR_OP_SELECT: return &ar_kernel_select;
  case AR_OP_SQUARE: return &ar_kernel_square;
  case AR_OP_SIN: return &ar_kernel_sin;
  case AR_OP_COS: return &ar_kernel_cos;
  case AR_OP_FLOOR: return &ar_kernel_floor;
  case AR_OP_CEIL: return &ar_kernel_ceil;
  case AR_OP_ROUND: return &ar_kernel_round;
  case AR_OP_ZEROS_LIKE: return &ar_kernel_zeros_like;
  case AR_OP_TOPK_V2: return &ar_kernel_topk_v2;
  case AR_OP_REVERSE_V2: return &ar_kernel_reverse_v2;
  case AR_OP_SHAPE: return &ar_kernel_shape;
  case AR_OP_FILL: return &ar_kernel_fill;
  case AR_OP_RANGE: return &ar_kernel_range;
  case AR_OP_CUMSUM: return &ar_kernel_cumsum;
  case AR_OP_ONE_HOT: return &ar_kernel_one_hot;
  case AR_OP_SPACE_TO_BATCH_ND: return &ar_kernel_space_to_batch_nd;
  case AR_OP_BATCH_TO_SPACE_ND: return &ar_kernel_batch_to_space_nd;
  case AR_OP_MIRROR_PAD: return &ar_kernel_mirror_pad;
  case AR_OP_EMBEDDING_LOOKUP: return &ar_kernel_embedding_lookup;
  case AR_OP_SEGMENT_SUM: return &ar_kernel_segment_sum;
  case AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS: return &ar_kernel_transpose_conv_bias;
  case AR_OP_INVALID: case AR_OP_COUNT: break;
  }
  return NULL;
}

/* Which kernels read fp16 weights as stored (ar_kernels.h): one case per kernel, calling the
 * kernel's own predicate (declared in ar_kernel_impl.h). */
bool ar_kernel_reads_f16(const ar_node_t *node, int32_t input) {
  if (!node || input < 0 || input >= node->n_inputs) return false;
  switch (node->op) {
  case AR_OP_CONV_2D: return ar__conv_2d_reads_f16(node, input);
  case AR_OP_FULLY_CONNECTED: return ar__fully_connected_reads_f16(node, input);
  case AR_OP_DEPTHWISE_CONV_2D: return ar__depthwise_reads_f16(node, input);
  default: return false;
  }
}

/* The op table's names for dtypes: lower case, as TFLite's documentation writes them. */
static const char *form_dtype_name(int dt) {
  switch (dt) {
  case AR_DTYPE_FLOAT32: return "float32";
  case AR_DTYPE_FLOAT16: return "float16";
  case AR_DTYPE_INT32: return "int32";
  case AR_DTYPE_UINT8: return "uint8";
  case AR_DTYPE_INT64: return "int64";
  case AR_DTYPE_STRING: return "string";
  case AR_DTYPE_BOOL: return "bool";
  case AR_DTYPE_INT16: return "int16";
  case AR_DTYPE_COMPLEX64: return "complex64";
  case AR_DTYPE_INT8: return "int8";
  case AR_DTYPE_FLOAT64: return "float64";
  case AR_DTYPE_RESOURCE: return "resource";
  case AR_DTYPE_UINT32: return "uint32";
  case AR_DTYPE_UINT16: return "uint16";
  case AR_DTYPE_INT4: return "int4";
  default: return "?";
  }
}

const char *ar_kernel_form_label(const ar_kernel_form_t *f, char *buf, size_t n) {
  if (!n) return buf;
  const char *in = f->in == AR_KF_SAME ? "none" : form_dtype_name(f->in);
  int at = snprintf(buf, n, "%s", in);
  if (f->w != AR_KF_SAME && at >= 0 && (size_t)at < n)
    at += snprintf(buf + at, n - (size_t)at, "+%sw", form_dtype_name(f->w));
  if (f->out != f->in && f->out != AR_KF_SAME && at >= 0 && (size_t)at < n)
    snprintf(buf + at, n - (size_t)at, "->%s", form_dtype_name(f->out));
  return buf;
}

const ar_kernel_form_t *ar_kernel_form_find(ar_op_t op, int version, int in, int w, int out) {
  const ar_kernel_t *k = ar_kernel_for(op);
  if (!k) return NULL;
  for (int32_t i = 0; i < k->support.n_forms; i++) {
    const ar_kernel_form_t *f = &k->support.forms[i];
    if (version < f->vmin || version > f->vmax || in != f->in || out != f->out) continue;
    if (f->w == AR_KF_SAME ? (w == AR_KF_SAME || w == in) : w == f->w) return f;
  }
  return NULL;
}

const ar_kernel_form_t *ar_kernel_node_form(const ar_node_t *node) {
  const ar_kernel_t *k = node ? ar_kernel_for(node->op) : NULL;
  if (!k) return NULL;
  int in = AR_KF_SAME, w = AR_KF_SAME, out = AR_KF_SAME;   /* ASSIGN_VARIABLE has no output */
  if (node->n_outputs > 0) {
    if (!node->outputs[0]) return NULL;
    out = (int)node->outputs[0]->dtype;
  }
  int8_t is = k->support.in_slot, ws = k->support.w_slot;
  if (is >= 0) {
    if (is >= node->n_inputs || !node->inputs[is]) return NULL;
    in = (int)node->inputs[is]->dtype;
  }
  if (ws >= 0 && ws < node->n_inputs && node->inputs[ws]) w = (int)node->inputs[ws]->dtype;
  return ar_kernel_form_find(node->op, node->version, in, w, out);
}
