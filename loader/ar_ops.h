/* ar_ops.h - the operator vocabulary arenad understands.
 *
 * One X-macro lists every builtin operator the loader accepts: its TFLite BuiltinOperator code
 * (TFLite schema.fbs enum values) and the highest op version the kernels implement. The loader
 * rejects any other builtin code, any custom op other than the ones in AR_CUSTOM_OP_MAP, and any
 * version above the maximum, naming the op, version and operator index.
 *
 * The maximum is the highest version TFLite's op_version.cc gives the float32 / int32 / int64 /
 * bool forms a kernel implements (e.g. SUB 3 = broadcast above rank 4, 4 = int64; ADD 4 and
 * MUL 5 = int64; ABS 5 = int32); versions that only mark quantized forms pass the loader and are
 * refused by the kernel's dtype checks at prepare. Quantized forms raise it where the kernel has
 * them: CONV_2D 2 = hybrid (float input, int8 weights), 3 = int8, 4 = int16x8, 5 = hybrid with
 * per-channel weights; DEPTHWISE_CONV_2D 3 = int8, 4 = hybrid, 5 = int16x8, 6 = hybrid per-channel;
 * FULLY_CONNECTED 3 = hybrid, 4 = int8, 5 = keep_num_dims, 6 = no bias, 7 = int16x8, 8 = sparse
 * weights, 9 = hybrid with asymmetric input quantization (2, shuffled weights, is refused at
 * prepare). The int16x8 and hybrid forms: kernels/qwide.h. CAST 2 = uint32. LOGISTIC 3, TANH 3
 * (2 = int8), LEAKY_RELU 2 and SOFTMAX 3 = int16 (kernels/qact.c, softmax.c); EXP, LOG, SQRT 2 =
 * int8 / int16, RSQRT 2 = int8, 3 = int16 (qact.c); MAXIMUM / MINIMUM 4 = int16 (binary.c);
 * GELU 3 (the versions TFLite 2.19 registers; its uint8 / int8 forms are tables in qact.c); the
 * comparisons 2 = uint8 / int8 / int16 (binary.c).
 */
#ifndef AR_OPS_H
#define AR_OPS_H

