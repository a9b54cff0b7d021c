/* unary.c - TFLite's elementwise unary operators: ABS, NEG, SQRT, RSQRT, EXP, LOG, TANH, GELU,
 * LEAKY_RELU, ELU, RELU_N1_TO_1, RELU_0_TO_1, and CAST between float32, int32, int64, uint8,
 * int8, int16 and bool.
 *
 * Same shape in and out; out[i] depends on in[i] only, so an output may share its input's bytes.
 * Float formulas are those of TFLite's reference kernels (named at each kernel). Integer ABS and
 * NEG wrap (INT_MIN stays INT_MIN) rather than hitting undefined behaviour. CAST follows
 * static_cast: float -> integer truncates toward zero (NaN -> 0, out-of-range saturates to int64
 * first, then wraps to the narrower type), integer narrowing wraps, anything -> bool is "!= 0",
 * bool -> number is 0 or 1.
 */
#include <math.h>
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_parallel.h"

#define UN_IVDEP _Pragma("GCC ivdep")

static bool dtype_in(ar_dtype_t t, const ar_dtype_t *set, int n) {
  for (int i = 0; i < n; i++)
    if (set[i] == t) return true;
  return false;
}

/* Arity 1/1, input dtype in `set`, output of the same dtype and shape. */
static int unary_check(ar_node_t *node, const ar_dtype_t *set, int nset, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  char tn[96];
  if (!dtype_in(in->dtype, set, nset))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0%s has dtype %s, which this "
                    "operator does not take", ar_k_tname(in, tn, sizeof tn), ar_dtype_name(in->dtype));
  if ((rc = ar_k_check_dtype(node, node->outputs[0], "output 0", in->dtype, msg, msg_bytes))) return rc;
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

static const ar_dtype_t only_f32[] = {AR_DTYPE_FLOAT32};
static const ar_dtype_t f32_i32[] = {AR_DTYPE_FLOAT32, AR_DTYPE_INT32};
static const ar_dtype_t f32_i32_i64[] = {AR_DTYPE_FLOAT32, AR_DTYPE_INT32, AR_DTYPE_INT64};

static int float_prepare(ar_node_t *node, char *msg, size_t n) { return unary_check(node, only_f32, 1, msg, n); }
static int abs_prepare(ar_node_t *node, char *msg, size_t n) { return unary_check(node, f32_i32, 2, msg, n); }
static int neg_prepare(ar_node_t *node, char *msg, size_t n) { return unary_check(node, f32_i32_i64, 3, msg, n); }

/* One float loop per op: f(x) over n elements. */
#define FLOAT_UNARY(name, EXPR)                                                              \
  static void name(const ar_node_t *node) {                                                  \
    const float *in = node->inputs[0]->data;                                                 \
    float *out = node->outputs[0]->data;                                                     \
    const int64_t n = ar_k_elements(node->inputs[0]);                                        \
    UN_IVDEP for (int64_t i = 0; i < n; i++) { const float x = in[i]; out[i] = (EXPR); }     \
  }

FLOAT_UNARY(sqrt_eval, sqrtf(x))
FLOAT_UNARY(rsqrt_eval, 1.0f / sqrtf(x))
FLOAT_UNARY(exp_eval, expf(x))
FLOAT_UNARY(log_eval, logf(x))
FLOAT_UNARY(tanh_eval, tanhf(x))
/* TFLite reference Elu: x < 0 ? expm1(x) : x. */
FLOAT_UNARY(elu_eval, x < 0.0f ? expm1f(x) : x)
FLOAT_UNARY(relu_n1_to_1_eval, ar_k_clamp(x, -1.0f, 1.0f))
FLOAT_UNARY(relu_0_to_1_eval, ar_k_clamp(x, 0.0f, 1.0f))

static void abs_eval(const ar_node_t *node) {
  const int64_t n = ar_k_elements(node->inputs[0]);
  if (node->inputs[0]->dtype == AR_DTYPE_FLOAT32) {
    const float *in = node->inputs[0]->data;
    float *out = node->outputs[0]->data;
    UN_IVDEP for (int64_t i = 0; i < n; i++) out[i] = fabsf(in[i]);
  } else {
    const int32_t *in = node->inputs[0]->data;
    int32_t *out = node->outputs[0]->data;
    for (int64_t i = 0; i < n; i++) out[i] = in[i] < 0 ? (int32_t)(0u - (uint32_t)in[i]) : in[i];
  }
}

