/* qact.c - the uint8 / int8 forms of LEAKY_RELU, HARD_SWISH, TANH (issue 28), the int16 forms of
 * LOGISTIC, TANH and LEAKY_RELU (int16x8 models), and PRELU (below). The 8-bit ones are 256-entry
 * tables: each output byte is a function of its input byte alone, so the table is made once (init)
 * with TFLite's builtin integer arithmetic for every code and eval is a byte lookup (ar__lut8_node).
 *
 * LEAKY_RELU (activations.cc LeakyReluPrepare, reference QuantizeLeakyRelu): with x = q - z_in,
 *   out = z_out + MultiplyByQuantizedMultiplier(x, s_in / s_out) for x >= 0, and
 *   z_out + MultiplyByQuantizedMultiplier(x, s_in * alpha / s_out) below, clamped to the type; the
 *   multipliers are computed in float32 as TFLite does. A negative alpha is refused (TFLite would
 *   take its sign into the multiplier; no converter writes one for a quantized model).
 * HARD_SWISH (activations.cc HardSwishPrepare, reference HardSwish): 16-bit fixed point - the input
 *   on a "high-resolution" scale s_in / 128, a relu-ish factor in [0, 1] from the input on the
 *   scale 3 / 32768 with saturating shifts, multiplied into the input on the output scale by a
 *   doubling high multiply that truncates, then a rounding right shift; both multipliers are
 *   QuantizeMultiplier's 32-bit ones rounded to 16 bits. TFLite requires s_in / (128 s_out) <= 1
 *   (an output shift that is a right shift) and so does this kernel.
 * TANH uint8 / int8, ELU int8, GELU uint8 / int8 (TanhPrepare, EluPrepare, GeluPrepare: the generic
 *   optimized kernels' LUTPopulate): per code, dequantize in float32, the float32 function (tanhf;
 *   expm1f below 0; GELU's erfc or tanh form), roundf(y / s_out) + z_out in float32, clamped.
 * RELU_N1_TO_1, RELU_0_TO_1 uint8 / int8 (QuantizedReluX(-1 / 0, 1)): RELU's rescale, clamped to
 *   z_out + roundf(-1 / s_out) or z_out .. z_out + roundf(1 / s_out) within the type.
 *
 * int16 (zero points 0, output scale 2^-15, as TFLite requires):
 * LOGISTIC / TANH take one of two paths, chosen at prepare from the input scale as TFLite does:
 *   - a power-of-two input scale with 12 fractional bits (LOGISTIC: exactly 2^-12; TANH: 2^-12 or
 *     2^-11, the latter with one saturating left shift): gemmlowp's 16-bit fixed-point logistic /
 *     tanh of the raw code as Q3.12 (kernels/ar_fx16.h);
 *   - any other scale: x = (q * M + round) >> shift with M = trunc(s_in * 3 * 4096 * 2^shift), the
 *     least shift (at most 31) that takes M above 32767 / 2, so that +-2^17 stands for +-10.67;
 *     then a linear interpolation in a 256-entry table of sigmoid(i / 24) in Q0.16 (LOGISTIC: 9
 *     fractional bits of |x| between entries; TANH, via tanh(x) = 2 sigmoid(2x) - 1: 8 bits),
 *     mirrored for x < 0, rounded back to Q0.15.
 * LEAKY_RELU int16: the rescale above, but TFLite's x86 kernel (AVX2) takes the elements in blocks
 *   of 16 from the start with another rounding - the high product floor(x M / 2^31), then a
 *   rounding right shift that rounds half up - and only the last n mod 16 with
 *   MultiplyByQuantizedMultiplier; the block elements use the first, so the bytes match. (A
 *   TFLite built without AVX2, e.g. on arm64, takes every element the scalar way and differs by
 *   one code on ties; arenad follows the x86 build, the goldens' reference, on every CPU.)
 */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_fx16.h"
#include "kernels/ar_lut16.h"
#include "kernels/ar_parallel.h"
#include "kernels/ar_qparams.h"

enum { QA_TABLE8, QA_LOGISTIC16_FX, QA_LOGISTIC16_TAB, QA_TANH16_FX, QA_TANH16_TAB, QA_LEAKY16, QA_ABS16,
       QA_ABS16_RAW, QA_LUT16, QA_SQRT16 };

