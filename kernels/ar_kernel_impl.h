/* ar_kernel_impl.h - internal to the kernels layer: the kernel tables each kernels/<op>.c file
 * exports, so kernels/registry.c can map ar_op_t to them (ar_kernel_for). Not a public header:
 * everything above the kernels layer goes through ar_kernel_for(). Keep it a plain list of extern
 * declarations, one per kernel, grouped by the file that defines it. */
#ifndef AR_KERNEL_IMPL_H
#define AR_KERNEL_IMPL_H

#include "kernels/ar_kernels.h"

/* kernels/conv.c: TFLite CONV_2D (im2col + cblas_sgemm; 1x1 stride-1 straight to GEMM). */
extern const ar_kernel_t ar_kernel_conv_2d;
/* Its answer to ar_kernel_reads_f16: the filter and the bias of a float CONV_2D. */
bool ar__conv_2d_reads_f16(const ar_node_t *node, int32_t input);
/* kernels/depthwise.c: TFLite DEPTHWISE_CONV_2D (channel-innermost loops, 3x3/5x5 fast paths). */
extern const ar_kernel_t ar_kernel_depthwise_conv_2d;
/* Its answer to ar_kernel_reads_f16: the filter and the bias of a float DEPTHWISE_CONV_2D (the
 * AVX-512F path widens them per channel block, the others into scratch at each eval). */
bool ar__depthwise_reads_f16(const ar_node_t *node, int32_t input);
/* Its row-range entry for kernels/fused_ir.c: output rows [r0, r1) of N*OH of float `node`, with
 * input 0 read at `in` instead of node->inputs[0]->data (addressed as the whole input: row (b, iy)
 * at in + (b*H + iy)*W*C; only the rows those outputs read need to exist there), the same code
 * and tap order per output as its eval. `wide`: (KH*KW + 1) * C*M floats that ar__dw_widen filled
 * (fp16 weights on the paths that read fp32), unused otherwise. ar__dw_scratch_bytes: what its
 * prepare asks for without fusion. */
void ar__dw_rows(const ar_node_t *node, const float *in, const float *wide, int64_t r0, int64_t r1);
void ar__dw_widen(const ar_node_t *node, float *wide);
uint64_t ar__dw_scratch_bytes(const ar_node_t *node);
/* kernels/fused_ir.c: a DEPTHWISE_CONV_2D with node->fused (an expansion 1x1 CONV_2D, float,
 * stride 1): prepare (after the depthwise's own checks: scratch for the conv's bands) and eval. */
int ar__fused_ir_prepare(ar_node_t *node, char *msg, size_t msg_bytes);
void ar__fused_ir_eval(const ar_node_t *node);
/* kernels/qdepthwise.c: its uint8 / int8 form (dtype checks, then after depthwise.c's shape checks
 * the quantization checks, state = multipliers + repacked weights, scratch = one row of int32).
 * ar__qdw_set_isa: tests pick the loop (0 portable, 1 AVX2, 2 AVX-512 VNNI; -1 = automatic) and
 * get it back, or -1 when the CPU lacks it; with -1 returns the best available. */
int ar__qdw_check_io(const ar_node_t *node, char *msg, size_t msg_bytes);
int ar__qdw_prepare(ar_node_t *node, char *msg, size_t msg_bytes);
void ar__qdw_init(ar_node_t *node);
void ar__qdw_eval(const ar_node_t *node);
int ar__qdw_set_isa(int isa);
/* kernels/transpose_conv.c: MediaPipe custom op Convolution2DTransposeBias and TFLite builtin
 * TRANSPOSE_CONV (same scatter, TFLite's output_shape and padding rule). */
extern const ar_kernel_t ar_kernel_transpose_conv_bias;
extern const ar_kernel_t ar_kernel_transpose_conv;
/* kernels/batch_matmul.c: TFLite BATCH_MATMUL (cblas_sgemm per output matrix). */
extern const ar_kernel_t ar_kernel_batch_matmul;
/* kernels/fully_connected.c: TFLite FULLY_CONNECTED (cblas_sgemv / cblas_sgemm). */
extern const ar_kernel_t ar_kernel_fully_connected;
/* Its answer to ar_kernel_reads_f16: the weights and the bias of a float FULLY_CONNECTED. */
bool ar__fully_connected_reads_f16(const ar_node_t *node, int32_t input);

