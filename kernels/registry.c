/* registry.c - ar_kernel_for(): the one map from ar_op_t (loader/ar_ops.h) to the kernel that
 * implements it. A switch rather than a table indexed by op so that adding an op to the X-macro
 * without a kernel shows up as NULL (the interpreter reports it at prepare), never as a wrong entry. */
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
  case AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS: return &ar_kernel_transpose_conv_bias;
  case AR_OP_INVALID: case AR_OP_COUNT: break;
  }
  return NULL;
}