typedef struct {
  int kind;                  /* QA_*: the 8-bit table, or one of the int16 paths */
  int32_t mult, m_id, m_alpha;
  int shift, sh_id, sh_alpha;
  bool rescale;              /* QA_ABS16: input and output scales differ */
  float in_scale, out_scale; /* QA_SQRT16 */
  uint8_t table[256];        /* QA_TABLE8: output byte per input byte (as unsigned index) */
  int16_t lut[513];          /* QA_LUT16: ar_lut16.h */
} qact_state_t;

/* sigmoid(i / 24) in Q0.16 for i = 0..255 (the last entry saturated to 65535): the values TFLite's
 * int16 LOGISTIC / TANH interpolate between. They are TFLite's stored constants, not a rounding of
 * the formula (44 entries are one above round-to-nearest), so they are data here too; every entry
 * is reached by the a16_logistic_all_* / a16_tanh_all_* native goldens. */
static const uint16_t sigmoid_q16[256] = {
  32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432,
  42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475,
  49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485,
  55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519,
  59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036,
  62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
  63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405,
  64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
  64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179,
  65194, 65208, 65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337,
  65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425,
  65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
  65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
  65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516, 65517,
  65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525,
  65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
  65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533,
  65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
  65534, 65534, 65534, 65535
};

/* TFLite DownScaleInt32ToInt16Multiplier: the top 16 bits of a Q31 multiplier, rounded. */
static int16_t down_to_i16(int32_t m) {
  if (m >= INT32_MAX - (1 << 15)) return INT16_MAX;
  return (int16_t)((m + (1 << 15)) >> 16);
}

/* gemmlowp SaturatingRoundingDoublingHighMul on int16. */
static int16_t srdhm16(int16_t a, int16_t b) {
  if (a == INT16_MIN && b == INT16_MIN) return INT16_MAX;
  const int32_t ab = (int32_t)a * (int32_t)b;
  const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return (int16_t)((ab + nudge) / (1 << 15));
}

/* TFLite SaturatingDoublingHighMul (truncating) on int16. */
static int16_t sdhm16(int16_t a, int16_t b) {
  if (a == INT16_MIN && b == INT16_MIN) return INT16_MAX;
  return (int16_t)(((int32_t)a * (int32_t)b) / (1 << 15));
}

/* gemmlowp RoundingDivideByPOT on int16 values. */
static int16_t rdivpot16(int16_t x, int e) {
  const int32_t mask = (1 << e) - 1, rem = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (int16_t)((x >> e) + (rem > threshold ? 1 : 0));
}

static int16_t sat_lshift16(int16_t v, int amount) {
  int64_t r = (int64_t)v * ((int64_t)1 << amount);
  if (r > INT16_MAX) r = INT16_MAX;
  if (r < INT16_MIN) r = INT16_MIN;
  return (int16_t)r;
}

/* (int)f as x86's cvttss2si gives it: out of range (and NaN) is INT32_MIN. */
static int32_t trunc_i32(float f) {
  return f > -2147483904.0f && f < 2147483648.0f ? (int32_t)f : INT32_MIN;
}

/* TFLite's GELU transforms of its LUTs (reference gelu.h), float32: the exact form through erfc,
 * the tanh approximation with sqrt(2 / pi) rounded to float. */