/* kernels/elementwise.c: TFLite ADD, MUL, PRELU (NumPy broadcasting), RELU, RELU6, LOGISTIC,
 * HARD_SWISH. */
extern const ar_kernel_t ar_kernel_add;
extern const ar_kernel_t ar_kernel_mul;
extern const ar_kernel_t ar_kernel_prelu;
extern const ar_kernel_t ar_kernel_relu;
extern const ar_kernel_t ar_kernel_relu6;
extern const ar_kernel_t ar_kernel_logistic;
extern const ar_kernel_t ar_kernel_hard_swish;
/* out[i] = table[in[i]] for n bytes (out == in allowed): the quantized RELU / RELU6 / LOGISTIC
 * tables, and any other kernel whose output byte is a function of its input byte.
 * ar__lut8_set_isa: tests pick the loop (0 portable, 1 AVX-512 VBMI; -1 = automatic), as
 * ar__qdw_set_isa. */
void ar__lut8(const uint8_t *table, const uint8_t *in, uint8_t *out, int64_t n);
/* ar__lut8 for an eval of `node`, in chunks of at least AR_LUT8_CHUNK_BYTES over its thread pool
 * (each byte is its own lookup, so the output is the same for every thread count). */
#define AR_LUT8_CHUNK_BYTES (64 * 1024)
void ar__lut8_node(const ar_node_t *node, const uint8_t *table, const uint8_t *in, uint8_t *out,
                   int64_t n);
int ar__lut8_set_isa(int isa);
/* kernels/binary.c: TFLite SUB, DIV, FLOOR_DIV, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, POW,
 * EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, SELECT_V2 (N-d broadcasting up to
 * rank 6, float32 / int32 / int64 / uint8 / int8 / bool as TFLite allows each), and the integer
 * forms of ADD and MUL, reached through ar__nb_prepare/init/eval from elementwise.c. */
extern const ar_kernel_t ar_kernel_sub;
extern const ar_kernel_t ar_kernel_div;
extern const ar_kernel_t ar_kernel_floor_div;
extern const ar_kernel_t ar_kernel_maximum;
extern const ar_kernel_t ar_kernel_minimum;
extern const ar_kernel_t ar_kernel_squared_difference;
extern const ar_kernel_t ar_kernel_pow;
extern const ar_kernel_t ar_kernel_equal;
extern const ar_kernel_t ar_kernel_not_equal;
extern const ar_kernel_t ar_kernel_less;
extern const ar_kernel_t ar_kernel_less_equal;
extern const ar_kernel_t ar_kernel_greater;
extern const ar_kernel_t ar_kernel_greater_equal;
extern const ar_kernel_t ar_kernel_select_v2;
int ar__nb_prepare(ar_node_t *node, char *msg, size_t msg_bytes);
void ar__nb_init(ar_node_t *node);
void ar__nb_eval(const ar_node_t *node);
/* The loop of the 8-bit ADD / SUB / MUL: tests pick it (0 portable, 1 AVX2, 2 AVX-512; -1 =
 * automatic), as ar__qdw_set_isa. */
int ar__q8_set_isa(int isa);
/* kernels/unary.c: TFLite ABS, NEG, SQRT, RSQRT, EXP, LOG, TANH, GELU, LEAKY_RELU, ELU,
 * RELU_N1_TO_1, RELU_0_TO_1, CAST. */
extern const ar_kernel_t ar_kernel_abs;
extern const ar_kernel_t ar_kernel_neg;
extern const ar_kernel_t ar_kernel_sqrt;
extern const ar_kernel_t ar_kernel_rsqrt;
extern const ar_kernel_t ar_kernel_exp;
extern const ar_kernel_t ar_kernel_log;
extern const ar_kernel_t ar_kernel_tanh;
extern const ar_kernel_t ar_kernel_gelu;
extern const ar_kernel_t ar_kernel_leaky_relu;
extern const ar_kernel_t ar_kernel_elu;
extern const ar_kernel_t ar_kernel_relu_n1_to_1;
extern const ar_kernel_t ar_kernel_relu_0_to_1;
extern const ar_kernel_t ar_kernel_cast;
/* kernels/softmax.c: TFLite SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION (over the last axis). */
extern const ar_kernel_t ar_kernel_softmax;
/* kernels/svdf.c: TFLite SVDF, float32, its state a variable tensor (input 4). */
extern const ar_kernel_t ar_kernel_svdf;
/* kernels/lstm.c: TFLite UNIDIRECTIONAL_SEQUENCE_LSTM and LSTM (kernels/lstm.h: layout, options,
 * the integer forms' hook). */
