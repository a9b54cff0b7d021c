/* ar_model.h - a verified, read-only view of a TensorFlow Lite model file.
 *
 * The loader copies the .tflite file into anonymous memory it owns (read(2) with a size check, then
 * mprotect read-only: the model never reads the file again, so a file rewritten or truncated after
 * the load changes nothing), verifies the whole flatbuffer in that copy before anything reads it (every offset, vtable, vector and string inside the file, with checked 64-bit
 * arithmetic; nesting and counts bounded), then decodes it into the plain structs below. Constant
 * tensor data is not copied again: ar_tensor.data points into the copy. Everything else (names, index
 * vectors, shapes, decoded builtin options, the ar_model itself) lives in an arena of a few large
 * heap chunks owned by the ar_model and released together by ar_model_free.
 *
 * Field order and meaning follow TFLite's public schema (schema.fbs, version 3): Model,
 * OperatorCode (builtin code = max(deprecated_builtin_code, builtin_code)), SubGraph, Tensor
 * (with quantization, sparsity, shape_signature, is_variable), Operator (builtin_options union,
 * custom_options), Buffer (incl. the 64-bit offset/size form for files > 2 GB), Metadata,
 * SignatureDef.
 *
 * Semantic checks done at load (each failure names the tensor/operator index and what is wrong):
 * indices in range, dims >= 0, byte sizes computed with overflow checks, a constant's buffer size
 * equals its tensor's byte size (dense) or holds the stored values (sparse), every operator input
 * is a constant, graph input, variable or output of an earlier operator (stored order is the
 * execution order), graph inputs/outputs valid, every op known (ar_ops.h) at a supported version.
 *
 * Memory layout of a loaded model:
 *
 *   file copy (anonymous, PROT_READ)             ar_model heap block
 *   +------------------------------------+       +----------------------------------------+
 *   | flatbuffer: vtables, tables,       |<------| ar_tensor.data   (constants, in place) |
 *   | buffers (constant weights)         |       | ar_subgraph[], ar_tensor[], ar_operator|
 *   +------------------------------------+       | names (NUL-terminated copies), options |
 *                                                +----------------------------------------+
 */
#ifndef AR_MODEL_H
#define AR_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loader/ar_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AR_MAX_RANK 8          /* largest tensor rank accepted */

/* TFLite TensorType values (schema.fbs). */
typedef enum ar_dtype {
  AR_DTYPE_FLOAT32 = 0, AR_DTYPE_FLOAT16 = 1, AR_DTYPE_INT32 = 2, AR_DTYPE_UINT8 = 3,
  AR_DTYPE_INT64 = 4, AR_DTYPE_STRING = 5, AR_DTYPE_BOOL = 6, AR_DTYPE_INT16 = 7,
  AR_DTYPE_COMPLEX64 = 8, AR_DTYPE_INT8 = 9, AR_DTYPE_FLOAT64 = 10, AR_DTYPE_COMPLEX128 = 11,
  AR_DTYPE_UINT64 = 12, AR_DTYPE_RESOURCE = 13, AR_DTYPE_VARIANT = 14, AR_DTYPE_UINT32 = 15,
  AR_DTYPE_UINT16 = 16, AR_DTYPE_INT4 = 17,
} ar_dtype_t;

/* Bytes per element of a dtype; 0 for dtypes arenad cannot size (STRING, RESOURCE, VARIANT, INT4). */
size_t ar_dtype_size(ar_dtype_t dtype);
/* "FLOAT32", "FLOAT16", ...; "UNKNOWN" otherwise. */
const char *ar_dtype_name(ar_dtype_t dtype);

/* TFLite Padding enum. */
typedef enum { AR_PADDING_SAME = 0, AR_PADDING_VALID = 1 } ar_padding_t;