static float gelu_exact(float x) { return 0.5f * x * erfcf(x * -0.70710678118654752440f); }
static float gelu_approx(float x) {
  const float k = (float)(1.12837916709551257390 * 0.70710678118654752440);
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

/* TFLite CheckedLog2: log2(x) in float32 (log(x) / log(2)), rounded; true when x is a power of two
 * to 1e-3 in the exponent. */
static bool checked_log2(float x, int *log2_result) {
  const float l = logf(x) * (1.0f / logf(2.0f));
  const float r = roundf(l);
  *log2_result = (int)r;
  return fabsf(l - r) < 1e-3f;
}

/* ---- ABS, EXP, LOG, RSQRT, SQRT on int8 / int16 (elementwise.cc, exp.cc) ---- */

typedef struct { float out_min, out_scale; } qun_params_t;
static float qun_exp(float x, const void *p) { (void)p; return expf(x); }
/* LOG of x <= 0 is the lowest output value (TFLite's LogLUTPrepare) */
static float qun_log(float x, const void *p) { return x <= 0.0f ? ((const qun_params_t *)p)->out_min : logf(x); }
/* RSQRT of x <= 0 is the highest int16 output (its LUT's transform) */
static float qun_rsqrt(float x, const void *p) {
  return x <= 0.0f ? 32767.0f * ((const qun_params_t *)p)->out_scale : 1.0f / sqrtf(x);
}

/* SQRT of one code (SqrtEvalQuantized): trunc(sqrtf(s_in (q - z_in)) / s_out) + z_out; a negative
 * input, which TFLite refuses at invoke, is taken as 0 here. */
static int32_t qun_sqrt(int32_t q, float si, int32_t zi, float so, int32_t zo) {
  const float x = si * (float)(q - zi);
  return (int32_t)((uint32_t)trunc_i32(x >= 0.0f ? sqrtf(x) / so : 0.0f) + (uint32_t)zo);
}

static bool is_qunary(ar_op_t op) {
  return op == AR_OP_ABS || op == AR_OP_EXP || op == AR_OP_LOG || op == AR_OP_RSQRT || op == AR_OP_SQRT;
}

/* The int8 table (LUTPopulate<int8_t>'s float32 dequantize / transform / round for EXP and LOG,
 * the integer ABS and RSQRT of AbsEvalQuantized / RsqrtEvalQuantizedInt8, SQRT above). RSQRT of a
 * code below the zero point (TFLite refuses the invoke) gives 127, as the zero point itself does. */
static void qun_plan8(const ar_node_t *node, qact_state_t *st, float si, int32_t zi, float so, int32_t zo) {
  const ar_op_t op = node->op;
  int32_t m = 0;
  int sh = 0;
  if (op == AR_OP_ABS) ar_quantize_multiplier((double)(si / so), &m, &sh);
  if (op == AR_OP_RSQRT) ar_quantize_multiplier(1.0 / (double)(sqrtf(si) * so), &m, &sh);
  const qun_params_t p = {(float)(-128 - zo) * so, so};
  for (int32_t q = -128; q <= 127; q++) {
    int32_t v;
    if (op == AR_OP_ABS) {
      const int32_t a = q - zi < 0 ? zi - q : q - zi;
      v = (si != so ? ar_mbqm(a, m, sh) : a) + zo;
    } else if (op == AR_OP_RSQRT) {
      const int32_t x = q - zi;
      if (x <= 0) {
        v = 127;
      } else {
        int32_t im;
        int ish;
        ar_inv_sqrt_multiplier(x, &im, &ish);
        v = ar_mbqm(ar_mbqm(1, im, ish + 20), m, sh - 20) + zo;
      }
    } else if (op == AR_OP_SQRT) {
      v = qun_sqrt(q, si, zi, so, zo);
    } else {
      const float x = si * (float)(q - zi);
      const float y = op == AR_OP_EXP ? qun_exp(x, &p) : qun_log(x, &p);
      v = trunc_i32(roundf(y * (1.0f / so)) + (float)zo);
    }
    st->table[(uint8_t)q] = (uint8_t)(int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
  }
}

/* The int16 forms: ABS per element (rescaled when the scales differ; without quantization a plain
 * |x| that wraps -32768 as TFLite's static_cast does), SQRT per element, EXP / LOG / RSQRT through
 * a float32 ar_lut16.h table (RSQRT of a negative code, which TFLite refuses at invoke, reads the
 * table too). TFLite's GenericPrepare takes zero points 0 for ABS, LOG, RSQRT, SQRT. */
static int qun_plan16(const ar_node_t *node, qact_state_t *st, char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  const ar_op_t op = node->op;
  if (op == AR_OP_ABS && (!in->quant || in->quant->n == 0)) {
    st->kind = QA_ABS16_RAW;
    return 0;
  }
  float si = 0, so = 0;
  int32_t zi = 0, zo = 0;
  int rc;
  if ((rc = ar_k_qparams(node, in, "input 0", &si, &zi, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, o, "output 0", &so, &zo, msg, msg_bytes)))
    return rc;
  if (op != AR_OP_EXP && (zi != 0 || zo != 0))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "int16 input / output zero points %d / %d: "
                    "TFLite's int16 %s takes 0 for both", (int)zi, (int)zo, ar_op_name(op));
  st->in_scale = si;
  st->out_scale = so;
  if (op == AR_OP_ABS) {
    st->kind = QA_ABS16;
    st->rescale = si != so;
    ar_quantize_multiplier((double)(si / so), &st->mult, &st->shift);
  } else if (op == AR_OP_SQRT) {
    st->kind = QA_SQRT16;
  } else {
    st->kind = QA_LUT16;
    const qun_params_t p = {(float)(-32768 - zo) * so, so};
    ar_lut16_fill_float(op == AR_OP_EXP ? qun_exp : op == AR_OP_LOG ? qun_log : qun_rsqrt, &p, si, zi, so, zo,
                        st->lut);
  }
  return 0;
}

/* The int16 LOGISTIC / TANH / LEAKY_RELU parameters into st (see the top of the file). */
static int q16_plan(const ar_node_t *node, qact_state_t *st, float si, int32_t zi, float so, int32_t zo,
                    char *msg, size_t msg_bytes) {
  if (zi != 0 || zo != 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "int16 input / output zero points %d / %d: "
                    "TFLite's int16 %s takes 0 for both", (int)zi, (int)zo, ar_op_name(node->op));
  if (node->op == AR_OP_LEAKY_RELU) {
    const float alpha = node->options ? node->options->leaky_relu.alpha : 0.0f;
    if (!(alpha >= 0.0f))
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "alpha %g: a quantized LEAKY_RELU takes "
                      "alpha >= 0", (double)alpha);
    st->kind = QA_LEAKY16;
    ar_quantize_multiplier((double)(si * alpha / so), &st->m_alpha, &st->sh_alpha);
    ar_quantize_multiplier((double)(si / so), &st->m_id, &st->sh_id);
    return 0;
  }
  const bool logistic = node->op == AR_OP_LOGISTIC;
  int out_log2 = 0;
  if ((logistic && (double)so != 1.0 / 32768.0) || !checked_log2(so, &out_log2) || out_log2 != -15)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "output scale %g: TFLite's int16 %s writes "
                    "scale 2^-15 (1/32768)", (double)so, ar_op_name(node->op));
  int in_log2 = 0;
  const bool pot = checked_log2(si, &in_log2);
  const int left = 12 + in_log2;   /* Q3.12 wants 2^-12 */
  if (pot && (left == 0 || (!logistic && left == 1))) {
    st->kind = logistic ? QA_LOGISTIC16_FX : QA_TANH16_FX;
    st->shift = left;
    return 0;
  }
  /* rescale to 1 / (3 * 4096): +-2^17 stands for +-10.67 */
  double m = (double)si * 4096.0 * 3.0;
  int shift = 0;
  while (m <= 32767.0 / 2.0 && shift <= 30) {
    shift++;
    m *= 2.0;
  }
  if (!(m < 2147483648.0))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input scale %g is too large for TFLite's "
                    "int16 %s (its multiplier overflows int32)", (double)si, ar_op_name(node->op));
  st->kind = logistic ? QA_LOGISTIC16_TAB : QA_TANH16_TAB;
  st->mult = (int32_t)m;
  st->shift = shift;
  return 0;
}

