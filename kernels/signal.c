/* signal.c - TensorFlow Lite Micro's Signal library custom operators (the audio front end of
 * micro_speech's audio_preprocessor models), with the integer arithmetic of TFLM's reference
 * implementation (tensorflow/lite/micro signal/src, signal/micro/kernels): written from its
 * documented behaviour, bit for bit where the reference defines it.
 *
 * Options are a FlexBuffers map in custom_options (loader/ar_flexbuf.h); every key TFLM reads is
 * required (TFLM reads its map by index in sorted key order; a lookup by name is the same).
 *   SignalWindow (shift): int16 x [..., N] * int16 w[W] (N a multiple of W, applied per chunk of
 *     W), (x * w) >> shift saturated to int16.
 *   SignalFftAutoScale: int16 [N] -> int16 [N], int32 scalar scale_bits: s = 15 - msb(max|x|)
 *     (msb(0) = 32 as TFLM's __builtin_clz branch, so silence gives 0), at least 0; out = x * 2^s.
 *   SignalRfft (T, fft_length): T [..., L] -> T [..., 2 (fft_length/2 + 1)], T int16, int32 or
 *     float32: each frame zero-padded to fft_length and transformed by kissfft's real FFT (radix
 *     4 first then 2; kernels/signal_kissfft.h). int16 / int32 are kissfft's FIXED_POINT 16 / 32:
 *     every stage scaled by 1/radix with rounding (products in int32 / int64, + 2^14 >> 15 /
 *     + 2^30 >> 31), twiddles floor(0.5 + 32767 / 2147483647 cos/sin); float32 unscaled, float
 *     twiddles. fft_length a power of two >= 4.
 *   SignalEnergy (start_index, end_index): int16 complex [2M] -> uint32 [M]: re^2 + im^2 for
 *     bins [start, end); the bins outside are written 0 (TFLM leaves them untouched).
 *   SignalFilterBank (num_channels): uint32 energy [M], int16 weights, unweights, channel
 *     frequency starts, weight starts, widths (num_channels + 1 each, constants) -> uint64
 *     [num_channels]: the triangular mel accumulation (channel 0 of num_channels + 1 is scratch,
 *     in modular uint64 arithmetic as TFLM's).
 *   SignalFilterBankSquareRoot: uint64 [C], int32 scalar scale_bits -> uint32 [C]: isqrt with
 *     TFLM's rounding (the 32-bit shortcut when the upper word is clear) >> scale_bits (clamped
 *     to 0..31).
 *   SignalFilterBankSpectralSubtraction (alternate_one_minus_smoothing, alternate_smoothing,
 *     clamping, min_signal_remaining, num_channels, one_minus_smoothing, smoothing,
 *     smoothing_bits, spectral_subtraction_bits): uint32 [C] -> uint32 [C] and the uint32 [C]
 *     noise estimate; the estimate is the operator's per-stream state (ar_node_t.stream: a piece
 *     of the interpreter's state slot, so each session has its own; zero at a reset, as TFLM's at
 *     prepare and Reset).
 *   SignalPCAN (snr_shift): uint32 [C], uint32 noise estimate [C], int16 gain LUT [>= 125] ->
 *     uint32 [C]: per-channel automatic gain control (wide dynamic function, then the shrink).
 *   SignalFilterBankLog (input_correction_bits, output_scale): uint32 [C] -> int16 [C]:
 *     Q16 natural log through a 128-segment table (generated at init: round(65536 (log2(1 + s/128)
 *     - s/128))), scaled, saturated to INT16_MAX; 0 for values <= 1.
 * The integer overflows TFLM's C++ leaves to the hardware (int32 products, int16 stores) wrap here
 * explicitly, through unsigned arithmetic.
 */
#include <math.h>
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "loader/ar_flexbuf.h"

/* ---- options ---- */

/* Read the named integer options of the node's FlexBuffers map into v[]; all required. */
static int sig_options(const ar_node_t *node, const char *const *keys, int n, int64_t *v, char *msg,
                       size_t msg_bytes) {
  ar_flexmap_t m;
  if (!node->custom_options || ar_flexmap_open(node->custom_options, node->custom_options_bytes, &m) != 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "custom_options (%u bytes) are not a FlexBuffers map",
                    (unsigned)node->custom_options_bytes);
  for (int i = 0; i < n; i++) {
    double d;
    const int rc = ar_flexmap_number(&m, keys[i], &d);
    if (rc < 0)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "custom option %s is malformed or not a number", keys[i]);
    if (rc == 0) return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "custom option %s is missing", keys[i]);
    if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != floor(d))
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "custom option %s = %g is not an int32", keys[i], d);
    v[i] = (int64_t)d;
  }
  return 0;
}

/* Options decoded at prepare, used at eval: node state holds this struct first. */
typedef struct sig_params {
  int64_t v[9];
} sig_params_t;

static int sig_read_params(const ar_node_t *node, const char *const *keys, int n, sig_params_t *p,
                           char *msg, size_t msg_bytes) {
  memset(p, 0, sizeof *p);
  return sig_options(node, keys, n, p->v, msg, msg_bytes);
}

static int need_rank(const ar_node_t *node, const ar_tview_t *t, const char *what, int32_t rank,
                     char *msg, size_t msg_bytes) {
  if (t->rank == rank) return 0;
  return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "%s has rank %d, expected %d", what, (int)t->rank, (int)rank);
}

