/* ar_test_model.h - build small TFLite models in memory for tests: one subgraph, float/int32
 * tensors (shape, optional shape_signature, optional constant data, optional quantization),
 * builtin operators with
 * scalar builtin options. The bytes are a real TFLite flatbuffer (schema v3) that ar_model_load
 * verifies like any file; tests write them to a file when the daemon must load them. */
#ifndef AR_TEST_MODEL_H
#define AR_TEST_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loader/ar_model.h"

typedef struct ar_tm_tensor {
  const char *name;
  ar_dtype_t dtype;
  int32_t rank;
  int32_t dims[AR_MAX_RANK];
  bool has_sig;                 /* write shape_signature (sig) */
  int32_t sig[AR_MAX_RANK];
  const void *data;             /* constant data (product(dims) * dtype size bytes), or NULL */
} ar_tm_tensor_t;

/* A scalar field of a builtin options table: field id, byte size (1 or 4), value (a float field:
 * its IEEE bits, ar_tm_f32_bits). */
typedef struct ar_tm_field { int id, size; int64_t val; } ar_tm_field_t;
/* A string field: size 0, val the string's address ((int64_t)(intptr_t)"text"), written as a
 * uoffset to a copy of the string. */

typedef struct ar_tm_op {
  int32_t builtin;              /* TFLite BuiltinOperator code */
  int32_t n_in, n_out;
  int32_t in[24], out[8];       /* -1 for an omitted optional input */
  uint8_t options_type;         /* BuiltinOptions union type, 0 for none */
  int32_t n_fields;
  ar_tm_field_t fields[8];
} ar_tm_op_t;

/* The bits of a float options field. */
int64_t ar_tm_f32_bits(float f);

/* The model bytes (malloc'd, 16-byte aligned, caller frees), *bytes set. Asserts on failure. */
uint8_t *ar_tm_build(const ar_tm_tensor_t *tensors, int n_tensors, const ar_tm_op_t *ops, int n_ops,
                     const int32_t *inputs, int n_inputs, const int32_t *outputs, int n_outputs,
                     size_t *bytes);

/* A one-operator model: float32 [1,4] tensor `in_name` -> RELU -> float32 [1,4] `out_name` (names
 * as given, any bytes but NUL), built by ar_tm_build: for tests of how names are checked or shown. */
uint8_t *ar_tm_build_relu(const char *in_name, const char *out_name, size_t *bytes);

/* QuantizationParameters for tensor `tensor`: n scales and zero points (per-tensor when n is 1,
 * else per-axis along qdim). */
typedef struct ar_tm_quant {
  int32_t tensor;
  int32_t n;
  const float *scale;
  const int64_t *zero_point;
  int32_t qdim;
} ar_tm_quant_t;

/* ar_tm_build plus quantization for the tensors listed in quant[0..n_quant). */
uint8_t *ar_tm_build_quant(const ar_tm_tensor_t *tensors, int n_tensors, const ar_tm_op_t *ops, int n_ops,
                           const int32_t *inputs, int n_inputs, const int32_t *outputs, int n_outputs,
                           const ar_tm_quant_t *quant, int n_quant, size_t *bytes);

/* SparsityParameters for tensor `tensor` (a constant whose data holds `data_bytes` bytes of stored
 * values, not the dense size): traversal order, block map and dim metadata with their index
 * vectors, as loader/ar_model.h describes them. */
typedef struct ar_tm_sparse {
  int32_t tensor;
  const ar_sparsity_t *sp;
  uint64_t data_bytes;
} ar_tm_sparse_t;

/* ar_tm_build_quant plus sparsity for the tensors listed in sparse[0..n_sparse). */
uint8_t *ar_tm_build_sparse(const ar_tm_tensor_t *tensors, int n_tensors, const ar_tm_op_t *ops,
                            int n_ops, const int32_t *inputs, int n_inputs, const int32_t *outputs,
                            int n_outputs, const ar_tm_quant_t *quant, int n_quant,
                            const ar_tm_sparse_t *sparse, int n_sparse, size_t *bytes);

/* Everything ar_tm_build_sparse takes, plus the tensors written with is_variable (the state of
 * LSTM / SVDF / RNN operators: TFLite resets them to 0 / the zero point). */
typedef struct ar_tm_args {
  const ar_tm_tensor_t *tensors; int n_tensors;
  const ar_tm_op_t *ops; int n_ops;
  const int32_t *inputs; int n_inputs;
  const int32_t *outputs; int n_outputs;
  const ar_tm_quant_t *quant; int n_quant;
  const ar_tm_sparse_t *sparse; int n_sparse;
  const int32_t *variables; int n_variables;
  /* Subgraphs 1..n_subgraphs after this one (main): each its own tensors, operators, inputs and
   * outputs (their own `subgraphs` ignored); operator codes and buffers are shared. */
  const struct ar_tm_args *subgraphs; int n_subgraphs;
} ar_tm_args_t;
uint8_t *ar_tm_build_args(const ar_tm_args_t *a, size_t *bytes);

/* The integer I/O model: one input and one output of each integer dtype the protocol carries,
 * each output a RESHAPE of its input: u8_in [1,4] -> u8_out [4], both scale .5 zp 10;
 * i8_in [1,6] (scale .25, zp -3) -> i8_out [2,3] per-axis along dim 1 (scales .5/1/2, zero points
 * 0/1/-1); i32 [3] -> [3]; i64 [2] -> [2]; bool [4] -> [4]. Inputs and outputs in that order. */
uint8_t *ar_tm_int_io_model(size_t *bytes);

/* The resize test model: x [1,4,4,3] with shape_signature [-1,4,4,3] -> CONV_2D 3x3 SAME (2
 * filters, bias) -> ADD a [2] constant with fused RELU -> MAX_POOL_2D 2x2/2 -> RESHAPE to
 * [-1, 8] (constant shape) -> y. ar_tm_batch_by_hand computes y (8 floats) of one item x
 * (4*4*3 floats, NHWC) in double precision from the same weights. */
#define AR_TM_BATCH_H 4
#define AR_TM_BATCH_W 4
#define AR_TM_BATCH_C 3
#define AR_TM_BATCH_O 2
#define AR_TM_BATCH_OUT (AR_TM_BATCH_O * (AR_TM_BATCH_H / 2) * (AR_TM_BATCH_W / 2))
uint8_t *ar_tm_batch_model(size_t *bytes);
void ar_tm_batch_by_hand(const float *x, float *y);

#endif
