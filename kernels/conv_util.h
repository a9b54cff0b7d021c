/* conv_util.h - internal helpers shared by the convolution-family kernels (conv.c, depthwise.c,
 * transpose_conv.c, fully_connected.c): shape strings for prepare messages, the clamp range of a
 * fused activation, the bias + activation pass over GEMM output rows, and the AVX2/FMA clone
 * switch. Header-only, static inline; not part of the kernels API. */
#ifndef AR_CONV_UTIL_H
#define AR_CONV_UTIL_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/ar_error.h"
#include "kernels/ar_isa.h"
#include "kernels/ar_kernels.h"

/* Hot loops are compiled twice, for the baseline ISA and for AVX2+FMA, and picked at run time, so
 * the build stays portable (no -march=native) but runs 8-wide on machines that have it. Elsewhere
 * the baseline body is the only one: on aarch64, NEON is part of the baseline, so its 8-float GCC
 * vectors (ar__v8f and the kernels' own) compile to pairs of 128-bit fmla and nothing needs to be
 * picked at run time (`./dev cross-check` tests that build under qemu-aarch64). */
/* The level is one per process (kernels/ar_isa.h: ar__f32_isa, forced by ar__f32_set_isa for
 * tests and benchmarks); AVX-512F clones (AR_TARGET_AVX512) sit beside the AVX2 ones where
 * 16-float vectors pay. */
extern int ar__f32_level;
int ar__f32_isa_init(void);
static inline int ar__f32_isa(void) {
  int l = __atomic_load_n(&ar__f32_level, __ATOMIC_RELAXED);
  return l >= 0 ? l : ar__f32_isa_init();
}
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang_analyzer__)
#define AR_HAVE_AVX2_CLONE 1
#define AR_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define AR_TARGET_AVX512 __attribute__((target("avx2,fma,avx512f")))
/* The CPU itself (integer kernels use it for their own choice). */
static inline bool ar__cpu_has_avx2_fma(void) {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
#define AR_HAVE_AVX2_CLONE 0
#define AR_TARGET_AVX2
#define AR_TARGET_AVX512
static inline bool ar__cpu_has_avx2_fma(void) { return false; }
#endif

#define AR_ALWAYS_INLINE inline __attribute__((always_inline))

/* "[32,3,3,4]" for a tensor view (or "(none)"), for prepare messages. */
static inline const char *ar__shape_str(char *buf, size_t n, const ar_tview_t *t) {
  if (!t) { snprintf(buf, n, "(none)"); return buf; }
  size_t used = 0;
  used += (size_t)snprintf(buf + used, n - used, "[");
  for (int32_t i = 0; i < t->rank && used < n; i++)
    used += (size_t)snprintf(buf + used, n - used, i ? ",%d" : "%d", (int)t->dims[i]);
  if (used < n) snprintf(buf + used, n - used, "]");
  return buf;
}

static inline bool ar__activation_valid(ar_activation_t act) {
  return act >= AR_ACT_NONE && act <= AR_ACT_SIGN_BIT;
}

/* The clamp that RELU / RELU_N1_TO_1 / RELU6 reduce to (TFLite CalculateActivationRange);
 * NONE, TANH and SIGN_BIT clamp to [-inf, inf] and TANH / SIGN_BIT are applied afterwards. */
static inline void ar__act_range(ar_activation_t act, float *lo, float *hi) {
  *lo = -INFINITY; *hi = INFINITY;
  if (act == AR_ACT_RELU) *lo = 0.0f;
  else if (act == AR_ACT_RELU6) { *lo = 0.0f; *hi = 6.0f; }
  else if (act == AR_ACT_RELU_N1_TO_1) { *lo = -1.0f; *hi = 1.0f; }
}
static inline bool ar__act_is_clamp(ar_activation_t act) {
  return act == AR_ACT_RELU || act == AR_ACT_RELU6 || act == AR_ACT_RELU_N1_TO_1;
}

/* Unaligned float vectors (GCC vector extension); may_alias because they read float arrays. */
typedef float ar__v8f __attribute__((vector_size(32), aligned(4), may_alias));
typedef float ar__v4f __attribute__((vector_size(16), aligned(4), may_alias));
typedef int32_t ar__v4i __attribute__((vector_size(16)));

/* Copy / zero n floats inline. The runs im2col copies are short (often 3..96 floats) and a library
 * call per run cost more than the copy; the empty asm hides the index from GCC's loop-distribution
 * pass, which would otherwise turn these loops back into memmove/memset calls. */
static inline void ar__copy_floats(float *restrict dst, const float *restrict src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __asm__("" : "+r"(i));
    *(ar__v8f *)(dst + i) = *(const ar__v8f *)(src + i);
  }
  for (; i < n; i++) {
    __asm__("" : "+r"(i));
    dst[i] = src[i];
  }
}
static inline void ar__zero_floats(float *dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __asm__("" : "+r"(i));
    *(ar__v8f *)(dst + i) = (ar__v8f){0};
  }
  for (; i < n; i++) {
    __asm__("" : "+r"(i));
    dst[i] = 0.0f;
  }
}