static uint32_t msb32(uint32_t x) { return x ? 32u - (uint32_t)__builtin_clz(x) : 32u; }
static uint32_t msb64(uint64_t x) { return x ? 64u - (uint32_t)__builtin_clzll(x) : 64u; }
static int16_t sat16(int32_t v) { return v < INT16_MIN ? INT16_MIN : v > INT16_MAX ? INT16_MAX : (int16_t)v; }

/* ---- SignalWindow ---- */

static const char *const window_keys[] = {"shift"};

static int window_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *w = node->inputs[1], *o = node->outputs[0];
  sig_params_t p;
  if ((rc = sig_read_params(node, window_keys, 1, &p, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_INT16, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, w, "weights", AR_DTYPE_INT16, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, o, "output 0", AR_DTYPE_INT16, msg, msg_bytes)) ||
      (rc = need_rank(node, w, "weights", 1, msg, msg_bytes)))
    return rc;
  if (in->rank < 1) return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 0 is a scalar");
  if (p.v[0] < 0 || p.v[0] > 31)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "shift %lld is outside 0..31", (long long)p.v[0]);
  const int64_t n = ar_k_elements(in);
  if (w->dims[0] < 1 || n % w->dims[0] != 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input of %lld elements is not a whole number of %d-sample windows",
                    (long long)n, (int)w->dims[0]);
  node->state_bytes = sizeof(sig_params_t);
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

static void params_init(ar_node_t *node, const char *const *keys, int n) {
  char msg[8];
  (void)sig_read_params(node, keys, n, node->state, msg, sizeof msg);   /* checked at prepare */
}

static void window_init(ar_node_t *node) { params_init(node, window_keys, 1); }

static void window_eval(const ar_node_t *node) {
  const sig_params_t *p = node->state;
  const int16_t *x = node->inputs[0]->data, *w = node->inputs[1]->data;
  int16_t *o = node->outputs[0]->data;
  const int64_t n = ar_k_elements(node->inputs[0]), ws = node->inputs[1]->dims[0];
  const int shift = (int)p->v[0];
  for (int64_t i = 0; i < n; i++) o[i] = sat16(((int32_t)x[i] * (int32_t)w[i % ws]) >> shift);
}

/* ---- SignalFftAutoScale ---- */

static int autoscale_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 2, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  if ((rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_INT16, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_INT16, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[1], "output 1", AR_DTYPE_INT32, msg, msg_bytes)) ||
      (rc = need_rank(node, in, "input 0", 1, msg, msg_bytes)))
    return rc;
  node->state_bytes = 0;
  if ((rc = ar_k_check_output_shape(node, 1, in->dims, msg, msg_bytes))) return rc;
  return ar_k_check_output_shape_at(node, 1, 0, NULL, msg, msg_bytes);
}

static void autoscale_eval(const ar_node_t *node) {
  const int16_t *x = node->inputs[0]->data;
  int16_t *o = node->outputs[0]->data;
  int32_t *scale_out = node->outputs[1]->data;
  const int64_t n = node->inputs[0]->dims[0];
  int16_t max = 0;
  for (int64_t i = 0; i < n; i++) {   /* TFLM's MaxAbs16: -32768 stays -32768 */
    const int16_t v = x[i];
    if (v > max) max = v;
    else if (-(int32_t)v > max) max = (int16_t)(uint16_t)(-(int32_t)v);
  }
  int32_t s = 16 - (int32_t)msb32((uint32_t)(int32_t)max) - 1;
  if (s < 0) s = 0;
  for (int64_t i = 0; i < n; i++) o[i] = (int16_t)(uint16_t)((uint32_t)(int32_t)x[i] << s);
  *scale_out = s;
}

/* ---- SignalRfft: kissfft's real FFT, fixed point (16 and 32 bits) and float ---- */

typedef struct cpx16 { int16_t r, i; } cpx16_t;
typedef struct cpx32 { int32_t r, i; } cpx32_t;
typedef struct cpxf { float r, i; } cpxf_t;

static const char *const rfft_keys[] = {"T", "fft_length"};

/* State: params, then ncfft twiddles, then ncfft/2 super twiddles (of the T's complex type). */
typedef struct rfft_state {
  sig_params_t p;
  int32_t ncfft, n_factors;
  int32_t factors[64];
} rfft_state_t;