/* The state of `node` (an 8-bit table, or the int16 parameters) into st; 0 or an error naming
 * what is wrong. */
static int qact_plan(const ar_node_t *node, qact_state_t *st, char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  int rc;
  if ((rc = ar_k_check_dtype(node, o, "output 0", in->dtype, msg, msg_bytes))) return rc;
  memset(st, 0, sizeof *st);
  if (is_qunary(node->op) && in->dtype == AR_DTYPE_INT16) return qun_plan16(node, st, msg, msg_bytes);
  if (node->op == AR_OP_ELU && in->dtype != AR_DTYPE_INT8)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0 has dtype %s (TFLite's ELU takes "
                    "float32, int8)", ar_dtype_name(in->dtype));
  if (is_qunary(node->op) && in->dtype != AR_DTYPE_INT8)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0 has dtype %s (TFLite's %s takes "
                    "float32, int8, int16%s)", ar_dtype_name(in->dtype), ar_op_name(node->op),
                    node->op == AR_OP_ABS ? ", int32" : "");
  float si = 0, so = 0;
  int32_t zi = 0, zo = 0;
  if ((rc = ar_k_qparams(node, in, "input 0", &si, &zi, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, o, "output 0", &so, &zo, msg, msg_bytes)))
    return rc;
  if (in->dtype == AR_DTYPE_INT16) return q16_plan(node, st, si, zi, so, zo, msg, msg_bytes);
  st->kind = QA_TABLE8;
  if (is_qunary(node->op)) {
    qun_plan8(node, st, si, zi, so, zo);
    return 0;
  }
  const bool is_signed = in->dtype == AR_DTYPE_INT8;
  const int32_t tmin = is_signed ? -128 : 0, tmax = is_signed ? 127 : 255;
  if (node->op == AR_OP_LEAKY_RELU) {
    const float alpha = node->options ? node->options->leaky_relu.alpha : 0.0f;
    if (!(alpha >= 0.0f))
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "alpha %g: a quantized LEAKY_RELU takes "
                      "alpha >= 0", (double)alpha);
    int32_t m_id, m_a;
    int sh_id, sh_a;
    const float real_alpha = si * alpha / so, real_id = si / so;
    ar_quantize_multiplier((double)real_alpha, &m_a, &sh_a);
    ar_quantize_multiplier((double)real_id, &m_id, &sh_id);
    for (int32_t q = tmin; q <= tmax; q++) {
      const int32_t x = q - zi;
      int32_t v = zo + (x >= 0 ? ar_mbqm(x, m_id, sh_id) : ar_mbqm(x, m_a, sh_a));
      v = v < tmin ? tmin : v > tmax ? tmax : v;
      st->table[(uint8_t)q] = (uint8_t)v;
    }
    return 0;
  }
  if (node->op == AR_OP_TANH || node->op == AR_OP_ELU || node->op == AR_OP_GELU) {
    const bool approx = node->op == AR_OP_GELU && node->options && node->options->gelu.approximate;
    const float inv = 1.0f / so;
    for (int32_t q = tmin; q <= tmax; q++) {
      const float x = si * (float)(q - zi);
      const float y = node->op == AR_OP_TANH ? tanhf(x) : node->op == AR_OP_ELU ? (x < 0.0f ? expm1f(x) : x)
                      : approx ? gelu_approx(x) : gelu_exact(x);
      int32_t v = trunc_i32(roundf(y * inv) + (float)zo);
      v = v < tmin ? tmin : v > tmax ? tmax : v;
      st->table[(uint8_t)q] = (uint8_t)v;
    }
    return 0;
  }
  if (node->op == AR_OP_RELU_N1_TO_1 || node->op == AR_OP_RELU_0_TO_1) {
    /* TFLite QuantizedReluX(-1 or 0, 1): the RELU rescale, clamped to the codes of [min, 1] */
    int32_t m;
    int sh;
    ar_quantize_multiplier((double)(si / so), &m, &sh);
    int32_t lo = zo + (int32_t)roundf((node->op == AR_OP_RELU_N1_TO_1 ? -1.0f : 0.0f) / so);
    int32_t hi = zo + (int32_t)roundf(1.0f / so);
    lo = lo > tmin ? lo : tmin;
    hi = hi < tmax ? hi : tmax;
    for (int32_t q = tmin; q <= tmax; q++) {
      int32_t v = zo + ar_mbqm(q - zi, m, sh);
      v = v < lo ? lo : v > hi ? hi : v;
      st->table[(uint8_t)q] = (uint8_t)v;
    }
    return 0;
  }
  /* HARD_SWISH */
  const float hires = (1.0f / 128.0f) * si;
  const float out_mult = hires / so, reluish_mult = hires / (3.0f / 32768.0f);
  int32_t m32;
  int out_exp, rel_exp;
  ar_quantize_multiplier((double)out_mult, &m32, &out_exp);
  const int16_t out_m16 = down_to_i16(m32);
  if (out_exp > 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input scale %g over 128 x output scale %g "
                    "exceeds 1 (TFLite's quantized HARD_SWISH needs it at most 1)", (double)si, (double)so);
  ar_quantize_multiplier((double)reluish_mult, &m32, &rel_exp);
  const int16_t rel_m16 = down_to_i16(m32);
  for (int32_t q = tmin; q <= tmax; q++) {
    const int16_t x = (int16_t)(q - zi);
    const int16_t hi_in = (int16_t)(x * (1 << 7));
    const int16_t pre_out = srdhm16(hi_in, out_m16);
    int16_t r = hi_in;
    if (rel_exp > 0) r = sat_lshift16(r, rel_exp - 1);
    r = srdhm16(r, rel_m16);
    if (rel_exp > 0) r = sat_lshift16(r, 1);
    if (rel_exp < 0) r = rdivpot16(r, -rel_exp);
    r = (int16_t)((r + (1 << 15)) >> 1);
    const int16_t pre = sdhm16(r, pre_out);
    int32_t v = (int32_t)rdivpot16(pre, -out_exp) + zo;
    v = v < tmin ? tmin : v > tmax ? tmax : v;
    st->table[(uint8_t)q] = (uint8_t)v;
  }
  return 0;
}

