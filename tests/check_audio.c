/* check_audio.c - the audio front ends (issue 28): TFLite's RFFT2D / COMPLEX_ABS / REAL / IMAG
 * (kernels/audio.c) against a direct DFT of our own, and TFLite Micro's Signal custom ops
 * (kernels/signal.c) on hand-computed values of TFLM's integer arithmetic; then the two real models
 * of ../shared/models_more (skipped with a message when absent): YAMNet on a raw waveform against
 * native TFLite's 2-step golden in ../shared/golden_more, and micro_speech's audio preprocessor
 * (no native golden: desktop TFLite cannot run the Signal ops) on hand-made frames - a pure tone
 * lands in the mel channel the filter bank's own spacing predicts, silence gives the floor, and
 * the spectral subtraction's noise estimate carries from one invoke to the next until a re-place.
 */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/ar_error.h"
#include "interp/ar_interp.h"
#include "kernels/ar_kernels.h"
#include "loader/ar_model.h"
#include "tests/ar_test_stream.h"

/* kernels/signal.c's table (ar_kernel_impl.h is internal to the kernels layer). */
void ar__signal_log_table(int32_t *lut);

/* ---- helpers ---- */

static ar_tview_t tv(ar_dtype_t dt, void *data, int rank, ...) {
  ar_tview_t t;
  memset(&t, 0, sizeof t);
  t.dtype = dt; t.data = data; t.rank = rank;
  va_list ap;
  va_start(ap, rank);
  uint64_t n = 1;
  for (int i = 0; i < rank; i++) { t.dims[i] = va_arg(ap, int); n *= (uint64_t)t.dims[i]; }
  va_end(ap);
  t.bytes = n * ar_dtype_size(dt);
  return t;
}

static char g_msg[AR_MSG_BYTES];

/* A node of `op` with custom options `co` (may be NULL). */
static ar_node_t mk(ar_op_t op, const uint8_t *co, size_t co_bytes, int n_in, ar_tview_t **in, int n_out,
                    ar_tview_t **out) {
  ar_node_t n;
  memset(&n, 0, sizeof n);
  n.op = op; n.index = 5; n.version = 1;
  n.custom_options = co; n.custom_options_bytes = (uint32_t)co_bytes;
  n.n_inputs = n_in; n.n_outputs = n_out;
  n.inputs = in;     /* the caller's arrays (kept alive across the node's use) */
  n.outputs = out;
  n.threads = 1;
  return n;
}

static int prep(ar_node_t *n) {
  const ar_kernel_t *k = ar_kernel_for(n->op);
  ck_assert_ptr_nonnull(k);
  g_msg[0] = '\0';
  int rc = k->prepare(n, g_msg, sizeof g_msg);
  if (rc) return rc;
  n->state = n->state_bytes ? calloc(1, n->state_bytes) : NULL;
  n->scratch = n->scratch_bytes ? calloc(1, n->scratch_bytes) : NULL;
  n->stream = n->stream_bytes ? calloc(1, n->stream_bytes) : NULL;
  if (k->init) k->init(n);
  return 0;
}
static void eval(ar_node_t *n) { ar_kernel_for(n->op)->eval(n); }
static void done(ar_node_t *n) {
  free(n->state); free(n->scratch); free(n->stream);
  n->state = n->scratch = n->stream = NULL;
}
static void run_ok(ar_node_t *n) {
  int rc = prep(n);
  ck_assert_msg(rc == 0, "prepare: %s", g_msg);
  eval(n);
  done(n);
}

/* A FlexBuffers map of int32 values (keys sorted by the caller), every width 4. Returns its size. */
static size_t fbmap(uint8_t *b, const char *const *keys, const int32_t *vals, int n) {
  size_t p = 0, kpos[16];
  for (int i = 0; i < n; i++) { kpos[i] = p; memcpy(b + p, keys[i], strlen(keys[i]) + 1); p += strlen(keys[i]) + 1; }
  while (p % 4) b[p++] = 0;
  uint32_t u = (uint32_t)n;
  memcpy(b + p, &u, 4); p += 4;
  const size_t kv = p;
  for (int i = 0; i < n; i++) { u = (uint32_t)(p - kpos[i]); memcpy(b + p, &u, 4); p += 4; }
  u = (uint32_t)(p - kv); memcpy(b + p, &u, 4); p += 4;   /* keys offset, from this field */
  u = 4; memcpy(b + p, &u, 4); p += 4;                     /* keys byte width */
  u = (uint32_t)n; memcpy(b + p, &u, 4); p += 4;           /* count */
  const size_t m = p;
  for (int i = 0; i < n; i++) { memcpy(b + p, &vals[i], 4); p += 4; }
  for (int i = 0; i < n; i++) b[p++] = (uint8_t)((1 << 2) | 2);   /* FBT_INT, 32-bit */
  b[p] = (uint8_t)(p - m); p++;                                    /* root: offset back to the map */
  b[p++] = (uint8_t)((9 << 2) | 2);                                /* FBT_MAP, 4-byte children */
  b[p++] = 1;                                                      /* root byte width */
  return p;
}

/* ---- RFFT2D and the complex parts ---- */

/* out[k1][k2] by the definition, in long double. */
static void dft2(const float *x, int h, int w, int fh, int fw, float *out) {
  const long double pi = 3.14159265358979323846264338327950288L;
  for (int k1 = 0; k1 < fh; k1++)
    for (int k2 = 0; k2 <= fw / 2; k2++) {
      long double re = 0, im = 0;
      for (int n1 = 0; n1 < fh && n1 < h; n1++)
        for (int n2 = 0; n2 < fw && n2 < w; n2++) {
          const long double ph = -2 * pi * ((long double)k1 * n1 / fh + (long double)k2 * n2 / fw);
          re += x[n1 * w + n2] * cosl(ph);
          im += x[n1 * w + n2] * sinl(ph);
        }
      out[2 * (k1 * (fw / 2 + 1) + k2)] = (float)re;
      out[2 * (k1 * (fw / 2 + 1) + k2) + 1] = (float)im;
    }
}