/* int16 (FIXED_POINT 16): Q15 rounding of a product sum, (x + 2^14) >> 15 truncated to int16. */
static int16_t q15_round(int64_t x) {
  const int32_t v = (int32_t)((uint32_t)(uint64_t)x + (1u << 14));
  return (int16_t)(uint16_t)(uint32_t)(v >> 15);
}
static void fixdiv_i16(cpx16_t *c, int div) {
  const int32_t k = 32767 / div;
  c->r = q15_round((int64_t)c->r * k);
  c->i = q15_round((int64_t)c->i * k);
}
static cpx16_t cmul_i16(cpx16_t a, cpx16_t b) {
  cpx16_t m;
  m.r = q15_round((int64_t)(int32_t)((uint32_t)((int32_t)a.r * b.r) - (uint32_t)((int32_t)a.i * b.i)));
  m.i = q15_round((int64_t)(int32_t)((uint32_t)((int32_t)a.r * b.i) + (uint32_t)((int32_t)a.i * b.r)));
  return m;
}
static int16_t sadd_i16(int16_t a, int16_t b) { return (int16_t)(uint16_t)(a + b); }
static int16_t ssub_i16(int16_t a, int16_t b) { return (int16_t)(uint16_t)(a - b); }
static cpx16_t cadd_i16(cpx16_t a, cpx16_t b) { return (cpx16_t){sadd_i16(a.r, b.r), sadd_i16(a.i, b.i)}; }
static cpx16_t csub_i16(cpx16_t a, cpx16_t b) { return (cpx16_t){ssub_i16(a.r, b.r), ssub_i16(a.i, b.i)}; }
static int16_t half_add_i16(int16_t a, int16_t b) { return (int16_t)(uint16_t)((a + b) >> 1); }
static int16_t half_sub_i16(int16_t a, int16_t b) { return (int16_t)(uint16_t)((a - b) >> 1); }
static cpx16_t cneg_i_i16(cpx16_t c) { return (cpx16_t){c.r, (int16_t)(uint16_t)(-(int32_t)c.i)}; }

/* int32 (FIXED_POINT 32): products in int64, (x + 2^30) >> 31 truncated to int32; int32 sums wrap. */
static int32_t q31_round(int64_t x) {
  const int64_t v = (int64_t)((uint64_t)x + (1ull << 30));
  return (int32_t)(uint32_t)(uint64_t)(v >> 31);
}
static void fixdiv_i32(cpx32_t *c, int div) {
  const int64_t k = 2147483647 / div;
  c->r = q31_round((int64_t)c->r * k);
  c->i = q31_round((int64_t)c->i * k);
}
static cpx32_t cmul_i32(cpx32_t a, cpx32_t b) {
  cpx32_t m;
  m.r = q31_round((int64_t)((uint64_t)((int64_t)a.r * b.r) - (uint64_t)((int64_t)a.i * b.i)));
  m.i = q31_round((int64_t)((uint64_t)((int64_t)a.r * b.i) + (uint64_t)((int64_t)a.i * b.r)));
  return m;
}
static int32_t sadd_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static int32_t ssub_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a - (uint32_t)b); }
static cpx32_t cadd_i32(cpx32_t a, cpx32_t b) { return (cpx32_t){sadd_i32(a.r, b.r), sadd_i32(a.i, b.i)}; }
static cpx32_t csub_i32(cpx32_t a, cpx32_t b) { return (cpx32_t){ssub_i32(a.r, b.r), ssub_i32(a.i, b.i)}; }
static int32_t half_add_i32(int32_t a, int32_t b) { return sadd_i32(a, b) >> 1; }
static int32_t half_sub_i32(int32_t a, int32_t b) { return ssub_i32(a, b) >> 1; }
static cpx32_t cneg_i_i32(cpx32_t c) { return (cpx32_t){c.r, (int32_t)(0u - (uint32_t)c.i)}; }

/* float: no stage scaling, HALF_OF is * 0.5f. */
static void fixdiv_f32(cpxf_t *c, int div) { (void)c; (void)div; }
static cpxf_t cmul_f32(cpxf_t a, cpxf_t b) { return (cpxf_t){a.r * b.r - a.i * b.i, a.r * b.i + a.i * b.r}; }
static float sadd_f32(float a, float b) { return a + b; }
static float ssub_f32(float a, float b) { return a - b; }
static cpxf_t cadd_f32(cpxf_t a, cpxf_t b) { return (cpxf_t){a.r + b.r, a.i + b.i}; }
static cpxf_t csub_f32(cpxf_t a, cpxf_t b) { return (cpxf_t){a.r - b.r, a.i - b.i}; }
static float half_add_f32(float a, float b) { return (a + b) * 0.5f; }
static float half_sub_f32(float a, float b) { return (a - b) * 0.5f; }
static cpxf_t cneg_i_f32(cpxf_t c) { return (cpxf_t){c.r, -c.i}; }

#define KF_C cpx16_t
#define KF_N(x) x##_i16
#include "kernels/signal_kissfft.h"
#undef KF_C
#undef KF_N
#define KF_C cpx32_t
#define KF_N(x) x##_i32
#include "kernels/signal_kissfft.h"
#undef KF_C
#undef KF_N
#define KF_C cpxf_t
#define KF_N(x) x##_f32
#include "kernels/signal_kissfft.h"
#undef KF_C
#undef KF_N

/* Bytes of one real sample of T (int16, int32, float32). */
static size_t rfft_sample_bytes(int64_t t) { return t == AR_DTYPE_INT16 ? 2 : 4; }

static size_t rfft_state_bytes(int32_t ncfft, size_t sample_bytes) {
  return sizeof(rfft_state_t) + (size_t)(ncfft + ncfft / 2) * 2 * sample_bytes;
}