/* TFLite ActivationFunctionType enum. */
typedef enum {
  AR_ACT_NONE = 0, AR_ACT_RELU = 1, AR_ACT_RELU_N1_TO_1 = 2, AR_ACT_RELU6 = 3,
  AR_ACT_TANH = 4, AR_ACT_SIGN_BIT = 5,
} ar_activation_t;

/* ---- Builtin options, decoded into typed structs (defaults as in schema.fbs). ---- */
typedef struct { ar_padding_t padding; int32_t stride_w, stride_h; ar_activation_t activation;
                 int32_t dilation_w, dilation_h; } ar_conv2d_options_t;
typedef struct { ar_padding_t padding; int32_t stride_w, stride_h; int32_t depth_multiplier;
                 ar_activation_t activation; int32_t dilation_w, dilation_h; } ar_depthwise_options_t;
typedef struct { ar_padding_t padding; int32_t stride_w, stride_h; int32_t filter_w, filter_h;
                 ar_activation_t activation; } ar_pool2d_options_t;
typedef struct { ar_activation_t activation; int32_t weights_format; bool keep_num_dims;
                 bool asymmetric_quantize_inputs; } ar_fully_connected_options_t;
typedef struct { ar_activation_t activation;
                 bool pot_scale_int16; /* ADD, SUB: the int16 power-of-two path (absent options: false) */
               } ar_elementwise_options_t;   /* ADD, MUL, SUB, DIV,
                                                                           L2_NORMALIZATION */
typedef struct { int32_t axis; ar_activation_t activation; } ar_concatenation_options_t;
typedef struct { int32_t rank; int32_t new_shape[AR_MAX_RANK]; bool has_new_shape; } ar_reshape_options_t;
typedef struct { bool align_corners, half_pixel_centers; } ar_resize_bilinear_options_t;
typedef struct { bool keep_dims; } ar_reducer_options_t;   /* MEAN, SUM, REDUCE_MAX/MIN/PROD */
typedef struct { float beta; } ar_softmax_options_t;                       /* SOFTMAX */
typedef struct { float alpha; } ar_leaky_relu_options_t;                   /* LEAKY_RELU */
typedef struct { bool approximate; } ar_gelu_options_t;                    /* GELU */
typedef struct { ar_dtype_t output_type; } ar_arg_options_t;              /* ARG_MAX, ARG_MIN */
typedef struct { ar_dtype_t in_type, out_type; bool present; } ar_cast_options_t;  /* CAST */
typedef struct { int32_t block_size; } ar_depth_to_space_options_t;
/* MediaPipe Convolution2DTransposeBias (TfLiteTransposeConvParams in custom_options; activation
 * always NONE) and builtin TRANSPOSE_CONV (TransposeConvOptions; activation from version 4). */
typedef struct { ar_padding_t padding; int32_t stride_w, stride_h; ar_activation_t activation; }
  ar_transpose_conv_options_t;
/* STRIDED_SLICE: bit i of a mask refers to entry i of begin/end/strides; `offset` makes end an
 * offset from begin. */
typedef struct { int32_t begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask;
                 bool offset; } ar_strided_slice_options_t;
typedef struct { int32_t axis, batch_dims; } ar_gather_options_t;
typedef struct { int32_t num_splits; } ar_split_options_t;          /* SPLIT, SPLIT_V */
typedef struct { int32_t count, axis; } ar_pack_options_t;          /* PACK values_count, UNPACK num */
typedef struct { int32_t n_dims; int32_t dims[AR_MAX_RANK]; } ar_squeeze_options_t;
/* BATCH_MATMUL: asymmetric_quantize_inputs matters to the hybrid form (float32 lhs, int8 rhs) only. */
typedef struct { bool adj_x, adj_y, asymmetric_quantize_inputs; } ar_batch_matmul_options_t;
/* SVDF (SVDFOptions): rank (>= 1, checked at load), fused activation. */
typedef struct { int32_t rank; ar_activation_t activation; bool asymmetric_quantize_inputs; } ar_svdf_options_t;
/* LSTM (LSTMOptions) and UNIDIRECTIONAL_SEQUENCE_LSTM (UnidirectionalSequenceLSTMOptions):
 * the activation of the cell state on its way to the output (TFLite applies it to the cell and
 * uses it for the cell gate too), cell_clip and proj_clip (0 = no clipping; negative or not
 * finite refused at load), kernel_type (LSTM only: 0 FULL, 1 BASIC), time_major (the sequence op
 * only; schema default false = batch-major [batch, time, input]), asymmetric_quantize_inputs
 * (hybrid forms), diagonal_recurrent_tensors (sequence op only). kernels/lstm.h reads them. */