static void neg_eval(const ar_node_t *node) {
  const int64_t n = ar_k_elements(node->inputs[0]);
  switch (node->inputs[0]->dtype) {
  case AR_DTYPE_FLOAT32: {
    const float *in = node->inputs[0]->data;
    float *out = node->outputs[0]->data;
    UN_IVDEP for (int64_t i = 0; i < n; i++) out[i] = -in[i];
    break;
  }
  case AR_DTYPE_INT32: {
    const int32_t *in = node->inputs[0]->data;
    int32_t *out = node->outputs[0]->data;
    for (int64_t i = 0; i < n; i++) out[i] = (int32_t)(0u - (uint32_t)in[i]);
    break;
  }
  default: {
    const int64_t *in = node->inputs[0]->data;
    int64_t *out = node->outputs[0]->data;
    for (int64_t i = 0; i < n; i++) out[i] = (int64_t)(0ull - (uint64_t)in[i]);
    break;
  }
  }
}

/* TFLite GELU (reference Gelu): approximate = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
 * else the exact 0.5 x (1 + erf(x / sqrt(2))). */
static void gelu_eval(const ar_node_t *node) {
  const float *in = node->inputs[0]->data;
  float *out = node->outputs[0]->data;
  const int64_t n = ar_k_elements(node->inputs[0]);
  const bool approximate = node->options && node->options->gelu.approximate;
  if (approximate) {
    const float k = 0.7978845608028654f;   /* sqrt(2 / pi) */
    for (int64_t i = 0; i < n; i++) {
      const float x = in[i];
      out[i] = 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
    }
  } else {
    for (int64_t i = 0; i < n; i++) {
      const float x = in[i];
      out[i] = 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    }
  }
}

/* TFLite LEAKY_RELU (reference LeakyRelu): x > 0 ? x : alpha * x. */
static void leaky_relu_eval(const ar_node_t *node) {
  const float *in = node->inputs[0]->data;
  float *out = node->outputs[0]->data;
  const int64_t n = ar_k_elements(node->inputs[0]);
  const float alpha = node->options ? node->options->leaky_relu.alpha : 0.0f;
  UN_IVDEP for (int64_t i = 0; i < n; i++) {
    const float x = in[i];
    out[i] = x > 0.0f ? x : x * alpha;
  }
}

/* ---- CAST ---- */

static const ar_dtype_t cast_types[] = {AR_DTYPE_FLOAT32, AR_DTYPE_INT32, AR_DTYPE_INT64,
                                        AR_DTYPE_UINT8, AR_DTYPE_INT8, AR_DTYPE_INT16, AR_DTYPE_BOOL,
                                        AR_DTYPE_UINT32};

static int cast_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *out = node->outputs[0];
  if (!dtype_in(in->dtype, cast_types, 8) || !dtype_in(out->dtype, cast_types, 8))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "cast from %s to %s is not supported "
                    "(float32, int32, int64, uint8, int8, int16, bool, uint32)", ar_dtype_name(in->dtype),
                    ar_dtype_name(out->dtype));
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

/* float -> int64 as static_cast where defined; NaN -> 0 and saturation where it is not. */
static inline int64_t f2i64(float v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18f) return INT64_MAX;
  if (v <= -9.2233720368547758e18f) return INT64_MIN;
  return (int64_t)v;
}

/* Read element i of src as int64 (integer / bool sources). */
static inline int64_t load_int(const void *src, ar_dtype_t t, int64_t i) {
  switch (t) {
  case AR_DTYPE_INT32: return ((const int32_t *)src)[i];
  case AR_DTYPE_INT64: return ((const int64_t *)src)[i];
  case AR_DTYPE_UINT8: return ((const uint8_t *)src)[i];
  case AR_DTYPE_INT8: return ((const int8_t *)src)[i];
  case AR_DTYPE_INT16: return ((const int16_t *)src)[i];
  case AR_DTYPE_UINT32: return ((const uint32_t *)src)[i];
  default: return ((const uint8_t *)src)[i] != 0;   /* bool */
  }
}