int ar__qact_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  qact_state_t st;
  if ((rc = qact_plan(node, &st, msg, msg_bytes))) return rc;
  node->state_bytes = sizeof(qact_state_t);
  node->scratch_bytes = 0;
  const ar_tview_t *in = node->inputs[0];
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

void ar__qact_init(ar_node_t *node) {
  qact_state_t st;
  char msg[8];
  if (qact_plan(node, &st, msg, sizeof msg) == 0) ar_k_store_state(node, &st, sizeof st);
}

/* TFLite's int16 LOGISTIC on the table path: x in units of 10.67 / 2^17, 9 fractional bits of |x|
 * between entries, Q0.16 + 9 bits, mirrored below 0 (1 - sigmoid(|x|)), back to Q0.15. */
static int16_t logistic16_tab(int16_t q, int32_t mult, int shift, int32_t rnd) {
  const int32_t x = (int32_t)((uint32_t)q * (uint32_t)mult + (uint32_t)rnd) >> shift;   /* wraps as TFLite's int32 */
  const uint32_t ax = x < 0 ? 0u - (uint32_t)x : (uint32_t)x;
  const uint32_t uh = ax >> 9;
  uint32_t r;
  if (uh >= 255) {
    r = 0x7fffu << 10;
  } else {
    const uint32_t ua = sigmoid_q16[uh], ub = sigmoid_q16[uh + 1];
    r = (ua << 9) + (ax & 0x1ffu) * (ub - ua);
  }
  r = x >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
  return (int16_t)(r >> 10);
}