static void rfft2d_case(int b, int h, int w, int fh, int fw) {
  const int ow = fw / 2 + 1;
  float *x = malloc(sizeof(float) * (size_t)(b * h * w));
  float *got = calloc((size_t)(b * fh * ow * 2), sizeof(float)), *want = calloc((size_t)(b * fh * ow * 2), sizeof(float));
  srand(7);
  for (int i = 0; i < b * h * w; i++) x[i] = (float)rand() / RAND_MAX * 2.0f - 1.0f;
  int32_t fl[2] = {fh, fw};
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 3, b, h, w), len = tv(AR_DTYPE_INT32, fl, 1, 2);
  len.is_constant = true;
  ar_tview_t out = tv(AR_DTYPE_COMPLEX64, got, 3, b, fh, ow);
  ar_tview_t *ins[2] = {&in, &len}, *outs[1] = {&out};
  ar_node_t n = mk(AR_OP_RFFT2D, NULL, 0, 2, ins, 1, outs);
  run_ok(&n);
  double maxw = 0;
  for (int i = 0; i < b; i++) dft2(x + i * h * w, h, w, fh, fw, want + i * fh * ow * 2);
  for (int i = 0; i < b * fh * ow * 2; i++) maxw = fmax(maxw, fabs(want[i]));
  for (int i = 0; i < b * fh * ow * 2; i++)
    ck_assert_msg(fabs(got[i] - want[i]) <= 1e-6 * maxw + 1e-6, "[%d,%d,%d] fft [%d,%d]: element %d got %g want %g",
                  b, h, w, fh, fw, i, got[i], want[i]);
  free(x); free(got); free(want);
}

START_TEST(rfft2d_is_the_dft_cropped_or_padded) {
  rfft2d_case(2, 3, 5, 4, 8);     /* padded in both dims */
  rfft2d_case(2, 6, 10, 4, 8);    /* cropped in both */
  rfft2d_case(3, 1, 400, 1, 512); /* YAMNet's frames */
  rfft2d_case(1, 16, 16, 16, 16);
  rfft2d_case(1, 1, 1, 1, 2);
}
END_TEST

START_TEST(rfft2d_refuses_what_tflite_refuses) {
  float x[8] = {0};
  float o[64];
  int32_t fl[2] = {4, 6};
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 2, 2, 4), len = tv(AR_DTYPE_INT32, fl, 1, 2);
  len.is_constant = true;
  ar_tview_t out = tv(AR_DTYPE_COMPLEX64, o, 2, 4, 4);
  ar_tview_t *ins[2] = {&in, &len}, *outs[1] = {&out};
  ar_node_t n = mk(AR_OP_RFFT2D, NULL, 0, 2, ins, 1, outs);
  ck_assert_int_eq(prep(&n), AR_EINVAL);
  ck_assert_msg(strstr(g_msg, "operator 5 (RFFT2D): fft_length [4,6] must be powers of two"), "%s", g_msg);
  len.is_constant = false;
  ck_assert_int_eq(prep(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "fft_length is not a constant"), "%s", g_msg);
}
END_TEST

START_TEST(complex_abs_real_imag) {
  float z[8] = {3, 4, -5, 12, 0, -1, 1e30f, 1e30f}, o[4];
  ar_tview_t in = tv(AR_DTYPE_COMPLEX64, z, 2, 2, 2), out = tv(AR_DTYPE_FLOAT32, o, 2, 2, 2);
  ar_tview_t *ins[1] = {&in}, *outs[1] = {&out};
  ar_node_t n = mk(AR_OP_COMPLEX_ABS, NULL, 0, 1, ins, 1, outs);
  run_ok(&n);
  ck_assert(o[0] == 5 && o[1] == 13 && o[2] == 1 && o[3] == hypotf(1e30f, 1e30f) && isfinite(o[3]));
  n.op = AR_OP_REAL;
  run_ok(&n);
  ck_assert(o[0] == 3 && o[1] == -5 && o[2] == 0 && o[3] == 1e30f);
  n.op = AR_OP_IMAG;
  run_ok(&n);
  ck_assert(o[0] == 4 && o[1] == 12 && o[2] == -1 && o[3] == 1e30f);
  ar_tview_t bad = tv(AR_DTYPE_FLOAT32, z, 1, 4);
  ins[0] = &bad;
  n = mk(AR_OP_COMPLEX_ABS, NULL, 0, 1, ins, 1, outs);
  ck_assert_int_eq(prep(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "input 0 has dtype FLOAT32, expected COMPLEX64"), "%s", g_msg);
}
END_TEST

/* ---- TFLM Signal ops ---- */

START_TEST(signal_window_shifts_and_saturates) {
  uint8_t co[128];
  const char *keys[] = {"shift"};
  const int32_t v[] = {14};
  size_t nb = fbmap(co, keys, v, 1);
  int16_t x[8] = {1000, -2000, 32767, 4, 1000, -2000, 32767, 4}, w[4] = {16384, 16384, 32767, -32768}, o[8];
  ar_tview_t in = tv(AR_DTYPE_INT16, x, 2, 2, 4), wt = tv(AR_DTYPE_INT16, w, 1, 4), out = tv(AR_DTYPE_INT16, o, 2, 2, 4);
  wt.is_constant = true;
  ar_tview_t *ins[2] = {&in, &wt}, *outs[1] = {&out};
  ar_node_t n = mk(AR_OP_SIGNAL_WINDOW, co, nb, 2, ins, 1, outs);
  run_ok(&n);
  const int16_t want[8] = {1000, -2000, 32767, -8, 1000, -2000, 32767, -8};
  for (int i = 0; i < 8; i++) ck_assert_int_eq(o[i], want[i]);
  n.custom_options_bytes = 3;   /* not a map */
  ck_assert_int_eq(prep(&n), AR_EINVAL);
  ck_assert_msg(strstr(g_msg, "operator 5 (SignalWindow): custom_options (3 bytes) are not a FlexBuffers map"), "%s", g_msg);
}
END_TEST

START_TEST(signal_fft_auto_scale) {
  int16_t x[3] = {100, -300, 5}, o[3];
  int32_t s = -1;
  ar_tview_t in = tv(AR_DTYPE_INT16, x, 1, 3), out = tv(AR_DTYPE_INT16, o, 1, 3), sc = tv(AR_DTYPE_INT32, &s, 0);
  ar_tview_t *ins[1] = {&in}, *outs[2] = {&out, &sc};
  ar_node_t n = mk(AR_OP_SIGNAL_FFT_AUTO_SCALE, NULL, 0, 1, ins, 2, outs);
  run_ok(&n);   /* max 300: msb 9, scale 16 - 9 - 1 = 6 */
  ck_assert_int_eq(s, 6);
  ck_assert(o[0] == 6400 && o[1] == -19200 && o[2] == 320);
  memset(x, 0, sizeof x);
  run_ok(&n);   /* silence: msb(0) is 32 in TFLM, so the scale is 0 */
  ck_assert_int_eq(s, 0);
  x[0] = -32768;
  run_ok(&n);
  ck_assert_int_eq(s, 0);
  ck_assert_int_eq(o[0], -32768);
}
END_TEST