/* Loop for one destination type D over elements [i0, i1): float sources convert through f2i64 (or
 * stay float), integer sources through int64 (8-bit sources - a model's image input - in a loop of
 * their own, which the compiler vectorizes); TO_D turns the int64 / float into D. */
#define CAST_TO(D, FROM_F, FROM_I)                                                           \
  do {                                                                                       \
    D *d = dst;                                                                              \
    if (st == AR_DTYPE_FLOAT32) {                                                            \
      const float *s = src;                                                                  \
      for (int64_t i = i0; i < i1; i++) { const float v = s[i]; d[i] = (FROM_F); }           \
    } else if (st == AR_DTYPE_UINT8) {                                                       \
      const uint8_t *s = src;                                                                \
      for (int64_t i = i0; i < i1; i++) { const int64_t v = s[i]; d[i] = (FROM_I); }         \
    } else if (st == AR_DTYPE_INT8) {                                                        \
      const int8_t *s = src;                                                                 \
      for (int64_t i = i0; i < i1; i++) { const int64_t v = s[i]; d[i] = (FROM_I); }         \
    } else {                                                                                 \
      for (int64_t i = i0; i < i1; i++) { const int64_t v = load_int(src, st, i); d[i] = (FROM_I); } \
    }                                                                                        \
  } while (0)

/* Elements [i0, i1) of CAST: each converts alone, so any split gives the same values. */
static void cast_range(void *ctx, int64_t i0, int64_t i1) {
  const ar_node_t *node = ctx;
  const void *src = node->inputs[0]->data;
  void *dst = node->outputs[0]->data;
  const ar_dtype_t st = node->inputs[0]->dtype;
  switch (node->outputs[0]->dtype) {
  case AR_DTYPE_FLOAT32: CAST_TO(float, v, (float)v); break;
  case AR_DTYPE_INT32: CAST_TO(int32_t, (int32_t)(uint32_t)(uint64_t)f2i64(v), (int32_t)(uint32_t)(uint64_t)v); break;
  case AR_DTYPE_INT64: CAST_TO(int64_t, f2i64(v), v); break;
  case AR_DTYPE_UINT8: CAST_TO(uint8_t, (uint8_t)(uint64_t)f2i64(v), (uint8_t)(uint64_t)v); break;
  case AR_DTYPE_INT8: CAST_TO(int8_t, (int8_t)(uint8_t)(uint64_t)f2i64(v), (int8_t)(uint8_t)(uint64_t)v); break;
  case AR_DTYPE_INT16: CAST_TO(int16_t, (int16_t)(uint16_t)(uint64_t)f2i64(v), (int16_t)(uint16_t)(uint64_t)v); break;
  case AR_DTYPE_UINT32: CAST_TO(uint32_t, (uint32_t)(uint64_t)f2i64(v), (uint32_t)(uint64_t)v); break;
  default: CAST_TO(bool, v != 0.0f, v != 0); break;
  }
}

/* The least elements worth a chunk of their own on the thread pool. */
#define CAST_CHUNK_ELEMS (32 * 1024)

static void cast_eval(const ar_node_t *node) {
  const int64_t n = ar_k_elements(node->inputs[0]);
  ar_parallel_for(node, n, ar_parallel_grain(n, 1, CAST_CHUNK_ELEMS, 64), cast_range, (void *)node);
}

/* ABS, EXP, LOG, RSQRT, SQRT on int8 / int16 (quantized, TFLite's elementwise.cc / exp.cc
 * arithmetic): kernels/qact.c. */
static bool q8_16(const ar_node_t *node) {
  const ar_dtype_t t = node->inputs[0] ? node->inputs[0]->dtype : AR_DTYPE_FLOAT32;
  return t == AR_DTYPE_INT8 || t == AR_DTYPE_INT16;
}
/* ELU, GELU, RELU_N1_TO_1, RELU_0_TO_1 on uint8 / int8 (byte tables): kernels/qact.c. */
static bool u8_i8(const ar_node_t *node) {
  const ar_dtype_t t = node->inputs[0] ? node->inputs[0]->dtype : AR_DTYPE_FLOAT32;
  return t == AR_DTYPE_INT8 || t == AR_DTYPE_UINT8;
}
#define Q_OR(name, pred, fprep, feval)                                                       \
  static int name##_q_prepare(ar_node_t *node, char *msg, size_t n) {                        \
    if (node->n_inputs >= 1 && pred(node)) return ar__qact_prepare(node, msg, n);            \
    return fprep(node, msg, n);                                                              \
  }                                                                                          \
  static void name##_q_init(ar_node_t *node) {                                               \
    if (pred(node)) ar__qact_init(node);                                                     \
  }                                                                                          \
  static void name##_q_eval(const ar_node_t *node) {                                         \
    if (pred(node)) ar__qact_eval(node);                                                     \
    else feval(node);                                                                        \
  }
