/* audio.c - TFLite's in-graph spectrum operators: RFFT2D (builtin 131, v1), COMPLEX_ABS (135),
 * REAL (134), IMAG (133), on complex64 tensors (interleaved float32 real, imaginary).
 *
 * RFFT2D (TFLite rfft2d.cc): input float32 [..., H, W] (rank >= 2), input 1 fft_length int32 [2]
 * = (FH, FW), both powers of two; output complex64 [..., FH, FW/2 + 1]. Each innermost H x W
 * matrix is cropped or zero-padded to FH x FW, then
 *   out[k1][k2] = sum_{n1 < FH, n2 < FW} x[n1][n2] exp(-2 pi i (k1 n1 / FH + k2 n2 / FW))
 * for k2 <= FW/2 (the other half is the conjugate mirror TFLite drops too). Computed here with an
 * iterative radix-2 FFT in double precision (rows first, then the kept columns), so the values are
 * the exact transform rounded once to float32; TFLite's Ooura float FFT is within float rounding
 * of it (the float rule of the goldens). Twiddles live in node state (filled at init), the
 * working rows in scratch: nothing is allocated at eval.
 *
 * COMPLEX_ABS: |z| = hypotf(re, im) (std::abs of std::complex<float>); REAL / IMAG: the parts.
 * complex64 -> float32, any shape.
 */
#include <math.h>
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

/* ---- A radix-2 complex FFT in double precision. ---- */

/* In-place forward FFT of n (a power of two) complex values (re, im interleaved) with the
 * twiddle table tw[2*k] = cos(2 pi k / n), tw[2*k+1] = -sin(2 pi k / n), k < n/2. */
static void fft_pow2(double *x, int32_t n, const double *tw) {
  for (int32_t i = 1, j = 0; i < n; i++) {       /* bit-reversal permutation */
    int32_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j |= bit;
    if (i < j) {
      double t0 = x[2 * i], t1 = x[2 * i + 1];
      x[2 * i] = x[2 * j]; x[2 * i + 1] = x[2 * j + 1];
      x[2 * j] = t0; x[2 * j + 1] = t1;
    }
  }
  for (int32_t len = 2; len <= n; len <<= 1) {
    const int32_t half = len >> 1, step = n / len;
    for (int32_t s = 0; s < n; s += len) {
      for (int32_t k = 0; k < half; k++) {
        const double wr = tw[2 * (k * step)], wi = tw[2 * (k * step) + 1];
        double *a = x + 2 * (s + k), *b = x + 2 * (s + k + half);
        const double br = b[0] * wr - b[1] * wi, bi = b[0] * wi + b[1] * wr;
        b[0] = a[0] - br; b[1] = a[1] - bi;
        a[0] += br; a[1] += bi;
      }
    }
  }
}

static void fill_twiddles(double *tw, int32_t n) {
  const double pi = 3.14159265358979323846;
  for (int32_t k = 0; k < n / 2; k++) {
    tw[2 * k] = cos(2.0 * pi * k / n);
    tw[2 * k + 1] = -sin(2.0 * pi * k / n);
  }
}

static bool is_pow2(int32_t v) { return v > 0 && (v & (v - 1)) == 0; }

/* ---- RFFT2D ---- */

typedef struct rfft2d_dims {
  int64_t batch;          /* product of the leading dims */
  int32_t h, w, fh, fw;
} rfft2d_dims_t;

static void rfft2d_geometry(const ar_node_t *node, rfft2d_dims_t *g) {
  const ar_tview_t *in = node->inputs[0];
  const int32_t *fl = node->inputs[1]->data;
  g->batch = 1;
  for (int32_t d = 0; d + 2 < in->rank; d++) g->batch *= in->dims[d];
  g->h = in->dims[in->rank - 2];
  g->w = in->dims[in->rank - 1];
  memcpy(&g->fh, fl, 4);
  memcpy(&g->fw, fl + 1, 4);
}

/* State: twiddles for FW then for FH (n/2 complex doubles each). Scratch: FH rows of FW complex
 * doubles. */
static int rfft2d_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0], *fl = node->inputs[1];
  if ((rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_FLOAT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, fl, "fft_length", AR_DTYPE_INT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_COMPLEX64, msg, msg_bytes)))
    return rc;
  if (in->rank < 2)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input has rank %d, expected at least 2", (int)in->rank);
  if (fl->rank != 1 || fl->dims[0] != 2)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "fft_length must be an int32 vector of 2 elements");
  if ((rc = ar_k_require_constant(node, fl, "fft_length", msg, msg_bytes))) return rc;
  rfft2d_dims_t g;
  rfft2d_geometry(node, &g);
  if (!is_pow2(g.fh) || !is_pow2(g.fw) || g.fh > (1 << 20) || g.fw > (1 << 20))
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "fft_length [%d,%d] must be powers of two (at most 2^20)",
                    (int)g.fh, (int)g.fw);
  int32_t dims[AR_MAX_RANK];
  memcpy(dims, in->dims, sizeof(int32_t) * (size_t)in->rank);
  dims[in->rank - 2] = g.fh;
  dims[in->rank - 1] = g.fw / 2 + 1;
  node->state_bytes = (uint64_t)(g.fw / 2 + g.fh / 2) * 2 * sizeof(double);
  node->scratch_bytes = (uint64_t)g.fh * (uint64_t)g.fw * 2 * sizeof(double);
  return ar_k_check_output_shape(node, in->rank, dims, msg, msg_bytes);
}

static void rfft2d_init(ar_node_t *node) {
  rfft2d_dims_t g;
  rfft2d_geometry(node, &g);
  double *tw = node->state;
  fill_twiddles(tw, g.fw);
  fill_twiddles(tw + (g.fw / 2) * 2, g.fh);
}