/* The fixed-point real FFT is the DFT / fft_length within a few LSB. */
START_TEST(signal_rfft_is_the_scaled_dft) {
  uint8_t co[128];
  const char *keys[] = {"T", "fft_length"};
  for (int len = 4; len <= 512; len *= 2) {
    const int32_t v[] = {AR_DTYPE_INT16, len};
    size_t nb = fbmap(co, keys, v, 2);
    const int flen = len - len / 4;   /* zero padding too */
    int16_t x[2][512], o[2][2 * 257];
    srand((unsigned)len);
    for (int f = 0; f < 2; f++)
      for (int i = 0; i < flen; i++) x[f][i] = (int16_t)(rand() % 40001 - 20000);
    int16_t xin[2 * 512];
    for (int f = 0; f < 2; f++) memcpy(xin + f * flen, x[f], sizeof(int16_t) * (size_t)flen);
    int16_t oo[2 * 2 * 257];
    ar_tview_t in = tv(AR_DTYPE_INT16, xin, 2, 2, flen), out = tv(AR_DTYPE_INT16, oo, 2, 2, 2 * (len / 2 + 1));
    ar_tview_t *ins[1] = {&in}, *outs[1] = {&out};
    ar_node_t n = mk(AR_OP_SIGNAL_RFFT, co, nb, 1, ins, 1, outs);
    run_ok(&n);
    const double pi = 3.14159265358979323846;
    for (int f = 0; f < 2; f++) {
      memcpy(o[f], oo + f * 2 * (len / 2 + 1), sizeof(int16_t) * (size_t)(2 * (len / 2 + 1)));
      for (int k = 0; k <= len / 2; k++) {
        double re = 0, im = 0;
        for (int i = 0; i < flen; i++) { re += x[f][i] * cos(2 * pi * k * i / len); im -= x[f][i] * sin(2 * pi * k * i / len); }
        re /= len; im /= len;
        /* log2(len) rounded stages, each within 1 LSB */
        const double tol = 1.0 + log2((double)len);
        ck_assert_msg(fabs(o[f][2 * k] - re) <= tol && fabs(o[f][2 * k + 1] - im) <= tol,
                      "fft_length %d frame %d bin %d: got (%d,%d) want (%.2f,%.2f)", len, f, k, o[f][2 * k],
                      o[f][2 * k + 1], re, im);
      }
    }
  }
  const int32_t bad[] = {AR_DTYPE_INT16, 480};
  size_t nb = fbmap(co, keys, bad, 2);
  int16_t x[480], o[482];
  ar_tview_t in = tv(AR_DTYPE_INT16, x, 1, 480), out = tv(AR_DTYPE_INT16, o, 1, 482);
  ar_tview_t *ins[1] = {&in}, *outs[1] = {&out};
  ar_node_t n = mk(AR_OP_SIGNAL_RFFT, co, nb, 1, ins, 1, outs);
  ck_assert_int_eq(prep(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "fft_length 480 is not a power of two"), "%s", g_msg);
}
END_TEST

/* ---- SignalRfft int32 / float32 ---- */

/* The reference of kissfft's FIXED_POINT 32 arithmetic, written as a plain mixed-radix DFT: at each
 * level every sub-sequence's value is scaled by 1/p (rounded product with 2147483647 / p), rotated
 * by its Q31 twiddle (one rounding of the summed int64 products), and the p of them summed with the
 * exact +-1 / +-i factors of a radix-p DFT (integer sums wrap, so their order does not matter). */
