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