/* TFLite's int16 TANH on the table path: tanh(x) = 2 sigmoid(2x) - 1, 8 fractional bits between
 * entries, Q0.16 + 8 bits moved to [-1, 1), back to Q0.15. */
static int16_t tanh16_tab(int16_t q, int32_t mult, int shift, int32_t rnd) {
  const int32_t x = (int32_t)((uint32_t)q * (uint32_t)mult + (uint32_t)rnd) >> shift;
  const uint32_t ax = x < 0 ? 0u - (uint32_t)x : (uint32_t)x;
  const uint32_t uh = ax >> 8;
  int32_t r;
  if (uh >= 255) {
    r = 0xffff << 8;
  } else {
    const uint32_t ua = sigmoid_q16[uh], ub = sigmoid_q16[uh + 1];
    r = (int32_t)((ua << 8) + (ax & 0xffu) * (ub - ua));
  }
  r = x >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
  return (int16_t)(r >> 8);
}

/* TFLite's AVX2 MultiplyByQuantizedMultiplier lane: (x << left) * m / 2^31 floored (the low 32 bits
 * of the 64-bit product shifted right), then a rounding right shift with ties up (saturating at
 * INT32_MAX where the nudge overflows). */
static int32_t mbqm_avx2(int32_t x, int32_t m, int shift) {
  const int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
  const int32_t xl = (int32_t)((uint32_t)x << left);
  const int32_t v = (int32_t)(uint32_t)(uint64_t)(((int64_t)xl * m) >> 31);
  if (right == 0) return v;
  const int32_t nudge = 1 << (right - 1);
  if (v > INT32_MAX - nudge) return INT32_MAX;
  return (v + nudge) >> right;
}

typedef struct {
  const qact_state_t *st;
  const int16_t *in;
  int16_t *out;
  int64_t n;
} q16_job_t;