typedef struct { int32_t r, i; } rc32_t;
static int32_t r31(int64_t x) { return (int32_t)(uint32_t)(uint64_t)((int64_t)((uint64_t)x + (1ull << 30)) >> 31); }
static rc32_t rdiv(rc32_t a, int p) {
  const int64_t k = 2147483647 / p;
  return (rc32_t){r31((int64_t)a.r * k), r31((int64_t)a.i * k)};
}
static rc32_t rmul(rc32_t a, rc32_t b) {
  return (rc32_t){r31((int64_t)a.r * b.r - (int64_t)a.i * b.i), r31((int64_t)a.r * b.i + (int64_t)a.i * b.r)};
}
static rc32_t rtw(double ph) {
  return (rc32_t){(int32_t)floor(0.5 + 2147483647.0 * cos(ph)), (int32_t)floor(0.5 + 2147483647.0 * sin(ph))};
}
static int32_t wadd(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static void ref_dft32(const rc32_t *x, int64_t stride, int n, int ntot, rc32_t *y) {
  const double pi = 3.14159265358979323846264338327950288;
  if (n == 1) { y[0] = x[0]; return; }
  const int p = n % 4 == 0 ? 4 : 2, m = n / p;
  rc32_t *sub = malloc(sizeof(rc32_t) * (size_t)n);
  for (int q = 0; q < p; q++) ref_dft32(x + q * stride, stride * p, m, ntot, sub + q * m);
  for (int k = 0; k < m; k++) {
    rc32_t s[4];
    for (int j = 0; j < p; j++) {
      s[j] = rdiv(sub[j * m + k], p);
      if (j) s[j] = rmul(s[j], rtw(-2.0 * pi * (j * k * (ntot / n)) / ntot));
    }
    for (int q = 0; q < p; q++) {
      rc32_t acc = {0, 0};
      for (int j = 0; j < p; j++) {
        const int e = (j * q * (4 / p)) % 4;   /* s_j * (-i)^e */
        const rc32_t v = e == 0 ? s[j] : e == 1 ? (rc32_t){s[j].i, (int32_t)(0u - (uint32_t)s[j].r)}
                       : e == 2 ? (rc32_t){(int32_t)(0u - (uint32_t)s[j].r), (int32_t)(0u - (uint32_t)s[j].i)}
                                : (rc32_t){(int32_t)(0u - (uint32_t)s[j].i), s[j].r};
        acc.r = wadd(acc.r, v.r); acc.i = wadd(acc.i, v.i);
      }
      y[k + q * m] = acc;
    }
  }
  free(sub);
}
/* kiss_fftr's split of the ncfft-point complex FFT of the packed real frame into ncfft + 1 bins. */
static void ref_rfft32(const int32_t *frame, int len, int32_t *out) {
  const double pi = 3.14159265358979323846264338327950288;
  const int nc = len / 2;
  rc32_t *z = malloc(sizeof(rc32_t) * (size_t)nc);
  ref_dft32((const rc32_t *)frame, 1, nc, nc, z);
  rc32_t *o = (rc32_t *)out;
  const rc32_t dc = rdiv(z[0], 2);
  o[0] = (rc32_t){wadd(dc.r, dc.i), 0};
  o[nc] = (rc32_t){wadd(dc.r, (int32_t)(0u - (uint32_t)dc.i)), 0};
  for (int k = 1; k <= nc / 2; k++) {
    const rc32_t a = rdiv(z[k], 2), b = rdiv((rc32_t){z[nc - k].r, (int32_t)(0u - (uint32_t)z[nc - k].i)}, 2);
    const rc32_t f1 = {wadd(a.r, b.r), wadd(a.i, b.i)};
    const rc32_t f2 = {wadd(a.r, (int32_t)(0u - (uint32_t)b.r)), wadd(a.i, (int32_t)(0u - (uint32_t)b.i))};
    const rc32_t t = rmul(f2, rtw(-pi * ((double)k / nc + 0.5)));
    o[k] = (rc32_t){wadd(f1.r, t.r) >> 1, wadd(f1.i, t.i) >> 1};
    o[nc - k] = (rc32_t){wadd(f1.r, (int32_t)(0u - (uint32_t)t.r)) >> 1, wadd(t.i, (int32_t)(0u - (uint32_t)f1.i)) >> 1};
  }
  free(z);
}

/* SignalRfft T = int32 equals the reference byte for byte (fft_length 4..1024, zero-padded frames,
 * full-scale and small inputs), and both are DFT / fft_length within a few LSB. */
START_TEST(signal_rfft_int32_is_kissfft_fixed32) {
  uint8_t co[128];
  const char *keys[] = {"T", "fft_length"};
  for (int len = 4; len <= 1024; len *= 2) {
    for (int scale = 0; scale < 2; scale++) {
      const int32_t v[] = {AR_DTYPE_INT32, len};
      const size_t nb = fbmap(co, keys, v, 2);
      const int flen = len - len / 4, nout = 2 * (len / 2 + 1);
      int32_t *x = malloc(sizeof(int32_t) * 3 * (size_t)flen), *o = malloc(sizeof(int32_t) * 3 * (size_t)nout);
      int32_t *frame = calloc((size_t)len, sizeof(int32_t)), *want = malloc(sizeof(int32_t) * (size_t)nout);
      srand((unsigned)(len * 2 + scale));
      for (int i = 0; i < 3 * flen; i++) {
        const int64_t r = ((int64_t)rand() << 16) ^ rand();
        x[i] = scale ? (int32_t)(r % 2147483647) * (rand() & 1 ? 1 : -1) : (int32_t)(r % 2001) - 1000;
      }
      ar_tview_t in = tv(AR_DTYPE_INT32, x, 2, 3, flen), out = tv(AR_DTYPE_INT32, o, 2, 3, nout);
      ar_tview_t *ins[1] = {&in}, *outs[1] = {&out};
      ar_node_t n = mk(AR_OP_SIGNAL_RFFT, co, nb, 1, ins, 1, outs);
      run_ok(&n);
      const double pi = 3.14159265358979323846;
      for (int f = 0; f < 3; f++) {
        memcpy(frame, x + f * flen, sizeof(int32_t) * (size_t)flen);
        ref_rfft32(frame, len, want);
        ck_assert_msg(memcmp(o + f * nout, want, sizeof(int32_t) * (size_t)nout) == 0,
                      "fft_length %d scale %d frame %d differs from the reference", len, scale, f);
        for (int k = 0; k <= len / 2; k++) {
          double re = 0, im = 0;
          for (int i = 0; i < flen; i++) { re += frame[i] * cos(2 * pi * k * i / len); im -= frame[i] * sin(2 * pi * k * i / len); }
          re /= len; im /= len;
          const double tol = 2.0 + log2((double)len);
          ck_assert_msg(fabs(want[2 * k] - re) <= tol && fabs(want[2 * k + 1] - im) <= tol,
                        "fft_length %d frame %d bin %d: got (%d,%d) want (%.2f,%.2f)", len, f, k, want[2 * k],
                        want[2 * k + 1], re, im);
        }
      }
      free(x); free(o); free(frame); free(want);
    }
  }
}
END_TEST

/* SignalRfft T = float32: the unscaled DFT (kissfft's float real FFT) within float rounding. */
START_TEST(signal_rfft_float_is_the_dft) {
  uint8_t co[128];
  const char *keys[] = {"T", "fft_length"};
  for (int len = 4; len <= 1024; len *= 2) {
    const int32_t v[] = {AR_DTYPE_FLOAT32, len};
    const size_t nb = fbmap(co, keys, v, 2);
    const int flen = len - len / 4 + 1 > len ? len : len - len / 4 + 1, nout = 2 * (len / 2 + 1);
    float *x = malloc(sizeof(float) * 2 * (size_t)flen), *o = malloc(sizeof(float) * 2 * (size_t)nout);
    srand((unsigned)len);
    for (int i = 0; i < 2 * flen; i++) x[i] = (float)(rand() % 20001 - 10000) / 1000.0f;
    ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 2, 2, flen), out = tv(AR_DTYPE_FLOAT32, o, 2, 2, nout);
    ar_tview_t *ins[1] = {&in}, *outs[1] = {&out};
    ar_node_t n = mk(AR_OP_SIGNAL_RFFT, co, nb, 1, ins, 1, outs);
    run_ok(&n);
    const double pi = 3.14159265358979323846;
    for (int f = 0; f < 2; f++) {
      const float *xf = x + f * flen;
      double mass = 0;
      for (int i = 0; i < flen; i++) mass += fabs(xf[i]);
      for (int k = 0; k <= len / 2; k++) {
        double re = 0, im = 0;
        for (int i = 0; i < flen; i++) { re += xf[i] * cos(2 * pi * k * i / len); im -= xf[i] * sin(2 * pi * k * i / len); }
        const double tol = 1e-6 * mass * (1 + log2((double)len));
        const float *ob = o + f * nout;
        ck_assert_msg(fabs(ob[2 * k] - re) <= tol && fabs(ob[2 * k + 1] - im) <= tol,
                      "fft_length %d frame %d bin %d: got (%g,%g) want (%g,%g)", len, f, k, ob[2 * k], ob[2 * k + 1], re, im);
      }
    }
    free(x); free(o);
  }
  /* a cosine at bin 3 of 16: 8 (= N/2) in bins 3, nothing elsewhere */
  const int32_t v[] = {AR_DTYPE_FLOAT32, 16};
  const size_t nb = fbmap(co, keys, v, 2);
  float x[16], o[18];
  for (int i = 0; i < 16; i++) x[i] = (float)cos(2 * 3.14159265358979323846 * 3 * i / 16);
  ar_tview_t in = tv(AR_DTYPE_FLOAT32, x, 1, 16), out = tv(AR_DTYPE_FLOAT32, o, 1, 18);
  ar_tview_t *ins[1] = {&in}, *outs[1] = {&out};
  ar_node_t n = mk(AR_OP_SIGNAL_RFFT, co, nb, 1, ins, 1, outs);
  run_ok(&n);
  for (int k = 0; k <= 8; k++)
    ck_assert_msg(fabsf(o[2 * k] - (k == 3 ? 8.0f : 0.0f)) < 1e-5f && fabsf(o[2 * k + 1]) < 1e-5f, "bin %d: (%g,%g)", k,
                  o[2 * k], o[2 * k + 1]);
}
END_TEST

