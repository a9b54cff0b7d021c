/* ar_kernel_impl.h - internal to the kernels layer: the kernel tables each kernels/<op>.c file
 * exports, so kernels/registry.c can map ar_op_t to them (ar_kernel_for). Not a public header:
 * everything above the kernels layer goes through ar_kernel_for(). Keep it a plain list of extern
 * declarations, one per kernel, grouped by the file that defines it. */
#ifndef AR_KERNEL_IMPL_H
#define AR_KERNEL_IMPL_H

#include "kernels/ar_kernels.h"

/* kernels/conv.c: TFLite CONV_2D (im2col + cblas_sgemm; 1x1 stride-1 straight to GEMM). */
extern const ar_kernel_t ar_kernel_conv_2d;
/* kernels/depthwise.c: TFLite DEPTHWISE_CONV_2D (channel-innermost loops, 3x3/5x5 fast paths). */
extern const ar_kernel_t ar_kernel_depthwise_conv_2d;
/* kernels/transpose_conv.c: MediaPipe custom op Convolution2DTransposeBias and TFLite builtin
 * TRANSPOSE_CONV (same scatter, TFLite's output_shape and padding rule). */
extern const ar_kernel_t ar_kernel_transpose_conv_bias;
extern const ar_kernel_t ar_kernel_transpose_conv;
/* kernels/batch_matmul.c: TFLite BATCH_MATMUL (cblas_sgemm per output matrix). */
extern const ar_kernel_t ar_kernel_batch_matmul;
/* kernels/fully_connected.c: TFLite FULLY_CONNECTED (cblas_sgemv / cblas_sgemm). */
extern const ar_kernel_t ar_kernel_fully_connected;

/* kernels/elementwise.c: TFLite ADD, MUL, PRELU (NumPy broadcasting), RELU, RELU6, LOGISTIC,
 * HARD_SWISH. */
extern const ar_kernel_t ar_kernel_add;
extern const ar_kernel_t ar_kernel_mul;
extern const ar_kernel_t ar_kernel_prelu;
extern const ar_kernel_t ar_kernel_relu;
extern const ar_kernel_t ar_kernel_relu6;
extern const ar_kernel_t ar_kernel_logistic;
extern const ar_kernel_t ar_kernel_hard_swish;
/* kernels/pool.c: TFLite MAX_POOL_2D, AVERAGE_POOL_2D (out-of-bounds taps ignored). */
extern const ar_kernel_t ar_kernel_max_pool_2d;
extern const ar_kernel_t ar_kernel_average_pool_2d;
/* kernels/resize.c: TFLite RESIZE_BILINEAR (align_corners, half_pixel_centers). */
extern const ar_kernel_t ar_kernel_resize_bilinear;
/* kernels/shape_ops.c: TFLite RESHAPE, PAD, CONCATENATION, DEPTH_TO_SPACE. */
extern const ar_kernel_t ar_kernel_reshape;
extern const ar_kernel_t ar_kernel_pad;
extern const ar_kernel_t ar_kernel_concatenation;
extern const ar_kernel_t ar_kernel_depth_to_space;
/* kernels/reduce.c: TFLite MEAN. */
extern const ar_kernel_t ar_kernel_mean;
/* kernels/convert.c: TFLite DEQUANTIZE (float16 -> float32), DENSIFY (sparse -> dense). */
extern const ar_kernel_t ar_kernel_dequantize;
extern const ar_kernel_t ar_kernel_densify;

/* kernels/slice.c: TFLite STRIDED_SLICE, SLICE, TRANSPOSE, TILE, BROADCAST_TO, SPACE_TO_DEPTH
 * (one strided copy each, kernels/strided.h). */
extern const ar_kernel_t ar_kernel_strided_slice;
extern const ar_kernel_t ar_kernel_slice;
extern const ar_kernel_t ar_kernel_transpose;
extern const ar_kernel_t ar_kernel_tile;
extern const ar_kernel_t ar_kernel_broadcast_to;
extern const ar_kernel_t ar_kernel_space_to_depth;
/* kernels/pack.c: TFLite PACK, UNPACK, SPLIT, SPLIT_V, SQUEEZE, EXPAND_DIMS. */
extern const ar_kernel_t ar_kernel_pack;
extern const ar_kernel_t ar_kernel_unpack;
extern const ar_kernel_t ar_kernel_split;
extern const ar_kernel_t ar_kernel_split_v;
extern const ar_kernel_t ar_kernel_squeeze;
extern const ar_kernel_t ar_kernel_expand_dims;

/* kernels/gather.c: TFLite GATHER (axis, batch_dims), GATHER_ND. */
extern const ar_kernel_t ar_kernel_gather;
extern const ar_kernel_t ar_kernel_gather_nd;
/* kernels/resize.c (with RESIZE_BILINEAR): TFLite RESIZE_NEAREST_NEIGHBOR. */
extern const ar_kernel_t ar_kernel_resize_nearest_neighbor;

/* kernels/detection_postprocess.c: TFLite custom op TFLite_Detection_PostProcess (SSD decode +
 * fast or regular NMS). */
extern const ar_kernel_t ar_kernel_detection_postprocess;

#endif /* AR_KERNEL_IMPL_H */