typedef struct { ar_activation_t activation; float cell_clip, proj_clip; int32_t kernel_type;
                 bool time_major, asymmetric_quantize_inputs, diagonal_recurrent_tensors; } ar_lstm_options_t;
/* RNN (RNNOptions) and UNIDIRECTIONAL_SEQUENCE_RNN (SequenceRNNOptions): fused activation,
 * time_major (the sequence op only; schema default false = [batch, time, input]). kernels/rnn.c. */
typedef struct { ar_activation_t activation; bool time_major, asymmetric_quantize_inputs; } ar_rnn_options_t;
/* Control flow (issue 27): subgraph indices, each checked at load to be in range, to have the
 * input/output counts the operator needs, and not to lead back to a subgraph that calls it (no
 * recursion, direct or through other subgraphs). */
typedef struct { int32_t cond_subgraph, body_subgraph; } ar_while_options_t;   /* WHILE */
typedef struct { int32_t then_subgraph, else_subgraph; } ar_if_options_t;      /* IF */
typedef struct { int32_t init_subgraph; } ar_call_once_options_t;              /* CALL_ONCE */
/* VAR_HANDLE: the resource variable's key (NUL-terminated copies, "" when absent). Variables
 * with the same (container, shared_name) are one variable across every subgraph. */
typedef struct { const char *container, *shared_name; } ar_var_handle_options_t;
/* TFLite_Detection_PostProcess (FlexBuffers custom options; defaults: detections_per_class 100,
 * use_regular_nms false). */
typedef struct {
  int32_t max_detections, max_classes_per_detection, detections_per_class, num_classes;
  bool use_regular_nms;
  float nms_score_threshold, nms_iou_threshold;
  float y_scale, x_scale, h_scale, w_scale;
} ar_detection_postprocess_options_t;

/* Issue 28: SHAPE (out_type; present = the file has a ShapeOptions table), CUMSUM, ONE_HOT (axis,
 * default -1 = last). */
typedef struct { ar_dtype_t out_type; bool present; } ar_shape_options_t;
typedef struct { bool exclusive, reverse; } ar_cumsum_options_t;
typedef struct { int32_t axis; } ar_one_hot_options_t;
/* MIRROR_PAD: MirrorPadOptions.mode REFLECT (0, default) or SYMMETRIC (1). */
typedef struct { bool symmetric; } ar_mirror_pad_options_t;