/* T must name the tensors' dtype and be one of the three forms. */
START_TEST(signal_rfft_refuses_a_t_that_is_not_the_tensors) {
  uint8_t co[128];
  const char *keys[] = {"T", "fft_length"};
  int16_t x[8], o[10];
  ar_tview_t in = tv(AR_DTYPE_INT16, x, 1, 8), out = tv(AR_DTYPE_INT16, o, 1, 10);
  ar_tview_t *ins[1] = {&in}, *outs[1] = {&out};
  const int32_t v32[] = {AR_DTYPE_INT32, 8};
  size_t nb = fbmap(co, keys, v32, 2);
  ar_node_t n = mk(AR_OP_SIGNAL_RFFT, co, nb, 1, ins, 1, outs);
  ck_assert_int_ne(prep(&n), 0);
  ck_assert_msg(strstr(g_msg, "operator 5 (SignalRfft)") && strstr(g_msg, "input 0") && strstr(g_msg, "INT32"), "%s", g_msg);
  const int32_t vb[] = {AR_DTYPE_BOOL, 8};
  nb = fbmap(co, keys, vb, 2);
  n = mk(AR_OP_SIGNAL_RFFT, co, nb, 1, ins, 1, outs);
  ck_assert_int_eq(prep(&n), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "expected FLOAT32, INT16 or INT32"), "%s", g_msg);
}
END_TEST

START_TEST(signal_energy) {
  uint8_t co[128];
  const char *keys[] = {"end_index", "start_index"};
  const int32_t v[] = {3, 1};
  size_t nb = fbmap(co, keys, v, 2);
  int16_t z[8] = {3, 4, 1, 1, -32768, -32768, 7, 7};
  uint32_t o[4] = {9, 9, 9, 9};
  ar_tview_t in = tv(AR_DTYPE_INT16, z, 1, 8), out = tv(AR_DTYPE_UINT32, o, 1, 4);
  ar_tview_t *ins[1] = {&in}, *outs[1] = {&out};
  ar_node_t n = mk(AR_OP_SIGNAL_ENERGY, co, nb, 1, ins, 1, outs);
  run_ok(&n);
  ck_assert(o[0] == 0 && o[1] == 2 && o[2] == 2147483648u && o[3] == 0);
}
END_TEST

START_TEST(signal_filter_bank_accumulates_triangles) {
  uint8_t co[128];
  const char *keys[] = {"num_channels"};
  const int32_t v[] = {2};
  size_t nb = fbmap(co, keys, v, 1);
  uint32_t e[6] = {10, 20, 30, 40, 50, 4000000000u};
  int16_t w[6] = {4096, 1000, 3000, 2000, 500, -1}, uw[6] = {0, 3096, 1096, 2096, 3596, 1};
  int16_t fs[3] = {0, 1, 3}, ws[3] = {0, 1, 3}, wd[3] = {1, 2, 3};
  uint64_t o[2];
  ar_tview_t in = tv(AR_DTYPE_UINT32, e, 1, 6), tw = tv(AR_DTYPE_INT16, w, 1, 6), tu = tv(AR_DTYPE_INT16, uw, 1, 6),
             tf = tv(AR_DTYPE_INT16, fs, 1, 3), tws = tv(AR_DTYPE_INT16, ws, 1, 3), twd = tv(AR_DTYPE_INT16, wd, 1, 3),
             out = tv(AR_DTYPE_UINT64, o, 1, 2);
  tw.is_constant = tu.is_constant = tf.is_constant = tws.is_constant = twd.is_constant = true;
  ar_tview_t *ins[6] = {&in, &tw, &tu, &tf, &tws, &twd}, *outs[1] = {&out};
  ar_node_t n = mk(AR_OP_SIGNAL_FILTER_BANK, co, nb, 6, ins, 1, outs);
  run_ok(&n);
  /* channel 1 = weights of band 1 (bins 1,2) + unweights of band 0 (bin 0) */
  ck_assert_uint_eq(o[0], (uint64_t)(1000 * 20 + 3000 * 30) + 0 * 10);
  /* channel 2 = weights of band 2 (bins 3,4,5; weight -1 wraps as TFLM's uint64) + unweights of band 1 */
  const uint64_t c2 = (uint64_t)2000 * 40 + (uint64_t)500 * 50 + (uint64_t)(int64_t)-1 * 4000000000u + (uint64_t)3096 * 20 +
                      (uint64_t)1096 * 30;
  ck_assert_uint_eq(o[1], c2);
  wd[2] = 4;   /* reaches past the 6 bins */
  ck_assert_int_eq(prep(&n), AR_EINVAL);
  ck_assert_msg(strstr(g_msg, "channel 2 (frequency start 3, weight start 3, width 4) reaches past"), "%s", g_msg);
}
END_TEST