/* XX(enum suffix, TFLite builtin code, max version supported) */
#define AR_BUILTIN_OP_MAP(XX)           \
  XX(ADD,                        0, 4)  \
  XX(AVERAGE_POOL_2D,            1, 2)  \
  XX(CONCATENATION,              2, 2)  \
  XX(CONV_2D,                    3, 5)  \
  XX(DEPTHWISE_CONV_2D,          4, 6)  \
  XX(DEPTH_TO_SPACE,             5, 2)  \
  XX(DEQUANTIZE,                 6, 4)  \
  XX(FULLY_CONNECTED,            9, 9)  \
  XX(L2_NORMALIZATION,          11, 1)  \
  XX(LOGISTIC,                  14, 3)  \
  XX(LSTM,                      16, 4)  \
  XX(MAX_POOL_2D,               17, 2)  \
  XX(MUL,                       18, 5)  \
  XX(RELU,                      19, 3)  \
  XX(RELU_N1_TO_1,              20, 1)  \
  XX(RELU6,                     21, 2)  \
  XX(RESHAPE,                   22, 1)  \
  XX(RESIZE_BILINEAR,           23, 3)  \
  XX(RNN,                       24, 3)  \
  XX(SOFTMAX,                   25, 3)  \
  XX(SPACE_TO_DEPTH,            26, 2)  \
  XX(SVDF,                      27, 4)  \
  XX(TANH,                      28, 3)  \
  XX(PAD,                       34, 2)  \
  XX(UNIDIRECTIONAL_SEQUENCE_RNN, 35, 3) \
  XX(GATHER,                    36, 7)  \
  XX(TRANSPOSE,                 39, 6)  \
  XX(MEAN,                      40, 3)  \
  XX(SUB,                       41, 4)  \
  XX(DIV,                       42, 2)  \
  XX(SQUEEZE,                   43, 2)  \
  XX(UNIDIRECTIONAL_SEQUENCE_LSTM, 44, 3) \
  XX(STRIDED_SLICE,             45, 8)  \
  XX(EXP,                       47, 2)  \
  XX(SPLIT,                     49, 4)  \
  XX(LOG_SOFTMAX,               50, 1)  \
  XX(CAST,                      53, 2)  \
  XX(PRELU,                     54, 1)  \
  XX(MAXIMUM,                   55, 4)  \
  XX(ARG_MAX,                   56, 2)  \
  XX(MINIMUM,                   57, 4)  \
  XX(LESS,                      58, 2)  \
  XX(NEG,                       59, 1)  \
  XX(GREATER,                   61, 2)  \
  XX(GREATER_EQUAL,             62, 2)  \
  XX(LESS_EQUAL,                63, 2)  \
  XX(SLICE,                     65, 6)  \
  XX(TRANSPOSE_CONV,            67, 5)  \
  XX(TILE,                      69, 3)  \
  XX(EXPAND_DIMS,               70, 1)  \
  XX(EQUAL,                     71, 2)  \
  XX(NOT_EQUAL,                 72, 2)  \
  XX(LOG,                       73, 2)  \
  XX(SUM,                       74, 1)  \
  XX(SQRT,                      75, 2)  \
  XX(RSQRT,                     76, 3)  \
  XX(POW,                       78, 1)  \
  XX(ARG_MIN,                   79, 1)  \
  XX(REDUCE_PROD,               81, 1)  \
  XX(REDUCE_MAX,                82, 1)  \
  XX(PACK,                      83, 4)  \
  XX(UNPACK,                    88, 4)  \
  XX(REDUCE_MIN,                89, 1)  \
  XX(FLOOR_DIV,                 90, 2)  \
  XX(RESIZE_NEAREST_NEIGHBOR,   97, 4)  \
  XX(LEAKY_RELU,                98, 2)  \
  XX(SQUARED_DIFFERENCE,        99, 1)  \
  XX(ABS,                      101, 5)  \
  XX(SPLIT_V,                  102, 2)  \
  XX(GATHER_ND,                107, 4)  \
  XX(ELU,                      111, 1)  \
  XX(QUANTIZE,                 114, 3)  \
  XX(HARD_SWISH,               117, 1)  \
  XX(IF,                       118, 1)  \
  XX(WHILE,                    119, 1)  \
  XX(SELECT_V2,                123, 1)  \
  XX(DENSIFY,                  124, 1)  \
  XX(BATCH_MATMUL,             126, 4)  \
  XX(CALL_ONCE,                129, 1)  \
  XX(BROADCAST_TO,             130, 3)  \
  XX(RFFT2D,                   131, 1)  \
  XX(IMAG,                     133, 1)  \
  XX(REAL,                     134, 1)  \
  XX(COMPLEX_ABS,              135, 1)  \
  XX(VAR_HANDLE,               142, 1)  \
  XX(READ_VARIABLE,            143, 1)  \
  XX(ASSIGN_VARIABLE,          144, 1)  \
  XX(GELU,                     150, 3)  \
  XX(RELU_0_TO_1,              152, 1)  \
  /* issue 28, kernels/logical.c, math_ops.c, index_ops.c */ \
  XX(FLOOR,                      8, 1)  \
  XX(TOPK_V2,                   48, 3)  \
  XX(SELECT,                    64, 3)  \
  XX(SIN,                       66, 1)  \
  XX(SHAPE,                     77, 1)  \
  XX(LOGICAL_OR,                84, 1)  \
  XX(ONE_HOT,                   85, 1)  \
  XX(LOGICAL_AND,               86, 1)  \
  XX(LOGICAL_NOT,               87, 1)  \
  XX(SQUARE,                    92, 1)  \
  XX(ZEROS_LIKE,                93, 1)  \
  XX(FILL,                      94, 5)  \
  XX(RANGE,                     96, 2)  \
  XX(CEIL,                     104, 1)  \
  XX(REVERSE_V2,               105, 3)  \
  XX(COS,                      108, 1)  \
  XX(ROUND,                    116, 1)  \
  XX(CUMSUM,                   128, 1)  \
  XX(BATCH_TO_SPACE_ND,         37, 4)  \
  XX(SPACE_TO_BATCH_ND,         38, 4)  \
  XX(MIRROR_PAD,               100, 3)  \
  XX(EMBEDDING_LOOKUP,           7, 3)  \
  XX(SEGMENT_SUM,              125, 1)