static int rfft_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  sig_params_t p;
  if ((rc = sig_read_params(node, rfft_keys, 2, &p, msg, msg_bytes))) return rc;
  if (p.v[0] != AR_DTYPE_INT16 && p.v[0] != AR_DTYPE_INT32 && p.v[0] != AR_DTYPE_FLOAT32)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "T = %lld (%s): expected FLOAT32, INT16 or INT32",
                    (long long)p.v[0], p.v[0] >= 0 && p.v[0] < 64 ? ar_dtype_name((ar_dtype_t)p.v[0]) : "?");
  const ar_dtype_t t = (ar_dtype_t)p.v[0];
  if ((rc = ar_k_check_dtype(node, in, "input 0", t, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, o, "output 0", t, msg, msg_bytes)))
    return rc;
  const int64_t len = p.v[1];
  if (len < 4 || len > (1 << 16) || (len & (len - 1)) != 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "fft_length %lld is not a power of two in 4..65536",
                    (long long)len);
  if (in->rank < 1) return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 0 is a scalar");
  if (in->dims[in->rank - 1] > len)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "frames of %d samples are longer than fft_length %lld",
                    (int)in->dims[in->rank - 1], (long long)len);
  int32_t dims[AR_MAX_RANK];
  memcpy(dims, in->dims, sizeof(int32_t) * (size_t)in->rank);
  dims[in->rank - 1] = (int32_t)(2 * (len / 2 + 1));
  const size_t sb = rfft_sample_bytes(t);
  node->state_bytes = rfft_state_bytes((int32_t)(len / 2), sb);
  /* scratch: the zero-padded frame (len samples) and kissfft's tmpbuf (len/2 complex) */
  node->scratch_bytes = (uint64_t)len * sb + (uint64_t)(len / 2) * 2 * sb;
  return ar_k_check_output_shape(node, in->rank, dims, msg, msg_bytes);
}

/* kissfft's kf_cexp: fixed point floor(0.5 + SAMP_MAX cos/sin), float (float)cos/sin. */
static void rfft_twiddle(void *tw, int64_t t, int32_t i, double ph) {
  if (t == AR_DTYPE_INT16) {
    ((cpx16_t *)tw)[i] = (cpx16_t){(int16_t)floor(0.5 + 32767.0 * cos(ph)), (int16_t)floor(0.5 + 32767.0 * sin(ph))};
  } else if (t == AR_DTYPE_INT32) {
    ((cpx32_t *)tw)[i] = (cpx32_t){(int32_t)floor(0.5 + 2147483647.0 * cos(ph)),
                                   (int32_t)floor(0.5 + 2147483647.0 * sin(ph))};
  } else {
    ((cpxf_t *)tw)[i] = (cpxf_t){(float)cos(ph), (float)sin(ph)};
  }
}

static void rfft_init(ar_node_t *node) {
  rfft_state_t *s = node->state;
  params_init(node, rfft_keys, 2);
  const int64_t t = s->p.v[0];
  const int32_t ncfft = (int32_t)(s->p.v[1] / 2);
  s->ncfft = ncfft;
  char *tw = (char *)(s + 1), *super = tw + (size_t)ncfft * 2 * rfft_sample_bytes(t);
  const double pi = 3.14159265358979323846264338327950288;
  for (int32_t i = 0; i < ncfft; i++) rfft_twiddle(tw, t, i, -2.0 * pi * i / ncfft);
  for (int32_t i = 0; i < ncfft / 2; i++) rfft_twiddle(super, t, i, -pi * ((double)(i + 1) / ncfft + 0.5));
  /* kissfft's factorization: radix 4 while it divides, then 2 (powers of two only here). */
  int32_t n = ncfft, p = 4, k = 0;
  while (n > 1) {
    while (n % p) p = 2;
    n /= p;
    s->factors[k++] = p;
    s->factors[k++] = n;
  }
  s->n_factors = k / 2;
}

static void rfft_eval(const ar_node_t *node) {
  const rfft_state_t *s = node->state;
  const int64_t t = s->p.v[0];
  const size_t sb = rfft_sample_bytes(t);
  const int32_t ncfft = s->ncfft, len = 2 * ncfft;
  const char *tw = (const char *)(s + 1), *super = tw + (size_t)ncfft * 2 * sb;
  const ar_tview_t *in_t = node->inputs[0];
  const int32_t flen = in_t->dims[in_t->rank - 1];
  const int64_t frames = flen ? ar_k_elements(in_t) / flen : 0;
  char *work = node->scratch, *tmp = work + (size_t)len * sb;
  const char *x = in_t->data;
  char *out = node->outputs[0]->data;
  for (int64_t f = 0; f < frames; f++) {
    memcpy(work, x + (size_t)(f * flen) * sb, (size_t)flen * sb);
    memset(work + (size_t)flen * sb, 0, (size_t)(len - flen) * sb);
    char *fd = out + (size_t)(f * 2 * (ncfft + 1)) * sb;
    if (t == AR_DTYPE_INT16)
      kf_rfft_frame_i16((const cpx16_t *)work, (cpx16_t *)tmp, (cpx16_t *)fd, ncfft, s->factors,
                        (const cpx16_t *)tw, (const cpx16_t *)super);
    else if (t == AR_DTYPE_INT32)
      kf_rfft_frame_i32((const cpx32_t *)work, (cpx32_t *)tmp, (cpx32_t *)fd, ncfft, s->factors,
                        (const cpx32_t *)tw, (const cpx32_t *)super);
    else
      kf_rfft_frame_f32((const cpxf_t *)work, (cpxf_t *)tmp, (cpxf_t *)fd, ncfft, s->factors,
                        (const cpxf_t *)tw, (const cpxf_t *)super);
  }
}