START_TEST(signal_filter_bank_square_root) {
  uint64_t x[11] = {0, 1, 2, 3, 15, 16, 4294967295u, 4294967296u, 1ull << 40, UINT64_MAX, 1000000};
  uint32_t o[11];
  int32_t s = 0;
  ar_tview_t in = tv(AR_DTYPE_UINT64, x, 1, 11), sc = tv(AR_DTYPE_INT32, &s, 0), out = tv(AR_DTYPE_UINT32, o, 1, 11);
  ar_tview_t *ins[2] = {&in, &sc}, *outs[1] = {&out};
  ar_node_t n = mk(AR_OP_SIGNAL_FILTER_BANK_SQUARE_ROOT, NULL, 0, 2, ins, 1, outs);
  run_ok(&n);
  /* TFLM rounds up when the remainder exceeds the root, except at the top of the 16/32-bit range */
  const uint32_t want[11] = {0, 1, 1, 2, 4, 4, 65535, 65536, 1u << 20, 4294967295u, 1000};
  for (int i = 0; i < 11; i++) ck_assert_msg(o[i] == want[i], "sqrt(%llu): got %u want %u", (unsigned long long)x[i], o[i], want[i]);
  s = 2;
  run_ok(&n);
  ck_assert_uint_eq(o[10], 250);
}
END_TEST

static const char *const ss_keys[] = {"alternate_one_minus_smoothing", "alternate_smoothing", "clamping",
                                      "min_signal_remaining", "num_channels", "one_minus_smoothing",
                                      "smoothing", "smoothing_bits", "spectral_subtraction_bits"};

/* TFLM's spectral subtraction, written out per channel for the test. */
static void ss_ref(const int32_t *p, const uint32_t *x, uint32_t *noise, uint32_t *out, int n) {
  for (int i = 0; i < n; i++) {
    const uint64_t sm = (uint64_t)(i & 1 ? p[1] : p[6]), oms = (uint64_t)(i & 1 ? p[0] : p[5]);
    const uint64_t up = (uint64_t)x[i] << p[7];
    noise[i] = (uint32_t)((up * sm + noise[i] * oms) >> p[8]);
    uint64_t est = noise[i];
    if (est > up) { est = up; if (p[2]) noise[i] = (uint32_t)est; }
    const uint64_t fl = ((uint64_t)x[i] * (uint64_t)p[3]) >> p[8];
    const uint64_t sub = (up - est) >> p[7];
    out[i] = (uint32_t)(sub > fl ? sub : fl);
  }
}

START_TEST(signal_spectral_subtraction_keeps_its_estimate) {
  uint8_t co[512];
  const int32_t p[9] = {15729, 327, 1, 1638, 3, 15729, 655, 10, 14};
  size_t nb = fbmap(co, ss_keys, p, 9);
  uint32_t x[3] = {1000, 5000, 200}, o[3], est[3], noise[3] = {0, 0, 0}, want[3];
  ar_tview_t in = tv(AR_DTYPE_UINT32, x, 1, 3), out = tv(AR_DTYPE_UINT32, o, 1, 3), eo = tv(AR_DTYPE_UINT32, est, 1, 3);
  ar_tview_t *ins[1] = {&in}, *outs[2] = {&out, &eo};
  ar_node_t n = mk(AR_OP_SIGNAL_FILTER_BANK_SPECTRAL_SUBTRACTION, co, nb, 1, ins, 2, outs);
  ck_assert_msg(prep(&n) == 0, "%s", g_msg);
  uint32_t first[3];
  for (int step = 0; step < 20; step++) {
    if (step == 10) { x[0] = 10; x[1] = 0; x[2] = 60000; }   /* the signal drops: clamping */
    eval(&n);
    ss_ref(p, x, noise, want, 3);
    for (int i = 0; i < 3; i++) {
      ck_assert_msg(o[i] == want[i] && est[i] == noise[i], "step %d channel %d: got %u/%u want %u/%u", step, i, o[i], est[i],
                    want[i], noise[i]);
    }
    if (step == 0) memcpy(first, o, sizeof first);
  }
  ck_assert(noise[0] != 0);
  ck_assert_uint_eq(n.stream_bytes, 12);   /* the estimate is stream state, not node state */
  /* a zero estimate (a reset of the state slot) starts again */
  x[0] = 1000; x[1] = 5000; x[2] = 200;
  memset(n.stream, 0, 12);
  eval(&n);
  ck_assert(memcmp(o, first, sizeof first) == 0);
  done(&n);
}
END_TEST

START_TEST(signal_pcan) {
  uint8_t co[128];
  const char *keys[] = {"snr_shift"};
  const int32_t v[] = {12};
  size_t nb = fbmap(co, keys, v, 1);
  int16_t lut[125];
  for (int i = 0; i < 125; i++) lut[i] = 0;
  lut[0] = 100; lut[1] = 200; lut[2] = 300;
  /* gain 1.0 (Q12) for every x > 2 (segment 2's c0 is lut[2], the x = 2 entry too) */
  for (int iv = 2; iv <= 32; iv++) lut[4 * iv - 6] = 4096;
  uint32_t x[4] = {8192, 4096, 100000, 100000}, ne[4] = {1000, 5, 1, 1u << 31}, o[4];
  ar_tview_t in = tv(AR_DTYPE_UINT32, x, 1, 4), tn = tv(AR_DTYPE_UINT32, ne, 1, 4), tl = tv(AR_DTYPE_INT16, lut, 1, 125),
             out = tv(AR_DTYPE_UINT32, o, 1, 4);
  tl.is_constant = true;
  ar_tview_t *ins[3] = {&in, &tn, &tl}, *outs[1] = {&out};
  ar_node_t n = mk(AR_OP_SIGNAL_PCAN, co, nb, 3, ins, 1, outs);
  run_ok(&n);
  /* snr = x * 4096 >> 12 = x; shrink: x >= 8192: x / 64 - 64, else x^2 >> 20 */
  ck_assert_uint_eq(o[0], 8192 / 64 - 64);
  ck_assert_uint_eq(o[1], (4096u * 4096u) >> 20);
  ck_assert_uint_eq(o[2], (4882u * 4882u) >> 20);   /* gain lut[1] = 200: snr 100000 * 200 >> 12 = 4882 */
  ck_assert_uint_eq(o[3], 100000 / 64 - 64);
}
END_TEST