typedef union ar_options {
  ar_conv2d_options_t conv2d;
  ar_depthwise_options_t depthwise;
  ar_pool2d_options_t pool2d;
  ar_fully_connected_options_t fully_connected;
  ar_elementwise_options_t elementwise;
  ar_concatenation_options_t concatenation;
  ar_reshape_options_t reshape;
  ar_resize_bilinear_options_t resize_bilinear;
  ar_reducer_options_t reducer;
  ar_softmax_options_t softmax;
  ar_leaky_relu_options_t leaky_relu;
  ar_gelu_options_t gelu;
  ar_arg_options_t arg;
  ar_cast_options_t cast;
  ar_depth_to_space_options_t depth_to_space;
  ar_transpose_conv_options_t transpose_conv;   /* also builtin TRANSPOSE_CONV */
  ar_strided_slice_options_t strided_slice;
  ar_gather_options_t gather;
  ar_split_options_t split;
  ar_pack_options_t pack;                       /* PACK and UNPACK */
  ar_squeeze_options_t squeeze;
  ar_resize_bilinear_options_t resize_nearest;  /* RESIZE_NEAREST_NEIGHBOR: same two flags */
  ar_depth_to_space_options_t space_to_depth;   /* SPACE_TO_DEPTH: block_size */
  ar_batch_matmul_options_t batch_matmul;
  ar_svdf_options_t svdf;
  ar_lstm_options_t lstm;                       /* LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM */
  ar_rnn_options_t rnn;                         /* RNN and UNIDIRECTIONAL_SEQUENCE_RNN */
  ar_while_options_t while_;
  ar_if_options_t if_;
  ar_call_once_options_t call_once;
  ar_var_handle_options_t var_handle;
  ar_detection_postprocess_options_t detection_postprocess;
  ar_shape_options_t shape;
  ar_cumsum_options_t cumsum;
  ar_one_hot_options_t one_hot;
  ar_mirror_pad_options_t mirror_pad;
} ar_options_t;

/* ---- Sparsity (TFLite SparsityParameters, for DENSIFY). ---- */
typedef enum { AR_DIM_DENSE = 0, AR_DIM_SPARSE_CSR = 1 } ar_dim_format_t;
typedef enum { AR_IDX_NONE = 0, AR_IDX_INT32 = 1, AR_IDX_UINT16 = 2, AR_IDX_UINT8 = 3 } ar_index_type_t;
typedef struct {
  ar_index_type_t type;   /* element type of the vector */
  uint32_t length;        /* number of elements */
  const void *data;       /* little-endian elements, points into the file copy */
} ar_index_vector_t;
typedef struct {
  ar_dim_format_t format;
  int32_t dense_size;          /* DENSE dims */
  ar_index_vector_t array_segments, array_indices;   /* SPARSE_CSR dims */
} ar_dim_metadata_t;
typedef struct {
  int32_t n_traversal_order; int32_t traversal_order[2 * AR_MAX_RANK];
  int32_t n_block_map;       int32_t block_map[AR_MAX_RANK];
  int32_t n_dim_metadata;    ar_dim_metadata_t dim_metadata[2 * AR_MAX_RANK];
} ar_sparsity_t;

/* ---- Quantization (TFLite QuantizationParameters, affine: real = scale * (q - zero_point)). ---- */
typedef struct ar_quant {
  int32_t n;                   /* number of (scale, zero_point) pairs: 1 = per-tensor, else per-axis
                                * with n == dims[quantized_dimension] */
  int32_t quantized_dimension; /* the axis of per-axis parameters, as stored; a 1-D tensor with
                                * n == dims[0] (a per-channel bias) is per-element whatever axis it
                                * claims (TFLite Micro accepts its person detector's 3) */
  const float *scale;          /* n scales, each finite and > 0 (checked at load) */
  const int64_t *zero_point;   /* n zero points (0 when the file stores none), each within the
                                * tensor's integer type range (checked at load) */
} ar_quant_t;

/* ---- Tensors, operators, subgraphs. ---- */
typedef struct ar_tensor {
  const char *name;            /* NUL-terminated copy ("" if absent) */
  ar_dtype_t dtype;
  int32_t rank;
  int32_t dims[AR_MAX_RANK];   /* shape, NHWC for images; all >= 0 */
  bool has_shape_signature;
  int32_t shape_signature[AR_MAX_RANK];  /* -1 marks a dynamic dim */
  uint32_t buffer;             /* index into the model's buffers; 0 = no data */
  const uint8_t *data;         /* constant data inside the file copy, or NULL */
  uint64_t data_bytes;         /* bytes of constant data (0 if not constant) */
  uint64_t bytes;              /* dense byte size = product(dims) * ar_dtype_size(dtype) */
  bool is_variable;
  bool has_quantization;       /* scale/zero_point present */
  float scale;                 /* first scale (per-tensor quantization), 0 if none */
  int64_t zero_point;          /* first zero point */
  const ar_quant_t *quant;     /* all quantization parameters (NULL when none: no scale stored) */
  const ar_sparsity_t *sparsity;  /* NULL unless the constant is stored sparse */
} ar_tensor_t;