Q_OR(abs, q8_16, abs_prepare, abs_eval)
Q_OR(sqrt, q8_16, float_prepare, sqrt_eval)
Q_OR(rsqrt, q8_16, float_prepare, rsqrt_eval)
Q_OR(exp, q8_16, float_prepare, exp_eval)
Q_OR(log, q8_16, float_prepare, log_eval)
Q_OR(elu, u8_i8, float_prepare, elu_eval)
Q_OR(gelu, u8_i8, float_prepare, gelu_eval)
Q_OR(relu_n1_to_1, u8_i8, float_prepare, relu_n1_to_1_eval)
Q_OR(relu_0_to_1, u8_i8, float_prepare, relu_0_to_1_eval)

/* TFLite ABS (builtin 101): |x|; float32, int32, int8 / int16 (rescaled). */
static const ar_kernel_form_t abs_forms[] = {
  AR_KF(1, 5, FLOAT32, FLOAT32),
  AR_KF(1, 5, INT32, INT32),
  AR_KF(1, 5, INT8, INT8),
  AR_KF(1, 5, INT16, INT16),
};
const ar_kernel_t ar_kernel_abs = { "ABS", abs_q_prepare, abs_q_init, abs_q_eval,
  AR_KSUPPORT(abs_forms, 0, -1) };
/* TFLite NEG (builtin 59): -x; float32, int32, int64. */
static const ar_kernel_form_t neg_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, INT32, INT32),
  AR_KF(1, 1, INT64, INT64),
};
const ar_kernel_t ar_kernel_neg = { "NEG", neg_prepare, NULL, neg_eval,
  AR_KSUPPORT(neg_forms, 0, -1) };
/* TFLite SQRT (builtin 75), RSQRT (76: 1 / sqrt(x)), EXP (47), LOG (73): float32, int8, int16;
 * TANH (28): float32, uint8 / int8 / int16. */
static const ar_kernel_form_t sqrt_forms[] = {
  AR_KF(1, 2, FLOAT32, FLOAT32),
  AR_KF(1, 2, INT8, INT8),
  AR_KF(1, 2, INT16, INT16),
};
const ar_kernel_t ar_kernel_sqrt = { "SQRT", sqrt_q_prepare, sqrt_q_init, sqrt_q_eval,
  AR_KSUPPORT(sqrt_forms, 0, -1) };
static const ar_kernel_form_t rsqrt_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32),
  AR_KF(1, 3, INT8, INT8),
  AR_KF(1, 3, INT16, INT16),
};
const ar_kernel_t ar_kernel_rsqrt = { "RSQRT", rsqrt_q_prepare, rsqrt_q_init, rsqrt_q_eval,
  AR_KSUPPORT(rsqrt_forms, 0, -1) };
static const ar_kernel_form_t exp_forms[] = {
  AR_KF(1, 2, FLOAT32, FLOAT32),
  AR_KF(1, 2, INT8, INT8),
  AR_KF(1, 2, INT16, INT16),
};
const ar_kernel_t ar_kernel_exp = { "EXP", exp_q_prepare, exp_q_init, exp_q_eval,
  AR_KSUPPORT(exp_forms, 0, -1) };
static const ar_kernel_form_t log_forms[] = {
  AR_KF(1, 2, FLOAT32, FLOAT32),
  AR_KF(1, 2, INT8, INT8),
  AR_KF(1, 2, INT16, INT16),
};
const ar_kernel_t ar_kernel_log = { "LOG", log_q_prepare, log_q_init, log_q_eval,
  AR_KSUPPORT(log_forms, 0, -1) };