/* ---- SignalEnergy ---- */

static const char *const energy_keys[] = {"end_index", "start_index"};

static int energy_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  sig_params_t p;
  if ((rc = sig_read_params(node, energy_keys, 2, &p, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_INT16, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, o, "output 0", AR_DTYPE_UINT32, msg, msg_bytes)) ||
      (rc = need_rank(node, in, "input 0", 1, msg, msg_bytes)) ||
      (rc = need_rank(node, o, "output 0", 1, msg, msg_bytes)))
    return rc;
  const int64_t bins = in->dims[0] / 2;
  if (in->dims[0] % 2 != 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input of %d int16 is not complex (even length)", (int)in->dims[0]);
  if (o->dims[0] != bins)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "output has %d bins, the input %lld", (int)o->dims[0], (long long)bins);
  if (p.v[1] < 0 || p.v[0] < p.v[1] || p.v[0] > bins)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "bins [start_index %lld, end_index %lld) are not inside [0, %lld]",
                    (long long)p.v[1], (long long)p.v[0], (long long)bins);
  node->state_bytes = sizeof(sig_params_t);
  return 0;
}

static void energy_init(ar_node_t *node) { params_init(node, energy_keys, 2); }

static void energy_eval(const ar_node_t *node) {
  const sig_params_t *p = node->state;
  const int16_t *z = node->inputs[0]->data;
  uint32_t *o = node->outputs[0]->data;
  const int64_t bins = node->outputs[0]->dims[0], start = p->v[1], end = p->v[0];
  for (int64_t i = 0; i < bins; i++) {
    if (i < start || i >= end) { o[i] = 0; continue; }
    const int32_t re = z[2 * i], im = z[2 * i + 1];
    o[i] = (uint32_t)(re * re) + (uint32_t)(im * im);
  }
}

/* ---- SignalFilterBank ---- */

static const char *const fb_keys[] = {"num_channels"};

static int filter_bank_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 6, 6, 6, 1, msg, msg_bytes);
  if (rc) return rc;
  sig_params_t p;
  if ((rc = sig_read_params(node, fb_keys, 1, &p, msg, msg_bytes))) return rc;
  const ar_tview_t *in = node->inputs[0], *o = node->outputs[0];
  static const char *const what[6] = {"input 0", "weights", "unweights", "channel_frequency_starts",
                                      "channel_weight_starts", "channel_widths"};
  if ((rc = ar_k_check_dtype(node, in, what[0], AR_DTYPE_UINT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, o, "output 0", AR_DTYPE_UINT64, msg, msg_bytes)) ||
      (rc = need_rank(node, o, "output 0", 1, msg, msg_bytes)))
    return rc;
  for (int i = 0; i < 6; i++) {
    if ((rc = need_rank(node, node->inputs[i], what[i], 1, msg, msg_bytes))) return rc;
    if (i > 0) {
      if ((rc = ar_k_check_dtype(node, node->inputs[i], what[i], AR_DTYPE_INT16, msg, msg_bytes))) return rc;
      if (!node->inputs[i]->is_constant || !node->inputs[i]->data)
        return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s is not a constant (the bank's layout is "
                        "checked at load)", what[i]);
    }
  }
  const int64_t nc = p.v[0];
  if (nc < 1 || nc != o->dims[0])
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "num_channels %lld, output has %d", (long long)nc, (int)o->dims[0]);
  if (node->inputs[2]->dims[0] != node->inputs[1]->dims[0])
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "unweights has %d elements, weights %d",
                    (int)node->inputs[2]->dims[0], (int)node->inputs[1]->dims[0]);
  for (int i = 3; i < 6; i++)
    if (node->inputs[i]->dims[0] < nc + 1)
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "%s has %d elements, need num_channels + 1 = %lld", what[i],
                      (int)node->inputs[i]->dims[0], (long long)(nc + 1));
  const int16_t *fs = node->inputs[3]->data, *ws = node->inputs[4]->data, *wd = node->inputs[5]->data;
  for (int64_t c = 0; c <= nc; c++) {
    if (fs[c] < 0 || ws[c] < 0 || wd[c] < 0 || fs[c] + wd[c] > in->dims[0] || ws[c] + wd[c] > node->inputs[1]->dims[0])
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "channel %lld (frequency start %d, weight start %d, width %d) "
                      "reaches past the %d energy bins or %d weights", (long long)c, fs[c], ws[c], wd[c],
                      (int)in->dims[0], (int)node->inputs[1]->dims[0]);
  }
  node->state_bytes = sizeof(sig_params_t);
  return 0;
}

static void filter_bank_init(ar_node_t *node) { params_init(node, fb_keys, 1); }