/* Elements [i0, i1) of an int16 LOGISTIC / TANH / LEAKY_RELU. */
static void q16_range(void *ctx, int64_t i0, int64_t i1) {
  const q16_job_t *j = ctx;
  const qact_state_t *st = j->st;
  const int16_t *in = j->in;
  int16_t *out = j->out;
  const int32_t rnd = st->shift > 0 ? 1 << (st->shift - 1) : 0;
  switch (st->kind) {
  case QA_LOGISTIC16_FX:
    for (int64_t i = i0; i < i1; i++) out[i] = ar_fx16_logistic(in[i], 3);
    break;
  case QA_TANH16_FX:
    for (int64_t i = i0; i < i1; i++) out[i] = ar_fx16_tanh(ar_fx16_mulpot(in[i], st->shift), 3);
    break;
  case QA_LOGISTIC16_TAB:
    for (int64_t i = i0; i < i1; i++) out[i] = logistic16_tab(in[i], st->mult, st->shift, rnd);
    break;
  case QA_TANH16_TAB:
    for (int64_t i = i0; i < i1; i++) out[i] = tanh16_tab(in[i], st->mult, st->shift, rnd);
    break;
  case QA_ABS16:
    for (int64_t i = i0; i < i1; i++) {
      const int32_t a = in[i] < 0 ? -(int32_t)in[i] : in[i];
      const int32_t v = st->rescale ? ar_mbqm(a, st->mult, st->shift) : a;
      out[i] = (int16_t)(v > INT16_MAX ? INT16_MAX : v);
    }
    break;
  case QA_ABS16_RAW:
    for (int64_t i = i0; i < i1; i++) out[i] = (int16_t)(uint16_t)(in[i] < 0 ? -(int32_t)in[i] : in[i]);
    break;
  case QA_LUT16:
    for (int64_t i = i0; i < i1; i++) out[i] = ar_lut16_lookup(st->lut, in[i]);
    break;
  case QA_SQRT16:
    for (int64_t i = i0; i < i1; i++) {
      const int32_t v = qun_sqrt(in[i], st->in_scale, 0, st->out_scale, 0);
      out[i] = (int16_t)(v < INT16_MIN ? INT16_MIN : v > INT16_MAX ? INT16_MAX : v);
    }
    break;
  default: {   /* QA_LEAKY16: the AVX2 blocks of 16 from the start, then the scalar tail */
    const int64_t blocks = j->n / 16 * 16;
    for (int64_t i = i0; i < i1; i++) {
      const int32_t x = in[i];
      int32_t v;
      if (i < blocks) v = x > 0 ? mbqm_avx2(x, st->m_id, st->sh_id) : mbqm_avx2(x, st->m_alpha, st->sh_alpha);
      else v = x >= 0 ? ar_mbqm(x, st->m_id, st->sh_id) : ar_mbqm(x, st->m_alpha, st->sh_alpha);
      out[i] = (int16_t)(v < INT16_MIN ? INT16_MIN : v > INT16_MAX ? INT16_MAX : v);
    }
    break;
  }
  }
}

/* The least elements worth a chunk of their own on the thread pool. */
#define Q16_CHUNK_ELEMS (16 * 1024)

void ar__qact_eval(const ar_node_t *node) {
  const qact_state_t *st = node->state;
  const int64_t n = ar_k_elements(node->inputs[0]);
  if (st->kind == QA_TABLE8) {
    ar__lut8_node(node, st->table, node->inputs[0]->data, node->outputs[0]->data, n);
    return;
  }
  q16_job_t j = {st, node->inputs[0]->data, node->outputs[0]->data, n};
  ar_parallel_for(node, n, ar_parallel_grain(n, 1, Q16_CHUNK_ELEMS, 16), q16_range, &j);
}

/* ---- PRELU, uint8 / int8 (prelu.cc Prepare, reference BroadcastPrelu4DSlow / Prelu) ----
 * x = q - z_in; x >= 0: MultiplyByQuantizedMultiplier(x, s_in / s_out); else with a = alpha code -
 * z_alpha: MultiplyByQuantizedMultiplier(x * a, s_in * s_alpha / s_out); + z_out, clamped. The
 * input and alpha broadcast against each other (NumPy rules; TFLite's kernel stops at rank 4). */

typedef struct {
  int32_t in_zp, alpha_zp, out_zp, m1, m2;
  int sh1, sh2;
  bool is_signed;
  int32_t rank;
  int32_t dims[AR_MAX_RANK];
  int64_t s_in[AR_MAX_RANK], s_alpha[AR_MAX_RANK];
} qprelu_state_t;

static void bstrides(const ar_tview_t *t, int32_t r, int64_t *stride) {
  int64_t s = 1;
  for (int32_t i = r - 1; i >= 0; i--) {
    const int32_t it = i - (r - t->rank);
    const int32_t d = it >= 0 ? t->dims[it] : 1;
    stride[i] = d == 1 ? 0 : s;
    s *= d;
  }
}