/* TANH on uint8 / int8 (a byte table) and int16 (TFLite's fixed-point or table paths): kernels/qact.c. */
static bool is_quantized(const ar_node_t *node) {
  const ar_dtype_t t = node->inputs[0] ? node->inputs[0]->dtype : AR_DTYPE_FLOAT32;
  return t == AR_DTYPE_INT8 || t == AR_DTYPE_UINT8 || t == AR_DTYPE_INT16;
}
static int tanh_prepare(ar_node_t *node, char *msg, size_t n) {
  if (node->n_inputs >= 1 && is_quantized(node)) return ar__qact_prepare(node, msg, n);
  return float_prepare(node, msg, n);
}
static void tanh_init(ar_node_t *node) {
  if (is_quantized(node)) ar__qact_init(node);
}
static void tanh_any_eval(const ar_node_t *node) {
  if (is_quantized(node)) ar__qact_eval(node);
  else tanh_eval(node);
}
static const ar_kernel_form_t tanh_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32),
  AR_KF(1, 3, UINT8, UINT8),
  AR_KF(1, 3, INT8, INT8),
  AR_KF(1, 3, INT16, INT16),
};
const ar_kernel_t ar_kernel_tanh = { "TANH", tanh_prepare, tanh_init, tanh_any_eval,
  AR_KSUPPORT(tanh_forms, 0, -1) };
/* TFLite GELU (builtin 150), approximate flag honoured; float32, uint8 / int8 (byte tables). */
static const ar_kernel_form_t gelu_forms[] = {
  AR_KF(1, 3, FLOAT32, FLOAT32),
  AR_KF(1, 3, UINT8, UINT8),
  AR_KF(1, 3, INT8, INT8),
};
const ar_kernel_t ar_kernel_gelu = { "GELU", gelu_q_prepare, gelu_q_init, gelu_q_eval,
  AR_KSUPPORT(gelu_forms, 0, -1) };
/* TFLite LEAKY_RELU (builtin 98): x > 0 ? x : alpha x; float32, and uint8 / int8 / int16 in
 * kernels/qact.c. */
static bool is_q8(const ar_node_t *node) { return is_quantized(node); }
static int leaky_relu_prepare(ar_node_t *node, char *msg, size_t n) {
  if (node->n_inputs >= 1 && is_q8(node)) return ar__qact_prepare(node, msg, n);   /* kernels/qact.c */
  return float_prepare(node, msg, n);
}
static void leaky_relu_init(ar_node_t *node) {
  if (is_q8(node)) ar__qact_init(node);
}
static void leaky_relu_any_eval(const ar_node_t *node) {
  if (is_q8(node)) ar__qact_eval(node);
  else leaky_relu_eval(node);
}
static const ar_kernel_form_t leaky_relu_forms[] = {
  AR_KF(1, 2, FLOAT32, FLOAT32),
  AR_KF(1, 2, UINT8, UINT8),
  AR_KF(1, 2, INT8, INT8),
  AR_KF(1, 2, INT16, INT16),
};
const ar_kernel_t ar_kernel_leaky_relu = { "LEAKY_RELU", leaky_relu_prepare, leaky_relu_init, leaky_relu_any_eval,
  AR_KSUPPORT(leaky_relu_forms, 0, -1) };
/* TFLite ELU (builtin 111): x < 0 ? exp(x) - 1 : x; float32, int8 (a byte table). */
static const ar_kernel_form_t elu_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, INT8, INT8),
};
const ar_kernel_t ar_kernel_elu = { "ELU", elu_q_prepare, elu_q_init, elu_q_eval,
  AR_KSUPPORT(elu_forms, 0, -1) };
/* TFLite RELU_N1_TO_1 (builtin 20): clamp to [-1, 1]; RELU_0_TO_1 (152): clamp to [0, 1]; float32,
 * uint8 / int8 (byte tables). */
static const ar_kernel_form_t relu_n1_to_1_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, UINT8, UINT8),
  AR_KF(1, 1, INT8, INT8),
};
const ar_kernel_t ar_kernel_relu_n1_to_1 = { "RELU_N1_TO_1", relu_n1_to_1_q_prepare, relu_n1_to_1_q_init,
                                             relu_n1_to_1_q_eval,
  AR_KSUPPORT(relu_n1_to_1_forms, 0, -1) };
static const ar_kernel_form_t relu_0_to_1_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, UINT8, UINT8),
  AR_KF(1, 1, INT8, INT8),
};
const ar_kernel_t ar_kernel_relu_0_to_1 = { "RELU_0_TO_1", relu_0_to_1_q_prepare, relu_0_to_1_q_init,
                                            relu_0_to_1_q_eval,
  AR_KSUPPORT(relu_0_to_1_forms, 0, -1) };