/* Fill `rows` rows of `cols` floats with the bias (or zeros when bias is NULL): GEMM then
 * accumulates with beta = 1, which saves OpenBLAS's own zeroing pass. A plain loop rather than
 * one memcpy per row: rows are often only 16-96 floats and the call overhead dominated. */
static inline void ar__fill_bias_rows(float *restrict out, size_t rows, size_t cols,
                                      const float *restrict bias) {
  if (!bias) { memset(out, 0, rows * cols * sizeof(float)); return; }
  if (cols == 1) {
    for (size_t r = 0; r < rows; r++) out[r] = bias[0];
    return;
  }
  for (size_t r = 0; r < rows; r++, out += cols) ar__copy_floats(out, bias, cols);
}

/* Add the bias (NULL: nothing) to `rows` rows of `cols` floats: after a product summed from 0, the
 * order TFLite's float FULLY_CONNECTED and CONV_2D use. */
static inline void ar__add_bias_rows(float *restrict out, size_t rows, size_t cols,
                                     const float *restrict bias) {
  if (!bias) return;
  for (size_t r = 0; r < rows; r++, out += cols)
    for (size_t j = 0; j < cols; j++) out[j] += bias[j];
}

/* Apply a fused activation to n floats after the GEMM (clamps vectorize; TANH / SIGN_BIT go
 * through ar_apply_activation). */
static inline void ar__activate(float *x, size_t n, ar_activation_t act) {
  if (act == AR_ACT_NONE) return;
  if (!ar__act_is_clamp(act)) { ar_apply_activation(x, n, act); return; }
  float lo, hi;
  ar__act_range(act, &lo, &hi);
  /* 4 at a time without branches (the scalar loop compiled to two data-dependent branches per
   * element: ~40 us over a 1.2 MB first-layer output); 16-byte vectors, which every x86-64 and
   * aarch64 target has (GCC splits wider ones into scalar code without AVX), the same selects as
   * the tail. */
  const ar__v4f lov = {lo, lo, lo, lo}, hiv = {hi, hi, hi, hi};
  const size_t n4 = n & ~(size_t)3;
  for (size_t i = 0; i < n4; i += 4) {
    ar__v4f v = *(const ar__v4f *)(x + i);
    ar__v4i m = v < lov;
    v = (ar__v4f)(((ar__v4i)lov & m) | ((ar__v4i)v & ~m));
    m = v > hiv;
    *(ar__v4f *)(x + i) = (ar__v4f)(((ar__v4i)hiv & m) | ((ar__v4i)v & ~m));
  }
  for (size_t i = n4; i < n; i++) {
    float v = x[i] < lo ? lo : x[i];
    x[i] = v > hi ? hi : v;
  }
}

/* Prepare-time message prefix: "operator 7 (CONV_2D): ". */
#define AR__OPFMT "operator %d (%s): "

/* Bounds of a sliding window that every windowed kernel checks at prepare (CONV_2D,
 * DEPTHWISE_CONV_2D, the sparse conv, TRANSPOSE_CONV, AVERAGE/MAX_POOL_2D): each stride and each
 * dilated filter extent ((k - 1) * dilation + 1) at most AR_K_WINDOW_MAX input pixels, the
 * filter's taps (kh * kw) at most AR_K_WINDOW_TAPS_MAX, so that the kernels' index arithmetic
 * (int32 pixel offsets, int64 work estimates) cannot overflow. Real models stay far below (the
 * largest seen: 7x7 filters, stride 4, dilation 16). */
#define AR_K_WINDOW_MAX 65536
#define AR_K_WINDOW_TAPS_MAX (1 << 20)