typedef struct ar_operator {
  uint32_t opcode_index;
  ar_op_t op;                  /* resolved builtin/custom op */
  int32_t version;
  int32_t n_inputs, n_outputs, n_intermediates;   /* any count the file holds: no fixed limit, but
                                * the index entries of all operators of the model together must
                                * fit in the file (4 bytes each), so operators sharing one index
                                * vector cannot make the load copy more than the file describes */
  const int32_t *inputs;       /* tensor indices; -1 = optional input omitted */
  const int32_t *outputs;
  const int32_t *intermediates;
  ar_options_t options;        /* the member matching `op` is valid; zeroed for option-less ops */
  const uint8_t *custom_options;  /* into the file copy, or NULL */
  uint32_t custom_options_bytes;
} ar_operator_t;

typedef struct ar_subgraph {
  const char *name;
  uint32_t n_tensors, n_operators, n_inputs, n_outputs;
  ar_tensor_t *tensors;
  ar_operator_t *operators;    /* execution order = stored order */
  const int32_t *inputs;       /* graph input tensor indices */
  const int32_t *outputs;      /* graph output tensor indices */
} ar_subgraph_t;

typedef struct ar_opcode {
  int32_t builtin_code;        /* max(deprecated_builtin_code, builtin_code) */
  const char *custom_code;     /* NUL-terminated copy, or NULL */
  int32_t version;
  ar_op_t op;
} ar_opcode_t;

typedef struct ar_metadata { const char *name; uint32_t buffer; } ar_metadata_t;

typedef struct ar_model {
  const uint8_t *file;         /* the read-only copy of the file (or the caller's buffer) */
  uint64_t file_bytes;
  uint32_t schema_version;
  const char *description;
  uint32_t n_opcodes, n_subgraphs, n_buffers, n_metadata, n_signature_defs;
  ar_opcode_t *opcodes;
  ar_subgraph_t *subgraphs;    /* subgraphs[0] is the main graph */
  ar_metadata_t *metadata;
  uint64_t constant_bytes;     /* bytes of distinct non-empty buffers referenced by tensors */
  uint8_t sha256[32];          /* of the whole file, as copied (the bytes the model serves) */
  /* private */
  void *priv;
} ar_model_t;

/* Load and verify the model file at `path`. On success *out owns a private copy of the file and
 * all decoded data; free with ar_model_free. Errors: AR_ENOENT / AR_EIO (open, stat, read, the
 * file changed size while it was read), AR_EMODEL (flatbuffer or semantic check failed; a string
 * field - tensor, subgraph, signature or metadata name, description, custom op code - that is
 * not UTF-8 is one, named with the file offset of its first bad byte),
 * AR_EUNSUPPORTED (unknown op, custom op or version), AR_EOVERFLOW (sizes), AR_ENOMEM.
 * AR_EUNSUPPORTED comes after the whole model is verified, with every operator that cannot run in
 * one message (ar_unsupported_format). `msg` (msg_bytes, may be NULL) receives e.g.
 * "operator 12 (CONV_2D): input 1 is tensor 900, but the subgraph has 544 tensors". */
int ar_model_load(const char *path, ar_model_t **out, char *msg, size_t msg_bytes);

/* Same as ar_model_load on an open file descriptor (not closed; read from its current offset,
 * which must be 0): fstat first, then the file is refused with AR_E2BIG when it is larger than
 * `max_bytes` (0 = no limit) before anything is read, else copied into memory the model owns (a
 * short or long read means the file changed under the load: AR_EIO). The first 8 bytes are read
 * and checked alone ("TFL3" at byte 4, a root offset inside the file): a file that is not a model
 * is refused with AR_EMODEL after that one small read, whatever its size. Messages never contain the
 * path nor bytes of a file that is not a TFLite model. */