static void filter_bank_eval(const ar_node_t *node) {
  const sig_params_t *p = node->state;
  const uint32_t *e = node->inputs[0]->data;
  const int16_t *w = node->inputs[1]->data, *uw = node->inputs[2]->data, *fs = node->inputs[3]->data,
                *ws = node->inputs[4]->data, *wd = node->inputs[5]->data;
  uint64_t *o = node->outputs[0]->data;
  const int64_t nc = p->v[0];
  uint64_t acc = 0, unacc = 0;
  for (int64_t c = 0; c <= nc; c++) {
    for (int j = 0; j < wd[c]; j++) {
      const uint64_t v = e[fs[c] + j];
      acc += (uint64_t)(int64_t)w[ws[c] + j] * v;
      unacc += (uint64_t)(int64_t)uw[ws[c] + j] * v;
    }
    if (c > 0) o[c - 1] = acc;   /* channel 0 is scratch */
    acc = unacc;
    unacc = 0;
  }
}

/* ---- SignalFilterBankSquareRoot ---- */

static uint16_t isqrt32(uint32_t num) {
  if (num == 0) return 0;
  uint32_t res = 0;
  int top = (int)(32 - msb32(num)) | 1;
  uint32_t bit = 1u << (31 - top);
  for (int it = (31 - top) / 2 + 1; it > 0; it--) {
    if (num >= res + bit) { num -= res + bit; res = (res >> 1) + bit; }
    else res >>= 1;
    bit >>= 2;
  }
  if (num > res && res != 0xFFFF) ++res;
  return (uint16_t)res;
}

static uint32_t isqrt64(uint64_t num) {
  if ((num >> 32) == 0) return isqrt32((uint32_t)num);
  uint64_t res = 0;
  int top = (int)(64 - msb64(num)) | 1;
  uint64_t bit = UINT64_C(1) << (63 - top);
  for (int it = (63 - top) / 2 + 1; it > 0; it--) {
    if (num >= res + bit) { num -= res + bit; res = (res >> 1) + bit; }
    else res >>= 1;
    bit >>= 2;
  }
  if (num > res && res != 0xFFFFFFFFu) ++res;
  return (uint32_t)res;
}

static int sqrt_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *sb = node->inputs[1], *o = node->outputs[0];
  if ((rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_UINT64, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, sb, "scale_bits", AR_DTYPE_INT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, o, "output 0", AR_DTYPE_UINT32, msg, msg_bytes)) ||
      (rc = need_rank(node, in, "input 0", 1, msg, msg_bytes)) ||
      (rc = need_rank(node, sb, "scale_bits", 0, msg, msg_bytes)))
    return rc;
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, 1, in->dims, msg, msg_bytes);
}

static void sqrt_eval(const ar_node_t *node) {
  const uint64_t *x = node->inputs[0]->data;
  int32_t s = *(const int32_t *)node->inputs[1]->data;
  if (s < 0) s = 0;
  if (s > 31) s = 31;
  uint32_t *o = node->outputs[0]->data;
  const int64_t n = node->inputs[0]->dims[0];
  for (int64_t i = 0; i < n; i++) o[i] = isqrt64(x[i]) >> s;
}

/* ---- SignalFilterBankSpectralSubtraction ---- */

enum { SS_ALT_OMS, SS_ALT_S, SS_CLAMP, SS_MIN_REMAIN, SS_NC, SS_OMS, SS_S, SS_SBITS, SS_SSBITS };
static const char *const ss_keys[] = {"alternate_one_minus_smoothing", "alternate_smoothing", "clamping",
                                      "min_signal_remaining", "num_channels", "one_minus_smoothing",
                                      "smoothing", "smoothing_bits", "spectral_subtraction_bits"};

static int ss_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 2, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  sig_params_t p;
  if ((rc = sig_read_params(node, ss_keys, 9, &p, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_UINT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_UINT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[1], "output 1 (noise estimate)", AR_DTYPE_UINT32, msg, msg_bytes)) ||
      (rc = need_rank(node, in, "input 0", 1, msg, msg_bytes)))
    return rc;
  if (p.v[SS_NC] != in->dims[0])
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "num_channels %lld, input has %d", (long long)p.v[SS_NC], (int)in->dims[0]);
  if (p.v[SS_SBITS] < 0 || p.v[SS_SBITS] > 31 || p.v[SS_SSBITS] < 0 || p.v[SS_SSBITS] > 63)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "smoothing_bits %lld / spectral_subtraction_bits %lld out of range",
                    (long long)p.v[SS_SBITS], (long long)p.v[SS_SSBITS]);
  node->state_bytes = sizeof(sig_params_t);
  node->stream_bytes = (uint64_t)in->dims[0] * sizeof(uint32_t);   /* the noise estimate */
  if ((rc = ar_k_check_output_shape(node, 1, in->dims, msg, msg_bytes))) return rc;
  return ar_k_check_output_shape_at(node, 1, 1, in->dims, msg, msg_bytes);
}

static void ss_init(ar_node_t *node) { params_init(node, ss_keys, 9); }