START_TEST(signal_filter_bank_log) {
  int32_t lut[130];
  ar__signal_log_table(lut);
  /* TFLM's table: spot values */
  ck_assert(lut[0] == 0 && lut[1] == 224 && lut[57] == 5641 && lut[64] == 5568 && lut[127] == 142 && lut[128] == 0 &&
            lut[129] == 0);
  uint8_t co[128];
  const char *keys[] = {"input_correction_bits", "output_scale"};
  const int32_t v[] = {0, 64};
  size_t nb = fbmap(co, keys, v, 2);
  uint32_t x[8] = {0, 1, 2, 3, 65536, 1000, 123456789, 4294967295u};
  int16_t o[8];
  ar_tview_t in = tv(AR_DTYPE_UINT32, x, 1, 8), out = tv(AR_DTYPE_INT16, o, 1, 8);
  ar_tview_t *ins[1] = {&in}, *outs[1] = {&out};
  ar_node_t n = mk(AR_OP_SIGNAL_FILTER_BANK_LOG, co, nb, 1, ins, 1, outs);
  run_ok(&n);
  /* round(64 ln x) within TFLM's table: 44.36, 70.31, 709.78, 442.1, 1192.41, 1419.57 */
  const int16_t want[8] = {0, 0, 44, 70, 710, 442, 1192, 1420};
  for (int i = 0; i < 8; i++) ck_assert_msg(o[i] == want[i], "log(%u): got %d want %d", x[i], o[i], want[i]);
}
END_TEST

/* CAST v2 (uint32), which the preprocessor uses around its integer slices. */
START_TEST(cast_uint32) {
  int32_t i[3] = {-1, 7, INT32_MIN};
  uint32_t u[3];
  float f[3];
  ar_tview_t ti = tv(AR_DTYPE_INT32, i, 1, 3), tu = tv(AR_DTYPE_UINT32, u, 1, 3), tf = tv(AR_DTYPE_FLOAT32, f, 1, 3);
  ar_tview_t *ins[1] = {&ti}, *outs[1] = {&tu};
  ar_node_t n = mk(AR_OP_CAST, NULL, 0, 1, ins, 1, outs);
  run_ok(&n);
  ck_assert(u[0] == 4294967295u && u[1] == 7 && u[2] == 2147483648u);
  u[0] = 3000000000u;
  ins[0] = &tu; outs[0] = &ti;
  n = mk(AR_OP_CAST, NULL, 0, 1, ins, 1, outs);
  run_ok(&n);
  ck_assert(i[0] == (int32_t)-1294967296 && i[1] == 7 && i[2] == INT32_MIN);
  u[0] = 3000000000u;
  outs[0] = &tf;
  n = mk(AR_OP_CAST, NULL, 0, 1, ins, 1, outs);
  run_ok(&n);
  ck_assert(f[0] == 3e9f && f[1] == 7.0f);
  f[0] = 3e9f; f[1] = 2.9f; f[2] = -0.5f;
  ins[0] = &tf; outs[0] = &tu;
  n = mk(AR_OP_CAST, NULL, 0, 1, ins, 1, outs);
  run_ok(&n);
  ck_assert(u[0] == 3000000000u && u[1] == 2 && u[2] == 0);
}
END_TEST

/* ---- the real models ---- */

static const char *more_dir(void) {
  const char *e = getenv("AR_MODELS_MORE_DIR");
  return e ? e : AR_SRCDIR "/../shared/models_more";
}
static const char *golden_more_dir(void) {
  const char *e = getenv("AR_GOLDEN_MORE_DIR");
  return e ? e : AR_SRCDIR "/../shared/golden_more";
}
static int have(const char *path, const char *what) {
  struct stat st;
  if (stat(path, &st) == 0) return 1;
  printf("SKIP %s: %s is absent (../shared/models_more is never committed)\n", what, path);
  return 0;
}

/* Native TFLite's 2-step golden, both steps within the float rule (the int8 scores byte for
 * byte). RFFT2D and COMPLEX_ABS give native's values bit for bit (the COMPLEX_ABS output, made a
 * graph output, compared offline with tflite_run); the float FULLY_CONNECTED after it ([96,257] x
 * [64,257]^T) must add its bias after the product, as TFLite does: started from the bias, 1651 of
 * its 6144 sums rounded differently, one value of the QUANTIZE to int8 after LOG rounded the other
 * way and the int8 body moved 12 of 521 scores of step 0 by 7 quanta. */