/* TFLite CAST (builtin 53): static_cast between float32, int32, int64, uint8, int8, int16, bool,
 * uint32 (version 2 marks uint32 in TFLite's op_version; one kernel takes every form at both). */
static const ar_kernel_form_t cast_forms[] = {
  AR_KF(1, 2, FLOAT32, FLOAT32),
  AR_KF(1, 2, FLOAT32, INT32),
  AR_KF(1, 2, FLOAT32, INT64),
  AR_KF(1, 2, FLOAT32, UINT8),
  AR_KF(1, 2, FLOAT32, INT8),
  AR_KF(1, 2, FLOAT32, INT16),
  AR_KF(1, 2, FLOAT32, BOOL),
  AR_KF(1, 2, INT32, FLOAT32),
  AR_KF(1, 2, INT32, INT32),
  AR_KF(1, 2, INT32, INT64),
  AR_KF(1, 2, INT32, UINT8),
  AR_KF(1, 2, INT32, INT8),
  AR_KF(1, 2, INT32, INT16),
  AR_KF(1, 2, INT32, BOOL),
  AR_KF(1, 2, INT64, FLOAT32),
  AR_KF(1, 2, INT64, INT32),
  AR_KF(1, 2, INT64, INT64),
  AR_KF(1, 2, INT64, UINT8),
  AR_KF(1, 2, INT64, INT8),
  AR_KF(1, 2, INT64, INT16),
  AR_KF(1, 2, INT64, BOOL),
  AR_KF(1, 2, UINT8, FLOAT32),
  AR_KF(1, 2, UINT8, INT32),
  AR_KF(1, 2, UINT8, INT64),
  AR_KF(1, 2, UINT8, UINT8),
  AR_KF(1, 2, UINT8, INT8),
  AR_KF(1, 2, UINT8, INT16),
  AR_KF(1, 2, UINT8, BOOL),
  AR_KF(1, 2, INT8, FLOAT32),
  AR_KF(1, 2, INT8, INT32),
  AR_KF(1, 2, INT8, INT64),
  AR_KF(1, 2, INT8, UINT8),
  AR_KF(1, 2, INT8, INT8),
  AR_KF(1, 2, INT8, INT16),
  AR_KF(1, 2, INT8, BOOL),
  AR_KF(1, 2, INT16, FLOAT32),
  AR_KF(1, 2, INT16, INT32),
  AR_KF(1, 2, INT16, INT64),
  AR_KF(1, 2, INT16, UINT8),
  AR_KF(1, 2, INT16, INT8),
  AR_KF(1, 2, INT16, INT16),
  AR_KF(1, 2, INT16, BOOL),
  AR_KF(1, 2, BOOL, FLOAT32),
  AR_KF(1, 2, BOOL, INT32),
  AR_KF(1, 2, BOOL, INT64),
  AR_KF(1, 2, BOOL, UINT8),
  AR_KF(1, 2, BOOL, INT8),
  AR_KF(1, 2, BOOL, INT16),
  AR_KF(1, 2, BOOL, BOOL),
  AR_KF(1, 2, UINT32, FLOAT32),
  AR_KF(1, 2, UINT32, INT32),
  AR_KF(1, 2, UINT32, INT64),
  AR_KF(1, 2, UINT32, UINT8),
  AR_KF(1, 2, UINT32, INT8),
  AR_KF(1, 2, UINT32, INT16),
  AR_KF(1, 2, UINT32, BOOL),
  AR_KF(1, 2, UINT32, UINT32),
  AR_KF(1, 2, FLOAT32, UINT32),
  AR_KF(1, 2, INT32, UINT32),
  AR_KF(1, 2, INT64, UINT32),
  AR_KF(1, 2, UINT8, UINT32),
  AR_KF(1, 2, INT8, UINT32),
  AR_KF(1, 2, INT16, UINT32),
  AR_KF(1, 2, BOOL, UINT32),
};
const ar_kernel_t ar_kernel_cast = { "CAST", cast_prepare, NULL, cast_eval,
  AR_KSUPPORT(cast_forms, 0, -1) };