extern const ar_kernel_t ar_kernel_unidirectional_sequence_lstm;
extern const ar_kernel_t ar_kernel_lstm;
/* kernels/rnn.c: TFLite UNIDIRECTIONAL_SEQUENCE_RNN and RNN, float32 (hidden state a variable tensor). */
extern const ar_kernel_t ar_kernel_unidirectional_sequence_rnn;
extern const ar_kernel_t ar_kernel_rnn;
/* kernels/variable.c: TFLite VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE (resource variables). */
extern const ar_kernel_t ar_kernel_var_handle;
extern const ar_kernel_t ar_kernel_read_variable;
extern const ar_kernel_t ar_kernel_assign_variable;
extern const ar_kernel_t ar_kernel_log_softmax;
extern const ar_kernel_t ar_kernel_l2_normalization;
/* kernels/pool.c: TFLite MAX_POOL_2D, AVERAGE_POOL_2D (out-of-bounds taps ignored). */
extern const ar_kernel_t ar_kernel_max_pool_2d;
extern const ar_kernel_t ar_kernel_average_pool_2d;
/* kernels/resize.c: TFLite RESIZE_BILINEAR (align_corners, half_pixel_centers).
 * ar__resize_set_isa: tests pick the uint8 blend (0 portable, 1 AVX2+FMA; -1 = automatic), as
 * ar__qdw_set_isa. */
extern const ar_kernel_t ar_kernel_resize_bilinear;
int ar__resize_set_isa(int isa);
/* kernels/shape_ops.c: TFLite RESHAPE, PAD, CONCATENATION, DEPTH_TO_SPACE. */
extern const ar_kernel_t ar_kernel_reshape;
extern const ar_kernel_t ar_kernel_pad;
extern const ar_kernel_t ar_kernel_concatenation;
extern const ar_kernel_t ar_kernel_depth_to_space;
/* kernels/reduce.c: TFLite MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, ARG_MAX, ARG_MIN. */
extern const ar_kernel_t ar_kernel_mean;
/* Float sums over all H*W pixels of B NHWC images of C channels (MEAN over H, W; a global
 * AVERAGE_POOL_2D, pool.c): per channel, the pixels in blocks of AR_GSUM_BLOCK in order, each
 * block summed from 0 in pixel order, then the block sums added in block order (one block: the
 * plain sum in pixel order). The blocks are fixed, so the bits do not depend on the thread count;
 * they are shared out over node's pool. `partial`: ar__gsum_scratch_bytes of scratch (NULL when
 * that is 0). out[b*C + c] = the sum. */
#define AR_GSUM_BLOCK 1024
uint64_t ar__gsum_scratch_bytes(int64_t b, int64_t hw, int64_t c);
void ar__gsum(const ar_node_t *node, const float *in, int64_t b, int64_t hw, int64_t c, float *partial,
              float *out);
extern const ar_kernel_t ar_kernel_sum;
extern const ar_kernel_t ar_kernel_reduce_max;
extern const ar_kernel_t ar_kernel_reduce_min;
extern const ar_kernel_t ar_kernel_reduce_prod;
extern const ar_kernel_t ar_kernel_arg_max;
extern const ar_kernel_t ar_kernel_arg_min;
/* ar__argmax_set_isa: tests pick ARG_MAX / ARG_MIN's loop for 8-bit rows of up to 32 codes (0
 * portable, 1 AVX2; -1 = automatic), as ar__qdw_set_isa. */
int ar__argmax_set_isa(int isa);
/* kernels/convert.c: TFLite DEQUANTIZE (float16 / uint8 / int8 -> float32), QUANTIZE (float32 ->
 * uint8 / int8, 8-bit requantize), DENSIFY (sparse -> dense). */
extern const ar_kernel_t ar_kernel_dequantize;
extern const ar_kernel_t ar_kernel_quantize;
extern const ar_kernel_t ar_kernel_densify;
/* QUANTIZE float32 -> 8-bit's loop: tests pick it (0 portable, 1 AVX2; -1 = automatic), as
 * ar__qdw_set_isa. */
int ar__quantize_set_isa(int isa);

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