static void rfft2d_eval(const ar_node_t *node) {
  rfft2d_dims_t g;
  rfft2d_geometry(node, &g);
  const double *tw_w = node->state, *tw_h = (const double *)node->state + (g.fw / 2) * 2;
  double *rows = node->scratch;
  const float *in = node->inputs[0]->data;
  float *out = node->outputs[0]->data;
  const int32_t ow = g.fw / 2 + 1;
  const int32_t ch = g.h < g.fh ? g.h : g.fh, cw = g.w < g.fw ? g.w : g.fw;
  for (int64_t b = 0; b < g.batch; b++) {
    const float *x = in + b * (int64_t)g.h * g.w;
    memset(rows, 0, (size_t)g.fh * (size_t)g.fw * 2 * sizeof(double));
    for (int32_t r = 0; r < ch; r++) {
      double *row = rows + (int64_t)r * g.fw * 2;
      for (int32_t c = 0; c < cw; c++) row[2 * c] = x[(int64_t)r * g.w + c];
      fft_pow2(row, g.fw, tw_w);
    }
    /* Then the columns 0..FW/2 along FH. */
    float *o = out + b * (int64_t)g.fh * ow * 2;
    if (g.fh == 1) {
      for (int32_t k = 0; k < ow; k++) { o[2 * k] = (float)rows[2 * k]; o[2 * k + 1] = (float)rows[2 * k + 1]; }
      continue;
    }
    /* Transpose-free column FFT: bit-reverse the rows, then butterflies across rows, each on the
     * kept columns only (the same radix-2 recurrence as fft_pow2 with whole rows as elements). */
    for (int32_t i = 1, j = 0; i < g.fh; i++) {
      int32_t bit = g.fh >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j |= bit;
      if (i < j) {
        double *ri = rows + (int64_t)i * g.fw * 2, *rj = rows + (int64_t)j * g.fw * 2;
        for (int32_t k = 0; k < 2 * ow; k++) { double t = ri[k]; ri[k] = rj[k]; rj[k] = t; }
      }
    }
    for (int32_t len = 2; len <= g.fh; len <<= 1) {
      const int32_t half = len >> 1, step = g.fh / len;
      for (int32_t s = 0; s < g.fh; s += len) {
        for (int32_t k = 0; k < half; k++) {
          const double wr = tw_h[2 * (k * step)], wi = tw_h[2 * (k * step) + 1];
          double *ra = rows + (int64_t)(s + k) * g.fw * 2, *rb = rows + (int64_t)(s + k + half) * g.fw * 2;
          for (int32_t c = 0; c < ow; c++) {
            double *a = ra + 2 * c, *bb = rb + 2 * c;
            const double br = bb[0] * wr - bb[1] * wi, bi = bb[0] * wi + bb[1] * wr;
            bb[0] = a[0] - br; bb[1] = a[1] - bi;
            a[0] += br; a[1] += bi;
          }
        }
      }
    }
    for (int32_t r = 0; r < g.fh; r++)
      for (int32_t k = 0; k < ow; k++) {
        o[((int64_t)r * ow + k) * 2] = (float)rows[((int64_t)r * g.fw + k) * 2];
        o[((int64_t)r * ow + k) * 2 + 1] = (float)rows[((int64_t)r * g.fw + k) * 2 + 1];
      }
  }
}

/* ---- COMPLEX_ABS, REAL, IMAG ---- */

static int complex_part_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  if ((rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_COMPLEX64, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_FLOAT32, msg, msg_bytes)))
    return rc;
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

static void complex_abs_eval(const ar_node_t *node) {
  const float *z = node->inputs[0]->data;
  float *o = node->outputs[0]->data;
  const int64_t n = ar_k_elements(node->inputs[0]);
  for (int64_t i = 0; i < n; i++) o[i] = hypotf(z[2 * i], z[2 * i + 1]);
}

static void real_eval(const ar_node_t *node) {
  const float *z = node->inputs[0]->data;
  float *o = node->outputs[0]->data;
  const int64_t n = ar_k_elements(node->inputs[0]);
  for (int64_t i = 0; i < n; i++) o[i] = z[2 * i];
}

static void imag_eval(const ar_node_t *node) {
  const float *z = node->inputs[0]->data;
  float *o = node->outputs[0]->data;
  const int64_t n = ar_k_elements(node->inputs[0]);
  for (int64_t i = 0; i < n; i++) o[i] = z[2 * i + 1];
}

static const ar_kernel_form_t rfft2d_forms[] = {AR_KF(1, 1, FLOAT32, COMPLEX64)};
static const ar_kernel_form_t complex_part_forms[] = {AR_KF(1, 1, COMPLEX64, FLOAT32)};
const ar_kernel_t ar_kernel_rfft2d = { "RFFT2D", rfft2d_prepare, rfft2d_init, rfft2d_eval,
                                       AR_KSUPPORT(rfft2d_forms, 0, -1) };
const ar_kernel_t ar_kernel_complex_abs = { "COMPLEX_ABS", complex_part_prepare, NULL, complex_abs_eval,
                                            AR_KSUPPORT(complex_part_forms, 0, -1) };
const ar_kernel_t ar_kernel_real = { "REAL", complex_part_prepare, NULL, real_eval,
                                     AR_KSUPPORT(complex_part_forms, 0, -1) };
const ar_kernel_t ar_kernel_imag = { "IMAG", complex_part_prepare, NULL, imag_eval,
                                     AR_KSUPPORT(complex_part_forms, 0, -1) };
