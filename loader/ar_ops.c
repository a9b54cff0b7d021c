/* ar_ops.c - names, versions and code lookups for the op vocabulary in ar_ops.h. */
#include <string.h>

#include "loader/ar_model.h"
#include "loader/ar_ops.h"

const char *ar_op_name(ar_op_t op) {
  switch (op) {
#define AR__OP_NAME(name, code, maxv) case AR_OP_##name: return #name;
  AR_BUILTIN_OP_MAP(AR__OP_NAME)
#undef AR__OP_NAME
#define AR__CUSTOM_NAME(name, str, maxv) case AR_OP_##name: return str;
  AR_CUSTOM_OP_MAP(AR__CUSTOM_NAME)
#undef AR__CUSTOM_NAME
  default: return "INVALID";
  }
}

int ar_op_max_version(ar_op_t op) {
  switch (op) {
#define AR__OP_MAXV(name, code, maxv) case AR_OP_##name: return maxv;
  AR_BUILTIN_OP_MAP(AR__OP_MAXV)
  AR_CUSTOM_OP_MAP(AR__OP_MAXV)
#undef AR__OP_MAXV
  default: return 0;
  }
}

ar_op_t ar_op_from_builtin(int builtin_code) {
  switch (builtin_code) {
#define AR__OP_CODE(name, code, maxv) case code: return AR_OP_##name;
  AR_BUILTIN_OP_MAP(AR__OP_CODE)
#undef AR__OP_CODE
  default: return AR_OP_INVALID;
  }
}

ar_op_t ar_op_from_custom(const char *custom_code, size_t len) {
#define AR__OP_CUSTOM(name, str, maxv) \
  if (len == sizeof(str) - 1 && memcmp(custom_code, str, len) == 0) return AR_OP_##name;
  AR_CUSTOM_OP_MAP(AR__OP_CUSTOM)
#undef AR__OP_CUSTOM
  return AR_OP_INVALID;
}

size_t ar_dtype_size(ar_dtype_t dtype) {
  switch (dtype) {
  case AR_DTYPE_FLOAT32: case AR_DTYPE_INT32: case AR_DTYPE_UINT32: return 4;
  case AR_DTYPE_FLOAT16: case AR_DTYPE_INT16: case AR_DTYPE_UINT16: return 2;
  case AR_DTYPE_UINT8: case AR_DTYPE_INT8: case AR_DTYPE_BOOL: return 1;
  case AR_DTYPE_INT64: case AR_DTYPE_UINT64: case AR_DTYPE_FLOAT64: case AR_DTYPE_COMPLEX64: return 8;
  case AR_DTYPE_COMPLEX128: return 16;
  default: return 0;
  }
}

const char *ar_dtype_name(ar_dtype_t dtype) {
  static const char *const names[] = {
    "FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "STRING", "BOOL", "INT16", "COMPLEX64",
    "INT8", "FLOAT64", "COMPLEX128", "UINT64", "RESOURCE", "VARIANT", "UINT32", "UINT16", "INT4",
  };
  if ((unsigned)dtype < sizeof(names) / sizeof(names[0])) return names[dtype];
  return "UNKNOWN";
}

uint64_t ar_tensor_elements(const ar_tensor_t *t) {
  uint64_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) n *= (uint64_t)t->dims[i];
  return n;
}

/* BuiltinOperator names of TFLite's schema.fbs, indexed by code (0 ADD ... 161 RIGHT_SHIFT).
 * Only used to name ops arenad rejects, so an error says "SOFTMAX", not "builtin 25". */
static const char *const tflite_builtin_names[] = {
    "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D", "DEPTH_TO_SPACE",
    "DEQUANTIZE", "EMBEDDING_LOOKUP", "FLOOR", "FULLY_CONNECTED", "HASHTABLE_LOOKUP",
    "L2_NORMALIZATION", "L2_POOL_2D", "LOCAL_RESPONSE_NORMALIZATION", "LOGISTIC", "LSH_PROJECTION",
    "LSTM", "MAX_POOL_2D", "MUL", "RELU", "RELU_N1_TO_1", "RELU6", "RESHAPE", "RESIZE_BILINEAR",
    "RNN", "SOFTMAX", "SPACE_TO_DEPTH", "SVDF", "TANH", "CONCAT_EMBEDDINGS", "SKIP_GRAM", "CALL",
    "CUSTOM", "EMBEDDING_LOOKUP_SPARSE", "PAD", "UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER",
    "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "TRANSPOSE", "MEAN", "SUB", "DIV", "SQUEEZE",
    "UNIDIRECTIONAL_SEQUENCE_LSTM", "STRIDED_SLICE", "BIDIRECTIONAL_SEQUENCE_RNN", "EXP", "TOPK_V2",
    "SPLIT", "LOG_SOFTMAX", "DELEGATE", "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST", "PRELU", "MAXIMUM",
    "ARG_MAX", "MINIMUM", "LESS", "NEG", "PADV2", "GREATER", "GREATER_EQUAL", "LESS_EQUAL",
    "SELECT", "SLICE", "SIN", "TRANSPOSE_CONV", "SPARSE_TO_DENSE", "TILE", "EXPAND_DIMS", "EQUAL",
    "NOT_EQUAL", "LOG", "SUM", "SQRT", "RSQRT", "SHAPE", "POW", "ARG_MIN", "FAKE_QUANT",
    "REDUCE_PROD", "REDUCE_MAX", "PACK", "LOGICAL_OR", "ONE_HOT", "LOGICAL_AND", "LOGICAL_NOT",
    "UNPACK", "REDUCE_MIN", "FLOOR_DIV", "REDUCE_ANY", "SQUARE", "ZEROS_LIKE", "FILL", "FLOOR_MOD",
    "RANGE", "RESIZE_NEAREST_NEIGHBOR", "LEAKY_RELU", "SQUARED_DIFFERENCE", "MIRROR_PAD", "ABS",
    "SPLIT_V", "UNIQUE", "CEIL", "REVERSE_V2", "ADD_N", "GATHER_ND", "COS", "WHERE", "RANK", "ELU",
    "REVERSE_SEQUENCE", "MATRIX_DIAG", "QUANTIZE", "MATRIX_SET_DIAG", "ROUND", "HARD_SWISH", "IF",
    "WHILE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "SCATTER_ND", "SELECT_V2",
    "DENSIFY", "SEGMENT_SUM", "BATCH_MATMUL", "PLACEHOLDER_FOR_GREATER_OP_CODES", "CUMSUM",
    "CALL_ONCE", "BROADCAST_TO", "RFFT2D", "CONV_3D", "IMAG", "REAL", "COMPLEX_ABS", "HASHTABLE",
    "HASHTABLE_FIND", "HASHTABLE_IMPORT", "HASHTABLE_SIZE", "REDUCE_ALL", "CONV_3D_TRANSPOSE",
    "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "BROADCAST_ARGS", "RANDOM_STANDARD_NORMAL",
    "BUCKETIZE", "RANDOM_UNIFORM", "MULTINOMIAL", "GELU", "DYNAMIC_UPDATE_SLICE", "RELU_0_TO_1",
    "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_SUM", "ATAN2",
    "UNSORTED_SEGMENT_MIN", "SIGN", "BITCAST", "BITWISE_XOR", "RIGHT_SHIFT",
};

const char *ar_tflite_builtin_name(int builtin_code) {
  if (builtin_code >= 0 && (size_t)builtin_code < sizeof(tflite_builtin_names) / sizeof(tflite_builtin_names[0]))
    return tflite_builtin_names[builtin_code];
  return NULL;
}