static int qprelu_plan(const ar_node_t *node, qprelu_state_t *st, char *msg, size_t msg_bytes) {
  const ar_tview_t *in = node->inputs[0], *al = node->inputs[1], *o = node->outputs[0];
  int rc;
  memset(st, 0, sizeof *st);
  if ((rc = ar_k_check_dtype(node, al, "input 1 (alpha)", in->dtype, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, o, "output 0", in->dtype, msg, msg_bytes)))
    return rc;
  float si = 0, sa = 0, so = 0;
  if ((rc = ar_k_qparams(node, in, "input 0", &si, &st->in_zp, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, al, "input 1 (alpha)", &sa, &st->alpha_zp, msg, msg_bytes)) ||
      (rc = ar_k_qparams(node, o, "output 0", &so, &st->out_zp, msg, msg_bytes)))
    return rc;
  st->is_signed = in->dtype == AR_DTYPE_INT8;
  const float r1 = si / so, r2 = si * sa / so;
  ar_quantize_multiplier((double)r1, &st->m1, &st->sh1);
  ar_quantize_multiplier((double)r2, &st->m2, &st->sh2);
  const int32_t r = in->rank > al->rank ? in->rank : al->rank;
  for (int32_t i = 0; i < r; i++) {
    const int32_t ii = i - (r - in->rank), ia = i - (r - al->rank);
    const int32_t di = ii >= 0 ? in->dims[ii] : 1, da = ia >= 0 ? al->dims[ia] : 1;
    if (di != da && di != 1 && da != 1) {
      char x[96], y[96];
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input shape %s and alpha shape %s do not broadcast",
                      ar_k_dims_str(x, sizeof x, in->rank, in->dims), ar_k_dims_str(y, sizeof y, al->rank, al->dims));
    }
    st->dims[i] = di == 1 ? da : di;
  }
  st->rank = r;
  bstrides(in, r, st->s_in);
  bstrides(al, r, st->s_alpha);
  return 0;
}

int ar__qprelu_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  qprelu_state_t st;
  if ((rc = qprelu_plan(node, &st, msg, msg_bytes))) return rc;
  node->state_bytes = sizeof(qprelu_state_t);
  node->scratch_bytes = 0;
  return ar_k_check_output_shape(node, st.rank, st.dims, msg, msg_bytes);
}

void ar__qprelu_init(ar_node_t *node) {
  qprelu_state_t st;
  char msg[8];
  if (qprelu_plan(node, &st, msg, sizeof msg) == 0) ar_k_store_state(node, &st, sizeof st);
}

void ar__qprelu_eval(const ar_node_t *node) {
  const qprelu_state_t *st = node->state;
  const ar_tview_t *o = node->outputs[0];
  const int64_t n = ar_k_elements(o);
  if (n == 0) return;
  const uint8_t *pu = node->inputs[0]->data, *au = node->inputs[1]->data;
  const int8_t *ps = node->inputs[0]->data, *as = node->inputs[1]->data;
  const int32_t tmin = st->is_signed ? -128 : 0, tmax = st->is_signed ? 127 : 255;
  int32_t idx[AR_MAX_RANK] = {0};
  int64_t oi = 0, oa = 0;
  for (int64_t i = 0; i < n; i++) {
    const int32_t x = (st->is_signed ? ps[oi] : pu[oi]) - st->in_zp;
    int32_t v;
    if (x >= 0) {
      v = ar_mbqm(x, st->m1, st->sh1);
    } else {
      const int32_t a = (st->is_signed ? as[oa] : au[oa]) - st->alpha_zp;
      v = ar_mbqm(x * a, st->m2, st->sh2);
    }
    v += st->out_zp;
    v = v < tmin ? tmin : v > tmax ? tmax : v;
    if (st->is_signed) ((int8_t *)o->data)[i] = (int8_t)v;
    else ((uint8_t *)o->data)[i] = (uint8_t)v;
    for (int32_t d = st->rank - 1; d >= 0; d--) {
      oi += st->s_in[d];
      oa += st->s_alpha[d];
      if (++idx[d] < st->dims[d]) break;
      oi -= st->s_in[d] * st->dims[d];
      oa -= st->s_alpha[d] * st->dims[d];
      idx[d] = 0;
    }
  }
}