START_TEST(yamnet_waveform_golden) {
  char model[1024], stream[1024], msg[AR_MSG_BYTES];
  snprintf(model, sizeof model, "%s/tfsup_yamnet_wavin_quantized_mel_relu6.tflite", more_dir());
  snprintf(stream, sizeof stream, "%s/tfsup_yamnet_wavin_quantized_mel_relu6", golden_more_dir());
  if (!have(model, "yamnet_waveform_golden") || !have(stream, "yamnet_waveform_golden")) return;
  ar_ts_report_t rep;
  int rc = ar_ts_run_model(model, stream, NULL, NULL, &rep, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert_int_eq(rep.steps, 2);
  printf("yamnet: %d of 2 steps out of the float rule, worst ratio %.3g, %lld bytes differ\n",
         rep.bad_steps, rep.worst_ratio, (long long)rep.bytes_differing);
  ck_assert_msg(rep.bad_steps == 0, "%s", rep.first_bad);
  ck_assert_int_eq(rep.first_bad_step, -1);
}
END_TEST

typedef struct pre {
  ar_model_t *m;
  ar_interp_t *in;
} pre_t;

static int pre_open(pre_t *p) {
  char model[1024], msg[AR_MSG_BYTES];
  snprintf(model, sizeof model, "%s/tflm_audio_preprocessor_float.tflite", more_dir());
  if (!have(model, "audio preprocessor")) return 0;
  ck_assert_msg(ar_model_load(model, &p->m, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_new(p->m, NULL, &p->in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_place_owned(p->in, msg, sizeof msg) == 0, "%s", msg);
  return 1;
}
static void pre_close(pre_t *p) { ar_interp_free(p->in); ar_model_free(p->m); }

/* One 30 ms frame (480 samples at 16 kHz) of amplitude a at f Hz; returns the 40 outputs. */
static void pre_run(pre_t *p, double f, double a, float *out40) {
  ar_tview_t *in = ar_interp_input(p->in, 0);
  int16_t *x = in->data;
  for (int i = 0; i < 480; i++) x[i] = (int16_t)lround(a * sin(2 * 3.14159265358979323846 * f * i / 16000.0));
  ck_assert_int_eq(ar_interp_invoke(p->in), 0);
  memcpy(out40, ar_interp_output(p->in, 0)->data, 40 * sizeof(float));
}

/* The mel channel whose band centre is nearest f: 40 channels between 125 and 7500 Hz (micro_speech's
 * filter bank), centres at equal mel steps (mel = 1127 ln(1 + f / 700)). */
static int mel_channel(double f) {
  const double lo = 1127 * log(1 + 125 / 700.0), hi = 1127 * log(1 + 7500 / 700.0), step = (hi - lo) / 41;
  return (int)lround((1127 * log(1 + f / 700.0) - lo) / step) - 1;
}

static int argmax40(const float *o) {
  int k = 0;
  for (int i = 1; i < 40; i++) if (o[i] > o[k]) k = i;
  return k;
}

START_TEST(audio_preprocessor_tone_lands_in_its_channel) {
  pre_t p;
  if (!pre_open(&p)) return;
  const double freqs[] = {500, 1000, 2000, 4000, 6000};
  for (size_t i = 0; i < sizeof freqs / sizeof freqs[0]; i++) {
    float o[40];
    ar_interp_reset_state(p.in, NULL);   /* a fresh noise estimate for each tone */
    pre_run(&p, freqs[i], 10000, o);
    const int want = mel_channel(freqs[i]), got = argmax40(o);
    ck_assert_msg(abs(got - want) <= 1, "%.0f Hz: loudest channel %d, its band is %d", freqs[i], got, want);
    ck_assert_msg(o[got] > 10.0f, "%.0f Hz: channel %d only %g", freqs[i], got, o[got]);
  }
  pre_close(&p);
}
END_TEST

/* The noise estimate is the model's state: one piece of the state slot (the spectral subtraction's
 * 40 uint32), carried from invoke to invoke and across a re-place, zero at a reset, and each slot
 * (session) has its own. */
START_TEST(audio_preprocessor_silence_is_the_floor_and_state_carries) {
  pre_t p;
  if (!pre_open(&p)) return;
  float o[40], first[40], again[40], later[40];
  ck_assert_int_eq(ar_interp_n_state_pieces(p.in), 1);
  const char *name;
  uint64_t bytes, off;
  ck_assert_int_eq(ar_interp_state_piece(p.in, 0, &name, NULL, &off, &bytes), 0);
  ck_assert_msg(strcmp(name, "operator 11 (SignalFilterBankSpectralSubtraction) state") == 0, "%s", name);
  ck_assert_uint_eq(bytes, 160);
  ck_assert_uint_eq(ar_interp_state_bytes(p.in), 192);
  pre_run(&p, 0, 0, o);
  for (int i = 0; i < 40; i++) ck_assert_msg(o[i] == 0.0f, "silence: channel %d is %g", i, o[i]);
  ar_interp_reset_state(p.in, NULL);
  pre_run(&p, 1000, 10000, first);
  for (int k = 0; k < 30; k++) pre_run(&p, 1000, 10000, again);
  /* the noise estimate has learned the steady tone: its channel is subtracted down */
  const int c = argmax40(first);
  ck_assert_msg(again[c] < first[c], "channel %d: %g after 30 frames, %g at the first", c, again[c], first[c]);
  pre_run(&p, 1000, 10000, again);
  /* a re-place keeps the state (ar_interp_place_owned copies the slot), the next frame goes on */
  ck_assert_msg(ar_interp_place_owned(p.in, g_msg, sizeof g_msg) == 0, "%s", g_msg);
  pre_run(&p, 1000, 10000, later);
  ck_assert(memcmp(later, first, sizeof first) != 0);
  /* a second slot (another session) starts from zero while the default one keeps its estimate */
  void *slot = aligned_alloc(64, (size_t)ar_interp_state_bytes(p.in));
  ar_interp_reset_state(p.in, slot);
  ck_assert_int_eq(ar_interp_bind_state(p.in, slot), 0);
  pre_run(&p, 1000, 10000, o);
  ck_assert(memcmp(o, first, sizeof first) == 0);
  ck_assert_int_eq(ar_interp_bind_state(p.in, NULL), 0);
  ar_interp_reset_state(p.in, NULL);
  pre_run(&p, 1000, 10000, o);
  ck_assert(memcmp(o, first, sizeof first) == 0);   /* a reset starts the estimate at zero */
  free(slot);
  pre_close(&p);
}
END_TEST

static Suite *audio_suite(void) {
  Suite *s = suite_create("audio");
  TCase *k = tcase_create("kernels");
  tcase_add_test(k, rfft2d_is_the_dft_cropped_or_padded);
  tcase_add_test(k, rfft2d_refuses_what_tflite_refuses);
  tcase_add_test(k, complex_abs_real_imag);
  tcase_add_test(k, signal_window_shifts_and_saturates);
  tcase_add_test(k, signal_fft_auto_scale);
  tcase_add_test(k, signal_rfft_is_the_scaled_dft);
  tcase_add_test(k, signal_rfft_int32_is_kissfft_fixed32);
  tcase_add_test(k, signal_rfft_float_is_the_dft);
  tcase_add_test(k, signal_rfft_refuses_a_t_that_is_not_the_tensors);
  tcase_add_test(k, signal_energy);
  tcase_add_test(k, signal_filter_bank_accumulates_triangles);
  tcase_add_test(k, signal_filter_bank_square_root);
  tcase_add_test(k, signal_spectral_subtraction_keeps_its_estimate);
  tcase_add_test(k, signal_pcan);
  tcase_add_test(k, signal_filter_bank_log);
  tcase_add_test(k, cast_uint32);
  suite_add_tcase(s, k);
  TCase *m = tcase_create("models");
  tcase_set_timeout(m, 120);
  tcase_add_test(m, yamnet_waveform_golden);
  tcase_add_test(m, audio_preprocessor_tone_lands_in_its_channel);
  tcase_add_test(m, audio_preprocessor_silence_is_the_floor_and_state_carries);
  suite_add_tcase(s, m);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(audio_suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
