/* math_ops.c - TFLite's float elementwise functions SQUARE, SIN, COS, FLOOR, CEIL, ROUND, and
 * ZEROS_LIKE (float32, int32, int64).
 *
 * Same shape in and out, out[i] from in[i] alone (an output may share its input's bytes). ROUND
 * rounds half to even as TFLite's RoundToNearest (2.5 -> 2, 3.5 -> 4, -0.5 -> -0), whatever the
 * floating-point environment's rounding mode. TFLite's builtin kernels take float32 only for the
 * six functions (SQUARE's integer forms are not builtin kernels).
 */
#include <math.h>
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

static int same_shape_prepare(ar_node_t *node, const ar_dtype_t *set, int nset, const char *allowed,
                              char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  bool ok = false;
  for (int i = 0; i < nset; i++) ok = ok || in->dtype == set[i];
  char tn[96];
  if (!ok)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0%s has dtype %s (%s)",
                    ar_k_tname(in, tn, sizeof tn), ar_dtype_name(in->dtype), allowed);
  if ((rc = ar_k_check_dtype(node, node->outputs[0], "output 0", in->dtype, msg, msg_bytes))) return rc;
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

static const ar_dtype_t f32_only[] = {AR_DTYPE_FLOAT32};
static const ar_dtype_t zeros_types[] = {AR_DTYPE_FLOAT32, AR_DTYPE_INT32, AR_DTYPE_INT64};

static int float_prepare(ar_node_t *node, char *msg, size_t n) {
  return same_shape_prepare(node, f32_only, 1, "float32 only", msg, n);
}
static int zeros_like_prepare(ar_node_t *node, char *msg, size_t n) {
  return same_shape_prepare(node, zeros_types, 3, "float32, int32 or int64", msg, n);
}

/* Round half to even, as TFLite's RoundToNearest: the floor, plus one when the rest is above one
 * half, or exactly one half and the floor is odd. */
static inline float round_half_even(float v) {
  const float f = floorf(v);
  const float diff = v - f;
  if (diff < 0.5f) return f;
  if (diff > 0.5f) return f + 1.0f;
  return fmodf(f, 2.0f) == 0.0f ? f : f + 1.0f;
}

#define MATH_UNARY(name, EXPR)                                                                \
  static void name(const ar_node_t *node) {                                                   \
    const float *in = node->inputs[0]->data;                                                  \
    float *out = node->outputs[0]->data;                                                      \
    const int64_t n = ar_k_elements(node->inputs[0]);                                         \
    for (int64_t i = 0; i < n; i++) { const float x = in[i]; out[i] = (EXPR); }               \
  }

MATH_UNARY(square_eval, x * x)
MATH_UNARY(sin_eval, sinf(x))
MATH_UNARY(cos_eval, cosf(x))
MATH_UNARY(floor_eval, floorf(x))
MATH_UNARY(ceil_eval, ceilf(x))
MATH_UNARY(round_eval, round_half_even(x))

static void zeros_like_eval(const ar_node_t *node) {
  /* 0.0f, 0 and 0LL are all-zero bytes. */
  memset(node->outputs[0]->data, 0, (size_t)ar_k_elements(node->outputs[0]) * ar_dtype_size(node->outputs[0]->dtype));
}

static const ar_kernel_form_t f32_forms[] = { AR_KF(1, 1, FLOAT32, FLOAT32) };
static const ar_kernel_form_t zeros_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32), AR_KF(1, 1, INT32, INT32), AR_KF(1, 1, INT64, INT64),
};

/* TFLite SQUARE (builtin 92), SIN (66), COS (108), FLOOR (8), CEIL (104), ROUND (116): float32. */
const ar_kernel_t ar_kernel_square = { "SQUARE", float_prepare, NULL, square_eval, AR_KSUPPORT(f32_forms, 0, -1) };
const ar_kernel_t ar_kernel_sin = { "SIN", float_prepare, NULL, sin_eval, AR_KSUPPORT(f32_forms, 0, -1) };
const ar_kernel_t ar_kernel_cos = { "COS", float_prepare, NULL, cos_eval, AR_KSUPPORT(f32_forms, 0, -1) };
const ar_kernel_t ar_kernel_floor = { "FLOOR", float_prepare, NULL, floor_eval, AR_KSUPPORT(f32_forms, 0, -1) };
const ar_kernel_t ar_kernel_ceil = { "CEIL", float_prepare, NULL, ceil_eval, AR_KSUPPORT(f32_forms, 0, -1) };
const ar_kernel_t ar_kernel_round = { "ROUND", float_prepare, NULL, round_eval, AR_KSUPPORT(f32_forms, 0, -1) };
/* TFLite ZEROS_LIKE (builtin 93): zeros of the input's shape and dtype (float32, int32, int64). */
const ar_kernel_t ar_kernel_zeros_like = { "ZEROS_LIKE", zeros_like_prepare, NULL, zeros_like_eval,
                                           AR_KSUPPORT(zeros_forms, 0, -1) };