int ar_model_load_fd(int fd, uint64_t max_bytes, ar_model_t **out, char *msg, size_t msg_bytes);

/* Same as ar_model_load on `bytes` bytes at `data`; nothing is copied: the caller keeps `data`
 * alive and unchanged until ar_model_free. Constant data must be aligned in memory to its element
 * size (true for a malloc'd copy of a TFLite file, whose buffers are 16-byte aligned), else
 * AR_EMODEL. Used by tests and the fuzzer. */
int ar_model_load_buffer(const void *data, size_t bytes, ar_model_t **out, char *msg, size_t msg_bytes);

/* Same as ar_model_load / ar_model_load_buffer, but operators arenad cannot run (unknown builtin
 * or custom op, version above ar_op_max_version) do not refuse the model: they are kept with
 * op = AR_OP_INVALID, their tensors and custom options decoded, no builtin options. Every other
 * check is the same. For `arenactl inspect` (describe what cannot run) and for error lists that
 * also need the interpreter's view (ar_interp_unsupported). */
int ar_model_load_describe(const char *path, ar_model_t **out, char *msg, size_t msg_bytes);
int ar_model_load_buffer_describe(const void *data, size_t bytes, ar_model_t **out, char *msg,
                                  size_t msg_bytes);

/* One operator arenad cannot run, for error lists. */
typedef struct ar_unsupported {
  int32_t op_index;    /* operator index in the execution plan of its subgraph */
  int32_t subgraph;    /* the subgraph holding it (0: the main graph) */
  int32_t version;     /* the operator code's version */
  char op[64];         /* TFLite builtin name ("STRIDED_SLICE", "BUILTIN_400") or the custom code
                        * ("TransformLandmarks") */
  char option[160];    /* what cannot run: "unknown custom op", "no kernel for this op", "version 3
                        * is above the highest supported version 1", or a kernel's reason (e.g.
                        * "ellipsis_mask is not supported") */
} ar_unsupported_t;

/* The operators of every subgraph kept as AR_OP_INVALID (by ar_model_load_describe), in order
 * (subgraph 0 first): fills
 * at most `max` entries of `list` (may be NULL with max 0), writes how many to *n_out, returns the
 * total count. */
int32_t ar_model_unsupported(const ar_model_t *m, ar_unsupported_t *list, int32_t max, int32_t *n_out);

/* The one message refusing a model: "11 operators unsupported: Landmarks2TransformMatrix v2 (ops
 * 300, 420, 555); TransformTensorBilinear v2 (ops ...); ..." - grouped by (op, version, option,
 * subgraph) in order of first appearance, operators of a subgraph other than 0 named "(ops 3, 4
 * of subgraph 2)", the option in brackets when it is more than the op being unknown, at
 * most 16 operator indices per group. Groups are written whole: when the next would not fit in
 * msg_bytes the text ends with "; ... and N more" (N operators left unnamed; the list itself
 * carries them all). Always returns AR_EUNSUPPORTED. */
int ar_unsupported_format(const ar_unsupported_t *list, int32_t n, char *msg, size_t msg_bytes);

/* Release a model (and the copy of the file ar_model_load made). NULL is a no-op. */
void ar_model_free(ar_model_t *model);

/* True when tensor `t` of subgraph `sg` is a constant (has buffer data). */
static inline bool ar_tensor_is_constant(const ar_tensor_t *t) { return t->data != NULL; }

/* Number of elements of a tensor (product of dims, 1 for rank 0). */
uint64_t ar_tensor_elements(const ar_tensor_t *t);

#ifdef __cplusplus
}
#endif
#endif /* AR_MODEL_H */