static void ss_eval(const ar_node_t *node) {
  const sig_params_t *p = node->state;
  uint32_t *noise = node->stream;
  const uint32_t *x = node->inputs[0]->data;
  uint32_t *o = node->outputs[0]->data, *est_out = node->outputs[1]->data;
  const int64_t n = node->inputs[0]->dims[0];
  const int sbits = (int)p->v[SS_SBITS], ssbits = (int)p->v[SS_SSBITS];
  for (int64_t i = 0; i < n; i++) {
    const uint32_t sm = (uint32_t)((i & 1) ? p->v[SS_ALT_S] : p->v[SS_S]);
    const uint32_t oms = (uint32_t)((i & 1) ? p->v[SS_ALT_OMS] : p->v[SS_OMS]);
    const uint32_t up = x[i] << sbits;
    noise[i] = (uint32_t)(((uint64_t)up * sm + (uint64_t)noise[i] * oms) >> ssbits);
    uint32_t est = noise[i];
    if (est > up) {
      est = up;
      if (p->v[SS_CLAMP]) noise[i] = est;
    }
    const uint32_t floor_v = (uint32_t)(((uint64_t)x[i] * (uint32_t)p->v[SS_MIN_REMAIN]) >> ssbits);
    const uint32_t sub = (up - est) >> sbits;
    o[i] = sub > floor_v ? sub : floor_v;
  }
  memcpy(est_out, noise, (size_t)n * sizeof(uint32_t));
}

/* ---- SignalPCAN ---- */

static const char *const pcan_keys[] = {"snr_shift"};
#define PCAN_SNR_BITS 12
#define PCAN_OUTPUT_BITS 6
#define PCAN_LUT_MIN 125   /* 4 * 32 - 3: the segments of msb 2..32 */

static int pcan_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 3, 3, 3, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *ne = node->inputs[1], *lut = node->inputs[2];
  sig_params_t p;
  if ((rc = sig_read_params(node, pcan_keys, 1, &p, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_UINT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, ne, "noise estimate", AR_DTYPE_UINT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, lut, "gain LUT", AR_DTYPE_INT16, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_UINT32, msg, msg_bytes)) ||
      (rc = need_rank(node, in, "input 0", 1, msg, msg_bytes)) ||
      (rc = need_rank(node, ne, "noise estimate", 1, msg, msg_bytes)) ||
      (rc = need_rank(node, lut, "gain LUT", 1, msg, msg_bytes)))
    return rc;
  if (in->dims[0] < 1 || ne->dims[0] != in->dims[0])
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "noise estimate has %d channels, the input %d", (int)ne->dims[0],
                    (int)in->dims[0]);
  if (lut->dims[0] < PCAN_LUT_MIN)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "gain LUT has %d entries, needs %d", (int)lut->dims[0], PCAN_LUT_MIN);
  if (p.v[0] < 0 || p.v[0] > 63)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "snr_shift %lld is outside 0..63", (long long)p.v[0]);
  node->state_bytes = sizeof(sig_params_t);
  return ar_k_check_output_shape(node, 1, in->dims, msg, msg_bytes);
}

static void pcan_init(ar_node_t *node) { params_init(node, pcan_keys, 1); }

static int16_t wide_dynamic(uint32_t x, const int16_t *lut) {
  if (x <= 2) return lut[x];
  const int32_t interval = (int32_t)msb32(x);
  const int16_t *l = lut + 4 * interval - 6;
  const int32_t frac = (int32_t)(int16_t)(((interval < 11) ? (x << (11 - interval)) : (x >> (interval - 11))) & 0x3FF);
  int32_t r = (int32_t)l[2] * frac >> 5;
  r = (int32_t)((uint32_t)r + ((uint32_t)(int32_t)l[1] << 5));
  r = (int32_t)((uint32_t)r * (uint32_t)frac);
  r = (int32_t)((uint32_t)r + (1u << 14)) >> 15;
  r += l[0];
  return (int16_t)(uint16_t)r;
}

static uint32_t pcan_shrink(uint32_t x) {
  if (x < (2u << PCAN_SNR_BITS)) return (x * x) >> (2 + 2 * PCAN_SNR_BITS - PCAN_OUTPUT_BITS);
  return (x >> (PCAN_SNR_BITS - PCAN_OUTPUT_BITS)) - (1u << PCAN_OUTPUT_BITS);
}

static void pcan_eval(const ar_node_t *node) {
  const sig_params_t *p = node->state;
  const uint32_t *x = node->inputs[0]->data, *ne = node->inputs[1]->data;
  const int16_t *lut = node->inputs[2]->data;
  uint32_t *o = node->outputs[0]->data;
  const int64_t n = node->inputs[0]->dims[0];
  for (int64_t i = 0; i < n; i++) {
    const uint32_t gain = (uint32_t)(int32_t)wide_dynamic(ne[i], lut);
    const uint32_t snr = (uint32_t)(((uint64_t)x[i] * gain) >> p->v[0]);
    o[i] = pcan_shrink(snr);
  }
}

/* ---- SignalFilterBankLog ---- */

static const char *const log_keys[] = {"input_correction_bits", "output_scale"};
#define LOG_SEGMENTS 128

typedef struct log_state {
  sig_params_t p;
  int32_t lut[LOG_SEGMENTS + 2];
} log_state_t;

static int log_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  sig_params_t p;
  if ((rc = sig_read_params(node, log_keys, 2, &p, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_UINT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_INT16, msg, msg_bytes)) ||
      (rc = need_rank(node, in, "input 0", 1, msg, msg_bytes)))
    return rc;
  if (p.v[0] < 0 || p.v[0] > 31)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "input_correction_bits %lld is outside 0..31", (long long)p.v[0]);
  node->state_bytes = sizeof(log_state_t);
  return ar_k_check_output_shape(node, 1, in->dims, msg, msg_bytes);
}