/* Custom operators: XX(enum suffix, custom_code string, max version). MediaPipe's transposed
 * convolution carries TfLiteTransposeConvParams {padding, stride_width, stride_height} as raw
 * little-endian int32 custom options; TFLite's SSD post-process a FlexBuffers map; TFLite Micro's
 * Signal ops (kernels/signal.c) FlexBuffers maps read by their kernels. */
#define AR_CUSTOM_OP_MAP(XX) \
  XX(CONVOLUTION_2D_TRANSPOSE_BIAS, "Convolution2DTransposeBias", 1) \
  XX(DETECTION_POSTPROCESS, "TFLite_Detection_PostProcess", 1) \
  XX(SIGNAL_WINDOW, "SignalWindow", 1) \
  XX(SIGNAL_FFT_AUTO_SCALE, "SignalFftAutoScale", 1) \
  XX(SIGNAL_RFFT, "SignalRfft", 1) \
  XX(SIGNAL_ENERGY, "SignalEnergy", 1) \
  XX(SIGNAL_FILTER_BANK, "SignalFilterBank", 1) \
  XX(SIGNAL_FILTER_BANK_SQUARE_ROOT, "SignalFilterBankSquareRoot", 1) \
  XX(SIGNAL_FILTER_BANK_SPECTRAL_SUBTRACTION, "SignalFilterBankSpectralSubtraction", 1) \
  XX(SIGNAL_PCAN, "SignalPCAN", 1) \
  XX(SIGNAL_FILTER_BANK_LOG, "SignalFilterBankLog", 1) \
  XX(POSENET_DECODER, "PosenetDecoderOp", 1)

/* TFLite's BuiltinOperator code for CUSTOM. */
#define AR_TFLITE_BUILTIN_CUSTOM 32

typedef enum ar_op {
  AR_OP_INVALID = 0,
#define AR__OP_ENUM(name, code, maxv) AR_OP_##name,
  AR_BUILTIN_OP_MAP(AR__OP_ENUM)
  AR_CUSTOM_OP_MAP(AR__OP_ENUM)
#undef AR__OP_ENUM
  AR_OP_COUNT
} ar_op_t;

/* Name of an op ("CONV_2D", "Convolution2DTransposeBias"); "INVALID" for others. */
const char *ar_op_name(ar_op_t op);

/* Highest version of `op` the kernels implement; 0 for AR_OP_INVALID. */
int ar_op_max_version(ar_op_t op);

/* Map a TFLite builtin code to ar_op_t; AR_OP_INVALID when arenad does not know the code. */
ar_op_t ar_op_from_builtin(int builtin_code);

/* Map a custom_code string of `len` bytes (not NUL-terminated) to ar_op_t; AR_OP_INVALID if unknown. */
ar_op_t ar_op_from_custom(const char *custom_code, size_t len);

/* TFLite's BuiltinOperator name for a builtin code it defines even if arenad has no kernel
 * ("SOFTMAX" for 25), for error messages; NULL when unknown to this table. */
const char *ar_tflite_builtin_name(int builtin_code);

#endif /* AR_OPS_H */