/* The window checks above for filter kh x kw, strides sh x sw, dilations dh x dw (all >= 1, as the
 * caller checked). Returns 0, or AR_EUNSUPPORTED with a message naming the operator and values. */
static inline int ar__check_window(const ar_node_t *node, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                                   int64_t dh, int64_t dw, char *msg, size_t msg_bytes) {
  const int64_t eh = (kh - 1) * dh + 1, ew = (kw - 1) * dw + 1;
  if (eh > AR_K_WINDOW_MAX || ew > AR_K_WINDOW_MAX || sh > AR_K_WINDOW_MAX || sw > AR_K_WINDOW_MAX ||
      kh * kw > AR_K_WINDOW_TAPS_MAX)
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "filter %lldx%lld with dilation %lldx%lld "
                   "spans %lldx%lld input pixels, stride %lldx%lld: above the supported %d pixels per "
                   "dimension (or %d taps)", (int)node->index, ar_op_name(node->op), (long long)kh,
                   (long long)kw, (long long)dh, (long long)dw, (long long)eh, (long long)ew, (long long)sh,
                   (long long)sw, AR_K_WINDOW_MAX, AR_K_WINDOW_TAPS_MAX);
  return 0;
}

/* Shared first checks of CONV_2D and DEPTHWISE_CONV_2D prepare (TFLite: inputs input, filter and
 * an optional bias; one output; float32 throughout, except that with `weights_f16` the filter and
 * the bias may also be float16 constants: the weights as stored, ar_kernel_reads_f16). Returns
 * 0, AR_EINVAL or AR_EUNSUPPORTED with a message naming the operator. */
static inline int ar__conv_check_io_w(const ar_node_t *node, const char *name, bool weights_f16,
                                      char *msg, size_t msg_bytes) {
  int idx = node->index;
  if (node->n_inputs < 2 || node->n_inputs > 3 || node->n_outputs != 1 || !node->inputs[0] ||
      !node->inputs[1] || !node->outputs[0] || !node->options)
    return ar_errf(msg, msg_bytes, AR_EINVAL, AR__OPFMT "needs inputs (input, filter[, bias]) "
                   "and one output, got %d inputs and %d outputs", idx, name, node->n_inputs,
                   node->n_outputs);
  const ar_tview_t *in = node->inputs[0], *f = node->inputs[1], *out = node->outputs[0];
  const ar_tview_t *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
  const bool f_ok = f->dtype == AR_DTYPE_FLOAT32 ||
                    (weights_f16 && f->dtype == AR_DTYPE_FLOAT16 && f->is_constant && !f->sparsity);
  const bool b_ok = !bias || bias->dtype == AR_DTYPE_FLOAT32 ||
                    (weights_f16 && bias->dtype == AR_DTYPE_FLOAT16 && bias->is_constant);
  if (in->dtype != AR_DTYPE_FLOAT32 || !f_ok || out->dtype != AR_DTYPE_FLOAT32 || !b_ok)
    return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, AR__OPFMT "only float32 input/filter/bias/output "
                   "are supported (input %s, filter %s, output %s)", idx, name,
                   ar_dtype_name(in->dtype), ar_dtype_name(f->dtype), ar_dtype_name(out->dtype));
  return 0;
}
static inline int ar__conv_check_io(const ar_node_t *node, const char *name, char *msg,
                                    size_t msg_bytes) {
  return ar__conv_check_io_w(node, name, false, msg, msg_bytes);
}

/* The common answer of the convolution kernels to ar_kernel_reads_f16: the filter (input 1) or
 * the bias (input 2) of a float32 node (input 0 float32), filter not sparse. */
static inline bool ar__conv_reads_f16(const ar_node_t *node, int32_t input) {
  if ((input != 1 && input != 2) || input >= node->n_inputs || node->n_inputs < 2 ||
      !node->inputs[0] || !node->inputs[1] || !node->inputs[input])
    return false;
  return node->inputs[0]->dtype == AR_DTYPE_FLOAT32 && !node->inputs[1]->sparsity &&
         node->inputs[1]->dtype != AR_DTYPE_INT8 &&   /* hybrid: kernels/qwide.h */
         node->inputs[input]->dtype == AR_DTYPE_FLOAT32;
}

#endif /* AR_CONV_UTIL_H */