/* The table of log2(1 + f) - f in Q16 at f = s / 128 (s = 0..128; one padding entry). */
void ar__signal_log_table(int32_t *lut) {
  for (int s = 0; s <= LOG_SEGMENTS; s++) {
    const double f = (double)s / LOG_SEGMENTS;
    lut[s] = (int32_t)lround(65536.0 * (log2(1.0 + f) - f));
  }
  lut[LOG_SEGMENTS + 1] = 0;
}

static void log_init(ar_node_t *node) {
  log_state_t *s = node->state;
  params_init(node, log_keys, 2);
  ar__signal_log_table(s->lut);
}

/* TFLM's Log32: Q16 log2 (integer part from the msb, fraction through the table), to natural log
 * (x 45426 / 65536, rounded), to out_scale (Q16, rounded; uint32 arithmetic). */
static uint32_t log32(uint32_t x, uint32_t out_scale, const int32_t *lut) {
  const uint32_t integer = msb32(x) - 1;
  int32_t frac = (int32_t)(x - (uint32_t)(1ull << integer));
  if (integer < 16) frac = (int32_t)((uint32_t)frac << (16 - integer));
  else frac >>= integer - 16;
  const uint32_t seg = (uint32_t)frac >> (16 - 7);
  const int32_t c0 = lut[seg], c1 = lut[seg + 1];
  const int32_t seg_base = (int32_t)(512u * seg);
  const int32_t rel = (int32_t)((uint32_t)(c1 - c0) * (uint32_t)(frac - seg_base)) >> 16;
  const uint32_t fraction = (uint32_t)(frac + c0 + rel);
  const uint32_t log2v = (integer << 16) + fraction;
  const uint32_t loge = (uint32_t)((UINT64_C(45426) * log2v + 32768) >> 16);
  return (out_scale * loge + 32768u) >> 16;
}

static void log_eval(const ar_node_t *node) {
  const log_state_t *s = node->state;
  const uint32_t *x = node->inputs[0]->data;
  int16_t *o = node->outputs[0]->data;
  const int64_t n = node->inputs[0]->dims[0];
  const uint32_t cb = (uint32_t)s->p.v[0], scale = (uint32_t)s->p.v[1];
  for (int64_t i = 0; i < n; i++) {
    const uint32_t v = x[i] << cb;
    if (v > 1) {
      const uint32_t l = log32(v, scale, s->lut);
      o[i] = (int16_t)(l < INT16_MAX ? l : INT16_MAX);
    } else {
      o[i] = 0;
    }
  }
}

static const ar_kernel_form_t i16_forms[] = { AR_KF(1, 1, INT16, INT16) };
static const ar_kernel_form_t energy_forms[] = { AR_KF(1, 1, INT16, UINT32) };
static const ar_kernel_form_t fb_forms[] = { AR_KF(1, 1, UINT32, UINT64) };
static const ar_kernel_form_t sqrt_forms[] = { AR_KF(1, 1, UINT64, UINT32) };
static const ar_kernel_form_t u32_forms[] = { AR_KF(1, 1, UINT32, UINT32) };
static const ar_kernel_form_t log_forms[] = { AR_KF(1, 1, UINT32, INT16) };
const ar_kernel_t ar_kernel_signal_window = { "SignalWindow", window_prepare, window_init, window_eval,
  AR_KSUPPORT(i16_forms, 0, -1) };
const ar_kernel_t ar_kernel_signal_fft_auto_scale = { "SignalFftAutoScale", autoscale_prepare, NULL, autoscale_eval,
  AR_KSUPPORT(i16_forms, 0, -1) };
static const ar_kernel_form_t rfft_forms[] = { AR_KF(1, 1, FLOAT32, FLOAT32), AR_KF(1, 1, INT16, INT16),
                                                AR_KF(1, 1, INT32, INT32) };
const ar_kernel_t ar_kernel_signal_rfft = { "SignalRfft", rfft_prepare, rfft_init, rfft_eval, AR_KSUPPORT(rfft_forms, 0, -1) };
const ar_kernel_t ar_kernel_signal_energy = { "SignalEnergy", energy_prepare, energy_init, energy_eval,
  AR_KSUPPORT(energy_forms, 0, -1) };
const ar_kernel_t ar_kernel_signal_filter_bank = { "SignalFilterBank", filter_bank_prepare, filter_bank_init,
  filter_bank_eval, AR_KSUPPORT(fb_forms, 0, -1) };
const ar_kernel_t ar_kernel_signal_filter_bank_square_root = { "SignalFilterBankSquareRoot", sqrt_prepare, NULL,
  sqrt_eval, AR_KSUPPORT(sqrt_forms, 0, -1) };
const ar_kernel_t ar_kernel_signal_filter_bank_spectral_subtraction = {
  "SignalFilterBankSpectralSubtraction", ss_prepare, ss_init, ss_eval, AR_KSUPPORT(u32_forms, 0, -1) };
const ar_kernel_t ar_kernel_signal_pcan = { "SignalPCAN", pcan_prepare, pcan_init, pcan_eval,
  AR_KSUPPORT(u32_forms, 0, -1) };
const ar_kernel_t ar_kernel_signal_filter_bank_log = { "SignalFilterBankLog", log_prepare, log_init, log_eval,
  AR_KSUPPORT(log_forms, 0, -1) };