/* Issue 28's operators. kernels/logical.c: TFLite LOGICAL_AND, LOGICAL_OR (broadcasting),
 * LOGICAL_NOT, SELECT (v1). kernels/math_ops.c: SQUARE, SIN, COS, FLOOR, CEIL, ROUND, ZEROS_LIKE.
 * kernels/index_ops.c: TOPK_V2, REVERSE_V2, SHAPE, FILL, RANGE, CUMSUM, ONE_HOT. */
extern const ar_kernel_t ar_kernel_logical_and;
extern const ar_kernel_t ar_kernel_logical_or;
extern const ar_kernel_t ar_kernel_logical_not;
extern const ar_kernel_t ar_kernel_select;
extern const ar_kernel_t ar_kernel_square;
extern const ar_kernel_t ar_kernel_sin;
extern const ar_kernel_t ar_kernel_cos;
extern const ar_kernel_t ar_kernel_floor;
extern const ar_kernel_t ar_kernel_ceil;
extern const ar_kernel_t ar_kernel_round;
extern const ar_kernel_t ar_kernel_zeros_like;
extern const ar_kernel_t ar_kernel_topk_v2;
extern const ar_kernel_t ar_kernel_reverse_v2;
extern const ar_kernel_t ar_kernel_shape;
extern const ar_kernel_t ar_kernel_fill;
extern const ar_kernel_t ar_kernel_range;
extern const ar_kernel_t ar_kernel_cumsum;
extern const ar_kernel_t ar_kernel_one_hot;
/* kernels/space_ops.c: TFLite SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, MIRROR_PAD. */
extern const ar_kernel_t ar_kernel_space_to_batch_nd;
extern const ar_kernel_t ar_kernel_batch_to_space_nd;
extern const ar_kernel_t ar_kernel_mirror_pad;
/* kernels/segment_ops.c: TFLite EMBEDDING_LOOKUP, SEGMENT_SUM. */
extern const ar_kernel_t ar_kernel_embedding_lookup;
extern const ar_kernel_t ar_kernel_segment_sum;
/* kernels/qact.c: the uint8 / int8 LEAKY_RELU, HARD_SWISH, TANH, ELU, GELU, RELU_N1_TO_1,
 * RELU_0_TO_1 and int8 ABS, EXP, LOG, RSQRT, SQRT (a 256-byte table in state), the int16 LOGISTIC,
 * TANH, LEAKY_RELU, ABS, EXP, LOG, RSQRT, SQRT, reached from those kernels' prepare / init / eval
 * (unary.c, elementwise.c) when the input is not float32. */
int ar__qact_prepare(ar_node_t *node, char *msg, size_t msg_bytes);
void ar__qact_init(ar_node_t *node);
void ar__qact_eval(const ar_node_t *node);
/* kernels/qact.c: the uint8 / int8 PRELU (alpha broadcast against the input), from PRELU's kernel
 * (elementwise.c). */
int ar__qprelu_prepare(ar_node_t *node, char *msg, size_t msg_bytes);
void ar__qprelu_init(ar_node_t *node);
void ar__qprelu_eval(const ar_node_t *node);
/* kernels/audio.c: TFLite RFFT2D (float32 -> complex64), COMPLEX_ABS, REAL, IMAG. */
extern const ar_kernel_t ar_kernel_rfft2d;
extern const ar_kernel_t ar_kernel_complex_abs;
extern const ar_kernel_t ar_kernel_real;
extern const ar_kernel_t ar_kernel_imag;

/* kernels/signal.c: TFLite Micro's Signal custom ops (integer audio front end). */
extern const ar_kernel_t ar_kernel_signal_window;
extern const ar_kernel_t ar_kernel_signal_fft_auto_scale;
extern const ar_kernel_t ar_kernel_signal_rfft;
extern const ar_kernel_t ar_kernel_posenet_decoder;
extern const ar_kernel_t ar_kernel_signal_energy;
extern const ar_kernel_t ar_kernel_signal_filter_bank;
extern const ar_kernel_t ar_kernel_signal_filter_bank_square_root;
extern const ar_kernel_t ar_kernel_signal_filter_bank_spectral_subtraction;
extern const ar_kernel_t ar_kernel_signal_pcan;
extern const ar_kernel_t ar_kernel_signal_filter_bank_log;
/* The FilterBankLog segment table: lut[s] = round(65536 (log2(1 + s/128) - s/128)), s = 0..128,
 * lut[129] = 0 (130 entries; tests check it). */
void ar__signal_log_table(int32_t *lut);

#endif /* AR_KERNEL_IMPL_H */
